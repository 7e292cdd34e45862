// The decoders against upstream PyTorch, without GStreamer: the real TAEF2 weights on the
// shared reference crop (upstream taesd.py output), and random-weight fixtures of every TAESD
// variant and naming (tests/data, made by gen_fixtures.py). Also the loader's refusals, the
// latent-space conversion, and the decode session's chunking and NaN refusal.

#include "vae-test-data.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// decode a latent file with a model; returns the output [N, 3, 8h, 8w] (caller frees)
static float * decode_file(struct vae_model * m, const char * latent_path, int64_t shape[5]) {
    float * lat = read_tensor(latent_path, "latent_tensor", shape);
    if (!lat) {
        return NULL;
    }
    struct vae_graph * g   = vae_model_build_graph(m, (int) shape[0], (int) shape[2], (int) shape[3], false, err, sizeof(err));
    float *            out = NULL;
    if (g && vae_backend_graph_prepare(cpu, g, 0, err, sizeof(err)) &&
        vae_backend_graph_compute(cpu, g, NULL, lat, err, sizeof(err))) {
        out = malloc((size_t) (shape[0] * 3 * 64 * shape[2] * shape[3]) * sizeof(float));
        vae_backend_graph_read_output(cpu, g, 0, (int) g->output->ne[0], out, err, sizeof(err));
    }
    CHECK(out != NULL, "decode of %s failed: %s", latent_path, err);
    vae_backend_graph_release(cpu, g);
    vae_graph_free(g);
    free(lat);
    return out;
}

static void check_reference(const char * model_path, const char * latent_path, const char * expected_path,
                            enum vae_family want_family, double tol) {
    struct vae_model * m = vae_model_load(model_path, VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m != NULL, "%s: %s", model_path, err);
    if (!m) {
        return;
    }
    CHECK(m->family == want_family, "%s detected as %s", model_path, vae_family_name(m->family));
    int64_t ls[5], es[5];
    float * out = decode_file(m, latent_path, ls);
    float * exp = read_tensor(expected_path, "decoded", es);
    if (out && exp) {
        CHECK(es[0] == ls[0] && es[1] == 3 && es[2] == 8 * ls[2] && es[3] == 8 * ls[3], "expected shape mismatch");
        const double d = max_abs_diff(out, exp, (size_t) (es[0] * es[1] * es[2] * es[3]));
        printf("%-40s %-8s max abs error %.3g\n", model_path + strlen(model_path) - (strlen(model_path) > 40 ? 40 : strlen(model_path)),
               vae_family_name(m->family), d);
        CHECK(d <= tol, "%s: max abs error %g above %g", model_path, d, tol);
    }
    free(out);
    free(exp);
    vae_model_free(m);
}

static void test_references(void) {
    check_reference(path_in(shared_dir, "models/taef2_decoder.safetensors"),
                    path_in(shared_dir, "reference/taef2/small.latent"),
                    path_in(shared_dir, "reference/taef2/small.expected.safetensors"), VAE_FAMILY_TAEF2, 1e-4);
    check_reference(path_in(data_dir, "taesd_z4_w16.orig.safetensors"), path_in(data_dir, "taesd_z4_w16.latent"),
                    path_in(data_dir, "taesd_z4_w16.expected.safetensors"), VAE_FAMILY_TAESD, 1e-4);
    check_reference(path_in(data_dir, "taesd_z4_w16.diffusers.safetensors"), path_in(data_dir, "taesd_z4_w16.latent"),
                    path_in(data_dir, "taesd_z4_w16.expected.safetensors"), VAE_FAMILY_TAESD, 1e-4);
    check_reference(path_in(data_dir, "taesd_z16_w16.comfy.safetensors"), path_in(data_dir, "taesd_z16_w16.latent"),
                    path_in(data_dir, "taesd_z16_w16.expected.safetensors"), VAE_FAMILY_TAESD3, 1e-4);
    check_reference(path_in(data_dir, "taef2_z32_w16.orig.safetensors"), path_in(data_dir, "taef2_z32_w16.latent"),
                    path_in(data_dir, "taef2_z32_w16.expected.safetensors"), VAE_FAMILY_TAEF2, 1e-4);
}

// the nearest-2x fold (a 4x4 stride-2 deconvolution) against the plain upsample + conv
static void test_fusion_off(void) {
    setenv("VAE_DISABLE_FUSION", "1", 1);
    check_reference(path_in(shared_dir, "models/taef2_decoder.safetensors"),
                    path_in(shared_dir, "reference/taef2/small.latent"),
                    path_in(shared_dir, "reference/taef2/small.expected.safetensors"), VAE_FAMILY_TAEF2, 1e-4);
    unsetenv("VAE_DISABLE_FUSION");
}

// write a safetensors file of F32 tensors given as name/shape/values triples
struct fake_tensor {
    const char * name;
    int          n_dims;
    int64_t      shape[4];
};

static const char * write_fake_model(const struct fake_tensor * ts, int n) {
    static char path[256];
    snprintf(path, sizeof(path), "%s/vae-test-%d.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int) getpid());
    char     hdr[8192] = "{", *p = hdr + 1;
    uint64_t off       = 0;
    for (int i = 0; i < n; i++) {
        uint64_t numel = 1;
        p += sprintf(p, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[", i ? "," : "", ts[i].name);
        for (int d = 0; d < ts[i].n_dims; d++) {
            p += sprintf(p, d ? ",%lld" : "%lld", (long long) ts[i].shape[d]);
            numel *= (uint64_t) ts[i].shape[d];
        }
        p += sprintf(p, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long) off, (unsigned long long) (off + 4 * numel));
        off += 4 * numel;
    }
    strcat(p, "}");
    FILE *         f   = fopen(path, "wb");
    const uint64_t len = strlen(hdr);
    fwrite(&len, 8, 1, f);
    fwrite(hdr, 1, len, f);
    for (uint64_t i = 0; i < off; i++) {
        fputc(0, f);
    }
    fclose(f);
    return path;
}

static void expect_load_error(const char * path, enum vae_family family, const char * needle) {
    struct vae_model * m = vae_model_load(path, family, err, sizeof(err));
    CHECK(m == NULL, "%s loaded but should not", path);
    vae_model_free(m);
    CHECK_ERR_HAS(err, needle);
    printf("refused %s: %s\n", path, err);
}

static void test_load_errors(void) {
    expect_load_error("/nonexistent/decoder.safetensors", VAE_FAMILY_AUTO, "No such file");
    expect_load_error(path_in(shared_dir, "models/taef2_encoder.safetensors"), VAE_FAMILY_AUTO, "encoder");
    expect_load_error(path_in(shared_dir, "reference/taef2/small.latent"), VAE_FAMILY_AUTO, "matches no decoder family");
    expect_load_error(path_in(shared_dir, "models/taef2_decoder.safetensors"), VAE_FAMILY_TAEF1, "taef1 takes 16");
    expect_load_error(path_in(data_dir, "taesd_z4_w16.orig.safetensors"), VAE_FAMILY_TAEF2, "file's decoder has 4");

    // a TAESD-looking file that lacks most of the decoder
    const struct fake_tensor partial[] = {
        { "1.weight", 4, { 16, 4, 3, 3 } }, { "1.bias", 1, { 16 } }, { "3.conv.0.weight", 4, { 16, 16, 3, 3 } },
    };
    expect_load_error(write_fake_model(partial, 3), VAE_FAMILY_AUTO, "'3.conv.0.bias' is missing");
    // a tensor of the wrong shape
    const struct fake_tensor wrong[] = {
        { "1.weight", 4, { 16, 4, 3, 3 } }, { "1.bias", 1, { 15 } }, { "3.conv.0.weight", 4, { 16, 16, 3, 3 } },
    };
    expect_load_error(write_fake_model(wrong, 3), VAE_FAMILY_AUTO, "'1.bias' has the wrong shape");
    // an AutoencoderKL file: recognised, not yet supported
    const struct fake_tensor kl[] = { { "decoder.conv_in.weight", 4, { 8, 4, 3, 3 } } };
    expect_load_error(write_fake_model(kl, 1), VAE_FAMILY_AUTO, "AutoencoderKL");
    unlink(write_fake_model(kl, 1));
}

// raw latents through a TAESD decoder equal pre-scaled normalized ones; families without
// constants and ambiguous files refuse
static void test_latent_space(void) {
    struct vae_model * m = vae_model_load(path_in(data_dir, "taesd_z4_w16.orig.safetensors"), VAE_FAMILY_AUTO, err,
                                          sizeof(err));
    float              div[32], add[32];
    CHECK(m && !m->family_certain, "z=4 should be ambiguous");
    CHECK(!vae_model_space_affine(m, VAE_SPACE_RAW, div, add, err, sizeof(err)), "raw should be refused");
    CHECK_ERR_HAS(err, "model-family");
    CHECK(vae_model_space_affine(m, VAE_SPACE_NORMALIZED, div, add, err, sizeof(err)) && div[0] == 1.0f &&
              add[0] == 0.0f, "normalized is the identity");
    vae_model_free(m);

    m = vae_model_load(path_in(data_dir, "taesd_z16_w16.comfy.safetensors"), VAE_FAMILY_TAEF1, err, sizeof(err));
    CHECK(m && vae_model_space_affine(m, VAE_SPACE_RAW, div, add, err, sizeof(err)), "%s", err);
    // FLUX.1: (raw - 0.1159) * 0.3611
    CHECK(fabsf(1.0f / div[5] + add[5] - (1.0f - 0.1159f) * 0.3611f) < 1e-6f, "taef1 raw conversion");
    vae_model_free(m);

    m = vae_model_load(path_in(data_dir, "taef2_z32_w16.orig.safetensors"), VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m && !vae_model_space_affine(m, VAE_SPACE_RAW, div, add, err, sizeof(err)), "taef2 raw refused");
    CHECK_ERR_HAS(err, "taef2 has no constants");
    vae_model_free(m);
}

// a session decodes the same frames whatever the chunk size; NaN is refused with its position
static void test_session(void) {
    struct vae_model * m = vae_model_load(path_in(data_dir, "taef2_z32_w16.orig.safetensors"), VAE_FAMILY_AUTO, err,
                                          sizeof(err));
    int64_t            ls[5], es[5];
    float *            lat = read_tensor(path_in(data_dir, "taef2_z32_w16.latent"), "latent_tensor", ls);
    float *            exp = read_tensor(path_in(data_dir, "taef2_z32_w16.expected.safetensors"), "decoded", es);
    if (!m || !lat || !exp) {
        CHECK(0, "fixtures missing");
        return;
    }
    const int       W = 8 * (int) ls[3], H = 8 * (int) ls[2];
    const size_t    lat_n = (size_t) (ls[1] * ls[2] * ls[3]);
    static uint8_t  rgb[2][40 * 56 * 3];
    for (int chunk = 0; chunk <= 3; chunk++) {
        struct vae_session_config cfg = { (int) ls[1], (int) ls[2], (int) ls[3], VAE_SPACE_AUTO, chunk, 0 };
        struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
        CHECK(s != NULL, "%s", err);
        if (!s) {
            continue;
        }
        int got = 0;
        for (int f = 0; f < 2; f++) {
            CHECK(vae_session_push(s, lat + f * lat_n, err, sizeof(err)), "%s", err);
            while (vae_session_frames_ready(s) > 0) {
                struct vae_frame fr = { VAE_PIXEL_RGB, W, H, { rgb[got] }, { W * 3 }, 0, 0, 0, 0, false };
                CHECK(vae_session_pop_frame(s, &fr, err, sizeof(err)), "%s", err);
                got++;
            }
        }
        CHECK(got == (chunk >= 3 ? 0 : 2 - (2 % (chunk ? chunk : 1))), "chunk %d: %d frames before drain", chunk, got);
        CHECK(vae_session_drain(s, err, sizeof(err)), "%s", err);
        while (vae_session_frames_ready(s) > 0) {
            struct vae_frame fr = { VAE_PIXEL_RGB, W, H, { rgb[got] }, { W * 3 }, 0, 0, 0, 0, false };
            CHECK(vae_session_pop_frame(s, &fr, err, sizeof(err)), "%s", err);
            got++;
        }
        CHECK(got == 2, "chunk %d: %d frames in all", chunk, got);
        int worst = 0;
        for (int f = 0; f < 2; f++) {
            for (int c = 0; c < 3; c++) {
                for (int i = 0; i < H * W; i++) {
                    float v = exp[(f * 3 + c) * H * W + i];
                    v       = v < 0 ? 0 : v > 1 ? 1 : v;
                    const int d = abs((int) rgb[f][i * 3 + c] - (int) (v * 255.0f + 0.5f));
                    worst       = d > worst ? d : worst;
                }
            }
        }
        CHECK(worst <= 1, "chunk %d: pixels differ from the reference by %d", chunk, worst);

        // NaN is refused, with its position, and nothing is queued
        const size_t at = (size_t) (3 * ls[2] * ls[3] + 2 * ls[3] + 4);
        const float  keep = lat[at];
        lat[at]           = NAN;
        CHECK(!vae_session_push(s, lat, err, sizeof(err)), "NaN accepted");
        CHECK_ERR_HAS(err, "1 non-finite values (NaN or Inf); the first is nan at channel 3, row 2, column 4");
        lat[at] = keep;
        vae_session_free(s);
    }
    // sizes the decoder cannot take are refused before any allocation
    struct vae_session_config bad = { 32, 5000, 7, VAE_SPACE_AUTO, 0, 0 };
    CHECK(vae_session_new(m, cpu, &bad, err, sizeof(err)) == NULL, "absurd size accepted");
    CHECK_ERR_HAS(err, "outside 1..4096");
    struct vae_session_config big = { 32, 4096, 4096, VAE_SPACE_AUTO, 1, 64u << 20 };
    CHECK(vae_session_new(m, cpu, &big, err, sizeof(err)) == NULL, "a plan above max_bytes accepted");
    CHECK_ERR_HAS(err, "above the 64.0 MiB memory limit");
    struct vae_session_config chans = { 16, 5, 7, VAE_SPACE_AUTO, 0, 0 };
    CHECK(vae_session_new(m, cpu, &chans, err, sizeof(err)) == NULL, "wrong channel count accepted");
    CHECK_ERR_HAS(err, "the latents have 16 channels but the taef2 decoder takes 32");
    free(lat);
    free(exp);
    vae_model_free(m);
}

// vae_family_latent_channels and vae_family_is_video (what the element names before it has a file)
// agree with every decoder file of tests/data and ../shared/models as loaded
static void test_family_table(void) {
    const char * dirs[] = { data_dir, path_in(shared_dir, "models") };
    bool         seen[VAE_FAMILY_COUNT] = { false };
    int          n_seen = 0;
    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
        DIR *           dir = opendir(dirs[d]);
        struct dirent * e;
        CHECK(dir != NULL, "no directory %s", dirs[d]);
        while (dir && (e = readdir(dir)) != NULL) {
            if (strstr(e->d_name, ".latent") || strstr(e->d_name, ".expected.") || e->d_name[0] == '.') {
                continue;
            }
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
            struct vae_model * m = vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err));
            if (m == NULL) {
                continue; // not a decoder (an encoder, a malformed fixture)
            }
            const bool video = m->frames_per_latent > 1 || m->clip_calls;
            CHECK(vae_family_latent_channels(m->family) == m->latent_channels && vae_family_is_video(m->family) == video,
                  "%s (%s): the table says %d channels, %s; the file %d, %s", e->d_name, vae_family_name(m->family),
                  vae_family_latent_channels(m->family), vae_family_is_video(m->family) ? "video" : "image",
                  m->latent_channels, video ? "video" : "image");
            n_seen += !seen[m->family];
            seen[m->family] = true;
            vae_model_free(m);
        }
        if (dir) {
            closedir(dir);
        }
    }
    printf("family table: checked against files of %d families\n", n_seen);
    CHECK(n_seen >= 15, "only %d families among the fixtures", n_seen);
}

int main(void) {
    if (!test_data_init()) {
        return 1;
    }
    test_references();
    test_fusion_off();
    test_load_errors();
    test_latent_space();
    test_session();
    test_family_table();
    vae_backend_free(cpu);
    return vae_test_summary();
}
