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
 * The tensor is chosen by name (#GstLatentParse:tensor-name, see below for files that
 * hold one latent tensor under another name) and may be F32, F16 or BF16 with
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
 * stream), and the timestamps run on from the previous item's. A 5-D tensor of one latent frame
 * per item (`[B, C, 1, h, w]`: diffusers' layout of Qwen-Image's image latents) holds images.
 *
 * A file cut short inside its tensor (a partial download, a dropped connection) plays what
 * it holds: the whole frames go out, then a WARNING names the bytes that are missing and the
 * stream ends as at an EOS (vaedecode decodes every frame that came and warns how many are
 * missing). A stream that upstream ends early while the file holds more (an EOS sent to the
 * source: gst-launch-1.0 -e on Ctrl-C) is not truncated: it ends there with an INFO message
 * that says after how many of the latent frames. A stream that ends before its first whole
 * frame, a malformed header, a missing tensor or an unusable shape or dtype stops the pipeline
 * with an error that names the cause (a file of model weights is named as such); frames pushed
 * before stay pushed.
 * In pull mode the header is read when the element goes to PAUSED, so its errors fail that
 * state change; a file that ends before its first whole frame fails it before any caps go
 * out. Where an autoplugger (decodebin, parsebin) tries the element, in locked state, the
 * streaming thread reads the header once the element is plugged: the autoplugger would keep
 * an error of the state change to itself, the application seeing "missing plug-in" with the
 * cause in the debug details only.
 *
 * ## Auto-plugging
 *
 * The plugin's typefinder calls a safetensors file whose header holds a latent tensor
 * `application/x-safetensors, content=(string)latent` (other safetensors files, weights, are
 * plain `application/x-safetensors`): latentparse takes those caps and has rank primary, so
 * decodebin, playbin and gst-discoverer-1.0 build `latentparse ! vaedecode` for a `.latent`
 * file (vaedecode then takes its model from a model path: see #GstVaeDecode:model-dir). With
 * #GstLatentParse:tensor-name left at `latent_tensor`, a file without such a tensor is read
 * when it holds exactly one F32/F16/BF16 tensor of 4 or 5 dimensions. The caps say `video`
 * (a 5-D tensor of several latent frames) and, when the file's ComfyUI workflow (its `prompt` metadata) has one
 * VAELoader, `vae-name`, the VAE file it loaded; the tags give the codec, the container and
 * the decoded frames (`frame-count`, and `vae-name`).
 *
 * ## Seeking and queries
 *
 * DURATION and POSITION are answered in TIME and in DEFAULT (decoded frames), SEEKING in
 * TIME; seeks are in TIME, at positive rates, flushing or not, with SEGMENT, KEY_UNIT and the
 * SNAP flags. A 4-D tensor's frames are independent: a seek goes straight to the frame that
 * holds the target. A video item is causal: its latent frame t decodes with the history of
 * frames 0 to t-1, so a seek restarts at the first latent frame of the item that holds the
 * target, flagged DISCONT, with a segment that starts at the target: the decoder decodes the
 * frames before it and the sink drops them (they are outside the segment). The first frame
 * shown is thus the same as in a whole decode, at the cost of decoding up to the target;
 * restarting at the target's own latent frame would decode it without its history, which
 * the causal decoders do not do for any frame but a video's first. With KEY_UNIT the
 * segment starts at the item's start instead (or the next one's with SNAP_AFTER, the nearer
 * with SNAP_NEAREST). Only item starts are key units: later latent frames of a video carry
 * DELTA_UNIT. In pull mode (filesrc) seeking is done here; in push mode latentparse seeks
 * upstream in BYTES to the item's first byte (filesrc ! queue, a seekable network source),
 * and where upstream cannot the seek is refused and the SEEKING query says so. A framerate
 * of 0/1 (no timestamps) leaves the stream unseekable.
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
#include "gstvaedecode.h"

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
  gboolean pull_deferred;       /* pull mode: the loop reads the header (see sink_activate_mode) */
  GstAdapter *adapter;          /* push mode: the bytes not used yet */
  guint64 offset;               /* push mode: stream bytes flushed from the adapter */
  gint64 upstream_size;         /* pull mode: the stream's length, -1 if unknown */
  GstLatentParseState state;
  guint64 header_len;
  guint64 data_start;           /* 8 + header_len: where the byte buffer begins */
  guint64 tensor_offset, tensor_bytes;  /* our tensor's range in the byte buffer */
  gint batch, frames_per_item;  /* B and T */
  gboolean video;               /* 5-D of several latent frames: causal video latents */
  gsize plane_bytes;            /* one channel of one frame: H * W * elsize */
  guint64 item_bytes;           /* one batch item: C * T planes, channel-major */
  gint items_done;              /* b of the next frame */
  gint frame_in_item;           /* t of the next frame */
  guint64 frames_out;           /* latent frames pushed */
  guint64 video_frames;         /* decoded frames before the next latent frame */
  guint fpl;                    /* frames-per-latent, fixed at the header */
  guint64 item_frames;          /* decoded frames of a batch item */
  GstFlowReturn last_flow;      /* of the last chain call */
  GstLatentInfo info;
  gchar *found_tensor;          /* the name of the tensor read */
  GstTagList *tags;             /* to push after the first segment, NULL once pushed */

  /* the TIME segment downstream, pushed before the next frame when need_segment */
  GstSegment segment;
  gboolean need_segment;
  guint32 segment_seqnum;
  gboolean discont;             /* the next frame follows a seek */

  /* push mode: our BYTES seek upstream, applied when its segment comes (object lock) */
  gboolean seek_pending;
  guint64 seek_offset;
  gint seek_item;
  GstSegment seek_segment;
  guint32 seek_seqnum;
};

/* what the typefinder calls a latent file; also a byte stream without a type (appsrc, a
 * network source) */
static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_SAFETENSORS_LATENT_CAPS_STR "; application/octet-stream"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_LATENT_CAPS_STR));

#define gst_latent_parse_parent_class parent_class
G_DEFINE_TYPE (GstLatentParse, gst_latent_parse, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (latentparse, "latentparse", GST_RANK_PRIMARY,
    GST_TYPE_LATENT_PARSE);

static void gst_latent_parse_loop (GstPad * pad);

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
  g_clear_pointer (&self->found_tensor, g_free);
  gst_clear_tag_list (&self->tags);
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
  self->need_segment = TRUE;
  self->segment_seqnum = gst_util_seqnum_next ();
  self->discont = FALSE;
  GST_OBJECT_LOCK (self);
  self->seek_pending = FALSE;
  GST_OBJECT_UNLOCK (self);
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

/* the latent frames of the whole stream */
static guint64
gst_latent_parse_total_latents (GstLatentParse * self)
{
  return (guint64) self->batch * self->frames_per_item;
}

/* the stream ended after `got` bytes, short of what the current state needs. Where upstream
 * holds more (`stopped`: an EOS sent to the source, as gst-launch-1.0 -e does on Ctrl-C or
 * an application with gst_element_send_event, makes it end the stream early), the file is not
 * truncated: the stream ends there as at an EOS, with an INFO message that says so: TRUE. In
 * a truncated file, once frames went out, the stream ends there too (a WARNING; vaedecode
 * decodes what came and says how many frames are missing): TRUE. Before any, an ERROR:
 * FALSE. */
static gboolean
gst_latent_parse_truncated (GstLatentParse * self, guint64 got,
    gboolean stopped)
{
  const guint64 tensor_start = self->data_start + self->tensor_offset;

  if (self->state >= STATE_DATA && stopped) {
    gchar *text = g_strdup_printf ("The latent stream was stopped (EOS) after %"
        G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " latent frames.",
        self->frames_out, gst_latent_parse_total_latents (self));

    /* (gst-launch-1.0 prints an INFO message's debug text alone) */
    GST_ELEMENT_INFO (self, STREAM, FAILED, ("%s", text), ("%s Upstream ended "
            "it before the end of its %" G_GINT64_FORMAT " bytes: an EOS sent "
            "to the source, not a truncated file.", text, self->upstream_size));
    g_free (text);
    return TRUE;
  }
  if (self->state >= STATE_DATA && self->frames_out > 0) {
    GST_ELEMENT_WARNING (self, STREAM, FORMAT,
        ("Truncated latent file: tensor '%s' needs %" G_GUINT64_FORMAT
            " bytes but the stream ended after %" G_GUINT64_FORMAT
            " of them; %" G_GUINT64_FORMAT " frames were pushed.",
            self->found_tensor, self->tensor_bytes,
            got > tensor_start ? got - tensor_start : 0, self->frames_out),
        (NULL));
    return TRUE;
  }

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
            " of them, before its first frame.", self->found_tensor,
            self->tensor_bytes, got > tensor_start ? got - tensor_start : 0),
        (NULL));
  return FALSE;
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

/* the VAE file that the ComfyUI workflow in the file's metadata loaded, or NULL */
static gchar *
gst_latent_parse_vae_name (GstLatentParse * self,
    const struct vae_st_header *hdr)
{
  char *name = NULL;
  gchar *ret = NULL;

  switch (vae_st_comfy_vae_name (vae_st_header_metadata (hdr, "prompt"),
          &name)) {
    case -1:
      GST_DEBUG_OBJECT (self, "the prompt metadata is not a ComfyUI prompt");
      break;
    case 1:
      GST_INFO_OBJECT (self, "the workflow decoded with VAE '%s'", name);
      ret = g_strdup (name);
      break;
    case 2:
      GST_INFO_OBJECT (self, "the workflow loads several VAEs ('%s' and "
          "others): none is named in the caps", name);
      break;
    default:
      break;
  }
  free (name);
  return ret;
}

/* the caps of the stream, and the tags to push after its first segment */
static GstCaps *
gst_latent_parse_caps (GstLatentParse * self, const struct vae_st_header *hdr)
{
  GstCaps *caps = gst_latent_info_to_caps (&self->info);
  gchar *vae_name = gst_latent_parse_vae_name (self, hdr);
  gchar *codec = g_strdup_printf ("Latents (%d channels, %s)",
      self->info.channels, gst_latent_dtype_to_string (self->info.dtype));

  gst_caps_set_simple (caps, "video", G_TYPE_BOOLEAN, self->video, NULL);
  self->tags = gst_tag_list_new (GST_TAG_VIDEO_CODEC, codec,
      GST_TAG_CONTAINER_FORMAT, "safetensors", GST_LATENT_TAG_FRAME_COUNT,
      (guint64) self->batch * self->item_frames, NULL);
  if (vae_name) {
    gst_caps_set_simple (caps, "vae-name", G_TYPE_STRING, vae_name, NULL);
    gst_tag_list_add (self->tags, GST_TAG_MERGE_REPLACE,
        GST_LATENT_TAG_VAE_NAME, vae_name, NULL);
  }
  g_free (codec);
  g_free (vae_name);
  return caps;
}

/* a weights file's tensor to name as an example (one of a layer's weights), or NULL where
 * the file does not hold weights */
static const gchar *
gst_latent_parse_weights_example (const struct vae_st_header *hdr)
{
  static const gchar *const suffixes[] = { ".weight", ".bias" };
  guint k;
  gint i;

  if (hdr->n_tensors < 2)
    return NULL;
  for (k = 0; k < G_N_ELEMENTS (suffixes); k++)
    for (i = 0; i < hdr->n_tensors; i++)
      if (g_str_has_suffix (hdr->tensors[i].name, suffixes[k]))
        return hdr->tensors[i].name;
  return NULL;
}

/* check the tensor and fix the stream's geometry; the caps to push, or NULL after posting an
 * error */
static GstCaps *
gst_latent_parse_setup (GstLatentParse * self, const struct vae_st_header *hdr)
{
  const struct vae_st_tensor *t = gst_latent_find_tensor (hdr,
      self->tensor_name);
  const gchar *weight;
  gint64 c, h, w, tf;
  GString *names;
  gint i;

  /* a decoder's (or any model's) weights file given as latents */
  if (t == NULL && (weight = gst_latent_parse_weights_example (hdr))) {
    GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
        ("Not a latent file: it holds model weights (%d tensors such as "
            "'%s'), not latents: give it to vaedecode's model-file.",
            hdr->n_tensors, weight), (NULL));
    return NULL;
  }
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
    return NULL;
  }
  if (!vae_dtype_is_float (t->dtype)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' is %s; latents must be F32, F16 or BF16.",
            t->name, vae_dtype_name (t->dtype)), (NULL));
    return NULL;
  }
  if (t->n_dims != 4 && t->n_dims != 5) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' has %d dimensions; expected [B, C, H, W] or "
            "[B, C, T, H, W].", t->name, t->n_dims), (NULL));
    return NULL;
  }
  c = t->shape[1];
  tf = t->n_dims == 5 ? t->shape[2] : 1;
  h = t->shape[t->n_dims - 2];
  w = t->shape[t->n_dims - 1];
  if (t->shape[0] < 1 || c < 1 || tf < 1 || h < 1 || w < 1) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' is empty (a dimension is 0).", t->name), (NULL));
    return NULL;
  }
  if (c > GST_LATENT_MAX_DIM || h > GST_LATENT_MAX_DIM
      || w > GST_LATENT_MAX_DIM || t->shape[0] > G_MAXINT
      || tf > G_MAXINT) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent tensor '%s' has an absurd size: %" G_GINT64_FORMAT
            " channels of %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
            " (each at most %d).", t->name, c, w, h, GST_LATENT_MAX_DIM),
        (NULL));
    return NULL;
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
  self->video = t->n_dims == 5 && tf > 1;
  GST_OBJECT_LOCK (self);
  self->fpl = self->video ? self->frames_per_latent : 1;
  GST_OBJECT_UNLOCK (self);
  self->item_frames = 1 + (guint64) self->fpl * (tf - 1);
  self->found_tensor = g_strdup (t->name);
  self->plane_bytes = (gsize) h * w * (vae_dtype_bits (t->dtype) / 8);
  self->item_bytes = t->nbytes / t->shape[0];
  self->tensor_offset = t->offset;
  self->tensor_bytes = t->nbytes;
  if (!gst_latent_parse_check_size (self, t))
    return NULL;
  GST_INFO_OBJECT (self, "tensor '%s': %" G_GINT64_FORMAT " x %d frames of "
      "%" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " %s%s, "
      "%s mode", t->name, t->shape[0], self->frames_per_item, c, h, w,
      vae_dtype_name (t->dtype), self->video ? " (video)" : "",
      self->pull ? "pull" : "push");
  return gst_latent_parse_caps (self, hdr);
}

/* whether the element downstream is a vaedecode, which posts why it refuses caps */
static gboolean
gst_latent_parse_peer_says_why (GstLatentParse * self)
{
  GstPad *peer = gst_pad_get_peer (self->srcpad);
  GstElement *parent = peer ? gst_pad_get_parent_element (peer) : NULL;
  gboolean says = parent != NULL && GST_IS_VAE_DECODE (parent);

  gst_clear_object (&parent);
  gst_clear_object (&peer);
  return says;
}

/* push the stream's caps (taking them); FALSE after an error was posted (by vaedecode when it
 * is downstream: one error per cause) */
static gboolean
gst_latent_parse_push_caps (GstLatentParse * self, GstCaps * caps)
{
  gboolean ok;

  /* (a sticky event is stored whatever downstream says: whether the peer took the caps
   * tells) */
  gst_pad_push_event (self->srcpad, gst_event_new_caps (gst_caps_ref (caps)));
  ok = gst_latent_parse_peer_has_caps (self, caps);
  if (!ok && !gst_latent_parse_peer_says_why (self))
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Downstream does not take the latent caps %" GST_PTR_FORMAT ".",
            caps), (NULL));
  gst_caps_unref (caps);
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

/* parse the header_len header bytes and set up the stream; FALSE after posting an error */
static gboolean
gst_latent_parse_header (GstLatentParse * self, const guint8 * json)
{
  char err[VAE_ERR_SIZE] = "";
  struct vae_st_header *hdr =
      vae_st_header_parse (json, self->header_len, err, sizeof (err));
  GstCaps *caps;

  if (hdr == NULL) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Malformed latent file header: %s", err), (NULL));
    return FALSE;
  }
  caps = gst_latent_parse_setup (self, hdr);
  vae_st_header_free (hdr);
  if (caps == NULL)
    return FALSE;
  self->state = STATE_DATA;
  /* Pull mode: a file that ends before its first whole frame (a partial download) is refused
   * before the caps go out. Once they are out, decodebin plugs and exposes the decoder, and
   * then playbin waits for a frame that never comes: our error (the element is dropped)
   * only reaches its debug details. */
  if (self->pull && self->upstream_size >= 0
      && gst_latent_parse_item_start (self) +
      gst_latent_parse_plane_offset (self, self->info.channels - 1) +
      self->plane_bytes > (guint64) self->upstream_size) {
    gst_latent_parse_truncated (self, self->upstream_size, FALSE);
    gst_caps_unref (caps);
    self->state = STATE_HEADER;
    return FALSE;
  }
  if (!gst_latent_parse_push_caps (self, caps)) {
    self->state = STATE_HEADER;
    return FALSE;
  }
  return TRUE;
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
    /* upstream ends the stream before the end of the file: not a truncated file but an EOS
     * sent to the source (in pull mode basesrc takes one as "end here") */
    if (self->upstream_size >= 0
        && offset + size <= (guint64) self->upstream_size)
      return gst_latent_parse_truncated (self, offset, TRUE) ? GST_FLOW_EOS :
          GST_FLOW_CUSTOM_ERROR;
    got = self->upstream_size >= 0 ? (guint64) self->upstream_size : offset;
  } else {
    return ret;
  }
  return gst_latent_parse_truncated (self, got, FALSE) ? GST_FLOW_EOS :
      GST_FLOW_CUSTOM_ERROR;
}

/* the time of decoded frame n (the framerate is not 0/1) */
static GstClockTime
gst_latent_parse_frame_time (GstLatentParse * self, guint64 n)
{
  return gst_util_uint64_scale (n, GST_SECOND * self->fps_d, self->fps_n);
}

/* the decoded frames of the whole stream */
static guint64
gst_latent_parse_total_frames (GstLatentParse * self)
{
  return (guint64) self->batch * self->item_frames;
}

/* start the next frame at batch item `item` (the end of the stream past the last) */
static void
gst_latent_parse_goto_item (GstLatentParse * self, gint item)
{
  self->items_done = MIN (item, self->batch);
  self->frame_in_item = 0;
  self->video_frames = (guint64) self->items_done * self->item_frames;
  self->state = self->items_done < self->batch ? STATE_DATA : STATE_DONE;
}

/* whether the next frame starts at or after the segment's stop */
static gboolean
gst_latent_parse_past_stop (GstLatentParse * self)
{
  return self->fps_n > 0 && GST_CLOCK_TIME_IS_VALID (self->segment.stop)
      && gst_latent_parse_frame_time (self, self->video_frames) >=
      self->segment.stop;
}

/* the segment (and the first time the tags) before the next frame or the EOS */
static void
gst_latent_parse_push_segment (GstLatentParse * self)
{
  GstEvent *event;

  if (!self->need_segment)
    return;
  self->need_segment = FALSE;
  event = gst_event_new_segment (&self->segment);
  gst_event_set_seqnum (event, self->segment_seqnum);
  gst_pad_push_event (self->srcpad, event);
  /* the totals (gstlatentinfo.h): vaedecode's progress messages and early-EOS warning */
  gst_pad_push_event (self->srcpad, gst_latent_totals_event_new ((guint64)
          self->batch * self->frames_per_item,
          (guint64) self->batch * self->item_frames));
  if (self->tags) {
    gst_pad_push_event (self->srcpad, gst_event_new_tag (self->tags));
    self->tags = NULL;
  }
}

/* stamp the next frame for the decoded frames it gives (1, or for latent t > 0 of a video
 * frames-per-latent), move on to the following one and push it */
static GstFlowReturn
gst_latent_parse_push_frame (GstLatentParse * self, GstBuffer * buf)
{
  const guint m = self->frame_in_item > 0 ? self->fpl : 1;

  if (self->fps_n > 0) {
    GST_BUFFER_PTS (buf) = gst_latent_parse_frame_time (self,
        self->video_frames);
    GST_BUFFER_DURATION (buf) = gst_latent_parse_frame_time (self,
        self->video_frames + m) - GST_BUFFER_PTS (buf);
    self->segment.position = GST_BUFFER_PTS (buf);
  }
  /* offsets count decoded frames, as a raw video stream's do */
  GST_BUFFER_OFFSET (buf) = self->video_frames;
  GST_BUFFER_OFFSET_END (buf) = self->video_frames + m;
  /* a new video, or the first frame after a seek: a causal decoder starts a new stream */
  if ((self->video && self->frame_in_item == 0 && self->items_done > 0)
      || self->discont)
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
  /* a video's later latent frames need the earlier ones: only item starts are key units */
  if (self->frame_in_item > 0)
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
  self->discont = FALSE;
  self->video_frames += m;
  self->frames_out++;
  if (++self->frame_in_item == self->frames_per_item) {
    self->frame_in_item = 0;
    if (++self->items_done == self->batch)
      self->state = STATE_DONE;
  }
  gst_latent_parse_push_segment (self);
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
    } else if (self->state == STATE_DATA && gst_latent_parse_past_stop (self)) {
      /* the seek's stop: upstream ends the stream with an EOS */
      self->state = STATE_DONE;
      ret = GST_FLOW_EOS;
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

/* The batch item a seek to segment->start restarts at, segment adjusted for KEY_UNIT. Each
 * item of a 4-D tensor is a frame, so an image stream restarts at the frame itself. A video
 * item restarts at its first latent frame, for a causal decoder needs every latent frame
 * before the target: the frames before segment->start are decoded and dropped downstream
 * (clipped to the segment), so the target frame is the one a whole decode gives. KEY_UNIT
 * moves the segment's start to an item start instead (SNAP_AFTER: the next one, SNAP_NEAREST:
 * the nearer one). */
static gint
gst_latent_parse_seek_item (GstLatentParse * self, GstSegment * segment,
    GstSeekFlags flags)
{
  guint64 n = gst_util_uint64_scale (segment->start, self->fps_n,
      GST_SECOND * self->fps_d), item;
  GstClockTime key, next;

  /* the frame that holds start: frame times are rounded down, so n may be one short */
  if (gst_latent_parse_frame_time (self, n + 1) <= segment->start)
    n++;
  item = MIN (n / self->item_frames, (guint64) self->batch);
  if (!(flags & GST_SEEK_FLAG_KEY_UNIT) || item == (guint64) self->batch)
    return item;

  key = gst_latent_parse_frame_time (self, item * self->item_frames);
  next = gst_latent_parse_frame_time (self, (item + 1) * self->item_frames);
  if (key < segment->start && item + 1 < (guint64) self->batch
      && ((flags & GST_SEEK_FLAG_SNAP_AFTER) == GST_SEEK_FLAG_SNAP_AFTER
          || ((flags & GST_SEEK_FLAG_SNAP_NEAREST) == GST_SEEK_FLAG_SNAP_NEAREST
              && next - segment->start < segment->start - key))) {
    item++;
    key = next;
  }
  segment->start = segment->time = segment->position = key;
  return item;
}

/* pull mode: stop the loop (through a flush downstream, or waiting for it), restart at the
 * item and segment, and start it again */
static gboolean
gst_latent_parse_seek_pull (GstLatentParse * self, GstSegment * segment,
    GstSeekFlags flags, gint item, guint32 seqnum)
{
  const gboolean flush = (flags & GST_SEEK_FLAG_FLUSH) != 0;
  GstEvent *event;

  if (flush) {
    event = gst_event_new_flush_start ();
    gst_event_set_seqnum (event, seqnum);
    gst_pad_push_event (self->srcpad, event);
  } else {
    gst_pad_pause_task (self->sinkpad);
  }
  GST_PAD_STREAM_LOCK (self->sinkpad);
  if (flush) {
    event = gst_event_new_flush_stop (TRUE);
    gst_event_set_seqnum (event, seqnum);
    gst_pad_push_event (self->srcpad, event);
  }
  if (segment->flags & GST_SEGMENT_FLAG_SEGMENT) {
    GstMessage *msg = gst_message_new_segment_start (GST_OBJECT (self),
        GST_FORMAT_TIME, segment->start);

    gst_message_set_seqnum (msg, seqnum);
    gst_element_post_message (GST_ELEMENT (self), msg);
  }
  gst_latent_parse_goto_item (self, item);
  self->segment = *segment;
  self->need_segment = TRUE;
  self->segment_seqnum = seqnum;
  self->discont = TRUE;
  self->last_flow = GST_FLOW_OK;
  gst_pad_start_task (self->sinkpad, (GstTaskFunction) gst_latent_parse_loop,
      self->sinkpad, NULL);
  GST_PAD_STREAM_UNLOCK (self->sinkpad);
  return TRUE;
}

/* push mode: whether upstream says it can seek in BYTES */
static gboolean
gst_latent_parse_upstream_seekable (GstLatentParse * self)
{
  GstQuery *query = gst_query_new_seeking (GST_FORMAT_BYTES);
  gboolean seekable = FALSE;

  if (gst_pad_peer_query (self->sinkpad, query))
    gst_query_parse_seeking (query, NULL, &seekable, NULL, NULL);
  gst_query_unref (query);
  return seekable;
}

/* push mode: a BYTES seek upstream to the item's first byte; the frames restart there when
 * its segment comes (gst_latent_parse_seek_done). FALSE where upstream cannot seek. */
static gboolean
gst_latent_parse_seek_push (GstLatentParse * self, GstSegment * segment,
    GstSeekFlags flags, gint item, guint32 seqnum)
{
  const guint64 offset = self->data_start + self->tensor_offset +
      (guint64) item * self->item_bytes;
  GstEvent *event;

  if (!gst_latent_parse_upstream_seekable (self)) {
    GST_WARNING_OBJECT (self, "cannot seek: upstream cannot seek in bytes");
    return FALSE;
  }
  event = gst_event_new_seek (1.0, GST_FORMAT_BYTES,
      flags & (GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_SEGMENT), GST_SEEK_TYPE_SET,
      offset, GST_SEEK_TYPE_NONE, -1);
  gst_event_set_seqnum (event, seqnum);
  GST_OBJECT_LOCK (self);
  self->seek_pending = TRUE;
  self->seek_offset = offset;
  self->seek_item = item;
  self->seek_segment = *segment;
  self->seek_seqnum = seqnum;
  GST_OBJECT_UNLOCK (self);
  if (gst_pad_push_event (self->sinkpad, event))
    return TRUE;
  GST_OBJECT_LOCK (self);
  self->seek_pending = FALSE;
  GST_OBJECT_UNLOCK (self);
  GST_WARNING_OBJECT (self, "upstream cannot seek to byte %" G_GUINT64_FORMAT
      ": the stream is not seekable in push mode", offset);
  return FALSE;
}

/* push mode: the segment of our BYTES seek upstream starts the frames at its item */
static void
gst_latent_parse_seek_done (GstLatentParse * self, GstEvent * event)
{
  const GstSegment *bytes;
  gboolean ours;

  gst_event_parse_segment (event, &bytes);
  GST_OBJECT_LOCK (self);
  ours = self->seek_pending && bytes->format == GST_FORMAT_BYTES
      && bytes->start == self->seek_offset;
  if (ours) {
    self->seek_pending = FALSE;
    self->segment = self->seek_segment;
    self->segment_seqnum = self->seek_seqnum;
  }
  GST_OBJECT_UNLOCK (self);
  if (!ours)
    return;
  GST_DEBUG_OBJECT (self, "upstream seeked to byte %" G_GUINT64_FORMAT
      ": restarting at item %d", bytes->start, self->seek_item);
  gst_adapter_clear (self->adapter);
  self->offset = bytes->start;
  gst_latent_parse_goto_item (self, self->seek_item);
  self->need_segment = TRUE;
  self->discont = TRUE;
  self->last_flow = GST_FLOW_OK;
}

/* a seek in TIME, at a positive rate, once the header is known and the stream has
 * timestamps */
static gboolean
gst_latent_parse_seek (GstLatentParse * self, GstEvent * event)
{
  gdouble rate;
  GstFormat format;
  GstSeekFlags flags;
  GstSeekType start_type, stop_type;
  gint64 start, stop;
  GstSegment segment;
  gint item;

  gst_event_parse_seek (event, &rate, &format, &flags, &start_type, &start,
      &stop_type, &stop);
  if (format != GST_FORMAT_TIME || rate <= 0.0 || self->state < STATE_DATA
      || self->fps_n == 0) {
    GST_WARNING_OBJECT (self, "cannot seek in %s at rate %g%s",
        gst_format_get_name (format), rate, self->state < STATE_DATA ?
        " before the header" : self->fps_n == 0 ? " without a framerate" :
        " (only TIME, forwards)");
    return FALSE;
  }
  segment = self->segment;
  if (!gst_segment_do_seek (&segment, rate, format, flags, start_type, start,
          stop_type, stop, NULL))
    return FALSE;
  item = gst_latent_parse_seek_item (self, &segment, flags);
  GST_DEBUG_OBJECT (self, "seek to %" GST_TIME_FORMAT ": item %d of %d",
      GST_TIME_ARGS (segment.start), item, self->batch);
  if (self->pull)
    return gst_latent_parse_seek_pull (self, &segment, flags, item,
        gst_event_get_seqnum (event));
  return gst_latent_parse_seek_push (self, &segment, flags, item,
      gst_event_get_seqnum (event));
}

static gboolean
gst_latent_parse_src_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstLatentParse *self = GST_LATENT_PARSE (parent);
  gboolean ret;

  if (GST_EVENT_TYPE (event) != GST_EVENT_SEEK)
    return gst_pad_event_default (pad, parent, event);
  ret = gst_latent_parse_seek (self, event);
  gst_event_unref (event);
  return ret;
}

/* DURATION and POSITION in TIME and DEFAULT (decoded frames), SEEKING in TIME, once the
 * header is known */
static gboolean
gst_latent_parse_src_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstLatentParse *self = GST_LATENT_PARSE (parent);
  GstFormat format;

  if (self->state < STATE_DATA)
    return gst_pad_query_default (pad, parent, query);
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_DURATION:
      gst_query_parse_duration (query, &format, NULL);
      if (format == GST_FORMAT_DEFAULT)
        gst_query_set_duration (query, format,
            gst_latent_parse_total_frames (self));
      else if (format == GST_FORMAT_TIME && self->fps_n > 0)
        gst_query_set_duration (query, format, gst_latent_parse_frame_time
            (self, gst_latent_parse_total_frames (self)));
      else
        return FALSE;
      return TRUE;
    case GST_QUERY_POSITION:
      gst_query_parse_position (query, &format, NULL);
      if (format == GST_FORMAT_DEFAULT)
        gst_query_set_position (query, format, self->video_frames);
      else if (format == GST_FORMAT_TIME && self->fps_n > 0)
        gst_query_set_position (query, format, self->segment.position);
      else
        return FALSE;
      return TRUE;
    case GST_QUERY_SEEKING:
      gst_query_parse_seeking (query, &format, NULL, NULL, NULL);
      if (format != GST_FORMAT_TIME)
        return FALSE;
      gst_query_set_seeking (query, format, self->fps_n > 0 && (self->pull
              || gst_latent_parse_upstream_seekable (self)), 0,
          self->fps_n > 0 ?
          (gint64) gst_latent_parse_frame_time (self,
              gst_latent_parse_total_frames (self)) : -1);
      return TRUE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

static gboolean
gst_latent_parse_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstLatentParse *self = GST_LATENT_PARSE (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_SEGMENT:
      gst_latent_parse_seek_done (self, event);
      /* fall through */
    case GST_EVENT_CAPS:
      /* the byte stream's own; ours go out once the header is parsed */
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      /* the flush of our own seek keeps the header; any other restarts the parse */
      GST_OBJECT_LOCK (self);
      if (self->seek_pending) {
        GST_OBJECT_UNLOCK (self);
        gst_adapter_clear (self->adapter);
      } else {
        GST_OBJECT_UNLOCK (self);
        gst_latent_parse_reset (self);
      }
      break;
    case GST_EVENT_EOS:
      /* after a fatal flow error (posted already) the EOS still goes on: the stream ends
       * for downstream and for an application that missed the error, as after a source's
       * fatal error. (Downstream may have asked for no more: then nothing is missing.) */
      if (self->state != STATE_DONE && self->last_flow == GST_FLOW_OK) {
        const guint64 got = self->offset +
            gst_adapter_available (self->adapter);
        gint64 size = -1;

        /* an upstream that holds more (filesrc ! queue: an EOS sent to the source) stopped
         * the stream; one that does not tell its size or holds no more was cut short */
        if (self->state >= STATE_DATA)
          gst_pad_peer_query_duration (self->sinkpad, GST_FORMAT_BYTES, &size);
        self->upstream_size = size;
        gst_latent_parse_truncated (self, got, size > 0
            && got < (guint64) size);
      }
      if (self->state >= STATE_DATA)
        gst_latent_parse_push_segment (self);
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
    gst_latent_parse_truncated (self, self->upstream_size, FALSE);
    return GST_FLOW_CUSTOM_ERROR;
  }
  json = g_malloc (self->header_len);
  ret = gst_latent_parse_pull (self, 8, self->header_len, json);
  if (ret == GST_FLOW_OK && !gst_latent_parse_header (self, json))
    ret = GST_FLOW_CUSTOM_ERROR;
  g_free (json);
  return ret;
}

/* pull mode: the header, the caps downstream (which the decoder checks) and whether the first
 * frame is all there (gst_latent_parse_header); in the state change to PAUSED, or where an
 * autoplugger plugs us, in the streaming thread (see sink_activate_mode) */
static GstFlowReturn
gst_latent_parse_pull_start (GstLatentParse * self)
{
  GstFlowReturn ret = gst_latent_parse_pull_header (self);

  if (ret < GST_FLOW_OK && ret != GST_FLOW_CUSTOM_ERROR
      && ret != GST_FLOW_FLUSHING)
    GST_ELEMENT_FLOW_ERROR (self, ret);
  return ret;
}

/* An autoplugger (decodebin2, parsebin) tries an element in locked state, holding its sink
 * pad's stream lock, and filters out its error messages (dropping them once it keeps the
 * element) until it unlocks it: the streaming thread starts when the stream lock is released,
 * just before that, so it waits for the unlock before it says anything. FLUSHING when the pad
 * is deactivated meanwhile. */
static GstFlowReturn
gst_latent_parse_wait_autoplugged (GstLatentParse * self)
{
  const gint64 end = g_get_monotonic_time () + 2 * G_TIME_SPAN_SECOND;

  while (gst_element_is_locked_state (GST_ELEMENT (self))
      && g_get_monotonic_time () < end) {
    gboolean flushing;

    GST_OBJECT_LOCK (self->sinkpad);
    flushing = GST_PAD_IS_FLUSHING (self->sinkpad);
    GST_OBJECT_UNLOCK (self->sinkpad);
    if (flushing)
      return GST_FLOW_FLUSHING;
    g_usleep (500);
  }
  return GST_FLOW_OK;
}

/* pull mode's streaming thread: one frame per call (the header was read at activation, or is
 * read by the first call) */
static void
gst_latent_parse_loop (GstPad * pad)
{
  GstLatentParse *self = GST_LATENT_PARSE (GST_PAD_PARENT (pad));
  GstFlowReturn ret = GST_FLOW_EOS;
  GstEvent *event;

  if (self->pull_deferred) {
    self->pull_deferred = FALSE;
    ret = gst_latent_parse_wait_autoplugged (self);
    if (ret == GST_FLOW_OK)
      ret = gst_latent_parse_pull_start (self);
  } else if (self->state == STATE_DATA && !gst_latent_parse_past_stop (self)) {
    ret = gst_latent_parse_frame (self);
  }
  if (ret == GST_FLOW_OK)
    return;

  GST_DEBUG_OBJECT (self, "pausing: %s", gst_flow_get_name (ret));
  gst_pad_pause_task (pad);
  if (ret == GST_FLOW_FLUSHING)
    return;
  /* the end of the stream or of the seek's segment */
  if (ret == GST_FLOW_EOS) {
    gst_latent_parse_push_segment (self);
    if (self->segment.flags & GST_SEGMENT_FLAG_SEGMENT) {
      const gint64 end = GST_CLOCK_TIME_IS_VALID (self->segment.stop) ?
          (gint64) self->segment.stop : (gint64)
          gst_latent_parse_frame_time (self, self->video_frames);

      GstMessage *msg = gst_message_new_segment_done (GST_OBJECT (self),
          GST_FORMAT_TIME, end);

      gst_message_set_seqnum (msg, self->segment_seqnum);
      gst_element_post_message (GST_ELEMENT (self), msg);
      event = gst_event_new_segment_done (GST_FORMAT_TIME, end);
    } else {
      event = gst_event_new_eos ();
    }
    gst_event_set_seqnum (event, self->segment_seqnum);
    gst_pad_push_event (self->srcpad, event);
    return;
  }
  if (ret == GST_FLOW_NOT_LINKED)
    GST_ELEMENT_FLOW_ERROR (self, ret);
  /* Other errors are posted already: ours (CUSTOM_ERROR), the decoder's (which posts before
   * it returns not-negotiated or an error) and the source's. The EOS follows them too, as
   * after a source's error: downstream finishes what it has (a muxer writes its index). */
  if (self->state >= STATE_DATA)
    gst_latent_parse_push_segment (self);
  gst_pad_push_event (self->srcpad, gst_event_new_eos ());
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
  if (!active)
    return gst_pad_stop_task (pad);

  /* What is wrong with the file fails the state change itself: posted later from the
   * streaming thread, gst-launch-1.0 (1.22) may miss the error (its bus sync handler quits a
   * main loop that is not running yet) and wait forever. Not so where an autoplugger
   * (decodebin, parsebin: playbin, gst-discoverer-1.0) tries us, in locked state: it keeps
   * what we post to itself (the application would see "missing plug-in", with our reason
   * in the debug details only), and pushing the caps from the state change plugs the
   * decoder and makes playbin's callbacks take its lock while we hold our state lock, which
   * playbin's own state change waits for (a deadlock). There the streaming thread reads the
   * header, once we are plugged. */
  self->pull_deferred = gst_element_is_locked_state (GST_ELEMENT (self));
  if (!self->pull_deferred && gst_latent_parse_pull_start (self) != GST_FLOW_OK)
    return FALSE;
  return gst_pad_start_task (pad, (GstTaskFunction) gst_latent_parse_loop,
      pad, NULL);
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
  g_free (self->found_tensor);
  gst_clear_tag_list (&self->tags);
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
   * Left at that, a file without it is read when it holds exactly one F32, F16 or BF16
   * tensor of 4 or 5 dimensions.
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
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, GST_VAE_DOC_URI);
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
  gst_pad_set_event_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_latent_parse_src_event));
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_latent_parse_src_query));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->tensor_name = g_strdup (DEFAULT_TENSOR_NAME);
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;
  self->latent_space = DEFAULT_LATENT_SPACE;
  self->frames_per_latent = DEFAULT_FRAMES_PER_LATENT;
  self->max_size_bytes = DEFAULT_MAX_SIZE_BYTES;
  self->adapter = gst_adapter_new ();
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
}
