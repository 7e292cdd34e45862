/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * latentparse's memory bound. A 5-D [B, C, T, H, W] latent is channel-major: every frame's
 * plane of the last channel lies near the end of its batch item. In pull mode (filesrc ! 
 * latentparse) frames are read plane by plane, so memory stays at about a frame whatever the
 * item's size (measured on a 48 MiB item); in push mode (GstHarness: a non-seekable byte
 * stream) frames go out as their last channel's planes arrive, an item above max-size-bytes
 * is refused as soon as the header says so, and 4-D tensors stream frame by frame under any
 * bound. Headers and frames above the bound are refused, truncated files give the same
 * frames and error in both modes. The latent files are written at test time with every
 * element holding the bits of its flat index, so each frame's bytes are checked against the
 * tensor gathered here, with its timestamps and DISCONT flag.
 */

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/app/gstappsink.h>
#include <glib/gstdio.h>

#include "vae-test-gst.h"

#define FPL 4                   /* latentparse's default frames-per-latent */
#define FPS 16                  /* and framerate */

/* a latent tensor's shape as [B, C, T, H, W] (T = 1 for a 4-D one) */
typedef struct
{
  gint64 b, c, t, h, w;
  gboolean video;               /* 5-D */
} Shape;

static guint64
shape_bytes (const Shape * s)
{
  return (guint64) s->b * s->c * s->t * s->h * s->w * 4;
}

/* the header of a file holding a 3-float tensor "before", the F32 latent tensor and a
 * 2-float tensor "after" */
static gchar *
latent_header (const Shape * s)
{
  const guint64 n = shape_bytes (s);
  gchar *dims = s->video ?
      g_strdup_printf ("%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%"
      G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT, s->b, s->c,
      s->t, s->h, s->w) :
      g_strdup_printf ("%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%"
      G_GINT64_FORMAT ",%" G_GINT64_FORMAT, s->b, s->c, s->h, s->w);
  gchar *hdr = g_strdup_printf ("{\"before\":{\"dtype\":\"F32\",\"shape\":[3],"
      "\"data_offsets\":[0,12]},\"latent_tensor\":{\"dtype\":\"F32\",\"shape\":"
      "[%s],\"data_offsets\":[12,%" G_GUINT64_FORMAT "]},\"after\":{\"dtype\":"
      "\"F32\",\"shape\":[2],\"data_offsets\":[%" G_GUINT64_FORMAT ",%"
      G_GUINT64_FORMAT "]}}", dims, 12 + n, 12 + n, 20 + n);

  g_free (dims);
  return hdr;
}

/* the latent file in a new temporary directory, its element i holding the bits of i; written
 * in pieces, never held whole. Returns its path; *size: its length. */
static gchar *
write_latent (const Shape * s, guint64 * size)
{
  gchar *dir = g_dir_make_tmp ("latentparse-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "test.latent", NULL);
  gchar *hdr = latent_header (s);
  const guint64 len = strlen (hdr), numel = shape_bytes (s) / 4;
  const guint32 pad[5] = { 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef,
    0xdeadbeef
  };
  FILE *f = fopen (path, "wb");
  guint32 *chunk = g_new (guint32, 65536);
  guint64 i = 0;

  fail_unless (f != NULL);
  fail_unless (fwrite (&len, 8, 1, f) == 1);
  fail_unless (fwrite (hdr, len, 1, f) == 1);
  fail_unless (fwrite (pad, 4, 3, f) == 3);
  while (i < numel) {
    guint64 n = MIN (65536, numel - i), k;
    for (k = 0; k < n; k++)
      chunk[k] = (guint32) (i + k);
    fail_unless (fwrite (chunk, 4, n, f) == n);
    i += n;
  }
  fail_unless (fwrite (pad, 4, 2, f) == 2);
  fail_unless (fclose (f) == 0);
  *size = 8 + len + 20 + numel * 4;
  g_free (chunk);
  g_free (hdr);
  g_free (dir);
  return path;
}

static void
remove_latent (gchar * path)
{
  gchar *dir = g_path_get_dirname (path);

  g_unlink (path);
  g_rmdir (dir);
  g_free (dir);
  g_free (path);
}

/* the whole file as bytes, for the push-mode tests */
static GBytes *
latent_bytes (const Shape * s)
{
  guint64 size;
  gchar *path = write_latent (s, &size), *contents;
  gsize len;

  fail_unless (g_file_get_contents (path, &contents, &len, NULL));
  fail_unless_equals_uint64 (len, size);
  remove_latent (path);
  return g_bytes_new_take (contents, len);
}

/* latent frame k of the stream must be frame t of batch item b gathered from the tensor,
 * [C, H, W], stamped for the decoded frames it gives at FPS; DISCONT on a video's first
 * frame after the first video's, and on the first frame after a seek (first_after_seek) */
static void
check_frame_seek (GstBuffer * buf, const Shape * s, guint64 k,
    gboolean first_after_seek)
{
  const guint64 b = k / s->t, t = k % s->t, plane = s->h * s->w;
  const guint64 per_item = s->video ? 1 + FPL * (s->t - 1) : 1;
  const guint64 start = b * per_item + (s->video && t > 0 ? 1 + FPL * (t - 1) :
      t), m = s->video && t > 0 ? FPL : 1;
  GstMapInfo map;
  guint64 c, p;

  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, s->c * plane * 4);
  for (c = 0; c < (guint64) s->c; c++) {
    const guint32 *got = (const guint32 *) map.data + c * plane;
    const guint64 want = ((b * s->c + c) * s->t + t) * plane;
    for (p = 0; p < plane; p++)
      if (got[p] != (guint32) (want + p))
        fail ("frame %" G_GUINT64_FORMAT " (item %" G_GUINT64_FORMAT ", t %"
            G_GUINT64_FORMAT "), channel %" G_GUINT64_FORMAT ", element %"
            G_GUINT64_FORMAT ": %u, want %u", k, b, t, c, p, got[p],
            (guint32) (want + p));
  }
  gst_buffer_unmap (buf, &map);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (buf),
      gst_util_uint64_scale (start, GST_SECOND, FPS));
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (buf),
      gst_util_uint64_scale (start + m, GST_SECOND, FPS) -
      GST_BUFFER_PTS (buf));
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), start);
  fail_unless (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DISCONT) ==
      (first_after_seek || (s->video && t == 0 && b > 0)),
      "frame %" G_GUINT64_FORMAT ": DISCONT", k);
  fail_unless (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT) ==
      (t > 0), "frame %" G_GUINT64_FORMAT ": DELTA_UNIT", k);
}

static void
check_frame (GstBuffer * buf, const Shape * s, guint64 k)
{
  check_frame_seek (buf, s, k, FALSE);
}

/* ---- pull mode: filesrc ! latentparse ! appsink ---------------------------------------- */

/* run the file through latentparse, checking every frame; the frames received, and the
 * error's message (or NULL) in *error */
static guint64
run_pull (const gchar * path, const Shape * s, const gchar * props,
    gchar ** error, gchar ** warning)
{
  gchar *desc = g_strdup_printf ("filesrc location=%s ! latentparse %s ! "
      "appsink name=sink sync=false max-buffers=2", path, props ? props : "");
  GError *err = NULL;
  GstElement *p = gst_parse_launch_full (desc, NULL,
      GST_PARSE_FLAG_FATAL_ERRORS, &err);
  GstElement *sink;
  GstBus *bus;
  gint64 deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  guint64 k = 0;

  fail_unless (p != NULL && err == NULL, "%s: %s", desc,
      err ? err->message : "");
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  bus = gst_element_get_bus (p);
  *error = NULL;
  if (warning)
    *warning = NULL;
  gst_element_set_state (p, GST_STATE_PLAYING);
  for (;;) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        GST_SECOND / 20);
    GstMessage *msg;

    if (sample) {
      check_frame (gst_sample_get_buffer (sample), s, k++);
      gst_sample_unref (sample);
      continue;
    }
    /* (a warning or an error comes before the EOS that follows it) */
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
    if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
      gst_message_parse_warning (msg, &err, NULL);
      if (warning && *warning == NULL)
        *warning = g_strdup (err->message);
      g_clear_error (&err);
      gst_message_unref (msg);
      continue;
    }
    if (msg) {
      gst_message_parse_error (msg, &err, NULL);
      *error = g_strdup (err->message);
      g_clear_error (&err);
      gst_message_unref (msg);
      break;
    }
    if (gst_app_sink_is_eos (GST_APP_SINK (sink)))
      break;
    fail_if (g_get_monotonic_time () > deadline, "%s: no EOS nor error in "
        "30 s", desc);
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (desc);
  return k;
}

static void
expect_message (const gchar * error, const gchar * needle)
{
  fail_unless (error != NULL, "no error (wanted '%s')", needle);
  fail_unless (strstr (error, needle) != NULL, "error '%s' does not mention "
      "'%s'", error, needle);
}

/* the file through pull mode: every frame, in order, and no error */
static void
expect_pull_frames (const Shape * s, const gchar * props)
{
  guint64 size;
  gchar *path = write_latent (s, &size), *error;
  guint64 n = run_pull (path, s, props, &error, NULL);

  fail_unless (error == NULL, "%s", error);
  fail_unless_equals_uint64 (n, s->b * s->t);
  remove_latent (path);
}

/* a 5-D item of 7560 bytes read under a bound of 4096 (frames of 1260 bytes): pull mode
 * holds a frame, not the item; a 4-D tensor too */
GST_START_TEST (test_pull_frames)
{
  const Shape video = { 2, 5, 6, 7, 9, TRUE };
  const Shape images = { 3, 5, 1, 7, 9, FALSE };

  expect_pull_frames (&video, "max-size-bytes=4096");
  expect_pull_frames (&images, "max-size-bytes=1260");
}

GST_END_TEST;

/* kB of resident memory: the peak if hwm, else the current */
static guint64
rss_kb (gboolean hwm)
{
  gchar *status;
  const gchar *line;
  guint64 kb = 0;

  fail_unless (g_file_get_contents ("/proc/self/status", &status, NULL, NULL));
  line = strstr (status, hwm ? "VmHWM:" : "VmRSS:");
  fail_unless (line != NULL);
  kb = g_ascii_strtoull (line + 6, NULL, 10);
  g_free (status);
  return kb;
}

#if defined(__SANITIZE_ADDRESS__)
/* AddressSanitizer's quarantine keeps freed blocks resident (256 MiB by default): each freed
 * frame would count. A small one keeps the resident size a measure of what is held. */
const char *__asan_default_options (void);
const char *
__asan_default_options (void)
{
  return "quarantine_size_mb=2";
}
#endif

/* reset the peak to the current resident size (Linux 4.0+); without it the peak before the
 * run stays in, which only hides growth below it */
static guint64
rss_reset_peak (void)
{
  FILE *f = fopen ("/proc/self/clear_refs", "w");

  if (f) {
    fputs ("5", f);
    fclose (f);
  }
  return f ? rss_kb (FALSE) : rss_kb (TRUE);
}

/* a 48 MiB item ([1, 16, 96, 64, 128] F32, frames of 512 KiB) through pull mode with the
 * default bound: the process's peak resident memory grows by less than a quarter of the
 * item, every frame right (holding the item, as push mode must, takes all of it). A small
 * file goes first, so that loading the plugins is not counted. */
GST_START_TEST (test_pull_memory)
{
  const Shape s = { 1, 16, 96, 64, 128, TRUE }, warm = { 1, 2, 2, 2, 2, TRUE };
  guint64 size, base, peak, n;
  gchar *path = write_latent (&s, &size), *error;

  expect_pull_frames (&warm, NULL);
  base = rss_reset_peak ();
  n = run_pull (path, &s, NULL, &error, NULL);
  peak = rss_kb (TRUE);
  fail_unless (error == NULL, "%s", error);
  fail_unless_equals_uint64 (n, 96);
  GST_INFO ("item of %" G_GUINT64_FORMAT " KiB: peak resident memory grew by %"
      G_GUINT64_FORMAT " KiB", shape_bytes (&s) / 1024, peak - base);
  fail_unless (peak - base < shape_bytes (&s) / 1024 / 4, "resident memory "
      "grew by %" G_GUINT64_FORMAT " KiB for an item of %" G_GUINT64_FORMAT
      " KiB", peak - base, shape_bytes (&s) / 1024);
  remove_latent (path);
}

GST_END_TEST;

/* ---- push mode: GstHarness ------------------------------------------------------------ */

static GstHarness *
push_harness (const gchar * props, GstBus ** bus)
{
  gchar *desc = g_strdup_printf ("latentparse %s", props ? props : "");
  GstHarness *h = gst_harness_new_parse (desc);

  fail_unless (h != NULL, "%s", desc);
  *bus = gst_bus_new ();
  gst_element_set_bus (h->element, *bus);
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  g_free (desc);
  return h;
}

static void
push_range (GstHarness * h, GBytes * bytes, gsize from, gsize to)
{
  const guint8 *d = g_bytes_get_data (bytes, NULL);

  if (to > from)
    gst_harness_push (h, gst_buffer_new_memdup (d + from, to - from));
}

/* pull and check the frames received so far; k counts them over the stream */
static void
check_pushed (GstHarness * h, const Shape * s, guint64 * k)
{
  GstBuffer *buf;

  while ((buf = gst_harness_try_pull (h))) {
    check_frame (buf, s, (*k)++);
    gst_buffer_unref (buf);
  }
}

/* the error on the bus must mention needle */
static void
expect_bus_message (GstBus * bus, GstMessageType type, const gchar * needle)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, type | GST_MESSAGE_ERROR);
  GError *error = NULL;

  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == type,
      "no %s posted (wanted '%s')", gst_message_type_get_name (type), needle);
  if (type == GST_MESSAGE_WARNING) {
    GstMessage *other = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);

    fail_if (other != NULL, "an error besides the warning");
    gst_message_parse_warning (msg, &error, NULL);
  } else {
    gst_message_parse_error (msg, &error, NULL);
  }
  expect_message (error->message, needle);
  g_clear_error (&error);
  gst_message_unref (msg);
}

static void
harness_teardown (GstHarness * h, GstBus * bus)
{
  gst_bus_set_flushing (bus, TRUE);
  gst_harness_teardown (h);
  gst_object_unref (bus);
}

/* a 5-D item of 7560 bytes pushed under a bound of 4096: refused once the header is in,
 * naming the sizes and pull mode, before any of its bytes are held; at 7560 it streams */
GST_START_TEST (test_push_item_bound)
{
  const Shape s = { 2, 5, 6, 7, 9, TRUE };
  GBytes *bytes = latent_bytes (&s);
  gchar *hdr = latent_header (&s);
  const gsize size = g_bytes_get_size (bytes);
  GstBus *bus;
  GstHarness *h = push_harness ("max-size-bytes=4096", &bus);
  guint64 k = 0;

  push_range (h, bytes, 0, 8 + strlen (hdr));
  expect_bus_message (bus, GST_MESSAGE_ERROR, "Latent tensor 'latent_tensor' holds videos of 7560 "
      "bytes per batch item, more than max-size-bytes (4096)");
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  harness_teardown (h, bus);

  h = push_harness ("max-size-bytes=7560", &bus);
  push_range (h, bytes, 0, size);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  check_pushed (h, &s, &k);
  fail_unless_equals_uint64 (k, s.b * s.t);
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) == NULL);
  harness_teardown (h, bus);
  g_bytes_unref (bytes);
  g_free (hdr);
}

GST_END_TEST;

/* push mode: each frame goes out as soon as its plane of the last channel is whole (one
 * byte short is not enough): for a 5-D item not when the whole item is in, for a 4-D tensor
 * when its own bytes are */
static void
expect_frames_as_they_arrive (const Shape * s, const gchar * props)
{
  GBytes *bytes = latent_bytes (s);
  gchar *hdr = latent_header (s);
  const gsize plane = s->h * s->w * 4, data = 8 + strlen (hdr) + 12;
  gsize at = 0;
  GstBus *bus;
  GstHarness *h = push_harness (props, &bus);
  guint64 k = 0, f;

  for (f = 0; f < (guint64) (s->b * s->t); f++) {
    const guint64 b = f / s->t, t = f % s->t;
    const gsize end = data + ((b * s->c + s->c - 1) * s->t + t + 1) * plane;

    push_range (h, bytes, at, end - 1);
    check_pushed (h, s, &k);
    fail_unless_equals_uint64 (k, f);
    push_range (h, bytes, end - 1, end);
    at = end;
    check_pushed (h, s, &k);
    fail_unless_equals_uint64 (k, f + 1);
  }
  push_range (h, bytes, at, g_bytes_get_size (bytes));
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) == NULL);
  harness_teardown (h, bus);
  g_bytes_unref (bytes);
  g_free (hdr);
}

/* 5-D, and 4-D under a bound of one frame (1260 bytes of 7560) */
GST_START_TEST (test_push_frames_as_they_arrive)
{
  const Shape video = { 2, 5, 6, 7, 9, TRUE };
  const Shape images = { 6, 5, 1, 7, 9, FALSE };

  expect_frames_as_they_arrive (&video, NULL);
  expect_frames_as_they_arrive (&images, "max-size-bytes=1260");
}

GST_END_TEST;

/* ---- refusals ------------------------------------------------------------------------- */

/* these bytes as a file through pull mode: the error must mention needle, after n frames */
static void
expect_pull_error (GBytes * bytes, const Shape * s, const gchar * props,
    GstMessageType type, const gchar * needle, guint64 n)
{
  gchar *dir = g_dir_make_tmp ("latentparse-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "bad.latent", NULL), *error, *warning;

  fail_unless (g_file_set_contents (path, g_bytes_get_data (bytes, NULL),
          g_bytes_get_size (bytes), NULL));
  fail_unless_equals_uint64 (run_pull (path, s, props, &error, &warning), n);
  if (type == GST_MESSAGE_WARNING) {
    fail_unless (error == NULL, "an error besides the warning: %s", error);
    expect_message (warning, needle);
  } else {
    expect_message (error, needle);
  }
  g_free (error);
  g_free (warning);
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
}

/* the same through push mode, pushed in pieces of 5 bytes */
static void
expect_push_error (GBytes * bytes, const Shape * s, const gchar * props,
    GstMessageType type, const gchar * needle, guint64 n)
{
  GstBus *bus;
  GstHarness *h = push_harness (props, &bus);
  const gsize size = g_bytes_get_size (bytes);
  guint64 k = 0;
  gsize at;

  for (at = 0; at < size; at += 5)
    push_range (h, bytes, at, MIN (at + 5, size));
  gst_harness_push_event (h, gst_event_new_eos ());
  check_pushed (h, s, &k);
  fail_unless_equals_uint64 (k, n);
  expect_bus_message (bus, type, needle);
  harness_teardown (h, bus);
}

/* both; takes bytes */
static void
expect_error_both (GBytes * bytes, const Shape * s, const gchar * props,
    GstMessageType type, const gchar * needle, guint64 n)
{
  expect_pull_error (bytes, s, props, type, needle, n);
  expect_push_error (bytes, s, props, type, needle, n);
  g_bytes_unref (bytes);
}

/* a header of these bytes after its length */
static GBytes *
header_only (const gchar * hdr)
{
  guint64 len = strlen (hdr);
  GByteArray *a = g_byte_array_new ();

  g_byte_array_append (a, (guint8 *) & len, 8);
  g_byte_array_append (a, (const guint8 *) hdr, len);
  return g_byte_array_free_to_bytes (a);
}

/* a header or a frame above the bound is refused before it is read; the default bound
 * refuses a 256 GiB frame of a shape within the caps' limits */
GST_START_TEST (test_refuse_above_bound)
{
  const Shape s = { 2, 5, 6, 7, 9, TRUE };
  GBytes *bytes = latent_bytes (&s), *huge;
  GstBus *bus;
  GstHarness *h = push_harness ("max-size-bytes=65536", &bus);
  guint64 claim = 50000000;

  /* a length prefix alone: the error comes before any header byte is held */
  gst_harness_push (h, gst_buffer_new_memdup (&claim, 8));
  expect_bus_message (bus, GST_MESSAGE_ERROR, "header would take 50000000 bytes, more than "
      "max-size-bytes (65536)");
  harness_teardown (h, bus);

  expect_error_both (g_bytes_ref (bytes), &s, "max-size-bytes=1000",
      GST_MESSAGE_ERROR,
      "has frames of 1260 bytes (5 channels of 9x7 F32), more than "
      "max-size-bytes (1000)", 0);
  huge = header_only ("{\"latent_tensor\":{\"dtype\":\"F32\",\"shape\":"
      "[1,4096,1,4096,4096],\"data_offsets\":[0,274877906944]}}");
  expect_error_both (huge, &s, NULL, GST_MESSAGE_ERROR, "has frames of 274877906944 bytes (4096 "
      "channels of 4096x4096 F32), more than max-size-bytes (268435456)", 0);
  g_bytes_unref (bytes);
}

GST_END_TEST;

/* truncated files: the same frames and error in both modes. A 5-D item whose last channel
 * is cut inside frame 2's plane gives its frames 0 and 1, which are whole. */
GST_START_TEST (test_truncated)
{
  const Shape s = { 2, 5, 6, 7, 9, TRUE };
  GBytes *bytes = latent_bytes (&s), *cut;
  gchar *hdr = latent_header (&s), *needle;
  const gsize plane = s.h * s.w * 4, data = 8 + strlen (hdr) + 12;
  const gsize end = data + (s.c * s.t + (s.c - 1) * s.t + 2) * plane + 100;
  const guint8 *d = g_bytes_get_data (bytes, NULL);
  guint64 claim = 90000000, base;
  guint8 prefix[108];

  cut = g_bytes_new (d, end);
  needle = g_strdup_printf ("Truncated latent file: tensor 'latent_tensor' "
      "needs 15120 bytes but the stream ended after %" G_GSIZE_FORMAT " of "
      "them; 8 frames were pushed.", end - data);
  expect_error_both (cut, &s, NULL, GST_MESSAGE_WARNING, needle, s.t + 2);
  g_free (needle);

  expect_error_both (g_bytes_new (NULL, 0), &s, NULL, GST_MESSAGE_ERROR,
      "The latent stream is empty", 0);
  expect_error_both (g_bytes_new (d, 5), &s, NULL, GST_MESSAGE_ERROR,
      "5 bytes, shorter than the 8-byte safetensors prefix", 0);

  /* a header length far beyond the file's end: refused in pull mode without reading it */
  memcpy (prefix, &claim, 8);
  memset (prefix + 8, '{', 100);
  cut = g_bytes_new (prefix, sizeof (prefix));
  base = rss_reset_peak ();
  expect_pull_error (cut, &s, NULL, GST_MESSAGE_ERROR, "the stream ended inside the 90000000-byte "
      "header (100 bytes of it arrived)", 0);
  fail_unless (rss_kb (TRUE) - base < 45000);
  g_bytes_unref (cut);
  g_bytes_unref (bytes);
  g_free (hdr);
}

GST_END_TEST;

/* a decoder's weights given as latents: said so, and where they belong, in both modes */
GST_START_TEST (test_weights_file)
{
  const Shape s = { 1, 1, 1, 1, 1, FALSE };
  gchar *path = g_build_filename (g_getenv ("VAE_TEST_DATA"),
      "taef2_z32_w16.orig.safetensors", NULL), *data;
  const gchar *needle = "Not a latent file: it holds model weights (79 tensors "
      "such as '1.weight'), not latents: give it to vaedecode's model-file.";
  GBytes *bytes;
  GstHarness *h;
  GstBus *bus;
  gsize len;

  fail_unless (g_file_get_contents (path, &data, &len, NULL), "%s", path);
  bytes = g_bytes_new_take (data, len);
  expect_pull_error (bytes, &s, NULL, GST_MESSAGE_ERROR, needle, 0);
  h = push_harness (NULL, &bus);
  push_range (h, bytes, 0, len);
  expect_bus_message (bus, GST_MESSAGE_ERROR, needle);
  harness_teardown (h, bus);
  g_bytes_unref (bytes);
  g_free (path);
}

GST_END_TEST;

static gpointer
send_eos (gpointer pipeline)
{
  gst_element_send_event (GST_ELEMENT (pipeline), gst_event_new_eos ());
  return NULL;
}

/* An EOS sent to the pipeline (gst-launch-1.0 -e on Ctrl-C) while latentparse is midway
 * through a file: upstream ends the stream early, which is not a truncated file. The frames
 * pushed come out, then an INFO message says the stream was stopped after them; no warning.
 * Pull mode (filesrc ! latentparse: the source's next range is EOS) and push mode
 * (filesrc ! queue ! latentparse: the source pushes an EOS). */
static void
expect_stopped (const gchar * queue)
{
  const Shape s = { 40, 5, 1, 7, 9, FALSE };
  guint64 size, k = 0;
  gchar *path = write_latent (&s, &size), *desc, *needle;
  GstElement *p, *sink;
  GstMessage *msg;
  GThread *thread = NULL;
  GError *err = NULL;
  GstBus *bus;

  desc = g_strdup_printf ("filesrc location=%s blocksize=256 %s ! latentparse "
      "name=parse ! appsink name=sink sync=false max-buffers=1", path, queue);
  p = gst_parse_launch (desc, &err);
  fail_unless (p != NULL && err == NULL, "%s", desc);
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  bus = gst_element_get_bus (p);
  gst_element_set_state (p, GST_STATE_PLAYING);
  for (;;) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        10 * GST_SECOND);

    if (sample == NULL)
      break;
    check_frame (gst_sample_get_buffer (sample), &s, k++);
    gst_sample_unref (sample);
    /* (sent from another thread: in push mode the source finishes its push first, which
     * waits for the frames we take here; the pause lets that thread run before we take them
     * all, on a loaded machine too) */
    if (k == 3) {
      thread = g_thread_new ("eos", send_eos, p);
      g_usleep (G_USEC_PER_SEC / 10);
    }
  }
  fail_unless (gst_app_sink_is_eos (GST_APP_SINK (sink)), "%s: no EOS", desc);
  g_thread_join (thread);
  fail_unless (k >= 3 && k < 40, "%s: %" G_GUINT64_FORMAT " frames", desc, k);

  needle = g_strdup_printf ("The latent stream was stopped (EOS) after %"
      G_GUINT64_FORMAT " of 40 latent frames.", k);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_INFO | GST_MESSAGE_WARNING |
      GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "%s: no message (wanted '%s')", desc, needle);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_INFO)
    gst_message_parse_info (msg, &err, NULL);
  else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING)
    gst_message_parse_warning (msg, &err, NULL);
  else
    gst_message_parse_error (msg, &err, NULL);
  fail_unless (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_INFO
      && strcmp (err->message, needle) == 0, "%s: %s '%s', wanted the info "
      "'%s'", desc, GST_MESSAGE_TYPE_NAME (msg), err->message, needle);
  g_clear_error (&err);
  gst_message_unref (msg);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING | GST_MESSAGE_ERROR);
  fail_if (msg != NULL, "%s: a warning or an error besides", desc);

  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (needle);
  g_free (desc);
  remove_latent (path);
}

GST_START_TEST (test_stopped_pull)
{
  expect_stopped ("");
}

GST_END_TEST;

GST_START_TEST (test_stopped_push)
{
  expect_stopped ("! queue max-size-buffers=2 max-size-bytes=0 max-size-time=0");
}

GST_END_TEST;

/* ---- seeking and duration ---------------------------------------------------------------- */

/* what went by a pad since the last flush: its buffers and the segment's start */
typedef struct
{
  GPtrArray *buffers;
  GstClockTime segment_start;
} Seen;

static GstPadProbeReturn
seen_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Seen *seen = user_data;
  GstEvent *event;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    g_ptr_array_add (seen->buffers, gst_buffer_ref (GST_PAD_PROBE_INFO_BUFFER
            (info)));
    return GST_PAD_PROBE_OK;
  }
  event = GST_PAD_PROBE_INFO_EVENT (info);
  if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP) {
    g_ptr_array_set_size (seen->buffers, 0);
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_SEGMENT) {
    const GstSegment *segment;

    gst_event_parse_segment (event, &segment);
    seen->segment_start = segment->start;
  }
  return GST_PAD_PROBE_OK;
}

/* wait for the state change (a preroll or a flushing seek) to complete */
static void
wait_state (GstElement * p)
{
  fail_unless (gst_element_get_state (p, NULL, NULL, 30 * GST_SECOND) ==
      GST_STATE_CHANGE_SUCCESS);
}

/* the pipeline's duration in TIME and in frames must be those of n frames at FPS */
static void
expect_duration (GstElement * p, guint64 n)
{
  gint64 d;

  fail_unless (gst_element_query_duration (p, GST_FORMAT_TIME, &d));
  fail_unless_equals_uint64 (d, gst_util_uint64_scale (n, GST_SECOND, FPS));
  fail_unless (gst_element_query_duration (p, GST_FORMAT_DEFAULT, &d));
  fail_unless_equals_uint64 (d, n);
}

/* desc (with an element named `probed` and a sink named `sink`) to PAUSED, its duration
 * checked, a flushing seek to `to` with flags (unless NONE), then to EOS: what went through
 * `probed`'s src pad after the seek */
static Seen
run_seek (const gchar * desc, guint64 frames, GstClockTime to,
    GstSeekFlags flags)
{
  GstElement *p = gst_parse_launch (desc, NULL), *probed;
  Seen seen = { g_ptr_array_new_with_free_func ((GDestroyNotify)
        gst_buffer_unref), GST_CLOCK_TIME_NONE
  };
  GstPad *pad;
  GstBus *bus;
  GstMessage *msg;

  fail_unless (p != NULL, "%s", desc);
  probed = gst_bin_get_by_name (GST_BIN (p), "probed");
  pad = gst_element_get_static_pad (probed, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
      seen_probe, &seen, NULL);
  gst_element_set_state (p, GST_STATE_PAUSED);
  wait_state (p);
  expect_duration (p, frames);
  if (GST_CLOCK_TIME_IS_VALID (to)) {
    fail_unless (gst_element_seek_simple (p, GST_FORMAT_TIME,
            GST_SEEK_FLAG_FLUSH | flags, to), "%s: seek refused", desc);
    wait_state (p);
  }
  gst_element_set_state (p, GST_STATE_PLAYING);
  bus = gst_element_get_bus (p);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND, GST_MESSAGE_EOS |
      GST_MESSAGE_ERROR);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
      "%s: no EOS", desc);
  gst_message_unref (msg);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pad);
  gst_object_unref (probed);
  gst_object_unref (p);
  return seen;
}

/* a seek to decoded frame n of the file in pull mode (queue = "") or push mode through a
 * queue, upstream seeking in bytes: the latent frames from `first` on, the first DISCONT,
 * and a segment that starts at frame `start` */
static void
expect_seek (const Shape * s, const gchar * queue, guint64 n,
    GstSeekFlags flags, guint64 first, guint64 start)
{
  const guint64 per_item = s->video ? 1 + FPL * (s->t - 1) : 1;
  guint64 size, k;
  gchar *path = write_latent (s, &size);
  gchar *desc = g_strdup_printf ("filesrc location=%s %s ! latentparse "
      "name=probed ! fakesink sync=false", path, queue);
  Seen seen = run_seek (desc, s->b * per_item,
      gst_util_uint64_scale (n, GST_SECOND, FPS), flags);

  fail_unless_equals_uint64 (seen.segment_start,
      gst_util_uint64_scale (start, GST_SECOND, FPS));
  fail_unless (seen.buffers->len == s->b * s->t - first, "seek to frame %"
      G_GUINT64_FORMAT " %s: %u latent frames, want %" G_GUINT64_FORMAT, n,
      queue, seen.buffers->len, s->b * s->t - first);
  for (k = 0; k < seen.buffers->len; k++)
    check_frame_seek (g_ptr_array_index (seen.buffers, k), s, first + k,
        k == 0);
  g_ptr_array_unref (seen.buffers);
  g_free (desc);
  remove_latent (path);
}

/* Images seek straight to the frame; a video restarts at its first latent frame, the segment
 * starting at the target (a causal decoder needs the frames before it: they are decoded and
 * clipped), or with KEY_UNIT at the video's start (the nearer one with SNAP_NEAREST). The
 * same in pull mode and in push mode, where latentparse seeks upstream in bytes. Durations
 * in TIME and in frames: 2 videos of 1 + 4 x 5 frames, 5 images. */
GST_START_TEST (test_seek)
{
  const Shape video = { 2, 5, 6, 7, 9, TRUE };
  const Shape images = { 5, 5, 1, 7, 9, FALSE };
  const gchar *modes[] = { "", "! queue" };
  gint i;

  for (i = 0; i < 2; i++) {
    expect_seek (&images, modes[i], 3, 0, 3, 3);
    expect_seek (&images, modes[i], 0, 0, 0, 0);
    /* frame 30 is in the second video (frames 21 to 41), in its latent frame 3 */
    expect_seek (&video, modes[i], 30, 0, 6, 30);
    expect_seek (&video, modes[i], 30, GST_SEEK_FLAG_KEY_UNIT, 6, 21);
    expect_seek (&video, modes[i], 17, GST_SEEK_FLAG_KEY_UNIT |
        GST_SEEK_FLAG_SNAP_NEAREST, 6, 21);
    expect_seek (&video, modes[i], 5, 0, 0, 5);
  }
}

GST_END_TEST;

/* a byte stream that cannot seek (GstHarness): not seekable, a seek refused; the duration
 * known once the header is in */
GST_START_TEST (test_seek_refused_in_push_mode)
{
  const Shape s = { 3, 5, 1, 7, 9, FALSE };
  GBytes *bytes = latent_bytes (&s);
  GstBus *bus;
  GstHarness *h = push_harness (NULL, &bus);
  GstQuery *q = gst_query_new_seeking (GST_FORMAT_TIME);
  gboolean seekable = TRUE;
  gint64 d;

  push_range (h, bytes, 0, g_bytes_get_size (bytes));
  fail_unless (gst_pad_peer_query (h->sinkpad, q));
  gst_query_parse_seeking (q, NULL, &seekable, NULL, NULL);
  fail_if (seekable);
  gst_query_unref (q);
  fail_unless (gst_pad_peer_query_duration (h->sinkpad, GST_FORMAT_TIME, &d));
  fail_unless_equals_uint64 (d, gst_util_uint64_scale (3, GST_SECOND, FPS));
  fail_if (gst_harness_push_upstream_event (h, gst_event_new_seek (1.0,
              GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, GST_SEEK_TYPE_SET,
              GST_SECOND / FPS, GST_SEEK_TYPE_NONE, -1)));
  g_bytes_unref (bytes);
  harness_teardown (h, bus);
}

GST_END_TEST;

/* decoded through vaedecode: a seek to frame n gives the frames from n on of a whole decode,
 * equal to them (a video's earlier latent frames are decoded and dropped, not skipped) */
static void
expect_decoded_seek (const gchar * latent, const gchar * model, guint64 frames,
    guint64 n)
{
  const gchar *data = g_getenv ("VAE_TEST_DATA");
  gchar *desc = g_strdup_printf ("filesrc location=%s/%s ! latentparse ! "
      "vaedecode model-file=%s/%s name=probed ! fakesink sync=false", data,
      latent, data, model);
  Seen all = run_seek (desc, frames, GST_CLOCK_TIME_NONE, 0);
  Seen seen = run_seek (desc, frames, gst_util_uint64_scale (n, GST_SECOND,
          FPS), 0);
  guint64 k;

  fail_unless_equals_int (all.buffers->len, frames);
  /* (the frames before n may pass vaedecode: the sink drops them) */
  while (seen.buffers->len > 0 && GST_BUFFER_PTS (g_ptr_array_index
          (seen.buffers, 0)) < seen.segment_start)
    g_ptr_array_remove_index (seen.buffers, 0);
  fail_unless_equals_int (seen.buffers->len, frames - n);
  for (k = 0; k < frames - n; k++) {
    GstBuffer *a = g_ptr_array_index (all.buffers, n + k);
    GstBuffer *b = g_ptr_array_index (seen.buffers, k);
    GstMapInfo map;

    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), GST_BUFFER_PTS (a));
    fail_unless (gst_buffer_map (a, &map, GST_MAP_READ));
    fail_unless (gst_buffer_memcmp (b, 0, map.data, map.size) == 0,
        "%s: frame %" G_GUINT64_FORMAT " after the seek differs", latent,
        n + k);
    gst_buffer_unmap (a, &map);
  }
  g_ptr_array_unref (all.buffers);
  g_ptr_array_unref (seen.buffers);
  g_free (desc);
}

GST_START_TEST (test_seek_decoded)
{
  /* 2 images; 4 Wan 2.1 latent frames, 13 frames (frame 6 from latent frame 2) */
  expect_decoded_seek ("taef2_z32_w16.latent", "taef2_z32_w16.orig.safetensors",
      2, 1);
  expect_decoded_seek ("wan21_b4.latent", "wan21_b4.orig.safetensors", 13, 6);
}

GST_END_TEST;

static Suite *
latentparse_suite (void)
{
  Suite *s = suite_create ("latentparse");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 60);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_pull_frames);
  tcase_add_test (tc, test_pull_memory);
  tcase_add_test (tc, test_push_item_bound);
  tcase_add_test (tc, test_push_frames_as_they_arrive);
  tcase_add_test (tc, test_refuse_above_bound);
  tcase_add_test (tc, test_truncated);
  tcase_add_test (tc, test_weights_file);
  tcase_add_test (tc, test_stopped_pull);
  tcase_add_test (tc, test_stopped_push);
  tcase_add_test (tc, test_seek);
  tcase_add_test (tc, test_seek_refused_in_push_mode);
  tcase_add_test (tc, test_seek_decoded);
  return s;
}

int
main (int argc, char **argv)
{
  vae_test_fresh_registry ();
  gst_check_init (&argc, &argv);
  return gst_check_run_suite (latentparse_suite (), "latentparse", __FILE__);
}
