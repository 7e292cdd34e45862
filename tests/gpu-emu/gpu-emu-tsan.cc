// The instrumentation calls of ThreadSanitizer, answered by the emulator's shared-memory race
// checker instead of by libtsan (tests/gpu-emu/README.md). test-gpu-emu-race compiles the kernels
// with -fsanitize=thread and links no sanitizer runtime: every load and store the kernels make
// calls one of these first, with its address and size; the emulator's own code is not
// instrumented. Those in the shared-memory arena go to vae_emu_race_access, with the code that
// made them; the rest (registers spilled, global memory, the emulator's state) return at once.
// While the counters are on, every access also goes to vae_emu_count_access (shared and global ones
// counted there, the rest dropped).

#include "gpu-emu.h"

static inline void emu_tsan(const void * p, size_t n, bool write, const void * pc) {
    if ((uintptr_t) p - vae_emu_race_lo < vae_emu_race_span) {
        vae_emu_race_access(p, n, write, pc);
    }
    if (vae_emu_counting) {
        vae_emu_count_access(p, n, write, pc);
    }
}

extern "C" {

// each instrumented file's constructor
void __tsan_init(void) {
    vae_emu_race_enable();
}

#define EMU_TSAN(n)                                                                     \
    void __tsan_read##n(void * p) { emu_tsan(p, n, false, __builtin_return_address(0)); } \
    void __tsan_write##n(void * p) { emu_tsan(p, n, true, __builtin_return_address(0)); }
EMU_TSAN(1)
EMU_TSAN(2)
EMU_TSAN(4)
EMU_TSAN(8)
EMU_TSAN(16)
#undef EMU_TSAN

// accesses of other sizes (aggregates)
void __tsan_read_range(void * p, size_t n) {
    emu_tsan(p, n, false, __builtin_return_address(0));
}
void __tsan_write_range(void * p, size_t n) {
    emu_tsan(p, n, true, __builtin_return_address(0));
}
}
