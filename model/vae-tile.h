// The exact tiled decodes, for the decode session: AutoencoderKL frames (vae-tile.c) and causal
// video streams (vae-tile-video.c: Wan, SeedVR2, HunyuanVideo 1.5, LTX-2), for frames too large for
// the device or a tile size the user asked for. Internal to model/.

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
// cancel (NULL, or a flag another thread may set) is read before each tile and, by the backend,
// before each node of a tile's graph: nonzero stops the decode with the message
// VAE_SESSION_INTERRUPTED.
const float *      vae_tiled_decode(struct vae_tiled * t, const float * latent, const int * cancel, char * err,
                                    size_t err_size);
// host buffers and the largest prepared graph together
size_t             vae_tiled_peak_bytes(const struct vae_tiled * t);
// the largest |value| of each whole-frame activation of the last decode: the head's output
// ("decoder.mid"), then each step's (named by its conv); returns the count, at most
// VAE_KL_MAX_STEPS + 1. A value above 65504 does not fit fp16 (NaN: NaN was there).
int                vae_tiled_ranges(const struct vae_tiled * t, const char ** names, float * max_abs);

// the tile machinery both decodes share (vae-tile.c). Where the crops of one axis of `size` start:
// crops of `c` overlapping by 2, the last flush with the end; crop k owns [own[k], own[k + 1]) of
// the step's input pixels; returns the count
int  vae_tile_spans(int size, int c, int * start, int * own);
// rows [y0, y0 + ch) x columns [x0, x0 + cw) of src [C, H, W] into dst [C, ch, cw]
void vae_tile_gather(const float * src, int c, int h, int w, int y0, int x0, int ch, int cw, float * dst);
// the owned rectangle [oy0, oy1) x [ox0, ox1) of a tile output [C, th, tw] that starts at (ty, tx)
// into dst [C, H, W]
void vae_tile_scatter(const float * src, int c, int th, int tw, int ty, int tx, float * dst, int h, int w, int oy0,
                      int oy1, int ox0, int ox1);
// the GroupNorm statistics of a whole frame x [C, H, W] (hw = H W) for tiles normalized as a whole:
// `groups` means, then `groups` values of 1 / sqrt(var + eps) (the input of vae_graph_group_norm_stats)
void vae_tile_group_stats(const float * x, int c, size_t hw, int groups, float eps, float * stats);
// false, or true with the message VAE_SESSION_INTERRUPTED once *cancel (NULL: never) is set
bool vae_tile_cancelled(const int * cancel, char * err, size_t err_size);
// whether a decode in `tile`-pixel tiles that takes `peak` bytes in all fits max_bytes (0: the
// device's memory, vae_backend_limit); false with a message giving both
bool vae_tile_fits(vae_backend_t * backend, size_t peak, int tile, size_t max_bytes, char * err, size_t err_size);
// g prepared within max_bytes (NULL and freed after a message), *graph_peak raised to its peak
struct vae_graph * vae_tile_prepare(vae_backend_t * backend, struct vae_graph * g, size_t max_bytes,
                                    size_t * graph_peak, char * err, size_t err_size);
void vae_tile_release(vae_backend_t * backend, struct vae_graph * g);   // and freed

// The exact tiled decode of a causal video decoder (vae-tile-video.c): the same frames as the
// whole-frame stream, one latent frame per call.
struct vae_tiled_video;

// plan it for [z, h, w] latent frames in tiles of at most `tile` pixels a side (of the layer being
// tiled), checked against max_bytes (0 = the device's own limit); NULL after a message, which
// says so when the family has no tiled decode
struct vae_tiled_video * vae_tiled_video_new(const struct vae_model * model, vae_backend_t * backend, int h, int w,
                                             int tile, size_t max_bytes, char * err, size_t err_size);
void                     vae_tiled_video_free(struct vae_tiled_video * t);
// decode one latent frame (first: the one that starts a stream) into *n_frames frames [n, 3, H, W],
// valid until the next call (a centred decoder's, LTX-2's: the frames that can no longer change,
// none for its first latent frames); cancel as for vae_tiled_decode. A decode that fails (or is
// cancelled) leaves the causal state part-way: the stream goes on after a reset (or a first).
const float *            vae_tiled_video_decode(struct vae_tiled_video * t, const float * latent, bool first,
                                                const int * cancel, int * n_frames, char * err, size_t err_size);
// the stream's end (its latent frames in all): later decodes give the frames still to come, their
// latents never read (see vae_backend_state_set_end)
void                     vae_tiled_video_set_end(struct vae_tiled_video * t, int64_t latents);
void                     vae_tiled_video_reset(struct vae_tiled_video * t);   // the causal state back to zeros
// the largest prepared graph, the causal state of every tile and the host buffers together
size_t                   vae_tiled_video_peak_bytes(const struct vae_tiled_video * t);
