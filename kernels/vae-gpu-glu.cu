// The gated linear unit of DC-AE's GLUMBConv: torch.chunk(x, 2, dim=1) gives the value (the first
// half of the channels) and the gate (the second), y = value * act(gate). One thread per output
// element, adjacent threads on adjacent channels (NHWC: both halves read coalesced), in f32.

#include "vae-gpu-common.cuh"

// y[p, c] = x[p, c] act(x[p, C + c]) for c < C; padding lanes 0
template <typename T>
static __global__ void vae_gpu_glu_kernel(const T * x, T * y, size_t n, int cxp, int c, int cp, enum vae_act act) {
    for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < n; e += (size_t) gridDim.x * blockDim.x) {
        const size_t p  = e / cp;
        const int    ch = (int) (e - p * cp);
        float        v  = 0.0f;
        if (ch < c) {
            const T * xp = x + p * cxp;
            v            = vae_gpu_to_f32(xp[ch]) * vae_gpu_act(vae_gpu_to_f32(xp[c + ch]), act);
        }
        y[e] = vae_gpu_from_f32<T>(v);
    }
}

template <typename T>
static cudaError_t vae_gpu_glu_launch(struct vae_gpu_act x, struct vae_gpu_act y, enum vae_act act, cudaStream_t s) {
    const size_t n = (size_t) y.n * y.h * y.w * y.cp;
    vae_gpu_glu_kernel<T><<<vae_gpu_blocks(n), 256, 0, s>>>((const T *) x.data, (T *) y.data, n, x.cp, y.c, y.cp, act);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_glu(struct vae_gpu_act x, struct vae_gpu_act y, enum vae_act act, enum vae_precision p,
                                   cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || vae_gpu_act_overlap(x, y, p) || y.n != x.n ||
        y.h != x.h || y.w != x.w || x.c != 2 * y.c) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_glu_launch<T>(x, y, act, s));
    return err;
}
