/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * The plugin: the safetensors typefinder, latentparse (safetensors latent files -> latent
 * frames) and vaedecode (latent frames -> raw video), ranked so that decodebin plugs them.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstlatentinfo.h"
#include "gstlatentparse.h"
#include "gstvaedecode.h"

GST_TYPE_FIND_REGISTER_DECLARE (safetensors);

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  gst_latent_tags_register ();
  ret |= GST_TYPE_FIND_REGISTER (safetensors, plugin);
  ret |= GST_ELEMENT_REGISTER (latentparse, plugin);
  ret |= GST_ELEMENT_REGISTER (vaedecode, plugin);
  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, vaedecode,
    "Decodes diffusion-model latents into raw video", plugin_init,
    VERSION, "MIT/X11", "gst-vaedecode", GST_PACKAGE_ORIGIN)
