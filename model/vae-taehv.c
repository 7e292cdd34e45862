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

#include "vae-family.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static struct vae_graph * taehv_base_build(const struct vae_model * model, int n, int h, int w, char * err,
                                           size_t err_size) {
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

static struct vae_graph * taehv_super_build(const struct vae_model * model, int n, int h, int w, char * err,
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

static struct vae_graph * taehv_build(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                      size_t err_size) {
    (void) first;
    return vae_model_weight(model, "decoder.0.weight") ? taehv_super_build(model, n, h, w, err, err_size)
                                                       : taehv_base_build(model, n, h, w, err, err_size);
}

// `decoder.K.*` (canonical), the base decoder from `decoder.1`, a super one from the 1x1 `decoder.0`
static int taehv_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    (void) naming, (void) err, (void) err_size;
    return vae_st_header_find(hdr, "decoder.22.bias") &&
           (vae_st_header_find(hdr, "decoder.1.weight") || vae_st_header_find(hdr, "decoder.0.weight"));
}

static char * taehv_canonical_name(const char * key, const struct vae_naming * naming) {
    (void) naming;
    return strncmp(key, "decoder.", 8) == 0 ? strdup(key) : NULL;
}

// The TAEHV variants (MODELS.md §C.3, §I). Upstream's taehv.py picks a configuration from the
// checkpoint's file name; here the latent channels, the output patch (3 p^2 output channels) and
// the decoder's kind (a 'super' one starts with the 1x1 'decoder.0') tell them apart, except the
// 16-channel ones, which share every shape (the first is the default).
// t: the time strides of the three TGrows (their product: frames per latent frame).
static const struct {
    enum vae_family family;
    int             z, patch, t[3];
    bool            super;
} taehv_shapes[] = {
    { VAE_FAMILY_TAEW21, 16, 1, { 1, 2, 2 }, false },   { VAE_FAMILY_TAEHV, 16, 1, { 1, 2, 2 }, false },
    { VAE_FAMILY_TAECVX, 16, 1, { 1, 2, 2 }, false },   { VAE_FAMILY_TAEW22, 48, 2, { 1, 2, 2 }, false },
    { VAE_FAMILY_TAEHV1_5, 32, 2, { 1, 2, 2 }, false }, { VAE_FAMILY_TAELTX2, 128, 4, { 2, 2, 2 }, false },
    { VAE_FAMILY_TAEW22_SUPER, 48, 2, { 1, 2, 2 }, true }, { VAE_FAMILY_TAEHV1_5_SUPER, 32, 2, { 1, 2, 2 }, true },
};

// a SuperMemBlock's depthwise conv [2 C, 1, 7, 7] filters x_t (rows [0, C)) and x_t-1 (rows
// [C, 2 C)); the graph runs it once on x with two filters per channel (channel multiplier 2), so
// row 2c + j is the file's row j C + c
static int32_t taehv_super_dw_row(int32_t k, int32_t n) {
    return (k & 1) * (n / 2) + k / 2;
}

// TAEHV: its MemBlocks convolve [x_t, x_t-1] stacked on channels; the canonical weight is the
// causal conv3d form [Cout, Cin, 2, k, k], tap 0 the previous frame and tap 1 the current one
// the last conv of a 4x4-patch TAEHV (rows 3 x 16): row 16c + 8a + 4b + 2d + e is the file's
// 16c + 8d + 4a + 2e + b, so that two 2x pixel shuffles of its output (the first one's offsets
// d, e the coarse ones) give the file's pixel_shuffle(4)
static int32_t taehv_shuffle4_row(int32_t r, int32_t n) {
    (void) n;
    const int32_t bits = r & 15;
    return (r & ~15) | (bits & 2) << 2 | (bits & 8) >> 1 | (bits & 1) << 1 | (bits & 4) >> 2;
}

// MemBlock convs as causal taps (base), or SuperMemBlock depthwise rows interleaved and 1x1s as
// sparse causal taps (super); the data is rearranged when it is made
static bool taehv_blocks(struct vae_model * m, bool super, char * err, size_t err_size) {
    for (int i = 0; i < m->n_weights; i++) {
        struct vae_weight * w = &m->weights[i];
        const char *        c = strstr(w->name, ".conv.");
        if (!c || w->n_dims != 4) {
            continue;
        }
        if (super && !strcmp(c, ".conv.0.weight") && w->shape[0] % 2 == 0) {
            if (!vae_weights_reorder_rows(w, taehv_super_dw_row, err, err_size)) {
                return false;
            }
            continue;
        }
        if (strcmp(c, super ? ".conv.1.weight" : ".conv.0.weight") || w->shape[1] % 2 != 0) {
            continue;
        }
        w->taps             = !super;
        w->taps_interleaved = super;
        w->n_dims           = 5;
        w->shape[4]         = w->shape[3];
        w->shape[3]         = w->shape[2];
        w->shape[2]         = 2;
        w->shape[1] /= super ? 1 : 2;
    }
    return true;
}

static bool taehv_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                          size_t err_size) {
    (void) hdr;
    const bool                super = vae_model_weight(m, "decoder.0.weight") != NULL;
    const char *              first = super ? "decoder.0.weight" : "decoder.1.weight";
    const struct vae_weight * in    = vae_model_weight(m, first);
    const struct vae_weight * out   = vae_model_weight(m, "decoder.22.weight");
    if (!in || !out || in->n_dims != 4 || out->n_dims != 4) {
        snprintf(err, err_size, "TAEHV-style names but no 4-D '%s' and 'decoder.22.weight'", first);
        return false;
    }
    m->latent_channels = (int) in->shape[1];
    const int64_t rgb  = out->shape[0];
    int           v = -1, same = 0; // the variant (the one asked for among those with the file's shapes)
    for (int i = 0; i < (int) (sizeof(taehv_shapes) / sizeof(taehv_shapes[0])); i++) {
        const int p = taehv_shapes[i].patch;
        if (taehv_shapes[i].z == m->latent_channels && 3 * p * p == rgb &&
            taehv_shapes[i].super == super) {
            v = v < 0 || taehv_shapes[i].family == want ? i : v;
            same++;
        }
    }
    if (v < 0) {
        snprintf(err, err_size,
                 "a TAEHV%s decoder with %d latent channels and %lld output channels: not a variant this build knows "
                 "(taew2_1, taehv, taecvx: 16 and 3; taew2_2: 48 and 12; taehv1_5: 32 and 12; taeltx_2: 128 and 48; "
                 "taew2_2_super: 48 and 12; taehv1_5_super: 32 and 12)",
                 super ? " 'super'" : "", m->latent_channels, (long long) rgb);
        return false;
    }
    m->frames_per_latent = 1;
    for (int stage = 0; stage < 3; stage++) {
        const int s = taehv_shapes[v].t[stage];
        char      name[32];
        snprintf(name, sizeof(name), "decoder.%d.conv.weight", 7 + (super ? 7 : 6) * stage);
        const struct vae_weight * w = vae_model_weight(m, name);
        if (!w || w->n_dims != 4 || w->shape[1] < 1 || w->shape[0] != s * w->shape[1] || w->shape[2] != 1 ||
            w->shape[3] != 1) {
            snprintf(err, err_size,
                     "TAEHV tensor '%s' is missing or is not a 1x1 TGrow of time stride %d ([%d C, C, 1, 1]) as %s has",
                     name, s, s, vae_family_variant(&vae_taehv_family, taehv_shapes[v].family)->name);
            return false;
        }
        m->frames_per_latent *= s;
    }
    if (!taehv_blocks(m, super, err, err_size)) {
        return false;
    }
    const int patch = taehv_shapes[v].patch;
    if (patch == 4) { // (the bias, when there is one, is checked by the builder)
        struct vae_weight * bias = (struct vae_weight *) vae_model_weight(m, "decoder.22.bias");
        if (!vae_weights_reorder_rows((struct vae_weight *) out, taehv_shuffle4_row, err, err_size) ||
            (bias && bias->n_dims == 1 && bias->shape[0] == rgb &&
             !vae_weights_reorder_rows(bias, taehv_shuffle4_row, err, err_size))) {
            return false;
        }
    }
    m->own_space   = VAE_SPACE_NORMALIZED;
    m->scale       = 8 * patch;
    // upstream drops the first t_upscale - 1 frames (taecvx: for an odd latent count, as CogVideoX's
    // 13-latent 49-frame videos have; its streaming wrapper and even counts keep them)
    m->trim_frames = m->frames_per_latent - 1;
    m->out_scale   = 1.0f;
    m->out_offset  = 0.0f;
    m->family         = taehv_shapes[v].family;
    m->family_certain = same == 1;
    return true;
}

// the diffusion model's latents: raw z becomes (z - shift) * scale, or (z - mean) / std for Wan's
static const struct vae_variant taehv_variants[] = {
    { VAE_FAMILY_TAEW21, "taew2_1", "TAEHV tiny decoder for Wan 2.1 latents (16 ch)", 16, true,
      .mean = vae_wan21_mean, .std = vae_wan21_std, .same_shapes = "taew2_1, taehv or taecvx, which share shapes" },
    { VAE_FAMILY_TAEW22, "taew2_2", "TAEHV tiny decoder for Wan 2.2-5B latents (48 ch, 16x spatial scale)", 48, true,
      .mean = vae_wan22_mean, .std = vae_wan22_std },
    { VAE_FAMILY_TAEHV, "taehv", "TAEHV tiny decoder for HunyuanVideo latents (16 ch; raw z becomes z * 0.476986)",
      16, true, 0.476986f, 0.0f },
    { VAE_FAMILY_TAEHV1_5, "taehv1_5",
      "TAEHV tiny decoder for HunyuanVideo 1.5 latents (32 ch, 16x spatial scale; raw z becomes z * 1.03682)", 32,
      true, 1.03682f, 0.0f },
    { VAE_FAMILY_TAELTX2, "taeltx_2",
      "TAEHV tiny decoder for LTX-2 latents (128 ch, 32x spatial scale, 8 frames per latent frame)", 128, true,
      .why_none = "LTX-2 keeps per-channel statistics in its own VAE file" },
    { VAE_FAMILY_TAECVX, "taecvx", "TAEHV tiny decoder for CogVideoX latents (16 ch)", 16, true,
      .why_none = "CogVideoX-2b scales them by 1.15258, -5b by 0.7" },
    { VAE_FAMILY_TAEW22_SUPER, "taew2_2_super",
      "TAEHV 'super' decoder for Wan 2.2-5B latents (48 ch, 16x spatial scale)", 48, true, .mean = vae_wan22_mean,
      .std = vae_wan22_std },
    { VAE_FAMILY_TAEHV1_5_SUPER, "taehv1_5_super",
      "TAEHV 'super' decoder for HunyuanVideo 1.5 latents (32 ch, 16x spatial scale; raw z becomes z * 1.03682)", 32,
      true, 1.03682f, 0.0f },
};

const struct vae_family_desc vae_taehv_family = {
    /* .name           = */ "TAEHV",
    /* .keys           = */ "'decoder.22.bias'",
    /* .style          = */ NULL,
    /* .variants       = */ VAE_VARIANTS(taehv_variants),
    /* .recognise      = */ taehv_recognise,
    /* .canonical_name = */ taehv_canonical_name,
    /* .prepare        = */ taehv_prepare,
    /* .build          = */ taehv_build,
    /* .causal         = */ NULL,
};
