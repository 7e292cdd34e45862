// The check of the emulator's own unit tests (test-amd-mma, test-counters): a failed condition is
// reported with its place and counted in `failures`, and the test goes on.

#pragma once

#include <stdio.h>

static int failures = 0;

#define CHECK(c, ...)                                            \
    do {                                                         \
        if (!(c)) {                                              \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fprintf(stderr, "\n");                               \
            failures++;                                          \
        }                                                        \
    } while (0)
