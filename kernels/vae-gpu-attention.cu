// Attention within each frame, in heads (one head: the mid-block attention of AutoencoderKL and of
// the Wan VAE; heads of 64 channels: MiniMax-H3's ViT over a sequence of tokens): y = softmax(q k^T
// / sqrt(D)) v over the h*w positions of a frame, q, k and v the three channel thirds of each pixel
// of qkv, head j their channels [j D, (j+1) D), one grid dimension per head. Flash-style: a block
// owns a tile of queries and streams the keys and values past it in tiles, keeping each row's
// running max and sum in f32 (in the exp2 domain, the scale folded in) and rescaling its
// accumulator when the max grows, so no score matrix exists beyond one tile. The head dims (512,
// 384) are above FlashAttention's 256, so at fp16 and bf16 the tensor-core kernel splits the
// columns of O over the warps (in registers), passes S and P between them through shared memory and
// sizes its tiles from the device's shared memory. fp32 and tf32, head dims that are not a multiple
// of 16 or above 512, and bf16 before sm_80 take a SIMT kernel that computes in true f32.
//
// The causal form (HunyuanVideo 1.5's mid block) is the same kernels with the keys and values read
// from a cache instead of the query's frame: the cache holds the qkv rows of every frame of the
// stream so far (this compute's appended first), and a query of frame t sees the first nk0 + (t +
// 1) N of them, nk0 the positions held before this compute: the block-causal mask, never built.

#include "vae-gpu-common.cuh"

#include <limits.h>
#include <math.h>
#include <type_traits>

namespace wmma = vae_gpu_wmma;

#define VAE_GPU_ATTN_THREADS 256 // both kernels

#define VAE_GPU_ATTN_LOG2E 1.4426950408889634

// bf16 tensor cores exist from sm_80 on; below that the launcher never picks the bf16 tc kernel
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define VAE_GPU_ATTN_BF16_MMA 0
#else
#define VAE_GPU_ATTN_BF16_MMA 1
#endif

// One step of a row's online softmax, in the exp2 domain: after a block of scores whose maximum is
// bmax, the running max *m becomes max(*m, bmax), *alpha is the factor the earlier sum and
// accumulator take, and the returned reference is what the block's scores are exponentiated
// against. While no score is finite the reference is 0, so -inf scores give 0 rather than NaN (a
// later finite block then starts the row cleanly); NaN scores are skipped by the max and give NaN
// through their own exp2, as in the CPU reference.
__host__ __device__ inline float vae_gpu_attn_step(float * m, float bmax, float * alpha) {
    const float mn  = fmaxf(*m, bmax);
    const float ref = mn == -INFINITY ? 0.0f : mn;
    *alpha          = exp2f(*m - ref);
    *m              = mn;
    return ref;
}

// the max and the sum over each group of W lanes (W: a warp, or the SIMT kernel's lane group)
template <int W> __device__ __forceinline__ float vae_gpu_attn_max(float v) {
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) {
        v = fmaxf(v, vae_gpu_shfl_xor(v, o, W));
    }
    return v;
}

template <int W> __device__ __forceinline__ float vae_gpu_attn_sum(float v) {
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) {
        v += vae_gpu_shfl_xor(v, o, W);
    }
    return v;
}

// ---- tensor-core kernel (fp16, bf16; D = C a multiple of 16, at most 512) -----------------------

#define VAE_GPU_ATTN_TC_DMAX 512

// A tile set: BQ queries per block, BK keys per step, NW warps of W lanes (8 of 32; 4 waves of 64
// on CDNA). S = Q K^T is (BQ/16) x (BK/16) wmma tiles; each warp computes WT of them in one tile
// row, or, when there are fewer tiles than warps, KS warps share a tile, each summing every KS-th 16
// channels into its own partial S. Softmax: RPW rows per warp. O = P V: warp w owns the column
// tiles w, w + NW, ... of every row tile.
template <int BQ, int BK, int NW> struct vae_gpu_attn_tiles {
    static constexpr int W   = VAE_GPU_ATTN_THREADS / NW;
    static constexpr int RT  = BQ / 16;
    static constexpr int CT  = BK / 16;
    static constexpr int TS  = RT * CT;
    static constexpr int WT  = TS >= NW ? TS / NW : 1;
    static constexpr int KS  = TS >= NW ? 1 : NW / TS;
    static constexpr int RPW = BQ / NW;
    static constexpr int OT  = VAE_GPU_ATTN_TC_DMAX / 16 / NW;
    static constexpr int LDS = BK + 4; // f32 S rows
    static constexpr int LDP = BK + 8; // P rows (16-bit)

    static_assert(BQ % NW == 0 && BK % 16 == 0 && BK <= 64, "tile set");
    static_assert(TS % NW == 0 || NW % TS == 0, "S tiles over warps");
    static_assert(CT % WT == 0, "a warp's S tiles lie in one row");
    // the partial S hold the row-index tile at the start and one 16x16 f32 tile per warp at the end
    static_assert(KS * BQ * LDS >= NW * 256, "S area too small for the epilogue");

    // bytes of shared memory at head dim d: Q, K, V (rows padded to d + 8), the partial S, P, one
    // f32 per row (alpha during the loop, the sum at the end); every part a multiple of 32 bytes
    static constexpr size_t smem(int d) {
        return (size_t) 2 * (BQ + 2 * BK) * (d + 8) + (size_t) 4 * KS * BQ * LDS + (size_t) 2 * BQ * LDP +
               (size_t) 4 * BQ;
    }
};

// channels [off, off + D) of rows [p0, p0 + R) of a frame's qkv (rows 3 C wide) into a shared tile
// of row stride ld, asynchronously; rows past the frame's end are zeros
template <int R, typename T>
static __device__ __forceinline__ void vae_gpu_attn_tile_load(T * dst, const T * src, int p0, int N, int off, int D,
                                                              int C, int ld) {
    // thread t takes 16-byte chunks t, t + 256, ... of the tile, walking (row, chunk) without dividing
    constexpr int NT  = VAE_GPU_ATTN_THREADS;
    const int     cpr = D / 8;
    int           r = threadIdx.x / cpr, c = threadIdx.x % cpr;
    while (r < R) {
        T * d = dst + r * ld + c * 8;
        if (p0 + r < N) {
            vae_gpu_cp16<true>(vae_gpu_smem_addr(d), src + (size_t) (p0 + r) * 3 * C + off + c * 8, true);
        } else {
            *(uint4 *) d = make_uint4(0, 0, 0, 0);
        }
        r += NT / cpr;
        c += NT % cpr;
        if (c >= cpr) {
            c -= cpr;
            r++;
        }
    }
}

// grid (ceil(N / BQ), frames, heads); qkv rows are 3 C wide (no padding), y rows C, heads of D
// channels. kv: NULL, keys and values of the query's own frame; else the cache's rows (the same
// layout), the first nk0 + (t + 1) N of them for frame t
template <typename T, int BQ, int BK, int NW>
static __global__ void __launch_bounds__(VAE_GPU_ATTN_THREADS, 1)
    vae_gpu_attention_tc(const T * __restrict__ qkv, const T * __restrict__ kv, T * __restrict__ y, int N, int nk0,
                         int D, int C, float sl2) {
    // (the sm_75 build of bf16, and a wave count of the other warp width on AMD: never launched)
    if constexpr ((std::is_same<T, __nv_bfloat16>::value && !VAE_GPU_ATTN_BF16_MMA) ||
                  VAE_GPU_ATTN_THREADS / NW != VAE_GPU_WARP) {
        return;
    } else {
        typedef vae_gpu_attn_tiles<BQ, BK, NW> G;
        typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_t;
        constexpr int W = G::W;

        extern __shared__ __align__(128) unsigned char vae_gpu_attn_smem[];
        const int ld = D + 8, nct = D / 16;
        T *       qs = (T *) vae_gpu_attn_smem;
        T *       ks = qs + BQ * ld;
        T *       vs = ks + BK * ld;
        float *   ss = (float *) (vs + BK * ld);
        T *       ps = (T *) (ss + G::KS * BQ * G::LDS);
        float *   rs = (float *) (ps + BQ * G::LDP);

        const int w = threadIdx.x / W, lane = threadIdx.x % W;
        const int q0  = blockIdx.x * BQ, ho = blockIdx.z * D; // ho: the head's channels in each third
        const T * src = qkv + (size_t) blockIdx.y * N * 3 * C;
        const T * kvs = kv ? kv : src;
        const int NK  = kv ? nk0 + ((int) blockIdx.y + 1) * N : N;

        // two groups in flight from here on: (Q and) the next K tile, then the next V tile
        vae_gpu_attn_tile_load<BQ>(qs, src, q0, N, ho, D, C, ld);
        vae_gpu_attn_tile_load<BK>(ks, kvs, 0, NK, C + ho, D, C, ld);
        vae_gpu_cp_commit();
        vae_gpu_attn_tile_load<BK>(vs, kvs, 0, NK, 2 * C + ho, D, C, ld);
        vae_gpu_cp_commit();

        // the wmma accumulator layout is opaque: load a tile whose elements are their row numbers
        // to learn which row of a 16x16 tile each element of a fragment holds
        for (int e = threadIdx.x; e < 256; e += VAE_GPU_ATTN_THREADS) {
            ss[e] = (float) (e / 16);
        }
        __syncthreads();
        acc_t frow;
        wmma::load_matrix_sync(frow, ss, 16, wmma::mem_row_major);

        acc_t o[G::RT][G::OT];
#pragma unroll
        for (int rt = 0; rt < G::RT; rt++) {
#pragma unroll
            for (int t = 0; t < G::OT; t++) {
                wmma::fill_fragment(o[rt][t], 0.0f);
            }
        }
        float m[G::RPW], l[G::RPW];
#pragma unroll
        for (int i = 0; i < G::RPW; i++) {
            m[i] = -INFINITY;
            l[i] = 0.0f;
        }

        for (int kb = 0; kb < NK; kb += BK) {
            vae_gpu_cp_wait<1>();
            __syncthreads(); // this K tile is in; the previous step is done with S

            {   // partial S of this warp's tiles: rows rt, columns ct0 .. ct0 + WT - 1
                const int g = w % (NW / G::KS), kq = w / (NW / G::KS);
                const int rt = g * G::WT / G::CT, ct0 = g * G::WT % G::CT;
                acc_t     acc[G::WT];
#pragma unroll
                for (int i = 0; i < G::WT; i++) {
                    wmma::fill_fragment(acc[i], 0.0f);
                }
                for (int k = kq * 16; k < D; k += G::KS * 16) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
                    wmma::load_matrix_sync(a, qs + rt * 16 * ld + k, ld);
#pragma unroll
                    for (int i = 0; i < G::WT; i++) {
                        // K^T as a column-major B: element (k, n) = K[key n][k]
                        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
                        wmma::load_matrix_sync(b, ks + (ct0 + i) * 16 * ld + k, ld);
                        wmma::mma_sync(acc[i], a, b, acc[i]);
                    }
                }
#pragma unroll
                for (int i = 0; i < G::WT; i++) {
                    wmma::store_matrix_sync(ss + (kq * BQ + rt * 16) * G::LDS + (ct0 + i) * 16, acc[i], G::LDS,
                                            wmma::mem_row_major);
                }
            }
            __syncthreads(); // S complete, the K tile free

            if (kb + BK < NK) {
                vae_gpu_attn_tile_load<BK>(ks, kvs, kb + BK, NK, C + ho, D, C, ld);
            }
            vae_gpu_cp_commit();

            // online softmax of this warp's rows; keys past the last get p = 0
            constexpr int CPL = (BK + W - 1) / W;
#pragma unroll
            for (int i = 0; i < G::RPW; i++) {
                const int r = w * G::RPW + i;
                float     x[CPL], bmax = -INFINITY;
#pragma unroll
                for (int u = 0; u < CPL; u++) {
                    const int c = lane + W * u;
                    x[u]        = -INFINITY;
                    if (c < BK && kb + c < NK) {
                        float sc = 0.0f;
#pragma unroll
                        for (int kq = 0; kq < G::KS; kq++) {
                            sc += ss[(kq * BQ + r) * G::LDS + c];
                        }
                        x[u] = sc * sl2;
                        bmax = fmaxf(bmax, x[u]);
                    }
                }
                float       alpha;
                const float ref = vae_gpu_attn_step(&m[i], vae_gpu_attn_max<W>(bmax), &alpha);
                float       sum = 0.0f;
#pragma unroll
                for (int u = 0; u < CPL; u++) {
                    const int c = lane + W * u;
                    if (c < BK) {
                        const float p       = kb + c < NK ? exp2f(x[u] - ref) : 0.0f;
                        ps[r * G::LDP + c] = vae_gpu_from_f32<T>(p);
                        sum += p;
                    }
                }
                l[i] = l[i] * alpha + vae_gpu_attn_sum<W>(sum);
                if (lane == 0) {
                    rs[r] = alpha;
                }
            }
            vae_gpu_cp_wait<1>();
            __syncthreads(); // P and the alphas written, this V tile in

            // O = alpha O + P V over this warp's column tiles
#pragma unroll
            for (int rt = 0; rt < G::RT; rt++) {
                float a[acc_t::num_elements];
#pragma unroll
                for (int e = 0; e < acc_t::num_elements; e++) {
                    a[e] = rs[rt * 16 + (int) frow.x[e]];
                }
#pragma unroll
                for (int t = 0; t < G::OT; t++) {
                    if (w + NW * t < nct) {
#pragma unroll
                        for (int e = 0; e < acc_t::num_elements; e++) {
                            o[rt][t].x[e] *= a[e];
                        }
                    }
                }
            }
#pragma unroll
            for (int kk = 0; kk < BK; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pa[G::RT];
#pragma unroll
                for (int rt = 0; rt < G::RT; rt++) {
                    wmma::load_matrix_sync(pa[rt], ps + rt * 16 * G::LDP + kk, G::LDP);
                }
#pragma unroll
                for (int t = 0; t < G::OT; t++) {
                    const int ct = w + NW * t;
                    if (ct < nct) {
                        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
                        wmma::load_matrix_sync(vb, vs + kk * ld + ct * 16, ld);
#pragma unroll
                        for (int rt = 0; rt < G::RT; rt++) {
                            wmma::mma_sync(o[rt][t], pa[rt], vb, o[rt][t]);
                        }
                    }
                }
            }
            __syncthreads(); // done with P and the V tile

            if (kb + BK < NK) {
                vae_gpu_attn_tile_load<BK>(vs, kvs, kb + BK, NK, 2 * C + ho, D, C, ld);
            }
            vae_gpu_cp_commit();
        }

        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < G::RPW; i++) {
                rs[w * G::RPW + i] = l[i];
            }
        }
        __syncthreads();

        // y = O / l through a 16x16 f32 tile per warp (in the S area, free now): LPR lanes write a
        // row's 16 channels, EPL each (8 or 4: 16- or 8-byte vectors)
        constexpr int EPL = 256 / W, LPR = 16 / EPL;
        typedef typename std::conditional<EPL == 8, uint4, uint2>::type vec_t;
        float *   buf = ss + w * 256;
        const int rr = lane / LPR, c8 = lane % LPR * EPL;
#pragma unroll
        for (int rt = 0; rt < G::RT; rt++) {
#pragma unroll
            for (int t = 0; t < G::OT; t++) {
                const int ct = w + NW * t;
                if (ct < nct) {
                    wmma::store_matrix_sync(buf, o[rt][t], 16, wmma::mem_row_major);
                    vae_gpu_warp_sync();
                    const int r = rt * 16 + rr;
                    if (q0 + r < N) {
                        const float    lr = rs[r];
                        __align__(16) T v[EPL];
#pragma unroll
                        for (int u = 0; u < EPL; u++) {
                            v[u] = vae_gpu_from_f32<T>(buf[rr * 16 + c8 + u] / lr);
                        }
                        *(vec_t *) (y + ((size_t) blockIdx.y * N + q0 + r) * C + ho + ct * 16 + c8) = *(const vec_t *) v;
                    }
                    vae_gpu_warp_sync();
                }
            }
        }
    }
}

template <typename T, int BQ, int BK, int NW>
static cudaError_t vae_gpu_attention_tc_run(const T * qkv, const T * kv, T * y, int n, int N, int nk0, int D, int C,
                                            float sl2, cudaStream_t s) {
    const size_t smem = vae_gpu_attn_tiles<BQ, BK, NW>::smem(D);
    cudaError_t  err  = cudaFuncSetAttribute(vae_gpu_attention_tc<T, BQ, BK, NW>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem);
    if (err != cudaSuccess) {
        return err;
    }
    const dim3 grid((unsigned) ((N + BQ - 1) / BQ), (unsigned) n, (unsigned) (C / D));
    vae_gpu_attention_tc<T, BQ, BK, NW><<<grid, VAE_GPU_ATTN_THREADS, smem, s>>>(qkv, kv, y, N, nk0, D, C, sl2);
    return cudaGetLastError();
}

// the largest tile set whose shared memory fits the device's opt-in limit (the launcher checks
// that the smallest one does), in NW warps. AMD: at most 32 queries, as the O accumulators of 64
// spill registers there (and 64 KB of LDS seldom holds them)
template <typename T, int NW>
static cudaError_t vae_gpu_attention_tc_launch(const T * qkv, const T * kv, T * y, int n, int N, int nk0, int D, int C,
                                               float sl2, int smem_max, cudaStream_t s) {
#if !defined(VAE_GPU_AMD)
    if (vae_gpu_attn_tiles<64, 64, NW>::smem(D) <= (size_t) smem_max) {
        return vae_gpu_attention_tc_run<T, 64, 64, NW>(qkv, kv, y, n, N, nk0, D, C, sl2, s);
    }
    if (vae_gpu_attn_tiles<64, 32, NW>::smem(D) <= (size_t) smem_max) {
        return vae_gpu_attention_tc_run<T, 64, 32, NW>(qkv, kv, y, n, N, nk0, D, C, sl2, s);
    }
#endif
    if (vae_gpu_attn_tiles<32, 32, NW>::smem(D) <= (size_t) smem_max) {
        return vae_gpu_attention_tc_run<T, 32, 32, NW>(qkv, kv, y, n, N, nk0, D, C, sl2, s);
    }
    if (vae_gpu_attn_tiles<32, 16, NW>::smem(D) <= (size_t) smem_max) {
        return vae_gpu_attention_tc_run<T, 32, 16, NW>(qkv, kv, y, n, N, nk0, D, C, sl2, s);
    }
    return vae_gpu_attention_tc_run<T, 16, 16, NW>(qkv, kv, y, n, N, nk0, D, C, sl2, s);
}

// in warps of the device's width: 8 of 32 lanes, or on CDNA 4 waves of 64
template <typename T>
static cudaError_t vae_gpu_attention_tc_warps(const T * qkv, const T * kv, T * y, int n, int N, int nk0, int D, int C,
                                              float sl2, int smem_max, int warp, cudaStream_t s) {
#if defined(VAE_GPU_AMD)
    if (warp == 64) {
        return vae_gpu_attention_tc_launch<T, 4>(qkv, kv, y, n, N, nk0, D, C, sl2, smem_max, s);
    }
#endif
    (void) warp;
    return vae_gpu_attention_tc_launch<T, 8>(qkv, kv, y, n, N, nk0, D, C, sl2, smem_max, s);
}

// ---- SIMT kernel (any head dim, f32 arithmetic) -----------------------------------------------

// the SIMT kernel works in 8 groups of 32 lanes (a warp, or half an AMD wave64; its reductions
// stay within a group)
#define VAE_GPU_ATTN_GL 32  // lanes per group
#define VAE_GPU_ATTN_SQ 32  // queries per block, 4 per group
#define VAE_GPU_ATTN_SK 32  // keys per step, one per lane in S
#define VAE_GPU_ATTN_SC 32  // channels of q and k per shared chunk
#define VAE_GPU_ATTN_SV 128 // output channels per shared v chunk, 4 per lane
#define VAE_GPU_ATTN_SG 4   // v chunks per pass: grid.z splits a head's output channels in passes of SG * SV

// grid (ceil(N / SQ), frames, heads * passes); heads of D channels, C in all; a head writes its D
// channels of y, the last one the padding lanes [C, cp) too, in `passes` passes; group w owns
// queries 4w .. 4w + 3 of the block; kv and nk0 as for the tensor-core kernel
template <typename T>
static __global__ void __launch_bounds__(VAE_GPU_ATTN_THREADS, 2)
    vae_gpu_attention_simt(const T * __restrict__ qkv, const T * __restrict__ kv, T * __restrict__ y, int N, int nk0,
                           int D, int C, int cp3, int cp, int passes, float sl2) {
    constexpr int SQ = VAE_GPU_ATTN_SQ, SK = VAE_GPU_ATTN_SK, SC = VAE_GPU_ATTN_SC, SV = VAE_GPU_ATTN_SV,
                  SG = VAE_GPU_ATTN_SG;
    constexpr int GL = VAE_GPU_ATTN_GL;
    static_assert(SQ * GL == 4 * VAE_GPU_ATTN_THREADS && SK == GL && SV == 4 * GL, "SIMT thread layout");

    __shared__ __align__(16) float qs[SQ][SC + 4];
    __shared__ __align__(16) float ks[SK][SC + 4];
    __shared__ __align__(16) float ps[SK][SQ + 4]; // P transposed: [key][query]
    __shared__ __align__(16) float vs[SK][SV];

    const int w = threadIdx.x / GL, lane = threadIdx.x % GL;
    const int head = blockIdx.z / passes, ho = head * D; // ho: the head's channels in each third
    const int q0 = blockIdx.x * SQ, c0 = blockIdx.z % passes * SG * SV;
    const int ce = (int) gridDim.z / passes == head + 1 ? cp - ho : D; // the channels it writes from ho on
    const T * src = qkv + (size_t) blockIdx.y * N * cp3 + ho;
    const T * kvs = kv ? kv + ho : src;
    const int NK  = kv ? nk0 + ((int) blockIdx.y + 1) * N : N;

    float o[SG][4][4] = {}; // [v chunk][query 4w + i][channel c0 + chunk * SV + 4 * lane + u]
    float m[4], l[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }

    for (int kb = 0; kb < NK; kb += SK) {
        // s[i] = q(4w + i) . k(kb + lane), over chunks of SC channels
        float s[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
        for (int cc = 0; cc < D; cc += SC) {
            __syncthreads();
            const int ch = threadIdx.x % SC, c = cc + ch;
            for (int r = threadIdx.x / SC; r < SQ; r += VAE_GPU_ATTN_THREADS / SC) {
                qs[r][ch] = q0 + r < N && c < D ? vae_gpu_to_f32(src[(size_t) (q0 + r) * cp3 + c]) : 0.0f;
                ks[r][ch] = kb + r < NK && c < D ? vae_gpu_to_f32(kvs[(size_t) (kb + r) * cp3 + C + c]) : 0.0f;
            }
            __syncthreads();
#pragma unroll 1
            for (int ch = 0; ch < SC; ch += 4) {
                const float4 kv = *(const float4 *) &ks[lane][ch];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float4 qv = *(const float4 *) &qs[4 * w + i][ch];
                    s[i]            = fmaf(qv.x, kv.x, s[i]);
                    s[i]            = fmaf(qv.y, kv.y, s[i]);
                    s[i]            = fmaf(qv.z, kv.z, s[i]);
                    s[i]            = fmaf(qv.w, kv.w, s[i]);
                }
            }
        }

        // online softmax of the group's 4 rows (lane = key); P goes to the group's own columns of ps
        const bool key = kb + lane < NK;
        float      pv[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float x = key ? s[i] * sl2 : -INFINITY;
            float       alpha;
            const float ref = vae_gpu_attn_step(&m[i], vae_gpu_attn_max<GL>(x), &alpha);
            const float p   = key ? exp2f(x - ref) : 0.0f;
            l[i]            = l[i] * alpha + vae_gpu_attn_sum<GL>(p);
            pv[i]           = p;
#pragma unroll
            for (int g = 0; g < SG; g++) {
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    o[g][i][u] *= alpha;
                }
            }
        }
        *(float4 *) &ps[lane][4 * w] = make_float4(pv[0], pv[1], pv[2], pv[3]);

        // o += P V, one chunk of SV channels at a time
#pragma unroll
        for (int g = 0; g < SG; g++) {
            const int cg = c0 + g * SV;
            if (cg < ce) {
                __syncthreads();
                const int ch = threadIdx.x % SV, c = cg + ch;
                for (int j = threadIdx.x / SV; j < SK; j += VAE_GPU_ATTN_THREADS / SV) {
                    vs[j][ch] = kb + j < NK && c < D ? vae_gpu_to_f32(kvs[(size_t) (kb + j) * cp3 + 2 * C + c]) : 0.0f;
                }
                __syncthreads();
#pragma unroll 4
                for (int j = 0; j < SK; j++) {
                    const float4 pj   = *(const float4 *) &ps[j][4 * w];
                    const float4 vj   = *(const float4 *) &vs[j][4 * lane];
                    const float  p[4] = { pj.x, pj.y, pj.z, pj.w };
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        o[g][i][0] = fmaf(p[i], vj.x, o[g][i][0]);
                        o[g][i][1] = fmaf(p[i], vj.y, o[g][i][1]);
                        o[g][i][2] = fmaf(p[i], vj.z, o[g][i][2]);
                        o[g][i][3] = fmaf(p[i], vj.w, o[g][i][3]);
                    }
                }
            }
        }
    }

    // y = o / l; the padding lanes [C, cp) get 0
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int q = q0 + 4 * w + i;
        if (q >= N) {
            continue;
        }
        T * dst = y + ((size_t) blockIdx.y * N + q) * cp + ho;
#pragma unroll
        for (int g = 0; g < SG; g++) {
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int c = c0 + g * SV + 4 * lane + u;
                if (c < D) {
                    dst[c] = vae_gpu_from_f32<T>(o[g][i][u] / l[i]);
                } else if (c < ce) {
                    dst[c] = vae_gpu_from_f32<T>(0.0f);
                }
            }
        }
    }
}

template <typename T>
static cudaError_t vae_gpu_attention_simt_launch(const T * qkv, const T * kv, T * y, int n, int N, int nk0, int D, int C,
                                                 int cp3, int cp, float sl2, cudaStream_t s) {
    const int  pass = VAE_GPU_ATTN_SG * VAE_GPU_ATTN_SV, heads = C / D;
    const int  passes = (cp - (heads - 1) * D + pass - 1) / pass; // (the last head's channels and the padding)
    const dim3 grid((unsigned) ((N + VAE_GPU_ATTN_SQ - 1) / VAE_GPU_ATTN_SQ), (unsigned) n, (unsigned) (heads * passes));
    vae_gpu_attention_simt<T><<<grid, VAE_GPU_ATTN_THREADS, 0, s>>>(qkv, kv, y, N, nk0, D, C, cp3, cp, passes, sl2);
    return cudaGetLastError();
}

// ---- launcher and entry ------------------------------------------------------------------------

// in heads of D channels
static cudaError_t vae_gpu_attention_launch(struct vae_gpu_act qkv, const void * kv, int nk0, struct vae_gpu_act y, int D,
                                            enum vae_precision p, cudaStream_t s) {
    int         dev, cc_major, smem_max, warp;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess) {
        err = cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev);
    }
    if (err == cudaSuccess) {
        err = cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, dev);
    }
    if (err == cudaSuccess) {
        err = cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    }
    if (err != cudaSuccess) {
        return err;
    }
    const int   n = y.n, N = y.h * y.w, C = y.c;
    const float sl2 = (float) (VAE_GPU_ATTN_LOG2E / sqrt((double) D));

    // tensor cores: fp16 from sm_70, bf16 from sm_80, when the smallest tile set fits
    const bool tc = D % 16 == 0 && D <= VAE_GPU_ATTN_TC_DMAX &&
                    ((p == VAE_PRECISION_FP16 && cc_major >= 7) || (p == VAE_PRECISION_BF16 && cc_major >= 8)) &&
                    vae_gpu_attn_tiles<16, 16, 8>::smem(D) <= (size_t) smem_max;
    if (tc && p == VAE_PRECISION_FP16) {
        return vae_gpu_attention_tc_warps((const __half *) qkv.data, (const __half *) kv, (__half *) y.data, n, N, nk0, D,
                                          C, sl2, smem_max, warp, s);
    }
    if (tc) {
        return vae_gpu_attention_tc_warps((const __nv_bfloat16 *) qkv.data, (const __nv_bfloat16 *) kv,
                                          (__nv_bfloat16 *) y.data, n, N, nk0, D, C, sl2, smem_max, warp, s);
    }
    VAE_GPU_DISPATCH(p, return vae_gpu_attention_simt_launch((const T *) qkv.data, (const T *) kv, (T *) y.data, n, N,
                                                             nk0, D, C, qkv.cp, y.cp, sl2, s));
}

extern "C" size_t vae_gpu_attention_scratch(struct vae_gpu_act qkv, enum vae_precision p) {
    (void) qkv;
    (void) p;
    return 0;
}

// the shapes and buffers an attention takes (the tensor-core kernel moves 16-byte vectors; y must
// not be qkv: every block reads all of a frame)
static bool vae_gpu_attention_ok(struct vae_gpu_act qkv, struct vae_gpu_act y, enum vae_precision p) {
    if (!qkv.data || !y.data || (uintptr_t) qkv.data % 16 || (uintptr_t) y.data % 16 ||
        p <= VAE_PRECISION_AUTO || p >= VAE_PRECISION_COUNT || !vae_gpu_shape_ok(qkv) || !vae_gpu_shape_ok(y) ||
        vae_gpu_act_overlap(qkv, y, p)) {
        return false;
    }
    if (qkv.n < 1 || qkv.n > 65535 || qkv.h < 1 || qkv.w < 1 || (long long) qkv.h * qkv.w > (1 << 30) ||
        qkv.c < 3 || qkv.c % 3 != 0 || qkv.cp != vae_gpu_cpad(qkv.c)) {
        return false;
    }
    return y.n == qkv.n && y.h == qkv.h && y.w == qkv.w && y.c == qkv.c / 3 && y.cp == vae_gpu_cpad(y.c);
}

extern "C" cudaError_t vae_gpu_attention(struct vae_gpu_act qkv, struct vae_gpu_act y, int hd, void * scratch,
                                         enum vae_precision p, cudaStream_t s) {
    (void) scratch;
    const int D = hd ? hd : y.c;
    return vae_gpu_attention_ok(qkv, y, p) && D > 0 && y.c % D == 0 && y.c / D <= 65535
               ? vae_gpu_attention_launch(qkv, nullptr, 0, y, D, p, s)
               : cudaErrorInvalidValue;
}

extern "C" cudaError_t vae_gpu_causal_attention(struct vae_gpu_act qkv, struct vae_gpu_act y, void * cache, int held,
                                                enum vae_precision p, cudaStream_t s) {
    const size_t frame = (size_t) qkv.h * qkv.w * qkv.cp * vae_gpu_elem_bytes(p);
    if (!vae_gpu_attention_ok(qkv, y, p) || !cache || (uintptr_t) cache % 16 || held < 0 ||
        (long long) (held + qkv.n) * qkv.h * qkv.w > INT_MAX) {
        return cudaErrorInvalidValue;
    }
    // the cache takes this compute's rows after the frames it holds, then every query reads it
    const cudaError_t e = cudaMemcpyAsync((char *) cache + (size_t) held * frame, qkv.data, (size_t) qkv.n * frame,
                                          cudaMemcpyDeviceToDevice, s);
    return e == cudaSuccess ? vae_gpu_attention_launch(qkv, cache, held * qkv.h * qkv.w, y, y.c, p, s) : e;
}
