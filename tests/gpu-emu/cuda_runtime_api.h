// The CUDA runtime API as the emulator provides it (tests/gpu-emu/README.md): the types,
// constants and functions that the CUDA backend, the kernels' launchers and the CUDA tests call,
// implemented on the host in gpu-emu.cc. It stands in for the toolkit's header of the same name
// when a build defines VAE_GPU_EMU and puts this folder first on the include path, so that
// backend/gpu and tests/test-cuda-*.c compile unchanged without a CUDA toolkit. Plain C. With
// VAE_GPU_EMU_GFX (AMD mode) the device is an AMD GPU as HIP describes it (gcnArchName too).

#pragma once

#include <stddef.h>

#define CUDART_VERSION 12000

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess                 = 0,
    cudaErrorInvalidValue       = 1,
    cudaErrorMemoryAllocation   = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevice      = 101,
    cudaErrorDeviceUninitialized = 201,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice           = 100,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady           = 600,
    cudaErrorContextIsDestroyed = 709,
    cudaErrorLaunchFailure      = 719,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorNotSupported       = 801,
} cudaError_t;

typedef struct vae_emu_stream * cudaStream_t;
typedef struct vae_emu_event *  cudaEvent_t;
typedef struct vae_emu_graph *  cudaGraph_t;
typedef struct vae_emu_graph *  cudaGraphExec_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost     = 0,
    cudaMemcpyHostToDevice   = 1,
    cudaMemcpyDeviceToHost   = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault        = 4,
};

#define cudaStreamDefault     0x00
#define cudaStreamNonBlocking 0x01
#define cudaHostAllocDefault  0x00
#define cudaEnableDefault     0x00

enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal      = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed     = 2,
};

enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess            = 0,
    cudaDriverEntryPointSymbolNotFound     = 1,
    cudaDriverEntryPointVersionNotSufficent = 2,
};

enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};

enum cudaDeviceAttr {
    cudaDevAttrMaxSharedMemoryPerBlock      = 8,
    cudaDevAttrWarpSize                     = 10,
    cudaDevAttrMultiProcessorCount          = 16,
    cudaDevAttrComputeCapabilityMajor       = 75,
    cudaDevAttrComputeCapabilityMinor       = 76,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

struct cudaDeviceProp {
    char   name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    size_t sharedMemPerBlockOptin;
    int    major, minor;
    int    multiProcessorCount;
    int    warpSize;
#if defined(VAE_GPU_EMU_GFX)
    char   gcnArchName[256];   // an emulated AMD device (HIP's field): gfx target and features
#endif
};

const char * cudaGetErrorString(cudaError_t e);
const char * cudaGetErrorName(cudaError_t e);
cudaError_t  cudaGetLastError(void);
cudaError_t  cudaPeekAtLastError(void);
cudaError_t  cudaGetDeviceCount(int * n);
cudaError_t  cudaGetDevice(int * d);
cudaError_t  cudaSetDevice(int d);
cudaError_t  cudaGetDeviceProperties(struct cudaDeviceProp * p, int d);
cudaError_t  cudaDeviceGetAttribute(int * v, enum cudaDeviceAttr a, int d);
cudaError_t  cudaDeviceSynchronize(void);
cudaError_t  cudaGetDriverEntryPointByVersion(const char * symbol, void ** fn, unsigned version,
                                              unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult * status);
cudaError_t  cudaMalloc(void ** p, size_t n);
cudaError_t  cudaFree(void * p);
cudaError_t  cudaMemGetInfo(size_t * free_bytes, size_t * total_bytes);
cudaError_t  cudaHostAlloc(void ** p, size_t n, unsigned flags);
cudaError_t  cudaFreeHost(void * p);
cudaError_t  cudaMemcpy(void * dst, const void * src, size_t n, enum cudaMemcpyKind k);
cudaError_t  cudaMemcpyAsync(void * dst, const void * src, size_t n, enum cudaMemcpyKind k, cudaStream_t s);
cudaError_t  cudaMemcpy2DAsync(void * dst, size_t dpitch, const void * src, size_t spitch, size_t width,
                               size_t height, enum cudaMemcpyKind k, cudaStream_t s);
cudaError_t  cudaMemset(void * p, int v, size_t n);
cudaError_t  cudaMemsetAsync(void * p, int v, size_t n, cudaStream_t s);
cudaError_t  cudaStreamCreateWithFlags(cudaStream_t * s, unsigned flags);
cudaError_t  cudaStreamDestroy(cudaStream_t s);
cudaError_t  cudaStreamSynchronize(cudaStream_t s);
cudaError_t  cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode);
cudaError_t  cudaStreamEndCapture(cudaStream_t s, cudaGraph_t * g);
cudaError_t  cudaGraphInstantiate(cudaGraphExec_t * e, cudaGraph_t g, unsigned long long flags);
cudaError_t  cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
cudaError_t  cudaGraphDestroy(cudaGraph_t g);
cudaError_t  cudaGraphExecDestroy(cudaGraphExec_t e);
cudaError_t  cudaEventCreate(cudaEvent_t * e);
cudaError_t  cudaEventDestroy(cudaEvent_t e);
cudaError_t  cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t  cudaEventSynchronize(cudaEvent_t e);
cudaError_t  cudaEventElapsedTime(float * ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t  vae_emu_func_set_attribute(const void * fn, enum cudaFuncAttribute a, int v);

#ifdef __cplusplus
}

template <typename F> static inline cudaError_t cudaFuncSetAttribute(F * fn, enum cudaFuncAttribute a, int v) {
    return vae_emu_func_set_attribute((const void *) fn, a, v);
}
#endif
