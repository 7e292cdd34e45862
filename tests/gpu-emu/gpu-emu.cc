// The emulator's engine (tests/gpu-emu/README.md): the CUDA runtime API of cuda_runtime_api.h on
// the host, and the execution of kernel launches. Every operation is synchronous; a stream being
// captured records the operations into a graph that a launch of the graph replays. A kernel runs
// one block at a time, each thread a fiber on its own stack, switched by hand at barriers and
// warp collectives only: the first runnable thread in the order VAE_GPU_EMU_ORDER asks
// (alternate, forward, reverse, random[:seed]) runs until it waits.
// Memory is checked with guard pages: every cudaMalloc and every shared-memory array is mapped
// with inaccessible pages on both sides, its end flush with the page after it, so the first
// byte past it faults; the fault handler names the kernel, block, thread and allocation.
// Shared memory is refilled with 0xff (NaN) bytes for every block, so a read of what the block
// did not write shows. The emulated device (__CUDA_ARCH__, or VAE_GPU_EMU_GFX for an AMD one, at
// build time) sets the shared-memory limits, the wave size and the properties. Where the kernels
// are compiled with -fsanitize=thread (test-gpu-emu-race), every access they make to shared memory
// also goes through the race checker below.

#include "gpu-emu.h"

#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <random>
#include <string>
#include <vector>

#define EMU_STACK     (256 * 1024)   // per fiber, committed as touched
#define EMU_MAX_THREADS 1024

#if VAE_EMU_AMD
// the AMD GPU as HIP describes it (hipDeviceProp_t): a product with that gfx target, the target's
// numbers as major.minor, gcnArchName with the features HIP appends on CDNA; a workgroup has 64 KB
// of LDS, all of it without an attribute and none beyond
#if VAE_GPU_EMU_GFX == 1100
#define EMU_AMD_PRODUCT "AMD Radeon RX 7900 XTX"
#define EMU_AMD_ARCH    "gfx1100"
#elif VAE_GPU_EMU_GFX == 1151
#define EMU_AMD_PRODUCT "AMD Radeon 8060S Graphics"
#define EMU_AMD_ARCH    "gfx1151"
#elif VAE_GPU_EMU_GFX == 1200
#define EMU_AMD_PRODUCT "AMD Radeon RX 9060 XT"
#define EMU_AMD_ARCH    "gfx1200"
#elif VAE_GPU_EMU_GFX == 1201
#define EMU_AMD_PRODUCT "AMD Radeon RX 9070 XT"
#define EMU_AMD_ARCH    "gfx1201"
#elif VAE_GPU_EMU_GFX == 942
#define EMU_AMD_PRODUCT "AMD Instinct MI300X"
#define EMU_AMD_ARCH    "gfx942"
#define EMU_AMD_FEATURES ":sramecc+:xnack-"
#else
#define EMU_AMD_PRODUCT "AMD Instinct MI250X"
#define EMU_AMD_ARCH    "gfx90a"
#define EMU_AMD_FEATURES ":sramecc+:xnack-"
#endif
#ifndef EMU_AMD_FEATURES
#define EMU_AMD_FEATURES ""
#endif
#define EMU_SMEM_DEFAULT (64 * 1024)
static size_t emu_smem_optin() { return 64 * 1024; }
#else
#define EMU_SM           (__CUDA_ARCH__ / 10)
#define EMU_SMEM_DEFAULT (48 * 1024)   // a block's shared memory without the attribute (and static at most)
static size_t emu_smem_optin() {
    return EMU_SM >= 90 ? 232448 : EMU_SM >= 86 ? 101376 : EMU_SM >= 80 ? 166912 : 65536;
}
#endif

// ---- fibers ------------------------------------------------------------------------------------

extern "C" void vae_emu_switch(void ** from_sp, void * to_sp);
asm(R"(
.text
.globl vae_emu_switch
.type vae_emu_switch, @function
vae_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size vae_emu_switch, .-vae_emu_switch
)");

enum emu_state { EMU_RUN, EMU_BAR, EMU_WARP, EMU_GROUP, EMU_MBAR, EMU_DONE };

// a tensor copy (cp.async.bulk.tensor) in flight: the box read at issue, to land at dst (shared, the
// swizzle of `swizzle` bytes applied) when a thread waits on its mbarrier
struct emu_tma_copy {
    unsigned                   dst, mbar, swizzle;
    std::vector<unsigned char> box;
    const char *               file;
    int                        line;
};

// an mbarrier in shared memory (its address the key): arrivals expected per phase and still
// pending, transaction bytes still pending (expected minus completed), the phase, where it was made
struct emu_mbar {
    unsigned     count, pending, phase;
    long long    tx;
    const char * file;
    int          line;
};

// a thread's wgmma.mma_async not yet completed by a wgmma.wait_group: the accumulators it gives
// its registers d, and every operand element it read at issue (where, the bits), checked again then
struct emu_wgmma {
    float *                                 d;
    std::vector<float>                      out;
    std::vector<std::pair<const void *, uint32_t>> read;
    unsigned                                elem;
    const char *                            file;
    int                                     line;
};

struct emu_copy {
    void *        dst;
    size_t        n;
    unsigned char data[16];
    const void *  at;   // the code that issued it
};

struct emu_fiber {
    vae_emu_where                      w;
    void *                             sp;
    char *                             stack;   // EMU_STACK bytes above a guard page
    emu_state                          state;
    const char *                       file;    // where it waits
    int                                line;
    std::vector<emu_copy>              open;    // asynchronous copies not yet committed
    std::vector<std::vector<emu_copy>> groups;  // committed, oldest first
    unsigned                           exchanges;   // warp exchanges so far (picks the buffer)
    unsigned                           group_exchanges;   // warpgroup ones (wgmma)
    unsigned                           st16;        // 16-byte shared writes since the block's last barrier
    std::unordered_map<const void *, unsigned> pcs; // loads and stores per code address since then
    std::vector<emu_wgmma>              wg_open;    // wgmma.mma_async not yet committed
    std::vector<std::vector<emu_wgmma>> wg_groups;  // committed, oldest first
    bool                                wg_fenced;  // a wgmma.fence since the start or the last wait
    unsigned                            mbar, mbar_parity;   // EMU_MBAR: the barrier and phase parity it waits for
    uint32_t                            proxy_fence;         // emu_proxy_seq at its last fence.proxy.async
};

struct emu_shared {   // one shared-memory array: its slot of the arena, guard pages around it
    char * base;      // first usable byte
    size_t bytes, map_bytes;
    char * map;
    unsigned window;  // its shared-space address
    const char * name;
};

struct emu_access {   // a warp's load or store instruction (the counters)
    bool      shared, write;
    unsigned  bytes;
    uintptr_t at[VAE_EMU_WARP];   // 0: the lane made none
};

static struct {
    const vae_emu_cfg *               cfg;
    std::vector<emu_fiber>            fibers;
    int                               nthreads, live;
    std::vector<int>                  warp_live, warp_wait, group_wait;   // group: per warpgroup (wgmma)
    int                               bar_wait;
    size_t                            cursor;     // the fibers of order[0 .. cursor) wait or are done
    unsigned long long                launches;
    void *                            sched_sp;
    emu_fiber *                       cur;
    std::function<void()> *           body;
    emu_shared                        dyn;
    std::map<const void *, emu_shared> statics;
    size_t                            static_bytes;
    std::vector<unsigned char>        exchange;   // per warp: two buffers of VAE_EMU_WARP lanes x 64 bytes
    std::vector<unsigned char>        group_exchange;   // per warpgroup: two of 128 threads x 64 bytes
    std::map<unsigned, emu_mbar>      mbars;            // the block's mbarriers
    std::vector<struct emu_tma_copy>  tma;              // the block's tensor copies not yet landed
    std::mt19937                      rng;
    // the race checker's stamps: the last one given, that of the block's last barrier, of each
    // warp's last __syncwarp
    uint32_t                          stamp, epoch;
    std::vector<uint32_t>             warp_stamp;
    // the counters: on or off, the records, and per warp the 16-byte writes since the last barrier
    // (the k-th of each lane are the warp's k-th instruction: lane l's address at [k][l])
    std::vector<vae_emu_counts>                   counts;
    unsigned                                      sample;   // blocks run per launch (0: all)
    std::vector<std::vector<std::vector<unsigned>>> st16;
    // the loads and stores the kernels make (instrumented builds), per warp: the k-th access by the
    // code at pc of each lane is the warp's instruction (pc, k)
    std::vector<std::map<std::pair<const void *, unsigned>, emu_access>> accesses;
} E;

bool vae_emu_counting;

const vae_emu_where * vae_emu_now = nullptr;

static size_t emu_page() {
    static size_t p = (size_t) sysconf(_SC_PAGESIZE);
    return p;
}

static void emu_where(char * s, size_t n) {
    if (!E.cur) {
        snprintf(s, n, "outside any kernel");
        return;
    }
    const vae_emu_where & w = E.cur->w;
    snprintf(s, n, "kernel %s launched at %s:%d (%s), block (%u,%u,%u), thread (%u,%u,%u)", E.cfg->name,
             E.cfg->file, E.cfg->line, E.cfg->func, w.bid.x, w.bid.y, w.bid.z, w.tid.x, w.tid.y, w.tid.z);
}

extern "C" void vae_emu_fail(const char * file, int line, const char * fmt, ...) {
    char    where[1024];
    va_list ap;
    emu_where(where, sizeof(where));
    fprintf(stderr, "gpu-emu: %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  in %s\n", where);
    fflush(stderr);
    _exit(3);
}

static void emu_yield() {
    emu_fiber * f = E.cur;
    vae_emu_switch(&f->sp, E.sched_sp);
}

// ---- guarded mappings --------------------------------------------------------------------------

struct emu_alloc {
    char * map;
    size_t map_bytes, bytes;
};
static std::map<char *, emu_alloc> emu_allocs;   // by first usable byte
// the device's memory: cudaMalloc fails past it, as the driver's, and cudaMemGetInfo counts it
static const size_t EMU_DEVICE_BYTES = (size_t) 8 << 30;
static size_t       emu_live_bytes;   // held by cudaMalloc

// n usable bytes whose end (rounded up to `align`) touches an inaccessible page; a page before too
static char * emu_map(size_t n, size_t align, char ** map, size_t * map_bytes) {
    const size_t pg = emu_page(), rn = (n + align - 1) / align * align, body = (rn + pg - 1) / pg * pg;
    *map_bytes      = body + 2 * pg;
    void * m        = mmap(nullptr, *map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        return nullptr;
    }
    *map = (char *) m;
    mprotect(*map, pg, PROT_NONE);
    mprotect(*map + pg + body, pg, PROT_NONE);
    return *map + pg + body - rn;
}

static void emu_segv(int sig, siginfo_t * si, void *) {
    char * a = (char *) si->si_addr;
    char   where[1024], what[512] = "an address outside every allocation";
    emu_where(where, sizeof(where));
    auto describe = [&](const char * kind, char * base, size_t bytes, char * map, size_t map_bytes) {
        if (a >= map && a < map + map_bytes) {
            snprintf(what, sizeof(what), "byte offset %lld of a %zu-byte %s", (long long) (a - base), bytes, kind);
            return true;
        }
        return false;
    };
    bool found = false;
    for (auto & kv : emu_allocs) {
        found = found || describe("global allocation (cudaMalloc)", kv.first, kv.second.bytes, kv.second.map,
                                  kv.second.map_bytes);
    }
    if (E.cur) {
        found = found || describe("dynamic shared memory", E.dyn.base, E.dyn.bytes, E.dyn.map, E.dyn.map_bytes);
        for (auto & kv : E.statics) {
            found = found || describe("static __shared__ array", kv.second.base, kv.second.bytes, kv.second.map,
                                      kv.second.map_bytes);
        }
        for (auto & f : E.fibers) {
            if (a >= f.stack - emu_page() && a < f.stack) {
                snprintf(what, sizeof(what), "the guard page of a fiber's stack (stack overflow)");
            }
        }
    }
    fprintf(stderr, "gpu-emu: out-of-bounds access (signal %d) at %p: %s\n  in %s\n", sig, (void *) a, what, where);
    fflush(stderr);
    _exit(3);
}

static void emu_init_once() {
    static bool done = false;
    if (done) {
        return;
    }
    done = true;
    static char      alt[1 << 16];
    stack_t          ss = {};
    ss.ss_sp            = alt;
    ss.ss_size          = sizeof(alt);
    sigaltstack(&ss, nullptr);
    struct sigaction sa = {};
    sa.sa_sigaction     = emu_segv;
    sa.sa_flags         = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
}

// ---- shared memory -----------------------------------------------------------------------------
// Every array of a launch has a slot of one arena that is inaccessible but for the array's pages,
// its end flush with the slot's last page (one range for all of them also lets the race checker
// tell a shared address with one comparison): slot 0 the dynamic array, then the static ones.

#define EMU_WINDOW_STEP (1u << 24)   // shared addresses: array i at i << 24, so a stray offset lands nowhere
#define EMU_SMEM_SLOT   (256 * 1024)   // the largest array (227 KB) and a page either side
#define EMU_SMEM_SLOTS  32

static char * emu_smem_arena;

static void emu_race_arena(void);

static bool emu_smem_make(emu_shared * s, int slot, size_t bytes, unsigned window, const char * name) {
    if (slot >= EMU_SMEM_SLOTS) {
        return false;
    }
    if (!emu_smem_arena) {
        void * m = mmap(nullptr, (size_t) EMU_SMEM_SLOTS * EMU_SMEM_SLOT, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            return false;
        }
        emu_smem_arena = (char *) m;
        emu_race_arena();
    }
    const size_t pg = emu_page(), rn = (bytes + 127) / 128 * 128;
    s->bytes     = bytes;
    s->window    = window;
    s->name      = name;
    s->map       = emu_smem_arena + (size_t) slot * EMU_SMEM_SLOT;
    s->map_bytes = EMU_SMEM_SLOT;
    s->base      = s->map + EMU_SMEM_SLOT - pg - rn;
    char * first = s->map + (s->base - s->map) / pg * pg;
    return mprotect(first, (size_t) (s->map + EMU_SMEM_SLOT - pg - first), PROT_READ | PROT_WRITE) == 0;
}

static void emu_smem_free(emu_shared * s) {
    if (s->map) {
        mprotect(s->map, s->map_bytes, PROT_NONE);
    }
    *s = emu_shared{};
}

extern "C" void * vae_emu_dyn_smem(const char * name) {
    E.dyn.name = name;
    return E.dyn.base;
}

extern "C" void * vae_emu_static_smem(const void * key, const char * name, size_t bytes, size_t) {
    auto it = E.statics.find(key);
    if (it != E.statics.end()) {
        return it->second.base;
    }
    E.static_bytes += bytes;
    if (E.static_bytes > EMU_SMEM_DEFAULT || E.static_bytes + E.cfg->smem > emu_smem_optin()) {
        vae_emu_fail(E.cfg->file, E.cfg->line, "static shared memory of %zu bytes (and %zu dynamic) exceeds the limit",
                     E.static_bytes, E.cfg->smem);
    }
    emu_shared s;
    const int  slot = (int) E.statics.size() + 1;
    if (!emu_smem_make(&s, slot, bytes, (unsigned) (slot + 1) * EMU_WINDOW_STEP, name)) {
        vae_emu_fail(E.cfg->file, E.cfg->line, "no room for static __shared__ array %s (at most %d, or out of memory)",
                     name, EMU_SMEM_SLOTS - 1);
    }
    memset(s.base, 0xff, bytes);
    E.statics[key] = s;
    return s.base;
}

static const emu_shared * emu_smem_find(const char * p) {
    if (E.dyn.base && p >= E.dyn.base && p <= E.dyn.base + E.dyn.bytes) {
        return &E.dyn;
    }
    for (auto & kv : E.statics) {
        if (p >= kv.second.base && p <= kv.second.base + kv.second.bytes) {
            return &kv.second;
        }
    }
    return nullptr;
}

extern "C" unsigned vae_emu_cvta_shared(const void * p, const char * file, int line) {
    const emu_shared * s = emu_smem_find((const char *) p);
    if (!s) {
        vae_emu_fail(file, line, "%p is not a shared-memory address", p);
    }
    return s->window + (unsigned) ((const char *) p - s->base);
}

extern "C" void * vae_emu_shared_at(unsigned addr, size_t bytes, const char * file, int line) {
    const emu_shared * s = nullptr;
    if (addr / EMU_WINDOW_STEP == E.dyn.window / EMU_WINDOW_STEP && E.dyn.base) {
        s = &E.dyn;
    }
    for (auto & kv : E.statics) {
        s = addr / EMU_WINDOW_STEP == kv.second.window / EMU_WINDOW_STEP ? &kv.second : s;
    }
    if (!s || addr - s->window + bytes > s->bytes) {
        vae_emu_fail(file, line, "shared address %u (+%zu bytes) is outside shared memory%s", addr, bytes,
                     s ? " (past the end of its array)" : "");
    }
    return s->base + (addr - s->window);
}

// ---- the shared-memory race checker ------------------------------------------------------------
// On in test-gpu-emu-race, whose kernels are compiled with -fsanitize=thread: every load and store
// they make calls gpu-emu-tsan.cc first, which passes those in the shared-memory arena here (the
// asynchronous copies come from their functions below). Two accesses of a byte by two threads of
// the block, one a write, race unless a __syncthreads separates them or, both threads of one
// warp, a __syncwarp (CUDA's memory model: shuffles, votes, ldmatrix, mma and the wmma *_sync
// functions converge the warp but order no memory). That is judged from stamps, a counter raised
// at every barrier of the block (E.epoch, the stamp of the last one) and every __syncwarp
// (E.warp_stamp[w], the stamp of the warp's last one), not from the order the emulator ran the
// threads in, so a race shows whichever thread runs first, and also when the overwrite writes the
// same value. An access made at stamp s is ordered before the present one if s < E.epoch or, by
// the same warp, s < the warp's stamp. Each byte of the arena has a cell: the last write, and the
// reads since the barrier (a reader, another one, and their warp, or several warps). The first
// race stops the run.

#define EMU_RACE_NONE  0xffffu   // no thread
#define EMU_RACE_WARPS 0xffffu   // readers in several warps

struct emu_race_cell {
    uint32_t w_s, r_s;                // the stamps of the last write and of r_t's read
    uint16_t w_t, r_t, r_t2, r_warp;  // writer, a reader, another one (in another warp if r_warp is WARPS)
};

struct emu_race_code {                // apart, as only the report reads it
    uint32_t w, r, r2;                // the code that made those accesses (emu_race_at)
};

static emu_race_cell * emu_race_shadow;   // per byte of the arena
static emu_race_code * emu_race_codes;

// the proxies of sm_90: each byte's last write through the generic proxy (the threads' stores and
// cp.async) not followed by that thread's fence.proxy.async (its sequence number, the writer, the
// block), which an async-proxy read (wgmma's operands) must not meet; a tensor copy's landing is an
// async-proxy write. Sequence numbers rise at every generic write and every fence
struct emu_proxy_cell {
    uint32_t seq, block;
    uint16_t t;   // EMU_RACE_NONE: no generic write to fence
};
static emu_proxy_cell * emu_proxy_shadow;
static uint32_t         emu_proxy_seq, emu_proxy_block;
static bool            emu_race_on;
uintptr_t              vae_emu_race_lo, vae_emu_race_span;

extern "C" char __executable_start[];

extern "C" void vae_emu_race_enable(void) {
    emu_race_on = true;   // (from the kernels' constructors: nothing else is set up yet)
}

static void * emu_race_map(size_t n) {
    void * m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        vae_emu_fail(__FILE__, __LINE__, "out of memory for the race checker");
    }
    return m;
}

// the arena exists: with the checker on, its cells, and the range gpu-emu-tsan.cc passes on
static void emu_race_arena(void) {
    const size_t n = (size_t) EMU_SMEM_SLOTS * EMU_SMEM_SLOT;
    if (emu_race_on) {
        emu_race_shadow   = (emu_race_cell *) emu_race_map(n * sizeof(emu_race_cell));
        emu_race_codes    = (emu_race_code *) emu_race_map(n * sizeof(emu_race_code));
        emu_proxy_shadow  = (emu_proxy_cell *) emu_race_map(n * sizeof(emu_proxy_cell));
        vae_emu_race_lo   = (uintptr_t) emu_smem_arena;
        vae_emu_race_span = n;
    }
}

// the next stamp; at the end of the counter, forget every access and start again
static uint32_t emu_race_stamp(void) {
    if (++E.stamp == 0) {
        const size_t n = (size_t) EMU_SMEM_SLOTS * EMU_SMEM_SLOT;
        if (emu_race_shadow) {
            madvise(emu_race_shadow, n * sizeof(emu_race_cell), MADV_DONTNEED);   // zeros: stamp 0
        }
        E.stamp = E.epoch = 1;
        std::fill(E.warp_stamp.begin(), E.warp_stamp.end(), 1u);
        return ++E.stamp;
    }
    return E.stamp;
}

// a __syncthreads (or the start of a block): every access so far is ordered before what follows
static void emu_race_barrier(void) {
    E.epoch = emu_race_stamp();
    std::fill(E.warp_stamp.begin(), E.warp_stamp.end(), E.epoch);
}

// code addresses as offsets in the executable (32 bits), and back as file:line
static uint32_t emu_race_at(const void * pc) {
    return (uint32_t) ((uintptr_t) pc - (uintptr_t) __executable_start);
}

static int emu_race_bias(struct dl_phdr_info * i, size_t, void * bias) {
    *(uintptr_t *) bias = i->dlpi_addr;   // the executable comes first
    return 1;
}

// the kernel's line, the innermost of the inlined calls there outside this emulator's headers
// (with that one after it: a wmma load names its caller's line, then gpu-emu.h's)
static void emu_race_line(uint32_t at, char * s, size_t n) {
    uintptr_t bias = 0;
    dl_iterate_phdr(emu_race_bias, &bias);
    // the call instruction before the return address, at the address the executable was linked for
    const uintptr_t pc = (uintptr_t) __executable_start + at - 1 - bias;
    char            cmd[128], line[512], inner[512] = "";
    snprintf(cmd, sizeof(cmd), "addr2line -i -e /proc/%d/exe %#lx 2>/dev/null", (int) getpid(), (unsigned long) pc);
    snprintf(s, n, "code at %#lx of the executable (no line: addr2line missing or no -g)", (unsigned long) pc);
    FILE * p = popen(cmd, "r");
    while (p && fgets(line, sizeof(line), p) && line[0] != '?') {
        line[strcspn(line, " \n")] = 0;   // file:line, less " (discriminator n)"
        const char * name = strrchr(line, '/') ? strrchr(line, '/') + 1 : line;
        if (strncmp(name, "gpu-emu", 7) != 0) {
            snprintf(s, n, "%s%s%s%s", name, inner[0] ? " (" : "", inner, inner[0] ? ")" : "");
            break;
        }
        if (!inner[0]) {
            snprintf(inner, sizeof(inner), "%s", name);
            snprintf(s, n, "%s", name);
        }
    }
    if (p) {
        pclose(p);
    }
}

static void emu_race_thread(uint16_t t, char * s, size_t n) {
    const dim3 b = E.cfg->block;
    snprintf(s, n, "thread (%u,%u,%u)", t % b.x, t / b.x % b.y, t / (b.x * b.y));
}

[[noreturn]] static void emu_race_report(size_t off, bool write, uint16_t t, uint32_t at, uint16_t u, bool u_wrote,
                                         uint32_t u_at) {
    const char *       p = (const char *) vae_emu_race_lo + off;
    const emu_shared * s = emu_smem_find(p);
    char               me[64], other[64], here[600], there[600], where[1024];
    emu_race_thread(t, me, sizeof(me));
    emu_race_thread(u, other, sizeof(other));
    emu_race_line(at, here, sizeof(here));
    emu_race_line(u_at, there, sizeof(there));
    emu_where(where, sizeof(where));
    fprintf(stderr,
            "gpu-emu: race in shared memory: %s %s byte %lld of %s %s (%zu bytes) at %s, which %s %s at %s, with no "
            "__syncthreads between them%s\n  in %s\n",
            me, write ? "writes" : "reads", s ? (long long) (p - s->base) : -1LL,
            s == &E.dyn ? "dynamic shared memory" : "static __shared__ array", s && s->name ? s->name : "?",
            s ? s->bytes : (size_t) 0, here, other, u_wrote ? "wrote" : "read", there,
            t / VAE_EMU_WARP == u / VAE_EMU_WARP ? " (nor a __syncwarp: one warp)" : "", where);
    fflush(stderr);
    _exit(3);
}

extern "C" void vae_emu_race_access(const void * p, size_t bytes, bool write, const void * pc) {
    const size_t off = (uintptr_t) p - vae_emu_race_lo;
    if (!E.cur || off >= vae_emu_race_span) {
        return;
    }
    const uint16_t t = (uint16_t) (E.cur - E.fibers.data()), w = t / VAE_EMU_WARP;
    const uint32_t ep = E.epoch, s = E.warp_stamp[w], at = emu_race_at(pc);
    // the access of thread u at stamp us is ordered before this one
    auto ordered = [&](uint16_t u, uint32_t us) { return us < ep || u == t || (u / VAE_EMU_WARP == w && us < s); };
    const size_t   end = off + std::min(bytes, vae_emu_race_span - off);
    const uint32_t seq = write ? ++emu_proxy_seq : 0;
    for (size_t i = off; i < end; i++) {
        if (write) {
            emu_proxy_shadow[i] = { seq, emu_proxy_block, t };
        }
        emu_race_cell & c = emu_race_shadow[i];
        emu_race_code & k = emu_race_codes[i];
        if (!ordered(c.w_t, c.w_s)) {
            emu_race_report(i, write, t, at, c.w_t, true, k.w);
        }
        if (write) {
            if (c.r_s >= ep) {   // reads since the barrier: one by a thread other than t, not ordered before t?
                const bool first = c.r_warp == EMU_RACE_WARPS ? c.r_t / VAE_EMU_WARP != w
                                                              : c.r_warp != w || (c.r_s == s && c.r_t != t);
                if (first || ((c.r_warp == EMU_RACE_WARPS || c.r_s == s) && c.r_t2 != EMU_RACE_NONE)) {
                    emu_race_report(i, true, t, at, first ? c.r_t : c.r_t2, false, first ? k.r : k.r2);
                }
            }
            c.w_s = s;
            c.w_t = t;
            k.w   = at;
        } else if (c.r_s < ep || (c.r_warp == w && c.r_s < s)) {
            // the first read since the barrier, or of the warp since its last __syncwarp (the earlier
            // ones are ordered before what the warp does next; this one stands for them towards others)
            c.r_s    = s;
            c.r_t    = t;
            c.r_t2   = EMU_RACE_NONE;
            c.r_warp = w;
            k.r      = at;
        } else if (c.r_warp != w && c.r_warp != EMU_RACE_WARPS) {
            c.r_warp = EMU_RACE_WARPS;
            c.r_t2   = t;
            k.r2     = at;
        } else if (c.r_warp == w && c.r_t != t && c.r_t2 == EMU_RACE_NONE) {
            c.r_t2 = t;
            k.r2   = at;
        }
    }
}

// ---- asynchronous copies -----------------------------------------------------------------------

extern "C" void vae_emu_async_copy(void * dst, const void * src, size_t nread, size_t n, const char * file,
                                   int line) {
    if (n > 16 || nread > n) {
        vae_emu_fail(file, line, "asynchronous copy of %zu bytes (%zu read)", n, nread);
    }
    emu_copy c;
    c.dst = dst;
    c.n   = n;
    memset(c.data, 0, sizeof(c.data));
    memcpy(c.data, src, nread);   // a bad source faults here, in this thread
    c.at = __builtin_return_address(0);
    // the copy may land any time until its wait: a write now (and at the wait) for the race checker
    vae_emu_race_access(dst, n, true, c.at);
    E.cur->open.push_back(c);
}

extern "C" void vae_emu_async_commit(void) {
    E.cur->groups.push_back(std::move(E.cur->open));
    E.cur->open.clear();
}

extern "C" void vae_emu_async_wait(int pending) {
    auto & g = E.cur->groups;
    while ((int) g.size() > pending) {
        for (const emu_copy & c : g.front()) {
            vae_emu_race_access(c.dst, c.n, true, c.at);
            memcpy(c.dst, c.data, c.n);
        }
        g.erase(g.begin());
    }
}

// ---- counters ----------------------------------------------------------------------------------
// Per launch, while on: the warp instructions the emulator carries out itself (mma, wmma,
// ldmatrix, the loaders' 16-byte shared writes), barriers, and the shared-memory wavefronts as the
// hardware banks them (README.md here, "Counters": 32 banks of 4 bytes; a phase takes as many
// wavefronts as the most distinct words it asks of one bank, a word asked by several lanes counting
// once; ldmatrix .x4 runs a phase per 8x8 matrix, 8 rows of 16 bytes; 16-byte accesses a phase per
// quarter warp, lanes 8q .. 8q + 7).

extern "C" void vae_emu_counts_start(unsigned sample) {
    E.counts.clear();
    E.sample         = sample;
    vae_emu_counting = true;
}

extern "C" void vae_emu_counts_stop(void) {
    vae_emu_counting = false;
}

extern "C" size_t vae_emu_counts_read(const vae_emu_counts ** records) {
    *records = E.counts.data();
    return E.counts.size();
}

static vae_emu_counts * emu_counts() {
    return vae_emu_counting && !E.counts.empty() ? &E.counts.back() : nullptr;
}

// the wavefronts of one phase: n accesses of `bytes` (a multiple of 4) at the shared addresses a
static unsigned emu_wavefronts(const unsigned * a, int n, unsigned bytes) {
    unsigned words[64 * 4];
    int      nw = 0;
    for (int i = 0; i < n; i++) {
        for (unsigned k = 0; k < bytes / 4; k++) {
            const unsigned w = a[i] / 4 + k;
            bool           seen = false;
            for (int j = 0; j < nw && !seen; j++) {
                seen = words[j] == w;
            }
            if (!seen) {
                words[nw++] = w;
            }
        }
    }
    unsigned per_bank[32] = { 0 }, most = 0;
    for (int j = 0; j < nw; j++) {
        most = std::max(most, ++per_bank[words[j] % 32]);
    }
    return most;
}

extern "C" void vae_emu_count_mma(int kind) {
    if (vae_emu_counts * c = emu_counts()) {
        c->mma[kind]++;
    }
}

extern "C" void vae_emu_count_wmma(void) {
    if (vae_emu_counts * c = emu_counts()) {
        c->wmma++;
    }
}

extern "C" void vae_emu_count_ldsm(const unsigned rows[32]) {
    if (vae_emu_counts * c = emu_counts()) {
        c->ldsm++;
        for (int m = 0; m < 4; m++) {
            c->ldsm_wavefronts += emu_wavefronts(rows + 8 * m, 8, 16);
        }
    }
}

extern "C" void vae_emu_count_st16(unsigned addr) {
    if (emu_counts()) {
        emu_fiber & f = *E.cur;
        auto &      w = E.st16[(size_t) (&f - E.fibers.data()) / VAE_EMU_WARP];
        if (w.size() <= f.st16) {
            w.emplace_back(VAE_EMU_WARP, ~0u);
        }
        w[f.st16++][(size_t) f.w.lane] = addr;
    }
}

extern "C" void vae_emu_count_access(const void * p, size_t bytes, bool write, const void * pc) {
    const char * c = (const char *) p;
    uintptr_t    at = 0;
    bool         shared = false;
    if (!E.cur || !emu_counts()) {
        return;
    }
    const bool   arena  = emu_smem_arena && (uintptr_t) (c - emu_smem_arena) < (uintptr_t) EMU_SMEM_SLOTS * EMU_SMEM_SLOT;
    if (const emu_shared * s = arena ? emu_smem_find(c) : nullptr) {
        at     = s->window + (uintptr_t) (c - s->base);   // (its window: banks as on the device)
        shared = true;
    } else {
        auto it = emu_allocs.upper_bound((char *) c);
        if (it == emu_allocs.begin() || c >= (--it)->first + it->second.bytes) {
            return;   // a register spilled, a parameter: not memory of the device
        }
        at = (uintptr_t) c;
    }
    emu_fiber &      f = *E.cur;
    const unsigned   k = f.pcs[pc]++;
    auto &           a = E.accesses[(size_t) (&f - E.fibers.data()) / VAE_EMU_WARP][{ pc, k }];
    a.shared           = shared;
    a.write            = write;
    a.bytes            = (unsigned) bytes;
    a.at[f.w.lane]     = at;   // (never 0: shared windows start at 1 << 24)
}

// the lanes of phase q of a shared access of `bytes` (up to 16) a warp's instruction takes at once:
// NVIDIA: up to 4 bytes the whole warp, 8 a half warp, 16 a quarter (README.md here, "Counters").
// AMD, as measured on the devices (README.md here, "AMD's LDS"): up to 4 bytes 32 lanes, 8 bytes
// 16; 16 bytes 8 lanes, in gfx9 and gfx11 the groups {0-3, 20-23}, {4-7, 16-19}, {8-11, 28-31},
// {12-15, 24-27} of each 32 (gfx9 taking the 64 lanes' groups alternately from each half, an order
// that changes no count), in gfx12 lanes 8q .. 8q + 7
extern "C" int vae_emu_shared_phases(unsigned bytes) {
#if VAE_EMU_AMD
    return VAE_EMU_WARP / (bytes <= 4 ? 32 : bytes <= 8 ? 16 : 8);
#else
    return bytes <= 4 ? 1 : bytes <= 8 ? 2 : 4;
#endif
}

extern "C" int vae_emu_shared_phase_lane(unsigned bytes, int q, int i) {
    const int lanes = VAE_EMU_WARP / vae_emu_shared_phases(bytes);
#if VAE_EMU_AMD_ISA == 9 || VAE_EMU_AMD_ISA == 11
    if (bytes > 8) {   // group q % 4 of the 32 lanes from 32 (q / 4)
        static const int first[4][2] = { { 0, 20 }, { 4, 16 }, { 8, 28 }, { 12, 24 } };
        return 32 * (q / 4) + first[q % 4][i / 4] + i % 4;
    }
#endif
    return q * lanes + i;
}

// the wavefronts one warp instruction's `bytes` (up to 16) at the shared addresses at[] (0: no
// access by that lane) take, and the fewest its lanes could (a phase with any access: one)
extern "C" unsigned vae_emu_shared_wavefronts(const uintptr_t * at, unsigned bytes, unsigned * ideal) {
    const int phases = vae_emu_shared_phases(bytes), lanes = VAE_EMU_WARP / phases;
    unsigned  w = 0;
    *ideal      = 0;
    for (int q = 0; q < phases; q++) {
        unsigned addr[VAE_EMU_WARP];
        int      n = 0;
        for (int i = 0; i < lanes; i++) {
            const int l = vae_emu_shared_phase_lane(bytes, q, i);
            if (at[l]) {
                addr[n++] = (unsigned) at[l] / 4 * 4;
            }
        }
        w += n ? emu_wavefronts(addr, n, bytes < 4 ? 4 : (bytes + 3) / 4 * 4) : 0;
        *ideal += n ? 1 : 0;
    }
    return w;
}

// a warp's access instruction into the counters: shared ones in phases by width, global ones by
// the 32-byte sectors they touch
static void emu_count_instruction(vae_emu_counts * c, const emu_access & a, bool tail) {
    if (a.shared) {
        // wider than 16 bytes (an aggregate): as 16-byte accesses one after another
        for (unsigned off = 0; off < a.bytes; off += 16) {
            uintptr_t at[VAE_EMU_WARP];
            for (int l = 0; l < VAE_EMU_WARP; l++) {
                at[l] = a.at[l] ? a.at[l] + off : 0;
            }
            unsigned       ideal = 0;
            const unsigned w     = vae_emu_shared_wavefronts(at, std::min(a.bytes - off, 16u), &ideal);
            (a.write ? c->sts : c->lds)++;
            (a.write ? c->sts_wavefronts : c->lds_wavefronts) += w;
            (a.write ? c->sts_ideal : c->lds_ideal) += ideal;
            c->tail_wavefronts += tail ? w : 0;
            c->tail_ideal += tail ? ideal : 0;
        }
    } else {
        uintptr_t sectors[VAE_EMU_WARP * 2];
        int       ns = 0, lanes = 0;
        for (int l = 0; l < VAE_EMU_WARP; l++) {
            for (uintptr_t s = a.at[l] / 32; a.at[l] && s <= (a.at[l] + a.bytes - 1) / 32; s++) {
                bool seen = false;
                for (int j = 0; j < ns && !seen; j++) {
                    seen = sectors[j] == s;
                }
                if (!seen) {
                    sectors[ns++] = s;
                }
            }
            lanes += a.at[l] != 0;
        }
        (a.write ? c->gst : c->gld)++;
        (a.write ? c->gst_bytes : c->gld_bytes) += (unsigned long long) lanes * a.bytes;
        (a.write ? c->gst_sectors : c->gld_sectors) += (unsigned long long) ns;
    }
}

// at a barrier and at the block's end (`tail`: the shared accesses made after its last barrier,
// an epilogue, counted apart too): the 16-byte writes and the loads and stores of every warp, as
// warp instructions
static void emu_count_flush(bool tail) {
    vae_emu_counts * c = emu_counts();
    for (size_t w = 0; c && w < E.st16.size(); w++) {
        for (const auto & ins : E.st16[w]) {
            uintptr_t at[VAE_EMU_WARP];   // (the lanes that wrote: shared windows start at 1 << 24, never 0)
            for (int l = 0; l < VAE_EMU_WARP; l++) {
                at[l] = ins[(size_t) l] != ~0u ? ins[(size_t) l] : 0;
            }
            unsigned ideal = 0;
            c->st16++;
            c->st16_wavefronts += vae_emu_shared_wavefronts(at, 16, &ideal);
        }
        E.st16[w].clear();
    }
    for (size_t w = 0; c && w < E.accesses.size(); w++) {
        for (const auto & kv : E.accesses[w]) {
            emu_count_instruction(c, kv.second, tail);
        }
        E.accesses[w].clear();
    }
    for (auto & f : E.fibers) {
        f.st16 = 0;
        f.pcs.clear();
    }
}

// ---- barriers ----------------------------------------------------------------------------------

static void emu_release_block() {
    const char * file = nullptr;
    int          line = 0;
    for (auto & f : E.fibers) {
        if (f.state == EMU_BAR) {
            if (file && (f.line != line || strcmp(f.file, file) != 0)) {
                vae_emu_fail(f.file, f.line, "__syncthreads here while other threads wait at the one of %s:%d", file,
                             line);
            }
            file = f.file;
            line = f.line;
        }
    }
    for (auto & f : E.fibers) {
        if (f.state == EMU_BAR) {
            f.state = EMU_RUN;
        }
    }
    E.bar_wait = 0;
    E.cursor   = 0;
    emu_race_barrier();
    if (vae_emu_counts * c = emu_counts()) {
        c->barriers++;
        emu_count_flush(false);
    }
}

extern "C" void vae_emu_syncthreads(const char * file, int line) {
    emu_fiber * f = E.cur;
    f->state      = EMU_BAR;
    f->file       = file;
    f->line       = line;
    if (++E.bar_wait == E.live) {
        emu_release_block();
    }
    emu_yield();
}

// orders: a __syncwarp, after which the race checker takes the warp's earlier accesses as done
static void emu_release_warp(int w, bool orders) {
    const char * file = nullptr;
    int          line = 0;
    for (int l = 0; l < VAE_EMU_WARP && w * VAE_EMU_WARP + l < E.nthreads; l++) {
        emu_fiber & f = E.fibers[w * VAE_EMU_WARP + l];
        if (file && (f.line != line || strcmp(f.file, file) != 0)) {
            vae_emu_fail(f.file, f.line, "a warp collective here while lane 0 waits at the one of %s:%d", file, line);
        }
        file    = f.file;
        line    = f.line;
        f.state = EMU_RUN;
    }
    E.warp_wait[w] = 0;
    E.cursor       = 0;
    if (orders) {
        E.warp_stamp[w] = emu_race_stamp();
    }
}

// a barrier of the warp: every lane of the warp must be live and reach the same call site
static void emu_warp_barrier(vae_emu_mask_t mask, const char * file, int line, bool orders) {
    emu_fiber *          f     = E.cur;
    const int            w     = f->w.lane >= 0 ? (int) (f - E.fibers.data()) / VAE_EMU_WARP : 0;
    const int            lanes = std::min(VAE_EMU_WARP, E.nthreads - w * VAE_EMU_WARP);
    const vae_emu_mask_t full  = (vae_emu_mask_t) (lanes == 64 ? ~0ull : (1ull << lanes) - 1);
    if ((mask & full) != full) {
        vae_emu_fail(file, line, "warp collective with mask 0x%0*llx: the emulator needs every lane of the warp (%d)",
                     VAE_EMU_WARP / 4, (unsigned long long) mask, VAE_EMU_WARP);
    }
    if (E.warp_live[w] != lanes) {
        vae_emu_fail(file, line, "warp collective after %d lane(s) of the warp exited", lanes - E.warp_live[w]);
    }
    f->state = EMU_WARP;
    f->file  = file;
    f->line  = line;
    if (++E.warp_wait[w] == lanes) {
        emu_release_warp(w, orders);
    }
    emu_yield();
}

extern "C" void vae_emu_syncwarp(const char * file, int line, vae_emu_mask_t mask) {
    emu_warp_barrier(mask, file, line, true);
}

// two buffers per warp, used in turn: a lane writes buffer b for exchange k + 2 only after every
// lane of its warp has passed exchange k + 1, so has read exchange k (before its next collective)
extern "C" const unsigned char * vae_emu_warp_exchange(vae_emu_mask_t mask, const void * mine, size_t bytes,
                                                       const char * file, int line) {
    emu_fiber *     f = E.cur;
    const int       w = (int) (f - E.fibers.data()) / VAE_EMU_WARP;
    unsigned char * x = E.exchange.data() + ((size_t) w * 2 + (f->exchanges++ & 1)) * VAE_EMU_WARP * 64;
    memcpy(x + f->w.lane * 64, mine, bytes);
    emu_warp_barrier(mask, file, line, false);
    return x;
}

#if !defined(VAE_GPU_EMU_GFX)   // (NVIDIA only)
// ---- wgmma (sm_90a) ------------------------------------------------------------------------------
// A warpgroup is 128 consecutive threads of the block (4 warps); its instructions (.sync.aligned)
// need all of them live, at one call site. Each thread computes its own accumulators at issue from
// the shared memory its descriptors give (vae_emu_gmma_addr, in the dynamic shared memory),
// remembers what it read and poisons its registers (NaN): they are the instruction's until the
// wgmma.wait_group that completes its group, which writes them and reports any operand element
// changed since the issue (shared memory reused before the wait). A wgmma.mma_async needs a
// wgmma.fence since the thread's start or its last wgmma.wait_group (stricter than the PTX ISA,
// which asks it only around register accesses: the way CUTLASS's main loops fence every step);
// one accumulating into registers still in flight takes the accumulators the earlier one gives.

// with the race checker on: an async-proxy read of p's bytes by `what` must meet no generic write
// left unfenced by its writer (emu_proxy_cell)
static void emu_proxy_check(const void * p, size_t bytes, const char * what, const char * file, int line) {
    const size_t off = (uintptr_t) p - vae_emu_race_lo;
    for (size_t i = off; emu_proxy_shadow && off < vae_emu_race_span && i < off + bytes; i++) {
        const emu_proxy_cell & c = emu_proxy_shadow[i];
        if (c.t != EMU_RACE_NONE && c.block == emu_proxy_block && E.fibers[c.t].proxy_fence < c.seq) {
            vae_emu_fail(file, line, "%s reads a shared byte that thread %u wrote through the generic proxy with no "
                         "fence.proxy.async after the write", what, c.t);
        }
    }
}

extern "C" void vae_emu_fence_proxy_async(void) {
    E.cur->proxy_fence = ++emu_proxy_seq;
}

// the Hopper instructions exist from sm_90 on
static void emu_need_sm90(const char * what, const char * file, int line) {
    if (__CUDA_ARCH__ < 900) {
        vae_emu_fail(file, line, "%s on the emulated sm_%d: it needs sm_90", what, __CUDA_ARCH__ / 10);
    }
}

// every thread of the warpgroup deposits `bytes` (<= 64); returns the 128 deposits, thread t's at 64 t
// (two buffers per warpgroup, used in turn, as the warps' exchanges)
static const unsigned char * emu_group_exchange(const void * mine, size_t bytes, const char * file, int line) {
    emu_need_sm90("a warpgroup instruction (wgmma, setmaxnreg)", file, line);
    emu_fiber * f = E.cur;
    const int   t = (int) (f - E.fibers.data()), g = t / 128;
    if ((g + 1) * 128 > E.nthreads) { // (the PTX ISA: four contiguous warps, the first's rank a multiple of 4; the
                                      // block may have more warps, as a producer warp after two warpgroups)
        vae_emu_fail(file, line, "a warpgroup instruction in warp %d of a block of %d threads (its warpgroup "
                     "incomplete)", t / 32, E.nthreads);
    }
    for (int w = 4 * g; w < 4 * g + 4; w++) {
        if (E.warp_live[w] != VAE_EMU_WARP) {
            vae_emu_fail(file, line, "a warpgroup instruction after a thread of its warpgroup exited");
        }
    }
    unsigned char * x = E.group_exchange.data() + ((size_t) g * 2 + (f->group_exchanges++ & 1)) * 128 * 64;
    if (bytes) {
        memcpy(x + t % 128 * 64, mine, bytes);
    }
    f->state = EMU_GROUP;
    f->file  = file;
    f->line  = line;
    if (++E.group_wait[g] == 128) {
        for (int u = 128 * g; u < 128 * g + 128; u++) {
            emu_fiber & o = E.fibers[u];
            if (o.line != line || strcmp(o.file, file) != 0) {
                vae_emu_fail(o.file, o.line, "a warpgroup instruction here while thread %d of its warpgroup waits at "
                             "the one of %s:%d", t, file, line);
            }
            o.state = EMU_RUN;
        }
        E.group_wait[g] = 0;
        E.cursor        = 0;
    }
    emu_yield();
    return x;
}

// the instruction's parameters, the same in every thread of the warpgroup (rs: A from registers),
// then the thread's A registers
struct emu_wgmma_args {
    uint64_t da, db;
    int      n, kind;
    bool     a_mn, b_mn, scale_d, rs;
};
struct emu_wgmma_deposit {
    emu_wgmma_args args;
    unsigned       a[4];
};

// the destinations of the tensor copies in flight (issued, not landed): the one holding shared
// byte p, or NULL
struct emu_tma_dests {
    std::vector<std::pair<const unsigned char *, const emu_tma_copy *>> at;
    emu_tma_dests() {
        for (const emu_tma_copy & c : E.tma) {
            at.emplace_back((const unsigned char *) vae_emu_shared_at(c.dst, c.box.size(), c.file, c.line), &c);
        }
    }
    const emu_tma_copy * over(const void * p) const {
        for (const auto & d : at) {
            if ((const unsigned char *) p >= d.first && (const unsigned char *) p < d.first + d.second->box.size()) {
                return d.second;
            }
        }
        return nullptr;
    }
};

// a: the thread's A fragment (4 registers of 16-bit pairs, vae_emu_gmma_frag_at), or NULL: A by da
static void emu_wgmma_issue(float * d, int n, uint64_t da, const unsigned * a, uint64_t db, bool a_mn, bool b_mn,
                            int kind, bool scale_d, const char * file, int line) {
    emu_fiber *          f    = E.cur;
    emu_wgmma_deposit    mine = {};
    mine.args                 = { a ? 0 : da, db, n, kind, a_mn, b_mn, scale_d, a != nullptr };
    if (a) {
        memcpy(mine.a, a, sizeof(mine.a));
    }
    const unsigned char * all = emu_group_exchange(&mine, sizeof(mine), file, line);
    const int            t    = (int) (f - E.fibers.data()) % 128;
    for (int u = 0; u < 128; u++) {
        emu_wgmma_args o;
        memcpy(&o, all + u * 64, sizeof(o));
        if (memcmp(&o, &mine.args, sizeof(o)) != 0) {
            vae_emu_fail(file, line, "wgmma.mma_async: thread %d of the warpgroup gives other operands than thread %d "
                         "(descriptors 0x%016llx, 0x%016llx against 0x%016llx, 0x%016llx)", u, t,
                         (unsigned long long) o.da, (unsigned long long) o.db, (unsigned long long) da,
                         (unsigned long long) db);
        }
    }
    const bool tf32 = kind == 3;
    if (n < 8 || n > 256 || n % 8 || (kind != 0 && kind != 1 && kind != 3) || (tf32 && (a_mn || b_mn))) {
        vae_emu_fail(file, line, "wgmma.mma_async m64n%dk%d of kind %d%s: not an instruction", n, tf32 ? 8 : 16, kind,
                     tf32 && (a_mn || b_mn) ? " (tf32 operands are K-major only)" : "");
    }
    if (a && tf32) {
        vae_emu_fail(file, line, "wgmma.mma_async tf32 with A from registers: not emulated");
    }
    if (!f->wg_fenced) {
        vae_emu_fail(file, line, "wgmma.mma_async without a wgmma.fence since the thread's start or its last "
                     "wgmma.wait_group");
    }
    if (!E.dyn.base) {
        vae_emu_fail(file, line, "wgmma.mma_async: its operands are in dynamic shared memory, and the launch has none");
    }
    // the accumulators going in: those of the last wgmma in flight on these registers, else d
    const float * in = d;
    for (const auto & group : f->wg_groups) {
        for (const emu_wgmma & w : group) {
            in = w.d == d ? w.out.data() : in;
        }
    }
    for (const emu_wgmma & w : f->wg_open) {
        in = w.d == d ? w.out.data() : in;
    }
    emu_wgmma w;
    w.d    = d;
    w.elem = tf32 ? 4 : 2;
    w.file = file;
    w.line = line;
    w.out.assign(in, in + n / 2);
    const int           K = tf32 ? 8 : 16;
    const emu_tma_dests flight;
    auto                at = [&](uint64_t desc, bool mn, int i, int k) {
        const void * p = vae_emu_shared_at(E.dyn.window + vae_emu_gmma_addr(desc, mn, w.elem, i, k, file, line), w.elem,
                                                file, line);
        emu_proxy_check(p, w.elem, "wgmma.mma_async", file, line);
        if (const emu_tma_copy * c = flight.over(p)) {
            vae_emu_fail(file, line, "wgmma.mma_async reads shared memory that the tensor copy of %s:%d, in flight, "
                         "will write (no wait on its mbarrier?)", c->file, c->line);
        }
        uint32_t     bits = 0;
        memcpy(&bits, p, w.elem);
        w.read.emplace_back(p, bits);
        return tf32 ? __uint_as_float(bits & 0xffffe000u) : kind == 0 ? vae_emu_b16(bits, 0, __half())
                                                                            : vae_emu_b16(bits, 0, __nv_bfloat16());
    };
    // A (m, k) from registers: value v = 4 (k / 8) + 2 (m % 16 / 8) + k % 2 of thread 32 (m / 16) +
    // 4 (m % 8) + k % 8 / 2 (vae_emu_gmma_frag_at inverted), the 16-bit half v % 2 of register v / 2
    auto a_reg = [&](int m, int k) {
        const int      v = 4 * (k / 8) + 2 * (m % 16 / 8) + k % 2, u = 32 * (m / 16) + 4 * (m % 8) + k % 8 / 2;
        emu_wgmma_deposit o;
        memcpy(&o, all + u * 64, sizeof(o));
        return kind == 0 ? vae_emu_b16(o.a[v / 2], v % 2, __half()) : vae_emu_b16(o.a[v / 2], v % 2, __nv_bfloat16());
    };
    // the thread's operands, each read once: A's rows 16 w + g and + 8, B's columns 8 j + 2 q and + 1
    // (vae_emu_gmma_frag_at: value v at row slot v / 2 % 2, column slot 2 (v / 4) + v % 2)
    float A[2][16], B[64][16];
    for (int r = 0; r < 2; r++) {
        const int m = 16 * (t / 32) + t % 32 / 4 + 8 * r;
        for (int k = 0; k < K; k++) {
            A[r][k] = a ? a_reg(m, k) : at(da, a_mn, m, k);
        }
    }
    for (int j = 0; j < n / 4; j++) {
        const int c = 8 * (j / 2) + 2 * (t % 4) + j % 2;
        for (int k = 0; k < K; k++) {
            B[j][k] = at(db, b_mn, c, k);
        }
    }
    for (int v = 0; v < n / 2; v++) {
        float s = scale_d ? w.out[v] : 0.0f;
        for (int k = 0; k < K; k++) {
            s += A[v / 2 % 2][k] * B[2 * (v / 4) + v % 2][k];
        }
        w.out[v] = s;
    }
    for (int v = 0; v < n / 2; v++) {
        d[v] = NAN;   // (the instruction's until it completes)
    }
    f->wg_open.push_back(std::move(w));
    vae_emu_counts * c = emu_counts();
    if (c && t == 0) { // (once per warpgroup)
        c->wgmma++;
        c->wgmma_flop += 2ull * 64 * (unsigned) n * (unsigned) K;
        c->wgmma_smem += (unsigned long long) ((a ? 0 : 64) + n) * (unsigned) K * (tf32 ? 4 : 2);
    }
}

extern "C" void vae_emu_wgmma(float * d, int n, uint64_t da, uint64_t db, bool a_mn, bool b_mn, int kind, bool scale_d,
                              const char * file, int line) {
    emu_wgmma_issue(d, n, da, nullptr, db, a_mn, b_mn, kind, scale_d, file, line);
}

extern "C" void vae_emu_wgmma_rs(float * d, int n, const unsigned * a, uint64_t db, bool b_mn, int kind, bool scale_d,
                                 const char * file, int line) {
    emu_wgmma_issue(d, n, 0, a, db, false, b_mn, kind, scale_d, file, line);
}

extern "C" void vae_emu_wgmma_fence(const char * file, int line) {
    emu_group_exchange(nullptr, 0, file, line);
    E.cur->wg_fenced = true;
}

extern "C" void vae_emu_wgmma_commit(const char * file, int line) {
    emu_group_exchange(nullptr, 0, file, line);
    emu_fiber * f = E.cur;
    f->wg_groups.push_back(std::move(f->wg_open));
    f->wg_open.clear();
}

extern "C" void vae_emu_wgmma_wait(int pending, const char * file, int line) {
    emu_group_exchange(nullptr, 0, file, line);
    emu_fiber *         f = E.cur;
    const emu_tma_dests flight;
    while ((int) f->wg_groups.size() > pending) {
        for (const emu_wgmma & w : f->wg_groups.front()) {
            for (const auto & r : w.read) {
                uint32_t now = 0;
                memcpy(&now, r.first, w.elem);
                if (const emu_tma_copy * c = flight.over(r.first)) { // (whenever it lands)
                    vae_emu_fail(file, line, "the tensor copy of %s:%d, issued before this wgmma.wait_group "
                                 "completed the wgmma.mma_async of %s:%d, writes shared memory that it reads (a "
                                 "stage reused before its wait)", c->file, c->line, w.file, w.line);
                }
                if (now != r.second) {
                    vae_emu_fail(file, line, "shared memory that the wgmma.mma_async of %s:%d reads changed before "
                                 "this wgmma.wait_group completed it (a stage reused before its wait)", w.file, w.line);
                }
            }
            bool later = false;   // a later wgmma in flight on these registers: they stay its
            for (size_t g = 1; g < f->wg_groups.size(); g++) {
                for (const emu_wgmma & o : f->wg_groups[g]) {
                    later = later || o.d == w.d;
                }
            }
            for (const emu_wgmma & o : f->wg_open) {
                later = later || o.d == w.d;
            }
            if (!later) {
                memcpy(w.d, w.out.data(), w.out.size() * sizeof(float));
            }
        }
        f->wg_groups.erase(f->wg_groups.begin());
    }
    f->wg_fenced = false;
}

extern "C" void vae_emu_setmaxnreg(unsigned n, bool inc, const char * file, int line) {
    const unsigned        mine[2] = { n, inc };
    const unsigned char * all     = emu_group_exchange(mine, sizeof(mine), file, line);
    if (n < 24 || n > 256 || n % 8) {
        vae_emu_fail(file, line, "setmaxnreg %u: not in 24 .. 256, a multiple of 8", n);
    }
    for (int u = 0; u < 128; u++) {
        if (memcmp(all + u * 64, mine, sizeof(mine)) != 0) {
            vae_emu_fail(file, line, "setmaxnreg: thread %d of the warpgroup asks another count", u);
        }
    }
}

// ---- mbarrier (sm_90): arrivals and transaction bytes per phase ---------------------------------
// From the PTX ISA (9.7.13.15, "mbarrier"): a phase completes when its pending arrivals reach 0 and
// its pending transaction bytes are 0 (expect_tx adds, complete_tx, the asynchronous copies'
// landing, takes away); the next phase then expects `count` arrivals again. A wait for the phase
// of parity P returns once the barrier's current phase has the other parity (P completed). Here a
// waiting thread sleeps until an arrival or a landing completes the phase: a phase that never
// completes (a wrong byte count, parity or arrival count) is the deadlock the GPU would hang in,
// reported naming the barrier and what it still waits for. (The race checker does not yet take a
// completed phase as ordering memory.)

static emu_mbar & emu_mbar_at(unsigned addr, const char * file, int line) {
    auto it = E.mbars.find(addr);
    if (it == E.mbars.end()) {
        vae_emu_fail(file, line, "mbarrier at shared address 0x%x used before mbarrier.init", addr);
    }
    return it->second;
}

// the phase done: the next one, and the threads that waited for it run again
static void emu_mbar_check(unsigned addr, emu_mbar & b) {
    if (b.pending > 0 || b.tx != 0) {
        return;
    }
    b.phase++;
    b.pending = b.count;
    for (auto & f : E.fibers) {
        if (f.state == EMU_MBAR && f.mbar == addr && (b.phase & 1) != f.mbar_parity) {
            f.state = EMU_RUN;
        }
    }
    E.cursor = 0;
}

extern "C" void vae_emu_mbar_init(unsigned addr, unsigned count, const char * file, int line) {
    emu_need_sm90("an mbarrier with transaction bytes", file, line);
    if (addr % 8 || count < 1 || count >= (1u << 20)) {
        vae_emu_fail(file, line, "mbarrier.init at shared address 0x%x with count %u (8-byte aligned, 1 .. 2^20 - 1)",
                     addr, count);
    }
    vae_emu_shared_at(addr, 8, file, line);
    E.mbars[addr] = { count, count, 0, 0, file, line };
}

extern "C" unsigned vae_emu_mbar_arrive(unsigned addr, unsigned tx, const char * file, int line) {
    emu_mbar &     b     = emu_mbar_at(addr, file, line);
    const unsigned phase = b.phase;
    b.tx += tx;
    b.pending--;
    emu_mbar_check(addr, b);
    return phase;
}

extern "C" void vae_emu_mbar_expect_tx(unsigned addr, unsigned tx, const char * file, int line) {
    emu_mbar_at(addr, file, line).tx += tx;
}

extern "C" void vae_emu_mbar_complete_tx(unsigned addr, unsigned tx, const char * file, int line) {
    emu_mbar & b = emu_mbar_at(addr, file, line);
    b.tx -= tx;
    emu_mbar_check(addr, b);
}

static void emu_tma_land(unsigned mbar, const char * file, int line);

extern "C" void vae_emu_mbar_wait(unsigned addr, unsigned parity, const char * file, int line) {
    emu_tma_land(addr, file, line);
    const emu_mbar & b = emu_mbar_at(addr, file, line);
    if ((b.phase & 1) != (parity & 1)) {
        return;
    }
    emu_fiber * f   = E.cur;
    f->state        = EMU_MBAR;
    f->mbar         = addr;
    f->mbar_parity  = parity & 1;
    f->file         = file;
    f->line         = line;
    emu_yield();
}

// ---- TMA (sm_90): tensor maps and tensor copies ---------------------------------------------------
// cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col (the CUDA driver API's reference: their limits
// checked as it documents them) write this into the map's 128 opaque bytes; cp.async.bulk.tensor
// (global to shared, PTX ISA 9.7.9.25) reads its box at issue, elements outside the tensor as
// zeros (or NaN with the NaN fill), and lands it densely (dimension 0 fastest) at the shared
// destination, 16-byte chunks swizzled on the absolute address as wgmma reads them
// (vae_emu_gmma_addr), when a thread next waits on its mbarrier, whose transaction bytes it then
// completes. A block that ends with a copy in flight stops the run. Element strides other than 1
// and interleaved layouts are not emulated (refused).
// Tile mode: the box of box[] elements at the coordinates. Im2col mode (PTX ISA 5.5.4, "im2col
// mode"): dimensions C (0), the spatial ones, N (last); the bounding box of each spatial dimension
// d is [lower + o, dim + upper + o) for the instruction's offset o; box[1] pixels are read from the
// coordinates' pixel shifted by the offsets, W fastest, wrapping within the bounding box to its
// next row and then to the next image, each its box[0] channels from the coordinates' channel on.
struct emu_tmap {
    uint32_t     magic;
    uint8_t      elem, rank, swizzle, nan_fill, im2col;
    int16_t      lower[3], upper[3];   // im2col: the bounding box's corners, spatial dimensions 1 ..
    const char * global;
    uint64_t     dim[5], stride[4];   // stride[i]: bytes from one index of dimension i + 1 to the next
    uint32_t     box[5];              // im2col: channels per pixel, pixels
};
static_assert(sizeof(emu_tmap) <= 128, "a tensor map's opaque bytes");
#define EMU_TMAP_MAGIC 0x544d4150u

// what both encodings check and keep: the tensor, its strides, the fill, the swizzle; row: the
// bytes of the box's rows (dimension 0), whole 16 bytes within the swizzle's span. false: refused
static bool emu_tmap_tensor(emu_tmap & m, int dtype, unsigned rank, void * global, const uint64_t * dim,
                            const uint64_t * stride, const uint32_t * elem_stride, int interleave, int swizzle,
                            int oob_fill, unsigned row) {
    static const unsigned bytes[] = { 1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4 };   // CUtensorMapDataType's
    if (dtype < 0 || dtype > 12 || rank < 1 || rank > 5 || !global || (uintptr_t) global % 16 || interleave != 0 ||
        swizzle < 0 || swizzle > 3 || oob_fill < 0 || oob_fill > 1) {
        return false;
    }
    m          = {};
    m.magic    = EMU_TMAP_MAGIC;
    m.elem     = (uint8_t) bytes[dtype];
    m.rank     = (uint8_t) rank;
    m.swizzle  = (uint8_t) (swizzle ? 16u << swizzle : 0);
    m.nan_fill = (uint8_t) oob_fill;
    m.global   = (const char *) global;
    for (unsigned i = 0; i < rank; i++) {
        if (dim[i] < 1 || dim[i] > (1ull << 32) || elem_stride[i] != 1 ||
            (i > 0 && (stride[i - 1] % 16 || stride[i - 1] >= (1ull << 40)))) {
            return false;
        }
        m.dim[i] = dim[i];
        if (i > 0) {
            m.stride[i - 1] = stride[i - 1];
        }
    }
    return row * m.elem % 16 == 0 && (!m.swizzle || row * m.elem <= m.swizzle);
}

extern "C" int vae_emu_tensor_map_encode_tiled(void * map, int dtype, unsigned rank, void * global, const uint64_t * dim,
                                               const uint64_t * stride, const uint32_t * box,
                                               const uint32_t * elem_stride, int interleave, int swizzle, int l2,
                                               int oob_fill) {
    emu_tmap m;
    (void) l2;
    if (!map || (uintptr_t) map % 64 || !box ||
        !emu_tmap_tensor(m, dtype, rank, global, dim, stride, elem_stride, interleave, swizzle, oob_fill, box[0])) {
        return 1;   // CUDA_ERROR_INVALID_VALUE
    }
    for (unsigned i = 0; i < rank; i++) {
        if (box[i] < 1 || box[i] > 256) {
            return 1;
        }
        m.box[i] = box[i];
    }
    memcpy(map, &m, sizeof(m));
    return 0;
}

// the corners' range by rank (the driver's reference: 16, 8 and 5 signed bits for ranks 3, 4, 5)
extern "C" int vae_emu_tensor_map_encode_im2col(void * map, int dtype, unsigned rank, void * global,
                                                const uint64_t * dim, const uint64_t * stride, const int * lower,
                                                const int * upper, unsigned channels, unsigned pixels,
                                                const uint32_t * elem_stride, int interleave, int swizzle, int l2,
                                                int oob_fill) {
    emu_tmap m;
    (void) l2;
    if (!map || (uintptr_t) map % 64 || rank < 3 || channels < 1 || channels > 256 || pixels < 1 || pixels > 1024 ||
        !emu_tmap_tensor(m, dtype, rank, global, dim, stride, elem_stride, interleave, swizzle, oob_fill, channels)) {
        return 1;
    }
    const int lim = rank == 3 ? 1 << 15 : rank == 4 ? 1 << 7 : 1 << 4;
    for (unsigned d = 0; d + 2 < rank; d++) {
        if (lower[d] < -lim || lower[d] >= lim || upper[d] < -lim || upper[d] >= lim) {
            return 1;
        }
        m.lower[d] = (int16_t) lower[d];
        m.upper[d] = (int16_t) upper[d];
    }
    m.im2col = 1;
    m.box[0] = channels;
    m.box[1] = pixels;
    memcpy(map, &m, sizeof(m));
    return 0;
}

// a copy of `box` (read at issue) to land at dst when a thread waits on mbar
static void emu_tma_issue(unsigned dst, const emu_tmap & m, std::vector<unsigned char> box, unsigned mbar,
                          const char * file, int line) {
    emu_need_sm90("cp.async.bulk.tensor", file, line);
    if (dst % 128) {
        vae_emu_fail(file, line, "cp.async.bulk.tensor to shared address 0x%x: not 128-byte aligned", dst);
    }
    emu_mbar_at(mbar, file, line);
    vae_emu_shared_at(dst, box.size(), file, line);   // (the whole box inside shared memory)
    emu_tma_copy c;
    c.dst     = dst;
    c.mbar    = mbar;
    c.swizzle = m.swizzle;
    c.box     = std::move(box);
    c.file    = file;
    c.line    = line;
    if (vae_emu_counts * k = emu_counts()) {
        k->tma++;
        k->tma_bytes += c.box.size();
    }
    E.tma.push_back(std::move(c));
}

// element x (its coordinates, dimension 0 first) of m's tensor into d: its bytes, or the fill
static void emu_tmap_read(const emu_tmap & m, const long long * x, unsigned char * d) {
    size_t off = 0;
    for (unsigned i = 0; i < m.rank; i++) {
        if (x[i] < 0 || (unsigned long long) x[i] >= m.dim[i]) {
            memset(d, m.nan_fill ? 0xff : 0, m.elem);
            return;
        }
        off += (size_t) x[i] * (i ? m.stride[i - 1] : m.elem);
    }
    memcpy(d, m.global + off, m.elem);
}

static emu_tmap emu_tmap_of(const void * map, bool im2col, const char * file, int line) {
    emu_tmap m;
    memcpy(&m, map, sizeof(m));
    if (m.magic != EMU_TMAP_MAGIC || m.im2col != im2col) {
        vae_emu_fail(file, line, "cp.async.bulk.tensor (%s mode) with a tensor map cuTensorMapEncode%s did not make",
                     im2col ? "im2col" : "tile", im2col ? "Im2col" : "Tiled");
    }
    return m;
}

// im2col mode: offsets, one per spatial dimension (dimension 1 first)
extern "C" void vae_emu_tma_load_im2col(unsigned dst, const void * map, const int * coords, const int * offsets,
                                        unsigned mbar, const char * file, int line) {
    const emu_tmap m = emu_tmap_of(map, true, file, line);
    const unsigned s = m.rank - 2;   // spatial dimensions
    long long      pos[5];           // the pixel's place in the bounding box (offsets not added), its image
    for (unsigned i = 1; i < m.rank; i++) {
        pos[i] = coords[i];
        if (i <= s && (pos[i] < m.lower[i - 1] || pos[i] >= (long long) m.dim[i] + m.upper[i - 1])) {
            vae_emu_fail(file, line, "cp.async.bulk.tensor im2col: coordinate %lld of dimension %u outside the "
                         "bounding box [%d, %lld) (not emulated)", pos[i], i, m.lower[i - 1],
                         (long long) m.dim[i] + m.upper[i - 1]);
        }
    }
    std::vector<unsigned char> box((size_t) m.box[0] * m.box[1] * m.elem);
    for (unsigned p = 0; p < m.box[1]; p++) {
        long long x[5] = { 0, 0, 0, 0, 0 };
        x[m.rank - 1] = pos[m.rank - 1];
        for (unsigned i = 1; i <= s; i++) {
            x[i] = pos[i] + offsets[i - 1];
        }
        for (unsigned c = 0; c < m.box[0]; c++) {
            x[0] = (long long) coords[0] + c;
            emu_tmap_read(m, x, box.data() + ((size_t) p * m.box[0] + c) * m.elem);
        }
        for (unsigned i = 1; i <= s; i++) { // W fastest, wrapping to the box's next row, then image
            if (++pos[i] < (long long) m.dim[i] + m.upper[i - 1]) {
                break;
            }
            pos[i] = m.lower[i - 1];
            if (i == s) {
                pos[m.rank - 1]++;
            }
        }
    }
    emu_tma_issue(dst, m, std::move(box), mbar, file, line);
}

extern "C" void vae_emu_tma_load(unsigned dst, const void * map, const int * coords, unsigned mbar, const char * file,
                                 int line) {
    const emu_tmap m = emu_tmap_of(map, false, file, line);
    size_t         n = 1;
    for (unsigned i = 0; i < m.rank; i++) {
        n *= m.box[i];
    }
    std::vector<unsigned char> box(n * m.elem);
    unsigned                   idx[5] = { 0, 0, 0, 0, 0 };
    for (size_t e = 0; e < n; e++) {
        long long x[5] = { 0, 0, 0, 0, 0 };
        for (unsigned i = 0; i < m.rank; i++) {
            x[i] = (long long) coords[i] + idx[i];
        }
        emu_tmap_read(m, x, box.data() + e * m.elem);
        for (unsigned i = 0; i < m.rank && ++idx[i] == m.box[i]; i++) {
            idx[i] = 0;
        }
    }
    emu_tma_issue(dst, m, std::move(box), mbar, file, line);
}

// the copies that complete mbarrier mbar's transactions land, in issue order
static void emu_tma_land(unsigned mbar, const char * file, int line) {
    for (size_t i = 0; i < E.tma.size();) {
        emu_tma_copy & c = E.tma[i];
        if (c.mbar != mbar) {
            i++;
            continue;
        }
        const unsigned w = c.swizzle / 16;
        for (size_t o = 0; o < c.box.size(); o += 16) {
            const unsigned a = c.dst + (unsigned) o, at = w ? a ^ (a >> 7 & (w - 1)) << 4 : a;
            void * d = vae_emu_shared_at(at, 16, c.file, c.line);
            memcpy(d, c.box.data() + o, 16);
            for (size_t i = (uintptr_t) d - vae_emu_race_lo; emu_proxy_shadow && i < (uintptr_t) d - vae_emu_race_lo + 16;
                 i++) {
                emu_proxy_shadow[i].t = EMU_RACE_NONE;   // (an async-proxy write)
            }
        }
        const unsigned n = (unsigned) c.box.size();
        E.tma.erase(E.tma.begin() + (long) i);
        vae_emu_mbar_complete_tx(mbar, n, file, line);
    }
}
#endif

// ---- running a launch --------------------------------------------------------------------------

static void emu_fiber_main() {
    emu_fiber * f = E.cur;
    (*E.body)();
    // done: drop its pending copies; release barriers that waited for it alone
    f->state = EMU_DONE;
    f->open.clear();
    f->groups.clear();
    if (!f->wg_open.empty() || !f->wg_groups.empty()) {
        const emu_wgmma & w = f->wg_open.empty() ? f->wg_groups.back().back() : f->wg_open.back();
        vae_emu_fail(w.file, w.line, "a thread exited with this wgmma.mma_async in flight (no wgmma.wait_group "
                     "completed it)");
    }
    E.live--;
    const int w = (int) (f - E.fibers.data()) / VAE_EMU_WARP;
    E.warp_live[w]--;
    if (E.warp_wait[w] > 0) {
        vae_emu_fail(f->file ? f->file : "?", f->line, "a thread exited while its warp waits at a collective");
    }
    if (E.bar_wait > 0 && E.bar_wait == E.live) {
        emu_release_block();
    }
    vae_emu_switch(&f->sp, E.sched_sp);
    abort();   // never resumed
}

static void emu_fiber_start(emu_fiber * f) {
    if (!f->stack) {
        char * m = (char *) mmap(nullptr, EMU_STACK + emu_page(), PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            vae_emu_fail(__FILE__, __LINE__, "out of memory for fiber stacks");
        }
        mprotect(m, emu_page(), PROT_NONE);
        f->stack = m + emu_page();
    }
    // the frame vae_emu_switch pops: mxcsr and x87 control word, six registers, the entry
    uint64_t * top = (uint64_t *) (f->stack + EMU_STACK);
    top -= 2;   // keeps the entry's slot 16-byte aligned
    *--top = (uint64_t) (uintptr_t) abort;   // return address of emu_fiber_main (never used)
    uint64_t * entry = --top;
    *entry           = (uint64_t) (uintptr_t) emu_fiber_main;
    for (int i = 0; i < 6; i++) {
        *--top = 0;
    }
    *--top       = 0x1f80 | (uint64_t) 0x037f << 32;
    f->sp        = top;
    f->exchanges = 0;
    f->group_exchanges = 0;
}

// the priority of a block's threads (and the order of the blocks of a launch): forward, reverse,
// random, or alternate (the default): forward or reverse by the parity of the launch count plus
// the block's index, so that a kernel with two blocks, or launched twice, meets both
static void emu_order(std::vector<int> & order, const char * how, size_t parity) {
    for (size_t i = 0; i < order.size(); i++) {
        order[i] = (int) i;
    }
    if (strncmp(how, "reverse", 7) == 0 || (strncmp(how, "alternate", 9) == 0 && parity % 2)) {
        std::reverse(order.begin(), order.end());
    } else if (strncmp(how, "random", 6) == 0) {
        std::shuffle(order.begin(), order.end(), E.rng);
    }
}

static void emu_run_block(unsigned bx, unsigned by, unsigned bz, const char * how) {
    const dim3 b = E.cfg->block, g = E.cfg->grid;
    E.live       = E.nthreads;
    E.bar_wait   = 0;
    emu_proxy_block++;
    E.mbars.clear();
    E.tma.clear();
    emu_race_barrier();
    for (int w = 0; w < (E.nthreads + VAE_EMU_WARP - 1) / VAE_EMU_WARP; w++) {
        E.warp_live[w] = std::min(VAE_EMU_WARP, E.nthreads - w * VAE_EMU_WARP);
        E.warp_wait[w] = 0;
    }
    for (int t = 0; t < E.nthreads; t++) {
        emu_fiber & f = E.fibers[t];
        f.w.tid       = { t % b.x, t / b.x % b.y, t / (b.x * b.y) };
        f.w.bid       = { bx, by, bz };
        f.w.bdim      = { b.x, b.y, b.z };
        f.w.gdim      = { g.x, g.y, g.z };
        f.w.lane      = t % VAE_EMU_WARP;
        f.state       = EMU_RUN;
        f.file        = nullptr;
        f.line        = 0;
        f.wg_open.clear();
        f.wg_groups.clear();
        f.wg_fenced   = false;
        f.proxy_fence = 0;
        emu_fiber_start(&f);
    }
    if (E.dyn.base) {
        memset(E.dyn.base, 0xff, E.dyn.bytes);
    }
    for (auto & kv : E.statics) {
        memset(kv.second.base, 0xff, kv.second.bytes);
    }
    // always the first runnable thread in the order: it runs until it waits, so each warp gets as far
    // ahead of the later ones as the barriers let it (a missing __syncthreads between a write and
    // other warps' reads, or before an overwrite of what they still read, changes what they read)
    std::vector<int> order((size_t) E.nthreads);
    emu_order(order, how, E.launches + bx + by + bz);
    E.cursor = 0;
    while (E.live > 0) {
        while (E.cursor < order.size() && E.fibers[order[E.cursor]].state != EMU_RUN) {
            E.cursor++;
        }
#if !defined(VAE_GPU_EMU_GFX)
        if (E.cursor == order.size() && !E.tma.empty()) {
            // every thread waits: the copies in flight land (as late as they can), which may complete
            // phases that threads sleep on
            while (!E.tma.empty()) {
                emu_tma_land(E.tma.front().mbar, E.tma.front().file, E.tma.front().line);
            }
            E.cursor = 0;
            continue;
        }
#endif
        if (E.cursor == order.size()) {
            for (auto & f : E.fibers) {
                if (f.state == EMU_MBAR) {
                    E.cur               = &f;
                    const emu_mbar & b  = E.mbars[f.mbar];
                    vae_emu_fail(f.file, f.line, "deadlock: this thread waits on the mbarrier at shared address 0x%x "
                                 "(made at %s:%d) for its phase of parity %u, which never completes: %u of its %u "
                                 "arrivals and %lld transaction bytes pending (a wrong expect_tx byte count, parity or "
                                 "arrival count?)", f.mbar, b.file, b.line, f.mbar_parity, b.pending, b.count, b.tx);
                }
                if (f.state == EMU_BAR || f.state == EMU_WARP || f.state == EMU_GROUP) {
                    E.cur = &f;
                    vae_emu_fail(f.file, f.line, "deadlock: this thread waits at a %s that others never reach",
                                 f.state == EMU_BAR ? "__syncthreads" : f.state == EMU_WARP ? "warp collective"
                                                                                         : "warpgroup instruction");
                }
            }
        }
        emu_fiber & f = E.fibers[order[E.cursor]];
        E.cur         = &f;
        vae_emu_now   = &f.w;
        vae_emu_switch(&E.sched_sp, f.sp);
    }
#if !defined(VAE_GPU_EMU_GFX)
    if (!E.tma.empty()) {
        vae_emu_fail(E.tma.front().file, E.tma.front().line, "a block ended with this tensor copy in flight (no "
                     "thread waited on its mbarrier)");
    }
#endif
    E.cur       = nullptr;
    vae_emu_now = nullptr;
    if (vae_emu_counts * c = emu_counts()) {
        c->blocks++;
        emu_count_flush(true);
    }
}

// ---- the runtime API: errors, devices, kernels -------------------------------------------------

static cudaError_t emu_last = cudaSuccess;

static cudaError_t emu_err(cudaError_t e) {
    if (e != cudaSuccess) {
        emu_last = e;
    }
    return e;
}

// the driver's contexts, as far as the backend and the tests use them: the primary context, which
// the runtime starts at its first call that needs one; contexts made by cuCtxCreate (as a
// GstCudaContext makes its own), destroyed by cuCtxDestroy (kept, dead, so that no later context
// reuses the address); the calling thread's stack. A kernel's shared-memory opt-in is an attribute
// of the context current at cudaFuncSetAttribute, as on a GPU: a launch in another context is
// held to 48 KB until it is set there too.
struct emu_context {
    bool                        live = true;
    std::map<const void *, int> attr;   // kernel -> its dynamic shared memory limit
};
static emu_context                 emu_primary_ctx;
static bool                        emu_primary_started = false;
static std::vector<emu_context *>  emu_ctx_stack;

static emu_context * emu_ctx_top() {
    return !emu_ctx_stack.empty() ? emu_ctx_stack.back() : emu_primary_started ? &emu_primary_ctx : nullptr;
}
// the context a runtime call runs in (the primary one starts when none is current)
static emu_context * emu_ctx_runtime() {
    emu_primary_started = emu_primary_started || emu_ctx_stack.empty();
    return emu_ctx_top();
}
static int emu_ctx_get(void ** c) { *c = emu_ctx_top(); return 0; }
// pushing a destroyed context is undefined in the driver (an H100's, 580.159.04, freed its context
// a second time at the pop: ASan), so it stops the run here: a backend outlived its context
static int emu_ctx_push(void * c) {
    if (!c) {
        return 201;   // CUDA_ERROR_INVALID_CONTEXT
    }
    if (!((emu_context *) c)->live) {
        vae_emu_fail(__FILE__, __LINE__, "cuCtxPushCurrent of a destroyed context (undefined in the driver: the "
                     "owner of a context must keep it until the backend made in it is freed)");
    }
    emu_ctx_stack.push_back((emu_context *) c);
    return 0;
}
static int emu_ctx_pop(void ** c) {
    if (emu_ctx_stack.empty()) {
        return 201;
    }
    if (c) {
        *c = emu_ctx_stack.back();
    }
    emu_ctx_stack.pop_back();
    return 0;
}
static int emu_ctx_create(void ** c, unsigned, int device) {
    if (device != 0) {
        return 101;   // CUDA_ERROR_INVALID_DEVICE
    }
    *c = new emu_context;
    emu_ctx_stack.push_back((emu_context *) *c);
    return 0;
}
// cuCtxCreate's later signatures (CUDA 13.0's cudaTypedefs.h: PFN_cuCtxCreate_v11040 takes an
// exec-affinity array and its length before the flags, PFN_cuCtxCreate_v12050 a CUctxCreateParams);
// without parameters they are the first one
static int emu_ctx_create_v11040(void ** c, const void * params, int n_params, unsigned flags, int device) {
    return params || n_params ? 1 /* CUDA_ERROR_INVALID_VALUE */ : emu_ctx_create(c, flags, device);
}
static int emu_ctx_create_v12050(void ** c, const void * params, unsigned flags, int device) {
    return params ? 1 : emu_ctx_create(c, flags, device);
}
static int emu_ctx_destroy(void * c) {
    emu_context * x = (emu_context *) c;
    if (!x || !x->live || x == &emu_primary_ctx) {
        return 201;
    }
    x->live = false;
    if (!emu_ctx_stack.empty() && emu_ctx_stack.back() == x) {
        emu_ctx_stack.pop_back();
    }
    return 0;
}


extern "C" cudaError_t vae_emu_func_set_attribute(const void * fn, enum cudaFuncAttribute a, int v) {
    if (a != cudaFuncAttributeMaxDynamicSharedMemorySize || v < 0 || (size_t) v > emu_smem_optin()) {
        return emu_err(cudaErrorInvalidValue);
    }
    emu_ctx_runtime()->attr[fn] = v;
    return cudaSuccess;
}

static void emu_run_launch(vae_emu_cfg cfg, const std::function<void()> & body) {
    const char * how = getenv("VAE_GPU_EMU_ORDER");
    how              = how ? how : "alternate";
    const char * seed = strchr(how, ':');
    E.rng.seed(seed ? (unsigned) strtoul(seed + 1, nullptr, 10) : 1u);
    // VAE_GPU_EMU_STRIDE_BLOCKS=n: a launch sized by vae_gpu_blocks runs at most n blocks in x, so that
    // every block goes round its grid-stride loop (a barrier missing at the end of the loop matters
    // only then, and the test shapes are far from the cap that makes the loops turn on a GPU);
    // 2 by default with the race checker on, else 0: the grid asked for
    const char *   stride = getenv("VAE_GPU_EMU_STRIDE_BLOCKS");
    const unsigned cap    = stride ? (unsigned) strtoul(stride, nullptr, 10) : emu_race_on ? 2 : 0;
    if (cfg.strided && cap && cfg.grid.x > cap) {
        cfg.grid.x = cap;
    }
    E.cfg          = &cfg;
    E.body         = (std::function<void()> *) &body;
    E.nthreads     = (int) (cfg.block.x * cfg.block.y * cfg.block.z);
    E.static_bytes = 0;
    if (E.fibers.size() < (size_t) E.nthreads) {
        E.fibers.resize((size_t) E.nthreads);   // (before any fiber runs: stacks keep their place)
    }
    const size_t warps = (size_t) (E.nthreads + VAE_EMU_WARP - 1) / VAE_EMU_WARP;
    E.warp_live.assign(warps, 0);
    E.warp_wait.assign(warps, 0);
    E.warp_stamp.assign(warps, 0);
    E.exchange.assign(warps * 2 * VAE_EMU_WARP * 64, 0);
    E.group_wait.assign((size_t) (E.nthreads + 127) / 128, 0);
    E.group_exchange.assign((size_t) (E.nthreads + 127) / 128 * 2 * 128 * 64, 0);
    E.st16.assign(warps, {});
    E.accesses.assign(warps, {});
    if (vae_emu_counting) {
        vae_emu_counts c = {};
        snprintf(c.name, sizeof(c.name), "%s", cfg.name);
        c.grid[0] = cfg.grid.x, c.grid[1] = cfg.grid.y, c.grid[2] = cfg.grid.z;
        c.block[0] = cfg.block.x, c.block[1] = cfg.block.y, c.block[2] = cfg.block.z;
        c.smem     = cfg.smem;
        E.counts.push_back(c);
    }
    if (cfg.smem && !emu_smem_make(&E.dyn, 0, cfg.smem, EMU_WINDOW_STEP, "dynamic")) {
        vae_emu_fail(cfg.file, cfg.line, "out of host memory for shared memory");
    }
    const dim3                 g = cfg.grid;
    const size_t               nb = (size_t) g.x * g.y * g.z;
    std::vector<int>           border(nb);
    emu_order(border, how, E.launches++);
    if (vae_emu_counting && E.sample && E.sample < nb) {   // blocks i (nb - 1) / (sample - 1), in that order
        std::vector<int> some;
        for (size_t i = 0; i < E.sample; i++) {
            some.push_back(E.sample == 1 ? 0 : (int) (i * (nb - 1) / (E.sample - 1)));
        }
        border = some;
    }
    for (int i : border) {
        emu_run_block((unsigned) i % g.x, (unsigned) i / g.x % g.y, (unsigned) i / (g.x * g.y), how);
    }
    emu_smem_free(&E.dyn);
    for (auto & kv : E.statics) {
        emu_smem_free(&kv.second);
    }
    E.statics.clear();
    E.cfg = nullptr;
}

// ---- streams, capture, graphs, events ------------------------------------------------------------

struct vae_emu_graph {
    std::vector<std::function<void()>> ops;
};

struct vae_emu_stream {
    vae_emu_graph * capture;   // the graph being recorded, or NULL
};

struct vae_emu_event {
    double t;
};

static double emu_now_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static cudaError_t emu_submit(cudaStream_t s, std::function<void()> op) {
    if (s && s->capture) {
        s->capture->ops.push_back(std::move(op));
    } else {
        op();
    }
    return cudaSuccess;
}

void vae_emu_launch(const vae_emu_cfg & cfg, const void * fn, std::function<void()> body) {
    emu_init_once();
    const dim3   b = cfg.block, g = cfg.grid;
    const size_t threads = (size_t) b.x * b.y * b.z;
    emu_context * ctx = emu_ctx_runtime();
    auto         it    = ctx->attr.find(fn);
    const size_t limit = it != ctx->attr.end() ? (size_t) it->second : EMU_SMEM_DEFAULT;
    if (threads == 0 || threads > EMU_MAX_THREADS || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 ||
        g.y > 65535 || g.z > 65535) {
        emu_err(cudaErrorInvalidConfiguration);
        return;
    }
    if (cfg.smem > limit) {   // past 48 KB only with the attribute, as the driver refuses it
        emu_err(cudaErrorInvalidValue);
        return;
    }
    vae_emu_cfg c = cfg;
    emu_submit(cfg.stream, [c, body]() { emu_run_launch(c, body); });
}

extern "C" {

const char * cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess:                   return "no error";
        case cudaErrorInvalidValue:         return "invalid argument";
        case cudaErrorMemoryAllocation:     return "out of memory";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInvalidDevice:        return "invalid device ordinal";
        case cudaErrorContextIsDestroyed:   return "context is destroyed";
        case cudaErrorDeviceUninitialized:  return "invalid device context";
        default:                            return "emulated CUDA error";
    }
}

// the runtime's names (constant strings, as CUDA's are: two in one printf stay apart)
const char * cudaGetErrorName(cudaError_t e) {
    switch (e) {
        case cudaSuccess:                       return "cudaSuccess";
        case cudaErrorInvalidValue:             return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation:         return "cudaErrorMemoryAllocation";
        case cudaErrorInvalidConfiguration:     return "cudaErrorInvalidConfiguration";
        case cudaErrorInsufficientDriver:       return "cudaErrorInsufficientDriver";
        case cudaErrorNoDevice:                 return "cudaErrorNoDevice";
        case cudaErrorInvalidDevice:            return "cudaErrorInvalidDevice";
        case cudaErrorDeviceUninitialized:      return "cudaErrorDeviceUninitialized";
        case cudaErrorInvalidResourceHandle:    return "cudaErrorInvalidResourceHandle";
        case cudaErrorNotReady:                 return "cudaErrorNotReady";
        case cudaErrorContextIsDestroyed:       return "cudaErrorContextIsDestroyed";
        case cudaErrorLaunchFailure:            return "cudaErrorLaunchFailure";
        case cudaErrorNotSupported:             return "cudaErrorNotSupported";
        case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
        default:                                return "cudaErrorUnknown";
    }
}

cudaError_t cudaGetLastError(void) {
    const cudaError_t e = emu_last;
    emu_last            = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return emu_last; }
cudaError_t cudaGetDeviceCount(int * n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int * d) { *d = 0; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { return emu_err(d == 0 ? cudaSuccess : cudaErrorInvalidDevice); }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp * p, int d) {
    if (d != 0) {
        return emu_err(cudaErrorInvalidDevice);
    }
    memset(p, 0, sizeof(*p));
#if VAE_EMU_AMD
    snprintf(p->name, sizeof(p->name), "%s (%s, emulated)", EMU_AMD_PRODUCT, EMU_AMD_ARCH);
    snprintf(p->gcnArchName, sizeof(p->gcnArchName), "%s%s", EMU_AMD_ARCH, EMU_AMD_FEATURES);
    p->major = VAE_GPU_EMU_GFX >= 1000 ? VAE_GPU_EMU_GFX / 100 : 9;
    p->minor = VAE_GPU_EMU_GFX >= 1000 ? VAE_GPU_EMU_GFX / 10 % 10 : VAE_GPU_EMU_GFX == 942 ? 4 : 0;
#else
    snprintf(p->name, sizeof(p->name), "gpu-emu sm_%d", EMU_SM);
    p->major = EMU_SM / 10;
    p->minor = EMU_SM % 10;
#endif
    p->totalGlobalMem         = EMU_DEVICE_BYTES;
    p->sharedMemPerBlock      = EMU_SMEM_DEFAULT;
    p->sharedMemPerBlockOptin = emu_smem_optin();
    p->multiProcessorCount    = 4;
    p->warpSize               = VAE_EMU_WARP;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int * v, enum cudaDeviceAttr a, int d) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
        return cudaErrorInvalidDevice;
    }
    switch (a) {
        case cudaDevAttrMaxSharedMemoryPerBlock:      *v = (int) p.sharedMemPerBlock; break;
        case cudaDevAttrMultiProcessorCount:          *v = p.multiProcessorCount; break;
        case cudaDevAttrComputeCapabilityMajor:       *v = p.major; break;
        case cudaDevAttrComputeCapabilityMinor:       *v = p.minor; break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int) p.sharedMemPerBlockOptin; break;
        case cudaDevAttrWarpSize:                     *v = p.warpSize; break;
        default:                                      return emu_err(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

// the signature a symbol had at CUDA version `version` (the newest ABI not newer than it), as the
// driver answers; the others have had one signature since before 12.0
cudaError_t cudaGetDriverEntryPointByVersion(const char * symbol, void ** fn, unsigned version, unsigned long long,
                                             enum cudaDriverEntryPointQueryResult * q) {
    void * create = version >= 12050   ? (void *) emu_ctx_create_v12050
                    : version >= 11040 ? (void *) emu_ctx_create_v11040
                                       : (void *) emu_ctx_create;
    *fn = strcmp(symbol, "cuCtxGetCurrent") == 0    ? (void *) emu_ctx_get
          : strcmp(symbol, "cuCtxPushCurrent") == 0 ? (void *) emu_ctx_push
          : strcmp(symbol, "cuCtxPopCurrent") == 0  ? (void *) emu_ctx_pop
          : strcmp(symbol, "cuCtxCreate") == 0      ? create
          : strcmp(symbol, "cuCtxDestroy") == 0     ? (void *) emu_ctx_destroy
#if !defined(VAE_GPU_EMU_GFX)
          : strcmp(symbol, "cuTensorMapEncodeTiled") == 0 ? (void *) vae_emu_tensor_map_encode_tiled
          : strcmp(symbol, "cuTensorMapEncodeIm2col") == 0 ? (void *) vae_emu_tensor_map_encode_im2col
#endif
                                                    : nullptr;
    // VAE_GPU_EMU_NO_ENTRY=symbol: a driver without it (the tensor maps: older than CUDA 12)
    const char * missing = getenv("VAE_GPU_EMU_NO_ENTRY");
    if (missing && strcmp(missing, symbol) == 0) {
        *fn = nullptr;
    }
    *q  = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void ** p, size_t n) {
    emu_init_once();
    *p = nullptr;
    emu_ctx_runtime(); // (the primary context starts at the first call that needs one)
    if (n == 0) {
        return cudaSuccess;
    }
    emu_alloc a;
    a.bytes = n;
    char * b = n <= EMU_DEVICE_BYTES - emu_live_bytes ? emu_map(n, 256, &a.map, &a.map_bytes) : nullptr;
    if (!b) {
        return emu_err(cudaErrorMemoryAllocation);
    }
    emu_allocs[b] = a;
    emu_live_bytes += n;
    *p = b;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t * free_bytes, size_t * total_bytes) {
    emu_init_once();
    emu_ctx_runtime();
    *free_bytes  = EMU_DEVICE_BYTES - emu_live_bytes;
    *total_bytes = EMU_DEVICE_BYTES;
    return cudaSuccess;
}

cudaError_t cudaFree(void * p) {
    emu_ctx_runtime(); // (cudaFree(NULL) is how a program starts the primary context)
    if (!p) {
        return cudaSuccess;
    }
    auto it = emu_allocs.find((char *) p);
    if (it == emu_allocs.end()) {
        return emu_err(cudaErrorInvalidValue);
    }
    munmap(it->second.map, it->second.map_bytes);
    emu_live_bytes -= it->second.bytes;
    emu_allocs.erase(it);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void ** p, size_t n, unsigned) {
    *p = malloc(n ? n : 1);
    return *p ? cudaSuccess : emu_err(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void * p) {
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void * dst, const void * src, size_t n, enum cudaMemcpyKind k, cudaStream_t s) {
    return emu_submit(s, [=]() {
        if (vae_emu_counting && k == cudaMemcpyDeviceToDevice) {
            vae_emu_counts c = {};
            snprintf(c.name, sizeof(c.name), "cudaMemcpy device to device");
            c.d2d_bytes = n;
            E.counts.push_back(c);
        }
        memmove(dst, src, n);
    });
}

cudaError_t cudaMemcpy(void * dst, const void * src, size_t n, enum cudaMemcpyKind k) {
    return cudaMemcpyAsync(dst, src, n, k, nullptr);
}

cudaError_t cudaMemcpy2DAsync(void * dst, size_t dp, const void * src, size_t sp, size_t w, size_t h,
                              enum cudaMemcpyKind, cudaStream_t s) {
    if (w > dp || w > sp) {
        return emu_err(cudaErrorInvalidValue);
    }
    return emu_submit(s, [=]() {
        for (size_t r = 0; r < h; r++) {
            memmove((char *) dst + r * dp, (const char *) src + r * sp, w);
        }
    });
}

cudaError_t cudaMemsetAsync(void * p, int v, size_t n, cudaStream_t s) {
    return emu_submit(s, [=]() { memset(p, v, n); });
}

cudaError_t cudaMemset(void * p, int v, size_t n) { return cudaMemsetAsync(p, v, n, nullptr); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t * s, unsigned) {
    *s = new vae_emu_stream{ nullptr };
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    return s && s->capture ? emu_err(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}

// VAE_GPU_EMU_NO_CAPTURE=1: every capture is refused, as a driver may refuse one (tests of the
// backend's fallback to direct launches)
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode) {
    if (!s || s->capture) {
        return emu_err(cudaErrorInvalidValue);
    }
    const char * refuse = getenv("VAE_GPU_EMU_NO_CAPTURE");
    if (refuse && refuse[0] == '1') {
        return emu_err(cudaErrorStreamCaptureUnsupported);
    }
    s->capture = new vae_emu_graph;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t * g) {
    if (!s || !s->capture) {
        return emu_err(cudaErrorInvalidValue);
    }
    *g         = s->capture;
    s->capture = nullptr;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t * e, cudaGraph_t g, unsigned long long) {
    *e = new vae_emu_graph(*g);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
    return emu_submit(s, [e]() {
        for (auto & op : e->ops) {
            op();
        }
    });
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete g;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t * e) {
    *e = new vae_emu_event{ 0.0 };
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}

// (while counting, an event is a record of its own among the launches: emu-counts tells a graph's
// nodes apart by the events the backend puts between them when profiling)
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    return emu_submit(s, [e]() {
        if (vae_emu_counting) {
            vae_emu_counts c = {};
            snprintf(c.name, sizeof(c.name), "cudaEventRecord");
            E.counts.push_back(c);
        }
        e->t = emu_now_ms();
    });
}

cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

cudaError_t cudaEventElapsedTime(float * ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = (float) (b->t - a->t);
    return cudaSuccess;
}

}   // extern "C"
