// MiniMax-H3's ViT makes q and k ready for attention in one pass over qkv [1, 3D, 1, L]: each head's
// q and k RMS-normalised over its hd channels (no weight), then rotated on their first rd channels
// by angles from the token's point on the 3-D (t, y, x) grid of the latent, v copied. The angles are
// computed here, in fp32 in the CPU reference's order (P, then (2 pi P) / theta^(6 f / rd) with the
// inverse frequencies rounded from double, once per block into shared memory), so that no table of
// L x rd/2 angles is needed; their cosines and sines through sincospif of a / pi (within an ulp or
// two of cosf's and sinf's, whose reduction of large arguments takes a stack frame). One thread per
// head of a token, the head's channels read twice (from cache): small next to the attention.

#include "vae-gpu-common.cuh"

#include <math.h>

// item h of token p (3 heads + 1 per token): h < 2 heads, a head of q or k (normalised, rotated);
// then the heads of v (copied); the last, the padding lanes [3 heads hd, cp) (zeros). Grid
// nt x nh x nw (the tokens past it sit at P = 0); rd / 6 floats of dynamic shared memory
template <typename T>
static __global__ void vae_gpu_rope_kernel(const T * x, T * y, size_t n, int heads, int hd, int rd, int nt, int nh,
                                           int nw, int cp, float eps, float theta) {
    extern __shared__ float vae_gpu_rope_inv[];  // the inverse frequencies, rd / 6
    for (int f = threadIdx.x; f < rd / 6; f += blockDim.x) {
        vae_gpu_rope_inv[f] = (float) (1.0 / pow((double) theta, 6.0 * f / rd));
    }
    __syncthreads();
    const int items = 3 * heads + 1;
    for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < n; e += (size_t) gridDim.x * blockDim.x) {
        const size_t p   = e / items;
        const int    h   = (int) (e - p * items);
        const T *    src = x + p * cp + (size_t) h * hd;
        T *          dst = y + p * cp + (size_t) h * hd;
        if (h == 3 * heads) {
            for (int c = 0; c < cp - 3 * heads * hd; c++) {
                dst[c] = vae_gpu_from_f32<T>(0.0f);
            }
            continue;
        }
        if (h >= 2 * heads) {
            for (int c = 0; c < hd; c++) {
                dst[c] = src[c];
            }
            continue;
        }
        float ss = 0.0f;
        for (int c = 0; c < hd; c++) {
            const float v = vae_gpu_to_f32(src[c]);
            ss += v * v;
        }
        const float s = 1.0f / sqrtf(ss / (float) hd + eps);
        for (int c = rd; c < hd; c++) {
            dst[c] = vae_gpu_from_f32<T>(vae_gpu_to_f32(src[c]) * s);
        }
        float pos[3] = { 0.0f, 0.0f, 0.0f };  // P of each axis
        if (p < (size_t) nt * nh * nw) {
            const int g[3] = { (int) (p / ((size_t) nh * nw)), (int) (p / nw % nh), (int) (p % nw) };
            const int m[3] = { nt, nh, nw };
#pragma unroll
            for (int b = 0; b < 3; b++) {
                pos[b] = 2.0f * (((float) g[b] + 0.5f) / (float) m[b]) - 1.0f;
            }
        }
        const int nf = rd / 6, half = rd / 2;
        for (int f = 0; f < nf; f++) {
            const float inv = vae_gpu_rope_inv[f];
#pragma unroll
            for (int b = 0; b < 3; b++) {
                const int   j  = b * nf + f;
                const float a  = ((float) (2.0 * M_PI) * pos[b]) * inv;
                float       co, si;
                sincospif(a * (float) M_1_PI, &si, &co);
                const float u  = vae_gpu_to_f32(src[j]) * s, w = vae_gpu_to_f32(src[j + half]) * s;
                dst[j]        = vae_gpu_from_f32<T>(u * co - w * si);
                dst[j + half] = vae_gpu_from_f32<T>(w * co + u * si);
            }
        }
    }
}

template <typename T>
static cudaError_t vae_gpu_rope_launch(struct vae_gpu_act x, struct vae_gpu_act y, int hd, int rd, int nt, int nh,
                                       int nw, float eps, float theta, cudaStream_t s) {
    const int    heads = x.c / 3 / hd;
    const size_t n     = (size_t) x.n * x.h * x.w * (3 * heads + 1);
    vae_gpu_rope_kernel<T><<<vae_gpu_blocks(n), 256, rd / 6 * sizeof(float), s>>>(
        (const T *) x.data, (T *) y.data, n, heads, hd, rd, nt, nh, nw, x.cp, eps, theta);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_rope(struct vae_gpu_act x, struct vae_gpu_act y, int hd, int rd, int nt, int nh, int nw,
                                    float eps, float theta, enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || vae_gpu_act_overlap(x, y, p) ||
        y.n != x.n || y.c != x.c || y.h != x.h || y.w != x.w || hd < 1 || x.c % (3 * hd) != 0 || rd < 0 || rd > hd ||
        rd % 6 != 0 || nt < 1 || nh < 1 || nw < 1 || !(eps >= 0.0f) || !(theta > 0.0f)) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_rope_launch<T>(x, y, hd, rd, nt, nh, nw, eps, theta, s));
    return err;
}
