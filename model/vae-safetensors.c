// safetensors reader (see vae-safetensors.h and MODELS.md section E).
//
// Every checkpoint and every latent we take arrives as safetensors, often from a place we do not
// control, so the header is treated as hostile input: it is parsed by a small strict JSON reader
// of our own (RFC 8259; no GLib, no third-party JSON library) and validated as strictly as the
// reference implementation does before a single tensor byte is touched. Parsing is two passes
// over the header bytes: the first checks JSON syntax only (with a nesting bound), so that a
// syntax error is always reported as such; the second walks the now known-good text against the
// schema (name -> {dtype, shape, data_offsets}, plus an optional __metadata__ of strings) and
// builds the tensor table. All arithmetic on sizes and offsets is overflow-checked. Files are
// mapped read-only; tensor data is never copied and may be unaligned.

#include "vae-safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_DEPTH 64 // JSON nesting bound of the syntax pass

//
// errors
//

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void st_set_err(char * err, size_t err_size, const char * fmt, ...) {
    if (err == NULL || err_size == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
}

//
// dtypes
//

static const struct {
    const char * name;
    int          bits;
} st_dtypes[VAE_DTYPE_COUNT] = {
    [VAE_DTYPE_BOOL]        = { "BOOL",        8 },
    [VAE_DTYPE_U8]          = { "U8",          8 },
    [VAE_DTYPE_I8]          = { "I8",          8 },
    [VAE_DTYPE_F8_E5M2]     = { "F8_E5M2",     8 },
    [VAE_DTYPE_F8_E4M3]     = { "F8_E4M3",     8 },
    [VAE_DTYPE_F8_E8M0]     = { "F8_E8M0",     8 },
    [VAE_DTYPE_F8_E4M3FNUZ] = { "F8_E4M3FNUZ", 8 },
    [VAE_DTYPE_F8_E5M2FNUZ] = { "F8_E5M2FNUZ", 8 },
    [VAE_DTYPE_I16]         = { "I16",         16 },
    [VAE_DTYPE_U16]         = { "U16",         16 },
    [VAE_DTYPE_F16]         = { "F16",         16 },
    [VAE_DTYPE_BF16]        = { "BF16",        16 },
    [VAE_DTYPE_I32]         = { "I32",         32 },
    [VAE_DTYPE_U32]         = { "U32",         32 },
    [VAE_DTYPE_F32]         = { "F32",         32 },
    [VAE_DTYPE_I64]         = { "I64",         64 },
    [VAE_DTYPE_U64]         = { "U64",         64 },
    [VAE_DTYPE_F64]         = { "F64",         64 },
    [VAE_DTYPE_C64]         = { "C64",         64 },
    [VAE_DTYPE_F4]          = { "F4",          4 },
    [VAE_DTYPE_F6_E2M3]     = { "F6_E2M3",     6 },
    [VAE_DTYPE_F6_E3M2]     = { "F6_E3M2",     6 },
};

const char * vae_dtype_name(enum vae_dtype dtype) {
    if ((int) dtype < 0 || dtype >= VAE_DTYPE_COUNT) {
        return "invalid";
    }
    return st_dtypes[dtype].name;
}

int vae_dtype_bits(enum vae_dtype dtype) {
    if ((int) dtype < 0 || dtype >= VAE_DTYPE_COUNT) {
        return 0;
    }
    return st_dtypes[dtype].bits;
}

bool vae_dtype_is_float(enum vae_dtype dtype) {
    return dtype == VAE_DTYPE_F32 || dtype == VAE_DTYPE_F16 || dtype == VAE_DTYPE_BF16;
}

// IEEE binary16 -> binary32, exact for every input (subnormals, +-0, +-inf, NaN payloads).
// Selects are done with masks so that the loop below vectorizes; it never produces or consumes
// an f32 subnormal, so it is also exact under flush-to-zero / denormals-are-zero modes.
static inline float st_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
    const uint32_t em   = h & 0x7fffu;                                  // exponent and mantissa
    uint32_t       u    = (em << 13) + ((127u - 15u) << 23);            // rebias a normal number
    u += (uint32_t) (em >= 0x7c00u) * ((128u - 16u) << 23);             // inf/NaN: exponent 255
    const float sub = (float) (int32_t) em * 0x1p-24f;                  // zero or subnormal: m * 2^-24
    uint32_t    us;
    memcpy(&us, &sub, sizeof(us));
    const uint32_t is_sub = 0u - (uint32_t) (em < 0x0400u);             // all ones if zero/subnormal
    u = (us & is_sub) | (u & ~is_sub);
    u |= sign;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline float st_bf16_to_f32(uint16_t h) {
    const uint32_t u = (uint32_t) h << 16;
    float          f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

// unaligned little-endian loads
static inline uint16_t st_load_u16le(const uint8_t * p) {
    uint16_t v;
    memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = (uint16_t) ((v >> 8) | (v << 8));
#endif
    return v;
}

static inline uint32_t st_load_u32le(const uint8_t * p) {
    uint32_t v;
    memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

// the conversion loops; source bytes and destination floats never overlap, and saying so
// (restrict) spares the vectorized loops a runtime alias check
static void st_f32_rows_to_f32(const uint8_t * restrict s, float * restrict d, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = st_load_u32le(s + 4 * i);
        memcpy(&d[i], &u, sizeof(float));
    }
}

static void st_f16_rows_to_f32(const uint8_t * restrict s, float * restrict d, size_t n) {
    for (size_t i = 0; i < n; i++) {
        d[i] = st_f16_to_f32(st_load_u16le(s + 2 * i));
    }
}

static void st_bf16_rows_to_f32(const uint8_t * restrict s, float * restrict d, size_t n) {
    for (size_t i = 0; i < n; i++) {
        d[i] = st_bf16_to_f32(st_load_u16le(s + 2 * i));
    }
}

bool vae_dtype_to_f32(enum vae_dtype dtype, const void * src, float * dst, size_t n) {
    switch (dtype) {
        case VAE_DTYPE_F32:
            st_f32_rows_to_f32(src, dst, n);
            return true;
        case VAE_DTYPE_F16:
            st_f16_rows_to_f32(src, dst, n);
            return true;
        case VAE_DTYPE_BF16:
            st_bf16_rows_to_f32(src, dst, n);
            return true;
        default:
            return false;
    }
}

//
// length prefix
//

// what a file whose first 8 bytes are no header length is, when it is a format often taken for
// safetensors: PyTorch checkpoints and GGUF (with how to convert them), or a picture, video or
// sound given by mistake (magic numbers from each format's specification); NULL otherwise
struct st_foreign {
    const char * magic;
    int          at, len;  // where the magic lies in the first 8 bytes
    const char * kind;
    bool         convert;  // weights in another format: converting them makes a safetensors file
};

static const struct st_foreign * st_foreign_kind(const uint8_t prefix[8]) {
    static const struct st_foreign kinds[] = {
        { "PK\x03\x04", 0, 4, "a zip archive, as PyTorch's torch.save writes .pth, .pt and .ckpt files", true },
        { "GGUF", 0, 4, "a GGUF file", true },
        { "\x89PNG\r\n\x1a\n", 0, 8, "a PNG image", false },
        { "\xff\xd8\xff", 0, 3, "a JPEG image", false },
        { "GIF8", 0, 4, "a GIF image", false },
        { "ftyp", 4, 4, "an MP4 or QuickTime file (ISO base media)", false },
        { "\x1a\x45\xdf\xa3", 0, 4, "a Matroska or WebM file", false },
        { "RIFF", 0, 4, "a RIFF file (WAV sound, AVI video or WebP image)", false },
        { "OggS", 0, 4, "an Ogg file", false },
    };
    static const struct st_foreign pickle = { "\x80", 0, 1, "a Python pickle, as older PyTorch .pth, .pt and .ckpt "
                                                            "files are", true };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (memcmp(prefix + kinds[i].at, kinds[i].magic, (size_t) kinds[i].len) == 0) {
            return &kinds[i];
        }
    }
    return prefix[0] == 0x80 && prefix[1] >= 2 && prefix[1] <= 5 ? &pickle : NULL;
}

bool vae_st_prefix_parse(const uint8_t prefix[8], uint64_t * header_len, char * err, size_t err_size) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) {
        n = (n << 8) | prefix[i];
    }
    if (header_len != NULL) {
        *header_len = n;
    }
    if (n == 0) {
        st_set_err(err, err_size, "header length is 0 (a header is at least \"{}\")");
        return false;
    }
    // (each of these magics read as a length is above the limit, unless a zip's bytes 4-7 are zero)
    const struct st_foreign * foreign = st_foreign_kind(prefix);
    if (n > VAE_ST_MAX_HEADER_LEN && foreign) {
        st_set_err(err, err_size, foreign->convert ? "this is %s, not safetensors, the only format read here: convert "
                                                     "it (safetensors.torch.save_file of its state dict)"
                                                   : "this is %s, not a safetensors file",
                   foreign->kind);
        return false;
    }
    if (n > VAE_ST_MAX_HEADER_LEN) {
        st_set_err(err, err_size, "header length %" PRIu64 " exceeds the %llu-byte limit", n,
                   (unsigned long long) VAE_ST_MAX_HEADER_LEN);
        return false;
    }
    return true;
}

//
// checked arithmetic
//

static bool st_mul_u64(uint64_t a, uint64_t b, uint64_t * out) {
    if (a != 0 && b > UINT64_MAX / a) {
        return false;
    }
    *out = a * b;
    return true;
}

static bool st_add_u64(uint64_t a, uint64_t b, uint64_t * out) {
    if (b > UINT64_MAX - a) {
        return false;
    }
    *out = a + b;
    return true;
}

//
// strict JSON scanner (RFC 8259)
//

struct st_json {
    const uint8_t * begin;
    const uint8_t * p;
    const uint8_t * end;
    char *          err;
    size_t          err_size;
};

// a scanned JSON number: its text, and its value when it is a non-negative integer
struct st_number {
    const uint8_t * text;
    size_t          text_len;
    bool            negative;
    bool            integer;  // no fraction, no exponent
    bool            overflow; // integer digits do not fit in 64 bits
    uint64_t        value;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static bool st_json_fail(struct st_json * js, const char * fmt, ...) {
    if (js->err == NULL || js->err_size == 0) {
        return false;
    }
    char    msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    st_set_err(js->err, js->err_size, "invalid JSON in header at byte %zu: %s", (size_t) (js->p - js->begin), msg);
    return false;
}

// describe the byte at the cursor for an error message
static const char * st_json_here(const struct st_json * js, char buf[32]) {
    if (js->p >= js->end) {
        return "end of header";
    }
    const uint8_t c = *js->p;
    if (c >= 0x20 && c < 0x7f) {
        snprintf(buf, 32, "character '%c'", c);
    } else {
        snprintf(buf, 32, "byte 0x%02x", c);
    }
    return buf;
}

static bool st_json_unexpected(struct st_json * js, const char * wanted) {
    char buf[32];
    if (js->p >= js->end) {
        return st_json_fail(js, "unexpected end of header, expected %s", wanted);
    }
    return st_json_fail(js, "unexpected %s, expected %s", st_json_here(js, buf), wanted);
}

static inline bool st_is_ws(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void st_json_ws(struct st_json * js) {
    while (js->p < js->end && st_is_ws(*js->p)) {
        js->p++;
    }
}

// true (and consumes it) if the next non-whitespace byte is c
static bool st_json_accept(struct st_json * js, uint8_t c) {
    st_json_ws(js);
    if (js->p < js->end && *js->p == c) {
        js->p++;
        return true;
    }
    return false;
}

static int st_hex(uint8_t c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

// the 4 hex digits of a \u escape; the cursor is on the 'u'
static bool st_json_u4(struct st_json * js, uint32_t * out) {
    if (js->end - js->p < 5) {
        js->p = js->end;
        return st_json_fail(js, "unterminated \\u escape in string");
    }
    uint32_t v = 0;
    for (int i = 1; i <= 4; i++) {
        const int h = st_hex(js->p[i]);
        if (h < 0) {
            js->p += i;
            return st_json_fail(js, "invalid \\u escape in string: '%c' is not a hex digit",
                                js->p[0] >= 0x20 && js->p[0] < 0x7f ? js->p[0] : '?');
        }
        v = (v << 4) | (uint32_t) h;
    }
    js->p += 5;
    *out = v;
    return true;
}

static size_t st_utf8_put(uint8_t * o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (uint8_t) cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t) (0xc0 | (cp >> 6));
        o[1] = (uint8_t) (0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t) (0xe0 | (cp >> 12));
        o[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f));
        o[2] = (uint8_t) (0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (uint8_t) (0xf0 | (cp >> 18));
    o[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3f));
    o[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3f));
    o[3] = (uint8_t) (0x80 | (cp & 0x3f));
    return 4;
}

// length of the well-formed UTF-8 sequence at p (Unicode Table 3-7: no overlongs, no surrogates,
// nothing above U+10FFFF), 0 if ill-formed or cut off by end
static size_t st_utf8_len(const uint8_t * p, const uint8_t * end) {
    const uint8_t c  = p[0];
    const size_t  av = (size_t) (end - p);
    if (c < 0x80) {
        return 1;
    }
    uint8_t lo = 0x80, hi = 0xbf;
    size_t  n;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n  = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n  = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (av < n || p[1] < lo || p[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < n; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf) {
            return 0;
        }
    }
    return n;
}

// a string; the cursor is on its opening quote. With out != NULL the decoded UTF-8 is returned
// in a malloc'd NUL-terminated buffer (C strings: a decoded U+0000 is rejected).
static bool st_json_string(struct st_json * js, char ** out) {
    if (js->p >= js->end || *js->p != '"') {
        return st_json_unexpected(js, "a string");
    }
    const uint8_t * start = js->p;
    js->p++;
    uint8_t * buf = NULL;
    size_t    len = 0;
    if (out != NULL) {
        // the decoded text is never longer than the raw text; find the raw end cheaply first
        const uint8_t * q = js->p;
        while (q < js->end && *q != '"') {
            q += (*q == '\\' && q + 1 < js->end) ? 2 : 1;
        }
        buf = malloc((size_t) (q - js->p) + 1);
        if (buf == NULL) {
            return st_json_fail(js, "out of memory");
        }
    }
    for (;;) {
        if (js->p >= js->end) {
            js->p = start;
            free(buf);
            return st_json_fail(js, "unterminated string");
        }
        const uint8_t c = *js->p;
        if (c == '"') {
            js->p++;
            break;
        }
        if (c < 0x20) {
            free(buf);
            return st_json_fail(js, "unescaped control character 0x%02x in string", c);
        }
        if (c == '\\') {
            if (js->p + 1 >= js->end) {
                js->p = start;
                free(buf);
                return st_json_fail(js, "unterminated string");
            }
            js->p++;
            const uint8_t e = *js->p;
            uint32_t      cp;
            switch (e) {
                case '"':  cp = '"';  js->p++; break;
                case '\\': cp = '\\'; js->p++; break;
                case '/':  cp = '/';  js->p++; break;
                case 'b':  cp = '\b'; js->p++; break;
                case 'f':  cp = '\f'; js->p++; break;
                case 'n':  cp = '\n'; js->p++; break;
                case 'r':  cp = '\r'; js->p++; break;
                case 't':  cp = '\t'; js->p++; break;
                case 'u':
                    if (!st_json_u4(js, &cp)) {
                        free(buf);
                        return false;
                    }
                    if (cp >= 0xdc00 && cp <= 0xdfff) {
                        js->p -= 6;
                        free(buf);
                        return st_json_fail(js, "lone low surrogate \\u%04x in string", (unsigned) cp);
                    }
                    if (cp >= 0xd800 && cp <= 0xdbff) {
                        uint32_t lo = 0;
                        if (js->end - js->p < 2 || js->p[0] != '\\' || js->p[1] != 'u') {
                            js->p -= 6;
                            free(buf);
                            return st_json_fail(js, "high surrogate \\u%04x not followed by a low surrogate",
                                                (unsigned) cp);
                        }
                        js->p++;
                        if (!st_json_u4(js, &lo)) {
                            free(buf);
                            return false;
                        }
                        if (lo < 0xdc00 || lo > 0xdfff) {
                            js->p -= 12;
                            free(buf);
                            return st_json_fail(js, "high surrogate \\u%04x followed by \\u%04x, not a low surrogate",
                                                (unsigned) cp, (unsigned) lo);
                        }
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    }
                    break;
                default:
                    js->p--;
                    free(buf);
                    if (e >= 0x20 && e < 0x7f) {
                        return st_json_fail(js, "invalid escape '\\%c' in string", e);
                    }
                    return st_json_fail(js, "invalid escape '\\' followed by byte 0x%02x in string", e);
            }
            if (cp == 0) {
                free(buf);
                return st_json_fail(js, "string contains \\u0000, which is not supported in names and metadata");
            }
            if (buf != NULL) {
                len += st_utf8_put(buf + len, cp);
            }
            continue;
        }
        const size_t n = st_utf8_len(js->p, js->end);
        if (n == 0) {
            free(buf);
            return st_json_fail(js, "invalid UTF-8 (byte 0x%02x) in string", c);
        }
        if (buf != NULL) {
            memcpy(buf + len, js->p, n);
            len += n;
        }
        js->p += n;
    }
    if (out != NULL) {
        buf[len] = '\0';
        *out     = (char *) buf;
    }
    return true;
}

// a number per the RFC 8259 grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
static bool st_json_number(struct st_json * js, struct st_number * num) {
    memset(num, 0, sizeof(*num));
    num->text    = js->p;
    num->integer = true;
    if (js->p < js->end && *js->p == '-') {
        num->negative = true;
        js->p++;
    }
    if (js->p >= js->end || *js->p < '0' || *js->p > '9') {
        return st_json_unexpected(js, "a digit");
    }
    if (*js->p == '0') {
        js->p++;
        if (js->p < js->end && *js->p >= '0' && *js->p <= '9') {
            return st_json_fail(js, "leading zero in number");
        }
    } else {
        while (js->p < js->end && *js->p >= '0' && *js->p <= '9') {
            const uint64_t d = (uint64_t) (*js->p - '0');
            if (!num->overflow && (num->value > (UINT64_MAX - d) / 10)) {
                num->overflow = true;
            }
            num->value = num->value * 10 + d;
            js->p++;
        }
    }
    if (js->p < js->end && *js->p == '.') {
        num->integer = false;
        js->p++;
        if (js->p >= js->end || *js->p < '0' || *js->p > '9') {
            return st_json_unexpected(js, "a digit after '.'");
        }
        while (js->p < js->end && *js->p >= '0' && *js->p <= '9') {
            js->p++;
        }
    }
    if (js->p < js->end && (*js->p == 'e' || *js->p == 'E')) {
        num->integer = false;
        js->p++;
        if (js->p < js->end && (*js->p == '+' || *js->p == '-')) {
            js->p++;
        }
        if (js->p >= js->end || *js->p < '0' || *js->p > '9') {
            return st_json_unexpected(js, "a digit in the exponent");
        }
        while (js->p < js->end && *js->p >= '0' && *js->p <= '9') {
            js->p++;
        }
    }
    num->text_len = (size_t) (js->p - num->text);
    return true;
}

static bool st_json_literal(struct st_json * js, const char * lit) {
    const size_t n = strlen(lit);
    if ((size_t) (js->end - js->p) < n || memcmp(js->p, lit, n) != 0) {
        return st_json_unexpected(js, "a JSON value");
    }
    js->p += n;
    return true;
}

// syntax pass: any value, nested at most ST_MAX_DEPTH deep; nothing is stored
static bool st_json_skip(struct st_json * js, int depth) {
    st_json_ws(js);
    if (js->p >= js->end) {
        return st_json_unexpected(js, "a JSON value");
    }
    switch (*js->p) {
        case '{':
        case '[': {
            const bool    obj   = *js->p == '{';
            const uint8_t close = obj ? '}' : ']';
            if (depth >= ST_MAX_DEPTH) {
                return st_json_fail(js, "nesting deeper than %d levels", ST_MAX_DEPTH);
            }
            js->p++;
            if (st_json_accept(js, close)) {
                return true;
            }
            for (;;) {
                st_json_ws(js);
                if (obj) {
                    if (!st_json_string(js, NULL)) {
                        return false;
                    }
                    if (!st_json_accept(js, ':')) {
                        return st_json_unexpected(js, "':' after an object key");
                    }
                }
                if (!st_json_skip(js, depth + 1)) {
                    return false;
                }
                if (st_json_accept(js, close)) {
                    return true;
                }
                if (!st_json_accept(js, ',')) {
                    return st_json_unexpected(js, obj ? "',' or '}' in object" : "',' or ']' in array");
                }
                st_json_ws(js);
                if (js->p < js->end && *js->p == close) {
                    return st_json_fail(js, "trailing comma before '%c'", close);
                }
            }
        }
        case '"':
            return st_json_string(js, NULL);
        case 't':
            return st_json_literal(js, "true");
        case 'f':
            return st_json_literal(js, "false");
        case 'n':
            return st_json_literal(js, "null");
        default: {
            if (*js->p == '-' || (*js->p >= '0' && *js->p <= '9')) {
                struct st_number num;
                return st_json_number(js, &num);
            }
            return st_json_unexpected(js, "a JSON value");
        }
    }
}

// the kind of the value at the cursor (after whitespace), for schema error messages
static const char * st_json_kind(struct st_json * js) {
    st_json_ws(js);
    if (js->p >= js->end) {
        return "nothing";
    }
    switch (*js->p) {
        case '{': return "an object";
        case '[': return "an array";
        case '"': return "a string";
        case 't':
        case 'f': return "a boolean";
        case 'n': return "null";
        default:  return "a number";
    }
}

//
// schema pass
//

struct st_builder {
    struct st_json         js;
    struct vae_st_header * hdr;
    int                    cap_tensors;
    int                    cap_metadata;
    bool                   seen_metadata;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static bool st_fail(struct st_builder * b, const char * fmt, ...) {
    if (b->js.err != NULL && b->js.err_size != 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->js.err, b->js.err_size, fmt, ap);
        va_end(ap);
    }
    return false;
}

static void st_format_shape(const struct vae_st_tensor * t, char * buf, size_t size) {
    size_t o = (size_t) snprintf(buf, size, "[");
    for (int i = 0; i < t->n_dims && o < size; i++) {
        o += (size_t) snprintf(buf + o, size - o, "%s%" PRId64, i ? ", " : "", t->shape[i]);
    }
    if (o < size) {
        snprintf(buf + o, size - o, "]");
    }
}

static const char * st_number_text(const struct st_number * num, char buf[64]) {
    const size_t n = num->text_len < 60 ? num->text_len : 60;
    memcpy(buf, num->text, n);
    strcpy(buf + n, num->text_len > n ? "..." : "");
    return buf;
}

// a non-negative integer that fits in 64 bits (max further limits it)
static bool st_schema_uint(struct st_builder * b, const char * name, const char * what, int index, uint64_t max,
                           uint64_t * out) {
    struct st_json * js = &b->js;
    const char *     kind = st_json_kind(js);
    if (strcmp(kind, "a number") != 0) {
        return st_fail(b, "tensor '%s': %s entry %d is %s, not an integer", name, what, index, kind);
    }
    struct st_number num;
    if (!st_json_number(js, &num)) {
        return false;
    }
    char buf[64];
    if (!num.integer) {
        return st_fail(b, "tensor '%s': %s entry %d (%s) is not an integer", name, what, index,
                       st_number_text(&num, buf));
    }
    if (num.negative) {
        return st_fail(b, "tensor '%s': %s entry %d (%s) is negative", name, what, index, st_number_text(&num, buf));
    }
    if (num.overflow || num.value > max) {
        return st_fail(b, "tensor '%s': %s entry %d (%s) does not fit in %s", name, what, index,
                       st_number_text(&num, buf), max == UINT64_MAX ? "64 bits" : "a signed 64-bit integer");
    }
    *out = num.value;
    return true;
}

// an array of non-negative integers; at most max_count are stored, more is an error
static bool st_schema_uint_array(struct st_builder * b, const char * name, const char * what, uint64_t max,
                                 uint64_t * vals, int max_count, int * count) {
    struct st_json * js = &b->js;
    const char *     kind = st_json_kind(js);
    if (strcmp(kind, "an array") != 0) {
        return st_fail(b, "tensor '%s': %s is %s, not an array", name, what, kind);
    }
    js->p++;
    *count = 0;
    if (st_json_accept(js, ']')) {
        return true;
    }
    for (;;) {
        if (*count >= max_count) {
            if (max_count == 2) {
                // data_offsets: count them all for the message
                int n = *count;
                do {
                    if (!st_json_skip(js, 0)) {
                        return false;
                    }
                    n++;
                } while (st_json_accept(js, ','));
                return st_fail(b, "tensor '%s': %s must have exactly 2 entries, not %d", name, what, n);
            }
            return st_fail(b, "tensor '%s': %s has more than %d dims", name, what, max_count);
        }
        uint64_t v = 0;
        if (!st_schema_uint(b, name, what, *count, max, &v)) {
            return false;
        }
        vals[(*count)++] = v;
        if (st_json_accept(js, ']')) {
            return true;
        }
        if (!st_json_accept(js, ',')) {
            return st_json_unexpected(js, "',' or ']' in array");
        }
    }
}

static bool st_schema_dtype(struct st_builder * b, const char * name, enum vae_dtype * out) {
    struct st_json * js   = &b->js;
    const char *     kind = st_json_kind(js);
    if (strcmp(kind, "a string") != 0) {
        return st_fail(b, "tensor '%s': dtype is %s, not a string", name, kind);
    }
    char * s = NULL;
    if (!st_json_string(js, &s)) {
        return false;
    }
    for (int i = 0; i < VAE_DTYPE_COUNT; i++) {
        if (strcmp(s, st_dtypes[i].name) == 0) {
            *out = (enum vae_dtype) i;
            free(s);
            return true;
        }
    }
    st_fail(b, "unknown dtype '%.64s' for tensor '%s'", s, name);
    free(s);
    return false;
}

// check shape against dtype and data_offsets, and fill numel/offset/nbytes
static bool st_schema_sizes(struct st_builder * b, struct vae_st_tensor * t, uint64_t begin, uint64_t end) {
    char shape[VAE_ST_MAX_DIMS * 24 + 4];
    st_format_shape(t, shape, sizeof(shape));
    const char * dn = st_dtypes[t->dtype].name;

    uint64_t numel = 1;
    for (int i = 0; i < t->n_dims; i++) {
        if (!st_mul_u64(numel, (uint64_t) t->shape[i], &numel)) {
            return st_fail(b, "tensor '%s': element count of shape %s overflows 64 bits", t->name, shape);
        }
    }
    // bytes = numel * bits / 8, exact, without forming numel * bits (which may overflow)
    const uint64_t bits = (uint64_t) st_dtypes[t->dtype].bits;
    const uint64_t q    = numel / 8;
    const uint64_t r    = numel % 8;
    if ((r * bits) % 8 != 0) {
        return st_fail(b, "tensor '%s': shape %s of %s is not a whole number of bytes (%" PRIu64 " elements of %d bits)",
                       t->name, shape, dn, numel, (int) bits);
    }
    uint64_t need;
    if (!st_mul_u64(q, bits, &need) || !st_add_u64(need, r * bits / 8, &need)) {
        return st_fail(b, "tensor '%s': byte size of shape %s of %s overflows 64 bits", t->name, shape, dn);
    }
    if (begin > end) {
        return st_fail(b, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] begin is after end", t->name, begin,
                       end);
    }
    if (end - begin != need) {
        return st_fail(b, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                          " bytes but shape %s of %s needs %" PRIu64,
                       t->name, begin, end, end - begin, shape, dn, need);
    }
    t->numel  = numel;
    t->offset = begin;
    t->nbytes = end - begin;
    return true;
}

// "name": {"dtype": ..., "shape": [...], "data_offsets": [b, e]}; takes ownership of name
static bool st_schema_tensor(struct st_builder * b, char * name) {
    struct vae_st_header * hdr = b->hdr;
    struct st_json *       js  = &b->js;
    if (hdr->n_tensors == b->cap_tensors) {
        if (b->cap_tensors > (1 << 28)) {
            free(name);
            return st_fail(b, "too many tensors");
        }
        const int              cap = b->cap_tensors ? 2 * b->cap_tensors : 16;
        struct vae_st_tensor * nt  = realloc(hdr->tensors, (size_t) cap * sizeof(*nt));
        if (nt == NULL) {
            free(name);
            return st_fail(b, "out of memory");
        }
        hdr->tensors   = nt;
        b->cap_tensors = cap;
    }
    struct vae_st_tensor * t = &hdr->tensors[hdr->n_tensors++];
    memset(t, 0, sizeof(*t));
    t->name = name; // owned by hdr from here on

    const char * kind = st_json_kind(js);
    if (strcmp(kind, "an object") != 0) {
        return st_fail(b, "tensor '%s': entry is %s, not an object", name, kind);
    }
    js->p++;
    bool     have_dtype = false, have_shape = false, have_offsets = false;
    uint64_t offsets[2] = { 0, 0 };
    if (!st_json_accept(js, '}')) {
        for (;;) {
            st_json_ws(js);
            char * key = NULL;
            if (!st_json_string(js, &key)) {
                return false;
            }
            if (!st_json_accept(js, ':')) {
                free(key);
                return st_json_unexpected(js, "':' after an object key");
            }
            const bool is_dtype   = strcmp(key, "dtype") == 0;
            const bool is_shape   = strcmp(key, "shape") == 0;
            const bool is_offsets = strcmp(key, "data_offsets") == 0;
            if (!is_dtype && !is_shape && !is_offsets) {
                st_fail(b, "tensor '%s': unexpected key '%.64s' (only dtype, shape and data_offsets are allowed)", name,
                        key);
                free(key);
                return false;
            }
            if ((is_dtype && have_dtype) || (is_shape && have_shape) || (is_offsets && have_offsets)) {
                st_fail(b, "tensor '%s': duplicate key '%s'", name, key);
                free(key);
                return false;
            }
            free(key);
            bool ok;
            if (is_dtype) {
                ok         = st_schema_dtype(b, name, &t->dtype);
                have_dtype = true;
            } else if (is_shape) {
                uint64_t dims[VAE_ST_MAX_DIMS];
                ok = st_schema_uint_array(b, name, "shape", (uint64_t) INT64_MAX, dims, VAE_ST_MAX_DIMS, &t->n_dims);
                for (int i = 0; ok && i < t->n_dims; i++) {
                    t->shape[i] = (int64_t) dims[i];
                }
                have_shape = true;
            } else {
                int n = 0;
                ok    = st_schema_uint_array(b, name, "data_offsets", UINT64_MAX, offsets, 2, &n);
                if (ok && n != 2) {
                    ok = st_fail(b, "tensor '%s': data_offsets must have exactly 2 entries, not %d", name, n);
                }
                have_offsets = true;
            }
            if (!ok) {
                return false;
            }
            if (st_json_accept(js, '}')) {
                break;
            }
            if (!st_json_accept(js, ',')) {
                return st_json_unexpected(js, "',' or '}' in object");
            }
        }
    }
    if (!have_dtype || !have_shape || !have_offsets) {
        return st_fail(b, "tensor '%s': missing key '%s'", name,
                       !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    }
    return st_schema_sizes(b, t, offsets[0], offsets[1]);
}

static int st_cmp_str_ptr(const void * a, const void * b) {
    return strcmp(*(char * const *) a, *(char * const *) b);
}

// duplicate __metadata__ keys, found by sorting a copy of the keys (O(n log n) on hostile input)
static bool st_check_metadata_keys(struct st_builder * b) {
    struct vae_st_header * hdr = b->hdr;
    if (hdr->n_metadata < 2) {
        return true;
    }
    char ** keys = malloc((size_t) hdr->n_metadata * sizeof(char *));
    if (keys == NULL) {
        return st_fail(b, "out of memory");
    }
    memcpy(keys, hdr->metadata_keys, (size_t) hdr->n_metadata * sizeof(char *));
    qsort(keys, (size_t) hdr->n_metadata, sizeof(char *), st_cmp_str_ptr);
    bool ok = true;
    for (int i = 1; i < hdr->n_metadata && ok; i++) {
        if (strcmp(keys[i - 1], keys[i]) == 0) {
            ok = st_fail(b, "__metadata__: duplicate key '%.64s'", keys[i]);
        }
    }
    free(keys);
    return ok;
}

static bool st_schema_metadata(struct st_builder * b) {
    struct vae_st_header * hdr  = b->hdr;
    struct st_json *       js   = &b->js;
    const char *           kind = st_json_kind(js);
    if (strcmp(kind, "an object") != 0) {
        return st_fail(b, "__metadata__ is %s, not an object of strings", kind);
    }
    js->p++;
    if (st_json_accept(js, '}')) {
        return true;
    }
    for (;;) {
        st_json_ws(js);
        char * key = NULL;
        if (!st_json_string(js, &key)) {
            return false;
        }
        if (!st_json_accept(js, ':')) {
            free(key);
            return st_json_unexpected(js, "':' after an object key");
        }
        kind = st_json_kind(js);
        if (strcmp(kind, "a string") != 0) {
            st_fail(b, "__metadata__: value of key '%.64s' is %s, not a string", key, kind);
            free(key);
            return false;
        }
        char * val = NULL;
        if (!st_json_string(js, &val)) {
            free(key);
            return false;
        }
        if (hdr->n_metadata == b->cap_metadata) {
            if (b->cap_metadata > (1 << 28)) {
                free(key);
                free(val);
                return st_fail(b, "too many __metadata__ entries");
            }
            const int cap = b->cap_metadata ? 2 * b->cap_metadata : 8;
            char **   nk  = realloc(hdr->metadata_keys, (size_t) cap * sizeof(char *));
            if (nk != NULL) {
                hdr->metadata_keys = nk;
            }
            char ** nv = nk != NULL ? realloc(hdr->metadata_values, (size_t) cap * sizeof(char *)) : NULL;
            if (nv == NULL) {
                free(key);
                free(val);
                return st_fail(b, "out of memory");
            }
            hdr->metadata_values = nv;
            b->cap_metadata      = cap;
        }
        hdr->metadata_keys[hdr->n_metadata]   = key;
        hdr->metadata_values[hdr->n_metadata] = val;
        hdr->n_metadata++;
        if (st_json_accept(js, '}')) {
            return st_check_metadata_keys(b);
        }
        if (!st_json_accept(js, ',')) {
            return st_json_unexpected(js, "',' or '}' in object");
        }
    }
}

static int st_cmp_name(const void * a, const void * b) {
    const struct vae_st_tensor * ta = a;
    const struct vae_st_tensor * tb = b;
    return strcmp(ta->name, tb->name);
}

static int st_cmp_offset(const void * a, const void * b) {
    const struct vae_st_tensor * ta = a;
    const struct vae_st_tensor * tb = b;
    if (ta->offset != tb->offset) {
        return ta->offset < tb->offset ? -1 : 1;
    }
    if (ta->nbytes != tb->nbytes) { // empty tensors first at a shared offset
        return ta->nbytes < tb->nbytes ? -1 : 1;
    }
    return strcmp(ta->name, tb->name);
}

// no duplicate names; sorted by offset the tensors tile [0, data_size) exactly
static bool st_check_layout(struct st_builder * b) {
    struct vae_st_header * hdr = b->hdr;
    if (hdr->n_tensors == 0) {
        hdr->data_size = 0;
        return true;
    }
    qsort(hdr->tensors, (size_t) hdr->n_tensors, sizeof(*hdr->tensors), st_cmp_name);
    for (int i = 1; i < hdr->n_tensors; i++) {
        if (strcmp(hdr->tensors[i - 1].name, hdr->tensors[i].name) == 0) {
            return st_fail(b, "duplicate tensor name '%s'", hdr->tensors[i].name);
        }
    }
    qsort(hdr->tensors, (size_t) hdr->n_tensors, sizeof(*hdr->tensors), st_cmp_offset);
    uint64_t pos = 0;
    for (int i = 0; i < hdr->n_tensors; i++) {
        const struct vae_st_tensor * t   = &hdr->tensors[i];
        const uint64_t               end = t->offset + t->nbytes; // cannot overflow: it was parsed
        if (i == 0 && t->offset != 0) {
            return st_fail(b, "the byte buffer must start at offset 0, but the first tensor '%s' begins at %" PRIu64,
                           t->name, t->offset);
        }
        if (t->offset > pos) {
            return st_fail(b, "gap of %" PRIu64 " bytes in the byte buffer between tensor '%s' (ends at %" PRIu64
                              ") and tensor '%s' (begins at %" PRIu64 ")",
                           t->offset - pos, hdr->tensors[i - 1].name, pos, t->name, t->offset);
        }
        if (t->offset < pos) {
            return st_fail(b, "tensor '%s' (data_offsets [%" PRIu64 ", %" PRIu64 "]) overlaps tensor '%s' (ends at %" PRIu64
                              ")",
                           t->name, t->offset, end, hdr->tensors[i - 1].name, pos);
        }
        pos = end;
    }
    hdr->data_size = pos;
    return true;
}

static bool st_schema(struct st_builder * b) {
    struct st_json * js = &b->js;
    js->p++; // '{', checked by the syntax pass
    if (st_json_accept(js, '}')) {
        return st_check_layout(b);
    }
    for (;;) {
        st_json_ws(js);
        char * name = NULL;
        if (!st_json_string(js, &name)) {
            return false;
        }
        if (!st_json_accept(js, ':')) {
            free(name);
            return st_json_unexpected(js, "':' after an object key");
        }
        if (strcmp(name, "__metadata__") == 0) {
            free(name);
            if (b->seen_metadata) {
                return st_fail(b, "duplicate tensor name '__metadata__'");
            }
            b->seen_metadata = true;
            if (!st_schema_metadata(b)) {
                return false;
            }
        } else if (!st_schema_tensor(b, name)) {
            return false;
        }
        if (st_json_accept(js, '}')) {
            return st_check_layout(b);
        }
        if (!st_json_accept(js, ',')) {
            return st_json_unexpected(js, "',' or '}' in object");
        }
    }
}

void vae_st_header_free(struct vae_st_header * hdr) {
    if (hdr == NULL) {
        return;
    }
    for (int i = 0; i < hdr->n_tensors; i++) {
        free((void *) hdr->tensors[i].name);
    }
    free(hdr->tensors);
    for (int i = 0; i < hdr->n_metadata; i++) {
        free(hdr->metadata_keys[i]);
        free(hdr->metadata_values[i]);
    }
    free(hdr->metadata_keys);
    free(hdr->metadata_values);
    free(hdr);
}

struct vae_st_header * vae_st_header_parse(const uint8_t * json, uint64_t len, char * err, size_t err_size) {
    if (len == 0 || json == NULL) {
        st_set_err(err, err_size, "header length is 0 (a header is at least \"{}\")");
        return NULL;
    }
    if (len > VAE_ST_MAX_HEADER_LEN) {
        st_set_err(err, err_size, "header length %" PRIu64 " exceeds the %llu-byte limit", len,
                   (unsigned long long) VAE_ST_MAX_HEADER_LEN);
        return NULL;
    }
    if (json[0] != '{') {
        if (json[0] >= 0x20 && json[0] < 0x7f) {
            st_set_err(err, err_size, "header must start with '{', not '%c'", json[0]);
        } else {
            st_set_err(err, err_size, "header must start with '{', not byte 0x%02x", json[0]);
        }
        return NULL;
    }

    // pass 1: syntax only
    struct st_json js = { json, json, json + len, err, err_size };
    if (!st_json_skip(&js, 0)) {
        return NULL;
    }
    st_json_ws(&js); // padding: writers use spaces; any JSON whitespace is accepted, as serde_json does
    if (js.p < js.end) {
        char buf[32];
        st_json_fail(&js, "trailing %s after the header object (only whitespace padding may follow it)",
                     st_json_here(&js, buf));
        return NULL;
    }

    // pass 2: schema
    struct st_builder b;
    memset(&b, 0, sizeof(b));
    b.js     = (struct st_json){ json, json, json + len, err, err_size };
    b.hdr    = calloc(1, sizeof(*b.hdr));
    if (b.hdr == NULL) {
        st_set_err(err, err_size, "out of memory");
        return NULL;
    }
    if (!st_schema(&b)) {
        vae_st_header_free(b.hdr);
        return NULL;
    }
    return b.hdr;
}

const struct vae_st_tensor * vae_st_header_find(const struct vae_st_header * hdr, const char * name) {
    if (hdr == NULL || name == NULL) {
        return NULL;
    }
    for (int i = 0; i < hdr->n_tensors; i++) {
        if (strcmp(hdr->tensors[i].name, name) == 0) {
            return &hdr->tensors[i];
        }
    }
    return NULL;
}

const char * vae_st_header_metadata(const struct vae_st_header * hdr, const char * key) {
    if (hdr == NULL || key == NULL) {
        return NULL;
    }
    for (int i = 0; i < hdr->n_metadata; i++) {
        if (strcmp(hdr->metadata_keys[i], key) == 0) {
            return hdr->metadata_values[i];
        }
    }
    return NULL;
}

//
// ComfyUI metadata
//

// a string value at the cursor into *out (freed first), or any other value skipped
static bool st_comfy_string_or_skip(struct st_json * js, char ** out) {
    st_json_ws(js);
    if (js->p < js->end && *js->p == '"') {
        free(*out);
        *out = NULL;
        return st_json_string(js, out);
    }
    return st_json_skip(js, 2);
}

// one node of the prompt: {"class_type": ..., "inputs": {"vae_name": ..., ...}, ...}; its
// class_type and vae_name when they are strings (else left NULL)
static bool st_comfy_node(struct st_json * js, char ** class_type, char ** vae_name) {
    if (!st_json_accept(js, '{')) {
        return st_json_skip(js, 1);
    }
    if (st_json_accept(js, '}')) {
        return true;
    }
    do {
        char * key = NULL;
        bool   ok;
        st_json_ws(js);
        if (!st_json_string(js, &key) || !st_json_accept(js, ':')) {
            free(key);
            return false;
        }
        if (strcmp(key, "class_type") == 0) {
            ok = st_comfy_string_or_skip(js, class_type);
        } else if (strcmp(key, "inputs") == 0 && st_json_accept(js, '{')) {
            ok = true;
            if (!st_json_accept(js, '}')) {
                do {
                    char * input = NULL;
                    st_json_ws(js);
                    ok = st_json_string(js, &input) && st_json_accept(js, ':') &&
                         (strcmp(input, "vae_name") == 0 ? st_comfy_string_or_skip(js, vae_name) :
                                                           st_json_skip(js, 3));
                    free(input);
                } while (ok && st_json_accept(js, ','));
                ok = ok && st_json_accept(js, '}');
            }
        } else {
            ok = st_json_skip(js, 2);
        }
        free(key);
        if (!ok) {
            return false;
        }
    } while (st_json_accept(js, ','));
    return st_json_accept(js, '}');
}

int vae_st_comfy_vae_name(const char * prompt, char ** name) {
    struct st_json js    = { 0 };
    int            found = 0;
    *name                = NULL;
    if (prompt == NULL) {
        return 0;
    }
    js.begin = js.p = (const uint8_t *) prompt;
    js.end          = js.begin + strlen(prompt);
    if (!st_json_accept(&js, '{')) {
        return -1;
    }
    if (st_json_accept(&js, '}')) {
        return 0;
    }
    do {
        char * class_type = NULL, *vae_name = NULL;
        bool   ok;
        st_json_ws(&js);
        ok = st_json_string(&js, NULL) && st_json_accept(&js, ':') && st_comfy_node(&js, &class_type, &vae_name);
        if (ok && class_type && vae_name && strcmp(class_type, "VAELoader") == 0) {
            if (*name == NULL) {
                *name    = vae_name;
                vae_name = NULL;
                found    = 1;
            } else if (strcmp(*name, vae_name) != 0) {
                found = 2;
            }
        }
        free(class_type);
        free(vae_name);
        if (!ok) {
            free(*name);
            *name = NULL;
            return -1;
        }
    } while (st_json_accept(&js, ','));
    st_json_ws(&js);
    if (!st_json_accept(&js, '}') || (st_json_ws(&js), js.p != js.end)) {
        free(*name);
        *name = NULL;
        return -1;
    }
    return found;
}

//
// files
//

bool vae_file_map(const char * path, const uint8_t ** map_out, size_t * size_out, char * err, size_t err_size) {
    struct stat st;
    // a FIFO or a device would block open() or read forever: look before opening, and open
    // without blocking in case the path is swapped for one in between (then fstat refuses it)
    if (stat(path, &st) != 0) {
        st_set_err(err, err_size, "cannot open '%s': %s", path, strerror(errno));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        st_set_err(err, err_size, "'%s' is not a regular file", path);
        return false;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        st_set_err(err, err_size, "cannot open '%s': %s", path, strerror(errno));
        return false;
    }
    if (fstat(fd, &st) != 0) {
        st_set_err(err, err_size, "cannot stat '%s': %s", path, strerror(errno));
        close(fd);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        st_set_err(err, err_size, "'%s' is not a regular file", path);
        close(fd);
        return false;
    }
    const uint64_t size = (uint64_t) st.st_size;
    if (size == 0) {
        st_set_err(err, err_size, "'%s': file is empty (0 bytes)", path);
        close(fd);
        return false;
    }
    if (size > SIZE_MAX) {
        st_set_err(err, err_size, "'%s': file of %" PRIu64 " bytes is too large to map", path, size);
        close(fd);
        return false;
    }
    void * map = mmap(NULL, (size_t) size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        st_set_err(err, err_size, "cannot map '%s': %s", path, strerror(map_errno));
        return false;
    }
    *map_out  = map;
    *size_out = (size_t) size;
    return true;
}

struct vae_st_file * vae_st_file_open(const char * path, char * err, size_t err_size) {
    const uint8_t * map;
    size_t          size;
    if (!vae_file_map(path, &map, &size, err, err_size)) {
        return NULL;
    }
    return vae_st_file_from_map(path, map, size, err, err_size);
}

struct vae_st_file * vae_st_file_from_map(const char * path, const uint8_t * bytes, size_t size, char * err,
                                          size_t err_size) {
    char msg[1024];
    if (size < 8) {
        st_set_err(err, err_size, "'%s': file is too short (%zu bytes) for the 8-byte header length prefix", path,
                   size);
        munmap((void *) bytes, size);
        return NULL;
    }

    uint64_t n = 0;
    if (!vae_st_prefix_parse(bytes, &n, msg, sizeof(msg))) {
        st_set_err(err, err_size, "'%s': %s", path, msg);
        munmap((void *) bytes, size);
        return NULL;
    }
    if (n > size - 8) {
        st_set_err(err, err_size, "'%s': truncated: header length %" PRIu64 " exceeds the %zu"
                                  " bytes after the length prefix",
                   path, n, size - 8);
        munmap((void *) bytes, size);
        return NULL;
    }
    struct vae_st_header * hdr = vae_st_header_parse(bytes + 8, n, msg, sizeof(msg));
    if (hdr == NULL) {
        st_set_err(err, err_size, "'%s': %s", path, msg);
        munmap((void *) bytes, size);
        return NULL;
    }
    const uint64_t avail = size - 8 - n;
    if (avail != hdr->data_size) {
        if (avail < hdr->data_size) {
            st_set_err(err, err_size, "'%s': truncated: the tensors need %" PRIu64
                                      " bytes of data after the header but the file has only %" PRIu64,
                       path, hdr->data_size, avail);
        } else {
            st_set_err(err, err_size, "'%s': trailing bytes: the file has %" PRIu64
                                      " bytes of data after the header but the tensors cover only %" PRIu64,
                       path, avail, hdr->data_size);
        }
        vae_st_header_free(hdr);
        munmap((void *) bytes, size);
        return NULL;
    }
    const uint8_t * data = bytes + 8 + n;
    for (int i = 0; i < hdr->n_tensors; i++) {
        hdr->tensors[i].data = data + hdr->tensors[i].offset;
    }
    return vae_st_file_wrap(path, hdr, bytes, size, err, err_size);
}

struct vae_st_file * vae_st_file_wrap(const char * path, struct vae_st_header * hdr, const uint8_t * map, size_t size,
                                      char * err, size_t err_size) {
    struct vae_st_file * file = malloc(sizeof(*file));
    if (file == NULL) {
        st_set_err(err, err_size, "'%s': out of memory", path);
        vae_st_header_free(hdr);
        munmap((void *) map, size);
        return NULL;
    }
    file->hdr      = hdr;
    file->map      = map;
    file->map_size = size;
    return file;
}

void vae_st_tensor_drop(const struct vae_st_tensor * t) {
    // whole pages around the data (the mapping's last page included): a neighbour's part of a page
    // is read from the file again too, unchanged, as the mapping is private and never written
    const uintptr_t page  = (uintptr_t) sysconf(_SC_PAGESIZE);
    const uintptr_t begin = (uintptr_t) t->data / page * page;
    const uintptr_t end   = ((uintptr_t) t->data + t->nbytes + page - 1) / page * page;
    if (t->data != NULL) {
        madvise((void *) begin, end - begin, MADV_DONTNEED);
    }
}

void vae_st_file_close(struct vae_st_file * file) {
    if (file == NULL) {
        return;
    }
    vae_st_header_free(file->hdr);
    munmap((void *) file->map, file->map_size);
    free(file);
}
