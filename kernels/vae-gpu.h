// The vendor header: the one place that picks the GPU runtime and the device family. Kernels and
// the GPU backend are written in CUDA spelling (ggml's habit); a HIP build (clang -x hip) maps
// that spelling to HIP here, so one source builds for NVIDIA and AMD GPUs. The host part is plain C
// (the backend is C); the device part is for kernel sources only.
// VAE_GPU_EMU: the emulator of tests/gpu-emu, which compiles the kernels with the host C++
// compiler (its cuda_runtime_api.h comes first on the include path); VAE_GPU_EMU_GFX=n makes it an
// AMD device (1100: gfx11, 1200: gfx12, 942 and 90: CDNA).

#pragma once

// the runtime and the host vendor functions: HIP's (vae-gpu-hip.h), else CUDA's
#if defined(__HIP__) || defined(VAE_GPU_HIP)
#include "vae-gpu-hip.h"
#else
#include "vae-gpu-cuda.h"
#endif

// VAE_GPU_AMD: the kernels are for AMD GPUs (a HIP build, or the emulator of one); in their device
// code, one matrix family (vae-gpu-amdgcn.cuh). The host side of a HIP build serves every target
// at once, so it asks the device at run time (warp size, compute capability) and never uses these.
#if defined(__HIP__) || defined(VAE_GPU_EMU_GFX)
#define VAE_GPU_AMD 1
#if defined(VAE_GPU_EMU_GFX) ? VAE_GPU_EMU_GFX >= 1200 : defined(__GFX12__)
#define VAE_GPU_AMD_WMMA12 1
#elif defined(VAE_GPU_EMU_GFX) ? VAE_GPU_EMU_GFX >= 1100 : defined(__GFX11__)
#define VAE_GPU_AMD_WMMA11 1
#elif defined(VAE_GPU_EMU_GFX) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
    defined(__gfx942__) || defined(__gfx950__) || !defined(__HIP_DEVICE_COMPILE__)
#define VAE_GPU_AMD_MFMA 1   // (also the host pass of a HIP build, which parses device code but emits none)
#elif defined(__HIP_DEVICE_COMPILE__)
#error "no matrix path for this AMD target: the HIP backend builds for gfx90a, gfx94x, gfx950, gfx11 and gfx12"
#endif
#endif

#if defined(__cplusplus) && (defined(VAE_GPU_EMU) || defined(__CUDACC__) || defined(__HIP__))
#if defined(VAE_GPU_EMU)
#include "gpu-emu.h"
#elif defined(__HIP__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

// bf16 storage as the kernels use it (HIP 5's hip_bfloat16 and ROCm 6's __hip_bfloat16 differ):
// the bits, and conversions through f32, rounding to nearest even
struct __attribute__((aligned(2))) vae_gpu_bf16 {
    unsigned short x;
    __device__ __host__ operator float() const {
        const unsigned u = (unsigned) x << 16;
        float          f;
        __builtin_memcpy(&f, &u, 4);
        return f;
    }
};
#define __nv_bfloat16 vae_gpu_bf16
__device__ __host__ __forceinline__ float __bfloat162float(vae_gpu_bf16 b) {
    return (float) b;
}
__device__ __host__ __forceinline__ vae_gpu_bf16 __float2bfloat16_rn(float v) {
    unsigned u;
    __builtin_memcpy(&u, &v, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return { (unsigned short) (u >> 16 | 0x40) };   // NaN stays NaN
    }
    return { (unsigned short) ((u + 0x7fffu + (u >> 16 & 1)) >> 16) };
}
#elif defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include "vae-gpu-ptx.cuh"
#endif

// the hardware warp (an AMD wavefront): 64 lanes on CDNA, 32 elsewhere. Device code only: the
// host pass of a HIP build serves both widths and sizes its launches from the device's warpSize.
#if defined(VAE_GPU_AMD_MFMA)
#define VAE_GPU_WARP 64
#else
#define VAE_GPU_WARP 32
#endif

// vae_gpu_shfl_xor(v, o, width): v of lane lane ^ o within each group of `width` lanes, every lane of
// the warp taking part; vae_gpu_warp_sync(): the warp's lanes wait for each other, and their
// shared-memory accesses before it are seen after it; vae_gpu_trap(): the kernel stops with an error
// vae_gpu_smem_addr(p): the shared-memory address of generic pointer p (vae_gpu_cp16's dst)
#if defined(VAE_GPU_EMU)
#define vae_gpu_shfl_xor(v, o, width) __shfl_xor_sync(vae_emu_wave_lanes, v, o, width)
#define vae_gpu_warp_sync()           __syncwarp()
#define vae_gpu_smem_addr(p)          vae_emu_cvta_shared((const void *) (p), __FILE__, __LINE__)
#define vae_gpu_trap()                __trap()
#elif defined(__HIP__)
#define vae_gpu_shfl_xor(v, o, width) __shfl_xor(v, o, width)
#define vae_gpu_warp_sync()                                      \
    do {                                                         \
        __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");   \
        __builtin_amdgcn_wave_barrier();                         \
        __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");   \
    } while (0)
#define vae_gpu_smem_addr(p) ((unsigned) (size_t) (__attribute__((address_space(3))) const void *) (p))
#define vae_gpu_trap()       __builtin_trap()
#else
#define vae_gpu_shfl_xor(v, o, width) __shfl_xor_sync(0xffffffffu, v, o, width)
#define vae_gpu_warp_sync()           __syncwarp()
#define vae_gpu_smem_addr(p)          ((unsigned) __cvta_generic_to_shared(p))
#define vae_gpu_trap()                __trap()
#endif

#if defined(VAE_GPU_AMD)
#include "vae-gpu-amdgcn.cuh"
#else
namespace vae_gpu_wmma = nvcuda::wmma;
#endif
#endif
