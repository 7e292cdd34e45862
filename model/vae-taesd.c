// Graph builder for the TAESD family of tiny decoders (taesd, taesdxl, taesd3, taef1, taef2),
// after madebyollin/taesd's `Decoder` (MODELS.md §C.1, §C.2): a tanh clamp, a conv, three
// groups of residual blocks each followed by nearest 2x + conv, a last block and an RGB conv.
// TAEF2's first three blocks add a `pool` branch with a GroupNorm over the whole frame.
// Widths come from the weights, so reduced-width files build too. Weight names are upstream's
// original `nn.Sequential` indices; the loader maps the other namings onto them.

#include "vae-model.h"

#include <stdio.h>

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

struct vae_graph * vae_taesd_build(const struct vae_model * model, int n, int h, int w, char * err, size_t err_size) {
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
