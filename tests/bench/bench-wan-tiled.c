// bench-wan-tiled: a causal video VAE at full width (random weights written at run time) decoding
// a clip in exact tiles (model/vae-tile-video.c) within a memory limit that the whole-frame decode
// exceeds: Wan 2.1 (decoder widths 384/384/192/96), or with --family seedvr2 SeedVR2's VAE (the
// released config: block_out_channels [128, 256, 512, 512], layers_per_block 2, 16 latent
// channels). It prints the whole-frame step's plan (refused), the tiled session's peak bytes, and
// the time of each latent frame. A demonstration, not a test.
//
//   bench-wan-tiled [--family wan2.1|seedvr2] [--size WxH] [--max-memory GIB] [--tile N]
//                   [--latent-frames T] [--weights PATH] [--plan-only]
//
// Defaults: wan2.1, 1920x1088, 22 GiB (0: what the machine has), tile-size 0 (the largest that fits), 2 latent frames (5
// frames), weights in $TMPDIR/wan21-full-random.safetensors (seedvr2-full-random.safetensors; made
// when missing, 293 MB and 400 MB). --plan-only prepares both sessions and stops before the first
// decode: the buffers are allocated but not touched, so the figures for 1920x1088 can be had
// without the ~22 GiB the decode itself takes.

#include "vae-test-data.h"

#include <time.h>

#define BENCH_MAX_TENSORS 160

struct bench_file {
    int                n;
    struct test_tensor t[BENCH_MAX_TENSORS];
    char               names[BENCH_MAX_TENSORS][160];
};

// tensor `name` of the given shape: uniform in +-1/sqrt(fan_in) (gammas 1), as PyTorch initialises
static void bench_add(struct bench_file * f, const char * name, int n_dims, const int64_t * shape, bool gamma,
                      uint32_t * seed) {
    struct test_tensor * t = &f->t[f->n];
    snprintf(f->names[f->n], sizeof(f->names[f->n]), "%s", name);
    *t = (struct test_tensor) { f->names[f->n], "F32", n_dims, { 0 }, NULL };
    memcpy(t->shape, shape, (size_t) n_dims * sizeof(int64_t));
    const uint64_t n     = test_numel(n_dims, shape);
    const double   bound = 1.0 / sqrt((double) (n / (uint64_t) shape[0] > 0 ? n / (uint64_t) shape[0] : 1));
    float *        data  = malloc(n * sizeof(float));
    for (uint64_t i = 0; data && i < n; i++) {
        *seed   = *seed * 1664525u + 1013904223u;
        data[i] = gamma ? 1.0f : (float) ((*seed >> 8) * (2.0 / 16777216.0) - 1.0) * (float) bound;
    }
    t->data = (const uint8_t *) data;
    f->n++;
}

static void bench_conv(struct bench_file * f, const char * name, int cout, int cin, int kt, int k, uint32_t * seed) {
    char n[160];
    snprintf(n, sizeof(n), "%.96s.weight", name);
    if (kt) {
        bench_add(f, n, 5, (const int64_t[]) { cout, cin, kt, k, k }, false, seed);
    } else {
        bench_add(f, n, 4, (const int64_t[]) { cout, cin, k, k }, false, seed);
    }
    snprintf(n, sizeof(n), "%.96s.bias", name);
    bench_add(f, n, 1, (const int64_t[]) { cout }, false, seed);
}

static void wan_resblock(struct bench_file * f, const char * name, int cin, int cout, uint32_t * seed) {
    char n[160];
    snprintf(n, sizeof(n), "%.96s.residual.0.gamma", name);
    bench_add(f, n, 4, (const int64_t[]) { cin, 1, 1, 1 }, true, seed);
    snprintf(n, sizeof(n), "%.96s.residual.2", name);
    bench_conv(f, n, cout, cin, 3, 3, seed);
    snprintf(n, sizeof(n), "%.96s.residual.3.gamma", name);
    bench_add(f, n, 4, (const int64_t[]) { cout, 1, 1, 1 }, true, seed);
    snprintf(n, sizeof(n), "%.96s.residual.6", name);
    bench_conv(f, n, cout, cout, 3, 3, seed);
    if (cin != cout) {
        snprintf(n, sizeof(n), "%.96s.shortcut", name);
        bench_conv(f, n, cout, cin, 1, 1, seed);
    }
}

// the decoder side of Wan2.1_VAE.pth (MODELS.md B.6), random
static bool wan_write(const char * path) {
    static struct bench_file f;
    uint32_t               seed = 2024;
    char                   n[160];
    bench_conv(&f, "conv2", 16, 16, 1, 1, &seed);
    bench_conv(&f, "decoder.conv1", 384, 16, 3, 3, &seed);
    wan_resblock(&f, "decoder.middle.0", 384, 384, &seed);
    bench_add(&f, "decoder.middle.1.norm.gamma", 3, (const int64_t[]) { 384, 1, 1 }, true, &seed);
    bench_conv(&f, "decoder.middle.1.to_qkv", 1152, 384, 0, 1, &seed);
    bench_conv(&f, "decoder.middle.1.proj", 384, 384, 0, 1, &seed);
    wan_resblock(&f, "decoder.middle.2", 384, 384, &seed);
    // upsamples.N: 0-2 at 384, 3 upsample3d, 4 192->384, 5-6, 7 upsample3d, 8-10 at 192, 11 upsample2d, 12-14 at 96
    static const int cin[15] = { 384, 384, 384, 384, 192, 384, 384, 384, 192, 192, 192, 192, 96, 96, 96 };
    static const int cout[15] = { 384, 384, 384, 192, 384, 384, 384, 192, 192, 192, 192, 96, 96, 96, 96 };
    for (int i = 0; i < 15; i++) {
        snprintf(n, sizeof(n), "decoder.upsamples.%d", i);
        if (i != 3 && i != 7 && i != 11) {
            wan_resblock(&f, n, cin[i], cout[i], &seed);
            continue;
        }
        char r[96];
        snprintf(r, sizeof(r), "%.64s.resample.1", n);
        bench_conv(&f, r, cout[i], cin[i], 0, 3, &seed);
        if (i != 11) {
            snprintf(r, sizeof(r), "%.64s.time_conv", n);
            snprintf(n, sizeof(n), "%s.weight", r);
            bench_add(&f, n, 5, (const int64_t[]) { 2 * cin[i], cin[i], 3, 1, 1 }, false, &seed);
            snprintf(n, sizeof(n), "%s.bias", r);
            bench_add(&f, n, 1, (const int64_t[]) { 2 * cin[i] }, false, &seed);
        }
    }
    bench_add(&f, "decoder.head.0.gamma", 4, (const int64_t[]) { 96, 1, 1, 1 }, true, &seed);
    bench_conv(&f, "decoder.head.2", 3, 96, 3, 3, &seed);
    const bool ok = test_write_model(path, f.n, f.t);
    for (int i = 0; i < f.n; i++) {
        free((void *) f.t[i].data);
    }
    return ok;
}

// a ResnetBlock3D of SeedVR2 (GroupNorm scales 1)
static void seedvr_resnet(struct bench_file * f, const char * name, int cin, int cout, uint32_t * seed) {
    char n[160];
    for (int i = 1; i <= 2; i++) {
        snprintf(n, sizeof(n), "%.96s.norm%d.weight", name, i);
        bench_add(f, n, 1, (const int64_t[]) { i == 1 ? cin : cout }, true, seed);
        snprintf(n, sizeof(n), "%.96s.norm%d.bias", name, i);
        bench_add(f, n, 1, (const int64_t[]) { i == 1 ? cin : cout }, false, seed);
        snprintf(n, sizeof(n), "%.96s.conv%d", name, i);
        bench_conv(f, n, cout, i == 1 ? cin : cout, 3, 3, seed);
    }
    if (cin != cout) {
        snprintf(n, sizeof(n), "%.96s.conv_shortcut", name);
        bench_conv(f, n, cout, cin, 1, 1, seed);
    }
}

// the decoder side of SeedVR2's ema_vae.pth (MODELS.md §I), random: up-blocks 512, 512, 256, 128
// of 3 resnets, the first two upsampling in time and space, the third in space
static bool seedvr_write(const char * path) {
    static struct bench_file f;
    static const int         cout[4] = { 512, 512, 256, 128 };
    uint32_t                 seed    = 2025;
    char                     n[160];
    bench_conv(&f, "decoder.conv_in", 512, 16, 3, 3, &seed);
    seedvr_resnet(&f, "decoder.mid_block.resnets.0", 512, 512, &seed);
    bench_add(&f, "decoder.mid_block.attentions.0.group_norm.weight", 1, (const int64_t[]) { 512 }, true, &seed);
    bench_add(&f, "decoder.mid_block.attentions.0.group_norm.bias", 1, (const int64_t[]) { 512 }, false, &seed);
    static const char * proj[4] = { "to_q", "to_k", "to_v", "to_out.0" };
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof(n), "decoder.mid_block.attentions.0.%s.weight", proj[i]);
        bench_add(&f, n, 2, (const int64_t[]) { 512, 512 }, false, &seed);
        snprintf(n, sizeof(n), "decoder.mid_block.attentions.0.%s.bias", proj[i]);
        bench_add(&f, n, 1, (const int64_t[]) { 512 }, false, &seed);
    }
    seedvr_resnet(&f, "decoder.mid_block.resnets.1", 512, 512, &seed);
    for (int i = 0, cin = 512; i < 4; cin = cout[i++]) {
        for (int j = 0; j < 3; j++) {
            snprintf(n, sizeof(n), "decoder.up_blocks.%d.resnets.%d", i, j);
            seedvr_resnet(&f, n, j == 0 ? cin : cout[i], cout[i], &seed);
        }
        if (i < 3) {
            snprintf(n, sizeof(n), "decoder.up_blocks.%d.upsamplers.0.upscale_conv", i);
            bench_conv(&f, n, (i < 2 ? 8 : 4) * cout[i], cout[i], 1, 1, &seed);
            snprintf(n, sizeof(n), "decoder.up_blocks.%d.upsamplers.0.conv", i);
            bench_conv(&f, n, cout[i], cout[i], 3, 3, &seed);
        }
    }
    bench_add(&f, "decoder.conv_norm_out.weight", 1, (const int64_t[]) { 128 }, true, &seed);
    bench_add(&f, "decoder.conv_norm_out.bias", 1, (const int64_t[]) { 128 }, false, &seed);
    bench_conv(&f, "decoder.conv_out", 3, 128, 3, 3, &seed);
    const bool ok = test_write_model(path, f.n, f.t);
    for (int i = 0; i < f.n; i++) {
        free((void *) f.t[i].data);
    }
    return ok;
}

static double wan_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

int main(int argc, char ** argv) {
    int          width = 1920, height = 1088, tile = 0, frames = 2;
    double       gib  = 22.0;
    bool         plan_only = false;
    char         weights[512] = "";
    const char * tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    enum vae_family family = VAE_FAMILY_WAN21;
    for (int i = 1; i < argc; i++) {
        const bool val = i + 1 < argc;
        if (!strcmp(argv[i], "--family") && val &&
            (!strcmp(argv[i + 1], "wan2.1") || !strcmp(argv[i + 1], "seedvr2"))) {
            family = vae_family_from_name(argv[++i]);
        } else if (!strcmp(argv[i], "--size") && val && sscanf(argv[i + 1], "%dx%d", &width, &height) == 2) {
            i++;
        } else if (!strcmp(argv[i], "--max-memory") && val) {
            gib = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--tile") && val) {
            tile = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--latent-frames") && val) {
            frames = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--weights") && val) {
            snprintf(weights, sizeof(weights), "%s", argv[++i]);
        } else if (!strcmp(argv[i], "--plan-only")) {
            plan_only = true;
        } else {
            fprintf(stderr, "usage: bench-wan-tiled [--family wan2.1|seedvr2] [--size WxH] [--max-memory GIB] "
                            "[--tile N] [--latent-frames T] [--weights PATH] [--plan-only]\n");
            return 2;
        }
    }
    if (width % 8 || height % 8 || width < 64 || height < 64 || frames < 1 || gib < 0) {
        fprintf(stderr, "the size must be multiples of 8 from 64, the latent frames 1 or more, the memory 0 (the machine's) or more\n");
        return 2;
    }
    if (!test_data_init()) {
        return 1;
    }
    const bool seedvr = family == VAE_FAMILY_SEEDVR2;
    if (!weights[0]) {
        snprintf(weights, sizeof(weights), "%s/%s-full-random.safetensors", tmp, seedvr ? "seedvr2" : "wan21");
    }
    if (access(weights, R_OK) != 0) {
        printf("writing full-width random %s decoder weights to %s\n", vae_family_name(family), weights);
        if (!(seedvr ? seedvr_write(weights) : wan_write(weights))) {
            return 1;
        }
    }
    struct vae_model * m = vae_model_load(weights, family, err, sizeof(err));
    if (!m) {
        fprintf(stderr, "%s: %s\n", weights, err);
        return 1;
    }
    const int    h = height / 8, w = width / 8;
    const size_t asked = (size_t) (gib * 1073741824.0), limit = vae_backend_limit(cpu, asked); // (0: the machine's)
    printf("%s (%s), %dx%d (latent %dx%d), %d latent frames, max-memory %.2f GiB, %s\n", vae_family_name(family),
           m->description, width, height, w, h, frames, limit / 1073741824.0, vae_backend_name(cpu));
    // the whole-frame plan: one latent frame's step (4 frames) and the state it carries
    struct vae_graph * g = vae_model_build_graph(m, 1, h, w, false, err, sizeof(err));
    if (g && vae_backend_graph_prepare(cpu, g, limit, err, sizeof(err))) {
        vae_state_t * st = vae_backend_state_new(cpu, g, err, sizeof(err));
        printf("whole frames: %.2f GiB of graph and %.2f GiB of state: %s\n", g->peak_bytes / 1073741824.0,
               vae_backend_state_bytes(cpu, st) / 1073741824.0,
               g->peak_bytes + vae_backend_state_bytes(cpu, st) > limit ? "above the limit" : "fits");
        vae_backend_state_free(cpu, st);
        vae_backend_graph_release(cpu, g);
    } else {
        printf("whole frames: refused: %s\n", err);
    }
    vae_graph_free(g);
    struct vae_session_config cfg = { 16, h, w, VAE_SPACE_RAW, 1, asked, tile, NULL };
    double                    t0  = wan_now();
    struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
    if (!s) {
        fprintf(stderr, "the session: %s\n", err);
        return 1;
    }
    printf("tiled: tile-size %d, peak %.2f GiB (%zu bytes), planned in %.1f s\n", vae_session_tile_size(s),
           vae_session_peak_bytes(s) / 1073741824.0, vae_session_peak_bytes(s), wan_now() - t0);
    float *  lat = malloc((size_t) 16 * h * w * sizeof(float));
    float *  out = malloc((size_t) 3 * height * width * sizeof(float));
    uint32_t seed = 7;
    double   total = 0, lo = 1e9, hi = -1e9;
    int      n_out = 0;
    for (int t = 0; !plan_only && lat && out && t < frames; t++) {
        for (size_t i = 0; i < (size_t) 16 * h * w; i++) {
            seed   = seed * 1664525u + 1013904223u;
            lat[i] = (float) ((seed >> 8) * (2.0 / 16777216.0) - 1.0) * 1.5f;
        }
        t0 = wan_now();
        if (!vae_session_push(s, lat, err, sizeof(err))) {
            fprintf(stderr, "latent frame %d: %s\n", t, err);
            return 1;
        }
        const double dt = wan_now() - t0;
        const int    ready = vae_session_frames_ready(s);
        while (vae_session_frames_ready(s) > 0 && vae_session_pop_output(s, out, err, sizeof(err))) {
            for (size_t i = 0; i < (size_t) 3 * height * width; i++) {
                lo = out[i] < lo ? out[i] : lo;
                hi = out[i] > hi ? out[i] : hi;
            }
            n_out++;
        }
        total += dt;
        printf("latent frame %d: %d frames in %.1f s (%.1f s per frame)\n", t, ready, dt, dt / ready);
    }
    if (!plan_only) {
        printf("%d frames of %dx%d in %.1f s, values in [%.3f, %.3f]\n", n_out, width, height, total, lo, hi);
    }
    free(lat);
    free(out);
    vae_session_free(s);
    vae_model_free(m);
    vae_backend_free(cpu);
    return 0;
}
