// The decode session: it converts pushed latents into the decoder's own space, gathers them into
// chunks, runs the prepared graph for a chunk and hands out its frames in order. Two graphs at
// most, both prepared when the session starts: the step of `chunk` latent frames, and for Wan the
// step that starts a stream (latent frame 0 alone). A causal decoder's output for a frame never
// depends on later latents, so a short last chunk is padded with copies of its last latent frame
// and the frames of the padding are dropped: one graph serves every step of the stream.
// AutoencoderKL frames and Wan and SeedVR2 streams may instead decode in tiles (vae-tile.c,
// vae-tile-video.c): when asked, or when a whole frame does not fit.
// SVD's frames depend on every latent of their decode call (model->clip_calls): a short last
// chunk is decoded as a call of its own length, as diffusers' decode loop does, by a graph
// prepared at the drain; and chunk-frames 0 keeps every latent of the stream until the drain,
// then decodes the whole clip as one call (memory grows with the clip, refused past the limit).
// LTX-2's frames depend on later latents (model->lookahead): its first graph waits for lookahead
// + 1 latent frames (in tiles, each latent frame gives the frames that can no longer change), and
// the drain tells the state where the stream ends, then flushes it with steps whose input is never
// read, one step per pop that finds no frame ready.
// MiniMax-H3 decodes upstream's chunks (model->chunk_latents): a step is one chunk and its overlap,
// the overlap's latent frames stay queued for the next, and the drain decodes the last chunk padded
// (or gives the frames the last one held), cut to the stream's count (vae_model_stream_frames).

#include "vae-session.h"
#include "vae-family.h"
#include "vae-tile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SESSION_MIN_TILE 16   // pixels; smaller tiles are mostly border

struct vae_session {
    const struct vae_model *  model;
    vae_backend_t *           backend;
    struct vae_session_config cfg;
    float *                   div, * add;      // latent space -> the decoder's own space
    int                       patch;           // pushed latent pixels stand for patch x patch (FLUX.2)
    int                       h, w;            // the decoder's latent grid: height * patch, width * patch
    float *                   unpatch;         // one pushed frame in the decoder's space, before unpatchify
    float *                   queue;           // chunk_frames latent frames, in the decoder's space
    int                       queued;
    struct vae_graph *        step;            // chunk_frames latent frames
    struct vae_graph *        first;           // latent frame 0 alone (Wan), the first lookahead + 1 (LTX-2)
    struct vae_graph *        clip;            // clip_calls: the last call's graph, of the frames queued
    bool                      whole;           // clip_calls and chunk-frames 0: one call at the drain
    int                       capacity;        // latent frames the queue has room for
    vae_state_t *             state;           // causal decoders
    struct vae_tiled *        tiled;           // the tiled decode, in place of step (AutoencoderKL)
    struct vae_tiled_video *  tiled_video;     // the same for causal video decoders
    const float *             tiled_out;       // the frames of its last decode [ready, out_channels, H, W]
    struct vae_graph *        done;            // the graph whose output holds the ready frames
    int                       skip, ready, popped; // output frames: first ready one, ready ones, popped ones
    uint64_t                  latents_in, frames_out;
    bool                      ended;           // drained: the next push starts a new stream
    bool                      flushing;        // drained, a lookahead stream's frames still to come
    bool                      broken;          // a compute on the causal state failed: refused until a reset
    uint64_t                  total;           // then the frames of the stream
    char                      notice[400];     // what vae_session_new chose instead of what was asked, "" if nothing
};

// one latent frame as pushed
static size_t session_frame_floats(const struct vae_session * s) {
    return (size_t) s->cfg.channels * (size_t) s->cfg.height * (size_t) s->cfg.width;
}

// one latent frame as the decoder takes it (the same count: unpatchify only moves values)
static size_t session_queue_floats(const struct vae_session * s) {
    return (size_t) s->model->latent_channels * (size_t) s->h * (size_t) s->w;
}

static void session_graph_free(struct vae_session * s, struct vae_graph * g) {
    vae_backend_graph_release(s->backend, g);
    vae_graph_free(g);
}

void vae_session_free(struct vae_session * s) {
    if (!s) {
        return;
    }
    session_graph_free(s, s->step);
    session_graph_free(s, s->first);
    session_graph_free(s, s->clip);
    vae_tiled_free(s->tiled);
    vae_tiled_video_free(s->tiled_video);
    free(s->unpatch);
    vae_backend_state_free(s->backend, s->state);
    free(s->queue);
    free(s->div);
    free(s);
}

static struct vae_graph * session_graph(struct vae_session * s, int n, bool first, char * err, size_t err_size) {
    struct vae_graph * g = vae_model_build_graph(s->model, n, s->h, s->w, first, err, err_size);
    if (g) {
        g->cancel = s->cfg.cancel; // (the backend reads it between nodes)
    }
    if (g && !vae_backend_graph_prepare(s->backend, g, s->cfg.max_bytes, err, err_size)) {
        vae_graph_free(g);
        return NULL;
    }
    return g;
}

// an AutoencoderKL (vae-tile.c tiles it), else a family with causal steps (vae_model_causal_steps)
static bool session_is_kl(const struct vae_model * model) {
    return model->desc == &vae_kl_family;
}

static bool session_can_tile(const struct vae_model * model) {
    struct vae_causal_step steps[VAE_CAUSAL_MAX_STEPS];
    return session_is_kl(model) || vae_model_causal_steps(model, steps, VAE_CAUSAL_MAX_STEPS) > 0;
}

// the tiled decode of the model's kind in `tile`-pixel tiles, within the limit less its queue of
// one latent frame (it decodes each as it comes)
static bool session_tiled_new(struct vae_session * s, int tile, char * err, size_t err_size) {
    const size_t queue  = (session_queue_floats(s) + (s->unpatch ? session_frame_floats(s) : 0)) * sizeof(float);
    const size_t budget = !s->cfg.max_bytes ? 0 : s->cfg.max_bytes > queue ? s->cfg.max_bytes - queue : 1;
    if (session_is_kl(s->model)) {
        s->tiled = vae_tiled_new(s->model, s->backend, s->h, s->w, tile, budget, err, err_size);
    } else {
        s->tiled_video = vae_tiled_video_new(s->model, s->backend, s->h, s->w, tile, budget, err, err_size);
    }
    s->cfg.tile_size = s->tiled || s->tiled_video ? tile : 0;
    if (s->cfg.tile_size > 0 && s->capacity > 1) {
        float * q   = realloc(s->queue, session_queue_floats(s) * sizeof(float));
        s->queue    = q ? q : s->queue; // (a smaller block: kept as it was where realloc fails)
        s->capacity = 1;
    }
    return s->cfg.tile_size > 0;
}

// the graphs of a step of cfg.chunk_frames latent frames (and of the first latent frame alone,
// where it has its own) and the causal state, prepared; false when they do not fit (err says
// why): each graph alone, and with the state of a decoder that can tile, all together
static bool session_steps_new(struct vae_session * s, char * err, size_t err_size) {
    const int n_first = s->model->lookahead + 1;
    bool      ok = (s->step = session_graph(s, s->cfg.chunk_frames, false, err, err_size)) != NULL &&
              ((!s->model->first_apart && !s->model->lookahead) ||
               (s->first = session_graph(s, n_first, true, err, err_size)) != NULL) &&
              (s->step->n_states == 0 || (s->state = vae_backend_state_new(s->backend, s->step, err, err_size)) != NULL);
    const size_t limit = vae_backend_limit(s->backend, s->cfg.max_bytes);
    if (ok && s->state && session_can_tile(s->model) && vae_session_peak_bytes(s) > limit) {
        char a[32], b[32];
        snprintf(err, err_size, "whole frames need %s with the causal state, above the %s %s",
                 vae_backend_bytes_str(a, (double) vae_session_peak_bytes(s)), vae_backend_bytes_str(b, (double) limit),
                 s->cfg.max_bytes ? "memory limit" : "of memory available");
        ok = false;
    }
    if (ok && s->state) { // what the state may grow to (a causal attention's cache): the limit less the rest
        const size_t rest = vae_session_peak_bytes(s) - vae_backend_state_bytes(s->backend, s->state);
        vae_backend_state_set_limit(s->backend, s->state, limit > rest ? limit - rest : 1);
    }
    return ok;
}

// a smaller chunk, and the queue with it (vae_session_peak_bytes counts the queue)
static void session_set_chunk(struct vae_session * s, int chunk) {
    s->cfg.chunk_frames = chunk;
    s->capacity         = chunk > s->model->lookahead ? chunk : s->model->lookahead + 1; // (the first step's)
    float * q = realloc(s->queue, (size_t) s->capacity * session_queue_floats(s) * sizeof(float));
    s->queue  = q ? q : s->queue; // (a smaller block: kept as it was where realloc fails)
}

static void session_steps_free(struct vae_session * s) {
    session_graph_free(s, s->step);
    session_graph_free(s, s->first);
    vae_backend_state_free(s->backend, s->state);
    s->step = s->first = NULL, s->state = NULL;
}

// whole frames did not fit (err says why): the largest tile that does, halving from the frame
static bool session_tile_to_fit(struct vae_session * s, int side, char * err, size_t err_size) {
    char why[256];
    snprintf(why, sizeof(why), "%s", err);
    for (int tile = side / 2; tile >= SESSION_MIN_TILE && !session_tiled_new(s, tile, err, err_size); tile /= 2) {
    }
    if (!s->cfg.tile_size) {
        char tiled[256];
        snprintf(tiled, sizeof(tiled), "%s", err);
        snprintf(err, err_size, "%s; nor does it fit in tiles: %s", why, tiled);
    }
    return s->cfg.tile_size > 0;
}

bool vae_session_check(const struct vae_model * model, const struct vae_session_config * c, char * err,
                       size_t err_size) {
    const int patch = vae_model_space_patch(model, c->space);
    if (c->channels > 0 && c->channels != model->latent_channels * patch * patch) {
        snprintf(err, err_size, "the latents have %d channels but the %s decoder takes %d%s", c->channels,
                 vae_family_name(model->family), model->latent_channels * patch * patch,
                 patch > 1 ? " in this latent space" : "");
        return false;
    }
    // keep every size well inside int and size_t arithmetic
    if (c->width != 0 && (c->width < 1 || c->height < 1 || c->width > 4096 || c->height > 4096)) {
        snprintf(err, err_size, "a %dx%d latent grid is outside 1..4096 (output %lldx%lld)", c->width, c->height,
                 (long long) model->scale * c->width, (long long) model->scale * c->height);
        return false;
    }
    if (c->chunk_frames < 0 || c->chunk_frames > 256) {
        snprintf(err, err_size, "chunk-frames %d is outside 0..256", c->chunk_frames);
        return false;
    }
    if (c->width > 0 && (c->width * patch < model->min_side || c->height * patch < model->min_side)) {
        snprintf(err, err_size, "%s pads its convs by reflection: its latent grid must be at least %dx%d, not %dx%d",
                 vae_family_name(model->family), model->min_side, model->min_side, c->width, c->height);
        return false;
    }
    if (c->tile_size < 0 || (c->tile_size > 0 && c->tile_size < SESSION_MIN_TILE)) {
        snprintf(err, err_size, "tile-size %d is below the smallest tile, %d pixels", c->tile_size, SESSION_MIN_TILE);
        return false;
    }
    if (c->tile_size > 0 && !session_can_tile(model)) {
        snprintf(err, err_size,
                 "tile-size is for the AutoencoderKL, Wan and SeedVR2 decoders (and hunyuanimage2.1, qwenimage2.1, "
                 "dcae, hunyuanvideo1.5, ltx2, ltx2.3); %s decodes whole frames",
                 vae_family_name(model->family));
        return false;
    }
    // the latent space needs the family's constants
    float * affine = malloc(2 * (size_t) model->latent_channels * (size_t) (patch * patch) * sizeof(float));
    if (!affine) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    const bool ok = vae_model_space_affine(model, c->space, affine,
                                           affine + (size_t) model->latent_channels * (size_t) (patch * patch), err,
                                           err_size);
    free(affine);
    return ok;
}

struct vae_session * vae_session_new(const struct vae_model * model, vae_backend_t * backend,
                                     const struct vae_session_config * config, char * err, size_t err_size) {
    const struct vae_session_config * c     = config;
    const int                         patch = vae_model_space_patch(model, c->space);
    if (c->channels < 1 || c->width < 1) {
        snprintf(err, err_size, "a session needs the latents' channels and size");
        return NULL;
    }
    if (!vae_session_check(model, c, err, err_size)) {
        return NULL;
    }
    struct vae_session * s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    s->model   = model;
    s->backend = backend;
    s->cfg     = *c;
    s->patch   = patch;
    s->h       = c->height * patch;
    s->w       = c->width * patch;
    s->whole = model->clip_calls && s->cfg.chunk_frames == 0;
    if (model->chunk_latents) { // (upstream's chunk, whatever was asked)
        s->cfg.chunk_frames = model->chunk_latents + model->chunk_overlap;
    }
    const bool chosen = s->cfg.chunk_frames == 0 && !s->whole;   // (the backend's choice, not the user's)
    if (chosen) {
        s->cfg.chunk_frames = model->frames_per_latent > 1 ? vae_backend_auto_frames(backend) : 1;
    }
    const int side = model->scale * (s->h > s->w ? s->h : s->w); // of the output
    if (s->cfg.tile_size >= side) {
        s->cfg.tile_size = 0; // one tile is the whole frame
    }
    if (s->cfg.tile_size > 0) {
        s->cfg.chunk_frames = 1;
    }
    s->div     = malloc(2 * (size_t) c->channels * sizeof(float));
    s->unpatch = patch > 1 ? malloc(session_frame_floats(s) * sizeof(float)) : NULL;
    s->capacity = s->whole ? 1 : s->cfg.chunk_frames > model->lookahead ? s->cfg.chunk_frames : model->lookahead + 1;
    s->queue    = malloc((size_t) s->capacity * session_queue_floats(s) * sizeof(float));
    if (!s->div || !s->queue || (patch > 1 && !s->unpatch)) {
        snprintf(err, err_size, "out of memory");
        vae_session_free(s);
        return NULL;
    }
    s->add = s->div + c->channels;
    // everything is prepared now: memory is known (and refused) before the first frame
    bool ok = vae_model_space_affine(model, c->space, s->div, s->add, err, err_size);
    if (ok && s->cfg.tile_size > 0) {
        ok = session_tiled_new(s, s->cfg.tile_size, err, err_size);
    } else if (ok && !s->whole) { // (a whole clip's graph is made at the drain, for its length)
        ok = session_steps_new(s, err, err_size);
        // out of memory with several latent frames per step: fewer, halving (never for clip_calls,
        // whose chunk is upstream's decode call), then tiles where the family tiles (one latent
        // frame at a time); each exact, the choice told once (vae_session_take_notice)
        char why[256];
        snprintf(why, sizeof(why), "%s", err);
        const int asked = s->cfg.chunk_frames;
        while (!ok && s->cfg.chunk_frames > 1 && !model->clip_calls && !model->chunk_latents) {
            session_steps_free(s);
            session_set_chunk(s, s->cfg.chunk_frames / 2);
            ok = session_steps_new(s, err, err_size);
        }
        if (ok && s->cfg.chunk_frames < asked && !chosen) {
            snprintf(s->notice, sizeof(s->notice), "chunk-frames %d does not fit (%s): decoding %d latent frames per "
                     "step", asked, why, s->cfg.chunk_frames);
        }
        if (!ok && session_can_tile(model)) {
            session_steps_free(s);
            session_set_chunk(s, 1);
            snprintf(err, err_size, "%s", why);
            ok = session_tile_to_fit(s, side, err, err_size);
            if (ok) {
                snprintf(s->notice, sizeof(s->notice), "whole frames do not fit (%s): decoding in tiles of at most "
                         "%d pixels", why, s->cfg.tile_size);
            }
        }
    }
    if (!ok) {
        vae_session_free(s);
        return NULL;
    }
    // the backend has the weights now; a tiled decode builds its graphs again for every frame
    if (!s->tiled && !s->tiled_video) {
        vae_model_drop_copies(model);
    }
    return s;
}

// n frames made, or where a flushing stream ends sooner, those up to its last
static int session_up_to_end(const struct vae_session * s, int n) {
    return s->flushing && s->total - s->frames_out < (uint64_t) n ? (int) (s->total - s->frames_out) : n;
}

// run the queued latents (padded to the graph's frame count) and make their frames ready
static bool session_decode(struct vae_session * s, struct vae_graph * g, char * err, size_t err_size) {
    if (s->tiled || s->tiled_video) {
        const bool starts = s->latents_in == 1;
        s->queued         = 0;
        s->ready          = 1;
        s->tiled_out      = s->tiled ? vae_tiled_decode(s->tiled, s->queue, s->cfg.cancel, err, err_size)
                                     : vae_tiled_video_decode(s->tiled_video, s->queue, starts, s->cfg.cancel,
                                                              &s->ready, err, err_size);
        s->ready          = s->tiled_out ? session_up_to_end(s, s->ready) : 0;
        s->skip      = 0;
        s->popped    = 0;
        s->frames_out += (uint64_t) s->ready;
        return s->tiled_out != NULL;
    }
    const int    n     = (int) g->input->ne[0], real = s->queued;
    const size_t floats = session_queue_floats(s);
    for (int i = real; i < n && real > 0; i++) { // (a flush step's input is never read: as it is)
        memcpy(s->queue + (size_t) i * floats, s->queue + (size_t) (real - 1) * floats, floats * sizeof(float));
    }
    const bool starts = s->latents_in == (uint64_t) real;
    s->queued         = 0;
    if (s->broken) {
        snprintf(err, err_size, "an earlier decode of the stream failed: reset it before it goes on");
        return false;
    }
    if (!vae_backend_graph_compute(s->backend, g, s->state, s->queue, err, err_size)) {
        s->broken = s->state != NULL; // (the state is part-way: what follows would not be the stream's)
        return false;
    }
    // the stream's first latent frame gives 1 frame (after trim_frames that are not frames of the
    // video), every later one frames_per_latent
    s->done   = g;
    s->skip   = starts ? s->model->trim_frames : 0;
    s->ready  = starts ? 1 + s->model->frames_per_latent * (real - 1) : s->model->frames_per_latent * real;
    if (s->model->lookahead) { // the frames that can no longer change, up to the stream's last
        s->ready = session_up_to_end(s, (int) g->output->ne[0]);
    }
    if (s->model->chunk_latents) { // the chunk's frames; at the end the stream's last, the held ones too
        s->ready = s->ended ? (int) (s->total - s->frames_out) : (int) g->output->ne[0] - s->model->chunk_hold;
    }
    s->popped = 0;
    s->frames_out += (uint64_t) s->ready;
    return true;
}

// a clip_calls model's call of exactly the queued latents (the whole clip, or a stream's shorter
// last chunk), its graph prepared now; the stream has ended either way
static bool session_decode_clip(struct vae_session * s, char * err, size_t err_size) {
    const int n = s->queued;
    session_graph_free(s, s->clip);
    if (s->step && s->cfg.max_bytes) {
        // under a memory limit the chunk's graph makes room for the last call's (and is made again
        // if another stream follows): the two together may not fit
        session_graph_free(s, s->step);
        s->step = NULL;
    }
    if (!(s->clip = session_graph(s, n, false, err, err_size))) {
        s->queued = 0;
        if (s->whole) {
            char why[512];
            snprintf(why, sizeof(why), "%s", err);
            snprintf(err, err_size, "chunk-frames 0 decodes the whole clip as one call (%d latent frames here), which "
                     "does not fit: %s; set chunk-frames to decode it in chunks", n, why);
        }
        return false;
    }
    vae_model_drop_copies(s->model);
    return session_decode(s, s->clip, err, err_size);
}

// whole-clip mode: room for one more latent frame in the queue (doubling it)
static bool session_queue_room(struct vae_session * s, char * err, size_t err_size) {
    if (s->queued < s->capacity) {
        return true;
    }
    const size_t floats = session_queue_floats(s);
    float *      grown  = s->capacity <= INT32_MAX / 2 ? realloc(s->queue, 2 * (size_t) s->capacity * floats * sizeof(float))
                                                      : NULL;
    if (!grown) {
        snprintf(err, err_size, "out of memory queueing latent frame %d of the clip (chunk-frames 0 keeps the whole "
                 "clip until it ends): set chunk-frames to decode it in chunks", s->queued + 1);
        return false;
    }
    s->queue = grown;
    s->capacity *= 2;
    return true;
}

// [4z, h, w] -> [z, 2h, 2w]: z[c, 2y+i, 2x+j] = x[4c + 2i + j, y, x] (FLUX.2, MODELS.md A.6)
static void session_unpatchify(const struct vae_session * s, const float * x, float * z) {
    const int h = s->cfg.height, w = s->cfg.width;
    for (int c = 0; c < s->model->latent_channels; c++) {
        for (int y = 0; y < 2 * h; y++) {
            for (int xx = 0; xx < 2 * w; xx++) {
                z[((size_t) c * 2 * h + y) * 2 * w + xx] = x[((size_t) (4 * c + 2 * (y & 1) + (xx & 1)) * h + y / 2) * w + xx / 2];
            }
        }
    }
}

bool vae_session_push(struct vae_session * s, const float * latent, char * err, size_t err_size) {
    if (vae_session_frames_ready(s) > 0) {
        snprintf(err, err_size, "%d decoded frames were not popped before the next push", vae_session_frames_ready(s));
        return false;
    }
    if (s->ended) {
        vae_session_reset(s);
    }
    if (!s->step && !s->whole && !s->tiled && !s->tiled_video) { // (given up for the last call of a stream)
        session_graph_free(s, s->clip);
        s->clip = NULL;
        if (!(s->step = session_graph(s, s->cfg.chunk_frames, false, err, err_size))) {
            return false;
        }
        vae_model_drop_copies(s->model);
    }
    if (s->whole && !session_queue_room(s, err, err_size)) {
        return false;
    }
    const size_t n   = session_frame_floats(s), hw = (size_t) s->cfg.height * (size_t) s->cfg.width;
    float *      dst = s->patch > 1 ? s->unpatch : s->queue + (size_t) s->queued * n;
    size_t       bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t c = i / hw;
        if (!isfinite(latent[i]) && bad++ == 0) {
            first = i;
        }
        dst[i] = latent[i] / s->div[c] + s->add[c];
    }
    if (bad) {
        snprintf(err, err_size, "the latent frame holds %zu non-finite values (NaN or Inf); the first is %g at "
                 "channel %zu, row %zu, column %zu", bad, latent[first], first / hw, first % hw / s->cfg.width,
                 first % s->cfg.width);
        return false;
    }
    if (s->patch > 1) {
        session_unpatchify(s, s->unpatch, s->queue + (size_t) s->queued * n);
    }
    s->queued++;
    if (s->model->chunk_latents) { // a whole chunk: decoded, its overlap kept for the next
        if (++s->latents_in, s->queued < s->cfg.chunk_frames) {
            return true;
        }
        const size_t floats = session_queue_floats(s), o = (size_t) s->model->chunk_overlap;
        if (!session_decode(s, s->step, err, err_size)) {
            return false;
        }
        memmove(s->queue, s->queue + (size_t) (s->cfg.chunk_frames - (int) o) * floats, o * floats * sizeof(float));
        s->queued = (int) o;
        return true;
    }
    const uint64_t n_first = (uint64_t) s->model->lookahead + 1; // (the first graph's latent frames)
    if (++s->latents_in <= n_first && s->first) {
        return s->latents_in < n_first || session_decode(s, s->first, err, err_size);
    }
    return s->whole || s->queued < s->cfg.chunk_frames || session_decode(s, s->step, err, err_size);
}

// a lookahead stream's next step after its end: the first graph while the stream has not started
// (a clip shorter than it: no frame out yet, the first graph gives at least one), else a step;
// each gives the frames up to the stream's last. A tiled stream steps on while its steps fill
// (each a frame later than the one before it: as many steps as it has at most).
static bool session_flush(struct vae_session * s, char * err, size_t err_size) {
    const bool started = s->frames_out > 0;
    s->flushing        = s->frames_out < s->total;
    for (int i = 0; s->flushing && i <= VAE_CAUSAL_MAX_STEPS; i++) {
        if (!session_decode(s, started ? s->step : s->first, err, err_size)) {
            return false;
        }
        if (s->ready > 0) {
            return true;
        }
    }
    if (s->flushing) {
        snprintf(err, err_size, "the end of the stream gave no frame in %d steps", VAE_CAUSAL_MAX_STEPS + 1);
        return false;
    }
    return true;
}

// a chunked stream's end: its last chunk padded, or where the last one decoded is the stream's,
// the frames it held
static bool session_drain_chunks(struct vae_session * s, char * err, size_t err_size) {
    const struct vae_model * m = s->model;
    if (!(s->total = vae_model_stream_frames(m, s->latents_in))) {
        snprintf(err, err_size, "%s decodes streams of %d latent frames or more (upstream's decode has no chunk for "
                 "fewer), not %llu; %d n + %d latent frames give %d n + %d frames", vae_family_name(m->family),
                 m->chunk_overlap + 1, (unsigned long long) s->latents_in, m->chunk_latents, m->chunk_overlap,
                 m->chunk_latents * m->frames_per_latent - m->chunk_overlap * m->frames_per_latent + m->chunk_hold,
                 m->chunk_hold);
        s->queued = 0;
        return false;
    }
    if (s->queued > m->chunk_overlap) { // (a stream of 3 or more latent frames has a chunk by now)
        return session_decode(s, s->step, err, err_size);
    }
    s->queued = 0;
    s->skip   = (int) s->done->output->ne[0] - m->chunk_hold;
    s->ready  = (int) (s->total - s->frames_out);
    s->popped = 0;
    s->frames_out = s->total;
    return true;
}

bool vae_session_drain(struct vae_session * s, char * err, size_t err_size) {
    // the stream has ended: the next push starts another (the ready frames stay until popped)
    s->ended = true;
    if (s->model->chunk_latents && s->latents_in > 0) {
        return session_drain_chunks(s, err, err_size);
    }
    if (s->model->lookahead && s->latents_in > 0 && !s->flushing) {
        // every centred conv reads its last frame from now on; the frames in flight come out a step
        // at a time (vae_session_pop_* make the next when the ready ones are gone)
        s->total = 1 + (uint64_t) s->model->frames_per_latent * (s->latents_in - 1);
        if (s->tiled_video) {
            vae_tiled_video_set_end(s->tiled_video, (int64_t) s->latents_in);
        } else {
            vae_backend_state_set_end(s->backend, s->state, (int64_t) s->latents_in);
        }
        return session_flush(s, err, err_size);
    }
    if (s->queued > 0 && s->model->clip_calls && (s->whole || s->queued < s->cfg.chunk_frames)) {
        return session_decode_clip(s, err, err_size);
    }
    return s->queued == 0 || session_decode(s, s->step, err, err_size);
}

int vae_session_frames_ready(const struct vae_session * s) {
    return s->ready - s->popped + (s->flushing ? (int) (s->total - s->frames_out) : 0);
}

// the output frame of the graph that the next pop takes (a flushing stream's next step made first
// where none is left), or -1 after a message
static int session_next_frame(struct vae_session * s, char * err, size_t err_size) {
    if (vae_session_frames_ready(s) <= 0) {
        snprintf(err, err_size, "no decoded frame is ready");
        return -1;
    }
    if (s->ready == s->popped && !session_flush(s, err, err_size)) {
        return -1;
    }
    return s->skip + s->popped++;
}

bool vae_session_pop_frame(struct vae_session * s, struct vae_frame * dst, char * err, size_t err_size) {
    const int n = session_next_frame(s, err, err_size);
    dst->scale  = s->model->out_scale;
    dst->offset = s->model->out_offset;
    dst->alpha  = s->model->out_channels == 4;
    if (n >= 0 && s->tiled_out) {
        if (dst->width != s->model->scale * s->w || dst->height != s->model->scale * s->h) {
            snprintf(err, err_size, "the frame is %dx%d but the decoder gives %dx%d", dst->width, dst->height,
                     s->model->scale * s->w, s->model->scale * s->h);
            return false;
        }
        if (dst->device) {
            snprintf(err, err_size, "a tiled decode gives its frames in host memory, not in device memory");
            return false;
        }
        const size_t hw = (size_t) dst->width * dst->height;
        vae_frame_pack(s->tiled_out + (size_t) n * s->model->out_channels * hw, 1, (int64_t) hw, dst);
        return true;
    }
    return n >= 0 && vae_backend_graph_read_frame(s->backend, s->done, n, dst, err, err_size);
}

bool vae_session_pop_output(struct vae_session * s, float * dst, char * err, size_t err_size) {
    const int n = session_next_frame(s, err, err_size);
    if (n >= 0 && s->tiled_out) {
        const size_t hw = (size_t) s->model->scale * s->h * (size_t) s->model->scale * s->w;
        const size_t floats = (size_t) s->model->out_channels * hw;
        memcpy(dst, s->tiled_out + (size_t) n * floats, floats * sizeof(float));
        return true;
    }
    return n >= 0 && vae_backend_graph_read_output(s->backend, s->done, n, 1, dst, err, err_size);
}

void vae_session_reset(struct vae_session * s) {
    s->ended      = false;
    s->flushing   = false;
    s->broken     = false;
    s->queued     = 0;
    s->ready      = 0;
    s->popped     = 0;
    s->latents_in = 0;
    s->frames_out = 0;
    if (s->state) {
        vae_backend_state_reset(s->backend, s->state);
    }
    if (s->tiled_video) {
        vae_tiled_video_reset(s->tiled_video);
    }
}

bool vae_session_take_notice(struct vae_session * s, char * buf, size_t size) {
    if (s->notice[0]) {
        snprintf(buf, size, "%s", s->notice);
        s->notice[0] = '\0';
        return true;
    }
    return vae_backend_take_notice(s->backend, buf, size);
}

int vae_session_chunk_frames(const struct vae_session * s) {
    return s->cfg.chunk_frames;
}

int vae_session_ranges(const struct vae_session * s, const char ** names, float * max_abs) {
    return s->tiled && s->tiled_out ? vae_tiled_ranges(s->tiled, names, max_abs) : 0;
}

int vae_session_tile_size(const struct vae_session * s) {
    return s->cfg.tile_size;
}

size_t vae_session_peak_bytes(const struct vae_session * s) {
    const size_t queue = (size_t) s->capacity * session_queue_floats(s) * sizeof(float) +
                         (s->unpatch ? session_frame_floats(s) * sizeof(float) : 0);
    if (s->tiled) {
        return vae_tiled_peak_bytes(s->tiled) + queue;
    }
    if (s->tiled_video) {
        return vae_tiled_video_peak_bytes(s->tiled_video) + queue;
    }
    return (s->step ? s->step->peak_bytes : 0) + (s->first ? s->first->arena_bytes : 0) +
           (s->clip ? (s->step ? s->clip->arena_bytes : s->clip->peak_bytes) : 0) +
           vae_backend_state_bytes(s->backend, s->state) + queue;
}

uint64_t vae_session_latents_in(const struct vae_session * s) {
    return s->latents_in;
}

uint64_t vae_session_frames_out(const struct vae_session * s) {
    return s->frames_out;
}
