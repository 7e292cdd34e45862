/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * The typefinder of safetensors files, so that decodebin, playbin and gst-discoverer-1.0 plug
 * latentparse ! vaedecode for a `.latent` file. A file whose header holds a latent tensor
 * (gst_latent_find_tensor) is `application/x-safetensors, content=(string)latent`, what
 * latentparse takes; any other safetensors file (weights) plain `application/x-safetensors`,
 * which nothing plugs.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstlatentinfo.h"

#include "vae-safetensors.h"

/* a header longer than this is not read whole to typefind (ComfyUI's, with its workflow, takes
 * tens of kB) */
#define MAX_PEEK (4 * 1024 * 1024)

static GstStaticCaps latent_caps =
GST_STATIC_CAPS (GST_SAFETENSORS_LATENT_CAPS_STR);
static GstStaticCaps plain_caps = GST_STATIC_CAPS (GST_SAFETENSORS_MEDIA_TYPE);

static void
gst_safetensors_type_find (GstTypeFind * tf, gpointer user_data)
{
  const guint8 *data = gst_type_find_peek (tf, 0, 9);
  const guint64 length = gst_type_find_get_length (tf);
  guint64 header_len, size;
  struct vae_st_header *hdr;
  gboolean latent;

  /* the length prefix, then the JSON object (MODELS.md E) */
  if (data == NULL || data[8] != '{'
      || !vae_st_prefix_parse (data, &header_len, NULL, 0)
      || (length > 0 && 8 + header_len > length))
    return;

  data = header_len <= MAX_PEEK ? gst_type_find_peek (tf, 8, header_len) : NULL;
  if (data != NULL) {
    hdr = vae_st_header_parse (data, header_len, NULL, 0);
    if (hdr == NULL)
      return;
    latent = gst_latent_find_tensor (hdr, NULL) != NULL;
    vae_st_header_free (hdr);
    gst_type_find_suggest (tf, latent ? GST_TYPE_FIND_MAXIMUM :
        GST_TYPE_FIND_LIKELY, gst_static_caps_get (latent ?
            &latent_caps : &plain_caps));
    return;
  }

  /* only the start of the header can be seen (a byte stream that typefind holds a little
   * of): a latent file if its tensor's name is there */
  for (size = MIN (header_len, MAX_PEEK) / 2; size >= 64; size /= 2)
    if ((data = gst_type_find_peek (tf, 8, size)) != NULL)
      break;
  if (data == NULL)
    return;
  latent = g_strstr_len ((const gchar *) data, size,
      "\"" GST_LATENT_DEFAULT_TENSOR "\"") != NULL;
  gst_type_find_suggest (tf, GST_TYPE_FIND_POSSIBLE,
      gst_static_caps_get (latent ? &latent_caps : &plain_caps));
}

GST_TYPE_FIND_REGISTER_DEFINE (safetensors, GST_SAFETENSORS_MEDIA_TYPE,
    GST_RANK_PRIMARY, gst_safetensors_type_find, "latent,safetensors",
    gst_static_caps_get (&plain_caps), NULL, NULL);
