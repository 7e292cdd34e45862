// SANA's deep-compression autoencoder, DC-AE (MODELS.md J.5; diffusers' AutoencoderDC,
// mit-han-lab/efficientvit's DCAE): the decoder of dc-ae-f32c32-sana-1.0 and -1.1, 32 latent
// channels, 32x. conv_in adds the latent repeat_interleaved to its width; levels run from the
// last (lowest resolution) to 0, each but the last starting with an upsampler (nearest 2x and a
// 3x3 conv, plus its input repeat_interleaved and pixel-shuffled); the low levels hold
// EfficientViT blocks (ReLU linear attention over q, k, v and their 5x5 multi-scale
// aggregation, then a GLU MBConv, each with an RMSNorm and a residual), the high ones ResBlocks
// (3x3 conv, SiLU, 3x3 conv, RMSNorm, residual); the head is RMSNorm, ReLU and the RGB conv.
// Every norm is per pixel over the channels, so everything after the last EfficientViT level
// reaches one pixel per step: the attention levels are the head (whole frames) and the rest are
// steps that the tiled decode runs over tiles (vae-tile-video.c), as the causal families' are.
//
// Names are diffusers' (`decoder.up_blocks.I.J.*`); the original efficientvit ones
// (`decoder.stages.I.op_list.J.*`) map onto them. The loader joins diffusers' to_q, to_k, to_v
// into the one qkv conv the original has (`attn.qkv`), cuts to_out into one [C, C] conv per
// attention branch (`attn.to_out_<s>`), and adds the shortcuts' channel maps.

#include "vae-family.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DCAE_EPS        1e-5f   // every RMSNorm (diffusers' RMSNorm, efficientvit's TritonRMSNorm2d)
#define DCAE_MAX_SCALES 4       // multi-scale branches of an attention (released: one, 5x5)

// whether the model has the tensor named by fmt
static bool dcae_has(const struct vae_model * m, const char * fmt, int i, int j) {
    char name[128];
    snprintf(name, sizeof(name), fmt, i, j);
    return vae_model_weight(m, name) != NULL;
}

// the up levels (0 ..), an EfficientViT block's presence, and a level's blocks (after its upsampler)
static int dcae_levels(const struct vae_model * m) {
    int n = 0;
    while (n <= VAE_NAME_MAX_INDEX && (dcae_has(m, "decoder.up_blocks.%d.%d.conv.weight", n, 0) ||
                                       dcae_has(m, "decoder.up_blocks.%d.%d.conv1.weight", n, 0) ||
                                       dcae_has(m, "decoder.up_blocks.%d.%d.attn.qkv.weight", n, 0))) {
        n++;
    }
    return n;
}

static bool dcae_is_evit(const struct vae_model * m, int level, int j) {
    return dcae_has(m, "decoder.up_blocks.%d.%d.attn.qkv.weight", level, j);
}

static int dcae_first_block(const struct vae_model * m, int level) {
    return dcae_has(m, "decoder.up_blocks.%d.%d.conv.weight", level, 0) ? 1 : 0;
}

static bool dcae_block(const struct vae_model * m, int level, int j) {
    return dcae_has(m, "decoder.up_blocks.%d.%d.conv1.weight", level, j) || dcae_is_evit(m, level, j);
}

// the lowest level that holds an EfficientViT block (levels from it up run in the head); the
// level count when none does
static int dcae_head_levels(const struct vae_model * m, int levels) {
    int lowest = levels;
    for (int l = levels - 1; l >= 0; l--) {
        for (int j = dcae_first_block(m, l); dcae_block(m, l, j); j++) {
            lowest = dcae_is_evit(m, l, j) ? l : lowest;
        }
    }
    return lowest;
}

// ---- steps (see vae_causal_step): everything below the attention levels, one pixel of reach each

enum dcae_step_kind {
    DCAE_STEP_UP,    // conv(nearest2x(x)) + pixel_shuffle(shortcut(x))        name: the upsampler
    DCAE_STEP_RES_A, // SiLU(conv1(x))                                         name: the ResBlock
    DCAE_STEP_RES_B, // RMS(conv2(x)) + r                                      name: the ResBlock
    DCAE_STEP_OUT,   // conv_out(ReLU(RMS(x)))
};

static struct vae_tensor * dcae_rms(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                    struct vae_tensor * r, enum vae_act act) {
    const int64_t       shape[1] = { x->ne[1] };
    struct vae_tensor * g        = vae_builder_weight(b, 1, shape, "%s.weight", name);
    struct vae_tensor * beta     = g ? vae_builder_weight(b, 1, shape, "%s.bias", name) : NULL;
    return beta ? vae_graph_rms_norm_eps(b->g, x, DCAE_EPS, g, beta, r, act) : NULL;
}

static struct vae_tensor * dcae_step(struct vae_builder * b, const struct vae_causal_step * s, struct vae_tensor * x,
                                     struct vae_tensor * r, struct vae_tensor * stats, bool first) {
    (void) stats, (void) first;
    char n[96];
    switch (s->kind) {
        case DCAE_STEP_UP: {
            snprintf(n, sizeof(n), "%s.shortcut", s->name);
            struct vae_tensor * sc = vae_builder_conv2d(b, x, n, 1, false, NULL, VAE_ACT_NONE, false); // [N, 4C, H, W]
            sc                     = sc ? vae_graph_pixel_shuffle(b->g, sc) : NULL;                 // [N, C, 2H, 2W]
            snprintf(n, sizeof(n), "%s.conv", s->name);
            return sc ? vae_builder_conv2d(b, vae_graph_upsample2x(b->g, x), n, 3, true, sc, VAE_ACT_NONE, false)
                      : NULL;
        }
        case DCAE_STEP_RES_A:
            snprintf(n, sizeof(n), "%s.conv1", s->name);
            return vae_builder_conv2d(b, x, n, 3, true, NULL, VAE_ACT_SILU, false);
        case DCAE_STEP_RES_B: {
            snprintf(n, sizeof(n), "%s.conv2", s->name);
            struct vae_tensor * h = vae_builder_conv2d(b, x, n, 3, false, NULL, VAE_ACT_NONE, false);
            snprintf(n, sizeof(n), "%s.norm", s->name);
            return h ? dcae_rms(b, h, n, r, VAE_ACT_NONE) : NULL;
        }
        default: {
            struct vae_tensor * h = dcae_rms(b, x, "decoder.norm_out", NULL, VAE_ACT_RELU);
            h = h ? vae_builder_conv2d(b, h, "decoder.conv_out", 3, true, NULL, VAE_ACT_NONE, false) : NULL;
            if (h && h->ne[1] != 3) {
                return vae_builder_fail(b, "tensor 'decoder.conv_out.weight' gives %lld output channels, not 3 (RGB)",
                                        (long long) h->ne[1]);
            }
            return h;                                                           // [N, 3, 32h, 32w]
        }
    }
}

// the steps of `level` (its upsampler, then its ResBlocks) from steps[n]; returns the new count
static int dcae_level_steps(const struct vae_model * m, int level, int levels, struct vae_causal_step * steps, int n,
                            int max) {
    char name[64];
    if (level < levels - 1 && n < max) {
        snprintf(name, sizeof(name), "decoder.up_blocks.%d.0", level);
        steps[n] = (struct vae_causal_step) { .kind   = DCAE_STEP_UP, .up = 2, .frames = 1, .res = -1,
                                              .cin    = vae_model_dim(m, name, ".conv.weight", 1),
                                              .cout   = vae_model_dim(m, name, ".conv.weight", 0) };
        snprintf(steps[n++].name, sizeof(steps[0].name), "%s", name);
    }
    for (int j = dcae_first_block(m, level); dcae_block(m, level, j) && n + 2 <= max; j++) {
        snprintf(name, sizeof(name), "decoder.up_blocks.%d.%d", level, j);
        const int c = vae_model_dim(m, name, ".conv1.weight", 0);
        steps[n]     = (struct vae_causal_step) { .kind = DCAE_STEP_RES_A, .cin = c, .cout = c, .up = 1, .frames = 1,
                                                  .save = 1, .res = -1 };
        steps[n + 1] = (struct vae_causal_step) { .kind = DCAE_STEP_RES_B, .cin = c, .cout = c, .rin = c, .up = 1,
                                                  .frames = 1, .res = 0 };
        snprintf(steps[n].name, sizeof(steps[0].name), "%s", name);
        snprintf(steps[n + 1].name, sizeof(steps[0].name), "%s", name);
        n += 2;
    }
    return n;
}

static int dcae_steps(const struct vae_model * m, struct vae_causal_step * steps, int max) {
    const int levels = dcae_levels(m);
    int       n      = 0;
    for (int l = dcae_head_levels(m, levels) - 1; l >= 0; l--) {
        n = dcae_level_steps(m, l, levels, steps, n, max);
    }
    if (n < max) {
        steps[n++] = (struct vae_causal_step) { .kind = DCAE_STEP_OUT, .name = "decoder", .up = 1, .frames = 1,
                                                .res  = -1, .cin = vae_model_dim(m, "decoder.conv_out", ".weight", 1),
                                                .cout = vae_model_dim(m, "decoder.conv_out", ".weight", 0) };
    }
    return n;
}

// ---- the head: conv_in and the attention levels, on whole frames

// EfficientViT block `name` on x [N, C, H, W]: attention (q, k, v and their multi-scale
// aggregations, each a set of heads of hd channels) and a GLU MBConv, each + x
static struct vae_tensor * dcae_evit(struct vae_builder * b, struct vae_tensor * x, const char * name) {
    const int64_t c = x->ne[1];
    char          n[128];
    snprintf(n, sizeof(n), "%s.attn.qkv", name);
    struct vae_tensor * qkv = vae_builder_conv2d(b, x, n, 1, false, NULL, VAE_ACT_NONE, false); // [N, 3C, H, W]
    snprintf(n, sizeof(n), "%s.attn.to_qkv_multiscale.0.proj_out", name);
    const int hd = vae_model_dim(b->model, n, ".weight", 1);
    if (qkv && (hd < 1 || qkv->ne[1] != 3 * c || c % hd != 0)) {
        return vae_builder_fail(b, "dcae: the attention of '%s' has no multi-scale branch giving its head width, or "
                                "its %lld channels are not heads of %d", name, (long long) c, hd);
    }
    struct vae_tensor * y = NULL;
    int                 s = 0; // the branch: the plain q, k, v, then each multi-scale aggregation of them
    for (; qkv && !b->failed && s <= DCAE_MAX_SCALES; s++) {
        struct vae_tensor * branch = qkv;                                                  // [N, 3C, H, W]
        if (s > 0) {
            snprintf(n, sizeof(n), "%s.attn.to_qkv_multiscale.%d.proj_in.weight", name, s - 1);
            if (!vae_model_weight(b->model, n)) {
                break;
            }
            struct vae_tensor * dw = vae_builder_weight(b, 4, (const int64_t[]) { 3 * c, 1, -1, -1 }, "%s", n);
            snprintf(n, sizeof(n), "%s.attn.to_qkv_multiscale.%d.proj_out.weight", name, s - 1);
            struct vae_tensor * pw = dw ? vae_builder_weight(b, 4, (const int64_t[]) { 3 * c, hd, 1, 1 }, "%s", n) : NULL;
            if (!pw) {
                return NULL;
            }
            branch = vae_graph_depthwise_conv2d(b->g, qkv, dw, NULL);                      // [N, 3C, H, W]
            branch = vae_graph_conv2d_groups(b->g, branch, pw, NULL, NULL, VAE_ACT_NONE, (int) (3 * c / hd));
        }
        struct vae_tensor * o = vae_graph_linear_attention(b->g, branch, hd);               // [N, C, H, W]
        snprintf(n, sizeof(n), "%s.attn.to_out_%d", name, s);
        y = vae_builder_conv2d(b, o, n, 1, false, y, VAE_ACT_NONE, false);                 // [N, C, H, W]
    }
    snprintf(n, sizeof(n), "%s.attn.to_out_%d.weight", name, s);
    if (y && vae_model_weight(b->model, n)) {
        return vae_builder_fail(b, "dcae: '%s.attn.to_out' takes more branches than the %d the attention has", name, s);
    }
    snprintf(n, sizeof(n), "%s.attn.norm_out", name);
    x = y ? dcae_rms(b, y, n, x, VAE_ACT_NONE) : NULL;                                     // x + RMS(to_out(o))
    snprintf(n, sizeof(n), "%s.conv_out.conv_inverted", name);
    struct vae_tensor * h = x ? vae_builder_conv2d(b, x, n, 1, true, NULL, VAE_ACT_SILU, false) : NULL; // [N, 8C]
    snprintf(n, sizeof(n), "%s.conv_out.conv_depth.weight", name);
    struct vae_tensor * dw = h ? vae_builder_weight(b, 4, (const int64_t[]) { h->ne[1], 1, 3, 3 }, "%s", n) : NULL;
    snprintf(n, sizeof(n), "%s.conv_out.conv_depth.bias", name);
    struct vae_tensor * db = dw ? vae_builder_weight(b, 1, (const int64_t[]) { h->ne[1] }, "%s", n) : NULL;
    h = db ? vae_graph_glu(b->g, vae_graph_depthwise_conv2d(b->g, h, dw, db), VAE_ACT_SILU) : NULL; // [N, 4C]
    snprintf(n, sizeof(n), "%s.conv_out.conv_point", name);
    h = h ? vae_builder_conv2d(b, h, n, 1, false, NULL, VAE_ACT_NONE, false) : NULL;       // [N, C, H, W]
    snprintf(n, sizeof(n), "%s.conv_out.norm", name);
    return h ? dcae_rms(b, h, n, x, VAE_ACT_NONE) : NULL;                                  // x + RMS(...)
}

// conv_in + the latent repeat_interleaved, then the levels from the last down to the lowest
// that holds an EfficientViT block: [N, z, h, w] -> [N, C, H, W]
static struct vae_tensor * dcae_head(struct vae_builder * b, struct vae_tensor * x) {
    const struct vae_model * m      = b->model;
    const int                levels = dcae_levels(m);
    struct vae_tensor *      r = vae_builder_conv2d(b, x, "decoder.conv_in.shortcut", 1, false, NULL, VAE_ACT_NONE, false);
    x = r ? vae_builder_conv2d(b, x, "decoder.conv_in", 3, true, r, VAE_ACT_NONE, false) : NULL; // [N, C, h, w]
    for (int l = levels - 1; l >= dcae_head_levels(m, levels) && x; l--) {
        struct vae_causal_step up[1];
        const int              n = dcae_level_steps(m, l, levels, up, 0, 1); // its upsampler (max 1: no blocks)
        x                        = n ? dcae_step(b, &up[0], x, NULL, NULL, false) : x;
        for (int j = dcae_first_block(m, l); dcae_block(m, l, j) && x; j++) {
            char name[64];
            snprintf(name, sizeof(name), "decoder.up_blocks.%d.%d", l, j);
            if (dcae_is_evit(m, l, j)) {
                x = dcae_evit(b, x, name);
                continue;
            }
            struct vae_causal_step res = { .kind = DCAE_STEP_RES_A };
            snprintf(res.name, sizeof(res.name), "%s", name);
            struct vae_tensor * y = dcae_step(b, &res, x, NULL, NULL, false);
            res.kind              = DCAE_STEP_RES_B;
            x                     = y ? dcae_step(b, &res, y, x, NULL, false) : NULL;
        }
    }
    return x;
}

static const struct vae_causal_family dcae_causal_family = {
    /* .steps = */ dcae_steps,
    /* .head  = */ dcae_head,
    /* .step  = */ dcae_step,
};

// ---- loading

enum dcae_naming {
    DCAE_NAMING_DIFFUSERS, // `decoder.conv_in.*`, `decoder.up_blocks.I.J.*` (canonical)
    DCAE_NAMING_ORIG,      // efficientvit's `decoder.project_in.main.conv.*`, `decoder.stages.I.op_list.J.*`
};

// the original names, or diffusers' `decoder.up_blocks.I.J.` (two numbers: no `resnets.`)
static int dcae_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    (void) err, (void) err_size;
    if (vae_st_header_find(hdr, "decoder.project_in.main.conv.weight")) {
        naming->kind = DCAE_NAMING_ORIG;
        return 1;
    }
    const bool conv_in = vae_st_header_find(hdr, "decoder.conv_in.weight") != NULL;
    for (int i = 0; conv_in && i < hdr->n_tensors; i++) {
        const char * name = hdr->tensors[i].name, * end;
        if (strncmp(name, "decoder.up_blocks.", 18) == 0 && vae_name_index(name + 18, &end) >= 0 && *end == '.' &&
            vae_name_index(end + 1, &end) >= 0 && *end == '.') {
            naming->kind = DCAE_NAMING_DIFFUSERS;
            return 1;
        }
    }
    return 0;
}

// efficientvit -> diffusers, part by part (diffusers' own conversion is the same chain); the
// multi-scale branches `aggreg.K.0` / `.1` are `to_qkv_multiscale.K.proj_in` / `.proj_out`
static char * dcae_canonical_name(const char * key, const struct vae_naming * naming) {
    static const char * map[][2] = {
        { "decoder.project_in.main.conv.", "decoder.conv_in." },
        { "decoder.project_out.op_list.0.", "decoder.norm_out." },
        { "decoder.project_out.op_list.2.conv.", "decoder.conv_out." },
        { "decoder.stages.", "decoder.up_blocks." },
        { ".op_list.", "." },
        { ".main.conv.conv.", ".conv." },
        { ".main.conv1.conv.", ".conv1." },
        { ".main.conv2.conv.", ".conv2." },
        { ".main.conv2.norm.", ".norm." },
        { ".context_module.main.qkv.conv.", ".attn.qkv." },
        { ".context_module.main.proj.conv.", ".attn.to_out." },
        { ".context_module.main.proj.norm.", ".attn.norm_out." },
        { ".context_module.main.aggreg.", ".attn.to_qkv_multiscale." },
        { ".local_module.main.inverted_conv.conv.", ".conv_out.conv_inverted." },
        { ".local_module.main.depth_conv.conv.", ".conv_out.conv_depth." },
        { ".local_module.main.point_conv.conv.", ".conv_out.conv_point." },
        { ".local_module.main.point_conv.norm.", ".conv_out.norm." },
    };
    if (strncmp(key, "decoder.", 8) != 0) {
        return NULL;
    }
    char * name = strdup(key);
    if (naming->kind != DCAE_NAMING_ORIG) {
        return name;
    }
    for (size_t i = 0; name && i < sizeof(map) / sizeof(map[0]); i++) {
        name = vae_name_replace(name, map[i][0], map[i][1]);
    }
    char * at = name ? strstr(name, ".to_qkv_multiscale.") : NULL; // `K.0.` -> `K.proj_in.`
    if (at) {
        const char * end;
        const long   k = vae_name_index(at + 19, &end);
        if (k >= 0 && (strncmp(end, ".0.", 3) == 0 || strncmp(end, ".1.", 3) == 0)) {
            char * out = malloc(strlen(name) + 16);
            if (out) {
                sprintf(out, "%.*s%ld.%s%s", (int) (at + 19 - name), name, k, end[1] == '0' ? "proj_in" : "proj_out",
                        end + 2);
            }
            free(name);
            name = out;
        }
    }
    return name;
}

// diffusers' to_q, to_k, to_v of the block `name` ([C, C]) joined into `attn.qkv` [3C, C, 1, 1]
static bool dcae_join_qkv(struct vae_model * m, const char * name, int64_t c, char * err, size_t err_size) {
    static const char *          parts[3] = { "to_q", "to_k", "to_v" };
    const struct vae_st_tensor * src[3];
    char                         n[128];
    for (int i = 0; i < 3; i++) {
        snprintf(n, sizeof(n), "%s.attn.%s.weight", name, parts[i]);
        const struct vae_weight * w = vae_model_weight(m, n);
        if (!w || w->src[0]->numel != (uint64_t) (c * c) || w->shape[0] != c) {
            snprintf(err, err_size, "dcae: tensor '%s' is missing or is not [%lld, %lld]", n, (long long) c,
                     (long long) c);
            return false;
        }
        src[i] = w->src[0];
    }
    snprintf(n, sizeof(n), "%s.attn.qkv.weight", name);
    if (!vae_weights_add(m, n, 4, (const int64_t[]) { 3 * c, c, 1, 1 }, src, 3)) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    return true;
}

// the EfficientViT blocks' q, k, v joined (diffusers) and to_out [C, (1 + S) C] cut into one
// [C, C, 1, 1] per branch (`attn.to_out_<s>`: row k is the file's row (1 + S) k + s of C values)
static bool dcae_attention(struct vae_model * m, const char * name, char * err, size_t err_size) {
    char n[128];
    snprintf(n, sizeof(n), "%s.attn.to_out.weight", name);
    const struct vae_weight *    out = vae_model_weight(m, n);
    const struct vae_st_tensor * src = out->src[0];
    const int64_t c = out->shape[0], cols = out->n_dims == 2 || out->n_dims == 4 ? out->shape[1] : 0;
    if (c < 1 || cols % c != 0 || cols / c < 2 || cols / c > DCAE_MAX_SCALES + 1 ||
        (out->n_dims == 4 && (out->shape[2] != 1 || out->shape[3] != 1))) {
        snprintf(err, err_size, "dcae: tensor '%s' is not an attention's output projection [C, (1 + S) C] of S "
                 "multi-scale branches", src->name);
        return false;
    }
    snprintf(n, sizeof(n), "%s.attn.qkv.weight", name);
    if (!vae_model_weight(m, n) && !dcae_join_qkv(m, name, c, err, err_size)) {
        return false;
    }
    const int64_t branches = cols / c;
    for (int64_t s = 0; s < branches; s++) {
        snprintf(n, sizeof(n), "%s.attn.to_out_%lld.weight", name, (long long) s);
        int32_t * rows = vae_weights_add_rows(m, n, c, c, src, err, err_size);
        for (int64_t k = 0; rows && k < c; k++) {
            rows[k] = (int32_t) (branches * k + s);
        }
        if (!rows) {
            return false;
        }
    }
    return true;
}

// every EfficientViT block's attention weights (the blocks named first: adding weights moves them)
static bool dcae_attention_weights(struct vae_model * m, char * err, size_t err_size) {
    static const char suffix[] = ".attn.to_out.weight";
    const size_t      n_suffix = sizeof(suffix) - 1;
    char **           names    = calloc((size_t) m->n_weights + 1, sizeof(*names));
    int               n        = 0;
    bool              ok       = names != NULL;
    for (int i = 0; ok && i < m->n_weights; i++) {
        const size_t len = strlen(m->weights[i].name);
        if (len > n_suffix && strcmp(m->weights[i].name + len - n_suffix, suffix) == 0) {
            ok = (names[n++] = strndup(m->weights[i].name, len - n_suffix)) != NULL;
        }
    }
    if (!ok) {
        snprintf(err, err_size, "out of memory");
    }
    for (int i = 0; ok && i < n; i++) {
        ok = dcae_attention(m, names[i], err, err_size);
    }
    for (int i = 0; names && i < n; i++) {
        free(names[i]);
    }
    free(names);
    return ok;
}

// conv_in's shortcut: channel c of its C is latent channel c / (C / z); an upsampler's: output
// channel c at pixel offset (i, j) reads input channel (4c + 2i + j) / r, r = 4 C_out / C_in,
// a map of 4 C_out rows that pixel_shuffle places
static bool dcae_shortcuts(struct vae_model * m, char * err, size_t err_size) {
    const int levels = dcae_levels(m);
    for (int l = -1; l < levels - 1; l++) {
        char name[64], n[96];
        snprintf(name, sizeof(name), l < 0 ? "decoder.conv_in" : "decoder.up_blocks.%d.0.conv", l);
        snprintf(n, sizeof(n), "%s.weight", name);
        const struct vae_weight * w = vae_model_weight(m, n);
        if (!w) {
            continue; // (the build names a missing upsampler)
        }
        const int64_t cout = w->shape[0], cin = w->n_dims == 4 ? w->shape[1] : 0, rows = l < 0 ? cout : 4 * cout;
        if (cin < 1 || rows % cin != 0 || rows > INT32_MAX) {
            snprintf(err, err_size, "dcae: tensor '%s' goes from %lld to %lld channels: not a duplicating shortcut "
                     "(an interpolating upsampler; the pixel-shuffle one of the mix and in variants is not supported)",
                     w->src[0]->name, (long long) cin, (long long) cout);
            return false;
        }
        snprintf(n, sizeof(n), "%.*s.shortcut.weight", (int) strlen(name) - (l < 0 ? 0 : 5), name);
        int32_t * map = vae_weights_add_rows(m, n, rows, cin, NULL, err, err_size);
        for (int64_t k = 0; map && k < rows; k++) {
            map[k] = (int32_t) (k / (rows / cin));
        }
        if (!map) {
            return false;
        }
    }
    return true;
}

static bool dcae_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                         size_t err_size) {
    (void) hdr, (void) want;
    const struct vae_weight * in = vae_model_weight(m, "decoder.conv_in.weight");
    if (!in || in->n_dims != 4) {
        snprintf(err, err_size, "DC-AE names but no 4-D 'decoder.conv_in.weight'");
        return false;
    }
    m->latent_channels = (int) in->shape[1];
    m->family          = VAE_FAMILY_DCAE;
    m->family_certain  = true;
    if (m->latent_channels != 32) {
        snprintf(err, err_size, "a DC-AE decoder with %d latent channels: only f32c32 (32) is known",
                 m->latent_channels);
        return false;
    }
    for (int i = 0; i < m->n_weights; i++) { // the mix and in variants' decoder is another network
        if (strstr(m->weights[i].name, ".running_mean") || !strcmp(m->weights[i].name, "decoder.conv_out.conv.weight")) {
            snprintf(err, err_size, "tensor '%s': a DC-AE decoder of the mix or in variants (BatchNorm ResBlocks, "
                     "pixel-shuffle upsampling); only SANA's (dc-ae-f32c32-sana-1.x) is known",
                     m->weights[i].src[0]->name);
            return false;
        }
    }
    if (!dcae_attention_weights(m, err, err_size) || !dcae_shortcuts(m, err, err_size)) {
        return false;
    }
    m->scale = 1 << (dcae_levels(m) - 1); // 2x per upsampler
    m->own_space  = VAE_SPACE_RAW;
    m->out_scale  = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset = 0.5f;
    return true;
}

// raw latents; the diffusion model's are scaled by 0.41407
static const struct vae_variant dcae_variants[] = {
    { VAE_FAMILY_DCAE, "dcae",
      "DC-AE of SANA 1.0/1.5 (dc-ae-f32c32-sana-1.x; 32 ch, 32x spatial scale; normalized z = x / 0.41407)", 32, false,
      0.41407f, 0.0f },
};

const struct vae_family_desc vae_dcae_family = {
    /* .name           = */ "DC-AE",
    /* .keys           = */ "'decoder.project_in.main.conv.weight', 'decoder.up_blocks.I.J.*' with 'decoder.conv_in.weight'",
    /* .style          = */ NULL,
    /* .variants       = */ VAE_VARIANTS(dcae_variants),
    /* .recognise      = */ dcae_recognise,
    /* .canonical_name = */ dcae_canonical_name,
    /* .prepare        = */ dcae_prepare,
    /* .build          = */ NULL,
    /* .causal         = */ &dcae_causal_family,
};
