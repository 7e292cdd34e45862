// Shared by the CUDA tests (test-cuda-ops, test-cuda-decode): the CUDA backend at every
// precision, and the skip rule: without a CUDA backend in the build or without a GPU, a test
// exits 77 (meson's skip), never fails. Included once per test program.

#pragma once

#include "vae-backend.h"
#include "vae-test.h"

#include <stdio.h>
#include <string.h>

#define TEST_SKIP 77

static const enum vae_precision precisions[] = { VAE_PRECISION_FP32, VAE_PRECISION_TF32, VAE_PRECISION_FP16,
                                                 VAE_PRECISION_BF16 };
#define N_PRECISIONS ((int) (sizeof(precisions) / sizeof(precisions[0])))

static vae_backend_t * gpu[VAE_PRECISION_COUNT];   // by precision; NULL where this GPU lacks it

// the CUDA backend at every precision; false when there is no GPU to test (a skip). A GPU older
// than sm_80 lacks tf32 and bf16: those stay NULL, with a note
static bool gpu_init(void) {
    for (int i = 0; i < N_PRECISIONS; i++) {
        const enum vae_precision p        = precisions[i];
        char                     msg[512] = "";
        gpu[p]                            = vae_backend_init(VAE_BACKEND_CUDA, 0, p, msg, sizeof(msg));
        if (gpu[p]) {
            CHECK(vae_backend_precision(gpu[p]) == p, "cuda asked for %s computes in %s", vae_precision_name(p),
                  vae_precision_name(vae_backend_precision(gpu[p])));
            printf("cuda %s: %s\n", vae_precision_name(p), vae_backend_name(gpu[p]));
        } else if (strncmp(msg, "no CUDA device", 14) == 0) {
            printf("skip: %s\n", msg);
            return false;
        } else if ((p == VAE_PRECISION_TF32 || p == VAE_PRECISION_BF16) && strstr(msg, "compute capability")) {
            printf("cuda %s: not on this GPU, not tested (%s)\n", vae_precision_name(p), msg);
        } else {
            CHECK(false, "cuda at %s: %s", vae_precision_name(p), msg);
        }
    }
    return true;
}
