// The causal video decoders (Wan 2.1 and 2.2 VAEs, TAEHV) through the streaming session, without
// GStreamer: random-weight fixtures against the upstream implementations (diffusers'
// AutoencoderKLWan, taehv.py; tests/data, made by gen_video_fixtures.py) in both Wan namings and
// both latent spaces, the same frames whatever the chunk size and after a flush, the same frames
// again in tiles (Wan, SeedVR2) and the memory they save, frame counts on the real Wan 2.1 latents of
// ../shared/media, and memory that stays flat over a long stream.
// `test-video --quick` leaves out the large sizes (for valgrind).

#include "vae-test-data.h"

#include <unistd.h>

// a video decode: frames [F, 3, H, W] of the decoder's raw output clamped to its range
struct video {
    int     frames, height, width;
    float * data;
    size_t  peak;    // the session's vae_session_peak_bytes
    int     tile;    // and vae_session_tile_size
};

// latent frame t of [1, C, T, h, w] as [C, h, w]
static void latent_frame(const float * lat, const int64_t ls[5], int64_t t, float * dst) {
    const int64_t hw = ls[3] * ls[4];
    for (int64_t c = 0; c < ls[1]; c++) {
        memcpy(dst + c * hw, lat + (c * ls[2] + t) * hw, (size_t) hw * sizeof(float));
    }
}

// pop every ready frame into v, clamped to where the model's output maps into [0, 1]
static void pop_all(struct vae_session * s, const struct vae_model * m, struct video * v) {
    const size_t n  = (size_t) 3 * v->height * v->width;
    const float  lo = -m->out_offset / m->out_scale, hi = (1.0f - m->out_offset) / m->out_scale;
    while (vae_session_frames_ready(s) > 0) {
        float * dst = v->data + (size_t) v->frames * n;
        CHECK(vae_session_pop_output(s, dst, err, sizeof(err)), "%s", err);
        for (size_t i = 0; i < n; i++) {
            dst[i] = dst[i] < lo ? lo : dst[i] > hi ? hi : dst[i];
        }
        v->frames++;
    }
}

// decode latents [1, C, T, h, w] pushing one latent frame at a time, in `tile`-pixel tiles (0:
// whole frames unless they exceed max_bytes: then v.tile says the tile chosen); with flush_at > 0
// the first flush_at frames (at most the clip's) are pushed, then the session is reset and the
// whole stream pushed again
static struct video decode_video(const struct vae_model * m, const float * lat, const int64_t ls[5],
                                 enum vae_space space, int chunk, int flush_at, int tile, size_t max_bytes) {
    struct video              v   = { 0, m->scale * (int) ls[3], m->scale * (int) ls[4], NULL, 0, 0 };
    struct vae_session_config cfg = { (int) ls[1], (int) ls[3], (int) ls[4], space, chunk, max_bytes, tile, NULL };
    struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
    CHECK(s != NULL, "%s", err);
    if (!s) {
        return v;
    }
    v.tile = vae_session_tile_size(s);
    CHECK(v.tile == tile || (tile == 0 && max_bytes > 0), "tile size %d in use, not %d", v.tile, tile);
    v.peak = vae_session_peak_bytes(s);
    const int64_t T     = ls[2];
    float *       frame = malloc((size_t) (ls[1] * ls[3] * ls[4]) * sizeof(float));
    v.data              = malloc((size_t) (1 + m->frames_per_latent * T) * 3 * v.height * v.width * sizeof(float));
    for (int64_t t = 0; t < flush_at && t < T; t++) { // (a clip shorter than flush_at: all of it)
        latent_frame(lat, ls, t, frame);
        CHECK(vae_session_push(s, frame, err, sizeof(err)), "%s", err);
        pop_all(s, m, &v);
    }
    vae_session_reset(s);
    v.frames = 0;
    for (int64_t t = 0; t < T; t++) {
        latent_frame(lat, ls, t, frame);
        CHECK(vae_session_push(s, frame, err, sizeof(err)), "%s", err);
        pop_all(s, m, &v);
        v.peak = vae_session_peak_bytes(s) > v.peak ? vae_session_peak_bytes(s) : v.peak; // (a growing cache)
    }
    CHECK(vae_session_drain(s, err, sizeof(err)), "%s", err);
    pop_all(s, m, &v);
    CHECK(vae_session_latents_in(s) == (uint64_t) T && vae_session_frames_out(s) == (uint64_t) v.frames,
          "session counted %llu latents and %llu frames, not %lld and %d",
          (unsigned long long) vae_session_latents_in(s), (unsigned long long) vae_session_frames_out(s),
          (long long) T, v.frames);
    vae_session_free(s);
    free(frame);
    return v;
}

// the largest difference between the frames of v and `expected` [1, 3, F, H, W] (NCTHW)
static double video_error(const struct video * v, const float * exp) {
    const int F = v->frames, H = v->height, W = v->width;
    double    worst = 0;
    for (int f = 0; f < F; f++) {
        for (int c = 0; c < 3; c++) {
            const double d = max_abs_diff(v->data + ((size_t) f * 3 + c) * H * W, exp + ((size_t) c * F + f) * H * W,
                                          (size_t) H * W);
            worst = d > worst || d != d ? d : worst;
        }
    }
    return worst;
}

// the reference [1, 3, F, H, W] clamped as the decode is (SeedVR2's decode itself does not clamp);
// MiniMax-H3's ImageNet-normalised output first made RGB, x std[c] + mean[c], as its decoder's last
// layer does here
static void clamp_expected(const struct vae_model * m, float * exp, const int64_t es[5]) {
    static const float std[3] = { 0.229f, 0.224f, 0.225f }, mean[3] = { 0.485f, 0.456f, 0.406f };
    const float        lo = -m->out_offset / m->out_scale, hi = (1.0f - m->out_offset) / m->out_scale;
    const int64_t      plane = es[2] * es[3] * es[4];
    for (int64_t i = 0; i < es[0] * es[1] * plane; i++) {
        const float v = m->family == VAE_FAMILY_MINIMAXH3 ? exp[i] * std[i / plane % 3] + mean[i / plane % 3] : exp[i];
        exp[i]        = v < lo ? lo : v > hi ? hi : v;
    }
}

// the decode against `expected` [1, 3, F, H, W] (NCTHW), at every chunk size and after a flush;
// the model loaded as load_as (AUTO: detected) must be `family`
static void check_video_as(const char * model_file, enum vae_family load_as, enum vae_family family,
                           const char * latent_file, enum vae_space space, const char * expected_name, double tol) {
    struct vae_model * m = vae_model_load(path_in(data_dir, model_file), load_as, err, sizeof(err));
    CHECK(m != NULL, "%s: %s", model_file, err);
    int64_t ls[5], es[5];
    float * lat = read_tensor(path_in(data_dir, latent_file), "latent_tensor", ls);
    char    expected_file[256];
    snprintf(expected_file, sizeof(expected_file), "%.*s.expected.safetensors",
             (int) (strchr(latent_file, '.') - latent_file), latent_file);
    float * exp = read_tensor(path_in(data_dir, expected_file), expected_name, es);
    if (!m || !lat || !exp) {
        vae_model_free(m);
        free(lat);
        free(exp);
        return;
    }
    clamp_expected(m, exp, es);
    CHECK(m->family == family, "%s detected as %s", model_file, vae_family_name(m->family));
    const int F = (int) es[2], H = (int) es[3], W = (int) es[4];
    CHECK((uint64_t) F == vae_model_stream_frames(m, (uint64_t) ls[2]), "the fixture has %d frames for %lld latent frames",
          F, (long long) ls[2]);
    struct video first = { 0 };
    for (int run = 0; run < 6; run++) {
        // chunk 1, 2, 3, 0 (automatic), 5 (more than the stream), then 2 after a flush at frame 3
        static const int chunks[6] = { 1, 2, 3, 0, 5, 2 };
        struct video     v = decode_video(m, lat, ls, space, chunks[run], run == 5 ? 3 : 0, 0, 0);
        if (!v.data) {
            continue;
        }
        CHECK(v.frames == F && v.height == H && v.width == W, "chunk %d: %d frames of %dx%d, expected %d of %dx%d",
              chunks[run], v.frames, v.width, v.height, F, W, H);
        const double worst = v.frames == F && v.height == H && v.width == W ? video_error(&v, exp) : 1e9;
        printf("%-36s %-8s %-18s chunk %d%s: max abs error %.3g\n", model_file, vae_family_name(m->family),
               expected_name, chunks[run], run == 5 ? " after a flush" : "", worst);
        CHECK(worst <= tol, "%s chunk %d: max abs error %g above %g", model_file, chunks[run], worst, tol);
        if (run == 0) {
            first = v;
            continue;
        }
        if (v.frames == first.frames) {
            const double d = max_abs_diff(v.data, first.data, (size_t) F * 3 * H * W);
            CHECK(d <= 1e-5, "chunk %d differs from chunk 1 by %g", chunks[run], d);
        }
        free(v.data);
    }
    free(first.data);
    free(lat);
    free(exp);
    vae_model_free(m);
}

static void check_video(const char * model_file, enum vae_family family, const char * latent_file,
                        enum vae_space space, const char * expected_name, double tol) {
    check_video_as(model_file, VAE_FAMILY_AUTO, family, latent_file, space, expected_name, tol);
}

static void test_references(void) {
    check_video("wan21_b4.diffusers.safetensors", VAE_FAMILY_WAN21, "wan21_b4.latent", VAE_SPACE_AUTO, "decoded", 1e-4);
    check_video("wan21_b4.orig.safetensors", VAE_FAMILY_WAN21, "wan21_b4.latent", VAE_SPACE_RAW, "decoded", 1e-4);
    check_video("wan21_b4.orig.safetensors", VAE_FAMILY_WAN21, "wan21_b4.normalized.latent", VAE_SPACE_NORMALIZED,
                "decoded_normalized", 1e-4);
    check_video("wan22_b4.diffusers.safetensors", VAE_FAMILY_WAN22, "wan22_b4.latent", VAE_SPACE_AUTO, "decoded", 1e-4);
    check_video("wan22_b4.orig.safetensors", VAE_FAMILY_WAN22, "wan22_b4.latent", VAE_SPACE_RAW, "decoded", 1e-4);
    check_video("wan22_b4.diffusers.safetensors", VAE_FAMILY_WAN22, "wan22_b4.normalized.latent", VAE_SPACE_NORMALIZED,
                "decoded_normalized", 1e-4);
    check_video("taew21_nf32.safetensors", VAE_FAMILY_TAEW21, "taew21_nf32.latent", VAE_SPACE_AUTO, "decoded", 1e-4);
    check_video("taew22_nf32.safetensors", VAE_FAMILY_TAEW22, "taew22_nf32.latent", VAE_SPACE_NORMALIZED, "decoded",
                1e-4);
}

// the real Wan 2.1 latents (16 frames of 40x64) through random-weight models of both kinds
static void test_cheesecake(void) {
    int64_t ls[5];
    float * lat = read_tensor(path_in(shared_dir, "media/wan21_cheesecake.latent"), "latent_tensor", ls);
    CHECK(lat && ls[0] == 1 && ls[1] == 16 && ls[2] == 16 && ls[3] == 40 && ls[4] == 64, "unexpected latent shape");
    static const char * models[2] = { "wan21_b4.orig.safetensors", "taew21_nf32.safetensors" };
    for (int i = 0; lat && i < 2; i++) {
        struct vae_model * m = vae_model_load(path_in(data_dir, models[i]), VAE_FAMILY_AUTO, err, sizeof(err));
        CHECK(m != NULL, "%s", err);
        if (!m) {
            continue;
        }
        struct video v = decode_video(m, lat, ls, VAE_SPACE_NORMALIZED, 0, 0, 0, 0);
        CHECK(v.frames == 61 && v.width == 512 && v.height == 320, "%s: %d frames of %dx%d, not 61 of 512x320",
              models[i], v.frames, v.width, v.height);
        size_t bad = 0;
        double sum = 0, sq = 0;
        const size_t n = (size_t) v.frames * 3 * v.height * v.width;
        for (size_t j = 0; j < n; j++) {
            bad += !isfinite(v.data[j]);
            sum += v.data[j];
            sq += (double) v.data[j] * v.data[j];
        }
        const double sd = sqrt(sq / (double) n - (sum / (double) n) * (sum / (double) n));
        printf("cheesecake through %s: %d frames of %dx%d, mean %.3f std %.3f\n", models[i], v.frames, v.width, v.height,
               sum / (double) n, sd);
        CHECK(bad == 0 && sd > 0.01, "%s: %zu non-finite values, std %g", models[i], bad, sd);
        free(v.data);
        vae_model_free(m);
    }
    free(lat);
}

// a causal video stream decoded in tiles (vae-tile-video.c) at tile sizes that divide neither
// side, down to the smallest, and chunk sizes 1 and 2: the frames of the whole-frame stream and of
// upstream (`expected` in the latents' .expected.safetensors), in less memory the smaller the tile;
// with `limits`, memory limits taken from those decodes' peaks choose tiles and fewer frames per
// step (not for a decoder whose state grows with the stream: its peak depends on the clip)
static void check_tiled(const char * model_file, const char * latent_file, enum vae_space space,
                        const char * expected_name, bool limits) {
    static const int   tiles[3] = { 36, 22, 16 };
    struct vae_model * m        = vae_model_load(path_in(data_dir, model_file), VAE_FAMILY_AUTO, err, sizeof(err));
    int64_t            ls[5], es[5];
    float *            lat = read_tensor(path_in(data_dir, latent_file), "latent_tensor", ls);
    char               expected[64];
    snprintf(expected, sizeof(expected), "%.*s.expected.safetensors", (int) strcspn(latent_file, "."), latent_file);
    float * exp = read_tensor(path_in(data_dir, expected), expected_name, es);
    CHECK(m && lat && exp, "%s: %s", model_file, err);
    struct video whole = { 0 };
    if (m && lat && exp) {
        clamp_expected(m, exp, es);
        whole = decode_video(m, lat, ls, space, 1, 0, 0, 0);
    }
    printf("%s: whole frames %dx%d: peak %zu bytes, max abs error %.3g against upstream\n", model_file, whole.width,
           whole.height, whole.peak, whole.data ? video_error(&whole, exp) : 1e9);
    for (int t = 0; whole.data && t < 3; t++) {
        for (int chunk = 1; chunk <= 2; chunk++) {
            struct video v = decode_video(m, lat, ls, space, chunk, chunk == 2 ? 2 : 0, tiles[t], 0);
            CHECK(v.frames == whole.frames, "%d frames tiled, %d whole", v.frames, whole.frames);
            if (v.frames != whole.frames) {
                free(v.data);
                continue;
            }
            const double d = max_abs_diff(v.data, whole.data, (size_t) v.frames * 3 * v.height * v.width);
            const double e = video_error(&v, exp);
            printf("%s: %d-pixel tiles, chunk %d%s: peak %zu bytes, max abs %.3g from whole frames, %.3g from "
                   "upstream\n", model_file, tiles[t], chunk, chunk == 2 ? " after a flush" : "", v.peak, d, e);
            CHECK(d <= 1e-4 && e <= 1e-4, "%s in %d-pixel tiles: %g from whole frames, %g from upstream", model_file,
                  tiles[t], d, e);
            CHECK(v.peak < whole.peak, "%s: %d-pixel tiles take %zu bytes, whole frames %zu", model_file, tiles[t],
                  v.peak, whole.peak);
            free(v.data);
        }
    }
    if (!limits) {
        free(whole.data);
        free(lat);
        free(exp);
        vae_model_free(m);
        return;
    }
    // a memory limit that whole frames exceed and 16-pixel tiles do not: tiles of their own accord
    struct vae_session_config cfg = { (int) ls[1], (int) ls[3], (int) ls[4], space, 1, 0, 16, NULL };
    struct vae_session *      s   = whole.data ? vae_session_new(m, cpu, &cfg, err, sizeof(err)) : NULL;
    const size_t              limit = s ? vae_session_peak_bytes(s) : 0;
    vae_session_free(s);
    struct video fit = limit ? decode_video(m, lat, ls, space, 2, 0, 0, limit) : (struct video) { 0 };
    printf("%s: within %zu bytes: tile-size %d, peak %zu bytes\n", model_file, limit, fit.tile, fit.peak);
    CHECK(fit.data && fit.tile > 0 && fit.peak <= limit && fit.frames == whole.frames &&
              max_abs_diff(fit.data, whole.data, (size_t) fit.frames * 3 * fit.height * fit.width) <= 1e-4,
          "%s within %zu bytes: tile-size %d, peak %zu, %d frames", model_file, limit, fit.tile, fit.peak, fit.frames);
    free(fit.data);
    // a limit that 4 latent frames per step exceed and 1 does not: 1 per step, whole frames, the
    // choice told once
    cfg.tile_size = 0;
    s             = whole.data ? vae_session_new(m, cpu, &cfg, err, sizeof(err)) : NULL;
    const size_t one = s ? vae_session_peak_bytes(s) : 0;
    vae_session_free(s);
    cfg.chunk_frames = 4, cfg.max_bytes = one;
    s                = one ? vae_session_new(m, cpu, &cfg, err, sizeof(err)) : NULL;
    char notice[512] = "";
    CHECK(s && vae_session_chunk_frames(s) == 1 && vae_session_tile_size(s) == 0 &&
              vae_session_take_notice(s, notice, sizeof(notice)) && strstr(notice, "chunk-frames 4 does not fit") &&
              strstr(notice, "decoding 1 latent frames per step") && !vae_session_take_notice(s, notice, sizeof(notice)),
          "%s: chunk-frames 4 within %zu bytes: %s", model_file, one, s ? notice : err);
    printf("%s: chunk-frames 4 within %zu bytes: %s\n", model_file, one, notice);
    vae_session_free(s);
    struct video fewer = one ? decode_video(m, lat, ls, space, 4, 0, 0, one) : (struct video) { 0 };
    CHECK(fewer.data && fewer.tile == 0 && fewer.frames == whole.frames &&
              max_abs_diff(fewer.data, whole.data, (size_t) fewer.frames * 3 * fewer.height * fewer.width) <= 1e-4,
          "%s: chunk-frames 4 within %zu bytes: tile-size %d, %d frames", model_file, one, fewer.tile, fewer.frames);
    free(fewer.data);
    free(whole.data);
    free(lat);
    free(exp);
    vae_model_free(m);
}

// Wan 2.1 and 2.2 in tiles; SeedVR2 (its GroupNorm statistics those of the whole frame, its causal
// state replicating each tile's crop of the first frame) in both files and latent spaces
static void test_tiled(void) {
    check_tiled("wan21_b4.orig.safetensors", "wan21_b4.latent", VAE_SPACE_RAW, "decoded", true);
    check_tiled("wan22_b4.orig.safetensors", "wan22_b4.latent", VAE_SPACE_RAW, "decoded", true);
    check_tiled("seedvr2_w32.safetensors", "seedvr2_w32.latent", VAE_SPACE_RAW, "decoded", true);
    check_tiled("seedvr2_sc.pth", "seedvr2_sc.normalized.latent", VAE_SPACE_NORMALIZED, "decoded_normalized", true);
}

// the memory of a tiled Wan or SeedVR2 stream at 512x768 (sessions prepared, nothing decoded): whole frames
// need the activations of all 4 frames of a step; tiles need the causal state (about the
// whole-frame one: each tile keeps its crop's), the whole-frame activations of one frame at a
// time, and one tile's graph. Shrinking the tile shrinks that graph until the crops' 2-pixel
// overlap in the state costs more than it saves (for these 4-channel Wan models, whose state is
// most of a tiled peak, at about 256 pixels: 128-pixel tiles may cost up to 1% more; for SeedVR2
// below ~128; for full-width Wan 2.1 at 1920x1088 below ~256). A set cancel flag stops a tiled
// decode.
static void test_tiled_memory(void) {
    // 256-pixel tiles below this share of whole frames (SeedVR2: more of its peak is causal state,
    // the replicating convs of its upsamplers and resnets alike), 128-pixel ones below this
    // multiple of the 256-pixel peak
    static const struct {
        const char * file;
        double       share, grow;
    } models[3] = { { "wan21_b4.orig.safetensors", 0.75, 1.01 }, { "wan22_b4.orig.safetensors", 0.75, 1.01 },
                    { "seedvr2_w32.safetensors", 0.65, 1.0 } };
    static const int tiles[5] = { 0, 256, 128, 64, 16 };
    for (int i = 0; i < 3; i++) {
        struct vae_model * m = vae_model_load(path_in(data_dir, models[i].file), VAE_FAMILY_AUTO, err, sizeof(err));
        CHECK(m != NULL, "%s", err);
        if (!m) {
            continue;
        }
        const int h = 512 / m->scale, w = 768 / m->scale;
        size_t    peak[5] = { 0 };
        for (int t = 0; t < 5; t++) {
            struct vae_session_config cfg = { m->latent_channels, h, w, VAE_SPACE_AUTO, 1, 0, tiles[t], NULL };
            struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
            CHECK(s != NULL, "%s", err);
            peak[t] = s ? vae_session_peak_bytes(s) : 0;
            printf("%s at 768x512: tile-size %3d: peak %.2f MiB\n", models[i].file, tiles[t], peak[t] / 1048576.0);
            vae_session_free(s);
        }
        CHECK(peak[1] < peak[0] * models[i].share && peak[2] < peak[1] * models[i].grow,
              "%s: peaks %zu (whole), %zu (256), %zu (128)",
              models[i].file, peak[0], peak[1], peak[2]);
        CHECK(peak[4] < peak[0] && peak[4] < peak[1] * 5 / 4, "%s: 16-pixel tiles peak at %zu bytes", models[i].file,
              peak[4]);
        // cancelled: the push fails with the message, and the next stream decodes
        const int                 cancel = 1;
        float                     lat[48 * 16];
        struct vae_session_config cfg = { m->latent_channels, 4, 4, VAE_SPACE_AUTO, 1, 0, 16, &cancel };
        struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
        CHECK(s != NULL, "%s", err);
        for (int j = 0; j < 48 * 16; j++) {
            lat[j] = sinf(0.3f * (float) j);
        }
        CHECK(s && !vae_session_push(s, lat, err, sizeof(err)) && strcmp(err, VAE_SESSION_INTERRUPTED) == 0,
              "a cancelled tiled decode gave '%s'", err);
        CHECK(s && vae_session_frames_ready(s) == 0, "a cancelled decode made frames");
        vae_session_free(s);
        vae_model_free(m);
    }
}

// files that look like a video decoder but cannot be one are refused with the cause
static void test_load_errors(void) {
    static const struct {
        const char * file, * drop, * cut, * want;
    } cases[] = {
        { "wan21_b4.orig.safetensors", "decoder.head.2.weight", NULL, "tensor 'decoder.head.2.weight' is missing" },
        { "wan21_b4.orig.safetensors", NULL, "decoder.upsamples.3.time_conv.weight", "'decoder.upsamples.3.time_conv.weight' has the wrong shape" },
        { "wan21_b4.diffusers.safetensors", "decoder.mid_block.attentions.0.proj.bias", NULL, "'decoder.middle.1.proj.bias' is missing" },
        { "wan21_b4.orig.safetensors", NULL, "decoder.conv1.weight", "has the wrong shape" },
        { "taew21_nf32.safetensors", "decoder.10.conv.2.bias", NULL, "tensor 'decoder.10.conv.2.bias' is missing" },
        { "taew21_nf32.safetensors", NULL, "decoder.22.weight", "output channels" },
        { "taew21_nf32.safetensors", NULL, "decoder.13.conv.weight", "TGrow" },
        { "wan22_b4.orig.safetensors", NULL, "decoder.head.2.weight", "'decoder.head.2.weight' is missing or does not give 12 channels" },
        { "wan22_b4.diffusers.safetensors", "decoder.up_blocks.2.upsampler.resample.1.bias", NULL, "'decoder.upsamples.2.upsamples.3.resample.1.bias' is missing" },
        { "wan22_b4.orig.safetensors", NULL, "decoder.upsamples.2.upsamples.3.resample.1.weight", "up-block 2 goes from 16 to 7 channels" },
        { "wan22_b4.orig.safetensors", "decoder.upsamples.0.upsamples.2.residual.6.bias", NULL, "'decoder.upsamples.0.upsamples.2.residual.6.bias' is missing" },
        { "hyvideo15_w32.orig.safetensors", "decoder.up.1.upsample.conv.conv.bias", NULL,
          "tensor 'decoder.up.1.upsample.conv.conv.weight' or its bias is missing or is not an upsampler" },
        { "hyvideo15_w32.orig.safetensors", NULL, "decoder.up.0.upsample.conv.conv.weight", "is not an upsampler" },
        { "hyvideo15_w32.diffusers.safetensors", "decoder.mid_block.attentions.0.to_k.weight", NULL,
          "attention tensor 'decoder.mid.attn_1.k'" },
        { "hyvideo15_w32.diffusers.safetensors", "decoder.up_blocks.2.resnets.1.norm2.gamma", NULL,
          "tensor 'decoder.up.2.block.1.norm2.gamma' is missing" },
        { "hyvideo15_w32.orig.safetensors", NULL, "decoder.conv_in.conv.weight",
          "is not a 3x3x3 conv from the 32 latent channels" },
        { "ltx2_v20.orig.safetensors", "decoder.up_blocks.3.conv.conv.bias", NULL,
          "ltx2: tensor 'decoder.up_blocks.3.conv.conv.weight' or its bias is missing" },
        { "ltx2_v23.orig.safetensors", NULL, "decoder.up_blocks.1.conv.conv.weight",
          "is not an upsampler to 2, 4 or 8 times the channels of the layer after it" },
        { "ltx2_v20.diffusers.safetensors", "decoder.up_blocks.1.resnets.1.conv2.conv.bias", NULL,
          "tensor 'decoder.up_blocks.4.res_blocks.1.conv2.conv.bias' is missing" },
        { "ltx2_v23.diffusers.safetensors", NULL, "decoder.conv_out.conv.weight",
          "ltx2.3: tensor 'decoder.conv_out.conv.bias' has the wrong shape (expected shape [47]" },
        { "minimax_w128.diffusers.safetensors", "decoder.transformer_blocks.1.scale2", NULL,
          "minimax-h3: 'decoder.transformer_blocks.1.ff.net.2.weight', 'decoder.transformer_blocks.1.ff.net.2.bias' or "
          "'decoder.transformer_blocks.1.scale2' is missing or not of 128 rows" },
        { "minimax_w128.diffusers.safetensors", NULL, "decoder.transformer_blocks.0.attn.to_k.weight",
          "minimax-h3: 'decoder.transformer_blocks.0.attn.to_k.weight' is missing or not of 128 rows and columns" },
        { "minimax_w128.diffusers.safetensors", "decoder.norm_out.bias", NULL,
          "minimax-h3: tensor 'decoder.norm_out.bias' is missing" },
        { "minimax_w128.diffusers.safetensors", "decoder.transformer_blocks.1.attn.to_q.weight", NULL,
          "tensor 'decoder.transformer_blocks.1.attn.to_k.bias' is not part of the minimax-h3 decoder" },
        { "minimax_w128.diffusers.safetensors", NULL, "decoder.proj_out.weight",
          "minimax-h3: 'decoder.proj_out.weight' or its bias is missing or not of 3072 rows" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *       path = edited_model(cases[i].file, cases[i].drop, cases[i].cut);
        struct vae_model * m    = path ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)) : NULL;
        CHECK(path && m == NULL, "%s without %s / with a shorter %s loaded", cases[i].file,
              cases[i].drop ? cases[i].drop : "-", cases[i].cut ? cases[i].cut : "-");
        CHECK_ERR_HAS(err, cases[i].want);
        printf("refused: %s\n", err);
        vae_model_free(m);
        if (path) {
            unlink(path);
        }
    }
    // a family the user names must be the file's
    struct vae_model * m = vae_model_load(path_in(data_dir, "wan21_b4.orig.safetensors"), VAE_FAMILY_TAEW21, err,
                                          sizeof(err));
    CHECK(m == NULL, "wan loaded as taew2_1");
    CHECK_ERR_HAS(err, "model-family taew2_1 was asked for, but the file holds a wan2.1 decoder");
    m = vae_model_load(path_in(data_dir, "taew21_nf32.safetensors"), VAE_FAMILY_TAESD, err, sizeof(err));
    CHECK(m == NULL, "taehv loaded as taesd");
    CHECK_ERR_HAS(err, "model-family taesd was asked for");
    // the 48-channel decoders: Wan 2.2 and taew2_2 are told apart, and from Wan 2.1
    static const struct {
        const char *    file;
        enum vae_family want;
        const char *    found;
    } families[] = {
        { "wan22_b4.orig.safetensors", VAE_FAMILY_WAN21, "wan2.2" },
        { "wan22_b4.diffusers.safetensors", VAE_FAMILY_TAEW22, "wan2.2" },
        { "wan21_b4.diffusers.safetensors", VAE_FAMILY_WAN22, "wan2.1" },
        { "taew22_nf32.safetensors", VAE_FAMILY_WAN22, "taew2_2" },
    };
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        m = vae_model_load(path_in(data_dir, families[i].file), families[i].want, err, sizeof(err));
        CHECK(m == NULL, "%s loaded as %s", families[i].file, vae_family_name(families[i].want));
        char want[160];
        snprintf(want, sizeof(want), "model-family %s was asked for, but the file holds a %s decoder",
                 vae_family_name(families[i].want), families[i].found);
        CHECK_ERR_HAS(err, want);
        vae_model_free(m);
    }
    m = vae_model_load(path_in(data_dir, "wan22_b4.orig.safetensors"), VAE_FAMILY_WAN22, err, sizeof(err));
    CHECK(m && m->family == VAE_FAMILY_WAN22 && m->latent_channels == 48 && m->scale == 16, "wan2.2 asked for: %s",
          m ? vae_family_name(m->family) : err);
    vae_model_free(m);
    // raw latents into a 16-channel TAEHV file need the family named (Hunyuan's taehv has its shapes)
    m = vae_model_load(path_in(data_dir, "taew21_nf32.safetensors"), VAE_FAMILY_AUTO, err, sizeof(err));
    float div[16], add[16];
    CHECK(m && !vae_model_space_affine(m, VAE_SPACE_RAW, div, add, err, sizeof(err)), "raw taken without a family");
    CHECK_ERR_HAS(err, "set model-family");
    vae_model_free(m);
    m = vae_model_load(path_in(data_dir, "taew21_nf32.safetensors"), VAE_FAMILY_TAEW21, err, sizeof(err));
    CHECK(m && vae_model_space_affine(m, VAE_SPACE_RAW, div, add, err, sizeof(err)), "%s", err);
    // channel 0: (z + 0.7571) / 2.8184
    CHECK(m && fabsf(1.0f / div[0] + add[0] - (1.0f + 0.7571f) / 2.8184f) < 1e-6f, "taew2_1 raw conversion");
    vae_model_free(m);
}

// the TAEHV variants beyond Wan's (tests/data/gen_video_fixtures.py, upstream taehv.py configured by
// each checkpoint name): decodes at every chunk size, the shapes each gives, its latent constants,
// and what the file cannot tell or the variant cannot do
static void test_taehv_variants(void) {
    static const struct {
        const char *    file;
        enum vae_family load_as, family;
        enum vae_space  space;
        int             scale, frames_per_latent, frames, height, width; // the fixture's decode
    } cases[] = {
        { "taehv_nf16", VAE_FAMILY_TAEHV, VAE_FAMILY_TAEHV, VAE_SPACE_RAW, 8, 4, 13, 24, 32 },
        { "taehv15_nf16", VAE_FAMILY_AUTO, VAE_FAMILY_TAEHV1_5, VAE_SPACE_RAW, 16, 4, 13, 32, 48 },
        { "taeltx2_nf16", VAE_FAMILY_AUTO, VAE_FAMILY_TAELTX2, VAE_SPACE_AUTO, 32, 8, 17, 64, 64 },
        { "taecvx_nf16", VAE_FAMILY_TAECVX, VAE_FAMILY_TAECVX, VAE_SPACE_NORMALIZED, 8, 4, 17, 24, 32 },
        { "taew22s_nf16", VAE_FAMILY_AUTO, VAE_FAMILY_TAEW22_SUPER, VAE_SPACE_NORMALIZED, 16, 4, 13, 32, 48 },
        { "taehv15s_nf16", VAE_FAMILY_AUTO, VAE_FAMILY_TAEHV1_5_SUPER, VAE_SPACE_RAW, 16, 4, 13, 48, 32 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char file[64], latent[64], expected[64];
        snprintf(file, sizeof(file), "%s.safetensors", cases[i].file);
        snprintf(latent, sizeof(latent), "%s.latent", cases[i].file);
        snprintf(expected, sizeof(expected), "%s.expected.safetensors", cases[i].file);
        struct vae_model * m = vae_model_load(path_in(data_dir, file), cases[i].load_as, err, sizeof(err));
        CHECK(m != NULL, "%s: %s", file, err);
        int64_t es[5] = { 0 };
        free(read_tensor(path_in(data_dir, expected), "decoded", es));
        CHECK(m && m->scale == cases[i].scale && m->frames_per_latent == cases[i].frames_per_latent &&
                  m->trim_frames == cases[i].frames_per_latent - 1,
              "%s: scale %d, %d frames per latent, %d trimmed", file, m ? m->scale : 0, m ? m->frames_per_latent : 0,
              m ? m->trim_frames : 0);
        CHECK(es[2] == cases[i].frames && es[3] == cases[i].height && es[4] == cases[i].width,
              "%s: the reference has %lld frames of %lldx%lld", expected, (long long) es[2], (long long) es[4],
              (long long) es[3]);
        vae_model_free(m);
        check_video_as(file, cases[i].load_as, cases[i].family, latent, cases[i].space, "decoded", 1e-4);
    }

    // constants: HunyuanVideo's raw latents scaled by 0.476986; none for LTX-2 and CogVideoX
    float              div[128], add[128];
    struct vae_model * m = vae_model_load(path_in(data_dir, "taehv_nf16.safetensors"), VAE_FAMILY_TAEHV, err,
                                          sizeof(err));
    CHECK(m && vae_model_space_affine(m, VAE_SPACE_RAW, div, add, err, sizeof(err)) &&
              fabsf(2.0f / div[15] + add[15] - 2.0f * 0.476986f) < 1e-6f,
          "taehv raw conversion: %s", err);
    vae_model_free(m);
    static const struct {
        const char *    file;
        enum vae_family load_as;
        enum vae_space  space;
        const char *    want;
    } refusals[] = {
        { "taeltx2_nf16", VAE_FAMILY_AUTO, VAE_SPACE_RAW, "taeltx_2 has no constants to convert raw latents (LTX-2" },
        { "taecvx_nf16", VAE_FAMILY_TAECVX, VAE_SPACE_RAW, "CogVideoX-2b scales them by 1.15258" },
        // a 16-channel file cannot tell taew2_1, taehv and taecvx apart
        { "taecvx_nf16", VAE_FAMILY_AUTO, VAE_SPACE_RAW, "taehv or taecvx, which share shapes): set model-family" },
    };
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        char file[64];
        snprintf(file, sizeof(file), "%s.safetensors", refusals[i].file);
        m = vae_model_load(path_in(data_dir, file), refusals[i].load_as, err, sizeof(err));
        CHECK(m && !vae_model_space_affine(m, refusals[i].space, div, add, err, sizeof(err)), "%s: raw latents taken",
              file);
        CHECK_ERR_HAS(err, refusals[i].want);
        vae_model_free(m);
    }
    m = vae_model_load(path_in(data_dir, "taehv15_nf16.safetensors"), VAE_FAMILY_TAEW22, err, sizeof(err));
    CHECK(m == NULL, "taehv1_5 loaded as taew2_2");
    CHECK_ERR_HAS(err, "model-family taew2_2 was asked for, but the file holds a taehv1_5 decoder (32 latent "
                       "channels)");
    m = vae_model_load(path_in(data_dir, "taecvx_nf16.safetensors"), VAE_FAMILY_TAELTX2, err, sizeof(err));
    CHECK(m == NULL, "a 16-channel TAEHV loaded as taeltx_2");
    CHECK_ERR_HAS(err, "model-family taeltx_2 was asked for, but the file holds a taew2_1 decoder");
    // taeltx_2's first TGrow doubles the frames: one of stride 1 is not taeltx_2's
    const char * path = edited_model("taeltx2_nf16.safetensors", NULL, "decoder.7.conv.weight");
    m                 = path ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)) : NULL;
    CHECK(path && m == NULL, "taeltx_2 with a cut TGrow loaded");
    CHECK_ERR_HAS(err, "'decoder.7.conv.weight' is missing or is not a 1x1 TGrow of time stride 2 ([2 C, C, 1, 1]) as "
                       "taeltx_2 has");
    vae_model_free(m);
    if (path) {
        unlink(path);
    }
    // super decoders: not the base ones of the same shapes, and every block tensor is needed
    m = vae_model_load(path_in(data_dir, "taew22s_nf16.safetensors"), VAE_FAMILY_TAEW22, err, sizeof(err));
    CHECK(m == NULL, "taew2_2_super loaded as taew2_2");
    CHECK_ERR_HAS(err, "model-family taew2_2 was asked for, but the file holds a taew2_2_super decoder");
    static const struct {
        const char * drop, * cut, * want;
    } broken[] = {
        { "decoder.9.conv.1.bias", NULL, "decoder.9.conv.1.bias" },
        { NULL, "decoder.16.conv.0.weight", "decoder.16.conv.0.weight" },
        { "decoder.22.weight", NULL, "no 4-D 'decoder.0.weight' and 'decoder.22.weight'" },
    };
    for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
        path = edited_model("taehv15s_nf16.safetensors", broken[i].drop, broken[i].cut);
        m    = path ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)) : NULL;
        CHECK(path && m == NULL, "taehv1_5_super without %s / with a shorter %s loaded",
              broken[i].drop ? broken[i].drop : "-", broken[i].cut ? broken[i].cut : "-");
        CHECK_ERR_HAS(err, broken[i].want);
        printf("refused: %s\n", err);
        vae_model_free(m);
        if (path) {
            unlink(path);
        }
    }
}

// the memory the process holds, in KiB: what is allocated and not freed under AddressSanitizer
// (whose quarantine keeps freed blocks resident for a while: RSS would grow with every free), else
// the resident set
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void);   // the runtime's (sanitizer/allocator_interface.h)

static long resident_kib(void) {
    return (long) (__sanitizer_get_current_allocated_bytes() / 1024);
}
#else
static long resident_kib(void) {
    long  pages = 0, resident = 0;
    FILE * f    = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}
#endif

// the f32 copies of a BF16 model's weights go once a session's graphs are prepared (the backend
// has its own), and a second session makes them again: both decode the same frames
static void test_weight_copies(void) {
    struct vae_model * m = vae_model_load(path_in(data_dir, "wan21_b4.orig.safetensors"), VAE_FAMILY_AUTO, err,
                                          sizeof(err));
    CHECK(m != NULL, "%s", err);
    if (!m) {
        return;
    }
    const size_t loaded = vae_model_copy_bytes(m);
    CHECK(loaded > 0, "a BF16 model holds no f32 copies after load");
    float lat[3][16 * 2 * 3], out[2][9][3 * 16 * 24];
    for (int j = 0; j < 3 * 16 * 6; j++) {
        lat[j / 96][j % 96] = sinf(0.21f * (float) j);
    }
    for (int run = 0; run < 2; run++) {
        struct vae_session_config cfg = { 16, 2, 3, VAE_SPACE_AUTO, 1, 0 };
        struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
        CHECK(s != NULL, "%s", err);
        CHECK(vae_model_copy_bytes(m) == 0, "run %d: %zu bytes of f32 copies kept after prepare", run,
              vae_model_copy_bytes(m));
        int n = 0;
        for (int t = 0; s && t < 3; t++) {
            CHECK(vae_session_push(s, lat[t], err, sizeof(err)), "%s", err);
            while (n < 9 && vae_session_frames_ready(s) > 0) {
                CHECK(vae_session_pop_output(s, out[run][n++], err, sizeof(err)), "%s", err);
            }
        }
        CHECK(n == 9, "run %d: %d frames", run, n);
        vae_session_free(s);
    }
    CHECK(memcmp(out[0], out[1], sizeof(out[0])) == 0, "the second session decodes other frames");
    printf("wan21_b4 (BF16): %zu bytes of f32 copies after load, none once a session is prepared\n", loaded);
    vae_model_free(m);
}

// hundreds of latent frames at a tiny size: resident memory after the first chunks stays put
static void test_long_stream(void) {
    static const char * models[3] = { "wan21_b4.orig.safetensors", "wan22_b4.orig.safetensors", "taew21_nf32.safetensors" };
    for (int i = 0; i < 3; i++) {
        struct vae_model * m = vae_model_load(path_in(data_dir, models[i]), VAE_FAMILY_AUTO, err, sizeof(err));
        CHECK(m != NULL, "%s", err);
        if (!m) {
            continue;
        }
        const int                 z   = m->latent_channels;
        struct vae_session_config cfg = { z, 2, 3, VAE_SPACE_AUTO, 2, 0 };
        struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
        CHECK(s != NULL, "%s", err);
        float          lat[48 * 2 * 3];
        float          out[3 * 32 * 48];
        long           after_start = 0;
        const int      T = 400;
        for (int t = 0; s && t < T; t++) {
            for (int j = 0; j < z * 6; j++) {
                lat[j] = sinf(0.37f * (float) (t * z * 6 + j));
            }
            CHECK(vae_session_push(s, lat, err, sizeof(err)), "%s", err);
            while (vae_session_frames_ready(s) > 0) {
                CHECK(vae_session_pop_output(s, out, err, sizeof(err)), "%s", err);
            }
            if (t == 20) {
                after_start = resident_kib();
            }
        }
        CHECK(s && vae_session_drain(s, err, sizeof(err)), "%s", err);
        while (s && vae_session_frames_ready(s) > 0) {
            CHECK(vae_session_pop_output(s, out, err, sizeof(err)), "%s", err);
        }
        const long at_end = resident_kib();
        printf("%s: %d latent frames, %llu frames decoded, resident %ld KiB after 20, %ld KiB after %d\n", models[i], T,
               s ? (unsigned long long) vae_session_frames_out(s) : 0ULL, after_start, at_end, T);
        CHECK(s && vae_session_frames_out(s) == (uint64_t) (1 + 4 * (T - 1)), "frame count");
        CHECK(at_end - after_start < 256, "resident memory grew by %ld KiB over the stream", at_end - after_start);
        vae_session_free(s);
        vae_model_free(m);
    }
}

// SeedVR2's video VAE (tests/data/gen_seedvr_fixtures.py, upstream attn_video_vae.py with reduced
// widths): its decodes in both files (torch.save's ema_vae.pth and ComfyUI's safetensors hold the
// same names) and both latent spaces, what it says of itself, and files it refuses
static void test_seedvr(void) {
    check_video("seedvr2_w32.safetensors", VAE_FAMILY_SEEDVR2, "seedvr2_w32.latent", VAE_SPACE_RAW, "decoded", 1e-4);
    check_video("seedvr2_sc.pth", VAE_FAMILY_SEEDVR2, "seedvr2_sc.normalized.latent", VAE_SPACE_NORMALIZED,
                "decoded_normalized", 1e-4);
    struct vae_model * m = vae_model_load(path_in(data_dir, "seedvr2_sc.pth"), VAE_FAMILY_AUTO, err, sizeof(err));
    float              div[16], add[16];
    CHECK(m && m->family_certain && m->latent_channels == 16 && m->scale == 8 && m->frames_per_latent == 4 &&
              m->first_apart && m->trim_frames == 0 && m->own_space == VAE_SPACE_RAW && m->out_scale == 0.5f &&
              m->out_offset == 0.5f,
          "seedvr2: %s", m ? m->description : err);
    CHECK(m && vae_model_space_affine(m, VAE_SPACE_NORMALIZED, div, add, err, sizeof(err)) && div[15] == 0.9152f &&
              add[15] == 0.0f,
          "seedvr2 normalized latents: z = x / %g + %g", m ? div[15] : 0, m ? add[15] : 0);
    vae_model_free(m);
    // named families: SeedVR2 and the 16-channel AutoencoderKLs (SD3, FLUX.1) are told apart
    m = vae_model_load(path_in(data_dir, "seedvr2_w32.safetensors"), VAE_FAMILY_SD3, err, sizeof(err));
    CHECK(m == NULL, "seedvr2 loaded as sd3");
    CHECK_ERR_HAS(err, "model-family sd3 was asked for, but the file holds a seedvr2 decoder");
    vae_model_free(m);
    m = vae_model_load(path_in(data_dir, "kl_f1.safetensors"), VAE_FAMILY_SEEDVR2, err, sizeof(err));
    CHECK(m == NULL, "an AutoencoderKL loaded as seedvr2");
    CHECK_ERR_HAS(err, "model-family seedvr2 was asked for, but the file holds a sd3-style AutoencoderKL");
    vae_model_free(m);
    static const struct {
        const char * drop, * cut, * want;
    } cases[] = {
        { "decoder.up_blocks.1.upsamplers.0.upscale_conv.bias", NULL,
          "'decoder.up_blocks.1.upsamplers.0.upscale_conv' is missing or is not an upscale conv" },
        { NULL, "decoder.up_blocks.0.upsamplers.0.upscale_conv.weight", "is not an upscale conv [8 C or 4 C" },
        { "decoder.mid_block.attentions.0.to_k.weight", NULL, "attention tensor 'decoder.mid_block.attentions.0.to_k'" },
        { "decoder.up_blocks.3.resnets.2.conv2.bias", NULL, "tensor 'decoder.up_blocks.3.resnets.2.conv2.bias' is missing" },
        { NULL, "decoder.mid_block.resnets.0.conv1.bias", "'decoder.mid_block.resnets.0.conv1.bias' has the wrong shape" },
        { NULL, "decoder.up_blocks.0.upsamplers.0.conv.weight", "'decoder.up_blocks.0.upsamplers.0.conv.bias' has the wrong" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char * path = edited_model("seedvr2_w32.safetensors", cases[i].drop, cases[i].cut);
        m                 = path ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)) : NULL;
        CHECK(path && m == NULL, "seedvr2 without %s / with a shorter %s loaded", cases[i].drop ? cases[i].drop : "-",
              cases[i].cut ? cases[i].cut : "-");
        CHECK_ERR_HAS(err, cases[i].want);
        printf("refused: %s\n", err);
        vae_model_free(m);
        if (path) {
            unlink(path);
        }
    }
    // a .pth cut short
    const char * cut = test_tmp_path("cut.pth");
    FILE *       in  = fopen(path_in(data_dir, "seedvr2_sc.pth"), "rb"), * out = fopen(cut, "wb");
    char         buf[65536];
    size_t       got = in ? fread(buf, 1, sizeof(buf), in) : 0;
    CHECK(in && out && got == sizeof(buf) && fwrite(buf, 1, got, out) == got, "could not copy the start of the .pth");
    if (in) {
        fclose(in);
    }
    if (out) {
        fclose(out);
    }
    m = vae_model_load(cut, VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m == NULL, "a truncated .pth loaded");
    printf("refused: %s\n", err);
    CHECK(strstr(err, "cut.pth"), "the message names no file: %s", err);
    vae_model_free(m);
    unlink(cut);
}

// HunyuanVideo 1.5's VAE (tests/data/gen_hyvideo15_fixtures.py, diffusers' AutoencoderKLHunyuanVideo15
// with reduced widths): both namings and both latent spaces, whole and streamed at every chunk size
// (its mid block's block-causal attention from the key/value cache), in tiles (its replicating convs
// at the frame's edges), the cache's growth and its limit, what it says of itself (the files it
// refuses: test_load_errors)
static void test_hyvideo15(void) {
    check_video("hyvideo15_w32.diffusers.safetensors", VAE_FAMILY_HYVIDEO15, "hyvideo15_w32.latent", VAE_SPACE_AUTO,
                "decoded", 1e-4);
    check_video("hyvideo15_w32.orig.safetensors", VAE_FAMILY_HYVIDEO15, "hyvideo15_w32.latent", VAE_SPACE_RAW,
                "decoded", 1e-4);
    // (2e-4: diffusers' own fp32 decode of these latents is 1.0e-4 from its fp64 one)
    check_video("hyvideo15_w32.orig.safetensors", VAE_FAMILY_HYVIDEO15, "hyvideo15_w32.normalized.latent",
                VAE_SPACE_NORMALIZED, "decoded_normalized", 2e-4);
    check_tiled("hyvideo15_w32.orig.safetensors", "hyvideo15_w32.latent", VAE_SPACE_RAW, "decoded", false);
    struct vae_model * m = vae_model_load(path_in(data_dir, "hyvideo15_w32.diffusers.safetensors"), VAE_FAMILY_AUTO,
                                          err, sizeof(err));
    float              div[32], add[32];
    CHECK(m && m->family_certain && m->latent_channels == 32 && m->scale == 16 && m->frames_per_latent == 4 &&
              m->first_apart && m->own_space == VAE_SPACE_RAW && m->out_scale == 0.5f && m->out_offset == 0.5f,
          "hunyuanvideo1.5: %s", m ? m->description : err);
    CHECK(m && vae_model_space_affine(m, VAE_SPACE_NORMALIZED, div, add, err, sizeof(err)) && div[31] == 1.03682f &&
              add[31] == 0.0f,
          "hunyuanvideo1.5 normalized latents: z = x / %g + %g", m ? div[31] : 0, m ? add[31] : 0);
    // the key/value cache grows with the stream, its room doubling: by d after the second latent
    // frame (room for 2), 2d after the third (4), not after the fourth; d holds at least a frame's
    // keys and values (2 x 32 channels x 3 x 5 positions in f32)
    int64_t                   ls[5];
    float *                   lat = read_tensor(path_in(data_dir, "hyvideo15_w32.latent"), "latent_tensor", ls);
    const size_t              lf  = (size_t) (32 * 3 * 5);
    size_t                    peak[5] = { 0 };
    struct vae_session_config cfg = { 32, 3, 5, VAE_SPACE_RAW, 1, 0, 0, NULL };
    struct vae_session *      s   = m && lat ? vae_session_new(m, cpu, &cfg, err, sizeof(err)) : NULL;
    CHECK(s != NULL, "%s", err);
    float * frame = malloc(lf * sizeof(float)), * out = malloc((size_t) (3 * 48 * 80) * sizeof(float));
    for (int t = 0; s && frame && out && t < 4; t++) {
        peak[t] = vae_session_peak_bytes(s);
        latent_frame(lat, ls, t, frame);
        CHECK(vae_session_push(s, frame, err, sizeof(err)), "%s", err);
        while (vae_session_frames_ready(s) > 0 && vae_session_pop_output(s, out, err, sizeof(err))) {
        }
    }
    peak[4]        = s ? vae_session_peak_bytes(s) : 0;
    const size_t d = peak[2] - peak[1];
    printf("hunyuanvideo1.5 stream of 3x5 latents: peak %zu, %zu, %zu, %zu, %zu bytes before and after 4 latent "
           "frames\n", peak[0], peak[1], peak[2], peak[3], peak[4]);
    CHECK(peak[1] > peak[0] && d >= 2 * lf * sizeof(float) && peak[3] - peak[2] == 2 * d && peak[4] == peak[3],
          "the cache grew by %zu, %zu, %zu, %zu bytes", peak[1] - peak[0], d, peak[3] - peak[2], peak[4] - peak[3]);
    vae_session_free(s);
    // a limit that holds 2 latent frames: the third push fails saying so, the frames of the first
    // two decoded; after a reset the stream starts again
    cfg.max_bytes = peak[2];
    s             = m && lat ? vae_session_new(m, cpu, &cfg, err, sizeof(err)) : NULL;
    CHECK(s != NULL, "%s", err);
    int frames = 0;
    for (int t = 0; s && frame && out && t < 3; t++) {
        latent_frame(lat, ls, t, frame);
        const bool ok = vae_session_push(s, frame, err, sizeof(err));
        CHECK(ok == (t < 2), "latent frame %d: %s", t, ok ? "decoded" : err);
        while (vae_session_frames_ready(s) > 0 && vae_session_pop_output(s, out, err, sizeof(err))) {
            frames++;
        }
    }
    printf("refused: %s\n", err);
    CHECK_ERR_HAS(err, "it holds 2 frames");
    CHECK(frames == 5, "%d frames before the limit, not 5", frames);
    if (s) {
        vae_session_reset(s);
        latent_frame(lat, ls, 0, frame);
        CHECK(vae_session_push(s, frame, err, sizeof(err)) && vae_session_frames_ready(s) == 1, "after a reset: %s", err);
    }
    vae_session_free(s);
    free(frame);
    free(out);
    free(lat);
    vae_model_free(m);
}

// a zero-weight decoder of the released 2.0 or 2.3 layer structure (widths divided by 32, the
// released resnet counts), in Lightricks' names: what the loader makes of it, the lookahead from
// its graph equal to the receptive field upstream's decode shows (gen_ltx2_fixtures.py --rf:
// perturbing latent j changes frames up to 8 (j + 22) with 2.0, 8 (j + 14) with 2.3), and the first
// graph a session prepares for it
static void check_ltx2_released(bool v23, int want_lookahead) {
    // up blocks: rows of the upsampler conv, its input and output widths, resnets after it
    static const int v20_up[3][4] = { { 128, 32, 16, 5 }, { 64, 16, 8, 5 }, { 32, 8, 4, 5 } };
    static const int v23_up[4][4] = { { 128, 32, 16, 2 }, { 128, 16, 16, 4 }, { 16, 16, 8, 6 }, { 16, 8, 4, 4 } };
    const int (*up)[4] = v23 ? v23_up : v20_up;
    const int            n_up = v23 ? 4 : 3, mid = v23 ? 2 : 5;
    struct test_tensor   ts[128];
    static char          names[128][80];
    int                  n = 0;
    char                 conv[64];
    // the 3x3x3 conv `conv` from cin to cout: its weight and bias
#define LTX2_CONV(cout, cin)                                                                   \
    do {                                                                                      \
        snprintf(names[n], sizeof(names[n]), "%s.weight", conv);                             \
        ts[n] = (struct test_tensor) { names[n], "F32", 5, { cout, cin, 3, 3, 3 }, NULL }, n++; \
        snprintf(names[n], sizeof(names[n]), "%s.bias", conv);                               \
        ts[n] = (struct test_tensor) { names[n], "F32", 1, { cout }, NULL }, n++;               \
    } while (0)
    snprintf(conv, sizeof(conv), "decoder.conv_in.conv");
    LTX2_CONV(32, 128);
    for (int b = 0; b <= n_up; b++) {
        const int c = b ? up[b - 1][2] : 32, res = b ? up[b - 1][3] : mid;
        if (b) {
            snprintf(conv, sizeof(conv), "decoder.up_blocks.%d.conv.conv", 2 * b - 1);
            LTX2_CONV(up[b - 1][0], up[b - 1][1]);
        }
        for (int j = 0; j < 2 * res; j++) {
            snprintf(conv, sizeof(conv), "decoder.up_blocks.%d.res_blocks.%d.conv%d.conv", 2 * b, j / 2, j % 2 + 1);
            LTX2_CONV(c, c);
        }
    }
    snprintf(conv, sizeof(conv), "decoder.conv_out.conv");
    LTX2_CONV(48, 4);
#undef LTX2_CONV
    const char *       path = test_tmp_path("ltx2-released");
    struct vae_model * m    = test_write_model(path, n, ts) ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err))
                                                            : NULL;
    CHECK(m && m->family == (v23 ? VAE_FAMILY_LTX23 : VAE_FAMILY_LTX2) && m->lookahead == want_lookahead &&
              m->scale == 32 && m->frames_per_latent == 8,
          "the released %s structure: %s, lookahead %d", v23 ? "2.3" : "2.0", m ? m->description : err,
          m ? m->lookahead : -1);
    // the first graph takes lookahead + 1 latent frames and gives 8 (lookahead + 1) - lag >= 1 frames
    struct vae_session_config cfg = { 128, 2, 3, VAE_SPACE_RAW, 1, 0, 0, NULL };
    struct vae_session *      s   = m ? vae_session_new(m, cpu, &cfg, err, sizeof(err)) : NULL;
    CHECK(s != NULL, "a session of the released %s structure: %s", v23 ? "2.3" : "2.0", err);
    printf("ltx2%s's released structure: lookahead %d latent frames, a 2x3-latent session holds %zu bytes\n",
           v23 ? ".3" : "", m ? m->lookahead : -1, s ? vae_session_peak_bytes(s) : 0);
    vae_session_free(s);
    vae_model_free(m);
    unlink(path);
}

// the frames an LTX stream has given after each of its latent frames, whole and in 16-pixel tiles
// (each tile step a frame late, the frames given once nothing can change them): the same counts,
// none before lookahead + 1 latent frames, then frames_per_latent per latent frame
static void check_ltx2_latency(const struct vae_model * m, const float * lat, const int64_t ls[5]) {
    const int64_t T = ls[2] < 16 ? ls[2] : 16;
    uint64_t      out[2][16] = { { 0 } };
    float *       z = malloc((size_t) (ls[1] * ls[3] * ls[4]) * sizeof(float));
    float *       o = malloc((size_t) (3 * m->scale * ls[3] * m->scale * ls[4]) * sizeof(float));
    for (int tiled = 0; tiled < 2; tiled++) {
        struct vae_session_config cfg = { (int) ls[1], (int) ls[3], (int) ls[4], VAE_SPACE_RAW, 1, 0, tiled ? 16 : 0,
                                          NULL };
        struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
        CHECK(s && vae_session_tile_size(s) == cfg.tile_size, "%s", err);
        for (int64_t t = 0; s && t < T; t++) {
            latent_frame(lat, ls, t, z);
            CHECK(vae_session_push(s, z, err, sizeof(err)), "%s", err);
            out[tiled][t] = vae_session_frames_out(s);
            while (vae_session_frames_ready(s) > 0 && vae_session_pop_output(s, o, err, sizeof(err))) {
            }
        }
        vae_session_free(s);
    }
    for (int64_t t = 0; t < T; t++) {
        const uint64_t want = t < m->lookahead ? 0 : t == m->lookahead ? out[0][t] : out[0][t - 1] + 8;
        printf("%s: latent frame %lld: %llu frames out whole, %llu in tiles\n", vae_family_name(m->family),
               (long long) t, (unsigned long long) out[0][t], (unsigned long long) out[1][t]);
        CHECK(out[1][t] == out[0][t] && out[0][t] == want && (t != m->lookahead || out[0][t] > 0),
              "%s after latent frame %lld: %llu frames whole, %llu in tiles, not %llu", vae_family_name(m->family),
              (long long) t, (unsigned long long) out[0][t], (unsigned long long) out[1][t], (unsigned long long) want);
    }
    free(z);
    free(o);
}

// LTX-2 and LTX-2.3's video VAEs (tests/data/gen_ltx2_fixtures.py, diffusers' AutoencoderKLLTX2Video
// with reduced widths, not causal): both namings, whole clips streamed at every chunk size against
// upstream's whole-clip decode (the stream starts after lookahead + 1 latent frames and is flushed
// at its end), a clip shorter than that, the lookahead from the graph, normalized latents through
// the file's statistics
static void test_ltx2(void) {
    static const struct {
        const char *    tag;
        enum vae_family family;
        int             height; // of the latent grid
        int             first;  // frames of the graph that starts a stream (9 latent frames): 72 - its lag
    } v[2] = { { "v20", VAE_FAMILY_LTX2, 2, 6 }, { "v23", VAE_FAMILY_LTX23, 1, 5 } };
    for (int i = 0; i < 2; i++) {
        char model[64], orig[64], latent[64];
        snprintf(model, sizeof(model), "ltx2_%s.diffusers.safetensors", v[i].tag);
        snprintf(orig, sizeof(orig), "ltx2_%s.orig.safetensors", v[i].tag);
        snprintf(latent, sizeof(latent), "ltx2_%s.latent", v[i].tag);
        check_video(model, v[i].family, latent, VAE_SPACE_AUTO, "decoded", 3e-5);
        check_video(orig, v[i].family, latent, VAE_SPACE_RAW, "decoded", 3e-5);
        check_tiled(orig, latent, VAE_SPACE_RAW, "decoded", true);
        // the clip of its first 2 latent frames: shorter than the first step, all of it flushed
        struct vae_model * m = vae_model_load(path_in(data_dir, orig), VAE_FAMILY_AUTO, err, sizeof(err));
        int64_t            ls[5], es[5];
        float *            lat = read_tensor(path_in(data_dir, latent), "latent_tensor", ls);
        snprintf(latent, sizeof(latent), "ltx2_%s.expected.safetensors", v[i].tag);
        float * exp = read_tensor(path_in(data_dir, latent), "decoded_first2", es);
        CHECK(m && m->lookahead == 8 && m->frames_per_latent == 8 && m->scale == 32 && m->latent_channels == 128 &&
                  m->min_side == (i == 0 ? 2 : 1),
              "%s: %s, lookahead %d", orig, m ? m->description : err, m ? m->lookahead : -1);
        if (!m || !lat || !exp) {
            vae_model_free(m);
            free(lat);
            free(exp);
            continue;
        }
        clamp_expected(m, exp, es);
        const int64_t hw = ls[3] * ls[4], two[5] = { 1, 128, 2, ls[3], ls[4] };
        float *       first2 = malloc((size_t) (2 * 128 * hw) * sizeof(float));
        for (int64_t c = 0; c < 128; c++) {
            memcpy(first2 + c * 2 * hw, lat + c * ls[2] * hw, (size_t) (2 * hw) * sizeof(float));
        }
        check_ltx2_latency(m, lat, ls);
        for (int chunk = 1; chunk <= 4; chunk += 3) { // (4: in 16-pixel tiles, the flush filling them)
            struct video d = decode_video(m, first2, two, VAE_SPACE_RAW, chunk % 4, 0, chunk == 4 ? 16 : 0, 0);
            CHECK(d.frames == 9 && d.height == 32 * v[i].height, "%s: %d frames of the first 2 latents, not 9", orig,
                  d.frames);
            const double e = d.frames == 9 ? video_error(&d, exp) : 1e9;
            printf("%-36s %-8s decoded_first2     %s: max abs error %.3g\n", orig, vae_family_name(m->family),
                   chunk == 4 ? "16-pixel tiles" : "chunk 1", e);
            CHECK(e <= 3e-5, "%s: the first 2 latent frames decode %g from upstream's", orig, e);
            free(d.data);
        }
        // a cancel flag set while the clip is flushed at its end: the pop that decodes the next
        // frames fails as interrupted (those of the first graph came before; in tiles, those of the
        // first flush step that gave any), the next pop refuses to go on from a part-way state;
        // after a reset the clip decodes whole again
        for (int tile = 0; tile <= 16; tile += 16) {
            int                       flag = 0;
            struct vae_session_config cc   = { 128, (int) ls[3], (int) ls[4], VAE_SPACE_RAW, 1, 0, tile, &flag };
            struct vae_session *      s    = vae_session_new(m, cpu, &cc, err, sizeof(err));
            const size_t              of   = (size_t) 3 * 32 * ls[3] * 32 * ls[4];
            float * o = malloc(9 * of * sizeof(float)), *z = malloc((size_t) (128 * hw) * sizeof(float));
            int     got = 0, late = -1;
            for (int pass = 0; s && pass < 2; pass++) {
                got = 0;
                for (int t = 0; t < 2; t++) {
                    for (int64_t c = 0; c < 128; c++) {
                        memcpy(z + c * hw, first2 + (c * 2 + t) * hw, (size_t) hw * sizeof(float));
                    }
                    CHECK(vae_session_push(s, z, err, sizeof(err)) && vae_session_frames_ready(s) == 0, "push: %s",
                          err);
                }
                CHECK(vae_session_drain(s, err, sizeof(err)) && vae_session_frames_ready(s) == 9,
                      "drain: %s, %d ready", err, vae_session_frames_ready(s));
                while (got < 9 && vae_session_pop_output(s, o + (size_t) got * of, err, sizeof(err))) {
                    if (++got == 1 && pass == 0) {
                        __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
                    }
                }
                late = pass == 0 ? got : late;
                if (pass == 0) {
                    CHECK((tile ? got > 0 && got < 9 : got == v[i].first) && strcmp(err, VAE_SESSION_INTERRUPTED) == 0,
                          "%s: a pop after the flag gave %d frames and \"%s\", not %d and \"%s\"", orig, got, err,
                          v[i].first, VAE_SESSION_INTERRUPTED);
                    __atomic_store_n(&flag, 0, __ATOMIC_RELEASE);
                    CHECK(!vae_session_pop_output(s, o, err, sizeof(err)), "a pop after a stop went on");
                    CHECK_ERR_HAS(err, "an earlier decode of the stream failed: reset it before it goes on");
                    vae_session_reset(s);
                }
            }
            struct video again = { got, 32 * (int) ls[3], 32 * (int) ls[4], o, 0, 0 };
            for (size_t k = 0; k < (size_t) got * of; k++) { // (clamped as decode_video's frames)
                o[k] = o[k] < -1.0f ? -1.0f : o[k] > 1.0f ? 1.0f : o[k];
            }
            const double e = got == 9 ? video_error(&again, exp) : 1e9;
            printf("%s%s: stopped in its flush after %d frames; after a reset the clip again, max abs error %.3g\n",
                   orig, tile ? " in 16-pixel tiles" : "", late, e);
            CHECK(e <= 3e-5, "%s: after a stop in the flush and a reset, %d frames, max abs error %g", orig, got, e);
            vae_session_free(s);
            free(o);
            free(z);
        }
        // LTX-2.0's convs pad by reflection: a latent grid of one row is refused (2.3's zeros take it)
        struct vae_session_config one = { 128, 1, 3, VAE_SPACE_RAW, 1, 0, 0, NULL };
        const bool                took = vae_session_check(m, &one, err, sizeof(err));
        CHECK(took == (i == 1), "%s: a 3x1 latent grid %s", orig, took ? "taken" : err);
        if (!took) {
            CHECK_ERR_HAS(err, "ltx2 pads its convs by reflection: its latent grid must be at least 2x2, not 3x1");
        }
        // normalized latents: z = x * std + mean, the file's latents_mean and latents_std
        float div[128], add[128];
        const struct vae_weight * mw = vae_model_weight(m, "per_channel_statistics.mean-of-means");
        const struct vae_weight * sw = vae_model_weight(m, "per_channel_statistics.std-of-means");
        const float * mean = mw ? vae_model_weight_data(m, mw, err, sizeof(err)) : NULL;
        const float * sd   = sw ? vae_model_weight_data(m, sw, err, sizeof(err)) : NULL;
        CHECK(mean && sd && vae_model_space_affine(m, VAE_SPACE_NORMALIZED, div, add, err, sizeof(err)) &&
                  fabsf(div[7] * sd[7] - 1.0f) < 1e-6f && add[7] == mean[7] && sd[7] != 1.0f,
              "%s normalized latents: %s", orig, err);
        free(first2);
        free(lat);
        free(exp);
        vae_model_free(m);
    }
    check_ltx2_released(false, 22);
    check_ltx2_released(true, 14);
}

// the first T latent frames of [1, C, T', h, w] (at chunk 1 and 3) against `expected` of the same
// expected file; the session's frame count against the fixture's
static void check_minimax_prefix(const struct vae_model * m, const char * latent, int T, const char * expected) {
    int64_t ls[5], es[5];
    char    exp_file[128];
    snprintf(exp_file, sizeof(exp_file), "%.*s.expected.safetensors", (int) (strchr(latent, '.') - latent), latent);
    float * lat = read_tensor(path_in(data_dir, latent), "latent_tensor", ls);
    float * exp = read_tensor(path_in(data_dir, exp_file), expected, es);
    if (!lat || !exp) {
        free(lat);
        free(exp);
        return;
    }
    clamp_expected(m, exp, es);
    const int64_t hw = ls[3] * ls[4], cut[5] = { 1, ls[1], T, ls[3], ls[4] };
    float *       z  = malloc((size_t) (ls[1] * T * hw) * sizeof(float));
    for (int64_t c = 0; c < ls[1]; c++) {
        memcpy(z + c * T * hw, lat + c * ls[2] * hw, (size_t) (T * hw) * sizeof(float));
    }
    for (int chunk = 1; chunk <= 3; chunk += 2) {
        struct video d = decode_video(m, z, cut, VAE_SPACE_RAW, chunk, 0, 0, 0);
        CHECK(d.frames == es[2] && (uint64_t) d.frames == vae_model_stream_frames(m, (uint64_t) T),
              "%s: %d frames of %d latent frames, upstream %lld", latent, d.frames, T, (long long) es[2]);
        const double e = d.frames == es[2] ? video_error(&d, exp) : 1e9;
        printf("%-36s minimax-h3 %-14s chunk %d: %d latent frames, %d frames, max abs error %.3g\n", latent, expected,
               chunk, T, d.frames, e);
        CHECK(e <= 3e-5, "%s: the first %d latent frames decode %g from upstream's %s", latent, T, e, expected);
        free(d.data);
    }
    free(z);
    free(lat);
    free(exp);
}

static void test_minimax(void) {
    check_video("minimax_w128.diffusers.safetensors", VAE_FAMILY_MINIMAXH3, "minimax_w128.latent", VAE_SPACE_AUTO,
                "decoded", 3e-5);
    struct vae_model * m =
        vae_model_load(path_in(data_dir, "minimax_w128.diffusers.safetensors"), VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m && m->latent_channels == 24 && m->scale == 16 && m->frames_per_latent == 4 && m->chunk_latents == 5 &&
              m->chunk_overlap == 2 && m->chunk_hold == 5,
          "minimax_w128: %s", m ? m->description : err);
    if (!m) {
        return;
    }
    // upstream's frame counts (gen_minimax_fixtures.py --probe): 1 and 2 latent frames fail, 3..13 give these
    static const uint64_t frames[14] = { 0, 0, 0, 9, 13, 17, 18, 22, 26, 30, 34, 35, 39, 43 };
    for (uint64_t t = 0; t < 14; t++) {
        CHECK(vae_model_stream_frames(m, t) == frames[t], "%llu latent frames give %llu frames, upstream %llu",
              (unsigned long long) t, (unsigned long long) vae_model_stream_frames(m, t),
              (unsigned long long) frames[t]);
    }
    check_minimax_prefix(m, "minimax_w128.latent", 7, "decoded_t7");  // one chunk: its held frames at the end
    check_minimax_prefix(m, "minimax_w128.latent", 9, "decoded_t9");  // a padded chunk faded from a whole one
    check_minimax_prefix(m, "minimax_w128.wide.latent", 3, "wide");   // one padded chunk, 272 pixels wide
    // upstream's default decode tiles that 272-pixel frame in 256-pixel tiles, whose blend is no
    // decode of the whole frame: vaedecode gives the whole frame's, far from the tiles'
    int64_t ls[5], es[5], ts[5];
    float * wl = read_tensor(path_in(data_dir, "minimax_w128.wide.latent"), "latent_tensor", ls);
    float * we = read_tensor(path_in(data_dir, "minimax_w128.expected.safetensors"), "wide", es);
    float * wt = read_tensor(path_in(data_dir, "minimax_w128.expected.safetensors"), "wide_tiled", ts);
    if (wl && we && wt) {
        clamp_expected(m, we, es);
        clamp_expected(m, wt, ts);
        struct video d = decode_video(m, wl, ls, VAE_SPACE_RAW, 1, 0, 0, 0);
        const double whole = d.frames == es[2] ? video_error(&d, we) : 1e9, tiled = d.frames == ts[2] ? video_error(&d, wt) : 0;
        printf("minimax_w128.wide: max abs error %.3g from upstream's whole-frame decode, %.3g from its default tiles\n",
               whole, tiled);
        CHECK(whole <= 3e-5 && tiled > 0.01, "wide: %g from the whole-frame decode, %g from the tiled one", whole, tiled);
        free(d.data);
    }
    free(wl);
    free(we);
    free(wt);
    // 2 latent frames: refused at the drain, saying which counts decode; a stream after it decodes
    struct vae_session_config cfg = { 24, 2, 3, VAE_SPACE_RAW, 1, 0, 0, NULL };
    struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
    float                     z[24 * 6] = { 0 };
    CHECK(s && vae_session_push(s, z, err, sizeof(err)) && vae_session_push(s, z, err, sizeof(err)) &&
              !vae_session_drain(s, err, sizeof(err)) && vae_session_frames_ready(s) == 0,
          "a 2-latent stream: %s", err);
    CHECK_ERR_HAS(err, "minimax-h3 decodes streams of 3 latent frames or more (upstream's decode has no chunk for "
                       "fewer), not 2; 5 n + 2 latent frames give 17 n + 5 frames");
    for (int t = 0; s && t < 3; t++) {
        CHECK(vae_session_push(s, z, err, sizeof(err)), "push after the refusal: %s", err);
    }
    CHECK(s && vae_session_drain(s, err, sizeof(err)) && vae_session_frames_ready(s) == 9,
          "3 latent frames after the refusal: %s, %d ready", err, s ? vae_session_frames_ready(s) : -1);
    vae_session_free(s);
    // no latent statistics in the weights: normalized latents refused, saying where they are
    float div[24], add[24];
    CHECK(!vae_model_space_affine(m, VAE_SPACE_NORMALIZED, div, add, err, sizeof(err)), "normalized latents taken");
    CHECK_ERR_HAS(err, "MiniMax-H3's latent statistics are in its config.json, not in the weights: feed raw latents");
    // whole frames only: the attention sees the whole chunk
    struct vae_session_config tiled = { 24, 2, 3, VAE_SPACE_RAW, 1, 0, 16, NULL };
    CHECK(!vae_session_check(m, &tiled, err, sizeof(err)), "tile-size taken");
    CHECK_ERR_HAS(err, "minimax-h3 decodes whole frames");
    vae_model_free(m);
}

int main(int argc, char ** argv) {
    if (!test_data_init()) {
        return 1;
    }
    test_references();
    test_tiled();
    test_load_errors();
    test_taehv_variants();
    test_seedvr();
    test_hyvideo15();
    test_ltx2();
    test_minimax();
    if (argc < 2 || strcmp(argv[1], "--quick") != 0) { // --quick: small sizes only (valgrind)
        test_cheesecake();
        test_tiled_memory();
        test_long_stream();
        test_weight_copies();
    }
    vae_backend_free(cpu);
    return vae_test_summary();
}
