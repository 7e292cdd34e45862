// Shared by the GPU tests (test-cuda-ops, test-cuda-decode, and built with VAE_TEST_HIP the same
// programs on the HIP backend: test-hip-ops, test-hip-decode): the GPU backend at every precision,
// and the skip rule: without that backend in the build, or without its runtime or a GPU, a test
// exits 77 (meson's skip), never fails. Included once per test program.

#pragma once

#include "vae-backend.h"
#include "vae-test.h"

#include <stdio.h>
#include <string.h>

#define TEST_SKIP 77

#ifdef VAE_TEST_HIP
#define GPU_BACKEND VAE_BACKEND_HIP
#define GPU_VENDOR  "HIP"
#else
#define GPU_BACKEND VAE_BACKEND_CUDA
#define GPU_VENDOR  "CUDA"
#if defined(VAE_HAVE_CUDA)
#define GPU_TEST_CUDA_RUNTIME   // the program may call the CUDA runtime itself (device frames, contexts)
#endif
#endif

static const enum vae_precision precisions[] = { VAE_PRECISION_FP32, VAE_PRECISION_TF32, VAE_PRECISION_FP16,
                                                 VAE_PRECISION_BF16 };
#define N_PRECISIONS ((int) (sizeof(precisions) / sizeof(precisions[0])))

static vae_backend_t * gpu[VAE_PRECISION_COUNT];   // by precision; NULL where this GPU lacks it

// the GPU backend at every precision; false when there is no GPU to test (a skip: a message
// starting "no CUDA" / "no HIP"). A GPU older than sm_80 lacks tf32 and bf16, an AMD GPU tf32:
// those stay NULL, with a note
static bool gpu_init(void) {
    const char * name = vae_backend_type_name(GPU_BACKEND);
    for (int i = 0; i < N_PRECISIONS; i++) {
        const enum vae_precision p        = precisions[i];
        char                     msg[512] = "";
        gpu[p]                            = vae_backend_init(GPU_BACKEND, 0, p, msg, sizeof(msg));
        if (gpu[p]) {
            CHECK(vae_backend_precision(gpu[p]) == p, "%s asked for %s computes in %s", name, vae_precision_name(p),
                  vae_precision_name(vae_backend_precision(gpu[p])));
            printf("%s %s: %s\n", name, vae_precision_name(p), vae_backend_name(gpu[p]));
        } else if (strncmp(msg, "no " GPU_VENDOR, strlen("no " GPU_VENDOR)) == 0) {
            printf("skip: %s\n", msg);
            return false;
        } else if ((p == VAE_PRECISION_TF32 || p == VAE_PRECISION_BF16) &&
                   (strstr(msg, "compute capability") || strstr(msg, "is not available on gfx"))) {
            printf("%s %s: not on this GPU, not tested (%s)\n", name, vae_precision_name(p), msg);
        } else {
            CHECK(false, "%s at %s: %s", name, vae_precision_name(p), msg);
        }
    }
    return true;
}
