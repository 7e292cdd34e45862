// Loading a decoder file: recognising its family from key names and shapes (MODELS.md §D) and
// mapping its naming onto the canonical one the builders use. Loading reads names and shapes
// only; a weight's f32 data is made when a graph first takes it, straight from the file mapping
// where the bytes already are aligned f32, so tensors no graph uses are never converted (a
// checkpoint may hold gigabytes of them). A file that is not a decoder we know is refused with a
// message that says what was looked for and what was found, so a user who picked the wrong file
// learns which one it was; a file whose shapes or numbers are absurd is refused naming the tensor.

#include "vae-model.h"
#include "vae-pth.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * family_names[VAE_FAMILY_COUNT] = {
    [VAE_FAMILY_AUTO] = "auto",     [VAE_FAMILY_TAESD] = "taesd", [VAE_FAMILY_TAESDXL] = "taesdxl",
    [VAE_FAMILY_TAESD3] = "taesd3", [VAE_FAMILY_TAEF1] = "taef1", [VAE_FAMILY_TAEF2] = "taef2",
    [VAE_FAMILY_WAN21] = "wan2.1",  [VAE_FAMILY_TAEW21] = "taew2_1", [VAE_FAMILY_TAEW22] = "taew2_2",
    [VAE_FAMILY_TAEHV] = "taehv",   [VAE_FAMILY_TAEHV1_5] = "taehv1_5", [VAE_FAMILY_TAELTX2] = "taeltx_2",
    [VAE_FAMILY_TAECVX] = "taecvx",
    [VAE_FAMILY_SD1] = "sd1",       [VAE_FAMILY_SD2] = "sd2",     [VAE_FAMILY_SDXL] = "sdxl",
    [VAE_FAMILY_SD3] = "sd3",       [VAE_FAMILY_FLUX1] = "flux1", [VAE_FAMILY_FLUX2] = "flux2",
    [VAE_FAMILY_WAN22] = "wan2.2",
    [VAE_FAMILY_TAEW22_SUPER] = "taew2_2_super", [VAE_FAMILY_TAEHV1_5_SUPER] = "taehv1_5_super",
    [VAE_FAMILY_SVD] = "svd",
    [VAE_FAMILY_SEEDVR2] = "seedvr2",
};

// latent channels, and video (1) or image (0), per family
static const struct {
    int  channels;
    bool video;
} family_io[VAE_FAMILY_COUNT] = {
    [VAE_FAMILY_TAESD] = { 4, 0 },    [VAE_FAMILY_TAESDXL] = { 4, 0 },     [VAE_FAMILY_TAESD3] = { 16, 0 },
    [VAE_FAMILY_TAEF1] = { 16, 0 },   [VAE_FAMILY_TAEF2] = { 32, 0 },      [VAE_FAMILY_WAN21] = { 16, 1 },
    [VAE_FAMILY_TAEW21] = { 16, 1 },  [VAE_FAMILY_TAEW22] = { 48, 1 },     [VAE_FAMILY_TAEHV] = { 16, 1 },
    [VAE_FAMILY_TAEHV1_5] = { 32, 1 }, [VAE_FAMILY_TAELTX2] = { 128, 1 }, [VAE_FAMILY_TAECVX] = { 16, 1 },
    [VAE_FAMILY_SD1] = { 4, 0 },      [VAE_FAMILY_SD2] = { 4, 0 },         [VAE_FAMILY_SDXL] = { 4, 0 },
    [VAE_FAMILY_SD3] = { 16, 0 },     [VAE_FAMILY_FLUX1] = { 16, 0 },      [VAE_FAMILY_FLUX2] = { 32, 0 },
    [VAE_FAMILY_WAN22] = { 48, 1 },   [VAE_FAMILY_TAEW22_SUPER] = { 48, 1 }, [VAE_FAMILY_TAEHV1_5_SUPER] = { 32, 1 },
    [VAE_FAMILY_SVD] = { 4, 1 },      [VAE_FAMILY_SEEDVR2] = { 16, 1 },
};

int vae_family_latent_channels(enum vae_family family) {
    return family < VAE_FAMILY_COUNT ? family_io[family].channels : 0;
}

bool vae_family_is_video(enum vae_family family) {
    return family < VAE_FAMILY_COUNT && family_io[family].video;
}

#define FLUX2_BN_EPS 1e-4f   // FLUX.2's BatchNorm over the patchified latent (MODELS.md A.6)
#define MODEL_MAX_INDEX 1000 // block numbers in names: real decoders stay far below

// Wan 2.1 (MODELS.md B.4) and Wan 2.2 (B.8) latent statistics: raw z = normalized x * std + mean
static const float wan21_mean[16] = { -0.7571f, -0.7089f, -0.9113f, 0.1075f, -0.1745f, 0.9653f, -0.1517f, 1.5508f,
                                      0.4134f,  -0.0715f, 0.5517f,  -0.3632f, -0.1922f, -0.9497f, 0.2503f, -0.2921f };
static const float wan21_std[16]  = { 2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f, 2.6052f, 2.0743f,
                                      3.2687f, 2.1526f, 2.8652f, 1.5579f, 1.6382f, 1.1253f, 2.8251f, 1.9160f };
static const float wan22_mean[48] = {
    -0.2289f, -0.0052f, -0.1323f, -0.2339f, -0.2799f, 0.0174f,  0.1838f,  0.1557f,  -0.1382f, 0.0542f,
    0.2813f,  0.0891f,  0.1570f,  -0.0098f, 0.0375f,  -0.1825f, -0.2246f, -0.1207f, -0.0698f, 0.5109f,
    0.2665f,  -0.2108f, -0.2158f, 0.2502f,  -0.2055f, -0.0322f, 0.1109f,  0.1567f,  -0.0729f, 0.0899f,
    -0.2799f, -0.1230f, -0.0313f, -0.1649f, 0.0117f,  0.0723f,  -0.2839f, -0.2083f, -0.0520f, 0.3748f,
    0.0152f,  0.1957f,  0.1433f,  -0.2944f, 0.3573f,  -0.0548f, -0.1681f, -0.0667f,
};
static const float wan22_std[48] = {
    0.4765f, 1.0364f, 0.4514f, 1.1677f, 0.5313f, 0.4990f, 0.4818f, 0.5013f, 0.8158f, 1.0344f, 0.5894f, 1.0901f,
    0.6885f, 0.6165f, 0.8454f, 0.4978f, 0.5759f, 0.3523f, 0.7135f, 0.6804f, 0.5833f, 1.4146f, 0.8986f, 0.5659f,
    0.7069f, 0.5338f, 0.4889f, 0.4917f, 0.4069f, 0.4999f, 0.6866f, 0.4093f, 0.5709f, 0.6065f, 0.6415f, 0.4944f,
    0.5726f, 1.2042f, 0.5458f, 1.6887f, 0.3971f, 1.0600f, 0.3943f, 0.5537f, 0.5444f, 0.4089f, 0.7468f, 0.7744f,
};

const char * vae_family_name(enum vae_family family) {
    return family < VAE_FAMILY_COUNT ? family_names[family] : "?";
}

enum vae_family vae_family_from_name(const char * name) {
    for (int i = 0; i < VAE_FAMILY_COUNT; i++) {
        if (strcmp(name, family_names[i]) == 0) {
            return (enum vae_family) i;
        }
    }
    return VAE_FAMILY_COUNT;
}

void vae_model_free(struct vae_model * model) {
    if (!model) {
        return;
    }
    for (int i = 0; i < model->n_weights; i++) {
        free(model->weights[i].name);
        free(model->weights[i].copy);
        free(model->weights[i].rows);
    }
    free(model->weights);
    vae_st_file_close(model->file);
    pthread_mutex_destroy(&model->lock);
    free(model);
}

static int model_cmp_weight(const void * a, const void * b) {
    return strcmp(((const struct vae_weight *) a)->name, ((const struct vae_weight *) b)->name);
}

const struct vae_weight * vae_model_weight(const struct vae_model * model, const char * name) {
    const struct vae_weight key = { .name = (char *) name };
    return bsearch(&key, model->weights, (size_t) model->n_weights, sizeof(key), model_cmp_weight);
}

// "[d0, d1, ...]" into buf
static void model_format_shape(char * buf, size_t size, int n_dims, const int64_t * shape) {
    size_t at = (size_t) snprintf(buf, size, "[");
    for (int i = 0; i < n_dims && at < size; i++) {
        at += (size_t) snprintf(buf + at, size - at, i ? ", %lld" : "%lld", (long long) shape[i]);
    }
    if (at < size) {
        snprintf(buf + at, size - at, "]");
    }
}

// a decoder with a NaN or an infinity among its weights decodes black or garbage frames, never an
// error, so such a tensor is refused by name (a scan is cheap next to a conversion)
static bool model_check_finite(const struct vae_st_tensor * t, const float * d, size_t n, char * err, size_t err_size) {
    size_t special = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &d[i], sizeof(u));
        special += (u & 0x7f800000u) == 0x7f800000u; // exponent all ones
    }
    if (special == 0) {
        return true;
    }
    size_t nan = 0;
    for (size_t i = 0; i < n; i++) {
        nan += isnan(d[i]) != 0;
    }
    snprintf(err, err_size, "tensor '%s' holds %zu NaN and %zu infinite values (of %zu): decoder weights must be finite",
             t->name, nan, special - nan, n);
    return false;
}

// a TAEHV MemBlock conv t [Cout, 2 Cin, k, k] (inputs x_t then x_t-1) as w's taps [Cout, Cin, 2, k, k]
static void model_taps_to_f32(const struct vae_weight * w, const struct vae_st_tensor * t, float * d) {
    const int64_t cout = w->shape[0], cin = w->shape[1], kk = w->shape[3] * w->shape[4];
    const size_t  size = (size_t) vae_dtype_bits(t->dtype) / 8;
    for (int64_t o = 0; o < cout; o++) {
        for (int64_t ci = 0; ci < cin; ci++) {
            for (int tap = 0; tap < 2; tap++) { // tap 0: channels [cin, 2 cin) = the past
                const int64_t from = (o * 2 * cin + (tap ? 0 : cin) + ci) * kk;
                vae_dtype_to_f32(t->dtype, t->data + (size_t) from * size, d + ((o * cin + ci) * 2 + tap) * kk,
                                 (size_t) kk);
            }
        }
    }
}

// a SuperMemBlock's 1x1 t [Cout, 2 C, 1, 1] as w [Cout, 2 C, 2, 1, 1] (see vae_weight.taps_interleaved)
static void model_taps_interleaved_to_f32(const struct vae_weight * w, const struct vae_st_tensor * t, float * d) {
    const int64_t cout = w->shape[0], c = w->shape[1] / 2;
    const size_t  size = (size_t) vae_dtype_bits(t->dtype) / 8;
    memset(d, 0, (size_t) (cout * 4 * c) * sizeof(float));
    for (int64_t o = 0; o < cout; o++) {
        for (int64_t ci = 0; ci < c; ci++) {
            for (int j = 0; j < 2; j++) { // half j: 0 the current frame (tap 1), 1 the past (tap 0)
                vae_dtype_to_f32(t->dtype, t->data + (size_t) (o * 2 * c + j * c + ci) * size,
                                 d + ((o * 2 * c + 2 * ci + j) * 2 + (1 - j)), 1);
            }
        }
    }
}

// the values w holds (the product of its shape)
static size_t model_weight_numel(const struct vae_weight * w) {
    size_t n = 1;
    for (int i = 0; i < w->n_dims; i++) {
        n *= (size_t) w->shape[i];
    }
    return n;
}

// w's data picked by rows (see vae_weight.rows) from its file tensor, or from the identity
static bool model_rows_make(struct vae_weight * w, char * err, size_t err_size) {
    const size_t n = model_weight_numel(w), size = n / (size_t) w->shape[0];
    float *      d = calloc(n, sizeof(float));
    if (!d) {
        snprintf(err, err_size, "out of memory making tensor '%s'", w->name);
        return false;
    }
    const struct vae_st_tensor * t     = w->src[0];
    const size_t                 bytes = t ? (size_t) vae_dtype_bits(t->dtype) / 8 : 0;
    for (int64_t k = 0; k < w->shape[0]; k++) {
        if (t) {
            vae_dtype_to_f32(t->dtype, t->data + (size_t) w->rows[k] * size * bytes, d + (size_t) k * size, size);
        } else {
            d[(size_t) k * size + (size_t) w->rows[k]] = 1.0f;
        }
    }
    if (t && !model_check_finite(t, d, n, err, err_size)) {
        free(d);
        return false;
    }
    w->copy = d;
    w->data = d;
    return true;
}

// w's rows reordered when its data is made (vae_weight.rows): row k of n is the file's row from(k, n)
static bool model_rows_reorder(struct vae_weight * w, int32_t (*from)(int32_t k, int32_t n), char * err,
                               size_t err_size) {
    if (!(w->rows = malloc((size_t) w->shape[0] * sizeof(*w->rows)))) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    for (int32_t k = 0; k < (int32_t) w->shape[0]; k++) {
        w->rows[k] = from(k, (int32_t) w->shape[0]);
    }
    return true;
}

// w's data: the file's bytes in place where they are aligned little-endian f32 and need no
// rearranging, else a converted copy
static bool model_weight_make(struct vae_weight * w, char * err, size_t err_size) {
    const struct vae_st_tensor * t = w->src[0];
    if (w->rows) {
        return model_rows_make(w, err, err_size);
    }
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (w->n_src == 1 && !w->taps && !w->taps_interleaved && !w->mix && t->dtype == VAE_DTYPE_F32 &&
        (uintptr_t) t->data % sizeof(float) == 0) {
        if (!model_check_finite(t, (const float *) (const void *) t->data, (size_t) t->numel, err, err_size)) {
            return false;
        }
        w->data = (const float *) (const void *) t->data;
        return true;
    }
#endif
    uint64_t n = w->taps_interleaved ? model_weight_numel(w) : 0; // (twice its tensor)
    for (int i = 0; i < w->n_src && !w->taps_interleaved; i++) {
        n += w->src[i]->numel; // each is at most the file's size
    }
    float * d = n <= SIZE_MAX / sizeof(float) ? malloc((size_t) n * sizeof(float)) : NULL;
    if (!d) {
        snprintf(err, err_size, "out of memory converting tensor '%s' (%" PRIu64 " values)", t->name, n);
        return false;
    }
    float * at = d;
    for (int i = 0; i < w->n_src; i++) {
        const struct vae_st_tensor * s = w->src[i];
        if (w->taps_interleaved) {
            model_taps_interleaved_to_f32(w, s, at);
        } else if (w->taps) {
            model_taps_to_f32(w, s, at);
        } else {
            vae_dtype_to_f32(s->dtype, s->data, at, (size_t) s->numel);
        }
        const size_t made = w->taps_interleaved ? (size_t) n : (size_t) s->numel;
        if (!model_check_finite(s, at, made, err, err_size)) {
            free(d);
            return false;
        }
        at += made;
    }
    if (w->mix) { // (a one-value tensor: the loader checked)
        float m;
        vae_dtype_to_f32(w->mix->dtype, w->mix->data, &m, 1);
        if (!model_check_finite(w->mix, &m, 1, err, err_size)) {
            free(d);
            return false;
        }
        const float s = 1.0f / (1.0f + expf(-m));
        for (uint64_t i = 0; i < n; i++) {
            d[i] *= s;
        }
    }
    w->copy = d;
    w->data = d;
    return true;
}

const float * vae_model_weight_data(const struct vae_model * model, const struct vae_weight * w, char * err,
                                    size_t err_size) {
    // the model owns its weights (and its lock); making data is the one change a const model sees
    struct vae_model * m = (struct vae_model *) model;
    pthread_mutex_lock(&m->lock);
    const bool ok = w->data || model_weight_make((struct vae_weight *) w, err, err_size);
    pthread_mutex_unlock(&m->lock);
    return ok ? w->data : NULL;
}

void vae_model_drop_copies(const struct vae_model * model) {
    struct vae_model * m = (struct vae_model *) model;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->n_weights; i++) {
        struct vae_weight * w = &m->weights[i];
        if (w->copy) {
            free(w->copy);
            w->copy = NULL;
            w->data = NULL;
        }
    }
    pthread_mutex_unlock(&m->lock);
}

size_t vae_model_copy_bytes(const struct vae_model * model) {
    struct vae_model * m = (struct vae_model *) model;
    size_t             n = 0;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->n_weights; i++) {
        n += m->weights[i].copy ? model_weight_numel(&m->weights[i]) * sizeof(float) : 0;
    }
    pthread_mutex_unlock(&m->lock);
    return n;
}

bool vae_builder_init(struct vae_builder * b, const struct vae_model * model, char * err, size_t err_size) {
    *b = (struct vae_builder) { model, vae_graph_new(), err, err_size, false, 0 };
    if (!b->g) {
        snprintf(err, err_size, "out of memory building the graph");
    }
    return b->g != NULL;
}

struct vae_graph * vae_builder_finish(struct vae_builder * b, struct vae_tensor * out) {
    if (!out || b->failed) {
        vae_graph_free(b->g);
        return NULL;
    }
    vae_graph_set_output(b->g, out);
    return b->g;
}

struct vae_tensor * vae_builder_fail(struct vae_builder * b, const char * fmt, ...) {
    if (!b->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err, b->err_size, fmt, ap);
        va_end(ap);
        b->failed = true;
    }
    return NULL;
}

struct vae_tensor * vae_builder_weight(struct vae_builder * b, int n_dims, const int64_t * shape, const char * fmt, ...) {
    char    name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (b->failed) {
        return NULL;
    }
    const struct vae_weight * w  = vae_model_weight(b->model, name);
    bool                      ok = w && w->n_dims == n_dims;
    for (int i = 0; ok && i < n_dims; i++) {
        ok = shape[i] < 0 || shape[i] == w->shape[i];
    }
    if (!ok) {
        char want[96];
        model_format_shape(want, sizeof(want), n_dims, shape);
        return vae_builder_fail(b, "%s: tensor '%s' %s (expected shape %s, -1 = any)",
                                vae_family_name(b->model->family), name, w ? "has the wrong shape" : "is missing", want);
    }
    char          msg[512];
    const float * data = vae_model_weight_data(b->model, w, msg, sizeof(msg));
    if (!data) {
        return vae_builder_fail(b, "%s", msg);
    }
    return vae_graph_weight(b->g, w->name, data, w->n_dims, w->shape);
}

struct vae_tensor * vae_builder_conv2d(struct vae_builder * b, struct vae_tensor * x, const char * name, int k,
                                      bool bias, struct vae_tensor * r, enum vae_act act, bool upsample) {
    if (b->failed) {
        return NULL;
    }
    const int64_t       wshape[4] = { -1, x->ne[1], k, k };
    struct vae_tensor * w = vae_builder_weight(b, 4, wshape, "%s.weight", name);
    struct vae_tensor * bt = NULL;
    if (w && bias) {
        bt = vae_builder_weight(b, 1, (const int64_t[]) { w->ne[0] }, "%s.bias", name);
    }
    if (b->failed) {
        return NULL;
    }
    if (r && r->ne[1] != w->ne[0]) {
        return vae_builder_fail(b, "tensor '%s.weight' gives %lld channels but its residual has %lld", name,
                                (long long) w->ne[0], (long long) r->ne[1]);
    }
    return upsample ? vae_graph_upsample_conv2d(b->g, x, w, bt, act) : vae_graph_conv2d(b->g, x, w, bt, r, act);
}

struct vae_tensor * vae_builder_conv3d(struct vae_builder * b, struct vae_tensor * x, const char * name, int kt, int k,
                                       struct vae_tensor * r, bool replicate) {
    struct vae_tensor * w  = vae_builder_weight(b, 5, (const int64_t[]) { -1, x->ne[1], kt, k, k }, "%s.weight", name);
    struct vae_tensor * bt = w ? vae_builder_weight(b, 1, (const int64_t[]) { w->ne[0] }, "%s.bias", name) : NULL;
    if (!bt) {
        return NULL;
    }
    if (r && r->ne[1] != w->ne[0]) {
        return vae_builder_fail(b, "tensor '%s.weight' gives %lld channels but its residual has %lld", name,
                                (long long) w->ne[0], (long long) r->ne[1]);
    }
    if (kt == 1 && k == 1) {
        w->n_dims = 4; // [Cout, Cin, 1, 1]
        return vae_graph_conv2d(b->g, x, w, bt, r, VAE_ACT_NONE);
    }
    return replicate ? vae_graph_causal_conv3d_replicate(b->g, x, w, bt, r, VAE_ACT_NONE, b->n_slots++)
                     : vae_graph_causal_conv3d(b->g, x, w, bt, r, VAE_ACT_NONE, b->n_slots++);
}

int vae_model_dim(const struct vae_model * model, const char * name, const char * suffix, int d) {
    char n[160];
    snprintf(n, sizeof(n), "%s%s", name, suffix);
    const struct vae_weight * w = vae_model_weight(model, n);
    return w && d < w->n_dims ? (int) w->shape[d] : 0;
}

static bool model_has(const struct vae_st_header * hdr, const char * name) {
    return vae_st_header_find(hdr, name) != NULL;
}

static bool model_has_prefix(const struct vae_st_header * hdr, const char * prefix) {
    for (int i = 0; i < hdr->n_tensors; i++) {
        if (strncmp(hdr->tensors[i].name, prefix, strlen(prefix)) == 0) {
            return true;
        }
    }
    return false;
}

// how a file names its tensors; each maps onto the canonical (original upstream) names
enum model_naming {
    NAMING_TAESD,            // `1.weight`, `3.conv.0.weight`, ...
    NAMING_TAESD_DIFFUSERS,  // `decoder.layers.K-1.*`
    NAMING_TAESD_COMFY,      // `taesd_decoder.` + original
    NAMING_WAN,              // `conv2.*`, `decoder.conv1.*`, `decoder.upsamples.N.*` (canonical)
    NAMING_WAN_DIFFUSERS,    // `post_quant_conv.*`, `decoder.up_blocks.I.resnets.J.*`, ...
    NAMING_WAN22_DIFFUSERS,  // the same with Wan 2.2's `decoder.up_blocks.I.upsampler.*` (is_residual)
    NAMING_TAEHV,            // `decoder.K.*` (canonical)
    NAMING_KL,               // LDM / ComfyUI / BFL: `decoder.mid.block_1.*`, `decoder.up.L.block.J.*` (canonical)
    NAMING_KL_DIFFUSERS,     // `decoder.mid_block.resnets.N.*`, `decoder.up_blocks.I.resnets.J.*`, ...
    NAMING_SEEDVR,           // SeedVR2's state_dict: diffusers-like names, 5-D convs (canonical)
    NAMING_NONE,
};

// the block number s starts with: -1 when s does not start with a digit, MODEL_MAX_INDEX + 1 for
// any number above MODEL_MAX_INDEX (so that no arithmetic on it can overflow)
static long model_index(const char * s, const char ** end) {
    if (!isdigit((unsigned char) *s)) {
        return -1;
    }
    long n = 0;
    for (; isdigit((unsigned char) *s); s++) {
        n = n > MODEL_MAX_INDEX ? n : 10 * n + (*s - '0');
    }
    *end = s;
    return n > MODEL_MAX_INDEX ? MODEL_MAX_INDEX + 1 : n;
}

// `prefix` + the number `key` starts with (after `head`) + what follows, or NULL
static char * model_renumber(const char * key, const char * head, const char * prefix, long add, long mul, long * num,
                             const char ** rest) {
    const size_t n = strlen(head);
    const char * end;
    if (strncmp(key, head, n) != 0 || (*num = model_index(key + n, &end)) < 0 || *end != '.' ||
        *num > MODEL_MAX_INDEX) {
        return NULL;
    }
    *rest      = end;
    char * out = malloc(strlen(prefix) + strlen(end) + 24);
    if (out) {
        sprintf(out, "%s%ld%s", prefix, *num * mul + add, end);
    }
    return out;
}

// `key` with its part `from` replaced by `to` (which may be longer), consuming key; NULL stays NULL
static char * model_replace(char * key, const char * from, const char * to) {
    char * at = key ? strstr(key, from) : NULL;
    if (!at) {
        return key;
    }
    char * out = malloc(strlen(key) + strlen(to) + 1);
    if (out) {
        sprintf(out, "%.*s%s%s", (int) (at - key), key, to, at + strlen(from));
    }
    free(key);
    return out;
}

// diffusers' names inside a Wan residual block -> the original Sequential indices
static char * model_wan_resblock(char * name) {
    static const char * map[][2] = {
        { ".norm1.", ".residual.0." }, { ".conv1.", ".residual.2." }, { ".norm2.", ".residual.3." },
        { ".conv2.", ".residual.6." }, { ".conv_shortcut.", ".shortcut." },
    };
    for (size_t i = 0; name && i < sizeof(map) / sizeof(map[0]); i++) {
        if (strstr(name, map[i][0])) {
            return model_replace(name, map[i][0], map[i][1]);
        }
    }
    return name;
}

// diffusers' AutoencoderKLTemporalDecoder (SVD) names -> those of AutoencoderKL plus the original
// temporal ones (`time_stack.*`, `mix_factor`, `conv_out.time_mix_conv`), consuming key
static char * model_svd_diffusers_name(char * key) {
    static const char * map[][2] = {
        { ".spatial_res_block.", "." },
        { ".temporal_res_block.norm1.", ".time_stack.in_layers.0." },
        { ".temporal_res_block.conv1.", ".time_stack.in_layers.2." },
        { ".temporal_res_block.norm2.", ".time_stack.out_layers.0." },
        { ".temporal_res_block.conv2.", ".time_stack.out_layers.3." },
        { ".time_mixer.mix_factor", ".mix_factor" },
        { "decoder.time_conv_out.", "decoder.conv_out.time_mix_conv." },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        key = model_replace(key, map[i][0], map[i][1]);
    }
    return key;
}

// diffusers' AutoencoderKL names -> LDM (MODELS.md A.4); up_blocks.I is up.(levels - 1 - I);
// both attention namings (to_q.. and the older query..)
static char * model_kl_diffusers_name(const char * key, long levels) {
    static const char * attn[][2] = {
        { "group_norm.", "norm." }, { "to_q.", "q." },   { "to_k.", "k." },     { "to_v.", "v." },
        { "to_out.0.", "proj_out." }, { "query.", "q." }, { "key.", "k." }, { "value.", "v." },
        { "proj_attn.", "proj_out." },
    };
    long         num, num2;
    const char * rest, * rest2;
    char *       name;
    if (strncmp(key, "post_quant_conv.", 16) == 0 || strcmp(key, "bn.running_mean") == 0 ||
        strcmp(key, "bn.running_var") == 0 || strncmp(key, "decoder.conv_in.", 16) == 0 ||
        strncmp(key, "decoder.conv_out.", 17) == 0) {
        return strdup(key);
    }
    if (strncmp(key, "decoder.conv_norm_out.", 22) == 0) {
        name = malloc(strlen(key));
        if (name) {
            sprintf(name, "decoder.norm_out.%s", key + 22);
        }
        return name;
    }
    if ((name = model_renumber(key, "decoder.mid_block.resnets.", "decoder.mid.block_", 1, 1, &num, &rest))) {
        return name;
    }
    if (strncmp(key, "decoder.mid_block.attentions.0.", 31) == 0) {
        for (size_t i = 0; i < sizeof(attn) / sizeof(attn[0]); i++) {
            const size_t n = strlen(attn[i][0]);
            if (strncmp(key + 31, attn[i][0], n) == 0) {
                name = malloc(strlen(key) + 8);
                if (name) {
                    sprintf(name, "decoder.mid.attn_1.%s%s", attn[i][1], key + 31 + n);
                }
                return name;
            }
        }
        return NULL;
    }
    if (strncmp(key, "decoder.up_blocks.", 18) != 0 || (num = model_index(key + 18, &rest)) < 0 || num >= levels) {
        return NULL;
    }
    char level[40];
    snprintf(level, sizeof(level), "decoder.up.%ld.block.", levels - 1 - num);
    if ((name = model_renumber(rest, ".resnets.", level, 0, 1, &num2, &rest2))) {
        return model_replace(name, ".conv_shortcut.", ".nin_shortcut.");
    }
    if (strncmp(rest, ".upsamplers.0.conv.", 19) == 0) {
        name = malloc(strlen(rest) + 40);
        if (name) {
            sprintf(name, "decoder.up.%ld.upsample.conv.%s", levels - 1 - num, rest + 19);
        }
        return name;
    }
    return NULL;
}

// Wan 2.2 diffusers up-block `num` (`rest` follows its number) -> the original nested names
// `decoder.upsamples.I.upsamples.J`: the resnets, then the upsampler as entry per_block - 1
static char * model_wan22_up_name(long num, const char * rest, long per_block) {
    char         head[64];
    long         j;
    const char * after;
    snprintf(head, sizeof(head), "decoder.upsamples.%ld.upsamples.", num);
    char * name = model_renumber(rest, ".resnets.", head, 0, 1, &j, &after);
    if (name) {
        return model_wan_resblock(name);
    }
    if (strncmp(rest, ".upsampler.", 11) == 0) {
        name = malloc(strlen(head) + strlen(rest) + 24);
        if (name) {
            sprintf(name, "%s%ld.%s", head, per_block - 1, rest + 11);
        }
    }
    return name;
}

// the canonical name of a file key, or NULL to ignore the key (encoder tensors and the like);
// `per_block`: Wan diffusers up-blocks hold this many entries of the original `upsamples` list;
// AutoencoderKL diffusers files have this many up-blocks
static char * model_canonical_name(const char * key, enum model_naming naming, long per_block) {
    static const struct {
        const char * from, * to;
    } wan_plain[] = {
        { "post_quant_conv.", "conv2." },           { "decoder.conv_in.", "decoder.conv1." },
        { "decoder.norm_out.", "decoder.head.0." }, { "decoder.conv_out.", "decoder.head.2." },
        { "decoder.mid_block.attentions.0.", "decoder.middle.1." },
    };
    long         num, num2;
    const char * rest, * rest2;
    char *       name;
    switch (naming) {
        case NAMING_TAESD_COMFY:
            return strncmp(key, "taesd_decoder.", 14) == 0 && isdigit((unsigned char) key[14]) ? strdup(key + 14) : NULL;
        case NAMING_TAESD_DIFFUSERS:
            return model_renumber(key, "decoder.layers.", "", 1, 1, &num, &rest);
        case NAMING_TAESD:
            return isdigit((unsigned char) key[0]) ? strdup(key) : NULL;
        case NAMING_TAEHV:
            return strncmp(key, "decoder.", 8) == 0 ? strdup(key) : NULL;
        case NAMING_WAN:
            return strncmp(key, "decoder.", 8) == 0 || strncmp(key, "conv2.", 6) == 0 ? strdup(key) : NULL;
        case NAMING_WAN_DIFFUSERS:
        case NAMING_WAN22_DIFFUSERS:
            for (size_t i = 0; i < sizeof(wan_plain) / sizeof(wan_plain[0]); i++) {
                const size_t n = strlen(wan_plain[i].from);
                if (strncmp(key, wan_plain[i].from, n) == 0) {
                    name = malloc(strlen(wan_plain[i].to) + strlen(key + n) + 1);
                    if (name) {
                        sprintf(name, "%s%s", wan_plain[i].to, key + n);
                    }
                    return name;
                }
            }
            if ((name = model_renumber(key, "decoder.mid_block.resnets.", "decoder.middle.", 0, 2, &num, &rest))) {
                return model_wan_resblock(name);
            }
            if (strncmp(key, "decoder.up_blocks.", 18) != 0 || (num = model_index(key + 18, &rest)) < 0 ||
                num > MODEL_MAX_INDEX) {
                return NULL;
            }
            if (naming == NAMING_WAN22_DIFFUSERS) {
                return model_wan22_up_name(num, rest, per_block);
            }
            if ((name = model_renumber(rest, ".resnets.", "decoder.upsamples.", num * per_block, 1, &num2, &rest2))) {
                return model_wan_resblock(name);
            }
            if (strncmp(rest, ".upsamplers.0.", 14) == 0) {
                name = malloc(strlen(rest) + 32);
                if (name) {
                    sprintf(name, "decoder.upsamples.%ld.%s", num * per_block + per_block - 1, rest + 14);
                }
                return name;
            }
            return NULL;
        case NAMING_KL:
            if (strncmp(key, "decoder.post_quant_conv.", 24) == 0) { // BFL keeps it inside the decoder
                return strdup(key + 8);
            }
            return strncmp(key, "decoder.", 8) == 0 || strncmp(key, "post_quant_conv.", 16) == 0 ||
                           strcmp(key, "bn.running_mean") == 0 || strcmp(key, "bn.running_var") == 0
                       ? strdup(key)
                       : NULL;
        case NAMING_KL_DIFFUSERS: {
            char * svd = model_svd_diffusers_name(strdup(key));
            name       = svd ? model_kl_diffusers_name(svd, per_block) : NULL;
            free(svd);
            return name;
        }
        case NAMING_SEEDVR:
            return strncmp(key, "decoder.", 8) == 0 ? strdup(key) : NULL;
        default:
            return NULL;
    }
}

// the largest block number that follows `mark` in the names starting with `head` (-1: none);
// -2 after a message naming a tensor whose number is out of range
static long model_most_index(const struct vae_st_header * hdr, const char * head, const char * mark, char * err,
                             size_t err_size) {
    long most = -1;
    for (int i = 0; i < hdr->n_tensors; i++) {
        const char * name = hdr->tensors[i].name;
        const char * at   = strncmp(name, head, strlen(head)) == 0 ? strstr(name + strlen(head) - 1, mark) : NULL;
        const char * end;
        const long   j = at ? model_index(at + strlen(mark), &end) : -1;
        if (j > MODEL_MAX_INDEX) {
            snprintf(err, err_size, "tensor '%s': block number out of range (at most %d)", name, MODEL_MAX_INDEX);
            return -2;
        }
        most = j > most ? j : most;
    }
    return most;
}

// a decoder weight has real dimensions: none is 0 (an empty tensor, whose other dimensions the
// format leaves unbounded) and none is above INT32_MAX, so every dimension is bounded by the
// tensor's bytes in the file and every loop over one by the data's real size
static bool model_check_dims(const struct vae_st_tensor * t, char * err, size_t err_size) {
    for (int pass = 0; pass < 2; pass++) { // a zero anywhere is the cause to name first
        for (int i = 0; i < t->n_dims; i++) {
            if (pass == 0 ? t->shape[i] == 0 : t->shape[i] > INT32_MAX) {
                char shape[160];
                model_format_shape(shape, sizeof(shape), t->n_dims, t->shape);
                snprintf(err, err_size, "tensor '%s' has shape %s: dimension %d is %s", t->name, shape, i,
                         pass == 0 ? "0 (a decoder weight is never empty)" : "above 2147483647");
                return false;
            }
        }
    }
    return true;
}

// the tensors of hdr under `prefix` (stripped; others ignored) under canonical names, sorted; their
// data is made on first use (vae_model_weight_data)
static bool model_load_weights(struct vae_model * m, const struct vae_st_header * hdr, enum model_naming naming,
                               const char * prefix, char * err, size_t err_size) {
    char head[64];
    snprintf(head, sizeof(head), "%sdecoder.up_blocks.", prefix);
    // Wan diffusers: entries of `upsamples` per up-block = resnets per block + the upsampler;
    // AutoencoderKL diffusers: the number of up-blocks
    const bool wan_diffusers = naming == NAMING_WAN_DIFFUSERS || naming == NAMING_WAN22_DIFFUSERS;
    const long most      = wan_diffusers                   ? model_most_index(hdr, head, ".resnets.", err, err_size)
                           : naming == NAMING_KL_DIFFUSERS ? model_most_index(hdr, head, ".", err, err_size)
                                                           : 0;
    const long per_block = wan_diffusers ? most + 2 : most + 1;
    const size_t skip    = strlen(prefix);
    if (most < -1) {
        return false;
    }
    m->weights = calloc((size_t) hdr->n_tensors, sizeof(*m->weights));
    if (!m->weights) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    for (int i = 0; i < hdr->n_tensors; i++) {
        const struct vae_st_tensor * t    = &hdr->tensors[i];
        char * name = strncmp(t->name, prefix, skip) == 0 ? model_canonical_name(t->name + skip, naming, per_block) : NULL;
        if (!name) {
            continue;
        }
        struct vae_weight * w = &m->weights[m->n_weights++];
        *w                    = (struct vae_weight) { .name = name, .n_dims = t->n_dims, .src = { t }, .n_src = 1 };
        memcpy(w->shape, t->shape, sizeof(w->shape));
        if (!vae_dtype_is_float(t->dtype)) {
            snprintf(err, err_size, "tensor '%s' is %s; decoder weights must be F32, F16 or BF16", t->name,
                     vae_dtype_name(t->dtype));
            return false;
        }
        if (!model_check_dims(t, err, err_size)) {
            return false;
        }
    }
    qsort(m->weights, (size_t) m->n_weights, sizeof(*m->weights), model_cmp_weight);
    for (int i = 1; i < m->n_weights; i++) {
        if (strcmp(m->weights[i - 1].name, m->weights[i].name) == 0) {
            snprintf(err, err_size, "tensors '%s' and '%s' both map to '%s'", m->weights[i - 1].src[0]->name,
                     m->weights[i].src[0]->name, m->weights[i].name);
            return false;
        }
    }
    return true;
}

// pick the family of a TAESD-layout decoder from its widths, or check the one the user named
static bool model_taesd_family(struct vae_model * m, enum vae_family want, char * err, size_t err_size) {
    const struct vae_weight * first = vae_model_weight(m, "1.weight");
    if (!first || first->n_dims != 4) {
        snprintf(err, err_size, "TAESD-style names but no 4-D '1.weight' (the first decoder conv)");
        return false;
    }
    const int  z    = (int) first->shape[1];
    const bool pool = vae_model_weight(m, "3.pool.0.weight") != NULL;
    m->latent_channels = z;
    if (want == VAE_FAMILY_AUTO) {
        m->family_certain = true;
        if (z == 4 && !pool) {
            m->family         = VAE_FAMILY_TAESD;
            m->family_certain = false; // taesd and taesdxl share shapes
        } else if (z == 16 && !pool) {
            m->family         = VAE_FAMILY_TAESD3;
            m->family_certain = false; // taesd3 and taef1 share shapes
        } else if (z == 32 && pool) {
            m->family = VAE_FAMILY_TAEF2;
        } else {
            snprintf(err, err_size,
                     "TAESD-style decoder with %d latent channels%s: not a known variant (taesd/taesdxl: 4, "
                     "taesd3/taef1: 16, taef2: 32 with the mid-block GroupNorm)",
                     z, pool ? " and a mid-block GroupNorm" : "");
            return false;
        }
        return true;
    }
    if (want > VAE_FAMILY_TAEF2) {
        snprintf(err, err_size, "model-family %s was asked for, but the file holds a TAESD-style decoder",
                 vae_family_name(want));
        return false;
    }
    const int  want_z    = want == VAE_FAMILY_TAEF2 ? 32 : (want == VAE_FAMILY_TAESD3 || want == VAE_FAMILY_TAEF1) ? 16 : 4;
    const bool want_pool = want == VAE_FAMILY_TAEF2;
    if (z != want_z || pool != want_pool) {
        snprintf(err, err_size, "model-family %s takes %d latent channels%s, but the file's decoder has %d%s",
                 vae_family_name(want), want_z, want_pool ? " with a mid-block GroupNorm" : "", z,
                 pool ? " with a mid-block GroupNorm" : "");
        return false;
    }
    m->family         = want;
    m->family_certain = true;
    return true;
}

// the family a video decoder file holds (found is what the keys say), checked against the user's
static bool model_check_family(struct vae_model * m, enum vae_family found, bool certain, enum vae_family want,
                               char * err, size_t err_size) {
    if (want != VAE_FAMILY_AUTO && want != found) {
        snprintf(err, err_size, "model-family %s was asked for, but the file holds a %s decoder (%d latent channels)",
                 vae_family_name(want), vae_family_name(found), m->latent_channels);
        return false;
    }
    m->family         = found;
    m->family_certain = certain || want != VAE_FAMILY_AUTO;
    return true;
}

static bool model_wan22_prepare(struct vae_model * m, char * err, size_t err_size);

// Wan 2.1, or Wan 2.2 where the up-blocks nest their entries (`decoder.upsamples.I.upsamples.J`)
static bool model_wan_family(struct vae_model * m, enum vae_family want, char * err, size_t err_size) {
    const struct vae_weight * post = vae_model_weight(m, "conv2.weight");
    const struct vae_weight * in   = vae_model_weight(m, "decoder.conv1.weight");
    if (!in || in->n_dims != 5 || (post && (post->n_dims != 5 || post->shape[1] != in->shape[1]))) {
        snprintf(err, err_size, "Wan-style names but no 5-D 'decoder.conv1.weight' matching 'conv2.weight'");
        return false;
    }
    const bool wan22   = vae_model_weight(m, "decoder.upsamples.0.upsamples.0.residual.0.gamma") != NULL;
    m->latent_channels = (int) in->shape[1];
    if (m->latent_channels != (wan22 ? 48 : 16)) {
        snprintf(err, err_size, "a Wan 2.%d-style decoder with %d latent channels: only %d (Wan 2.%d) is known",
                 wan22 ? 2 : 1, m->latent_channels, wan22 ? 48 : 16, wan22 ? 2 : 1);
        return false;
    }
    m->own_space         = VAE_SPACE_RAW;
    m->scale             = wan22 ? 16 : 8;
    m->frames_per_latent = 4;
    m->first_apart       = true;
    m->out_scale         = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset        = 0.5f;
    return model_check_family(m, wan22 ? VAE_FAMILY_WAN22 : VAE_FAMILY_WAN21, true, want, err, err_size) &&
           (!wan22 || model_wan22_prepare(m, err, err_size));
}

// The TAEHV variants (MODELS.md §C.3, §I). Upstream's taehv.py picks a configuration from the
// checkpoint's file name; here the latent channels, the output patch (3 p^2 output channels) and
// the decoder's kind (a 'super' one starts with the 1x1 'decoder.0') tell them apart, except the
// 16-channel ones, which share every shape (the first is the default).
// t: the time strides of the three TGrows (their product: frames per latent frame).
static const struct {
    enum vae_family family;
    int             z, patch, t[3];
    bool            super;
} model_taehv_variants[] = {
    { VAE_FAMILY_TAEW21, 16, 1, { 1, 2, 2 }, false },   { VAE_FAMILY_TAEHV, 16, 1, { 1, 2, 2 }, false },
    { VAE_FAMILY_TAECVX, 16, 1, { 1, 2, 2 }, false },   { VAE_FAMILY_TAEW22, 48, 2, { 1, 2, 2 }, false },
    { VAE_FAMILY_TAEHV1_5, 32, 2, { 1, 2, 2 }, false }, { VAE_FAMILY_TAELTX2, 128, 4, { 2, 2, 2 }, false },
    { VAE_FAMILY_TAEW22_SUPER, 48, 2, { 1, 2, 2 }, true }, { VAE_FAMILY_TAEHV1_5_SUPER, 32, 2, { 1, 2, 2 }, true },
};

// a SuperMemBlock's depthwise conv [2 C, 1, 7, 7] filters x_t (rows [0, C)) and x_t-1 (rows
// [C, 2 C)); the graph runs it once on x with two filters per channel (channel multiplier 2), so
// row 2c + j is the file's row j C + c
static int32_t model_taehv_super_dw_row(int32_t k, int32_t n) {
    return (k & 1) * (n / 2) + k / 2;
}

// TAEHV: its MemBlocks convolve [x_t, x_t-1] stacked on channels; the canonical weight is the
// causal conv3d form [Cout, Cin, 2, k, k], tap 0 the previous frame and tap 1 the current one
// the last conv of a 4x4-patch TAEHV (rows 3 x 16): row 16c + 8a + 4b + 2d + e is the file's
// 16c + 8d + 4a + 2e + b, so that two 2x pixel shuffles of its output (the first one's offsets
// d, e the coarse ones) give the file's pixel_shuffle(4)
static int32_t model_taehv_shuffle4_row(int32_t r, int32_t n) {
    (void) n;
    const int32_t bits = r & 15;
    return (r & ~15) | (bits & 2) << 2 | (bits & 8) >> 1 | (bits & 1) << 1 | (bits & 4) >> 2;
}

// MemBlock convs as causal taps (base), or SuperMemBlock depthwise rows interleaved and 1x1s as
// sparse causal taps (super); the data is rearranged when it is made
static bool model_taehv_blocks(struct vae_model * m, bool super, char * err, size_t err_size) {
    for (int i = 0; i < m->n_weights; i++) {
        struct vae_weight * w = &m->weights[i];
        const char *        c = strstr(w->name, ".conv.");
        if (!c || w->n_dims != 4) {
            continue;
        }
        if (super && !strcmp(c, ".conv.0.weight") && w->shape[0] % 2 == 0) {
            if (!model_rows_reorder(w, model_taehv_super_dw_row, err, err_size)) {
                return false;
            }
            continue;
        }
        if (strcmp(c, super ? ".conv.1.weight" : ".conv.0.weight") || w->shape[1] % 2 != 0) {
            continue;
        }
        w->taps             = !super;
        w->taps_interleaved = super;
        w->n_dims           = 5;
        w->shape[4]         = w->shape[3];
        w->shape[3]         = w->shape[2];
        w->shape[2]         = 2;
        w->shape[1] /= super ? 1 : 2;
    }
    return true;
}

static bool model_taehv_family(struct vae_model * m, enum vae_family want, char * err, size_t err_size) {
    const bool                super = vae_model_weight(m, "decoder.0.weight") != NULL;
    const char *              first = super ? "decoder.0.weight" : "decoder.1.weight";
    const struct vae_weight * in    = vae_model_weight(m, first);
    const struct vae_weight * out   = vae_model_weight(m, "decoder.22.weight");
    if (!in || !out || in->n_dims != 4 || out->n_dims != 4) {
        snprintf(err, err_size, "TAEHV-style names but no 4-D '%s' and 'decoder.22.weight'", first);
        return false;
    }
    m->latent_channels = (int) in->shape[1];
    const int64_t rgb  = out->shape[0];
    int           v = -1, same = 0; // the variant (the one asked for among those with the file's shapes)
    for (int i = 0; i < (int) (sizeof(model_taehv_variants) / sizeof(model_taehv_variants[0])); i++) {
        const int p = model_taehv_variants[i].patch;
        if (model_taehv_variants[i].z == m->latent_channels && 3 * p * p == rgb &&
            model_taehv_variants[i].super == super) {
            v = v < 0 || model_taehv_variants[i].family == want ? i : v;
            same++;
        }
    }
    if (v < 0) {
        snprintf(err, err_size,
                 "a TAEHV%s decoder with %d latent channels and %lld output channels: not a variant this build knows "
                 "(taew2_1, taehv, taecvx: 16 and 3; taew2_2: 48 and 12; taehv1_5: 32 and 12; taeltx_2: 128 and 48; "
                 "taew2_2_super: 48 and 12; taehv1_5_super: 32 and 12)",
                 super ? " 'super'" : "", m->latent_channels, (long long) rgb);
        return false;
    }
    m->frames_per_latent = 1;
    for (int stage = 0; stage < 3; stage++) {
        const int s = model_taehv_variants[v].t[stage];
        char      name[32];
        snprintf(name, sizeof(name), "decoder.%d.conv.weight", 7 + (super ? 7 : 6) * stage);
        const struct vae_weight * w = vae_model_weight(m, name);
        if (!w || w->n_dims != 4 || w->shape[1] < 1 || w->shape[0] != s * w->shape[1] || w->shape[2] != 1 ||
            w->shape[3] != 1) {
            snprintf(err, err_size,
                     "TAEHV tensor '%s' is missing or is not a 1x1 TGrow of time stride %d ([%d C, C, 1, 1]) as %s has",
                     name, s, s, vae_family_name(model_taehv_variants[v].family));
            return false;
        }
        m->frames_per_latent *= s;
    }
    if (!model_taehv_blocks(m, super, err, err_size)) {
        return false;
    }
    const int patch = model_taehv_variants[v].patch;
    if (patch == 4) { // (the bias, when there is one, is checked by the builder)
        struct vae_weight * bias = (struct vae_weight *) vae_model_weight(m, "decoder.22.bias");
        if (!model_rows_reorder((struct vae_weight *) out, model_taehv_shuffle4_row, err, err_size) ||
            (bias && bias->n_dims == 1 && bias->shape[0] == rgb &&
             !model_rows_reorder(bias, model_taehv_shuffle4_row, err, err_size))) {
            return false;
        }
    }
    m->own_space   = VAE_SPACE_NORMALIZED;
    m->scale       = 8 * patch;
    // upstream drops the first t_upscale - 1 frames (taecvx: for an odd latent count, as CogVideoX's
    // 13-latent 49-frame videos have; its streaming wrapper and even counts keep them)
    m->trim_frames = m->frames_per_latent - 1;
    m->out_scale   = 1.0f;
    m->out_offset  = 0.0f;
    return model_check_family(m, model_taehv_variants[v].family, same == 1, want, err, err_size);
}

// AutoencoderKL: where its names start (a full checkpoint's prefix) and which naming they use
static const char * model_kl_prefix(const struct vae_st_header * hdr, enum model_naming * naming) {
    static const char * prefixes[] = { "", "first_stage_model.", "vae." };
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        char key[96];
        snprintf(key, sizeof(key), "%sdecoder.up_blocks.0.resnets.0.norm1.weight", prefixes[i]);
        char svd[112];
        snprintf(svd, sizeof(svd), "%sdecoder.up_blocks.0.resnets.0.spatial_res_block.norm1.weight", prefixes[i]);
        if (model_has(hdr, key) || model_has(hdr, svd)) {
            *naming = NAMING_KL_DIFFUSERS;
            return prefixes[i];
        }
        snprintf(key, sizeof(key), "%sdecoder.conv_in.weight", prefixes[i]);
        const struct vae_st_tensor * in = vae_st_header_find(hdr, key);
        if (in && in->n_dims == 4) {
            *naming = NAMING_KL;
            return prefixes[i];
        }
    }
    return NULL;
}

// a new weight `name` of shape made from the file's tensors src (joined along dimension 0); the
// weights move (and stay sorted)
static bool model_add_weight(struct vae_model * m, const char * name, int n_dims, const int64_t * shape,
                             const struct vae_st_tensor * const * src, int n_src) {
    struct vae_weight * grown = realloc(m->weights, (size_t) (m->n_weights + 1) * sizeof(*grown));
    if (!grown) {
        return false;
    }
    m->weights            = grown;
    struct vae_weight * w = &m->weights[m->n_weights];
    *w                    = (struct vae_weight) { .name = strdup(name), .n_dims = n_dims, .n_src = n_src };
    memcpy(w->shape, shape, (size_t) n_dims * sizeof(*shape));
    memcpy(w->src, src, (size_t) n_src * sizeof(*src));
    if (!w->name) {
        return false;
    }
    m->n_weights++;
    qsort(m->weights, (size_t) m->n_weights, sizeof(*m->weights), model_cmp_weight);
    return true;
}

// Wan 2.2's head gives 3 x 2x2 channels whose patch order (channel 4c + 2j + i goes to row offset
// i, column offset j; MODELS.md B.8) is the transpose of pixel_shuffle's: its rows are reordered
// so that pixel_shuffle unpatchifies them
// the head's row 4c + 2i + j is the file's 4c + 2j + i (Wan 2.2 unpatchifies in the other order)
static int32_t model_wan22_head_row(int32_t k, int32_t n) {
    (void) n;
    return (k & ~3) | (k & 1) << 1 | (k >> 1 & 1);
}

static bool model_wan22_head(struct vae_model * m, char * err, size_t err_size) {
    static const char * names[2] = { "decoder.head.2.weight", "decoder.head.2.bias" };
    for (int i = 0; i < 2; i++) {
        struct vae_weight * w = (struct vae_weight *) vae_model_weight(m, names[i]);
        if (!w || w->n_dims < 1 || w->shape[0] != 12) {
            snprintf(err, err_size, "wan2.2: tensor '%s' is missing or does not give 12 channels (RGB in 2x2 patches)",
                     names[i]);
            return false;
        }
        if (!model_rows_reorder(w, model_wan22_head_row, err, err_size)) {
            return false;
        }
    }
    return true;
}

// Wan 2.2 up-block I with a resample adds DupUp3D(Cin, Cout, ft, 2) of its input (MODELS.md B.8):
// output channel o at time offset a and patch position p = 2i + j takes input channel
// (o ft 4 + a 4 + p) / r, r = Cout ft 4 / Cin. It becomes the channel map
// `decoder.upsamples.I.avg_shortcut.weight` [ft Cout s, Cin, 1, 1], row (a Cout + o) s + p, that
// frame_split(ft) and then pixel_shuffle (s = 4) or, where p does not change the channel (4 | r),
// a nearest 2x (s = 1) turn into the shortcut (vae-wan.c)
static bool model_wan22_shortcut(struct vae_model * m, int block, char * err, size_t err_size) {
    char name[96];
    snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.0.residual.0.gamma", block);
    const int64_t cin = vae_model_weight(m, name)->shape[0];
    int           j   = 1; // the resample follows the residual blocks
    for (;; j++) {
        snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.%d.residual.0.gamma", block, j);
        if (!vae_model_weight(m, name)) {
            break;
        }
    }
    snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.%d.resample.1.weight", block, j);
    const struct vae_weight * out = vae_model_weight(m, name);
    if (!out) {
        return true; // the last block: no resample, no shortcut
    }
    snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.%d.time_conv.weight", block, j);
    const int64_t ft = vae_model_weight(m, name) ? 2 : 1, cout = out->shape[0];
    // (the temporal blocks keep their width: the first step's shortcut is then a plain nearest 2x)
    if (cin < 1 || cout < 1 || cin > 65536 || cout > 65536 || (ft == 2 && cin != cout) || (cout * ft * 4) % cin != 0) {
        snprintf(err, err_size, "wan2.2: up-block %d goes from %lld to %lld channels%s: not a DupUp3D shortcut this "
                 "build knows", block, (long long) cin, (long long) cout, ft == 2 ? " with temporal upsampling" : "");
        return false;
    }
    const int64_t r = cout * ft * 4 / cin, s = r % 4 == 0 ? 1 : 4, n = ft * cout * s;
    snprintf(name, sizeof(name), "decoder.upsamples.%d.avg_shortcut.weight", block);
    int32_t * rows = malloc((size_t) n * sizeof(*rows));
    const struct vae_st_tensor * none[1] = { NULL };
    if (vae_model_weight(m, name)) {
        snprintf(err, err_size, "tensor '%s' is not part of a Wan 2.2 decoder (its shortcuts have no weights)", name);
    } else if (!rows || !model_add_weight(m, name, 4, (const int64_t[]) { n, cin, 1, 1 }, none, 0)) {
        snprintf(err, err_size, "out of memory");
    } else {
        for (int64_t k = 0; k < n; k++) {
            const int64_t p = k % s, o = k / s % cout, a = k / s / cout;
            rows[k]         = (int32_t) ((o * ft * 4 + a * 4 + p) / r);
        }
        ((struct vae_weight *) vae_model_weight(m, name))->rows = rows;
        return true;
    }
    free(rows);
    return false;
}

static bool model_wan22_prepare(struct vae_model * m, char * err, size_t err_size) {
    bool ok = model_wan22_head(m, err, err_size);
    for (int i = 0; ok; i++) {
        char name[96];
        snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.0.residual.0.gamma", i);
        if (!vae_model_weight(m, name)) {
            break;
        }
        ok = model_wan22_shortcut(m, i, err, err_size);
    }
    return ok;
}

// the mid block's attention `at` (C channels, those of `decoder.conv_in.weight`): q, k, v and the
// output projection (parts, in that order) as [C, C, 1, 1] (diffusers stores [C, C]); q, k and v
// joined into one conv `<at>.<qkv>` [3C, C, 1, 1]
static bool model_attention_join(struct vae_model * m, const char * family, const char * at, const char * const * parts,
                                 const char * qkv, char * err, size_t err_size) {
    const struct vae_weight *    in = vae_model_weight(m, "decoder.conv_in.weight");
    const int64_t                c  = in->shape[0];
    const struct vae_st_tensor * w[3], * b[3];
    for (int i = 0; i < 4; i++) {
        char name[96];
        snprintf(name, sizeof(name), "%s.%s.weight", at, parts[i]);
        struct vae_weight * wt = (struct vae_weight *) vae_model_weight(m, name);
        snprintf(name, sizeof(name), "%s.%s.bias", at, parts[i]);
        const struct vae_weight * bt = vae_model_weight(m, name);
        const bool is2d = wt && wt->n_dims == 2, is4d = wt && wt->n_dims == 4 && wt->shape[2] == 1 && wt->shape[3] == 1;
        if (!wt || !(is2d || is4d) || wt->shape[0] != c || wt->shape[1] != c || !bt || bt->n_dims != 1 ||
            bt->shape[0] != c) {
            snprintf(err, err_size,
                     "%s: attention tensor '%s.%s' (weight [%lld, %lld] or [%lld, %lld, 1, 1] and bias) is missing or "
                     "has the wrong shape",
                     family, at, parts[i], (long long) c, (long long) c, (long long) c, (long long) c);
            return false;
        }
        wt->n_dims   = 4;
        wt->shape[2] = wt->shape[3] = 1;
        if (i < 3) {
            w[i] = wt->src[0];
            b[i] = bt->src[0];
        }
    }
    char wname[96], bname[96];
    snprintf(wname, sizeof(wname), "%s.%s.weight", at, qkv);
    snprintf(bname, sizeof(bname), "%s.%s.bias", at, qkv);
    if (!model_add_weight(m, wname, 4, (const int64_t[]) { 3 * c, c, 1, 1 }, w, 3) ||
        !model_add_weight(m, bname, 1, (const int64_t[]) { 3 * c }, b, 3)) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    return true;
}

// SVD: each temporal block's blend `<block>.mix_factor` (one value) scales the block's last conv
// (vae_weight.mix, see vae-svd.c); the builder names a conv whose blend is missing
static bool model_svd_mix(struct vae_model * m, char * err, size_t err_size) {
    static const char * parts[] = { "weight", "bias" };
    for (int i = 0; i < m->n_weights; i++) {
        const struct vae_weight * f   = &m->weights[i];
        const size_t              len = strlen(f->name);
        if (len < 11 || strcmp(f->name + len - 11, ".mix_factor") != 0) {
            continue;
        }
        if (f->n_src != 1 || f->src[0]->numel != 1) {
            snprintf(err, err_size, "svd: tensor '%s' holds %llu values, not 1 (a temporal block's blend)",
                     f->src[0]->name, (unsigned long long) f->src[0]->numel);
            return false;
        }
        for (int j = 0; j < 2; j++) {
            char name[128];
            snprintf(name, sizeof(name), "%.*s.time_stack.out_layers.3.%s", (int) len - 11, f->name, parts[j]);
            struct vae_weight * conv = (struct vae_weight *) vae_model_weight(m, name);
            if (conv) {
                conv->mix = f->src[0];
            }
        }
    }
    return true;
}

// SeedVR2's `upscale_conv` w [C r, C, 1, 1, 1] (r = 8: 2x in time and space, 4: space) gives
// channel ((2 i + j) zr + z) C + c to frame offset z and pixel offset (i, j) (einops
// "b (x y z c) f h w -> b c (f z) (h x) (w y)"); its rows (and its bias's) become (z C + c) 4 + 2 i
// + j, the order that frame_split(zr) then pixel_shuffle place
static bool model_seedvr_upscale(struct vae_model * m, int block, char * err, size_t err_size) {
    char name[96];
    snprintf(name, sizeof(name), "decoder.up_blocks.%d.upsamplers.0.upscale_conv.weight", block);
    struct vae_weight * w = (struct vae_weight *) vae_model_weight(m, name);
    snprintf(name, sizeof(name), "decoder.up_blocks.%d.upsamplers.0.upscale_conv.bias", block);
    struct vae_weight * b = (struct vae_weight *) vae_model_weight(m, name);
    if (!w && !b) {
        return true; // no upsampler (the last block), or one the build finds incomplete
    }
    const int64_t c = w && w->n_dims == 5 ? w->shape[1] : 0, n = w ? w->shape[0] : 0;
    if (!w || !b || c < 1 || (n != 8 * c && n != 4 * c) || w->shape[2] != 1 || w->shape[3] != 1 || w->shape[4] != 1 ||
        b->n_dims != 1 || b->shape[0] != n) {
        snprintf(err, err_size, "seedvr2: tensor '%.*s' is missing or is not an upscale conv [8 C or 4 C, C, 1, 1, 1] "
                 "with a bias", (int) strlen(name) - 5, name);
        return false;
    }
    int32_t * rows[2] = { malloc((size_t) n * sizeof(int32_t)), malloc((size_t) n * sizeof(int32_t)) };
    if (!rows[0] || !rows[1]) {
        free(rows[0]);
        free(rows[1]);
        snprintf(err, err_size, "out of memory");
        return false;
    }
    const int64_t zr = n / (4 * c);
    for (int64_t k = 0; k < n; k++) {
        const int64_t z = k / (4 * c), ch = k / 4 % c, i = k / 2 % 2, j = k % 2;
        rows[0][k] = rows[1][k] = (int32_t) (((2 * i + j) * zr + z) * c + ch);
    }
    w->rows = rows[0];
    b->rows = rows[1];
    return true;
}

// SeedVR2 (MODELS.md §I): 16 latent channels, its attention's q, k, v joined, the upscale convs
// reordered
static bool model_seedvr_family(struct vae_model * m, enum vae_family want, char * err, size_t err_size) {
    static const char *       parts[] = { "to_q", "to_k", "to_v", "to_out.0" };
    const struct vae_weight * in      = vae_model_weight(m, "decoder.conv_in.weight");
    if (!in || in->n_dims != 5) {
        snprintf(err, err_size, "SeedVR2-style names but no 5-D 'decoder.conv_in.weight' (a causal 3x3x3 conv)");
        return false;
    }
    m->latent_channels = (int) in->shape[1];
    if (m->latent_channels != 16) {
        snprintf(err, err_size, "a SeedVR2-style decoder with %d latent channels: only 16 is known",
                 m->latent_channels);
        return false;
    }
    if (!model_attention_join(m, "seedvr2", "decoder.mid_block.attentions.0", parts, "to_qkv", err, err_size)) {
        return false;
    }
    for (int i = 0; i <= MODEL_MAX_INDEX; i++) {
        char name[96];
        snprintf(name, sizeof(name), "decoder.up_blocks.%d.resnets.0.norm1.weight", i);
        if (!vae_model_weight(m, name)) {
            break;
        }
        if (!model_seedvr_upscale(m, i, err, err_size)) {
            return false;
        }
    }
    m->own_space         = VAE_SPACE_RAW;
    m->scale             = 8;
    m->frames_per_latent = 4;
    m->first_apart       = true; // the first step drops the frame its temporal upsamplers duplicate
    m->out_scale         = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset        = 0.5f;
    return model_check_family(m, VAE_FAMILY_SEEDVR2, true, want, err, err_size);
}

// AutoencoderKL: the family from the latent channels, FLUX.2's BatchNorm statistics, SVD's
// temporal blocks, and the checkpoint around the decoder (MODELS.md §D.5), checked against the user's
static bool model_kl_family(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                            size_t err_size) {
    const struct vae_weight * in = vae_model_weight(m, "decoder.conv_in.weight");
    const int                 z  = in ? (int) in->shape[1] : 0;
    m->latent_channels           = z;
    static const char * parts[] = { "q", "k", "v", "proj_out" };
    if (!in || !model_attention_join(m, "AutoencoderKL", "decoder.mid.attn_1", parts, "qkv", err, err_size)) {
        if (!in) {
            snprintf(err, err_size, "AutoencoderKL names but no 'decoder.conv_in.weight'");
        }
        return false;
    }
    // (after model_attention_join, which may move the weights)
    const struct vae_weight * mean = vae_model_weight(m, "bn.running_mean");
    const struct vae_weight * var  = vae_model_weight(m, "bn.running_var");
    enum vae_family found;
    bool            certain = true;
    if (vae_model_weight(m, "decoder.conv_out.time_mix_conv.weight") ||
        vae_model_weight(m, "decoder.mid.block_1.mix_factor")) {
        found = VAE_FAMILY_SVD;
        if (z != 4) {
            snprintf(err, err_size, "an SVD-style temporal decoder with %d latent channels: only 4 is known", z);
            return false;
        }
        if (!model_svd_mix(m, err, err_size)) {
            return false;
        }
        m->clip_calls = true;
    } else if (mean || var) {
        found = VAE_FAMILY_FLUX2;
        if (z != 32 || !mean || !var || mean->n_dims != 1 || var->n_dims != 1 || mean->shape[0] != 4 * z ||
            var->shape[0] != 4 * z) {
            snprintf(err, err_size,
                     "a FLUX.2-style AutoencoderKL (with BatchNorm statistics) needs 32 latent channels and "
                     "'bn.running_mean' and 'bn.running_var' of 128; the file has %d channels", z);
            return false;
        }
        ((struct vae_weight *) mean)->aux = ((struct vae_weight *) var)->aux = true;
    } else if (z == 4) {
        certain = model_has_prefix(hdr, "conditioner.embedders.1.") || model_has_prefix(hdr, "cond_stage_model.");
        found   = model_has_prefix(hdr, "conditioner.embedders.1.") ? VAE_FAMILY_SDXL
                  : model_has_prefix(hdr, "cond_stage_model.model.") ? VAE_FAMILY_SD2
                                                                    : VAE_FAMILY_SD1;
    } else if (z == 16) {
        const bool flux = model_has_prefix(hdr, "double_blocks.") || model_has_prefix(hdr, "model.diffusion_model.double_blocks.");
        certain         = flux || model_has_prefix(hdr, "model.diffusion_model.joint_blocks.");
        found           = flux ? VAE_FAMILY_FLUX1 : VAE_FAMILY_SD3;
    } else {
        snprintf(err, err_size,
                 "an AutoencoderKL decoder with %d latent channels: not a variant this build knows (sd1/sd2/sdxl: 4, "
                 "sd3/flux1: 16, flux2: 32 with BatchNorm statistics)", z);
        return false;
    }
    // the families that share shapes: sd1, sd2, sdxl; sd3, flux1
    const int group_of[VAE_FAMILY_COUNT] = { [VAE_FAMILY_SD1] = 1, [VAE_FAMILY_SD2] = 1, [VAE_FAMILY_SDXL] = 1,
                                             [VAE_FAMILY_SD3] = 2, [VAE_FAMILY_FLUX1] = 2, [VAE_FAMILY_FLUX2] = 3,
                                             [VAE_FAMILY_SVD] = 4 };
    if (want != VAE_FAMILY_AUTO && group_of[want] != group_of[found]) {
        snprintf(err, err_size, "model-family %s was asked for, but the file holds a %s-style AutoencoderKL decoder "
                 "(%d latent channels)", vae_family_name(want), vae_family_name(found), z);
        return false;
    }
    m->family         = want != VAE_FAMILY_AUTO ? want : found;
    m->family_certain = certain || want != VAE_FAMILY_AUTO;
    m->own_space      = VAE_SPACE_RAW;
    m->scale          = 1; // 2x per upsampling level (8 for the released decoders' four levels)
    for (int l = 0; l < 16; l++) {
        char name[64];
        snprintf(name, sizeof(name), "decoder.up.%d.upsample.conv.weight", l);
        m->scale *= vae_model_weight(m, name) ? 2 : 1;
    }
    m->out_scale      = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset     = 0.5f;
    return true;
}

// whether the file tensor t feeds a weight that g uses (as one of its sources, or its blend)
static bool model_feeds(const struct vae_model * m, const struct vae_graph * g, const struct vae_st_tensor * t) {
    for (int i = 0; i < g->n_weights; i++) {
        const struct vae_weight * w = vae_model_weight(m, g->weights[i]->name);
        for (int j = 0; w && j < w->n_src; j++) {
            if (w->src[j] == t || w->mix == t) {
                return true;
            }
        }
    }
    return false;
}

// every decoder tensor of the file is one that g (a graph of the family's builder) uses: a tensor
// the builder does not know would otherwise be ignored, and the decoder it belongs to (an SVD
// file taken for SD's VAE, a variant with extra layers) decode garbage without a word
static bool model_check_used(const struct vae_model * m, const struct vae_graph * g, char * err, size_t err_size) {
    for (int i = 0; i < m->n_weights; i++) {
        const struct vae_weight * w = &m->weights[i];
        if (w->n_src > 0 && !w->aux && !model_feeds(m, g, w->src[0])) {
            snprintf(err, err_size,
                     "tensor '%s' is not part of the %s decoder as this build knows it: the file holds a decoder it "
                     "cannot decode exactly (refused rather than ignored)",
                     w->src[0]->name, vae_family_name(m->family));
            return false;
        }
    }
    return true;
}

struct vae_model * vae_model_load(const char * path, enum vae_family family, char * err, size_t err_size) {
    struct vae_st_file * file = vae_weights_file_open(path, err, err_size);
    if (!file) {
        return NULL;
    }
    const struct vae_st_header * hdr    = file->hdr;
    struct vae_model *           m      = calloc(1, sizeof(*m));
    enum model_naming            naming = NAMING_NONE;
    const char *                 prefix = "";
    if (!m) {
        snprintf(err, err_size, "out of memory");
        vae_st_file_close(file);
        return NULL;
    }
    m->file = file;
    pthread_mutex_init(&m->lock, NULL);
    bool ok = true;
    if (model_has(hdr, "taesd_decoder.1.weight")) {
        naming = NAMING_TAESD_COMFY;
    } else if (model_has(hdr, "decoder.layers.0.weight")) {
        naming = NAMING_TAESD_DIFFUSERS;
    } else if (model_has(hdr, "1.weight") && model_has(hdr, "3.conv.0.weight")) {
        naming = NAMING_TAESD;
    } else if (model_has(hdr, "decoder.middle.0.residual.0.gamma")) {
        naming = NAMING_WAN;
    } else if (model_has(hdr, "decoder.mid_block.resnets.0.norm1.gamma")) {
        naming = model_has_prefix(hdr, "decoder.up_blocks.0.upsampler.") ? NAMING_WAN22_DIFFUSERS
                                                                           : NAMING_WAN_DIFFUSERS;
    } else if (model_has(hdr, "decoder.up_blocks.0.upsamplers.0.upscale_conv.weight") ||
               model_has(hdr, "decoder.up_blocks.0.upsamplers.0.upscale_conv.bias")) {
        naming = NAMING_SEEDVR; // (AutoencoderKL names otherwise, and 3-D convs)
    } else if (model_has(hdr, "decoder.22.bias") &&
               (model_has(hdr, "decoder.1.weight") || model_has(hdr, "decoder.0.weight"))) { // base, super
        naming = NAMING_TAEHV;
    } else {
        const char * at = model_kl_prefix(hdr, &naming);
        prefix          = at ? at : prefix;
    }
    if (ok && naming == NAMING_NONE) {
        ok = false;
        if (model_has(hdr, "0.weight") && model_has(hdr, "14.weight")) {
            snprintf(err, err_size, "'%s' is a TAESD encoder (keys 0.weight .. 14.weight), not a decoder", path);
        } else if (model_has_prefix(hdr, "taesd_encoder.")) {
            snprintf(err, err_size, "'%s' holds a TAESD encoder (taesd_encoder.*) but no decoder", path);
        } else if (model_has_prefix(hdr, "encoder.") && !model_has_prefix(hdr, "decoder.")) {
            snprintf(err, err_size, "'%s' holds an encoder (encoder.*) but no decoder", path);
        } else {
            snprintf(err, err_size,
                     "'%s' matches no decoder family: looked for TAESD keys ('1.weight' with '3.conv.0.weight', "
                     "'decoder.layers.0.weight', 'taesd_decoder.1.weight'), AutoencoderKL ('decoder.conv_in.weight'), "
                     "Wan ('decoder.middle.0.residual.0.gamma', 'decoder.mid_block.resnets.0.norm1.gamma'), TAEHV "
                     "('decoder.22.bias') and SeedVR2 ('decoder.up_blocks.0.upsamplers.0.upscale_conv.weight'); its %d "
                     "tensors start with '%s'",
                     path, hdr->n_tensors, hdr->n_tensors ? hdr->tensors[0].name : "(none)");
        }
    }
    if (ok && family != VAE_FAMILY_AUTO && family >= VAE_FAMILY_COUNT) {
        snprintf(err, err_size, "unknown model family %d", (int) family);
        ok = false;
    }
    ok = ok && model_load_weights(m, hdr, naming, prefix, err, err_size);
    if (ok && (naming == NAMING_KL || naming == NAMING_KL_DIFFUSERS)) {
        ok = model_kl_family(m, hdr, family, err, err_size);
    }
    if (ok && naming <= NAMING_TAESD_COMFY) {
        ok            = model_taesd_family(m, family, err, err_size);
        m->own_space  = VAE_SPACE_NORMALIZED;
        m->scale      = 8;
        m->out_scale  = 1.0f; // TAESD decodes to about [0, 1]
        m->out_offset = 0.0f;
    } else if (ok && naming == NAMING_SEEDVR) {
        ok = model_seedvr_family(m, family, err, err_size);
    } else if (ok && naming != NAMING_KL && naming != NAMING_KL_DIFFUSERS) {
        ok = naming == NAMING_TAEHV ? model_taehv_family(m, family, err, err_size)
                                    : model_wan_family(m, family, err, err_size);
    }
    if (ok) {
        if (m->frames_per_latent == 0) {
            m->frames_per_latent = 1;
        }
        snprintf(m->description, sizeof(m->description), "%s%s decoder, %d latent channels, %d tensors",
                 vae_family_name(m->family), m->family_certain ? "" : " (or a family with the same shapes)",
                 m->latent_channels, m->n_weights);
        // build once to check that every tensor the graph needs is there with its shape, and finite
        // (this makes the data of every weight a graph uses), and that the graph uses every one
        struct vae_graph * g = vae_model_build_graph(m, 1, 1, 1, false, err, err_size);
        ok                   = g != NULL && model_check_used(m, g, err, err_size);
        vae_graph_free(g);
    }
    // the file's pages the copies were made from leave the resident memory, which then holds the
    // copies alone, as when the file was closed after a load. Only now that all are made: a read
    // fault maps the pages around it too, so earlier drops would be undone by later conversions
    for (int i = 0; ok && i < m->n_weights; i++) {
        for (int j = 0; m->weights[i].copy && j < m->weights[i].n_src; j++) {
            vae_st_tensor_drop(m->weights[i].src[j]);
        }
    }
    if (!ok) {
        vae_model_free(m);
        return NULL;
    }
    return m;
}

int vae_model_space_patch(const struct vae_model * model, enum vae_space space) {
    return model->family == VAE_FAMILY_FLUX2 && space == VAE_SPACE_NORMALIZED ? 2 : 1;
}

// AutoencoderKL: the diffusion model's x -> raw z = x / scale + shift
static bool model_kl_affine(int z, float scale, float shift, float * div, float * add) {
    for (int c = 0; c < z; c++) {
        div[c] = scale;
        add[c] = shift;
    }
    return true;
}

bool vae_model_space_affine(const struct vae_model * model, enum vae_space space, float * div, float * add,
                            char * err, size_t err_size) {
    const int z = model->latent_channels;
    for (int c = 0; c < z; c++) {
        div[c] = 1.0f;
        add[c] = 0.0f;
    }
    if (space == VAE_SPACE_AUTO || space == model->own_space) {
        return true;
    }
    if (!model->family_certain) {
        snprintf(err, err_size,
                 "a %d-channel %s decoder cannot tell which latent constants it needs (%s): set model-family to "
                 "convert %s latents",
                 z, vae_family_name(model->family),
                 model->family == VAE_FAMILY_TAESD    ? "taesd 0.18215 or taesdxl 0.13025"
                 : model->family == VAE_FAMILY_TAESD3 ? "taesd3 or taef1"
                 : model->family == VAE_FAMILY_SD1    ? "sd1 or sd2 0.18215, or sdxl 0.13025"
                 : model->family == VAE_FAMILY_SD3    ? "sd3 1.5305 and 0.0609, or flux1 0.3611 and 0.1159"
                                                       : "taew2_1, taehv or taecvx, which share shapes",
                 space == VAE_SPACE_RAW ? "raw" : "normalized");
        return false;
    }
    float s = 0.0f, raw_shift = 0.0f;
    switch (model->family) {
        case VAE_FAMILY_SD1:
        case VAE_FAMILY_SD2:
        case VAE_FAMILY_SVD:  return model_kl_affine(z, 0.18215f, 0.0f, div, add);
        case VAE_FAMILY_SDXL: return model_kl_affine(z, 0.13025f, 0.0f, div, add);
        case VAE_FAMILY_SD3:  return model_kl_affine(z, 1.5305f, 0.0609f, div, add);
        case VAE_FAMILY_FLUX1: return model_kl_affine(z, 0.3611f, 0.1159f, div, add);
        case VAE_FAMILY_SEEDVR2: return model_kl_affine(z, 0.9152f, 0.0f, div, add); // configs_*b/main.yaml
        case VAE_FAMILY_FLUX2: { // x' = x * sqrt(var + eps) + mean over the 128 patchified channels
            const float * mean = vae_model_weight_data(model, vae_model_weight(model, "bn.running_mean"), err, err_size);
            const float * var  = mean ? vae_model_weight_data(model, vae_model_weight(model, "bn.running_var"), err,
                                                              err_size)
                                      : NULL;
            if (!var) {
                return false;
            }
            for (int c = 0; c < 4 * z; c++) {
                div[c] = 1.0f / sqrtf(var[c] + FLUX2_BN_EPS);
                add[c] = mean[c];
            }
            return true;
        }
        case VAE_FAMILY_TAESD:   s = 0.18215f; break;
        case VAE_FAMILY_TAESDXL: s = 0.13025f; break;
        case VAE_FAMILY_TAESD3:  s = 1.5305f, raw_shift = 0.0609f; break;
        case VAE_FAMILY_TAEF1:   s = 0.3611f, raw_shift = 0.1159f; break;
        case VAE_FAMILY_TAEHV:   s = 0.476986f; break;   // HunyuanVideo's scaling_factor
        case VAE_FAMILY_TAEHV1_5:
        case VAE_FAMILY_TAEHV1_5_SUPER: s = 1.03682f; break;   // HunyuanVideo 1.5's
        case VAE_FAMILY_WAN21:   // normalized -> raw: x / (1 / std) + mean (MODELS.md B.4, B.8)
        case VAE_FAMILY_WAN22:
            for (int c = 0; c < z; c++) {
                div[c] = 1.0f / (z == 16 ? wan21_std : wan22_std)[c];
                add[c] = (z == 16 ? wan21_mean : wan22_mean)[c];
            }
            return true;
        case VAE_FAMILY_TAEW21:  // raw -> normalized: (z - mean) / std
        case VAE_FAMILY_TAEW22:
        case VAE_FAMILY_TAEW22_SUPER:
            for (int c = 0; c < z; c++) {
                const float * mean = z == 16 ? wan21_mean : wan22_mean, * std = z == 16 ? wan21_std : wan22_std;
                div[c] = std[c];
                add[c] = -mean[c] / std[c];
            }
            return true;
        case VAE_FAMILY_TAELTX2: // (own space normalized: only raw latents come here)
        case VAE_FAMILY_TAECVX:
            snprintf(err, err_size, "%s has no constants to convert raw latents (%s): feed it the diffusion model's "
                     "(normalized) latents", vae_family_name(model->family),
                     model->family == VAE_FAMILY_TAECVX ? "CogVideoX-2b scales them by 1.15258, -5b by 0.7"
                                                        : "LTX-2 keeps per-channel statistics in its own VAE file");
            return false;
        default:
            snprintf(err, err_size, "%s has no constants to convert %s latents: feed it %s latents",
                     vae_family_name(model->family), space == VAE_SPACE_RAW ? "raw" : "normalized",
                     model->own_space == VAE_SPACE_RAW ? "raw" : "the diffusion model's (normalized)");
            return false;
    }
    // TAESD and TAEHV decoders take the diffusion model's latents: (raw - shift) * scale
    for (int c = 0; c < z; c++) {
        div[c] = 1.0f / s;
        add[c] = -raw_shift * s;
    }
    return true;
}

int vae_model_frames_of_latent(const struct vae_model * model, uint64_t k) {
    return k == 0 ? 1 : model->frames_per_latent;
}

// the causal family's builder pieces, NULL for a family that has none
static const struct vae_causal_family * model_causal(const struct vae_model * model) {
    switch (model->family) {
        case VAE_FAMILY_WAN21:
        case VAE_FAMILY_WAN22:   return &vae_wan_causal;
        case VAE_FAMILY_SEEDVR2: return &vae_seedvr_causal;
        default:                 return NULL;
    }
}

// a causal family's whole-sequence graph: its head, then its steps in order, each residual step
// reading the activation its slot kept
static struct vae_graph * model_causal_build(const struct vae_model * model, const struct vae_causal_family * f, int n,
                                             int h, int w, bool first, char * err, size_t err_size) {
    struct vae_builder     b;
    struct vae_causal_step steps[VAE_CAUSAL_MAX_STEPS];
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    const int           n_steps = f->steps(model, steps, VAE_CAUSAL_MAX_STEPS);
    struct vae_tensor * x       = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, z, h, w]
    struct vae_tensor * slot[2] = { NULL, NULL };                                     // kept block inputs
    x                           = f->head(&b, x);
    // -> [N'', 3, s h, s w], N'' = 1 for a first step, 4N otherwise
    for (int i = 0; i < n_steps && x; i++) {
        const struct vae_causal_step * s = &steps[i];
        for (int j = 0; j < 2; j++) {
            slot[j] = s->save & (1 << j) ? x : slot[j];
        }
        x = f->step(&b, s, x, s->res >= 0 ? slot[s->res] : NULL, NULL, first);
    }
    return vae_builder_finish(&b, x);
}

struct vae_graph * vae_model_build_graph(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                         size_t err_size) {
    const struct vae_causal_family * causal = model_causal(model);
    if (causal) {
        return model_causal_build(model, causal, n, h, w, first && model->first_apart, err, err_size);
    }
    switch (model->family) {
        case VAE_FAMILY_TAEW21:
        case VAE_FAMILY_TAEW22:
        case VAE_FAMILY_TAEHV:
        case VAE_FAMILY_TAEHV1_5:
        case VAE_FAMILY_TAELTX2:
        case VAE_FAMILY_TAECVX: return vae_taehv_build(model, n, h, w, err, err_size);
        case VAE_FAMILY_TAEW22_SUPER:
        case VAE_FAMILY_TAEHV1_5_SUPER: return vae_taehv_super_build(model, n, h, w, err, err_size);
        case VAE_FAMILY_SD1:
        case VAE_FAMILY_SD2:
        case VAE_FAMILY_SDXL:
        case VAE_FAMILY_SD3:
        case VAE_FAMILY_FLUX1:
        case VAE_FAMILY_FLUX2:  return vae_kl_build(model, n, h, w, err, err_size);
        case VAE_FAMILY_SVD:    return vae_svd_build(model, n, h, w, err, err_size);
        default:                return vae_taesd_build(model, n, h, w, err, err_size);
    }
}

int vae_model_causal_steps(const struct vae_model * model, struct vae_causal_step * steps, int max) {
    const struct vae_causal_family * f = model_causal(model);
    return f ? f->steps(model, steps, max) : 0;
}

// (only for a family with steps: vae_tiled_video_new asks for those first)
struct vae_graph * vae_model_causal_head_build(const struct vae_model * model, int h, int w, char * err,
                                               size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    return vae_builder_finish(&b, model_causal(model)->head(&b, vae_graph_input(b.g, 1, model->latent_channels, h, w)));
}

struct vae_graph * vae_model_causal_step_build(const struct vae_model * model, const struct vae_causal_step * s,
                                               int h, int w, bool first, char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x     = vae_graph_input(b.g, 1, s->cin, h, w);                     // [1, Cin, h, w]
    struct vae_tensor * r     = s->rin > 0 ? vae_graph_input(b.g, 1, s->rin, h, w) : NULL;  // [1, rin, h, w]
    struct vae_tensor * stats = s->groups > 0 ? vae_graph_input(b.g, 1, 2 * s->groups, 1, 1) : NULL;
    return vae_builder_finish(&b, model_causal(model)->step(&b, s, x, r, stats, first));
}
