// The GroupNorm partial statistics of one tile of an NHWC activation, computed by a whole block:
// shared by GroupNorm's own statistics pass (vae-gpu-group-norm.cu, a tile per block) and by the
// conv's epilogue (vae-gpu-conv.cu), which gives the statistics of the GroupNorm after it from
// the tile it has just written, so that the norm reads its input once, not twice. Both write the
// same partials (count, mean, M2 per group) that vae_gpu_group_norm_combine reduces, in a fixed
// order: the result does not depend on scheduling.
// Each thread sums the differences from its first value (shifted sums) for each lane of one
// 16-byte vector column; a warp per group then merges the columns with the exact formula
// M2 = sum(M2_j + n_j (mean_j - mean)^2), so a large mean costs no precision.

#pragma once

#include "vae-gpu-common.cuh"

// the sum over the warp, the same in every lane
static __device__ __forceinline__ float vae_gpu_gn_warp_sum(float v) {
#pragma unroll
    for (int o = VAE_GPU_WARP / 2; o > 0; o >>= 1) {
        v += vae_gpu_shfl_xor(v, o, VAE_GPU_WARP);
    }
    return v;
}

// the floats of shared memory vae_gpu_gn_tile_partials takes for a block of `threads`
#define VAE_GPU_GN_TILE_SMEM(T, threads) ((threads) * (2 * (16 / (int) sizeof(T)) + 1))

// the partial of each of the `groups` groups (cpg channels each, c in all) over a tile of `rows`
// pixels by S 16-byte vectors, channels lo .. lo + S x VEC (those from c on are padding), pixel r's
// vectors at at(r): written to part[o + g nb] (count), part[total + o + g nb] (mean) and
// part[2 total + o + g nb] (M2), a group the tile does not touch with count 0. Every thread of the
// block calls it (it has barriers; S <= THREADS); sm: VAE_GPU_GN_TILE_SMEM floats of shared memory
template <typename T, int THREADS, class At>
__device__ void vae_gpu_gn_tile_partials(const At & at, size_t rows, int S, int lo, int c, int groups, int cpg,
                                         float * sm, float * part, size_t o, size_t nb, size_t total) {
    constexpr int VEC = 16 / sizeof(T);
    // entry t * VEC + l: thread t's statistics of its lane l (row r, slot s: t = r * S + s)
    float *       sm_mean = sm, *sm_m2 = sm + THREADS * VEC;
    int *         sm_cnt = reinterpret_cast<int *>(sm + 2 * THREADS * VEC);
    const int     t = threadIdx.x, lane = t % VAE_GPU_WARP;
    const int     R = THREADS / S;  // pixel rows the block reads at once
    const int     r = t / S;
    float         k[VEC], s1[VEC], s2[VEC];
    int           cnt = 0;
#pragma unroll
    for (int l = 0; l < VEC; l++) {
        k[l] = s1[l] = s2[l] = 0.0f;
    }
    if (r < R) {
        size_t px = r;
        if (px < rows) {
            const vae_gpu_vec<T> a = at(px)[t % S];
#pragma unroll
            for (int l = 0; l < VEC; l++) {
                k[l] = vae_gpu_to_f32(a.v[l]);
            }
        }
        for (; px < rows; px += R, cnt++) {
            const vae_gpu_vec<T> a = at(px)[t % S];
#pragma unroll
            for (int l = 0; l < VEC; l++) {
                const float d = vae_gpu_to_f32(a.v[l]) - k[l];
                s1[l] += d;
                s2[l] += d * d;
            }
        }
    }
#pragma unroll
    for (int l = 0; l < VEC; l++) {
        sm_mean[t * VEC + l] = cnt ? k[l] + s1[l] / cnt : 0.0f;
        sm_m2[t * VEC + l]   = cnt ? s2[l] - s1[l] * (s1[l] / cnt) : 0.0f;
    }
    sm_cnt[t] = cnt;
    __syncthreads();
    // one warp per group: the entries of its real channels in this tile, [lo, hi) of the block
    const int hi = min(c, lo + S * VEC);
    for (int gr = t / VAE_GPU_WARP; gr < groups; gr += THREADS / VAE_GPU_WARP) {
        const int a0 = max(gr * cpg, lo), nch = min((gr + 1) * cpg, hi) - a0;  // nch <= 0: none
        const int ne = nch > 0 ? nch * R : 0;
        float     n = 0.0f, nm = 0.0f;
        for (int e = lane; e < ne; e += VAE_GPU_WARP) {
            const int   rr = e / nch, j = rr * S * VEC + a0 - lo + (e - rr * nch);
            const float nj = (float) sm_cnt[j / VEC];
            if (nj > 0.0f) {
                n += nj;
                nm += nj * sm_mean[j];
            }
        }
        n                = vae_gpu_gn_warp_sum(n);
        nm               = vae_gpu_gn_warp_sum(nm);
        const float mean = n > 0.0f ? nm / n : 0.0f;
        float       m2   = 0.0f;
        for (int e = lane; e < ne; e += VAE_GPU_WARP) {
            const int   rr = e / nch, j = rr * S * VEC + a0 - lo + (e - rr * nch);
            const float nj = (float) sm_cnt[j / VEC];
            if (nj > 0.0f) {
                const float d = sm_mean[j] - mean;
                m2 += sm_m2[j] + nj * d * d;
            }
        }
        m2 = vae_gpu_gn_warp_sum(m2);
        if (lane == 0) {
            const size_t q = o + (size_t) gr * nb;
            part[q]             = n;
            part[total + q]     = mean;
            part[2 * total + q] = m2;
        }
    }
    __syncthreads();  // the shared entries may be rewritten after it
}
