// The AutoencoderKL decoders (SD 1.x/2.x, SDXL, SD3, FLUX.1, FLUX.2, HunyuanImage 2.1), Qwen-Image 2.1's
// RGBA decoder and SANA's DC-AE through the decode session,
// without GStreamer: random-weight fixtures against diffusers (tests/data/kl_*, made by
// gen_kl_fixtures.py) in every naming a checkpoint uses (LDM, diffusers, diffusers before its
// attention rename, full checkpoints with `first_stage_model.` or `vae.` prefixes, BFL's FLUX.2),
// both latent spaces of each family (scale and shift; FLUX.2's BatchNorm statistics and 2x2
// patches), the exact tiled decode against the whole-frame one (same output, less memory), and
// the loader's and the session's refusals.

#include "vae-test-data.h"

#include <stdint.h>
#include <unistd.h>

// one decode through a session: the raw output [3 (RGBA: 4), height, width] (caller frees)
struct image {
    int     height, width;
    float * data;
    size_t  peak;                          // vae_session_peak_bytes
    int     tile;                          // vae_session_tile_size
};

// decode one latent frame [C, h, w] (in `space`) with tile edge `tile`; data NULL with the
// reason in err (not a failed check: the error tests look at err)
static struct image decode_one(const struct vae_model * m, const float * lat, int c, int h, int w, enum vae_space space,
                               int tile) {
    const int                 p   = vae_model_space_patch(m, space);
    struct image              img = { m->scale * p * h, m->scale * p * w, NULL, 0, 0 };
    struct vae_session_config cfg = { c, h, w, space, 1, 0, tile };
    struct vae_session *      s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
    if (!s) {
        return img;
    }
    img.peak  = vae_session_peak_bytes(s);
    img.tile  = vae_session_tile_size(s);
    float * y = malloc((size_t) m->out_channels * img.height * img.width * sizeof(float));
    bool    ok = vae_session_push(s, lat, err, sizeof(err)) &&
              (vae_session_frames_ready(s) > 0 || vae_session_drain(s, err, sizeof(err)));
    if (ok && vae_session_frames_ready(s) != 1) {
        snprintf(err, sizeof(err), "%d frames ready after one latent frame, not 1", vae_session_frames_ready(s));
        ok = false;
    }
    ok = ok && vae_session_pop_output(s, y, err, sizeof(err));
    vae_session_free(s);
    if (!ok) {
        free(y);
        y = NULL;
    }
    img.data = y;
    return img;
}

// decode and CHECK that it worked and has the expected size
static struct image decode_ok(const char * what, const struct vae_model * m, const float * lat, int c, int h, int w,
                              enum vae_space space, int tile, int H, int W) {
    struct image img = decode_one(m, lat, c, h, w, space, tile);
    CHECK(img.data != NULL, "%s: %s", what, err);
    CHECK(!img.data || (img.height == H && img.width == W), "%s: %dx%d output, not %dx%d", what, img.width, img.height,
          W, H);
    if (img.data && (img.height != H || img.width != W)) {
        free(img.data);
        img.data = NULL;
    }
    return img;
}

// max |a - b| over n values, printed, checked against tol
static double check_close(const char * what, const float * a, const float * b, size_t n, double tol) {
    if (!a || !b) {
        return INFINITY;
    }
    const double d = max_abs_diff(a, b, n);
    printf("  %-62s max abs diff %.3g\n", what, d);
    CHECK(d <= tol, "%s: max abs diff %g above %g", what, d, tol);
    return d;
}

static struct vae_model * load(const char * path, enum vae_family family) {
    struct vae_model * m = vae_model_load(path, family, err, sizeof(err));
    CHECK(m != NULL, "%s as %s: %s", path, vae_family_name(family), err);
    return m;
}

// a latent [C, h, w] read from a fixture ([1, C, h, w]); the shape in s
static float * read_latent(const char * file, int64_t s[5]) {
    float * lat = read_tensor(path_in(data_dir, file), "latent_tensor", s);
    CHECK(!lat || s[0] == 1, "%s: batch %lld", file, (long long) s[0]);
    return lat;
}

// ---- references and namings ----

static const char * sd_variants[] = { "ldm", "diffusers", "diffusers_old_attn", "first_stage_model", "vae" };

static void test_sd_namings(void) {
    int64_t ls[5], es[5];
    float * z   = read_latent("kl_sd.latent", ls);
    float * exp = read_tensor(path_in(data_dir, "kl_sd.expected.safetensors"), "decoded", es);
    if (!z || !exp) {
        free(z);
        free(exp);
        return;
    }
    const int    C = (int) ls[1], h = (int) ls[2], w = (int) ls[3], H = (int) es[2], W = (int) es[3];
    const size_t n     = (size_t) 3 * H * W;
    float *      first = NULL;
    printf("kl_sd (4 channels, widths 96/96/96/64/32), %dx%d latent -> %dx%d:\n", w, h, W, H);
    for (int v = -1; v < (int) (sizeof(sd_variants) / sizeof(sd_variants[0])); v++) {
        // v = -1: the fixture itself (LDM names with encoder tensors to ignore)
        const char * name = v < 0 ? "kl_sd.safetensors" : sd_variants[v];
        const char * path = v < 0 ? path_in(data_dir, "kl_sd.safetensors")
                                   : renamed_model("kl_sd.safetensors", "kl_sd.names.txt", sd_variants[v], NULL, "sd");
        struct vae_model * m = path ? load(path, VAE_FAMILY_AUTO) : NULL;
        if (v >= 0 && path) {
            unlink(path);
        }
        if (!m) {
            continue;
        }
        // a full SD1 checkpoint says so (cond_stage_model.transformer.*); a bare VAE cannot tell
        const bool full = v >= 0 && strcmp(sd_variants[v], "first_stage_model") == 0;
        printf("  %-20s %s\n", name, m->description);
        CHECK(m->family == VAE_FAMILY_SD1 && m->family_certain == full && m->latent_channels == 4 && m->scale == 8,
              "%s: %s (certain %d), %d channels, scale %d", name, vae_family_name(m->family), m->family_certain,
              m->latent_channels, m->scale);
        struct image y = decode_ok(name, m, z, C, h, w, VAE_SPACE_AUTO, 0, H, W);
        char         what[128];
        snprintf(what, sizeof(what), "%s vs diffusers", name);
        check_close(what, y.data, exp, n, 1e-4);
        if (!first) {
            first = y.data;
        } else if (y.data) {
            snprintf(what, sizeof(what), "%s vs kl_sd.safetensors (identical)", name);
            check_close(what, y.data, first, n, 0.0);
            free(y.data);
        }
        vae_model_free(m);
    }
    free(first);
    free(z);
    free(exp);
}

static void test_f1_f2(void) {
    int64_t ls[5], es[5];
    float * z   = read_latent("kl_f1.latent", ls);
    float * exp = read_tensor(path_in(data_dir, "kl_f1.expected.safetensors"), "decoded", es);
    printf("kl_f1 (16 channels, no post_quant_conv), %lldx%lld latent -> %lldx%lld:\n", (long long) ls[3],
           (long long) ls[2], (long long) es[3], (long long) es[2]);
    for (int i = 0; z && exp && i < 2; i++) {
        const enum vae_family fam = i ? VAE_FAMILY_FLUX1 : VAE_FAMILY_AUTO;
        struct vae_model *    m   = load(path_in(data_dir, "kl_f1.safetensors"), fam);
        if (!m) {
            continue;
        }
        printf("  model-family %-6s %s\n", vae_family_name(fam), m->description);
        CHECK(m->family == (i ? VAE_FAMILY_FLUX1 : VAE_FAMILY_SD3) && m->family_certain == (i == 1) &&
                  m->latent_channels == 16,
              "kl_f1 as %s: %s (certain %d)", vae_family_name(fam), vae_family_name(m->family), m->family_certain);
        for (int raw = 0; raw < 2; raw++) {
            struct image y = decode_ok("kl_f1", m, z, 16, (int) ls[2], (int) ls[3], raw ? VAE_SPACE_RAW : VAE_SPACE_AUTO,
                                       0, (int) es[2], (int) es[3]);
            char what[128];
            snprintf(what, sizeof(what), "kl_f1 as %s, space %s, vs diffusers", vae_family_name(fam), raw ? "raw" : "auto");
            check_close(what, y.data, exp, (size_t) 3 * es[2] * es[3], 1e-4);
            free(y.data);
        }
        vae_model_free(m);
    }
    free(z);
    free(exp);

    // FLUX.2: raw latents, and the normalized 128-channel ones at half the size
    int64_t xs[5];
    float * x    = read_latent("kl_f2.normalized.latent", xs);
    z            = read_latent("kl_f2.latent", ls);
    exp          = read_tensor(path_in(data_dir, "kl_f2.expected.safetensors"), "decoded", es);
    float * expn = read_tensor(path_in(data_dir, "kl_f2.expected.safetensors"), "decoded_normalized", es);
    printf("kl_f2 (32 channels, BatchNorm statistics), raw %lldx%lld and normalized 128 x %lldx%lld -> %lldx%lld:\n",
           (long long) ls[3], (long long) ls[2], (long long) xs[3], (long long) xs[2], (long long) es[3],
           (long long) es[2]);
    const size_t n     = (size_t) 3 * es[2] * es[3];
    float *      first = NULL;
    // the fixture (top-level post_quant_conv), BFL's names (decoder.post_quant_conv), diffusers'
    static const char * variants[] = { NULL, "bfl", "diffusers" };
    for (int v = 0; x && z && exp && expn && v < 3; v++) {
        const char * path = v ? renamed_model("kl_f2.safetensors", "kl_f2.names.txt", variants[v], NULL, "f2")
                              : path_in(data_dir, "kl_f2.safetensors");
        struct vae_model * m = path ? load(path, VAE_FAMILY_AUTO) : NULL;
        if (v && path) {
            unlink(path);
        }
        if (!m) {
            continue;
        }
        const char * name = v ? variants[v] : "kl_f2.safetensors";
        printf("  %-20s %s\n", name, m->description);
        CHECK(m->family == VAE_FAMILY_FLUX2 && m->family_certain && m->latent_channels == 32, "%s: %s", name,
              vae_family_name(m->family));
        CHECK(vae_model_space_patch(m, VAE_SPACE_NORMALIZED) == 2 && vae_model_space_patch(m, VAE_SPACE_RAW) == 1,
              "flux2 patch sizes %d (normalized), %d (raw)", vae_model_space_patch(m, VAE_SPACE_NORMALIZED),
              vae_model_space_patch(m, VAE_SPACE_RAW));
        struct image y = decode_ok(name, m, z, 32, (int) ls[2], (int) ls[3], VAE_SPACE_RAW, 0, (int) es[2], (int) es[3]);
        char         what[128];
        snprintf(what, sizeof(what), "%s raw vs diffusers", name);
        check_close(what, y.data, exp, n, 1e-4);
        struct image yn = decode_ok(name, m, x, 128, (int) xs[2], (int) xs[3], VAE_SPACE_NORMALIZED, 0, (int) es[2],
                                    (int) es[3]);
        snprintf(what, sizeof(what), "%s normalized vs diffusers (BN + unpatchify)", name);
        check_close(what, yn.data, expn, n, 1e-4);
        free(yn.data);
        if (!first) {
            first = y.data;
        } else if (y.data) {
            snprintf(what, sizeof(what), "%s raw vs kl_f2.safetensors (identical)", name);
            check_close(what, y.data, first, n, 0.0);
            free(y.data);
        }
        vae_model_free(m);
    }
    free(first);
    free(x);
    free(z);
    free(exp);
    free(expn);
}

// ---- latent spaces: normalized latents x give the same image as the raw z they stand for ----

static void check_space(const char * file, const char * path, enum vae_family fam, float scale, float shift,
                        const float * z, int c, int h, int w) {
    struct vae_model * m = load(path, fam);
    if (!m) {
        return;
    }
    const size_t cn = (size_t) c * h * w, n = (size_t) 3 * 64 * h * w;
    float *      x  = malloc(cn * sizeof(float));
    for (size_t i = 0; i < cn; i++) {
        x[i] = (z[i] - shift) * scale;   // the diffusion model's x for raw z = x / scale + shift
    }
    struct image y  = decode_ok(file, m, z, c, h, w, VAE_SPACE_RAW, 0, 8 * h, 8 * w);
    struct image yn = decode_ok(file, m, x, c, h, w, VAE_SPACE_NORMALIZED, 0, 8 * h, 8 * w);
    char         what[160];
    snprintf(what, sizeof(what), "%s as %s: x = (z - %g) * %g normalized vs z raw", file, vae_family_name(m->family),
             shift, scale);
    check_close(what, yn.data, y.data, n, 1e-5);
    free(y.data);
    free(yn.data);
    free(x);
    vae_model_free(m);
}

static void test_spaces(void) {
    int64_t ls[5], fs[5];
    float * z  = read_latent("kl_sd.latent", ls);
    float * zf = read_latent("kl_f1.latent", fs);
    if (!z || !zf) {
        free(z);
        free(zf);
        return;
    }
    const int    h = (int) ls[2], w = (int) ls[3], fh = (int) fs[2], fw = (int) fs[3];
    const char * sd = path_in(data_dir, "kl_sd.safetensors"), * f1 = path_in(data_dir, "kl_f1.safetensors");
    printf("latent spaces:\n");
    check_space("kl_sd", sd, VAE_FAMILY_SD1, 0.18215f, 0.0f, z, 4, h, w);
    check_space("kl_sd", sd, VAE_FAMILY_SD2, 0.18215f, 0.0f, z, 4, h, w);
    check_space("kl_sd", sd, VAE_FAMILY_SDXL, 0.13025f, 0.0f, z, 4, h, w);
    check_space("kl_f1", f1, VAE_FAMILY_SD3, 1.5305f, 0.0609f, zf, 16, fh, fw);
    check_space("kl_f1", f1, VAE_FAMILY_FLUX1, 0.3611f, 0.1159f, zf, 16, fh, fw);
    // a full SD1 checkpoint names its family: no model-family needed
    const char * full = renamed_model("kl_sd.safetensors", "kl_sd.names.txt", "first_stage_model", NULL, "full");
    if (full) {
        check_space("kl_sd first_stage_model", full, VAE_FAMILY_AUTO, 0.18215f, 0.0f, z, 4, h, w);
        unlink(full);
    }
    // a bare 4- or 16-channel VAE cannot tell which constants: refused, naming the candidates
    static const struct {
        const char * file, * want[2];
        int          c;
    } ambiguous[] = { { "kl_sd.safetensors", { "sd1", "sdxl" }, 4 }, { "kl_f1.safetensors", { "sd3", "flux1" }, 16 } };
    for (int i = 0; i < 2; i++) {
        struct vae_model * m = load(path_in(data_dir, ambiguous[i].file), VAE_FAMILY_AUTO);
        if (!m) {
            continue;
        }
        struct image y = decode_one(m, ambiguous[i].c == 4 ? z : zf, ambiguous[i].c, i ? fh : h, i ? fw : w,
                                    VAE_SPACE_NORMALIZED, 0);
        CHECK(y.data == NULL, "normalized latents into %s with family auto were taken", ambiguous[i].file);
        CHECK_ERR_HAS(err, ambiguous[i].want[0]);
        CHECK_ERR_HAS(err, ambiguous[i].want[1]);
        CHECK_ERR_HAS(err, "model-family");
        printf("  refused: %s\n", err);
        free(y.data);
        vae_model_free(m);
    }
    free(z);
    free(zf);
}

// ---- tiled decode: the same output as the whole frame, in less memory ----

// N(0, 1) numbers from a fixed seed (xorshift64* and Box-Muller)
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

static float * random_latent(int c, int h, int w, uint64_t seed, float scale) {
    float * lat = malloc((size_t) c * h * w * sizeof(float));
    for (size_t i = 0; i < (size_t) c * h * w; i++) {
        lat[i] = scale * gauss(&seed);
    }
    lat[(size_t) c * h * w / 3] = 9.0f; // one outlier: GroupNorm statistics are not those of a tile
    return lat;
}

// whole-frame decode, then each tile size: the same output (and, with less_memory, the smallest
// tile needs less memory than the whole frame)
static void check_tiles(const char * what, const struct vae_model * m, const float * lat, int c, int h, int w,
                        enum vae_space space, const int * tiles, int n_tiles, bool less_memory) {
    const int    p = vae_model_space_patch(m, space), H = m->scale * p * h, W = m->scale * p * w;
    struct image ref = decode_ok(what, m, lat, c, h, w, space, 0, H, W);
    if (!ref.data) {
        return;
    }
    printf("  %s, %d x %dx%d latent -> %dx%d: whole frame: tile %d, peak %.2f MiB\n", what, c, w, h, W, H, ref.tile,
           (double) ref.peak / 1048576.0);
    CHECK(ref.tile == 0, "%s: tile-size 0 decoded in tiles of %d", what, ref.tile);
    size_t smallest_peak = 0;
    int    smallest      = 1 << 30;
    for (int i = 0; i < n_tiles; i++) {
        struct image y = decode_ok(what, m, lat, c, h, w, space, tiles[i], H, W);
        if (!y.data) {
            continue;
        }
        char label[160];
        snprintf(label, sizeof(label), "tile-size %d (in use %d, peak %.2f MiB) vs whole", tiles[i], y.tile,
                 (double) y.peak / 1048576.0);
        check_close(label, y.data, ref.data, (size_t) m->out_channels * H * W, 1e-4);
        CHECK(y.tile > 0 && y.tile <= tiles[i], "%s: tile-size %d gave tiles of %d", what, tiles[i], y.tile);
        if (tiles[i] < smallest) {
            smallest      = tiles[i];
            smallest_peak = y.peak;
        }
        free(y.data);
    }
    if (less_memory) {
        CHECK(smallest_peak > 0 && smallest_peak < ref.peak, "%s: tile-size %d peaks at %zu bytes, whole frames at %zu",
              what, smallest, smallest_peak, ref.peak);
    }
    free(ref.data);
}

static void test_tiles(void) {
    printf("tiled decode:\n");
    struct vae_model * m = load(path_in(data_dir, "kl_sd.safetensors"), VAE_FAMILY_SD1);
    if (m) {
        // 192x160 output: 72 divides neither side
        float *          lat      = random_latent(4, 24, 20, 0x5eed0001ULL, 2.0f);
        static const int tiles[4] = { 32, 48, 72, 16 };
        check_tiles("kl_sd", m, lat, 4, 24, 20, VAE_SPACE_RAW, tiles, 4, true);
        free(lat);
        // odd and not square: 104x56 output
        lat                       = random_latent(4, 13, 7, 0x5eed0002ULL, 2.0f);
        static const int odd[3]   = { 40, 24, 16 };
        check_tiles("kl_sd", m, lat, 4, 13, 7, VAE_SPACE_RAW, odd, 3, false);
        free(lat);
        vae_model_free(m);
    }
    // FLUX.2 normalized latents (patches) in tiles, against diffusers
    int64_t xs[5], es[5];
    float * x   = read_latent("kl_f2.normalized.latent", xs);
    float * exp = read_tensor(path_in(data_dir, "kl_f2.expected.safetensors"), "decoded_normalized", es);
    m           = load(path_in(data_dir, "kl_f2.safetensors"), VAE_FAMILY_AUTO);
    if (m && x && exp) {
        static const int tiles[2] = { 24, 16 };
        check_tiles("kl_f2 normalized", m, x, 128, (int) xs[2], (int) xs[3], VAE_SPACE_NORMALIZED, tiles, 2, false);
        struct image y = decode_ok("kl_f2 tiled", m, x, 128, (int) xs[2], (int) xs[3], VAE_SPACE_NORMALIZED, 16,
                                   (int) es[2], (int) es[3]);
        check_close("kl_f2 normalized, tile-size 16, vs diffusers", y.data, exp, (size_t) 3 * es[2] * es[3], 1e-4);
        free(y.data);
    }
    vae_model_free(m);
    free(x);
    free(exp);
}

// ---- HunyuanImage 2.1 (64 channels, 32x; tests/data/hyimage_w64.*, gen_hyimage_fixtures.py) ----

static void test_hunyuanimage(void) {
    int64_t ls[5], xs[5], es[5];
    float * z    = read_latent("hyimage_w64.latent", ls);
    float * x    = read_latent("hyimage_w64.normalized.latent", xs);
    float * exp  = read_tensor(path_in(data_dir, "hyimage_w64.expected.safetensors"), "decoded", es);
    int64_t ns[5];
    float * expn = read_tensor(path_in(data_dir, "hyimage_w64.expected.safetensors"), "decoded_normalized", ns);
    printf("hyimage_w64 (64 channels, conv_in and upsampler shortcuts, sub-position-major shuffles), %lldx%lld and "
           "normalized %lldx%lld:\n", (long long) ls[3], (long long) ls[2], (long long) xs[3], (long long) xs[2]);
    // the original (Tencent / ComfyUI) names, diffusers' flat list, and a checkpoint's `vae.` prefix
    static const char * variants[] = { NULL, "diffusers", "vae" };
    for (int v = 0; z && x && exp && expn && v < 3; v++) {
        const char * path = v ? renamed_model("hyimage_w64.orig.safetensors", "hyimage_w64.names.txt", variants[v], NULL,
                                              "hy")
                              : path_in(data_dir, "hyimage_w64.orig.safetensors");
        struct vae_model * m    = path ? load(path, VAE_FAMILY_AUTO) : NULL;
        const char *       name = v ? variants[v] : "hyimage_w64.orig";
        if (v && path) {
            unlink(path);
        }
        if (!m) {
            continue;
        }
        printf("  %-20s %s\n", name, m->description);
        CHECK(m->family == VAE_FAMILY_HYIMAGE21 && m->family_certain && m->latent_channels == 64 && m->scale == 32,
              "%s: %s, %d channels, scale %d", name, vae_family_name(m->family), m->latent_channels, m->scale);
        char         what[128];
        struct image y = decode_ok(name, m, z, 64, (int) ls[2], (int) ls[3], VAE_SPACE_RAW, 0, (int) es[2], (int) es[3]);
        snprintf(what, sizeof(what), "%s raw vs diffusers", name);
        check_close(what, y.data, exp, (size_t) 3 * es[2] * es[3], 1e-4);
        free(y.data);
        y = decode_ok(name, m, x, 64, (int) xs[2], (int) xs[3], VAE_SPACE_NORMALIZED, 0, (int) ns[2], (int) ns[3]);
        snprintf(what, sizeof(what), "%s normalized (x / 0.75289) vs diffusers", name);
        check_close(what, y.data, expn, (size_t) 3 * ns[2] * ns[3], 1e-4);
        free(y.data);
        if (v == 0) { // exact tiles: 16 and 40 split every level (the frame is 96x160)
            static const int tiles[2] = { 40, 16 };
            check_tiles("hyimage_w64", m, z, 64, (int) ls[2], (int) ls[3], VAE_SPACE_RAW, tiles, 2, true);
            y = decode_ok(name, m, z, 64, (int) ls[2], (int) ls[3], VAE_SPACE_RAW, 16, (int) es[2], (int) es[3]);
            check_close("hyimage_w64, tile-size 16, vs diffusers", y.data, exp, (size_t) 3 * es[2] * es[3], 1e-4);
            free(y.data);
        }
        vae_model_free(m);
    }
    // a named family must be the file's
    struct vae_model * m = vae_model_load(path_in(data_dir, "hyimage_w64.orig.safetensors"), VAE_FAMILY_FLUX2, err,
                                          sizeof(err));
    CHECK(!m && strstr(err, "model-family flux2 was asked for, but the file holds a hunyuanimage2.1-style "
                            "AutoencoderKL decoder (64 latent channels)"), "hyimage as flux2: %s", m ? "loaded" : err);
    vae_model_free(m);
    free(z);
    free(x);
    free(exp);
    free(expn);
}

// ---- Qwen-Image 2.1 (64 channels, RGBA; tests/data/qwen21_b4.*, gen_qwen21_fixtures.py) ----

// the values of y [n] clamped to [-1, 1], as vae.decode gives them
static void clamp_unit(float * y, size_t n) {
    for (size_t i = 0; y && i < n; i++) {
        y[i] = y[i] < -1.0f ? -1.0f : y[i] > 1.0f ? 1.0f : y[i];
    }
}

static void test_qwen21(void) {
    int64_t ls[5], xs[5], es[5];
    float * z    = read_tensor(path_in(data_dir, "qwen21_b4.latent"), "latent_tensor", ls);      // [1, 64, 5, 7]
    float * x    = read_tensor(path_in(data_dir, "qwen21_b4.normalized.latent"), "latent_tensor", xs); // [1, 64, 1, 5, 7]
    float * expu = read_tensor(path_in(data_dir, "qwen21_b4.expected.safetensors"), "decoded_unclamped", es);
    float * exp  = read_tensor(path_in(data_dir, "qwen21_b4.expected.safetensors"), "decoded", es);
    float * expn = read_tensor(path_in(data_dir, "qwen21_b4.expected.safetensors"), "decoded_normalized", es);
    const int    h = (int) ls[2], w = (int) ls[3], H = (int) es[3], W = (int) es[4];
    const size_t n = (size_t) 4 * H * W;
    printf("qwen21_b4 (64 channels, RGBA, 2-D convs, DupUp3D first slots), %dx%d -> %dx%d:\n", w, h, W, H);
    static const char * files[] = { "qwen21_b4.orig.safetensors", "qwen21_b4.diffusers.safetensors" };
    for (int v = 0; z && x && exp && expu && expn && v < 2; v++) {
        struct vae_model * m = load(path_in(data_dir, files[v]), VAE_FAMILY_AUTO);
        if (!m) {
            continue;
        }
        printf("  %-34s %s\n", files[v], m->description);
        CHECK(m->family == VAE_FAMILY_QWEN21 && m->latent_channels == 64 && m->scale == 16 && m->out_channels == 4 &&
                  !vae_family_is_video(m->family),
              "%s: %s, %d channels, scale %d, %d output channels", files[v], vae_family_name(m->family),
              m->latent_channels, m->scale, m->out_channels);
        char         what[128];
        struct image y = decode_ok(files[v], m, z, 64, h, w, VAE_SPACE_RAW, 0, H, W);
        snprintf(what, sizeof(what), "%s RGBA vs diffusers (unclamped)", files[v]);
        check_close(what, y.data, expu, n, 1e-4);
        clamp_unit(y.data, n);
        snprintf(what, sizeof(what), "%s RGBA, clamped, vs vae.decode", files[v]);
        check_close(what, y.data, exp, n, 1e-4);
        free(y.data);
        y = decode_ok(files[v], m, x, 64, h, w, VAE_SPACE_NORMALIZED, 0, H, W);
        clamp_unit(y.data, n);
        snprintf(what, sizeof(what), "%s normalized (x * std + mean) vs diffusers", files[v]);
        check_close(what, y.data, expn, n, 1e-4);
        free(y.data);
        if (v == 0) { // exact tiles (every step after the mid block), 112x80: 48 divides neither side
            static const int tiles[2] = { 48, 16 };
            check_tiles("qwen21_b4", m, z, 64, h, w, VAE_SPACE_RAW, tiles, 2, true);
        }
        vae_model_free(m);
    }
    struct vae_model * m = vae_model_load(path_in(data_dir, "qwen21_b4.orig.safetensors"), VAE_FAMILY_WAN22, err,
                                          sizeof(err));
    CHECK(!m && strstr(err, "model-family wan2.2 was asked for, but the file holds a qwenimage2.1 decoder"),
          "qwen21 as wan2.2: %s", m ? "loaded" : err);
    vae_model_free(m);
    free(z);
    free(x);
    free(exp);
    free(expu);
    free(expn);
}

// ---- DC-AE (SANA f32c32: 32 channels, 32x; tests/data/dcae_w32.*, gen_dcae_fixtures.py) ----

static void test_dcae(void) {
    int64_t ls[5], xs[5], es[5], ns[5];
    float * z    = read_latent("dcae_w32.latent", ls);            // 3x5: quadratic attention at the last level
    float * x    = read_latent("dcae_w32.normalized.latent", xs); // 3x7: linear everywhere
    float * exp  = read_tensor(path_in(data_dir, "dcae_w32.expected.safetensors"), "decoded", es);
    float * expn = read_tensor(path_in(data_dir, "dcae_w32.expected.safetensors"), "decoded_normalized", ns);
    printf("dcae_w32 (widths 4..64, EfficientViT levels 5..3, 5x5 multi-scale), %lldx%lld and normalized %lldx%lld:\n",
           (long long) ls[3], (long long) ls[2], (long long) xs[3], (long long) xs[2]);
    static const char * files[] = { "dcae_w32.diffusers.safetensors", "dcae_w32.orig.safetensors" };
    for (int v = 0; z && x && exp && expn && v < 2; v++) {
        struct vae_model * m = load(path_in(data_dir, files[v]), VAE_FAMILY_AUTO);
        if (!m) {
            continue;
        }
        printf("  %-32s %s\n", files[v], m->description);
        CHECK(m->family == VAE_FAMILY_DCAE && m->family_certain && m->latent_channels == 32 && m->scale == 32,
              "%s: %s, %d channels, scale %d", files[v], vae_family_name(m->family), m->latent_channels, m->scale);
        char         what[128];
        struct image y = decode_ok(files[v], m, z, 32, (int) ls[2], (int) ls[3], VAE_SPACE_RAW, 0, (int) es[2],
                                   (int) es[3]);
        snprintf(what, sizeof(what), "%s raw vs diffusers", files[v]);
        check_close(what, y.data, exp, (size_t) 3 * es[2] * es[3], 1e-4);
        free(y.data);
        y = decode_ok(files[v], m, x, 32, (int) xs[2], (int) xs[3], VAE_SPACE_NORMALIZED, 0, (int) ns[2], (int) ns[3]);
        snprintf(what, sizeof(what), "%s normalized (x / 0.41407) vs diffusers", files[v]);
        check_close(what, y.data, expn, (size_t) 3 * ns[2] * ns[3], 1e-4);
        free(y.data);
        if (v == 0) { // exact tiles over the ResBlock levels (the attention ones run whole)
            static const int tiles[2] = { 40, 16 };
            check_tiles("dcae_w32", m, z, 32, (int) ls[2], (int) ls[3], VAE_SPACE_RAW, tiles, 2, true);
        }
        vae_model_free(m);
    }
    // a missing tensor is named; the wrong family named is refused
    const char * path = edited_model("dcae_w32.diffusers.safetensors", "decoder.up_blocks.4.1.conv_out.conv_point.weight",
                                     NULL);
    struct vae_model * m = path ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)) : NULL;
    CHECK(path && !m && strstr(err, "'decoder.up_blocks.4.1.conv_out.conv_point.weight' is missing"),
          "dcae without a conv_point: %s", m ? "loaded" : err);
    vae_model_free(m);
    m = vae_model_load(path_in(data_dir, "dcae_w32.orig.safetensors"), VAE_FAMILY_FLUX2, err, sizeof(err));
    CHECK(!m && strstr(err, "model-family flux2 was asked for, but the file holds a dcae decoder"), "dcae as flux2: %s",
          m ? "loaded" : err);
    vae_model_free(m);
    free(z);
    free(x);
    free(exp);
    free(expn);
}

// ---- refusals ----

// err names `name` (or, for a renamed file, the canonical name `canon`)
static void check_names(const char * name, const char * canon) {
    CHECK(strstr(err, name) || (canon && strstr(err, canon)), "error \"%s\" names neither '%s' nor '%s'", err, name,
          canon ? canon : "-");
}

// err holds the number v as a whole number
static bool err_has_number(long v) {
    for (const char * p = err; *p; p++) {
        if (*p >= '0' && *p <= '9' && (p == err || p[-1] < '0' || p[-1] > '9')) {
            char * end;
            if (strtol(p, &end, 10) == v) {
                return true;
            }
            p = end - 1;
        }
    }
    return false;
}

static void test_errors(void) {
    printf("refusals:\n");
    static const struct {
        const char * file, * names, * variant, * drop, * canon;
    } drops[] = {
        { "kl_sd", "kl_sd.names.txt", "ldm", "decoder.up.2.block.1.conv2.weight", NULL },
        { "kl_sd", "kl_sd.names.txt", "ldm", "decoder.up.3.block.2.conv1.weight", NULL },
        { "kl_sd", "kl_sd.names.txt", "ldm", "decoder.up.0.block.0.nin_shortcut.weight", NULL },
        { "kl_sd", "kl_sd.names.txt", "ldm", "decoder.up.1.upsample.conv.bias", NULL },
        { "kl_sd", "kl_sd.names.txt", "ldm", "post_quant_conv.bias", NULL },
        { "kl_sd", "kl_sd.names.txt", "ldm", "decoder.norm_out.weight", NULL },
        { "kl_sd", "kl_sd.names.txt", "diffusers", "decoder.mid_block.attentions.0.to_k.weight", "decoder.mid.attn_1.k" },
        { "kl_sd", "kl_sd.names.txt", "diffusers", "decoder.up_blocks.3.resnets.1.norm2.bias",
          "decoder.up.0.block.1.norm2.bias" },
        { "kl_sd", "kl_sd.names.txt", "diffusers_old_attn", "decoder.mid_block.attentions.0.proj_attn.bias",
          "decoder.mid.attn_1.proj_out" },
        { "kl_sd", "kl_sd.names.txt", "vae", "vae.decoder.mid.block_2.conv1.bias", "decoder.mid.block_2.conv1.bias" },
        { "kl_f2", "kl_f2.names.txt", "bfl", "bn.running_var", NULL },
    };
    for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++) {
        char src[64];
        snprintf(src, sizeof(src), "%s.safetensors", drops[i].file);
        const char *       path = renamed_model(src, drops[i].names, drops[i].variant, drops[i].drop, "drop");
        struct vae_model * m    = path ? vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)) : NULL;
        CHECK(path && m == NULL, "%s (%s) without %s loaded", drops[i].file, drops[i].variant, drops[i].drop);
        if (path && !m) {
            check_names(drops[i].drop, drops[i].canon);
            printf("  %s without %s: %s\n", drops[i].variant, drops[i].drop, err);
        }
        vae_model_free(m);
        if (path) {
            unlink(path);
        }
    }
    // latents with other channel counts than conv_in takes
    struct vae_model * m   = load(path_in(data_dir, "kl_sd.safetensors"), VAE_FAMILY_SD1);
    float *            lat = random_latent(128, 4, 4, 7, 1.0f);
    if (m) {
        struct image y = decode_one(m, lat, 16, 4, 4, VAE_SPACE_RAW, 0);
        CHECK(y.data == NULL, "16-channel latents into a 4-channel decoder were taken");
        CHECK(err_has_number(16) && err_has_number(4), "error \"%s\" does not give both 16 and 4", err);
        printf("  16 channels into kl_sd: %s\n", err);
        free(y.data);
    }
    vae_model_free(m);
    m = load(path_in(data_dir, "kl_f2.safetensors"), VAE_FAMILY_AUTO);
    if (m) {
        struct image y = decode_one(m, lat, 32, 4, 4, VAE_SPACE_NORMALIZED, 0);
        CHECK(y.data == NULL, "32-channel normalized latents into flux2 were taken");
        CHECK(err_has_number(32) && err_has_number(128), "error \"%s\" does not give both 32 and 128", err);
        printf("  32 normalized channels into kl_f2: %s\n", err);
        free(y.data);
        y = decode_one(m, lat, 128, 4, 4, VAE_SPACE_RAW, 0);
        CHECK(y.data == NULL, "128-channel raw latents into flux2 were taken");
        CHECK(err_has_number(128) && err_has_number(32), "error \"%s\" does not give both 128 and 32", err);
        printf("  128 raw channels into kl_f2: %s\n", err);
        free(y.data);
    }
    vae_model_free(m);
    free(lat);
    // a family the user names must fit the file
    static const struct {
        const char *    file;
        enum vae_family family;
    } wrong[] = { { "kl_sd.safetensors", VAE_FAMILY_SD3 }, { "kl_sd.safetensors", VAE_FAMILY_FLUX2 },
                  { "kl_f1.safetensors", VAE_FAMILY_SDXL }, { "kl_f2.safetensors", VAE_FAMILY_FLUX1 },
                  { "kl_sd.safetensors", VAE_FAMILY_TAESD } };
    for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
        m = vae_model_load(path_in(data_dir, wrong[i].file), wrong[i].family, err, sizeof(err));
        CHECK(m == NULL, "%s loaded as %s", wrong[i].file, vae_family_name(wrong[i].family));
        char want[64];
        snprintf(want, sizeof(want), "model-family %s", vae_family_name(wrong[i].family));
        CHECK_ERR_HAS(err, want);
        printf("  %s as %s: %s\n", wrong[i].file, vae_family_name(wrong[i].family), err);
        vae_model_free(m);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); // the numbers between the failed checks (stderr)
    if (!test_data_init()) {
        return 1;
    }
    test_sd_namings();
    test_f1_f2();
    test_spaces();
    test_tiles();
    test_hunyuanimage();
    test_qwen21();
    test_dcae();
    test_errors();
    vae_backend_free(cpu);
    return vae_test_summary();
}
