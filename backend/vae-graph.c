// Building the op graph that backends execute. Builders call these in execution order; each
// call checks the shapes it is given, so a builder bug shows as an assertion at build time and
// never as a wrong read on a device. Shapes follow the op definitions in vae-backend.h.

#include "vae-backend.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct vae_graph * vae_graph_new(void) {
    struct vae_graph * g = calloc(1, sizeof(*g));
    if (g) {
        const char * env = getenv("VAE_DISABLE_FUSION");
        g->fused = !(env && env[0] == '1');
    }
    return g;
}

void vae_graph_free(struct vae_graph * g) {
    if (!g) {
        return;
    }
    assert(g->backend_data == NULL && "release the graph on its backend first");
    for (int i = 0; i < g->n_nodes; i++) {
        free(g->nodes[i]);
    }
    for (int i = 0; i < g->n_weights; i++) {
        free(g->weights[i]);
    }
    free(g->nodes);
    free(g->weights);
    free(g->inputs);
    free(g);
}

static struct vae_tensor * graph_append(struct vae_tensor *** list, int * n, struct vae_tensor * t) {
    struct vae_tensor ** grown = realloc(*list, (size_t) (*n + 1) * sizeof(**list));
    if (!grown) {
        abort(); // a few hundred pointers: running out here means the process is lost anyway
    }
    *list = grown;
    (*list)[(*n)++] = t;
    return t;
}

static struct vae_tensor * graph_node(struct vae_graph * g, enum vae_op op, int64_t n, int64_t c, int64_t h,
                                      int64_t w) {
    struct vae_tensor * t = calloc(1, sizeof(*t));
    if (!t) {
        abort();
    }
    t->op     = op;
    t->ne[0]  = n;
    t->ne[1]  = c;
    t->ne[2]  = h;
    t->ne[3]  = w;
    t->ne[4]  = 1;
    t->n_dims = 4;
    t->index  = g->n_nodes;
    return graph_append(&g->nodes, &g->n_nodes, t);
}

struct vae_tensor * vae_graph_input(struct vae_graph * g, int64_t n, int64_t c, int64_t h, int64_t w) {
    static const char * const names[] = { "input", "input 1", "input 2", "input 3" };
    struct vae_tensor *       t       = graph_node(g, VAE_OP_INPUT, n, c, h, w);
    t->i[0] = g->n_inputs;
    t->name = g->n_inputs < 4 ? names[g->n_inputs] : "input 4+";
    graph_append(&g->inputs, &g->n_inputs, t);
    g->input = g->inputs[0];
    return t;
}

struct vae_tensor * vae_graph_weight(struct vae_graph * g, const char * name, const float * data, int n_dims,
                                     const int64_t * shape) {
    struct vae_tensor * t = calloc(1, sizeof(*t));
    if (!t) {
        abort();
    }
    t->op     = VAE_OP_WEIGHT;
    assert(n_dims <= VAE_MAX_DIMS);
    t->n_dims = n_dims;
    for (int i = 0; i < VAE_MAX_DIMS; i++) {
        t->ne[i] = i < n_dims ? shape[i] : 1;
    }
    t->data  = data;
    t->name  = name;
    t->index = -1;
    return graph_append(&g->weights, &g->n_weights, t);
}

struct vae_tensor * vae_graph_tanh_clamp(struct vae_graph * g, struct vae_tensor * x, float s) {
    struct vae_tensor * t = graph_node(g, VAE_OP_TANH_CLAMP, x->ne[0], x->ne[1], x->ne[2], x->ne[3]);
    t->src[0] = x;
    t->f[0]   = s;
    return t;
}

// w [Cout, Cin / groups, k, k], k odd
static void graph_check_conv(const struct vae_tensor * x, const struct vae_tensor * w, const struct vae_tensor * b,
                             int groups) {
    assert(w->op == VAE_OP_WEIGHT && w->n_dims == 4 && w->ne[2] == w->ne[3] && (w->ne[2] & 1));
    assert(groups >= 1 && x->ne[1] % groups == 0 && w->ne[0] % groups == 0 && w->ne[1] * groups == x->ne[1]);
    assert(!b || (b->op == VAE_OP_WEIGHT && b->n_dims == 1 && b->ne[0] == w->ne[0]));
    (void) x, (void) w, (void) b, (void) groups;
}

// a convolution node of x's frames and size, w's output channels (w's input channels: checked by the caller)
static struct vae_tensor * graph_conv_node(struct vae_graph * g, enum vae_op op, struct vae_tensor * x,
                                           struct vae_tensor * w, struct vae_tensor * b, struct vae_tensor * r,
                                           enum vae_act act) {
    assert(!b || (b->op == VAE_OP_WEIGHT && b->n_dims == 1 && b->ne[0] == w->ne[0]));
    struct vae_tensor * t = graph_node(g, op, x->ne[0], w->ne[0], x->ne[2], x->ne[3]);
    assert(!r || memcmp(r->ne, t->ne, sizeof(t->ne)) == 0);
    t->src[0] = x;
    t->src[1] = w;
    t->src[2] = b;
    t->src[3] = r;
    t->act    = act;
    t->name   = w->name;
    return t;
}

struct vae_tensor * vae_graph_conv2d(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                     struct vae_tensor * b, struct vae_tensor * r, enum vae_act act) {
    return vae_graph_conv2d_groups(g, x, w, b, r, act, 1);
}

struct vae_tensor * vae_graph_conv2d_groups(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                            struct vae_tensor * b, struct vae_tensor * r, enum vae_act act, int groups) {
    graph_check_conv(x, w, b, groups);
    struct vae_tensor * t = graph_conv_node(g, VAE_OP_CONV2D, x, w, b, r, act);
    t->i[0]               = groups;
    return t;
}

struct vae_tensor * vae_graph_upsample2x(struct vae_graph * g, struct vae_tensor * x) {
    struct vae_tensor * t = graph_node(g, VAE_OP_UPSAMPLE2X, x->ne[0], x->ne[1], 2 * x->ne[2], 2 * x->ne[3]);
    t->src[0]             = x;
    t->name               = x->name;
    return t;
}

struct vae_tensor * vae_graph_upsample_conv2d(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                              struct vae_tensor * b, enum vae_act act) {
    graph_check_conv(x, w, b, 1);
    assert(w->ne[2] == 3);
    if (!g->fused) {
        return vae_graph_conv2d(g, vae_graph_upsample2x(g, x), w, b, NULL, act);
    }
    struct vae_tensor * t = graph_node(g, VAE_OP_UPSAMPLE_CONV2D, x->ne[0], w->ne[0], 2 * x->ne[2], 2 * x->ne[3]);
    t->src[0] = x;
    t->src[1] = w;
    t->src[2] = b;
    t->act    = act;
    t->name   = w->name;
    return t;
}

struct vae_tensor * vae_graph_group_norm(struct vae_graph * g, struct vae_tensor * x, int groups, float eps,
                                         struct vae_tensor * gamma, struct vae_tensor * beta, enum vae_act act) {
    return vae_graph_group_norm_stats(g, x, groups, eps, gamma, beta, act, NULL);
}

struct vae_tensor * vae_graph_group_norm_stats(struct vae_graph * g, struct vae_tensor * x, int groups, float eps,
                                               struct vae_tensor * gamma, struct vae_tensor * beta, enum vae_act act,
                                               struct vae_tensor * stats) {
    assert(groups > 0 && x->ne[1] % groups == 0);
    assert(!stats || (stats->op == VAE_OP_INPUT && stats->ne[0] == 1 && stats->ne[1] == 2 * groups &&
                      stats->ne[2] == 1 && stats->ne[3] == 1));
    assert(gamma->ne[0] == x->ne[1] && beta->ne[0] == x->ne[1]);
    struct vae_tensor * t = graph_node(g, VAE_OP_GROUP_NORM, x->ne[0], x->ne[1], x->ne[2], x->ne[3]);
    t->src[0] = x;
    t->src[1] = gamma;
    t->src[2] = beta;
    t->src[3] = stats;
    t->act    = act;
    t->i[0]   = groups;
    t->f[0]   = eps;
    t->name   = gamma ? gamma->name : "rms_norm";
    return t;
}

struct vae_tensor * vae_graph_group_norm_frames(struct vae_graph * g, struct vae_tensor * x, int groups, float eps,
                                                struct vae_tensor * gamma, struct vae_tensor * beta, enum vae_act act) {
    struct vae_tensor * t = vae_graph_group_norm_stats(g, x, groups, eps, gamma, beta, act, NULL);
    t->i[1]               = 1;
    return t;
}

struct vae_tensor * vae_graph_time_conv(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                        struct vae_tensor * b, struct vae_tensor * r, enum vae_act act) {
    assert(w->op == VAE_OP_WEIGHT && w->n_dims == 5 && (w->ne[2] & 1) && w->ne[3] == 1 && w->ne[4] == 1);
    assert(w->ne[1] == x->ne[1]);
    return graph_conv_node(g, VAE_OP_TIME_CONV, x, w, b, r, act);
}

struct vae_tensor * vae_graph_causal_conv3d(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                            struct vae_tensor * b, struct vae_tensor * r, enum vae_act act, int slot) {
    assert(w->op == VAE_OP_WEIGHT && w->n_dims == 5 && w->ne[3] == w->ne[4] && (w->ne[3] & 1) && w->ne[2] >= 2);
    assert(w->ne[1] == x->ne[1] && slot >= 0);
    struct vae_tensor * t = graph_conv_node(g, VAE_OP_CAUSAL_CONV3D, x, w, b, r, act);
    t->i[0]               = slot;
    if (slot >= g->n_states) {
        g->n_states = slot + 1;
    }
    return t;
}

struct vae_tensor * vae_graph_causal_conv3d_edges(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                                  struct vae_tensor * b, struct vae_tensor * r, enum vae_act act,
                                                  int slot, int edges, int a) {
    assert((edges & ~(VAE_CAUSAL_FIRST_FRAME | VAE_CAUSAL_REPLICATE | VAE_CAUSAL_REFLECT | VAE_CENTRED |
                      VAE_CENTRED_START)) == 0);
    assert(!(edges & VAE_CAUSAL_REFLECT) || (w->ne[3] == 3 && !(edges & VAE_CAUSAL_REPLICATE)));
    assert(!(edges & VAE_CENTRED) || (w->ne[2] == 3 && a >= 1 && !(edges & VAE_CAUSAL_FIRST_FRAME)));
    assert(!(edges & VAE_CENTRED_START) || (edges & VAE_CENTRED));
    // a centred conv starting its stream gives kt/2 frames fewer
    const int64_t n = x->ne[0] - (edges & VAE_CENTRED_START ? w->ne[2] / 2 : 0);
    assert(n >= 1);
    struct vae_tensor * t = vae_graph_causal_conv3d(g, x, w, b, NULL, act, slot);
    t->ne[0]              = n;
    assert(!r || memcmp(r->ne, t->ne, sizeof(t->ne)) == 0);
    t->src[3]             = r;
    t->i[1]               = edges;
    t->i[2]               = edges & VAE_CENTRED ? a : 0;
    return t;
}

struct vae_tensor * vae_graph_delay(struct vae_graph * g, struct vae_tensor * x, int d, int slot, int start) {
    assert(d >= 1 && slot >= 0 && (start & ~VAE_CENTRED_START) == 0);
    const int64_t n = x->ne[0] - (start ? d : 0);
    assert(n >= 1);
    struct vae_tensor * t = graph_node(g, VAE_OP_DELAY, n, x->ne[1], x->ne[2], x->ne[3]);
    t->src[0]             = x;
    t->i[0]               = slot;
    t->i[1]               = d;
    t->i[2]               = start;
    t->name               = x->name;
    if (slot >= g->n_states) {
        g->n_states = slot + 1;
    }
    return t;
}

struct vae_tensor * vae_graph_rms_norm(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * gamma,
                                       enum vae_act act) {
    struct vae_tensor * t = vae_graph_rms_norm_eps(g, x, 0.0f, gamma, NULL, NULL, act);
    t->i[0]               = 0;
    return t;
}

struct vae_tensor * vae_graph_rms_norm_eps(struct vae_graph * g, struct vae_tensor * x, float eps,
                                           struct vae_tensor * gamma, struct vae_tensor * beta, struct vae_tensor * r,
                                           enum vae_act act) {
    assert(!gamma || (gamma->op == VAE_OP_WEIGHT && gamma->ne[0] == x->ne[1]));
    assert(!beta || (beta->op == VAE_OP_WEIGHT && beta->ne[0] == x->ne[1]));
    assert(!r || (r->op != VAE_OP_WEIGHT && memcmp(r->ne, x->ne, sizeof(x->ne)) == 0));
    assert(eps >= 0.0f);
    struct vae_tensor * t = graph_node(g, VAE_OP_RMS_NORM, x->ne[0], x->ne[1], x->ne[2], x->ne[3]);
    t->src[0] = x;
    t->src[1] = gamma;
    t->src[2] = beta;
    t->src[3] = r;
    t->act    = act;
    t->i[0]   = 1;
    t->f[0]   = eps;
    t->name   = gamma ? gamma->name : "rms_norm";
    return t;
}

struct vae_tensor * vae_graph_attention(struct vae_graph * g, struct vae_tensor * qkv) {
    return vae_graph_attention_heads(g, qkv, 0);
}

struct vae_tensor * vae_graph_attention_heads(struct vae_graph * g, struct vae_tensor * qkv, int hd) {
    assert(qkv->ne[1] % 3 == 0 && hd >= 0 && (hd == 0 || (qkv->ne[1] / 3) % hd == 0));
    struct vae_tensor * t = graph_node(g, VAE_OP_ATTENTION, qkv->ne[0], qkv->ne[1] / 3, qkv->ne[2], qkv->ne[3]);
    t->src[0] = qkv;
    t->i[0]   = hd;
    t->name   = qkv->name;
    return t;
}

struct vae_tensor * vae_graph_causal_attention(struct vae_graph * g, struct vae_tensor * qkv, int slot) {
    assert(slot >= 0);
    struct vae_tensor * t = vae_graph_attention(g, qkv);
    t->op                 = VAE_OP_CAUSAL_ATTENTION;
    t->i[0]               = slot;
    if (slot >= g->n_states) {
        g->n_states = slot + 1;
    }
    return t;
}

struct vae_tensor * vae_graph_linear_attention(struct vae_graph * g, struct vae_tensor * qkv, int hd) {
    assert(hd > 0 && qkv->ne[1] % (3 * hd) == 0);
    struct vae_tensor * t = graph_node(g, VAE_OP_LINEAR_ATTENTION, qkv->ne[0], qkv->ne[1] / 3, qkv->ne[2], qkv->ne[3]);
    t->src[0] = qkv;
    t->i[0]   = hd;
    t->name   = qkv->name;
    return t;
}

struct vae_tensor * vae_graph_glu(struct vae_graph * g, struct vae_tensor * x, enum vae_act act) {
    assert(x->ne[1] % 2 == 0);
    struct vae_tensor * t = graph_node(g, VAE_OP_GLU, x->ne[0], x->ne[1] / 2, x->ne[2], x->ne[3]);
    t->src[0] = x;
    t->act    = act;
    t->name   = x->name;
    return t;
}

struct vae_tensor * vae_graph_frame_split(struct vae_graph * g, struct vae_tensor * x, int s) {
    return vae_graph_frame_split_drop(g, x, s, 0);
}

struct vae_tensor * vae_graph_frame_split_drop(struct vae_graph * g, struct vae_tensor * x, int s, int drop) {
    assert(s >= 1 && x->ne[1] % s == 0 && drop >= 0 && drop < x->ne[0] * s);
    struct vae_tensor * t = graph_node(g, VAE_OP_FRAME_SPLIT, x->ne[0] * s - drop, x->ne[1] / s, x->ne[2], x->ne[3]);
    t->src[0] = x;
    t->i[0]   = s;
    t->i[1]   = drop;
    t->name   = x->name;
    return t;
}

struct vae_tensor * vae_graph_pixel_shuffle(struct vae_graph * g, struct vae_tensor * x) {
    assert(x->ne[1] % 4 == 0);
    struct vae_tensor * t = graph_node(g, VAE_OP_PIXEL_SHUFFLE, x->ne[0], x->ne[1] / 4, 2 * x->ne[2], 2 * x->ne[3]);
    t->src[0] = x;
    t->name   = x->name;
    return t;
}

struct vae_tensor * vae_graph_depthwise_conv2d(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * w,
                                               struct vae_tensor * b) {
    assert(w->op == VAE_OP_WEIGHT && w->n_dims == 4 && w->ne[1] == 1 && w->ne[2] == w->ne[3] && (w->ne[2] & 1));
    assert(w->ne[0] >= x->ne[1] && w->ne[0] % x->ne[1] == 0);
    assert(!b || (b->op == VAE_OP_WEIGHT && b->n_dims == 1 && b->ne[0] == w->ne[0]));
    struct vae_tensor * t = graph_node(g, VAE_OP_DEPTHWISE_CONV2D, x->ne[0], w->ne[0], x->ne[2], x->ne[3]);
    t->src[0] = x;
    t->src[1] = w;
    t->src[2] = b;
    t->name   = w->name;
    return t;
}

struct vae_tensor * vae_graph_layer_norm(struct vae_graph * g, struct vae_tensor * x, float eps,
                                         struct vae_tensor * gamma, struct vae_tensor * beta) {
    struct vae_tensor * t = vae_graph_rms_norm_eps(g, x, eps, gamma, beta, NULL, VAE_ACT_NONE);
    t->i[0]               = 2;
    return t;
}

struct vae_tensor * vae_graph_tokens(struct vae_graph * g, struct vae_tensor * x, struct vae_tensor * extra, int zeros) {
    assert(!extra || (extra->op == VAE_OP_WEIGHT && extra->n_dims == 2 && extra->ne[1] == x->ne[1]));
    assert(zeros >= 0);
    const int64_t       e = (extra ? extra->ne[0] : 0) + zeros;
    struct vae_tensor * t = graph_node(g, VAE_OP_TOKENS, 1, x->ne[1], 1, x->ne[0] * x->ne[2] * x->ne[3] + e);
    t->src[0] = x;
    t->src[1] = extra;
    t->i[0]   = zeros;
    t->name   = extra ? extra->name : x->name;
    return t;
}

struct vae_tensor * vae_graph_untokens(struct vae_graph * g, struct vae_tensor * x, int n, int h, int w) {
    assert(x->ne[0] == 1 && x->ne[2] == 1 && n >= 1 && h >= 1 && w >= 1 && (int64_t) n * h * w <= x->ne[3]);
    struct vae_tensor * t = graph_node(g, VAE_OP_UNTOKENS, n, x->ne[1], h, w);
    t->src[0] = x;
    t->i[0]   = n;
    t->i[1]   = h;
    t->i[2]   = w;
    t->name   = x->name;
    return t;
}

struct vae_tensor * vae_graph_rope(struct vae_graph * g, struct vae_tensor * qkv, int hd, int rd, float theta,
                                   float eps, int n, int h, int w) {
    assert(qkv->ne[0] == 1 && qkv->ne[2] == 1 && hd > 0 && (qkv->ne[1] / 3) % hd == 0 && qkv->ne[1] % 3 == 0);
    assert(rd >= 0 && rd <= hd && rd % 6 == 0 && theta > 0.0f && eps >= 0.0f);
    assert(n >= 1 && h >= 1 && w >= 1 && (int64_t) n * h * w <= qkv->ne[3]);
    struct vae_tensor * t = graph_node(g, VAE_OP_ROPE, 1, qkv->ne[1], 1, qkv->ne[3]);
    t->src[0] = qkv;
    t->i[0]   = hd;
    t->i[1]   = rd;
    t->i[2]   = n;
    t->i[3]   = h;
    t->i[4]   = w;
    t->f[0]   = eps;
    t->f[1]   = theta;
    t->name   = qkv->name;
    return t;
}

struct vae_tensor * vae_graph_crossfade(struct vae_graph * g, struct vae_tensor * x, int slot, int pre, int keep, int d) {
    assert(slot >= 0 && pre >= 0 && keep >= d && d >= 1 && pre + keep <= x->ne[0] && d <= x->ne[0]);
    struct vae_tensor * t = graph_node(g, VAE_OP_CROSSFADE, keep + d, x->ne[1], x->ne[2], x->ne[3]);
    t->src[0] = x;
    t->i[0]   = slot;
    t->i[1]   = pre;
    t->i[2]   = keep;
    t->i[3]   = d;
    t->name   = x->name;
    if (slot >= g->n_states) {
        g->n_states = slot + 1;
    }
    return t;
}

void vae_graph_set_output(struct vae_graph * g, struct vae_tensor * t) {
    g->output = t;
}

const char * vae_op_name(enum vae_op op) {
    static const char * names[VAE_OP_COUNT] = {
        [VAE_OP_INPUT] = "input",           [VAE_OP_WEIGHT] = "weight",
        [VAE_OP_TANH_CLAMP] = "tanh_clamp", [VAE_OP_CONV2D] = "conv2d",
        [VAE_OP_UPSAMPLE_CONV2D] = "upsample_conv2d", [VAE_OP_UPSAMPLE2X] = "upsample2x",
        [VAE_OP_GROUP_NORM] = "group_norm", [VAE_OP_CAUSAL_CONV3D] = "causal_conv3d",
        [VAE_OP_RMS_NORM] = "rms_norm",     [VAE_OP_ATTENTION] = "attention",
        [VAE_OP_CAUSAL_ATTENTION] = "causal_attention",
        [VAE_OP_LINEAR_ATTENTION] = "linear_attention", [VAE_OP_GLU] = "glu",
        [VAE_OP_FRAME_SPLIT] = "frame_split", [VAE_OP_PIXEL_SHUFFLE] = "pixel_shuffle",
        [VAE_OP_DEPTHWISE_CONV2D] = "depthwise_conv2d", [VAE_OP_TIME_CONV] = "time_conv",
        [VAE_OP_DELAY] = "delay", [VAE_OP_TOKENS] = "tokens", [VAE_OP_UNTOKENS] = "untokens",
        [VAE_OP_ROPE] = "rope", [VAE_OP_CROSSFADE] = "crossfade",
    };
    return op < VAE_OP_COUNT ? names[op] : "?";
}
