// The 3x3 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", CVPR 2016): each 2x2 block of outputs comes from
// the 4x4 block of inputs around it as Y = A^T [(G g G^T) . (B^T d B)] A, 16 products per channel
// pair where the direct convolution takes 36, the sums over the input channels 16 matrix products.
// oneDNN 3 has no Winograd convolution on x86, and its direct ones already run at its GEMMs' rate
// (docs/cpu.md), so fewer products is what is left: 1.3-1.7x faster at 96 to 512 channels in fp32.
// The transforms only add, subtract and halve (B and A hold 0 and +-1, G also 1/2), so the result
// stays close to the direct one (fp32: max |diff| 3-6e-6 at |y| ~ 2 against oneDNN's, where
// F(4x4, 3x3) gives 2e-5 and 4x the weights). At bf16 the transformed inputs and weights are
// rounded to bf16 (the direct conv rounds the inputs and weights themselves), the products
// accumulate in f32. The output is walked in runs of WINO_TILES 2x2 tiles along a row pair: a
// run's transformed inputs (16 x tiles x Cin) and products (16 x tiles x Cout) stay in the cache;
// each thread takes whole runs and multiplies them by one batched matmul primitive of oneDNN's
// (16 matrices; inside the parallel region it runs on the calling thread, with the thread's own
// stream and scratchpad, as oneDNN allows one primitive to run on several threads at once).

#include "vae-cpu.h"

#include <stdlib.h>
#include <string.h>

#define WINO_TILES 32

dnnl_status_t vae_cpu_winograd_init(struct vae_cpu_winograd * wg, dnnl_engine_t engine, dnnl_data_type_t type,
                                    int64_t cin, int64_t cout, int64_t width) {
    const int64_t tw = (width + 1) / 2;
    *wg              = (struct vae_cpu_winograd) { engine, type, cin, cout, { NULL, NULL }, { 0, 0 }, 0 };
    wg->rows[0]      = tw < WINO_TILES ? tw : WINO_TILES;
    wg->rows[1]      = tw % wg->rows[0];
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t         st   = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    for (int i = 0; i < 2 && st == dnnl_success && wg->rows[i] > 0; i++) {
        const dnnl_dims_t     a = { 16, wg->rows[i], cin }, b = { 16, cin, cout }, c = { 16, wg->rows[i], cout };
        dnnl_memory_desc_t    md[3] = { NULL, NULL, NULL };
        dnnl_primitive_desc_t pd    = NULL;
        st = dnnl_memory_desc_create_with_tag(&md[0], 3, a, type, dnnl_abc);
        if (st == dnnl_success) st = dnnl_memory_desc_create_with_tag(&md[1], 3, b, type, dnnl_format_tag_any);
        if (st == dnnl_success) st = dnnl_memory_desc_create_with_tag(&md[2], 3, c, dnnl_f32, dnnl_abc);
        if (st == dnnl_success) st = dnnl_matmul_primitive_desc_create(&pd, engine, md[0], md[1], NULL, md[2], attr);
        if (st == dnnl_success) st = dnnl_primitive_create(&wg->mm[i], pd);
        if (st == dnnl_success) {
            const_dnnl_memory_desc_t sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
            const size_t             n  = sp ? dnnl_memory_desc_get_size(sp) : 0;
            wg->scratch                 = n > wg->scratch ? n : wg->scratch;
        }
        // (both runs read the one copy of the weights: their layouts must agree)
        if (st == dnnl_success && i == 1 &&
            !dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                                    vae_cpu_winograd_weights_md(wg))) {
            st = dnnl_unimplemented;
        }
        dnnl_primitive_desc_destroy(pd);
        for (int k = 0; k < 3; k++) {
            dnnl_memory_desc_destroy(md[k]);
        }
    }
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) {
        vae_cpu_winograd_release(wg);
    }
    return st;
}

void vae_cpu_winograd_release(struct vae_cpu_winograd * wg) {
    for (int i = 0; i < 2; i++) {
        dnnl_primitive_destroy(wg->mm[i]);
        wg->mm[i] = NULL;
    }
}

const_dnnl_memory_desc_t vae_cpu_winograd_weights_md(const struct vae_cpu_winograd * wg) {
    const_dnnl_primitive_desc_t pd = NULL;
    return wg->mm[0] && dnnl_primitive_get_primitive_desc(wg->mm[0], &pd) == dnnl_success
               ? dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0)
               : NULL;
}

// G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], e = 4 i + j
void vae_cpu_winograd_weights(const float * w, float * u, int64_t cin, int64_t cout) {
    static const float G[4][3] = { { 1.0f, 0.0f, 0.0f }, { 0.5f, 0.5f, 0.5f }, { 0.5f, -0.5f, 0.5f }, { 0.0f, 0.0f, 1.0f } };
    for (int64_t k = 0; k < cout; k++) {
        for (int64_t c = 0; c < cin; c++) {
            const float * g = w + (k * cin + c) * 9;
            float         t[4][3]; // G g
            for (int i = 0; i < 4; i++) {
                for (int j = 0; j < 3; j++) {
                    t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
                }
            }
            for (int i = 0; i < 4; i++) {
                for (int j = 0; j < 4; j++) {
                    u[((i * 4 + j) * cin + c) * cout + k] = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
                }
            }
        }
    }
}

// v[e] = (B^T d B)[e] for the C channels of the 4x4 patch d (16 rows of C floats);
// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. v: 16 rows of C floats, ld floats apart
static void wino_input(const float * const d[16], float * v, int64_t ld, int64_t C, float * r) {
    for (int j = 0; j < 4; j++) { // r = B^T d, by columns
        const float *d0 = d[j], *d1 = d[4 + j], *d2 = d[8 + j], *d3 = d[12 + j];
        float *      r0 = r + j * C, *r1 = r + (4 + j) * C, *r2 = r + (8 + j) * C, *r3 = r + (12 + j) * C;
        for (int64_t c = 0; c < C; c++) {
            r0[c] = d0[c] - d2[c];
            r1[c] = d1[c] + d2[c];
            r2[c] = d2[c] - d1[c];
            r3[c] = d1[c] - d3[c];
        }
    }
    for (int i = 0; i < 4; i++) { // v = r B, by rows
        const float *r0 = r + (4 * i) * C, *r1 = r0 + C, *r2 = r1 + C, *r3 = r2 + C;
        float *      v0 = v + (4 * i) * ld, *v1 = v0 + ld, *v2 = v1 + ld, *v3 = v2 + ld;
        for (int64_t c = 0; c < C; c++) {
            v0[c] = r0[c] - r2[c];
            v1[c] = r1[c] + r2[c];
            v2[c] = r2[c] - r1[c];
            v3[c] = r1[c] - r3[c];
        }
    }
}

// o[2 i + j] = (A^T m A)[i][j] + bias for the K channels of a tile's 16 products m[e] (rows of K,
// ld floats apart), A^T = [1 1 1 0; 0 1 -1 -1]; s: 8 rows of K; o: 4 rows of K
static void wino_output(const float * m, int64_t ld, int64_t K, const float * bias, float * s, float * o) {
    for (int j = 0; j < 4; j++) { // s = A^T m, by columns
        const float *m0 = m + j * ld, *m1 = m + (4 + j) * ld, *m2 = m + (8 + j) * ld, *m3 = m + (12 + j) * ld;
        float *      s0 = s + j * K, *s1 = s + (4 + j) * K;
        for (int64_t k = 0; k < K; k++) {
            s0[k] = m0[k] + m1[k] + m2[k];
            s1[k] = m1[k] - m2[k] - m3[k];
        }
    }
    for (int p = 0; p < 4; p++) { // o = s A, by rows
        const float *s0 = s + 4 * (p / 2) * K, *s1 = s0 + K, *s2 = s1 + K, *s3 = s2 + K;
        float *      op = o + p * K;
        for (int64_t k = 0; k < K; k++) {
            const float a = p % 2 ? s1[k] - s2[k] - s3[k] : s0[k] + s1[k] + s2[k];
            op[k]         = bias ? a + bias[k] : a;
        }
    }
}

// a thread's buffers (bytes, each a multiple of 64): a run's transformed inputs [16][tiles][C] of
// wg's type and products [16][tiles][K]; a patch in f32 (bf16 inputs), its zero pixel, its
// transform (bf16: before rounding) and B^T d; a tile's A^T m and 4 output pixels; the scratchpad
#define WINO_BUFFERS 9

static void wino_sizes(const struct vae_cpu_winograd * wg, size_t size[WINO_BUFFERS]) {
    const size_t C = (size_t) wg->cin, K = (size_t) wg->cout, T = WINO_TILES;
    const size_t f[WINO_BUFFERS] = { 0, 16 * T * K, 16 * C, C, 16 * C, 16 * C, 8 * K, 4 * K, 0 };
    for (int i = 0; i < WINO_BUFFERS; i++) {
        size[i] = (f[i] * sizeof(float) + 63) / 64 * 64;
    }
    size[0] = (16 * T * C * (wg->type == dnnl_bf16 ? 2 : 4) + 63) / 64 * 64;
    size[8] = (wg->scratch + 63) / 64 * 64;
}

dnnl_status_t vae_cpu_winograd_conv(const struct vae_cpu_winograd * wg, const void * x, void * y, bool y_bf16,
                                    const int64_t ne_x[4], const void * u, const float * bias, bool add,
                                    enum vae_act act) {
    const int64_t N = ne_x[0], C = ne_x[1], H = ne_x[2], W = ne_x[3], K = wg->cout, T = WINO_TILES;
    const int64_t th = (H + 1) / 2, tw = (W + 1) / 2, runs = (tw + T - 1) / T;
    const bool    bf = wg->type == dnnl_bf16;
    const size_t  px = (size_t) C * (bf ? 2 : 4); // bytes of an input pixel
    dnnl_status_t status = dnnl_success;
    size_t        size[WINO_BUFFERS], total = 0;
    wino_sizes(wg, size);
    for (int i = 0; i < WINO_BUFFERS; i++) {
        total += size[i];
    }
#pragma omp parallel
    {
        char *          buf[WINO_BUFFERS] = { NULL };
        dnnl_stream_t   stream            = NULL;
        dnnl_memory_t   mem[2][4]         = { { NULL } }; // per matmul: source, weights, output, scratchpad
        dnnl_exec_arg_t args[2][4];
        int             n_args[2] = { 0, 0 };
        void *          block = NULL;
        dnnl_status_t   st    = posix_memalign(&block, 64, total) == 0 ? dnnl_success : dnnl_out_of_memory;
        for (int i = 0; i < WINO_BUFFERS && st == dnnl_success; i++) {
            buf[i] = i ? buf[i - 1] + size[i - 1] : block;
        }
        if (st == dnnl_success) st = dnnl_stream_create(&stream, wg->engine, dnnl_stream_default_flags);
        for (int i = 0; i < 2 && st == dnnl_success && wg->mm[i]; i++) {
            const_dnnl_primitive_desc_t pd = NULL;
            static const int            arg[4] = { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD };
            static const dnnl_query_t   q[4]   = { dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md,
                                                   dnnl_query_scratchpad_md };
            void * const                data[4] = { buf[0], (void *) u, buf[1], buf[8] };
            st = dnnl_primitive_get_primitive_desc(wg->mm[i], &pd);
            for (int k = 0; k < 4 && st == dnnl_success; k++) { // (a scratchpad only where it takes one)
                const_dnnl_memory_desc_t md = dnnl_primitive_desc_query_md(pd, q[k], 0);
                if (k < 3 || dnnl_memory_desc_get_size(md) > 0) {
                    st         = dnnl_memory_create(&mem[i][k], md, wg->engine, data[k]);
                    args[i][k] = (dnnl_exec_arg_t) { arg[k], mem[i][k] };
                    n_args[i]  = k + 1;
                }
            }
        }
        float *m = (float *) buf[1], *patch = (float *) buf[2], *zero = (float *) buf[3], *vt = (float *) buf[4];
        float *r = (float *) buf[5], *s = (float *) buf[6], *o = (float *) buf[7];
        if (st == dnnl_success) {
            memset(zero, 0, (size_t) C * sizeof(float));
        } else {
#pragma omp atomic write
            status = st;
        }
#pragma omp for collapse(3) schedule(static)
        for (int64_t n = 0; n < N; n++) {
            for (int64_t ty = 0; ty < th; ty++) {
                for (int64_t run = 0; run < runs; run++) {
                    const int64_t tx0 = run * T, nt = tw - tx0 < T ? tw - tx0 : T;
                    const int     mm  = nt == wg->rows[0] ? 0 : 1;
                    const char *  xn  = (const char *) x + (size_t) (n * H * W) * px;
                    if (st != dnnl_success) {
                        continue;
                    }
                    for (int64_t t = 0; t < nt; t++) { // the 4x4 patch from (2 ty - 1, 2 tx - 1), zeros outside
                        const float * d[16];
                        for (int i = 0; i < 16; i++) {
                            const int64_t yy = 2 * ty - 1 + i / 4, xx = 2 * (tx0 + t) - 1 + i % 4;
                            const char *  p  = yy < 0 || yy >= H || xx < 0 || xx >= W ? NULL : xn + (size_t) (yy * W + xx) * px;
                            d[i]             = !p ? zero : bf ? patch + i * C : (const float *) p;
                            for (int64_t c = 0; p && bf && c < C; c++) {
                                patch[i * C + c] = vae_cpu_from_bf16(((const uint16_t *) p)[c]);
                            }
                        }
                        // into the run's [16][nt][C]: directly (f32), or rounded from vt (bf16)
                        wino_input(d, bf ? vt : (float *) buf[0] + t * C, bf ? C : nt * C, C, r);
                        for (int e = 0; bf && e < 16; e++) {
                            vae_cpu_store(buf[0], true, (e * nt + t) * C, vt + e * C, C);
                        }
                    }
                    st = dnnl_primitive_execute(wg->mm[mm], stream, n_args[mm], args[mm]); // m[e] (nt x K) = v[e] (nt x C) u[e] (C x K)
                    if (st != dnnl_success) {
#pragma omp atomic write
                        status = st;
                        continue;
                    }
                    for (int64_t t = 0; t < nt; t++) {
                        wino_output(m + t * K, nt * K, K, bias, s, o);
                        for (int p = 0; p < 4; p++) {
                            const int64_t yy = 2 * ty + p / 2, xx = 2 * (tx0 + t) + p % 2, at = ((n * H + yy) * W + xx) * K;
                            float *       op = o + p * K;
                            if (yy >= H || xx >= W) {
                                continue;
                            }
                            for (int64_t k = 0; add && k < K; k++) {
                                op[k] += vae_cpu_load(y, y_bf16, at + k);
                            }
                            vae_cpu_act(op, K, act);
                            vae_cpu_store(y, y_bf16, at, op, K);
                        }
                    }
                }
            }
        }
        for (int i = 0; i < 2; i++) {
            for (int k = 0; k < 4; k++) {
                dnnl_memory_destroy(mem[i][k]);
            }
        }
        dnnl_stream_destroy(stream);
        free(block);
    }
    return status;
}
