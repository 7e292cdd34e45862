// A loaded decoder: its weights under canonical names (f32 on demand), the family they were recognised
// as, and what the family says about its input (latent space) and output (value range).
// Everything here is independent of GStreamer and of the device.

#pragma once

#include "vae-backend.h"
#include "vae-safetensors.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vae_family {
    VAE_FAMILY_AUTO,      // detect from the file
    VAE_FAMILY_TAESD,     // tiny decoder for SD 1.x/2.x latents (4 ch)
    VAE_FAMILY_TAESDXL,   // tiny decoder for SDXL latents (4 ch)
    VAE_FAMILY_TAESD3,    // tiny decoder for SD3 latents (16 ch)
    VAE_FAMILY_TAEF1,     // tiny decoder for FLUX.1 latents (16 ch)
    VAE_FAMILY_TAEF2,     // tiny decoder for FLUX.2 latents (32 ch, mid-block GroupNorm)
    VAE_FAMILY_WAN21,     // Wan 2.1 VAE: Wan 2.1, Wan 2.2-A14B, Qwen-Image (16 ch, causal video)
    VAE_FAMILY_TAEW21,    // TAEHV for Wan 2.1 latents (16 ch)
    VAE_FAMILY_TAEW22,    // TAEHV for Wan 2.2-5B latents (48 ch, 2x2 pixel shuffle)
    VAE_FAMILY_TAEHV,     // TAEHV for HunyuanVideo latents (16 ch; taew2_1's shapes)
    VAE_FAMILY_TAEHV1_5,  // TAEHV for HunyuanVideo 1.5 latents (32 ch, 2x2 pixel shuffle)
    VAE_FAMILY_TAELTX2,   // TAEHV for LTX-2 latents (128 ch, 4x4 pixel shuffle, 8 frames per latent)
    VAE_FAMILY_TAECVX,    // TAEHV for CogVideoX latents (16 ch; taew2_1's shapes)
    VAE_FAMILY_SD1,       // AutoencoderKL of SD 1.x (4 ch, scale 0.18215)
    VAE_FAMILY_SD2,       // AutoencoderKL of SD 2.x (4 ch, scale 0.18215; same shapes as sd1 and sdxl)
    VAE_FAMILY_SDXL,      // AutoencoderKL of SDXL (4 ch, scale 0.13025)
    VAE_FAMILY_SD3,       // AutoencoderKL of SD3 / SD3.5 (16 ch, scale 1.5305, shift 0.0609)
    VAE_FAMILY_FLUX1,     // AutoencoderKL of FLUX.1 (16 ch, scale 0.3611, shift 0.1159; same shapes as sd3)
    VAE_FAMILY_FLUX2,     // AutoencoderKL of FLUX.2 (32 ch raw; 128 ch normalized through BatchNorm stats)
    VAE_FAMILY_WAN22,     // Wan 2.2 VAE of TI2V-5B (48 ch, 16x: residual up-blocks and a 2x2 unpatchify)
    VAE_FAMILY_TAEW22_SUPER,   // taew2_2's 'super' decoder (7x7 depthwise SuperMemBlocks, about 2x the weights)
    VAE_FAMILY_TAEHV1_5_SUPER, // taehv1_5's 'super' decoder
    VAE_FAMILY_SVD,       // Stable Video Diffusion's temporal decoder (4 ch, scale 0.18215; whole-clip temporal blocks)
    VAE_FAMILY_SEEDVR2,   // SeedVR2's causal video VAE (16 ch, 8x, 4 frames per latent; scale 0.9152)
    VAE_FAMILY_HYIMAGE21, // AutoencoderKL of HunyuanImage 2.1 (64 ch, 32x; scale 0.75289)
    VAE_FAMILY_QWEN21,    // Qwen-Image 2.1's VAE (64 ch, 16x, RGBA; Wan 2.2's network for images, 2-D convs)
    VAE_FAMILY_DCAE,      // SANA's DC-AE (f32c32: 32 ch, 32x; scale 0.41407)
    VAE_FAMILY_HYVIDEO15, // HunyuanVideo 1.5's VAE (32 ch, 16x, 4 frames per latent; scale 1.03682; causal
                          //   attention over the stream's frames)
    VAE_FAMILY_LTX2,      // LTX-2's video VAE (128 ch, 32x, 8 frames per latent; centred in time)
    VAE_FAMILY_LTX23,     // LTX-2.3's (its temporal and spatial upsamplers apart, zero padding)
    VAE_FAMILY_MINIMAXH3, // MiniMax-H3's video VAE (24 ch, 16x, 4 frames per latent; a ViT decoding in chunks)
    VAE_FAMILY_COUNT,
};

// what latents a stream holds: the VAE's own raw latents, or the diffusion model's normalized ones
enum vae_space {
    VAE_SPACE_AUTO,       // whatever the decoder takes: no conversion
    VAE_SPACE_RAW,
    VAE_SPACE_NORMALIZED,
};

// A decoder weight under its canonical name. Loading reads only names and shapes; the f32 data
// is made when a graph (or the latent constants) first needs it: little-endian F32 that is 4-byte
// aligned in the file is used in place, anything else is converted and the copy kept until the
// graphs that need it are prepared (vae_model_drop_copies). Either way it is checked to be finite,
// so unused tensors cost nothing.
struct vae_weight {
    char *        name;   // canonical (original upstream) name
    int           n_dims;
    int64_t       shape[VAE_ST_MAX_DIMS];
    const float * data;   // f32, PyTorch layout, once made (see vae_model_weight_data); NULL before
    float *       copy;   // the conversion data points to (owned), NULL while data is in the file mapping
    // what the data is made from: the file's tensors joined along dimension 0 (three for the
    // AutoencoderKL attention's q, k, v); taps: a TAEHV MemBlock conv [Cout, 2 Cin, k, k] whose
    // input halves (x_t, x_t-1) become the causal taps of [Cout, Cin, 2, k, k] (t-1 first);
    // taps_interleaved: a SuperMemBlock's 1x1 [Cout, 2 C, 1, 1] over (x_t, x_t-1) filtered depthwise,
    // made [Cout, 2 C, 2, 1, 1] for input channel 2c + j = half j's channel c: tap 1 (now) reads
    // the even channels, tap 0 (a frame earlier) the odd ones, zeros elsewhere
    const struct vae_st_tensor * src[3];
    int                          n_src;
    bool                         taps, taps_interleaved;
    // mix (or NULL): a one-value tensor m; the data is scaled by sigmoid(m). SVD's time_mixer
    // blends x + conv(...) with x as x + sigmoid(m) conv(...), folded into the conv's weight and bias
    const struct vae_st_tensor * mix;
    bool                         aux;     // read outside the graphs (FLUX.2's latent statistics)
    // rows (owned, shape[0] of them; NULL: none): row k of the data is row rows[k] of the file's
    // tensor viewed as rows of this weight's row size (Wan 2.2's head and a 4x4-patch TAEHV's last
    // conv, whose outputs are reordered for pixel_shuffle; DC-AE's to_out cut in column halves), or,
    // for a weight with no tensor in the file (n_src 0), row rows[k] of the identity [shape[1],
    // shape[1]]: a 1x1 conv that moves channels
    int32_t * rows;
    // affine (owned, or NULL): 2 shape[0] values, row k of the data (after rows) times affine[k] plus
    // affine[shape[0] + k] (MiniMax-H3's LayerScale folded into the layer before it, its ImageNet
    // denormalisation into its last)
    float * affine;
};

struct vae_family_desc; // (vae-family.h)
struct vae_variant;

struct vae_model {
    const struct vae_family_desc * desc;    // the family's file that loaded it
    const struct vae_variant *     variant; // its model-family's entry there (set once prepared)
    enum vae_family     family;
    bool                family_certain;   // false when the file cannot tell (4 ch: taesd or taesdxl)
    int                 latent_channels;
    int                 scale;            // output pixels per latent pixel, each axis (8 or 16)
    int                 frames_per_latent; // output frames per latent frame after the first (video: 4)
    int                 trim_frames;      // frames the graphs give ahead of the first real one (TAEHV: 3)
    bool                first_apart;      // the first latent frame of a stream has a graph of its own (Wan)
    bool                clip_calls;       // a decode call's frames all depend on each other (SVD's temporal
                                          // blocks): a call is a clip of its own, never padded
    int                 lookahead;        // > 0: a frame depends on this many latent frames after its own
                                          // (LTX-2's centred convs): a stream starts with a graph of
                                          // lookahead + 1 latent frames (`first`), later steps give
                                          // frames_per_latent frames per latent frame that late, and
                                          // the end is flushed (vae_backend_state_set_end)
    int                 chunk_latents;    // > 0: upstream decodes a stream in chunks of this many latent frames
                                          // (MiniMax-H3), and so does a session: a graph of chunk_latents +
                                          // chunk_overlap latent frames (those it shares with the next chunk)
                                          // gives the chunk's frames, then chunk_hold frames it holds for the
                                          // next one's cross-fade (the stream's last, at its end); the stream is
                                          // padded with copies of its last latent frame to whole chunks and its
                                          // frames counted by vae_model_stream_frames
    int                 chunk_overlap, chunk_hold;
    int                 min_side;         // the smallest latent grid side it decodes (0: 1)
    int                 out_channels;     // 3: RGB; 4: RGBA, straight (not premultiplied) alpha
    enum vae_space      own_space;        // the space the decoder itself takes
    float               out_scale, out_offset; // decoder output -> [0, 1], clamped when packed
    int                 n_weights;
    struct vae_weight * weights;          // sorted by name
    char                description[160];
    struct vae_st_file * file;            // mapped while the model lives: the weights' data comes from it
    pthread_mutex_t      lock;            // making weight data (builds on several threads may share a model)
};

const char *     vae_family_name(enum vae_family family);  // "taef2", ...
enum vae_family  vae_family_from_name(const char * name);   // VAE_FAMILY_COUNT when unknown
// what every file of a family takes and gives, known before any file is read: the latent channels
// in the decoder's own space, and whether it decodes video (several frames per latent frame, or
// SVD's clips) rather than independent images
int              vae_family_latent_channels(enum vae_family family);
bool             vae_family_is_video(enum vae_family family);
const char *     vae_family_description(enum vae_family family); // a line for users: what it decodes

// load a decoder (safetensors or a torch.save .pth); family AUTO detects it, any other value is checked against the file
struct vae_model * vae_model_load(const char * path, enum vae_family family, char * err, size_t err_size);
void               vae_model_free(struct vae_model * model);
const struct vae_weight * vae_model_weight(const struct vae_model * model, const char * name);
// the f32 data of w (a weight of model), made on first use and valid until vae_model_drop_copies; NULL with
// a message naming the file's tensor when it holds NaN or infinity (or memory runs out)
const float * vae_model_weight_data(const struct vae_model * model, const struct vae_weight * w, char * err,
                                    size_t err_size);

// free the f32 copies of weights made so far (the converted ones: data used in place from the file
// costs nothing). A backend holds weights of its own once it has prepared its graphs, and keeping
// the copies would double them; a later build (a new session) makes them again from the file.
// Not while another thread has built a graph from the model and not prepared it yet.
void   vae_model_drop_copies(const struct vae_model * model);
size_t vae_model_copy_bytes(const struct vae_model * model);   // what those copies take now

// the side of the square patch that one latent pixel in `space` stands for: 2 for FLUX.2's
// normalized latents (128 = 4 x 32 channels at half the resolution), 1 otherwise. A pushed frame
// then has latent_channels * patch^2 channels.
int vae_model_space_patch(const struct vae_model * model, enum vae_space space);

// per-channel constants (latent_channels * patch^2 each) that take latents in `space` to the
// decoder's own space as z = x / div + add (the form the upstream pipelines compute), before any
// unpatchify (z[c, 2y+i, 2x+j] = x'[4c + 2i + j, y, x]); false with a message where the family has no
// constants for it
bool vae_model_space_affine(const struct vae_model * model, enum vae_space space, float * div, float * add,
                            char * err, size_t err_size);

// the frames a stream of n latent frames decodes to; 0 where the decoder cannot decode n (a chunked
// decoder's stream too short for one chunk)
uint64_t vae_model_stream_frames(const struct vae_model * model, uint64_t n);
// the decoded frames that latent frame k (from the start of a stream) adds to those of the k before
// it: 1 for k = 0, frames_per_latent after (a chunked decoder: by vae_model_stream_frames)
int vae_model_frames_of_latent(const struct vae_model * model, uint64_t k);

// the decode graph for n latent frames of h x w (in the decoder's own space); `first`: the step
// that starts a stream (only where model->first_apart, with n = 1; or model->lookahead, with n >
// lookahead). It gives trim_frames + 1 + frames_per_latent * (n - 1) frames for a first step
// (a lookahead decoder: its output's frames, fewer), frames_per_latent * n otherwise (trim_frames
// at the start of each stream are not frames of the video).
struct vae_graph * vae_model_build_graph(const struct vae_model * model, int n, int h, int w, bool first, char * err,
                                         size_t err_size);

// AutoencoderKL, layer-major, for the exact tiled decode (vae-tile.c): the head (post_quant_conv,
// conv_in and the mid block, at latent resolution) runs on whole frames; every later 3x3 conv is a
// step that a tile runs with a 1-pixel border of its input and the GroupNorm statistics of the
// whole frame. Steps follow in execution order; the whole-frame graph chains the same steps.
enum vae_kl_step_kind {
    VAE_KL_NORM_CONV,      // y = conv(SiLU(GN(x)))                 (a residual block's first half; the end)
    VAE_KL_NORM_CONV_RES,  // y = conv(SiLU(GN(x))) + shortcut(r)    (its second half; r = the block's input)
    VAE_KL_UPSAMPLE,       // y = conv(nearest2x(x))                 (twice the resolution), or where shortcut is
                           //   given (HunyuanImage 2.1) y = pixel_shuffle(conv(x) + shortcut(x))
};

#define VAE_KL_MAX_STEPS 64

struct vae_kl_step {
    enum vae_kl_step_kind kind;
    char                  norm[48], conv[48], shortcut[48];   // weight names ("" = none)
    int                   cin, cout, rin;                     // channels of x, y and r
};

// the steps of model (at most max), in order; their GroupNorms have 32 groups
int                vae_kl_steps(const struct vae_model * model, struct vae_kl_step * steps, int max);
// whole frames [1, z, h, w] -> the mid block's output [1, C, h, w]
struct vae_graph * vae_kl_head_build(const struct vae_model * model, int h, int w, char * err, size_t err_size);
// one step on an h x w tile: input 0 = x [1, cin, h, w]; for the normalizing kinds input 1 = the
// statistics [1, 64, 1, 1] (32 means, 32 inverse deviations); for VAE_KL_NORM_CONV_RES input 2 =
// r [1, rin, h, w] over the same pixels
struct vae_graph * vae_kl_step_build(const struct vae_model * model, const struct vae_kl_step * s, int h, int w,
                                     char * err, size_t err_size);

// A causal video decoder, for the exact tiled decode (vae-tile-video.c): the head (through the
// mid block, at latent resolution: its attention needs the whole frame) runs on whole frames;
// every later step reaches at most one input pixel around an output pixel, so it runs in tiles
// with a 1-pixel border, one frame at a time (a causal conv over n frames is n calls of one frame
// with its state; a centred one, LTX-2's, too, a frame late). A family tiles by giving its steps
// and these builders (vae_model_causal_*); one without a head (LTX-2) starts its steps on the latents.
#define VAE_CAUSAL_MAX_STEPS 64

struct vae_causal_step {
    int  kind;                  // the family's own (how its builder reads name and aux)
    char name[64], aux[64];     // module names; aux: a second one ("" = none)
    int  cin, cout, rin;        // channels of x, y and r (rin 0: no residual)
    int  up;                    // output pixels per input pixel, each axis: 1, 2 or 4
    int  frames;                // output frames per input frame: 2 for a temporal upsample (1 in the
                                //   first step of a stream), else 1
    int  save;                  // bit j: keep this step's input as residual slot j for a later step
    int  res;                   // -1, or the slot whose activation is r (at x's pixels; read pointwise)
    int   groups;               // > 0: the step GroupNorms x in this many groups over the whole frame
    float eps;                  //   (SeedVR2): a tile is given the frame's statistics, taken with eps
    int   centred;              // 1: its convs are centred (LTX-2's, VAE_CENTRED): its output trails its input
                                //   by a frame; a stream's first compute gives none (it fills the state), and
                                //   where frames = 2 the next gives its second only (the first is the clip's
                                //   padding); r is the slot's frame of the output, not of x. 0: causal
    int   rate;                 //   and its input's stream has 1 + rate (T - 1) frames for T latent frames
};

// the steps of model (at most max), in order; 0 for a family that does not tile this way
int                vae_model_causal_steps(const struct vae_model * model, struct vae_causal_step * steps, int max);
// whether the steps start on the latents themselves (no head)
bool               vae_model_causal_headless(const struct vae_model * model);
// whole frames [1, z, h, w] -> the head's output [1, steps[0].cin, H, W] (the latent grid; DC-AE's
// head runs its attention levels, at up to 4x)
struct vae_graph * vae_model_causal_head_build(const struct vae_model * model, int h, int w, char * err,
                                               size_t err_size);
// one step on an h x w tile: input 0 = x [1, cin, h, w], then r [1, rin, h, w] where rin > 0, then
// where groups > 0 the statistics of x's whole frame [1, 2 groups, 1, 1] (means, then 1 / sqrt(var +
// eps), see VAE_OP_GROUP_NORM); output [frames, cout, up h, up w] (1 frame when first); its causal
// ops number their slots from 0
struct vae_graph * vae_model_causal_step_build(const struct vae_model * model, const struct vae_causal_step * s,
                                               int h, int w, bool first, char * err, size_t err_size);
#ifdef __cplusplus
}
#endif
