// Loading a decoder file: recognising its family from key names and shapes (MODELS.md §D),
// mapping its naming onto the canonical one the builders use, and converting the weights to f32
// once. A file that is not a decoder we know is refused with a message that says what was looked
// for and what was found, so a user who picked the wrong file learns which one it was.

#include "vae-model.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * family_names[VAE_FAMILY_COUNT] = {
    [VAE_FAMILY_AUTO] = "auto",     [VAE_FAMILY_TAESD] = "taesd", [VAE_FAMILY_TAESDXL] = "taesdxl",
    [VAE_FAMILY_TAESD3] = "taesd3", [VAE_FAMILY_TAEF1] = "taef1", [VAE_FAMILY_TAEF2] = "taef2",
    [VAE_FAMILY_WAN21] = "wan2.1",  [VAE_FAMILY_TAEW21] = "taew2_1", [VAE_FAMILY_TAEW22] = "taew2_2",
};

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
        free(model->weights[i].data);
    }
    free(model->weights);
    free(model);
}

const struct vae_weight * vae_model_weight(const struct vae_model * model, const char * name) {
    for (int i = 0; i < model->n_weights; i++) {
        if (strcmp(model->weights[i].name, name) == 0) {
            return &model->weights[i];
        }
    }
    return NULL;
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
        char want[96] = "", *p = want;
        for (int i = 0; i < n_dims; i++) {
            p += snprintf(p, (size_t) (want + sizeof(want) - p), i ? ", %lld" : "%lld", (long long) shape[i]);
        }
        return vae_builder_fail(b, "%s: tensor '%s' %s (expected shape [%s], -1 = any)",
                                vae_family_name(b->model->family), name, w ? "has the wrong shape" : "is missing", want);
    }
    return vae_graph_weight(b->g, w->name, w->data, w->n_dims, w->shape);
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

// families that MODELS.md describes but that this build has no builder for yet; the first three
// carry the keys of families we decode too (Wan 2.2 those of Wan 2.1), so they are checked first
static const struct {
    const char * key, * what;
} model_other_families[] = {
    { "decoder.upsamples.0.upsamples.0.residual.2.weight", "a Wan 2.2 (TI2V-5B) VAE (original naming)" },
    { "decoder.up_blocks.0.upsampler.time_conv.weight", "a Wan 2.2 (TI2V-5B) VAE (diffusers naming)" },
    { "decoder.0.weight", "a TAEHV 'super' variant (7x7 depthwise blocks)" },
    { "decoder.up_blocks.0.resnets.0.norm1.weight", "an AutoencoderKL decoder (diffusers naming)" },
    { "decoder.conv_in.weight", "an AutoencoderKL decoder (LDM naming)" },
    { "first_stage_model.decoder.conv_in.weight", "an AutoencoderKL decoder inside a full checkpoint" },
    { "vae.decoder.conv_in.weight", "an AutoencoderKL decoder inside a full checkpoint" },
};
#define MODEL_LOOKALIKES 3

static const char * model_other_family(const struct vae_st_header * hdr, size_t from, size_t to) {
    for (size_t i = from; i < to; i++) {
        if (model_has(hdr, model_other_families[i].key)) {
            return model_other_families[i].what;
        }
    }
    return NULL;
}

// how a file names its tensors; each maps onto the canonical (original upstream) names
enum model_naming {
    NAMING_TAESD,            // `1.weight`, `3.conv.0.weight`, ...
    NAMING_TAESD_DIFFUSERS,  // `decoder.layers.K-1.*`
    NAMING_TAESD_COMFY,      // `taesd_decoder.` + original
    NAMING_WAN,              // `conv2.*`, `decoder.conv1.*`, `decoder.upsamples.N.*` (canonical)
    NAMING_WAN_DIFFUSERS,    // `post_quant_conv.*`, `decoder.up_blocks.I.resnets.J.*`, ...
    NAMING_TAEHV,            // `decoder.K.*` (canonical)
    NAMING_NONE,
};

// `prefix` + the number `key` starts with (after `head`) + what follows, or NULL
static char * model_renumber(const char * key, const char * head, const char * prefix, long add, long mul, long * num,
                             const char ** rest) {
    const size_t n = strlen(head);
    if (strncmp(key, head, n) != 0 || !isdigit((unsigned char) key[n])) {
        return NULL;
    }
    char * end;
    *num = strtol(key + n, &end, 10);
    if (*end != '.' || *num > 1000) {
        return NULL;
    }
    *rest      = end;
    char * out = malloc(strlen(prefix) + strlen(end) + 24);
    if (out) {
        sprintf(out, "%s%ld%s", prefix, *num * mul + add, end);
    }
    return out;
}

// diffusers' names inside a Wan residual block -> the original Sequential indices
static char * model_wan_resblock(char * name) {
    static const char * map[][2] = {
        { ".norm1.", ".residual.0." }, { ".conv1.", ".residual.2." }, { ".norm2.", ".residual.3." },
        { ".conv2.", ".residual.6." }, { ".conv_shortcut.", ".shortcut." },
    };
    for (size_t i = 0; name && i < sizeof(map) / sizeof(map[0]); i++) {
        char * at = strstr(name, map[i][0]);
        if (at) {
            char * out = malloc(strlen(name) + 16);
            if (out) {
                sprintf(out, "%.*s%s%s", (int) (at - name), name, map[i][1], at + strlen(map[i][0]));
            }
            free(name);
            return out;
        }
    }
    return name;
}

// the canonical name of a file key, or NULL to ignore the key (encoder tensors and the like);
// `per_block`: Wan diffusers up-blocks hold this many entries of the original `upsamples` list
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
            if (strncmp(key, "decoder.up_blocks.", 18) != 0 || !isdigit((unsigned char) key[18])) {
                return NULL;
            }
            num = strtol(key + 18, (char **) &rest, 10);
            if (num > 100) {
                return NULL;
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
        default:
            return NULL;
    }
}

// Wan diffusers: entries of `upsamples` per up-block = resnets per block + the upsampler
static long model_wan_per_block(const struct vae_st_header * hdr) {
    long most = -1;
    for (int i = 0; i < hdr->n_tensors; i++) {
        const char * at = strstr(hdr->tensors[i].name, ".resnets.");
        if (strncmp(hdr->tensors[i].name, "decoder.up_blocks.", 18) == 0 && at) {
            const long j = strtol(at + 9, NULL, 10);
            most         = j > most ? j : most;
        }
    }
    return most + 2;
}

static bool model_load_weights(struct vae_model * m, const struct vae_st_header * hdr, enum model_naming naming,
                               char * err, size_t err_size) {
    const long per_block = naming == NAMING_WAN_DIFFUSERS ? model_wan_per_block(hdr) : 0;
    m->weights           = calloc((size_t) hdr->n_tensors, sizeof(*m->weights));
    if (!m->weights) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    for (int i = 0; i < hdr->n_tensors; i++) {
        const struct vae_st_tensor * t    = &hdr->tensors[i];
        char *                       name = model_canonical_name(t->name, naming, per_block);
        if (!name) {
            continue;
        }
        if (vae_model_weight(m, name)) {
            snprintf(err, err_size, "tensors '%s' and another both map to '%s'", t->name, name);
            free(name);
            return false;
        }
        struct vae_weight * w = &m->weights[m->n_weights++];
        w->name               = name;
        if (!vae_dtype_is_float(t->dtype)) {
            snprintf(err, err_size, "tensor '%s' is %s; decoder weights must be F32, F16 or BF16", t->name,
                     vae_dtype_name(t->dtype));
            return false;
        }
        w->n_dims = t->n_dims;
        memcpy(w->shape, t->shape, sizeof(w->shape));
        w->data = malloc(t->numel ? t->numel * sizeof(float) : 1);
        if (!w->data) {
            snprintf(err, err_size, "out of memory converting tensor '%s'", t->name);
            return false;
        }
        vae_dtype_to_f32(t->dtype, t->data, w->data, t->numel);
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

static bool model_wan_family(struct vae_model * m, enum vae_family want, char * err, size_t err_size) {
    const struct vae_weight * post = vae_model_weight(m, "conv2.weight");
    const struct vae_weight * in   = vae_model_weight(m, "decoder.conv1.weight");
    if (!in || in->n_dims != 5 || (post && (post->n_dims != 5 || post->shape[1] != in->shape[1]))) {
        snprintf(err, err_size, "Wan-style names but no 5-D 'decoder.conv1.weight' matching 'conv2.weight'");
        return false;
    }
    m->latent_channels = (int) in->shape[1];
    if (m->latent_channels != 16) {
        snprintf(err, err_size, "a Wan 2.1-style decoder with %d latent channels: only 16 (Wan 2.1) is known",
                 m->latent_channels);
        return false;
    }
    m->own_space         = VAE_SPACE_RAW;
    m->scale             = 8;
    m->frames_per_latent = 4;
    m->first_apart       = true;
    m->out_scale         = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset        = 0.5f;
    return model_check_family(m, VAE_FAMILY_WAN21, true, want, err, err_size);
}

// TAEHV: its MemBlocks convolve [x_t, x_t-1] stacked on channels; the canonical weight is the
// causal conv3d form [Cout, Cin, 2, k, k], tap 0 the previous frame and tap 1 the current one
static bool model_taehv_family(struct vae_model * m, enum vae_family want, char * err, size_t err_size) {
    const struct vae_weight * in  = vae_model_weight(m, "decoder.1.weight");
    const struct vae_weight * out = vae_model_weight(m, "decoder.22.weight");
    if (!in || !out || in->n_dims != 4 || out->n_dims != 4) {
        snprintf(err, err_size, "TAEHV-style names but no 4-D 'decoder.1.weight' and 'decoder.22.weight'");
        return false;
    }
    m->latent_channels = (int) in->shape[1];
    const int64_t rgb  = out->shape[0];
    if (!((m->latent_channels == 16 && rgb == 3) || (m->latent_channels == 48 && rgb == 12))) {
        snprintf(err, err_size,
                 "a TAEHV decoder with %d latent channels and %lld output channels: not a variant this build knows "
                 "(taew2_1: 16 and 3, taew2_2: 48 and 12)",
                 m->latent_channels, (long long) rgb);
        return false;
    }
    m->frames_per_latent = 1;
    for (int k = 7; k <= 19; k += 6) {
        char name[32];
        snprintf(name, sizeof(name), "decoder.%d.conv.weight", k);
        const struct vae_weight * w = vae_model_weight(m, name);
        if (!w || w->n_dims != 4 || w->shape[1] < 1 || w->shape[0] % w->shape[1] != 0 || w->shape[0] / w->shape[1] > 4) {
            snprintf(err, err_size, "TAEHV tensor '%s' is missing or is not a 1x1 TGrow of stride 1..4", name);
            return false;
        }
        m->frames_per_latent *= (int) (w->shape[0] / w->shape[1]);
    }
    for (int i = 0; i < m->n_weights; i++) {
        struct vae_weight * w = &m->weights[i];
        const char *        c = strstr(w->name, ".conv.0.weight");
        if (!c || c[14] != '\0' || w->n_dims != 4 || w->shape[1] % 2 != 0) {
            continue;
        }
        const int64_t cout = w->shape[0], cin = w->shape[1] / 2, kk = w->shape[2] * w->shape[3];
        float *       d    = malloc((size_t) (cout * cin * 2 * kk) * sizeof(float));
        if (!d) {
            snprintf(err, err_size, "out of memory");
            return false;
        }
        for (int64_t o = 0; o < cout; o++) {
            for (int64_t ci = 0; ci < cin; ci++) {
                for (int tap = 0; tap < 2; tap++) { // tap 0: channels [cin, 2 cin) = the past
                    memcpy(d + ((o * cin + ci) * 2 + tap) * kk, w->data + (o * 2 * cin + (tap ? 0 : cin) + ci) * kk,
                           (size_t) kk * sizeof(float));
                }
            }
        }
        free(w->data);
        w->data     = d;
        w->n_dims   = 5;
        w->shape[4] = w->shape[3];
        w->shape[3] = w->shape[2];
        w->shape[2] = 2;
        w->shape[1] = cin;
    }
    m->own_space   = VAE_SPACE_NORMALIZED;
    m->scale       = rgb == 12 ? 16 : 8;
    m->trim_frames = m->frames_per_latent - 1;
    m->out_scale   = 1.0f;
    m->out_offset  = 0.0f;
    // 16 channels: taew2_1, Hunyuan's taehv and lighttaew2_1 share shapes (their raw spaces differ)
    return model_check_family(m, rgb == 12 ? VAE_FAMILY_TAEW22 : VAE_FAMILY_TAEW21, rgb == 12, want, err, err_size);
}

struct vae_model * vae_model_load(const char * path, enum vae_family family, char * err, size_t err_size) {
    struct vae_st_file * file = vae_st_file_open(path, err, err_size);
    if (!file) {
        return NULL;
    }
    const struct vae_st_header * hdr    = file->hdr;
    struct vae_model *           m      = calloc(1, sizeof(*m));
    bool                         ok     = m != NULL;
    enum model_naming            naming = NAMING_NONE;
    const char *                 other  = model_other_family(hdr, 0, MODEL_LOOKALIKES);
    if (!ok) {
        snprintf(err, err_size, "out of memory");
    } else if (model_has(hdr, "taesd_decoder.1.weight")) {
        naming = NAMING_TAESD_COMFY;
    } else if (model_has(hdr, "decoder.layers.0.weight")) {
        naming = NAMING_TAESD_DIFFUSERS;
    } else if (model_has(hdr, "1.weight") && model_has(hdr, "3.conv.0.weight")) {
        naming = NAMING_TAESD;
    } else if (other) {
        naming = NAMING_NONE;
    } else if (model_has(hdr, "decoder.middle.0.residual.0.gamma")) {
        naming = NAMING_WAN;
    } else if (model_has(hdr, "decoder.mid_block.resnets.0.norm1.gamma")) {
        naming = NAMING_WAN_DIFFUSERS;
    } else if (model_has(hdr, "decoder.22.bias") && model_has(hdr, "decoder.1.weight")) {
        naming = NAMING_TAEHV;
    }
    if (ok && naming == NAMING_NONE) {
        ok    = false;
        other = other ? other : model_other_family(hdr, MODEL_LOOKALIKES, sizeof(model_other_families) /
                                                                               sizeof(model_other_families[0]));
        if (other) {
            snprintf(err, err_size,
                     "'%s' is %s, which this build cannot decode yet (it decodes the TAESD family, the Wan 2.1 VAE "
                     "and TAEHV)",
                     path, other);
        } else if (model_has(hdr, "0.weight") && model_has(hdr, "14.weight")) {
            snprintf(err, err_size, "'%s' is a TAESD encoder (keys 0.weight .. 14.weight), not a decoder", path);
        } else if (model_has_prefix(hdr, "taesd_encoder.")) {
            snprintf(err, err_size, "'%s' holds a TAESD encoder (taesd_encoder.*) but no decoder", path);
        } else if (model_has_prefix(hdr, "encoder.") && !model_has_prefix(hdr, "decoder.")) {
            snprintf(err, err_size, "'%s' holds an encoder (encoder.*) but no decoder", path);
        } else {
            snprintf(err, err_size,
                     "'%s' matches no decoder family: looked for TAESD keys ('1.weight' with '3.conv.0.weight', "
                     "'decoder.layers.0.weight', 'taesd_decoder.1.weight'), AutoencoderKL ('decoder.conv_in.weight'), "
                     "Wan ('decoder.middle.0.residual.0.gamma', 'decoder.mid_block.resnets.0.norm1.gamma') and TAEHV "
                     "('decoder.22.bias'); its %d tensors start with '%s'",
                     path, hdr->n_tensors, hdr->n_tensors ? hdr->tensors[0].name : "(none)");
        }
    }
    if (ok && family != VAE_FAMILY_AUTO && family >= VAE_FAMILY_COUNT) {
        snprintf(err, err_size, "unknown model family %d", (int) family);
        ok = false;
    }
    ok = ok && model_load_weights(m, hdr, naming, err, err_size);
    vae_st_file_close(file);
    if (ok && naming <= NAMING_TAESD_COMFY) {
        ok            = model_taesd_family(m, family, err, err_size);
        m->own_space  = VAE_SPACE_NORMALIZED;
        m->scale      = 8;
        m->out_scale  = 1.0f; // TAESD decodes to about [0, 1]
        m->out_offset = 0.0f;
    } else if (ok) {
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
        // build once to check that every tensor the graph needs is there with its shape
        struct vae_graph * g = vae_model_build_graph(m, 1, 1, 1, false, err, err_size);
        ok                   = g != NULL;
        vae_graph_free(g);
    }
    if (!ok) {
        vae_model_free(m);
        return NULL;
    }
    return m;
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
                                                       : "taew2_1, or Hunyuan's taehv with the same shapes",
                 space == VAE_SPACE_RAW ? "raw" : "normalized");
        return false;
    }
    float s = 0.0f, raw_shift = 0.0f;
    switch (model->family) {
        case VAE_FAMILY_TAESD:   s = 0.18215f; break;
        case VAE_FAMILY_TAESDXL: s = 0.13025f; break;
        case VAE_FAMILY_TAESD3:  s = 1.5305f, raw_shift = 0.0609f; break;
        case VAE_FAMILY_TAEF1:   s = 0.3611f, raw_shift = 0.1159f; break;
        case VAE_FAMILY_WAN21:   // normalized -> raw: x / (1 / std) + mean (MODELS.md B.4)
            for (int c = 0; c < z; c++) {
                div[c] = 1.0f / wan21_std[c];
                add[c] = wan21_mean[c];
            }
            return true;
        case VAE_FAMILY_TAEW21:  // raw -> normalized: (z - mean) / std
        case VAE_FAMILY_TAEW22:
            for (int c = 0; c < z; c++) {
                const float * mean = z == 16 ? wan21_mean : wan22_mean, * std = z == 16 ? wan21_std : wan22_std;
                div[c] = std[c];
                add[c] = -mean[c] / std[c];
            }
            return true;
        default:
            snprintf(err, err_size, "%s has no constants to convert %s latents: feed it %s latents",
                     vae_family_name(model->family), space == VAE_SPACE_RAW ? "raw" : "normalized",
                     model->own_space == VAE_SPACE_RAW ? "raw" : "the diffusion model's (normalized)");
            return false;
    }
    // TAESD decoders take the diffusion model's latents: (raw - shift) * scale
    for (int c = 0; c < z; c++) {
        div[c] = 1.0f / s;
        add[c] = -raw_shift * s;
    }
    return true;
}

int vae_model_frames_of_latent(const struct vae_model * model, uint64_t k) {
    return k == 0 ? 1 : model->frames_per_latent;
}

struct vae_graph * vae_model_build_graph(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                         size_t err_size) {
    switch (model->family) {
        case VAE_FAMILY_WAN21:  return vae_wan_build(model, n, h, w, first && model->first_apart, err, err_size);
        case VAE_FAMILY_TAEW21:
        case VAE_FAMILY_TAEW22: return vae_taehv_build(model, n, h, w, err, err_size);
        default:                return vae_taesd_build(model, n, h, w, err, err_size);
    }
}
