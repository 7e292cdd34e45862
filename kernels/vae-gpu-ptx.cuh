// The PTX instructions the kernels use, each behind a small device function, for nvcc (the
// vendor header vae-gpu.h includes this file). The emulator of tests/gpu-emu defines the same
// functions from the PTX ISA's fragment tables, so the kernels run unchanged on the CPU in CI.
// Kernel sources only.

#pragma once

#include <stdint.h>

#include <type_traits>

// tf32 and bf16 tensor cores, m16n8k16 f16 and cp.async exist from sm_80 on
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define VAE_GPU_PTX_SM80 0
#else
#define VAE_GPU_PTX_SM80 1
#endif

// 16 bytes global -> shared address dst, zeros when !valid; asynchronous from sm_80 on (L1: keep
// in L1, for activations that neighbouring taps read again)
template <bool L1> __device__ __forceinline__ void vae_gpu_cp16(unsigned dst, const void * src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const int n = valid ? 16 : 0;   // bytes read; the rest of the 16 are zeroed
    if (L1) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
    } else {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
    }
#else
    const uint4 v = valid ? *(const uint4 *) src : make_uint4(0, 0, 0, 0);
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
#endif
}

__device__ __forceinline__ void vae_gpu_cp_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// wait until at most N committed groups are pending
template <int N> __device__ __forceinline__ void vae_gpu_cp_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ldmatrix: four 8x8 b16 matrices from shared address a, lanes 8i .. 8i + 7 giving the row
// addresses of matrix i; each thread receives element (lane / 4, 2 (lane % 4) .. + 1) of each
// (.trans: of its transpose)
__device__ __forceinline__ void vae_gpu_ptx_ldsm(unsigned * r, unsigned a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

__device__ __forceinline__ void vae_gpu_ptx_ldsm_t(unsigned * r, unsigned a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// f32 -> tf32, rounded to nearest (as wmma::__float_to_tf32)
__device__ __forceinline__ unsigned vae_gpu_ptx_tf32(unsigned x) {
#if VAE_GPU_PTX_SM80
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x)));
    return r;
#else
    return x;
#endif
}

// d += a b for one m16n8 fragment over one k step (16 for f16 and bf16, 8 for tf32), PTX fragment
// layouts: a = rows (g, g + 8) x k pairs (2t, 2t + 8), b = k pairs (2t, 2t + 8) x column g, d =
// rows (g, g + 8) x columns (2t, 2t + 1), with g = lane / 4, t = lane % 4 (tf32: k t and t + 4)
__device__ __forceinline__ void vae_gpu_ptx_mma(float * d, const unsigned * a, const unsigned * b, __half) {
#if VAE_GPU_PTX_SM80
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    // sm_75 has m16n8k8: the k halves in turn (a[0..1], b[0] hold k 0..7; a[2..3], b[1] k 8..15)
#pragma unroll
    for (int h = 0; h < 2; h++) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[2 * h]), "r"(a[2 * h + 1]), "r"(b[h]));
    }
#endif
}

__device__ __forceinline__ void vae_gpu_ptx_mma(float * d, const unsigned * a, const unsigned * b, __nv_bfloat16) {
#if VAE_GPU_PTX_SM80
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

__device__ __forceinline__ void vae_gpu_ptx_mma(float * d, const unsigned * a, const unsigned * b, float) {
#if VAE_GPU_PTX_SM80
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// ---- sm_90a: mbarrier, TMA, wgmma (the Hopper conv of vae-gpu-conv.cu) -----------------------------
// Spelled as CUTLASS's SM90 atoms spell them (cute/arch/copy_sm90_desc.hpp, copy_sm90_tma.hpp,
// mma_sm90_gmma.hpp); the emulator's versions (tests/gpu-emu/gpu-emu.h) follow the PTX ISA.
// Compiled only for sm_90a (nvcc's arch-specific features); elsewhere the kernel is a trap.

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define VAE_GPU_PTX_SM90A 1
#else
#define VAE_GPU_PTX_SM90A 0
#endif

// mbarrier bar (a shared address) expecting `count` arrivals a phase; the inits made visible to the
// asynchronous proxy (the TMA copies that complete their bytes) before the block's barrier after them
__device__ __forceinline__ void vae_gpu_ptx_mbar_init(unsigned bar, unsigned count) {
#if VAE_GPU_PTX_SM90A
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}

__device__ __forceinline__ void vae_gpu_ptx_mbar_fence_init() {
#if VAE_GPU_PTX_SM90A
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void vae_gpu_ptx_mbar_arrive(unsigned bar) {
#if VAE_GPU_PTX_SM90A
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}

// an arrival that also expects tx more bytes in the phase (the copies it issues next)
__device__ __forceinline__ void vae_gpu_ptx_mbar_arrive_tx(unsigned bar, unsigned tx) {
#if VAE_GPU_PTX_SM90A
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(tx) : "memory");
#endif
}

// until the phase of parity `parity` has completed
__device__ __forceinline__ void vae_gpu_ptx_mbar_wait(unsigned bar, unsigned parity) {
#if VAE_GPU_PTX_SM90A
    asm volatile("{\n.reg .pred p;\nVAE_MBAR_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra VAE_MBAR_WAIT;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
#endif
}

// true in one lane of the warp (every lane calls it)
__device__ __forceinline__ bool vae_gpu_ptx_elect() {
#if VAE_GPU_PTX_SM90A
    unsigned pred = 0;
    asm volatile("{\n.reg .b32 r;\n.reg .pred p;\nelect.sync r|p, 0xffffffff;\n@p mov.u32 %0, 1;\n}\n" : "+r"(pred));
    return pred != 0;
#else
    return false;
#endif
}

// TMA, global to shared address dst, completing bar's bytes: the 2-D tile at (x, y) of map; the
// im2col column of map from channel c of pixel (w, h) of image n, the filter offsets (ow, oh)
__device__ __forceinline__ void vae_gpu_ptx_tma_load_2d(unsigned dst, const void * map, int x, int y, unsigned bar) {
#if VAE_GPU_PTX_SM90A
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
                 "[%2];\n" ::"r"(dst), "l"(map), "r"(bar), "r"(x), "r"(y)
                 : "memory");
#endif
}

__device__ __forceinline__ void vae_gpu_ptx_tma_load_im2col_4d(unsigned dst, const void * map, int c, int w, int h, int n,
                                                               int ow, int oh, unsigned bar) {
#if VAE_GPU_PTX_SM90A
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, "
                 "%5, %6}], [%2], {%7, %8};\n" ::"r"(dst), "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n),
                 "h"((unsigned short) ow), "h"((unsigned short) oh)
                 : "memory");
#endif
}

__device__ __forceinline__ void vae_gpu_ptx_wgmma_fence() {
#if VAE_GPU_PTX_SM90A
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void vae_gpu_ptx_wgmma_commit() {
#if VAE_GPU_PTX_SM90A
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

// until at most N committed groups of this thread's wgmmas are pending
template <int N> __device__ __forceinline__ void vae_gpu_ptx_wgmma_wait() {
#if VAE_GPU_PTX_SM90A
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

// the n accumulators d as written by asynchronous wgmmas: the compiler neither reads them early nor
// moves them (CUTLASS's warpgroup_fence_operand)
__device__ __forceinline__ void vae_gpu_ptx_fence_acc(float * d, int n) {
    for (int i = 0; i < n; i++) {
        asm volatile("" : "+f"(d[i])::"memory");
    }
}

// d (N / 2 accumulators of m64nN, f32) += A B over k16: A K-major by descriptor da, B N-major
// (imm-trans-b 1) by db, f16 or bf16 (T); N 64, 96, 128, 192 or 256
#define VAE_GPU_WG_R8(a, b, c, d, e, f, g, h) "%" #a ", %" #b ", %" #c ", %" #d ", %" #e ", %" #f ", %" #g ", %" #h
#define VAE_GPU_WG_R16_0 VAE_GPU_WG_R8(0, 1, 2, 3, 4, 5, 6, 7) ", " VAE_GPU_WG_R8(8, 9, 10, 11, 12, 13, 14, 15)
#define VAE_GPU_WG_R16_1 VAE_GPU_WG_R8(16, 17, 18, 19, 20, 21, 22, 23) ", " VAE_GPU_WG_R8(24, 25, 26, 27, 28, 29, 30, 31)
#define VAE_GPU_WG_R16_2 VAE_GPU_WG_R8(32, 33, 34, 35, 36, 37, 38, 39) ", " VAE_GPU_WG_R8(40, 41, 42, 43, 44, 45, 46, 47)
#define VAE_GPU_WG_R16_3 VAE_GPU_WG_R8(48, 49, 50, 51, 52, 53, 54, 55) ", " VAE_GPU_WG_R8(56, 57, 58, 59, 60, 61, 62, 63)
#define VAE_GPU_WG_R16_4 VAE_GPU_WG_R8(64, 65, 66, 67, 68, 69, 70, 71) ", " VAE_GPU_WG_R8(72, 73, 74, 75, 76, 77, 78, 79)
#define VAE_GPU_WG_R16_5 VAE_GPU_WG_R8(80, 81, 82, 83, 84, 85, 86, 87) ", " VAE_GPU_WG_R8(88, 89, 90, 91, 92, 93, 94, 95)
#define VAE_GPU_WG_R16_6 \
    VAE_GPU_WG_R8(96, 97, 98, 99, 100, 101, 102, 103) ", " VAE_GPU_WG_R8(104, 105, 106, 107, 108, 109, 110, 111)
#define VAE_GPU_WG_R16_7 \
    VAE_GPU_WG_R8(112, 113, 114, 115, 116, 117, 118, 119) ", " VAE_GPU_WG_R8(120, 121, 122, 123, 124, 125, 126, 127)
#define VAE_GPU_WG_R64  VAE_GPU_WG_R16_0 ", " VAE_GPU_WG_R16_1 ", " VAE_GPU_WG_R16_2 ", " VAE_GPU_WG_R16_3
#define VAE_GPU_WG_R128 VAE_GPU_WG_R64 ", " VAE_GPU_WG_R16_4 ", " VAE_GPU_WG_R16_5 ", " VAE_GPU_WG_R16_6 ", " VAE_GPU_WG_R16_7
#define VAE_GPU_WG_D8(i) \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define VAE_GPU_WG_D16(i) VAE_GPU_WG_D8(i), VAE_GPU_WG_D8(i + 8)
#define VAE_GPU_WG_D64(i) VAE_GPU_WG_D16(i), VAE_GPU_WG_D16(i + 16), VAE_GPU_WG_D16(i + 32), VAE_GPU_WG_D16(i + 48)
// REGS: the accumulators' operands %0 ..; then da, db and the scale of d (1: accumulate) follow them
#define VAE_GPU_WGMMA(N, TY, REGS, DA, DB, SC, ...)                                                              \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SC ", 0;\n"                                              \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {" REGS "}, " DA ", " DB       \
                 ", p, 1, 1, 0, 1;\n}\n"                                                                       \
                 : __VA_ARGS__                                                                                   \
                 : "l"(da), "l"(db), "r"(1))
#define VAE_GPU_WGMMA_T(N, REGS, DA, DB, SC, ...)                  \
    if constexpr (std::is_same<T, __half>::value) {                \
        VAE_GPU_WGMMA(N, "f16", REGS, DA, DB, SC, __VA_ARGS__);    \
    } else {                                                       \
        VAE_GPU_WGMMA(N, "bf16", REGS, DA, DB, SC, __VA_ARGS__);   \
    }

template <int N, typename T> __device__ __forceinline__ void vae_gpu_ptx_wgmma(float * d, uint64_t da, uint64_t db, T) {
    static_assert(N == 64 || N == 96 || N == 128 || N == 192 || N == 256, "wgmma width");
#if VAE_GPU_PTX_SM90A
    if constexpr (N == 64) {
        VAE_GPU_WGMMA_T(64, VAE_GPU_WG_R16_0 ", " VAE_GPU_WG_R16_1, "%32", "%33", "%34", VAE_GPU_WG_D16(0), VAE_GPU_WG_D16(16))
    } else if constexpr (N == 96) {
        VAE_GPU_WGMMA_T(96, VAE_GPU_WG_R16_0 ", " VAE_GPU_WG_R16_1 ", " VAE_GPU_WG_R16_2, "%48", "%49", "%50",
                        VAE_GPU_WG_D16(0), VAE_GPU_WG_D16(16), VAE_GPU_WG_D16(32))
    } else if constexpr (N == 128) {
        VAE_GPU_WGMMA_T(128, VAE_GPU_WG_R64, "%64", "%65", "%66", VAE_GPU_WG_D64(0))
    } else if constexpr (N == 192) {
        VAE_GPU_WGMMA_T(192, VAE_GPU_WG_R64 ", " VAE_GPU_WG_R16_4 ", " VAE_GPU_WG_R16_5, "%96", "%97", "%98",
                        VAE_GPU_WG_D64(0), VAE_GPU_WG_D16(64), VAE_GPU_WG_D16(80))
    } else {
        VAE_GPU_WGMMA_T(256, VAE_GPU_WG_R128, "%128", "%129", "%130", VAE_GPU_WG_D64(0), VAE_GPU_WG_D64(64))
    }
#endif
}
