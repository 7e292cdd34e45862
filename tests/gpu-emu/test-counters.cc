// test-counters: the emulator's counters (README.md here, "Counters") on small kernels whose counts
// are worked out by hand in the comments below, from the bank rules alone (32 banks of 4 bytes: the
// bank of byte address a is a / 4 % 32): ldmatrix .x4 and the loaders' 16-byte writes in
// conflict-free, conflicting and broadcast layouts, among them the padded 80-byte rows the conv
// kernels' A tiles had and the XOR-swizzled 64-byte ones they have; mma.sync by shape; barriers and blocks; device-to-device copies, and nothing
// recorded before counting starts; and (this file compiled with the race checker's instrumentation,
// as the counting builds are) the kernels' own shared loads and stores by width and stride, and
// their global bytes and 32-byte sectors. Built for the emulated sm_86.

#include "emu-check.h"
#include "gpu-emu.h"

#include <stdio.h>
#include <string.h>

// the kernels' parameter: per lane of a warp, the byte offset (into the dynamic shared array) of
// its ldmatrix row or its 16-byte write
struct offsets {
    unsigned at[32];
};

static void ldsm_kernel(offsets o) {
    char *   s = (char *) vae_emu_dyn_smem("test");
    unsigned r[4];
    for (int i = 0; i < 64; i += 4) { // (4 KB written before it is read, as a kernel must)
        *(unsigned *) (s + threadIdx.x * 64 + i) = 0;
    }
    __syncthreads();
    vae_gpu_ptx_ldsm(r, __cvta_generic_to_shared(s + o.at[threadIdx.x % 32]));
}

static const unsigned char zeros[16] = { 0 };

// each warp in its own 4 KB (the same banks)
static void st16_kernel(offsets o) {
    char * s = (char *) vae_emu_dyn_smem("test") + threadIdx.x / 32 * 4096;
    vae_gpu_cp16<true>(__cvta_generic_to_shared(s + o.at[threadIdx.x % 32]), zeros, true);
    vae_gpu_cp_commit();
    vae_gpu_cp_wait<0>();
    __syncthreads();
    vae_gpu_cp16<true>(__cvta_generic_to_shared(s + o.at[threadIdx.x % 32]), zeros, true); // a second per lane
    vae_gpu_cp_commit();
    vae_gpu_cp_wait<0>();
}

// per warp: 3 m16n8k16 bf16, 2 m16n8k16 f16, 1 m16n8k8 tf32
static void mma_kernel(int) {
    unsigned a[4] = { 0 }, b[2] = { 0 };
    float    d[4] = { 0 };
    for (int i = 0; i < 3; i++) {
        vae_gpu_ptx_mma(d, a, b, __nv_bfloat16());
    }
    for (int i = 0; i < 2; i++) {
        vae_gpu_ptx_mma(d, a, b, __half());
    }
    vae_gpu_ptx_mma(d, a, b, 0.0f);
    __syncthreads();
    __syncthreads();
}

// per warp, as many bf16 mma as the block's index in the grid
static void indexed_kernel(int) {
    unsigned a[4] = { 0 }, b[2] = { 0 };
    float    d[4] = { 0 };
    for (unsigned i = 0; i < blockIdx.x + blockIdx.y * gridDim.x; i++) {
        vae_gpu_ptx_mma(d, a, b, __nv_bfloat16());
    }
}

template <typename P> static const vae_emu_counts * run(void (*fn)(P), P p, dim3 grid, unsigned threads, size_t smem) {
    const vae_emu_counts * r = nullptr;
    vae_emu_counts_start(0);
    fn->*vae_emu_config("test kernel", __func__, __FILE__, __LINE__, false, grid, dim3(threads), smem) ->* vae_emu_args(p);
    const size_t n = vae_emu_counts_read(&r);
    CHECK(n == 1, "%zu records of one launch", n);
    return n == 1 ? r : nullptr;
}

static offsets rows(unsigned stride) {
    offsets o;
    for (unsigned l = 0; l < 32; l++) {
        o.at[l] = l * stride;
    }
    return o;
}

static void test_ldsm(void) {
    static const struct {
        const char * what;
        offsets      o;
        unsigned     wavefronts; // per ldmatrix .x4 (4 phases of 8 rows of 16 bytes)
    } cases[] = {
        // 16-byte rows back to back: a matrix is 128 contiguous bytes, every bank once
        { "rows 16 bytes apart", rows(16), 4 },
        // 80-byte rows (the conv's padded A tile before the swizzle): rows 0..7 start at words 0, 20, 40, ... 140, banks
        // 0, 20, 8, 28, 16, 4, 24, 12, each with the 3 after it: all 32 banks once
        { "rows 80 bytes apart", rows(80), 4 },
        // 64-byte rows: rows 0, 2, 4, 6 start at word 0, 32, 64, 96 (bank 0), rows 1, 3, 5, 7 at bank
        // 16: 4 distinct words in each bank touched, 4 wavefronts per phase
        { "rows 64 bytes apart", rows(64), 16 },
        // 128-byte rows: the 8 rows of a matrix all in banks 0-3, 8 distinct words each
        { "rows 128 bytes apart", rows(128), 32 },
        // one row for every lane: the same 4 words, read once and broadcast
        { "one row", rows(0), 4 },
    };
    for (const auto & c : cases) {
        const vae_emu_counts * r = run(ldsm_kernel, c.o, dim3(1), 64, 4096);
        // 2 warps, one ldmatrix each
        CHECK(r && r->ldsm == 2 && r->ldsm_wavefronts == 2 * c.wavefronts, "ldmatrix, %s: %llu instructions, %llu "
              "wavefronts (want 2, %u)", c.what, r ? r->ldsm : 0, r ? r->ldsm_wavefronts : 0, 2 * c.wavefronts);
        printf("ldmatrix .x4, %s: %llu wavefronts per instruction\n", c.what, r && r->ldsm ? r->ldsm_wavefronts / r->ldsm : 0);
    }
}

static void test_st16(void) {
    offsets loader; // the conv's A loader on 80-byte rows (before the swizzle): lane l writes chunk l % 4 of row l / 4
    for (unsigned l = 0; l < 32; l++) {
        loader.at[l] = l / 4 * 80 + l % 4 * 16;
    }
    offsets swizzled; // the conv's A loader now: 64-byte rows, 4 chunks each, chunk c of row r at chunk c ^ (r / 2 % 4): rows 2k, 2k + 1
                      // are one 128-byte line, and the XOR only moves chunks within their row
    for (unsigned l = 0; l < 32; l++) {
        swizzled.at[l] = l / 4 * 64 + ((l % 4) ^ (l / 8 % 4)) * 16;
    }
    static const struct {
        const char * what;
        offsets      o;
        unsigned     wavefronts; // per warp instruction (a phase per quarter warp)
    } cases[] = {
        // a quarter's 8 lanes write 128 contiguous bytes: one wavefront each
        { "16 bytes apart", rows(16), 4 },
        // quarter 0 writes rows 0 and 1: words 0-15 (banks 0-15) and 20-35 (banks 20-31, 0-3): banks
        // 0-3 twice; quarters 1-3 likewise (rows 2-3 share banks 8-11, 4-5 16-19, 6-7 24-27): 2 each
        { "the A loader on 80-byte rows", loader, 8 },
        // a quarter writes rows 2k and 2k + 1 of 64 bytes: one 128-byte line whatever the XOR
        { "64-byte rows, chunks XOR-swizzled", swizzled, 4 },
        // 128 bytes apart: a quarter's 8 lanes all in banks 0-3
        { "128 bytes apart", rows(128), 32 },
    };
    for (const auto & c : cases) {
        const vae_emu_counts * r = run(st16_kernel, c.o, dim3(1), 64, 8192);
        // 2 warps, 2 writes per lane, a barrier between them
        CHECK(r && r->st16 == 4 && r->st16_wavefronts == 4 * c.wavefronts && r->barriers == 1,
              "16-byte writes, %s: %llu instructions, %llu wavefronts, %llu barriers (want 4, %u, 1)", c.what,
              r ? r->st16 : 0, r ? r->st16_wavefronts : 0, r ? r->barriers : 0, 4 * c.wavefronts);
        printf("cp.async 16 bytes, %s: %llu wavefronts per instruction\n", c.what,
               r && r->st16 ? r->st16_wavefronts / r->st16 : 0);
    }
}

static void test_mma_barriers_copies(void) {
    const vae_emu_counts * r = run(mma_kernel, 0, dim3(3, 2), 96, 0);
    // 6 blocks of 3 warps; per warp 3 bf16, 2 f16, 1 tf32; 2 barriers per block
    CHECK(r && r->mma[0] == 36 && r->mma[1] == 54 && r->mma[2] == 0 && r->mma[3] == 18,
          "mma: %llu f16, %llu bf16, %llu f16 k8, %llu tf32 (want 36, 54, 0, 18)", r ? r->mma[0] : 0,
          r ? r->mma[1] : 0, r ? r->mma[2] : 0, r ? r->mma[3] : 0);
    CHECK(r && r->blocks == 6 && r->barriers == 12 && r->grid[0] == 3 && r->grid[1] == 2 && r->block[0] == 96,
          "%llu blocks, %llu barriers, grid %ux%u, block %u (want 6, 12, 3x2, 96)", r ? r->blocks : 0,
          r ? r->barriers : 0, r ? r->grid[0] : 0, r ? r->grid[1] : 0, r ? r->block[0] : 0);

    // a sample of 3 of the 6 blocks: the first, the one at 1 * 5 / 2 = 2, the last (5): 3 warps
    // each of (0 + 2 + 5) mma
    const vae_emu_counts * sampled = nullptr;
    vae_emu_counts_start(3);
    indexed_kernel->*vae_emu_config("test kernel", __func__, __FILE__, __LINE__, false, dim3(3, 2), dim3(96), 0) ->*
        vae_emu_args(0);
    CHECK(vae_emu_counts_read(&sampled) == 1 && sampled->blocks == 3 && sampled->mma[1] == 21 &&
              sampled->grid[0] * sampled->grid[1] == 6,
          "a sample of 3 blocks: %llu run, %llu bf16 mma (want 3, 21)", sampled ? sampled->blocks : 0,
          sampled ? sampled->mma[1] : 0);

    void *a = nullptr, *b = nullptr;
    char  host[1000]   = { 0 };
    vae_emu_counts_start(0);
    CHECK(cudaMalloc(&a, 1000) == cudaSuccess && cudaMalloc(&b, 1000) == cudaSuccess, "cudaMalloc");
    cudaMemcpy(a, host, 1000, cudaMemcpyHostToDevice);
    cudaMemcpy(b, a, 1000, cudaMemcpyDeviceToDevice);
    cudaMemcpyAsync(a, b, 600, cudaMemcpyDeviceToDevice, nullptr);
    cudaMemcpy(host, b, 1000, cudaMemcpyDeviceToHost);
    const vae_emu_counts * c = nullptr;
    const size_t           n = vae_emu_counts_read(&c);
    CHECK(n == 2 && c[0].d2d_bytes == 1000 && c[1].d2d_bytes == 600 && !strcmp(c[0].name, "cudaMemcpy device to device"),
          "%zu records of 2 device-to-device copies (%llu, %llu bytes)", n, n > 0 ? c[0].d2d_bytes : 0,
          n > 1 ? c[1].d2d_bytes : 0);
    cudaFree(a);
    cudaFree(b);
}

// the kernels' own loads and stores (this file is compiled with the race checker's
// instrumentation): one access per lane, of `bytes` at lane * stride bytes into shared memory
// or into a device buffer
struct plain {
    bool     global, write;
    unsigned bytes, stride;
    char *   g;
};

static unsigned sink[32];

// (the vector accesses as the kernels write them: the emulator's float2 and float4)
static void plain_kernel(plain p) {
    char * base = p.global ? p.g : (char *) vae_emu_dyn_smem("test");
    char * at   = base + threadIdx.x * p.stride;
    if (p.write && p.bytes == 4) {
        *(volatile float *) at = 1.0f;
    } else if (p.write) {
        *(float4 *) at = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    } else if (p.bytes == 4) {
        sink[threadIdx.x] = *(volatile unsigned *) at;
    } else if (p.bytes == 8) {
        const float2 u    = *(const float2 *) at;
        sink[threadIdx.x] = (unsigned) u.y;
    } else {
        const float4 u    = *(const float4 *) at;
        sink[threadIdx.x] = (unsigned) u.w;
    }
}

static void test_plain(void) {
    char * g = nullptr;
    CHECK(cudaMalloc((void **) &g, 32 * 4096) == cudaSuccess, "cudaMalloc");
    static const struct {
        const char * what;
        plain        p;
        unsigned     wavefronts, ideal; // shared: per warp instruction; global: 32-byte sectors, bytes
    } cases[] = {
        // 4 bytes: the whole warp in one phase; lanes 4 bytes apart fill the 32 banks once
        { "4-byte stores 4 bytes apart", { false, true, 4, 4, nullptr }, 1, 1 },
        // 8 bytes apart: lanes l and l + 16 share a bank (words 2l, 2l + 32): 2-way
        { "4-byte stores 8 bytes apart", { false, true, 4, 8, nullptr }, 2, 1 },
        // 128 bytes apart: every lane in bank 0, 32 distinct words
        { "4-byte loads 128 bytes apart", { false, false, 4, 128, nullptr }, 32, 1 },
        // 132 bytes apart (one word of padding per row): lane l in bank l
        { "4-byte loads 132 bytes apart", { false, false, 4, 132, nullptr }, 1, 1 },
        // every lane the same word: read once, broadcast
        { "4-byte loads of one word", { false, false, 4, 0, nullptr }, 1, 1 },
        // 8 bytes: a half warp per phase, 16 lanes x 8 bytes = 128 bytes each
        { "8-byte loads 8 bytes apart", { false, false, 8, 8, nullptr }, 2, 2 },
        // 16 bytes: a quarter per phase, 128 bytes each
        { "16-byte loads 16 bytes apart", { false, false, 16, 16, nullptr }, 4, 4 },
        // 32 bytes apart: a quarter's 8 lanes span 256 bytes, each bank twice
        { "16-byte stores 32 bytes apart", { false, true, 16, 32, nullptr }, 8, 4 },
        // global: 32 x 4 contiguous bytes are 4 sectors; 128 bytes apart, a sector per lane
        { "global 4-byte loads 4 bytes apart", { true, false, 4, 4, nullptr }, 4, 128 },
        { "global 4-byte loads 128 bytes apart", { true, false, 4, 128, nullptr }, 32, 128 },
        // 32 x 16 contiguous bytes: 16 sectors
        { "global 16-byte stores 16 bytes apart", { true, true, 16, 16, nullptr }, 16, 512 },
    };
    for (auto c : cases) {
        c.p.g                    = g;
        const vae_emu_counts * r = run(plain_kernel, c.p, dim3(1), 32, 8192);
        if (!r) {
            continue;
        }
        const unsigned long long n = c.p.global ? (c.p.write ? r->gst : r->gld) : (c.p.write ? r->sts : r->lds);
        const unsigned long long w = c.p.global ? (c.p.write ? r->gst_sectors : r->gld_sectors)
                                                : (c.p.write ? r->sts_wavefronts : r->lds_wavefronts);
        const unsigned long long i = c.p.global ? (c.p.write ? r->gst_bytes : r->gld_bytes)
                                                : (c.p.write ? r->sts_ideal : r->lds_ideal);
        const unsigned long long other = r->lds + r->sts + r->gld + r->gst - n;
        CHECK(n == 1 && w == c.wavefronts && i == c.ideal && other == 0,
              "%s: %llu instructions (and %llu others), %llu %s, %llu %s (want 1, 0, %u, %u)", c.what, n, other, w,
              c.p.global ? "sectors" : "wavefronts", i, c.p.global ? "bytes" : "ideal", c.wavefronts, c.ideal);
        printf("%s: %llu %s, %llu %s\n", c.what, w, c.p.global ? "sectors" : "wavefronts", i,
               c.p.global ? "bytes" : "at the fewest");
    }
    cudaFree(g);
}

int main(void) {
    const vae_emu_counts * r = nullptr;
    CHECK(vae_emu_counts_read(&r) == 0, "records before counting started");
    test_ldsm();
    test_st16();
    test_mma_barriers_copies();
    test_plain();
    printf("%s\n", failures ? "FAILED" : "every count as worked out by hand");
    return failures ? 1 : 0;
}
