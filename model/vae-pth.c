// PyTorch .pth reader (see vae-pth.h and MODELS.md section F).
//
// A .pth file is as hostile as any input: its pickle is a program, and Python's unpickler runs
// whatever callable it names. Here nothing is ever called: the unpickler below builds plain
// values (ints, strings, tuples, lists, dicts), resolves GLOBAL only to the handful of names a
// state dict uses (any other stays an inert name, refused by name where it would be called or
// built), and turns the allow-listed calls into what they would make (an empty OrderedDict, a
// tensor view of a storage). Storages come from persistent
// ids only and are the zip's data/<key> members, whose offsets and sizes were checked against
// the file first. Every arithmetic on a size or offset is overflow-checked, every read bounded;
// there is no recursion (the stack, the marks and the memo are arrays), and all objects are
// freed as one list, so cycles a pickle can build through its memo cost nothing.

#include "vae-pth.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PTH_MAX_STATE_DEPTH 4   // {"model": {"state_dict": {...}}} and a little more
#define PTH_MAX_KEY_LEN     256 // a storage key is a small decimal number
#define PTH_NAME_SHOWN      120 // bytes of a name quoted in a message
#define PTH_MAX_PREFIX      256 // the directory all members are in: a file stem
#define PK_MAX_ITEMS        (1 << 21) // objects, stack entries, marks: a state dict of thousands of
                                      // tensors makes some 10^5 objects; bounds memory (~250 MB)
#define PK_DESCRIBED        (2 * PTH_NAME_SHOWN + 24) // "global 'module.name'"

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static bool pth_fail(char * err, size_t err_size, const char * fmt, ...) {
    if (err != NULL && err_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return false;
}

// bytes of a file (names, strings) as a printable C string for a message: non-ASCII and control
// bytes become '?', and a long one is cut
static const char * pth_shown(const uint8_t * s, size_t n, char buf[PTH_NAME_SHOWN + 4]) {
    size_t i = 0;
    for (; i < n && i < PTH_NAME_SHOWN; i++) {
        buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? (char) s[i] : '?';
    }
    strcpy(buf + i, n > PTH_NAME_SHOWN ? "..." : "");
    return buf;
}

static uint16_t pth_u16(const uint8_t * p) {
    return (uint16_t) (p[0] | p[1] << 8);
}

static uint32_t pth_u32(const uint8_t * p) {
    return (uint32_t) pth_u16(p) | (uint32_t) pth_u16(p + 2) << 16;
}

static uint64_t pth_u64(const uint8_t * p) {
    return (uint64_t) pth_u32(p) | (uint64_t) pth_u32(p + 4) << 32;
}

// grow *arr (of *cap elements of elem bytes) to hold need elements
static bool pth_grow(void * arr, size_t * cap, size_t need, size_t elem) {
    if (need <= *cap) {
        return true;
    }
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        n *= 2;
    }
    void * p = n <= SIZE_MAX / elem ? realloc(*(void **) arr, n * elem) : NULL;
    if (p == NULL) {
        return false;
    }
    *(void **) arr = p;
    *cap           = n;
    return true;
}

//
// zip archive
//

#define ZIP_LOCAL_SIG   0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_END_SIG     0x06054b50u
#define ZIP64_END_SIG   0x06064b50u
#define ZIP64_LOC_SIG   0x07064b50u
#define ZIP_END_LEN     22
#define ZIP64_END_LEN   56
#define ZIP64_LOC_LEN   20
#define ZIP_CENTRAL_LEN 46
#define ZIP_LOCAL_LEN   30

struct pth_member {
    const uint8_t * name;
    size_t          name_len;
    uint64_t        offset; // of the data in the file
    uint64_t        size;
};

struct pth_zip {
    const uint8_t *     base;
    uint64_t            size;
    uint64_t            n_members;
    uint64_t            cd_offset, cd_size;
    struct pth_member * members; // sorted by name
    char *              err;
    size_t              err_size;
};

// [off, off + len) lies inside [0, limit)
static bool pth_within(uint64_t off, uint64_t len, uint64_t limit) {
    return len <= limit && off <= limit - len;
}

// the end-of-central-directory record (and the ZIP64 one when there is one): where the central
// directory is and how many entries it has
static bool pth_zip_end(struct pth_zip * z) {
    char * err = z->err;
    size_t es  = z->err_size;
    if (z->size < ZIP_END_LEN) {
        return pth_fail(err, es, "truncated zip archive: %" PRIu64 " bytes, less than its end record alone", z->size);
    }
    // the end record is last but for a comment of at most 65535 bytes
    const uint64_t lowest = z->size > ZIP_END_LEN + 65535 ? z->size - ZIP_END_LEN - 65535 : 0;
    uint64_t       at     = z->size - ZIP_END_LEN;
    while (!(pth_u32(z->base + at) == ZIP_END_SIG && at + ZIP_END_LEN + pth_u16(z->base + at + 20) == z->size)) {
        if (at == lowest) {
            return pth_fail(err, es, "no end-of-central-directory record: the zip archive is truncated or damaged");
        }
        at--;
    }
    const uint8_t * e       = z->base + at;
    uint64_t        disk    = pth_u16(e + 4), cd_disk = pth_u16(e + 6);
    uint64_t        on_disk = pth_u16(e + 8);
    z->n_members            = pth_u16(e + 10);
    z->cd_size              = pth_u32(e + 12);
    z->cd_offset            = pth_u32(e + 16);
    uint64_t end            = at; // the central directory ends before this
    if (at >= ZIP64_LOC_LEN && pth_u32(e - ZIP64_LOC_LEN) == ZIP64_LOC_SIG) {
        const uint64_t z64 = pth_u64(e - ZIP64_LOC_LEN + 8);
        if (!pth_within(z64, ZIP64_END_LEN, at - ZIP64_LOC_LEN) || pth_u32(z->base + z64) != ZIP64_END_SIG) {
            return pth_fail(err, es, "the ZIP64 end record the locator points to (byte %" PRIu64 ") is not there", z64);
        }
        const uint8_t * r = z->base + z64;
        disk              = pth_u32(r + 16);
        cd_disk           = pth_u32(r + 20);
        on_disk           = pth_u64(r + 24);
        z->n_members      = pth_u64(r + 32);
        z->cd_size        = pth_u64(r + 40);
        z->cd_offset      = pth_u64(r + 48);
        end               = z64;
    }
    if (disk != 0 || cd_disk != 0 || on_disk != z->n_members) {
        return pth_fail(err, es, "split (multi-disk) zip archives are not supported");
    }
    if (!pth_within(z->cd_offset, z->cd_size, end)) {
        return pth_fail(err, es, "the central directory (%" PRIu64 " bytes at byte %" PRIu64 ") reaches past its end "
                                 "record at byte %" PRIu64, z->cd_size, z->cd_offset, end);
    }
    if (z->n_members > z->cd_size / ZIP_CENTRAL_LEN) {
        return pth_fail(err, es, "a central directory of %" PRIu64 " bytes cannot hold the %" PRIu64
                                 " entries its end record counts", z->cd_size, z->n_members);
    }
    return true;
}

// the ZIP64 extra field of a central entry: 64-bit values for the fields that hold 0xffffffff, in
// the order size, compressed size, local header offset
static bool pth_zip64_extra(struct pth_zip * z, const uint8_t * x, size_t len, uint64_t * vals[3], const char * name) {
    while (len >= 4) {
        const uint16_t tag = pth_u16(x), n = pth_u16(x + 2);
        if (n > len - 4) {
            break;
        }
        if (tag == 1) {
            size_t at = 0;
            for (int i = 0; i < 3; i++) {
                if (*vals[i] != 0xffffffffu) {
                    continue;
                }
                if (n - at < 8) {
                    return pth_fail(z->err, z->err_size, "member '%s': its ZIP64 extra field is too short", name);
                }
                *vals[i] = pth_u64(x + 4 + at);
                at += 8;
            }
            return true;
        }
        x += 4 + (size_t) n;
        len -= 4 + (size_t) n;
    }
    return true;
}

static int pth_cmp_member(const void * a, const void * b) {
    const struct pth_member * ma = a;
    const struct pth_member * mb = b;
    const int c = memcmp(ma->name, mb->name, ma->name_len < mb->name_len ? ma->name_len : mb->name_len);
    return c ? c : (ma->name_len > mb->name_len) - (ma->name_len < mb->name_len);
}

// one central directory entry at *pos into m, checked against its local header and the file
static bool pth_zip_member(struct pth_zip * z, uint64_t i, uint64_t * pos, struct pth_member * m) {
    char *         err = z->err;
    size_t         es  = z->err_size;
    char           shown[PTH_NAME_SHOWN + 4];
    const uint64_t end = z->cd_offset + z->cd_size;
    if (end - *pos < ZIP_CENTRAL_LEN || pth_u32(z->base + *pos) != ZIP_CENTRAL_SIG) {
        return pth_fail(err, es, "central directory entry %" PRIu64 " (byte %" PRIu64 ") is damaged or missing", i, *pos);
    }
    const uint8_t * c     = z->base + *pos;
    const uint16_t  flags = pth_u16(c + 8), method = pth_u16(c + 10);
    const size_t    nlen = pth_u16(c + 28), xlen = pth_u16(c + 30), clen = pth_u16(c + 32);
    uint64_t        csize = pth_u32(c + 20), size = pth_u32(c + 24), local = pth_u32(c + 42);
    if (end - *pos - ZIP_CENTRAL_LEN < nlen + xlen + clen) {
        return pth_fail(err, es, "central directory entry %" PRIu64 " runs past the central directory", i);
    }
    const char * name = pth_shown(c + ZIP_CENTRAL_LEN, nlen, shown);
    uint64_t *   vals[3] = { &size, &csize, &local };
    if (!pth_zip64_extra(z, c + ZIP_CENTRAL_LEN + nlen, xlen, vals, name)) {
        return false;
    }
    if (flags & 1) {
        return pth_fail(err, es, "member '%s' is encrypted", name);
    }
    if (method != 0) {
        return pth_fail(err, es, "member '%s' is compressed (zip method %u%s): torch.save stores its members "
                                 "uncompressed, and only stored members are read", name, method,
                        method == 8 ? ", deflate" : "");
    }
    if (csize != size) {
        return pth_fail(err, es, "member '%s' is stored, but its compressed size %" PRIu64 " differs from its size %"
                                 PRIu64, name, csize, size);
    }
    if (!pth_within(local, ZIP_LOCAL_LEN, z->cd_offset) || pth_u32(z->base + local) != ZIP_LOCAL_SIG) {
        return pth_fail(err, es, "member '%s': no local header at byte %" PRIu64, name, local);
    }
    const uint8_t * l    = z->base + local;
    const uint64_t  data = local + ZIP_LOCAL_LEN + pth_u16(l + 26) + pth_u16(l + 28);
    if (pth_u16(l + 26) != nlen || !pth_within(local + ZIP_LOCAL_LEN, nlen, z->cd_offset) ||
        memcmp(l + ZIP_LOCAL_LEN, c + ZIP_CENTRAL_LEN, nlen) != 0) {
        return pth_fail(err, es, "member '%s': its local header (byte %" PRIu64 ") names another member", name, local);
    }
    if (!pth_within(data, size, z->cd_offset)) {
        return pth_fail(err, es, "member '%s' (%" PRIu64 " bytes at byte %" PRIu64 ") reaches past the member data, "
                                 "which ends at byte %" PRIu64 " (file of %" PRIu64 " bytes)",
                        name, size, data, z->cd_offset, z->size);
    }
    *m = (struct pth_member) { c + ZIP_CENTRAL_LEN, nlen, data, size };
    *pos += ZIP_CENTRAL_LEN + nlen + xlen + clen;
    return true;
}

static bool pth_zip_open(struct pth_zip * z) {
    if (!pth_zip_end(z)) {
        return false;
    }
    z->members = calloc(z->n_members ? (size_t) z->n_members : 1, sizeof(*z->members));
    if (z->members == NULL) {
        return pth_fail(z->err, z->err_size, "out of memory");
    }
    uint64_t pos = z->cd_offset;
    for (uint64_t i = 0; i < z->n_members; i++) {
        if (!pth_zip_member(z, i, &pos, &z->members[i])) {
            return false;
        }
    }
    qsort(z->members, (size_t) z->n_members, sizeof(*z->members), pth_cmp_member);
    for (uint64_t i = 1; i < z->n_members; i++) {
        if (pth_cmp_member(&z->members[i - 1], &z->members[i]) == 0) {
            char shown[PTH_NAME_SHOWN + 4];
            return pth_fail(z->err, z->err_size, "member '%s' appears twice",
                            pth_shown(z->members[i].name, z->members[i].name_len, shown));
        }
    }
    return true;
}

static const struct pth_member * pth_zip_find(const struct pth_zip * z, const char * name, size_t len) {
    const struct pth_member key = { (const uint8_t *) name, len, 0, 0 };
    return bsearch(&key, z->members, (size_t) z->n_members, sizeof(key), pth_cmp_member);
}

//
// weights-only unpickler
//

enum pk_kind { PK_NONE, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_TUPLE, PK_LIST, PK_DICT, PK_GLOBAL, PK_STORAGE, PK_TENSOR };

static const char * pk_kind_names[] = {
    [PK_NONE] = "None",   [PK_BOOL] = "bool",  [PK_INT] = "int",   [PK_FLOAT] = "float",
    [PK_STR] = "str",     [PK_TUPLE] = "tuple", [PK_LIST] = "list", [PK_DICT] = "dict",
    [PK_GLOBAL] = "global", [PK_STORAGE] = "storage", [PK_TENSOR] = "tensor",
};

// the globals a state dict needs, all that GLOBAL resolves; any other is a name only (PK_NAMED),
// which nothing calls
enum pk_global { PK_ORDERED_DICT, PK_REBUILD_TENSOR_V2, PK_REBUILD_PARAMETER, PK_STORAGE_CLASS, PK_NAMED };

static const struct {
    const char *   name;
    enum vae_dtype dtype;
} pk_storages[] = {
    { "FloatStorage", VAE_DTYPE_F32 }, { "HalfStorage", VAE_DTYPE_F16 }, { "BFloat16Storage", VAE_DTYPE_BF16 },
    { "DoubleStorage", VAE_DTYPE_F64 }, { "LongStorage", VAE_DTYPE_I64 }, { "IntStorage", VAE_DTYPE_I32 },
    { "ShortStorage", VAE_DTYPE_I16 }, { "CharStorage", VAE_DTYPE_I8 }, { "ByteStorage", VAE_DTYPE_U8 },
    { "BoolStorage", VAE_DTYPE_BOOL },
};

struct pk_tensor {
    const struct pk_obj * storage;
    int64_t               offset; // in elements
    int                   n_dims;
    int64_t               shape[VAE_ST_MAX_DIMS], stride[VAE_ST_MAX_DIMS];
};

struct pk_obj {
    enum pk_kind       kind;
    int64_t            i;        // BOOL, INT; GLOBAL: enum pk_global; STORAGE: elements
    enum vae_dtype     dtype;    // GLOBAL (storage class), STORAGE
    const uint8_t *    s;        // STR (inside the pickle); STORAGE: its key; GLOBAL: "module\nname"
    size_t             len;
    const uint8_t *    data;     // STORAGE: its record in the file
    struct pk_obj **   items;    // TUPLE, LIST; DICT: key, value, key, value, ...
    size_t             n, cap;
    struct pk_tensor * tensor;   // TENSOR
    struct pk_obj *    next;     // every object made, to free them all at once
};

struct pk_vm {
    const uint8_t *        begin, *p, *end; // data.pkl
    size_t                 op_at;           // byte of the opcode being run
    struct pk_obj **       stack;
    size_t                 n_stack, cap_stack;
    size_t *               marks;           // stack heights at each MARK
    size_t                 n_marks, cap_marks;
    struct pk_obj **       memo;
    size_t                 cap_memo;
    struct pk_obj *        objects;
    size_t                 n_objects;
    size_t                 n_memo;          // ids handed out: 0 .. n_memo - 1
    const struct pth_zip * zip;
    const char *           prefix;          // of every member: "archive/"
    char *                 err;
    size_t                 err_size;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static bool pk_fail(struct pk_vm * vm, const char * fmt, ...) {
    char    msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return pth_fail(vm->err, vm->err_size, "%sdata.pkl, byte %zu: %s", vm->prefix, vm->op_at, msg);
}

static struct pk_obj * pk_new(struct pk_vm * vm, enum pk_kind kind) {
    if (vm->n_objects++ >= PK_MAX_ITEMS) {
        pk_fail(vm, "the pickle makes more than %d objects: not a state dict", PK_MAX_ITEMS);
        return NULL;
    }
    struct pk_obj * o = calloc(1, sizeof(*o));
    if (o == NULL) {
        pk_fail(vm, "out of memory");
        return NULL;
    }
    o->kind     = kind;
    o->next     = vm->objects;
    vm->objects = o;
    return o;
}

static void pk_free(struct pk_vm * vm) {
    for (struct pk_obj * o = vm->objects, *next; o != NULL; o = next) {
        next = o->next;
        free(o->items);
        free(o->tensor);
        free(o);
    }
    free(vm->stack);
    free(vm->marks);
    free(vm->memo);
}

static bool pk_push(struct pk_vm * vm, struct pk_obj * o) {
    if (o == NULL) {
        return false; // pk_new said why
    }
    if (vm->n_stack >= PK_MAX_ITEMS) {
        return pk_fail(vm, "the stack grows past %d entries: not a state dict", PK_MAX_ITEMS);
    }
    if (!pth_grow(&vm->stack, &vm->cap_stack, vm->n_stack + 1, sizeof(*vm->stack))) {
        return pk_fail(vm, "out of memory");
    }
    vm->stack[vm->n_stack++] = o;
    return true;
}

// the object on top of the stack, above the last mark; NULL (with a message) if there is none
static struct pk_obj * pk_top(struct pk_vm * vm) {
    if (vm->n_stack == 0 || (vm->n_marks > 0 && vm->marks[vm->n_marks - 1] == vm->n_stack)) {
        pk_fail(vm, "stack underflow");
        return NULL;
    }
    return vm->stack[vm->n_stack - 1];
}

static struct pk_obj * pk_pop(struct pk_vm * vm) {
    struct pk_obj * o = pk_top(vm);
    vm->n_stack -= o != NULL;
    return o;
}

// the objects above the last mark, popped with it: *n of them from *items (valid until a push)
static bool pk_pop_mark(struct pk_vm * vm, struct pk_obj *** items, size_t * n) {
    if (vm->n_marks == 0) {
        return pk_fail(vm, "no MARK to pop to");
    }
    const size_t k = vm->marks[--vm->n_marks];
    *items         = vm->stack + k;
    *n             = vm->n_stack - k;
    vm->n_stack    = k;
    return true;
}

// append n objects to o's items
static bool pk_append(struct pk_vm * vm, struct pk_obj * o, struct pk_obj ** items, size_t n) {
    if (n == 0) {
        return true; // an empty tuple: items may be NULL, and so may o->items
    }
    if (!pth_grow(&o->items, &o->cap, o->n + n, sizeof(*o->items))) {
        return pk_fail(vm, "out of memory");
    }
    memcpy(o->items + o->n, items, n * sizeof(*items));
    o->n += n;
    return true;
}

static bool pk_tuple(struct pk_vm * vm, struct pk_obj ** items, size_t n) {
    struct pk_obj * t = pk_new(vm, PK_TUPLE);
    return t != NULL && pk_append(vm, t, items, n) && pk_push(vm, t);
}

// the next n bytes of the pickle
static const uint8_t * pk_take(struct pk_vm * vm, size_t n) {
    if ((size_t) (vm->end - vm->p) < n) {
        pk_fail(vm, "truncated: the opcode 0x%02x needs %zu more bytes", vm->begin[vm->op_at], n);
        return NULL;
    }
    const uint8_t * p = vm->p;
    vm->p += n;
    return p;
}

static bool pk_str_is(const struct pk_obj * o, const char * s) {
    return o->kind == PK_STR && o->len == strlen(s) && memcmp(o->s, s, o->len) == 0;
}

// o for a message: its kind, or a global's name
static const char * pk_describe(const struct pk_obj * o, char buf[PK_DESCRIBED]) {
    const uint8_t * nl = o->kind == PK_GLOBAL ? memchr(o->s, '\n', o->len) : NULL;
    if (nl == NULL) {
        return pk_kind_names[o->kind];
    }
    char mod[PTH_NAME_SHOWN + 4], name[PTH_NAME_SHOWN + 4];
    snprintf(buf, PK_DESCRIBED, "global '%s.%s'", pth_shown(o->s, (size_t) (nl - o->s), mod),
             pth_shown(nl + 1, (size_t) (o->s + o->len - nl - 1), name));
    return buf;
}

static bool pk_int(struct pk_vm * vm, int64_t v) {
    struct pk_obj * o = pk_new(vm, PK_INT);
    if (o) {
        o->i = v;
    }
    return pk_push(vm, o);
}

static bool pk_str(struct pk_vm * vm, size_t len_bytes) {
    const uint8_t * l = pk_take(vm, len_bytes);
    const uint8_t * s = l ? pk_take(vm, len_bytes == 1 ? l[0] : pth_u32(l)) : NULL;
    struct pk_obj * o = s ? pk_new(vm, PK_STR) : NULL;
    if (o) {
        o->s   = s;
        o->len = (size_t) (vm->p - s);
    }
    return pk_push(vm, o);
}

// LONG1: a little-endian two's complement integer of n bytes
static bool pk_long1(struct pk_vm * vm) {
    const uint8_t * n = pk_take(vm, 1);
    const uint8_t * b = n ? pk_take(vm, n[0]) : NULL;
    if (b == NULL) {
        return false;
    }
    if (n[0] > 8) {
        return pk_fail(vm, "integer of %u bytes: at most 8 are read", n[0]);
    }
    uint64_t v = 0;
    for (int i = n[0] - 1; i >= 0; i--) {
        v = v << 8 | b[i];
    }
    if (n[0] > 0 && n[0] < 8 && (b[n[0] - 1] & 0x80)) {
        v |= UINT64_MAX << (8 * n[0]); // sign extension
    }
    return pk_int(vm, (int64_t) v);
}

// GLOBAL "module\nname\n": resolved from the allow-list; any other global is only a name, refused
// by name where it would be called (Lightning checkpoints name their callback classes as dict keys)
static bool pk_global(struct pk_vm * vm) {
    const uint8_t * line[2];
    size_t          len[2];
    for (int i = 0; i < 2; i++) {
        line[i]            = vm->p;
        const uint8_t * nl = memchr(vm->p, '\n', (size_t) (vm->end - vm->p));
        if (nl == NULL) {
            return pk_fail(vm, "truncated GLOBAL opcode");
        }
        len[i] = (size_t) (nl - vm->p);
        vm->p  = nl + 1;
    }
    char mod[PTH_NAME_SHOWN + 4], name[PTH_NAME_SHOWN + 4];
    pth_shown(line[0], len[0], mod);
    pth_shown(line[1], len[1], name);
    struct pk_obj * g = pk_new(vm, PK_GLOBAL);
    if (g == NULL) {
        return false;
    }
    g->s   = line[0];
    g->len = (size_t) (vm->p - 1 - line[0]);
    const bool torch = strcmp(mod, "torch") == 0 && len[0] == 5;
    if (strcmp(mod, "collections") == 0 && strcmp(name, "OrderedDict") == 0) {
        g->i = PK_ORDERED_DICT;
    } else if (strcmp(mod, "torch._utils") == 0 && strcmp(name, "_rebuild_tensor_v2") == 0) {
        g->i = PK_REBUILD_TENSOR_V2;
    } else if (strcmp(mod, "torch._utils") == 0 && strcmp(name, "_rebuild_parameter") == 0) {
        g->i = PK_REBUILD_PARAMETER;
    } else {
        g->i = -1;
        for (size_t i = 0; torch && i < sizeof(pk_storages) / sizeof(pk_storages[0]); i++) {
            if (strcmp(name, pk_storages[i].name) == 0 && strlen(name) == len[1]) {
                g->i     = PK_STORAGE_CLASS;
                g->dtype = pk_storages[i].dtype;
            }
        }
        const size_t n = strlen(name);
        if (g->i < 0 && torch && n > 7 && strcmp(name + n - 7, "Storage") == 0) {
            return pk_fail(vm, "storage type torch.%s is not supported: the storages read are Float, Half, BFloat16, "
                               "Double, Long, Int, Short, Char, Byte and Bool", name);
        }
        g->i = g->i < 0 ? PK_NAMED : g->i;
    }
    return pk_push(vm, g);
}

static bool pk_memo_put(struct pk_vm * vm, uint32_t idx) {
    struct pk_obj * top = pk_top(vm);
    if (top == NULL) {
        return false;
    }
    // a pickler hands ids out in order (0, 1, 2, ...), so the memo never has gaps and is no
    // larger than the number of puts
    if (idx > vm->n_memo) {
        return pk_fail(vm, "memo id %" PRIu32 " skips ids (the next is %zu)", idx, vm->n_memo);
    }
    if (!pth_grow(&vm->memo, &vm->cap_memo, (size_t) idx + 1, sizeof(*vm->memo))) {
        return pk_fail(vm, "out of memory");
    }
    vm->memo[idx] = top;
    vm->n_memo += idx == vm->n_memo;
    return true;
}

static bool pk_memo_get(struct pk_vm * vm, uint32_t idx) {
    if (idx >= vm->n_memo) {
        return pk_fail(vm, "memo id %" PRIu32 " was never stored", idx);
    }
    return pk_push(vm, vm->memo[idx]);
}

// BINPERSID: ('storage', <storage class>, key, location, elements) -> the storage in data/<key>
static bool pk_persid(struct pk_vm * vm) {
    const struct pk_obj * pid = pk_pop(vm);
    if (pid == NULL) {
        return false;
    }
    if (pid->kind != PK_TUPLE || pid->n != 5 || !pk_str_is(pid->items[0], "storage")) {
        return pk_fail(vm, "persistent id is not a ('storage', class, key, location, size) tuple");
    }
    const struct pk_obj * cls = pid->items[1], *key = pid->items[2], *numel = pid->items[4];
    if (cls->kind != PK_GLOBAL || cls->i != PK_STORAGE_CLASS || key->kind != PK_STR || numel->kind != PK_INT ||
        numel->i < 0) {
        char what[PK_DESCRIBED];
        return pk_fail(vm, "persistent storage id of the wrong types (%s, %s, ..., %s)", pk_describe(cls, what),
                       pk_kind_names[key->kind], pk_kind_names[numel->kind]);
    }
    char shown[PTH_NAME_SHOWN + 4], name[PTH_MAX_PREFIX + PTH_MAX_KEY_LEN + 8];
    pth_shown(key->s, key->len, shown);
    if (key->len > PTH_MAX_KEY_LEN) {
        return pk_fail(vm, "storage key '%s' is too long", shown);
    }
    const int n = snprintf(name, sizeof(name), "%sdata/%.*s", vm->prefix, (int) key->len, (const char *) key->s);
    const struct pth_member * m = pth_zip_find(vm->zip, name, (size_t) n);
    if (m == NULL) {
        return pk_fail(vm, "storage '%s' has no data record %sdata/%s in the archive", shown, vm->prefix, shown);
    }
    const uint64_t elem = (uint64_t) vae_dtype_bits(cls->dtype) / 8;
    if ((uint64_t) numel->i > m->size / elem || (uint64_t) numel->i * elem != m->size) {
        return pk_fail(vm, "storage '%s' holds %" PRId64 " %s elements, but its record %sdata/%s has %" PRIu64 " bytes",
                       shown, numel->i, vae_dtype_name(cls->dtype), vm->prefix, shown, m->size);
    }
    struct pk_obj * s = pk_new(vm, PK_STORAGE);
    if (s) {
        s->dtype = cls->dtype;
        s->i     = numel->i;
        s->s     = key->s;
        s->len   = key->len;
        s->data  = vm->zip->base + m->offset;
    }
    return pk_push(vm, s);
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
// as a view of the storage; its layout is checked once its name is known (pth_tensor)
static bool pk_rebuild_tensor(struct pk_vm * vm, const struct pk_obj * args) {
    if (args->n != 6 && args->n != 7) {
        return pk_fail(vm, "_rebuild_tensor_v2 takes 6 or 7 arguments, not %zu", args->n);
    }
    struct pk_obj * const * a = args->items;
    if (a[0]->kind != PK_STORAGE || a[1]->kind != PK_INT || a[1]->i < 0 || a[2]->kind != PK_TUPLE ||
        a[3]->kind != PK_TUPLE || a[4]->kind != PK_BOOL || a[5]->kind != PK_DICT ||
        (args->n == 7 && a[6]->kind != PK_DICT && a[6]->kind != PK_NONE)) {
        return pk_fail(vm, "_rebuild_tensor_v2 called with (%s, %s, %s, %s, %s, %s%s): expected (storage, offset >= 0, "
                           "tuple, tuple, bool, dict)", pk_kind_names[a[0]->kind], pk_kind_names[a[1]->kind],
                       pk_kind_names[a[2]->kind], pk_kind_names[a[3]->kind], pk_kind_names[a[4]->kind],
                       pk_kind_names[a[5]->kind], args->n == 7 ? ", ..." : "");
    }
    if (a[2]->n > VAE_ST_MAX_DIMS || a[3]->n != a[2]->n) {
        return pk_fail(vm, "tensor of %zu dimensions with %zu strides (at most %d dimensions are read)", a[2]->n,
                       a[3]->n, VAE_ST_MAX_DIMS);
    }
    struct pk_obj * o = pk_new(vm, PK_TENSOR);
    if (o == NULL || (o->tensor = calloc(1, sizeof(*o->tensor))) == NULL) {
        return o ? pk_fail(vm, "out of memory") : false;
    }
    struct pk_tensor * t = o->tensor;
    t->storage           = a[0];
    t->offset            = a[1]->i;
    t->n_dims            = (int) a[2]->n;
    for (int i = 0; i < t->n_dims; i++) {
        const struct pk_obj * d = a[2]->items[i], *s = a[3]->items[i];
        if (d->kind != PK_INT || s->kind != PK_INT || d->i < 0 || s->i < 0) {
            return pk_fail(vm, "tensor size or stride %d is not an integer >= 0", i);
        }
        t->shape[i]  = d->i;
        t->stride[i] = s->i;
    }
    return pk_push(vm, o);
}

// REDUCE and NEWOBJ: the allow-listed callables, made without calling anything
static bool pk_call(struct pk_vm * vm, bool newobj) {
    const struct pk_obj * args = pk_pop(vm);
    const struct pk_obj * f    = args ? pk_pop(vm) : NULL;
    if (f == NULL) {
        return false;
    }
    char what[PK_DESCRIBED];
    if (f->kind == PK_GLOBAL && f->i == PK_NAMED) {
        return pk_fail(vm, "%s is refused: a weights-only load calls only collections.OrderedDict, "
                           "torch._utils._rebuild_tensor_v2 and torch._utils._rebuild_parameter, and no other global",
                       pk_describe(f, what));
    }
    if (f->kind != PK_GLOBAL || args->kind != PK_TUPLE) {
        return pk_fail(vm, "%s applies a %s to a %s: only allow-listed globals are called, on a tuple",
                       newobj ? "NEWOBJ" : "REDUCE", pk_describe(f, what), pk_kind_names[args->kind]);
    }
    if (f->i == PK_ORDERED_DICT && args->n == 0) {
        return pk_push(vm, pk_new(vm, PK_DICT));
    }
    if (f->i == PK_REBUILD_TENSOR_V2 && !newobj) {
        return pk_rebuild_tensor(vm, args);
    }
    if (f->i == PK_REBUILD_PARAMETER && !newobj && args->n == 3 &&
        args->items[0]->kind == PK_TENSOR) {
        return pk_push(vm, args->items[0]); // a Parameter's data
    }
    return pk_fail(vm, "%s of %s with %zu arguments is not something a state dict does",
                   newobj ? "NEWOBJ" : "REDUCE",
                   f->i == PK_ORDERED_DICT          ? "OrderedDict"
                   : f->i == PK_REBUILD_TENSOR_V2   ? "_rebuild_tensor_v2"
                   : f->i == PK_REBUILD_PARAMETER   ? "_rebuild_parameter"
                                                    : "a storage class",
                   args->n);
}

// SETITEM(S), APPEND(S): into the dict or list below the popped items
static bool pk_fill(struct pk_vm * vm, enum pk_kind kind, bool many) {
    struct pk_obj *  pair[2];
    struct pk_obj ** items = pair;
    size_t           n     = kind == PK_DICT ? 2 : 1;
    if (many && !pk_pop_mark(vm, &items, &n)) {
        return false;
    }
    for (size_t i = n; !many && i-- > 0;) {
        if ((pair[i] = pk_pop(vm)) == NULL) {
            return false;
        }
    }
    struct pk_obj * target = pk_top(vm);
    if (target == NULL) {
        return false;
    }
    if (target->kind != kind || (kind == PK_DICT && n % 2 != 0)) {
        return pk_fail(vm, "%s on a %s", kind == PK_DICT ? "SETITEM" : "APPEND", pk_kind_names[target->kind]);
    }
    return pk_append(vm, target, items, n);
}

// a name for an opcode this unpickler refuses
static const char * pk_opcode_name(uint8_t op) {
    static const struct {
        uint8_t      op;
        const char * name;
    } names[] = {
        { 'I', "INT" },          { 'L', "LONG" },         { 'S', "STRING" },        { 'V', "UNICODE" },
        { 'F', "FLOAT" },        { 'p', "PUT" },          { 'g', "GET" },           { 'd', "DICT" },
        { 'l', "LIST" },         { 'i', "INST" },         { 'o', "OBJ" },           { 'P', "PERSID" },
        { '0', "POP" },          { '1', "POP_MARK" },     { '2', "DUP" },           { 'T', "BINSTRING" },
        { 'B', "BINBYTES" },     { 'C', "SHORT_BINBYTES" }, { 0x8b, "LONG4" },      { 0x82, "EXT1" },
        { 0x83, "EXT2" },        { 0x84, "EXT4" },        { 0x8c, "SHORT_BINUNICODE" }, { 0x8d, "BINUNICODE8" },
        { 0x8e, "BINBYTES8" },   { 0x8f, "EMPTY_SET" },   { 0x90, "ADDITEMS" },     { 0x91, "FROZENSET" },
        { 0x92, "NEWOBJ_EX" },   { 0x93, "STACK_GLOBAL" }, { 0x94, "MEMOIZE" },     { 0x95, "FRAME" },
        { 0x96, "BYTEARRAY8" },  { 0x97, "NEXT_BUFFER" }, { 0x98, "READONLY_BUFFER" },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].op == op) {
            return names[i].name;
        }
    }
    return "unknown";
}

// one opcode; *done at STOP
static bool pk_step(struct pk_vm * vm, bool * done) {
    vm->op_at            = (size_t) (vm->p - vm->begin);
    const uint8_t   op   = *vm->p++;
    const uint8_t * b    = NULL;
    struct pk_obj * o    = NULL;
    struct pk_obj ** items = NULL;
    size_t           n     = 0;
    char             what[PK_DESCRIBED];
    switch (op) {
        case 0x80: // PROTO
            return pk_take(vm, 1) != NULL;
        case 'c':
            return pk_global(vm);
        case 'q': // BINPUT
            return (b = pk_take(vm, 1)) && pk_memo_put(vm, b[0]);
        case 'r': // LONG_BINPUT
            return (b = pk_take(vm, 4)) && pk_memo_put(vm, pth_u32(b));
        case 'h': // BINGET
            return (b = pk_take(vm, 1)) && pk_memo_get(vm, b[0]);
        case 'j': // LONG_BINGET
            return (b = pk_take(vm, 4)) && pk_memo_get(vm, pth_u32(b));
        case '(': // MARK
            if (vm->n_marks >= PK_MAX_ITEMS) {
                return pk_fail(vm, "more than %d nested MARKs: not a state dict", PK_MAX_ITEMS);
            }
            if (!pth_grow(&vm->marks, &vm->cap_marks, vm->n_marks + 1, sizeof(*vm->marks))) {
                return pk_fail(vm, "out of memory");
            }
            vm->marks[vm->n_marks++] = vm->n_stack;
            return true;
        case 't': // TUPLE
            return pk_pop_mark(vm, &items, &n) && pk_tuple(vm, items, n);
        case ')': // EMPTY_TUPLE
            return pk_tuple(vm, NULL, 0);
        case 0x85: // TUPLE1
        case 0x86: // TUPLE2
        case 0x87: // TUPLE3
            n = op - 0x84u;
            for (size_t i = 0; i < n; i++) {
                if (!pk_pop(vm)) {
                    return false;
                }
            }
            return pk_tuple(vm, vm->stack + vm->n_stack, n);
        case '}': // EMPTY_DICT
            return pk_push(vm, pk_new(vm, PK_DICT));
        case ']': // EMPTY_LIST
            return pk_push(vm, pk_new(vm, PK_LIST));
        case 'X': // BINUNICODE
            return pk_str(vm, 4);
        case 'U': // SHORT_BINSTRING
            return pk_str(vm, 1);
        case 'K': // BININT1
            return (b = pk_take(vm, 1)) && pk_int(vm, b[0]);
        case 'M': // BININT2
            return (b = pk_take(vm, 2)) && pk_int(vm, pth_u16(b));
        case 'J': // BININT
            return (b = pk_take(vm, 4)) && pk_int(vm, (int32_t) pth_u32(b));
        case 0x8a: // LONG1
            return pk_long1(vm);
        case 0x88: // NEWTRUE
        case 0x89: // NEWFALSE
            if ((o = pk_new(vm, PK_BOOL)) != NULL) {
                o->i = op == 0x88;
            }
            return pk_push(vm, o);
        case 'N': // NONE
            return pk_push(vm, pk_new(vm, PK_NONE));
        case 'G': // BINFLOAT: in a checkpoint's other entries (a learning rate), never needed
            return pk_take(vm, 8) && pk_push(vm, pk_new(vm, PK_FLOAT));
        case 'Q':
            return pk_persid(vm);
        case 'R':
            return pk_call(vm, false);
        case 0x81:
            return pk_call(vm, true);
        case 's':
            return pk_fill(vm, PK_DICT, false);
        case 'u':
            return pk_fill(vm, PK_DICT, true);
        case 'a':
            return pk_fill(vm, PK_LIST, false);
        case 'e':
            return pk_fill(vm, PK_LIST, true);
        case 'b': // BUILD: an OrderedDict's attributes (_metadata), a tensor's state; not needed
            if (!pk_pop(vm) || !(o = pk_top(vm))) {
                return false;
            }
            return o->kind == PK_DICT || o->kind == PK_TENSOR ? true : pk_fail(vm, "BUILD on a %s", pk_describe(o, what));
        case '.': // STOP
            *done = true;
            return pk_top(vm) != NULL;
        default:
            return pk_fail(vm, "opcode 0x%02x (%s) is not supported: this weights-only reader takes the opcodes a "
                               "torch.save state dict uses (pickle protocol 2)", op, pk_opcode_name(op));
    }
}

//
// the state dict
//

// the dict of tensors: root itself, or the first one down its "state_dict" and "model" entries
static const struct pk_obj * pth_state_dict(struct pk_vm * vm, const struct pk_obj * root) {
    for (int depth = 0; depth < PTH_MAX_STATE_DEPTH; depth++) {
        char what[PK_DESCRIBED];
        if (root->kind != PK_DICT) {
            pth_fail(vm->err, vm->err_size, "the pickle holds a %s where a state dict (a dict of tensors) was expected",
                     pk_describe(root, what));
            return NULL;
        }
        const struct pk_obj * next = NULL;
        for (size_t i = 0; i < root->n; i += 2) {
            if (root->items[i + 1]->kind == PK_TENSOR) {
                return root;
            }
            if ((pk_str_is(root->items[i], "state_dict") || (pk_str_is(root->items[i], "model") && next == NULL)) &&
                root->items[i + 1]->kind == PK_DICT) {
                next = root->items[i + 1];
            }
        }
        if (next == NULL) {
            char         keys[256] = "";
            const char * sep       = "";
            for (size_t i = 0; i < root->n && strlen(keys) < 200; i += 2, sep = ", ") {
                char shown[PTH_NAME_SHOWN + 4];
                const struct pk_obj * k = root->items[i];
                snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%s'%s'", sep,
                         k->kind == PK_STR ? pth_shown(k->s, k->len, shown) : pk_kind_names[k->kind]);
            }
            pth_fail(vm->err, vm->err_size, "the pickle's dict holds no tensors and no 'state_dict' or 'model' dict "
                                            "(its %zu keys: %s)", root->n / 2, root->n ? keys : "none");
            return NULL;
        }
        root = next;
    }
    pth_fail(vm->err, vm->err_size, "no tensors within %d nested 'state_dict'/'model' dicts", PTH_MAX_STATE_DEPTH);
    return NULL;
}

// the table entry of tensor o under key: contiguous, inside its storage
static bool pth_tensor(struct pk_vm * vm, const struct pk_obj * key, const struct pk_obj * o, struct vae_st_tensor * t) {
    char shown[PTH_NAME_SHOWN + 4];
    if (key->kind != PK_STR || memchr(key->s, '\0', key->len) != NULL) {
        return pth_fail(vm->err, vm->err_size, "a tensor under a %s key: state dict keys are names",
                        key->kind == PK_STR ? "NUL-holding str" : pk_kind_names[key->kind]);
    }
    const char *             name = pth_shown(key->s, key->len, shown);
    const struct pk_tensor * pt   = o->tensor;
    const struct pk_obj *    s    = pt->storage;
    const uint64_t           elem = (uint64_t) vae_dtype_bits(s->dtype) / 8;
    uint64_t                 numel = 1;
    for (int i = 0; i < pt->n_dims; i++) {
        const uint64_t d = (uint64_t) pt->shape[i];
        if (d != 0 && numel > UINT64_MAX / d) {
            return pth_fail(vm->err, vm->err_size, "tensor '%s': its element count overflows", name);
        }
        numel *= d;
    }
    // the strides of a row-major layout, but for dimensions of size 1, whose stride is never used
    // (as torch's is_contiguous; an empty tensor is contiguous)
    for (uint64_t i = (uint64_t) pt->n_dims, expect = 1; numel > 0 && i-- > 0; expect *= (uint64_t) pt->shape[i]) {
        if (pt->shape[i] > 1 && (uint64_t) pt->stride[i] != expect) {
            return pth_fail(vm->err, vm->err_size, "tensor '%s' is not contiguous (dimension %d of size %" PRId64
                                                   " has stride %" PRId64 ", not %" PRIu64 "): save .contiguous() tensors",
                            name, (int) i, pt->shape[i], pt->stride[i], expect);
        }
    }
    if ((uint64_t) pt->offset > (uint64_t) s->i || numel > (uint64_t) s->i - (uint64_t) pt->offset) {
        return pth_fail(vm->err, vm->err_size, "tensor '%s' (%" PRIu64 " elements from %" PRId64
                                               ") reaches past the end of its storage (%" PRId64 " elements)",
                        name, numel, pt->offset, s->i);
    }
    char * copy = malloc(key->len + 1);
    if (copy == NULL) {
        return pth_fail(vm->err, vm->err_size, "out of memory");
    }
    memcpy(copy, key->s, key->len);
    copy[key->len] = '\0';
    *t = (struct vae_st_tensor) { .name = copy, .dtype = s->dtype, .n_dims = pt->n_dims, .numel = numel,
                                  .nbytes = numel * elem, .data = s->data + (uint64_t) pt->offset * elem };
    t->offset = (uint64_t) (t->data - vm->zip->base);
    memcpy(t->shape, pt->shape, sizeof(t->shape));
    return true;
}

static int pth_cmp_name(const void * a, const void * b) {
    return strcmp(((const struct vae_st_tensor *) a)->name, ((const struct vae_st_tensor *) b)->name);
}

static int pth_cmp_offset(const void * a, const void * b) {
    const struct vae_st_tensor * ta = a;
    const struct vae_st_tensor * tb = b;
    return ta->offset != tb->offset ? (ta->offset < tb->offset ? -1 : 1) : strcmp(ta->name, tb->name);
}

static struct vae_st_header * pth_header(struct pk_vm * vm, const struct pk_obj * dict) {
    struct vae_st_header * hdr = calloc(1, sizeof(*hdr));
    if (hdr == NULL || (hdr->tensors = calloc(dict->n / 2 + 1, sizeof(*hdr->tensors))) == NULL) {
        pth_fail(vm->err, vm->err_size, "out of memory");
        vae_st_header_free(hdr);
        return NULL;
    }
    hdr->data_size = vm->zip->size; // the tensors lie anywhere in the archive
    for (size_t i = 0; i < dict->n; i += 2) {
        if (dict->items[i + 1]->kind != PK_TENSOR) {
            continue; // a value that is no weight
        }
        if (!pth_tensor(vm, dict->items[i], dict->items[i + 1], &hdr->tensors[hdr->n_tensors])) {
            vae_st_header_free(hdr);
            return NULL;
        }
        hdr->n_tensors++;
    }
    qsort(hdr->tensors, (size_t) hdr->n_tensors, sizeof(*hdr->tensors), pth_cmp_name);
    for (int i = 1; i < hdr->n_tensors; i++) {
        if (strcmp(hdr->tensors[i - 1].name, hdr->tensors[i].name) == 0) {
            pth_fail(vm->err, vm->err_size, "the state dict holds '%s' twice", hdr->tensors[i].name);
            vae_st_header_free(hdr);
            return NULL;
        }
    }
    qsort(hdr->tensors, (size_t) hdr->n_tensors, sizeof(*hdr->tensors), pth_cmp_offset);
    return hdr;
}

//
// the archive
//

// the member <dir>/data.pkl (exactly one) and the prefix "<dir>/" of every member
static const struct pth_member * pth_find_pickle(struct pth_zip * z, char * prefix, size_t prefix_size) {
    const struct pth_member * found = NULL;
    for (uint64_t i = 0; i < z->n_members; i++) {
        const struct pth_member * m     = &z->members[i];
        const uint8_t *           slash = memchr(m->name, '/', m->name_len);
        if (slash == NULL || (size_t) (m->name + m->name_len - slash) != strlen("/data.pkl") ||
            memcmp(slash, "/data.pkl", strlen("/data.pkl")) != 0) {
            continue;
        }
        if (found != NULL) {
            pth_fail(z->err, z->err_size, "the archive holds several data.pkl members");
            return NULL;
        }
        found = m;
    }
    if (found == NULL || found->name_len - strlen("data.pkl") >= prefix_size) {
        pth_fail(z->err, z->err_size, "a zip archive without a <dir>/data.pkl member: not a file torch.save wrote");
        return NULL;
    }
    memcpy(prefix, found->name, found->name_len - strlen("data.pkl"));
    prefix[found->name_len - strlen("data.pkl")] = '\0';
    return found;
}

static struct vae_st_header * pth_unpickle(struct pth_zip * z, const struct pth_member * pkl, const char * prefix) {
    struct pk_vm vm = { .zip = z, .prefix = prefix, .err = z->err,
                        .err_size = z->err_size };
    vm.begin = vm.p = z->base + pkl->offset;
    vm.end          = vm.begin + pkl->size;
    bool ok = true, done = false;
    while (ok && !done) {
        ok = vm.p < vm.end ? pk_step(&vm, &done) : pk_fail(&vm, "the pickle ends without a STOP opcode");
    }
    const struct pk_obj *  dict = ok ? pth_state_dict(&vm, vm.stack[vm.n_stack - 1]) : NULL;
    struct vae_st_header * hdr  = dict ? pth_header(&vm, dict) : NULL;
    pk_free(&vm);
    return hdr;
}

// a pickle's PROTO opcode first: what torch.save wrote before the zip format (PyTorch 1.6)
static bool pth_is_legacy(const uint8_t * data, size_t size) {
    return size >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5;
}

struct vae_st_header * vae_pth_parse(const uint8_t * data, size_t size, char * err, size_t err_size) {
    if (pth_is_legacy(data, size)) {
        pth_fail(err, err_size, "a bare pickle: the legacy PyTorch format (torch.save before 1.6, or with "
                                "_use_new_zipfile_serialization=False) is not read; save it again with a current "
                                "torch.save, or as safetensors");
        return NULL;
    }
    if (size < 4 || memcmp(data, "PK\x03\x04", 4) != 0) {
        pth_fail(err, err_size, "not a zip archive: a .pth file from torch.save starts with 'PK\\x03\\x04'");
        return NULL;
    }
    struct pth_zip z = { .base = data, .size = size, .err = err, .err_size = err_size };
    char           prefix[PTH_MAX_PREFIX];
    char           shown[PTH_NAME_SHOWN + 4];
    struct vae_st_header *    hdr = NULL;
    const struct pth_member * pkl = pth_zip_open(&z) ? pth_find_pickle(&z, prefix, sizeof(prefix)) : NULL;
    char                      name[PTH_MAX_PREFIX + 16];
    const struct pth_member * order = NULL;
    if (pkl != NULL) {
        const int n = snprintf(name, sizeof(name), "%sbyteorder", prefix);
        order       = pth_zip_find(&z, name, (size_t) n); // absent in older files: little-endian
    }
    if (order != NULL && !(order->size == 6 && memcmp(data + order->offset, "little", 6) == 0)) {
        pth_fail(err, err_size, "byte order '%s': only little-endian files are read",
                 pth_shown(data + order->offset, order->size, shown));
    } else if (pkl != NULL) {
        hdr = pth_unpickle(&z, pkl, prefix);
    }
    free(z.members);
    return hdr;
}

struct vae_st_file * vae_weights_file_open(const char * path, char * err, size_t err_size) {
    const uint8_t * map;
    size_t          size;
    if (!vae_file_map(path, &map, &size, err, err_size)) {
        return NULL;
    }
    if (!(size >= 4 && memcmp(map, "PK\x03\x04", 4) == 0) && !pth_is_legacy(map, size)) {
        return vae_st_file_from_map(path, map, size, err, err_size);
    }
    char                   msg[1024];
    struct vae_st_header * hdr = vae_pth_parse(map, size, msg, sizeof(msg));
    if (hdr == NULL) {
        pth_fail(err, err_size, "'%s': %s", path, msg);
        munmap((void *) map, size);
        return NULL;
    }
    return vae_st_file_wrap(path, hdr, map, size, err, err_size);
}
