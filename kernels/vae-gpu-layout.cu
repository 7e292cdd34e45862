// The way in and out of the activation layout: graph inputs arrive as plain f32 NCHW and test or
// tool reads of an output leave as f32 NCHW, while activations are NHWC with padded channels in
// the storage type. Each frame is a (channels x pixels) matrix on one side and (pixels x channels)
// on the other, so both directions are one tiled transpose through shared memory: reads and
// writes are both along the contiguous dimension of their side.

#include "vae-gpu-common.cuh"

#include <limits.h>

#define VAE_GPU_LAYOUT_TILE 32  // a tile is TILE x TILE elements, moved by a (TILE, 8) block

// per frame f: out[f * out_frame + col * out_ld + r] = in[f * in_frame + r * in_ld + col] for r < rows,
// col < cols, and 0 for rows <= r < out_rows (the channel padding)
template <typename Tin, typename Tout>
static __global__ void vae_gpu_transpose_kernel(const Tin * in, Tout * out, int frames, int rows, int cols,
                                                int out_rows, size_t in_ld, size_t in_frame, size_t out_ld,
                                                size_t out_frame) {
    __shared__ float tile[VAE_GPU_LAYOUT_TILE][VAE_GPU_LAYOUT_TILE + 1];  // +1: the column reads hit 32 banks
    const int    rt     = (out_rows + VAE_GPU_LAYOUT_TILE - 1) / VAE_GPU_LAYOUT_TILE;
    const int    ct     = (cols + VAE_GPU_LAYOUT_TILE - 1) / VAE_GPU_LAYOUT_TILE;
    const size_t ntiles = (size_t) frames * rt * ct;
    for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const size_t fr = t / ct;  // f * rt + row tile
        const size_t f  = fr / rt;
        const int    r0 = (int) (fr - f * rt) * VAE_GPU_LAYOUT_TILE;
        const int    c0 = (int) (t - fr * ct) * VAE_GPU_LAYOUT_TILE;
        for (int k = threadIdx.y; k < VAE_GPU_LAYOUT_TILE; k += blockDim.y) {
            const int r = r0 + k, col = c0 + threadIdx.x;
            tile[k][threadIdx.x] =
                r < rows && col < cols ? vae_gpu_to_f32(in[f * in_frame + r * in_ld + col]) : 0.0f;
        }
        __syncthreads();
        for (int k = threadIdx.y; k < VAE_GPU_LAYOUT_TILE; k += blockDim.y) {
            const int r = r0 + threadIdx.x, col = c0 + k;
            if (r < out_rows && col < cols) {
                out[f * out_frame + col * out_ld + r] = vae_gpu_from_f32<Tout>(tile[threadIdx.x][k]);
            }
        }
        __syncthreads();  // the tile is refilled on the next step
    }
}

template <typename Tin, typename Tout>
static cudaError_t vae_gpu_transpose_launch(const Tin * in, Tout * out, int frames, int rows, int cols, int out_rows,
                                            size_t in_ld, size_t in_frame, size_t out_ld, size_t out_frame,
                                            cudaStream_t s) {
    const size_t ntiles = (size_t) frames * ((out_rows + VAE_GPU_LAYOUT_TILE - 1) / VAE_GPU_LAYOUT_TILE) *
                          ((cols + VAE_GPU_LAYOUT_TILE - 1) / VAE_GPU_LAYOUT_TILE);
    const dim3   block(VAE_GPU_LAYOUT_TILE, 8);
    // one tile per 256-thread block
    vae_gpu_transpose_kernel<Tin, Tout><<<vae_gpu_blocks(ntiles * 256), block, 0, s>>>(
        in, out, frames, rows, cols, out_rows, in_ld, in_frame, out_ld, out_frame);
    return cudaGetLastError();
}

// src [n, c, hw] (rows: channels) -> y [n, hw, cp] (rows: pixels, channels c .. cp - 1 zero)
extern "C" cudaError_t vae_gpu_from_nchw_f32(const float * src, struct vae_gpu_act y, enum vae_precision p,
                                             cudaStream_t s) {
    if (!src || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p)) {
        return cudaErrorInvalidValue;
    }
    const size_t hw = (size_t) y.h * y.w;
    if (hw > INT_MAX) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = (vae_gpu_transpose_launch<float, T>(src, (T *) y.data, y.n, y.c, (int) hw, y.cp, hw,
                                                                    y.c * hw, y.cp, hw * y.cp, s)));
    return err;
}

// x frames [first, first + count) [count, hw, cp] -> dst [count, c, hw]
extern "C" cudaError_t vae_gpu_to_nchw_f32(struct vae_gpu_act x, int first, int count, float * dst,
                                           enum vae_precision p, cudaStream_t s) {
    if (!dst || !vae_gpu_act_ok(x) || !vae_gpu_precision_ok(p) || first < 0 || count < 1 || count > x.n - first) {
        return cudaErrorInvalidValue;
    }
    const size_t hw = (size_t) x.h * x.w;
    if (hw > INT_MAX) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = (vae_gpu_transpose_launch<T, float>((const T *) x.data + (size_t) first * hw * x.cp, dst,
                                                                    count, (int) hw, x.c, (int) hw, x.cp, hw * x.cp,
                                                                    hw, x.c * hw, s)));
    return err;
}
