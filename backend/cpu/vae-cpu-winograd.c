// The 3x3 convolutions of fp32 by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", CVPR 2016): each 2x2 block of outputs comes from
// the 4x4 block of inputs around it as Y = A^T [(G g G^T) . (B^T d B)] A, 16 products per channel
// pair where the direct convolution takes 36, the sums over the input channels 16 matrix products.
// oneDNN 3 has no Winograd convolution on x86, and its direct ones already run at the sgemm rate
// (docs/cpu.md), so fewer products is what is left: 1.3-1.7x faster at 96 to 512 channels here. The
// transforms only add, subtract and halve (B and A hold 0 and +-1, G also 1/2), so the result
// stays close to the direct one (max |diff| 3-6e-6 at |y| ~ 2 against oneDNN's, where F(4x4,
// 3x3) gives 2e-5 and 4x the weights). The output is walked in runs of WINO_TILES 2x2
// tiles along a row pair: a run's transformed inputs (16 x tiles x Cin) and products (16 x tiles
// x Cout) stay in the cache, each thread takes whole runs and multiplies them with single-threaded
// sgemm calls (inside the parallel region oneDNN's sgemm does not start threads of its own).

#include "vae-cpu.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#define WINO_TILES 32

size_t vae_cpu_winograd_floats(int64_t cin, int64_t cout) {
    return (size_t) (16 * cin * cout);
}

// u[e][c][k] = (G g G^T)[e] of the kernel g of output channel k and input channel c, e = 4 i + j;
// G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
void vae_cpu_winograd_weights(const float * w, float * u, int64_t cin, int64_t cout) {
    static const float G[4][3] = { { 1.0f, 0.0f, 0.0f }, { 0.5f, 0.5f, 0.5f }, { 0.5f, -0.5f, 0.5f }, { 0.0f, 0.0f, 1.0f } };
    for (int64_t k = 0; k < cout; k++) {
        for (int64_t c = 0; c < cin; c++) {
            const float * g = w + (k * cin + c) * 9;
            float         t[4][3]; // G g
            for (int i = 0; i < 4; i++) {
                for (int j = 0; j < 3; j++) {
                    t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
                }
            }
            for (int i = 0; i < 4; i++) {
                for (int j = 0; j < 4; j++) {
                    u[((i * 4 + j) * cin + c) * cout + k] = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
                }
            }
        }
    }
}

// v[e] = (B^T d B)[e] for the C channels of the 4x4 patch d (16 rows of C floats);
// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. v: 16 rows of C floats, ld floats apart
static void wino_input(const float * const d[16], float * v, int64_t ld, int64_t C, float * r) {
    for (int j = 0; j < 4; j++) { // r = B^T d, by columns
        const float *d0 = d[j], *d1 = d[4 + j], *d2 = d[8 + j], *d3 = d[12 + j];
        float *      r0 = r + j * C, *r1 = r + (4 + j) * C, *r2 = r + (8 + j) * C, *r3 = r + (12 + j) * C;
        for (int64_t c = 0; c < C; c++) {
            r0[c] = d0[c] - d2[c];
            r1[c] = d1[c] + d2[c];
            r2[c] = d2[c] - d1[c];
            r3[c] = d1[c] - d3[c];
        }
    }
    for (int i = 0; i < 4; i++) { // v = r B, by rows
        const float *r0 = r + (4 * i) * C, *r1 = r0 + C, *r2 = r1 + C, *r3 = r2 + C;
        float *      v0 = v + (4 * i) * ld, *v1 = v0 + ld, *v2 = v1 + ld, *v3 = v2 + ld;
        for (int64_t c = 0; c < C; c++) {
            v0[c] = r0[c] - r2[c];
            v1[c] = r1[c] + r2[c];
            v2[c] = r2[c] - r1[c];
            v3[c] = r1[c] - r3[c];
        }
    }
}

// o[2 i + j] = (A^T m A)[i][j] + bias (+ y[2 i + j] where add) for the K channels of a tile's 16
// products m[e] (rows of K, ld floats apart), A^T = [1 1 1 0; 0 1 -1 -1]; s: 8 rows of K. y[p]:
// the output pixel p, or NULL outside the frame (o[p] is then not written)
static void wino_output(const float * m, int64_t ld, int64_t K, const float * bias, float * const y[4],
                        bool add, float * s, float * o) {
    for (int j = 0; j < 4; j++) { // s = A^T m, by columns
        const float *m0 = m + j * ld, *m1 = m + (4 + j) * ld, *m2 = m + (8 + j) * ld, *m3 = m + (12 + j) * ld;
        float *      s0 = s + j * K, *s1 = s + (4 + j) * K;
        for (int64_t k = 0; k < K; k++) {
            s0[k] = m0[k] + m1[k] + m2[k];
            s1[k] = m1[k] - m2[k] - m3[k];
        }
    }
    for (int p = 0; p < 4; p++) { // o = s A, by rows
        const float *s0 = s + 4 * (p / 2) * K, *s1 = s0 + K, *s2 = s1 + K, *s3 = s2 + K;
        float *      op = o + p * K;
        if (!y[p]) {
            continue;
        }
        for (int64_t k = 0; k < K; k++) {
            const float a = p % 2 ? s1[k] - s2[k] - s3[k] : s0[k] + s1[k] + s2[k];
            op[k]         = (bias ? a + bias[k] : a) + (add ? y[p][k] : 0.0f);
        }
    }
}

void vae_cpu_winograd_conv(const float * x, float * y, const int64_t ne_x[4], int64_t cout, const float * u,
                           const float * bias, bool add, enum vae_act act) {
    const int64_t N = ne_x[0], C = ne_x[1], H = ne_x[2], W = ne_x[3], K = cout, T = WINO_TILES;
    const int64_t th = (H + 1) / 2, tw = (W + 1) / 2, runs = (tw + T - 1) / T;
#pragma omp parallel
    {
        // a run's transformed inputs [16][T][C] and products [16][T][K]; a patch's zeros and B^T d;
        // the A^T m of a tile (2 x 4 rows of K) and its 4 output pixels
        float * v    = malloc((size_t) (16 * T * C + 16 * T * K + 17 * C + 12 * K) * sizeof(float));
        if (!v) {
            abort(); // a few megabytes at most
        }
        float *m = v + 16 * T * C, *zero = m + 16 * T * K, *r = zero + C, *s = r + 16 * C, *o = s + 8 * K;
        memset(zero, 0, (size_t) C * sizeof(float));
#pragma omp for collapse(3) schedule(static)
        for (int64_t n = 0; n < N; n++) {
            for (int64_t ty = 0; ty < th; ty++) {
                for (int64_t run = 0; run < runs; run++) {
                    const int64_t tx0 = run * T, nt = tw - tx0 < T ? tw - tx0 : T;
                    const float * xn  = x + n * H * W * C;
                    for (int64_t t = 0; t < nt; t++) { // the 4x4 patch from (2 ty - 1, 2 tx - 1), zeros outside
                        const float * d[16];
                        for (int i = 0; i < 4; i++) {
                            for (int j = 0; j < 4; j++) {
                                const int64_t yy = 2 * ty - 1 + i, xx = 2 * (tx0 + t) - 1 + j;
                                d[i * 4 + j] = yy < 0 || yy >= H || xx < 0 || xx >= W ? zero : xn + (yy * W + xx) * C;
                            }
                        }
                        wino_input(d, v + t * C, T * C, C, r);
                    }
                    for (int e = 0; e < 16; e++) { // m[e] (nt x K) = v[e] (nt x C) u[e] (C x K)
                        if (dnnl_sgemm('N', 'N', nt, K, C, 1.0f, v + e * T * C, C, u + (size_t) e * C * K, K, 0.0f,
                                       m + e * T * K, K) != dnnl_success) {
                            abort(); // only for invalid arguments, which these shapes cannot be
                        }
                    }
                    for (int64_t t = 0; t < nt; t++) {
                        float * yp[4];
                        for (int p = 0; p < 4; p++) {
                            const int64_t yy = 2 * ty + p / 2, xx = 2 * (tx0 + t) + p % 2;
                            yp[p] = yy < H && xx < W ? y + ((n * H + yy) * W + xx) * K : NULL;
                        }
                        wino_output(m + t * K, T * K, K, bias, yp, add, s, o);
                        for (int p = 0; p < 4; p++) {
                            if (yp[p]) {
                                vae_cpu_act(o + p * K, K, act);
                                memcpy(yp[p], o + p * K, (size_t) K * sizeof(float));
                            }
                        }
                    }
                }
            }
        }
        free(v);
    }
}
