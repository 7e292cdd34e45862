// The helpers the families' graph builders share (see vae-builder.h): they take the model's weights
// into a graph with their shapes checked, so that a file missing a tensor, or holding one of the
// wrong shape, is refused naming it at load time (the loader builds once) rather than decoding
// garbage; and they chain a causal video decoder's head and steps.

#include "vae-builder.h"
#include "vae-family.h"
#include "vae-weights.h"

#include <stdarg.h>
#include <stdio.h>

bool vae_builder_init(struct vae_builder * b, const struct vae_model * model, char * err, size_t err_size) {
    *b = (struct vae_builder) { model, vae_graph_new(), err, err_size, false, 0 };
    if (!b->g) {
        snprintf(err, err_size, "out of memory building the graph");
    }
    return b->g != NULL;
}

struct vae_graph * vae_builder_finish(struct vae_builder * b, struct vae_tensor * out) {
    if (!out || b->failed) {
        vae_graph_free(b->g);
        return NULL;
    }
    vae_graph_set_output(b->g, out);
    return b->g;
}

struct vae_tensor * vae_builder_fail(struct vae_builder * b, const char * fmt, ...) {
    if (!b->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err, b->err_size, fmt, ap);
        va_end(ap);
        b->failed = true;
    }
    return NULL;
}

struct vae_tensor * vae_builder_weight(struct vae_builder * b, int n_dims, const int64_t * shape, const char * fmt, ...) {
    char    name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (b->failed) {
        return NULL;
    }
    const struct vae_weight * w  = vae_model_weight(b->model, name);
    bool                      ok = w && w->n_dims == n_dims;
    for (int i = 0; ok && i < n_dims; i++) {
        ok = shape[i] < 0 || shape[i] == w->shape[i];
    }
    if (!ok) {
        char want[96];
        vae_weights_format_shape(want, sizeof(want), n_dims, shape);
        return vae_builder_fail(b, "%s: tensor '%s' %s (expected shape %s, -1 = any)",
                                b->model->variant->name, name, w ? "has the wrong shape" : "is missing", want);
    }
    char          msg[512];
    const float * data = vae_model_weight_data(b->model, w, msg, sizeof(msg));
    if (!data) {
        return vae_builder_fail(b, "%s", msg);
    }
    return vae_graph_weight(b->g, w->name, data, w->n_dims, w->shape);
}

struct vae_tensor * vae_builder_conv2d(struct vae_builder * b, struct vae_tensor * x, const char * name, int k,
                                      bool bias, struct vae_tensor * r, enum vae_act act, bool upsample) {
    if (b->failed) {
        return NULL;
    }
    const int64_t       wshape[4] = { -1, x->ne[1], k, k };
    struct vae_tensor * w = vae_builder_weight(b, 4, wshape, "%s.weight", name);
    struct vae_tensor * bt = NULL;
    if (w && bias) {
        bt = vae_builder_weight(b, 1, (const int64_t[]) { w->ne[0] }, "%s.bias", name);
    }
    if (b->failed) {
        return NULL;
    }
    if (r && r->ne[1] != w->ne[0]) {
        return vae_builder_fail(b, "tensor '%s.weight' gives %lld channels but its residual has %lld", name,
                                (long long) w->ne[0], (long long) r->ne[1]);
    }
    return upsample ? vae_graph_upsample_conv2d(b->g, x, w, bt, act) : vae_graph_conv2d(b->g, x, w, bt, r, act);
}

struct vae_tensor * vae_builder_conv3d(struct vae_builder * b, struct vae_tensor * x, const char * name, int kt, int k,
                                       struct vae_tensor * r, int edges) {
    struct vae_tensor * w  = vae_builder_weight(b, 5, (const int64_t[]) { -1, x->ne[1], kt, k, k }, "%s.weight", name);
    struct vae_tensor * bt = w ? vae_builder_weight(b, 1, (const int64_t[]) { w->ne[0] }, "%s.bias", name) : NULL;
    if (!bt) {
        return NULL;
    }
    if (r && r->ne[1] != w->ne[0]) {
        return vae_builder_fail(b, "tensor '%s.weight' gives %lld channels but its residual has %lld", name,
                                (long long) w->ne[0], (long long) r->ne[1]);
    }
    if (kt == 1 && k == 1) {
        w->n_dims = 4; // [Cout, Cin, 1, 1]
        return vae_graph_conv2d(b->g, x, w, bt, r, VAE_ACT_NONE);
    }
    return vae_graph_causal_conv3d_edges(b->g, x, w, bt, r, VAE_ACT_NONE, b->n_slots++, edges, b->a);
}

// a causal family's whole-sequence graph: its head, then its steps in order, each residual step
// reading the activation its slot kept (a frame later for each centred step since)
struct vae_graph * vae_causal_build(const struct vae_causal_family * f, const struct vae_model * model, int n, int h,
                                    int w, bool first, char * err, size_t err_size) {
    struct vae_builder     b;
    struct vae_causal_step steps[VAE_CAUSAL_MAX_STEPS];
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    const int           n_steps = f->steps(model, steps, VAE_CAUSAL_MAX_STEPS);
    struct vae_tensor * x       = vae_graph_input(b.g, n, model->latent_channels, h, w); // [N, z, h, w]
    struct vae_tensor * slot[2] = { NULL, NULL };                                     // kept block inputs
    int                 lag[2]  = { 0, 0 };                                           // and their frames' lag
    x                           = f->head ? f->head(&b, x) : x;
    // -> [N'', 3, s h, s w], N'' = 1 for a first step, 4N otherwise
    for (int i = 0; i < n_steps && x; i++) {
        const struct vae_causal_step * s = &steps[i];
        for (int j = 0; j < 2; j++) {
            slot[j] = s->save & (1 << j) ? x : slot[j];
            lag[j]  = (s->save & (1 << j) ? 0 : lag[j]) + s->centred;
        }
        struct vae_tensor * r = s->res >= 0 ? slot[s->res] : NULL;
        if (r && lag[s->res] > 0) { // (a stream's start has nothing to delay: its first frames go)
            r = vae_graph_delay(b.g, r, lag[s->res], b.n_slots++, first ? VAE_CENTRED_START : 0);
        }
        b.a = s->rate > 0 ? s->rate : 1;
        x   = f->step(&b, s, x, r, NULL, first);
    }
    return vae_builder_finish(&b, x);
}

struct vae_graph * vae_causal_head_build(const struct vae_causal_family * f, const struct vae_model * model, int h,
                                         int w, char * err, size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    return vae_builder_finish(&b, f->head(&b, vae_graph_input(b.g, 1, model->latent_channels, h, w)));
}

struct vae_graph * vae_causal_step_build(const struct vae_causal_family * f, const struct vae_model * model,
                                         const struct vae_causal_step * s, int h, int w, bool first, char * err,
                                         size_t err_size) {
    struct vae_builder b;
    if (!vae_builder_init(&b, model, err, err_size)) {
        return NULL;
    }
    b.a                       = s->rate > 0 ? s->rate : 1;
    struct vae_tensor * x     = vae_graph_input(b.g, 1, s->cin, h, w);                     // [1, Cin, h, w]
    struct vae_tensor * r     = s->rin > 0 ? vae_graph_input(b.g, 1, s->rin, h, w) : NULL;  // [1, rin, h, w]
    struct vae_tensor * stats = s->groups > 0 ? vae_graph_input(b.g, 1, 2 * s->groups, 1, 1) : NULL;
    return vae_builder_finish(&b, f->step(&b, s, x, r, stats, first));
}
