// Graph builder for the HunyuanVideo 1.5 VAE decoder (MODELS.md J.2; diffusers'
// AutoencoderKLHunyuanVideo15, Tencent's original names as ComfyUI repackages them): 32 latent
// channels, 16x in space, 4x in time, causal in time. Its 3x3x3 convs pad like
// F.pad(mode="replicate"): two copies of the first frame in front and the edge pixels around
// (VAE_CAUSAL_FIRST_FRAME | VAE_CAUSAL_REPLICATE); its norms are Wan's RMS norm; conv_in adds the
// latent repeated to its width; the mid block's attention runs over every position of the clip,
// block-causal (a frame sees itself and the frames before it), which a stream computes exactly with
// a key/value cache of every earlier latent frame (VAE_OP_CAUSAL_ATTENTION): the one part of the
// state that grows with the clip, by 2 C h w values a latent frame at the latent resolution (1024
// channels: 8 KiB a latent pixel in f32, 29.5 MB a latent frame at 720p).
//
// Its upsamplers are a causal conv to F C channels (F = 8 in time and space, 4 in space) that a
// DC-AE-style rearrangement turns into 2 frames (F = 8) of 2x2 pixels, plus a shortcut, the input
// repeated to the same channels and rearranged the same way. The loader reorders the conv's rows
// into the order frame_split(2) and pixel_shuffle place, and makes the shortcut a channel map (a
// 1x1 conv of 0s and 1s) added as the conv's residual. The first frame of a stream stays one
// frame: it takes other rows of the conv (upstream keeps the first half of its sub-position's
// channels) and another map, weights of their own the first step's graph uses.
//
// Everything after the mid block is a list of steps, each a conv or two that reach one pixel, so
// that vae-tile-video.c tiles it exactly (a tile at the frame's edge replicates the edge pixels as
// the whole frame does; inside, its border comes from the neighbours). Names are the original ones.

#include "vae-family.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HYV15_EDGES (VAE_CAUSAL_FIRST_FRAME | VAE_CAUSAL_REPLICATE)

// RMS norm with the gamma `name` ([C, 1, 1, 1])
static struct vae_tensor * hyv15_rms(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                     enum vae_act act) {
    struct vae_tensor * gamma = vae_builder_weight(b, 4, (const int64_t[]) { x->ne[1], 1, 1, 1 }, "%s", name);
    return gamma ? vae_graph_rms_norm(b->g, x, gamma, act) : NULL;
}

// the causal conv `name` (`name.conv.weight`, `.bias`) on act(RMS(x)) with the gamma `norm` (or on x
// when norm is NULL), adding r
static struct vae_tensor * hyv15_norm_conv(struct vae_builder * b, struct vae_tensor * x, const char * norm,
                                           const char * name, struct vae_tensor * r) {
    char n[112];
    x = norm ? hyv15_rms(b, x, norm, VAE_ACT_SILU) : x;
    snprintf(n, sizeof(n), "%s.conv", name);
    return x ? vae_builder_conv3d(b, x, n, 3, 3, r, HYV15_EDGES) : NULL;
}

// the steps after the mid block (see vae_causal_step)
enum hyv15_step_kind {
    HYV15_STEP_RES_A,    // conv1(SiLU(RMS_1(x)))                               name: the resnet
    HYV15_STEP_RES_B,    // conv2(SiLU(RMS_2(x))) + r                           name: the resnet
    HYV15_STEP_UPSAMPLE, // conv(x) + shortcut(x), into 2 frames (temporal) of 2x2 pixels   name: the upsampler
    HYV15_STEP_HEAD,     // conv_out(SiLU(norm_out(x)))
};

// resnet `name`'s half: norm1 and conv1, or norm2 and conv2 adding r
static struct vae_tensor * hyv15_res(struct vae_builder * b, struct vae_tensor * x, const char * name, bool second,
                                     struct vae_tensor * r) {
    char n[96], c[96];
    snprintf(n, sizeof(n), "%s.norm%d.gamma", name, second ? 2 : 1);
    snprintf(c, sizeof(c), "%s.conv%d", name, second ? 2 : 1);
    return hyv15_norm_conv(b, x, n, c, r);
}

// upsampler `name` on x [N, Cin, H, W]: conv (rows reordered) + the shortcut map of x, then
// frame_split(2) where it upsamples time, then pixel_shuffle -> [N', C, 2H, 2W]; the first step of
// a stream takes the `_first` weights and keeps one frame
static struct vae_tensor * hyv15_upsample(struct vae_builder * b, const struct vae_causal_step * s,
                                          struct vae_tensor * x, bool first) {
    char          n[96];
    const bool    one = s->frames == 1 || first;
    const int64_t f   = (s->frames == 2 && !first ? 2 : 1) * 4;
    snprintf(n, sizeof(n), "%s.shortcut%s.weight", s->name, one && s->frames == 2 ? "_first" : "");
    struct vae_tensor * map = vae_builder_weight(b, 4, (const int64_t[]) { f * s->cout, x->ne[1], 1, 1 }, "%s", n);
    struct vae_tensor * r   = map ? vae_graph_conv2d(b->g, x, map, NULL, NULL, VAE_ACT_NONE) : NULL; // [N, F C, H, W]
    snprintf(n, sizeof(n), "%s.conv%s.conv", s->name, one && s->frames == 2 ? "_first" : "");
    struct vae_tensor * y = r ? vae_builder_conv3d(b, x, n, 3, 3, r, HYV15_EDGES) : NULL;       // [N, F C, H, W]
    y = y && !one ? vae_graph_frame_split(b->g, y, 2) : y;                                      // [N', 4C, H, W]
    return y ? vae_graph_pixel_shuffle(b->g, y) : NULL;                                          // [N', C, 2H, 2W]
}

static struct vae_tensor * hyv15_step(struct vae_builder * b, const struct vae_causal_step * s, struct vae_tensor * x,
                                      struct vae_tensor * r, struct vae_tensor * stats, bool first) {
    (void) stats;
    switch (s->kind) {
        case HYV15_STEP_RES_A:
            return hyv15_res(b, x, s->name, false, NULL);
        case HYV15_STEP_RES_B:
            return hyv15_res(b, x, s->name, true, r);
        case HYV15_STEP_UPSAMPLE:
            return hyv15_upsample(b, s, x, first);
        default: {
            struct vae_tensor * y = hyv15_norm_conv(b, x, "decoder.norm_out.gamma", "decoder.conv_out", NULL);
            if (y && y->ne[1] != 3) {
                return vae_builder_fail(b, "tensor 'decoder.conv_out.conv.weight' gives %lld output channels, not 3",
                                        (long long) y->ne[1]);
            }
            return y;                                                                   // [N', 3, 16h, 16w]
        }
    }
}

// the up-blocks' resnets and upsamplers, then the head
static int hyv15_steps(const struct vae_model * m, struct vae_causal_step * steps, int max) {
    int n = 0;
    for (int i = 0; i <= VAE_NAME_MAX_INDEX; i++) {
        char block[24], name[64];
        snprintf(block, sizeof(block), "decoder.up.%d", i);
        if (!vae_model_dim(m, block, ".block.0.norm1.gamma", 0)) {
            break;
        }
        for (int j = 0; n + 2 <= max; j++) {
            snprintf(name, sizeof(name), "%s.block.%d", block, j);
            const int cin = vae_model_dim(m, name, ".norm1.gamma", 0);
            if (!cin) {
                break;
            }
            const int mid = vae_model_dim(m, name, ".conv1.conv.weight", 0);
            steps[n++]    = (struct vae_causal_step) { .kind = HYV15_STEP_RES_A, .cin = cin, .cout = mid, .up = 1,
                                                       .frames = 1, .save = 1, .res = -1 };
            steps[n++] = (struct vae_causal_step) { .kind = HYV15_STEP_RES_B, .cin = mid, .rin = cin, .up = 1,
                                                    .frames = 1, .res = 0,
                                                    .cout = vae_model_dim(m, name, ".conv2.conv.weight", 0) };
            snprintf(steps[n - 2].name, sizeof(steps[n - 2].name), "%s", name);
            snprintf(steps[n - 1].name, sizeof(steps[n - 1].name), "%s", name);
        }
        snprintf(name, sizeof(name), "%s.upsample", block);
        const int cout = vae_model_dim(m, name, ".shortcut.weight", 0);
        if (cout && n < max) {
            steps[n] = (struct vae_causal_step) { .kind = HYV15_STEP_UPSAMPLE, .up = 2, .res = -1,
                                                  .cin = vae_model_dim(m, name, ".conv.conv.weight", 1) };
            snprintf(name, sizeof(name), "%s.upsample.shortcut_first.weight", block);
            steps[n].frames = vae_model_weight(m, name) ? 2 : 1;
            steps[n].cout   = cout / (steps[n].frames * 4);
            snprintf(steps[n].name, sizeof(steps[n].name), "%s.upsample", block);
            n++;
        }
    }
    if (n < max) {
        steps[n++] = (struct vae_causal_step) { .kind = HYV15_STEP_HEAD, .name = "decoder.head", .res = -1, .up = 1,
                                                .frames = 1, .cout = 3,
                                                .cin = vae_model_dim(m, "decoder.conv_out", ".conv.weight", 1) };
    }
    return n;
}

// conv_in plus the latent repeated to its width, then the mid block: resnet, block-causal
// attention over the stream's frames, resnet: [N, 32, h, w] -> [N, C, h, w]
static struct vae_tensor * hyv15_head(struct vae_builder * b, struct vae_tensor * x) {
    struct vae_tensor * r = x;
    if (vae_model_weight(b->model, "decoder.conv_in.shortcut.weight")) {
        r = vae_builder_conv2d(b, x, "decoder.conv_in.shortcut", 1, false, NULL, VAE_ACT_NONE, false); // [N, C, h, w]
    }
    x = r ? hyv15_norm_conv(b, x, NULL, "decoder.conv_in", r) : NULL;                  // [N, C, h, w]
    for (int i = 1; i <= 2 && x; i++) {
        char name[32];
        snprintf(name, sizeof(name), "decoder.mid.block_%d", i);
        struct vae_tensor * y = hyv15_res(b, x, name, false, NULL);
        x                     = y ? hyv15_res(b, y, name, true, x) : NULL;
        if (i == 1 && x) { // x + proj_out(attention(qkv(RMS(x))))
            struct vae_tensor * t = hyv15_rms(b, x, "decoder.mid.attn_1.norm.gamma", VAE_ACT_NONE);
            t = t ? vae_builder_conv2d(b, t, "decoder.mid.attn_1.qkv", 1, true, NULL, VAE_ACT_NONE, false) : NULL;
            t = t ? vae_graph_causal_attention(b->g, t, b->n_slots++) : NULL;          // [N, C, h, w]
            x = t ? vae_builder_conv2d(b, t, "decoder.mid.attn_1.proj_out", 1, true, x, VAE_ACT_NONE, false) : NULL;
        }
    }
    return x;
}

static const struct vae_causal_family hyv15_causal_family = {
    /* .steps = */ hyv15_steps,
    /* .head  = */ hyv15_head,
    /* .step  = */ hyv15_step,
};

enum hyv15_naming {
    HYV15_NAMING_ORIG,       // `decoder.mid.block_1.*`, `decoder.up.I.block.J.*` (canonical)
    HYV15_NAMING_DIFFUSERS,  // `decoder.mid_block.resnets.0.*`, `decoder.up_blocks.I.resnets.J.*`
};

// a causal conv_in (`.conv.` inside) and the mid block's attention in either naming
static int hyv15_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    (void) err, (void) err_size;
    if (!vae_st_header_find(hdr, "decoder.conv_in.conv.weight")) {
        return 0;
    }
    if (vae_st_header_find(hdr, "decoder.mid.attn_1.q.weight")) {
        naming->kind = HYV15_NAMING_ORIG;
        return 1;
    }
    if (vae_st_header_find(hdr, "decoder.mid_block.attentions.0.to_q.weight")) {
        naming->kind = HYV15_NAMING_DIFFUSERS;
        return 1;
    }
    return 0;
}

// diffusers' names -> the original ones (the inverse of diffusers' conversion script); a decoder
// name neither knows stays as it is, for the loader to refuse as unused
static char * hyv15_canonical_name(const char * key, const struct vae_naming * naming) {
    static const struct {
        const char * from, * to;
    } plain[] = {
        { "decoder.mid_block.resnets.0.", "decoder.mid.block_1." },
        { "decoder.mid_block.resnets.1.", "decoder.mid.block_2." },
        { "decoder.mid_block.attentions.0.to_q.", "decoder.mid.attn_1.q." },
        { "decoder.mid_block.attentions.0.to_k.", "decoder.mid.attn_1.k." },
        { "decoder.mid_block.attentions.0.to_v.", "decoder.mid.attn_1.v." },
        { "decoder.mid_block.attentions.0.", "decoder.mid.attn_1." },
    };
    long         num;
    const char * rest;
    char *       name;
    if (strncmp(key, "decoder.", 8) != 0) {
        return NULL;
    }
    if (naming->kind == HYV15_NAMING_ORIG) {
        return strdup(key);
    }
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        if ((name = vae_name_swap_head(key, plain[i].from, plain[i].to))) {
            return name;
        }
    }
    if (strncmp(key, "decoder.up_blocks.", 18) == 0 && (num = vae_name_index(key + 18, &rest)) >= 0 &&
        num <= VAE_NAME_MAX_INDEX) {
        const bool res = strncmp(rest, ".resnets.", 9) == 0, up = strncmp(rest, ".upsamplers.0.", 14) == 0;
        if (res || up) {
            name = malloc(strlen(rest) + 32);
            if (name) {
                sprintf(name, "decoder.up.%ld.%s%s", num, res ? "block." : "upsample.", rest + (res ? 9 : 14));
            }
            return name;
        }
    }
    return strdup(key);
}

// a new weight `name`: rows `from` of the file tensor behind the weight `of` (the first frame's
// conv and bias)
static bool hyv15_pick(struct vae_model * m, const char * of, const char * name, int64_t n, const int32_t * from,
                       char * err, size_t err_size) {
    const struct vae_weight *    w = vae_model_weight(m, of); // (adding a weight moves them all)
    const struct vae_st_tensor * src = w->src[0];
    const int                    n_dims = w->n_dims;
    int64_t                      shape[VAE_ST_MAX_DIMS];
    memcpy(shape, w->shape, sizeof(shape));
    shape[0] = n;
    if (!vae_weights_add(m, name, n_dims, shape, &src, 1)) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    return vae_weights_set_rows((struct vae_weight *) vae_model_weight(m, name), from, err, err_size);
}

// upsampler of up-block i, Cin -> C channels (MODELS.md J.2): its conv [F C, Cin, 3, 3, 3] gives
// channel ((a 2 + y) 2 + x) C + c (F = 8: frame offset a) or (y 2 + x) C + c (F = 4) to output
// channel c at pixel offset (y, x): its rows become a 4C + 4c + 2y + x, frame_split's and
// pixel_shuffle's order; the shortcut of that row is input channel ((a 4 + 2y + x) C + c) / rep,
// rep = F C / Cin. The first frame (F = 8) takes conv row (2y + x) 2C + c and input channel
// (2y + x) Cin/4 + c / (rep/2) instead, as `conv_first` and `shortcut_first`
static bool hyv15_upsampler(struct vae_model * m, int i, char * err, size_t err_size) {
    char name[96], wname[64], bname[64];
    snprintf(wname, sizeof(wname), "decoder.up.%d.upsample.conv.conv.weight", i);
    snprintf(bname, sizeof(bname), "decoder.up.%d.upsample.conv.conv.bias", i);
    const struct vae_weight * w    = vae_model_weight(m, wname);
    const struct vae_weight * bias = vae_model_weight(m, bname);
    snprintf(name, sizeof(name), "decoder.up.%d.block.0.norm1.gamma", i + 1);
    const struct vae_weight * next = vae_model_weight(m, name);
    if (!w && !bias) {
        return true; // the last block (a build missing one names it)
    }
    const int64_t cin = w && w->n_dims == 5 ? w->shape[1] : 0, n = w ? w->shape[0] : 0, c = next ? next->shape[0] : 0;
    const int64_t f = c > 0 && n % c == 0 ? n / c : 0, rep = cin > 0 && (f * c) % cin == 0 ? f * c / cin : 0;
    if (!bias || bias->n_dims != 1 || bias->shape[0] != n || (f != 8 && f != 4) || rep < 1 || (f == 8 && rep % 2) ||
        cin % 4 || n > INT32_MAX) {
        snprintf(err, err_size, "hunyuanvideo1.5: tensor 'decoder.up.%d.upsample.conv.conv.weight' or its bias is missing "
                 "or is not an upsampler from %lld channels to 8 or 4 times the %lld of up-block %d", i, (long long) cin,
                 (long long) c, i + 1);
        return false;
    }
    snprintf(name, sizeof(name), "decoder.up.%d.upsample.shortcut.weight", i);
    int32_t * from = malloc((size_t) n * sizeof(int32_t));
    int32_t * map  = from ? vae_weights_add_rows(m, name, n, cin, NULL, err, err_size) : NULL;
    bool      ok   = map != NULL;
    for (int64_t k = 0; ok && k < n; k++) { // k = a 4C + 4c + p
        const int64_t a = k / (4 * c), ch = k / 4 % c, p = k % 4, src = (a * 4 + p) * c + ch;
        from[k] = (int32_t) src;
        map[k]  = (int32_t) (src / rep);
    }
    // (w and bias moved with the weight added: found again)
    ok = ok && vae_weights_set_rows((struct vae_weight *) vae_model_weight(m, wname), from, err, err_size) &&
         vae_weights_set_rows((struct vae_weight *) vae_model_weight(m, bname), from, err, err_size);
    if (ok && f == 8) { // k = 4c + p
        for (int64_t k = 0; k < 4 * c; k++) {
            from[k] = (int32_t) ((k % 4) * 2 * c + k / 4);
        }
        snprintf(name, sizeof(name), "decoder.up.%d.upsample.conv_first.conv.weight", i);
        ok = hyv15_pick(m, wname, name, 4 * c, from, err, err_size);
        snprintf(name, sizeof(name), "decoder.up.%d.upsample.conv_first.conv.bias", i);
        ok = ok && hyv15_pick(m, bname, name, 4 * c, from, err, err_size);
        snprintf(name, sizeof(name), "decoder.up.%d.upsample.shortcut_first.weight", i);
        int32_t * first = ok ? vae_weights_add_rows(m, name, 4 * c, cin, NULL, err, err_size) : NULL;
        for (int64_t k = 0; first && k < 4 * c; k++) {
            first[k] = (int32_t) ((k % 4) * (cin / 4) + (k / 4) / (rep / 2));
        }
        ok = first != NULL;
    }
    if (!from) {
        snprintf(err, err_size, "out of memory");
    }
    free(from);
    return ok;
}

// 32 latent channels; conv_in's shortcut map, the attention's q, k, v joined, the upsamplers
static bool hyv15_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                          size_t err_size) {
    (void) hdr, (void) want;
    static const char *       parts[] = { "q", "k", "v", "proj_out" };
    const struct vae_weight * in      = vae_model_weight(m, "decoder.conv_in.conv.weight");
    if (!in || in->n_dims != 5 || in->shape[1] != 32 || in->shape[0] < 32 || in->shape[0] % 32 || in->shape[0] > INT32_MAX) {
        snprintf(err, err_size, "hunyuanvideo1.5: 'decoder.conv_in.conv.weight' is missing or is not a 3x3x3 conv from "
                 "the 32 latent channels to a multiple of 32");
        return false;
    }
    const int64_t c = in->shape[0], rep = c / 32; // (before weights are added: that moves them)
    m->latent_channels = 32;
    if (!vae_weights_join_attention(m, "hunyuanvideo1.5", "decoder.mid.attn_1", parts, "qkv", err, err_size)) {
        return false;
    }
    if (rep > 1) { // conv_in adds the latent repeat_interleave'd to its width: channel k is z's k / rep
        int32_t * map = vae_weights_add_rows(m, "decoder.conv_in.shortcut.weight", c, 32, NULL, err, err_size);
        for (int64_t k = 0; map && k < c; k++) {
            map[k] = (int32_t) (k / rep);
        }
        if (!map) {
            return false;
        }
    }
    for (int i = 0; i <= VAE_NAME_MAX_INDEX; i++) {
        char name[64];
        snprintf(name, sizeof(name), "decoder.up.%d.block.0.norm1.gamma", i);
        if (!vae_model_weight(m, name)) {
            break;
        }
        if (!hyv15_upsampler(m, i, err, err_size)) {
            return false;
        }
    }
    m->family            = VAE_FAMILY_HYVIDEO15;
    m->family_certain    = true;
    m->own_space         = VAE_SPACE_RAW;
    m->scale             = 16;
    m->frames_per_latent = 4;
    m->first_apart       = true; // the first latent frame stays one frame in the temporal upsamplers
    m->out_scale         = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset        = 0.5f;
    return true;
}

// raw latents; the diffusion model's are scaled by 1.03682 (the pipeline decodes x / scaling_factor)
static const struct vae_variant hyv15_variants[] = {
    { VAE_FAMILY_HYVIDEO15, "hunyuanvideo1.5",
      "HunyuanVideo 1.5 VAE (32 ch, 16x, causal video; normalized z = x / 1.03682)", 32, true, 1.03682f, 0.0f },
};

const struct vae_family_desc vae_hyv15_family = {
    /* .name           = */ "HunyuanVideo 1.5",
    /* .keys           = */ "'decoder.conv_in.conv.weight' with 'decoder.mid.attn_1.q.weight' or "
                            "'decoder.mid_block.attentions.0.to_q.weight'",
    /* .style          = */ NULL,
    /* .variants       = */ VAE_VARIANTS(hyv15_variants),
    /* .recognise      = */ hyv15_recognise,
    /* .canonical_name = */ hyv15_canonical_name,
    /* .prepare        = */ hyv15_prepare,
    /* .build          = */ NULL,
    /* .causal         = */ &hyv15_causal_family,
};
