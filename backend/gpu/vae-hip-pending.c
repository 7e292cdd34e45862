// [hip-build] TEMPORARY, deleted when vae-gpu-conv.cu and vae-gpu-attention.cu join the HIP kernel
// list (kernels/meson.build) with their AMD main loops: the HIP build's conv and attention entries,
// which until then refuse every launch (hipErrorNotSupported), so that the HIP backend links.

#include "vae-kernels.h"

size_t vae_gpu_conv_packed_count(int cout, int cin, int k, int kt, bool up) {
    (void) cout, (void) cin, (void) k, (void) kt, (void) up;
    return 1;
}

void vae_gpu_conv_pack(const float * w, int cout, int cin, int k, int kt, bool up, enum vae_precision p, void * dst) {
    (void) w, (void) cout, (void) cin, (void) k, (void) kt, (void) up, (void) p, (void) dst;
}

int vae_gpu_conv_variants(enum vae_precision p, int cc) {
    (void) p, (void) cc;
    return 1;
}

const char * vae_gpu_conv_variant_name(enum vae_precision p, int variant) {
    (void) p, (void) variant;
    return "none (the HIP conv is not built yet)";
}

cudaError_t vae_gpu_conv(const struct vae_gpu_conv_args * a, enum vae_precision p, cudaStream_t s) {
    (void) a, (void) p, (void) s;
    return cudaErrorNotSupported;
}

size_t vae_gpu_attention_scratch(struct vae_gpu_act qkv, enum vae_precision p) {
    (void) qkv, (void) p;
    return 0;
}

cudaError_t vae_gpu_attention(struct vae_gpu_act qkv, struct vae_gpu_act y, void * scratch, enum vae_precision p,
                              cudaStream_t s) {
    (void) qkv, (void) y, (void) scratch, (void) p, (void) s;
    return cudaErrorNotSupported;
}
