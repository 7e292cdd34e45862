/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 */

#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_LATENT_PARSE (gst_latent_parse_get_type ())
G_DECLARE_FINAL_TYPE (GstLatentParse, gst_latent_parse, GST, LATENT_PARSE,
    GstElement);

GST_ELEMENT_REGISTER_DECLARE (latentparse);

G_END_DECLS
