// The RMS norms, per pixel over its channels, no statistics across pixels: Wan's RMS_norm,
// F.normalize(x, dim=1) * sqrt(C) * gamma, diffusers' RMSNorm with weight and bias (DC-AE),
// x / sqrt(mean(x^2) + eps) * gamma + beta, with a residual added after either, and PyTorch's
// LayerNorm (MiniMax-H3's), the same with x - mean(x) in place of x. In NHWC a pixel's channels
// are contiguous, so a group of lanes (a warp, or part of one when the pixel has fewer than 32
// vectors) reads them as 16-byte vectors, sums the squares in f32 and reduces by shuffles in a
// fixed order (LayerNorm sums the values first, for the mean, then the squares about it), then
// reads them again (from cache) to write the output. gamma and beta are staged in shared memory
// once per block (beta as -0 when there is none: adding it changes nothing, not even a zero's
// sign). A NaN anywhere in a pixel makes every real channel of it NaN, as in PyTorch; padding
// lanes are written as zero.

#include "vae-gpu-common.cuh"

#define VAE_GPU_RMS_THREADS 256
#define VAE_GPU_RMS_PIXELS  16  // about the pixels each lane group normalizes (amortizes the gamma staging)
#define VAE_GPU_RMS_LANES   32  // the most lanes per pixel: a warp (or half a wave64)

// the sum of v over each group of lp lanes (xor partners stay inside the pixel's lane group)
static __device__ __forceinline__ float vae_gpu_rms_sum(float v, int lp) {
    for (int o = lp / 2; o > 0; o >>= 1) {
        v += vae_gpu_shfl_xor(v, o, VAE_GPU_WARP);
    }
    return v;
}

// lp lanes per pixel (a power of two <= VAE_GPU_RMS_LANES); a warp takes VAE_GPU_WARP / lp pixels at a
// time; form: the op's (0 Wan's, 1 diffusers' RMSNorm, 2 LayerNorm)
template <typename T>
static __global__ void __launch_bounds__(VAE_GPU_RMS_THREADS)
    vae_gpu_rms_norm_kernel(const T * x, T * y, const T * r, size_t npx, int c, int cp, int lp, float sqrt_c, int form,
                            float eps, const float * gamma, const float * beta, enum vae_act act) {
    constexpr int VEC = 16 / sizeof(T);
    extern __shared__ float sm_gamma[];  // cp values, zero past c, then beta's cp values
    float *       sm_beta = sm_gamma + cp;
    for (int ch = threadIdx.x; ch < cp; ch += blockDim.x) {
        sm_gamma[ch] = ch < c ? (gamma ? gamma[ch] : 1.0f) : 0.0f;
        sm_beta[ch]  = ch < c && beta ? beta[ch] : -0.0f;
    }
    __syncthreads();
    const vae_gpu_vec<T> * xv    = reinterpret_cast<const vae_gpu_vec<T> *>(x);
    const vae_gpu_vec<T> * rv    = reinterpret_cast<const vae_gpu_vec<T> *>(r);
    vae_gpu_vec<T> *       yv    = reinterpret_cast<vae_gpu_vec<T> *>(y);
    const int              G     = cp / VEC;
    const int              lane  = threadIdx.x % VAE_GPU_WARP;
    const int              ppw   = VAE_GPU_WARP / lp;
    const size_t           warp  = (blockIdx.x * (size_t) blockDim.x + threadIdx.x) / VAE_GPU_WARP;
    const size_t           warps = (size_t) gridDim.x * blockDim.x / VAE_GPU_WARP;
    // the loop bound is the same for the whole warp, so every lane takes part in the shuffles
    for (size_t base = warp * ppw; base < npx; base += warps * ppw) {
        const size_t p    = base + lane / lp;
        const bool   ok   = p < npx;
        float        mean = 0.0f, ss = 0.0f;
        if (form == 2) {  // the mean first (padding lanes hold zeros)
            if (ok) {
                for (int g = lane % lp; g < G; g += lp) {
                    const vae_gpu_vec<T> a = xv[p * G + g];
#pragma unroll
                    for (int l = 0; l < VEC; l++) {
                        mean += vae_gpu_to_f32(a.v[l]);
                    }
                }
            }
            mean = vae_gpu_rms_sum(mean, lp) / (float) c;
        }
        if (ok) {
            for (int g = lane % lp; g < G; g += lp) {
                const vae_gpu_vec<T> a = xv[p * G + g];
#pragma unroll
                for (int l = 0; l < VEC; l++) {
                    const float v = vae_gpu_to_f32(a.v[l]) - mean;
                    ss += g * VEC + l < c ? v * v : 0.0f;
                }
            }
        }
        ss               = vae_gpu_rms_sum(ss, lp);
        const float norm = sqrtf(ss);
        // a NaN norm stays NaN
        const float scale = form ? 1.0f / sqrtf(ss / (float) c + eps) : sqrt_c / (norm < 1e-12f ? 1e-12f : norm);
        if (ok) {
            for (int g = lane % lp; g < G; g += lp) {
                vae_gpu_vec<T>       a = xv[p * G + g];
                const vae_gpu_vec<T> b = r ? rv[p * G + g] : a;  // (b unused without r)
#pragma unroll
                for (int l = 0; l < VEC; l++) {
                    const int ch = g * VEC + l;
                    float     o  = (vae_gpu_to_f32(a.v[l]) - mean) * scale * sm_gamma[ch] + sm_beta[ch];
                    o            = vae_gpu_act(r ? o + vae_gpu_to_f32(b.v[l]) : o, act);
                    a.v[l]        = vae_gpu_from_f32<T>(ch < c ? o : 0.0f);
                }
                yv[p * G + g] = a;
            }
        }
    }
}

template <typename T>
static cudaError_t vae_gpu_rms_norm_launch(struct vae_gpu_act x, struct vae_gpu_act y, const void * r,
                                           const float * gamma, const float * beta, int form, float eps,
                                           enum vae_act act, cudaStream_t s) {
    const int G  = x.cp / (16 / sizeof(T));
    int       lp = 1;
    while (lp < G && lp < VAE_GPU_RMS_LANES) {
        lp *= 2;
    }
    const size_t npx    = (size_t) x.n * x.h * x.w;
    const size_t per_bk = (size_t) VAE_GPU_RMS_THREADS / lp * VAE_GPU_RMS_PIXELS;  // pixels per block
    vae_gpu_rms_norm_kernel<T><<<vae_gpu_blocks((npx + per_bk - 1) / per_bk * VAE_GPU_RMS_THREADS),
                                 VAE_GPU_RMS_THREADS, 2 * x.cp * sizeof(float), s>>>(
        (const T *) x.data, (T *) y.data, (const T *) r, npx, x.c, x.cp, lp, (float) sqrt((double) x.c), form,
        eps, gamma, beta, act);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_rms_norm(struct vae_gpu_act x, struct vae_gpu_act y, const void * residual,
                                        const float * gamma, const float * beta, int form, float eps,
                                        enum vae_act act, enum vae_precision p, cudaStream_t s) {
    // gamma and beta are staged in the default 48 KiB of shared memory
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) ||
        (uintptr_t) residual % 16 != 0 || y.n != x.n ||
        y.c != x.c || y.h != x.h || y.w != x.w || !vae_gpu_in_place_ok(x.data, y, p) ||
        !vae_gpu_in_place_ok(residual, y, p) || 2 * x.cp * sizeof(float) > 48 * 1024 || !(eps >= 0.0f) || form < 0 ||
        form > 2) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_rms_norm_launch<T>(x, y, residual, gamma, beta, form, eps, act, s));
    return err;
}
