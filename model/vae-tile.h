// The exact tiled decode of one AutoencoderKL frame (vae-tile.c), for the decode session: frames
// too large for the device, or a tile size the user asked for. Internal to model/.

#pragma once

#include "vae-model.h"

struct vae_tiled;

// plan the decode of [z, h, w] latents in tiles of at most `tile` pixels a side (in the pixels of
// the layer being tiled: output pixels at the end) and check it against max_bytes (0 = the
// device's own limit): every graph is prepared once here so that memory is known before the first
// frame. NULL after a message.
struct vae_tiled * vae_tiled_new(const struct vae_model * model, vae_backend_t * backend, int h, int w, int tile,
                                 size_t max_bytes, char * err, size_t err_size);
void               vae_tiled_free(struct vae_tiled * t);
// decode one latent frame [z, h, w] (the decoder's own space); the result stays until the next.
// cancel (NULL, or a flag another thread may set) is read before each tile: nonzero stops the
// decode with the message VAE_SESSION_INTERRUPTED.
const float *      vae_tiled_decode(struct vae_tiled * t, const float * latent, const int * cancel, char * err,
                                    size_t err_size);
// host buffers and the largest prepared graph together
size_t             vae_tiled_peak_bytes(const struct vae_tiled * t);
// the largest |value| of each whole-frame activation of the last decode: the head's output
// ("decoder.mid"), then each step's (named by its conv); returns the count, at most
// VAE_KL_MAX_STEPS + 1. A value above 65504 does not fit fp16 (NaN: NaN was there).
int                vae_tiled_ranges(const struct vae_tiled * t, const char ** names, float * max_abs);
