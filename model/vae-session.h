// A decode session: the streaming side of a loaded model on one backend. The caller pushes one
// latent frame at a time (f32 [C, H, W], in the stream's latent space) and pops the decoded
// frames as they become ready; `chunk-frames` latent frames are decoded per step, the rest is
// decoded by a drain at the end of the stream. Graphs are built and prepared once per chunk size.

#pragma once

#include "vae-model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vae_session;

struct vae_session_config {
    int            channels, height, width;   // of one latent frame
    enum vae_space space;                      // of the latents that will be pushed
    int            chunk_frames;               // latent frames per decode step; 0 = automatic
    size_t         max_bytes;                  // device memory limit; 0 = the device's memory
};

struct vae_session * vae_session_new(const struct vae_model * model, vae_backend_t * backend,
                                     const struct vae_session_config * config, char * err, size_t err_size);
void                 vae_session_free(struct vae_session * s);

// queue one latent frame; decodes when a chunk is full. Refuses non-finite latents (the message
// gives the count and the first position). Pop every ready frame before pushing again.
bool vae_session_push(struct vae_session * s, const float * latent, char * err, size_t err_size);
// decode what is queued (end of stream)
bool vae_session_drain(struct vae_session * s, char * err, size_t err_size);
// frames decoded and not yet popped
int  vae_session_frames_ready(const struct vae_session * s);
// write the oldest ready frame into dst (its scale/offset are filled in from the model)
bool vae_session_pop_frame(struct vae_session * s, struct vae_frame * dst, char * err, size_t err_size);
// forget queued latents and undelivered frames (flush)
void vae_session_reset(struct vae_session * s);

int    vae_session_chunk_frames(const struct vae_session * s);
size_t vae_session_peak_bytes(const struct vae_session * s);   // of the largest prepared graph

#ifdef __cplusplus
}
#endif
