// bench-cuda: ms per frame on the CUDA backend at one precision (default bf16) for TAEF2 at 512x512
// (the real decoder from shared/models), the AutoencoderKL decoder of SD/SDXL at 1024x1024 and the
// Wan 2.1 VAE decoder at 480x832 per output frame, on request the Wan 2.2 TI2V-5B VAE decoder at
// 704x1280 (these at full width, random weights made by tests/bench/kl_torch.py and video_torch.py),
// beside the upstream decoders in PyTorch on the same GPU at the same precision
// (tests/bench/cuda_torch.py: eager or torch.compile, channels_last, cudnn.benchmark) in
// the same run: the ratio, TFLOP/s, the fraction of the GPU's matmul peak measured in the run at
// that precision, peak memory, and how far the two outputs are from each other and from
// PyTorch's fp32 decode of the same latent and weights.
//
//   bench-cuda [--models LIST] [--precision P] [--runs N] [--warmup W] [--python PATH] [--no-peer]
//              [--peer-compile] [--dir DIR] [--model PATH] [--taef2-latent HxW] [--kl-latent HxW]
//              [--wan-latent HxW] [--wan22-latent HxW] [--latent-frames T] [--chunk-frames C]
//              [--profile] [--leave-free MIB]
//
// A benchmark, not a test: it exits 0 when our side ran for every model, whether or not the peer
// could. See tests/bench/README.md.

#include "vae-backend.h"
#include "vae-model.h"
#include "vae-session.h"

#include "bench-common.h"

#include <cuda_runtime_api.h>

#define DEFAULT_PYTHON "python3"
#define PEER_SCRIPT    "tests/bench/cuda_torch.py"
#define TAEF2_FILE     "models/taef2_decoder.safetensors"  // in the shared directory
#define TAEF2_LATENT   64                                   // 512x512
#define TAEF2_CHANNELS 32
#define KL_LATENT      128                                  // 1024x1024
#define WAN_LATENT_H   60                                   // 480x832
#define WAN_LATENT_W   104
#define WAN22_LATENT_H 44                                   // 704x1280 (16x)
#define WAN22_LATENT_W 80
#define WAN22_WEIGHTS  "wan22_b256.safetensors"

enum { M_TAEF2, M_KL, M_WAN, M_WAN22, M_COUNT };

static const char * const model_names[M_COUNT] = { "taef2", "kl", "wan", "wan22" };
// output pixels per latent pixel
static const int model_scale[M_COUNT] = { 8, 8, 8, 16 };
// the targets of issue 29, for an H100 at bf16: ms per output frame, and the speed-up over PyTorch
// (0: none)
static const double target_ms[M_COUNT]    = { 0.3, 18.0, 6.2, 0.0 };
static const double target_ratio[M_COUNT] = { 3.0, 2.5, 2.5, 0.0 };

// the video decoders: streams of latent frames, the first 1 frame, each later one 4
static bool is_video(int m) {
    return m == M_WAN || m == M_WAN22;
}

struct opts {
    bool               do_model[M_COUNT];
    enum vae_precision precision;
    int                runs, warmup, latent_frames, chunk_frames;
    int                lh[M_COUNT], lw[M_COUNT];  // latent rows, columns
    const char *       python;
    const char *       script;
    const char *       taef2;
    bool               no_peer;
    bool               peer_compile;   // --peer-compile: the peer's decoder through torch.compile
    bool               profile;        // --profile: per-layer times of one latent frame's graph
    int                leave_free_mib; // --leave-free: device memory taken before each session but this (0: none)
    double             peak_tflops;    // the measured peak (0: none), for the per-layer fractions
};

struct peak {
    bool   ok;
    double tflops, ms;
    char   reason[512];
};

struct cuda_peer {
    bool   ok;
    double ms, min_ms, first_ms, stream_ms, ref_ms;  // per output frame; first: Wan's latent frame 0
    double load_mib, peak_mib, reserved_mib, compiled;
    char   version[64], reason[512];
};

// max |a - b| (a clamped to [lo, hi] first where lo < hi, as upstream clamps its output) and the
// PSNR of the two as the 8-bit frames would show them: clamp(y * scale + offset, 0, 1)
struct cmp {
    bool   ok;
    double max_abs, psnr;
};

struct result {
    const char *       name;
    bool               ok;
    char               reason[512];
    char               description[160];
    char               backend[128];         // vae_backend_name
    enum vae_precision precision;
    int                T, out_h, out_w, n_frames, chunk;
    float              out_scale, out_offset, lo, hi;
    double             flops_frame;          // model FLOPs per output frame (Wan: a later latent frame's / 4)
    struct flops       walked;               // our graph of one (later) latent frame, walked
    double             first_gflop;          // Wan: latent frame 0's graph, model GFLOP
    double             prepare_ms, ms, min_ms, first_ms, host_ms;
    bool               device_out;           // timed popping device RGBA frames (else host f32)
    size_t             peak_bytes;           // vae_session_peak_bytes
    double             device_mib;           // cudaMemGetInfo: held after the decodes - before vae_session_new
    double             base_used_mib;        // the device's used memory before vae_session_new (context, ...)
    float *            out;                  // our raw f32 output, [n_frames, 3, out_h, out_w]
    struct cuda_peer   peer;
    struct cmp         vs_torch, vs_ref, torch_vs_ref;
};

static void usage(FILE * f) {
    fprintf(f,
            "usage: bench-cuda [--models LIST] [--precision P] [--runs N] [--warmup W] [--python PATH] [--no-peer]\n"
            "                  [--peer-compile] [--dir DIR] [--model PATH] [--taef2-latent HxW] [--kl-latent HxW]\n"
            "                  [--wan-latent HxW] [--wan22-latent HxW] [--latent-frames T] [--chunk-frames C]\n"
            "                  [--profile] [--leave-free MIB]\n"
            "  --models LIST       comma-separated, of taef2, kl, wan, wan22 (default the first three; wan22:\n"
            "                      the Wan 2.2 TI2V-5B VAE, 48 latent channels, 16x)\n"
            "  --precision P       fp32, tf32, fp16 or bf16 (default bf16), both sides\n"
            "  --runs N            timed decodes per model and side; Wan: timed streams (default 20)\n"
            "  --warmup W          untimed decodes (Wan: streams) first, per model and side (default 3)\n"
            "  --python PATH       interpreter with torch (CUDA) and diffusers for the peer and the weights\n"
            "                      (default env VAE_BENCH_PYTHON, else %s from the PATH)\n"
            "  --no-peer           do not time PyTorch (the weights are still made with it; no peak, no ratio)\n"
            "  --peer-compile      the peer's decoder through torch.compile (compiled in its warm-up)\n"
            "  --dir DIR           keep the generated weights there (reused when they match); default: a\n"
            "                      temporary directory, removed at the end\n"
            "  --model PATH        TAEF2 decoder (default $VAE_SHARED_DIR/%s, else ../shared/...)\n"
            "  --taef2-latent HxW  TAEF2 latent size (default %dx%d: 512x512)\n"
            "  --kl-latent HxW     AutoencoderKL latent size (default %dx%d: 1024x1024)\n"
            "  --wan-latent HxW    Wan latent size (default %dx%d: 480x832)\n"
            "  --wan22-latent HxW  Wan 2.2 latent size (default %dx%d: 704x1280)\n"
            "  --latent-frames T   Wan, Wan 2.2: latent frames per stream, >= 2 (default 5: 1 + 4 x 4 = 17 frames)\n"
            "  --chunk-frames C    Wan, Wan 2.2: latent frames per decode step of the session (default 0: its choice)\n"
            "  --profile           also each layer's device time in one latent frame's graph (a later one for\n"
            "                      Wan), CUDA events around every node, beside its FLOPs and bytes\n"
            "  --leave-free MIB    before each session, take all the device's free memory but MIB (cudaMalloc):\n"
            "                      the session's out-of-memory fallback (a smaller chunk, then tiles) on hardware\n",
            DEFAULT_PYTHON, TAEF2_FILE, TAEF2_LATENT, TAEF2_LATENT, KL_LATENT, KL_LATENT, WAN_LATENT_H, WAN_LATENT_W,
            WAN22_LATENT_H, WAN22_LATENT_W);
}

// --- the PyTorch peer ------------------------------------------------------------------------------

// 'python' 'script' (checked first: false with a reason)
static bool peer_cmd(char * cmd, size_t size, const char * python, const char * script, char * reason,
                     size_t reason_size) {
    if (access(script, R_OK) != 0) {
        snprintf(reason, reason_size, "cannot read %.400s: %s", script, strerror(errno));
        return false;
    }
    if (strchr(python, '/') && access(python, X_OK) != 0) {
        snprintf(reason, reason_size, "cannot run %.400s: %s", python, strerror(errno));
        return false;
    }
    cmd[0] = '\0';
    sh_quote(cmd, size, python);
    append(cmd, size, " ");
    sh_quote(cmd, size, script);
    return true;
}

// the GPU's matmul rate at the precision (cuda_torch.py peak)
static void peak_run(struct peak * p, const struct opts * o) {
    char cmd[8192], sub[128], last[1024];
    memset(p, 0, sizeof(*p));
    if (!peer_cmd(cmd, sizeof(cmd), o->python, o->script, p->reason, sizeof(p->reason))) return;
    snprintf(sub, sizeof(sub), " peak --dtype %s 2>&1", vae_precision_name(o->precision));
    append(cmd, sizeof(cmd), sub);
    printf("peak: %s\n", cmd);
    if (!run_lines(cmd, last, sizeof(last), p->reason, sizeof(p->reason))) return;
    if (!strstr(last, "cuda_peak ") || !kv_double(last, "tflops", &p->tflops) || !kv_double(last, "ms", &p->ms) ||
        !(p->tflops > 0)) {
        snprintf(p->reason, sizeof(p->reason), "unexpected last line: %.300s", last);
        return;
    }
    p->ok = true;
}

static void peer_run(struct result * r, const struct opts * o, const char * dir) {
    struct cuda_peer * p = &r->peer;
    char               cmd[8192], sub[512], last[2048];
    if (!peer_cmd(cmd, sizeof(cmd), o->python, o->script, p->reason, sizeof(p->reason))) return;
    snprintf(sub, sizeof(sub), " time --model %s --dtype %s --runs %d --warmup %d%s --dir ", r->name,
             vae_precision_name(o->precision), o->runs, o->warmup, o->peer_compile ? " --compile" : "");
    append(cmd, sizeof(cmd), sub);
    sh_quote(cmd, sizeof(cmd), dir);
    if (!strcmp(r->name, "taef2")) {
        append(cmd, sizeof(cmd), " --taef2 ");
        sh_quote(cmd, sizeof(cmd), o->taef2);
        snprintf(sub, sizeof(sub), " --height-latent %d --width-latent %d", o->lh[M_TAEF2], o->lw[M_TAEF2]);
        append(cmd, sizeof(cmd), sub);
    }
    append(cmd, sizeof(cmd), " 2>&1");
    printf("%s peer: %s\n", r->name, cmd);
    if (!run_lines(cmd, last, sizeof(last), p->reason, sizeof(p->reason))) return;
    if (!strstr(last, "cuda_peer ") || !kv_double(last, "ms", &p->ms) || !kv_double(last, "min_ms", &p->min_ms) ||
        !kv_double(last, "first_ms", &p->first_ms) || !kv_double(last, "stream_ms", &p->stream_ms) ||
        !kv_double(last, "ref_ms", &p->ref_ms) || !kv_double(last, "load_mib", &p->load_mib) ||
        !kv_double(last, "peak_mib", &p->peak_mib) || !kv_double(last, "reserved_mib", &p->reserved_mib) ||
        !kv_double(last, "compiled", &p->compiled) ||
        !kv_find(last, "torch", p->version, sizeof(p->version))) {
        snprintf(p->reason, sizeof(p->reason), "unexpected last line from the peer: %.300s", last);
        return;
    }
    p->ok = true;
}

// --- comparing outputs ---------------------------------------------------------------------------------

static double unit(double y, float scale, float offset) {
    const double v = y * scale + offset;
    return v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v;  // NaN stays NaN
}

static struct cmp compare(const float * a, const float * b, size_t n, float lo, float hi, float scale, float offset) {
    struct cmp c  = { true, 0.0, 0.0 };
    double     se = 0.0;
    for (size_t i = 0; i < n; i++) {
        double x = a[i];
        if (lo < hi) x = x < lo ? lo : x > hi ? hi : x;
        const double d = fabs(x - (double) b[i]);
        if (!(d <= c.max_abs)) c.max_abs = d;  // NaN wins
        const double e = unit(x, scale, offset) - unit(b[i], scale, offset);
        se += e * e;
    }
    c.psnr = se > 0.0 ? 10.0 * log10((double) n / se) : INFINITY;
    return c;
}

// ours against PyTorch's output at the precision and its fp32 reference, and those two
static void compare_outputs(struct result * r, const char * dir) {
    const size_t n   = (size_t) r->n_frames * 3 * (size_t) r->out_h * (size_t) r->out_w;
    float *      pt  = malloc(n * sizeof(float));
    float *      ref = malloc(n * sizeof(float));
    char         name[64], why[512] = "out of memory";
    snprintf(name, sizeof(name), "%s.torch.f32", r->name);
    if (pt && read_f32(dir, name, pt, n, why, sizeof(why))) {
        r->vs_torch = compare(r->out, pt, n, r->lo, r->hi, r->out_scale, r->out_offset);
    } else {
        printf("%s: not compared with PyTorch's output: %s\n", r->name, why);
    }
    snprintf(name, sizeof(name), "%s.ref32.f32", r->name);
    if (ref && read_f32(dir, name, ref, n, why, sizeof(why))) {
        r->vs_ref = compare(r->out, ref, n, r->lo, r->hi, r->out_scale, r->out_offset);
        if (r->vs_torch.ok) r->torch_vs_ref = compare(pt, ref, n, r->lo, r->hi, r->out_scale, r->out_offset);
    } else {
        printf("%s: not compared with PyTorch's fp32 output: %s\n", r->name, why);
    }
    free(pt);
    free(ref);
}

// --- our side ------------------------------------------------------------------------------------------

struct stream_time {
    double total;         // the whole stream (pushes, drain, pops)
    double first;         // up to the step that gave the first frame, included
    int    frames, first_frames;
};

// pop every ready frame: into the device frame dev (overwritten: only the timing matters), or as
// raw f32 into host[k] (k < max_frames); *pop_failed tells a failed pop from a failed decode
static bool pop_ready(struct vae_session * s, const struct vae_frame * dev, float * host, size_t frame_floats,
                      int max_frames, int * popped, bool * pop_failed, char * err, size_t n) {
    while (vae_session_frames_ready(s) > 0) {
        struct vae_frame f = dev ? *dev : (struct vae_frame) { 0 };
        const int        k = *popped < max_frames ? *popped : max_frames - 1;
        if (!(dev ? vae_session_pop_frame(s, &f, err, n) :
                    vae_session_pop_output(s, host + (size_t) k * frame_floats, err, n))) {
            *pop_failed = true;
            return false;
        }
        (*popped)++;
    }
    return true;
}

// one stream of T latent frames: T pushes and a drain, each timed with the pops of the frames it
// made ready and a device synchronize (whatever the backend left queued is in the step's time)
static bool run_stream(struct vae_session * s, const float * lat, size_t lat_floats, int T,
                       const struct vae_frame * dev, float * host, size_t frame_floats, int max_frames,
                       struct stream_time * t, bool * pop_failed, char * err, size_t n) {
    memset(t, 0, sizeof(*t));
    *pop_failed = false;
    vae_session_reset(s);
    for (int k = 0; k <= T; k++) {
        const double t0 = now_ms();
        bool ok = k < T ? vae_session_push(s, lat + (size_t) k * lat_floats, err, n) : vae_session_drain(s, err, n);
        ok      = ok && pop_ready(s, dev, host, frame_floats, max_frames, &t->frames, pop_failed, err, n);
        const cudaError_t ce = cudaDeviceSynchronize();
        t->total += now_ms() - t0;
        if (!ok) return false;
        if (ce != cudaSuccess) {
            snprintf(err, n, "cudaDeviceSynchronize: %s", cudaGetErrorString(ce));
            return false;
        }
        if (!t->first_frames && t->frames) {
            t->first        = t->total;
            t->first_frames = t->frames;
        }
    }
    return true;
}

// ms per output frame of a stream: the image decoders' whole decode; the video decoders' steady
// state, the frames after the first step that delivered any
static double stream_ms(const struct stream_time * t) {
    return t->frames > t->first_frames ? (t->total - t->first) / (t->frames - t->first_frames) : t->total / t->frames;
}

static double used_mib(void) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return -1.0;
    return (double) (total_b - free_b) / 1048576.0;
}

// all the device's free memory but leave_mib, taken (NULL if less is free), so that the session
// meets a real cudaMalloc failure, not only its own plan's limit (vae_backend_limit is the total)
static void * take_device_memory(int leave_mib, const char * name) {
    size_t free_b = 0, total_b = 0;
    void * p      = NULL;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || free_b <= (size_t) leave_mib * 1048576) return NULL;
    const size_t take = free_b - (size_t) leave_mib * 1048576;
    if (cudaMalloc(&p, take) != cudaSuccess) return NULL;
    cudaMemGetInfo(&free_b, &total_b);
    printf("%s: --leave-free: took %.0f MiB of the device's memory, %.0f MiB free\n", name, take / 1048576.0,
           free_b / 1048576.0);
    return p;
}

// --- per layer ------------------------------------------------------------------------------------

static int cmp_float(const void * a, const void * b) {
    const float x = *(const float *) a, y = *(const float *) b;
    return x < y ? -1 : x > y;
}

// bytes node t moves at least once: its activation inputs and output, and its weights, at the
// precision's element size (channels unpadded)
static double node_bytes(const struct vae_tensor * t, enum vae_precision p) {
    const double e = p == VAE_PRECISION_FP16 || p == VAE_PRECISION_BF16 ? 2.0 : 4.0;
    double       n = 1.0;
    for (int d = 0; d < 4; d++) n *= (double) t->ne[d];
    for (int k = 0; k < VAE_MAX_SRC; k++) {
        if (!t->src[k]) continue;
        double m = 1.0;
        for (int d = 0; d < VAE_MAX_DIMS; d++) m *= (double) t->src[k]->ne[d];
        n += m;
    }
    return n * e;
}

// one latent frame's graph (a later one for Wan, on a state), prepared on be, computed o->runs
// times with each node timed (vae_graph.node_ms: CUDA events between nodes, launched directly);
// prints each node's median ms, GFLOP, TFLOP/s, fraction of the measured peak, bytes and GB/s,
// then the totals per op beside the replayed graph's time
static void profile_layers(const struct result * r, const struct vae_model * model, vae_backend_t * be,
                           const float * lat, int lh, int lw, const struct opts * o) {
    char               err[512] = "";
    const bool         later    = model->first_apart;
    struct vae_graph * g        = vae_model_build_graph(model, 1, lh, lw, !later, err, sizeof(err));
    vae_state_t *      st       = NULL;
    float *            ms       = NULL;
    if (!g || !vae_backend_graph_prepare(be, g, 0, err, sizeof(err)) ||
        (g->n_states && !(st = vae_backend_state_new(be, g, err, sizeof(err))))) {
        printf("%s: profile: %s\n", r->name, err);
        goto done;
    }
    const int runs = o->runs;
    ms             = calloc((size_t) g->n_nodes * (size_t) runs, sizeof(float));
    if (!ms) goto done;
    // replayed (the recorded graph, as a session runs it): the warm-up, then the time to compare with
    double replay = 0.0;
    for (int i = 0; i < 2 + runs; i++) {
        const double t0 = now_ms();
        if (!vae_backend_graph_compute(be, g, st, lat, err, sizeof(err))) {
            printf("%s: profile: compute: %s\n", r->name, err);
            goto done;
        }
        if (i >= 2) replay += (now_ms() - t0) / runs;
    }
    float * sample = malloc((size_t) g->n_nodes * sizeof(float));
    if (!sample) goto done;
    for (int k = 0; k < runs; k++) {
        g->node_ms = sample;
        const bool ok = vae_backend_graph_compute(be, g, st, lat, err, sizeof(err));
        g->node_ms    = NULL;
        if (!ok) {
            printf("%s: profile: compute: %s\n", r->name, err);
            free(sample);
            goto done;
        }
        for (int i = 0; i < g->n_nodes; i++) ms[(size_t) i * runs + k] = sample[i];
    }
    free(sample);

    enum { N_OPS = VAE_OP_COUNT };
    double op_ms[N_OPS] = { 0 }, op_fl[N_OPS] = { 0 }, op_b[N_OPS] = { 0 }, total = 0.0;
    int    op_n[N_OPS]  = { 0 };
    printf("\n%s: per layer, %s graph of one latent frame [%d, %d] -> [%lld, %lld, %lld, %lld], %s, median of %d "
           "profiled computes (CUDA events between nodes, launched directly)\n",
           r->name, later ? "a later" : "the", lh, lw, (long long) g->output->ne[0], (long long) g->output->ne[1],
           (long long) g->output->ne[2], (long long) g->output->ne[3], vae_precision_name(vae_backend_precision(be)),
           runs);
    printf("%4s %-17s %-34s %-22s %-22s %9s %9s %8s %6s %9s %8s\n", "#", "op", "name", "out [N,C,H,W]",
           "impl (chosen at prepare)", "ms", "GFLOP", "TFLOP/s", "%peak", "MB", "GB/s");
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        qsort(ms + (size_t) i * runs, (size_t) runs, sizeof(float), cmp_float);
        const double m = ms[(size_t) i * runs + runs / 2];
        double       executed;
        const double fl = node_flops(g, t, &executed), by = node_bytes(t, vae_backend_precision(be));
        char         shape[48], pct[16] = "", tf[16] = "";
        snprintf(shape, sizeof(shape), "[%lld,%lld,%lld,%lld]", (long long) t->ne[0], (long long) t->ne[1],
                 (long long) t->ne[2], (long long) t->ne[3]);
        if (fl > 0 && m > 0) {
            snprintf(tf, sizeof(tf), "%.1f", fl / (m / 1e3) / 1e12);
            if (o->peak_tflops > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * fl / (m / 1e3) / 1e12 / o->peak_tflops);
        }
        const char * impl = vae_backend_node_impl(be, g, i);
        printf("%4d %-17s %-34.34s %-22s %-22.22s %9.4f %9.2f %8s %6s %9.2f %8.0f\n", i, vae_op_name(t->op),
               t->name ? t->name : "-", shape, impl ? impl : "-", m, fl / 1e9, tf, pct, by / 1e6,
               m > 0 ? by / (m / 1e3) / 1e9 : 0.0);
        op_ms[t->op] += m;
        op_fl[t->op] += fl;
        op_b[t->op] += by;
        op_n[t->op]++;
        total += m;
    }
    printf("%s: per op: nodes, ms, share of the nodes' time, TFLOP/s, GB/s\n", r->name);
    for (int k = 0; k < N_OPS; k++) {
        if (!op_n[k]) continue;
        printf("  %-17s %4d %9.3f %5.1f%% %8.1f %8.0f\n", vae_op_name((enum vae_op) k), op_n[k], op_ms[k],
               100.0 * op_ms[k] / total, op_ms[k] > 0 ? op_fl[k] / (op_ms[k] / 1e3) / 1e12 : 0.0,
               op_ms[k] > 0 ? op_b[k] / (op_ms[k] / 1e3) / 1e9 : 0.0);
    }
    printf("%s: the nodes %.3f ms together; the recorded graph replayed %.3f ms (wall, input upload and "
           "synchronisation included)\n", r->name, total, replay);
done:
    free(ms);
    vae_backend_state_free(be, st);
    if (g) vae_backend_graph_release(be, g);
    vae_graph_free(g);
}

// load, session, warm-up, timed streams into device frames, one more stream into host f32 (r->out)
static void ours_run(struct result * r, const struct opts * o, const char * weights, const float * lat,
                     size_t lat_floats, int m) {
    char                 err[512] = "";
    struct vae_model *   model    = NULL;
    vae_backend_t *      be       = NULL;
    struct vae_session * s        = NULL;
    void *               dev_buf  = NULL;
    void *               ballast  = NULL;  // --leave-free
    const int            lh = o->lh[m], lw = o->lw[m], T = r->T;

    if (!(model = vae_model_load(weights, VAE_FAMILY_AUTO, err, sizeof(err)))) {
        snprintf(r->reason, sizeof(r->reason), "loading %.300s: %.150s", weights, err);
        goto done;
    }
    snprintf(r->description, sizeof(r->description), "%s", model->description);
    const int channels = model->latent_channels;
    if ((size_t) channels * (size_t) lh * (size_t) lw != lat_floats) {
        snprintf(r->reason, sizeof(r->reason), "%.300s takes %d latent channels, not %zu", weights, channels,
                 lat_floats / ((size_t) lh * (size_t) lw));
        goto done;
    }
    r->out_scale       = model->out_scale;
    r->out_offset      = model->out_offset;
    r->out_h           = model->scale * lh;
    r->out_w           = model->scale * lw;
    r->n_frames        = 0;
    for (int k = 0; k < T; k++) r->n_frames += vae_model_frames_of_latent(model, (uint64_t) k);
    if (is_video(m)) {  // diffusers clamps Wan's output to [-1, 1]; ours is raw
        r->lo = -model->out_offset / model->out_scale + 0.0f;  // no "-0"
        r->hi = (1.0f - model->out_offset) / model->out_scale;
    }
    // FLOPs: the graph of one latent frame (a later one for Wan), walked; AutoencoderKL's from its shapes
    for (int first = 0; first < 1 + model->first_apart; first++) {
        struct vae_graph * g = vae_model_build_graph(model, 1, lh, lw, first, err, sizeof(err));
        if (!g) {
            snprintf(r->reason, sizeof(r->reason), "building the graph: %.400s", err);
            goto done;
        }
        if (first) {
            r->first_gflop = count_flops(g).model / 1e9;
        } else {
            r->walked = count_flops(g);
        }
        vae_graph_free(g);
    }
    r->flops_frame = r->walked.model / model->frames_per_latent;
    if (m == M_KL) {
        const bool pq = vae_model_weight(model, "post_quant_conv.weight") != NULL ||
                        vae_model_weight(model, "decoder.post_quant_conv.weight") != NULL;
        r->flops_frame = kl_count_flops(channels, lh, lw, pq).total;
    }

    if (!(be = vae_backend_init(VAE_BACKEND_CUDA, 0, o->precision, err, sizeof(err)))) {
        snprintf(r->reason, sizeof(r->reason), "%s", err);
        goto done;
    }
    snprintf(r->backend, sizeof(r->backend), "%s", vae_backend_name(be));
    r->precision = vae_backend_precision(be);
    const size_t frame_floats = 3 * (size_t) r->out_h * (size_t) r->out_w;
    r->out                    = malloc((size_t) r->n_frames * frame_floats * sizeof(float));
    if (!r->out) {
        snprintf(r->reason, sizeof(r->reason), "out of memory");
        goto done;
    }
    // where the timed frames go: one RGBA frame in device memory, as the element hands them on
    struct vae_frame         dev_frame = { 0 };
    const struct vae_frame * dev       = NULL;
    cudaError_t              ce        = cudaMalloc(&dev_buf, (size_t) r->out_w * (size_t) r->out_h * 4);
    if (ce == cudaSuccess) {
        dev_frame.format     = VAE_PIXEL_RGBA;
        dev_frame.width      = r->out_w;
        dev_frame.height     = r->out_h;
        dev_frame.planes[0]  = dev_buf;
        dev_frame.strides[0] = 4 * r->out_w;
        dev_frame.device     = true;
        dev                  = &dev_frame;
    } else {
        printf("%s: cudaMalloc of a device frame: %s; timing with host f32 output\n", r->name, cudaGetErrorString(ce));
    }
    if (o->leave_free_mib > 0 && !(ballast = take_device_memory(o->leave_free_mib, r->name))) {
        snprintf(r->reason, sizeof(r->reason), "--leave-free %d: the device has less free", o->leave_free_mib);
        goto done;
    }
    r->base_used_mib = used_mib();

    const struct vae_session_config cfg = { channels, lh, lw, m == M_KL ? VAE_SPACE_RAW : VAE_SPACE_AUTO,
                                            is_video(m) ? o->chunk_frames : 1, 0, 0 };
    const double t_prep = now_ms();
    s = vae_session_new(model, be, &cfg, err, sizeof(err));
    r->prepare_ms = now_ms() - t_prep;
    if (!s) {
        snprintf(r->reason, sizeof(r->reason), "session: %.400s", err);
        goto done;
    }
    r->chunk = vae_session_chunk_frames(s);
    {
        char notice[512];
        while (vae_session_take_notice(s, notice, sizeof(notice))) printf("%s: session notice: %s\n", r->name, notice);
    }
    double sum = 0.0, first_sum = 0.0;
    for (int i = 0; i < o->warmup + o->runs; i++) {
        struct stream_time t;
        bool               pop_failed;
        if (!run_stream(s, lat, lat_floats, T, dev, r->out, frame_floats, r->n_frames, &t, &pop_failed, err,
                        sizeof(err))) {
            if (pop_failed && dev) {
                printf("%s: popping into a device RGBA frame failed (%s); timing with the raw f32 output copied to "
                       "the host instead\n", r->name, err);
                dev = NULL;
                i--;
                continue;
            }
            snprintf(r->reason, sizeof(r->reason), "decode: %.400s", err);
            goto done;
        }
        if (t.frames != r->n_frames) {
            snprintf(r->reason, sizeof(r->reason), "a stream of %d latent frames gave %d frames, not %d", T, t.frames,
                     r->n_frames);
            goto done;
        }
        if (i < o->warmup) continue;
        const double ms = stream_ms(&t);
        sum += ms;
        first_sum += t.first;
        if (i == o->warmup || ms < r->min_ms) r->min_ms = ms;
    }
    r->device_out = dev != NULL;
    r->ms         = sum / o->runs;
    r->first_ms   = first_sum / o->runs;
    {  // the frames for the comparison: the raw f32 output, copied to the host
        struct stream_time t;
        bool               pop_failed;
        if (!run_stream(s, lat, lat_floats, T, NULL, r->out, frame_floats, r->n_frames, &t, &pop_failed, err,
                        sizeof(err))) {
            snprintf(r->reason, sizeof(r->reason), "decode to host f32: %.400s", err);
            goto done;
        }
        r->host_ms = t.total / t.frames;
    }
    r->peak_bytes = vae_session_peak_bytes(s);
    r->device_mib = used_mib() - r->base_used_mib;
    {
        size_t       bad = 0;
        const size_t n   = (size_t) r->n_frames * frame_floats;
        for (size_t i = 0; i < n; i++) bad += !isfinite(r->out[i]);
        if (bad) {
            snprintf(r->reason, sizeof(r->reason), "%zu non-finite output values", bad);
            goto done;
        }
    }
    r->ok = true;
done:
    // everything ours goes before the peer runs: it gets the GPU to itself
    vae_session_free(s);
    cudaFree(ballast);
    if (r->ok && o->profile) {
        profile_layers(r, model, be, lat, lh, lw, o);
    }
    vae_backend_free(be);
    vae_model_free(model);
    cudaFree(dev_buf);
}

// --- one model: weights, ours, the peer ---------------------------------------------------------------

// the weights and latents of model m in dir, then both sides
static void run_model(struct result * r, int m, const struct opts * o, const char * dir) {
    char   script[4096], path[4096];
    float *lat = NULL;
    const int threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
    r->name = model_names[m];
    r->T    = is_video(m) ? o->latent_frames : 1;
    printf("\n%s: latent %dx%d%s, %s, %d warm-up + %d timed %s\n", r->name, o->lh[m], o->lw[m],
           is_video(m) ? " x T" : "", vae_precision_name(o->precision), o->warmup, o->runs,
           is_video(m) ? "streams" : "decodes");
    fflush(stdout);
    size_t lat_floats = 0;
    if (m == M_TAEF2) {
        snprintf(path, sizeof(path), "%s", o->taef2);
        lat_floats = (size_t) TAEF2_CHANNELS * (size_t) o->lh[m] * (size_t) o->lw[m];
        if (!(lat = malloc(lat_floats * sizeof(float)))) {
            snprintf(r->reason, sizeof(r->reason), "out of memory");
            return;
        }
        fill_normal(lat, lat_floats, 0x9E3779B97F4A7C15ull);
        if (!write_f32(dir, "taef2.latent.f32", lat, lat_floats, r->reason, sizeof(r->reason))) goto done;
    } else if (m == M_KL) {
        source_path(script, sizeof(script), KL_SCRIPT);
        if (kl_gen(o->python, script, dir, o->lh[m], o->lw[m], threads, r->reason, sizeof(r->reason)) < 0) goto done;
        lat_floats = (size_t) KL_CHANNELS * (size_t) o->lh[m] * (size_t) o->lw[m];
        if (!(lat = malloc(lat_floats * sizeof(float)))) {
            snprintf(r->reason, sizeof(r->reason), "out of memory");
            return;
        }
        if (!read_f32(dir, "kl.latent.f32", lat, lat_floats, r->reason, sizeof(r->reason))) goto done;
        dir_path(path, sizeof(path), dir, KL_WEIGHTS);
    } else {
        source_path(script, sizeof(script), VIDEO_SCRIPT);
        const char * weights = m == M_WAN22 ? WAN22_WEIGHTS : WAN_WEIGHTS;
        char         latents[64];
        if (!video_gen(r->name, weights, o->python, script, NULL, dir, r->T, o->lh[m], o->lw[m], threads, "",
                       r->reason, sizeof(r->reason))) {
            goto done;
        }
        lat_floats = (size_t) video_channels(r->name) * (size_t) o->lh[m] * (size_t) o->lw[m];
        if (!(lat = malloc((size_t) r->T * lat_floats * sizeof(float)))) {
            snprintf(r->reason, sizeof(r->reason), "out of memory");
            return;
        }
        snprintf(latents, sizeof(latents), "%s.latent.f32", r->name);
        if (!read_f32(dir, latents, lat, (size_t) r->T * lat_floats, r->reason, sizeof(r->reason))) goto done;
        dir_path(path, sizeof(path), dir, weights);
    }
    printf("%s: ours...\n", r->name);
    fflush(stdout);
    ours_run(r, o, path, lat, lat_floats, m);
    if (!r->ok) {
        printf("%s: ours failed: %s\n", r->name, r->reason);
    } else {
        printf("%s: ours: %s; %s, %s; session prepared in %.0f ms (chunk %d); %.3f ms/frame (min %.3f)%s; one %s "
               "with the raw f32 output copied to the host: %.3f ms per frame of it; session peak %.1f MiB, device "
               "memory +%.0f MiB over %.0f MiB in use before the session\n",
               r->name, r->description, r->backend, vae_precision_name(r->precision), r->prepare_ms, r->chunk, r->ms,
               r->min_ms, r->device_out ? " into a device RGBA frame" : " into host f32",
               is_video(m) ? "stream" : "decode", r->host_ms, r->peak_bytes / 1048576.0, r->device_mib,
               r->base_used_mib);
    }
    if (!o->no_peer) {
        peer_run(r, o, dir);
        if (!r->peer.ok) printf("%s peer: unavailable (%s)\n", r->name, r->peer.reason);
        if (r->ok && r->peer.ok) compare_outputs(r, dir);
    }
done:
    free(lat);
}

// --- report ------------------------------------------------------------------------------------------

static void fmt_cmp(char * dst, size_t size, const struct cmp * c) {
    if (c->ok) {
        snprintf(dst, size, "%.1f dB (%.2g)", c->psnr, c->max_abs);
    } else {
        snprintf(dst, size, "-");
    }
}

static void report(const struct result * res, const struct opts * o, const struct peak * pk) {
    const char * prec = vae_precision_name(o->precision);
    printf("\n");
    if (pk->ok) {
        printf("measured peak: %.1f TFLOP/s (%s matmul 8192x8192x8192 through PyTorch, best of 10 rounds of 10: "
               "%.3f ms); %% peak below = TFLOP/s / this\n", pk->tflops, prec, pk->ms);
    } else if (!o->no_peer) {
        printf("measured peak: unavailable (%s)\n", pk->reason);
    }
    printf("\n%-36s %9s %9s %9s %8s %7s %10s %11s %9s %18s %18s\n", "impl", "ms/frame", "min ms", "first ms",
           "TFLOP/s", "% peak", "peak MiB", "device MiB", "speed-up", "vs PyTorch", "vs fp32");
    for (int m = 0; m < M_COUNT; m++) {
        const struct result * r = &res[m];
        if (!o->do_model[m]) continue;
        char label[128], pct[16] = "-", first[16] = "-", a[32], b[32];
        snprintf(label, sizeof(label), "%s %dx%d: ours", r->name, model_scale[m] * o->lw[m], model_scale[m] * o->lh[m]);
        if (!r->ok) {
            printf("%-36s unavailable (%s)\n", label, r->reason);
        } else {
            const double tf = r->flops_frame / (r->ms / 1e3) / 1e12;
            if (pk->ok) snprintf(pct, sizeof(pct), "%.1f", 100.0 * tf / pk->tflops);
            if (is_video(m)) snprintf(first, sizeof(first), "%.2f", r->first_ms);
            char speed[16] = "-";
            if (r->peer.ok) snprintf(speed, sizeof(speed), "%.2f", r->peer.ms / r->ms);
            fmt_cmp(a, sizeof(a), &r->vs_torch);
            fmt_cmp(b, sizeof(b), &r->vs_ref);
            printf("%-36s %9.3f %9.3f %9s %8.1f %7s %10.1f %11.0f %9s %18s %18s\n", label, r->ms, r->min_ms, first, tf,
                   pct, r->peak_bytes / 1048576.0, r->device_mib, speed, a, b);
        }
        if (o->no_peer) continue;
        const struct cuda_peer * p = &r->peer;
        if (!p->ok) {
            printf("%-36s unavailable (%s)\n", "  PyTorch", p->reason);
            continue;
        }
        char version[64];
        short_version(version, sizeof(version), p->version);
        snprintf(label, sizeof(label), "  PyTorch %s (%s, channels_last%s)", version, prec,
                 p->compiled > 0 ? ", compiled" : "");
        const double tf = r->flops_frame > 0 ? r->flops_frame / (p->ms / 1e3) / 1e12 : 0.0;
        snprintf(pct, sizeof(pct), "-");
        if (pk->ok && tf > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * tf / pk->tflops);
        snprintf(first, sizeof(first), "-");
        if (is_video(m)) snprintf(first, sizeof(first), "%.2f", p->first_ms);
        fmt_cmp(b, sizeof(b), &r->torch_vs_ref);
        printf("%-36s %9.3f %9.3f %9s %8.1f %7s %10.1f %11.1f %9s %18s %18s\n", label, p->ms, p->min_ms, first, tf,
               pct, p->peak_mib, p->reserved_mib, "1.00", "-", b);
    }
    printf("ms/frame: wall clock per output frame, mean of the timed decodes (Wan: steady state, the latent frames "
           "after the first, 4 frames each; first ms: latent frame 0, 1 frame); ours: push + drain + the pops into a "
           "device RGBA frame + cudaDeviceSynchronize, the latent's upload included; PyTorch: the decode from a "
           "latent already on the GPU, synchronized; TFLOP/s: model FLOPs per frame / ms; peak MiB: ours "
           "vae_session_peak_bytes (weights, arena, state), PyTorch torch.cuda.max_memory_allocated (weights "
           "included); device MiB: ours the device memory the session took (cudaMemGetInfo), PyTorch "
           "max_memory_reserved; speed-up = PyTorch ms / ours; vs PyTorch / vs fp32: PSNR of the 8-bit-range "
           "frames [0, 1] (max |diff| of the raw output) against PyTorch's output at %s and against PyTorch's fp32 "
           "decode (TF32 off); ours clamped where upstream clamps (Wan)\n", prec);
    for (int m = 0; m < M_COUNT; m++) {
        const struct result * r = &res[m];
        if (!o->do_model[m] || !r->ok) continue;
        printf("%s: %s; model GFLOP per frame %.2f", r->name, r->description, r->flops_frame / 1e9);
        if (m == M_KL) {
            printf(" (from the shapes; our graph walked: %.2f model, %.2f executed)", r->walked.model / 1e9,
                   r->walked.executed / 1e9);
        } else if (is_video(m)) {
            printf(" (a later latent frame's graph / 4: %.1f executed; latent frame 0: %.1f GFLOP; attention %.1f%%)",
                   r->walked.executed / 4 / 1e9, r->first_gflop, 100.0 * r->walked.attention / r->walked.model);
        } else {
            printf(" (%.2f executed by our graph)", r->walked.executed / 1e9);
        }
        if (r->peer.ok) printf("; PyTorch's fp32 reference decode took %.1f ms", r->peer.ref_ms);
        printf("\n");
    }

    // the rows for tests/bench/RESULTS-cuda.md
    struct cudaDeviceProp prop;
    const bool     have_prop = cudaGetDeviceProperties(&prop, 0) == cudaSuccess;
    printf("\nFor tests/bench/RESULTS-cuda.md (%s, %s; targets for an H100 at bf16):\n\n",
           have_prop ? prop.name : "?", prec);
    printf("| model | precision | ours ms/frame | PyTorch ms/frame | speed-up | ours TFLOP/s (%% peak) | "
           "PyTorch TFLOP/s (%% peak) | ours MiB session / device | PyTorch MiB allocated / reserved | PSNR ours vs "
           "PyTorch | PSNR vs fp32: ours / PyTorch | target |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int m = 0; m < M_COUNT; m++) {
        const struct result *    r = &res[m];
        const struct cuda_peer * p = &r->peer;
        if (!o->do_model[m] || !r->ok) continue;
        const double tf = r->flops_frame / (r->ms / 1e3) / 1e12;
        char         ptf[48] = "-", pms[16] = "-", speed[16] = "-", pmem[32] = "-", met[64];
        char         pct[16] = "-", vs[16] = "-", ref[32] = "-";
        if (pk->ok) snprintf(pct, sizeof(pct), " (%.1f%%)", 100.0 * tf / pk->tflops);
        if (p->ok) {
            const double ptfl = r->flops_frame / (p->ms / 1e3) / 1e12;
            snprintf(pms, sizeof(pms), "%.3f", p->ms);
            snprintf(speed, sizeof(speed), "%.2fx", p->ms / r->ms);
            snprintf(ptf, sizeof(ptf), "%.1f", ptfl);
            if (pk->ok) snprintf(ptf, sizeof(ptf), "%.1f (%.1f%%)", ptfl, 100.0 * ptfl / pk->tflops);
            snprintf(pmem, sizeof(pmem), "%.0f / %.0f", p->peak_mib, p->reserved_mib);
        }
        if (r->vs_torch.ok) snprintf(vs, sizeof(vs), "%.1f dB", r->vs_torch.psnr);
        if (r->vs_ref.ok && r->torch_vs_ref.ok) {
            snprintf(ref, sizeof(ref), "%.1f / %.1f dB", r->vs_ref.psnr, r->torch_vs_ref.psnr);
        } else if (r->vs_ref.ok) {
            snprintf(ref, sizeof(ref), "%.1f / - dB", r->vs_ref.psnr);
        }
        snprintf(met, sizeof(met), "(no target)");
        if (target_ms[m] > 0) {
            snprintf(met, sizeof(met), "<= %g ms: %s; >= %gx: %s", target_ms[m], r->ms <= target_ms[m] ? "met" : "missed",
                     target_ratio[m], !p->ok ? "-" : p->ms >= target_ratio[m] * r->ms ? "met" : "missed");
        }
        printf("| %s %dx%d | %s | %.3f | %s | %s | %.1f%s | %s | %.0f / %.0f | %s | %s | %s | %s |\n", r->name,
               model_scale[m] * o->lw[m], model_scale[m] * o->lh[m], prec, r->ms, pms, speed, tf, pk->ok ? pct : "", ptf,
               r->peak_bytes / 1048576.0, r->device_mib, pmem, vs, ref, met);
    }
}

// --- main --------------------------------------------------------------------------------------------

// the model of option a, --<model>-latent, or -1
static int latent_option(const char * a) {
    for (int m = 0; m < M_COUNT; m++) {
        const size_t n = strlen(model_names[m]);
        if (!strncmp(a, "--", 2) && !strncmp(a + 2, model_names[m], n) && !strcmp(a + 2 + n, "-latent")) return m;
    }
    return -1;
}

// the TAEF2 decoder: $VAE_SHARED_DIR/models/..., else ../shared/models/... from the current
// directory, else beside the source directory
static const char * default_taef2(void) {
    static char  buf[4096];
    const char * env = getenv("VAE_SHARED_DIR");
    if (env && *env) {
        snprintf(buf, sizeof(buf), "%s/%s", env, TAEF2_FILE);
        return buf;
    }
    snprintf(buf, sizeof(buf), "../shared/%s", TAEF2_FILE);
#ifdef VAE_SOURCE_DIR
    if (access(buf, R_OK) != 0) snprintf(buf, sizeof(buf), "%s/../shared/%s", VAE_SOURCE_DIR, TAEF2_FILE);
#endif
    return buf;
}

static void device_info(void) {
    struct cudaDeviceProp prop;
    int            drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    const cudaError_t ce = cudaGetDeviceProperties(&prop, 0);
    if (ce != cudaSuccess) {
        printf("device 0: %s\n", cudaGetErrorString(ce));
        return;
    }
    printf("device 0: %s, compute capability %d.%d, %d SMs, %.1f GiB; driver CUDA %d.%d, runtime %d.%d\n", prop.name,
           prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, drv / 1000,
           drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

int main(int argc, char ** argv) {
    struct opts o = { .do_model = { true, true, true, false },
                      .precision     = VAE_PRECISION_BF16,
                      .runs          = 20,
                      .warmup        = 3,
                      .latent_frames = 5,
                      .lh            = { TAEF2_LATENT, KL_LATENT, WAN_LATENT_H, WAN22_LATENT_H },
                      .lw            = { TAEF2_LATENT, KL_LATENT, WAN_LATENT_W, WAN22_LATENT_W } };
    const char * dir_opt = NULL;
    for (int i = 1; i < argc; i++) {
        const char * a       = argv[i];
        const bool   has_val = i + 1 < argc;
        if (!strcmp(a, "--models") && has_val) {
            const char * p = argv[++i];
            memset(o.do_model, 0, sizeof(o.do_model));
            while (*p) {
                const size_t n   = strcspn(p, ",");
                int          hit = -1;
                for (int k = 0; k < M_COUNT; k++) {
                    if (strlen(model_names[k]) == n && !strncmp(p, model_names[k], n)) hit = k;
                }
                if (hit < 0) {
                    fprintf(stderr, "bench-cuda: --models takes a comma-separated list of taef2, kl, wan, wan22\n");
                    return 2;
                }
                o.do_model[hit] = true;
                p += n + (p[n] == ',');
            }
        } else if (!strcmp(a, "--precision") && has_val) {
            const char * p = argv[++i];
            o.precision    = VAE_PRECISION_COUNT;
            for (int k = VAE_PRECISION_FP32; k < VAE_PRECISION_COUNT; k++) {
                if (!strcmp(p, vae_precision_name((enum vae_precision) k))) o.precision = (enum vae_precision) k;
            }
            if (o.precision == VAE_PRECISION_COUNT) {
                fprintf(stderr, "bench-cuda: --precision takes fp32, tf32, fp16 or bf16\n");
                return 2;
            }
        } else if (!strcmp(a, "--runs") && has_val) {
            if (!parse_int(argv[++i], 1, &o.runs)) {
                fprintf(stderr, "bench-cuda: --runs takes an integer >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--warmup") && has_val) {
            if (!parse_int(argv[++i], 0, &o.warmup)) {
                fprintf(stderr, "bench-cuda: --warmup takes an integer >= 0\n");
                return 2;
            }
        } else if (!strcmp(a, "--python") && has_val) {
            o.python = argv[++i];
        } else if (!strcmp(a, "--no-peer")) {
            o.no_peer = true;
        } else if (!strcmp(a, "--peer-compile")) {
            o.peer_compile = true;
        } else if (!strcmp(a, "--dir") && has_val) {
            dir_opt = argv[++i];
        } else if (!strcmp(a, "--model") && has_val) {
            o.taef2 = argv[++i];
        } else if (latent_option(a) >= 0 && has_val) {
            const int m = latent_option(a);
            if (!parse_hw(argv[++i], &o.lh[m], &o.lw[m])) {
                fprintf(stderr, "bench-cuda: %s takes HxW (latent rows x columns, 1..512)\n", a);
                return 2;
            }
        } else if (!strcmp(a, "--latent-frames") && has_val) {
            if (!parse_int(argv[++i], 2, &o.latent_frames)) {
                fprintf(stderr, "bench-cuda: --latent-frames takes an integer >= 2\n");
                return 2;
            }
        } else if (!strcmp(a, "--chunk-frames") && has_val) {
            if (!parse_int(argv[++i], 0, &o.chunk_frames)) {
                fprintf(stderr, "bench-cuda: --chunk-frames takes an integer >= 0 (0: the session's choice)\n");
                return 2;
            }
        } else if (!strcmp(a, "--leave-free") && has_val) {
            if (!parse_int(argv[++i], 1, &o.leave_free_mib)) {
                fprintf(stderr, "bench-cuda: --leave-free takes MiB >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--profile")) {
            o.profile = true;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench-cuda: unknown or incomplete argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o.python) {
        const char * env = getenv("VAE_BENCH_PYTHON");
        o.python         = env && *env ? env : DEFAULT_PYTHON;
    }
    if (!o.taef2) o.taef2 = default_taef2();
    static char script[4096];
    source_path(script, sizeof(script), PEER_SCRIPT);
    o.script = script;
    if (!vae_backend_is_built(VAE_BACKEND_CUDA)) {
        fprintf(stderr, "bench-cuda: the CUDA backend is not built into this program\n");
        return 1;
    }
    device_info();

    char         dir_buf[4096];
    bool         own_dir;
    const char * dir = work_dir(dir_opt, dir_buf, sizeof(dir_buf), &own_dir);
    if (!dir) return 1;
    printf("precision %s; %d warm-up + %d timed decodes (Wan: streams of %d latent frames) per model and side; "
           "peer %s %s; weights and latents in %s\n",
           vae_precision_name(o.precision), o.warmup, o.runs, o.latent_frames, o.python, o.script, dir);

    struct peak peak = { 0 };
    if (!o.no_peer) {
        peak_run(&peak, &o);
        if (!peak.ok) printf("peak: unavailable (%s)\n", peak.reason);
    }
    o.peak_tflops = peak.ok ? peak.tflops : 0.0;
    struct result res[M_COUNT];
    memset(res, 0, sizeof(res));
    int failed = 0;
    for (int m = 0; m < M_COUNT; m++) {
        res[m].name = model_names[m];
        if (!o.do_model[m]) continue;
        run_model(&res[m], m, &o, dir);
        failed += !res[m].ok;
    }
    report(res, &o, &peak);
    for (int m = 0; m < M_COUNT; m++) free(res[m].out);
    if (own_dir) remove_own_dir(dir);
    return failed ? 1 : 0;
}
