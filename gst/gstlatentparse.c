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
 * order). Frames are pushed as soon as their bytes have arrived; the header is validated as
 * strictly as a model file's.
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
};

#define DEFAULT_TENSOR_NAME "latent_tensor"
#define DEFAULT_FPS_N 16
#define DEFAULT_FPS_D 1
#define DEFAULT_LATENT_SPACE GST_VAE_LATENT_SPACE_AUTO
#define DEFAULT_FRAMES_PER_LATENT 4

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

  /* stream state */
  GstAdapter *adapter;
  GstLatentParseState state;
  guint64 header_len;
  guint64 consumed;             /* bytes of the byte buffer taken so far */
  guint64 tensor_offset, tensor_bytes;
  gint batch, frames_per_item;  /* B and T */
  gboolean video;               /* 5-D: causal video latents */
  gsize item_bytes;             /* bytes of one batch item: C * T * H * W * elsize */
  gint items_done;
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
  self->header_len = 0;
  self->consumed = 0;
  self->items_done = 0;
  self->frames_out = 0;
  self->video_frames = 0;
  self->last_flow = GST_FLOW_OK;
}

/* check the tensor and fix the stream's caps; FALSE after posting an error */
static gboolean
gst_latent_parse_setup (GstLatentParse * self, const struct vae_st_header *hdr)
{
  const struct vae_st_tensor *t = vae_st_header_find (hdr, self->tensor_name);
  gint64 c, h, w, tf;
  GstSegment segment;
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
  self->item_bytes = (gsize) (t->nbytes / t->shape[0]);
  self->tensor_offset = t->offset;
  self->tensor_bytes = t->nbytes;
  GST_INFO_OBJECT (self, "tensor '%s': %" G_GINT64_FORMAT " x %d frames of "
      "%" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " %s%s",
      t->name, t->shape[0], self->frames_per_item, c, h, w,
      vae_dtype_name (t->dtype), self->video ? " (video)" : "");

  {
    GstCaps *caps = gst_latent_info_to_caps (&self->info);
    gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
    gst_caps_unref (caps);
  }
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_pad_push_event (self->srcpad, gst_event_new_segment (&segment));
  return TRUE;
}

/* push the T frames of one complete batch item; each is stamped for the decoded frames it
 * gives: 1, or for latent t > 0 of a video frames_per_latent */
static GstFlowReturn
gst_latent_parse_push_item (GstLatentParse * self, const guint8 * item)
{
  const gsize el = vae_dtype_bits (self->info.dtype) / 8;
  const gsize plane = (gsize) self->info.height * self->info.width * el;
  const gint tf = self->frames_per_item;
  GstFlowReturn ret = GST_FLOW_OK;
  guint fpl;
  gint t, c;

  GST_OBJECT_LOCK (self);
  fpl = self->frames_per_latent;
  GST_OBJECT_UNLOCK (self);

  for (t = 0; t < tf && ret == GST_FLOW_OK; t++) {
    GstBuffer *buf = gst_buffer_new_allocate (NULL,
        plane * self->info.channels, NULL);
    const guint m = self->video && t > 0 ? fpl : 1;
    GstMapInfo map;

    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    /* [C, T, H, W] -> frame t as [C, H, W] */
    for (c = 0; c < self->info.channels; c++)
      memcpy (map.data + c * plane, item + ((gsize) c * tf + t) * plane, plane);
    gst_buffer_unmap (buf, &map);

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
    if (self->video && t == 0 && self->items_done > 0)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    self->video_frames += m;
    self->frames_out++;
    ret = gst_pad_push (self->srcpad, buf);
  }
  return ret;
}

static GstFlowReturn
gst_latent_parse_process (GstLatentParse * self, GstBuffer * buffer)
{
  char err[VAE_ERR_SIZE] = "";
  GstFlowReturn ret = GST_FLOW_OK;

  gst_adapter_push (self->adapter, buffer);

  while (ret == GST_FLOW_OK) {
    gsize avail = gst_adapter_available (self->adapter);

    if (self->state == STATE_PREFIX) {
      guint8 prefix[8];
      if (avail < 8)
        break;
      gst_adapter_copy (self->adapter, prefix, 0, 8);
      if (!vae_st_prefix_parse (prefix, &self->header_len, err, sizeof (err))) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT,
            ("Not a safetensors latent file: %s", err), (NULL));
        return GST_FLOW_CUSTOM_ERROR;
      }
      gst_adapter_flush (self->adapter, 8);
      self->state = STATE_HEADER;
    } else if (self->state == STATE_HEADER) {
      struct vae_st_header *hdr;
      const guint8 *json;
      gboolean ok;

      if (avail < self->header_len)
        break;
      json = gst_adapter_map (self->adapter, self->header_len);
      hdr = vae_st_header_parse (json, self->header_len, err, sizeof (err));
      gst_adapter_unmap (self->adapter);
      if (hdr == NULL) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT,
            ("Malformed latent file header: %s", err), (NULL));
        return GST_FLOW_CUSTOM_ERROR;
      }
      ok = gst_latent_parse_setup (self, hdr);
      vae_st_header_free (hdr);
      if (!ok)
        return GST_FLOW_CUSTOM_ERROR;
      gst_adapter_flush (self->adapter, self->header_len);
      self->state = STATE_DATA;
    } else if (self->state == STATE_DATA) {
      /* skip the tensors stored before ours, then take one batch item at a time */
      guint64 item_start = self->tensor_offset +
          (guint64) self->items_done * self->item_bytes;

      if (self->consumed < item_start) {
        gsize skip = MIN (avail, item_start - self->consumed);
        if (skip == 0)
          break;
        gst_adapter_flush (self->adapter, skip);
        self->consumed += skip;
        continue;
      }
      if (avail < self->item_bytes)
        break;
      {
        const guint8 *item = gst_adapter_map (self->adapter, self->item_bytes);
        ret = gst_latent_parse_push_item (self, item);
        gst_adapter_unmap (self->adapter);
      }
      gst_adapter_flush (self->adapter, self->item_bytes);
      self->consumed += self->item_bytes;
      if (++self->items_done == self->batch)
        self->state = STATE_DONE;
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
      if (self->state != STATE_DONE && self->last_flow == GST_FLOW_OK) {
        guint64 got = self->consumed + gst_adapter_available (self->adapter);
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
                  "%" G_GUINT64_FORMAT "-byte header (%" G_GSIZE_FORMAT
                  " bytes of it arrived).", self->header_len,
                  gst_adapter_available (self->adapter)), (NULL));
        else
          GST_ELEMENT_ERROR (self, STREAM, FORMAT,
              ("Truncated latent file: tensor '%s' needs %" G_GUINT64_FORMAT
                  " bytes but the stream ended after %" G_GUINT64_FORMAT
                  " of them; %" G_GUINT64_FORMAT " frames were pushed.",
                  self->tensor_name, self->tensor_bytes,
                  got > self->tensor_offset ? got - self->tensor_offset : 0,
                  self->frames_out), (NULL));
        gst_event_unref (event);
        return FALSE;
      }
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
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
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->tensor_name = g_strdup (DEFAULT_TENSOR_NAME);
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;
  self->latent_space = DEFAULT_LATENT_SPACE;
  self->frames_per_latent = DEFAULT_FRAMES_PER_LATENT;
  self->adapter = gst_adapter_new ();
}
