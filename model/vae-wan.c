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
//
// Everything after the mid block is a list of steps (vae_wan_steps), each a conv or two that reach
// one pixel. With the head they are vae_wan_causal: the whole-sequence graph (vae-model.c) chains
// them, and the tiled decode (vae-tile-video.c) runs them one at a time over tiles of a frame.

#include "vae-model.h"

#include <stdio.h>

// causal 3x3x3 conv `name` with bias on x, adding r
static struct vae_tensor * wan_causal(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                      struct vae_tensor * r) {
    return vae_builder_conv3d(b, x, name, 3, 3, r, false);
}

// a 1x1x1 CausalConv3d is a per-frame 1x1 conv
static struct vae_tensor * wan_pointwise(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    return vae_builder_conv3d(b, x, name, 1, 1, NULL, false);
}

// RMS norm with the gamma `name` ([C, 1, 1, 1]; [C, 1, 1] in the attention block)
static struct vae_tensor * wan_rms(struct vae_builder * b, struct vae_tensor * x, const char * name, int n_dims,
                                   enum vae_act act) {
    struct vae_tensor * gamma = vae_builder_weight(b, n_dims, (const int64_t[]) { x->ne[1], 1, 1, 1 }, "%s", name);
    return gamma ? vae_graph_rms_norm(b->g, x, gamma, act) : NULL;
}

// conv(SiLU(RMS(x))) + r: the norm gamma `norm`, the causal conv `conv`
static struct vae_tensor * wan_norm_conv(struct vae_builder * b, struct vae_tensor * x, const char * norm,
                                         const char * conv, struct vae_tensor * r) {
    struct vae_tensor * y = wan_rms(b, x, norm, 4, VAE_ACT_SILU);
    return y ? wan_causal(b, y, conv, r) : NULL;
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

// the steps after the mid block (see vae_causal_step); a residual block is two, its first keeping
// the block's input (slot 0) for the second's shortcut
enum wan_step_kind {
    WAN_STEP_RES_A,    // conv_a(SiLU(RMS_a(x)))                          name: the residual block
    WAN_STEP_RES_B,    // conv_b(SiLU(RMS_b(x))) + shortcut(r)            name: the residual block
    WAN_STEP_RESAMPLE, // [time_conv,] nearest 2x, 3x3 conv [+ DupUp3D(r)] name: the resample; aux: its up-block (2.2)
    WAN_STEP_HEAD,     // head.2(SiLU(head.0(x))) [, unpatchified (2.2)]
};

// the steps of `list.0`, `list.1`, ... in file order, residual blocks and resamples, until one is
// neither, from steps[n]; returns the new count. With `block` (Wan 2.2) the resample adds the
// block's shortcut of the block's input, which the first step keeps as slot 1.
static int wan_list_steps(const struct vae_model * m, struct vae_causal_step * steps, int n, int max,
                          const char * list, const char * block) {
    const int start = n;
    for (int i = 0; n + 2 <= max; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s.%d", list, i);
        struct vae_causal_step * s = &steps[n];
        if (vae_model_dim(m, name, ".residual.0.gamma", 0)) {
            const int cin = vae_model_dim(m, name, ".residual.2.weight", 1);
            const int mid = vae_model_dim(m, name, ".residual.2.weight", 0);
            s[0] = (struct vae_causal_step) { .kind = WAN_STEP_RES_A, .cin = cin, .cout = mid, .up = 1, .frames = 1,
                                              .save = 1, .res = -1 };
            s[1] = (struct vae_causal_step) { .kind = WAN_STEP_RES_B, .cin = mid, .rin = cin, .up = 1, .frames = 1,
                                              .cout = vae_model_dim(m, name, ".residual.6.weight", 0), .res = 0 };
            snprintf(s[0].name, sizeof(s[0].name), "%s", name);
            snprintf(s[1].name, sizeof(s[1].name), "%s", name);
            n += 2;
            continue;
        }
        if (!vae_model_dim(m, name, ".resample.1.weight", 0)) {
            break;
        }
        *s = (struct vae_causal_step) { .kind = WAN_STEP_RESAMPLE, .up = 2, .res = -1,
                                        .cin    = vae_model_dim(m, name, ".resample.1.weight", 1),
                                        .cout   = vae_model_dim(m, name, ".resample.1.weight", 0),
                                        .frames = vae_model_dim(m, name, ".time_conv.weight", 0) ? 2 : 1 };
        snprintf(s->name, sizeof(s->name), "%s", name);
        if (block) {
            snprintf(s->aux, sizeof(s->aux), "%s", block);
            s->rin = steps[start].cin, s->res = 1;
            steps[start].save |= 2;
        }
        n++;
        block = NULL;
    }
    return n;
}

static int vae_wan_steps(const struct vae_model * m, struct vae_causal_step * steps, int max) {
    const bool wan22 = m->family == VAE_FAMILY_WAN22;
    int        n     = 0;
    if (wan22) {
        for (int i = 0;; i++) {
            char block[48], list[64];
            snprintf(block, sizeof(block), "decoder.upsamples.%d", i);
            snprintf(list, sizeof(list), "%s.upsamples", block);
            if (!vae_model_dim(m, list, ".0.residual.0.gamma", 0)) {
                break;
            }
            n = wan_list_steps(m, steps, n, max, list, block);
        }
    } else {
        n = wan_list_steps(m, steps, 0, max, "decoder.upsamples", NULL);
    }
    if (n < max) {
        steps[n++] = (struct vae_causal_step) { .kind = WAN_STEP_HEAD, .name = "decoder.head", .res = -1,
                                                .cin = vae_model_dim(m, "decoder.head.2", ".weight", 1),
                                                .cout = vae_model_dim(m, "decoder.head.2", ".weight", 0) /
                                                        (wan22 ? 4 : 1),
                                                .frames = 1, .up = wan22 ? 2 : 1 }; // (2.2: 12 unpatchified to 3)
    }
    return n;
}

// step s on x (and r, the activation of its residual slot; stats: always NULL, no step normalizes
// by groups)
static struct vae_tensor * wan_step(struct vae_builder * b, const struct vae_causal_step * s, struct vae_tensor * x,
                                   struct vae_tensor * r, struct vae_tensor * stats, bool first) {
    (void) stats;
    char n[96], c[96];
    switch (s->kind) {
        case WAN_STEP_RES_A:
            snprintf(n, sizeof(n), "%s.residual.0.gamma", s->name);
            snprintf(c, sizeof(c), "%s.residual.2", s->name);
            return wan_norm_conv(b, x, n, c, NULL);
        case WAN_STEP_RES_B:
            snprintf(n, sizeof(n), "%s.shortcut.weight", s->name);
            if (vae_model_weight(b->model, n)) {
                snprintf(n, sizeof(n), "%s.shortcut", s->name);
                r = wan_pointwise(b, r, n);                                     // [N, Cout, H, W]
            }
            snprintf(n, sizeof(n), "%s.residual.3.gamma", s->name);
            snprintf(c, sizeof(c), "%s.residual.6", s->name);
            return r ? wan_norm_conv(b, x, n, c, r) : NULL;
        case WAN_STEP_RESAMPLE:
            r = s->aux[0] ? wan_dup_up(b, r, s->aux, s->name, first) : NULL;
            return !s->aux[0] || r ? wan_resample(b, x, s->name, first, r) : NULL;
        default: {
            const bool          wan22 = b->model->family == VAE_FAMILY_WAN22;
            struct vae_tensor * y     = wan_norm_conv(b, x, "decoder.head.0.gamma", "decoder.head.2", NULL);
            if (y && y->ne[1] != (wan22 ? 12 : 3)) {
                return vae_builder_fail(b, "tensor 'decoder.head.2.weight' gives %lld output channels, not %s",
                                        (long long) y->ne[1], wan22 ? "12 (RGB in 2x2 patches)" : "3 (RGB)");
            }
            return y && wan22 ? vae_graph_pixel_shuffle(b->g, y) : y;          // [N', 3, 16h, 16w]
        }
    }
}

// post_quant_conv, conv1 and the mid block: [N, z, h, w] -> [N, 384 (1024), h, w]
static struct vae_tensor * wan_head(struct vae_builder * b, struct vae_tensor * x) {
    static const struct vae_causal_step mid[2] = { { .kind = WAN_STEP_RES_A, .name = "decoder.middle.0" },
                                                   { .kind = WAN_STEP_RES_A, .name = "decoder.middle.2" } };
    if (vae_model_weight(b->model, "conv2.weight")) {
        x = wan_pointwise(b, x, "conv2");                                       // post_quant_conv
    }
    x = x ? wan_causal(b, x, "decoder.conv1", NULL) : NULL;
    for (int i = 0; i < 2 && x; i++) {
        struct vae_causal_step second = mid[i];
        second.kind                   = WAN_STEP_RES_B;
        struct vae_tensor * y         = wan_step(b, &mid[i], x, NULL, NULL, false);
        x                             = y ? wan_step(b, &second, y, x, NULL, false) : NULL;
        x                             = x && i == 0 ? wan_attention(b, x, "decoder.middle.1") : x;
    }
    return x;
}

const struct vae_causal_family vae_wan_causal = {
    /* .steps = */ vae_wan_steps,
    /* .head  = */ wan_head,
    /* .step  = */ wan_step,
};
