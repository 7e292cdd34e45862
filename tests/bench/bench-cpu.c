// bench-cpu: ms per 832x480 TAEF2 frame (latent 32x60x104) on the CPU backend, beside the
// upstream-equivalent PyTorch decoder (tests/bench/taef2_torch.py) run on the same machine in
// the same run, with FLOP/s and the fraction of this machine's measured fp32 peak (oneDNN sgemm).
//
//   bench-cpu [--model PATH] [--frames N] [--warmup W] [--python PATH] [--peer-script PATH] [--no-peer]
//
// A benchmark, not a test: it always exits 0 when our side ran, whether or not the peer could.
// See tests/bench/README.md.

#include "vae-backend.h"
#include "vae-model.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(FILE * f) {
    fprintf(f,
            "usage: bench-cpu [--model PATH] [--frames N] [--warmup W] [--python PATH]\n"
            "                 [--peer-script PATH] [--no-peer]\n"
            "  --model PATH        decoder safetensors (default %s)\n"
            "  --frames N          timed decodes, one frame each (default 5)\n"
            "  --warmup W          untimed decodes first (default 1)\n"
            "  --python PATH       interpreter with torch for the peer (default %s; env VAE_BENCH_PYTHON)\n"
            "  --peer-script PATH  the PyTorch peer (default %s in the source dir)\n"
            "  --no-peer           do not run the PyTorch peer\n",
            DEFAULT_MODEL, DEFAULT_PYTHON, PEER_SCRIPT);
}

static bool parse_int(const char * s, int lo, int * out) {
    char * end;
    errno        = 0;
    const long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > 1000000) {
        return false;
    }
    *out = (int) v;
    return true;
}

// --- FLOPs ------------------------------------------------------------------------------------

struct flops {
    double model;     // every conv at its unfused cost (upsample+3x3 conv counted as the 3x3 conv)
    double executed;  // what the graph as built runs (fused upsample-convs: 4/9 of their model cost)
    int    n_conv, n_upconv;
};

static struct flops count_flops(const struct vae_graph * g) {
    struct flops f = { 0 };
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        if (t->op != VAE_OP_CONV2D && t->op != VAE_OP_UPSAMPLE_CONV2D) {
            continue;
        }
        const struct vae_tensor * w = t->src[1];  // [Cout, Cin, k, k]
        const double macs_per_px = (double) w->ne[0] * (double) w->ne[1] * (double) w->ne[2] * (double) w->ne[3];
        const double out_px      = (double) t->ne[0] * (double) t->ne[2] * (double) t->ne[3];
        const double fl          = 2.0 * macs_per_px * out_px;
        f.model += fl;
        if (t->op == VAE_OP_UPSAMPLE_CONV2D) {
            // each output pixel of nearest2x + 3x3 sees only 2x2 distinct inputs per channel
            f.executed += fl * 4.0 / 9.0;
            f.n_upconv++;
        } else {
            f.executed += fl;
            f.n_conv++;
        }
    }
    return f;
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

// append s to dst single-quoted for /bin/sh
static void sh_quote(char * dst, size_t size, const char * s) {
    size_t n = strlen(dst);
    if (n + 1 < size) dst[n++] = '\'';
    for (; *s && n + 5 < size; s++) {
        if (*s == '\'') {
            memcpy(dst + n, "'\\''", 4);
            n += 4;
        } else {
            dst[n++] = *s;
        }
    }
    if (n + 1 < size) dst[n++] = '\'';
    dst[n] = '\0';
}

static void append(char * dst, size_t size, const char * s) {
    const size_t n = strlen(dst);
    snprintf(dst + n, size - n, "%s", s);
}

static void rstrip(char * s) {
    size_t n = strlen(s);
    while (n && isspace((unsigned char) s[n - 1])) {
        s[--n] = '\0';
    }
}

static void run_peer(struct peer * p, const char * python, const char * script, const char * model, int frames,
                     int warmup, int threads) {
    memset(p, 0, sizeof(*p));
    p->min_ms = -1.0;
    if (access(script, R_OK) != 0) {
        snprintf(p->reason, sizeof(p->reason), "cannot read the peer script %.400s: %s", script, strerror(errno));
        return;
    }
    if (access(python, X_OK) != 0) {
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
    append(cmd, sizeof(cmd), " --best-layout 2>&1");

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

// --- main -------------------------------------------------------------------------------------

static int cmp_double(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char ** argv) {
    const char * model_path  = NULL;
    const char * python      = NULL;
    const char * peer_script = NULL;
    int          frames = 5, warmup = 1;
    bool         no_peer = false;

    for (int i = 1; i < argc; i++) {
        const char * a       = argv[i];
        const bool   has_val = i + 1 < argc;
        if (!strcmp(a, "--model") && has_val) {
            model_path = argv[++i];
        } else if (!strcmp(a, "--frames") && has_val) {
            if (!parse_int(argv[++i], 1, &frames)) {
                fprintf(stderr, "bench-cpu: --frames takes an integer >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--warmup") && has_val) {
            if (!parse_int(argv[++i], 0, &warmup)) {
                fprintf(stderr, "bench-cpu: --warmup takes an integer >= 0\n");
                return 2;
            }
        } else if (!strcmp(a, "--python") && has_val) {
            python = argv[++i];
        } else if (!strcmp(a, "--peer-script") && has_val) {
            peer_script = argv[++i];
        } else if (!strcmp(a, "--no-peer")) {
            no_peer = true;
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
#ifdef VAE_SOURCE_DIR
        snprintf(script_buf, sizeof(script_buf), "%s/%s", VAE_SOURCE_DIR, PEER_SCRIPT);
#else
        snprintf(script_buf, sizeof(script_buf), "%s", PEER_SCRIPT);
#endif
        peer_script = script_buf;
    }

    const int threads = omp_get_max_threads();
    char      err[512] = "";
    // how busy the machine is without us: a benchmark on shared cores is not worth much
    double busy[2] = { other_load(500), -1.0 };

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
    vae_backend_t * be = vae_backend_init(VAE_BACKEND_CPU, 0, err, sizeof(err));
    if (!be) {
        fprintf(stderr, "bench-cpu: %s\n", err);
        vae_graph_free(g);
        vae_model_free(model);
        return 1;
    }
    const double t_prep = now_ms();
    if (!vae_backend_graph_prepare(be, g, 0, err, sizeof(err))) {
        fprintf(stderr, "bench-cpu: prepare: %s\n", err);
        vae_backend_free(be);
        vae_graph_free(g);
        vae_model_free(model);
        return 1;
    }
    const double prepare_ms = now_ms() - t_prep;

    int64_t in_ne[4], out_ne[4];  // copied: the graph is freed before the report
    memcpy(in_ne, g->input->ne, sizeof(in_ne));
    memcpy(out_ne, g->output->ne, sizeof(out_ne));
    const size_t    n_in   = (size_t) (in_ne[0] * in_ne[1] * in_ne[2] * in_ne[3]);
    float *         input  = malloc(n_in * sizeof(float));
    double *        times  = malloc((size_t) frames * sizeof(double));
    if (!input || !times) {
        fprintf(stderr, "bench-cpu: out of memory\n");
        return 1;
    }
    // N(0,1) latents (Box-Muller over a fixed LCG), like the peer's torch.randn
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n_in; i += 2) {
        double u[2];
        for (int k = 0; k < 2; k++) {
            rng  = rng * 6364136223846793005ull + 1442695040888963407ull;
            u[k] = ((rng >> 11) + 0.5) / 9007199254740992.0;
        }
        const double r = sqrt(-2.0 * log(u[0]));
        input[i]       = (float) (r * cos(2.0 * M_PI * u[1]));
        if (i + 1 < n_in) input[i + 1] = (float) (r * sin(2.0 * M_PI * u[1]));
    }

    const struct flops fl = count_flops(g);
    char family[32];
    snprintf(family, sizeof(family), "%s", vae_family_name(model->family));
    for (char * c = family; *c; c++) *c = (char) toupper((unsigned char) *c);

    printf("model: %s (%s)\n", model_path, model->description);
    printf("backend: %s; graph: %d nodes (%d conv, %d upsample-conv%s)\n", vae_backend_name(be), g->n_nodes,
           fl.n_conv, fl.n_upconv, g->fused ? ", fused" : ", fusion disabled");
    printf("latent [%lld, %lld, %lld, %lld] -> image [%lld, %lld, %lld, %lld]\n", (long long) in_ne[0],
           (long long) in_ne[1], (long long) in_ne[2], (long long) in_ne[3], (long long) out_ne[0],
           (long long) out_ne[1], (long long) out_ne[2], (long long) out_ne[3]);

    for (int i = 0; i < warmup; i++) {
        if (!vae_backend_graph_compute(be, g, NULL, input, err, sizeof(err))) {
            fprintf(stderr, "bench-cpu: compute: %s\n", err);
            return 1;
        }
    }
    for (int i = 0; i < frames; i++) {
        const double t0 = now_ms();
        if (!vae_backend_graph_compute(be, g, NULL, input, err, sizeof(err))) {
            fprintf(stderr, "bench-cpu: compute: %s\n", err);
            return 1;
        }
        times[i] = now_ms() - t0;
    }
    // sanity: the output is finite
    {
        const size_t n_out = (size_t) (out_ne[0] * out_ne[1] * out_ne[2] * out_ne[3]);
        float *      out   = malloc(n_out * sizeof(float));
        if (out && vae_backend_graph_read_output(be, g, 0, (int) g->output->ne[0], out, err, sizeof(err))) {
            size_t bad = 0;
            for (size_t i = 0; i < n_out; i++) bad += !isfinite(out[i]);
            if (bad) printf("WARNING: %zu non-finite output values\n", bad);
        }
        free(out);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const double maxrss_mib  = ru.ru_maxrss / 1024.0;  // KiB on Linux
    const double peak_mib    = g->peak_bytes / 1048576.0;

    double sum = 0.0, mn = times[0], mx = times[0];
    for (int i = 0; i < frames; i++) {
        sum += times[i];
        if (times[i] < mn) mn = times[i];
        if (times[i] > mx) mx = times[i];
    }
    const double mean = sum / frames;
    double       var  = 0.0;
    for (int i = 0; i < frames; i++) var += (times[i] - mean) * (times[i] - mean);
    const double sd = frames > 1 ? sqrt(var / (frames - 1)) : 0.0;
    qsort(times, (size_t) frames, sizeof(double), cmp_double);
    const double median = frames % 2 ? times[frames / 2] : 0.5 * (times[frames / 2 - 1] + times[frames / 2]);

    vae_backend_graph_release(be, g);
    vae_backend_free(be);
    vae_graph_free(g);
    vae_model_free(model);

    // the machine's fp32 peak, measured twice in this run (after our side, after the peer): a large
    // difference means something else was using the cores meanwhile
    double sgemm_ms[2] = { 0.0, 0.0 };
    double sgemm_fs[2] = { 0.0, 0.0 };
    sgemm_fs[0]        = sgemm_peak(&sgemm_ms[0]);

    struct peer peer = { 0 };
    if (!no_peer) {
        printf("peer: %s %s (frames %d, warmup %d, threads %d, --best-layout)\n", python, peer_script, frames,
               warmup, threads);
        run_peer(&peer, python, peer_script, model_path, frames, warmup, threads);
    }
    busy[1]              = other_load(500);
    sgemm_fs[1]          = sgemm_peak(&sgemm_ms[1]);
    const int    best_i  = sgemm_fs[1] > sgemm_fs[0];
    const double peak_fs = sgemm_fs[best_i];
    const double low_fs  = sgemm_fs[!best_i];

    // report
    const double our_fs = fl.model / (mean / 1e3);
    printf("\n");
    printf("%s decoder, %lldx%lld frame (latent %lldx%lldx%lld), fp32, CPU, %d threads\n", family,
           (long long) out_ne[3], (long long) out_ne[2], (long long) in_ne[1], (long long) in_ne[2],
           (long long) in_ne[3], threads);
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
    printf("ours: prepare %.1f ms; %d frames after %d warmup: mean %.1f, median %.1f, min %.1f, max %.1f, "
           "sd %.1f ms; peak %.1f MiB, max RSS %.1f MiB\n",
           prepare_ms, frames, warmup, mean, median, mn, mx, sd, peak_mib, maxrss_mib);
    printf("\n");
    printf("%-32s %9s %8s %9s %17s %9s\n", "impl", "ms/frame", "min ms", "GFLOP/s", "% of sgemm peak", "peak MiB");
    char pct[32] = "-";
    if (peak_fs > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * our_fs / peak_fs);
    printf("%-32s %9.1f %8.1f %9.1f %17s %9.1f\n", "gst-vaedecode cpu", mean, mn, our_fs / 1e9, pct, peak_mib);
    if (!no_peer) {
        if (peer.ok) {
            char label[128], version[64], minbuf[32] = "-";
            snprintf(version, sizeof(version), "%s", peer.version);
            // major.minor in the table ("1.13"); the full version is printed below it
            char * dot = strchr(version, '.');
            if (dot && (dot = strchr(dot + 1, '.'))) *dot = '\0';
            char * plus = strchr(version, '+');
            if (plus) *plus = '\0';
            if (peer.layout[0]) {
                snprintf(label, sizeof(label), "PyTorch %s (%s)", version, peer.layout);
            } else {
                snprintf(label, sizeof(label), "PyTorch %s", version);
            }
            if (peer.min_ms > 0) snprintf(minbuf, sizeof(minbuf), "%.1f", peer.min_ms);
            const double peer_fs = fl.model / (peer.ms / 1e3);
            snprintf(pct, sizeof(pct), "-");
            if (peak_fs > 0) snprintf(pct, sizeof(pct), "%.1f", 100.0 * peer_fs / peak_fs);
            printf("%-32s %9.1f %8s %9.1f %17s %9s\n", label, peer.ms, minbuf, peer_fs / 1e9, pct, "-");
            printf("ratio (PyTorch / ours): %.2fx\n", peer.ms / mean);
            printf("peer: torch %s, %d threads, best layout %s\n", peer.version, peer.threads,
                   peer.layout[0] ? peer.layout : "nchw");
            if (peer.threads != threads) {
                printf("note: the peer ran with %d threads, ours with %d\n", peer.threads, threads);
            }
        } else {
            printf("peer: unavailable (%s)\n", peer.reason);
        }
    }
    if (peak_fs > 0) {
        printf("ours, executed FLOPs (fused upsample-convs at 4/9 of their model FLOPs): %.1f GFLOP/s, "
               "%.1f%% of sgemm peak\n",
               fl.executed / (mean / 1e3) / 1e9, 100.0 * fl.executed / (mean / 1e3) / peak_fs);
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
    free(times);
    return 0;
}
