// Graph builder for the Wan 2.1 VAE decoder (MODELS.md §B), the one Wan 2.1, Wan 2.2-A14B and
// Qwen-Image share: causal 3x3x3 convolutions, RMS norms, one per-frame attention, and up-blocks
// whose temporal ones double the frame count with `time_conv`. It builds one streaming step: the
// causal convs read the frames they remember from earlier steps through their state slots (one
// per conv, numbered in network order so that every step's graph uses the same numbers). The
// step that starts a stream holds latent frame 0 alone and skips the time_convs: frame 0 passes
// through them unchanged, and their history starts with the frames after it (zeros, not frame 0).
// Widths and the up-block list come from the file; names are the original upstream ones.

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

// Resample: [time_conv doubling the frames,] then nearest 2x and a 3x3 conv per frame
static struct vae_tensor * wan_resample(struct vae_builder * b, struct vae_tensor * x, const char * name, bool first) {
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
    return vae_builder_conv2d(b, x, n, 3, true, NULL, VAE_ACT_NONE, true); // [N', C', 2H, 2W]
}

struct vae_graph * vae_wan_build(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                 size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, 16, h, w]
    if (vae_model_weight(model, "conv2.weight")) {
        x = wan_pointwise(&b, x, "conv2");                                          // post_quant_conv
    }
    x = x ? wan_causal(&b, x, "decoder.conv1", NULL) : NULL;                       // [N, 384, h, w]
    x = x ? wan_resblock(&b, x, "decoder.middle.0") : NULL;
    x = x ? wan_attention(&b, x, "decoder.middle.1") : NULL;
    x = x ? wan_resblock(&b, x, "decoder.middle.2") : NULL;
    for (int i = 0; x; i++) {
        // residual blocks and resamples in file order: [N, 384, h, w] -> [N'', 96, 8h, 8w],
        // N'' = 1 for a first step, 4N otherwise
        char name[64], probe[96];
        snprintf(name, sizeof(name), "decoder.upsamples.%d", i);
        snprintf(probe, sizeof(probe), "%s.residual.0.gamma", name);
        if (vae_model_weight(model, probe)) {
            x = wan_resblock(&b, x, name);
            continue;
        }
        snprintf(probe, sizeof(probe), "%s.resample.1.weight", name);
        if (!vae_model_weight(model, probe)) {
            break;
        }
        x = wan_resample(&b, x, name, first);
    }
    x = x ? wan_rms(&b, x, "decoder.head.0.gamma", 4, VAE_ACT_SILU) : NULL;
    x = x ? wan_causal(&b, x, "decoder.head.2", NULL) : NULL;                       // [N', 3, 8h, 8w]
    if (x && x->ne[1] != 3) {
        x = vae_builder_fail(&b, "tensor 'decoder.head.2.weight' gives %lld output channels, not 3 (RGB)",
                             (long long) x->ne[1]);
    }
    return vae_builder_finish(&b, x);
}
