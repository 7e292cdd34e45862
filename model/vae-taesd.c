// Graph builder for the TAESD family of tiny decoders (taesd, taesdxl, taesd3, taef1, taef2),
// after madebyollin/taesd's `Decoder` (MODELS.md §C.1, §C.2): a tanh clamp, a conv, three
// groups of residual blocks each followed by nearest 2x + conv, a last block and an RGB conv.
// TAEF2's first three blocks add a `pool` branch with a GroupNorm over the whole frame.
// Widths come from the weights, so reduced-width files build too. Weight names are upstream's
// original `nn.Sequential` indices; the loader maps the other namings onto them.

#include "vae-model.h"

#include <stdarg.h>
#include <stdio.h>

#define TAESD_POOL_GROUPS 4      // GroupNorm(4, ...) in the pool branch
#define TAESD_POOL_EPS    1e-5f

struct taesd_builder {
    const struct vae_model * model;
    struct vae_graph *       g;
    char *                   err;
    size_t                   err_size;
    bool                     failed;
};

// the weight `name` with the given shape (-1: any; n_dims of them), or NULL after a message
static struct vae_tensor * taesd_weight(struct taesd_builder * b, int n_dims, const int64_t * shape,
                                        const char * fmt, ...) {
    char    name[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (b->failed) {
        return NULL;
    }
    const struct vae_weight * w = vae_model_weight(b->model, name);
    bool                      ok = w && w->n_dims == n_dims;
    for (int i = 0; ok && i < n_dims; i++) {
        ok = shape[i] < 0 || shape[i] == w->shape[i];
    }
    if (!ok) {
        char want[96] = "", *p = want;
        for (int i = 0; i < n_dims; i++) {
            p += snprintf(p, (size_t) (want + sizeof(want) - p), i ? ", %lld" : "%lld", (long long) shape[i]);
        }
        snprintf(b->err, b->err_size, "%s: tensor '%s' %s (expected shape [%s], -1 = any)",
                 vae_family_name(b->model->family), name, w ? "has the wrong shape" : "is missing", want);
        b->failed = true;
        return NULL;
    }
    return vae_graph_weight(b->g, w->name, w->data, w->n_dims, w->shape);
}

// conv k x k with cin inputs, optional bias, of layer `name`
static struct vae_tensor * taesd_conv(struct taesd_builder * b, struct vae_tensor * x, const char * name, int k,
                                      bool bias, struct vae_tensor * r, enum vae_act act, bool upsample) {
    if (b->failed) {
        return NULL;
    }
    const int64_t       wshape[4] = { -1, x->ne[1], k, k };
    struct vae_tensor * w = taesd_weight(b, 4, wshape, "%s.weight", name);
    struct vae_tensor * bt = NULL;
    if (w && bias) {
        bt = taesd_weight(b, 1, (const int64_t[]) { w->ne[0] }, "%s.bias", name);
    }
    if (b->failed) {
        return NULL;
    }
    if (r && r->ne[1] != w->ne[0]) {
        snprintf(b->err, b->err_size, "tensor '%s.weight' gives %lld channels but its residual has %lld", name,
                 (long long) w->ne[0], (long long) r->ne[1]);
        b->failed = true;
        return NULL;
    }
    return upsample ? vae_graph_upsample_conv2d(b->g, x, w, bt, act) : vae_graph_conv2d(b->g, x, w, bt, r, act);
}

// Block(n, n): [TAEF2: x = x + pool(x)]; ReLU(conv(x) + x)
static struct vae_tensor * taesd_block(struct taesd_builder * b, struct vae_tensor * x, int k, bool pool) {
    char name[32];
    if (pool && !b->failed) {
        // x + W2 ReLU(GN(W1 x))                                       [N, C, H, W]
        snprintf(name, sizeof(name), "%d.pool.0", k);
        struct vae_tensor * p = taesd_conv(b, x, name, 1, false, NULL, VAE_ACT_NONE, false); // [N, P, H, W]
        if (p) {
            const int64_t       pshape[1] = { p->ne[1] };
            struct vae_tensor * gamma     = taesd_weight(b, 1, pshape, "%d.pool.1.weight", k);
            struct vae_tensor * beta      = taesd_weight(b, 1, pshape, "%d.pool.1.bias", k);
            if (gamma && beta && p->ne[1] % TAESD_POOL_GROUPS != 0) {
                snprintf(b->err, b->err_size, "tensor '%d.pool.0.weight' has %lld outputs, not a multiple of %d groups",
                         k, (long long) p->ne[1], TAESD_POOL_GROUPS);
                b->failed = true;
            }
            if (!b->failed) {
                p = vae_graph_group_norm(b->g, p, TAESD_POOL_GROUPS, TAESD_POOL_EPS, gamma, beta, VAE_ACT_RELU);
            }
        }
        snprintf(name, sizeof(name), "%d.pool.3", k);
        x = p ? taesd_conv(b, p, name, 1, false, x, VAE_ACT_NONE, false) : NULL; // [N, C, H, W]
    }
    if (b->failed) {
        return NULL;
    }
    snprintf(name, sizeof(name), "%d.conv.0", k);
    struct vae_tensor * t = taesd_conv(b, x, name, 3, true, NULL, VAE_ACT_RELU, false);
    snprintf(name, sizeof(name), "%d.conv.2", k);
    t = t ? taesd_conv(b, t, name, 3, true, NULL, VAE_ACT_RELU, false) : NULL;
    snprintf(name, sizeof(name), "%d.conv.4", k);
    return t ? taesd_conv(b, t, name, 3, true, x, VAE_ACT_RELU, false) : NULL; // [N, C, H, W]
}

struct vae_graph * vae_taesd_build(const struct vae_model * model, int n, int h, int w, char * err, size_t err_size) {
    struct taesd_builder b = { model, vae_graph_new(), err, err_size, false };
    if (!b.g) {
        snprintf(err, err_size, "out of memory building the graph");
        return NULL;
    }
    const bool pool = model->family == VAE_FAMILY_TAEF2;

    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, z, h, w]
    x = vae_graph_tanh_clamp(b.g, x, 3.0f);
    x = taesd_conv(&b, x, "1", 3, true, NULL, VAE_ACT_RELU, false);            // [N, 64, h, w]
    for (int k = 3; k <= 5 && x; k++) {
        x = taesd_block(&b, x, k, pool);
    }
    x = x ? taesd_conv(&b, x, "7", 3, false, NULL, VAE_ACT_NONE, true) : NULL;  // [N, 64, 2h, 2w]
    for (int k = 8; k <= 10 && x; k++) {
        x = taesd_block(&b, x, k, false);
    }
    x = x ? taesd_conv(&b, x, "12", 3, false, NULL, VAE_ACT_NONE, true) : NULL; // [N, 64, 4h, 4w]
    for (int k = 13; k <= 15 && x; k++) {
        x = taesd_block(&b, x, k, false);
    }
    x = x ? taesd_conv(&b, x, "17", 3, false, NULL, VAE_ACT_NONE, true) : NULL; // [N, 64, 8h, 8w]
    x = x ? taesd_block(&b, x, 18, false) : NULL;
    x = x ? taesd_conv(&b, x, "19", 3, true, NULL, VAE_ACT_NONE, false) : NULL; // [N, 3, 8h, 8w]
    if (x && x->ne[1] != 3) {
        snprintf(err, err_size, "tensor '19.weight' gives %lld output channels, not 3 (RGB)", (long long) x->ne[1]);
        x = NULL;
    }
    if (!x) {
        vae_graph_free(b.g);
        return NULL;
    }
    vae_graph_set_output(b.g, x);
    return b.g;
}
