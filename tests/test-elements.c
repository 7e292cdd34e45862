/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * vaedecode and latentparse under GstHarness: negotiation, frame counts, timestamps, EOS drain,
 * flush, wrong channel counts, bad model files, NaN latents, and latentparse on good and bad
 * byte streams. The decoded pixels are checked against the upstream PyTorch fixture. The
 * causal video decoders (the Wan 2.1 fixture, TAEHV for the 16x scale): 1 + 4 (T - 1) frames
 * stamped one by one, chunk sizes, flush, DISCONT restarts, progress messages, latency.
 * AutoencoderKL (the kl_* fixtures): pixels against diffusers, tiled = untiled, FLUX.2's raw
 * (32 ch, 8x) and normalized (128 ch, 16x) latents, the channel-count errors. These run on the
 * CPU backend (backend=cpu), the fp32 reference, whatever the machine has. CUDA: the error
 * without a GPU, frames in CUDA memory and in system memory equal to the CPU's, the
 * precision property, and never CUDA memory from the CPU backend; the GPU cases skip with a
 * note where the CUDA backend is not built or finds no GPU. Issue 14: timestamps from the
 * caps' rate (jitter, early latents, jumps, segment start, over RTP on 127.0.0.1 without a
 * jitterbuffer), the early-EOS warning and the latent-totals event, a tiled decode interrupted
 * by a flush and by READY within a second, every start-time property refused while running,
 * the caps errors naming the field, the template's space field, PyTorch checkpoints named.
 */

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>
#include <math.h>

#include "vae-backend.h"
#include "vae-safetensors.h"
#include "vae-test-gst.h"

static gchar *
data_path (const gchar * name)
{
  const gchar *dir = g_getenv ("VAE_TEST_DATA");
  return g_build_filename (dir ? dir : "tests/data", name, NULL);
}

static gchar *
shared_path (const gchar * name)
{
  const gchar *dir = g_getenv ("VAE_SHARED_DIR");
  return g_build_filename (dir ? dir : "../shared", name, NULL);
}

/* a tensor of a safetensors file, as f32 */
static gfloat *
read_tensor (const gchar * path, const gchar * name, gint64 shape[5])
{
  char err[512];
  struct vae_st_file *f = vae_st_file_open (path, err, sizeof (err));
  const struct vae_st_tensor *t;
  gfloat *data;
  gint i;

  fail_unless (f != NULL, "%s", err);
  t = vae_st_header_find (f->hdr, name);
  fail_unless (t != NULL);
  data = g_new (gfloat, t->numel);
  vae_dtype_to_f32 (t->dtype, t->data, data, t->numel);
  for (i = 0; i < 5; i++)
    shape[i] = i < t->n_dims ? t->shape[i] : 1;
  vae_st_file_close (f);
  return data;
}

/* the plugin's elements load, or the test fails saying why (gst_harness_new_parse aborts the
 * process on an element it cannot make) */
static void
require_elements (void)
{
  const gchar *names[] = { "vaedecode", "latentparse" };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    GstPluginFeature *f = GST_PLUGIN_FEATURE (gst_element_factory_find
        (names[i]));
    GstPluginFeature *loaded = f ? gst_plugin_feature_load (f) : NULL;

    fail_unless (loaded != NULL, "The %s element could not be made: is the "
        "plugin built, and does GST_PLUGIN_PATH_1_0 (%s) name its folder?",
        names[i], GST_STR_NULL (g_getenv ("GST_PLUGIN_PATH_1_0")));
    gst_object_unref (loaded);
    gst_object_unref (f);
  }
}

static GstElement *
make_decoder (void)
{
  require_elements ();
  return gst_element_factory_make ("vaedecode", NULL);
}

static GstHarness *
new_harness (const gchar * desc)
{
  require_elements ();
  return gst_harness_new_parse (desc);
}

#define FIXTURE "taesd_z4_w16"
#define LATENT_CAPS "video/x-latent, type=float32, channels=4, width=7, " \
  "height=5, framerate=16/1"

/* a harness on vaedecode with the model at this path, its bus kept for errors and messages;
 * on the CPU unless extra names another backend */
static GstHarness *
path_harness (const gchar * model, const gchar * extra, GstBus ** bus)
{
  gchar *desc = g_strdup_printf ("vaedecode backend=cpu precision=fp32 model-file=%s %s",
      model, extra ? extra : "");
  GstHarness *h = new_harness (desc);

  *bus = gst_bus_new ();
  gst_element_set_bus (h->element, *bus);
  g_free (desc);
  return h;
}

/* the same with a model of tests/data */
static GstHarness *
model_harness (const gchar * model_name, const gchar * extra, GstBus ** bus)
{
  gchar *model = data_path (model_name);
  GstHarness *h = path_harness (model, extra, bus);

  g_free (model);
  return h;
}

/* tear down a harness whose element has our bus: the messages still queued there hold the
 * element, so they go first */
static void
harness_teardown (GstHarness * h, GstBus * bus)
{
  gst_bus_set_flushing (bus, TRUE);
  gst_harness_teardown (h);
  gst_object_unref (bus);
}

/* the same with the z=4 fixture model */
static GstHarness *
decoder_harness (const gchar * extra, GstBus ** bus)
{
  return model_harness (FIXTURE ".orig.safetensors", extra, bus);
}

/* latent frame i of the fixture as a buffer, stamped at i/16 s */
static GstBuffer *
latent_buffer (gint i)
{
  gchar *path = data_path (FIXTURE ".latent");
  gint64 shape[5];
  gfloat *lat = read_tensor (path, "latent_tensor", shape);
  gsize n = shape[1] * shape[2] * shape[3];
  GstBuffer *buf = gst_buffer_new_memdup (lat + (i % shape[0]) * n,
      n * sizeof (gfloat));

  GST_BUFFER_PTS (buf) = gst_util_uint64_scale (i, GST_SECOND, 16);
  GST_BUFFER_DURATION (buf) = GST_SECOND / 16;
  g_free (lat);
  g_free (path);
  return buf;
}

/* the error on the bus must mention needle */
static void
expect_error (GstBus * bus, const gchar * needle)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  GError *error = NULL;
  gchar *debug = NULL;

  fail_unless (msg != NULL, "no error posted (wanted '%s')", needle);
  gst_message_parse_error (msg, &error, &debug);
  GST_INFO ("error: %s", error->message);
  fail_unless (strstr (error->message, needle) != NULL,
      "error '%s' does not mention '%s'", error->message, needle);
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (msg);
}

/* no (further) error on the bus: one error per cause */
static void
expect_no_error (GstBus * bus)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  GError *error = NULL;

  if (msg == NULL)
    return;
  gst_message_parse_error (msg, &error, NULL);
  fail ("an error more: %s", error->message);
}

/* the next warning on the bus must mention needle, with no error before it */
static void
expect_warning (GstBus * bus, const gchar * needle)
{
  GstMessage *msg = gst_bus_pop_filtered (bus,
      GST_MESSAGE_WARNING | GST_MESSAGE_ERROR);
  GError *error = NULL;

  fail_unless (msg != NULL, "no warning posted (wanted '%s')", needle);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gst_message_parse_error (msg, &error, NULL);
    fail ("an error where a warning was wanted ('%s'): %s", needle,
        error->message);
  }
  gst_message_parse_warning (msg, &error, NULL);
  fail_unless (strstr (error->message, needle) != NULL,
      "warning '%s' does not mention '%s'", error->message, needle);
  g_clear_error (&error);
  gst_message_unref (msg);
}

GST_START_TEST (test_negotiation_and_pixels)
{
  GstBus *bus;
  GstHarness *h = decoder_harness (NULL, &bus);
  GstCaps *caps;
  GstStructure *s;
  GstBuffer *out;
  GstMapInfo map;
  gint64 shape[5];
  gchar *path = data_path (FIXTURE ".expected.safetensors");
  gfloat *expected = read_tensor (path, "decoded", shape);
  gint i, c, worst = 0, w, hh, fps_n, fps_d;

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (1)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  caps = gst_pad_get_current_caps (h->sinkpad);
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_has_name (s, "video/x-raw"));
  fail_unless_equals_string (gst_structure_get_string (s, "format"), "RGB");
  fail_unless (gst_structure_get_int (s, "width", &w) && w == 56);
  fail_unless (gst_structure_get_int (s, "height", &hh) && hh == 40);
  fail_unless (gst_structure_get_fraction (s, "framerate", &fps_n, &fps_d));
  fail_unless (fps_n == 16 && fps_d == 1);
  gst_caps_unref (caps);

  /* frame 1 of the fixture, rounded to nearest, against upstream PyTorch */
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), GST_SECOND / 16);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), GST_SECOND / 16);
  gst_buffer_map (out, &map, GST_MAP_READ);
  fail_unless_equals_int (map.size, 56 * 40 * 3);
  for (i = 0; i < 56 * 40; i++) {
    for (c = 0; c < 3; c++) {
      gfloat v = expected[(3 + c) * 56 * 40 + i];
      gint want = (gint) (CLAMP (v, 0.0f, 1.0f) * 255.0f + 0.5f);
      worst = MAX (worst, ABS (map.data[i * 3 + c] - want));
    }
  }
  gst_buffer_unmap (out, &map);
  fail_unless (worst <= 1, "decoded pixels differ by %d", worst);
  gst_buffer_unref (out);

  g_free (expected);
  g_free (path);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* every output format negotiates, at 8x the latent size, with the right frame size */
GST_START_TEST (test_output_formats)
{
  const gchar *formats[] = { "RGB", "RGBA", "RGBx", "BGRx", "BGRA", "I420",
    "NV12"
  };
  guint f;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    GstBus *bus;
    GstHarness *h = decoder_harness (NULL, &bus);
    gchar *sink_caps = g_strdup_printf ("video/x-raw, format=%s", formats[f]);
    GstVideoInfo info;
    GstCaps *caps;
    GstBuffer *out;

    gst_harness_set_sink_caps_str (h, sink_caps);
    gst_harness_set_src_caps_str (h, LATENT_CAPS);
    fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    caps = gst_pad_get_current_caps (h->sinkpad);
    fail_unless (gst_video_info_from_caps (&info, caps));
    fail_unless_equals_string (GST_VIDEO_INFO_NAME (&info), formats[f]);
    fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), 56);
    fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&info), 40);
    fail_unless (gst_buffer_get_size (out) >= GST_VIDEO_INFO_SIZE (&info));
    gst_caps_unref (caps);
    gst_buffer_unref (out);
    g_free (sink_caps);
    harness_teardown (h, bus);
  }
}

GST_END_TEST;

/* chunk-frames 2: frames come out in pairs, the odd one at EOS, then EOS itself */
GST_START_TEST (test_chunks_timestamps_eos)
{
  GstBus *bus;
  GstHarness *h = decoder_harness ("chunk-frames=2", &bus);
  GstEvent *ev;
  gint i;

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (1)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 2);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (2)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 2);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 3);

  for (i = 0; i < 3; i++) {
    GstBuffer *out = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out),
        gst_util_uint64_scale (i, GST_SECOND, 16));
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), GST_SECOND / 16);
    gst_buffer_unref (out);
  }
  /* EOS goes downstream after the drained frame */
  while ((ev = gst_harness_try_pull_event (h)) != NULL) {
    gboolean eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
    if (eos)
      break;
  }
  fail_unless (ev != NULL, "no EOS downstream");
  harness_teardown (h, bus);
}

GST_END_TEST;

/* a flush drops the queued latent; the next frame carries DISCONT */
GST_START_TEST (test_flush)
{
  GstBus *bus;
  GstHarness *h = decoder_harness ("chunk-frames=2", &bus);
  GstBuffer *out;

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
      GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  fail_unless (gst_harness_push_event (h, gst_event_new_segment
          (&(GstSegment) {
            .format = GST_FORMAT_TIME,.rate = 1.0,.applied_rate =
            1.0,.stop = GST_CLOCK_TIME_NONE,.duration = GST_CLOCK_TIME_NONE}
          )));
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (1)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (2)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 2);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), GST_SECOND / 16);
  fail_unless (GST_BUFFER_FLAG_IS_SET (out, GST_BUFFER_FLAG_DISCONT));
  gst_buffer_unref (out);
  harness_teardown (h, bus);
}

GST_END_TEST;

GST_START_TEST (test_wrong_channel_count)
{
  GstBus *bus;
  GstHarness *h = decoder_harness (NULL, &bus);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, 16 * 5 * 7 * 4, NULL);

  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=16, width=7, height=5, framerate=16/1");
  fail_unless_equals_int (gst_harness_push (h, buf),
      GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "The latents have 16 channels but the taesd decoder");
  expect_no_error (bus);
  harness_teardown (h, bus);
}

GST_END_TEST;


GST_START_TEST (test_nan_latent)
{
  GstBus *bus;
  GstHarness *h = decoder_harness (NULL, &bus);
  GstBuffer *buf = latent_buffer (0);
  GstMapInfo map;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  ((gfloat *) map.data)[2 * 35 + 7 + 3] = INFINITY;
  gst_buffer_unmap (buf, &map);
  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_ERROR);
  expect_error (bus, "Could not decode latent frame 1: the latent frame "
      "holds 1 non-finite values (NaN or Inf); the first is inf at channel 2, "
      "row 1, column 3");
  /* the frame decoded before the bad one was delivered */
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  harness_teardown (h, bus);
}

GST_END_TEST;

GST_START_TEST (test_wrong_buffer_size)
{
  GstBus *bus;
  GstHarness *h = decoder_harness (NULL, &bus);

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate (NULL,
              100, NULL)), GST_FLOW_ERROR);
  expect_error (bus, "has 100 bytes but the caps (4 x 5 x 7 float32) need 560");
  harness_teardown (h, bus);
}

GST_END_TEST;

/* vaedecode with props ("name=value" pairs separated by spaces) on the way to PAUSED: the
 * state change fails (or not) and the first message of this type mentions needle */
static void
expect_start_message (const gchar * props, gboolean fails,
    GstMessageType type, const gchar * needle)
{
  GstElement *e = make_decoder ();
  GstBus *bus = gst_bus_new ();
  GstStateChangeReturn ret;

  gst_element_set_bus (e, bus);
  gst_util_set_object_arg (G_OBJECT (e), "model-file", "");
  if (props) {
    gchar **each = g_strsplit (props, " ", -1);
    gchar **p;

    for (p = each; *p; p++) {
      gchar **kv = g_strsplit (*p, "=", 2);
      gst_util_set_object_arg (G_OBJECT (e), kv[0], kv[1]);
      g_strfreev (kv);
    }
    g_strfreev (each);
  }
  ret = gst_element_set_state (e, GST_STATE_PAUSED);
  fail_unless_equals_int (ret == GST_STATE_CHANGE_FAILURE, fails);
  if (type == GST_MESSAGE_ERROR)
    expect_error (bus, needle);
  else
    expect_warning (bus, needle);
  gst_bus_set_flushing (bus, TRUE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (bus);
}

/* the element must fail on the way to PAUSED, with the cause in the message */
static void
expect_start_error (const gchar * props, const gchar * needle)
{
  expect_start_message (props, TRUE, GST_MESSAGE_ERROR, needle);
}

GST_START_TEST (test_bad_model_files)
{
  gchar *tmp = g_build_filename (g_get_tmp_dir (), "vae-truncated.safetensors",
      NULL);
  gchar *good = data_path (FIXTURE ".orig.safetensors");
  gchar *encoder = shared_path ("models/taef2_encoder.safetensors");
  gchar *latent = shared_path ("reference/taef2/small.latent");
  gchar *contents, *prop;
  gsize len;

  expect_start_error (NULL, "No model file");
  expect_start_error ("model-file=/nonexistent/vae.safetensors",
      "No such file or directory");

  fail_unless (g_file_get_contents (good, &contents, &len, NULL));
  fail_unless (g_file_set_contents (tmp, contents, len / 2, NULL));
  prop = g_strdup_printf ("model-file=%s", tmp);
  expect_start_error (prop, "truncated");
  g_free (prop);
  fail_unless (g_file_set_contents (tmp, "{\"not\": \"safetensors\"}", -1,
          NULL));
  prop = g_strdup_printf ("model-file=%s", tmp);
  expect_start_error (prop, "header length");
  g_free (prop);
  prop = g_strdup_printf ("model-file=%s", encoder);
  expect_start_error (prop, "encoder");
  g_free (prop);
  prop = g_strdup_printf ("model-file=%s", latent);
  expect_start_error (prop, "matches no decoder family");
  g_free (prop);

  g_unlink (tmp);
  g_free (contents);
  g_free (tmp);
  g_free (good);
  g_free (encoder);
  g_free (latent);
}

GST_END_TEST;

/* a backend this build lacks is listed, described as not built and refused with a clear
 * error (hip always, cuda when it is not built) */
GST_START_TEST (test_backend_not_built)
{
  const struct
  {
    const gchar *nick;
    enum vae_backend_type type;
  } backends[] = { {"cuda", VAE_BACKEND_CUDA}, {"hip", VAE_BACKEND_HIP} };
  gchar *model = data_path (FIXTURE ".orig.safetensors");
  guint i;

  for (i = 0; i < G_N_ELEMENTS (backends); i++) {
    GstElement *e = make_decoder ();
    GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e),
        "backend");
    GEnumValue *v = g_enum_get_value_by_nick (G_PARAM_SPEC_ENUM
        (pspec)->enum_class, backends[i].nick);
    GstBus *bus = gst_bus_new ();
    gchar *needle;

    fail_unless (v != NULL);
    fail_unless_equals_int (strstr (v->value_name, "not built") == NULL,
        vae_backend_is_built (backends[i].type));
    if (vae_backend_is_built (backends[i].type)) {
      gst_object_unref (e);
      gst_object_unref (bus);
      continue;
    }
    gst_element_set_bus (e, bus);
    g_object_set (e, "model-file", model, NULL);
    gst_util_set_object_arg (G_OBJECT (e), "backend", backends[i].nick);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    needle = g_strdup_printf ("the %s backend is not built into this plugin",
        backends[i].nick);
    expect_error (bus, needle);
    g_free (needle);
    gst_bus_set_flushing (bus, TRUE);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_object_unref (e);
    gst_object_unref (bus);
  }
  g_free (model);
}

GST_END_TEST;

GST_START_TEST (test_latent_space_refused)
{
  gchar *props = g_strdup_printf ("model-file=%s/" FIXTURE ".orig.safetensors "
      "latent-space=raw", g_getenv ("VAE_TEST_DATA"));

  expect_start_error (props, "set model-family to convert raw latents");
  g_free (props);
}

GST_END_TEST;

/* ---- causal video decoders ---------------------------------------------------------------- */

#define WAN_MODEL "wan21_b4.orig.safetensors"
#define WAN_CAPS "video/x-latent, type=float32, channels=16, width=7, " \
  "height=5, framerate=16/1"
#define WAN_FRAMES 13           /* 1 + 4 (T - 1) for the fixture's 4 latent frames */

/* frame n of a 16/1 video */
static GstClockTime
frame_time (guint64 n)
{
  return gst_util_uint64_scale (n, GST_SECOND, 16);
}

/* latent frame t of a [1, C, T, H, W] fixture as a [C, H, W] buffer; with stamp, the
 * timestamps latentparse gives it (frame 0, or frames 4t-3 .. 4t), else none */
static GstBuffer *
video_latent_buffer (const gchar * name, gint t, gboolean stamp)
{
  gchar *path = data_path (name);
  gint64 shape[5];
  gfloat *lat = read_tensor (path, "latent_tensor", shape);
  const gsize plane = shape[3] * shape[4];
  GstBuffer *buf = gst_buffer_new_allocate (NULL, shape[1] * plane *
      sizeof (gfloat), NULL);
  GstMapInfo map;
  gint c;

  fail_unless (t < shape[2]);
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (c = 0; c < shape[1]; c++)
    memcpy (map.data + c * plane * sizeof (gfloat),
        lat + (c * shape[2] + t) * plane, plane * sizeof (gfloat));
  gst_buffer_unmap (buf, &map);
  if (stamp) {
    GST_BUFFER_PTS (buf) = frame_time (t == 0 ? 0 : 4 * t - 3);
    GST_BUFFER_DURATION (buf) = frame_time (t == 0 ? 1 : 4 * t + 1) -
        GST_BUFFER_PTS (buf);
  }
  g_free (lat);
  g_free (path);
  return buf;
}

/* count the vaedecode-progress messages on the bus; the last one's fields go to
 * latents and frames (left alone when there is none) */
static guint
progress_messages (GstBus * bus, guint64 * latents, guint64 * frames)
{
  GstMessage *msg;
  guint n = 0;

  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
    const GstStructure *s = gst_message_get_structure (msg);
    if (gst_structure_has_name (s, "vaedecode-progress")) {
      fail_unless (gst_structure_get_uint64 (s, "latent-frames", latents));
      fail_unless (gst_structure_get_uint64 (s, "frames", frames));
      fail_unless (gst_structure_has_field_typed (s, "running-time",
              G_TYPE_UINT64));
      n++;
    }
    gst_message_unref (msg);
  }
  return n;
}

/* the Wan fixture's 4 latent frames through vaedecode with these properties, then EOS;
 * returns the 13 frames, each checked to be at i/16 s and 1/16 s long, and the progress
 * messages as progress_messages () gives them */
static GPtrArray *
decode_wan (const gchar * props, gboolean stamp, guint * n_progress,
    guint64 * latents, guint64 * frames_done)
{
  GstBus *bus;
  GstHarness *h = model_harness (WAN_MODEL, props, &bus);
  GPtrArray *frames = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  gint t, i;

  gst_harness_set_src_caps_str (h, WAN_CAPS);
  for (t = 0; t < 4; t++)
    fail_unless_equals_int (gst_harness_push (h,
            video_latent_buffer ("wan21_b4.latent", t, stamp)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), WAN_FRAMES);
  for (i = 0; i < WAN_FRAMES; i++) {
    GstBuffer *out = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), frame_time (i));
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (out),
        frame_time (i + 1) - frame_time (i));
    g_ptr_array_add (frames, out);
  }
  *n_progress = progress_messages (bus, latents, frames_done);
  harness_teardown (h, bus);
  return frames;
}

static void
assert_same_frames (GPtrArray * a, GPtrArray * b, guint b_from)
{
  guint i;

  for (i = 0; i < a->len; i++) {
    GstBuffer *x = g_ptr_array_index (a, i), *y =
        g_ptr_array_index (b, b_from + i);
    GstMapInfo map;

    gst_buffer_map (x, &map, GST_MAP_READ);
    fail_unless_equals_int (gst_buffer_get_size (y), map.size);
    fail_unless (gst_buffer_memcmp (y, 0, map.data, map.size) == 0,
        "frame %u differs", i);
    gst_buffer_unmap (x, &map);
  }
}

/* HunyuanVideo 1.5's 4 latent frames (3x5) one per step: 13 frames at i/16 s, and the
 * progress messages' memory grows with its attention's key/value cache (room for 1, 2, 4
 * latent frames), where Wan's stays the same */
GST_START_TEST (test_hyvideo15_memory)
{
  const gchar *models[2] = { "hyvideo15_w32.orig.safetensors", WAN_MODEL };
  const gchar *caps[2] = { "video/x-latent, type=float32, channels=32, width=5, "
        "height=3, framerate=16/1", WAN_CAPS
  };
  const gchar *latents[2] = { "hyvideo15_w32.latent", "wan21_b4.latent" };
  gint m;

  for (m = 0; m < 2; m++) {
    GstBus *bus;
    GstHarness *h = model_harness (models[m], "chunk-frames=1", &bus);
    guint64 memory[8];
    guint n = 0, i;
    gint t;
    GstMessage *msg;

    gst_harness_set_src_caps_str (h, caps[m]);
    for (t = 0; t < 4; t++)
      fail_unless_equals_int (gst_harness_push (h,
              video_latent_buffer (latents[m], t, TRUE)), GST_FLOW_OK);
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    fail_unless_equals_int (gst_harness_buffers_received (h), 13);
    while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
      const GstStructure *s = gst_message_get_structure (msg);
      if (gst_structure_has_name (s, "vaedecode-progress") && n < 8)
        fail_unless (gst_structure_get_uint64 (s, "memory", &memory[n++]));
      gst_message_unref (msg);
    }
    fail_unless_equals_int (n, 4);
    for (i = 1; i < n; i++) {
      GST_INFO ("%s: memory %" G_GUINT64_FORMAT " after latent frame %u",
          models[m], memory[i], i);
      if (m == 0)
        fail_unless (memory[i] > memory[i - 1] || (i == 3
                && memory[i] == memory[i - 1]), "memory %" G_GUINT64_FORMAT
            " after %" G_GUINT64_FORMAT, memory[i], memory[i - 1]);
      else
        fail_unless_equals_uint64 (memory[i], memory[0]);
    }
    harness_teardown (h, bus);
  }
}

GST_END_TEST;

/* chunk-frames 1, 2, 3: 13 frames at i/16 s with the same pixels, matching upstream; the
 * progress messages come once per decode step (the drain's included) and end at 4 and 13 */
GST_START_TEST (test_wan_chunks)
{
  const guint chunks[] = { 1, 2, 3 };
  const guint steps[] = { 4, 3, 2 };    /* latent 0 alone, then ceil (3 / chunk) */
  GPtrArray *ref = NULL;
  gchar *path = data_path ("wan21_b4.expected.safetensors");
  gint64 shape[5];
  gfloat *expected = read_tensor (path, "decoded", shape);
  guint c;

  fail_unless_equals_int (shape[2], WAN_FRAMES);
  for (c = 0; c < G_N_ELEMENTS (chunks); c++) {
    gchar *props = g_strdup_printf ("chunk-frames=%u", chunks[c]);
    guint64 latents = 0, frames = 0;
    guint n;
    /* chunk 2 gets latents without timestamps: the frames are counted instead */
    GPtrArray *out = decode_wan (props, chunks[c] != 2, &n, &latents, &frames);

    fail_unless_equals_int (n, steps[c]);
    fail_unless_equals_uint64 (latents, 4);
    fail_unless_equals_uint64 (frames, WAN_FRAMES);
    if (ref == NULL)
      ref = g_ptr_array_ref (out);
    else
      assert_same_frames (ref, out, 0);
    g_ptr_array_unref (out);
    g_free (props);
  }

  /* RGB against diffusers' decode, [-1, 1] -> [0, 255] rounded to nearest */
  {
    gint f, i, k, worst = 0;
    const gint hw = 40 * 56;

    for (f = 0; f < WAN_FRAMES; f++) {
      GstMapInfo map;
      gst_buffer_map (g_ptr_array_index (ref, f), &map, GST_MAP_READ);
      fail_unless_equals_int (map.size, hw * 3);
      for (i = 0; i < hw; i++) {
        for (k = 0; k < 3; k++) {
          gfloat v = expected[(k * WAN_FRAMES + f) * hw + i] * 0.5f + 0.5f;
          gint want = (gint) (CLAMP (v, 0.0f, 1.0f) * 255.0f + 0.5f);
          worst = MAX (worst, ABS (map.data[i * 3 + k] - want));
        }
      }
      gst_buffer_unmap (g_ptr_array_index (ref, f), &map);
    }
    fail_unless (worst <= 1, "decoded pixels differ by %d", worst);
  }
  g_ptr_array_unref (ref);
  g_free (expected);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_wan_no_messages)
{
  guint64 latents = 0, frames = 0;
  guint n;
  GPtrArray *out = decode_wan ("post-messages=false", TRUE, &n, &latents,
      &frames);

  fail_unless_equals_int (n, 0);
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* a flush after 2 latent frames (one queued) forgets the stream: the whole stream again
 * gives the frames of a fresh decode, the first one DISCONT */
GST_START_TEST (test_wan_flush)
{
  GstBus *bus;
  GstHarness *h = model_harness (WAN_MODEL, "chunk-frames=2", &bus);
  guint64 latents, frames;
  guint n;
  GPtrArray *ref = decode_wan ("chunk-frames=2", TRUE, &n, &latents, &frames);
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstSegment segment;
  gint t, i;

  gst_harness_set_src_caps_str (h, WAN_CAPS);
  for (t = 0; t < 2; t++)
    fail_unless_equals_int (gst_harness_push (h,
            video_latent_buffer ("wan21_b4.latent", t, TRUE)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 1);
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  gst_segment_init (&segment, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  for (t = 0; t < 4; t++)
    fail_unless_equals_int (gst_harness_push (h,
            video_latent_buffer ("wan21_b4.latent", t, TRUE)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), WAN_FRAMES);
  for (i = 0; i < WAN_FRAMES; i++) {
    GstBuffer *buf = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), frame_time (i));
    fail_unless (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DISCONT) ==
        (i == 0));
    g_ptr_array_add (out, buf);
  }
  assert_same_frames (ref, out, 0);
  g_ptr_array_unref (ref);
  g_ptr_array_unref (out);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* DISCONT on latent 2: latent 1 (queued in a chunk of 2) is drained first, then latent 2
 * starts a new stream: 1 + 4 and 1 + 4 frames */
GST_START_TEST (test_wan_discont)
{
  GstBus *bus;
  GstHarness *h = model_harness (WAN_MODEL, "chunk-frames=2", &bus);
  const guint64 pts[10] = { 0, 1, 2, 3, 4, 5, 9, 10, 11, 12 };
  guint64 latents = 0, frames = 0;
  GstBuffer *buf;
  gint t, i;

  gst_harness_set_src_caps_str (h, WAN_CAPS);
  for (t = 0; t < 4; t++) {
    buf = video_latent_buffer ("wan21_b4.latent", t, TRUE);
    if (t == 2)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
    if (t == 2)
      fail_unless_equals_int (gst_harness_buffers_received (h), 1 + 4 + 1);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 10);
  for (i = 0; i < 10; i++) {
    buf = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), frame_time (pts[i]));
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (buf), GST_SECOND / 16);
    if (i == 5)
      fail_unless (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DISCONT));
    gst_buffer_unref (buf);
  }
  /* the messages count the new stream */
  fail_unless (progress_messages (bus, &latents, &frames) > 0);
  fail_unless_equals_uint64 (latents, 2);
  fail_unless_equals_uint64 (frames, 5);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* POSITION on the source pad is that of the frames pushed (what progressreport and
 * gst-launch-1.0 show), not the input's, which runs a whole chunk ahead; in TIME and in frames */
GST_START_TEST (test_position)
{
  GstBus *bus;
  GstHarness *h = model_harness (WAN_MODEL, "chunk-frames=4", &bus);
  GstPad *src = gst_element_get_static_pad (h->element, "src");
  gint64 pos = -1;
  gint t;

  gst_harness_set_src_caps_str (h, WAN_CAPS);
  fail_unless (gst_pad_query_position (src, GST_FORMAT_TIME, &pos));
  fail_unless_equals_int64 (pos, 0);
  for (t = 0; t < 3; t++)
    fail_unless_equals_int (gst_harness_push (h,
            video_latent_buffer ("wan21_b4.latent", t, TRUE)), GST_FLOW_OK);
  /* latent 0 is decoded alone (1 frame), latents 1 and 2 wait for their chunk */
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  fail_unless (gst_pad_query_position (src, GST_FORMAT_TIME, &pos));
  fail_unless_equals_int64 (pos, frame_time (1));
  fail_unless (gst_pad_query_position (src, GST_FORMAT_DEFAULT, &pos));
  fail_unless_equals_int64 (pos, 1);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 9);
  fail_unless (gst_pad_query_position (src, GST_FORMAT_TIME, &pos));
  fail_unless_equals_int64 (pos, frame_time (9));
  fail_unless (gst_pad_query_position (src, GST_FORMAT_DEFAULT, &pos));
  fail_unless_equals_int64 (pos, 9);
  gst_object_unref (src);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* image latents (video=false: a [B, C, H, W] file, Qwen-Image's batches) into a causal video
 * decoder: each is a one-frame clip, decoded as it comes, equal to that latent decoded alone,
 * never frames of one video (1 + 4 frames); video latents into an image decoder are refused,
 * naming the video decoders that take them */
GST_START_TEST (test_latents_of_the_wrong_kind)
{
  GstBus *bus;
  GstHarness *h = model_harness (WAN_MODEL, NULL, &bus), *alone;
  GstBuffer *out[2], *ref;
  gint t;

  gst_harness_set_src_caps_str (h, WAN_CAPS ", video=(boolean)false");
  for (t = 0; t < 2; t++) {
    fail_unless_equals_int (gst_harness_push (h,
            video_latent_buffer ("wan21_b4.latent", t, FALSE)), GST_FLOW_OK);
    /* decoded at once, not held for the next latent */
    fail_unless_equals_int (gst_harness_buffers_received (h), t + 1);
    out[t] = gst_harness_pull (h);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  expect_no_error (bus);
  harness_teardown (h, bus);

  alone = model_harness (WAN_MODEL, NULL, &bus);
  gst_harness_set_src_caps_str (alone, WAN_CAPS);
  fail_unless_equals_int (gst_harness_push (alone,
          video_latent_buffer ("wan21_b4.latent", 1, FALSE)), GST_FLOW_OK);
  ref = gst_harness_pull (alone);
  fail_unless_equals_int (gst_buffer_get_size (ref),
      gst_buffer_get_size (out[1]));
  {
    GstMapInfo map;

    gst_buffer_map (ref, &map, GST_MAP_READ);
    fail_unless (gst_buffer_memcmp (out[1], 0, map.data, map.size) == 0,
        "image 1 differs from its latent decoded alone");
    gst_buffer_unmap (ref, &map);
  }
  gst_buffer_unref (ref);
  for (t = 0; t < 2; t++)
    gst_buffer_unref (out[t]);
  harness_teardown (alone, bus);

  h = decoder_harness (NULL, &bus);
  gst_harness_set_src_caps_str (h, LATENT_CAPS ", video=(boolean)true");
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
      GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "decodes images. Decode them with a video decoder that "
      "takes them: svd.");
  expect_no_error (bus);
  harness_teardown (h, bus);
}

GST_END_TEST;

#define SVD_MODEL "svd_b2.sgm.safetensors"
#define SVD_CAPS "video/x-latent, type=float32, channels=4, width=5, " \
  "height=6, framerate=16/1"

/* SVD with chunk-frames 0: no frame before the stream ends, then the whole clip decoded as
 * one call (diffusers' decode (z, num_frames=5)), 8-bit RGB within 1 of it; a DISCONT latent
 * ends a clip there. The LATENCY query leaves the clip out (it has no bound) */
GST_START_TEST (test_svd_whole_clip)
{
  gchar *path = data_path ("svd_b2.expected.safetensors");
  gint64 shape[5];
  gfloat *expected = read_tensor (path, "whole5", shape);
  const gint hw = 12 * 10;
  GstBus *bus;
  GstHarness *h = model_harness (SVD_MODEL, "chunk-frames=0", &bus);
  gint t, f, i, k, worst = 0;

  gst_harness_set_upstream_latency (h, 10 * GST_MSECOND);
  gst_harness_set_src_caps_str (h, SVD_CAPS);
  fail_unless_equals_uint64 (gst_harness_query_latency (h), 10 * GST_MSECOND);
  for (t = 0; t < 5; t++) {
    fail_unless_equals_int (gst_harness_push (h,
            video_latent_buffer ("svd_b2.latent", t, FALSE)), GST_FLOW_OK);
    fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 5);
  for (f = 0; f < 5; f++) {
    GstBuffer *out = gst_harness_pull (h);
    GstMapInfo map;

    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), frame_time (f));
    gst_buffer_map (out, &map, GST_MAP_READ);
    fail_unless_equals_int (map.size, 12 * 32);  /* RGB rows of 30 bytes padded to 32 */
    for (i = 0; i < hw; i++) {
      for (k = 0; k < 3; k++) {
        gfloat v = expected[(k * 5 + f) * hw + i] * 0.5f + 0.5f;
        gint want = (gint) (CLAMP (v, 0.0f, 1.0f) * 255.0f + 0.5f);
        worst = MAX (worst, ABS (map.data[i / 10 * 32 + i % 10 * 3 + k] - want));
      }
    }
    gst_buffer_unmap (out, &map);
    gst_buffer_unref (out);
  }
  fail_unless (worst <= 1, "decoded pixels differ by %d", worst);
  harness_teardown (h, bus);

  /* a DISCONT at latent 2: frames 0 and 1 come as a clip of their own */
  h = model_harness (SVD_MODEL, "chunk-frames=0", &bus);
  gst_harness_set_src_caps_str (h, SVD_CAPS);
  for (t = 0; t < 5; t++) {
    GstBuffer *buf = video_latent_buffer ("svd_b2.latent", t, FALSE);
    if (t == 2)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
    fail_unless_equals_int (gst_harness_buffers_received (h), t < 2 ? 0 : 2);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 5);
  harness_teardown (h, bus);

  /* past max-memory the clip is refused at its end, naming the limit and chunk-frames */
  h = model_harness (SVD_MODEL, "chunk-frames=0 max-memory=1000000", &bus);
  gst_harness_set_src_caps_str (h, SVD_CAPS);
  for (t = 0; t < 5; t++)
    fail_unless_equals_int (gst_harness_push (h,
            video_latent_buffer ("svd_b2.latent", t, FALSE)), GST_FLOW_OK);
  gst_harness_push_event (h, gst_event_new_eos ());
  expect_error (bus, "chunk-frames 0 decodes the whole clip as one call (5 "
      "latent frames here), which does not fit: decoding [5, 4, 6, 5] needs");
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  harness_teardown (h, bus);
  g_free (expected);
  g_free (path);
}

GST_END_TEST;

/* upstream's latency plus (chunk - 1) latent frames of 4 frames: 2 * 4 / 16 s for chunk 3 */
GST_START_TEST (test_wan_latency)
{
  const guint chunks[] = { 1, 3 };
  const GstClockTime ours[] = { 0, GST_SECOND / 2 };
  guint c;

  for (c = 0; c < G_N_ELEMENTS (chunks); c++) {
    gchar *props = g_strdup_printf ("chunk-frames=%u", chunks[c]);
    GstBus *bus;
    GstHarness *h = model_harness (WAN_MODEL, props, &bus);
    GstQuery *q = gst_query_new_latency ();
    GstClockTime min, max;
    GstMessage *msg;
    gboolean live;

    gst_harness_set_upstream_latency (h, 10 * GST_MSECOND);
    gst_harness_set_src_caps_str (h, WAN_CAPS);
    fail_unless (gst_pad_peer_query (h->sinkpad, q));
    gst_query_parse_latency (q, &live, &min, &max);
    fail_unless_equals_uint64 (min, 10 * GST_MSECOND + ours[c]);
    fail_unless (!GST_CLOCK_TIME_IS_VALID (max) || max >= min);
    fail_unless_equals_uint64 (gst_harness_query_latency (h),
        10 * GST_MSECOND + ours[c]);
    /* a change of latency is announced */
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_LATENCY);
    fail_unless ((msg != NULL) == (ours[c] != 0));
    if (msg)
      gst_message_unref (msg);
    gst_query_unref (q);
    harness_teardown (h, bus);
    g_free (props);
  }
}

GST_END_TEST;

/* pull n RGB frames of hw pixels, stamped i/24 s, each against the decoder's output expected
 * [3, n, hw] taken to [0, 1] by x scale[c] + offset[c] and rounded to 8 bits: the largest
 * difference */
static gint
pull_rgb_frames (GstHarness * h, const gfloat * expected, gint n, gint hw,
    const gfloat scale[3], const gfloat offset[3])
{
  gint f, i, k, worst = 0;

  for (f = 0; f < n; f++) {
    GstBuffer *buf = gst_harness_pull (h);
    GstMapInfo map;

    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf),
        gst_util_uint64_scale (f, GST_SECOND, 24));
    gst_buffer_map (buf, &map, GST_MAP_READ);
    fail_unless_equals_int (map.size, hw * 3);
    for (i = 0; i < hw; i++) {
      for (k = 0; k < 3; k++) {
        gfloat v = expected[(k * n + f) * hw + i] * scale[k] + offset[k];
        gint want = (gint) (CLAMP (v, 0.0f, 1.0f) * 255.0f + 0.5f);
        worst = MAX (worst, ABS (map.data[i * 3 + k] - want));
      }
    }
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
  }
  return worst;
}

/* LTX-2.3 (the fixture's small decoder: a frame depends on 8 later latent frames, a stream
 * starts after 9): the LATENCY query adds 8 latent frames of 8 frames at 24/1; the frames
 * come late (none until the 9th latent frame, then 5, 13), the rest at EOS, all 73 of
 * upstream's whole-clip decode, stamped i/24 s; the same in 16-pixel tiles (each tile step
 * a frame late, the frames given as soon as nothing can change them) */
GST_START_TEST (test_ltx2_stream)
{
  const guint after[10] = { 0, 0, 0, 0, 0, 0, 0, 0, 5, 13 };
  static const gchar *props[2] = { "chunk-frames=1", "tile-size=16" };
  gchar *path = data_path ("ltx2_v23.expected.safetensors");
  gint64 shape[5];
  gfloat *expected = read_tensor (path, "decoded", shape);
  static const gfloat half[3] = { 0.5f, 0.5f, 0.5f };
  gint t, worst, i;

  fail_unless_equals_int (shape[2], 73);
  for (i = 0; i < 2; i++) {
    GstBus *bus;
    GstHarness *h = model_harness ("ltx2_v23.orig.safetensors", props[i], &bus);

    gst_harness_set_upstream_latency (h, 10 * GST_MSECOND);
    gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
        "channels=128, width=2, height=1, framerate=24/1");
    fail_unless_equals_uint64 (gst_harness_query_latency (h),
        10 * GST_MSECOND + gst_util_uint64_scale (8 * 8, GST_SECOND, 24));
    for (t = 0; t < 10; t++) {
      fail_unless_equals_int (gst_harness_push (h,
              video_latent_buffer ("ltx2_v23.latent", t, FALSE)), GST_FLOW_OK);
      fail_unless_equals_int (gst_harness_buffers_received (h), after[t]);
    }
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    fail_unless_equals_int (gst_harness_buffers_received (h), 73);
    worst = pull_rgb_frames (h, expected, 73, 32 * 64, half, half);
    fail_unless (worst <= 1, "%s: decoded pixels differ by %d", props[i],
        worst);
    harness_teardown (h, bus);
  }
  g_free (expected);
  g_free (path);
}

GST_END_TEST;

/* MiniMax-H3 decodes upstream's chunks of 5 latent frames and 2 of overlap: the LATENCY query
 * adds the 6 latent frames a chunk's first waits for (4 frames each at 24/1); nothing comes
 * until the 7th latent frame, then the chunk's 17 frames, 17 more at the 12th, the 5 the last
 * chunk held at EOS: all 39 of upstream's decode (ImageNet-normalised there), stamped i/24 s */
GST_START_TEST (test_minimax_stream)
{
  static const gfloat std[3] = { 0.229f, 0.224f, 0.225f };
  static const gfloat mean[3] = { 0.485f, 0.456f, 0.406f };
  gchar *path = data_path ("minimax_w128.expected.safetensors");
  gint64 shape[5];
  gfloat *expected = read_tensor (path, "decoded", shape);
  GstBus *bus;
  GstHarness *h = model_harness ("minimax_w128.diffusers.safetensors",
      "chunk-frames=1", &bus);
  gint t, worst;

  fail_unless_equals_int (shape[2], 39);
  gst_harness_set_upstream_latency (h, 10 * GST_MSECOND);
  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=24, width=3, height=2, framerate=24/1");
  fail_unless_equals_uint64 (gst_harness_query_latency (h),
      10 * GST_MSECOND + gst_util_uint64_scale (6 * 4, GST_SECOND, 24));
  for (t = 0; t < 12; t++) {
    fail_unless_equals_int (gst_harness_push (h,
            video_latent_buffer ("minimax_w128.latent", t, FALSE)),
        GST_FLOW_OK);
    fail_unless_equals_int (gst_harness_buffers_received (h),
        t < 6 ? 0 : t < 11 ? 17 : 34);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 39);
  worst = pull_rgb_frames (h, expected, 39, 32 * 48, std, mean);
  fail_unless (worst <= 1, "decoded pixels differ by %d", worst);
  harness_teardown (h, bus);
  g_free (expected);
  g_free (path);
}

GST_END_TEST;

/* framerate 0/1: a latent buffer's DURATION is split evenly between its frames, and a
 * chunk adds no latency that could be stated */
GST_START_TEST (test_wan_no_framerate)
{
  GstBus *bus;
  GstHarness *h = model_harness (WAN_MODEL, "chunk-frames=3", &bus);
  GstBuffer *buf;
  gint t, i;

  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=16, width=7, height=5, framerate=0/1");
  fail_unless_equals_uint64 (gst_harness_query_latency (h), 0);
  for (t = 0; t < 2; t++) {
    buf = video_latent_buffer ("wan21_b4.latent", t, TRUE);
    if (t == 1)
      GST_BUFFER_DURATION (buf) = 1000;   /* 4 frames of 250 ns */
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 5);
  buf = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), 0);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (buf), GST_SECOND / 16);
  gst_buffer_unref (buf);
  for (i = 0; i < 4; i++) {
    buf = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), frame_time (1) + 250 * i);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (buf), 250);
    gst_buffer_unref (buf);
  }
  harness_teardown (h, bus);
}

GST_END_TEST;

/* taew2_2 decodes to 16x the latent grid: 80x48 for 5x3 */
GST_START_TEST (test_taew22_scale)
{
  GstBus *bus;
  GstHarness *h = model_harness ("taew22_nf32.safetensors", NULL, &bus);
  GstCaps *caps;
  GstVideoInfo info;
  GstBuffer *out;

  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=48, width=5, height=3, framerate=16/1");
  fail_unless_equals_int (gst_harness_push (h,
          video_latent_buffer ("taew22_nf32.latent", 0, TRUE)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_video_info_from_caps (&info, caps));
  fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), 80);
  fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&info), 48);
  fail_unless_equals_int (gst_buffer_get_size (out), 80 * 48 * 3);
  gst_caps_unref (caps);
  gst_buffer_unref (out);
  harness_teardown (h, bus);
}

GST_END_TEST;

GST_START_TEST (test_wan_wrong_channel_count)
{
  GstBus *bus;
  GstHarness *h = model_harness (WAN_MODEL, NULL, &bus);
  GstMessage *msg;
  GError *error = NULL;

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
      GST_FLOW_NOT_NEGOTIATED);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &error, NULL);
  fail_unless (strstr (error->message, "The latents have 4 channels but the "
          "wan2.1 decoder") != NULL, "%s", error->message);
  fail_unless (g_str_has_suffix (error->message, "takes 16."), "%s",
      error->message);
  g_clear_error (&error);
  gst_message_unref (msg);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* ---- AutoencoderKL ---------------------------------------------------------------------- */

/* gen_kl_fixtures.py: kl_sd (SD-like, z=4, latent [1,4,5,7] -> [1,3,40,56]) and kl_f2
 * (FLUX.2-like, z=32: raw [1,32,6,8], normalized [1,128,3,4], both -> [1,3,48,64]); the
 * expected outputs are diffusers' decode, unclamped, about [-1, 1] */
#define KL_SD_CAPS "video/x-latent, type=float32, channels=4, width=7, " \
  "height=5, framerate=16/1"

/* image i of a [B, C, H, W] latent file of tests/data as a buffer, stamped at i/16 s */
static GstBuffer *
image_latent_buffer (const gchar * name, gint i)
{
  gchar *path = data_path (name);
  gint64 shape[5];
  gfloat *lat = read_tensor (path, "latent_tensor", shape);
  const gsize n = shape[1] * shape[2] * shape[3];
  GstBuffer *buf;

  fail_unless (i < shape[0]);
  buf = gst_buffer_new_memdup (lat + i * n, n * sizeof (gfloat));
  GST_BUFFER_PTS (buf) = frame_time (i);
  GST_BUFFER_DURATION (buf) = GST_SECOND / 16;
  g_free (lat);
  g_free (path);
  return buf;
}

/* decode image 0 of `latent` with `model` and these properties under these latent caps; the
 * RGB frame, whose caps must be width x height */
static GstBuffer *
decode_image (const gchar * model, const gchar * props, const gchar * caps_str,
    const gchar * latent, gint width, gint height)
{
  GstBus *bus;
  GstHarness *h = model_harness (model, props, &bus);
  GstVideoInfo info;
  GstCaps *caps;
  GstBuffer *out;

  gst_harness_set_sink_caps_str (h, "video/x-raw, format=RGB");
  gst_harness_set_src_caps_str (h, caps_str);
  fail_unless_equals_int (gst_harness_push (h, image_latent_buffer (latent,
              0)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_video_info_from_caps (&info, caps));
  fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), width);
  fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&info), height);
  fail_unless_equals_int (gst_buffer_get_size (out), width * height * 3);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 0);
  gst_caps_unref (caps);
  harness_teardown (h, bus);
  return out;
}

/* the largest difference, in levels, between an RGB frame and the tensor `name` of an
 * expected file of tests/data ([1, 3, H, W], about [-1, 1]) as (y + 1) / 2 clamped and
 * rounded to nearest */
static gint
kl_worst_level (GstBuffer * frame, const gchar * expected_name,
    const gchar * name)
{
  gchar *path = data_path (expected_name);
  gint64 shape[5];
  gfloat *expected = read_tensor (path, name, shape);
  const gint hw = shape[2] * shape[3];
  GstMapInfo map;
  gint i, c, worst = 0;

  fail_unless_equals_int (shape[1], 3);
  gst_buffer_map (frame, &map, GST_MAP_READ);
  fail_unless_equals_int (map.size, hw * 3);
  for (i = 0; i < hw; i++) {
    for (c = 0; c < 3; c++) {
      gfloat v = (expected[c * hw + i] + 1.0f) * 0.5f;
      gint want = (gint) (CLAMP (v, 0.0f, 1.0f) * 255.0f + 0.5f);
      worst = MAX (worst, ABS (map.data[i * 3 + c] - want));
    }
  }
  gst_buffer_unmap (frame, &map);
  g_free (expected);
  g_free (path);
  return worst;
}

/* the largest difference, in levels, between two frames of the same size */
static gint
worst_level_between (GstBuffer * a, GstBuffer * b)
{
  GstMapInfo ma, mb;
  gsize i;
  gint worst = 0;

  gst_buffer_map (a, &ma, GST_MAP_READ);
  gst_buffer_map (b, &mb, GST_MAP_READ);
  fail_unless_equals_int (ma.size, mb.size);
  for (i = 0; i < ma.size; i++)
    worst = MAX (worst, ABS (ma.data[i] - mb.data[i]));
  gst_buffer_unmap (a, &ma);
  gst_buffer_unmap (b, &mb);
  return worst;
}

/* ---- Qwen-Image 2.1: RGBA out (gen_qwen21_fixtures.py: latent [1,64,5,7] -> [1,4,1,80,112]) ---- */

#define QWEN21_CAPS "video/x-latent, type=float32, channels=64, width=7, " \
  "height=5, framerate=16/1"

/* the width x height frame `model` decodes from image 0 of `latent` (under latent_caps), in the
 * sink caps `caps` (NULL: any video/x-raw), and the format negotiated */
static GstBuffer *
decode_frame (const gchar * model, const gchar * latent_caps,
    const gchar * latent, const gchar * caps, gint width, gint height,
    GstVideoFormat * format)
{
  GstBus *bus;
  GstHarness *h = model_harness (model, NULL, &bus);
  GstVideoInfo info;
  GstCaps *out_caps;
  GstBuffer *out;

  gst_harness_set_sink_caps_str (h, caps ? caps : "video/x-raw");
  gst_harness_set_src_caps_str (h, latent_caps);
  fail_unless_equals_int (gst_harness_push (h, image_latent_buffer (latent,
              0)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  out_caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_video_info_from_caps (&info, out_caps));
  fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), width);
  fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&info), height);
  *format = GST_VIDEO_INFO_FORMAT (&info);
  gst_caps_unref (out_caps);
  harness_teardown (h, bus);
  return out;
}

/* the 112x80 frame qwen21_b4 decodes from its latent */
static GstBuffer *
qwen21_frame (const gchar * caps, GstVideoFormat * format)
{
  return decode_frame ("qwen21_b4.orig.safetensors", QWEN21_CAPS,
      "qwen21_b4.latent", caps, 112, 80, format);
}

/* the largest difference, in levels, between sample `at` + `step` i of a frame and channel c of
 * diffusers' RGBA decode ((y + 1) / 2 clamped, rounded to nearest; alpha as colour) */
static gint
qwen21_worst_level (GstBuffer * frame, gint c, gsize at, gsize step)
{
  gchar *path = data_path ("qwen21_b4.expected.safetensors");
  gint64 shape[5];
  gfloat *expected = read_tensor (path, "decoded", shape);
  const gint hw = 80 * 112;
  GstMapInfo map;
  gint i, worst = 0;

  fail_unless_equals_int (shape[1], 4);
  gst_buffer_map (frame, &map, GST_MAP_READ);
  fail_unless (map.size >= at + (hw - 1) * step + 1);
  for (i = 0; i < hw; i++) {
    gfloat v = (expected[c * hw + i] + 1.0f) * 0.5f;
    gint want = (gint) (CLAMP (v, 0.0f, 1.0f) * 255.0f + 0.5f);
    worst = MAX (worst, ABS (map.data[at + i * step] - want));
  }
  gst_buffer_unmap (frame, &map);
  g_free (expected);
  g_free (path);
  return worst;
}

/* a model with alpha prefers RGBA; each format with alpha carries diffusers' alpha (straight:
 * the colour bytes are the same as RGB's), a format without alpha drops it */
GST_START_TEST (test_alpha_formats)
{
  static const struct
  {
    const gchar *caps;
    gint at[4], bpp;            /* the bytes of R, G, B and alpha (-1: none); bytes per pixel */
  } packed[] = {
    {NULL, {0, 1, 2, 3}, 4}, {"video/x-raw, format=BGRA", {2, 1, 0, 3}, 4},
    {"video/x-raw, format=ARGB", {1, 2, 3, 0}, 4},
    {"video/x-raw, format=ABGR", {3, 2, 1, 0}, 4},
    {"video/x-raw, format=RGB", {0, 1, 2, -1}, 3},
  };
  const gsize hw = 80 * 112;
  GstVideoFormat format;
  GstBuffer *out, *i420;
  GstMapInfo map;
  guint k;
  gint c;

  for (k = 0; k < G_N_ELEMENTS (packed); k++) {
    out = qwen21_frame (packed[k].caps, &format);
    if (!packed[k].caps)
      fail_unless_equals_int (format, GST_VIDEO_FORMAT_RGBA);
    fail_unless_equals_int (gst_buffer_get_size (out), hw * packed[k].bpp);
    for (c = 0; c < 4; c++)
      if (packed[k].at[c] >= 0)
        fail_unless (qwen21_worst_level (out, c, packed[k].at[c],
                packed[k].bpp) <= 1, "%s: channel %d",
            packed[k].caps ? packed[k].caps : "any caps", c);
    gst_buffer_unref (out);
  }
  /* A420: I420's planes, then the alpha plane */
  i420 = qwen21_frame ("video/x-raw, format=I420", &format);
  out = qwen21_frame ("video/x-raw, format=A420", &format);
  fail_unless_equals_int (gst_buffer_get_size (out),
      gst_buffer_get_size (i420) + hw);
  gst_buffer_map (i420, &map, GST_MAP_READ);
  fail_unless (gst_buffer_memcmp (out, 0, map.data, map.size) == 0);
  fail_unless (qwen21_worst_level (out, 3, map.size, 1) <= 1);
  gst_buffer_unmap (i420, &map);
  gst_buffer_unref (out);
  gst_buffer_unref (i420);
  /* AYUV: alpha first */
  out = qwen21_frame ("video/x-raw, format=AYUV", &format);
  fail_unless (qwen21_worst_level (out, 3, 0, 4) <= 1);
  gst_buffer_unref (out);
}

GST_END_TEST;

/* a model without alpha writes opaque alpha */
GST_START_TEST (test_alpha_opaque)
{
  GstVideoFormat format;
  GstBuffer *out = decode_frame ("kl_sd.safetensors", KL_SD_CAPS,
      "kl_sd.latent", "video/x-raw, format=ARGB", 56, 40, &format);
  GstMapInfo map;
  gsize i;

  fail_unless_equals_int (format, GST_VIDEO_FORMAT_ARGB);
  gst_buffer_map (out, &map, GST_MAP_READ);
  for (i = 0; i < map.size; i += 4)
    fail_unless_equals_int (map.data[i], 255);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
}

GST_END_TEST;

/* the SD-like file (LDM naming, BF16) decodes raw latents (auto) to 8x frames that match
 * diffusers within a level */
GST_START_TEST (test_kl_pixels)
{
  GstBuffer *out = decode_image ("kl_sd.safetensors", NULL, KL_SD_CAPS,
      "kl_sd.latent", 56, 40);
  gint worst = kl_worst_level (out, "kl_sd.expected.safetensors", "decoded");

  fail_unless (worst <= 1, "decoded pixels differ from diffusers by %d", worst);
  gst_buffer_unref (out);
}

GST_END_TEST;

static guint count_warnings (GstBus * bus, const gchar * needle);

/* tile-size=16 (output pixels): tiles of a 56x40 frame at every level, the same frame as the
 * whole-frame decode (exact tiling, no overlap) and as diffusers'; a max-memory below the
 * whole frame's (about 9 MB here) but above 16-pixel tiles' (about 3 MB) tiles by itself, and
 * says so once (a WARNING naming the tiles and the cause) */
GST_START_TEST (test_kl_tiled)
{
  GstBuffer *whole = decode_image ("kl_sd.safetensors", NULL, KL_SD_CAPS,
      "kl_sd.latent", 56, 40);
  GstBuffer *tiled = decode_image ("kl_sd.safetensors", "tile-size=16",
      KL_SD_CAPS, "kl_sd.latent", 56, 40);
  GstBuffer *limited = decode_image ("kl_sd.safetensors", "max-memory=5000000",
      KL_SD_CAPS, "kl_sd.latent", 56, 40);
  GstElement *e = make_decoder ();
  guint tile_size;
  guint64 max_memory;
  gint worst;

  worst = worst_level_between (whole, tiled);
  fail_unless (worst <= 1, "tiled and whole frames differ by %d levels", worst);
  worst = kl_worst_level (tiled, "kl_sd.expected.safetensors", "decoded");
  fail_unless (worst <= 1, "tiled pixels differ from diffusers by %d", worst);
  worst = worst_level_between (whole, limited);
  fail_unless (worst <= 1, "max-memory tiles and whole frames differ by %d",
      worst);
  {
    GstBus *bus;
    GstHarness *h = model_harness ("kl_sd.safetensors", "max-memory=5000000",
        &bus);

    gst_harness_set_sink_caps_str (h, "video/x-raw, format=RGB");
    gst_harness_set_src_caps_str (h, KL_SD_CAPS);
    fail_unless_equals_int (gst_harness_push (h,
            image_latent_buffer ("kl_sd.latent", 0)), GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (h));
    fail_unless_equals_int (count_warnings (bus, "whole frames do not fit"), 1);
    harness_teardown (h, bus);
  }

  /* the properties and their defaults */
  g_object_get (e, "tile-size", &tile_size, "max-memory", &max_memory, NULL);
  fail_unless_equals_int (tile_size, 0);
  fail_unless_equals_uint64 (max_memory, 0);
  g_object_set (e, "tile-size", 256, "max-memory", G_GUINT64_CONSTANT (1) << 33,
      NULL);
  g_object_get (e, "tile-size", &tile_size, "max-memory", &max_memory, NULL);
  fail_unless_equals_int (tile_size, 256);
  fail_unless_equals_uint64 (max_memory, G_GUINT64_CONSTANT (1) << 33);
  gst_object_unref (e);
  gst_buffer_unref (whole);
  gst_buffer_unref (tiled);
  gst_buffer_unref (limited);
}

GST_END_TEST;

/* FLUX.2: 32-channel raw latents decode to 8x frames, 128-channel normalized ones (2x2
 * patches, the property or the caps' space naming them) to 16x: both 64x48 here, matching
 * diffusers' decode and its Flux2 pipeline path */
GST_START_TEST (test_kl_flux2_spaces)
{
  const gchar *normalized_caps = "video/x-latent, type=float32, channels=128, "
      "width=4, height=3, framerate=16/1";
  GstBuffer *out;
  gint worst;

  out = decode_image ("kl_f2.safetensors", NULL, "video/x-latent, "
      "type=float32, channels=32, width=8, height=6, framerate=16/1",
      "kl_f2.latent", 64, 48);
  worst = kl_worst_level (out, "kl_f2.expected.safetensors", "decoded");
  fail_unless (worst <= 1, "raw: pixels differ from diffusers by %d", worst);
  gst_buffer_unref (out);

  out = decode_image ("kl_f2.safetensors", "latent-space=normalized",
      normalized_caps, "kl_f2.normalized.latent", 64, 48);
  worst = kl_worst_level (out, "kl_f2.expected.safetensors",
      "decoded_normalized");
  fail_unless (worst <= 1, "normalized: pixels differ from diffusers by %d",
      worst);
  gst_buffer_unref (out);

  out = decode_image ("kl_f2.safetensors", NULL, "video/x-latent, "
      "type=float32, channels=128, width=4, height=3, framerate=16/1, "
      "space=normalized", "kl_f2.normalized.latent", 64, 48);
  worst = kl_worst_level (out, "kl_f2.expected.safetensors",
      "decoded_normalized");
  fail_unless (worst <= 1, "space=normalized caps: pixels differ by %d", worst);
  gst_buffer_unref (out);
}

GST_END_TEST;

/* what the sink takes for 64x48 RGB: 32 channels at 8x6, or 128 normalized at 4x3 */
GST_START_TEST (test_kl_flux2_query_caps)
{
  GstBus *bus;
  GstHarness *h = model_harness ("kl_f2.safetensors", NULL, &bus);
  GstCaps *caps, *want;
  const gchar *good[] = {
    "video/x-latent, type=float32, channels=32, width=8, height=6",
    "video/x-latent, type=float16, channels=128, width=4, height=3, "
        "space=normalized",
  };
  const gchar *bad[] = {
    "video/x-latent, type=float32, channels=32, width=4, height=3",
    "video/x-latent, type=float32, channels=128, width=8, height=6",
    "video/x-latent, type=float32, channels=16, width=8, height=6",
  };
  guint i;

  gst_harness_set_sink_caps_str (h, "video/x-raw, format=RGB, width=64, "
      "height=48");
  caps = gst_pad_peer_query_caps (h->srcpad, NULL);
  GST_INFO ("sink caps %" GST_PTR_FORMAT, caps);
  for (i = 0; i < G_N_ELEMENTS (good); i++) {
    want = gst_caps_from_string (good[i]);
    fail_unless (gst_caps_can_intersect (caps, want), "%s not in %"
        GST_PTR_FORMAT, good[i], caps);
    gst_caps_unref (want);
  }
  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    want = gst_caps_from_string (bad[i]);
    fail_if (gst_caps_can_intersect (caps, want), "%s in %" GST_PTR_FORMAT,
        bad[i], caps);
    gst_caps_unref (want);
  }
  gst_caps_unref (caps);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* latent caps with the wrong channels for their space are refused naming both counts, and
 * the space that would take them */
GST_START_TEST (test_kl_flux2_wrong_channels)
{
  GstBus *bus;
  GstHarness *h;
  GstBuffer *buf;

  h = model_harness ("kl_f2.safetensors", "latent-space=normalized", &bus);
  buf = gst_buffer_new_allocate (NULL, 32 * 6 * 8 * 4, NULL);
  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=32, width=8, height=6, framerate=16/1");
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "The latents have 32 channels but the flux2 decoder");
  harness_teardown (h, bus);

  h = model_harness ("kl_f2.safetensors", "latent-space=normalized", &bus);
  buf = gst_buffer_new_allocate (NULL, 16 * 3 * 4 * 4, NULL);
  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=16, width=4, height=3, framerate=16/1");
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "takes 128 for normalized latents and 32 for raw ones.");
  harness_teardown (h, bus);

  /* 128 channels without a space: raw, the decoder's own; the message says what to set */
  h = model_harness ("kl_f2.safetensors", NULL, &bus);
  buf = gst_buffer_new_allocate (NULL, 128 * 3 * 4 * 4, NULL);
  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=128, width=4, height=3, framerate=16/1");
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "have 128 channels but the flux2 decoder in '");
  harness_teardown (h, bus);

  h = model_harness ("kl_f2.safetensors", NULL, &bus);
  buf = gst_buffer_new_allocate (NULL, 128 * 3 * 4 * 4, NULL);
  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=128, width=4, height=3, framerate=16/1");
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "takes 32 for raw latents and 128 for normalized ones: "
      "set latent-space=normalized.");
  harness_teardown (h, bus);

  /* the SD-like file: the plain message */
  h = model_harness ("kl_sd.safetensors", NULL, &bus);
  buf = gst_buffer_new_allocate (NULL, 16 * 5 * 7 * 4, NULL);
  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=16, width=7, height=5, framerate=16/1");
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "The latents have 16 channels but the ");
  harness_teardown (h, bus);
}

GST_END_TEST;

/* refusals: frames that fit in max-memory neither whole nor in tiles, tiles smaller than 16
 * pixels, and tiles for a decoder that cannot tile */
GST_START_TEST (test_kl_tile_errors)
{
  const struct
  {
    const gchar *model, *props, *needle;
  } start[] = {
    {"kl_sd.safetensors", "tile-size=8",
        "tile-size 8 is below the smallest tile"},
    {FIXTURE ".orig.safetensors", "tile-size=16",
        "tile-size is for the AutoencoderKL, Wan and SeedVR2 decoders"},
  };
  GstBus *bus;
  GstHarness *h;
  guint i;

  /* what the properties decide fails on the way to PAUSED, what needs the caps at the caps */
  for (i = 0; i < G_N_ELEMENTS (start); i++) {
    gchar *props = g_strdup_printf ("model-file=%s/%s %s",
        g_getenv ("VAE_TEST_DATA"), start[i].model, start[i].props);

    expect_start_error (props, start[i].needle);
    g_free (props);
  }
  h = model_harness ("kl_sd.safetensors", "max-memory=1000", &bus);
  gst_harness_set_src_caps_str (h, KL_SD_CAPS);
  fail_unless_equals_int (gst_harness_push (h,
          image_latent_buffer ("kl_sd.latent", 0)), GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "memory limit");
  harness_teardown (h, bus);
}

GST_END_TEST;

/* the new families are listed by nick */
GST_START_TEST (test_kl_families)
{
  const gchar *nicks[] = { "sd1", "sd2", "sdxl", "sd3", "flux1", "flux2", "seedvr2" };
  GstElement *e = make_decoder ();
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e),
      "model-family");
  guint i;

  for (i = 0; i < G_N_ELEMENTS (nicks); i++)
    fail_unless (g_enum_get_value_by_nick (G_PARAM_SPEC_ENUM
            (pspec)->enum_class, nicks[i]) != NULL, "no model-family %s",
        nicks[i]);
  gst_object_unref (e);
}

GST_END_TEST;

/* ---- CUDA ------------------------------------------------------------------------------- */

/* The TAEF2 reference latents (2 frames, 32 x 16 x 24) decode to 192x128 frames. Each GPU
 * test probes for the device itself: CUDA does not survive the fork that runs each test. */
#define TAEF2_MODEL "models/taef2_decoder.safetensors"
#define TAEF2_LATENT "reference/taef2/small.latent"
#define TAEF2_CAPS "video/x-latent, type=float32, channels=32, width=24, " \
  "height=16, framerate=24/1"
#define TAEF2_FRAMES 2
#define CUDA_FEATURE "memory:CUDAMemory"
#define CUDA_MEMORY_TYPE "gst.cuda.memory"      /* GST_CUDA_MEMORY_TYPE_NAME */

typedef enum
{
  CUDA_NOT_BUILT,
  CUDA_NO_DEVICE,
  CUDA_PRESENT,
} CudaState;

/* whether the CUDA backend is built and finds a GPU; any failure other than the missing
 * device is a failure of the test */
static CudaState
cuda_state (void)
{
  char err[512] = "";
  vae_backend_t *b;

  if (!vae_backend_is_built (VAE_BACKEND_CUDA))
    return CUDA_NOT_BUILT;
  b = vae_backend_init (VAE_BACKEND_CUDA, -1, VAE_PRECISION_FP32, err,
      sizeof (err));
  if (b == NULL) {
    fail_unless (g_str_has_prefix (err, "no CUDA device"),
        "the cuda backend failed to start: %s", err);
    return CUDA_NO_DEVICE;
  }
  vae_backend_free (b);
  return CUDA_PRESENT;
}

static gboolean
caps_have_cuda (const GstCaps * caps)
{
  guint i;

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (f != NULL && !gst_caps_features_is_any (f)
        && gst_caps_features_contains (f, CUDA_FEATURE))
      return TRUE;
  }
  return FALSE;
}

/* whether the plugin was built with GStreamer's CUDA library (its src template offers CUDA
 * memory) */
static gboolean
plugin_has_cuda_memory (void)
{
  GstElementFactory *factory = gst_element_factory_find ("vaedecode");
  const GList *l;
  gboolean ret = FALSE;

  for (l = gst_element_factory_get_static_pad_templates (factory); l;
      l = l->next) {
    GstStaticPadTemplate *t = l->data;

    if (t->direction == GST_PAD_SRC) {
      GstCaps *caps = gst_static_caps_get (&t->static_caps);

      ret = caps_have_cuda (caps);
      gst_caps_unref (caps);
    }
  }
  gst_object_unref (factory);
  return ret;
}

/* TRUE when a GPU test can run (and CUDA memory is built in, if it needs it); else a note */
static gboolean
cuda_ready (const gchar * test, gboolean memory)
{
  switch (cuda_state ()) {
    case CUDA_NOT_BUILT:
      g_printerr ("%s: skipped, the CUDA backend is not built\n", test);
      return FALSE;
    case CUDA_NO_DEVICE:
      g_printerr ("%s: skipped, no CUDA device\n", test);
      return FALSE;
    default:
      break;
  }
  if (memory && !plugin_has_cuda_memory ()) {
    g_printerr ("%s: skipped, the plugin was built without GStreamer's CUDA "
        "library\n", test);
    return FALSE;
  }
  return TRUE;
}

/* TAEF2 reference latent frame i as a buffer stamped at i/24 s */
static GstBuffer *
taef2_latent (gint i)
{
  gchar *latent = shared_path (TAEF2_LATENT);
  gint64 shape[5];
  gfloat *lat = read_tensor (latent, "latent_tensor", shape);
  const gsize n = shape[1] * shape[2] * shape[3];
  GstBuffer *buf;

  fail_unless (shape[0] >= TAEF2_FRAMES && n == 32 * 16 * 24);
  buf = gst_buffer_new_memdup (lat + i * n, n * sizeof (gfloat));
  GST_BUFFER_PTS (buf) = gst_util_uint64_scale (i, GST_SECOND, 24);
  g_free (lat);
  g_free (latent);
  return buf;
}

/* the TAEF2 frames h decoded from latent frames pushed up to an EOS: TAEF2_FRAMES of them,
 * stamped in order, into frames[]; the negotiated caps are returned */
static GstCaps *
taef2_pull (GstHarness * h, GstBuffer * frames[TAEF2_FRAMES])
{
  gint i;

  fail_unless_equals_int (gst_harness_buffers_in_queue (h), TAEF2_FRAMES);
  for (i = 0; i < TAEF2_FRAMES; i++) {
    frames[i] = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (frames[i]),
        gst_util_uint64_scale (i, GST_SECOND, 24));
  }
  return gst_pad_get_current_caps (h->sinkpad);
}

/* the TAEF2 reference latents through h (started; sink caps set or not), then EOS, which
 * drains (a GPU may decode several latent frames per step); as taef2_pull */
static GstCaps *
taef2_run (GstHarness * h, GstBuffer * frames[TAEF2_FRAMES])
{
  gint i;

  gst_harness_set_src_caps_str (h, TAEF2_CAPS);
  for (i = 0; i < TAEF2_FRAMES; i++)
    fail_unless_equals_int (gst_harness_push (h, taef2_latent (i)),
        GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  return taef2_pull (h, frames);
}

/* decode the TAEF2 reference latents with these properties, downstream taking sink_caps
 * (NULL: anything); the frames go to frames[], the negotiated caps are returned */
static GstCaps *
taef2_decode (const gchar * props, const gchar * sink_caps,
    GstBuffer * frames[TAEF2_FRAMES])
{
  gchar *model = shared_path (TAEF2_MODEL);
  GstBus *bus;
  GstHarness *h = path_harness (model, props, &bus);
  GstCaps *caps;

  if (sink_caps)
    gst_harness_set_sink_caps_str (h, sink_caps);
  caps = taef2_run (h, frames);
  harness_teardown (h, bus);
  g_free (model);
  return caps;
}

static gboolean
buffer_is_cuda (GstBuffer * buf)
{
  return gst_buffer_n_memory (buf) == 1
      && gst_memory_is_type (gst_buffer_peek_memory (buf, 0), CUDA_MEMORY_TYPE);
}

/* the largest difference, in levels, between two frames of the same format and size
 * mapped through their video metas (CUDA memory has pitched rows; mapping it for reading
 * downloads it), and the mean difference */
static gint
worst_level_frames (GstCaps * caps_a, GstBuffer * a, GstCaps * caps_b,
    GstBuffer * b, gdouble * mean)
{
  GstVideoInfo ia, ib;
  GstVideoFrame fa, fb;
  guint p, x, y;
  gint worst = 0;
  guint64 sum = 0, count = 0;

  fail_unless (gst_video_info_from_caps (&ia, caps_a));
  fail_unless (gst_video_info_from_caps (&ib, caps_b));
  fail_unless_equals_int (GST_VIDEO_INFO_FORMAT (&ia),
      GST_VIDEO_INFO_FORMAT (&ib));
  fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&ia), GST_VIDEO_INFO_WIDTH (&ib));
  fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&ia),
      GST_VIDEO_INFO_HEIGHT (&ib));
  fail_unless (gst_video_frame_map (&fa, &ia, a, GST_MAP_READ));
  fail_unless (gst_video_frame_map (&fb, &ib, b, GST_MAP_READ));
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&fa); p++) {
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    guint rows, row_bytes;

    gst_video_format_info_component (fa.info.finfo, p, comp);
    rows = GST_VIDEO_FRAME_COMP_HEIGHT (&fa, comp[0]);
    row_bytes = GST_VIDEO_FRAME_COMP_WIDTH (&fa, comp[0]) *
        GST_VIDEO_FRAME_COMP_PSTRIDE (&fa, comp[0]);
    for (y = 0; y < rows; y++) {
      const guint8 *ra = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&fa, p) +
          y * GST_VIDEO_FRAME_PLANE_STRIDE (&fa, p);
      const guint8 *rb = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&fb, p) +
          y * GST_VIDEO_FRAME_PLANE_STRIDE (&fb, p);

      for (x = 0; x < row_bytes; x++) {
        gint d = ABS (ra[x] - rb[x]);

        worst = MAX (worst, d);
        sum += d;
        count++;
      }
    }
  }
  gst_video_frame_unmap (&fa);
  gst_video_frame_unmap (&fb);
  *mean = (gdouble) sum / count;
  return worst;
}

/* the frames of `props` against the CPU's, both taking sink_caps with the CUDA feature
 * dropped for the CPU (NULL: anything); whether the output was CUDA memory must be `cuda` */
static void
check_against_cpu (const gchar * props, const gchar * sink_caps,
    gboolean cuda, gint max_worst, gdouble max_mean)
{
  GstBuffer *ref[TAEF2_FRAMES], *out[TAEF2_FRAMES];
  GstCaps *out_caps = taef2_decode (props, sink_caps, out);
  GstCaps *ref_caps;
  gchar *cpu_sink = NULL;
  gint i;

  if (sink_caps) {
    GstCaps *c = gst_caps_from_string (sink_caps);

    gst_caps_set_features_simple (c, NULL);
    cpu_sink = gst_caps_to_string (c);
    gst_caps_unref (c);
  }
  ref_caps = taef2_decode ("backend=cpu", cpu_sink, ref);
  fail_if (caps_have_cuda (ref_caps));
  fail_unless_equals_int (caps_have_cuda (out_caps), cuda);
  for (i = 0; i < TAEF2_FRAMES; i++) {
    gdouble mean;
    gint worst;

    fail_unless_equals_int (buffer_is_cuda (out[i]), cuda);
    fail_if (buffer_is_cuda (ref[i]));
    worst = worst_level_frames (out_caps, out[i], ref_caps, ref[i], &mean);
    GST_INFO ("%s, %s: frame %d differs from the cpu's by %d levels at most, "
        "%.3f on average", props, sink_caps, i, worst, mean);
    fail_unless (worst <= max_worst && mean <= max_mean, "%s, %s: frame %d "
        "differs from the cpu's by %d levels (mean %.3f)", props, sink_caps, i,
        worst, mean);
    gst_buffer_unref (out[i]);
    gst_buffer_unref (ref[i]);
  }
  gst_caps_unref (out_caps);
  gst_caps_unref (ref_caps);
  g_free (cpu_sink);
}

/* CUDA memory, without a GPU: the allocator GstCudaBufferPool takes is registered once the
 * element is (without it no CUDA pool can be configured: every push was not-negotiated on
 * an H200), and the CUDA caps offer only formats that GStreamer 1.22's CUDA allocator lays
 * out (gst_cuda_allocator_alloc asserts on others, AYUV and A420 among them) */
GST_START_TEST (test_cuda_allocator)
{
  static const gchar *allocatable[] = { "I420", "YV12", "I420_10LE", "Y42B",
    "I422_10LE", "I422_12LE", "NV12", "NV21", "P010_10LE", "P016_LE", "Y444",
    "Y444_16LE", "RGBP", "BGRP", "GBR", "GBRA", "BGRA", "RGBA", "RGBx", "BGRx",
    "ARGB", "ABGR", "RGB", "BGR", "BGR10A2_LE", "RGB10A2_LE", "YUY2", "UYVY"
  };
  GstElement *e;
  GstPad *src;
  GstCaps *caps;
  GstAllocator *allocator;
  guint i, j, k, n = 0;

  if (!plugin_has_cuda_memory ()) {
    g_printerr ("test_cuda_allocator: skipped, the plugin has no CUDA memory "
        "output\n");
    return;
  }
  e = make_decoder ();
  allocator = gst_allocator_find ("gst.cuda.memory");
  fail_unless (allocator != NULL, "GStreamer's CUDA allocator is not "
      "registered");
  gst_object_unref (allocator);
  gst_util_set_object_arg (G_OBJECT (e), "backend", "auto");
  src = gst_element_get_static_pad (e, "src");
  caps = gst_pad_query_caps (src, NULL);
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);
    const GValue *formats =
        gst_structure_get_value (gst_caps_get_structure (caps, i), "format");

    if (f == NULL || !gst_caps_features_contains (f, CUDA_FEATURE))
      continue;
    fail_unless (GST_VALUE_HOLDS_LIST (formats), "%" GST_PTR_FORMAT, caps);
    for (j = 0; j < gst_value_list_get_size (formats); j++, n++) {
      const gchar *format =
          g_value_get_string (gst_value_list_get_value (formats, j));
      gboolean found = FALSE;

      for (k = 0; k < G_N_ELEMENTS (allocatable); k++)
        found |= g_str_equal (format, allocatable[k]);
      fail_unless (found, "CUDA memory in format %s, which GStreamer's CUDA "
          "allocator does not lay out", format);
    }
  }
  fail_unless (n >= 9, "%u formats in CUDA memory: %" GST_PTR_FORMAT, n, caps);
  gst_caps_unref (caps);
  gst_object_unref (src);
  gst_object_unref (e);
}

GST_END_TEST;

/* built, no GPU: backend=cuda fails naming the cause; auto decodes on the CPU */
GST_START_TEST (test_cuda_no_device)
{
  GstElement *e;
  GstPad *src;
  GstCapsFeatures *first_features;
  GstBus *bus;
  GstBuffer *out[TAEF2_FRAMES];
  GstCaps *caps;
  gchar *model;
  gint i;

  switch (cuda_state ()) {
    case CUDA_NOT_BUILT:
      g_printerr ("test_cuda_no_device: skipped, the CUDA backend is not "
          "built (test_backend_not_built covers it)\n");
      return;
    case CUDA_PRESENT:
      g_printerr ("test_cuda_no_device: skipped, there is a CUDA device\n");
      return;
    default:
      break;
  }
  e = make_decoder ();
  bus = gst_bus_new ();
  model = shared_path (TAEF2_MODEL);
  gst_element_set_bus (e, bus);
  g_object_set (e, "model-file", model, NULL);
  gst_util_set_object_arg (G_OBJECT (e), "backend", "cuda");
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  expect_error (bus, "Could not start the cuda backend: no CUDA device");
  gst_bus_set_flushing (bus, TRUE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (bus);
  g_free (model);

  /* before it starts, auto may run on CUDA: CUDA memory first where it is built in */
  e = make_decoder ();
  src = gst_element_get_static_pad (e, "src");
  caps = gst_pad_query_caps (src, NULL);
  fail_unless_equals_int (caps_have_cuda (caps), plugin_has_cuda_memory ());
  first_features = gst_caps_get_features (caps, 0);
  fail_unless_equals_int (first_features != NULL
      && gst_caps_features_contains (first_features, CUDA_FEATURE),
      plugin_has_cuda_memory ());
  gst_caps_unref (caps);
  gst_object_unref (src);
  gst_object_unref (e);
  /* started, it runs on the CPU: system memory only */
  caps = taef2_decode ("backend=auto", NULL, out);
  fail_if (caps_have_cuda (caps));
  for (i = 0; i < TAEF2_FRAMES; i++)
    gst_buffer_unref (out[i]);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* ---- HIP --------------------------------------------------------------------------------- */

/* backend=hip with device-id 0 to the error it gives, which must start with `expected` */
static void
expect_hip_refused (const gchar * expected)
{
  GstElement *e = make_decoder ();
  GstBus *bus = gst_bus_new ();
  gchar *model = shared_path (TAEF2_MODEL);
  gchar *needle = g_strdup_printf ("Could not start the hip backend: %s",
      expected);

  gst_element_set_bus (e, bus);
  g_object_set (e, "model-file", model, NULL);
  gst_util_set_object_arg (G_OBJECT (e), "backend", "hip");
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  expect_error (bus, needle);
  gst_bus_set_flushing (bus, TRUE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (bus);
  g_free (needle);
  g_free (model);
}

/* precision=auto (the default) on the CPU: bf16 where oneDNN computes it natively (AVX512-BF16,
 * AMX) and faster than fp32 (test-precision checks the rule), else fp32, said in an INFO message
 * on the bus; its TAEF2 frames close to precision=fp32's
 * (test-precision measures how close), and (bf16) not equal to them */
GST_START_TEST (test_cpu_auto_precision)
{
  gchar *model = shared_path (TAEF2_MODEL);
  char err[512] = "";
  vae_backend_t *b = vae_backend_init (VAE_BACKEND_CPU, 0, VAE_PRECISION_AUTO,
      err, sizeof (err));
  const gboolean bf16 = b && vae_backend_precision (b) == VAE_PRECISION_BF16;
  /* (up to the bf16 speed the plugin's own copy of the backend measures) */
  const gchar *name = b ? vae_backend_name (b) : "?";
  const gchar *probed = strstr (name, "; bf16 convs ");
  gchar *want = g_strdup_printf ("precision=auto: %s on the %.*s",
      bf16 ? "bf16" : "fp32", probed ? (int) (probed - name) : (int) strlen (name), name);
  GstBuffer *ref[TAEF2_FRAMES], *out[TAEF2_FRAMES];
  GstCaps *ref_caps, *caps;
  GstElement *e;
  GstBus *bus;
  GstHarness *h;
  GstMessage *msg;
  GError *error = NULL;
  gint i, worst = 0;
  gdouble mean_sum = 0;

  fail_unless (b != NULL, "cpu backend: %s", err);
  g_clear_pointer (&b, vae_backend_free);
  ref_caps = taef2_decode ("", NULL, ref);      /* (path_harness: precision=fp32) */
  /* the bus set before the harness starts the element: the message comes at start */
  e = make_decoder ();
  bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  g_object_set (e, "model-file", model, NULL);
  gst_util_set_object_arg (G_OBJECT (e), "backend", "cpu");
  h = gst_harness_new_with_element (e, "sink", "src");
  caps = taef2_run (h, out);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_INFO);
  fail_unless (msg != NULL, "no INFO message saying which precision auto chose");
  gst_message_parse_info (msg, &error, NULL);
  fail_unless (g_str_has_prefix (error->message, want), "'%s', not '%s...'",
      error->message, want);
  g_clear_error (&error);
  gst_message_unref (msg);
  harness_teardown (h, bus);
  gst_object_unref (e);
  for (i = 0; i < TAEF2_FRAMES; i++) {
    gdouble mean;
    gint w = worst_level_frames (ref_caps, ref[i], caps, out[i], &mean);

    worst = MAX (worst, w);
    mean_sum += mean;
    gst_buffer_unref (ref[i]);
    gst_buffer_unref (out[i]);
  }
  GST_INFO ("precision=auto (%s) against fp32: %d levels at most, %.3f mean",
      want, worst, mean_sum / TAEF2_FRAMES);
  if (bf16)
    fail_unless (worst > 0 && worst <= 16 && mean_sum / TAEF2_FRAMES < 0.5,
        "bf16 frames %d levels from fp32's at most, %.3f on average (wanted 1 "
        "to 16, below 0.5)", worst, mean_sum / TAEF2_FRAMES);
  else
    fail_unless_equals_int (worst, 0);
  gst_caps_unref (ref_caps);
  gst_caps_unref (caps);
  g_free (want);
  g_free (model);
}

GST_END_TEST;

/* the HIP runtime missing (VAE_HIP_LIBRARY names a file that is not there, as on a machine
 * without ROCm): backend=hip is refused naming it, and auto decodes on the CPU, in system
 * memory, the frames of backend=cpu */
GST_START_TEST (test_hip_no_runtime)
{
  GstBuffer *cpu[TAEF2_FRAMES], *out[TAEF2_FRAMES];
  GstCaps *caps;
  gint i;

  if (!vae_backend_is_built (VAE_BACKEND_HIP)) {
    g_printerr ("test_hip_no_runtime: skipped, the HIP backend is not built "
        "(test_backend_not_built covers it)\n");
    return;
  }
  g_setenv ("VAE_HIP_LIBRARY", "/nonexistent/libamdhip64.so", TRUE);
  expect_hip_refused ("no HIP runtime: libamdhip64.so could not be loaded: "
      "/nonexistent/libamdhip64.so: cannot open shared object file");
  gst_caps_unref (taef2_decode ("backend=cpu", NULL, cpu));
  caps = taef2_decode ("backend=auto", NULL, out);
  fail_if (caps_have_cuda (caps));
  for (i = 0; i < TAEF2_FRAMES; i++) {
    GstMapInfo map;

    fail_unless (gst_buffer_map (cpu[i], &map, GST_MAP_READ));
    fail_unless (gst_buffer_get_size (out[i]) == map.size
        && gst_buffer_memcmp (out[i], 0, map.data, map.size) == 0,
        "frame %d of backend=auto is not backend=cpu's", i);
    gst_buffer_unmap (cpu[i], &map);
    gst_buffer_unref (cpu[i]);
    gst_buffer_unref (out[i]);
  }
  gst_caps_unref (caps);
  g_unsetenv ("VAE_HIP_LIBRARY");
}

GST_END_TEST;

/* without an AMD GPU (the runtime found or not), backend=hip is refused naming the cause */
GST_START_TEST (test_hip_no_device)
{
  char err[512] = "";
  vae_backend_t *b;

  if (!vae_backend_is_built (VAE_BACKEND_HIP)) {
    g_printerr ("test_hip_no_device: skipped, the HIP backend is not built\n");
    return;
  }
  b = vae_backend_init (VAE_BACKEND_HIP, 0, VAE_PRECISION_AUTO, err,
      sizeof (err));
  if (b != NULL) {
    g_printerr ("test_hip_no_device: skipped, there is a HIP device\n");
    vae_backend_free (b);
    return;
  }
  fail_unless (g_str_has_prefix (err, "no HIP "), "hip: %s", err);
  g_printerr ("test_hip_no_device: %s\n", err);
  expect_hip_refused (err);
}

GST_END_TEST;

/* CUDA memory out of the CUDA backend at fp32 (preferred when downstream takes anything),
 * every format it takes, through the pitched rows of GStreamer's CUDA pool: the CPU's frames within
 * a level */
GST_START_TEST (test_cuda_memory_output)
{
  const gchar *formats[] = { "RGB", "RGBA", "RGBx", "BGRx", "BGRA", "ARGB",
    "ABGR", "I420", "NV12"
  };
  guint f;

  if (!cuda_ready ("test_cuda_memory_output", TRUE))
    return;
  check_against_cpu ("backend=cuda precision=fp32", NULL, TRUE, 1, 0.1);
  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    gchar *sink = g_strdup_printf ("video/x-raw(" CUDA_FEATURE "), format=%s",
        formats[f]);

    check_against_cpu ("backend=cuda precision=fp32", sink, TRUE, 1, 0.1);
    g_free (sink);
  }
  /* auto picks the GPU */
  check_against_cpu ("backend=auto precision=fp32", NULL, TRUE, 1, 0.1);
}

GST_END_TEST;

/* system memory out of the CUDA backend: the CPU's frames within a level */
GST_START_TEST (test_cuda_system_memory)
{
  if (!cuda_ready ("test_cuda_system_memory", FALSE))
    return;
  check_against_cpu ("backend=cuda precision=fp32", "video/x-raw, format=RGB",
      FALSE, 1, 0.1);
  check_against_cpu ("backend=cuda precision=fp32", "video/x-raw, format=I420",
      FALSE, 1, 0.1);
}

GST_END_TEST;

/* a tiled decode (host frames) into CUDA memory: through the memory's host copy, equal to
 * the CPU's whole frame */
GST_START_TEST (test_cuda_tiled_memory)
{
  GstBuffer *whole, *tiled;
  GstCaps *caps, *rgb;
  GstBus *bus;
  GstHarness *h;
  gdouble mean;
  gint worst;

  if (!cuda_ready ("test_cuda_tiled_memory", TRUE))
    return;
  whole = decode_image ("kl_sd.safetensors", NULL, KL_SD_CAPS, "kl_sd.latent",
      56, 40);
  h = model_harness ("kl_sd.safetensors", "backend=cuda precision=fp32 "
      "tile-size=16", &bus);
  gst_harness_set_sink_caps_str (h, "video/x-raw(" CUDA_FEATURE "), "
      "format=RGB");
  gst_harness_set_src_caps_str (h, KL_SD_CAPS);
  fail_unless_equals_int (gst_harness_push (h, image_latent_buffer
          ("kl_sd.latent", 0)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  tiled = gst_harness_pull (h);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (caps_have_cuda (caps));
  fail_unless (buffer_is_cuda (tiled));
  rgb = gst_caps_from_string ("video/x-raw, format=RGB, width=56, height=40");
  worst = worst_level_frames (caps, tiled, rgb, whole, &mean);
  fail_unless (worst <= 1, "tiled CUDA frame differs from the cpu's by %d",
      worst);
  harness_teardown (h, bus);
  gst_caps_unref (caps);
  gst_caps_unref (rgb);
  gst_buffer_unref (tiled);
  gst_buffer_unref (whole);
}

GST_END_TEST;

/* the GstCudaContext object in element e's "gst.cuda.context" (NULL: none) */
static GObject *
cuda_context_of (GstElement * e)
{
  GstContext *c = gst_element_get_context (e, "gst.cuda.context");
  const GValue *v;
  GObject *o = NULL;

  if (c == NULL)
    return NULL;
  v = gst_structure_get_value (gst_context_get_structure (c),
      "gst.cuda.context");
  if (v != NULL && G_VALUE_HOLDS_OBJECT (v))
    o = g_value_get_object (v);
  gst_context_unref (c);
  return o;
}

/* each of frames[] (CUDA memory, taking caps) within a level of the CPU's */
static void
check_frames_cuda (const gchar * what, GstCaps * caps,
    GstBuffer * frames[TAEF2_FRAMES], GstCaps * ref_caps,
    GstBuffer * ref[TAEF2_FRAMES])
{
  gint i;

  fail_unless (caps_have_cuda (caps), "%s: no CUDA memory caps", what);
  for (i = 0; i < TAEF2_FRAMES; i++) {
    gdouble mean;
    gint worst;

    fail_unless (buffer_is_cuda (frames[i]), "%s: frame %d not in CUDA memory",
        what, i);
    worst = worst_level_frames (caps, frames[i], ref_caps, ref[i], &mean);
    fail_unless (worst <= 1 && mean <= 0.1, "%s: frame %d differs from the "
        "cpu's by %d levels (mean %.3f)", what, i, worst, mean);
  }
}

/* a TAEF2 decoder on the GPU at fp32 giving RGBA in CUDA memory, and the CPU's frames of the
 * same latents in *ref (and their caps in *ref_caps) */
static GstHarness *
taef2_cuda_harness (const gchar * model, GstBus ** bus, GstCaps ** ref_caps,
    GstBuffer * ref[TAEF2_FRAMES])
{
  GstHarness *h = path_harness (model, "backend=cuda precision=fp32", bus);

  *ref_caps = taef2_decode ("backend=cpu", "video/x-raw, format=RGBA", ref);
  gst_harness_set_sink_caps_str (h, "video/x-raw(" CUDA_FEATURE "), "
      "format=RGBA");
  return h;
}

/* two decoders on one device at once, the second given the first's GstCudaContext (as a
 * pipeline shares it through GstContext): the same context object in both, their latent
 * frames pushed in turn, and each decoder's frames the CPU's */
GST_START_TEST (test_cuda_two_decoders)
{
  GstBuffer *ref[TAEF2_FRAMES], *a[TAEF2_FRAMES], *b[TAEF2_FRAMES];
  GstCaps *ref_caps, *caps_a, *caps_b;
  GstBus *bus_a, *bus_b;
  GstHarness *ha, *hb;
  GstElement *e;
  GstContext *shared;
  gchar *model;
  gint i;

  if (!cuda_ready ("test_cuda_two_decoders", TRUE))
    return;
  model = shared_path (TAEF2_MODEL);
  ha = taef2_cuda_harness (model, &bus_a, &ref_caps, ref);
  gst_harness_set_src_caps_str (ha, TAEF2_CAPS);
  fail_unless (cuda_context_of (ha->element) != NULL,
      "the first decoder has no gst.cuda.context");
  shared = gst_element_get_context (ha->element, "gst.cuda.context");

  /* the second one gets it before it starts */
  e = make_decoder ();
  g_object_set (e, "model-file", model, NULL);
  gst_util_set_object_arg (G_OBJECT (e), "backend", "cuda");
  gst_util_set_object_arg (G_OBJECT (e), "precision", "fp32");
  gst_element_set_context (e, shared);
  bus_b = gst_bus_new ();
  gst_element_set_bus (e, bus_b);
  hb = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  gst_harness_set_sink_caps_str (hb, "video/x-raw(" CUDA_FEATURE "), "
      "format=RGBA");
  gst_harness_set_src_caps_str (hb, TAEF2_CAPS);
  fail_unless (cuda_context_of (hb->element) == cuda_context_of (ha->element),
      "the second decoder did not take the first's GstCudaContext");

  for (i = 0; i < TAEF2_FRAMES; i++) {
    fail_unless_equals_int (gst_harness_push (ha, taef2_latent (i)),
        GST_FLOW_OK);
    fail_unless_equals_int (gst_harness_push (hb, taef2_latent (i)),
        GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (ha, gst_event_new_eos ()));
  fail_unless (gst_harness_push_event (hb, gst_event_new_eos ()));
  caps_a = taef2_pull (ha, a);
  caps_b = taef2_pull (hb, b);
  check_frames_cuda ("first decoder", caps_a, a, ref_caps, ref);
  check_frames_cuda ("second decoder", caps_b, b, ref_caps, ref);
  for (i = 0; i < TAEF2_FRAMES; i++) {
    gst_buffer_unref (a[i]);
    gst_buffer_unref (b[i]);
    gst_buffer_unref (ref[i]);
  }
  gst_caps_unref (caps_a);
  gst_caps_unref (caps_b);
  gst_caps_unref (ref_caps);
  gst_context_unref (shared);
  harness_teardown (hb, bus_b);
  harness_teardown (ha, bus_a);
  g_free (model);
}

GST_END_TEST;

/* decoded, then READY and NULL and back to PLAYING, the same stream decoded again each time
 * (the harness's source flushed of its EOS and starting a new stream: a state change clears the
 * element's pads), the CPU's frames every time: on the CPU the same bytes, on the GPU (cuda)
 * within a level, in CUDA memory */
static void
check_state_changes (gboolean cuda)
{
  const GstState downs[] = { GST_STATE_READY, GST_STATE_NULL, GST_STATE_READY };
  GstBuffer *ref[TAEF2_FRAMES], *out[TAEF2_FRAMES];
  GstCaps *ref_caps, *caps;
  GstBus *bus;
  gchar *model = shared_path (TAEF2_MODEL);
  GstHarness *h = path_harness (model, cuda ? "backend=cuda precision=fp32" :
      NULL, &bus);
  guint k;
  gint i;

  ref_caps = taef2_decode ("backend=cpu", "video/x-raw, format=RGBA", ref);
  gst_harness_set_sink_caps_str (h, cuda ? "video/x-raw(" CUDA_FEATURE "), "
      "format=RGBA" : "video/x-raw, format=RGBA");
  for (k = 0; k <= G_N_ELEMENTS (downs); k++) {
    gchar what[64];

    if (k > 0) {
      fail_unless (gst_element_set_state (h->element, downs[k - 1]) !=
          GST_STATE_CHANGE_FAILURE);
      fail_unless_equals_int (gst_element_set_state (h->element,
              GST_STATE_PLAYING), GST_STATE_CHANGE_SUCCESS);
      fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
      fail_unless (gst_harness_push_event (h,
              gst_event_new_flush_stop (TRUE)));
      fail_unless (gst_harness_push_event (h,
              gst_event_new_stream_start ("again")));
    }
    g_snprintf (what, sizeof (what), "decode %u (after %s)", k,
        k ? gst_element_state_get_name (downs[k - 1]) : "the start");
    caps = taef2_run (h, out);
    fail_unless (caps_have_cuda (caps) == cuda, "%s: CUDA memory caps %d",
        what, caps_have_cuda (caps));
    for (i = 0; i < TAEF2_FRAMES; i++) {
      gdouble mean;
      gint worst;

      fail_unless (buffer_is_cuda (out[i]) == cuda, "%s: frame %d in CUDA "
          "memory %d", what, i, buffer_is_cuda (out[i]));
      worst = worst_level_frames (caps, out[i], ref_caps, ref[i], &mean);
      fail_unless (worst <= (cuda ? 1 : 0) && mean <= 0.1, "%s: frame %d "
          "differs from the CPU's first by %d levels (mean %.3f)", what, i,
          worst, mean);
      gst_buffer_unref (out[i]);
    }
    gst_caps_unref (caps);
  }
  for (i = 0; i < TAEF2_FRAMES; i++)
    gst_buffer_unref (ref[i]);
  gst_caps_unref (ref_caps);
  harness_teardown (h, bus);
  g_free (model);
}

GST_START_TEST (test_state_changes)
{
  check_state_changes (FALSE);
}

GST_END_TEST;

GST_START_TEST (test_cuda_state_changes)
{
  if (cuda_ready ("test_cuda_state_changes", TRUE))
    check_state_changes (TRUE);
}

GST_END_TEST;

/* the vaedecode INFO lines, to read the precision in effect */
static GMutex log_lock;
static GString *log_text;

static void
capture_log (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  if (level > GST_LEVEL_INFO
      || g_strcmp0 (gst_debug_category_get_name (category), "vaedecode") != 0)
    return;
  g_mutex_lock (&log_lock);
  g_string_append_printf (log_text, "%s\n", gst_debug_message_get (message));
  g_mutex_unlock (&log_lock);
}

/* each precision reaches the backend: what the backend gives for it is in effect, or the
 * element refuses with the backend's reason; auto is bf16 where the GPU has bf16 (compute
 * capability 8.0 and up), else fp16, and its frames stay within a few levels of the CPU's */
GST_START_TEST (test_cuda_precision)
{
  const gchar *nicks[] = { "auto", "fp32", "tf32", "fp16", "bf16" };
  gchar *model;
  gboolean has_bf16 = FALSE;
  const gchar *auto_name = NULL;
  guint p;

  if (!cuda_ready ("test_cuda_precision", FALSE))
    return;
  model = shared_path (TAEF2_MODEL);
  log_text = g_string_new (NULL);
  gst_debug_set_threshold_for_name ("vaedecode", GST_LEVEL_INFO);
  gst_debug_add_log_function (capture_log, NULL, NULL);
  for (p = 0; p < G_N_ELEMENTS (nicks); p++) {
    GstElement *e = make_decoder ();
    GstBus *bus = gst_bus_new ();
    char err[512] = "";
    vae_backend_t *b = vae_backend_init (VAE_BACKEND_CUDA, -1,
        (enum vae_precision) p, err, sizeof (err));
    const gchar *want = b ? vae_precision_name (vae_backend_precision (b)) :
        NULL;

    fail_unless_equals_string (vae_precision_name ((enum vae_precision) p),
        nicks[p]);
    if (p == VAE_PRECISION_AUTO)
      auto_name = want;
    if (p == VAE_PRECISION_BF16)
      has_bf16 = b != NULL;
    g_clear_pointer (&b, vae_backend_free);
    gst_element_set_bus (e, bus);
    g_object_set (e, "model-file", model, NULL);
    gst_util_set_object_arg (G_OBJECT (e), "backend", "cuda");
    gst_util_set_object_arg (G_OBJECT (e), "precision", nicks[p]);
    g_mutex_lock (&log_lock);
    g_string_truncate (log_text, 0);
    g_mutex_unlock (&log_lock);
    if (want != NULL) {
      gchar *needle = g_strdup_printf ("precision %s,", want);

      fail_unless (p == VAE_PRECISION_AUTO || g_str_equal (want, nicks[p]),
          "precision %s asked, the backend gives %s", nicks[p], want);
      fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
          GST_STATE_CHANGE_SUCCESS);
      g_mutex_lock (&log_lock);
      fail_unless (strstr (log_text->str, needle) != NULL, "precision=%s: "
          "'%s' not logged:\n%s", nicks[p], needle, log_text->str);
      g_mutex_unlock (&log_lock);
      g_free (needle);
    } else {
      fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
          GST_STATE_CHANGE_FAILURE);
      expect_error (bus, err);
    }
    gst_bus_set_flushing (bus, TRUE);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_object_unref (e);
    gst_object_unref (bus);
  }
  gst_debug_remove_log_function (capture_log);
  g_string_free (log_text, TRUE);
  g_free (model);

  fail_unless (auto_name != NULL);
  fail_unless_equals_string (auto_name, has_bf16 ? "bf16" : "fp16");
  /* bf16 / fp16 storage: a few levels at most, much less on average */
  check_against_cpu ("backend=cuda", "video/x-raw(" CUDA_FEATURE "), "
      "format=RGB", TRUE, 12, 1.5);
}

GST_END_TEST;

/* the CPU backend never offers CUDA memory, before start or after, and fails to negotiate
 * with a downstream that takes nothing else */
GST_START_TEST (test_cpu_no_cuda_caps)
{
  GstElement *e = make_decoder ();
  GstPad *src = gst_element_get_static_pad (e, "src");
  GstCaps *caps;
  GstBus *bus;
  GstHarness *h;
  GstBuffer *buf;

  gst_util_set_object_arg (G_OBJECT (e), "backend", "cpu");
  caps = gst_pad_query_caps (src, NULL);
  fail_if (gst_caps_is_empty (caps));
  fail_if (caps_have_cuda (caps), "%" GST_PTR_FORMAT, caps);
  gst_caps_unref (caps);
  gst_object_unref (src);
  gst_object_unref (e);

  h = model_harness ("kl_sd.safetensors", "backend=cpu", &bus);
  gst_harness_set_src_caps_str (h, KL_SD_CAPS);
  caps = gst_pad_peer_query_caps (h->sinkpad, NULL);
  fail_if (gst_caps_is_empty (caps));
  fail_if (caps_have_cuda (caps), "%" GST_PTR_FORMAT, caps);
  gst_caps_unref (caps);
  fail_unless_equals_int (gst_harness_push (h, image_latent_buffer
          ("kl_sd.latent", 0)), GST_FLOW_OK);
  buf = gst_harness_pull (h);
  fail_if (buffer_is_cuda (buf));
  gst_buffer_unref (buf);
  harness_teardown (h, bus);

  h = model_harness ("kl_sd.safetensors", "backend=cpu", &bus);
  gst_harness_set_sink_caps_str (h, "video/x-raw(" CUDA_FEATURE "), "
      "format=RGB");
  gst_harness_set_src_caps_str (h, KL_SD_CAPS);
  fail_unless_equals_int (gst_harness_push (h, image_latent_buffer
          ("kl_sd.latent", 0)), GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "Could not negotiate");
  harness_teardown (h, bus);
}

GST_END_TEST;

/* ---- latentparse ------------------------------------------------------------------------ */

/* a safetensors file with one tensor; data is its raw bytes */
static GBytes *
make_safetensors (const gchar * name, const gchar * dtype, const gchar * shape,
    gsize nbytes, const guint8 * data)
{
  gchar *hdr = g_strdup_printf ("{\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],"
      "\"data_offsets\":[0,%" G_GSIZE_FORMAT "]}}", name, dtype, shape, nbytes);
  guint64 len = strlen (hdr);
  GByteArray *a = g_byte_array_new ();

  g_byte_array_append (a, (guint8 *) & len, 8);
  g_byte_array_append (a, (guint8 *) hdr, len);
  if (nbytes)
    g_byte_array_append (a, data, nbytes);
  g_free (hdr);
  return g_byte_array_free_to_bytes (a);
}

/* push bytes into latentparse in pieces of `piece` bytes, then EOS */
static GstHarness *
parse_bytes (GBytes * bytes, gsize piece, const gchar * props, GstBus ** bus,
    gboolean * eos_ok)
{
  gchar *desc = g_strdup_printf ("latentparse %s", props ? props : "");
  GstHarness *h = new_harness (desc);
  gsize size, off;
  const guint8 *data = g_bytes_get_data (bytes, &size);

  *bus = gst_bus_new ();
  gst_element_set_bus (h->element, *bus);
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  for (off = 0; off < size; off += piece)
    gst_harness_push (h, gst_buffer_new_memdup (data + off, MIN (piece,
                size - off)));
  *eos_ok = gst_harness_push_event (h, gst_event_new_eos ());
  g_free (desc);
  return h;
}

GST_START_TEST (test_parse_comfy_latent)
{
  gchar *path = shared_path ("reference/taef2/small.latent");
  gchar *contents;
  gsize len;
  GBytes *bytes;
  GstBus *bus;
  gboolean eos_ok;
  GstHarness *h;
  GstCaps *caps, *want;
  GstBuffer *out;
  gint64 shape[5];
  gfloat *lat = read_tensor (path, "latent_tensor", shape);
  gint i;

  fail_unless (g_file_get_contents (path, &contents, &len, NULL));
  bytes = g_bytes_new_take (contents, len);
  h = parse_bytes (bytes, 4093, "framerate=24/1", &bus, &eos_ok);
  fail_unless (eos_ok);
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  caps = gst_pad_get_current_caps (h->sinkpad);
  want = gst_caps_from_string ("video/x-latent, type=float32, channels=32, "
      "width=24, height=16, framerate=24/1, video=false");
  fail_unless (gst_caps_is_equal (caps, want));
  gst_caps_unref (want);
  gst_caps_unref (caps);
  for (i = 0; i < 2; i++) {
    out = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out),
        gst_util_uint64_scale (i, GST_SECOND, 24));
    fail_unless (gst_buffer_memcmp (out, 0, lat + i * 32 * 16 * 24,
            32 * 16 * 24 * 4) == 0);
    gst_buffer_unref (out);
  }
  harness_teardown (h, bus);
  g_bytes_unref (bytes);
  g_free (lat);
  g_free (path);
}

GST_END_TEST;

/* [B, C, T, H, W] in F16: frames come out batch by batch, in time order, as [C, H, W],
 * stamped by the causal rule (latent 0 of a video: 1 frame; later ones frames-per-latent),
 * each batch item after the first a new video (DISCONT) whose timestamps run on */
GST_START_TEST (test_parse_5d)
{
  const gint B = 2, C = 3, T = 4, H = 2, W = 3;
  const guint fpls[] = { 4, 1, 3 };
  guint16 data[2 * 3 * 4 * 2 * 3];
  GBytes *bytes;
  gint b, c, t, p;
  guint f;

  for (p = 0; p < (gint) G_N_ELEMENTS (data); p++)
    data[p] = p;
  bytes = make_safetensors ("latent_tensor", "F16", "2,3,4,2,3",
      sizeof (data), (guint8 *) data);
  for (f = 0; f < G_N_ELEMENTS (fpls); f++) {
    /* 4 is the default */
    gchar *props = f ? g_strdup_printf ("frames-per-latent=%u", fpls[f]) : NULL;
    guint64 frame = 0;
    GstBus *bus;
    gboolean eos_ok;
    GstHarness *h = parse_bytes (bytes, 7, props, &bus, &eos_ok);

    fail_unless (eos_ok);
    fail_unless_equals_int (gst_harness_buffers_received (h), B * T);
    for (b = 0; b < B; b++) {
      for (t = 0; t < T; t++) {
        GstBuffer *out = gst_harness_pull (h);
        const guint m = t == 0 ? 1 : fpls[f];
        GstMapInfo map;

        gst_buffer_map (out, &map, GST_MAP_READ);
        fail_unless_equals_int (map.size, C * H * W * 2);
        for (c = 0; c < C; c++)
          for (p = 0; p < H * W; p++)
            fail_unless_equals_int (((guint16 *) map.data)[c * H * W + p],
                (((b * C + c) * T + t) * H * W) + p);
        gst_buffer_unmap (out, &map);
        fail_unless_equals_uint64 (GST_BUFFER_PTS (out),
            gst_util_uint64_scale (frame, GST_SECOND, 16));
        fail_unless_equals_uint64 (GST_BUFFER_DURATION (out),
            gst_util_uint64_scale (frame + m, GST_SECOND, 16) -
            GST_BUFFER_PTS (out));
        fail_unless_equals_uint64 (GST_BUFFER_OFFSET (out), frame);
        fail_unless (GST_BUFFER_FLAG_IS_SET (out, GST_BUFFER_FLAG_DISCONT) ==
            (b > 0 && t == 0));
        frame += m;
        gst_buffer_unref (out);
      }
    }
    fail_unless_equals_uint64 (frame, B * (1 + fpls[f] * (T - 1)));
    harness_teardown (h, bus);
    g_free (props);
  }
  g_bytes_unref (bytes);
}

GST_END_TEST;

/* a 5-D tensor of one latent frame per item ([1, 64, 1, 5, 7], diffusers' layout of Qwen-Image
 * 2.1's latents) holds images, which an image decoder takes: the same frame as the 4-D tensor's */
GST_START_TEST (test_parse_5d_images)
{
  gchar *path = data_path ("qwen21_b4.5d.latent");
  gchar *model = data_path ("qwen21_b4.orig.safetensors");
  gchar *desc = g_strdup_printf ("latentparse ! vaedecode backend=cpu "
      "precision=fp32 model-file=%s", model);
  gchar *contents;
  gsize len;
  GstHarness *h = new_harness (desc);
  GstBuffer *out;
  GstVideoFormat format;
  GstBuffer *four = qwen21_frame (NULL, &format);

  fail_unless (g_file_get_contents (path, &contents, &len, NULL));
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  gst_harness_set_sink_caps_str (h, "video/x-raw, format=RGBA");
  fail_unless_equals_int (gst_harness_push (h,
          gst_buffer_new_wrapped (contents, len)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  out = gst_harness_pull (h);
  fail_unless_equals_int (gst_buffer_get_size (out),
      gst_buffer_get_size (four));
  {
    GstMapInfo map;

    gst_buffer_map (four, &map, GST_MAP_READ);
    fail_unless (gst_buffer_memcmp (out, 0, map.data, map.size) == 0);
    gst_buffer_unmap (four, &map);
  }
  gst_buffer_unref (out);
  gst_buffer_unref (four);
  gst_harness_teardown (h);
  g_free (desc);
  g_free (model);
  g_free (path);
}

GST_END_TEST;

/* the real Wan 2.1 latents, [1, 16, 16, 40, 64] BF16: 16 latent frames stamped for 61 frames
 * at 16 fps (latent 0: frame 0; latent k: frames 4k-3 .. 4k) */
GST_START_TEST (test_parse_wan_latent)
{
  gchar *path = shared_path ("media/wan21_cheesecake.latent");
  gchar *contents;
  gsize len;
  GBytes *bytes;
  GstBus *bus;
  gboolean eos_ok;
  GstHarness *h;
  GstCaps *caps, *want;
  gint k;

  fail_unless (g_file_get_contents (path, &contents, &len, NULL));
  bytes = g_bytes_new_take (contents, len);
  h = parse_bytes (bytes, 65536, NULL, &bus, &eos_ok);
  fail_unless (eos_ok);
  fail_unless_equals_int (gst_harness_buffers_received (h), 16);
  caps = gst_pad_get_current_caps (h->sinkpad);
  want = gst_caps_from_string ("video/x-latent, type=bfloat16, channels=16, "
      "width=64, height=40, framerate=16/1, video=true");
  fail_unless (gst_caps_is_equal (caps, want), "caps %" GST_PTR_FORMAT, caps);
  gst_caps_unref (want);
  gst_caps_unref (caps);
  for (k = 0; k < 16; k++) {
    GstBuffer *out = gst_harness_pull (h);
    const guint64 start = k == 0 ? 0 : 4 * k - 3, n = k == 0 ? 1 : 4;

    fail_unless_equals_int (gst_buffer_get_size (out), 16 * 40 * 64 * 2);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out),
        gst_util_uint64_scale (start, GST_SECOND, 16));
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (out),
        n * GST_SECOND / 16);
    fail_if (GST_BUFFER_FLAG_IS_SET (out, GST_BUFFER_FLAG_DISCONT));
    gst_buffer_unref (out);
  }
  harness_teardown (h, bus);
  g_bytes_unref (bytes);
  g_free (path);
}

GST_END_TEST;

static void
expect_parse_error (GBytes * bytes, const gchar * props, const gchar * needle,
    guint frames)
{
  GstBus *bus;
  gboolean eos_ok;
  GstHarness *h = parse_bytes (bytes, 5, props, &bus, &eos_ok);

  expect_error (bus, needle);
  fail_unless_equals_int (gst_harness_buffers_received (h), frames);
  harness_teardown (h, bus);
  g_bytes_unref (bytes);
}

GST_START_TEST (test_parse_errors)
{
  guint8 zeros[4 * 2 * 3 * 4 * 2] = { 0 };
  GBytes *good = make_safetensors ("latent_tensor", "F32", "2,4,3,2",
      sizeof (zeros), zeros);
  gsize size;
  const guint8 *d = g_bytes_get_data (good, &size);
  guint8 *big;

  expect_parse_error (g_bytes_new (NULL, 0), NULL, "empty", 0);
  expect_parse_error (g_bytes_new (d, 5), NULL, "shorter than the 8-byte", 0);
  expect_parse_error (g_bytes_new (d, 30), NULL, "inside the", 0);
  /* one frame of two arrives: it is pushed, then a warning and the EOS, no error */
  {
    GstBus *bus;
    gboolean eos_ok;
    GBytes *cut = g_bytes_new (d, size - 10);
    GstHarness *h = parse_bytes (cut, 5, NULL, &bus, &eos_ok);

    expect_warning (bus, "Truncated latent file: tensor 'latent_tensor' "
        "needs 192 bytes but the stream ended after 182 of them; 1 frames "
        "were pushed.");
    fail_if (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) != NULL);
    fail_unless_equals_int (gst_harness_buffers_received (h), 1);
    fail_unless (eos_ok);
    harness_teardown (h, bus);
    g_bytes_unref (cut);
  }
  expect_parse_error (g_bytes_new_static ("\x10\0\0\0\0\0\0\0[not a header]  ",
          24), NULL, "Malformed latent file header", 0);
  expect_parse_error (g_bytes_ref (good), "tensor-name=samples",
      "No tensor named 'samples' in the latent file (it has 1: "
      "'latent_tensor')", 0);
  expect_parse_error (make_safetensors ("latent_tensor", "I32", "1,4,3,2",
          96, zeros), NULL, "is I32; latents must be F32, F16 or BF16", 0);
  expect_parse_error (make_safetensors ("latent_tensor", "F32", "4,3,2", 96,
          zeros), NULL, "has 3 dimensions", 0);
  expect_parse_error (make_safetensors ("latent_tensor", "F32", "1,4,0,2", 0,
          zeros), NULL, "is empty", 0);
  big = g_malloc0 (36000);
  expect_parse_error (make_safetensors ("latent_tensor", "F32", "1,1,1,9000",
          36000, big), NULL, "absurd size", 0);
  g_free (big);
  g_bytes_unref (good);
}

GST_END_TEST;

/* GStreamer 1.22 knows "MIT/X11", not "MIT" (which it logs as an unknown license) */
GST_START_TEST (test_plugin_license)
{
  GstPlugin *plugin;

  require_elements ();
  plugin = gst_registry_find_plugin (gst_registry_get (), "vaedecode");
  fail_unless (plugin != NULL);
  fail_unless_equals_string (gst_plugin_get_license (plugin), "MIT/X11");
  gst_object_unref (plugin);
}

GST_END_TEST;

/* what start() reads cannot change while running: the change is refused with a warning on the
 * bus, the getter keeps the value in use, and decoding goes on with it; back in READY the
 * property changes again */
GST_START_TEST (test_running_properties)
{
  GstBus *bus;
  GstHarness *h = decoder_harness (NULL, &bus);
  gchar *model = data_path (FIXTURE ".orig.safetensors");
  gchar *other = data_path ("kl_sd.safetensors");
  GstElement *e = gst_harness_find_element (h, "vaedecode");
  gchar *now = NULL;
  gint precision;

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));

  g_object_set (e, "model-file", other, NULL);
  expect_warning (bus, "The model-file property cannot change while the "
      "decoder runs");
  g_object_get (e, "model-file", &now, NULL);
  fail_unless_equals_string (now, model);
  g_free (now);
  gst_util_set_object_arg (G_OBJECT (e), "precision", "fp16");
  expect_warning (bus, "The precision property cannot change");
  g_object_get (e, "precision", &precision, NULL);
  fail_unless_equals_int (precision, 1);        /* fp32, as it started */
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (1)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));

  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  g_object_set (e, "model-file", other, NULL);
  g_object_get (e, "model-file", &now, NULL);
  fail_unless_equals_string (now, other);
  fail_if (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) != NULL,
      "a warning in READY");
  g_free (now);
  g_free (model);
  g_free (other);
  gst_object_unref (e);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* a precision the backend does not compute says so on the bus, not only in the log */
GST_START_TEST (test_precision_warning)
{
  gchar *props = g_strdup_printf ("model-file=%s/" FIXTURE ".orig.safetensors "
      "backend=cpu precision=fp16", g_getenv ("VAE_TEST_DATA"));

  expect_start_message (props, FALSE, GST_MESSAGE_WARNING,
      "fp16 precision was asked for, but the cpu");
  g_free (props);
}

GST_END_TEST;

/* ---- timestamps, end of stream, interruption, properties (issue 14) ---------------------- */

/* push latent i of the image fixture with this PTS (NONE: none) */
static void
push_at (GstHarness * h, gint i, GstClockTime pts)
{
  GstBuffer *buf = latent_buffer (i);

  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DURATION (buf) = GST_CLOCK_TIME_NONE;
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
}

/* pull the next frame: it must be at frame n of a 16/1 stream from base, one frame long,
 * and DISCONT or not as said */
static void
expect_frame_at (GstHarness * h, GstClockTime base, guint64 n,
    gboolean discont)
{
  GstBuffer *out = gst_harness_pull (h);

  fail_unless (out != NULL);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), base + frame_time (n));
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out),
      frame_time (n + 1) - frame_time (n));
  fail_unless (GST_BUFFER_FLAG_IS_SET (out, GST_BUFFER_FLAG_DISCONT) ==
      discont, "frame %" G_GUINT64_FORMAT " DISCONT is %d", n, !discont);
  gst_buffer_unref (out);
}

/* the frames run on from the first latent's PTS at the caps' rate: jitter of less than a frame
 * and latents that come early (arrival times) do not move them; a jump of more than a frame
 * is a discontinuity: the frames go on from the new PTS, the first one DISCONT */
GST_START_TEST (test_timestamps_from_rate)
{
  const GstClockTime base = 3 * GST_SECOND;
  const gint64 jitter[6] = { 0, 20, -25, 30, -40, 55 };     /* ms, less than 62.5 */
  GstBus *bus;
  GstHarness *h = decoder_harness (NULL, &bus);
  gint i;

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  for (i = 0; i < 6; i++) {
    push_at (h, i, base + frame_time (i) + jitter[i] * GST_MSECOND);
    expect_frame_at (h, base, i, FALSE);
  }
  /* three latents that arrive together, early */
  for (i = 6; i < 9; i++) {
    push_at (h, i, base + frame_time (5) + i * GST_MSECOND);
    expect_frame_at (h, base, i, FALSE);
  }
  /* a latent without a PTS takes the next frame's */
  push_at (h, 9, GST_CLOCK_TIME_NONE);
  expect_frame_at (h, base, 9, FALSE);
  /* 2 s later: the frames go on from there */
  push_at (h, 10, base + 2 * GST_SECOND + frame_time (10));
  expect_frame_at (h, base + 2 * GST_SECOND, 10, TRUE);
  push_at (h, 11, base + 2 * GST_SECOND + frame_time (11) - 10 * GST_MSECOND);
  expect_frame_at (h, base + 2 * GST_SECOND, 11, FALSE);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* latents without PTS start at the segment's start; a new segment starts the frames afresh,
 * the same segment again changes nothing */
GST_START_TEST (test_timestamps_segment_start)
{
  GstBus *bus;
  GstHarness *h = decoder_harness (NULL, &bus);
  GstSegment segment;
  gint i;

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  segment.start = segment.time = 10 * GST_SECOND;
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  for (i = 0; i < 3; i++) {
    push_at (h, i, GST_CLOCK_TIME_NONE);
    expect_frame_at (h, 10 * GST_SECOND, i, FALSE);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  push_at (h, 3, GST_CLOCK_TIME_NONE);
  expect_frame_at (h, 10 * GST_SECOND, 3, FALSE);
  segment.start = segment.time = 20 * GST_SECOND;
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  push_at (h, 4, GST_CLOCK_TIME_NONE);
  expect_frame_at (h, 20 * GST_SECOND, 0, FALSE);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* an EOS after 2 of the 4 latent frames upstream announced (latent-totals): the queued one is
 * decoded, all 5 frames are pushed, then a WARNING names what is missing (8 of 13 frames), no
 * ERROR; the progress messages carry the totals. The whole input: no warning. */
GST_START_TEST (test_early_eos)
{
  guint n;

  for (n = 2; n <= 4; n += 2) {
    GstBus *bus;
    GstHarness *h = model_harness (WAN_MODEL, "chunk-frames=2", &bus);
    GstMessage *msg, *last = NULL;
    const GstStructure *s;
    gboolean warned = FALSE;
    guint64 v;
    guint t;

    gst_harness_set_src_caps_str (h, WAN_CAPS);
    fail_unless (gst_harness_push_event (h, gst_event_new_custom
            (GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new
                ("latent-totals", "latent-frames", G_TYPE_UINT64,
                    G_GUINT64_CONSTANT (4), "frames", G_TYPE_UINT64,
                    G_GUINT64_CONSTANT (13), NULL))));
    for (t = 0; t < n; t++)
      fail_unless_equals_int (gst_harness_push (h,
              video_latent_buffer ("wan21_b4.latent", t, TRUE)), GST_FLOW_OK);
    fail_unless_equals_int (gst_harness_buffers_received (h), n == 2 ? 1 : 9);
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    fail_unless_equals_int (gst_harness_buffers_received (h),
        1 + 4 * (n - 1));
    /* the last progress message, and the warning */
    while ((msg = gst_bus_pop (bus)) != NULL) {
      GError *error = NULL;

      fail_if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR);
      if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
        gst_message_parse_warning (msg, &error, NULL);
        fail_unless (n == 2, "a warning: %s", error->message);
        fail_unless_equals_string (error->message, "The stream ended early: "
            "2 of 4 latent frames came, so 8 of 13 frames are missing; the 5 "
            "frames decoded were pushed.");
        warned = TRUE;
        g_clear_error (&error);
      }
      if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT) {
        gst_clear_message (&last);
        last = gst_message_ref (msg);
      }
      gst_message_unref (msg);
    }
    fail_unless (warned == (n == 2));
    fail_unless (last != NULL);
    s = gst_message_get_structure (last);
    fail_unless (gst_structure_get_uint64 (s, "latent-frames-total", &v));
    fail_unless_equals_uint64 (v, 4);
    fail_unless (gst_structure_get_uint64 (s, "frames-total", &v));
    fail_unless_equals_uint64 (v, 13);
    fail_unless (gst_structure_get_uint64 (s, "latent-frames-done", &v));
    fail_unless_equals_uint64 (v, n);
    fail_unless (gst_structure_get_uint64 (s, "frames-done", &v));
    fail_unless_equals_uint64 (v, 1 + 4 * (n - 1));
    gst_message_unref (last);
    harness_teardown (h, bus);
  }
}

GST_END_TEST;

/* a [1, 16, T, 5, 7] F32 latent file for the Wan fixture (its 4 latent frames over and over),
 * written to a temporary file; returns the path */
static gchar *
write_wan_latent_file (gint T)
{
  gchar *path = data_path ("wan21_b4.latent");
  gint64 shape[5];
  gfloat *lat = read_tensor (path, "latent_tensor", shape);
  const gsize plane = 5 * 7;
  gfloat *data = g_new (gfloat, 16 * T * plane);
  gchar *dims = g_strdup_printf ("1,16,%d,5,7", T);
  GBytes *bytes;
  gchar *out;
  gint fd, c, t;

  for (c = 0; c < 16; c++)
    for (t = 0; t < T; t++)
      memcpy (data + (c * T + t) * plane, lat + (c * shape[2] + t % 4) * plane,
          plane * sizeof (gfloat));
  bytes = make_safetensors ("latent_tensor", "F32", dims,
      16 * T * plane * sizeof (gfloat), (guint8 *) data);
  fd = g_file_open_tmp ("vae-wan-XXXXXX.latent", &out, NULL);
  fail_unless (fd >= 0);
  close (fd);
  fail_unless (g_file_set_contents (out, g_bytes_get_data (bytes, NULL),
          g_bytes_get_size (bytes), NULL));
  g_bytes_unref (bytes);
  g_free (dims);
  g_free (data);
  g_free (lat);
  g_free (path);
  return out;
}

typedef struct
{
  GMutex lock;
  GCond cond;
  GArray *pts, *duration, *discont;
} Frames;

static void
frames_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, Frames * f)
{
  gboolean discont = GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DISCONT);

  g_mutex_lock (&f->lock);
  g_array_append_val (f->pts, GST_BUFFER_PTS (buf));
  g_array_append_val (f->duration, GST_BUFFER_DURATION (buf));
  g_array_append_val (f->discont, discont);
  g_cond_signal (&f->cond);
  g_mutex_unlock (&f->lock);
}

/* latents over RTP without a jitterbuffer (rtpgstpay ! udpsink, udpsrc ! rtpgstdepay on
 * 127.0.0.1), sent all at once: their PTS are the times the receiver reads them, not the
 * stream's. The 45 frames come out monotonic and gap-free: each starts where the one before
 * ends (a DISCONT frame may start later, never earlier). latentparse's totals cross too. */
GST_START_TEST (test_rtp_timestamps)
{
  const gint T = 12, n_frames = 1 + 4 * (T - 1);
  gchar *latent = write_wan_latent_file (T);
  gchar *model = data_path (WAN_MODEL);
  gchar *desc;
  GstElement *rx, *tx, *src, *sink;
  GError *error = NULL;
  GstBus *rx_bus;
  GstMessage *msg;
  guint64 latents_total = 0, frames_total = 0;
  Frames f;
  gint port = 0, i;
  gint64 end;

  require_elements ();
  g_mutex_init (&f.lock);
  g_cond_init (&f.cond);
  f.pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  f.duration = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  f.discont = g_array_new (FALSE, FALSE, sizeof (gboolean));

  /* the receiver first, on a port the system chooses */
  desc = g_strdup_printf ("udpsrc name=src address=127.0.0.1 port=0 "
      "caps=\"application/x-rtp, media=application, clock-rate=90000, "
      "encoding-name=X-GST\" ! rtpgstdepay ! vaedecode backend=cpu "
      "model-file=%s ! fakesink name=sink sync=false signal-handoffs=true",
      model);
  rx = gst_parse_launch (desc, &error);
  g_free (desc);
  fail_unless (error == NULL, "%s (udpsrc and rtpgstdepay are in "
      "gstreamer1.0-plugins-good)", error ? error->message : "");
  sink = gst_bin_get_by_name (GST_BIN (rx), "sink");
  g_signal_connect (sink, "handoff", G_CALLBACK (frames_handoff), &f);
  fail_if (gst_element_set_state (rx, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  src = gst_bin_get_by_name (GST_BIN (rx), "src");
  g_object_get (src, "port", &port, NULL);
  fail_unless (port > 0);

  desc = g_strdup_printf ("filesrc location=%s ! latentparse ! rtpgstpay ! "
      "udpsink host=127.0.0.1 port=%d sync=false", latent, port);
  tx = gst_parse_launch (desc, &error);
  g_free (desc);
  fail_unless (error == NULL, "%s", error ? error->message : "");
  fail_if (gst_element_set_state (tx, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);

  /* no EOS comes over RTP: wait for the frames */
  end = g_get_monotonic_time () + 20 * G_TIME_SPAN_SECOND;
  g_mutex_lock (&f.lock);
  while ((gint) f.pts->len < n_frames && g_cond_wait_until (&f.cond, &f.lock,
          end));
  g_mutex_unlock (&f.lock);
  /* latentparse's totals came over RTP too: the last progress message has them */
  rx_bus = gst_element_get_bus (rx);
  while ((msg = gst_bus_pop (rx_bus)) != NULL) {
    const GstStructure *s = gst_message_get_structure (msg);

    fail_if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR);
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT
        && gst_structure_has_name (s, "vaedecode-progress")) {
      fail_unless (gst_structure_get_uint64 (s, "latent-frames-total",
              &latents_total));
      fail_unless (gst_structure_get_uint64 (s, "frames-total", &frames_total));
    }
    gst_message_unref (msg);
  }
  fail_unless_equals_uint64 (latents_total, T);
  fail_unless_equals_uint64 (frames_total, n_frames);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);

  fail_unless_equals_int (f.pts->len, n_frames);
  for (i = 1; i < n_frames; i++) {
    GstClockTime prev = g_array_index (f.pts, GstClockTime, i - 1);
    GstClockTime prev_end = prev + g_array_index (f.duration, GstClockTime,
        i - 1);
    GstClockTime pts = g_array_index (f.pts, GstClockTime, i);

    fail_unless (GST_CLOCK_TIME_IS_VALID (pts));
    fail_unless (pts >= prev_end, "frame %d at %" GST_TIME_FORMAT " starts "
        "before frame %d ends (%" GST_TIME_FORMAT ")", i, GST_TIME_ARGS (pts),
        i - 1, GST_TIME_ARGS (prev_end));
    if (!g_array_index (f.discont, gboolean, i))
      fail_unless_equals_uint64 (pts, prev_end);
  }

  gst_object_unref (rx_bus);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (tx);
  gst_object_unref (rx);
  g_array_unref (f.pts);
  g_array_unref (f.duration);
  g_array_unref (f.discont);
  g_mutex_clear (&f.lock);
  g_cond_clear (&f.cond);
  g_unlink (latent);
  g_free (latent);
  g_free (model);
}

GST_END_TEST;

typedef struct
{
  GstHarness *h;
  GstBuffer *buf;
  GstFlowReturn ret;
  gint64 done;                  /* monotonic time the push returned */
  gint finished;                /* (atomic) */
} PushJob;

static gpointer
push_job (PushJob * job)
{
  job->ret = gst_harness_push (job->h, job->buf);
  job->done = g_get_monotonic_time ();
  g_atomic_int_set (&job->finished, 1);
  return NULL;
}

/* a 4 x n x n latent frame of the kl_sd fixture's shape, smooth values in [-0.8, 0.8] */
static GstBuffer *
kl_latent (gint n)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, 4 * n * n * sizeof (gfloat),
      NULL);
  GstMapInfo map;
  gint i;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (i = 0; i < 4 * n * n; i++)
    ((gfloat *) map.data)[i] = 0.8f * sinf (i * 0.37f);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = 0;
  return buf;
}

/* a frame of n x n latents of the kl_sd fixture (with these properties) takes seconds on the
 * CPU; a flush, and then the way to READY, stop it: the push returns FLUSHING within `limit`
 * microseconds, without an error. After the flush the element decodes a small frame again. */
static void
interrupt_decode (const gchar * props, gint n, gint64 limit)
{
  const gchar *how[] = { "flush", "READY" };
  gchar *caps = g_strdup_printf ("video/x-latent, type=float32, channels=4, "
      "width=%d, height=%d, framerate=16/1", n, n);
  GstBus *bus;
  GstHarness *h = model_harness ("kl_sd.safetensors", props, &bus);
  GstSegment segment;
  guint k;

  gst_harness_set_sink_caps_str (h, "video/x-raw, format=RGB");
  for (k = 0; k < G_N_ELEMENTS (how); k++) {
    PushJob job = { h, kl_latent (n), GST_FLOW_OK, 0, 0 };
    GThread *thread;
    gint64 asked;

    gst_harness_set_src_caps_str (h, caps);
    thread = g_thread_new ("push", (GThreadFunc) push_job, &job);
    /* (past the session's start: the graph's preparation is not interrupted) */
    g_usleep (G_USEC_PER_SEC);
    asked = g_get_monotonic_time ();
    fail_if (g_atomic_int_get (&job.finished), "the decode ended before the %s: it is too "
        "short for this test", how[k]);
    if (k == 0)
      fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
    else
      fail_unless_equals_int (gst_element_set_state (h->element,
              GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
    g_thread_join (thread);
    GST_INFO ("%s: the push returned after %.3f s", how[k],
        (job.done - asked) / 1e6);
    fail_unless (job.done - asked < limit, "the %s took %.2f s to stop the "
        "decode", how[k], (job.done - asked) / 1e6);
    fail_unless_equals_int (job.ret, GST_FLOW_FLUSHING);
    fail_unless_equals_int (gst_harness_buffers_received (h), k);
    fail_if (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) != NULL);
    if (k > 0)
      break;

    /* after the flush, a small frame decodes */
    fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
    gst_segment_init (&segment, GST_FORMAT_TIME);
    fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
    gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
        "channels=4, width=16, height=16, framerate=16/1");
    fail_unless_equals_int (gst_harness_push (h, kl_latent (16)),
        GST_FLOW_OK);
    fail_unless_equals_int (gst_harness_buffers_received (h), 1);
    gst_buffer_unref (gst_harness_pull (h));
  }
  harness_teardown (h, bus);
  g_free (caps);
}

/* a 512x512 frame in 64-pixel tiles: stopped between two tiles, within a second */
GST_START_TEST (test_interrupt_tiled_decode)
{
  interrupt_decode ("tile-size=64", 64, G_USEC_PER_SEC);
}

GST_END_TEST;

/* one untiled 768x768 frame, a single decode step: stopped between two nodes of its graph
 * (the backend reads the cancel flag), within 0.5 s */
GST_START_TEST (test_interrupt_untiled_decode)
{
  interrupt_decode (NULL, 96, G_USEC_PER_SEC / 2);
}

GST_END_TEST;

/* pop every message on the bus (none may be an error); the warnings, each of which must
 * mention needle */
static guint
count_warnings (GstBus * bus, const gchar * needle)
{
  GstMessage *msg;
  guint n = 0;

  while ((msg = gst_bus_pop (bus)) != NULL) {
    GError *error = NULL;

    fail_if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR);
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
      gst_message_parse_warning (msg, &error, NULL);
      fail_unless (needle && strstr (error->message, needle), "warning: %s",
          error->message);
      g_clear_error (&error);
      n++;
    }
    gst_message_unref (msg);
  }
  return n;
}

/* every property of vaedecode but post-messages is GST_PARAM_MUTABLE_READY: set to another
 * value while PLAYING, each is refused with a warning naming it and keeps its value, and the
 * decode goes on; post-messages changes at once. A precision the CPU does not compute warns
 * once, not at every caps. */
GST_START_TEST (test_properties_while_running)
{
  GstBus *bus;
  GstHarness *h = decoder_harness ("precision=fp16", &bus);
  GstElement *e = gst_harness_find_element (h, "vaedecode");
  GParamSpec **specs;
  guint n, i, refused = 0;
  gboolean post;

  /* (the harness started the element before it had our bus) */
  gst_element_set_state (e, GST_STATE_READY);
  gst_element_set_state (e, GST_STATE_PLAYING);
  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless_equals_int (count_warnings (bus, "fp16 precision was asked "
          "for"), 1);

  specs = g_object_class_list_properties (G_OBJECT_GET_CLASS (e), &n);
  for (i = 0; i < n; i++) {
    GParamSpec *p = specs[i];
    GValue was = G_VALUE_INIT, other = G_VALUE_INIT, now = G_VALUE_INIT;

    if (p->owner_type != G_OBJECT_TYPE (e))
      continue;
    fail_unless ((p->flags & GST_PARAM_MUTABLE_READY) != 0 ||
        g_str_equal (p->name, "post-messages"), "%s is not flagged "
        "GST_PARAM_MUTABLE_READY", p->name);
    if (!(p->flags & GST_PARAM_MUTABLE_READY))
      continue;
    /* another valid value */
    g_value_init (&was, p->value_type);
    g_object_get_property (G_OBJECT (e), p->name, &was);
    g_value_init (&other, p->value_type);
    if (G_IS_PARAM_SPEC_STRING (p)) {
      g_value_set_string (&other, "other.safetensors");
    } else if (G_IS_PARAM_SPEC_ENUM (p)) {
      GEnumClass *k = G_PARAM_SPEC_ENUM (p)->enum_class;
      g_value_set_enum (&other, k->values[g_value_get_enum (&was) ==
              k->values[0].value ? 1 : 0].value);
    } else if (G_IS_PARAM_SPEC_INT (p)) {
      g_value_set_int (&other, g_value_get_int (&was) + 1);
    } else if (G_IS_PARAM_SPEC_UINT (p)) {
      g_value_set_uint (&other, g_value_get_uint (&was) + 1);
    } else if (G_IS_PARAM_SPEC_UINT64 (p)) {
      g_value_set_uint64 (&other, g_value_get_uint64 (&was) + 1);
    } else {
      fail ("no other value for %s", p->name);
    }
    g_object_set_property (G_OBJECT (e), p->name, &other);
    {
      gchar *needle = g_strdup_printf ("The %s property cannot change while "
          "the decoder runs", p->name);
      expect_warning (bus, needle);
      g_free (needle);
    }
    g_value_init (&now, p->value_type);
    g_object_get_property (G_OBJECT (e), p->name, &now);
    fail_unless (g_param_values_cmp (p, &was, &now) == 0, "%s changed",
        p->name);
    g_value_unset (&was);
    g_value_unset (&other);
    g_value_unset (&now);
    refused++;
  }
  g_free (specs);
  /* model-file, model-family, backend, device-id, precision, latent-space, chunk-frames,
   * tile-size, max-memory */
  fail_unless (refused >= 9, "only %u properties refused", refused);

  g_object_set (e, "post-messages", FALSE, NULL);
  g_object_get (e, "post-messages", &post, NULL);
  fail_if (post);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (1)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  /* new caps (another frame rate): a new session, no new precision warning */
  gst_harness_set_src_caps_str (h, "video/x-latent, type=float32, "
      "channels=4, width=7, height=5, framerate=8/1");
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (2)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));

  fail_unless_equals_int (count_warnings (bus, NULL), 0);

  /* in READY they change again */
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  g_object_set (e, "chunk-frames", 3, NULL);
  g_object_get (e, "chunk-frames", &i, NULL);
  fail_unless_equals_int (i, 3);
  fail_unless_equals_int (count_warnings (bus, NULL), 0);
  gst_object_unref (e);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* latent caps that reach the decoder without a field it needs, or with a wrong one: the error
 * names the field */
GST_START_TEST (test_invalid_caps_name_field)
{
  const gchar *caps[][2] = {
    {"video/x-latent, type=float32, width=7, height=5, framerate=16/1",
        "Invalid latent caps: the field 'channels' is missing"},
    {"video/x-latent, channels=4, width=7, height=5, framerate=16/1",
        "Invalid latent caps: the field 'type' is missing"},
    {"video/x-latent, type=float32, channels=4, height=5, framerate=16/1",
        "Invalid latent caps: the field 'width' is missing"},
    {"video/x-latent, type=float32, channels=4, width=7, height=5, "
          "space=linear", "Invalid latent caps: the field 'space' is linear, "
          "not raw or normalized"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (caps); i++) {
    GstBus *bus;
    GstHarness *h = decoder_harness (NULL, &bus);

    gst_harness_set_src_caps_str (h, caps[i][0]);
    expect_error (bus, caps[i][1]);
    harness_teardown (h, bus);
  }
}

GST_END_TEST;

/* the sink template lists the optional space field, after a structure without it (which
 * upstream fixates to) */
GST_START_TEST (test_sink_template_space)
{
  GstElementFactory *f;
  const GList *l;
  gboolean listed = FALSE;

  require_elements ();
  f = gst_element_factory_find ("vaedecode");
  for (l = gst_element_factory_get_static_pad_templates (f); l; l = l->next) {
    GstStaticPadTemplate *t = l->data;
    GstCaps *caps, *second, *want;

    if (t->direction != GST_PAD_SINK)
      continue;
    caps = gst_static_caps_get (&t->static_caps);
    fail_unless_equals_int (gst_caps_get_size (caps), 2);
    fail_if (gst_structure_has_field (gst_caps_get_structure (caps, 0),
            "space"));
    second = gst_caps_copy_nth (caps, 1);
    want = gst_caps_from_string ("video/x-latent, type=float32, channels=4, "
        "width=7, height=5, framerate=16/1, space={ raw, normalized }");
    listed = gst_caps_is_subset (want, second);
    gst_caps_unref (want);
    gst_caps_unref (second);
    gst_caps_unref (caps);
  }
  fail_unless (listed, "the sink template does not list space={raw,normalized}");
  gst_object_unref (f);
}

GST_END_TEST;

/* a PyTorch checkpoint given as the model is read as one (model/vae-pth.c), not as
 * safetensors: a damaged zip archive, or one in the legacy pickle format, says what it is; so
 * do a picture and a video given as the model */
GST_START_TEST (test_pytorch_checkpoint)
{
  const gchar *magic[][2] = {
    {"PK\003\004\024\000\000\000", "no end-of-central-directory record: "
          "the zip archive is truncated or damaged"},
    {"\200\002}q\000(X\010", "a bare pickle: the legacy PyTorch format"},
    {"\211PNG\r\n\032\n", "this is a PNG image, not a safetensors file"},
    {"\000\000\000\040ftyp", "this is an MP4 or QuickTime file"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (magic); i++) {
    gchar *path = g_build_filename (g_get_tmp_dir (), i ? "vae-test.ckpt" :
        "vae-test.pth", NULL);
    gchar *contents = g_malloc0 (4096);
    gchar *props = g_strdup_printf ("model-file=%s", path);

    memcpy (contents, magic[i][0], 8);
    fail_unless (g_file_set_contents (path, contents, 4096, NULL));
    expect_start_error (props, magic[i][1]);
    g_unlink (path);
    g_free (props);
    g_free (contents);
    g_free (path);
  }
}

GST_END_TEST;

static Suite *
vaedecode_suite (void)
{
  Suite *s = suite_create ("vaedecode");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_plugin_license);
  tcase_add_test (tc, test_running_properties);
  tcase_add_test (tc, test_precision_warning);
  tcase_add_test (tc, test_negotiation_and_pixels);
  tcase_add_test (tc, test_output_formats);
  tcase_add_test (tc, test_alpha_formats);
  tcase_add_test (tc, test_alpha_opaque);
  tcase_add_test (tc, test_parse_5d_images);
  tcase_add_test (tc, test_chunks_timestamps_eos);
  tcase_add_test (tc, test_flush);
  tcase_add_test (tc, test_wrong_channel_count);
  tcase_add_test (tc, test_latents_of_the_wrong_kind);
  tcase_add_test (tc, test_position);
  tcase_add_test (tc, test_nan_latent);
  tcase_add_test (tc, test_wrong_buffer_size);
  tcase_add_test (tc, test_bad_model_files);
  tcase_add_test (tc, test_backend_not_built);
  tcase_add_test (tc, test_latent_space_refused);
  tcase_add_test (tc, test_wan_chunks);
  tcase_add_test (tc, test_hyvideo15_memory);
  tcase_add_test (tc, test_wan_no_messages);
  tcase_add_test (tc, test_wan_flush);
  tcase_add_test (tc, test_wan_discont);
  tcase_add_test (tc, test_wan_latency);
  tcase_add_test (tc, test_ltx2_stream);
  tcase_add_test (tc, test_minimax_stream);
  tcase_add_test (tc, test_svd_whole_clip);
  tcase_add_test (tc, test_wan_no_framerate);
  tcase_add_test (tc, test_taew22_scale);
  tcase_add_test (tc, test_wan_wrong_channel_count);
  tcase_add_test (tc, test_kl_families);
  tcase_add_test (tc, test_kl_pixels);
  tcase_add_test (tc, test_kl_tiled);
  tcase_add_test (tc, test_kl_tile_errors);
  tcase_add_test (tc, test_kl_flux2_spaces);
  tcase_add_test (tc, test_kl_flux2_query_caps);
  tcase_add_test (tc, test_kl_flux2_wrong_channels);
  tcase_add_test (tc, test_parse_comfy_latent);
  tcase_add_test (tc, test_parse_5d);
  tcase_add_test (tc, test_parse_wan_latent);
  tcase_add_test (tc, test_parse_errors);
  tcase_add_test (tc, test_cpu_no_cuda_caps);
  tcase_add_test (tc, test_state_changes);
  tcase_add_test (tc, test_timestamps_from_rate);
  tcase_add_test (tc, test_timestamps_segment_start);
  tcase_add_test (tc, test_rtp_timestamps);
  tcase_add_test (tc, test_early_eos);
  tcase_add_test (tc, test_interrupt_tiled_decode);
  tcase_add_test (tc, test_interrupt_untiled_decode);
  tcase_add_test (tc, test_properties_while_running);
  tcase_add_test (tc, test_invalid_caps_name_field);
  tcase_add_test (tc, test_sink_template_space);
  tcase_add_test (tc, test_pytorch_checkpoint);

  /* the GPU cases skip, with a note, where there is no CUDA backend or GPU */
  tc = tcase_create ("cuda");
  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_cuda_allocator);
  tcase_add_test (tc, test_cuda_no_device);
  tcase_add_test (tc, test_cuda_memory_output);
  tcase_add_test (tc, test_cuda_system_memory);
  tcase_add_test (tc, test_cuda_tiled_memory);
  tcase_add_test (tc, test_cuda_two_decoders);
  tcase_add_test (tc, test_cuda_state_changes);
  tcase_add_test (tc, test_cuda_precision);

  /* HIP without its runtime (the no-device case: test-hip-ops and test-hip-decode skip on it) */
  tc = tcase_create ("hip");
  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_cpu_auto_precision);
  tcase_add_test (tc, test_hip_no_runtime);
  tcase_add_test (tc, test_hip_no_device);
  return s;
}

int
main (int argc, char **argv)
{
  vae_test_fresh_registry ();
  gst_check_init (&argc, &argv);
  return gst_check_run_suite (vaedecode_suite (), "vaedecode", __FILE__);
}
