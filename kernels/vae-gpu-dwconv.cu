// Depthwise convolution (PyTorch's Conv2d with groups = input channels and a channel multiplier):
// each output channel filters one input channel, k x k, zero padded. It is memory bound (k^2
// multiply-adds per element read k^2 times from cache), so one thread per output element, adjacent
// threads on adjacent channels (NHWC: coalesced reads and writes), f32 accumulation.

#include "vae-gpu-common.cuh"

// y[i, Y, X, o] = bias[o] + sum w[o, dy, dx] x[i, Y + dy - k/2, X + dx - k/2, o / m]; padding lanes 0
template <typename T>
static __global__ void vae_gpu_dwconv_kernel(const T * x, T * y, const float * w, const float * bias, size_t n,
                                             int cxp, int c, int cp, int m, int h, int wd, int k) {
    for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < n; e += (size_t) gridDim.x * blockDim.x) {
        const size_t p   = e / cp;  // output pixel (i * h + Y) * wd + X
        const int    o   = (int) (e - p * cp);
        const size_t row = p / wd;  // i * h + Y
        const int    X   = (int) (p - row * wd), Y = (int) (row % h);
        float        acc = 0.0f;
        if (o < c) {
            acc                  = bias ? bias[o] : 0.0f;
            const T *     xc     = x + (row - Y) * wd * cxp + o / m; // frame i, channel o / m
            const float * wo     = w + (size_t) o * k * k;
            for (int dy = 0; dy < k; dy++) {
                const int yy = Y + dy - k / 2;
                if (yy < 0 || yy >= h) {
                    continue;
                }
                for (int dx = 0; dx < k; dx++) {
                    const int xx = X + dx - k / 2;
                    if (xx >= 0 && xx < wd) {
                        acc += vae_gpu_to_f32(xc[((size_t) yy * wd + xx) * cxp]) * wo[dy * k + dx];
                    }
                }
            }
        }
        y[e] = vae_gpu_from_f32<T>(acc);
    }
}

template <typename T>
static cudaError_t vae_gpu_dwconv_launch(struct vae_gpu_act x, struct vae_gpu_act y, const float * w,
                                         const float * bias, int k, cudaStream_t s) {
    const size_t n = (size_t) y.n * y.h * y.w * y.cp;
    vae_gpu_dwconv_kernel<T><<<vae_gpu_blocks(n), 256, 0, s>>>((const T *) x.data, (T *) y.data, w, bias, n, x.cp,
                                                               y.c, y.cp, y.c / x.c, y.h, y.w, k);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_dwconv(struct vae_gpu_act x, struct vae_gpu_act y, const float * w, const float * bias,
                                      int k, enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || !w || x.data == y.data ||
        y.n != x.n || y.h != x.h || y.w != x.w || y.c % x.c != 0 || k < 1 || k % 2 == 0) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_dwconv_launch<T>(x, y, w, bias, k, s));
    return err;
}
