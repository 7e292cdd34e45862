// The HIP runtime loaded at run time, as GStreamer's hip plugin loads it (gsthip-loader): the
// plugin must load, and the CPU and CUDA backends work, on machines without ROCm, so nothing
// links libamdhip64. This file defines every hip* function the HIP build calls (the backend and
// the kernels' launchers), each forwarding to the one of the library that vae_hip_runtime_load
// opened: libamdhip64.so, .so.6 or .so.5 from the loader's search path, or the file that the
// environment variable VAE_HIP_LIBRARY names (one ROCm install among several). None may be exported from the plugin, where it would
// take the place of the real runtime's for other libraries: HIP's header declares them with
// default visibility, so the plugin is linked with --exclude-libs (gst/meson.build), which makes
// everything from the backend's static library local; the calls clang emits that no header
// declares are hidden here as well.
//
// Kernel launches: clang's HIP host code registers its fat binary and each kernel's host stub
// from a module constructor (__hipRegisterFatBinary, __hipRegisterFunction), long before the
// runtime is loaded, and launches through __hipPushCallConfiguration, __hipPopCallConfiguration
// and hipLaunchKernel. The registrations are recorded here and replayed into the runtime when
// it is loaded, so that every launch (and stream capture into graphs) then goes through the
// runtime's own path. (Unregistration at exit is left to the runtime's own teardown: the runtime
// may already be finalized when this module's destructor runs, and a plugin is never unloaded.)

#include "vae-gpu-hip.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define VAE_HIP_API __attribute__((visibility("hidden")))

// ---- registrations ------------------------------------------------------------------------------

// the registration calls clang emits (not in HIP's public headers)
typedef void ** (*vae_hip_register_fatbin_fn)(const void * wrapper);
typedef void (*vae_hip_register_function_fn)(void ** module, const void * stub, char * device_fn, const char * name,
                                             unsigned thread_limit, void * tid, void * bid, void * block, void * grid,
                                             int * wave_size);
typedef void (*vae_hip_register_var_fn)(void ** module, void * var, char * host_name, char * device_name, int ext,
                                        size_t size, int constant, int global);

// one call made before the runtime was loaded, in order; a fat binary's handle (what clang keeps
// and passes to the other calls) is its record; its runtime handle is filled by the replay
struct vae_hip_reg {
    enum { VAE_HIP_REG_FATBIN, VAE_HIP_REG_FUNCTION, VAE_HIP_REG_VAR } kind;
    void **               module;        // fat binary: the runtime's handle; others: their fat binary's record
    const void *          ptr;           // the wrapper, the host stub or the host variable
    char *                device_name;
    const char *          name;
    unsigned              thread_limit;
    void *                dims[4];       // function: tid, bid, block, grid
    int *                 wave_size;
    int                   ext, constant, global;
    size_t                size;
    struct vae_hip_reg *  next;
};

static struct vae_hip_reg *  vae_hip_regs;
static struct vae_hip_reg ** vae_hip_regs_tail = &vae_hip_regs;

static struct vae_hip_reg * vae_hip_record(int kind, const void * ptr) {
    struct vae_hip_reg * r = calloc(1, sizeof(*r));
    if (!r) {
        abort(); // (a module constructor has no way to report it)
    }
    r->kind            = kind;
    r->ptr             = ptr;
    *vae_hip_regs_tail = r;
    vae_hip_regs_tail  = &r->next;
    return r;
}

VAE_HIP_API void ** __hipRegisterFatBinary(const void * wrapper) {
    return (void **) vae_hip_record(VAE_HIP_REG_FATBIN, wrapper);
}

VAE_HIP_API void __hipRegisterFunction(void ** module, const void * stub, char * device_fn, const char * name,
                                       unsigned thread_limit, void * tid, void * bid, void * block, void * grid,
                                       int * wave_size) {
    struct vae_hip_reg * r = vae_hip_record(VAE_HIP_REG_FUNCTION, stub);
    r->module              = module;
    r->device_name         = device_fn;
    r->name                = name;
    r->thread_limit        = thread_limit;
    r->dims[0] = tid, r->dims[1] = bid, r->dims[2] = block, r->dims[3] = grid;
    r->wave_size = wave_size;
}

VAE_HIP_API void __hipRegisterVar(void ** module, void * var, char * host_name, char * device_name, int ext,
                                  size_t size, int constant, int global) {
    struct vae_hip_reg * r = vae_hip_record(VAE_HIP_REG_VAR, var);
    r->module              = module;
    r->device_name         = device_name;
    r->name                = host_name;
    r->ext = ext, r->size = size, r->constant = constant, r->global = global;
}

VAE_HIP_API void __hipUnregisterFatBinary(void ** module) {
    (void) module;
}

// ---- the runtime's functions ----------------------------------------------------------------------

// every function the HIP build calls: return type, name, parameters, arguments
#define VAE_HIP_FUNCTIONS(X)                                                                                  \
    X(hipError_t, hipGetDeviceCount, (int * n), (n))                                                          \
    X(hipError_t, hipGetDevice, (int * d), (d))                                                               \
    X(hipError_t, hipSetDevice, (int d), (d))                                                                 \
    X(hipError_t, hipDeviceGetAttribute, (int * v, hipDeviceAttribute_t a, int d), (v, a, d))                 \
    X(hipError_t, hipDeviceSynchronize, (void), ())                                                           \
    X(hipError_t, hipGetLastError, (void), ())                                                                \
    X(hipError_t, hipMalloc, (void ** p, size_t n), (p, n))                                                   \
    X(hipError_t, hipFree, (void * p), (p))                                                                   \
    X(hipError_t, hipHostMalloc, (void ** p, size_t n, unsigned flags), (p, n, flags))                        \
    X(hipError_t, hipHostFree, (void * p), (p))                                                               \
    X(hipError_t, hipMemcpy, (void * d, const void * s, size_t n, hipMemcpyKind k), (d, s, n, k))            \
    X(hipError_t, hipMemcpyAsync, (void * d, const void * s, size_t n, hipMemcpyKind k, hipStream_t st),      \
      (d, s, n, k, st))                                                                                       \
    X(hipError_t, hipMemcpy2DAsync,                                                                           \
      (void * d, size_t dp, const void * s, size_t sp, size_t w, size_t h, hipMemcpyKind k, hipStream_t st), \
      (d, dp, s, sp, w, h, k, st))                                                                            \
    X(hipError_t, hipMemset, (void * d, int v, size_t n), (d, v, n))                                          \
    X(hipError_t, hipMemsetAsync, (void * d, int v, size_t n, hipStream_t st), (d, v, n, st))                 \
    X(hipError_t, hipStreamCreateWithFlags, (hipStream_t * s, unsigned flags), (s, flags))                    \
    X(hipError_t, hipStreamDestroy, (hipStream_t s), (s))                                                     \
    X(hipError_t, hipStreamSynchronize, (hipStream_t s), (s))                                                 \
    X(hipError_t, hipStreamBeginCapture, (hipStream_t s, hipStreamCaptureMode m), (s, m))                     \
    X(hipError_t, hipStreamEndCapture, (hipStream_t s, hipGraph_t * g), (s, g))                               \
    X(hipError_t, hipGraphInstantiateWithFlags, (hipGraphExec_t * e, hipGraph_t g, unsigned long long f),     \
      (e, g, f))                                                                                              \
    X(hipError_t, hipGraphLaunch, (hipGraphExec_t e, hipStream_t s), (e, s))                                  \
    X(hipError_t, hipGraphDestroy, (hipGraph_t g), (g))                                                       \
    X(hipError_t, hipGraphExecDestroy, (hipGraphExec_t e), (e))                                               \
    X(hipError_t, hipEventCreate, (hipEvent_t * e), (e))                                                      \
    X(hipError_t, hipEventRecord, (hipEvent_t e, hipStream_t s), (e, s))                                      \
    X(hipError_t, hipEventSynchronize, (hipEvent_t e), (e))                                                   \
    X(hipError_t, hipEventElapsedTime, (float * ms, hipEvent_t a, hipEvent_t b), (ms, a, b))                  \
    X(hipError_t, hipEventDestroy, (hipEvent_t e), (e))                                                       \
    X(hipError_t, hipGetDeviceProperties, (hipDeviceProp_t * p, int d), (p, d))                               \
    X(hipError_t, __hipPushCallConfiguration, (dim3 g, dim3 b, size_t m, hipStream_t s), (g, b, m, s))        \
    X(hipError_t, __hipPopCallConfiguration, (dim3 * g, dim3 * b, size_t * m, hipStream_t * s), (g, b, m, s)) \
    X(hipError_t, hipLaunchKernel, (const void * f, dim3 g, dim3 b, void ** a, size_t m, hipStream_t s),      \
      (f, g, b, a, m, s))

#define VAE_HIP_STR_(x) #x
#define VAE_HIP_STR(x)  VAE_HIP_STR_(x)   // (after expansion: ROCm 6 renames some by macros)

static struct {
#define X(ret, name, params, args) ret(*name) params;
    VAE_HIP_FUNCTIONS(X)
#undef X
    const char * (*hipGetErrorString)(hipError_t e);
    const char * (*hipGetErrorName)(hipError_t e);
    vae_hip_register_fatbin_fn   register_fatbin;
    vae_hip_register_function_fn register_function;
    vae_hip_register_var_fn      register_var;
} vae_hip;

static pthread_once_t vae_hip_once = PTHREAD_ONCE_INIT;
static bool           vae_hip_ok;
static char           vae_hip_error[400];

// a symbol of lib: names[0], else the names after it (NULL-terminated); NULL with the reason
static void * vae_hip_sym(void * lib, const char * const * names, const char * soname) {
    for (int i = 0; names[i]; i++) {
        void * fn = dlsym(lib, names[i]);
        if (fn) {
            return fn;
        }
    }
    snprintf(vae_hip_error, sizeof(vae_hip_error),
             "%s has no %s (not a HIP runtime, or one older than this build's headers, HIP %d.%d)", soname, names[0],
             HIP_VERSION_MAJOR, HIP_VERSION_MINOR);
    return NULL;
}

static void vae_hip_replay(void) {
    for (struct vae_hip_reg * r = vae_hip_regs; r; r = r->next) {
        struct vae_hip_reg * fatbin = (struct vae_hip_reg *) r->module;
        if (r->kind == VAE_HIP_REG_FATBIN) {
            r->module = vae_hip.register_fatbin(r->ptr);
        } else if (r->kind == VAE_HIP_REG_FUNCTION) {
            vae_hip.register_function(fatbin->module, r->ptr, r->device_name, r->name, r->thread_limit, r->dims[0],
                                      r->dims[1], r->dims[2], r->dims[3], r->wave_size);
        } else {
            vae_hip.register_var(fatbin->module, (void *) r->ptr, (char *) r->name, r->device_name, r->ext, r->size,
                                 r->constant, r->global);
        }
    }
}

static void vae_hip_open(void) {
    const char * const env       = getenv("VAE_HIP_LIBRARY");
    const char *       sonames[] = { "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5" };
    const size_t       n         = env && env[0] ? 1 : sizeof(sonames) / sizeof(sonames[0]);
    void *             lib       = NULL;
    const char *       soname    = NULL;
    if (n == 1) {
        sonames[0] = env;
    }
    for (size_t i = 0; i < n && !lib; i++) {
        lib    = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        soname = sonames[i];
    }
    if (!lib) {
        snprintf(vae_hip_error, sizeof(vae_hip_error), "libamdhip64.so could not be loaded: %s", dlerror());
        return;
    }
    bool ok = true;
#define X(ret, name, params, args)                                                                             \
    if (ok) {                                                                                                  \
        /* HIP 5 headers, a ROCm 6 runtime: its hipGetDeviceProperties takes another struct, the 5.x */       \
        /* one is its hipGetDevicePropertiesR0000 */                                                           \
        const char * names[] = { strcmp(#name, "hipGetDeviceProperties") == 0 && HIP_VERSION_MAJOR < 6         \
                                     ? "hipGetDevicePropertiesR0000" : VAE_HIP_STR(name),                      \
                                 VAE_HIP_STR(name), NULL };                                                    \
        ok = (*(void **) &vae_hip.name = vae_hip_sym(lib, names, soname)) != NULL;                             \
    }
    VAE_HIP_FUNCTIONS(X)
#undef X
    static const struct {
        const char * name;
        void **      slot;
    } more[] = {
        { "hipGetErrorString", (void **) &vae_hip.hipGetErrorString },
        { "hipGetErrorName", (void **) &vae_hip.hipGetErrorName },
        { "__hipRegisterFatBinary", (void **) &vae_hip.register_fatbin },
        { "__hipRegisterFunction", (void **) &vae_hip.register_function },
        { "__hipRegisterVar", (void **) &vae_hip.register_var },
    };
    for (size_t i = 0; ok && i < sizeof(more) / sizeof(more[0]); i++) {
        const char * names[] = { more[i].name, NULL };
        ok                   = (*more[i].slot = vae_hip_sym(lib, names, soname)) != NULL;
    }
    if (!ok) {
        dlclose(lib);
        return;
    }
    vae_hip_replay();
    vae_hip_ok = true;
}

bool vae_hip_runtime_load(char * err, size_t err_size) {
    pthread_once(&vae_hip_once, vae_hip_open);
    if (!vae_hip_ok) {
        snprintf(err, err_size, "%s", vae_hip_error);
    }
    return vae_hip_ok;
}

// each function: the runtime's, or before a successful load an error (the backend loads first,
// so only a caller that skipped vae_hip_runtime_load sees it)
#define X(ret, name, params, args)                                            \
    ret name params {                                                         \
        return vae_hip_ok ? vae_hip.name args : hipErrorNotInitialized;       \
    }
VAE_HIP_FUNCTIONS(X)
#undef X

const char * hipGetErrorString(hipError_t e) {
    return vae_hip_ok ? vae_hip.hipGetErrorString(e) : "the HIP runtime is not loaded";
}

const char * hipGetErrorName(hipError_t e) {
    return vae_hip_ok ? vae_hip.hipGetErrorName(e) : "hipErrorNotInitialized";
}
