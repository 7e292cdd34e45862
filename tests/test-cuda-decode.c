// Whole decodes on the CUDA backend against the CPU backend, through the decode session as
// test-image and test-video run them: the real TAEF2 weights on the shared reference latents, and
// the random-weight fixtures of tests/data for every family that decodes (TAESD variants, Wan 2.1 and 2.2,
// TAEHV for Wan 2.1 and 2.2 and the super decoders, AutoencoderKL of SD, FLUX.1, FLUX.2 and HunyuanImage 2.1, KL
// decodes in tiles).
//
// Each decode pushes one latent frame at a time and pops every ready frame as 8-bit RGB
// (vae_session_pop_frame, so the GPU packs its own frames). The GPU's frames at each precision are
// compared with the CPU's by PSNR = 10 log10(255^2 / MSE) over all frames and bytes: fp32 >= 70
// dB, tf32 >= 50, fp16 >= 42, bf16 >= 38 (equal frames: infinite). The raw f32 outputs
// (vae_session_pop_output, a second decode) are compared too; their max abs error is printed for
// information. Video decoders stream with one latent frame per step, with an automatic chunk and
// after a reset mid-stream: each must give the CPU's frames; the automatic chunk is 2 latent frames
// per step, whose frames are those of 1 per step (the same bytes where the conv tiles are forced). KL decodes in tiles on the GPU are
// compared with the CPU's whole-frame decode, and so are the causal video decoders' in tiles (Wan
// 2.1, SeedVR2, HunyuanVideo 1.5, LTX-2 and LTX-2.3: the small list's, below). Last, out of device
// memory for real (a cudaMalloc holding the rest): a Wan session asked for 4 latent frames per step
// takes fewer and says so.
//
// `test-cuda-decode small` is the list for the emulator of tests/gpu-emu (test-gpu-emu-decode-sm90),
// where each CUDA thread is a fiber on the CPU, a thousand times slower than a GPU: one decode per
// family at a tiny size, the same limits. The real TAEF2 weights (TAESD's family) on two 2x3 (h x w)
// crops of the latents in one step; Wan 2.1, Wan 2.2, TAEHV and a super TAEHV on three latent
// frames of 2x3, one per step after a reset, then with the chunk chosen (chunk-frames 0: 2 latent
// frames per step on a GPU, the same bytes); AutoencoderKL of SD on 3x4 latents, whole and in tiles;
// HunyuanImage 2.1's, Qwen-Image 2.1's (RGBA) and DC-AE on 2x3 ones, whole and in tiles, at fp32 and bf16; MiniMax-H3
// on 8 latent frames of 1x2 (two chunks), at fp32 and bf16; Wan 2.1 and
// SeedVR2 on two latent frames of 3x3 in 2x2 tiles of 16 pixels, LTX-2 and LTX-2.3 on three of 2x2
// and 1x2 in tiles of 32, at fp32 and bf16. Each conv runs on its
// precision's 64x64 tiles (VAE_GPU_CONV_VARIANT, unless set) instead of the timing of every tile
// variant at prepare; no raw decode. About 4 minutes on two CPU cores.
//
// Without a CUDA backend in the build, or without a GPU, it exits 77 (skipped). Built with
// VAE_TEST_HIP, it is test-hip-decode: the same on the HIP backend (AMD GPUs).

#include "vae-test-data.h"
#include "vae-test-gpu.h"

#include <stdint.h>
#include <time.h>

#ifdef GPU_TEST_CUDA_RUNTIME
#include <cuda_runtime_api.h>   // out of memory for real: cudaMemGetInfo, cudaMalloc
#endif

static bool small;           // the emulator's list (see the top)
static bool small_variants;  // and the 64x64 conv tiles, VAE_GPU_CONV_VARIANT being unset

// the least PSNR of the GPU's 8-bit frames against the CPU's
static double min_psnr(enum vae_precision p) {
    switch (p) {
        case VAE_PRECISION_TF32: return 50.0;
        case VAE_PRECISION_FP16: return 42.0;
        case VAE_PRECISION_BF16: return 38.0;
        default:                 return 70.0;
    }
}

// T latent frames [C, h, w], one after another
struct latents {
    int     T, C, h, w;
    float * data;
};

// a latent file: [N, C, h, w] (images), or [1, C, T, h, w] (video) made into frames
static bool read_latents(const char * path, bool video, struct latents * L) {
    int64_t s[5];
    float * raw = read_tensor(path, "latent_tensor", s);
    if (!raw) {
        return false;
    }
    if (!video) {
        *L = (struct latents) { (int) s[0], (int) s[1], (int) s[2], (int) s[3], raw };
        return true;
    }
    CHECK(s[0] == 1, "%s: batch %lld", path, (long long) s[0]);
    *L            = (struct latents) { (int) s[2], (int) s[1], (int) s[3], (int) s[4], NULL };
    const size_t hw = (size_t) L->h * L->w;
    L->data         = malloc((size_t) L->T * L->C * hw * sizeof(float));
    for (int t = 0; t < L->T; t++) {
        for (int c = 0; c < L->C; c++) {
            memcpy(L->data + ((size_t) t * L->C + c) * hw, raw + ((size_t) c * L->T + t) * hw, hw * sizeof(float));
        }
    }
    free(raw);
    return true;
}

// N(0, 1) numbers from a fixed seed (xorshift64* and Box-Muller), as test-image draws them
static float gauss(uint64_t * st) {
    double u[2];
    for (int i = 0; i < 2; i++) {
        *st ^= *st >> 12;
        *st ^= *st << 25;
        *st ^= *st >> 27;
        u[i] = ((double) ((*st * 0x2545F4914F6CDD1DULL) >> 11) + 0.5) / 9007199254740992.0;
    }
    return (float) (sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]));
}

// one latent frame of scale * N(0, 1), with one outlier (GroupNorm statistics are not a tile's)
static struct latents random_latents(int C, int h, int w, uint64_t seed, float scale) {
    struct latents L = { 1, C, h, w, malloc((size_t) C * h * w * sizeof(float)) };
    for (size_t i = 0; i < (size_t) C * h * w; i++) {
        L.data[i] = scale * gauss(&seed);
    }
    L.data[(size_t) C * h * w / 3] = 9.0f;
    return L;
}

// ---- decoding ------------------------------------------------------------------------------------

// how a decode runs: latent frames per step, a reset after the first flush_at frames (0: none),
// the tile edge (0: whole frames); ends: at fp32 and bf16 only (the emulator's time)
struct run {
    int  chunk, flush_at, tile;
    bool ends;
};

// the frames of a decode: 8-bit RGB [F, H, W, 3] (RGBA: 4), or raw f32 [F, 3 (4), H, W]
struct decoded {
    int       frames, height, width, channels;
    int       tile;   // vae_session_tile_size
    int       chunk;  // vae_session_chunk_frames
    char      notice[512];   // what the session told (vae_session_take_notice), "" if nothing
    uint8_t * rgb;
    float *   raw;
};

static void decoded_free(struct decoded * d) {
    free(d->rgb);
    free(d->raw);
    *d = (struct decoded) { 0 };
}

// pop every ready frame into d (cap frames at most)
static bool pop_ready(struct vae_session * s, struct decoded * d, int cap) {
    const size_t n = (size_t) d->channels * d->height * d->width;
    while (vae_session_frames_ready(s) > 0) {
        if (d->frames >= cap) {
            CHECK(false, "more than the %d frames the latents make", cap);
            return false;
        }
        bool ok;
        if (d->raw) {
            ok = vae_session_pop_output(s, d->raw + (size_t) d->frames * n, err, sizeof(err));
        } else {
            struct vae_frame f = { .format  = d->channels == 4 ? VAE_PIXEL_RGBA : VAE_PIXEL_RGB,
                                   .width   = d->width,
                                   .height  = d->height,
                                   .planes  = { d->rgb + (size_t) d->frames * n },
                                   .strides = { d->channels * d->width } };
            ok                 = vae_session_pop_frame(s, &f, err, sizeof(err));
        }
        CHECK(ok, "pop: %s", err);
        if (!ok) {
            return false;
        }
        d->frames++;
    }
    return true;
}

// decode L on b through a session, pushing one latent frame at a time and popping the frames as
// they come; raw: the f32 outputs instead of RGB bytes. false after a failed check.
static bool decode(const struct vae_model * m, vae_backend_t * b, const struct latents * L, enum vae_space space,
                   const struct run * r, bool raw, struct decoded * d) {
    const int patch = vae_model_space_patch(m, space);
    int       cap   = 0;
    for (int t = 0; t < L->T; t++) {
        cap += vae_model_frames_of_latent(m, (uint64_t) t);
    }
    *d = (struct decoded) { .height = m->scale * patch * L->h, .width = m->scale * patch * L->w,
                            .channels = m->out_channels };
    const size_t              n   = (size_t) cap * d->channels * d->height * d->width;
    struct vae_session_config cfg = { L->C, L->h, L->w, space, r->chunk, 0, r->tile };
    struct vae_session *      s   = vae_session_new(m, b, &cfg, err, sizeof(err));
    CHECK(s != NULL, "session on %s: %s", vae_backend_name(b), err);
    if (!s) {
        return false;
    }
    d->tile  = vae_session_tile_size(s);
    d->chunk = vae_session_chunk_frames(s);
    vae_session_take_notice(s, d->notice, sizeof(d->notice));
    if (raw) {
        d->raw = malloc(n * sizeof(float));
    } else {
        d->rgb = malloc(n);
    }
    const size_t fl = (size_t) L->C * L->h * L->w;
    bool         ok = true;
    for (int t = 0; ok && t < r->flush_at; t++) {
        ok = vae_session_push(s, L->data + (size_t) t * fl, err, sizeof(err));
        CHECK(ok, "push: %s", err);
        ok = ok && pop_ready(s, d, cap);
    }
    vae_session_reset(s);
    d->frames = 0;
    for (int t = 0; ok && t < L->T; t++) {
        ok = vae_session_push(s, L->data + (size_t) t * fl, err, sizeof(err));
        CHECK(ok, "push: %s", err);
        ok = ok && pop_ready(s, d, cap);
    }
    ok = ok && vae_session_drain(s, err, sizeof(err));
    CHECK(ok, "drain: %s", err);
    ok = ok && pop_ready(s, d, cap);
    CHECK(!ok || d->frames == cap, "%d frames for %d latent frames, not %d", d->frames, L->T, cap);
    vae_session_free(s);
    if (!ok || d->frames != cap) {
        decoded_free(d);
        return false;
    }
    return true;
}

static double psnr(const uint8_t * a, const uint8_t * b, size_t n) {
    double se = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double) a[i] - (double) b[i];
        se += d * d;
    }
    return se == 0 ? INFINITY : 10.0 * log10(255.0 * 255.0 * (double) n / se);
}

// the CPU's decode (whole frames, one latent frame per step) against the GPU's at each precision
// and each run; the raw outputs of the first run too
static void check_decodes(const char * name, const struct vae_model * m, const struct latents * L,
                          enum vae_space space, const struct run * runs, int n_runs) {
    // (SVD's frames depend on the decode call: its reference decodes the calls of the first run)
    const struct run whole = { m->clip_calls ? runs[0].chunk : 1, 0, 0 };
    struct decoded   ref, ref_raw;
    struct timespec         t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!decode(m, cpu, L, space, &whole, false, &ref)) {
        return;
    }
    if (!decode(m, cpu, L, space, &whole, true, &ref_raw)) {
        decoded_free(&ref);
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%s: %d latent frames of %d x %dx%d -> %d frames of %dx%d (cpu: %.2f s)\n", name, L->T, L->C, L->w, L->h,
           ref.frames, ref.width, ref.height,
           (double) (t1.tv_sec - t0.tv_sec) + 1e-9 * (double) (t1.tv_nsec - t0.tv_nsec));
    const size_t n = (size_t) ref.frames * ref.channels * ref.height * ref.width;
    for (int i = 0; i < N_PRECISIONS; i++) {
        const enum vae_precision p = precisions[i];
        if (small_variants) {
            // the 64x64 tile of each precision in kernels/vae-gpu-conv.cu (a wrong number fails the session)
            setenv("VAE_GPU_CONV_VARIANT", p == VAE_PRECISION_FP32 ? "2" : "3", 1);
        }
        struct decoded one = { 0 };   // run 0's frames where it steps one latent frame at a time, whole
        for (int k = 0; gpu[p] && k < n_runs; k++) {
            const struct run * r = &runs[k];
            if (r->ends && p != VAE_PRECISION_FP32 && p != VAE_PRECISION_BF16) {
                continue;
            }
            struct decoded     got, got_raw = { 0 };
            char               what[160];
            snprintf(what, sizeof(what), "%s [%s] chunk %d%s", name, vae_precision_name(p), r->chunk,
                     r->flush_at ? " after a reset" : "");
            if (r->tile) {
                snprintf(what + strlen(what), sizeof(what) - strlen(what), " tile-size %d", r->tile);
            }
            if (!decode(m, gpu[p], L, space, r, false, &got)) {
                printf("  %-58s FAIL (no decode)\n", what);
                continue;
            }
            CHECK(!r->tile || (got.tile > 0 && got.tile <= r->tile), "%s: decoded in tiles of %d", what, got.tile);
            double maxerr = NAN;
            if (k == 0 && !small && decode(m, gpu[p], L, space, r, true, &got_raw)) {
                maxerr = max_abs_diff(got_raw.raw, ref_raw.raw, n);
            }
            const double db = psnr(got.rgb, ref.rgb, n);
            const bool   ok = db >= min_psnr(p);
            printf("  %-58s PSNR %6.2f dB (at least %g): %s", what, db, min_psnr(p), ok ? "OK" : "FAIL");
            if (k == 0 && !small) {
                printf(", raw max abs error %.3g", maxerr);
            }
            printf("\n");
            CHECK(ok, "%s: PSNR %.2f dB against the cpu, below %g", what, db, min_psnr(p));
            // chunk-frames 0: a video decoder takes 2 latent frames per step on a GPU
            // (vae_backend_auto_frames), the frames of 1 per step: the same bytes where every conv
            // has the same tile (VAE_GPU_CONV_VARIANT); else, as the tiles timed for each graph
            // may differ (the narrow conv's sums in another order), within the precision's PSNR
            const bool stream = m->frames_per_latent > 1 && !m->clip_calls && !m->chunk_latents;
            if (r->chunk == 0 && stream && !r->flush_at && !r->tile) {
                const char * forced = getenv("VAE_GPU_CONV_VARIANT");
                CHECK(got.chunk == 2, "%s: chunk-frames 0 took %d latent frames per step on a GPU, not 2", what,
                      got.chunk);
                if (one.rgb) {
                    const double same = psnr(got.rgb, one.rgb, n);
                    CHECK(forced ? same == INFINITY : same >= min_psnr(p), "%s: PSNR %.2f dB against 1 latent frame "
                          "per step%s", what, same, forced ? " (the same tiles: not the same frames)" : "");
                    printf("  %-58s against 1 latent frame per step: PSNR %.2f dB\n", what, same);
                }
            }
            if (k == 0 && r->chunk == 1 && !r->tile) {
                one     = got;
                got.rgb = NULL;
            }
            decoded_free(&got);
            decoded_free(&got_raw);
        }
        decoded_free(&one);
    }
    decoded_free(&ref);
    decoded_free(&ref_raw);
}

// ---- the families --------------------------------------------------------------------------------

static const struct run image_runs[] = { { 1, 0, 0 }, { 0, 0, 0 } };
static const struct run video_runs[] = { { 1, 0, 0 }, { 0, 0, 0 }, { 2, 2, 0 } };
// small: two images in one step; video one latent frame per step after a reset, then the chunk
// chosen (chunk-frames 0)
static const struct run small_image_runs[] = { { 2, 0, 0 } };
static const struct run small_video_runs[] = { { 1, 1, 0 }, { 0, 0, 0 } };

// the first T frames of L (no more than it has), h x w of each from the top-left, L's frame
// repeated where h or w is larger (a larger frame, for a real GPU's memory)
static void resize_latents(struct latents * L, int T, int h, int w) {
    T            = T < L->T ? T : L->T;
    float * data = malloc((size_t) T * L->C * h * w * sizeof(float));
    for (int tc = 0; data && tc < T * L->C; tc++) {
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                data[((size_t) tc * h + y) * w + x] = L->data[((size_t) tc * L->h + y % L->h) * L->w + x % L->w];
            }
        }
    }
    CHECK(data != NULL, "latents of %d x %d x %d x %d: out of memory", T, L->C, h, w);
    if (data) {
        free(L->data);
        *L = (struct latents) { T, L->C, h, w, data };
    }
}

// SVD: the whole clip as one call (chunk-frames 0), on the GPU and on the CPU
static void check_svd(void) {
    static const struct run whole_clip[] = { { 0, 0, 0 } };
    struct vae_model *      m = vae_model_load(path_in(data_dir, "svd_b2.sgm.safetensors"), VAE_FAMILY_AUTO, err,
                                               sizeof(err));
    CHECK(m != NULL, "svd_b2: %s", err);
    struct latents L = { 0 };
    if (m && read_latents(path_in(data_dir, "svd_b2.latent"), true, &L)) {
        if (small) {
            resize_latents(&L, 3, 2 < L.h ? 2 : L.h, 3 < L.w ? 3 : L.w);
        }
        check_decodes("svd_b2 (whole clip)", m, &L, VAE_SPACE_RAW, whole_clip, 1);
    }
    free(L.data);
    vae_model_free(m);
}

// the fixture's runs on the top-left h x w of its first T latent frames (T 0: all of it)
static void check_fixture_runs(const char * name, const char * model_path, const char * latent_path, bool video,
                               enum vae_space space, const struct run * runs, int n_runs, int T, int h, int w) {
    struct vae_model * m = vae_model_load(model_path, VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m != NULL, "%s: %s", model_path, err);
    struct latents L = { 0 };
    if (m && read_latents(latent_path, video, &L)) {
        if (T > 0) {   // (a crop)
            resize_latents(&L, T, h < L.h ? h : L.h, w < L.w ? w : L.w);
        }
        check_decodes(name, m, &L, space, runs, n_runs);
    }
    free(L.data);
    vae_model_free(m);
}

static void check_fixture(const char * name, const char * model_path, const char * latent_path, bool video,
                          enum vae_space space) {
    if (small) {
        check_fixture_runs(name, model_path, latent_path, video, space, video ? small_video_runs : small_image_runs,
                           video ? 2 : 1, video ? 3 : 2, 2, 3);
    } else if (video) {
        check_fixture_runs(name, model_path, latent_path, video, space, video_runs, 3, 0, 0, 0);
    } else {
        check_fixture_runs(name, model_path, latent_path, video, space, image_runs, 2, 0, 0, 0);
    }
}

static void test_images(void) {
    check_fixture("taef2 (real weights)", path_in(shared_dir, "models/taef2_decoder.safetensors"),
                  path_in(shared_dir, "reference/taef2/small.latent"), false, VAE_SPACE_AUTO);
    check_fixture("taesd_z4_w16", path_in(data_dir, "taesd_z4_w16.orig.safetensors"),
                  path_in(data_dir, "taesd_z4_w16.latent"), false, VAE_SPACE_AUTO);
    check_fixture("taesd_z16_w16 (comfy)", path_in(data_dir, "taesd_z16_w16.comfy.safetensors"),
                  path_in(data_dir, "taesd_z16_w16.latent"), false, VAE_SPACE_AUTO);
    check_fixture("taef2_z32_w16", path_in(data_dir, "taef2_z32_w16.orig.safetensors"),
                  path_in(data_dir, "taef2_z32_w16.latent"), false, VAE_SPACE_AUTO);
}

static void test_videos(void) {
    check_fixture("wan21_b4", path_in(data_dir, "wan21_b4.orig.safetensors"), path_in(data_dir, "wan21_b4.latent"),
                  true, VAE_SPACE_RAW);
    check_fixture("wan21_b4 (normalized latents)", path_in(data_dir, "wan21_b4.orig.safetensors"),
                  path_in(data_dir, "wan21_b4.normalized.latent"), true, VAE_SPACE_NORMALIZED);
    check_fixture("wan22_b4 (normalized latents)", path_in(data_dir, "wan22_b4.orig.safetensors"),
                  path_in(data_dir, "wan22_b4.normalized.latent"), true, VAE_SPACE_NORMALIZED);
    check_fixture("taew21_nf32", path_in(data_dir, "taew21_nf32.safetensors"), path_in(data_dir, "taew21_nf32.latent"),
                  true, VAE_SPACE_AUTO);
    check_fixture("taew22_nf32", path_in(data_dir, "taew22_nf32.safetensors"), path_in(data_dir, "taew22_nf32.latent"),
                  true, VAE_SPACE_NORMALIZED);
    check_fixture("taew22s_nf16 (super)", path_in(data_dir, "taew22s_nf16.safetensors"),
                  path_in(data_dir, "taew22s_nf16.latent"), true, VAE_SPACE_NORMALIZED);
    check_fixture("taehv15s_nf16 (super)", path_in(data_dir, "taehv15s_nf16.safetensors"),
                  path_in(data_dir, "taehv15s_nf16.latent"), true, VAE_SPACE_RAW);
    check_fixture("seedvr2_w32", path_in(data_dir, "seedvr2_w32.safetensors"), path_in(data_dir, "seedvr2_w32.latent"),
                  true, VAE_SPACE_RAW);
    check_fixture("seedvr2_sc (.pth, normalized latents)", path_in(data_dir, "seedvr2_sc.pth"),
                  path_in(data_dir, "seedvr2_sc.normalized.latent"), true, VAE_SPACE_NORMALIZED);
    check_fixture("hyvideo15_w32", path_in(data_dir, "hyvideo15_w32.diffusers.safetensors"),
                  path_in(data_dir, "hyvideo15_w32.latent"), true, VAE_SPACE_RAW);
    check_fixture("hyvideo15_w32 (normalized latents)", path_in(data_dir, "hyvideo15_w32.orig.safetensors"),
                  path_in(data_dir, "hyvideo15_w32.normalized.latent"), true, VAE_SPACE_NORMALIZED);
    check_fixture("ltx2_v20", path_in(data_dir, "ltx2_v20.diffusers.safetensors"), path_in(data_dir, "ltx2_v20.latent"),
                  true, VAE_SPACE_RAW);
    check_fixture("ltx2_v23", path_in(data_dir, "ltx2_v23.orig.safetensors"), path_in(data_dir, "ltx2_v23.latent"),
                  true, VAE_SPACE_RAW);
    check_fixture("minimax_w128", path_in(data_dir, "minimax_w128.diffusers.safetensors"),
                  path_in(data_dir, "minimax_w128.latent"), true, VAE_SPACE_RAW);
}

// kl_sd on random latents of h x w (with an outlier: GroupNorm statistics are not a tile's)
static void check_kl_sd(const char * name, int h, int w, const struct run * runs, int n_runs) {
    struct vae_model * m = vae_model_load(path_in(data_dir, "kl_sd.safetensors"), VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m != NULL, "kl_sd: %s", err);
    if (m) {
        struct latents L = random_latents(4, h, w, 0x5eed0001ULL, 2.0f);
        check_decodes(name, m, &L, VAE_SPACE_AUTO, runs, n_runs);
        free(L.data);
        vae_model_free(m);
    }
}

static void test_kl(void) {
    check_fixture("kl_sd", path_in(data_dir, "kl_sd.safetensors"), path_in(data_dir, "kl_sd.latent"), false,
                  VAE_SPACE_AUTO);
    check_fixture("kl_f1", path_in(data_dir, "kl_f1.safetensors"), path_in(data_dir, "kl_f1.latent"), false,
                  VAE_SPACE_AUTO);
    check_fixture("kl_f2 (raw latents)", path_in(data_dir, "kl_f2.safetensors"), path_in(data_dir, "kl_f2.latent"),
                  false, VAE_SPACE_RAW);
    check_fixture("kl_f2 (normalized latents, 2x2 patches)", path_in(data_dir, "kl_f2.safetensors"),
                  path_in(data_dir, "kl_f2.normalized.latent"), false, VAE_SPACE_NORMALIZED);
    static const struct run hy_runs[] = { { 1, 0, 0 }, { 1, 0, 40 }, { 1, 0, 16 } };
    check_fixture_runs("qwen21_b4 (RGBA), whole and in tiles", path_in(data_dir, "qwen21_b4.diffusers.safetensors"),
                       path_in(data_dir, "qwen21_b4.latent"), false, VAE_SPACE_RAW, hy_runs, 3, 0, 0, 0);
    check_fixture_runs("dcae_w32, whole and in tiles", path_in(data_dir, "dcae_w32.diffusers.safetensors"),
                       path_in(data_dir, "dcae_w32.latent"), false, VAE_SPACE_RAW, hy_runs, 3, 0, 0, 0);
    check_fixture("dcae_w32 (normalized latents: linear attention everywhere)",
                  path_in(data_dir, "dcae_w32.diffusers.safetensors"), path_in(data_dir, "dcae_w32.normalized.latent"),
                  false, VAE_SPACE_NORMALIZED);
    check_fixture_runs("hyimage_w64, whole and in tiles", path_in(data_dir, "hyimage_w64.orig.safetensors"),
                       path_in(data_dir, "hyimage_w64.latent"), false, VAE_SPACE_RAW, hy_runs, 3, 0, 0, 0);

    // in tiles on the GPU against whole frames on the CPU: 192x160 (72 divides neither side), and
    // FLUX.2's normalized latents
    static const struct run sd_tiles[] = { { 1, 0, 32 }, { 1, 0, 72 }, { 1, 0, 16 } };
    check_kl_sd("kl_sd in tiles", 24, 20, sd_tiles, 3);
    static const struct run f2_tiles[] = { { 1, 0, 16 } };
    struct vae_model *      m          = vae_model_load(path_in(data_dir, "kl_f2.safetensors"), VAE_FAMILY_AUTO, err,
                                                        sizeof(err));
    CHECK(m != NULL, "kl_f2: %s", err);
    struct latents L = { 0 };
    if (m && read_latents(path_in(data_dir, "kl_f2.normalized.latent"), false, &L)) {
        check_decodes("kl_f2 normalized in tiles", m, &L, VAE_SPACE_NORMALIZED, f2_tiles, 1);
    }
    free(L.data);
    vae_model_free(m);
}

// causal video decoders in tiles on the GPU against whole frames on the CPU (both lists)
static void test_video_tiles(void) {
    // in 2x2 tiles (each with its own state; SeedVR2's given the whole frame's
    // GroupNorm statistics): 24x24 frames of 3x3 latents, two latent frames (SeedVR2's fixture with
    // one resnet per up-block: fewer steps)
    static const struct run video_tiles[] = { { 1, 0, 16, true } };
    check_fixture_runs("wan21_b4 in tiles", path_in(data_dir, "wan21_b4.orig.safetensors"),
                       path_in(data_dir, "wan21_b4.latent"), true, VAE_SPACE_RAW, video_tiles, 1, 2, 3, 3);
    check_fixture_runs("seedvr2_sc in tiles", path_in(data_dir, "seedvr2_sc.pth"),
                       path_in(data_dir, "seedvr2_sc.normalized.latent"), true, VAE_SPACE_NORMALIZED, video_tiles, 1,
                       2, 3, 3);
    check_fixture_runs("hyvideo15_w32 in tiles", path_in(data_dir, "hyvideo15_w32.orig.safetensors"),
                       path_in(data_dir, "hyvideo15_w32.latent"), true, VAE_SPACE_RAW, video_tiles, 1, 2, 2, 3);
    // LTX-2's centred convs in tiles of 32 pixels (each tile's state filled by its first compute,
    // the residuals queued, the end told to every tile): 3 latent frames of 2x2, fewer than its
    // lookahead, so that the whole clip comes out of the flush
    static const struct run ltx_tiles[] = { { 1, 0, 32, true } };
    check_fixture_runs("ltx2_v20 in tiles", path_in(data_dir, "ltx2_v20.orig.safetensors"),
                       path_in(data_dir, "ltx2_v20.latent"), true, VAE_SPACE_RAW, ltx_tiles, 1, 3, 2, 2);
    check_fixture_runs("ltx2_v23 in tiles", path_in(data_dir, "ltx2_v23.orig.safetensors"),
                       path_in(data_dir, "ltx2_v23.latent"), true, VAE_SPACE_RAW, ltx_tiles, 1, 3, 1, 2);
}

// one decode per family (see the top)
static void test_small(void) {
    check_fixture("taef2 (real weights)", path_in(shared_dir, "models/taef2_decoder.safetensors"),
                  path_in(shared_dir, "reference/taef2/small.latent"), false, VAE_SPACE_AUTO);
    check_fixture("wan21_b4", path_in(data_dir, "wan21_b4.orig.safetensors"), path_in(data_dir, "wan21_b4.latent"),
                  true, VAE_SPACE_RAW);
    check_fixture("wan22_b4", path_in(data_dir, "wan22_b4.orig.safetensors"), path_in(data_dir, "wan22_b4.latent"),
                  true, VAE_SPACE_RAW);
    check_fixture("taew21_nf32", path_in(data_dir, "taew21_nf32.safetensors"), path_in(data_dir, "taew21_nf32.latent"),
                  true, VAE_SPACE_AUTO);
    check_fixture("taew22s_nf16 (super)", path_in(data_dir, "taew22s_nf16.safetensors"),
                  path_in(data_dir, "taew22s_nf16.latent"), true, VAE_SPACE_NORMALIZED);
    check_fixture("seedvr2_sc (.pth, normalized latents)", path_in(data_dir, "seedvr2_sc.pth"),
                  path_in(data_dir, "seedvr2_sc.normalized.latent"), true, VAE_SPACE_NORMALIZED);
    check_fixture("hyvideo15_w32 (edge-replicating convs, causal attention)",
                  path_in(data_dir, "hyvideo15_w32.orig.safetensors"), path_in(data_dir, "hyvideo15_w32.latent"), true,
                  VAE_SPACE_RAW);
    static const struct run kl_runs[] = { { 1, 0, 0 }, { 1, 0, 16 } };
    check_kl_sd("kl_sd whole and in tiles", 3, 4, kl_runs, 2);
    // LTX-2's centred convs, streamed: its 10 latent frames (the stream starts after 9, is flushed at
    // its end) in steps of 2, at fp32 and bf16
    static const struct run ltx_runs[] = { { 2, 0, 0, true } };
    check_fixture_runs("ltx2_v20 (centred convs, reflect)", path_in(data_dir, "ltx2_v20.orig.safetensors"),
                       path_in(data_dir, "ltx2_v20.latent"), true, VAE_SPACE_RAW, ltx_runs, 1, 0, 0, 0);
    check_fixture_runs("ltx2_v23 (temporal and spatial upsamplers)", path_in(data_dir, "ltx2_v23.orig.safetensors"),
                       path_in(data_dir, "ltx2_v23.latent"), true, VAE_SPACE_RAW, ltx_runs, 1, 3, 1, 2);
    // MiniMax-H3's ViT (tokens, RoPE, attention in heads, LayerNorm): 8 latent frames of 1x2, a
    // chunk and a padded one cross-faded from it, at fp32 and bf16
    static const struct run mm_runs[] = { { 1, 0, 0, true } };
    check_fixture_runs("minimax_w128 (a ViT in chunks, cross-faded)", path_in(data_dir, "minimax_w128.diffusers.safetensors"),
                       path_in(data_dir, "minimax_w128.latent"), true, VAE_SPACE_RAW, mm_runs, 1, 8, 1, 2);
    // the 2026 image decoders, at fp32 and bf16 (the emulator's time)
    static const struct run ends_runs[] = { { 1, 0, 0, true }, { 1, 0, 16, true } };
    check_fixture_runs("hyimage_w64 whole and in tiles", path_in(data_dir, "hyimage_w64.orig.safetensors"),
                       path_in(data_dir, "hyimage_w64.latent"), false, VAE_SPACE_RAW, ends_runs, 2, 1, 2, 3);
    check_fixture_runs("qwen21_b4 (RGBA) whole and in tiles", path_in(data_dir, "qwen21_b4.orig.safetensors"),
                       path_in(data_dir, "qwen21_b4.latent"), false, VAE_SPACE_RAW, ends_runs, 2, 1, 2, 3);
    check_fixture_runs("dcae_w32 whole and in tiles", path_in(data_dir, "dcae_w32.orig.safetensors"),
                       path_in(data_dir, "dcae_w32.latent"), false, VAE_SPACE_RAW, ends_runs, 2, 1, 2, 3);
    check_svd();
    test_video_tiles();
}

#ifdef GPU_TEST_CUDA_RUNTIME
// the device memory a session of chunk latent frames per step takes (cudaMemGetInfo around it)
static size_t session_device_bytes(const struct vae_model * m, vae_backend_t * b, const struct latents * L,
                                   int chunk) {
    const struct vae_session_config cfg = { L->C, L->h, L->w, VAE_SPACE_RAW, chunk, 0, 0 };
    size_t                          free0 = 0, free1 = 0, total = 0;
    CHECK(cudaMemGetInfo(&free0, &total) == cudaSuccess, "cudaMemGetInfo");
    struct vae_session * s = vae_session_new(m, b, &cfg, err, sizeof(err));
    CHECK(s != NULL, "session of chunk %d: %s", chunk, err);
    CHECK(cudaMemGetInfo(&free1, &total) == cudaSuccess, "cudaMemGetInfo");
    vae_session_free(s);
    return free0 > free1 ? free0 - free1 : 0;
}

// out of device memory for real, not by the plan's count: all the device's free memory but what
// lies between one and four latent frames per step taken by one cudaMalloc, a session asked for
// four takes fewer (the allocation failed: the plan counts the whole device), says so once, and
// decodes what the CPU does (Wan 2.1 at fp32; on an H200 the same fallback was seen at 480x832)
static void test_out_of_memory(void) {
    const enum vae_precision p = VAE_PRECISION_FP32;
    struct vae_model *       m = vae_model_load(path_in(data_dir, "wan21_b4.orig.safetensors"), VAE_FAMILY_AUTO, err,
                                                sizeof(err));
    struct latents           L = { 0 };
    CHECK(m != NULL, "wan21_b4: %s", err);
    if (!m || !gpu[p] || !read_latents(path_in(data_dir, "wan21_b4.latent"), true, &L)) {
        vae_model_free(m);
        return;
    }
    static const struct run one = { 1, 0, 0 }, four = { 4, 0, 0 };
    struct decoded          ref, got = { 0 };
    if (small) {   // (the emulator's time: 3 latent frames of 3x3; the 64x64 tiles of fp32)
        resize_latents(&L, 3, 3, 3);
        setenv("VAE_GPU_CONV_VARIANT", "2", 1);
    } else {   // (a real GPU's memory comes in pages of 2 MiB: the fixture's 5x7 takes one page at any chunk)
        resize_latents(&L, L.T, 40, 56);
    }
    session_device_bytes(m, gpu[p], &L, 1);   // (the weights uploaded once)
    const size_t need1 = session_device_bytes(m, gpu[p], &L, 1), need4 = session_device_bytes(m, gpu[p], &L, 4);
    size_t       free_b = 0, total = 0;
    void *       ballast = NULL;
    CHECK(need4 > need1 && cudaMemGetInfo(&free_b, &total) == cudaSuccess && free_b > (need1 + need4) / 2 &&
              cudaMalloc(&ballast, free_b - (need1 + need4) / 2) == cudaSuccess,
          "out of memory: 1 latent frame per step takes %zu bytes, 4 take %zu; %zu free", need1, need4, free_b);
    if (ballast && decode(m, cpu, &L, VAE_SPACE_RAW, &one, false, &ref)) {
        const bool decoded = decode(m, gpu[p], &L, VAE_SPACE_RAW, &four, false, &got);
        CHECK(decoded && got.chunk < 4 && got.tile == 0 && strstr(got.notice, "chunk-frames 4 does not fit") &&
                  strstr(got.notice, "out of device memory"),
              "out of memory: chunk %d, tile %d, notice \"%s\"", got.chunk, got.tile, got.notice);
        const double db = decoded ? psnr(got.rgb, ref.rgb, (size_t) ref.frames * ref.channels * ref.height * ref.width)
                                  : 0.0;
        CHECK(db >= min_psnr(p), "out of memory: PSNR %.2f dB against the cpu", db);
        printf("out of memory: 1 latent frame per step takes %zu bytes, 4 take %zu; with %zu free, chunk-frames 4 "
               "decoded %d per step, PSNR %.2f dB against the cpu; the notice: %s\n", need1, need4,
               (need1 + need4) / 2, got.chunk, db, got.notice);
        decoded_free(&ref);
        decoded_free(&got);
    }
    cudaFree(ballast);
    free(L.data);
    vae_model_free(m);
}
#endif

// ---- main ----------------------------------------------------------------------------------------


int main(int argc, char ** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);   // the lines between the failed checks (stderr)
    if (!vae_backend_is_built(GPU_BACKEND)) {
        printf("skip: this build has no %s backend\n", vae_backend_type_name(GPU_BACKEND));
        return TEST_SKIP;
    }
    small          = argc > 1 && strcmp(argv[1], "small") == 0;
    small_variants = small && !getenv("VAE_GPU_CONV_VARIANT");
    if (argc > 1 && !small) {
        fprintf(stderr, "usage: %s [small]\n", argv[0]);
        return 1;
    }
    if (!test_data_init()) {
        return 1;
    }
    bool have_gpu = gpu_init();
    if (have_gpu && small) {
        test_small();
    } else if (have_gpu) {
        test_images();
        test_videos();
        test_kl();
        check_svd();
        test_video_tiles();
    }
#ifdef GPU_TEST_CUDA_RUNTIME
    if (have_gpu) {
        test_out_of_memory();
    }
#endif
    for (int i = 0; i < N_PRECISIONS; i++) {
        vae_backend_free(gpu[precisions[i]]);
    }
    vae_backend_free(cpu);
    return have_gpu ? vae_test_summary() : TEST_SKIP;
}
