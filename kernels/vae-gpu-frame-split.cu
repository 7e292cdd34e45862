// The frame split of temporal upsampling (Wan's time_conv doubles the channels, which become two
// frames): [N, C, H, W] -> [N*k, C/k, H, W]. Pure data movement, one 16-byte output vector per
// step; the source vector is read whole when C/k keeps it aligned (every real model), lane by lane
// otherwise. y has its own channel padding, written as zero.

#include "vae-gpu-common.cuh"

// y frame f - drop (f = k * t + j), channel ch = x frame t, channel j * cs + ch; nvec = y's vectors
template <typename T>
static __global__ void vae_gpu_frame_split_kernel(const T * x, T * y, size_t nvec, size_t hw, int k, int drop, int cs,
                                                  int cpx, int cpy) {
    constexpr int VEC = 16 / sizeof(T);
    const int     G   = cpy / VEC;
    const bool    aligned = cs % VEC == 0;  // then a y vector is a whole x vector (or padding)
    vae_gpu_vec<T> * yv = reinterpret_cast<vae_gpu_vec<T> *>(y);
    for (size_t v = blockIdx.x * (size_t) blockDim.x + threadIdx.x; v < nvec; v += (size_t) gridDim.x * blockDim.x) {
        const size_t q   = v / G;  // y pixel f * hw + pixel
        const int    ch  = (int) (v - q * G) * VEC;
        const size_t fy  = q / hw, f = fy + drop;
        const size_t t   = f / k;
        const int    j   = (int) (f - t * k);
        const T *    src = x + (t * hw + (q - fy * hw)) * cpx + (size_t) j * cs + ch;
        vae_gpu_vec<T> a;
        if (aligned && ch < cs) {
            a = *reinterpret_cast<const vae_gpu_vec<T> *>(src);
        } else {
#pragma unroll
            for (int l = 0; l < VEC; l++) {
                a.v[l] = ch + l < cs ? src[l] : vae_gpu_from_f32<T>(0.0f);
            }
        }
        yv[v] = a;
    }
}

template <typename T>
static cudaError_t vae_gpu_frame_split_launch(struct vae_gpu_act x, struct vae_gpu_act y, int k, int drop,
                                              cudaStream_t s) {
    const size_t hw   = (size_t) x.h * x.w;
    const size_t nvec = (size_t) y.n * hw * (y.cp / (16 / sizeof(T)));
    vae_gpu_frame_split_kernel<T><<<vae_gpu_blocks(nvec), 256, 0, s>>>((const T *) x.data, (T *) y.data, nvec, hw,
                                                                       k, drop, y.c, x.cp, y.cp);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_frame_split(struct vae_gpu_act x, struct vae_gpu_act y, int k, int drop,
                                           enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || vae_gpu_act_overlap(x, y, p) || k < 1 ||
        drop < 0 || x.c % k != 0 || (long long) y.n != (long long) x.n * k - drop || y.c != x.c / k || y.h != x.h ||
        y.w != x.w) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_frame_split_launch<T>(x, y, k, drop, s));
    return err;
}
