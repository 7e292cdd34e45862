// The emulator's counters (README.md here, "Counters"), callable from C: a record per kernel launch
// and per device-to-device copy while counting is on. gpu-emu.h includes it for the kernels and
// emu-counts; test-cuda-ops includes it on the emulator, to check the real conv kernels' counts.

#pragma once

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vae_emu_counts {
    char               name[64];               // the kernel, "cudaMemcpy device to device", or "cudaEventRecord"
                                               //   (an event: nothing counted)
    unsigned           grid[3], block[3];
    size_t             smem;                   // the launch's dynamic shared memory per block, bytes
    unsigned long long blocks;                 // blocks run
    unsigned long long mma[4];                 // mma.sync per warp: m16n8k16 f16, bf16; m16n8k8 f16, tf32
    unsigned long long wmma;                   // wmma::mma_sync (m16n16k16) per warp
    unsigned long long ldsm, ldsm_wavefronts;  // ldmatrix .x4 per warp, the shared-memory wavefronts they take
    unsigned long long st16, st16_wavefronts;  // the loaders' 16-byte shared writes per warp (cp.async; a plain
                                               //   store before sm_80), their wavefronts
    unsigned long long barriers;               // __syncthreads, one per block that passes it
    unsigned long long d2d_bytes;              // a copy's bytes
    // where the kernels are compiled with -fsanitize=thread (gpu-emu-tsan.cc), their own loads and
    // stores per warp: shared ones, the wavefronts they take and the fewest their widths allow;
    // global ones, the bytes the lanes ask for and the 32-byte sectors they touch
    unsigned long long lds, lds_wavefronts, lds_ideal, sts, sts_wavefronts, sts_ideal;
    unsigned long long tail_wavefronts, tail_ideal;   // of those shared ones, the wavefronts (and fewest) of
                                                      //   the accesses after the block's last barrier
    unsigned long long gld, gld_bytes, gld_sectors, gst, gst_bytes, gst_sectors;
    // sm_90a: wgmma.mma_async per warpgroup, their FLOP (2 x 64 x N x K) and the operand bytes they read
    // from shared memory (A's 64 x K unless from registers, B's N x K); tensor copies (TMA) issued, the
    // bytes of their boxes (read from global memory, written to shared memory)
    unsigned long long wgmma, wgmma_flop, wgmma_smem, tma, tma_bytes;
};
extern bool vae_emu_counting;        // records are being made
// forget the records, and record from now on; sample > 0: run only that many blocks of a launch,
// spread evenly over its grid from the first to the last (its outputs are then incomplete: for
// counting the real shapes, scaling by the grid's blocks over the blocks run)
void   vae_emu_counts_start(unsigned sample);
void   vae_emu_counts_stop(void);   // no more records (those made stay readable)
size_t vae_emu_counts_read(const struct vae_emu_counts ** records);

#ifdef __cplusplus
}
#endif
