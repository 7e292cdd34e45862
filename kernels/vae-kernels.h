// The kernels as the GPU backend calls them: plain C launchers, one family per kernel file.
// Activations are NHWC with the channels padded to a multiple of VAE_GPU_CALIGN; every kernel
// writes every lane of its output and writes zeros in the padding lanes (the convolutions read
// them, against zero weights, so they must hold finite values). Storage is f32 at fp32 and tf32,
// f16 at fp16, bf16 at bf16; accumulation, statistics and softmax are f32 at every precision.
// A launcher only queues work on the stream it is given: it never allocates, copies or waits (the
// backend captures whole graphs of launches and replays them), and returns the launch's error.

#pragma once

#include "vae-backend.h"
#include "vae-gpu.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VAE_GPU_CALIGN 16

static inline int vae_gpu_cpad(int c) {
    return (c + VAE_GPU_CALIGN - 1) / VAE_GPU_CALIGN * VAE_GPU_CALIGN;
}

// bytes of one stored activation element at precision p (AUTO is never passed to kernels)
static inline size_t vae_gpu_elem_bytes(enum vae_precision p) {
    return p == VAE_PRECISION_FP16 || p == VAE_PRECISION_BF16 ? 2 : 4;
}

// an activation [n, c, h, w]: element (i, ch, y, x) at data[((i * h + y) * w + x) * cp + ch], cp = vae_gpu_cpad(c)
struct vae_gpu_act {
    void * data;
    int    n, c, cp, h, w;
};

// ---- layout (vae-gpu-layout.cu) ----------------------------------------------------------------
// src: device f32 [n, c, h, w] (plain NCHW) -> y
cudaError_t vae_gpu_from_nchw_f32(const float * src, struct vae_gpu_act y, enum vae_precision p, cudaStream_t s);
// frames [first, first + count) of x -> dst: device f32 [count, c, h, w]
cudaError_t vae_gpu_to_nchw_f32(struct vae_gpu_act x, int first, int count, float * dst, enum vae_precision p,
                               cudaStream_t s);

// ---- elementwise and data movement (one file each) ----------------------------------------------
// y = tanh(x / scale) * scale; y may be x                                   (vae-gpu-tanh-clamp.cu)
cudaError_t vae_gpu_tanh_clamp(struct vae_gpu_act x, struct vae_gpu_act y, float scale, enum vae_precision p,
                              cudaStream_t s);
// y[c, Y, X] = x[c, Y/2, X/2], y is [n, c, 2h, 2w]                          (vae-gpu-upsample2x.cu)
cudaError_t vae_gpu_upsample2x(struct vae_gpu_act x, struct vae_gpu_act y, enum vae_precision p, cudaStream_t s);
// [N, C, H, W] -> [N*k - drop, C/k, H, W]: frame k*t+j - drop of y = channels [j*C/k, (j+1)*C/k) of
// frame t of x (the first drop are not written)                              (vae-gpu-frame-split.cu)
cudaError_t vae_gpu_frame_split(struct vae_gpu_act x, struct vae_gpu_act y, int k, int drop, enum vae_precision p,
                               cudaStream_t s);
// [N, 4C, H, W] -> [N, C, 2H, 2W]: y[c, 2Y+i, 2X+j] = x[4c+2i+j, Y, X]    (vae-gpu-pixel-shuffle.cu)
cudaError_t vae_gpu_pixel_shuffle(struct vae_gpu_act x, struct vae_gpu_act y, enum vae_precision p, cudaStream_t s);

// PyTorch's Conv2d(x.c, y.c, k, padding k/2, groups): output channel o reads the cg = x.c / groups input
// channels of its group, i = (o / (y.c / groups)) cg + t for t < cg:
// y[o] = act(bias[o] + residual[o] + sum_t conv2d(x[i], w[o, t])); w: device f32 [y.c, cg, k, k] (PyTorch's
// layout), bias: device f32 [y.c] or NULL, residual like y or NULL (may be y.data); y apart from x.
// groups = x.c is the depthwise conv (VAE_OP_DEPTHWISE_CONV2D)                 (vae-gpu-group-conv.cu)
cudaError_t vae_gpu_group_conv(struct vae_gpu_act x, struct vae_gpu_act y, const void * residual, const float * w,
                               const float * bias, int groups, int k, enum vae_act act, enum vae_precision p,
                               cudaStream_t s);
// [n, 2C, h, w] -> [n, C, h, w]: y[c] = x[c] act(x[C + c])                 (vae-gpu-glu.cu)
cudaError_t vae_gpu_glu(struct vae_gpu_act x, struct vae_gpu_act y, enum vae_act act, enum vae_precision p,
                        cudaStream_t s);
// the centred (kt, 1, 1) conv over x's frames, zero frames outside (VAE_OP_TIME_CONV): w device f32
// [y.c, x.c, kt] (PyTorch's layout), bias f32 [y.c] or NULL, residual like y or NULL; y apart
// from x                                                                       (vae-gpu-time-conv.cu)
cudaError_t vae_gpu_time_conv(struct vae_gpu_act x, struct vae_gpu_act y, const void * residual, const float * w,
                              const float * bias, int kt, enum vae_act act, enum vae_precision p, cudaStream_t s);
// frames to tokens and back (VAE_OP_TOKENS, VAE_OP_UNTOKENS), x.c = y.c: y's pixels (rows) are x's
// first ones, then the e rows of extra (device f32 [e, c]; NULL when e = 0), then zeros; y apart
// from x                                                                       (vae-gpu-tokens.cu)
cudaError_t vae_gpu_tokens(struct vae_gpu_act x, struct vae_gpu_act y, const float * extra, int e,
                           enum vae_precision p, cudaStream_t s);
// VAE_OP_ROPE: y = qkv with each hd-channel head of q and k RMS-normalised (eps) and rotated on its
// first rd channels by the angles of its pixel's point on the nt x nh x nw grid (pixels past it: at
// 0), base theta; v copied; y apart from x                                     (vae-gpu-rope.cu)
cudaError_t vae_gpu_rope(struct vae_gpu_act x, struct vae_gpu_act y, int hd, int rd, int nt, int nh, int nw, float eps,
                         float theta, enum vae_precision p, cudaStream_t s);
// VAE_OP_CROSSFADE's frames: y frame f = x frame pre + f for f < y.n - d, the first d of them
// blended with the d frames of held (like x's, or NULL: none) as held (1 - f/d) + x (f/d); then x's
// last d frames; y apart from x and held                                       (vae-gpu-crossfade.cu)
cudaError_t vae_gpu_crossfade(struct vae_gpu_act x, struct vae_gpu_act y, const void * held, int pre, int d,
                              enum vae_precision p, cudaStream_t s);

// ---- norms -----------------------------------------------------------------------------------
// GroupNorm (vae-gpu-group-norm.cu): statistics of each (frame, group) over (C/groups) x H x W,
// biased variance, f32 with a deterministic reduction (no float atomics), written to
// stats[i * 2 * groups ...]: the groups' means, then 1 / sqrt(var + eps). scratch holds
// vae_gpu_group_norm_scratch() bytes (it reads x's shape only: x.data may still be NULL).
size_t     vae_gpu_group_norm_scratch(struct vae_gpu_act x, int groups);
cudaError_t vae_gpu_group_norm_stats(struct vae_gpu_act x, int groups, float eps, float * stats, void * scratch,
                                    enum vae_precision p, cudaStream_t s);
// the statistics as above from nb partials (count, mean, M2: three arrays of nq x nb floats) of each
// (frame, group) q = i * groups + g, at part[q * nb ..]: those a conv's epilogue gives (gn_groups)
cudaError_t vae_gpu_group_norm_combine(const float * part, size_t nq, size_t nb, int groups, float eps, float * stats,
                                      cudaStream_t s);
// y = act((x - mean) * rstd * gamma[c] + beta[c]); stats as above, per frame, or one set for every
// frame when stats_per_frame is false (statistics of a whole image given to its tiles); y may be x.
// gamma, beta: device f32 [c]
cudaError_t vae_gpu_group_norm_apply(struct vae_gpu_act x, struct vae_gpu_act y, int groups, const float * stats,
                                    bool stats_per_frame, const float * gamma, const float * beta, enum vae_act act,
                                    enum vae_precision p, cudaStream_t s);
// y = act(x * s * gamma[c] + beta[c] + residual), |x| the L2 norm over the channels of each pixel,
// f32, by VAE_OP_RMS_NORM's form: 0, s = sqrt(C) / max(|x|, 1e-12) (Wan); 1, 1 / sqrt(|x|^2 / C + eps)
// (diffusers' RMSNorm); 2, the same of x - mean(x) in place of x (PyTorch's LayerNorm); gamma,
// beta: device f32 [c] or NULL (ones, zeros); residual like y or NULL; y may be x or the
// residual                                                                   (vae-gpu-rms-norm.cu)
cudaError_t vae_gpu_rms_norm(struct vae_gpu_act x, struct vae_gpu_act y, const void * residual, const float * gamma,
                            const float * beta, int form, float eps, enum vae_act act, enum vae_precision p,
                            cudaStream_t s);

// ---- attention (vae-gpu-attention.cu) ---------------------------------------------------------
// per frame, in heads of hd channels (0: one head of C) over the h*w positions: qkv [n, 3C, h, w] ->
// y [n, C, h, w], y = softmax(q k^T / sqrt(hd)) v with q, k, v = channels [0, C), [C, 2C), [2C, 3C),
// head j their channels [j hd, (j+1) hd); flash-style (online softmax in f32, no (hw)^2 buffer); any
// hd (tensor cores for multiples of 16 up to 512)
size_t     vae_gpu_attention_scratch(struct vae_gpu_act qkv, enum vae_precision p);
cudaError_t vae_gpu_attention(struct vae_gpu_act qkv, struct vae_gpu_act y, int hd, void * scratch,
                             enum vae_precision p, cudaStream_t s);
// one head across the frames of a stream, block-causal (VAE_OP_CAUSAL_ATTENTION): cache holds the
// qkv rows (h w rows of qkv.cp values, the compute's precision) of the `held` frames before and room
// for qkv's n after them, where they are copied first; a query of frame t then attends to the
// positions of the cache's first held + t + 1 frames
cudaError_t vae_gpu_causal_attention(struct vae_gpu_act qkv, struct vae_gpu_act y, void * cache, int held,
                                     enum vae_precision p, cudaStream_t s);

// ---- ReLU linear attention (vae-gpu-linear-attention.cu) --------------------------------------
// VAE_OP_LINEAR_ATTENTION: per frame, groups of head dim hd: qkv [n, G 3 hd, h, w] -> y [n, G hd, h, w],
// q, k ReLU'd, o = (sum_m v_m (k_m.q)) / (sum_m k_m.q + 1e-15), f32; the linear form through the
// [hd+1, hd] matrices A = [v; 1] k^T of every frame and group (f32, in the scratch) when h w > hd,
// the quadratic one otherwise. The scratch holds vae_gpu_linear_attention_scratch() bytes.
size_t      vae_gpu_linear_attention_scratch(struct vae_gpu_act qkv, int hd);
cudaError_t vae_gpu_linear_attention(struct vae_gpu_act qkv, struct vae_gpu_act y, int hd, void * scratch,
                                     enum vae_precision p, cudaStream_t s);

// ---- convolution (vae-gpu-conv.cu) ------------------------------------------------------------
// Implicit GEMM on tensor cores (fp32: f32 FMA): M = output pixels, N = output channels,
// K = taps x input channels, no im2col buffer; epilogue y = act(acc + bias + residual).
// up: nearest-2x then 3x3, computed as four 2x2 sub-pixel convolutions (one per output phase) on
// the input grid; the upsampled tensor never exists. kt > 1: a causal conv over frames,
// y[t] = sum_j conv(xh[t + j], w[:, :, j]), xh = the kt - 1 frames of hist, then x: frames before
// x[0] are read from hist in place ([kt - 1, h, w, cin_p], same storage), never concatenated.
struct vae_gpu_conv_args {
    struct vae_gpu_act x;          // input (its h, w: the input grid)
    const void *       hist;       // kt > 1: the kt - 1 frames before x[0]; NULL otherwise
    const void *       weights;    // device, packed by vae_gpu_conv_pack for this (k, kt, up, precision)
    const float *      bias;       // device f32 [y.cp] (zero padded) or NULL
    const void *       residual;   // like y, or NULL; may be y.data (in place)
    struct vae_gpu_act y;          // output: x's frames, cout channels, 2h x 2w when up
    int                k;          // spatial kernel size, odd (3 when up)
    int                kt;         // time taps, 1 for a 2-D conv
    bool               up;
    bool               replicate;  // outside the frame the nearest edge pixel (F.pad(mode="replicate")), not
                                   //   zeros; not with up
    bool               reflect;    // outside the frame the mirror pixel (F.pad(mode="reflect")); k = 3, not up
    enum vae_act       act;
    // norm: y = norm_act(v s gamma + beta), the RMS norm of each pixel's v = act(acc + bias +
    // residual) over its channels (VAE_OP_RMS_NORM's forms 0 and 1, eps), in the epilogue, on a tile
    // that holds all of a pixel's channels (vae_gpu_conv_variant_work: 0 for the others); the norm's
    // node then writes nothing of its own. norm_y NULL: v is never stored; else v is y and the norm
    // goes to norm_y (like y, apart from it and from every input)
    bool               norm;
    void *             norm_y;
    int                norm_form;
    float              norm_eps;
    const float *      norm_gamma, *norm_beta;   // device f32 [y.c] or NULL (ones, zeros)
    enum vae_act       norm_act;
    // gn_groups > 0: the statistics of a GroupNorm of y too (gn_groups groups, eps gn_eps; per frame,
    // or one set over all frames unless gn_per_frame), as vae_gpu_group_norm_stats gives them, into
    // gn_stats: every tile's epilogue writes its partials to gn_part (vae_gpu_conv_gn_scratch bytes,
    // apart from every other buffer) from what it stored, then vae_gpu_group_norm_combine runs. Per
    // frame over several frames, only on tiles whose rows never span two frames; not with norm, nor
    // on the narrow conv (vae_gpu_conv_variant_work 0)
    int                gn_groups;
    bool               gn_per_frame;
    float              gn_eps;
    float *            gn_stats, *gn_part;
    int                variant;    // tile configuration, 0 .. vae_gpu_conv_variants() - 1
    int                cc, warp;   // the device's (vae_gpu_device_query): a launch asks the runtime nothing
};
// elements (of the storage type) the packed weights take
size_t vae_gpu_conv_packed_count(int cout, int cin, int k, int kt, bool up);
// w: host f32 in PyTorch layout [cout, cin, k, k] or [cout, cin, kt, k, k]; dst: host, of
// vae_gpu_conv_packed_count() elements of precision p's storage type (folded for up)
void vae_gpu_conv_pack(const float * w, int cout, int cin, int k, int kt, bool up, enum vae_precision p, void * dst);
// tile configurations usable at precision p on a device of compute capability cc (major * 10 +
// minor): the backend times each that can run a layer (vae_gpu_conv_variant_work) on its real
// shape at prepare and keeps the fastest; 0 when the device lacks the precision's tensor cores
// (tf32/bf16 need cc >= 80). The last is the narrow conv: at most 16 output channels, exactly
// those computed, in f32 on CUDA cores (a decoder's head)
int        vae_gpu_conv_variants(enum vae_precision p, int cc);
const char * vae_gpu_conv_variant_name(enum vae_precision p, int variant);
// the outputs variant v computes for conv a, the padding of its last tiles included (blocks x the
// tile's pixels x its channels; the narrow conv's: exactly a's channels), or 0 when v cannot run a
// (the narrow conv: more than 16 output channels, up, k > 5, a norm, GroupNorm statistics; a tile
// narrower than a's channels with a norm; every tile with a norm on AMD; with GroupNorm statistics
// per frame over several frames, a tile whose rows would span two)
double       vae_gpu_conv_variant_work(const struct vae_gpu_conv_args * a, enum vae_precision p, int variant);
// its output tile: bm pixels (of one output phase when up) by bn channels, in `warps` warps; bn 0:
// the narrow conv (bm pixels, a patch of 16 x 32, by exactly the conv's channels)
// the bytes of gn_part for conv a (its shapes, up, gn_groups and gn_per_frame: no pointer is looked
// at) on every variant that can run it, 0 when none can
size_t       vae_gpu_conv_gn_scratch(const struct vae_gpu_conv_args * a, enum vae_precision p);
void         vae_gpu_conv_variant_tile(enum vae_precision p, int variant, int * bm, int * bn, int * warps);
cudaError_t vae_gpu_conv(const struct vae_gpu_conv_args * a, enum vae_precision p, cudaStream_t s);
// in the current context, what precision p's tiles need there before their first launch (the
// opt-in to more than 48 KB of shared memory, an attribute of that context): once per context
// that launches them, before any vae_gpu_conv there
cudaError_t vae_gpu_conv_setup(enum vae_precision p, int cc, int warp);

// ---- frame packing (vae-gpu-frame-pack.cu) ----------------------------------------------------
// frame i of the 3-channel x -> 8-bit pixels in dst's planes, which are device pointers: the same
// arithmetic as vae_frame_pack (round to nearest, clamp, NaN -> 0, the same YUV formulas), so a
// frame's bytes do not depend on where it was packed
cudaError_t vae_gpu_frame_pack(struct vae_gpu_act x, int i, const struct vae_frame * dst, enum vae_precision p,
                              cudaStream_t s);

#ifdef __cplusplus
}
#endif
