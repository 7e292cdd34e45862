// The CPU backend: the numerical reference (fp32) and a decoder fast enough to use. Convolutions
// run through oneDNN on all cores, in its blocked nChw16c layout end to end, with bias, residual
// (a sum post-op into the residual's own buffer) and activation fused into the primitive. The
// nearest-2x upsample followed by a 3x3 conv runs as one stride-2 4x4 deconvolution whose kernel
// is the 3x3 kernel summed over the taps each output phase sees: exact, and 4/9 of the work.
// All activations live in one arena whose offsets are planned from tensor lifetimes at prepare
// time, so the peak is known before the first frame.

#include "vae-backend-impl.h"
#include "vae-cpu.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPU_ALIGN 64

struct cpu_context {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    char          name[96];
};

// what one node needs at run time
struct cpu_node {
    size_t           offset;          // of its output in the arena, in floats
    dnnl_primitive_t prim;            // convolutions only
    dnnl_memory_t    src, wei, bias, dst;
    float *          wei_data;        // weights in the primitive's layout (owned)
    float *          bias_data;       // a copy: oneDNN takes non-const handles
    bool             copy_residual;   // the residual is still needed later: copy it into dst first
};

struct cpu_graph {
    float *           arena;
    size_t            arena_floats;
    struct cpu_node * nodes;
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

// ---- memory plan ------------------------------------------------------------------------------

struct cpu_block {
    size_t offset, size; // in floats
    int    owner;        // node index, -1 when free
};

// first fit among the gaps between live blocks, else at the end
static size_t cpu_plan_place(const struct cpu_block * live, int n_live, size_t size) {
    size_t at = 0;
    for (bool moved = true; moved;) {
        moved = false;
        for (int i = 0; i < n_live; i++) {
            if (live[i].owner >= 0 && at < live[i].offset + live[i].size && live[i].offset < at + size) {
                at    = live[i].offset + live[i].size;
                moved = true;
            }
        }
    }
    return at;
}

static bool cpu_plan(struct vae_graph * g, struct cpu_graph * cg, char * err, size_t err_size) {
    const int n     = g->n_nodes;
    int *     last  = malloc((size_t) n * sizeof(int));
    struct cpu_block * live = calloc((size_t) n, sizeof(*live));
    if (!last || !live) {
        free(last);
        free(live);
        snprintf(err, err_size, "out of host memory planning %d nodes", n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        last[i] = i;
    }
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < VAE_MAX_SRC; s++) {
            const struct vae_tensor * src = g->nodes[i]->src[s];
            if (src && src->op != VAE_OP_WEIGHT) {
                last[src->index] = i;
            }
        }
    }
    last[g->output->index] = n; // the output outlives the run
    size_t peak = 0;
    for (int i = 0; i < n; i++) {
        const struct vae_tensor * t    = g->nodes[i];
        const size_t              size = (vae_cpu_nelements(t->ne) + CPU_ALIGN / 4 - 1) / (CPU_ALIGN / 4) * (CPU_ALIGN / 4);
        // in place: the output takes over the block of a source that dies here
        const struct vae_tensor * heir = NULL;
        if (t->op == VAE_OP_CONV2D && t->src[3]) {
            heir = t->src[3];
        } else if (t->op == VAE_OP_TANH_CLAMP || t->op == VAE_OP_GROUP_NORM) {
            heir = t->src[0];
        }
        if (heir && last[heir->index] == i && live[heir->index].size == size &&
            (t->op != VAE_OP_CONV2D || t->src[0] != heir)) {
            live[i]                = live[heir->index];
            live[i].owner          = i;
            live[heir->index].owner = -1;
        } else {
            live[i].size   = size;
            live[i].offset = cpu_plan_place(live, i, size);
            live[i].owner  = i;
            cg->nodes[i].copy_residual = t->op == VAE_OP_CONV2D && t->src[3] != NULL;
        }
        cg->nodes[i].offset = live[i].offset;
        if (live[i].offset + size > peak) {
            peak = live[i].offset + size;
        }
        for (int j = 0; j <= i; j++) { // (j == i: a node nothing reads)
            if (live[j].owner == j && last[j] == i) {
                live[j].owner = -1;
            }
        }
    }
    cg->arena_floats = peak;
    free(last);
    free(live);
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

static bool cpu_prepare_conv(struct cpu_context * ctx, struct vae_graph * g, struct cpu_graph * cg,
                             const struct vae_tensor * t, char * err, size_t err_size) {
    struct cpu_node *         node = &cg->nodes[t->index];
    const struct vae_tensor * x = t->src[0], *w = t->src[1], *b = t->src[2];
    const bool                up = t->op == VAE_OP_UPSAMPLE_CONV2D;
    const int64_t             k = up ? 4 : w->ne[2];
    const dnnl_dims_t src_dims = { x->ne[0], x->ne[1], x->ne[2], x->ne[3] };
    const dnnl_dims_t dst_dims = { t->ne[0], t->ne[1], t->ne[2], t->ne[3] };
    const dnnl_dims_t wei_dims = { w->ne[0], w->ne[1], k, k };
    const dnnl_dims_t bias_dims = { w->ne[0] };
    const dnnl_dims_t strides   = { up ? 2 : 1, up ? 2 : 1 };
    const dnnl_dims_t pad       = { up ? 1 : w->ne[2] / 2, up ? 1 : w->ne[2] / 2 };
    (void) g;

    dnnl_memory_desc_t src_md, dst_md, wei_any, wei_plain, bias_md;
    CPU_DNNL(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, dnnl_f32, dnnl_nChw16c), "describe the source");
    CPU_DNNL(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dnnl_f32, dnnl_nChw16c), "describe the output");
    CPU_DNNL(dnnl_memory_desc_init_by_tag(&wei_any, 4, wei_dims, dnnl_f32, dnnl_format_tag_any), "describe the weights");
    CPU_DNNL(dnnl_memory_desc_init_by_tag(&wei_plain, 4, wei_dims, dnnl_f32, dnnl_oihw), "describe the weights");
    CPU_DNNL(dnnl_memory_desc_init_by_tag(&bias_md, 1, bias_dims, dnnl_f32, dnnl_a), "describe the bias");

    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t       po;
    CPU_DNNL(dnnl_primitive_attr_create(&attr), "create attributes");
    CPU_DNNL(dnnl_post_ops_create(&po), "create post-ops");
    if (t->src[3]) {
        dnnl_post_ops_append_sum(po, 1.0f);
    }
    if (t->act == VAE_ACT_RELU) {
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
    } else if (t->act == VAE_ACT_SILU) {
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_swish, 1.0f, 0.0f);
    }
    dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);

    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t         st;
    if (up) {
        dnnl_deconvolution_desc_t dd;
        st = dnnl_deconvolution_forward_desc_init(&dd, dnnl_forward_inference, dnnl_deconvolution_direct, &src_md,
                                                  &wei_any, b ? &bias_md : NULL, &dst_md, strides, pad, pad);
        if (st == dnnl_success) {
            st = dnnl_primitive_desc_create(&pd, &dd, attr, ctx->engine, NULL);
        }
    } else {
        dnnl_convolution_desc_t cd;
        st = dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src_md,
                                                &wei_any, b ? &bias_md : NULL, &dst_md, strides, pad, pad);
        if (st == dnnl_success) {
            st = dnnl_primitive_desc_create(&pd, &cd, attr, ctx->engine, NULL);
        }
    }
    dnnl_primitive_attr_destroy(attr);
    CPU_DNNL(st, "set up the convolution");

    // weights: PyTorch oihw (folded for the upsample) reordered once into the primitive's layout
    const dnnl_memory_desc_t * wei_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const size_t               n_plain = (size_t) (w->ne[0] * w->ne[1] * k * k);
    float *                    plain   = (float *) w->data;
    float *                    folded  = NULL;
    if (up) {
        folded = cpu_alloc(n_plain * sizeof(float));
        if (!folded) {
            dnnl_primitive_desc_destroy(pd);
            snprintf(err, err_size, "out of host memory for the weights of %s", t->name);
            return false;
        }
        cpu_fold_upsample_kernel(w->data, folded, w->ne[0], w->ne[1]);
        plain = folded;
    }
    node->wei_data = cpu_alloc(dnnl_memory_desc_get_size(wei_md));
    dnnl_memory_t plain_mem = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t      reorder = NULL;
    st = node->wei_data ? dnnl_memory_create(&plain_mem, &wei_plain, ctx->engine, plain) : dnnl_out_of_memory;
    if (st == dnnl_success) st = dnnl_memory_create(&node->wei, wei_md, ctx->engine, node->wei_data);
    if (st == dnnl_success) st = dnnl_reorder_primitive_desc_create(&rpd, &wei_plain, ctx->engine, wei_md, ctx->engine, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&reorder, rpd);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, plain_mem }, { DNNL_ARG_TO, node->wei } };
        st = dnnl_primitive_execute(reorder, ctx->stream, 2, args);
        if (st == dnnl_success) st = dnnl_stream_wait(ctx->stream);
    }
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(plain_mem);
    free(folded);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
    }
    CPU_DNNL(st, "convert the weights");

    if (b) {
        node->bias_data = cpu_alloc((size_t) b->ne[0] * sizeof(float));
        if (node->bias_data) {
            memcpy(node->bias_data, b->data, (size_t) b->ne[0] * sizeof(float));
        }
        st = node->bias_data ? dnnl_memory_create(&node->bias, &bias_md, ctx->engine, node->bias_data) : dnnl_out_of_memory;
    }
    if (st == dnnl_success) st = dnnl_memory_create(&node->src, &src_md, ctx->engine, cpu_node_data(cg, x));
    if (st == dnnl_success) st = dnnl_memory_create(&node->dst, &dst_md, ctx->engine, cpu_node_data(cg, t));
    if (st == dnnl_success) st = dnnl_primitive_create(&node->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    CPU_DNNL(st, "create the convolution");
    return true;
}

static void cpu_release_nodes(struct vae_graph * g, struct cpu_graph * cg) {
    for (int i = 0; i < g->n_nodes; i++) {
        struct cpu_node * node = &cg->nodes[i];
        dnnl_primitive_destroy(node->prim);
        dnnl_memory_destroy(node->src);
        dnnl_memory_destroy(node->wei);
        dnnl_memory_destroy(node->bias);
        dnnl_memory_destroy(node->dst);
        free(node->wei_data);
        free(node->bias_data);
    }
}

static void cpu_graph_release(vae_backend_t * backend, struct vae_graph * g) {
    struct cpu_graph * cg = g->backend_data;
    (void) backend;
    cpu_release_nodes(g, cg);
    free(cg->nodes);
    free(cg->arena);
    free(cg);
    g->backend_data = NULL;
    g->peak_bytes   = 0;
}

static size_t cpu_physical_memory(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (size_t) pages * (size_t) page : SIZE_MAX;
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
    if (!cpu_plan(g, cg, err, err_size)) {
        free(cg->nodes);
        free(cg);
        return false;
    }
    size_t weight_bytes = 0;
    for (int i = 0; i < g->n_weights; i++) {
        weight_bytes += (size_t) (g->weights[i]->ne[0] * g->weights[i]->ne[1] * g->weights[i]->ne[2] * g->weights[i]->ne[3]) * sizeof(float);
    }
    const size_t need  = cg->arena_floats * sizeof(float) + weight_bytes;
    const size_t limit = max_bytes ? max_bytes : cpu_physical_memory();
    if (need > limit) {
        snprintf(err, err_size,
                 "decoding [%lld, %lld, %lld, %lld] needs %.1f MiB of activations and weights, above the %.1f MiB %s",
                 (long long) g->input->ne[0], (long long) g->input->ne[1], (long long) g->input->ne[2],
                 (long long) g->input->ne[3], need / 1048576.0, limit / 1048576.0,
                 max_bytes ? "memory limit" : "of this machine's memory");
        free(cg->nodes);
        free(cg);
        return false;
    }
    cg->arena = cpu_alloc(cg->arena_floats * sizeof(float));
    if (!cg->arena) {
        snprintf(err, err_size, "could not allocate the %.1f MiB activation arena", cg->arena_floats * 4 / 1048576.0);
        free(cg->nodes);
        free(cg);
        return false;
    }
    memset(cg->arena, 0, cg->arena_floats * sizeof(float)); // padding lanes start at zero
    g->backend_data = cg;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t = g->nodes[i];
        if ((t->op == VAE_OP_CONV2D || t->op == VAE_OP_UPSAMPLE_CONV2D) &&
            !cpu_prepare_conv(ctx, g, cg, t, err, err_size)) {
            cpu_graph_release(backend, g);
            return false;
        }
    }
    g->peak_bytes = need;
    return true;
}

static bool cpu_graph_compute(vae_backend_t * backend, struct vae_graph * g, const float * input, char * err,
                              size_t err_size) {
    struct cpu_context * ctx = backend->context;
    struct cpu_graph *   cg  = g->backend_data;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct vae_tensor * t    = g->nodes[i];
        struct cpu_node *         node = &cg->nodes[i];
        float *                   y    = cpu_node_data(cg, t);
        switch (t->op) {
            case VAE_OP_INPUT:
                vae_cpu_to_blocked(input, y, t->ne);
                break;
            case VAE_OP_TANH_CLAMP:
                vae_cpu_tanh_clamp(cpu_node_data(cg, t->src[0]), y, vae_cpu_nelements(t->ne), t->f[0]);
                break;
            case VAE_OP_UPSAMPLE2X:
                vae_cpu_upsample2x(cpu_node_data(cg, t->src[0]), y, t->src[0]->ne);
                break;
            case VAE_OP_GROUP_NORM:
                vae_cpu_group_norm(cpu_node_data(cg, t->src[0]), y, t->ne, t->i[0], t->f[0], t->src[1]->data,
                                   t->src[2]->data, t->act);
                break;
            case VAE_OP_CONV2D:
            case VAE_OP_UPSAMPLE_CONV2D:
                {
                    if (node->copy_residual) {
                        memcpy(y, cpu_node_data(cg, t->src[3]), vae_cpu_nelements(t->ne) * sizeof(float));
                    }
                    dnnl_exec_arg_t args[4] = {
                        { DNNL_ARG_SRC, node->src },
                        { DNNL_ARG_WEIGHTS, node->wei },
                        { DNNL_ARG_DST, node->dst },
                        { DNNL_ARG_BIAS, node->bias },
                    };
                    CPU_DNNL(dnnl_primitive_execute(node->prim, ctx->stream, node->bias ? 4 : 3, args), "run the convolution");
                    break;
                }
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
    return true;
}

static bool cpu_graph_read_frame(vae_backend_t * backend, struct vae_graph * g, int n, const struct vae_frame * dst,
                                 char * err, size_t err_size) {
    struct cpu_graph *        cg  = g->backend_data;
    const struct vae_tensor * out = g->output;
    (void) backend;
    if (dst->width != out->ne[3] || dst->height != out->ne[2]) {
        snprintf(err, err_size, "the frame is %dx%d but the decoder gives %lldx%lld", dst->width, dst->height,
                 (long long) out->ne[3], (long long) out->ne[2]);
        return false;
    }
    vae_cpu_pack_frame(cpu_node_data(cg, out) + (size_t) n * VAE_CPU_BLOCK * out->ne[2] * out->ne[3], dst);
    return true;
}

static bool cpu_graph_read_output(vae_backend_t * backend, struct vae_graph * g, float * dst, char * err,
                                  size_t err_size) {
    (void) backend, (void) err, (void) err_size;
    vae_cpu_from_blocked(cpu_node_data(g->backend_data, g->output), dst, g->output->ne);
    return true;
}

static const struct vae_backend_i cpu_backend_i = {
    /* .get_name          = */ cpu_get_name,
    /* .free              = */ cpu_free,
    /* .graph_prepare     = */ cpu_graph_prepare,
    /* .graph_compute     = */ cpu_graph_compute,
    /* .graph_read_frame  = */ cpu_graph_read_frame,
    /* .graph_read_output = */ cpu_graph_read_output,
    /* .graph_release     = */ cpu_graph_release,
};

vae_backend_t * vae_backend_cpu_init(char * err, size_t err_size) {
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
    snprintf(ctx->name, sizeof(ctx->name), "cpu (oneDNN %d.%d.%d, %d threads)", v->major, v->minor, v->patch,
             omp_get_max_threads());
    backend->iface   = &cpu_backend_i;
    backend->context = ctx;
    return backend;
}
