// The weight store of a loaded model and the tools its families load with: the file's tensors
// under canonical names (their data made on first use), names rewritten from a file's naming,
// weights added or rearranged at load time. Family files and the builders call these; these call
// no family, no builder and not the loader.

#pragma once

#include "vae-model.h"
#include "vae-safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vae_naming; // (vae-family.h)

#define VAE_NAME_MAX_INDEX 1000 // block numbers in names: real decoders stay far below

// the tensors of hdr under `prefix` (stripped; others ignored) as m's weights, named by
// canonical(key without the prefix, naming) (NULL: not the decoder's), sorted
bool vae_weights_load(struct vae_model * m, const struct vae_st_header * hdr, const char * prefix,
                      char * (*canonical)(const char * key, const struct vae_naming * naming),
                      const struct vae_naming * naming, char * err,
                      size_t err_size);
// every decoder tensor of the file feeds a weight g (a graph of the family's builder) uses: a tensor
// the builder does not know would otherwise be ignored, and the decoder it belongs to decode garbage
bool vae_weights_check_used(const struct vae_model * m, const struct vae_graph * g, char * err, size_t err_size);
// a new weight `name` of shape made from the file's tensors src joined along dimension 0 (n_src 0:
// none, see vae_weight.rows); the weights move (and stay sorted)
bool vae_weights_add(struct vae_model * m, const char * name, int n_dims, const int64_t * shape,
                     const struct vae_st_tensor * const * src, int n_src);
// a new 1x1 conv `name` [n, cin, 1, 1] whose row k is row rows[k] of src viewed as rows of cin
// values (src NULL: of the identity [cin, cin], a channel map; see vae_weight.rows): the rows, owned
// by the weight, for the caller to fill; NULL after a message (the name taken, or out of memory)
int32_t * vae_weights_add_rows(struct vae_model * m, const char * name, int64_t n, int64_t cin,
                               const struct vae_st_tensor * src, char * err, size_t err_size);
// every 5-D weight of a 2-D decoder stored with a time axis of 1 ([O, I, 1, k, k]) as the 4-D one
// it is; false with a message naming a tensor whose time axis is longer (family names the decoder)
bool vae_weights_drop_time_axis(struct vae_model * m, const char * family, char * err, size_t err_size);
// w's rows reordered when its data is made (vae_weight.rows): row k is the file's row from[k] (w->shape[0] of them)
bool vae_weights_set_rows(struct vae_weight * w, const int32_t * from, char * err, size_t err_size);
// the same where row k of n is the file's row from(k, n)
bool vae_weights_reorder_rows(struct vae_weight * w, int32_t (*from)(int32_t k, int32_t n), char * err,
                              size_t err_size);
// the attention `at`: q, k, v and the output projection (parts, in that order) as [C, C, 1, 1]
// (diffusers stores [C, C], HunyuanVideo 1.5 [C, C, 1, 1, 1]), C = the channels of
// `decoder.conv_in.weight` (`decoder.conv_in.conv.weight`: a causal conv_in); q, k and v joined into
// one conv `<at>.<qkv>` [3C, C, 1, 1]; family names the decoder in messages
bool vae_weights_join_attention(struct vae_model * m, const char * family, const char * at, const char * const * parts,
                                const char * qkv, char * err, size_t err_size);
// dimension d of the weight named name followed by suffix; 0 when there is none (the step lists:
// a build with a missing weight names it)
int  vae_model_dim(const struct vae_model * model, const char * name, const char * suffix, int d);
// "[d0, d1, ...]" into buf
void vae_weights_format_shape(char * buf, size_t size, int n_dims, const int64_t * shape);

// names: the block number s starts with (-1: s does not start with a digit; VAE_NAME_MAX_INDEX + 1
// for any number above it, so that no arithmetic on it overflows), *end after it
long   vae_name_index(const char * s, const char ** end);
// `prefix` + (the number `key` starts with after `head`) * mul + add + what follows, or NULL
char * vae_name_renumber(const char * key, const char * head, const char * prefix, long add, long mul, long * num,
                         const char ** rest);
// `key` with its part `from` replaced by `to` (which may be longer), consuming key; NULL stays NULL
char * vae_name_replace(char * key, const char * from, const char * to);
// `to` + what follows `from` at the start of key, or NULL where key does not start with from
char * vae_name_swap_head(const char * key, const char * from, const char * to);
// the largest block number that follows `mark` in hdr's names starting with `head` (-1: none);
// -2 after a message naming a tensor whose number is out of range
long   vae_name_most_index(const struct vae_st_header * hdr, const char * head, const char * mark, char * err,
                           size_t err_size);
// whether some tensor of hdr is named prefix...
bool   vae_name_has_prefix(const struct vae_st_header * hdr, const char * prefix);

#ifdef __cplusplus
}
#endif
