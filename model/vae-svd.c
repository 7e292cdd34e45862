// Graph builder for Stable Video Diffusion's temporal decoder (MODELS.md §I; diffusers'
// AutoencoderKLTemporalDecoder, Stability-AI/generative-models' VideoDecoder). Its spatial part is
// the SD 1.x AutoencoderKL decoder (vae-kl.c builds it); every ResNet block is followed by a
// temporal block over the frames of the decode call, and the RGB conv by a conv over the frames:
//
//   x + sigmoid(m) * conv_t(SiLU(GN_t(conv_t(SiLU(GN_t(x))))))
//
// where GN_t is a GroupNorm (32 groups, eps 1e-5) whose statistics span all the frames, and
// conv_t a (3, 1, 1) conv with a zero frame at each end of the call. The time_mixer's blend
// (1 - s) x + s (x + conv_t(...)), s = sigmoid(m), is folded by the loader into the last conv's
// weight and bias (vae_weight.mix). So n latent frames decode as one call of diffusers'
// decode(z, num_frames=n): every output frame depends on every latent of the call, and a stream
// cut into calls has seams that are upstream's own (its decode_chunk_size). Names are the
// original (sgm) ones; diffusers' map onto them. A file is an AutoencoderKL's (vae-kl.c reads
// its names and prepares it) with temporal blocks.

#include "vae-family.h"
#include "vae-kl.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVD_GROUPS   32
#define SVD_TIME_EPS 1e-5f   // the temporal GroupNorms (the spatial ones: 1e-6)

// GroupNorm `name` over the frames of x, then SiLU
static struct vae_tensor * svd_norm(struct vae_builder * b, struct vae_tensor * x, const char * block, const char * at) {
    const int64_t       shape[1] = { x->ne[1] };
    struct vae_tensor * gamma    = vae_builder_weight(b, 1, shape, "%s.time_stack.%s.weight", block, at);
    struct vae_tensor * beta     = vae_builder_weight(b, 1, shape, "%s.time_stack.%s.bias", block, at);
    if (!b->failed && x->ne[1] % SVD_GROUPS != 0) {
        return vae_builder_fail(b, "%s.time_stack.%s: %lld channels are not a multiple of %d groups", block, at,
                                (long long) x->ne[1], SVD_GROUPS);
    }
    return b->failed ? NULL : vae_graph_group_norm_frames(b->g, x, SVD_GROUPS, SVD_TIME_EPS, gamma, beta, VAE_ACT_SILU);
}

// the (3, 1, 1) conv `name` over the frames of x, adding r (or NULL)
static struct vae_tensor * svd_time_conv(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                         struct vae_tensor * r) {
    struct vae_tensor * w  = vae_builder_weight(b, 5, (const int64_t[]) { x->ne[1], x->ne[1], 3, 1, 1 }, "%s.weight", name);
    struct vae_tensor * bt = w ? vae_builder_weight(b, 1, (const int64_t[]) { x->ne[1] }, "%s.bias", name) : NULL;
    return bt ? vae_graph_time_conv(b->g, x, w, bt, r, VAE_ACT_NONE) : NULL;
}

// the temporal block after ResNet block `block`, blended with its input x (see the top)
static struct vae_tensor * svd_time_stack(struct vae_builder * b, struct vae_tensor * x, const char * block) {
    char name[96];
    snprintf(name, sizeof(name), "%s.time_stack.out_layers.3.weight", block);
    const struct vae_weight * last = vae_model_weight(b->model, name);
    if (last && !last->mix) {
        return vae_builder_fail(b, "svd: tensor '%s.mix_factor' (the blend of its temporal block) is missing", block);
    }
    struct vae_tensor * t = svd_norm(b, x, block, "in_layers.0");                      // [N, C, H, W]
    snprintf(name, sizeof(name), "%s.time_stack.in_layers.2", block);
    t = t ? svd_time_conv(b, t, name, NULL) : NULL;                                     // [N, C, H, W]
    t = t ? svd_norm(b, t, block, "out_layers.0") : NULL;
    snprintf(name, sizeof(name), "%s.time_stack.out_layers.3", block);
    return t ? svd_time_conv(b, t, name, x) : NULL;                                     // x + s conv(...)
}

static struct vae_graph * svd_build(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                    size_t err_size) {
    (void) first;
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w);     // [N, 4, h, w]
    x                     = vae_kl_decoder(&b, x, svd_time_stack);                      // [N, 3, 8h, 8w]
    x                     = x ? svd_time_conv(&b, x, "decoder.conv_out.time_mix_conv", NULL) : NULL;
    return vae_builder_finish(&b, x);                                                   // [N, 3, 8h, 8w]
}

// an AutoencoderKL with the last temporal conv or the mid block's first blend, in either naming
static int svd_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    static const char * marks[] = { "decoder.conv_out.time_mix_conv.weight", "decoder.mid.block_1.mix_factor",
                                    "decoder.time_conv_out.weight", "decoder.mid_block.resnets.0.time_mixer.mix_factor" };
    const int           kl      = vae_kl_recognise(hdr, naming, err, err_size);
    for (size_t i = 0; kl > 0 && i < sizeof(marks) / sizeof(marks[0]); i++) {
        char key[128];
        snprintf(key, sizeof(key), "%s%s", naming->prefix, marks[i]);
        if (vae_st_header_find(hdr, key)) {
            return 1;
        }
    }
    return kl < 0 ? kl : 0;
}

// diffusers' AutoencoderKLTemporalDecoder (SVD) names -> those of AutoencoderKL plus the original
// temporal ones (`time_stack.*`, `mix_factor`, `conv_out.time_mix_conv`), consuming key
static char * svd_diffusers_name(char * key) {
    static const char * map[][2] = {
        { ".spatial_res_block.", "." },
        { ".temporal_res_block.norm1.", ".time_stack.in_layers.0." },
        { ".temporal_res_block.conv1.", ".time_stack.in_layers.2." },
        { ".temporal_res_block.norm2.", ".time_stack.out_layers.0." },
        { ".temporal_res_block.conv2.", ".time_stack.out_layers.3." },
        { ".time_mixer.mix_factor", ".mix_factor" },
        { "decoder.time_conv_out.", "decoder.conv_out.time_mix_conv." },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        key = vae_name_replace(key, map[i][0], map[i][1]);
    }
    return key;
}

static char * svd_canonical_name(const char * key, const struct vae_naming * naming) {
    if (naming->kind != VAE_KL_NAMING_DIFFUSERS) {
        return vae_kl_canonical_name(key, naming);
    }
    char * svd  = svd_diffusers_name(strdup(key));
    char * name = svd ? vae_kl_canonical_name(svd, naming) : NULL;
    free(svd);
    return name;
}

// SVD: each temporal block's blend `<block>.mix_factor` (one value) scales the block's last conv
// (vae_weight.mix, see vae-svd.c); the builder names a conv whose blend is missing
static bool svd_mix(struct vae_model * m, char * err, size_t err_size) {
    static const char * parts[] = { "weight", "bias" };
    for (int i = 0; i < m->n_weights; i++) {
        const struct vae_weight * f   = &m->weights[i];
        const size_t              len = strlen(f->name);
        if (len < 11 || strcmp(f->name + len - 11, ".mix_factor") != 0) {
            continue;
        }
        if (f->n_src != 1 || f->src[0]->numel != 1) {
            snprintf(err, err_size, "svd: tensor '%s' holds %llu values, not 1 (a temporal block's blend)",
                     f->src[0]->name, (unsigned long long) f->src[0]->numel);
            return false;
        }
        for (int j = 0; j < 2; j++) {
            char name[128];
            snprintf(name, sizeof(name), "%.*s.time_stack.out_layers.3.%s", (int) len - 11, f->name, parts[j]);
            struct vae_weight * conv = (struct vae_weight *) vae_model_weight(m, name);
            if (conv) {
                conv->mix = f->src[0];
            }
        }
    }
    return true;
}

static bool svd_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                        size_t err_size) {
    (void) hdr, (void) want;
    if (!vae_kl_prepare(m, err, err_size)) {
        return false;
    }
    if (m->latent_channels != 4) {
        snprintf(err, err_size, "an SVD-style temporal decoder with %d latent channels: only 4 is known",
                 m->latent_channels);
        return false;
    }
    m->family         = VAE_FAMILY_SVD;
    m->family_certain = true;
    m->clip_calls     = true;
    return svd_mix(m, err, err_size);
}

static const struct vae_variant svd_variants[] = {
    { VAE_FAMILY_SVD, "svd", "Stable Video Diffusion's temporal decoder (4 ch, scale 0.18215 as sd1; see chunk-frames)",
      4, true, 0.18215f, 0.0f },
};

const struct vae_family_desc vae_svd_family = {
    /* .name           = */ "SVD",
    /* .keys           = */ "AutoencoderKL keys with 'decoder.conv_out.time_mix_conv.weight', 'decoder.time_conv_out.weight'",
    /* .style          = */ "AutoencoderKL",
    /* .variants       = */ VAE_VARIANTS(svd_variants),
    /* .recognise      = */ svd_recognise,
    /* .canonical_name = */ svd_canonical_name,
    /* .prepare        = */ svd_prepare,
    /* .build          = */ svd_build,
    /* .causal         = */ NULL,
};
