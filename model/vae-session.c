// The decode session: it converts pushed latents into the decoder's own space, gathers them into
// chunks, runs the prepared graph for a chunk and hands out its frames in order. Two graphs at
// most, both prepared when the session starts: the step of `chunk` latent frames, and for Wan the
// step that starts a stream (latent frame 0 alone). A causal decoder's output for a frame never
// depends on later latents, so a short last chunk is padded with copies of its last latent frame
// and the frames of the padding are dropped: one graph serves every step of the stream.

#include "vae-session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vae_session {
    const struct vae_model *  model;
    vae_backend_t *           backend;
    struct vae_session_config cfg;
    float *                   div, * add;      // latent space -> the decoder's own space
    float *                   queue;           // chunk_frames latent frames
    int                       queued;
    struct vae_graph *        step;            // chunk_frames latent frames
    struct vae_graph *        first;           // latent frame 0 alone (Wan); NULL otherwise
    vae_state_t *             state;           // causal decoders
    struct vae_graph *        done;            // the graph whose output holds the ready frames
    int                       skip, ready, popped; // output frames: first ready one, ready ones, popped ones
    uint64_t                  latents_in, frames_out;
    bool                      ended;           // drained: the next push starts a new stream
};

static size_t session_frame_floats(const struct vae_session * s) {
    return (size_t) s->cfg.channels * (size_t) s->cfg.height * (size_t) s->cfg.width;
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
    vae_backend_state_free(s->backend, s->state);
    free(s->queue);
    free(s->div);
    free(s);
}

static struct vae_graph * session_graph(struct vae_session * s, int n, bool first, char * err, size_t err_size) {
    struct vae_graph * g = vae_model_build_graph(s->model, n, s->cfg.height, s->cfg.width, first, err, err_size);
    if (g && !vae_backend_graph_prepare(s->backend, g, s->cfg.max_bytes, err, err_size)) {
        vae_graph_free(g);
        return NULL;
    }
    return g;
}

struct vae_session * vae_session_new(const struct vae_model * model, vae_backend_t * backend,
                                     const struct vae_session_config * config, char * err, size_t err_size) {
    const struct vae_session_config * c = config;
    if (c->channels != model->latent_channels) {
        snprintf(err, err_size, "the latents have %d channels but the %s decoder takes %d", c->channels,
                 vae_family_name(model->family), model->latent_channels);
        return NULL;
    }
    // keep every size well inside int and size_t arithmetic
    if (c->width < 1 || c->height < 1 || c->width > 4096 || c->height > 4096) {
        snprintf(err, err_size, "a %dx%d latent grid is outside 1..4096 (output %lldx%lld)", c->width, c->height,
                 (long long) model->scale * c->width, (long long) model->scale * c->height);
        return NULL;
    }
    if (c->chunk_frames < 0 || c->chunk_frames > 256) {
        snprintf(err, err_size, "chunk-frames %d is outside 0..256", c->chunk_frames);
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
    if (s->cfg.chunk_frames == 0) {
        s->cfg.chunk_frames = 1; // on the cpu, batching frames gains nothing and costs memory
    }
    s->div   = malloc(2 * (size_t) c->channels * sizeof(float));
    s->queue = malloc((size_t) s->cfg.chunk_frames * session_frame_floats(s) * sizeof(float));
    if (!s->div || !s->queue) {
        snprintf(err, err_size, "out of memory");
        vae_session_free(s);
        return NULL;
    }
    s->add = s->div + c->channels;
    // everything is prepared now: memory is known (and refused) before the first frame
    bool ok = vae_model_space_affine(model, c->space, s->div, s->add, err, err_size) &&
              (s->step = session_graph(s, s->cfg.chunk_frames, false, err, err_size)) != NULL &&
              (!model->first_apart || (s->first = session_graph(s, 1, true, err, err_size)) != NULL);
    if (ok && s->step->n_states > 0) {
        ok = (s->state = vae_backend_state_new(backend, s->step, err, err_size)) != NULL;
    }
    if (!ok) {
        vae_session_free(s);
        return NULL;
    }
    return s;
}

// run the queued latents (padded to the graph's frame count) and make their frames ready
static bool session_decode(struct vae_session * s, struct vae_graph * g, char * err, size_t err_size) {
    const int    n     = (int) g->input->ne[0], real = s->queued;
    const size_t floats = session_frame_floats(s);
    for (int i = real; i < n; i++) {
        memcpy(s->queue + (size_t) i * floats, s->queue + (size_t) (real - 1) * floats, floats * sizeof(float));
    }
    const bool starts = s->latents_in == (uint64_t) real;
    s->queued         = 0;
    if (!vae_backend_graph_compute(s->backend, g, s->state, s->queue, err, err_size)) {
        return false;
    }
    // the stream's first latent frame gives 1 frame (after trim_frames that are not frames of the
    // video), every later one frames_per_latent
    s->done   = g;
    s->skip   = starts ? s->model->trim_frames : 0;
    s->ready  = starts ? 1 + s->model->frames_per_latent * (real - 1) : s->model->frames_per_latent * real;
    s->popped = 0;
    s->frames_out += (uint64_t) s->ready;
    return true;
}

bool vae_session_push(struct vae_session * s, const float * latent, char * err, size_t err_size) {
    if (vae_session_frames_ready(s) > 0) {
        snprintf(err, err_size, "%d decoded frames were not popped before the next push", vae_session_frames_ready(s));
        return false;
    }
    if (s->ended) {
        vae_session_reset(s);
    }
    const size_t n   = session_frame_floats(s), hw = (size_t) s->cfg.height * (size_t) s->cfg.width;
    float *      dst = s->queue + (size_t) s->queued * n;
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
    s->queued++;
    if (s->latents_in++ == 0 && s->first) {
        return session_decode(s, s->first, err, err_size);
    }
    return s->queued < s->cfg.chunk_frames || session_decode(s, s->step, err, err_size);
}

bool vae_session_drain(struct vae_session * s, char * err, size_t err_size) {
    // the stream has ended: the next push starts another (the ready frames stay until popped)
    s->ended = true;
    return s->queued == 0 || session_decode(s, s->step, err, err_size);
}

int vae_session_frames_ready(const struct vae_session * s) {
    return s->ready - s->popped;
}

// the output frame of the graph that the next pop takes, or -1 after a message
static int session_next_frame(struct vae_session * s, char * err, size_t err_size) {
    if (vae_session_frames_ready(s) <= 0) {
        snprintf(err, err_size, "no decoded frame is ready");
        return -1;
    }
    return s->skip + s->popped++;
}

bool vae_session_pop_frame(struct vae_session * s, struct vae_frame * dst, char * err, size_t err_size) {
    const int n = session_next_frame(s, err, err_size);
    dst->scale  = s->model->out_scale;
    dst->offset = s->model->out_offset;
    return n >= 0 && vae_backend_graph_read_frame(s->backend, s->done, n, dst, err, err_size);
}

bool vae_session_pop_output(struct vae_session * s, float * dst, char * err, size_t err_size) {
    const int n = session_next_frame(s, err, err_size);
    return n >= 0 && vae_backend_graph_read_output(s->backend, s->done, n, 1, dst, err, err_size);
}

void vae_session_reset(struct vae_session * s) {
    s->ended      = false;
    s->queued     = 0;
    s->ready      = 0;
    s->popped     = 0;
    s->latents_in = 0;
    s->frames_out = 0;
    if (s->state) {
        vae_backend_state_reset(s->backend, s->state);
    }
}

int vae_session_chunk_frames(const struct vae_session * s) {
    return s->cfg.chunk_frames;
}

size_t vae_session_peak_bytes(const struct vae_session * s) {
    return s->step->peak_bytes + (s->first ? s->first->arena_bytes : 0) + vae_backend_state_bytes(s->backend, s->state) +
           (size_t) s->cfg.chunk_frames * session_frame_floats(s) * sizeof(float);
}

uint64_t vae_session_latents_in(const struct vae_session * s) {
    return s->latents_in;
}

uint64_t vae_session_frames_out(const struct vae_session * s) {
    return s->frames_out;
}
