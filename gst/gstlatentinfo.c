/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * Parsing and building the latent caps described in gstlatentinfo.h.
 */

#include "gstlatentinfo.h"

GType
gst_vae_latent_space_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_VAE_LATENT_SPACE_AUTO, "The decoder's own input space (no conversion), "
          "or what the caps say", "auto"},
    {GST_VAE_LATENT_SPACE_RAW, "Raw VAE latents (ComfyUI LATENT, .latent files)",
        "raw"},
    {GST_VAE_LATENT_SPACE_NORMALIZED,
        "The diffusion model's normalized latents (diffusers output_type=latent)",
        "normalized"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstVaeLatentSpace",
            values));
  return type;
}

const gchar *
gst_latent_dtype_to_string (enum vae_dtype dtype)
{
  switch (dtype) {
    case VAE_DTYPE_F32:
      return "float32";
    case VAE_DTYPE_F16:
      return "float16";
    case VAE_DTYPE_BF16:
      return "bfloat16";
    default:
      return NULL;
  }
}

/* FALSE, with *why saying so */
static gboolean
gst_latent_info_wrong (gchar ** why, gchar * reason)
{
  if (why)
    *why = reason;
  else
    g_free (reason);
  return FALSE;
}

/* an int field in 1..GST_LATENT_MAX_DIM */
static gboolean
gst_latent_info_dim (const GstStructure * s, const gchar * field, gint * v,
    gchar ** why)
{
  if (!gst_structure_has_field (s, field))
    return gst_latent_info_wrong (why, g_strdup_printf ("the field '%s' is "
            "missing", field));
  if (!gst_structure_get_int (s, field, v))
    return gst_latent_info_wrong (why, g_strdup_printf ("the field '%s' is "
            "not an int", field));
  if (*v < 1 || *v > GST_LATENT_MAX_DIM)
    return gst_latent_info_wrong (why, g_strdup_printf ("the field '%s' is "
            "%d, outside 1..%d", field, *v, GST_LATENT_MAX_DIM));
  return TRUE;
}

gboolean
gst_latent_info_from_caps (GstLatentInfo * info, const GstCaps * caps,
    gchar ** why)
{
  GstStructure *s;
  const gchar *type, *space;

  if (gst_caps_get_size (caps) != 1 || !gst_caps_is_fixed (caps))
    return gst_latent_info_wrong (why, g_strdup ("the caps are not fixed"));
  s = gst_caps_get_structure (caps, 0);
  if (!gst_structure_has_name (s, GST_LATENT_MEDIA_TYPE))
    return gst_latent_info_wrong (why, g_strdup_printf ("the media type is "
            "%s, not " GST_LATENT_MEDIA_TYPE, gst_structure_get_name (s)));

  type = gst_structure_get_string (s, "type");
  if (g_strcmp0 (type, "float32") == 0)
    info->dtype = VAE_DTYPE_F32;
  else if (g_strcmp0 (type, "float16") == 0)
    info->dtype = VAE_DTYPE_F16;
  else if (g_strcmp0 (type, "bfloat16") == 0)
    info->dtype = VAE_DTYPE_BF16;
  else if (!gst_structure_has_field (s, "type"))
    return gst_latent_info_wrong (why, g_strdup ("the field 'type' is missing "
            "(float32, float16 or bfloat16)"));
  else
    return gst_latent_info_wrong (why, g_strdup_printf ("the field 'type' is "
            "%s, not float32, float16 or bfloat16", type ? type : "no string"));

  if (!gst_latent_info_dim (s, "channels", &info->channels, why) ||
      !gst_latent_info_dim (s, "width", &info->width, why) ||
      !gst_latent_info_dim (s, "height", &info->height, why))
    return FALSE;
  info->fps_n = 0;
  info->fps_d = 1;
  if (gst_structure_has_field (s, "framerate")
      && (!gst_structure_get_fraction (s, "framerate", &info->fps_n,
              &info->fps_d) || info->fps_n < 0 || info->fps_d < 1))
    return gst_latent_info_wrong (why, g_strdup ("the field 'framerate' is "
            "not a fraction of 0/1 or more"));

  space = gst_structure_get_string (s, "space");
  if (!gst_structure_has_field (s, "space"))
    info->space = GST_VAE_LATENT_SPACE_AUTO;
  else if (g_strcmp0 (space, "raw") == 0)
    info->space = GST_VAE_LATENT_SPACE_RAW;
  else if (g_strcmp0 (space, "normalized") == 0)
    info->space = GST_VAE_LATENT_SPACE_NORMALIZED;
  else
    return gst_latent_info_wrong (why, g_strdup_printf ("the field 'space' is "
            "%s, not raw or normalized", space ? space : "no string"));
  return TRUE;
}

GstCaps *
gst_latent_info_to_caps (const GstLatentInfo * info)
{
  GstCaps *caps = gst_caps_new_simple (GST_LATENT_MEDIA_TYPE,
      "type", G_TYPE_STRING, gst_latent_dtype_to_string (info->dtype),
      "channels", G_TYPE_INT, info->channels,
      "width", G_TYPE_INT, info->width,
      "height", G_TYPE_INT, info->height,
      "framerate", GST_TYPE_FRACTION, info->fps_n, info->fps_d, NULL);

  if (info->space != GST_VAE_LATENT_SPACE_AUTO)
    gst_caps_set_simple (caps, "space", G_TYPE_STRING,
        info->space == GST_VAE_LATENT_SPACE_RAW ? "raw" : "normalized", NULL);
  return caps;
}

gsize
gst_latent_info_frame_size (const GstLatentInfo * info)
{
  return (gsize) info->channels * info->width * info->height *
      (vae_dtype_bits (info->dtype) / 8);
}

/* the tensor of a safetensors header that holds latents: the one named name if it is given
 * and not the default; else `latent_tensor`, or failing that the only non-empty F32, F16 or
 * BF16 tensor of 4 or 5 dimensions (a file of weights has many). NULL when there is none. */
const struct vae_st_tensor *
gst_latent_find_tensor (const struct vae_st_header *hdr, const gchar * name)
{
  const struct vae_st_tensor *found = NULL;
  gint i;

  if (name != NULL && !g_str_equal (name, GST_LATENT_DEFAULT_TENSOR))
    return vae_st_header_find (hdr, name);
  if ((found = vae_st_header_find (hdr, GST_LATENT_DEFAULT_TENSOR)))
    return found;
  for (i = 0; i < hdr->n_tensors; i++) {
    const struct vae_st_tensor *t = &hdr->tensors[i];

    if (!vae_dtype_is_float (t->dtype) || (t->n_dims != 4 && t->n_dims != 5)
        || t->numel == 0)
      continue;
    if (found)
      return NULL;
    found = t;
  }
  return found;
}

void
gst_latent_tags_register (void)
{
  gst_tag_register_static (GST_LATENT_TAG_FRAME_COUNT, GST_TAG_FLAG_META,
      G_TYPE_UINT64, "frame count", "Decoded video frames in the stream",
      gst_tag_merge_use_first);
  gst_tag_register_static (GST_LATENT_TAG_VAE_NAME, GST_TAG_FLAG_META,
      G_TYPE_STRING, "VAE name", "The VAE file the stream's ComfyUI workflow "
      "decoded with", gst_tag_merge_use_first);
}

GstEvent *
gst_latent_totals_event_new (guint64 latent_frames, guint64 frames)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
      gst_structure_new (GST_LATENT_TOTALS_NAME, "latent-frames", G_TYPE_UINT64,
          latent_frames, "frames", G_TYPE_UINT64, frames, NULL));
}

/* FALSE when the event is not a latent-totals event */
gboolean
gst_latent_totals_event_parse (GstEvent * event, guint64 * latent_frames,
    guint64 * frames)
{
  const GstStructure *s = gst_event_get_structure (event);

  return GST_EVENT_TYPE (event) == GST_EVENT_CUSTOM_DOWNSTREAM
      && s != NULL && gst_structure_has_name (s, GST_LATENT_TOTALS_NAME)
      && gst_structure_get_uint64 (s, "latent-frames", latent_frames)
      && gst_structure_get_uint64 (s, "frames", frames);
}
