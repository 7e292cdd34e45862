// Graph builder for the MiniMax-H3 video VAE decoder (MODELS.md J.3; diffusers'
// AutoencoderKLMiniMaxH3): 24 latent channels, 16x in space, 4x in time, and no convolutions: a ViT.
// Every latent voxel of a chunk becomes a token (post_quant_conv, proj_in); the register tokens and
// one zero token follow them; blocks of RMS norm, multi-head attention over all the chunk's tokens
// (q and k RMS-normalised per head and rotated on 3 axes, VAE_OP_ROPE) and a SwiGLU feed-forward,
// each scaled by its LayerScale (folded into the projection before it) and added to the stream;
// then LayerNorm and proj_out to 3 x 4 x 16 x 16 values per token, which the loader orders for a
// frame split and four pixel shuffles (the unpatchify), with the ImageNet denormalisation folded
// in, so the graph gives RGB in [0, 1].
//
// The decode is chunked upstream, and the chunks are part of the result: chunk i decodes latent
// frames [5 i, 5 i + 7) to 28 frames, keeps [3, 20) with its first 5 cross-faded from the 5 frames
// [23, 28) the chunk before held (VAE_OP_CROSSFADE, through the stream's state), and holds its own
// [23, 28); a stream of T latent frames is padded with copies of its last to whole chunks, its
// extra frames cut (vae_model_stream_frames): 5 n + 2 latent frames give 17 n + 5 frames, 1 and 2
// none (upstream fails). So a step is exactly one of upstream's chunks, and memory is one chunk's
// graph whatever the stream's length; the attention sees the whole chunk, so no spatial tiling
// (upstream's default 256-pixel tiles are what leave seams; vaedecode decodes whole frames, as
// upstream does with tiling disabled).
//
// Not in the weights and taken as released: 64 channels per head (the head count follows from the
// width), RoPE theta 100 on 48 of them, eps 1e-5, one zero token, 16 x 16 x 4 patches.

#include "vae-family.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MM_HEAD    64      // channels per head
#define MM_ROPE    48      // of them rotated (0.75)
#define MM_THETA   100.0f
#define MM_EPS     1e-5f
#define MM_PATCH   16
#define MM_PATCH_T 4
#define MM_OUT     (3 * MM_PATCH_T * MM_PATCH * MM_PATCH)
#define MM_CHUNK   5       // latent frames a chunk advances
#define MM_OVERLAP 2       // more it decodes, shared with the next
#define MM_HOLD    5       // frames it holds for the next one's cross-fade
#define MM_PRE     (MM_OVERLAP * MM_PATCH_T - MM_HOLD) // frames it drops in front (3)
#define MM_MAX_BLOCKS 256

static const char * const mm_prefixes[] = { "", "vae." };

// diffusers' names (canonical), under a checkpoint's `vae.` too
static int mm_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    (void) err, (void) err_size;
    for (size_t p = 0; p < sizeof(mm_prefixes) / sizeof(mm_prefixes[0]); p++) {
        char key[96];
        snprintf(key, sizeof(key), "%sdecoder.register_tokens", mm_prefixes[p]);
        const struct vae_st_tensor * reg = vae_st_header_find(hdr, key);
        snprintf(key, sizeof(key), "%sdecoder.proj_in.weight", mm_prefixes[p]);
        const struct vae_st_tensor * in = vae_st_header_find(hdr, key);
        if (reg && in && in->n_dims == 2 && in->shape[1] == 24) {
            naming->prefix = mm_prefixes[p];
            return 1;
        }
    }
    return 0;
}

// the decoder's tensors and post_quant_conv; the encoder and quant_conv are not the decoder's
static char * mm_canonical_name(const char * key, const struct vae_naming * naming) {
    (void) naming;
    return strncmp(key, "decoder.", 8) == 0 || strncmp(key, "post_quant_conv.", 16) == 0 ? strdup(key) : NULL;
}

// proj_out's rows for a frame split in 4 and four pixel shuffles: row k = t 768 + c0, c0 = 256 c +
// 64 s4 + 16 s3 + 4 s2 + s1 with s = 2 i + j (pixel shuffle n takes height offset bit i_n and width
// offset bit j_n, the first the most significant) is upstream's ((c 4 + t) 16 + y) 16 + x, y =
// 8 i1 + 4 i2 + 2 i3 + i4 (x the same of the j)
static int32_t mm_out_row(int32_t k, int32_t n) {
    (void) n;
    const int32_t t = k / 768, c0 = k % 768, c = c0 / 256;
    int32_t       y = 0, x = 0;
    for (int b = 0; b < 4; b++) { // shuffle b + 1 reads bits (i, j) of c0 at 4^b
        const int32_t s = c0 >> (2 * b) & 3;
        y |= (s >> 1) << (3 - b);
        x |= (s & 1) << (3 - b);
    }
    return ((c * MM_PATCH_T + t) * MM_PATCH + y) * MM_PATCH + x;
}

// the weight `name` (and `name`'s bias of the same rows) scaled row-wise by the file's tensor
// `scale` (LayerScale), or by mul and offset by add where scale is NULL; the scale tensor is then
// read outside the graphs
static bool mm_fold(struct vae_model * m, const char * name, const char * scale, const float * mul, const float * add,
                    char * err, size_t err_size) {
    char wname[96], bname[96];
    snprintf(wname, sizeof(wname), "%s.weight", name);
    snprintf(bname, sizeof(bname), "%s.bias", name);
    struct vae_weight * w[2] = { (struct vae_weight *) vae_model_weight(m, wname),
                                 (struct vae_weight *) vae_model_weight(m, bname) };
    struct vae_weight * sw   = scale ? (struct vae_weight *) vae_model_weight(m, scale) : NULL;
    const int64_t       n    = w[0] ? w[0]->shape[0] : 0;
    if (!w[0] || !w[1] || w[1]->n_dims != 1 || w[1]->shape[0] != n ||
        (scale && (!sw || sw->n_dims != 1 || sw->shape[0] != n))) {
        snprintf(err, err_size, "minimax-h3: '%s', '%s'%s%s%s is missing or not of %lld rows", wname, bname,
                 scale ? " or '" : "", scale ? scale : "", scale ? "'" : "", (long long) n);
        return false;
    }
    const float * s = scale ? vae_model_weight_data(m, sw, err, err_size) : NULL;
    if (scale && !s) {
        return false;
    }
    for (int i = 0; i < 2; i++) {
        if (!(w[i]->affine = calloc(2 * (size_t) n, sizeof(float)))) {
            snprintf(err, err_size, "out of memory");
            return false;
        }
        for (int64_t k = 0; k < n; k++) {
            w[i]->affine[k]     = s ? s[k] : mul[k];
            w[i]->affine[n + k] = s || i == 0 ? 0.0f : add[k];
        }
    }
    if (sw) {
        sw->aux = true;
    }
    return true;
}

// the blocks: each with to_q, to_k and to_v
static int mm_blocks(const struct vae_model * m) {
    int n = 0;
    for (char name[64]; n < MM_MAX_BLOCKS; n++) {
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.attn", n);
        if (!vae_model_dim(m, name, ".to_q.weight", 0)) {
            return n;
        }
    }
    return n;
}

static bool mm_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                       size_t err_size) {
    (void) hdr, (void) want;
    // diffusers' Linear weights [O, I] are the 1x1 convs [O, I, 1, 1] they stand for; the register
    // tokens [1, E, D] the E rows they are
    for (int i = 0; i < m->n_weights; i++) {
        struct vae_weight * w = &m->weights[i];
        if (w->n_dims == 2) {
            w->n_dims   = 4;
            w->shape[2] = w->shape[3] = 1;
        }
    }
    struct vae_weight * reg = (struct vae_weight *) vae_model_weight(m, "decoder.register_tokens");
    if (reg && reg->n_dims == 3 && reg->shape[0] == 1) {
        reg->n_dims   = 2;
        reg->shape[0] = reg->shape[1];
        reg->shape[1] = reg->shape[2];
    }
    const int D = vae_model_dim(m, "decoder.proj_in", ".weight", 0), n = mm_blocks(m);
    if (D < MM_HEAD || D % MM_HEAD || !n) {
        snprintf(err, err_size, "minimax-h3: 'decoder.proj_in.weight' gives %d channels (heads of %d: a multiple of "
                 "it) and 'decoder.transformer_blocks.0.attn.to_q.weight' %s", D, MM_HEAD, n ? "is there" : "is missing");
        return false;
    }
    m->family          = VAE_FAMILY_MINIMAXH3;
    m->family_certain  = true;
    m->latent_channels = 24;
    for (int i = 0; i < n; i++) {
        static const char * const parts[] = { "to_q", "to_k", "to_v" };
        const char * const        what[]  = { "weight", "bias" };
        for (int j = 0; j < 2; j++) { // q, k and v joined: one conv of 3 D rows
            const struct vae_st_tensor * src[3];
            char                         name[96];
            for (int p = 0; p < 3; p++) {
                snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.attn.%s.%s", i, parts[p], what[j]);
                const struct vae_weight * w = vae_model_weight(m, name);
                if (!w || w->shape[0] != D || (j == 0 && (w->n_dims != 4 || w->shape[1] != D)) ||
                    (j == 1 && w->n_dims != 1)) {
                    snprintf(err, err_size, "minimax-h3: '%s' is missing or not of %d rows%s", name, D,
                             j == 0 ? " and columns" : "");
                    return false;
                }
                src[p] = w->src[0];
            }
            snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.attn.to_qkv.%s", i, what[j]);
            if (!vae_weights_add(m, name, j == 0 ? 4 : 1, (const int64_t[]) { 3 * D, D, 1, 1 }, src, 3)) {
                snprintf(err, err_size, "out of memory");
                return false;
            }
        }
        char name[96], scale[96];
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.attn.to_out.0", i);
        snprintf(scale, sizeof(scale), "decoder.transformer_blocks.%d.scale1", i);
        if (!mm_fold(m, name, scale, NULL, NULL, err, err_size)) {
            return false;
        }
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.ff.net.2", i);
        snprintf(scale, sizeof(scale), "decoder.transformer_blocks.%d.scale2", i);
        if (!mm_fold(m, name, scale, NULL, NULL, err, err_size)) {
            return false;
        }
    }
    // RGB in [0, 1] from ImageNet-normalised values: x std[c] + mean[c], per row of proj_out
    static const float std[3] = { 0.229f, 0.224f, 0.225f }, mean[3] = { 0.485f, 0.456f, 0.406f };
    float              mul[MM_OUT], add[MM_OUT];
    for (int k = 0; k < MM_OUT; k++) {
        mul[k] = std[k % 768 / 256];
        add[k] = mean[k % 768 / 256];
    }
    struct vae_weight * w = (struct vae_weight *) vae_model_weight(m, "decoder.proj_out.weight");
    struct vae_weight * b = (struct vae_weight *) vae_model_weight(m, "decoder.proj_out.bias");
    if (!w || !b || w->shape[0] != MM_OUT || b->shape[0] != MM_OUT) {
        snprintf(err, err_size, "minimax-h3: 'decoder.proj_out.weight' or its bias is missing or not of %d rows (3 "
                 "channels of %dx%dx%d patches)", MM_OUT, MM_PATCH_T, MM_PATCH, MM_PATCH);
        return false;
    }
    if (!vae_weights_reorder_rows(w, mm_out_row, err, err_size) || !vae_weights_reorder_rows(b, mm_out_row, err, err_size) ||
        !mm_fold(m, "decoder.proj_out", NULL, mul, add, err, err_size)) {
        return false;
    }
    m->own_space         = VAE_SPACE_RAW;
    m->scale             = MM_PATCH;
    m->frames_per_latent = MM_PATCH_T;
    m->chunk_latents     = MM_CHUNK;
    m->chunk_overlap     = MM_OVERLAP;
    m->chunk_hold        = MM_HOLD;
    m->out_scale         = 1.0f; // (denormalised by proj_out)
    m->out_offset        = 0.0f;
    return true;
}

// one chunk: n = 7 latent frames [7, 24, h, w] -> its 17 frames, then the 5 it holds [22, 3, 16 h, 16 w]
static struct vae_graph * mm_build(const struct vae_model * m, int n, int h, int w, bool first, char * err,
                                   size_t err_size) {
    (void) first;
    struct vae_builder b;
    if (n != MM_CHUNK + MM_OVERLAP) {
        snprintf(err, err_size, "minimax-h3 decodes chunks of %d latent frames, not %d", MM_CHUNK + MM_OVERLAP, n);
        return NULL;
    }
    if (!vae_builder_init(&b, m, err, err_size)) {
        return NULL;
    }
    const int           D   = vae_model_dim(m, "decoder.proj_in", ".weight", 0);
    struct vae_tensor * reg = vae_builder_weight(&b, 2, (const int64_t[]) { -1, D }, "decoder.register_tokens");
    struct vae_tensor * x   = vae_graph_input(b.g, n, 24, h, w);                        // [7, 24, h, w]
    x = vae_builder_conv3d(&b, x, "post_quant_conv", 1, 1, NULL, 0);                   // [7, 24, h, w]
    x = x ? vae_builder_conv2d(&b, x, "decoder.proj_in", 1, true, NULL, VAE_ACT_NONE, false) : NULL; // [7, D, h, w]
    x = x && reg ? vae_graph_tokens(b.g, x, reg, 1) : NULL; // the registers, then one zero token: [1, D, 1, L = 7 h w + E + 1]
    const int n_blocks = mm_blocks(m);
    for (int i = 0; x && i < n_blocks; i++) {
        char name[96];
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.norm1.weight", i);
        struct vae_tensor * g1  = vae_builder_weight(&b, 1, (const int64_t[]) { D }, "%s", name);
        struct vae_tensor * y   = g1 ? vae_graph_rms_norm_eps(b.g, x, MM_EPS, g1, NULL, NULL, VAE_ACT_NONE) : NULL;
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.attn.to_qkv", i);
        y = y ? vae_builder_conv2d(&b, y, name, 1, true, NULL, VAE_ACT_NONE, false) : NULL;   // [1, 3D, 1, L]
        y = y ? vae_graph_rope(b.g, y, MM_HEAD, MM_ROPE, MM_THETA, MM_EPS, n, h, w) : NULL;
        y = y ? vae_graph_attention_heads(b.g, y, MM_HEAD) : NULL;                           // [1, D, 1, L]
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.attn.to_out.0", i);
        x = y ? vae_builder_conv2d(&b, y, name, 1, true, x, VAE_ACT_NONE, false) : NULL;     // x + scale1 attn
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.norm2.weight", i);
        struct vae_tensor * g2 = x ? vae_builder_weight(&b, 1, (const int64_t[]) { D }, "%s", name) : NULL;
        y = g2 ? vae_graph_rms_norm_eps(b.g, x, MM_EPS, g2, NULL, NULL, VAE_ACT_NONE) : NULL;
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.ff.net.0.proj", i);
        y = y ? vae_builder_conv2d(&b, y, name, 1, true, NULL, VAE_ACT_NONE, false) : NULL;   // [1, 2F, 1, L]
        y = y && y->ne[1] % 2 ? vae_builder_fail(&b, "minimax-h3: '%s.weight' has %lld rows, not an even count (the "
                                                 "SwiGLU's value and gate)", name, (long long) y->ne[1]) : y;
        y = y ? vae_graph_glu(b.g, y, VAE_ACT_SILU) : NULL;                                   // [1, F, 1, L]
        snprintf(name, sizeof(name), "decoder.transformer_blocks.%d.ff.net.2", i);
        x = y ? vae_builder_conv2d(&b, y, name, 1, true, x, VAE_ACT_NONE, false) : NULL;      // x + scale2 ff
    }
    x = x ? vae_graph_untokens(b.g, x, n, h, w) : NULL;                                       // [7, D, h, w]
    struct vae_tensor * go = x ? vae_builder_weight(&b, 1, (const int64_t[]) { D }, "decoder.norm_out.weight") : NULL;
    struct vae_tensor * bo = go ? vae_builder_weight(&b, 1, (const int64_t[]) { D }, "decoder.norm_out.bias") : NULL;
    x = bo ? vae_graph_layer_norm(b.g, x, MM_EPS, go, bo) : NULL;
    x = x ? vae_builder_conv2d(&b, x, "decoder.proj_out", 1, true, NULL, VAE_ACT_NONE, false) : NULL; // [7, 3072, h, w]
    x = x ? vae_graph_frame_split(b.g, x, MM_PATCH_T) : NULL;                                 // [28, 768, h, w]
    for (int i = 0; x && i < 4; i++) {
        x = vae_graph_pixel_shuffle(b.g, x);                                                  // -> [28, 3, 16 h, 16 w]
    }
    // [22, 3, 16 h, 16 w]: frames [3, 20) faded in from those the chunk before held, then [23, 28)
    x = x ? vae_graph_crossfade(b.g, x, b.n_slots++, MM_PRE, MM_CHUNK * MM_PATCH_T - MM_PRE, MM_HOLD) : NULL;
    return vae_builder_finish(&b, x);
}

static const struct vae_variant mm_variants[] = {
    { VAE_FAMILY_MINIMAXH3, "minimax-h3",
      "MiniMax-H3 video VAE (24 ch, 16x, a ViT decoding upstream's chunks of 5 latent frames: 5 n + 2 latent frames "
      "give 17 n + 5 frames, at least 3 latent frames)", 24, true,
      .why_none = "MiniMax-H3's latent statistics are in its config.json, not in the weights: feed raw latents, "
                  "z = x * std + mean" },
};

const struct vae_family_desc vae_minimax_family = {
    /* .name           = */ "MiniMax-H3",
    /* .keys           = */ "'decoder.register_tokens' with 'decoder.proj_in.weight' of 24 inputs",
    /* .style          = */ NULL,
    /* .variants       = */ VAE_VARIANTS(mm_variants),
    /* .recognise      = */ mm_recognise,
    /* .canonical_name = */ mm_canonical_name,
    /* .prepare        = */ mm_prepare,
    /* .build          = */ mm_build,
    /* .causal         = */ NULL,
};
