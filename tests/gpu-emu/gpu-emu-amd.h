// The AMD matrix instruction as the emulator provides it in AMD mode (VAE_GPU_EMU_GFX; included
// by gpu-emu.h): vae_gpu_amd_mma of kernels/vae-gpu-amdgcn.cuh, one wave's D += A B over 16x16x16
// with f16 or bf16 operands and f32 accumulators. Which lane and register hold which element is
// written here from AMD's documents, not from vae-gpu-amdgcn.cuh, so that a kernel and this
// emulator agree only when both follow the hardware:
//   gfx11 (RDNA3/3.5, wave32), v_wmma_f32_16x16x16_{f16,bf16}: AMD Matrix Instruction Calculator
//     (github.com/ROCm/amd_matrix_instruction_calculator, -a rdna3 --matrix-layout), RDNA3 ISA
//     reference guide section 7.9 (WMMA), GPUOpen "How to accelerate AI applications on RDNA 3
//     using WMMA" (gpuopen.com/learn/wmma_on_rdna3): every A and B element sits in lane l and again
//     in lane l + 16.
//   gfx12 (RDNA4, wave32), the gfx12 encodings: the calculator (-a rdna4), RDNA4 ISA reference
//     guide section 7.12, GPUOpen "Using the Matrix Cores of AMD RDNA 4 architecture GPUs".
//   CDNA2/3 (gfx90a, gfx942, wave64), v_mfma_f32_16x16x16{f16,bf16_1k} / _16x16x16_{f16,bf16}: the
//     calculator (-a cdna2, -a cdna3), AMD lab notes "AMD matrix cores"
//     (amd-lab-notes/matrix-cores/src/mfma_fp32_16x16x16fp16.cpp).
// In every family lane l holds row l % 16 of A, column l % 16 of B and column l % 16 of D. Which k
// of its row a lane's element is can only be seen through A and B together (sum over k is blind
// to a permutation of k applied to both), but it is kept as documented all the same.
// Rounding: the products of 16-bit operands are exact; C and the 16 products are summed in double
// and rounded to f32 once (the documents promise f32 accumulation, not an order; this is at least
// as accurate, and independent of the order).

#pragma once

#if VAE_EMU_AMD_ISA == 11
#define VAE_EMU_AMD_KL   16   // 16-bit elements of A (and of B) per lane
#define VAE_EMU_AMD_NACC 8    // f32 of D per lane
#elif VAE_EMU_AMD_ISA == 12
#define VAE_EMU_AMD_KL   8
#define VAE_EMU_AMD_NACC 8
#else
#define VAE_EMU_AMD_KL   4
#define VAE_EMU_AMD_NACC 4
#endif

// k of 16-bit element e (word e / 2, half e % 2) of an A or B operand in `lane`
static inline int vae_emu_amd_k(int lane, int e) {
#if VAE_EMU_AMD_ISA == 11
    (void) lane;
    return e;   // A[m][k] in VGPR k / 2, bits 16 (k % 2), lanes m and m + 16
#elif VAE_EMU_AMD_ISA == 12
    return 8 * (e / 4) + 4 * (lane / 16) + e % 4;   // calculator: lane 16 ((k / 4) % 2) + m, VGPR 2 (k / 8) + (k / 2) % 2
#else
    return 4 * (lane / 16) + e;   // calculator: lane 16 (k / 4) + m, VGPR (k / 2) % 2
#endif
}

// row of D (and C) in element v of `lane`
static inline int vae_emu_amd_row(int lane, int v) {
#if VAE_EMU_AMD_ISA == 11
    return 2 * v + lane / 16;   // D[m][n] in VGPR m / 2, lane 16 (m % 2) + n
#elif VAE_EMU_AMD_ISA == 12
    return 8 * (lane / 16) + v;   // VGPR m % 8, lane 16 (m / 8) + n
#else
    return 4 * (lane / 16) + v;   // VGPR m % 4, lane 16 (m / 4) + n
#endif
}

static inline const char * vae_emu_amd_name(__half) {
    return VAE_EMU_AMD_ISA == 9 ? "v_mfma_f32_16x16x16_f16" : "v_wmma_f32_16x16x16_f16";
}
static inline const char * vae_emu_amd_name(__nv_bfloat16) {
    return VAE_EMU_AMD_ISA == 9 ? "v_mfma_f32_16x16x16_bf16" : "v_wmma_f32_16x16x16_bf16";
}

struct vae_emu_amd_regs {
    unsigned a[VAE_EMU_AMD_KL / 2], b[VAE_EMU_AMD_KL / 2];
};

// the whole wave, converged at one call: every lane of a full wave deposits its A and B words
template <typename T>
static inline void vae_emu_amd_mma_at(const char * file, int line, float * d, const unsigned * a, const unsigned * b,
                                      T tag) {
    const vae_emu_where & w = *vae_emu_now;
    const unsigned threads = w.bdim.x * w.bdim.y * w.bdim.z, t = w.tid.x + w.bdim.x * (w.tid.y + w.bdim.y * w.tid.z);
    if (t - w.lane + VAE_EMU_WARP > threads) {
        vae_emu_fail(file, line, "%s: a wave of %u lanes (the block's last); the instruction needs all %d",
                     vae_emu_amd_name(tag), threads - (t - w.lane), VAE_EMU_WARP);
    }
    vae_emu_amd_regs mine;
    memcpy(mine.a, a, sizeof(mine.a));
    memcpy(mine.b, b, sizeof(mine.b));
    static_assert(sizeof(mine) <= 64, "AMD matrix operands");
    const unsigned char * all  = vae_emu_warp_exchange(~(vae_emu_mask_t) 0, &mine, sizeof(mine), file, line);
    const int             lane = w.lane, n = lane % 16;
#if VAE_EMU_AMD_ISA == 11
    // gfx11 takes lanes 16..31's A and B to be those of lanes 0..15 (no second copy is read)
    const vae_emu_amd_regs & other = vae_emu_lane<vae_emu_amd_regs>(all, lane ^ 16);
    for (int i = 0; i < VAE_EMU_AMD_KL / 2; i++) {
        if (mine.a[i] != other.a[i] || mine.b[i] != other.b[i]) {
            const bool isa = mine.a[i] != other.a[i];
            vae_emu_fail(file, line,
                         "%s (gfx11): lane %d's %c word %d = 0x%08x but lane %d's = 0x%08x: lanes 16..31 must "
                         "hold the same A and B as lanes 0..15",
                         vae_emu_amd_name(tag), lane, isa ? 'A' : 'B', i, isa ? mine.a[i] : mine.b[i], lane ^ 16,
                         isa ? other.a[i] : other.b[i]);
        }
    }
    constexpr int groups = 1;   // the lanes that hold distinct elements: 0..15
#else
    constexpr int groups = VAE_EMU_WARP / 16;
#endif
    // column n of B, from lanes n + 16 g; the rows of A this lane's D needs, from lanes m + 16 g
    double B[16];
    for (int g = 0; g < groups; g++) {
        const vae_emu_amd_regs & r = vae_emu_lane<vae_emu_amd_regs>(all, n + 16 * g);
        for (int e = 0; e < VAE_EMU_AMD_KL; e++) {
            B[vae_emu_amd_k(n + 16 * g, e)] = vae_emu_b16(r.b[e / 2], e % 2, tag);
        }
    }
    for (int v = 0; v < VAE_EMU_AMD_NACC; v++) {
        const int m = vae_emu_amd_row(lane, v);
        double    s = d[v];
        for (int g = 0; g < groups; g++) {
            const vae_emu_amd_regs & r = vae_emu_lane<vae_emu_amd_regs>(all, m + 16 * g);
            for (int e = 0; e < VAE_EMU_AMD_KL; e++) {
                s += vae_emu_b16(r.a[e / 2], e % 2, tag) * B[vae_emu_amd_k(m + 16 * g, e)];
            }
        }
        d[v] = (float) s;
    }
}
#define vae_gpu_amd_mma(d, a, b, t) vae_emu_amd_mma_at(__FILE__, __LINE__, d, a, b, t)
