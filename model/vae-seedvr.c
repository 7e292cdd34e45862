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
// (seedvr_upscale) so that frame_split and pixel_shuffle place them.
//
// Everything after the mid block is a list of steps (seedvr_steps: a ResNet block's two
// halves, an Upsample3D, the output conv), each reaching one pixel. With the head they are
// seedvr_causal_family: the whole-sequence graph (vae_causal_build) chains them, and the tiled decode
// (vae-tile-video.c) runs them one frame at a time over tiles, giving each normalizing step the
// GroupNorm statistics of its whole input frame.

#include "vae-family.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEEDVR_GROUPS 32     // norm_num_groups of s8_c16_t4_inflation_sd3.yaml
#define SEEDVR_EPS    1e-6f

// GroupNorm `name` on each frame, or with the whole frame's statistics `stats` (an input; NULL: its own)
static struct vae_tensor * seedvr_norm(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                       enum vae_act act, struct vae_tensor * stats) {
    const int64_t       shape[1] = { x->ne[1] };
    struct vae_tensor * gamma    = vae_builder_weight(b, 1, shape, "%s.weight", name);
    struct vae_tensor * beta     = vae_builder_weight(b, 1, shape, "%s.bias", name);
    if (!b->failed && x->ne[1] % SEEDVR_GROUPS != 0) {
        return vae_builder_fail(b, "%s: %lld channels are not a multiple of %d groups", name, (long long) x->ne[1],
                                SEEDVR_GROUPS);
    }
    if (b->failed) {
        return NULL;
    }
    return stats ? vae_graph_group_norm_stats(b->g, x, SEEDVR_GROUPS, SEEDVR_EPS, gamma, beta, act, stats)
                 : vae_graph_group_norm(b->g, x, SEEDVR_GROUPS, SEEDVR_EPS, gamma, beta, act);
}

// causal 3x3x3 conv `name` with bias on x, adding r (or NULL); its history starts as its first frame
static struct vae_tensor * seedvr_causal(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                         struct vae_tensor * r) {
    return vae_builder_conv3d(b, x, name, 3, 3, r, VAE_CAUSAL_FIRST_FRAME);
}

// conv(SiLU(GN(x))) + r: the norm `<name>.<norm>`, the causal conv `<name>.<conv>`
static struct vae_tensor * seedvr_norm_conv(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                            const char * norm, const char * conv, struct vae_tensor * r,
                                            struct vae_tensor * stats) {
    char n[128];
    snprintf(n, sizeof(n), "%s%s", name, norm);
    struct vae_tensor * y = seedvr_norm(b, x, n, VAE_ACT_SILU, stats);
    snprintf(n, sizeof(n), "%s%s", name, conv);
    return y ? seedvr_causal(b, y, n, r) : NULL;
}

// the mid block's attention, per frame: x + to_out(attention(to_qkv(GN(x)))), one head
static struct vae_tensor * seedvr_attention(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    char n[128];
    snprintf(n, sizeof(n), "%s.group_norm", name);
    struct vae_tensor * t = seedvr_norm(b, x, n, VAE_ACT_NONE, NULL);
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
    struct vae_tensor * t = vae_builder_conv3d(b, x, n, 1, 1, NULL, 0);     // [N, zr 4C, H, W]
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

// the steps after the mid block (see vae_causal_step); a ResnetBlock3D is two, its first keeping
// the block's input (slot 0) for the second's shortcut
enum seedvr_step_kind {
    SEEDVR_STEP_RES_A,    // conv1(SiLU(norm1(x)))                         name: the resnet
    SEEDVR_STEP_RES_B,    // conv2(SiLU(norm2(x))) + [conv_shortcut](r)    name: the resnet
    SEEDVR_STEP_UPSAMPLE, // Upsample3D                                     name: the upsampler
    SEEDVR_STEP_OUT,      // conv_out(SiLU(conv_norm_out(x)))
};

// a ResnetBlock3D's two steps into s[0], s[1] (widths 0 where a conv is missing: the build names it)
static void seedvr_resnet_steps(const struct vae_model * m, const char * name, struct vae_causal_step * s) {
    const int cin = vae_model_dim(m, name, ".conv1.weight", 1), mid = vae_model_dim(m, name, ".conv1.weight", 0);
    s[0] = (struct vae_causal_step) { .kind = SEEDVR_STEP_RES_A, .cin = cin, .cout = mid, .up = 1, .frames = 1,
                                      .save = 1, .res = -1, .groups = SEEDVR_GROUPS, .eps = SEEDVR_EPS };
    s[1] = (struct vae_causal_step) { .kind = SEEDVR_STEP_RES_B, .cin = mid, .rin = cin, .up = 1, .frames = 1,
                                      .cout = vae_model_dim(m, name, ".conv2.weight", 0), .res = 0,
                                      .groups = SEEDVR_GROUPS, .eps = SEEDVR_EPS };
    snprintf(s[0].name, sizeof(s[0].name), "%s", name);
    snprintf(s[1].name, sizeof(s[1].name), "%s", name);
}

static int seedvr_steps(const struct vae_model * m, struct vae_causal_step * steps, int max) {
    int n = 0;
    // up-blocks of resnets, each but the last ending in an Upsample3D
    for (int i = 0;; i++) {
        char block[32], name[64];
        snprintf(block, sizeof(block), "decoder.up_blocks.%d", i);
        if (!vae_model_dim(m, block, ".resnets.0.norm1.weight", 0)) {
            break;
        }
        for (int j = 0; n + 2 <= max; j++) {
            snprintf(name, sizeof(name), "%s.resnets.%d", block, j);
            if (!vae_model_dim(m, name, ".norm1.weight", 0)) {
                break;
            }
            seedvr_resnet_steps(m, name, steps + n);
            n += 2;
        }
        snprintf(name, sizeof(name), "%s.upsamplers.0", block);
        const int c = vae_model_dim(m, name, ".upscale_conv.weight", 1);
        if (c > 0 && n < max) { // (zr 4C rows: 2 frames for zr = 2, see seedvr_upsample)
            const int rows = vae_model_dim(m, name, ".upscale_conv.weight", 0);
            steps[n] = (struct vae_causal_step) { .kind = SEEDVR_STEP_UPSAMPLE, .cin = c, .up = 2, .res = -1,
                                                  .cout = vae_model_dim(m, name, ".conv.weight", 0),
                                                  .frames = rows / (4 * c) };
            snprintf(steps[n++].name, sizeof(steps[0].name), "%s", name);
        }
    }
    if (n < max) {
        steps[n++] = (struct vae_causal_step) { .kind = SEEDVR_STEP_OUT, .name = "decoder.conv_out", .res = -1,
                                                .cin  = vae_model_dim(m, "decoder.conv_out", ".weight", 1),
                                                .cout = vae_model_dim(m, "decoder.conv_out", ".weight", 0),
                                                .up = 1, .frames = 1, .groups = SEEDVR_GROUPS, .eps = SEEDVR_EPS };
    }
    return n;
}

// step s on x (and r, the activation of its residual slot); stats: NULL (each frame's own), or the
// input holding the whole frame's statistics for the step's GroupNorm
static struct vae_tensor * seedvr_step(struct vae_builder * b, const struct vae_causal_step * s, struct vae_tensor * x,
                                       struct vae_tensor * r, struct vae_tensor * stats, bool first) {
    char n[128];
    switch (s->kind) {
        case SEEDVR_STEP_RES_A: return seedvr_norm_conv(b, x, s->name, ".norm1", ".conv1", NULL, stats);
        case SEEDVR_STEP_RES_B:
            snprintf(n, sizeof(n), "%s.conv_shortcut", s->name);
            if (vae_model_dim(b->model, n, ".weight", 0)) {
                r = vae_builder_conv3d(b, r, n, 1, 1, NULL, 0);             // [N, Cout, H, W]
            }
            return r ? seedvr_norm_conv(b, x, s->name, ".norm2", ".conv2", r, stats) : NULL;
        case SEEDVR_STEP_UPSAMPLE: return seedvr_upsample(b, x, s->name, first);
        default: {
            struct vae_tensor * y = seedvr_norm_conv(b, x, "decoder", ".conv_norm_out", ".conv_out", NULL, stats);
            if (y && y->ne[1] != 3) {
                return vae_builder_fail(b, "tensor 'decoder.conv_out.weight' gives %lld output channels, not 3 (RGB)",
                                        (long long) y->ne[1]);
            }
            return y;                                                           // [N', 3, 8h, 8w]
        }
    }
}

// conv_in and the mid block: [N, 16, h, w] -> [N, 512, h, w]
static struct vae_tensor * seedvr_head(struct vae_builder * b, struct vae_tensor * x) {
    x = seedvr_causal(b, x, "decoder.conv_in", NULL);
    for (int i = 0; i < 2 && x; i++) {
        char                   name[48];
        struct vae_causal_step s[2];
        snprintf(name, sizeof(name), "decoder.mid_block.resnets.%d", i);
        seedvr_resnet_steps(b->model, name, s);
        struct vae_tensor * y = seedvr_step(b, &s[0], x, NULL, NULL, false);
        x                     = y ? seedvr_step(b, &s[1], y, x, NULL, false) : NULL;
        x                     = x && i == 0 ? seedvr_attention(b, x, "decoder.mid_block.attentions.0") : x;
    }
    return x;
}

static const struct vae_causal_family seedvr_causal_family = {
    /* .steps = */ seedvr_steps,
    /* .head  = */ seedvr_head,
    /* .step  = */ seedvr_step,
};

// diffusers-like names with 5-D convs, told from an AutoencoderKL's by the upscale convs
static int seedvr_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    (void) naming, (void) err, (void) err_size;
    return vae_st_header_find(hdr, "decoder.up_blocks.0.upsamplers.0.upscale_conv.weight") ||
           vae_st_header_find(hdr, "decoder.up_blocks.0.upsamplers.0.upscale_conv.bias");
}

static char * seedvr_canonical_name(const char * key, const struct vae_naming * naming) {
    (void) naming;
    return strncmp(key, "decoder.", 8) == 0 ? strdup(key) : NULL;
}

// SeedVR2's `upscale_conv` w [C r, C, 1, 1, 1] (r = 8: 2x in time and space, 4: space) gives
// channel ((2 i + j) zr + z) C + c to frame offset z and pixel offset (i, j) (einops
// "b (x y z c) f h w -> b c (f z) (h x) (w y)"); its rows (and its bias's) become (z C + c) 4 + 2 i
// + j, the order that frame_split(zr) then pixel_shuffle place
static bool seedvr_upscale(struct vae_model * m, int block, char * err, size_t err_size) {
    char name[96];
    snprintf(name, sizeof(name), "decoder.up_blocks.%d.upsamplers.0.upscale_conv.weight", block);
    struct vae_weight * w = (struct vae_weight *) vae_model_weight(m, name);
    snprintf(name, sizeof(name), "decoder.up_blocks.%d.upsamplers.0.upscale_conv.bias", block);
    struct vae_weight * b = (struct vae_weight *) vae_model_weight(m, name);
    if (!w && !b) {
        return true; // no upsampler (the last block), or one the build finds incomplete
    }
    const int64_t c = w && w->n_dims == 5 ? w->shape[1] : 0, n = w ? w->shape[0] : 0;
    if (!w || !b || c < 1 || (n != 8 * c && n != 4 * c) || w->shape[2] != 1 || w->shape[3] != 1 || w->shape[4] != 1 ||
        b->n_dims != 1 || b->shape[0] != n) {
        snprintf(err, err_size, "seedvr2: tensor '%.*s' is missing or is not an upscale conv [8 C or 4 C, C, 1, 1, 1] "
                 "with a bias", (int) strlen(name) - 5, name);
        return false;
    }
    int32_t * rows[2] = { malloc((size_t) n * sizeof(int32_t)), malloc((size_t) n * sizeof(int32_t)) };
    if (!rows[0] || !rows[1]) {
        free(rows[0]);
        free(rows[1]);
        snprintf(err, err_size, "out of memory");
        return false;
    }
    const int64_t zr = n / (4 * c);
    for (int64_t k = 0; k < n; k++) {
        const int64_t z = k / (4 * c), ch = k / 4 % c, i = k / 2 % 2, j = k % 2;
        rows[0][k] = rows[1][k] = (int32_t) (((2 * i + j) * zr + z) * c + ch);
    }
    w->rows = rows[0];
    b->rows = rows[1];
    return true;
}

// SeedVR2 (MODELS.md §I): 16 latent channels, its attention's q, k, v joined, the upscale convs
// reordered
static bool seedvr_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                           size_t err_size) {
    (void) hdr, (void) want;
    static const char *       parts[] = { "to_q", "to_k", "to_v", "to_out.0" };
    const struct vae_weight * in      = vae_model_weight(m, "decoder.conv_in.weight");
    if (!in || in->n_dims != 5) {
        snprintf(err, err_size, "SeedVR2-style names but no 5-D 'decoder.conv_in.weight' (a causal 3x3x3 conv)");
        return false;
    }
    m->latent_channels = (int) in->shape[1];
    if (m->latent_channels != 16) {
        snprintf(err, err_size, "a SeedVR2-style decoder with %d latent channels: only 16 is known",
                 m->latent_channels);
        return false;
    }
    if (!vae_weights_join_attention(m, "seedvr2", "decoder.mid_block.attentions.0", parts, "to_qkv", err, err_size)) {
        return false;
    }
    for (int i = 0; i <= VAE_NAME_MAX_INDEX; i++) {
        char name[96];
        snprintf(name, sizeof(name), "decoder.up_blocks.%d.resnets.0.norm1.weight", i);
        if (!vae_model_weight(m, name)) {
            break;
        }
        if (!seedvr_upscale(m, i, err, err_size)) {
            return false;
        }
    }
    m->own_space         = VAE_SPACE_RAW;
    m->scale             = 8;
    m->frames_per_latent = 4;
    m->first_apart       = true; // the first step drops the frame its temporal upsamplers duplicate
    m->out_scale         = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset        = 0.5f;
    m->family            = VAE_FAMILY_SEEDVR2;
    m->family_certain    = true;
    return true;
}

// raw latents; the diffusion model's are scaled by 0.9152 (configs_*b/main.yaml)
static const struct vae_variant seedvr_variants[] = {
    { VAE_FAMILY_SEEDVR2, "seedvr2", "SeedVR2's causal video VAE (16 ch; normalized z = x / 0.9152)", 16, true,
      0.9152f, 0.0f },
};

const struct vae_family_desc vae_seedvr_family = {
    /* .name           = */ "SeedVR2",
    /* .keys           = */ "'decoder.up_blocks.0.upsamplers.0.upscale_conv.weight'",
    /* .style          = */ NULL,
    /* .variants       = */ VAE_VARIANTS(seedvr_variants),
    /* .recognise      = */ seedvr_recognise,
    /* .canonical_name = */ seedvr_canonical_name,
    /* .prepare        = */ seedvr_prepare,
    /* .build          = */ NULL,
    /* .causal         = */ &seedvr_causal_family,
};
