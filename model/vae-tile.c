// The exact tiled decode of an AutoencoderKL frame. Tiling an image decoder usually changes its
// output (GroupNorm statistics and attention become per tile: seams and colour shifts), so this one
// runs layer-major instead: the head (through the mid block's attention, at latent resolution) on
// the whole frame, then every later 3x3 conv as one step over all tiles before the next step
// starts. Between steps the whole activation waits in host memory, where the GroupNorm statistics
// of the next step are taken over the whole frame, exactly as an untiled decode takes them. A tile
// reads its input with a 1-pixel border from its neighbours (the reach of a 3x3 conv) and keeps
// only the pixels it owns, so the result equals the untiled decode to rounding, whatever the tile.
//
// Memory: two host activations (the step's input and output; a residual block's second conv
// writes over its input in place) plus one tile's graph at a time, instead of every activation
// of the whole frame at once. The price is a graph prepared per step and frame, the tile borders,
// and the host copies.

#include "vae-tile.h"
#include "vae-session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE_GROUPS 32
#define TILE_EPS    1e-6f

struct vae_tiled {
    const struct vae_model * model;
    vae_backend_t *          backend;
    int                      h, w, tile;
    size_t                   max_bytes;
    int                      n_steps;
    struct vae_kl_step       steps[VAE_KL_MAX_STEPS];
    float *                  buf[2];          // activations [C, H, W]: each step reads one, writes the other
    size_t                   buf_floats[2];
    size_t                   buf_floats_head; // the head's output
    float *                  out;             // [3, 8h, 8w]
    float *                  crop, * crop_r, * crop_y;   // one tile: x, r and y
    size_t                   crop_floats, crop_y_floats;
    float                    stats[2 * TILE_GROUPS];
    float                    max_abs[VAE_KL_MAX_STEPS + 1];   // of the head's output, then of each step's
    size_t                   graph_peak;      // the largest prepared graph
    const int *              cancel;          // of the decode running, or NULL
};

// where the crops of one axis of `size` start: crops of `c` overlapping by 2, the last flush with
// the end; crop k owns [own[k], own[k + 1]) of the step's input pixels
int vae_tile_spans(int size, int c, int * start, int * own) {
    if (c >= size) {
        start[0] = 0, own[0] = 0, own[1] = size;
        return 1;
    }
    int n = 0;
    for (int p = 0;; p += c - 2) {
        start[n] = p + c > size ? size - c : p;
        own[n]   = n == 0 ? 0 : start[n] + 1;
        n++;
        if (start[n - 1] + c >= size) {
            break;
        }
    }
    own[n] = size;
    return n;
}

// the crop edge of a step (input pixels): the tile is counted in the step's output pixels
static int tile_crop(const struct vae_tiled * t, const struct vae_kl_step * s) {
    const int core = s->kind == VAE_KL_UPSAMPLE ? (t->tile + 1) / 2 : t->tile;
    return core + 2;
}

// in double, two passes (as the backends take them)
void vae_tile_group_stats(const float * x, int c, size_t hw, int groups, float eps, float * stats) {
    const size_t n = (size_t) (c / groups) * hw; // a group is contiguous in [C, H, W]
#pragma omp parallel for
    for (int g = 0; g < groups; g++) {
        const float * p = x + (size_t) g * n;
        double        s = 0.0, q = 0.0;
        for (size_t i = 0; i < n; i++) {
            s += p[i];
        }
        const double mean = s / (double) n;
        for (size_t i = 0; i < n; i++) {
            q += (p[i] - mean) * (p[i] - mean);
        }
        stats[g]          = (float) mean;
        stats[groups + g] = (float) (1.0 / sqrt(q / (double) n + eps));
    }
}

// the largest |x| (NaN if any) of n floats
static float tile_max_abs(const float * x, size_t n) {
    float m = 0.0f;
    bool  nan = false;
#pragma omp parallel for reduction(max : m) reduction(|| : nan)
    for (size_t i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        m             = a > m ? a : m;
        nan           = nan || a != a;
    }
    return nan ? NAN : m;
}

// rows [y0, y0 + ch) x columns [x0, x0 + cw) of src [C, H, W] into dst [C, ch, cw]
void vae_tile_gather(const float * src, int c, int h, int w, int y0, int x0, int ch, int cw, float * dst) {
#pragma omp parallel for
    for (int k = 0; k < c; k++) {
        for (int y = 0; y < ch; y++) {
            memcpy(dst + ((size_t) k * ch + y) * cw, src + ((size_t) k * h + y0 + y) * w + x0, (size_t) cw * sizeof(float));
        }
    }
}

// the owned rectangle [oy0, oy1) x [ox0, ox1) of a tile output [C, th, tw] that starts at (ty, tx)
// into dst [C, H, W]
void vae_tile_scatter(const float * src, int c, int th, int tw, int ty, int tx, float * dst, int h, int w, int oy0,
                         int oy1, int ox0, int ox1) {
#pragma omp parallel for
    for (int k = 0; k < c; k++) {
        for (int y = oy0; y < oy1; y++) {
            memcpy(dst + ((size_t) k * h + y) * w + ox0, src + ((size_t) k * th + y - ty) * tw + ox0 - tx,
                   (size_t) (ox1 - ox0) * sizeof(float));
        }
    }
}

// a decode of many tiles can take long: the flag lets another thread stop it between two
bool vae_tile_cancelled(const int * cancel, char * err, size_t err_size) {
    if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE)) {
        snprintf(err, err_size, "%s", VAE_SESSION_INTERRUPTED);
        return true;
    }
    return false;
}

bool vae_tile_fits(vae_backend_t * backend, size_t peak, int tile, size_t max_bytes, char * err, size_t err_size) {
    const size_t limit = vae_backend_limit(backend, max_bytes);
    char         a[32], b[32];
    if (peak > limit) {
        snprintf(err, err_size, "decoding in %d-pixel tiles needs %s, above the %s %s", tile,
                 vae_backend_bytes_str(a, (double) peak), vae_backend_bytes_str(b, (double) limit),
                 max_bytes ? "memory limit" : "of memory available");
    }
    return peak <= limit;
}

struct vae_graph * vae_tile_prepare(vae_backend_t * backend, struct vae_graph * g, size_t max_bytes,
                                    size_t * graph_peak, char * err, size_t err_size) {
    if (g && !vae_backend_graph_prepare(backend, g, max_bytes, err, err_size)) {
        vae_graph_free(g);
        return NULL;
    }
    if (g && g->peak_bytes > *graph_peak) {
        *graph_peak = g->peak_bytes;
    }
    return g;
}

void vae_tile_release(vae_backend_t * backend, struct vae_graph * g) {
    vae_backend_graph_release(backend, g);
    vae_graph_free(g);
}

static struct vae_graph * tile_prepare(struct vae_tiled * t, struct vae_graph * g, char * err, size_t err_size) {
    if (g) {
        g->cancel = t->cancel; // (a tile's compute stops between its nodes too)
    }
    return vae_tile_prepare(t->backend, g, t->max_bytes, &t->graph_peak, err, err_size);
}

// the step's graph for its crop at input size h x w
static struct vae_graph * tile_step_graph(struct vae_tiled * t, const struct vae_kl_step * s, int h, int w, char * err,
                                          size_t err_size) {
    const int c = tile_crop(t, s);
    return tile_prepare(t, vae_kl_step_build(t->model, s, c < h ? c : h, c < w ? c : w, err, err_size), err, err_size);
}

// run step s on x (and the residual r) over every tile, at input size h x w, into dst
static bool tile_run_step(struct vae_tiled * t, const struct vae_kl_step * s, const float * x, const float * r, int h,
                          int w, float * dst, char * err, size_t err_size) {
    const int    c = tile_crop(t, s), up = s->kind == VAE_KL_UPSAMPLE ? 2 : 1;
    int          ys[4096 + 1], yo[4096 + 2], xs[4096 + 1], xo[4096 + 2];
    int          ny = vae_tile_spans(h, c, ys, yo), nx = vae_tile_spans(w, c, xs, xo);
    const int    ch = c < h ? c : h, cw = c < w ? c : w;
    struct vae_graph * g = tile_step_graph(t, s, h, w, err, err_size);
    if (!g) {
        return false;
    }
    bool ok = true;
    if (ny == 1 && nx == 1) { // the whole frame: no copies
        const float * inputs[3] = { x, t->stats, r };
        ok = vae_backend_graph_compute_inputs(t->backend, g, NULL, inputs, err, err_size) &&
             vae_backend_graph_read_output(t->backend, g, 0, 1, dst, err, err_size);
        ny = 0;
    }
    const float * inputs[3] = { t->crop, t->stats, t->crop_r };
    for (int i = 0; ok && i < ny; i++) {
        for (int j = 0; ok && j < nx; j++) {
            if (vae_tile_cancelled(t->cancel, err, err_size)) {
                ok = false;
                break;
            }
            vae_tile_gather(x, s->cin, h, w, ys[i], xs[j], ch, cw, t->crop);
            if (s->kind == VAE_KL_NORM_CONV_RES) {
                vae_tile_gather(r, s->rin, h, w, ys[i], xs[j], ch, cw, t->crop_r);
            }
            ok = vae_backend_graph_compute_inputs(t->backend, g, NULL, inputs, err, err_size) &&
                 vae_backend_graph_read_output(t->backend, g, 0, 1, t->crop_y, err, err_size);
            if (ok) {
                vae_tile_scatter(t->crop_y, s->cout, ch * up, cw * up, ys[i] * up, xs[j] * up, dst, h * up, w * up,
                             yo[i] * up, yo[i + 1] * up, xo[j] * up, xo[j + 1] * up);
            }
        }
    }
    vae_tile_release(t->backend, g);
    return ok;
}

const float * vae_tiled_decode(struct vae_tiled * t, const float * latent, const int * cancel, char * err,
                               size_t err_size) {
    t->cancel            = cancel;
    struct vae_graph * g = tile_prepare(t, vae_kl_head_build(t->model, t->h, t->w, err, err_size), err, err_size);
    bool               ok = g && vae_backend_graph_compute(t->backend, g, NULL, latent, err, err_size) &&
              vae_backend_graph_read_output(t->backend, g, 0, 1, t->buf[0], err, err_size);
    if (g) {
        vae_tile_release(t->backend, g);
    }
    // buffer `cur` holds the current activation [c, h, w]; a residual block's first conv writes
    // the other one, its second writes back over its input, an upsample moves to the other one
    int cur = 0, h = t->h, w = t->w;
    if (ok) {
        t->max_abs[0] = tile_max_abs(t->buf[0], t->buf_floats_head);
    }
    for (int k = 0; ok && k < t->n_steps; k++) {
        const struct vae_kl_step * s    = &t->steps[k];
        const bool                 last = k == t->n_steps - 1;
        if (vae_tile_cancelled(t->cancel, err, err_size)) {
            ok = false;
            break;
        }
        if (s->kind != VAE_KL_UPSAMPLE) {
            vae_tile_group_stats(s->kind == VAE_KL_NORM_CONV_RES ? t->buf[cur ^ 1] : t->buf[cur], s->cin,
                                 (size_t) h * w, TILE_GROUPS, TILE_EPS, t->stats);
        }
        switch (s->kind) {
            case VAE_KL_NORM_CONV: // x = buf[cur] -> buf[cur ^ 1] (the block's h), or the frame at the end
                ok = tile_run_step(t, s, t->buf[cur], NULL, h, w, last ? t->out : t->buf[cur ^ 1], err, err_size);
                break;
            case VAE_KL_NORM_CONV_RES: // h = buf[cur ^ 1], r = buf[cur] -> buf[cur], in place of r
                ok = tile_run_step(t, s, t->buf[cur ^ 1], t->buf[cur], h, w, t->buf[cur], err, err_size);
                break;
            case VAE_KL_UPSAMPLE:
                ok = tile_run_step(t, s, t->buf[cur], NULL, h, w, t->buf[cur ^ 1], err, err_size);
                cur ^= 1, h *= 2, w *= 2;
                break;
        }
        const float * y = last ? t->out : s->kind == VAE_KL_NORM_CONV ? t->buf[cur ^ 1] : t->buf[cur];
        t->max_abs[k + 1] = tile_max_abs(y, (size_t) s->cout * (size_t) h * (size_t) w);
    }
    return ok ? t->out : NULL;
}

void vae_tiled_free(struct vae_tiled * t) {
    if (!t) {
        return;
    }
    free(t->buf[0]);
    free(t->buf[1]);
    free(t->out);
    free(t->crop);
    free(t->crop_r);
    free(t->crop_y);
    free(t);
}

struct vae_tiled * vae_tiled_new(const struct vae_model * model, vae_backend_t * backend, int h, int w, int tile,
                                 size_t max_bytes, char * err, size_t err_size) {
    struct vae_tiled * t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    *t = (struct vae_tiled) { .model = model, .backend = backend, .h = h, .w = w, .tile = tile, .max_bytes = max_bytes };
    t->n_steps = vae_kl_steps(model, t->steps, VAE_KL_MAX_STEPS);
    // what each buffer and a tile must hold, following the roles of vae_tiled_decode; every step's
    // graph is prepared once now (and released) so that its memory is known and checked
    struct vae_graph * head = tile_prepare(t, vae_kl_head_build(model, h, w, err, err_size), err, err_size);
    bool               ok   = head != NULL;
    if (head) {
        t->buf_floats[0] = t->buf_floats_head = (size_t) head->output->ne[1] * (size_t) h * (size_t) w;
        vae_tile_release(t->backend, head);
    }
    int cur = 0, sh = h, sw = w;
    for (int k = 0; ok && k < t->n_steps; k++) {
        const struct vae_kl_step * s  = &t->steps[k];
        const int                  up = s->kind == VAE_KL_UPSAMPLE ? 2 : 1, c = tile_crop(t, s);
        const size_t crop = (size_t) (c < sh ? c : sh) * (size_t) (c < sw ? c : sw);
        const size_t y    = (size_t) s->cout * (size_t) (sh * up) * (size_t) (sw * up);
        const int    dst  = s->kind == VAE_KL_NORM_CONV_RES ? cur : cur ^ 1;
        if (k < t->n_steps - 1 && y > t->buf_floats[dst]) {
            t->buf_floats[dst] = y;
        }
        const size_t cin = (size_t) (s->cin > s->rin ? s->cin : s->rin);
        if (c < sh || c < sw) { // (whole frames need no copies)
            t->crop_floats   = cin * crop > t->crop_floats ? cin * crop : t->crop_floats;
            t->crop_y_floats = (size_t) s->cout * crop * up * up > t->crop_y_floats ? (size_t) s->cout * crop * up * up
                                                                                     : t->crop_y_floats;
        }
        struct vae_graph * g = tile_step_graph(t, s, sh, sw, err, err_size);
        ok                   = g != NULL;
        if (g) {
            vae_tile_release(t->backend, g);
        }
        if (up == 2) {
            cur ^= 1, sh *= 2, sw *= 2;
        }
    }
    if (ok) {
        t->buf[0] = malloc(t->buf_floats[0] * sizeof(float));
        t->buf[1] = malloc(t->buf_floats[1] * sizeof(float));
        t->out    = malloc((size_t) 3 * sh * sw * sizeof(float));
        t->crop   = malloc(t->crop_floats * sizeof(float));
        t->crop_r = malloc(t->crop_floats * sizeof(float));
        t->crop_y = malloc(t->crop_y_floats * sizeof(float));
        ok        = t->buf[0] && t->buf[1] && t->out && t->crop && t->crop_r && t->crop_y;
        if (!ok) {
            char b[32];
            snprintf(err, err_size, "out of host memory for the %s of tiled activations",
                     vae_backend_bytes_str(b, (double) vae_tiled_peak_bytes(t)));
        }
    }
    ok = ok && vae_tile_fits(backend, vae_tiled_peak_bytes(t), tile, max_bytes, err, err_size);
    if (!ok) {
        vae_tiled_free(t);
        return NULL;
    }
    return t;
}

size_t vae_tiled_peak_bytes(const struct vae_tiled * t) {
    const size_t out = (size_t) 3 * (size_t) t->h * (size_t) t->w * (size_t) t->model->scale * (size_t) t->model->scale;
    return t->graph_peak +
           (t->buf_floats[0] + t->buf_floats[1] + out + 2 * t->crop_floats + t->crop_y_floats) * sizeof(float);
}

int vae_tiled_ranges(const struct vae_tiled * t, const char ** names, float * max_abs) {
    names[0]   = "decoder.mid";
    max_abs[0] = t->max_abs[0];
    for (int k = 0; k < t->n_steps; k++) {
        names[k + 1]   = t->steps[k].conv;
        max_abs[k + 1] = t->max_abs[k + 1];
    }
    return t->n_steps + 1;
}
