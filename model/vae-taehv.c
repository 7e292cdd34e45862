// Graph builder for TAEHV, the tiny causal video decoders after madebyollin/taehv (MODELS.md §C.3,
// §I): taew2_1 (Wan 2.1), taew2_2 (Wan 2.2-5B), taehv (HunyuanVideo), taehv1_5 (HunyuanVideo 1.5),
// taeltx_2 (LTX-2), taecvx (CogVideoX), and the 'super' decoders taew2_2_super and taehv1_5_super.
// The variants differ only in the latent channels, the output
// patch (a pixel shuffle of 1, 2 or 4) and the TGrow time strides, which all come from the weights
// (the loader checks them against the variant's). A MemBlock convolves its input together
// with its input one frame earlier; the loader turned that conv's weight into a causal conv3d of
// two taps, so the previous frame lives in a state slot like Wan's caches. TGrow (a 1x1 conv that
// turns each frame into s frames) commutes with the nearest 2x upsample before it, so it runs at
// the lower resolution, followed by a frame split and the fused upsample + conv. Every step gives
// frames_per_latent frames per latent frame; the session drops the first trim_frames of a stream.
// A super decoder (wider, no input clamp, a 3x3 conv + ReLU + pixel shuffle where the base one
// upsamples) has SuperMemBlocks: a 7x7 depthwise conv of [x_t, x_t-1], a 1x1 to 4 C + ReLU and a
// 1x1 back to C, plus x_t. The depthwise filters of both halves run on x_t alone (two filters per
// channel); the 1x1 that follows is a causal conv of two taps reading the x_t-1 filter's output one
// frame late, so that output is what the state slot keeps.

#include "vae-model.h"

#include <stdio.h>

// MemBlock: ReLU(conv(concat[x_t, x_t-1]) + x_t), conv = 3x3 ReLU 3x3 ReLU 3x3
static struct vae_tensor * taehv_memblock(struct vae_builder * b, struct vae_tensor * x, int k) {
    const int64_t       c = x->ne[1];
    struct vae_tensor * w = vae_builder_weight(b, 5, (const int64_t[]) { c, c, 2, 3, 3 }, "decoder.%d.conv.0.weight", k);
    struct vae_tensor * bt = w ? vae_builder_weight(b, 1, (const int64_t[]) { c }, "decoder.%d.conv.0.bias", k) : NULL;
    if (!bt) {
        return NULL;
    }
    char name[32];
    struct vae_tensor * t = vae_graph_causal_conv3d(b->g, x, w, bt, NULL, VAE_ACT_RELU, b->n_slots++); // [N, C, H, W]
    snprintf(name, sizeof(name), "decoder.%d.conv.2", k);
    t = vae_builder_conv2d(b, t, name, 3, true, NULL, VAE_ACT_RELU, false);
    snprintf(name, sizeof(name), "decoder.%d.conv.4", k);
    return t ? vae_builder_conv2d(b, t, name, 3, true, x, VAE_ACT_RELU, false) : NULL;
}

// TGrow `name` (a 1x1 to s C channels) and the frame split that makes them s frames
static struct vae_tensor * taehv_tgrow(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    struct vae_tensor * t = x ? vae_builder_conv2d(b, x, name, 1, false, NULL, VAE_ACT_NONE, false) : NULL;
    if (t && t->ne[1] % x->ne[1] != 0) {
        return vae_builder_fail(b, "TGrow '%s.weight' has %lld rows, not a multiple of its %lld inputs", name,
                                (long long) t->ne[1], (long long) x->ne[1]);
    }
    return t && t->ne[1] > x->ne[1] ? vae_graph_frame_split(b->g, t, (int) (t->ne[1] / x->ne[1])) // [N * s, C, H, W]
                                    : t;
}

// the last conv (decoder.22) and the pixel shuffle of the output patch
static struct vae_graph * taehv_finish(struct vae_builder * b, struct vae_tensor * x) {
    x = x ? vae_builder_conv2d(b, x, "decoder.22", 3, true, NULL, VAE_ACT_NONE, false) : NULL; // [4N, 3p², 8h, 8w]
    // pixel_shuffle(p): p = 4 as two 2x shuffles (the loader ordered decoder.22's rows for that)
    for (int c = x ? (int) x->ne[1] : 3; c == 12 || c == 48; c /= 4) {
        x = vae_graph_pixel_shuffle(b->g, x);                                        // [4N, 3p²/4, 16h, 16w]
    }
    if (x && x->ne[1] != 3) {
        x = vae_builder_fail(b, "tensor 'decoder.22.weight' gives %lld output channels, not 3, 12 or 48",
                             (long long) x->ne[1]);
    }
    return vae_builder_finish(b, x);
}

struct vae_graph * vae_taehv_build(const struct vae_model * model, int n, int h, int w, char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, z, h, w]
    x = vae_graph_tanh_clamp(b.g, x, 3.0f);
    x = vae_builder_conv2d(&b, x, "decoder.1", 3, true, NULL, VAE_ACT_RELU, false); // [N, 256, h, w]
    for (int stage = 0; stage < 3 && x; stage++) {
        // MemBlocks 3,4,5 / 9,10,11 / 15,16,17; TGrow 7 / 13 / 19; conv 8 / 14 / 20 (+ ReLU 21)
        const int base = 3 + 6 * stage;
        for (int k = base; k < base + 3 && x; k++) {
            x = taehv_memblock(&b, x, k);
        }
        char name[32];
        snprintf(name, sizeof(name), "decoder.%d.conv", base + 4);
        struct vae_tensor * t = taehv_tgrow(&b, x, name);
        snprintf(name, sizeof(name), "decoder.%d", base + 5);
        x = t ? vae_builder_conv2d(&b, t, name, 3, false, NULL, stage == 2 ? VAE_ACT_RELU : VAE_ACT_NONE, true)
              : NULL;                                                               // [N * s, C', 2H, 2W]
    }
    return taehv_finish(&b, x);
}

// SuperMemBlock: conv(concat[x_t, x_t-1]) + x_t, conv = 7x7 depthwise, 1x1 ReLU, 1x1
static struct vae_tensor * taehv_super_block(struct vae_builder * b, struct vae_tensor * x, int k) {
    const int64_t       c  = x->ne[1];
    struct vae_tensor * dw = vae_builder_weight(b, 4, (const int64_t[]) { 2 * c, 1, 7, 7 }, "decoder.%d.conv.0.weight",
                                                k);
    struct vae_tensor * w1 = dw ? vae_builder_weight(b, 5, (const int64_t[]) { 4 * c, 2 * c, 2, 1, 1 },
                                                     "decoder.%d.conv.1.weight", k)
                                : NULL;
    struct vae_tensor * b1 = w1 ? vae_builder_weight(b, 1, (const int64_t[]) { 4 * c }, "decoder.%d.conv.1.bias", k)
                                : NULL;
    if (!b1) {
        return NULL;
    }
    struct vae_tensor * t = vae_graph_depthwise_conv2d(b->g, x, dw, NULL); // [N, 2C]: 2c x_t's, 2c + 1 x_t-1's filter
    t = vae_graph_causal_conv3d(b->g, t, w1, b1, NULL, VAE_ACT_RELU, b->n_slots++); // [N, 4C]
    char name[32];
    snprintf(name, sizeof(name), "decoder.%d.conv.3", k);
    return vae_builder_conv2d(b, t, name, 1, false, x, VAE_ACT_NONE, false);
}

struct vae_graph * vae_taehv_super_build(const struct vae_model * model, int n, int h, int w, char * err,
                                         size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, z, h, w]
    x = vae_builder_conv2d(&b, x, "decoder.0", 1, false, NULL, VAE_ACT_NONE, false); // [N, 512, h, w]
    for (int stage = 0; stage < 3 && x; stage++) {
        // SuperMemBlocks 1,2,3 / 8,9,10 / 15,16,17; conv 4 / 11 / 18 (+ ReLU, pixel shuffle); TGrow 7 / 14 / 21
        const int base = 1 + 7 * stage;
        for (int k = base; k < base + 3 && x; k++) {
            x = taehv_super_block(&b, x, k);
        }
        char name[32];
        snprintf(name, sizeof(name), "decoder.%d", base + 3);
        x = x ? vae_builder_conv2d(&b, x, name, 3, true, NULL, VAE_ACT_RELU, false) : NULL; // [N, 4C', H, W]
        if (x && x->ne[1] % 4 != 0) {
            x = vae_builder_fail(&b, "tensor '%s.weight' has %lld rows, not 4 C for a 2x pixel shuffle", name,
                                 (long long) x->ne[1]);
        }
        x = x ? vae_graph_pixel_shuffle(b.g, x) : NULL;                                     // [N, C', 2H, 2W]
        snprintf(name, sizeof(name), "decoder.%d.conv", base + 6);
        x = taehv_tgrow(&b, x, name);                                                       // [N * s, C', 2H, 2W]
    }
    return taehv_finish(&b, x);
}
