// The tiny decoders' output clamp, y = tanh(x / s) * s, as TAESD applies it. Elementwise over
// 16-byte vectors; tanhf is the accurate one (the clamp decides the last bits of every pixel), and
// the padding lanes are written as zero rather than computed.

#include "vae-gpu-common.cuh"

#include <cmath>

template <typename T>
static __global__ void vae_gpu_tanh_clamp_kernel(const T * x, T * y, size_t nvec, int c, int cp, float inv,
                                                 float scale) {
    constexpr int VEC = 16 / sizeof(T);
    const vae_gpu_vec<T> * xv = reinterpret_cast<const vae_gpu_vec<T> *>(x);
    vae_gpu_vec<T> *       yv = reinterpret_cast<vae_gpu_vec<T> *>(y);
    for (size_t v = blockIdx.x * (size_t) blockDim.x + threadIdx.x; v < nvec; v += (size_t) gridDim.x * blockDim.x) {
        const int      ch = (int) (v * VEC % cp);
        vae_gpu_vec<T> a  = xv[v];
#pragma unroll
        for (int l = 0; l < VEC; l++) {
            // x * (1 / s) as the CPU reference computes it
            a.v[l] = vae_gpu_from_f32<T>(ch + l < c ? tanhf(vae_gpu_to_f32(a.v[l]) * inv) * scale : 0.0f);
        }
        yv[v] = a;
    }
}

template <typename T>
static cudaError_t vae_gpu_tanh_clamp_launch(const T * x, T * y, size_t n, int c, int cp, float scale,
                                             cudaStream_t s) {
    const size_t nvec = n / (16 / sizeof(T));
    vae_gpu_tanh_clamp_kernel<T><<<vae_gpu_blocks(nvec), 256, 0, s>>>(x, y, nvec, c, cp, 1.0f / scale, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_tanh_clamp(struct vae_gpu_act x, struct vae_gpu_act y, float scale,
                                          enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || y.n != x.n || y.c != x.c ||
        y.h != x.h || y.w != x.w || !vae_gpu_in_place_ok(x.data, y, p) || !std::isfinite(scale) || scale == 0.0f) {
        return cudaErrorInvalidValue;
    }
    const size_t n = (size_t) x.n * x.h * x.w * x.cp;
    cudaError_t  err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_tanh_clamp_launch<T>((const T *) x.data, (T *) y.data, n, x.c, x.cp, scale, s));
    return err;
}
