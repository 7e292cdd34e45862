// Grouped convolution (PyTorch's Conv2d with groups): each output channel filters the cg input
// channels of its group, k x k, zero padded. The depthwise conv (groups = input channels, a channel
// multiplier) is the case cg = 1; DC-AE's multiscale projection is 1x1 with cg = head dim. It is
// memory bound (cg k^2 multiply-adds per element, read from cache by the neighbouring threads), so
// one thread per output element, adjacent threads on adjacent channels (NHWC: coalesced reads and
// writes), f32 accumulation; residual and activation in the same pass.

#include "vae-gpu-common.cuh"

// y[i, Y, X, o] = act(bias[o] + r[i, Y, X, o] + sum w[o, t, dy, dx] x[i, Y + dy - k/2, X + dx - k/2, (o / og) cg + t]);
// padding lanes 0
template <typename T>
static __global__ void vae_gpu_group_conv_kernel(const T * x, T * y, const T * r, const float * w, const float * bias,
                                                 size_t n, int cxp, int c, int cp, int cg, int og, int h, int wd,
                                                 int k, enum vae_act act) {
    for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < n; e += (size_t) gridDim.x * blockDim.x) {
        const size_t p   = e / cp;  // output pixel (i * h + Y) * wd + X
        const int    o   = (int) (e - p * cp);
        const size_t row = p / wd;  // i * h + Y
        const int    X   = (int) (p - row * wd), Y = (int) (row % h);
        float        acc = 0.0f;
        if (o < c) {
            acc = (bias ? bias[o] : 0.0f) + (r ? vae_gpu_to_f32(r[e]) : 0.0f);
            const T * xg = x + (row - Y) * wd * cxp + (size_t) (o / og) * cg;  // frame i, the group's first channel
            for (int t = 0; t < cg; t++) {
                const float * wo = w + ((size_t) o * cg + t) * k * k;
                for (int dy = 0; dy < k; dy++) {
                    const int yy = Y + dy - k / 2;
                    if (yy < 0 || yy >= h) {
                        continue;
                    }
                    for (int dx = 0; dx < k; dx++) {
                        const int xx = X + dx - k / 2;
                        if (xx >= 0 && xx < wd) {
                            acc += vae_gpu_to_f32(xg[((size_t) yy * wd + xx) * cxp + t]) * wo[dy * k + dx];
                        }
                    }
                }
            }
            acc = vae_gpu_act(acc, act);
        }
        y[e] = vae_gpu_from_f32<T>(acc);
    }
}

template <typename T>
static cudaError_t vae_gpu_group_conv_launch(struct vae_gpu_act x, struct vae_gpu_act y, const void * residual,
                                             const float * w, const float * bias, int groups, int k, enum vae_act act,
                                             cudaStream_t s) {
    const size_t n = (size_t) y.n * y.h * y.w * y.cp;
    vae_gpu_group_conv_kernel<T><<<vae_gpu_blocks(n), 256, 0, s>>>((const T *) x.data, (T *) y.data,
                                                                   (const T *) residual, w, bias, n, x.cp, y.c, y.cp,
                                                                   x.c / groups, y.c / groups, y.h, y.w, k, act);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_group_conv(struct vae_gpu_act x, struct vae_gpu_act y, const void * residual,
                                          const float * w, const float * bias, int groups, int k, enum vae_act act,
                                          enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || !w || vae_gpu_act_overlap(x, y, p) ||
        !vae_gpu_in_place_ok(residual, y, p) || y.n != x.n || y.h != x.h || y.w != x.w || groups < 1 || x.c % groups != 0 ||
        y.c % groups != 0 || k < 1 || k % 2 == 0) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_group_conv_launch<T>(x, y, residual, w, bias, groups, k, act, s));
    return err;
}
