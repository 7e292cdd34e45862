// A decode session: the streaming side of a loaded model on one backend. The caller pushes one
// latent frame at a time (f32 [C, H, W], in the stream's latent space) and pops the decoded
// frames as they become ready: image decoders give one frame per latent frame, the causal video
// decoders (Wan, TAEHV) one for the first latent frame of a stream and frames_per_latent (4) for
// each later one, the same frames as a decode of the whole sequence at once. `chunk-frames`
// latent frames are decoded per step; a drain at the end of the stream decodes the rest. Memory
// is fixed when the session starts (one or two prepared graphs and the causal state) and does not
// grow with the length of the stream. SVD (model->clip_calls) decodes each chunk as one call of
// diffusers' decode(z, num_frames=chunk), the last one shorter; its chunk-frames 0 decodes the
// whole stream as one call at the drain, its memory growing with the clip (see
// vae_session_config.chunk_frames).

#pragma once

#include "vae-model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vae_session;

struct vae_session_config {
    int            channels, height, width;   // of one latent frame
    enum vae_space space;                      // of the latents that will be pushed
    int            chunk_frames;               // latent frames per decode step; 0 = automatic (SVD: the whole
                                               // clip as one call at the drain; refused then, naming
                                               // the limit, if its graph does not fit max_bytes)
    size_t         max_bytes;                  // device memory limit; 0 = the device's memory
    int            tile_size;                  // largest tile edge, in pixels of the layer it tiles
                                               // (output pixels at the last); 0 = whole frames unless
                                               // they do not fit in max_bytes. Families with global
                                               // statistics (AutoencoderKL) only; exact (see vae-tile.c)
    const int *    cancel;                     // NULL, or a flag another thread may set (read
                                               // atomically): nonzero stops a decode between two
                                               // nodes of its graph (given to the backend as the
                                               // graph's cancel flag) or two tiles, the push or
                                               // drain failing with VAE_SESSION_INTERRUPTED; then
                                               // vae_session_reset before the stream goes on
};

#define VAE_SESSION_INTERRUPTED VAE_BACKEND_INTERRUPTED

// whether a session could take this configuration, as far as it is known: channels 0 and width 0
// leave the latents' channels and size unchecked (before caps). The same refusals as
// vae_session_new, with the same messages, short of memory.
bool vae_session_check(const struct vae_model * model, const struct vae_session_config * config, char * err,
                       size_t err_size);
struct vae_session * vae_session_new(const struct vae_model * model, vae_backend_t * backend,
                                     const struct vae_session_config * config, char * err, size_t err_size);
void                 vae_session_free(struct vae_session * s);

// queue one latent frame; decodes when a chunk is full. Refuses non-finite latents (the message
// gives the count and the first position). Pop every ready frame before pushing again. A decode
// stopped by the cancel flag fails with the message VAE_SESSION_INTERRUPTED and makes no frames;
// after a failed decode of a causal decoder (its state part-way) the stream's decodes are refused
// until vae_session_reset.
bool vae_session_push(struct vae_session * s, const float * latent, char * err, size_t err_size);
// decode what is queued (end of stream); the next push starts a new stream
bool vae_session_drain(struct vae_session * s, char * err, size_t err_size);
// frames decoded and not yet popped
int  vae_session_frames_ready(const struct vae_session * s);
// write the oldest ready frame into dst (its scale/offset are filled in from the model)
bool vae_session_pop_frame(struct vae_session * s, struct vae_frame * dst, char * err, size_t err_size);
// the oldest ready frame as the decoder's raw f32 output [3, H, W] (unclamped; tests, tools)
bool vae_session_pop_output(struct vae_session * s, float * dst, char * err, size_t err_size);
// once each, what failed nothing but is worth a warning: what vae_session_new chose instead of
// what was asked (fewer latent frames per step, or tiles, when the memory does not hold those
// asked for), then what the backend noticed (vae_backend_take_notice)
bool vae_session_take_notice(struct vae_session * s, char * buf, size_t size);
// forget queued latents, undelivered frames and the causal state: the next push starts a new stream
void vae_session_reset(struct vae_session * s);

int    vae_session_chunk_frames(const struct vae_session * s);   // 0: the whole clip (SVD)
int    vae_session_tile_size(const struct vae_session * s);   // the tile edge in use; 0 = whole frames
// tiled decodes: the largest |value| of each whole-frame activation of the last frame, named by
// the layer that made it (VAE_KL_MAX_STEPS + 1 entries at most); 0 when the session is not tiled
// or has decoded nothing. Tells which layers overflow fp16 (65504) on real input.
int    vae_session_ranges(const struct vae_session * s, const char ** names, float * max_abs);
size_t vae_session_peak_bytes(const struct vae_session * s);   // graphs, weights and state together
// latent frames pushed and frames decoded (ready or popped) since the stream started (they
// still count the stream that a drain ended, until the next push)
uint64_t vae_session_latents_in(const struct vae_session * s);
uint64_t vae_session_frames_out(const struct vae_session * s);

#ifdef __cplusplus
}
#endif
