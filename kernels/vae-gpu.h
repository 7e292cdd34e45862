// The vendor header: the one place that picks the GPU runtime. Kernels and the GPU backend are
// written in CUDA spelling (ggml's habit); the HIP backend will add its alias list here
// (cudaXxx -> hipXxx, nvcuda::wmma -> rocWMMA) so that one source builds with nvcc and hipcc.
// The host part is plain C (the backend is C); the device part is for kernel sources only.
// VAE_GPU_EMU: the emulator of tests/gpu-emu, which compiles the kernels with the host C++
// compiler (its cuda_runtime_api.h comes first on the include path).

#pragma once

// ---- [hip-build] the runtime and the host vendor functions: HIP's (vae-gpu-hip.h), else CUDA's
#if defined(__HIP__) || defined(VAE_GPU_HIP)
#include "vae-gpu-hip.h"
#else
#include "vae-gpu-cuda.h"
#endif
// ---- [hip-build] end

#if defined(VAE_GPU_EMU) && defined(__cplusplus)
#include "gpu-emu.h"
#elif defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include "vae-gpu-ptx.cuh"
#endif
