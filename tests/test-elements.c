/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * vaedecode and latentparse under GstHarness: negotiation, frame counts, timestamps, EOS drain,
 * flush, wrong channel counts, bad model files, NaN latents, and latentparse on good and bad
 * byte streams. The decoded pixels are checked against the upstream PyTorch fixture.
 */

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>
#include <math.h>

#include "vae-safetensors.h"

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

#define FIXTURE "taesd_z4_w16"
#define LATENT_CAPS "video/x-latent, type=float32, channels=4, width=7, " \
  "height=5, framerate=16/1"

/* a harness on vaedecode with the z=4 fixture model, its bus kept for errors */
static GstHarness *
decoder_harness (const gchar * extra, GstBus ** bus)
{
  gchar *model = data_path (FIXTURE ".orig.safetensors");
  gchar *desc = g_strdup_printf ("vaedecode model-file=%s %s", model,
      extra ? extra : "");
  GstHarness *h = gst_harness_new_parse (desc);

  *bus = gst_bus_new ();
  gst_element_set_bus (h->element, *bus);
  g_free (desc);
  g_free (model);
  return h;
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
  gst_harness_teardown (h);
  gst_object_unref (bus);
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
    gst_harness_teardown (h);
    gst_object_unref (bus);
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
  gst_harness_teardown (h);
  gst_object_unref (bus);
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
  gst_harness_teardown (h);
  gst_object_unref (bus);
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
  gst_harness_teardown (h);
  gst_object_unref (bus);
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
  gst_harness_teardown (h);
  gst_object_unref (bus);
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
  gst_harness_teardown (h);
  gst_object_unref (bus);
}

GST_END_TEST;

/* the element must fail on the way to PAUSED, with the cause in the message */
static void
expect_start_error (const gchar * props, const gchar * needle)
{
  GstElement *e = gst_element_factory_make ("vaedecode", NULL);
  GstBus *bus = gst_bus_new ();

  gst_element_set_bus (e, bus);
  gst_util_set_object_arg (G_OBJECT (e), "model-file", "");
  if (props) {
    gchar **kv = g_strsplit_set (props, "=", 2);
    gst_util_set_object_arg (G_OBJECT (e), kv[0], kv[1]);
    g_strfreev (kv);
  }
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  expect_error (bus, needle);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (bus);
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

GST_START_TEST (test_backend_not_built)
{
  GstElement *e = gst_element_factory_make ("vaedecode", NULL);
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e),
      "backend");
  GEnumValue *cuda = g_enum_get_value_by_nick (G_PARAM_SPEC_ENUM
      (pspec)->enum_class, "cuda");
  GstBus *bus = gst_bus_new ();
  gchar *model = data_path (FIXTURE ".orig.safetensors");

  /* listed, described as not built, refused with a clear error */
  fail_unless (cuda != NULL);
  fail_unless (strstr (cuda->value_name, "not built") != NULL);
  gst_element_set_bus (e, bus);
  g_object_set (e, "model-file", model, NULL);
  gst_util_set_object_arg (G_OBJECT (e), "backend", "cuda");
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  expect_error (bus, "the cuda backend is not built into this plugin");
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (bus);
  g_free (model);
}

GST_END_TEST;

GST_START_TEST (test_latent_space_refused)
{
  GstBus *bus;
  GstHarness *h = decoder_harness ("latent-space=raw", &bus);

  gst_harness_set_src_caps_str (h, LATENT_CAPS);
  fail_unless_equals_int (gst_harness_push (h, latent_buffer (0)),
      GST_FLOW_NOT_NEGOTIATED);
  expect_error (bus, "set model-family to convert raw latents");
  gst_harness_teardown (h);
  gst_object_unref (bus);
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
  GstHarness *h = gst_harness_new_parse (desc);
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
  GstCaps *caps;
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
  fail_unless (gst_caps_is_equal (caps, gst_caps_from_string ("video/x-latent,"
              " type=float32, channels=32, width=24, height=16, "
              "framerate=24/1")));
  gst_caps_unref (caps);
  for (i = 0; i < 2; i++) {
    out = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out),
        gst_util_uint64_scale (i, GST_SECOND, 24));
    fail_unless (gst_buffer_memcmp (out, 0, lat + i * 32 * 16 * 24,
            32 * 16 * 24 * 4) == 0);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
  gst_object_unref (bus);
  g_bytes_unref (bytes);
  g_free (lat);
  g_free (path);
}

GST_END_TEST;

/* [B, C, T, H, W] in F16: frames come out batch by batch, in time order, as [C, H, W] */
GST_START_TEST (test_parse_5d)
{
  const gint B = 2, C = 3, T = 4, H = 2, W = 3;
  guint16 data[2 * 3 * 4 * 2 * 3];
  GBytes *bytes;
  GstBus *bus;
  gboolean eos_ok;
  GstHarness *h;
  gint b, c, t, p;

  for (p = 0; p < (gint) G_N_ELEMENTS (data); p++)
    data[p] = p;
  bytes = make_safetensors ("latent_tensor", "F16", "2,3,4,2,3",
      sizeof (data), (guint8 *) data);
  h = parse_bytes (bytes, 7, NULL, &bus, &eos_ok);
  fail_unless (eos_ok);
  fail_unless_equals_int (gst_harness_buffers_received (h), B * T);
  for (b = 0; b < B; b++) {
    for (t = 0; t < T; t++) {
      GstBuffer *out = gst_harness_pull (h);
      GstMapInfo map;
      gst_buffer_map (out, &map, GST_MAP_READ);
      fail_unless_equals_int (map.size, C * H * W * 2);
      for (c = 0; c < C; c++)
        for (p = 0; p < H * W; p++)
          fail_unless_equals_int (((guint16 *) map.data)[c * H * W + p],
              (((b * C + c) * T + t) * H * W) + p);
      gst_buffer_unmap (out, &map);
      fail_unless_equals_uint64 (GST_BUFFER_PTS (out),
          gst_util_uint64_scale (b * T + t, GST_SECOND, 16));
      gst_buffer_unref (out);
    }
  }
  gst_harness_teardown (h);
  gst_object_unref (bus);
  g_bytes_unref (bytes);
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
  gst_harness_teardown (h);
  gst_object_unref (bus);
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
  /* one frame of two arrives: it is pushed, then the error */
  expect_parse_error (g_bytes_new (d, size - 10), NULL,
      "Truncated latent file: tensor 'latent_tensor' needs 192 bytes", 1);
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

static Suite *
vaedecode_suite (void)
{
  Suite *s = suite_create ("vaedecode");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_negotiation_and_pixels);
  tcase_add_test (tc, test_output_formats);
  tcase_add_test (tc, test_chunks_timestamps_eos);
  tcase_add_test (tc, test_flush);
  tcase_add_test (tc, test_wrong_channel_count);
  tcase_add_test (tc, test_nan_latent);
  tcase_add_test (tc, test_wrong_buffer_size);
  tcase_add_test (tc, test_bad_model_files);
  tcase_add_test (tc, test_backend_not_built);
  tcase_add_test (tc, test_latent_space_refused);
  tcase_add_test (tc, test_parse_comfy_latent);
  tcase_add_test (tc, test_parse_5d);
  tcase_add_test (tc, test_parse_errors);
  return s;
}

GST_CHECK_MAIN (vaedecode);
