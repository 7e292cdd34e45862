// Stopping a decode (issue 23), without GStreamer: a cancel flag set by another thread stops an
// untiled decode step between two nodes of its graph (vae_graph.cancel, read by the backend),
// where it used to run to the end of the step. Each case starts a decode in a thread, sets the
// flag from this one after STOP_AFTER_S, and checks that the push returns within STOP_WITHIN_S of
// the flag with the message VAE_SESSION_INTERRUPTED and no frame; then that the same session,
// after vae_session_reset, decodes exactly (bit for bit) what a fresh session on a fresh backend
// decodes, and that a flag set before a push stops it at once.
//
// - AutoencoderKL (kl_sd, random weights, widths 96/96/64/32): one untiled frame of a large
//   latent (cpu: 96x96, 768x768 pixels, several seconds on 2 threads; its attention over 9216
//   positions is the longest node and reads the flag between its row blocks)
// - Wan 2.1 (wan21_b4), a causal decoder: the flag stops its second step part-way through the
//   causal state; after the reset the stream decodes as a fresh one
//
// `test-cancel [cpu|cuda]`: the backend (cpu by default). tests/gpu-emu builds it against the
// emulated CUDA backend (test-gpu-emu-cancel), with latents sized for the emulator (a real GPU
// decodes them too fast for this test); the GPU backend launches a graph with a cancel flag a
// node at a time and reads the flag between nodes (backend/gpu/vae-backend-gpu.c).
// VAE_TEST_CANCEL_KL=n (the KL latent size) and VAE_TEST_CANCEL_AFTER=s (the delay before the
// flag) are for measurements.

#include "vae-test-data.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TEST_SKIP     77
#define STOP_AFTER_S  0.3   // the flag is set this long after the push starts
#define STOP_WITHIN_S 0.5   // and the push must return this soon after it

static vae_backend_t * be;     // the backend under test
static bool            on_gpu;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

// one push in a thread of its own
struct push_job {
    struct vae_session * s;
    const float *        latent;
    bool                 ok;
    char                 err[512];
    double               done;      // now_s when the push returned
    int                  finished;  // (atomic)
};

static void * push_thread(void * arg) {
    struct push_job * j = arg;
    j->ok               = vae_session_push(j->s, j->latent, j->err, sizeof(j->err));
    j->done             = now_s();
    __atomic_store_n(&j->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

// push `latent` in a thread, set *flag after STOP_AFTER_S; true when the push was stopped in
// time as it should be (checked); *seconds: from the flag to the push's return
static bool push_and_stop(const char * what, struct vae_session * s, const float * latent, int * flag,
                          double * seconds) {
    struct push_job j = { s, latent, false, "", 0, 0 };
    pthread_t       th;
    const double    t0 = now_s();
    if (pthread_create(&th, NULL, push_thread, &j) != 0) {
        CHECK(0, "%s: no thread", what);
        return false;
    }
    const char * after = getenv("VAE_TEST_CANCEL_AFTER");   // (another delay, for measurements)
    usleep((useconds_t) ((after ? atof(after) : STOP_AFTER_S) * 1e6));
    const bool   early = __atomic_load_n(&j.finished, __ATOMIC_ACQUIRE) != 0;
    const double asked = now_s();
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    *seconds = j.done - asked;
    printf("%s: flag set %.3f s after the push started; the push returned %.3f s later: %s \"%s\"\n", what,
           asked - t0, *seconds, j.ok ? "decoded" : "failed", j.err);
    CHECK(!early, "%s: the decode ended before the flag (%.3f s): too short for this test", what, j.done - t0);
    CHECK(*seconds < STOP_WITHIN_S, "%s: the push took %.3f s to stop (limit %.1f s)", what, *seconds, STOP_WITHIN_S);
    CHECK(!j.ok && strcmp(j.err, VAE_SESSION_INTERRUPTED) == 0, "%s: the push gave %s \"%s\", not \"%s\"", what,
          j.ok ? "success" : "failure", j.err, VAE_SESSION_INTERRUPTED);
    CHECK(vae_session_frames_ready(s) == 0, "%s: a stopped decode made %d frames", what, vae_session_frames_ready(s));
    return !early && *seconds < STOP_WITHIN_S && !j.ok;
}

// push latent frames [0, n) of `lat` (one frame: `frame` floats) and pop every output frame into
// out (room for `max_out` frames of `out_frame` floats); the count, -1 after a failed check
static int decode_frames(const char * what, struct vae_session * s, const float * lat, int n, size_t frame,
                         float * out, size_t out_frame, int max_out) {
    int got = 0;
    for (int i = 0; i <= n; i++) {
        const bool ok = i < n ? vae_session_push(s, lat + (size_t) i * frame, err, sizeof(err))
                              : vae_session_drain(s, err, sizeof(err));
        CHECK(ok, "%s: %s of latent frame %d: %s", what, i < n ? "push" : "drain", i, err);
        if (!ok) {
            return -1;
        }
        while (vae_session_frames_ready(s) > 0) {
            CHECK(got < max_out, "%s: more than %d frames", what, max_out);
            if (got >= max_out || !vae_session_pop_output(s, out + (size_t) got * out_frame, err, sizeof(err))) {
                return -1;
            }
            got++;
        }
    }
    return got;
}

// a fresh backend of the kind under test (the reference decodes run on one that never saw a cancel)
static vae_backend_t * fresh_backend(void) {
    vae_backend_t * b = vae_backend_init(on_gpu ? VAE_BACKEND_CUDA : VAE_BACKEND_CPU, 0, VAE_PRECISION_FP32, err,
                                         sizeof(err));
    CHECK(b != NULL, "backend: %s", err);
    return b;
}

// decode n latent frames of [c, h, w] with a fresh session on a fresh backend
static int reference(const struct vae_model * m, int c, int h, int w, const float * lat, int n, float * out,
                     size_t out_frame, int max_out) {
    vae_backend_t *           b   = fresh_backend();
    struct vae_session_config cfg = { c, h, w, VAE_SPACE_RAW, 1, 0, 0, NULL };
    struct vae_session *      s   = b ? vae_session_new(m, b, &cfg, err, sizeof(err)) : NULL;
    CHECK(!b || s, "reference session: %s", err);
    const int got = s ? decode_frames("reference", s, lat, n, (size_t) c * h * w, out, out_frame, max_out) : -1;
    vae_session_free(s);
    vae_backend_free(b);
    return got;
}

static float * latent_frames(int n, int c, int h, int w, float amp) {
    const size_t count = (size_t) n * c * h * w;
    float *      lat   = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) {
        lat[i] = amp * sinf(0.37f * (float) i + 0.1f * (float) (i % 7));
    }
    return lat;
}

static bool same(const float * a, const float * b, size_t n) {
    return memcmp(a, b, n * sizeof(float)) == 0;
}

// an untiled AutoencoderKL frame of n x n latents, stopped; then the same session decodes it whole
static void test_kl(int n) {
    struct vae_model * m = vae_model_load(path_in(data_dir, "kl_sd.safetensors"), VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m != NULL, "%s", err);
    if (!m) {
        return;
    }
    int                       flag = 0;
    struct vae_session_config cfg  = { 4, n, n, VAE_SPACE_RAW, 1, 0, 0, &flag };
    struct vae_session *      s    = vae_session_new(m, be, &cfg, err, sizeof(err));
    CHECK(s != NULL, "session: %s", err);
    float *      lat   = latent_frames(1, 4, n, n, 1.5f);
    const size_t frame = (size_t) 3 * 8 * n * 8 * n;
    float *      out   = malloc(frame * sizeof(float)), *ref = malloc(frame * sizeof(float));
    char         what[96];
    snprintf(what, sizeof(what), "kl_sd %dx%d untiled (%dx%d pixels)", n, n, 8 * n, 8 * n);
    if (s) {
        CHECK(vae_session_tile_size(s) == 0, "%s: the session tiles (%d)", what, vae_session_tile_size(s));
        double secs;
        push_and_stop(what, s, lat, &flag, &secs);
        // the same session, reset, decodes the frame whole: exactly as a fresh one does
        __atomic_store_n(&flag, 0, __ATOMIC_RELEASE);
        vae_session_reset(s);
        const double t0 = now_s();
        const int    got = decode_frames(what, s, lat, 1, (size_t) 4 * n * n, out, frame, 1);
        const double t1  = now_s();
        const int    want = reference(m, 4, n, n, lat, 1, ref, frame, 1);
        printf("%s: a whole decode takes %.2f s; after the stop and a reset it gives %s\n", what, t1 - t0,
               got == 1 && want == 1 && same(out, ref, frame) ? "the fresh session's frame exactly" : "OTHER floats");
        CHECK(got == 1 && want == 1 && same(out, ref, frame), "%s: after the stop, %d frames, max diff %g", what, got,
              got == 1 && want == 1 ? max_abs_diff(out, ref, frame) : -1.0);
        // a flag set before the push stops it before its first node
        __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
        const double t2 = now_s();
        const bool   ok = vae_session_push(s, lat, err, sizeof(err));
        printf("%s: with the flag already set the push returns after %.3f s: \"%s\"\n", what, now_s() - t2, err);
        CHECK(!ok && strcmp(err, VAE_SESSION_INTERRUPTED) == 0 && now_s() - t2 < 0.1,
              "%s: a push with the flag set gave \"%s\" after %.3f s", what, ok ? "success" : err, now_s() - t2);
    }
    vae_session_free(s);
    free(lat), free(out), free(ref);
    vae_model_free(m);
}

// a Wan 2.1 stream of h x w latents: its second step stopped part-way (the causal state half
// updated); after the reset, a 3-frame stream decodes as on a fresh session
static void test_wan(int h, int w) {
    struct vae_model * m = vae_model_load(path_in(data_dir, "wan21_b4.orig.safetensors"), VAE_FAMILY_AUTO, err,
                                          sizeof(err));
    CHECK(m != NULL, "%s", err);
    if (!m) {
        return;
    }
    const int                 c = m->latent_channels, n = on_gpu ? 2 : 3, max_out = 1 + 4 * (n - 1);
    int                       flag = 0;
    struct vae_session_config cfg  = { c, h, w, VAE_SPACE_RAW, 1, 0, 0, &flag };
    struct vae_session *      s    = vae_session_new(m, be, &cfg, err, sizeof(err));
    CHECK(s != NULL, "session: %s", err);
    float *      lat   = latent_frames(n, c, h, w, 1.0f);
    const size_t frame = (size_t) 3 * m->scale * h * m->scale * w;
    float *      out   = malloc(max_out * frame * sizeof(float)), *ref = malloc(max_out * frame * sizeof(float));
    char         what[96];
    snprintf(what, sizeof(what), "wan21_b4 %dx%d, step 2", h, w);
    if (s) {
        // the first step runs whole (its frame popped), the second is stopped
        double t0 = now_s();
        bool   ok = vae_session_push(s, lat, err, sizeof(err)) && vae_session_pop_output(s, out, err, sizeof(err));
        CHECK(ok, "%s: the first step: %s", what, err);
        printf("%s: the first step takes %.2f s\n", what, now_s() - t0);
        double secs;
        if (ok) {
            push_and_stop(what, s, lat + (size_t) c * h * w, &flag, &secs);
        }
        __atomic_store_n(&flag, 0, __ATOMIC_RELEASE);
        vae_session_reset(s);
        t0              = now_s();
        const int got   = decode_frames(what, s, lat, n, (size_t) c * h * w, out, frame, max_out);
        const double t1 = now_s();
        const int want  = reference(m, c, h, w, lat, n, ref, frame, max_out);
        printf("%s: after the reset, a %d-frame stream (%.2f s) gives %s\n", what, n, t1 - t0,
               got == max_out && want == max_out && same(out, ref, got * frame) ? "the fresh session's frames exactly"
                                                                               : "OTHER floats");
        CHECK(got == max_out && want == max_out && same(out, ref, got * frame),
              "%s: after the stop and reset, %d frames (fresh: %d), max diff %g", what, got, want,
              got == want && got > 0 ? max_abs_diff(out, ref, got * frame) : -1.0);
    }
    vae_session_free(s);
    free(lat), free(out), free(ref);
    vae_model_free(m);
}

int main(int argc, char ** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    on_gpu = argc > 1 && strcmp(argv[1], "cuda") == 0;
    if (!test_data_init()) {
        return 1;
    }
    if (on_gpu && !vae_backend_is_built(VAE_BACKEND_CUDA)) {
        printf("skip: this build has no cuda backend\n");
        return TEST_SKIP;
    }
    be = on_gpu ? vae_backend_init(VAE_BACKEND_CUDA, 0, VAE_PRECISION_FP32, err, sizeof(err)) : cpu;
    if (!be) {
        printf("skip: %s\n", err);
        vae_backend_free(cpu);
        return TEST_SKIP;
    }
    printf("backend: %s\n", vae_backend_name(be));
    const char * size = getenv("VAE_TEST_CANCEL_KL");   // (another latent size, for measurements)
    test_kl(size ? atoi(size) : on_gpu ? 5 : 96);
    test_wan(on_gpu ? 2 : 48, on_gpu ? 4 : 64);
    if (be != cpu) {
        vae_backend_free(be);
    }
    vae_backend_free(cpu);
    return vae_test_summary();
}
