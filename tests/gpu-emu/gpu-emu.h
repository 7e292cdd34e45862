// The CUDA device side as the emulator provides it, for kernels/*.cu compiled by the host C++
// compiler (tests/gpu-emu/README.md). kernels/vae-gpu.h includes this header instead of the
// toolkit's device headers when VAE_GPU_EMU is defined. Every thread of a block is a fiber
// (gpu-emu.cc runs them one block at a time); the built-in variables, barriers, warp
// collectives, the 16-bit float types, the PTX wrappers of vae-gpu-ptx.cuh and the wmma fragments
// are defined here on top of a few entry points of gpu-emu.cc. Warp collectives exchange each
// lane's operands through the warp and compute what the instruction's fragment table says each
// lane receives. Source positions are passed along so that a failure names the call site.
// The device is an NVIDIA one (__CUDA_ARCH__) or, with VAE_GPU_EMU_GFX, an AMD one (AMD mode,
// README.md here): its wave size, its matrix instruction (vae_gpu_amd_mma) and no PTX.

#pragma once

#include <cuda_runtime_api.h>

#include "gpu-emu-counts.h"

#include <cmath>
#include <math.h>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

// ---- the emulated device ----------------------------------------------------------------------
// VAE_GPU_EMU_GFX=n: the AMD GPU gfx<n> (90: gfx90a), else the NVIDIA one of __CUDA_ARCH__.
// VAE_EMU_WARP: its wave size; vae_emu_mask_t: the lane masks of the warp collectives (HIP's are
// 64-bit on every AMD target, CUDA's 32-bit). VAE_EMU_AMD_ISA: the AMD matrix instruction family,
// 11 (RDNA3/3.5 WMMA), 12 (RDNA4 WMMA) or 9 (CDNA2/3 MFMA).
#if defined(VAE_GPU_EMU_GFX)
#if defined(__CUDA_ARCH__)
#error "gpu-emu: VAE_GPU_EMU_GFX (an AMD device) and __CUDA_ARCH__ (an NVIDIA one) are both defined"
#endif
#define VAE_EMU_AMD 1
#if VAE_GPU_EMU_GFX == 1100 || VAE_GPU_EMU_GFX == 1151
#define VAE_EMU_AMD_ISA 11
#define VAE_EMU_WARP    32
#elif VAE_GPU_EMU_GFX == 1200 || VAE_GPU_EMU_GFX == 1201
#define VAE_EMU_AMD_ISA 12
#define VAE_EMU_WARP    32
#elif VAE_GPU_EMU_GFX == 942 || VAE_GPU_EMU_GFX == 90
#define VAE_EMU_AMD_ISA 9
#define VAE_EMU_WARP    64
#else
#error "gpu-emu: VAE_GPU_EMU_GFX must be 1100, 1151, 1200, 1201, 942 or 90 (gfx90a)"
#endif
typedef unsigned long long vae_emu_mask_t;
#else
#define VAE_EMU_AMD  0
#define VAE_EMU_WARP 32
typedef unsigned vae_emu_mask_t;
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__        inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n)           alignas(n)

// ---- vector types and built-in variables -------------------------------------------------------

struct uint3 {
    unsigned x, y, z;
};

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// the vector types load and store as one access of 8 or 16 bytes, as on the device: a plain
// struct's copy gcc would split into its fields or turn into a memcpy call, which the counters and
// the race checker of the instrumented builds (README.md here) would miscount or not see
template <int B> static inline void vae_emu_vec_copy(void * d, const void * s) {
    typedef unsigned v __attribute__((vector_size(B)));
    *(volatile v *) d = *(const volatile v *) s;
}
#define VAE_EMU_VEC2(name, T)                                                           \
    struct alignas(8) name {                                                            \
        T x, y;                                                                         \
        name() = default;                                                               \
        constexpr name(T a, T b) : x(a), y(b) {}                                        \
        name(const name & o) { vae_emu_vec_copy<8>(this, &o); }                         \
        name & operator=(const name & o) { vae_emu_vec_copy<8>(this, &o); return *this; } \
    }
#define VAE_EMU_VEC4(name, T)                                                             \
    struct alignas(16) name {                                                             \
        T x, y, z, w;                                                                     \
        name() = default;                                                                 \
        constexpr name(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}                    \
        name(const name & o) { vae_emu_vec_copy<16>(this, &o); }                          \
        name & operator=(const name & o) { vae_emu_vec_copy<16>(this, &o); return *this; } \
    }
// (their copy is user-provided, so gcc warns at a memcpy of their bytes, which the kernels do and
// which is as right for them as for the device's types)
#pragma GCC diagnostic ignored "-Wclass-memaccess"
VAE_EMU_VEC2(float2, float);
VAE_EMU_VEC4(float4, float);
VAE_EMU_VEC2(uint2, unsigned);
VAE_EMU_VEC4(uint4, unsigned);
VAE_EMU_VEC4(int4, int);
static inline float2 make_float2(float x, float y) { return { x, y }; }
static inline float4 make_float4(float x, float y, float z, float w) { return { x, y, z, w }; }
static inline uint4  make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return { x, y, z, w }; }

// what a fiber sees of itself and its block
struct vae_emu_where {
    uint3 tid, bid, bdim, gdim;
    int   lane;
};
extern "C" const struct vae_emu_where * vae_emu_now;

#define threadIdx (vae_emu_now->tid)
#define blockIdx  (vae_emu_now->bid)
#define blockDim  (vae_emu_now->bdim)
#define gridDim   (vae_emu_now->gdim)

// ---- entry points of gpu-emu.cc ----------------------------------------------------------------

extern "C" {
[[noreturn]] void vae_emu_fail(const char * file, int line, const char * fmt, ...)
    __attribute__((format(printf, 3, 4)));
void     vae_emu_syncthreads(const char * file, int line);
// __syncwarp: the warp barrier that orders memory between its lanes (the other collectives converge
// the warp and order none, as in CUDA's memory model)
void     vae_emu_syncwarp(const char * file, int line, vae_emu_mask_t mask = ~(vae_emu_mask_t) 0);
// every live lane of the warp deposits `bytes` (<= 64); returns the VAE_EMU_WARP deposits, lane
// l's at 64 l, readable until this lane's next warp collective
const unsigned char * vae_emu_warp_exchange(vae_emu_mask_t mask, const void * mine, size_t bytes, const char * file,
                                            int line);
void *   vae_emu_dyn_smem(const char * name);
void *   vae_emu_static_smem(const void * key, const char * name, size_t bytes, size_t align);
unsigned vae_emu_cvta_shared(const void * p, const char * file, int line);
void *   vae_emu_shared_at(unsigned addr, size_t bytes, const char * file, int line);
// an asynchronous copy: src read now, dst (shared) written when its group is waited for
void     vae_emu_async_copy(void * dst, const void * src, size_t nread, size_t n, const char * file, int line);
void     vae_emu_async_commit(void);
void     vae_emu_async_wait(int pending);
void   vae_emu_count_mma(int kind);                   // lane 0 of the warp: kind as vae_emu_counts.mma
void   vae_emu_count_wmma(void);                      // lane 0
void   vae_emu_count_ldsm(const unsigned rows[32]);   // lane 0: the 32 lanes' row addresses
void   vae_emu_count_st16(unsigned addr);             // every lane: its 16 bytes' shared address
void   vae_emu_count_access(const void * p, size_t bytes, bool write, const void * pc);   // gpu-emu-tsan.cc
// the phases of the device's shared memory (gpu-emu.cc): how many a warp's access of `bytes` takes,
// lane i of phase q, and the wavefronts of one instruction at the shared addresses at[] (0: none)
int      vae_emu_shared_phases(unsigned bytes);
int      vae_emu_shared_phase_lane(unsigned bytes, int q, int i);
unsigned vae_emu_shared_wavefronts(const uintptr_t * at, unsigned bytes, unsigned * ideal);
// the race checker (gpu-emu.cc), on where the kernels are compiled with -fsanitize=thread
// (gpu-emu-tsan.cc): an access of `bytes` at p by the current thread, made by the code at pc
void     vae_emu_race_enable(void);
void     vae_emu_race_access(const void * p, size_t bytes, bool write, const void * pc);
extern uintptr_t vae_emu_race_lo, vae_emu_race_span;   // the shared-memory arena while it is on
}

#define __syncthreads()    vae_emu_syncthreads(__FILE__, __LINE__)
#define __syncwarp(...)    vae_emu_syncwarp(__FILE__, __LINE__ __VA_OPT__(,) __VA_ARGS__)
#define __trap()           vae_emu_fail(__FILE__, __LINE__, "__trap()")

// lane l's deposit of an exchange
template <typename T> static inline const T & vae_emu_lane(const unsigned char * all, int l) {
    return *(const T *) (all + 64 * l);
}

// the lane mask's type: HIP's *_sync functions refuse one that is not 64-bit on every AMD target
// (a static_assert in amd_warp_sync_functions.h), as a 32-bit 0xffffffff would leave half a wave64 out
static const vae_emu_mask_t vae_emu_wave_lanes = (vae_emu_mask_t) (VAE_EMU_WARP == 64 ? ~0ull : 0xffffffffull);

template <typename M> static inline vae_emu_mask_t vae_emu_mask(M mask) {
    static_assert(!VAE_EMU_AMD || (std::is_integral<M>::value && sizeof(M) == 8),
                  "gpu-emu (AMD mode): the mask of a *_sync function must be a 64-bit integer, as in HIP");
    return (vae_emu_mask_t) mask;
}

template <typename M, typename T> static inline T vae_emu_shfl_xor(const char * file, int line, M mask, T v, int lm,
                                                                   int width = VAE_EMU_WARP) {
    static_assert(sizeof(T) <= 64, "shuffle of a large type");
    const unsigned char * all  = vae_emu_warp_exchange(vae_emu_mask(mask), &v, sizeof(T), file, line);
    const int             lane = vae_emu_now->lane, src = lane ^ lm;
    return src / width == lane / width ? vae_emu_lane<T>(all, src) : v;
}
#define __shfl_xor_sync(...) vae_emu_shfl_xor(__FILE__, __LINE__, __VA_ARGS__)

template <typename M, typename T> static inline T vae_emu_shfl(const char * file, int line, M mask, T v, int src,
                                                               int width = VAE_EMU_WARP) {
    const unsigned char * all = vae_emu_warp_exchange(vae_emu_mask(mask), &v, sizeof(T), file, line);
    return vae_emu_lane<T>(all, vae_emu_now->lane / width * width + src % width);
}
#define __shfl_sync(...) vae_emu_shfl(__FILE__, __LINE__, __VA_ARGS__)

template <typename M> static inline vae_emu_mask_t vae_emu_ballot(const char * file, int line, M mask, int p) {
    const vae_emu_mask_t  m   = vae_emu_mask(mask);
    const unsigned char * all = vae_emu_warp_exchange(m, &p, sizeof(p), file, line);
    vae_emu_mask_t        b   = 0;
    for (int l = 0; l < VAE_EMU_WARP; l++) {
        b |= (m >> l & 1) && vae_emu_lane<int>(all, l) ? (vae_emu_mask_t) 1 << l : 0;
    }
    return b;
}
#define __ballot_sync(...) vae_emu_ballot(__FILE__, __LINE__, __VA_ARGS__)

// elect.sync (sm_90): true in one lane of the mask (every lane of the warp calls it, as every
// collective here). The PTX ISA does not say which; here the lowest lane in blocks of even x + y,
// the highest in the others, so that a kernel that counts on lane 0 fails in half of its blocks
template <typename M> static inline bool vae_emu_elect(const char * file, int line, M mask) {
    const vae_emu_mask_t m = vae_emu_ballot(file, line, vae_emu_wave_lanes,
                                            (int) (vae_emu_mask(mask) >> vae_emu_now->lane & 1));
    int                  l = 0;
    if ((blockIdx.x + blockIdx.y) % 2 == 0) {
        while (l < VAE_EMU_WARP - 1 && !(m >> l & 1)) {
            l++;
        }
    } else {
        for (int i = 0; i < VAE_EMU_WARP; i++) {
            l = m >> i & 1 ? i : l;
        }
    }
    return vae_emu_now->lane == l;
}
#define __any_sync(m, p)   (vae_emu_ballot(__FILE__, __LINE__, m, p) != 0)
#define __all_sync(m, p)   (vae_emu_ballot(__FILE__, __LINE__, m, p) == (vae_emu_mask(m) & vae_emu_wave_lanes))

// ---- math ----------------------------------------------------------------------------------------

#define __expf(x) expf(x)
// sin and cos of pi x, each rounded once from double (CUDA's are within 1 ulp)
static inline void sincospif(float x, float * s, float * c) {
    *s = (float) sin(M_PI * (double) x);
    *c = (float) cos(M_PI * (double) x);
}
static inline float    __fadd_rn(float a, float b) { return a + b; }
static inline float    __fsub_rn(float a, float b) { return a - b; }
static inline float    __fmul_rn(float a, float b) { return a * b; }
static inline float    __fdiv_rn(float a, float b) { return a / b; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float    __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
// the integer and float min / max of CUDA's device library
#define VAE_EMU_MINMAX(T)                                        \
    static inline T min(T a, T b) { return a < b ? a : b; }     \
    static inline T max(T a, T b) { return a > b ? a : b; }
VAE_EMU_MINMAX(int)
VAE_EMU_MINMAX(unsigned)
VAE_EMU_MINMAX(long)
VAE_EMU_MINMAX(unsigned long)
VAE_EMU_MINMAX(long long)
VAE_EMU_MINMAX(unsigned long long)
#undef VAE_EMU_MINMAX

template <typename T> static inline T __ldg(const T * p) { return *p; }

// ---- 16-bit floats -------------------------------------------------------------------------------

struct __half {
    uint16_t x;
    operator float() const;
};
struct __nv_bfloat16 {
    uint16_t x;
    operator float() const;
};
// by hand, as the library call it would otherwise be dominates the emulated mma's time
static inline float __half2float(__half h) {
    const unsigned s = (unsigned) (h.x & 0x8000u) << 16, e = h.x >> 10 & 0x1fu, m = h.x & 0x3ffu;
    if (e == 0) {   // zero or subnormal: m 2^-24
        const float v = (float) m * 0x1p-24f;
        return s ? -v : v;
    }
    unsigned u = e == 0x1f ? s | 0x7f800000u | m << 13 | (m ? 0x400000u : 0u)   // Inf, NaN (quiet)
                           : s | (e + 112) << 23 | m << 13;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline __half __float2half_rn(float v) {
    const _Float16 f = (_Float16) v;   // round to nearest even
    __half         h;
    memcpy(&h.x, &f, 2);
    return h;
}
inline __half::operator float() const { return __half2float(*this); }
static inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((unsigned) b.x << 16); }
static inline __nv_bfloat16 __float2bfloat16_rn(float v) {
    unsigned u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return { (uint16_t) ((u >> 16) | 0x40) };   // NaN stays NaN
    }
    u += 0x7fffu + ((u >> 16) & 1);
    return { (uint16_t) (u >> 16) };
}

inline __nv_bfloat16::operator float() const { return __bfloat162float(*this); }

// the 16-bit element h (0: low half) of a packed operand word, or the word itself as a tf32 one
static inline float vae_emu_b16(unsigned w, int h, __half) { return __half2float({ (uint16_t) (w >> 16 * h) }); }
static inline float vae_emu_b16(unsigned w, int, float) { return __uint_as_float(w); }
static inline float vae_emu_b16(unsigned w, int h, __nv_bfloat16) {
    return __bfloat162float({ (uint16_t) (w >> 16 * h) });
}

#if !VAE_EMU_AMD   // NVIDIA only: AMD has no cp.async, ldmatrix, mma.sync, nor nvcuda::wmma

// ---- shared memory and asynchronous copies -------------------------------------------------------

#define __cvta_generic_to_shared(p) vae_emu_cvta_shared((const void *) (p), __FILE__, __LINE__)

static inline void vae_emu_pipeline_memcpy_async(const char * file, int line, void * dst, const void * src,
                                                 size_t n, size_t zfill = 0) {
    vae_emu_cvta_shared(dst, file, line);   // a shared destination, or the run stops
    vae_emu_async_copy(dst, src, n - zfill, n, file, line);
}
#define __pipeline_memcpy_async(...) vae_emu_pipeline_memcpy_async(__FILE__, __LINE__, __VA_ARGS__)
#define __pipeline_commit()          vae_emu_async_commit()
#define __pipeline_wait_prior(n)     vae_emu_async_wait(n)

// ---- the PTX wrappers (the nvcc versions, with the instructions, are in kernels/vae-gpu-ptx.cuh) ----

#define VAE_EMU_SM80 (__CUDA_ARCH__ >= 800)

// cp.async.ca/cg 16 bytes (src-size 16 or 0); before sm_80 a plain store
template <bool L1> static inline void vae_gpu_cp16(unsigned dst, const void * src, bool valid) {
    void * d = vae_emu_shared_at(dst, 16, "cp.async", 0);
    vae_emu_count_st16(dst);
    if (VAE_EMU_SM80) {
        vae_emu_async_copy(d, src, valid ? 16 : 0, 16, "cp.async", 0);
    } else {
        uint4 v = { 0, 0, 0, 0 };
        if (valid) {
            memcpy(&v, src, 16);
        }
        memcpy(d, &v, 16);
    }
}

static inline void vae_gpu_cp_commit() {
    if (VAE_EMU_SM80) {
        vae_emu_async_commit();
    }
}

template <int N> static inline void vae_gpu_cp_wait() {
    if (VAE_EMU_SM80) {
        vae_emu_async_wait(N);
    }
}

// ldmatrix .x4 (.trans): lanes 8i .. 8i + 7 give the row addresses of matrix i; lane l receives
// of each matrix the b16 pair (row l / 4, columns 2 (l % 4), + 1), of its transpose with .trans
static inline void vae_emu_ldsm(const char * file, int line, unsigned * r, unsigned a, bool trans) {
    const unsigned char * all = vae_emu_warp_exchange(0xffffffffu, &a, sizeof(a), file, line);
    unsigned              rows[32];
    for (int l = 0; l < 32; l++) {
        rows[l] = vae_emu_lane<unsigned>(all, l);
    }
    const int g = vae_emu_now->lane / 4, t = vae_emu_now->lane % 4;
    if (vae_emu_now->lane == 0) {
        vae_emu_count_ldsm(rows);
    }
    for (int i = 0; i < 4; i++) {
        uint16_t e[2];
        for (int h = 0; h < 2; h++) {
            const int row = trans ? 2 * t + h : g, col = trans ? g : 2 * t + h;
            if (rows[8 * i + row] % 16) {
                vae_emu_fail(file, line, "ldmatrix row address %u of lane %d is not 16-byte aligned",
                             rows[8 * i + row], 8 * i + row);
            }
            memcpy(&e[h], (const char *) vae_emu_shared_at(rows[8 * i + row], 16, file, line) + 2 * col, 2);
        }
        r[i] = e[0] | (unsigned) e[1] << 16;
    }
}
#define vae_gpu_ptx_ldsm(r, a)   vae_emu_ldsm(__FILE__, __LINE__, r, a, false)
#define vae_gpu_ptx_ldsm_t(r, a) vae_emu_ldsm(__FILE__, __LINE__, r, a, true)

// cvt.rna.tf32.f32: 10 mantissa bits, rounded to nearest with ties away from zero
static inline unsigned vae_gpu_ptx_tf32(unsigned x) {
    if (!VAE_EMU_SM80 || (x & 0x7f800000u) == 0x7f800000u) {
        return x;
    }
    return (x + 0x1000u) & 0xffffe000u;
}


// the operands of one lane of an m16n8 mma
struct vae_emu_mma_regs {
    unsigned a[4], b[2];
    float    c[4];
};

// d += a b, m16n8 x k: fragment tables of the PTX ISA (g = lane / 4, t = lane % 4). 16-bit:
// a[i] holds rows g (i even) or g + 8, k 2t + 8 (i / 2) .. + 1; b[j] k 2t + 8j .. + 1 of column g.
// tf32: a[i] row g or g + 8, k t + 4 (i / 2); b[j] k t + 4j of column g; operands must have
// been rounded to tf32 (cvt.rna) beforehand. d: rows g, g + 8, columns 2t, 2t + 1.
template <typename T>
static inline void vae_emu_mma(const char * file, int line, float * d, const unsigned * a, const unsigned * b, int K) {
    constexpr bool   TF32 = std::is_same<T, float>::value;
    // the operand registers this shape has: m16n8k8 f16 (sm_75) holds 2 of A and 1 of B
    const int        na = K == 16 || TF32 ? 4 : 2, nb = K == 16 || TF32 ? 2 : 1;
    vae_emu_mma_regs mine = {};
    memcpy(mine.a, a, na * sizeof(unsigned));
    memcpy(mine.b, b, nb * sizeof(unsigned));
    memcpy(mine.c, d, sizeof(mine.c));
    const unsigned char * all = vae_emu_warp_exchange(0xffffffffu, &mine, sizeof(mine), file, line);
    if (vae_emu_now->lane == 0) {
        vae_emu_count_mma(K == 16 ? (std::is_same<T, __half>::value ? 0 : 1) : TF32 ? 3 : 2);
    }
    // only what this lane's d needs: rows g, g + 8 of A (from lanes 4g + u) and columns 2t, 2t + 1
    // of B (from lanes 4 (2t + c) + u); every operand register is read by some lane
    const int g = vae_emu_now->lane / 4, t = vae_emu_now->lane % 4;
    float     A[2][16], B[2][16];   // [row half][k], [column][k]
    for (int u = 0; u < 4; u++) {
        for (int i = 0; i < na; i++) {
            const int      l = 4 * g + u, kh = i / 2;
            const unsigned r = vae_emu_lane<vae_emu_mma_regs>(all, l).a[i];
            if (TF32) {
                if (r & 0x1fffu) {
                    vae_emu_fail(file, line, "mma tf32: lane %d's a[%d] = 0x%08x is not rounded to tf32 (cvt.rna)", l,
                                 i, r);
                }
                A[i % 2][u + 4 * kh] = __uint_as_float(r);
            } else {
                for (int h = 0; h < 2; h++) {
                    A[i % 2][2 * u + 8 * kh + h] = vae_emu_b16(r, h, T());
                }
            }
        }
        for (int j = 0; j < nb; j++) {
            for (int c = 0; c < 2; c++) {
                const int      l = 4 * (2 * t + c) + u;
                const unsigned r = vae_emu_lane<vae_emu_mma_regs>(all, l).b[j];
                if (TF32) {
                    if (r & 0x1fffu) {
                        vae_emu_fail(file, line,
                                     "mma tf32: lane %d's b[%d] = 0x%08x is not rounded to tf32 (cvt.rna)", l, j, r);
                    }
                    B[c][u + 4 * j] = __uint_as_float(r);
                } else {
                    for (int h = 0; h < 2; h++) {
                        B[c][2 * u + 8 * j + h] = vae_emu_b16(r, h, T());
                    }
                }
            }
        }
    }
    for (int e = 0; e < 4; e++) {
        float s = d[e];
        for (int k = 0; k < K; k++) {
            s += A[e / 2][k] * B[e % 2][k];
        }
        d[e] = s;
    }
}

static inline void vae_emu_mma_at(const char * file, int line, float * d, const unsigned * a, const unsigned * b,
                                  __half) {
    if (VAE_EMU_SM80) {
        vae_emu_mma<__half>(file, line, d, a, b, 16);
    } else {   // sm_75: m16n8k8 twice, k 0..7 (a[0..1], b[0]) then 8..15
        for (int h = 0; h < 2; h++) {
            vae_emu_mma<__half>(file, line, d, a + 2 * h, b + h, 8);
        }
    }
}
static inline void vae_emu_mma_at(const char * file, int line, float * d, const unsigned * a, const unsigned * b,
                                  __nv_bfloat16) {
    if (!VAE_EMU_SM80) {
        vae_emu_fail(file, line, "mma bf16 before sm_80");
    }
    vae_emu_mma<__nv_bfloat16>(file, line, d, a, b, 16);
}
static inline void vae_emu_mma_at(const char * file, int line, float * d, const unsigned * a, const unsigned * b,
                                  float) {
    if (!VAE_EMU_SM80) {
        vae_emu_fail(file, line, "mma tf32 before sm_80");
    }
    vae_emu_mma<float>(file, line, d, a, b, 8);
}
#define vae_gpu_ptx_mma(d, a, b, t) vae_emu_mma_at(__FILE__, __LINE__, d, a, b, t)

// ---- wgmma (sm_90a): warpgroup matrix multiply from shared memory --------------------------------
// From the PTX ISA (9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"); checked by
// test-gmma against CuTe's layouts (gmma-layouts.txt). A matrix descriptor ("Matrix Descriptor
// Format"): bits 0-13 the start address, 16-29 the leading dimension byte offset (LBO), 32-45 the
// stride dimension byte offset (SBO), each in 16-byte units; 49-51 the base offset; 62-63 the
// swizzle (0 none, 1 128-byte, 2 64-byte, 3 32-byte). The layout ("Shared Memory Matrix Layout"),
// in 16-byte chunks of V = 16 / elem elements: a swizzle atom of S bytes a row (16 without a
// swizzle) is 8 rows of S contiguous bytes, its rows along the operand's leading dimension.
// K-major (imm-trans 0): atom row i % 8 is operand row i (of M for A, N for B), its chunk k / V;
// atoms follow along M/N (every 8 rows) at SBO, and without a swizzle the chunks along K at LBO.
// MN-major: atom row k % 8 is k, its chunk i / V; atoms follow along K (every 8 k) at SBO and along
// M/N (every S / 16 chunks) at LBO; without a swizzle the two offsets trade places (LBO along K, SBO
// along M/N). A swizzle then XORs the address's 16-byte chunk bits (from bit 4, log2(S / 16) of
// them) with the bits above the 128-byte line (from bit 7), of the absolute shared address.
// Returns the address of element (i, k) of one instruction's operand; a base offset other than 0
// (an atom not aligned to its pattern) is not emulated and stops the run.
static inline unsigned vae_emu_gmma_addr(uint64_t desc, bool mn_major, unsigned elem, int i, int k, const char * file,
                                         int line) {
    const unsigned start = (unsigned) (desc & 0x3fff) << 4, lbo = (unsigned) (desc >> 16 & 0x3fff) << 4;
    const unsigned sbo = (unsigned) (desc >> 32 & 0x3fff) << 4, mode = (unsigned) (desc >> 62 & 3);
    if (desc >> 49 & 7) {
        vae_emu_fail(file, line, "wgmma descriptor 0x%016llx: base offset %u (not emulated)", (unsigned long long) desc,
                     (unsigned) (desc >> 49 & 7));
    }
    const unsigned S = mode == 0 ? 16 : 256 >> mode, V = 16 / elem, W = S / 16;
    const unsigned ui = (unsigned) i, uk = (unsigned) k;
    unsigned       off;
    if (!mn_major) {
        off = ui / 8 * sbo + (mode ? ui % 8 * S + uk / V * 16 : ui % 8 * 16 + uk / V * lbo) + uk % V * elem;
    } else {
        const unsigned c = ui / V;
        off = (mode ? c / W * lbo + c % W * 16 + uk / 8 * sbo + uk % 8 * S : c * sbo + uk / 8 * lbo + uk % 8 * 16) +
              ui % V * elem;
    }
    const unsigned a = start + off;
    return mode ? a ^ (a >> 7 & (W - 1)) << 4 : a;
}

// the register fragments of a warpgroup's thread t (0 .. 127), value v at row *m, column *c: the
// accumulator of m64nN (column n) and the 64 x 16 A from registers (16-bit; column k), both the
// m16n8 layouts of mma.sync per warp of 16 rows, in blocks of 8 columns
static inline void vae_emu_gmma_frag_at(int t, int v, int * m, int * c) {
    const int w = t / 32, g = t % 32 / 4, q = t % 4;
    *m          = 16 * w + g + 8 * (v / 2 % 2);
    *c          = 8 * (v / 4) + 2 * q + v % 2;
}

// wgmma.mma_async.sync.aligned.m64nNk16 (f16: kind 0, bf16: 1) or k8 (tf32: 3), f32 accumulators
// d (N / 2 of this thread: vae_emu_gmma_frag_at), A and B from shared memory by descriptors da, db
// (a_mn, b_mn: imm-trans-a, -b), d = A B + (scale_d ? d : 0); wgmma.fence, .commit_group and
// .wait_group: gpu-emu.cc, "wgmma"
extern "C" {
void vae_emu_wgmma(float * d, int n, uint64_t da, uint64_t db, bool a_mn, bool b_mn, int kind, bool scale_d,
                   const char * file, int line);
// the same with A from registers: the thread's 4 registers of 16-bit pairs (f16, bf16; the A
// fragment of vae_emu_gmma_frag_at)
void vae_emu_wgmma_rs(float * d, int n, const unsigned * a, uint64_t db, bool b_mn, int kind, bool scale_d,
                      const char * file, int line);
void vae_emu_wgmma_fence(const char * file, int line);
void vae_emu_wgmma_commit(const char * file, int line);
void vae_emu_wgmma_wait(int pending, const char * file, int line);
// mbarrier.init (count arrivals a phase), .arrive (.expect_tx: tx > 0; returns the phase it arrived
// in), .expect_tx, complete_tx (what an asynchronous copy does as it lands), and the wait for the
// phase of a parity (try_wait.parity in a loop): gpu-emu.cc, "mbarrier"
void     vae_emu_mbar_init(unsigned addr, unsigned count, const char * file, int line);
unsigned vae_emu_mbar_arrive(unsigned addr, unsigned tx, const char * file, int line);
void     vae_emu_mbar_expect_tx(unsigned addr, unsigned tx, const char * file, int line);
void     vae_emu_mbar_complete_tx(unsigned addr, unsigned tx, const char * file, int line);
void     vae_emu_mbar_wait(unsigned addr, unsigned parity, const char * file, int line);
// cuTensorMapEncodeTiled (the driver's, through cudaGetDriverEntryPointByVersion; CUresult 0 or 1),
// and cp.async.bulk.tensor.Nd tile mode, global to shared, completing mbar's transaction bytes:
// gpu-emu.cc, "TMA"
int  vae_emu_tensor_map_encode_tiled(void * map, int dtype, unsigned rank, void * global, const uint64_t * dim,
                                     const uint64_t * stride, const uint32_t * box, const uint32_t * elem_stride,
                                     int interleave, int swizzle, int l2, int oob_fill);
void vae_emu_tma_load(unsigned dst, const void * map, const int * coords, unsigned mbar, const char * file, int line);
// fence.proxy.async: this thread's generic-proxy writes to shared memory so far become visible to
// the async proxy (wgmma's operand reads); checked with the race checker on (gpu-emu.cc)
void vae_emu_fence_proxy_async(void);
// setmaxnreg.inc|dec.sync.aligned.u32 n: a warpgroup instruction, n in 24 .. 256, a multiple of 8,
// the same in every thread (no other effect here)
void vae_emu_setmaxnreg(unsigned n, bool inc, const char * file, int line);
// cuTensorMapEncodeIm2col, and cp.async.bulk.tensor.Nd im2col mode (offsets: one per spatial dimension)
int  vae_emu_tensor_map_encode_im2col(void * map, int dtype, unsigned rank, void * global, const uint64_t * dim,
                                      const uint64_t * stride, const int * lower, const int * upper, unsigned channels,
                                      unsigned pixels, const uint32_t * elem_stride, int interleave, int swizzle,
                                      int l2, int oob_fill);
void vae_emu_tma_load_im2col(unsigned dst, const void * map, const int * coords, const int * offsets, unsigned mbar,
                             const char * file, int line);
}

// the kernels' spellings of these (kernels/vae-gpu-ptx.cuh), at the call site's file and line
#define __grid_constant__
#define vae_gpu_ptx_mbar_init(bar, count)   vae_emu_mbar_init(bar, count, __FILE__, __LINE__)
#define vae_gpu_ptx_mbar_fence_init()       ((void) 0)
#define vae_gpu_ptx_mbar_arrive(bar)        ((void) vae_emu_mbar_arrive(bar, 0, __FILE__, __LINE__))
#define vae_gpu_ptx_mbar_arrive_tx(bar, tx) ((void) vae_emu_mbar_arrive(bar, tx, __FILE__, __LINE__))
#define vae_gpu_ptx_mbar_wait(bar, parity)  vae_emu_mbar_wait(bar, parity, __FILE__, __LINE__)
#define vae_gpu_ptx_elect()                 vae_emu_elect(__FILE__, __LINE__, vae_emu_wave_lanes)
#define vae_gpu_ptx_wgmma_fence()           vae_emu_wgmma_fence(__FILE__, __LINE__)
#define vae_gpu_ptx_wgmma_commit()          vae_emu_wgmma_commit(__FILE__, __LINE__)
#define vae_gpu_ptx_fence_acc(d, n)         ((void) (d), (void) (n))
template <int N> static inline void vae_gpu_ptx_wgmma_wait(const char * file = __builtin_FILE(), int line = __builtin_LINE()) {
    vae_emu_wgmma_wait(N, file, line);
}
static inline void vae_gpu_ptx_tma_load_2d(unsigned dst, const void * map, int x, int y, unsigned bar,
                                           const char * file = __builtin_FILE(), int line = __builtin_LINE()) {
    const int c[2] = { x, y };
    vae_emu_tma_load(dst, map, c, bar, file, line);
}
static inline void vae_gpu_ptx_tma_load_im2col_4d(unsigned dst, const void * map, int c, int w, int h, int n, int ow,
                                                  int oh, unsigned bar, const char * file = __builtin_FILE(),
                                                  int line = __builtin_LINE()) {
    const int x[4] = { c, w, h, n }, o[2] = { ow, oh };
    vae_emu_tma_load_im2col(dst, map, x, o, bar, file, line);
}
template <int N, typename T>
static inline void vae_gpu_ptx_wgmma(float * d, uint64_t da, uint64_t db, T, const char * file = __builtin_FILE(),
                                     int line = __builtin_LINE()) {
    vae_emu_wgmma(d, N, da, db, false, true, std::is_same<T, __half>::value ? 0 : 1, true, file, line);
}

// ---- wmma (m16n16k16, f16/bf16 operands, f32 accumulators) ---------------------------------------

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

// a lane's elements: the accumulator as the m16n8 d fragments of columns 0-7 then 8-15 (the layout
// of sm_80); operands: element e of lane l is entry l * 8 + e of the tile in its own layout
template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "the emulator has m16n16k16 only");
    static constexpr int num_elements = 8;
    T                    x[8];
};

// (row, column) of element e of `lane` in a 16x16 accumulator
static inline void acc_pos(int lane, int e, int * r, int * c) {
    const int g = lane / 4, t = lane % 4;
    *r = g + 8 * (e / 2 % 2);
    *c = 8 * (e / 4) + 2 * t + e % 2;
}

// (row, column) of element e of `lane` in a 16x16 operand stored in Layout
template <typename Layout> static inline void op_pos(int lane, int e, int * r, int * c) {
    const int i = lane * 8 + e;
    *r          = std::is_same<Layout, row_major>::value ? i / 16 : i % 16;
    *c          = std::is_same<Layout, row_major>::value ? i % 16 : i / 16;
}

// the warp converges at the *_sync functions (every lane at the same call), which order no memory
#define VAE_EMU_WMMA_SYNC()                                                 \
    do {                                                                    \
        char none_ = 0;                                                     \
        vae_emu_warp_exchange(0xffffffffu, &none_, 1, __FILE__, __LINE__);  \
    } while (0)

template <typename Use, typename T, typename L> static inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> & f,
                                                                                 float v) {
    for (int e = 0; e < 8; e++) {
        f.x[e] = v;
    }
}

template <typename Use, typename T, typename L>
static inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> & f, const T * p, unsigned ld) {
    VAE_EMU_WMMA_SYNC();
    for (int e = 0; e < 8; e++) {
        int r, c;
        op_pos<L>(vae_emu_now->lane, e, &r, &c);
        f.x[e] = std::is_same<L, row_major>::value ? p[(size_t) r * ld + c] : p[(size_t) c * ld + r];
    }
    VAE_EMU_WMMA_SYNC();
}

static inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> & f, const float * p, unsigned ld,
                                    layout_t l) {
    VAE_EMU_WMMA_SYNC();
    for (int e = 0; e < 8; e++) {
        int r, c;
        acc_pos(vae_emu_now->lane, e, &r, &c);
        f.x[e] = l == mem_row_major ? p[(size_t) r * ld + c] : p[(size_t) c * ld + r];
    }
    VAE_EMU_WMMA_SYNC();
}

static inline void store_matrix_sync(float * p, const fragment<accumulator, 16, 16, 16, float> & f, unsigned ld,
                                     layout_t l) {
    VAE_EMU_WMMA_SYNC();
    for (int e = 0; e < 8; e++) {
        int r, c;
        acc_pos(vae_emu_now->lane, e, &r, &c);
        (l == mem_row_major ? p[(size_t) r * ld + c] : p[(size_t) c * ld + r]) = f.x[e];
    }
    VAE_EMU_WMMA_SYNC();
}

template <typename T, typename LA, typename LB>
static inline void mma_sync(fragment<accumulator, 16, 16, 16, float> & d, const fragment<matrix_a, 16, 16, 16, T, LA> & a,
                            const fragment<matrix_b, 16, 16, 16, T, LB> & b,
                            const fragment<accumulator, 16, 16, 16, float> & c) {
    struct regs {
        T     a[8], b[8];
        float c[8];
    } mine;
    memcpy(mine.a, a.x, sizeof(mine.a));
    memcpy(mine.b, b.x, sizeof(mine.b));
    memcpy(mine.c, c.x, sizeof(mine.c));
    static_assert(sizeof(regs) <= 64, "wmma operands");
    const unsigned char * all = vae_emu_warp_exchange(0xffffffffu, &mine, sizeof(mine), __FILE__, __LINE__);
    if (vae_emu_now->lane == 0) {
        vae_emu_count_wmma();
    }
    float A[16][16], B[16][16];
    for (int l = 0; l < 32; l++) {
        for (int e = 0; e < 8; e++) {
            int r, col;
            op_pos<LA>(l, e, &r, &col);
            A[r][col] = vae_emu_b16(vae_emu_lane<regs>(all, l).a[e].x, 0, T());
            op_pos<LB>(l, e, &r, &col);
            B[r][col] = vae_emu_b16(vae_emu_lane<regs>(all, l).b[e].x, 0, T());
        }
    }
    for (int e = 0; e < 8; e++) {
        int r, col;
        acc_pos(vae_emu_now->lane, e, &r, &col);
        float s = mine.c[e];
        for (int k = 0; k < 16; k++) {
            s += A[r][k] * B[k][col];
        }
        d.x[e] = s;
    }
}
}   // namespace wmma
}   // namespace nvcuda

#else   // VAE_EMU_AMD
#include "gpu-emu-amd.h"
#endif

// ---- launches ------------------------------------------------------------------------------------
// tests/gpu-emu/cu2cc.py turns `k<<<grid, block, smem, s>>>(args)` into
// `k ->* vae_emu_config("k", ..., strided, grid, block, smem, s) ->* vae_emu_args(args)`; strided:
// the grid is vae_gpu_blocks(...), whose kernels loop over their work with a grid stride in x.

struct vae_emu_cfg {
    const char * name, *func, *file;
    int          line;
    bool         strided;
    dim3         grid, block;
    size_t       smem;
    cudaStream_t stream;
};

static inline vae_emu_cfg vae_emu_config(const char * name, const char * func, const char * file, int line,
                                         bool strided, dim3 g, dim3 b, size_t smem = 0, cudaStream_t s = nullptr) {
    return { name, func, file, line, strided, g, b, smem, s };
}

void vae_emu_launch(const vae_emu_cfg & cfg, const void * fn, std::function<void()> body);

template <typename... P> struct vae_emu_pending {
    void (*fn)(P...);
    vae_emu_cfg cfg;
};

template <typename... P> static inline vae_emu_pending<P...> operator->*(void (*fn)(P...), vae_emu_cfg cfg) {
    return { fn, cfg };
}

template <typename... A> struct vae_emu_argpack {
    std::tuple<A...> t;
};

template <typename... A> static inline vae_emu_argpack<typename std::decay<A>::type...> vae_emu_args(A &&... a) {
    return { std::tuple<typename std::decay<A>::type...>(std::forward<A>(a)...) };
}

template <typename... P, typename... A> static inline void operator->*(vae_emu_pending<P...> k, vae_emu_argpack<A...> a) {
    std::tuple<typename std::decay<P>::type...> params(a.t);
    auto                                        fn = k.fn;
    vae_emu_launch(k.cfg, (const void *) fn, [fn, params]() { std::apply(fn, params); });
}
