// The CUDA side of the vendor header (vae-gpu.h): the runtime under its own names, and the few
// host steps that differ between vendors, as small functions the GPU backend calls under one
// spelling (backend/gpu never names a vendor's API): which device and context the backend runs
// in, how it enters and leaves it, and what the device is called. vae-gpu-hip.h has the same
// functions for HIP. Plain C (the backend is C); kernel sources include it too, unused there.
//
// The backend runs in one CUDA context: the one current on the thread that created it (a
// GstCudaContext the element pushed), else the device's primary context, and makes it current
// around every call, so that any thread may call it. The driver's context calls are found
// through the runtime (the plugin does not link libcuda).

#pragma once

#include "vae-backend.h"

#include <cuda_runtime_api.h>

#include <stdbool.h>
#include <stdio.h>

#define VAE_GPU_VENDOR  "CUDA"   // in messages
#define VAE_GPU_BACKEND "cuda"   // the backend's name (vae_backend_type_name)

typedef int (*vae_gpu_ctx_get_fn)(void ** ctx);
typedef int (*vae_gpu_ctx_push_fn)(void * ctx);
typedef int (*vae_gpu_ctx_pop_fn)(void ** ctx);

// where the backend runs: a device and its CUcontext
struct vae_gpu_place {
    int                 device;
    void *              ctx;
    vae_gpu_ctx_push_fn push;
    vae_gpu_ctx_pop_fn  pop;
};

// what the backend shows and checks of its device
struct vae_gpu_device_info {
    char   name[256];
    char   arch[32];      // sm_86
    int    cc;            // major * 10 + minor, as vae_gpu_conv_variants takes it
    int    warp;          // lanes per warp (32)
    size_t total_bytes;
};

static inline bool vae_gpu_driver_entry(const char * symbol, void ** fn, char * err, size_t err_size) {
    enum cudaDriverEntryPointQueryResult q;
    cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
        snprintf(err, err_size, "the CUDA driver has no %s: %s", symbol, cudaGetErrorString(e));
        return false;
    }
    return true;
}

// device n (n < 0: the context current on this thread, else device 0) and the context to run in;
// false with a message starting "no CUDA device" when there is none to use
static inline bool vae_gpu_place_init(struct vae_gpu_place * pl, int device, char * err, size_t err_size) {
    int         n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver) {
        snprintf(err, err_size, "no CUDA device: no NVIDIA driver was found (libcuda.so.1), or it is older than the "
                 "CUDA %d.%d runtime of this build", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        cudaGetLastError();
        return false;
    }
    if (e != cudaSuccess || n == 0) {
        snprintf(err, err_size, "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        cudaGetLastError();
        return false;
    }
    if (device >= n) {
        snprintf(err, err_size, "no CUDA device %d: this machine has %d (0..%d)", device, n, n - 1);
        return false;
    }
    vae_gpu_ctx_get_fn get;
    if (!vae_gpu_driver_entry("cuCtxGetCurrent", (void **) &get, err, err_size) ||
        !vae_gpu_driver_entry("cuCtxPushCurrent", (void **) &pl->push, err, err_size) ||
        !vae_gpu_driver_entry("cuCtxPopCurrent", (void **) &pl->pop, err, err_size)) {
        return false;
    }
    void * current = NULL;
    get(&current);
    if (current) {
        e = cudaGetDevice(&pl->device);
        if (e != cudaSuccess) {
            snprintf(err, err_size, "CUDA error reading the current context's device: %s", cudaGetErrorString(e));
            return false;
        }
        if (device >= 0 && device != pl->device) {
            snprintf(err, err_size, "a CUDA context of device %d is current on this thread, but device %d was asked for",
                     pl->device, device);
            return false;
        }
        pl->ctx = current;
        return true;
    }
    pl->device = device < 0 ? 0 : device;
    e          = cudaSetDevice(pl->device);
    if (e == cudaSuccess) {
        e = cudaFree(NULL); // (makes the primary context current)
    }
    if (e != cudaSuccess) {
        snprintf(err, err_size, "CUDA error starting device %d: %s", pl->device, cudaGetErrorString(e));
        return false;
    }
    get(&pl->ctx);
    if (!pl->ctx) {
        snprintf(err, err_size, "CUDA device %d has no context after starting", pl->device);
        return false;
    }
    return true;
}

// makes the place current on this thread (false, with a message, when the driver refuses: then
// vae_gpu_place_leave must not be called)
static inline bool vae_gpu_place_enter(struct vae_gpu_place * pl, char * err, size_t err_size) {
    const int r = pl->push(pl->ctx);
    if (r != 0) {
        snprintf(err, err_size, "could not make the CUDA context of device %d current (cuCtxPushCurrent: error %d)",
                 pl->device, r);
        return false;
    }
    return true;
}

static inline void vae_gpu_place_leave(struct vae_gpu_place * pl) {
    void * popped;
    pl->pop(&popped);
}

static inline cudaError_t vae_gpu_device_query(int device, struct vae_gpu_device_info * d) {
    struct cudaDeviceProp prop;
    const cudaError_t     e = cudaGetDeviceProperties(&prop, device);
    if (e == cudaSuccess) {
        snprintf(d->name, sizeof(d->name), "%s", prop.name);
        d->cc          = prop.major * 10 + prop.minor;
        d->warp        = prop.warpSize;
        d->total_bytes = prop.totalGlobalMem;
        snprintf(d->arch, sizeof(d->arch), "sm_%d", d->cc);
    }
    return e;
}

// precision p on device d: false with the reason when the device lacks it (vae_gpu_conv_variants
// gives no tile for it: tf32 and bf16 need compute capability 8.0)
static inline bool vae_gpu_device_has(const struct vae_gpu_device_info * d, int device, enum vae_precision p,
                                      int variants, char * err, size_t err_size) {
    if (variants == 0) {
        snprintf(err, err_size, "%s needs a GPU of compute capability 8.0 or newer; CUDA device %d (%s) has %d.%d",
                 vae_precision_name(p), device, d->name, d->cc / 10, d->cc % 10);
        return false;
    }
    return true;
}
