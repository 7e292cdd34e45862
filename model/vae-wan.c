// Graph builder for the Wan 2.1 VAE decoder (MODELS.md §B), the one Wan 2.1, Wan 2.2-A14B and
// Qwen-Image share: causal 3x3x3 convolutions, RMS norms, one per-frame attention, and up-blocks
// whose temporal ones double the frame count with `time_conv`. It builds one streaming step: the
// causal convs read the frames they remember from earlier steps through their state slots (one
// per conv, numbered in network order so that every step's graph uses the same numbers). The
// step that starts a stream holds latent frame 0 alone and skips the time_convs: frame 0 passes
// through them unchanged, and their history starts with the frames after it (zeros, not frame 0).
// Widths and the up-block list come from the file; names are the original upstream ones.
//
// The Wan 2.2 VAE of TI2V-5B (§B.8) is the same network with 48 latent channels, its up-blocks
// nested (`decoder.upsamples.I.upsamples.J`) and each wrapped in a parameter-free DupUp3D shortcut
// (a channel map the loader makes, then frame and pixel moves), and a head of 12 channels that a
// pixel shuffle unpatchifies (the loader reorders them into its order).

#include "vae-model.h"

#include <stdio.h>

// causal 3x3x3 conv `name` with bias on x, adding r
static struct vae_tensor * wan_causal(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                      struct vae_tensor * r) {
    struct vae_tensor * w  = vae_builder_weight(b, 5, (const int64_t[]) { -1, x->ne[1], 3, 3, 3 }, "%s.weight", name);
    struct vae_tensor * bt = w ? vae_builder_weight(b, 1, (const int64_t[]) { w->ne[0] }, "%s.bias", name) : NULL;
    if (!bt) {
        return NULL;
    }
    if (r && r->ne[1] != w->ne[0]) {
        return vae_builder_fail(b, "tensor '%s.weight' gives %lld channels but its residual has %lld", name,
                                (long long) w->ne[0], (long long) r->ne[1]);
    }
    return vae_graph_causal_conv3d(b->g, x, w, bt, r, VAE_ACT_NONE, b->n_slots++);
}

// a 1x1x1 CausalConv3d is a per-frame 1x1 conv: its weight [Cout, Cin, 1, 1, 1] read as 2-D
static struct vae_tensor * wan_pointwise(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    struct vae_tensor * w  = vae_builder_weight(b, 5, (const int64_t[]) { -1, x->ne[1], 1, 1, 1 }, "%s.weight", name);
    struct vae_tensor * bt = w ? vae_builder_weight(b, 1, (const int64_t[]) { w->ne[0] }, "%s.bias", name) : NULL;
    if (!bt) {
        return NULL;
    }
    w->n_dims = 4;
    return vae_graph_conv2d(b->g, x, w, bt, NULL, VAE_ACT_NONE);
}

// RMS norm with the gamma `name` ([C, 1, 1, 1]; [C, 1, 1] in the attention block)
static struct vae_tensor * wan_rms(struct vae_builder * b, struct vae_tensor * x, const char * name, int n_dims,
                                   enum vae_act act) {
    struct vae_tensor * gamma = vae_builder_weight(b, n_dims, (const int64_t[]) { x->ne[1], 1, 1, 1 }, "%s", name);
    return gamma ? vae_graph_rms_norm(b->g, x, gamma, act) : NULL;
}

// ResidualBlock: shortcut(x) + conv_b(SiLU(RMS_b(conv_a(SiLU(RMS_a(x))))))
static struct vae_tensor * wan_resblock(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    char                n[96];
    struct vae_tensor * h = x;                                                  // [N, Cin, H, W]
    snprintf(n, sizeof(n), "%s.shortcut.weight", name);
    if (vae_model_weight(b->model, n)) {
        snprintf(n, sizeof(n), "%s.shortcut", name);
        h = wan_pointwise(b, x, n);                                             // [N, Cout, H, W]
    }
    snprintf(n, sizeof(n), "%s.residual.0.gamma", name);
    struct vae_tensor * y = wan_rms(b, x, n, 4, VAE_ACT_SILU);
    snprintf(n, sizeof(n), "%s.residual.2", name);
    y = y ? wan_causal(b, y, n, NULL) : NULL;                                   // [N, Cout, H, W]
    snprintf(n, sizeof(n), "%s.residual.3.gamma", name);
    y = y ? wan_rms(b, y, n, 4, VAE_ACT_SILU) : NULL;
    snprintf(n, sizeof(n), "%s.residual.6", name);
    return y && h ? wan_causal(b, y, n, h) : NULL;                              // [N, Cout, H, W]
}

// AttentionBlock, per frame: x + proj(attention(to_qkv(RMS(x))))
static struct vae_tensor * wan_attention(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    char n[96];
    snprintf(n, sizeof(n), "%s.norm.gamma", name);
    struct vae_tensor * t = wan_rms(b, x, n, 3, VAE_ACT_NONE);
    snprintf(n, sizeof(n), "%s.to_qkv", name);
    t = t ? vae_builder_conv2d(b, t, n, 1, true, NULL, VAE_ACT_NONE, false) : NULL; // [N, 3C, H, W]
    if (t && t->ne[1] != 3 * x->ne[1]) {
        return vae_builder_fail(b, "tensor '%s.weight' gives %lld channels, not 3 x %lld", n, (long long) t->ne[1],
                                (long long) x->ne[1]);
    }
    t = t ? vae_graph_attention(b->g, t) : NULL;                                // [N, C, H, W]
    snprintf(n, sizeof(n), "%s.proj", name);
    return t ? vae_builder_conv2d(b, t, n, 1, true, x, VAE_ACT_NONE, false) : NULL;
}

// Resample: [time_conv doubling the frames,] then nearest 2x and a 3x3 conv per frame, adding r
// (or NULL)
static struct vae_tensor * wan_resample(struct vae_builder * b, struct vae_tensor * x, const char * name, bool first,
                                        struct vae_tensor * r) {
    char n[96];
    snprintf(n, sizeof(n), "%s.time_conv.weight", name);
    if (vae_model_weight(b->model, n)) {
        if (first) {
            b->n_slots++; // frame 0 passes through; the slot keeps its zeros for the next step
        } else {
            struct vae_tensor * w = vae_builder_weight(b, 5, (const int64_t[]) { 2 * x->ne[1], x->ne[1], 3, 1, 1 }, "%s", n);
            snprintf(n, sizeof(n), "%s.time_conv.bias", name);
            struct vae_tensor * bt = w ? vae_builder_weight(b, 1, (const int64_t[]) { w->ne[0] }, "%s", n) : NULL;
            if (!bt) {
                return NULL;
            }
            x = vae_graph_causal_conv3d(b->g, x, w, bt, NULL, VAE_ACT_NONE, b->n_slots++); // [N, 2C, H, W]
            x = vae_graph_frame_split(b->g, x, 2);                                          // [2N, C, H, W]
        }
    }
    snprintf(n, sizeof(n), "%s.resample.1", name);
    if (r) { // (the fused upsampling conv adds no residual)
        return vae_builder_conv2d(b, vae_graph_upsample2x(b->g, x), n, 3, true, r, VAE_ACT_NONE, false);
    }
    return vae_builder_conv2d(b, x, n, 3, true, NULL, VAE_ACT_NONE, true); // [N', C', 2H, 2W]
}

// Wan 2.2's DupUp3D shortcut of up-block `block`, whose resample is `resample`, on the block's
// input x: its channel map [ft Cout s, Cin, 1, 1] (vae-model.c), frame_split(ft), then a nearest
// 2x (s = 1) or pixel_shuffle (s = 4): [N, Cin, H, W] -> [N ft, Cout, 2H, 2W]
static struct vae_tensor * wan_dup_up(struct vae_builder * b, struct vae_tensor * x, const char * block,
                                      const char * resample, bool first) {
    char n[96];
    snprintf(n, sizeof(n), "%s.time_conv.weight", resample);
    const int ft = vae_model_weight(b->model, n) ? 2 : 1;
    if (ft == 2 && first) {
        // the first step keeps the second of the ft frames; a temporal block keeps its width, so
        // that half of its map is the identity
        return vae_graph_upsample2x(b->g, x);
    }
    snprintf(n, sizeof(n), "%s.resample.1.weight", resample);
    const int64_t       cout = vae_model_weight(b->model, n)->shape[0];
    struct vae_tensor * map  = vae_builder_weight(b, 4, (const int64_t[]) { -1, x->ne[1], 1, 1 },
                                                  "%s.avg_shortcut.weight", block);
    if (!map) {
        return NULL;
    }
    struct vae_tensor * t = vae_graph_conv2d(b->g, x, map, NULL, NULL, VAE_ACT_NONE); // [N, ft Cout s, H, W]
    t = ft > 1 ? vae_graph_frame_split(b->g, t, ft) : t;                               // [N ft, Cout s, H, W]
    return t->ne[1] == cout ? vae_graph_upsample2x(b->g, t) : vae_graph_pixel_shuffle(b->g, t);
}

// the entries `list.0`, `list.1`, ... in file order, residual blocks and resamples, until one is
// neither. With `block` (Wan 2.2), the first resample adds the block's shortcut of its input x.
static struct vae_tensor * wan_upsamples(struct vae_builder * b, struct vae_tensor * x, const char * list,
                                         const char * block, bool first) {
    struct vae_tensor * in = x;
    for (int i = 0; x; i++) {
        char name[64], probe[96];
        snprintf(name, sizeof(name), "%s.%d", list, i);
        snprintf(probe, sizeof(probe), "%s.residual.0.gamma", name);
        if (vae_model_weight(b->model, probe)) {
            x = wan_resblock(b, x, name);
            continue;
        }
        snprintf(probe, sizeof(probe), "%s.resample.1.weight", name);
        if (!vae_model_weight(b->model, probe)) {
            break;
        }
        struct vae_tensor * r = block ? wan_dup_up(b, in, block, name, first) : NULL;
        x     = !block || r ? wan_resample(b, x, name, first, r) : NULL;
        block = NULL;
    }
    return x;
}

struct vae_graph * vae_wan_build(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                 size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, 16 (48), h, w]
    if (vae_model_weight(model, "conv2.weight")) {
        x = wan_pointwise(&b, x, "conv2");                                          // post_quant_conv
    }
    x = x ? wan_causal(&b, x, "decoder.conv1", NULL) : NULL;                       // [N, 384, h, w]
    x = x ? wan_resblock(&b, x, "decoder.middle.0") : NULL;
    x = x ? wan_attention(&b, x, "decoder.middle.1") : NULL;
    x = x ? wan_resblock(&b, x, "decoder.middle.2") : NULL;
    // the up-blocks: [N, 384, h, w] -> [N'', 96, 8h, 8w] (Wan 2.2: [N, 1024, h, w] -> [N'', 256, 8h, 8w]),
    // N'' = 1 for a first step, 4N otherwise
    const bool wan22 = model->family == VAE_FAMILY_WAN22;
    for (int i = 0; x && wan22; i++) {
        char block[48], list[64], probe[96];
        snprintf(block, sizeof(block), "decoder.upsamples.%d", i);
        snprintf(list, sizeof(list), "%s.upsamples", block);
        snprintf(probe, sizeof(probe), "%s.0.residual.0.gamma", list);
        if (!vae_model_weight(model, probe)) {
            break;
        }
        x = wan_upsamples(&b, x, list, block, first);
    }
    x = x && !wan22 ? wan_upsamples(&b, x, "decoder.upsamples", NULL, first) : x;
    x = x ? wan_rms(&b, x, "decoder.head.0.gamma", 4, VAE_ACT_SILU) : NULL;
    x = x ? wan_causal(&b, x, "decoder.head.2", NULL) : NULL;                       // [N', 3 (12), 8h, 8w]
    if (x && x->ne[1] != (wan22 ? 12 : 3)) {
        x = vae_builder_fail(&b, "tensor 'decoder.head.2.weight' gives %lld output channels, not %s",
                             (long long) x->ne[1], wan22 ? "12 (RGB in 2x2 patches)" : "3 (RGB)");
    }
    x = x && wan22 ? vae_graph_pixel_shuffle(b.g, x) : x;                          // [N', 3, 16h, 16w]
    return vae_builder_finish(&b, x);
}
