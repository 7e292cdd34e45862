// Shared by the model-level tests: where the fixtures are, and reading a tensor of a
// safetensors file as f32. Included once per test program (everything here is static).

#pragma once

#include "vae-session.h"
#include "vae-test.h"

#include <stdlib.h>

static char  err[512];
static const char * shared_dir;
static const char * data_dir;
static vae_backend_t * cpu;

// the fixture directories from the environment and a cpu backend; false after a message
static bool test_data_init(void) {
    shared_dir = getenv("VAE_SHARED_DIR") ? getenv("VAE_SHARED_DIR") : "../shared";
    data_dir   = getenv("VAE_TEST_DATA") ? getenv("VAE_TEST_DATA") : "tests/data";
    cpu        = vae_backend_init(VAE_BACKEND_CPU, 0, err, sizeof(err));
    if (!cpu) {
        fprintf(stderr, "no cpu backend: %s\n", err);
    }
    return cpu != NULL;
}

static const char * path_in(const char * dir, const char * name) {
    static char buf[4][1024];
    static int  i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
    return buf[i];
}

// a tensor of a safetensors file as f32 (caller frees), with its shape
static float * read_tensor(const char * path, const char * name, int64_t shape[5]) {
    struct vae_st_file * f = vae_st_file_open(path, err, sizeof(err));
    if (!f) {
        CHECK(0, "%s", err);
        return NULL;
    }
    const struct vae_st_tensor * t = vae_st_header_find(f->hdr, name);
    float *                      data = NULL;
    if (t) {
        data = malloc(t->numel * sizeof(float));
        vae_dtype_to_f32(t->dtype, t->data, data, t->numel);
        for (int i = 0; i < 5; i++) {
            shape[i] = i < t->n_dims ? t->shape[i] : 1;
        }
    }
    CHECK(t != NULL, "no tensor %s in %s", name, path);
    vae_st_file_close(f);
    return data;
}

static double max_abs_diff(const float * a, const float * b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double) a[i] - (double) b[i]);
        if (!(d <= m)) {
            m = d; // NaN propagates and fails the caller's check
        }
    }
    return m;
}

