// The emulator's stand-in for the toolkit's header of the same name: gpu-emu.h (through
// kernels/vae-gpu.h) already defines __pipeline_memcpy_async, __pipeline_commit and
// __pipeline_wait_prior.
#pragma once
#if defined(VAE_GPU_EMU_GFX)
#error "gpu-emu (AMD mode): HIP has no cuda_pipeline_primitives.h (no cp.async on AMD)"
#endif
#include "gpu-emu.h"
