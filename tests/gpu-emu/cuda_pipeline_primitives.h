// The emulator's stand-in for the toolkit's header of the same name: gpu-emu.h (through
// kernels/vae-gpu.h) already defines __pipeline_memcpy_async, __pipeline_commit and
// __pipeline_wait_prior.
#pragma once
#include "gpu-emu.h"
