// The layout moves of a ViT decoder (MiniMax-H3's): frames to one sequence of tokens and back. In
// NHWC a frame's pixels in raster order, frame after frame, already are the token rows, so both
// directions are a copy of rows: y's rows are x's first rows, then (tokens) the rows of an extra
// f32 weight [E, C] (learned tokens) and rows of zeros. One 16-byte output vector per step.

#include "vae-gpu-common.cuh"

// y row q = x row q for q < nx, then extra's rows (e of them), then zeros; nvec = y's vectors
template <typename T>
static __global__ void vae_gpu_tokens_kernel(const T * x, T * y, const float * extra, size_t nvec, size_t nx, int e,
                                             int c, int cp) {
    constexpr int    VEC = 16 / sizeof(T);
    const int        G   = cp / VEC;
    const vae_gpu_vec<T> * xv = reinterpret_cast<const vae_gpu_vec<T> *>(x);
    vae_gpu_vec<T> *       yv = reinterpret_cast<vae_gpu_vec<T> *>(y);
    for (size_t v = blockIdx.x * (size_t) blockDim.x + threadIdx.x; v < nvec; v += (size_t) gridDim.x * blockDim.x) {
        const size_t q = v / G;
        if (q < nx) {
            yv[v] = xv[v];
            continue;
        }
        const size_t   k  = q - nx;  // the extra row, or past them
        const int      ch = (int) (v - q * G) * VEC;
        vae_gpu_vec<T> a;
#pragma unroll
        for (int l = 0; l < VEC; l++) {
            a.v[l] = vae_gpu_from_f32<T>(k < (size_t) e && ch + l < c ? extra[k * c + ch + l] : 0.0f);
        }
        yv[v] = a;
    }
}

template <typename T>
static cudaError_t vae_gpu_tokens_launch(struct vae_gpu_act x, struct vae_gpu_act y, const float * extra, int e,
                                         cudaStream_t s) {
    const size_t ny   = (size_t) y.n * y.h * y.w, nx = (size_t) x.n * x.h * x.w;
    const size_t nvec = ny * (y.cp / (16 / sizeof(T)));
    vae_gpu_tokens_kernel<T><<<vae_gpu_blocks(nvec), 256, 0, s>>>((const T *) x.data, (T *) y.data, extra, nvec,
                                                                  nx < ny ? nx : ny, e, y.c, y.cp);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_tokens(struct vae_gpu_act x, struct vae_gpu_act y, const float * extra, int e,
                                      enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || vae_gpu_act_overlap(x, y, p) ||
        y.c != x.c || e < 0 || (e > 0 && !extra)) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_tokens_launch<T>(x, y, extra, e, s));
    return err;
}
