// Backend selection and the thin dispatch from the public API to each backend's vtable.
// Every backend type is always listed (so pipelines stay portable); asking for one that this
// build lacks is a clear error, never a silent fallback.

#include "vae-backend-impl.h"

#include <stdio.h>

bool vae_backend_is_built(enum vae_backend_type type) {
    return type == VAE_BACKEND_CPU;
}

const char * vae_backend_type_name(enum vae_backend_type type) {
    switch (type) {
        case VAE_BACKEND_CPU:  return "cpu";
        case VAE_BACKEND_CUDA: return "cuda";
        case VAE_BACKEND_HIP:  return "hip";
        default:               return "?";
    }
}

vae_backend_t * vae_backend_init(enum vae_backend_type type, int device, char * err, size_t err_size) {
    if (!vae_backend_is_built(type)) {
        snprintf(err, err_size, "the %s backend is not built into this plugin (built: cpu)", vae_backend_type_name(type));
        return NULL;
    }
    if (device != 0 && device != -1) {
        snprintf(err, err_size, "the cpu backend has only device 0, not %d", device);
        return NULL;
    }
    return vae_backend_cpu_init(err, err_size);
}

void vae_backend_free(vae_backend_t * backend) {
    if (backend) {
        backend->iface->free(backend);
    }
}

const char * vae_backend_name(vae_backend_t * backend) {
    return backend->iface->get_name(backend);
}

bool vae_backend_graph_prepare(vae_backend_t * backend, struct vae_graph * g, size_t max_bytes, char * err,
                               size_t err_size) {
    return backend->iface->graph_prepare(backend, g, max_bytes, err, err_size);
}

bool vae_backend_graph_compute(vae_backend_t * backend, struct vae_graph * g, const float * input, char * err,
                               size_t err_size) {
    return backend->iface->graph_compute(backend, g, input, err, err_size);
}

bool vae_backend_graph_read_frame(vae_backend_t * backend, struct vae_graph * g, int n, const struct vae_frame * dst,
                                  char * err, size_t err_size) {
    if (g->output->ne[1] != 3 || n < 0 || n >= g->output->ne[0]) {
        snprintf(err, err_size, "frame %d is not a 3-channel frame of this output", n);
        return false;
    }
    return backend->iface->graph_read_frame(backend, g, n, dst, err, err_size);
}

bool vae_backend_graph_read_output(vae_backend_t * backend, struct vae_graph * g, float * dst, char * err,
                                   size_t err_size) {
    return backend->iface->graph_read_output(backend, g, dst, err, err_size);
}

void vae_backend_graph_release(vae_backend_t * backend, struct vae_graph * g) {
    if (g && g->backend_data) {
        backend->iface->graph_release(backend, g);
        g->backend_data = NULL;
    }
}
