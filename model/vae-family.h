// What a decoder family's file (model/vae-<family>.c) gives the loader: one descriptor, a small
// table of slots after ggml's backend interfaces. A family is an architecture with its namings;
// it decodes one or more variants (values of model-family) that share them, and holds all that is
// known about them: how a file is recognised, its names mapped onto the canonical ones, the
// load-time fix-ups of its weights, its latent constants and its graph. vae-model.c lists the
// families in the order detection tries them; adding one is its file and a line of that table.

#pragma once

#include "vae-builder.h"
#include "vae-model.h"
#include "vae-safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

// one value of model-family
struct vae_variant {
    enum vae_family family;
    const char *    name;           // the property's nick: "taef2", "wan2.1", ...
    const char *    description;    // the property's description
    int             channels;       // latent channels in the decoder's own space
    bool            video;          // several frames per latent frame (or SVD's clips), not independent images
    // the constants between the decoder's own space and the other (vae_model_space_affine): the
    // diffusion model's x = (raw z - shift) * scale, or per channel x = (z - mean[c]) / std[c] (mean
    // and std: `channels` values each), or from the file (affine); none of those: no constants,
    // why_none (or NULL) the reason to name
    float           scale, shift;
    const float *   mean, * std;
    bool (*affine)(const struct vae_model * m, float * div, float * add, char * err, size_t err_size);
    const char *    why_none;
    int             patch;          // normalized latents: the side of the square patch a latent pixel stands for (0: 1)
    const char *    same_shapes;    // the variants a file of its shapes may be, for a file that cannot tell
};

// how a file names a family's tensors
struct vae_naming {
    int          kind;              // the family's own: which of its namings
    const char * prefix;            // what the decoder's keys start with ("", or a checkpoint's "first_stage_model.")
    long         levels;            // counts recognise read from the keys, where the names need them:
    long         per_level;         //   the decoder's up levels, and the entries of one in a flat list
};

struct vae_family_desc {
    const char *               name;        // in messages: "TAESD", "AutoencoderKL", ...
    const char *               keys;        // what recognise looks for, listed when no family takes a file
    const char *               style;       // NULL, or what a refused model-family's message calls the file:
                                            //   "AutoencoderKL" gives "a sd3-style AutoencoderKL decoder"
    const struct vae_variant * variants;
    int                        n_variants;
    // whether hdr holds this family's decoder: 1 with naming filled in, 0 not, -1 refused (err says why)
    int (*recognise)(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size);
    // the canonical (original upstream) name of a file key, its prefix stripped; NULL: not the decoder's
    char * (*canonical_name)(const char * key, const struct vae_naming * naming);
    // with the weights loaded under canonical names: the variant (m->family and family_certain; the
    // one `want` names where the file's shapes allow, else the file's: the loader refuses a
    // mismatch), the load-time fix-ups, and the model's constants (latent_channels, scale, ...)
    bool (*prepare)(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                    size_t err_size);
    // the decode graph (vae_model_build_graph's contract); NULL: causal's chain of its steps
    struct vae_graph * (*build)(const struct vae_model * m, int n, int h, int w, bool first, char * err,
                                size_t err_size);
    // NULL, or a causal video decoder's pieces: its graphs, whole and tiled, chain them
    const struct vae_causal_family * causal;
};

extern const struct vae_family_desc vae_taesd_family, vae_wan_family, vae_seedvr_family, vae_taehv_family,
    vae_dcae_family, vae_svd_family, vae_kl_family, vae_hyv15_family, vae_ltx2_family, vae_minimax_family;

// Wan 2.1's and Wan 2.2's latent statistics (vae-wan.c; the TAEHV decoders of their latents share them)
extern const float vae_wan21_mean[16], vae_wan21_std[16], vae_wan22_mean[48], vae_wan22_std[48];

// the variant of d that family names; NULL where it is not one of d's
static inline const struct vae_variant * vae_family_variant(const struct vae_family_desc * d, enum vae_family family) {
    for (int i = 0; i < d->n_variants; i++) {
        if (d->variants[i].family == family) {
            return &d->variants[i];
        }
    }
    return NULL;
}

#define VAE_VARIANTS(v) (v), (int) (sizeof(v) / sizeof((v)[0]))

#ifdef __cplusplus
}
#endif
