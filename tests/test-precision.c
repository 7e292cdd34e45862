// Which activations of an AutoencoderKL decode leave the fp16 range (|x| > 65504). SDXL's VAE is
// the known case (MODELS.md A.7: black frames in fp16); a GPU backend must keep such tensors in
// bf16 or fp32, with fp32 accumulation and GroupNorm statistics. The decode session reports the
// largest |value| of every whole-frame activation of a tiled decode; this test checks that report
// against values computed independently, on real FLUX.2 latents (../shared/reference/taef2) through
// the FLUX.2-shaped fixture decoder, and shows it naming the layers that overflow fp16 when one
// layer's weights are scaled up to the magnitudes a trained SDXL decoder reaches.
// (No SDXL weights are available here: the fixture's weights are random.)

#include "vae-session.h"
#include "vae-test-data.h"
#include "vae-test.h"

#include <math.h>
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

int main(void) {
    if (!test_data_init()) {
        return 1;
    }
    struct vae_model * m = vae_model_load(path_in(data_dir, "kl_f2.safetensors"), VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m, "load: %s", err);
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
