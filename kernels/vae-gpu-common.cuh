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
