// Pixel shuffle (depth to space, r = 2), [N, 4C, H, W] -> [N, C, 2H, 2W] with
// y[c, 2Y+i, 2X+j] = x[4c+2i+j, Y, X]. In NHWC the 4 * VEC input channels behind one output vector
// of each of the four output pixels are contiguous: a thread reads them as four 16-byte vectors,
// transposes them in registers and writes four output vectors. y's padding lanes are written as zero.

#include "vae-gpu-common.cuh"

// c = y's channels; nvec = the input pixels times y's vectors per pixel
template <typename T>
static __global__ void vae_gpu_pixel_shuffle_kernel(const T * x, T * y, size_t nvec, int c, int cpx, int cpy,
                                                    int w) {
    constexpr int VEC = 16 / sizeof(T);
    const int     G   = cpy / VEC;
    const vae_gpu_vec<T> * xv = reinterpret_cast<const vae_gpu_vec<T> *>(x);
    vae_gpu_vec<T> *       yv = reinterpret_cast<vae_gpu_vec<T> *>(y);
    for (size_t v = blockIdx.x * (size_t) blockDim.x + threadIdx.x; v < nvec; v += (size_t) gridDim.x * blockDim.x) {
        const size_t p   = v / G;  // input pixel (n * h + Y) * w + X
        const int    g   = (int) (v - p * G);
        const size_t row = p / w;  // n * h + Y
        const int    X   = (int) (p - row * w);
        // e[4 * l + q] = x channel 4 * (g * VEC + l) + q: four input vectors, those holding a real channel
        T e[4 * VEC];
#pragma unroll
        for (int m = 0; m < 4; m++) {
            vae_gpu_vec<T> a;
            if (4 * g * VEC + m * VEC < 4 * c) {  // then the whole vector lies inside x's cpx channels
                a = xv[(p * cpx + 4 * g * VEC) / VEC + m];
            } else {
#pragma unroll
                for (int l = 0; l < VEC; l++) {
                    a.v[l] = vae_gpu_from_f32<T>(0.0f);
                }
            }
#pragma unroll
            for (int l = 0; l < VEC; l++) {
                e[m * VEC + l] = a.v[l];
            }
        }
#pragma unroll
        for (int q = 0; q < 4; q++) {  // q = 2i + j: output pixel (n, 2Y + i, 2X + j)
            vae_gpu_vec<T> o;
#pragma unroll
            for (int l = 0; l < VEC; l++) {
                o.v[l] = g * VEC + l < c ? e[4 * l + q] : vae_gpu_from_f32<T>(0.0f);
            }
            const size_t op = (2 * row + q / 2) * (2 * (size_t) w) + 2 * (size_t) X + q % 2;
            yv[op * G + g] = o;
        }
    }
}

template <typename T>
static cudaError_t vae_gpu_pixel_shuffle_launch(struct vae_gpu_act x, struct vae_gpu_act y, cudaStream_t s) {
    const size_t nvec = (size_t) x.n * x.h * x.w * (y.cp / (16 / sizeof(T)));
    vae_gpu_pixel_shuffle_kernel<T><<<vae_gpu_blocks(nvec), 256, 0, s>>>((const T *) x.data, (T *) y.data, nvec,
                                                                         y.c, x.cp, y.cp, x.w);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_pixel_shuffle(struct vae_gpu_act x, struct vae_gpu_act y, enum vae_precision p,
                                             cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || vae_gpu_act_overlap(x, y, p) || x.c % 4 != 0 ||
        y.c != x.c / 4 || y.n != x.n || y.h != 2 * x.h || y.w != 2 * x.w) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_pixel_shuffle_launch<T>(x, y, s));
    return err;
}
