// The attentions of the NHWC layout: the softmax attention within each frame (the one-head
// mid-block attention of the Wan VAE and of AutoencoderKL, MiniMax-H3's heads over its tokens) and across the frames of a stream,
// block-causal with a key/value cache (HunyuanVideo 1.5's), and at the end EfficientViT's ReLU
// linear attention (DC-AE).
//
// Softmax attention. oneDNN 2.6 has no attention primitive, and the score matrix of a frame
// ((H*W)^2 floats, 1 GiB at 16k tokens) must never exist whole: q, k and v are gathered from the
// pixels' channels into plain matrices in the scratch, then blocks of at most ATTN_ROWS query rows
// go through S = q k^T * (1/sqrt(C)) (dnnl_sgemm), an exact fp32 softmax per row (max
// subtracted, libm expf, sum in double) and O = P v (dnnl_sgemm), each row divided by its sum at
// the end. The GEMMs thread themselves (the same OpenMP pool); the gather, the
// softmax and the scatter run in parallel loops between them, so nothing is nested. The causal
// form keeps its keys and values token-major in the cache (appending a frame moves nothing) and
// multiplies by k^T; a query of frame t reads the first (held + t + 1) HW of them, which is the
// upstream mask (0 there, -inf after) without building it.

#include "vae-cpu.h"

#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

// query rows per block: the score block is ATTN_ROWS x HW floats (16 MiB at 16k tokens)
#define ATTN_ROWS 256

// partial sums of a softmax row, so that its loops vectorise without reassociating anything
#define ATTN_LANES 16

static int64_t attn_rows(int64_t hw) {
    return hw < ATTN_ROWS ? hw : ATTN_ROWS;
}

// q and v (HW x C), k (C x HW), the score block (rows x HW), the output block (rows x C), the row sums;
// C = a head's channels
size_t vae_cpu_attention_scratch(const int64_t ne_qkv[4], int64_t hd) {
    const int64_t C = hd ? hd : ne_qkv[1] / 3, HW = ne_qkv[2] * ne_qkv[3], R = attn_rows(HW);
    return (size_t) (3 * HW * C + R * HW + R * C + R);
}

static void attn_sgemm(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha, const float * A, int64_t lda,
                       const float * Bm, int64_t ldb, float * Cm, int64_t ldc) {
    if (dnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, Bm, ldb, 0.0f, Cm, ldc) != dnnl_success) {
        abort(); // only for invalid arguments, which the shapes here cannot produce
    }
}

// row <- exp(row - max(row)) in place; returns the sum (in double, in 16 lane-wise partial sums).
// A NaN in the row gives a NaN sum (the max skips it, its exp does not).
static double attn_softmax_row(float * row, int64_t n) {
    float m[ATTN_LANES];
    for (int l = 0; l < ATTN_LANES; l++) {
        m[l] = -INFINITY;
    }
    const int64_t n16 = n - n % ATTN_LANES;
    for (int64_t i = 0; i < n16; i += ATTN_LANES) {
        for (int l = 0; l < ATTN_LANES; l++) {
            m[l] = row[i + l] > m[l] ? row[i + l] : m[l];
        }
    }
    for (int64_t i = n16; i < n; i++) {
        m[0] = row[i] > m[0] ? row[i] : m[0];
    }
    float mx = m[0];
    for (int l = 1; l < ATTN_LANES; l++) {
        mx = m[l] > mx ? m[l] : mx;
    }
    double acc[ATTN_LANES] = { 0 };
    for (int64_t i = 0; i < n16; i += ATTN_LANES) {
        for (int l = 0; l < ATTN_LANES; l++) {
            const float e = expf(row[i + l] - mx);
            row[i + l]    = e;
            acc[l] += e;
        }
    }
    for (int64_t i = n16; i < n; i++) {
        row[i] = expf(row[i] - mx);
        acc[0] += row[i];
    }
    double s = 0;
    for (int l = 0; l < ATTN_LANES; l++) {
        s += acc[l];
    }
    return s;
}

// the keys and values one frame's queries attend to: T of them, k channel-major (C x T, leading
// dimension T) or token-major (T x C, k_rows), v token-major (T x C)
struct attn_keys {
    const float * k, * v;
    int64_t       t;
    bool          k_rows;
};

// the HW queries q (token-major, HW x C) of one frame and head against keys kv into channels [c0,
// c0 + C) of dst (that frame of y, ldy channels a pixel), R rows at a time: S = q k^T * scale, an exact softmax
// per row, O = S v, each row divided by its sum as it is written. s: R x T floats, o: R x C, sums:
// R. false when the cancel flag stopped it (between two blocks of rows)
static bool attn_frame(const float * q, const struct attn_keys * kv, int64_t HW, int64_t C, int64_t c0, int64_t R,
                       float * s, float * o, float * sums, float * dst, int64_t ldy, const int * cancel) {
    const int64_t T = kv->t;
    const float   scale = (float) (1.0 / sqrt((double) C)); // PyTorch's scale: q.k (fp32) * scale
    for (int64_t r0 = 0; r0 < HW; r0 += R) {
        const int64_t m = HW - r0 < R ? HW - r0 : R;
        if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE)) {
            return false;
        }
        attn_sgemm('N', kv->k_rows ? 'T' : 'N', m, T, C, scale, q + r0 * C, C, kv->k, kv->k_rows ? C : T, s, T);
#pragma omp parallel for
        for (int64_t r = 0; r < m; r++) {
            sums[r] = (float) attn_softmax_row(s + r * T, T);
        }
        attn_sgemm('N', 'N', m, C, T, 1.0f, s, T, kv->v, C, o, C);
#pragma omp parallel for
        for (int64_t r = 0; r < m; r++) {
            for (int64_t c = 0; c < C; c++) {
                dst[(r0 + r) * ldy + c0 + c] = o[r * C + c] / sums[r];
            }
        }
    }
    return true;
}

// channels [c0, c0 + C) of frame src (HW pixels of ld channels) into dst token-major (HW x C)
static void attn_gather_rows(const float * src, int64_t ld, int64_t c0, int64_t C, int64_t HW, float * dst) {
#pragma omp parallel for
    for (int64_t p = 0; p < HW; p++) {
        memcpy(dst + p * C, src + p * ld + c0, (size_t) C * sizeof(float));
    }
}

bool vae_cpu_attention(const float * qkv, float * y, const int64_t ne_qkv[4], int64_t hd, float * scratch,
                       const int * cancel) {
    const int64_t N = ne_qkv[0], D = ne_qkv[1] / 3, C = hd ? hd : D, HW = ne_qkv[2] * ne_qkv[3], R = attn_rows(HW);
    float *       q = scratch, *k = q + HW * C, *v = k + HW * C, *s = v + HW * C, *o = s + R * HW;
    float *       sums = o + R * C;
    for (int64_t n = 0; n < N; n++) {
        const float * src = qkv + n * HW * 3 * D;
        for (int64_t c0 = 0; c0 < D; c0 += C) { // a head
            // q and v token-major (HW x C), k channel-major (C x HW): both products are then 'N', 'N',
            // which oneDNN's sgemm runs faster than q k^T with a transposed k
            attn_gather_rows(src, 3 * D, c0, C, HW, q);
            attn_gather_rows(src, 3 * D, 2 * D + c0, C, HW, v);
#pragma omp parallel for
            for (int64_t c = 0; c < C; c++) {
                const float * s_k = src + D + c0 + c;
                for (int64_t p = 0; p < HW; p++) {
                    k[c * HW + p] = s_k[p * 3 * D];
                }
            }
            const struct attn_keys kv = { k, v, HW, false };
            if (!attn_frame(q, &kv, HW, C, c0, R, s, o, sums, y + n * HW * D, D, cancel)) {
                return false;
            }
        }
    }
    return true;
}

// q of one frame (HW x C), the output block (rows x C), the row sums; the scores live with the cache
size_t vae_cpu_causal_attention_scratch(const int64_t ne_qkv[4]) {
    const int64_t C = ne_qkv[1] / 3, HW = ne_qkv[2] * ne_qkv[3];
    return (size_t) (HW * C + VAE_CPU_CAUSAL_ROWS * C + VAE_CPU_CAUSAL_ROWS);
}

bool vae_cpu_causal_attention(const float * qkv, float * y, const int64_t ne_qkv[4], float * scratch, float * k,
                              float * v, int64_t held, float * scores, const int * cancel) {
    const int64_t N = ne_qkv[0], C = ne_qkv[1] / 3, HW = ne_qkv[2] * ne_qkv[3];
    float *       q = scratch, *o = q + HW * C, *sums = o + VAE_CPU_CAUSAL_ROWS * C;
    for (int64_t n = 0; n < N; n++) { // the cache first takes the keys and values of every frame
        const float * src = qkv + n * HW * 3 * C;
        attn_gather_rows(src, 3 * C, C, C, HW, k + (held + n) * HW * C);
        attn_gather_rows(src, 3 * C, 2 * C, C, HW, v + (held + n) * HW * C);
    }
    for (int64_t n = 0; n < N; n++) { // frame n sees the frames held and frames 0..n of these
        attn_gather_rows(qkv + n * HW * 3 * C, 3 * C, 0, C, HW, q);
        const struct attn_keys kv = { k, v, (held + n + 1) * HW, true };
        const int64_t          R  = HW < VAE_CPU_CAUSAL_ROWS ? HW : VAE_CPU_CAUSAL_ROWS;
        if (!attn_frame(q, &kv, HW, C, 0, R, scores, o, sums, y + n * HW * C, C, cancel)) {
            return false;
        }
    }
    return true;
}

// EfficientViT's ReLU linear attention (diffusers' SanaMultiscaleAttnProcessor2_0), per frame and
// group (the groups in parallel): upstream's forms, chosen as upstream chooses them, in double.
// Linear (P > hd): A = [v; 1] k^T summed over the positions, then at each position
// o = (A q)[:hd] / ((A q)[hd] + 1e-15); A is kept transposed (at[e][d]) so that both loops run
// over d contiguously. Quadratic (P <= hd): the scores k_m.q of a position's P keys, then
// o = sum_m v_m s_m / (sum_m s_m + 1e-15). q and k are ReLU'd as gathered (a NaN stays NaN).
static inline float la_relu(float v) {
    return v < 0.0f ? 0.0f : v;
}

// the n channels from c0 of position p of a frame (ld channels a position) into d (ReLU'd when relu)
static inline void la_gather(const float * src, int64_t c0, int64_t n, int64_t p, int64_t ld, bool relu,
                             double * d) {
    for (int64_t i = 0; i < n; i++) {
        const float v = src[p * ld + c0 + i];
        d[i]          = relu ? la_relu(v) : v;
    }
}

void vae_cpu_linear_attention(const float * qkv, float * y, const int64_t ne_qkv[4], int hd) {
    const int64_t N = ne_qkv[0], H = hd, G = ne_qkv[1] / (3 * H), P = ne_qkv[2] * ne_qkv[3], C = G * H;
    const bool    linear = P > H;
#pragma omp parallel
    {
        // at [H][H + 1]; q, k (H each); v with the row of ones (H + 1); O (H + 1)
        double * at = malloc((size_t) (H * (H + 1) + 2 * H + 2 * (H + 1)) * sizeof(double));
        if (!at) {
            abort(); // a few kilobytes
        }
        double *q = at + H * (H + 1), *k = q + H, *v = k + H, *o = v + H + 1;
#pragma omp for collapse(2)
        for (int64_t n = 0; n < N; n++) {
            for (int64_t g = 0; g < G; g++) {
                // q, k, v: channels [3 H g, 3 H (g + 1)) of 3 C; y: [H g, H (g + 1)) of C
                const float * src = qkv + n * P * 3 * C;
                float *       dst = y + n * P * C + g * H;
                const int64_t oq = g * 3 * H, ok = oq + H, ov = oq + 2 * H;
                if (linear) {
                    memset(at, 0, (size_t) (H * (H + 1)) * sizeof(double));
                    v[H] = 1.0;
                    for (int64_t m = 0; m < P; m++) {
                        la_gather(src, ok, H, m, 3 * C, true, k);
                        la_gather(src, ov, H, m, 3 * C, false, v);
                        for (int64_t e = 0; e < H; e++) {
                            for (int64_t d = 0; d <= H; d++) {
                                at[e * (H + 1) + d] += v[d] * k[e];
                            }
                        }
                    }
                }
                for (int64_t p = 0; p < P; p++) {
                    la_gather(src, oq, H, p, 3 * C, true, q);
                    memset(o, 0, (size_t) (H + 1) * sizeof(double));
                    if (linear) { // O = A q; its last row is the denominator
                        for (int64_t e = 0; e < H; e++) {
                            for (int64_t d = 0; d <= H; d++) {
                                o[d] += at[e * (H + 1) + d] * q[e];
                            }
                        }
                    } else { // each key's score k_m.q, summed into the denominator o[H]
                        for (int64_t m = 0; m < P; m++) {
                            la_gather(src, ok, H, m, 3 * C, true, k);
                            la_gather(src, ov, H, m, 3 * C, false, v);
                            double sc = 0;
                            for (int64_t e = 0; e < H; e++) {
                                sc += k[e] * q[e];
                            }
                            for (int64_t d = 0; d < H; d++) {
                                o[d] += v[d] * sc;
                            }
                            o[H] += sc;
                        }
                    }
                    for (int64_t d = 0; d < H; d++) {
                        dst[p * C + d] = (float) (o[d] / (o[H] + (double) 1e-15f));
                    }
                }
            }
        }
        free(at);
    }
}
