// Minimal check macros for the tests of model/ and backend/, which must run without GStreamer.
// A failed check prints where and why and marks the test failed; the test goes on so that one
// run shows every failure. Each test program ends with `return vae_test_summary();`.

#pragma once

#include <math.h>
#include <stdio.h>
#include <string.h>

static int vae_test_failed;
static int vae_test_checks;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        vae_test_checks++;                                                                 \
        if (!(cond)) {                                                                     \
            vae_test_failed++;                                                             \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
        }                                                                                  \
    } while (0)

// err must mention needle (case-sensitive): errors are part of the contract
#define CHECK_ERR_HAS(err, needle) \
    CHECK(strstr((err), (needle)) != NULL, "error \"%s\" does not mention \"%s\"", (err), (needle))

static inline int vae_test_summary(void) {
    printf("%d checks, %d failed\n", vae_test_checks, vae_test_failed);
    return vae_test_failed ? 1 : 0;
}
