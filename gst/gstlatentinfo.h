/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * The latent stream's caps, shared by the elements that produce and take it.
 *
 * One buffer carries one latent frame: planar C x H x W, row-major, little-endian, in the
 * dtype the caps name:
 *
 *   video/x-latent,
 *     type=(string){float32,float16,bfloat16},   GstTensor data-type nicks
 *     channels=(int)[1,4096],                    latent channels
 *     width=(int)[1,4096], height=(int)[1,4096], the latent grid (frames are 8x larger,
 *                                                16x for taew2_2)
 *     framerate=(fraction)[0/1,MAX],             of the decoded video, not of the latents
 *     space=(string){raw,normalized}             optional: the VAE's raw latents or the
 *                                                diffusion model's normalized ones
 *     video=(boolean)                            optional: TRUE for a causal video decoder's
 *                                                latents ([B, C, T, H, W] files), FALSE for
 *                                                images; a hint for choosing the decoder
 *     vae-name=(string)                          optional: the VAE file the file's ComfyUI
 *                                                workflow decoded with (VAELoader vae_name)
 *
 * A buffer's PTS is the PTS of its first decoded frame and its DURATION covers its frames:
 * one for an image decoder, and for a causal video decoder (Wan, TAEHV) one for latent frame
 * 0 of a stream and 4 for each later one. DISCONT on a latent buffer starts a new stream.
 *
 * The files latentparse reads are typefound as
 *
 *   application/x-safetensors, content=(string)latent
 *
 * when their header holds a latent tensor (gst_latent_find_tensor), and as plain
 * `application/x-safetensors` (weights, which nothing plugs) otherwise.
 */

#pragma once

#include <gst/gst.h>

#include "vae-model.h"

G_BEGIN_DECLS

#define GST_LATENT_MEDIA_TYPE "video/x-latent"
#define GST_LATENT_MAX_DIM    4096
#define GST_LATENT_CAPS_FIELDS                                                                     \
  ", type = (string) { float32, float16, bfloat16 }, "                                             \
  "channels = (int) [ 1, 4096 ], width = (int) [ 1, 4096 ], height = (int) [ 1, 4096 ], "          \
  "framerate = (fraction) [ 0/1, MAX ]"
/* the templates: space not stated first (a space listed in one structure alone would make an
 * upstream that fixates from the template state one, raw), then the optional space field */
#define GST_LATENT_CAPS_STR                                                                        \
  GST_LATENT_MEDIA_TYPE GST_LATENT_CAPS_FIELDS "; "                                                \
  GST_LATENT_MEDIA_TYPE GST_LATENT_CAPS_FIELDS ", space = (string) { raw, normalized }"

#define GST_SAFETENSORS_MEDIA_TYPE "application/x-safetensors"
#define GST_SAFETENSORS_LATENT_CAPS_STR GST_SAFETENSORS_MEDIA_TYPE ", content = (string) latent"
#define GST_LATENT_DEFAULT_TENSOR "latent_tensor"

/* tags of latentparse's stream (registered by the plugin): the decoded frames it holds, and the
 * VAE file its ComfyUI workflow decoded with */
#define GST_LATENT_TAG_FRAME_COUNT "frame-count"
#define GST_LATENT_TAG_VAE_NAME "vae-name"

typedef enum
{
  GST_VAE_LATENT_SPACE_AUTO = VAE_SPACE_AUTO,
  GST_VAE_LATENT_SPACE_RAW = VAE_SPACE_RAW,
  GST_VAE_LATENT_SPACE_NORMALIZED = VAE_SPACE_NORMALIZED,
} GstVaeLatentSpace;

#define GST_TYPE_VAE_LATENT_SPACE (gst_vae_latent_space_get_type ())
GType gst_vae_latent_space_get_type (void);

typedef struct
{
  enum vae_dtype dtype;
  gint channels, width, height;
  gint fps_n, fps_d;
  GstVaeLatentSpace space;      /* AUTO when the caps do not say */
} GstLatentInfo;

/* What the whole input holds, when its producer knows it (latentparse: the tensor), goes
 * downstream after the segment, before the first latent buffer, as a custom downstream
 * (serialized) event whose structure is
 *
 *   latent-totals, latent-frames=(guint64)N, frames=(guint64)M
 *
 * N latent frames in all (every batch item), M the frames they decode to. vaedecode puts the
 * totals in its progress messages and warns when the stream ends before N latent frames came.
 * Not sticky: rtpgstpay (1.22) carries custom downstream events in-band, but not sticky ones. */
#define GST_LATENT_TOTALS_NAME "latent-totals"

GstEvent *gst_latent_totals_event_new (guint64 latent_frames, guint64 frames);
gboolean gst_latent_totals_event_parse (GstEvent * event,
    guint64 * latent_frames, guint64 * frames);

/* FALSE when the caps are not fixed latent caps; *why (when why is not NULL; g_free it) then
 * names the field that is missing or wrong */
gboolean gst_latent_info_from_caps (GstLatentInfo * info, const GstCaps * caps,
    gchar ** why);
GstCaps *gst_latent_info_to_caps (const GstLatentInfo * info);
gsize gst_latent_info_frame_size (const GstLatentInfo * info);
const gchar *gst_latent_dtype_to_string (enum vae_dtype dtype);
void gst_latent_tags_register (void);
const struct vae_st_tensor *gst_latent_find_tensor (const struct vae_st_header
    * hdr, const gchar * name);

G_END_DECLS
