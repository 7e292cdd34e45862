// Internal to the CPU backend: the activation layout and the ops written by hand (those oneDNN
// lacks or that are too small to be worth a primitive). Activations are NHWC, dense: element
// (n, c, y, x) of a [N, C, H, W] tensor is at ((n * H + y) * W + x) * C + c, a pixel's channels
// side by side, no padding. It is the layout oneDNN 3 itself picks for every convolution when
// asked (format_tag::any) at every ISA and precision here: its brgemm kernels (AVX2, AVX-512,
// AVX512-BF16, and AMX's, which take nothing else) run on it, with true channel counts (3 output
// channels cost 3, not a block of 16) and oneDNN's groups on any channel count.

#pragma once

#include "vae-backend.h"

#include <oneapi/dnnl/dnnl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// floats a [N, C, H, W] tensor takes
static inline size_t vae_cpu_nelements(const int64_t ne[4]) {
    return (size_t) ne[0] * (size_t) ne[1] * (size_t) ne[2] * (size_t) ne[3];
}

// what a graph may take when the caller gives no limit: 7/8 of the smaller of MemAvailable
// (/proc/meminfo) and the room (limit - usage) of this process's memory cgroup and its parents,
// v2 or v1; files read under `root` ("" for this system; tests give a fake tree)
size_t vae_cpu_available_memory(const char * root);

// bf16, rounded to nearest even (a NaN stays a NaN, quiet): how a tensor between convolutions is
// stored at precision bf16 (see vae-backend-cpu.c), in the same layout
static inline uint16_t vae_cpu_bf16(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t) ((u >> 16) | 0x40u)
                                            : (uint16_t) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float vae_cpu_from_bf16(uint16_t h) {
    const uint32_t u = (uint32_t) h << 16;
    float          v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

// element i of x, f32 or bf16
static inline float vae_cpu_load(const void * x, bool bf16, int64_t i) {
    return bf16 ? vae_cpu_from_bf16(((const uint16_t *) x)[i]) : ((const float *) x)[i];
}

// the n values of row to y + at, f32 or bf16
static inline void vae_cpu_store(void * y, bool bf16, int64_t at, const float * row, int64_t n) {
    if (bf16) {
        for (int64_t l = 0; l < n; l++) {
            ((uint16_t *) y)[at + l] = vae_cpu_bf16(row[l]);
        }
    } else {
        memcpy((float *) y + at, row, (size_t) n * sizeof(float));
    }
}

// plain [N, C, H, W] (NCHW) <-> NHWC
void vae_cpu_to_nhwc(const float * src, float * dst, const int64_t ne[4]);
void vae_cpu_from_nhwc(const float * src, float * dst, const int64_t ne[4]);

// x = act(x) over n floats (SiLU's exp a polynomial, relative error below 2.5e-7), in place
void vae_cpu_act(float * x, int64_t n, enum vae_act act);

// y = act(y + bias[c]) over every element, y f32 or (bf16) bf16; bias [C] or NULL
void vae_cpu_bias_act(void * y, const int64_t ne[4], const float * bias, enum vae_act act, bool bf16);

// the 3x3 convolution (stride 1, zero padding 1, one group) by Winograd's F(2x2, 3x3)
// (vae-cpu-winograd.c) of Cin -> Cout channels on frames `width` pixels wide: per run of tiles its
// 16 matrix products are one oneDNN batched matmul of `type`, f32 or bf16 (f32 results)
struct vae_cpu_winograd {
    dnnl_engine_t    engine;
    dnnl_data_type_t type;
    int64_t          cin, cout;
    dnnl_primitive_t mm[2];   // a whole run's products; the shorter last run's of a row (NULL: none)
    int64_t          rows[2]; // tiles of each
    size_t           scratch; // bytes of scratchpad a thread gives either
};

dnnl_status_t vae_cpu_winograd_init(struct vae_cpu_winograd * wg, dnnl_engine_t engine, dnnl_data_type_t type,
                                    int64_t cin, int64_t cout, int64_t width);
void          vae_cpu_winograd_release(struct vae_cpu_winograd * wg);
// the layout the matmul takes the transformed weights in (a [16, Cin, Cout] of wg's type)
const_dnnl_memory_desc_t vae_cpu_winograd_weights_md(const struct vae_cpu_winograd * wg);
// u [16, Cin, Cout] f32: u[e][c][k] = (G g G^T)[e] of the kernel g of w [Cout, Cin, 3, 3] at (k, c)
void vae_cpu_winograd_weights(const float * w, float * u, int64_t cin, int64_t cout);
// y [N, Cout, H, W] (bf16 where y_bf16) = act(conv(x) + bias (+ y when add)) from x [N, Cin, H, W]
// (bf16 where wg's type is); u: the transformed weights in vae_cpu_winograd_weights_md's layout;
// bias [Cout] or NULL. oneDNN's status: not dnnl_success where a thread could not set it up
dnnl_status_t vae_cpu_winograd_conv(const struct vae_cpu_winograd * wg, const void * x, void * y, bool y_bf16,
                                    const int64_t ne_x[4], const void * u, const float * bias, bool add,
                                    enum vae_act act);

// y = tanh(x / s) * s over every element (in place allowed)
void vae_cpu_tanh_clamp(const float * x, float * y, size_t n, float s);

// nearest 2x: x [N, C, H, W] -> y [N, C, 2H, 2W]
void vae_cpu_upsample2x(const float * x, float * y, const int64_t ne_x[4]);

// x [N, C, H, W] -> y [N, C, H + 2, W + 2] padded by one pixel: the nearest edge pixel
// (F.pad(mode="replicate")), or with reflect the mirror one (F.pad(mode="reflect"): H, W >= 2)
void vae_cpu_replicate_pad(const float * x, float * y, const int64_t ne_x[4], bool reflect);

// y = act(GN(x) * gamma + beta), in place allowed (x and y of one type); statistics of x
// in double (of each frame, or of all frames together when all_frames), or when stats is given,
// those: the group means, then 1 / sqrt(var + eps) (2 * groups floats; eps unused). x_bf16, y_bf16:
// x, y stored in bf16, else f32
void vae_cpu_group_norm(const void * x, void * y, const int64_t ne[4], int groups, float eps, const float * gamma,
                        const float * beta, enum vae_act act, const float * stats, bool all_frames, bool x_bf16,
                        bool y_bf16);

// y = act(x * s * gamma[c] + beta[c] + r), |x| = the L2 norm over the C channels at each pixel;
// mode 0: s = sqrt(C) / max(|x|, 1e-12) (Wan's RMS_norm), 1: s = 1 / sqrt(|x|^2 / C + eps)
// (diffusers' RMSNorm), 2: x - mean(x) in place of x and s = 1 / sqrt(var + eps) (LayerNorm); beta
// and the residual r (f32) may be NULL; in place allowed (y = x of one type, or
// y = r, f32); x_bf16, y_bf16: x, y stored in bf16, else f32
void vae_cpu_rms_norm(const void * x, void * y, const int64_t ne[4], const float * gamma, const float * beta,
                      const float * r, int mode, float eps, enum vae_act act, bool x_bf16, bool y_bf16);

// attention within each frame over its H*W positions, in heads of hd channels: qkv [N, 3C, H, W] ->
// y [N, C, H, W]; q, k, v are channels [0, C), [C, 2C), [2C, 3C), head j their channels
// [j hd, (j+1) hd); y = softmax(q k^T / sqrt(hd)) v, exact, without an (HW)^2 buffer. scratch holds
// vae_cpu_attention_scratch(ne_qkv, hd) floats. cancel: NULL, or a flag read (acquire) before each
// block of query rows: set, the op stops there and returns false, y part-written; true when it ran
// to the end.
size_t vae_cpu_attention_scratch(const int64_t ne_qkv[4], int64_t hd);
bool   vae_cpu_attention(const float * qkv, float * y, const int64_t ne_qkv[4], int64_t hd, float * scratch,
                         const int * cancel);

// the same across the frames of a stream, block-causal (VAE_OP_CAUSAL_ATTENTION): k and v are the
// cache, token-major ([positions, C] each), holding `held` frames of HW positions and room for the N
// frames of qkv, which are appended first; a query of frame t of qkv then attends to the first
// (held + t + 1) HW positions. scores: VAE_CPU_CAUSAL_ROWS x (held + N) HW floats; scratch:
// vae_cpu_causal_attention_scratch(ne_qkv) floats. cancel as above.
#define VAE_CPU_CAUSAL_ROWS 64
size_t vae_cpu_causal_attention_scratch(const int64_t ne_qkv[4]);
bool   vae_cpu_causal_attention(const float * qkv, float * y, const int64_t ne_qkv[4], float * scratch, float * k,
                                float * v, int64_t held, float * scores, const int * cancel);

// EfficientViT's ReLU linear attention per frame, groups of head dim hd (VAE_OP_LINEAR_ATTENTION):
// qkv [N, G 3 hd, H, W] -> y [N, G hd, H, W]; sums in double, in upstream's linear
// form when H W > hd, else its quadratic one
void vae_cpu_linear_attention(const float * qkv, float * y, const int64_t ne_qkv[4], int hd);

// [N, 2C, H, W] -> [N, C, H, W]: y[c] = x[c] act(x[C + c])
void vae_cpu_glu(const float * x, float * y, const int64_t ne_x[4], enum vae_act act);

// [N, C, H, W] -> [N*s - drop, C/s, H, W]: frame s*t+j - drop of y = channels [j*C/s, (j+1)*C/s) of frame
// t of x (the first drop not written)
void vae_cpu_frame_split(const float * x, float * y, const int64_t ne_x[4], int s, int drop);

// frames [N, C, H, W] -> tokens [1, C, 1, N H W + n_extra + zeros]: the pixels, then extra's rows
// (plain [n_extra, C]), then zero tokens; and back, the first N H W tokens of x [1, C, 1, T]
// as y [N, C, H, W] (in NHWC a copy of them)
void vae_cpu_tokens(const float * x, float * y, const int64_t ne_x[4], const float * extra, int64_t n_extra,
                    int64_t zeros);
void vae_cpu_untokens(const float * x, float * y, const int64_t ne_y[4]);

// VAE_OP_ROPE on qkv [1, 3D, 1, T] (ne): each head's q and k RMS-normalised and rotated for the
// grid (t, h, w) of tokens; in place allowed
void vae_cpu_rope(const float * x, float * y, const int64_t ne[4], int hd, int rd, const int32_t grid[3], float theta,
                  float eps);

// the first d frames of a cross-fade (VAE_OP_CROSSFADE): y[f] = held[f] (1 - f/d) + x[f] (f/d), frames
// of `frame` floats
void vae_cpu_crossfade(const float * held, const float * x, float * y, size_t frame, int d);

// [N, 4C, H, W] -> [N, C, 2H, 2W]: y[c, 2Y+i, 2X+j] = x[4c+2i+j, Y, X]
void vae_cpu_pixel_shuffle(const float * x, float * y, const int64_t ne_x[4]);

// depthwise k x k conv, zero pad k/2: y [N, C m, H, W] from x [N, C, H, W], output channel o reading
// input channel o / m through its filter w + o k k (plain [C m, k, k]) plus bias[o]
void vae_cpu_depthwise_conv2d(const float * x, float * y, const int64_t ne_x[4], int64_t m, int k, const float * w,
                              const float * bias);
