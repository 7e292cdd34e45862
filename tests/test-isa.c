// The decode that tests/test-isa.sh runs at each oneDNN ISA (DNNL_MAX_CPU_ISA): the real TAEF2
// decoder on the shared reference latents (2 frames of 128x192), checked against upstream's
// output, timed, and the backend's name (which gives oneDNN's effective ISA) printed for the
// script to check; then a backend asked for bf16 says what is in effect and, where that is bf16,
// decodes too (its accuracy is test-precision's).
//
//   test-isa    prints "backend: NAME", "fp32 decode ms: T ...", "bf16 asked: P in effect" and
//               where P is bf16, "bf16 decode ms: T ..."

#include "vae-test-data.h"

#include <time.h>

#define RUNS 3 // timed computes; the fastest counts (the machine is shared)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

// decode the latents on backend b; the output [N, 3, 8h, 8w] (caller frees), the best time in *ms
static float * decode(vae_backend_t * b, const struct vae_model * m, const float * lat, const int64_t ls[5],
                      double * ms) {
    struct vae_graph * g   = vae_model_build_graph(m, (int) ls[0], (int) ls[2], (int) ls[3], false, err, sizeof(err));
    float *            out = NULL;
    bool               ok  = g && vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
    *ms                    = 1e30;
    for (int r = 0; ok && r < RUNS; r++) {
        const double t0 = now_ms();
        ok              = vae_backend_graph_compute(b, g, NULL, lat, err, sizeof(err));
        const double t  = now_ms() - t0;
        *ms             = t < *ms ? t : *ms;
    }
    if (ok) {
        const int64_t * ne = g->output->ne;
        out                = malloc((size_t) (ne[0] * ne[1] * ne[2] * ne[3]) * sizeof(float));
        ok  = vae_backend_graph_read_output(b, g, 0, (int) g->output->ne[0], out, err, sizeof(err));
    }
    CHECK(ok, "decode: %s", err);
    vae_backend_graph_release(b, g);
    vae_graph_free(g);
    return out;
}

int main(void) {
    if (!test_data_init()) {
        return 1;
    }
    printf("backend: %s\n", vae_backend_name(cpu));
    struct vae_model * m = vae_model_load(path_in(shared_dir, "models/taef2_decoder.safetensors"), VAE_FAMILY_AUTO, err,
                                          sizeof(err));
    CHECK(m, "load: %s", err);
    int64_t ls[5], es[5];
    float * lat = read_tensor(path_in(shared_dir, "reference/taef2/small.latent"), "latent_tensor", ls);
    float * exp = read_tensor(path_in(shared_dir, "reference/taef2/small.expected.safetensors"), "decoded", es);
    if (!m || !lat || !exp) {
        return vae_test_summary();
    }
    const size_t n  = (size_t) (es[0] * es[1] * es[2] * es[3]);
    double       ms = 0;
    float *      y  = decode(cpu, m, lat, ls, &ms);
    if (y) {
        const double d = max_abs_diff(y, exp, n);
        printf("fp32 decode ms: %.1f (max abs error %.3g against upstream)\n", ms, d);
        CHECK(d <= 1e-4, "max abs error %g above 1e-4", d);
    }
    free(y);
    vae_backend_t * bf = vae_backend_init(VAE_BACKEND_CPU, 0, VAE_PRECISION_BF16, err, sizeof(err));
    CHECK(bf, "bf16 asked: %s", err);
    printf("bf16 asked: %s in effect\n", bf ? vae_precision_name(vae_backend_precision(bf)) : "nothing");
    if (bf && vae_backend_precision(bf) == VAE_PRECISION_BF16) {
        y = decode(bf, m, lat, ls, &ms);
        printf("bf16 decode ms: %.1f (max abs error %.3g against upstream)\n", ms, y ? max_abs_diff(y, exp, n) : 0.0);
        free(y);
    }
    vae_backend_free(bf);
    free(exp);
    free(lat);
    vae_model_free(m);
    vae_backend_free(cpu);
    return vae_test_summary();
}
