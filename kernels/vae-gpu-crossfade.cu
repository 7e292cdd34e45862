// The cross-fade between the chunks of a stream (MiniMax-H3's decode): a chunk's frames overlap
// the last d frames of the chunk before, which the state holds, and its first d frames fade in from
// them with the weights f/d; its own last d frames go out as they are (the backend keeps a copy
// for the next chunk). One 16-byte output vector per step, the blend in f32.

#include "vae-gpu-common.cuh"

// y frame f < k: x frame pre + f, for f < d blended with held frame f when held is not NULL; y frame
// k + j: x frame x.n - d + j; nvec = y's vectors, fv = a frame's
template <typename T>
static __global__ void vae_gpu_crossfade_kernel(const T * x, const T * held, T * y, size_t nvec, size_t fv, int n,
                                                int pre, int k, int d) {
    constexpr int          VEC = 16 / sizeof(T);
    const vae_gpu_vec<T> * xv  = reinterpret_cast<const vae_gpu_vec<T> *>(x);
    const vae_gpu_vec<T> * hv  = reinterpret_cast<const vae_gpu_vec<T> *>(held);
    vae_gpu_vec<T> *       yv  = reinterpret_cast<vae_gpu_vec<T> *>(y);
    for (size_t v = blockIdx.x * (size_t) blockDim.x + threadIdx.x; v < nvec; v += (size_t) gridDim.x * blockDim.x) {
        const int    f  = (int) (v / fv);
        const size_t at = v - f * fv;
        vae_gpu_vec<T> a = xv[(size_t) (f < k ? pre + f : n - d + f - k) * fv + at];
        if (held && f < d) {
            const vae_gpu_vec<T> b = hv[(size_t) f * fv + at];
            const float          w = (float) f / (float) d;
#pragma unroll
            for (int l = 0; l < VEC; l++) {
                a.v[l] = vae_gpu_from_f32<T>(vae_gpu_to_f32(b.v[l]) * (1.0f - w) + vae_gpu_to_f32(a.v[l]) * w);
            }
        }
        yv[v] = a;
    }
}

template <typename T>
static cudaError_t vae_gpu_crossfade_launch(struct vae_gpu_act x, struct vae_gpu_act y, const void * held, int pre,
                                            int d, cudaStream_t s) {
    const size_t fv   = (size_t) y.h * y.w * (y.cp / (16 / sizeof(T)));
    const size_t nvec = (size_t) y.n * fv;
    vae_gpu_crossfade_kernel<T><<<vae_gpu_blocks(nvec), 256, 0, s>>>((const T *) x.data, (const T *) held, (T *) y.data,
                                                                     nvec, fv, x.n, pre, y.n - d, d);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_crossfade(struct vae_gpu_act x, struct vae_gpu_act y, const void * held, int pre, int d,
                                         enum vae_precision p, cudaStream_t s) {
    const struct vae_gpu_act h = { (void *) held, d, x.c, x.cp, x.h, x.w };
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || vae_gpu_act_overlap(x, y, p) ||
        y.c != x.c || y.h != x.h || y.w != x.w || d < 1 || d > x.n || pre < 0 || y.n - d < d || pre + y.n - d > x.n ||
        (uintptr_t) held % 16 != 0 || vae_gpu_act_overlap(h, y, p)) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_crossfade_launch<T>(x, y, held, pre, d, s));
    return err;
}
