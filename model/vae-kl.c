// Graph builder for the AutoencoderKL decoder of SD 1.x/2.x, SDXL, SD3, FLUX.1 and FLUX.2
// (MODELS.md §A): post_quant_conv where present, conv_in, a mid block of two ResNet blocks around
// one single-head attention, up levels of ResNet blocks with nearest-2x upsampling convs, then
// GroupNorm, SiLU and the RGB conv. Widths, the number of levels and of blocks per level come
// from the weights, so reduced-width files and FLUX.2's narrower decoder build too. Names are the
// LDM ones; the loader maps the diffusers naming onto them and gives the attention's q, k and v
// as one [3C, C, 1, 1] conv (`decoder.mid.attn_1.qkv`).
//
// The decoder is also described layer-major for the exact tiled decode (vae-tile.c): the head
// (everything through the mid block, at latent resolution) runs on whole frames, and every later
// 3x3 conv is a step that a tile runs with a 1-pixel border of its input, given the GroupNorm
// statistics of the whole frame. The whole-frame graph is built from the same steps.

#include "vae-model.h"

#include <stdio.h>
#include <string.h>

#define KL_GROUPS 32
#define KL_EPS    1e-6f

static struct vae_tensor * kl_norm(struct vae_builder * b, struct vae_tensor * x, const char * name, enum vae_act act,
                                   struct vae_tensor * stats) {
    const int64_t       shape[1] = { x->ne[1] };
    struct vae_tensor * gamma    = vae_builder_weight(b, 1, shape, "%s.weight", name);
    struct vae_tensor * beta     = vae_builder_weight(b, 1, shape, "%s.bias", name);
    if (!b->failed && x->ne[1] % KL_GROUPS != 0) {
        return vae_builder_fail(b, "%s: %lld channels are not a multiple of %d groups", name, (long long) x->ne[1],
                                KL_GROUPS);
    }
    if (b->failed) {
        return NULL;
    }
    return stats ? vae_graph_group_norm_stats(b->g, x, KL_GROUPS, KL_EPS, gamma, beta, act, stats)
                 : vae_graph_group_norm(b->g, x, KL_GROUPS, KL_EPS, gamma, beta, act);
}

// one step on x: stats NULL = the GroupNorm's own statistics; r = the residual block's input
static struct vae_tensor * kl_step(struct vae_builder * b, const struct vae_kl_step * s, struct vae_tensor * x,
                                   struct vae_tensor * r, struct vae_tensor * stats) {
    if (s->kind == VAE_KL_UPSAMPLE) {
        return vae_builder_conv2d(b, x, s->conv, 3, true, NULL, VAE_ACT_NONE, true);     // [N, C, 2H, 2W]
    }
    struct vae_tensor * t = kl_norm(b, x, s->norm, VAE_ACT_SILU, stats);                 // [N, Cin, H, W]
    if (t && s->kind == VAE_KL_NORM_CONV_RES && !s->shortcut[0] && r->ne[1] != x->ne[1]) {
        return vae_builder_fail(b, "tensor '%.*s.nin_shortcut.weight' is missing: the block goes from %lld to %lld channels",
                                (int) strlen(s->conv) - 6, s->conv, (long long) r->ne[1], (long long) x->ne[1]);
    }
    if (s->kind == VAE_KL_NORM_CONV_RES && s->shortcut[0]) {
        r = vae_builder_conv2d(b, r, s->shortcut, 1, true, NULL, VAE_ACT_NONE, false);   // [N, Cout, H, W]
    }
    return t ? vae_builder_conv2d(b, t, s->conv, 3, true, s->kind == VAE_KL_NORM_CONV_RES ? r : NULL, VAE_ACT_NONE,
                                  false)                                                 // [N, Cout, H, W]
             : NULL;
}

// how far `<prefix>N.` keys run: N = 0, 1, ... until one is missing
static int kl_count(const struct vae_model * m, const char * prefix) {
    for (int n = 0;; n++) {
        char   key[96];
        bool   found = false;
        const int len = snprintf(key, sizeof(key), "%s%d.", prefix, n);
        for (int i = 0; i < m->n_weights && !found; i++) {
            found = strncmp(m->weights[i].name, key, (size_t) len) == 0;
        }
        if (!found) {
            return n;
        }
    }
}

// cin and cout of the conv `name` (0 when it is missing)
static void kl_conv_width(const struct vae_model * m, const char * name, int * cin, int * cout) {
    char key[160];
    snprintf(key, sizeof(key), "%s.weight", name);
    const struct vae_weight * w = vae_model_weight(m, key);
    *cin  = w && w->n_dims == 4 ? (int) w->shape[1] : 0;
    *cout = w && w->n_dims == 4 ? (int) w->shape[0] : 0;
}

// a residual block's two steps (widths 0 when conv1 is missing: the build names it)
static void kl_resnet_steps(const struct vae_model * m, const char * name, struct vae_kl_step * s) {
    char key[96];
    int  cin, cout;
    snprintf(key, sizeof(key), "%s.conv1", name);
    kl_conv_width(m, key, &cin, &cout);
    snprintf(key, sizeof(key), "%s.nin_shortcut.weight", name);
    s[0] = (struct vae_kl_step) { .kind = VAE_KL_NORM_CONV, .cin = cin, .cout = cout };
    s[1] = (struct vae_kl_step) { .kind = VAE_KL_NORM_CONV_RES, .cin = cout, .cout = cout, .rin = cin };
    snprintf(s[0].norm, sizeof(s[0].norm), "%s.norm1", name);
    snprintf(s[0].conv, sizeof(s[0].conv), "%s.conv1", name);
    snprintf(s[1].norm, sizeof(s[1].norm), "%s.norm2", name);
    snprintf(s[1].conv, sizeof(s[1].conv), "%s.conv2", name);
    if (vae_model_weight(m, key)) {
        snprintf(s[1].shortcut, sizeof(s[1].shortcut), "%s.nin_shortcut", name);
    }
}

int vae_kl_steps(const struct vae_model * m, struct vae_kl_step * steps, int max) {
    const int levels = kl_count(m, "decoder.up.");
    int       n      = 0;
    for (int l = levels - 1; l >= 0; l--) {
        char prefix[48];
        snprintf(prefix, sizeof(prefix), "decoder.up.%d.block.", l);
        const int blocks = kl_count(m, prefix);
        for (int j = 0; j < blocks && n + 2 <= max; j++) {
            char name[48];
            snprintf(name, sizeof(name), "decoder.up.%d.block.%d", l, j);
            kl_resnet_steps(m, name, steps + n);
            n += 2;
        }
        if (l > 0 && n < max) {
            struct vae_kl_step * s = &steps[n++];
            *s                     = (struct vae_kl_step) { .kind = VAE_KL_UPSAMPLE };
            snprintf(s->conv, sizeof(s->conv), "decoder.up.%d.upsample.conv", l);
            kl_conv_width(m, s->conv, &s->cin, &s->cout);
        }
    }
    if (n < max) {
        struct vae_kl_step * s = &steps[n++];
        *s = (struct vae_kl_step) { .kind = VAE_KL_NORM_CONV, .norm = "decoder.norm_out", .conv = "decoder.conv_out" };
        kl_conv_width(m, s->conv, &s->cin, &s->cout);
    }
    return n;
}

// post_quant_conv, conv_in and the mid block on whole frames; block (or NULL) after each ResNet block
static struct vae_tensor * kl_head(struct vae_builder * b, struct vae_tensor * x, vae_kl_block_fn block) {
    if (vae_model_weight(b->model, "post_quant_conv.weight")) {
        x = vae_builder_conv2d(b, x, "post_quant_conv", 1, true, NULL, VAE_ACT_NONE, false); // [N, z, h, w]
    }
    x = x ? vae_builder_conv2d(b, x, "decoder.conv_in", 3, true, NULL, VAE_ACT_NONE, false) : NULL; // [N, C, h, w]
    struct vae_kl_step s[2];
    kl_resnet_steps(b->model, "decoder.mid.block_1", s);
    struct vae_tensor * t = x ? kl_step(b, &s[0], x, NULL, NULL) : NULL;
    x                     = t ? kl_step(b, &s[1], t, x, NULL) : NULL;                   // [N, C, h, w]
    x                     = x && block ? block(b, x, "decoder.mid.block_1") : x;
    // x + proj_out(attention(qkv(GN(x))))
    t = x ? kl_norm(b, x, "decoder.mid.attn_1.norm", VAE_ACT_NONE, NULL) : NULL;
    t = t ? vae_builder_conv2d(b, t, "decoder.mid.attn_1.qkv", 1, true, NULL, VAE_ACT_NONE, false) : NULL; // [N, 3C, h, w]
    t = t ? vae_graph_attention(b->g, t) : NULL;                                        // [N, C, h, w]
    x = t ? vae_builder_conv2d(b, t, "decoder.mid.attn_1.proj_out", 1, true, x, VAE_ACT_NONE, false) : NULL;
    kl_resnet_steps(b->model, "decoder.mid.block_2", s);
    t = x ? kl_step(b, &s[0], x, NULL, NULL) : NULL;
    x = t ? kl_step(b, &s[1], t, x, NULL) : NULL;                                       // [N, C, h, w]
    return x && block ? block(b, x, "decoder.mid.block_2") : x;
}

struct vae_graph * vae_kl_head_build(const struct vae_model * model, int h, int w, char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, 1, model->latent_channels, h, w);     // [1, z, h, w]
    return vae_builder_finish(&b, kl_head(&b, x, NULL));
}

struct vae_graph * vae_kl_step_build(const struct vae_model * model, const struct vae_kl_step * s, int h, int w,
                                     char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x     = vae_graph_input(b.g, 1, s->cin, h, w);                  // [1, Cin, h, w]
    struct vae_tensor * stats = s->kind != VAE_KL_UPSAMPLE ? vae_graph_input(b.g, 1, 2 * KL_GROUPS, 1, 1) : NULL;
    struct vae_tensor * r     = s->kind == VAE_KL_NORM_CONV_RES ? vae_graph_input(b.g, 1, s->rin, h, w) : NULL;
    return vae_builder_finish(&b, kl_step(&b, s, x, r, stats));
}

struct vae_tensor * vae_kl_decoder(struct vae_builder * b, struct vae_tensor * x, vae_kl_block_fn block) {
    struct vae_kl_step steps[VAE_KL_MAX_STEPS];
    const int          n_steps = vae_kl_steps(b->model, steps, VAE_KL_MAX_STEPS);
    x                          = kl_head(b, x, block);                                  // [N, C, h, w]
    struct vae_tensor * r      = NULL;                                                  // the residual block's input
    for (int i = 0; i < n_steps && x; i++) {
        struct vae_tensor * y = kl_step(b, &steps[i], x, r, NULL);   // [N, Cout, H, W], 2H x 2W after an upsample
        if (y && block && steps[i].kind == VAE_KL_NORM_CONV_RES) {   // (its conv is `<block>.conv2`)
            char name[48];
            snprintf(name, sizeof(name), "%.*s", (int) strlen(steps[i].conv) - 6, steps[i].conv);
            y = block(b, y, name);
        }
        r = x;
        x = y;
    }
    if (x && x->ne[1] != 3) {
        x = vae_builder_fail(b, "tensor 'decoder.conv_out.weight' gives %lld output channels, not 3 (RGB)",
                             (long long) x->ne[1]);
    }
    return x;                                                                           // [N, 3, H, W]
}

struct vae_graph * vae_kl_build(const struct vae_model * model, int n, int h, int w, char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w);     // [N, z, h, w]
    return vae_builder_finish(&b, vae_kl_decoder(&b, x, NULL));
}
