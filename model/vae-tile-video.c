// The exact tiled decode of a causal video decoder (Wan 2.1 and 2.2, SeedVR2), for frames whose
// whole-frame step does not fit, or a tile size the user asked for; image decoders built the same
// way use it too (Qwen-Image 2.1, every frame a first; DC-AE). The head (through the mid block,
// whose attention needs the whole frame; DC-AE's attention levels) runs on the whole frame; the family's later
// steps (vae_causal_step: convs that reach one pixel) run one at a time over tiles with a 1-pixel
// border, each tile keeping only the pixels it owns, as vae-tile.c does for AutoencoderKL; a step
// that GroupNorms its input is given the statistics of the whole frame, taken in host memory. Time
// is the other axis: a causal conv over n frames equals n calls of one frame with its state, so
// every step takes one frame. A temporal upsample makes two; the first goes through all the later
// steps before the second does (depth first), so no level ever holds the four frames of a latent
// frame. Each tile of each step keeps its own causal state (the last frames of its crop), and the
// crops overlap by 2 pixels only: all of them together are about the whole-frame state. A state
// that starts as copies of the first frame (SeedVR2's) copies the tile's crop of it: the crop of
// the whole-frame one.
//
// LTX-2's convs are centred (a frame depends on the next): they run as causal convs a frame late,
// each tile's state filled with its crop of the step's first frame by the step's first compute,
// which gives no frame; a temporal upsample's next gives its second frame only (the first is the
// clip's padding), and a residual waits in a queue of the step that reads it for the frame of its output,
// the whole-frame graph's delay. A frame comes out once every step has the frames it reads, as in
// the whole-frame stream (the lookahead), and the end of the stream is told to every tile's state,
// which then reads its last frame in place of those after it. LTX has no head: its first step
// takes the latents.
//
// Memory (1920x1088 Wan 2.1: latent 136x240, widths 384/384/192/96 at h, 2h, 4h, 8h): the causal
// state, 4.9 G floats (19.8 GB whole-frame; 20.1 GB in 256-pixel tiles, the crops' 2-pixel
// overlap), plus host buffers that live only while a step or a residual needs them: at the
// deepest level the step's input and output (a residual block's second conv writes over the
// block's input), 2 x 0.8 GB, and the second frames of the temporal upsamples waiting above it,
// 0.4 + 0.1 GB, and the 4 output frames, 0.1 GB: 2.4 GB; plus one graph at a time, the
// whole-frame head's 0.5 GB the largest. 23.0 GB (21.4 GiB) in all, where whole frames need
// 14.1 GB of graph besides the state. The price is a graph prepared per step and frame, the
// borders and the copies.

#include "vae-tile.h"
#include "vae-session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TV_MAX_BUFS   128
#define TV_MAX_SPANS  (4096 + 2)
#define TV_SLOT_DEPTH 4   // a residual's frames waiting for the step that reads them (2 centred steps: 3)

// a whole-frame activation; users: the step reading it and the residual slots (0: a free entry)
struct tv_buf {
    float * data;
    size_t  floats;
    int     users;
};

// where step k runs: its input size, its crops (all ch x cw) and tiles, their causal states (none
// where the step's graph has no causal op), its computes since the stream started, the step that
// reads the input it keeps in slot j (feeds[j]), and the residuals waiting for it, oldest first
struct tv_place {
    int             h, w, ch, cw, ny, nx;
    vae_state_t **  states;
    int             calls, feeds[2];
    struct tv_buf * res[TV_SLOT_DEPTH];
    int             queued;
};

struct vae_tiled_video {
    const struct vae_model * model;
    vae_backend_t *          backend;
    int                      h, w, tile;
    int                      head_h, head_w; // the head's output (the latent grid, or DC-AE's 4x of it)
    size_t                   max_bytes;
    int                      n_steps;
    struct vae_causal_step   steps[VAE_CAUSAL_MAX_STEPS];
    struct tv_place          place[VAE_CAUSAL_MAX_STEPS];
    vae_state_t *            head_state;
    struct tv_buf            bufs[TV_MAX_BUFS];
    size_t                   live, live_peak;   // floats of the buffers in use: now, and at most
    bool                     broken;         // a decode failed: the stream goes on only after a reset
    float *                  out;            // [max_out, out_channels, H, W]
    int                      n_out, max_out, out_h, out_w;
    float *                  crop, * crop_r, * crop_y;
    size_t                   crop_floats, crop_y_floats;
    float *                  stats;          // the GroupNorm statistics of a step's whole input frame
    int                      max_groups;
    size_t                   graph_peak, state_bytes;   // (state_bytes: the tiles'; the head's may grow)
    const int *              cancel;
};

// the crop edge of step s along an axis of `size` input pixels: the tile is counted in the step's
// output pixels, and the tiles that cover the axis share it evenly (each crop keeps its state, so
// a last crop flush with the end and mostly over its neighbour would cost memory for nothing)
static int tv_crop(const struct vae_tiled_video * t, const struct vae_causal_step * s, int size) {
    const int core = (t->tile + s->up - 1) / s->up, n = (size - 2 + core - 1) / core;
    return core + 2 >= size ? size : (size - 2 + n - 1) / n + 2;
}

static struct vae_graph * tv_prepare(struct vae_tiled_video * t, struct vae_graph * g, char * err, size_t err_size) {
    if (g) {
        g->cancel = t->cancel; // (a tile's compute stops between its nodes too)
    }
    return vae_tile_prepare(t->backend, g, t->max_bytes, &t->graph_peak, err, err_size);
}

// the graph of step k for its crop (first: a causal step's that starts a stream; a centred step
// has one graph, its first compute filling its state)
static struct vae_graph * tv_step_graph(struct vae_tiled_video * t, int k, bool first, char * err, size_t err_size) {
    const struct vae_causal_step * s = &t->steps[k];
    const struct tv_place *        p = &t->place[k];
    return tv_prepare(t, vae_model_causal_step_build(t->model, s, p->ch, p->cw, first && !s->centred, err, err_size),
                      err, err_size);
}

// a buffer of n floats (dry: counted only). Buffers live while a step or a slot needs them, so
// the levels share memory: the peak is the deepest level's working set and the frames waiting
// above it, not every level's at once.
static struct tv_buf * tv_acquire(struct vae_tiled_video * t, size_t n, bool dry, char * err, size_t err_size) {
    struct tv_buf * b = NULL;
    for (int i = 0; i < TV_MAX_BUFS && !b; i++) {
        b = t->bufs[i].users == 0 ? &t->bufs[i] : NULL;
    }
    float * data = b && !dry ? malloc(n * sizeof(float)) : NULL;
    if (!b || (!dry && !data)) {
        char b[32];
        snprintf(err, err_size, "out of host memory for the tiled activations (%s more)",
                 vae_backend_bytes_str(b, (double) n * 4));
        return NULL;
    }
    *b      = (struct tv_buf) { data, n, 1 };
    t->live += n;
    t->live_peak = t->live > t->live_peak ? t->live : t->live_peak;
    return b;
}

static void tv_drop(struct vae_tiled_video * t, struct tv_buf * b) {
    if (--b->users == 0) {
        free(b->data);
        b->data = NULL;
        t->live -= b->floats;
    }
}

// step k on x (and r) over every tile, its output frames [from, from + frames) into dst[0 .. frames)
static bool tv_run_step(struct vae_tiled_video * t, int k, const float * x, const float * r, float * const * dst,
                        bool first, int from, int frames, char * err, size_t err_size) {
    const struct vae_causal_step * s = &t->steps[k];
    const struct tv_place *        p = &t->place[k];
    const int                      ch = p->ch, cw = p->cw, up = s->up;
    int                            ys[TV_MAX_SPANS], yo[TV_MAX_SPANS], xs[TV_MAX_SPANS], xo[TV_MAX_SPANS];
    vae_tile_spans(p->h, ch, ys, yo);
    vae_tile_spans(p->w, cw, xs, xo);
    const bool         whole = p->ny == 1 && p->nx == 1; // no copies
    struct vae_graph * g     = tv_step_graph(t, k, first, err, err_size);
    bool               ok    = g != NULL;
    const float *      inputs[3] = { whole ? x : t->crop, whole ? r : t->crop_r, t->stats }; // x, [r,] [stats]
    inputs[s->rin > 0 ? 2 : 1]   = t->stats;
    if (ok && s->groups > 0) {
        vae_tile_group_stats(x, s->cin, (size_t) p->h * (size_t) p->w, s->groups, s->eps, t->stats);
    }
    for (int i = 0; ok && i < p->ny; i++) {
        for (int j = 0; ok && j < p->nx; j++) {
            if (vae_tile_cancelled(t->cancel, err, err_size)) {
                ok = false;
                break;
            }
            if (!whole) {
                vae_tile_gather(x, s->cin, p->h, p->w, ys[i], xs[j], ch, cw, t->crop);
                if (r) {
                    vae_tile_gather(r, s->rin, p->h, p->w, ys[i], xs[j], ch, cw, t->crop_r);
                }
            }
            vae_state_t * state = g->n_states > 0 ? p->states[i * p->nx + j] : NULL;
            ok = vae_backend_graph_compute_inputs(t->backend, g, state, inputs, err, err_size);
            for (int f = 0; ok && f < frames; f++) {
                ok = vae_backend_graph_read_output(t->backend, g, from + f, 1, whole ? dst[f] : t->crop_y, err,
                                                   err_size);
                if (ok && !whole) {
                    vae_tile_scatter(t->crop_y, s->cout, ch * up, cw * up, ys[i] * up, xs[j] * up, dst[f], p->h * up,
                                     p->w * up, yo[i] * up, yo[i + 1] * up, xo[j] * up, xo[j + 1] * up);
                }
            }
        }
    }
    if (g) {
        vae_tile_release(t->backend, g);
    }
    return ok;
}

// the buffers, residual queues and step counts of a stream, forgotten (a new stream, a failed decode)
static void tv_forget(struct vae_tiled_video * t) {
    for (int i = 0; i < TV_MAX_BUFS; i++) {
        free(t->bufs[i].data);
        t->bufs[i] = (struct tv_buf) { NULL, 0, 0 };
    }
    for (int k = 0; k < t->n_steps; k++) {
        t->place[k].calls = t->place[k].queued = 0;
    }
    t->live   = 0;
    t->broken = false;
}

// run steps k.. on the frame in x (dry: only take and give back the buffers, as a decode would,
// which makes them); the last step writes the next frames of out
static bool tv_walk(struct vae_tiled_video * t, int k, struct tv_buf * x, bool first, bool dry, char * err,
                    size_t err_size) {
    for (; k < t->n_steps; k++) {
        const struct vae_causal_step * s = &t->steps[k];
        const bool                     last = k == t->n_steps - 1;
        // the frames this compute gives, from output frame `from`: a centred step's first compute
        // of the stream none, its second the last of its frames
        const int calls  = t->place[k].calls++;
        const int frames = !s->centred ? (first ? 1 : s->frames) : calls == 0 ? 0 : calls == 1 ? 1 : s->frames;
        const int from   = s->centred && calls == 1 ? s->frames - 1 : 0;
        for (int j = 0; j < 2; j++) {
            struct tv_place * reader = s->save & (1 << j) ? &t->place[t->place[k].feeds[j]] : NULL;
            if (reader && reader->queued == TV_SLOT_DEPTH) {
                snprintf(err, err_size, "step %s: %d residual frames wait already", s->name, TV_SLOT_DEPTH);
                return false;
            }
            if (reader) {
                reader->res[reader->queued++] = x;
                x->users++;
            }
        }
        // the residual of the frame given: the oldest waiting (taken, when a frame is given)
        struct tv_place * p = &t->place[k];
        struct tv_buf *   r = s->res >= 0 && p->queued > 0 ? p->res[0] : NULL;
        if (s->res >= 0 && !r) {
            snprintf(err, err_size, "step %s: no residual frame waits", s->name);
            return false;
        }
        const bool took = r && frames > 0;
        if (took) {
            memmove(p->res, p->res + 1, (size_t) --p->queued * sizeof(r));
        }
        struct tv_buf * y[2] = { NULL, NULL };
        float *         dst[2];
        const size_t n = (size_t) s->cout * (size_t) (t->place[k].h * s->up) * (size_t) (t->place[k].w * s->up);
        for (int f = 0; f < frames; f++) {
            if (last && t->n_out + f >= t->max_out) {
                snprintf(err, err_size, "the steps give more than %d frames per latent frame", t->max_out);
                return false;
            }
            // a residual is read pointwise: the output may take its buffer (tiles read it only
            // where they own the pixels, which no other tile writes)
            const bool in_place = !last && f == 0 && took && s->up == 1 && r->users == 1 && r->floats >= n;
            y[f] = last ? NULL : in_place ? r : tv_acquire(t, n, dry, err, err_size);
            if (!last && !y[f]) {
                return false;
            }
            dst[f] = last ? t->out + (size_t) (t->n_out + f) * t->model->out_channels * t->out_h * t->out_w
                          : y[f]->data;
        }
        const bool ok = dry || tv_run_step(t, k, x->data, r ? r->data : NULL, dst, first, from, frames, err, err_size);
        tv_drop(t, x);
        if (took && r != y[0]) {
            tv_drop(t, r);
        }
        t->n_out += last ? frames : 0;
        if (!ok || (frames == 2 && !last && !tv_walk(t, k + 1, y[0], first, dry, err, err_size))) {
            return false;
        }
        if (frames == 0) { // (a centred step's state filled: nothing goes on)
            return true;
        }
        x = y[frames - 1];
    }
    return true;
}

// the head on the whole latent frame (or the latent frame itself) into a level-0 buffer, then
// every step
static bool tv_decode(struct vae_tiled_video * t, const float * latent, bool first, bool dry, char * err,
                      size_t err_size) {
    if (first) {
        tv_forget(t);
    }
    if (t->broken) {
        snprintf(err, err_size, "an earlier decode of the stream failed: reset it before it goes on");
        return false;
    }
    t->n_out = 0;
    struct tv_buf * x = tv_acquire(t, (size_t) t->steps[0].cin * (size_t) t->head_h * (size_t) t->head_w, dry, err,
                                   err_size);
    bool ok = x != NULL;
    if (ok && !dry && vae_model_causal_headless(t->model)) {
        memcpy(x->data, latent, x->floats * sizeof(float));
    } else if (ok && !dry) {
        struct vae_graph * g = tv_prepare(t, vae_model_causal_head_build(t->model, t->h, t->w, err, err_size), err,
                                          err_size);
        ok = g && vae_backend_graph_compute(t->backend, g, t->head_state, latent, err, err_size) &&
             vae_backend_graph_read_output(t->backend, g, 0, 1, x->data, err, err_size);
        if (g) {
            vae_tile_release(t->backend, g);
        }
    }
    ok = ok && tv_walk(t, 0, x, first, dry, err, err_size);
    if (!ok) { // (what it left; the causal state is part-way)
        tv_forget(t);
        t->broken = true;
    }
    return ok;
}

const float * vae_tiled_video_decode(struct vae_tiled_video * t, const float * latent, bool first,
                                     const int * cancel, int * n_frames, char * err, size_t err_size) {
    t->cancel = cancel;
    const bool ok = tv_decode(t, latent, first, false, err, err_size);
    *n_frames     = ok ? t->n_out : 0;
    return ok ? t->out : NULL;
}

void vae_tiled_video_set_end(struct vae_tiled_video * t, int64_t latents) {
    for (int k = 0; k < t->n_steps; k++) {
        for (int i = 0; t->place[k].states && i < t->place[k].ny * t->place[k].nx; i++) {
            vae_backend_state_set_end(t->backend, t->place[k].states[i], latents);
        }
    }
}

void vae_tiled_video_reset(struct vae_tiled_video * t) {
    tv_forget(t);
    if (t->head_state) {
        vae_backend_state_reset(t->backend, t->head_state);
    }
    for (int k = 0; k < t->n_steps; k++) {
        for (int i = 0; t->place[k].states && i < t->place[k].ny * t->place[k].nx; i++) {
            vae_backend_state_reset(t->backend, t->place[k].states[i]);
        }
    }
}

void vae_tiled_video_free(struct vae_tiled_video * t) {
    if (!t) {
        return;
    }
    vae_backend_state_free(t->backend, t->head_state);
    for (int k = 0; k < t->n_steps; k++) {
        for (int i = 0; t->place[k].states && i < t->place[k].ny * t->place[k].nx; i++) {
            vae_backend_state_free(t->backend, t->place[k].states[i]);
        }
        free(t->place[k].states);
    }
    for (int i = 0; i < TV_MAX_BUFS; i++) {
        free(t->bufs[i].data);
    }
    free(t->out);
    free(t->crop);
    free(t->crop_r);
    free(t->crop_y);
    free(t->stats);
    free(t);
}

// where every step runs, what its tiles and buffers hold; its graphs prepared once (and released)
// so that memory is known and checked, and the causal state of each of its tiles made
static bool tv_plan_steps(struct vae_tiled_video * t, char * err, size_t err_size) {
    int h = t->head_h, w = t->head_w, ys[TV_MAX_SPANS], yo[TV_MAX_SPANS];
    t->max_out = 1;
    for (int k = 0; k < t->n_steps; k++) {
        const struct vae_causal_step * s = &t->steps[k];
        struct tv_place *              p = &t->place[k];
        const int                      up = s->up, ch = tv_crop(t, s, h), cw = tv_crop(t, s, w);
        if ((up != 1 && up != 2 && up != 4) || (s->frames != 1 && s->frames != 2)) {
            snprintf(err, err_size, "step %s: %dx up and %d frames are beyond the tiled decode", s->name, up,
                     s->frames);
            return false;
        }
        *p = (struct tv_place) { h, w, ch, cw, vae_tile_spans(h, ch, ys, yo), vae_tile_spans(w, cw, ys, yo), NULL };
        for (int j = 0; j < 2; j++) { // (a step may read what it keeps: LTX-2.0's upsampler)
            for (p->feeds[j] = k; p->feeds[j] < t->n_steps - 1 && t->steps[p->feeds[j]].res != j; p->feeds[j]++) {
            }
        }
        t->max_groups = s->groups > t->max_groups ? s->groups : t->max_groups;
        const size_t crop = (size_t) ch * (size_t) cw, cin = (size_t) (s->cin > s->rin ? s->cin : s->rin);
        h *= up, w *= up;
        t->max_out *= s->frames;
        if (p->ny * p->nx > 1) { // (whole frames need no copies)
            const size_t y   = (size_t) s->cout * crop * (size_t) (up * up);
            t->crop_floats   = cin * crop > t->crop_floats ? cin * crop : t->crop_floats;
            t->crop_y_floats = y > t->crop_y_floats ? y : t->crop_y_floats;
        }
        struct vae_graph * g = tv_step_graph(t, k, true, err, err_size);
        if (g) {
            vae_tile_release(t->backend, g);
            g = tv_step_graph(t, k, false, err, err_size);
        }
        if (!g) {
            return false;
        }
        // every tile keeps its own causal state in the backend's memory (on a GPU, the device's):
        // together about the whole frame's
        bool ok = true;
        int  i  = 0;
        if (g->n_states > 0) {
            ok = (p->states = calloc((size_t) (p->ny * p->nx), sizeof(*p->states))) != NULL;
            if (!ok) {
                snprintf(err, err_size, "out of host memory");
            }
            for (; ok && i < p->ny * p->nx; i++) {
                ok = (p->states[i] = vae_backend_state_new(t->backend, g, err, err_size)) != NULL;
                t->state_bytes += ok ? vae_backend_state_bytes(t->backend, p->states[i]) : 0;
            }
        }
        vae_tile_release(t->backend, g);
        if (!ok) {
            char why[256], held[32];
            snprintf(why, sizeof(why), "%s", err);
            snprintf(err, err_size, "the causal state of step %s, tile %d of %d (the tiles' states hold %s by then): %s",
                     s->name, i, p->ny * p->nx, vae_backend_bytes_str(held, (double) t->state_bytes), why);
            return false;
        }
    }
    t->out_h = h, t->out_w = w;
    return true;
}

struct vae_tiled_video * vae_tiled_video_new(const struct vae_model * model, vae_backend_t * backend, int h, int w,
                                             int tile, size_t max_bytes, char * err, size_t err_size) {
    struct vae_tiled_video * t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    t->model = model, t->backend = backend, t->h = h, t->w = w, t->tile = tile, t->max_bytes = max_bytes;
    t->n_steps = vae_model_causal_steps(model, t->steps, VAE_CAUSAL_MAX_STEPS);
    bool ok    = t->n_steps > 0;
    if (!ok) {
        snprintf(err, err_size, "the %s decoder has no tiled video decode", vae_family_name(model->family));
    }
    const bool         headless = vae_model_causal_headless(model);
    struct vae_graph * head = ok && !headless ? tv_prepare(t, vae_model_causal_head_build(model, h, w, err, err_size),
                                                           err, err_size)
                                              : NULL;
    ok = ok && (headless || head != NULL);
    t->head_h = head ? (int) head->output->ne[2] : h, t->head_w = head ? (int) head->output->ne[3] : w;
    if (head && head->n_states > 0) {
        ok = (t->head_state = vae_backend_state_new(backend, head, err, err_size)) != NULL;
    }
    if (head) {
        vae_tile_release(t->backend, head);
    }
    ok = ok && tv_plan_steps(t, err, err_size);
    if (ok) {
        t->out    = malloc((size_t) t->max_out * t->model->out_channels * (size_t) t->out_h * (size_t) t->out_w *
                           sizeof(float));
        t->crop   = malloc((t->crop_floats ? t->crop_floats : 1) * sizeof(float));
        t->crop_r = malloc((t->crop_floats ? t->crop_floats : 1) * sizeof(float));
        t->crop_y = malloc((t->crop_y_floats ? t->crop_y_floats : 1) * sizeof(float));
        t->stats  = malloc((size_t) (2 * t->max_groups + 1) * sizeof(float));
        ok        = t->out && t->crop && t->crop_r && t->crop_y && t->stats;
        if (!ok) {
            snprintf(err, err_size, "out of host memory for the tiled frames");
        }
    }
    // makes the buffers decodes take, until every step gives its frames (centred steps start late)
    for (int i = 0; ok && i < t->n_steps + 2; i++) {
        ok = tv_decode(t, NULL, false, true, err, err_size);
    }
    tv_forget(t);
    ok = ok && vae_tile_fits(backend, vae_tiled_video_peak_bytes(t), tile, max_bytes, err, err_size);
    if (!ok) {
        vae_tiled_video_free(t);
        return NULL;
    }
    if (t->head_state) { // what the head's state may grow to (a causal attention's cache): the limit less the rest
        const size_t limit = vae_backend_limit(backend, max_bytes);
        const size_t rest  = vae_tiled_video_peak_bytes(t) - vae_backend_state_bytes(backend, t->head_state);
        vae_backend_state_set_limit(backend, t->head_state, limit > rest ? limit - rest : 1);
    }
    return t;
}

size_t vae_tiled_video_peak_bytes(const struct vae_tiled_video * t) {
    const size_t floats = (size_t) t->max_out * t->model->out_channels * (size_t) t->out_h * (size_t) t->out_w +
                          2 * t->crop_floats + t->crop_y_floats + t->live_peak;
    return t->graph_peak + t->state_bytes + vae_backend_state_bytes(t->backend, t->head_state) + floats * sizeof(float);
}
