// Loading a decoder file: the families in the order detection tries them, each recognising its
// files from key names and shapes (MODELS.md §D) and mapping its naming onto the canonical one its
// builder uses (vae-family.h); what every family shares: the weights loaded under those names,
// the model-family the user named checked against the file's, the latent constants, and a file no
// family takes refused with a message that says what was looked for and what was found, so a user
// who picked the wrong file learns which one it was. Calls go one way: here -> the families ->
// the builders -> the weight store (vae-weights.c).

#include "vae-family.h"
#include "vae-pth.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// the families in detection order: the first whose recognise takes a file loads it (DC-AE, and
// SVD that extends it, before the AutoencoderKL whose `decoder.conv_in.weight` they share)
static const struct vae_family_desc * const model_families[] = {
    &vae_taesd_family, &vae_hyv15_family, &vae_ltx2_family, &vae_minimax_family, &vae_wan_family, &vae_seedvr_family,
    &vae_taehv_family, &vae_dcae_family,  &vae_svd_family,     &vae_kl_family,
};

#define MODEL_N_FAMILIES (int) (sizeof(model_families) / sizeof(model_families[0]))

// the variant of a model-family value; NULL for AUTO and unknown values
static const struct vae_variant * model_variant(enum vae_family family) {
    const struct vae_variant * v = NULL;
    for (int i = 0; i < MODEL_N_FAMILIES && !v; i++) {
        v = vae_family_variant(model_families[i], family);
    }
    return v;
}

const char * vae_family_name(enum vae_family family) {
    const struct vae_variant * v = model_variant(family);
    return family == VAE_FAMILY_AUTO ? "auto" : v ? v->name : "?";
}

const char * vae_family_description(enum vae_family family) {
    const struct vae_variant * v = model_variant(family);
    return family == VAE_FAMILY_AUTO ? "Detect from the file's keys and shapes" : v ? v->description : "?";
}

enum vae_family vae_family_from_name(const char * name) {
    for (int i = 0; i < VAE_FAMILY_COUNT; i++) {
        if (strcmp(name, vae_family_name((enum vae_family) i)) == 0) {
            return (enum vae_family) i;
        }
    }
    return VAE_FAMILY_COUNT;
}

int vae_family_latent_channels(enum vae_family family) {
    const struct vae_variant * v = model_variant(family);
    return v ? v->channels : 0;
}

bool vae_family_is_video(enum vae_family family) {
    const struct vae_variant * v = model_variant(family);
    return v && v->video;
}

void vae_model_free(struct vae_model * model) {
    if (!model) {
        return;
    }
    for (int i = 0; i < model->n_weights; i++) {
        free(model->weights[i].name);
        free(model->weights[i].copy);
        free(model->weights[i].rows);
        free(model->weights[i].affine);
    }
    free(model->weights);
    vae_st_file_close(model->file);
    pthread_mutex_destroy(&model->lock);
    free(model);
}

// the family that recognises hdr (NULL: none, err says what was looked for, or why it was refused)
static const struct vae_family_desc * model_recognise(const struct vae_st_header * hdr, const char * path,
                                                      struct vae_naming * naming, char * err, size_t err_size) {
    for (int i = 0; i < MODEL_N_FAMILIES; i++) {
        *naming     = (struct vae_naming) { .prefix = "" };
        const int r = model_families[i]->recognise(hdr, naming, err, err_size);
        if (r != 0) {
            return r > 0 ? model_families[i] : NULL;
        }
    }
    if (vae_st_header_find(hdr, "0.weight") && vae_st_header_find(hdr, "14.weight")) {
        snprintf(err, err_size, "'%s' is a TAESD encoder (keys 0.weight .. 14.weight), not a decoder", path);
    } else if (vae_name_has_prefix(hdr, "taesd_encoder.")) {
        snprintf(err, err_size, "'%s' holds a TAESD encoder (taesd_encoder.*) but no decoder", path);
    } else if (vae_name_has_prefix(hdr, "encoder.") && !vae_name_has_prefix(hdr, "decoder.")) {
        snprintf(err, err_size, "'%s' holds an encoder (encoder.*) but no decoder", path);
    } else {
        size_t at = (size_t) snprintf(err, err_size, "'%s' matches no decoder family: looked for", path);
        for (int i = 0; i < MODEL_N_FAMILIES && at < err_size; i++) {
            at += (size_t) snprintf(err + at, err_size - at, "%s %s (%s)", i == 0 ? "" : i + 1 < MODEL_N_FAMILIES ? ";" : "; and",
                                    model_families[i]->name, model_families[i]->keys);
        }
        if (at < err_size) {
            snprintf(err + at, err_size - at, "; its %d tensors start with '%s'", hdr->n_tensors,
                     hdr->n_tensors ? hdr->tensors[0].name : "(none)");
        }
    }
    return NULL;
}

// the family of m's file (recognised as desc) checked against the one the user named
static bool model_check_family(const struct vae_model * m, enum vae_family want, char * err, size_t err_size) {
    if (want == VAE_FAMILY_AUTO || want == m->family) {
        return true;
    }
    if (m->desc->style) {
        snprintf(err, err_size, "model-family %s was asked for, but the file holds a %s-style %s decoder (%d latent "
                 "channels)", vae_family_name(want), vae_family_name(m->family), m->desc->style, m->latent_channels);
    } else {
        snprintf(err, err_size, "model-family %s was asked for, but the file holds a %s decoder (%d latent channels)",
                 vae_family_name(want), vae_family_name(m->family), m->latent_channels);
    }
    return false;
}

struct vae_model * vae_model_load(const char * path, enum vae_family family, char * err, size_t err_size) {
    if (family >= VAE_FAMILY_COUNT) {
        snprintf(err, err_size, "unknown model family %d", (int) family);
        return NULL;
    }
    struct vae_st_file * file = vae_weights_file_open(path, err, err_size);
    if (!file) {
        return NULL;
    }
    struct vae_model * m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, err_size, "out of memory");
        vae_st_file_close(file);
        return NULL;
    }
    m->file = file;
    pthread_mutex_init(&m->lock, NULL);
    struct vae_naming naming;
    m->desc = model_recognise(file->hdr, path, &naming, err, err_size);
    bool ok = m->desc && vae_weights_load(m, file->hdr, naming.prefix, m->desc->canonical_name, &naming, err, err_size) &&
              m->desc->prepare(m, file->hdr, family, err, err_size) && model_check_family(m, family, err, err_size);
    if (ok) {
        m->variant        = vae_family_variant(m->desc, m->family);
        m->family_certain = m->family_certain || family != VAE_FAMILY_AUTO;
        if (m->frames_per_latent == 0) {
            m->frames_per_latent = 1;
        }
        if (m->out_channels == 0) {
            m->out_channels = 3;
        }
        snprintf(m->description, sizeof(m->description), "%s%s decoder, %d latent channels, %d tensors",
                 vae_family_name(m->family), m->family_certain ? "" : " (or a family with the same shapes)",
                 m->latent_channels, m->n_weights);
        // build once to check that every tensor the graph needs is there with its shape, and finite
        // (this makes the data of every weight a graph uses), and that the graph uses every one; a
        // chunked decoder's graph is of a chunk
        struct vae_graph * g = vae_model_build_graph(m, m->chunk_latents ? m->chunk_latents + m->chunk_overlap : 1, 1, 1,
                                                     false, err, err_size);
        ok                   = g != NULL && vae_weights_check_used(m, g, err, err_size);
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
    return space == VAE_SPACE_NORMALIZED && model->variant->patch > 1 ? model->variant->patch : 1;
}

bool vae_model_space_affine(const struct vae_model * model, enum vae_space space, float * div, float * add,
                            char * err, size_t err_size) {
    const struct vae_variant * v = model->variant;
    const int                  z = model->latent_channels;
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
                 z, v->name, v->same_shapes ? v->same_shapes : "?", space == VAE_SPACE_RAW ? "raw" : "normalized");
        return false;
    }
    if (v->affine) {
        return v->affine(model, div, add, err, err_size);
    }
    if (!v->scale && !v->mean) {
        if (v->why_none) {
            snprintf(err, err_size, "%s has no constants to convert raw latents (%s): feed it the diffusion model's "
                     "(normalized) latents", v->name, v->why_none);
        } else {
            snprintf(err, err_size, "%s has no constants to convert %s latents: feed it %s latents", v->name,
                     space == VAE_SPACE_RAW ? "raw" : "normalized",
                     model->own_space == VAE_SPACE_RAW ? "raw" : "the diffusion model's (normalized)");
        }
        return false;
    }
    // the diffusion model's x = (raw z - shift) * scale, or (z - mean) / std: z = x / div + add
    // takes x to a raw decoder's z, and z to a normalizing one's x with the inverse
    const bool to_raw = model->own_space == VAE_SPACE_RAW;
    for (int c = 0; c < z; c++) {
        const float s = v->mean ? 1.0f / v->std[c] : v->scale, shift = v->mean ? v->mean[c] : v->shift;
        div[c]        = to_raw ? s : 1.0f / s;
        add[c]        = to_raw ? shift : -shift * s;
    }
    return true;
}

uint64_t vae_model_stream_frames(const struct vae_model * model, uint64_t n) {
    if (!model->chunk_latents) {
        return n ? 1 + (uint64_t) model->frames_per_latent * (n - 1) : 0;
    }
    // upstream's decode (MODELS.md J.3): n + c - o latent frames padded to whole chunks of c, the
    // first chunk with nothing to fade from; each chunk keeps c F - pre frames, the last its held
    // ones too; then the frames of the padding cut, F per latent frame, `tail` for one that ends an
    // encoder clip (its (c F - pre) % F frames)
    const uint64_t c = (uint64_t) model->chunk_latents, o = (uint64_t) model->chunk_overlap;
    const uint64_t F = (uint64_t) model->frames_per_latent, hold = (uint64_t) model->chunk_hold;
    const uint64_t kept = c * F - (o * F - hold), tail = kept % F;
    const uint64_t tokens = n + c - o, pad = (c - tokens % c) % c, chunks = (tokens + pad) / c - 1;
    if (chunks == 0) {
        return 0;
    }
    uint64_t cut = 0;
    for (uint64_t k = 0; k < pad; k++) {
        cut += tail && (n + k) % c == 0 ? tail : F;
    }
    return kept * chunks + hold - cut;
}

int vae_model_frames_of_latent(const struct vae_model * model, uint64_t k) {
    if (model->chunk_latents) {
        return (int) (vae_model_stream_frames(model, k + 1) - vae_model_stream_frames(model, k));
    }
    return k == 0 ? 1 : model->frames_per_latent;
}

struct vae_graph * vae_model_build_graph(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                         size_t err_size) {
    const struct vae_family_desc * d = model->desc;
    return d->build ? d->build(model, n, h, w, first, err, err_size)
                    : vae_causal_build(d->causal, model, n, h, w, first && model->first_apart, err, err_size);
}

int vae_model_causal_steps(const struct vae_model * model, struct vae_causal_step * steps, int max) {
    return model->desc->causal ? model->desc->causal->steps(model, steps, max) : 0;
}

bool vae_model_causal_headless(const struct vae_model * model) {
    return model->desc->causal && !model->desc->causal->head;
}

// (only for a family with steps: vae_tiled_video_new asks for those first)
struct vae_graph * vae_model_causal_head_build(const struct vae_model * model, int h, int w, char * err,
                                               size_t err_size) {
    return vae_causal_head_build(model->desc->causal, model, h, w, err, err_size);
}

struct vae_graph * vae_model_causal_step_build(const struct vae_model * model, const struct vae_causal_step * s,
                                               int h, int w, bool first, char * err, size_t err_size) {
    return vae_causal_step_build(model->desc->causal, model, s, h, w, first, err, err_size);
}
