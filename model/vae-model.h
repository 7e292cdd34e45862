// A loaded decoder: its weights as f32 under canonical names, the family they were recognised
// as, and what the family says about its input (latent space) and output (value range).
// Everything here is independent of GStreamer and of the device.

#pragma once

#include "vae-backend.h"
#include "vae-safetensors.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vae_family {
    VAE_FAMILY_AUTO,      // detect from the file
    VAE_FAMILY_TAESD,     // tiny decoder for SD 1.x/2.x latents (4 ch)
    VAE_FAMILY_TAESDXL,   // tiny decoder for SDXL latents (4 ch)
    VAE_FAMILY_TAESD3,    // tiny decoder for SD3 latents (16 ch)
    VAE_FAMILY_TAEF1,     // tiny decoder for FLUX.1 latents (16 ch)
    VAE_FAMILY_TAEF2,     // tiny decoder for FLUX.2 latents (32 ch, mid-block GroupNorm)
    VAE_FAMILY_COUNT,
};

// what latents a stream holds: the VAE's own raw latents, or the diffusion model's normalized ones
enum vae_space {
    VAE_SPACE_AUTO,       // whatever the decoder takes: no conversion
    VAE_SPACE_RAW,
    VAE_SPACE_NORMALIZED,
};

struct vae_weight {
    char *  name;         // canonical (original upstream) name
    float * data;         // f32, PyTorch layout
    int     n_dims;
    int64_t shape[VAE_ST_MAX_DIMS];
};

struct vae_model {
    enum vae_family     family;
    bool                family_certain;   // false when the file cannot tell (4 ch: taesd or taesdxl)
    int                 latent_channels;
    enum vae_space      own_space;        // the space the decoder itself takes
    float               out_scale, out_offset; // decoder output -> [0, 1]
    int                 n_weights;
    struct vae_weight * weights;
    char                description[160];
};

const char *     vae_family_name(enum vae_family family);  // "taef2", ...
enum vae_family  vae_family_from_name(const char * name);   // VAE_FAMILY_COUNT when unknown

// load a safetensors decoder; family AUTO detects it, any other value is checked against the file
struct vae_model * vae_model_load(const char * path, enum vae_family family, char * err, size_t err_size);
void               vae_model_free(struct vae_model * model);
const struct vae_weight * vae_model_weight(const struct vae_model * model, const char * name);

// per-channel affine (scale, shift: latent_channels each) that takes latents in `space` to the
// decoder's own space; false with a message where the family has no constants for it
bool vae_model_space_affine(const struct vae_model * model, enum vae_space space, float * scale, float * shift,
                            char * err, size_t err_size);

// the decode graph for n latent frames of h x w (in the decoder's own space)
struct vae_graph * vae_model_build_graph(const struct vae_model * model, int n, int h, int w, char * err,
                                         size_t err_size);

// builders, one per family group
struct vae_graph * vae_taesd_build(const struct vae_model * model, int n, int h, int w, char * err, size_t err_size);

#ifdef __cplusplus
}
#endif
