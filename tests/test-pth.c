// The .pth reader (model/vae-pth.c): files PyTorch wrote (the real taef2_decoder.pth, which must
// decode to exactly the frames of taef2_decoder.safetensors; the small fixtures of
// tests/data/gen_pth.py: views sharing a storage at offsets, a Parameter, every kind of dtype, a
// Lightning checkpoint, a transposed tensor, the legacy format), a checkpoint-like file built here from kl_sd.safetensors
// ({"state_dict": {"first_stage_model.*": ...}}, ZIP64 end records) that must decode as the
// safetensors file does, and malformed archives and pickles of every kind, each refused naming
// the cause.

#include "vae-pth.h"
#include "vae-test-data.h"

#include <inttypes.h>
#include <stdint.h>
#include <unistd.h>

//
// writing archives and pickles
//

struct buf {
    uint8_t * p;
    size_t    n, cap;
};

static void put(struct buf * b, const void * s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p   = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void put_le(struct buf * b, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) {
        const uint8_t c = (uint8_t) (v >> (8 * i));
        put(b, &c, 1);
    }
}

static void put_s(struct buf * b, const char * s) {
    put(b, s, strlen(s));
}

static void pk_op(struct buf * b, uint8_t op) {
    put(b, &op, 1);
}

static void pk_unicode(struct buf * b, const char * s) {
    pk_op(b, 'X');
    put_le(b, strlen(s), 4);
    put_s(b, s);
}

static void pk_int(struct buf * b, int64_t v) {
    pk_op(b, 0x8a); // LONG1, 8 bytes
    pk_op(b, 8);
    put_le(b, (uint64_t) v, 8);
}

static void pk_global(struct buf * b, const char * mod, const char * name) {
    pk_op(b, 'c');
    put_s(b, mod);
    put_s(b, "\n");
    put_s(b, name);
    put_s(b, "\n");
}

static void pk_ordered_dict(struct buf * b) {
    pk_global(b, "collections", "OrderedDict");
    put_s(b, ")R");
}

// _rebuild_tensor_v2 of storage `key` (numel elements of torch.<cls>), from offset; stride NULL:
// row-major
static void pk_tensor(struct buf * b, const char * cls, const char * key, int64_t numel, int64_t offset, int n_dims,
                      const int64_t * shape, const int64_t * stride) {
    pk_global(b, "torch._utils", "_rebuild_tensor_v2");
    put_s(b, "((");
    pk_unicode(b, "storage");
    pk_global(b, "torch", cls);
    pk_unicode(b, key);
    pk_unicode(b, "cpu");
    pk_int(b, numel);
    put_s(b, "tQ");
    pk_int(b, offset);
    pk_op(b, '(');
    for (int i = 0; i < n_dims; i++) {
        pk_int(b, shape[i]);
    }
    pk_op(b, 't');
    pk_op(b, '(');
    for (int i = 0, s = 1; i < n_dims; i++) {
        s = 1;
        for (int j = i + 1; j < n_dims; j++) {
            s *= (int) shape[j];
        }
        pk_int(b, stride ? stride[i] : s);
    }
    put_s(b, "t\x89");
    pk_ordered_dict(b);
    put_s(b, "tR");
}

struct member {
    const char *    name;
    const uint8_t * data;
    size_t          size;
};

// where zip_write put each member's local and central header and the end record, for the tests to patch
struct zip_layout {
    size_t local[8], central[8], end;
};

// a stored zip archive as torch.save writes it (data aligned to 64 bytes by the local extra
// field), with ZIP64 end records when zip64
static void zip_write(struct buf * out, const struct member * m, int n, bool zip64, struct zip_layout * lay) {
    size_t * local = calloc((size_t) n, sizeof(*local));
    for (int i = 0; i < n; i++) {
        local[i] = out->n;
        if (i < 8 && lay) {
            lay->local[i] = out->n;
        }
        const size_t nlen = strlen(m[i].name), pad = (64 - (out->n + 30 + nlen + 4) % 64) % 64;
        put_le(out, 0x04034b50, 4);
        put_le(out, 20, 2);
        put_le(out, 0, 2);  // flags
        put_le(out, 0, 2);  // stored
        put_le(out, 0, 8);  // time, date, crc
        put_le(out, m[i].size, 4);
        put_le(out, m[i].size, 4);
        put_le(out, nlen, 2);
        put_le(out, 4 + pad, 2);
        put_s(out, m[i].name);
        put_le(out, 0x4246, 2); // "FB", torch's padding field
        put_le(out, pad, 2);
        for (size_t k = 0; k < pad; k++) {
            put(out, "Z", 1);
        }
        put(out, m[i].data, m[i].size);
    }
    const size_t cd = out->n;
    for (int i = 0; i < n; i++) {
        if (i < 8 && lay) {
            lay->central[i] = out->n;
        }
        put_le(out, 0x02014b50, 4);
        put_le(out, 20, 2);
        put_le(out, 20, 2);
        put_le(out, 0, 2);
        put_le(out, 0, 2);
        put_le(out, 0, 8);
        put_le(out, m[i].size, 4);
        put_le(out, m[i].size, 4);
        put_le(out, strlen(m[i].name), 2);
        put_le(out, 0, 8); // extra and comment lengths, disk, internal attributes
        put_le(out, 0, 4); // external attributes
        put_le(out, local[i], 4);
        put_s(out, m[i].name);
    }
    free(local);
    const size_t cd_size = out->n - cd;
    if (zip64) {
        const size_t z64 = out->n;
        put_le(out, 0x06064b50, 4);
        put_le(out, 44, 8);
        put_le(out, 45, 2);
        put_le(out, 45, 2);
        put_le(out, 0, 8); // disks
        put_le(out, (uint64_t) n, 8);
        put_le(out, (uint64_t) n, 8);
        put_le(out, cd_size, 8);
        put_le(out, cd, 8);
        put_le(out, 0x07064b50, 4);
        put_le(out, 0, 4);
        put_le(out, z64, 8);
        put_le(out, 1, 4);
    }
    if (lay) {
        lay->end = out->n;
    }
    put_le(out, 0x06054b50, 4);
    put_le(out, 0, 4);
    put_le(out, zip64 ? 0xffff : (uint64_t) n, 2);
    put_le(out, zip64 ? 0xffff : (uint64_t) n, 2);
    put_le(out, zip64 ? 0xffffffff : cd_size, 4);
    put_le(out, zip64 ? 0xffffffff : cd, 4);
    put_le(out, 0, 2);
}

static const float k_w[2] = { 1.5f, -2.0f };

// the pickle of OrderedDict(w = FloatStorage '0' of 2 elements, shape [2]), without its STOP
static void std_pickle_body(struct buf * b) {
    const int64_t two = 2;
    put_s(b, "\x80\x02");
    pk_ordered_dict(b);
    pk_op(b, '(');
    pk_unicode(b, "w");
    pk_tensor(b, "FloatStorage", "0", 2, 0, 1, &two, NULL);
    pk_op(b, 'u');
}

// the archive of a pickle: arch/data.pkl, arch/byteorder, arch/data/0 (k_w)
static void std_archive(struct buf * out, const void * pkl, size_t n, struct zip_layout * lay) {
    const struct member m[] = {
        { "arch/data.pkl", pkl, n },
        { "arch/byteorder", (const uint8_t *) "little", 6 },
        { "arch/data/0", (const uint8_t *) k_w, sizeof(k_w) },
    };
    zip_write(out, m, 3, false, lay);
}

//
// checks
//

// the bytes must be refused naming needle
static void expect_refused(const char * what, const uint8_t * data, size_t n, const char * needle) {
    char                   msg[1024] = "";
    struct vae_st_header * hdr       = vae_pth_parse(data, n, msg, sizeof(msg));
    CHECK(hdr == NULL, "%s: accepted", what);
    CHECK(strstr(msg, needle) != NULL, "%s: error \"%s\" does not mention \"%s\"", what, msg, needle);
    vae_st_header_free(hdr);
}

// a pickle (a C literal) in the standard archive must be refused naming needle
static void expect_pickle_refused(const char * what, const char * pkl, size_t n, const char * needle) {
    struct buf b = { 0 };
    std_archive(&b, pkl, n, NULL);
    expect_refused(what, b.p, b.n, needle);
    free(b.p);
}

#define PICKLE_REFUSED(what, lit, needle) expect_pickle_refused(what, lit, sizeof(lit) - 1, needle)

static void test_pickles(void) {
    PICKLE_REFUSED("os.system", "\x80\x02" "cposix\nsystem\nX\x02\x00\x00\x00ls\x85R.", "global 'posix.system' is refused");
    PICKLE_REFUSED("builtins.eval", "\x80\x02" "cbuiltins\neval\nX\x01\x00\x00\x00" "1\x85R.",
                   "global 'builtins.eval' is refused");
    PICKLE_REFUSED("torch.load itself", "\x80\x02" "ctorch\nload\nX\x01\x00\x00\x00" "f\x85R.",
                   "global 'torch.load' is refused: a weights-only load calls only collections.OrderedDict");
    PICKLE_REFUSED("rebuild v3", "\x80\x02" "ctorch._utils\n_rebuild_tensor_v3\n)R.",
                   "global 'torch._utils._rebuild_tensor_v3' is refused");
    PICKLE_REFUSED("NEWOBJ of a named class", "\x80\x02" "cbuiltins\nobject\n)\x81.", "global 'builtins.object' is refused");
    PICKLE_REFUSED("a global as the state dict", "\x80\x02" "cposix\nsystem\n.",
                   "the pickle holds a global 'posix.system' where a state dict (a dict of tensors) was expected");
    PICKLE_REFUSED("a named global as a storage class", "\x80\x02(X\x07\x00\x00\x00storagecposix\nsystem\n"
                   "X\x01\x00\x00\x00" "0X\x03\x00\x00\x00" "cpuK\x02tQ.",
                   "persistent storage id of the wrong types (global 'posix.system', str, ..., int)");
    PICKLE_REFUSED("unknown opcode", "\x80\x02\xff.", "opcode 0xff (unknown) is not supported");
    PICKLE_REFUSED("STACK_GLOBAL", "\x80\x04\x93.", "opcode 0x93 (STACK_GLOBAL) is not supported");
    PICKLE_REFUSED("INST", "\x80\x02iposix\nsystem\n.", "opcode 0x69 (INST) is not supported");
    PICKLE_REFUSED("no STOP", "\x80\x02}", "the pickle ends without a STOP opcode");
    PICKLE_REFUSED("empty pickle", "", "the pickle ends without a STOP opcode");
    PICKLE_REFUSED("memo id never stored", "\x80\x02h\x05.", "memo id 5 was never stored");
    PICKLE_REFUSED("memo id 2^32 - 1", "\x80\x02}r\xff\xff\xff\xff.", "memo id 4294967295 skips ids (the next is 0)");
    PICKLE_REFUSED("memo id with a gap", "\x80\x02}q\0q\2.", "memo id 2 skips ids (the next is 1)");
    PICKLE_REFUSED("TUPLE without MARK", "\x80\x02t.", "no MARK to pop to");
    PICKLE_REFUSED("REDUCE on an empty stack", "\x80\x02R.", "stack underflow");
    PICKLE_REFUSED("pop across a MARK", "\x80\x02}(s.", "stack underflow");
    PICKLE_REFUSED("STOP on an empty stack", "\x80\x02.", "stack underflow");
    PICKLE_REFUSED("SETITEM on a list", "\x80\x02]X\x01\x00\x00\x00" "aK\x01s.", "SETITEM on a list");
    PICKLE_REFUSED("APPEND on a dict", "\x80\x02}K\x01" "a.", "APPEND on a dict");
    PICKLE_REFUSED("BUILD on a list", "\x80\x02]}b.", "BUILD on a list");
    PICKLE_REFUSED("REDUCE of an int", "\x80\x02K\x01)R.", "REDUCE applies a int to a tuple");
    PICKLE_REFUSED("OrderedDict with arguments", "\x80\x02" "ccollections\nOrderedDict\nK\x01\x85R.",
                   "REDUCE of OrderedDict with 1 arguments");
    PICKLE_REFUSED("truncated string", "\x80\x02X\xff\x00\x00\x00" "ab", "truncated: the opcode 0x58 needs 255 more bytes");
    PICKLE_REFUSED("truncated GLOBAL", "\x80\x02" "ccollections\nOrdered", "truncated GLOBAL opcode");
    PICKLE_REFUSED("9-byte LONG1", "\x80\x02\x8a\x09" "123456789.", "integer of 9 bytes");
    PICKLE_REFUSED("an int, not a dict", "\x80\x02K\x01.", "the pickle holds a int where a state dict");
    PICKLE_REFUSED("a list holding itself", "\x80\x02]q\x00h\x00" "a.", "the pickle holds a list where a state dict");
    PICKLE_REFUSED("no tensors", "\x80\x02}X\x05\x00\x00\x00" "epochK\x03s.",
                   "the pickle's dict holds no tensors and no 'state_dict' or 'model' dict (its 1 keys: 'epoch')");
    PICKLE_REFUSED("a persistent id of another kind", "\x80\x02X\x01\x00\x00\x00xQ.",
                   "persistent id is not a ('storage', class, key, location, size) tuple");

    // deep MARK nesting and a long run of memo gets: bounded arrays, no recursion
    struct buf deep = { 0 };
    put(&deep, "\x80\x02}q\0", 5);
    for (int i = 0; i < 200000; i++) {
        put(&deep, "(h\0", 3);
    }
    put_s(&deep, ".");
    expect_pickle_refused("200000 nested MARKs", (const char *) deep.p, deep.n, "the pickle's dict holds no tensors");
    free(deep.p);

    // the bounds on objects, stack entries and marks, each a byte or two of pickle
    static const struct {
        const char * what, *op, *needle;
    } floods[] = {
        { "2^21 + 1 objects", "N", "the pickle makes more than 2097152 objects" },
        { "2^21 + 1 stack entries", "h\0", "the stack grows past 2097152 entries" },
        { "2^21 + 1 marks", "(", "more than 2097152 nested MARKs" },
    };
    for (size_t i = 0; i < sizeof(floods) / sizeof(floods[0]); i++) {
        struct buf   flood = { 0 };
        const size_t n     = strlen(floods[i].op) + (floods[i].op[0] == 'h');
        put(&flood, "\x80\x02]q\0", 5);
        for (int k = 0; k <= 1 << 21; k++) {
            put(&flood, floods[i].op, n);
        }
        put_s(&flood, ".");
        expect_pickle_refused(floods[i].what, (const char *) flood.p, flood.n, floods[i].needle);
        free(flood.p);
    }

    // tensors: storage types, records, layouts
    static const int64_t two = 2, one_two[2] = { 1, 2 }, odd_stride[2] = { 2, 2 };
    static const struct {
        const char *    what, *cls, *key;
        int64_t         numel, offset;
        int             n_dims;
        const int64_t * shape, *stride;
        const char *    needle;
    } tensors[] = {
        { "complex storage", "ComplexFloatStorage", "0", 1, 0, 1, &two, NULL,
          "storage type torch.ComplexFloatStorage is not supported" },
        { "untyped storage", "UntypedStorage", "0", 8, 0, 1, &two, NULL, "storage type torch.UntypedStorage is not supported" },
        { "quantized storage", "QInt8Storage", "0", 8, 0, 1, &two, NULL, "storage type torch.QInt8Storage is not supported" },
        { "missing data record", "FloatStorage", "5", 2, 0, 1, &two, NULL, "storage '5' has no data record arch/data/5" },
        { "storage larger than its record", "FloatStorage", "0", 3, 0, 1, &two, NULL,
          "storage '0' holds 3 F32 elements, but its record arch/data/0 has 8 bytes" },
        { "double storage of the wrong size", "DoubleStorage", "0", 2, 0, 1, &two, NULL,
          "storage '0' holds 2 F64 elements, but its record arch/data/0 has 8 bytes" },
        { "storage of 2^62 elements", "FloatStorage", "0", INT64_C(1) << 62, 0, 1, &two, NULL,
          "storage '0' holds 4611686018427387904 F32 elements" },
        { "tensor past its storage", "FloatStorage", "0", 2, 1, 1, &two, NULL,
          "tensor 'w' (2 elements from 1) reaches past the end of its storage (2 elements)" },
        { "non-contiguous tensor", "FloatStorage", "0", 2, 0, 2, one_two, odd_stride,
          "tensor 'w' is not contiguous (dimension 1 of size 2 has stride 2, not 1)" },
    };
    for (size_t i = 0; i < sizeof(tensors) / sizeof(tensors[0]); i++) {
        struct buf b = { 0 };
        put_s(&b, "\x80\x02");
        pk_ordered_dict(&b);
        pk_op(&b, '(');
        pk_unicode(&b, "w");
        pk_tensor(&b, tensors[i].cls, tensors[i].key, tensors[i].numel, tensors[i].offset, tensors[i].n_dims,
                  tensors[i].shape, tensors[i].stride);
        put_s(&b, "u.");
        expect_pickle_refused(tensors[i].what, (const char *) b.p, b.n, tensors[i].needle);
        free(b.p);
    }
}

static void test_archives(void) {
    struct buf        pkl = { 0 }, good = { 0 }, b = { 0 }, nested = { 0 };
    struct zip_layout lay;
    std_pickle_body(&pkl);
    put_s(&pkl, ".");
    std_archive(&good, pkl.p, pkl.n, &lay);

    // the unmodified archive loads, with the tensor's values
    char                   msg[1024] = "";
    struct vae_st_header * hdr       = vae_pth_parse(good.p, good.n, msg, sizeof(msg));
    CHECK(hdr != NULL, "the standard archive: %s", msg);
    if (hdr) {
        const struct vae_st_tensor * t = vae_st_header_find(hdr, "w");
        CHECK(hdr->n_tensors == 1 && t && t->dtype == VAE_DTYPE_F32 && t->n_dims == 1 && t->shape[0] == 2 &&
                  t->nbytes == 8 && memcmp(t->data, k_w, 8) == 0 && t->data == good.p + t->offset,
              "the standard archive's tensor");
        vae_st_header_free(hdr);
    }

#define PATCHED(what, at, value, bytes, needle)                                             \
    do {                                                                                    \
        b.n = 0;                                                                            \
        put(&b, good.p, good.n);                                                            \
        for (int k_ = 0; k_ < (bytes); k_++) {                                              \
            b.p[(at) + k_] = (uint8_t) ((uint64_t) (value) >> (8 * k_));                    \
        }                                                                                   \
        expect_refused(what, b.p, b.n, needle);                                             \
    } while (0)

    PATCHED("central directory offset past the end", lay.end + 16, 0x7fffffff, 4, "the central directory");
    PATCHED("central directory size past the end", lay.end + 12, 0xffffff00, 4, "reaches past its end record");
    PATCHED("more entries than the directory holds", lay.end + 8, 0x03e803e8, 4,
            "cannot hold the 1000 entries its end record counts");
    PATCHED("split archive", lay.end + 4, 1, 2, "split (multi-disk) zip archives are not supported");
    PATCHED("member size past the data", lay.central[2] + 20, 0xfffffff0fffffff0ull, 8,
            "member 'arch/data/0' (4294967280 bytes at byte");
    PATCHED("compressed member", lay.central[2] + 10, 8, 2,
            "member 'arch/data/0' is compressed (zip method 8, deflate): torch.save stores its members uncompressed");
    PATCHED("encrypted member", lay.central[0] + 8, 1, 2, "member 'arch/data.pkl' is encrypted");
    PATCHED("stored sizes that differ", lay.central[1] + 20, 5, 4,
            "compressed size 5 differs from its size 6");
    PATCHED("local header offset", lay.central[1] + 42, 5, 4, "member 'arch/byteorder': no local header at byte 5");
    PATCHED("local header offset past the data", lay.central[1] + 42, 0xfffffff0, 4, "no local header at byte 4294967280");
    PATCHED("local name differs", lay.local[2] + 30 + 5, 'D', 1, "member 'arch/data/0': its local header");
    PATCHED("central entry signature", lay.central[1], 0, 1, "central directory entry 1");
    PATCHED("central name length past the directory", lay.central[2] + 28, 0xffff, 2,
            "central directory entry 2 runs past the central directory");
    b.n = 0;
    put(&b, good.p, good.n);
    b.p[lay.central[0] + 46 + 12] = b.p[lay.local[0] + 30 + 12] = 'X'; // arch/data.pkX
    expect_refused("no data.pkl", b.p, b.n, "a zip archive without a <dir>/data.pkl member");

    // truncations: at the end record, in the middle, almost nothing
    expect_refused("truncated by 10 bytes", good.p, good.n - 10, "no end-of-central-directory record");
    expect_refused("truncated to half", good.p, good.n / 2, "no end-of-central-directory record");
    expect_refused("truncated to 10 bytes", good.p, 10, "truncated zip archive: 10 bytes");
    expect_refused("not a zip", (const uint8_t *) "hello world", 11, "not a zip archive");
    static const uint8_t legacy[] = "\x80\x02\x8a\x0al\xfc\x9c" "F\xf9 j\xa8P\x19.";
    expect_refused("legacy pickle", legacy, sizeof(legacy) - 1, "the legacy PyTorch format");

    // members twice, big-endian storages, two data.pkl
    const struct member twice[] = {
        { "arch/data.pkl", pkl.p, pkl.n }, { "arch/data/0", (const uint8_t *) k_w, 8 }, { "arch/data/0", (const uint8_t *) k_w, 8 } };
    const struct member big[] = {
        { "arch/data.pkl", pkl.p, pkl.n }, { "arch/byteorder", (const uint8_t *) "big", 3 }, { "arch/data/0", (const uint8_t *) k_w, 8 } };
    const struct member two_pkl[] = {
        { "arch/data.pkl", pkl.p, pkl.n }, { "other/data.pkl", pkl.p, pkl.n }, { "arch/data/0", (const uint8_t *) k_w, 8 } };
    b.n = 0;
    zip_write(&b, twice, 3, false, NULL);
    expect_refused("a member twice", b.p, b.n, "member 'arch/data/0' appears twice");
    b.n = 0;
    zip_write(&b, big, 3, false, NULL);
    expect_refused("big-endian", b.p, b.n, "byte order 'big': only little-endian files are read");
    b.n = 0;
    zip_write(&b, two_pkl, 3, false, NULL);
    expect_refused("two data.pkl", b.p, b.n, "the archive holds several data.pkl members");

    // ZIP64 end records: read; a locator that points nowhere is refused
    const struct member std[] = {
        { "arch/data.pkl", pkl.p, pkl.n }, { "arch/data/0", (const uint8_t *) k_w, 8 } };
    b.n = 0;
    zip_write(&b, std, 2, true, &lay);
    hdr = vae_pth_parse(b.p, b.n, msg, sizeof(msg));
    CHECK(hdr != NULL && hdr->n_tensors == 1, "ZIP64 end records: %s", hdr ? "" : msg);
    vae_st_header_free(hdr);
    b.p[lay.end - 20 + 8] ^= 0x40;
    expect_refused("ZIP64 locator", b.p, b.n, "the ZIP64 end record the locator points to");

    // nested dicts: {"model": {"state_dict": OrderedDict(w)}}; the same tensor twice under one name
    // a Lightning-like checkpoint naming a callback class as a dict key: a name, never called
    b.n = 0;
    put_s(&b, "\x80\x02}(");
    pk_unicode(&b, "callbacks");
    put_s(&b, "}");
    pk_global(&b, "pytorch_lightning.callbacks.model_checkpoint", "ModelCheckpoint");
    put_s(&b, "}");
    pk_unicode(&b, "best_model_path");
    pk_unicode(&b, "last.ckpt");
    put_s(&b, "ss");
    pk_unicode(&b, "state_dict");
    put(&b, pkl.p + 2, pkl.n - 3);
    put_s(&b, "u.");
    nested.n = 0;
    std_archive(&nested, b.p, b.n, NULL);
    hdr = vae_pth_parse(nested.p, nested.n, msg, sizeof(msg));
    CHECK(hdr != NULL && hdr->n_tensors == 1, "a class named as a key: %s", hdr ? "" : msg);
    vae_st_header_free(hdr);

    b.n = 0;
    put_s(&b, "\x80\x02}");
    pk_unicode(&b, "model");
    put_s(&b, "}");
    pk_unicode(&b, "state_dict");
    put(&b, pkl.p + 2, pkl.n - 3); // the OrderedDict, without PROTO and STOP
    put_s(&b, "ss.");
    nested.n = 0;
    std_archive(&nested, b.p, b.n, NULL);
    hdr = vae_pth_parse(nested.p, nested.n, msg, sizeof(msg));
    CHECK(hdr != NULL && hdr->n_tensors == 1 && strcmp(hdr->tensors[0].name, "w") == 0, "nested: %s", hdr ? "" : msg);
    vae_st_header_free(hdr);
    const int64_t two = 2;
    b.n               = 0;
    put_s(&b, "\x80\x02");
    pk_ordered_dict(&b);
    pk_op(&b, '(');
    for (int i = 0; i < 2; i++) {
        pk_unicode(&b, "w");
        pk_tensor(&b, "FloatStorage", "0", 2, 0, 1, &two, NULL);
    }
    put_s(&b, "u.");
    nested.n = 0;
    std_archive(&nested, b.p, b.n, NULL);
    expect_refused("a key twice", nested.p, nested.n, "the state dict holds 'w' twice");

    free(nested.p);
    free(pkl.p);
    free(good.p);
    free(b.p);
}

// the fixtures torch itself wrote (tests/data/gen_pth.py)
static void test_torch_fixtures(void) {
    char                 msg[1024];
    struct vae_st_file * f = vae_weights_file_open(path_in(data_dir, "pth_features.pth"), msg, sizeof(msg));
    CHECK(f != NULL, "pth_features.pth: %s", msg);
    if (f) {
        static const struct {
            const char *   name;
            enum vae_dtype dtype;
            int            n_dims;
            int64_t        shape[2];
            double         first, last;
        } want[] = {
            { "a.weight", VAE_DTYPE_F32, 2, { 3, 4 }, 0, 11 },  { "b", VAE_DTYPE_F16, 1, { 6 }, 4, 9 },
            { "c", VAE_DTYPE_F16, 2, { 2, 5 }, 10, 19 },        { "p", VAE_DTYPE_BF16, 1, { 2 }, 1.5, -2 },
            { "n", VAE_DTYPE_I64, 0, { 0 }, 7, 7 },             { "d", VAE_DTYPE_F64, 1, { 2 }, 0.25, 8 },
            { "e", VAE_DTYPE_F32, 2, { 0, 3 }, 0, 0 },          { "s", VAE_DTYPE_F32, 2, { 1, 6 }, 0, 5 },
        };
        CHECK(f->hdr->n_tensors == 8, "pth_features.pth: %d tensors", f->hdr->n_tensors);
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            const struct vae_st_tensor * t = vae_st_header_find(f->hdr, want[i].name);
            CHECK(t != NULL, "no tensor '%s'", want[i].name);
            if (t == NULL) {
                continue;
            }
            uint64_t numel = 1;
            for (int d = 0; d < want[i].n_dims; d++) {
                numel *= (uint64_t) want[i].shape[d];
            }
            CHECK(t->dtype == want[i].dtype && t->n_dims == want[i].n_dims && t->numel == numel &&
                      t->nbytes == numel * (uint64_t) vae_dtype_bits(t->dtype) / 8 &&
                      (want[i].n_dims == 0 || memcmp(t->shape, want[i].shape, (size_t) t->n_dims * 8) == 0) &&
                      t->data >= f->map && t->data + t->nbytes <= f->map + f->map_size,
                  "tensor '%s': %s, %d dims, %" PRIu64 " elements", want[i].name, vae_dtype_name(t->dtype), t->n_dims,
                  t->numel);
            double first = 0, last = 0;
            if (vae_dtype_is_float(t->dtype) && numel > 0) {
                float * v = malloc(numel * sizeof(float));
                vae_dtype_to_f32(t->dtype, t->data, v, numel);
                first = v[0];
                last  = v[numel - 1];
                free(v);
            } else if (t->dtype == VAE_DTYPE_I64 || t->dtype == VAE_DTYPE_F64) {
                int64_t i0, i1;
                double  d0, d1;
                memcpy(&i0, t->data, 8);
                memcpy(&i1, t->data + t->nbytes - 8, 8);
                memcpy(&d0, t->data, 8);
                memcpy(&d1, t->data + t->nbytes - 8, 8);
                first = t->dtype == VAE_DTYPE_I64 ? (double) i0 : d0;
                last  = t->dtype == VAE_DTYPE_I64 ? (double) i1 : d1;
            }
            CHECK(first == want[i].first && last == want[i].last, "tensor '%s' runs %g .. %g, not %g .. %g", want[i].name,
                  first, last, want[i].first, want[i].last);
        }
        // b and c are views of one storage of 20 halves, at offsets 4 and 10
        const struct vae_st_tensor * b = vae_st_header_find(f->hdr, "b"), *c = vae_st_header_find(f->hdr, "c");
        CHECK(b && c && c->data - b->data == 12, "b and c do not share their storage");
        vae_st_file_close(f);
    }
    f = vae_weights_file_open(path_in(data_dir, "pth_transposed.pth"), msg, sizeof(msg));
    CHECK(f == NULL, "a transposed tensor accepted");
    CHECK_ERR_HAS(msg, "pth_transposed.pth': tensor 'w' is not contiguous (dimension 1 of size 2 has stride 3, not 1)");
    vae_st_file_close(f);
    f = vae_weights_file_open(path_in(data_dir, "pth_legacy.pth"), msg, sizeof(msg));
    CHECK(f == NULL, "the legacy format accepted");
    CHECK_ERR_HAS(msg, "pth_legacy.pth': a bare pickle: the legacy PyTorch format");
    vae_st_file_close(f);
    // a Lightning checkpoint: the state dict found under "state_dict", the optimizer's tensors not
    // taken, the callback class named as a key never called
    f = vae_weights_file_open(path_in(data_dir, "pth_lightning.ckpt"), msg, sizeof(msg));
    CHECK(f != NULL, "pth_lightning.ckpt: %s", msg);
    if (f) {
        const struct vae_st_tensor * w = vae_st_header_find(f->hdr, "first_stage_model.weight");
        CHECK(f->hdr->n_tensors == 2 && w && w->n_dims == 4 && w->shape[0] == 2 && w->shape[1] == 2 &&
                  vae_st_header_find(f->hdr, "first_stage_model.bias"),
              "pth_lightning.ckpt: %d tensors, not the conv's weight [2, 2, 1, 1] and bias", f->hdr->n_tensors);
        vae_st_file_close(f);
    }
    // a decoder weight of a dtype no decoder takes is refused by the model loader, naming it
    struct vae_model * m = vae_model_load(path_in(data_dir, "pth_features.pth"), VAE_FAMILY_AUTO, msg, sizeof(msg));
    CHECK(m == NULL, "pth_features.pth loaded as a decoder");
    CHECK_ERR_HAS(msg, "matches no decoder family");
}

// every frame of the latent file decoded (raw f32 output) by the decoder at model_path; caller frees
static float * decode_raw(const char * model_path, const char * latent_path, size_t * n_out) {
    char               msg[1024];
    int64_t            ls[5];
    struct vae_model * m   = vae_model_load(model_path, VAE_FAMILY_AUTO, msg, sizeof(msg));
    float *            lat = read_tensor(latent_path, "latent_tensor", ls);
    CHECK(m != NULL, "%s: %s", model_path, msg);
    struct vae_session_config cfg = { (int) ls[1], (int) ls[2], (int) ls[3], VAE_SPACE_AUTO, 0, 0, 0, NULL };
    struct vae_session *      s   = m && lat ? vae_session_new(m, cpu, &cfg, msg, sizeof(msg)) : NULL;
    float *                   out = NULL;
    *n_out                        = 0;
    if (s) {
        const size_t frame = (size_t) 3 * (size_t) (m->scale * ls[2]) * (size_t) (m->scale * ls[3]);
        const size_t lat_n = (size_t) (ls[1] * ls[2] * ls[3]);
        out                = malloc((size_t) ls[0] * frame * sizeof(float));
        size_t got         = 0;
        for (int f = 0; f < ls[0]; f++) {
            CHECK(vae_session_push(s, lat + f * lat_n, msg, sizeof(msg)), "%s", msg);
            if (f == ls[0] - 1) {
                CHECK(vae_session_drain(s, msg, sizeof(msg)), "%s", msg);
            }
            while (vae_session_frames_ready(s) > 0 && got < (size_t) ls[0]) {
                CHECK(vae_session_pop_output(s, out + got++ * frame, msg, sizeof(msg)), "%s", msg);
            }
        }
        CHECK(got == (size_t) ls[0], "%s: %zu frames of %d", model_path, got, (int) ls[0]);
        *n_out = got * frame;
    } else {
        CHECK(0, "%s: no session: %s", model_path, m && lat ? msg : "no model or latent");
    }
    vae_session_free(s);
    vae_model_free(m);
    free(lat);
    return out;
}

// the .pth and the safetensors file decode bit-identically, and not to a constant
static void check_same_decode(const char * what, const char * pth, const char * st, const char * latent) {
    size_t  n_pth, n_st;
    float * a = decode_raw(pth, latent, &n_pth);
    float * b = decode_raw(st, latent, &n_st);
    CHECK(a && b && n_pth == n_st && n_pth > 0 && memcmp(a, b, n_pth * sizeof(float)) == 0,
          "%s: the .pth decodes to other frames than the safetensors file", what);
    size_t distinct = 0;
    for (size_t i = 1; a && i < n_pth; i++) {
        distinct += a[i] != a[0];
    }
    CHECK(distinct > n_pth / 2, "%s: the frames are nearly constant", what);
    printf("%s: %zu values, bit-identical\n", what, n_pth);
    free(a);
    free(b);
}

// the real TAEF2 decoder as .pth: the same tensors as the safetensors file, the same frames
static void test_real_taef2(void) {
    char pth[1024], st[1024], msg[1024];
    snprintf(pth, sizeof(pth), "%s/models/taef2_decoder.pth", shared_dir);
    snprintf(st, sizeof(st), "%s/models/taef2_decoder.safetensors", shared_dir);
    if (access(pth, R_OK) != 0 || access(st, R_OK) != 0) {
        printf("note: no %s, skipping the real .pth\n", pth);
        return;
    }
    struct vae_st_file * a = vae_weights_file_open(pth, msg, sizeof(msg));
    CHECK(a != NULL, "%s", msg);
    struct vae_st_file * b = vae_st_file_open(st, msg, sizeof(msg));
    CHECK(b != NULL, "%s", msg);
    if (a && b) {
        CHECK(a->hdr->n_tensors == b->hdr->n_tensors, "%d tensors in the .pth, %d in the safetensors file",
              a->hdr->n_tensors, b->hdr->n_tensors);
        int same = 0;
        for (int i = 0; i < b->hdr->n_tensors; i++) {
            const struct vae_st_tensor * s = &b->hdr->tensors[i], *t = vae_st_header_find(a->hdr, s->name);
            same += t && t->dtype == s->dtype && t->n_dims == s->n_dims && t->nbytes == s->nbytes &&
                    memcmp(t->shape, s->shape, sizeof(s->shape)) == 0 && memcmp(t->data, s->data, s->nbytes) == 0 &&
                    (uintptr_t) (t->data - a->map) % 64 == 0;
        }
        CHECK(same == b->hdr->n_tensors, "%d of %d tensors the same (name, dtype, shape, bytes, 64-byte aligned)", same,
              b->hdr->n_tensors);
        // torch writes a ZIP64 end record and its locator into every file; past 4 GiB the plain end
        // record says "see ZIP64" (0xffff, 0xffffffff) and the ZIP64 record alone must do
        uint8_t * copy = malloc(a->map_size);
        memcpy(copy, a->map, a->map_size);
        memset(copy + a->map_size - 22 + 8, 0xff, 12);
        struct vae_st_header * hdr = vae_pth_parse(copy, a->map_size, msg, sizeof(msg));
        CHECK(hdr != NULL && hdr->n_tensors == b->hdr->n_tensors, "the end record left to ZIP64: %s", hdr ? "" : msg);
        vae_st_header_free(hdr);
        copy[a->map_size - 22 - 20 - 56 + 48] -= 8; // the ZIP64 record's central directory offset
        expect_refused("ZIP64 central directory offset", copy, a->map_size, "central directory entry 0");
        free(copy);
    }
    vae_st_file_close(a);
    vae_st_file_close(b);
    char latent[1024];
    snprintf(latent, sizeof(latent), "%s/reference/taef2/small.latent", shared_dir);
    check_same_decode("taef2_decoder.pth", pth, st, latent);
}

// the tensors of the safetensors file src as a .pth at path: {"state_dict": {prefix + name: ...,
// "cond_stage_model.position_ids": I64}, "global_step": 5}, ZIP64 end records; the tensor named
// as_int, if any, as an IntStorage of zeros. False after a failed check
static bool write_checkpoint(const char * path, const char * src, const char * prefix, const char * as_int) {
    char                 msg[1024];
    struct vae_st_file * f = vae_st_file_open(src, msg, sizeof(msg));
    CHECK(f != NULL, "%s", msg);
    if (f == NULL) {
        return false;
    }
    const int            n     = f->hdr->n_tensors;
    struct member *      m     = calloc((size_t) n + 2, sizeof(*m));
    char(*names)[32]           = calloc((size_t) n + 2, sizeof(*names));
    struct buf           pkl   = { 0 }, zip = { 0 };
    static const int64_t ids[3] = { 0, 1, 2 };
    const int64_t        three  = 3;
    uint8_t *            zeros  = NULL;
    put_s(&pkl, "\x80\x02}(");
    pk_unicode(&pkl, "state_dict");
    pk_ordered_dict(&pkl);
    pk_op(&pkl, '(');
    for (int i = 0; i < n; i++) {
        const struct vae_st_tensor * t   = &f->hdr->tensors[i];
        const bool                   i32 = as_int && strcmp(t->name, as_int) == 0;
        char                         key[16], name[300];
        snprintf(key, sizeof(key), "%d", i);
        snprintf(names[i + 1], sizeof(names[i + 1]), "ckpt/data/%d", i);
        m[i + 1] = (struct member) { names[i + 1], t->data, t->nbytes };
        if (i32) {
            zeros    = calloc(t->numel, 4);
            m[i + 1] = (struct member) { names[i + 1], zeros, t->numel * 4 };
        }
        snprintf(name, sizeof(name), "%s%s", prefix, t->name);
        pk_unicode(&pkl, name);
        pk_tensor(&pkl,
                  i32                         ? "IntStorage"
                  : t->dtype == VAE_DTYPE_F32 ? "FloatStorage"
                  : t->dtype == VAE_DTYPE_F16 ? "HalfStorage"
                                              : "BFloat16Storage",
                  key, (int64_t) t->numel, 0, t->n_dims, t->shape, NULL);
    }
    pk_unicode(&pkl, "cond_stage_model.position_ids");
    pk_tensor(&pkl, "LongStorage", "ids", 3, 0, 1, &three, NULL);
    put_s(&pkl, "u");
    pk_unicode(&pkl, "global_step");
    put_s(&pkl, "K\x05" "u.");
    m[0]     = (struct member) { "ckpt/data.pkl", pkl.p, pkl.n };
    m[n + 1] = (struct member) { "ckpt/data/ids", (const uint8_t *) ids, sizeof(ids) };
    zip_write(&zip, m, n + 2, true, NULL);
    FILE *     out = fopen(path, "wb");
    const bool ok  = out && fwrite(zip.p, 1, zip.n, out) == zip.n && fclose(out) == 0;
    CHECK(ok, "cannot write %s", path);
    vae_st_file_close(f);
    free(pkl.p);
    free(zip.p);
    free(m);
    free(names);
    free(zeros);
    return ok;
}

// kl_sd as a checkpoint decodes as the safetensors file does; a decoder weight stored as int32 is
// refused by the loader, naming it
static void test_checkpoint(void) {
    char path[1024], msg[1024];
    snprintf(path, sizeof(path), "%s/vae-test-pth-%d.ckpt", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int) getpid());
    if (write_checkpoint(path, path_in(data_dir, "kl_sd.safetensors"), "first_stage_model.", NULL)) {
        check_same_decode("kl_sd as a checkpoint .pth", path, path_in(data_dir, "kl_sd.safetensors"),
                          path_in(data_dir, "kl_sd.latent"));
    }
    if (write_checkpoint(path, path_in(data_dir, "taesd_z4_w16.orig.safetensors"), "", "3.conv.0.weight")) {
        struct vae_model * m = vae_model_load(path, VAE_FAMILY_AUTO, msg, sizeof(msg));
        CHECK(m == NULL, "an int32 decoder weight accepted");
        CHECK_ERR_HAS(msg, "tensor '3.conv.0.weight' is I32; decoder weights must be F32, F16 or BF16");
        vae_model_free(m);
    }
    unlink(path);
}

int main(void) {
    if (!test_data_init()) {
        return 1;
    }
    test_pickles();
    test_archives();
    test_torch_fixtures();
    test_real_taef2();
    test_checkpoint();
    vae_backend_free(cpu);
    return vae_test_summary();
}
