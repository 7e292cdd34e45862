// The seam between the model (which knows decoders) and the devices (which know memory and
// kernels). A model builds a graph of ops once per input shape; a backend prepares it (weights
// converted to its layout, one memory plan, primitives chosen) and runs it as often as needed.
// The op set is the contract: fused ops are first-class nodes, and every backend must give what
// the CPU backend gives, which is the numerical reference (fp32).
//
// Tensors are logically [N, C, H, W] (frames, channels, rows, columns); each backend chooses the
// physical layout. Weights arrive as f32 host arrays in PyTorch layout, owned by the model.

#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vae_op {
    VAE_OP_INPUT,            // a graph input, given at compute time as host f32 [N, C, H, W]; i[0] = its
                             //   number (graphs may have several, see vae_backend_graph_compute_inputs)
    VAE_OP_WEIGHT,           // a parameter: host f32 in PyTorch layout (data), any rank; data is read by
                             //   graph_prepare only (the model may free it after), and data with name
                             //   identifies the tensor across graphs
    VAE_OP_TANH_CLAMP,       // y = tanh(x / s) * s                              f[0] = s
    VAE_OP_CONV2D,           // y = act(conv(x, w) + b + r), k x k, stride 1, zero pad k/2
                             //   src: x, w [Cout, Cin / G, k, k], b [Cout] or NULL, r or NULL; i[0] = G, the
                             //   groups (PyTorch's Conv2d(groups=G); 0 and 1: dense): output channel o reads
                             //   input channels [(o / (Cout/G)) Cin/G, (o / (Cout/G) + 1) Cin/G)
    VAE_OP_UPSAMPLE_CONV2D,  // the same conv applied to nearest2x(x); 3x3 only (fused)
    VAE_OP_UPSAMPLE2X,       // y[c, Y, X] = x[c, Y/2, X/2] (the unfused form of the above)
    VAE_OP_GROUP_NORM,       // y = act(GN(x) * g + b), src: x, g [C], b [C]    i[0] = groups,
                             //   f[0] = eps; biased variance over (C/groups) x H x W; src[3]: NULL, or
                             //   an input [1, 2 * groups, 1, 1] giving the statistics instead (means,
                             //   then 1 / sqrt(var + eps)), for tiles of a frame normalized as a whole;
                             //   i[1] = 1: one set of statistics over all N frames, (C/groups) x N x H x W
                             //   (PyTorch's GroupNorm on [1, C, N, H, W]: SVD's temporal blocks)
    VAE_OP_CAUSAL_CONV3D,    // y[t] = act(b + r[t] + sum_k conv2d(xh[t + k], w[:, :, k])), k < kt, where
                             //   xh = the last kt-1 frames of x from earlier computes (the state)
                             //   followed by x; src: x, w [Cout, Cin, kt, k, k], b [Cout] or NULL, r or
                             //   NULL; i[0] = state slot; i[1] = flags (enum vae_causal_edges): what the
                             //   state holds after a reset, zeros or kt-1 copies of the first frame the
                             //   op then sees (SeedVR2, HunyuanVideo 1.5), what the conv reads outside
                             //   the frame, zeros, the nearest edge pixel (HunyuanVideo 1.5's
                             //   F.pad(mode="replicate")) or the mirror one (LTX-2.0's "reflect"), and
                             //   whether it is a centred conv. A centred conv (kt = 3, time padded with a
                             //   copy of the clip's first frame and one of its last: LTX-2's) streams as
                             //   this causal conv, its output a frame late: the compute that starts the
                             //   stream (VAE_CENTRED_START) has xh = a copy of x's first frame, then x,
                             //   and gives N - 1 frames; once the state knows the stream's length
                             //   (vae_backend_state_set_end), xh reads its last frame in place of any
                             //   after it (the clip's end padding; later computes flush the stream).
                             //   i[2] = a: the op's stream has 1 + a (T - 1) frames for T latent frames
    VAE_OP_RMS_NORM,         // y = act(x * s * g + b + r), per pixel over its C channels, |x| = their L2 norm;
                             //   i[0] = 0: s = sqrt(C) / max(|x|, 1e-12) (Wan's F.normalize);
                             //   i[0] = 1: s = 1 / sqrt(|x|^2 / C + eps), f[0] = eps (diffusers' RMSNorm: DC-AE)
                             //   i[0] = 2: PyTorch's LayerNorm: x - mean(x) in place of x, s = 1 / sqrt(var + eps)
                             //   with var the biased variance over the C channels, f[0] = eps (MiniMax-H3's norm_out)
                             //   src: x, g [C] or NULL (ones: LTX-2's), b [C] or NULL, r (like x: a
                             //   residual) or NULL
    VAE_OP_ATTENTION,        // per frame, over the H*W positions: src qkv [N, 3C, H, W] -> [N, C, H, W],
                             //   q, k, v = thirds of qkv, in heads of hd = i[0] channels (0: one head of C):
                             //   head j reads channels [j hd, (j+1) hd) of each third and writes those of y,
                             //   o = softmax(q k^T / sqrt(hd)) v
    VAE_OP_CAUSAL_ATTENTION, // block-causal attention over a stream's frames with a key/value cache: src qkv
                             //   [N, 3C, H, W] -> [N, C, H, W], one head, o = softmax(q k^T / sqrt(C)) v where
                             //   a query of frame t sees every position of the frames the state holds (all
                             //   those of earlier computes since its reset) and of frames 0..t of this one;
                             //   i[0] = state slot, which grows by the frame's keys and values each frame
                             //   (2 C H W values) up to the state's limit (vae_backend_state_set_limit)
    VAE_OP_LINEAR_ATTENTION, // EfficientViT's ReLU linear attention (diffusers' SanaMultiscaleAttnProcessor2_0),
                             //   per frame: src qkv [N, G 3 hd, H, W] -> [N, G hd, H, W], i[0] = hd; group g
                             //   reads channels [3 hd g, 3 hd (g+1)): q, k, v (hd each), q = ReLU(q), k = ReLU(k);
                             //   o[:, n] = (sum_m v_m (k_m.q_n)) / (sum_m k_m.q_n + 1e-15) over the P = H W
                             //   positions, written to channels [hd g, hd (g+1)): for P > hd in upstream's linear
                             //   form (A = [v; 1] k^T, [hd+1, hd]; o = (A q)[:hd] / ((A q)[hd] + 1e-15)), else
                             //   in its quadratic one (S = k^T q normalised over the keys, o = v S)
    VAE_OP_GLU,              // [N, 2C, H, W] -> [N, C, H, W], y[c] = x[c] act(x[C + c]) (torch.chunk(2, 1):
                             //   the first half is the value, the second the gate; SiLU: GLUMBConv)
    VAE_OP_FRAME_SPLIT,      // [N, C, H, W] -> [N*s - d, C/s, H, W], frame s*t+j - d = channels [j*C/s,
                             //   (j+1)*C/s) of frame t, the first d = i[1] dropped (an LTX-2 upsampler
                             //   starting a stream)                                  i[0] = s
    VAE_OP_PIXEL_SHUFFLE,    // [N, 4C, H, W] -> [N, C, 2H, 2W], y[c, 2Y+i, 2X+j] = x[4c+2i+j, Y, X]
    VAE_OP_DEPTHWISE_CONV2D, // PyTorch's Conv2d(C, C m, k, padding k/2, groups C): [N, C, H, W] -> [N, C m, H, W],
                             //   y[o] = b[o] + conv2d(x[o / m], w[o, 0]); src: x, w [C m, 1, k, k], b [C m] or NULL
    VAE_OP_DELAY,            // x delayed by d = i[1] frames through state slot i[0]: y = [the d frames the state
                             //   holds, x] less its last d, which the state keeps; the residual of a centred
                             //   conv's stream (see VAE_OP_CAUSAL_CONV3D). i[2] = VAE_CENTRED_START: the stream
                             //   starts, nothing is held: y = x less its last d (N - d frames)
    VAE_OP_TIME_CONV,        // PyTorch's Conv3d(kernel (kt, 1, 1), padding (kt/2, 0, 0)) over the N frames, kt
                             //   odd: y[t] = act(b + r[t] + sum_k w[:, :, k] x[t + k - kt/2]), zero frames
                             //   outside [0, N); src: x, w [Cout, Cin, kt, 1, 1], b [Cout] or NULL, r or NULL
                             //   (the cpu backend takes kt <= 3)
    VAE_OP_TOKENS,           // frames to one sequence of tokens (a ViT's): x [N, C, H, W] -> [1, C, 1, N H W + E + z],
                             //   token (n H + y) W + x = pixel (y, x) of frame n, then the E rows of src[1] (a
                             //   weight [E, C], or NULL: E = 0), then z = i[0] tokens of zeros
    VAE_OP_UNTOKENS,         // the inverse: x [1, C, 1, L] -> [N, C, H, W] = i[0..2], its first N H W tokens
    VAE_OP_ROPE,             // a ViT's q and k made ready for VAE_OP_ATTENTION (MiniMax-H3's): src qkv [1, 3D, 1, L]
                             //   (q, k, v thirds, heads of hd = i[0] channels) -> the same where each head's q and
                             //   k are RMS-normalised over its hd channels (x / sqrt(mean(x^2) + eps), f[0] = eps,
                             //   no weight) and then rotated: for j < rd/2 (rd = i[1], a multiple of 6),
                             //   (u_j, u_{j+rd/2}) <- (u_j cos a_j - u_{j+rd/2} sin a_j, u_{j+rd/2} cos a_j + u_j sin a_j),
                             //   channels from rd on as normalised; v as it is. The angles of token p: where
                             //   p < T H W (T, H, W = i[2..4]) it is grid point (t, y, x) = (p / (H W), p / W % H,
                             //   p % W) at positions P = (2 (t + 0.5) / T - 1, 2 (y + 0.5) / H - 1, 2 (x + 0.5) / W
                             //   - 1), else P = 0; a_{b nf + f} = 2 pi P_b / theta^(6 f / rd) for axis b < 3 and
                             //   f < nf = rd / 6, theta = f[1]
    VAE_OP_CROSSFADE,        // the cross-fade between a stream's chunks (MiniMax-H3's decode): x [N, C, H, W] ->
                             //   [K + d, C, H, W] (pre, K, d = i[1..3]): y[f] = x[pre + f] for f < K, except that
                             //   where state slot i[0] holds frames (a compute since its reset wrote them) the
                             //   first d are blended with them, y[f] = held[f] (1 - f/d) + x[pre + f] (f/d) (fp32,
                             //   f/d rounded first); then y[K + j] = x[N - d + j] (j < d), which the slot keeps
    VAE_OP_COUNT,
};

// VAE_OP_CAUSAL_CONV3D's flags (i[1]); VAE_OP_DELAY takes the last one (i[2])
enum vae_causal_edges {
    VAE_CAUSAL_FIRST_FRAME = 1,   // after a reset the history is kt-1 copies of the first frame, not zeros
    VAE_CAUSAL_REPLICATE   = 2,   // outside the frame the conv reads the nearest edge pixel, not zeros
    VAE_CAUSAL_REFLECT     = 4,   // outside the frame the conv reads the mirror pixel (1 in, k = 3 only)
    VAE_CENTRED            = 8,   // a centred conv (see the op): the stream's end pads it
    VAE_CENTRED_START      = 16,  // a centred conv's (or delay's) compute that starts its stream
};

enum vae_act {
    VAE_ACT_NONE,
    VAE_ACT_RELU,
    VAE_ACT_SILU,
};

#define VAE_MAX_SRC  4
#define VAE_MAX_DIMS 5   // activations use 4 ([N, C, H, W]); conv3d weights 5

struct vae_tensor {
    enum vae_op         op;
    int64_t             ne[VAE_MAX_DIMS];  // [N, C, H, W, 1]; weights: their own shape, ne[n_dims..] = 1
    int                 n_dims;
    struct vae_tensor * src[VAE_MAX_SRC];
    enum vae_act        act;
    int32_t             i[5];              // integer parameters, per op (see enum vae_op)
    float               f[2];              // float parameters, per op
    const float *       data;              // VAE_OP_WEIGHT only
    const char *        name;              // weight name or a label, for messages
    int                 index;             // position in graph->nodes (-1 for weights)
};

// nodes in execution order; weights and the input are kept apart
struct vae_graph {
    int                  n_nodes;
    struct vae_tensor ** nodes;
    int                  n_weights;
    struct vae_tensor ** weights;
    struct vae_tensor *  input;            // inputs[0]
    int                  n_inputs;
    struct vae_tensor ** inputs;           // by number (VAE_OP_INPUT's i[0])
    struct vae_tensor *  output;
    bool                 fused;            // false under VAE_DISABLE_FUSION=1
    int                  n_states;         // state slots its causal ops use (see VAE_OP_CAUSAL_CONV3D)
    void *               backend_data;     // set by graph_prepare
    size_t               peak_bytes;       // device memory the prepared graph holds
    size_t               arena_bytes;      // the part of it that is activations (weights may be shared)
    const int *          cancel;           // NULL, or a flag another thread may set (with an atomic store):
                                           //   nonzero stops a compute of this graph between two nodes,
                                           //   which then fails with VAE_BACKEND_INTERRUPTED (see
                                           //   vae_backend_graph_compute); set by whoever builds the graph
    float *              node_ms;          // NULL, or n_nodes floats: each compute that succeeds writes there
                                           //   every node's time in ms (profiling: the GPU backends put
                                           //   events between nodes and launch directly, never a recorded
                                           //   graph; the CPU's waits for each node); set by the caller
};

// the message of a compute stopped by its graph's cancel flag
#define VAE_BACKEND_INTERRUPTED "interrupted"

struct vae_graph *  vae_graph_new(void);
void                vae_graph_free(struct vae_graph * g);
// the next input (numbered from 0 in the order of these calls)
struct vae_tensor * vae_graph_input(struct vae_graph * g, int64_t n, int64_t c, int64_t h, int64_t w);
struct vae_tensor * vae_graph_weight(struct vae_graph * g, const char * name, const float * data,
                                     int n_dims, const int64_t * shape);
struct vae_tensor * vae_graph_tanh_clamp(struct vae_graph * g, struct vae_tensor * x, float s);
struct vae_tensor * vae_graph_conv2d(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                     struct vae_tensor * b, struct vae_tensor * r, enum vae_act act);
// the same in `groups` groups, w [Cout, Cin / groups, k, k] (see VAE_OP_CONV2D)
struct vae_tensor * vae_graph_conv2d_groups(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                            struct vae_tensor * b, struct vae_tensor * r, enum vae_act act, int groups);
// nearest 2x alone (a conv that adds a residual takes it unfused: the fused op has none)
struct vae_tensor * vae_graph_upsample2x(struct vae_graph * g, struct vae_tensor * x);
// nearest 2x then 3x3 conv: one fused node, or two nodes when fusion is disabled
struct vae_tensor * vae_graph_upsample_conv2d(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                              struct vae_tensor * b, enum vae_act act);
struct vae_tensor * vae_graph_group_norm(struct vae_graph * g, struct vae_tensor * x, int groups, float eps,
                                         struct vae_tensor * gamma, struct vae_tensor * beta, enum vae_act act);
// the same with the statistics given by `stats`, an input [1, 2 * groups, 1, 1] (see VAE_OP_GROUP_NORM)
struct vae_tensor * vae_graph_group_norm_stats(struct vae_graph * g, struct vae_tensor * x, int groups, float eps,
                                               struct vae_tensor * gamma, struct vae_tensor * beta, enum vae_act act,
                                               struct vae_tensor * stats);
// the same with one set of statistics over all the frames of x (i[1] = 1, see VAE_OP_GROUP_NORM)
struct vae_tensor * vae_graph_group_norm_frames(struct vae_graph * g, struct vae_tensor * x, int groups, float eps,
                                                struct vae_tensor * gamma, struct vae_tensor * beta, enum vae_act act);
// the centred, zero-padded conv over the frames with w [Cout, Cin, kt, 1, 1] (see VAE_OP_TIME_CONV)
struct vae_tensor * vae_graph_time_conv(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                        struct vae_tensor * b, struct vae_tensor * r, enum vae_act act);
// causal conv over the frames with w [Cout, Cin, kt, k, k]; `slot` numbers its state: graphs that
// share a state (the steps of one stream) give the same op the same slot
struct vae_tensor * vae_graph_causal_conv3d(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                            struct vae_tensor * b, struct vae_tensor * r, enum vae_act act, int slot);
// the same with the flags `edges` (enum vae_causal_edges): the history after a reset, the conv's
// spatial padding, and for a centred conv its frames per latent frame a (i[2]) and whether it starts
// the stream (a frame out fewer)
struct vae_tensor * vae_graph_causal_conv3d_edges(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                                  struct vae_tensor * b, struct vae_tensor * r, enum vae_act act,
                                                  int slot, int edges, int a);
// x delayed by d frames through state slot `slot`; start: VAE_CENTRED_START or 0 (see VAE_OP_DELAY)
struct vae_tensor * vae_graph_delay(struct vae_graph * g, struct vae_tensor * x, int d, int slot, int start);
// Wan's: x / max(|x|, 1e-12) * sqrt(C) * gamma (i[0] = 0, see VAE_OP_RMS_NORM)
struct vae_tensor * vae_graph_rms_norm(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * gamma,
                                       enum vae_act act);
// diffusers' RMSNorm with weight and bias, then a residual: act(x / sqrt(mean_c(x^2) + eps) * gamma + beta + r);
// gamma NULL is ones, beta and r may be NULL (i[0] = 1, see VAE_OP_RMS_NORM)
struct vae_tensor * vae_graph_rms_norm_eps(struct vae_graph * g, struct vae_tensor * x, float eps,
                                           struct vae_tensor * gamma, struct vae_tensor * beta, struct vae_tensor * r,
                                           enum vae_act act);
struct vae_tensor * vae_graph_attention(struct vae_graph * g, struct vae_tensor * qkv);
// the same in heads of hd channels (see VAE_OP_ATTENTION)
struct vae_tensor * vae_graph_attention_heads(struct vae_graph * g, struct vae_tensor * qkv, int hd);
// block-causal attention over the frames of a stream, its keys and values kept in state slot `slot`
// (see VAE_OP_CAUSAL_ATTENTION): qkv [N, 3C, H, W] -> [N, C, H, W]
struct vae_tensor * vae_graph_causal_attention(struct vae_graph * g, struct vae_tensor * qkv, int slot);
// ReLU linear attention of heads of hd channels (see VAE_OP_LINEAR_ATTENTION): qkv [N, G 3 hd, H, W]
struct vae_tensor * vae_graph_linear_attention(struct vae_graph * g, struct vae_tensor * qkv, int hd);
// x [N, 2C, H, W] -> x[:C] * act(x[C:]) (see VAE_OP_GLU)
struct vae_tensor * vae_graph_glu(struct vae_graph * g, struct vae_tensor * x, enum vae_act act);
struct vae_tensor * vae_graph_frame_split(struct vae_graph * g, struct vae_tensor * x, int s);
// the same less its first `drop` frames (see VAE_OP_FRAME_SPLIT)
struct vae_tensor * vae_graph_frame_split_drop(struct vae_graph * g, struct vae_tensor * x, int s, int drop);
struct vae_tensor * vae_graph_pixel_shuffle(struct vae_graph * g, struct vae_tensor * x);
// PyTorch's LayerNorm over the channels of each pixel (i[0] = 2, see VAE_OP_RMS_NORM)
struct vae_tensor * vae_graph_layer_norm(struct vae_graph * g, struct vae_tensor * x, float eps,
                                         struct vae_tensor * gamma, struct vae_tensor * beta);
// x's pixels as tokens, then extra's rows (NULL: none) and `zeros` zero tokens (see VAE_OP_TOKENS)
struct vae_tensor * vae_graph_tokens(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * extra, int zeros);
// the first n h w tokens of x as n frames of h x w (see VAE_OP_UNTOKENS)
struct vae_tensor * vae_graph_untokens(struct vae_graph * g, struct vae_tensor * x, int n, int h, int w);
// q and k of qkv normalised and rotated for a t x h x w token grid (see VAE_OP_ROPE)
struct vae_tensor * vae_graph_rope(struct vae_graph * g, struct vae_tensor * qkv, int hd, int rd, float theta,
                                   float eps, int n, int h, int w);
// x's frames [pre, pre + keep) faded in over d frames from those slot holds, then its last d (see VAE_OP_CROSSFADE)
struct vae_tensor * vae_graph_crossfade(struct vae_graph * g, struct vae_tensor * x, int slot, int pre, int keep, int d);
// one k x k filter per output channel, output channel o reading input channel o / m (m = w's rows / C)
struct vae_tensor * vae_graph_depthwise_conv2d(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                               struct vae_tensor * b);
void                vae_graph_set_output(struct vae_graph * g, struct vae_tensor * t);
const char *        vae_op_name(enum vae_op op);

// decoded frames leave the device through one of these layouts, 8 bits per sample
enum vae_pixel_format {
    VAE_PIXEL_RGB,
    VAE_PIXEL_RGBA,
    VAE_PIXEL_RGBX,
    VAE_PIXEL_BGRX,
    VAE_PIXEL_BGRA,
    VAE_PIXEL_I420,
    VAE_PIXEL_NV12,
    VAE_PIXEL_ARGB,
    VAE_PIXEL_ABGR,
    VAE_PIXEL_AYUV,   // packed 4:4:4, bytes A Y U V
    VAE_PIXEL_A420,   // I420 and a fourth plane of alpha at full resolution
};

// where one decoded frame goes: its planes (host memory, or device memory: see `device`), and how
// the model's output maps to [0, 1]
struct vae_frame {
    enum vae_pixel_format format;
    int                   width, height;
    uint8_t *             planes[4];
    int                   strides[4];
    float                 scale, offset;       // v01 = clamp(y * scale + offset, 0, 1)
    float                 kr, kb;              // YUV formats: luma coefficients (BT.601: .299, .114)
    bool                  full_range;          // YUV formats: 0..255 instead of 16..235/240
    bool                  device;              // planes are device memory of the backend's GPU (CUDA
                                               //   memory of its context); host memory when false
    bool                  alpha;               // the output's fourth channel is alpha (straight, mapped as
                                               //   colour): the formats with alpha take it, the others drop
                                               //   it; false: they are opaque (255)
};

// 8-bit pixels in dst from host f32 RGB (RGBA where dst->alpha): channel c of pixel (y, x) at
// src[(y * width + x) * pixel_stride + c * channel_stride] (planar [3, H, W]: 1 and H * W; a
// backend's own layouts differ). Rounded to nearest, clamped, NaN -> 0.
void vae_frame_pack(const float * src, int64_t pixel_stride, int64_t channel_stride, const struct vae_frame * dst);

enum vae_backend_type {
    VAE_BACKEND_CPU,
    VAE_BACKEND_CUDA,
    VAE_BACKEND_HIP,
    VAE_BACKEND_COUNT,
};

// how a backend stores activations and multiplies: weights are converted once at prepare;
// accumulation, norm statistics and softmax are fp32 at every precision
enum vae_precision {
    VAE_PRECISION_AUTO,  // bf16 on GPUs that have it (fp16 on older ones); on the CPU bf16 where oneDNN's
                         //   ISA computes it natively (AVX512-BF16, AMX), else fp32 (test-precision holds
                         //   every family's bf16 decode within 38 dB PSNR of fp32)
    VAE_PRECISION_FP32,
    VAE_PRECISION_TF32,  // fp32 storage, tf32 tensor-core products
    VAE_PRECISION_FP16,
    VAE_PRECISION_BF16,
    VAE_PRECISION_COUNT,
};

const char * vae_precision_name(enum vae_precision p);

typedef struct vae_backend vae_backend_t;

bool            vae_backend_is_built(enum vae_backend_type type);
const char *    vae_backend_type_name(enum vae_backend_type type);
// device: the GPU's number, or -1: the CUDA context current on the calling thread if there is
// one (a GstCudaContext pushed by the element), else device 0; that context must outlive the
// backend (the element holds its GstCudaContext until the backend is freed): the driver cannot
// tell a destroyed context's handle from a live one, and pushing and popping one is undefined
// (on an H100, driver 580.159, the pop frees the driver's context a second time). The CPU computes in fp32 whatever
// else is asked for, and in bf16 when asked only where oneDNN's ISA has AVX512-BF16 or AMX
// (vae_backend_precision says what is in effect); a GPU refuses a precision it lacks, naming it.
vae_backend_t *    vae_backend_init(enum vae_backend_type type, int device, enum vae_precision precision, char * err,
                                    size_t err_size);
void               vae_backend_free(vae_backend_t * backend);
const char *       vae_backend_name(vae_backend_t * backend);
enum vae_precision vae_backend_precision(vae_backend_t * backend);   // never AUTO
// the latent frames per step a video decode takes where memory allows, when the user leaves it
// (chunk-frames 0): 1 on the CPU, where batching frames gains nothing and costs memory; 2 on a GPU,
// whose layers at latent resolution then have twice the blocks (one frame of a Wan 480p latent
// gives its 384-channel convs 0.28 of a wave of blocks on an H100, two frames 1.1: emu-counts),
// and whose state copies per frame halve. The frames are the same as one at a time.
int                vae_backend_auto_frames(vae_backend_t * backend);
// a condition worth a warning that failed nothing (a GPU launching a graph directly because
// recording it failed, with the cause), once: true and the text in buf the first time after it
// arose, then false until another arises
bool               vae_backend_take_notice(vae_backend_t * backend, char * buf, size_t size);
// what prepare chose for node i of the prepared g where it chooses (a GPU conv's tile variant,
// timed at prepare: "mma-bf16 128x128x32", ...; an RMS norm a GPU conv computes in its epilogue:
// "in the conv's epilogue"), else NULL
const char *       vae_backend_node_impl(vae_backend_t * backend, const struct vae_graph * g, int i);

// convert weights, plan memory (sets g->peak_bytes), create what the ops need; refuses a plan
// larger than max_bytes (0 = the device's memory) with a message giving both sizes
bool vae_backend_graph_prepare(vae_backend_t * backend, struct vae_graph * g, size_t max_bytes,
                               char * err, size_t err_size);
// the frames causal ops carry from one compute to the next, for every slot of g (n_states > 0);
// all zero at first (or, for a replicating op, its first frame when it first runs). Any graph whose causal ops have the same slots and shapes may use it.
// what a session may plan on: max_bytes when given (nonzero), else the device's memory as
// vae_backend_graph_prepare counts it (the CPU: 7/8 of what is available now; a GPU: its memory),
// for the checks of graphs and causal state together
size_t vae_backend_limit(vae_backend_t * backend, size_t max_bytes);
// a size for a message: "2.3 MiB", "97.7 KiB" below 1 MiB (a limit of 100000 bytes is not "0.1 MiB"),
// "512 bytes" below 1 KiB; written into buf, which is returned
const char * vae_backend_bytes_str(char buf[32], double bytes);
typedef struct vae_state vae_state_t;
vae_state_t * vae_backend_state_new(vae_backend_t * backend, const struct vae_graph * g, char * err, size_t err_size);
void          vae_backend_state_reset(vae_backend_t * backend, vae_state_t * state);   // back to the start
size_t        vae_backend_state_bytes(vae_backend_t * backend, const vae_state_t * state);
// the most bytes the state may grow to (0, the default: as much as the device gives): a causal
// attention's key/value cache grows by a frame's keys and values each frame, and a compute that
// would take it past the limit fails, naming the frames the limit holds, before changing anything
void          vae_backend_state_set_limit(vae_backend_t * backend, vae_state_t * state, size_t bytes);
// the latent frames of the stream in all, once known (its end: a reset forgets it): every centred
// conv then reads its stream's last frame in place of those after it (see VAE_OP_CAUSAL_CONV3D)
void          vae_backend_state_set_end(vae_backend_t * backend, vae_state_t * state, int64_t latents);
void          vae_backend_state_free(vae_backend_t * backend, vae_state_t * state);
// run the graph on host f32 input [N, C, H, W]; state: NULL when g->n_states == 0, else read
// and updated. A graph with one input only. When g->cancel is set (by another thread, at any
// time) the compute stops before its next node (a GPU: with at most the nodes already running on
// the device finished first) and fails with the message VAE_BACKEND_INTERRUPTED: the output is
// then undefined and the state part-way (reset it before its stream goes on); the backend itself
// is unharmed, and the next compute of any graph gives the exact result.
bool vae_backend_graph_compute(vae_backend_t * backend, struct vae_graph * g, vae_state_t * state,
                               const float * input, char * err, size_t err_size);
// the same for a graph of g->n_inputs inputs: inputs[i] for input number i
bool vae_backend_graph_compute_inputs(vae_backend_t * backend, struct vae_graph * g, vae_state_t * state,
                                      const float * const * inputs, char * err, size_t err_size);
// write frame n of the output (which must have 3 channels) into dst; device frames (dst->device)
// on GPU backends only, written in place
bool vae_backend_graph_read_frame(vae_backend_t * backend, struct vae_graph * g, int n,
                                  const struct vae_frame * dst, char * err, size_t err_size);
// read frames [first, first + count) of the raw output [N, C, H, W] as host f32 (tests, tools)
bool vae_backend_graph_read_output(vae_backend_t * backend, struct vae_graph * g, int first, int count, float * dst,
                                   char * err, size_t err_size);
void vae_backend_graph_release(vae_backend_t * backend, struct vae_graph * g);

#ifdef __cplusplus
}
#endif
