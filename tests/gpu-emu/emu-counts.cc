// emu-counts: the emulator's counters (README.md here, "Counters") over a real decode at its real
// shape: a model's decoder on the emulated sm_86 through the CUDA backend, one step of a stream of
// random latents, a sample of blocks per launch run and the counts scaled by the grid. It prints
// per launch the tile of work (grid, block), the mma per shape, the ldmatrix and 16-byte shared
// writes with the wavefronts each takes (4 at the fewest), barriers, device-to-device copies, and
// the shared-memory bytes per mma; then, per GPU kind (sm_75 .. sm_120, gfx1100, gfx942: README.md
// here, "Per target", cites the figures), what the launches that multiply make of it: the waves of
// blocks over its SMs, and the ceiling their shared-memory traffic sets, as a fraction of its mma
// peak. These are the kernels' own counts and bounds, not a time estimate. The kernels here are not
// instrumented: their plain loads and stores are not counted (test-counters and the race build are).
//
//   VAE_GPU_CONV_VARIANT=3 emu-counts MODEL HxW [--frames T] [--sample N] [--precision bf16|fp16|fp32|tf32]
//                                     [--target ARCH]   (the target of the per-launch columns; sm_86)

#include "vae-backend.h"
#include "vae-model.h"
#include "vae-session.h"

#include "gpu-emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <vector>

// a GPU kind, per SM (AMD: per CU) and clock (README.md here, "Per target", for the sources)
struct emu_target {
    const char * arch, *product;
    int          sms;
    double       flop_clk;     // dense FP16/BF16 matrix FLOP, FP32 accumulate
    double       smem_clk;     // shared-memory (LDS) bytes; 0: no vendor figure
    double       smem_sm;      // shared memory for blocks, bytes
    int          threads_sm;   // resident threads
};
static const emu_target emu_targets[] = {
    { "sm_75", "T4", 40, 1024, 128, 64 * 1024, 1024 },
    { "sm_80", "A100 SXM", 108, 2048, 128, 164 * 1024, 2048 },
    { "sm_86", "RTX 3090", 82, 512, 128, 100 * 1024, 1536 },
    { "sm_89", "RTX 4090", 128, 512, 128, 100 * 1024, 1536 },
    { "sm_90", "H100 SXM5", 132, 4096, 128, 228 * 1024, 2048 },
    { "sm_120", "RTX 5090", 170, 512, 128, 100 * 1024, 1536 },
    { "gfx1100", "RX 7900 XTX", 96, 512, 0, 64 * 1024, 1024 },
    { "gfx942", "MI300X", 304, 2048, 128, 64 * 1024, 2048 },
};

// a launch of `blocks` blocks of `threads` threads and `smem` shared bytes on target t, with `bpm`
// shared bytes per mma: its waves over the SMs (blocks resident by threads and shared memory alone,
// registers not counted: an upper bound), the share of the slots of its whole waves it uses, and
// the ceiling its shared traffic sets on the mma rate (NAN where t has no bandwidth figure)
struct emu_fit {
    double waves, use, ceiling;
};
static emu_fit emu_fit_on(const emu_target & t, double blocks, unsigned threads, size_t smem, double bpm) {
    double per_sm = std::floor((double) t.threads_sm / threads);
    if (smem > 0) {
        per_sm = std::fmin(per_sm, std::floor(t.smem_sm / (double) smem));
    }
    emu_fit f;
    const double slots = per_sm * t.sms;
    f.waves            = slots > 0 ? blocks / slots : INFINITY;
    f.use              = slots > 0 ? blocks / (std::ceil(f.waves) * slots) : 0.0;
    f.ceiling          = t.smem_clk > 0 && bpm > 0 ? std::fmin(1.0, t.smem_clk * 4096.0 / (bpm * t.flop_clk)) : NAN;
    return f;
}

int main(int argc, char ** argv) {
    char               err[512] = "";
    int                h = 0, w = 0, frames = 1;
    unsigned           sample = 2;
    enum vae_precision prec   = VAE_PRECISION_BF16;
    const emu_target * tgt    = &emu_targets[2];
    if (argc < 3 || sscanf(argv[2], "%dx%d", &h, &w) != 2 || h <= 0 || w <= 0) {
        fprintf(stderr, "usage: %s MODEL HxW(latent) [--frames T] [--sample N] [--precision bf16|fp16|fp32|tf32] "
                "[--target ARCH]\n", argv[0]);
        return 2;
    }
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--frames")) {
            frames = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "--sample")) {
            sample = (unsigned) atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "--target")) {
            tgt = nullptr;
            for (const emu_target & t : emu_targets) {
                tgt = !strcmp(t.arch, argv[i + 1]) ? &t : tgt;
            }
            if (!tgt) {
                fprintf(stderr, "emu-counts: --target %s: one of sm_75, sm_80, sm_86, sm_89, sm_90, sm_120, gfx1100, "
                        "gfx942\n", argv[i + 1]);
                return 2;
            }
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
    vae_emu_counts_stop();
    printf("%-34s %14s %6s %12s %12s %8s %12s %8s %10s %12s %9s  %s: %6s %5s %5s\n", "launch", "grid", "block",
           "mma k16", "ldmatrix", "wf/ins", "16B writes", "wf/ins", "barriers", "d2d bytes", "smem B/mma", tgt->arch,
           "waves", "use", "ceil");
    const size_t        nt = sizeof(emu_targets) / sizeof(emu_targets[0]);
    std::vector<double> t_ceil(nt), t_use(nt), t_min(nt, INFINITY);   // per target, over the launches that multiply
    double              tot_mma = 0, tot_wf = 0, tot_conflict = 0, tot_d2d = 0;
    for (size_t i = 0; i < n; i++) {
        const vae_emu_counts & c      = r[i];
        const double           all    = (double) c.grid[0] * c.grid[1] * c.grid[2];
        const double           scale  = c.blocks ? all / (double) c.blocks : 0.0;
        const double           mma    = scale * (double) (c.mma[0] + c.mma[1] + c.mma[3] + c.mma[2] / 2.0);
        const double           wf     = scale * (double) (c.ldsm_wavefronts + c.st16_wavefronts);
        const double           bpm    = mma > 0 ? wf * 128.0 / mma : 0.0;
        const unsigned         thread = c.block[0] * c.block[1] * c.block[2];
        char                   grid[40], fit[40] = "";
        snprintf(grid, sizeof(grid), "%ux%ux%u", c.grid[0], c.grid[1], c.grid[2]);
        if (mma > 0) {
            for (size_t t = 0; t < nt; t++) {
                const emu_fit f = emu_fit_on(emu_targets[t], all, thread, c.smem, bpm);
                t_ceil[t] += mma * f.ceiling;
                t_use[t] += mma * f.use;
                t_min[t] = std::fmin(t_min[t], f.ceiling);
                if (&emu_targets[t] == tgt) {
                    snprintf(fit, sizeof(fit), "%6.2f %4.0f%% %4.0f%%", f.waves, 100.0 * f.use, 100.0 * f.ceiling);
                }
            }
        }
        printf("%-34.34s %14s %6u %12.0f %12.0f %8.2f %12.0f %8.2f %10.0f %12llu %9.1f  %*s%s\n", c.name,
               c.d2d_bytes ? "" : grid, thread, mma, scale * (double) c.ldsm,
               c.ldsm ? (double) c.ldsm_wavefronts / (double) c.ldsm : 0.0, scale * (double) c.st16,
               c.st16 ? (double) c.st16_wavefronts / (double) c.st16 : 0.0, scale * (double) c.barriers, c.d2d_bytes, bpm,
               (int) strlen(tgt->arch) + 2, "", fit);
        tot_mma += mma;
        tot_wf += wf;
        tot_conflict += scale * (double) (c.ldsm_wavefronts - 4 * c.ldsm + c.st16_wavefronts - 4 * c.st16);
        tot_d2d += (double) c.d2d_bytes;
    }
    printf("total: %.4g mma (m16n8k16 or its equal), %.4g shared wavefronts of ldmatrix and 16-byte writes (%.4g of "
           "them conflicts), %.1f shared bytes per mma, %.4g bytes copied device to device\n",
           tot_mma, tot_wf, tot_conflict, tot_mma > 0 ? tot_wf * 128.0 / tot_mma : 0.0, tot_d2d);
    // per target, weighted by each launch's mma: the share of its whole waves' slots used, and the
    // ceiling of the shared traffic (the least of any launch too)
    printf("per target (use: blocks over the slots of whole waves; ceiling: of the mma peak, set by the shared traffic "
           "counted above; weighted by mma):\n");
    for (size_t t = 0; t < nt && tot_mma > 0; t++) {
        const emu_target & g = emu_targets[t];
        printf("  %-8s %-12s %3d SMs, %4.0f FLOP, %3.0f shared B per clock and SM: use %3.0f%%, ceiling ", g.arch,
               g.product, g.sms, g.flop_clk, g.smem_clk, 100.0 * t_use[t] / tot_mma);
        if (g.smem_clk > 0) {
            printf("%3.0f%% (least %3.0f%%)", 100.0 * t_ceil[t] / tot_mma, 100.0 * t_min[t]);
        } else {
            printf("- (no shared-memory bandwidth figure)");
        }
        // (an AMD device runs its own loads of the same tiles, in waves of its width: not what is counted here)
        printf("%s\n", g.arch[0] == 'g' ? "; from the NVIDIA kernels' counts" : "");
    }
    vae_session_free(s);
    vae_backend_free(b);
    vae_model_free(m);
    return 0;
}
