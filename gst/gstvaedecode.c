/* GStreamer VAE decode
 * Copyright (C) 2026 gst-vaedecode developers
 */

/**
 * SECTION:element-vaedecode
 * @title: vaedecode
 * @short_description: decodes diffusion-model latents into raw video frames
 *
 * vaedecode runs the decoder half of a VAE on a stream of `video/x-latent` buffers, one
 * latent frame each, and outputs `video/x-raw` frames 8 times the latent size (16 times for
 * wan2.2, taew2_2, taehv1_5 (and their _super decoders), qwenimage2.1 and FLUX.2's normalized latents, which
 * hold 2x2 patches, and for hunyuanvideo1.5 and minimax-h3; 32 for ltx2, ltx2.3, taeltx_2 and hunyuanimage2.1). The model file is a safetensors file or a PyTorch `.pth` (read without running
 * any of its code: a weights-only unpickler); its family is detected from its keys and
 * shapes: the AutoencoderKL image decoders (sd1, sd2, sdxl, sd3, flux1, flux2, hunyuanimage2.1), the TAESD image
 * decoders (taesd, taesdxl, taesd3, taef1, taef2), the Wan 2.1 and 2.2 VAEs (wan2.1, wan2.2),
 * Qwen-Image 2.1's RGBA VAE (qwenimage2.1), SeedVR2's video VAE (seedvr2), HunyuanVideo 1.5's VAE
 * (hunyuanvideo1.5), LTX-2's and LTX-2.3's video VAEs (ltx2, ltx2.3), MiniMax-H3's ViT video VAE
 * (minimax-h3, decoding upstream's chunks of 5 latent frames), the TAEHV video decoders (taew2_1, taew2_2, taehv, taehv1_5,
 * taeltx_2, taecvx, taew2_2_super, taehv1_5_super) and Stable Video Diffusion's temporal
 * decoder (svd). The output is converted to the negotiated format (RGB, RGBA, RGBx, BGRx, BGRA,
 * ARGB, ABGR, AYUV, I420, A420, NV12) with 8-bit values rounded to nearest.
 *
 * ## Alpha
 *
 * A decoder with an alpha channel (qwenimage2.1) gives straight (not premultiplied) alpha, mapped
 * to bytes as colour is ((y + 1) / 2, clamped): the colour bytes do not change with alpha, as
 * GStreamer's RGBA formats and compositor expect. With such a model vaedecode offers the formats
 * with alpha first (RGBA, BGRA, ARGB, ABGR, AYUV, A420), RGBA preferred: 8 bits per channel,
 * no chroma subsampling, what pngenc and compositor take. A format without alpha (RGB, RGBx,
 * BGRx, I420, NV12) drops it: the colour of transparent pixels is whatever the model made there.
 * Every other decoder writes opaque alpha (255) into the formats that have it.
 * |[
 * gst-launch-1.0 filesrc location=qwen21.latent ! latentparse \
 *     ! vaedecode model-file=qwen_image_2.1_vae_bf16.safetensors ! video/x-raw,format=RGBA \
 *     ! pngenc ! multifilesink location=image-%02d.png
 * ]|
 *
 * ## AutoencoderKL and latent spaces
 *
 * The full VAE decoders of Stable Diffusion 1.x/2.x, SDXL, SD3/3.5, FLUX.1 and FLUX.2 are
 * read in the LDM/ComfyUI/BFL naming (`decoder.conv_in.weight`,
 * `decoder.mid.attn_1.q.weight`) or the diffusers one (`decoder.mid_block.attentions.0.to_q.weight`, also the older
 * `query`/`key`/`value`/`proj_attn`), as a standalone VAE file or inside a single-file
 * checkpoint whose VAE tensors carry a `first_stage_model.` or `vae.` prefix; encoder and
 * diffusion-model tensors are ignored. They take the VAE's raw latents, which is what
 * latent-space=auto assumes and what ComfyUI's `.latent` files hold; normalized latents (the
 * diffusion model's, diffusers `output_type="latent"`) are converted with the family's
 * constants: SD 1.x/2.x z = x / 0.18215, SDXL z = x / 0.13025, SD3 z = x / 1.5305 + 0.0609,
 * FLUX.1 z = x / 0.3611 + 0.1159. FLUX.2's normalized latents have 128 channels at half the
 * latent resolution (1/16 of the frame): they go through the BatchNorm statistics stored in
 * the file and a 2x2 unpatchify into the decoder's 32 channels, so the caps take 128 channels
 * and the frames are 16 times the latent grid. sd1, sd2 and sdxl files have the same shapes,
 * as do sd3 and flux1 files: they decode raw latents the same way, but normalized latents
 * need #GstVaeDecode:model-family to name the family. The decoder's output, about [-1, 1],
 * becomes (y + 1) / 2, clamped to [0, 1].
 *
 * ## Tiled decode
 *
 * AutoencoderKL frames and Wan 2.1 / 2.2 and SeedVR2 video can be decoded in tiles to lower the
 * peak memory: tiles of at most #GstVaeDecode:tile-size output pixels a side, or, with tile-size
 * 0, tiles that fit when a whole frame does not fit in #GstVaeDecode:max-memory. The tiling is exact: the
 * GroupNorm statistics and the mid-block attention are still computed over the whole frame,
 * each layer reads a one-pixel border from its stored neighbours, and a video tile keeps its own
 * causal state, so a tiled frame equals the untiled one to rounding and needs no overlap or
 * blending. Smaller tiles need less memory (down to a size where the tiles' borders cost more
 * than they save) and take somewhat longer. Other families decode whole frames.
 *
 * ## Video decoders and timestamps
 *
 * Wan, SeedVR2 and TAEHV are causal video decoders: latent frame 0 of a stream gives one frame and
 * every later latent frame four, so T latent frames give 1 + 4 (T - 1) frames (frame 0 comes
 * from latent 0, frames 4k-3 .. 4k from latent k). Image decoders give one frame per latent
 * frame. The frames are stamped at the caps' framerate (the decoded video's), each one frame
 * duration long: frame n at the first latent buffer's PTS (the segment's start when it has
 * none) plus n frame durations, whatever times later latent buffers carry (jitter, arrival
 * times over RTP without a jitterbuffer), so the output is monotonic and gap-free. A latent
 * buffer whose PTS lies more than a frame after its first frame's time is a discontinuity,
 * logged at INFO level: its frames go on from its PTS, the first one flagged DISCONT; one
 * more than a frame early is logged and its frames keep their place. A new segment and a
 * flush start afresh. With framerate 0/1 the latent buffer's DURATION is split evenly
 * between its frames.
 *
 * Image latents (caps with `video=false`: latentparse's [B, C, H, W] files, such as
 * Qwen-Image's batches) given to a causal video decoder are decoded as independent
 * one-frame clips, each as it comes, as ComfyUI and diffusers decode them; video latents
 * (`video=true`: [B, C, T, H, W] files) given to an image decoder are refused, naming the
 * video decoders that take that many channels.
 *
 * A latent buffer flagged DISCONT in the middle of a video stream ends that stream: the
 * frames of the latents already taken are decoded and pushed, and the buffer becomes latent
 * frame 0 of a new stream (latentparse flags the first latent frame of each batch item so).
 * EOS and new caps drain the same way; a flush drops what is queued.
 *
 * ## End of stream
 *
 * latentparse announces the input's size before its first latent buffer: a custom
 * downstream event `latent-totals` with `latent-frames` and `frames` (#guint64: the latent
 * frames of the whole tensor and the frames they decode to). An EOS before that many latent
 * frames came is not an error: what came is decoded and pushed, then a WARNING message says
 * how many latent frames came and how many frames are missing. After a flush (a seek) the
 * totals are unknown until announced again.
 *
 * A flush, or the state change to READY, interrupts a decode within its step: the backend
 * reads a cancel flag before every node of the decode graph (the CPU backend also between
 * blocks of an attention's rows; a GPU backend before every kernel launch, or before a
 * replayed CUDA graph, which it records only for steps under 0.1 s), and a tiled decode
 * before every tile. On the CPU this takes tens of milliseconds at most, but a single
 * convolution runs to its end once started. The frames of the interrupted step are
 * dropped, without an error.
 *
 * ## Latency and messages
 *
 * With #GstVaeDecode:chunk-frames above 1 a latent frame waits for the rest of its chunk: the
 * LATENCY query adds (chunk-frames - 1) latent frames' worth of video, (chunk-frames - 1) x 4
 * frame durations for the video decoders, to upstream's latency. LTX-2's frames depend on
 * later latents (its convs are centred in time): a frame comes once the latent frames it
 * depends on have come, at most 22 (LTX-2.0) or 14 (LTX-2.3) after its own, and the query
 * adds those too, (chunk-frames - 1 + 22) x 8 frame durations for LTX-2.0; at the end of the
 * stream the frames still waiting come out as they are decoded. SVD with chunk-frames 0
 * holds the whole clip: no frame comes before the stream ends (EOS, or a DISCONT latent
 * buffer), a latency the query cannot state (it adds nothing); not for live pipelines.
 *
 * The POSITION query on the source pad answers the end of the last frame pushed, in TIME
 * and in frames (DEFAULT); DURATION comes from upstream (latentparse): progressreport and
 * gst-launch-1.0's position line follow the decode.
 *
 * After each decode step that gave frames (the drain at the end of a stream included), the
 * element posts an element message named `vaedecode-progress`, unless
 * #GstVaeDecode:post-messages is FALSE. Its fields:
 *
 * - `latent-frames` (#guint64): latent frames taken in the current stream
 * - `frames` (#guint64): frames decoded in the current stream
 * - `timestamp`, `stream-time`, `running-time`, `duration` (#GstClockTime): of the last
 *   frame the step gave (GST_CLOCK_TIME_NONE when unknown)
 * - `memory` (#guint64): the bytes the decode holds now on its device (graphs, weights and
 *   streaming state); fixed for a stream, except HunyuanVideo 1.5's, whose attention keeps the
 *   keys and values of every earlier latent frame (up to #GstVaeDecode:max-memory)
 * - when upstream announced the input's size (`latent-totals`): `latent-frames-total` and
 *   `frames-total` (#guint64), and `latent-frames-done` and `frames-done` (#guint64: latent
 *   frames taken and frames pushed of the whole input, which in a batch of several videos
 *   spans the streams)
 *
 * ## CUDA
 *
 * With #GstVaeDecode:backend cuda, or auto when the CUDA backend is built and a GPU is
 * present, the decoder runs on the GPU of #GstVaeDecode:device-id at #GstVaeDecode:precision
 * (auto: bf16 where the GPU has it). The source caps then offer
 * `video/x-raw(memory:CUDAMemory)` before system memory: the frames are written in place
 * into CUDA memory of the pipeline's #GstCudaContext, shared through the `gst.cuda.context`
 * GstContext (the element asks its neighbours and the application for one, and makes and
 * announces its own when none comes), so CUDA elements downstream take them without a copy.
 * Frames of a tiled decode are assembled in host memory and uploaded when downstream maps
 * them. CUDA memory comes in the formats GStreamer's CUDA allocator lays out (RGB, RGBA, RGBx,
 * BGRx, BGRA, ARGB, ABGR, I420, NV12); AYUV and A420 are system memory only. System-memory
 * output works with every backend; the CPU backend offers only that.
 * Without a GPU or a driver, backend auto decodes on the CPU (logged at INFO level) and
 * backend cuda fails with an error that names the cause.
 *
 * ## HIP
 *
 * With #GstVaeDecode:backend hip, or auto when no CUDA GPU is found and the HIP backend is
 * built and finds an AMD GPU, the decoder runs on the AMD GPU of #GstVaeDecode:device-id
 * (RDNA3/3.5, RDNA4, CDNA2/3: the targets the plugin was built for) at
 * #GstVaeDecode:precision: auto is bf16, which every such target has; fp16 and fp32 work
 * too, tf32 is refused (RDNA has none; CDNA3's xf32 is not used). The output is system
 * memory. The HIP runtime (libamdhip64 of ROCm) is loaded when the backend starts, so the
 * plugin loads without it; without the runtime or an AMD GPU, backend auto decodes on the
 * CPU and backend hip fails with an error that names the cause.
 *
 * ## Errors
 *
 * Latents that hold NaN or Inf, latent caps whose channel count does not match the model, and
 * model files that are missing, malformed or not a decoder stop the pipeline with an error that
 * names the cause: invalid latent caps name the field that is missing or wrong, and a PyTorch
 * checkpoint (.pth, .pt, .ckpt: a zip archive or a pickle) given as the model is named as such.
 * Frames decoded before an error have already been pushed.
 *
 * ## Properties
 *
 * Every property but #GstVaeDecode:post-messages is read when the element starts or when the
 * caps come, and is flagged #GST_PARAM_MUTABLE_READY: set while PAUSED or PLAYING, it is
 * refused with a WARNING message on the bus that names it, and keeps the value in use. A
 * precision the backend does not compute is a WARNING message on the bus, posted once as the
 * element starts.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=sdxl_00001_.latent ! latentparse \
 *     ! vaedecode model-file=sdxl_vae.safetensors \
 *     ! videoconvert ! pngenc ! multifilesink location=image-%02d.png
 * ]| decodes a ComfyUI SDXL `.latent` file (raw latents, [B, 4, H/8, W/8]) into B PNG
 * images with the SDXL VAE (`sdxl_vae.safetensors`, diffusers' `vae/` file, or an SDXL
 * checkpoint); add tile-size=512 to decode large images in tiles. With
 * `tests/data/kl_sd.latent` and `tests/data/kl_sd.safetensors`, a random-weight model of the
 * same structure, the same pipeline runs in a second (one 56x40 image).
 * |[
 * gst-launch-1.0 filesrc location=../shared/reference/taef2/full.latent ! latentparse \
 *     ! vaedecode model-file=../shared/models/taef2_decoder.safetensors \
 *     ! videoconvert ! pngenc ! multifilesink location=frame-%02d.png
 * ]| decodes the two latent frames of a TAEF2 latent file into two 832x480 PNG files.
 * |[
 * gst-launch-1.0 -e filesrc location=../shared/media/wan21_cheesecake.latent ! latentparse \
 *     ! vaedecode model-file=wan_2.1_vae.safetensors latent-space=normalized ! progressreport \
 *     ! video/x-raw,format=I420 ! x264enc ! mp4mux ! filesink location=cheesecake.mp4
 * ]| decodes 16 normalized Wan 2.1 latent frames (64x40) into 61 frames of 512x320 at 16 fps
 * with the Wan 2.1 VAE (ComfyUI's `wan_2.1_vae.safetensors`, or the diffusers `vae/` file);
 * `tests/data/wan21_b4.orig.safetensors`, a random-weight model of the same shape, runs the
 * same pipeline in seconds. `pipelines/wan-to-mp4.sh` wraps it. progressreport prints the
 * position of the frames decoded and the video's duration as they come; `-e` makes Ctrl-C
 * end the stream, so that mp4mux writes a playable file of the frames decoded so far.
 * |[
 * gst-launch-1.0 -e filesrc location=wan21_cheesecake.latent ! latentparse \
 *     ! vaedecode backend=cuda model-file=wan_2.1_vae.safetensors latent-space=normalized \
 *     ! "video/x-raw(memory:CUDAMemory),format=NV12" ! nvh264enc ! h264parse \
 *     ! mp4mux ! filesink location=cheesecake.mp4
 * ]| the same decode on the GPU, the frames handed to NVENC in CUDA memory without leaving
 * the GPU. `nvh264enc` (GStreamer 1.22's nvcodec plugin) takes NV12, I420, RGBA and BGRA in
 * CUDA memory; the newer `nvcudah264enc` of 1.22 takes only NV12 and Y444 there.
 * |[
 * gst-launch-1.0 -e filesrc location=wan21_cheesecake.latent ! latentparse \
 *     ! vaedecode backend=hip device-id=0 model-file=wan_2.1_vae.safetensors \
 *     latent-space=normalized ! video/x-raw,format=I420 ! x264enc ! mp4mux \
 *     ! filesink location=cheesecake.mp4
 * ]| the same decode on an AMD GPU (e.g. a Ryzen AI Max, gfx1151) at bf16, the frames in
 * system memory.
 *
 * Since: 0.1
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstvaedecode.h"
#include "gstlatentinfo.h"
#include "gstvaemodelpath.h"

#include <gst/video/video.h>

#include "vae-session.h"

#ifdef HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#else
#define GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY "memory:CUDAMemory"
#endif

GST_DEBUG_CATEGORY (gst_vae_decode_debug);
#define GST_CAT_DEFAULT gst_vae_decode_debug

#define VAE_ERR_SIZE 512
#define VAE_OUTPUT_FORMATS "{ RGB, RGBA, RGBx, BGRx, BGRA, ARGB, ABGR, AYUV, I420, A420, NV12 }"
/* the same, those with alpha first: what a decoder with alpha offers */
#define VAE_OUTPUT_FORMATS_ALPHA "{ RGBA, BGRA, ARGB, ABGR, AYUV, A420, RGB, RGBx, BGRx, I420, NV12 }"
/* in CUDA memory, those GStreamer's CUDA allocator lays out (1.22's knows neither AYUV nor
 * A420: it asserts on them) */
#define VAE_CUDA_FORMATS "{ RGB, RGBA, RGBx, BGRx, BGRA, ARGB, ABGR, I420, NV12 }"
#define VAE_CUDA_FORMATS_ALPHA "{ RGBA, BGRA, ARGB, ABGR, RGB, RGBx, BGRx, I420, NV12 }"

typedef enum
{
  GST_VAE_BACKEND_AUTO,
  GST_VAE_BACKEND_CPU,
  GST_VAE_BACKEND_CUDA,
  GST_VAE_BACKEND_HIP,
} GstVaeBackend;

typedef enum
{
  GST_VAE_PRECISION_AUTO = VAE_PRECISION_AUTO,
  GST_VAE_PRECISION_FP32 = VAE_PRECISION_FP32,
  GST_VAE_PRECISION_TF32 = VAE_PRECISION_TF32,
  GST_VAE_PRECISION_FP16 = VAE_PRECISION_FP16,
  GST_VAE_PRECISION_BF16 = VAE_PRECISION_BF16,
} GstVaePrecision;

enum
{
  PROP_0,
  PROP_MODEL_FILE,
  PROP_MODEL_DIR,
  PROP_MODEL_FAMILY,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_PRECISION,
  PROP_LATENT_SPACE,
  PROP_CHUNK_FRAMES,
  PROP_TILE_SIZE,
  PROP_MAX_MEMORY,
  PROP_POST_MESSAGES,
};

#define DEFAULT_MODEL_FAMILY VAE_FAMILY_AUTO
#define DEFAULT_BACKEND GST_VAE_BACKEND_AUTO
#define DEFAULT_DEVICE_ID -1
#define DEFAULT_PRECISION GST_VAE_PRECISION_AUTO
#define DEFAULT_LATENT_SPACE GST_VAE_LATENT_SPACE_AUTO
#define DEFAULT_CHUNK_FRAMES 0
#define DEFAULT_TILE_SIZE 0
#define DEFAULT_MAX_MEMORY 0
#define DEFAULT_POST_MESSAGES TRUE

/* PTS, DURATION and DISCONT of one output frame, decoded or still to come */
typedef struct
{
  GstClockTime pts, duration;
  gboolean discont;
} GstVaeStamp;

struct _GstVaeDecode
{
  GstBaseTransform parent;

  /* properties */
  gchar *model_file;
  gchar *model_dir;
  enum vae_family model_family;
  GstVaeBackend backend_type;
  gint device_id;
  GstVaePrecision precision;
  GstVaeLatentSpace latent_space;
  guint chunk_frames;
  guint tile_size;
  guint64 max_memory;
  gboolean post_messages;

  /* from start to stop */
  gboolean started;             /* the properties start() reads are fixed (object lock) */
  gchar *loaded_file;           /* the model-file that start() loaded, or the model path's */
  gchar **model_dirs;           /* without a model-file: the model path to choose from */
  struct vae_model *model;
  vae_backend_t *backend;
  gboolean cuda_output;         /* the backend runs in cuda_ctx (object lock) */
#ifdef HAVE_GST_CUDA
  GstCudaContext *cuda_ctx;     /* the pipeline's, shared through GstContext */
#endif

  /* from set_caps */
  struct vae_session *session;
  GstLatentInfo in_info;
  GstVideoInfo out_info;
  gboolean out_cuda;            /* the output caps are CUDA memory */
  float *latent;                /* one latent frame as f32 */
  GArray *stamps;               /* GstVaeStamp of each frame pushed latents give, not yet output */
  guint64 frames_in;            /* latent frames taken since the caps (for messages) */
  guint64 total_latents, total_frames;  /* the input's (latent-totals event; 0: unknown) */
  guint64 done_latents, done_frames;    /* taken and output since that event */
  guint64 stream_latents;       /* latent frames pushed in the current causal stream */
  GstClockTime ts_base;         /* frame n is at ts_base + n frames (NONE: the next latent's) */
  guint64 ts_frames;            /* frames stamped since ts_base */
  GstClockTime latency;         /* ours, from the caps (object lock) */
  GstClockTime position;        /* the end of the last frame pushed (object lock; NONE:
                                 * none since the start or a flush) */
  gboolean discont;             /* the next frame stamped is DISCONT */
  gboolean caps_error;          /* set_caps failed and said why */
  GstCaps *refused_caps;        /* the caps that failed, with an error posted: the pad offers
                                 * a refused sticky CAPS event again with every buffer */
  gboolean image_latents;       /* images (video=FALSE) into a causal video decoder */
  gint cancel;                  /* (atomic) a flush or the way to READY: stop the decode */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_LATENT_CAPS_STR));

/* CUDA memory first where the element can give it; transform_caps offers it only while the
 * backend runs on CUDA */
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (
#ifdef HAVE_GST_CUDA
        GST_VIDEO_CAPS_MAKE_WITH_FEATURES (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY,
            VAE_CUDA_FORMATS) "; "
#endif
        GST_VIDEO_CAPS_MAKE (VAE_OUTPUT_FORMATS)));

#define gst_vae_decode_parent_class parent_class
G_DEFINE_TYPE (GstVaeDecode, gst_vae_decode, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (vaedecode, "vaedecode", GST_RANK_PRIMARY,
    GST_TYPE_VAE_DECODE);

#define GST_TYPE_VAE_MODEL_FAMILY (gst_vae_model_family_get_type ())
/* the values, nicks and descriptions come from the families' files in model/ */
static GType
gst_vae_model_family_get_type (void)
{
  static GType type = 0;
  static GEnumValue values[VAE_FAMILY_COUNT + 1];

  if (g_once_init_enter (&type)) {
    gint f;

    for (f = 0; f < VAE_FAMILY_COUNT; f++)
      values[f] = (GEnumValue) {
      f, vae_family_description (f), vae_family_name (f)};
    g_once_init_leave (&type, g_enum_register_static ("GstVaeModelFamily",
            values));
  }
  return type;
}

#define GST_TYPE_VAE_BACKEND (gst_vae_backend_get_type ())
static GType
gst_vae_backend_get_type (void)
{
  static GType type = 0;
  static GEnumValue values[] = {
    {GST_VAE_BACKEND_AUTO, "CUDA, then HIP, when it is built and a GPU is "
          "present, else the CPU", "auto"},
    {GST_VAE_BACKEND_CPU, "CPU (oneDNN; fp32, bf16 with AVX512-BF16 or AMX)",
        "cpu"},
    {GST_VAE_BACKEND_CUDA, "CUDA (NVIDIA GPUs)", "cuda"},
    {GST_VAE_BACKEND_HIP, "HIP (AMD GPUs)", "hip"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    /* every backend stays listed so pipelines stay portable; say which are missing */
    if (!vae_backend_is_built (VAE_BACKEND_CUDA))
      values[GST_VAE_BACKEND_CUDA].value_name = "CUDA (NVIDIA GPUs; not built)";
    if (!vae_backend_is_built (VAE_BACKEND_HIP))
      values[GST_VAE_BACKEND_HIP].value_name = "HIP (AMD GPUs; not built)";
    g_once_init_leave (&type, g_enum_register_static ("GstVaeBackend", values));
  }
  return type;
}

#define GST_TYPE_VAE_PRECISION (gst_vae_precision_get_type ())
static GType
gst_vae_precision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_VAE_PRECISION_AUTO, "bf16 on GPUs that have it (fp16 on older ones); "
          "on the CPU bf16 where it computes bf16 natively (AVX512-BF16, AMX) "
          "and a probe at start measures its convolutions 1.25x as fast as "
          "fp32's or more, else fp32", "auto"},
    {GST_VAE_PRECISION_FP32, "fp32", "fp32"},
    {GST_VAE_PRECISION_TF32, "tf32 tensor cores, fp32 storage", "tf32"},
    {GST_VAE_PRECISION_FP16, "fp16 storage, fp32 accumulation", "fp16"},
    {GST_VAE_PRECISION_BF16, "bf16 storage, fp32 accumulation", "bf16"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstVaePrecision",
            values));
  return type;
}

static void
gst_vae_decode_clear_stream (GstVaeDecode * self)
{
  g_clear_pointer (&self->session, vae_session_free);
  g_clear_pointer (&self->latent, g_free);
  if (self->stamps)
    g_array_set_size (self->stamps, 0);
  self->frames_in = 0;
  self->stream_latents = 0;
}

/* start a backend of this type. CUDA runs in the pipeline's GstCudaContext (found or made
 * by gst_cuda_ensure_element_context, pushed around the init so that the backend adopts it),
 * which its CUDA memory output belongs to; without one (no driver, or GStreamer's CUDA
 * library not built in) the backend picks its device itself and the output is system
 * memory. Sets cuda_output. */
static vae_backend_t *
gst_vae_decode_open_backend (GstVaeDecode * self, enum vae_backend_type type,
    gint device, enum vae_precision precision, char *err, gsize err_size)
{
  vae_backend_t *backend;
  gboolean pushed = FALSE;

#ifdef HAVE_GST_CUDA
  if (type == VAE_BACKEND_CUDA) {
    /* (creating a context without the loaded library aborts the process) */
    if (!gst_cuda_load_library ())
      GST_DEBUG_OBJECT (self, "GStreamer's CUDA library found no driver");
    else if (!gst_cuda_ensure_element_context (GST_ELEMENT (self), device,
            &self->cuda_ctx))
      GST_DEBUG_OBJECT (self, "no GstCudaContext for device %d", device);
    else
      pushed = gst_cuda_context_push (self->cuda_ctx);
  }
#endif
  backend = vae_backend_init (type, device, precision, err, err_size);
#ifdef HAVE_GST_CUDA
  if (pushed)
    gst_cuda_context_pop (NULL);
  if (backend == NULL || !pushed)
    gst_clear_object (&self->cuda_ctx);
#endif
  GST_OBJECT_LOCK (self);
  self->cuda_output = backend != NULL && pushed;
  GST_OBJECT_UNLOCK (self);
  return backend;
}

/* load loaded_file and check it against the properties; FALSE after posting an error */
static gboolean
gst_vae_decode_load_model (GstVaeDecode * self)
{
  char err[VAE_ERR_SIZE] = "";
  struct vae_session_config check = { 0 };      /* the latents' size still unknown */
  enum vae_family family;

  GST_OBJECT_LOCK (self);
  family = self->model_family;
  check.space = (enum vae_space) self->latent_space;
  check.chunk_frames = MIN (self->chunk_frames, G_MAXINT);
  check.tile_size = MIN (self->tile_size, G_MAXINT);
  GST_OBJECT_UNLOCK (self);

  self->model = vae_model_load (self->loaded_file, family, err, sizeof (err));
  if (self->model == NULL) {
    if (g_file_test (self->loaded_file, G_FILE_TEST_EXISTS))
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not load model file: %s", err), (NULL));
    else
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("Could not load model file: %s", err), (NULL));
    return FALSE;
  }
  GST_INFO_OBJECT (self, "loaded %s: %s", self->loaded_file,
      self->model->description);
  /* what the properties alone decide fails here, in the state change, rather than at the
   * caps in the streaming thread: gst-launch-1.0 (1.22) misses an error posted there before
   * its main loop runs, and waits forever */
  if (!vae_session_check (self->model, &check, err, sizeof (err))) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot decode with %s: %s", self->loaded_file, err), (NULL));
    g_clear_pointer (&self->model, vae_model_free);
    return FALSE;
  }
  return TRUE;
}

/* without a model-file: the model path's decoder for latents of these caps, loaded unless it
 * is already; it is logged and posted as a `vaedecode-model` element message. Where upstream
 * sends its caps in its state change (latentparse in pull mode), a failure fails that. FALSE
 * after posting an error. */
static gboolean
gst_vae_decode_choose_model (GstVaeDecode * self, GstCaps * caps)
{
  gchar *path, *why, *warning, *error;
  GstStructure *s;

  /* neither a model-file nor a model path (said here rather than in start() where an
   * autoplugger tries us: see there) */
  if (self->loaded_file == NULL && self->model_dirs == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No model file: set the model-file property to a decoder "
            "(.safetensors or .pth), or model-dir or the " GST_VAE_MODEL_PATH_ENV
            " environment variable to directories of decoders."), (NULL));
    return FALSE;
  }
  if (self->model_dirs == NULL || caps == NULL || !gst_caps_is_fixed (caps))
    return TRUE;
  path = gst_vae_model_path_choose (self->model_dirs,
      gst_caps_get_structure (caps, 0), &why, &warning, &error);
  if (warning)
    GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND, ("%s", warning), (NULL));
  g_free (warning);
  if (path == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("%s", error), (NULL));
    g_free (error);
    return FALSE;
  }
  if (self->model != NULL && g_str_equal (path, self->loaded_file)) {
    g_free (path);
    g_free (why);
    return TRUE;
  }
  gst_vae_decode_clear_stream (self);
  g_clear_pointer (&self->model, vae_model_free);
  g_free (self->loaded_file);
  self->loaded_file = path;
  if (!gst_vae_decode_load_model (self)) {
    g_free (why);
    return FALSE;
  }
  GST_INFO_OBJECT (self, "model %s (%s): %s", path,
      vae_family_name (self->model->family), why);
  s = gst_structure_new ("vaedecode-model", "file", G_TYPE_STRING, path,
      "family", G_TYPE_STRING, vae_family_name (self->model->family),
      "reason", G_TYPE_STRING, why, NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
  g_free (why);
  return TRUE;
}

static gboolean
gst_vae_decode_start (GstBaseTransform * trans)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);
  char err[VAE_ERR_SIZE] = "";
  enum vae_backend_type type;
  enum vae_precision precision, in_effect;
  GstVaeBackend backend_type;
  gint device;

  /* from here on these properties are refused (set_property): the streaming thread reads
   * this copy of the file name */
  GST_OBJECT_LOCK (self);
  self->started = TRUE;
  if (self->model_file != NULL && self->model_file[0] != '\0')
    self->loaded_file = g_strdup (self->model_file);
  else
    self->model_dirs = gst_vae_model_path_dirs (self->model_dir);
  backend_type = self->backend_type;
  device = self->device_id;
  precision = (enum vae_precision) self->precision;
  GST_OBJECT_UNLOCK (self);

  /* No model at all: an error that fails the state change, except where an autoplugger
   * (decodebin2, parsebin) tries us in locked state. It would keep the error to itself (the
   * application would see "missing plug-in", the reason in the debug details only): there
   * the caps are refused with it once we are plugged (see the CAPS event). */
  if (self->loaded_file == NULL && self->model_dirs == NULL
      && !gst_element_is_locked_state (GST_ELEMENT (self))) {
    gst_vae_decode_choose_model (self, NULL);
    goto failed;
  }
  if (self->loaded_file == NULL && self->model_dirs == NULL)
    GST_INFO_OBJECT (self, "no model-file nor model path: the caps will be "
        "refused");
  else if (self->loaded_file == NULL)
    GST_INFO_OBJECT (self, "no model-file: the decoder will be chosen from "
        "the model path when the latents' caps come");
  else if (!gst_vae_decode_load_model (self))
    goto failed;

  /* auto: the first GPU backend that is built and starts (CUDA, then HIP), else the CPU
   * (whose only device is the default) */
  if (backend_type == GST_VAE_BACKEND_AUTO) {
    static const enum vae_backend_type gpus[] = { VAE_BACKEND_CUDA,
      VAE_BACKEND_HIP
    };
    guint i;

    type = VAE_BACKEND_CPU;
    for (i = 0; i < G_N_ELEMENTS (gpus) && self->backend == NULL; i++) {
      if (!vae_backend_is_built (gpus[i]))
        continue;
      self->backend = gst_vae_decode_open_backend (self, gpus[i], device,
          precision, err, sizeof (err));
      if (self->backend != NULL)
        type = gpus[i];
      else if (g_str_has_prefix (err, "no "))   /* no device, driver or runtime */
        GST_INFO_OBJECT (self, "backend auto: not on %s (%s)",
            vae_backend_type_name (gpus[i]), err);
      else
        GST_WARNING_OBJECT (self, "backend auto: the %s backend did not "
            "start (%s)", vae_backend_type_name (gpus[i]), err);
    }
    if (self->backend == NULL)
      self->backend = gst_vae_decode_open_backend (self, VAE_BACKEND_CPU, -1,
          precision, err, sizeof (err));
  } else {
    type = (enum vae_backend_type) (backend_type - GST_VAE_BACKEND_CPU);
    self->backend = gst_vae_decode_open_backend (self, type, device,
        precision, err, sizeof (err));
  }
  if (self->backend == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not start the %s backend: %s", vae_backend_type_name (type),
            err), (NULL));
    g_clear_pointer (&self->model, vae_model_free);
    goto failed;
  }
  /* on the bus, not only in the log: the decode is slower or less exact than asked for */
  in_effect = vae_backend_precision (self->backend);
  if (precision == VAE_PRECISION_AUTO)
    GST_ELEMENT_INFO (self, RESOURCE, SETTINGS,
        ("precision=auto: %s on the %s backend%s.",
            vae_precision_name (in_effect), vae_backend_name (self->backend),
            in_effect == VAE_PRECISION_FP32 ? "" :
            " (precision=fp32 decodes exactly as upstream does)"), (NULL));
  else if (precision != in_effect)
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("%s precision was asked for, but the %s backend computes in %s.",
            vae_precision_name (precision), vae_backend_name (self->backend),
            vae_precision_name (in_effect)), (NULL));
  GST_INFO_OBJECT (self, "backend %s, precision %s, output in %s",
      vae_backend_name (self->backend), vae_precision_name (in_effect),
      self->cuda_output ? "CUDA or system memory" : "system memory");
  self->ts_base = GST_CLOCK_TIME_NONE;
  self->discont = FALSE;
  self->total_latents = self->total_frames = 0;
  GST_OBJECT_LOCK (self);
  self->latency = 0;
  self->position = GST_CLOCK_TIME_NONE;
  GST_OBJECT_UNLOCK (self);
  return TRUE;

failed:
  GST_OBJECT_LOCK (self);
  self->started = FALSE;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&self->loaded_file, g_free);
  g_clear_pointer (&self->model_dirs, g_strfreev);
  return FALSE;
}

static gboolean
gst_vae_decode_stop (GstBaseTransform * trans)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);

  gst_vae_decode_clear_stream (self);
  gst_clear_caps (&self->refused_caps);
  /* the backend first: it runs in the CUDA context */
  g_clear_pointer (&self->backend, vae_backend_free);
  g_clear_pointer (&self->model, vae_model_free);
  g_clear_pointer (&self->loaded_file, g_free);
  g_clear_pointer (&self->model_dirs, g_strfreev);
  GST_OBJECT_LOCK (self);
  self->cuda_output = FALSE;
  self->started = FALSE;
  GST_OBJECT_UNLOCK (self);
#ifdef HAVE_GST_CUDA
  gst_clear_object (&self->cuda_ctx);
#endif
  return TRUE;
}

/* whether the output may be CUDA memory: while running, whether the backend runs in a
 * GstCudaContext; before, whether the backend property can give one */
static gboolean
gst_vae_decode_cuda_output (GstVaeDecode * self)
{
#ifdef HAVE_GST_CUDA
  gboolean ret;

  GST_OBJECT_LOCK (self);
  if (self->backend != NULL)
    ret = self->cuda_output;
  else
    ret = (self->backend_type == GST_VAE_BACKEND_AUTO
        || self->backend_type == GST_VAE_BACKEND_CUDA)
        && vae_backend_is_built (VAE_BACKEND_CUDA);
  GST_OBJECT_UNLOCK (self);
  return ret;
#else
  return FALSE;
#endif
}

static gboolean
gst_vae_decode_features_are_cuda (GstCapsFeatures * features)
{
  return features != NULL && !gst_caps_features_is_any (features)
      && gst_caps_features_contains (features,
      GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY);
}

/* multiply (or divide) an int or int range field by scale */
static void
gst_vae_decode_scale_field (GstStructure * s, const gchar * field,
    gboolean up, gint scale)
{
  const GValue *v = gst_structure_get_value (s, field);
  gint lo, hi;

  if (v == NULL)
    return;
  if (G_VALUE_HOLDS_INT (v)) {
    lo = hi = g_value_get_int (v);
  } else if (GST_VALUE_HOLDS_INT_RANGE (v)) {
    lo = gst_value_get_int_range_min (v);
    hi = gst_value_get_int_range_max (v);
  } else {
    gst_structure_remove_field (s, field);
    return;
  }
  if (up) {
    lo = MIN (lo, G_MAXINT / scale) * scale;
    hi = MIN (hi, G_MAXINT / scale) * scale;
  } else {
    lo = MAX ((lo + scale - 1) / scale, 1);
    hi = MIN (hi / scale, GST_LATENT_MAX_DIM);
  }
  if (lo > hi) {
    gst_structure_remove_field (s, field);
    gst_structure_set (s, field, G_TYPE_INT, 0, NULL);  /* matches nothing */
  } else if (lo == hi) {
    gst_structure_set (s, field, G_TYPE_INT, lo, NULL);
  } else {
    gst_structure_set (s, field, GST_TYPE_INT_RANGE, lo, hi, NULL);
  }
}

/* one way latents can meet the loaded decoder: the space the latent caps must name (AUTO:
 * any), their channels (0: any) and the output pixels per latent pixel */
typedef struct
{
  enum vae_space space;
  gint channels, scale;
} GstVaeLayout;

/* the layouts of latents with the caps structure s (NULL: any latent caps). The latent-space
 * property decides the space when it is set, else the caps' `space` field (absent: the
 * decoder's own). A space's patch sets the rest: latent_channels * patch^2 channels, frames
 * scale * patch times the latent grid (FLUX.2's normalized latents: 4 x 32 channels, 16x).
 * Before the model is loaded, every scale a decoder has. */
static guint
gst_vae_decode_layouts (GstVaeDecode * self, const GstStructure * s,
    GstVaeLayout layouts[3])
{
  const struct vae_model *model = self->model;
  enum vae_space spaces[3];
  GstVaeLatentSpace prop;
  const gchar *name;
  guint n = 0, i;

  if (model == NULL) {
    for (i = 0; i < 2; i++) {
      layouts[i].space = VAE_SPACE_AUTO;
      layouts[i].channels = 0;
      layouts[i].scale = 8 << i;
    }
    return 2;
  }

  GST_OBJECT_LOCK (self);
  prop = self->latent_space;
  GST_OBJECT_UNLOCK (self);
  name = s ? gst_structure_get_string (s, "space") : NULL;
  if (prop != GST_VAE_LATENT_SPACE_AUTO) {
    spaces[n++] = (enum vae_space) prop;
  } else if (s != NULL && !gst_structure_has_field (s, "space")) {
    spaces[n++] = VAE_SPACE_AUTO;
  } else if (g_strcmp0 (name, "raw") == 0) {
    spaces[n++] = VAE_SPACE_RAW;
  } else if (g_strcmp0 (name, "normalized") == 0) {
    spaces[n++] = VAE_SPACE_NORMALIZED;
  } else {
    /* any latent caps, or a space left open: each space */
    spaces[n++] = VAE_SPACE_AUTO;
    spaces[n++] = VAE_SPACE_RAW;
    spaces[n++] = VAE_SPACE_NORMALIZED;
  }

  for (i = 0; i < n; i++) {
    const gint patch = vae_model_space_patch (model, spaces[i]);

    /* with the property set, the caps' space does not matter */
    layouts[i].space = prop != GST_VAE_LATENT_SPACE_AUTO ? VAE_SPACE_AUTO :
        spaces[i];
    layouts[i].channels = model->latent_channels * patch * patch;
    layouts[i].scale = model->scale * patch;
  }
  return n;
}

static GstCaps *
gst_vae_decode_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);
  GstCaps *result = gst_caps_new_empty ();
  const gboolean cuda = gst_vae_decode_cuda_output (self);
  guint i, j;

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *in = gst_caps_get_structure (caps, i);
    const GValue *fps = gst_structure_get_value (in, "framerate");
    GstVaeLayout layouts[3];
    guint n;

    /* frames in CUDA memory only come from a backend that runs on CUDA */
    if (direction == GST_PAD_SRC && !cuda
        && gst_vae_decode_features_are_cuda (gst_caps_get_features (caps, i)))
      continue;
    /* latents to frames: the layouts these latent caps can have; frames to latents: every
     * layout (a structure that is a subset of one merged before is dropped) */
    n = gst_vae_decode_layouts (self, direction == GST_PAD_SINK ? in : NULL,
        layouts);

    for (j = 0; j < n; j++) {
      const GstVaeLayout *l = &layouts[j];
      GstStructure *out;

      if (direction == GST_PAD_SINK) {
        GstCaps *tmpl = gst_static_pad_template_get_caps (&src_template);
        out = gst_structure_copy (gst_caps_get_structure (tmpl, 0));
        gst_caps_unref (tmpl);
        if (self->model && self->model->out_channels == 4) {
          GstStructure *alpha = gst_structure_from_string ("x, format = "
              VAE_OUTPUT_FORMATS_ALPHA, NULL);

          gst_structure_set_value (out, "format",
              gst_structure_get_value (alpha, "format"));
          gst_structure_free (alpha);
        }
      } else {
        out = gst_structure_from_string (GST_LATENT_MEDIA_TYPE
            ", type = (string) { float32, float16, bfloat16 }", NULL);
        if (l->channels > 0)
          gst_structure_set (out, "channels", G_TYPE_INT, l->channels, NULL);
        else
          gst_structure_set (out, "channels", GST_TYPE_INT_RANGE, 1,
              GST_LATENT_MAX_DIM, NULL);
        if (l->space != VAE_SPACE_AUTO)
          gst_structure_set (out, "space", G_TYPE_STRING,
              l->space == VAE_SPACE_RAW ? "raw" : "normalized", NULL);
      }
      if (gst_structure_has_field (in, "width"))
        gst_structure_set_value (out, "width", gst_structure_get_value (in,
                "width"));
      if (gst_structure_has_field (in, "height"))
        gst_structure_set_value (out, "height", gst_structure_get_value (in,
                "height"));
      gst_vae_decode_scale_field (out, "width", direction == GST_PAD_SINK,
          l->scale);
      gst_vae_decode_scale_field (out, "height", direction == GST_PAD_SINK,
          l->scale);
      if (fps)
        gst_structure_set_value (out, "framerate", fps);
      else
        gst_structure_remove_field (out, "framerate");
      result = gst_caps_merge_structure (result, out);
    }
  }
  /* the same frames in CUDA memory, preferred, in the formats it can hold */
  if (direction == GST_PAD_SINK && cuda) {
    GstCaps *in_cuda = gst_caps_copy (result);
    GstStructure *formats = gst_structure_from_string ("x, format = "
        VAE_CUDA_FORMATS, NULL);
    GstStructure *alpha = gst_structure_from_string ("x, format = "
        VAE_CUDA_FORMATS_ALPHA, NULL);

    for (i = 0; i < gst_caps_get_size (in_cuda); i++)
      gst_structure_set_value (gst_caps_get_structure (in_cuda, i), "format",
          gst_structure_get_value (self->model
              && self->model->out_channels == 4 ? alpha : formats, "format"));
    gst_structure_free (formats);
    gst_structure_free (alpha);
    gst_caps_set_features_simple (in_cuda,
        gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, NULL));
    gst_caps_append (in_cuda, result);
    result = in_cuda;
  }

  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, result,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (result);
    result = tmp;
  }
  GST_DEBUG_OBJECT (self, "%s caps %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  return result;
}

static enum vae_pixel_format
gst_vae_decode_pixel_format (GstVideoFormat format)
{
  switch (format) {
    case GST_VIDEO_FORMAT_RGBA:
      return VAE_PIXEL_RGBA;
    case GST_VIDEO_FORMAT_RGBx:
      return VAE_PIXEL_RGBX;
    case GST_VIDEO_FORMAT_BGRx:
      return VAE_PIXEL_BGRX;
    case GST_VIDEO_FORMAT_BGRA:
      return VAE_PIXEL_BGRA;
    case GST_VIDEO_FORMAT_I420:
      return VAE_PIXEL_I420;
    case GST_VIDEO_FORMAT_NV12:
      return VAE_PIXEL_NV12;
    case GST_VIDEO_FORMAT_ARGB:
      return VAE_PIXEL_ARGB;
    case GST_VIDEO_FORMAT_ABGR:
      return VAE_PIXEL_ABGR;
    case GST_VIDEO_FORMAT_AYUV:
      return VAE_PIXEL_AYUV;
    case GST_VIDEO_FORMAT_A420:
      return VAE_PIXEL_A420;
    default:
      return VAE_PIXEL_RGB;
  }
}

/* latent caps whose channel count is not the decoder's for their space: name both counts,
 * and the space that would take these latents where the family has one (FLUX.2) */
static void
gst_vae_decode_channels_error (GstVaeDecode * self, const GstLatentInfo * info,
    enum vae_space space, gint channels)
{
  const struct vae_model *model = self->model;
  const gchar *names[] = { "auto", "raw", "normalized" };
  enum vae_space other;
  gint patch, other_channels;
  gchar *hint = NULL;

  /* auto is the decoder's own space */
  if (space == VAE_SPACE_AUTO)
    space = model->own_space;
  other = space == VAE_SPACE_NORMALIZED ? VAE_SPACE_RAW : VAE_SPACE_NORMALIZED;
  patch = vae_model_space_patch (model, other);
  other_channels = model->latent_channels * patch * patch;
  if (other_channels != channels)
    hint = g_strdup_printf (" for %s latents and %d for %s ones%s%s",
        names[space], other_channels, names[other],
        other_channels == info->channels ? ": set latent-space=" : "",
        other_channels == info->channels ? names[other] : "");
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("The latents have %d channels but the %s decoder in '%s' takes %d%s.",
          info->channels, vae_family_name (model->family), self->loaded_file,
          channels, hint ? hint : ""), (NULL));
  g_free (hint);
}

/* video latents ([B, C, T, H, W]: the caps' video=TRUE) given to an image decoder: merging
 * them into images would be silent garbage; name the video decoders that take this many channels */
static void
gst_vae_decode_video_error (GstVaeDecode * self, const GstLatentInfo * info)
{
  GString *names = g_string_new (NULL);
  gint f;

  for (f = VAE_FAMILY_AUTO + 1; f < VAE_FAMILY_COUNT; f++)
    if (vae_family_is_video (f)
        && vae_family_latent_channels (f) == info->channels)
      g_string_append_printf (names, "%s%s", names->len ? ", " : "",
          vae_family_name (f));
  GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
      ("These are video latents ([B, C, T, H, W], %d channels), but the %s "
          "decoder in '%s' decodes images. %s%s%s", info->channels,
          vae_family_name (self->model->family), self->loaded_file,
          names->len ? "Decode them with a video decoder that takes "
          "them: " : "No video decoder takes latents of this many channels.",
          names->str, names->len ? "." : ""), (NULL));
  g_string_free (names, TRUE);
}

/* the time of frame n at the caps' frame rate (which must not be 0/1) */
static GstClockTime
gst_vae_decode_frame_time (GstVaeDecode * self, guint64 n)
{
  return gst_util_uint64_scale (n, GST_SECOND * self->in_info.fps_d,
      self->in_info.fps_n);
}

static gboolean
gst_vae_decode_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);
  GstLatentInfo info;
  struct vae_session_config cfg;
  char err[VAE_ERR_SIZE] = "";
  enum vae_space space;
  gint patch, channels, scale, tile;
  GstClockTime latency;
  gboolean latency_changed, video;
  gchar *why;

  self->caps_error = TRUE;      /* until these caps are taken */
  if (!gst_latent_info_from_caps (&info, incaps, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Invalid latent caps: %s (%" GST_PTR_FORMAT ").", why, incaps), (NULL));
    g_free (why);
    return FALSE;
  }
  /* video: the caps' hint (latentparse: a 5-D tensor) */
  self->image_latents = FALSE;
  if (gst_structure_get_boolean (gst_caps_get_structure (incaps, 0), "video",
          &video)) {
    if (video && !vae_family_is_video (self->model->family)) {
      gst_vae_decode_video_error (self, &info);
      return FALSE;
    }
    /* images into a video decoder: each a clip of its own (as ComfyUI and
     * diffusers decode Qwen-Image's and Wan's images), never one video */
    self->image_latents = !video && self->model->frames_per_latent > 1;
  }
  /* the property names the space when set, else the caps, else the decoder's own; the
   * space's patch sets the channels and the frame size */
  space = (enum vae_space) (self->latent_space != GST_VAE_LATENT_SPACE_AUTO
      ? self->latent_space : info.space);
  patch = vae_model_space_patch (self->model, space);
  channels = self->model->latent_channels * patch * patch;
  scale = self->model->scale * patch;
  if (info.channels != channels) {
    gst_vae_decode_channels_error (self, &info, space, channels);
    return FALSE;
  }
  if (!gst_video_info_from_caps (&self->out_info, outcaps))
    return FALSE;
  self->out_cuda =
      gst_vae_decode_features_are_cuda (gst_caps_get_features (outcaps, 0));
  if (GST_VIDEO_INFO_WIDTH (&self->out_info) != info.width * scale
      || GST_VIDEO_INFO_HEIGHT (&self->out_info) != info.height * scale) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("%dx%d latents decode to %dx%d frames, but the output caps are "
            "%dx%d.", info.width, info.height, info.width * scale,
            info.height * scale, GST_VIDEO_INFO_WIDTH (&self->out_info),
            GST_VIDEO_INFO_HEIGHT (&self->out_info)), (NULL));
    return FALSE;
  }

  gst_vae_decode_clear_stream (self);
  cfg.channels = info.channels;
  cfg.height = info.height;
  cfg.width = info.width;
  cfg.space = space;
  cfg.chunk_frames = self->chunk_frames;
  cfg.tile_size = MIN (self->tile_size, G_MAXINT);
  cfg.max_bytes = self->max_memory;
  cfg.cancel = &self->cancel;
  self->session = vae_session_new (self->model, self->backend, &cfg, err,
      sizeof (err));
  if (self->session == NULL) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Cannot decode %dx%d latents with %d channels: %s", info.width,
            info.height, info.channels, err), (NULL));
    return FALSE;
  }
  /* what the memory made the session choose instead of what was asked (fewer latent
   * frames per step, tiles): exact all the same, slower */
  while (vae_session_take_notice (self->session, err, sizeof (err)))
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS, ("%s", err), (NULL));
  self->caps_error = FALSE;
  /* the frames go on from where they are, at the new caps' rate */
  if (GST_CLOCK_TIME_IS_VALID (self->ts_base) && self->in_info.fps_n > 0) {
    self->ts_base += gst_vae_decode_frame_time (self, self->ts_frames);
    self->ts_frames = 0;
  }
  self->in_info = info;
  self->latent = g_new (float, (gsize) info.channels * info.width *
      info.height);

  /* a chunk holds its first latent frame until chunk - 1 more have come, and LTX-2's frames
   * wait for lookahead later ones, each worth frames_per_latent frames of video (0: SVD's
   * whole clip, which has no bound) */
  latency = 0;
  if (info.fps_n > 0 && vae_session_chunk_frames (self->session) > 0)
    latency = gst_util_uint64_scale ((guint64) (vae_session_chunk_frames
            (self->session) - 1 + self->model->lookahead) *
        self->model->frames_per_latent, GST_SECOND * info.fps_d, info.fps_n);
  GST_OBJECT_LOCK (self);
  latency_changed = latency != self->latency;
  self->latency = latency;
  GST_OBJECT_UNLOCK (self);
  if (latency_changed) {
    GST_INFO_OBJECT (self, "latency %" GST_TIME_FORMAT,
        GST_TIME_ARGS (latency));
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
  }
  tile = vae_session_tile_size (self->session);
  GST_INFO_OBJECT (self, "decoding %dx%d latents (%d channels) into %dx%d %s "
      "frames, %d per step", info.width, info.height, info.channels,
      GST_VIDEO_INFO_WIDTH (&self->out_info),
      GST_VIDEO_INFO_HEIGHT (&self->out_info),
      GST_VIDEO_INFO_NAME (&self->out_info),
      vae_session_chunk_frames (self->session));
  if (tile > 0)
    GST_INFO_OBJECT (self, "tiles of at most %dx%d pixels (tile-size %u), "
        "peak %" G_GSIZE_FORMAT " bytes (%.1f MiB)", tile, tile,
        self->tile_size, vae_session_peak_bytes (self->session),
        vae_session_peak_bytes (self->session) / 1048576.0);
  else
    GST_INFO_OBJECT (self, "whole frames (tile-size %u), peak %"
        G_GSIZE_FORMAT " bytes (%.1f MiB)", self->tile_size,
        vae_session_peak_bytes (self->session),
        vae_session_peak_bytes (self->session) / 1048576.0);
  /* a tiled decode assembles its frames on the host: written into the CUDA memory's host
   * copy, which GstCudaMemory uploads when downstream maps it for CUDA */
  if (self->out_cuda)
    GST_INFO_OBJECT (self, "output in CUDA memory, %s", tile > 0 ?
        "through host memory (tiled decode)" : "written on the GPU");
  return TRUE;
}

/* system memory: downstream's pool or a video pool; CUDA memory: downstream's pool if it is
 * a CUDA pool of our context, else a new one (its buffers carry pitched rows and a video
 * meta) */
static gboolean
gst_vae_decode_decide_allocation (GstBaseTransform * trans, GstQuery * query)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);
  GstCaps *caps;
  GstVideoInfo info;
  GstBufferPool *pool = NULL;
  GstStructure *config;
  guint size, min = 0, max = 0;
  gboolean cuda;

  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL || !gst_video_info_from_caps (&info, caps))
    return FALSE;
  cuda = gst_vae_decode_features_are_cuda (gst_caps_get_features (caps, 0));
  if (cuda && !gst_vae_decode_cuda_output (self)) {
    GST_WARNING_OBJECT (self, "CUDA memory caps without a CUDA backend");
    return FALSE;
  }

  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, NULL, &min, &max);
#ifdef HAVE_GST_CUDA
  if (cuda && pool != NULL && !(GST_IS_CUDA_BUFFER_POOL (pool)
          && GST_CUDA_BUFFER_POOL (pool)->context == self->cuda_ctx)) {
    GST_DEBUG_OBJECT (self, "not using downstream's pool %" GST_PTR_FORMAT,
        pool);
    gst_clear_object (&pool);
  }
  if (cuda && pool == NULL)
    pool = gst_cuda_buffer_pool_new (self->cuda_ctx);
#endif
  if (pool == NULL)
    pool = gst_video_buffer_pool_new ();

  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, info.size, min, max);
  if (cuda || gst_query_find_allocation_meta (query, GST_VIDEO_META_API_TYPE,
          NULL))
    gst_buffer_pool_config_add_option (config,
        GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config (pool, config)) {
    config = gst_buffer_pool_get_config (pool);
    if (!gst_buffer_pool_config_validate_params (config, caps, info.size, min,
            max) || !gst_buffer_pool_set_config (pool, config)) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Could not configure the %s buffer pool for %" GST_PTR_FORMAT,
              cuda ? "CUDA" : "video", caps), (NULL));
      self->caps_error = TRUE;
      gst_object_unref (pool);
      return FALSE;
    }
  }
  /* the pool may have changed the size (a CUDA pool's rows are pitched) */
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
  gst_structure_free (config);
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_set_nth_allocation_pool (query, 0, pool, size, min, max);
  else
    gst_query_add_allocation_pool (query, pool, size, min, max);
  gst_object_unref (pool);

  return GST_BASE_TRANSFORM_CLASS (parent_class)->decide_allocation (trans,
      query);
}

/* at a frame rate, where the frames of the stream run from: the first latent's PTS, or the
 * segment's start when it has none. After that a latent's PTS only moves the frames on when it
 * lies more than a frame after the frames stamped so far (a gap in the input: a discontinuity);
 * jitter, and a latent that comes early (arrival times over RTP without a jitterbuffer), leave
 * them where they are: the output stays monotonic and gap-free. */
static void
gst_vae_decode_rebase (GstVaeDecode * self, GstClockTime pts)
{
  const GstSegment *segment = &GST_BASE_TRANSFORM (self)->segment;
  GstClockTime expected, frame;

  if (!GST_CLOCK_TIME_IS_VALID (self->ts_base)) {
    self->ts_base = pts;
    if (!GST_CLOCK_TIME_IS_VALID (pts))
      self->ts_base = segment->format == GST_FORMAT_TIME ? segment->start : 0;
    self->ts_frames = 0;
    return;
  }
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return;
  expected = self->ts_base + gst_vae_decode_frame_time (self, self->ts_frames);
  frame = gst_vae_decode_frame_time (self, self->ts_frames + 1) -
      gst_vae_decode_frame_time (self, self->ts_frames);
  if (pts > expected + frame) {
    GST_INFO_OBJECT (self, "discontinuity: a latent at %" GST_TIME_FORMAT
        ", %" GST_TIME_FORMAT " after the next frame's time %" GST_TIME_FORMAT
        "; the frames go on from there", GST_TIME_ARGS (pts),
        GST_TIME_ARGS (pts - expected), GST_TIME_ARGS (expected));
    self->ts_base = pts;
    self->ts_frames = 0;
    self->discont = TRUE;
  } else if (pts + frame < expected) {
    GST_INFO_OBJECT (self, "discontinuity: a latent at %" GST_TIME_FORMAT
        ", %" GST_TIME_FORMAT " before the next frame's time %" GST_TIME_FORMAT
        "; the frames go on at %" GST_TIME_FORMAT " to stay monotonic",
        GST_TIME_ARGS (pts), GST_TIME_ARGS (expected - pts),
        GST_TIME_ARGS (expected), GST_TIME_ARGS (expected));
  }
}

/* queue the stamps of the m frames that a latent frame with this PTS and DURATION gives: at a
 * frame rate, the next m frames of the stream (gst_vae_decode_rebase); at 0/1, the latent's
 * DURATION split evenly from its PTS (or nothing known) */
static void
gst_vae_decode_add_stamps (GstVaeDecode * self, GstClockTime pts,
    GstClockTime duration, guint m)
{
  guint j;

  if (self->in_info.fps_n > 0)
    gst_vae_decode_rebase (self, pts);
  for (j = 0; j < m; j++) {
    GstVaeStamp stamp = { GST_CLOCK_TIME_NONE, GST_CLOCK_TIME_NONE, FALSE };

    if (self->in_info.fps_n > 0) {
      const guint64 n = self->ts_frames + j;

      stamp.pts = self->ts_base + gst_vae_decode_frame_time (self, n);
      stamp.duration = gst_vae_decode_frame_time (self, n + 1) -
          gst_vae_decode_frame_time (self, n);
    } else if (GST_CLOCK_TIME_IS_VALID (duration)) {
      GstClockTime at = gst_util_uint64_scale_int (duration, j, m);

      stamp.duration = gst_util_uint64_scale_int (duration, j + 1, m) - at;
      if (GST_CLOCK_TIME_IS_VALID (pts))
        stamp.pts = pts + at;
    } else if (j == 0) {
      stamp.pts = pts;
    }
    if (j == 0)
      stamp.discont = self->discont;
    g_array_append_val (self->stamps, stamp);
  }
  self->ts_frames += m;
  self->discont = FALSE;
}

/* whether a failed decode was stopped by a flush or the way to READY (no error then) */
static gboolean
gst_vae_decode_interrupted (GstVaeDecode * self)
{
  if (!g_atomic_int_get (&self->cancel))
    return FALSE;
  GST_DEBUG_OBJECT (self, "decode interrupted");
  return TRUE;
}

/* the vaedecode-progress element message, after the last frame of a decode step */
static void
gst_vae_decode_post_progress (GstVaeDecode * self, const GstVaeStamp * last)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM (self);
  GstStructure *s;
  gboolean post;

  GST_OBJECT_LOCK (self);
  post = self->post_messages;
  GST_OBJECT_UNLOCK (self);
  if (!post)
    return;

  s = gst_structure_new ("vaedecode-progress",
      "latent-frames", G_TYPE_UINT64, vae_session_latents_in (self->session),
      "frames", G_TYPE_UINT64, vae_session_frames_out (self->session),
      "timestamp", G_TYPE_UINT64, last->pts,
      "stream-time", G_TYPE_UINT64, gst_segment_to_stream_time (&trans->segment,
          GST_FORMAT_TIME, last->pts),
      "running-time", G_TYPE_UINT64,
      gst_segment_to_running_time (&trans->segment, GST_FORMAT_TIME,
          last->pts), "duration", G_TYPE_UINT64, last->duration, "memory",
      G_TYPE_UINT64, (guint64) vae_session_peak_bytes (self->session), NULL);
  if (self->total_latents > 0)
    gst_structure_set (s, "latent-frames-total", G_TYPE_UINT64,
        self->total_latents, "frames-total", G_TYPE_UINT64, self->total_frames,
        "latent-frames-done", G_TYPE_UINT64, self->done_latents, "frames-done",
        G_TYPE_UINT64, self->done_frames, NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

static GstFlowReturn
gst_vae_decode_generate_output (GstBaseTransform * trans, GstBuffer ** outbuf)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);
  GstBufferPool *pool;
  GstVideoFrame frame;
  struct vae_frame dst = { 0 };
  GstMapFlags map_flags = GST_MAP_WRITE;
  GstVaeStamp stamp = { GST_CLOCK_TIME_NONE, GST_CLOCK_TIME_NONE, FALSE };
  GstFlowReturn ret;
  char err[VAE_ERR_SIZE] = "";
  gdouble kr = 0.299, kb = 0.114;
  guint i;

  *outbuf = NULL;
  if (self->session == NULL || vae_session_frames_ready (self->session) == 0)
    return GST_FLOW_OK;

  pool = gst_base_transform_get_buffer_pool (trans);
  if (pool == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("No buffer pool for the decoded frames."), (NULL));
    return GST_FLOW_ERROR;
  }
  if (!gst_buffer_pool_is_active (pool)
      && !gst_buffer_pool_set_active (pool, TRUE)) {
    gst_object_unref (pool);
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not activate the buffer pool."), (NULL));
    return GST_FLOW_ERROR;
  }
  ret = gst_buffer_pool_acquire_buffer (pool, outbuf, NULL);
  gst_object_unref (pool);
  if (ret != GST_FLOW_OK)
    return ret;

#ifdef HAVE_GST_CUDA
  /* CUDA memory of the backend's context is written on the GPU in place; a tiled decode,
   * whose frames are on the host, writes the memory's host copy (uploaded on demand) */
  if (self->out_cuda && vae_session_tile_size (self->session) == 0) {
    GstMemory *mem = gst_buffer_peek_memory (*outbuf, 0);

    dst.device = gst_is_cuda_memory (mem)
        && GST_CUDA_MEMORY_CAST (mem)->context == self->cuda_ctx;
    if (dst.device)
      map_flags |= GST_MAP_CUDA;
  }
#endif
  if (!gst_video_frame_map (&frame, &self->out_info, *outbuf, map_flags)) {
    gst_clear_buffer (outbuf);
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not map an output frame."),
        (NULL));
    return GST_FLOW_ERROR;
  }
  dst.format = gst_vae_decode_pixel_format (GST_VIDEO_FRAME_FORMAT (&frame));
  dst.width = GST_VIDEO_FRAME_WIDTH (&frame);
  dst.height = GST_VIDEO_FRAME_HEIGHT (&frame);
  for (i = 0; i < GST_VIDEO_FRAME_N_PLANES (&frame); i++) {
    dst.planes[i] = GST_VIDEO_FRAME_PLANE_DATA (&frame, i);
    dst.strides[i] = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, i);
  }
  if (GST_VIDEO_INFO_IS_YUV (&self->out_info)) {
    gst_video_color_matrix_get_Kr_Kb (self->out_info.colorimetry.matrix, &kr,
        &kb);
    dst.full_range =
        self->out_info.colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;
  }
  dst.kr = kr;
  dst.kb = kb;
  /* (at the end of an LTX-2 stream a pop decodes the next frames still in flight: a flush
   * may stop it) */
  if (!vae_session_pop_frame (self->session, &dst, err, sizeof (err))) {
    gst_video_frame_unmap (&frame);
    gst_clear_buffer (outbuf);
    if (gst_vae_decode_interrupted (self))
      return GST_FLOW_FLUSHING;
    GST_ELEMENT_ERROR (self, STREAM, DECODE, ("%s", err), (NULL));
    return GST_FLOW_ERROR;
  }
  gst_video_frame_unmap (&frame);
  self->done_frames++;

  /* every frame the session gives was stamped when its latent frame came */
  if (self->stamps->len > 0) {
    stamp = g_array_index (self->stamps, GstVaeStamp, 0);
    g_array_remove_index (self->stamps, 0);
  } else {
    GST_WARNING_OBJECT (self, "a decoded frame without a stamp");
  }
  GST_BUFFER_PTS (*outbuf) = stamp.pts;
  GST_BUFFER_DURATION (*outbuf) = stamp.duration;
  if (GST_CLOCK_TIME_IS_VALID (stamp.pts)) {
    GST_OBJECT_LOCK (self);
    self->position = stamp.pts + (GST_CLOCK_TIME_IS_VALID (stamp.duration) ?
        stamp.duration : 0);
    GST_OBJECT_UNLOCK (self);
  }
  if (stamp.discont)
    GST_BUFFER_FLAG_SET (*outbuf, GST_BUFFER_FLAG_DISCONT);
  if (vae_session_frames_ready (self->session) == 0)
    gst_vae_decode_post_progress (self, &stamp);
  return GST_FLOW_OK;
}

/* what the backend noticed during a decode that failed nothing (a GPU graph that could not
 * be recorded, with the cause), in the debug log */
static void
gst_vae_decode_log_notices (GstVaeDecode * self)
{
  char notice[VAE_ERR_SIZE];

  while (vae_session_take_notice (self->session, notice, sizeof (notice)))
    GST_WARNING_OBJECT (self, "%s", notice);
}

/* decode what is queued and push it: end of stream, new caps, or a DISCONT latent frame
 * that starts a new causal stream */
static GstFlowReturn
gst_vae_decode_drain (GstVaeDecode * self)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM (self);
  char err[VAE_ERR_SIZE] = "";
  GstFlowReturn ret = GST_FLOW_OK;
  GstBuffer *buf;

  if (self->session == NULL)
    return GST_FLOW_OK;
  self->stream_latents = 0;
  if (!vae_session_drain (self->session, err, sizeof (err))) {
    if (gst_vae_decode_interrupted (self))
      return GST_FLOW_FLUSHING;
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Could not decode the last latent frames: %s", err), (NULL));
    return GST_FLOW_ERROR;
  }
  gst_vae_decode_log_notices (self);
  while (ret == GST_FLOW_OK) {
    ret = gst_vae_decode_generate_output (trans, &buf);
    if (ret != GST_FLOW_OK || buf == NULL)
      break;
    ret = gst_pad_push (GST_BASE_TRANSFORM_SRC_PAD (trans), buf);
  }
  return ret;
}

static GstFlowReturn
gst_vae_decode_submit_input_buffer (GstBaseTransform * trans,
    gboolean is_discont, GstBuffer * input)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);
  const GstLatentInfo *info = &self->in_info;
  gsize need = gst_latent_info_frame_size (info);
  GstClockTime pts, duration;
  GstMapInfo map;
  char err[VAE_ERR_SIZE] = "";
  guint64 k;

  if (self->session == NULL) {
    gst_buffer_unref (input);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Received a latent buffer before the latent caps."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  is_discont = is_discont || GST_BUFFER_IS_DISCONT (input);
  /* (the base class does this in the submit_input_buffer we replace) */
  if (!gst_base_transform_reconfigure (trans)) {
    gst_buffer_unref (input);
    return GST_FLOW_NOT_NEGOTIATED;
  }

  /* a DISCONT latent buffer inside a video stream (causal, or SVD's clip) starts a new
   * one: the frames of the old one come out first (the first buffer after start or a flush
   * starts one anyway). The buffer's own flag: the base class passes is_discont on until a
   * frame leaves through it, which a chunk still filling or SVD's whole clip does not give */
  if (GST_BUFFER_IS_DISCONT (input) && (self->model->frames_per_latent > 1
          || self->model->clip_calls) && self->stream_latents > 0) {
    GstFlowReturn ret;

    GST_DEBUG_OBJECT (self, "DISCONT after %" G_GUINT64_FORMAT " latent "
        "frames: draining, then a new stream", self->stream_latents);
    ret = gst_vae_decode_drain (self);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (input);
      return ret;
    }
  }
  if (is_discont)
    self->discont = TRUE;

  if (!gst_buffer_map (input, &map, GST_MAP_READ)) {
    gst_buffer_unref (input);
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Could not map a latent buffer."),
        (NULL));
    return GST_FLOW_ERROR;
  }
  if (map.size != need) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Latent frame %" G_GUINT64_FORMAT " has %" G_GSIZE_FORMAT " bytes but "
            "the caps (%d x %d x %d %s) need %" G_GSIZE_FORMAT ".",
            self->frames_in, map.size, info->channels, info->height,
            info->width, gst_latent_dtype_to_string (info->dtype), need),
        (NULL));
    gst_buffer_unmap (input, &map);
    gst_buffer_unref (input);
    return GST_FLOW_ERROR;
  }
  vae_dtype_to_f32 (info->dtype, map.data, self->latent,
      (gsize) info->channels * info->width * info->height);
  gst_buffer_unmap (input, &map);
  pts = GST_BUFFER_PTS (input);
  duration = GST_BUFFER_DURATION (input);
  gst_buffer_unref (input);

  if (!vae_session_push (self->session, self->latent, err, sizeof (err))) {
    if (gst_vae_decode_interrupted (self))
      return GST_FLOW_FLUSHING;
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Could not decode latent frame %" G_GUINT64_FORMAT ": %s",
            self->frames_in, err), (NULL));
    return GST_FLOW_ERROR;
  }
  gst_vae_decode_log_notices (self);
  /* latent frame k of the stream gives 1 frame for k = 0, frames_per_latent after */
  k = vae_session_latents_in (self->session) - 1;
  gst_vae_decode_add_stamps (self, pts, duration,
      vae_model_frames_of_latent (self->model, k));
  self->stream_latents = k + 1;
  self->frames_in++;
  self->done_latents++;
  /* image latents into a causal video decoder: each is a one-frame stream, decoded now */
  if (self->image_latents) {
    self->stream_latents = 0;
    if (!vae_session_drain (self->session, err, sizeof (err))) {
      if (gst_vae_decode_interrupted (self))
        return GST_FLOW_FLUSHING;
      GST_ELEMENT_ERROR (self, STREAM, DECODE,
          ("Could not decode latent frame %" G_GUINT64_FORMAT ": %s",
              self->frames_in - 1, err), (NULL));
      return GST_FLOW_ERROR;
    }
  }
  return GST_FLOW_OK;
}

/* GstBaseTransform only negotiates an output pool for elements that have a transform
 * function; ours produces its output in generate_output and never calls this */
static GstFlowReturn
gst_vae_decode_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GST_ELEMENT_ERROR (trans, CORE, NOT_IMPLEMENTED,
      ("Internal error: vaedecode decodes in generate_output."), (NULL));
  return GST_FLOW_ERROR;
}

/* at EOS, after the drain: an input that ended before the latent frames it announced is
 * worth a warning (what came was decoded and pushed) */
static void
gst_vae_decode_check_complete (GstVaeDecode * self)
{
  if (self->done_latents >= self->total_latents)
    return;
  GST_ELEMENT_WARNING (self, STREAM, DECODE,
      ("The stream ended early: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
          " latent frames came, so %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
          " frames are missing; the %" G_GUINT64_FORMAT " frames decoded were "
          "pushed.", self->done_latents, self->total_latents,
          self->total_frames - MIN (self->done_frames, self->total_frames),
          self->total_frames, self->done_frames), (NULL));
}

static gboolean
gst_vae_decode_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      /* the EOS goes on even after an error (posted by the drain), as after a source's
       * fatal error: downstream finishes what it has (a muxer writes its index) */
      if (gst_vae_decode_drain (self) == GST_FLOW_OK)
        gst_vae_decode_check_complete (self);
      break;
    case GST_EVENT_CUSTOM_DOWNSTREAM:
      if (gst_latent_totals_event_parse (event, &self->total_latents,
              &self->total_frames)) {
        GST_DEBUG_OBJECT (self, "the input holds %" G_GUINT64_FORMAT " latent "
            "frames, %" G_GUINT64_FORMAT " frames", self->total_latents,
            self->total_frames);
        self->done_latents = self->done_frames = 0;
      }
      break;
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gboolean ret;

      gst_vae_decode_drain (self);
      gst_event_parse_caps (event, &caps);
      /* one error per cause */
      if (self->refused_caps && gst_caps_is_equal (caps, self->refused_caps)) {
        gst_event_unref (event);
        return FALSE;
      }
      if (!gst_vae_decode_choose_model (self, caps)) {
        /* An autoplugger (decodebin2, parsebin) tries us in locked state and sends upstream's
         * sticky events itself; it keeps our error to itself, and the application would see
         * "missing plug-in" with the reason in the debug details only. Taken for now: once we
         * are plugged, upstream pushes its caps again (its sticky event did not reach us
         * through its own pad), and they are refused then, with the error on the bus. */
        if (gst_element_is_locked_state (GST_ELEMENT (self))) {
          GST_DEBUG_OBJECT (self, "being autoplugged: the caps are refused "
              "when they come again");
          gst_event_unref (event);
          return TRUE;
        }
        gst_caps_replace (&self->refused_caps, caps);
        gst_event_unref (event);
        return FALSE;
      }
      caps = gst_caps_ref (caps);
      self->caps_error = FALSE;
      ret = GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
      /* not-negotiated always comes with an error that says why (upstream relies on it) */
      if (!ret && !self->caps_error)
        GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
            ("Could not negotiate: downstream takes no raw video for latents "
                "%" GST_PTR_FORMAT, caps), (NULL));
      /* (a downstream that took none may take them after a reconfigure) */
      gst_caps_replace (&self->refused_caps, !ret && self->caps_error ? caps :
          NULL);
      gst_caps_unref (caps);
      return ret;
    }
    case GST_EVENT_SEGMENT:{
      const GstSegment *segment;

      /* a new segment starts the frames afresh; the same one again (a payloader's repeat)
       * changes nothing */
      gst_event_parse_segment (event, &segment);
      if (!gst_segment_is_equal (segment, &trans->segment))
        self->ts_base = GST_CLOCK_TIME_NONE;
      break;
    }
    case GST_EVENT_FLUSH_START:
      /* (from the flushing thread, while the streaming thread may be decoding) */
      g_atomic_int_set (&self->cancel, 1);
      break;
    case GST_EVENT_FLUSH_STOP:
      g_atomic_int_set (&self->cancel, 0);
      if (self->session)
        vae_session_reset (self->session);
      g_array_set_size (self->stamps, 0);
      self->stream_latents = 0;
      self->ts_base = GST_CLOCK_TIME_NONE;
      self->discont = TRUE;
      /* after a seek, what is left of the input is not known */
      self->total_latents = self->total_frames = 0;
      GST_OBJECT_LOCK (self);
      self->position = GST_CLOCK_TIME_NONE;
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      break;
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* POSITION downstream of us: the end of the last frame pushed, in TIME or in frames
 * (DEFAULT) at the caps' rate. The base class answers the input's position, which runs a
 * step of decoding ahead (minutes on a long video at a large chunk-frames). FALSE where it
 * is not ours to answer. */
static gboolean
gst_vae_decode_query_position (GstVaeDecode * self, GstQuery * query)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM (self);
  GstFormat format;
  GstClockTime pos;
  gint64 value;

  gst_query_parse_position (query, &format, NULL);
  if (format != GST_FORMAT_TIME && format != GST_FORMAT_DEFAULT)
    return FALSE;
  GST_OBJECT_LOCK (self);
  if (trans->segment.format != GST_FORMAT_TIME
      || (format == GST_FORMAT_DEFAULT && self->in_info.fps_n <= 0)) {
    GST_OBJECT_UNLOCK (self);
    return FALSE;
  }
  /* (frames before a seek's target are decoded and dropped by the sink) */
  pos = self->position;
  if (!GST_CLOCK_TIME_IS_VALID (pos) || pos < trans->segment.start)
    pos = trans->segment.start;
  if (GST_CLOCK_TIME_IS_VALID (trans->segment.stop))
    pos = MIN (pos, trans->segment.stop);
  value = gst_segment_to_stream_time (&trans->segment, GST_FORMAT_TIME, pos);
  if (format == GST_FORMAT_DEFAULT && value >= 0)
    value = gst_util_uint64_scale (value, self->in_info.fps_n,
        GST_SECOND * self->in_info.fps_d);
  GST_OBJECT_UNLOCK (self);
  gst_query_set_position (query, format, value);
  return TRUE;
}

/* LATENCY: upstream's plus the frames a chunk holds back; POSITION: of the frames pushed;
 * CONTEXT: the CUDA context */
static gboolean
gst_vae_decode_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  GstVaeDecode *self = GST_VAE_DECODE (trans);
  GstClockTime min, max, ours;
  gboolean live;

  if (direction == GST_PAD_SRC && GST_QUERY_TYPE (query) == GST_QUERY_POSITION
      && gst_vae_decode_query_position (self, query))
    return TRUE;

#ifdef HAVE_GST_CUDA
  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT
      && gst_cuda_handle_context_query (GST_ELEMENT (self), query,
          self->cuda_ctx))
    return TRUE;
#endif
  if (direction != GST_PAD_SRC || GST_QUERY_TYPE (query) != GST_QUERY_LATENCY)
    return GST_BASE_TRANSFORM_CLASS (parent_class)->query (trans, direction,
        query);

  if (!gst_pad_peer_query (GST_BASE_TRANSFORM_SINK_PAD (trans), query))
    return FALSE;
  gst_query_parse_latency (query, &live, &min, &max);
  GST_OBJECT_LOCK (self);
  ours = self->latency;
  GST_OBJECT_UNLOCK (self);
  min += ours;
  if (GST_CLOCK_TIME_IS_VALID (max))
    max += ours;
  GST_DEBUG_OBJECT (self, "latency: ours %" GST_TIME_FORMAT ", total min %"
      GST_TIME_FORMAT " max %" GST_TIME_FORMAT, GST_TIME_ARGS (ours),
      GST_TIME_ARGS (min), GST_TIME_ARGS (max));
  gst_query_set_latency (query, live, min, max);
  return TRUE;
}

#ifdef HAVE_GST_CUDA
/* a CUDA context from the application or a neighbour (kept if we have one already) */
static void
gst_vae_decode_set_context (GstElement * element, GstContext * context)
{
  GstVaeDecode *self = GST_VAE_DECODE (element);
  gint device;

  GST_OBJECT_LOCK (self);
  device = self->device_id;
  GST_OBJECT_UNLOCK (self);
  gst_cuda_handle_set_context (element, context, device, &self->cuda_ctx);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}
#endif

/* the way to READY stops a decode between its steps, before the base class waits for the
 * streaming thread */
static GstStateChangeReturn
gst_vae_decode_change_state (GstElement * element, GstStateChange transition)
{
  GstVaeDecode *self = GST_VAE_DECODE (element);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    g_atomic_int_set (&self->cancel, 1);
  else if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    g_atomic_int_set (&self->cancel, 0);
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

static void
gst_vae_decode_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstVaeDecode *self = GST_VAE_DECODE (object);

  /* what start() and the caps read (GST_PARAM_MUTABLE_READY) stays as it is while running:
   * a change is refused, saying so on the bus */
  GST_OBJECT_LOCK (self);
  if (self->started && (pspec->flags & GST_PARAM_MUTABLE_READY)) {
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("The %s property cannot change while the decoder runs (PAUSED or "
            "PLAYING); the change is ignored. Set it in the READY or NULL "
            "state.", pspec->name), (NULL));
    return;
  }
  switch (prop_id) {
    case PROP_MODEL_FILE:
      g_free (self->model_file);
      self->model_file = g_value_dup_string (value);
      break;
    case PROP_MODEL_DIR:
      g_free (self->model_dir);
      self->model_dir = g_value_dup_string (value);
      break;
    case PROP_MODEL_FAMILY:
      self->model_family = g_value_get_enum (value);
      break;
    case PROP_BACKEND:
      self->backend_type = g_value_get_enum (value);
      break;
    case PROP_DEVICE_ID:
      self->device_id = g_value_get_int (value);
      break;
    case PROP_PRECISION:
      self->precision = g_value_get_enum (value);
      break;
    case PROP_LATENT_SPACE:
      self->latent_space = g_value_get_enum (value);
      break;
    case PROP_CHUNK_FRAMES:
      self->chunk_frames = g_value_get_uint (value);
      break;
    case PROP_TILE_SIZE:
      self->tile_size = g_value_get_uint (value);
      break;
    case PROP_MAX_MEMORY:
      self->max_memory = g_value_get_uint64 (value);
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_vae_decode_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstVaeDecode *self = GST_VAE_DECODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL_FILE:
      g_value_set_string (value, self->model_file);
      break;
    case PROP_MODEL_DIR:
      g_value_set_string (value, self->model_dir);
      break;
    case PROP_MODEL_FAMILY:
      g_value_set_enum (value, self->model_family);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, self->backend_type);
      break;
    case PROP_DEVICE_ID:
      g_value_set_int (value, self->device_id);
      break;
    case PROP_PRECISION:
      g_value_set_enum (value, self->precision);
      break;
    case PROP_LATENT_SPACE:
      g_value_set_enum (value, self->latent_space);
      break;
    case PROP_CHUNK_FRAMES:
      g_value_set_uint (value, self->chunk_frames);
      break;
    case PROP_TILE_SIZE:
      g_value_set_uint (value, self->tile_size);
      break;
    case PROP_MAX_MEMORY:
      g_value_set_uint64 (value, self->max_memory);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_vae_decode_finalize (GObject * object)
{
  GstVaeDecode *self = GST_VAE_DECODE (object);

  gst_vae_decode_stop (GST_BASE_TRANSFORM (self));
  g_array_unref (self->stamps);
  g_free (self->model_file);
  g_free (self->model_dir);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_vae_decode_class_init (GstVaeDecodeClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_vae_decode_set_property;
  gobject_class->get_property = gst_vae_decode_get_property;
  gobject_class->finalize = gst_vae_decode_finalize;
#ifdef HAVE_GST_CUDA
  /* GstCudaBufferPool allocates through the allocator this registers; GStreamer's CUDA
   * library does not register it itself (nvcodec's plugin does, when it is loaded) */
  gst_cuda_memory_init_once ();
#endif

  /**
   * GstVaeDecode:model-file:
   *
   * The decoder weights, a safetensors file or a PyTorch `.pth`/`.ckpt` (zip; the format
   * is told by the file's first bytes, not its name): an AutoencoderKL VAE (sd1, sd2, sdxl, sd3,
   * flux1, flux2) in the LDM/ComfyUI/BFL or the diffusers naming, standalone or as a
   * single-file checkpoint whose VAE tensors carry a `first_stage_model.` or `vae.` prefix
   * (the other tensors are ignored); a TAESD-family decoder (taesd, taesdxl, taesd3, taef1,
   * taef2) in the original, diffusers or ComfyUI naming; the Wan 2.1 or 2.2 VAE in the
   * original or diffusers naming; SeedVR2's VAE (seedvr2: its `ema_vae.pth` or ComfyUI's
   * `ema_vae_fp16.safetensors`); HunyuanVideo 1.5's VAE (hunyuanvideo1.5) in the original
   * or diffusers naming; a TAEHV decoder (taew2_1, taew2_2, taehv, taehv1_5,
   * taeltx_2, taecvx, taew2_2_super, taehv1_5_super); or SVD's temporal decoder (svd) in the
   * original (sgm) or diffusers naming. Encoder tensors are ignored; a decoder tensor the
   * family does not use is refused, by name. Loaded on the way to PAUSED; like model-family, backend, device-id and
   * precision, a change while the element runs is refused with a warning on the bus.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_FILE,
      g_param_spec_string ("model-file", "Model file",
          "Decoder weights (.safetensors or .pth); loaded on the way to PAUSED", NULL,
          flags));
  /**
   * GstVaeDecode:model-dir:
   *
   * Where to find the decoder when #GstVaeDecode:model-file is not set, as decodebin and
   * playbin leave it: directories separated by ':' (ComfyUI's `models/vae:models/vae_approx`,
   * say). Unset, the `GST_VAE_MODEL_PATH` environment variable gives them. When the latents'
   * caps come, the decoder is the file their `vae-name` field names (the VAE that the
   * ComfyUI workflow saved in a `.latent` file loaded: found in the first directory holding
   * it; ComfyUI's `taesd`, `taef1`... are `<name>_decoder.safetensors` or `.pth`), else the
   * only `.safetensors` or `.pth` decoder (a `.pth` beside a `.safetensors` of the same name
   * is the same decoder: not counted twice) in the directories that takes their channel count and, where the
   * caps say, is a video decoder or an image one (image latents that no image decoder takes
   * go to a causal video decoder of their channels, which decodes each as a one-frame clip).
   * None or several is an error that names what the directories hold, and the files refused
   * with the reason for each; a named VAE that is missing is a warning, and the choice goes
   * by the channels. A file whose real path (links resolved) lies outside the directories is
   * refused, and a `vae-name` with `..` as a path component or an absolute one is not
   * looked up. The choice is logged at INFO level and posted as an element message
   * `vaedecode-model` (fields `file`, `family`, `reason`).
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_DIR,
      g_param_spec_string ("model-dir", "Model directories",
          "Directories (':'-separated) to choose the decoder from when "
          "model-file is not set (default: $" GST_VAE_MODEL_PATH_ENV ")", NULL,
          flags));
  /**
   * GstVaeDecode:model-family:
   *
   * The decoder family; auto detects it from the file's keys and shapes. Files whose
   * shapes cannot tell decode the same either way, but converting latents out of the
   * decoder's own space needs the family named: AutoencoderKL files with 4 channels (sd1,
   * sd2 or sdxl) or 16 (sd3 or flux1) for normalized latents, TAESD files with 4 channels
   * (taesd or taesdxl) or 16 (taesd3 or taef1) and a 16-channel TAEHV (taew2_1, taehv or
   * taecvx) for raw ones. flux2 files are recognised by their BatchNorm
   * statistics. A named family is checked against the file.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_FAMILY,
      g_param_spec_enum ("model-family", "Model family",
          "Decoder family, or auto to detect it from the file",
          GST_TYPE_VAE_MODEL_FAMILY, DEFAULT_MODEL_FAMILY, flags));
  /**
   * GstVaeDecode:backend:
   *
   * Where the decoder runs. auto takes CUDA when the CUDA backend is built and starts (a
   * GPU and a driver are present), else HIP the same way (an AMD GPU and the HIP runtime),
   * and otherwise the CPU, logging why at INFO level (at WARNING level when a GPU is there
   * but the backend refused, e.g. the precision). Every backend is listed; one that this
   * build lacks is described as not built, and asking for it is an error, as is asking for
   * cuda without a GPU ("no CUDA device") or hip without an AMD GPU or the HIP runtime
   * ("no HIP device", "no HIP runtime").
   */
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend", "Device backend",
          GST_TYPE_VAE_BACKEND, DEFAULT_BACKEND, flags));
  /**
   * GstVaeDecode:device-id:
   *
   * The GPU of the CUDA or HIP backend. CUDA: -1 takes the CUDA context the pipeline
   * shares (another CUDA element's or the application's `gst.cuda.context`), else device
   * 0; a number takes that device, and a shared context only if it is of that device.
   * HIP: -1 is device 0. The CPU has only the default device.
   */
  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device id",
          "GPU of the CUDA or HIP backend (-1 = the pipeline's CUDA context, "
          "else 0)",
          -1, G_MAXINT16, DEFAULT_DEVICE_ID, flags));
  /**
   * GstVaeDecode:precision:
   *
   * Compute precision: how activations are stored and multiplied. Accumulation, norm
   * statistics and softmax stay in fp32 at every precision. auto is bf16 on GPUs that
   * have it (compute capability 8.0 and up, every AMD target), fp16 on older ones. A GPU
   * that lacks the precision asked for refuses to start, naming it (tf32 on AMD GPUs). The
   * CPU backend computes in fp32, or in bf16 between its convolutions when the CPU has
   * AVX512-BF16 or AMX and bf16 or auto is asked for (fp32 is upstream's output exactly); a
   * WARNING message on the bus says so when it computes in another precision than the one
   * asked for, and with auto an INFO message says which it chose. The precision in effect is
   * logged at INFO level.
   */
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_enum ("precision", "Precision", "Compute precision",
          GST_TYPE_VAE_PRECISION, DEFAULT_PRECISION, flags));
  /**
   * GstVaeDecode:latent-space:
   *
   * What the incoming latents are. auto takes the caps' `space` field when it is there,
   * and otherwise assumes the decoder's own input space (no conversion): raw for the
   * AutoencoderKL families and the Wan 2.1 VAE, normalized for TAESD and TAEHV. raw and
   * normalized convert with the family's constants, or fail with an error naming the
   * family when it has none. AutoencoderKL, normalized x: z = x / s for sd1 and sd2
   * (s = 0.18215) and sdxl (0.13025), z = x / s + shift for sd3 (1.5305, 0.0609) and
   * flux1 (0.3611, 0.1159); files of shared shapes need #GstVaeDecode:model-family for it.
   * flux2's normalized latents have 128 channels at half the latent resolution: each is
   * taken through the file's BatchNorm statistics (x * sqrt (var + 1e-4) + mean) and the
   * 2x2 patches unpatchified into 32 channels, so the caps have 128 channels and the frames
   * are 16 times the latent grid. Wan: normalized x becomes x / (1 / std) + mean; TAEHV: raw
   * z becomes (z - mean) / std for taew2_1 and taew2_2(_super) (a 16-channel TAEHV needs
   * model-family=taew2_1 for it), z x 0.476986 for taehv, z x 1.03682 for taehv1_5(_super); taeltx_2
   * and taecvx take normalized latents only.
   */
  g_object_class_install_property (gobject_class, PROP_LATENT_SPACE,
      g_param_spec_enum ("latent-space", "Latent space",
          "Space of the incoming latents (auto = the caps' space field, else "
          "the decoder's own)", GST_TYPE_VAE_LATENT_SPACE,
          DEFAULT_LATENT_SPACE, flags));
  /**
   * GstVaeDecode:chunk-frames:
   *
   * Latent frames decoded per step; 0 chooses: for a video decoder 2 on a GPU (its
   * layers at latent resolution fill the device better), 1 on the CPU, fewer where memory
   * does not allow it (without a WARNING: the choice was the element's). A larger chunk batches
   * frames and holds them until it is full or the stream ends, which the LATENCY query
   * reports. The frames are the same for every chunk size, except with svd: its temporal
   * blocks see the frames of one decode call only, so N decodes calls of N latent frames as
   * diffusers' decode (z, num_frames=N) (the pipelines' decode_chunk_size; the last call
   * shorter), with seams between calls as upstream has, and 0 decodes the whole clip as one
   * call once the stream ends (EOS or a DISCONT latent buffer), without seams. Its memory
   * then grows with the clip (every temporal GroupNorm spans all its frames); a clip whose
   * decode does not fit #GstVaeDecode:max-memory is refused with an error that names the
   * limit (set chunk-frames then). A chunk whose decode does not fit
   * #GstVaeDecode:max-memory (or the device) is halved until it fits, then, for the decoders
   * that tile, tiles are used, with a WARNING message that names the choice and the cause
   * (the frames are the same); svd's chunk is never changed.
   */
  g_object_class_install_property (gobject_class, PROP_CHUNK_FRAMES,
      g_param_spec_uint ("chunk-frames", "Chunk frames",
          "Latent frames decoded per step (0 = automatic)", 0, 256,
          DEFAULT_CHUNK_FRAMES, flags));
  /**
   * GstVaeDecode:tile-size:
   *
   * The largest tile edge, in output pixels, for decoding an AutoencoderKL (sd1, sd2, sdxl,
   * sd3, flux1, flux2, hunyuanimage2.1, qwenimage2.1), DC-AE, Wan, SeedVR2, HunyuanVideo 1.5 or
   * LTX-2 frame in tiles: 0, or 16 and up (a tile as large as the frame decodes it whole).
   * 0 decodes whole frames unless they do not fit in #GstVaeDecode:max-memory,
   * and then halves the tile edge from half the frame's until the tiles fit (a WARNING
   * message says so, naming the tile and the cause). The tiling is exact: the
   * GroupNorm statistics and the mid-block attention are computed over the whole frame, and
   * each layer reads a one-pixel border from its neighbours' stored results, so a tiled
   * frame equals the untiled one to rounding. No overlap is needed, hence there is no
   * tile-overlap property. Smaller tiles lower the peak memory (the activations of one tile
   * instead of a whole frame, plus what the global statistics and the borders keep) and
   * cost some time; tiled frames are decoded one per step (#GstVaeDecode:chunk-frames 1).
   * The other decoders decode whole frames and refuse a tile-size other than 0. The tile
   * size in use and the planned peak memory are logged (GST_DEBUG=vaedecode:4) when the caps
   * are set.
   */
  g_object_class_install_property (gobject_class, PROP_TILE_SIZE,
      g_param_spec_uint ("tile-size", "Tile size",
          "Largest tile edge in output pixels for AutoencoderKL, DC-AE, Wan, SeedVR2, "
          "HunyuanVideo 1.5 and LTX-2 decoders "
          "(0 = whole frames unless they exceed max-memory); exact, no overlap",
          0, G_MAXINT, DEFAULT_TILE_SIZE, flags));
  /**
   * GstVaeDecode:max-memory:
   *
   * The device memory, in bytes, a stream may plan for (weights, activations and state);
   * 0 means the device's memory (on the CPU, 7/8 of what is available when the stream starts;
   * a GPU's memory). Frames that do not fit are decoded in tiles small enough to fit, where
   * the decoder tiles (see #GstVaeDecode:tile-size); when even 16-pixel tiles do not fit,
   * or the decoder cannot tile, the caps are refused with an error that gives the memory
   * needed.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_MEMORY,
      g_param_spec_uint64 ("max-memory", "Max memory",
          "Device memory a stream may use, in bytes (0 = the device's memory); "
          "AutoencoderKL, Wan and SeedVR2 frames that exceed it are decoded in tiles", 0,
          G_MAXUINT64, DEFAULT_MAX_MEMORY, flags));
  /**
   * GstVaeDecode:post-messages:
   *
   * Post a `vaedecode-progress` element message after each decode step that gave frames
   * (see the element's description for its fields).
   */
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post a vaedecode-progress element message after each decode step",
          DEFAULT_POST_MESSAGES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "VAE latent decoder",
      "Codec/Decoder/Video", "Decodes diffusion-model latents into raw video "
      "frames with a VAE decoder", "gst-vaedecode developers");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, GST_VAE_DOC_URI);

#ifdef HAVE_GST_CUDA
  element_class->set_context = GST_DEBUG_FUNCPTR (gst_vae_decode_set_context);
#endif
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_vae_decode_change_state);
  trans_class->start = GST_DEBUG_FUNCPTR (gst_vae_decode_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_vae_decode_stop);
  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR (gst_vae_decode_transform_caps);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_vae_decode_set_caps);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_vae_decode_decide_allocation);
  trans_class->submit_input_buffer =
      GST_DEBUG_FUNCPTR (gst_vae_decode_submit_input_buffer);
  trans_class->generate_output =
      GST_DEBUG_FUNCPTR (gst_vae_decode_generate_output);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_vae_decode_sink_event);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_vae_decode_transform);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_vae_decode_query);
  trans_class->passthrough_on_same_caps = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_VAE_MODEL_FAMILY, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_VAE_BACKEND, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_VAE_PRECISION, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_VAE_LATENT_SPACE, 0);

  GST_DEBUG_CATEGORY_INIT (gst_vae_decode_debug, "vaedecode", 0,
      "VAE latent decoder");
}

static void
gst_vae_decode_init (GstVaeDecode * self)
{
  self->model_family = DEFAULT_MODEL_FAMILY;
  self->backend_type = DEFAULT_BACKEND;
  self->device_id = DEFAULT_DEVICE_ID;
  self->precision = DEFAULT_PRECISION;
  self->latent_space = DEFAULT_LATENT_SPACE;
  self->chunk_frames = DEFAULT_CHUNK_FRAMES;
  self->tile_size = DEFAULT_TILE_SIZE;
  self->max_memory = DEFAULT_MAX_MEMORY;
  self->post_messages = DEFAULT_POST_MESSAGES;
  self->stamps = g_array_new (FALSE, FALSE, sizeof (GstVaeStamp));
}
