// emu-counts: the emulator's counters (README.md here, "Counters") over a real decode at its real
// shape: a model's decoder on the emulated sm_86 through the CUDA backend, one step of a stream of
// random latents, a sample of blocks per launch run and the counts scaled by the grid. It prints
// per launch the tile of work (grid, block), the mma per shape, the ldmatrix and 16-byte shared
// writes with the wavefronts each takes (4 at the fewest), barriers, device-to-device copies, and
// the shared-memory bytes per mma. These are the kernels' own counts, not a time estimate. The
// kernels here are not instrumented: their plain loads and stores are not counted (test-counters
// and the race build are).
//
//   VAE_GPU_CONV_VARIANT=3 emu-counts MODEL HxW [--frames T] [--sample N] [--precision bf16|fp16|fp32|tf32]

#include "vae-backend.h"
#include "vae-model.h"
#include "vae-session.h"

#include "gpu-emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

int main(int argc, char ** argv) {
    char               err[512] = "";
    int                h = 0, w = 0, frames = 1;
    unsigned           sample = 2;
    enum vae_precision prec   = VAE_PRECISION_BF16;
    if (argc < 3 || sscanf(argv[2], "%dx%d", &h, &w) != 2 || h <= 0 || w <= 0) {
        fprintf(stderr, "usage: %s MODEL HxW(latent) [--frames T] [--sample N] [--precision bf16|fp16|fp32|tf32]\n",
                argv[0]);
        return 2;
    }
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--frames")) {
            frames = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "--sample")) {
            sample = (unsigned) atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "--precision")) {
            prec = !strcmp(argv[i + 1], "fp32")   ? VAE_PRECISION_FP32
                   : !strcmp(argv[i + 1], "tf32") ? VAE_PRECISION_TF32
                   : !strcmp(argv[i + 1], "fp16") ? VAE_PRECISION_FP16
                                                  : VAE_PRECISION_BF16;
        }
    }
    struct vae_model * m = vae_model_load(argv[1], VAE_FAMILY_AUTO, err, sizeof(err));
    vae_backend_t *    b = m ? vae_backend_init(VAE_BACKEND_CUDA, 0, prec, err, sizeof(err)) : nullptr;
    if (!b) {
        fprintf(stderr, "emu-counts: %s\n", err);
        return 1;
    }
    const int                 C   = m->latent_channels;
    struct vae_session_config cfg = { C, h, w, VAE_SPACE_AUTO, 1, 0, 0, nullptr };
    struct vae_session *      s   = vae_session_new(m, b, &cfg, err, sizeof(err));
    if (!s) {
        fprintf(stderr, "emu-counts: session: %s\n", err);
        return 1;
    }
    std::vector<float> lat((size_t) C * h * w);
    std::vector<float> out((size_t) m->out_channels * m->scale * h * m->scale * w);
    uint64_t           st = 1;
    for (float & v : lat) { // uniform in [-1, 1)
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        v  = (float) ((st >> 40) * (2.0 / (1ull << 24))) - 1.0f;
    }
    printf("%s, latent %dx%dx%d, %s on %s; a step of frame %d, %u blocks of each launch run\n", argv[1], C, h, w,
           vae_precision_name(vae_backend_precision(b)), vae_backend_name(b), frames - 1, sample);
    for (int t = 0; t < frames; t++) { // (every step sampled, as the real shapes take long; the last one kept)
        vae_emu_counts_start(sample);
        bool ok = vae_session_push(s, lat.data(), err, sizeof(err));
        while (ok && vae_session_frames_ready(s) > 0) { // (the frames, raw, only to make room)
            ok = vae_session_pop_output(s, out.data(), err, sizeof(err));
        }
        if (!ok) {
            fprintf(stderr, "emu-counts: %s\n", err);
            return 1;
        }
    }
    const vae_emu_counts * r = nullptr;
    const size_t           n = vae_emu_counts_read(&r);
    vae_emu_counting         = false;
    printf("%-34s %14s %6s %12s %12s %8s %12s %8s %10s %12s %9s\n", "launch", "grid", "block", "mma k16", "ldmatrix",
           "wf/ins", "16B writes", "wf/ins", "barriers", "d2d bytes", "smem B/mma");
    double tot_mma = 0, tot_wf = 0, tot_conflict = 0, tot_d2d = 0;
    for (size_t i = 0; i < n; i++) {
        const vae_emu_counts & c     = r[i];
        const double           all   = (double) c.grid[0] * c.grid[1] * c.grid[2];
        const double           scale = c.blocks ? all / (double) c.blocks : 0.0;
        const double           mma   = scale * (double) (c.mma[0] + c.mma[1] + c.mma[3] + c.mma[2] / 2.0);
        const double           wf    = scale * (double) (c.ldsm_wavefronts + c.st16_wavefronts);
        char                   grid[40];
        snprintf(grid, sizeof(grid), "%ux%ux%u", c.grid[0], c.grid[1], c.grid[2]);
        printf("%-34.34s %14s %6u %12.0f %12.0f %8.2f %12.0f %8.2f %10.0f %12llu %9.1f\n", c.name, c.d2d_bytes ? "" : grid,
               c.block[0] * c.block[1] * c.block[2], mma, scale * (double) c.ldsm,
               c.ldsm ? (double) c.ldsm_wavefronts / (double) c.ldsm : 0.0, scale * (double) c.st16,
               c.st16 ? (double) c.st16_wavefronts / (double) c.st16 : 0.0, scale * (double) c.barriers, c.d2d_bytes,
               mma > 0 ? wf * 128.0 / mma : 0.0);
        tot_mma += mma;
        tot_wf += wf;
        tot_conflict += scale * (double) (c.ldsm_wavefronts - 4 * c.ldsm + c.st16_wavefronts - 4 * c.st16);
        tot_d2d += (double) c.d2d_bytes;
    }
    printf("total: %.4g mma (m16n8k16 or its equal), %.4g shared wavefronts of ldmatrix and 16-byte writes (%.4g of "
           "them conflicts), %.1f shared bytes per mma, %.4g bytes copied device to device\n",
           tot_mma, tot_wf, tot_conflict, tot_mma > 0 ? tot_wf * 128.0 / tot_mma : 0.0, tot_d2d);
    vae_session_free(s);
    vae_backend_free(b);
    vae_model_free(m);
    return 0;
}
