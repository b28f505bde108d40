/* backend.h — a backend is a struct of function pointers (one per device kind), as in ggml: the
 * runtime and tools drive every device through the same calls, and adding a device is one folder,
 * one language table for the shared emitter and one line in the registry (backend.c).
 *
 * The calls: create/destroy an instance (options: compiler, cache, threads, device), compile a
 * generated translation unit into a loaded module (cached by content hash), load = look a kernel up
 * in a module, alloc/free/copy device memory, launch a kernel on buffer pointers (the kernel ABI of
 * docs/COMPILER.md: pointers in the kernel's argument order), sync, and ceilings (peak FP32 rate and
 * memory bandwidth, for the roofline). Backends never see graph ops: everything reaches them as
 * source emitted from Loop IR with their `lang` table.
 * host_memory says whether the backend's memory is host memory the runtime may read and write
 * directly (CPU: yes; CUDA: no, it is reached only through copy and launch). Device backends may
 * add the optional calls (NULL when absent): copy_async (queued in order with launches; the host
 * side must stay valid and unchanged until the next sync), graph capture and replay of a launch
 * sequence, events for device-side timing, and building emitted source with no device (a compiler
 * readied once before fork, then one translation unit per call: `lathe conformance --compile-only`). The runtime's plan (src/runtime/plan.h) drives
 * every device through these calls only.
 * Every call returns a status with the message on ctx; results go through out-parameters, untouched
 * on failure. On the CPU "device" memory is host memory (64-byte aligned), copies are memcpy, launch
 * is a direct call and sync does nothing (kernels run synchronously, parallel inside with OpenMP).
 * Entry points: lt_backend_find, lt_backend_create, lt_backend_destroy, and the vtable calls.
 */
#ifndef LT_BACKEND_H
#define LT_BACKEND_H

#include "../base/base.h"
#include "../codegen/lang.h"
#include "../loop/loop.h"
#include "target.h"

typedef struct lt_backend lt_backend;
typedef struct lt_bmodule lt_bmodule; /* a compiled, loaded module (opaque) */
typedef struct lt_bkernel lt_bkernel; /* a kernel of a module (opaque; lives as long as its module) */
typedef struct lt_boffline lt_boffline; /* a backend's compiler readied for builds with no device (opaque) */

typedef enum lt_copy_dir {
    LT_COPY_HOST_TO_DEVICE,
    LT_COPY_DEVICE_TO_HOST,
    LT_COPY_DEVICE_TO_DEVICE
} lt_copy_dir;

typedef struct lt_backend_options {
    const char *cc;          /* CPU: C compiler command (NULL = "cc"; the CLI passes $CC) */
    const char *cache_dir;   /* compiled-module cache (NULL = no cache) */
    const char *extra_flags; /* CPU: extra compiler flags */
    double cc_timeout_s;     /* CPU: seconds one compiler run may take (0 = 300, < 0 = no limit) */
    int threads;             /* CPU: threads of parallel loops (0 = OpenMP default) */
    int device;              /* CUDA: device ordinal */
    const char *arch;        /* CUDA: NVRTC target, e.g. "sm_90" (NULL = the device's) */
    const char *nvrtc;       /* CUDA: NVRTC library tried before libnvrtc.so.13 / .12 (NULL: none;
                              * the CLI passes --nvrtc or $LATHE_NVRTC) */
    bool whole_module;       /* CPU: one self-contained object, never linked against the shared
                              * prelude library (what an artifact keeps: src/compile/artifact.h) */
} lt_backend_options;

typedef struct lt_backend_ceilings {
    double peak_gflops; /* FP32 FMA peak, GFLOP/s */
    double mem_gbps;    /* sustained memory bandwidth, GB/s */
    /* device backends, 0 when unknown: the tensor-core rate (f16 -> f32, TFLOP/s) and the rates the
     * device's attributes promise (spec) */
    double tc_tflops, spec_gflops, spec_mem_gbps;
} lt_backend_ceilings;

/* What a compiled module says about itself, for the compile report (module_info). */
typedef struct lt_bmodule_info {
    bool cache_hit;
    char key[65];             /* content-hash cache key ("" none) */
    char source_path[1024];   /* the generated source kept on disk ("" none) */
} lt_bmodule_info;

/* What `lathe compile MODEL --target NAME -o DIR` asks of a target's write_output. */
typedef struct lt_output_request {
    const char *dir;          /* the output folder (exists) */
    const char *prefix;       /* file stem / C prefix (NULL: "model") */
    const char *model_path;   /* for header comments (may be NULL) */
    int64_t embed_limit;      /* weights under this many bytes embedded (0: the default; < 0 never) */
    const char *nvrtc;        /* a device compiler library tried first (NULL: none) */
    const struct lt_plan *plan; /* the compiled plan (NULL for a target with output_from_source) */
    const char *source;       /* the emitted translation unit (output_from_source), NUL-terminated */
    size_t source_len;
    int n_kernels, n_pack_kernels, n_host_groups; /* from the compile report */
    /* printing: lines for stdout go to `log`; paths and names pass through esc (the CLI's
     * escaper); a problem that does not fail the output goes to warn */
    const char *(*esc)(const char *s);
    void (*warn)(const char *msg);
    /* Writes `plan` as a standalone program in the language `lang` and says what it wrote: the
     * plan lives in a layer above the backends, so the caller supplies its writer (the CLI passes
     * the runtime's C export); a target whose output is a program built from the plan calls it. */
    lt_status (*write_program)(lt_ctx *ctx, const struct lt_output_request *req, const lt_lang *lang, lt_strbuf *log);
} lt_output_request;

/* What a graph replay (lt_backend_vtbl.graph_replay) did before launching. */
typedef enum { LT_GRAPH_REPLAYED, LT_GRAPH_UPDATED, LT_GRAPH_INSTANTIATED } lt_graph_replay;

typedef struct lt_backend_vtbl {
    const char *name;    /* "cpu", "cuda": registry key and messages, never compared elsewhere */
    const lt_lang *lang; /* language table the emitter uses for this backend */
    bool host_memory;    /* alloc returns host memory the runtime may dereference (CPU) */
    bool loop_ir_only;   /* runs Loop IR itself (compile_ir): kernels must not call prelude microkernels */
    bool opens_device;   /* create opens a device (which does not survive fork); the target is read
                          * from it, so a compile creates the instance before lowering */
    bool output_from_source; /* write_output needs only the emitted source (no plan, no device) */
    /* The target a compile builds for (target.h): from the options, and from `b` (an instance,
     * NULL when none was created: a compile that only emits) for a device backend. */
    lt_status (*target)(lt_ctx *ctx, lt_backend *b, const lt_target_options *opt, lt_target *out);
    lt_status (*create)(lt_ctx *ctx, const lt_backend_options *opt, lt_backend **out);
    void (*destroy)(lt_backend *b);
    /* source: one translation unit from lt_emit_module(lang); cached by content hash */
    lt_status (*compile)(lt_backend *b, lt_ctx *ctx, const char *source, lt_bmodule **out);
    void (*module_free)(lt_backend *b, lt_bmodule *m);
    /* look up kernel `name` in a module; LT_ERR_INVALID if absent */
    lt_status (*load)(lt_backend *b, lt_ctx *ctx, lt_bmodule *m, const char *name, lt_bkernel **out);
    lt_status (*alloc)(lt_backend *b, lt_ctx *ctx, size_t bytes, void **out);
    void (*free)(lt_backend *b, void *ptr);
    lt_status (*copy)(lt_backend *b, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir);
    /* args: n_args device pointers in the kernel's argument order */
    lt_status (*launch)(lt_backend *b, lt_ctx *ctx, const lt_bkernel *k, void *const *args, int n_args);
    lt_status (*sync)(lt_backend *b, lt_ctx *ctx);
    lt_status (*ceilings)(lt_backend *b, lt_ctx *ctx, lt_backend_ceilings *out);

    /* ---- optional (NULL: not available; device backends) ---- */
    /* cache facts of a compiled module, for the report (NULL: none to tell) */
    void (*module_info)(lt_backend *b, const lt_bmodule *m, lt_bmodule_info *out);
    /* threads of the module's parallel loops (n <= 0: the runtime's default); NULL: not threaded */
    void (*module_set_threads)(lt_backend *b, lt_bmodule *m, int n);
    /* `lathe compile --target NAME -o DIR`: write the target's product into req->dir (NULL: the
     * backend is no such target) */
    lt_status (*write_output)(lt_ctx *ctx, const lt_target *t, const lt_output_request *req, lt_strbuf *log);
    /* Building emitted source with no device (`lathe conformance --compile-only`): offline_open
     * readies the backend's compiler once for opt (opt->arch: what to build for, NULL: the backend's
     * default; opt->cache_dir: where products are cached) and says in *arch the architecture it builds
     * for, which the compile must lower for too. Call it before fork: forked children reuse the
     * handle. build_offline builds one translation unit emitted with `lang`; a build error is that
     * source's failure, the message on ctx. offline_close releases the handle (NULL is fine). All
     * three NULL: the backend cannot build without its device. */
    lt_status (*offline_open)(lt_ctx *ctx, const lt_backend_options *opt, lt_boffline **out, const char **arch);
    lt_status (*build_offline)(lt_boffline *h, lt_ctx *ctx, const char *source);
    void (*offline_close)(lt_boffline *h);
    /* A backend that runs Loop IR directly (the evaluator) takes the kernels instead of source; they
     * live as long as the plan. When set, the compile calls it instead of emitting and `compile`. */
    lt_status (*compile_ir)(lt_backend *b, lt_ctx *ctx, const lt_kernel *const *kernels, int n, lt_bmodule **out);
    /* copy queued in order with launches; returns before it completes: the host memory must stay
     * valid and unchanged until the next sync. NULL: the runtime uses copy. */
    lt_status (*copy_async)(lt_backend *b, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir);
    /* Graphs: graph_begin .. graph_end records the launches enqueued in between (nothing runs)
     * into a replayable graph; graph_launch replays it with the argument values captured. graph_end
     * also ends a capture after an error, so the backend is usable again. With instantiate false
     * the graph is a template for graph_replay (optional: NULL when the backend cannot update an
     * instantiated graph), which replays it through *holder, one instantiated graph that templates
     * of the same kernels share: created on first use (graph_free frees it), updated in place to
     * the template's arguments when `load` (it last ran another), instantiated again when the
     * update is refused. */
    lt_status (*graph_begin)(lt_backend *b, lt_ctx *ctx);
    lt_status (*graph_end)(lt_backend *b, lt_ctx *ctx, bool instantiate, void **graph);
    lt_status (*graph_launch)(lt_backend *b, lt_ctx *ctx, void *graph);
    lt_status (*graph_replay)(lt_backend *b, lt_ctx *ctx, void **holder, void *graph, bool load, lt_graph_replay *how);
    bool (*graph_can_update)(lt_backend *b); /* does graph_replay update in place? (NULL: yes) */
    void (*graph_free)(lt_backend *b, void *graph);
    /* Events: a timestamp recorded in order with the launches; elapsed waits for `end`. */
    lt_status (*event_new)(lt_backend *b, lt_ctx *ctx, void **event);
    lt_status (*event_record)(lt_backend *b, lt_ctx *ctx, void *event);
    lt_status (*event_elapsed)(lt_backend *b, lt_ctx *ctx, void *start, void *end, double *seconds);
    void (*event_free)(lt_backend *b, void *event);
    /* Deploying without a compiler (src/compile/artifact.h). module_image: the built module's bytes
     * (CPU: the whole shared object; CUDA: the cubin) into a new heap buffer (lt_mem_free it).
     * load_prebuilt: load such bytes, built from the emitted `source` (the compile checked that it
     * hashes to source_sha256; CUDA reads its kernels' launch shapes from it), with no compiler:
     * no `cc`, no NVRTC; image_sha256 (hex) is the bytes' own hash, checked again once they are
     * where they are loaded from. NULL: the backend cannot. */
    lt_status (*module_image)(lt_backend *b, lt_ctx *ctx, const lt_bmodule *m, uint8_t **data, size_t *size);
    lt_status (*load_prebuilt)(lt_backend *b, lt_ctx *ctx, const char *source, const char *source_sha256,
                               const char *image_sha256, const void *bytes, size_t size, lt_bmodule **out);
} lt_backend_vtbl;

/* Every instance starts with this header; the backend's own state follows. */
struct lt_backend {
    const lt_backend_vtbl *vt;
};

extern const lt_backend_vtbl lt_backend_cpu;
extern const lt_backend_vtbl lt_backend_cuda;   /* src/backend/cuda/cuda_backend.c */
extern const lt_backend_vtbl lt_backend_loopir; /* src/backend/loopir: the bounds-checked evaluator */
extern const lt_backend_vtbl lt_backend_c;      /* src/backend/c: the standalone C export */

/* The registered backend called `name` ("cpu"), NULL if none. */
const lt_backend_vtbl *lt_backend_find(const char *name);
/* Register one more backend (tests: a device backend wrapping the CPU). Not thread-safe: call it
 * before any lookup runs concurrently. LT_ERR_USAGE for a name taken or a full registry. */
lt_status lt_backend_register(lt_ctx *ctx, const lt_backend_vtbl *vt);
/* Names of all registered backends, NULL-terminated. */
const char *const *lt_backend_names(void);
/* Find + create; LT_ERR_UNSUPPORTED naming the known backends when `name` is not one. */
lt_status lt_backend_create(lt_ctx *ctx, const char *name, const lt_backend_options *opt, lt_backend **out);
void lt_backend_destroy(lt_backend *b); /* NULL is fine */
/* The target of backend `name` with no instance (a device backend's static capabilities: whether
 * the tuning database applies, ...); LT_ERR_UNSUPPORTED when no backend has that name. */
lt_status lt_backend_target_named(lt_ctx *ctx, const char *name, const lt_target_options *opt, lt_target *out);
/* The target of backend vt (b: its instance, or NULL when none was created). */
lt_status lt_backend_target(lt_ctx *ctx, const lt_backend_vtbl *vt, lt_backend *b, const lt_target_options *opt,
                            lt_target *out);

#endif
