// safetensors reader: the format every VAE checkpoint and every latent file we take is stored in.
//
// A file is [u64 header length N, little-endian][N bytes of JSON][byte buffer]. The header is
// checked as strictly as the reference implementation does (MODELS.md §E): bounded length, strict
// JSON, known dtype names, byte ranges that match shape x element size, ranges that tile the
// buffer from 0 without gaps or overlaps, no integer overflow anywhere. Files are memory-mapped;
// tensor data is never copied here and may be unaligned (use vae_dtype_to_f32 to read it).
// The header parser is separate from the file so that latentparse can parse a byte stream.

#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VAE_ST_MAX_DIMS       8
#define VAE_ST_MAX_HEADER_LEN 100000000ull // the reference parser's bound on N

// every dtype name the format defines; only F32, F16 and BF16 can be converted
enum vae_dtype {
    VAE_DTYPE_BOOL,
    VAE_DTYPE_U8,
    VAE_DTYPE_I8,
    VAE_DTYPE_F8_E5M2,
    VAE_DTYPE_F8_E4M3,
    VAE_DTYPE_F8_E8M0,
    VAE_DTYPE_F8_E4M3FNUZ,
    VAE_DTYPE_F8_E5M2FNUZ,
    VAE_DTYPE_I16,
    VAE_DTYPE_U16,
    VAE_DTYPE_F16,
    VAE_DTYPE_BF16,
    VAE_DTYPE_I32,
    VAE_DTYPE_U32,
    VAE_DTYPE_F32,
    VAE_DTYPE_I64,
    VAE_DTYPE_U64,
    VAE_DTYPE_F64,
    VAE_DTYPE_C64,
    VAE_DTYPE_F4,
    VAE_DTYPE_F6_E2M3,
    VAE_DTYPE_F6_E3M2,
    VAE_DTYPE_COUNT,
};

struct vae_st_tensor {
    const char *   name;
    enum vae_dtype dtype;
    int            n_dims;                 // 0 for a scalar
    int64_t        shape[VAE_ST_MAX_DIMS];
    uint64_t       numel;                  // product of shape (1 for a scalar, 0 if a dim is 0)
    uint64_t       offset;                 // begin of data_offsets, relative to the byte buffer
    uint64_t       nbytes;                 // end - begin
    const uint8_t *data;                   // into the mapped file; NULL for a bare header
};

struct vae_st_header {
    int                    n_tensors;
    struct vae_st_tensor * tensors;        // sorted by offset
    int                    n_metadata;     // __metadata__ entries (string -> string)
    char **                metadata_keys;
    char **                metadata_values;
    uint64_t               data_size;      // bytes of the byte buffer the tensors tile
};

const char * vae_dtype_name(enum vae_dtype dtype);   // "F32", "BF16", ...
int          vae_dtype_bits(enum vae_dtype dtype);   // 32, 16, 8, 4, 6, ...
bool         vae_dtype_is_float(enum vae_dtype dtype); // F32, F16 or BF16: what vae_dtype_to_f32 reads

// convert n elements of F32/F16/BF16 little-endian data (any alignment) to f32;
// false for any other dtype
bool vae_dtype_to_f32(enum vae_dtype dtype, const void * src, float * dst, size_t n);

// read the 8-byte length prefix; false (with a message) if N is 0 or above VAE_ST_MAX_HEADER_LEN
bool vae_st_prefix_parse(const uint8_t prefix[8], uint64_t * header_len, char * err, size_t err_size);

// parse and validate the N header bytes (after the prefix); tensor data pointers stay NULL.
// NULL with a message in err on any violation
struct vae_st_header * vae_st_header_parse(const uint8_t * json, uint64_t len, char * err, size_t err_size);
void                   vae_st_header_free(struct vae_st_header * hdr);

const struct vae_st_tensor * vae_st_header_find(const struct vae_st_header * hdr, const char * name);
const char *                 vae_st_header_metadata(const struct vae_st_header * hdr, const char * key);

// ComfyUI's SaveLatent stores the API-format graph it ran as the `prompt` metadata entry:
// {"<node id>": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}}, ...}.
// The vae_name of its VAELoader nodes, the VAE the workflow decodes with: the number of distinct
// names (0, 1, or 2 for several), the first in *name (malloc'd, NULL when none); -1 when the
// entry is not such JSON.
int vae_st_comfy_vae_name(const char * prompt, char ** name);

// a whole file, memory-mapped and validated (file length must equal 8 + N + data_size)
struct vae_st_file {
    struct vae_st_header * hdr;            // tensor data pointers set into the mapping
    const uint8_t *        map;
    size_t                 map_size;
};

struct vae_st_file * vae_st_file_open(const char * path, char * err, size_t err_size);
// map the regular file at path read-only (a FIFO, a device or an empty file is refused): where the
// readers of either weight format (safetensors, .pth) start
bool                 vae_file_map(const char * path, const uint8_t ** map, size_t * size, char * err, size_t err_size);
// vae_st_file_open on a mapping of vae_file_map, which it takes over (unmapped on failure)
struct vae_st_file * vae_st_file_from_map(const char * path, const uint8_t * map, size_t size, char * err,
                                          size_t err_size);
// a file of a header and the mapping its tensors point into, both taken over (freed on failure)
struct vae_st_file * vae_st_file_wrap(const char * path, struct vae_st_header * hdr, const uint8_t * map, size_t size,
                                      char * err, size_t err_size);
void                 vae_st_file_close(struct vae_st_file * file);
// let the pages under the data of t (a tensor of a mapped file) leave this process's resident
// memory, once the data has been converted elsewhere (touched again, they are read from the file)
void                 vae_st_tensor_drop(const struct vae_st_tensor * t);

#ifdef __cplusplus
}
#endif
