/* cuda.h — the CUDA runtime side of lathe: the driver API (libcuda.so.1) loaded with dlopen and our
 * own declarations of the functions used, so lathe builds with no CUDA header or library and runs on
 * machines without CUDA. NVRTC (nvrtc.h) compiles the generated CUDA; this layer caches its output
 * and runs it.
 *
 * An lt_cuda is one opened device: the driver library, the device's primary context (shared with
 * cuBLAS or PyTorch in the same process), and one non-blocking stream on which everything is
 * ordered: copies, launches, events, graph capture and replay.
 *   - lt_cuda_open: without libcuda.so.1 it returns LT_ERR_UNSUPPORTED with the one line
 *     "CUDA backend unavailable: libcuda.so.1 not found"; without a device, "CUDA backend
 *     unavailable: no CUDA device". Nothing is allocated or kept on failure.
 *   - Device pointers are `void *` (a CUdeviceptr); they are never dereferenced on the host.
 *   - Copies from or to host memory return when the copy is done (the host buffer may be reused);
 *     device-to-device copies, memsets and launches are asynchronous on the stream; lt_cuda_sync
 *     waits for all of them.
 *   - Modules: CUDA source -> NVRTC -> cubin for the device's own architecture (sm_90a on Hopper,
 *     so Hopper-only instructions are usable; sm_XY elsewhere) -> cuModuleLoadData. Cubins are cached
 *     on disk (options.cache_dir) under the hex SHA-256 of (format version, NVRTC version, target,
 *     options, source): <key>.cubin next to <key>.cu, both written atomically (temporary + rename).
 *     lt_cuda_build does the NVRTC + cache part alone, with no GPU (export, CI).
 *   - A module compiled from emitted source (lt_emit_module with lt_lang_cuda) knows each kernel's
 *     launch shape and parameter count: the emitter writes "launch: grid (x, y, z), block (x, y, z)"
 *     (and ", dynamic shared N" when the kernel needs N bytes of dynamic shared memory: the limit
 *     is raised once, when the kernel is looked up) in the comment before each `extern "C"
 *     __global__ void name(...)` after the end-of-prelude marker; lt_cuda_launch_args launches with
 *     that shape and shared memory on an array of buffer pointers (the kernel ABI of
 *     docs/COMPILER.md). Prelude kernels (cuda_gemm.h, cuda_norm.h) are launched with an explicit
 *     shape through lt_cuda_launch.
 *   - Graphs: lt_cuda_graph_begin .. lt_cuda_graph_end captures what is enqueued on the stream in
 *     between (launches, device copies; no host copies, no sync) into an instantiated CUDA graph;
 *     lt_cuda_graph_launch replays it.
 * Errors name the driver call, the CUDA error name and text, and the thing at fault (kernel, bytes);
 * an out-of-memory result is LT_ERR_NOMEM. Nothing here prints or reads the environment.
 * An lt_cuda is used by one thread at a time (each call makes its context current on the calling
 * thread). Entry points: lt_cuda_open/close/info, alloc/free/copy/memset, sync, build,
 * module_compile/load/free/func, launch/launch_args, func_attrs/func_set_shared, events, graphs,
 * lt_cuda_ceilings (cuda_ceil.c), and the backend vtable lt_backend_cuda (cuda_backend.c).
 */
#ifndef LT_BACKEND_CUDA_H
#define LT_BACKEND_CUDA_H

#include "../../base/base.h"
#include "../backend.h"
#include "nvrtc.h"

typedef struct lt_cuda lt_cuda;
typedef struct lt_cuda_module lt_cuda_module;
typedef struct lt_cuda_func lt_cuda_func;
typedef struct lt_cuda_event lt_cuda_event;
typedef struct lt_cuda_graph lt_cuda_graph;

typedef struct lt_cuda_options {
    int device;            /* device ordinal */
    const char *libcuda;   /* driver library to load (NULL: "libcuda.so.1" through the loader) */
    const char *cache_dir; /* cubin cache directory, created 0700 if absent (NULL: no cache) */
    const char *arch;      /* NVRTC target override, e.g. "sm_90" (NULL: the device's own) */
    const char *nvrtc;     /* NVRTC library tried first (NULL: only the default names) */
} lt_cuda_options;

typedef struct lt_cuda_info {
    char name[128];          /* "NVIDIA H100 80GB HBM3" */
    int ordinal;
    int cc_major, cc_minor;  /* compute capability */
    char arch[16];           /* NVRTC target used: "sm_90a" */
    int sm_count;
    int driver_version;      /* 12080 = CUDA 12.8 */
    int64_t total_mem;       /* bytes */
    int max_threads_per_block;
    int max_smem_per_block;  /* opt-in maximum of dynamic shared memory per block, bytes */
    int l2_bytes;
    int clock_khz;           /* SM clock (0 when the driver does not say) */
    int mem_clock_khz, bus_width_bits;
} lt_cuda_info;

lt_status lt_cuda_open(lt_ctx *ctx, const lt_cuda_options *opt, lt_cuda **out);
void lt_cuda_close(lt_cuda *cu); /* NULL is fine; waits for queued work first */
const lt_cuda_info *lt_cuda_get_info(const lt_cuda *cu);
/* The CUstream everything is queued on, for interop (cuBLAS, PyTorch) in the same primary context. */
void *lt_cuda_native_stream(const lt_cuda *cu);
/* The NVRTC handle (opened on first use); LT_ERR_UNSUPPORTED naming what was tried if absent. */
lt_status lt_cuda_nvrtc(lt_cuda *cu, lt_ctx *ctx, lt_nvrtc **out);

/* ---- memory (device pointers as void *) ---- */
lt_status lt_cuda_alloc(lt_cuda *cu, lt_ctx *ctx, size_t bytes, void **out); /* 256-byte aligned */
void lt_cuda_free(lt_cuda *cu, void *p);                                     /* NULL is fine */
lt_status lt_cuda_copy(lt_cuda *cu, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir);
/* Queued on the stream, returns at once: the host side must stay valid until lt_cuda_sync. */
lt_status lt_cuda_copy_async(lt_cuda *cu, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir);
lt_status lt_cuda_memset(lt_cuda *cu, lt_ctx *ctx, void *p, unsigned char byte, size_t bytes);
lt_status lt_cuda_mem_info(lt_cuda *cu, lt_ctx *ctx, size_t *free_bytes, size_t *total_bytes);
lt_status lt_cuda_sync(lt_cuda *cu, lt_ctx *ctx); /* wait for everything queued on the stream */
/* Runs on the caller's device memory. check_ptr: [p, p + bytes) is device (or managed) memory of
 * this device, in its primary context, inside one allocation, by cuPointerGetAttributes;
 * LT_ERR_USAGE naming `what` otherwise (NULL, host memory, another device or context, too small).
 * Zero bytes: not checked; a driver without cuPointerGetAttributes: not checked.
 * wait_stream: order what is queued next on our stream after the work queued before now on `stream`
 * (a CUstream of the primary context: an event recorded there, waited for on ours; the host does not
 * block), or, stream NULL, wait until all work on the device is done (cuCtxSynchronize), so data
 * written on any stream (the legacy default one included) is complete. */
lt_status lt_cuda_check_ptr(lt_cuda *cu, lt_ctx *ctx, const void *p, size_t bytes, const char *what);
lt_status lt_cuda_wait_stream(lt_cuda *cu, lt_ctx *ctx, void *stream);

/* ---- compiling: NVRTC + cubin cache, no device needed ---- */
/* The NVRTC program name the backend compiles a model's translation unit under (cuda_backend.c). It
 * enters the cubin (internal-linkage symbols are named after it), so a build of the same module
 * elsewhere (an artifact saved with no GPU: src/compile/artifact.c) must use it too. */
#define LT_CUDA_MODULE_PROGRAM "lathe_module.cu"
typedef struct lt_cuda_compile_options {
    const char *name;            /* program name in messages (NULL: "lathe.cu") */
    const char *const *extra;    /* more NVRTC options ("-DNAME=1", "--use_fast_math"); part of the key */
    int n_extra;                 /* at most 24 */
} lt_cuda_compile_options;

typedef struct lt_cuda_image {
    void *data;        /* cubin (or NUL-terminated PTX for a compute_XY target); lt_mem_* heap */
    size_t size;
    bool is_cubin;
    bool cache_hit;    /* read from the cache directory, NVRTC not run */
    char key[65];      /* hex SHA-256 cache key */
    double seconds;    /* wall time of lt_cuda_build */
    char *log;         /* NVRTC's log when it ran and said something (warnings), else NULL */
} lt_cuda_image;

/* Compile `source` for `arch` ("sm_90", "sm_90a", "compute_90") with NVRTC, through the cache in
 * cache_dir (NULL: no cache). nv: an open NVRTC handle. NVRTC errors are LT_ERR_INTERNAL with its
 * log (see nvrtc.h); an unwritable cache is LT_ERR_IO naming the file. */
lt_status lt_cuda_build(lt_ctx *ctx, lt_nvrtc *nv, const char *source, const char *arch, const char *cache_dir,
                        const lt_cuda_compile_options *opt, lt_cuda_image *out);
void lt_cuda_image_free(lt_cuda_image *img); /* NULL or zeroed is fine */

/* ---- modules and kernels ---- */
/* Build (lt_cuda_build for the device's arch and the cache of lt_cuda_open) and load. */
lt_status lt_cuda_module_compile(lt_cuda *cu, lt_ctx *ctx, const char *source, const lt_cuda_compile_options *opt,
                                 lt_cuda_module **out);
/* Load a cubin or PTX image; `source` (may be NULL) supplies the launch shapes of emitted kernels. */
lt_status lt_cuda_module_load(lt_cuda *cu, lt_ctx *ctx, const void *image, const char *source, lt_cuda_module **out);
void lt_cuda_module_free(lt_cuda *cu, lt_cuda_module *m); /* NULL is fine */
/* How the module was built (cache hit, key, seconds); NULL for lt_cuda_module_load. */
const lt_cuda_image *lt_cuda_module_image(const lt_cuda_module *m);
/* The kernel `name`; LT_ERR_INVALID naming it when the module has none (LT_ERR_UNSUPPORTED when its
 * dynamic shared memory is more than the device allows). Lives as long as m. */
lt_status lt_cuda_module_func(lt_cuda *cu, lt_ctx *ctx, lt_cuda_module *m, const char *name, lt_cuda_func **out);

typedef struct lt_cuda_func_attrs {
    int regs;              /* registers per thread */
    int static_smem;       /* bytes of static shared memory */
    int local_bytes;       /* local memory per thread (spills) */
    int max_threads;       /* most threads per block it can launch with */
} lt_cuda_func_attrs;
lt_status lt_cuda_func_get_attrs(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_func *f, lt_cuda_func_attrs *out);
/* Allow up to `bytes` of dynamic shared memory (above the default 48 KiB needs this). */
lt_status lt_cuda_func_set_shared(lt_cuda *cu, lt_ctx *ctx, lt_cuda_func *f, int bytes);
const char *lt_cuda_func_name(const lt_cuda_func *f);
/* Launch shape parsed from the module's source: false when it had none for this kernel. A grid axis
 * that is a run-time scalar gives its multiplier (the launch multiplies it by the scalar's value). */
bool lt_cuda_func_shape(const lt_cuda_func *f, unsigned grid[3], unsigned block[3], int *n_params);

/* Launch on the stream. params: one pointer per kernel parameter, to its value (cuLaunchKernel). */
lt_status lt_cuda_launch(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_func *f, const unsigned grid[3],
                         const unsigned block[3], unsigned shared_bytes, void **params);
/* Launch an emitted kernel on n device buffer pointers with the shape (and dynamic shared memory)
 * from its source. */
lt_status lt_cuda_launch_args(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_func *f, void *const *bufs, int n);

/* ---- events (timing) ---- */
lt_status lt_cuda_event_new(lt_cuda *cu, lt_ctx *ctx, lt_cuda_event **out);
lt_status lt_cuda_event_record(lt_cuda *cu, lt_ctx *ctx, lt_cuda_event *e);
/* Milliseconds between two recorded events (waits for `end`). */
lt_status lt_cuda_event_elapsed(lt_cuda *cu, lt_ctx *ctx, lt_cuda_event *start, lt_cuda_event *end, float *ms);
void lt_cuda_event_free(lt_cuda *cu, lt_cuda_event *e); /* NULL is fine */

/* ---- CUDA graphs ---- */
lt_status lt_cuda_graph_begin(lt_cuda *cu, lt_ctx *ctx);
/* Ends the capture (also after an error inside it, so the stream is usable again) and, when
 * `instantiate`, instantiates the graph (lt_cuda_graph_launch replays it); otherwise the captured
 * graph is a template that lt_cuda_graph_replay loads into a holder shared by several. */
lt_status lt_cuda_graph_end(lt_cuda *cu, lt_ctx *ctx, bool instantiate, lt_cuda_graph **out);
lt_status lt_cuda_graph_launch(lt_cuda *cu, lt_ctx *ctx, lt_cuda_graph *g);
/* Does the driver update instantiated graphs in place (cuGraphExecUpdate)? */
bool lt_cuda_graph_can_update(const lt_cuda *cu);
/* Replays template g through *holder's instantiated graph (created on first use, freed with
 * lt_cuda_graph_free). With `load` (the holder last ran another template), it is first updated in
 * place to g's arguments and grids, or instantiated again from g when the driver refuses the update
 * (another topology) or cannot update. *how says which. */
lt_status lt_cuda_graph_replay(lt_cuda *cu, lt_ctx *ctx, lt_cuda_graph **holder, const lt_cuda_graph *g, bool load,
                               lt_graph_replay *how);
void lt_cuda_graph_free(lt_cuda *cu, lt_cuda_graph *g); /* NULL is fine */

/* ---- ceilings (cuda_ceil.c): measured once per lt_cuda, then remembered ---- */
typedef struct lt_cuda_ceilings {
    double copy_gbps;      /* device-to-device copy, (read + write bytes) / time */
    double fp32_gflops;    /* FP32 FMA rate of a register-only kernel */
    double tc_f16_tflops;  /* mma.sync m16n8k16 f16 -> f32 rate of a register-only kernel */
    double spec_fp32_gflops; /* SMs x 128 lanes x 2 x clock, from the device attributes (0: unknown) */
    double spec_mem_gbps;    /* 2 x memory clock x bus width (0: unknown) */
} lt_cuda_ceilings;
lt_status lt_cuda_ceilings_get(lt_cuda *cu, lt_ctx *ctx, lt_cuda_ceilings *out);
/* Median copy bandwidth of `bytes`-sized device-to-device copies (read + write), `reps` timed runs. */
lt_status lt_cuda_measure_copy(lt_cuda *cu, lt_ctx *ctx, size_t bytes, int reps, double *gbps);

/* ---- the backend (cuda_backend.c) ---- */
extern const lt_backend_vtbl lt_backend_cuda;
/* The device behind a backend instance made by lt_backend_cuda; NULL for other backends. */
lt_cuda *lt_backend_cuda_device(lt_backend *b);

#endif
