/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * Choosing vaedecode's model without a model-file, so that a decoder that decodebin plugs
 * finds its weights: from a model path, the directories of the model-dir property or of the
 * GST_VAE_MODEL_PATH environment variable (like ComfyUI's models/vae and models/vae_approx).
 */

#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_VAE_MODEL_PATH_ENV "GST_VAE_MODEL_PATH"

/* the model path: model_dir when it is set, else GST_VAE_MODEL_PATH; a list of directories
 * separated by G_SEARCHPATH_SEPARATOR (':'), empty ones dropped. NULL when it has none. */
gchar **gst_vae_model_path_dirs (const gchar * model_dir);

/* the decoder in dirs for latents of the caps structure s (video/x-latent): the file the
 * `vae-name` field names, found in the first directory that has it, else the only decoder
 * that takes s's channel count (in s's `space`, any when absent) and, where s has a `video`
 * field, is a video decoder or not as it says. Returns its path and in *why how it was
 * chosen; *warning (else NULL) says when a named VAE was not found. NULL with the reason in
 * *error when no decoder or several fit. */
gchar *gst_vae_model_path_choose (gchar ** dirs, const GstStructure * s,
    gchar ** why, gchar ** warning, gchar ** error);

G_END_DECLS
