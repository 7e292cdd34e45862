// Device helpers every kernel file shares: loads and stores of the three storage types through
// f32, the activations, and the dispatch from a precision to its storage type. Kernel sources
// only (nvcc, later hipcc).

#pragma once

#include "vae-kernels.h"

#include <stdint.h>

// storage element <-> f32
__device__ __forceinline__ float vae_gpu_to_f32(float v) { return v; }
__device__ __forceinline__ float vae_gpu_to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float vae_gpu_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T vae_gpu_from_f32(float v);
template <> __device__ __forceinline__ float    vae_gpu_from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half vae_gpu_from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 vae_gpu_from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// x * sigmoid(x) written so that large |x| gives x or -0, never NaN
__device__ __forceinline__ float vae_gpu_act(float v, enum vae_act act) {
    switch (act) {
        case VAE_ACT_RELU: return v > 0.0f ? v : 0.0f;
        case VAE_ACT_SILU: return v / (1.0f + __expf(-v));
        default:           return v;
    }
}

// T = the storage type of precision p, then `body` (a statement using T)
#define VAE_GPU_DISPATCH(p, body)                                                  \
    do {                                                                           \
        if ((p) == VAE_PRECISION_FP16) {                                           \
            typedef __half T;                                                    \
            body;                                                                  \
        } else if ((p) == VAE_PRECISION_BF16) {                                    \
            typedef __nv_bfloat16 T;                                                    \
            body;                                                                  \
        } else {                                                                   \
            typedef float T;                                                       \
            body;                                                                  \
        }                                                                          \
    } while (0)

// a grid of enough 256-thread blocks for n threads (capped; kernels loop with a grid stride)
static inline unsigned vae_gpu_blocks(size_t n) {
    const size_t b = (n + 255) / 256;
    return (unsigned) (b < 65535 * 16 ? (b ? b : 1) : 65535 * 16);
}

// 16 bytes of T in one access (cp is a multiple of 16: a vector never straddles pixels)
template <typename T> struct __align__(16) vae_gpu_vec {
    T v[16 / sizeof(T)];
};

// the checks every entry makes of an activation and a precision; the shape alone is what a sizing
// query (scratch bytes) checks, asked before the buffers exist
static inline bool vae_gpu_shape_ok(struct vae_gpu_act a) {
    return a.n > 0 && a.c > 0 && a.h > 0 && a.w > 0 && a.cp == vae_gpu_cpad(a.c);
}

static inline bool vae_gpu_act_ok(struct vae_gpu_act a) {
    return a.data && (uintptr_t) a.data % 16 == 0 && vae_gpu_shape_ok(a);
}

static inline bool vae_gpu_precision_ok(enum vae_precision p) {
    return p > VAE_PRECISION_AUTO && p < VAE_PRECISION_COUNT;
}

// whether the bytes of [a, a + na) and [b, b + nb) meet: an input and an output that share any
// byte are refused, not only the same pointer (an arena offset off by a few rows would otherwise
// race between blocks silently)
static inline bool vae_gpu_bytes_overlap(const void * a, size_t na, const void * b, size_t nb) {
    const uintptr_t x = (uintptr_t) a, y = (uintptr_t) b;
    return a && b && na && nb && x < y + nb && y < x + na;
}

// the bytes activation a takes at precision p
static inline size_t vae_gpu_act_bytes(struct vae_gpu_act a, enum vae_precision p) {
    return (size_t) a.n * a.h * a.w * a.cp * vae_gpu_elem_bytes(p);
}

// whether activations a and b share a byte
static inline bool vae_gpu_act_overlap(struct vae_gpu_act a, struct vae_gpu_act b, enum vae_precision p) {
    return vae_gpu_bytes_overlap(a.data, vae_gpu_act_bytes(a, p), b.data, vae_gpu_act_bytes(b, p));
}

// an operand shaped like y that an element-wise op may read in place: y itself, or apart from it
static inline bool vae_gpu_in_place_ok(const void * a, struct vae_gpu_act y, enum vae_precision p) {
    const size_t n = vae_gpu_act_bytes(y, p);
    return a == y.data || !vae_gpu_bytes_overlap(a, n, y.data, n);
}
