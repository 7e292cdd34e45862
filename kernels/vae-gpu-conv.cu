// Convolutions, where the decoders spend almost all their time, as implicit GEMMs: M = output
// pixels, N = output channels, K = taps x input channels. The im2col matrix is never stored: each
// K-slice of it is gathered from the NHWC activations straight into shared memory. K runs (time
// tap, ky, kx, channel), so a slice is whole 16-byte vectors of single input pixels, and pixels
// outside the frame come in as zeros. Tiles pass through a ring of shared-memory stages filled by
// cp.async (plain loads before sm_80 and on AMD) and are multiplied on tensor cores (ldmatrix +
// mma.sync: tf32, f16, bf16), on AMD's matrix cores (WMMA, MFMA: f16, bf16) or, at fp32, by a
// register-tiled f32 FMA loop; the epilogue adds bias and
// residual, applies the activation and writes 16-byte vectors. The nearest-2x upsample followed
// by a 3x3 conv is four 2x2 convolutions on the input grid, one per output phase, with the weights
// folded when packed; a causal conv3d reads its earlier frames in place from the state. Every
// precision has several tile shapes: the backend times each on the real layer, keeps the fastest.

#include "vae-gpu-gn-partials.cuh"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// tf32 and bf16 tensor cores, m16n8k16 f16 and cp.async exist from sm_80 on
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define VAE_GPU_CONV_SM80 0
#else
#define VAE_GPU_CONV_SM80 1
#endif

// ---- geometry, shared by the kernels and the packing -----------------------------------------------

struct vae_gpu_conv_params {
    const void *  x;
    const void *  hist;
    const void *  wt;
    const float * bias;
    const void *  res;
    void *        y;
    int           h, w;           // the input grid
    int           cin_p, cout_p, cout;
    int           ks, kt;         // the GEMM's taps: ks x ks in space (2 when up), kt in time
    int           pad;            // k / 2
    bool          up;
    int           edge;           // outside the frame: 0 zeros, 1 the nearest edge pixel, 2 the mirror one (pad 1)
    int           M, K;           // GEMM rows (pixels of the input grid, per phase when up) and depth
    int           nt;             // tiles along N
    enum vae_act  act;
    // a per-pixel RMS norm of the output in the epilogue (nform 0 or 1: VAE_OP_RMS_NORM's forms; -1
    // none), the tile holding every channel (nt = 1): nact(v s ngamma + nbeta) with v = act(acc +
    // bias + res) and s from the sum of v^2 over the pixel's channels, over y, or to ny (v kept in y)
    void *        ny;             // NULL: over y
    const float * ngamma;         // [cout] or NULL (ones)
    const float * nbeta;          // [cout] or NULL
    int           nform;
    float         neps;
    enum vae_act  nact;
    // the partial statistics of a GroupNorm of y (gngroups groups, vae_gpu_group_norm_combine's
    // partials) from every tile's epilogue, over the values it stored; frames of gnrows GEMM rows
    // (of a phase), every tile's rows in one frame, gnslots partials per (frame, group); NULL none
    float *       gnpart;
    int           gngroups, gnrows, gnslots;
};

// a position along K: time tap j, spatial tap (ky, kx), input channel c
struct vae_gpu_conv_tap {
    int j, ky, kx, c;
};

// a GEMM row: frame t and pixel (oy, ox) of the input grid; rows past M get oy far outside the
// frame, so that every tap reads them as zeros
struct vae_gpu_conv_pix {
    int t, oy, ox;
};

// the row of the packed weights (of one phase) that K index (j, ky, kx, c) multiplies
__host__ __device__ __forceinline__ size_t vae_gpu_conv_krow(int j, int ky, int kx, int c, int ks, int cin_p) {
    return ((size_t) (j * ks + ky) * ks + kx) * cin_p + c;
}

__host__ __device__ __forceinline__ vae_gpu_conv_tap vae_gpu_conv_tap_at(int k, int ks, int cin_p) {
    const int        tap = k / cin_p;
    vae_gpu_conv_tap r;
    r.j  = tap / (ks * ks);
    r.ky = tap / ks % ks;
    r.kx = tap % ks;
    r.c  = k - tap * cin_p;
    return r;
}

// t = vae_gpu_conv_tap_at(k + step) given t = vae_gpu_conv_tap_at(k), without divisions
__host__ __device__ __forceinline__ void vae_gpu_conv_tap_next(vae_gpu_conv_tap & t, int step, int ks, int cin_p) {
    for (t.c += step; t.c >= cin_p; t.c -= cin_p) {
        if (++t.kx == ks) {
            t.kx = 0;
            if (++t.ky == ks) {
                t.ky = 0;
                t.j++;
            }
        }
    }
}

__host__ __device__ __forceinline__ vae_gpu_conv_pix vae_gpu_conv_pix_at(int m, int M, int h, int w) {
    vae_gpu_conv_pix r;
    if (m < M) {
        const int hw = h * w, rem = m - m / hw * hw;
        r.t  = m / hw;
        r.oy = rem / w;
        r.ox = rem - r.oy * w;
    } else {
        r.t  = 0;
        r.oy = -(1 << 30);
        r.ox = 0;
    }
    return r;
}

// the input vector (channels c .. c + 16 bytes) that row px reads at tap tp, or NULL for zeros:
// outside the frame (replicate, reflect: only a row past M, whose pixel is far outside), or past K.
// offy, offx: input offset of tap 0 (k / 2, or 1 - phase when up). Source frame s = t + j of [hist, x]:
// the kt - 1 hist frames first.
template <typename T>
__host__ __device__ __forceinline__ const T * vae_gpu_conv_src(const vae_gpu_conv_params & p, vae_gpu_conv_pix px,
                                                              vae_gpu_conv_tap tp, int offy, int offx) {
    int iy = px.oy + tp.ky - offy, ix = px.ox + tp.kx - offx;
    if (p.edge == 1 && px.oy >= 0) { // (F.pad(mode="replicate"): the edge pixel)
        iy = iy < 0 ? 0 : iy >= p.h ? p.h - 1 : iy;
        ix = ix < 0 ? 0 : ix >= p.w ? p.w - 1 : ix;
    } else if (p.edge == 2 && px.oy >= 0) { // ("reflect", one pixel: the one inside)
        iy = iy < 0 ? 1 : iy >= p.h ? p.h - 2 : iy;
        ix = ix < 0 ? 1 : ix >= p.w ? p.w - 2 : ix;
    }
    if (tp.j >= p.kt || (unsigned) iy >= (unsigned) p.h || (unsigned) ix >= (unsigned) p.w) {
        return nullptr;
    }
    const int  s  = px.t + tp.j - (p.kt - 1);
    const bool in = s >= 0;
    const int  f  = in ? s : s + p.kt - 1;   // pixel numbers of x and of hist fit an int (vae_gpu_conv)
    return (const T *) (in ? p.x : p.hist) + (size_t) ((f * p.h + iy) * p.w + ix) * p.cin_p + tp.c;
}

// the output pixel of GEMM row m: itself, or for `up` pixel (2Y + py, 2X + px) of the 2h x 2w grid
__host__ __device__ __forceinline__ size_t vae_gpu_conv_out_pixel(const vae_gpu_conv_params & p, int m, int phase) {
    if (!p.up) {
        return (size_t) m;
    }
    const int hw = p.h * p.w, t = m / hw, rem = m - t * hw, Y = rem / p.w, X = rem - Y * p.w;
    return ((size_t) t * 2 * p.h + 2 * Y + (phase >> 1)) * (2 * (size_t) p.w) + 2 * X + (phase & 1);
}

// ---- device helpers ----------------------------------------------------------------------------------

template <typename T> __device__ __forceinline__ vae_gpu_vec<T> vae_gpu_conv_ld16(const T * p) {
    const int4          b = *reinterpret_cast<const int4 *>(p);
    vae_gpu_vec<T> v;
    memcpy(&v, &b, 16);
    return v;
}

template <typename T> __device__ __forceinline__ void vae_gpu_conv_st16(T * p, const vae_gpu_vec<T> & v) {
    int4 b;
    memcpy(&b, &v, 16);
    *reinterpret_cast<int4 *>(p) = b;
}

// ---- tile configurations ---------------------------------------------------------------------------

// a BM x BN output tile, K in slices of BK through STAGES shared-memory stages; WGM x WGN warps of
// W lanes (tensor cores: each a WM x WN tile of m16n8 fragments, AMD's of 16x16; fp32: the same
// thread count, 8 x TN each); MINB blocks per SM bound the registers (65536 / (MINB x threads))
template <typename T_, int BM_, int BN_, int BK_, int WGM_, int WGN_, int MINB_, bool TC_, int W_ = 32>
struct vae_gpu_conv_cfg {
    typedef T_ T;
    static constexpr int    BM = BM_, BN = BN_, BK = BK_, WGM = WGM_, WGN = WGN_, MINB = MINB_, STAGES = 3, W = W_;
    static constexpr bool   TC      = TC_;
    static constexpr int    THREADS = WGM * WGN * W;
    static constexpr int    VEC     = 16 / sizeof(T);                  // elements per 16-byte vector
    // shared rows laid out so that the 8 rows an ldmatrix reads at one 16-byte chunk, and the 128
    // bytes a quarter warp's 16-byte writes fill, fall in distinct banks (tests/gpu-emu counts it).
    // A's rows are BK elements, 64 bytes: four chunks, chunk c of row r stored at c ^ (r / 2 % 4) (an
    // XOR swizzle). B's rows are padded by 8 elements (also for the tf32 B reads), except rows of 2
    // or 12 chunks (BN 16 or 96 at 16 bits, BSW), unpadded with chunk c of row k at c ^ (k / 4 % 2) or
    // c ^ (k / 2 % 4): the 8 rows of an ldmatrix.trans then cover the 8 bank groups, and 8 chunks that
    // run across two rows of 12 fall in distinct halves of the banks
    // On AMD B's rows are unpadded, each 8 rows 32 bytes (BSHIFT) after the 8 before: a lane of the
    // tensor tiles reads B one element at a time, rows k and k + 8 in one phase
    // (tests/gpu-emu/README.md, "AMD's LDS"), and the loaders' 16-byte writes, whose phases take
    // lanes 0-3 with 20-23 (in the padded rows: banks that overlap), fall in distinct banks. (A
    // shift, not an XOR: a lane's B addresses from a row that is a multiple of 8 on then differ by
    // constants.)
    static constexpr int    BCH = BN * (int) sizeof(T) / 16;   // chunks per B row
#if defined(VAE_GPU_AMD)
    static constexpr bool   BAMD = true;
#else
    static constexpr bool   BAMD = false;
#endif
    static constexpr bool   BSW = !BAMD && (BCH == 2 || BCH == 12);
    static constexpr int    LDA = BK, LDB = BSW || BAMD ? BN : BN + 8, BSHIFT = BAMD ? 32 / (int) sizeof(T) : 0;
    static_assert(BK / VEC == 4, "A rows of four 16-byte chunks");
    static constexpr int    A_BYTES = BM * LDA * sizeof(T);                              // per stage
    static constexpr int    B_BYTES = (BK * LDB + (BK / 8 - 1) * BSHIFT) * sizeof(T);    // per stage
    static constexpr int    B_BASE  = STAGES * A_BYTES;   // shared memory: A [STAGES][BM][LDA], B [STAGES][BK][LDB]
    static constexpr int    WM = BM / WGM, WN = BN / WGN, LDC = WN + 8; // warp tile; its f32 staging rows
    static constexpr size_t PIPE    = (size_t) STAGES * (A_BYTES + B_BYTES);
    static constexpr size_t STAGING = TC ? (size_t) WGM * WGN * 16 * LDC * sizeof(float) : 0;
    static constexpr size_t SMEM    = PIPE > STAGING ? PIPE : STAGING;
    static_assert((BM + 2 * BN) * sizeof(float) <= SMEM, "an RMS norm's scales, gamma, beta (vae_gpu_conv_norm)");
    static_assert(VAE_GPU_GN_TILE_SMEM(T, THREADS) * sizeof(float) <= SMEM, "a GroupNorm's partials (vae_gpu_conv_gn)");
    static constexpr bool   SM80    = TC && !std::is_same<T, __half>::value;   // tf32, bf16

    // the element of a stage's A tile that holds row r, column k; of its B tile, row k, column n
    static __device__ __forceinline__ int a_at(int r, int k) { return r * LDA + ((k / VEC) ^ (r >> 1 & 3)) * VEC + k % VEC; }
    static __device__ __forceinline__ int b_at(int k, int n) {
        return k * LDB + (k >> 3) * BSHIFT + (BSW ? ((n / VEC) ^ (BCH == 2 ? k >> 2 & 1 : k >> 1 & 3)) * VEC + n % VEC : n);
    }
};

// ---- kernels ---------------------------------------------------------------------------------------

extern __shared__ __align__(128) unsigned char vae_gpu_conv_smem[];

// y = act(acc + bias + residual) for the 16-byte vector at GEMM row m, channels n .. n + VEC; the
// residual is read and y written by this thread alone, so the residual may be y
template <typename T>
__device__ __forceinline__ void vae_gpu_conv_out(const vae_gpu_conv_params & p, int phase, int m, int n,
                                                 const float * acc) {
    constexpr int N = 16 / sizeof(T);
    const size_t  o = vae_gpu_conv_out_pixel(p, m, phase) * p.cout_p + n;
    float         v[N];
#pragma unroll
    for (int e = 0; e < N; e++) {
        v[e] = acc[e];
    }
    if (p.bias) {
#pragma unroll
        for (int e = 0; e < N; e += 4) {
            const float4 b = __ldg(reinterpret_cast<const float4 *>(p.bias + n + e));
            v[e] += b.x;
            v[e + 1] += b.y;
            v[e + 2] += b.z;
            v[e + 3] += b.w;
        }
    }
    if (p.res) {
        const vae_gpu_vec<T> r = vae_gpu_conv_ld16((const T *) p.res + o);
#pragma unroll
        for (int e = 0; e < N; e++) {
            v[e] += vae_gpu_to_f32(r.v[e]);
        }
    }
    vae_gpu_vec<T> out;
#pragma unroll
    for (int e = 0; e < N; e++) {
        out.v[e] = vae_gpu_from_f32<T>(vae_gpu_act(v[e], p.act));
    }
    vae_gpu_conv_st16((T *) p.y + o, out);
}

// the RMS norm of the tile's rows m0 .., over them or to p.ny: every channel of their pixels, which
// this block has just written (seen by all its threads after a barrier). A thread per row sums the
// squares of the stored values in channel order, as the norm's own kernel reads them, and puts the
// row's scale (VAE_OP_RMS_NORM's form 0 or 1) in scale[row], gamma and beta going to shared memory
// too (zeros past cout); then every vector is normalized. sm: BM + 2 cout_p floats of shared memory
template <typename T, int BM, int THREADS>
__device__ __forceinline__ void vae_gpu_conv_norm(const vae_gpu_conv_params & p, int m0, int phase, float * sm) {
    float * scale = sm, *gamma = sm + BM, *beta = gamma + p.cout_p;
    for (int ch = (int) threadIdx.x; ch < p.cout_p; ch += THREADS) {
        gamma[ch] = ch < p.cout ? (p.ngamma ? p.ngamma[ch] : 1.0f) : 0.0f;
        beta[ch]  = ch < p.cout && p.nbeta ? p.nbeta[ch] : 0.0f;
    }
    constexpr int N  = 16 / sizeof(T);
    const int     nv = p.cout_p / N;
    for (int r = (int) threadIdx.x; r < BM; r += THREADS) {
        float ss = 0.0f;
        if (m0 + r < p.M) {
            const T * y = (const T *) p.y + vae_gpu_conv_out_pixel(p, m0 + r, phase) * p.cout_p;
            for (int n = 0; n < p.cout_p; n += N) { // (the padding lanes hold act(0) = 0)
                const vae_gpu_vec<T> v = vae_gpu_conv_ld16(y + n);
#pragma unroll
                for (int i = 0; i < N; i++) {
                    ss = fmaf(vae_gpu_to_f32(v.v[i]), vae_gpu_to_f32(v.v[i]), ss);
                }
            }
        }
        const float norm = sqrtf(ss);   // (a NaN sum stays NaN)
        scale[r]         = p.nform ? 1.0f / sqrtf(ss / (float) p.cout + p.neps)
                                   : sqrtf((float) p.cout) / (norm < 1e-12f ? 1e-12f : norm);
    }
    __syncthreads();
    for (int e = (int) threadIdx.x; e < BM * nv; e += THREADS) {
        const int r = e / nv, n = e % nv * N, m = m0 + r;
        if (m >= p.M) {
            continue;
        }
        const size_t   o = vae_gpu_conv_out_pixel(p, m, phase) * p.cout_p + n;
        vae_gpu_vec<T> v = vae_gpu_conv_ld16((const T *) p.y + o);
#pragma unroll
        for (int i = 0; i < N; i++) { // (the padding lanes: 0 x 0 + 0, act(0) = 0)
            v.v[i] = vae_gpu_from_f32<T>(vae_gpu_act(vae_gpu_to_f32(v.v[i]) * scale[r] * gamma[n + i] + beta[n + i], p.nact));
        }
        vae_gpu_conv_st16((T *) (p.ny ? p.ny : p.y) + o, v);
    }
}

// the pixels of a conv's tile in y: GEMM row m0 + r's output pixel, at the tile's first channel n0
template <typename T> struct vae_gpu_conv_rows {
    const vae_gpu_conv_params * p;
    int                         m0, n0, phase;
    __device__ const vae_gpu_vec<T> * operator()(size_t r) const {
        const size_t o = vae_gpu_conv_out_pixel(*p, m0 + (int) r, phase) * p->cout_p + n0;
        return reinterpret_cast<const vae_gpu_vec<T> *>((const T *) p->y + o);
    }
};

// the GroupNorm partials of tile (mb, nb) of a phase from what the block has just written to y (seen
// by all its threads after a barrier), read back as the norm's own statistics pass reads them: slot
// (mb - f tiles per frame) x phases + phase) x nt + nb of its frame f
template <class C>
__device__ __forceinline__ void vae_gpu_conv_gn(const vae_gpu_conv_params & p, int mb, int nb, int phase) {
    typedef typename C::T T;
    const int    m0 = mb * C::BM, n0 = nb * C::BN;
    const int    f = m0 / p.gnrows, tiles = (p.gnrows + C::BM - 1) / C::BM;
    const size_t total = (size_t) (p.M / p.gnrows) * p.gngroups * p.gnslots;
    const size_t slot  = ((size_t) (mb - f * tiles) * (p.up ? 4 : 1) + phase) * p.nt + nb;
    const vae_gpu_conv_rows<T> rows = { &p, m0, n0, phase };
    vae_gpu_gn_tile_partials<T, C::THREADS>(rows, (size_t) min(C::BM, p.M - m0), min(C::BN, p.cout_p - n0) / C::VEC, n0,
                                            p.cout, p.gngroups, p.cout / p.gngroups,
                                            reinterpret_cast<float *>(vae_gpu_conv_smem),
                                            p.gnpart, (size_t) f * p.gngroups * p.gnslots + slot, p.gnslots, total);
}

// the epilogue of a warp's row of 16 x WN fragments, staged as f32 rows of LDC at st: 16-byte
// vectors out through vae_gpu_conv_out, the warp's lanes taking them in turn; rows m0 .., columns n0 ..
template <class C>
__device__ __forceinline__ void vae_gpu_conv_store_rows(const vae_gpu_conv_params & p, const float * st, int m0, int n0,
                                                        int phase) {
    constexpr int RV = C::WN / C::VEC;   // vectors per staged row
#pragma unroll
    for (int e = (int) threadIdx.x % C::W; e < 16 * RV; e += C::W) {
        const int r = e / RV, col = e % RV * C::VEC;
        const int m = m0 + r, n = n0 + col;
        if (m < p.M && n < p.cout_p) {
            float v[C::VEC];
#pragma unroll
            for (int q = 0; q < C::VEC; q += 4) {
                const float4 f = *reinterpret_cast<const float4 *>(st + r * C::LDC + col + q);
                v[q]           = f.x;
                v[q + 1]       = f.y;
                v[q + 2]       = f.z;
                v[q + 3]       = f.w;
            }
            vae_gpu_conv_out<typename C::T>(p, phase, m, n, v);
        }
    }
}

// fills one stage: the A slice gathered from the input, the B slice from the packed weights
// [K][cout_p] of the block's phase. Each thread copies one 16-byte column of AR rows of A (one
// pixel's channels within one tap), and the B slice's 16-byte vectors in row order, the block's
// threads side by side (BV each), so that the consecutive lanes of a copy instruction take
// consecutive 16-byte pieces of a row: whole 32-byte sectors of memory, and 128 contiguous bytes
// of shared memory per quarter warp (A's two rows; B's row, or two rows' ends: see C::b_at)
template <class C> struct vae_gpu_conv_loader {
    typedef typename C::T T;
    static constexpr int TPR = C::BK / C::VEC, RSTEP = C::THREADS / TPR, AR = C::BM / RSTEP;   // A: threads per row, rows per pass, rows per thread
    static constexpr int TPB = C::BN / C::VEC, BVS = C::BK * TPB;   // B: vectors per row, per slice
    static constexpr int BV = (BVS + C::THREADS - 1) / C::THREADS;     // per thread (the last round partial
                                                                        // where the threads do not divide them)
    // (RSTEP a multiple of 8: a thread's A rows share their swizzle)
    static_assert(RSTEP * AR == C::BM && RSTEP % 8 == 0, "tile shape");

    vae_gpu_conv_pix pix[AR];
    vae_gpu_conv_tap tap;          // this thread's A column in the next slice to load
    const T *        wsrc;         // the block's B columns in the next slice
    unsigned         adst, bdst;   // this thread's A address in stage 0; B's stage 0
    int              kb, offy, offx, n0;

    __device__ __forceinline__ void init(const vae_gpu_conv_params & p, int m0, int n0, int phase) {
        const int      tid  = (int) threadIdx.x;
        const unsigned smem = vae_gpu_smem_addr(vae_gpu_conv_smem);
#pragma unroll
        for (int a = 0; a < AR; a++) {
            pix[a] = vae_gpu_conv_pix_at(m0 + tid / TPR + a * RSTEP, p.M, p.h, p.w);
        }
        tap   = vae_gpu_conv_tap_at(tid % TPR * C::VEC, p.ks, p.cin_p);
        wsrc  = (const T *) p.wt + (size_t) phase * p.K * p.cout_p + n0;
        adst  = smem + C::a_at(tid / TPR, tid % TPR * C::VEC) * sizeof(T);
        bdst  = smem + C::B_BASE;
        this->n0 = n0;
        kb    = 0;
        offy  = p.up ? 1 - (phase >> 1) : p.pad;
        offx  = p.up ? 1 - (phase & 1) : p.pad;
    }

    // the next slice (0, 1, 2, ... in turn) into stage `stage`
    __device__ __forceinline__ void load(const vae_gpu_conv_params & p, int stage) {
        const int      tid = (int) threadIdx.x;
        const unsigned ad  = adst + stage * C::A_BYTES;
#pragma unroll
        for (int a = 0; a < AR; a++) {
            const T * src = vae_gpu_conv_src<T>(p, pix[a], tap, offy, offx);
            vae_gpu_cp16<true>(ad + a * RSTEP * C::LDA * sizeof(T), src ? src : (const T *) p.x, src != nullptr);
        }
        vae_gpu_conv_tap_next(tap, C::BK, p.ks, p.cin_p);
        const unsigned bd = bdst + stage * C::B_BYTES;
#pragma unroll
        for (int v = 0; v < BV; v++) {
            // (where the threads are a multiple of a row's vectors, each thread keeps its column: said
            // so, as i / TPB and i % TPB alone left the 128x64 tile spilling registers on sm_80+)
            const int  i = tid + v * C::THREADS;
            const int  row = C::THREADS % TPB == 0 ? tid / TPB + v * (C::THREADS / TPB) : i / TPB;
            const int  col = (C::THREADS % TPB == 0 ? tid : i) % TPB * C::VEC;
            const bool valid = n0 + col < p.cout_p && kb * C::BK + row < p.K;
            if (BVS % C::THREADS == 0 || i < BVS) {
                vae_gpu_cp16<false>(bd + C::b_at(row, col) * sizeof(T),
                                    valid ? wsrc + (size_t) row * p.cout_p + col : (const T *) p.wt, valid);
            }
        }
        wsrc += (size_t) C::BK * p.cout_p;
        kb++;
    }
};

#if !defined(VAE_GPU_AMD)
// tensor cores: each warp a WM x WN tile, MI x NJ fragments of m16n8
template <class C> struct vae_gpu_conv_tc {
    typedef typename C::T T;
    static constexpr bool TF32 = sizeof(T) == 4;
    static constexpr int  KF = TF32 ? 8 : 16, MI = C::WM / 16, NJ = C::WN / 8;
    static_assert(C::WM % 16 == 0 && C::WN % 16 == 0 && C::BK % KF == 0, "warp tile");
    float    acc[MI][NJ][4];
    int      wm, wn;
    unsigned asrc, bsrc;   // this lane's ldmatrix row addresses in stage 0 (fragments 0, k 0)

    __device__ __forceinline__ void init() {
        const int      warp = (int) threadIdx.x / 32, lane = (int) threadIdx.x % 32;
        const unsigned smem = vae_gpu_smem_addr(vae_gpu_conv_smem);
        wm   = warp / C::WGN;
        wn   = warp % C::WGN;
        // A: matrices (rows 0-7, k lo), (rows 8-15, k lo), (rows 0-7, k hi), (rows 8-15, k hi), a k half
        // being 16 bytes: 8 k of f16/bf16, or 4 of f32 (a tf32 fragment). B (16-bit): matrices (k 0-7,
        // n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15), i.e. two n8 fragments
        asrc = smem + (wm * C::WM + lane % 16) * C::LDA * sizeof(T);   // the row; its chunks swizzled (step)
        bsrc = smem + C::B_BASE;   // (lane's rows and columns: C::b_at in step)
#pragma unroll
        for (int i = 0; i < MI; i++) {
#pragma unroll
            for (int j = 0; j < NJ; j++) {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    acc[i][j][e] = 0.0f;
                }
            }
        }
    }

    __device__ __forceinline__ void step(int stage) {
        const int      lane = (int) threadIdx.x % 32;
        const unsigned as = asrc + stage * C::A_BYTES, bs = bsrc + stage * C::B_BYTES;
#pragma unroll
        for (int kk = 0; kk < C::BK; kk += KF) {
            unsigned b[NJ][2];
            if constexpr (TF32) {
                // b32 elements, no ldmatrix transpose: plain loads, rows of LDB = 8 mod 32 words keep the
                // lanes (k t, n g) in distinct banks
                const float * bp = reinterpret_cast<const float *>(vae_gpu_conv_smem + C::B_BASE + stage * C::B_BYTES) +
                                   (kk + lane % 4) * C::LDB + wn * C::WN + lane / 4;
#pragma unroll
                for (int j = 0; j < NJ; j++) {
                    b[j][0] = vae_gpu_ptx_tf32(__float_as_uint(bp[j * 8]));
                    b[j][1] = vae_gpu_ptx_tf32(__float_as_uint(bp[4 * C::LDB + j * 8]));
                }
            } else {
#pragma unroll
                for (int j = 0; j < NJ; j += 2) {
                    unsigned r[4];
                    vae_gpu_ptx_ldsm_t(r, bs + C::b_at(kk + lane % 16, wn * C::WN + j * 8 + lane / 16 * 8) * sizeof(T));
                    b[j][0]     = r[0];
                    b[j][1]     = r[1];
                    b[j + 1][0] = r[2];
                    b[j + 1][1] = r[3];
                }
            }
#pragma unroll
            for (int i = 0; i < MI; i++) {
                unsigned a[4];
                // C::a_at's chunk, the swizzle of row wm * WM + i * 16 + lane % 16 being lane % 16's
                vae_gpu_ptx_ldsm(a, as + i * 16 * C::LDA * sizeof(T) + ((kk / C::VEC + lane / 16) ^ (lane % 16 >> 1 & 3)) * 16);
                if constexpr (TF32) {
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        a[e] = vae_gpu_ptx_tf32(a[e]);
                    }
                }
#pragma unroll
                for (int j = 0; j < NJ; j++) {
                    vae_gpu_ptx_mma(acc[i][j], a, b[j], T());
                }
            }
        }
    }

    // one row of fragments at a time through the warp's f32 staging rows (shared memory the
    // pipeline no longer uses), then 16-byte vectors out
    __device__ __forceinline__ void store(const vae_gpu_conv_params & p, int m0, int n0, int phase) {
        const int     lane = (int) threadIdx.x % 32, g = lane / 4, t = lane % 4;
        float *       st   = reinterpret_cast<float *>(vae_gpu_conv_smem) + (int) threadIdx.x / 32 * 16 * C::LDC;
#pragma unroll
        for (int i = 0; i < MI; i++) {
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                float * d = st + g * C::LDC + j * 8 + 2 * t;   // rows g and g + 8, columns 2t, 2t + 1
                *reinterpret_cast<float2 *>(d)              = make_float2(acc[i][j][0], acc[i][j][1]);
                *reinterpret_cast<float2 *>(d + 8 * C::LDC) = make_float2(acc[i][j][2], acc[i][j][3]);
            }
            vae_gpu_warp_sync();
            vae_gpu_conv_store_rows<C>(p, st, m0 + wm * C::WM + i * 16, n0 + wn * C::WN, phase);
            vae_gpu_warp_sync();
        }
    }
};

#else
// AMD's matrix cores: each warp (wave) a WM x WN tile, MI x NJ fragments of 16x16, operands read
// from the stages by plain loads per the fragment geometry (vae-gpu-amdgcn.cuh): a lane's A row is
// contiguous along k; its B column is one element per k row. Where a lane's KL k are fewer than a
// 16-byte chunk (CDNA: 4), KP consecutive instructions take theirs from one chunk, read at once
// (16-byte LDS reads, conflict-free in CDNA's phases where 8-byte ones are not): instruction s of
// the KP takes k kc + KP k0 + s KL .. of its lane, B the same k (a sum over k is blind to which k
// each instruction takes, as long as A and B agree)
template <class C> struct vae_gpu_conv_tc {
    typedef typename C::T T;
    static constexpr int  MI = C::WM / 16, NJ = C::WN / 16, KL = VAE_GPU_AMD_KL;
    static constexpr int  KP = KL < C::VEC ? C::VEC / KL : 1;           // instructions per chunk read
    static constexpr int  PE = KL * KP < C::VEC ? KL * KP : C::VEC;     // A's k per read
    static_assert(C::WM % 16 == 0 && C::WN % 16 == 0 && C::BK % (16 * KP) == 0 && sizeof(T) == 2, "warp tile");
    float acc[MI][NJ][VAE_GPU_AMD_NACC];
    int   wm, wn;

    __device__ __forceinline__ void init() {
        const int warp = (int) threadIdx.x / C::W;
        wm             = warp / C::WGN;
        wn             = warp % C::WGN;
#pragma unroll
        for (int i = 0; i < MI; i++) {
#pragma unroll
            for (int j = 0; j < NJ; j++) {
#pragma unroll
                for (int e = 0; e < VAE_GPU_AMD_NACC; e++) {
                    acc[i][j][e] = 0.0f;
                }
            }
        }
    }

    __device__ __forceinline__ void step(int stage) {
        const int lane = vae_gpu_amd_lane(), k0 = vae_gpu_amd_k0(lane) * KP;
        const T * as = reinterpret_cast<const T *>(vae_gpu_conv_smem + stage * C::A_BYTES);
        // B: this lane's column from row k0 (a multiple of 8) on, row k0 + m at bk + m LDB + m / 8
        // BSHIFT (C::b_at)
        const T * bk = reinterpret_cast<const T *>(vae_gpu_conv_smem + C::B_BASE + stage * C::B_BYTES) +
                       C::b_at(k0, wn * C::WN + lane % 16);
#pragma unroll
        for (int kc = 0; kc < C::BK; kc += 16 * KP) {
            unsigned b[KP][NJ][KL / 2];
#pragma unroll
            for (int s = 0; s < KP; s++) {
#pragma unroll
                for (int j = 0; j < NJ; j++) {
                    T e[KL];
#pragma unroll
                    for (int q = 0; q < KL; q++) {
                        const int m = kc + s * KL + q;
                        e[q]        = bk[m * C::LDB + (m >> 3) * C::BSHIFT + j * 16];
                    }
                    memcpy(b[s][j], e, sizeof(e));
                }
            }
#pragma unroll
            for (int i = 0; i < MI; i++) {
                // the row's KP x KL k, in pieces that each lie in one 16-byte chunk (swizzled: C::a_at)
                unsigned a[KP * KL / 2];
#pragma unroll
                for (int q = 0; q < KP * KL; q += PE) {
                    memcpy(a + q / 2, as + C::a_at(wm * C::WM + i * 16 + lane % 16, kc + k0 + q), PE * sizeof(T));
                }
#pragma unroll
                for (int s = 0; s < KP; s++) {
#pragma unroll
                    for (int j = 0; j < NJ; j++) {
                        vae_gpu_amd_mma(acc[i][j], a + s * KL / 2, b[s][j], T());
                    }
                }
            }
        }
    }

    // one row of fragments at a time through the warp's f32 staging rows, as the PTX version
    __device__ __forceinline__ void store(const vae_gpu_conv_params & p, int m0, int n0, int phase) {
        const int lane = vae_gpu_amd_lane();
        float *   st   = reinterpret_cast<float *>(vae_gpu_conv_smem) + (int) threadIdx.x / C::W * 16 * C::LDC;
#pragma unroll
        for (int i = 0; i < MI; i++) {
#pragma unroll
            for (int j = 0; j < NJ; j++) {
#pragma unroll
                for (int v = 0; v < VAE_GPU_AMD_NACC; v++) {
                    st[vae_gpu_amd_row(lane, v) * C::LDC + j * 16 + lane % 16] = acc[i][j][v];
                }
            }
            vae_gpu_warp_sync();
            vae_gpu_conv_store_rows<C>(p, st, m0 + wm * C::WM + i * 16, n0 + wn * C::WN, phase);
            vae_gpu_warp_sync();
        }
    }
};
#endif

// fp32 on CUDA cores: each thread 8 rows (strided by TY, so that a warp's A reads fall in
// different banks) x NV float4 columns (strided by 4 TX)
template <class C> struct vae_gpu_conv_simt {
    static constexpr int TM = 8, TN = C::BM * C::BN / C::THREADS / TM, NV = TN / 4, TX = C::BN / TN, TY = C::BM / TM;
    static_assert(TN % 4 == 0 && TX * TY == C::THREADS, "thread tile");
    float4 acc[TM][NV];
    int    ty, tx;

    __device__ __forceinline__ void init() {
        ty = (int) threadIdx.x / TX;
        tx = (int) threadIdx.x % TX;
#pragma unroll
        for (int i = 0; i < TM; i++) {
#pragma unroll
            for (int v = 0; v < NV; v++) {
                acc[i][v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
        }
    }

    __device__ __forceinline__ void step(int stage) {
        const float * as = reinterpret_cast<const float *>(vae_gpu_conv_smem + stage * C::A_BYTES);
        const float * bs = reinterpret_cast<const float *>(vae_gpu_conv_smem + C::B_BASE + stage * C::B_BYTES);
#pragma unroll 1   // unrolled, the loads run ahead and the 8x8 tile spills
        for (int kk = 0; kk < C::BK; kk += 2) {
            float2 a[TM];
#pragma unroll
            for (int i = 0; i < TM; i++) {
                a[i] = *reinterpret_cast<const float2 *>(as + C::a_at(ty + i * TY, kk));
            }
#pragma unroll
            for (int q = 0; q < 2; q++) {
                float4 b[NV];
#pragma unroll
                for (int v = 0; v < NV; v++) {
                    b[v] = *reinterpret_cast<const float4 *>(bs + C::b_at(kk + q, (v * TX + tx) * 4));
                }
#pragma unroll
                for (int i = 0; i < TM; i++) {
                    const float s = q == 0 ? a[i].x : a[i].y;
#pragma unroll
                    for (int v = 0; v < NV; v++) {
                        acc[i][v].x = fmaf(s, b[v].x, acc[i][v].x);
                        acc[i][v].y = fmaf(s, b[v].y, acc[i][v].y);
                        acc[i][v].z = fmaf(s, b[v].z, acc[i][v].z);
                        acc[i][v].w = fmaf(s, b[v].w, acc[i][v].w);
                    }
                }
            }
        }
    }

    __device__ __forceinline__ void store(const vae_gpu_conv_params & p, int m0, int n0, int phase) {
#pragma unroll
        for (int i = 0; i < TM; i++) {
#pragma unroll
            for (int v = 0; v < NV; v++) {
                const int m = m0 + ty + i * TY, n = n0 + (v * TX + tx) * 4;
                if (m < p.M && n < p.cout_p) {
                    const float r[4] = { acc[i][v].x, acc[i][v].y, acc[i][v].z, acc[i][v].w };
                    vae_gpu_conv_out<float>(p, phase, m, n, r);
                }
            }
        }
    }
};

// after a tile's store, by the whole block: the RMS norm of its pixels and a GroupNorm's partials
// of it, where the conv has them (the staging's shared memory is free after the barrier)
template <class C> __device__ __forceinline__ void vae_gpu_conv_norms(const vae_gpu_conv_params & p, int mb, int nb, int phase) {
#if !defined(VAE_GPU_AMD) // (not on AMD: RDNA3's 128x96 tile then spills; the norm runs apart there)
    if (p.nform >= 0) {
        __syncthreads();
        vae_gpu_conv_norm<typename C::T, C::BM, C::THREADS>(p, mb * C::BM, phase, reinterpret_cast<float *>(vae_gpu_conv_smem));
    }
#endif
    if (p.gnpart) {
        __syncthreads();
        vae_gpu_conv_gn<C>(p, mb, nb, phase);
    }
}

// one BM x BN tile of one phase: blocks run N fastest, then the phase, so the blocks that share
// an A tile run together and read it once from memory
template <class C> __device__ __forceinline__ void vae_gpu_conv_tile(const vae_gpu_conv_params & p) {
    typedef typename std::conditional<C::TC, vae_gpu_conv_tc<C>, vae_gpu_conv_simt<C>>::type Math;
    const int nb = (int) (blockIdx.x % (unsigned) p.nt), rest = (int) (blockIdx.x / (unsigned) p.nt);
    const int phase = p.up ? rest & 3 : 0, mb = p.up ? rest >> 2 : rest;
    const int m0 = mb * C::BM, n0 = nb * C::BN;

    vae_gpu_conv_loader<C> ld;
    ld.init(p, m0, n0, phase);
    Math mm;
    mm.init();

    // a ring of STAGES slices: slice kb + STAGES - 1 loads while slice kb is multiplied
    const int nk = (p.K + C::BK - 1) / C::BK;
#pragma unroll
    for (int s = 0; s < C::STAGES - 1; s++) {
        if (s < nk) {
            ld.load(p, s);
        }
        vae_gpu_cp_commit();
    }
    int rs = 0, ws = C::STAGES - 1;   // the stages of slices kb and kb + STAGES - 1
    for (int kb = 0; kb < nk; kb++) {
        vae_gpu_cp_wait<C::STAGES - 2>();
        // slice kb is in; every warp is done with slice kb - 1, whose stage ws the next load reuses
        __syncthreads();
        if (kb + C::STAGES - 1 < nk) {
            ld.load(p, ws);
        }
        vae_gpu_cp_commit();
        mm.step(rs);
        rs = rs == C::STAGES - 1 ? 0 : rs + 1;
        ws = ws == C::STAGES - 1 ? 0 : ws + 1;
    }
    vae_gpu_cp_wait<0>();
    __syncthreads();
    mm.store(p, m0, n0, phase);
    vae_gpu_conv_norms<C>(p, mb, nb, phase);
}

#if defined(__HIP_DEVICE_COMPILE__) || defined(VAE_GPU_EMU_GFX)
// AMD: 64 KB of LDS per workgroup, no opt-in
#define VAE_GPU_CONV_SMEM_OPTIN 65536
#elif defined(__CUDA_ARCH__)
// the most shared memory a block may opt in to on the arch being compiled (the CUDA programming
// guide's table of compute capabilities); the resource gate (kernels/meson.build) holds every
// tile configuration to it
#define VAE_GPU_CONV_SMEM_OPTIN                                                                     \
    (__CUDA_ARCH__ >= 1200 ? 101376 : __CUDA_ARCH__ >= 900 ? 232448 : __CUDA_ARCH__ == 800 ||       \
     __CUDA_ARCH__ == 870 ? 166912 : __CUDA_ARCH__ >= 860 ? 101376 : __CUDA_ARCH__ >= 750 ? 65536 : 49152)
#endif

// MINB blocks per SM, halved on sm_75: its fp16 path holds more registers, and the wide tiles
// spilled there at the full bound (the resource gate refuses any spill)
#define VAE_GPU_CONV_MINB(C) (VAE_GPU_CONV_SM80 ? C::MINB : (C::MINB + 1) / 2)

template <class C>
static __global__ void __launch_bounds__(C::THREADS, VAE_GPU_CONV_MINB(C)) vae_gpu_conv_kernel(const vae_gpu_conv_params p) {
#if defined(VAE_GPU_CONV_SMEM_OPTIN)
    static_assert(C::SMEM <= VAE_GPU_CONV_SMEM_OPTIN, "resource gate: this conv tile needs more shared memory than "
                                                      "the arch being compiled allows a block");
#endif
    // the sm_75 build of the tf32 and bf16 kernels, and an AMD tensor tile built for the other
    // warp width: never launched (vae_gpu_conv refuses them, or picks by the device's warp size)
    if constexpr ((C::SM80 && !VAE_GPU_CONV_SM80) || (C::TC && C::W != VAE_GPU_WARP)) {
        vae_gpu_trap();
    } else {
        vae_gpu_conv_tile<C>(p);
    }
}

// ---- Hopper (sm_90a): TMA and wgmma, warp-specialized ---------------------------------------------

// On an H100 or H200 mma.sync reaches about half of the tensor cores' peak; wgmma, fed by TMA,
// reaches the rest. A block computes a 128 x BN tile of one phase: a producer warp, one elected
// lane of it, copies each K slice's A and B into a ring of STAGES shared-memory stages with TMA,
// and two consumer warpgroups (64 rows each) multiply them with wgmma, BN channels wide, from the
// stages' descriptors. full[s] (the producer's arrival and the copies' bytes) and empty[s] (the
// 8 consumer warps, done reading) hand each stage over. A slice is 64 channels of one tap:
// - A: the im2col column of the 128 rows' pixels at tap (j, ky, kx), copied by TMA in im2col mode
//   (4-D: channels, x, y, frames, zeros outside the tensor) into 128-byte rows, 128-byte swizzled,
//   as wgmma reads a K-major operand. The bounding box's corner is -pad (-1 for the phases of an
//   up conv, whose tap offsets then carry the phase). A causal conv's time tap j reads frame
//   t + j - (kt - 1) of [history, x]: from the history map or from x's; a tile whose rows need both
//   (frames on either side of x's first) takes that tap twice, once from each map, the other's
//   rows falling outside its tensor as zeros.
// - B: the packed weights' 64 rows of those K, in boxes of 64 channels (128 bytes, swizzled: the
//   N-major operand of wgmma, imm-trans-b), tile mode.
// Channels past cin_p come in as zeros (A), so the B rows past the tap (the next tap's) add nothing
// (and cost their k16 steps: a quarter of a 96-channel layer's wgmma).
// The 288 threads leave each 224 registers (65536 / 288): the consumers' 128 accumulators at BN 256
// fit without setmaxnreg. Edges other than zeros (replicate, reflect) stay with mma.sync.
// Not persistent: the epilogue (vae_gpu_conv_tc's store, then vae_gpu_conv_norms, every thread) is
// the other tiles' and waits for the main loop.
#if !defined(VAE_GPU_AMD)
#if VAE_GPU_PTX_SM90A || (defined(VAE_GPU_EMU) && __CUDA_ARCH__ >= 900)
#define VAE_GPU_CONV_SM90A 1
#else
#define VAE_GPU_CONV_SM90A 0
#endif

// the tensor maps of a launch (cuTensorMapEncode*: 128 opaque bytes each), kernel parameters
struct __align__(64) vae_gpu_tmap {
    unsigned long long v[16];
};
struct vae_gpu_conv90_maps {
    vae_gpu_tmap x, hist, wt;   // A from x and the history (im2col), B (tiles)
};

// a BM x BN tile (BM 128 or 256: BM / 64 consumer warpgroups, then the producer warp) in K slices
// of 64 (16-bit T); also what vae_gpu_conv_tc's epilogue needs (its warps' rows: 16 each, all BN
// channels) and vae_gpu_conv_norms
template <typename T_, int BM_, int BN_, int MINB_> struct vae_gpu_conv90_cfg {
    typedef T_ T;
    static constexpr int    BM = BM_, BN = BN_, BK = 64, STAGES = 4, MINB = MINB_, W = 32, THREADS = 32 * (BM / 16 + 1);
    static constexpr int    WGM = BM / 16, WGN = 1, WM = 16, WN = BN, LDC = BN + 8, VEC = 8, LDA = BK, B_BASE = 0;
    static constexpr int    NB      = (BN + 63) / 64;                 // B boxes of 64 channels
    static constexpr int    A_BYTES = BM * BK * 2, STAGE = A_BYTES + NB * 64 * BK * 2;
    static constexpr size_t RING    = 1024 + (size_t) STAGES * STAGE;   // (the ring on a 1024-byte boundary)
    static constexpr size_t SMEM    = RING + 2 * STAGES * 8;            // then the full and empty barriers
    static constexpr bool   TC = true;
    static_assert(sizeof(T) == 2, "16-bit operands");
    static_assert((size_t) WGM * 16 * LDC * sizeof(float) <= RING, "the epilogue's staging, clear of the barriers");
    static_assert((BM + 2 * BN) * sizeof(float) <= RING, "an RMS norm's scales, gamma, beta (vae_gpu_conv_norm)");
    static_assert(VAE_GPU_GN_TILE_SMEM(T, THREADS) * sizeof(float) <= RING, "a GroupNorm's partials");
};

#if VAE_GPU_CONV_SM90A // (the device code of sm_90a and of the emulated sm_90 alone)
// a wgmma descriptor of shared address a, 128-byte swizzle, leading and stride byte offsets
static __device__ __forceinline__ uint64_t vae_gpu_conv90_desc(unsigned a, unsigned lbo, unsigned sbo) {
    return (uint64_t) (a >> 4 & 0x3fff) | (uint64_t) (lbo >> 4 & 0x3fff) << 16 | (uint64_t) (sbo >> 4 & 0x3fff) << 32 |
           1ull << 62;
}

// the slices of tile m0: every time tap once, or twice where its rows read both the history and x
static __device__ __forceinline__ int vae_gpu_conv90_slices(const vae_gpu_conv_params & p, int m0, int BM) {
    const int hw = p.h * p.w, f0 = m0 / hw, f1 = (min(m0 + BM, p.M) - 1) / hw;
    int       taps = 0;
    for (int j = 0; j < p.kt; j++) {
        const int s0 = f0 + j - (p.kt - 1), s1 = f1 + j - (p.kt - 1);
        taps += (s0 < 0) + (s1 >= 0);
    }
    return taps * p.ks * p.ks * ((p.cin_p + 63) / 64);
}

template <class C>
static __device__ __forceinline__ void vae_gpu_conv90_tile(const vae_gpu_conv90_maps & mp, const vae_gpu_conv_params & p) {
    typedef typename C::T T;
    const int      nb = (int) (blockIdx.x % (unsigned) p.nt), rest = (int) (blockIdx.x / (unsigned) p.nt);
    const int      phase = p.up ? rest & 3 : 0, mb = p.up ? rest >> 2 : rest;
    const int      m0 = mb * C::BM, n0 = nb * C::BN, warp = (int) threadIdx.x / 32;
    const unsigned ring = (vae_gpu_smem_addr(vae_gpu_conv_smem) + 1023) & ~1023u, full = ring + C::STAGES * C::STAGE;
    const unsigned empty = full + C::STAGES * 8;
    const int      nk    = vae_gpu_conv90_slices(p, m0, C::BM);
    if (threadIdx.x == 0) {
        for (int s = 0; s < C::STAGES; s++) {
            vae_gpu_ptx_mbar_init(full + 8 * s, 1);
            vae_gpu_ptx_mbar_init(empty + 8 * s, C::WGM);
        }
        vae_gpu_ptx_mbar_fence_init();
    }
    __syncthreads();
    vae_gpu_conv_tc<C> mm;   // (its accumulators: warp w's rows 16 w .. 16 w + 15, as wgmma gives them)
    if (warp == C::WGM) {   // the producer
        if (vae_gpu_ptx_elect()) {
            // the tile's first pixel (frame f0, row oy0, column ox0) and the last row's frame
            const int hw = p.h * p.w, f0 = m0 / hw, f1 = (min(m0 + C::BM, p.M) - 1) / hw, r0 = m0 - f0 * hw;
            const int oy0 = r0 / p.w, ox0 = r0 - oy0 * p.w, lo = p.up ? -1 : -p.pad;
            const int dy = p.up ? phase >> 1 : 0, dx = p.up ? phase & 1 : 0;
            int       kb = 0;
            for (int j = 0; j < p.kt; j++) {
                const int s0 = f0 + j - (p.kt - 1), s1 = f1 + j - (p.kt - 1);
                for (int src = s0 < 0 ? 0 : 1; src <= (s1 >= 0 ? 1 : 0); src++) {   // 0: the history, 1: x
                    const vae_gpu_tmap * map = src ? &mp.x : &mp.hist;
                    const int            n   = src ? s0 : s0 + p.kt - 1;
                    for (int ky = 0; ky < p.ks; ky++) {
                        for (int kx = 0; kx < p.ks; kx++) {
                            for (int c = 0; c < p.cin_p; c += 64, kb++) {
                                const int s = kb % C::STAGES;
                                if (kb >= C::STAGES) { // the consumers done with slice kb - STAGES
                                    vae_gpu_ptx_mbar_wait(empty + 8 * s, (unsigned) (kb / C::STAGES - 1) & 1);
                                }
                                const unsigned a = ring + s * C::STAGE, bar = full + 8 * s;
                                vae_gpu_ptx_mbar_arrive_tx(bar, C::STAGE);
                                vae_gpu_ptx_tma_load_im2col_4d(a, map, c, ox0 + lo, oy0 + lo, n, kx + dx, ky + dy, bar);
                                const int row = (int) (phase * (size_t) p.K + vae_gpu_conv_krow(j, ky, kx, c, p.ks, p.cin_p));
#pragma unroll
                                for (int b = 0; b < C::NB; b++) {
                                    vae_gpu_ptx_tma_load_2d(a + C::A_BYTES + b * 8192, &mp.wt, n0 + 64 * b, row, bar);
                                }
                            }
                        }
                    }
                }
            }
        }
        vae_gpu_warp_sync();   // (the warp together again at the block's barrier)
    } else {
        mm.init();
        float *   d = &mm.acc[0][0][0];
        const int g = warp / 4;   // the warpgroup: rows 64 g ..
        vae_gpu_ptx_fence_acc(d, C::BN / 2);
        for (int kb = 0; kb < nk; kb++) {
            const int s = kb % C::STAGES;
            vae_gpu_ptx_mbar_wait(full + 8 * s, (unsigned) (kb / C::STAGES) & 1);
            // A: 128-byte rows, 8-row atoms 1024 bytes apart, k16 steps 32 bytes on; B: rows of k, 64
            // channels each, boxes 8192 bytes apart, k16 steps 16 rows on. (Every k16 step, those
            // past cin_p too, whose A is zeros: a wgmma under a branch, however uniform, is serialized
            // by ptxas, which sm90a-gate.py refuses)
            const unsigned a = ring + s * C::STAGE + g * 64 * 128, b = ring + s * C::STAGE + C::A_BYTES;
            vae_gpu_ptx_wgmma_fence();
#pragma unroll
            for (int k = 0; k < 4; k++) {
                vae_gpu_ptx_wgmma<C::BN>(d, vae_gpu_conv90_desc(a + 32 * k, 16, 1024),
                                         vae_gpu_conv90_desc(b + 2048 * k, 8192, 1024), T());
            }
            vae_gpu_ptx_wgmma_commit();
            vae_gpu_ptx_wgmma_wait<1>();   // slice kb - 1 read: its stage may be refilled
            if (kb > 0) { // (a warp's lanes leave wait_group together, .aligned, on the GPU; the emulator
                          // completes each lane's in turn, which the __syncwarp awaits)
                vae_gpu_warp_sync();
                if (threadIdx.x % 32 == 0) {
                    vae_gpu_ptx_mbar_arrive(empty + 8 * ((kb - 1) % C::STAGES));
                }
            }
        }
        vae_gpu_ptx_wgmma_wait<0>();
        vae_gpu_ptx_fence_acc(d, C::BN / 2);
    }
    __syncthreads();
    if (warp < C::WGM) {
        mm.store(p, m0, n0, phase);
    }
    vae_gpu_conv_norms<C>(p, mb, nb, phase);
}
#endif

template <class C>
static __global__ void __launch_bounds__(C::THREADS, C::MINB)
    vae_gpu_conv90_kernel(const __grid_constant__ vae_gpu_conv90_maps mp, const vae_gpu_conv_params p) {
#if VAE_GPU_CONV_SM90A
    static_assert(C::SMEM <= VAE_GPU_CONV_SMEM_OPTIN, "resource gate: the Hopper conv tile's shared memory");
    vae_gpu_conv90_tile<C>(mp, p);
#else
    (void) mp, (void) p;
    vae_gpu_trap();   // (sm_90a only: vae_gpu_conv_variants offers it on compute capability 9.0 alone)
#endif
}
#endif

// ---- the narrow conv: a decoder's head ----------------------------------------------------------

// A conv of at most 16 output channels (a decoder's RGB head, Wan 2.2's 12 patch channels, a 1x1
// conv of 16) computes exactly its cout channels here, in f32 on CUDA cores: the narrowest tensor
// tile is 16 channels wide, so 3 of them cost what 16 do, and each gathered input value then feeds
// 3 multiplies. A block takes a TH x TW patch of one frame, each thread two pixels of a column
// (rows ty and ty + TH / 2). Per time tap and CC input channels the block stages the patch's
// input with its halo ([channel][y][x], f32: a warp reads 32 consecutive words) and those taps'
// weights ([tap][channel][16], f32: every lane reads the same float4) in shared memory; each input
// value read there feeds 2 x cout multiply-adds. Not for up, nor k > NK.
#define VAE_GPU_NARROW_TH 16
#define VAE_GPU_NARROW_TW 32
#define VAE_GPU_NARROW_CC 8
#define VAE_GPU_NARROW_K 5
// 2 blocks per SM at least, which caps a thread at 128 registers: left to itself ptxas takes 4 on
// sm_80, as the shared memory allows, and spills at 64. An AMD CU holds one (64 KB of LDS)
#if defined(VAE_GPU_AMD)
#define VAE_GPU_NARROW_MINB 1
#else
#define VAE_GPU_NARROW_MINB 2
#endif

// the blocks of the narrow conv of p: one per patch
static inline long long vae_gpu_conv_narrow_blocks(const vae_gpu_conv_params & p) {
    const long long ty = (p.h + VAE_GPU_NARROW_TH - 1) / VAE_GPU_NARROW_TH, tx = (p.w + VAE_GPU_NARROW_TW - 1) / VAE_GPU_NARROW_TW;
    return (long long) (p.M / (p.h * p.w)) * ty * tx;
}

// NC: the channels computed, cout (3, 4, 8, 12 or 16) or the next of those above it (its lanes
// past cout: zero weights, written as zeros)
template <typename T, int NC>
static __global__ void __launch_bounds__(256, VAE_GPU_NARROW_MINB) vae_gpu_conv_narrow_kernel(const vae_gpu_conv_params p) {
    constexpr int TH = VAE_GPU_NARROW_TH, TW = VAE_GPU_NARROW_TW, CC = VAE_GPU_NARROW_CC, NK = VAE_GPU_NARROW_K;
    constexpr int HY = TH + NK - 1, HX = TW + NK - 1, VEC = 16 / sizeof(T);
    __shared__ float  s_in[CC][HY][HX];
    __shared__ float4 s_w[NK * NK][CC][4];
    const int tid = (int) threadIdx.x, tx = tid % TW, ty = tid / TW;
    const int nty = (p.h + TH - 1) / TH, ntx = (p.w + TW - 1) / TW;
    const int t = (int) (blockIdx.x / (unsigned) (nty * ntx)), rest = (int) (blockIdx.x % (unsigned) (nty * ntx));
    const int y0 = rest / ntx * TH, x0 = rest % ntx * TW, k = p.ks, hy = TH + k - 1, hx = TW + k - 1;
    vae_gpu_conv_pix origin;
    origin.t  = t;
    origin.oy = y0;
    origin.ox = x0;
    constexpr int NQ = (NC + 3) / 4;   // float4 groups of weights
    float         acc[2][NC];
#pragma unroll
    for (int i = 0; i < NC; i++) {
        acc[0][i] = acc[1][i] = 0.0f;
    }
    for (int j = 0; j < p.kt; j++) {
        for (int c0 = 0; c0 < p.cin_p; c0 += CC) {
            __syncthreads();   // (every thread done with the last stage)
            // the patch and its halo: one 16-byte vector of VEC channels per pixel and piece
            for (int e = tid; e < hy * hx * (CC / VEC); e += 256) {
                const int        v = e % (CC / VEC), q = e / (CC / VEC), yy = q / hx, xx = q - yy * hx;
                vae_gpu_conv_tap tp;
                tp.j  = j;
                tp.ky = yy;
                tp.kx = xx;
                tp.c  = c0 + v * VEC;
                const T *      src = vae_gpu_conv_src<T>(p, origin, tp, p.pad, p.pad);
                vae_gpu_vec<T> in  = {};
                if (src) {
                    in = vae_gpu_conv_ld16(src);
                }
#pragma unroll
                for (int i = 0; i < VEC; i++) {
                    s_in[v * VEC + i][yy][xx] = vae_gpu_to_f32(in.v[i]);
                }
            }
            // the weights of time tap j, channels c0 .., the first 16 output channels of each row
            for (int e = tid; e < k * k * CC * 16; e += 256) {
                const int o = e % 16, c = e / 16 % CC, tap = e / (16 * CC);
                const T * w = (const T *) p.wt + vae_gpu_conv_krow(j, tap / k, tap % k, c0 + c, k, p.cin_p) * p.cout_p;
                reinterpret_cast<float *>(&s_w[tap][c][0])[o] = vae_gpu_to_f32(w[o]);
            }
            __syncthreads();
            for (int c = 0; c < CC; c++) {
                for (int ky = 0; ky < k; ky++) {
                    for (int kx = 0; kx < k; kx++) {
                        const float a0 = s_in[c][ty + ky][tx + kx], a1 = s_in[c][ty + TH / 2 + ky][tx + kx];
                        float w[NQ * 4];
#pragma unroll
                        for (int q = 0; q < NQ; q++) {
                            const float4 v = s_w[ky * k + kx][c][q];
                            w[4 * q]       = v.x;
                            w[4 * q + 1]   = v.y;
                            w[4 * q + 2]   = v.z;
                            w[4 * q + 3]   = v.w;
                        }
#pragma unroll
                        for (int o = 0; o < NC; o++) {
                            acc[0][o] = fmaf(a0, w[o], acc[0][o]);
                            acc[1][o] = fmaf(a1, w[o], acc[1][o]);
                        }
                    }
                }
            }
        }
    }
    // out: the cout channels, then zeros in the padding lanes, 16-byte vectors (vae_gpu_conv_out)
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int oy = y0 + ty + r * (TH / 2), ox = x0 + tx;
        if (oy >= p.h || ox >= p.w) {
            continue;
        }
        const int m = (t * p.h + oy) * p.w + ox;
#pragma unroll
        for (int n = 0; n < 16; n += VEC) {   // (cout_p = 16)
            float v[VEC];
#pragma unroll
            for (int i = 0; i < VEC; i++) {
                v[i] = n + i < NC ? acc[r][n + i < NC ? n + i : 0] : 0.0f;
            }
            vae_gpu_conv_out<T>(p, 0, m, n, v);
        }
    }
}

// ---- launchers ---------------------------------------------------------------------------------------

// shared memory past 48 KB must be asked for, in each context (an attribute belongs to the
// context current at the call: a GstCudaContext is not the primary one): once per backend, at its
// init (vae_gpu_conv_setup), not at each launch, which would repeat it inside every captured graph
template <class C, class K> static cudaError_t vae_gpu_conv_opt_in(K kernel) {
    if (C::SMEM > 48 * 1024) {
        return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) C::SMEM);
    }
    return cudaSuccess;
}

template <class C> static cudaError_t vae_gpu_conv_setup_t() {
    return vae_gpu_conv_opt_in<C>(vae_gpu_conv_kernel<C>);
}

// the blocks of a launch of tile C (p.nt set), or -1 past a grid's int
template <class C> static long long vae_gpu_conv_blocks(vae_gpu_conv_params & p) {
    p.nt                   = (p.cout_p + C::BN - 1) / C::BN;
    const long long blocks = (long long) ((p.M + C::BM - 1) / C::BM) * (p.up ? 4 : 1) * p.nt;
    return blocks > INT_MAX ? -1 : blocks;
}

template <class C> static cudaError_t vae_gpu_conv_launch(vae_gpu_conv_params p, cudaStream_t s) {
    const long long blocks = vae_gpu_conv_blocks<C>(p);
    if (blocks < 0) {
        return cudaErrorInvalidValue;
    }
    vae_gpu_conv_kernel<C><<<(unsigned) blocks, C::THREADS, C::SMEM, s>>>(p);
    return cudaGetLastError();
}

#if !defined(VAE_GPU_AMD)
// the driver's cuTensorMapEncodeIm2col and cuTensorMapEncodeTiled (their CUDA 12.0 signatures, the
// enums as ints), through the runtime: the plugin links no libcuda
typedef int (*vae_gpu_tmap_im2col_fn)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *, const int *,
                                      const int *, unsigned, unsigned, const unsigned *, int, int, int, int);
typedef int (*vae_gpu_tmap_tiled_fn)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                                     const unsigned *, const unsigned *, int, int, int, int);

// the tensor maps of the Hopper conv of p (T: f16 or bf16), 128-byte swizzled, zeros outside the
// tensors (CUtensorMapSwizzle 3, CUtensorMapFloatOOBfill 0, L2 promotion of 128 bytes): x and the
// history [frames][h][w][cin_p] in im2col columns of bm pixels by 64 channels, the bounding box's
// corners at -pad (-1 for an up conv's phases); the weights [phases x K][cout_p] in 64 x 64 tiles
// (looked up at each launch: a launch is made at capture or while timing, not per replay; no static,
// whose guarded initialization the race checker's build cannot link)
template <typename T> static bool vae_gpu_conv90_encode(const vae_gpu_conv_params & p, unsigned bm, vae_gpu_conv90_maps * mp) {
    void * im2col_fn = nullptr, *tiled_fn = nullptr;
    char   err[256];
    if (!vae_gpu_driver_entry("cuTensorMapEncodeIm2col", &im2col_fn, err, sizeof(err)) ||
        !vae_gpu_driver_entry("cuTensorMapEncodeTiled", &tiled_fn, err, sizeof(err))) {
        return false;
    }
    const vae_gpu_tmap_im2col_fn im2col = (vae_gpu_tmap_im2col_fn) im2col_fn;
    const vae_gpu_tmap_tiled_fn  tiled  = (vae_gpu_tmap_tiled_fn) tiled_fn;
    const int                    dtype  = std::is_same<T, __half>::value ? 6 : 9;   // FLOAT16, BFLOAT16
    const uint64_t               e = sizeof(T), px = (uint64_t) p.cin_p * e;
    const unsigned               ones[4] = { 1, 1, 1, 1 }, box[2] = { 64, 64 };
    const int                    lo = p.up ? -1 : -p.pad, corner[2] = { lo, lo };
    uint64_t dim[4] = { (uint64_t) p.cin_p, (uint64_t) p.w, (uint64_t) p.h, (uint64_t) (p.M / (p.h * p.w)) };
    const uint64_t st[3] = { px, px * p.w, px * p.w * p.h };
    bool ok = im2col(&mp->x, dtype, 4, (void *) p.x, dim, st, corner, corner, 64, bm, ones, 0, 3, 2, 0) == 0;
    dim[3]  = (uint64_t) (p.kt > 1 ? p.kt - 1 : 1);
    ok = ok && (p.kt > 1 ? im2col(&mp->hist, dtype, 4, (void *) p.hist, dim, st, corner, corner, 64, bm, ones, 0, 3,
                                  2, 0) == 0
                         : (mp->hist = mp->x, true));
    const uint64_t wdim[2] = { (uint64_t) p.cout_p, (uint64_t) (p.up ? 4 : 1) * p.K }, wst[1] = { (uint64_t) p.cout_p * e };
    return ok && tiled(&mp->wt, dtype, 2, (void *) p.wt, wdim, wst, box, ones, 0, 3, 2, 0) == 0;
}

template <class C> static cudaError_t vae_gpu_conv90_setup() {
    return vae_gpu_conv_opt_in<C>(vae_gpu_conv90_kernel<C>);
}

template <class C> static cudaError_t vae_gpu_conv90_launch(vae_gpu_conv_params p, cudaStream_t s) {
    const long long     blocks = vae_gpu_conv_blocks<C>(p);
    vae_gpu_conv90_maps mp;
    if (blocks < 0 || !vae_gpu_conv90_encode<typename C::T>(p, C::BM, &mp)) {
        return cudaErrorInvalidValue;
    }
    vae_gpu_conv90_kernel<C><<<(unsigned) blocks, C::THREADS, C::SMEM, s>>>(mp, p);
    return cudaGetLastError();
}
#endif

template <typename T> static cudaError_t vae_gpu_conv_narrow_launch(vae_gpu_conv_params p, cudaStream_t s) {
    const long long blocks = vae_gpu_conv_narrow_blocks(p);
    if (blocks > INT_MAX) {
        return cudaErrorInvalidValue;
    }
    switch (p.cout == 3 ? 0 : (p.cout + 3) / 4) {
        case 0:  vae_gpu_conv_narrow_kernel<T, 3><<<(unsigned) blocks, 256, 0, s>>>(p); break;
        case 1:  vae_gpu_conv_narrow_kernel<T, 4><<<(unsigned) blocks, 256, 0, s>>>(p); break;
        case 2:  vae_gpu_conv_narrow_kernel<T, 8><<<(unsigned) blocks, 256, 0, s>>>(p); break;
        case 3:  vae_gpu_conv_narrow_kernel<T, 12><<<(unsigned) blocks, 256, 0, s>>>(p); break;
        default: vae_gpu_conv_narrow_kernel<T, 16><<<(unsigned) blocks, 256, 0, s>>>(p); break;
    }
    return cudaGetLastError();
}

static cudaError_t vae_gpu_conv_narrow_setup() {
    return cudaSuccess;   // (static shared memory, under 48 KB)
}

struct vae_gpu_conv_variant {
    const char * name;
    cudaError_t (*launch)(vae_gpu_conv_params, cudaStream_t);
    cudaError_t (*setup)();
    int bm, bn;   // the output tile: bm pixels (of a phase) by bn channels; bn 0: the narrow conv, bm
                  //   pixels (a patch) by exactly the conv's channels
    int warps;    // of 32 lanes (AMD's wave64 tiles: as many waves; the Hopper tiles: their consumer
                  //   warpgroups, BM / 64, each multiplying 64 rows as one)
    bool tma;     // the Hopper conv (sm_90a, zeros outside the frame), last in its table
};

#define VAE_GPU_CONV_VARIANT(name, T, BM, BN, BK, WGM, WGN, MINB, TC, W)                  \
    { name, vae_gpu_conv_launch<vae_gpu_conv_cfg<T, BM, BN, BK, WGM, WGN, MINB, TC, W>>, \
      vae_gpu_conv_setup_t<vae_gpu_conv_cfg<T, BM, BN, BK, WGM, WGN, MINB, TC, W>>, BM, BN, WGM * WGN, false }
#define VAE_GPU_CONV_NARROW(name, T) \
    { name, vae_gpu_conv_narrow_launch<T>, vae_gpu_conv_narrow_setup, VAE_GPU_NARROW_TH * VAE_GPU_NARROW_TW, 0, 8, false }
#define VAE_GPU_CONV90(name, T, BM, BN, MINB)                                                                          \
    { name, vae_gpu_conv90_launch<vae_gpu_conv90_cfg<T, BM, BN, MINB>>, vae_gpu_conv90_setup<vae_gpu_conv90_cfg<T, BM, BN, MINB>>, \
      BM, BN, BM / 64, true }

// per precision: 8 warps of 64x32, 4 warps of 64x64 (more registers, fewer shared-memory reads
// per mma), then the narrow tiles for few output channels or few pixels
static const vae_gpu_conv_variant vae_gpu_conv_fp32_variants[] = {
    VAE_GPU_CONV_VARIANT("simt-f32 128x128x16", float, 128, 128, 16, 2, 4, 2, false, 32),
    VAE_GPU_CONV_VARIANT("simt-f32 128x64x16", float, 128, 64, 16, 2, 4, 2, false, 32),
    VAE_GPU_CONV_VARIANT("simt-f32 64x64x16", float, 64, 64, 16, 2, 2, 4, false, 32),
    VAE_GPU_CONV_NARROW("narrow-f32 16x32", float),
};

// the tensor-core tiles of a 16-bit storage type T (named tn) in warps of W lanes
#define VAE_GPU_CONV_MMA16(tn, T, W)                                                     \
    VAE_GPU_CONV_VARIANT("mma-" tn " 128x128x32 8w", T, 128, 128, 32, 2, 4, 2, true, W), \
    VAE_GPU_CONV_VARIANT("mma-" tn " 128x128x32 4w", T, 128, 128, 32, 2, 2, 2, true, W), \
    VAE_GPU_CONV_VARIANT("mma-" tn " 128x64x32", T, 128, 64, 32, 2, 2, 4, true, W),      \
    VAE_GPU_CONV_VARIANT("mma-" tn " 64x64x32", T, 64, 64, 32, 2, 2, 4, true, W)
// and tiles as wide as the 96 and 192 channels of Wan's layers (a 128-wide tile computes a quarter
// more there): 4 warps of 64x48, 8 of 32x96 (issue 27)
#define VAE_GPU_CONV_EXACT(tn, T, W)                                                         \
    VAE_GPU_CONV_VARIANT("mma-" tn " 128x96x32", T, 128, 96, 32, 2, 2, 2, true, W),           \
    VAE_GPU_CONV_VARIANT("mma-" tn " 128x192x32 8w", T, 128, 192, 32, 4, 2, 1, true, W)
#if defined(VAE_GPU_AMD)
static const vae_gpu_conv_variant vae_gpu_conv_fp16_variants[] = {
    VAE_GPU_CONV_MMA16("f16", __half, 32), VAE_GPU_CONV_EXACT("f16", __half, 32), VAE_GPU_CONV_NARROW("narrow-f16 16x32", __half)
};
static const vae_gpu_conv_variant vae_gpu_conv_bf16_variants[] = {
    VAE_GPU_CONV_MMA16("bf16", __nv_bfloat16, 32), VAE_GPU_CONV_EXACT("bf16", __nv_bfloat16, 32),
    VAE_GPU_CONV_NARROW("narrow-bf16 16x32", __nv_bfloat16)
};
// AMD: the same tiles in waves of 64 for CDNA; no tf32 (RDNA has none; CDNA3's xf32 is not used)
static const vae_gpu_conv_variant vae_gpu_conv_fp16_w64_variants[] = {
    VAE_GPU_CONV_MMA16("f16", __half, 64), VAE_GPU_CONV_EXACT("f16", __half, 64), VAE_GPU_CONV_NARROW("narrow-f16 16x32", __half)
};
static const vae_gpu_conv_variant vae_gpu_conv_bf16_w64_variants[] = {
    VAE_GPU_CONV_MMA16("bf16", __nv_bfloat16, 64), VAE_GPU_CONV_EXACT("bf16", __nv_bfloat16, 64),
    VAE_GPU_CONV_NARROW("narrow-bf16 16x32", __nv_bfloat16)
};
#else
// NVIDIA: then 2 warps of 64x16 for the layers of at most 16 output channels, a decoder's last
// conv (3 channels: a 64-wide tile computes 21 times what it keeps). On an H200 at bf16 the
// autotuner picks it there in TAEF2, AutoencoderKL and Wan (Wan's head conv 2.31 -> 1.93 ms; the
// tile is bound by gathering the input, 8 GB through shared memory, not by the multiplies).
// Wider tiles (128x256 and 256x128 in 8 warps of 64x64, 128x128 in slices of 64) were slower than
// 128x128x32 4w on every layer of the three decoders there, and are not kept
// Then, on compute capability 9.0 alone, the Hopper tiles (TMA and wgmma): 128 rows by 64 (two
// blocks an SM), 96, 128, 192 and 256 channels; then 256 rows (four consumer warpgroups) by 64, 96
// and 128 channels, for the layers of few channels at large frames: on an H100 Wan's 96-channel
// convs at 480x832 ran at 215 TFLOP/s on 128x96, bound by L2 (63% of its throughput, 30% of the
// tensor pipe's): 256 rows read each weight slice once for twice the pixels, a fifth fewer bytes
// from L2 per multiply there (tests/bench/RESULTS-cuda.md)
#define VAE_GPU_CONV_WGMMA(tn, T)                                                                               \
    VAE_GPU_CONV90("wgmma-" tn " 128x64", T, 128, 64, 2), VAE_GPU_CONV90("wgmma-" tn " 128x96", T, 128, 96, 1),  \
    VAE_GPU_CONV90("wgmma-" tn " 128x128", T, 128, 128, 1), VAE_GPU_CONV90("wgmma-" tn " 128x192", T, 128, 192, 1), \
    VAE_GPU_CONV90("wgmma-" tn " 128x256", T, 128, 256, 1), VAE_GPU_CONV90("wgmma-" tn " 256x64", T, 256, 64, 1),  \
    VAE_GPU_CONV90("wgmma-" tn " 256x96", T, 256, 96, 1), VAE_GPU_CONV90("wgmma-" tn " 256x128", T, 256, 128, 1)
static const vae_gpu_conv_variant vae_gpu_conv_fp16_variants[] = {
    VAE_GPU_CONV_MMA16("f16", __half, 32),
    VAE_GPU_CONV_VARIANT("mma-f16 128x16x32", __half, 128, 16, 32, 2, 1, 4, true, 32),
    VAE_GPU_CONV_EXACT("f16", __half, 32),
    VAE_GPU_CONV_NARROW("narrow-f16 16x32", __half),
    VAE_GPU_CONV_WGMMA("f16", __half),
};
static const vae_gpu_conv_variant vae_gpu_conv_bf16_variants[] = {
    VAE_GPU_CONV_MMA16("bf16", __nv_bfloat16, 32),
    VAE_GPU_CONV_VARIANT("mma-bf16 128x16x32", __nv_bfloat16, 128, 16, 32, 2, 1, 4, true, 32),
    VAE_GPU_CONV_EXACT("bf16", __nv_bfloat16, 32),
    VAE_GPU_CONV_NARROW("narrow-bf16 16x32", __nv_bfloat16),
    VAE_GPU_CONV_WGMMA("bf16", __nv_bfloat16),
};
static const vae_gpu_conv_variant vae_gpu_conv_tf32_variants[] = {
    VAE_GPU_CONV_VARIANT("mma-tf32 128x128x16 8w", float, 128, 128, 16, 2, 4, 2, true, 32),
    VAE_GPU_CONV_VARIANT("mma-tf32 128x128x16 4w", float, 128, 128, 16, 2, 2, 2, true, 32),
    VAE_GPU_CONV_VARIANT("mma-tf32 128x64x16", float, 128, 64, 16, 2, 2, 4, true, 32),
    VAE_GPU_CONV_VARIANT("mma-tf32 64x64x16", float, 64, 64, 16, 2, 2, 4, true, 32),
    VAE_GPU_CONV_NARROW("narrow-tf32 16x32", float),
};
#endif

// the variants of precision p (n of them) on a device of warp width `warp`, or NULL
static const vae_gpu_conv_variant * vae_gpu_conv_table(enum vae_precision p, int warp, int * n) {
#define VAE_GPU_CONV_TABLE(t) (*n = (int) (sizeof(t) / sizeof(t[0])), t)
    switch (p) {
        case VAE_PRECISION_FP32: return VAE_GPU_CONV_TABLE(vae_gpu_conv_fp32_variants);
#if defined(VAE_GPU_AMD)
        case VAE_PRECISION_FP16:
            return warp == 64 ? VAE_GPU_CONV_TABLE(vae_gpu_conv_fp16_w64_variants)
                              : VAE_GPU_CONV_TABLE(vae_gpu_conv_fp16_variants);
        case VAE_PRECISION_BF16:
            return warp == 64 ? VAE_GPU_CONV_TABLE(vae_gpu_conv_bf16_w64_variants)
                              : VAE_GPU_CONV_TABLE(vae_gpu_conv_bf16_variants);
#else
        case VAE_PRECISION_TF32: return (void) warp, VAE_GPU_CONV_TABLE(vae_gpu_conv_tf32_variants);
        case VAE_PRECISION_FP16: return VAE_GPU_CONV_TABLE(vae_gpu_conv_fp16_variants);
        case VAE_PRECISION_BF16: return VAE_GPU_CONV_TABLE(vae_gpu_conv_bf16_variants);
#endif
        default:                 return *n = 0, nullptr;
    }
#undef VAE_GPU_CONV_TABLE
}

// ---- packing -----------------------------------------------------------------------------------------

// the 3x3 taps [lo, hi] that tap d of a phase's 2x2 kernel sums, per axis: output phase 0 reads
// input offsets -1 (3x3 tap 0) and 0 (taps 1, 2); phase 1 reads 0 (taps 0, 1) and +1 (tap 2)
// (indexed [phase * 2 + d])
static const int vae_gpu_conv_fold_lo[4] = { 0, 1, 0, 2 };
static const int vae_gpu_conv_fold_hi[4] = { 0, 2, 1, 2 };

static inline void vae_gpu_conv_put(float * dst, size_t i, float v) { dst[i] = v; }
static inline void vae_gpu_conv_put(__half * dst, size_t i, float v) { dst[i] = __float2half_rn(v); }
static inline void vae_gpu_conv_put(__nv_bfloat16 * dst, size_t i, float v) { dst[i] = __float2bfloat16_rn(v); }

// tap (ky, kx) of the GEMM's ks x ks kernel from the model's k x k kernel w3: the same tap, or
// for `up` the sum of the 3x3 taps it stands for in phase ph
static float vae_gpu_conv_tap_weight(const float * w3, int k, bool up, int ph, int ky, int kx) {
    if (!up) {
        return w3[ky * k + kx];
    }
    const int y = (ph >> 1) * 2 + ky, x = (ph & 1) * 2 + kx;
    float     v = 0.0f;
    for (int dy = vae_gpu_conv_fold_lo[y]; dy <= vae_gpu_conv_fold_hi[y]; dy++) {
        for (int dx = vae_gpu_conv_fold_lo[x]; dx <= vae_gpu_conv_fold_hi[x]; dx++) {
            v += w3[dy * 3 + dx];
        }
    }
    return v;
}

// dst [phase][K = (j, ky, kx, cin_p)][cout_p]: a K-row of a tile is one contiguous run of output
// channels, loaded in 16-byte vectors; padding channels stay zero
template <typename T>
static void vae_gpu_conv_pack_t(const float * w, int cout, int cin, int k, int kt, bool up, T * dst) {
    const int    cin_p = vae_gpu_cpad(cin), cout_p = vae_gpu_cpad(cout), ks = up ? 2 : k;
    const size_t K     = (size_t) kt * ks * ks * cin_p;
    memset((void *) dst, 0, vae_gpu_conv_packed_count(cout, cin, k, kt, up) * sizeof(T));
    for (int ph = 0; ph < (up ? 4 : 1); ph++) {
        for (int o = 0; o < cout; o++) {
            for (int i = 0; i < cin; i++) {
                for (int j = 0; j < kt; j++) {
                    const float * w3 = w + (((size_t) o * cin + i) * kt + j) * k * k;
                    for (int ky = 0; ky < ks; ky++) {
                        for (int kx = 0; kx < ks; kx++) {
                            const size_t r = ph * K + vae_gpu_conv_krow(j, ky, kx, i, ks, cin_p);
                            vae_gpu_conv_put(dst, r * cout_p + o, vae_gpu_conv_tap_weight(w3, k, up, ph, ky, kx));
                        }
                    }
                }
            }
        }
    }
}

// ---- entry points ------------------------------------------------------------------------------------

extern "C" size_t vae_gpu_conv_packed_count(int cout, int cin, int k, int kt, bool up) {
    const size_t ks = up ? 2 : (size_t) k;
    return (up ? 4 : 1) * (size_t) kt * ks * ks * vae_gpu_cpad(cin) * vae_gpu_cpad(cout);
}

extern "C" void vae_gpu_conv_pack(const float * w, int cout, int cin, int k, int kt, bool up, enum vae_precision p,
                                  void * dst) {
    VAE_GPU_DISPATCH(p, vae_gpu_conv_pack_t(w, cout, cin, k, kt, up, (T *) dst));
}

extern "C" int vae_gpu_conv_variants(enum vae_precision p, int cc) {
    int                          n = 0;
    const vae_gpu_conv_variant * t = vae_gpu_conv_table(p, 32, &n);   // (as many in waves of 64)
#if defined(VAE_GPU_AMD)
    (void) cc, (void) t;   // every AMD target with a matrix path has bf16
    return n;
#else
    if ((p == VAE_PRECISION_TF32 || p == VAE_PRECISION_BF16) && cc < 80) {
        return 0;
    }
#if defined(VAE_GPU_CONV_HOPPER) || defined(VAE_GPU_EMU)
    const bool hopper = cc == 90;   // (sm_90a code runs on compute capability 9.0 alone)
#else
    const bool hopper = false;      // (gpu_archs without 90a)
#endif
    while (!hopper && n > 0 && t[n - 1].tma) {
        n--;
    }
    return n;
#endif
}

extern "C" const char * vae_gpu_conv_variant_name(enum vae_precision p, int variant) {
    int                          n = 0;
    const vae_gpu_conv_variant * t = vae_gpu_conv_table(p, 32, &n);
    return variant >= 0 && variant < n ? t[variant].name : nullptr;
}

extern "C" double vae_gpu_conv_variant_work(const struct vae_gpu_conv_args * a, enum vae_precision p, int variant) {
    int                          n = 0;
    const vae_gpu_conv_variant * t = vae_gpu_conv_table(p, a->warp, &n);
    if (variant < 0 || variant >= n) {
        return 0.0;
    }
    const vae_gpu_conv_variant & v = t[variant];
    const double                 M = (double) a->x.n * a->x.h * a->x.w;   // pixels of a phase
    if (v.bn == 0) {
        const bool fits = !a->up && a->k <= VAE_GPU_NARROW_K && a->y.c <= 16 && !a->norm && a->gn_groups <= 0;
        return fits ? (double) a->x.n * std::ceil((double) a->x.h / VAE_GPU_NARROW_TH) *
                          std::ceil((double) a->x.w / VAE_GPU_NARROW_TW) * v.bm * a->y.c : 0.0;
    }
#if defined(VAE_GPU_AMD)
    if (a->norm) {
        return 0.0;   // (no norm in the epilogue on AMD: see vae_gpu_conv_tile)
    }
#endif
    if (v.tma && (a->replicate || a->reflect)) {
        return 0.0;   // (TMA fills zeros outside the frame)
    }
    if (a->norm && a->y.cp > v.bn) {
        return 0.0;   // (the norm sums a pixel's channels in one tile)
    }
    if (a->gn_groups > 0 && a->gn_per_frame && a->x.n > 1 && (long long) a->x.h * a->x.w % v.bm) {
        return 0.0;   // (a tile's partials belong to one frame)
    }
    return std::ceil(M / v.bm) * v.bm * (a->up ? 4 : 1) * std::ceil((double) a->y.cp / v.bn) * v.bn;
}

extern "C" void vae_gpu_conv_variant_tile(enum vae_precision p, int variant, int * bm, int * bn, int * warps) {
    int                          n = 0;
    const vae_gpu_conv_variant * t = vae_gpu_conv_table(p, 32, &n);
    const bool                   v = variant >= 0 && variant < n;
    *bm                            = v ? t[variant].bm : 0;
    *bn                            = v ? t[variant].bn : 0;
    *warps                         = v ? t[variant].warps : 0;
}

// GEMM rows per frame of a's GroupNorm statistics, and the partials (slots) per (frame, group) on
// variant v: one per tile of the frame
static int vae_gpu_conv_gn_rows(const struct vae_gpu_conv_args * a) {
    return (a->gn_per_frame ? 1 : a->x.n) * a->x.h * a->x.w;
}

static size_t vae_gpu_conv_gn_slots(const struct vae_gpu_conv_args * a, const vae_gpu_conv_variant & v) {
    const size_t rows = (size_t) vae_gpu_conv_gn_rows(a);
    return (rows + v.bm - 1) / v.bm * (a->up ? 4 : 1) * ((a->y.cp + v.bn - 1) / v.bn);
}

static size_t vae_gpu_conv_gn_bytes(const struct vae_gpu_conv_args * a, const vae_gpu_conv_variant & v) {
    const size_t frames = (size_t) a->x.n * a->x.h * a->x.w / vae_gpu_conv_gn_rows(a);
    return 3 * frames * a->gn_groups * vae_gpu_conv_gn_slots(a, v) * sizeof(float);
}

extern "C" size_t vae_gpu_conv_gn_scratch(const struct vae_gpu_conv_args * a, enum vae_precision p) {
    int                          n = 0;
    const vae_gpu_conv_variant * t = vae_gpu_conv_table(p, a->warp, &n);
    size_t                       most = 0;
    const bool                   shape = a->x.n > 0 && a->x.h > 0 && a->x.w > 0 && a->y.cp > 0;
    for (int v = 0; v < n && v < vae_gpu_conv_variants(p, a->cc) && a->gn_groups > 0 && shape; v++) {
        if (vae_gpu_conv_variant_work(a, p, v) > 0.0 && vae_gpu_conv_gn_bytes(a, t[v]) > most) {
            most = vae_gpu_conv_gn_bytes(a, t[v]);
        }
    }
    return most;
}

static bool vae_gpu_conv_aligned(const void * p) {
    return (uintptr_t) p % 16 == 0;
}

extern "C" cudaError_t vae_gpu_conv(const struct vae_gpu_conv_args * a, enum vae_precision p, cudaStream_t s) {
    if (!a) {
        return cudaErrorInvalidValue;
    }
    const struct vae_gpu_act & x = a->x, &y = a->y;
    const long long            sc = a->up ? 2 : 1, ks = a->up ? 2 : a->k;
    const bool shape = x.n > 0 && x.h > 0 && x.w > 0 && x.c > 0 && y.c > 0 && x.cp == vae_gpu_cpad(x.c) &&
                       y.cp == vae_gpu_cpad(y.c) && y.n == x.n && y.h == sc * x.h && y.w == sc * x.w;
    const bool kernel = a->k > 0 && a->k % 2 == 1 && a->kt >= 1 && (!a->up || (a->k == 3 && a->kt == 1)) &&
                        (a->kt > 1) == (a->hist != nullptr) && (!a->reflect || (a->k == 3 && x.h > 1 && x.w > 1));
    // y apart from x and the history (every block reads a window of them), the residual y or apart;
    // the norm's own output apart from all of them
    const size_t hist_bytes = (size_t) (a->kt - 1) * x.h * x.w * x.cp * vae_gpu_elem_bytes(p);
    const size_t y_bytes    = vae_gpu_act_bytes(y, p);
    const void * ny         = a->norm ? a->norm_y : nullptr;
    const bool   apart = vae_gpu_precision_ok(p) && !vae_gpu_act_overlap(x, y, p) &&
                       !vae_gpu_bytes_overlap(a->hist, hist_bytes, y.data, y_bytes) &&
                       vae_gpu_in_place_ok(a->residual, y, p) &&
                       (!ny || (!vae_gpu_bytes_overlap(ny, y_bytes, x.data, vae_gpu_act_bytes(x, p)) &&
                                !vae_gpu_bytes_overlap(ny, y_bytes, a->hist, hist_bytes) &&
                                !vae_gpu_bytes_overlap(ny, y_bytes, y.data, y_bytes) &&
                                !vae_gpu_bytes_overlap(ny, y_bytes, a->residual, a->residual ? y_bytes : 0)));
    const bool ptrs = x.data && y.data && a->weights && apart && vae_gpu_conv_aligned(x.data) &&
                      vae_gpu_conv_aligned(y.data) && vae_gpu_conv_aligned(a->hist) &&
                      vae_gpu_conv_aligned(a->weights) && vae_gpu_conv_aligned(a->bias) &&
                      vae_gpu_conv_aligned(a->residual) && vae_gpu_conv_aligned(ny);
    // GroupNorm statistics: groups of y's channels; the partials apart from every buffer the conv reads
    // or writes, the statistics from them
    const bool gn = a->gn_groups > 0;
    int        nv = 0;
    const vae_gpu_conv_variant * table = vae_gpu_conv_table(p, a->warp, &nv);
    const bool valid_variant = table && a->variant >= 0 && a->variant < vae_gpu_conv_variants(p, a->cc);
    const size_t part_bytes = gn && valid_variant && shape ? vae_gpu_conv_gn_bytes(a, table[a->variant]) : 0;
    const size_t stat_bytes = gn && shape ? (size_t) x.n * 2 * a->gn_groups * sizeof(float) : 0;
    const bool gn_ok = !gn || (!a->norm && y.c % a->gn_groups == 0 && a->gn_eps >= 0.0f && std::isfinite(a->gn_eps) &&
                               a->gn_part && a->gn_stats && vae_gpu_conv_aligned(a->gn_part) &&
                               !vae_gpu_bytes_overlap(a->gn_part, part_bytes, x.data, vae_gpu_act_bytes(x, p)) &&
                               !vae_gpu_bytes_overlap(a->gn_part, part_bytes, a->hist, hist_bytes) &&
                               !vae_gpu_bytes_overlap(a->gn_part, part_bytes, y.data, y_bytes) &&
                               !vae_gpu_bytes_overlap(a->gn_part, part_bytes, a->residual, a->residual ? y_bytes : 0) &&
                               !vae_gpu_bytes_overlap(a->gn_part, part_bytes, a->gn_stats, stat_bytes));
    // int row, K and pixel numbers, with a tile of room
    const long long room = INT_MAX - 256;
    if (!shape || !kernel || !ptrs || !gn_ok || (long long) x.n * x.h * x.w > room ||
        (long long) (a->kt - 1) * x.h * x.w > room || (long long) a->kt * ks * ks * x.cp > room) {
        return cudaErrorInvalidValue;
    }
    if ((a->warp != 32 && a->warp != 64) || a->variant < 0 || a->variant >= vae_gpu_conv_variants(p, a->cc) ||
        ((a->replicate || a->reflect) && a->up) || (a->replicate && a->reflect) ||
        (a->norm && (a->norm_form < 0 || a->norm_form > 1 || !(a->norm_eps >= 0.0f))) ||
        vae_gpu_conv_variant_work(a, p, a->variant) <= 0.0) {
        return cudaErrorInvalidValue;
    }
    vae_gpu_conv_params q = {};
    q.x      = x.data;
    q.hist   = a->hist;
    q.wt     = a->weights;
    q.bias   = a->bias;
    q.res    = a->residual;
    q.y      = y.data;
    q.h      = x.h;
    q.w      = x.w;
    q.cin_p  = x.cp;
    q.cout_p = y.cp;
    q.cout   = y.c;
    q.ks     = (int) ks;
    q.kt     = a->kt;
    q.pad    = a->k / 2;
    q.up     = a->up;
    q.edge   = a->replicate ? 1 : a->reflect ? 2 : 0;
    q.M      = x.n * x.h * x.w;
    q.K      = a->kt * (int) (ks * ks) * x.cp;
    q.act    = a->act;
    q.nform  = a->norm ? a->norm_form : -1;
    q.neps   = a->norm_eps;
    q.ngamma = a->norm_gamma;
    q.nbeta  = a->norm_beta;
    q.nact   = a->norm_act;
    q.ny     = a->norm ? a->norm_y : nullptr;
    if (gn) {
        q.gnpart   = a->gn_part;
        q.gngroups = a->gn_groups;
        q.gnrows   = vae_gpu_conv_gn_rows(a);
        q.gnslots  = (int) vae_gpu_conv_gn_slots(a, table[a->variant]);
    }
    cudaError_t e = table[a->variant].launch(q, s);
    if (e == cudaSuccess && gn) {
        e = vae_gpu_group_norm_combine(a->gn_part, (size_t) (q.M / q.gnrows) * a->gn_groups, (size_t) q.gnslots,
                                       a->gn_groups, a->gn_eps, a->gn_stats, s);
    }
    return e;
}

extern "C" cudaError_t vae_gpu_conv_setup(enum vae_precision p, int cc, int warp) {
    int                          n = 0;
    const vae_gpu_conv_variant * t = vae_gpu_conv_table(p, warp, &n);
    const int                    m = vae_gpu_conv_variants(p, cc);   // (those the device runs)
    cudaError_t                  e = cudaSuccess;
    for (int v = 0; v < n && v < m && e == cudaSuccess; v++) {
        e = t[v].setup();
    }
    return e;
}
