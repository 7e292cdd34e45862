// Nearest 2x upsampling, the unfused form of the upsample conv (the fused op never builds the 4x
// tensor; this one runs when fusion is disabled). Pure data movement: each thread reads one 16-byte
// vector of an input pixel once and writes it to the four output pixels it covers.

#include "vae-gpu-common.cuh"

// x [n, h, w, cp] -> y [n, 2h, 2w, cp]; nvec = the input's vectors
template <typename T>
static __global__ void vae_gpu_upsample2x_kernel(const T * x, T * y, size_t nvec, int c, int cp, int w) {
    constexpr int VEC = 16 / sizeof(T);
    const int     G   = cp / VEC;  // vectors per pixel
    const vae_gpu_vec<T> * xv = reinterpret_cast<const vae_gpu_vec<T> *>(x);
    vae_gpu_vec<T> *       yv = reinterpret_cast<vae_gpu_vec<T> *>(y);
    for (size_t v = blockIdx.x * (size_t) blockDim.x + threadIdx.x; v < nvec; v += (size_t) gridDim.x * blockDim.x) {
        const size_t p   = v / G;  // input pixel (i * h + Y) * w + X
        const int    g   = (int) (v - p * G);
        const size_t row = p / w;  // i * h + Y
        const int    X   = (int) (p - row * w);
        vae_gpu_vec<T> a = xv[v];
#pragma unroll
        for (int l = 0; l < VEC; l++) {
            if (g * VEC + l >= c) {
                a.v[l] = vae_gpu_from_f32<T>(0.0f);
            }
        }
        // output pixel (i, 2Y, 2X) is (2 * row) * 2w + 2X; (i, 2Y + 1, .) one output row (2w pixels) below
        const size_t o = ((2 * row) * (2 * (size_t) w) + 2 * (size_t) X) * G + g;
        const size_t d = 2 * (size_t) w * G;
        yv[o]         = a;
        yv[o + G]     = a;
        yv[o + d]     = a;
        yv[o + d + G] = a;
    }
}

template <typename T>
static cudaError_t vae_gpu_upsample2x_launch(struct vae_gpu_act x, struct vae_gpu_act y, cudaStream_t s) {
    const size_t nvec = (size_t) x.n * x.h * x.w * (x.cp / (16 / sizeof(T)));
    vae_gpu_upsample2x_kernel<T><<<vae_gpu_blocks(nvec), 256, 0, s>>>((const T *) x.data, (T *) y.data, nvec, x.c,
                                                                      x.cp, x.w);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_upsample2x(struct vae_gpu_act x, struct vae_gpu_act y, enum vae_precision p,
                                          cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || vae_gpu_act_overlap(x, y, p) || y.n != x.n ||
        y.c != x.c || y.h != 2 * x.h || y.w != 2 * x.w) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_upsample2x_launch<T>(x, y, s));
    return err;
}
