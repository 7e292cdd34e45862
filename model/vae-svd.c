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
// original (sgm) ones; the loader maps diffusers' onto them.

#include "vae-model.h"

#include <stdio.h>

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

struct vae_graph * vae_svd_build(const struct vae_model * model, int n, int h, int w, char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    struct vae_tensor * x = vae_graph_input(b.g, n, model->latent_channels, h, w);     // [N, 4, h, w]
    x                     = vae_kl_decoder(&b, x, svd_time_stack);                      // [N, 3, 8h, 8w]
    x                     = x ? svd_time_conv(&b, x, "decoder.conv_out.time_mix_conv", NULL) : NULL;
    return vae_builder_finish(&b, x);                                                   // [N, 3, 8h, 8w]
}
