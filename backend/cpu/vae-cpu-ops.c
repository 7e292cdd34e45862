// The CPU ops that are not convolutions: layout changes, the tanh clamp, nearest upsampling and
// GroupNorm, written for the blocked nChw16c layout so that the 16 lanes of a block vectorise.
// They run on all cores through OpenMP, the runtime oneDNN itself uses here.

#include "vae-cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void vae_cpu_to_blocked(const float * src, float * dst, const int64_t ne[4]) {
    const int64_t N = ne[0], C = ne[1], HW = ne[2] * ne[3], CB = vae_cpu_blocks(C);
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CB; cb++) {
            float * d = dst + (n * CB + cb) * HW * VAE_CPU_BLOCK;
            for (int64_t p = 0; p < HW; p++) {
                for (int64_t l = 0; l < VAE_CPU_BLOCK; l++) {
                    const int64_t c = cb * VAE_CPU_BLOCK + l;
                    d[p * VAE_CPU_BLOCK + l] = c < C ? src[(n * C + c) * HW + p] : 0.0f;
                }
            }
        }
    }
}

void vae_cpu_from_blocked(const float * src, float * dst, const int64_t ne[4]) {
    const int64_t N = ne[0], C = ne[1], HW = ne[2] * ne[3], CB = vae_cpu_blocks(C);
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            const float * s = src + (n * CB + c / VAE_CPU_BLOCK) * HW * VAE_CPU_BLOCK + c % VAE_CPU_BLOCK;
            float *       d = dst + (n * C + c) * HW;
            for (int64_t p = 0; p < HW; p++) {
                d[p] = s[p * VAE_CPU_BLOCK];
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

void vae_cpu_upsample2x(const float * x, float * y, const int64_t ne_x[4]) {
    const int64_t NB = ne_x[0] * vae_cpu_blocks(ne_x[1]), H = ne_x[2], W = ne_x[3];
#pragma omp parallel for collapse(2)
    for (int64_t b = 0; b < NB; b++) {
        for (int64_t Y = 0; Y < 2 * H; Y++) {
            const float * s = x + (b * H + Y / 2) * W * VAE_CPU_BLOCK;
            float *       d = y + (b * 2 * H + Y) * 2 * W * VAE_CPU_BLOCK;
            for (int64_t X = 0; X < 2 * W; X++) {
                memcpy(d + X * VAE_CPU_BLOCK, s + (X / 2) * VAE_CPU_BLOCK, VAE_CPU_BLOCK * sizeof(float));
            }
        }
    }
}

static inline float cpu_act(float v, enum vae_act act) {
    switch (act) {
        case VAE_ACT_RELU: return v > 0.0f ? v : 0.0f;
        case VAE_ACT_SILU: return v / (1.0f + expf(-v));
        default:           return v;
    }
}

// per channel sum of x (centered by mean[c] if mean is given, squared), in double
static void cpu_channel_sums(const float * x, const int64_t ne[4], const double * mean, double * out) {
    const int64_t N = ne[0], CB = vae_cpu_blocks(ne[1]), HW = ne[2] * ne[3];
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CB; cb++) {
            const float * s = x + (n * CB + cb) * HW * VAE_CPU_BLOCK;
            double        acc[VAE_CPU_BLOCK] = { 0 };
            double        m[VAE_CPU_BLOCK]   = { 0 };
            if (mean) {
                for (int l = 0; l < VAE_CPU_BLOCK; l++) {
                    m[l] = mean[n * CB * VAE_CPU_BLOCK + cb * VAE_CPU_BLOCK + l];
                }
            }
            for (int64_t p = 0; p < HW; p++) {
                for (int l = 0; l < VAE_CPU_BLOCK; l++) {
                    const double v = (double) s[p * VAE_CPU_BLOCK + l] - m[l];
                    acc[l] += mean ? v * v : v;
                }
            }
            memcpy(out + (n * CB + cb) * VAE_CPU_BLOCK, acc, sizeof(acc));
        }
    }
}

// per channel: the mean over its group of the channel sums; with eps >= 0, 1 / sqrt(that + eps)
static void cpu_group_mean(const double * sums, double * out, int64_t N, int64_t CB, int64_t groups, int64_t cpg,
                           int64_t HW, float eps) {
    for (int64_t n = 0; n < N; n++) {
        for (int64_t g = 0; g < groups; g++) {
            const int64_t base = n * CB * VAE_CPU_BLOCK;
            double        s    = 0;
            for (int64_t c = g * cpg; c < (g + 1) * cpg; c++) {
                s += sums[base + c];
            }
            s /= (double) (cpg * HW);
            for (int64_t c = g * cpg; c < (g + 1) * cpg; c++) {
                out[base + c] = eps < 0 ? s : 1.0 / sqrt(s + (double) eps);
            }
        }
    }
}

void vae_cpu_group_norm(const float * x, float * y, const int64_t ne[4], int groups, float eps, const float * gamma,
                        const float * beta, enum vae_act act) {
    const int64_t N = ne[0], C = ne[1], CB = vae_cpu_blocks(C), HW = ne[2] * ne[3], cpg = C / groups;
    const size_t  nc = (size_t) (N * CB * VAE_CPU_BLOCK);
    double *      sums = malloc(3 * nc * sizeof(double));
    if (!sums) {
        abort(); // a few kilobytes; nothing sensible is left to do
    }
    double * mean = sums + nc, * rstd = sums + 2 * nc;

    // two passes (mean, then centered squares) so large offsets lose no precision
    cpu_channel_sums(x, ne, NULL, sums);
    cpu_group_mean(sums, mean, N, CB, groups, cpg, HW, -1.0f);
    cpu_channel_sums(x, ne, mean, sums);
    cpu_group_mean(sums, rstd, N, CB, groups, cpg, HW, eps);
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t cb = 0; cb < CB; cb++) {
            double m[VAE_CPU_BLOCK];
            float  a[VAE_CPU_BLOCK], b[VAE_CPU_BLOCK];
            for (int l = 0; l < VAE_CPU_BLOCK; l++) {
                const int64_t c = cb * VAE_CPU_BLOCK + l, i = n * CB * VAE_CPU_BLOCK + c;
                // y = (x - mean) * (rstd * gamma) + beta; padding lanes stay 0
                m[l] = c < C ? mean[i] : 0.0;
                a[l] = c < C ? (float) (rstd[i] * gamma[c]) : 0.0f;
                b[l] = c < C ? beta[c] : 0.0f;
            }
            const float * s = x + (n * CB + cb) * HW * VAE_CPU_BLOCK;
            float *       d = y + (n * CB + cb) * HW * VAE_CPU_BLOCK;
            for (int64_t p = 0; p < HW; p++) {
                for (int l = 0; l < VAE_CPU_BLOCK; l++) {
                    d[p * VAE_CPU_BLOCK + l] = cpu_act((float) ((double) s[p * VAE_CPU_BLOCK + l] - m[l]) * a[l] + b[l], act);
                }
            }
        }
    }
    free(sums);
}
