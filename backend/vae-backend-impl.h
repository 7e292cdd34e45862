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
    // the bytes graph_prepare allows when max_bytes is 0 (the device's memory, as it counts it)
    size_t (*memory)(vae_backend_t * backend);
    // zeroed storage for every state slot of g (the last kt-1 input frames of each causal conv; a
    // causal attention's key/value cache, empty)
    vae_state_t * (*state_new)(vae_backend_t * backend, const struct vae_graph * g, char * err, size_t err_size);
    // zero every slot
    void (*state_reset)(vae_backend_t * backend, vae_state_t * state);
    // device memory the state holds
    size_t (*state_bytes)(vae_backend_t * backend, const vae_state_t * state);
    void (*state_free)(vae_backend_t * backend, vae_state_t * state);
    // the most bytes the state may grow to (a causal attention's cache; 0: no limit but the device's)
    void (*state_set_limit)(vae_backend_t * backend, vae_state_t * state, size_t bytes);
    // the stream's latent frames in all (-1: not known; a reset makes it -1): centred convs read its end
    void (*state_set_end)(vae_backend_t * backend, vae_state_t * state, int64_t latents);
    // run every node; inputs[i] is host f32 [N, C, H, W] for input number i; a state is given
    // when g->n_states > 0 and must match the shapes of its slots (the backend checks).
    // Cancellation (the idea of ggml's abort_callback, as data): g->cancel, NULL or a flag that
    // another thread sets, is read with vae_graph_cancelled before every node (and inside a node
    // that loops long where the backend can: the CPU's attention between its blocks of rows). Once
    // it reads nonzero the compute launches nothing more, waits for what it already started, and
    // returns false with the message VAE_BACKEND_INTERRUPTED. What the compute writes (its
    // activations and output, the state slots it reached) is then undefined, nothing else is
    // touched, and the backend stays usable: the next compute is exact. A backend that submits
    // the whole graph as one unit (a replayed CUDA graph) can read the flag only before the
    // submission, so it must keep such units short (backend/gpu: 0.1 s).
    bool (*graph_compute)(vae_backend_t * backend, struct vae_graph * g, vae_state_t * state,
                          const float * const * inputs, char * err, size_t err_size);
    // convert frame n of the 3-channel output to 8-bit pixels in dst
    bool (*graph_read_frame)(vae_backend_t * backend, struct vae_graph * g, int n, const struct vae_frame * dst,
                             char * err, size_t err_size);
    // copy output frames [first, first + count) to host f32 [count, C, H, W] (range checked by the caller)
    bool (*graph_read_output)(vae_backend_t * backend, struct vae_graph * g, int first, int count, float * dst,
                              char * err, size_t err_size);
    // free what graph_prepare made (g->backend_data); g stays valid
    void (*graph_release)(vae_backend_t * backend, struct vae_graph * g);
    // NULL, or the implementation prepare chose for node i of g, NULL where it had no choice
    const char * (*node_impl)(vae_backend_t * backend, const struct vae_graph * g, int i);
};

struct vae_backend {
    const struct vae_backend_i * iface;
    void *                       context;
    enum vae_precision           precision;   // in effect (never AUTO)
    int                          auto_frames; // vae_backend_auto_frames's (0: 1)
    char                         notice[256]; // vae_backend_take_notice's, "" when none (the backend writes it)
};

// whether g's cancel flag is set; an acquire load, so that what the setting thread wrote before
// its (release or sequentially consistent) store is seen too
static inline bool vae_graph_cancelled(const struct vae_graph * g) {
    return g->cancel && __atomic_load_n(g->cancel, __ATOMIC_ACQUIRE) != 0;
}

// the room, in frames, that the key/value cache of causal attention t grows to when it holds room
// for cap frames and needs `need` (frames of `frame` bytes): twice cap, or need where that is more,
// as `limit` (0: none) allows beside the `other` bytes of the state; -1 when even need does not
// fit, err saying how many frames do
int64_t vae_backend_kv_room(const struct vae_tensor * t, int64_t cap, int64_t need, size_t frame, size_t other,
                            size_t limit, char * err, size_t err_size);

// the frame of centred conv t's input in this compute that is its stream's last (frame a (end - 1)
// of the stream, a = i[2]), counted from the input's first (negative: an earlier compute's) given
// the input frames its slot has seen; the input's frame count where none is past it (the stream's
// end not known, or t not centred). The frames after it read it (see VAE_OP_CAUSAL_CONV3D).
static inline int64_t vae_centred_last(const struct vae_tensor * t, int64_t end, int64_t seen) {
    return end > 0 && (t->i[1] & VAE_CENTRED) ? t->i[2] * (end - 1) - seen : t->src[0]->ne[0];
}

// the groups of a convolution node: a grouped VAE_OP_CONV2D's, the depthwise conv's input channels, else 1
static inline int vae_conv_groups(const struct vae_tensor * t) {
    return t->op == VAE_OP_CONV2D && t->i[0] > 1            ? t->i[0]
           : t->op == VAE_OP_DEPTHWISE_CONV2D ? (int) t->src[0]->ne[1]
                                              : 1;
}

// implemented by each built backend
// bf16 where oneDNN's effective ISA has AVX512-BF16 (or AMX) and bf16 is asked; else fp32
vae_backend_t * vae_backend_cpu_init(enum vae_precision precision, char * err, size_t err_size);
// the GPU backend (backend/gpu), compiled once per vendor
vae_backend_t * vae_backend_cuda_init(int device, enum vae_precision precision, char * err, size_t err_size);
vae_backend_t * vae_backend_hip_init(int device, enum vae_precision precision, char * err, size_t err_size);
