// Tests of model/vae-safetensors.c: a valid file of every feature we rely on, value conversion
// (F32/F16/BF16 incl. subnormals, inf, NaN, unaligned data), and one malformed file of every kind
// the reader must refuse, each checked for an error that names the cause. Also opens the real
// checkpoint and latent from the shared dir (VAE_SHARED_DIR, default ../shared) when present.
// Then the model loader on hostile files: crafted shapes and names, a FIFO, NaN and infinite
// weights, a big tensor no graph uses (never converted), and every file of the fuzz corpus
// (VAE_FUZZ_CORPUS); loads that could hang run in a child process with a deadline.

#include "vae-model.h"
#include "vae-safetensors.h"
#include "vae-test.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[1024];
static int  g_file_id;

// a fresh path in the temp dir
static void tmp_path(char * path, size_t size) {
    snprintf(path, size, "%s/f%03d.safetensors", g_dir, g_file_id++);
}

static void write_bytes(const char * path, const void * bytes, size_t len) {
    FILE * f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "cannot create %s: %s\n", path, strerror(errno));
        exit(2);
    }
    if (len > 0 && fwrite(bytes, 1, len, f) != len) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

static void put_u64le(uint8_t * p, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t) (v >> (8 * i));
    }
}

// [N][json, space-padded to pad_to if nonzero][data]
static void write_st(const char * path, const char * json, size_t json_len, size_t pad_to, const void * data,
                     size_t data_len) {
    size_t n = json_len;
    if (pad_to > 0) {
        n = (n + pad_to - 1) / pad_to * pad_to;
    }
    uint8_t * buf = malloc(8 + n + data_len + 1);
    put_u64le(buf, n);
    memcpy(buf + 8, json, json_len);
    memset(buf + 8 + json_len, ' ', n - json_len);
    if (data_len > 0) {
        if (data != NULL) {
            memcpy(buf + 8 + n, data, data_len);
        } else {
            memset(buf + 8 + n, 0, data_len);
        }
    }
    write_bytes(path, buf, 8 + n + data_len);
    free(buf);
}

//
// valid files
//

static void put_f32(uint8_t * p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t) (u >> (8 * i));
    }
}

static void put_u16(uint8_t * p, uint16_t v) {
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
}

static const uint16_t k_f16[9] = { 0x3c00, 0xc000, 0x0001, 0x03ff, 0x7c00, 0xfc00, 0x7e00, 0x7bff, 0x8000 };
static const uint16_t k_bf16[4] = { 0x3f80, 0xc040, 0x7f80, 0x4049 };
static const float    k_f32[4]  = { 1.0f, -2.5f, 3.25f, 1e-3f };

// the data of k_valid_json: 54 bytes, tensors deliberately not listed in offset order
static const char * k_valid_json =
    "{ \"__metadata__\":{\"format\":\"pt\",\"note\":\"caf\\u00e9 \\ud83d\\ude00\",\"esc\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"},"
    "\"scalar\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[42,46]},"
    "\"h16\":{\"shape\":[9],\"dtype\":\"F16\",\"data_offsets\":[16,34]},"
    "\"zero3\":{\"dtype\":\"F16\",\"shape\":[2,0,3],\"data_offsets\":[54,54]},"
    "\"w32\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
    "\"idx\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[46,54]},"
    "\"empty\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[42,42]},"
    "\"b16\":{\"data_offsets\":[34,42],\"dtype\":\"BF16\",\"shape\":[4]}}";

static void make_valid_data(uint8_t data[54]) {
    for (int i = 0; i < 4; i++) {
        put_f32(data + 4 * i, k_f32[i]);
    }
    for (int i = 0; i < 9; i++) {
        put_u16(data + 16 + 2 * i, k_f16[i]);
    }
    for (int i = 0; i < 4; i++) {
        put_u16(data + 34 + 2 * i, k_bf16[i]);
    }
    put_f32(data + 42, 7.5f);
    for (int i = 0; i < 8; i++) {
        data[46 + i] = i == 0 ? 123 : 0;
    }
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void check_valid_header(const struct vae_st_header * hdr, bool with_data) {
    CHECK(hdr->n_tensors == 7, "n_tensors %d", hdr->n_tensors);
    CHECK(hdr->data_size == 54, "data_size %" PRIu64, hdr->data_size);
    for (int i = 1; i < hdr->n_tensors; i++) {
        CHECK(hdr->tensors[i - 1].offset <= hdr->tensors[i].offset, "tensors not sorted by offset at %d", i);
    }
    CHECK(strcmp(hdr->tensors[0].name, "w32") == 0, "first tensor '%s'", hdr->tensors[0].name);

    const struct vae_st_tensor * w = vae_st_header_find(hdr, "w32");
    CHECK(w != NULL && w->dtype == VAE_DTYPE_F32 && w->n_dims == 2 && w->shape[0] == 2 && w->shape[1] == 2 &&
              w->numel == 4 && w->offset == 0 && w->nbytes == 16,
          "w32 wrong");
    const struct vae_st_tensor * s = vae_st_header_find(hdr, "scalar");
    CHECK(s != NULL && s->n_dims == 0 && s->numel == 1 && s->offset == 42 && s->nbytes == 4, "scalar wrong");
    const struct vae_st_tensor * e = vae_st_header_find(hdr, "empty");
    CHECK(e != NULL && e->n_dims == 1 && e->shape[0] == 0 && e->numel == 0 && e->nbytes == 0, "empty wrong");
    const struct vae_st_tensor * z = vae_st_header_find(hdr, "zero3");
    CHECK(z != NULL && z->n_dims == 3 && z->numel == 0 && z->nbytes == 0 && z->offset == 54, "zero3 wrong");
    const struct vae_st_tensor * x = vae_st_header_find(hdr, "idx");
    CHECK(x != NULL && x->dtype == VAE_DTYPE_I64 && x->numel == 1 && x->nbytes == 8, "idx wrong");
    CHECK(vae_st_header_find(hdr, "nope") == NULL, "found a tensor that does not exist");
    CHECK(vae_st_header_find(hdr, "__metadata__") == NULL, "__metadata__ is not a tensor");

    CHECK(hdr->n_metadata == 3, "n_metadata %d", hdr->n_metadata);
    const char * fmt = vae_st_header_metadata(hdr, "format");
    CHECK(fmt != NULL && strcmp(fmt, "pt") == 0, "metadata format");
    const char * note = vae_st_header_metadata(hdr, "note");
    CHECK(note != NULL && strcmp(note, "caf\xc3\xa9 \xf0\x9f\x98\x80") == 0, "metadata note (\\u escapes to UTF-8)");
    const char * esc = vae_st_header_metadata(hdr, "esc");
    CHECK(esc != NULL && strcmp(esc, "a\"b\\c/d\b\f\n\r\t") == 0, "metadata esc");
    CHECK(vae_st_header_metadata(hdr, "missing") == NULL, "metadata lookup of a missing key");

    for (int i = 0; i < hdr->n_tensors; i++) {
        CHECK((hdr->tensors[i].data != NULL) == with_data, "tensor '%s' data pointer", hdr->tensors[i].name);
    }
}

static void check_valid_values(const struct vae_st_header * hdr) {
    float out[9];

    const struct vae_st_tensor * w = vae_st_header_find(hdr, "w32");
    CHECK(vae_dtype_to_f32(w->dtype, w->data, out, 4), "F32 conversion refused");
    for (int i = 0; i < 4; i++) {
        CHECK(out[i] == k_f32[i], "w32[%d] = %g", i, out[i]);
    }

    const struct vae_st_tensor * h = vae_st_header_find(hdr, "h16");
    CHECK(vae_dtype_to_f32(h->dtype, h->data, out, 9), "F16 conversion refused");
    CHECK(out[0] == 1.0f, "f16 1.0 -> %g", out[0]);
    CHECK(out[1] == -2.0f, "f16 -2.0 -> %g", out[1]);
    CHECK(out[2] == 0x1p-24f, "f16 smallest subnormal -> %g", out[2]);
    CHECK(out[3] == 1023.0f * 0x1p-24f, "f16 largest subnormal -> %g", out[3]);
    CHECK(isinf(out[4]) && out[4] > 0, "f16 +inf -> %g", out[4]);
    CHECK(isinf(out[5]) && out[5] < 0, "f16 -inf -> %g", out[5]);
    CHECK(isnan(out[6]), "f16 nan -> %g", out[6]);
    CHECK(out[7] == 65504.0f, "f16 max -> %g", out[7]);
    CHECK(out[8] == 0.0f && signbit(out[8]), "f16 -0 -> %g", out[8]);

    const struct vae_st_tensor * b = vae_st_header_find(hdr, "b16");
    CHECK(vae_dtype_to_f32(b->dtype, b->data, out, 4), "BF16 conversion refused");
    CHECK(out[0] == 1.0f && out[1] == -3.0f && isinf(out[2]) && out[3] == 3.140625f, "bf16 values %g %g %g %g",
          out[0], out[1], out[2], out[3]);

    const struct vae_st_tensor * s = vae_st_header_find(hdr, "scalar");
    CHECK(vae_dtype_to_f32(s->dtype, s->data, out, 1) && out[0] == 7.5f, "unaligned scalar -> %g", out[0]);

    const struct vae_st_tensor * x = vae_st_header_find(hdr, "idx");
    CHECK(x->data[0] == 123, "I64 data");
    CHECK(!vae_dtype_to_f32(x->dtype, x->data, out, 1), "I64 conversion must be refused");
}

static void test_valid_files(void) {
    uint8_t data[54];
    make_valid_data(data);
    char  err[1024] = "";
    char  path[1200];
    const size_t json_len = strlen(k_valid_json);

    // padded to 8 (as current writers do) and unpadded (as older ones do)
    for (int pad = 0; pad < 2; pad++) {
        tmp_path(path, sizeof(path));
        write_st(path, k_valid_json, json_len, pad ? 8 : 0, data, sizeof(data));
        struct vae_st_file * f = vae_st_file_open(path, err, sizeof(err));
        CHECK(f != NULL, "valid file (%s) refused: %s", pad ? "padded" : "unpadded", err);
        if (f != NULL) {
            const uint64_t n = pad ? (json_len + 7) / 8 * 8 : json_len;
            CHECK(f->map_size == 8 + n + 54, "map_size %zu", f->map_size);
            check_valid_header(f->hdr, true);
            for (int i = 0; i < f->hdr->n_tensors; i++) {
                const struct vae_st_tensor * t = &f->hdr->tensors[i];
                CHECK(t->data == f->map + 8 + n + t->offset, "tensor '%s' data pointer", t->name);
            }
            check_valid_values(f->hdr);
            vae_st_file_close(f);
        }
        unlink(path);
    }
    CHECK(json_len % 8 != 0, "the unpadded case should really be unaligned (%zu)", json_len);

    // the same header parsed on its own: data pointers stay NULL
    struct vae_st_header * hdr = vae_st_header_parse((const uint8_t *) k_valid_json, json_len, err, sizeof(err));
    CHECK(hdr != NULL, "vae_st_header_parse refused the valid header: %s", err);
    if (hdr != NULL) {
        check_valid_header(hdr, false);
        vae_st_header_free(hdr);
    }

    // JSON whitespace anywhere it may go, plus space padding and a trailing newline
    static const char * spaced =
        "{ \"a\" :\t{ \"dtype\" : \"F32\" ,\r\n \"shape\" : [ 1 , 2 ] , \"data_offsets\" : [ 0 , 8 ] } ,\n"
        "  \"__metadata__\" : { } }\n    ";
    hdr = vae_st_header_parse((const uint8_t *) spaced, strlen(spaced), err, sizeof(err));
    CHECK(hdr != NULL && hdr->n_tensors == 1 && hdr->n_metadata == 0 && hdr->data_size == 8,
          "whitespace-laden header refused: %s", err);
    vae_st_header_free(hdr);

    // no tensors at all; only metadata
    static const char * const empties[] = { "{}", "{\"__metadata__\":{\"k\":\"v\"}}" };
    for (int i = 0; i < 2; i++) {
        tmp_path(path, sizeof(path));
        write_st(path, empties[i], strlen(empties[i]), 8, NULL, 0);
        struct vae_st_file * f = vae_st_file_open(path, err, sizeof(err));
        CHECK(f != NULL && f->hdr->n_tensors == 0 && f->hdr->data_size == 0 && f->hdr->n_metadata == i,
              "tensorless header %s refused: %s", empties[i], err);
        vae_st_file_close(f);
        unlink(path);
    }

    // zero-size tensors first, between and last at the same offsets as their neighbours;
    // sub-byte dtypes ending on a byte boundary; every dtype name
    static const char * tiling =
        "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
        "\"z0\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[0,0]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"z1\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,4]},"
        "\"f4\":{\"dtype\":\"F4\",\"shape\":[2,2],\"data_offsets\":[8,10]},"
        "\"f6\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[10,13]},"
        "\"f6b\":{\"dtype\":\"F6_E3M2\",\"shape\":[8],\"data_offsets\":[13,19]},"
        "\"z2\":{\"dtype\":\"BF16\",\"shape\":[0],\"data_offsets\":[19,19]}}";
    hdr = vae_st_header_parse((const uint8_t *) tiling, strlen(tiling), err, sizeof(err));
    CHECK(hdr != NULL, "tiling with zero-size tensors refused: %s", err);
    if (hdr != NULL) {
        CHECK(hdr->data_size == 19 && hdr->n_tensors == 8, "data_size %" PRIu64, hdr->data_size);
        CHECK(strcmp(hdr->tensors[0].name, "z0") == 0 && strcmp(hdr->tensors[7].name, "z2") == 0,
              "order %s .. %s", hdr->tensors[0].name, hdr->tensors[7].name);
        vae_st_header_free(hdr);
    }
}

static void test_dtypes(void) {
    static const char * const names[VAE_DTYPE_COUNT] = {
        "BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
        "I16",  "U16", "F16", "BF16",    "I32",     "U32",     "F32",         "I64",
        "U64",  "F64", "C64", "F4",      "F6_E2M3", "F6_E3M2",
    };
    static const int bits[VAE_DTYPE_COUNT] = { 8,  8,  8,  8,  8,  8,  8,  8,  16, 16, 16,
                                               16, 32, 32, 32, 64, 64, 64, 64, 4,  6,  6 };
    char err[256];
    for (int i = 0; i < VAE_DTYPE_COUNT; i++) {
        CHECK(strcmp(vae_dtype_name((enum vae_dtype) i), names[i]) == 0, "dtype %d name %s", i,
              vae_dtype_name((enum vae_dtype) i));
        CHECK(vae_dtype_bits((enum vae_dtype) i) == bits[i], "dtype %s bits %d", names[i],
              vae_dtype_bits((enum vae_dtype) i));
        const bool fl = i == VAE_DTYPE_F32 || i == VAE_DTYPE_F16 || i == VAE_DTYPE_BF16;
        CHECK(vae_dtype_is_float((enum vae_dtype) i) == fl, "dtype %s is_float", names[i]);
        float          out = 0;
        const uint8_t  src[8] = { 0 };
        CHECK(vae_dtype_to_f32((enum vae_dtype) i, src, &out, 1) == fl, "dtype %s conversion", names[i]);

        // each name is accepted by the parser as that dtype
        char json[256];
        snprintf(json, sizeof(json), "{\"t\":{\"dtype\":\"%s\",\"shape\":[8],\"data_offsets\":[0,%d]}}", names[i],
                 bits[i]);
        struct vae_st_header * hdr = vae_st_header_parse((const uint8_t *) json, strlen(json), err, sizeof(err));
        CHECK(hdr != NULL && hdr->tensors[0].dtype == (enum vae_dtype) i, "dtype %s refused: %s", names[i], err);
        vae_st_header_free(hdr);
    }

    // every f16 value against an independent reference, at an odd address
    uint8_t * buf = malloc(2 * 65536 + 1);
    float *   out = malloc(sizeof(float) * 65536);
    for (uint32_t h = 0; h < 65536; h++) {
        put_u16(buf + 1 + 2 * h, (uint16_t) h);
    }
    CHECK(vae_dtype_to_f32(VAE_DTYPE_F16, buf + 1, out, 65536), "F16 conversion refused");
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        const int   e = (h >> 10) & 0x1f;
        const int   m = h & 0x3ff;
        const float s = (h & 0x8000) ? -1.0f : 1.0f;
        if (e == 31) {
            // inf, or NaN with the payload kept in the top mantissa bits
            const uint32_t want = ((h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t) m << 13);
            bad += f32_bits(out[h]) != want;
        } else {
            const float want = e == 0 ? s * ldexpf((float) m, -24) : s * ldexpf((float) (1024 + m), e - 25);
            bad += f32_bits(out[h]) != f32_bits(want);
        }
    }
    CHECK(bad == 0, "%d of 65536 f16 values converted wrongly", bad);

    // bf16 and f32 at an odd address
    for (uint32_t h = 0; h < 65536; h++) {
        put_u16(buf + 1 + 2 * h, (uint16_t) h);
    }
    CHECK(vae_dtype_to_f32(VAE_DTYPE_BF16, buf + 1, out, 65536), "BF16 conversion refused");
    bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        bad += f32_bits(out[h]) != h << 16;
    }
    CHECK(bad == 0, "%d of 65536 bf16 values converted wrongly", bad);
    CHECK(vae_dtype_to_f32(VAE_DTYPE_F32, buf + 1, out, 32768), "F32 conversion refused");
    bad = 0;
    for (uint32_t i = 0; i < 32768; i++) {
        const uint32_t want = (2 * i) | ((2 * i + 1) << 16);
        bad += f32_bits(out[i]) != want;
    }
    CHECK(bad == 0, "%d f32 values converted wrongly", bad);
    CHECK(vae_dtype_to_f32(VAE_DTYPE_F16, NULL, NULL, 0), "converting 0 elements");
    free(buf);
    free(out);
}

//
// malformed files
//

struct bad_case {
    const char * what;
    const char * json;       // the header bytes
    size_t       json_len;   // 0: strlen(json)
    size_t       data_len;   // zero bytes of data after the header
    const char * needle;     // the error must mention this
    bool         header;     // the header alone is invalid (also checked with vae_st_header_parse)
};

#define T(name, dt, shp, offs) "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shp ",\"data_offsets\":" offs "}"

static const struct bad_case k_bad[] = {
    // not JSON the way the format wants it
    { "header not starting with '{'", " {}", 0, 0, "header must start with '{', not ' '", true },
    { "array header", "[]", 0, 0, "header must start with '{', not '['", true },
    { "trailing comma in object", "{" T("a", "F32", "[1]", "[0,4]") ",}", 0, 4, "trailing comma before '}'", true },
    { "trailing comma in array", "{" T("a", "F32", "[1,]", "[0,4]") "}", 0, 4, "trailing comma before ']'", true },
    { "unterminated string", "{\"a", 0, 0, "unterminated string", true },
    { "unterminated string at a backslash", "{\"a\\", 0, 0, "unterminated string", true },
    { "bad escape", "{\"a\\x\":{}}", 0, 0, "invalid escape '\\x'", true },
    { "bad \\u escape", "{\"a\\u12G4\":{}}", 0, 0, "invalid \\u escape", true },
    { "lone high surrogate", "{\"a\\ud83d\":{}}", 0, 0, "high surrogate \\ud83d not followed by a low surrogate",
      true },
    { "high surrogate + non-surrogate", "{\"a\\ud83d\\u0041\":{}}", 0, 0, "not a low surrogate", true },
    { "lone low surrogate", "{\"a\\ude00\":{}}", 0, 0, "lone low surrogate", true },
    { "\\u0000 in a name", "{\"a\\u0000b\":{}}", 0, 0, "\\u0000", true },
    { "control character in string", "{\"a\tb\":{}}", 0, 0, "unescaped control character 0x09", true },
    { "invalid UTF-8 byte", "{\"a\xff\":{}}", 0, 0, "invalid UTF-8 (byte 0xff)", true },
    { "overlong UTF-8", "{\"a\xc0\xaf\":{}}", 0, 0, "invalid UTF-8 (byte 0xc0)", true },
    { "UTF-8 encoded surrogate", "{\"a\xed\xa0\x80\":{}}", 0, 0, "invalid UTF-8 (byte 0xed)", true },
    { "UTF-8 sequence cut short", "{\"a\xe2\x82\":{}}", 0, 0, "invalid UTF-8 (byte 0xe2)", true },
    { "leading zero", "{" T("a", "F32", "[01]", "[0,4]") "}", 0, 4, "leading zero", true },
    { "plus sign", "{" T("a", "F32", "[+1]", "[0,4]") "}", 0, 4, "unexpected character '+'", true },
    { "NaN", "{" T("a", "F32", "[NaN]", "[0,4]") "}", 0, 4, "unexpected character 'N'", true },
    { "bare minus", "{" T("a", "F32", "[-]", "[0,4]") "}", 0, 4, "expected a digit", true },
    { "fraction without digits", "{" T("a", "F32", "[1.]", "[0,4]") "}", 0, 4, "expected a digit after '.'", true },
    { "exponent without digits", "{" T("a", "F32", "[1e]", "[0,4]") "}", 0, 4, "expected a digit in the exponent",
      true },
    { "trailing garbage", "{} x", 0, 0, "trailing character 'x' after the header object", true },
    { "second object", "{}{}", 0, 0, "trailing character '{' after the header object", true },
    { "NUL padding", "{}\0\0", 4, 0, "trailing byte 0x00 after the header object", true },
    { "unterminated object", "{\"a\":{\"dtype\":\"F32\"", 0, 0, "unexpected end of header", true },
    { "missing colon", "{\"a\" {}}", 0, 0, "expected ':' after an object key", true },
    { "missing comma", "{\"a\":{} \"b\":{}}", 0, 0, "expected ',' or '}' in object", true },
    { "bad literal", "{\"__metadata__\":{\"k\":tru}}", 0, 0, "expected a JSON value", true },
    { "unquoted key", "{a:1}", 0, 0, "expected a string", true },
    { "single quotes", "{'a':1}", 0, 0, "unexpected character '''", true },

    // schema
    { "entry not an object", "{\"a\":5}", 0, 0, "tensor 'a': entry is a number, not an object", true },
    { "duplicate name", "{" T("a", "F32", "[1]", "[0,4]") "," T("a", "F32", "[1]", "[4,8]") "}", 0, 8,
      "duplicate tensor name 'a'", true },
    { "duplicate __metadata__", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, 0,
      "duplicate tensor name '__metadata__'", true },
    { "unknown dtype", "{" T("x", "F17", "[1]", "[0,4]") "}", 0, 4, "unknown dtype 'F17' for tensor 'x'", true },
    { "lower-case dtype", "{" T("x", "f32", "[1]", "[0,4]") "}", 0, 4, "unknown dtype 'f32' for tensor 'x'", true },
    { "dtype not a string", "{\"x\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 0, 4,
      "tensor 'x': dtype is a number, not a string", true },
    { "missing key", "{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 0, 4, "tensor 'x': missing key 'shape'",
      true },
    { "extra key", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"strides\":[1]}}", 0, 4,
      "tensor 'x': unexpected key 'strides'", true },
    { "repeated key", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 0, 4,
      "tensor 'x': duplicate key 'dtype'", true },
    { "shape not an array", "{" T("x", "F32", "\"1\"", "[0,4]") "}", 0, 4, "tensor 'x': shape is a string, not an array",
      true },
    { "negative shape", "{" T("x", "F32", "[2,-1]", "[0,4]") "}", 0, 4, "tensor 'x': shape entry 1 (-1) is negative",
      true },
    { "fractional shape", "{" T("x", "F32", "[1.5]", "[0,4]") "}", 0, 4,
      "tensor 'x': shape entry 0 (1.5) is not an integer", true },
    { "exponent shape", "{" T("x", "F32", "[1e0]", "[0,4]") "}", 0, 4, "shape entry 0 (1e0) is not an integer", true },
    { "string in shape", "{" T("x", "F32", "[\"1\"]", "[0,4]") "}", 0, 4,
      "tensor 'x': shape entry 0 is a string, not an integer", true },
    { "too many dims", "{" T("x", "F32", "[1,1,1,1,1,1,1,1,1]", "[0,4]") "}", 0, 4,
      "tensor 'x': shape has more than 8 dims", true },
    { "dim above INT64_MAX", "{" T("x", "U8", "[9223372036854775808]", "[0,4]") "}", 0, 4,
      "shape entry 0 (9223372036854775808) does not fit in a signed 64-bit integer", true },
    { "shape product overflowing 64 bits", "{" T("x", "U8", "[4294967296,4294967296]", "[0,4]") "}", 0, 4,
      "tensor 'x': element count of shape [4294967296, 4294967296] overflows 64 bits", true },
    { "byte size overflowing 64 bits", "{" T("x", "F32", "[4611686018427387904]", "[0,4]") "}", 0, 4,
      "tensor 'x': byte size of shape [4611686018427387904] of F32 overflows 64 bits", true },
    { "sub-byte size not on a byte boundary", "{" T("x", "F4", "[3]", "[0,2]") "}", 0, 2,
      "tensor 'x': shape [3] of F4 is not a whole number of bytes", true },
    { "data_offsets with 1 entry", "{" T("x", "F32", "[1]", "[4]") "}", 0, 4,
      "tensor 'x': data_offsets must have exactly 2 entries, not 1", true },
    { "data_offsets with 3 entries", "{" T("x", "F32", "[1]", "[0,4,8]") "}", 0, 4,
      "tensor 'x': data_offsets must have exactly 2 entries, not 3", true },
    { "data_offsets begin > end", "{" T("x", "U8", "[0]", "[8,4]") "}", 0, 8,
      "tensor 'x': data_offsets [8, 4] begin is after end", true },
    { "negative offset", "{" T("x", "U8", "[4]", "[-4,0]") "}", 0, 4, "data_offsets entry 0 (-4) is negative", true },
    { "offset of 2^64", "{" T("x", "U8", "[1]", "[18446744073709551615,18446744073709551616]") "}", 0, 1,
      "data_offsets entry 1 (18446744073709551616) does not fit in 64 bits", true },
    { "byte-size mismatch", "{" T("decoder.conv_in.weight", "F32", "[2,3]", "[0,10]") "}", 0, 10,
      "tensor 'decoder.conv_in.weight': data_offsets [0, 10] hold 10 bytes but shape [2, 3] of F32 needs 24", true },
    { "gap", "{" T("a", "F32", "[1]", "[0,4]") "," T("b", "F32", "[1]", "[8,12]") "}", 0, 12,
      "gap of 4 bytes in the byte buffer between tensor 'a' (ends at 4) and tensor 'b' (begins at 8)", true },
    { "overlap", "{" T("a", "F32", "[2]", "[0,8]") "," T("b", "F32", "[1]", "[4,8]") "}", 0, 8,
      "tensor 'b' (data_offsets [4, 8]) overlaps tensor 'a' (ends at 8)", true },
    { "zero-size tensor inside another", "{" T("a", "F32", "[2]", "[0,8]") "," T("z", "F32", "[0]", "[4,4]") "}", 0,
      8, "tensor 'z' (data_offsets [4, 4]) overlaps tensor 'a'", true },
    { "buffer not starting at 0", "{" T("a", "F32", "[1]", "[4,8]") "}", 0, 8,
      "the byte buffer must start at offset 0, but the first tensor 'a' begins at 4", true },
    { "zero-size tensor at UINT64_MAX",
      "{" T("a", "U8", "[0]", "[18446744073709551615,18446744073709551615]") "}", 0, 0,
      "first tensor 'a' begins at 18446744073709551615", true },
    { "metadata not an object", "{\"__metadata__\":[\"a\"]}", 0, 0, "__metadata__ is an array, not an object", true },
    { "metadata with a number", "{\"__metadata__\":{\"a\":\"x\",\"n\":1}}", 0, 0,
      "__metadata__: value of key 'n' is a number, not a string", true },
    { "metadata with an object", "{\"__metadata__\":{\"o\":{}}}", 0, 0,
      "__metadata__: value of key 'o' is an object, not a string", true },
    { "metadata with null", "{\"__metadata__\":{\"z\":null}}", 0, 0,
      "__metadata__: value of key 'z' is null, not a string", true },
    { "duplicate metadata key", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, 0,
      "__metadata__: duplicate key 'k'", true },

    // the header is fine, the file around it is not
    { "truncated data", "{" T("a", "F32", "[2]", "[0,8]") "}", 0, 4,
      "truncated: the tensors need 8 bytes of data after the header but the file has only 4", false },
    { "trailing bytes", "{" T("a", "F32", "[2]", "[0,8]") "}", 0, 12,
      "trailing bytes: the file has 12 bytes of data after the header but the tensors cover only 8", false },
    { "tensorless header with data", "{}", 0, 1, "trailing bytes", false },
    { "offsets near UINT64_MAX", "{" T("a", "U8", "[3,6148914691236517205]", "[0,18446744073709551615]") "}", 0, 16,
      "truncated: the tensors need 18446744073709551615 bytes", false },
};

static void test_bad_files(void) {
    char path[1200];
    char err[1024];

    for (size_t i = 0; i < sizeof(k_bad) / sizeof(k_bad[0]); i++) {
        const struct bad_case * c   = &k_bad[i];
        const size_t            len = c->json_len ? c->json_len : strlen(c->json);
        tmp_path(path, sizeof(path));
        write_st(path, c->json, len, 0, NULL, c->data_len);
        strcpy(err, "");
        struct vae_st_file * f = vae_st_file_open(path, err, sizeof(err));
        CHECK(f == NULL, "%s: accepted", c->what);
        vae_st_file_close(f);
        CHECK_ERR_HAS(err, c->needle);
        CHECK_ERR_HAS(err, path);
        if (getenv("VAE_TEST_VERBOSE") != NULL) {
            printf("%-40s %s\n", c->what, err);
        }

        strcpy(err, "");
        struct vae_st_header * hdr = vae_st_header_parse((const uint8_t *) c->json, len, err, sizeof(err));
        if (c->header) {
            CHECK(hdr == NULL, "%s: vae_st_header_parse accepted it", c->what);
            CHECK_ERR_HAS(err, c->needle);
        } else {
            CHECK(hdr != NULL, "%s: vae_st_header_parse refused the header: %s", c->what, err);
        }
        vae_st_header_free(hdr);

        // a NULL error buffer must be fine too
        CHECK(vae_st_file_open(path, NULL, 0) == NULL, "%s: accepted without err", c->what);
        unlink(path);
    }

    // nesting: 64 levels are syntax (then fail the schema), 65 are refused as such
    for (int depth = 64; depth <= 65; depth++) {
        char json[512];
        size_t o = (size_t) snprintf(json, sizeof(json), "{\"__metadata__\":{\"k\":");
        for (int d = 2; d < depth; d++) {
            json[o++] = '[';
        }
        for (int d = 2; d < depth; d++) {
            json[o++] = ']';
        }
        o += (size_t) snprintf(json + o, sizeof(json) - o, "}}");
        struct vae_st_header * hdr = vae_st_header_parse((const uint8_t *) json, o, err, sizeof(err));
        CHECK(hdr == NULL, "nesting %d accepted", depth);
        CHECK_ERR_HAS(err, depth == 64 ? "value of key 'k' is an array, not a string" : "nesting deeper than 64 levels");
        vae_st_header_free(hdr);
    }

    // the file-level failures that have no header to speak of
    snprintf(path, sizeof(path), "%s/does-not-exist.safetensors", g_dir);
    CHECK(vae_st_file_open(path, err, sizeof(err)) == NULL, "missing file accepted");
    CHECK_ERR_HAS(err, strerror(ENOENT));
    CHECK_ERR_HAS(err, path);

    CHECK(vae_st_file_open(g_dir, err, sizeof(err)) == NULL, "directory accepted");
    CHECK_ERR_HAS(err, "not a regular file");

    tmp_path(path, sizeof(path));
    write_bytes(path, "", 0);
    CHECK(vae_st_file_open(path, err, sizeof(err)) == NULL, "empty file accepted");
    CHECK_ERR_HAS(err, "file is empty");
    CHECK_ERR_HAS(err, path);
    unlink(path);

    tmp_path(path, sizeof(path));
    write_bytes(path, "\x02\0\0\0\0", 5);
    CHECK(vae_st_file_open(path, err, sizeof(err)) == NULL, "5-byte file accepted");
    CHECK_ERR_HAS(err, "file is too short (5 bytes) for the 8-byte header length prefix");
    unlink(path);

    uint8_t raw[32];
    memset(raw, ' ', sizeof(raw));
    put_u64le(raw, 0);
    tmp_path(path, sizeof(path));
    write_bytes(path, raw, sizeof(raw));
    CHECK(vae_st_file_open(path, err, sizeof(err)) == NULL, "header length 0 accepted");
    CHECK_ERR_HAS(err, "header length is 0");
    unlink(path);

    put_u64le(raw, 123456789012ull);
    tmp_path(path, sizeof(path));
    write_bytes(path, raw, sizeof(raw));
    CHECK(vae_st_file_open(path, err, sizeof(err)) == NULL, "huge header length accepted");
    CHECK_ERR_HAS(err, "header length 123456789012 exceeds the 100000000-byte limit");
    unlink(path);

    put_u64le(raw, 500);
    raw[8] = '{';
    raw[9] = '}';
    tmp_path(path, sizeof(path));
    write_bytes(path, raw, sizeof(raw));
    CHECK(vae_st_file_open(path, err, sizeof(err)) == NULL, "header past EOF accepted");
    CHECK_ERR_HAS(err, "truncated: header length 500 exceeds the 24 bytes after the length prefix");
    unlink(path);

    // vae_st_prefix_parse on its own
    uint64_t n = 0;
    put_u64le(raw, 0x0102030405060708ull >> 40);
    CHECK(vae_st_prefix_parse(raw, &n, err, sizeof(err)) && n == 0x010203, "prefix 0x010203 -> %" PRIu64, n);
    put_u64le(raw, VAE_ST_MAX_HEADER_LEN);
    CHECK(vae_st_prefix_parse(raw, &n, err, sizeof(err)) && n == VAE_ST_MAX_HEADER_LEN, "prefix at the limit");
    put_u64le(raw, VAE_ST_MAX_HEADER_LEN + 1);
    CHECK(!vae_st_prefix_parse(raw, &n, err, sizeof(err)), "prefix above the limit");
    CHECK_ERR_HAS(err, "header length 100000001 exceeds the 100000000-byte limit");
    put_u64le(raw, UINT64_MAX);
    CHECK(!vae_st_prefix_parse(raw, &n, NULL, 0), "prefix UINT64_MAX");
    put_u64le(raw, 0);
    CHECK(!vae_st_prefix_parse(raw, &n, err, sizeof(err)), "prefix 0");
    CHECK_ERR_HAS(err, "header length is 0");
    // the first 8 bytes of files often given by mistake (as real files begin: a 16-byte WAV fmt
    // chunk's RIFF size, an mp4's 32-byte ftyp box, a JFIF JPEG, a torch.save zip) are named
    static const struct {
        const char * bytes, *kind;
    } foreign[] = {
        { "\x89PNG\r\n\x1a\n", "this is a PNG image, not a safetensors file" },
        { "\xff\xd8\xff\xe0\x00\x10JF", "this is a JPEG image, not a safetensors file" },
        { "\x00\x00\x00\x20" "ftyp", "this is an MP4 or QuickTime file (ISO base media), not a safetensors file" },
        { "RIFF\x24\x08\x00\x00", "this is a RIFF file (WAV sound, AVI video or WebP image), not a safetensors" },
        { "\x1a\x45\xdf\xa3\x9f\x42\x86\x81", "this is a Matroska or WebM file" },
        { "GIF89a\x01\x00", "this is a GIF image" },
        { "OggS\x00\x02\x00\x00", "this is an Ogg file" },
        { "PK\x03\x04\x14\x00\x00\x00", "this is a zip archive, as PyTorch's torch.save writes .pth" },
        { "GGUF\x03\x00\x00\x00", "this is a GGUF file, not safetensors, the only format read here: convert it" },
    };
    for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
        CHECK(!vae_st_prefix_parse((const uint8_t *) foreign[i].bytes, &n, err, sizeof(err)), "%s accepted",
              foreign[i].kind);
        CHECK_ERR_HAS(err, foreign[i].kind);
    }

    // vae_st_header_parse bounds and the UINT64_MAX tensor it does accept
    CHECK(vae_st_header_parse((const uint8_t *) "{}", 0, err, sizeof(err)) == NULL, "empty header buffer");
    CHECK_ERR_HAS(err, "header length is 0");
    static const char * huge = "{" T("a", "U8", "[3,6148914691236517205]", "[0,18446744073709551615]") "}";
    struct vae_st_header * hdr = vae_st_header_parse((const uint8_t *) huge, strlen(huge), err, sizeof(err));
    CHECK(hdr != NULL && hdr->data_size == UINT64_MAX && hdr->tensors[0].numel == UINT64_MAX && hdr->tensors[0].shape[1] == 6148914691236517205,
          "a UINT64_MAX-byte tensor is a valid header: %s", err);
    vae_st_header_free(hdr);

    // an error message longer than the buffer is cut, not overrun
    char small[16];
    memset(small, 'x', sizeof(small));
    hdr = vae_st_header_parse((const uint8_t *) "{\"averyveryverylongname\":5}", 27, small, 10);
    CHECK(hdr == NULL && strlen(small) == 9 && small[10] == 'x', "short error buffer");
}

//
// the real files
//

static void test_shared_files(void) {
    const char * shared = getenv("VAE_SHARED_DIR");
    if (shared == NULL || shared[0] == '\0') {
        shared = "../shared";
    }
    char path[1200];
    char err[1024];

    snprintf(path, sizeof(path), "%s/models/taef2_decoder.safetensors", shared);
    if (access(path, R_OK) != 0) {
        printf("note: %s absent, skipping the real checkpoint\n", path);
    } else {
        struct vae_st_file * f = vae_st_file_open(path, err, sizeof(err));
        CHECK(f != NULL, "taef2_decoder refused: %s", err);
        if (f != NULL) {
            CHECK(f->hdr->n_tensors == 79, "taef2_decoder has %d tensors", f->hdr->n_tensors);
            const struct vae_st_tensor * w = vae_st_header_find(f->hdr, "1.weight");
            CHECK(w != NULL && w->dtype == VAE_DTYPE_F16 && w->n_dims == 4 && w->shape[0] == 64 && w->shape[1] == 32 &&
                      w->shape[2] == 3 && w->shape[3] == 3 && w->numel == 64 * 32 * 9,
                  "1.weight wrong");
            CHECK(f->hdr->tensors[0].offset == 0 && strcmp(f->hdr->tensors[0].name, "1.bias") == 0,
                  "first tensor by offset is '%s'", f->hdr->tensors[0].name);
            bool all_f16 = true;
            for (int i = 0; i < f->hdr->n_tensors; i++) {
                all_f16 = all_f16 && f->hdr->tensors[i].dtype == VAE_DTYPE_F16;
            }
            CHECK(all_f16, "taef2_decoder is not all F16");
            if (w != NULL) {
                float * v = malloc(sizeof(float) * w->numel);
                CHECK(vae_dtype_to_f32(w->dtype, w->data, v, w->numel), "1.weight conversion");
                bool finite = true, nonzero = false;
                for (uint64_t i = 0; i < w->numel; i++) {
                    finite  = finite && isfinite(v[i]);
                    nonzero = nonzero || v[i] != 0;
                }
                CHECK(finite && nonzero, "1.weight values");
                free(v);
            }
            const char * fmt = vae_st_header_metadata(f->hdr, "format");
            CHECK(fmt != NULL && strcmp(fmt, "taesd") == 0, "taef2_decoder metadata format");
            vae_st_file_close(f);
        }
    }

    snprintf(path, sizeof(path), "%s/reference/taef2/small.latent", shared);
    if (access(path, R_OK) != 0) {
        printf("note: %s absent, skipping the real latent\n", path);
    } else {
        struct vae_st_file * f = vae_st_file_open(path, err, sizeof(err));
        CHECK(f != NULL, "small.latent refused: %s", err);
        if (f != NULL) {
            const struct vae_st_tensor * t = vae_st_header_find(f->hdr, "latent_tensor");
            CHECK(t != NULL && t->dtype == VAE_DTYPE_F32 && t->n_dims == 4 && t->shape[0] == 2 && t->shape[1] == 32 &&
                      t->shape[2] == 16 && t->shape[3] == 24 && t->nbytes == 2 * 32 * 16 * 24 * 4,
                  "latent_tensor wrong");
            if (t != NULL) {
                float * v = malloc(sizeof(float) * t->numel);
                CHECK(vae_dtype_to_f32(t->dtype, t->data, v, t->numel), "latent conversion");
                bool finite = true, nonzero = false;
                for (uint64_t i = 0; i < t->numel; i++) {
                    finite  = finite && isfinite(v[i]);
                    nonzero = nonzero || v[i] != 0;
                }
                CHECK(finite && nonzero, "latent values");
                free(v);
            }
            vae_st_file_close(f);
        }
    }
}

//
// the model loader on hostile files
//

// vae_model_load(path) in a child process given `seconds`: 1 loaded, 0 refused (the message in
// err), -1 hung or crashed (said in err). A loader that hangs fails the test instead of hanging it.
static int load_in_child(const char * path, int seconds, char * err, size_t err_size) {
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(err, err_size, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm((unsigned) seconds);
        char               msg[1024] = "";
        struct vae_model * m         = vae_model_load(path, VAE_FAMILY_AUTO, msg, sizeof(msg));
        const char         r         = m ? '1' : '0';
        vae_model_free(m);
        if (write(fds[1], &r, 1) != 1 || write(fds[1], msg, strlen(msg)) < 0) {
            _exit(3);
        }
        _exit(0);
    }
    close(fds[1]);
    char   buf[1025];
    size_t len = 0;
    for (ssize_t got; pid > 0 && len < sizeof(buf) - 1 && (got = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0;) {
        len += (size_t) got;
    }
    close(fds[0]);
    buf[len]   = '\0';
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        snprintf(err, err_size, "fork or wait failed: %s", strerror(errno));
        return -1;
    }
    if (WIFSIGNALED(status)) {
        snprintf(err, err_size, "killed by signal %d%s", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? " (still loading after the deadline: it hangs)" : "");
        return -1;
    }
    if (len == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, err_size, "the child exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    snprintf(err, err_size, "%s", buf + 1);
    return buf[0] == '1';
}

// crafted headers (zero bytes of data: each tensor is empty or refused before its data is read)
// besides those of the fuzz corpus (test_model_corpus): the zero dimension and the block numbers
// past LONG_MAX must be refused naming the tensor, in time
static void test_model_crafted(void) {
    static const struct {
        const char * what, * json, * needle;
    } cases[] = {
        { "TAESD bias [0]",
          "{" T("1.weight", "F16", "[1,4,1,1]", "[0,8]") "," T("3.conv.0.weight", "F16", "[1,1,1,1]", "[8,10]") "," T(
              "1.bias", "F16", "[0]", "[10,10]") "}",
          "tensor '1.bias' has shape [0]: dimension 0 is 0 (a decoder weight is never empty)" },
        { "KL up_blocks.99999999999999999999, prefixed",
          "{" T("vae.decoder.up_blocks.0.resnets.0.norm1.weight", "F16", "[1]", "[0,2]") "," T(
              "vae.decoder.up_blocks.99999999999999999999.b", "F16", "[1]", "[2,4]") "}",
          "tensor 'vae.decoder.up_blocks.99999999999999999999.b': block number out of range (at most 1000)" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[1200], err[1024];
        tmp_path(path, sizeof(path));
        write_st(path, cases[i].json, strlen(cases[i].json), 8, NULL, i == 0 ? 10 : 4);
        const int r = load_in_child(path, 10, err, sizeof(err));
        CHECK(r == 0, "%s: %s (%s)", cases[i].what, r > 0 ? "loaded" : "did not finish", err);
        CHECK_ERR_HAS(err, cases[i].needle);
        unlink(path);
    }
}

// a big dimension with real data behind it: a sparse file of 4 GiB
static void test_model_huge_dim(void) {
    char         path[1200], err[1024];
    const char * json = "{" T("1.weight", "F16", "[1,4,1,1]", "[0,8]") "," T("3.conv.0.weight", "F16", "[2147483648]",
                                                                               "[8,4294967304]") "}";
    tmp_path(path, sizeof(path));
    write_st(path, json, strlen(json), 8, NULL, 0);
    struct stat st;
    if (stat(path, &st) != 0 || truncate(path, st.st_size + 4294967304ll) != 0) {
        printf("note: no sparse 4 GiB file in %s (%s), skipping the huge dimension\n", g_dir, strerror(errno));
        unlink(path);
        return;
    }
    const int r = load_in_child(path, 10, err, sizeof(err));
    CHECK(r == 0, "a 2^31 dimension: %s (%s)", r > 0 ? "loaded" : "did not finish", err);
    CHECK_ERR_HAS(err, "tensor '3.conv.0.weight' has shape [2147483648]: dimension 0 is above 2147483647");
    unlink(path);
}

static void test_model_fifo(void) {
    char path[1200], err[1024];
    snprintf(path, sizeof(path), "%s/model.fifo", g_dir);
    if (mkfifo(path, 0600) != 0) {
        CHECK(0, "mkfifo %s: %s", path, strerror(errno));
        return;
    }
    // open() of a FIFO waits for a writer that never comes
    const int r = load_in_child(path, 5, err, sizeof(err));
    CHECK(r == 0, "a FIFO as the model file: %s (%s)", r > 0 ? "loaded" : "did not finish", err);
    CHECK_ERR_HAS(err, "is not a regular file");
    CHECK_ERR_HAS(err, path);
    unlink(path);
}

// a fixture of VAE_TEST_DATA rewritten: element 0 of tensor `poke` set to `value` (NULL: none),
// extra_count more F16 tensors of extra_numel zeros each at the end, named by the format `extra`
// from their index (NULL: none), the byte buffer
// starting `shift` bytes past a multiple of 8
struct model_edit {
    const char * poke;
    float        value;
    const char * extra;
    uint64_t     extra_numel;
    int          extra_count;
    size_t       shift;
};

static void put_value(enum vae_dtype dtype, float v, uint8_t * p) {
    const uint32_t u = f32_bits(v);
    if (dtype == VAE_DTYPE_F32) {
        put_f32(p, v);
    } else if (dtype == VAE_DTYPE_BF16) {
        put_u16(p, (uint16_t) (u >> 16));
    } else { // F16: the tests poke only NaN and infinity
        put_u16(p, (uint16_t) (((u >> 16) & 0x8000u) | (isnan(v) ? 0x7e00u : 0x7c00u)));
    }
}

static bool write_edited(const char * path, const char * fixture, const struct model_edit * e) {
    char         src[1200], err[1024];
    const char * dir = getenv("VAE_TEST_DATA");
    snprintf(src, sizeof(src), "%s/%s", dir != NULL ? dir : "tests/data", fixture);
    struct vae_st_file * f = vae_st_file_open(src, err, sizeof(err));
    CHECK(f != NULL, "%s", err);
    if (f == NULL) {
        return false;
    }
    const struct vae_st_header * hdr   = f->hdr;
    const uint64_t               extra = e->extra ? 2 * e->extra_numel * (uint64_t) e->extra_count : 0;
    size_t cap = 256 * (size_t) hdr->n_tensors + 128 * (e->extra ? (size_t) e->extra_count : 0) + 1024, len = 0;
    char *                       json  = malloc(cap);
    uint8_t *                    data  = malloc(hdr->data_size + extra + 1);
    len += (size_t) snprintf(json + len, cap - len, "{");
    for (int i = 0; i < hdr->n_tensors; i++) { // (sorted by offset: the data keeps its layout)
        const struct vae_st_tensor * t = &hdr->tensors[i];
        len += (size_t) snprintf(json + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", t->name,
                                 vae_dtype_name(t->dtype));
        for (int d = 0; d < t->n_dims; d++) {
            len += (size_t) snprintf(json + len, cap - len, "%s%" PRId64, d ? "," : "", t->shape[d]);
        }
        len += (size_t) snprintf(json + len, cap - len, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", t->offset,
                                 t->offset + t->nbytes);
        memcpy(data + t->offset, t->data, t->nbytes);
        if (e->poke && strcmp(t->name, e->poke) == 0) {
            put_value(t->dtype, e->value, data + t->offset);
        }
    }
    for (int i = 0; e->extra && i < e->extra_count; i++) {
        const uint64_t at = hdr->data_size + 2 * e->extra_numel * (uint64_t) i;
        len += (size_t) snprintf(json + len, cap - len, ",\"");
        len += (size_t) snprintf(json + len, cap - len, e->extra, i);
        len += (size_t) snprintf(json + len, cap - len, "\":{\"dtype\":\"F16\",\"shape\":[%" PRIu64
                                 "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", e->extra_numel, at,
                                 at + 2 * e->extra_numel);
    }
    memset(data + hdr->data_size, 0, extra);
    len += (size_t) snprintf(json + len, cap - len, "}");
    while ((8 + len) % 8 != e->shift) {
        json[len++] = ' ';
    }
    write_st(path, json, len, 0, data, hdr->data_size + extra);
    free(json);
    free(data);
    vae_st_file_close(f);
    return true;
}

// a model file that loads or is refused (one load, no deadline: these files are ordinary)
static struct vae_model * load_edited(const char * fixture, const struct model_edit * e, char * err, size_t err_size) {
    char path[1200];
    tmp_path(path, sizeof(path));
    struct vae_model * m = write_edited(path, fixture, e) ? vae_model_load(path, VAE_FAMILY_AUTO, err, err_size) : NULL;
    unlink(path);
    return m;
}

static void test_model_nonfinite(void) {
    static const struct {
        const char * fixture, * poke;
        float        value;
        const char * needle;
    } cases[] = {
        // F32 used in place from the mapping
        { "taesd_z4_w16.orig.safetensors", "3.conv.2.weight", NAN,
          "tensor '3.conv.2.weight' holds 1 NaN and 0 infinite values (of 2304): decoder weights must be finite" },
        { "taesd_z4_w16.orig.safetensors", "19.bias", -INFINITY, "tensor '19.bias' holds 0 NaN and 1 infinite values (of 3)" },
        // F16 converted, the TAEHV MemBlock taps rearranged
        { "taew21_nf32.safetensors", "decoder.4.conv.0.weight", INFINITY,
          "tensor 'decoder.4.conv.0.weight' holds 0 NaN and 1 infinite values" },
        // BF16, joined into the attention's qkv
        { "kl_sd.safetensors", "decoder.mid.attn_1.k.weight", NAN, "tensor 'decoder.mid.attn_1.k.weight' holds 1 NaN" },
        // diffusers naming: the file's name is the one reported
        { "taesd_z4_w16.diffusers.safetensors", "decoder.layers.17.conv.4.bias", NAN,
          "tensor 'decoder.layers.17.conv.4.bias' holds 1 NaN" },
    };
    char err[1024];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct model_edit e = { .poke = cases[i].poke, .value = cases[i].value };
        strcpy(err, "");
        struct vae_model * m = load_edited(cases[i].fixture, &e, err, sizeof(err));
        CHECK(m == NULL, "%s with a non-finite '%s' loaded", cases[i].fixture, cases[i].poke);
        CHECK_ERR_HAS(err, cases[i].needle);
        vae_model_free(m);
    }
    // the same files as they are load (the edit itself breaks nothing)
    const struct model_edit none = { 0 };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vae_model * m = load_edited(cases[i].fixture, &none, err, sizeof(err));
        CHECK(m != NULL, "%s rewritten: %s", cases[i].fixture, err);
        vae_model_free(m);
    }
}

static double statm_resident_mib(void) {
    FILE * f     = fopen("/proc/self/statm", "r");
    long   pages = -1, res = -1;
    if (f == NULL || fscanf(f, "%ld %ld", &pages, &res) != 2) {
        res = -1;
    }
    if (f != NULL) {
        fclose(f);
    }
    return (double) res * (double) sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

// KiB of the mapping that holds p resident in this process (smaps), -1 if not found
static long mapping_rss_kib(const void * p) {
    FILE * f = fopen("/proc/self/smaps", "r");
    char   line[512];
    bool   in = false;
    long   kib = -1;
    while (f != NULL && kib < 0 && fgets(line, sizeof(line), f) != NULL) {
        uintptr_t begin, end;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &begin, &end) == 2) { // a mapping, then its fields
            in = (uintptr_t) p >= begin && (uintptr_t) p < end;
        } else if (in && strncmp(line, "Rss:", 4) == 0) {
            kib = strtol(line + 4, NULL, 10);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kib;
}

static void test_model_lazy(void) {
    char path[1200], err[1024];
    // 2^24 F16 zeros (32 MiB in the file, 64 MiB as f32) outside the decoder: an encoder tensor
    // the loader skips without reading it
    const struct model_edit e = { .extra = "encoder.99.weight", .extra_numel = 1u << 24, .extra_count = 1 };
    tmp_path(path, sizeof(path));
    CHECK(write_edited(path, "taesd_z4_w16.orig.safetensors", &e), "writing %s", path);
    const double       before = statm_resident_mib();
    struct vae_model * m      = vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err));
    const double       after  = statm_resident_mib();
    CHECK(m != NULL, "a TAESD with a big encoder tensor: %s", err);
    printf("load with a 32 MiB F16 encoder tensor: resident %.1f -> %.1f MiB\n", before, after);
    CHECK(after - before < 16.0, "loading grew the resident memory by %.1f MiB (the encoder tensor was read)",
          after - before);
    if (m != NULL) {
        const struct vae_weight * w = vae_model_weight(m, "1.weight");
        CHECK(vae_model_weight(m, "encoder.99.weight") == NULL, "the encoder tensor was kept as a decoder weight");
        // aligned little-endian F32 is used in place, no copy
        CHECK(w != NULL && w->copy == NULL && w->data == (const float *) (const void *) w->src[0]->data,
              "aligned F32 '1.weight' is not used from the mapping");
    }

    // unaligned F32 is copied, to the same values
    const struct model_edit shifted = { .shift = 2 };
    struct vae_model *      m2      = load_edited("taesd_z4_w16.orig.safetensors", &shifted, err, sizeof(err));
    CHECK(m2 != NULL, "unaligned F32: %s", err);
    if (m && m2) {
        const struct vae_weight * a = vae_model_weight(m, "3.conv.0.weight");
        const struct vae_weight * b = vae_model_weight(m2, "3.conv.0.weight");
        CHECK((uintptr_t) b->src[0]->data % 4 != 0 && b->copy != NULL && b->data == b->copy, "unaligned F32 not copied");
        CHECK(a->data && b->data && memcmp(a->data, b->data, 16 * 16 * 9 * sizeof(float)) == 0,
              "unaligned F32 values differ");
    }
    vae_model_free(m2);
    vae_model_free(m);
    unlink(path);

    // converted F16: the file's pages it came from leave the resident memory (beyond the header,
    // which was parsed from the mapping, about 150 KiB of data would stay)
    char         src[1200];
    const char * dir = getenv("VAE_TEST_DATA");
    snprintf(src, sizeof(src), "%s/taesd_z4_w16.diffusers.safetensors", dir != NULL ? dir : "tests/data");
    m = vae_model_load(src, VAE_FAMILY_AUTO, err, sizeof(err));
    CHECK(m != NULL, "%s", err);
    if (m != NULL) {
        const struct vae_weight * w      = vae_model_weight(m, "1.weight");
        const long                header = (long) (w->src[0]->data - m->file->map) / 1024 + 1;
        const long                rss    = mapping_rss_kib(m->file->map);
        printf("F16 model of %zu KiB, header %ld KiB: %ld KiB of its mapping resident after the load\n",
               m->file->map_size / 1024, header, rss);
        CHECK(w->copy != NULL && rss >= 0 && rss <= header + 8, "%ld KiB of the F16 file stay resident", rss);
        vae_model_free(m);
    }
}

// a decoder tensor that the family's builder does not use is refused by name, never ignored (an
// SVD decoder once loaded as SD's VAE, its temporal blocks dropped), in every naming and family
static void test_model_unused(void) {
    static const struct {
        const char * fixture, * extra, * family;
    } cases[] = {
        { "taesd_z4_w16.orig.safetensors", "99.weight", "taesd" },
        { "taesd_z4_w16.diffusers.safetensors", "decoder.layers.40.weight", "taesd" },
        { "kl_sd.safetensors", "decoder.up.0.block.0.time_stack.in_layers.0.weight", "sd1" },
        { "kl_f2.safetensors", "decoder.up_blocks.0.resnets.0.extra.weight", "flux2" },
        { "taehv_nf16.safetensors", "decoder.23.weight", "taew2_1" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char                    err[1024] = "", want[256];
        const struct model_edit e         = { .extra = cases[i].extra, .extra_numel = 4, .extra_count = 1 };
        struct vae_model *      m         = load_edited(cases[i].fixture, &e, err, sizeof(err));
        snprintf(want, sizeof(want), "tensor '%s' is not part of the %s decoder", cases[i].extra, cases[i].family);
        CHECK(m == NULL && strstr(err, want), "%s with '%s' added: %s", cases[i].fixture, cases[i].extra,
              m ? "loaded" : err);
        vae_model_free(m);
    }
}

// many tensors (a header may hold millions): the loader once compared every name with every
// other, 11 s for 100,000; now they take about 0.1 s, and get 3
static void test_model_many(void) {
    char                    path[1200], err[1024];
    const struct model_edit e = { .extra = "encoder.%d.weight", .extra_numel = 1, .extra_count = 100000 };
    tmp_path(path, sizeof(path));
    CHECK(write_edited(path, "taesd_z4_w16.orig.safetensors", &e), "writing %s", path);
    const int r = load_in_child(path, 3, err, sizeof(err));
    CHECK(r == 1, "a TAESD with 100,000 more tensors: %s", r < 1 ? err : "");
    unlink(path);
}

// every file of the fuzz corpus loads or is refused with a message, in time; the crafted ones
// are refused for what they are
static void test_model_corpus(void) {
    static const struct {
        const char * file, * needle;
    } expect[] = {
        { "taehv-zero-dim.safetensors", "tensor 'decoder.3.conv.0.weight' has shape [1099511627776, 1048576, 0, 3]: dimension 2 is 0" },
        { "taehv-zero-dim-overflow.safetensors", "tensor 'decoder.3.conv.0.weight' has shape [4294967296, 2147483648, 0, 3]: dimension 2 is 0" },
        { "kl-up-blocks-long-max.safetensors", "tensor 'decoder.up_blocks.9223372036854775807.a': block number out of range" },
        { "wan-resnets-long-max.safetensors", "block number out of range" },
        { "taesd-nan.safetensors", "tensor '3.conv.2.weight' holds 1 NaN" },
        { "taesd-w1.safetensors", NULL },
        { "taef2-w1.safetensors", NULL },
        { "taehv-w1.safetensors", NULL },
        { "ltx23-w2.safetensors", NULL },
        { "minimax-d64.safetensors", "minimax-h3: 'decoder.proj_out.weight' or its bias is missing or not of 3072 rows" },
    };
    const char * dir = getenv("VAE_FUZZ_CORPUS") != NULL ? getenv("VAE_FUZZ_CORPUS") : "tests/fuzz/corpus-model";
    DIR *        d   = opendir(dir);
    CHECK(d != NULL, "no fuzz corpus in %s: %s", dir, strerror(errno));
    if (d == NULL) {
        return;
    }
    int            n = 0, seen = 0;
    struct dirent * de;
    while ((de = readdir(d)) != NULL) {
        char path[1200], err[1024] = "";
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct stat st;
        if (de->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }
        n++;
        const int r = load_in_child(path, 10, err, sizeof(err));
        CHECK(r >= 0, "corpus %s: %s", de->d_name, err);
        CHECK(r != 0 || strlen(err) > 10, "corpus %s refused without a message: '%s'", de->d_name, err);
        for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
            if (strcmp(de->d_name, expect[i].file) == 0) {
                seen++;
                CHECK(r == (expect[i].needle == NULL), "corpus %s: %s (%s)", de->d_name, r ? "loaded" : "refused", err);
                if (expect[i].needle != NULL) {
                    CHECK_ERR_HAS(err, expect[i].needle);
                }
            }
        }
        if (getenv("VAE_TEST_VERBOSE") != NULL) {
            printf("corpus %-40s %s %s\n", de->d_name, r > 0 ? "loads" : r == 0 ? "refused:" : "FAILED:", r > 0 ? "" : err);
        }
    }
    closedir(d);
    CHECK(seen == (int) (sizeof(expect) / sizeof(expect[0])), "%d of the corpus files with expectations found", seen);
    printf("fuzz corpus: %d files\n", n);
}

int main(void) {
    const char * tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof(g_dir), "%s/test-safetensors-XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(g_dir) == NULL) {
        fprintf(stderr, "mkdtemp %s: %s\n", g_dir, strerror(errno));
        return 2;
    }

    test_dtypes();
    test_valid_files();
    test_bad_files();
    test_shared_files();
    test_model_crafted();
    test_model_huge_dim();
    test_model_fifo();
    test_model_nonfinite();
    test_model_lazy();
    test_model_unused();
    test_model_many();
    test_model_corpus();

    rmdir(g_dir);
    return vae_test_summary();
}
