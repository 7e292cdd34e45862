// The CPU backend: the numerical reference (fp32) and a decoder fast enough to use. Convolutions
// run through oneDNN on all cores, in the NHWC layout end to end (the one oneDNN 3 picks for
// them at every ISA, see vae-cpu.h), with bias, residual
// (a sum post-op into the residual's own buffer) and activation fused into the primitive. The
// nearest-2x upsample followed by a 3x3 conv runs as one stride-2 4x4 deconvolution whose kernel
// is the 3x3 kernel summed over the taps each output phase sees: exact, and 4/9 of the work.
// A causal conv3d runs as one 2-D convolution per time tap, each reading its input shifted by a
// frame; the frames remembered from earlier steps (the state) are copied into room the planner
// leaves in front of the input, so no tap ever reads a concatenated copy. A causal conv that reads
// the frame's edge pixels outside it (HunyuanVideo 1.5's) runs without padding on a copy of its
// input and history padded by those pixels, in the scratch (f32 at every precision). A causal
// attention's key/value cache is state that grows with the stream, up to the state's limit.
// At precision bf16 (only where oneDNN's ISA has AVX512-BF16 or AMX: elsewhere oneDNN emulates
// it, slower than fp32) convolutions take bf16 inputs and weights and accumulate in f32. What
// passes from a convolution or a norm to convolutions and norms only (a TAESD block's convs and
// residual, a norm into its conv, a resnet's output into the next one's norm and residual) is
// stored in bf16, the norm reading and writing it so, and a causal conv's remembered frames are
// bf16: such a convolution reads its input as it is (cpu_plan_types). A convolution
// whose input is f32 (the latents, an attention's output) converts it into the scratch just before
// it runs. Norm statistics, attention, softmax and everything else read and write f32.
// All activations live in one arena whose offsets are planned from tensor lifetimes at prepare
// time, so the peak is known before the first frame. Converted weights are shared by every graph
// of the backend that uses the same tensor in the same layout (the steps of one stream).
// A graph's cancel flag is read before every node and between the attention's blocks of query
// rows; a oneDNN primitive, once started, runs to its end (the longest node bounds how soon a
// compute stops).

#include "vae-backend-impl.h"
#include "vae-cpu.h"
#include "vae-plan.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CPU_ALIGN 64

#define CPU_MAX_TAPS 3   // time taps of a causal conv (Wan: 3, TAEHV: 2)
#define CPU_MAX_MDS  (2 + 2 * CPU_MAX_TAPS + 2) // a node's memory descriptions: weights, bias, a time conv's
                                                //   source and output per tap, a bf16 conversion's two

// weights converted to one primitive layout, shared by the graphs that use them
struct cpu_weights {
    const float *        src;         // the model's tensor: its data and name (the pair identifies it: a
    const char *         name;        //   model may free its data once graphs are prepared and make it again)
    int                  tap;         // time tap of a conv3d weight (0 for conv2d)
    bool                 fold;        // folded for the fused nearest-2x upsample
    dnnl_memory_desc_t   md;
    float *              data;
    int                  refs;
    struct cpu_weights * next;
};

struct cpu_context {
    dnnl_data_type_t     conv_type;   // of convolution inputs and weights: f32 or bf16 (see the top)
    bool                 amx;         // oneDNN's ISA has AMX (its bf16 convolutions: no Winograd)
    dnnl_engine_t        engine;
    dnnl_stream_t        stream;
    struct cpu_weights * weights;
    char                 name[128];
};

// what one node needs at run time
struct cpu_node {
    size_t               offset;                // of its output in the arena, in floats
    bool                 bf16;                  // its output is stored in bf16 (cpu_plan_types)
    int                  n_taps;                // convolutions: primitives run one after another
    dnnl_primitive_t     prim[CPU_MAX_TAPS];
    dnnl_memory_t        src[CPU_MAX_TAPS], wei[CPU_MAX_TAPS], bias, dst;
    dnnl_memory_t        dst_tap[CPU_MAX_TAPS];  // time conv: the output frames each tap adds to
    dnnl_primitive_t     to_bf16;                // bf16: an f32 input into the scratch, after the room of its state frames
    dnnl_memory_t        to_bf16_from, to_bf16_to;
    struct cpu_weights * weights[CPU_MAX_TAPS];
    struct vae_cpu_winograd wino;               // a conv by Winograd's F(2x2, 3x3): its matrix products
    float *              bias_data;             // a copy: oneDNN takes non-const handles
    float *              params;                // a norm's gamma, then beta, or a depthwise conv's weights,
                                                //   then bias: copies (weights' data is not read after prepare)
    bool                 copy_residual;         // the residual is still needed later: copy it into dst first
    dnnl_memory_desc_t   mds[CPU_MAX_MDS];      // the memory descriptions its primitives were made with
    int                  n_mds;
};

struct cpu_graph {
    float *           arena;
    size_t            arena_floats;
    float *           scratch;        // for the op running now (attention; a bf16 conv's input)
    size_t            scratch_floats;
    struct cpu_node * nodes;
};

// a causal attention's slot: the keys, then the values, of `frames` frames of hw positions, token-major
// ([positions, c] each, room for `cap` frames), then the score rows (VAE_CPU_CAUSAL_ROWS x cap hw)
struct cpu_kv {
    int64_t c, hw, frames, cap;
};

// by slot: the remembered frames of each causal conv, [kt - 1, Cin, H, W] NHWC (a slot that no
// compute has written since the reset holds zeros, or for a replicating op nothing yet), and the
// input frames it has seen (seen); or a delay's frames; or a causal attention's cache (kv[slot].c
// > 0), which grows up to `limit` bytes of the whole state. end: the stream's latent frames, -1
// while not known
struct vae_state {
    int             n_slots;
    size_t *        floats;
    float **        data;
    bool *          written;
    int64_t *       seen;
    struct cpu_kv * kv;
    size_t          limit;
    int64_t         end;
};

#define CPU_DNNL(call, what)                                                                          \
    do {                                                                                              \
        dnnl_status_t st_ = (call);                                                                   \
        if (st_ != dnnl_success) {                                                                    \
            snprintf(err, err_size, "oneDNN could not %s for %s: %s", what, t->name ? t->name : "?", \
                     dnnl_status2str(st_));                                                           \
            return false;                                                                             \
        }                                                                                             \
    } while (0)

static const char * cpu_get_name(vae_backend_t * backend) {
    return ((struct cpu_context *) backend->context)->name;
}

static void cpu_free(vae_backend_t * backend) {
    struct cpu_context * ctx = backend->context;
    dnnl_stream_destroy(ctx->stream);
    dnnl_engine_destroy(ctx->engine);
    free(ctx);
    free(backend);
}

static void * cpu_alloc(size_t bytes) {
    void * p = NULL;
    if (posix_memalign(&p, CPU_ALIGN, bytes ? bytes : CPU_ALIGN) != 0) {
        return NULL;
    }
    return p;
}

static float * cpu_node_data(struct cpu_graph * cg, const struct vae_tensor * t) {
    return cg->arena + cg->nodes[t->index].offset;
}

// bytes of one element of t's output: 2 when stored in bf16
static size_t cpu_elem(const struct cpu_graph * cg, const struct vae_tensor * t) {
    return cg->nodes[t->index].bf16 ? sizeof(uint16_t) : sizeof(float);
}

// elements of one frame of t
static size_t cpu_frame_elems(const struct vae_tensor * t) {
    return (size_t) t->ne[1] * (size_t) t->ne[2] * (size_t) t->ne[3];
}

static bool cpu_is_conv(const struct vae_tensor * t) {
    return t->op == VAE_OP_CONV2D || t->op == VAE_OP_UPSAMPLE_CONV2D || t->op == VAE_OP_CAUSAL_CONV3D;
}

static bool cpu_is_norm(const struct vae_tensor * t) {
    return t->op == VAE_OP_GROUP_NORM || t->op == VAE_OP_RMS_NORM;
}

static bool cpu_conv_replicates(const struct vae_tensor * t);

// whether conv t reads bf16 (and its weights are bf16): every conv at precision bf16 but those that
// read a padded copy of their input (f32)
static bool cpu_conv_bf16(const struct cpu_context * ctx, const struct vae_tensor * t) {
    return ctx->conv_type == dnnl_bf16 && cpu_is_conv(t) && !cpu_conv_replicates(t);
}

// whether conv t runs by Winograd's F(2x2, 3x3) (vae-cpu-winograd.c) instead of a oneDNN
// convolution: a 3x3 conv or causal conv's spatial taps, one group, reading no padded copy, at
// least CPU_WINOGRAD_CHANNELS channels in and out (fp32: at 64 the transforms cost more than the
// products they save, 0.9x oneDNN's time; 1.3x at 96, 1.5-1.7x at 128-512); in bf16 not where
// oneDNN has AMX: its tile products run 16x AVX-512's fp32 rate per core, so the transforms (f32
// vector code) would cost more than the products saved (not measured: no AMX here)
#define CPU_WINOGRAD_CHANNELS 96

static bool cpu_conv_winograd(const struct cpu_context * ctx, const struct vae_tensor * t) {
    return (ctx->conv_type == dnnl_f32 || !ctx->amx) && (t->op == VAE_OP_CONV2D || t->op == VAE_OP_CAUSAL_CONV3D) &&
           !cpu_conv_replicates(t) && t->src[1]->ne[t->src[1]->n_dims - 1] == 3 && vae_conv_groups(t) == 1 &&
           t->src[0]->ne[1] >= CPU_WINOGRAD_CHANNELS && t->ne[1] >= CPU_WINOGRAD_CHANNELS;
}

// bytes a causal conv remembers: its last kt - 1 input frames, bf16 where it reads bf16; a delay's
// d frames; a cross-fade's d output frames
static size_t cpu_history_bytes(const struct cpu_context * ctx, const struct vae_tensor * t) {
    return t->op == VAE_OP_CROSSFADE ? (size_t) t->i[3] * cpu_frame_elems(t) * sizeof(float)
           : t->op == VAE_OP_DELAY   ? (size_t) t->i[1] * cpu_frame_elems(t->src[0]) * sizeof(float)
                                     : (size_t) (t->src[1]->ne[2] - 1) * cpu_frame_elems(t->src[0]) *
                                         (cpu_conv_bf16(ctx, t) ? sizeof(uint16_t) : sizeof(float));
}

// floats of the state slot that holds them
static size_t cpu_state_floats(const struct cpu_context * ctx, const struct vae_tensor * t) {
    return (cpu_history_bytes(ctx, t) + sizeof(float) - 1) / sizeof(float);
}

// whether op t keeps frames in a state slot of cpu_state_floats
static bool cpu_holds_frames(const struct vae_tensor * t) {
    return t->op == VAE_OP_CAUSAL_CONV3D || t->op == VAE_OP_DELAY || t->op == VAE_OP_CROSSFADE;
}

// the frames a conv reads in front of its input: a causal conv's history, kt - 1, or kt/2 copies of
// the first frame when a centred conv starts its stream (see VAE_OP_CAUSAL_CONV3D); 0 for the others
static int64_t cpu_conv_front(const struct vae_tensor * t) {
    const int64_t kt = t->src[1]->ne[2];
    return t->op != VAE_OP_CAUSAL_CONV3D ? 0 : t->i[1] & VAE_CENTRED_START ? kt / 2 : kt - 1;
}

// whether conv t reads the nearest edge pixel, or the mirror one, outside the frame: it runs on a
// padded copy of its input in the scratch (in f32 at every precision), with no padding of its own
static bool cpu_conv_replicates(const struct vae_tensor * t) {
    return t->op == VAE_OP_CAUSAL_CONV3D && (t->i[1] & (VAE_CAUSAL_REPLICATE | VAE_CAUSAL_REFLECT));
}

// floats of that copy: the frames the taps read, each 2 pixels wider and higher
static size_t cpu_replicate_floats(const struct vae_tensor * t) {
    const struct vae_tensor * x = t->src[0];
    return (size_t) (cpu_conv_front(t) + x->ne[0]) * (size_t) x->ne[1] * (size_t) (x->ne[2] + 2) *
           (size_t) (x->ne[3] + 2);
}

// ---- memory plan ------------------------------------------------------------------------------

// at precision bf16, the tensors stored in bf16: a conv's or a norm's output that only convs
// reading bf16 and norms read, as their input or as the residual of a conv whose output is bf16
// too (it writes over it); never the graph's output. Whatever else reads a tensor wants it in f32.
static void cpu_plan_types(const struct cpu_context * ctx, const struct vae_graph * g, struct cpu_graph * cg) {
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        cg->nodes[i].bf16           = ctx->conv_type == dnnl_bf16 && t != g->output &&
                            (cpu_conv_bf16(ctx, t) || cpu_is_norm(t));
    }
    for (bool changed = true; changed;) { // (each pass only turns some to f32: it ends)
        changed = false;
        for (int i = 0; i < g->n_nodes; i++) {
            const struct vae_tensor * u = g->nodes[i];
            for (int k = 0; k < VAE_MAX_SRC; k++) {
                const struct vae_tensor * s = u->src[k];
                if (!s || s->op == VAE_OP_WEIGHT || !cg->nodes[s->index].bf16) {
                    continue;
                }
                const bool reads_bf16 = (k == 0 && (cpu_conv_bf16(ctx, u) || cpu_is_norm(u))) ||
                                        (k == 3 && cpu_is_conv(u) && cg->nodes[i].bf16);
                if (!reads_bf16) {
                    cg->nodes[s->index].bf16 = false;
                    changed                  = true;
                }
            }
            if (cg->nodes[i].bf16 && cpu_is_conv(u) && u->src[3] && !cg->nodes[u->src[3]->index].bf16) {
                cg->nodes[i].bf16 = false; // (its residual is f32: so is the conv that writes over it)
                changed           = true;
            }
        }
    }
}

// the arena plan (vae-plan.c) with the CPU's sizes: NHWC tensors (f32 or bf16, cpu_plan_types),
// room in front of each causal conv's input for its state frames where the conv reads it there
// (whole CPU_ALIGN units, so that the input stays aligned); norms (but from f32 to bf16), RoPE and
// tanh-clamp run in place, a conv writes over its residual
static bool cpu_plan(const struct cpu_context * ctx, struct vae_graph * g, struct cpu_graph * cg, char * err,
                     size_t err_size) {
    const int              n    = g->n_nodes;
    struct vae_plan_node * plan = calloc((size_t) n, sizeof(*plan));
    if (!plan) {
        snprintf(err, err_size, "out of host memory planning %d nodes", n);
        return false;
    }
    cpu_plan_types(ctx, g, cg);
    for (int i = 0; i < n; i++) {
        const struct vae_tensor * t = g->nodes[i];
        if (t->op != VAE_OP_CAUSAL_CONV3D) {
            continue;
        }
        const size_t state = (cpu_history_bytes(ctx, t) + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
        if (state > plan[t->src[0]->index].front && cg->nodes[t->src[0]->index].bf16 == cpu_conv_bf16(ctx, t)) {
            plan[t->src[0]->index].front = state;
        }
    }
    for (int i = 0; i < n; i++) {
        const struct vae_tensor * t    = g->nodes[i];
        const bool                conv = t->op == VAE_OP_CONV2D || t->op == VAE_OP_CAUSAL_CONV3D;
        plan[i].bytes                  = vae_cpu_nelements(t->ne) * cpu_elem(cg, t);
        if (conv && t->src[3] && t->src[0] != t->src[3]) {
            plan[i].heir_of = t->src[3];
        } else if (t->op == VAE_OP_TANH_CLAMP || t->op == VAE_OP_ROPE ||
                   (cpu_is_norm(t) && cg->nodes[i].bf16 == cg->nodes[t->src[0]->index].bf16)) {
            plan[i].heir_of = t->src[0];
        }
    }

    size_t bytes;
    if (!vae_plan_arena(g, plan, CPU_ALIGN, &bytes)) {
        free(plan);
        snprintf(err, err_size, "out of host memory planning %d nodes", n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        const struct vae_tensor * t = g->nodes[i];
        cg->nodes[i].offset         = plan[i].offset / sizeof(float);
        cg->nodes[i].copy_residual  = !plan[i].inherited && t->src[3] &&
                                     (t->op == VAE_OP_CONV2D || t->op == VAE_OP_CAUSAL_CONV3D);
    }
    cg->arena_floats = bytes / sizeof(float);
    free(plan);
    return true;
}

// ---- convolutions -----------------------------------------------------------------------------

// the 4x4 stride-2 deconvolution kernel equal to nearest-2x then this 3x3 kernel: per axis,
// transposed tap k sees the 3x3 taps S(k) = {2}, {1,2}, {0,1}, {0}
static void cpu_fold_upsample_kernel(const float * w3, float * w4, int64_t cout, int64_t cin) {
    static const int lo[4] = { 2, 1, 0, 0 }, hi[4] = { 2, 2, 1, 0 };
    for (int64_t oi = 0; oi < cout * cin; oi++) {
        const float * k3 = w3 + oi * 9;
        float *       k4 = w4 + oi * 16;
        for (int ky = 0; ky < 4; ky++) {
            for (int kx = 0; kx < 4; kx++) {
                float s = 0.0f;
                for (int dy = lo[ky]; dy <= hi[ky]; dy++) {
                    for (int dx = lo[kx]; dx <= hi[kx]; dx++) {
                        s += k3[dy * 3 + dx];
                    }
                }
                k4[ky * 4 + kx] = s;
            }
        }
    }
}

// the weights of one tap in the primitive's layout md (of 3 dims: transformed for Winograd's
// matmul, vae_cpu_winograd_weights): found among those already converted, or made from the
// model's tensor (its time tap `tap`, folded for the upsample when `fold`)
static struct cpu_weights * cpu_weights_get(struct cpu_context * ctx, const struct vae_tensor * w, int tap, bool fold,
                                            const_dnnl_memory_desc_t md) {
    for (struct cpu_weights * e = ctx->weights; e; e = e->next) {
        if (e->src == w->data && e->name == w->name && e->tap == tap && e->fold == fold &&
            dnnl_memory_desc_equal(e->md, md)) {
            e->refs++;
            return e;
        }
    }
    // [Cout, Cin] of this tap; a grouped conv's (md of 5 dims) [Cout, Cin / G] read as goihw [G, Cout / G, Cin / G]
    int           ndims   = 0;
    dnnl_dims_t * md_dims = NULL;
    dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims);
    dnnl_memory_desc_query(md, dnnl_query_dims, &md_dims);
    const bool    grouped = ndims == 5, wino = ndims == 3;
    const int64_t cout = w->ne[0], cin = w->ne[1], kt = w->n_dims == 5 ? w->ne[2] : 1, k = w->ne[w->n_dims - 1];
    const int64_t kd   = fold ? 4 : k;
    const dnnl_dims_t    dims  = { cout, cin, kd, kd };
    const dnnl_dims_t    gdims = { grouped ? (*md_dims)[0] : 1, grouped ? (*md_dims)[1] : cout, cin, kd, kd };
    const dnnl_dims_t    wdims = { 16, cin, cout };
    dnnl_memory_desc_t   plain_md = NULL;
    struct cpu_weights * e        = calloc(1, sizeof(*e));
    float *              plain    = cpu_alloc((size_t) (cout * cin * (wino ? 16 : kd * kd)) * sizeof(float));
    float *              tmp      = cpu_alloc((size_t) (cout * cin * k * k) * sizeof(float));
    dnnl_status_t        st       = e && plain && tmp ? dnnl_success : dnnl_out_of_memory;
    if (st == dnnl_success) {
        e->data = cpu_alloc(dnnl_memory_desc_get_size(md));
        st      = !e->data  ? dnnl_out_of_memory
                  : wino    ? dnnl_memory_desc_create_with_tag(&plain_md, 3, wdims, dnnl_f32, dnnl_abc)
                  : grouped ? dnnl_memory_desc_create_with_tag(&plain_md, 5, gdims, dnnl_f32, dnnl_goihw)
                            : dnnl_memory_desc_create_with_tag(&plain_md, 4, dims, dnnl_f32, dnnl_oihw);
    }
    if (st == dnnl_success) {
        // oihw of this tap: [Cout, Cin, kt, k, k] -> [Cout, Cin, k, k]
        for (int64_t oi = 0; oi < cout * cin; oi++) {
            memcpy(tmp + oi * k * k, w->data + (oi * kt + tap) * k * k, (size_t) (k * k) * sizeof(float));
        }
        if (wino) {
            vae_cpu_winograd_weights(tmp, plain, cin, cout);
        } else if (fold) {
            cpu_fold_upsample_kernel(tmp, plain, cout, cin);
        } else {
            memcpy(plain, tmp, (size_t) (cout * cin * k * k) * sizeof(float));
        }
    }
    dnnl_memory_t         from = NULL, to = NULL;
    dnnl_primitive_desc_t rpd  = NULL;
    dnnl_primitive_t      reorder = NULL;
    if (st == dnnl_success) st = dnnl_memory_create(&from, plain_md, ctx->engine, plain);
    if (st == dnnl_success) st = dnnl_memory_create(&to, md, ctx->engine, e->data);
    if (st == dnnl_success) st = dnnl_reorder_primitive_desc_create(&rpd, plain_md, ctx->engine, md, ctx->engine, NULL);
    if (st == dnnl_success) st = dnnl_memory_desc_clone(&e->md, md);
    if (st == dnnl_success) st = dnnl_primitive_create(&reorder, rpd);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to } };
        st = dnnl_primitive_execute(reorder, ctx->stream, 2, args);
        if (st == dnnl_success) st = dnnl_stream_wait(ctx->stream);
    }
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(from);
    dnnl_memory_destroy(to);
    dnnl_memory_desc_destroy(plain_md);
    free(plain);
    free(tmp);
    if (st != dnnl_success) {
        if (e) {
            free(e->data);
            dnnl_memory_desc_destroy(e->md);
        }
        free(e);
        return NULL;
    }
    e->src      = w->data;
    e->name     = w->name;
    e->tap      = tap;
    e->fold     = fold;
    e->refs     = 1;
    e->next     = ctx->weights;
    ctx->weights = e;
    return e;
}

static void cpu_weights_put(struct cpu_context * ctx, struct cpu_weights * w) {
    if (!w || --w->refs > 0) {
        return;
    }
    for (struct cpu_weights ** p = &ctx->weights; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    dnnl_memory_desc_destroy(w->md);
    free(w->data);
    free(w);
}

// a memory description for the node's primitives, kept with the node until its graph is released
static dnnl_status_t cpu_node_md(struct cpu_node * node, dnnl_memory_desc_t * md, int ndims, const dnnl_dims_t dims,
                                 dnnl_data_type_t type, dnnl_format_tag_t tag) {
    dnnl_status_t st = node->n_mds < CPU_MAX_MDS ? dnnl_memory_desc_create_with_tag(md, ndims, dims, type, tag)
                                                 : dnnl_out_of_memory;
    if (st == dnnl_success) {
        node->mds[node->n_mds++] = *md;
    }
    return st;
}

// bf16: the reorder that converts the f32 input of conv t into the scratch, after room for the
// state frames the conv reads in front of it (cpu_conv_front), where its taps read it
static bool cpu_prepare_to_bf16(struct cpu_context * ctx, struct cpu_graph * cg, const struct vae_tensor * t,
                                int64_t cin, char * err, size_t err_size) {
    struct cpu_node *         node = &cg->nodes[t->index];
    const struct vae_tensor * x    = t->src[0];
    const dnnl_dims_t         dims = { x->ne[0], cin, x->ne[2], x->ne[3] };
    dnnl_memory_desc_t        from_md, to_md;
    dnnl_primitive_desc_t     pd = NULL;
    CPU_DNNL(cpu_node_md(node, &from_md, 4, dims, dnnl_f32, dnnl_nhwc), "describe the input");
    CPU_DNNL(cpu_node_md(node, &to_md, 4, dims, dnnl_bf16, dnnl_nhwc), "describe the bf16 input");
    dnnl_status_t st = dnnl_memory_create(&node->to_bf16_from, from_md, ctx->engine, cpu_node_data(cg, x));
    if (st == dnnl_success) {
        st = dnnl_memory_create(&node->to_bf16_to, to_md, ctx->engine,
                                (uint16_t *) cg->scratch + (size_t) cpu_conv_front(t) * cpu_frame_elems(x));
    }
    if (st == dnnl_success) st = dnnl_reorder_primitive_desc_create(&pd, from_md, ctx->engine, to_md, ctx->engine, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&node->to_bf16, pd);
    dnnl_primitive_desc_destroy(pd);
    CPU_DNNL(st, "prepare the conversion to bf16");
    return true;
}

// one primitive per time tap (one for a 2-D conv): tap j reads the input from j - front frames
// (cpu_conv_front) on, into the room in front of it (an f32 input of a bf16 conv: into its bf16
// copy in the scratch), as many frames as the output has; the first tap adds the bias (and the
// residual copied into dst), the later ones add into dst, the last applies the activation
static bool cpu_prepare_conv(struct cpu_context * ctx, struct cpu_graph * cg, const struct vae_tensor * t, char * err,
                             size_t err_size) {
    struct cpu_node *         node = &cg->nodes[t->index];
    const struct vae_tensor * x = t->src[0], *w = t->src[1], *b = t->src[2];
    const bool                up = t->op == VAE_OP_UPSAMPLE_CONV2D;
    const int                 kt = t->op == VAE_OP_CAUSAL_CONV3D ? (int) w->ne[2] : 1;
    const int64_t             k  = w->ne[w->n_dims - 1], kd = up ? 4 : k, G = vae_conv_groups(t);
    const bool                rep  = cpu_conv_replicates(t);
    const dnnl_data_type_t    type = cpu_conv_bf16(ctx, t) ? dnnl_bf16 : dnnl_f32;
    const bool                copy = type == dnnl_bf16 && !cg->nodes[x->index].bf16; // (converted in the scratch)
    // the true channel counts (a grouped conv: oneDNN's groups, weights [G, Cout / G, Cin / G, k, k])
    const int64_t     cin = x->ne[1], cout = t->ne[1];
    const int64_t     front     = cpu_conv_front(t);
    const dnnl_dims_t src_dims  = { t->ne[0], cin, x->ne[2] + (rep ? 2 : 0), x->ne[3] + (rep ? 2 : 0) };
    const dnnl_dims_t dst_dims  = { t->ne[0], cout, t->ne[2], t->ne[3] };
    const dnnl_dims_t wei_dims  = { cout, cin, kd, kd };
    const dnnl_dims_t gwei_dims = { G, cout / G, cin / G, kd, kd };
    const dnnl_dims_t bias_dims = { cout };
    const dnnl_dims_t strides   = { up ? 2 : 1, up ? 2 : 1 };
    const dnnl_dims_t pad       = { up ? 1 : rep ? 0 : k / 2, up ? 1 : rep ? 0 : k / 2 }, dilates = { 0, 0 };
    if (kt > CPU_MAX_TAPS) {
        snprintf(err, err_size, "%s: %d time taps, the cpu backend takes at most %d", t->name, kt, CPU_MAX_TAPS);
        return false;
    }

    dnnl_memory_desc_t src_md, dst_md, wei_any, bias_md;
    CPU_DNNL(cpu_node_md(node, &src_md, 4, src_dims, type, dnnl_nhwc), "describe the source");
    CPU_DNNL(cpu_node_md(node, &dst_md, 4, dst_dims, node->bf16 ? dnnl_bf16 : dnnl_f32, dnnl_nhwc),
             "describe the output");
    CPU_DNNL(cpu_node_md(node, &wei_any, G > 1 ? 5 : 4, G > 1 ? gwei_dims : wei_dims, type, dnnl_format_tag_any),
             "describe the weights");
    CPU_DNNL(cpu_node_md(node, &bias_md, 1, bias_dims, dnnl_f32, dnnl_a), "describe the bias");
    if (b) {
        node->bias_data = cpu_alloc((size_t) cout * sizeof(float));
        if (!node->bias_data) {
            snprintf(err, err_size, "out of host memory for the bias of %s", t->name);
            return false;
        }
        memcpy(node->bias_data, b->data, (size_t) b->ne[0] * sizeof(float));
        CPU_DNNL(dnnl_memory_create(&node->bias, bias_md, ctx->engine, node->bias_data), "describe the bias");
    }
    node->n_taps = kt;
    if (cpu_conv_winograd(ctx, t)) { // (cpu_run_conv calls vae_cpu_winograd_conv per tap)
        CPU_DNNL(vae_cpu_winograd_init(&node->wino, ctx->engine, type, cin, cout, x->ne[3]),
                 "set up the Winograd convolution's matrix products");
        for (int j = 0; j < kt; j++) {
            if (!(node->weights[j] = cpu_weights_get(ctx, w, j, false, vae_cpu_winograd_weights_md(&node->wino)))) {
                snprintf(err, err_size, "out of host memory for the weights of %s", t->name);
                return false;
            }
        }
        return !copy || cpu_prepare_to_bf16(ctx, cg, t, cin, err, err_size);
    }
    CPU_DNNL(dnnl_memory_create(&node->dst, dst_md, ctx->engine, cpu_node_data(cg, t)), "describe the output");

    for (int j = 0; j < kt; j++) {
        dnnl_primitive_attr_t attr;
        dnnl_post_ops_t       po;
        CPU_DNNL(dnnl_primitive_attr_create(&attr), "create attributes");
        CPU_DNNL(dnnl_post_ops_create(&po), "create post-ops");
        if (j > 0 || t->src[3]) {
            dnnl_post_ops_append_sum(po, 1.0f, 0, dnnl_data_type_undef);
        }
        // (oneDNN 2.6's deconvolution with an eltwise post-op is 10x slower than without: 155 ms
        // against 15 for one TAEHV frame; and with a bias it takes a scratchpad the size of its
        // output: 1 GiB for SDXL's last upsample at 1024x1024. Bias and activation of the
        // upsample run after it instead.)
        if (!up && j == kt - 1 && t->act == VAE_ACT_RELU) {
            dnnl_post_ops_append_eltwise(po, dnnl_eltwise_relu, 0.0f, 0.0f);
        } else if (!up && j == kt - 1 && t->act == VAE_ACT_SILU) {
            dnnl_post_ops_append_eltwise(po, dnnl_eltwise_swish, 1.0f, 0.0f);
        }
        dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);

        const_dnnl_memory_desc_t bmd = b && j == 0 && !up ? bias_md : NULL;
        dnnl_primitive_desc_t    pd  = NULL;
        dnnl_status_t            st  = up ? dnnl_deconvolution_forward_primitive_desc_create(
                                     &pd, ctx->engine, dnnl_forward_inference, dnnl_deconvolution_direct, src_md,
                                     wei_any, bmd, dst_md, strides, dilates, pad, pad, attr)
                                          : dnnl_convolution_forward_primitive_desc_create(
                                     &pd, ctx->engine, dnnl_forward_inference, dnnl_convolution_direct, src_md,
                                     wei_any, bmd, dst_md, strides, dilates, pad, pad, attr);
        dnnl_primitive_attr_destroy(attr);
        CPU_DNNL(st, "set up the convolution");

        const_dnnl_memory_desc_t wei_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        node->weights[j] = cpu_weights_get(ctx, w, j, up, wei_md);
        st = node->weights[j] ? dnnl_success : dnnl_out_of_memory;
        const size_t padded = rep ? cpu_replicate_floats(t) / (size_t) (front + x->ne[0]) : 0;
        const size_t tap    = ((int64_t) j - front) * (int64_t) cpu_frame_elems(x); // (elements from x's start)
        void *       src    = rep    ? (void *) (cg->scratch + (size_t) j * padded)
                              : copy ? (void *) ((uint16_t *) cg->scratch + (size_t) j * cpu_frame_elems(x))
                              : type == dnnl_bf16 ? (void *) ((uint16_t *) cpu_node_data(cg, x) + tap)
                                                  : (void *) (cpu_node_data(cg, x) + tap);
        if (st == dnnl_success) st = dnnl_memory_create(&node->wei[j], wei_md, ctx->engine, node->weights[j]->data);
        if (st == dnnl_success) st = dnnl_memory_create(&node->src[j], src_md, ctx->engine, src);
        if (st == dnnl_success) st = dnnl_primitive_create(&node->prim[j], pd);
        dnnl_primitive_desc_destroy(pd);
        CPU_DNNL(st, "prepare the weights and the convolution");
    }
    return !copy || cpu_prepare_to_bf16(ctx, cg, t, cin, err, err_size);
}

// a norm's gamma and beta [C] (an RMS norm's beta when it has one), or a depthwise conv's weights
// [C, k, k] and bias [C] (zeros when it has none), copied
static bool cpu_prepare_params(struct cpu_graph * cg, const struct vae_tensor * t, char * err, size_t err_size) {
    struct cpu_node * node = &cg->nodes[t->index];
    const size_t      c    = (size_t) t->ne[1];
    // (a depthwise conv's k x k taps per channel, a token op's extra rows)
    const size_t      kk   = t->op == VAE_OP_DEPTHWISE_CONV2D ? (size_t) (t->src[1]->ne[2] * t->src[1]->ne[3])
                             : t->op == VAE_OP_TOKENS      ? (size_t) t->src[1]->ne[0]
                                                           : 1;
    const int         n    = (t->op == VAE_OP_RMS_NORM && !t->src[2]) || t->op == VAE_OP_TOKENS ? 1 : 2;
    if (!(node->params = calloc((kk + (size_t) n - 1) * c, sizeof(float)))) {
        snprintf(err, err_size, "out of host memory for the weights of %s", t->name);
        return false;
    }
    for (int j = 0; j < n; j++) {
        if (t->src[1 + j]) {
            memcpy(node->params + (size_t) j * c * kk, t->src[1 + j]->data, (j ? 1 : kk) * c * sizeof(float));
        }
    }
    for (size_t i = 0; !t->src[1] && i < c; i++) { // (an RMS norm without gamma: ones)
        node->params[i] = 1.0f;
    }
    return true;
}

// a time conv as one 1x1 convolution per tap over the frames it reaches: tap k (offset
// d = k - kt/2) takes input frames [a + d, a + d + m) to output frames [a, a + m), a = max(0, -d),
// m = N - |d| (zero frames add nothing). The centre tap, over every frame, runs first with the
// bias (over the residual copied into y); the others add into y. f32 at every precision.
static bool cpu_prepare_time_conv(struct cpu_context * ctx, struct cpu_graph * cg, const struct vae_tensor * t,
                                  char * err, size_t err_size) {
    struct cpu_node *         node = &cg->nodes[t->index];
    const struct vae_tensor * x = t->src[0], *w = t->src[1], *b = t->src[2];
    const int                 kt   = (int) w->ne[2];
    const int64_t cin = x->ne[1], cout = t->ne[1];
    const dnnl_dims_t  wei_dims = { cout, cin, 1, 1 }, bias_dims = { cout }, ones = { 1, 1 }, zeros = { 0, 0 };
    dnnl_memory_desc_t wei_any, bias_md;
    if (kt > CPU_MAX_TAPS) {
        snprintf(err, err_size, "%s: %d time taps, the cpu backend takes at most %d", t->name, kt, CPU_MAX_TAPS);
        return false;
    }
    CPU_DNNL(cpu_node_md(node, &wei_any, 4, wei_dims, dnnl_f32, dnnl_format_tag_any), "describe the weights");
    CPU_DNNL(cpu_node_md(node, &bias_md, 1, bias_dims, dnnl_f32, dnnl_a), "describe the bias");
    if (b && !(node->bias_data = calloc((size_t) cout, sizeof(float)))) {
        snprintf(err, err_size, "out of host memory for the bias of %s", t->name);
        return false;
    }
    if (b) {
        memcpy(node->bias_data, b->data, (size_t) b->ne[0] * sizeof(float));
        CPU_DNNL(dnnl_memory_create(&node->bias, bias_md, ctx->engine, node->bias_data), "describe the bias");
    }
    for (int j = 0; j < kt; j++) {
        const int     k = (j + kt / 2) % kt, d = k - kt / 2; // the centre first
        const int64_t a = d < 0 ? -d : 0, m = x->ne[0] - (d < 0 ? -d : d);
        if (m <= 0) {
            continue;
        }
        const dnnl_dims_t     src_dims = { m, cin, x->ne[2], x->ne[3] }, dst_dims = { m, cout, x->ne[2], x->ne[3] };
        dnnl_memory_desc_t    src_md, dst_md;
        dnnl_primitive_attr_t attr;
        dnnl_post_ops_t       po;
        CPU_DNNL(cpu_node_md(node, &src_md, 4, src_dims, dnnl_f32, dnnl_nhwc), "describe the source");
        CPU_DNNL(cpu_node_md(node, &dst_md, 4, dst_dims, dnnl_f32, dnnl_nhwc), "describe the output");
        CPU_DNNL(dnnl_primitive_attr_create(&attr), "create attributes");
        CPU_DNNL(dnnl_post_ops_create(&po), "create post-ops");
        if (j > 0 || t->src[3]) {
            dnnl_post_ops_append_sum(po, 1.0f, 0, dnnl_data_type_undef);
        }
        dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
        dnnl_primitive_desc_t pd = NULL;
        dnnl_status_t         st = dnnl_convolution_forward_primitive_desc_create(
            &pd, ctx->engine, dnnl_forward_inference, dnnl_convolution_direct, src_md, wei_any,
            b && j == 0 ? bias_md : NULL, dst_md, ones, zeros, zeros, zeros, attr);
        dnnl_primitive_attr_destroy(attr);
        CPU_DNNL(st, "set up the convolution");
        const_dnnl_memory_desc_t wei_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        const int                  n      = node->n_taps++;
        node->weights[n]                  = cpu_weights_get(ctx, w, k, false, wei_md);
        st = node->weights[n] ? dnnl_success : dnnl_out_of_memory;
        if (st == dnnl_success) st = dnnl_memory_create(&node->wei[n], wei_md, ctx->engine, node->weights[n]->data);
        if (st == dnnl_success) {
            st = dnnl_memory_create(&node->src[n], src_md, ctx->engine,
                                    cpu_node_data(cg, x) + (size_t) (a + d) * cpu_frame_elems(x));
        }
        if (st == dnnl_success) {
            st = dnnl_memory_create(&node->dst_tap[n], dst_md, ctx->engine,
                                    cpu_node_data(cg, t) + (size_t) a * cpu_frame_elems(t));
        }
        if (st == dnnl_success) st = dnnl_primitive_create(&node->prim[n], pd);
        dnnl_primitive_desc_destroy(pd);
        CPU_DNNL(st, "prepare the weights and the convolution");
    }
    return true;
}

static void cpu_graph_release(vae_backend_t * backend, struct vae_graph * g) {
    struct cpu_graph * cg = g->backend_data;
    for (int i = 0; i < g->n_nodes; i++) {
        struct cpu_node * node = &cg->nodes[i];
        for (int j = 0; j < CPU_MAX_TAPS; j++) {
            dnnl_primitive_destroy(node->prim[j]);
            dnnl_memory_destroy(node->src[j]);
            dnnl_memory_destroy(node->wei[j]);
            dnnl_memory_destroy(node->dst_tap[j]);
            cpu_weights_put(backend->context, node->weights[j]);
        }
        vae_cpu_winograd_release(&node->wino);
        dnnl_memory_destroy(node->bias);
        dnnl_memory_destroy(node->dst);
        dnnl_primitive_destroy(node->to_bf16);
        dnnl_memory_destroy(node->to_bf16_from);
        dnnl_memory_destroy(node->to_bf16_to);
        for (int j = 0; j < node->n_mds; j++) {
            dnnl_memory_desc_destroy(node->mds[j]);
        }
        free(node->bias_data);
        free(node->params);
    }
    free(cg->nodes);
    free(cg->arena);
    free(cg->scratch);
    free(cg);
    g->backend_data = NULL;
    g->peak_bytes   = 0;
}

// ---- the memory a graph may take -----------------------------------------------------------

// the number after `key` in the file at `path` (NULL: its first token); false when there is none
// ("max", a missing file)
static bool cpu_read_number(const char * path, const char * key, unsigned long long * v) {
    char   line[256];
    FILE * f  = fopen(path, "r");
    bool   ok = false;
    while (f && !ok && fgets(line, sizeof(line), f)) {
        const size_t k = key ? strlen(key) : 0;
        ok             = (!key || strncmp(line, key, k) == 0) && sscanf(line + k, "%llu", v) == 1;
    }
    if (f) {
        fclose(f);
    }
    return ok;
}

// the files of a cgroup's memory controller, v2 and v1: the limit, the usage, and in the
// statistics the inactive page cache, which the usage counts but the kernel reclaims first
struct cpu_cgroup_files {
    const char * limit, *usage, *stat_inactive;
};

static const struct cpu_cgroup_files cpu_cgroup_v2 = { "memory.max", "memory.current", "inactive_file " };
static const struct cpu_cgroup_files cpu_cgroup_v1 = { "memory.limit_in_bytes", "memory.usage_in_bytes",
                                                       "total_inactive_file " };

// the least room (limit - usage + inactive cache) of the cgroup at `dir` and of its parents down
// to the hierarchy's root, the first `top` characters of dir (which is cut)
static size_t cpu_cgroup_room(char * dir, size_t top, const struct cpu_cgroup_files * cf) {
    size_t room = SIZE_MAX;
    for (;;) {
        char               file[1100];
        unsigned long long limit, usage, inactive = 0;
        snprintf(file, sizeof(file), "%s/%s", dir, cf->limit);
        bool ok = cpu_read_number(file, NULL, &limit);
        snprintf(file, sizeof(file), "%s/%s", dir, cf->usage);
        ok = ok && cpu_read_number(file, NULL, &usage);
        snprintf(file, sizeof(file), "%s/memory.stat", dir);
        if (ok && cpu_read_number(file, cf->stat_inactive, &inactive) && inactive < usage) {
            usage -= inactive;
        }
        if (ok) {
            const unsigned long long r = limit > usage ? limit - usage : 0;
            room                       = r < room ? (size_t) r : room;
        }
        char * slash = strrchr(dir, '/');
        if (!slash || (size_t) (slash - dir) < top) {
            return room;
        }
        *slash = 0;
    }
}

size_t vae_cpu_available_memory(const char * root) {
    char               path[1024], line[1024];
    unsigned long long kb;
    const long         pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    size_t             avail = pages > 0 && page > 0 ? (size_t) pages * (size_t) page : SIZE_MAX;
    snprintf(path, sizeof(path), "%s/proc/meminfo", root);
    if (cpu_read_number(path, "MemAvailable:", &kb)) { // (Linux >= 3.14; physical memory before)
        avail = (size_t) kb * 1024;
    }
    // this process's cgroups, "0::/path" (v2) and "N:memory,...:/path" (v1); the path is relative
    // to the hierarchy's root, which a container may mount at its own cgroup: the walk up reaches it
    snprintf(path, sizeof(path), "%s/proc/self/cgroup", root);
    FILE * f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f)) {
        char * ctl = strchr(line, ':');
        char * dir = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!dir) {
            continue;
        }
        *dir++ = 0;
        dir[strcspn(dir, "\n")] = 0;
        const bool v2  = ctl[1] == 0;
        const bool v1  = !v2 && strstr(ctl + 1, "memory") != NULL;
        const int  top = snprintf(path, sizeof(path), "%s/sys/fs/cgroup%s", root, v1 ? "/memory" : "");
        if ((v1 || v2) && top + strlen(dir) < sizeof(path)) {
            strcat(path, strcmp(dir, "/") ? dir : "");
            const size_t room = cpu_cgroup_room(path, (size_t) top, v2 ? &cpu_cgroup_v2 : &cpu_cgroup_v1);
            avail             = room < avail ? room : avail;
        }
    }
    if (f) {
        fclose(f);
    }
    // an eighth is kept back: MemAvailable is the kernel's estimate (caches it counts as
    // reclaimable may not all come back), and a decode takes more than its graph's plan counts:
    // oneDNN's scratchpads, the streaming state, the frames and latents the pipeline holds
    return avail == SIZE_MAX ? avail : avail - avail / 8;
}

static size_t cpu_memory(vae_backend_t * backend) {
    (void) backend;
    return vae_cpu_available_memory("");
}

static bool cpu_graph_prepare(vae_backend_t * backend, struct vae_graph * g, size_t max_bytes, char * err,
                              size_t err_size) {
    struct cpu_context * ctx = backend->context;
    struct cpu_graph *   cg  = calloc(1, sizeof(*cg));
    if (!cg || !(cg->nodes = calloc((size_t) g->n_nodes, sizeof(*cg->nodes)))) {
        free(cg);
        snprintf(err, err_size, "out of host memory preparing the graph");
        return false;
    }
    if (!cpu_plan(ctx, g, cg, err, err_size)) {
        free(cg->nodes);
        free(cg);
        return false;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        size_t                    n = 0;
        if (t->op == VAE_OP_ATTENTION) {
            n = vae_cpu_attention_scratch(t->src[0]->ne, t->i[0]);
        } else if (t->op == VAE_OP_CAUSAL_ATTENTION) {
            n = vae_cpu_causal_attention_scratch(t->src[0]->ne);
        } else if (cpu_conv_replicates(t)) {
            n = cpu_replicate_floats(t);
        } else if (cpu_conv_bf16(ctx, t) && !cg->nodes[t->src[0]->index].bf16) {
            const size_t frames = (size_t) (cpu_conv_front(t) + t->src[0]->ne[0]);
            n = (frames * cpu_frame_elems(t->src[0]) + 1) / 2; // bf16: 2 per float
        }
        cg->scratch_floats = n > cg->scratch_floats ? n : cg->scratch_floats;
    }
    size_t weight_bytes = 0;
    for (int i = 0; i < g->n_weights; i++) {
        size_t n = 1;
        for (int d = 0; d < VAE_MAX_DIMS; d++) {
            n *= (size_t) g->weights[i]->ne[d];
        }
        weight_bytes += n * sizeof(float);
    }
    g->arena_bytes     = (cg->arena_floats + cg->scratch_floats) * sizeof(float);
    const size_t need  = g->arena_bytes + weight_bytes;
    const size_t limit = vae_backend_limit(backend, max_bytes);
    if (need > limit) {
        char a[32], b[32];
        snprintf(err, err_size,
                 "decoding [%lld, %lld, %lld, %lld] needs %s of activations and weights, above the %s %s",
                 (long long) g->input->ne[0], (long long) g->input->ne[1], (long long) g->input->ne[2],
                 (long long) g->input->ne[3], vae_backend_bytes_str(a, (double) need),
                 vae_backend_bytes_str(b, (double) limit),
                 max_bytes ? "memory limit" : "of memory available (7/8 of MemAvailable or of the cgroup's room)");
        free(cg->nodes);
        free(cg);
        return false;
    }
    cg->arena   = cpu_alloc(cg->arena_floats * sizeof(float));
    cg->scratch = cpu_alloc(cg->scratch_floats * sizeof(float));
    if (!cg->arena || !cg->scratch) {
        snprintf(err, err_size, "could not allocate the %.1f MiB activation arena", need / 1048576.0);
        free(cg->arena);
        free(cg->scratch);
        free(cg->nodes);
        free(cg);
        return false;
    }
    // (not zeroed: its pages are committed by the decode that uses them, not at caps time; every
    // op writes all it produces before anything reads it)
    g->backend_data = cg;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        const bool conv   = cpu_is_conv(t);
        const bool params = cpu_is_norm(t) ||
                            t->op == VAE_OP_DEPTHWISE_CONV2D || (t->op == VAE_OP_TOKENS && t->src[1]);
        if ((conv && !cpu_prepare_conv(ctx, cg, t, err, err_size)) ||
            (params && !cpu_prepare_params(cg, t, err, err_size)) ||
            (t->op == VAE_OP_TIME_CONV && !cpu_prepare_time_conv(ctx, cg, t, err, err_size))) {
            cpu_graph_release(backend, g);
            return false;
        }
    }
    g->peak_bytes = need;
    return true;
}

static void cpu_state_reset(vae_backend_t * backend, vae_state_t * st) {
    (void) backend;
    for (int i = 0; i < st->n_slots; i++) {
        if (st->kv[i].c) { // (a cache gives its room back: the next stream may be shorter)
            free(st->data[i]);
            st->data[i]      = NULL;
            st->floats[i]    = 0;
            st->kv[i].frames = st->kv[i].cap = 0;
        } else {
            memset(st->data[i], 0, st->floats[i] * sizeof(float));
        }
        st->written[i] = false;
        st->seen[i]    = 0;
    }
    st->end = -1;
}

static void cpu_state_set_end(vae_backend_t * backend, vae_state_t * st, int64_t latents) {
    (void) backend;
    st->end = latents;
}

static void cpu_state_set_limit(vae_backend_t * backend, vae_state_t * st, size_t bytes) {
    (void) backend;
    st->limit = bytes;
}

static size_t cpu_state_bytes(vae_backend_t * backend, const vae_state_t * st) {
    size_t n = 0;
    (void) backend;
    for (int i = 0; i < st->n_slots; i++) {
        n += st->floats[i] * sizeof(float);
    }
    return n;
}

static void cpu_state_free(vae_backend_t * backend, vae_state_t * st) {
    (void) backend;
    for (int i = 0; st->data && i < st->n_slots; i++) {
        free(st->data[i]);
    }
    free(st->data);
    free(st->floats);
    free(st->written);
    free(st->seen);
    free(st->kv);
    free(st);
}

static vae_state_t * cpu_state_new(vae_backend_t * backend, const struct vae_graph * g, char * err, size_t err_size) {
    struct vae_state * st = calloc(1, sizeof(*st));
    bool               ok = st && (st->floats = calloc((size_t) g->n_states, sizeof(size_t))) &&
              (st->data = calloc((size_t) g->n_states, sizeof(float *))) &&
              (st->written = calloc((size_t) g->n_states, sizeof(bool))) &&
              (st->seen = calloc((size_t) g->n_states, sizeof(int64_t))) &&
              (st->kv = calloc((size_t) g->n_states, sizeof(struct cpu_kv)));
    if (ok) {
        st->n_slots = g->n_states;
        st->end     = -1;
        for (int i = 0; i < g->n_nodes; i++) {
            const struct vae_tensor * t = g->nodes[i];
            if (cpu_holds_frames(t)) {
                st->floats[t->i[0]] = cpu_state_floats(backend->context, t);
            } else if (t->op == VAE_OP_CAUSAL_ATTENTION) { // (empty: it grows as frames come)
                st->kv[t->i[0]] = (struct cpu_kv) { t->ne[1], t->ne[2] * t->ne[3], 0, 0 };
            }
        }
        // zeros from calloc: large slots are fresh pages, committed as the stream first writes them
        for (int i = 0; ok && i < st->n_slots; i++) {
            ok = (st->data[i] = calloc(st->floats[i] ? st->floats[i] : 1, sizeof(float))) != NULL;
        }
    }
    if (!ok) {
        snprintf(err, err_size, "out of host memory for the streaming state of %d causal ops", g->n_states);
        if (st) {
            cpu_state_free(backend, st);
        }
        return NULL;
    }
    return st;
}

// room for n more frames in the cache of causal attention t (slot i[0]), grown to twice what it
// held or to the frames needed, as the limit allows; false when even those do not fit (nothing changed)
static bool cpu_kv_room(const struct vae_tensor * t, vae_state_t * st, int64_t n, char * err, size_t err_size) {
    struct cpu_kv * kv   = &st->kv[t->i[0]];
    const int64_t   need = kv->frames + n;
    if (need <= kv->cap) {
        return true;
    }
    const size_t  per = (size_t) (kv->hw * (2 * kv->c + VAE_CPU_CAUSAL_ROWS)) * sizeof(float);
    const int64_t cap = vae_backend_kv_room(t, kv->cap, need, per, cpu_state_bytes(NULL, st) -
                                            st->floats[t->i[0]] * sizeof(float), st->limit, err, err_size);
    if (cap < 0) {
        return false;
    }
    const size_t tok = (size_t) kv->hw * (size_t) kv->c, floats = (size_t) cap * per / sizeof(float);
    float *      d   = cpu_alloc(floats * sizeof(float));
    if (!d) {
        char a[32];
        snprintf(err, err_size, "out of host memory for the key/value cache of %s: %s for %lld frames",
                 t->name ? t->name : "?", vae_backend_bytes_str(a, (double) (floats * sizeof(float))), (long long) cap);
        return false;
    }
    if (kv->frames) { // the keys, then the values, at the new room's offsets
        memcpy(d, st->data[t->i[0]], (size_t) kv->frames * tok * sizeof(float));
        memcpy(d + (size_t) cap * tok, st->data[t->i[0]] + (size_t) kv->cap * tok,
               (size_t) kv->frames * tok * sizeof(float));
    }
    free(st->data[t->i[0]]);
    st->data[t->i[0]]   = d;
    st->floats[t->i[0]] = floats;
    kv->cap             = cap;
    return true;
}

// causal attention t: the cache takes this compute's frames, each attending to those before it
static bool cpu_run_causal_attention(struct cpu_graph * cg, const struct vae_tensor * t, vae_state_t * st,
                                     const int * cancel) {
    struct cpu_kv * kv  = &st->kv[t->i[0]];
    float *         k   = st->data[t->i[0]];
    const size_t    tok = (size_t) kv->cap * (size_t) kv->hw * (size_t) kv->c;
    const bool      ok  = vae_cpu_causal_attention(cpu_node_data(cg, t->src[0]), cpu_node_data(cg, t), t->src[0]->ne,
                                                   cg->scratch, k, k + tok, kv->frames, k + 2 * tok, cancel);
    kv->frames += ok ? t->ne[0] : 0;
    return ok;
}

// in front of a causal conv's input x (frames of `frame` bytes, f32 or bf16 as its state): its
// remembered frames, or on a replicating op's first run since the reset, kt - 1 copies of x's
// first frame (a centred conv starting its stream: kt/2)
static void cpu_causal_history(const struct cpu_context * ctx, const struct vae_tensor * t, vae_state_t * state,
                               char * x, size_t frame) {
    const size_t hist = cpu_history_bytes(ctx, t), front = (size_t) cpu_conv_front(t) * frame;
    if ((t->i[1] & VAE_CENTRED_START) || ((t->i[1] & VAE_CAUSAL_FIRST_FRAME) && !state->written[t->i[0]])) {
        for (size_t at = front; at > 0; at -= frame) {
            memcpy(x - at, x, frame);
        }
    } else {
        memcpy(x - hist, state->data[t->i[0]], hist);
    }
    // a centred conv past its stream's last frame: that frame, copied over the frames after it (the
    // frame in front of x is one already when it is older)
    const int64_t last = vae_centred_last(t, state->end, state->seen[t->i[0]]);
    for (int64_t k = last < -1 ? 0 : last + 1; k < t->src[0]->ne[0]; k++) {
        memcpy(x + (size_t) k * frame, x + (last < -1 ? -1 : last) * (int64_t) frame, frame);
    }
    state->seen[t->i[0]] += t->src[0]->ne[0];
}

// x delayed through its slot (VAE_OP_DELAY): y = [held, x] from frame d on when the stream
// starts, else from frame 0, as many frames as y has; then the slot keeps the d frames that follow
static void cpu_run_delay(struct cpu_graph * cg, const struct vae_tensor * t, vae_state_t * state) {
    const size_t  frame = cpu_frame_elems(t->src[0]), d = (size_t) t->i[1], n = (size_t) t->src[0]->ne[0];
    const size_t  at    = t->i[2] & VAE_CENTRED_START ? d : 0; // [held, x] frame of y's frame 0
    const float * x     = cpu_node_data(cg, t->src[0]);
    float *       y     = cpu_node_data(cg, t), *held = state->data[t->i[0]];
    for (size_t f = 0; f < (size_t) t->ne[0]; f++) {
        const size_t k = at + f;
        memcpy(y + f * frame, k < d ? held + k * frame : x + (k - d) * frame, frame * sizeof(float));
    }
    if (n >= d) { // the last d frames of [held, x]
        memcpy(held, x + (n - d) * frame, d * frame * sizeof(float));
    } else {
        memmove(held, held + n * frame, (d - n) * frame * sizeof(float));
        memcpy(held + (d - n) * frame, x, n * frame * sizeof(float));
    }
}

// a chunk's frames cross-faded with those its slot holds (VAE_OP_CROSSFADE); then the slot holds x's last d
static void cpu_run_crossfade(struct cpu_graph * cg, const struct vae_tensor * t, vae_state_t * state) {
    const size_t  frame = cpu_frame_elems(t), pre = (size_t) t->i[1], keep = (size_t) t->i[2], d = (size_t) t->i[3];
    const float * x = cpu_node_data(cg, t->src[0]);
    float *       y = cpu_node_data(cg, t), *held = state->data[t->i[0]];
    const size_t  faded = state->written[t->i[0]] ? d : 0;
    vae_cpu_crossfade(held, x + pre * frame, y, frame, (int) faded);
    memcpy(y + faded * frame, x + (pre + faded) * frame, (keep - faded) * frame * sizeof(float));
    memcpy(y + keep * frame, x + ((size_t) t->src[0]->ne[0] - d) * frame, d * frame * sizeof(float));
    memcpy(held, y + keep * frame, d * frame * sizeof(float));
    state->written[t->i[0]] = true;
}

// the taps of a convolution; a causal conv first puts its history in front of its input and
// afterwards remembers the last kt - 1 frames of [history, input]
static bool cpu_run_conv(struct cpu_context * ctx, struct cpu_graph * cg, const struct vae_tensor * t,
                         vae_state_t * state, char * err, size_t err_size) {
    struct cpu_node *         node = &cg->nodes[t->index];
    const struct vae_tensor * in   = t->src[0];
    float *                   y    = cpu_node_data(cg, t);
    const size_t              hist = t->op == VAE_OP_CAUSAL_CONV3D ? cpu_history_bytes(ctx, t) : 0;
    const bool                up   = t->op == VAE_OP_UPSAMPLE_CONV2D;
    // where the taps read the input, with its state frames in front: in place, or the bf16 copy
    const size_t frame = cpu_frame_elems(in) * (cpu_conv_bf16(ctx, t) ? sizeof(uint16_t) : sizeof(float));
    char *       x     = node->to_bf16 ? (char *) cg->scratch + (size_t) cpu_conv_front(t) * frame
                                       : (char *) cpu_node_data(cg, in);
    if (node->to_bf16) {
        dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, node->to_bf16_from }, { DNNL_ARG_TO, node->to_bf16_to } };
        CPU_DNNL(dnnl_primitive_execute(node->to_bf16, ctx->stream, 2, args), "convert the input to bf16");
        CPU_DNNL(dnnl_stream_wait(ctx->stream), "convert the input to bf16");
    }
    if (hist) {
        cpu_causal_history(ctx, t, state, x, frame);
    }
    if (cpu_conv_replicates(t)) {
        const int64_t front = cpu_conv_front(t);
        const int64_t ne[4] = { front + in->ne[0], in->ne[1], in->ne[2], in->ne[3] };
        vae_cpu_replicate_pad((float *) x - (size_t) front * cpu_frame_elems(in), cg->scratch, ne,
                              (t->i[1] & VAE_CAUSAL_REFLECT) != 0);
    }
    if (node->copy_residual) {
        memcpy(y, cpu_node_data(cg, t->src[3]), vae_cpu_nelements(t->ne) * cpu_elem(cg, t));
    }
    const bool wino = node->wino.mm[0] != NULL; // (prepared so by cpu_conv_winograd)
    for (int j = 0; wino && j < node->n_taps; j++) { // tap j from j - front frames on, adding from the second
        const int64_t ne[4] = { t->ne[0], in->ne[1], in->ne[2], in->ne[3] };
        CPU_DNNL(vae_cpu_winograd_conv(&node->wino, x + ((int64_t) j - cpu_conv_front(t)) * (int64_t) frame, y,
                                       node->bf16, ne, node->weights[j]->data, j == 0 ? node->bias_data : NULL,
                                       j > 0 || t->src[3], j == node->n_taps - 1 ? t->act : VAE_ACT_NONE),
                 "run the Winograd convolution");
    }
    for (int j = 0; !wino && j < node->n_taps; j++) {
        dnnl_exec_arg_t args[4] = {
            { DNNL_ARG_SRC, node->src[j] },
            { DNNL_ARG_WEIGHTS, node->wei[j] },
            { DNNL_ARG_DST, node->dst },
            { DNNL_ARG_BIAS, node->bias },
        };
        CPU_DNNL(dnnl_primitive_execute(node->prim[j], ctx->stream, node->bias && j == 0 && !up ? 4 : 3, args),
                 "run the convolution");
    }
    if (up && (t->act != VAE_ACT_NONE || node->bias_data)) {
        CPU_DNNL(dnnl_stream_wait(ctx->stream), "run the convolution");
        vae_cpu_bias_act(y, t->ne, node->bias_data, t->act, node->bf16);
    }
    if (hist) {
        memcpy(state->data[t->i[0]], x + (size_t) in->ne[0] * frame - hist, hist);
        state->written[t->i[0]] = true;
    }
    return true;
}

// the taps of a time conv into y (over the residual), then its activation
static bool cpu_run_time_conv(struct cpu_context * ctx, struct cpu_graph * cg, const struct vae_tensor * t, char * err,
                              size_t err_size) {
    struct cpu_node * node = &cg->nodes[t->index];
    float *           y    = cpu_node_data(cg, t);
    if (t->src[3]) {
        memcpy(y, cpu_node_data(cg, t->src[3]), vae_cpu_nelements(t->ne) * sizeof(float));
    }
    for (int j = 0; j < node->n_taps; j++) {
        dnnl_exec_arg_t args[4] = {
            { DNNL_ARG_SRC, node->src[j] },
            { DNNL_ARG_WEIGHTS, node->wei[j] },
            { DNNL_ARG_DST, node->dst_tap[j] },
            { DNNL_ARG_BIAS, node->bias },
        };
        CPU_DNNL(dnnl_primitive_execute(node->prim[j], ctx->stream, node->bias && j == 0 ? 4 : 3, args),
                 "run the convolution");
    }
    if (t->act != VAE_ACT_NONE) {
        CPU_DNNL(dnnl_stream_wait(ctx->stream), "run the convolution");
        vae_cpu_bias_act(y, t->ne, NULL, t->act, false);
    }
    return true;
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double) ts.tv_sec + 1e-6 * (double) ts.tv_nsec;
}

static bool cpu_graph_compute(vae_backend_t * backend, struct vae_graph * g, vae_state_t * state,
                              const float * const * inputs, char * err, size_t err_size) {
    struct cpu_context * ctx = backend->context;
    struct cpu_graph *   cg  = g->backend_data;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        if (cpu_holds_frames(t) &&
            (t->i[0] >= state->n_slots || state->kv[t->i[0]].c ||
             state->floats[t->i[0]] != cpu_state_floats(ctx, t))) {
            snprintf(err, err_size, "the state given has no slot %d of %zu floats for %s", t->i[0],
                     cpu_state_floats(ctx, t), t->name);
            return false;
        }
        if (t->op == VAE_OP_CAUSAL_ATTENTION &&
            (t->i[0] >= state->n_slots || state->kv[t->i[0]].c != t->ne[1] ||
             state->kv[t->i[0]].hw != t->ne[2] * t->ne[3])) {
            snprintf(err, err_size, "the state given has no key/value cache %d of %lld channels at %lldx%lld for %s",
                     t->i[0], (long long) t->ne[1], (long long) t->ne[3], (long long) t->ne[2], t->name);
            return false;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) { // (before anything runs: a cache that cannot grow changes nothing)
        if (g->nodes[i]->op == VAE_OP_CAUSAL_ATTENTION && !cpu_kv_room(g->nodes[i], state, g->nodes[i]->ne[0], err, err_size)) {
            return false;
        }
    }
    bool   stopped = false;
    double t0      = g->node_ms ? cpu_ms() : 0.0;
    for (int i = 0; i < g->n_nodes && !(stopped = stopped || vae_graph_cancelled(g)); i++) {
        if (i > 0 && g->node_ms) { // (node i - 1 ends when the stream has run it)
            dnnl_stream_wait(ctx->stream);
            const double t1    = cpu_ms();
            g->node_ms[i - 1] = (float) (t1 - t0);
            t0                 = t1;
        }
        const struct vae_tensor * t = g->nodes[i];
        float *                   y = cpu_node_data(cg, t);
        const float *             x = t->src[0] ? cpu_node_data(cg, t->src[0]) : NULL;
        switch (t->op) {
            case VAE_OP_INPUT:
                vae_cpu_to_nhwc(inputs[t->i[0]], y, t->ne);
                break;
            case VAE_OP_TANH_CLAMP:
                vae_cpu_tanh_clamp(x, y, vae_cpu_nelements(t->ne), t->f[0]);
                break;
            case VAE_OP_UPSAMPLE2X:
                vae_cpu_upsample2x(x, y, t->src[0]->ne);
                break;
            case VAE_OP_GROUP_NORM:
                // (a [1, C, 1, 1] tensor has element c at offset c: the stats are a plain vector)
                vae_cpu_group_norm(x, y, t->ne, t->i[0], t->f[0], cg->nodes[i].params, cg->nodes[i].params + t->ne[1],
                                   t->act, t->src[3] ? cpu_node_data(cg, t->src[3]) : NULL, t->i[1] == 1,
                                   cg->nodes[t->src[0]->index].bf16, cg->nodes[i].bf16);
                break;
            case VAE_OP_RMS_NORM:
                vae_cpu_rms_norm(x, y, t->ne, cg->nodes[i].params, t->src[2] ? cg->nodes[i].params + t->ne[1] : NULL,
                                 t->src[3] ? cpu_node_data(cg, t->src[3]) : NULL, t->i[0], t->f[0], t->act,
                                 cg->nodes[t->src[0]->index].bf16, cg->nodes[i].bf16);
                break;
            case VAE_OP_ATTENTION: // (the longest node at large sizes: it reads the flag between its row blocks)
                stopped = !vae_cpu_attention(x, y, t->src[0]->ne, t->i[0], cg->scratch, g->cancel);
                break;
            case VAE_OP_CAUSAL_ATTENTION:
                stopped = !cpu_run_causal_attention(cg, t, state, g->cancel);
                break;
            case VAE_OP_LINEAR_ATTENTION:
                vae_cpu_linear_attention(x, y, t->src[0]->ne, t->i[0]);
                break;
            case VAE_OP_GLU:
                vae_cpu_glu(x, y, t->src[0]->ne, t->act);
                break;
            case VAE_OP_FRAME_SPLIT:
                vae_cpu_frame_split(x, y, t->src[0]->ne, t->i[0], t->i[1]);
                break;
            case VAE_OP_PIXEL_SHUFFLE:
                vae_cpu_pixel_shuffle(x, y, t->src[0]->ne);
                break;
            case VAE_OP_DELAY:
                cpu_run_delay(cg, t, state);
                break;
            case VAE_OP_CROSSFADE:
                cpu_run_crossfade(cg, t, state);
                break;
            case VAE_OP_TOKENS:
                vae_cpu_tokens(x, y, t->src[0]->ne, cg->nodes[i].params, t->src[1] ? t->src[1]->ne[0] : 0, t->i[0]);
                break;
            case VAE_OP_UNTOKENS:
                vae_cpu_untokens(x, y, t->ne);
                break;
            case VAE_OP_ROPE:
                vae_cpu_rope(x, y, t->ne, t->i[0], t->i[1], t->i + 2, t->f[1], t->f[0]);
                break;
            case VAE_OP_DEPTHWISE_CONV2D: { // (the bias follows the weights, zeros when there is none)
                const int k = (int) t->src[1]->ne[2];
                vae_cpu_depthwise_conv2d(x, y, t->src[0]->ne, t->ne[1] / t->src[0]->ne[1], k, cg->nodes[i].params,
                                         cg->nodes[i].params + t->ne[1] * k * k);
                break;
            }
            case VAE_OP_TIME_CONV:
                if (!cpu_run_time_conv(ctx, cg, t, err, err_size)) {
                    return false;
                }
                break;
            case VAE_OP_CONV2D:
            case VAE_OP_UPSAMPLE_CONV2D:
            case VAE_OP_CAUSAL_CONV3D:
                if (!cpu_run_conv(ctx, cg, t, state, err, err_size)) {
                    return false;
                }
                break;
            default:
                snprintf(err, err_size, "the cpu backend has no op %s", vae_op_name(t->op));
                return false;
        }
    }
    dnnl_status_t st = dnnl_stream_wait(ctx->stream);
    if (st != dnnl_success) {
        snprintf(err, err_size, "oneDNN stream failed: %s", dnnl_status2str(st));
        return false;
    }
    if (g->node_ms && !stopped) {
        g->node_ms[g->n_nodes - 1] = (float) (cpu_ms() - t0);
    }
    if (stopped) {
        snprintf(err, err_size, "%s", VAE_BACKEND_INTERRUPTED);
    }
    return !stopped;
}

static bool cpu_graph_read_frame(vae_backend_t * backend, struct vae_graph * g, int n, const struct vae_frame * dst,
                                 char * err, size_t err_size) {
    struct cpu_graph *        cg  = g->backend_data;
    const struct vae_tensor * out = g->output;
    (void) backend;
    if (dst->device) {
        snprintf(err, err_size, "the cpu backend writes frames to host memory only, not to device memory");
        return false;
    }
    if (dst->width != out->ne[3] || dst->height != out->ne[2]) {
        snprintf(err, err_size, "the frame is %dx%d but the decoder gives %lldx%lld", dst->width, dst->height,
                 (long long) out->ne[3], (long long) out->ne[2]);
        return false;
    }
    vae_frame_pack(cpu_node_data(cg, out) + (size_t) n * cpu_frame_elems(out), out->ne[1], 1, dst);
    return true;
}

static bool cpu_graph_read_output(vae_backend_t * backend, struct vae_graph * g, int first, int count, float * dst,
                                  char * err, size_t err_size) {
    const struct vae_tensor * out = g->output;
    const int64_t             ne[4] = { count, out->ne[1], out->ne[2], out->ne[3] };
    (void) backend, (void) err, (void) err_size;
    vae_cpu_from_nhwc(cpu_node_data(g->backend_data, out) + (size_t) first * cpu_frame_elems(out), dst, ne);
    return true;
}

static const struct vae_backend_i cpu_backend_i = {
    /* .get_name          = */ cpu_get_name,
    /* .free              = */ cpu_free,
    /* .graph_prepare     = */ cpu_graph_prepare,
    /* .memory            = */ cpu_memory,
    /* .state_new         = */ cpu_state_new,
    /* .state_reset       = */ cpu_state_reset,
    /* .state_bytes       = */ cpu_state_bytes,
    /* .state_free        = */ cpu_state_free,
    /* .state_set_limit   = */ cpu_state_set_limit,
    /* .state_set_end     = */ cpu_state_set_end,
    /* .graph_compute     = */ cpu_graph_compute,
    /* .graph_read_frame  = */ cpu_graph_read_frame,
    /* .graph_read_output = */ cpu_graph_read_output,
    /* .graph_release     = */ cpu_graph_release,
    /* .node_impl         = */ NULL,
};

// precision=auto takes bf16 only where oneDNN's bf16 convolutions run at least CPU_BF16_GAIN times
// as fast as its f32 ones. A native bf16 ISA does not say so: AVX512-BF16 without AMX runs them at
// about twice f32's speed on AMD's Zen 4, but at about half of it on a 5th-generation Xeon whose
// AMX the hypervisor hides (TAEF2 at 832x480: 1169 ms a frame in bf16, 629 in fp32). So it is
// measured, once per process: a 3x3 convolution of 128 channels at 64x64 (1.2 GFLOP), NHWC as the
// backend runs them, the best of CPU_PROBE_RUNS runs of each type, interleaved. The margin keeps
// the choice from flipping between runs on a CPU where the two are close.
#define CPU_BF16_GAIN  1.25
#define CPU_PROBE_RUNS 3

static double cpu_bf16_speedup_value; // f32's time over bf16's; 0 where the probe could not run

// ms one run of the probe's conv prim takes (-1 where it failed)
static double cpu_probe_ms(dnnl_primitive_t prim, dnnl_stream_t stream, const dnnl_exec_arg_t * args) {
    const double t0 = cpu_ms();
    if (dnnl_primitive_execute(prim, stream, 3, args) != dnnl_success || dnnl_stream_wait(stream) != dnnl_success) {
        return -1.0;
    }
    return cpu_ms() - t0;
}

static void cpu_bf16_probe(void) {
    const dnnl_dims_t   act = { 1, 128, 64, 64 }, wei = { 128, 128, 3, 3 }, one = { 1, 1 }, pad = { 1, 1 }, no = { 0, 0 };
    dnnl_engine_t       engine = NULL;
    dnnl_stream_t       stream = NULL;
    dnnl_primitive_t    prim[2] = { NULL, NULL };
    dnnl_memory_t       mem[2][3] = { { NULL } };
    void *              buf[2][3] = { { NULL } };
    dnnl_exec_arg_t     args[2][3];
    double              best[2] = { 1e30, 1e30 };
    bool                ok = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
              dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success;
    for (int i = 0; ok && i < 2; i++) { // f32, bf16
        const dnnl_data_type_t type = i ? dnnl_bf16 : dnnl_f32;
        dnnl_memory_desc_t     md[3] = { NULL, NULL, NULL }; // source, weights, output
        dnnl_primitive_desc_t  pd    = NULL;
        ok = dnnl_memory_desc_create_with_tag(&md[0], 4, act, type, dnnl_nhwc) == dnnl_success &&
             dnnl_memory_desc_create_with_tag(&md[1], 4, wei, type, dnnl_format_tag_any) == dnnl_success &&
             dnnl_memory_desc_create_with_tag(&md[2], 4, act, type, dnnl_nhwc) == dnnl_success &&
             dnnl_convolution_forward_primitive_desc_create(&pd, engine, dnnl_forward_inference, dnnl_convolution_direct,
                                                            md[0], md[1], NULL, md[2], one, no, pad, pad,
                                                            NULL) == dnnl_success &&
             dnnl_primitive_create(&prim[i], pd) == dnnl_success;
        for (int k = 0; ok && k < 3; k++) { // zeros: no denormals or NaN to slow either down
            const_dnnl_memory_desc_t q = k == 1 ? dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0) : md[k];
            const size_t             n = dnnl_memory_desc_get_size(q);
            ok = (buf[i][k] = cpu_alloc(n)) && dnnl_memory_create(&mem[i][k], q, engine, buf[i][k]) == dnnl_success;
            if (ok) {
                memset(buf[i][k], 0, n);
            }
            args[i][k] = (dnnl_exec_arg_t) { k == 0 ? DNNL_ARG_SRC : k == 1 ? DNNL_ARG_WEIGHTS : DNNL_ARG_DST, mem[i][k] };
        }
        ok = ok && cpu_probe_ms(prim[i], stream, args[i]) >= 0.0;
        dnnl_primitive_desc_destroy(pd);
        for (int k = 0; k < 3; k++) {
            dnnl_memory_desc_destroy(md[k]);
        }
    }
    for (int r = 0; ok && r < CPU_PROBE_RUNS; r++) {
        for (int i = 0; ok && i < 2; i++) {
            const double ms = cpu_probe_ms(prim[i], stream, args[i]);
            ok      = ms >= 0.0;
            best[i] = ms < best[i] ? ms : best[i];
        }
    }
    cpu_bf16_speedup_value = ok && best[1] > 0.0 ? best[0] / best[1] : 0.0;
    for (int i = 0; i < 2; i++) {
        dnnl_primitive_destroy(prim[i]);
        for (int k = 0; k < 3; k++) {
            dnnl_memory_destroy(mem[i][k]);
            free(buf[i][k]);
        }
    }
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
}

static double cpu_bf16_speedup(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, cpu_bf16_probe);
    return cpu_bf16_speedup_value;
}

vae_backend_t * vae_backend_cpu_init(enum vae_precision precision, char * err, size_t err_size) {
    struct cpu_context * ctx     = calloc(1, sizeof(*ctx));
    vae_backend_t *      backend = calloc(1, sizeof(*backend));
    if (!ctx || !backend) {
        free(ctx);
        free(backend);
        snprintf(err, err_size, "out of host memory");
        return NULL;
    }
    dnnl_status_t st = dnnl_engine_create(&ctx->engine, dnnl_cpu, 0);
    if (st == dnnl_success) {
        st = dnnl_stream_create(&ctx->stream, ctx->engine, dnnl_stream_default_flags);
        if (st != dnnl_success) {
            dnnl_engine_destroy(ctx->engine);
        }
    }
    if (st != dnnl_success) {
        snprintf(err, err_size, "oneDNN could not start on the cpu: %s", dnnl_status2str(st));
        free(ctx);
        free(backend);
        return NULL;
    }
    const dnnl_version_t * v = dnnl_version();
    const dnnl_cpu_isa_t   isa = dnnl_get_effective_cpu_isa();
    const char *           isa_name = dnnl_cpu_isa2str(isa);
    const bool             native   = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
    const double           speedup  = native && precision == VAE_PRECISION_AUTO ? cpu_bf16_speedup() : 0.0;
    const bool bf16 = native && (precision == VAE_PRECISION_BF16 || (precision == VAE_PRECISION_AUTO && speedup >= CPU_BF16_GAIN));
    char       probed[48] = "";
    if (native && precision == VAE_PRECISION_AUTO) {
        snprintf(probed, sizeof(probed), "; bf16 convs %.2fx fp32's speed", speedup);
    }
    ctx->conv_type = bf16 ? dnnl_bf16 : dnnl_f32;
    ctx->amx       = (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
    isa_name += strncmp(isa_name, "cpu_isa_", 8) == 0 ? 8 : 0;
    snprintf(ctx->name, sizeof(ctx->name), "cpu (oneDNN %d.%d.%d, %s, %d threads%s)", v->major, v->minor, v->patch,
             isa_name, omp_get_max_threads(), probed);
    backend->iface     = &cpu_backend_i;
    backend->context   = ctx;
    backend->precision = bf16 ? VAE_PRECISION_BF16 : VAE_PRECISION_FP32;
    return backend;
}
