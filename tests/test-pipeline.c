// The example pipeline, end to end: the real TAEF2 latents through latentparse and
// vaedecode to PNG files, read back with pngdec and measured against the upstream decoder's
// fp32 output (`decoded`, clamped, 8-bit) and the original video frames (`source`).

#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <glib/gstdio.h>

#include "vae-safetensors.h"
#include "vae-test.h"

#define W 832
#define H 480

// the upstream PSNR of the clamped fp32 decode against the source frames (shared/README.md)
static const double upstream_psnr[2] = { 33.44, 33.99 };

static gboolean run(const gchar * desc) {
    GError *     error = NULL;
    GstElement * p     = gst_parse_launch(desc, &error);
    gboolean     ok    = FALSE;
    if (!p || error) {
        CHECK(0, "%s", error->message);
        g_clear_error(&error);
        if (p) {
            gst_object_unref(p);
        }
        return FALSE;
    }
    gst_element_set_state(p, GST_STATE_PLAYING);
    GstMessage * msg = gst_bus_timed_pop_filtered(gst_element_get_bus(p), 120 * GST_SECOND,
                                                  GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        gst_message_parse_error(msg, &error, NULL);
        CHECK(0, "pipeline error: %s", error->message);
        g_clear_error(&error);
    } else {
        CHECK(msg != NULL, "pipeline did not finish in 120 s");
        ok = msg != NULL;
    }
    if (msg) {
        gst_message_unref(msg);
    }
    gst_element_set_state(p, GST_STATE_NULL);
    gst_object_unref(p);
    return ok;
}

// a PNG file as packed RGB bytes
static guint8 * read_png(const gchar * path) {
    gchar *      desc = g_strdup_printf("filesrc location=%s ! pngdec ! videoconvert ! video/x-raw,format=RGB,width=%d,height=%d ! appsink name=sink", path, W, H);
    GstElement * p    = gst_parse_launch(desc, NULL);
    GstElement * sink = gst_bin_get_by_name(GST_BIN(p), "sink");
    guint8 *     rgb  = NULL;
    gst_element_set_state(p, GST_STATE_PLAYING);
    GstSample * sample = gst_app_sink_pull_sample(GST_APP_SINK(sink));
    if (sample) {
        GstMapInfo map;
        GstBuffer * buf = gst_sample_get_buffer(sample);
        gst_buffer_map(buf, &map, GST_MAP_READ);
        rgb = g_malloc(W * H * 3);
        for (int y = 0; y < H; y++) {
            memcpy(rgb + y * W * 3, map.data + y * GST_ROUND_UP_4(W * 3), W * 3);
        }
        gst_buffer_unmap(buf, &map);
        gst_sample_unref(sample);
    }
    CHECK(rgb != NULL, "could not read %s", path);
    gst_element_set_state(p, GST_STATE_NULL);
    gst_object_unref(sink);
    gst_object_unref(p);
    g_free(desc);
    return rgb;
}

// PSNR of 8-bit frame against planar float [3, H, W] in [0, 1]; quantize: round it to 8 bits first
static double psnr(const guint8 * rgb, const float * ref, gboolean quantize) {
    double se = 0;
    for (int c = 0; c < 3; c++) {
        for (int i = 0; i < W * H; i++) {
            double r = ref[c * W * H + i];
            r        = r < 0 ? 0 : r > 1 ? 1 : r;
            if (quantize) {
                r = floor(r * 255.0 + 0.5) / 255.0;
            }
            const double d = rgb[i * 3 + c] / 255.0 - r;
            se += d * d;
        }
    }
    return 10.0 * log10(1.0 / (se / (3.0 * W * H)));
}

int main(int argc, char ** argv) {
    gst_init(&argc, &argv);
    const gchar * shared = g_getenv("VAE_SHARED_DIR") ? g_getenv("VAE_SHARED_DIR") : "../shared";
    gchar *       dir    = g_dir_make_tmp("vaedecode-XXXXXX", NULL);
    gchar *       desc   = g_strdup_printf(
        "filesrc location=%s/reference/taef2/full.latent ! latentparse ! vaedecode backend=cpu "
        "model-file=%s/models/taef2_decoder.safetensors ! videoconvert ! pngenc ! multifilesink location=%s/frame-%%02d.png",
        shared, shared, dir);
    char          err[512];
    gchar *       expected = g_build_filename(shared, "reference/taef2/full.expected.safetensors", NULL);
    struct vae_st_file * ref = vae_st_file_open(expected, err, sizeof(err));
    CHECK(ref != NULL, "%s", err);
    if (ref && run(desc)) {
        const struct vae_st_tensor * dt = vae_st_header_find(ref->hdr, "decoded");
        const struct vae_st_tensor * st = vae_st_header_find(ref->hdr, "source");
        float * decoded = g_new(float, dt->numel), *source = g_new(float, st->numel);
        vae_dtype_to_f32(dt->dtype, dt->data, decoded, dt->numel);
        vae_dtype_to_f32(st->dtype, st->data, source, st->numel);
        for (int f = 0; f < 2; f++) {
            gchar *  png = g_strdup_printf("%s/frame-%02d.png", dir, f);
            guint8 * rgb = read_png(png);
            if (rgb) {
                const double p_dec = psnr(rgb, decoded + f * 3 * W * H, TRUE);
                const double p_src = psnr(rgb, source + f * 3 * W * H, FALSE);
                printf("frame %d: PSNR %.2f dB against upstream's decode, %.3f dB against the source "
                       "(upstream: %.2f)\n", f, p_dec, p_src, upstream_psnr[f]);
                CHECK(p_dec >= 45.0, "frame %d: %.2f dB against the upstream decode", f, p_dec);
                CHECK(fabs(p_src - upstream_psnr[f]) <= 0.05, "frame %d: %.3f dB against the source, upstream %.2f",
                      f, p_src, upstream_psnr[f]);
            }
            g_unlink(png);
            g_free(png);
            g_free(rgb);
        }
        gchar * third = g_strdup_printf("%s/frame-02.png", dir);
        CHECK(!g_file_test(third, G_FILE_TEST_EXISTS), "more than two frames were written");
        g_free(third);
        g_free(decoded);
        g_free(source);
    }
    vae_st_file_close(ref);
    g_rmdir(dir);
    g_free(dir);
    g_free(desc);
    g_free(expected);
    return vae_test_summary();
}
