// The vtable every backend fills (ggml's habit: a struct of function pointers per backend, each
// slot commented). Only backend/ includes this header; the model sees vae-backend.h.

#pragma once

#include "vae-backend.h"

struct vae_backend_i {
    // a short name for messages, e.g. "cpu (oneDNN, 2 threads)"
    const char * (*get_name)(vae_backend_t * backend);
    // release the device and everything the backend holds
    void (*free)(vae_backend_t * backend);
    // convert weights, plan memory and build what each node needs; set g->backend_data and
    // g->peak_bytes; refuse plans above max_bytes (0 = device memory)
    bool (*graph_prepare)(vae_backend_t * backend, struct vae_graph * g, size_t max_bytes, char * err, size_t err_size);
    // run every node; input is host f32 [N, C, H, W]
    bool (*graph_compute)(vae_backend_t * backend, struct vae_graph * g, const float * input, char * err, size_t err_size);
    // convert frame n of the 3-channel output to 8-bit pixels in dst
    bool (*graph_read_frame)(vae_backend_t * backend, struct vae_graph * g, int n, const struct vae_frame * dst,
                             char * err, size_t err_size);
    // copy the whole output to host f32 [N, C, H, W]
    bool (*graph_read_output)(vae_backend_t * backend, struct vae_graph * g, float * dst, char * err, size_t err_size);
    // free what graph_prepare made (g->backend_data); g stays valid
    void (*graph_release)(vae_backend_t * backend, struct vae_graph * g);
};

struct vae_backend {
    const struct vae_backend_i * iface;
    void *                       context;
};

// implemented by each built backend
vae_backend_t * vae_backend_cpu_init(char * err, size_t err_size);
