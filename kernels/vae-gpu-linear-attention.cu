// EfficientViT's ReLU linear attention (DC-AE; diffusers' SanaMultiscaleAttnProcessor2_0), per frame
// and group of head dim hd: q, k, v are the group's three runs of hd channels, q and k ReLU'd, and
// o = (sum_m v_m (k_m.q)) / (sum_m k_m.q + 1e-15) over the P positions of the frame, in f32 at every
// precision (diffusers casts to f32 for it). As upstream, P > hd takes the linear form: a block per
// (frame, group) sums A = [v; 1] k^T ([hd+1, hd], the last row the keys' sum) over tiles of
// positions staged in shared memory, each thread owning fixed entries of A (kept in shared memory
// too, so that any hd fits) and adding the tile's positions in order, so the sums are deterministic;
// A goes to the scratch, and a second kernel gives each output element (A q)[d] / ((A q)[hd] + 1e-15).
// P <= hd takes the quadratic form, one output element per thread over the P keys. Both read q, k and v
// where they are (NHWC: a position's channels contiguous); ReLU keeps a NaN, as PyTorch's.

#include "vae-gpu-common.cuh"

#define VAE_GPU_LA_THREADS 256
#define VAE_GPU_LA_TILE    32                            // positions staged at a time (fewer for large hd)
#define VAE_GPU_LA_SMEM    (48 * 1024 / sizeof(float))  // floats: the default shared memory

__device__ __forceinline__ float vae_gpu_la_relu(float v) {
    return v < 0.0f ? 0.0f : v;  // (a NaN stays NaN)
}

// the positions staged at a time for head dim hd beside A (0: hd too large)
static int vae_gpu_la_tile(int hd) {
    const int room = (int) VAE_GPU_LA_SMEM - (hd + 1) * hd;
    const int tile = room > 0 ? room / (2 * hd) : 0;
    return tile < VAE_GPU_LA_TILE ? tile : VAE_GPU_LA_TILE;
}

// block b = frame b / groups, group b % groups: A[b] = sum over the P positions of [v; 1] k^T, entry
// d * hd + e = sum_m v'[d, m] k[e, m]
template <typename T>
static __global__ void __launch_bounds__(VAE_GPU_LA_THREADS)
    vae_gpu_la_state_kernel(const T * qkv, float * A, int P, int cp, int hd, int groups, int tile) {
    extern __shared__ float sm_a[];          // this block's A, (hd + 1) hd entries
    const int ne    = (hd + 1) * hd;
    float *   sm_kv = sm_a + ne;             // the tile: per position k (ReLU'd), then v, 2 hd floats
    const int i = blockIdx.x / groups, g = blockIdx.x % groups;
    const T * src = qkv + (size_t) i * P * cp + (size_t) g * 3 * hd + hd;  // k of the frame's first position
    for (int j = threadIdx.x; j < ne; j += blockDim.x) {
        sm_a[j] = 0.0f;  // (each entry is only ever touched by its own thread)
    }
    for (int m0 = 0; m0 < P; m0 += tile) {
        for (int j = threadIdx.x; j < tile * 2 * hd; j += blockDim.x) {
            const int m = j / (2 * hd), r = j - m * 2 * hd;
            float     v = 0.0f;  // past the last position: nothing to add
            if (m0 + m < P) {
                v = vae_gpu_to_f32(src[(size_t) (m0 + m) * cp + r]);
                v = r < hd ? vae_gpu_la_relu(v) : v;
            }
            sm_kv[j] = v;
        }
        __syncthreads();  // the tile complete
        const int nm = P - m0 < tile ? P - m0 : tile;
        for (int j = threadIdx.x; j < ne; j += blockDim.x) {
            const int d = j / hd, e = j - d * hd;
            float     acc = sm_a[j];
            for (int m = 0; m < nm; m++) {
                const float * kv = sm_kv + m * 2 * hd;
                acc += (d < hd ? kv[hd + d] : 1.0f) * kv[e];
            }
            sm_a[j] = acc;
        }
        __syncthreads();  // the tile read: the next one may overwrite it
    }
    float * a = A + (size_t) blockIdx.x * ne;
    for (int j = threadIdx.x; j < ne; j += blockDim.x) {
        a[j] = sm_a[j];
    }
}

// one output element per thread: channel g hd + d of position px (frame px / P); with A the linear
// form, else (P <= hd) the quadratic one over the frame's P keys; padding lanes 0
template <typename T>
static __global__ void vae_gpu_la_out_kernel(const T * qkv, T * y, const float * A, size_t n, int P, int cxp, int c,
                                             int cp, int hd) {
    for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < n; e += (size_t) gridDim.x * blockDim.x) {
        const size_t px = e / cp;
        const int    ch = (int) (e - px * cp);
        float        o  = 0.0f;
        if (ch < c) {
            const int g = ch / hd, d = ch - g * hd;
            const T * q = qkv + px * cxp + (size_t) g * 3 * hd;  // this position's q
            float     num = 0.0f, den = 0.0f;
            if (A) {
                const float * a = A + ((px / P) * (c / hd) + g) * (size_t) (hd + 1) * hd;
                for (int t = 0; t < hd; t++) {
                    const float qt = vae_gpu_la_relu(vae_gpu_to_f32(q[t]));
                    num += a[d * hd + t] * qt;
                    den += a[hd * hd + t] * qt;
                }
            } else {
                const T * k = qkv + (px - px % P) * cxp + (size_t) g * 3 * hd + hd;  // the frame's first k
                for (int m = 0; m < P; m++) {
                    const T * km = k + (size_t) m * cxp;
                    float     s  = 0.0f;
                    for (int t = 0; t < hd; t++) {
                        s += vae_gpu_la_relu(vae_gpu_to_f32(km[t])) * vae_gpu_la_relu(vae_gpu_to_f32(q[t]));
                    }
                    num += vae_gpu_to_f32(km[hd + d]) * s;  // v of position m
                    den += s;
                }
            }
            o = num / (den + 1e-15f);
        }
        y[e] = vae_gpu_from_f32<T>(o);
    }
}

template <typename T>
static cudaError_t vae_gpu_la_launch(struct vae_gpu_act qkv, struct vae_gpu_act y, int hd, float * A, cudaStream_t s) {
    const int    P = qkv.h * qkv.w, groups = y.c / hd, tile = vae_gpu_la_tile(hd);
    const size_t n = (size_t) y.n * P * y.cp;
    if (A) {
        const size_t smem = ((size_t) (hd + 1) * hd + (size_t) tile * 2 * hd) * sizeof(float);
        vae_gpu_la_state_kernel<T><<<(unsigned) (qkv.n * groups), VAE_GPU_LA_THREADS, smem, s>>>(
            (const T *) qkv.data, A, P, qkv.cp, hd, groups, tile);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) {
            return e;
        }
    }
    vae_gpu_la_out_kernel<T><<<vae_gpu_blocks(n), 256, 0, s>>>((const T *) qkv.data, (T *) y.data, A, n, P, qkv.cp,
                                                                y.c, y.cp, hd);
    return cudaGetLastError();
}

extern "C" size_t vae_gpu_linear_attention_scratch(struct vae_gpu_act qkv, int hd) {
    if (!vae_gpu_shape_ok(qkv) || hd < 1 || qkv.c % (3 * hd) != 0 || qkv.h * qkv.w <= hd) {
        return 0;
    }
    return (size_t) qkv.n * (qkv.c / (3 * hd)) * (hd + 1) * hd * sizeof(float);
}

extern "C" cudaError_t vae_gpu_linear_attention(struct vae_gpu_act qkv, struct vae_gpu_act y, int hd, void * scratch,
                                                enum vae_precision p, cudaStream_t s) {
    const bool linear = qkv.h * qkv.w > hd;
    if (!vae_gpu_act_ok(qkv) || !vae_gpu_act_ok(y) || !vae_gpu_precision_ok(p) || vae_gpu_act_overlap(qkv, y, p) || hd < 1 ||
        y.n != qkv.n || y.h != qkv.h || y.w != qkv.w || qkv.c != 3 * y.c || y.c % hd != 0 ||
        (linear && (!scratch || vae_gpu_la_tile(hd) < 1))) {
        return cudaErrorInvalidValue;
    }
    cudaError_t err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_la_launch<T>(qkv, y, hd, linear ? (float *) scratch : NULL, s));
    return err;
}
