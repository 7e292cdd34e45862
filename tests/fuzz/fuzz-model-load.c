// libFuzzer target for the model loader: arbitrary bytes as a model file, through everything a
// load does (safetensors header, family detection, naming, shapes, the check build, which makes
// and checks the data of every weight a graph uses) and the latent constants. The bytes go to a
// memfd that vae_model_load opens by its /proc path, so the file checks run as for a real file.
// Besides crashes and sanitizer reports it flags a refusal without a message. tests/fuzz/README.md
// says how to run it; fuzz-main.c runs it over files without libFuzzer.

#include "vae-model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static int fd = -1; // one memfd for every input
    if (fd < 0 && (fd = memfd_create("fuzz-model", MFD_CLOEXEC)) < 0) {
        perror("memfd_create");
        abort();
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t) size) {
        perror("writing the memfd");
        abort();
    }
    char path[64], err[1024] = "";
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    struct vae_model * m = vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err));
    if (m == NULL && err[0] == '\0') {
        fprintf(stderr, "refused without a message\n");
        abort();
    }
    if (m != NULL) {
        const size_t n   = (size_t) m->latent_channels * 4; // the most channels a latent space has
        float *      div = malloc(n * sizeof(float)), * add = malloc(n * sizeof(float));
        if (div && add) {
            vae_model_space_affine(m, VAE_SPACE_RAW, div, add, err, sizeof(err));
            vae_model_space_affine(m, VAE_SPACE_NORMALIZED, div, add, err, sizeof(err));
        }
        free(div);
        free(add);
    }
    vae_model_free(m);
    return 0;
}
