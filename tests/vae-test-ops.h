// Shared by the ops suites (test-cpu-ops, test-cuda-ops): seeded random numbers, a pool of the
// host arrays of one case (weights must outlive the prepared graph), and small graph helpers.
// Included once per test program (everything here is static).

#pragma once

#include "vae-backend.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t g_salt;        // VAE_TEST_SEED: other data, same cases
static bool     g_rng_grid;    // draw on the bf16 grid (see rng_grid)

static void rng_seed(uint64_t s) {
    g_rng = (s + g_salt * 1000003ull) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
}

static uint64_t rng_u64(void) { // splitmix64
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// the nearest bf16 value (ties to even), 0 below fp16's normal range: stored exactly at every
// precision (finite v within fp16's range)
static float rng_grid(float v) {
    if (fabsf(v) < 0x1p-14f) {
        return 0.0f;
    }
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static float rng_uniform(float lo, float hi) {
    const float v = lo + (hi - lo) * (float) ((double) (rng_u64() >> 11) / 9007199254740992.0);
    return g_rng_grid ? rng_grid(v) : v;
}

static void * xmalloc(size_t bytes) {
    void * p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

struct pool {
    void * p[256];
    int    n;
};

static void * pool_add(struct pool * pl, void * p) {
    if (pl->n == (int) (sizeof(pl->p) / sizeof(pl->p[0]))) {
        fprintf(stderr, "pool full\n");
        exit(2);
    }
    pl->p[pl->n++] = p;
    return p;
}

static void pool_free(struct pool * pl) {
    for (int i = 0; i < pl->n; i++) {
        free(pl->p[i]);
    }
    pl->n = 0;
}

static float * rnd(struct pool * pl, size_t n, float lo, float hi) {
    float * a = pool_add(pl, xmalloc(n * sizeof(float)));
    for (size_t i = 0; i < n; i++) {
        a[i] = rng_uniform(lo, hi);
    }
    return a;
}

static const char * act_name(enum vae_act a) {
    return a == VAE_ACT_RELU ? "relu" : a == VAE_ACT_SILU ? "silu" : "none";
}

static struct vae_graph * graph_new(bool fused) {
    struct vae_graph * g = vae_graph_new();
    if (!g) {
        fprintf(stderr, "vae_graph_new failed\n");
        exit(2);
    }
    g->fused = fused; // independent of VAE_DISABLE_FUSION in the environment
    return g;
}

static size_t out_count(const struct vae_graph * g) {
    const int64_t * ne = g->output->ne;
    return (size_t) (ne[0] * ne[1] * ne[2] * ne[3]);
}

// conv weights [co, ci, k, k] scaled by 1/sqrt(fan in), so outputs stay O(1) along chains; their
// data in *data unless data is NULL
static struct vae_tensor * conv_w(struct vae_graph * g, struct pool * pl, int co, int ci, int k, const float ** data) {
    const float   s     = 1.5f / sqrtf((float) (ci * k * k));
    const float * w     = rnd(pl, (size_t) co * ci * k * k, -s, s);
    const int64_t sh[4] = { co, ci, k, k };
    if (data) {
        *data = w;
    }
    return vae_graph_weight(g, "w", w, 4, sh);
}

static struct vae_tensor * vec_w(struct vae_graph * g, struct pool * pl, int n, float lo, float hi,
                                 const float ** data) {
    const float * b     = rnd(pl, (size_t) n, lo, hi);
    const int64_t sh[1] = { n };
    if (data) {
        *data = b;
    }
    return vae_graph_weight(g, "b", b, 1, sh);
}

// ---- DC-AE's shapes, shared by both suites -----------------------------------------------------

// a grouped conv's case (the depthwise op's when depthwise) for the reports
static void grouped_conv_label(char * label, size_t size, int N, int Ci, int Co, int G, int H, int W, int k, bool bias,
                               bool res, enum vae_act act, bool depthwise) {
    if (depthwise) {
        snprintf(label, size, "depthwise_conv2d(n=%d,c=%d,m=%d,h=%d,w=%d,k=%d%s)", N, Ci, Co / Ci, H, W, k,
                 bias ? ",bias" : "");
    } else {
        snprintf(label, size, "conv2d_groups(n=%d,cin=%d,cout=%d,groups=%d,h=%d,w=%d,k=%d%s%s,%s)", N, Ci, Co, G, H, W,
                 k, bias ? ",bias" : "", res ? ",res" : "", act_name(act));
    }
}

// grouped convs: n, cin, cout, groups, h, w, k. The first two DC-AE's multiscale projection (1x1,
// groups of 32 channels: whole blocks of the CPU's layout); then groups that split those blocks
static const int dcae_group_conv_cases[][7] = {
    { 1, 96, 96, 3, 7, 5, 1 }, { 2, 64, 64, 2, 3, 9, 1 }, { 1, 6, 6, 3, 5, 5, 1 },   { 1, 15, 10, 5, 7, 3, 1 },
    { 2, 40, 20, 4, 4, 6, 3 }, { 1, 9, 27, 9, 5, 7, 3 },  { 1, 33, 66, 3, 1, 1, 1 }, { 1, 20, 24, 2, 9, 4, 3 },
};

// linear attention: n, groups, hd, h, w, with positions below, equal to and above the head dim
// (upstream's form changes above it); case i takes special i % 3 (0 none, 1 a zero denominator,
// 2 a NaN), so every form meets each
static const int dcae_linear_attention_cases[][5] = {
    { 1, 1, 8, 1, 1 },   { 2, 2, 16, 3, 5 }, { 1, 3, 16, 4, 4 }, { 1, 2, 5, 2, 3 },  { 2, 1, 7, 3, 3 },
    { 1, 4, 32, 7, 9 },  { 1, 2, 32, 4, 8 }, { 2, 3, 20, 5, 4 }, { 2, 1, 12, 13, 7 }, { 1, 5, 8, 1, 17 },
    { 1, 2, 32, 33, 13 }, { 1, 2, 32, 1, 32 },
};
