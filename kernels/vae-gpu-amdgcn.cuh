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

#pragma once

// A fragment of a 16x16x16 step: lane l holds, of A, row l % 16 and of B, column l % 16, each over
// the KL consecutive k from vae_gpu_amd_k0(l); of D, NACC f32 of column l % 16, element v in row
// vae_gpu_amd_row(l, v). (gfx11 wants A and B replicated in lanes 16..31.)
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
