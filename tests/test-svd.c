// Stable Video Diffusion's temporal decoder through the session, without GStreamer: the
// random-weight fixture of tests/data (gen_svd_fixtures.py) in both namings against diffusers'
// AutoencoderKLTemporalDecoder.decode(z, num_frames=n) at decode chunk sizes 1 and 4 (the last
// chunk shorter, as StableVideoDiffusionPipeline cuts it) and the whole clip (chunk-frames 0,
// decoded at the drain); the whole clip refused past the memory limit without losing the
// session; detection, and refusals of incomplete files.

#include "vae-test-data.h"

#include <unistd.h>

#define SVD_TOL 1e-4

// latent frame t of [1, C, T, h, w] as [C, h, w]
static void latent_frame(const float * lat, const int64_t ls[5], int64_t t, float * dst) {
    const int64_t hw = ls[3] * ls[4];
    for (int64_t c = 0; c < ls[1]; c++) {
        memcpy(dst + c * hw, lat + (c * ls[2] + t) * hw, (size_t) hw * sizeof(float));
    }
}

// push latent frames [from, to) of lat, drain, and pop every frame into out [F, 3, H, W] from
// frame *got on; false after a CHECK message (err holds the session's)
static bool decode_frames(struct vae_session * s, const float * lat, const int64_t ls[5], int from, int to, float * out,
                          size_t frame_floats, int * got) {
    float * frame = malloc((size_t) (ls[1] * ls[3] * ls[4]) * sizeof(float));
    bool    ok    = true;
    for (int t = from; t < to && ok; t++) {
        latent_frame(lat, ls, t, frame);
        ok = vae_session_push(s, frame, err, sizeof(err));
        while (ok && vae_session_frames_ready(s) > 0) {
            ok = vae_session_pop_output(s, out + (size_t) (*got)++ * frame_floats, err, sizeof(err));
        }
    }
    ok = ok && vae_session_drain(s, err, sizeof(err));
    while (ok && vae_session_frames_ready(s) > 0) {
        ok = vae_session_pop_output(s, out + (size_t) (*got)++ * frame_floats, err, sizeof(err));
    }
    free(frame);
    return ok;
}

// the largest |a - b| between frames [F, 3, H, W] and the reference [1, 3, F, H, W] (NCTHW)
static double worst_error(const float * frames, const float * ref, int F, size_t hw) {
    double worst = 0;
    for (int f = 0; f < F; f++) {
        for (int c = 0; c < 3; c++) {
            const double d = max_abs_diff(frames + ((size_t) f * 3 + c) * hw, ref + ((size_t) c * F + f) * hw, hw);
            worst          = d > worst || d != d ? d : worst;
        }
    }
    return worst;
}

static void check_naming(const char * model_file) {
    struct vae_model * m = vae_model_load(path_in(data_dir, model_file), VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m != NULL, "%s: %s", model_file, err);
    int64_t ls[5], es[5];
    float * lat = read_tensor(path_in(data_dir, "svd_b2.latent"), "latent_tensor", ls);
    if (!m || !lat) {
        vae_model_free(m);
        free(lat);
        return;
    }
    CHECK(m->family == VAE_FAMILY_SVD && m->family_certain && !strcmp(vae_family_name(m->family), "svd"),
          "%s detected as %s", model_file, vae_family_name(m->family));
    CHECK(m->latent_channels == 4 && m->scale == 2 && m->frames_per_latent == 1, "%s: %d channels, scale %d",
          model_file, m->latent_channels, m->scale);
    static const struct {
        int          chunk;
        const char * expected;
    } runs[] = { { 1, "chunk1" }, { 4, "chunk4" }, { 0, "whole" }, { 14, "whole" }, { 3, NULL } };
    const int    T = (int) ls[2], H = m->scale * (int) ls[3], W = m->scale * (int) ls[4];
    const size_t hw = (size_t) H * W;
    float *      out = malloc((size_t) T * 3 * hw * sizeof(float));
    float *      whole = read_tensor(path_in(data_dir, "svd_b2.expected.safetensors"), "whole", es);
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        float * ref = runs[r].expected ? read_tensor(path_in(data_dir, "svd_b2.expected.safetensors"), runs[r].expected, es)
                                       : NULL;
        struct vae_session_config cfg = { 4, (int) ls[3], (int) ls[4], VAE_SPACE_AUTO, runs[r].chunk, 0 };
        struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
        int                       got = 0;
        CHECK(s != NULL && decode_frames(s, lat, ls, 0, T, out, 3 * hw, &got), "%s chunk-frames %d: %s", model_file,
              runs[r].chunk, err);
        CHECK(got == T, "%s chunk-frames %d: %d frames, not %d", model_file, runs[r].chunk, got, T);
        if (got == T && ref) {
            const double e = worst_error(out, ref, T, hw);
            printf("%-32s chunk-frames %d (%s): max abs error %.3g\n", model_file, runs[r].chunk, runs[r].expected, e);
            CHECK(e <= SVD_TOL, "%s chunk-frames %d: max abs error %g against %s", model_file, runs[r].chunk, e,
                  runs[r].expected);
        } else if (got == T && whole) { // chunks of 3 (the last 2): seams, so not the whole clip's frames
            const double e = worst_error(out, whole, T, hw);
            printf("%-32s chunk-frames %d: differs from the whole clip by %.3g (upstream's chunk seams)\n", model_file,
                   runs[r].chunk, e);
            CHECK(e > 1e-2, "chunk-frames 3 gives the whole clip's frames (max difference %g)", e);
        }
        vae_session_free(s);
        free(ref);
    }
    free(whole);
    free(out);
    free(lat);
    vae_model_free(m);
}

// the sgm-named fixture and its latents [1, C, T, h, w] (*lat); NULL after a CHECK message
static struct vae_model * load_sgm(int64_t ls[5], float ** lat) {
    struct vae_model * m = vae_model_load(path_in(data_dir, "svd_b2.sgm.safetensors"), VAE_FAMILY_AUTO, err, sizeof(err));
    *lat                 = read_tensor(path_in(data_dir, "svd_b2.latent"), "latent_tensor", ls);
    CHECK(m != NULL, "%s", err);
    if (!m || !*lat) {
        vae_model_free(m);
        free(*lat);
        return NULL;
    }
    return m;
}

// chunk-frames 0 past max-memory: the drain is refused naming the limit and chunk-frames, and
// the session goes on (a shorter clip that fits decodes after it, frames of before are kept)
static void test_whole_clip_limit(void) {
    int64_t            ls[5];
    float *            lat = NULL;
    struct vae_model * m   = load_sgm(ls, &lat);
    if (!m) {
        return;
    }
    size_t peak[2];   // of a 2-frame and a 5-frame clip
    for (int i = 0; i < 2; i++) {
        struct vae_graph * g = vae_model_build_graph(m, i ? 5 : 2, (int) ls[3], (int) ls[4], false, err, sizeof(err));
        CHECK(g && vae_backend_graph_prepare(cpu, g, 0, err, sizeof(err)), "%s", err);
        peak[i] = g ? g->peak_bytes : 0;
        vae_backend_graph_release(cpu, g);
        vae_graph_free(g);
    }
    CHECK(peak[0] < peak[1], "a 2-frame clip takes %zu bytes, a 5-frame one %zu", peak[0], peak[1]);
    struct vae_session_config cfg = { 4, (int) ls[3], (int) ls[4], VAE_SPACE_AUTO, 0, (peak[0] + peak[1]) / 2 };
    struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
    CHECK(s != NULL && vae_session_chunk_frames(s) == 0, "%s", err);
    const size_t frame = 3 * (size_t) (m->scale * ls[3]) * (size_t) (m->scale * ls[4]);
    float *      out   = malloc(12 * frame * sizeof(float));
    int          got   = 0;
    CHECK(s && decode_frames(s, lat, ls, 0, 2, out, frame, &got) && got == 2, "a 2-frame clip: %s", err);
    const bool refused = s && !decode_frames(s, lat, ls, 0, 5, out, frame, &got);
    printf("a 5-frame clip above max-memory: %s\n", refused ? err : "decoded");
    CHECK(refused && strstr(err, "chunk-frames 0 decodes the whole clip as one call (5 latent frames here)") &&
              strstr(err, "memory limit") && strstr(err, "set chunk-frames"),
          "a 5-frame clip above the limit: %s", refused ? err : "decoded");
    CHECK(got == 2, "%d frames after the refusal, not the 2 of before", got);
    CHECK(s && decode_frames(s, lat, ls, 3, 5, out, frame, &got) && got == 4, "a 2-frame clip after: %s", err);
    vae_session_free(s);
    free(out);
    free(lat);
    vae_model_free(m);
}

// chunk-frames 3 over 5 latent frames under a limit that holds the 3-frame graph but not the
// 2-frame last call beside it: the last call still decodes, within the limit, and so does the
// next stream (the chunk's graph made again), with the same frames
static void test_chunk_tail_limit(void) {
    int64_t            ls[5];
    float *            lat = NULL;
    struct vae_model * m   = load_sgm(ls, &lat);
    if (!m) {
        return;
    }
    struct vae_session_config cfg = { 4, (int) ls[3], (int) ls[4], VAE_SPACE_AUTO, 3, 0 };
    struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
    CHECK(s != NULL, "%s", err);
    const size_t limit = s ? vae_session_peak_bytes(s) + 1024 : 0;   // the chunk's graph, and no room for more
    vae_session_free(s);
    cfg.max_bytes = limit;
    s             = vae_session_new(m, cpu, &cfg, err, sizeof(err));
    CHECK(s != NULL, "chunk-frames 3 within %zu bytes: %s", limit, err);
    const size_t frame = 3 * (size_t) (m->scale * ls[3]) * (size_t) (m->scale * ls[4]);
    float *      out   = malloc(10 * frame * sizeof(float));
    int          got   = 0;
    for (int stream = 0; stream < 2 && s; stream++) {
        CHECK(decode_frames(s, lat, ls, 0, 5, out, frame, &got), "stream %d: %s", stream, err);
        printf("chunk-frames 3, stream %d: peak %zu bytes after the 2-frame last call, limit %zu\n", stream,
               vae_session_peak_bytes(s), limit);
        CHECK(vae_session_peak_bytes(s) <= limit, "stream %d: peak %zu bytes above the %zu limit", stream,
              vae_session_peak_bytes(s), limit);
    }
    CHECK(got == 10, "%d frames, not 2 x 5", got);
    CHECK(got == 10 && max_abs_diff(out, out + 5 * frame, 5 * frame) == 0, "the second stream differs from the first");
    vae_session_free(s);
    free(out);
    free(lat);
    vae_model_free(m);
}

// incomplete or mismatched SVD files are refused by name
static void test_refusals(void) {
    const char * path = edited_model("svd_b2.sgm.safetensors", "first_stage_model.decoder.up.1.block.2.mix_factor", NULL);
    struct vae_model * m = path ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)) : NULL;
    CHECK(path && !m && strstr(err, "tensor 'decoder.up.1.block.2.mix_factor'"), "without a mix_factor: %s",
          m ? "loaded" : err);
    vae_model_free(m);
    path = edited_model("svd_b2.diffusers.safetensors", "decoder.time_conv_out.bias", NULL);
    m    = path ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)) : NULL;
    CHECK(path && !m && strstr(err, "'decoder.conv_out.time_mix_conv.bias' is missing"), "without time_conv_out.bias: %s",
          m ? "loaded" : err);
    vae_model_free(m);
    m = vae_model_load(path_in(data_dir, "svd_b2.sgm.safetensors"), VAE_FAMILY_SD1, err, sizeof(err));
    CHECK(!m && strstr(err, "model-family sd1 was asked for, but the file holds a svd-style"), "as sd1: %s",
          m ? "loaded" : err);
    vae_model_free(m);
    m = vae_model_load(path_in(data_dir, "kl_sd.safetensors"), VAE_FAMILY_SVD, err, sizeof(err));
    CHECK(!m && strstr(err, "model-family svd was asked for"), "SD's VAE as svd: %s", m ? "loaded" : err);
    vae_model_free(m);
    unlink(test_tmp_path("edited"));
}

int main(void) {
    if (!test_data_init()) {
        return 1;
    }
    check_naming("svd_b2.sgm.safetensors");
    check_naming("svd_b2.diffusers.safetensors");
    test_whole_clip_limit();
    test_chunk_tail_limit();
    test_refusals();
    vae_backend_free(cpu);
    return vae_test_summary();
}
