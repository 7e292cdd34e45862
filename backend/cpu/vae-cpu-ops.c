// The CPU ops that are not convolutions (the attentions have a file of their own): layout
// changes, the tanh clamp, nearest upsampling, GroupNorm, the RMS norms, the frame split of
// temporal upsampling, pixel shuffle, DC-AE's gated linear unit and the depthwise conv, written
// for the NHWC layout (vae-cpu.h): a pixel's C channels are contiguous, so the inner loops run
// over channels and vectorise. They run on all cores through OpenMP, the runtime oneDNN itself
// uses here.

#include "vae-cpu.h"

#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

void vae_cpu_to_nhwc(const float * src, float * dst, const int64_t ne[4]) {
    const int64_t N = ne[0], C = ne[1], HW = ne[2] * ne[3];
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t p = 0; p < HW; p++) {
            for (int64_t c = 0; c < C; c++) {
                dst[(n * HW + p) * C + c] = src[(n * C + c) * HW + p];
            }
        }
    }
}

void vae_cpu_from_nhwc(const float * src, float * dst, const int64_t ne[4]) {
    const int64_t N = ne[0], C = ne[1], HW = ne[2] * ne[3];
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            for (int64_t p = 0; p < HW; p++) {
                dst[(n * C + c) * HW + p] = src[(n * HW + p) * C + c];
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
    const int64_t C = ne_x[1], H = ne_x[2], W = ne_x[3], m = reflect ? 1 : 0;
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < ne_x[0]; n++) {
        for (int64_t Y = 0; Y < H + 2; Y++) { // (row -1 reads row m, row H reads row H - 1 - m)
            const int64_t sy  = Y == 0 ? m : Y > H ? H - 1 - m : Y - 1;
            const float * src = x + (n * H + sy) * W * C;
            float *       d   = y + (n * (H + 2) + Y) * (W + 2) * C;
            memcpy(d, src + m * C, (size_t) C * sizeof(float));
            memcpy(d + C, src, (size_t) (W * C) * sizeof(float));
            memcpy(d + (W + 1) * C, src + (W - 1 - m) * C, (size_t) C * sizeof(float));
        }
    }
}

void vae_cpu_upsample2x(const float * x, float * y, const int64_t ne_x[4]) {
    const int64_t C = ne_x[1], H = ne_x[2], W = ne_x[3];
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < ne_x[0]; n++) {
        for (int64_t Y = 0; Y < 2 * H; Y++) {
            const float * s = x + (n * H + Y / 2) * W * C;
            float *       d = y + (n * 2 * H + Y) * 2 * W * C;
            for (int64_t X = 0; X < 2 * W; X++) {
                memcpy(d + X * C, s + (X / 2) * C, (size_t) C * sizeof(float));
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

// The norms and the bias pass compute a tile of pixels into a buffer of CPU_ACT_FLOATS floats
// (cpu_tile_pixels), then vae_cpu_act over it, which is compiled for AVX-512 and AVX2 as well as
// the plugin's baseline x86-64 (an ifunc picks the CPU's when the library loads; the same
// arithmetic in each, so every machine gives the same values). A GroupNorm + SiLU of 128 channels
// at 512x512 took 78 ms with libm's expf inline, 31 ms so (2 threads, AVX-512); Wan's RMS norm +
// SiLU 98 and 42
#define CPU_ACT_FLOATS 4096
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void
vae_cpu_act(float * x, int64_t n, enum vae_act act) {
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

// pixels of C channels per tile of a norm or the bias pass: whole pixels in CPU_ACT_FLOATS floats, at
// least one; and that tile's buffer (one per thread: free it)
static int64_t cpu_tile_pixels(int64_t C) {
    return C >= CPU_ACT_FLOATS ? 1 : CPU_ACT_FLOATS / C;
}

static float * cpu_tile_buffer(int64_t C) {
    float * buf = malloc((size_t) (C > CPU_ACT_FLOATS ? C : CPU_ACT_FLOATS) * sizeof(float));
    if (!buf) {
        abort(); // at most a few pixels' worth
    }
    return buf;
}

void vae_cpu_bias_act(void * y, const int64_t ne[4], const float * bias, enum vae_act act, bool bf16) {
    const int64_t C = ne[1], P = ne[0] * ne[2] * ne[3], T = cpu_tile_pixels(C);
#pragma omp parallel
    {
        float * buf = cpu_tile_buffer(C);
#pragma omp for
        for (int64_t p0 = 0; p0 < P; p0 += T) {
            const int64_t np = P - p0 < T ? P - p0 : T;
            for (int64_t p = 0; p < np; p++) {
                for (int64_t c = 0; c < C; c++) {
                    buf[p * C + c] = vae_cpu_load(y, bf16, (p0 + p) * C + c) + (bias ? bias[c] : 0.0f);
                }
            }
            vae_cpu_act(buf, np * C, act);
            vae_cpu_store(y, bf16, p0 * C, buf, np * C);
        }
        free(buf);
    }
}

// GroupNorm's statistics: per frame, the sum over its pixels of each channel's value (f32 or
// bf16; centered by mean[c] of that frame if mean is given, squared), in double. The pixels go in
// runs of CPU_SUM_PIXELS, each summed on its own and then added in order: the same result on any
// number of threads
#define CPU_SUM_PIXELS 1024

static void cpu_channel_sums(const void * x, bool x_bf16, const int64_t ne[4], const double * mean, double * out) {
    const int64_t N = ne[0], C = ne[1], HW = ne[2] * ne[3], R = (HW + CPU_SUM_PIXELS - 1) / CPU_SUM_PIXELS;
    double *      part = calloc((size_t) (N * R * C), sizeof(double));
    if (!part) {
        abort(); // N C HW / 1024 doubles: an eighth of the activation
    }
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t r = 0; r < R; r++) {
            double *       acc = part + (n * R + r) * C;
            const double * m   = mean ? mean + n * C : NULL;
            const int64_t  p1  = (r + 1) * CPU_SUM_PIXELS < HW ? (r + 1) * CPU_SUM_PIXELS : HW;
            for (int64_t p = r * CPU_SUM_PIXELS; p < p1; p++) {
                const int64_t at = (n * HW + p) * C;
                if (m) {
                    for (int64_t c = 0; c < C; c++) {
                        const double v = (double) vae_cpu_load(x, x_bf16, at + c) - m[c];
                        acc[c] += v * v;
                    }
                } else {
                    for (int64_t c = 0; c < C; c++) {
                        acc[c] += (double) vae_cpu_load(x, x_bf16, at + c);
                    }
                }
            }
        }
    }
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            double s = 0;
            for (int64_t r = 0; r < R; r++) {
                s += part[(n * R + r) * C + c];
            }
            out[n * C + c] = s;
        }
    }
    free(part);
}

// per channel: the mean over its group of the channel sums; with eps >= 0, 1 / sqrt(that + eps).
// frames > 1: the group's sums over that many frames at once (statistics over the frames too)
static void cpu_group_mean(const double * sums, double * out, int64_t N, int64_t C, int64_t groups, int64_t cpg,
                           int64_t HW, float eps, int64_t frames) {
    for (int64_t n = 0; n < N; n += frames) {
        for (int64_t g = 0; g < groups; g++) {
            double s = 0;
            for (int64_t f = n; f < n + frames; f++) {
                for (int64_t c = g * cpg; c < (g + 1) * cpg; c++) {
                    s += sums[f * C + c];
                }
            }
            s /= (double) (cpg * HW * frames);
            for (int64_t f = n; f < n + frames; f++) {
                for (int64_t c = g * cpg; c < (g + 1) * cpg; c++) {
                    out[f * C + c] = eps < 0 ? s : 1.0 / sqrt(s + (double) eps);
                }
            }
        }
    }
}

void vae_cpu_group_norm(const void * x, void * y, const int64_t ne[4], int groups, float eps, const float * gamma,
                        const float * beta, enum vae_act act, const float * stats, bool all_frames, bool x_bf16,
                        bool y_bf16) {
    const int64_t N = ne[0], C = ne[1], HW = ne[2] * ne[3], cpg = C / groups, T = cpu_tile_pixels(C);
    const size_t  nc   = (size_t) (N * C);
    double *      sums = malloc(3 * nc * sizeof(double));
    float *       ab   = malloc(2 * nc * sizeof(float));
    if (!sums || !ab) {
        abort(); // a few kilobytes; nothing sensible is left to do
    }
    double *mean = sums + nc, *rstd = sums + 2 * nc;
    float * a = ab, *b = ab + nc;

    if (stats) { // the same for every frame
        for (int64_t n = 0; n < N; n++) {
            for (int64_t c = 0; c < C; c++) {
                mean[n * C + c] = stats[c / cpg];
                rstd[n * C + c] = stats[groups + c / cpg];
            }
        }
    } else {
        // two passes (mean, then centered squares) so large offsets lose no precision
        cpu_channel_sums(x, x_bf16, ne, NULL, sums);
        cpu_group_mean(sums, mean, N, C, groups, cpg, HW, -1.0f, all_frames ? N : 1);
        cpu_channel_sums(x, x_bf16, ne, mean, sums);
        cpu_group_mean(sums, rstd, N, C, groups, cpg, HW, eps, all_frames ? N : 1);
    }
    for (size_t i = 0; i < nc; i++) { // y = (x - mean) * (rstd * gamma) + beta
        a[i] = (float) (rstd[i] * gamma[i % (size_t) C]);
        b[i] = beta[i % (size_t) C];
    }
#pragma omp parallel
    {
        float * buf = cpu_tile_buffer(C);
#pragma omp for collapse(2)
        for (int64_t n = 0; n < N; n++) {
            for (int64_t p0 = 0; p0 < HW; p0 += T) {
                const int64_t  np = HW - p0 < T ? HW - p0 : T, at = (n * HW + p0) * C;
                const double * m  = mean + n * C;
                const float *  an = a + n * C, *bn = b + n * C;
                for (int64_t p = 0; p < np; p++) {
                    for (int64_t c = 0; c < C; c++) {
                        const double v = vae_cpu_load(x, x_bf16, at + p * C + c);
                        buf[p * C + c] = (float) (v - m[c]) * an[c] + bn[c];
                    }
                }
                vae_cpu_act(buf, np * C, act);
                vae_cpu_store(y, y_bf16, at, buf, np * C);
            }
        }
        free(buf);
    }
    free(sums);
    free(ab);
}

// Wan's RMS_norm, F.normalize(x, dim=1) * sqrt(C) * gamma: per pixel, x / max(|x|, 1e-12) over
// the C channels; and diffusers' RMSNorm with weight and bias (DC-AE), x / sqrt(mean(x^2) + eps)
// * gamma + beta, and a residual after it. The sum of squares is taken in double, so it neither
// overflows nor underflows for any finite input (|x| up to FLT_MAX, subnormals), and the scale is
// applied in double: y is x * s * gamma + beta + r computed in double and rounded to float once
// (then the activation, in float), so Wan's |y| <= sqrt(C) * |gamma| never overflows. Without
// beta (or r), -0 is added, which changes nothing (not even a zero's sign). A NaN anywhere in a
// pixel makes every channel of that pixel NaN, as in PyTorch (clamp_min keeps a NaN norm). A
// pixel's sums go in RMS_LANES partial sums, so that they vectorise without reassociating anything.
#define RMS_LANES 8

void vae_cpu_rms_norm(const void * x, void * y, const int64_t ne[4], const float * gamma, const float * beta,
                      const float * r, int mode, float eps, enum vae_act act, bool x_bf16, bool y_bf16) {
    const int64_t C = ne[1], P = ne[0] * ne[2] * ne[3], T = cpu_tile_pixels(C), C8 = C - C % RMS_LANES;
    const double  sqrt_c = sqrt((double) C);
    double *      gb     = malloc((size_t) (2 * C) * sizeof(double));
    if (!gb) {
        abort(); // a few kilobytes
    }
    for (int64_t c = 0; c < C; c++) {
        gb[c]     = gamma[c];
        gb[C + c] = beta ? beta[c] : -0.0;
    }
#pragma omp parallel
    {
        float * buf = cpu_tile_buffer(C);
#pragma omp for
        for (int64_t p0 = 0; p0 < P; p0 += T) {
            const int64_t np = P - p0 < T ? P - p0 : T;
            for (int64_t p = 0; p < np; p++) {
                const int64_t at = (p0 + p) * C;
                double        acc[RMS_LANES] = { 0 }, sum[RMS_LANES] = { 0 };
                for (int64_t c0 = 0; c0 < C8; c0 += RMS_LANES) {
                    for (int l = 0; l < RMS_LANES; l++) {
                        const double v = vae_cpu_load(x, x_bf16, at + c0 + l);
                        acc[l] += v * v;
                        sum[l] += v;
                    }
                }
                for (int64_t c = C8; c < C; c++) {
                    const double v = vae_cpu_load(x, x_bf16, at + c);
                    acc[c - C8] += v * v;
                    sum[c - C8] += v;
                }
                double ss = 0, sm = 0;
                for (int l = 0; l < RMS_LANES; l++) {
                    ss += acc[l];
                    sm += sum[l];
                }
                // a NaN norm stays NaN
                const double norm  = sqrt(ss);
                const double mean  = mode == 2 ? sm / (double) C : 0.0;
                const double scale = mode == 2   ? 1.0 / sqrt(ss / (double) C - mean * mean + (double) eps)
                                     : mode == 1 ? 1.0 / sqrt(ss / (double) C + (double) eps)
                                                 : sqrt_c / (norm < 1e-12 ? 1e-12 : norm);
                const float * rs   = r ? r + at : NULL;
                for (int64_t c = 0; c < C; c++) {
                    const double v = ((double) vae_cpu_load(x, x_bf16, at + c) - mean) * scale * gb[c] + gb[C + c];
                    buf[p * C + c] = (float) (rs ? v + (double) rs[c] : v);
                }
            }
            vae_cpu_act(buf, np * C, act);
            vae_cpu_store(y, y_bf16, p0 * C, buf, np * C);
        }
        free(buf);
    }
    free(gb);
}

void vae_cpu_frame_split(const float * x, float * y, const int64_t ne_x[4], int s, int drop) {
    const int64_t N = ne_x[0], C = ne_x[1], HW = ne_x[2] * ne_x[3], Cs = C / s;
#pragma omp parallel for collapse(2)
    for (int64_t f = drop; f < N * s; f++) {
        for (int64_t p = 0; p < HW; p++) { // frame f = channels [j Cs, (j + 1) Cs) of frame f / s, j = f % s
            memcpy(y + ((f - drop) * HW + p) * Cs, x + ((f / s) * HW + p) * C + (f % s) * Cs,
                   (size_t) Cs * sizeof(float));
        }
    }
}

void vae_cpu_glu(const float * x, float * y, const int64_t ne_x[4], enum vae_act act) {
    const int64_t C = ne_x[1] / 2, P = ne_x[0] * ne_x[2] * ne_x[3];
#pragma omp parallel for
    for (int64_t p = 0; p < P; p++) {
        const float * s = x + p * 2 * C;
        for (int64_t c = 0; c < C; c++) {
            y[p * C + c] = s[c] * cpu_act(s[C + c], act);
        }
    }
}

void vae_cpu_pixel_shuffle(const float * x, float * y, const int64_t ne_x[4]) {
    const int64_t N = ne_x[0], C = ne_x[1] / 4, H = ne_x[2], W = ne_x[3];
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t Y2 = 0; Y2 < 2 * H; Y2++) {
            const int64_t i   = Y2 & 1;
            const float * src = x + (n * H + (Y2 >> 1)) * W * 4 * C;
            float *       d   = y + (n * 2 * H + Y2) * 2 * W * C;
            for (int64_t X = 0; X < W; X++) {
                for (int j = 0; j < 2; j++) {
                    for (int64_t c = 0; c < C; c++) {
                        d[(2 * X + j) * C + c] = src[X * 4 * C + 4 * c + 2 * i + j];
                    }
                }
            }
        }
    }
}

void vae_cpu_depthwise_conv2d(const float * x, float * y, const int64_t ne_x[4], int64_t m, int k, const float * w,
                              const float * bias) {
    const int64_t N = ne_x[0], Ci = ne_x[1], C = Ci * m, H = ne_x[2], W = ne_x[3], p = k / 2;
    float *       wt = malloc((size_t) (C * k * k) * sizeof(float)); // the taps channel-minor: [k, k, C m]
    if (!wt) {
        abort(); // a few kilobytes
    }
    for (int64_t o = 0; o < C; o++) {
        for (int64_t t = 0; t < k * k; t++) {
            wt[t * C + o] = w[o * k * k + t];
        }
    }
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t Y = 0; Y < H; Y++) {
            for (int64_t X = 0; X < W; X++) {
                float * d = y + ((n * H + Y) * W + X) * C;
                memcpy(d, bias, (size_t) C * sizeof(float));
                for (int64_t dy = 0; dy < k; dy++) {
                    const int64_t yy = Y + dy - p;
                    for (int64_t dx = 0; dx < k && yy >= 0 && yy < H; dx++) {
                        const int64_t xx = X + dx - p;
                        if (xx < 0 || xx >= W) {
                            continue;
                        }
                        const float * s = x + ((n * H + yy) * W + xx) * Ci, *wk = wt + (dy * k + dx) * C;
                        for (int64_t i = 0; i < Ci; i++) { // output channels [i m, (i + 1) m) read channel i
                            for (int64_t j = 0; j < m; j++) {
                                d[i * m + j] += s[i] * wk[i * m + j];
                            }
                        }
                    }
                }
            }
        }
    }
    free(wt);
}

// ---- a ViT's tokens (MiniMax-H3) ----------------------------------------------------------------

void vae_cpu_tokens(const float * x, float * y, const int64_t ne_x[4], const float * extra, int64_t n_extra,
                    int64_t zeros) {
    const int64_t C = ne_x[1], P = ne_x[0] * ne_x[2] * ne_x[3]; // (NHWC frames are tokens already)
    memcpy(y, x, (size_t) (P * C) * sizeof(float));
    if (n_extra) {
        memcpy(y + P * C, extra, (size_t) (n_extra * C) * sizeof(float));
    }
    memset(y + (P + n_extra) * C, 0, (size_t) (zeros * C) * sizeof(float));
}

void vae_cpu_untokens(const float * x, float * y, const int64_t ne_y[4]) {
    memcpy(y, x, vae_cpu_nelements(ne_y) * sizeof(float));
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
    const int64_t C = ne[1], D = C / 3, T = ne[3], heads = D / hd;
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
            const float * xs = x + p * C;
            float *       ys = y + p * C;
            if (ys != xs) { // v as it is
                memcpy(ys + 2 * D, xs + 2 * D, (size_t) D * sizeof(float));
            }
            for (int64_t j = 0; j < 2 * heads; j++) { // q's heads, then k's
                double ss = 0;
                for (int c = 0; c < hd; c++) {
                    u[c] = xs[j * hd + c];
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
                    ys[j * hd + c] = v;
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
