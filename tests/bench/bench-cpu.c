// bench-cpu: ms per 832x480 TAEF2 frame (latent 32x60x104) on the CPU backend, beside the
// upstream-equivalent PyTorch decoder (tests/bench/taef2_torch.py) run on the same machine in
// the same run, with FLOP/s and the fraction of this machine's measured fp32 peak (oneDNN sgemm);
// then the causal video decoders (the Wan 2.1 VAE at full width and TAEW2.1, random weights made
// by tests/bench/video_torch.py) streamed through a decode session, beside the upstream PyTorch
// decoders (diffusers' AutoencoderKLWan, taehv.py) on the same weights and latents; on request
// (--models kl) the AutoencoderKL decoder of SD 1.x/2.x / SDXL at full width (random weights made
// by tests/bench/kl_torch.py) at 1024x1024, whole-frame and with exact tiled decode, beside
// diffusers' AutoencoderKL.decode; (--models hyvideo15) HunyuanVideo 1.5's VAE at full width beside
// diffusers' AutoencoderKLHunyuanVideo15.decode of the whole clip; (--models ltx2) LTX-2's video VAE
// at full width, streamed, beside diffusers' AutoencoderKLLTX2Video.decode of the whole clip; (--models
// minimax) MiniMax-H3's ViT video VAE at the released widths with N of its 36 blocks, streamed in upstream's
// chunks, beside diffusers' AutoencoderKLMiniMaxH3.decode of the whole clip, tiling off; and (--models
// svd,seedvr2) SVD's temporal decoder per decode_chunk_size and SeedVR2's VAE untiled and tiled, beside diffusers'
// AutoencoderKLTemporalDecoder and SeedVR's VideoAutoencoderKLWrapper, timed over whole clips. TAEF2, Wan, TAEHV and
// AutoencoderKL run at each precision asked (--precisions fp32,bf16), on both sides: our backend asked for it (bf16
// asked is fp32 in effect where oneDNN's ISA has no bf16), the peer's module and latents cast to it; the other
// models run in fp32. The backend's name gives oneDNN's ISA in effect, which --isa lowers (DNNL_MAX_CPU_ISA).
//
//   bench-cpu [--model PATH] [--frames N] [--warmup W] [--precisions LIST] [--isa NAME]
//             [--python PATH] [--peer-script PATH] [--no-peer]
//             [--models LIST] [--video-python PATH] [--taehv-py PATH] [--video-latent HxW]
//             [--latent-frames T] [--video-streams N] [--video-warmup W] [--video-dir DIR]
//             [--kl-latent HxW] [--kl-runs N] [--kl-warmup W] [--kl-tiles LIST] [--kl-layouts LIST]
//             [--svd-latent HxW] [--svd-frames N] [--svd-chunks LIST] [--seedvr-latent HxW]
//             [--seedvr-frames T] [--seedvr-tiles LIST] [--hyv-latent HxW] [--hyv-frames T] [--ltx-latent HxW]
//             [--ltx-frames T] [--mm-latent HxW] [--mm-frames T] [--mm-blocks N] [--clip-layouts LIST]
//
// A benchmark, not a test: it always exits 0 when our side ran, whether or not the peer could.
// See tests/bench/README.md.

#include "vae-backend.h"
#include "vae-model.h"
#include "vae-session.h"

#include "bench-common.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>

#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LATENT_H 60
#define LATENT_W 104

#define DEFAULT_MODEL  "../shared/models/taef2_decoder.safetensors"
#define DEFAULT_PYTHON "/usr/bin/python3"
#define PEER_SCRIPT    "tests/bench/taef2_torch.py"

#define SGEMM_N    2048
#define SGEMM_RUNS 5

#define VIDEO_LATENT_H 30
#define VIDEO_LATENT_W 52

// SVD: 14 frames (its pipeline's decode_chunk_size 14: one call) of 320x576; at 576x1024 (72x128)
// our session needs 22.5 GB, more than this 24 GB machine has free
#define SVD_FRAMES    14
#define SVD_LATENT_H  40
#define SVD_LATENT_W  72
// SeedVR2: 640x360; its 1280x720 (90x160) needs 31.9 GB untiled (our session's plan)
#define HYV_LATENT_H    12
#define HYV_LATENT_W    20
// LTX-2: 64x96 frames, 25 latent frames (a stream starts after 23, its lookahead + 1)
#define LTX_LATENT_H    2
#define LTX_LATENT_W    3
#define LTX_FRAMES      25
// MiniMax-H3: 48x32 frames, 12 latent frames (two chunks: 39 frames), 4 of the 36 blocks (all 36 are 2.4 G
// parameters: 9.6 GB in f32 on each side)
#define MM_LATENT_H     2
#define MM_LATENT_W     3
#define MM_FRAMES       12
#define MM_BLOCKS       4
#define SEEDVR_LATENT_H 45
#define SEEDVR_LATENT_W 80

#define KL_LATENT    128  // 1024x1024 output
#define KL_MAX_TILES 8

#define MAX_PRECISIONS 2  // fp32, bf16

static void usage(FILE * f) {
    fprintf(f,
            "usage: bench-cpu [--model PATH] [--frames N] [--warmup W] [--precisions LIST] [--isa NAME] [--python PATH]\n"
            "                 [--peer-script PATH] [--no-peer] [--models LIST] [--video-python PATH]\n"
            "                 [--taehv-py PATH] [--video-latent HxW] [--latent-frames T]\n"
            "                 [--video-streams N] [--video-warmup W] [--video-dir DIR]\n"
            "                 [--kl-latent HxW] [--kl-runs N] [--kl-warmup W] [--kl-tiles LIST] [--kl-layouts LIST]\n"
            "                 [--svd-latent HxW] [--svd-frames N] [--svd-chunks LIST] [--seedvr-latent HxW]\n"
            "                 [--seedvr-frames T] [--seedvr-tiles LIST] [--hyv-latent HxW] [--hyv-frames T]\n"
            "                 [--ltx-latent HxW] [--ltx-frames T] [--mm-latent HxW] [--mm-frames T] [--mm-blocks N]\n"
            "                 [--clip-layouts LIST]\n"
            "  --model PATH        TAEF2 decoder safetensors (default %s)\n"
            "  --frames N          TAEF2: timed decodes, one frame each (default 5)\n"
            "  --warmup W          TAEF2: untimed decodes first (default 1)\n"
            "  --precisions LIST   fp32, bf16 or both, comma-separated, ours and the peer's: TAEF2, Wan, TAEHV and\n"
            "                      AutoencoderKL, a row each (default fp32; the other models: fp32)\n"
            "  --isa NAME          oneDNN's highest ISA (DNNL_MAX_CPU_ISA: AVX2, AVX512_CORE, ...; default: all)\n"
            "  --python PATH       interpreter with torch for the TAEF2 peer (default %s; env VAE_BENCH_PYTHON)\n"
            "  --peer-script PATH  the TAEF2 PyTorch peer (default %s in the source dir)\n"
            "  --no-peer           do not time PyTorch (the video weights are still made with it)\n"
            "  --models LIST       comma-separated, of taef2, wan, taehv, svd, seedvr2, hyvideo15, ltx2, minimax, kl\n"
            "                      (default taef2,wan,taehv)\n"
            "  --video-python PATH interpreter with torch >= 2 and diffusers for %s and kl_torch.py\n"
            "                      (default env VAE_BENCH_VIDEO_PYTHON, else the --python one)\n"
            "  --taehv-py PATH     upstream madebyollin/taehv taehv.py (default env TAEHV_PY)\n"
            "  --video-latent HxW  latent size of the video decoders (default %dx%d)\n"
            "  --latent-frames T   latent frames per stream, >= 2 (default 3: 1 + 4 + 4 = 9 frames)\n"
            "  --video-streams N   timed streams per decoder and side (default 0: 1 for Wan, 5 for TAEHV)\n"
            "  --video-warmup W    untimed streams of 2 latent frames first (default 1)\n"
            "  --video-dir DIR     keep the generated weights there (reused when they match; AutoencoderKL's\n"
            "                      too); default: a temporary directory, removed at the end\n"
            "  --kl-latent HxW     AutoencoderKL latent size (default %dx%d: 1024x1024 output)\n"
            "  --kl-runs N         AutoencoderKL: timed decodes per row and per peer layout (default 2)\n"
            "  --kl-warmup W       AutoencoderKL: untimed decodes first (default 1)\n"
            "  --kl-tiles LIST     AutoencoderKL: the session's tile_size of each row (default 0,256,128; 0 = whole frame)\n"
            "  --kl-layouts LIST   AutoencoderKL peer memory layouts (default nchw,channels_last: the faster is reported)\n"
            "  --svd-latent HxW    SVD latent size (default %dx%d: 320x576 frames)\n"
            "  --svd-frames N      SVD clip length in latent frames = frames (default %d)\n"
            "  --svd-chunks LIST   SVD decode_chunk_size of each row, ours and the peer's (default %d,4; 0: whole clip)\n"
            "  --seedvr-latent HxW SeedVR2 latent size (default %dx%d: 640x360 frames)\n"
            "  --seedvr-frames T   SeedVR2 latent frames per stream, >= 2 (default 2: 1 + 4 frames)\n"
            "  --seedvr-tiles LIST SeedVR2: the session's tile-size of each row (default 0,256; 0: untiled)\n"
            "  --hyv-latent HxW    HunyuanVideo 1.5 latent size (default %dx%d: 320x192 frames)\n"
            "  --hyv-frames T      HunyuanVideo 1.5 latent frames per stream, >= 2 (default 2: 1 + 4 frames)\n"
            "  --ltx-latent HxW    LTX-2 latent size (default %dx%d: 96x64 frames)\n"
            "  --ltx-frames T      LTX-2 latent frames per stream, >= 2 (default %d: 1 + 8 (T - 1) frames)\n"
            "  --mm-latent HxW     MiniMax-H3 latent size (default %dx%d: 48x32 frames)\n"
            "  --mm-frames T       MiniMax-H3 latent frames per stream, >= 3 (default %d: two chunks, 39 frames)\n"
            "  --mm-blocks N       MiniMax-H3 transformer blocks, of the release's 36, >= 2 (default %d)\n"
            "  --clip-layouts LIST the SVD, SeedVR2, HunyuanVideo 1.5, LTX-2 and MiniMax-H3 peers' memory layouts\n"
            "                      (default channels_last)\n",
            DEFAULT_MODEL, DEFAULT_PYTHON, PEER_SCRIPT, VIDEO_SCRIPT, VIDEO_LATENT_H, VIDEO_LATENT_W, KL_LATENT,
            KL_LATENT, SVD_LATENT_H, SVD_LATENT_W, SVD_FRAMES, SVD_FRAMES, SEEDVR_LATENT_H, SEEDVR_LATENT_W,
            HYV_LATENT_H, HYV_LATENT_W, LTX_LATENT_H, LTX_LATENT_W, LTX_FRAMES, MM_LATENT_H, MM_LATENT_W, MM_FRAMES,
            MM_BLOCKS);
}

// --- other load ---------------------------------------------------------------------------------

// fraction of all CPUs busy over `ms` milliseconds while this process sleeps (from /proc/stat);
// < 0 where it cannot be read
static double other_load(int ms) {
    unsigned long long v[2][8];
    for (int k = 0; k < 2; k++) {
        FILE * f = fopen("/proc/stat", "r");
        if (!f) return -1.0;
        const int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[k][0], &v[k][1], &v[k][2],
                             &v[k][3], &v[k][4], &v[k][5], &v[k][6], &v[k][7]);
        fclose(f);
        if (n != 8) return -1.0;
        if (k == 0) {
            const struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    unsigned long long total = 0, idle = (v[1][3] - v[0][3]) + (v[1][4] - v[0][4]);
    for (int i = 0; i < 8; i++) total += v[1][i] - v[0][i];
    return total ? 1.0 - (double) idle / (double) total : -1.0;
}

// CPU time of the whole machine (from /proc/stat) and of this process with its waited-for children
// (getrusage), so that the share other processes took over an interval can be told apart from ours
struct cpu_snap {
    bool   ok;
    double busy_s, total_s, ours_s;
};

static struct cpu_snap cpu_snap(void) {
    struct cpu_snap    c = { 0 };
    unsigned long long v[8];
    FILE *             f = fopen("/proc/stat", "r");
    if (!f) return c;
    const int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                         &v[6], &v[7]);
    fclose(f);
    const long hz = sysconf(_SC_CLK_TCK);
    if (n != 8 || hz <= 0) return c;
    unsigned long long total = 0;
    for (int i = 0; i < 8; i++) total += v[i];
    c.total_s = (double) total / hz;
    c.busy_s  = (double) (total - v[3] - v[4]) / hz;
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    c.ours_s = self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec + kids.ru_stime.tv_sec +
               (self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e6;
    c.ok = true;
    return c;
}

// the share of all CPUs' time between a and b that went to other processes; < 0 if unknown
static double others_share(struct cpu_snap a, struct cpu_snap b) {
    if (!a.ok || !b.ok || b.total_s <= a.total_s) return -1.0;
    const double other = (b.busy_s - a.busy_s) - (b.ours_s - a.ours_s);
    return (other > 0 ? other : 0.0) / (b.total_s - a.total_s);
}

// after a peer exits: the kernel (and the host, in a VM) is still taking back its gigabytes for a
// moment, which shows as a sgemm rate half the usual right after the exit
static void settle(void) {
    const struct timespec ts = { 2, 0 };
    nanosleep(&ts, NULL);
}

// --- measured fp32 peak -----------------------------------------------------------------------

// best-of-SGEMM_RUNS FLOP/s of a SGEMM_N^3 dnnl_sgemm; 0 when it cannot run
static double sgemm_peak(double * best_ms_out) {
    const size_t n  = SGEMM_N;
    float *      a  = malloc(n * n * sizeof(float));
    float *      b  = malloc(n * n * sizeof(float));
    float *      c  = malloc(n * n * sizeof(float));
    double       best = 0.0, best_ms = 0.0;
    if (!a || !b || !c) {
        fprintf(stderr, "sgemm: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < n * n; i++) {
        a[i] = (float) ((i * 7u) % 13u) / 13.0f - 0.5f;
        b[i] = (float) ((i * 5u) % 11u) / 11.0f - 0.5f;
        c[i] = 0.0f;
    }
    // one untimed call so that thread start-up and page faults are not in the timing
    for (int r = -1; r < SGEMM_RUNS; r++) {
        const double  t0 = now_ms();
        dnnl_status_t st = dnnl_sgemm('N', 'N', (dnnl_dim_t) n, (dnnl_dim_t) n, (dnnl_dim_t) n, 1.0f, a,
                                      (dnnl_dim_t) n, b, (dnnl_dim_t) n, 0.0f, c, (dnnl_dim_t) n);
        const double ms = now_ms() - t0;
        if (st != dnnl_success) {
            fprintf(stderr, "sgemm: dnnl_sgemm failed: %s\n", dnnl_status2str(st));
            best = 0.0;
            goto done;
        }
        const double flops = 2.0 * (double) n * (double) n * (double) n / (ms / 1e3);
        if (r >= 0 && flops > best) {
            best    = flops;
            best_ms = ms;
        }
    }
done:
    free(a);
    free(b);
    free(c);
    *best_ms_out = best_ms;
    return best;
}

// --- precisions --------------------------------------------------------------------------------

// a CPU backend asked for a precision, and what it gave: bf16 asked is fp32 in effect where oneDNN's
// ISA has neither AVX512-BF16 nor AMX (or --isa lowered it), so a row says the one in effect
struct cpu_prec {
    enum vae_precision asked, in_effect;
    char               backend[128];  // vae_backend_name: oneDNN's version, ISA in effect, threads
};

// vae_backend_init(VAE_BACKEND_CPU) at p->asked, with its line "<prefix>backend: ..., bf16 asked: bf16 in
// effect"; NULL with err
static vae_backend_t * cpu_backend(struct cpu_prec * p, const char * prefix, char * err, size_t err_size) {
    vae_backend_t * be = vae_backend_init(VAE_BACKEND_CPU, 0, p->asked, err, err_size);
    if (!be) return NULL;
    p->in_effect = vae_backend_precision(be);
    snprintf(p->backend, sizeof(p->backend), "%s", vae_backend_name(be));
    printf("%sbackend: %s, %s asked: %s in effect\n", prefix, p->backend, vae_precision_name(p->asked),
           vae_precision_name(p->in_effect));
    return be;
}

// a table row's precision: the one in effect, and the one asked where it differs ("fp32 (bf16 asked)"),
// which the row's peer ran at
static const char * cpu_prec_label(char * buf, size_t size, const struct cpu_prec * p) {
    if (p->in_effect == p->asked) {
        snprintf(buf, size, "%s", vae_precision_name(p->in_effect));
    } else {
        snprintf(buf, size, "%s (%s asked)", vae_precision_name(p->in_effect), vae_precision_name(p->asked));
    }
    return buf;
}

// "fp32, bf16": the precisions asked, for a heading
static const char * precision_list(char * buf, size_t size, const enum vae_precision * p, int n) {
    buf[0] = '\0';
    for (int k = 0; k < n; k++) {
        append(buf, size, k ? ", " : "");
        append(buf, size, vae_precision_name(p[k]));
    }
    return buf;
}

// --- the PyTorch peer -------------------------------------------------------------------------

struct peer {
    bool   ok;
    double ms;          // mean ms/frame of the best layout
    double min_ms;      // < 0 when not found
    int    threads;
    char   version[64];
    char   layout[32];
    char   reason[512];
};

static void run_peer(struct peer * p, const char * python, const char * script, const char * model, int frames,
                     int warmup, int threads, const char * dtype) {
    memset(p, 0, sizeof(*p));
    p->min_ms = -1.0;
    if (access(script, R_OK) != 0) {
        snprintf(p->reason, sizeof(p->reason), "cannot read the peer script %.400s: %s", script, strerror(errno));
        return;
    }
    if (strchr(python, '/') && access(python, X_OK) != 0) {   // a bare name: the shell's PATH
        snprintf(p->reason, sizeof(p->reason), "cannot run %.400s: %s", python, strerror(errno));
        return;
    }
    char cmd[4096] = "";
    char num[64];
    sh_quote(cmd, sizeof(cmd), python);
    append(cmd, sizeof(cmd), " ");
    sh_quote(cmd, sizeof(cmd), script);
    append(cmd, sizeof(cmd), " --model ");
    sh_quote(cmd, sizeof(cmd), model);
    snprintf(num, sizeof(num), " --height-latent %d --width-latent %d", LATENT_H, LATENT_W);
    append(cmd, sizeof(cmd), num);
    snprintf(num, sizeof(num), " --frames %d --warmup %d --threads %d", frames, warmup, threads);
    append(cmd, sizeof(cmd), num);
    append(cmd, sizeof(cmd), " --best-layout --dtype ");
    append(cmd, sizeof(cmd), dtype);
    append(cmd, sizeof(cmd), " 2>&1");

    fflush(stdout);
    FILE * f = popen(cmd, "r");
    if (!f) {
        snprintf(p->reason, sizeof(p->reason), "popen failed: %s", strerror(errno));
        return;
    }
    // keep the last non-empty line, and every "<layout>: N frames, ms/frame mean X min Y" line
    char line[1024], last[1024] = "";
    char layout_lines[4][1024];
    int  n_layout_lines = 0;
    while (fgets(line, sizeof(line), f)) {
        rstrip(line);
        if (!line[0]) continue;
        printf("  peer| %s\n", line);
        snprintf(last, sizeof(last), "%s", line);
        if (strstr(line, ": ") && strstr(line, " frames, ms/frame mean ") && n_layout_lines < 4) {
            snprintf(layout_lines[n_layout_lines++], sizeof(layout_lines[0]), "%s", line);
        }
    }
    const int status = pclose(f);
    fflush(stdout);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const int code = status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        snprintf(p->reason, sizeof(p->reason), "the peer exited with status %d%s%.300s", code,
                 last[0] ? ": " : "", last);
        return;
    }
    const char * s = strstr(last, "torch_ms_per_frame=");
    if (!s || sscanf(s, "torch_ms_per_frame=%lf threads=%d torch=%63s", &p->ms, &p->threads, p->version) != 3) {
        snprintf(p->reason, sizeof(p->reason), "unexpected last line from the peer: %.300s", last);
        return;
    }
    const char * l = strstr(s, " layout=");
    if (l) {
        sscanf(l, " layout=%31s", p->layout);
        const size_t ln = strlen(p->layout);
        for (int i = 0; i < n_layout_lines; i++) {
            const char * m = strstr(layout_lines[i], " min ");
            if (!strncmp(layout_lines[i], p->layout, ln) && layout_lines[i][ln] == ':' && m) {
                sscanf(m, " min %lf", &p->min_ms);
            }
        }
    }
    p->ok = true;
}

// --- memory ------------------------------------------------------------------------------------

// reset the process's peak resident set (VmHWM) to its current size; false where Linux refuses
static bool hwm_reset(void) {
    FILE * f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    const bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

// a "Key:   N kB" line of /proc/self/status, in MiB; < 0 when absent
static double status_mib(const char * key) {
    FILE * f = fopen("/proc/self/status", "r");
    char   line[256];
    double v = -1.0;
    if (!f) return v;
    const size_t n = strlen(key);
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, key, n) && line[n] == ':') {
            v = strtod(line + n + 1, NULL) / 1024.0;
            break;
        }
    }
    fclose(f);
    return v;
}

// --- the video decoders ---------------------------------------------------------------------------

struct video_peer {
    bool   ok;
    double steady_ms, steady_min_ms, first_ms, stream_ms;  // steady: per output frame
    double load_rss_mib, decode_rss_mib, max_rss_mib;
    int    threads;
    char   layout[32], mode[32], version[64];
    char   reason[512];
};

struct video_result {
    const char * name;          // "wan", "taehv", "svd", "seedvr2", "hyvideo15", ...: the peer's names and the files'
    const char * label;
    const char * weights;       // file name in the video dir
    const char * gen_args;      // more arguments for `video_torch.py gen` (NULL or e.g. "--blocks 4")
    int          T, h, w;       // latent frames per stream, latent rows, columns
    int          chunk, tile;   // the session's chunk_frames and tile_size
    bool         clip;          // ms/frame = the whole stream / its frames (no steady state upstream)
    bool         clamp;         // upstream clamps its output (Wan, TAEHV): compare ours clamped
    bool         imagenet;      // upstream's output is ImageNet-normalised (MiniMax-H3): compared as x std + mean
    const char * peer_args;     // more arguments for `video_torch.py time` ("" or e.g. "--chunk 4")
    int          peer_of;       // >= 0: no peer run of its own, compared with that row's
    struct cpu_prec prec;       // ours asked for prec.asked, the peer at it (--dtype)
    bool         again;         // the row before's decoder at another precision: its sizes and FLOPs said once
    char         tag[96];       // label and the precision asked, for the lines outside the table
    bool         ok;            // our side ran
    char         reason[512];
    char         description[160];
    int          frames_per_latent, scale, out_h, out_w, n_frames;
    int          chunks;        // a chunked decoder's (MiniMax-H3's) graphs per timed stream; 0: not chunked
    float        lo, hi;        // the range upstream clamps its output to
    int          tile_used;     // vae_session_tile_size
    double       prepare_ms;
    double       first_ms, steady_ms, steady_min_ms, stream_ms;  // means over the timed streams
    double       step_ms;       // steady state, per frame (= steady_ms unless clip)
    struct flops step, first;   // graphs of one later latent frame, of latent frame 0 (chunked: both a chunk's)
    size_t       peak_bytes;    // vae_session_peak_bytes
    double       hwm_mib;       // our process's VmHWM from before the load to the end of the timing
    float *      out;           // the last timed stream's frames, [n_frames, 3, out_h, out_w]
    struct video_peer peer;
    bool         compared;
    double       max_abs, mean_abs;
    char         compare_note[512];
    double       probe[3];      // sgemm FLOP/s before our side, between the sides, after the peer (0: none)
};

// pop every frame s has ready into out (frame `*popped` onwards, the first one again past n_frames)
static bool video_pop_ready(struct vae_session * s, float * out, size_t frame_floats, int n_frames, int * popped,
                            char * err, size_t err_size) {
    while (vae_session_frames_ready(s) > 0) {
        float * dst = out + (size_t) (*popped < n_frames ? *popped : 0) * frame_floats;
        if (!vae_session_pop_output(s, dst, err, err_size)) return false;
        (*popped)++;
    }
    return true;
}

// our side: a decode session (r->chunk, r->tile) fed the T latent frames of one stream and
// drained, `warmup` untimed streams of 2 latent frames, then `streams` timed ones; every push (and
// the drain) is timed with the pops of the frames it made ready
static bool video_ours(struct video_result * r, const char * dir, int streams, int warmup) {
    char               err[512] = "", path[4096];
    struct vae_model * model    = NULL;
    vae_backend_t *    be       = NULL;
    struct vae_session * s      = NULL;
    float *            lat      = NULL;
    const int          T = r->T, h = r->h, w = r->w, channels = video_channels(r->name);
    const size_t       lat_floats = (size_t) channels * (size_t) h * (size_t) w;
    bool               ok        = false;

    if (!dir_path(path, sizeof(path), dir, r->weights)) {
        snprintf(r->reason, sizeof(r->reason), "the directory name is too long");
        return false;
    }
    malloc_trim(0);  // the row before (this decoder at another precision too) leaves no free heap in the baseline
    const bool hwm = hwm_reset();
    model          = vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err));
    if (!model) {
        snprintf(r->reason, sizeof(r->reason), "loading %.300s: %s", path, err);
        goto done;
    }
    snprintf(r->description, sizeof(r->description), "%s", model->description);
    r->frames_per_latent = model->frames_per_latent;
    r->scale             = model->scale;
    r->out_h             = model->scale * h;
    r->out_w             = model->scale * w;
    r->n_frames          = (int) vae_model_stream_frames(model, (uint64_t) T);
    r->chunks            = model->chunk_latents ? (T - model->chunk_overlap + model->chunk_latents - 1) /
                                                          model->chunk_latents : 0;
    r->lo                = -model->out_offset / model->out_scale + 0.0f;  // no "-0"
    r->hi                = (1.0f - model->out_offset) / model->out_scale;
    // FLOPs from the graphs the session prepares: a later latent frame's, and latent frame 0's
    // (LTX-2's first graph takes lookahead + 1 latent frames; MiniMax-H3's both take a chunk and its overlap)
    for (int first = 0; first < 2; first++) {
        const int          n = model->chunk_latents ? model->chunk_latents + model->chunk_overlap
                                                    : first ? model->lookahead + 1 : 1;
        struct vae_graph * g = vae_model_build_graph(model, n, h, w, first, err, sizeof(err));
        if (!g) {
            snprintf(r->reason, sizeof(r->reason), "building the graph: %s", err);
            goto done;
        }
        if (first) r->first = count_flops(g);
        else r->step = count_flops(g);
        vae_graph_free(g);
    }

    lat = malloc((size_t) T * lat_floats * sizeof(float));
    r->out = malloc((size_t) r->n_frames * 3 * (size_t) r->out_h * (size_t) r->out_w * sizeof(float));
    char name[64];
    snprintf(name, sizeof(name), "%s.latent.f32", r->name);
    if (!lat || !r->out) {
        snprintf(r->reason, sizeof(r->reason), "out of memory");
        goto done;
    }
    if (!read_f32(dir, name, lat, (size_t) T * lat_floats, r->reason, sizeof(r->reason))) goto done;

    char prefix[128];
    snprintf(prefix, sizeof(prefix), "%s: ", r->tag);
    be = cpu_backend(&r->prec, prefix, err, sizeof(err));
    if (!be) {
        snprintf(r->reason, sizeof(r->reason), "%s", err);
        goto done;
    }
    const struct vae_session_config cfg = { channels, h, w, VAE_SPACE_AUTO, r->chunk, 0, r->tile, NULL };
    const double t_prep = now_ms();
    s = vae_session_new(model, be, &cfg, err, sizeof(err));
    r->prepare_ms = now_ms() - t_prep;
    if (!s) {
        snprintf(r->reason, sizeof(r->reason), "%s: %s", r->tile ? "tiling not supported? session" : "session", err);
        goto done;
    }
    r->tile_used = vae_session_tile_size(s);
    const size_t frame_floats = 3 * (size_t) r->out_h * (size_t) r->out_w;
    double       first_sum = 0.0, steady_sum = 0.0, stream_sum = 0.0, clip_min = 0.0;
    r->steady_min_ms = 0.0;
    for (int i = 0; i < warmup + streams; i++) {
        const bool timed = i >= warmup;
        const int  n_lat = timed ? T : model->chunk_latents ? model->chunk_overlap + 1 : 2; // (the fewest it decodes)
        double     steady = 0.0, stream = 0.0;
        int        popped = 0;
        vae_session_reset(s);
        for (int k = 0; k <= n_lat; k++) {  // k == n_lat: the drain
            const double t0 = now_ms();
            if (k < n_lat ? !vae_session_push(s, lat + (size_t) k * lat_floats, err, sizeof(err))
                          : !vae_session_drain(s, err, sizeof(err))) {
                snprintf(r->reason, sizeof(r->reason), "%s: %s", k < n_lat ? "push" : "drain", err);
                goto done;
            }
            if (!video_pop_ready(s, r->out, frame_floats, r->n_frames, &popped, err, sizeof(err))) {
                snprintf(r->reason, sizeof(r->reason), "pop: %s", err);
                goto done;
            }
            const double ms = now_ms() - t0;
            stream += ms;
            if (k == 0) {
                if (timed) first_sum += ms;
            } else {
                steady += ms;
            }
        }
        if (popped != (int) vae_model_stream_frames(model, (uint64_t) n_lat)) {
            snprintf(r->reason, sizeof(r->reason), "a stream of %d latent frames gave %d frames, not %d", n_lat, popped,
                     (int) vae_model_stream_frames(model, (uint64_t) n_lat));
            goto done;
        }
        if (timed) { // (per frame after latent frame 0's)
            const double per_frame = steady / (r->n_frames - vae_model_frames_of_latent(model, 0));
            steady_sum += per_frame;
            stream_sum += stream;
            if (i == warmup || per_frame < r->steady_min_ms) r->steady_min_ms = per_frame;
            if (i == warmup || stream < clip_min) clip_min = stream;
        }
    }
    r->first_ms   = first_sum / streams;
    r->steady_ms  = steady_sum / streams;
    r->stream_ms  = stream_sum / streams;
    r->step_ms    = r->steady_ms;
    if (r->clip) {  // the whole stream per frame, as the peer has no per-latent boundary
        r->steady_ms     = r->stream_ms / r->n_frames;
        r->steady_min_ms = clip_min / r->n_frames;
    }
    r->peak_bytes = vae_session_peak_bytes(s);
    r->hwm_mib    = hwm ? status_mib("VmHWM") : -1.0;
    {
        const size_t n = (size_t) r->n_frames * frame_floats;
        size_t       bad = 0;
        for (size_t i = 0; i < n; i++) bad += !isfinite(r->out[i]);
        if (bad) {
            snprintf(r->reason, sizeof(r->reason), "%zu non-finite output values", bad);
            goto done;
        }
    }
    ok = true;
done:
    vae_session_free(s);
    vae_backend_free(be);
    vae_model_free(model);
    free(lat);
    r->ok = ok;
    return ok;
}

// LTX-2 at 1280x704 (22x40 latents), which this CPU cannot decode in a benchmark's time: what a
// session holds, its graphs planned and prepared but nothing decoded (whole frames: the first
// graph's 23 latent frames and what they make, the steps', the weights, the state; in tiles of 256
// and 128 pixels: each tile's state, the whole-frame activations waiting between steps, one tile's
// graph); printed, with the memory diffusers' whole-clip decode took per output pixel-frame in the
// row's run, scaled to 121 frames
static void video_plan_ltx720(const struct video_result * r, const char * dir) {
    char               err[512], path[4096];
    struct vae_model * m  = dir_path(path, sizeof(path), dir, r->weights) ? vae_model_load(path, VAE_FAMILY_AUTO, err,
                                                                                          sizeof(err))
                                                                         : NULL;
    vae_backend_t *    be = m ? vae_backend_init(VAE_BACKEND_CPU, 0, VAE_PRECISION_FP32, err, sizeof(err)) : NULL;
    static const int   tiles[3] = { 0, 256, 128 };
    for (int t = 0; t < 3; t++) {
        const struct vae_session_config cfg = { 128, 22, 40, VAE_SPACE_AUTO, 1, 0, tiles[t], NULL };
        struct vae_session *            s   = be ? vae_session_new(m, be, &cfg, err, sizeof(err)) : NULL;
        if (s && t == 0) {
            const double px = 121.0 * 704 * 1280, decode = r->peer.ok ? r->peer.decode_rss_mib - r->peer.load_rss_mib : -1;
            printf("%s at 1280x704 (22x40 latents), planned, not run: a stream holds %.1f MiB whatever its length, "
                   "weights included; diffusers' whole-clip decode took %.0f bytes per output pixel-frame above its "
                   "weights in the run above (%.0f MiB for %d frames of %dx%d), %.1f GiB for 121 frames at 1280x704\n",
                   r->label, vae_session_peak_bytes(s) / 1048576.0,
                   decode * 1048576.0 / ((double) r->n_frames * r->out_h * r->out_w), decode, r->n_frames, r->out_w,
                   r->out_h, decode * 1048576.0 / ((double) r->n_frames * r->out_h * r->out_w) * px / 1073741824.0);
        } else if (s) {
            printf("%s at 1280x704 in %d-pixel tiles, planned, not run: a stream holds %.1f MiB whatever its length, "
                   "weights included\n", r->label, tiles[t], vae_session_peak_bytes(s) / 1048576.0);
        } else {
            printf("%s at 1280x704 (tile-size %d): no session: %s\n", r->label, tiles[t],
                   m ? err : "the weights did not load");
        }
        vae_session_free(s);
    }
    vae_backend_free(be);
    vae_model_free(m);
}

// MiniMax-H3 at 1280x720 (45x80 latents), planned, not run: what a session holds (its chunk's graph and the held
// frames), with the row's file of `blocks` blocks and with that of its first blocks / 2 (video_torch.py writes both),
// and the graph's weights and activations apart. The activations are one block's at a time, the same at both counts
// (printed), so the release's 36 blocks add weights only: 36 - blocks more blocks of those measured. Beside it the
// memory diffusers' whole-clip decode took per output pixel-frame in the row's run, scaled to its frames at 1280x720
static void video_plan_mm720(const struct video_result * r, const char * dir, int blocks) {
    const int n[2] = { blocks, blocks / 2 };
    double    peak[2], weights[2], arena[2];
    for (int k = 0; k < 2; k++) {
        char err[512] = "the directory name is too long", name[64], path[4096];
        snprintf(name, sizeof(name), "minimax_b%d.safetensors", n[k]);
        struct vae_model * m  = dir_path(path, sizeof(path), dir, name) ? vae_model_load(path, VAE_FAMILY_AUTO, err,
                                                                                        sizeof(err))
                                                                       : NULL;
        vae_backend_t *    be = m ? vae_backend_init(VAE_BACKEND_CPU, 0, VAE_PRECISION_FP32, err, sizeof(err)) : NULL;
        struct vae_graph * g  = be ? vae_model_build_graph(m, m->chunk_latents + m->chunk_overlap, 45, 80, false, err,
                                                           sizeof(err))
                                   : NULL;
        const bool planned = g && vae_backend_graph_prepare(be, g, 0, err, sizeof(err));
        if (planned) {
            arena[k]   = (double) g->arena_bytes;
            weights[k] = (double) (g->peak_bytes - g->arena_bytes);
            vae_backend_graph_release(be, g);
        }
        vae_graph_free(g);
        const struct vae_session_config cfg = { 24, 45, 80, VAE_SPACE_AUTO, 1, 0, 0, NULL };
        struct vae_session * s = planned ? vae_session_new(m, be, &cfg, err, sizeof(err)) : NULL;
        if (s) peak[k] = (double) vae_session_peak_bytes(s);
        vae_session_free(s);
        vae_backend_free(be);
        vae_model_free(m);
        if (!s) {
            printf("%s at 1280x720, %d blocks: no plan: %s\n", r->label, n[k], err);
            return;
        }
    }
    const double mib = 1048576.0, block = (weights[0] - weights[1]) / (n[0] - n[1]);
    const double w36 = weights[0] + (36 - n[0]) * block, rest = peak[0] - weights[0];
    const double px = (double) r->n_frames * 720 * 1280, run_px = (double) r->n_frames * r->out_h * r->out_w;
    const double decode = r->peer.ok ? r->peer.decode_rss_mib - r->peer.load_rss_mib : -1;
    printf("%s at 1280x720 (45x80 latents), planned, not run: a stream holds %.1f MiB whatever its length with %d "
           "blocks (graph: weights %.1f, activations %.1f MiB), %.1f MiB with %d (weights %.1f, activations %.1f "
           "MiB); so the release's 36 blocks: weights %.1f MiB (%.1f a block), the stream %.1f MiB; diffusers' "
           "whole-clip decode took %.0f bytes per output pixel-frame above its weights in the run above (%.0f MiB for "
           "%d frames of %dx%d), %.1f GiB for %d frames at 1280x720\n",
           r->label, peak[0] / mib, n[0], weights[0] / mib, arena[0] / mib, peak[1] / mib, n[1], weights[1] / mib,
           arena[1] / mib, w36 / mib, block / mib, (w36 + rest) / mib, decode * mib / run_px, decode, r->n_frames,
           r->out_w, r->out_h, decode * mib / run_px * px / 1073741824.0, r->n_frames);
}

static void video_peer_run(struct video_result * r, const char * python, const char * script, const char * taehv_py,
                           const char * dir, int streams, int warmup, int threads) {
    struct video_peer * p = &r->peer;
    char                cmd[8192], sub[256], last[2048], dtype[16];
    snprintf(sub, sizeof(sub), "time --model %s --streams %d --warmup %d --threads %d --dtype %s %s", r->name,
             streams, warmup, threads, vae_precision_name(r->prec.asked), r->peer_args ? r->peer_args : "");
    video_cmd(cmd, sizeof(cmd), python, script, sub, "--dir", dir, taehv_py);
    printf("%s peer: %s\n", r->name, cmd);
    if (!run_lines(cmd, last, sizeof(last), p->reason, sizeof(p->reason))) return;
    double threads_d = 0.0;
    if (!strstr(last, "video_peer ") || !kv_double(last, "steady_ms_per_frame", &p->steady_ms) ||
        !kv_double(last, "steady_min_ms_per_frame", &p->steady_min_ms) || !kv_double(last, "first_ms", &p->first_ms) ||
        !kv_double(last, "stream_ms", &p->stream_ms) || !kv_double(last, "threads", &threads_d) ||
        !kv_find(last, "layout", p->layout, sizeof(p->layout)) || !kv_find(last, "mode", p->mode, sizeof(p->mode)) ||
        !kv_find(last, "torch", p->version, sizeof(p->version))) {
        snprintf(p->reason, sizeof(p->reason), "unexpected last line from the peer: %.300s", last);
        return;
    }
    // the precision it ran, from its own line: a row must not pass off a decode at another one as this
    if (!kv_find(last, "dtype", dtype, sizeof(dtype)) || strcmp(dtype, vae_precision_name(r->prec.asked))) {
        snprintf(p->reason, sizeof(p->reason), "the peer did not say it ran %s: %.300s",
                 vae_precision_name(r->prec.asked), last);
        return;
    }
    p->threads = (int) threads_d;
    if (!kv_double(last, "load_rss_mib", &p->load_rss_mib)) p->load_rss_mib = -1.0;
    if (!kv_double(last, "decode_peak_rss_mib", &p->decode_rss_mib)) p->decode_rss_mib = -1.0;
    if (!kv_double(last, "max_rss_mib", &p->max_rss_mib)) p->max_rss_mib = -1.0;
    p->ok = true;
}

// the same frames as the peer's last output (dir/<name>.torch.f32)? Wan and TAEHV clamp theirs,
// ours is raw; MiniMax-H3's is ImageNet-normalised, ours RGB in [0, 1] (its pipeline's x std + mean, folded in)
static void video_compare(struct video_result * r, const char * dir) {
    static const float std[3] = { 0.229f, 0.224f, 0.225f }, mean[3] = { 0.485f, 0.456f, 0.406f };
    if (!r->ok) return;
    const size_t n   = (size_t) r->n_frames * 3 * (size_t) r->out_h * (size_t) r->out_w;
    float *      ref = malloc(n * sizeof(float));
    char         name[64];
    snprintf(name, sizeof(name), "%s.torch.f32", r->name);
    if (!ref || !read_f32(dir, name, ref, n, r->compare_note, sizeof(r->compare_note))) {
        if (!ref) snprintf(r->compare_note, sizeof(r->compare_note), "out of memory");
        free(ref);
        return;
    }
    const size_t plane = (size_t) r->out_h * (size_t) r->out_w;
    double       mx = 0.0, sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float o = !r->clamp ? r->out[i] : r->out[i] < r->lo ? r->lo : r->out[i] > r->hi ? r->hi : r->out[i];
        const size_t c = i / plane % 3;
        const double d = fabs((double) o - (r->imagenet ? (double) ref[i] * std[c] + mean[c] : (double) ref[i]));
        if (!(d <= mx)) mx = d;  // NaN wins
        sum += d;
    }
    free(ref);
    r->compared = true;
    r->max_abs  = mx;
    r->mean_abs = sum / (double) n;
}

// "a,b,c" of integers >= 0 into dst (1 to max of them)
static bool parse_int_list(const char * p, int * dst, int max, int * n_out) {
    int n_vals = 0;
    while (*p) {
        char         tok[32];
        const size_t n = strcspn(p, ",");
        snprintf(tok, sizeof(tok), "%.*s", (int) (n < sizeof(tok) ? n : sizeof(tok) - 1), p);
        if (n_vals == max || !parse_int(tok, 0, &dst[n_vals])) return false;
        n_vals++;
        p += n + (p[n] == ',');
    }
    *n_out = n_vals;
    return n_vals > 0;
}

// a peer's --layouts: lower-case words and commas
static bool layouts_ok(const char * s) {
    return *s && strspn(s, "abcdefghijklmnopqrstuvwxyz_,") == strlen(s);
}

static const char * argv_streams(int n) {
    static char buf[32];
    snprintf(buf, sizeof(buf), "%d", n);
    return buf;
}

// --- AutoencoderKL (the SD 1.x/2.x / SDXL decoder) ---------------------------------------------------

struct kl_opts {
    int          h, w;                 // latent rows, columns
    int          runs, warmup;         // timed and untimed decodes per row (and per peer layout)
    int          n_tiles;
    int          tiles[KL_MAX_TILES];  // vae_session_config.tile_size of each row (0: whole frame)
    const char * layouts;              // the peer's memory layouts, comma-separated
};

struct kl_row {
    int     tile, tile_used;      // asked for; vae_session_tile_size (0: whole frames)
    bool    ok;
    char    reason[512];
    double  prepare_ms, mean_ms, min_ms;
    size_t  peak_bytes;           // vae_session_peak_bytes
    double  base_mib, hwm_mib;    // VmRSS just before vae_session_new; VmHWM after the row (< 0: unknown)
    double  prep_hwm_mib;         // VmHWM right after vae_session_new (< 0: unknown)
    double  probe[2];             // sgemm FLOP/s just before and just after the row
    double  max_abs_untiled;      // against the first whole-frame row (< 0: none)
    double  max_abs_torch;        // against PyTorch's NCHW output where it ran, else its fastest (< 0: not compared)
    double  max_abs_layout[2];    // against its NCHW and channels_last outputs (< 0: not compared)
    float * out;                  // [3, 8h, 8w], the last timed decode
};

struct kl_peer {
    bool   ok;
    double ms, min_ms, load_rss_mib, decode_peak_rss_mib, decode_inc_mib, max_rss_mib;
    int    threads;
    char   layout[32], version[64], reason[512];
};

// AutoencoderKL at one precision of --precisions: our rows (one per tile size) and the peer's run
struct kl_prec {
    struct cpu_prec prec;
    struct kl_row   rows[KL_MAX_TILES];
    struct kl_peer  peer;
    double          peer_probe[2];  // sgemm FLOP/s just before and just after the peer
    double          torch_self;     // PyTorch NCHW vs channels_last (< 0: not both)
    char            ref_name[32];   // the peer's output max_abs_torch is against ("": not compared)
};

// one decode through the session: push the latent, drain, pop the frame
static bool kl_decode(struct vae_session * s, const float * lat, float * out, char * err, size_t n) {
    if (!vae_session_push(s, lat, err, n) || !vae_session_drain(s, err, n)) return false;
    const int ready = vae_session_frames_ready(s);
    if (ready != 1) {
        snprintf(err, n, "%d frames ready after one latent and a drain, not 1", ready);
        return false;
    }
    return vae_session_pop_output(s, out, err, n);
}

// our side, one row: a session with tile_size row->tile on the loaded model, `warmup` untimed and
// `runs` timed decodes of the latent. The process's VmHWM is reset (clear_refs) just before the
// session is made, after malloc_trim so that the baseline holds no free heap of the row before.
static void kl_row_run(struct kl_row * row, const struct vae_model * model, vae_backend_t * be, const float * lat,
                       const struct kl_opts * o) {
    char               err[512] = "";
    const size_t       n_out    = 3 * (size_t) (8 * o->h) * (size_t) (8 * o->w);
    struct vae_session * s      = NULL;
    malloc_trim(0);
    const bool hwm = hwm_reset();
    row->base_mib  = status_mib("VmRSS");
    row->hwm_mib   = -1.0;
    const struct vae_session_config cfg = { KL_CHANNELS, o->h, o->w, VAE_SPACE_RAW, 1, 0, row->tile };
    const double t_prep = now_ms();
    s = vae_session_new(model, be, &cfg, err, sizeof(err));
    row->prepare_ms   = now_ms() - t_prep;
    row->prep_hwm_mib = hwm ? status_mib("VmHWM") : -1.0;
    if (!s) {
        snprintf(row->reason, sizeof(row->reason), "session: %s", err);
        return;
    }
    row->tile_used = vae_session_tile_size(s);
    double sum = 0.0;
    for (int i = 0; i < o->warmup + o->runs; i++) {
        const double t0 = now_ms();
        if (!kl_decode(s, lat, row->out, err, sizeof(err))) {
            snprintf(row->reason, sizeof(row->reason), "decode: %s", err);
            vae_session_free(s);
            return;
        }
        const double ms = now_ms() - t0;
        printf("  ours %s, tile %d: decode %d%s %.1f ms\n", vae_precision_name(vae_backend_precision(be)), row->tile,
               i + 1, i < o->warmup ? " (warm-up)" : "", ms);
        fflush(stdout);
        if (i < o->warmup) continue;
        sum += ms;
        if (i == o->warmup || ms < row->min_ms) row->min_ms = ms;
    }
    row->mean_ms    = sum / o->runs;
    row->peak_bytes = vae_session_peak_bytes(s);
    if (hwm) row->hwm_mib = status_mib("VmHWM");
    vae_session_free(s);
    size_t bad = 0;
    for (size_t i = 0; i < n_out; i++) bad += !isfinite(row->out[i]);
    if (bad) {
        snprintf(row->reason, sizeof(row->reason), "%zu non-finite output values", bad);
        return;
    }
    row->ok = true;
}

static void kl_peer_run(struct kl_peer * p, const char * python, const char * script, const char * dir,
                        const struct kl_opts * o, const char * dtype, int threads) {
    char cmd[8192] = "", sub[512], last[2048], ran[16];
    sh_quote(cmd, sizeof(cmd), python);
    append(cmd, sizeof(cmd), " ");
    sh_quote(cmd, sizeof(cmd), script);
    snprintf(sub, sizeof(sub), " time --runs %d --warmup %d --threads %d --layouts ", o->runs, o->warmup, threads);
    append(cmd, sizeof(cmd), sub);
    sh_quote(cmd, sizeof(cmd), o->layouts);
    append(cmd, sizeof(cmd), " --dtype ");
    append(cmd, sizeof(cmd), dtype);
    append(cmd, sizeof(cmd), " --dir ");
    sh_quote(cmd, sizeof(cmd), dir);
    append(cmd, sizeof(cmd), " 2>&1");
    printf("kl peer: %s\n", cmd);
    if (!run_lines(cmd, last, sizeof(last), p->reason, sizeof(p->reason))) return;
    double threads_d = 0.0;
    if (!strstr(last, "kl_peer ") || !kv_double(last, "ms_per_decode", &p->ms) || !kv_double(last, "min_ms", &p->min_ms) ||
        !kv_double(last, "threads", &threads_d) || !kv_find(last, "layout", p->layout, sizeof(p->layout)) ||
        !kv_find(last, "torch", p->version, sizeof(p->version))) {
        snprintf(p->reason, sizeof(p->reason), "unexpected last line from the peer: %.300s", last);
        return;
    }
    if (!kv_find(last, "dtype", ran, sizeof(ran)) || strcmp(ran, dtype)) {  // (as video_peer_run)
        snprintf(p->reason, sizeof(p->reason), "the peer did not say it ran %s: %.300s", dtype, last);
        return;
    }
    p->threads = (int) threads_d;
    if (!kv_double(last, "load_rss_mib", &p->load_rss_mib)) p->load_rss_mib = -1.0;
    if (!kv_double(last, "decode_peak_rss_mib", &p->decode_peak_rss_mib)) p->decode_peak_rss_mib = -1.0;
    if (!kv_double(last, "decode_rss_increase_mib", &p->decode_inc_mib)) p->decode_inc_mib = -1.0;
    if (!kv_double(last, "max_rss_mib", &p->max_rss_mib)) p->max_rss_mib = -1.0;
    p->ok = true;
}

// s's rows against the outputs its peer run just wrote into dir (the next run overwrites them): each
// layout's, and the reference, PyTorch's NCHW output where it ran (its channels_last path rounds
// differently, ~5e-4 at 1024x1024), else the fastest layout's; ref and ref2 hold n_out floats each
static void kl_compare(struct kl_prec * s, const char * dir, const struct kl_opts * o, size_t n_out, float * ref,
                       float * ref2) {
    static const char * layout_files[2] = { "kl.torch.nchw.f32", "kl.torch.channels_last.f32" };
    char                err[512]        = "";
    bool                have[2]         = { false, false };
    for (int l = 1; l >= 0; l--) {  // NCHW last: it stays in ref
        if (!strstr(o->layouts, l ? "channels_last" : "nchw") || !file_readable(dir, layout_files[l]) ||
            !read_f32(dir, layout_files[l], l ? ref2 : ref, n_out, err, sizeof(err))) {
            continue;
        }
        have[l] = true;
        for (int i = 0; i < o->n_tiles; i++) {
            if (s->rows[i].ok) s->rows[i].max_abs_layout[l] = max_abs_diff(s->rows[i].out, l ? ref2 : ref, n_out);
        }
    }
    if (have[0] && have[1]) s->torch_self = max_abs_diff(ref, ref2, n_out);
    if (!have[0] && !read_f32(dir, "kl.torch.f32", ref, n_out, err, sizeof(err))) {
        printf("kl, %s: outputs not compared: %s\n", vae_precision_name(s->prec.asked), err);
        return;
    }
    snprintf(s->ref_name, sizeof(s->ref_name), "%s", have[0] ? "nchw" : s->peer.layout);
    for (int i = 0; i < o->n_tiles; i++) {
        if (s->rows[i].ok) s->rows[i].max_abs_torch = max_abs_diff(s->rows[i].out, ref, n_out);
    }
}

// AutoencoderKL: weights and latent made by kl_torch.py in dir, our rows (one per tile size) and
// the PyTorch peer at each precision of `precisions`; prints its own report. sgemm_fs[*n_sgemm_io...]
// gets its speed probes.
static void bench_kl(const struct kl_opts * o, const enum vae_precision * precisions, int n_prec, const char * python,
                     const char * dir, bool no_peer, int threads, struct cpu_snap run_start, double * sgemm_fs,
                     int * n_sgemm_io) {
    int  n_sgemm = *n_sgemm_io;
    char script[4096], err[512] = "", path[4096];
    source_path(script, sizeof(script), KL_SCRIPT);
    const int    out_h = 8 * o->h, out_w = 8 * o->w;
    const size_t n_out = 3 * (size_t) out_h * (size_t) out_w;
    const size_t n_lat = (size_t) KL_CHANNELS * (size_t) o->h * (size_t) o->w;
    printf("\nAutoencoderKL (SD/SDXL decoder): latent %dx%dx%d -> %dx%d, %d warm-up + %d timed decodes per row, "
           "tile sizes", KL_CHANNELS, o->h, o->w, out_w, out_h, o->warmup, o->runs);
    for (int i = 0; i < o->n_tiles; i++) printf("%s %d", i ? "," : "", o->tiles[i]);
    printf("; weights and latent in %s\n", dir);

    // weights and latent
    const int made = kl_gen(python, script, dir, o->h, o->w, threads, err, sizeof(err));
    if (made < 0) {
        printf("kl: %s\n", err);
        return;
    }
    if (made) settle();  // after the generator's exit

    struct kl_prec sides[MAX_PRECISIONS];
    memset(sides, 0, sizeof(sides));
    struct vae_model *    model       = NULL;
    vae_backend_t *       be          = NULL;
    float *               lat         = malloc(n_lat * sizeof(float));
    float *               ref         = NULL;
    float *               ref2        = NULL;
    double                busy[2]     = { -1.0, -1.0 };
    const struct cpu_snap kl_start    = cpu_snap();
    double                load_mib[2] = { -1.0, -1.0 };  // VmRSS before and after vae_model_load
    struct flops          walked      = { 0 };
    bool                  have_walked = false;
    bool                  pq          = false;
    double                conv_in_w   = 0.0;
    for (int k = 0; k < n_prec; k++) {
        struct kl_prec * s = &sides[k];
        s->prec.asked = s->prec.in_effect = precisions[k];  // (in effect: until the backend says)
        s->torch_self = -1.0;
        for (int i = 0; i < o->n_tiles; i++) {
            struct kl_row * r = &s->rows[i];
            r->tile            = o->tiles[i];
            r->max_abs_torch   = -1.0;
            r->max_abs_untiled = -1.0;
            r->max_abs_layout[0] = r->max_abs_layout[1] = -1.0;
            r->out             = malloc(n_out * sizeof(float));
            if (!r->out) snprintf(r->reason, sizeof(r->reason), "out of memory");
        }
    }
    if (!lat || !read_f32(dir, "kl.latent.f32", lat, n_lat, err, sizeof(err))) {
        printf("kl: %s\n", lat ? err : "out of memory");
        goto done;
    }

    busy[0] = other_load(500);
    malloc_trim(0);
    load_mib[0] = status_mib("VmRSS");
    if (!dir_path(path, sizeof(path), dir, KL_WEIGHTS) ||
        !(model = vae_model_load(path, VAE_FAMILY_AUTO, err, sizeof(err)))) {
        printf("kl: loading %s: %s\n", path, err);
        goto done;
    }
    load_mib[1] = status_mib("VmRSS");
    pq          = vae_model_weight(model, "post_quant_conv.weight") != NULL ||
         vae_model_weight(model, "decoder.post_quant_conv.weight") != NULL;
    {
        const struct vae_weight * cw = vae_model_weight(model, "decoder.conv_in.weight");
        conv_in_w                    = cw ? (double) cw->shape[0] : 0.0;
    }
    printf("kl: %s (family %s%s), latent %d channels, post_quant_conv %s; model loaded: VmRSS %.0f -> %.0f MiB\n",
           model->description, vae_family_name(model->family), model->family_certain ? "" : ", uncertain",
           model->latent_channels, pq ? "yes" : "no", load_mib[0], load_mib[1]);
    if (model->latent_channels != KL_CHANNELS || conv_in_w != 512.0) {
        printf("kl: warning: the FLOP count assumes the full-width decoder (conv_in 4 -> 512), the file has %d -> %.0f\n",
               model->latent_channels, conv_in_w);
    }
    // cross-check of the count from the shapes: walk the untiled graph (it is only built, not run)
    {
        struct vae_graph * g = vae_model_build_graph(model, 1, o->h, o->w, false, err, sizeof(err));
        if (g) {
            walked      = count_flops(g);
            have_walked = true;
            vae_graph_free(g);
        } else {
            printf("kl: building the untiled graph for the FLOP cross-check: %s\n", err);
        }
    }
    double ms;
    sgemm_fs[n_sgemm++] = sgemm_peak(&ms);
    for (int k = 0; k < n_prec; k++) {
        struct kl_prec * s = &sides[k];
        const char *     asked = vae_precision_name(s->prec.asked);
        char             prefix[32];
        snprintf(prefix, sizeof(prefix), "kl, %s: ", asked);
        if (!(be = cpu_backend(&s->prec, prefix, err, sizeof(err)))) {
            printf("kl, %s: %s\n", asked, err);
            for (int i = 0; i < o->n_tiles; i++) snprintf(s->rows[i].reason, sizeof(s->rows[i].reason), "%s", err);
            continue;
        }
        for (int i = 0; i < o->n_tiles; i++) {
            struct kl_row * r = &s->rows[i];
            r->probe[0]       = sgemm_fs[n_sgemm - 1];
            if (r->out) {
                printf("kl, %s: ours, tile_size %d...\n", asked, r->tile);
                fflush(stdout);
                kl_row_run(r, model, be, lat, o);
            }
            r->probe[1] = sgemm_fs[n_sgemm++] = sgemm_peak(&ms);
            if (!r->ok) {
                printf("kl, %s: ours, tile_size %d failed: %s\n", asked, r->tile, r->reason);
                continue;
            }
            printf("kl, %s: ours, tile_size %d (in use: %d): session prepared in %.0f ms; %.1f ms/decode (min %.1f); "
                   "session peak %.1f MiB; VmRSS before %.0f MiB, VmHWM after vae_session_new %.0f MiB, after the "
                   "decodes %.0f MiB\n",
                   asked, r->tile, r->tile_used, r->prepare_ms, r->mean_ms, r->min_ms, r->peak_bytes / 1048576.0,
                   r->base_mib, r->prep_hwm_mib, r->hwm_mib);
        }
        vae_backend_free(be);
        be = NULL;
        // exactness of the tiled rows: against the first whole-frame row of the same precision
        const struct kl_row * whole = NULL;
        for (int i = 0; i < o->n_tiles && !whole; i++) {
            if (s->rows[i].ok && s->rows[i].tile_used == 0) whole = &s->rows[i];
        }
        for (int i = 0; i < o->n_tiles && whole; i++) {
            struct kl_row * r = &s->rows[i];
            if (r->ok && r != whole) r->max_abs_untiled = max_abs_diff(r->out, whole->out, n_out);
        }
    }
    // the model goes before the peer runs: it gets the memory
    vae_model_free(model);
    model = NULL;
    for (int k = 0; k < n_prec && !no_peer; k++) {
        struct kl_prec * s = &sides[k];
        s->peer_probe[0]   = sgemm_fs[n_sgemm - 1];
        kl_peer_run(&s->peer, python, script, dir, o, vae_precision_name(s->prec.asked), threads);
        settle();
        s->peer_probe[1] = sgemm_fs[n_sgemm++] = sgemm_peak(&ms);
        if (!s->peer.ok) continue;
        if (!ref) ref = malloc(n_out * sizeof(float));
        if (!ref2) ref2 = malloc(n_out * sizeof(float));
        if (ref && ref2) {
            kl_compare(s, dir, o, n_out, ref, ref2);
        } else {
            printf("kl: outputs not compared: out of memory\n");
        }
    }
    busy[1] = other_load(500);

    // report
    {
        const struct kl_flops fl = kl_count_flops(KL_CHANNELS, o->h, o->w, pq);
        double peak_fs = 0.0, low_fs = 0.0;
        for (int i = 0; i < n_sgemm; i++) {
            if (sgemm_fs[i] > peak_fs) peak_fs = sgemm_fs[i];
            if (i == 0 || sgemm_fs[i] < low_fs) low_fs = sgemm_fs[i];
        }
        char precs[32];
        printf("\nAutoencoderKL decoder (SD 1.x/2.x / SDXL: block_out 128/256/512/512, 49.5 M parameters), latent "
               "%dx%dx%d -> %dx%d, %s (ours: the precision in effect), CPU, %d threads, random weights; %d warm-up + "
               "%d timed decodes per row\n",
               KL_CHANNELS, o->h, o->w, out_w, out_h, precision_list(precs, sizeof(precs), precisions, n_prec), threads,
               o->warmup, o->runs);
        printf("model GFLOP per decode (from the shapes): %.1f; the mid attention %.1f (%.1f%%: projections + q k^T + "
               "softmax v); the 3 upsample convs %.1f%%, counted unfused (PERFORMANCE.md: 10.47 TFLOP at 1024x1024)\n",
               fl.total / 1e9, fl.attention / 1e9, 100.0 * fl.attention / fl.total, 100.0 * fl.upsample / fl.total);
        if (have_walked) {
            printf("our untiled graph, walked: %.1f model GFLOP (%d conv, %d upsample-conv, %d attention nodes; the "
                   "attention nodes' q k^T + softmax v %.1f), %.1f executed (fused upsample-convs at 4/9)%s\n",
                   walked.model / 1e9, walked.n_conv, walked.n_upconv, walked.n_attention, walked.attention / 1e9,
                   walked.executed / 1e9,
                   fabs(walked.model - fl.total) > 0.01 * fl.total ? "; NOTE: differs from the count from the shapes by more than 1%" : "");
        }
        if (peak_fs > 0) {
            printf("measured fp32 peak: %.1f GFLOP/s (dnnl_sgemm %dx%dx%d, best of %d; the best of the %d measurements "
                   "in this run, lowest %.1f)\n",
                   peak_fs / 1e9, SGEMM_N, SGEMM_N, SGEMM_N, SGEMM_RUNS, n_sgemm, low_fs / 1e9);
        }
        printf("\n%-48s %5s %10s %9s %8s %8s %6s %9s %8s %10s %8s %6s\n", "impl", "tile", "ms/decode", "min ms",
               "prep ms", "GFLOP/s", "% peak", "sess MiB", "RSS +MiB", "max|d| pt", "vs pt", "probe");
        int unsteady = 0;
        for (int k = 0; k < n_prec; k++) {  // our rows at a precision, then the peer at it
            const struct kl_prec * s = &sides[k];
            const struct kl_peer * p = &s->peer;
            for (int i = 0; i < o->n_tiles; i++) {
                const struct kl_row * r = &s->rows[i];
                char label[96], tile[16], pct[16] = "-", rss[16] = "-", diff[16] = "-", speed[16] = "-", prec[32];
                if (r->tile) {
                    snprintf(label, sizeof(label), "gst-vaedecode cpu %s, tiles %d",
                             cpu_prec_label(prec, sizeof(prec), &s->prec), r->tile);
                } else {
                    snprintf(label, sizeof(label), "gst-vaedecode cpu %s, whole frame",
                             cpu_prec_label(prec, sizeof(prec), &s->prec));
                }
                if (!r->ok) {
                    printf("%-48s unavailable (%s)\n", label, r->reason);
                    continue;
                }
                snprintf(tile, sizeof(tile), "%d", r->tile_used);
                const double fs = fl.total / (r->mean_ms / 1e3);
                if (peak_fs > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * fs / peak_fs);
                if (r->hwm_mib > 0) snprintf(rss, sizeof(rss), "%.0f", r->hwm_mib - r->base_mib);
                if (r->max_abs_torch >= 0) snprintf(diff, sizeof(diff), "%.2g", r->max_abs_torch);
                if (p->ok) snprintf(speed, sizeof(speed), "%.2f", p->ms / r->mean_ms);
                const double probe = r->probe[0] < r->probe[1] ? r->probe[0] : r->probe[1];
                unsteady += probe < 0.85 * peak_fs;
                printf("%-48s %5s %10.1f %9.1f %8.0f %8.1f %6s %9.1f %8s %10s %8s %5.0f%s\n", label, tile, r->mean_ms,
                       r->min_ms, r->prepare_ms, fs / 1e9, pct, r->peak_bytes / 1048576.0, rss, diff, speed,
                       probe / 1e9, probe < 0.85 * peak_fs ? "!" : "");
            }
            if (no_peer) continue;
            char label[128], pct[16] = "-", rss[16] = "-";
            if (!p->ok) {
                snprintf(label, sizeof(label), "PyTorch %s", vae_precision_name(s->prec.asked));
                printf("%-48s unavailable (%s)\n", label, p->reason);
                continue;
            }
            char version[64];
            short_version(version, sizeof(version), p->version);
            snprintf(label, sizeof(label), "PyTorch %s %s (%s)", version, vae_precision_name(s->prec.asked), p->layout);
            const double fs = fl.total / (p->ms / 1e3);
            if (peak_fs > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * fs / peak_fs);
            if (p->decode_inc_mib > 0) snprintf(rss, sizeof(rss), "%.0f", p->decode_inc_mib);
            const double a = s->peer_probe[0], b = s->peer_probe[1];
            const double probe = a > 0 && a < b ? a : b;
            unsteady += probe < 0.85 * peak_fs;
            printf("%-48s %5s %10.1f %9.1f %8s %8.1f %6s %9s %8s %10s %8s %5.0f%s\n", label, "-", p->ms, p->min_ms,
                   "-", fs / 1e9, pct, "-", rss, "-", "1.00", probe / 1e9, probe < 0.85 * peak_fs ? "!" : "");
        }
        printf("tile: the tile edge the session used (vae_session_tile_size; 0 = whole frame); ms/decode: push + drain "
               "+ pop_output of one latent (mean of the timed decodes); prep ms: vae_session_new; GFLOP/s and %% peak: "
               "the model FLOPs above (the same for every row: tiling's recomputed halos are not credited) / ms; "
               "sess MiB: vae_session_peak_bytes; RSS +MiB: the process's VmHWM after the row minus its VmRSS just "
               "before vae_session_new (VmHWM reset there through /proc/self/clear_refs; the model's own f32 weights "
               "were loaded before: not counted), PyTorch: VmHWM minus VmRSS once its module was loaded; max|d| pt: "
               "max |ours - PyTorch| over the raw output (PyTorch's NCHW output where it ran; bf16: both sides round, "
               "differently, so larger than at fp32); vs pt = PyTorch ms / ours, both asked for the same precision "
               "(above 1: ours is faster); probe: the lower sgemm GFLOP/s just before / after the row\n");
        if (unsteady) {
            printf("WARNING: %d row(s) marked '!' ran while the sgemm rate was more than 15%% below the run's best: "
                   "something else was taking CPU time (possibly outside this guest); repeat the run\n",
                   unsteady);
        }
        bool scaled = false;  // the output scale said (once: the first row that ran)
        for (int k = 0; k < n_prec; k++) {
            const struct kl_prec * s     = &sides[k];
            const struct kl_row *  rows  = s->rows;
            const char *           asked = vae_precision_name(s->prec.asked);
            for (int i = 0; i < o->n_tiles; i++) {
                if (rows[i].ok && rows[i].max_abs_untiled >= 0) {
                    printf("%s: tiles %d (in use %d) vs the whole-frame decode: max |diff| %.3g\n", asked,
                           rows[i].tile, rows[i].tile_used, rows[i].max_abs_untiled);
                }
            }
            if (s->ref_name[0]) {
                printf("%s: max|d| pt is against PyTorch's %s output", asked, s->ref_name);
                for (int l = 0; l < 2; l++) {
                    bool any = false;
                    for (int i = 0; i < o->n_tiles; i++) {
                        if (!rows[i].ok || rows[i].max_abs_layout[l] < 0) continue;
                        printf("%s tile %d %.3g", any ? "," : l ? "; vs channels_last:" : "; vs nchw:", rows[i].tile,
                               rows[i].max_abs_layout[l]);
                        any = true;
                    }
                }
                if (s->torch_self >= 0) printf("; PyTorch nchw vs channels_last: %.3g", s->torch_self);
                printf("\n");
            }
            for (int i = 0; i < o->n_tiles && !scaled; i++) {
                if (!rows[i].ok) continue;
                double mx = 0.0;
                for (size_t j = 0; j < n_out; j++) mx = fmax(mx, fabs(rows[i].out[j]));
                printf("output scale: max |y| %.3f (ours %s, tile %d)\n", mx, vae_precision_name(s->prec.in_effect),
                       rows[i].tile);
                scaled = true;
            }
        }
        if (load_mib[1] > 0) {
            printf("ours: the model (f32 weights) took VmRSS %.0f -> %.0f MiB when loaded\n", load_mib[0], load_mib[1]);
        }
        for (int k = 0; k < n_prec; k++) {
            const struct kl_peer * p = &sides[k].peer;
            if (!p->ok) continue;
            printf("PyTorch %s: torch %s, %d threads, layouts tried %s, fastest %s; RSS after load %.0f MiB, VmHWM "
                   "while decoding %.0f MiB, process max RSS %.0f MiB\n",
                   vae_precision_name(sides[k].prec.asked), p->version, p->threads, o->layouts, p->layout,
                   p->load_rss_mib, p->decode_peak_rss_mib, p->max_rss_mib);
            if (p->threads != threads) {
                printf("note: the peer ran with %d threads, ours with %d\n", p->threads, threads);
            }
        }
        if (busy[0] >= 0 && busy[1] >= 0) {
            printf("CPUs busy with other processes (0.5 s sampled before / after AutoencoderKL): %.0f%% / %.0f%%\n",
                   100.0 * busy[0], 100.0 * busy[1]);
            if (busy[0] > 0.1 || busy[1] > 0.1) {
                printf("WARNING: other processes were using the CPUs: the times above are not reliable\n");
            }
        }
        const double others_kl  = others_share(kl_start, cpu_snap());
        const double others_run = others_share(run_start, cpu_snap());
        if (others_kl >= 0) {
            printf("CPU time taken by other processes (/proc/stat minus this process and its peers): %.1f%% of the "
                   "machine during AutoencoderKL, %.1f%% over the whole run\n",
                   100.0 * others_kl, 100.0 * others_run);
            if (others_kl > 0.05) {
                printf("WARNING: other processes used more than 5%% of the CPUs during AutoencoderKL: the times above "
                       "are not reliable\n");
            }
        }
    }
done:
    vae_backend_free(be);
    vae_model_free(model);
    for (int k = 0; k < n_prec; k++) {
        for (int i = 0; i < o->n_tiles; i++) free(sides[k].rows[i].out);
    }
    free(ref);
    free(ref2);
    free(lat);
    *n_sgemm_io = n_sgemm;
}

// --- main -------------------------------------------------------------------------------------

// our side of TAEF2 at one precision
struct taef2_ours {
    struct cpu_prec prec;
    double          prepare_ms, mean, median, mn, mx, sd, peak_mib;
};

// prepare g on a CPU backend asked for r->prec.asked, `warmup` untimed then `frames` timed computes;
// false after a message
static bool taef2_ours_run(struct taef2_ours * r, struct vae_graph * g, const float * input, int frames, int warmup) {
    char            err[512] = "";
    vae_backend_t * be       = cpu_backend(&r->prec, "", err, sizeof(err));
    double *        times    = malloc((size_t) frames * sizeof(double));
    const double    t_prep   = now_ms();
    bool            ok       = be && times && vae_backend_graph_prepare(be, g, 0, err, sizeof(err));
    r->prepare_ms            = now_ms() - t_prep;
    for (int i = 0; ok && i < warmup + frames; i++) {
        const double t0 = now_ms();
        ok              = vae_backend_graph_compute(be, g, NULL, input, err, sizeof(err));
        if (i >= warmup) times[i - warmup] = now_ms() - t0;
    }
    if (!ok) {
        fprintf(stderr, "bench-cpu: TAEF2 at %s: %s\n", vae_precision_name(r->prec.asked),
                times ? err : "out of memory");
        vae_backend_free(be);
        free(times);
        return false;
    }
    r->peak_mib = g->peak_bytes / 1048576.0;
    // sanity: the output is finite
    const int64_t * ne    = g->output->ne;
    const size_t    n_out = (size_t) (ne[0] * ne[1] * ne[2] * ne[3]);
    float *         out   = malloc(n_out * sizeof(float));
    if (out && vae_backend_graph_read_output(be, g, 0, (int) ne[0], out, err, sizeof(err))) {
        size_t bad = 0;
        for (size_t i = 0; i < n_out; i++) bad += !isfinite(out[i]);
        if (bad) printf("WARNING: %zu non-finite output values\n", bad);
    }
    free(out);
    vae_backend_graph_release(be, g);
    vae_backend_free(be);

    double sum = 0.0;
    r->mn = r->mx = times[0];
    for (int i = 0; i < frames; i++) {
        sum += times[i];
        if (times[i] < r->mn) r->mn = times[i];
        if (times[i] > r->mx) r->mx = times[i];
    }
    r->mean    = sum / frames;
    double var = 0.0;
    for (int i = 0; i < frames; i++) var += (times[i] - r->mean) * (times[i] - r->mean);
    r->sd = frames > 1 ? sqrt(var / (frames - 1)) : 0.0;
    qsort(times, (size_t) frames, sizeof(double), cmp_double);
    r->median = frames % 2 ? times[frames / 2] : 0.5 * (times[frames / 2 - 1] + times[frames / 2]);
    free(times);
    return true;
}

// TAEF2, one frame per decode (the original benchmark), ours and the peer's at each precision of
// `precisions`; prints its own report. sgemm_fs gets the two peak measurements it makes. Returns 0,
// or 1 when our side could not run.
static int bench_taef2(const char * model_path, const char * python, const char * peer_script, int frames, int warmup,
                       bool no_peer, int threads, const enum vae_precision * precisions, int n_prec, double * busy,
                       double * sgemm_fs) {
    char err[512] = "";
    // our side: load, build, prepare
    struct vae_model * model = vae_model_load(model_path, VAE_FAMILY_AUTO, err, sizeof(err));
    if (!model) {
        fprintf(stderr, "bench-cpu: %s: %s\n", model_path, err);
        return 1;
    }
    struct vae_graph * g = vae_model_build_graph(model, 1, LATENT_H, LATENT_W, false, err, sizeof(err));
    if (!g) {
        fprintf(stderr, "bench-cpu: building the graph: %s\n", err);
        vae_model_free(model);
        return 1;
    }
    int64_t in_ne[4], out_ne[4];  // copied: the graph is freed before the report
    memcpy(in_ne, g->input->ne, sizeof(in_ne));
    memcpy(out_ne, g->output->ne, sizeof(out_ne));
    const size_t n_in  = (size_t) (in_ne[0] * in_ne[1] * in_ne[2] * in_ne[3]);
    float *      input = malloc(n_in * sizeof(float));
    if (!input) {
        fprintf(stderr, "bench-cpu: out of memory\n");
        return 1;
    }
    fill_normal(input, n_in, 0x9E3779B97F4A7C15ull);  // N(0,1) latents, like the peer's torch.randn

    const struct flops fl = count_flops(g);
    char family[32];
    snprintf(family, sizeof(family), "%s", vae_family_name(model->family));
    for (char * c = family; *c; c++) *c = (char) toupper((unsigned char) *c);

    printf("model: %s (%s)\n", model_path, model->description);
    printf("graph: %d nodes (%d conv, %d upsample-conv%s)\n", g->n_nodes, fl.n_conv, fl.n_upconv,
           g->fused ? ", fused" : ", fusion disabled");
    printf("latent [%lld, %lld, %lld, %lld] -> image [%lld, %lld, %lld, %lld]\n", (long long) in_ne[0],
           (long long) in_ne[1], (long long) in_ne[2], (long long) in_ne[3], (long long) out_ne[0],
           (long long) out_ne[1], (long long) out_ne[2], (long long) out_ne[3]);

    struct taef2_ours ours[MAX_PRECISIONS];
    for (int k = 0; k < n_prec; k++) {
        ours[k].prec.asked = precisions[k];
        if (!taef2_ours_run(&ours[k], g, input, frames, warmup)) {
            return 1;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const double maxrss_mib = ru.ru_maxrss / 1024.0;  // KiB on Linux
    vae_graph_free(g);
    vae_model_free(model);

    // the machine's fp32 peak, measured twice in this run (after our side, after the peer): a large
    // difference means something else was using the cores meanwhile
    double sgemm_ms[2] = { 0.0, 0.0 };
    sgemm_fs[0]        = sgemm_peak(&sgemm_ms[0]);

    struct peer peer[MAX_PRECISIONS] = { 0 };
    for (int k = 0; k < n_prec && !no_peer; k++) {
        const char * dtype = vae_precision_name(precisions[k]);
        printf("peer: %s %s (frames %d, warmup %d, threads %d, --best-layout, --dtype %s)\n", python, peer_script,
               frames, warmup, threads, dtype);
        run_peer(&peer[k], python, peer_script, model_path, frames, warmup, threads, dtype);
        settle();
    }
    busy[1]              = other_load(500);
    sgemm_fs[1]          = sgemm_peak(&sgemm_ms[1]);
    const int    best_i  = sgemm_fs[1] > sgemm_fs[0];
    const double peak_fs = sgemm_fs[best_i];
    const double low_fs  = sgemm_fs[!best_i];

    // report
    printf("\n");
    printf("%s decoder, %lldx%lld frame (latent %lldx%lldx%lld), CPU, %d threads\n", family, (long long) out_ne[3],
           (long long) out_ne[2], (long long) in_ne[1], (long long) in_ne[2], (long long) in_ne[3], threads);
    printf("model GFLOP/frame: %.2f (convolutions; upsample+conv counted unfused); executed by our %s graph: "
           "%.2f GFLOP\n",
           fl.model / 1e9, fl.n_upconv ? "fused" : "unfused", fl.executed / 1e9);
    if (peak_fs > 0) {
        printf("measured fp32 peak: %.1f GFLOP/s (dnnl_sgemm %dx%dx%d, best of %d: %.1f ms; "
               "after ours / after the peer: %.1f / %.1f GFLOP/s)\n",
               peak_fs / 1e9, SGEMM_N, SGEMM_N, SGEMM_N, SGEMM_RUNS, sgemm_ms[best_i], sgemm_fs[0] / 1e9,
               sgemm_fs[1] / 1e9);
        if (low_fs < 0.85 * peak_fs) {
            printf("WARNING: the two sgemm measurements differ by %.0f%%: the cores were busy with something "
                   "else during this run; its numbers are not reliable\n",
                   100.0 * (1.0 - low_fs / peak_fs));
        }
    } else {
        printf("measured fp32 peak: unavailable\n");
    }
    for (int k = 0; k < n_prec; k++) {
        const struct taef2_ours * r = &ours[k];
        char                      prec[32];
        printf("ours %s: prepare %.1f ms; %d frames after %d warmup: mean %.1f, median %.1f, min %.1f, max %.1f, "
               "sd %.1f ms; peak %.1f MiB\n",
               cpu_prec_label(prec, sizeof(prec), &r->prec), r->prepare_ms, frames, warmup, r->mean, r->median, r->mn,
               r->mx, r->sd, r->peak_mib);
    }
    printf("\n");
    printf("%-38s %9s %8s %9s %17s %9s\n", "impl", "ms/frame", "min ms", "GFLOP/s", "% of sgemm peak", "peak MiB");
    char pct[32] = "-", label[128], prec[32];
    for (int k = 0; k < n_prec; k++) {
        const double our_fs = fl.model / (ours[k].mean / 1e3);
        snprintf(pct, sizeof(pct), "-");
        if (peak_fs > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * our_fs / peak_fs);
        snprintf(label, sizeof(label), "gst-vaedecode cpu %s", cpu_prec_label(prec, sizeof(prec), &ours[k].prec));
        printf("%-38s %9.1f %8.1f %9.1f %17s %9.1f\n", label, ours[k].mean, ours[k].mn, our_fs / 1e9, pct,
               ours[k].peak_mib);
    }
    for (int k = 0; k < n_prec && !no_peer; k++) {
        const struct peer * pk = &peer[k];
        const char *        dtype = vae_precision_name(precisions[k]);
        if (!pk->ok) {
            printf("peer %s: unavailable (%s)\n", dtype, pk->reason);
            continue;
        }
        char version[64], minbuf[32] = "-";
        short_version(version, sizeof(version), pk->version);  // "2.15" in the table, the full one below it
        snprintf(label, sizeof(label), "PyTorch %s %s (%s)", version, dtype, pk->layout[0] ? pk->layout : "nchw");
        if (pk->min_ms > 0) snprintf(minbuf, sizeof(minbuf), "%.1f", pk->min_ms);
        const double peer_fs = fl.model / (pk->ms / 1e3);
        snprintf(pct, sizeof(pct), "-");
        if (peak_fs > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * peer_fs / peak_fs);
        printf("%-38s %9.1f %8s %9.1f %17s %9s\n", label, pk->ms, minbuf, peer_fs / 1e9, pct, "-");
    }
    for (int k = 0; k < n_prec && !no_peer; k++) {
        if (peer[k].ok) {
            printf("ratio (PyTorch / ours) at %s: %.2fx\n", vae_precision_name(precisions[k]), peer[k].ms / ours[k].mean);
            printf("peer: torch %s, %d threads, best layout %s\n", peer[k].version, peer[k].threads,
                   peer[k].layout[0] ? peer[k].layout : "nchw");
            if (peer[k].threads != threads) {
                printf("note: the peer ran with %d threads, ours with %d\n", peer[k].threads, threads);
            }
        }
    }
    if (peak_fs > 0) {
        printf("ours, executed FLOPs (fused upsample-convs at 4/9 of their model FLOPs) at %s: %.1f GFLOP/s, "
               "%.1f%% of sgemm peak\n",
               vae_precision_name(ours[0].prec.in_effect), fl.executed / (ours[0].mean / 1e3) / 1e9,
               100.0 * fl.executed / (ours[0].mean / 1e3) / peak_fs);
    }
    printf("threads: %d (omp_get_max_threads); max RSS %.1f MiB\n", threads, maxrss_mib);
    if (busy[0] >= 0 && busy[1] >= 0) {
        printf("CPUs busy with other processes (0.5 s sampled before / after): %.0f%% / %.0f%%\n", 100.0 * busy[0],
               100.0 * busy[1]);
        if (busy[0] > 0.1 || busy[1] > 0.1) {
            printf("WARNING: other processes were using the CPUs: the times above are not reliable\n");
        }
    }

    free(input);
    return 0;
}

#define SVD_MAX_CHUNKS   4
#define SEEDVR_MAX_TILES 4
#define VIDEO_MAX_ROWS   (2 * MAX_PRECISIONS + 3 + SVD_MAX_CHUNKS + SEEDVR_MAX_TILES)

// the video decoders' sizes: Wan and TAEHV share theirs; SVD, SeedVR2 and HunyuanVideo 1.5 have their own
struct video_opts {
    int T, h, w;                                   // Wan, TAEHV: latent frames, rows, columns
    int streams, warmup;                           // 0 streams: 1 for Wan, 5 for TAEHV, else 1
    int svd_T, svd_h, svd_w;
    int svd_chunks[SVD_MAX_CHUNKS], n_svd_chunks;  // one row per decode_chunk_size (0: the whole clip)
    int seedvr_T, seedvr_h, seedvr_w;
    int seedvr_tiles[SEEDVR_MAX_TILES], n_seedvr_tiles;  // one row per tile-size (0: untiled)
    int hyv_T, hyv_h, hyv_w;
    int ltx_T, ltx_h, ltx_w;
    int mm_T, mm_h, mm_w, mm_blocks;
    const char * clip_layouts;                     // the SVD, SeedVR2 and HunyuanVideo 1.5 peers' --layouts
};

// the rows of the video decoders asked for (do_video: Wan 2.1, TAEW2.1, SVD, SeedVR2, HunyuanVideo 1.5, LTX-2,
// MiniMax-H3) into vr, Wan's and TAEW2.1's one per precision of `precisions` (the others: fp32), the peers' extra
// arguments into args[row]; their count
static int video_rows(struct video_result * vr, const bool * do_video, const struct video_opts * o,
                      const enum vae_precision * precisions, int n_prec, char (*args)[128]) {
    static char labels[VIDEO_MAX_ROWS][64], mm_weights[64], mm_gen[32];
    int         n = 0;
    for (int k = 0; do_video[0] && k < n_prec; k++) {
        vr[n++] = (struct video_result) { .name = "wan", .label = "Wan 2.1 VAE (base 96)", .weights = WAN_WEIGHTS,
                                          .T = o->T, .h = o->h, .w = o->w, .chunk = 1, .clamp = true, .peer_of = -1,
                                          .prec.asked = precisions[k], .again = k > 0 };
    }
    for (int k = 0; do_video[1] && k < n_prec; k++) {
        vr[n++] = (struct video_result) { .name = "taehv", .label = "TAEW2.1 (n_f 256/128/64/64)",
                                          .weights = "taew21_full.safetensors", .T = o->T, .h = o->h, .w = o->w,
                                          .chunk = 1, .clamp = true, .peer_of = -1, .prec.asked = precisions[k],
                                          .again = k > 0 };
    }
    for (int i = 0; do_video[2] && i < o->n_svd_chunks; i++, n++) {
        const int c = o->svd_chunks[i];
        snprintf(labels[n], sizeof(labels[n]), "SVD temporal decoder, chunk %d", c ? c : o->svd_T);
        snprintf(args[n], sizeof(args[n]), "--chunk %d --layouts %s", c, o->clip_layouts);
        vr[n] = (struct video_result) { .name = "svd", .label = labels[n], .weights = "svd_full.safetensors",
                                        .T = o->svd_T, .h = o->svd_h, .w = o->svd_w, .chunk = c, .clip = true,
                                        .peer_args = args[n], .peer_of = -1 };
    }
    const int first_seedvr = n;  // its peer run serves every SeedVR2 row: tiling does not change the output
    for (int i = 0; do_video[3] && i < o->n_seedvr_tiles; i++, n++) {
        const int t = o->seedvr_tiles[i];
        if (t) {
            snprintf(labels[n], sizeof(labels[n]), "SeedVR2 VAE, tile-size %d", t);
        } else {
            snprintf(labels[n], sizeof(labels[n]), "SeedVR2 VAE, untiled");
        }
        snprintf(args[n], sizeof(args[n]), "--layouts %s", o->clip_layouts);
        vr[n] = (struct video_result) { .name = "seedvr2", .label = labels[n], .weights = "seedvr2_full.safetensors",
                                        .T = o->seedvr_T, .h = o->seedvr_h, .w = o->seedvr_w, .chunk = 1, .tile = t,
                                        .clip = true, .peer_args = args[n], .peer_of = i ? first_seedvr : -1 };
    }
    if (do_video[4]) { // (upstream decodes the whole clip in one call: ms/frame over the stream)
        snprintf(args[n], sizeof(args[n]), "--layouts %s", o->clip_layouts);
        vr[n] = (struct video_result) { .name = "hyvideo15", .label = "HunyuanVideo 1.5 VAE (released widths)",
                                        .weights = "hyvideo15_full.safetensors", .T = o->hyv_T, .h = o->hyv_h,
                                        .w = o->hyv_w, .chunk = 1, .clip = true, .peer_args = args[n], .peer_of = -1 };
        n++;
    }
    if (do_video[5]) { // (the same: upstream decodes the whole clip; ours streams it 22 latent frames late)
        snprintf(args[n], sizeof(args[n]), "--layouts %s", o->clip_layouts);
        vr[n] = (struct video_result) { .name = "ltx2", .label = "LTX-2 video VAE (2.0, released widths)",
                                        .weights = "ltx2_full.safetensors", .T = o->ltx_T, .h = o->ltx_h,
                                        .w = o->ltx_w, .chunk = 1, .clip = true, .peer_args = args[n], .peer_of = -1 };
        n++;
    }
    if (do_video[6]) { // (the same; the session decodes upstream's chunks of 5 + 2 latent frames whatever is asked)
        snprintf(labels[n], sizeof(labels[n]), "MiniMax-H3 (2048 wide, %d of 36 blocks)", o->mm_blocks);
        snprintf(mm_weights, sizeof(mm_weights), "minimax_b%d.safetensors", o->mm_blocks);
        snprintf(mm_gen, sizeof(mm_gen), "--blocks %d", o->mm_blocks);
        snprintf(args[n], sizeof(args[n]), "--layouts %s", o->clip_layouts);
        vr[n] = (struct video_result) { .name = "minimax", .label = labels[n], .weights = mm_weights,
                                        .gen_args = mm_gen, .T = o->mm_T, .h = o->mm_h, .w = o->mm_w, .chunk = 7,
                                        .clip = true, .imagenet = true, .peer_args = args[n], .peer_of = -1 };
        n++;
    }
    for (int i = 0; i < n; i++) {
        struct cpu_prec * p = &vr[i].prec;
        if (p->asked == VAE_PRECISION_AUTO) p->asked = VAE_PRECISION_FP32;  // those --precisions does not cover
        p->in_effect = p->asked;  // until the backend says
        snprintf(vr[i].tag, sizeof(vr[i].tag), "%s, %s", vr[i].label, vae_precision_name(p->asked));
    }
    return n;
}

// the video decoders (do_video, precisions: as video_rows), their weights and latents made in
// video_dir; prints its own report. sgemm_fs[*n_sgemm_io...] gets its speed probes.
static void bench_video(const bool * do_video, const char * video_python, const char * video_script,
                        const char * taehv_py, const char * video_dir, const struct video_opts * o,
                        const enum vae_precision * precisions, int n_prec, bool no_peer, int threads,
                        struct cpu_snap run_start, double * sgemm_fs, int * n_sgemm_io) {
    int                 n_sgemm = *n_sgemm_io;
    struct video_result vr[VIDEO_MAX_ROWS];
    char                peer_args[VIDEO_MAX_ROWS][128];
    const int           n_rows = video_rows(vr, do_video, o, precisions, n_prec, peer_args);
    printf("\nvideo decoders: %s timed streams after %d warm-up streams of 2 latent frames (MiniMax-H3: 3); weights "
           "and latents in %s\n",
           o->streams ? argv_streams(o->streams) : "1 (Wan, SVD, SeedVR2) / 5 (TAEHV)", o->warmup, video_dir);
    double                video_busy[2] = { -1.0, -1.0 };
    const struct cpu_snap video_start   = cpu_snap();
    for (int m = 0; m < n_rows; m++) {
        struct video_result * r = &vr[m];
        const bool            taehv = !strcmp(r->name, "taehv");
        if (!video_gen(r->name, r->weights, video_python, video_script, taehv ? taehv_py : NULL, video_dir, r->T, r->h,
                       r->w, threads, r->gen_args ? r->gen_args : "", r->reason, sizeof(r->reason))) {
            printf("%s: %s\n", r->name, r->reason);
            continue;
        }
        settle();  // after the generator's exit
        if (video_busy[0] < 0) video_busy[0] = other_load(500);
        // a short sgemm before and after each side: a core taken by something this guest cannot see
        // (a neighbour on the host) shows as a lower rate here
        double ms;
        r->probe[0] = sgemm_fs[n_sgemm++] = sgemm_peak(&ms);
        printf("%s: ours...\n", r->tag);
        fflush(stdout);
        const int  streams = o->streams ? o->streams : taehv ? 5 : 1;  // Wan: ~20 s a stream
        const bool ours_ok = video_ours(r, video_dir, streams, o->warmup);
        r->probe[1] = sgemm_fs[n_sgemm++] = sgemm_peak(&ms);
        if (!ours_ok) {
            printf("%s: ours failed: %s\n", r->tag, r->reason);
            // the rows that were to share this row's peer run: the first of them runs it
            for (int k = m + 1, heir = -1; k < n_rows; k++) {
                if (vr[k].peer_of != m) continue;
                vr[k].peer_of = heir;
                if (heir < 0) heir = k;
            }
            continue;
        }
        printf("%s: ours: %s; session prepared in %.0f ms (chunk-frames %d, tile %d); first latent %.1f ms, steady "
               "%.1f ms/frame, stream %.1f ms (%.1f ms/frame); session peak %.1f MiB, process VmHWM %.1f MiB\n",
               r->tag, r->description, r->prepare_ms, r->chunk, r->tile_used, r->first_ms, r->step_ms, r->stream_ms,
               r->stream_ms / r->n_frames, r->peak_bytes / 1048576.0, r->hwm_mib);
        if (no_peer) continue;
        if (r->peer_of >= 0) {
            r->peer = vr[r->peer_of].peer;
            if (!r->peer.ok && !r->peer.reason[0]) snprintf(r->peer.reason, sizeof(r->peer.reason), "not run");
        } else {
            video_peer_run(r, video_python, video_script, taehv ? taehv_py : NULL, video_dir, streams, o->warmup,
                           threads);
            settle();
            r->probe[2] = sgemm_fs[n_sgemm++] = sgemm_peak(&ms);
        }
        if (r->peer.ok) video_compare(r, video_dir);
        if (!strcmp(r->name, "ltx2")) video_plan_ltx720(r, video_dir);
        if (!strcmp(r->name, "minimax")) video_plan_mm720(r, video_dir, o->mm_blocks);
    }
    const struct cpu_snap video_end = cpu_snap();
    video_busy[1] = other_load(500);
    double peak_fs = 0.0, low_fs = 0.0;
    for (int i = 0; i < n_sgemm; i++) {
        if (sgemm_fs[i] > peak_fs) peak_fs = sgemm_fs[i];
        if (i == 0 || sgemm_fs[i] < low_fs) low_fs = sgemm_fs[i];
    }

    // report
    char precs[32];
    printf("\nVideo decoders, CPU, %d threads, random weights; Wan and TAEW2.1 at %s (a row each, ours at the "
           "precision in effect), the others at fp32:\n",
           threads, precision_list(precs, sizeof(precs), precisions, n_prec));
    for (int m = 0; m < n_rows; m++) {
        const struct video_result * r = &vr[m];
        if (!r->ok || (r->again && vr[m - 1].ok)) continue;
        printf("  %s: latent %dx%dx%d, streams of %d latent frames -> %d frames of %dx%d, chunk-frames %d%s, "
               "tile-size %d (in use %d)\n",
               r->label, video_channels(r->name), r->h, r->w, r->T, r->n_frames, r->out_w, r->out_h, r->chunk,
               r->chunk ? "" : " (the whole clip)", r->tile, r->tile_used);
    }
    if (peak_fs > 0) {
        printf("measured fp32 peak: %.1f GFLOP/s (dnnl_sgemm %dx%dx%d, best of %d; the best of the %d measurements "
               "in this run, lowest %.1f)\n",
               peak_fs / 1e9, SGEMM_N, SGEMM_N, SGEMM_N, SGEMM_RUNS, n_sgemm, low_fs / 1e9);
        if (low_fs < 0.85 * peak_fs) {
            printf("note: the sgemm measurements differ by up to %.0f%%: the cores were not always all ours during "
                   "this run (the probe column says around which rows)\n",
                   100.0 * (1.0 - low_fs / peak_fs));
        }
    }
    for (int m = 0; m < n_rows; m++) {
        const struct video_result * r = &vr[m];
        if (!r->ok || (r->again && vr[m - 1].ok)) continue;
        if (r->chunks) {
            printf("%s: model GFLOP per output frame (a stream: %d chunks, %d frames) %.2f, attention %.1f%% of it; "
                   "executed by our graph %.2f; a chunk: %.2f model GFLOP\n",
                   r->label, r->chunks, r->n_frames, r->chunks * r->step.model / r->n_frames / 1e9,
                   100.0 * r->step.attention / r->step.model, r->chunks * r->step.executed / r->n_frames / 1e9,
                   r->step.model / 1e9);
            continue;
        }
        printf("%s: model GFLOP per output frame (steady: 1 latent frame = %d frames) %.2f, attention %.1f%% of it; "
               "executed by our graph %.2f; latent frame 0: %.2f model GFLOP\n",
               r->label, r->frames_per_latent, r->step.model / r->frames_per_latent / 1e9,
               100.0 * r->step.attention / r->step.model, r->step.executed / r->frames_per_latent / 1e9,
               r->first.model / 1e9);
    }
    printf("\n%-52s %9s %8s %9s %8s %7s %9s %9s %8s %7s\n", "impl", "ms/frame", "min ms", "first ms", "GFLOP/s",
           "% peak", "peak MiB", "RSS MiB", "speed-up", "probe");
    int unsteady = 0;
    for (int m = 0; m < n_rows; m++) {
        const struct video_result * r = &vr[m];
        char label[128], pct[32] = "-", rss[32] = "-", prec[32];
        snprintf(label, sizeof(label), "%s: ours %s", r->label, cpu_prec_label(prec, sizeof(prec), &r->prec));
        if (!r->ok) {
            printf("%-52s unavailable (%s)\n", label, r->reason);
            continue;
        }
        // per frame: the steady state's, or the whole clip's (latent frame 0's graph included)
        const double flops_frame = r->chunks ? r->chunks * r->step.model / r->n_frames
                                   : r->clip ? (r->first.model + (r->T - 1) * r->step.model) / r->n_frames
                                             : r->step.model / r->frames_per_latent;
        const double fs          = flops_frame / (r->steady_ms / 1e3);
        if (peak_fs > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * fs / peak_fs);
        if (r->hwm_mib > 0) snprintf(rss, sizeof(rss), "%.0f", r->hwm_mib);
        const double probe = r->probe[0] < r->probe[1] ? r->probe[0] : r->probe[1];
        unsteady += probe < 0.85 * peak_fs;
        printf("%-52s %9.1f %8.1f %9.1f %8.1f %7s %9.1f %9s %8s %6.0f%s\n", label, r->steady_ms, r->steady_min_ms,
               r->first_ms, fs / 1e9, pct, r->peak_bytes / 1048576.0, rss, "1.00", probe / 1e9,
               probe < 0.85 * peak_fs ? "!" : "");
        if (no_peer) continue;
        const struct video_peer * p = &r->peer;
        const char *              dtype = vae_precision_name(r->prec.asked);
        if (!p->ok) {
            snprintf(label, sizeof(label), "  PyTorch %s", dtype);
            printf("%-52s unavailable (%s)\n", label, p->reason);
            continue;
        }
        char version[64];
        short_version(version, sizeof(version), p->version);
        snprintf(label, sizeof(label), "  PyTorch %s %s (%s%s%s)%s", version, dtype, p->layout,
                 strcmp(p->mode, "-") ? ", " : "", strcmp(p->mode, "-") ? p->mode : "",
                 r->peer_of >= 0 ? ", as above" : "");
        const double pfs = flops_frame / (p->steady_ms / 1e3);
        snprintf(pct, sizeof(pct), "-");
        if (peak_fs > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * pfs / peak_fs);
        snprintf(rss, sizeof(rss), "-");
        if (p->decode_rss_mib > 0) snprintf(rss, sizeof(rss), "%.0f", p->decode_rss_mib);
        char speed[32];
        snprintf(speed, sizeof(speed), "%.2f", p->steady_ms / r->steady_ms);
        const double * pr     = vr[r->peer_of >= 0 ? r->peer_of : m].probe;
        const double   pprobe = pr[1] < pr[2] ? pr[1] : pr[2];
        unsteady += pprobe < 0.85 * peak_fs;
        printf("%-52s %9.1f %8.1f %9.1f %8.1f %7s %9s %9s %8s %6.0f%s\n", label, p->steady_ms, p->steady_min_ms,
               p->first_ms, pfs / 1e9, pct, "-", rss, speed, pprobe / 1e9, pprobe < 0.85 * peak_fs ? "!" : "");
    }
    printf("ms/frame: Wan, TAEHV: steady state, per output frame (the latent frames after the first, 4 frames "
           "each); SVD, SeedVR2, HunyuanVideo 1.5, LTX-2, MiniMax-H3: the whole stream (pushes, drain, pops; upstream: its decode calls) / its frames; "
           "first ms: latent frame 0 (SVD: the first push or call; 0: no boundary upstream); speed-up = PyTorch ms / "
           "our ms, both asked for the same precision (above 1: ours is faster); probe: the lower of the sgemm GFLOP/s "
           "measured just before and just after that row\n");
    if (unsteady) {
        printf("WARNING: %d row(s) marked '!' ran while the sgemm rate was more than 15%% below the run's best: "
               "something else was taking CPU time (possibly outside this guest); repeat the run\n",
               unsteady);
    }
    printf("peak MiB: vae_session_peak_bytes (arena, weights, state); RSS MiB: the process's peak resident set "
           "while it decoded, weights and runtime included (ours: VmHWM from before loading the model; PyTorch: "
           "VmHWM reset after loading)\n");
    for (int m = 0; m < n_rows; m++) {
        const struct video_result * r = &vr[m];
        if (!r->ok || no_peer || !r->peer.ok) continue;
        if (r->compared) {
            char clamp[96] = ", both raw";
            if (r->clamp) snprintf(clamp, sizeof(clamp), ", ours clamped to [%g, %g] as upstream does", r->lo, r->hi);
            if (r->imagenet) snprintf(clamp, sizeof(clamp), ", PyTorch's as x std + mean (ImageNet's)");
            printf("%s: ours vs PyTorch on the same weights and latents, %d frames%s: max |diff| %.3g, mean |diff| "
                   "%.3g%s\n",
                   r->tag, r->n_frames, clamp, r->max_abs, r->mean_abs,
                   r->prec.asked == VAE_PRECISION_BF16 ? " (bf16: both sides round, differently: larger than at fp32)"
                                                       : "");
        } else {
            printf("%s: outputs not compared (%s)\n", r->tag, r->compare_note);
        }
        printf("%s: PyTorch torch %s, %d threads, fastest: layout %s%s%s; stream %.1f ms (ours %.1f); RSS after "
               "load %.0f MiB, process max RSS %.0f MiB\n",
               r->tag, r->peer.version, r->peer.threads, r->peer.layout, strcmp(r->peer.mode, "-") ? ", " : "",
               strcmp(r->peer.mode, "-") ? r->peer.mode : "", r->peer.stream_ms, r->stream_ms, r->peer.load_rss_mib,
               r->peer.max_rss_mib);
        if (r->peer.threads != threads) {
            printf("note: the peer ran with %d threads, ours with %d\n", r->peer.threads, threads);
        }
    }
    if (video_busy[0] >= 0 && video_busy[1] >= 0) {
        printf("CPUs busy with other processes (0.5 s sampled before / after the video decoders): %.0f%% / %.0f%%\n",
               100.0 * video_busy[0], 100.0 * video_busy[1]);
        if (video_busy[0] > 0.1 || video_busy[1] > 0.1) {
            printf("WARNING: other processes were using the CPUs: the times above are not reliable\n");
        }
    }
    const double others_video = others_share(video_start, video_end);
    const double others_run   = others_share(run_start, cpu_snap());
    if (others_video >= 0) {
        printf("CPU time taken by other processes (/proc/stat minus this process and its peers): %.1f%% of the "
               "machine during the video decoders, %.1f%% over the whole run\n",
               100.0 * others_video, 100.0 * others_run);
        if (others_video > 0.05) {
            printf("WARNING: other processes used more than 5%% of the CPUs during the video decoders: the times "
                   "above are not reliable\n");
        }
    }
    for (int m = 0; m < n_rows; m++) free(vr[m].out);
    *n_sgemm_io = n_sgemm;
}

int main(int argc, char ** argv) {
    const char * model_path  = NULL;
    const char * python      = NULL;
    const char * peer_script = NULL;
    const char * video_python = NULL;
    const char * taehv_py     = NULL;
    const char * video_dir    = NULL;
    const char * models       = "taef2,wan,taehv";
    int          frames = 5, warmup = 1;
    struct video_opts vo = { .T = 3, .h = VIDEO_LATENT_H, .w = VIDEO_LATENT_W, .warmup = 1, .svd_T = SVD_FRAMES,
                             .svd_h = SVD_LATENT_H, .svd_w = SVD_LATENT_W, .svd_chunks = { SVD_FRAMES, 4 },
                             .n_svd_chunks = 2, .seedvr_T = 2, .seedvr_h = SEEDVR_LATENT_H,
                             .seedvr_w = SEEDVR_LATENT_W, .seedvr_tiles = { 0, 256 }, .n_seedvr_tiles = 2,
                             .hyv_T = 2, .hyv_h = HYV_LATENT_H, .hyv_w = HYV_LATENT_W, .ltx_T = LTX_FRAMES,
                             .ltx_h = LTX_LATENT_H, .ltx_w = LTX_LATENT_W, .mm_T = MM_FRAMES, .mm_h = MM_LATENT_H,
                             .mm_w = MM_LATENT_W, .mm_blocks = MM_BLOCKS, .clip_layouts = "channels_last" };
    bool         no_peer = false;
    enum vae_precision precisions[MAX_PRECISIONS] = { VAE_PRECISION_FP32 };
    int                n_prec                     = 1;
    struct kl_opts kl_opts = { KL_LATENT, KL_LATENT, 2, 1, 3, { 0, 256, 128 }, "nchw,channels_last" };

    // the options that take an integer >= lo, and those that take a latent size HxW
    const struct {
        const char * name;
        int *        dst;
        int          lo;
        const char * hint;
    } int_opts[] = {
        { "--frames", &frames, 1, "" },
        { "--warmup", &warmup, 0, "" },
        { "--latent-frames", &vo.T, 2, "" },
        { "--video-streams", &vo.streams, 0, " (0: 1 for Wan, 5 for TAEHV, else 1)" },
        { "--video-warmup", &vo.warmup, 0, "" },
        { "--kl-runs", &kl_opts.runs, 1, "" },
        { "--kl-warmup", &kl_opts.warmup, 0, "" },
        { "--svd-frames", &vo.svd_T, 2, "" },
        { "--seedvr-frames", &vo.seedvr_T, 2, "" },
        { "--hyv-frames", &vo.hyv_T, 2, "" },
        { "--ltx-frames", &vo.ltx_T, 2, "" },
        { "--mm-frames", &vo.mm_T, 3, " (the fewest MiniMax-H3 decodes)" },
        { "--mm-blocks", &vo.mm_blocks, 2, " (the plan halves it)" },
    };
    const struct {
        const char * name;
        int *        h, *w;
    } hw_opts[] = {
        { "--video-latent", &vo.h, &vo.w },
        { "--kl-latent", &kl_opts.h, &kl_opts.w },
        { "--svd-latent", &vo.svd_h, &vo.svd_w },
        { "--seedvr-latent", &vo.seedvr_h, &vo.seedvr_w },
        { "--hyv-latent", &vo.hyv_h, &vo.hyv_w },
        { "--ltx-latent", &vo.ltx_h, &vo.ltx_w },
        { "--mm-latent", &vo.mm_h, &vo.mm_w },
    };

    for (int i = 1; i < argc; i++) {
        const char * a       = argv[i];
        const bool   has_val = i + 1 < argc;
        int          known   = 0;  // 1: an option of the tables, parsed; -1: its value is wrong
        for (size_t k = 0; has_val && !known && k < sizeof(int_opts) / sizeof(int_opts[0]); k++) {
            if (strcmp(a, int_opts[k].name)) continue;
            known = parse_int(argv[++i], int_opts[k].lo, int_opts[k].dst) ? 1 : -1;
            if (known < 0) fprintf(stderr, "bench-cpu: %s takes an integer >= %d%s\n", a, int_opts[k].lo, int_opts[k].hint);
        }
        for (size_t k = 0; has_val && !known && k < sizeof(hw_opts) / sizeof(hw_opts[0]); k++) {
            if (strcmp(a, hw_opts[k].name)) continue;
            known = parse_hw(argv[++i], hw_opts[k].h, hw_opts[k].w) ? 1 : -1;
            if (known < 0) fprintf(stderr, "bench-cpu: %s takes HxW (latent rows x columns, 1..512)\n", a);
        }
        if (known < 0) return 2;
        if (known) continue;
        if (!strcmp(a, "--model") && has_val) {
            model_path = argv[++i];
        } else if (!strcmp(a, "--python") && has_val) {
            python = argv[++i];
        } else if (!strcmp(a, "--peer-script") && has_val) {
            peer_script = argv[++i];
        } else if (!strcmp(a, "--no-peer")) {
            no_peer = true;
        } else if (!strcmp(a, "--models") && has_val) {
            models = argv[++i];
        } else if (!strcmp(a, "--video-python") && has_val) {
            video_python = argv[++i];
        } else if (!strcmp(a, "--taehv-py") && has_val) {
            taehv_py = argv[++i];
        } else if (!strcmp(a, "--video-dir") && has_val) {
            video_dir = argv[++i];
        } else if (!strcmp(a, "--kl-tiles") && has_val) {
            if (!parse_int_list(argv[++i], kl_opts.tiles, KL_MAX_TILES, &kl_opts.n_tiles)) {
                fprintf(stderr, "bench-cpu: --kl-tiles takes 1 to %d comma-separated tile sizes >= 0 (0: whole "
                                "frame)\n", KL_MAX_TILES);
                return 2;
            }
        } else if (!strcmp(a, "--svd-chunks") && has_val) {
            if (!parse_int_list(argv[++i], vo.svd_chunks, SVD_MAX_CHUNKS, &vo.n_svd_chunks)) {
                fprintf(stderr, "bench-cpu: --svd-chunks takes 1 to %d comma-separated chunk sizes >= 0 (0: the "
                                "whole clip)\n", SVD_MAX_CHUNKS);
                return 2;
            }
        } else if (!strcmp(a, "--seedvr-tiles") && has_val) {
            if (!parse_int_list(argv[++i], vo.seedvr_tiles, SEEDVR_MAX_TILES, &vo.n_seedvr_tiles)) {
                fprintf(stderr, "bench-cpu: --seedvr-tiles takes 1 to %d comma-separated tile sizes >= 0 (0: "
                                "untiled)\n", SEEDVR_MAX_TILES);
                return 2;
            }
        } else if (!strcmp(a, "--clip-layouts") && has_val) {
            vo.clip_layouts = argv[++i];
            if (!layouts_ok(vo.clip_layouts)) {
                fprintf(stderr, "bench-cpu: --clip-layouts takes nchw, channels_last or both, comma-separated\n");
                return 2;
            }
        } else if (!strcmp(a, "--kl-layouts") && has_val) {
            kl_opts.layouts = argv[++i];
            if (!layouts_ok(kl_opts.layouts)) {
                fprintf(stderr, "bench-cpu: --kl-layouts takes nchw, channels_last or both, comma-separated\n");
                return 2;
            }
        } else if (!strcmp(a, "--precisions") && has_val) {
            const char * p = argv[++i];
            n_prec         = 0;
            while (*p) {
                const size_t n = strcspn(p, ",");
                const bool   bf = n == 4 && !strncmp(p, "bf16", 4), f32 = n == 4 && !strncmp(p, "fp32", 4);
                if (n_prec == MAX_PRECISIONS || (!bf && !f32)) {
                    fprintf(stderr, "bench-cpu: --precisions takes fp32, bf16 or both, comma-separated\n");
                    return 2;
                }
                precisions[n_prec++] = bf ? VAE_PRECISION_BF16 : VAE_PRECISION_FP32;
                p += n + (p[n] == ',');
            }
            if (!n_prec) {
                fprintf(stderr, "bench-cpu: --precisions needs fp32 or bf16\n");
                return 2;
            }
        } else if (!strcmp(a, "--isa") && has_val) {
            // before oneDNN's first call, which fixes the ISA for the process
            setenv("DNNL_MAX_CPU_ISA", argv[++i], 1);
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench-cpu: unknown or incomplete argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }

    static char script_buf[4096];
    if (!model_path) {
        model_path = DEFAULT_MODEL;
#ifdef VAE_SOURCE_DIR
        static char model_buf[4096];
        // run from elsewhere than the repository root: fall back to the shared dir beside the source
        if (access(model_path, R_OK) != 0) {
            snprintf(model_buf, sizeof(model_buf), "%s/%s", VAE_SOURCE_DIR, DEFAULT_MODEL);
            if (access(model_buf, R_OK) == 0) model_path = model_buf;
        }
#endif
    }
    if (!python) {
        const char * env = getenv("VAE_BENCH_PYTHON");
        python           = env && *env ? env : DEFAULT_PYTHON;
    }
    if (!peer_script) {
        source_path(script_buf, sizeof(script_buf), PEER_SCRIPT);
        peer_script = script_buf;
    }

    // which models
    bool do_model[9] = { false };  // taef2, wan, taehv, svd, seedvr2, hyvideo15, ltx2, minimax, kl
    {
        static const char * names[9] = { "taef2", "wan", "taehv", "svd", "seedvr2", "hyvideo15", "ltx2", "minimax",
                                         "kl" };
        const char *        p        = models;
        while (*p) {
            const size_t n  = strcspn(p, ",");
            int          hit = -1;
            for (int k = 0; k < 9; k++) {
                if (strlen(names[k]) == n && !strncmp(p, names[k], n)) hit = k;
            }
            if (hit < 0) {
                fprintf(stderr, "bench-cpu: --models takes a comma-separated list of taef2, wan, taehv, svd, seedvr2, "
                        "hyvideo15, ltx2, minimax, kl\n");
                return 2;
            }
            do_model[hit] = true;
            p += n + (p[n] == ',');
        }
    }
    if (!video_python) {
        const char * env = getenv("VAE_BENCH_VIDEO_PYTHON");
        video_python     = env && *env ? env : python;
    }
    if (!taehv_py) {
        const char * env = getenv("TAEHV_PY");
        taehv_py         = env && *env ? env : NULL;
    }
    static char video_script[4096];
    source_path(video_script, sizeof(video_script), VIDEO_SCRIPT);

    const int threads = omp_get_max_threads();
    // how busy the machine is without us: a benchmark on shared cores is not worth much
    const struct cpu_snap run_start = cpu_snap();
    double busy[2] = { other_load(500), -1.0 };
    double sgemm_fs[128] = { 0.0 };  // (every model, its most rows and both precisions: 66)
    int    n_sgemm      = 0;

    if (do_model[0]) {
        if (bench_taef2(model_path, python, peer_script, frames, warmup, no_peer, threads, precisions, n_prec, busy,
                        sgemm_fs)) {
            return 1;
        }
        n_sgemm = 2;
    }
    if (!do_model[1] && !do_model[2] && !do_model[3] && !do_model[4] && !do_model[5] && !do_model[6] && !do_model[7] &&
        !do_model[8]) {
        return 0;
    }

    // the generated weights and latents of the video decoders and AutoencoderKL
    char dir_buf[4096];
    bool own_dir;
    if (!(video_dir = work_dir(video_dir, dir_buf, sizeof(dir_buf), &own_dir))) {
        return 1;
    }
    if (do_model[1] || do_model[2] || do_model[3] || do_model[4] || do_model[5] || do_model[6] || do_model[7]) {
        bench_video(do_model + 1, video_python, video_script, taehv_py, video_dir, &vo, precisions, n_prec, no_peer,
                    threads, run_start, sgemm_fs, &n_sgemm);
    }
    if (do_model[8]) {
        bench_kl(&kl_opts, precisions, n_prec, video_python, video_dir, no_peer, threads, run_start, sgemm_fs,
                 &n_sgemm);
    }
    if (own_dir) remove_own_dir(video_dir);
    return 0;
}
