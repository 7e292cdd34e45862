// The HIP side of the vendor header (vae-gpu.h), the way ggml builds ggml-cuda as ggml-hip: the
// CUDA runtime names the kernels and the GPU backend use, as aliases of HIP's; the external names
// of the kernels' entries and of the backend renamed, so that a library holding both the CUDA
// and the HIP build of the same sources has one of each; and vae-gpu-cuda.h's vendor functions
// for HIP. Written against HIP 5.2 (Debian 12's headers) and ROCm 6.x. The HIP runtime is never
// linked: backend/gpu/vae-hip-loader.c defines every hip* function this build calls and forwards
// it to libamdhip64 loaded at run time. VAE_GPU_HIP: a host C source of the HIP build (the
// kernels, compiled as HIP, have __HIP__).

#pragma once

#include "vae-backend.h"

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define VAE_GPU_VENDOR  "HIP"
#define VAE_GPU_BACKEND "hip"

// ---- the external names of the HIP build ----------------------------------------------------------
#define vae_backend_cuda_init      vae_backend_hip_init
#define vae_gpu_from_nchw_f32      vae_hip_gpu_from_nchw_f32
#define vae_gpu_to_nchw_f32        vae_hip_gpu_to_nchw_f32
#define vae_gpu_tanh_clamp         vae_hip_gpu_tanh_clamp
#define vae_gpu_upsample2x         vae_hip_gpu_upsample2x
#define vae_gpu_frame_split        vae_hip_gpu_frame_split
#define vae_gpu_pixel_shuffle      vae_hip_gpu_pixel_shuffle
#define vae_gpu_group_conv         vae_hip_gpu_group_conv
#define vae_gpu_glu                vae_hip_gpu_glu
#define vae_gpu_time_conv          vae_hip_gpu_time_conv
#define vae_gpu_tokens             vae_hip_gpu_tokens
#define vae_gpu_rope               vae_hip_gpu_rope
#define vae_gpu_crossfade          vae_hip_gpu_crossfade
#define vae_gpu_group_norm_scratch vae_hip_gpu_group_norm_scratch
#define vae_gpu_group_norm_stats   vae_hip_gpu_group_norm_stats
#define vae_gpu_group_norm_combine vae_hip_gpu_group_norm_combine
#define vae_gpu_group_norm_apply   vae_hip_gpu_group_norm_apply
#define vae_gpu_rms_norm           vae_hip_gpu_rms_norm
#define vae_gpu_attention_scratch  vae_hip_gpu_attention_scratch
#define vae_gpu_attention          vae_hip_gpu_attention
#define vae_gpu_causal_attention   vae_hip_gpu_causal_attention
#define vae_gpu_linear_attention_scratch vae_hip_gpu_linear_attention_scratch
#define vae_gpu_linear_attention   vae_hip_gpu_linear_attention
#define vae_gpu_conv_packed_count  vae_hip_gpu_conv_packed_count
#define vae_gpu_conv_pack          vae_hip_gpu_conv_pack
#define vae_gpu_conv_variants      vae_hip_gpu_conv_variants
#define vae_gpu_conv_variant_name  vae_hip_gpu_conv_variant_name
#define vae_gpu_conv_variant_work  vae_hip_gpu_conv_variant_work
#define vae_gpu_conv_variant_tile  vae_hip_gpu_conv_variant_tile
#define vae_gpu_conv_gn_scratch    vae_hip_gpu_conv_gn_scratch
#define vae_gpu_conv               vae_hip_gpu_conv
#define vae_gpu_conv_setup         vae_hip_gpu_conv_setup
#define vae_gpu_frame_pack         vae_hip_gpu_frame_pack

// ---- the runtime under CUDA's names ------------------------------------------------------------
#define cudaError_t                             hipError_t
#define cudaSuccess                             hipSuccess
#define cudaErrorInvalidValue                   hipErrorInvalidValue
#define cudaErrorMemoryAllocation               hipErrorOutOfMemory
#define cudaErrorDeviceUninitialized            hipErrorInvalidContext
#define cudaErrorNotSupported                   hipErrorNotSupported
#define cudaErrorInvalidConfiguration           hipErrorInvalidConfiguration
#define cudaGetLastError                        hipGetLastError
#define cudaGetErrorString                      hipGetErrorString
#define cudaGetErrorName                        hipGetErrorName
#define cudaGetDevice                           hipGetDevice
#define cudaDeviceGetAttribute                  hipDeviceGetAttribute
#define cudaDevAttrComputeCapabilityMajor       hipDeviceAttributeComputeCapabilityMajor
#define cudaDevAttrComputeCapabilityMinor       hipDeviceAttributeComputeCapabilityMinor
#define cudaDevAttrWarpSize                     hipDeviceAttributeWarpSize
// (AMD has no opt-in: a block may take all of a CU's LDS, 64 KB on every listed target)
#define cudaDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeMaxSharedMemoryPerBlock
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaFuncSetAttribute                    vae_hip_func_set_attribute
#define cudaDeviceSynchronize                   hipDeviceSynchronize
#define cudaMalloc                              hipMalloc
#define cudaFree                                hipFree
#define cudaHostAlloc                           hipHostMalloc
#define cudaHostAllocDefault                    hipHostMallocDefault
#define cudaFreeHost                            hipHostFree
#define cudaMemcpy                              hipMemcpy
#define cudaMemcpyAsync                         hipMemcpyAsync
#define cudaMemcpy2DAsync                       hipMemcpy2DAsync
#define cudaMemcpyHostToDevice                  hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost                  hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice                hipMemcpyDeviceToDevice
#define cudaMemset                              hipMemset
#define cudaMemsetAsync                         hipMemsetAsync
#define cudaStream_t                            hipStream_t
#define cudaStreamNonBlocking                   hipStreamNonBlocking
#define cudaStreamCreateWithFlags               hipStreamCreateWithFlags
#define cudaStreamDestroy                       hipStreamDestroy
#define cudaStreamSynchronize                   hipStreamSynchronize
#define cudaStreamBeginCapture                  hipStreamBeginCapture
#define cudaStreamEndCapture                    hipStreamEndCapture
#define cudaStreamCaptureModeThreadLocal        hipStreamCaptureModeThreadLocal
#define cudaGraph_t                             hipGraph_t
#define cudaGraphExec_t                         hipGraphExec_t
#define cudaGraphInstantiate                    hipGraphInstantiateWithFlags   // (CUDA 12's three arguments)
#define cudaGraphLaunch                         hipGraphLaunch
#define cudaGraphDestroy                        hipGraphDestroy
#define cudaGraphExecDestroy                    hipGraphExecDestroy
#define cudaEvent_t                             hipEvent_t
#define cudaEventCreate                         hipEventCreate
#define cudaEventRecord                         hipEventRecord
#define cudaEventSynchronize                    hipEventSynchronize
#define cudaEventElapsedTime                    hipEventElapsedTime
#define cudaEventDestroy                        hipEventDestroy

// the loader's own entry (vae-hip-loader.c): loads libamdhip64 once; false with the reason
#ifdef __cplusplus
extern "C" {
#endif
bool vae_hip_runtime_load(char * err, size_t err_size);
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
// cudaFuncSetAttribute(MaxDynamicSharedMemorySize): AMD has no opt-in to ask for, so the check is
// that the device has the bytes (a kernel asking for more would fail to launch)
template <typename F> static inline hipError_t vae_hip_func_set_attribute(F *, hipFuncAttribute attr, int value) {
    int         dev = 0, max = 0;
    hipError_t  e   = hipGetDevice(&dev);
    if (e == hipSuccess) {
        e = hipDeviceGetAttribute(&max, hipDeviceAttributeMaxSharedMemoryPerBlock, dev);
    }
    if (e == hipSuccess && attr == hipFuncAttributeMaxDynamicSharedMemorySize && value > max) {
        e = hipErrorInvalidValue;
    }
    return e;
}
#endif

// ---- the vendor functions (see vae-gpu-cuda.h) --------------------------------------------------
// HIP has no contexts to adopt: the backend runs on a device, made current around every call
// (and the caller's device restored after), so that any thread may call it.

struct vae_gpu_place {
    int device;
    int caller;   // the device current on the calling thread before vae_gpu_place_enter
};

struct vae_gpu_device_info {
    char   name[256];
    char   arch[32];      // gfx1100 (the target, without its feature flags)
    int    cc;            // major * 10 + minor (gfx1100: 110, gfx90a: 90), as vae_gpu_conv_variants takes it
    int    warp;          // lanes per wave: 32 (RDNA) or 64 (CDNA)
    size_t total_bytes;
};

// device n (n < 0: device 0); false with a message starting "no HIP" when there is none to use
static inline bool vae_gpu_place_init(struct vae_gpu_place * pl, int device, char * err, size_t err_size) {
    char why[400];
    if (!vae_hip_runtime_load(why, sizeof(why))) {
        snprintf(err, err_size, "no HIP runtime: %s", why);
        return false;
    }
    int        n = 0;
    hipError_t e = hipGetDeviceCount(&n);
    if (e != hipSuccess || n == 0) {
        snprintf(err, err_size, "no HIP device: %s", e == hipErrorNoDevice || n == 0
                 ? "none found (no AMD GPU, or no access to /dev/kfd)" : hipGetErrorString(e));
        (void) hipGetLastError();
        return false;
    }
    if (device >= n) {
        snprintf(err, err_size, "no HIP device %d: this machine has %d (0..%d)", device, n, n - 1);
        return false;
    }
    pl->device = device < 0 ? 0 : device;
    return true;
}

static inline bool vae_gpu_place_enter(struct vae_gpu_place * pl, char * err, size_t err_size) {
    hipError_t e = hipGetDevice(&pl->caller);
    if (e == hipSuccess) {
        e = hipSetDevice(pl->device);
    }
    if (e != hipSuccess) {
        snprintf(err, err_size, "could not make HIP device %d current: %s", pl->device, hipGetErrorString(e));
        return false;
    }
    return true;
}

static inline void vae_gpu_place_leave(struct vae_gpu_place * pl) {
    (void) hipSetDevice(pl->caller);
}

static inline hipError_t vae_gpu_device_query(int device, struct vae_gpu_device_info * d) {
    hipDeviceProp_t  prop;
    const hipError_t e = hipGetDeviceProperties(&prop, device);
    if (e == hipSuccess) {
        snprintf(d->name, sizeof(d->name), "%s", prop.name);
        d->cc          = prop.major * 10 + prop.minor;
        d->warp        = prop.warpSize;
        d->total_bytes = prop.totalGlobalMem;
        snprintf(d->arch, sizeof(d->arch), "%.*s", (int) strcspn(prop.gcnArchName, ":"), prop.gcnArchName);
    }
    return e;
}

// precision p on device d: every listed AMD target has f16 and bf16 matrix instructions and none
// has tf32's, so tf32 is refused, naming the target
static inline bool vae_gpu_device_has(const struct vae_gpu_device_info * d, int device, enum vae_precision p,
                                      int variants, char * err, size_t err_size) {
    if (p == VAE_PRECISION_TF32 || variants == 0) {
        snprintf(err, err_size, "%s is not available on %s (HIP device %d: %s)", vae_precision_name(p), d->arch,
                 device, d->name);
        return false;
    }
    return true;
}
