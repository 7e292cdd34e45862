// test-amd-mma: the emulated AMD device of AMD mode (tests/gpu-emu/README.md) on its own, built
// once per device (-DVAE_GPU_EMU_GFX): the matrix instruction against a plain double GEMM, with
// operands placed by this file's own reading of AMD's documents (element -> lane and register, as
// AMD's Matrix Instruction Calculator states it; gpu-emu-amd.h goes the other way, lane ->
// element); the wave's collectives over 32 or 64 lanes; the device's properties and shared-memory
// limit; and the runs the emulator must stop (gfx11 operands not replicated in lanes 16..31, a
// partial or diverged wave, a 32-bit lane mask on wave64), each in a child process whose report
// is checked.

#include "emu-check.h"
#include "gpu-emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#define ARCH_(n)  "gfx" #n
#define ARCH_N(n) ARCH_(n)
#if VAE_GPU_EMU_GFX == 90
#define ARCH "gfx90a"
#else
#define ARCH ARCH_N(VAE_GPU_EMU_GFX)
#endif

#if VAE_GPU_EMU_GFX == 1100 || VAE_GPU_EMU_GFX == 1151
#define FAMILY 11
#define WAVE   32
#define WORDS  8   // operand words per lane
#define NACC   8   // f32 of D per lane
#elif VAE_GPU_EMU_GFX == 1200 || VAE_GPU_EMU_GFX == 1201
#define FAMILY 12
#define WAVE   32
#define WORDS  4
#define NACC   8
#else
#define FAMILY 9
#define WAVE   64
#define WORDS  2
#define NACC   4
#endif

// ---- where AMD's documents put the elements ------------------------------------------------------

struct place {
    int lane, reg, half;   // half: bits 15:0 (0) or 31:16 (1) of a 16-bit element's register
};

// A[mn][k], or B[k][mn]: the calculator's register-layout tables (gfx11 repeats it in lane + 16)
static place op_place(int mn, int k) {
#if FAMILY == 11
    return { mn, k / 2, k % 2 };   // -a rdna3 -i v_wmma_f32_16x16x16_f16 --register-layout
#elif FAMILY == 12
    return { 16 * (k / 4 % 2) + mn, 2 * (k / 8) + k / 2 % 2, k % 2 };   // -a rdna4
#else
    return { 16 * (k / 4) + mn, k / 2 % 2, k % 2 };   // -a cdna3 -i v_mfma_f32_16x16x16_f16; lab notes
#endif
}

// D[m][n] (and C)
static place acc_place(int m, int n) {
#if FAMILY == 11
    return { 16 * (m % 2) + n, m / 2, 0 };
#elif FAMILY == 12
    return { 16 * (m / 8) + n, m % 8, 0 };
#else
    return { 16 * (m / 4) + n, m % 4, 0 };
#endif
}

// ---- one wave through vae_gpu_amd_mma ------------------------------------------------------------

struct mma_io {
    const unsigned * a, *b;   // WORDS per lane
    float *          d;       // NACC per lane: C in, D out
    bool             bf16;
    int              stop_lane;   // a lane that returns before the instruction (-1: none)
};

static void mma_kernel(mma_io io) {
    const int l = (int) threadIdx.x;
    if (l == io.stop_lane) {
        return;
    }
    unsigned a[WORDS], b[WORDS];
    float    d[NACC];
    memcpy(a, io.a + (size_t) l * WORDS, sizeof(a));
    memcpy(b, io.b + (size_t) l * WORDS, sizeof(b));
    memcpy(d, io.d + (size_t) l * NACC, sizeof(d));
    if (io.bf16) {
        vae_gpu_amd_mma(d, a, b, __nv_bfloat16{});
    } else {
        vae_gpu_amd_mma(d, a, b, __half{});
    }
    memcpy(io.d + (size_t) l * NACC, d, sizeof(d));
}

template <typename P> static cudaError_t launch(void (*fn)(P), P io, unsigned threads, size_t smem = 0) {
    fn->*vae_emu_config("test kernel", __func__, __FILE__, __LINE__, false, dim3(1), dim3(threads), smem) ->*
        vae_emu_args(io);
    cudaDeviceSynchronize();
    return cudaGetLastError();
}

struct operands {
    std::vector<unsigned> a, b;
    std::vector<float>    d;
};

static uint16_t bits16(float v, bool bf16) {
    return bf16 ? __float2bfloat16_rn(v).x : __float2half_rn(v).x;
}

static void put16(std::vector<unsigned> & regs, place p, uint16_t v) {
    unsigned & w = regs[(size_t) p.lane * WORDS + p.reg];
    w            = (w & ~(0xffffu << 16 * p.half)) | (unsigned) v << 16 * p.half;
}

// A (16x16, [m][k]), B ([k][n]) as 16-bit bits, C ([m][n]) into the registers of a wave
static operands pack(const uint16_t * A, const uint16_t * B, const float * C) {
    operands o{ std::vector<unsigned>((size_t) WAVE * WORDS), std::vector<unsigned>((size_t) WAVE * WORDS),
                std::vector<float>((size_t) WAVE * NACC) };
    for (int i = 0; i < 16; i++) {
        for (int k = 0; k < 16; k++) {
            for (int copy = 0; copy < (FAMILY == 11 ? 2 : 1); copy++) {
                place pa = op_place(i, k), pb = op_place(i, k);
                pa.lane += 16 * copy;
                pb.lane += 16 * copy;
                put16(o.a, pa, A[i * 16 + k]);
                put16(o.b, pb, B[k * 16 + i]);
            }
        }
    }
    for (int m = 0; m < 16; m++) {
        for (int n = 0; n < 16; n++) {
            const place p                            = acc_place(m, n);
            o.d[(size_t) p.lane * NACC + p.reg]      = C[m * 16 + n];
        }
    }
    return o;
}

static float value16(uint16_t v, bool bf16) {
    return bf16 ? __bfloat162float({ v }) : __half2float({ v });
}

// the largest error of D against C + A B in double, over the bound of a single f32 rounding of the
// sum of magnitudes (> 1: wrong)
static double mma_error(const uint16_t * A, const uint16_t * B, const float * C, const operands & o, bool bf16) {
    double worst = 0;
    for (int m = 0; m < 16; m++) {
        for (int n = 0; n < 16; n++) {
            double ref = C[m * 16 + n], mag = fabs(ref);
            for (int k = 0; k < 16; k++) {
                const double p = (double) value16(A[m * 16 + k], bf16) * value16(B[k * 16 + n], bf16);
                ref += p;
                mag += fabs(p);
            }
            const place  p   = acc_place(m, n);
            const double got = o.d[(size_t) p.lane * NACC + p.reg];
            worst            = fmax(worst, fabs(got - ref) / (0x1p-23 * mag + 1e-30));
        }
    }
    return worst;
}

static void test_mma(bool bf16, std::mt19937 & rng) {
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    double                                worst = 0, transposed = 1e30;
    for (int trial = 0; trial < 8; trial++) {
        uint16_t A[256], At[256], B[256];
        float    C[256];
        for (int i = 0; i < 256; i++) {
            A[i] = bits16(dist(rng), bf16);
            B[i] = bits16(dist(rng), bf16);
            C[i] = dist(rng) * 4;
        }
        for (int m = 0; m < 16; m++) {
            for (int k = 0; k < 16; k++) {
                At[k * 16 + m] = A[m * 16 + k];
            }
        }
        operands o = pack(A, B, C);
        CHECK(launch(mma_kernel, mma_io{ o.a.data(), o.b.data(), o.d.data(), bf16, -1 }, WAVE) == cudaSuccess,
              "mma launch");
        worst = fmax(worst, mma_error(A, B, C, o, bf16));
        // the check's own teeth: A placed transposed must be seen as wrong
        operands t = pack(At, B, C);
        launch(mma_kernel, mma_io{ t.a.data(), t.b.data(), t.d.data(), bf16, -1 }, WAVE);
        transposed = fmin(transposed, mma_error(A, B, C, t, bf16));
    }
    printf("%s mma: worst error %.3g of an f32 rounding; A transposed: %.3g\n", bf16 ? "bf16" : "f16", worst,
           transposed);
    CHECK(worst <= 1, "%s mma: D differs from C + A B by %.3g f32 roundings", bf16 ? "bf16" : "f16", worst);
    CHECK(transposed > 1e3, "%s mma: a transposed A went unnoticed (%.3g)", bf16 ? "bf16" : "f16", transposed);
}

// ---- the wave's collectives ----------------------------------------------------------------------

struct wave_io {
    int *                d;   // per thread: 5 results
    unsigned long long * ballot;
};

static const unsigned long long all_lanes = ~0ull;

static void wave_kernel(wave_io io) {
    const int t = (int) threadIdx.x, lane = t % WAVE;
    int *     r = io.d + 5 * t;
    r[0]        = __shfl_xor_sync(all_lanes, t, WAVE / 2);         // the other half of the wave
    r[1]        = __shfl_sync(all_lanes, 3 * t, WAVE - 1);         // the wave's last lane
    r[2]        = __shfl_xor_sync(all_lanes, t, 8, 16);            // within 16 lanes
    r[3]        = __all_sync(all_lanes, 1);
    r[4]        = __any_sync(all_lanes, lane == WAVE - 1);
    const unsigned long long b = __ballot_sync(all_lanes, lane % 3 == 0 || lane == WAVE - 1);
    __syncwarp();
    if (lane == 0) {
        io.ballot[t / WAVE] = b;
    }
}

static void test_wave() {
    const int                       threads = 2 * WAVE;
    std::vector<int>                d(5 * threads, -1);
    std::vector<unsigned long long> ballot(2, 0);
    CHECK(launch(wave_kernel, wave_io{ d.data(), ballot.data() }, threads) == cudaSuccess, "wave launch");
    unsigned long long want = 0;
    for (int l = 0; l < WAVE; l++) {
        want |= l % 3 == 0 || l == WAVE - 1 ? 1ull << l : 0;
    }
    int bad = 0;
    for (int t = 0; t < threads; t++) {
        const int base = t / WAVE * WAVE;
        bad += d[5 * t] != (t ^ WAVE / 2) || d[5 * t + 1] != 3 * (base + WAVE - 1) || d[5 * t + 2] != (t ^ 8) ||
               d[5 * t + 3] != 1 || d[5 * t + 4] != 1;
    }
    printf("wave%d collectives: %d of %d threads wrong, ballots %#llx %#llx (want %#llx)\n", WAVE, bad, threads,
           ballot[0], ballot[1], want);
    CHECK(bad == 0, "wave collectives: %d threads got a wrong result", bad);
    CHECK(ballot[0] == want && ballot[1] == want, "ballot");
}

// ---- the device -------------------------------------------------------------------------------

static void smem_kernel(int * out) {
    *out = 1;
}

static void test_device() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0) == cudaSuccess, "properties");
    const int major = VAE_GPU_EMU_GFX >= 1000 ? VAE_GPU_EMU_GFX / 100 : 9,
              minor = VAE_GPU_EMU_GFX >= 1000 ? VAE_GPU_EMU_GFX % 100 / 10 : VAE_GPU_EMU_GFX == 942 ? 4 : 0;
    int ws = 0;
    CHECK(cudaDeviceGetAttribute(&ws, cudaDevAttrWarpSize, 0) == cudaSuccess, "cudaDevAttrWarpSize");
    printf("device: %s [%s], %d.%d, wave %d (attribute %d), shared memory %zu, opt-in %zu\n", p.name, p.gcnArchName,
           p.major, p.minor, p.warpSize, ws, p.sharedMemPerBlock, p.sharedMemPerBlockOptin);
    CHECK(strstr(p.name, "(" ARCH ", emulated)") && strncmp(p.gcnArchName, ARCH, strlen(ARCH)) == 0 &&
              (p.gcnArchName[strlen(ARCH)] == 0 || p.gcnArchName[strlen(ARCH)] == ':'),
          "name %s, arch %s", p.name, p.gcnArchName);
    CHECK(p.major == major && p.minor == minor, "major.minor %d.%d, want %d.%d", p.major, p.minor, major, minor);
    CHECK(p.warpSize == WAVE && ws == WAVE, "warp size %d / %d, want %d", p.warpSize, ws, WAVE);
    CHECK(p.sharedMemPerBlock == 65536 && p.sharedMemPerBlockOptin == 65536, "shared memory limits");
    // 64 KB without the attribute; nothing more, with it or without
    int out = 0;
    CHECK(launch(smem_kernel, &out, 64, 65536) == cudaSuccess && out == 1, "a 64 KB launch");
    out = 0;
    CHECK(launch(smem_kernel, &out, 64, 65537) == cudaErrorInvalidValue && out == 0, "a launch past 64 KB ran");
    CHECK(cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536) == cudaSuccess,
          "the attribute at 64 KB");
    CHECK(cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65537) ==
              cudaErrorInvalidValue,
          "the attribute past 64 KB");
    cudaGetLastError();
}

// ---- runs the emulator must stop ---------------------------------------------------------------

static void test_stops() {
    std::vector<unsigned> a((size_t) 2 * WAVE * WORDS, 0x3c003c00u), b((size_t) 2 * WAVE * WORDS, 0x3c003c00u);
    std::vector<float>    d((size_t) 2 * WAVE * NACC, 0.0f);
    const mma_io          io{ a.data(), b.data(), d.data(), false, -1 };
#if FAMILY == 11
    expect_stop("an A not replicated in lanes 16..31", "lanes 16..31 must hold the same A and B", [&]() {
        a[(size_t) 21 * WORDS + 3] ^= 1;
        launch(mma_kernel, io, WAVE);
    });
    expect_stop("a B not replicated in lanes 16..31", "B word 0", [&]() {
        b[(size_t) 21 * WORDS] ^= 0x10000;
        launch(mma_kernel, io, WAVE);
    });
#endif
    expect_stop("a partial wave", "a wave of 16 lanes", [&]() { launch(mma_kernel, io, WAVE + 16); });
    expect_stop("a diverged wave", "exited", [&]() {
        mma_io early = io;
        early.stop_lane = 7;
        launch(mma_kernel, early, WAVE);
    });
#if WAVE == 64
    expect_stop("a 32-bit full mask on wave64", "mask 0x00000000ffffffff", [&]() {
        struct shfl {
            static void k(int * out) { *out = __shfl_xor_sync(0xffffffffull, 1, 1); }
        };
        int out;
        launch(shfl::k, &out, WAVE);
    });
#endif
}

// ---- the LDS's phases ----------------------------------------------------------------------------

// the wavefronts one wave's access of `bytes` at address(lane) takes in the counters, against counts
// worked out by hand from the measured phases (README.md here, "AMD's LDS"), 32 banks of 4 bytes
static void lds_case(const char * what, unsigned bytes, unsigned (*address)(int), unsigned want, unsigned want_ideal) {
    uintptr_t at[WAVE];
    for (int l = 0; l < WAVE; l++) {
        const unsigned a = address(l);
        at[l]            = a == ~0u ? 0 : (1u << 24) + a;   // (shared windows start at 1 << 24)
    }
    unsigned       ideal = 0;
    const unsigned w     = vae_emu_shared_wavefronts(at, bytes, &ideal);
    printf("lds %s: %u wavefronts (fewest %u)\n", what, w, ideal);
    CHECK(w == want && ideal == want_ideal, "lds %s: %u wavefronts, fewest %u; want %u and %u", what, w, ideal, want,
          want_ideal);
}

static void test_lds() {
    // every lane in exactly one phase, for every width
    for (unsigned bytes : { 2u, 4u, 8u, 16u }) {
        int seen[WAVE] = { 0 }, phases = vae_emu_shared_phases(bytes);
        for (int q = 0; q < phases; q++) {
            for (int i = 0; i < WAVE / phases; i++) {
                const int l = vae_emu_shared_phase_lane(bytes, q, i);
                seen[l >= 0 && l < WAVE ? l : 0] += l >= 0 && l < WAVE ? 1 : 100;
            }
        }
        for (int l = 0; l < WAVE; l++) {
            CHECK(seen[l] == 1, "%u-byte phases: lane %d is in %d of them", bytes, l, seen[l]);
        }
    }
    // 16 bytes, lane bits 0-1 the 16-byte column, bit 4 the next 64 bytes, bit 2 the next 128 (bits
    // 3 and 5 beyond): in the groups {0-3, 20-23} .. of gfx9 and gfx11 lanes 0-3 fill banks 0-15,
    // lanes 20-23 (bits 2 and 4 set) banks 16-31: one wavefront each; gfx12's lanes 0-7 ask banks
    // 0-15 twice (lanes 4-7, bit 2): two
    unsigned (*b128)(int) = [](int l) -> unsigned {
        return 16u * (l % 4) + 64u * (l >> 4 & 1) + 128u * (l >> 2 & 1) + 1024u * (l >> 3 & 1) + 2048u * (l >> 5);
    };
    // 8 bytes, 16 lanes over 128 bytes, the next 16 on the next 128: a phase of 16 lanes is one
    // wavefront (gfx9: 4 phases, gfx11 and gfx12: 2)
    unsigned (*b64)(int) = [](int l) -> unsigned { return 8u * (l % 16) + 128u * (l / 16); };
    // 4 bytes, the same: a phase of 32 lanes asks banks 0-15 twice (gfx9: 2 phases)
    unsigned (*b32)(int) = [](int l) -> unsigned { return 4u * (l % 16) + 128u * (l / 16); };
    // 2 bytes, consecutive: two lanes per word, 16 words per 32 lanes
    unsigned (*b16)(int) = [](int l) -> unsigned { return 2u * l; };
    // 16 bytes, every lane on banks 0-3 of its own 128 bytes, odd lanes idle: 4 lanes per phase ask bank 0
    unsigned (*same)(int) = [](int l) -> unsigned { return l % 2 ? ~0u : 128u * l; };
#if FAMILY == 12
    lds_case("b128 (lane bits 0, 1, 4, 2)", 16, b128, 8, 4);
#else
    lds_case("b128 (lane bits 0, 1, 4, 2)", 16, b128, WAVE / 8, WAVE / 8);
#endif
    lds_case("b64 (16 lanes per 128 bytes)", 8, b64, WAVE / 16, WAVE / 16);
    lds_case("b32 (16 lanes per 128 bytes)", 4, b32, 2 * (WAVE / 32), WAVE / 32);
    lds_case("b16 (consecutive)", 2, b16, WAVE / 32, WAVE / 32);
    lds_case("b128 (even lanes, one bank)", 16, same, 4 * (WAVE / 8), WAVE / 8);
}

int main() {
    std::mt19937 rng(17);
    printf("gfx%d (emulated): %s\n", VAE_GPU_EMU_GFX, FAMILY == 11 ? "RDNA3 WMMA, wave32" :
                                                     FAMILY == 12 ? "RDNA4 WMMA, wave32" : "CDNA MFMA, wave64");
    test_mma(false, rng);
    test_mma(true, rng);
    test_wave();
    test_device();
    test_stops();
    test_lds();
    printf("%s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
