/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * The plugin: latentparse (safetensors latent files -> latent frames) and vaedecode
 * (latent frames -> raw video).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstlatentparse.h"
#include "gstvaedecode.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  ret |= GST_ELEMENT_REGISTER (latentparse, plugin);
  ret |= GST_ELEMENT_REGISTER (vaedecode, plugin);
  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, vaedecode,
    "Decodes diffusion-model latents into raw video", plugin_init,
    VERSION, "MIT/X11", "gst-vaedecode", "https://gstreamer.freedesktop.org")
