// Backend selection and the thin dispatch from the public API to each backend's vtable.
// Every backend type is always listed (so pipelines stay portable); asking for one that this
// build lacks is a clear error, never a silent fallback.

#include "vae-backend-impl.h"

#include <stdio.h>

bool vae_backend_is_built(enum vae_backend_type type) {
#ifdef VAE_HAVE_CUDA
    if (type == VAE_BACKEND_CUDA) {
        return true;
    }
#endif
#ifdef VAE_HAVE_HIP
    if (type == VAE_BACKEND_HIP) {
        return true;
    }
#endif
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

const char * vae_precision_name(enum vae_precision p) {
    static const char * const names[VAE_PRECISION_COUNT] = { "auto", "fp32", "tf32", "fp16", "bf16" };
    return p < VAE_PRECISION_COUNT ? names[p] : "?";
}

vae_backend_t * vae_backend_init(enum vae_backend_type type, int device, enum vae_precision precision, char * err,
                                 size_t err_size) {
    if (!vae_backend_is_built(type)) {
        snprintf(err, err_size, "the %s backend is not built into this plugin (built: cpu%s%s)",
                 vae_backend_type_name(type), vae_backend_is_built(VAE_BACKEND_CUDA) ? ", cuda" : "",
                 vae_backend_is_built(VAE_BACKEND_HIP) ? ", hip" : "");
        return NULL;
    }
#ifdef VAE_HAVE_CUDA
    if (type == VAE_BACKEND_CUDA) {
        return vae_backend_cuda_init(device, precision, err, err_size);
    }
#endif
#ifdef VAE_HAVE_HIP
    if (type == VAE_BACKEND_HIP) {
        return vae_backend_hip_init(device, precision, err, err_size);
    }
#endif
    if (device != 0 && device != -1) {
        snprintf(err, err_size, "the cpu backend has only device 0, not %d", device);
        return NULL;
    }
    return vae_backend_cpu_init(precision, err, err_size);
}

int64_t vae_backend_kv_room(const struct vae_tensor * t, int64_t cap, int64_t need, size_t frame, size_t other,
                            size_t limit, char * err, size_t err_size) {
    const int64_t want = 2 * cap > need ? 2 * cap : need;
    if (!limit || (limit >= other && (size_t) want <= (limit - other) / frame)) {
        return want;
    }
    const int64_t fit = limit < other ? 0 : (int64_t) ((limit - other) / frame);
    if (fit >= need) {
        return fit;
    }
    char a[32], b[32];
    snprintf(err, err_size, "the key/value cache of %s would hold %lld frames of %lld positions (%s a frame), above "
             "the state's limit of %s: it holds %lld frames", t->name ? t->name : "?", (long long) need,
             (long long) (t->ne[2] * t->ne[3]), vae_backend_bytes_str(a, (double) frame),
             vae_backend_bytes_str(b, (double) limit), (long long) fit);
    return -1;
}

const char * vae_backend_bytes_str(char buf[32], double bytes) {
    if (bytes >= 1048576.0) {
        snprintf(buf, 32, "%.1f MiB", bytes / 1048576.0);
    } else if (bytes >= 1024.0) {
        snprintf(buf, 32, "%.1f KiB", bytes / 1024.0);
    } else {
        snprintf(buf, 32, "%.0f bytes", bytes);
    }
    return buf;
}

size_t vae_backend_limit(vae_backend_t * backend, size_t max_bytes) {
    return max_bytes ? max_bytes : backend->iface->memory(backend);
}

enum vae_precision vae_backend_precision(vae_backend_t * backend) {
    return backend->precision;
}

int vae_backend_auto_frames(vae_backend_t * backend) {
    return backend->auto_frames > 1 ? backend->auto_frames : 1;
}

void vae_backend_free(vae_backend_t * backend) {
    if (backend) {
        backend->iface->free(backend);
    }
}

const char * vae_backend_name(vae_backend_t * backend) {
    return backend->iface->get_name(backend);
}

const char * vae_backend_node_impl(vae_backend_t * backend, const struct vae_graph * g, int i) {
    return backend->iface->node_impl && g->backend_data && i >= 0 && i < g->n_nodes
               ? backend->iface->node_impl(backend, g, i)
               : NULL;
}

bool vae_backend_take_notice(vae_backend_t * backend, char * buf, size_t size) {
    if (!backend->notice[0]) {
        return false;
    }
    snprintf(buf, size, "%s", backend->notice);
    backend->notice[0] = '\0';
    return true;
}

bool vae_backend_graph_prepare(vae_backend_t * backend, struct vae_graph * g, size_t max_bytes, char * err,
                               size_t err_size) {
    return backend->iface->graph_prepare(backend, g, max_bytes, err, err_size);
}

vae_state_t * vae_backend_state_new(vae_backend_t * backend, const struct vae_graph * g, char * err, size_t err_size) {
    return backend->iface->state_new(backend, g, err, err_size);
}

void vae_backend_state_reset(vae_backend_t * backend, vae_state_t * state) {
    backend->iface->state_reset(backend, state);
}

size_t vae_backend_state_bytes(vae_backend_t * backend, const vae_state_t * state) {
    return state ? backend->iface->state_bytes(backend, state) : 0;
}

void vae_backend_state_set_limit(vae_backend_t * backend, vae_state_t * state, size_t bytes) {
    backend->iface->state_set_limit(backend, state, bytes);
}

void vae_backend_state_set_end(vae_backend_t * backend, vae_state_t * state, int64_t latents) {
    backend->iface->state_set_end(backend, state, latents);
}

void vae_backend_state_free(vae_backend_t * backend, vae_state_t * state) {
    if (state) {
        backend->iface->state_free(backend, state);
    }
}

bool vae_backend_graph_compute_inputs(vae_backend_t * backend, struct vae_graph * g, vae_state_t * state,
                                      const float * const * inputs, char * err, size_t err_size) {
    if ((g->n_states > 0) != (state != NULL)) {
        snprintf(err, err_size, "this graph has %d state slots but %s state was given", g->n_states, state ? "a" : "no");
        return false;
    }
    return backend->iface->graph_compute(backend, g, state, inputs, err, err_size);
}

bool vae_backend_graph_compute(vae_backend_t * backend, struct vae_graph * g, vae_state_t * state, const float * input,
                               char * err, size_t err_size) {
    if (g->n_inputs != 1) {
        snprintf(err, err_size, "this graph has %d inputs: give them all with vae_backend_graph_compute_inputs",
                 g->n_inputs);
        return false;
    }
    return vae_backend_graph_compute_inputs(backend, g, state, &input, err, err_size);
}

bool vae_backend_graph_read_frame(vae_backend_t * backend, struct vae_graph * g, int n, const struct vae_frame * dst,
                                  char * err, size_t err_size) {
    if (g->output->ne[1] != (dst->alpha ? 4 : 3) || n < 0 || n >= g->output->ne[0]) {
        snprintf(err, err_size, "frame %d is not a %d-channel frame of this output", n, dst->alpha ? 4 : 3);
        return false;
    }
    return backend->iface->graph_read_frame(backend, g, n, dst, err, err_size);
}

bool vae_backend_graph_read_output(vae_backend_t * backend, struct vae_graph * g, int first, int count, float * dst,
                                   char * err, size_t err_size) {
    if (first < 0 || count < 0 || first + count > g->output->ne[0]) {
        snprintf(err, err_size, "frames %d..%d are not all in an output of %lld frames", first, first + count - 1,
                 (long long) g->output->ne[0]);
        return false;
    }
    return backend->iface->graph_read_output(backend, g, first, count, dst, err, err_size);
}

void vae_backend_graph_release(vae_backend_t * backend, struct vae_graph * g) {
    if (g && g->backend_data) {
        backend->iface->graph_release(backend, g);
        g->backend_data = NULL;
    }
}
