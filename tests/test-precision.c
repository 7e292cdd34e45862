// Which activations of an AutoencoderKL decode leave the fp16 range (|x| > 65504). SDXL's VAE is
// the known case (MODELS.md A.7: black frames in fp16); a GPU backend must keep such tensors in
// bf16 or fp32, with fp32 accumulation and GroupNorm statistics. The decode session reports the
// largest |value| of every whole-frame activation of a tiled decode; this test checks that report
// against values computed independently, on real FLUX.2 latents (../shared/reference/taef2) through
// the FLUX.2-shaped fixture decoder, and shows it naming the layers that overflow fp16 when one
// layer's weights are scaled up to the magnitudes a trained SDXL decoder reaches.
// (No SDXL weights are available here: the fixture's weights are random.)
//
// Then bf16 on the CPU: where oneDNN's effective ISA has AVX512-BF16 (or AMX) a backend asked for
// bf16 must say bf16 is in effect, compute differently from fp32, and stay within 38 dB PSNR of
// the fp32 oracle on 8-bit frames, on the real TAEF2 decoder and latents and on the fixtures of a
// causal video decoder (Wan 2.1: state frames in front of the convs) and of AutoencoderKL
// (GroupNorm, attention); elsewhere (or under DNNL_MAX_CPU_ISA=AVX2, AVX512_CORE) it must say fp32
// and decode exactly as fp32 does.

#include "vae-session.h"
#include "vae-test-data.h"
#include "vae-test.h"

#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FP16_MAX 65504.0f

static float max_abs(const float * x, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) {
        m = fabsf(x[i]) > m || isnan(x[i]) ? fabsf(x[i]) : m;
    }
    return m;
}

// decode latent [32, h, w] in tiles; fills names (copies: the session goes) and ranges, returns
// their count (0 on failure)
static int decode_ranges(const struct vae_model * m, const float * lat, int h, int w, float * out, char (*names)[64],
                         float * ranges) {
    const struct vae_session_config cfg = { .channels = 32, .height = h, .width = w, .space = VAE_SPACE_RAW,
                                            .chunk_frames = 1, .tile_size = 32 };
    struct vae_session *            s   = vae_session_new(m, cpu, &cfg, err, sizeof(err));
    CHECK(s, "session: %s", err);
    if (!s) {
        return 0;
    }
    CHECK(vae_session_tile_size(s) == 32, "tiled at 32, not %d", vae_session_tile_size(s));
    const bool ok = vae_session_push(s, lat, err, sizeof(err)) && vae_session_drain(s, err, sizeof(err)) &&
                    vae_session_pop_output(s, out, err, sizeof(err));
    CHECK(ok, "decode: %s", err);
    const char * at[VAE_KL_MAX_STEPS + 1];
    const int    n = ok ? vae_session_ranges(s, at, ranges) : 0;
    for (int k = 0; k < n; k++) {
        snprintf(names[k], sizeof(names[k]), "%s", at[k]);
    }
    vae_session_free(s);
    return n;
}

// PSNR of two decodes as 8-bit frames, clamp(y * scale + offset, 0, 1) rounded as vae_frame_pack does
static double psnr_8bit(const float * a, const float * b, size_t n, float scale, float offset) {
    double se = 0;
    for (size_t i = 0; i < n; i++) {
        const float ua = fminf(fmaxf(a[i] * scale + offset, 0.0f), 1.0f), ub = fminf(fmaxf(b[i] * scale + offset, 0.0f), 1.0f);
        const double d = (double) (int) (ua * 255.0f + 0.5f) - (double) (int) (ub * 255.0f + 0.5f);
        se += d * d;
    }
    return se == 0 ? INFINITY : 10.0 * log10(255.0 * 255.0 * (double) n / se);
}

// every frame of a latent file ([N, C, h, w] images or [1, C, T, h, w] video) decoded through a
// session on backend b, one latent frame per push, in tiles of `tile` pixels (0: whole frames): the
// raw f32 frames [F, 3, H, W] (caller frees)
static float * session_decode(vae_backend_t * b, const struct vae_model * m, const char * latent_file, int tile,
                              size_t * n_out) {
    int64_t       ls[5];
    float *       lat = read_tensor(latent_file, "latent_tensor", ls);
    const bool    video = ls[4] > 1;
    const int64_t T = video ? ls[2] : ls[0], C = ls[1], h = video ? ls[3] : ls[2], w = video ? ls[4] : ls[3];
    const size_t  frame = (size_t) 3 * m->scale * h * m->scale * w;
    const struct vae_session_config cfg = { (int) C, (int) h, (int) w, VAE_SPACE_AUTO, 1, 0, tile };
    struct vae_session *            s   = lat ? vae_session_new(m, b, &cfg, err, sizeof(err)) : NULL;
    float *                         in  = malloc((size_t) (C * h * w) * sizeof(float));
    const size_t                    cap = (size_t) (1 + m->frames_per_latent * T);
    float *                         out = malloc(cap * frame * sizeof(float));
    size_t                          n   = 0;
    bool                            ok  = s != NULL;
    for (int64_t t = 0; ok && t <= T; t++) {
        for (int64_t c = 0; t < T && c < C; c++) { // plane c of latent frame t
            memcpy(in + c * h * w, lat + (video ? c * T + t : t * C + c) * h * w, (size_t) (h * w) * sizeof(float));
        }
        ok = t < T ? vae_session_push(s, in, err, sizeof(err)) : vae_session_drain(s, err, sizeof(err));
        while (ok && vae_session_frames_ready(s) > 0 && n < cap) {
            ok = vae_session_pop_output(s, out + n++ * frame, err, sizeof(err));
        }
    }
    CHECK(ok && n > 0, "decode of %s: %s", latent_file, err);
    vae_session_free(s);
    free(in);
    free(lat);
    *n_out = n * frame;
    return out;
}

// the bf16 decode of a latent file against the fp32 one (see the top); with tile > 0, the bf16
// decode in tiles of that size too (its tiles keep their causal state in bf16)
static void check_bf16(vae_backend_t * bf, bool bf16, const char * model_file, const char * latent_file, int tile) {
    struct vae_model * m = vae_model_load(model_file, VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m, "load %s: %s", model_file, err);
    if (!m) {
        return;
    }
    size_t        n32 = 0, n16 = 0;
    float *       y32 = session_decode(cpu, m, latent_file, 0, &n32);
    float *       y16 = session_decode(bf, m, latent_file, 0, &n16);
    const double  p   = psnr_8bit(y32, y16, n32 < n16 ? n32 : n16, m->out_scale, m->out_offset);
    const double  d   = max_abs_diff(y32, y16, n32 < n16 ? n32 : n16);
    const char *  at  = strrchr(model_file, '/') ? strrchr(model_file, '/') + 1 : model_file;
    printf("%-28s %s against fp32: PSNR %.1f dB on 8-bit frames, max |diff| %.3g (%zu values)\n", at,
           bf16 ? "bf16" : "fp32 (bf16 asked)", p, d, n32);
    CHECK(n32 == n16 && n32 > 0, "%s: %zu values in fp32, %zu in bf16", at, n32, n16);
    if (bf16) {
        CHECK(p >= 38.0 && d > 0, "%s: bf16 at %.1f dB PSNR (max |diff| %g) from fp32, not >= 38 and above 0", at, p, d);
    } else {
        CHECK(d == 0, "%s: bf16 not in effect, yet the decode differs from fp32 by %g", at, d);
    }
    if (tile > 0 && n32 > 0) {
        size_t        nt = 0;
        float *       yt = session_decode(bf, m, latent_file, tile, &nt);
        const double  pt = psnr_8bit(y32, yt, n32 < nt ? n32 : nt, m->out_scale, m->out_offset);
        printf("%-28s %s in %d-pixel tiles against fp32: PSNR %.1f dB, max |diff| %.3g from the whole-frame bf16\n",
               at, bf16 ? "bf16" : "fp32 (bf16 asked)", tile, pt, max_abs_diff(y16, yt, n16 < nt ? n16 : nt));
        CHECK(nt == n32 && pt >= 38.0, "%s: bf16 in %d-pixel tiles at %.1f dB PSNR from fp32 (%zu values, %zu in fp32)",
              at, tile, pt, nt, n32);
        free(yt);
    }
    free(y32);
    free(y16);
    vae_model_free(m);
}

static void test_bf16(void) {
    const dnnl_cpu_isa_t isa  = dnnl_get_effective_cpu_isa();
    const bool           want = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
    vae_backend_t *      bf   = vae_backend_init(VAE_BACKEND_CPU, 0, VAE_PRECISION_BF16, err, sizeof(err));
    CHECK(bf, "cpu backend asked for bf16: %s", err);
    if (!bf) {
        return;
    }
    const enum vae_precision p = vae_backend_precision(bf);
    printf("%s, bf16 asked: %s in effect\n", vae_backend_name(bf), vae_precision_name(p));
    CHECK(p == (want ? VAE_PRECISION_BF16 : VAE_PRECISION_FP32), "bf16 asked at ISA %s: %s in effect", vae_backend_name(bf),
          vae_precision_name(p));
    check_bf16(bf, p == VAE_PRECISION_BF16, path_in(shared_dir, "models/taef2_decoder.safetensors"),
               path_in(shared_dir, "reference/taef2/small.latent"), 0);
    // a fixture of every family (Wan 2.1: state frames in front of the convs; AutoencoderKL:
    // GroupNorm, attention; LTX-2.3's centred convs: a stream's first graph reading one copy of its
    // first frame there, 2.0's reflecting convs in f32; MiniMax-H3's ViT: bf16 linear layers over
    // its tokens, norms, RoPE and attention in f32)
    static const struct {
        const char * model, *latent;
        int          tile; // > 0: in tiles of that many pixels too
    } fixtures[] = {
        { "taesd_z4_w16.orig.safetensors", "taesd_z4_w16.latent", 0 },
        { "wan21_b4.orig.safetensors", "wan21_b4.latent", 16 },
        { "wan22_b4.orig.safetensors", "wan22_b4.latent", 0 },
        { "qwen21_b4.orig.safetensors", "qwen21_b4.latent", 0 },
        { "taew21_nf32.safetensors", "taew21_nf32.latent", 0 },
        { "taew22_nf32.safetensors", "taew22_nf32.latent", 0 },
        { "taehv15_nf16.safetensors", "taehv15_nf16.latent", 0 },
        { "taeltx2_nf16.safetensors", "taeltx2_nf16.latent", 0 },
        { "kl_f2.safetensors", "kl_f2.latent", 16 },
        { "kl_sd.safetensors", "kl_sd.latent", 0 },
        { "hyimage_w64.orig.safetensors", "hyimage_w64.latent", 0 },
        { "dcae_w32.orig.safetensors", "dcae_w32.latent", 0 },
        { "svd_b2.sgm.safetensors", "svd_b2.latent", 0 },
        { "seedvr2_w32.safetensors", "seedvr2_w32.latent", 16 },
        { "hyvideo15_w32.orig.safetensors", "hyvideo15_w32.latent", 0 },
        { "ltx2_v20.orig.safetensors", "ltx2_v20.latent", 0 },
        { "ltx2_v23.orig.safetensors", "ltx2_v23.latent", 16 },
        { "minimax_w128.diffusers.safetensors", "minimax_w128.latent", 0 },
    };
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
        check_bf16(bf, p == VAE_PRECISION_BF16, path_in(data_dir, fixtures[i].model), path_in(data_dir, fixtures[i].latent),
                   fixtures[i].tile);
    }
    vae_backend_free(bf);
}

// precision=auto: bf16 only where the ISA computes it natively and the backend's probe measured
// oneDNN's bf16 convolutions at 1.25x f32's speed or more, the figure in the backend's name
static void test_auto(void) {
    const dnnl_cpu_isa_t isa    = dnnl_get_effective_cpu_isa();
    const bool           native = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
    vae_backend_t *      b      = vae_backend_init(VAE_BACKEND_CPU, 0, VAE_PRECISION_AUTO, err, sizeof(err));
    CHECK(b, "cpu backend, precision auto: %s", err);
    if (!b) {
        return;
    }
    const char *             name  = vae_backend_name(b);
    const char *             probe = strstr(name, "; bf16 convs ");
    const enum vae_precision p     = vae_backend_precision(b);
    double                   x     = 0.0;
    printf("%s, auto: %s in effect\n", name, vae_precision_name(p));
    CHECK(native == (probe && sscanf(probe, "; bf16 convs %lfx", &x) == 1), "%s: a bf16 speed %s", name,
          native ? "measured (the ISA has bf16)" : "not measured (no native bf16)");
    CHECK(!native || x > 0.0, "%s: the probe ran", name);
    CHECK(p == (native && x >= 1.25 ? VAE_PRECISION_BF16 : VAE_PRECISION_FP32), "%s: auto took %s", name,
          vae_precision_name(p));
    vae_backend_t * again = vae_backend_init(VAE_BACKEND_CPU, 0, VAE_PRECISION_AUTO, err, sizeof(err));
    CHECK(again && !strcmp(vae_backend_name(again), name) && vae_backend_precision(again) == p,
          "a second backend made the same choice (%s)", again ? vae_backend_name(again) : err);
    vae_backend_free(again);
    vae_backend_free(b);
}

int main(void) {
    if (!test_data_init()) {
        return 1;
    }
    struct vae_model * m = vae_model_load(path_in(data_dir, "kl_f2.safetensors"), VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m, "load: %s", err);
    test_bf16();
    test_auto();
    int64_t ls[5];
    float * full = read_tensor(path_in(shared_dir, "reference/taef2/small.latent"), "latent_tensor", ls);
    CHECK(full && ls[1] == 32, "real FLUX.2 latents [1, 32, h, w]");
    if (!m || !full) {
        return vae_test_summary();
    }
    // a 12 x 10 corner of the real latents (96 x 80 output) keeps the test quick
    const int h = ls[2] < 12 ? (int) ls[2] : 12, w = ls[3] < 10 ? (int) ls[3] : 10;
    float *   lat = malloc((size_t) 32 * h * w * sizeof(float));
    for (int c = 0; c < 32; c++) {
        for (int y = 0; y < h; y++) {
            memcpy(lat + ((size_t) c * h + y) * w, full + ((size_t) c * ls[2] + y) * ls[3], (size_t) w * sizeof(float));
        }
    }
    const size_t n_out = (size_t) 3 * 64 * h * w;
    float *      out   = malloc(n_out * sizeof(float));
    char         names[VAE_KL_MAX_STEPS + 1][64];
    float        ranges[VAE_KL_MAX_STEPS + 1];

    // the report against independent values: the head's output, and the frame itself
    const int n = decode_ranges(m, lat, h, w, out, names, ranges);
    CHECK(n > 10 && !strcmp(names[0], "decoder.mid") && !strcmp(names[n - 1], "decoder.conv_out"),
          "%d ranges, from decoder.mid to decoder.conv_out", n);
    struct vae_graph * head = vae_kl_head_build(m, h, w, err, sizeof(err));
    CHECK(head && vae_backend_graph_prepare(cpu, head, 0, err, sizeof(err)), "head: %s", err);
    const size_t n_head = (size_t) head->output->ne[1] * h * w;
    float *      y      = malloc(n_head * sizeof(float));
    CHECK(vae_backend_graph_compute(cpu, head, NULL, lat, err, sizeof(err)) &&
              vae_backend_graph_read_output(cpu, head, 0, 1, y, err, sizeof(err)), "head: %s", err);
    CHECK(n > 0 && ranges[0] == max_abs(y, n_head), "head range %g, computed %g", n ? ranges[0] : 0, max_abs(y, n_head));
    CHECK(n > 0 && ranges[n - 1] == max_abs(out, n_out), "output range %g, frame %g", n ? ranges[n - 1] : 0,
          max_abs(out, n_out));
    int over = 0;
    for (int k = 0; k < n; k++) {
        over += ranges[k] > FP16_MAX;
        CHECK(isfinite(ranges[k]), "%s: %g", names[k], ranges[k]);
    }
    CHECK(over == 0, "random weights on real latents stay inside fp16 (%d layers above)", over);
    vae_backend_graph_release(cpu, head);
    vae_graph_free(head);

    // a trained SDXL decoder reaches |x| ~ 1e5 in its up blocks: scale one conv so that this one
    // does; the layers it feeds before a GroupNorm overflow fp16, the fp32 decode stays finite
    struct vae_weight * conv = (struct vae_weight *) vae_model_weight(m, "decoder.up.1.block.1.conv2.weight");
    struct vae_weight * bias = (struct vae_weight *) vae_model_weight(m, "decoder.up.1.block.1.conv2.bias");
    // (the fixture is BF16: the model holds converted copies of these, made by the first build)
    CHECK(conv && bias && conv->copy && bias->copy, "decoder.up.1.block.1.conv2 in the fixture, converted");
    if (conv && bias && conv->copy && bias->copy) {
        const size_t nw = (size_t) (conv->shape[0] * conv->shape[1] * conv->shape[2] * conv->shape[3]);
        for (size_t i = 0; i < nw; i++) {
            conv->copy[i] *= 1e5f;
        }
        for (int64_t i = 0; i < bias->shape[0]; i++) {
            bias->copy[i] *= 1e5f;
        }
        const int n2 = decode_ranges(m, lat, h, w, out, names, ranges);
        printf("largest |activation| per layer, decoder.up.1.block.1.conv2 scaled by 1e5:\n");
        bool scaled_over = false, finite = true;
        over             = 0;
        for (int k = 0; k < n2; k++) {
            printf("  %-36s %12.4g%s\n", names[k], ranges[k], ranges[k] > FP16_MAX ? "  > fp16" : "");
            over += ranges[k] > FP16_MAX;
            scaled_over = scaled_over || (!strcmp(names[k], "decoder.up.1.block.1.conv2") && ranges[k] > FP16_MAX);
            finite      = finite && isfinite(ranges[k]);
        }
        CHECK(scaled_over && over >= 2, "the scaled conv and what it feeds exceed fp16 (%d layers)", over);
        CHECK(finite && isfinite(max_abs(out, n_out)), "the fp32 decode stays finite");
    }
    free(y);
    free(out);
    free(lat);
    free(full);
    vae_model_free(m);
    vae_backend_free(cpu);
    return vae_test_summary();
}
