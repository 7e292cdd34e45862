// The last step of every decode: the model's float RGB (or RGBA), in host memory, becomes 8-bit pixels in
// the layout the pipeline negotiated, rounded to nearest. It is one function for every backend
// (each passes the strides of its own layout, or copies a planar frame to the host first) so that
// the bytes of a frame never depend on the device. NaN maps to 0 so that a bad latent can never
// produce an out-of-range byte. YUV uses the luma coefficients and range the caller read from the
// negotiated colorimetry; 4:2:0 chroma is taken from the mean of each 2x2 RGB quad. Alpha (a
// model's fourth channel) is straight, mapped to bytes as colour is: the colour bytes never change
// with it, and formats without alpha drop it.

#include "vae-backend.h"

#include <math.h>

static inline float pack_unit(float v, float scale, float offset) {
    v = v * scale + offset;
    return v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f; // also NaN -> 0
}

static inline uint8_t pack_u8(float v) {
    return (uint8_t) (v * 255.0f + 0.5f);
}

// where channel c of pixel (y, x) is: src[(y * width + x) * pixel + c * channel]
struct pack_src {
    const float * data;
    int64_t       pixel, channel;
};

// one pixel as clamped [0, 1] RGB
static inline void pack_rgb(const struct pack_src * s, const struct vae_frame * f, int64_t y, int64_t x,
                            float rgb[3]) {
    const float * p = s->data + (y * f->width + x) * s->pixel;
    for (int c = 0; c < 3; c++) {
        rgb[c] = pack_unit(p[c * s->channel], f->scale, f->offset);
    }
}

// one pixel's alpha byte: the model's fourth channel, or opaque
static inline uint8_t pack_alpha(const struct pack_src * s, const struct vae_frame * f, int64_t y, int64_t x) {
    return f->alpha ? pack_u8(pack_unit(s->data[(y * f->width + x) * s->pixel + 3 * s->channel], f->scale, f->offset))
                    : 255;
}

// 128 + cs * (v - luma) / (2 * (1 - k)), rounded and clamped to a byte (NaN -> 0)
static inline uint8_t pack_chroma(float cs, float v, float luma, float k) {
    return (uint8_t) fminf(fmaxf(128.0f + cs * (v - luma) / (2.0f * (1.0f - k)) + 0.5f, 0.0f), 255.0f);
}

// the luma byte of a pixel, and (4:4:4) its chroma
static inline uint8_t pack_luma(const struct vae_frame * f, const float rgb[3], float * luma) {
    const float ys = f->full_range ? 255.0f : 219.0f, yo = f->full_range ? 0.0f : 16.0f;
    *luma          = f->kr * rgb[0] + (1.0f - f->kr - f->kb) * rgb[1] + f->kb * rgb[2];
    return pack_u8((yo + ys * *luma) / 255.0f);
}

static void pack_packed(const struct pack_src * src, const struct vae_frame * f) {
    // byte positions of R, G, B and of the fourth byte (-1: none; x: always 255) per format
    int  r = 0, g = 1, b = 2, a = -1, bpp = 4;
    bool x_byte = false, yuv = f->format == VAE_PIXEL_AYUV;
    switch (f->format) {
        case VAE_PIXEL_RGB:  bpp = 3; break;
        case VAE_PIXEL_RGBA: a = 3; break;
        case VAE_PIXEL_RGBX: a = 3, x_byte = true; break;
        case VAE_PIXEL_BGRA: r = 2, b = 0, a = 3; break;
        case VAE_PIXEL_BGRX: r = 2, b = 0, a = 3, x_byte = true; break;
        case VAE_PIXEL_ARGB: a = 0, r = 1, g = 2, b = 3; break;
        case VAE_PIXEL_ABGR: a = 0, b = 1, g = 2, r = 3; break;
        default:             a = 0, r = 1, g = 2, b = 3; break; // AYUV: Y, U, V where R, G, B are
    }
    const float cs = f->full_range ? 255.0f : 224.0f;
#pragma omp parallel for
    for (int64_t y = 0; y < f->height; y++) {
        uint8_t * row = f->planes[0] + y * f->strides[0];
        for (int64_t x = 0; x < f->width; x++) {
            float rgb[3];
            pack_rgb(src, f, y, x, rgb);
            uint8_t * px = row + x * bpp;
            if (yuv) {
                float luma;
                px[r] = pack_luma(f, rgb, &luma);
                px[g] = pack_chroma(cs, rgb[2], luma, f->kb);
                px[b] = pack_chroma(cs, rgb[0], luma, f->kr);
            } else {
                px[r] = pack_u8(rgb[0]);
                px[g] = pack_u8(rgb[1]);
                px[b] = pack_u8(rgb[2]);
            }
            if (a >= 0) {
                px[a] = x_byte ? 255 : pack_alpha(src, f, y, x);
            }
        }
    }
}

static void pack_yuv420(const struct pack_src * src, const struct vae_frame * f) {
    const float cs   = f->full_range ? 255.0f : 224.0f;
    const bool  nv12 = f->format == VAE_PIXEL_NV12;
#pragma omp parallel for
    for (int64_t cy = 0; cy < (f->height + 1) / 2; cy++) {
        for (int64_t cx = 0; cx < (f->width + 1) / 2; cx++) {
            float sum[3] = { 0 }, luma;
            int   n      = 0;
            for (int64_t y = 2 * cy; y < 2 * cy + 2 && y < f->height; y++) {
                for (int64_t x = 2 * cx; x < 2 * cx + 2 && x < f->width; x++) {
                    float rgb[3];
                    pack_rgb(src, f, y, x, rgb);
                    f->planes[0][y * f->strides[0] + x] = pack_luma(f, rgb, &luma);
                    if (f->format == VAE_PIXEL_A420) {
                        f->planes[3][y * f->strides[3] + x] = pack_alpha(src, f, y, x);
                    }
                    for (int c = 0; c < 3; c++) {
                        sum[c] += rgb[c];
                    }
                    n++;
                }
            }
            const float mean[3] = { sum[0] / n, sum[1] / n, sum[2] / n };
            (void) pack_luma(f, mean, &luma);
            const uint8_t u8 = pack_chroma(cs, mean[2], luma, f->kb);
            const uint8_t v8 = pack_chroma(cs, mean[0], luma, f->kr);
            if (nv12) {
                f->planes[1][cy * f->strides[1] + 2 * cx]     = u8;
                f->planes[1][cy * f->strides[1] + 2 * cx + 1] = v8;
            } else {
                f->planes[1][cy * f->strides[1] + cx] = u8;
                f->planes[2][cy * f->strides[2] + cx] = v8;
            }
        }
    }
}

void vae_frame_pack(const float * src, int64_t pixel_stride, int64_t channel_stride, const struct vae_frame * dst) {
    const struct pack_src s = { src, pixel_stride, channel_stride };
    if (dst->format == VAE_PIXEL_I420 || dst->format == VAE_PIXEL_NV12 || dst->format == VAE_PIXEL_A420) {
        pack_yuv420(&s, dst);
    } else {
        pack_packed(&s, dst);
    }
}
