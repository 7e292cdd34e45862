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
// Everything after the mid block is a list of steps (wan_steps), each a conv or two that reach
// one pixel. With the head they are wan_causal_family: the whole-sequence graph (vae_causal_build) chains
// them, and the tiled decode (vae-tile-video.c) runs them one at a time over tiles of a frame.
//
// Qwen-Image 2.1's VAE (MODELS.md J.4) is Wan 2.2's network for images: 64 latent channels, five
// up-blocks, every conv 2-D (a time axis of 1: the loader drops it), and a head of 4 channels,
// RGBA, without unpatchify. It decodes each latent frame alone as the first step of a stream: the
// time_convs never run (their weights are loaded and ignored) and a temporal DupUp3D shortcut keeps
// its second time slot (a channel map of its own where that is not the identity).
//
// Files: the original names (`Wan2.1_VAE.pth`, ComfyUI's `wan_2.1_vae.safetensors`), canonical
// here, or diffusers' AutoencoderKLWan (Qwen-Image's VAE has exactly its names), whose up-blocks
// flatten into the original `upsamples` list (2.1) or nest (2.2).

#include "vae-family.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Qwen-Image 2.1's latent statistics (MODELS.md J.4; diffusers' AutoencoderKLQwenImage21 defaults)
static const float wan_qwen21_mean[64] = {
    0.5126f,  0.7721f,  -0.0631f, 1.3506f,  -0.7855f, -2.1025f, -0.3458f, 1.3722f,  1.8873f,  -1.7177f, -0.6510f,
    0.2732f,  0.7562f,  -0.6163f, -1.0277f, 3.8363f,  2.0210f,  0.0472f,  0.9320f,  2.0087f,  2.4954f,  -0.1391f,
    -1.4249f, 1.8464f,  -0.5236f, 1.2826f,  3.7046f,  -1.3035f, 2.7286f,  -1.4518f, -1.9036f, -1.9955f, -0.0342f,
    -1.0265f, -0.7636f, 3.0555f,  0.0746f,  -3.0751f, -0.1076f, 1.7376f,  -1.0914f, -1.9435f, -0.2784f, -1.3680f,
    0.4809f,  -0.4433f, 0.3764f,  0.5729f,  -2.0595f, 1.0960f,  -1.3260f, -2.0211f, -5.0179f, 0.5275f,  4.0162f,
    1.8505f,  0.3026f,  1.9373f,  1.4937f,  0.2632f,  0.5547f,  -1.7121f, -0.1562f, 0.0304f,
};
static const float wan_qwen21_std[64] = {
    3.2001f, 3.2936f, 3.4321f, 3.0091f, 3.1061f, 4.0379f, 4.0705f, 3.7910f, 3.0785f, 3.6500f, 3.9308f, 3.0904f, 2.8778f,
    3.7675f, 3.7320f, 5.0756f, 3.2864f, 4.0397f, 3.1317f, 4.0443f, 2.9249f, 3.9454f, 3.0988f, 4.2489f, 3.4896f, 3.8513f,
    3.9323f, 3.4719f, 3.7498f, 4.2830f, 3.5694f, 4.2467f, 3.9037f, 3.2947f, 5.0770f, 3.5075f, 3.2700f, 3.4767f, 2.8063f,
    5.1125f, 3.5327f, 4.7833f, 3.1286f, 4.1819f, 3.8527f, 3.8312f, 3.5605f, 4.3875f, 3.9624f, 4.0168f, 3.5643f, 4.0550f,
    5.5614f, 4.2963f, 4.4080f, 3.4959f, 3.8747f, 3.7608f, 3.5735f, 3.1490f, 3.7662f, 3.6746f, 3.4563f, 3.8161f,
};

// Wan 2.1 (MODELS.md B.4) and Wan 2.2 (B.8) latent statistics: raw z = normalized x * std + mean
const float vae_wan21_mean[16] = { -0.7571f, -0.7089f, -0.9113f, 0.1075f, -0.1745f, 0.9653f, -0.1517f, 1.5508f,
                                      0.4134f,  -0.0715f, 0.5517f,  -0.3632f, -0.1922f, -0.9497f, 0.2503f, -0.2921f };
const float vae_wan21_std[16]  = { 2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f, 2.6052f, 2.0743f,
                                      3.2687f, 2.1526f, 2.8652f, 1.5579f, 1.6382f, 1.1253f, 2.8251f, 1.9160f };
const float vae_wan22_mean[48] = {
    -0.2289f, -0.0052f, -0.1323f, -0.2339f, -0.2799f, 0.0174f,  0.1838f,  0.1557f,  -0.1382f, 0.0542f,
    0.2813f,  0.0891f,  0.1570f,  -0.0098f, 0.0375f,  -0.1825f, -0.2246f, -0.1207f, -0.0698f, 0.5109f,
    0.2665f,  -0.2108f, -0.2158f, 0.2502f,  -0.2055f, -0.0322f, 0.1109f,  0.1567f,  -0.0729f, 0.0899f,
    -0.2799f, -0.1230f, -0.0313f, -0.1649f, 0.0117f,  0.0723f,  -0.2839f, -0.2083f, -0.0520f, 0.3748f,
    0.0152f,  0.1957f,  0.1433f,  -0.2944f, 0.3573f,  -0.0548f, -0.1681f, -0.0667f,
};
const float vae_wan22_std[48] = {
    0.4765f, 1.0364f, 0.4514f, 1.1677f, 0.5313f, 0.4990f, 0.4818f, 0.5013f, 0.8158f, 1.0344f, 0.5894f, 1.0901f,
    0.6885f, 0.6165f, 0.8454f, 0.4978f, 0.5759f, 0.3523f, 0.7135f, 0.6804f, 0.5833f, 1.4146f, 0.8986f, 0.5659f,
    0.7069f, 0.5338f, 0.4889f, 0.4917f, 0.4069f, 0.4999f, 0.6866f, 0.4093f, 0.5709f, 0.6065f, 0.6415f, 0.4944f,
    0.5726f, 1.2042f, 0.5458f, 1.6887f, 0.3971f, 1.0600f, 0.3943f, 0.5537f, 0.5444f, 0.4089f, 0.7468f, 0.7744f,
};


// Qwen-Image 2.1: 2-D convs, every latent frame an image of its own (the first step of a stream)
static bool wan_image(const struct vae_model * m) {
    return m->family == VAE_FAMILY_QWEN21;
}

// Wan 2.2 and Qwen-Image 2.1: up-blocks that nest their entries, each with a DupUp3D shortcut
static bool wan_nested(const struct vae_model * m) {
    return m->family == VAE_FAMILY_WAN22 || m->family == VAE_FAMILY_QWEN21;
}

// causal 3x3x3 conv `name` with bias on x, adding r (Qwen-Image 2.1: a 3x3 conv)
static struct vae_tensor * wan_causal(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                      struct vae_tensor * r) {
    return wan_image(b->model) ? vae_builder_conv2d(b, x, name, 3, true, r, VAE_ACT_NONE, false)
                               : vae_builder_conv3d(b, x, name, 3, 3, r, 0);
}

// a 1x1x1 CausalConv3d is a per-frame 1x1 conv
static struct vae_tensor * wan_pointwise(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    return wan_image(b->model) ? vae_builder_conv2d(b, x, name, 1, true, NULL, VAE_ACT_NONE, false)
                               : vae_builder_conv3d(b, x, name, 1, 1, NULL, 0);
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
// input x: its channel map [ft Cout s, Cin, 1, 1] (wan22_shortcut), frame_split(ft), then a nearest
// 2x (s = 1) or pixel_shuffle (s = 4): [N, Cin, H, W] -> [N ft, Cout, 2H, 2W]
static struct vae_tensor * wan_dup_up(struct vae_builder * b, struct vae_tensor * x, const char * block,
                                      const char * resample, bool first) {
    char n[96];
    snprintf(n, sizeof(n), "%s.time_conv.weight", resample);
    const int  ft    = vae_model_weight(b->model, n) ? 2 : 1;
    const bool slot1 = ft == 2 && first; // the first step keeps the second of the ft frames
    snprintf(n, sizeof(n), "%s.avg_shortcut_first.weight", block);
    if (slot1 && !vae_model_weight(b->model, n)) {
        return vae_graph_upsample2x(b->g, x); // (that half of the map is the identity)
    }
    snprintf(n, sizeof(n), "%s.resample.1.weight", resample);
    const int64_t       cout = vae_model_weight(b->model, n)->shape[0];
    struct vae_tensor * map  = vae_builder_weight(b, 4, (const int64_t[]) { -1, x->ne[1], 1, 1 },
                                                  slot1 ? "%s.avg_shortcut_first.weight" : "%s.avg_shortcut.weight", block);
    if (!map) {
        return NULL;
    }
    struct vae_tensor * t = vae_graph_conv2d(b->g, x, map, NULL, NULL, VAE_ACT_NONE); // [N, ft Cout s, H, W]
    t = ft > 1 && !slot1 ? vae_graph_frame_split(b->g, t, ft) : t;                     // [N ft, Cout s, H, W]
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
                                        .frames = vae_model_dim(m, name, ".time_conv.weight", 0) && !wan_image(m) ? 2 : 1 };
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

static int wan_steps(const struct vae_model * m, struct vae_causal_step * steps, int max) {
    const bool wan22 = m->family == VAE_FAMILY_WAN22;
    int        n     = 0;
    if (wan_nested(m)) {
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
            first = first || wan_image(b->model);
            r     = s->aux[0] ? wan_dup_up(b, r, s->aux, s->name, first) : NULL;
            return !s->aux[0] || r ? wan_resample(b, x, s->name, first, r) : NULL;
        default: {
            const bool          wan22 = b->model->family == VAE_FAMILY_WAN22;
            const int           out   = wan22 ? 12 : b->model->out_channels;
            struct vae_tensor * y     = wan_norm_conv(b, x, "decoder.head.0.gamma", "decoder.head.2", NULL);
            if (y && y->ne[1] != out) {
                return vae_builder_fail(b, "tensor 'decoder.head.2.weight' gives %lld output channels, not %s",
                                        (long long) y->ne[1], wan22 ? "12 (RGB in 2x2 patches)" : out == 4 ? "4 (RGBA)" : "3 (RGB)");
            }
            return y && wan22 ? vae_graph_pixel_shuffle(b->g, y) : y;          // [N', 3 (4), 16h, 16w]
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

static const struct vae_causal_family wan_causal_family = {
    /* .steps = */ wan_steps,
    /* .head  = */ wan_head,
    /* .step  = */ wan_step,
};

enum wan_naming {
    WAN_NAMING_ORIG,           // `conv2.*`, `decoder.conv1.*`, `decoder.upsamples.N.*` (canonical)
    WAN_NAMING_DIFFUSERS,      // `post_quant_conv.*`, `decoder.up_blocks.I.resnets.J.*`, ...
    WAN_NAMING_22_DIFFUSERS,   // the same with Wan 2.2's `decoder.up_blocks.I.upsampler.*` (is_residual)
};

// naming->per_level: the entries of the original `upsamples` list a diffusers up-block holds (its
// resnets and the upsampler)
static int wan_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    if (vae_st_header_find(hdr, "decoder.middle.0.residual.0.gamma")) {
        naming->kind = WAN_NAMING_ORIG;
        return 1;
    }
    if (!vae_st_header_find(hdr, "decoder.mid_block.resnets.0.norm1.gamma")) {
        return 0;
    }
    naming->kind = vae_name_has_prefix(hdr, "decoder.up_blocks.0.upsampler.") ? WAN_NAMING_22_DIFFUSERS
                                                                              : WAN_NAMING_DIFFUSERS;
    const long most = vae_name_most_index(hdr, "decoder.up_blocks.", ".resnets.", err, err_size);
    naming->per_level = most + 2;
    return most < -1 ? -1 : 1;
}

// diffusers' names inside a Wan residual block -> the original Sequential indices
static char * wan_resblock_name(char * name) {
    static const char * map[][2] = {
        { ".norm1.", ".residual.0." }, { ".conv1.", ".residual.2." }, { ".norm2.", ".residual.3." },
        { ".conv2.", ".residual.6." }, { ".conv_shortcut.", ".shortcut." },
    };
    for (size_t i = 0; name && i < sizeof(map) / sizeof(map[0]); i++) {
        if (strstr(name, map[i][0])) {
            return vae_name_replace(name, map[i][0], map[i][1]);
        }
    }
    return name;
}

// Wan 2.2 diffusers up-block `num` (`rest` follows its number) -> the original nested names
// `decoder.upsamples.I.upsamples.J`: the resnets, then the upsampler as entry per_block - 1
static char * wan22_up_name(long num, const char * rest, long per_block) {
    char         head[64];
    long         j;
    const char * after;
    snprintf(head, sizeof(head), "decoder.upsamples.%ld.upsamples.", num);
    char * name = vae_name_renumber(rest, ".resnets.", head, 0, 1, &j, &after);
    if (name) {
        return wan_resblock_name(name);
    }
    if (strncmp(rest, ".upsampler.", 11) == 0) {
        name = malloc(strlen(head) + strlen(rest) + 24);
        if (name) {
            sprintf(name, "%s%ld.%s", head, per_block - 1, rest + 11);
        }
    }
    return name;
}

static char * wan_canonical_name(const char * key, const struct vae_naming * naming) {
    static const struct {
        const char * from, * to;
    } plain[] = {
        { "post_quant_conv.", "conv2." },           { "decoder.conv_in.", "decoder.conv1." },
        { "decoder.norm_out.", "decoder.head.0." }, { "decoder.conv_out.", "decoder.head.2." },
        { "decoder.mid_block.attentions.0.", "decoder.middle.1." },
    };
    const long   per_block = naming->per_level;
    long         num, num2;
    const char * rest, * rest2;
    char *       name;
    if (naming->kind == WAN_NAMING_ORIG) {
        return strncmp(key, "decoder.", 8) == 0 || strncmp(key, "conv2.", 6) == 0 ? strdup(key) : NULL;
    }
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        if ((name = vae_name_swap_head(key, plain[i].from, plain[i].to))) {
            return name;
        }
    }
    if ((name = vae_name_renumber(key, "decoder.mid_block.resnets.", "decoder.middle.", 0, 2, &num, &rest))) {
        return wan_resblock_name(name);
    }
    if (strncmp(key, "decoder.up_blocks.", 18) != 0 || (num = vae_name_index(key + 18, &rest)) < 0 ||
        num > VAE_NAME_MAX_INDEX) {
        return NULL;
    }
    if (naming->kind == WAN_NAMING_22_DIFFUSERS) {
        return wan22_up_name(num, rest, per_block);
    }
    if ((name = vae_name_renumber(rest, ".resnets.", "decoder.upsamples.", num * per_block, 1, &num2, &rest2))) {
        return wan_resblock_name(name);
    }
    if (strncmp(rest, ".upsamplers.0.", 14) == 0) {
        name = malloc(strlen(rest) + 32);
        if (name) {
            sprintf(name, "decoder.upsamples.%ld.%s", num * per_block + per_block - 1, rest + 14);
        }
        return name;
    }
    return NULL;
}

// Wan 2.2's head gives 3 x 2x2 channels whose patch order (channel 4c + 2j + i goes to row offset
// i, column offset j; MODELS.md B.8) is the transpose of pixel_shuffle's: its rows are reordered
// so that pixel_shuffle unpatchifies them
// the head's row 4c + 2i + j is the file's 4c + 2j + i (Wan 2.2 unpatchifies in the other order)
static int32_t wan22_head_row(int32_t k, int32_t n) {
    (void) n;
    return (k & ~3) | (k & 1) << 1 | (k >> 1 & 1);
}

static bool wan22_head(struct vae_model * m, char * err, size_t err_size) {
    static const char * names[2] = { "decoder.head.2.weight", "decoder.head.2.bias" };
    for (int i = 0; i < 2; i++) {
        struct vae_weight * w = (struct vae_weight *) vae_model_weight(m, names[i]);
        if (!w || w->n_dims < 1 || w->shape[0] != 12) {
            snprintf(err, err_size, "wan2.2: tensor '%s' is missing or does not give 12 channels (RGB in 2x2 patches)",
                     names[i]);
            return false;
        }
        if (!vae_weights_reorder_rows(w, wan22_head_row, err, err_size)) {
            return false;
        }
    }
    return true;
}

// Wan 2.2 up-block I with a resample adds DupUp3D(Cin, Cout, ft, 2) of its input (MODELS.md B.8):
// output channel o at time offset a and patch position p = 2i + j takes input channel
// (o ft 4 + a 4 + p) / r, r = Cout ft 4 / Cin. It becomes the channel map
// `decoder.upsamples.I.avg_shortcut.weight` [ft Cout s, Cin, 1, 1], row (a Cout + o) s + p, that
// frame_split(ft) and then pixel_shuffle (s = 4) or, where p does not change the channel (4 | r),
// a nearest 2x (s = 1) turn into the shortcut (wan_dup_up). The first step of a stream keeps time
// offset ft - 1 alone: the rows of a = ft - 1, `avg_shortcut_first` where they are not the identity
// (Qwen-Image 2.1's temporal block that halves the width)
static bool wan22_shortcut(struct vae_model * m, int block, char * err, size_t err_size) {
    char name[96];
    snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.0.residual.0.gamma", block);
    const int64_t cin = vae_model_weight(m, name)->shape[0];
    int           j   = 1; // the resample follows the residual blocks
    for (;; j++) {
        snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.%d.residual.0.gamma", block, j);
        if (!vae_model_weight(m, name)) {
            break;
        }
    }
    snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.%d.resample.1.weight", block, j);
    const struct vae_weight * out = vae_model_weight(m, name);
    if (!out) {
        return true; // the last block: no resample, no shortcut
    }
    snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.%d.time_conv.weight", block, j);
    const int64_t ft = vae_model_weight(m, name) ? 2 : 1, cout = out->shape[0];
    if (cin < 1 || cout < 1 || cin > 65536 || cout > 65536 || (cout * ft * 4) % cin != 0) {
        snprintf(err, err_size, "%s: up-block %d goes from %lld to %lld channels%s: not a DupUp3D shortcut this "
                 "build knows", vae_family_variant(&vae_wan_family, m->family)->name, block, (long long) cin,
                 (long long) cout, ft == 2 ? " with temporal upsampling" : "");
        return false;
    }
    // (the first step's rows are the identity where the block keeps its width: (o ft 4 + 4) / (ft 4) = o)
    const int64_t r = cout * ft * 4 / cin, s = r % 4 == 0 ? 1 : 4;
    for (int first = 0; first < (ft == 2 && !(s == 1 && cin == cout) ? 2 : 1); first++) {
        const int64_t a0 = first ? ft - 1 : 0, n = (first ? 1 : ft) * cout * s;
        snprintf(name, sizeof(name), first ? "decoder.upsamples.%d.avg_shortcut_first.weight"
                                           : "decoder.upsamples.%d.avg_shortcut.weight", block);
        int32_t * rows = vae_weights_add_rows(m, name, n, cin, NULL, err, err_size);
        if (!rows) {
            return false;
        }
        for (int64_t k = 0; k < n; k++) {
            const int64_t p = k % s, o = k / s % cout, a = a0 + k / s / cout;
            rows[k]         = (int32_t) ((o * ft * 4 + a * 4 + p) / r);
        }
    }
    return true;
}

static bool wan22_prepare(struct vae_model * m, char * err, size_t err_size) {
    bool ok = wan_image(m) || wan22_head(m, err, err_size);
    for (int i = 0; ok; i++) {
        char name[96];
        snprintf(name, sizeof(name), "decoder.upsamples.%d.upsamples.0.residual.0.gamma", i);
        if (!vae_model_weight(m, name)) {
            break;
        }
        ok = wan22_shortcut(m, i, err, err_size);
    }
    return ok;
}

// Qwen-Image 2.1: its convs as 2-D ones (the original names store them with a time axis of 1),
// its time_convs loaded and ignored (one frame never runs them)
static bool wan_qwen21_weights(struct vae_model * m, char * err, size_t err_size) {
    for (int i = 0; i < m->n_weights; i++) {
        m->weights[i].aux = m->weights[i].aux || strstr(m->weights[i].name, ".time_conv.");
    }
    return vae_weights_drop_time_axis(m, "qwenimage2.1", err, err_size);
}

// Wan 2.1, or Wan 2.2 where the up-blocks nest their entries (`decoder.upsamples.I.upsamples.J`),
// or Qwen-Image 2.1 (nested, 64 latent channels, 2-D convs)
static bool wan_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                        size_t err_size) {
    (void) hdr, (void) want; // (the loader refuses another family)
    const struct vae_weight * post   = vae_model_weight(m, "conv2.weight");
    const struct vae_weight * in     = vae_model_weight(m, "decoder.conv1.weight");
    const bool                nested = vae_model_weight(m, "decoder.upsamples.0.upsamples.0.residual.0.gamma") != NULL;
    m->family         = !nested ? VAE_FAMILY_WAN21 : in && in->shape[1] == 64 ? VAE_FAMILY_QWEN21 : VAE_FAMILY_WAN22;
    m->family_certain = true;
    if (wan_image(m) && !wan_qwen21_weights(m, err, err_size)) {
        return false;
    }
    const int dims = wan_image(m) ? 4 : 5;
    if (!in || in->n_dims != dims || (post && (post->n_dims != dims || post->shape[1] != in->shape[1]))) {
        snprintf(err, err_size, "Wan-style names but no %d-D 'decoder.conv1.weight' matching 'conv2.weight'", dims);
        return false;
    }
    const struct vae_variant * v = vae_family_variant(&vae_wan_family, m->family);
    m->latent_channels           = (int) in->shape[1];
    if (m->latent_channels != v->channels) {
        snprintf(err, err_size, "a %s-style decoder with %d latent channels: only %d is known", v->name,
                 m->latent_channels, v->channels);
        return false;
    }
    m->own_space         = VAE_SPACE_RAW;
    m->scale             = nested ? 16 : 8;
    m->frames_per_latent = wan_image(m) ? 1 : 4;
    m->first_apart       = !wan_image(m);
    m->out_channels      = wan_image(m) ? 4 : 3; // (RGBA)
    m->out_scale         = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset        = 0.5f;
    return !nested || wan22_prepare(m, err, err_size);
}

// raw latents; the diffusion model's are normalized per channel (MODELS.md B.4, B.8)
static const struct vae_variant wan_variants[] = {
    { VAE_FAMILY_WAN21, "wan2.1", "Wan 2.1 VAE: Wan 2.1, Wan 2.2-A14B, Qwen-Image (16 ch)", 16, true,
      .mean = vae_wan21_mean, .std = vae_wan21_std },
    { VAE_FAMILY_WAN22, "wan2.2", "Wan 2.2 VAE of TI2V-5B (48 ch, 16x spatial scale)", 48, true,
      .mean = vae_wan22_mean, .std = vae_wan22_std },
    { VAE_FAMILY_QWEN21, "qwenimage2.1",
      "Qwen-Image 2.1's VAE (64 ch, 16x spatial scale, RGBA with straight alpha; normalized z = x * std + mean)", 64,
      false, .mean = wan_qwen21_mean, .std = wan_qwen21_std },
};

const struct vae_family_desc vae_wan_family = {
    /* .name           = */ "Wan",
    /* .keys           = */ "'decoder.middle.0.residual.0.gamma', 'decoder.mid_block.resnets.0.norm1.gamma'",
    /* .style          = */ NULL,
    /* .variants       = */ VAE_VARIANTS(wan_variants),
    /* .recognise      = */ wan_recognise,
    /* .canonical_name = */ wan_canonical_name,
    /* .prepare        = */ wan_prepare,
    /* .build          = */ NULL,
    /* .causal         = */ &wan_causal_family,
};
