// Graph builder for the TAESD family of tiny decoders (taesd, taesdxl, taesd3, taef1, taef2),
// after madebyollin/taesd's `Decoder` (MODELS.md §C.1, §C.2): a tanh clamp, a conv, three
// groups of residual blocks each followed by nearest 2x + conv, a last block and an RGB conv.
// TAEF2's first three blocks add a `pool` branch with a GroupNorm over the whole frame.
// Widths come from the weights, so reduced-width files build too. Weight names are upstream's
// original `nn.Sequential` indices (`1.weight`, `3.conv.0.weight`, ...); diffusers'
// (`decoder.layers.K-1.*`) and ComfyUI's (`taesd_decoder.` + original) map onto them. The five
// variants tell apart by their latent channels and TAEF2's pool branch, except taesd/taesdxl and
// taesd3/taef1, which share every shape: their latent constants differ.

#include "vae-family.h"
#include "vae-weights.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define TAESD_POOL_GROUPS 4      // GroupNorm(4, ...) in the pool branch
#define TAESD_POOL_EPS    1e-5f

// Block(n, n): [TAEF2: x = x + pool(x)]; ReLU(conv(x) + x)
static struct vae_tensor * taesd_block(struct vae_builder * b, struct vae_tensor * x, int k, bool pool) {
    char name[32];
    if (pool && !b->failed) {
        // x + W2 ReLU(GN(W1 x))                                       [N, C, H, W]
        snprintf(name, sizeof(name), "%d.pool.0", k);
        struct vae_tensor * p = vae_builder_conv2d(b, x, name, 1, false, NULL, VAE_ACT_NONE, false); // [N, P, H, W]
        if (p) {
            const int64_t       pshape[1] = { p->ne[1] };
            struct vae_tensor * gamma     = vae_builder_weight(b, 1, pshape, "%d.pool.1.weight", k);
            struct vae_tensor * beta      = vae_builder_weight(b, 1, pshape, "%d.pool.1.bias", k);
            if (gamma && beta && p->ne[1] % TAESD_POOL_GROUPS != 0) {
                vae_builder_fail(b, "tensor '%d.pool.0.weight' has %lld outputs, not a multiple of %d groups", k,
                                 (long long) p->ne[1], TAESD_POOL_GROUPS);
            }
            if (!b->failed) {
                p = vae_graph_group_norm(b->g, p, TAESD_POOL_GROUPS, TAESD_POOL_EPS, gamma, beta, VAE_ACT_RELU);
            }
        }
        snprintf(name, sizeof(name), "%d.pool.3", k);
        x = p ? vae_builder_conv2d(b, p, name, 1, false, x, VAE_ACT_NONE, false) : NULL; // [N, C, H, W]
    }
    if (b->failed) {
        return NULL;
    }
    snprintf(name, sizeof(name), "%d.conv.0", k);
    struct vae_tensor * t = vae_builder_conv2d(b, x, name, 3, true, NULL, VAE_ACT_RELU, false);
    snprintf(name, sizeof(name), "%d.conv.2", k);
    t = t ? vae_builder_conv2d(b, t, name, 3, true, NULL, VAE_ACT_RELU, false) : NULL;
    snprintf(name, sizeof(name), "%d.conv.4", k);
    return t ? vae_builder_conv2d(b, t, name, 3, true, x, VAE_ACT_RELU, false) : NULL; // [N, C, H, W]
}

static struct vae_graph * taesd_build(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                      size_t err_size) {
    (void) first;
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    const bool pool = model->family == VAE_FAMILY_TAEF2;

    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, z, h, w]
    x = vae_graph_tanh_clamp(b.g, x, 3.0f);
    x = vae_builder_conv2d(&b, x, "1", 3, true, NULL, VAE_ACT_RELU, false);            // [N, 64, h, w]
    for (int k = 3; k <= 5 && x; k++) {
        x = taesd_block(&b, x, k, pool);
    }
    x = x ? vae_builder_conv2d(&b, x, "7", 3, false, NULL, VAE_ACT_NONE, true) : NULL;  // [N, 64, 2h, 2w]
    for (int k = 8; k <= 10 && x; k++) {
        x = taesd_block(&b, x, k, false);
    }
    x = x ? vae_builder_conv2d(&b, x, "12", 3, false, NULL, VAE_ACT_NONE, true) : NULL; // [N, 64, 4h, 4w]
    for (int k = 13; k <= 15 && x; k++) {
        x = taesd_block(&b, x, k, false);
    }
    x = x ? vae_builder_conv2d(&b, x, "17", 3, false, NULL, VAE_ACT_NONE, true) : NULL; // [N, 64, 8h, 8w]
    x = x ? taesd_block(&b, x, 18, false) : NULL;
    x = x ? vae_builder_conv2d(&b, x, "19", 3, true, NULL, VAE_ACT_NONE, false) : NULL; // [N, 3, 8h, 8w]
    if (x && x->ne[1] != 3) {
        x = vae_builder_fail(&b, "tensor '19.weight' gives %lld output channels, not 3 (RGB)", (long long) x->ne[1]);
    }
    return vae_builder_finish(&b, x);
}

enum taesd_naming {
    TAESD_NAMING_ORIG,      // `1.weight`, `3.conv.0.weight`, ...
    TAESD_NAMING_DIFFUSERS, // `decoder.layers.K-1.*`
    TAESD_NAMING_COMFY,     // `taesd_decoder.` + original
};

static int taesd_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    (void) err, (void) err_size;
    if (vae_st_header_find(hdr, "taesd_decoder.1.weight")) {
        naming->kind = TAESD_NAMING_COMFY;
    } else if (vae_st_header_find(hdr, "decoder.layers.0.weight")) {
        naming->kind = TAESD_NAMING_DIFFUSERS;
    } else if (vae_st_header_find(hdr, "1.weight") && vae_st_header_find(hdr, "3.conv.0.weight")) {
        naming->kind = TAESD_NAMING_ORIG;
    } else {
        return 0;
    }
    return 1;
}

static char * taesd_canonical_name(const char * key, const struct vae_naming * naming) {
    long         num;
    const char * rest;
    switch (naming->kind) {
        case TAESD_NAMING_COMFY:
            return strncmp(key, "taesd_decoder.", 14) == 0 && isdigit((unsigned char) key[14]) ? strdup(key + 14) : NULL;
        case TAESD_NAMING_DIFFUSERS: return vae_name_renumber(key, "decoder.layers.", "", 1, 1, &num, &rest);
        default:                     return isdigit((unsigned char) key[0]) ? strdup(key) : NULL;
    }
}

// the variant from the widths, or the one the user named checked against them
static bool taesd_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                          size_t err_size) {
    (void) hdr;
    const struct vae_weight * first = vae_model_weight(m, "1.weight");
    if (!first || first->n_dims != 4) {
        snprintf(err, err_size, "TAESD-style names but no 4-D '1.weight' (the first decoder conv)");
        return false;
    }
    const int  z    = (int) first->shape[1];
    const bool pool = vae_model_weight(m, "3.pool.0.weight") != NULL;
    m->latent_channels = z;
    m->own_space       = VAE_SPACE_NORMALIZED;
    m->scale           = 8;
    m->out_scale       = 1.0f; // TAESD decodes to about [0, 1]
    m->out_offset      = 0.0f;
    if (want != VAE_FAMILY_AUTO && want <= VAE_FAMILY_TAEF2) {
        const int  want_z    = want == VAE_FAMILY_TAEF2 ? 32 : (want == VAE_FAMILY_TAESD3 || want == VAE_FAMILY_TAEF1) ? 16 : 4;
        const bool want_pool = want == VAE_FAMILY_TAEF2;
        if (z != want_z || pool != want_pool) {
            snprintf(err, err_size, "model-family %s takes %d latent channels%s, but the file's decoder has %d%s",
                     vae_family_variant(&vae_taesd_family, want)->name, want_z, want_pool ? " with a mid-block GroupNorm" : "", z,
                     pool ? " with a mid-block GroupNorm" : "");
            return false;
        }
        m->family         = want;
        m->family_certain = true;
        return true;
    }
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

// TAESD decoders take the diffusion model's latents: raw z becomes (z - shift) * scale
static const struct vae_variant taesd_variants[] = {
    { VAE_FAMILY_TAESD, "taesd", "TAESD, tiny decoder for SD 1.x/2.x latents (4 ch)", 4, false, 0.18215f, 0.0f,
      .same_shapes = "taesd 0.18215 or taesdxl 0.13025" },
    { VAE_FAMILY_TAESDXL, "taesdxl", "TAESDXL, tiny decoder for SDXL latents (4 ch)", 4, false, 0.13025f, 0.0f },
    { VAE_FAMILY_TAESD3, "taesd3", "TAESD3, tiny decoder for SD3 latents (16 ch)", 16, false, 1.5305f, 0.0609f,
      .same_shapes = "taesd3 or taef1" },
    { VAE_FAMILY_TAEF1, "taef1", "TAEF1, tiny decoder for FLUX.1 latents (16 ch)", 16, false, 0.3611f, 0.1159f },
    { VAE_FAMILY_TAEF2, "taef2", "TAEF2, tiny decoder for FLUX.2 latents (32 ch)", 32, false },
};

const struct vae_family_desc vae_taesd_family = {
    /* .name           = */ "TAESD",
    /* .keys           = */ "'1.weight' with '3.conv.0.weight', 'decoder.layers.0.weight', 'taesd_decoder.1.weight'",
    /* .style          = */ NULL,
    /* .variants       = */ VAE_VARIANTS(taesd_variants),
    /* .recognise      = */ taesd_recognise,
    /* .canonical_name = */ taesd_canonical_name,
    /* .prepare        = */ taesd_prepare,
    /* .build          = */ taesd_build,
    /* .causal         = */ NULL,
};
