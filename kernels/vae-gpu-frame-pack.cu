// The last step of a decode on the GPU: frame i of the model's 3-channel output (4: RGBA, straight
// alpha, where the frame asks for it) becomes 8-bit
// pixels in device planes (for encoders and sinks that take GPU memory), with the bytes that the
// host's vae_frame_pack (backend/vae-frame-pack.c) would give for the same values, so a frame never
// depends on where it was packed. That file is compiled with -ffp-contract=off; here every
// operation is an IEEE single operation in its order (__fmul_rn and friends, which nvcc and HIP's
// clang never fuse into an FMA). The per-pixel functions are __host__ __device__ so that a host build of them can be
// compared byte for byte with vae_frame_pack.

#include "vae-gpu-common.cuh"

// rounded IEEE single operations, never contracted (host code: -ffp-contract=off)
static __host__ __device__ inline float vae_gpu_pack_add(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

static __host__ __device__ inline float vae_gpu_pack_sub(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

static __host__ __device__ inline float vae_gpu_pack_mul(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

static __host__ __device__ inline float vae_gpu_pack_div(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

// clamp(v * scale + offset, 0, 1), NaN -> 0
static __host__ __device__ inline float vae_gpu_pack_unit(float v, float scale, float offset) {
    v = vae_gpu_pack_add(vae_gpu_pack_mul(v, scale), offset);
    return v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f;
}

static __host__ __device__ inline uint8_t vae_gpu_pack_u8(float v) {
    return (uint8_t) vae_gpu_pack_add(vae_gpu_pack_mul(v, 255.0f), 0.5f);
}

// pixel (y, x) of the frame x (pixel stride cp) as clamped [0, 1] RGB
template <typename T>
static __host__ __device__ inline void vae_gpu_pack_rgb(const T * x, int cp, const struct vae_frame & f, int64_t y,
                                                 int64_t xx, float rgb[3]) {
    const T * p = x + (y * f.width + xx) * cp;
    for (int c = 0; c < 3; c++) {
        rgb[c] = vae_gpu_pack_unit(static_cast<float>(p[c]), f.scale, f.offset);
    }
}

// kr * r + kg * g + kb * b, left to right
static __host__ __device__ inline float vae_gpu_pack_luma(float kr, float kg, float kb, const float rgb[3]) {
    return vae_gpu_pack_add(vae_gpu_pack_add(vae_gpu_pack_mul(kr, rgb[0]), vae_gpu_pack_mul(kg, rgb[1])),
                            vae_gpu_pack_mul(kb, rgb[2]));
}

// 128 + cs * (v - luma) / (2 * (1 - k)), rounded and clamped to a byte (NaN -> 0)
static __host__ __device__ inline uint8_t vae_gpu_pack_chroma(float cs, float v, float luma, float k) {
    const float c = vae_gpu_pack_add(128.0f, vae_gpu_pack_div(vae_gpu_pack_mul(cs, vae_gpu_pack_sub(v, luma)),
                                                              vae_gpu_pack_mul(2.0f, vae_gpu_pack_sub(1.0f, k))));
    return (uint8_t) fminf(fmaxf(vae_gpu_pack_add(c, 0.5f), 0.0f), 255.0f);
}

// pixel (y, x)'s alpha byte: the model's fourth channel where f.alpha, else opaque
template <typename T>
static __host__ __device__ inline uint8_t vae_gpu_pack_alpha(const T * x, int cp, const struct vae_frame & f,
                                                             int64_t y, int64_t xx) {
    return f.alpha ? vae_gpu_pack_u8(vae_gpu_pack_unit(static_cast<float>(x[(y * f.width + xx) * cp + 3]), f.scale,
                                                       f.offset))
                   : 255;
}

// the luma byte of clamped RGB, and its luma
static __host__ __device__ inline uint8_t vae_gpu_pack_y(const struct vae_frame & f, const float rgb[3], float * luma) {
    const float kg = vae_gpu_pack_sub(vae_gpu_pack_sub(1.0f, f.kr), f.kb);
    const float ys = f.full_range ? 255.0f : 219.0f, yo = f.full_range ? 0.0f : 16.0f;
    *luma          = vae_gpu_pack_luma(f.kr, kg, f.kb, rgb);
    return vae_gpu_pack_u8(vae_gpu_pack_div(vae_gpu_pack_add(yo, vae_gpu_pack_mul(ys, *luma)), 255.0f));
}

// RGB, RGBA, RGBX, BGRX, BGRA, ARGB, ABGR, AYUV: pixel (y, x)
template <typename T>
static __host__ __device__ inline void vae_gpu_pack_pixel(const T * x, int cp, const struct vae_frame & f, int64_t y,
                                                   int64_t xx) {
    // byte positions of R, G, B (AYUV: Y, U, V) and of the fourth byte (-1: none; x_byte: always 255)
    int  r = 0, g = 1, b = 2, a = -1, bpp = 4;
    bool x_byte = false;
    switch (f.format) {
        case VAE_PIXEL_RGB:  bpp = 3; break;
        case VAE_PIXEL_RGBA: a = 3; break;
        case VAE_PIXEL_RGBX: a = 3, x_byte = true; break;
        case VAE_PIXEL_BGRA: r = 2, b = 0, a = 3; break;
        case VAE_PIXEL_BGRX: r = 2, b = 0, a = 3, x_byte = true; break;
        case VAE_PIXEL_ABGR: a = 0, b = 1, g = 2, r = 3; break;
        default:             a = 0, r = 1, g = 2, b = 3; break; // ARGB, AYUV
    }
    float rgb[3];
    vae_gpu_pack_rgb(x, cp, f, y, xx, rgb);
    uint8_t * px = f.planes[0] + y * f.strides[0] + xx * bpp;
    if (f.format == VAE_PIXEL_AYUV) {
        const float cs = f.full_range ? 255.0f : 224.0f;
        float       luma;
        px[r] = vae_gpu_pack_y(f, rgb, &luma);
        px[g] = vae_gpu_pack_chroma(cs, rgb[2], luma, f.kb);
        px[b] = vae_gpu_pack_chroma(cs, rgb[0], luma, f.kr);
    } else {
        px[r] = vae_gpu_pack_u8(rgb[0]);
        px[g] = vae_gpu_pack_u8(rgb[1]);
        px[b] = vae_gpu_pack_u8(rgb[2]);
    }
    if (a >= 0) {
        px[a] = x_byte ? 255 : vae_gpu_pack_alpha(x, cp, f, y, xx);
    }
}

// I420, NV12, A420: chroma sample (cy, cx) from the mean of its (up to) 2x2 pixels, and their luma
// (and alpha)
template <typename T>
static __host__ __device__ inline void vae_gpu_pack_quad(const T * x, int cp, const struct vae_frame & f, int64_t cy,
                                                  int64_t cx) {
    const float cs     = f.full_range ? 255.0f : 224.0f;
    float       sum[3] = { 0.0f, 0.0f, 0.0f }, luma;
    int         n      = 0;
    for (int64_t y = 2 * cy; y < 2 * cy + 2 && y < f.height; y++) {
        for (int64_t xx = 2 * cx; xx < 2 * cx + 2 && xx < f.width; xx++) {
            float rgb[3];
            vae_gpu_pack_rgb(x, cp, f, y, xx, rgb);
            f.planes[0][y * f.strides[0] + xx] = vae_gpu_pack_y(f, rgb, &luma);
            if (f.format == VAE_PIXEL_A420) {
                f.planes[3][y * f.strides[3] + xx] = vae_gpu_pack_alpha(x, cp, f, y, xx);
            }
            for (int c = 0; c < 3; c++) {
                sum[c] = vae_gpu_pack_add(sum[c], rgb[c]);
            }
            n++;
        }
    }
    float mean[3];
    for (int c = 0; c < 3; c++) {
        mean[c] = vae_gpu_pack_div(sum[c], (float) n);
    }
    (void) vae_gpu_pack_y(f, mean, &luma);
    const uint8_t u8 = vae_gpu_pack_chroma(cs, mean[2], luma, f.kb);
    const uint8_t v8 = vae_gpu_pack_chroma(cs, mean[0], luma, f.kr);
    if (f.format == VAE_PIXEL_NV12) {
        f.planes[1][cy * f.strides[1] + 2 * cx]     = u8;
        f.planes[1][cy * f.strides[1] + 2 * cx + 1] = v8;
    } else {
        f.planes[1][cy * f.strides[1] + cx] = u8;
        f.planes[2][cy * f.strides[2] + cx] = v8;
    }
}

template <typename T>
static __global__ void vae_gpu_frame_pack_packed_kernel(const T * x, int cp, struct vae_frame f) {
    const size_t n = (size_t) f.width * f.height;
    for (size_t q = blockIdx.x * (size_t) blockDim.x + threadIdx.x; q < n; q += (size_t) gridDim.x * blockDim.x) {
        vae_gpu_pack_pixel(x, cp, f, (int64_t) (q / f.width), (int64_t) (q % f.width));
    }
}

template <typename T>
static __global__ void vae_gpu_frame_pack_yuv420_kernel(const T * x, int cp, struct vae_frame f) {
    const int64_t cw = (f.width + 1) / 2;
    const size_t  n  = (size_t) cw * ((f.height + 1) / 2);
    for (size_t q = blockIdx.x * (size_t) blockDim.x + threadIdx.x; q < n; q += (size_t) gridDim.x * blockDim.x) {
        vae_gpu_pack_quad(x, cp, f, (int64_t) q / cw, (int64_t) q % cw);
    }
}

template <typename T>
static cudaError_t vae_gpu_frame_pack_launch(const T * x, int cp, const struct vae_frame & f, cudaStream_t s) {
    if (f.format == VAE_PIXEL_I420 || f.format == VAE_PIXEL_NV12 || f.format == VAE_PIXEL_A420) {
        const size_t n = (size_t) ((f.width + 1) / 2) * ((f.height + 1) / 2);
        vae_gpu_frame_pack_yuv420_kernel<T><<<vae_gpu_blocks(n), 256, 0, s>>>(x, cp, f);
    } else {
        vae_gpu_frame_pack_packed_kernel<T><<<vae_gpu_blocks((size_t) f.width * f.height), 256, 0, s>>>(x, cp, f);
    }
    return cudaGetLastError();
}

// the planes the format needs, each with room for its row
static bool vae_gpu_frame_ok(const struct vae_frame * f) {
    const int w = f->width, cw = (f->width + 1) / 2;
    switch (f->format) {
        case VAE_PIXEL_RGB:  return f->planes[0] && f->strides[0] >= 3 * w;
        case VAE_PIXEL_RGBA:
        case VAE_PIXEL_RGBX:
        case VAE_PIXEL_BGRX:
        case VAE_PIXEL_BGRA:
        case VAE_PIXEL_ARGB:
        case VAE_PIXEL_ABGR:
        case VAE_PIXEL_AYUV: return f->planes[0] && f->strides[0] >= 4 * w;
        case VAE_PIXEL_I420:
        case VAE_PIXEL_A420:
            return f->planes[0] && f->planes[1] && f->planes[2] && f->strides[0] >= w && f->strides[1] >= cw &&
                   f->strides[2] >= cw && (f->format == VAE_PIXEL_I420 || (f->planes[3] && f->strides[3] >= w));
        case VAE_PIXEL_NV12:
            return f->planes[0] && f->planes[1] && f->strides[0] >= w && f->strides[1] >= 2 * cw;
        default: return false;
    }
}

extern "C" cudaError_t vae_gpu_frame_pack(struct vae_gpu_act x, int i, const struct vae_frame * dst,
                                          enum vae_precision p, cudaStream_t s) {
    if (!vae_gpu_act_ok(x) || !vae_gpu_precision_ok(p) || !dst || x.c != (dst->alpha ? 4 : 3) || i < 0 || i >= x.n ||
        !dst->device || dst->width != x.w || dst->height != x.h || !vae_gpu_frame_ok(dst)) {
        return cudaErrorInvalidValue;
    }
    const size_t frame = (size_t) i * x.h * x.w * x.cp;
    cudaError_t  err;
    VAE_GPU_DISPATCH(p, err = vae_gpu_frame_pack_launch<T>((const T *) x.data + frame, x.cp, *dst, s));
    return err;
}
