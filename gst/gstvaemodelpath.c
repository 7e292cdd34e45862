/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 *
 * The model path (gstvaemodelpath.h). Candidates are probed with vae_model_load, which reads
 * only a file's header and detects the family from its keys and shapes: weights are not read,
 * so a directory of checkpoints costs a header parse per file. A file is taken only where
 * its real path (links resolved) lies inside a model directory: a link in the model path to
 * a file elsewhere is refused, as a workflow's vae-name with `..` among its path components.
 * What was refused, and why, goes into the error that says no decoder fits.
 */

#include "gstvaemodelpath.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vae-model.h"

GST_DEBUG_CATEGORY_EXTERN (gst_vae_decode_debug);
#define GST_CAT_DEFAULT gst_vae_decode_debug

#define VAE_ERR_SIZE 512

/* a decoder found in the model path */
typedef struct
{
  gchar *path;
  enum vae_family family;
  gint channels[2];             /* of its raw and normalized latents */
  gboolean video;
} GstVaeCandidate;

gchar **
gst_vae_model_path_dirs (const gchar * model_dir)
{
  const gchar *list = model_dir && *model_dir ? model_dir :
      g_getenv (GST_VAE_MODEL_PATH_ENV);
  gchar **dirs, **in, **out;

  if (list == NULL)
    return NULL;
  dirs = g_strsplit (list, G_SEARCHPATH_SEPARATOR_S, -1);
  for (in = out = dirs; *in; in++) {
    if (**in)
      *out++ = *in;
    else
      g_free (*in);
  }
  *out = NULL;
  if (dirs[0] == NULL)
    g_clear_pointer (&dirs, g_strfreev);
  return dirs;
}

/* whether path's real path (its links resolved) lies inside one of dirs (resolved too); else
 * why not in *why */
static gboolean
gst_vae_model_path_inside (gchar ** dirs, const gchar * path, gchar ** why)
{
  char *real = realpath (path, NULL);
  gboolean inside = FALSE;
  gint d;

  if (real == NULL) {
    *why = g_strdup_printf ("its real path cannot be found (%s)",
        g_strerror (errno));
    return FALSE;
  }
  for (d = 0; dirs[d] && !inside; d++) {
    char *dir = realpath (dirs[d], NULL);
    gsize n = dir ? strlen (dir) : 0;

    /* (the root directory is the only one whose real path ends with '/') */
    inside = dir != NULL && strncmp (real, dir, n) == 0
        && (real[n] == '/' || (n > 0 && dir[n - 1] == '/'));
    free (dir);
  }
  if (!inside)
    *why = g_strdup_printf ("it resolves to %s, outside the model path", real);
  free (real);
  return inside;
}

/* whether `..` is one of the name's path components ('/' or '\\' separated: a name such as
 * taef2..decoder.safetensors is a file name like any other) */
static gboolean
gst_vae_model_path_climbs (const gchar * name)
{
  gchar **parts = g_strsplit_set (name, "/\\", -1);
  gboolean climbs = FALSE;
  gint i;

  for (i = 0; parts[i] && !climbs; i++)
    climbs = g_str_equal (parts[i], "..");
  g_strfreev (parts);
  return climbs;
}

/* the file vae_name stands for in dir: the name itself, or for ComfyUI's names of the TAESD
 * decoders ("taesd", "taef1": no extension) <name>_decoder.safetensors, else .pth */
static gchar *
gst_vae_model_path_named (const gchar * dir, const gchar * vae_name)
{
  static const gchar *const ext[] = { "_decoder.safetensors", "_decoder.pth" };
  gchar *path = g_build_filename (dir, vae_name, NULL), *file;
  guint i;

  if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return path;
  g_free (path);
  if (strchr (vae_name, '.') != NULL)
    return NULL;
  for (i = 0; i < G_N_ELEMENTS (ext); i++) {
    file = g_strconcat (vae_name, ext[i], NULL);
    path = g_build_filename (dir, file, NULL);
    g_free (file);
    if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
      return path;
    g_free (path);
  }
  return NULL;
}

/* a weight file the model path offers: .safetensors, or .pth where the directory has no
 * .safetensors of the same name (the same decoder in both formats is one candidate) */
static gboolean
gst_vae_model_path_offers (const gchar * dir, const gchar * name)
{
  gchar *stem, *twin;
  gboolean offered;

  if (g_str_has_suffix (name, ".safetensors"))
    return TRUE;
  if (!g_str_has_suffix (name, ".pth"))
    return FALSE;
  stem = g_strndup (name, strlen (name) - 4);
  twin = g_strdup_printf ("%s%s%s.safetensors", dir, G_DIR_SEPARATOR_S, stem);
  offered = !g_file_test (twin, G_FILE_TEST_IS_REGULAR);
  g_free (stem);
  g_free (twin);
  return offered;
}

static gint
gst_vae_model_path_compare (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar **) a, *(const gchar **) b);
}

/* the decoders of dirs, a file name in an earlier directory hiding the same in later ones;
 * what they are, for the messages, appended to found, and the files that are not, with
 * why, to refused */
static GArray *
gst_vae_model_path_probe (gchar ** dirs, GString * found, GString * refused)
{
  GArray *cands = g_array_new (FALSE, TRUE, sizeof (GstVaeCandidate));
  GHashTable *seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  char err[VAE_ERR_SIZE];
  gchar *why = NULL;
  gint d;

  for (d = 0; dirs[d]; d++) {
    GDir *dir = g_dir_open (dirs[d], 0, NULL);
    GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
    const gchar *name;
    guint i;

    if (dir == NULL) {
      GST_DEBUG ("model path: no directory %s", dirs[d]);
      continue;
    }
    while ((name = g_dir_read_name (dir)))
      if (gst_vae_model_path_offers (dirs[d], name))
        g_ptr_array_add (names, g_strdup (name));
    g_dir_close (dir);
    g_ptr_array_sort (names, gst_vae_model_path_compare);
    for (i = 0; i < names->len; i++) {
      const gchar *file = g_ptr_array_index (names, i);
      GstVaeCandidate c = { g_build_filename (dirs[d], file, NULL) };
      struct vae_model *m;

      if (g_hash_table_contains (seen, file)) {
        g_free (c.path);
        continue;
      }
      g_hash_table_add (seen, g_strdup (file));
      m = NULL;
      if (!gst_vae_model_path_inside (dirs, c.path, &why))
        g_strlcpy (err, why, sizeof (err));
      else
        m = vae_model_load (c.path, VAE_FAMILY_AUTO, err, sizeof (err));
      g_clear_pointer (&why, g_free);
      if (m == NULL) {
        gchar *quoted = g_strdup_printf ("'%s': ", c.path);

        GST_DEBUG ("model path: %s is not a decoder: %s", c.path, err);
        /* (the loader's errors start with the file's name, said already) */
        g_string_append_printf (refused, "%s%s was refused: %s",
            refused->len ? "; " : "", c.path, g_str_has_prefix (err, quoted) ?
            err + strlen (quoted) : err);
        g_free (quoted);
        g_free (c.path);
        continue;
      }
      c.family = m->family;
      c.channels[0] = m->latent_channels;
      c.channels[1] = m->latent_channels *
          vae_model_space_patch (m, VAE_SPACE_NORMALIZED) *
          vae_model_space_patch (m, VAE_SPACE_NORMALIZED);
      c.video = m->frames_per_latent > 1;
      vae_model_free (m);
      g_string_append_printf (found, "%s%s (%s, %d channels%s)",
          found->len ? ", " : "", c.path, vae_family_name (c.family),
          c.channels[0], c.video ? ", video" : "");
      g_array_append_val (cands, c);
    }
    g_ptr_array_unref (names);
  }
  g_hash_table_unref (seen);
  return cands;
}

/* whether the candidate takes latents of s */
static gboolean
gst_vae_model_path_fits (const GstVaeCandidate * c, const GstStructure * s,
    gboolean images_to_video)
{
  const gchar *space = gst_structure_get_string (s, "space");
  gboolean video;
  gint channels = 0;

  gst_structure_get_int (s, "channels", &channels);
  if (gst_structure_get_boolean (s, "video", &video) && video != c->video
      && !(images_to_video && !video))
    return FALSE;
  if (g_strcmp0 (space, "raw") == 0)
    return channels == c->channels[0];
  if (g_strcmp0 (space, "normalized") == 0)
    return channels == c->channels[1];
  return channels == c->channels[0] || channels == c->channels[1];
}

gchar *
gst_vae_model_path_choose (gchar ** dirs, const GstStructure * s,
    gchar ** why, gchar ** warning, gchar ** error)
{
  const gchar *vae_name = gst_structure_get_string (s, "vae-name");
  gchar *dirs_str = g_strjoinv (G_SEARCHPATH_SEPARATOR_S, dirs), *ret = NULL;
  gchar *outside = NULL;
  GString *found = g_string_new (NULL), *fits = g_string_new (NULL);
  GString *refused = g_string_new (NULL);
  const gchar *kind = "";
  GArray *cands;
  gboolean video;
  gint channels = 0, n = 0, d, pass;
  guint i;

  *why = *warning = *error = NULL;
  /* the workflow's VAE: a file name relative to the model path, never outside it */
  if (vae_name && (*vae_name == '\0' || g_path_is_absolute (vae_name)
          || gst_vae_model_path_climbs (vae_name))) {
    *warning = g_strdup_printf ("The latents name the VAE '%s', which is not a "
        "file name in the model path; choosing by their channels.", vae_name);
    vae_name = NULL;
  }
  for (d = 0; vae_name && dirs[d] && ret == NULL; d++)
    ret = gst_vae_model_path_named (dirs[d], vae_name);
  if (ret && !gst_vae_model_path_inside (dirs, ret, &outside)) {
    *warning = g_strdup_printf ("The latents name the VAE '%s', which is %s "
        "(%s); choosing by their channels.", vae_name, ret, outside);
    g_clear_pointer (&ret, g_free);
    g_free (outside);
    vae_name = NULL;
  }
  if (ret) {
    *why = g_strdup_printf ("the VAE '%s' of the latents' ComfyUI workflow",
        vae_name);
    goto done;
  }
  if (vae_name)
    *warning = g_strdup_printf ("The latents' ComfyUI workflow decoded with the "
        "VAE '%s', which is not in the model path (%s); choosing by their "
        "channels.", vae_name, dirs_str);

  gst_structure_get_int (s, "channels", &channels);
  if (gst_structure_get_boolean (s, "video", &video))
    kind = video ? " video" : " image";
  cands = gst_vae_model_path_probe (dirs, found, refused);
  /* images take an image decoder of their channels; where there is none, a causal video
   * decoder of their channels decodes each as a one-frame clip (Qwen-Image's images and
   * Wan's, with the Wan 2.1 VAE) */
  for (pass = 0; pass < 2 && n == 0; pass++) {
    for (i = 0; i < cands->len; i++) {
      GstVaeCandidate *c = &g_array_index (cands, GstVaeCandidate, i);

      if (gst_vae_model_path_fits (c, s, pass == 1)) {
        g_string_append_printf (fits, "%s%s (%s)", n ? ", " : "", c->path,
            vae_family_name (c->family));
        if (n++ == 0)
          ret = g_strdup (c->path);
      }
    }
  }
  for (i = 0; i < cands->len; i++)
    g_free (g_array_index (cands, GstVaeCandidate, i).path);
  g_array_unref (cands);
  /* (the warning is repeated: decodebin drops messages of an element it is setting up) */
  if (n == 1) {
    *why = g_strdup_printf ("the only decoder of %d-channel%s latents in the "
        "model path%s%s", channels, kind, *warning ? ". " : "",
        *warning ? *warning : "");
  } else if (n == 0) {
    /* what is there, and what was refused and why (a file that is not a decoder, a
     * malformed or malicious one, a link out of the model path) */
    if (found->len == 0 && refused->len == 0)
      g_string_append (found, "no .safetensors or .pth decoder");
    else if (found->len == 0)
      g_string_append_printf (found, "no decoder: %s", refused->str);
    else if (refused->len)
      g_string_append_printf (found, "; %s", refused->str);
    *error = g_strdup_printf ("%s%sNo decoder for %d-channel%s latents in the "
        "model path (%s), which holds %s. Put the decoder there, or set "
        "model-file.", *warning ? *warning : "", *warning ? " " : "",
        channels, kind, dirs_str, found->str);
  } else {
    *error = g_strdup_printf ("%s%s%d decoders in the model path (%s) take "
        "%d-channel%s latents: %s. Set model-file to the one to use, or "
        "leave only it in the model path.", *warning ? *warning : "",
        *warning ? " " : "", n, dirs_str, channels, kind, fits->str);
    g_clear_pointer (&ret, g_free);
  }

done:
  g_string_free (found, TRUE);
  g_string_free (fits, TRUE);
  g_string_free (refused, TRUE);
  g_free (dirs_str);
  return ret;
}
