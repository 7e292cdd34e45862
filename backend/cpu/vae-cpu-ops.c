// The CPU ops that are not convolutions (the attentions have a file of their own): layout
// changes, the tanh clamp, nearest upsampling, GroupNorm, the RMS norms, the frame split of
// temporal upsampling, pixel shuffle, DC-AE's gated linear unit and the depthwise conv, written
// for the blocked layout (16 or 8 lanes, vae_cpu_block) so that the lanes of a block vectorise.
// They run on all cores through OpenMP, the runtime oneDNN itself uses here.

#include "vae-cpu.h"

#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

int vae_cpu_block(void) {
    static int block; // (threads that race here all store the same value)
    if (!block) {
        const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        block = (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 16 : 8;
    }
    return block;
}

void vae_cpu_to_blocked(const float * src, float * dst, const int64_t ne[4]) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne[0], C = ne[1], HW = ne[2] * ne[3], CB = vae_cpu_blocks(C);
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CB; cb++) {
            float * d = dst + (n * CB + cb) * HW * L;
            for (int64_t p = 0; p < HW; p++) {
                for (int64_t l = 0; l < L; l++) {
                    const int64_t c = cb * L + l;
                    d[p * L + l] = c < C ? src[(n * C + c) * HW + p] : 0.0f;
                }
            }
        }
    }
}

void vae_cpu_from_blocked(const float * src, float * dst, const int64_t ne[4]) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne[0], C = ne[1], HW = ne[2] * ne[3], CB = vae_cpu_blocks(C);
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            const float * s = src + (n * CB + c / L) * HW * L + c % L;
            float *       d = dst + (n * C + c) * HW;
            for (int64_t p = 0; p < HW; p++) {
                d[p] = s[p * L];
            }
        }
    }
}

void vae_cpu_tanh_clamp(const float * x, float * y, size_t n, float s) {
    const float inv = 1.0f / s;
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        y[i] = tanhf(x[i] * inv) * s;
    }
}

void vae_cpu_replicate_pad(const float * x, float * y, const int64_t ne_x[4], bool reflect) {
    const int64_t L = vae_cpu_block(), H = ne_x[2], W = ne_x[3], m = reflect ? 1 : 0;
    const int64_t planes = ne_x[0] * vae_cpu_blocks(ne_x[1]);
#pragma omp parallel for collapse(2)
    for (int64_t pl = 0; pl < planes; pl++) {
        for (int64_t Y = 0; Y < H + 2; Y++) { // (row -1 reads row m, row H reads row H - 1 - m)
            const int64_t sy  = Y == 0 ? m : Y > H ? H - 1 - m : Y - 1;
            const float * src = x + (pl * H + sy) * W * L;
            float *       d   = y + (pl * (H + 2) + Y) * (W + 2) * L;
            memcpy(d, src + m * L, (size_t) L * sizeof(float));
            memcpy(d + L, src, (size_t) (W * L) * sizeof(float));
            memcpy(d + (W + 1) * L, src + (W - 1 - m) * L, (size_t) L * sizeof(float));
        }
    }
}

void vae_cpu_upsample2x(const float * x, float * y, const int64_t ne_x[4]) {
    const int64_t L = vae_cpu_block();
    const int64_t NB = ne_x[0] * vae_cpu_blocks(ne_x[1]), H = ne_x[2], W = ne_x[3];
#pragma omp parallel for collapse(2)
    for (int64_t b = 0; b < NB; b++) {
        for (int64_t Y = 0; Y < 2 * H; Y++) {
            const float * s = x + (b * H + Y / 2) * W * L;
            float *       d = y + (b * 2 * H + Y) * 2 * W * L;
            for (int64_t X = 0; X < 2 * W; X++) {
                memcpy(d + X * L, s + (X / 2) * L, L * sizeof(float));
            }
        }
    }
}

// e^v in arithmetic the compiler vectorises (libm's expf is a call per value: SiLU's exp took two
// thirds of a GroupNorm + SiLU): 2^k p(r) with v = k ln2 + r, |r| <= ln2 / 2, p the Taylor
// polynomial of degree 6; relative error below 2.5e-7 over [-87, 88] (a sweep against double
// exp), to which v is clamped (e^-87 and e^88 are normal floats); a NaN stays NaN
static inline float cpu_expf(float v) {
    const float x = v < -87.0f ? -87.0f : v > 88.0f ? 88.0f : v;
    const float kf = x * 1.44269504f + 12582912.0f; // k = round(x / ln2) in its low bits (1.5 * 2^23)
    const float k  = kf - 12582912.0f;
    const float r  = (x - k * 0.693359375f) + k * 2.12194440e-4f; // ln2 in two parts (Cephes')
    float       p = 1.0f / 720.0f;
    p             = p * r + 1.0f / 120.0f;
    p             = p * r + 1.0f / 24.0f;
    p             = p * r + 1.0f / 6.0f;
    p             = p * r + 0.5f;
    p             = p * r + 1.0f;
    p             = p * r + 1.0f;
    uint32_t kb;
    memcpy(&kb, &kf, sizeof(kb));
    const uint32_t e = (kb - 0x4b400000u + 127u) << 23; // 2^k (k + 127 in [1, 254]), no float-to-int cast
    float          s;
    memcpy(&s, &e, sizeof(s));
    return p * s;
}

static inline float cpu_act(float v, enum vae_act act) {
    switch (act) {
        case VAE_ACT_RELU: return v > 0.0f ? v : 0.0f;
        case VAE_ACT_SILU: return v / (1.0f + cpu_expf(-v));
        default:           return v;
    }
}

// x = act(x) over n floats: the norms and the bias pass compute up to CPU_ACT_TILE pixels into a
// buffer, then this, compiled for AVX-512 and AVX2 as well as the plugin's baseline x86-64 (an
// ifunc picks the CPU's when the library loads; the same arithmetic in each, so every machine
// gives the same values). A GroupNorm + SiLU of 128 channels at 512x512 took 78 ms with libm's
// expf inline, 31 ms so (2 threads, AVX-512); Wan's RMS norm + SiLU 98 and 42
#define CPU_ACT_TILE 256
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static void
cpu_act_rows(float * x, int64_t n, enum vae_act act) {
    switch (act) { // (a loop per activation: a switch inside one is not vectorised)
        case VAE_ACT_RELU:
            for (int64_t i = 0; i < n; i++) {
                x[i] = cpu_act(x[i], VAE_ACT_RELU);
            }
            break;
        case VAE_ACT_SILU:
            for (int64_t i = 0; i < n; i++) {
                x[i] = cpu_act(x[i], VAE_ACT_SILU);
            }
            break;
        default:
            break;
    }
}

// element i of x, f32 or bf16
static inline float cpu_load(const void * x, bool bf16, int64_t i) {
    return bf16 ? vae_cpu_from_bf16(((const uint16_t *) x)[i]) : ((const float *) x)[i];
}

// the n values of row to y + at, f32 or bf16
static inline void cpu_store(void * y, bool bf16, int64_t at, const float * row, int64_t n) {
    if (bf16) {
        for (int64_t l = 0; l < n; l++) {
            ((uint16_t *) y)[at + l] = vae_cpu_bf16(row[l]);
        }
    } else {
        memcpy((float *) y + at, row, (size_t) n * sizeof(float));
    }
}

void vae_cpu_bias_act(void * y, const int64_t ne[4], const float * bias, enum vae_act act, bool bf16) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne[0], CB = vae_cpu_blocks(ne[1]), HW = ne[2] * ne[3];
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CB; cb++) {
            const int64_t at = (n * CB + cb) * HW * L;
            const float * b  = bias ? bias + cb * L : NULL;
            float         buf[CPU_ACT_TILE * VAE_CPU_BLOCK_MAX];
            for (int64_t p0 = 0; p0 < HW; p0 += CPU_ACT_TILE) {
                const int64_t np = HW - p0 < CPU_ACT_TILE ? HW - p0 : CPU_ACT_TILE;
                for (int64_t p = 0; p < np; p++) {
                    for (int l = 0; l < L; l++) {
                        buf[p * L + l] = cpu_load(y, bf16, at + (p0 + p) * L + l) + (b ? b[l] : 0.0f);
                    }
                }
                cpu_act_rows(buf, np * L, act);
                cpu_store(y, bf16, at + p0 * L, buf, np * L);
            }
        }
    }
}

// per channel sum of x (f32 or bf16; centered by mean[c] if mean is given, squared), in double
static void cpu_channel_sums(const void * x, bool x_bf16, const int64_t ne[4], const double * mean, double * out) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne[0], CB = vae_cpu_blocks(ne[1]), HW = ne[2] * ne[3];
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CB; cb++) {
            const int64_t at = (n * CB + cb) * HW * L;
            double        acc[VAE_CPU_BLOCK_MAX] = { 0 };
            double        m[VAE_CPU_BLOCK_MAX]   = { 0 };
            if (mean) {
                for (int l = 0; l < L; l++) {
                    m[l] = mean[n * CB * L + cb * L + l];
                }
            }
            for (int64_t p = 0; p < HW; p++) {
                for (int l = 0; l < L; l++) {
                    const double v = (double) cpu_load(x, x_bf16, at + p * L + l) - m[l];
                    acc[l] += mean ? v * v : v;
                }
            }
            memcpy(out + (n * CB + cb) * L, acc, (size_t) L * sizeof(double));
        }
    }
}

// per channel: the mean over its group of the channel sums; with eps >= 0, 1 / sqrt(that + eps).
// frames > 1: the group's sums over that many frames at once (statistics over the frames too)
static void cpu_group_mean(const double * sums, double * out, int64_t N, int64_t CB, int64_t groups, int64_t cpg,
                           int64_t HW, float eps, int64_t frames) {
    const int64_t L = vae_cpu_block();
    for (int64_t n = 0; n < N; n += frames) {
        for (int64_t g = 0; g < groups; g++) {
            double s = 0;
            for (int64_t f = n; f < n + frames; f++) {
                for (int64_t c = g * cpg; c < (g + 1) * cpg; c++) {
                    s += sums[f * CB * L + c];
                }
            }
            s /= (double) (cpg * HW * frames);
            for (int64_t f = n; f < n + frames; f++) {
                for (int64_t c = g * cpg; c < (g + 1) * cpg; c++) {
                    out[f * CB * L + c] = eps < 0 ? s : 1.0 / sqrt(s + (double) eps);
                }
            }
        }
    }
}

void vae_cpu_group_norm(const void * x, void * y, const int64_t ne[4], int groups, float eps, const float * gamma,
                        const float * beta, enum vae_act act, const float * stats, bool all_frames, bool x_bf16,
                        bool y_bf16) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne[0], C = ne[1], CB = vae_cpu_blocks(C), HW = ne[2] * ne[3], cpg = C / groups;
    const size_t  nc = (size_t) (N * CB * L);
    double *      sums = malloc(3 * nc * sizeof(double));
    if (!sums) {
        abort(); // a few kilobytes; nothing sensible is left to do
    }
    double * mean = sums + nc, * rstd = sums + 2 * nc;

    if (stats) { // the same for every frame
        for (int64_t n = 0; n < N; n++) {
            for (int64_t c = 0; c < C; c++) {
                mean[n * CB * L + c] = stats[c / cpg];
                rstd[n * CB * L + c] = stats[groups + c / cpg];
            }
        }
    } else {
        // two passes (mean, then centered squares) so large offsets lose no precision
        cpu_channel_sums(x, x_bf16, ne, NULL, sums);
        cpu_group_mean(sums, mean, N, CB, groups, cpg, HW, -1.0f, all_frames ? N : 1);
        cpu_channel_sums(x, x_bf16, ne, mean, sums);
        cpu_group_mean(sums, rstd, N, CB, groups, cpg, HW, eps, all_frames ? N : 1);
    }
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CB; cb++) {
            double m[VAE_CPU_BLOCK_MAX];
            float  a[VAE_CPU_BLOCK_MAX], b[VAE_CPU_BLOCK_MAX];
            for (int l = 0; l < L; l++) {
                const int64_t c = cb * L + l, i = n * CB * L + c;
                // y = (x - mean) * (rstd * gamma) + beta; padding lanes stay 0
                m[l] = c < C ? mean[i] : 0.0;
                a[l] = c < C ? (float) (rstd[i] * gamma[c]) : 0.0f;
                b[l] = c < C ? beta[c] : 0.0f;
            }
            const int64_t at = (n * CB + cb) * HW * L;
            float         buf[CPU_ACT_TILE * VAE_CPU_BLOCK_MAX];
            for (int64_t p0 = 0; p0 < HW; p0 += CPU_ACT_TILE) {
                const int64_t np = HW - p0 < CPU_ACT_TILE ? HW - p0 : CPU_ACT_TILE;
                for (int64_t p = 0; p < np; p++) {
                    for (int l = 0; l < L; l++) {
                        const double v = cpu_load(x, x_bf16, at + (p0 + p) * L + l);
                        buf[p * L + l] = (float) (v - m[l]) * a[l] + b[l];
                    }
                }
                cpu_act_rows(buf, np * L, act);
                cpu_store(y, y_bf16, at + p0 * L, buf, np * L);
            }
        }
    }
    free(sums);
}

// Wan's RMS_norm, F.normalize(x, dim=1) * sqrt(C) * gamma: per pixel, x / max(|x|, 1e-12) over
// the C channels; and diffusers' RMSNorm with weight and bias (DC-AE), x / sqrt(mean(x^2) + eps)
// * gamma + beta, and a residual after it. The sum of squares is taken in double, so it neither
// overflows nor underflows for any finite input (|x| up to FLT_MAX, subnormals), and the scale is
// applied in double: y is x * s * gamma + beta + r computed in double and rounded to float once
// (then the activation, in float), so Wan's |y| <= sqrt(C) * |gamma| never overflows. Without
// beta (or r), -0 is added, which changes nothing (not even a zero's sign). A NaN anywhere in a pixel makes every channel of that
// pixel NaN, as in PyTorch (clamp_min keeps a NaN norm). Pixels go in tiles so that the channel
// blocks are read once per pass; what the input's padding lanes hold is ignored, and the output's
// are written as zero.
#define RMS_TILE 32

void vae_cpu_rms_norm(const void * x, void * y, const int64_t ne[4], const float * gamma, const float * beta,
                      const float * r, int mode, float eps, enum vae_act act, bool x_bf16, bool y_bf16) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne[0], C = ne[1], CB = vae_cpu_blocks(C), HW = ne[2] * ne[3];
    const int64_t tiles  = (HW + RMS_TILE - 1) / RMS_TILE;
    const double  sqrt_c = sqrt((double) C);
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t t = 0; t < tiles; t++) {
            const int64_t p0 = t * RMS_TILE, np = HW - p0 < RMS_TILE ? HW - p0 : RMS_TILE;
            // lane-wise partial sums: the 16 lanes vectorise without reassociating anything
            double acc[RMS_TILE][VAE_CPU_BLOCK_MAX] = { { 0 } }, sum[RMS_TILE][VAE_CPU_BLOCK_MAX] = { { 0 } };
            double scale[RMS_TILE], mean[RMS_TILE];
            for (int64_t cb = 0; cb < CB; cb++) {
                const int64_t at = ((n * CB + cb) * HW + p0) * L;
                const int64_t nl = C - cb * L < L ? C - cb * L : L;
                for (int64_t p = 0; p < np; p++) {
                    for (int l = 0; l < L; l++) {
                        const double v = l < nl ? (double) cpu_load(x, x_bf16, at + p * L + l) : 0.0;
                        acc[p][l] += v * v;
                        sum[p][l] += v;
                    }
                }
            }
            for (int64_t p = 0; p < np; p++) {
                double ss = 0, sm = 0;
                for (int l = 0; l < L; l++) {
                    ss += acc[p][l];
                    sm += sum[p][l];
                }
                const double norm = sqrt(ss);
                // a NaN norm stays NaN
                mean[p]  = mode == 2 ? sm / (double) C : 0.0;
                scale[p] = mode == 2   ? 1.0 / sqrt(ss / (double) C - mean[p] * mean[p] + (double) eps)
                           : mode == 1 ? 1.0 / sqrt(ss / (double) C + (double) eps)
                                       : sqrt_c / (norm < 1e-12 ? 1e-12 : norm);
            }
            for (int64_t cb = 0; cb < CB; cb++) {
                const int64_t at = ((n * CB + cb) * HW + p0) * L;
                const float * rs = r ? r + at : NULL;
                double        g[VAE_CPU_BLOCK_MAX], b[VAE_CPU_BLOCK_MAX];
                float         buf[RMS_TILE * VAE_CPU_BLOCK_MAX];
                for (int l = 0; l < L; l++) {
                    const int64_t c = cb * L + l;
                    g[l]            = c < C ? gamma[c] : 0.0;
                    b[l]            = c < C && beta ? beta[c] : -0.0;
                }
                const bool tail = C - cb * L < L;
                for (int64_t p = 0; p < np; p++) {
                    for (int l = 0; l < L; l++) {
                        const double v =
                            ((double) cpu_load(x, x_bf16, at + p * L + l) - mean[p]) * scale[p] * g[l] + b[l];
                        buf[p * L + l] = (float) (rs ? v + (double) rs[p * L + l] : v);
                    }
                }
                cpu_act_rows(buf, np * L, act);
                for (int64_t p = 0; tail && p < np; p++) { // x * scale * 0 is NaN for a NaN pixel: zeros again
                    for (int l = (int) (C - cb * L); l < L; l++) {
                        buf[p * L + l] = 0.0f;
                    }
                }
                cpu_store(y, y_bf16, at, buf, np * L);
            }
        }
    }
}

// offset (in floats) of channel c, pixel 0, from the start of a blocked frame of HW pixels
static inline int64_t cpu_lane_offset(int64_t c, int64_t HW, int64_t L) {
    return (c / L) * HW * L + c % L;
}

void vae_cpu_frame_split(const float * x, float * y, const int64_t ne_x[4], int s, int drop) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne_x[0], C = ne_x[1], HW = ne_x[2] * ne_x[3], Cs = C / s;
    const int64_t CBx = vae_cpu_blocks(C), CBy = vae_cpu_blocks(Cs);
#pragma omp parallel for collapse(2)
    for (int64_t f = drop; f < N * s; f++) {
        for (int64_t cb = 0; cb < CBy; cb++) {
            const int64_t t = f / s, c0 = (f % s) * Cs + cb * L; // source channel of lane 0
            const int64_t nl = Cs - cb * L < L ? Cs - cb * L : L;
            const float * src = x + t * CBx * HW * L;
            float *       d   = y + ((f - drop) * CBy + cb) * HW * L;
            if (c0 % L == 0 && nl == L) { // a whole source block
                memcpy(d, src + cpu_lane_offset(c0, HW, L), (size_t) (HW * L) * sizeof(float));
                continue;
            }
            int64_t off[VAE_CPU_BLOCK_MAX];
            for (int l = 0; l < L; l++) {
                off[l] = l < nl ? cpu_lane_offset(c0 + l, HW, L) : 0;
            }
            for (int64_t p = 0; p < HW; p++) {
                for (int l = 0; l < L; l++) {
                    d[p * L + l] = l < nl ? src[off[l] + p * L] : 0.0f;
                }
            }
        }
    }
}

void vae_cpu_glu(const float * x, float * y, const int64_t ne_x[4], enum vae_act act) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne_x[0], C = ne_x[1] / 2, HW = ne_x[2] * ne_x[3];
    const int64_t CBx = vae_cpu_blocks(2 * C), CBy = vae_cpu_blocks(C);
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CBy; cb++) {
            const int64_t nl  = C - cb * L < L ? C - cb * L : L;
            const float * src = x + n * CBx * HW * L;
            float *       d   = y + (n * CBy + cb) * HW * L;
            int64_t       ov[VAE_CPU_BLOCK_MAX], og[VAE_CPU_BLOCK_MAX]; // lane l's value and gate channels
            for (int l = 0; l < L; l++) {
                ov[l] = l < nl ? cpu_lane_offset(cb * L + l, HW, L) : 0;
                og[l] = l < nl ? cpu_lane_offset(C + cb * L + l, HW, L) : 0;
            }
            for (int64_t p = 0; p < HW; p++) {
                for (int l = 0; l < L; l++) {
                    d[p * L + l] = l < nl ? src[ov[l] + p * L] * cpu_act(src[og[l] + p * L], act) : 0.0f;
                }
            }
        }
    }
}

void vae_cpu_pixel_shuffle(const float * x, float * y, const int64_t ne_x[4]) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne_x[0], C = ne_x[1] / 4, H = ne_x[2], W = ne_x[3], HW = H * W;
    const int64_t CBx = vae_cpu_blocks(4 * C), CBy = vae_cpu_blocks(C);
#pragma omp parallel for collapse(3)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CBy; cb++) {
            for (int64_t Y2 = 0; Y2 < 2 * H; Y2++) {
                const int64_t i = Y2 & 1, nl = C - cb * L < L ? C - cb * L : L;
                const float * src = x + (n * CBx * HW + (Y2 >> 1) * W) * L;
                float *       d   = y + ((n * CBy + cb) * 2 * H + Y2) * 2 * W * L;
                int64_t       off[2][VAE_CPU_BLOCK_MAX]; // source of lane l for output column parity j
                for (int j = 0; j < 2; j++) {
                    for (int l = 0; l < L; l++) {
                        off[j][l] = l < nl ? cpu_lane_offset(4 * (cb * L + l) + 2 * i + j, HW, L) : 0;
                    }
                }
                for (int64_t X = 0; X < W; X++) {
                    for (int j = 0; j < 2; j++) {
                        for (int l = 0; l < L; l++) {
                            d[(2 * X + j) * L + l] = l < nl ? src[off[j][l] + X * L] : 0.0f;
                        }
                    }
                }
            }
        }
    }
}

void vae_cpu_depthwise_conv2d(const float * x, float * y, const int64_t ne_x[4], int64_t m, int k, const float * w,
                              const float * bias) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne_x[0], C = ne_x[1] * m, H = ne_x[2], W = ne_x[3], HW = H * W, p = k / 2;
    const int64_t CBx = vae_cpu_blocks(ne_x[1]), CBy = vae_cpu_blocks(C);
#pragma omp parallel for collapse(3)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CBy; cb++) {
            for (int64_t Y = 0; Y < H; Y++) {
                const int64_t nl  = C - cb * L < L ? C - cb * L : L;
                const float * src = x + n * CBx * HW * L;
                float *       d   = y + ((n * CBy + cb) * H + Y) * W * L;
                int64_t       off[VAE_CPU_BLOCK_MAX]; // where lane l's input channel starts
                for (int64_t l = 0; l < L; l++) {
                    off[l] = l < nl ? cpu_lane_offset((cb * L + l) / m, HW, L) : 0;
                }
                for (int64_t X = 0; X < W; X++) {
                    float acc[VAE_CPU_BLOCK_MAX];
                    for (int64_t l = 0; l < L; l++) {
                        acc[l] = l < nl ? bias[cb * L + l] : 0.0f;
                    }
                    for (int64_t dy = 0; dy < k; dy++) {
                        const int64_t yy = Y + dy - p;
                        for (int64_t dx = 0; dx < k && yy >= 0 && yy < H; dx++) {
                            const int64_t xx = X + dx - p;
                            if (xx < 0 || xx >= W) {
                                continue;
                            }
                            for (int64_t l = 0; l < nl; l++) {
                                acc[l] += src[off[l] + (yy * W + xx) * L] * w[((cb * L + l) * k + dy) * k + dx];
                            }
                        }
                    }
                    memcpy(d + X * L, acc, (size_t) L * sizeof(float)); // (padding lanes: 0)
                }
            }
        }
    }
}

// ---- a ViT's tokens (MiniMax-H3) ----------------------------------------------------------------

void vae_cpu_tokens(const float * x, float * y, const int64_t ne_x[4], const float * extra, int64_t n_extra,
                    int64_t zeros) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne_x[0], C = ne_x[1], HW = ne_x[2] * ne_x[3], CB = vae_cpu_blocks(C);
    const int64_t T = N * HW + n_extra + zeros; // tokens of y
#pragma omp parallel for collapse(2)
    for (int64_t cb = 0; cb < CB; cb++) {
        for (int64_t n = 0; n < N; n++) {
            memcpy(y + (cb * T + n * HW) * L, x + (n * CB + cb) * HW * L, (size_t) (HW * L) * sizeof(float));
        }
    }
    for (int64_t cb = 0; cb < CB; cb++) {
        for (int64_t e = 0; e < n_extra + zeros; e++) {
            float * d = y + (cb * T + N * HW + e) * L;
            for (int64_t l = 0; l < L; l++) {
                d[l] = e < n_extra && cb * L + l < C ? extra[e * C + cb * L + l] : 0.0f;
            }
        }
    }
}

void vae_cpu_untokens(const float * x, float * y, const int64_t ne_y[4], int64_t tokens) {
    const int64_t L = vae_cpu_block();
    const int64_t N = ne_y[0], HW = ne_y[2] * ne_y[3], CB = vae_cpu_blocks(ne_y[1]);
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CB; cb++) {
            memcpy(y + (n * CB + cb) * HW * L, x + (cb * tokens + n * HW) * L, (size_t) (HW * L) * sizeof(float));
        }
    }
}

// The angles of the rotary embedding as upstream evaluates them in fp32 (MiniMaxH3VideoRotaryPosEmbed):
// position P = 2 ((i + 0.5) / size) - 1, angle (2 pi P) inv_freq[f], inv_freq[f] = 1 / theta^(6 f / rd).
// Token p's rd / 2 angles' cosines and sines into cs (rd / 2 each), inv the nf = rd / 6 inv_freq.
static void cpu_rope_angles(int64_t p, const int32_t grid[3], int rd, const float * inv, float * cs) {
    const int nf = rd / 6;
    float     pos[3] = { 0.0f, 0.0f, 0.0f };
    if (p < (int64_t) grid[0] * grid[1] * grid[2]) {
        const int64_t at[3] = { p / ((int64_t) grid[1] * grid[2]), p / grid[2] % grid[1], p % grid[2] };
        for (int b = 0; b < 3; b++) {
            pos[b] = 2.0f * (((float) at[b] + 0.5f) / (float) grid[b]) - 1.0f;
        }
    }
    for (int b = 0; b < 3; b++) {
        for (int f = 0; f < nf; f++) {
            const float a = ((float) (2.0 * M_PI) * pos[b]) * inv[f];
            cs[b * nf + f]          = cosf(a);
            cs[rd / 2 + b * nf + f] = sinf(a);
        }
    }
}

void vae_cpu_rope(const float * x, float * y, const int64_t ne[4], int hd, int rd, const int32_t grid[3], float theta,
                  float eps) {
    const int64_t L = vae_cpu_block();
    const int64_t C = ne[1], D = C / 3, T = ne[3], CB = vae_cpu_blocks(C), heads = D / hd;
#pragma omp parallel
    {
        // one head's channels, then cos and sin, then the inverse frequencies (once, not per token)
        float * u  = malloc((size_t) (hd + rd + rd / 6) * sizeof(float));
        float * cs = u + hd, *inv = cs + rd;
        if (!u) {
            abort(); // a few hundred bytes
        }
        for (int f = 0; f < rd / 6; f++) {
            inv[f] = (float) (1.0 / pow((double) theta, 6.0 * f / rd));
        }
#pragma omp for
        for (int64_t p = 0; p < T; p++) {
            cpu_rope_angles(p, grid, rd, inv, cs);
            for (int64_t c = 2 * D; c < CB * L; c++) { // v and the padding lanes as they are
                y[cpu_lane_offset(c, T, L) + p * L] = x[cpu_lane_offset(c, T, L) + p * L];
            }
            for (int64_t j = 0; j < 2 * heads; j++) { // q's heads, then k's
                double ss = 0;
                for (int c = 0; c < hd; c++) {
                    u[c] = x[cpu_lane_offset(j * hd + c, T, L) + p * L];
                    ss += (double) u[c] * u[c];
                }
                const float s = 1.0f / sqrtf((float) (ss / hd) + eps);
                for (int c = 0; c < hd; c++) {
                    u[c] *= s;
                }
                for (int c = 0; c < hd; c++) {
                    const int   h = rd / 2, k = c < h ? c + h : c - h;
                    const float v = c >= rd ? u[c] : c < h ? u[c] * cs[c] - u[k] * cs[h + c]
                                                           : u[c] * cs[k] + u[k] * cs[h + k];
                    y[cpu_lane_offset(j * hd + c, T, L) + p * L] = v;
                }
            }
        }
        free(u);
    }
}

void vae_cpu_crossfade(const float * held, const float * x, float * y, size_t frame, int d) {
    for (int f = 0; f < d; f++) {
        const float w = (float) f / (float) d, a = 1.0f - w;
#pragma omp parallel for
        for (size_t i = 0; i < frame; i++) {
            y[(size_t) f * frame + i] = held[(size_t) f * frame + i] * a + x[(size_t) f * frame + i] * w;
        }
    }
}
