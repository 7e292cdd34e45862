// The decode session: it converts pushed latents into the decoder's own space, gathers them into
// chunks, runs the prepared graph for a chunk and hands out its frames in order. A partial chunk
// at the end of a stream gets its own graph, prepared on first use.

#include "vae-session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vae_session {
    const struct vae_model *  model;
    vae_backend_t *           backend;
    struct vae_session_config cfg;
    float *                   scale, * shift;  // latent space -> the decoder's own space
    float *                   queue;           // chunk_frames latent frames
    int                       queued;
    struct vae_graph **       graphs;          // by frame count - 1; NULL until needed
    struct vae_graph *        done;            // the graph whose output holds the ready frames
    int                       ready, popped;
};

static size_t session_frame_floats(const struct vae_session * s) {
    return (size_t) s->cfg.channels * (size_t) s->cfg.height * (size_t) s->cfg.width;
}

void vae_session_free(struct vae_session * s) {
    if (!s) {
        return;
    }
    for (int i = 0; s->graphs && i < s->cfg.chunk_frames; i++) {
        vae_backend_graph_release(s->backend, s->graphs[i]);
        vae_graph_free(s->graphs[i]);
    }
    free(s->graphs);
    free(s->queue);
    free(s->scale);
    free(s);
}

static struct vae_graph * session_graph(struct vae_session * s, int n, char * err, size_t err_size) {
    if (!s->graphs[n - 1]) {
        struct vae_graph * g = vae_model_build_graph(s->model, n, s->cfg.height, s->cfg.width, err, err_size);
        if (!g) {
            return NULL;
        }
        if (!vae_backend_graph_prepare(s->backend, g, s->cfg.max_bytes, err, err_size)) {
            vae_graph_free(g);
            return NULL;
        }
        s->graphs[n - 1] = g;
    }
    return s->graphs[n - 1];
}

struct vae_session * vae_session_new(const struct vae_model * model, vae_backend_t * backend,
                                     const struct vae_session_config * config, char * err, size_t err_size) {
    const struct vae_session_config * c = config;
    if (c->channels != model->latent_channels) {
        snprintf(err, err_size, "the latents have %d channels but the %s decoder takes %d", c->channels,
                 vae_family_name(model->family), model->latent_channels);
        return NULL;
    }
    // the output is 8x the latent grid; keep every size well inside int and size_t arithmetic
    if (c->width < 1 || c->height < 1 || c->width > 4096 || c->height > 4096) {
        snprintf(err, err_size, "a %dx%d latent grid is outside 1..4096 (output %lldx%lld)", c->width, c->height,
                 8LL * c->width, 8LL * c->height);
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
        s->cfg.chunk_frames = 1; // image decoders gain nothing on the cpu from batching frames
    }
    s->scale  = malloc(2 * (size_t) c->channels * sizeof(float));
    s->queue  = malloc((size_t) s->cfg.chunk_frames * session_frame_floats(s) * sizeof(float));
    s->graphs = calloc((size_t) s->cfg.chunk_frames, sizeof(*s->graphs));
    if (!s->scale || !s->queue || !s->graphs) {
        snprintf(err, err_size, "out of memory");
        vae_session_free(s);
        return NULL;
    }
    s->shift = s->scale + c->channels;
    // prepare the full-chunk graph now: memory is known (and refused) before the first frame
    if (!vae_model_space_affine(model, c->space, s->scale, s->shift, err, err_size) ||
        !session_graph(s, s->cfg.chunk_frames, err, err_size)) {
        vae_session_free(s);
        return NULL;
    }
    return s;
}

static bool session_decode(struct vae_session * s, char * err, size_t err_size) {
    struct vae_graph * g = session_graph(s, s->queued, err, err_size);
    if (!g || !vae_backend_graph_compute(s->backend, g, s->queue, err, err_size)) {
        s->queued = 0;
        return false;
    }
    s->done   = g;
    s->ready  = s->queued;
    s->popped = 0;
    s->queued = 0;
    return true;
}

bool vae_session_push(struct vae_session * s, const float * latent, char * err, size_t err_size) {
    if (vae_session_frames_ready(s) > 0) {
        snprintf(err, err_size, "%d decoded frames were not popped before the next push", vae_session_frames_ready(s));
        return false;
    }
    const size_t n   = session_frame_floats(s), hw = (size_t) s->cfg.height * (size_t) s->cfg.width;
    float *      dst = s->queue + (size_t) s->queued * n;
    size_t       bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t c = i / hw;
        if (!isfinite(latent[i]) && bad++ == 0) {
            first = i;
        }
        dst[i] = latent[i] * s->scale[c] + s->shift[c];
    }
    if (bad) {
        snprintf(err, err_size, "the latent frame holds %zu non-finite values (NaN or Inf); the first is %g at "
                 "channel %zu, row %zu, column %zu", bad, latent[first], first / hw, first % hw / s->cfg.width,
                 first % s->cfg.width);
        return false;
    }
    if (++s->queued == s->cfg.chunk_frames) {
        return session_decode(s, err, err_size);
    }
    return true;
}

bool vae_session_drain(struct vae_session * s, char * err, size_t err_size) {
    return s->queued == 0 || session_decode(s, err, err_size);
}

int vae_session_frames_ready(const struct vae_session * s) {
    return s->ready - s->popped;
}

bool vae_session_pop_frame(struct vae_session * s, struct vae_frame * dst, char * err, size_t err_size) {
    if (vae_session_frames_ready(s) <= 0) {
        snprintf(err, err_size, "no decoded frame is ready");
        return false;
    }
    dst->scale  = s->model->out_scale;
    dst->offset = s->model->out_offset;
    return vae_backend_graph_read_frame(s->backend, s->done, s->popped++, dst, err, err_size);
}

void vae_session_reset(struct vae_session * s) {
    s->queued = 0;
    s->ready  = 0;
    s->popped = 0;
}

int vae_session_chunk_frames(const struct vae_session * s) {
    return s->cfg.chunk_frames;
}

size_t vae_session_peak_bytes(const struct vae_session * s) {
    size_t peak = 0;
    for (int i = 0; i < s->cfg.chunk_frames; i++) {
        if (s->graphs[i] && s->graphs[i]->peak_bytes > peak) {
            peak = s->graphs[i]->peak_bytes;
        }
    }
    return peak;
}
