// Graph builder for the AutoencoderKL decoder of SD 1.x/2.x, SDXL, SD3, FLUX.1 and FLUX.2
// (MODELS.md §A): post_quant_conv where present, conv_in, a mid block of two ResNet blocks around
// one single-head attention, up levels of ResNet blocks with nearest-2x upsampling convs, then
// GroupNorm, SiLU and the RGB conv. Widths, the number of levels and of blocks per level come
// from the weights, so reduced-width files and FLUX.2's narrower decoder build too. Names are the
// LDM ones; the loader maps the diffusers naming onto them and gives the attention's q, k and v
// as one [3C, C, 1, 1] conv (`decoder.mid.attn_1.qkv`).
//
// The decoder is also described layer-major for the exact tiled decode (vae-tile.c): the head
// (everything through the mid block, at latent resolution) runs on whole frames, and every later
// 3x3 conv is a step that a tile runs with a 1-pixel border of its input, given the GroupNorm
// statistics of the whole frame. The whole-frame graph is built from the same steps.
//
// The six variants: 4 latent channels (sd1, sd2, sdxl: one shape, told apart only by the
// checkpoint around the decoder, MODELS.md §D.5), 16 (sd3, flux1: likewise), and FLUX.2's 32 with
// the BatchNorm statistics of its 128-channel normalized latents. SVD's temporal decoder is an
// AutoencoderKL too (vae-svd.c builds on this file's names and decoder).

#include "vae-family.h"
#include "vae-kl.h"
#include "vae-weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KL_FLUX2_BN_EPS 1e-4f   // FLUX.2's BatchNorm over the patchified latent (MODELS.md A.6)

#define KL_GROUPS 32
#define KL_EPS    1e-6f

static struct vae_tensor * kl_norm(struct vae_builder * b, struct vae_tensor * x, const char * name, enum vae_act act,
                                   struct vae_tensor * stats) {
    const int64_t       shape[1] = { x->ne[1] };
    struct vae_tensor * gamma    = vae_builder_weight(b, 1, shape, "%s.weight", name);
    struct vae_tensor * beta     = vae_builder_weight(b, 1, shape, "%s.bias", name);
    if (!b->failed && x->ne[1] % KL_GROUPS != 0) {
        return vae_builder_fail(b, "%s: %lld channels are not a multiple of %d groups", name, (long long) x->ne[1],
                                KL_GROUPS);
    }
    if (b->failed) {
        return NULL;
    }
    return stats ? vae_graph_group_norm_stats(b->g, x, KL_GROUPS, KL_EPS, gamma, beta, act, stats)
                 : vae_graph_group_norm(b->g, x, KL_GROUPS, KL_EPS, gamma, beta, act);
}

// one step on x: stats NULL = the GroupNorm's own statistics; r = the residual block's input
static struct vae_tensor * kl_step(struct vae_builder * b, const struct vae_kl_step * s, struct vae_tensor * x,
                                   struct vae_tensor * r, struct vae_tensor * stats) {
    if (s->kind == VAE_KL_UPSAMPLE && s->shortcut[0]) { // HunyuanImage: conv(x) + map(x), then the shuffle
        struct vae_tensor * r = vae_builder_conv2d(b, x, s->shortcut, 1, false, NULL, VAE_ACT_NONE, false);
        struct vae_tensor * y = r ? vae_builder_conv2d(b, x, s->conv, 3, true, r, VAE_ACT_NONE, false) : NULL;
        return y ? vae_graph_pixel_shuffle(b->g, y) : NULL;                              // [N, C, 2H, 2W]
    }
    if (s->kind == VAE_KL_UPSAMPLE) {
        return vae_builder_conv2d(b, x, s->conv, 3, true, NULL, VAE_ACT_NONE, true);     // [N, C, 2H, 2W]
    }
    struct vae_tensor * t = kl_norm(b, x, s->norm, VAE_ACT_SILU, stats);                 // [N, Cin, H, W]
    if (t && s->kind == VAE_KL_NORM_CONV_RES && !s->shortcut[0] && r->ne[1] != x->ne[1]) {
        return vae_builder_fail(b, "tensor '%.*s.nin_shortcut.weight' is missing: the block goes from %lld to %lld channels",
                                (int) strlen(s->conv) - 6, s->conv, (long long) r->ne[1], (long long) x->ne[1]);
    }
    if (s->kind == VAE_KL_NORM_CONV_RES && s->shortcut[0]) {
        r = vae_builder_conv2d(b, r, s->shortcut, 1, true, NULL, VAE_ACT_NONE, false);   // [N, Cout, H, W]
    }
    return t ? vae_builder_conv2d(b, t, s->conv, 3, true, s->kind == VAE_KL_NORM_CONV_RES ? r : NULL, VAE_ACT_NONE,
                                  false)                                                 // [N, Cout, H, W]
             : NULL;
}

// how far `<prefix>N.` keys run: N = 0, 1, ... until one is missing
static int kl_count(const struct vae_model * m, const char * prefix) {
    for (int n = 0;; n++) {
        char   key[96];
        bool   found = false;
        const int len = snprintf(key, sizeof(key), "%s%d.", prefix, n);
        for (int i = 0; i < m->n_weights && !found; i++) {
            found = strncmp(m->weights[i].name, key, (size_t) len) == 0;
        }
        if (!found) {
            return n;
        }
    }
}

// cin and cout of the conv `name` (0 when it is missing)
static void kl_conv_width(const struct vae_model * m, const char * name, int * cin, int * cout) {
    char key[160];
    snprintf(key, sizeof(key), "%s.weight", name);
    const struct vae_weight * w = vae_model_weight(m, key);
    *cin  = w && w->n_dims == 4 ? (int) w->shape[1] : 0;
    *cout = w && w->n_dims == 4 ? (int) w->shape[0] : 0;
}

// a residual block's two steps (widths 0 when conv1 is missing: the build names it)
static void kl_resnet_steps(const struct vae_model * m, const char * name, struct vae_kl_step * s) {
    char key[96];
    int  cin, cout;
    snprintf(key, sizeof(key), "%s.conv1", name);
    kl_conv_width(m, key, &cin, &cout);
    snprintf(key, sizeof(key), "%s.nin_shortcut.weight", name);
    s[0] = (struct vae_kl_step) { .kind = VAE_KL_NORM_CONV, .cin = cin, .cout = cout };
    s[1] = (struct vae_kl_step) { .kind = VAE_KL_NORM_CONV_RES, .cin = cout, .cout = cout, .rin = cin };
    snprintf(s[0].norm, sizeof(s[0].norm), "%s.norm1", name);
    snprintf(s[0].conv, sizeof(s[0].conv), "%s.conv1", name);
    snprintf(s[1].norm, sizeof(s[1].norm), "%s.norm2", name);
    snprintf(s[1].conv, sizeof(s[1].conv), "%s.conv2", name);
    if (vae_model_weight(m, key)) {
        snprintf(s[1].shortcut, sizeof(s[1].shortcut), "%s.nin_shortcut", name);
    }
}

int vae_kl_steps(const struct vae_model * m, struct vae_kl_step * steps, int max) {
    const int levels = kl_count(m, "decoder.up.");
    int       n      = 0;
    for (int l = levels - 1; l >= 0; l--) {
        char prefix[48];
        snprintf(prefix, sizeof(prefix), "decoder.up.%d.block.", l);
        const int blocks = kl_count(m, prefix);
        for (int j = 0; j < blocks && n + 2 <= max; j++) {
            char name[48];
            snprintf(name, sizeof(name), "decoder.up.%d.block.%d", l, j);
            kl_resnet_steps(m, name, steps + n);
            n += 2;
        }
        if (l > 0 && n < max) {
            struct vae_kl_step * s = &steps[n++];
            *s                     = (struct vae_kl_step) { .kind = VAE_KL_UPSAMPLE };
            snprintf(s->conv, sizeof(s->conv), "decoder.up.%d.upsample.conv", l);
            kl_conv_width(m, s->conv, &s->cin, &s->cout);
            snprintf(s->shortcut, sizeof(s->shortcut), "decoder.up.%d.upsample.shortcut", l);
            if (vae_model_dim(m, s->shortcut, ".weight", 0)) {
                s->cout /= 4; // (pixel-shuffled)
            } else {
                s->shortcut[0] = '\0';
            }
        }
    }
    if (n < max) {
        struct vae_kl_step * s = &steps[n++];
        *s = (struct vae_kl_step) { .kind = VAE_KL_NORM_CONV, .norm = "decoder.norm_out", .conv = "decoder.conv_out" };
        kl_conv_width(m, s->conv, &s->cin, &s->cout);
    }
    return n;
}

// post_quant_conv, conv_in and the mid block on whole frames; block (or NULL) after each ResNet block
static struct vae_tensor * kl_head(struct vae_builder * b, struct vae_tensor * x, vae_kl_block_fn block) {
    if (vae_model_weight(b->model, "post_quant_conv.weight")) {
        x = vae_builder_conv2d(b, x, "post_quant_conv", 1, true, NULL, VAE_ACT_NONE, false); // [N, z, h, w]
    }
    struct vae_tensor * r = x && vae_model_weight(b->model, "decoder.conv_in.shortcut.weight")
                                ? vae_builder_conv2d(b, x, "decoder.conv_in.shortcut", 1, false, NULL, VAE_ACT_NONE, false)
                                : NULL;                                                 // HunyuanImage: [N, C, h, w]
    x = x ? vae_builder_conv2d(b, x, "decoder.conv_in", 3, true, r, VAE_ACT_NONE, false) : NULL; // [N, C, h, w]
    struct vae_kl_step s[2];
    kl_resnet_steps(b->model, "decoder.mid.block_1", s);
    struct vae_tensor * t = x ? kl_step(b, &s[0], x, NULL, NULL) : NULL;
    x                     = t ? kl_step(b, &s[1], t, x, NULL) : NULL;                   // [N, C, h, w]
    x                     = x && block ? block(b, x, "decoder.mid.block_1") : x;
    // x + proj_out(attention(qkv(GN(x))))
    t = x ? kl_norm(b, x, "decoder.mid.attn_1.norm", VAE_ACT_NONE, NULL) : NULL;
    t = t ? vae_builder_conv2d(b, t, "decoder.mid.attn_1.qkv", 1, true, NULL, VAE_ACT_NONE, false) : NULL; // [N, 3C, h, w]
    t = t ? vae_graph_attention(b->g, t) : NULL;                                        // [N, C, h, w]
    x = t ? vae_builder_conv2d(b, t, "decoder.mid.attn_1.proj_out", 1, true, x, VAE_ACT_NONE, false) : NULL;
    kl_resnet_steps(b->model, "decoder.mid.block_2", s);
    t = x ? kl_step(b, &s[0], x, NULL, NULL) : NULL;
    x = t ? kl_step(b, &s[1], t, x, NULL) : NULL;                                       // [N, C, h, w]
    return x && block ? block(b, x, "decoder.mid.block_2") : x;
}

struct vae_graph * vae_kl_head_build(const struct vae_model * model, int h, int w, char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, 1, model->latent_channels, h, w);     // [1, z, h, w]
    return vae_builder_finish(&b, kl_head(&b, x, NULL));
}

struct vae_graph * vae_kl_step_build(const struct vae_model * model, const struct vae_kl_step * s, int h, int w,
                                     char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x     = vae_graph_input(b.g, 1, s->cin, h, w);                  // [1, Cin, h, w]
    struct vae_tensor * stats = s->kind != VAE_KL_UPSAMPLE ? vae_graph_input(b.g, 1, 2 * KL_GROUPS, 1, 1) : NULL;
    struct vae_tensor * r     = s->kind == VAE_KL_NORM_CONV_RES ? vae_graph_input(b.g, 1, s->rin, h, w) : NULL;
    return vae_builder_finish(&b, kl_step(&b, s, x, r, stats));
}

struct vae_tensor * vae_kl_decoder(struct vae_builder * b, struct vae_tensor * x, vae_kl_block_fn block) {
    struct vae_kl_step steps[VAE_KL_MAX_STEPS];
    const int          n_steps = vae_kl_steps(b->model, steps, VAE_KL_MAX_STEPS);
    x                          = kl_head(b, x, block);                                  // [N, C, h, w]
    struct vae_tensor * r      = NULL;                                                  // the residual block's input
    for (int i = 0; i < n_steps && x; i++) {
        struct vae_tensor * y = kl_step(b, &steps[i], x, r, NULL);   // [N, Cout, H, W], 2H x 2W after an upsample
        if (y && block && steps[i].kind == VAE_KL_NORM_CONV_RES) {   // (its conv is `<block>.conv2`)
            char name[48];
            snprintf(name, sizeof(name), "%.*s", (int) strlen(steps[i].conv) - 6, steps[i].conv);
            y = block(b, y, name);
        }
        r = x;
        x = y;
    }
    if (x && x->ne[1] != 3) {
        x = vae_builder_fail(b, "tensor 'decoder.conv_out.weight' gives %lld output channels, not 3 (RGB)",
                             (long long) x->ne[1]);
    }
    return x;                                                                           // [N, 3, H, W]
}

static struct vae_graph * kl_build(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                   size_t err_size) {
    (void) first;
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w);     // [N, z, h, w]
    return vae_builder_finish(&b, vae_kl_decoder(&b, x, NULL));
}

int vae_kl_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    static const char * prefixes[] = { "", "first_stage_model.", "vae." };
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        const char * p = prefixes[i];
        char         key[112], svd[112], flat[112];
        snprintf(key, sizeof(key), "%sdecoder.up_blocks.0.resnets.0.norm1.weight", p);
        snprintf(svd, sizeof(svd), "%sdecoder.up_blocks.0.resnets.0.spatial_res_block.norm1.weight", p);
        snprintf(flat, sizeof(flat), "%sdecoder.up_blocks.0.norm1.weight", p);
        naming->prefix = p;
        if (vae_st_header_find(hdr, key) || vae_st_header_find(hdr, svd) || vae_st_header_find(hdr, flat)) {
            naming->kind = vae_st_header_find(hdr, flat) ? VAE_KL_NAMING_FLAT : VAE_KL_NAMING_DIFFUSERS;
            snprintf(key, sizeof(key), "%sdecoder.up_blocks.", p);
            const long most = vae_name_most_index(hdr, key, ".", err, err_size);
            naming->per_level = 1; // (a flat list: up to the first upsampler)
            for (; naming->kind == VAE_KL_NAMING_FLAT && naming->per_level <= most; naming->per_level++) {
                snprintf(key, sizeof(key), "%sdecoder.up_blocks.%ld.conv.weight", p, naming->per_level - 1);
                if (vae_st_header_find(hdr, key)) {
                    break;
                }
            }
            naming->levels = (most + 1 + (naming->kind == VAE_KL_NAMING_FLAT)) / naming->per_level;
            return most < -1 ? -1 : 1;
        }
        snprintf(key, sizeof(key), "%sdecoder.conv_in.weight", p);
        const struct vae_st_tensor * in = vae_st_header_find(hdr, key);
        if (in && (in->n_dims == 4 || (in->n_dims == 5 && in->shape[1] == 64 && in->shape[2] == 1))) {
            naming->kind = in->shape[1] == 64 ? VAE_KL_NAMING_HUNYUAN : VAE_KL_NAMING_LDM;
            snprintf(key, sizeof(key), "%sdecoder.up.", p);
            naming->levels = vae_name_most_index(hdr, key, ".", err, err_size) + 1;
            return naming->levels < 0 ? -1 : 1;
        }
    }
    return 0;
}

// diffusers' AutoencoderKL names -> LDM (MODELS.md A.4); up_blocks.I is up.(levels - 1 - I);
// both attention namings (to_q.. and the older query..); HunyuanImage's flat list: up_blocks.N is
// entry N % per_level of level N / per_level, its resnets then its upsampler
static char * kl_diffusers_name(const char * key, const struct vae_naming * naming) {
    static const char * attn[][2] = {
        { "group_norm.", "norm." }, { "to_q.", "q." },   { "to_k.", "k." },     { "to_v.", "v." },
        { "to_out.0.", "proj_out." }, { "query.", "q." }, { "key.", "k." }, { "value.", "v." },
        { "proj_attn.", "proj_out." }, { "norm.", "norm." }, { "proj.", "proj_out." },
    };
    const long   levels = naming->levels;
    long         num, num2;
    const char * rest, * rest2;
    char *       name;
    if (strncmp(key, "post_quant_conv.", 16) == 0 || strcmp(key, "bn.running_mean") == 0 ||
        strcmp(key, "bn.running_var") == 0 || strncmp(key, "decoder.conv_in.", 16) == 0 ||
        strncmp(key, "decoder.conv_out.", 17) == 0 || strncmp(key, "decoder.norm_out.", 17) == 0) {
        return strdup(key);
    }
    if ((name = vae_name_swap_head(key, "decoder.conv_norm_out.", "decoder.norm_out."))) {
        return name;
    }
    if ((name = vae_name_renumber(key, "decoder.mid_block.resnets.", "decoder.mid.block_", 1, 1, &num, &rest))) {
        return name;
    }
    if (strncmp(key, "decoder.mid_block.attentions.0.", 31) == 0) {
        for (size_t i = 0; i < sizeof(attn) / sizeof(attn[0]); i++) {
            const size_t n = strlen(attn[i][0]);
            if (strncmp(key + 31, attn[i][0], n) == 0) {
                name = malloc(strlen(key) + 8);
                if (name) {
                    sprintf(name, "decoder.mid.attn_1.%s%s", attn[i][1], key + 31 + n);
                }
                return name;
            }
        }
        return NULL;
    }
    if (strncmp(key, "decoder.up_blocks.", 18) != 0 || (num = vae_name_index(key + 18, &rest)) < 0 ||
        num > VAE_NAME_MAX_INDEX) {
        return NULL;
    }
    char level[48];
    if (naming->kind == VAE_KL_NAMING_FLAT) {
        const long l = levels - 1 - num / naming->per_level, j = num % naming->per_level;
        if (l < 0) {
            return NULL;
        }
        snprintf(level, sizeof(level), strncmp(rest, ".conv.", 6) == 0 ? "decoder.up.%ld.upsample" : "decoder.up.%ld.block.%ld",
                 l, j);
        name = malloc(strlen(level) + strlen(rest) + 1);
        if (name) {
            sprintf(name, "%s%s", level, rest);
        }
        return vae_name_replace(name, ".conv_shortcut.", ".nin_shortcut.");
    }
    if (num >= levels) {
        return NULL;
    }
    snprintf(level, sizeof(level), "decoder.up.%ld.block.", levels - 1 - num);
    if ((name = vae_name_renumber(rest, ".resnets.", level, 0, 1, &num2, &rest2))) {
        return vae_name_replace(name, ".conv_shortcut.", ".nin_shortcut.");
    }
    if (strncmp(rest, ".upsamplers.0.conv.", 19) == 0) {
        name = malloc(strlen(rest) + 40);
        if (name) {
            sprintf(name, "decoder.up.%ld.upsample.conv.%s", levels - 1 - num, rest + 19);
        }
        return name;
    }
    return NULL;
}

char * vae_kl_canonical_name(const char * key, const struct vae_naming * naming) {
    long         num;
    const char * rest;
    if (naming->kind == VAE_KL_NAMING_DIFFUSERS || naming->kind == VAE_KL_NAMING_FLAT) {
        return kl_diffusers_name(key, naming);
    }
    if (naming->kind == VAE_KL_NAMING_HUNYUAN) { // (its up.0 runs first: LDM's last)
        char * name = vae_name_renumber(key, "decoder.up.", "decoder.up.", naming->levels - 1, -1, &num, &rest);
        if (name || strncmp(key, "decoder.up.", 11) == 0) {
            return name;
        }
    }
    if (strncmp(key, "decoder.post_quant_conv.", 24) == 0) { // BFL keeps it inside the decoder
        return strdup(key + 8);
    }
    return strncmp(key, "decoder.", 8) == 0 || strncmp(key, "post_quant_conv.", 16) == 0 ||
                   strcmp(key, "bn.running_mean") == 0 || strcmp(key, "bn.running_var") == 0
               ? strdup(key)
               : NULL;
}

bool vae_kl_prepare(struct vae_model * m, char * err, size_t err_size) {
    static const char *       parts[] = { "q", "k", "v", "proj_out" };
    const struct vae_weight * in      = vae_model_weight(m, "decoder.conv_in.weight");
    if (!in) {
        snprintf(err, err_size, "AutoencoderKL names but no 'decoder.conv_in.weight'");
        return false;
    }
    m->latent_channels = (int) in->shape[1];
    if (!vae_weights_join_attention(m, "AutoencoderKL", "decoder.mid.attn_1", parts, "qkv", err, err_size)) {
        return false;
    }
    m->own_space = VAE_SPACE_RAW;
    m->scale     = 1; // 2x per upsampling level (8 for the released decoders' four levels)
    for (int l = 0; l < 16; l++) {
        char name[64];
        snprintf(name, sizeof(name), "decoder.up.%d.upsample.conv.weight", l);
        m->scale *= vae_model_weight(m, name) ? 2 : 1;
    }
    m->out_scale  = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset = 0.5f;
    return true;
}

// HunyuanImage 2.1 (MODELS.md J.6): row k of the channel map `name` [n, cin, 1, 1] (no tensor in the
// file) is input channel k / div, of the k the shuffled conv's row k stands for (kl_hunyuan_row)
static int32_t kl_hunyuan_row(int32_t k, int32_t n);

static bool kl_hunyuan_map(struct vae_model * m, const char * name, int64_t n, int64_t cin, int64_t div, bool shuffled,
                           char * err, size_t err_size) {
    int32_t * rows = vae_weights_add_rows(m, name, n, cin, NULL, err, err_size);
    for (int32_t k = 0; rows && k < (int32_t) n; k++) {
        rows[k] = (int32_t) ((shuffled ? kl_hunyuan_row(k, (int32_t) n) : k) / div);
    }
    return rows != NULL;
}

// an upsampler's conv gives sub-position k = 2 dy + dx of channel c as row k C + c; pixel_shuffle
// reads row 4c + k
static int32_t kl_hunyuan_row(int32_t k, int32_t n) {
    return (k % 4) * (n / 4) + k / 4;
}

// HunyuanImage 2.1: conv_in adds the latent repeat_interleaved to its width (the map
// `decoder.conv_in.shortcut`); an upsampler adds its input repeat_interleaved by r = 4 C_out /
// C_in to its conv's 4 C_out channels, both moved into 2x2 pixels sub-position major (the map
// `decoder.up.L.upsample.shortcut`; the conv's rows reordered for pixel_shuffle)
static bool kl_hunyuan_prepare(struct vae_model * m, char * err, size_t err_size) {
    const struct vae_weight * in = vae_model_weight(m, "decoder.conv_in.weight");
    const int64_t             c0 = in->shape[0], z = in->shape[1];
    if (c0 % z != 0) {
        snprintf(err, err_size, "hunyuanimage2.1: 'decoder.conv_in.weight' gives %lld channels, not a multiple of its "
                 "%lld latent channels", (long long) c0, (long long) z);
        return false;
    }
    if (!kl_hunyuan_map(m, "decoder.conv_in.shortcut.weight", c0, z, c0 / z, false, err, err_size)) {
        return false;
    }
    for (int l = 0; l < 16; l++) {
        char name[64], bias[64];
        snprintf(name, sizeof(name), "decoder.up.%d.upsample.conv.weight", l);
        snprintf(bias, sizeof(bias), "decoder.up.%d.upsample.conv.bias", l);
        struct vae_weight * w = (struct vae_weight *) vae_model_weight(m, name);
        struct vae_weight * b = (struct vae_weight *) vae_model_weight(m, bias);
        if (!w) {
            continue;
        }
        const int64_t n = w->shape[0], cin = w->n_dims == 4 ? w->shape[1] : 0;
        if (!b || b->n_dims != 1 || b->shape[0] != n || cin < 1 || n % 4 != 0 || n % cin != 0 || n > INT32_MAX) {
            snprintf(err, err_size, "hunyuanimage2.1: tensor '%s' or its bias is not an upsampler's conv to 4 C_out "
                     "channels (a multiple of its C_in)", name);
            return false;
        }
        snprintf(name, sizeof(name), "decoder.up.%d.upsample.shortcut.weight", l);
        if (!vae_weights_reorder_rows(w, kl_hunyuan_row, err, err_size) ||
            !vae_weights_reorder_rows(b, kl_hunyuan_row, err, err_size) ||
            !kl_hunyuan_map(m, name, n, cin, n / cin, true, err, err_size)) {
            return false;
        }
    }
    return true;
}

// the variant from the latent channels, FLUX.2's BatchNorm statistics and the checkpoint around
// the decoder (MODELS.md §D.5); a named one where the file's shapes allow it
static bool kl_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                       size_t err_size) {
    // HunyuanImage 2.1: Tencent's .ckpt may hold its convs 5-D with a time axis of 1 (as its loader squeezes)
    const struct vae_weight * in = vae_model_weight(m, "decoder.conv_in.weight");
    if (in && in->n_dims == 5 && in->shape[1] == 64 && !vae_weights_drop_time_axis(m, "hunyuanimage2.1", err, err_size)) {
        return false;
    }
    if (!vae_kl_prepare(m, err, err_size)) {
        return false;
    }
    const int                 z    = m->latent_channels;
    const struct vae_weight * mean = vae_model_weight(m, "bn.running_mean");
    const struct vae_weight * var  = vae_model_weight(m, "bn.running_var");
    enum vae_family           found;
    bool                      certain = true;
    if (mean || var) {
        found = VAE_FAMILY_FLUX2;
        if (z != 32 || !mean || !var || mean->n_dims != 1 || var->n_dims != 1 || mean->shape[0] != 4 * z ||
            var->shape[0] != 4 * z) {
            snprintf(err, err_size,
                     "a FLUX.2-style AutoencoderKL (with BatchNorm statistics) needs 32 latent channels and "
                     "'bn.running_mean' and 'bn.running_var' of 128; the file has %d channels", z);
            return false;
        }
        ((struct vae_weight *) mean)->aux = ((struct vae_weight *) var)->aux = true;
    } else if (z == 4) {
        certain = vae_name_has_prefix(hdr, "conditioner.embedders.1.") || vae_name_has_prefix(hdr, "cond_stage_model.");
        found   = vae_name_has_prefix(hdr, "conditioner.embedders.1.")  ? VAE_FAMILY_SDXL
                  : vae_name_has_prefix(hdr, "cond_stage_model.model.") ? VAE_FAMILY_SD2
                                                                        : VAE_FAMILY_SD1;
    } else if (z == 16) {
        const bool flux = vae_name_has_prefix(hdr, "double_blocks.") ||
                          vae_name_has_prefix(hdr, "model.diffusion_model.double_blocks.");
        certain = flux || vae_name_has_prefix(hdr, "model.diffusion_model.joint_blocks.");
        found   = flux ? VAE_FAMILY_FLUX1 : VAE_FAMILY_SD3;
    } else if (z == 64) {
        found = VAE_FAMILY_HYIMAGE21;
        if (!kl_hunyuan_prepare(m, err, err_size)) {
            return false;
        }
    } else {
        snprintf(err, err_size,
                 "an AutoencoderKL decoder with %d latent channels: not a variant this build knows (sd1/sd2/sdxl: 4, "
                 "sd3/flux1: 16, flux2: 32 with BatchNorm statistics, hunyuanimage2.1: 64)", z);
        return false;
    }
    // the variants that share shapes: sd1, sd2, sdxl; sd3, flux1
    const int group_of[VAE_FAMILY_COUNT] = { [VAE_FAMILY_SD1] = 1, [VAE_FAMILY_SD2] = 1, [VAE_FAMILY_SDXL] = 1,
                                             [VAE_FAMILY_SD3] = 2, [VAE_FAMILY_FLUX1] = 2, [VAE_FAMILY_FLUX2] = 3,
                                             [VAE_FAMILY_HYIMAGE21] = 4 };
    const bool named = want != VAE_FAMILY_AUTO && group_of[want] == group_of[found];
    m->family         = named ? want : found;
    m->family_certain = certain || named;
    return true;
}

// FLUX.2: x' = x * sqrt(var + eps) + mean over the 128 patchified channels
static bool kl_flux2_affine(const struct vae_model * m, float * div, float * add, char * err, size_t err_size) {
    const float * mean = vae_model_weight_data(m, vae_model_weight(m, "bn.running_mean"), err, err_size);
    const float * var  = mean ? vae_model_weight_data(m, vae_model_weight(m, "bn.running_var"), err, err_size) : NULL;
    if (!var) {
        return false;
    }
    for (int c = 0; c < 4 * m->latent_channels; c++) {
        div[c] = 1.0f / sqrtf(var[c] + KL_FLUX2_BN_EPS);
        add[c] = mean[c];
    }
    return true;
}

// the diffusion model's x = (raw z - shift) * scale
static const struct vae_variant kl_variants[] = {
    { VAE_FAMILY_SD1, "sd1", "AutoencoderKL of SD 1.x (4 ch; normalized z = x / 0.18215)", 4, false, 0.18215f, 0.0f,
      .same_shapes = "sd1 or sd2 0.18215, or sdxl 0.13025" },
    { VAE_FAMILY_SD2, "sd2", "AutoencoderKL of SD 2.x (4 ch; normalized z = x / 0.18215)", 4, false, 0.18215f, 0.0f },
    { VAE_FAMILY_SDXL, "sdxl", "AutoencoderKL of SDXL (4 ch; normalized z = x / 0.13025)", 4, false, 0.13025f, 0.0f },
    { VAE_FAMILY_SD3, "sd3", "AutoencoderKL of SD3 and SD3.5 (16 ch; normalized z = x / 1.5305 + 0.0609)", 16, false,
      1.5305f, 0.0609f, .same_shapes = "sd3 1.5305 and 0.0609, or flux1 0.3611 and 0.1159" },
    { VAE_FAMILY_FLUX1, "flux1",
      "AutoencoderKL of FLUX.1, also Z-Image, HiDream, Lumina 2 (16 ch; normalized z = x / 0.3611 + 0.1159)", 16,
      false, 0.3611f, 0.1159f },
    { VAE_FAMILY_FLUX2, "flux2",
      "AutoencoderKL of FLUX.2 (32 ch raw; normalized: 128 ch at half the size, through the file's BatchNorm "
      "statistics and a 2x2 unpatchify, 16x spatial scale)", 32, false, .affine = kl_flux2_affine, .patch = 2 },
    { VAE_FAMILY_HYIMAGE21, "hunyuanimage2.1",
      "AutoencoderKL of HunyuanImage 2.1 (64 ch, 32x spatial scale; normalized z = x / 0.75289)", 64, false,
      0.75289f, 0.0f },
};

const struct vae_family_desc vae_kl_family = {
    /* .name           = */ "AutoencoderKL",
    /* .keys           = */ "'decoder.conv_in.weight', 'decoder.up_blocks.0.resnets.0.norm1.weight'",
    /* .style          = */ "AutoencoderKL",
    /* .variants       = */ VAE_VARIANTS(kl_variants),
    /* .recognise      = */ vae_kl_recognise,
    /* .canonical_name = */ vae_kl_canonical_name,
    /* .prepare        = */ kl_prepare,
    /* .build          = */ kl_build,
    /* .causal         = */ NULL,
};
