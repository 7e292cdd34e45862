// The weight store of a loaded model: a file's tensors under canonical names, their f32 data
// made when a graph first takes it, straight from the file mapping where the bytes already are
// aligned f32, so tensors no graph uses are never converted (a checkpoint may hold gigabytes of
// them); a weight may also be made from several tensors, reordered rows or causal taps (the
// families' load-time fix-ups, vae_weight). Beside it, the tools the families' name maps share.
// A file whose shapes or numbers are absurd is refused naming the tensor.

#include "vae-weights.h"
#include "vae-family.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int weights_cmp(const void * a, const void * b) {
    return strcmp(((const struct vae_weight *) a)->name, ((const struct vae_weight *) b)->name);
}

const struct vae_weight * vae_model_weight(const struct vae_model * model, const char * name) {
    const struct vae_weight key = { .name = (char *) name };
    return bsearch(&key, model->weights, (size_t) model->n_weights, sizeof(key), weights_cmp);
}

// "[d0, d1, ...]" into buf
void vae_weights_format_shape(char * buf, size_t size, int n_dims, const int64_t * shape) {
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
static bool weights_check_finite(const struct vae_st_tensor * t, const float * d, size_t n, char * err, size_t err_size) {
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
static void weights_taps_to_f32(const struct vae_weight * w, const struct vae_st_tensor * t, float * d) {
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
static void weights_taps_interleaved_to_f32(const struct vae_weight * w, const struct vae_st_tensor * t, float * d) {
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
static size_t weights_numel(const struct vae_weight * w) {
    size_t n = 1;
    for (int i = 0; i < w->n_dims; i++) {
        n *= (size_t) w->shape[i];
    }
    return n;
}

// w's data picked by rows (see vae_weight.rows) from its file tensor, or from the identity
static bool weights_rows_make(struct vae_weight * w, char * err, size_t err_size) {
    const size_t n = weights_numel(w), size = n / (size_t) w->shape[0];
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
    if (t && !weights_check_finite(t, d, n, err, err_size)) {
        free(d);
        return false;
    }
    w->copy = d;
    w->data = d;
    return true;
}

// w's rows reordered when its data is made (vae_weight.rows): row k of n is the file's row from(k, n)
bool vae_weights_reorder_rows(struct vae_weight * w, int32_t (*from)(int32_t k, int32_t n), char * err,
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

bool vae_weights_set_rows(struct vae_weight * w, const int32_t * from, char * err, size_t err_size) {
    if (!(w->rows = malloc((size_t) w->shape[0] * sizeof(*w->rows)))) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    memcpy(w->rows, from, (size_t) w->shape[0] * sizeof(*w->rows));
    return true;
}

// w's data: the file's bytes in place where they are aligned little-endian f32 and need no
// rearranging, else a converted copy
static bool weights_convert(struct vae_weight * w, char * err, size_t err_size) {
    const struct vae_st_tensor * t = w->src[0];
    if (w->rows) {
        return weights_rows_make(w, err, err_size);
    }
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (w->n_src == 1 && !w->taps && !w->taps_interleaved && !w->mix && !w->affine && t->dtype == VAE_DTYPE_F32 &&
        (uintptr_t) t->data % sizeof(float) == 0) {
        if (!weights_check_finite(t, (const float *) (const void *) t->data, (size_t) t->numel, err, err_size)) {
            return false;
        }
        w->data = (const float *) (const void *) t->data;
        return true;
    }
#endif
    uint64_t n = w->taps_interleaved ? weights_numel(w) : 0; // (twice its tensor)
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
            weights_taps_interleaved_to_f32(w, s, at);
        } else if (w->taps) {
            weights_taps_to_f32(w, s, at);
        } else {
            vae_dtype_to_f32(s->dtype, s->data, at, (size_t) s->numel);
        }
        const size_t made = w->taps_interleaved ? (size_t) n : (size_t) s->numel;
        if (!weights_check_finite(s, at, made, err, err_size)) {
            free(d);
            return false;
        }
        at += made;
    }
    if (w->mix) { // (a one-value tensor: the loader checked)
        float m;
        vae_dtype_to_f32(w->mix->dtype, w->mix->data, &m, 1);
        if (!weights_check_finite(w->mix, &m, 1, err, err_size)) {
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

// the same, then the rows' affine map (a copy, never the file's bytes: see weights_convert)
static bool weights_make(struct vae_weight * w, char * err, size_t err_size) {
    if (!weights_convert(w, err, err_size)) {
        return false;
    }
    const size_t size = weights_numel(w) / (size_t) w->shape[0];
    for (int64_t k = 0; w->affine && k < w->shape[0]; k++) {
        for (size_t i = 0; i < size; i++) {
            w->copy[(size_t) k * size + i] = w->copy[(size_t) k * size + i] * w->affine[k] + w->affine[w->shape[0] + k];
        }
    }
    return true;
}

const float * vae_model_weight_data(const struct vae_model * model, const struct vae_weight * w, char * err,
                                    size_t err_size) {
    // the model owns its weights (and its lock); making data is the one change a const model sees
    struct vae_model * m = (struct vae_model *) model;
    pthread_mutex_lock(&m->lock);
    const bool ok = w->data || weights_make((struct vae_weight *) w, err, err_size);
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
        n += m->weights[i].copy ? weights_numel(&m->weights[i]) * sizeof(float) : 0;
    }
    pthread_mutex_unlock(&m->lock);
    return n;
}

int vae_model_dim(const struct vae_model * model, const char * name, const char * suffix, int d) {
    char n[160];
    snprintf(n, sizeof(n), "%s%s", name, suffix);
    const struct vae_weight * w = vae_model_weight(model, n);
    return w && d < w->n_dims ? (int) w->shape[d] : 0;
}

bool vae_name_has_prefix(const struct vae_st_header * hdr, const char * prefix) {
    for (int i = 0; i < hdr->n_tensors; i++) {
        if (strncmp(hdr->tensors[i].name, prefix, strlen(prefix)) == 0) {
            return true;
        }
    }
    return false;
}

// the block number s starts with: -1 when s does not start with a digit, VAE_NAME_MAX_INDEX + 1 for
// any number above VAE_NAME_MAX_INDEX (so that no arithmetic on it can overflow)
long vae_name_index(const char * s, const char ** end) {
    if (!isdigit((unsigned char) *s)) {
        return -1;
    }
    long n = 0;
    for (; isdigit((unsigned char) *s); s++) {
        n = n > VAE_NAME_MAX_INDEX ? n : 10 * n + (*s - '0');
    }
    *end = s;
    return n > VAE_NAME_MAX_INDEX ? VAE_NAME_MAX_INDEX + 1 : n;
}

// `prefix` + the number `key` starts with (after `head`) + what follows, or NULL
char * vae_name_renumber(const char * key, const char * head, const char * prefix, long add, long mul, long * num,
                         const char ** rest) {
    const size_t n = strlen(head);
    const char * end;
    if (strncmp(key, head, n) != 0 || (*num = vae_name_index(key + n, &end)) < 0 || *end != '.' ||
        *num > VAE_NAME_MAX_INDEX) {
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
char * vae_name_replace(char * key, const char * from, const char * to) {
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

char * vae_name_swap_head(const char * key, const char * from, const char * to) {
    const size_t n = strlen(from);
    if (strncmp(key, from, n) != 0) {
        return NULL;
    }
    char * out = malloc(strlen(to) + strlen(key + n) + 1);
    if (out) {
        sprintf(out, "%s%s", to, key + n);
    }
    return out;
}

// the largest block number that follows `mark` in the names starting with `head` (-1: none);
// -2 after a message naming a tensor whose number is out of range
long vae_name_most_index(const struct vae_st_header * hdr, const char * head, const char * mark, char * err,
                         size_t err_size) {
    long most = -1;
    for (int i = 0; i < hdr->n_tensors; i++) {
        const char * name = hdr->tensors[i].name;
        const char * at   = strncmp(name, head, strlen(head)) == 0 ? strstr(name + strlen(head) - 1, mark) : NULL;
        const char * end;
        const long   j = at ? vae_name_index(at + strlen(mark), &end) : -1;
        if (j > VAE_NAME_MAX_INDEX) {
            snprintf(err, err_size, "tensor '%s': block number out of range (at most %d)", name, VAE_NAME_MAX_INDEX);
            return -2;
        }
        most = j > most ? j : most;
    }
    return most;
}

// a decoder weight has real dimensions: none is 0 (an empty tensor, whose other dimensions the
// format leaves unbounded) and none is above INT32_MAX, so every dimension is bounded by the
// tensor's bytes in the file and every loop over one by the data's real size
static bool weights_check_dims(const struct vae_st_tensor * t, char * err, size_t err_size) {
    for (int pass = 0; pass < 2; pass++) { // a zero anywhere is the cause to name first
        for (int i = 0; i < t->n_dims; i++) {
            if (pass == 0 ? t->shape[i] == 0 : t->shape[i] > INT32_MAX) {
                char shape[160];
                vae_weights_format_shape(shape, sizeof(shape), t->n_dims, t->shape);
                snprintf(err, err_size, "tensor '%s' has shape %s: dimension %d is %s", t->name, shape, i,
                         pass == 0 ? "0 (a decoder weight is never empty)" : "above 2147483647");
                return false;
            }
        }
    }
    return true;
}

bool vae_weights_load(struct vae_model * m, const struct vae_st_header * hdr, const char * prefix,
                      char * (*canonical)(const char * key, const struct vae_naming * naming),
                      const struct vae_naming * naming, char * err, size_t err_size) {
    const size_t skip = strlen(prefix);
    m->weights        = calloc((size_t) hdr->n_tensors, sizeof(*m->weights));
    if (!m->weights) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    for (int i = 0; i < hdr->n_tensors; i++) {
        const struct vae_st_tensor * t    = &hdr->tensors[i];
        char *                       name = strncmp(t->name, prefix, skip) == 0 ? canonical(t->name + skip, naming) : NULL;
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
        if (!weights_check_dims(t, err, err_size)) {
            return false;
        }
    }
    qsort(m->weights, (size_t) m->n_weights, sizeof(*m->weights), weights_cmp);
    for (int i = 1; i < m->n_weights; i++) {
        if (strcmp(m->weights[i - 1].name, m->weights[i].name) == 0) {
            snprintf(err, err_size, "tensors '%s' and '%s' both map to '%s'", m->weights[i - 1].src[0]->name,
                     m->weights[i].src[0]->name, m->weights[i].name);
            return false;
        }
    }
    return true;
}

// a new weight `name` of shape made from the file's tensors src (joined along dimension 0); the
// weights move (and stay sorted)
bool vae_weights_add(struct vae_model * m, const char * name, int n_dims, const int64_t * shape,
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
    qsort(m->weights, (size_t) m->n_weights, sizeof(*m->weights), weights_cmp);
    return true;
}

bool vae_weights_drop_time_axis(struct vae_model * m, const char * family, char * err, size_t err_size) {
    for (int i = 0; i < m->n_weights; i++) {
        struct vae_weight * w = &m->weights[i];
        if (w->n_dims != 5) {
            continue;
        }
        if (w->shape[2] != 1) {
            snprintf(err, err_size, "%s: tensor '%s' has a time axis of %lld, not 1 (a 2-D decoder's conv)", family,
                     w->src[0]->name, (long long) w->shape[2]);
            return false;
        }
        w->n_dims   = 4;
        w->shape[2] = w->shape[3];
        w->shape[3] = w->shape[4];
    }
    return true;
}

int32_t * vae_weights_add_rows(struct vae_model * m, const char * name, int64_t n, int64_t cin,
                               const struct vae_st_tensor * src, char * err, size_t err_size) {
    if (vae_model_weight(m, name)) {
        snprintf(err, err_size, "tensor '%s' is not part of a %s decoder (the loader makes that weight)", name,
                 m->desc->name);
        return NULL;
    }
    int32_t * rows = malloc((size_t) n * sizeof(*rows));
    if (!rows || !vae_weights_add(m, name, 4, (const int64_t[]) { n, cin, 1, 1 }, &src, src != NULL)) {
        free(rows);
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    ((struct vae_weight *) vae_model_weight(m, name))->rows = rows;
    return rows;
}

// the mid block's attention `at` (C channels, those of `decoder.conv_in.weight`, or of a causal
// conv_in's `.conv.weight`): q, k, v and the output projection (parts, in that order) as
// [C, C, 1, 1] (diffusers stores [C, C], HunyuanVideo 1.5 [C, C, 1, 1, 1]); q, k and v joined into
// one conv `<at>.<qkv>` [3C, C, 1, 1]
bool vae_weights_join_attention(struct vae_model * m, const char * family, const char * at, const char * const * parts,
                                 const char * qkv, char * err, size_t err_size) {
    const struct vae_weight *    in0 = vae_model_weight(m, "decoder.conv_in.weight");
    const struct vae_weight *    in  = in0 ? in0 : vae_model_weight(m, "decoder.conv_in.conv.weight");
    const int64_t                c  = in->shape[0];
    const struct vae_st_tensor * w[3], * b[3];
    for (int i = 0; i < 4; i++) {
        char name[96];
        snprintf(name, sizeof(name), "%s.%s.weight", at, parts[i]);
        struct vae_weight * wt = (struct vae_weight *) vae_model_weight(m, name);
        snprintf(name, sizeof(name), "%s.%s.bias", at, parts[i]);
        const struct vae_weight * bt = vae_model_weight(m, name);
        const bool is2d = wt && wt->n_dims == 2,
                   is4d = wt && (wt->n_dims == 4 || (wt->n_dims == 5 && wt->shape[4] == 1)) && wt->shape[2] == 1 &&
                          wt->shape[3] == 1;
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
    if (!vae_weights_add(m, wname, 4, (const int64_t[]) { 3 * c, c, 1, 1 }, w, 3) ||
        !vae_weights_add(m, bname, 1, (const int64_t[]) { 3 * c }, b, 3)) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    return true;
}

// whether the file tensor t feeds a weight that g uses (as one of its sources, or its blend)
static bool weights_feed(const struct vae_model * m, const struct vae_graph * g, const struct vae_st_tensor * t) {
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
bool vae_weights_check_used(const struct vae_model * m, const struct vae_graph * g, char * err, size_t err_size) {
    for (int i = 0; i < m->n_weights; i++) {
        const struct vae_weight * w = &m->weights[i];
        if (w->n_src > 0 && !w->aux && !weights_feed(m, g, w->src[0])) {
            snprintf(err, err_size,
                     "tensor '%s' is not part of the %s decoder as this build knows it: the file holds a decoder it "
                     "cannot decode exactly (refused rather than ignored)",
                     w->src[0]->name, m->variant->name);
            return false;
        }
    }
    return true;
}

