// Graph builder for SeedVR2's causal video VAE decoder (MODELS.md §I; upstream
// models/video_vae_v3/modules/attn_video_vae.py, Decoder3D): an AutoencoderKL decoder inflated to
// video. Its convs are causal 3x3x3 ones whose history before the first frame repeats that frame
// (the replicating causal_conv3d), its GroupNorms normalize each frame alone, the mid block's
// attention runs per frame, and each up-block but the last ends in an Upsample3D: a 1x1x1
// `upscale_conv` to C r channels moved into 2x2 pixels and, in the temporal ones (r = 8), 2
// frames, then a causal conv. Like the Wan builder it builds one streaming step, the causal convs
// reading their memory through state slots numbered in network order. The step that starts a
// stream holds latent frame 0 alone: upstream drops the second of the two frames a temporal
// upsampler makes of the first frame (remove_head), so that step computes the first only.
// Names are upstream's state_dict ones (ema_vae.pth, and ComfyUI's safetensors of it); the loader
// joins the attention's q, k, v into `to_qkv` and reorders the upscale convs' rows
// (model_seedvr_upscale) so that frame_split and pixel_shuffle place them.

#include "vae-model.h"

#include <stdio.h>

#define SEEDVR_GROUPS 32     // norm_num_groups of s8_c16_t4_inflation_sd3.yaml
#define SEEDVR_EPS    1e-6f

// GroupNorm `name` on each frame
static struct vae_tensor * seedvr_norm(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                       enum vae_act act) {
    const int64_t       shape[1] = { x->ne[1] };
    struct vae_tensor * gamma    = vae_builder_weight(b, 1, shape, "%s.weight", name);
    struct vae_tensor * beta     = vae_builder_weight(b, 1, shape, "%s.bias", name);
    if (!b->failed && x->ne[1] % SEEDVR_GROUPS != 0) {
        return vae_builder_fail(b, "%s: %lld channels are not a multiple of %d groups", name, (long long) x->ne[1],
                                SEEDVR_GROUPS);
    }
    return b->failed ? NULL : vae_graph_group_norm(b->g, x, SEEDVR_GROUPS, SEEDVR_EPS, gamma, beta, act);
}

// causal 3x3x3 conv `name` with bias on x, adding r (or NULL); its history starts as its first frame
static struct vae_tensor * seedvr_causal(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                         struct vae_tensor * r) {
    return vae_builder_conv3d(b, x, name, 3, 3, r, true);
}

// ResnetBlock3D: shortcut(x) + conv2(SiLU(GN2(conv1(SiLU(GN1(x))))))
static struct vae_tensor * seedvr_resnet(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    char                n[128];
    struct vae_tensor * h = x;                                                   // [N, Cin, H, W]
    snprintf(n, sizeof(n), "%s.conv_shortcut.weight", name);
    if (vae_model_weight(b->model, n)) {
        snprintf(n, sizeof(n), "%s.conv_shortcut", name);
        h = vae_builder_conv3d(b, x, n, 1, 1, NULL, false);                      // [N, Cout, H, W]
    }
    snprintf(n, sizeof(n), "%s.norm1", name);
    struct vae_tensor * y = seedvr_norm(b, x, n, VAE_ACT_SILU);
    snprintf(n, sizeof(n), "%s.conv1", name);
    y = y ? seedvr_causal(b, y, n, NULL) : NULL;                                 // [N, Cout, H, W]
    snprintf(n, sizeof(n), "%s.norm2", name);
    y = y ? seedvr_norm(b, y, n, VAE_ACT_SILU) : NULL;
    snprintf(n, sizeof(n), "%s.conv2", name);
    return y && h ? seedvr_causal(b, y, n, h) : NULL;                            // [N, Cout, H, W]
}

// the mid block's attention, per frame: x + to_out(attention(to_qkv(GN(x)))), one head
static struct vae_tensor * seedvr_attention(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    char n[128];
    snprintf(n, sizeof(n), "%s.group_norm", name);
    struct vae_tensor * t = seedvr_norm(b, x, n, VAE_ACT_NONE);
    snprintf(n, sizeof(n), "%s.to_qkv", name);
    t = t ? vae_builder_conv2d(b, t, n, 1, true, NULL, VAE_ACT_NONE, false) : NULL; // [N, 3C, H, W]
    t = t ? vae_graph_attention(b->g, t) : NULL;                                 // [N, C, H, W]
    snprintf(n, sizeof(n), "%s.to_out.0", name);
    return t ? vae_builder_conv2d(b, t, n, 1, true, x, VAE_ACT_NONE, false) : NULL;
}

// Upsample3D: upscale_conv (rows in frame_split and pixel_shuffle order, see model_seedvr_upscale),
// [N, C, H, W] -> [N zr, C, 2H, 2W], then the causal conv. A first step keeps frame offset 0 of a
// temporal one: the first 4C rows of upscale_conv, [1, C, 2H, 2W].
static struct vae_tensor * seedvr_upsample(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                           bool first) {
    char n[128];
    snprintf(n, sizeof(n), "%s.upscale_conv", name);
    struct vae_tensor * t = vae_builder_conv3d(b, x, n, 1, 1, NULL, false);     // [N, zr 4C, H, W]
    if (!t) {
        return NULL;
    }
    const int zr = (int) (t->ne[1] / (4 * x->ne[1]));   // (the loader checked: 2 or 1)
    if (first && zr > 1) {
        struct vae_tensor * w = t->src[1], * bias = t->src[2];
        w->ne[0] = bias->ne[0] = t->ne[1] = 4 * x->ne[1];   // (its first rows: nothing has read the shapes yet)
    } else if (zr > 1) {
        t = vae_graph_frame_split(b->g, t, zr);                                 // [N zr, 4C, H, W]
    }
    t = vae_graph_pixel_shuffle(b->g, t);                                       // [N zr, C, 2H, 2W]
    snprintf(n, sizeof(n), "%s.conv", name);
    return seedvr_causal(b, t, n, NULL);
}

struct vae_graph * vae_seedvr_build(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                    size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, 16, h, w]
    x = seedvr_causal(&b, x, "decoder.conv_in", NULL);                              // [N, 512, h, w]
    x = x ? seedvr_resnet(&b, x, "decoder.mid_block.resnets.0") : NULL;
    x = x ? seedvr_attention(&b, x, "decoder.mid_block.attentions.0") : NULL;
    x = x ? seedvr_resnet(&b, x, "decoder.mid_block.resnets.1") : NULL;
    // up-blocks of resnets, each but the last ending in an Upsample3D:
    // [N, 512, h, w] -> [N'', 128, 8h, 8w], N'' = 1 for a first step, 4N otherwise
    for (int i = 0; x; i++) {
        char block[48], name[96];
        snprintf(block, sizeof(block), "decoder.up_blocks.%d", i);
        snprintf(name, sizeof(name), "%s.resnets.0.norm1.weight", block);
        if (!vae_model_weight(model, name)) {
            break;
        }
        for (int j = 0; x; j++) {
            snprintf(name, sizeof(name), "%s.resnets.%d.norm1.weight", block, j);
            if (!vae_model_weight(model, name)) {
                break;
            }
            snprintf(name, sizeof(name), "%s.resnets.%d", block, j);
            x = seedvr_resnet(&b, x, name);
        }
        snprintf(name, sizeof(name), "%s.upsamplers.0.conv.weight", block);
        if (x && vae_model_weight(model, name)) {
            snprintf(name, sizeof(name), "%s.upsamplers.0", block);
            x = seedvr_upsample(&b, x, name, first);
        }
    }
    x = x ? seedvr_norm(&b, x, "decoder.conv_norm_out", VAE_ACT_SILU) : NULL;
    x = x ? seedvr_causal(&b, x, "decoder.conv_out", NULL) : NULL;                  // [N'', 3, 8h, 8w]
    if (x && x->ne[1] != 3) {
        x = vae_builder_fail(&b, "tensor 'decoder.conv_out.weight' gives %lld output channels, not 3 (RGB)",
                             (long long) x->ne[1]);
    }
    return vae_builder_finish(&b, x);
}
