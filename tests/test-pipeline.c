// The example pipeline, end to end: the real TAEF2 latents through latentparse and
// vaedecode to PNG files, read back with pngdec and measured against the upstream decoder's
// fp32 output (`decoded`, clamped, 8-bit) and the original video frames (`source`). Then the
// errors known before the first frame: they must fail the state change itself.

#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <glib/gstdio.h>

#include "vae-safetensors.h"
#include "vae-test-gst.h"
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

// Errors that are known before the first frame (properties, the model, the latent header and
// caps, a file too short for its tensor) must fail the state change to PAUSED itself, with the
// error posted before set_state returns. Posted later from a streaming thread, they race with
// the application: gst-launch-1.0 (1.22) quits its main loop from a bus sync handler, and an
// error that comes before the loop runs is lost to it (g_main_loop_quit on a loop not yet
// running does nothing) while the bin fails the preroll: it waited forever, about one run in
// eight. Errors in a later frame come while the loop runs (the sink holds the first frame until
// PLAYING, which only the loop sets).
static GstBusSyncReply count_error(GstBus * bus, GstMessage * msg, gpointer data) {
    (void) bus;
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        GError * error = NULL;
        gst_message_parse_error(msg, &error, NULL);
        gchar ** first = data;
        if (!*first) {
            *first = g_strdup(error->message);
        }
        g_clear_error(&error);
    }
    return GST_BUS_PASS;
}

static void expect_state_change_error(const gchar * name, const gchar * desc, const gchar * needle) {
    GstElement * p = gst_parse_launch(desc, NULL);
    CHECK(p != NULL, "%s: could not make %s", name, desc);
    if (!p) {
        return;
    }
    gchar *  error = NULL;
    GstBus * bus   = gst_element_get_bus(p);
    gst_bus_set_sync_handler(bus, count_error, &error, NULL);
    const GstStateChangeReturn ret     = gst_element_set_state(p, GST_STATE_PAUSED);
    gchar *                    at_once = g_strdup(error);   // posted within set_state
    if (ret != GST_STATE_CHANGE_FAILURE) {
        gst_element_get_state(p, NULL, NULL, 20 * GST_SECOND);   // the error comes later, if at all
    }
    printf("%s: set_state(PAUSED) = %s, error %s: %s\n", name, gst_element_state_change_return_get_name(ret),
           at_once ? "within it" : "later", error ? error : "(none)");
    CHECK(ret == GST_STATE_CHANGE_FAILURE, "%s: set_state(PAUSED) returned %s, not FAILURE", name,
          gst_element_state_change_return_get_name(ret));
    CHECK(at_once && strstr(at_once, needle), "%s: the error within set_state, '%s', does not mention '%s'", name,
          at_once ? at_once : "(none)", needle);
    gst_element_set_state(p, GST_STATE_NULL);
    gst_bus_set_sync_handler(bus, NULL, NULL, NULL);
    gst_object_unref(bus);
    gst_object_unref(p);
    g_free(at_once);
    g_free(error);
}

static void test_preroll_errors(const gchar * shared, const gchar * dir) {
    const gchar * data  = g_getenv("VAE_TEST_DATA") ? g_getenv("VAE_TEST_DATA") : "tests/data";
    gchar *       full  = g_build_filename(shared, "reference/taef2/full.latent", NULL);
    gchar *       taef2 = g_build_filename(shared, "models/taef2_decoder.safetensors", NULL);
    gchar *       cut_header = g_build_filename(dir, "cut-header.latent", NULL);
    gchar *       cut_data   = g_build_filename(dir, "cut-data.latent", NULL);
    gchar *       bytes;
    gsize         len;
    CHECK(g_file_get_contents(full, &bytes, &len, NULL) && len > 100000, "could not read %s", full);
    CHECK(g_file_set_contents(cut_header, bytes, 20, NULL), "could not write %s", cut_header);
    CHECK(g_file_set_contents(cut_data, bytes, (gssize) len / 3, NULL), "could not write %s", cut_data); // in frame 0
    g_free(bytes);
    struct {
        const gchar * name, * needle;
        gchar *       desc;
    } cases[] = {
        { "property error", "below the smallest tile",
          g_strdup_printf("filesrc location=%s/kl_f2.latent ! latentparse ! vaedecode backend=cpu tile-size=15 "
                          "model-file=%s/kl_f2.safetensors ! fakesink", data, data) },
        { "latent space error", "has no constants to convert raw latents",
          g_strdup_printf("filesrc location=%s ! latentparse ! vaedecode backend=cpu latent-space=raw model-file=%s "
                          "! fakesink", full, taef2) },
        { "caps error", "The latents have 32 channels but the taesd decoder",
          g_strdup_printf("filesrc location=%s ! latentparse ! vaedecode backend=cpu "
                          "model-file=%s/taesd_z4_w16.orig.safetensors ! fakesink", full, data) },
        { "header error", "Truncated latent file",
          g_strdup_printf("filesrc location=%s ! latentparse ! vaedecode backend=cpu model-file=%s ! fakesink",
                          cut_header, taef2) },
        { "short file", "Truncated latent file",
          g_strdup_printf("filesrc location=%s ! latentparse ! vaedecode backend=cpu model-file=%s ! fakesink",
                          cut_data, taef2) },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        expect_state_change_error(cases[i].name, cases[i].desc, cases[i].needle);
        g_free(cases[i].desc);
    }
    g_unlink(cut_header);
    g_unlink(cut_data);
    g_free(cut_header);
    g_free(cut_data);
    g_free(full);
    g_free(taef2);
}

int main(int argc, char ** argv) {
    vae_test_fresh_registry();
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
    test_preroll_errors(shared, dir);
    g_rmdir(dir);
    g_free(dir);
    g_free(desc);
    g_free(expected);
    return vae_test_summary();
}
