// For the tests that start GStreamer: a plugin registry of the process's own, so that no test
// depends on a registry file that an earlier build, a sanitizer build or another plugin path
// left behind (GStreamer trusts a cached entry whose file's size and time did not change).

#pragma once

#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <unistd.h>

static gchar * vae_test_registry_dir;
static pid_t   vae_test_registry_pid;   // check's forked test cases exit too: only the maker removes it

static void vae_test_registry_remove(void) {
    if (getpid() != vae_test_registry_pid) {
        return;
    }
    gchar * file = g_build_filename(vae_test_registry_dir, "registry.bin", NULL);
    g_unlink(file);
    g_rmdir(vae_test_registry_dir);
    g_free(file);
}

// call before gst_init (or gst_check_init)
static inline void vae_test_fresh_registry(void) {
    vae_test_registry_dir = g_dir_make_tmp("vae-registry-XXXXXX", NULL);
    if (vae_test_registry_dir) {
        gchar * file = g_build_filename(vae_test_registry_dir, "registry.bin", NULL);
        g_setenv("GST_REGISTRY_1_0", file, TRUE);
        g_free(file);
        vae_test_registry_pid = getpid();
        atexit(vae_test_registry_remove);
    }
}
