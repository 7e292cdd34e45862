// Shared by the model-level tests: where the fixtures are, and reading a tensor of a
// safetensors file as f32. Included once per test program (everything here is static).

#pragma once

#include "vae-session.h"
#include "vae-test.h"

#include <stdlib.h>

static char  err[512];
static const char * shared_dir;
static const char * data_dir;
static vae_backend_t * cpu;

// the fixture directories from the environment and a cpu backend; false after a message
static bool test_data_init(void) {
    shared_dir = getenv("VAE_SHARED_DIR") ? getenv("VAE_SHARED_DIR") : "../shared";
    data_dir   = getenv("VAE_TEST_DATA") ? getenv("VAE_TEST_DATA") : "tests/data";
    cpu        = vae_backend_init(VAE_BACKEND_CPU, 0, VAE_PRECISION_FP32, err, sizeof(err));
    if (!cpu) {
        fprintf(stderr, "no cpu backend: %s\n", err);
    }
    return cpu != NULL;
}

static const char * path_in(const char * dir, const char * name) {
    static char buf[4][1024];
    static int  i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
    return buf[i];
}

// a tensor of a safetensors file as f32 (caller frees), with its shape
__attribute__((unused)) static float * read_tensor(const char * path, const char * name, int64_t shape[5]) {
    struct vae_st_file * f = vae_st_file_open(path, err, sizeof(err));
    if (!f) {
        CHECK(0, "%s", err);
        return NULL;
    }
    const struct vae_st_tensor * t = vae_st_header_find(f->hdr, name);
    float *                      data = NULL;
    if (t) {
        data = malloc(t->numel * sizeof(float));
        vae_dtype_to_f32(t->dtype, t->data, data, t->numel);
        for (int i = 0; i < 5; i++) {
            shape[i] = i < t->n_dims ? t->shape[i] : 1;
        }
    }
    CHECK(t != NULL, "no tensor %s in %s", name, path);
    vae_st_file_close(f);
    return data;
}

static inline double max_abs_diff(const float * a, const float * b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double) a[i] - (double) b[i]);
        if (!(d <= m)) {
            m = d; // NaN propagates and fails the caller's check
        }
    }
    return m;
}


// ---- rewritten model files (renamed, reshaped, with tensors left out) for the loader tests ----
// `static inline` so that programs which do not use them get no unused-function warning.

#include <stdint.h>
#include <unistd.h>

// a tensor of a file written by test_write_model
struct test_tensor {
    const char *    name;
    const char *    dtype;                  // "BF16", "F32", "I64", ...
    int             n_dims;
    int64_t         shape[VAE_ST_MAX_DIMS];
    const uint8_t * data;                   // NULL: zeros
};

// bytes of numel elements of the dtype named `dtype` (0 for an unknown name)
static inline size_t test_dtype_bytes(const char * dtype, uint64_t numel) {
    for (int d = 0; d < VAE_DTYPE_COUNT; d++) {
        if (strcmp(vae_dtype_name((enum vae_dtype) d), dtype) == 0) {
            return (size_t) (numel * (uint64_t) vae_dtype_bits((enum vae_dtype) d) / 8);
        }
    }
    return 0;
}

static inline uint64_t test_numel(int n_dims, const int64_t * shape) {
    uint64_t n = 1;
    for (int d = 0; d < n_dims; d++) {
        n *= (uint64_t) shape[d];
    }
    return n;
}

// a temporary file name for this process (one per tag)
static inline const char * test_tmp_path(const char * tag) {
    static char path[4][256];
    static int  i;
    i = (i + 1) % 4;
    snprintf(path[i], sizeof(path[i]), "%s/vae-test-%d-%s.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int) getpid(), tag);
    return path[i];
}

// write n tensors as a safetensors file; false after a failed check
static inline bool test_write_model(const char * path, int n, const struct test_tensor * t) {
    size_t cap = 4096, len = 0;
    char * json = malloc(cap);
    size_t at   = 0;
    bool   ok   = json != NULL;
    for (int i = 0; ok && i <= n; i++) {
        char entry[1024];
        int  e = 0;
        if (i == n) {
            e = snprintf(entry, sizeof(entry), n ? "}" : "{}");
        } else {
            const size_t bytes = test_dtype_bytes(t[i].dtype, test_numel(t[i].n_dims, t[i].shape));
            e                  = snprintf(entry, sizeof(entry), "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "{",
                                          t[i].name, t[i].dtype);
            for (int d = 0; d < t[i].n_dims; d++) {
                e += snprintf(entry + e, sizeof(entry) - (size_t) e, "%s%lld", d ? "," : "", (long long) t[i].shape[d]);
            }
            e += snprintf(entry + e, sizeof(entry) - (size_t) e, "],\"data_offsets\":[%zu,%zu]}", at, at + bytes);
            at += bytes;
        }
        if (len + (size_t) e + 1 > cap) {
            cap   = 2 * (len + (size_t) e + 1);
            char * grown = realloc(json, cap);
            ok    = grown != NULL;
            json  = grown ? grown : json;
        }
        if (ok) {
            memcpy(json + len, entry, (size_t) e);
            len += (size_t) e;
        }
    }
    FILE *         out = ok ? fopen(path, "wb") : NULL;
    const uint64_t hl  = len;
    ok                 = out && fwrite(&hl, 8, 1, out) == 1 && fwrite(json, 1, len, out) == len;
    for (int i = 0; ok && i < n; i++) {
        const size_t bytes = test_dtype_bytes(t[i].dtype, test_numel(t[i].n_dims, t[i].shape));
        if (t[i].data) {
            ok = fwrite(t[i].data, 1, bytes, out) == bytes;
        } else {
            for (size_t b = 0; ok && b < bytes; b++) {
                ok = fputc(0, out) != EOF;
            }
        }
    }
    ok = out && fclose(out) == 0 && ok;
    CHECK(ok, "could not write %s", path);
    free(json);
    return ok;
}

// a copy of a model file of data_dir without tensor `drop`, and with tensor `cut` one row shorter
// (NULL: none); the path of the copy (the same one each call) or NULL
static inline const char * edited_model(const char * src, const char * drop, const char * cut) {
    const char *         path = test_tmp_path("edited");
    struct vae_st_file * f    = vae_st_file_open(path_in(data_dir, src), err, sizeof(err));
    CHECK(f != NULL, "%s", err);
    if (!f) {
        return NULL;
    }
    struct test_tensor * ts = calloc((size_t) f->hdr->n_tensors, sizeof(*ts));
    int                  n  = 0;
    for (int i = 0; i < f->hdr->n_tensors; i++) {
        const struct vae_st_tensor * t = &f->hdr->tensors[i];
        if (drop && strcmp(t->name, drop) == 0) {
            continue;
        }
        struct test_tensor * o = &ts[n++];
        *o = (struct test_tensor) { t->name, vae_dtype_name(t->dtype), t->n_dims, { 0 }, t->data };
        memcpy(o->shape, t->shape, sizeof(o->shape));
        o->shape[0] -= cut && strcmp(t->name, cut) == 0; // the first rows of the data are kept
    }
    const bool ok = test_write_model(path, n, ts);
    free(ts);
    vae_st_file_close(f);
    return ok ? path : NULL;
}

// a copy of model file `src` of data_dir under the names of naming variant `variant` of a
// `.names.txt` list (lines `variant<TAB>stored name or -<TAB>name<TAB>dtype<TAB>[shape]`, written
// by the fixture generators): every tensor of the variant, renamed and reshaped (same data; `-`:
// zeros), except the one it calls `drop` (NULL: none). The path of the copy (one per tag) or NULL.
static inline const char * renamed_model(const char * src, const char * names, const char * variant, const char * drop,
                                         const char * tag) {
    const char *         path = test_tmp_path(tag);
    struct vae_st_file * f    = vae_st_file_open(path_in(data_dir, src), err, sizeof(err));
    FILE *               list = fopen(path_in(data_dir, names), "r");
    CHECK(f && list, "cannot open %s or %s", src, names);
    int                  cap = 0, n = 0;
    struct test_tensor * ts  = NULL;
    char **              own = NULL; // names and dtypes read from the list
    char                 line[1024];
    bool                 ok = f && list;
    while (ok && fgets(line, sizeof(line), list)) {
        char v[64], stored[256], name[256], dtype[16], shape[128];
        if (line[0] == '#' || sscanf(line, "%63[^\t]\t%255[^\t]\t%255[^\t]\t%15[^\t]\t%127[^\n]", v, stored, name, dtype,
                                     shape) != 5) {
            continue;
        }
        if (strcmp(v, variant) != 0 || (drop && strcmp(name, drop) == 0)) {
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            ts  = realloc(ts, (size_t) cap * sizeof(*ts));
            own = realloc(own, (size_t) cap * 2 * sizeof(*own));
        }
        struct test_tensor * o = &ts[n];
        own[2 * n]             = strdup(name);
        own[2 * n + 1]         = strdup(dtype);
        *o                     = (struct test_tensor) { own[2 * n], own[2 * n + 1], 0, { 0 }, NULL };
        for (char * p = shape + 1; *p && *p != ']' && o->n_dims < VAE_ST_MAX_DIMS;) {
            o->shape[o->n_dims++] = strtoll(p, &p, 10);
            p += *p == ',' ? 1 : 0;
            p += *p == ' ' ? 1 : 0;
        }
        n++;
        if (strcmp(stored, "-") != 0) {
            const struct vae_st_tensor * t = vae_st_header_find(f->hdr, stored);
            ok = t && t->nbytes == test_dtype_bytes(dtype, test_numel(o->n_dims, o->shape)) &&
                 strcmp(vae_dtype_name(t->dtype), dtype) == 0;
            CHECK(ok, "%s: %s of variant %s does not fit %s of %s", names, name, variant, stored, src);
            o->data = t ? t->data : NULL;
        }
    }
    CHECK(!ok || n > 0, "%s has no variant %s", names, variant);
    ok = ok && n > 0 && test_write_model(path, n, ts);
    for (int i = 0; i < 2 * n; i++) {
        free(own[i]);
    }
    free(own);
    free(ts);
    if (list) {
        fclose(list);
    }
    vae_st_file_close(f);
    return ok ? path : NULL;
}
