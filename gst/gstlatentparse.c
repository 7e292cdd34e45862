/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 */

/**
 * SECTION:element-latentparse
 * @title: latentparse
 * @short_description: splits a safetensors latent file into a stream of latent frames
 *
 * latentparse reads a safetensors byte stream (a ComfyUI `.latent` file, or any safetensors
 * file that holds a latent tensor) and pushes one `video/x-latent` buffer per latent frame.
 * The tensor is chosen by name (#GstLatentParse:tensor-name) and may be F32, F16 or BF16 with
 * shape [B, C, H, W] (B frames) or [B, C, T, H, W] (T latent frames per batch item, pushed in
 * order). The header is validated as strictly as a model file's.
 *
 * Memory is bounded by #GstLatentParse:max-size-bytes. A 5-D tensor is channel-major, so
 * every frame's plane of the last channel comes near the end of its batch item. Where
 * upstream offers random access (filesrc directly before latentparse), the sink pad runs in
 * pull mode and reads each frame's C planes where they lie: one frame is held, whatever the
 * file's size. In push mode (a network source, a queue before latentparse) a 4-D tensor
 * still streams frame by frame, but a 5-D batch item is held whole: its frames go out one
 * by one as their last channel's planes arrive, and an item larger than max-size-bytes is
 * refused with an error rather than buffered.
 *
 * PTS and DURATION are those of the decoded frames a latent frame gives, at
 * #GstLatentParse:framerate (the decoded video's rate, also put in the caps). A 4-D tensor
 * holds images: one frame per latent frame. A 5-D tensor holds videos for a causal video
 * decoder: latent frame 0 of each batch item gives one frame and every later one
 * #GstLatentParse:frames-per-latent (4 for Wan 2.1/2.2 and TAEHV), so latent t > 0 of a
 * video starts at frame 4t-3 and lasts four frames. Each batch item after the first is a new
 * video: its first latent buffer is flagged DISCONT (which makes vaedecode start a new
 * stream), and the timestamps run on from the previous item's.
 *
 * A stream that ends early, a malformed header, a missing tensor or an unusable shape or dtype
 * stops the pipeline with an error that names the cause; frames pushed before stay pushed.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=../shared/reference/taef2/full.latent ! latentparse \
 *     ! vaedecode model-file=../shared/models/taef2_decoder.safetensors \
 *     ! videoconvert ! pngenc ! multifilesink location=frame-%02d.png
 * ]|
 * |[
 * gst-launch-1.0 filesrc location=../shared/media/wan21_cheesecake.latent \
 *     ! latentparse latent-space=normalized \
 *     ! vaedecode model-file=wan_2.1_vae.safetensors \
 *     ! video/x-raw,format=I420 ! x264enc ! mp4mux ! filesink location=cheesecake.mp4
 * ]| splits a [1, 16, 16, 40, 64] Wan 2.1 latent into 16 latent frames stamped for the 61
 * frames they decode to at 16 fps.
 *
 * Since: 0.1
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstlatentparse.h"
#include "gstlatentinfo.h"

#include <gst/base/gstadapter.h>

#include "vae-safetensors.h"

GST_DEBUG_CATEGORY_STATIC (gst_latent_parse_debug);
#define GST_CAT_DEFAULT gst_latent_parse_debug

#define VAE_ERR_SIZE 512

enum
{
  PROP_0,
  PROP_TENSOR_NAME,
  PROP_FRAMERATE,
  PROP_LATENT_SPACE,
  PROP_FRAMES_PER_LATENT,
  PROP_MAX_SIZE_BYTES,
};

#define DEFAULT_TENSOR_NAME "latent_tensor"
#define DEFAULT_FPS_N 16
#define DEFAULT_FPS_D 1
#define DEFAULT_LATENT_SPACE GST_VAE_LATENT_SPACE_AUTO
#define DEFAULT_FRAMES_PER_LATENT 4
#define DEFAULT_MAX_SIZE_BYTES (256 * 1024 * 1024)

typedef enum
{
  STATE_PREFIX,                 /* waiting for the 8-byte header length */
  STATE_HEADER,                 /* waiting for the JSON header */
  STATE_DATA,                   /* streaming the tensor's bytes */
  STATE_DONE,                   /* every frame pushed; the rest is ignored */
} GstLatentParseState;

struct _GstLatentParse
{
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties */
  gchar *tensor_name;
  gint fps_n, fps_d;
  GstVaeLatentSpace latent_space;
  guint frames_per_latent;
  guint64 max_size_bytes;

  /* stream state */
  gboolean pull;                /* sink pad in pull mode: each frame is read plane by plane */
  GstAdapter *adapter;          /* push mode: the bytes not used yet */
  guint64 offset;               /* push mode: stream bytes flushed from the adapter */
  gint64 upstream_size;         /* pull mode: the stream's length, -1 if unknown */
  GstLatentParseState state;
  guint64 header_len;
  guint64 data_start;           /* 8 + header_len: where the byte buffer begins */
  guint64 tensor_offset, tensor_bytes;  /* our tensor's range in the byte buffer */
  gint batch, frames_per_item;  /* B and T */
  gboolean video;               /* 5-D: causal video latents */
  gsize plane_bytes;            /* one channel of one frame: H * W * elsize */
  guint64 item_bytes;           /* one batch item: C * T planes, channel-major */
  gint items_done;              /* b of the next frame */
  gint frame_in_item;           /* t of the next frame */
  guint64 frames_out;           /* latent frames pushed */
  guint64 video_frames;         /* decoded frames they stand for */
  GstFlowReturn last_flow;      /* of the last chain call */
  GstLatentInfo info;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS_ANY);

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_LATENT_CAPS_STR));

#define gst_latent_parse_parent_class parent_class
G_DEFINE_TYPE (GstLatentParse, gst_latent_parse, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (latentparse, "latentparse", GST_RANK_NONE,
    GST_TYPE_LATENT_PARSE);

static void
gst_latent_parse_reset (GstLatentParse * self)
{
  gst_adapter_clear (self->adapter);
  self->state = STATE_PREFIX;
  self->offset = 0;
  self->upstream_size = -1;
  self->header_len = 0;
  self->items_done = 0;
  self->frame_in_item = 0;
  self->frames_out = 0;
  self->video_frames = 0;
  self->last_flow = GST_FLOW_OK;
}

static guint64
gst_latent_parse_max_size (GstLatentParse * self)
{
  guint64 max;

  GST_OBJECT_LOCK (self);
  max = self->max_size_bytes;
  GST_OBJECT_UNLOCK (self);
  return max;
}

/* the stream ended after `got` bytes, short of what the current state needs */
static void
gst_latent_parse_error_truncated (GstLatentParse * self, guint64 got)
{
  const guint64 tensor_start = self->data_start + self->tensor_offset;

  if (self->state == STATE_PREFIX && got == 0)
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The latent stream is empty."), (NULL));
  else if (self->state == STATE_PREFIX)
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Truncated latent file: %" G_GUINT64_FORMAT " bytes, shorter "
            "than the 8-byte safetensors prefix.", got), (NULL));
  else if (self->state == STATE_HEADER)
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Truncated latent file: the stream ended inside the "
            "%" G_GUINT64_FORMAT "-byte header (%" G_GUINT64_FORMAT
            " bytes of it arrived).", self->header_len, got - 8), (NULL));
  else
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Truncated latent file: tensor '%s' needs %" G_GUINT64_FORMAT
            " bytes but the stream ended after %" G_GUINT64_FORMAT
            " of them; %" G_GUINT64_FORMAT " frames were pushed.",
            self->tensor_name, self->tensor_bytes,
            got > tensor_start ? got - tensor_start : 0, self->frames_out),
        (NULL));
}

/* read the header length; FALSE after posting an error */
static gboolean
gst_latent_parse_prefix (GstLatentParse * self, const guint8 prefix[8])
{
  const guint64 max = gst_latent_parse_max_size (self);
  char err[VAE_ERR_SIZE] = "";

  if (!vae_st_prefix_parse (prefix, &self->header_len, err, sizeof (err))) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Not a safetensors latent file: %s", err), (NULL));
    return FALSE;
  }
  /* the header is held whole to be parsed */
  if (self->header_len > max) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The latent file's header would take %" G_GUINT64_FORMAT " bytes, "
            "more than max-size-bytes (%" G_GUINT64_FORMAT ").",
            self->header_len, max), (NULL));
    return FALSE;
  }
  self->data_start = 8 + self->header_len;
  self->state = STATE_HEADER;
  return TRUE;
}

/* the bytes to hold at once, which max-size-bytes bounds: a frame in pull mode; in push mode
 * a whole batch item, for in the C-major [C, T, H, W] item every frame's plane of channel C-1
 * comes after all the planes of the other channels. FALSE after posting an error. */
static gboolean
gst_latent_parse_check_size (GstLatentParse * self,
    const struct vae_st_tensor *t)
{
  const guint64 max = gst_latent_parse_max_size (self);
  const guint64 frame = (guint64) self->plane_bytes * self->info.channels;

  if (frame > max) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' has frames of %" G_GUINT64_FORMAT " bytes (%d "
            "channels of %dx%d %s), more than max-size-bytes (%"
            G_GUINT64_FORMAT ").", t->name, frame, self->info.channels,
            self->info.width, self->info.height, vae_dtype_name (t->dtype),
            max), (NULL));
    return FALSE;
  }
  if (!self->pull && self->item_bytes > max) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' holds videos of %" G_GUINT64_FORMAT " bytes per "
            "batch item, more than max-size-bytes (%" G_GUINT64_FORMAT "): its "
            "[B, C, T, H, W] layout stores every frame's last channel at the "
            "end of the item, so a pushed byte stream is held an item at a "
            "time. Read the file in pull mode (filesrc directly before latentparse, "
            "no queue between), which holds one frame (%" G_GUINT64_FORMAT
            " bytes), or raise max-size-bytes.", t->name, self->item_bytes,
            max, frame), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* check the tensor and fix the stream's caps; FALSE after posting an error */
/* whether downstream took these caps */
static gboolean
gst_latent_parse_peer_has_caps (GstLatentParse * self, GstCaps * caps)
{
  GstPad *peer = gst_pad_get_peer (self->srcpad);
  GstCaps *now = peer ? gst_pad_get_current_caps (peer) : NULL;
  gboolean ok = now != NULL && gst_caps_is_equal (now, caps);

  if (now)
    gst_caps_unref (now);
  if (peer)
    gst_object_unref (peer);
  return ok;
}

static gboolean
gst_latent_parse_setup (GstLatentParse * self, const struct vae_st_header *hdr)
{
  const struct vae_st_tensor *t = vae_st_header_find (hdr, self->tensor_name);
  gint64 c, h, w, tf;
  guint fpl;
  GstSegment segment;
  GstCaps *caps;
  GString *names;
  gint i;

  if (t == NULL) {
    names = g_string_new (NULL);
    for (i = 0; i < hdr->n_tensors && i < 8; i++)
      g_string_append_printf (names, "%s'%s'", i ? ", " : "",
          hdr->tensors[i].name);
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("No tensor named '%s' in the latent file (it has %d: %s%s); set "
            "tensor-name.", self->tensor_name, hdr->n_tensors, names->str,
            hdr->n_tensors > 8 ? ", ..." : ""), (NULL));
    g_string_free (names, TRUE);
    return FALSE;
  }
  if (!vae_dtype_is_float (t->dtype)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' is %s; latents must be F32, F16 or BF16.",
            t->name, vae_dtype_name (t->dtype)), (NULL));
    return FALSE;
  }
  if (t->n_dims != 4 && t->n_dims != 5) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' has %d dimensions; expected [B, C, H, W] or "
            "[B, C, T, H, W].", t->name, t->n_dims), (NULL));
    return FALSE;
  }
  c = t->shape[1];
  tf = t->n_dims == 5 ? t->shape[2] : 1;
  h = t->shape[t->n_dims - 2];
  w = t->shape[t->n_dims - 1];
  if (t->shape[0] < 1 || c < 1 || tf < 1 || h < 1 || w < 1) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' is empty (a dimension is 0).", t->name), (NULL));
    return FALSE;
  }
  if (c > GST_LATENT_MAX_DIM || h > GST_LATENT_MAX_DIM
      || w > GST_LATENT_MAX_DIM || t->shape[0] > G_MAXINT
      || tf > G_MAXINT) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' has an absurd size: %" G_GINT64_FORMAT
            " channels of %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
            " (each at most %d).", t->name, c, w, h, GST_LATENT_MAX_DIM),
        (NULL));
    return FALSE;
  }

  self->info.dtype = t->dtype;
  self->info.channels = c;
  self->info.height = h;
  self->info.width = w;
  self->info.fps_n = self->fps_n;
  self->info.fps_d = self->fps_d;
  self->info.space = self->latent_space;
  self->batch = t->shape[0];
  self->frames_per_item = tf;
  self->video = t->n_dims == 5;
  self->plane_bytes = (gsize) h * w * (vae_dtype_bits (t->dtype) / 8);
  self->item_bytes = t->nbytes / t->shape[0];
  self->tensor_offset = t->offset;
  self->tensor_bytes = t->nbytes;
  if (!gst_latent_parse_check_size (self, t))
    return FALSE;
  GST_INFO_OBJECT (self, "tensor '%s': %" G_GINT64_FORMAT " x %d frames of "
      "%" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " %s%s, "
      "%s mode", t->name, t->shape[0], self->frames_per_item, c, h, w,
      vae_dtype_name (t->dtype), self->video ? " (video)" : "",
      self->pull ? "pull" : "push");

  /* (a sticky event is stored whatever downstream says: whether the peer took the caps
   * tells) */
  caps = gst_latent_info_to_caps (&self->info);
  gst_pad_push_event (self->srcpad, gst_event_new_caps (gst_caps_ref (caps)));
  if (!gst_latent_parse_peer_has_caps (self, caps)) {
    /* (vaedecode says why before this; an element that refuses quietly does not) */
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Downstream does not take the latent caps %" GST_PTR_FORMAT ".",
            caps), (NULL));
    gst_caps_unref (caps);
    return FALSE;
  }
  gst_caps_unref (caps);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_pad_push_event (self->srcpad, gst_event_new_segment (&segment));

  /* the totals (gstlatentinfo.h): vaedecode's progress messages and early-EOS warning */
  GST_OBJECT_LOCK (self);
  fpl = self->frames_per_latent;
  GST_OBJECT_UNLOCK (self);
  gst_pad_push_event (self->srcpad, gst_latent_totals_event_new ((guint64)
          self->batch * tf, (guint64) self->batch * (1 + fpl * (tf - 1))));
  return TRUE;
}

/* parse the header_len header bytes and set up the stream; FALSE after posting an error */
static gboolean
gst_latent_parse_header (GstLatentParse * self, const guint8 * json)
{
  char err[VAE_ERR_SIZE] = "";
  struct vae_st_header *hdr =
      vae_st_header_parse (json, self->header_len, err, sizeof (err));
  gboolean ok;

  if (hdr == NULL) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Malformed latent file header: %s", err), (NULL));
    return FALSE;
  }
  ok = gst_latent_parse_setup (self, hdr);
  vae_st_header_free (hdr);
  if (ok)
    self->state = STATE_DATA;
  return ok;
}

/* where the batch item of the next frame begins in the stream */
static guint64
gst_latent_parse_item_start (GstLatentParse * self)
{
  return self->data_start + self->tensor_offset +
      (guint64) self->items_done * self->item_bytes;
}

/* where the next frame's plane of channel c begins in its [C, T, H, W] batch item */
static guint64
gst_latent_parse_plane_offset (GstLatentParse * self, gint c)
{
  return ((guint64) c * self->frames_per_item + self->frame_in_item) *
      self->plane_bytes;
}

/* pull mode: read size bytes at offset into dest; a short read is a truncated stream */
static GstFlowReturn
gst_latent_parse_pull (GstLatentParse * self, guint64 offset, gsize size,
    guint8 * dest)
{
  GstBuffer *buf = NULL;
  GstFlowReturn ret = gst_pad_pull_range (self->sinkpad, offset, size, &buf);
  guint64 got;

  if (ret == GST_FLOW_OK) {
    gsize n = gst_buffer_extract (buf, 0, dest, size);

    gst_buffer_unref (buf);
    if (n == size)
      return GST_FLOW_OK;
    got = offset + n;
  } else if (ret == GST_FLOW_EOS) {
    got = self->upstream_size >= 0 ? (guint64) self->upstream_size : offset;
  } else {
    return ret;
  }
  gst_latent_parse_error_truncated (self, got);
  return GST_FLOW_CUSTOM_ERROR;
}

/* stamp the next frame for the decoded frames it gives (1, or for latent t > 0 of a video
 * frames_per_latent), move on to the following one and push it */
static GstFlowReturn
gst_latent_parse_push_frame (GstLatentParse * self, GstBuffer * buf)
{
  guint fpl, m;

  GST_OBJECT_LOCK (self);
  fpl = self->frames_per_latent;
  GST_OBJECT_UNLOCK (self);
  m = self->video && self->frame_in_item > 0 ? fpl : 1;

  if (self->fps_n > 0) {
    GST_BUFFER_PTS (buf) = gst_util_uint64_scale (self->video_frames,
        GST_SECOND * self->fps_d, self->fps_n);
    GST_BUFFER_DURATION (buf) = gst_util_uint64_scale (self->video_frames + m,
        GST_SECOND * self->fps_d, self->fps_n) - GST_BUFFER_PTS (buf);
  }
  /* offsets count decoded frames, as a raw video stream's do */
  GST_BUFFER_OFFSET (buf) = self->video_frames;
  GST_BUFFER_OFFSET_END (buf) = self->video_frames + m;
  /* a new video: a causal decoder starts a new stream */
  if (self->video && self->frame_in_item == 0 && self->items_done > 0)
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
  self->video_frames += m;
  self->frames_out++;
  if (++self->frame_in_item == self->frames_per_item) {
    self->frame_in_item = 0;
    if (++self->items_done == self->batch)
      self->state = STATE_DONE;
  }
  return gst_pad_push (self->srcpad, buf);
}

/* gather the next frame's C planes, T planes apart in its batch item, and push it: in push
 * mode from the adapter, which starts at the item and holds the frame's last plane; in pull
 * mode from upstream, one read per plane */
static GstFlowReturn
gst_latent_parse_frame (GstLatentParse * self)
{
  const gsize plane = self->plane_bytes;
  const guint64 item = gst_latent_parse_item_start (self);
  GstBuffer *buf = gst_buffer_new_allocate (NULL,
      plane * self->info.channels, NULL);
  GstFlowReturn ret = GST_FLOW_OK;
  GstMapInfo map;
  gint c;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (c = 0; c < self->info.channels && ret == GST_FLOW_OK; c++) {
    const guint64 at = gst_latent_parse_plane_offset (self, c);

    if (self->pull)
      ret = gst_latent_parse_pull (self, item + at, plane,
          map.data + c * plane);
    else
      gst_adapter_copy (self->adapter, map.data + c * plane, at, plane);
  }
  gst_buffer_unmap (buf, &map);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref (buf);
    return ret;
  }
  return gst_latent_parse_push_frame (self, buf);
}

/* push mode: drop n bytes from the front of the adapter */
static void
gst_latent_parse_flush (GstLatentParse * self, gsize n)
{
  gst_adapter_flush (self->adapter, n);
  self->offset += n;
}

static GstFlowReturn
gst_latent_parse_process (GstLatentParse * self, GstBuffer * buffer)
{
  GstFlowReturn ret = GST_FLOW_OK;

  gst_adapter_push (self->adapter, buffer);

  while (ret == GST_FLOW_OK) {
    gsize avail = gst_adapter_available (self->adapter);

    if (self->state == STATE_PREFIX) {
      guint8 prefix[8];
      if (avail < 8)
        break;
      gst_adapter_copy (self->adapter, prefix, 0, 8);
      if (!gst_latent_parse_prefix (self, prefix))
        return GST_FLOW_CUSTOM_ERROR;
      gst_latent_parse_flush (self, 8);
    } else if (self->state == STATE_HEADER) {
      gboolean ok;

      if (avail < self->header_len)
        break;
      ok = gst_latent_parse_header (self,
          gst_adapter_map (self->adapter, self->header_len));
      gst_adapter_unmap (self->adapter);
      if (!ok)
        return GST_FLOW_CUSTOM_ERROR;
      gst_latent_parse_flush (self, self->header_len);
    } else if (self->state == STATE_DATA) {
      /* skip what comes before the next frame's batch item: the tensors stored before ours
       * and the items pushed already */
      guint64 item_start = gst_latent_parse_item_start (self);

      if (self->offset < item_start) {
        gsize skip = MIN (avail, item_start - self->offset);
        if (skip == 0)
          break;
        gst_latent_parse_flush (self, skip);
        continue;
      }
      /* a frame is whole once its last plane, channel C-1's, has arrived */
      if (avail < gst_latent_parse_plane_offset (self, self->info.channels - 1)
          + self->plane_bytes)
        break;
      ret = gst_latent_parse_frame (self);
    } else {
      gst_adapter_clear (self->adapter);
      break;
    }
  }
  return ret;
}

static GstFlowReturn
gst_latent_parse_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstLatentParse *self = GST_LATENT_PARSE (parent);

  GstFlowReturn ret = gst_latent_parse_process (self, buffer);

  /* A fatal error has been posted already, by us or by the decoder downstream (which
   * posts before it returns not-negotiated or an error): stop upstream with EOS rather
   * than a fatal flow, on which the source would post a second error (gst-launch-1.0
   * 1.22 can hang when two errors arrive during preroll). */
  self->last_flow = ret == GST_FLOW_CUSTOM_ERROR ? GST_FLOW_ERROR : ret;
  return self->last_flow <= GST_FLOW_NOT_NEGOTIATED ? GST_FLOW_EOS : ret;
}

static gboolean
gst_latent_parse_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstLatentParse *self = GST_LATENT_PARSE (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:
    case GST_EVENT_SEGMENT:
      /* the byte stream's own; ours go out once the header is parsed */
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      gst_latent_parse_reset (self);
      break;
    case GST_EVENT_EOS:
      /* after a fatal flow error (posted already) the EOS still goes on: the stream ends
       * for downstream and for an application that missed the error, as after a source's
       * fatal error. (Downstream may have asked for no more: then nothing is missing.) */
      if (self->state != STATE_DONE && self->last_flow == GST_FLOW_OK)
        gst_latent_parse_error_truncated (self,
            self->offset + gst_adapter_available (self->adapter));
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

/* pull mode: our own stream-start, then the header, read whole once its length is known to
 * fit the stream */
static GstFlowReturn
gst_latent_parse_pull_header (GstLatentParse * self)
{
  gchar *stream_id = gst_pad_create_stream_id (self->srcpad,
      GST_ELEMENT_CAST (self), NULL);
  guint8 prefix[8], *json;
  GstFlowReturn ret;

  gst_pad_push_event (self->srcpad, gst_event_new_stream_start (stream_id));
  g_free (stream_id);
  if (!gst_pad_peer_query_duration (self->sinkpad, GST_FORMAT_BYTES,
          &self->upstream_size))
    self->upstream_size = -1;

  ret = gst_latent_parse_pull (self, 0, 8, prefix);
  if (ret != GST_FLOW_OK)
    return ret;
  if (!gst_latent_parse_prefix (self, prefix))
    return GST_FLOW_CUSTOM_ERROR;
  if (self->upstream_size >= 0
      && self->data_start > (guint64) self->upstream_size) {
    gst_latent_parse_error_truncated (self, self->upstream_size);
    return GST_FLOW_CUSTOM_ERROR;
  }
  json = g_malloc (self->header_len);
  ret = gst_latent_parse_pull (self, 8, self->header_len, json);
  if (ret == GST_FLOW_OK && !gst_latent_parse_header (self, json))
    ret = GST_FLOW_CUSTOM_ERROR;
  g_free (json);
  return ret;
}

/* pull mode's streaming thread: one frame per call (the header was read at activation) */
static void
gst_latent_parse_loop (GstPad * pad)
{
  GstLatentParse *self = GST_LATENT_PARSE (GST_PAD_PARENT (pad));
  GstFlowReturn ret = GST_FLOW_EOS;

  if (self->state == STATE_DATA)
    ret = gst_latent_parse_frame (self);
  if (ret == GST_FLOW_OK)
    return;

  GST_DEBUG_OBJECT (self, "pausing: %s", gst_flow_get_name (ret));
  gst_pad_pause_task (pad);
  if (ret == GST_FLOW_FLUSHING)
    return;
  if (ret == GST_FLOW_NOT_LINKED)
    GST_ELEMENT_FLOW_ERROR (self, ret);
  /* Other errors are posted already: ours (CUSTOM_ERROR), the decoder's (which posts before
   * it returns not-negotiated or an error) and the source's. The EOS follows them too, as
   * after a source's error: downstream finishes what it has (a muxer writes its index). */
  gst_pad_push_event (self->srcpad, gst_event_new_eos ());
}

/* pull mode, in the state change to PAUSED: the header, the caps downstream (which the decoder
 * checks) and whether the first frame is all there. What is wrong there fails the state change
 * itself: posted later from the streaming thread, gst-launch-1.0 (1.22) may miss the error
 * (its bus sync handler quits a main loop that is not running yet) and wait forever. */
static gboolean
gst_latent_parse_pull_start (GstLatentParse * self)
{
  GstFlowReturn ret = gst_latent_parse_pull_header (self);

  if (ret == GST_FLOW_OK && self->upstream_size >= 0
      && gst_latent_parse_item_start (self) +
      gst_latent_parse_plane_offset (self, self->info.channels - 1) +
      self->plane_bytes > (guint64) self->upstream_size) {
    gst_latent_parse_error_truncated (self, self->upstream_size);
    ret = GST_FLOW_CUSTOM_ERROR;
  }
  if (ret < GST_FLOW_OK && ret != GST_FLOW_CUSTOM_ERROR
      && ret != GST_FLOW_FLUSHING)
    GST_ELEMENT_FLOW_ERROR (self, ret);
  return ret == GST_FLOW_OK;
}

/* pull mode when upstream offers random access (filesrc): a frame's planes are read where
 * they lie, so only a frame is held whatever the item's size; else push mode */
static gboolean
gst_latent_parse_sink_activate (GstPad * pad, GstObject * parent)
{
  GstQuery *query = gst_query_new_scheduling ();
  gboolean pull = gst_pad_peer_query (pad, query)
      && gst_query_has_scheduling_mode_with_flags (query, GST_PAD_MODE_PULL,
      GST_SCHEDULING_FLAG_SEEKABLE);

  gst_query_unref (query);
  GST_DEBUG_OBJECT (parent, "activating in %s mode", pull ? "pull" : "push");
  return gst_pad_activate_mode (pad, pull ? GST_PAD_MODE_PULL :
      GST_PAD_MODE_PUSH, TRUE);
}

static gboolean
gst_latent_parse_sink_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  GstLatentParse *self = GST_LATENT_PARSE (parent);

  /* (left as it is on deactivation: the loop may still be running until the task stops) */
  if (active)
    self->pull = mode == GST_PAD_MODE_PULL;
  if (mode != GST_PAD_MODE_PULL)
    return TRUE;
  if (active)
    return gst_latent_parse_pull_start (self)
        && gst_pad_start_task (pad, (GstTaskFunction) gst_latent_parse_loop,
        pad, NULL);
  return gst_pad_stop_task (pad);
}

static GstStateChangeReturn
gst_latent_parse_change_state (GstElement * element, GstStateChange transition)
{
  GstLatentParse *self = GST_LATENT_PARSE (element);

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    gst_latent_parse_reset (self);
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

static void
gst_latent_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstLatentParse *self = GST_LATENT_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TENSOR_NAME:
      g_free (self->tensor_name);
      self->tensor_name = g_value_dup_string (value);
      if (self->tensor_name == NULL)
        self->tensor_name = g_strdup (DEFAULT_TENSOR_NAME);
      break;
    case PROP_FRAMERATE:
      self->fps_n = gst_value_get_fraction_numerator (value);
      self->fps_d = gst_value_get_fraction_denominator (value);
      break;
    case PROP_LATENT_SPACE:
      self->latent_space = g_value_get_enum (value);
      break;
    case PROP_FRAMES_PER_LATENT:
      self->frames_per_latent = g_value_get_uint (value);
      break;
    case PROP_MAX_SIZE_BYTES:
      self->max_size_bytes = g_value_get_uint64 (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_latent_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstLatentParse *self = GST_LATENT_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TENSOR_NAME:
      g_value_set_string (value, self->tensor_name);
      break;
    case PROP_FRAMERATE:
      gst_value_set_fraction (value, self->fps_n, self->fps_d);
      break;
    case PROP_LATENT_SPACE:
      g_value_set_enum (value, self->latent_space);
      break;
    case PROP_FRAMES_PER_LATENT:
      g_value_set_uint (value, self->frames_per_latent);
      break;
    case PROP_MAX_SIZE_BYTES:
      g_value_set_uint64 (value, self->max_size_bytes);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_latent_parse_finalize (GObject * object)
{
  GstLatentParse *self = GST_LATENT_PARSE (object);

  g_object_unref (self->adapter);
  g_free (self->tensor_name);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_latent_parse_class_init (GstLatentParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_latent_parse_set_property;
  gobject_class->get_property = gst_latent_parse_get_property;
  gobject_class->finalize = gst_latent_parse_finalize;

  /**
   * GstLatentParse:tensor-name:
   *
   * The tensor that holds the latents; ComfyUI's `.latent` files call it `latent_tensor`.
   */
  g_object_class_install_property (gobject_class, PROP_TENSOR_NAME,
      g_param_spec_string ("tensor-name", "Tensor name",
          "Name of the latent tensor in the file", DEFAULT_TENSOR_NAME, flags));
  /**
   * GstLatentParse:framerate:
   *
   * Frame rate of the decoded video; it sets each latent frame's PTS and DURATION (those
   * of the decoded frames it gives) and the caps' framerate. 0/1 leaves buffers without
   * timestamps.
   */
  g_object_class_install_property (gobject_class, PROP_FRAMERATE,
      gst_param_spec_fraction ("framerate", "Frame rate",
          "Frame rate of the decoded video (0/1 = no timestamps)", 0, 1,
          G_MAXINT, 1, DEFAULT_FPS_N, DEFAULT_FPS_D, flags));
  /**
   * GstLatentParse:latent-space:
   *
   * Announces in the caps which space the file's latents are in (ComfyUI `.latent` files
   * hold raw latents); auto leaves the caps silent and the decoder assumes its own space.
   */
  g_object_class_install_property (gobject_class, PROP_LATENT_SPACE,
      g_param_spec_enum ("latent-space", "Latent space",
          "Space of the file's latents, put in the caps (auto = not stated)",
          GST_TYPE_VAE_LATENT_SPACE, DEFAULT_LATENT_SPACE, flags));
  /**
   * GstLatentParse:frames-per-latent:
   *
   * Decoded frames per latent frame of a video after its first (which gives one); only
   * used for 5-D [B, C, T, H, W] tensors, to stamp each latent frame with the time of the
   * frames it decodes to. Wan 2.1/2.2 and TAEHV use 4.
   */
  g_object_class_install_property (gobject_class, PROP_FRAMES_PER_LATENT,
      g_param_spec_uint ("frames-per-latent", "Frames per latent",
          "Decoded frames per latent frame after a video's first (5-D tensors "
          "only; Wan and TAEHV: 4)", 1, 64, DEFAULT_FRAMES_PER_LATENT, flags));
  /**
   * GstLatentParse:max-size-bytes:
   *
   * The most bytes latentparse holds at once: the header, and a latent frame, or in push
   * mode a 5-D tensor's whole batch item. Anything larger is refused with an error. The
   * default, 256 MiB, is over ten times a whole Wan 720p clip (81 frames: 16 x 21 x 90 x
   * 160, 18.5 MiB in F32) and a 5-D item of nearly 300 such latent frames in push mode, while
   * a source that announces gigabytes cannot grow memory until the OOM killer steps in.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_SIZE_BYTES,
      g_param_spec_uint64 ("max-size-bytes", "Max size bytes",
          "Most bytes held at once: the header, a frame, in push mode a 5-D "
          "batch item", 1, G_MAXUINT64, DEFAULT_MAX_SIZE_BYTES, flags));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Latent parser",
      "Codec/Parser", "Splits a safetensors latent file (ComfyUI .latent) into "
      "latent frames", "gst-vaedecode developers");
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_latent_parse_change_state);

  GST_DEBUG_CATEGORY_INIT (gst_latent_parse_debug, "latentparse", 0,
      "Latent file parser");
}

static void
gst_latent_parse_init (GstLatentParse * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_latent_parse_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_latent_parse_sink_event));
  gst_pad_set_activate_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_latent_parse_sink_activate));
  gst_pad_set_activatemode_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_latent_parse_sink_activate_mode));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->tensor_name = g_strdup (DEFAULT_TENSOR_NAME);
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;
  self->latent_space = DEFAULT_LATENT_SPACE;
  self->frames_per_latent = DEFAULT_FRAMES_PER_LATENT;
  self->max_size_bytes = DEFAULT_MAX_SIZE_BYTES;
  self->adapter = gst_adapter_new ();
}
