// What the benchmark programs (bench-cpu.c, bench-cuda.c) share: timing and argument helpers,
// the FLOP counts (walking a graph, and AutoencoderKL's from its shapes), running a Python peer
// and reading its "key=value" lines, the raw f32 files the two sides exchange, the random
// full-width weights the peer scripts make (tests/bench/video_torch.py, kl_torch.py) and the
// temporary directory they go into. Included once per program: everything here is static.

#pragma once

#include "vae-backend.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VIDEO_SCRIPT   "tests/bench/video_torch.py"
#define VIDEO_CHANNELS 16
#define WAN_WEIGHTS    "wan21_b96.safetensors"

#define KL_SCRIPT   "tests/bench/kl_torch.py"
#define KL_WEIGHTS  "kl_sd.safetensors"
#define KL_CHANNELS 4

static inline double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline bool parse_int(const char * s, int lo, int * out) {
    char * end;
    errno        = 0;
    const long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > 1000000) {
        return false;
    }
    *out = (int) v;
    return true;
}

// "HxW" with both in 1..512 (latent rows x columns)
static inline bool parse_hw(const char * s, int * h, int * w) {
    char *     x;
    const long a = strtol(s, &x, 10);
    const long b = *x == 'x' ? strtol(x + 1, &x, 10) : 0;
    if (*x || a < 1 || b < 1 || a > 512 || b > 512) {
        return false;
    }
    *h = (int) a;
    *w = (int) b;
    return true;
}

static inline int cmp_double(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

// N(0,1) values (Box-Muller over a fixed LCG): the same latents in every run
static inline void fill_normal(float * dst, size_t n, uint64_t seed) {
    uint64_t rng = seed;
    for (size_t i = 0; i < n; i += 2) {
        double u[2];
        for (int k = 0; k < 2; k++) {
            rng  = rng * 6364136223846793005ull + 1442695040888963407ull;
            u[k] = ((rng >> 11) + 0.5) / 9007199254740992.0;
        }
        const double r = sqrt(-2.0 * log(u[0]));
        dst[i]         = (float) (r * cos(2.0 * M_PI * u[1]));
        if (i + 1 < n) dst[i + 1] = (float) (r * sin(2.0 * M_PI * u[1]));
    }
}

static inline double max_abs_diff(const float * a, const float * b, size_t n) {
    double mx = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double) a[i] - (double) b[i]);
        if (!(d <= mx)) mx = d;  // NaN wins
    }
    return mx;
}

// --- FLOPs ------------------------------------------------------------------------------------

struct flops {
    double model;     // every conv at its unfused cost (upsample+3x3 conv counted as the 3x3 conv)
    double executed;  // what the graph as built runs (fused upsample-convs: 4/9 of their model cost)
    double attention; // part of both: the attention matmuls
    int    n_conv, n_upconv, n_causal, n_attention;
};

// the node that reads t (first found), skipping views: NULL when none
static inline const struct vae_tensor * consumer(const struct vae_graph * g, const struct vae_tensor * t) {
    for (int i = 0; i < g->n_nodes; i++) {
        for (int k = 0; k < VAE_MAX_SRC; k++) {
            if (g->nodes[i]->src[k] == t) return g->nodes[i];
        }
    }
    return NULL;
}

// node t's model FLOPs (every conv at its unfused cost; 0 for the ops not counted) and, in
// *executed, what the graph as built runs for it (see struct flops)
static inline double node_flops(const struct vae_graph * g, const struct vae_tensor * t, double * executed) {
    *executed = 0.0;
    if (t->op == VAE_OP_ATTENTION || t->op == VAE_OP_CAUSAL_ATTENTION) {
        // per frame, q k^T and softmax(.) v: 2 matmuls of (H W)^2 C multiply-adds (the causal one's
        // keys of earlier frames not counted: they depend on the frame's place in the stream)
        const double hw = (double) t->ne[2] * (double) t->ne[3];
        *executed       = 2.0 * 2.0 * hw * hw * (double) t->ne[1] * (double) t->ne[0];
        return *executed;
    }
    if (t->op != VAE_OP_CONV2D && t->op != VAE_OP_UPSAMPLE_CONV2D && t->op != VAE_OP_CAUSAL_CONV3D) {
        return 0.0;
    }
    // w: [Cout, Cin, k, k] or [Cout, Cin, kt, k, k] (unused dims are 1)
    const struct vae_tensor * w = t->src[1];
    double macs_per_px = 1.0;
    for (int d = 0; d < VAE_MAX_DIMS; d++) macs_per_px *= (double) w->ne[d];
    const double out_px = (double) t->ne[0] * (double) t->ne[2] * (double) t->ne[3];
    const double fl     = 2.0 * macs_per_px * out_px;
    if (t->op == VAE_OP_UPSAMPLE_CONV2D) {
        // each output pixel of nearest2x + 3x3 sees only 2x2 distinct inputs per channel
        *executed = fl * 4.0 / 9.0;
        return fl;
    }
    *executed = fl;
    if (t->op == VAE_OP_CONV2D && w->ne[2] == 1 && w->ne[3] == 1) {
        // a 1x1 conv that feeds (through a frame split) a 2x upsample: TAEHV's TGrow, which
        // upstream runs after the upsample, at 4x the pixels; the graph moved it before
        const struct vae_tensor * c = consumer(g, t);
        if (c && c->op == VAE_OP_FRAME_SPLIT) c = consumer(g, c);
        if (c && (c->op == VAE_OP_UPSAMPLE_CONV2D || c->op == VAE_OP_UPSAMPLE2X)) return fl * 4.0;
    }
    return fl;
}

static inline struct flops count_flops(const struct vae_graph * g) {
    struct flops f = { 0 };
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        double                    executed;
        const double              model = node_flops(g, t, &executed);
        f.model += model;
        f.executed += executed;
        switch (t->op) {
            case VAE_OP_ATTENTION:
            case VAE_OP_CAUSAL_ATTENTION: f.attention += model; f.n_attention++; break;
            case VAE_OP_UPSAMPLE_CONV2D: f.n_upconv++; break;
            case VAE_OP_CAUSAL_CONV3D: f.n_causal++; break;
            case VAE_OP_CONV2D: f.n_conv++; break;
            default: break;
        }
    }
    return f;
}

// Model FLOPs of one AutoencoderKL decode (diffusers' Decoder, block_out_channels (128, 256, 512,
// 512), 3 resnets per level, single-head mid attention), from the shapes alone, 2 FLOPs per
// multiply-add: a k x k conv is k*k*Cin*Cout multiply-adds per output pixel (the upsample convs at
// the upsampled size, unfused); the attention is its 4 C x C projections per token plus q k^T and
// softmax(.) v, 2 (h w)^2 C. GroupNorm, SiLU, residual adds and the softmax itself are ignored.
// PERFORMANCE.md 1.2 gives 2.51 TFLOP at 64x64 latents and 10.47 at 128x128; this reproduces both.
struct kl_flops {
    double total, upsample, attention;
};

static inline struct kl_flops kl_count_flops(int z, int h, int w, bool post_quant_conv) {
    static const double ch[4] = { 512, 512, 256, 128 };  // the decoder's levels (up_blocks.0..3)
    struct kl_flops     f     = { 0 };
    double              px    = (double) h * (double) w;  // pixels at the current level
    double              mac   = 0.0;
    if (post_quant_conv) mac += z * z * px;                   // post_quant_conv 1x1, z -> z
    mac += 9 * z * ch[0] * px;                                // conv_in 3x3, z -> 512
    mac += 4 * 9 * ch[0] * ch[0] * px;                        // mid: 2 resnets of 2 3x3 convs
    const double att = 4 * ch[0] * ch[0] * px + 2 * px * px * ch[0];  // q, k, v, out; q k^T, softmax . v
    double prev = ch[0];
    for (int l = 0; l < 4; l++) {
        for (int j = 0; j < 3; j++) {  // resnet: conv1 cin -> c, conv2 c -> c, a 1x1 shortcut where cin != c
            const double cin = j ? ch[l] : prev;
            mac += 9 * cin * ch[l] * px + 9 * ch[l] * ch[l] * px;
            if (cin != ch[l]) mac += cin * ch[l] * px;
        }
        prev = ch[l];
        if (l < 3) {  // upsample: nearest 2x, then 3x3 c -> c at 4x the pixels
            px *= 4;
            mac += 9 * ch[l] * ch[l] * px;
            f.upsample += 2 * 9 * ch[l] * ch[l] * px;
        }
    }
    mac += 9 * ch[3] * 3 * px;  // conv_out 3x3, 128 -> 3
    f.attention = 2 * att;
    f.total     = 2 * (mac + att);
    return f;
}

// --- running the Python peers --------------------------------------------------------------------

// append s to dst single-quoted for /bin/sh
static inline void sh_quote(char * dst, size_t size, const char * s) {
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

static inline void append(char * dst, size_t size, const char * s) {
    const size_t n = strlen(dst);
    snprintf(dst + n, size - n, "%s", s);
}

static inline void rstrip(char * s) {
    size_t n = strlen(s);
    while (n && isspace((unsigned char) s[n - 1])) {
        s[--n] = '\0';
    }
}

// run cmd (already quoted, stderr joined), echoing its lines as "  peer| ..."; keeps the last
// non-empty line; false with a reason when it could not run or exited non-zero
static inline bool run_lines(const char * cmd, char * last, size_t last_size, char * reason, size_t reason_size) {
    last[0] = '\0';
    fflush(stdout);
    FILE * f = popen(cmd, "r");
    if (!f) {
        snprintf(reason, reason_size, "popen failed: %s", strerror(errno));
        return false;
    }
    char line[2048];
    while (fgets(line, sizeof(line), f)) {
        rstrip(line);
        if (!line[0]) continue;
        printf("  peer| %s\n", line);
        fflush(stdout);
        snprintf(last, last_size, "%s", line);
    }
    const int status = pclose(f);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const int code = status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        snprintf(reason, reason_size, "exited with status %d%s%.300s", code, last[0] ? ": " : "", last);
        return false;
    }
    return true;
}

// the value of " key=" (or "key=" at the start) in line: a number or a word
static inline bool kv_find(const char * line, const char * key, char * val, size_t size) {
    const size_t n = strlen(key);
    for (const char * p = line; (p = strstr(p, key)) != NULL; p += n) {
        if ((p == line || p[-1] == ' ') && p[n] == '=') {
            size_t i = 0;
            for (p += n + 1; *p && *p != ' ' && i + 1 < size; p++) val[i++] = *p;
            val[i] = '\0';
            return true;
        }
    }
    return false;
}

static inline bool kv_double(const char * line, const char * key, double * v) {
    char buf[64], *end;
    if (!kv_find(line, key, buf, sizeof(buf))) return false;
    *v = strtod(buf, &end);
    return end != buf && !*end;
}

// major.minor of a torch version ("2.15.0+cu132" -> "2.15")
static inline void short_version(char * dst, size_t size, const char * v) {
    snprintf(dst, size, "%s", v);
    char * dot = strchr(dst, '.');
    if (dot && (dot = strchr(dot + 1, '.'))) *dot = '\0';
    char * plus = strchr(dst, '+');
    if (plus) *plus = '\0';
}

// a file of the repository (a peer script) into dst: relative to the current directory when it
// is there (a copy of the tree run from its root), else under VAE_SOURCE_DIR (a compile definition)
static inline void source_path(char * dst, size_t size, const char * rel) {
    snprintf(dst, size, "%s", rel);
#ifdef VAE_SOURCE_DIR
    if (access(rel, R_OK) != 0) snprintf(dst, size, "%s/%s", VAE_SOURCE_DIR, rel);
#endif
}

// --- the files the two sides exchange ---------------------------------------------------------------

// dir/name into dst; false when it does not fit
static inline bool dir_path(char * dst, size_t size, const char * dir, const char * name) {
    const int n = snprintf(dst, size, "%s/%s", dir, name);
    return n >= 0 && (size_t) n < size;
}

static inline bool file_readable(const char * dir, const char * name) {
    char path[4096];
    return dir_path(path, sizeof(path), dir, name) && access(path, R_OK) == 0;
}

// read exactly n floats from dir/name; false with a reason
static inline bool read_f32(const char * dir, const char * name, float * dst, size_t n, char * reason, size_t size) {
    char   path[4096];
    FILE * f = dir_path(path, sizeof(path), dir, name) ? fopen(path, "rb") : NULL;
    if (!f) {
        snprintf(reason, size, "cannot open %.300s: %s", path, strerror(errno));
        return false;
    }
    const size_t got = fread(dst, sizeof(float), n, f);
    const bool   eof = fgetc(f) == EOF;
    fclose(f);
    if (got != n || !eof) {
        snprintf(reason, size, "%.300s does not hold exactly %zu floats", path, n);
        return false;
    }
    return true;
}

// write n floats to dir/name (raw, host order: little-endian on every machine this runs on)
static inline bool write_f32(const char * dir, const char * name, const float * src, size_t n, char * reason,
                             size_t size) {
    char   path[4096];
    FILE * f = dir_path(path, sizeof(path), dir, name) ? fopen(path, "wb") : NULL;
    if (!f) {
        snprintf(reason, size, "cannot create %.300s: %s", path, strerror(errno));
        return false;
    }
    const bool ok = fwrite(src, sizeof(float), n, f) == n;
    if (fclose(f) != 0 || !ok) {
        snprintf(reason, size, "writing %.300s failed", path);
        return false;
    }
    return true;
}

// the directory for the generated weights: dir when given (made if missing, kept), else a fresh
// $TMPDIR/vae-bench-XXXXXX (*own set: remove it with remove_own_dir); NULL after a message
static inline const char * work_dir(const char * dir, char * buf, size_t size, bool * own) {
    *own = false;
    if (dir) {
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "mkdir %s: %s\n", dir, strerror(errno));
            return NULL;
        }
        return dir;
    }
    const char * tmp = getenv("TMPDIR");
    snprintf(buf, size, "%s/vae-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(buf)) {
        fprintf(stderr, "mkdtemp %s: %s\n", buf, strerror(errno));
        return NULL;
    }
    *own = true;
    return buf;
}

// remove a directory work_dir made, with the files the peers and we wrote into it
static inline void remove_own_dir(const char * dir) {
    DIR * d = opendir(dir);
    if (d) {
        char            path[4096];
        struct dirent * e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && dir_path(path, sizeof(path), dir, e->d_name)) {
                unlink(path);
            }
        }
        closedir(d);
    }
    if (rmdir(dir) != 0) fprintf(stderr, "could not remove %s: %s\n", dir, strerror(errno));
}

// --- random full-width weights, made by the peer scripts ---------------------------------------------

// latent channels of video_torch.py's decoder `name`: SVD's 4, HunyuanVideo 1.5's 32, LTX-2's 128, MiniMax-H3's 24,
// Wan 2.2's 48, the others' 16
static inline int video_channels(const char * name) {
    return !strcmp(name, "svd") ? 4 : !strcmp(name, "hyvideo15") ? 32 : !strcmp(name, "ltx2") ? 128
         : !strcmp(name, "minimax") ? 24 : !strcmp(name, "wan22") ? 48 : VIDEO_CHANNELS;
}

// does dir/<name>.json describe latents of [T, C, h, w] and the weights file `weights` (the layout python's
// json.dump writes)?
static inline bool gen_matches(const char * dir, const char * name, const char * weights, int T, int h, int w) {
    char path[4096], buf[1024] = "", want[96], json[64], file[256];
    snprintf(json, sizeof(json), "%s.json", name);
    FILE * f = dir_path(path, sizeof(path), dir, json) ? fopen(path, "r") : NULL;
    if (!f) return false;
    const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    snprintf(want, sizeof(want), "\"latent\": [%d, %d, %d, %d]", T, video_channels(name), h, w);
    snprintf(file, sizeof(file), "\"weights\": \"%s\"", weights);
    return strstr(buf, want) && strstr(buf, file) && strstr(buf, "\"finite\": true");
}

// python script <sub> <dir_opt> 'dir' [--taehv-py 'path'] 2>&1
static inline void video_cmd(char * cmd, size_t size, const char * python, const char * script, const char * sub,
                             const char * dir_opt, const char * dir, const char * taehv_py) {
    cmd[0] = '\0';
    sh_quote(cmd, size, python);
    append(cmd, size, " ");
    sh_quote(cmd, size, script);
    append(cmd, size, " ");
    append(cmd, size, sub);
    append(cmd, size, " ");
    append(cmd, size, dir_opt);
    append(cmd, size, " ");
    sh_quote(cmd, size, dir);
    if (taehv_py) {
        append(cmd, size, " --taehv-py ");
        sh_quote(cmd, size, taehv_py);
    }
    append(cmd, size, " 2>&1");
}

// the weights (dir/weights) and T latent frames of h x w of video decoder `name` (wan, taehv, svd, seedvr2, ...),
// made by video_torch.py (`gen`, with gen_args: "" or e.g. "--blocks 4") unless dir holds them already; false with
// a reason
static inline bool video_gen(const char * name, const char * weights, const char * python, const char * script,
                             const char * taehv_py, const char * dir, int T, int h, int w, int threads,
                             const char * gen_args, char * reason, size_t reason_size) {
    if (gen_matches(dir, name, weights, T, h, w) && file_readable(dir, weights)) {
        printf("%s: reusing the weights and latents in %s\n", name, dir);
        return true;
    }
    if (access(script, R_OK) != 0) {
        snprintf(reason, reason_size, "cannot read %.400s: %s", script, strerror(errno));
        return false;
    }
    char cmd[8192], sub[256], last[1024], why[512];
    snprintf(sub, sizeof(sub), "gen --only %s --height-latent %d --width-latent %d --latent-frames %d --threads %d %s",
             name, h, w, T, threads, gen_args);
    video_cmd(cmd, sizeof(cmd), python, script, sub, "--out", dir, taehv_py);
    printf("%s: making random weights: %s\n", name, cmd);
    if (!run_lines(cmd, last, sizeof(last), why, sizeof(why))) {
        snprintf(reason, reason_size, "no weights: %s %.400s", python, why);
        return false;
    }
    return true;
}

// does dir/kl.json describe a [1, 4, h, w] latent with a finite check decode?
static inline bool kl_gen_matches(const char * dir, int h, int w) {
    char   path[4096], buf[1024] = "", want[96];
    FILE * f = dir_path(path, sizeof(path), dir, "kl.json") ? fopen(path, "r") : NULL;
    if (!f) return false;
    const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    snprintf(want, sizeof(want), "\"latent\": [1, %d, %d, %d]", KL_CHANNELS, h, w);
    return strstr(buf, want) && strstr(buf, "\"finite\": true") && file_readable(dir, KL_WEIGHTS);
}

// the AutoencoderKL weights (dir/kl_sd.safetensors) and a latent of h x w, made by kl_torch.py
// unless dir holds them already: 1 made, 0 reused, -1 failed (with a reason)
static inline int kl_gen(const char * python, const char * script, const char * dir, int h, int w, int threads,
                         char * reason, size_t reason_size) {
    if (kl_gen_matches(dir, h, w)) {
        printf("kl: reusing the weights and latent in %s\n", dir);
        return 0;
    }
    if (access(script, R_OK) != 0) {
        snprintf(reason, reason_size, "cannot read %.400s: %s", script, strerror(errno));
        return -1;
    }
    char cmd[8192] = "", sub[256], last[1024], why[512];
    sh_quote(cmd, sizeof(cmd), python);
    append(cmd, sizeof(cmd), " ");
    sh_quote(cmd, sizeof(cmd), script);
    snprintf(sub, sizeof(sub), " gen --height-latent %d --width-latent %d --threads %d --out ", h, w, threads);
    append(cmd, sizeof(cmd), sub);
    sh_quote(cmd, sizeof(cmd), dir);
    append(cmd, sizeof(cmd), " 2>&1");
    printf("kl: making random weights: %s\n", cmd);
    if (!run_lines(cmd, last, sizeof(last), why, sizeof(why))) {
        snprintf(reason, reason_size, "no weights: %s %.400s", python, why);
        return -1;
    }
    return 1;
}
