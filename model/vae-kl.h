// What the AutoencoderKL family (vae-kl.c) shares with SVD's temporal decoder (vae-svd.c), an
// AutoencoderKL with temporal blocks: the namings, the load-time preparation and the decoder.

#pragma once

#include "vae-family.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vae_kl_naming {
    VAE_KL_NAMING_LDM,       // LDM / ComfyUI / BFL: `decoder.mid.block_1.*`, `decoder.up.L.block.J.*` (canonical)
    VAE_KL_NAMING_DIFFUSERS, // `decoder.mid_block.resnets.N.*`, `decoder.up_blocks.I.resnets.J.*`, ...
    VAE_KL_NAMING_HUNYUAN,   // HunyuanImage 2.1's original (Tencent, ComfyUI): LDM's, up.0 the first level run
    VAE_KL_NAMING_FLAT,      // its diffusers one: `decoder.up_blocks.N.{norm1,...,conv}.*`, one flat list
};

// where an AutoencoderKL's names start in hdr (a full checkpoint's prefix) and which naming they use
// (naming->levels: the up levels; per_level: a flat list's entries per level); the
// vae_family_desc.recognise contract
int    vae_kl_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size);
// a key's LDM name (both attention namings of diffusers: to_q.. and the older query..)
char * vae_kl_canonical_name(const char * key, const struct vae_naming * naming);
// the latent channels, the attention's q, k, v joined (`decoder.mid.attn_1.qkv`), the scale from
// the up levels, and the output range
bool   vae_kl_prepare(struct vae_model * m, char * err, size_t err_size);

// the AutoencoderKL decoder from x [N, z, h, w] to its RGB output [N, 3, 8h, 8w] (scale 8 for
// four levels) inside a build; block: NULL, or what follows every residual block (mid and up),
// given the block's output and its name ("decoder.mid.block_1", "decoder.up.3.block.0", ...)
typedef struct vae_tensor * (*vae_kl_block_fn)(struct vae_builder * b, struct vae_tensor * x, const char * name);
struct vae_tensor * vae_kl_decoder(struct vae_builder * b, struct vae_tensor * x, vae_kl_block_fn block);

#ifdef __cplusplus
}
#endif
