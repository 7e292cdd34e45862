/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 */

#pragma once

#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_VAE_DECODE (gst_vae_decode_get_type ())
G_DECLARE_FINAL_TYPE (GstVaeDecode, gst_vae_decode, GST, VAE_DECODE,
    GstBaseTransform);

GST_ELEMENT_REGISTER_DECLARE (vaedecode);

G_END_DECLS
