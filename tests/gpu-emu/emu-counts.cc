// emu-counts: the emulator's counters (README.md here, "Counters") over a real decode at its real
// shape: a model's decoder graph of one latent frame (or --chunk C) on the emulated sm_86 (emu-counts-sm90:
// sm_90, whose 16-bit convs run on the Hopper tiles, wgmma and TMA, counted too) through the CUDA
// backend, step T of a stream of random latents (the stream's first graph, then the later one
// where the model has two), a sample of blocks per launch run and the counts scaled by the grid.
// It prints per launch the graph node it belongs to (op, weight, output shape), a conv's tile and
// the share of the outputs it computes that are padding (its last tiles' rows and channels past
// the layer's), the grid and block, the mma per shape, the ldmatrix and 16-byte shared writes with
// the wavefronts each takes (4 at the fewest), barriers, device-to-device copies, and the
// shared-memory bytes per mma; then, per GPU kind (sm_75 .. sm_120, gfx1100, gfx942: README.md
// here, "Per target", cites the figures), what the launches that multiply make of it: the waves of
// blocks over its SMs, and the ceiling their shared-memory traffic sets, as a fraction of its mma
// peak. These are the kernels' own counts and bounds, not a time estimate. The kernels here are not
// instrumented: their plain loads and stores are not counted (test-counters and the race build are).
// Each conv takes the tile VAE_GPU_CONV_VARIANT names: a number (the narrow conv's and others'
// shapes it cannot run take the next), or `fit`, the tile that computes the fewest outputs per
// layer (timing every tile at prepare, as a GPU does, means little on the emulator).
//
//   VAE_GPU_CONV_VARIANT=fit emu-counts MODEL HxW [--frames T] [--chunk C] [--sample N]
//                                       [--precision bf16|fp16|fp32|tf32]
//                                       [--target ARCH]   (the target of the per-launch columns; sm_86)
// --chunk: the later steps' latent frames (1; a GPU session's chunk-frames 0 takes 2)
// (not for a decoder that looks ahead, LTX-2's: its first graph takes several latent frames)

#include "vae-backend.h"
#include "vae-kernels.h"
#include "vae-model.h"

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

// the bytes node i of g must move at least: its activation inputs and its output once each, and its
// weights, at the storage precision p, channels unpadded. A GroupNorm that computes its own
// statistics reads its input twice (the statistics, then the apply). Unless `apart` (as if each
// norm ran alone): an RMS norm a conv computes in its epilogue reads nothing, the conv writing the
// norm's output in place of its own, or to the norm's block beside its own (its output only); a
// GroupNorm whose statistics its conv gives reads its input once
static double emu_node_bytes(vae_backend_t * b, const struct vae_graph * g, int i, enum vae_precision p, bool apart) {
    const struct vae_tensor * t     = g->nodes[i];
    const char *              impl  = vae_backend_node_impl(b, g, i);
    const bool                fused = !apart && impl && !strncmp(impl, "in the conv's epilogue", 22);
    if (t->op == VAE_OP_INPUT || (fused && !strcmp(impl, "in the conv's epilogue"))) {
        return 0.0;
    }
    const double e = p == VAE_PRECISION_FP16 || p == VAE_PRECISION_BF16 ? 2.0 : 4.0;
    double       n = (double) t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    const bool gn_stats = t->op == VAE_OP_GROUP_NORM && !t->src[3] &&
                          (apart || !impl || strcmp(impl, "statistics in the conv's epilogue"));
    if (gn_stats) {
        n += (double) t->src[0]->ne[0] * t->src[0]->ne[1] * t->src[0]->ne[2] * t->src[0]->ne[3];
    }
    for (int k = 0; k < VAE_MAX_SRC && !fused; k++) {
        const struct vae_tensor * s = t->src[k];
        if (s) {
            double m = 1.0;
            for (int d = 0; d < VAE_MAX_DIMS; d++) {
                m *= (double) s->ne[d];
            }
            n += m;
        }
    }
    return n * e;
}

int main(int argc, char ** argv) {
    char               err[512] = "";
    int                h = 0, w = 0, frames = 1, chunk = 1;
    unsigned           sample = 2;
    enum vae_precision prec   = VAE_PRECISION_BF16;
    const emu_target * tgt    = &emu_targets[__CUDA_ARCH__ == 900 ? 4 : 2];   // the emulated device's kind
    if (argc < 3 || sscanf(argv[2], "%dx%d", &h, &w) != 2 || h <= 0 || w <= 0) {
        fprintf(stderr, "usage: %s MODEL HxW(latent) [--frames T] [--chunk C] [--sample N] "
                "[--precision bf16|fp16|fp32|tf32] [--target ARCH]\n", argv[0]);
        return 2;
    }
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--frames")) {
            frames = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "--chunk")) {
            chunk = atoi(argv[i + 1]) > 1 ? atoi(argv[i + 1]) : 1;
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
    if (m->lookahead > 0) {
        fprintf(stderr, "emu-counts: %s looks ahead %d latent frames: its first graph takes several\n", argv[1],
                m->lookahead);
        return 1;
    }
    // the stream's graphs: its first step's (where the model has one apart) and the later steps'
    struct vae_graph * first = m->first_apart ? vae_model_build_graph(m, 1, h, w, true, err, sizeof(err)) : nullptr;
    struct vae_graph * later = !m->first_apart || first ? vae_model_build_graph(m, chunk, h, w, false, err, sizeof(err))
                                                        : nullptr;
    vae_state_t *      st    = nullptr;
    bool               ok    = later && (!first || vae_backend_graph_prepare(b, first, 0, err, sizeof(err))) &&
                vae_backend_graph_prepare(b, later, 0, err, sizeof(err)) &&
                (!later->n_states || (st = vae_backend_state_new(b, later, err, sizeof(err))));
    if (!ok) {
        fprintf(stderr, "emu-counts: %s\n", err);
        return 1;
    }
    const int          C = m->latent_channels;
    std::vector<float> lat((size_t) chunk * C * h * w);   // (the first step reads the first frame)
    uint64_t           rs = 1;
    for (float & v : lat) { // uniform in [-1, 1)
        rs = rs * 6364136223846793005ull + 1442695040888963407ull;
        v  = (float) ((rs >> 40) * (2.0 / (1ull << 24))) - 1.0f;
    }
    printf("%s, latent %dx%dx%d, %s on %s; step %d (of %d latent frames), %u blocks of each launch run\n", argv[1], C,
           h, w, vae_precision_name(vae_backend_precision(b)), vae_backend_name(b), frames - 1,
           frames == 1 && first ? 1 : chunk, sample);
    // every step sampled (the real shapes take long), the last counted with an event between its
    // nodes (vae_graph.node_ms: launched directly), which the emulator records among the launches
    struct vae_graph * g = later;
    std::vector<float> node_ms(later->n_nodes + (first ? first->n_nodes : 0));
    for (int t = 0; t < frames && ok; t++) {
        g = t == 0 && first ? first : later;
        vae_emu_counts_start(sample);
        g->node_ms = t == frames - 1 ? node_ms.data() : nullptr;
        ok         = vae_backend_graph_compute(b, g, st, lat.data(), err, sizeof(err));
        g->node_ms = nullptr;
    }
    if (!ok) {
        fprintf(stderr, "emu-counts: %s\n", err);
        return 1;
    }
    const vae_emu_counts * r = nullptr;
    const size_t           n = vae_emu_counts_read(&r);
    vae_emu_counts_stop();
    printf("%4s %-15s %-30s %-20s %-24s %5s %11s %4s %12s %12s %6s %12s %6s %10s %12s %10s %12s %9s  %s: %6s %5s %5s\n",
           "#", "op", "weight", "out [N,C,H,W]", "conv tile", "pad", "grid", "blk", "mma k16", "ldmatrix", "wf/in",
           "16B writes", "wf/in", "barriers", "d2d bytes", "wgmma", "TMA bytes", "smem B/mma", tgt->arch, "waves", "use",
           "ceil");
    const size_t        nt = sizeof(emu_targets) / sizeof(emu_targets[0]);
    std::vector<double> t_ceil(nt), t_use(nt), t_min(nt, INFINITY);   // per target, over the launches that multiply
    double              tot_mma = 0, tot_wf = 0, tot_conflict = 0, tot_d2d = 0, tot_out = 0, tot_pad = 0, most_pad = 0;
    double              tot_wg_flop = 0, tot_wg_smem = 0, tot_tma = 0, tot_tma_flop = 0;   // sm_90a's launches
    const char *        most_at = "-";
    int                 node = -1;   // the node whose launches follow (-1: before the first event)
    for (size_t i = 0; i < n; i++) {
        const vae_emu_counts & c = r[i];
        if (!strcmp(c.name, "cudaEventRecord")) {
            node++;
            continue;
        }
        const struct vae_tensor * nd     = node >= 0 && node < g->n_nodes ? g->nodes[node] : nullptr;
        const double              all    = (double) c.grid[0] * c.grid[1] * c.grid[2];
        const double              scale  = c.blocks ? all / (double) c.blocks : 0.0;
        // (a wgmma as the m16n8k16 of its FLOP; its operand reads and the tensor copies' writes as
        // shared wavefronts of 128 bytes)
        const double mma = scale * ((double) (c.mma[0] + c.mma[1] + c.mma[3] + c.mma[2] / 2.0) + c.wgmma_flop / 4096.0);
        const double wf  = scale * ((double) (c.ldsm_wavefronts + c.st16_wavefronts) + (c.wgmma_smem + c.tma_bytes) / 128.0);
        const double              bpm    = mma > 0 ? wf * 128.0 / mma : 0.0;
        const unsigned            thread = c.block[0] * c.block[1] * c.block[2];
        char                      grid[40], fit[40] = "", shape[48] = "", tile[32] = "", pad[16] = "";
        snprintf(grid, sizeof(grid), "%ux%ux%u", c.grid[0], c.grid[1], c.grid[2]);
        if (nd) {
            snprintf(shape, sizeof(shape), "[%lld,%lld,%lld,%lld]", (long long) nd->ne[0], (long long) nd->ne[1],
                     (long long) nd->ne[2], (long long) nd->ne[3]);
        }
        // a conv's tile, and the share of what it computes past the layer's rows and channels
        const char * impl = nd ? vae_backend_node_impl(b, g, node) : nullptr;
        if (impl && !strncmp(c.name, "vae_gpu_conv", 12)) {
            int bm = 0, bn = 0, warps = 0;
            for (int v = 0; v < vae_gpu_conv_variants(prec, __CUDA_ARCH__ / 10); v++) {
                if (!strcmp(vae_gpu_conv_variant_name(prec, v), impl)) {
                    vae_gpu_conv_variant_tile(prec, v, &bm, &bn, &warps);
                }
            }
            const double useful = (double) nd->ne[0] * nd->ne[1] * nd->ne[2] * nd->ne[3];
            const double work   = all * bm * (bn ? bn : (double) nd->ne[1]);
            const double p      = work > 0 ? 1.0 - useful / work : 0.0;
            snprintf(tile, sizeof(tile), "%s", impl);
            snprintf(pad, sizeof(pad), "%4.1f%%", 100.0 * p);
            tot_out += work;
            tot_pad += work - useful;
            if (p > most_pad) {
                most_pad = p;
                most_at  = nd->name ? nd->name : vae_op_name(nd->op);
            }
        }
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
        printf("%4d %-15.15s %-30.30s %-20s %-24.24s %5s %11s %4u %12.0f %12.0f %6.2f %12.0f %6.2f %10.0f %12llu %10.0f "
               "%12.0f %9.1f  %*s%s\n",
               node, nd ? vae_op_name(nd->op) : c.name, nd && nd->name ? nd->name : "-", shape, tile, pad,
               c.d2d_bytes ? "" : grid, thread, mma, scale * (double) c.ldsm,
               c.ldsm ? (double) c.ldsm_wavefronts / (double) c.ldsm : 0.0, scale * (double) c.st16,
               c.st16 ? (double) c.st16_wavefronts / (double) c.st16 : 0.0, scale * (double) c.barriers, c.d2d_bytes,
               scale * (double) c.wgmma, scale * (double) c.tma_bytes, bpm, (int) strlen(tgt->arch) + 2, "", fit);
        tot_mma += mma;
        tot_wf += wf;
        tot_conflict += scale * (double) (c.ldsm_wavefronts - 4 * c.ldsm + c.st16_wavefronts - 4 * c.st16);
        tot_d2d += (double) c.d2d_bytes;
        tot_wg_flop += scale * (double) c.wgmma_flop;
        tot_wg_smem += scale * (double) c.wgmma_smem;
        tot_tma += scale * (double) c.tma_bytes;
        tot_tma_flop += c.tma_bytes ? scale * (double) c.wgmma_flop : 0.0;
    }
    printf("total: %.4g mma (m16n8k16 or its equal), %.4g shared wavefronts of ldmatrix and 16-byte writes (%.4g of "
           "them conflicts), %.1f shared bytes per mma, %.4g bytes copied device to device\n",
           tot_mma, tot_wf, tot_conflict, tot_mma > 0 ? tot_wf * 128.0 / tot_mma : 0.0, tot_d2d);
    if (tot_wg_flop > 0) {
        // the Hopper convs' main loops per wgmma FLOP: the shared operand bytes wgmma reads and the
        // bytes TMA brings, as the bytes per clock and SM an H100 would need at its bf16 peak (4096
        // FLOP a clock and SM: 128 shared bytes a clock feed it; L2's bytes a clock are for the
        // first lent GPU to measure)
        const double peak = emu_targets[4].flop_clk;
        printf("wgmma: %.4g FLOP (%.1f%% of the step's multiplies), reading %.1f shared bytes a clock and SM at the sm_90 "
               "peak (its shared memory gives %.0f); TMA brings %.1f bytes a clock and SM at that peak\n", tot_wg_flop,
               100.0 * tot_wg_flop / (4096.0 * tot_mma), tot_wg_smem / tot_wg_flop * peak, emu_targets[4].smem_clk,
               tot_tma_flop > 0 ? tot_tma / tot_tma_flop * peak : 0.0);
    }
    printf("conv padding: %.1f%% of the outputs the convs compute; the most on one layer %.1f%% (%s)\n",
           tot_out > 0 ? 100.0 * tot_pad / tot_out : 0.0, 100.0 * most_pad, most_at);
    double moved = 0.0, apart = 0.0;
    int    fused = 0, gn_fused = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const char * impl = vae_backend_node_impl(b, g, i);
        moved += emu_node_bytes(b, g, i, prec, false);
        apart += emu_node_bytes(b, g, i, prec, true);
        fused += impl && !strncmp(impl, "in the conv's epilogue", 22);
        gn_fused += impl && !strcmp(impl, "statistics in the conv's epilogue");
    }
    printf("global bytes the step's nodes must move at least (each activation read once by each reader and written "
           "once, a GroupNorm's input twice where it computes its statistics, weights once; a model, not counted): "
           "%.4g with %d RMS norms in their conv's epilogue and %d GroupNorms' statistics, %.4g with every norm "
           "apart (%.1f%% fewer)\n", moved, fused, gn_fused, apart, apart > 0 ? 100.0 * (1.0 - moved / apart) : 0.0);
    // per target, weighted by each launch's mma: the share of its whole waves' slots used, and the
    // ceiling of the shared traffic (the least of any launch too)
    printf("per target (use: blocks over the slots of whole waves; ceiling: of the mma peak, set by the shared traffic "
           "counted above; weighted by mma):\n");
    for (size_t t = 0; t < nt && tot_mma > 0; t++) {
        const emu_target & g = emu_targets[t];
        if (tot_wg_flop > 0 && t != 4) {
            continue;   // (the Hopper tiles run on sm_90 alone)
        }
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
    vae_backend_state_free(b, st);
    vae_graph_free(first);
    vae_graph_free(later);
    vae_backend_free(b);
    vae_model_free(m);
    return 0;
}
