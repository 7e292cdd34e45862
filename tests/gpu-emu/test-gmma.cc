// test-gmma: the emulator's Hopper matrix instructions against an oracle independent of our code.
// The address of every element of wgmma's shared-memory operands that vae_emu_gmma_addr reads from
// a descriptor (its reading of the PTX ISA), and the thread and register of every element of the
// register fragments, against CuTe's canonical layouts, descriptors and fragments
// (gmma-layouts.txt, written by gmma-layouts.sh from NVIDIA's CUTLASS): K-major at 16 and 32 bits,
// MN-major at 16, with no swizzle and the 32-, 64- and 128-byte swizzles, over several K blocks
// (start addresses inside a swizzle atom) and two atoms along M/N and K (LBO and SBO). Then
// wgmma.mma_async itself on the emulated sm_90: operands placed by this file's own formulas (the
// 128-byte swizzle of K-major rows, the 64-byte one of N-major B across two atoms, tf32's 32-byte
// and unswizzled K-major, A from registers), chained into one accumulator and in two commit groups,
// against a double GEMM; and the runs it must stop: shared memory reused before the wait, no fence, threads
// of a warpgroup with other descriptors, a block of partial warpgroups, an exit with one in flight.
// And mbarrier: a producer and its consumers over two phases (arrivals, then transaction bytes),
// and the deadlocks it must report: a wrong parity, a wrong byte count, too few arrivals, a barrier
// never initialized. And TMA: 2-D tensor maps with the 128-byte swizzle and padded rows, the boxes
// landed by an mbarrier's wait into wgmma's K-major atoms (rows past the tensor as zeros), the
// product against a double GEMM; the driver's refusal of a box wider than its swizzle, and a block
// that ends with its copies in flight. And TMA's im2col mode against the examples of Triton's
// tutorial, which its tests run on Hopper GPUs.
// Usage: test-gmma gmma-layouts.txt

#include "emu-check.h"
#include "gpu-emu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

static uint64_t desc_of(unsigned start, unsigned lbo, unsigned sbo, unsigned base, unsigned mode) {
    return (uint64_t) (start >> 4) | (uint64_t) (lbo >> 4) << 16 | (uint64_t) (sbo >> 4) << 32 | (uint64_t) base << 49 |
           (uint64_t) mode << 62;
}

// one case of the table: its K blocks, each checked element by element; the number of elements
static long check_case(FILE * f, const char * name, unsigned elem, bool mn, unsigned mode, int M, int kbs, int K) {
    const int V = 16 / (int) elem;
    long      n = 0, bad = 0;
    for (int b = 0; b < kbs; b++) {
        unsigned start, lbo, sbo, base, m;
        if (fscanf(f, " kb %u %u %u %u %u", &start, &lbo, &sbo, &base, &m) != 5 || m != mode) {
            CHECK(false, "%s: K block %d unreadable", name, b);
            return n;
        }
        const uint64_t d = desc_of(start, lbo, sbo, base, mode);
        for (int o = 0; o < M * K / V; o++) {
            long chunk = 0;
            if (fscanf(f, " %ld", &chunk) != 1) {
                CHECK(false, "%s: K block %d: chunk %d unreadable", name, b, o);
                return n;
            }
            const int i0 = mn ? o % (M / V) * V : o / (K / V), k0 = mn ? o / (M / V) : o % (K / V) * V;
            for (int e = 0; e < V; e++) {   // the chunk's elements, contiguous
                const int      i = mn ? i0 + e : i0, k = mn ? k0 : k0 + e;
                const unsigned got = vae_emu_gmma_addr(d, mn, elem, i, k, __FILE__, __LINE__);
                const unsigned want = (unsigned) chunk * 16 + (unsigned) e * elem;
                if (got != want && bad++ < 5) {
                    CHECK(false, "%s: K block %d (start %u, LBO %u, SBO %u): element (%d, %d) at byte %u, CuTe's at %u",
                          name, b, start, lbo, sbo, i, k, got, want);
                }
                n++;
            }
        }
    }
    CHECK(bad == 0, "%s: %ld of %ld elements at another address than CuTe's", name, bad, n);
    return n;
}

// thread t's value v of a fragment at m + 64 c: the emulator's map against the table
static void check_fragment(FILE * f, const char * what, int N, int values) {
    int bad = 0;
    for (int t = 0; t < 128; t++) {
        for (int v = 0; v < values; v++) {
            int want = -1, m = 0, c = 0;
            if (fscanf(f, " %d", &want) != 1) {
                CHECK(false, "fragment %s: thread %d value %d unreadable", what, t, v);
                return;
            }
            vae_emu_gmma_frag_at(t, v, &m, &c);
            if (m + 64 * c != want && bad++ < 5) {
                CHECK(false, "fragment %s: thread %d value %d at (%d, %d), CuTe's at (%d, %d)", what, t, v, m, c,
                      want % 64, want / 64);
            }
        }
    }
    printf("fragment %s 64x%d: %s\n", what, N, bad ? "FAIL" : "as CuTe's");
}

static void test_layouts(const char * path) {
    FILE * f = fopen(path, "r");
    if (!f) {
        CHECK(false, "cannot open %s", path);
        return;
    }
    int  cases = 0, fragments = 0;
    char line[512];
    while (fscanf(f, " %511s", line) == 1) {
        if (line[0] == '#') {
            if (!fgets(line, sizeof(line), f)) {
                break;
            }
        } else if (!strcmp(line, "case")) {
            char     name[64], major[4];
            unsigned elem, mode;
            int      M, kbs, K;
            if (fscanf(f, " %63s %u %3s %u %d %d %d", name, &elem, major, &mode, &M, &kbs, &K) != 7) {
                CHECK(false, "case %d unreadable", cases);
                break;
            }
            const long n = check_case(f, name, elem, !strcmp(major, "MN"), mode, M, kbs, K);
            printf("%-14s %2u-byte elements, %s-major, swizzle mode %u, %d x %d in %d K blocks: %ld elements%s\n", name,
                   elem, major, mode, M, K * kbs, kbs, n, failures ? " (failures so far)" : "");
            cases++;
        } else if (!strcmp(line, "fragment")) {
            char what[4];
            int  M, N;
            if (fscanf(f, " %3s %d %d", what, &M, &N) != 3 || M != 64) {
                CHECK(false, "a fragment unreadable");
                break;
            }
            check_fragment(f, what, N, N / 2);
            fragments++;
        } else {
            CHECK(false, "%s: unexpected '%s'", path, line);
            break;
        }
    }
    fclose(f);
    CHECK(cases == 12 && fragments == 2, "%s: %d cases and %d fragments, 12 and 2 expected", path, cases, fragments);
}

// ---- wgmma.mma_async -----------------------------------------------------------------------------

// A 64 x K (K-major) and B N x K into shared memory, then K / KI instructions m64nNkKI into d;
// shape 0: bf16, A with the 128-byte swizzle (8 rows of 128 bytes an atom, 16-byte chunk c of row
// r at c ^ r % 8), B N-major with the 64-byte swizzle (atoms of 32 n x 8 k, rows of 64 bytes, chunk
// c of row k at c ^ k % 8 / 2; the second atom along N at LBO), K 64, one commit group. Shape 1:
// tf32, A with the 32-byte swizzle (rows of 32 bytes, chunk c at c ^ r % 8 / 4; the next 8 k a whole
// tile of such atoms on), B K-major unswizzled (8 x 16-byte core matrices: rows 16 bytes apart,
// the next chunk along K at LBO, the next 8 n at SBO), K 32, in two commit groups waited for in
// turn. Shape 2: shape 0 with A from registers (each thread's fragment of the K block, from global
// memory). The threads' stores of the operands (the generic proxy) are fenced for wgmma (the async
// proxy) by fence.proxy.async before the barrier. flaw: 1 shared memory reused before the wait, 2 no
// wgmma.fence, 3 thread 5 with another descriptor, 4 no wait, 5 no fence.proxy.async (caught with
// the race checker on: test-gmma-race)
struct wg_io {
    const float * a, *b;
    float *       d;
    int           shape, n, flaw;
};

static const int WG_K[3] = { 64, 32, 64 };

static unsigned wg_a_at(int shape, int m, int k) {
    if (shape == 0) {
        return (unsigned) (m / 8 * 1024 + m % 8 * 128 + ((k / 8) ^ (m % 8)) * 16 + k % 8 * 2);
    }
    return (unsigned) (k / 8 * 2048 + m / 8 * 256 + m % 8 * 32 + ((k % 8 / 4) ^ (m % 8 / 4)) * 16 + k % 4 * 4);
}

static unsigned wg_b_at(int shape, int n, int k) {
    if (shape == 0) {
        return (unsigned) (16384 + n / 32 * 4096 + k / 8 * 512 + k % 8 * 64 + ((n % 32 / 8) ^ (k % 8 / 2)) * 16 + n % 8 * 2);
    }
    return (unsigned) (16384 + n / 8 * 1024 + k / 4 * 128 + n % 8 * 16 + k % 4 * 4);
}

static void wg_kernel(wg_io io) {
    char *    s = (char *) vae_emu_dyn_smem("test");
    const int  t = (int) threadIdx.x, K = WG_K[io.shape], KI = io.shape == 1 ? 8 : 16;
    const bool tf = io.shape == 1, rs = io.shape == 2;
    for (int e = t; e < 64 * K + io.n * K; e += 128) { // (element e: A's, then B's, row-major)
        const bool  a = e < 64 * K;
        const int   r = a ? e / K : (e - 64 * K) / K, k = a ? e % K : (e - 64 * K) % K;
        const float v = a ? io.a[e] : io.b[e - 64 * K];
        const unsigned at = a ? wg_a_at(tf, r, k) : wg_b_at(tf, r, k);
        if (!tf) {
            const __nv_bfloat16 h = __float2bfloat16_rn(v);
            memcpy(s + at, &h, 2);
        } else {
            memcpy(s + at, &v, 4);
        }
    }
    if (io.flaw != 5) {
        vae_emu_fence_proxy_async();
    }
    __syncthreads();
    const unsigned base = __cvta_generic_to_shared(s);
    float          d[128];
    for (int v = 0; v < io.n / 2; v++) {
        d[v] = 0.0f;
    }
    if (io.flaw != 2) {
        vae_emu_wgmma_fence(__FILE__, __LINE__);
    }
    for (int j = 0; j < K / KI; j++) {
        // the instruction's K block: A's start 32 bytes on along its rows (shape 0) or an atom tile on
        // (1); B's 2 k groups on (0), or 2 core matrices along K (1)
        const unsigned sa = base + (unsigned) (tf ? j * 2048 : j * 32);
        const unsigned sb = base + 16384 + (unsigned) (tf ? j * 256 : j * 1024);
        const uint64_t da = (uint64_t) (sa >> 4 & 0x3fff) | (uint64_t) 1 << 16 | (uint64_t) ((tf ? 256 : 1024) >> 4) << 32 |
                            (uint64_t) (tf ? 3 : 1) << 62;
        const uint64_t db = (uint64_t) (sb >> 4 & 0x3fff) | (uint64_t) ((tf ? 128 : 4096) >> 4) << 16 |
                            (uint64_t) ((tf ? 1024 : 512) >> 4) << 32 | (uint64_t) (tf ? 0 : 2) << 62;
        if (rs) { // (A from registers: this thread's fragment of the K block, from global memory)
            unsigned a[4];
            for (int v = 0; v < 8; v += 2) {
                int m = 0, k = 0;
                vae_emu_gmma_frag_at(t, v, &m, &k);   // (v + 1: k + 1)
                const __nv_bfloat16 lo = __float2bfloat16_rn(io.a[m * K + 16 * j + k]);
                const __nv_bfloat16 hi = __float2bfloat16_rn(io.a[m * K + 16 * j + k + 1]);
                a[v / 2]               = (unsigned) *(const uint16_t *) &lo | (unsigned) *(const uint16_t *) &hi << 16;
            }
            vae_emu_wgmma_rs(d, io.n, a, db, true, 1, true, __FILE__, __LINE__);
        } else {
            vae_emu_wgmma(d, io.n, io.flaw == 3 && t == 5 ? da + 2 : da, db, false, !tf, tf ? 3 : 1, true, __FILE__,
                          __LINE__);
        }
        if (io.shape == 1 && j == K / KI / 2 - 1) {
            vae_emu_wgmma_commit(__FILE__, __LINE__);
        }
    }
    vae_emu_wgmma_commit(__FILE__, __LINE__);
    if (io.flaw == 1) {
        __syncthreads();
        if (t == 0) {
            s[wg_a_at(tf, 3, 5)] ^= 1;   // (a producer filling the stage again)
        }
        __syncthreads();
    }
    if (io.shape == 1 && io.flaw == 0) {
        vae_emu_wgmma_wait(1, __FILE__, __LINE__);   // the first group complete, the second in flight
        for (int v = 0; v < io.n / 2; v++) {
            CHECK(isnan(d[v]), "thread %d: accumulator %d readable while its wgmma is in flight", t, v);
        }
    }
    if (io.flaw != 4) {
        vae_emu_wgmma_wait(0, __FILE__, __LINE__);
    }
    for (int v = 0; v < io.n / 2; v++) {
        int m = 0, c = 0;
        vae_emu_gmma_frag_at(t, v, &m, &c);
        io.d[m * io.n + c] = d[v];
    }
}

static cudaError_t wg_launch(const wg_io & io, unsigned threads) {
    wg_kernel->*vae_emu_config("wgmma test kernel", __func__, __FILE__, __LINE__, false, dim3(1), dim3(threads), 32768) ->*
        vae_emu_args(io);
    cudaDeviceSynchronize();
    return cudaGetLastError();
}

static float rounded(float v, int shape) {
    return shape != 1 ? __bfloat162float(__float2bfloat16_rn(v)) : __uint_as_float(__float_as_uint(v) & 0xffffe000u);
}

static void test_wgmma(int shape, int n) {
    const int          K = WG_K[shape];
    std::vector<float> a((size_t) 64 * K), b((size_t) n * K), d((size_t) 64 * n, -1.0f);
    unsigned           x = 12345u + (unsigned) shape;
    for (auto * v : { &a, &b }) {
        for (float & e : *v) {
            x = x * 1664525u + 1013904223u;
            e = (float) (x >> 8) / 16777216.0f * 2.0f - 1.0f;
        }
    }
    const wg_io io = { a.data(), b.data(), d.data(), shape, n, 0 };
    cudaFuncSetAttribute((const void *) wg_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 32768);
    CHECK(wg_launch(io, 128) == cudaSuccess, "wgmma shape %d: launch", shape);
    double err = 0.0;
    for (int m = 0; m < 64; m++) {
        for (int c = 0; c < n; c++) {
            double r = 0.0;
            for (int k = 0; k < K; k++) {
                r += (double) rounded(a[(size_t) m * K + k], shape) * rounded(b[(size_t) c * K + k], shape);
            }
            err = fmax(err, fabs(d[(size_t) m * n + c] - r));
        }
    }
    static const char * a_of[3] = { "K-major 128-byte swizzle", "K-major 32-byte swizzle", "from registers" };
    printf("wgmma m64n%dk%d %s x %d instructions (A %s, B %s): max error %.3g against a double GEMM\n", n,
           shape == 1 ? 8 : 16, shape == 1 ? "tf32" : "bf16", K / (shape == 1 ? 8 : 16), a_of[shape],
           shape == 1 ? "K-major unswizzled" : "N-major 64-byte swizzle, two atoms", err);
    CHECK(err < 1e-4, "wgmma shape %d: max error %g", shape, err);
}

// ---- mbarrier -------------------------------------------------------------------------------------

// a producer warp (warp 1) fills a stage, each of its threads arriving on `full` after its write;
// the consumers (warps 0, 2, 3) wait for that phase, read the stage and arrive on `empty`, which the
// producers wait for before they fill the stage again. Twice, the second phase with transaction
// bytes too: thread 32 arrives with expect_tx of 64 bytes, which land (complete_tx) in two halves.
// flaw: 1 the consumers wait for the wrong parity, 2 expect_tx of 72 bytes, 3 a barrier never
// initialized, 4 an arrival count one too many, 5 the producers do not wait for `empty` (they run a
// phase ahead: the consumers' wait for phase 0 then waits for phase 2, parity alone telling them
// apart). (With the count 1 and thread 32 alone arriving, the emulator's random order had consumers
// read bytes the other producers had not written yet.)
struct mb_io {
    int * out;
    int   flaw;
};

static void mb_kernel(mb_io io) {
    char *         s    = (char *) vae_emu_dyn_smem("test");
    const unsigned base = __cvta_generic_to_shared(s), full = base + 256, empty = base + 264;
    const int      t    = (int) threadIdx.x;
    if (t == 0 && io.flaw != 3) {
        vae_emu_mbar_init(full, io.flaw == 4 ? 33 : 32, __FILE__, __LINE__);
        vae_emu_mbar_init(empty, 96, __FILE__, __LINE__);
    }
    __syncthreads();
    for (int phase = 0; phase < 2; phase++) {
        if (t / 32 == 1) {
            if (phase > 0 && io.flaw != 5) {
                vae_emu_mbar_wait(empty, (unsigned) (phase - 1) & 1, __FILE__, __LINE__);
            }
            s[t % 32] = (char) (t % 32 + 10 * phase);
        }
        if (t / 32 == 1) {
            vae_emu_mbar_arrive(full, t == 32 && phase == 1 ? (io.flaw == 2 ? 72 : 64) : 0, __FILE__, __LINE__);
        }
        if (t == 32 && phase == 1) {
            vae_emu_mbar_complete_tx(full, 32, __FILE__, __LINE__);
            vae_emu_mbar_complete_tx(full, 32, __FILE__, __LINE__);
        }
        if (t / 32 != 1) {
            vae_emu_mbar_wait(full, (unsigned) (io.flaw == 1 ? phase + 1 : phase) & 1, __FILE__, __LINE__);
            io.out[phase * 128 + t] = s[t % 32];
            vae_emu_mbar_arrive(empty, 0, __FILE__, __LINE__);
        }
    }
}

static void mb_launch(mb_io io) {
    mb_kernel->*vae_emu_config("mbarrier test kernel", __func__, __FILE__, __LINE__, false, dim3(1), dim3(128), 512) ->*
        vae_emu_args(io);
    cudaDeviceSynchronize();
}

static void test_mbarrier() {
    std::vector<int> out(256, -1);
    mb_launch({ out.data(), 0 });
    int bad = 0;
    for (int phase = 0; phase < 2; phase++) {
        for (int t = 0; t < 128; t++) {
            bad += t / 32 != 1 && out[phase * 128 + t] != t % 32 + 10 * phase;
        }
    }
    printf("mbarrier: two phases (arrivals, then transaction bytes), the consumers reading what the producer wrote: "
           "%s\n", bad ? "FAIL" : "yes");
    CHECK(bad == 0, "mbarrier: %d consumer reads wrong", bad);
    expect_stop("a wait for the wrong parity", "which never completes", [&]() {
        mb_launch({ out.data(), 1 });
    });
    expect_stop("an expect_tx of 8 bytes too many", "8 transaction bytes pending", [&]() {
        mb_launch({ out.data(), 2 });
    });
    expect_stop("a barrier never initialized", "used before mbarrier.init", [&]() { mb_launch({ out.data(), 3 }); });
    expect_stop("an arrival count one too many", "1 of its 33 arrivals", [&]() { mb_launch({ out.data(), 4 }); });
    // (whether the consumers meet phase 2 depends on the order the threads run in, on a GPU as here;
    // the emulator's default order, deterministic for this launch, has them meet it)
    expect_stop("a producer running a phase ahead", "which never completes", [&]() {
        unsetenv("VAE_GPU_EMU_ORDER");
        mb_launch({ out.data(), 5 });
    });
}

// ---- TMA + wgmma ----------------------------------------------------------------------------------

// A (60 x 64 bf16, rows 144 bytes apart) and B (32 x 64, rows 160 bytes apart) in global memory;
// tensor maps with boxes of 64 x 64 and 64 x 32 elements (128-byte rows) and the 128-byte swizzle,
// which lay them out as wgmma's K-major 128-byte atoms; one thread arrives with expect_tx of both
// boxes and issues the two copies, every thread waits, then m64n32k16 x 4 (A's rows 60..63 outside
// the tensor: zeros). flaw: 1 no thread waits (the block ends with the copies in flight)
struct tma_io {
    const void * map_a, *map_b;
    float *      d;
    int          flaw;
};

static void tma_kernel(tma_io io) {
    char *         s    = (char *) vae_emu_dyn_smem("test");
    const unsigned base = __cvta_generic_to_shared(s), bar = base + 16384;
    const int      t    = (int) threadIdx.x;
    if (t == 0) {
        vae_emu_mbar_init(bar, 1, __FILE__, __LINE__);
    }
    __syncthreads();
    if (t == 0) {
        const int at[2] = { 0, 0 };
        vae_emu_mbar_arrive(bar, 64 * 64 * 2 + 32 * 64 * 2, __FILE__, __LINE__);
        vae_emu_tma_load(base, io.map_a, at, bar, __FILE__, __LINE__);
        vae_emu_tma_load(base + 8192, io.map_b, at, bar, __FILE__, __LINE__);
    }
    if (io.flaw == 1) {
        return;
    }
    vae_emu_mbar_wait(bar, 0, __FILE__, __LINE__);
    float d[16];
    vae_emu_wgmma_fence(__FILE__, __LINE__);
    for (int j = 0; j < 4; j++) {
        const uint64_t sbo = (uint64_t) (1024 >> 4) << 32, sw = (uint64_t) 1 << 62, lbo = (uint64_t) 1 << 16;
        const uint64_t da  = (uint64_t) ((base + 32 * j) >> 4 & 0x3fff) | lbo | sbo | sw;
        const uint64_t db  = (uint64_t) ((base + 8192 + 32 * j) >> 4 & 0x3fff) | lbo | sbo | sw;
        vae_emu_wgmma(d, 32, da, db, false, false, 1, j > 0, __FILE__, __LINE__);
    }
    vae_emu_wgmma_commit(__FILE__, __LINE__);
    vae_emu_wgmma_wait(0, __FILE__, __LINE__);
    for (int v = 0; v < 16; v++) {
        int m = 0, c = 0;
        vae_emu_gmma_frag_at(t, v, &m, &c);
        io.d[m * 32 + c] = d[v];
    }
}

static void test_tma(int flaw) {
    std::vector<__nv_bfloat16> ga(60 * 72), gb(32 * 80);   // (rows of 144 and 160 bytes)
    std::vector<float>         a(60 * 64), b(32 * 64), d(64 * 32, -1.0f);
    unsigned                   x = 777u;
    for (int i = 0; i < 60 * 64 + 32 * 64; i++) {
        x             = x * 1664525u + 1013904223u;
        const float v = __bfloat162float(__float2bfloat16_rn((float) (x >> 8) / 16777216.0f * 2.0f - 1.0f));
        if (i < 60 * 64) {
            a[i]                         = v;
            ga[(size_t) i / 64 * 72 + i % 64] = __float2bfloat16_rn(v);
        } else {
            b[i - 60 * 64]                                 = v;
            gb[(size_t) (i - 60 * 64) / 64 * 80 + i % 64] = __float2bfloat16_rn(v);
        }
    }
    alignas(64) unsigned char map_a[128], map_b[128];
    const uint64_t            dim_a[2] = { 64, 60 }, dim_b[2] = { 64, 32 }, st_a[1] = { 144 }, st_b[1] = { 160 };
    const uint32_t            box_a[2] = { 64, 64 }, box_b[2] = { 64, 32 }, ones[2] = { 1, 1 };
    CHECK(vae_emu_tensor_map_encode_tiled(map_a, 9, 2, ga.data(), dim_a, st_a, box_a, ones, 0, 3, 0, 0) == 0 &&
              vae_emu_tensor_map_encode_tiled(map_b, 9, 2, gb.data(), dim_b, st_b, box_b, ones, 0, 3, 0, 0) == 0,
          "cuTensorMapEncodeTiled refused a valid map");
    const uint32_t wide[2] = { 128, 32 };   // (256-byte rows: wider than the 128-byte swizzle)
    CHECK(vae_emu_tensor_map_encode_tiled(map_b, 9, 2, gb.data(), dim_b, st_b, wide, ones, 0, 3, 0, 0) == 1,
          "cuTensorMapEncodeTiled took a box row wider than its swizzle");
    CHECK(vae_emu_tensor_map_encode_tiled(map_b, 9, 2, gb.data(), dim_b, st_b, box_b, ones, 0, 3, 0, 0) == 0, "again");
    const tma_io io = { map_a, map_b, d.data(), flaw };
    auto         go = [&]() {
        cudaFuncSetAttribute((const void *) tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 16392);
        tma_kernel->*vae_emu_config("tma test kernel", __func__, __FILE__, __LINE__, false, dim3(1), dim3(128), 16392) ->*
            vae_emu_args(io);
        cudaDeviceSynchronize();
    };
    if (flaw) {
        expect_stop("a block ending with its tensor copies in flight", "in flight (no thread waited", go);
        return;
    }
    vae_emu_counts_start(0);
    go();
    // the counters (gpu-emu-counts.h): 4 wgmma of the warpgroup, 2 x 64 x 32 x 16 FLOP and (64 + 32) x
    // 16 bf16 operands read each; 2 copies of 64 x 64 and 64 x 32 bf16
    const vae_emu_counts * rec = nullptr;
    const size_t           nrec = vae_emu_counts_read(&rec);
    vae_emu_counts_stop();
    CHECK(nrec == 1 && rec[0].wgmma == 4 && rec[0].wgmma_flop == 4ull * 2 * 64 * 32 * 16 &&
              rec[0].wgmma_smem == 4ull * (64 + 32) * 16 * 2 && rec[0].tma == 2 && rec[0].tma_bytes == (64 + 32) * 64 * 2,
          "TMA + wgmma counted: %zu records, %llu wgmma, %llu FLOP, %llu shared bytes, %llu copies of %llu bytes", nrec,
          nrec ? rec[0].wgmma : 0, nrec ? rec[0].wgmma_flop : 0, nrec ? rec[0].wgmma_smem : 0, nrec ? rec[0].tma : 0,
          nrec ? rec[0].tma_bytes : 0);
    double err = 0.0;
    for (int m = 0; m < 64; m++) {
        for (int c = 0; c < 32; c++) {
            double r = 0.0;
            for (int k = 0; k < 64 && m < 60; k++) {
                r += (double) a[(size_t) m * 64 + k] * b[(size_t) c * 64 + k];
            }
            err = fmax(err, fabs(d[(size_t) m * 32 + c] - r));
        }
    }
    printf("TMA (2-D tiles, 128-byte swizzle, rows past the tensor as zeros) into wgmma m64n32k16 x 4: max error %.3g "
           "against a double GEMM\n", err);
    CHECK(err < 1e-4, "TMA + wgmma: max error %g", err);
}

// ---- TMA, im2col mode ---------------------------------------------------------------------------
// The four examples of Triton's TMA im2col tutorial (triton-lang/triton,
// python/tutorials/gluon/13-tma-im2col.py; its tests run them on Hopper GPUs), with their expected
// pixels: an NHWC f32 tensor whose pixel i (from 0, in memory order) holds i + 1 in every channel,
// boxes of 16 pixels x 32 channels (128-byte rows, 128-byte swizzle). Thread p reads pixel p's
// channel 0 (chunk 0 of its row, swizzled to chunk p % 8).
struct im2col_io {
    const void * map;
    int          coords[4], offsets[2];
    float *      out;
};

static void im2col_kernel(im2col_io io) {
    char *         s    = (char *) vae_emu_dyn_smem("test");
    const unsigned base = __cvta_generic_to_shared(s), bar = base + 2048;
    const int      t    = (int) threadIdx.x;
    if (t == 0) {
        vae_emu_mbar_init(bar, 1, __FILE__, __LINE__);
        vae_emu_mbar_arrive(bar, 16 * 32 * 4, __FILE__, __LINE__);
        vae_emu_tma_load_im2col(base, io.map, io.coords, io.offsets, bar, __FILE__, __LINE__);
    }
    __syncthreads();
    vae_emu_mbar_wait(bar, 0, __FILE__, __LINE__);
    if (t < 16) {
        memcpy(&io.out[t], s + t * 128 + (t % 8) * 16, 4);
    }
}

static void test_im2col() {
    static const struct {
        const char * what;
        int          n, lower, upper, h, w, off;
        float        want[16];
    } ex[] = {
        { "basic", 1, 0, 0, 0, 0, 0, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } },
        { "padded", 1, -1, -1, -1, -1, 0, { 0, 0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11 } },
        { "shifted by the offsets", 1, -1, -1, -1, -1, 1, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } },
        { "across two images", 2, 0, 0, 1, 3, 0, { 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23 } },
    };
    for (const auto & e : ex) {
        std::vector<float> x((size_t) e.n * 16 * 32), out(16, -1.0f);
        for (size_t i = 0; i < x.size(); i++) {
            x[i] = (float) (i / 32 + 1);
        }
        alignas(64) unsigned char map[128];
        const uint64_t            dim[4]    = { 32, 4, 4, (uint64_t) e.n }, stride[3] = { 128, 512, 2048 };
        const int                 lower[2]  = { e.lower, e.lower }, upper[2] = { e.upper, e.upper };
        const uint32_t            ones[4]   = { 1, 1, 1, 1 };
        CHECK(vae_emu_tensor_map_encode_im2col(map, 7, 4, x.data(), dim, stride, lower, upper, 32, 16, ones, 0, 3, 0, 0) ==
                  0, "im2col %s: cuTensorMapEncodeIm2col refused the map", e.what);
        const im2col_io io = { map, { 0, e.w, e.h, 0 }, { e.off, e.off }, out.data() };
        im2col_kernel->*vae_emu_config("im2col test kernel", __func__, __FILE__, __LINE__, false, dim3(1), dim3(32),
                                       2056) ->*
            vae_emu_args(io);
        cudaDeviceSynchronize();
        const bool same = memcmp(out.data(), e.want, sizeof(e.want)) == 0;
        printf("TMA im2col, %s: %s\n", e.what, same ? "the pixels Triton's test expects" : "FAIL");
        CHECK(same, "im2col %s: pixel 0 %g, 5 %g, 15 %g (want %g, %g, %g)", e.what, out[0], out[5], out[15], e.want[0],
              e.want[5], e.want[15]);
    }
}

// ---- elect.sync, setmaxnreg --------------------------------------------------------------------------

// each warp elects one lane of mask 0x0ff0 (every lane calls): lanes 4 or 11 by the block's parity
struct elect_io {
    int * leaders;   // per block and warp: how many lanes were elected, then the last one's lane
    int   regs;      // setmaxnreg's count (0: none)
};

static void elect_kernel(elect_io io) {
    const int t = (int) threadIdx.x, b = (int) blockIdx.x;
    if (vae_emu_elect(__FILE__, __LINE__, 0x0ff0u)) {
        io.leaders[(b * 4 + t / 32) * 2]++;
        io.leaders[(b * 4 + t / 32) * 2 + 1] = t % 32;
    }
    if (io.regs) {
        vae_emu_setmaxnreg((unsigned) (t == 5 && io.regs == 240 ? 232 : io.regs), true, __FILE__, __LINE__);
    }
}

static void test_elect() {
    std::vector<int> leaders(2 * 4 * 2, 0);
    auto             go = [&](int regs) {
        elect_kernel->*vae_emu_config("elect test kernel", __func__, __FILE__, __LINE__, false, dim3(2), dim3(128), 0) ->*
            vae_emu_args(elect_io{ leaders.data(), regs });
        cudaDeviceSynchronize();
    };
    go(232);
    bool ok = true;
    for (int b = 0; b < 2; b++) {
        for (int w = 0; w < 4; w++) {
            ok = ok && leaders[(b * 4 + w) * 2] == 1 && leaders[(b * 4 + w) * 2 + 1] == (b ? 11 : 4);
        }
    }
    printf("elect.sync: one lane of the mask in each warp, the lowest or the highest by the block: %s\n",
           ok ? "yes" : "FAIL");
    CHECK(ok, "elect.sync: leaders %d %d, %d %d", leaders[0], leaders[1], leaders[8], leaders[9]);
    expect_stop("setmaxnreg 20", "not in 24 .. 256", [&]() { go(20); });
    expect_stop("setmaxnreg with another count in one thread", "asks another count", [&]() { go(240); });
}

static void test_stops() {
    std::vector<float> a(64 * 64, 0.5f), b(40 * 64, 0.25f), d(64 * 40);
    auto               run = [&](int flaw, unsigned threads) {
        const wg_io io = { a.data(), b.data(), d.data(), 0, 40, flaw };
        cudaFuncSetAttribute((const void *) wg_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 32768);
        wg_launch(io, threads);
    };
    expect_stop("shared memory reused before the wait", "changed before this wgmma.wait_group", [&]() { run(1, 128); });
    expect_stop("a wgmma without a fence", "without a wgmma.fence", [&]() { run(2, 128); });
    expect_stop("a thread with another descriptor", "gives other operands", [&]() { run(3, 128); });
    expect_stop("an exit with a wgmma in flight", "in flight", [&]() { run(4, 128); });
    expect_stop("a block of 96 threads", "its warpgroup incomplete", [&]() { run(0, 96); });
}

int main(int argc, char ** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s gmma-layouts.txt\n", argv[0]);
        return 2;
    }
#if defined(VAE_TEST_GMMA_RACE)
    // (this file instrumented, the race checker on: the proxies; the mbarrier and TMA cases are left
    // out, as the checker does not yet take an mbarrier phase as ordering)
    for (int shape = 0; shape < 3; shape++) {
        test_wgmma(shape, shape == 1 ? 16 : 40);
    }
    std::vector<float> a(64 * 64, 0.5f), b(40 * 64, 0.25f), d(64 * 40);
    expect_stop("operands stored with no fence.proxy.async", "no fence.proxy.async after the write", [&]() {
        const wg_io io = { a.data(), b.data(), d.data(), 0, 40, 5 };
        cudaFuncSetAttribute((const void *) wg_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 32768);
        wg_launch(io, 128);
    });
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
#endif
    test_layouts(argv[1]);
    test_wgmma(0, 40);
    test_wgmma(1, 16);
    test_wgmma(2, 40);
    test_stops();
    test_mbarrier();
    test_tma(0);
    test_tma(1);
    test_im2col();
    test_elect();
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
