// The centred conv over frames with a (kt, 1, 1) kernel (SVD's temporal blocks): each output pixel
// is a 1x1 conv of the same pixel in kt frames, zero frames past either end of the call. One thread
// per output element, adjacent threads on adjacent output channels (NHWC: coalesced writes, the
// input pixel read by the whole warp at once), f32 accumulation. The weights stay f32 in PyTorch's
// layout and are read through the cache; a tensor-core form is left for when it shows in a profile.

#include "vae-gpu-common.cuh"

// y[t, p, o] = act(bias[o] + r[t, p, o] + sum_k sum_i w[o, i, k] x[t + k - kt/2, p, i]); padding lanes 0
template <typename T>
static __global__ void vae_gpu_time_conv_kernel(const T * x, T * y, const T * r, const float * w, const float * bias,
                                                size_t n, size_t hw, int frames, int cin, int cxp, int c, int cp,
                                                int kt, enum vae_act act) {
    for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < n; e += (size_t) gridDim.x * blockDim.x) {
        const size_t px  = e / cp;  // output pixel t * hw + p
        const int    o   = (int) (e - px * cp);
        const int    t   = (int) (px / hw);
        float        acc = 0.0f;
        if (o < c) {
            acc                = (bias ? bias[o] : 0.0f) + (r ? vae_gpu_to_f32(r[e]) : 0.0f);
            const float * wo   = w + (size_t) o * cin * kt;
            for (int k = 0; k < kt; k++) {
                const int f = t + k - kt / 2;
                if (f < 0 || f >= frames) {
                    continue;  // a zero frame
                }
                const T * xs = x + (px + (size_t) (f - t) * hw) * cxp;
                for (int i = 0; i < cin; i++) {
                    acc += vae_gpu_to_f32(xs[i]) * wo[i * kt + k];
                }
            }
            acc = vae_gpu_act(acc, act);
        }
        y[e] = vae_gpu_from_f32<T>(acc);
    }
}

template <typename T>
static cudaError_t vae_gpu_time_conv_launch(struct vae_gpu_act x, struct vae_gpu_act y, const void * r,
                                            const float * w, const float * bias, int kt, enum vae_act act,
                                            cudaStream_t s) {
    const size_t n = (size_t) y.n * y.h * y.w * y.cp;
    vae_gpu_time_conv_kernel<T><<<vae_gpu_blocks(n), 256, 0, s>>>((const T *) x.data, (T *) y.data, (const T *) r, w,
                                                                   bias, n, (size_t) y.h * y.w, y.n, x.c, x.cp, y.c,
                                                                   y.cp, kt, act);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_time_conv(struct vae_gpu_act x, struct vae_gpu_act y, const void * residual,
                                         const float * w, const float * bias, int kt, enum vae_act act,
                                         enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || !w || vae_gpu_act_overlap(x, y, p) ||
        !vae_gpu_in_place_ok(residual, y, p) || y.n != x.n || y.h != x.h || y.w != x.w || kt < 1 || kt % 2 == 0) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_time_conv_launch<T>(x, y, residual, w, bias, kt, act, s));
    return err;
}
