// libFuzzer target for the .pth reader: arbitrary bytes through vae_pth_parse (the zip's end
// records, central directory and local headers, the weights-only unpickler, the state dict's
// tensor table), straight from memory. Besides crashes and sanitizer reports it flags a refusal
// without a message, and an accepted tensor whose bytes are not inside the input or whose byte
// count disagrees with its shape and dtype; it reads every byte of every accepted tensor, so that
// ASan reports a pointer past the input. fuzz-model-load takes .pth inputs too (the loader tells
// the formats apart by their first bytes), through family detection and the check build.
// tests/fuzz/README.md says how to run it; fuzz-main.c runs it over files without libFuzzer.

#include "vae-pth.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    char                   err[1024] = "";
    struct vae_st_header * hdr       = vae_pth_parse(data, size, err, sizeof(err));
    if (hdr == NULL && err[0] == '\0') {
        fprintf(stderr, "refused without a message\n");
        abort();
    }
    volatile uint8_t sum = 0;
    for (int i = 0; hdr != NULL && i < hdr->n_tensors; i++) {
        const struct vae_st_tensor * t     = &hdr->tensors[i];
        uint64_t                     numel = 1;
        for (int d = 0; d < t->n_dims; d++) {
            numel *= (uint64_t) t->shape[d];
        }
        if (t->data < data || t->nbytes > size || (size_t) (t->data - data) > size - t->nbytes ||
            t->numel != numel || t->nbytes != numel * (uint64_t) vae_dtype_bits(t->dtype) / 8) {
            fprintf(stderr, "tensor '%s' (%" PRIu64 " bytes) is not inside the input or has a wrong size\n", t->name,
                    t->nbytes);
            abort();
        }
        for (uint64_t k = 0; k < t->nbytes; k++) {
            sum ^= t->data[k];
        }
    }
    vae_st_header_free(hdr);
    return 0;
}
