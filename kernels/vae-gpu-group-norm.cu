// GroupNorm in two steps, statistics then apply, so that statistics computed elsewhere (those of a
// whole frame, given to its tiles) can be applied instead. A group of a frame can be millions of
// elements with only 32 groups in all (1024x1024 x 128 channels), so the statistics pass cuts every
// frame into blocks of about VAE_GPU_GN_CHUNK elements (all the groups of a range of pixels) that
// each write one partial (count, mean, M2) per group; a second small kernel combines each group's
// partials in double. Every sum is in a fixed order: the result does not depend on scheduling.
// Each thread sums the differences from its first value (shifted sums) and the partials are
// combined with the exact formula M2 = sum(M2_j + n_j (mean_j - mean)^2), so a large mean costs no
// precision. The apply pass gives each thread fixed channels, so their scale and shift are loaded
// once (again at a frame boundary), not per element.

#include "vae-gpu-gn-partials.cuh"

#include <cmath>

#define VAE_GPU_GN_THREADS 256
#define VAE_GPU_GN_TILE    1024   // most channels one statistics block covers
#define VAE_GPU_GN_CHUNK   16384  // about the elements one statistics block reads
#define VAE_GPU_GN_ROWS    16     // about the pixels each apply thread normalizes

// the statistics blocks of a frame: tiles of tile_ch channels times chunks of chunk_px pixels; the
// partials are three arrays (counts, means, M2) of [n][groups][nb], nb = chunks * tiles, in scratch
struct vae_gpu_gn_plan {
    int    tile_ch, tiles, chunk_px;
    size_t chunks, nb;
};

static struct vae_gpu_gn_plan vae_gpu_gn_plan_of(struct vae_gpu_act x) {
    struct vae_gpu_gn_plan pl;
    pl.tile_ch  = x.cp < VAE_GPU_GN_TILE ? x.cp : VAE_GPU_GN_TILE;
    pl.tiles    = (x.cp + pl.tile_ch - 1) / pl.tile_ch;
    pl.chunk_px = (VAE_GPU_GN_CHUNK + pl.tile_ch - 1) / pl.tile_ch;
    pl.chunks   = ((size_t) x.h * x.w + pl.chunk_px - 1) / pl.chunk_px;
    pl.nb       = pl.chunks * pl.tiles;
    return pl;
}

static bool vae_gpu_gn_groups_ok(struct vae_gpu_act x, int groups) {
    return groups > 0 && x.c % groups == 0;
}

// the sum over the block, the same in every thread
static __device__ double vae_gpu_gn_block_sum(double v) {
    __shared__ double sm[VAE_GPU_GN_THREADS / VAE_GPU_WARP];
#pragma unroll
    for (int o = VAE_GPU_WARP / 2; o > 0; o >>= 1) {
        v += vae_gpu_shfl_xor(v, o, VAE_GPU_WARP);
    }
    __syncthreads();  // the previous call's readers are done with sm
    if (threadIdx.x % VAE_GPU_WARP == 0) {
        sm[threadIdx.x / VAE_GPU_WARP] = v;
    }
    __syncthreads();
    double s = 0.0;
#pragma unroll
    for (int w = 0; w < VAE_GPU_GN_THREADS / VAE_GPU_WARP; w++) {
        s += sm[w];
    }
    return s;
}

// the pixels of a statistics block: vectors of its tile's channels, pixel r of the block at at(r)
template <typename T> struct vae_gpu_gn_rows {
    const vae_gpu_vec<T> * x0;   // the block's first pixel, at its tile's first channel
    size_t                 G;    // vectors per pixel
    __device__ const vae_gpu_vec<T> * operator()(size_t r) const { return x0 + r * G; }
};

// one partial (count, mean, M2) per group for each block b = (frame, chunk, tile); nblocks = n * nb
template <typename T>
static __global__ void __launch_bounds__(VAE_GPU_GN_THREADS)
    vae_gpu_group_norm_partial_kernel(const T * x, size_t nblocks, size_t hw, int c, int cp, int groups, int cpg,
                                      struct vae_gpu_gn_plan pl, float * part) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int SMF = VAE_GPU_GN_TILE_SMEM(T, VAE_GPU_GN_THREADS);
    __shared__ float sm[SMF];
    const int    G     = cp / VEC;
    const int    TS    = pl.tile_ch / VEC;  // vectors of a pixel per whole tile
    const size_t total = nblocks * groups;  // partials of each kind
    for (size_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
        const size_t i     = b / pl.nb;
        const size_t slot  = b - i * pl.nb;  // chunk * tiles + tile
        const size_t chunk = slot / pl.tiles;
        const int    tile  = (int) (slot - chunk * pl.tiles);
        const size_t p0    = chunk * pl.chunk_px;
        vae_gpu_gn_rows<T> rows;
        rows.x0 = reinterpret_cast<const vae_gpu_vec<T> *>(x) + (i * hw + p0) * G + tile * TS;
        rows.G  = (size_t) G;
        vae_gpu_gn_tile_partials<T, VAE_GPU_GN_THREADS>(rows, min(hw, p0 + pl.chunk_px) - p0, min(G - tile * TS, TS),
                                                        tile * pl.tile_ch, c, groups, cpg, sm, part,
                                                        i * groups * pl.nb + slot, pl.nb, total);
    }
}

// stats[i * 2 * groups + g] = mean, [... + groups + g] = 1 / sqrt(var + eps) from the nb partials of
// each (frame, group) q = i * groups + g
static __global__ void __launch_bounds__(VAE_GPU_GN_THREADS)
    vae_gpu_group_norm_combine_kernel(const float * part, size_t nq, size_t nb, int groups, float eps,
                                      float * stats) {
    const size_t total = nq * nb;
    for (size_t q = blockIdx.x; q < nq; q += gridDim.x) {
        const float * cnt  = part + q * nb;
        const float * mean = part + total + q * nb;
        const float * m2   = part + 2 * total + q * nb;
        double        n = 0.0, nm = 0.0;
        for (size_t j = threadIdx.x; j < nb; j += VAE_GPU_GN_THREADS) {
            if (cnt[j] > 0.0f) {
                n += cnt[j];
                nm += (double) cnt[j] * mean[j];
            }
        }
        n               = vae_gpu_gn_block_sum(n);
        nm              = vae_gpu_gn_block_sum(nm);
        const double mu = nm / n;
        double       m2s = 0.0;
        for (size_t j = threadIdx.x; j < nb; j += VAE_GPU_GN_THREADS) {
            if (cnt[j] > 0.0f) {
                const double d = mean[j] - mu;
                m2s += m2[j] + cnt[j] * d * d;
            }
        }
        m2s = vae_gpu_gn_block_sum(m2s);
        if (threadIdx.x == 0) {
            const double var = m2s < 0.0 ? 0.0 : m2s / n;  // rounding can leave M2 a hair below 0; NaN stays
            const size_t i   = q / groups;
            stats[q + i * groups]          = (float) mu;
            stats[q + i * groups + groups] = (float) (1.0 / sqrt(var + eps));
        }
    }
}

template <typename T>
static cudaError_t vae_gpu_group_norm_stats_launch(struct vae_gpu_act x, int groups, float eps, float * stats,
                                                   float * part, cudaStream_t s) {
    const struct vae_gpu_gn_plan pl      = vae_gpu_gn_plan_of(x);
    const size_t                 nblocks = (size_t) x.n * pl.nb;
    const size_t                 nq      = (size_t) x.n * groups;
    vae_gpu_group_norm_partial_kernel<T><<<vae_gpu_blocks(nblocks * VAE_GPU_GN_THREADS), VAE_GPU_GN_THREADS, 0, s>>>(
        (const T *) x.data, nblocks, (size_t) x.h * x.w, x.c, x.cp, groups, x.c / groups, pl, part);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        return err;
    }
    return vae_gpu_group_norm_combine(part, nq, pl.nb, groups, eps, stats, s);
}

extern "C" cudaError_t vae_gpu_group_norm_combine(const float * part, size_t nq, size_t nb, int groups, float eps,
                                                  float * stats, cudaStream_t s) {
    vae_gpu_group_norm_combine_kernel<<<vae_gpu_blocks(nq * VAE_GPU_GN_THREADS), VAE_GPU_GN_THREADS, 0, s>>>(
        part, nq, nb, groups, eps, stats);
    return cudaGetLastError();
}

// (x.data is not looked at: the backend asks at planning, before any buffer exists)
extern "C" size_t vae_gpu_group_norm_scratch(struct vae_gpu_act x, int groups) {
    if (!vae_gpu_shape_ok(x) || !vae_gpu_gn_groups_ok(x, groups)) {
        return 0;
    }
    return 3 * (size_t) x.n * groups * vae_gpu_gn_plan_of(x).nb * sizeof(float);
}

extern "C" cudaError_t vae_gpu_group_norm_stats(struct vae_gpu_act x, int groups, float eps, float * stats,
                                                void * scratch, enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_gn_groups_ok(x, groups) || !vae_gpu_precision_ok(p) || !stats ||
        !scratch || !(eps >= 0.0f) || !std::isfinite(eps)) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_group_norm_stats_launch<T>(x, groups, eps, stats, (float *) scratch, s));
    return err;
}

// y = act((x - mean) * (rstd * gamma) + beta); thread (row r, slot) of block (bx, by) normalizes the
// vector slot = by * S + (threadIdx.x % S) of pixels bx * R + r, then every gridDim.x * R pixels
template <typename T>
static __global__ void vae_gpu_group_norm_apply_kernel(const T * x, T * y, size_t npx, size_t hw, int c, int cp,
                                                       int groups, int cpg, const float * stats, bool per_frame,
                                                       const float * gamma, const float * beta, enum vae_act act) {
    constexpr int VEC = 16 / sizeof(T);
    const int     G   = cp / VEC;
    const int     S   = min(G, (int) blockDim.x);
    const int     R   = blockDim.x / S;
    const int     r   = threadIdx.x / S;
    const int     g   = blockIdx.y * S + threadIdx.x % S;
    if (r >= R || g >= G) {
        return;
    }
    const vae_gpu_vec<T> * xv = reinterpret_cast<const vae_gpu_vec<T> *>(x);
    vae_gpu_vec<T> *       yv = reinterpret_cast<vae_gpu_vec<T> *>(y);
    float                  m[VEC], a[VEC], b[VEC];
    size_t                 end = 0;  // the pixels before it have the statistics in m, a
    for (size_t p = (size_t) blockIdx.x * R + r; p < npx; p += (size_t) gridDim.x * R) {
        if (p >= end) {  // the first pixel, or one of a later frame
            const size_t  f  = per_frame ? p / hw : 0;
            const float * st = stats + f * 2 * groups;
            end              = per_frame ? (f + 1) * hw : npx;
#pragma unroll
            for (int l = 0; l < VEC; l++) {
                const int ch = g * VEC + l, gr = ch / cpg;
                m[l]         = ch < c ? st[gr] : 0.0f;
                a[l]         = ch < c ? st[groups + gr] * gamma[ch] : 0.0f;
                b[l]         = ch < c ? beta[ch] : 0.0f;
            }
        }
        vae_gpu_vec<T> v = xv[p * G + g];
#pragma unroll
        for (int l = 0; l < VEC; l++) {
            const float o = vae_gpu_act((vae_gpu_to_f32(v.v[l]) - m[l]) * a[l] + b[l], act);
            v.v[l]        = vae_gpu_from_f32<T>(g * VEC + l < c ? o : 0.0f);
        }
        yv[p * G + g] = v;
    }
}

template <typename T>
static cudaError_t vae_gpu_group_norm_apply_launch(struct vae_gpu_act x, struct vae_gpu_act y, int groups,
                                                   const float * stats, bool per_frame, const float * gamma,
                                                   const float * beta, enum vae_act act, cudaStream_t s) {
    const int    G   = x.cp / (16 / sizeof(T));
    const int    S   = G < VAE_GPU_GN_THREADS ? G : VAE_GPU_GN_THREADS;
    const int    R   = VAE_GPU_GN_THREADS / S;
    const size_t hw  = (size_t) x.h * x.w;
    const size_t npx = (size_t) x.n * hw;
    // about VAE_GPU_GN_ROWS pixels per thread: each loads its scale and shift once for all of them
    const size_t bx = (npx + (size_t) R * VAE_GPU_GN_ROWS - 1) / ((size_t) R * VAE_GPU_GN_ROWS);
    const dim3   grid(vae_gpu_blocks(bx * VAE_GPU_GN_THREADS), (G + S - 1) / S);
    vae_gpu_group_norm_apply_kernel<T><<<grid, VAE_GPU_GN_THREADS, 0, s>>>(
        (const T *) x.data, (T *) y.data, npx, hw, x.c, x.cp, groups, x.c / groups, stats, per_frame, gamma, beta,
        act);
    return cudaGetLastError();
}

extern "C" cudaError_t vae_gpu_group_norm_apply(struct vae_gpu_act x, struct vae_gpu_act y, int groups,
                                                const float * stats, bool stats_per_frame, const float * gamma,
                                                const float * beta, enum vae_act act, enum vae_precision p,
                                                cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_act_ok(y) || !vae_gpu_gn_groups_ok(x, groups) || !vae_gpu_precision_ok(p) ||
        y.n != x.n || y.c != x.c || y.h != x.h || y.w != x.w || !vae_gpu_in_place_ok(x.data, y, p) || !stats ||
        !gamma || !beta) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_group_norm_apply_launch<T>(x, y, groups, stats, stats_per_frame, gamma, beta,
                                                                 act, s));
    return err;
}
