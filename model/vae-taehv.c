// Graph builder for TAEHV, the tiny causal video decoders after madebyollin/taehv (MODELS.md §C.3,
// §I): taew2_1 (Wan 2.1), taew2_2 (Wan 2.2-5B), taehv (HunyuanVideo), taehv1_5 (HunyuanVideo 1.5),
// taeltx_2 (LTX-2), taecvx (CogVideoX). The variants differ only in the latent channels, the output
// patch (a pixel shuffle of 1, 2 or 4) and the TGrow time strides, which all come from the weights
// (the loader checks them against the variant's). A MemBlock convolves its input together
// with its input one frame earlier; the loader turned that conv's weight into a causal conv3d of
// two taps, so the previous frame lives in a state slot like Wan's caches. TGrow (a 1x1 conv that
// turns each frame into s frames) commutes with the nearest 2x upsample before it, so it runs at
// the lower resolution, followed by a frame split and the fused upsample + conv. Every step gives
// frames_per_latent frames per latent frame; the session drops the first trim_frames of a stream.

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
        struct vae_tensor * t = x ? vae_builder_conv2d(&b, x, name, 1, false, NULL, VAE_ACT_NONE, false) : NULL;
        if (t && t->ne[1] % x->ne[1] != 0) {
            t = vae_builder_fail(&b, "TGrow '%s.weight' has %lld rows, not a multiple of its %lld inputs", name,
                                 (long long) t->ne[1], (long long) x->ne[1]);
        }
        if (t && t->ne[1] > x->ne[1]) {
            t = vae_graph_frame_split(b.g, t, (int) (t->ne[1] / x->ne[1]));      // [N * s, C, H, W]
        }
        snprintf(name, sizeof(name), "decoder.%d", base + 5);
        x = t ? vae_builder_conv2d(&b, t, name, 3, false, NULL, stage == 2 ? VAE_ACT_RELU : VAE_ACT_NONE, true)
              : NULL;                                                               // [N * s, C', 2H, 2W]
    }
    x = x ? vae_builder_conv2d(&b, x, "decoder.22", 3, true, NULL, VAE_ACT_NONE, false) : NULL; // [4N, 3p², 8h, 8w]
    // pixel_shuffle(p): p = 4 as two 2x shuffles (the loader ordered decoder.22's rows for that)
    for (int c = x ? (int) x->ne[1] : 3; c == 12 || c == 48; c /= 4) {
        x = vae_graph_pixel_shuffle(b.g, x);                                        // [4N, 3p²/4, 16h, 16w]
    }
    if (x && x->ne[1] != 3) {
        x = vae_builder_fail(&b, "tensor 'decoder.22.weight' gives %lld output channels, not 3, 12 or 48",
                             (long long) x->ne[1]);
    }
    return vae_builder_finish(&b, x);
}
