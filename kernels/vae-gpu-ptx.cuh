// The PTX instructions the kernels use, each behind a small device function, for nvcc (the
// vendor header vae-gpu.h includes this file). The emulator of tests/gpu-emu defines the same
// functions from the PTX ISA's fragment tables, so the kernels run unchanged on the CPU in CI.
// Kernel sources only.

#pragma once

#include <stdint.h>

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
