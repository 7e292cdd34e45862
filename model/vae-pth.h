// PyTorch .pth reader: decoders published as torch.save files (taesd's *.pth, Wan2.1_VAE.pth,
// SD .ckpt checkpoints) load without a conversion to safetensors.
//
// A torch.save file is a zip archive of stored members: data.pkl, a pickle that builds the state
// dict, and data/<key>, the raw bytes of each storage (MODELS.md §F). The reader checks every
// offset and size of the zip against the file, then runs data.pkl on a weights-only unpickler of
// its own: the opcodes a state dict needs and nothing else, GLOBAL resolved from a short
// allow-list (OrderedDict, the tensor rebuild functions, the storage classes); nothing else is
// ever called, and a call of any other global is refused naming it.
// It gives the same header as the safetensors reader, tensor data pointing into the mapping, so
// every family's builder reads both formats unchanged.

#pragma once

#include "vae-safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

// the state dict of the .pth bytes [data, data + size) (a dict of tensors, or one under
// "state_dict" or "model"), tensor data pointing into the bytes; NULL with a message on anything
// else (legacy format, compressed member, call of a global outside the allow-list, non-contiguous
// tensor ...)
struct vae_st_header * vae_pth_parse(const uint8_t * data, size_t size, char * err, size_t err_size);

// a weight file, safetensors or .pth, told apart by its first bytes (a zip is read as .pth)
struct vae_st_file * vae_weights_file_open(const char * path, char * err, size_t err_size);

#ifdef __cplusplus
}
#endif
