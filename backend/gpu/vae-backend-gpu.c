// The GPU backend: the same graphs as the CPU backend on an NVIDIA GPU (CUDA) or an AMD GPU (HIP),
// from this one source compiled once per vendor against the vendor header kernels/vae-gpu.h
// (CUDA spelling; the HIP build renames its external names, so both live in one library), in
// NHWC with channels padded to 16 (kernels/vae-kernels.h), at fp32, tf32, fp16 or bf16 storage
// with f32 accumulation.
// Every activation lives in one device arena planned from tensor lifetimes at prepare
// (vae-plan.c), so the peak is known before the first frame; converted weights are shared by the
// graphs of one backend (the steps of a stream). All work goes to one stream. Each convolution's
// tile configuration is chosen at prepare by timing every variant on the layer's real shape, and
// the choice is remembered for that shape. The first compute of a graph runs its launches
// directly; the second records them into a graph that later computes replay (except a compute
// that starts a replicating causal conv's history or a cross-fade's stream (blending nothing yet),
// which differs from the next ones, and every compute of a graph with a causal attention, whose
// key/value cache, in the state, moves as it grows and is read up to where this compute's frames
// end). Where it runs (a CUDA context, a HIP device) is the vendor header's vae_gpu_place, made
// current around every call, so any thread may call it. Neither runtime is needed to load the
// plugin: CUDA's is linked statically and finds the driver at run time, HIP's is loaded at run time
// (vae-hip-loader.c): without a GPU or runtime, init fails with a message and nothing else.
// Cancellation: a graph with a cancel flag (vae_graph.cancel) is launched directly a node at a
// time, one node ahead of the device: before launching node i the host waits for node i - 2 to
// finish (an event after each node), then reads the flag; set, it launches nothing more, waits
// for node i - 1, and the compute fails as interrupted, so it stops within about two nodes' time.
// A recorded graph is one submission that nothing can stop once launched: the flag is read only
// before it, so such a graph is recorded only when its last direct compute took at most
// GPU_REPLAY_MAX_S, 0.1 s (VAE_GPU_REPLAY_MAX_S=s at prepare: another bound), which keeps
// replays for small frames, where the launches cost most.

#include "vae-backend-impl.h"
#include "vae-kernels.h"
#include "vae-plan.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GPU_ALIGN      256
#define GPU_TIME_RUNS  3   // timed runs of each conv variant at prepare
#define GPU_REPLAY_MAX_S 0.1   // a graph with a cancel flag: the longest compute that is replayed
                               //   as one submission (which a cancel cannot stop); VAE_GPU_REPLAY_MAX_S

// a converted parameter shared by the graphs that use it: packed conv weights (k > 0) or an f32
// vector padded with zeros to `count` elements (k == 0)
struct gpu_weights {
    const float *         src;            // the model's tensor: its data and name (the pair identifies it: a
    const char *          name;           //   model may free its data once graphs are prepared)
    int                   k, kt;
    bool                  up;
    size_t                count;
    void *                data;
    int                   refs;
    struct gpu_weights * next;
};

// the conv variant chosen for a layer shape
struct gpu_choice {
    int                  key[12];
    int                  variant;
    struct gpu_choice * next;
};

struct gpu_context {
    struct vae_gpu_place  place;          // the device (and CUDA context) everything runs in
    int                   device, cc;     // cc: as vae_gpu_conv_variants takes it (vae_gpu_device_info)
    int                   warp;           // lanes per warp (wave)
    size_t                total_bytes;
    cudaStream_t          stream;
    cudaEvent_t           fence[2];       // after nodes of even and odd index (computes with a cancel flag)
    struct gpu_weights * weights;
    struct gpu_choice *  choices;
    char                  name[320];
};

// what one node needs at run time
struct gpu_node {
    struct vae_gpu_act    act;            // its output
    struct gpu_weights * w, *bias, *gamma, *beta;
    int                   variant;        // convolutions
    const struct vae_tensor * norm;       // a convolution: the RMS norm its epilogue computes (gpu_fusable_norm)
    bool                  norm_apart;     //   to the norm's own block (the conv's output kept), not over its own
    const struct vae_tensor * gn;         // a convolution: the GroupNorm its epilogue gives statistics (gpu_fusable_gn)
    bool                  fused;          // an RMS norm its convolution computes: nothing of its own to launch; a
                                          //   GroupNorm whose statistics it gives: the apply alone
    bool                  convert;        // inputs: converted to the activation layout (not only statistics)
};

struct gpu_graph {
    void *             mem;              // one allocation: arena, scratch, statistics, input staging
    size_t             mem_bytes;
    size_t             arena_bytes;
    void *             scratch;          // attention and GroupNorm partials (the op running now)
    float *            stats;            // GroupNorm statistics of the op running now
    float **           in_dev;           // per input: f32 NCHW on the device
    float **           in_host;          // per input: pinned f32 NCHW
    size_t *           in_floats;
    struct gpu_node * nodes;
    void *             stage;            // what read_frame and read_output stage for the host (grows, kept)
    size_t             stage_bytes;
    int                computes;         // so far: the first runs directly, the second captures
    double             direct_s;         // seconds of the last direct compute that ran to its end (-1: none)
    double             replay_max_s;     // with a cancel flag, recorded only when direct_s is at most this
    cudaGraphExec_t    exec;
    const void *       exec_state;       // the state the recorded graph reads and writes
    bool               no_graph;         // recording failed, VAE_GPU_NO_GRAPHS=1, or a causal attention (its
                                         //   cache moves and grows): launch directly
    cudaEvent_t *      marks;            // profiling (g->node_ms): n_nodes + 1 events, made at its first compute
};

// a causal attention's slot: the qkv rows of `held` frames (frame: the bytes of one), room for cap
struct gpu_kv {
    int64_t c, hw;
    int     held, cap;
    size_t  frame;
};

// by slot: the remembered frames of each causal conv, [kt - 1, H, W, cin_p] in the storage type (a
// slot that no compute has written since the reset holds zeros, or for a replicating op nothing
// yet), and the input frames it has seen; or a delay's d frames, or a cross-fade's (which hold
// nothing until written); or a causal attention's cache (kv[slot].c > 0), which grows up to
// `limit` bytes of the whole state and is given back at a reset. end: the stream's latent frames,
// -1 while not known
struct vae_state {
    int             n_slots;
    size_t *        bytes;
    void **         data;
    bool *          written;
    int64_t *       seen;
    struct gpu_kv * kv;
    size_t          limit;
    int64_t         end;
    char            error[200];  // why the last reset failed (state_reset returns nothing): computes refuse it
};

#define GPU_TRY(call, what)                                                                       \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            snprintf(err, err_size, VAE_GPU_VENDOR " error %s: %s (%s)", what, cudaGetErrorString(e_), \
                     cudaGetErrorName(e_));                                                        \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

static bool gpu_env(const char * name) {
    const char * v = getenv(name);
    return v && v[0] == '1';
}

// ---- context ----------------------------------------------------------------------------------

// makes the backend's context current (false, with a message, when the driver refuses: then
// nothing is pushed and gpu_leave must not be called); drops an error that an earlier call on
// this thread left in the runtime's last-error slot, so that the launchers' cudaGetLastError
// blames no op of ours for it (every call made inside is checked where it is made)
static bool gpu_enter(struct gpu_context * ctx, char * err, size_t err_size) {
    if (!vae_gpu_place_enter(&ctx->place, err, err_size)) {
        return false;
    }
    (void) cudaGetLastError();
    return true;
}

// and the other way: an error of ours (every one is reported where it happened) is not left in
// that slot for the caller's next runtime call to find (on an H200, a prepare refused in a
// destroyed context left cudaErrorDeviceUninitialized to the next kernel launched after it)
static void gpu_leave(struct gpu_context * ctx) {
    (void) cudaGetLastError();
    vae_gpu_place_leave(&ctx->place);
}

static const char * gpu_get_name(vae_backend_t * backend) {
    return ((struct gpu_context *) backend->context)->name;
}

static void gpu_free(vae_backend_t * backend) {
    struct gpu_context * ctx = backend->context;
    if (gpu_enter(ctx, NULL, 0)) {
        for (int i = 0; i < 2; i++) {
            if (ctx->fence[i]) {
                cudaEventDestroy(ctx->fence[i]);
            }
        }
        cudaStreamDestroy(ctx->stream);
        gpu_leave(ctx);
    }
    for (struct gpu_choice * c = ctx->choices, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(ctx);
    free(backend);
}

// ---- shapes -----------------------------------------------------------------------------------

static struct vae_gpu_act gpu_act_of(const struct vae_tensor * t) {
    struct vae_gpu_act a = { NULL, (int) t->ne[0], (int) t->ne[1], vae_gpu_cpad((int) t->ne[1]), (int) t->ne[2],
                             (int) t->ne[3] };
    return a;
}

static size_t gpu_act_bytes(const struct vae_gpu_act * a, enum vae_precision p) {
    return (size_t) a->n * a->h * a->w * a->cp * vae_gpu_elem_bytes(p);
}

// a causal conv's last kt - 1 input frames, a delay's d, a cross-fade's d
static size_t gpu_state_bytes_of(const struct vae_tensor * t, enum vae_precision p) {
    struct vae_gpu_act a = gpu_act_of(t->src[0]);
    a.n                  = t->op == VAE_OP_DELAY       ? t->i[1]
                           : t->op == VAE_OP_CROSSFADE ? t->i[3]
                                                       : (int) t->src[1]->ne[2] - 1;
    return gpu_act_bytes(&a, p);
}

static size_t gpu_align(size_t n) {
    return (n + GPU_ALIGN - 1) / GPU_ALIGN * GPU_ALIGN;
}

// ---- weights ----------------------------------------------------------------------------------

static void gpu_weights_put(struct gpu_context * ctx, struct gpu_weights * w) {
    if (!w || --w->refs > 0) {
        return;
    }
    for (struct gpu_weights ** p = &ctx->weights; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    cudaFree(w->data);
    free(w);
}

// the device bytes of a converted parameter (gpu_weights_get's k and count)
static size_t gpu_weights_bytes(int k, size_t count, enum vae_precision p) {
    return k ? count * vae_gpu_elem_bytes(p) : count * sizeof(float);
}

// conv weights packed for (k, kt, up) when k > 0, else an f32 vector of `count` elements (the
// tensor's, then zeros): found among those already on the device, or converted and uploaded on
// the backend's stream (the legacy default stream is not ordered with it)
static struct gpu_weights * gpu_weights_get(vae_backend_t * backend, const struct vae_tensor * w, int k, int kt,
                                              bool up, size_t count, char * err, size_t err_size) {
    struct gpu_context * ctx = backend->context;
    for (struct gpu_weights * e = ctx->weights; e; e = e->next) {
        if (e->src == w->data && e->name == w->name && e->k == k && e->kt == kt && e->up == up && e->count == count) {
            e->refs++;
            return e;
        }
    }
    const int    cout  = (int) w->ne[0], cin = k ? (int) w->ne[1] : 0;
    const size_t bytes = gpu_weights_bytes(k, count, backend->precision);
    void *       host  = calloc(1, bytes ? bytes : 1);
    struct gpu_weights * e = calloc(1, sizeof(*e));
    cudaError_t           ce = host && e ? cudaSuccess : cudaErrorMemoryAllocation;
    if (ce == cudaSuccess) {
        if (k) {
            vae_gpu_conv_pack(w->data, cout, cin, k, kt, up, backend->precision, host);
        } else {
            memcpy(host, w->data, (size_t) (w->ne[0] * w->ne[1] * w->ne[2] * w->ne[3] * w->ne[4]) * sizeof(float));
        }
        ce = cudaMalloc(&e->data, bytes);
    }
    if (ce == cudaSuccess) {
        ce = cudaMemcpyAsync(e->data, host, bytes, cudaMemcpyHostToDevice, ctx->stream);
    }
    if (ce == cudaSuccess) {
        ce = cudaStreamSynchronize(ctx->stream); // (before host is freed)
    }
    free(host);
    if (ce != cudaSuccess) {
        snprintf(err, err_size, "could not put %s (%.1f MiB) on the device: %s", w->name ? w->name : "a weight",
                 bytes / 1048576.0, cudaGetErrorString(ce));
        if (e) {
            cudaFree(e->data);
        }
        free(e);
        return NULL;
    }
    e->src       = w->data;
    e->name      = w->name;
    e->k         = k;
    e->kt        = kt;
    e->up        = up;
    e->count     = count;
    e->refs      = 1;
    e->next      = ctx->weights;
    ctx->weights = e;
    return e;
}

// ---- convolutions -----------------------------------------------------------------------------

// what a conv's epilogue needs of GroupNorm gn to give its statistics (vae_gpu_conv_args.gn_groups)
static void gpu_conv_gn_args(struct vae_gpu_conv_args * a, const struct vae_tensor * gn) {
    a->gn_groups    = gn->i[0];
    a->gn_per_frame = gn->i[1] != 1;
    a->gn_eps       = gn->f[0];
}

// conv t's launch; a causal one reads the state's slot (NULL: at prepare, for the timing). A
// centred conv starting its stream (kt = 3) reads x from its second frame on, its history two
// copies of the first (gpu_launch puts them there): its taps read [x0, x0, x1, ...] as upstream's
// padding has them, and it gives one frame fewer
static struct vae_gpu_conv_args gpu_conv_args(const struct gpu_context * ctx, struct gpu_graph * cg,
                                               const struct vae_tensor * t, const vae_state_t * state, enum vae_precision p) {
    const struct gpu_node * node = &cg->nodes[t->index];
    struct vae_gpu_conv_args a    = { 0 };
    const bool               causal = t->op == VAE_OP_CAUSAL_CONV3D;
    a.x        = cg->nodes[t->src[0]->index].act;
    a.hist     = causal && state ? state->data[t->i[0]] : NULL;
    if (causal && (t->i[1] & VAE_CENTRED_START)) {
        a.x.data = (uint8_t *) a.x.data + (size_t) a.x.h * a.x.w * a.x.cp * vae_gpu_elem_bytes(p);
        a.x.n--;
    }
    a.weights  = node->w->data;
    a.bias     = node->bias ? node->bias->data : NULL;
    a.residual = t->src[3] ? cg->nodes[t->src[3]->index].act.data : NULL;
    a.y        = node->act;
    a.k        = (int) t->src[1]->ne[t->src[1]->n_dims - 1];
    a.kt       = t->op == VAE_OP_CAUSAL_CONV3D ? (int) t->src[1]->ne[2] : 1;
    a.up       = t->op == VAE_OP_UPSAMPLE_CONV2D;
    a.replicate = causal && (t->i[1] & VAE_CAUSAL_REPLICATE);
    a.reflect   = causal && (t->i[1] & VAE_CAUSAL_REFLECT);
    a.act      = t->act;
    if (node->norm) { // (the norm's output: the conv's own block, taken over in place by the plan, or its own)
        const struct gpu_node * nn = &cg->nodes[node->norm->index];
        a.norm       = true;
        a.norm_y     = node->norm_apart ? nn->act.data : NULL;
        a.norm_form  = node->norm->i[0];
        a.norm_eps   = node->norm->f[0];
        a.norm_gamma = nn->gamma ? nn->gamma->data : NULL;
        a.norm_beta  = nn->beta ? nn->beta->data : NULL;
        a.norm_act   = node->norm->act;
    }
    if (node->gn) { // (the statistics to where the GroupNorm's own pass puts them, the partials to scratch)
        gpu_conv_gn_args(&a, node->gn);
        a.gn_stats = cg->stats;
        a.gn_part  = cg->scratch;
    }
    a.variant  = node->variant;
    a.cc       = ctx->cc;
    a.warp     = ctx->warp;
    return a;
}

// whether a launch's error leaves the context usable: the launch refused before it ran (an argument,
// a configuration, or what the driver lacks, as a Hopper tile's tensor maps on an old driver)
static bool gpu_launch_refused(cudaError_t e) {
    return e == cudaErrorInvalidValue || e == cudaErrorInvalidConfiguration || e == cudaErrorNotSupported;
}

// the fastest of the n variants of conv a that can run it, each timed over GPU_TIME_RUNS runs after
// a warm-up on the arena (filled with a constant by prepare); a causal conv's state does not exist
// yet, so it reads zeros of the state's size (state_bytes). A variant whose warm-up launch is
// refused (gpu_launch_refused) is left out, said in `skipped` (the first such), unless every one
// is: then that refusal is the failure. After a failure a->variant is the variant that failed (-1:
// none had started)
static cudaError_t gpu_time_variants(struct gpu_context * ctx, struct vae_gpu_conv_args * a, enum vae_precision p,
                                      int n, size_t state_bytes, int * fastest, char * skipped, size_t skipped_size) {
    void *      hist  = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    cudaError_t e     = cudaEventCreate(&start);
    a->variant        = -1;
    if (e == cudaSuccess) {
        e = cudaEventCreate(&stop);
    }
    if (e == cudaSuccess && a->kt > 1) {
        e = cudaMalloc(&hist, state_bytes);
        if (e == cudaSuccess) {
            e = cudaMemsetAsync(hist, 0, state_bytes, ctx->stream);
        }
        a->hist = hist;
    }
    float       best    = -1.0f;
    cudaError_t refused = cudaSuccess;
    int         first   = -1;   // the first variant refused
    for (int v = 0; v < n && e == cudaSuccess; v++) {
        if (vae_gpu_conv_variant_work(a, p, v) <= 0.0) {
            continue;
        }
        a->variant = v;
        e          = vae_gpu_conv(a, p, ctx->stream);
        if (gpu_launch_refused(e)) {
            (void) cudaGetLastError();
            if (first < 0) {
                refused = e;
                first   = v;
                snprintf(skipped, skipped_size, "%s (%s: %s)", vae_gpu_conv_variant_name(p, v), cudaGetErrorName(e),
                         cudaGetErrorString(e));
            }
            e = cudaSuccess;
            continue;
        }
        if (e == cudaSuccess) {
            e = cudaEventRecord(start, ctx->stream);
        }
        for (int r = 0; r < GPU_TIME_RUNS && e == cudaSuccess; r++) {
            e = vae_gpu_conv(a, p, ctx->stream);
        }
        if (e == cudaSuccess) {
            e = cudaEventRecord(stop, ctx->stream);
        }
        if (e == cudaSuccess) {
            e = cudaEventSynchronize(stop);
        }
        float ms = 0.0f;
        if (e == cudaSuccess) {
            e = cudaEventElapsedTime(&ms, start, stop);
        }
        if (e == cudaSuccess && (best < 0.0f || ms < best)) {
            best     = ms;
            *fastest = v;
        }
    }
    if (start) {
        cudaEventDestroy(start);
    }
    if (stop) {
        cudaEventDestroy(stop);
    }
    cudaFree(hist);
    if (e == cudaSuccess && best < 0.0f && first >= 0) {
        a->variant = first;
        return refused;
    }
    return e;
}

// the variant of conv a that computes the fewest outputs, its tiles' padding included; of equals
// the one whose warps have the largest tiles, then the largest tile (the fewest shared-memory
// bytes per multiply); the narrow conv (on CUDA cores) only where it computes fewer
static int gpu_fit_variant(const struct vae_gpu_conv_args * a, enum vae_precision p, int n) {
    int    fit = 0, warp_area = 0, area = 0;
    double work = 0.0;
    for (int v = 0; v < n; v++) {
        const double w  = vae_gpu_conv_variant_work(a, p, v);
        int          bm = 0, bn = 0, warps = 1;
        vae_gpu_conv_variant_tile(p, v, &bm, &bn, &warps);
        const bool better = work == 0.0 || w < work ||
                            (w == work && bn > 0 &&
                             (bm * bn / warps > warp_area || (bm * bn / warps == warp_area && bm * bn > area)));
        if (w > 0.0 && better) {
            fit       = v;
            work      = w;
            warp_area = bn > 0 ? bm * bn / warps : 0;
            area      = bm * bn;
        }
    }
    return fit;
}

// the fastest variant for this conv's shape: remembered, or timed now on the arena (filled with a
// constant). VAE_GPU_CONV_VARIANT=v forces variant v where it can run the conv (tests cover each),
// =fit takes the one that computes the fewest outputs (gpu_fit_variant, untimed: the emulator's
// counts), and either takes that one where v cannot run the conv
static bool gpu_choose_variant(vae_backend_t * backend, struct gpu_graph * cg, const struct vae_tensor * t,
                                char * err, size_t err_size) {
    struct gpu_context *    ctx  = backend->context;
    struct gpu_node *       node = &cg->nodes[t->index];
    struct vae_gpu_conv_args a    = gpu_conv_args(ctx, cg, t, NULL, backend->precision);
    const int                n    = vae_gpu_conv_variants(backend->precision, ctx->cc);
    const char *             env  = getenv("VAE_GPU_CONV_VARIANT");
    if (node->norm && vae_gpu_conv_variant_work(&a, backend->precision, gpu_fit_variant(&a, backend->precision, n)) <= 0) {
        cg->nodes[node->norm->index].fused = false; // (no tile holds all its channels: the norm runs alone)
        node->norm                         = NULL;
        node->norm_apart                   = false;
        a                                  = gpu_conv_args(ctx, cg, t, NULL, backend->precision);
    }
    if (env && env[0]) {
        const bool fit = !strcmp(env, "fit");
        node->variant  = fit ? 0 : atoi(env);
        if (node->variant < 0 || node->variant >= n) {
            snprintf(err, err_size, "VAE_GPU_CONV_VARIANT=%s: the %s convolution has variants 0..%d, or fit", env,
                     vae_precision_name(backend->precision), n - 1);
            return false;
        }
        if (fit || vae_gpu_conv_variant_work(&a, backend->precision, node->variant) <= 0.0) {
            node->variant = gpu_fit_variant(&a, backend->precision, n);
        }
        return true;
    }
    // (every argument that decides which variants can run it: the edges too, which the Hopper tiles
    // refuse)
    const int key[12] = { a.x.n, a.x.cp, a.x.h, a.x.w, a.y.cp, a.k, a.kt, a.up, a.residual != NULL, a.norm,
                          a.gn_groups * 2 + a.gn_per_frame, a.replicate * 2 + a.reflect };
    for (struct gpu_choice * c = ctx->choices; c; c = c->next) {
        if (memcmp(c->key, key, sizeof(key)) == 0) {
            node->variant = c->variant;
            return true;
        }
    }
    node->variant = gpu_fit_variant(&a, backend->precision, n);
    if (n > 1) {
        const size_t      state = a.kt > 1 ? gpu_state_bytes_of(t, backend->precision) : 0;
        char              skipped[256] = "";
        const cudaError_t e = gpu_time_variants(ctx, &a, backend->precision, n, state, &node->variant, skipped,
                                                sizeof(skipped));
        if (skipped[0] && e == cudaSuccess) {
            snprintf(backend->notice, sizeof(backend->notice), VAE_GPU_VENDOR " refused the conv tile %s for %s: the "
                     "autotuner left it out", skipped, t->name ? t->name : "a convolution");
        }
        if (e != cudaSuccess) {
            snprintf(err, err_size, VAE_GPU_VENDOR " error timing %s for %s: %s (%s)",
                     a.variant >= 0 ? vae_gpu_conv_variant_name(backend->precision, a.variant) : "the conv variants",
                     t->name ? t->name : "a convolution", cudaGetErrorString(e), cudaGetErrorName(e));
            return false;
        }
    }
    struct gpu_choice * c = calloc(1, sizeof(*c));
    if (c) {
        memcpy(c->key, key, sizeof(key));
        c->variant   = node->variant;
        c->next      = ctx->choices;
        ctx->choices = c;
    }
    return true;
}

// ---- prepare ----------------------------------------------------------------------------------

// the profiling events of a graph of n nodes (in its context)
static void gpu_marks_free(struct gpu_graph * cg, int n) {
    for (int i = 0; cg->marks && i <= n; i++) {
        if (cg->marks[i]) {
            cudaEventDestroy(cg->marks[i]);
        }
    }
    free(cg->marks);
    cg->marks = NULL;
}

static void gpu_graph_release(vae_backend_t * backend, struct vae_graph * g) {
    struct gpu_context * ctx = backend->context;
    struct gpu_graph *   cg  = g->backend_data;
    // (a context that cannot be made current any more keeps what it holds)
    if (gpu_enter(ctx, NULL, 0)) {
        cudaStreamSynchronize(ctx->stream);
        for (int i = 0; cg->nodes && i < g->n_nodes; i++) {
            struct gpu_node * node = &cg->nodes[i];
            gpu_weights_put(ctx, node->w);
            gpu_weights_put(ctx, node->bias);
            gpu_weights_put(ctx, node->gamma);
            gpu_weights_put(ctx, node->beta);
        }
        for (int i = 0; cg->in_host && i < g->n_inputs; i++) {
            cudaFreeHost(cg->in_host[i]);
        }
        if (cg->exec) {
            cudaGraphExecDestroy(cg->exec);
        }
        gpu_marks_free(cg, g->n_nodes);
        cudaFree(cg->mem);
        cudaFree(cg->stage);
        gpu_leave(ctx);
    }
    free(cg->in_dev);
    free(cg->in_host);
    free(cg->in_floats);
    free(cg->nodes);
    free(cg->marks); // (still there when the context could not be entered)
    free(cg);
    g->backend_data = NULL;
    g->peak_bytes   = 0;
}

// what GroupNorm node t takes its statistics over: x, or with statistics over all frames (i[1] = 1)
// x as one frame of all its pixels, which NHWC frames already are in memory
static struct vae_gpu_act gpu_gn_stats_act(struct vae_gpu_act x, const struct vae_tensor * t) {
    if (t->i[1] == 1) {
        x.h *= x.n;
        x.n = 1;
    }
    return x;
}

// whether node t is a convolution of the implicit GEMM (vae_gpu_conv), not of a simpler kernel
static bool gpu_implicit_gemm(const struct vae_tensor * t) {
    return (t->op == VAE_OP_CONV2D || t->op == VAE_OP_UPSAMPLE_CONV2D || t->op == VAE_OP_CAUSAL_CONV3D) &&
           vae_conv_groups(t) == 1;
}

// the RMS norm (forms 0 and 1, no residual of its own; fusion on: vae_graph.fused) of conv t's
// output that t's epilogue can compute, or NULL: t's sole reader, whose output then takes over t's
// block in the plan (in place); or, t having other readers too, the next node, writing its own
// block (*apart) while t's output stays for the others
static const struct vae_tensor * gpu_fusable_norm(const struct vae_graph * g, const struct vae_tensor * t, bool * apart) {
    const struct vae_tensor * norm    = NULL;
    int                       readers = 0;
    for (int i = t->index + 1; g->fused && t != g->output && i < g->n_nodes; i++) {
        for (int s = 0; s < VAE_MAX_SRC; s++) {
            const struct vae_tensor * r = g->nodes[i];
            if (r->src[s] == t) {
                readers++;
                if (s == 0 && !norm && r->op == VAE_OP_RMS_NORM && (r->i[0] == 0 || r->i[0] == 1) && !r->src[3]) {
                    norm = r;
                }
            }
        }
    }
    *apart = readers > 1;
    return norm && (!*apart || norm->index == t->index + 1) ? norm : NULL;
}

// the GroupNorm (computing its own statistics; fusion on) right after conv t, of t's output, whose
// statistics t's epilogue can give from the tiles it writes, or NULL (cc, warp: the device's): the
// norm then reads its input once, to apply them
static const struct vae_tensor * gpu_fusable_gn(const struct vae_graph * g, const struct gpu_graph * cg,
                                                const struct vae_tensor * t, int cc, int warp, enum vae_precision p,
                                                size_t * part_bytes) {
    const struct vae_tensor * gn = t->index + 1 < g->n_nodes ? g->nodes[t->index + 1] : NULL;
    if (!g->fused || !gpu_implicit_gemm(t) || !gn || gn->op != VAE_OP_GROUP_NORM || gn->src[0] != t || gn->src[3]) {
        return NULL;
    }
    struct vae_gpu_conv_args a = { 0 };
    a.x    = cg->nodes[t->src[0]->index].act;
    a.y    = cg->nodes[t->index].act;
    a.k    = (int) t->src[1]->ne[t->src[1]->n_dims - 1];
    a.up   = t->op == VAE_OP_UPSAMPLE_CONV2D;
    a.cc   = cc;
    a.warp = warp;
    gpu_conv_gn_args(&a, gn);
    *part_bytes = vae_gpu_conv_gn_scratch(&a, p);
    return *part_bytes ? gn : NULL;
}

// a parameter a node reads on the device: gpu_weights_get's arguments and where it goes
struct gpu_param {
    const struct vae_tensor * w;
    int                       k, kt;
    bool                      up;
    size_t                    count;
    struct gpu_weights **    slot;
};

// the parameters of node i (at most 2: conv weights and bias, or gamma and beta); their number
static int gpu_node_params(const struct vae_graph * g, struct gpu_graph * cg, int i, struct gpu_param out[2]) {
    const struct vae_tensor * t    = g->nodes[i];
    struct gpu_node *        node = &cg->nodes[i];
    const size_t              cp   = (size_t) node->act.cp;
    int                       n    = 0;
    const struct vae_tensor * w    = t->src[1];
    switch (t->op) {
        case VAE_OP_CONV2D:
        case VAE_OP_UPSAMPLE_CONV2D:
        case VAE_OP_CAUSAL_CONV3D:
        case VAE_OP_DEPTHWISE_CONV2D:
        case VAE_OP_TIME_CONV:
            if (gpu_implicit_gemm(t)) {
                const int  k  = (int) w->ne[w->n_dims - 1];
                const int  kt = t->op == VAE_OP_CAUSAL_CONV3D ? (int) w->ne[2] : 1;
                const bool up = t->op == VAE_OP_UPSAMPLE_CONV2D;
                out[n++] = (struct gpu_param) { w, k, kt, up, vae_gpu_conv_packed_count((int) w->ne[0], (int) w->ne[1], k, kt, up),
                                                 &node->w };
            } else { // f32 as PyTorch has it ([Cout, Cin / groups, k, k]; a time conv's [Cout, Cin, kt]), read through the cache
                out[n++] = (struct gpu_param) { w, 0, 0, false, (size_t) (w->ne[0] * w->ne[1] * w->ne[2] * w->ne[3] * w->ne[4]),
                                                 &node->w };
            }
            break;
        case VAE_OP_GROUP_NORM:
        case VAE_OP_RMS_NORM:
            if (w) { // (an RMS norm without gamma multiplies by ones)
                out[n++] = (struct gpu_param) { w, 0, 0, false, cp, &node->gamma };
            }
            break;
        case VAE_OP_TOKENS:
            if (w) { // the extra tokens, f32 [E, C]
                out[n++] = (struct gpu_param) { w, 0, 0, false, (size_t) (w->ne[0] * w->ne[1]), &node->w };
            }
            break;
        default:
            return 0;
    }
    if (t->src[2]) { // the bias, or a norm's beta
        const bool norm = t->op == VAE_OP_GROUP_NORM || t->op == VAE_OP_RMS_NORM;
        out[n++]        = (struct gpu_param) { t->src[2], 0, 0, false, cp, norm ? &node->beta : &node->bias };
    }
    return n;
}

// the device bytes of every node's parameters as converted (packed convolutions are padded, and
// sub-pixel folded for an upsampling conv: up to 1.8 times their tensor's size); those already on
// the device count too, since the graph needs them
static size_t gpu_params_bytes(const struct vae_graph * g, struct gpu_graph * cg, enum vae_precision p) {
    size_t bytes = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        struct gpu_param prm[2];
        for (int j = gpu_node_params(g, cg, i, prm) - 1; j >= 0; j--) {
            bytes += gpu_align(gpu_weights_bytes(prm[j].k, prm[j].count, p));
        }
    }
    return bytes;
}

// the parameters every node reads, on the device
static bool gpu_prepare_weights(vae_backend_t * backend, struct vae_graph * g, char * err, size_t err_size) {
    for (int i = 0; i < g->n_nodes; i++) {
        struct gpu_param prm[2];
        const int         n = gpu_node_params(g, g->backend_data, i, prm);
        for (int j = 0; j < n; j++) {
            *prm[j].slot = gpu_weights_get(backend, prm[j].w, prm[j].k, prm[j].kt, prm[j].up, prm[j].count, err, err_size);
            if (!*prm[j].slot) {
                return false;
            }
        }
    }
    return true;
}

static size_t gpu_memory(vae_backend_t * backend) {
    return ((struct gpu_context *) backend->context)->total_bytes;
}

static bool gpu_graph_prepare(vae_backend_t * backend, struct vae_graph * g, size_t max_bytes, char * err,
                               size_t err_size) {
    struct gpu_context *  ctx  = backend->context;
    const enum vae_precision p  = backend->precision;
    struct gpu_graph *    cg   = calloc(1, sizeof(*cg));
    struct vae_plan_node * plan = calloc((size_t) g->n_nodes, sizeof(*plan));
    if (cg) {
        cg->nodes     = calloc((size_t) g->n_nodes, sizeof(*cg->nodes));
        cg->in_dev    = calloc((size_t) g->n_inputs, sizeof(*cg->in_dev));
        cg->in_host   = calloc((size_t) g->n_inputs, sizeof(*cg->in_host));
        cg->in_floats = calloc((size_t) g->n_inputs, sizeof(*cg->in_floats));
    }
    if (!cg || !plan || !cg->nodes || !cg->in_dev || !cg->in_host || !cg->in_floats) {
        if (cg) {
            free(cg->nodes), free(cg->in_dev), free(cg->in_host), free(cg->in_floats);
        }
        free(cg);
        free(plan);
        snprintf(err, err_size, "out of host memory preparing the graph");
        return false;
    }
    g->backend_data = cg;
    cg->no_graph    = gpu_env("VAE_GPU_NO_GRAPHS");
    for (int i = 0; i < g->n_nodes; i++) {
        cg->no_graph = cg->no_graph || g->nodes[i]->op == VAE_OP_CAUSAL_ATTENTION;
    }
    cg->direct_s    = -1.0;
    cg->replay_max_s = getenv("VAE_GPU_REPLAY_MAX_S") ? atof(getenv("VAE_GPU_REPLAY_MAX_S")) : GPU_REPLAY_MAX_S;

    // the plan: norms and tanh-clamp in place, a conv over its residual (each output element
    // reads its residual and is written by the same thread); inputs used only as GroupNorm
    // statistics stay f32 in their staging
    size_t scratch = 0, stats = 0, staging = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        cg->nodes[i].act            = gpu_act_of(t);
        plan[i].bytes               = gpu_act_bytes(&cg->nodes[i].act, p);
        if ((t->op == VAE_OP_CONV2D || t->op == VAE_OP_CAUSAL_CONV3D) && t->src[3] && t->src[0] != t->src[3]) {
            plan[i].heir_of = t->src[3];
        } else if (t->op == VAE_OP_TANH_CLAMP || t->op == VAE_OP_GROUP_NORM || t->op == VAE_OP_RMS_NORM) {
            plan[i].heir_of = t->src[0];
        }
        for (int s = 0; s < VAE_MAX_SRC; s++) {
            const struct vae_tensor * src = t->src[s];
            if (src && src->op == VAE_OP_INPUT && !(t->op == VAE_OP_GROUP_NORM && s == 3)) {
                cg->nodes[src->index].convert = true;
            }
        }
        size_t part = 0;
        if (gpu_fusable_gn(g, cg, t, ctx->cc, ctx->warp, p, &part)) {
            scratch = part > scratch ? part : scratch;
        }
        if (t->op == VAE_OP_GROUP_NORM && !t->src[3]) {
            const size_t n = vae_gpu_group_norm_scratch(gpu_gn_stats_act(cg->nodes[t->src[0]->index].act, t), t->i[0]);
            scratch        = n > scratch ? n : scratch;
            stats = (size_t) t->ne[0] * 2 * (size_t) t->i[0] > stats ? (size_t) t->ne[0] * 2 * (size_t) t->i[0] : stats;
        } else if (t->op == VAE_OP_ATTENTION || t->op == VAE_OP_CAUSAL_ATTENTION || t->op == VAE_OP_LINEAR_ATTENTION) {
            const size_t n = t->op != VAE_OP_LINEAR_ATTENTION ? vae_gpu_attention_scratch(gpu_act_of(t->src[0]), p)
                                                       : vae_gpu_linear_attention_scratch(gpu_act_of(t->src[0]), t->i[0]);
            scratch        = n > scratch ? n : scratch;
        } else if (t->op == VAE_OP_INPUT) {
            cg->in_floats[t->i[0]] = (size_t) t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
            staging += gpu_align(cg->in_floats[t->i[0]] * sizeof(float));
        }
    }
    if (g->output->op == VAE_OP_INPUT) {
        cg->nodes[g->output->index].convert = true;
    }
    // a norm its conv writes to its own block keeps the conv's inputs live until it is placed (the
    // conv's blocks read them while others write the norm): each is taken only where the arena does
    // not grow by it
    size_t base = 0, tried = 0;
    bool   planned = vae_plan_arena(g, plan, GPU_ALIGN, &base);
    cg->arena_bytes = base;
    for (int i = 0; planned && i < g->n_nodes; i++) {
        bool                      apart = false;
        const struct vae_tensor * nt    = gpu_implicit_gemm(g->nodes[i]) ? gpu_fusable_norm(g, g->nodes[i], &apart) : NULL;
        if (nt && apart) {
            plan[nt->index].written_by = g->nodes[i];
            planned = vae_plan_arena(g, plan, GPU_ALIGN, &tried);
            if (planned && tried > base) {
                plan[nt->index].written_by = NULL;
                planned = vae_plan_arena(g, plan, GPU_ALIGN, &tried);
            }
            cg->arena_bytes = tried;
        }
    }
    if (!planned) {
        free(plan);
        gpu_graph_release(backend, g);
        snprintf(err, err_size, "out of host memory planning %d nodes", g->n_nodes);
        return false;
    }
    cg->mem_bytes = cg->arena_bytes + gpu_align(scratch) + gpu_align(stats * sizeof(float)) + staging;
    for (int i = 0; i < g->n_nodes; i++) { // the RMS norms computed in their conv's epilogue
        bool                      apart = false;
        const struct vae_tensor * nt = gpu_implicit_gemm(g->nodes[i]) ? gpu_fusable_norm(g, g->nodes[i], &apart) : NULL;
        if (nt && (apart ? plan[nt->index].written_by == g->nodes[i] : plan[nt->index].inherited)) {
            cg->nodes[i].norm          = nt;
            cg->nodes[i].norm_apart    = apart;
            cg->nodes[nt->index].fused = true;
        }
        size_t                    part = 0;
        const struct vae_tensor * gn   = cg->nodes[i].norm ? NULL : gpu_fusable_gn(g, cg, g->nodes[i], ctx->cc,
                                                                                   ctx->warp, p, &part);
        if (gn) { // (the GroupNorms whose statistics their conv gives)
            cg->nodes[i].gn            = gn;
            cg->nodes[gn->index].fused = true;
        }
    }

    const size_t need  = cg->mem_bytes + gpu_params_bytes(g, cg, p);
    const size_t limit = vae_backend_limit(backend, max_bytes);
    if (need > limit) {
        char a[32], b[32];
        snprintf(err, err_size,
                 "decoding [%lld, %lld, %lld, %lld] needs %s of activations and weights, above the %s %s",
                 (long long) g->input->ne[0], (long long) g->input->ne[1], (long long) g->input->ne[2],
                 (long long) g->input->ne[3], vae_backend_bytes_str(a, (double) need),
                 vae_backend_bytes_str(b, (double) limit),
                 max_bytes ? "memory limit" : "of this GPU's memory");
        free(plan);
        gpu_graph_release(backend, g);
        return false;
    }

    if (!gpu_enter(ctx, err, err_size)) {
        free(plan);
        gpu_graph_release(backend, g);
        return false;
    }
    bool        ok = true;
    cudaError_t ce = cudaMalloc(&cg->mem, cg->mem_bytes);
    if (ce == cudaErrorMemoryAllocation) {
        snprintf(err, err_size, "out of device memory: decoding [%lld, %lld, %lld, %lld] needs %.1f MiB of activations "
                 "(%s)", (long long) g->input->ne[0], (long long) g->input->ne[1], (long long) g->input->ne[2],
                 (long long) g->input->ne[3], cg->mem_bytes / 1048576.0, cudaGetErrorString(ce));
        (void) cudaGetLastError(); // (clear it: an allocation failure does not break the context)
        ok = false;
    } else if (ce != cudaSuccess) {
        // "invalid device context": the first call where a context destroyed under the backend may
        // show (undefined in the driver, which its owner must not do: see vae_backend_init)
        snprintf(err, err_size, VAE_GPU_VENDOR " error allocating %.1f MiB on device %d: %s (%s)%s", cg->mem_bytes / 1048576.0,
                 ctx->place.device, cudaGetErrorString(ce), cudaGetErrorName(ce),
                 ce == cudaErrorDeviceUninitialized ? "; the context this backend was made in is gone (destroyed by "
                                                      "its owner?)" : "");
        ok = false;
    }
    if (ok) {
        uint8_t * base = cg->mem;
        for (int i = 0; i < g->n_nodes; i++) {
            cg->nodes[i].act.data = base + plan[i].offset;
        }
        uint8_t * at = base + cg->arena_bytes;
        cg->scratch  = at;
        at += gpu_align(scratch);
        cg->stats = (float *) at;
        at += gpu_align(stats * sizeof(float));
        for (int i = 0; i < g->n_inputs; i++) {
            cg->in_dev[i] = (float *) at;
            at += gpu_align(cg->in_floats[i] * sizeof(float));
            ce = cudaHostAlloc((void **) &cg->in_host[i], cg->in_floats[i] * sizeof(float), cudaHostAllocDefault);
            if (ce != cudaSuccess) {
                snprintf(err, err_size, "could not pin %.1f MiB of host memory for input %d: %s",
                         cg->in_floats[i] * sizeof(float) / 1048576.0, i, cudaGetErrorString(ce));
                ok = false;
                break;
            }
        }
    }
    free(plan);
    ok = ok && gpu_prepare_weights(backend, g, err, err_size);
    // the variants are timed on the arena: bytes 0x3c, finite and small at every precision (0.0115
    // in fp32 and bf16, 1.06 in fp16), so that no timing reads memory never written (initcheck
    // reported it on an H200) nor NaN or denormals left by an earlier user of the memory
    if (ok) {
        ce = cudaMemsetAsync(cg->mem, 0x3c, cg->mem_bytes, ctx->stream);
        if (ce != cudaSuccess) {
            snprintf(err, err_size, VAE_GPU_VENDOR " error preparing the graph: %s", cudaGetErrorString(ce));
            ok = false;
        }
    }
    for (int i = 0; ok && i < g->n_nodes; i++) {
        if (gpu_implicit_gemm(g->nodes[i])) {
            ok = gpu_choose_variant(backend, cg, g->nodes[i], err, err_size);
        }
    }
    if (ok) {
        // zeros, or NaN bytes under VAE_GPU_POISON=1 so that an element no kernel writes shows
        ce = cudaMemsetAsync(cg->mem, gpu_env("VAE_GPU_POISON") ? 0xff : 0, cg->mem_bytes, ctx->stream);
        if (ce == cudaSuccess) {
            ce = cudaStreamSynchronize(ctx->stream);
        }
        if (ce != cudaSuccess) {
            snprintf(err, err_size, VAE_GPU_VENDOR " error preparing the graph: %s", cudaGetErrorString(ce));
            ok = false;
        }
    }
    gpu_leave(ctx);
    if (!ok) {
        gpu_graph_release(backend, g);
        return false;
    }
    g->arena_bytes = cg->mem_bytes;
    g->peak_bytes  = need;
    return true;
}

// ---- state ------------------------------------------------------------------------------------

// every slot to zeros; a failure is kept in st->error for the next compute to report
static bool gpu_state_clear(struct gpu_context * ctx, vae_state_t * st) {
    st->error[0] = '\0';
    if (!gpu_enter(ctx, st->error, sizeof(st->error))) {
        return false;
    }
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < st->n_slots && e == cudaSuccess; i++) {
        if (st->kv[i].c) { // (a cache gives its room back: the next stream may be shorter)
            e              = cudaFree(st->data[i]);
            st->data[i]    = NULL;
            st->bytes[i]   = 0;
            st->kv[i].held = st->kv[i].cap = 0;
        } else {
            e = cudaMemsetAsync(st->data[i], 0, st->bytes[i], ctx->stream);
        }
        st->written[i] = false;
        st->seen[i]    = 0;
    }
    st->end = -1;
    if (e == cudaSuccess) {
        e = cudaStreamSynchronize(ctx->stream);
    }
    gpu_leave(ctx);
    if (e != cudaSuccess) {
        snprintf(st->error, sizeof(st->error), VAE_GPU_VENDOR " error clearing the streaming state: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
    }
    return e == cudaSuccess;
}

static void gpu_state_reset(vae_backend_t * backend, vae_state_t * st) {
    gpu_state_clear(backend->context, st);
}

static size_t gpu_state_bytes(vae_backend_t * backend, const vae_state_t * st) {
    size_t n = 0;
    (void) backend;
    for (int i = 0; i < st->n_slots; i++) {
        n += st->bytes[i];
    }
    return n;
}

static void gpu_state_free(vae_backend_t * backend, vae_state_t * st) {
    struct gpu_context * ctx = backend->context;
    if (gpu_enter(ctx, NULL, 0)) {
        cudaStreamSynchronize(ctx->stream);
        for (int i = 0; st->data && i < st->n_slots; i++) {
            cudaFree(st->data[i]);
        }
        gpu_leave(ctx);
    }
    free(st->data);
    free(st->bytes);
    free(st->written);
    free(st->seen);
    free(st->kv);
    free(st);
}

static void gpu_state_set_limit(vae_backend_t * backend, vae_state_t * st, size_t bytes) {
    (void) backend;
    st->limit = bytes;
}

static void gpu_state_set_end(vae_backend_t * backend, vae_state_t * st, int64_t latents) {
    (void) backend;
    st->end = latents;
}

static vae_state_t * gpu_state_new(vae_backend_t * backend, const struct vae_graph * g, char * err, size_t err_size) {
    struct gpu_context * ctx = backend->context;
    struct vae_state *    st  = calloc(1, sizeof(*st));
    bool                  ok  = st && (st->bytes = calloc((size_t) g->n_states, sizeof(size_t))) &&
              (st->data = calloc((size_t) g->n_states, sizeof(void *))) &&
              (st->written = calloc((size_t) g->n_states, sizeof(bool))) &&
              (st->seen = calloc((size_t) g->n_states, sizeof(int64_t))) &&
              (st->kv = calloc((size_t) g->n_states, sizeof(struct gpu_kv)));
    if (!ok) {
        free(st ? st->bytes : NULL);
        free(st ? st->data : NULL);
        free(st ? st->written : NULL);
        free(st ? st->seen : NULL);
        free(st);
        snprintf(err, err_size, "out of host memory for the streaming state");
        return NULL;
    }
    st->n_slots = g->n_states;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        if (t->op == VAE_OP_CAUSAL_CONV3D || t->op == VAE_OP_DELAY || t->op == VAE_OP_CROSSFADE) {
            st->bytes[t->i[0]] = gpu_state_bytes_of(t, backend->precision);
        } else if (t->op == VAE_OP_CAUSAL_ATTENTION) { // (empty: it grows as frames come)
            const struct vae_gpu_act qkv = gpu_act_of(t->src[0]);
            st->kv[t->i[0]] = (struct gpu_kv) { t->ne[1], t->ne[2] * t->ne[3], 0, 0,
                                                (size_t) qkv.h * qkv.w * qkv.cp * vae_gpu_elem_bytes(backend->precision) };
        }
    }
    if (!gpu_enter(ctx, err, err_size)) {
        gpu_state_free(backend, st);
        return NULL;
    }
    cudaError_t ce = cudaSuccess;
    for (int i = 0; ce == cudaSuccess && i < st->n_slots; i++) {
        ce = cudaMalloc(&st->data[i], st->bytes[i] ? st->bytes[i] : 1);
    }
    gpu_leave(ctx);
    if (ce != cudaSuccess) {
        snprintf(err, err_size, "out of device memory for the streaming state of %d causal ops: %s", g->n_states,
                 cudaGetErrorString(ce));
        gpu_state_free(backend, st);
        return NULL;
    }
    if (!gpu_state_clear(ctx, st)) {
        snprintf(err, err_size, "%s", st->error);
        gpu_state_free(backend, st);
        return NULL;
    }
    return st;
}

// ---- compute ----------------------------------------------------------------------------------

// before a replicating causal conv's first run since the reset: its slot gets kt - 1 copies of
// the input's first frame
static cudaError_t gpu_state_replicate(struct gpu_context * ctx, struct gpu_graph * cg, const struct vae_tensor * t,
                                        vae_state_t * state, enum vae_precision p) {
    const struct vae_gpu_act * x     = &cg->nodes[t->src[0]->index].act;
    const size_t               frame = (size_t) x->h * x->w * x->cp * vae_gpu_elem_bytes(p);
    uint8_t *                  slot  = state->data[t->i[0]];
    cudaError_t                e     = cudaSuccess;
    for (int j = 0; j < (int) t->src[1]->ne[2] - 1 && e == cudaSuccess; j++) {
        e = cudaMemcpyAsync(slot + (size_t) j * frame, x->data, frame, cudaMemcpyDeviceToDevice, ctx->stream);
    }
    return e;
}

// whether a compute of g on state differs from the ones recorded: it replicates a first frame, it
// reads past a centred conv's stream end, or it cross-fades from a slot that holds nothing (such a
// compute is launched directly)
static bool gpu_state_priming(const struct vae_graph * g, const vae_state_t * state) {
    for (int i = 0; state && i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        if ((t->op == VAE_OP_CAUSAL_CONV3D && (((t->i[1] & VAE_CAUSAL_FIRST_FRAME) && !state->written[t->i[0]]) ||
                                               ((t->i[1] & VAE_CENTRED) && state->end > 0))) ||
            (t->op == VAE_OP_CROSSFADE && !state->written[t->i[0]])) {
            return true;
        }
    }
    return false;
}

// a centred conv past its stream's end: its input frames after the stream's last (vae_centred_last)
// become copies of it; where that frame is older than the input, of the state's last frame, a copy
// of it already. (They are frames past the clip's end, whose outputs no
// frame of the clip reads: the padding upstream gives the clip.)
static cudaError_t gpu_centred_end(struct gpu_context * ctx, struct gpu_graph * cg, const struct vae_tensor * t,
                                   vae_state_t * state, enum vae_precision p) {
    const struct vae_gpu_act * x     = &cg->nodes[t->src[0]->index].act;
    const size_t               frame = (size_t) x->h * x->w * x->cp * vae_gpu_elem_bytes(p);
    const int64_t              last  = vae_centred_last(t, state->end, state->seen[t->i[0]]);
    const uint8_t *            from  = last >= 0 ? (const uint8_t *) x->data + (size_t) last * frame
                                                 : (const uint8_t *) state->data[t->i[0]] + (t->src[1]->ne[2] - 2) * frame;
    cudaError_t                e     = cudaSuccess;
    for (int64_t k = last < 0 ? 0 : last + 1; k < x->n && e == cudaSuccess; k++) {
        e = cudaMemcpyAsync((uint8_t *) x->data + (size_t) k * frame, from, frame, cudaMemcpyDeviceToDevice, ctx->stream);
    }
    return e;
}

// after causal conv a (its input as it read it): its slot keeps the last kt - 1 frames of [state,
// input], frame by frame in increasing order (a shift within the slot never overwrites a frame it
// still has to move)
static cudaError_t gpu_state_update(struct gpu_context * ctx, const struct vae_gpu_conv_args * a, const struct vae_tensor * t,
                                     vae_state_t * state, enum vae_precision p) {
    const struct vae_gpu_act * x     = &a->x;
    const int                  keep  = (int) t->src[1]->ne[2] - 1;
    const size_t               frame = (size_t) x->h * x->w * x->cp * vae_gpu_elem_bytes(p);
    uint8_t *                  slot  = state->data[t->i[0]];
    const uint8_t *            src   = x->data;
    cudaError_t                e     = cudaSuccess;
    for (int j = 0; j < keep && e == cudaSuccess; j++) {
        const int from = j + x->n; // position in [state, input]
        e = cudaMemcpyAsync(slot + (size_t) j * frame, from < keep ? slot + (size_t) from * frame
                                                                   : src + (size_t) (from - keep) * frame,
                            frame, cudaMemcpyDeviceToDevice, ctx->stream);
    }
    return e;
}

// delay t: y = [held, x] from frame d on when its stream starts, else from frame 0, as many frames
// as y has; then the slot keeps the d frames that follow, in increasing order (see above)
static cudaError_t gpu_delay(struct gpu_context * ctx, struct gpu_graph * cg, const struct vae_tensor * t,
                             vae_state_t * state, enum vae_precision p) {
    const struct vae_gpu_act * x     = &cg->nodes[t->src[0]->index].act;
    const int                  d     = t->i[1], at = t->i[2] & VAE_CENTRED_START ? d : 0;
    const size_t               frame = (size_t) x->h * x->w * x->cp * vae_gpu_elem_bytes(p);
    uint8_t *                  slot  = state->data[t->i[0]], *y = cg->nodes[t->index].act.data;
    const uint8_t *            src   = x->data;
    cudaError_t                e     = cudaSuccess;
    for (int f = 0; f < (int) t->ne[0] && e == cudaSuccess; f++) {
        const int k = at + f;
        e = cudaMemcpyAsync(y + (size_t) f * frame, k < d ? slot + (size_t) k * frame : src + (size_t) (k - d) * frame,
                            frame, cudaMemcpyDeviceToDevice, ctx->stream);
    }
    for (int j = 0; j < d && e == cudaSuccess; j++) {
        const int k = x->n + j;
        e = cudaMemcpyAsync(slot + (size_t) j * frame, k < d ? slot + (size_t) k * frame : src + (size_t) (k - d) * frame,
                            frame, cudaMemcpyDeviceToDevice, ctx->stream);
    }
    return e;
}

// cross-fade t: y from x, its first d frames blended with the slot's when it holds frames; then the
// slot keeps x's last d
static cudaError_t gpu_crossfade(struct gpu_context * ctx, struct gpu_graph * cg, const struct vae_tensor * t,
                                 vae_state_t * state, enum vae_precision p) {
    const struct vae_gpu_act * x     = &cg->nodes[t->src[0]->index].act;
    const int                  d     = t->i[3];
    const size_t               frame = (size_t) x->h * x->w * x->cp * vae_gpu_elem_bytes(p);
    uint8_t *                  slot  = state->data[t->i[0]];
    const cudaError_t          e     = vae_gpu_crossfade(*x, cg->nodes[t->index].act, state->written[t->i[0]] ? slot : NULL,
                                                         t->i[1], d, p, ctx->stream);
    return e == cudaSuccess ? cudaMemcpyAsync(slot, (const uint8_t *) x->data + (size_t) (x->n - d) * frame,
                                              (size_t) d * frame, cudaMemcpyDeviceToDevice, ctx->stream)
                            : e;
}

// every launch of one compute, in order, on the stream. checked (never while the stream is being
// recorded): one node ahead of the device, the cancel flag read before each node (see the top);
// *stopped tells that it was set, and nothing after that node was launched. marks (profiling, or
// NULL): events recorded before the first node and after each
static cudaError_t gpu_launch(vae_backend_t * backend, struct vae_graph * g, vae_state_t * state, bool checked,
                               const cudaEvent_t * marks, const struct vae_tensor ** failed, bool * stopped) {
    struct gpu_context *    ctx = backend->context;
    struct gpu_graph *      cg  = g->backend_data;
    const enum vae_precision p   = backend->precision;
    const cudaStream_t       s   = ctx->stream;
    cudaError_t              e   = cudaSuccess;
    *stopped                     = false;
    for (int i = 0; i < g->n_inputs && e == cudaSuccess; i++) {
        e = cudaMemcpyAsync(cg->in_dev[i], cg->in_host[i], cg->in_floats[i] * sizeof(float), cudaMemcpyHostToDevice, s);
    }
    if (marks && e == cudaSuccess) {
        e = cudaEventRecord(marks[0], s);
    }
    for (int i = 0; i < g->n_nodes && e == cudaSuccess; i++) {
        const struct vae_tensor *  t    = g->nodes[i];
        struct gpu_node *         node = &cg->nodes[i];
        const struct vae_gpu_act   y    = node->act;
        const struct vae_gpu_act * x    = t->src[0] ? &cg->nodes[t->src[0]->index].act : NULL;
        *failed                         = t;
        if (checked && i >= 2) { // (fence[i & 1] follows node i - 2)
            e = cudaEventSynchronize(ctx->fence[i & 1]);
        }
        if (checked && e == cudaSuccess && vae_graph_cancelled(g)) {
            *stopped = true;
            break;
        }
        switch (t->op) {
            case VAE_OP_INPUT:
                if (node->convert) {
                    e = vae_gpu_from_nchw_f32(cg->in_dev[t->i[0]], y, p, s);
                }
                break;
            case VAE_OP_TANH_CLAMP:
                e = vae_gpu_tanh_clamp(*x, y, t->f[0], p, s);
                break;
            case VAE_OP_UPSAMPLE2X:
                e = vae_gpu_upsample2x(*x, y, p, s);
                break;
            case VAE_OP_GROUP_NORM:
                if (t->src[3]) { // (the statistics input stays f32 in its staging)
                    e = vae_gpu_group_norm_apply(*x, y, t->i[0], cg->in_dev[t->src[3]->i[0]], false, node->gamma->data,
                                                 node->beta->data, t->act, p, s);
                } else { // (over all frames: one set of statistics for every pixel; fused: its conv gave them)
                    if (!node->fused) {
                        e = vae_gpu_group_norm_stats(gpu_gn_stats_act(*x, t), t->i[0], t->f[0], cg->stats, cg->scratch,
                                                     p, s);
                    }
                    if (e == cudaSuccess) {
                        e = vae_gpu_group_norm_apply(*x, y, t->i[0], cg->stats, t->i[1] != 1, node->gamma->data,
                                                     node->beta->data, t->act, p, s);
                    }
                }
                break;
            case VAE_OP_RMS_NORM:
                if (node->fused) {
                    break; // (its conv wrote it)
                }
                e = vae_gpu_rms_norm(*x, y, t->src[3] ? cg->nodes[t->src[3]->index].act.data : NULL,
                                     node->gamma ? node->gamma->data : NULL,
                                     node->beta ? node->beta->data : NULL, t->i[0], t->f[0], t->act, p, s);
                break;
            case VAE_OP_ATTENTION:
                e = vae_gpu_attention(*x, y, t->i[0], cg->scratch, p, s);
                break;
            case VAE_OP_CAUSAL_ATTENTION:
                e = vae_gpu_causal_attention(*x, y, state->data[t->i[0]], state->kv[t->i[0]].held, p, s);
                break;
            case VAE_OP_LINEAR_ATTENTION:
                e = vae_gpu_linear_attention(*x, y, t->i[0], cg->scratch, p, s);
                break;
            case VAE_OP_GLU:
                e = vae_gpu_glu(*x, y, t->act, p, s);
                break;
            case VAE_OP_FRAME_SPLIT:
                e = vae_gpu_frame_split(*x, y, t->i[0], t->i[1], p, s);
                break;
            case VAE_OP_DELAY:
                e = gpu_delay(ctx, cg, t, state, p);
                break;
            case VAE_OP_TOKENS:
                e = vae_gpu_tokens(*x, y, node->w ? node->w->data : NULL, t->src[1] ? (int) t->src[1]->ne[0] : 0, p, s);
                break;
            case VAE_OP_UNTOKENS:
                e = vae_gpu_tokens(*x, y, NULL, 0, p, s);
                break;
            case VAE_OP_ROPE:
                e = vae_gpu_rope(*x, y, t->i[0], t->i[1], t->i[2], t->i[3], t->i[4], t->f[0], t->f[1], p, s);
                break;
            case VAE_OP_CROSSFADE:
                e = gpu_crossfade(ctx, cg, t, state, p);
                break;
            case VAE_OP_PIXEL_SHUFFLE:
                e = vae_gpu_pixel_shuffle(*x, y, p, s);
                break;
            case VAE_OP_TIME_CONV:
                e = vae_gpu_time_conv(*x, y, t->src[3] ? cg->nodes[t->src[3]->index].act.data : NULL, node->w->data,
                                      node->bias ? node->bias->data : NULL, (int) t->src[1]->ne[2], t->act, p, s);
                break;
            case VAE_OP_DEPTHWISE_CONV2D:
            case VAE_OP_CONV2D:
            case VAE_OP_UPSAMPLE_CONV2D:
            case VAE_OP_CAUSAL_CONV3D: {
                if (!gpu_implicit_gemm(t)) { // depthwise or grouped
                    e = vae_gpu_group_conv(*x, y, t->src[3] ? cg->nodes[t->src[3]->index].act.data : NULL,
                                           node->w->data, node->bias ? node->bias->data : NULL, vae_conv_groups(t),
                                           (int) t->src[1]->ne[2], t->act, p, s);
                    break;
                }
                const bool                     causal = t->op == VAE_OP_CAUSAL_CONV3D;
                const struct vae_gpu_conv_args a      = gpu_conv_args(ctx, cg, t, causal ? state : NULL, p);
                if (causal && (((t->i[1] & VAE_CAUSAL_FIRST_FRAME) && !state->written[t->i[0]]) ||
                               (t->i[1] & VAE_CENTRED_START))) {
                    e = gpu_state_replicate(ctx, cg, t, state, p);
                }
                if (e == cudaSuccess && causal && (t->i[1] & VAE_CENTRED) && state->end > 0) {
                    e = gpu_centred_end(ctx, cg, t, state, p);
                }
                e = e == cudaSuccess ? vae_gpu_conv(&a, p, s) : e;
                if (e == cudaSuccess && causal) {
                    e = gpu_state_update(ctx, &a, t, state, p);
                }
                break;
            }
            default:
                return cudaErrorNotSupported;
        }
        if (checked && e == cudaSuccess) {
            e = cudaEventRecord(ctx->fence[i & 1], s);
        }
        if (marks && e == cudaSuccess) {
            e = cudaEventRecord(marks[i + 1], s);
        }
    }
    return e;
}

// room for n more frames in the cache of causal attention t (slot i[0]), grown to twice what it
// held or to the frames needed, as the limit allows (the frames held copied over); false when even
// those do not fit (nothing changed). In the context, the stream idle
static bool gpu_kv_room(struct gpu_context * ctx, const struct vae_tensor * t, vae_state_t * st, int n, char * err,
                        size_t err_size) {
    struct gpu_kv * kv   = &st->kv[t->i[0]];
    const int64_t   need = (int64_t) kv->held + n;
    if (need <= kv->cap) {
        return true;
    }
    const int64_t cap = vae_backend_kv_room(t, kv->cap, need, kv->frame, gpu_state_bytes(NULL, st) - st->bytes[t->i[0]],
                                            st->limit, err, err_size);
    if (cap < 0) {
        return false;
    }
    void *      d = NULL;
    cudaError_t e = cap > INT_MAX ? cudaErrorInvalidValue : cudaMalloc(&d, (size_t) cap * kv->frame);
    if (e == cudaSuccess && kv->held) {
        e = cudaMemcpyAsync(d, st->data[t->i[0]], (size_t) kv->held * kv->frame, cudaMemcpyDeviceToDevice, ctx->stream);
        e = e == cudaSuccess ? cudaStreamSynchronize(ctx->stream) : e;
    }
    if (e != cudaSuccess) {
        char a[32];
        (void) cudaGetLastError();
        cudaFree(d);
        snprintf(err, err_size, "out of device memory for the key/value cache of %s: %s for %lld frames (%s)",
                 t->name ? t->name : "?", vae_backend_bytes_str(a, (double) cap * (double) kv->frame), (long long) cap,
                 cudaGetErrorString(e));
        return false;
    }
    cudaFree(st->data[t->i[0]]);
    st->data[t->i[0]]  = d;
    st->bytes[t->i[0]] = (size_t) cap * kv->frame;
    kv->cap            = (int) cap;
    return true;
}

static double gpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static bool gpu_graph_compute(vae_backend_t * backend, struct vae_graph * g, vae_state_t * state,
                               const float * const * inputs, char * err, size_t err_size) {
    struct gpu_context * ctx = backend->context;
    struct gpu_graph *   cg  = g->backend_data;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        if ((t->op == VAE_OP_CAUSAL_CONV3D || t->op == VAE_OP_DELAY || t->op == VAE_OP_CROSSFADE) &&
            (t->i[0] >= state->n_slots || state->kv[t->i[0]].c ||
             state->bytes[t->i[0]] != gpu_state_bytes_of(t, backend->precision))) {
            snprintf(err, err_size, "the state given has no slot %d of %zu bytes for %s", t->i[0],
                     gpu_state_bytes_of(t, backend->precision), t->name);
            return false;
        }
        if (t->op == VAE_OP_CAUSAL_ATTENTION &&
            (t->i[0] >= state->n_slots || state->kv[t->i[0]].c != t->ne[1] ||
             state->kv[t->i[0]].hw != t->ne[2] * t->ne[3])) {
            snprintf(err, err_size, "the state given has no key/value cache %d of %lld channels at %lldx%lld for %s",
                     t->i[0], (long long) t->ne[1], (long long) t->ne[3], (long long) t->ne[2], t->name);
            return false;
        }
    }
    if (state && state->error[0]) {
        snprintf(err, err_size, "the streaming state was not reset: %s", state->error);
        return false;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        memcpy(cg->in_host[i], inputs[i], cg->in_floats[i] * sizeof(float));
    }
    if (!gpu_enter(ctx, err, err_size)) {
        return false;
    }
    for (int i = 0; i < g->n_nodes; i++) { // (before anything runs: a cache that cannot grow changes nothing)
        if (g->nodes[i]->op == VAE_OP_CAUSAL_ATTENTION &&
            !gpu_kv_room(ctx, g->nodes[i], state, (int) g->nodes[i]->ne[0], err, err_size)) {
            gpu_leave(ctx);
            return false;
        }
    }
    const struct vae_tensor * failed   = NULL;
    cudaError_t               e        = cudaSuccess;
    const bool                priming  = gpu_state_priming(g, state); // (launched directly, not recorded)
    // with a cancel flag, only a compute short enough to wait for is recorded (see the top)
    const bool                short_enough = !g->cancel || (cg->direct_s >= 0 && cg->direct_s <= cg->replay_max_s);
    bool                      stopped  = false;
    if (cg->exec && cg->exec_state != state) { // (recorded with another state's buffers)
        cudaGraphExecDestroy(cg->exec);
        cg->exec = NULL;
    }
    if (g->node_ms && !cg->marks) { // (profiling: made once, kept with the graph)
        cg->marks = calloc((size_t) g->n_nodes + 1, sizeof(cudaEvent_t));
        e         = cg->marks ? cudaSuccess : cudaErrorMemoryAllocation;
        for (int i = 0; e == cudaSuccess && i <= g->n_nodes; i++) {
            e = cudaEventCreate(&cg->marks[i]);
        }
        if (e != cudaSuccess) {
            gpu_marks_free(cg, g->n_nodes);
            gpu_leave(ctx);
            snprintf(err, err_size, VAE_GPU_VENDOR " error making the profiling events: %s", cudaGetErrorString(e));
            return false;
        }
    }
    if (!cg->exec && !cg->no_graph && cg->computes > 0 && !priming && short_enough && !g->node_ms) {
        // record once; a failure to record only costs the replay
        cudaGraph_t graph = NULL;
        e = cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal);
        if (e == cudaSuccess) {
            const cudaError_t launched = gpu_launch(backend, g, state, false, NULL, &failed, &stopped);
            e = cudaStreamEndCapture(ctx->stream, &graph);
            if (launched != cudaSuccess) {
                e = launched;
            }
        }
        if (e == cudaSuccess) {
            e = cudaGraphInstantiate(&cg->exec, graph, 0);
        }
        if (graph) {
            cudaGraphDestroy(graph);
        }
        if (e != cudaSuccess) {
            (void) cudaGetLastError();
            cg->exec     = NULL;
            cg->no_graph = true;
            snprintf(backend->notice, sizeof(backend->notice), VAE_GPU_VENDOR " could not record the graph of "
                     "[%lld, %lld, %lld, %lld] (%s: %s): its computes launch node by node instead of replaying it",
                     (long long) g->input->ne[0], (long long) g->input->ne[1], (long long) g->input->ne[2],
                     (long long) g->input->ne[3], cudaGetErrorName(e), cudaGetErrorString(e));
        }
        cg->exec_state = state;
        e              = cudaSuccess;
    }
    const double start  = gpu_seconds();
    const bool   replay = cg->exec && !priming && !g->node_ms;
    if (replay && vae_graph_cancelled(g)) {
        stopped = true;
    } else if (replay) {
        e = cudaGraphLaunch(cg->exec, ctx->stream);
        failed = NULL;
    } else {
        e = gpu_launch(backend, g, state, g->cancel != NULL, g->node_ms ? cg->marks : NULL, &failed, &stopped);
    }
    if (e == cudaSuccess) { // (stopped: what was launched before the flag finishes first)
        e = cudaStreamSynchronize(ctx->stream);
        failed = NULL;
    }
    for (int i = 0; g->node_ms && !replay && !stopped && e == cudaSuccess && i < g->n_nodes; i++) {
        e = cudaEventElapsedTime(&g->node_ms[i], cg->marks[i], cg->marks[i + 1]);
    }
    gpu_leave(ctx);
    cg->computes++;
    if (!replay && !stopped && e == cudaSuccess) {
        cg->direct_s = gpu_seconds() - start;
    }
    if (stopped && e == cudaSuccess) {
        snprintf(err, err_size, "%s", VAE_BACKEND_INTERRUPTED);
        return false;
    }
    for (int i = 0; e == cudaSuccess && i < g->n_nodes; i++) {
        if (g->nodes[i]->op == VAE_OP_CAUSAL_CONV3D) {
            state->written[g->nodes[i]->i[0]] = true;
            state->seen[g->nodes[i]->i[0]] += g->nodes[i]->src[0]->ne[0];
        } else if (g->nodes[i]->op == VAE_OP_CROSSFADE) {
            state->written[g->nodes[i]->i[0]] = true;
        } else if (g->nodes[i]->op == VAE_OP_CAUSAL_ATTENTION) {
            state->kv[g->nodes[i]->i[0]].held += (int) g->nodes[i]->ne[0];
        }
    }
    if (e != cudaSuccess) {
        snprintf(err, err_size, VAE_GPU_VENDOR " error running the decoder%s%s%s: %s (%s)", failed ? " at " : "",
                 failed ? vae_op_name(failed->op) : "", failed && failed->name ? failed->name : "",
                 cudaGetErrorString(e), cudaGetErrorName(e));
        return false;
    }
    return true;
}

// ---- output -----------------------------------------------------------------------------------

// bytes of the planes of a frame in a tight layout, the offsets of each plane in it, and how many
static size_t gpu_frame_layout(const struct vae_frame * f, size_t offsets[4], int strides[4], int * n_planes) {
    const int w = f->width, h = f->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    memset(strides, 0, 4 * sizeof(int));
    memset(offsets, 0, 4 * sizeof(size_t));
    *n_planes = 1;
    switch (f->format) {
        case VAE_PIXEL_RGB: strides[0] = 3 * w; return (size_t) strides[0] * h;
        case VAE_PIXEL_I420:
        case VAE_PIXEL_A420:
            *n_planes  = f->format == VAE_PIXEL_A420 ? 4 : 3;
            strides[0] = strides[3] = w, strides[1] = strides[2] = cw;
            offsets[1] = (size_t) w * h, offsets[2] = offsets[1] + (size_t) cw * ch;
            offsets[3] = offsets[2] + (size_t) cw * ch;
            return offsets[3] + (f->format == VAE_PIXEL_A420 ? (size_t) w * h : 0);
        case VAE_PIXEL_NV12:
            *n_planes  = 2;
            strides[0] = w, strides[1] = 2 * cw;
            offsets[1] = (size_t) w * h;
            return offsets[1] + (size_t) 2 * cw * ch;
        default: strides[0] = 4 * w; return (size_t) strides[0] * h;
    }
}

// cg->stage with room for `bytes`: kept between reads and grown when too small (a cudaFree on
// every read would synchronize the whole device)
static cudaError_t gpu_stage(struct gpu_graph * cg, size_t bytes) {
    if (bytes <= cg->stage_bytes) {
        return cudaSuccess;
    }
    cudaFree(cg->stage);
    cg->stage       = NULL;
    cg->stage_bytes = 0;
    const cudaError_t e = cudaMalloc(&cg->stage, bytes);
    if (e == cudaSuccess) {
        cg->stage_bytes = bytes;
    }
    return e;
}

static bool gpu_graph_read_frame(vae_backend_t * backend, struct vae_graph * g, int n, const struct vae_frame * dst,
                                  char * err, size_t err_size) {
    struct gpu_context *      ctx = backend->context;
    struct gpu_graph *        cg  = g->backend_data;
    const struct vae_gpu_act * out = &cg->nodes[g->output->index].act;
    if (dst->width != out->w || dst->height != out->h) {
        snprintf(err, err_size, "the frame is %dx%d but the decoder gives %dx%d", dst->width, dst->height, out->w, out->h);
        return false;
    }
    if (!gpu_enter(ctx, err, err_size)) {
        return false;
    }
    cudaError_t e = cudaSuccess;
    if (dst->device) {
        e = vae_gpu_frame_pack(*out, n, dst, backend->precision, ctx->stream);
    } else {
        // packed on the device into tight staging planes, then copied row by row into dst's
        struct vae_frame dev = *dst;
        size_t           offsets[4];
        int              n_planes;
        const size_t     bytes = gpu_frame_layout(dst, offsets, dev.strides, &n_planes);
        e                      = gpu_stage(cg, bytes);
        for (int i = 0; i < n_planes && e == cudaSuccess; i++) {
            dev.planes[i] = (uint8_t *) cg->stage + offsets[i];
        }
        dev.device = true;
        if (e == cudaSuccess) {
            e = vae_gpu_frame_pack(*out, n, &dev, backend->precision, ctx->stream);
        }
        for (int i = 0; i < n_planes && e == cudaSuccess; i++) {
            const int rows = i == 0 || i == 3 ? dst->height : (dst->height + 1) / 2;
            e = cudaMemcpy2DAsync(dst->planes[i], (size_t) dst->strides[i], dev.planes[i], (size_t) dev.strides[i],
                                  (size_t) dev.strides[i], (size_t) rows, cudaMemcpyDeviceToHost, ctx->stream);
        }
    }
    if (e == cudaSuccess) {
        e = cudaStreamSynchronize(ctx->stream);
    }
    gpu_leave(ctx);
    GPU_TRY(e, "writing a frame");
    return true;
}

static bool gpu_graph_read_output(vae_backend_t * backend, struct vae_graph * g, int first, int count, float * dst,
                                   char * err, size_t err_size) {
    struct gpu_context *      ctx   = backend->context;
    struct gpu_graph *        cg    = g->backend_data;
    const struct vae_gpu_act * out   = &cg->nodes[g->output->index].act;
    const size_t               bytes = (size_t) count * out->c * out->h * out->w * sizeof(float);
    if (count == 0) {
        return true;
    }
    if (!gpu_enter(ctx, err, err_size)) {
        return false;
    }
    cudaError_t e = gpu_stage(cg, bytes);
    if (e == cudaSuccess) {
        e = vae_gpu_to_nchw_f32(*out, first, count, cg->stage, backend->precision, ctx->stream);
    }
    if (e == cudaSuccess) {
        e = cudaMemcpyAsync(dst, cg->stage, bytes, cudaMemcpyDeviceToHost, ctx->stream);
    }
    if (e == cudaSuccess) {
        e = cudaStreamSynchronize(ctx->stream);
    }
    gpu_leave(ctx);
    GPU_TRY(e, "reading the output");
    return true;
}

static const char * gpu_node_impl(vae_backend_t * backend, const struct vae_graph * g, int i) {
    const struct gpu_graph * cg = g->backend_data;
    if (cg->nodes[i].fused && g->nodes[i]->op == VAE_OP_GROUP_NORM) {
        return "statistics in the conv's epilogue";
    }
    if (cg->nodes[i].fused) {
        return cg->nodes[g->nodes[i]->src[0]->index].norm_apart ? "in the conv's epilogue, to its own block"
                                                                 : "in the conv's epilogue";
    }
    return gpu_implicit_gemm(g->nodes[i]) ? vae_gpu_conv_variant_name(backend->precision, cg->nodes[i].variant) : NULL;
}

static const struct vae_backend_i gpu_backend_i = {
    /* .get_name          = */ gpu_get_name,
    /* .free              = */ gpu_free,
    /* .graph_prepare     = */ gpu_graph_prepare,
    /* .memory            = */ gpu_memory,
    /* .state_new         = */ gpu_state_new,
    /* .state_reset       = */ gpu_state_reset,
    /* .state_bytes       = */ gpu_state_bytes,
    /* .state_free        = */ gpu_state_free,
    /* .state_set_limit   = */ gpu_state_set_limit,
    /* .state_set_end     = */ gpu_state_set_end,
    /* .graph_compute     = */ gpu_graph_compute,
    /* .graph_read_frame  = */ gpu_graph_read_frame,
    /* .graph_read_output = */ gpu_graph_read_output,
    /* .graph_release     = */ gpu_graph_release,
    /* .node_impl         = */ gpu_node_impl,
};

// ---- init -------------------------------------------------------------------------------------

vae_backend_t * vae_backend_cuda_init(int device, enum vae_precision precision, char * err, size_t err_size) {
    struct gpu_context * ctx     = calloc(1, sizeof(*ctx));
    vae_backend_t *      backend = calloc(1, sizeof(*backend));
    if (!ctx || !backend) {
        free(ctx);
        free(backend);
        snprintf(err, err_size, "out of host memory");
        return NULL;
    }
    if (!vae_gpu_place_init(&ctx->place, device, err, err_size)) {
        free(ctx);
        free(backend);
        return NULL;
    }
    ctx->device = ctx->place.device;
    struct vae_gpu_device_info info;
    cudaError_t                e = vae_gpu_device_query(ctx->device, &info);
    if (e != cudaSuccess) {
        snprintf(err, err_size, "could not read " VAE_GPU_VENDOR " device %d: %s", ctx->device, cudaGetErrorString(e));
        free(ctx);
        free(backend);
        return NULL;
    }
    ctx->cc          = info.cc;
    ctx->warp        = info.warp;
    ctx->total_bytes = info.total_bytes;
    if (precision == VAE_PRECISION_AUTO) {
        precision = ctx->cc >= 80 ? VAE_PRECISION_BF16 : VAE_PRECISION_FP16;
    }
    if (!vae_gpu_device_has(&info, ctx->device, precision, vae_gpu_conv_variants(precision, ctx->cc), err, err_size)) {
        free(ctx);
        free(backend);
        return NULL;
    }
    if (!gpu_enter(ctx, err, err_size)) {
        free(ctx);
        free(backend);
        return NULL;
    }
    e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking);
    for (int i = 0; i < 2 && e == cudaSuccess; i++) {
        e = cudaEventCreate(&ctx->fence[i]);
    }
    // the conv tiles' attributes in this context, once: no launch (nor captured graph) sets them
    const cudaError_t es = e == cudaSuccess ? vae_gpu_conv_setup(precision, ctx->cc, ctx->warp) : cudaSuccess;
    if (e != cudaSuccess || es != cudaSuccess) {
        snprintf(err, err_size, "could not %s on " VAE_GPU_VENDOR " device %d: %s",
                 e != cudaSuccess ? "create a stream" : "set up the conv kernels", ctx->device,
                 cudaGetErrorString(e != cudaSuccess ? e : es));
        for (int i = 0; i < 2; i++) {
            if (ctx->fence[i]) {
                cudaEventDestroy(ctx->fence[i]);
            }
        }
        if (ctx->stream) {
            cudaStreamDestroy(ctx->stream);
        }
        gpu_leave(ctx);
        free(ctx);
        free(backend);
        return NULL;
    }
    gpu_leave(ctx);
    snprintf(ctx->name, sizeof(ctx->name), VAE_GPU_BACKEND " (device %d: %s, %s, %.0f GiB, %s)", ctx->device, info.name,
             info.arch, info.total_bytes / 1073741824.0, vae_precision_name(precision));
    backend->iface       = &gpu_backend_i;
    backend->context     = ctx;
    backend->precision   = precision;
    backend->auto_frames = 2;
    return backend;
}
