// The ops suite of the CUDA backend, ggml's test-backend-ops habit: every op as a small graph
// (vae_graph_* builders, seeded random weights and inputs) run on the CPU backend, which is the
// fp32 reference, and on the CUDA backend at each precision it has; the outputs
// (vae_backend_graph_read_output) are compared with NMSE = sum (out - ref)^2 / sum ref^2, one line
// per case and precision. Shapes are small and odd on purpose (h, w of 1, 3, 7, 13, 33; channels
// 3 to 130, mostly not multiples of the GPU's 16-lane padding; several frames). VAE_GPU_POISON=1
// makes the backend fill every activation buffer with NaN at prepare, so an element that a kernel
// forgets to write shows as a NaN, which always fails.
//
// Covered: conv2d (k 1/3, bias, residual, act), upsample_conv2d fused and unfused, upsample2x,
// causal conv3d streamed in chunks through one state (and again after a reset), group_norm (groups,
// eps, act, large values, given statistics), rms_norm, attention (head dims 5 to 512, odd position
// counts), tanh_clamp, frame_split, pixel_shuffle, depthwise_conv2d, DC-AE's ops (rms_norm_eps with
// bias and residual, grouped conv2d, linear_attention in both forms with a zero denominator and a
// NaN, glu, an EfficientViT block and head), SVD's group_norm over all frames and time_conv,
// MiniMax-H3's ViT ops (attention in heads of 5 to 64 channels over up to 130 tokens, layer_norm,
// tokens and untokens, rope on token grids with extra tokens, the four in one graph, a crossfade
// streamed in chunks through one state and again after a reset), graphs of several inputs, small
// decoders and an attention block, NaN propagation, read_frame bytes in every pixel format (host
// frames; device frames where the build gives this program the CUDA runtime), graph reuse, and the
// refusals (device number, memory limit, a state of other shapes), the cancel flag (a set flag
// stops a compute before it launches anything, replayed or direct); a large conv in two contexts of
// one device, a backend whose context is gone, the packed weights in the memory count, and an error
// left in the runtime's last-error slot by another call.
//
// Data: inputs and weights are drawn on the bf16 grid (8 significant bits, no fp16 subnormals),
// so every precision stores them exactly and the comparison measures the GPU's own rounding
// (stored intermediates and outputs, tf32 operands), not the conversion of the inputs, which a
// normalisation would amplify (the GroupNorm of values near 100 divides by their spread of 1).
//
// Tolerances. One rounding to a format of unit roundoff u makes a relative error spread evenly
// over [-u, u]: an NMSE of u^2 / 3, that is 1.3e-6 for bf16 (u = 2^-9) and 8e-8 for fp16 and for
// a tf32 operand (u = 2^-11). A case holds a few such roundings (the output, stored
// intermediates, both operands of each product), so the limits leave room for 30 to 100 of them:
// bf16 1e-4, fp16 1e-5, tf32 5e-6. fp32 is fp32 arithmetic in another order than the CPU's
// (relative error about 2^-24 sqrt(K) for sums of K terms, __expf in softmax and SiLU): 1e-9.
// NMSE averages a single wrong element away, so the largest error must also stay within
// 32 u max |ref| (fp32: 1e-4 max |ref|). Chains of ten or more ops get four times both limits.
// Pure copies (frame split, pixel shuffle, upsample2x, an input as the output) must be exact.
// A NaN or Inf where the reference is finite, or a finite value where it is NaN, always fails.
//
// `test-cuda-ops [WORD]` runs the sections whose name contains WORD; VAE_TEST_SEED=n draws
// other data. Without a CUDA backend in the build, or without a GPU, it exits 77 (skipped).
// Built with VAE_TEST_HIP, it is test-hip-ops: the same on the HIP backend (AMD GPUs), without
// the sections that call the CUDA runtime itself (device frames, contexts: the element gives HIP
// frames in system memory only).

#include "vae-backend.h"
#include "vae-test.h"
#include "vae-test-ops.h"
#include "vae-test-gpu.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// the emulator counts the conv kernels' shared-memory wavefronts (conv_banks): on NVIDIA devices
// always (ldmatrix, cp.async), on AMD ones where the kernels' own loads and stores are instrumented
#if defined(VAE_GPU_EMU) && (!defined(VAE_GPU_EMU_GFX) || defined(VAE_GPU_EMU_ACCESSES))
#define CONV_BANKS 1
#include "gpu-emu-counts.h"
#endif
#ifdef GPU_TEST_CUDA_RUNTIME
#include <cuda_runtime_api.h>   // device frames: cudaMalloc, cudaMemset, cudaMemcpy
#include "vae-gpu-cuda.h"       // vae_gpu_device_query: the compute capability and warp the kernels take
#include "vae-kernels.h"        // the kernels' own checks (overlaps)
#endif

#define SENTINEL  0xA5


static vae_backend_t * cpu_be;

// ---- graphs ------------------------------------------------------------------------------------

// ---- comparison --------------------------------------------------------------------------------

enum cmp_kind {
    CMP_OP,      // one op or a few
    CMP_CHAIN,   // ten or more ops: four times the limits
    CMP_EXACT,   // a pure copy: bit for bit
    CMP_F32,     // as CMP_OP, at fp32 and tf32 only: an intermediate whose 16-bit storage alone exceeds the
                 //   limits (a conv's output around 100, stored, then normalized)
};

static double nmse_limit(enum vae_precision p) {
    switch (p) {
        case VAE_PRECISION_TF32: return 5e-6;
        case VAE_PRECISION_FP16: return 1e-5;
        case VAE_PRECISION_BF16: return 1e-4;
        default:                 return 1e-9;
    }
}

// the largest error allowed, as a fraction of max |ref|
static double maxerr_limit(enum vae_precision p) {
    switch (p) {
        case VAE_PRECISION_TF32:
        case VAE_PRECISION_FP16: return 32 * 0x1p-11;
        case VAE_PRECISION_BF16: return 32 * 0x1p-9;
        default:                 return 1e-4;
    }
}

struct cmp {
    double nmse, maxerr, maxref;
    size_t bad, first_bad;   // non-finite where the reference is finite, or the reverse
    size_t n_nan;            // NaNs in the reference (matched unless bad)
    size_t differ;           // elements not bit-for-bit equal (NaN equals NaN)
};

static struct cmp compare(const float * got, const float * ref, size_t n) {
    struct cmp c   = { 0 };
    double     num = 0, den = 0;
    c.first_bad    = (size_t) -1;
    for (size_t i = 0; i < n; i++) {
        const float r = ref[i], a = got[i];
        bool        bad = false;
        if (isnan(r)) {
            c.n_nan++;
            bad = !isnan(a);   // a NaN source must stay visible
        } else if (isinf(r)) {
            bad = a != r;
        } else if (!isfinite(a)) {
            bad = true;
        } else {
            const double d = (double) a - (double) r;
            num += d * d;
            den += (double) r * r;
            c.maxerr = fabs(d) > c.maxerr ? fabs(d) : c.maxerr;
            c.maxref = fabs(r) > c.maxref ? fabs(r) : c.maxref;
        }
        c.differ += !(a == r || (isnan(a) && isnan(r)));
        if (bad && c.bad++ == 0) {
            c.first_bad = i;
        }
    }
    // the signal is taken as at least 1e-2 RMS: values here are O(1), and an output that is small
    // by cancellation would otherwise make any rounding look large
    den    = den > 1e-4 * (double) n ? den : 1e-4 * (double) n;
    c.nmse = num / den;
    return c;
}

// one line per case and precision; returns whether it passed
static bool report(const char * label, enum vae_precision p, const float * got, const float * ref, size_t n,
                   enum cmp_kind kind) {
    const char * pn = vae_precision_name(p);
    if (!got || !ref) {
        printf("%s [%s]: FAIL (did not run)\n", label, pn);
        CHECK(false, "%s [%s]: the graph did not run", label, pn);
        return false;
    }
    const struct cmp c    = compare(got, ref, n);
    const double     f    = kind == CMP_CHAIN ? 4.0 : 1.0;
    const double     nlim = f * nmse_limit(p), mlim = f * maxerr_limit(p) * (c.maxref > 1e-6 ? c.maxref : 1e-6);
    const bool       ok   = c.bad == 0 && (kind == CMP_EXACT ? c.differ == 0 : c.nmse <= nlim && c.maxerr <= mlim);
    if (kind == CMP_EXACT) {
        printf("%s [%s]: %s (%zu of %zu values differ)%s\n", label, pn, ok ? "OK" : "FAIL", c.differ, n,
               c.n_nan ? " (NaN pattern matched)" : "");
    } else {
        printf("%s [%s]: %s nmse=%.3g maxerr=%.3g max|ref|=%.3g%s\n", label, pn, ok ? "OK" : "FAIL", c.nmse, c.maxerr,
               c.maxref, c.n_nan ? " (NaN pattern matched)" : "");
    }
    CHECK(c.bad == 0, "%s [%s]: %zu non-finite mismatches, first at %zu: got %g, want %g", label, pn, c.bad,
          c.first_bad, c.bad ? got[c.first_bad] : 0.0, c.bad ? ref[c.first_bad] : 0.0);
    if (kind == CMP_EXACT) {
        CHECK(c.differ == 0, "%s [%s]: a copy changed %zu values", label, pn, c.differ);
    } else {
        CHECK(c.nmse <= nlim, "%s [%s]: nmse %.3g > %.1g", label, pn, c.nmse, nlim);
        CHECK(c.maxerr <= mlim, "%s [%s]: max abs error %.3g > %.3g", label, pn, c.maxerr, mlim);
    }
    return ok;
}

// NaN-aware bit-for-bit equality
static bool same_floats(const float * a, const float * b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) != isnan(b[i]) || (!isnan(a[i]) && a[i] != b[i])) {
            return false;
        }
    }
    return true;
}

// ---- running graphs ----------------------------------------------------------------------------

// prepare g on b, compute each of n_sets input sets (sets[s][i]: input i) and read the whole
// output of each into outs[s] (pool arrays, NULL after a failed check); then release g
static void run_sets(vae_backend_t * b, struct pool * pl, struct vae_graph * g, int n_sets,
                     const float * const * const * sets, float ** outs, const char * label) {
    char err[512] = "";
    bool ok       = vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
    CHECK(ok, "%s on %s: prepare: %s", label, vae_backend_name(b), err);
    CHECK(!ok || g->peak_bytes > 0, "%s on %s: prepare left peak_bytes at 0", label, vae_backend_name(b));
    for (int s = 0; s < n_sets; s++) {
        outs[s] = NULL;
        if (!ok) {
            continue;
        }
        ok = g->n_inputs == 1 ? vae_backend_graph_compute(b, g, NULL, sets[s][0], err, sizeof(err))
                              : vae_backend_graph_compute_inputs(b, g, NULL, sets[s], err, sizeof(err));
        CHECK(ok, "%s on %s: compute: %s", label, vae_backend_name(b), err);
        float * o = pool_add(pl, xmalloc(out_count(g) * sizeof(float)));
        ok        = ok && vae_backend_graph_read_output(b, g, 0, (int) g->output->ne[0], o, err, sizeof(err));
        CHECK(ok, "%s on %s: read_output: %s", label, vae_backend_name(b), err);
        outs[s] = ok ? o : NULL;
    }
    vae_backend_graph_release(b, g);
    CHECK(g->backend_data == NULL, "%s on %s: release left backend_data set", label, vae_backend_name(b));
}

// g on the CPU, then on the GPU at each precision, each prepared once for all input sets (a
// second set replays the prepared graph with new inputs)
static void check_sets(const char * label, struct vae_graph * g, int n_sets, const float * const * const * sets,
                       enum cmp_kind kind) {
    struct pool pl = { 0 };
    float *     ref[2], *got[2];
    run_sets(cpu_be, &pl, g, n_sets, sets, ref, label);
    for (int i = 0; ref[0] && i < N_PRECISIONS; i++) {
        const enum vae_precision p = precisions[i];
        if (!gpu[p] || (kind == CMP_F32 && (p == VAE_PRECISION_FP16 || p == VAE_PRECISION_BF16))) {
            continue;
        }
        run_sets(gpu[p], &pl, g, n_sets, sets, got, label);
        for (int s = 0; s < n_sets; s++) {
            char l[300];
            snprintf(l, sizeof(l), "%s%s", label, n_sets == 1 ? "" : s ? " (inputs 2)" : " (inputs 1)");
            report(l, p, got[s], ref[s], out_count(g), kind);
        }
    }
    pool_free(&pl);
}

static void check1(const char * label, struct vae_graph * g, const float * x, enum cmp_kind kind) {
    const float * const   inputs[1] = { x };
    const float * const * sets[1]   = { inputs };
    check_sets(label, g, 1, sets, kind);
}

// ---- conv2d ------------------------------------------------------------------------------------

static void case_conv(int N, int Ci, int Co, int H, int W, int k, bool bias, bool res, enum vae_act act) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, N, Ci, H, W);
    // a residual computed from the input (it dies at the conv: taken over in place)
    struct vae_tensor * r = res ? vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, 1, NULL), NULL, NULL, VAE_ACT_NONE) : NULL;
    struct vae_tensor * b = bias ? vec_w(g, &pl, Co, -.5f, .5f, NULL) : NULL;
    vae_graph_set_output(g, vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, k, NULL), b, r, act));
    char label[160];
    snprintf(label, sizeof(label), "conv2d(n=%d,cin=%d,cout=%d,h=%d,w=%d,k=%d%s%s,%s)", N, Ci, Co, H, W, k,
             bias ? ",bias" : "", res ? ",res" : "", act_name(act));
    check1(label, g, rnd(&pl, (size_t) N * Ci * H * W, -1, 1), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// the device's convs at precision p have the Hopper tiles (TMA and wgmma: compute capability 9.0,
// built for sm_90a), the last of their table
static bool gpu_hopper(enum vae_precision p) {
#if defined(GPU_TEST_CUDA_RUNTIME)
    struct vae_gpu_device_info info = { 0 };
    int                        dev  = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || vae_gpu_device_query(dev, &info) != cudaSuccess) {
        return false;
    }
    const int    n    = vae_gpu_conv_variants(p, info.cc);
    const char * last = n > 0 ? vae_gpu_conv_variant_name(p, n - 1) : NULL;
    return last && !strncmp(last, "wgmma-", 6);
#else
    (void) p;
    return false;
#endif
}

// 64 -> 96 -> 3 channels, 3x3, at 8 x 16
static struct vae_graph * conv_pair(struct pool * pl) {
    struct vae_graph *  g = graph_new(true);
    struct vae_tensor * x = vae_graph_input(g, 1, 64, 8, 16);
    struct vae_tensor * y = vae_graph_conv2d(g, x, conv_w(g, pl, 96, 64, 3, NULL), NULL, NULL, VAE_ACT_NONE);
    vae_graph_set_output(g, vae_graph_conv2d(g, y, conv_w(g, pl, 3, 96, 3, NULL), NULL, NULL, VAE_ACT_NONE));
    return g;
}

// VAE_GPU_CONV_VARIANT=fit: each conv on the tile that computes the fewest outputs, at 16 bits the
// tile as wide as 96 channels (on a Hopper device its wgmma one: of equal work, the larger tile
// per warp, a warpgroup multiplying as one), the narrow conv for 3 (a 128-wide tile computes a
// quarter more, 16 channels 5 times 3). On the emulated Hopper device, the autotuner without the
// driver's cuTensorMapEncodeIm2col (VAE_GPU_EMU_NO_ENTRY: a driver older than CUDA 12): its Hopper
// tiles refused at launch, left out with a notice, the conv on another tile. The variable reverts
static void test_conv_choice(void) {
    const char * forced = getenv("VAE_GPU_CONV_VARIANT");
    char         keep[32];
    snprintf(keep, sizeof(keep), "%s", forced ? forced : "");
    setenv("VAE_GPU_CONV_VARIANT", "fit", 1);
    const enum vae_precision p16[2] = { VAE_PRECISION_FP16, VAE_PRECISION_BF16 };
    for (int i = 0; i < 2; i++) {
        vae_backend_t * b = gpu[p16[i]];
        if (!b) {
            continue;
        }
        struct pool        pl       = { 0 };
        struct vae_graph * g        = conv_pair(&pl);
        char               err[512] = "";
        const bool         ok       = vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
        CHECK(ok, "fit on %s: prepare: %s", vae_backend_name(b), err);
        const char * wide   = ok ? vae_backend_node_impl(b, g, 1) : NULL;
        const char * narrow = ok ? vae_backend_node_impl(b, g, 2) : NULL;
        const char * tile = gpu_hopper(p16[i]) ? "wgmma-" : "mma-";
        CHECK(!ok || (wide && !strncmp(wide, tile, strlen(tile)) && strstr(wide, " 128x96") && narrow &&
                      strstr(narrow, "narrow-")),
              "fit on %s: 64 -> 96 channels on '%s', 96 -> 3 on '%s' (the %s 128x96 tile, the narrow conv)",
              vae_backend_name(b), wide ? wide : "-", narrow ? narrow : "-", tile);
        vae_backend_graph_release(b, g);
        vae_graph_free(g);
        pool_free(&pl);
    }
#if defined(VAE_GPU_EMU)
    if (gpu[VAE_PRECISION_BF16] && gpu_hopper(VAE_PRECISION_BF16)) {
        unsetenv("VAE_GPU_CONV_VARIANT");
        setenv("VAE_GPU_EMU_NO_ENTRY", "cuTensorMapEncodeIm2col", 1);
        struct pool        pl       = { 0 };
        struct vae_graph * g        = conv_pair(&pl);
        char               err[512] = "", notice[512] = "";
        vae_backend_t *    b        = vae_backend_init(GPU_BACKEND, 0, VAE_PRECISION_BF16, err, sizeof(err));
        const bool         ok       = b && vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
        CHECK(ok, "without cuTensorMapEncodeIm2col: prepare: %s", err);
        const char * wide    = ok ? vae_backend_node_impl(b, g, 1) : NULL;
        const bool   noticed = ok && vae_backend_take_notice(b, notice, sizeof(notice));
        CHECK(!ok || (wide && strncmp(wide, "wgmma-", 6) && noticed && strstr(notice, "refused the conv tile wgmma-") &&
                      strstr(notice, "left it out")),
              "without cuTensorMapEncodeIm2col: 64 -> 96 channels on '%s', notice \"%s\"", wide ? wide : "-", notice);
        const float * in = rnd(&pl, (size_t) 64 * 8 * 16, -1, 1);
        CHECK(!ok || vae_backend_graph_compute(b, g, NULL, in, err, sizeof(err)), "without cuTensorMapEncodeIm2col: "
              "compute: %s", err);
        printf("without cuTensorMapEncodeIm2col: 64 -> 96 channels on %s; the notice: %s\n", wide ? wide : "-", notice);
        if (ok) {
            vae_backend_graph_release(b, g);
        }
        vae_backend_free(b);
        vae_graph_free(g);
        pool_free(&pl);
        unsetenv("VAE_GPU_EMU_NO_ENTRY");
    }
#endif
    if (forced) {
        setenv("VAE_GPU_CONV_VARIANT", keep, 1);
    } else {
        unsetenv("VAE_GPU_CONV_VARIANT");
    }
}

static void test_conv(void) {
    static const int shapes[][5] = {
        // n, cin, cout, h, w
        { 1, 3, 16, 7, 13 },  { 2, 5, 3, 13, 7 },   { 1, 16, 16, 33, 33 }, { 3, 24, 40, 7, 3 },
        { 1, 40, 64, 13, 13 }, { 2, 64, 5, 3, 7 },   { 1, 130, 24, 7, 7 },  { 1, 16, 130, 3, 13 },
        { 2, 64, 64, 33, 13 }, { 1, 3, 3, 1, 1 },    { 2, 5, 24, 1, 33 },   { 1, 130, 130, 13, 7 },
    };
    for (int s = 0; s < (int) (sizeof(shapes) / sizeof(shapes[0])); s++) {
        for (int k = 1; k <= 3; k += 2) {
            // combo: bit 0 bias, bit 1 residual, act = combo >> 2; every combo on the first two
            // shapes, two (complementary) on each of the others
            for (int combo = 0; combo < 12; combo++) {
                const int c1 = (s * 5 + k) % 12;
                if (s >= 2 && combo != c1 && combo != 11 - c1) {
                    continue;
                }
                rng_seed((uint64_t) (s * 100 + k * 20 + combo));
                case_conv(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4], k, combo & 1,
                          (combo >> 1) & 1, (enum vae_act) (combo >> 2));
            }
        }
    }
    // a head (3, 12 or 5 channels: the narrow conv where it runs, patches past the frame) read by a
    // wider conv, whose zero weights multiply the head's padding lanes: a lane left unwritten there
    // (NaN: VAE_GPU_POISON) shows in its output
    static const int heads[][5] = { { 1, 64, 3, 17, 35 }, { 2, 40, 12, 9, 33 }, { 1, 16, 5, 1, 40 } };
    for (int s = 0; s < (int) (sizeof(heads) / sizeof(heads[0])); s++) {
        struct pool         pl = { 0 };
        struct vae_graph *  g  = graph_new(true);
        const int           N = heads[s][0], Ci = heads[s][1], Co = heads[s][2], H = heads[s][3], W = heads[s][4];
        struct vae_tensor * x  = vae_graph_input(g, N, Ci, H, W);
        struct vae_tensor * y  = vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, 3, NULL), vec_w(g, &pl, Co, -.5f, .5f, NULL),
                                                  NULL, VAE_ACT_SILU);
        vae_graph_set_output(g, vae_graph_conv2d(g, y, conv_w(g, &pl, 24, Co, 3, NULL), NULL, NULL, VAE_ACT_NONE));
        char label[160];
        snprintf(label, sizeof(label), "conv2d(n=%d,cin=%d,cout=%d,h=%d,w=%d,k=3,bias,silu) -> conv2d(cout=24,k=3)", N,
                 Ci, Co, H, W);
        rng_seed((uint64_t) (900 + s));
        check1(label, g, rnd(&pl, (size_t) N * Ci * H * W, -1, 1), CMP_OP);
        vae_graph_free(g);
        pool_free(&pl);
    }
    test_conv_choice();
}

// ---- upsample_conv2d, upsample2x ---------------------------------------------------------------

static void case_upconv(int N, int Ci, int Co, int H, int W, bool fused, bool bias, enum vae_act act) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(fused);
    struct vae_tensor * x  = vae_graph_input(g, N, Ci, H, W);
    struct vae_tensor * y  = vae_graph_upsample_conv2d(g, x, conv_w(g, &pl, Co, Ci, 3, NULL),
                                                       bias ? vec_w(g, &pl, Co, -.5f, .5f, NULL) : NULL, act);
    vae_graph_set_output(g, y);
    CHECK(g->n_nodes == (fused ? 2 : 3), "upsample_conv2d built %d nodes with fused=%d", g->n_nodes, fused);
    char label[160];
    snprintf(label, sizeof(label), "upsample_conv2d(n=%d,cin=%d,cout=%d,h=%d,w=%d,%s%s,%s)", N, Ci, Co, H, W,
             fused ? "fused" : "unfused", bias ? ",bias" : "", act_name(act));
    check1(label, g, rnd(&pl, (size_t) N * Ci * H * W, -1, 1), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// the nearest-2x node of the unfused pair as the output (the conv after it is a dead node)
static void case_upsample(int N, int C, int H, int W) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(false);
    struct vae_tensor * y  = vae_graph_upsample_conv2d(g, vae_graph_input(g, N, C, H, W), conv_w(g, &pl, 3, C, 3, NULL),
                                                       NULL, VAE_ACT_NONE);
    CHECK(y->src[0]->op == VAE_OP_UPSAMPLE2X, "the unfused upsample conv reads %s", vae_op_name(y->src[0]->op));
    vae_graph_set_output(g, y->src[0]);
    char label[160];
    snprintf(label, sizeof(label), "upsample2x(n=%d,c=%d,h=%d,w=%d)", N, C, H, W);
    check1(label, g, rnd(&pl, (size_t) N * C * H * W, -1, 1), CMP_EXACT);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_upconv(void) {
    static const int shapes[][5] = {
        // n, cin, cout, h, w
        { 1, 3, 3, 1, 1 },    { 2, 5, 16, 7, 13 }, { 1, 16, 3, 13, 7 }, { 1, 24, 40, 3, 3 },
        { 1, 64, 64, 16, 16 }, { 2, 130, 24, 7, 5 }, { 1, 40, 5, 1, 33 },
    };
    for (int s = 0; s < (int) (sizeof(shapes) / sizeof(shapes[0])); s++) {
        for (int i = 0; i < 2; i++) {
            const int combo = i ? 5 - s % 6 : s % 6;   // bit 0 bias, act = combo >> 1
            for (int fused = 1; fused >= 0; fused--) {
                rng_seed((uint64_t) (1000 + s * 10 + combo));   // the same data fused and unfused
                case_upconv(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4], fused, combo & 1,
                            (enum vae_act) (combo >> 1));
            }
        }
    }
    static const int ups[][4] = { { 2, 3, 7, 13 }, { 1, 40, 1, 1 }, { 1, 130, 13, 7 }, { 3, 16, 3, 33 } };
    for (int s = 0; s < (int) (sizeof(ups) / sizeof(ups[0])); s++) {
        rng_seed((uint64_t) (1100 + s));
        case_upsample(ups[s][0], ups[s][1], ups[s][2], ups[s][3]);
    }
}

#ifdef CONV_BANKS
// ---- the conv kernels' shared memory, counted by the emulator -----------------------------------

// A conv and an upsample conv at every precision, every conv tile variant timed at prepare (or the
// one VAE_GPU_CONV_VARIANT forces), counted as the hardware banks them (tests/gpu-emu/README.md,
// "Counters" and "AMD's LDS"). NVIDIA: each ldmatrix and each 16-byte copy into shared memory takes
// the fewest wavefronts, 4 per warp instruction, so no bank conflict in the main loop (A's swizzled
// rows, B's padded or swizzled ones). AMD: the main loop's LDS loads and stores (all of them before
// the epilogue's barrier) take the fewest wavefronts its phases allow; the epilogue's are printed.
static void test_conv_banks(void) {
    for (int up = 0; up < 2; up++) {
        vae_emu_counts_start(0);
        if (up) {
            case_upconv(1, 64, 130, 9, 7, true, true, VAE_ACT_SILU);
        } else {
            case_conv(1, 64, 130, 13, 11, 3, true, true, VAE_ACT_SILU);
        }
        vae_emu_counts_stop();
        const struct vae_emu_counts * r = NULL;
        const size_t                  n = vae_emu_counts_read(&r);
        unsigned long long            launches = 0, reads = 0, writes = 0, tail = 0, tail_least = 0;
        for (size_t i = 0; i < n; i++) {
            if (strncmp(r[i].name, "vae_gpu_conv_kernel", 19) != 0) {
                continue;
            }
            launches++;
#ifdef VAE_GPU_EMU_GFX
            // the main loop: every access before the epilogue (which follows the last barrier)
            const unsigned long long w = r[i].lds_wavefronts + r[i].sts_wavefronts - r[i].tail_wavefronts;
            const unsigned long long least = r[i].lds_ideal + r[i].sts_ideal - r[i].tail_ideal;
            reads += r[i].lds;
            writes += r[i].sts;
            tail += r[i].tail_wavefronts;
            tail_least += r[i].tail_ideal;
            CHECK(w == least && least > 0, "%s conv, launch %zu (%u blocks of %u, %zu bytes): the main loop's LDS "
                  "loads and stores in %llu wavefronts, fewest %llu", up ? "upsample" : "3x3", i, r[i].grid[0],
                  r[i].block[0], r[i].smem, w, least);
#else
            reads += r[i].ldsm;
            writes += r[i].st16;
            CHECK(r[i].ldsm_wavefronts == 4 * r[i].ldsm && r[i].st16_wavefronts == 4 * r[i].st16,
                  "%s conv, launch %zu (%u blocks of %u): %llu ldmatrix in %llu wavefronts, %llu 16-byte copies "
                  "in %llu (4 each at the fewest)", up ? "upsample" : "3x3", i, r[i].grid[0], r[i].block[0],
                  r[i].ldsm, r[i].ldsm_wavefronts, r[i].st16, r[i].st16_wavefronts);
#endif
        }
        int backends = 0;
        for (int i = 0; i < N_PRECISIONS; i++) {
            backends += gpu[precisions[i]] != NULL;
        }
        CHECK(launches >= (unsigned long long) backends && reads > 0 && writes > 0, "%s conv: %llu conv launches "
              "counted on %d backends, %llu shared reads, %llu writes", up ? "upsample" : "3x3", launches, backends,
              reads, writes);
#ifdef VAE_GPU_EMU_GFX
        printf("%s conv: %llu conv launches, %llu LDS loads and %llu stores, the main loop's in the fewest wavefronts; "
               "the epilogue's staging %llu wavefronts (fewest %llu)\n", up ? "upsample" : "3x3", launches, reads,
               writes, tail, tail_least);
#else
        (void) tail, (void) tail_least;
        printf("%s conv: %llu conv launches, %llu ldmatrix and %llu 16-byte copies into shared memory, 4 wavefronts each\n",
               up ? "upsample" : "3x3", launches, reads, writes);
#endif
    }
}
#endif

// ---- causal conv3d: a stream through one state ---------------------------------------------------

// one step graph of n frames: x -> causal(x, w1) [slot 0] -> causal(., w2, residual = its input) [slot 1],
// the first with the flags `edges` (SeedVR2's first frame, HunyuanVideo 1.5's edge pixels too)
static struct vae_graph * causal_graph(int n, int Ci, int Co, int H, int W, const int64_t * sh1, const float * w1,
                                       const float * b1, const int64_t * sh2, const float * w2, enum vae_act act,
                                       int edges) {
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, n, Ci, H, W);
    struct vae_tensor * t1 = vae_graph_weight(g, "w1", w1, 5, sh1);
    struct vae_tensor * tb = b1 ? vae_graph_weight(g, "b1", b1, 1, (const int64_t[]) { Co }) : NULL;
    struct vae_tensor * t2 = vae_graph_weight(g, "w2", w2, 5, sh2);
    struct vae_tensor * y  = vae_graph_causal_conv3d_edges(g, x, t1, tb, NULL, act, 0, edges, 1);
    vae_graph_set_output(g, vae_graph_causal_conv3d(g, y, t2, NULL, y, VAE_ACT_NONE, 1));
    return g;
}

#define STREAM_STEPS 8   // a stream's graphs by step size: 1 to 7 frames in

// the stream `in` (T frames) on b in the given steps, twice with a state reset between: out gets
// every step's output frames, twice; false after a failed check. The state holds something once a
// step ran
static bool run_stream(vae_backend_t * b, struct vae_graph * const * graphs, const int steps[3], const float * in,
                       size_t fi, size_t fo, float * out, const char * label) {
    char          err[512] = "";
    bool          ok       = true;
    vae_state_t * state    = NULL;
    for (int n = 1; n < STREAM_STEPS; n++) {
        if (graphs[n]) {
            const bool p = vae_backend_graph_prepare(b, graphs[n], 0, err, sizeof(err));
            CHECK(p, "%s on %s: prepare: %s", label, vae_backend_name(b), err);
            ok = ok && p;
        }
    }
    if (ok) {
        state = vae_backend_state_new(b, graphs[steps[0]], err, sizeof(err));
        CHECK(state != NULL, "%s on %s: state: %s", label, vae_backend_name(b), err);
        ok = state != NULL;
    }
    for (int pass = 0, done = 0; ok && pass < 2; pass++) {
        for (int i = 0, at = 0; ok && i < 3; i++) {
            struct vae_graph * g = graphs[steps[i]];
            const int          m = (int) g->output->ne[0];
            ok = vae_backend_graph_compute(b, g, state, in + (size_t) at * fi, err, sizeof(err));
            CHECK(ok, "%s on %s: compute: %s", label, vae_backend_name(b), err);
            ok = ok && vae_backend_graph_read_output(b, g, 0, m, out + (size_t) done * fo, err, sizeof(err));
            CHECK(ok, "%s on %s: read_output: %s", label, vae_backend_name(b), err);
            CHECK(!ok || vae_backend_state_bytes(b, state) > 0, "%s: a state of 0 bytes", label);
            at += steps[i];
            done += m;
        }
        vae_backend_state_reset(b, state);
    }
    vae_backend_state_free(b, state);
    for (int n = 1; n < STREAM_STEPS; n++) {
        vae_backend_graph_release(b, graphs[n]);
    }
    return ok;
}

// the stream `in` (T frames) in the given steps on the CPU, then on the GPU at each precision,
// each twice (the second time after a state reset, which must give the same frames); pl for
// the buffers
static void compare_streams(struct pool * pl, struct vae_graph * const * graphs, const int steps[3], const float * in,
                            size_t fi, size_t fo, const char * label) {
    size_t n = 0;   // values out of one pass
    for (int i = 0; i < 3; i++) {
        n += (size_t) graphs[steps[i]]->output->ne[0] * fo;
    }
    float * ref = pool_add(pl, xmalloc(2 * n * sizeof(float)));
    float * got = pool_add(pl, xmalloc(2 * n * sizeof(float)));
    for (int i = 0; run_stream(cpu_be, graphs, steps, in, fi, fo, ref, label) && i < N_PRECISIONS; i++) {
        const enum vae_precision p = precisions[i];
        if (!gpu[p]) {
            continue;
        }
        const bool ok = run_stream(gpu[p], graphs, steps, in, fi, fo, got, label);
        for (int pass = 0; pass < 2; pass++) {
            char l[240];
            snprintf(l, sizeof(l), "%s%s", label, pass ? " after a reset" : "");
            report(l, p, ok ? got + (size_t) pass * n : NULL, ref + (size_t) pass * n, n, CMP_OP);
        }
        CHECK(!ok || same_floats(got, got + n, n), "%s [%s]: the stream after a state reset gave other frames", label,
              vae_precision_name(p));
    }
}

// steps of 1 to 3 frames: a stream on the CPU, the same stream on the GPU (compare_streams)
static void case_causal(int Ci, int Co, int H, int W, int kt1, int k1, int kt2, bool bias, enum vae_act act,
                        const int steps[3], int edges) {
    struct pool   pl = { 0 };
    const int     T  = steps[0] + steps[1] + steps[2];
    char          label[200];
    const int64_t sh1[5] = { Co, Ci, kt1, k1, k1 }, sh2[5] = { Co, Co, kt2, 3, 3 };
    const float   s1 = 1.5f / sqrtf((float) (Ci * kt1 * k1 * k1)), s2 = 1.0f / sqrtf((float) (Co * kt2 * 9));
    const float * w1 = rnd(&pl, (size_t) Co * Ci * kt1 * k1 * k1, -s1, s1);
    const float * w2 = rnd(&pl, (size_t) Co * Co * kt2 * 9, -s2, s2);
    const float * b1 = bias ? rnd(&pl, (size_t) Co, -0.5f, 0.5f) : NULL;
    const size_t  fi = (size_t) Ci * H * W, fo = (size_t) Co * H * W;
    const float * in = rnd(&pl, (size_t) T * fi, -1.0f, 1.0f);
    struct vae_graph * graphs[STREAM_STEPS] = { 0 };   // by step size
    for (int i = 0; i < 3; i++) {
        if (!graphs[steps[i]]) {
            graphs[steps[i]] = causal_graph(steps[i], Ci, Co, H, W, sh1, w1, b1, sh2, w2, act, edges);
            CHECK(graphs[steps[i]]->n_states == 2, "%d state slots, not 2", graphs[steps[i]]->n_states);
        }
    }
    snprintf(label, sizeof(label), "causal_conv3d(cin=%d,cout=%d,h=%d,w=%d,kt=%d/%d,k=%d%s,%s%s%s) steps %d,%d,%d", Ci,
             Co, H, W, kt1, kt2, k1, bias ? ",bias" : "", act_name(act),
             edges & VAE_CAUSAL_FIRST_FRAME ? ",first frame" : "", edges & VAE_CAUSAL_REPLICATE ? ",edge pixels" : "",
             steps[0], steps[1], steps[2]);
    compare_streams(&pl, graphs, steps, in, fi, fo, label);
    for (int n = 0; n < STREAM_STEPS; n++) {
        vae_graph_free(graphs[n]);
    }
    pool_free(&pl);
}

static void test_causal(void) {
    static const int steps[3][3] = { { 1, 3, 2 }, { 2, 2, 1 }, { 3, 1, 1 } };
    const int F = VAE_CAUSAL_FIRST_FRAME, E = VAE_CAUSAL_FIRST_FRAME | VAE_CAUSAL_REPLICATE;
    const struct {
        int          ci, co, h, w, kt1, k1, kt2;
        bool         bias;
        enum vae_act act;
        int          edges;   // the first conv's (the CPU backend is the reference)
    } cases[] = {
        { 16, 16, 5, 7, 3, 3, 3, true, VAE_ACT_NONE, 0 },  { 3, 20, 4, 3, 3, 3, 2, true, VAE_ACT_SILU, 0 },
        { 33, 17, 3, 5, 3, 1, 3, false, VAE_ACT_RELU, 0 }, { 8, 32, 6, 2, 2, 3, 2, true, VAE_ACT_RELU, 0 },
        { 64, 40, 13, 7, 2, 3, 3, true, VAE_ACT_SILU, 0 }, { 5, 130, 3, 3, 3, 3, 2, false, VAE_ACT_NONE, 0 },
        { 96, 96, 7, 13, 3, 3, 3, true, VAE_ACT_SILU, 0 }, { 16, 24, 5, 6, 3, 3, 3, true, VAE_ACT_NONE, F },
        { 40, 32, 4, 9, 3, 3, 3, false, VAE_ACT_SILU, F },
        // HunyuanVideo 1.5's: edge pixels too, a row and a column alone, tiles past the frame's pixels
        { 32, 32, 5, 7, 3, 3, 3, true, VAE_ACT_NONE, E },  { 17, 48, 1, 9, 3, 3, 2, true, VAE_ACT_SILU, E },
        { 64, 24, 11, 1, 3, 3, 3, false, VAE_ACT_RELU, E }, { 24, 64, 9, 13, 3, 3, 3, true, VAE_ACT_SILU, VAE_CAUSAL_REPLICATE },
        // heads (the narrow conv where it runs: patches of 16 x 32, past the frame here)
        { 16, 3, 17, 33, 3, 3, 3, true, VAE_ACT_NONE, E }, { 24, 12, 9, 33, 3, 3, 2, false, VAE_ACT_SILU, 0 },
    };
    for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++) {
        rng_seed((uint64_t) (1500 + i));
        case_causal(cases[i].ci, cases[i].co, cases[i].h, cases[i].w, cases[i].kt1, cases[i].k1, cases[i].kt2,
                    cases[i].bias, cases[i].act, steps[i % 3], cases[i].edges);
    }
}

// ---- centred conv3d: LTX-2's stream, a frame late, its start and its end ----------------------------

// a step graph of n frames: two centred convs (reflect or zeros), each adding its input delayed a
// frame to match (slots 0..3); start: the graph that starts the stream (n - 2 frames out)
static struct vae_graph * centred_graph(struct pool * pl, int n, int C, int H, int W, bool reflect, bool start) {
    const int64_t       sh[5] = { C, C, 3, 3, 3 };
    const int           edges = VAE_CENTRED | (reflect ? VAE_CAUSAL_REFLECT : 0) | (start ? VAE_CENTRED_START : 0);
    struct vae_graph *  g     = graph_new(true);
    struct vae_tensor * x     = vae_graph_input(g, n, C, H, W);
    rng_seed(1700);   // (the same weights in every graph of a case)
    for (int i = 0; i < 2; i++) {
        const float s = 0.8f / sqrtf((float) (C * 27));
        struct vae_tensor * r = vae_graph_delay(g, x, 1, 2 * i, start ? VAE_CENTRED_START : 0);
        x = vae_graph_causal_conv3d_edges(g, x, vae_graph_weight(g, i ? "w2" : "w1", rnd(pl, (size_t) C * C * 27, -s, s), 5, sh),
                                          vae_graph_weight(g, i ? "b2" : "b1", rnd(pl, (size_t) C, -.3f, .3f), 1,
                                                           (const int64_t[]) { C }),
                                          r, VAE_ACT_NONE, 2 * i + 1, edges, 1);
    }
    vae_graph_set_output(g, x);
    return g;
}

// a clip of T frames (in: room for T + first + step) on b: the first graph, steps, then the end told
// to the state and steps until the T frames are out, twice with a reset between: out gets 2 T frames
static bool run_centred(vae_backend_t * b, struct vae_graph * g0, struct vae_graph * gs, int T, const float * in,
                        size_t f, float * out, const char * label) {
    char          err[512] = "";
    bool          ok       = vae_backend_graph_prepare(b, g0, 0, err, sizeof(err)) &&
                  vae_backend_graph_prepare(b, gs, 0, err, sizeof(err));
    vae_state_t * state    = ok ? vae_backend_state_new(b, gs, err, sizeof(err)) : NULL;
    CHECK(state != NULL, "%s on %s: %s", label, vae_backend_name(b), err);
    for (int pass = 0; state && pass < 2; pass++) {
        for (int at = 0, got = 0; state && got < T;) {
            struct vae_graph * g = at == 0 ? g0 : gs;
            if (at + g->input->ne[0] >= T) {
                vae_backend_state_set_end(b, state, T);
            }
            const int n = (int) g->output->ne[0] < T - got ? (int) g->output->ne[0] : T - got;
            ok = vae_backend_graph_compute(b, g, state, in + (size_t) at * f, err, sizeof(err)) &&
                 vae_backend_graph_read_output(b, g, 0, n, out + ((size_t) pass * T + got) * f, err, sizeof(err));
            CHECK(ok, "%s on %s: %s", label, vae_backend_name(b), err);
            if (!ok) {
                vae_backend_state_free(b, state);
                state = NULL;
            }
            at += (int) g->input->ne[0];
            got += n;
        }
        if (state) {
            vae_backend_state_reset(b, state);
        }
    }
    vae_backend_state_free(b, state);
    vae_backend_graph_release(b, g0);
    vae_backend_graph_release(b, gs);
    return ok && state != NULL;
}

// the clip streamed on the CPU, then on the GPU at each precision
static void case_centred(int C, int H, int W, int T, int first, int step, bool reflect) {
    struct pool        pl = { 0 };
    const size_t       f  = (size_t) C * H * W, n = (size_t) T * f;
    struct vae_graph * g0 = centred_graph(&pl, first, C, H, W, reflect, true);
    struct vae_graph * gs = centred_graph(&pl, step, C, H, W, reflect, false);
    rng_seed(1701);
    const float * in  = rnd(&pl, (size_t) (T + first + step) * f, -1, 1);
    float *       ref = pool_add(&pl, xmalloc(2 * n * sizeof(float)));
    float *       got = pool_add(&pl, xmalloc(2 * n * sizeof(float)));
    char          label[200];
    snprintf(label, sizeof(label), "centred conv3d x2 (c=%d,h=%d,w=%d,%s), clip of %d: first %d, steps of %d", C, H, W,
             reflect ? "reflect" : "zeros", T, first, step);
    for (int i = 0; run_centred(cpu_be, g0, gs, T, in, f, ref, label) && i < N_PRECISIONS; i++) {
        const enum vae_precision p = precisions[i];
        if (!gpu[p]) {
            continue;
        }
        const bool ok = run_centred(gpu[p], g0, gs, T, in, f, got, label);
        for (int pass = 0; pass < 2; pass++) {
            char l[240];
            snprintf(l, sizeof(l), "%s%s", label, pass ? " after a reset" : "");
            report(l, p, ok ? got + (size_t) pass * n : NULL, ref + (size_t) pass * n, n, CMP_OP);
        }
    }
    vae_graph_free(g0);
    vae_graph_free(gs);
    pool_free(&pl);
}

static void test_centred(void) {
    case_centred(16, 5, 7, 9, 3, 1, true);
    case_centred(5, 4, 3, 10, 4, 3, false);
    case_centred(40, 2, 6, 8, 5, 2, true);    // (its end in the middle of a step)
    case_centred(8, 3, 3, 2, 4, 2, false);    // (a clip shorter than the first graph)
    case_centred(24, 1, 5, 7, 3, 3, false);   // (a row alone)
    case_centred(64, 9, 13, 6, 3, 2, true);
}

// ---- causal attention: a stream through its key/value cache ----------------------------------------

static struct vae_graph * causal_attention_graph(int n, int C, int H, int W) {
    struct vae_graph * g = graph_new(true);
    vae_graph_set_output(g, vae_graph_causal_attention(g, vae_graph_input(g, n, 3 * C, H, W), 0));
    return g;
}

// steps of 1 to 3 frames (q and k scaled by qk_mag) on the CPU and on the GPU (compare_streams)
static void case_causal_attention(int C, int H, int W, float qk_mag, const int steps[3]) {
    struct pool  pl = { 0 };
    const int    T  = steps[0] + steps[1] + steps[2];
    const size_t fi = (size_t) 3 * C * H * W, fo = (size_t) C * H * W;
    float *      in = rnd(&pl, (size_t) T * fi, -1.0f, 1.0f);
    for (size_t i = 0; i < (size_t) T * fi; i++) {
        in[i] *= i % fi < 2 * fo ? qk_mag : 1.0f;
    }
    struct vae_graph * graphs[STREAM_STEPS] = { 0 };
    for (int i = 0; i < 3; i++) {
        graphs[steps[i]] = graphs[steps[i]] ? graphs[steps[i]] : causal_attention_graph(steps[i], C, H, W);
    }
    char label[200];
    snprintf(label, sizeof(label), "causal_attention(c=%d,h=%d,w=%d,|qk|<=%g) steps %d,%d,%d", C, H, W, qk_mag,
             steps[0], steps[1], steps[2]);
    compare_streams(&pl, graphs, steps, in, fi, fo, label);
    for (int n = 0; n < STREAM_STEPS; n++) {
        vae_graph_free(graphs[n]);
    }
    pool_free(&pl);
}

// a state limit that holds 2 frames refuses the third, naming it, without changing the cache: the
// frame goes through once the limit is lifted, equal to the CPU's
static void case_causal_attention_limit(enum vae_precision p) {
    struct pool        pl  = { 0 };
    const int          C   = 32, H = 3, W = 5;
    const size_t       fi  = (size_t) 3 * C * H * W, fo = (size_t) C * H * W;
    const float *      in  = rnd(&pl, 3 * fi, -1.0f, 1.0f);
    float *            ref = pool_add(&pl, xmalloc(3 * fo * sizeof(float)));
    float *            got = pool_add(&pl, xmalloc(fo * sizeof(float)));
    struct vae_graph * g   = causal_attention_graph(1, C, H, W);
    char               err[512] = "";
    vae_backend_t *    bs[2] = { cpu_be, gpu[p] };
    vae_state_t *      st[2] = { NULL, NULL };
    for (int b = 0; b < 2; b++) {
        bool ok = vae_backend_graph_prepare(bs[b], g, 0, err, sizeof(err)) &&
                  (st[b] = vae_backend_state_new(bs[b], g, err, sizeof(err))) != NULL;
        CHECK(ok, "%s: %s", vae_backend_name(bs[b]), err);
        for (int t = 0; ok && t < 3; t++) {
            ok = vae_backend_graph_compute(bs[b], g, st[b], in + (size_t) t * fi, err, sizeof(err)) &&
                 vae_backend_graph_read_output(bs[b], g, 0, 1, b ? got : ref + (size_t) t * fo, err, sizeof(err));
            CHECK(ok, "%s: frame %d: %s", vae_backend_name(bs[b]), t, err);
            if (ok && b == 1 && t == 1) { // the room of 2 frames is all the limit allows
                vae_backend_state_set_limit(bs[b], st[b], vae_backend_state_bytes(bs[b], st[b]));
                CHECK(!vae_backend_graph_compute(bs[b], g, st[b], in + 2 * fi, err, sizeof(err)),
                      "%s: a third frame past the limit", vae_backend_name(bs[b]));
                CHECK_ERR_HAS(err, "it holds 2 frames");
                vae_backend_state_set_limit(bs[b], st[b], 0);
            }
        }
        vae_backend_graph_release(bs[b], g);
    }
    report("causal_attention(c=32,h=3,w=5) frame 2 after a compute refused at the limit", p, got, ref + 2 * fo, fo,
           CMP_OP);
    vae_backend_state_free(cpu_be, st[0]);
    vae_backend_state_free(gpu[p], st[1]);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_causal_attention(void) {
    static const int steps[3][3] = { { 1, 3, 2 }, { 2, 2, 1 }, { 3, 1, 1 } };
    static const int shapes[][4] = {
        // c, h, w, (qk x 2 when 1): tensor cores at c % 16 == 0 (fp16, bf16), SIMT otherwise
        { 32, 3, 5, 1 }, { 20, 7, 9, 0 }, { 64, 10, 13, 1 }, { 3, 1, 1, 0 }, { 48, 1, 33, 0 },
    };
    for (int s = 0; s < (int) (sizeof(shapes) / sizeof(shapes[0])); s++) {
        rng_seed((uint64_t) (1600 + s));
        case_causal_attention(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3] ? 2.0f : 1.0f, steps[s % 3]);
    }
    for (int i = 0; i < N_PRECISIONS; i++) {
        if (gpu[precisions[i]]) {
            rng_seed(1650);
            case_causal_attention_limit(precisions[i]);
        }
    }
}

// ---- group_norm --------------------------------------------------------------------------------

// inputs U(-1, 1) * scale + offset: large offsets need statistics that do not cancel (two passes,
// or a shifted sum); large scales values that do not overflow
static void case_gn(int N, int C, int H, int W, int groups, float eps, enum vae_act act, float scale, float offset) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    vae_graph_set_output(g, vae_graph_group_norm(g, vae_graph_input(g, N, C, H, W), groups, eps,
                                                 vec_w(g, &pl, C, .5f, 1.5f, NULL), vec_w(g, &pl, C, -.5f, .5f, NULL), act));
    const size_t n  = (size_t) N * C * H * W;
    float *      in = rnd(&pl, n, -1, 1);
    for (size_t i = 0; i < n; i++) {
        in[i] = rng_grid(in[i] * scale + offset);
    }
    char label[200];
    snprintf(label, sizeof(label), "group_norm(n=%d,c=%d,h=%d,w=%d,groups=%d,eps=%g,%s,scale=%g,offset=%g)", N, C, H,
             W, groups, eps, act_name(act), scale, offset);
    check1(label, g, in, CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// GroupNorm with the statistics given as an input [1, 2 * groups, 1, 1] (means, then 1 / std),
// the same for every frame (how the tiles of a frame share its statistics); the statistics are
// input 0 or input 1, and read after a 1x1 conv when conv_first
static void case_gn_stats(int N, int C, int H, int W, int groups, bool stats_first, bool conv_first) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * st = stats_first ? vae_graph_input(g, 1, 2 * groups, 1, 1) : NULL;
    struct vae_tensor * x  = vae_graph_input(g, N, C, H, W);
    if (!st) {
        st = vae_graph_input(g, 1, 2 * groups, 1, 1);
    }
    if (conv_first) {
        x = vae_graph_conv2d(g, x, conv_w(g, &pl, C, C, 1, NULL), NULL, NULL, VAE_ACT_NONE);
    }
    vae_graph_set_output(g, vae_graph_group_norm_stats(g, x, groups, 1e-6f, vec_w(g, &pl, C, .5f, 1.5f, NULL),
                                                       vec_w(g, &pl, C, -.5f, .5f, NULL), VAE_ACT_SILU, st));
    float *       stats = rnd(&pl, 2 * (size_t) groups, -.5f, .5f);
    const float * rstd  = rnd(&pl, (size_t) groups, .5f, 2.f);
    memcpy(stats + groups, rstd, (size_t) groups * sizeof(float));
    const float *       xin       = rnd(&pl, (size_t) N * C * H * W, -1, 1);
    const float * const inputs[2] = { stats_first ? stats : xin, stats_first ? xin : stats };
    const float * const * sets[1] = { inputs };
    char                  label[200];
    snprintf(label, sizeof(label), "group_norm_stats(n=%d,c=%d,h=%d,w=%d,groups=%d,silu,stats as input %d%s)", N, C, H,
             W, groups, stats_first ? 0 : 1, conv_first ? ",after a 1x1 conv" : "");
    check_sets(label, g, 1, sets, CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// a conv (up: the upsampling one; res: a residual of a 1x1 conv) with a bias around `offset`, then
// the GroupNorm of its output in `groups` groups (per frame, or over all frames), whose
// statistics the GPU's conv epilogue gives (each tile's partials), the norm's node then applying
// them only. A GPU fuses them wherever one tile's rows lie in one frame: one frame, statistics
// over all frames, or frames of a multiple of 64 pixels (of the input grid). kept: the conv's
// output is read after the norm too (a block's input: its first norm and its shortcut)
static void case_conv_gn(int N, int Ci, int Co, int H, int W, bool up, bool res, int groups, bool frames, float offset,
                         bool kept) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, N, Ci, H, W);
    struct vae_tensor * b  = vec_w(g, &pl, Co, offset - .5f, offset + .5f, NULL);
    struct vae_tensor * r  = res ? vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, 1, NULL), NULL, NULL, VAE_ACT_NONE)
                                 : NULL;
    struct vae_tensor * y  = up ? vae_graph_upsample_conv2d(g, x, conv_w(g, &pl, Co, Ci, 3, NULL), b, VAE_ACT_NONE)
                                : vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, 3, NULL), b, r, VAE_ACT_NONE);
    struct vae_tensor * gm = vec_w(g, &pl, Co, .5f, 1.5f, NULL), *bt = vec_w(g, &pl, Co, -.5f, .5f, NULL);
    struct vae_tensor * z  = frames ? vae_graph_group_norm_frames(g, y, groups, 1e-6f, gm, bt, VAE_ACT_SILU)
                                    : vae_graph_group_norm(g, y, groups, 1e-6f, gm, bt, VAE_ACT_SILU);
    vae_graph_set_output(g, kept ? vae_graph_conv2d(g, z, conv_w(g, &pl, Co, Co, 3, NULL), NULL, y, VAE_ACT_NONE) : z);
    char label[200];
    snprintf(label, sizeof(label), "%s(n=%d,cin=%d,cout=%d,h=%d,w=%d,bias %g%s) -> group_norm(groups=%d%s,silu)%s",
             up ? "upsample_conv2d" : "conv2d", N, Ci, Co, H, W, offset, res ? ",res" : "", groups,
             frames ? ",over all frames" : "", kept ? ", the conv's output kept" : "");
    check1(label, g, rnd(&pl, (size_t) N * Ci * H * W, -1, 1), offset != 0.0f ? CMP_F32 : CMP_OP);
    const bool fusable = N == 1 || frames || H * W % 64 == 0;
    for (int i = 0; i < N_PRECISIONS; i++) {
        const enum vae_precision p        = precisions[i];
        char                     err[512] = "";
        if (!gpu[p] || !vae_backend_graph_prepare(gpu[p], g, 0, err, sizeof(err))) {
            continue;
        }
        const char * impl  = vae_backend_node_impl(gpu[p], g, z->index);
        const bool   fused = g->fused && fusable;
        CHECK(fused == (impl && !strcmp(impl, "statistics in the conv's epilogue")),
              "%s [%s]: the statistics %s the conv's epilogue ('%s')", label, vae_precision_name(p),
              fused ? "not in" : "in", impl ? impl : "-");
        vae_backend_graph_release(gpu[p], g);
    }
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_gn(void) {
    static const int shapes[][5] = {
        // n, c, h, w, groups
        { 1, 32, 7, 5, 1 },   { 2, 32, 7, 5, 4 },  { 1, 32, 13, 7, 32 }, { 2, 64, 3, 3, 32 }, { 1, 64, 16, 16, 4 },
        { 1, 64, 1, 1, 1 },   { 2, 40, 7, 5, 4 },  { 1, 24, 13, 3, 8 },  { 3, 16, 3, 3, 4 },  { 1, 5, 33, 7, 1 },
        { 1, 130, 7, 3, 2 },  { 2, 3, 3, 3, 1 },   { 1, 512, 13, 7, 32 }, { 1, 130, 1, 1, 13 }, { 1, 128, 33, 33, 32 },
    };
    for (int s = 0; s < (int) (sizeof(shapes) / sizeof(shapes[0])); s++) {
        for (int i = 0; i < 2; i++) {
            const int combo = (s + 3 * i) % 6;   // bit 0: eps, act = combo >> 1
            rng_seed((uint64_t) (2000 + s * 20 + combo));
            case_gn(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4], combo & 1 ? 1e-6f : 1e-5f,
                    (enum vae_act) (combo >> 1), 1.0f, 0.0f);
        }
    }
    // large values: an offset of 100 (a one-pass E[x^2] - E[x]^2 in f32 loses the variance), inputs
    // of +-1000, both through every activation
    rng_seed(2900);
    case_gn(1, 32, 16, 9, 4, 1e-6f, VAE_ACT_NONE, 1.0f, 100.0f);
    case_gn(2, 40, 7, 5, 1, 1e-5f, VAE_ACT_SILU, 1.0f, -100.0f);
    case_gn(1, 64, 33, 13, 32, 1e-6f, VAE_ACT_RELU, 1.0f, 100.0f);
    case_gn(1, 32, 16, 9, 4, 1e-6f, VAE_ACT_SILU, 1000.0f, 0.0f);
    case_gn(2, 130, 7, 5, 2, 1e-5f, VAE_ACT_NONE, 1000.0f, 0.0f);
    case_gn(1, 5, 13, 3, 1, 1e-6f, VAE_ACT_RELU, 1000.0f, 500.0f);

    rng_seed(2950);
    case_gn_stats(1, 64, 9, 11, 32, false, false);
    case_gn_stats(1, 96, 9, 11, 32, true, false);   // groups of 3 channels across the 16-lane blocks
    case_gn_stats(1, 96, 9, 11, 32, true, true);
    case_gn_stats(1, 20, 5, 7, 4, false, false);   // stats [1, 8, 1, 1]: padding lanes
    case_gn_stats(2, 40, 7, 13, 8, true, true);    // two frames, one set of statistics

    // n, cin, cout, h, w, up, res, groups, over all frames, bias offset, kept
    static const struct {
        int   n, ci, co, h, w;
        bool  up, res;
        int   groups;
        bool  frames;
        float offset;
        bool  kept;
    } cgn[] = {
        { 1, 32, 128, 13, 11, false, false, 32, false, 0.0f, false },   // KL's: 4 channels a group
        { 1, 24, 96, 9, 21, false, true, 32, false, 0.0f, true },       // groups of 3 across 64-wide tiles
        { 1, 16, 40, 7, 13, false, false, 8, false, 100.0f, false },    // a mean of 100 (shifted sums)
        { 2, 16, 64, 8, 16, false, false, 32, false, 0.0f, false },     // 2 frames of 128 pixels: per frame
        { 2, 16, 64, 8, 12, false, true, 4, false, 0.0f, true },        // 2 frames of 96 pixels: apart
        { 3, 16, 48, 5, 7, false, false, 4, true, 0.0f, false },        // 3 frames, one set of statistics
        { 1, 32, 64, 7, 9, true, false, 32, false, 0.0f, false },       // up: four phases' tiles
        { 1, 16, 48, 13, 11, true, false, 8, false, 0.0f, false },      // up, 143 rows: several tiles a phase
        { 2, 16, 32, 4, 16, true, false, 8, false, -50.0f, false },     // up, 2 frames of 64 input pixels
        { 1, 16, 256, 5, 5, false, false, 32, false, 0.0f, false },     // 256 channels: tiles along N
    };
    for (int s = 0; s < (int) (sizeof(cgn) / sizeof(cgn[0])); s++) {
        rng_seed((uint64_t) (2960 + s));
        case_conv_gn(cgn[s].n, cgn[s].ci, cgn[s].co, cgn[s].h, cgn[s].w, cgn[s].up, cgn[s].res, cgn[s].groups,
                     cgn[s].frames, cgn[s].offset, cgn[s].kept);
    }
}

// ---- rms_norm, attention, tanh_clamp -----------------------------------------------------------

// Wan's form, or diffusers' RMSNorm (eps 1e-5) with a bias (bias) and a residual (a 1x1 conv of
// the input)
static void case_rms(int N, int C, int H, int W, enum vae_act act, float scale, bool eps_form, bool bias) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, N, C, H, W);
    struct vae_tensor * gm = eps_form && !bias ? NULL : vec_w(g, &pl, C, .5f, 1.5f, NULL); // (none: LTX-2's)
    if (eps_form) {
        struct vae_tensor * r = vae_graph_conv2d(g, x, conv_w(g, &pl, C, C, 1, NULL), NULL, NULL, VAE_ACT_NONE);
        vae_graph_set_output(g, vae_graph_rms_norm_eps(g, x, 1e-5f, gm, bias ? vec_w(g, &pl, C, -.5f, .5f, NULL) : NULL,
                                                       r, act));
    } else {
        vae_graph_set_output(g, vae_graph_rms_norm(g, x, gm, act));
    }
    float * in = rnd(&pl, (size_t) N * C * H * W, -1, 1);
    for (size_t i = 0; i < (size_t) N * C * H * W; i++) {
        in[i] = rng_grid(in[i] * scale);
    }
    char label[160];
    snprintf(label, sizeof(label), "%s(n=%d,c=%d,h=%d,w=%d,%s,scale=%g%s%s)", eps_form ? "rms_norm_eps" : "rms_norm", N,
             C, H, W, act_name(act), scale, eps_form ? (bias ? ",bias,residual" : ",residual") : "", gm ? "" : ",no gamma");
    check1(label, g, in, CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// a conv (up: the upsampling one; res: a residual; act) and the RMS norm of its output (Wan's
// form 0 with gamma, or form 1 with gamma and beta, then nact), which an NVIDIA GPU computes in
// the conv's epilogue where one tile holds every output channel (at most 192 at 16 bits, 128 at
// fp32 and tf32), the norm's node then launching nothing. kept: the conv's output is read after
// the norm too, as the residual of a conv of the norm (a block's input: its first norm and its
// shortcut), x to the end (so that the norm's own block costs no memory): the epilogue then writes
// both, the norm to its own block
static void case_conv_rms(int N, int Ci, int Co, int H, int W, bool up, bool res, enum vae_act act, int form,
                          enum vae_act nact, bool kept) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, N, Ci, H, W);
    struct vae_tensor * b  = vec_w(g, &pl, Co, -.5f, .5f, NULL);
    struct vae_tensor * r  = res ? vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, 1, NULL), NULL, NULL, VAE_ACT_NONE)
                                 : NULL;
    struct vae_tensor * y  = up ? vae_graph_upsample_conv2d(g, x, conv_w(g, &pl, Co, Ci, 3, NULL), b, act)
                                : vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, 3, NULL), b, r, act);
    struct vae_tensor * gm = vec_w(g, &pl, Co, .5f, 1.5f, NULL);
    struct vae_tensor * z  = form ? vae_graph_rms_norm_eps(g, y, 1e-5f, gm, vec_w(g, &pl, Co, -.5f, .5f, NULL), NULL, nact)
                                  : vae_graph_rms_norm(g, y, gm, nact);
    if (kept) {
        struct vae_tensor * u = vae_graph_conv2d(g, z, conv_w(g, &pl, Co, Co, 3, NULL), NULL, y, VAE_ACT_NONE);
        vae_graph_set_output(g, vae_graph_conv2d(g, u, conv_w(g, &pl, Ci, Co, 1, NULL), NULL, x, VAE_ACT_NONE));
    } else {
        vae_graph_set_output(g, z);
    }
    char label[160];
    snprintf(label, sizeof(label), "%s(n=%d,cin=%d,cout=%d,h=%d,w=%d,bias%s,%s) -> rms_norm(form %d,%s)%s",
             up ? "upsample_conv2d" : "conv2d", N, Ci, Co, H, W, res ? ",res" : "", act_name(act), form, act_name(nact),
             kept ? ", the conv's output kept" : "");
    check1(label, g, rnd(&pl, (size_t) N * Ci * H * W, -1, 1), CMP_OP);
    const int norm = z->index;
    for (int i = 0; i < N_PRECISIONS; i++) {
        const enum vae_precision p = precisions[i];
        char                     err[512] = "";
        if (!gpu[p] || !vae_backend_graph_prepare(gpu[p], g, 0, err, sizeof(err))) {
            continue;
        }
        const char * impl  = vae_backend_node_impl(gpu[p], g, norm);
        const bool   wide  = p == VAE_PRECISION_FP16 || p == VAE_PRECISION_BF16;
#if defined(VAE_TEST_HIP) || defined(VAE_GPU_EMU_GFX)
        const bool fused = false;   // (AMD: the norm runs apart, see kernels/vae-gpu-conv.cu)
        (void) wide;
#else
        const bool fused = g->fused && (Co + 15) / 16 * 16 <= (wide ? 192 : 128);   // (channels padded to 16)
#endif
        CHECK(fused == (impl && !strcmp(impl, kept ? "in the conv's epilogue, to its own block" : "in the conv's epilogue")),
              "%s [%s]: the norm %s the conv's epilogue "
              "('%s')", label, vae_precision_name(p), fused ? "not in" : "in", impl ? impl : "-");
        vae_backend_graph_release(gpu[p], g);
    }
    vae_graph_free(g);
    pool_free(&pl);
}

// qkv [N, 3C, H, W] in heads of hd channels (0: one head), q and k scaled by qk (1: a flat
// softmax; 3: a peaked one)
static void case_attention(int N, int C, int hd, int H, int W, float qk) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    vae_graph_set_output(g, vae_graph_attention_heads(g, vae_graph_input(g, N, 3 * C, H, W), hd));
    float *      in = rnd(&pl, (size_t) N * 3 * C * H * W, -1, 1);
    const size_t hw = (size_t) H * W;
    for (int n = 0; n < N; n++) {
        for (size_t i = 0; i < 2 * (size_t) C * hw; i++) {
            float * v = &in[(size_t) n * 3 * C * hw + i];
            *v        = rng_grid(*v * qk);
        }
    }
    char label[160], heads[40] = "";
    if (hd) {
        snprintf(heads, sizeof(heads), ",%d heads of %d", C / hd, hd);
    }
    snprintf(label, sizeof(label), "attention(n=%d,c=%d%s,h=%d,w=%d,%d positions,q/k scale %g)", N, C, heads, H, W,
             H * W, qk);
    check1(label, g, in, CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

static void case_tanh(int N, int C, int H, int W, float s, float mag) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    vae_graph_set_output(g, vae_graph_tanh_clamp(g, vae_graph_input(g, N, C, H, W), s));
    char label[160];
    snprintf(label, sizeof(label), "tanh_clamp(n=%d,c=%d,h=%d,w=%d,s=%g,mag=%g)", N, C, H, W, s, mag);
    check1(label, g, rnd(&pl, (size_t) N * C * H * W, -mag, mag), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_rms_attention_tanh(void) {
    static const int rms[][4] = { { 1, 16, 7, 5 }, { 2, 24, 3, 13 }, { 1, 96, 13, 7 }, { 3, 130, 1, 1 },
                                  { 1, 384, 7, 5 }, { 2, 5, 33, 3 }, { 1, 192, 16, 16 } };
    for (int s = 0; s < (int) (sizeof(rms) / sizeof(rms[0])); s++) {
        rng_seed((uint64_t) (3000 + s));
        case_rms(rms[s][0], rms[s][1], rms[s][2], rms[s][3], (enum vae_act) (s % 3), s % 2 ? 100.0f : 1.0f, false, false);
        rng_seed((uint64_t) (3050 + s));   // DC-AE's norms (the head's with relu)
        case_rms(rms[s][0], rms[s][1], rms[s][2], rms[s][3], (enum vae_act) ((s + 1) % 3), s % 2 ? 1.0f : 100.0f, true,
                 s != 3);
    }
    // n, cin, cout, h, w, up, res, act, form, nact
    static const struct {
        int          n, ci, co, h, w;
        bool         up, res;
        enum vae_act act;
        int          form;
        enum vae_act nact;
    } crms[] = {
        { 1, 96, 96, 9, 21, false, false, VAE_ACT_NONE, 0, VAE_ACT_SILU },  // Wan's conv1 -> norm2
        { 2, 40, 96, 13, 7, false, true, VAE_ACT_NONE, 0, VAE_ACT_SILU },   // its conv2 + shortcut -> the head's norm
        { 1, 24, 40, 7, 13, false, true, VAE_ACT_SILU, 1, VAE_ACT_NONE },
        { 1, 16, 130, 5, 9, false, false, VAE_ACT_RELU, 0, VAE_ACT_RELU },  // fused at 16 bits only
        { 1, 32, 192, 3, 7, true, false, VAE_ACT_NONE, 1, VAE_ACT_SILU },
        { 1, 16, 384, 3, 5, false, false, VAE_ACT_NONE, 0, VAE_ACT_SILU },  // apart: no tile holds 384
    };
    // kept: a block's conv2 + residual -> the next block's norm1 (Wan's), form 1, and 384 (apart)
    static const struct {
        int n, ci, co, h, w, form;
        bool res;
    } kept[] = { { 1, 96, 96, 9, 21, 0, true }, { 2, 24, 40, 7, 13, 1, false }, { 1, 16, 384, 3, 5, 0, false } };
    for (int s = 0; s < (int) (sizeof(crms) / sizeof(crms[0])); s++) {
        rng_seed((uint64_t) (3100 + s));
        case_conv_rms(crms[s].n, crms[s].ci, crms[s].co, crms[s].h, crms[s].w, crms[s].up, crms[s].res, crms[s].act,
                      crms[s].form, crms[s].nact, false);
    }
    for (int s = 0; s < (int) (sizeof(kept) / sizeof(kept[0])); s++) {
        rng_seed((uint64_t) (3200 + s));
        case_conv_rms(kept[s].n, kept[s].ci, kept[s].co, kept[s].h, kept[s].w, false, kept[s].res, VAE_ACT_NONE,
                      kept[s].form, VAE_ACT_SILU, true);
    }
    static const int att[][4] = {
        // n, c, h, w
        { 1, 8, 7, 5 },   { 2, 24, 3, 13 }, { 1, 64, 16, 16 }, { 1, 384, 7, 5 }, { 1, 512, 16, 16 },
        { 2, 512, 1, 1 }, { 1, 384, 33, 7 }, { 1, 5, 13, 3 },  { 2, 33, 5, 7 },  { 1, 16, 1, 33 },
    };
    for (int s = 0; s < (int) (sizeof(att) / sizeof(att[0])); s++) {
        for (int i = 0; i < 2; i++) {
            rng_seed((uint64_t) (3100 + s * 2 + i));
            case_attention(att[s][0], att[s][1], 0, att[s][2], att[s][3], i ? 3.0f : 1.0f);
        }
    }
    rng_seed(3200);
    case_tanh(1, 3, 7, 5, 3.0f, 1.0f);
    case_tanh(2, 3, 16, 9, 3.0f, 10.0f);
    case_tanh(1, 20, 7, 5, 3.0f, 1000.0f);
    case_tanh(1, 1, 1, 1, 3.0f, 2.0f);
    case_tanh(2, 33, 3, 3, 3.0f, 100.0f);
    case_tanh(1, 64, 13, 33, 1.0f, 4.0f);
}

// ---- frame_split, pixel_shuffle -----------------------------------------------------------------

// (drop: the split's first frames left out)
static void case_split(int N, int C, int H, int W, int s, int drop) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    vae_graph_set_output(g, vae_graph_frame_split_drop(g, vae_graph_input(g, N, C, H, W), s, drop));
    char label[160];
    snprintf(label, sizeof(label), "frame_split(n=%d,c=%d,h=%d,w=%d,s=%d,drop %d)", N, C, H, W, s, drop);
    check1(label, g, rnd(&pl, (size_t) N * C * H * W, -1, 1), CMP_EXACT);
    vae_graph_free(g);
    pool_free(&pl);
}

static void case_shuffle(int N, int C, int H, int W) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    vae_graph_set_output(g, vae_graph_pixel_shuffle(g, vae_graph_input(g, N, 4 * C, H, W)));
    char label[160];
    snprintf(label, sizeof(label), "pixel_shuffle(n=%d,c=%d->%d,h=%d,w=%d)", N, 4 * C, C, H, W);
    check1(label, g, rnd(&pl, (size_t) N * 4 * C * H * W, -1, 1), CMP_EXACT);
    vae_graph_free(g);
    pool_free(&pl);
}

// inside a graph: conv -> split -> conv -> shuffle; with keep_src the split's source is read again
// after it (a split that may not take its memory)
static void case_split_graph(int C, int s, bool keep_src) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    const int           N = 2, H = 3, W = 5;
    struct vae_tensor * x  = vae_graph_input(g, N, C, H, W);
    struct vae_tensor * c  = vae_graph_conv2d(g, x, conv_w(g, &pl, C, C, 1, NULL), NULL, NULL, VAE_ACT_NONE);
    struct vae_tensor * sp = vae_graph_frame_split(g, c, s);
    struct vae_tensor * y  = vae_graph_pixel_shuffle(
        g, vae_graph_conv2d(g, sp, conv_w(g, &pl, 4 * 3, C / s, 3, NULL), NULL, NULL, VAE_ACT_NONE));
    if (keep_src) {   // a dead node that reads c after the split
        vae_graph_conv2d(g, c, conv_w(g, &pl, C, C, 1, NULL), NULL, NULL, VAE_ACT_NONE);
    }
    vae_graph_set_output(g, y);
    char label[160];
    snprintf(label, sizeof(label), "conv,frame_split(c=%d,s=%d%s),conv,pixel_shuffle", C, s,
             keep_src ? ",source kept" : "");
    check1(label, g, rnd(&pl, (size_t) N * C * H * W, -1, 1), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_shuffles(void) {
    static const int splits[][6] = {
        // n, c, h, w, s, drop
        { 1, 40, 7, 5, 2, 0 }, { 2, 40, 3, 3, 1, 0 }, { 2, 64, 5, 3, 2, 0 }, { 1, 64, 7, 5, 4, 0 }, { 1, 48, 3, 7, 4, 0 },
        { 3, 6, 1, 1, 2, 0 },  { 1, 384, 5, 3, 2, 0 }, { 2, 96, 3, 5, 4, 0 }, { 1, 33, 5, 5, 3, 0 }, { 1, 16, 2, 2, 16, 0 },
        { 1, 96, 13, 33, 3, 0 }, { 3, 64, 5, 3, 2, 1 }, { 2, 33, 3, 7, 3, 2 }, { 1, 48, 2, 5, 2, 1 },
    };
    for (int i = 0; i < (int) (sizeof(splits) / sizeof(splits[0])); i++) {
        rng_seed((uint64_t) (4000 + i));
        case_split(splits[i][0], splits[i][1], splits[i][2], splits[i][3], splits[i][4], splits[i][5]);
    }
    static const int shuffles[][4] = {
        // n, c (out), h, w
        { 1, 3, 7, 5 }, { 2, 1, 3, 4 }, { 1, 20, 5, 3 }, { 1, 16, 3, 3 }, { 2, 12, 1, 1 }, { 1, 33, 4, 7 },
        { 1, 3, 33, 13 },
    };
    for (int i = 0; i < (int) (sizeof(shuffles) / sizeof(shuffles[0])); i++) {
        rng_seed((uint64_t) (4100 + i));
        case_shuffle(shuffles[i][0], shuffles[i][1], shuffles[i][2], shuffles[i][3]);
    }
    rng_seed(4200);
    case_split_graph(32, 2, false);
    case_split_graph(32, 2, true);
    case_split_graph(40, 2, false);
    case_split_graph(12, 3, false);
    case_split_graph(96, 2, true);
}

// ---- depthwise_conv2d, grouped conv2d --------------------------------------------------------------

// a conv of G groups (the depthwise op when depthwise: G = Ci, Co = Ci m, no residual, no
// activation); the residual, a 1x1 conv of the input, dies there (taken over in place)
static void case_grouped(int N, int Ci, int Co, int G, int H, int W, int k, bool bias, bool res, enum vae_act act,
                         bool depthwise) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, N, Ci, H, W);
    struct vae_tensor * r  = res ? vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, 1, NULL), NULL, NULL, VAE_ACT_NONE) : NULL;
    struct vae_tensor * b  = bias ? vec_w(g, &pl, Co, -0.5f, 0.5f, NULL) : NULL;
    struct vae_tensor * w  = conv_w(g, &pl, Co, Ci / G, k, NULL);
    vae_graph_set_output(g, depthwise ? vae_graph_depthwise_conv2d(g, x, w, b) : vae_graph_conv2d_groups(g, x, w, b, r, act, G));
    char label[200];
    grouped_conv_label(label, sizeof(label), N, Ci, Co, G, H, W, k, bias, res, act, depthwise);
    check1(label, g, rnd(&pl, (size_t) N * Ci * H * W, -1, 1), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_depthwise(void) {
    static const int cases[][6] = {
        // n, c, m, h, w, k (the last two DC-AE's: 5x5 without bias, 3x3 with)
        { 1, 1, 1, 1, 1, 1 }, { 2, 5, 2, 7, 5, 7 }, { 1, 20, 2, 9, 16, 7 }, { 1, 33, 3, 5, 6, 3 },
        { 2, 16, 1, 3, 3, 5 }, { 1, 24, 2, 13, 7, 7 }, { 1, 8, 2, 2, 3, 7 }, { 1, 48, 1, 7, 9, 5 },
        { 2, 40, 1, 6, 5, 3 },
    };
    for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++) {
        rng_seed((uint64_t) (4300 + i));
        case_grouped(cases[i][0], cases[i][1], cases[i][1] * cases[i][2], cases[i][1], cases[i][3], cases[i][4],
                     cases[i][5], i % 2 == 1, false, VAE_ACT_NONE, true);
    }
    const int (*groups)[7] = dcae_group_conv_cases;
    for (int i = 0; i < (int) (sizeof(dcae_group_conv_cases) / sizeof(groups[0])); i++) {
        const int combo = (i * 5) % 12;   // bit 0 bias, bit 1 residual, act = combo >> 2
        rng_seed((uint64_t) (4350 + i));
        case_grouped(groups[i][0], groups[i][1], groups[i][2], groups[i][3], groups[i][4], groups[i][5], groups[i][6],
                     combo & 1, (combo >> 1) & 1, (enum vae_act) (combo >> 2), false);
    }
}

// ---- DC-AE: linear_attention, glu, an EfficientViT block -----------------------------------------

// qkv [N, 3 G hd, H, W]; special 1: every q of group 0 in the last frame negative (a zero
// denominator: zeros, not NaN), 2: a NaN in one k of group 0 in the first frame (that group's
// outputs in that frame all NaN, in either form)
static void case_linear_attention(int N, int G, int hd, int H, int W, int special) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    const int          HW = H * W;
    vae_graph_set_output(g, vae_graph_linear_attention(g, vae_graph_input(g, N, 3 * G * hd, H, W), hd));
    float * in = rnd(&pl, (size_t) N * 3 * G * hd * HW, -1, 1);
    if (special == 1) {
        float * q = in + (size_t) (N - 1) * 3 * G * hd * HW;
        for (size_t i = 0; i < (size_t) hd * HW; i++) {
            q[i] = rng_grid(-fabsf(q[i]) - 0.125f);
        }
    } else if (special == 2) {
        in[(size_t) (hd + hd / 2) * HW + HW / 2] = NAN;
    }
    char label[200];
    snprintf(label, sizeof(label), "linear_attention(n=%d,groups=%d,hd=%d,h=%d,w=%d: %d positions, %s form%s)", N, G,
             hd, H, W, HW, HW > hd ? "linear" : "quadratic",
             special == 1 ? ",zero denominator" : special == 2 ? ",nan" : "");
    check1(label, g, in, CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

static void case_glu(int N, int C, int H, int W, enum vae_act act) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    vae_graph_set_output(g, vae_graph_glu(g, vae_graph_input(g, N, 2 * C, H, W), act));
    char label[160];
    snprintf(label, sizeof(label), "glu(n=%d,c=%d->%d,h=%d,w=%d,%s)", N, 2 * C, C, H, W, act_name(act));
    check1(label, g, rnd(&pl, (size_t) N * 2 * C * H * W, -4, 4), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// DC-AE's EfficientViT block (notes: 3.4) and head, as a builder would make it without a concat:
// x1 = x + rms(to_out(cat(la(qkv), la(proj_out(dw5x5(qkv)))))), the cat folded into two 1x1 convs;
// y = x1 + rms(conv_point(glu(dw3x3(silu(conv_inverted(x1))))));  out = conv3x3(relu(rms(y)))
static void case_dcae_block(int N, int C, int hd, int H, int W) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, N, C, H, W);
    struct vae_tensor * qkv = vae_graph_conv2d(g, x, conv_w(g, &pl, 3 * C, C, 1, NULL), NULL, NULL, VAE_ACT_NONE);
    struct vae_tensor * m   = vae_graph_depthwise_conv2d(g, qkv, conv_w(g, &pl, 3 * C, 1, 5, NULL), NULL);
    m = vae_graph_conv2d_groups(g, m, conv_w(g, &pl, 3 * C, hd, 1, NULL), NULL, NULL, VAE_ACT_NONE, 3 * C / hd);
    struct vae_tensor * h = vae_graph_conv2d(g, vae_graph_linear_attention(g, qkv, hd), conv_w(g, &pl, C, C, 1, NULL),
                                             NULL, NULL, VAE_ACT_NONE);
    h = vae_graph_conv2d(g, vae_graph_linear_attention(g, m, hd), conv_w(g, &pl, C, C, 1, NULL), NULL, h, VAE_ACT_NONE);
    struct vae_tensor * x1 = vae_graph_rms_norm_eps(g, h, 1e-5f, vec_w(g, &pl, C, .5f, 1.5f, NULL),
                                                    vec_w(g, &pl, C, -.5f, .5f, NULL), x, VAE_ACT_NONE);
    h = vae_graph_conv2d(g, x1, conv_w(g, &pl, 8 * C, C, 1, NULL), vec_w(g, &pl, 8 * C, -.5f, .5f, NULL), NULL,
                         VAE_ACT_SILU);
    h = vae_graph_depthwise_conv2d(g, h, conv_w(g, &pl, 8 * C, 1, 3, NULL), vec_w(g, &pl, 8 * C, -.5f, .5f, NULL));
    h = vae_graph_conv2d(g, vae_graph_glu(g, h, VAE_ACT_SILU), conv_w(g, &pl, C, 4 * C, 1, NULL), NULL, NULL,
                         VAE_ACT_NONE);
    struct vae_tensor * y = vae_graph_rms_norm_eps(g, h, 1e-5f, vec_w(g, &pl, C, .5f, 1.5f, NULL),
                                                   vec_w(g, &pl, C, -.5f, .5f, NULL), x1, VAE_ACT_NONE);
    y = vae_graph_rms_norm_eps(g, y, 1e-5f, vec_w(g, &pl, C, .5f, 1.5f, NULL), vec_w(g, &pl, C, -.5f, .5f, NULL), NULL,
                               VAE_ACT_RELU);
    vae_graph_set_output(g, vae_graph_conv2d(g, y, conv_w(g, &pl, 3, C, 3, NULL), vec_w(g, &pl, 3, -.5f, .5f, NULL),
                                             NULL, VAE_ACT_NONE));
    char label[200];
    snprintf(label, sizeof(label), "dcae_block(n=%d,c=%d,hd=%d,h=%d,w=%d: %s attention)", N, C, hd, H, W,
             H * W > hd ? "linear" : "quadratic");
    check1(label, g, rnd(&pl, (size_t) N * C * H * W, -1, 1), CMP_CHAIN);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_dcae(void) {
    const int (*la)[5] = dcae_linear_attention_cases;
    for (int i = 0; i < (int) (sizeof(dcae_linear_attention_cases) / sizeof(la[0])); i++) {
        rng_seed((uint64_t) (4500 + i));
        case_linear_attention(la[i][0], la[i][1], la[i][2], la[i][3], la[i][4], i % 3);
    }
    static const int glu[][4] = { { 1, 1, 7, 5 }, { 2, 20, 3, 3 }, { 1, 33, 5, 4 }, { 1, 64, 9, 1 }, { 2, 8, 13, 7 } };
    for (int i = 0; i < (int) (sizeof(glu) / sizeof(glu[0])); i++) {
        rng_seed((uint64_t) (4600 + i));
        case_glu(glu[i][0], glu[i][1], glu[i][2], glu[i][3], (enum vae_act) (i % 3));
    }
    rng_seed(4700);
    case_dcae_block(1, 32, 16, 4, 4);   // 16 positions = hd: quadratic
    case_dcae_block(2, 32, 8, 5, 3);    // linear
    case_dcae_block(1, 64, 32, 9, 7);   // linear, DC-AE's head dim
}

// ---- SVD's temporal ops ------------------------------------------------------------------------

// group_norm with statistics over all frames, then time_conv (kt, 1, 1) over the frames with a
// residual (the temporal block's shape), and a bare time_conv: every frame of the call feeds
// every output frame
static void case_temporal(int N, int Ci, int Co, int H, int W, int kt, enum vae_act act) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, N, Ci, H, W);
    const int64_t       sh[5] = { Co, Ci, kt, 1, 1 }, sh2[5] = { Co, Co, kt, 1, 1 };
    const float         s1 = 1.5f / sqrtf((float) (Ci * kt)), s2 = 1.5f / sqrtf((float) (Co * kt));
    struct vae_tensor * r  = vae_graph_conv2d(g, x, conv_w(g, &pl, Co, Ci, 1, NULL), NULL, NULL, VAE_ACT_NONE);
    struct vae_tensor * h  = vae_graph_group_norm_frames(g, x, Ci % 4 ? 1 : 4, 1e-5f, vec_w(g, &pl, Ci, .5f, 1.5f, NULL),
                                                         vec_w(g, &pl, Ci, -.5f, .5f, NULL), VAE_ACT_SILU);
    h = vae_graph_time_conv(g, h, vae_graph_weight(g, "t1", rnd(&pl, (size_t) Co * Ci * kt, -s1, s1), 5, sh),
                            vec_w(g, &pl, Co, -.5f, .5f, NULL), r, act);
    h = vae_graph_time_conv(g, h, vae_graph_weight(g, "t2", rnd(&pl, (size_t) Co * Co * kt, -s2, s2), 5, sh2), NULL,
                            NULL, VAE_ACT_NONE);
    vae_graph_set_output(g, h);
    char label[160];
    snprintf(label, sizeof(label), "group_norm over frames,time_conv(n=%d,ci=%d,co=%d,h=%d,w=%d,kt=%d,%s)", N, Ci, Co,
             H, W, kt, act_name(act));
    check1(label, g, rnd(&pl, (size_t) N * Ci * H * W, -1, 1), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_temporal(void) {
    static const int cases[][6] = {
        // n, ci, co, h, w, kt
        { 1, 32, 32, 7, 5, 3 }, { 5, 32, 32, 6, 5, 3 }, { 3, 20, 33, 3, 7, 3 }, { 4, 33, 17, 1, 1, 3 },
        { 2, 8, 3, 5, 3, 1 },   { 6, 12, 40, 3, 3, 3 }, { 3, 130, 64, 5, 3, 3 },
    };
    for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++) {
        rng_seed((uint64_t) (4400 + i));
        case_temporal(cases[i][0], cases[i][1], cases[i][2], cases[i][3], cases[i][4], cases[i][5],
                      (enum vae_act) (i % 3));
    }
}

// ---- a ViT's ops (MiniMax-H3): attention in heads, layer_norm, tokens, rope, crossfade ----------

// PyTorch's LayerNorm (eps 1e-6) of inputs U(-1, 1) * scale + offset (the offset is the mean it
// takes out), with gamma and beta (affine) or without
static void case_layer_norm(int N, int C, int H, int W, float scale, float offset, bool affine) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    vae_graph_set_output(g, vae_graph_layer_norm(g, vae_graph_input(g, N, C, H, W), 1e-6f,
                                                 affine ? vec_w(g, &pl, C, .5f, 1.5f, NULL) : NULL,
                                                 affine ? vec_w(g, &pl, C, -.5f, .5f, NULL) : NULL));
    float * in = rnd(&pl, (size_t) N * C * H * W, -1, 1);
    for (size_t i = 0; i < (size_t) N * C * H * W; i++) {
        in[i] = rng_grid(in[i] * scale + offset);
    }
    char label[160];
    snprintf(label, sizeof(label), "layer_norm(n=%d,c=%d,h=%d,w=%d,scale=%g,offset=%g%s)", N, C, H, W, scale, offset,
             affine ? ",gamma,beta" : "");
    check1(label, g, in, CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// frames [N, C, H, W] to tokens with E extra rows and z zero tokens, and tokens [1, C, 1, L] back to
// those frames: copies, exact
static void case_tokens(int N, int C, int H, int W, int E, int z) {
    struct pool         pl    = { 0 };
    struct vae_graph *  g     = graph_new(true);
    const int64_t       sh[2] = { E, C };
    const int           L     = N * H * W + E + z;
    struct vae_tensor * extra = E ? vae_graph_weight(g, "extra", rnd(&pl, (size_t) E * C, -1, 1), 2, sh) : NULL;
    vae_graph_set_output(g, vae_graph_tokens(g, vae_graph_input(g, N, C, H, W), extra, z));
    char label[160];
    snprintf(label, sizeof(label), "tokens(n=%d,c=%d,h=%d,w=%d,extra=%d,zeros=%d)", N, C, H, W, E, z);
    check1(label, g, rnd(&pl, (size_t) N * C * H * W, -1, 1), CMP_EXACT);
    vae_graph_free(g);
    g = graph_new(true);
    vae_graph_set_output(g, vae_graph_untokens(g, vae_graph_input(g, 1, C, 1, L), N, H, W));
    snprintf(label, sizeof(label), "untokens(c=%d,%d tokens->n=%d,h=%d,w=%d)", C, L, N, H, W);
    check1(label, g, rnd(&pl, (size_t) C * L, -1, 1), CMP_EXACT);
    vae_graph_free(g);
    pool_free(&pl);
}

// q and k of qkv [1, 3D, 1, L] normalised in heads of hd and rotated on their first rd channels for
// a t x h x w grid of tokens and `extra` tokens past it, v copied; inputs U(-mag, mag)
static void case_rope(int D, int hd, int rd, int t, int h, int w, int extra, float mag) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = graph_new(true);
    const int          L  = t * h * w + extra;
    vae_graph_set_output(g, vae_graph_rope(g, vae_graph_input(g, 1, 3 * D, 1, L), hd, rd, 10000.0f, 1e-6f, t, h, w));
    char label[160];
    snprintf(label, sizeof(label), "rope(d=%d,hd=%d,rd=%d,grid %dx%dx%d+%d tokens,mag=%g)", D, hd, rd, t, h, w, extra,
             mag);
    check1(label, g, rnd(&pl, (size_t) 3 * D * L, -mag, mag), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// MiniMax-H3's attention in small: frames [t, 3D, h, w] -> tokens (and E learned ones) -> rope ->
// attention in heads of hd -> the frames [t, D, h, w] again, one graph
static void case_vit_chain(int t, int D, int hd, int rd, int h, int w, int E) {
    struct pool         pl    = { 0 };
    struct vae_graph *  g     = graph_new(true);
    const int64_t       sh[2] = { E, 3 * D };
    struct vae_tensor * extra = vae_graph_weight(g, "extra", rnd(&pl, (size_t) E * 3 * D, -1, 1), 2, sh);
    struct vae_tensor * x     = vae_graph_tokens(g, vae_graph_input(g, t, 3 * D, h, w), extra, 0);
    x = vae_graph_attention_heads(g, vae_graph_rope(g, x, hd, rd, 10000.0f, 1e-6f, t, h, w), hd);
    vae_graph_set_output(g, vae_graph_untokens(g, x, t, h, w));
    char label[160];
    snprintf(label, sizeof(label), "tokens,rope,attention,untokens(t=%d,d=%d,hd=%d,rd=%d,h=%d,w=%d,extra=%d)", t, D, hd,
             rd, h, w, E);
    check1(label, g, rnd(&pl, (size_t) t * 3 * D * h * w, -1, 1), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_vit(void) {
    static const int att[][5] = {
        // n, c, hd, h, w: tensor cores at fp16 and bf16 where hd is a multiple of 16 (the release's 64),
        // SIMT otherwise (hd 5, 20: the last head writes the padding lanes)
        { 1, 32, 16, 1, 47 }, { 1, 64, 16, 1, 130 }, { 1, 128, 32, 1, 47 }, { 2, 15, 5, 3, 5 },
        { 1, 128, 64, 1, 130 }, { 1, 40, 20, 1, 47 }, { 1, 96, 48, 3, 11 },
    };
    for (int s = 0; s < (int) (sizeof(att) / sizeof(att[0])); s++) {
        for (int i = 0; i < 2; i++) {
            rng_seed((uint64_t) (7000 + s * 2 + i));
            case_attention(att[s][0], att[s][1], att[s][2], att[s][3], att[s][4], i ? 3.0f : 1.0f);
        }
    }
    static const int ln[][4] = { { 1, 32, 1, 47 }, { 2, 33, 3, 5 }, { 1, 384, 1, 13 }, { 1, 5, 7, 3 } };
    for (int s = 0; s < (int) (sizeof(ln) / sizeof(ln[0])); s++) {
        rng_seed((uint64_t) (7100 + s));
        case_layer_norm(ln[s][0], ln[s][1], ln[s][2], ln[s][3], s == 1 ? 30.0f : 1.0f, s == 2 ? 0.0f : 10.0f, s != 3);
    }
    static const int tok[][6] = {
        // n, c, h, w, extra, zeros
        { 3, 20, 2, 3, 4, 1 }, { 1, 16, 5, 7, 0, 0 }, { 2, 33, 1, 9, 2, 0 }, { 7, 24, 2, 3, 0, 1 }, { 1, 130, 3, 5, 5, 3 },
    };
    for (int s = 0; s < (int) (sizeof(tok) / sizeof(tok[0])); s++) {
        rng_seed((uint64_t) (7200 + s));
        case_tokens(tok[s][0], tok[s][1], tok[s][2], tok[s][3], tok[s][4], tok[s][5]);
    }
    static const int rope[][8] = {
        // d, hd, rd, t, h, w, extra, mag
        { 32, 16, 12, 3, 2, 5, 5, 1 }, { 64, 16, 6, 2, 3, 7, 5, 1 }, { 128, 32, 24, 2, 8, 8, 2, 30 },
        { 18, 6, 6, 3, 1, 4, 0, 1 },   { 10, 5, 0, 1, 3, 3, 1, 1 },   { 128, 64, 48, 1, 4, 6, 1, 1 },
    };
    for (int s = 0; s < (int) (sizeof(rope) / sizeof(rope[0])); s++) {
        rng_seed((uint64_t) (7300 + s));
        case_rope(rope[s][0], rope[s][1], rope[s][2], rope[s][3], rope[s][4], rope[s][5], rope[s][6], (float) rope[s][7]);
    }
    rng_seed(7400);
    case_vit_chain(3, 32, 16, 12, 2, 5, 5);
    case_vit_chain(2, 64, 32, 18, 3, 7, 5);
}

// a step graph of n frames: x -> crossfade(slot 0) of the frames after the first pre, over d
static struct vae_graph * crossfade_graph(int n, int C, int H, int W, int pre, int d) {
    struct vae_graph * g = graph_new(true);
    vae_graph_set_output(g, vae_graph_crossfade(g, vae_graph_input(g, n, C, H, W), 0, pre, n - pre, d));
    return g;
}

// chunks of the given sizes through a cross-fade over d frames (compare_streams): the first
// chunk after a reset passes its frames as they are, each later one fades in from those the
// chunk before kept
static void case_crossfade(int C, int H, int W, int pre, int d, const int steps[3]) {
    struct pool        pl = { 0 };
    const int          T  = steps[0] + steps[1] + steps[2];
    const size_t       f  = (size_t) C * H * W;
    const float *      in = rnd(&pl, (size_t) T * f, -1.0f, 1.0f);
    struct vae_graph * graphs[STREAM_STEPS] = { 0 };
    for (int i = 0; i < 3; i++) {
        graphs[steps[i]] = graphs[steps[i]] ? graphs[steps[i]] : crossfade_graph(steps[i], C, H, W, pre, d);
    }
    char label[200];
    snprintf(label, sizeof(label), "crossfade(c=%d,h=%d,w=%d,pre=%d,d=%d) steps %d,%d,%d", C, H, W, pre, d, steps[0],
             steps[1], steps[2]);
    compare_streams(&pl, graphs, steps, in, f, f, label);
    for (int n = 0; n < STREAM_STEPS; n++) {
        vae_graph_free(graphs[n]);
    }
    pool_free(&pl);
}

static void test_crossfade(void) {
    static const int cases[][8] = {
        // c, h, w, pre, d, steps
        { 3, 4, 5, 1, 2, 3, 5, 4 }, { 19, 3, 2, 0, 3, 4, 7, 3 }, { 16, 1, 47, 2, 1, 3, 4, 3 }, { 33, 2, 3, 3, 4, 7, 7, 7 },
    };
    for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++) {
        rng_seed((uint64_t) (7500 + i));
        case_crossfade(cases[i][0], cases[i][1], cases[i][2], cases[i][3], cases[i][4], &cases[i][5]);
    }
}

// ---- graphs of several ops and inputs ----------------------------------------------------------

// y = silu(conv(x0) + b + x1), z = conv1x1(y) + x1: input 1 is a residual read twice; computed
// with two input sets on one prepared graph
static void case_inputs(int N, int Ci, int Co, int H, int W) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x0 = vae_graph_input(g, N, Ci, H, W);
    struct vae_tensor * x1 = vae_graph_input(g, N, Co, H, W);
    struct vae_tensor * y  = vae_graph_conv2d(g, x0, conv_w(g, &pl, Co, Ci, 3, NULL), vec_w(g, &pl, Co, -.5f, .5f, NULL), x1,
                                              VAE_ACT_SILU);
    vae_graph_set_output(g, vae_graph_conv2d(g, y, conv_w(g, &pl, Co, Co, 1, NULL), NULL, x1, VAE_ACT_NONE));
    const size_t          n0 = (size_t) N * Ci * H * W, n1 = (size_t) N * Co * H * W;
    const float * const   a[2]    = { rnd(&pl, n0, -1, 1), rnd(&pl, n1, -1, 1) };
    const float * const   b[2]    = { rnd(&pl, n0, -1, 1), rnd(&pl, n1, -1, 1) };
    const float * const * sets[2] = { a, b };
    char                  label[160];
    snprintf(label, sizeof(label), "two_inputs(n=%d,x0 cin=%d,x1 c=%d,h=%d,w=%d: silu(conv(x0)+x1), conv1x1+x1)", N, Ci,
             Co, H, W);
    check_sets(label, g, 2, sets, CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

// GN + SiLU, 3x3 conv, GN + SiLU, 3x3 conv + shortcut (1x1 when the width changes)
static struct vae_tensor * resblock(struct vae_graph * g, struct pool * pl, struct vae_tensor * x, int co, int groups) {
    const int           ci = (int) x->ne[1];
    struct vae_tensor * h  = vae_graph_group_norm(g, x, ci % groups ? 1 : groups, 1e-6f, vec_w(g, pl, ci, .5f, 1.5f, NULL),
                                                  vec_w(g, pl, ci, -.3f, .3f, NULL), VAE_ACT_SILU);
    h = vae_graph_conv2d(g, h, conv_w(g, pl, co, ci, 3, NULL), vec_w(g, pl, co, -.3f, .3f, NULL), NULL, VAE_ACT_NONE);
    h = vae_graph_group_norm(g, h, co % groups ? 1 : groups, 1e-6f, vec_w(g, pl, co, .5f, 1.5f, NULL),
                             vec_w(g, pl, co, -.3f, .3f, NULL), VAE_ACT_SILU);
    struct vae_tensor * sc = co != ci ? vae_graph_conv2d(g, x, conv_w(g, pl, co, ci, 1, NULL), NULL, NULL, VAE_ACT_NONE) : x;
    return vae_graph_conv2d(g, h, conv_w(g, pl, co, co, 3, NULL), vec_w(g, pl, co, -.3f, .3f, NULL), sc, VAE_ACT_NONE);
}

// a small decoder: conv in, residual blocks, upsamples (fused or not), widths that change, tanh
// clamp, conv to RGB; two input sets
static void case_decoder(int N, int Cz, int H, int W, bool fused) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(fused);
    struct vae_tensor * t  = vae_graph_input(g, N, Cz, H, W);
    // 32 groups of 64 channels hold 2 values each at 1x1: too ill-conditioned to compare
    const int groups = H * W >= 4 ? 32 : 4;
    t = vae_graph_conv2d(g, t, conv_w(g, &pl, 64, Cz, 3, NULL), vec_w(g, &pl, 64, -.3f, .3f, NULL), NULL, VAE_ACT_NONE);
    t = resblock(g, &pl, t, 64, groups);
    t = resblock(g, &pl, t, 64, groups);
    t = vae_graph_upsample_conv2d(g, t, conv_w(g, &pl, 33, 64, 3, NULL), vec_w(g, &pl, 33, -.3f, .3f, NULL), VAE_ACT_NONE);
    t = resblock(g, &pl, t, 20, 4);
    t = vae_graph_conv2d(g, t, conv_w(g, &pl, 5, 20, 1, NULL), NULL, NULL, VAE_ACT_RELU);
    t = vae_graph_upsample_conv2d(g, t, conv_w(g, &pl, 16, 5, 3, NULL), vec_w(g, &pl, 16, -.3f, .3f, NULL), VAE_ACT_NONE);
    t = resblock(g, &pl, t, 16, 4);
    t = vae_graph_tanh_clamp(g, t, 3.0f);
    vae_graph_set_output(g, vae_graph_conv2d(g, t, conv_w(g, &pl, 3, 16, 3, NULL), vec_w(g, &pl, 3, -.3f, .3f, NULL), NULL,
                                             VAE_ACT_NONE));
    const size_t          n       = (size_t) N * Cz * H * W;
    const float * const   a[1]    = { rnd(&pl, n, -2, 2) };
    const float * const   b[1]    = { rnd(&pl, n, -2, 2) };
    const float * const * sets[2] = { a, b };
    char                  label[160];
    snprintf(label, sizeof(label), "decoder(n=%d,cz=%d,h=%d,w=%d,%s,%d nodes)", N, Cz, H, W,
             fused ? "fused" : "unfused", g->n_nodes);
    check_sets(label, g, 2, sets, CMP_CHAIN);
    vae_graph_free(g);
    pool_free(&pl);
}

// Wan's middle attention: x + proj(attention(qkv(rms_norm(x))))
static void case_attention_block(int N, int C, int H, int W) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, N, C, H, W);
    struct vae_tensor * h  = vae_graph_rms_norm(g, x, vec_w(g, &pl, C, .5f, 1.5f, NULL), VAE_ACT_NONE);
    h = vae_graph_conv2d(g, h, conv_w(g, &pl, 3 * C, C, 1, NULL), vec_w(g, &pl, 3 * C, -.3f, .3f, NULL), NULL, VAE_ACT_NONE);
    h = vae_graph_attention(g, h);
    vae_graph_set_output(g, vae_graph_conv2d(g, h, conv_w(g, &pl, C, C, 1, NULL), vec_w(g, &pl, C, -.3f, .3f, NULL), x,
                                             VAE_ACT_NONE));
    char label[160];
    snprintf(label, sizeof(label), "attention_block(n=%d,c=%d,h=%d,w=%d: x + proj(attn(qkv(rms_norm(x)))))", N, C, H,
             W);
    check1(label, g, rnd(&pl, (size_t) N * C * H * W, -1, 1), CMP_OP);
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_graphs(void) {
    rng_seed(4500);
    case_inputs(2, 5, 19, 7, 9);
    case_inputs(1, 19, 5, 9, 7);
    case_inputs(1, 16, 32, 1, 3);
    rng_seed(4600);
    case_decoder(1, 4, 3, 2, true);
    case_decoder(1, 4, 3, 2, false);
    case_decoder(2, 16, 7, 5, true);
    case_decoder(2, 16, 7, 5, false);
    case_decoder(1, 4, 1, 1, true);
    case_decoder(1, 32, 13, 9, true);
    rng_seed(4700);
    case_attention_block(1, 24, 7, 5);
    case_attention_block(2, 64, 3, 13);
    case_attention_block(1, 384, 7, 5);
}

// ---- NaN: it spreads where the CPU's spreads, and nowhere else ---------------------------------

static void test_nan(void) {
    struct pool pl = { 0 };
    rng_seed(8000);
    {
        // conv 5 -> 20 -> 33 (3x3 each), 1x1 to 3: a NaN at one pixel spreads over a 5x5 window
        const int           N = 2, H = 9, W = 7;
        struct vae_graph *  g = graph_new(true);
        struct vae_tensor * x = vae_graph_input(g, N, 5, H, W);
        x = vae_graph_conv2d(g, x, conv_w(g, &pl, 20, 5, 3, NULL), NULL, NULL, VAE_ACT_NONE);
        x = vae_graph_conv2d(g, x, conv_w(g, &pl, 33, 20, 3, NULL), NULL, NULL, VAE_ACT_SILU);
        vae_graph_set_output(g, vae_graph_conv2d(g, x, conv_w(g, &pl, 3, 33, 1, NULL), NULL, NULL, VAE_ACT_NONE));
        float * in                                     = rnd(&pl, (size_t) N * 5 * H * W, -1, 1);
        in[((size_t) 0 * 5 + 2) * H * W + 4 * W + 3] = NAN;   // frame 0, channel 2, (3, 4)
        const float * fin = rnd(&pl, (size_t) N * 5 * H * W, -1, 1);
        const float * const   a[1]    = { in };
        const float * const   b[1]    = { fin };
        const float * const * sets[2] = { a, b };   // then finite inputs: no NaN left behind
        check_sets("nan_conv_chain(n=2,5->20->33->3,h=9,w=7,one NaN input)", g, 2, sets, CMP_OP);
        vae_graph_free(g);
    }
    {
        // group norm: a NaN poisons its own group of its own frame only
        const int          N = 2, C = 32, H = 3, W = 5;
        struct vae_graph * g = graph_new(true);
        vae_graph_set_output(g, vae_graph_group_norm(g, vae_graph_input(g, N, C, H, W), 4, 1e-6f,
                                                     vec_w(g, &pl, C, .5f, 1.5f, NULL), vec_w(g, &pl, C, -.5f, .5f, NULL),
                                                     VAE_ACT_NONE));
        float * in                            = rnd(&pl, (size_t) N * C * H * W, -1, 1);
        in[((size_t) 1 * C + 9) * H * W + 7] = NAN;   // frame 1, channel 9: group 1
        check1("nan_group_norm(n=2,c=32,groups=4,one NaN in frame 1 group 1)", g, in, CMP_OP);
        vae_graph_free(g);
    }
    {
        // tanh clamp and a fused upsample conv of a NaN
        struct vae_graph *  g = graph_new(true);
        struct vae_tensor * x = vae_graph_tanh_clamp(g, vae_graph_input(g, 1, 3, 4, 4), 3.0f);
        vae_graph_set_output(g, vae_graph_upsample_conv2d(g, x, conv_w(g, &pl, 3, 3, 3, NULL), NULL, VAE_ACT_NONE));
        float * in = rnd(&pl, 3 * 4 * 4, -1, 1);
        in[5]      = NAN;
        check1("nan_tanh_clamp,upsample_conv2d(c=3,h=4,w=4)", g, in, CMP_OP);
        vae_graph_free(g);
    }
    pool_free(&pl);
}

// ---- read_frame: the bytes of the CPU's frames -------------------------------------------------

// the 4:2:0 formats (planar luma, subsampled chroma)
static bool is_yuv(enum vae_pixel_format f) {
    return f == VAE_PIXEL_I420 || f == VAE_PIXEL_NV12 || f == VAE_PIXEL_A420;
}

static const char * fmt_name(enum vae_pixel_format f) {
    static const char * n[] = { "RGB", "RGBA", "RGBX", "BGRX", "BGRA", "I420", "NV12", "ARGB", "ABGR", "AYUV", "A420" };
    return n[f];
}

struct frame_case {
    const char * what;
    float        scale, offset;
    float        kr, kb;   // 0: an RGB format
    bool         full;
};

static const struct frame_case frame_cases[] = {
    { "", 1.0f, 0.0f, 0, 0, false },
    { ",scale .5 offset .5", 0.5f, 0.5f, 0, 0, false },
    { ",BT601 limited", 0.5f, 0.5f, 0.299f, 0.114f, false },
    { ",BT601 full", 0.5f, 0.5f, 0.299f, 0.114f, true },
    { ",BT709 limited", 1.0f, 0.0f, 0.2126f, 0.0722f, false },
    { ",BT709 full", 0.5f, 0.5f, 0.2126f, 0.0722f, true },
};

#define MAX_FRAME_BUFS 32

// the host planes of one frame; the `extra` bytes after each row must stay SENTINEL
struct frame_buf {
    struct vae_frame          f;
    const struct frame_case * fc;
    uint8_t *                 p[4];
    size_t                    size[4];
    int                       row[4];   // bytes of a row that belong to the frame
    bool                      read;
};

static void frame_buf_init(struct frame_buf * fb, enum vae_pixel_format fmt, int W, int H, int extra,
                           const struct frame_case * fc, bool alpha) {
    memset(fb, 0, sizeof(*fb));
    fb->fc = fc;
    fb->f  = (struct vae_frame) { .format = fmt, .width = W, .height = H, .scale = fc->scale, .offset = fc->offset,
                                  .kr = fc->kr, .kb = fc->kb, .full_range = fc->full, .alpha = alpha };
    const int cw = (W + 1) / 2, ch = (H + 1) / 2;
    int       rows[4] = { H, ch, ch, H };
    if (!is_yuv(fmt)) {
        fb->row[0] = W * (fmt == VAE_PIXEL_RGB ? 3 : 4);
    } else {
        fb->row[0] = W;
        fb->row[1] = fmt != VAE_PIXEL_NV12 ? cw : 2 * cw;
        fb->row[2] = fmt != VAE_PIXEL_NV12 ? cw : 0;
        fb->row[3] = fmt == VAE_PIXEL_A420 ? W : 0;
    }
    for (int i = 0; i < 4; i++) {
        if (fb->row[i]) {
            fb->f.strides[i] = fb->row[i] + extra;
            fb->size[i]      = (size_t) fb->f.strides[i] * rows[i];
            fb->p[i]         = xmalloc(fb->size[i]);
            memset(fb->p[i], SENTINEL, fb->size[i]);
            fb->f.planes[i] = fb->p[i];
        }
    }
}

static void frame_buf_free(struct frame_buf * fb) {
    for (int i = 0; i < 4; i++) {
        free(fb->p[i]);
    }
}

#ifdef GPU_TEST_CUDA_RUNTIME
static const bool have_device_frames = true;
#else
static const bool have_device_frames = false;   // the build gives tests no CUDA runtime headers
#endif

// frame n of g into fb's planes; device: through planes of cudaMalloc'd memory (dst.device)
static bool read_frame_to(vae_backend_t * b, struct vae_graph * g, int n, struct frame_buf * fb, bool device,
                          char * err, size_t err_size) {
    if (!device) {
        return vae_backend_graph_read_frame(b, g, n, &fb->f, err, err_size);
    }
#ifdef GPU_TEST_CUDA_RUNTIME
    struct vae_frame f  = fb->f;
    void *           d[4] = { NULL, NULL, NULL, NULL };
    bool             ok = true;
    f.device            = true;
    for (int i = 0; i < 4; i++) {
        if (fb->size[i]) {
            ok = ok && cudaMalloc(&d[i], fb->size[i]) == cudaSuccess &&
                 cudaMemcpy(d[i], fb->p[i], fb->size[i], cudaMemcpyHostToDevice) == cudaSuccess;
            f.planes[i] = d[i];
        }
    }
    if (!ok) {
        snprintf(err, err_size, "cudaMalloc or cudaMemcpy of the test's planes failed");
    }
    ok = ok && vae_backend_graph_read_frame(b, g, n, &f, err, err_size);
    if (ok && cudaDeviceSynchronize() != cudaSuccess) {
        snprintf(err, err_size, "cudaDeviceSynchronize after read_frame: %s", cudaGetErrorString(cudaGetLastError()));
        ok = false;
    }
    for (int i = 0; i < 4; i++) {
        if (d[i]) {
            ok = ok && cudaMemcpy(fb->p[i], d[i], fb->size[i], cudaMemcpyDeviceToHost) == cudaSuccess;
            cudaFree(d[i]);
        }
    }
    return ok;
#else
    (void) b, (void) g, (void) n, (void) fb;
    snprintf(err, err_size, "no device frames in this test build");
    return false;
#endif
}

// prepare g on b and compute it; false after a failed check (g released)
static bool prepare_compute(vae_backend_t * b, struct vae_graph * g, const float * in, const char * label) {
    char err[512] = "";
    bool ok       = vae_backend_graph_prepare(b, g, 0, err, sizeof(err)) &&
              vae_backend_graph_compute(b, g, NULL, in, err, sizeof(err));
    CHECK(ok, "%s on %s: %s", label, vae_backend_name(b), err);
    if (!ok) {
        vae_backend_graph_release(b, g);
    }
    return ok;
}

// every (format, frame case) of frame n of the prepared, computed g on b, into bufs; the count
static int read_all_frames(vae_backend_t * b, struct vae_graph * g, int n, int extra, bool device,
                           struct frame_buf * bufs, const char * label) {
    const int H = (int) g->output->ne[2], W = (int) g->output->ne[3];
    int       count = 0;
    for (int fmt = VAE_PIXEL_RGB; fmt <= VAE_PIXEL_A420; fmt++) {
        for (int c = 0; c < (int) (sizeof(frame_cases) / sizeof(frame_cases[0])); c++) {
            if ((is_yuv((enum vae_pixel_format) fmt) || fmt == VAE_PIXEL_AYUV) != (frame_cases[c].kr > 0)) {
                continue;
            }
            struct frame_buf * fb = &bufs[count++];
            char               err[512] = "";
            frame_buf_init(fb, (enum vae_pixel_format) fmt, W, H, extra, &frame_cases[c], g->output->ne[1] == 4);
            fb->read = read_frame_to(b, g, n, fb, device, err, sizeof(err));
            CHECK(fb->read, "%s %s%s on %s (%s frame): %s", label, fmt_name(fb->f.format), frame_cases[c].what,
                  vae_backend_name(b), device ? "device" : "host", err);
        }
    }
    return count;
}

// frame n of g (one input `in`) on the GPU at each precision (fp32 only when fp32_only), in host
// and device frames, against the CPU's bytes: within one level, at most 1% of them different
// (rounding near .5 may go either way), nothing written past a row
static void check_frames(const char * label, struct vae_graph * g, const float * in, int n, int extra,
                         bool fp32_only) {
    struct frame_buf ref[MAX_FRAME_BUFS], got[MAX_FRAME_BUFS];
    if (!prepare_compute(cpu_be, g, in, label)) {
        return;
    }
    const int n_ref = read_all_frames(cpu_be, g, n, extra, false, ref, label);
    vae_backend_graph_release(cpu_be, g);
    for (int i = 0; i < N_PRECISIONS; i++) {
        const enum vae_precision p = precisions[i];
        if (!gpu[p] || (fp32_only && p != VAE_PRECISION_FP32) || !prepare_compute(gpu[p], g, in, label)) {
            continue;
        }
        for (int device = 0; device <= (have_device_frames ? 1 : 0); device++) {
            const int n_got = read_all_frames(gpu[p], g, n, extra, device, got, label);
            size_t    bytes = 0, differ = 0, bad_pad = 0;
            int       max_diff = 0, unread = 0;
            char      first[200] = "";
            for (int k = 0; k < n_got && k < n_ref; k++) {
                unread += !got[k].read || !ref[k].read;
                for (int pl = 0; pl < 4 && got[k].read && ref[k].read; pl++) {
                    for (size_t j = 0; j < got[k].size[pl]; j++) {
                        const int a = got[k].p[pl][j], r = ref[k].p[pl][j];
                        if ((int) (j % (size_t) got[k].f.strides[pl]) >= got[k].row[pl]) {
                            bad_pad += a != SENTINEL;
                            continue;
                        }
                        bytes++;
                        differ += a != r;
                        if (abs(a - r) > max_diff) {
                            max_diff = abs(a - r);
                            snprintf(first, sizeof(first), "%s%s plane %d byte %zu: %d, cpu %d",
                                     fmt_name(got[k].f.format), got[k].fc->what, pl, j, a, r);
                        }
                    }
                }
            }
            const bool ok = unread == 0 && bad_pad == 0 && max_diff <= 1 && differ <= bytes / 100 + 2;
            printf("%s [%s] %s frames: %s %d frames, %zu of %zu bytes differ (max %d)%s%s\n", label,
                   vae_precision_name(p), device ? "device" : "host", ok ? "OK" : "FAIL", n_got, differ, bytes,
                   max_diff, max_diff ? ", largest: " : "", first);
            CHECK(n_got == n_ref && unread == 0, "%s [%s]: %d frames not read", label, vae_precision_name(p), unread);
            CHECK(bad_pad == 0, "%s [%s]: %zu bytes written past the rows", label, vae_precision_name(p), bad_pad);
            CHECK(max_diff <= 1, "%s [%s]: a byte %d levels from the cpu's (%s)", label, vae_precision_name(p),
                  max_diff, first);
            CHECK(differ <= bytes / 100 + 2, "%s [%s]: %zu of %zu bytes differ from the cpu's", label,
                  vae_precision_name(p), differ, bytes);
            for (int k = 0; k < n_got; k++) {
                frame_buf_free(&got[k]);
            }
        }
        vae_backend_graph_release(gpu[p], g);
    }
    for (int k = 0; k < n_ref; k++) {
        frame_buf_free(&ref[k]);
    }
}

// special values at fixed places: NaN (-> 0), infinities, huge values, exact ties
static void put_specials(float * in, size_t n) {
    static const float sp[] = { NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0.5f, 0.0f, 1.0f, -1.0f, 2.0f, -NAN };
    for (size_t i = 0; i < sizeof(sp) / sizeof(sp[0]); i++) {
        in[(i * 5 + 1) % n] = sp[i];
    }
    in[0] = in[n / 2] = NAN;
}

static void test_frames(void) {
    static const int sizes[][2] = { { 1, 1 }, { 7, 5 }, { 33, 13 }, { 13, 33 }, { 2, 2 }, { 3, 1 }, { 16, 9 } };
    for (int s = 0; s < (int) (sizeof(sizes) / sizeof(sizes[0])); s++) {
        const int   W = sizes[s][0], H = sizes[s][1], extra = s % 2 ? 5 : 0;
        struct pool pl = { 0 };
        char        label[160];
        rng_seed((uint64_t) (5000 + s));
        // the input itself as the output: the same floats on both backends at every precision
        // (NaN, infinities; 1e30 is Inf in fp16 and packs the same)
        // (NaN, infinities; 1e30 is Inf in fp16 and packs the same); RGB, then RGBA (alpha)
        for (int C = 3; C <= 4; C++) {
            struct vae_graph * g = graph_new(true);
            vae_graph_set_output(g, vae_graph_input(g, 2, C, H, W));
            float * in = rnd(&pl, (size_t) 2 * C * H * W, -1.5f, 1.5f);
            put_specials(in, (size_t) 2 * C * H * W);
            for (int n = 0; n < 2; n++) {
                snprintf(label, sizeof(label), "read_frame(input,%d ch,%dx%d,frame %d,stride+%d)", C, W, H, n, extra);
                check_frames(label, g, in, n, extra, false);
            }
            vae_graph_free(g);
        }
        struct vae_graph * g;
        // a 3-channel conv and tanh clamp as the output (frame 1 of 2), fp32
        g                     = graph_new(true);
        struct vae_tensor * x = vae_graph_input(g, 2, 5, H, W);
        x = vae_graph_conv2d(g, x, conv_w(g, &pl, 20, 5, 3, NULL), NULL, NULL, VAE_ACT_SILU);
        x = vae_graph_conv2d(g, x, conv_w(g, &pl, 3, 20, 3, NULL), NULL, NULL, VAE_ACT_NONE);
        vae_graph_set_output(g, vae_graph_tanh_clamp(g, x, 3.0f));
        snprintf(label, sizeof(label), "read_frame(conv,%dx%d,frame 1,stride+%d)", W, H, extra);
        check_frames(label, g, rnd(&pl, (size_t) 2 * 5 * H * W, -2, 2), 1, extra, true);
        vae_graph_free(g);
        pool_free(&pl);
    }
    if (!have_device_frames) {
        printf("device frames (dst.device): not tested, this test is built without the CUDA runtime\n");
    }
}

// ---- graph reuse, memory limits, refusals ------------------------------------------------------

static struct vae_graph * small_net(struct pool * pl, int N, int Ci, int H, int W) {
    struct vae_graph *  g = graph_new(true);
    struct vae_tensor * x = vae_graph_input(g, N, Ci, H, W);
    x = vae_graph_conv2d(g, x, conv_w(g, pl, 64, Ci, 3, NULL), NULL, NULL, VAE_ACT_RELU);
    x = vae_graph_upsample_conv2d(g, x, conv_w(g, pl, 20, 64, 3, NULL), NULL, VAE_ACT_SILU);
    x = vae_graph_conv2d(g, x, conv_w(g, pl, 3, 20, 3, NULL), NULL, NULL, VAE_ACT_NONE);
    vae_graph_set_output(g, vae_graph_tanh_clamp(g, x, 3.0f));
    return g;
}

// compute `in` on the prepared g and read frames [first, first + count); a pool array or NULL
static float * compute_read(vae_backend_t * b, struct pool * pl, struct vae_graph * g, const float * in, int first,
                            int count) {
    char    err[512] = "";
    float * o        = pool_add(pl, xmalloc(out_count(g) * sizeof(float)));
    bool    ok       = vae_backend_graph_compute(b, g, NULL, in, err, sizeof(err)) &&
                vae_backend_graph_read_output(b, g, first, count, o, err, sizeof(err));
    CHECK(ok, "on %s: %s", vae_backend_name(b), err);
    return ok ? o : NULL;
}

// profiling (g->node_ms): each node's time, positive for the convs, together no more than the
// compute's wall time (the events lie between nodes, not from the start), and the same output as
// the recorded graph's replay before and after
static void case_profile(vae_backend_t * b, int N, int Ci, int H, int W) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = small_net(&pl, N, Ci, H, W);
    const float *      in = rnd(&pl, (size_t) N * Ci * H * W, -1, 1);
    char               err[512] = "", label[160];
    snprintf(label, sizeof(label), "profile(small_net n=%d,cin=%d,h=%d,w=%d) on %s", N, Ci, H, W, vae_backend_name(b));
    const bool ok = vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
    CHECK(ok, "%s: prepare: %s", label, err);
    float * ms = pool_add(&pl, xmalloc((size_t) g->n_nodes * sizeof(float)));
    for (int i = 0; i < g->n_nodes; i++) {
        ms[i] = -1.0f;
    }
    float * plain[2] = { NULL, NULL }, *profiled = NULL;
    double  wall = 0.0;
    if (ok) {
        plain[0] = compute_read(b, &pl, g, in, 0, N);
        plain[0] = compute_read(b, &pl, g, in, 0, N); // (the second compute records, where the backend does)
        g->node_ms = ms;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        profiled = compute_read(b, &pl, g, in, 0, N);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        wall       = 1e3 * (double) (t1.tv_sec - t0.tv_sec) + 1e-6 * (double) (t1.tv_nsec - t0.tv_nsec);
        g->node_ms = NULL;
        plain[1]   = compute_read(b, &pl, g, in, 0, N);
    }
    double sum = 0.0;
    for (int i = 0; ok && i < g->n_nodes; i++) {
        const enum vae_op op = g->nodes[i]->op;
        CHECK(isfinite(ms[i]) && ms[i] >= 0.0f, "%s: node %d (%s) took %g ms", label, i, vae_op_name(op), ms[i]);
        CHECK(ms[i] > 0.0f || (op != VAE_OP_CONV2D && op != VAE_OP_UPSAMPLE_CONV2D), "%s: conv node %d took 0 ms",
              label, i);
        // the GPU names each conv's tile variant; the CPU has no choice to name
        const char * impl = vae_backend_node_impl(b, g, i);
        const bool   conv = op == VAE_OP_CONV2D || op == VAE_OP_UPSAMPLE_CONV2D;
        CHECK(b == cpu_be ? impl == NULL : (impl && impl[0]) == conv, "%s: node %d (%s): implementation '%s'", label,
              i, vae_op_name(op), impl ? impl : "(none)");
        sum += ms[i];
    }
    CHECK(!ok || sum <= wall, "%s: the nodes took %.3f ms together, the compute %.3f ms", label, sum, wall);
    const size_t n = out_count(g);
    CHECK(!ok || (plain[0] && profiled && plain[1] && memcmp(plain[0], profiled, n * sizeof(float)) == 0 &&
                  memcmp(plain[0], plain[1], n * sizeof(float)) == 0),
          "%s: the profiled compute's output differs from the replayed one's", label);
    if (ok) {
        printf("%s: %d nodes, %.3f ms of %.3f ms\n", label, g->n_nodes, sum, wall);
    }
    vae_backend_graph_release(b, g);
    vae_graph_free(g);
    pool_free(&pl);
}


static void reuse_on(vae_backend_t * b) {
    struct pool        pl = { 0 };
    char               err[512];
    const char *       pn = vae_precision_name(vae_backend_precision(b));
    struct vae_graph * g  = small_net(&pl, 3, 4, 16, 9);
    const size_t       nout = out_count(g), frame = nout / 3;
    const float *      in = rnd(&pl, (size_t) 3 * 4 * 16 * 9, -1, 1), *in2 = rnd(&pl, (size_t) 3 * 4 * 16 * 9, -1, 1);

    // too little memory: refused with the sizes (below 1 MiB in KiB), nothing left prepared
    err[0]  = 0;
    bool ok = vae_backend_graph_prepare(b, g, 4096, err, sizeof(err));
    CHECK(!ok, "[%s] prepare with max_bytes=4096 succeeded", pn);
    CHECK_ERR_HAS(err, "KiB of activations and weights, above the 4.0 KiB memory limit");
    CHECK(g->backend_data == NULL, "[%s] a refused prepare left backend_data set", pn);
    printf("[%s] prepare(max_bytes=4096): %s \"%s\"\n", pn, !ok ? "refused:" : "FAIL, accepted", err);

    // the same input twice gives the same floats; another input others; a part of the output is
    // that part of the whole
    ok = vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
    CHECK(ok, "[%s] prepare: %s", pn, err);
    const size_t peak = g->peak_bytes;
    float *      o1   = ok ? compute_read(b, &pl, g, in, 0, 3) : NULL;
    float *      o2   = ok ? compute_read(b, &pl, g, in2, 0, 3) : NULL;
    float *      o3   = ok ? compute_read(b, &pl, g, in, 0, 3) : NULL;
    float *      part = ok ? compute_read(b, &pl, g, in, 1, 1) : NULL;
    CHECK(o1 && o3 && same_floats(o1, o3, nout), "[%s] computing the same input twice gave different outputs", pn);
    CHECK(o1 && o2 && !same_floats(o1, o2, nout), "[%s] different inputs gave the same output", pn);
    CHECK(o1 && part && same_floats(part, o1 + frame, frame), "[%s] read_output of frame 1 alone differs", pn);
    vae_backend_graph_release(b, g);
    CHECK(g->backend_data == NULL && g->peak_bytes == 0, "[%s] release left state behind", pn);

    // exactly at the limit works; one byte below does not
    ok = vae_backend_graph_prepare(b, g, peak, err, sizeof(err));
    CHECK(ok, "[%s] prepare with max_bytes = peak_bytes (%zu) failed: %s", pn, peak, err);
    vae_backend_graph_release(b, g);
    err[0] = 0;
    ok     = vae_backend_graph_prepare(b, g, peak - 1, err, sizeof(err));
    CHECK(!ok, "[%s] prepare with max_bytes = peak_bytes - 1 succeeded", pn);
    char limit_str[32];
    CHECK_ERR_HAS(err, vae_backend_bytes_str(limit_str, (double) (peak - 1)));
    vae_backend_graph_release(b, g);

    // a second graph prepared at the same time does not disturb the first
    ok                    = vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
    struct vae_graph * g2 = small_net(&pl, 1, 4, 7, 5);
    ok                    = ok && vae_backend_graph_prepare(b, g2, 0, err, sizeof(err));
    CHECK(ok, "[%s] prepare: %s", pn, err);
    float * o4 = ok ? compute_read(b, &pl, g, in, 0, 3) : NULL;
    float * p1 = ok ? compute_read(b, &pl, g2, in, 0, 1) : NULL;
    float * o5 = ok ? compute_read(b, &pl, g, in, 0, 3) : NULL;
    float * p2 = ok ? compute_read(b, &pl, g2, in, 0, 1) : NULL;
    CHECK(o4 && o5 && same_floats(o4, o5, nout), "[%s] another prepared graph changed this one's output", pn);
    CHECK(p1 && p2 && same_floats(p1, p2, out_count(g2)), "[%s] interleaved computes changed an output", pn);
    printf("[%s] graph reuse (compute x3, part of the output, max_bytes = peak %zu bytes, two graphs at once): %s\n",
           pn, peak,
           o1 && o3 && o4 && o5 && part && same_floats(o1, o3, nout) && same_floats(o4, o5, nout) ? "OK" : "FAIL");
    vae_backend_graph_release(b, g2);
    vae_graph_free(g2);
    vae_backend_graph_release(b, g);
    vae_graph_free(g);

    // a state made for other shapes is refused
    const int64_t sh[5] = { 16, 16, 3, 3, 3 };
    const float * w     = rnd(&pl, (size_t) 16 * 16 * 27, -.1f, .1f);
    g                   = causal_graph(1, 16, 16, 5, 7, sh, w, NULL, sh, w, VAE_ACT_NONE, false);
    g2                  = causal_graph(1, 16, 16, 6, 7, sh, w, NULL, sh, w, VAE_ACT_NONE, false);
    ok = vae_backend_graph_prepare(b, g, 0, err, sizeof(err)) && vae_backend_graph_prepare(b, g2, 0, err, sizeof(err));
    CHECK(ok, "[%s] prepare: %s", pn, err);
    vae_state_t * st = ok ? vae_backend_state_new(b, g, err, sizeof(err)) : NULL;
    CHECK(!ok || st, "[%s] state: %s", pn, err);
    if (st) {
        const float * x = rnd(&pl, (size_t) 16 * 6 * 7, -1, 1);
        err[0]          = 0;
        ok              = vae_backend_graph_compute(b, g2, st, x, err, sizeof(err));
        CHECK(!ok && err[0], "[%s] a state of other shapes was taken", pn);
        printf("[%s] a state of 5x7 frames for a 6x7 graph: %s \"%s\"\n", pn, ok ? "FAIL, taken" : "refused:", err);
    }
    vae_backend_state_free(b, st);
    vae_backend_graph_release(b, g);
    vae_backend_graph_release(b, g2);
    vae_graph_free(g);
    vae_graph_free(g2);
    pool_free(&pl);
}

// a graph computed three times is recorded at its second compute: no notice; on the emulator
// with every capture refused (VAE_GPU_EMU_NO_CAPTURE=1), a notice naming the cause, once, and
// the same output launched directly
static void case_record(enum vae_precision p) {
    struct pool        pl = { 0 };
    struct vae_graph * g  = small_net(&pl, 1, 5, 4, 3);
    const float *      in = rnd(&pl, (size_t) 5 * 4 * 3, -1, 1);
    char               err[512] = "", notice[256] = "";
    for (int refuse = 0; refuse < 2; refuse++) {
#ifndef VAE_GPU_EMU
        if (refuse) {
            break;
        }
#endif
        if (refuse) {
            setenv("VAE_GPU_EMU_NO_CAPTURE", "1", 1);
        }
        vae_backend_t * b  = vae_backend_init(GPU_BACKEND, 0, p, err, sizeof(err));
        const bool      ok = b && vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
        CHECK(ok, "record: %s", err);
        float * out[3] = { NULL, NULL, NULL };
        for (int k = 0; ok && k < 3; k++) {
            out[k] = compute_read(b, &pl, g, in, 0, 1);
        }
        const bool noticed = ok && vae_backend_take_notice(b, notice, sizeof(notice));
        if (refuse) {
            CHECK(noticed && strstr(notice, "could not record") && strstr(notice, "cudaError"),
                  "a refused capture gave the notice \"%s\"", noticed ? notice : "");
            CHECK(!vae_backend_take_notice(b, notice, sizeof(notice)), "the notice was given twice");
        } else {
            CHECK(!noticed, "the graph was not recorded: %s", notice);
        }
        CHECK(!ok || (out[0] && out[1] && out[2] && !memcmp(out[0], out[1], out_count(g) * sizeof(float)) &&
                      !memcmp(out[0], out[2], out_count(g) * sizeof(float))),
              "record%s: the three computes differ", refuse ? " refused" : "");
        printf("[%s] record%s: %s\n", vae_precision_name(p), refuse ? " (capture refused)" : "",
               noticed ? notice : "recorded, no notice");
        vae_backend_graph_release(b, g);
        vae_backend_free(b);
        unsetenv("VAE_GPU_EMU_NO_CAPTURE");
    }
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_reuse_errors(void) {
    rng_seed(6900);
    case_profile(cpu_be, 2, 5, 5, 4);
    for (int i = 0; i < N_PRECISIONS; i++) { // (one precision, the first this run keeps: neither
        if (gpu[precisions[i]]) {            // depends on it)
            case_record(precisions[i]);
            case_profile(gpu[precisions[i]], 2, 5, 5, 4);
            break;
        }
    }
    rng_seed(7000);
    char            err[512] = "";
    vae_backend_t * b        = vae_backend_init(GPU_BACKEND, 99, VAE_PRECISION_FP32, err, sizeof(err));
    CHECK(b == NULL, "device 99 accepted");
    CHECK_ERR_HAS(err, "99");
    printf("device 99: %s \"%s\"\n", b ? "FAIL, accepted" : "refused:", err);
    vae_backend_free(b);

    // auto: bf16 where the GPU has it, else fp16; device -1: the current context or device 0
    b = vae_backend_init(GPU_BACKEND, -1, VAE_PRECISION_AUTO, err, sizeof(err));
    CHECK(b != NULL, "device -1, precision auto: %s", err);
    if (b) {
        const enum vae_precision want = gpu[VAE_PRECISION_BF16] ? VAE_PRECISION_BF16 : VAE_PRECISION_FP16;
        CHECK(vae_backend_precision(b) == want, "precision auto gave %s, not %s",
              vae_precision_name(vae_backend_precision(b)), vae_precision_name(want));
        printf("device -1, precision auto: %s (%s)\n", vae_precision_name(vae_backend_precision(b)),
               vae_backend_name(b));
    }
    vae_backend_free(b);

    for (int i = 0; i < N_PRECISIONS; i++) {
        if (gpu[precisions[i]]) {
            reuse_on(gpu[precisions[i]]);
        }
    }
}

// ---- cancellation ------------------------------------------------------------------------------

// a compute whose graph has its cancel flag set launches nothing (the output keeps the last
// compute's), fails with VAE_BACKEND_INTERRUPTED, and the next compute with the flag clear is
// exact: on a replayed graph (a short compute with a flag is recorded; the flag is read before
// the replay) and launched directly (VAE_GPU_NO_GRAPHS=1; the flag is read before every node).
// A flag set part-way through a decode: test-cancel (test-gpu-emu-cancel on the emulator).
static void cancel_on(vae_backend_t * b) {
    struct pool        pl = { 0 };
    char               err[512];
    const char *       pn = vae_precision_name(vae_backend_precision(b));
    struct vae_graph * g  = small_net(&pl, 1, 4, 8, 6);
    const size_t       n  = out_count(g);
    const float *      in = rnd(&pl, (size_t) 4 * 8 * 6, -1, 1), *in2 = rnd(&pl, (size_t) 4 * 8 * 6, -1, 1);
    float *            kept = pool_add(&pl, xmalloc(n * sizeof(float)));
    int                flag = 0;
    g->cancel               = &flag;
    for (int k = 0; k < 2; k++) {
        const char * how = k == 0 ? "replayed" : "launched directly";
        // (read at prepare; the emulator is slower than the 0.1 s under which a graph with a
        // cancel flag is recorded)
        setenv(k == 0 ? "VAE_GPU_REPLAY_MAX_S" : "VAE_GPU_NO_GRAPHS", k == 0 ? "1000" : "1", 1);
        bool ok = vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
        unsetenv("VAE_GPU_REPLAY_MAX_S");
        unsetenv("VAE_GPU_NO_GRAPHS");
        CHECK(ok, "[%s] prepare: %s", pn, err);
        // (k = 0: the first compute runs directly, the second records the graph, the third replays it)
        float * o1 = ok ? compute_read(b, &pl, g, in, 0, 1) : NULL;
        float * o2 = ok ? compute_read(b, &pl, g, in2, 0, 1) : NULL;
        float * o3 = ok ? compute_read(b, &pl, g, in, 0, 1) : NULL;
        if (!o1 || !o2 || !o3) {
            vae_backend_graph_release(b, g);
            continue;
        }
        __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
        err[0] = 0;
        ok     = vae_backend_graph_compute(b, g, NULL, in2, err, sizeof(err));
        CHECK(!ok && strcmp(err, VAE_BACKEND_INTERRUPTED) == 0, "[%s] %s with the flag set: %s \"%s\"", pn, how,
              ok ? "computed" : "failed", err);
        const bool read = vae_backend_graph_read_output(b, g, 0, 1, kept, err, sizeof(err));
        CHECK(read && same_floats(kept, o3, n), "[%s] %s with the flag set: the output changed", pn, how);
        __atomic_store_n(&flag, 0, __ATOMIC_RELEASE);
        float * o4 = compute_read(b, &pl, g, in2, 0, 1);
        CHECK(same_floats(o1, o3, n) && o4 && same_floats(o2, o4, n), "[%s] %s: the computes after the stop differ",
              pn, how);
        printf("[%s] %s with the cancel flag set: %s \"%s\", output untouched: %s, the next compute exact: %s\n", pn,
               how, ok ? "FAIL, computed" : "failed", err, read && same_floats(kept, o3, n) ? "yes" : "NO",
               o4 && same_floats(o2, o4, n) ? "yes" : "NO");
        vae_backend_graph_release(b, g);
    }
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_cancel(void) {
    rng_seed(7100);
    for (int i = 0; i < N_PRECISIONS; i++) {
        if (gpu[precisions[i]]) {
            cancel_on(gpu[precisions[i]]);
        }
    }
}

// ---- contexts and the runtime's error slot ------------------------------------------------------

#ifdef GPU_TEST_CUDA_RUNTIME
// driver entry points through the runtime, as the backend finds them (tests do not link libcuda),
// each asked for at the CUDA version whose signature is typed here: cuCtxCreate has three
// (cudaTypedefs.h: PFN_cuCtxCreate_v3020 (ctx, flags, dev), _v11040 with exec-affinity parameters
// before the flags, _v12050 with a CUctxCreateParams), and a driver asked at 12000 returns the
// second, which took the device for flags (CUDA_ERROR_INVALID_DEVICE on an H200); the others the
// CUDA 12.0 signatures
typedef int (*ctx_create_fn)(void ** ctx, unsigned flags, int device);
typedef int (*ctx_ptr_fn)(void * ctx);     // cuCtxDestroy, cuCtxPushCurrent
typedef int (*ctx_out_fn)(void ** ctx);    // cuCtxPopCurrent, cuCtxGetCurrent

static void * driver_fn(const char * name, unsigned version) {
    void *                               fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    const cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q);
    CHECK(e == cudaSuccess && q == cudaDriverEntryPointSuccess && fn, "the driver has no %s", name);
    return e == cudaSuccess && q == cudaDriverEntryPointSuccess ? fn : NULL;
}

// one fp16 conv whose tile (variant 0, 128x128x32) needs more than 48 KB of shared memory, on a
// backend made in the context current now, against the CPU
static void large_conv_here(const char * label) {
    char            err[512] = "";
    vae_backend_t * b        = vae_backend_init(VAE_BACKEND_CUDA, -1, VAE_PRECISION_FP16, err, sizeof(err));
    CHECK(b, "%s: cuda init: %s", label, err);
    if (!b) {
        return;
    }
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    struct vae_tensor * x  = vae_graph_input(g, 1, 64, 33, 33);
    vae_graph_set_output(g, vae_graph_conv2d(g, x, conv_w(g, &pl, 64, 64, 3, NULL), NULL, NULL, VAE_ACT_NONE));
    const float * const   in[1]   = { rnd(&pl, (size_t) 64 * 33 * 33, -1, 1) };
    const float * const * sets[1] = { in };
    float *               ref, *got;
    run_sets(cpu_be, &pl, g, 1, sets, &ref, label);
    setenv("VAE_GPU_CONV_VARIANT", "0", 1);
    run_sets(b, &pl, g, 1, sets, &got, label);
    unsetenv("VAE_GPU_CONV_VARIANT");
    if (ref && got) {
        report(label, VAE_PRECISION_FP16, got, ref, out_count(g), CMP_OP);
    }
    vae_graph_free(g);
    pool_free(&pl);
    vae_backend_free(b);
}

// a shared-memory opt-in is an attribute of the context that made it: a large conv in a second
// context of the same device (as a GstCudaContext makes with cuCtxCreate) must work as well, and
// each backend leaves its context current as it found it. (No backend outlives its context: a
// destroyed context's handle is undefined in the driver, see vae_backend_init)
static void test_contexts_on(ctx_create_fn create, ctx_ptr_fn destroy, ctx_out_fn pop) {
    void * c[2] = { NULL, NULL };
    for (int i = 0; i < 2; i++) {
        const int rc = create(&c[i], 0, 0);
        CHECK(rc == 0, "cuCtxCreate failed: CUresult %d", rc);
        if (!c[i]) {
            break;
        }
        char label[64];
        snprintf(label, sizeof(label), "conv2d(n=1,cin=64,cout=64,h=33,w=33,k=3) in context %d", i + 1);
        large_conv_here(label);
        void * popped = NULL;
        pop(&popped);
        CHECK(popped == c[i], "context %d: the backend left another context current", i + 1);
    }
    for (int i = 0; i < 2; i++) {
        if (c[i]) {
            destroy(c[i]);
        }
    }
}

// packed upsampling weights (4 phases of 2x2 taps, channels padded) are larger than the 3x3
// tensor: prepare counts what it allocates; and an error that another call left in the runtime's
// last-error slot is not blamed on an op
static void test_packed_and_stale(void) {
    struct pool         pl = { 0 };
    struct vae_graph *  g  = graph_new(true);
    const int           C  = 130;
    struct vae_tensor * x  = vae_graph_input(g, 1, C, 3, 3);
    vae_graph_set_output(g, vae_graph_upsample_conv2d(g, x, conv_w(g, &pl, C, C, 3, NULL), NULL, VAE_ACT_NONE));
    for (int i = 0; i < N_PRECISIONS; i++) {
        vae_backend_t * b = gpu[precisions[i]];
        if (!b) {
            continue;
        }
        const char * pn         = vae_precision_name(precisions[i]);
        const size_t elem       = precisions[i] == VAE_PRECISION_FP16 || precisions[i] == VAE_PRECISION_BF16 ? 2 : 4;
        const size_t packed_min = (size_t) 4 * 2 * 2 * C * C * elem;
        char         err[512]   = "";
        void *       huge       = NULL;
        CHECK(cudaMalloc(&huge, (size_t) 1 << 62) != cudaSuccess, "[%s] a 4 EiB cudaMalloc succeeded", pn);
        const bool ok = vae_backend_graph_prepare(b, g, 0, err, sizeof(err));
        CHECK(ok, "[%s] prepare after another call's failed cudaMalloc: %s", pn, err);
        CHECK(!ok || g->peak_bytes >= g->arena_bytes + packed_min,
              "[%s] prepare counts %zu bytes of weights; the packed ones take at least %zu", pn,
              g->peak_bytes - g->arena_bytes, packed_min);
        printf("[%s] upsample_conv2d(cin=cout=%d): weights counted %zu bytes (packed >= %zu, tensor %zu)\n", pn, C,
               ok ? g->peak_bytes - g->arena_bytes : 0, packed_min, (size_t) C * C * 9 * elem);
        vae_backend_graph_release(b, g);
    }
    vae_graph_free(g);
    pool_free(&pl);
}

static void test_contexts(void) {
    rng_seed(8000);
    test_packed_and_stale();
    ctx_create_fn create  = (ctx_create_fn) driver_fn("cuCtxCreate", 3020);
    ctx_ptr_fn    destroy = (ctx_ptr_fn) driver_fn("cuCtxDestroy", 12000);
    ctx_out_fn    pop     = (ctx_out_fn) driver_fn("cuCtxPopCurrent", 12000);
    if (create && destroy && pop) {
        test_contexts_on(create, destroy, pop);
    }
}
#endif

// ---- operands that share bytes ------------------------------------------------------------------
#ifdef GPU_TEST_CUDA_RUNTIME

// every kernel refuses an output that shares a byte with an input it reads across pixels (x, the
// history), not only the same pointer; an element-wise op takes y == x or y apart from x, and a
// residual y itself or apart. One device buffer, the operands at offsets into it
static void test_overlaps(void) {
    const enum vae_precision p     = VAE_PRECISION_FP32;
    const int                n = 1, c = 16, h = 4, w = 4;
    const size_t             bytes = (size_t) n * c * h * w * sizeof(float);   // one activation (c = cp)
    uint8_t *                buf   = NULL;
    float *                  vec   = NULL;   // gamma, beta, weights: zeros (2 x 16 x 16 of the conv's)
    if (cudaMalloc((void **) &buf, 4 * bytes) != cudaSuccess || cudaMalloc((void **) &vec, 2 * bytes) != cudaSuccess ||
        cudaMemset(buf, 0, 4 * bytes) != cudaSuccess || cudaMemset(vec, 0, 2 * bytes) != cudaSuccess) {
        CHECK(false, "overlaps: cudaMalloc failed");
        return;
    }
    struct vae_gpu_act x = { buf, n, c, c, h, w }, y_in = x, y_part = x, y_apart = x, up = x;
    y_part.data          = buf + bytes / 2;   // the second half of x and beyond
    y_apart.data         = buf + bytes;
    up.h = 2 * h, up.w = 2 * w;
    struct vae_gpu_act up_part = up;
    up_part.data               = buf + 16;
    const struct {
        const char * what;
        cudaError_t  got, want;
    } cases[] = {
        { "upsample2x, y over x's tail", vae_gpu_upsample2x(x, up_part, p, 0), cudaErrorInvalidValue },
        { "tanh_clamp in place", vae_gpu_tanh_clamp(x, y_in, 2.0f, p, 0), cudaSuccess },
        { "tanh_clamp, y over x's tail", vae_gpu_tanh_clamp(x, y_part, 2.0f, p, 0), cudaErrorInvalidValue },
        { "tanh_clamp apart", vae_gpu_tanh_clamp(x, y_apart, 2.0f, p, 0), cudaSuccess },
        { "rms_norm in place", vae_gpu_rms_norm(x, y_in, NULL, vec, NULL, false, 0.0f, VAE_ACT_NONE, p, 0),
          cudaSuccess },
        { "rms_norm, y over x's tail", vae_gpu_rms_norm(x, y_part, NULL, vec, NULL, false, 0.0f, VAE_ACT_NONE, p, 0),
          cudaErrorInvalidValue },
        { "rms_norm, residual over y's tail",
          vae_gpu_rms_norm(x, y_apart, buf + bytes + bytes / 2, vec, NULL, false, 0.0f, VAE_ACT_NONE, p, 0),
          cudaErrorInvalidValue },
        { "time_conv, y over x's tail", vae_gpu_time_conv(x, y_part, NULL, vec, NULL, 1, VAE_ACT_NONE, p, 0),
          cudaErrorInvalidValue },
        { "grouped conv, y over x's tail",
          vae_gpu_group_conv(x, y_part, NULL, vec, NULL, c, 1, VAE_ACT_NONE, p, 0), cudaErrorInvalidValue },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK(cases[i].got == cases[i].want, "overlaps: %s: %s, not %s", cases[i].what, cudaGetErrorName(cases[i].got),
              cudaGetErrorName(cases[i].want));
    }
    // the implicit-GEMM conv: a causal one whose history (one frame, `bytes`) ends inside y, and
    // one whose y starts inside x
    struct vae_gpu_conv_args   a   = { 0 };
    struct vae_gpu_device_info info = { 0 };
    int                        dev  = 0;
    a.x = x, a.y = y_apart, a.weights = vec, a.k = 1, a.kt = 2;
    CHECK(cudaGetDevice(&dev) == cudaSuccess && vae_gpu_device_query(dev, &info) == cudaSuccess,
          "overlaps: the device's attributes");
    a.cc = info.cc, a.warp = info.warp;
    a.y.data = buf + 3 * bytes;
    a.hist   = buf + 3 * bytes - bytes / 2;   // its last half is y's first
    CHECK(vae_gpu_conv(&a, p, 0) == cudaErrorInvalidValue, "overlaps: a conv history over y accepted");
    a.hist = buf + 2 * bytes;
    a.y    = y_part;
    CHECK(vae_gpu_conv(&a, p, 0) == cudaErrorInvalidValue, "overlaps: a conv y over x's tail accepted");
    a.y.data = buf + 3 * bytes;   // x, the history and y apart: taken (the refusals were the overlaps')
    CHECK(vae_gpu_conv(&a, p, 0) == cudaSuccess, "overlaps: a conv with its operands apart refused");
    // its RMS norm to a block of its own: over x's tail, over y's tail, then apart from all
    a.norm = true, a.norm_y = buf + bytes / 2;
    CHECK(vae_gpu_conv(&a, p, 0) == cudaErrorInvalidValue, "overlaps: a conv's norm over x's tail accepted");
    a.norm_y = buf + 3 * bytes + bytes / 2;
    CHECK(vae_gpu_conv(&a, p, 0) == cudaErrorInvalidValue, "overlaps: a conv's norm over y's tail accepted");
    a.norm_y = buf + bytes;
    CHECK(vae_gpu_conv(&a, p, 0) == cudaSuccess, "overlaps: a conv's norm apart from its operands refused");
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "overlaps: the accepted kernels failed");
    printf("overlaps: %zu element-wise and data-movement cases and 6 convs refused or taken as they should\n",
           sizeof(cases) / sizeof(cases[0]));
    cudaFree(buf);
    cudaFree(vec);
}
#endif

#if defined(GPU_TEST_CUDA_RUNTIME)
// VAE_GPU_CONV_VARIANT=v names a tile the precisions do not all have (fp32 has 3, tf32 4, the
// 16-bit ones on NVIDIA 5): those without it are left out of the run, with a note
static void gpu_keep_variant(void) {
    const char *               v    = getenv("VAE_GPU_CONV_VARIANT");
    struct vae_gpu_device_info info = { 0 };
    int                        dev  = 0;
    if (!v || cudaGetDevice(&dev) != cudaSuccess || vae_gpu_device_query(dev, &info) != cudaSuccess) {
        return;
    }
    int kept = 0, had = 0;
    for (int i = 0; i < N_PRECISIONS; i++) {
        const enum vae_precision p = precisions[i];
        const int                n = vae_gpu_conv_variants(p, info.cc);
        had += gpu[p] != NULL;
        if (gpu[p] && atoi(v) >= n) {
            printf("%s: conv variants 0..%d, none %s: not tested\n", vae_precision_name(p), n - 1, v);
            vae_backend_free(gpu[p]);
            gpu[p] = NULL;
        }
        kept += gpu[p] != NULL;
    }
    // (a tile the device should have and lacks, as the Hopper ones on compute capability 9.0, would
    // leave the run with nothing to check)
    CHECK(kept > 0 || had == 0 || !strcmp(v, "fit"), "VAE_GPU_CONV_VARIANT=%s: no precision has that conv tile", v);
}
#endif

// ---- main ----------------------------------------------------------------------------------------


int main(int argc, char ** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);   // the lines between the failed checks (stderr)
    const char * filter = argc > 1 ? argv[1] : NULL;
    const char * seed   = getenv("VAE_TEST_SEED");
    g_salt              = seed ? strtoull(seed, NULL, 10) : 0;
    g_rng_grid          = true;   // (see the top: data every precision stores exactly)
    if (!vae_backend_is_built(GPU_BACKEND)) {
        printf("skip: this build has no %s backend\n", vae_backend_type_name(GPU_BACKEND));
        return TEST_SKIP;
    }
    setenv("VAE_GPU_POISON", "1", 1);   // unwritten activations read as NaN
    char err[512];
    cpu_be = vae_backend_init(VAE_BACKEND_CPU, 0, VAE_PRECISION_FP32, err, sizeof(err));
    if (!cpu_be) {
        fprintf(stderr, "cpu backend: %s\n", err);
        return 1;
    }
    if (!gpu_init()) {
        for (int i = 0; i < N_PRECISIONS; i++) {
            vae_backend_free(gpu[precisions[i]]);
        }
        vae_backend_free(cpu_be);
        return TEST_SKIP;
    }
#if defined(GPU_TEST_CUDA_RUNTIME)
    gpu_keep_variant();
#endif
    printf("reference: %s, seed %llu\n", vae_backend_name(cpu_be), (unsigned long long) g_salt);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    static const struct {
        const char * name;
        void (*fn)(void);
    } sections[] = {
        { "conv2d", test_conv },
        { "upsample_conv2d, upsample2x", test_upconv },
#ifdef CONV_BANKS
        { "conv_banks", test_conv_banks },
#endif
        { "causal_conv3d", test_causal },
        { "causal_attention", test_causal_attention },
        { "centred conv3d, delay", test_centred },
        { "group_norm", test_gn },
        { "rms_norm, attention, tanh_clamp", test_rms_attention_tanh },
        { "frame_split, pixel_shuffle", test_shuffles },
        { "depthwise_conv2d, grouped conv2d", test_depthwise },
        { "linear_attention, glu, EfficientViT block", test_dcae },
        { "time_conv, GroupNorm over frames", test_temporal },
        { "attention in heads, layer_norm, tokens, rope (MiniMax-H3's ViT)", test_vit },
        { "crossfade", test_crossfade },
        { "graphs", test_graphs },
        { "nan", test_nan },
        { "read_frame", test_frames },
        { "reuse, errors, profiling", test_reuse_errors },
        { "cancel", test_cancel },
#ifdef GPU_TEST_CUDA_RUNTIME
        { "contexts, packed weights, stale errors", test_contexts },
        { "overlaps", test_overlaps },
#endif
    };
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        if (filter && !strstr(sections[i].name, filter)) {
            continue;
        }
        struct timespec s0, s1;
        const int       failed = vae_test_failed;
        clock_gettime(CLOCK_MONOTONIC, &s0);
        sections[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &s1);
        printf("== %s: %s, %.2f s\n", sections[i].name, vae_test_failed == failed ? "OK" : "FAILED",
               (double) (s1.tv_sec - s0.tv_sec) + 1e-9 * (double) (s1.tv_nsec - s0.tv_nsec));
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("time: %.2f s\n", (double) (t1.tv_sec - t0.tv_sec) + 1e-9 * (double) (t1.tv_nsec - t0.tv_nsec));
    for (int i = 0; i < N_PRECISIONS; i++) {
        vae_backend_free(gpu[precisions[i]]);
    }
    vae_backend_free(cpu_be);
    return vae_test_summary();
}
