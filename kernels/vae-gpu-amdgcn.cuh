// The AMD matrix instructions the kernels use, for the three families that have them, each behind
// one small device function in the manner of vae-gpu-ptx.cuh: a wave's 16x16x16 multiply-accumulate
// D += A B, f32 accumulators, f16 or bf16 operands. The vendor header vae-gpu.h includes this file
// for HIP device code (and selects the family); the emulator of tests/gpu-emu defines the same
// function from AMD's ISA documents, and this file's fragment geometry is what the kernels use to
// load operands and place results, so the two are written independently of each other.
//   VAE_GPU_AMD_WMMA11  RDNA3/3.5 (gfx11), wave32: v_wmma_f32_16x16x16_{f16,bf16}
//   VAE_GPU_AMD_WMMA12  RDNA4 (gfx12), wave32: the gfx12 encodings, half the operand registers
//   VAE_GPU_AMD_MFMA    CDNA2/3 (gfx90a, gfx942), wave64: v_mfma_f32_16x16x16_f16 / _bf16_1k
// Operands are packed words, as in the registers: word w holds elements 2w (low half) and 2w + 1.
// Also here, in portable code: the copies into shared memory (AMD has no cp.async: plain loads and
// an LDS store, done at once) and the wmma fragments of the attention on top of the instruction.

#pragma once

// A fragment of a 16x16x16 step: lane l holds, of A, row l % 16 and of B, column l % 16, each over
// the KL consecutive k from vae_gpu_amd_k0(l); of D, NACC f32 of column l % 16, element v in row
// vae_gpu_amd_row(l, v). (gfx11 wants A and B replicated in lanes 16..31. On gfx12 the hardware's
// own k order within a lane is 8 (e / 4) + 4 (l / 16) + e % 4, per AMD's matrix instruction
// calculator: the k here are a relabelling of those, the same for A and B, so the sum is the same.)
#if defined(VAE_GPU_AMD_WMMA11)
#define VAE_GPU_AMD_KL   16
#define VAE_GPU_AMD_NACC 8
__device__ __forceinline__ int vae_gpu_amd_k0(int) { return 0; }
__device__ __forceinline__ int vae_gpu_amd_row(int lane, int v) { return 2 * v + lane / 16; }
#elif defined(VAE_GPU_AMD_WMMA12)
#define VAE_GPU_AMD_KL   8
#define VAE_GPU_AMD_NACC 8
__device__ __forceinline__ int vae_gpu_amd_k0(int lane) { return lane / 16 * 8; }
__device__ __forceinline__ int vae_gpu_amd_row(int lane, int v) { return lane / 16 * 8 + v; }
#elif defined(VAE_GPU_AMD_MFMA)
#define VAE_GPU_AMD_KL   4
#define VAE_GPU_AMD_NACC 4
__device__ __forceinline__ int vae_gpu_amd_k0(int lane) { return lane / 16 * 4; }
__device__ __forceinline__ int vae_gpu_amd_row(int lane, int v) { return lane / 16 * 4 + v; }
#endif

#if defined(VAE_GPU_AMD_KL) && !defined(VAE_GPU_EMU)
typedef _Float16 vae_gpu_amd_h __attribute__((ext_vector_type(VAE_GPU_AMD_KL)));
typedef short    vae_gpu_amd_s __attribute__((ext_vector_type(VAE_GPU_AMD_KL)));
typedef float    vae_gpu_amd_f __attribute__((ext_vector_type(VAE_GPU_AMD_NACC)));

// d (NACC f32) += a b for one 16x16x16 step; a, b: KL / 2 words; the tag picks f16 or bf16
template <typename V>
__device__ __forceinline__ void vae_gpu_amd_mma_v(float * d, const unsigned * a, const unsigned * b) {
    V             va, vb;
    vae_gpu_amd_f c;
    __builtin_memcpy(&va, a, sizeof(va));
    __builtin_memcpy(&vb, b, sizeof(vb));
    __builtin_memcpy(&c, d, sizeof(c));
#if defined(VAE_GPU_AMD_WMMA11)
    if constexpr (__is_same(V, vae_gpu_amd_h)) {
        c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(va, vb, c);
    } else {
        c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(va, vb, c);
    }
#elif defined(VAE_GPU_AMD_WMMA12)
    if constexpr (__is_same(V, vae_gpu_amd_h)) {
        c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(va, vb, c);
    } else {
        c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(va, vb, c);
    }
#else
    if constexpr (__is_same(V, vae_gpu_amd_h)) {
        c = __builtin_amdgcn_mfma_f32_16x16x16f16(va, vb, c, 0, 0, 0);
    } else {
        c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, c, 0, 0, 0);
    }
#endif
    __builtin_memcpy(d, &c, sizeof(c));
}

__device__ __forceinline__ void vae_gpu_amd_mma(float * d, const unsigned * a, const unsigned * b, __half) {
    vae_gpu_amd_mma_v<vae_gpu_amd_h>(d, a, b);
}

__device__ __forceinline__ void vae_gpu_amd_mma(float * d, const unsigned * a, const unsigned * b, __nv_bfloat16) {
    vae_gpu_amd_mma_v<vae_gpu_amd_s>(d, a, b);
}
#endif

// the lane within the wave (blocks are one-dimensional)
__device__ __forceinline__ int vae_gpu_amd_lane() {
    return (int) threadIdx.x % VAE_GPU_WARP;
}

// T at LDS address a (vae_gpu_smem_addr)
template <typename T> __device__ __forceinline__ T * vae_gpu_amd_lds(unsigned a) {
#if defined(VAE_GPU_EMU)
    return (T *) vae_emu_shared_at(a, sizeof(T), __FILE__, __LINE__);
#else
    return (T *) (__attribute__((address_space(3))) T *) (size_t) a;
#endif
}

// 16 bytes global -> shared address dst, zeros when !valid (the PTX version's contract; here done
// at once, so commit and wait have nothing to do)
template <bool L1> __device__ __forceinline__ void vae_gpu_cp16(unsigned dst, const void * src, bool valid) {
    *vae_gpu_amd_lds<uint4>(dst) = valid ? *(const uint4 *) src : make_uint4(0, 0, 0, 0);
}

__device__ __forceinline__ void vae_gpu_cp_commit() {}

template <int N> __device__ __forceinline__ void vae_gpu_cp_wait() {}

// The wmma API of the attention (nvcuda::wmma's names) on the instruction above: 16x16x16 fragments
// of A (row-major), B (either layout) and f32 accumulators, laid out per the fragment geometry.
namespace vae_gpu_wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major };

template <class Use, int M, int N, int K, typename T, class Layout = void> struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "16x16x16 fragments");
    static constexpr int num_elements = VAE_GPU_AMD_KL;
    T                    x[VAE_GPU_AMD_KL];
};

template <> struct fragment<accumulator, 16, 16, 16, float, void> {
    static constexpr int num_elements = VAE_GPU_AMD_NACC;
    float                x[VAE_GPU_AMD_NACC];
};

typedef fragment<accumulator, 16, 16, 16, float> vae_gpu_acc;

// A (m, k) at p[m ld + k]: this lane's row, KL consecutive k
template <typename T>
__device__ __forceinline__ void load_matrix_sync(fragment<matrix_a, 16, 16, 16, T, row_major> & f, const T * p,
                                                 unsigned ld) {
    const int l = vae_gpu_amd_lane();
    __builtin_memcpy(f.x, p + (l % 16) * ld + vae_gpu_amd_k0(l), sizeof(f.x));
}

// B (k, n) at p[n ld + k]: this lane's column is contiguous
template <typename T>
__device__ __forceinline__ void load_matrix_sync(fragment<matrix_b, 16, 16, 16, T, col_major> & f, const T * p,
                                                 unsigned ld) {
    const int l = vae_gpu_amd_lane();
    __builtin_memcpy(f.x, p + (l % 16) * ld + vae_gpu_amd_k0(l), sizeof(f.x));
}

// B (k, n) at p[k ld + n]: this lane's column, one element per row
template <typename T>
__device__ __forceinline__ void load_matrix_sync(fragment<matrix_b, 16, 16, 16, T, row_major> & f, const T * p,
                                                 unsigned ld) {
    const int l = vae_gpu_amd_lane(), k0 = vae_gpu_amd_k0(l);
#pragma unroll
    for (int e = 0; e < VAE_GPU_AMD_KL; e++) {
        f.x[e] = p[(k0 + e) * ld + l % 16];
    }
}

__device__ __forceinline__ void load_matrix_sync(vae_gpu_acc & f, const float * p, unsigned ld, layout_t) {
    const int l = vae_gpu_amd_lane();
#pragma unroll
    for (int v = 0; v < VAE_GPU_AMD_NACC; v++) {
        f.x[v] = p[vae_gpu_amd_row(l, v) * ld + l % 16];
    }
}

__device__ __forceinline__ void store_matrix_sync(float * p, const vae_gpu_acc & f, unsigned ld, layout_t) {
    const int l = vae_gpu_amd_lane();
#pragma unroll
    for (int v = 0; v < VAE_GPU_AMD_NACC; v++) {
        p[vae_gpu_amd_row(l, v) * ld + l % 16] = f.x[v];
    }
}

__device__ __forceinline__ void fill_fragment(vae_gpu_acc & f, float v) {
#pragma unroll
    for (int e = 0; e < VAE_GPU_AMD_NACC; e++) {
        f.x[e] = v;
    }
}

template <typename T, class LB>
__device__ __forceinline__ void mma_sync(vae_gpu_acc & d, const fragment<matrix_a, 16, 16, 16, T, row_major> & a,
                                         const fragment<matrix_b, 16, 16, 16, T, LB> & b, const vae_gpu_acc & c) {
    unsigned wa[VAE_GPU_AMD_KL / 2], wb[VAE_GPU_AMD_KL / 2];
    __builtin_memcpy(wa, a.x, sizeof(wa));
    __builtin_memcpy(wb, b.x, sizeof(wb));
    d = c;
    vae_gpu_amd_mma(d.x, wa, wb, T());
}
}  // namespace vae_gpu_wmma
