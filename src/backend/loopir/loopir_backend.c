/* loopir_backend.c — the "loopir" backend: a compiled plan whose kernels are run by the bounds-checked
 * Loop IR evaluator (loop/leval.h) instead of generated code.
 *
 * Everything above the backend is the CPU pipeline (graph passes, fusion, lowering, default
 * schedules, the plan and its memory plan); only the last step differs: the module is the list of
 * Loop IR kernels themselves (compile_ir), and a launch evaluates one with every load and store
 * checked against its buffer. So a shape that inference failed to check, a lowering that indexes past
 * a buffer or a schedule that breaks a kernel shows up as an error naming the kernel, the buffer and
 * the index, where native code would read or write outside memory. It is the oracle of the
 * differential fuzzer (fuzz/fuzz_compile_diff.c) and a debugging aid (`lathe run --backend loopir`).
 *
 * Kernels must be plain Loop IR (loop_ir_only: the compile asks the lowering for no prelude
 * microkernels); the scalar intrinsics the lowering may still call are evaluated here. Memory is host
 * memory; there is no roofline (ceilings fails). Slow by design: an interpreter of the loops.
 */
#include "../backend.h"
#include "../../loop/leval.h"

#include <math.h>
#include <string.h>

typedef struct loopir_backend {
    lt_backend base;
} loopir_backend;

/* A module: the kernels it runs (owned by the compilation arena, which the plan keeps alive). */
struct lt_bmodule {
    int n;
    const lt_kernel **kernels;
};

static lt_status loopir_create(lt_ctx *ctx, const lt_backend_options *opt, lt_backend **out) {
    (void)opt;
    loopir_backend *b = lt_calloc(ctx, 1, sizeof *b, "loopir backend");
    if (!b) return LT_ERR_NOMEM;
    b->base.vt = &lt_backend_loopir;
    *out = &b->base;
    return LT_OK;
}

static void loopir_destroy(lt_backend *b) { lt_mem_free(b); }

static lt_status loopir_compile(lt_backend *b, lt_ctx *ctx, const char *source, lt_bmodule **out) {
    (void)b, (void)source, (void)out;
    return lt_error(ctx, LT_ERR_UNSUPPORTED, "the loopir backend runs Loop IR, not source (compile_ir)");
}

static lt_status loopir_compile_ir(lt_backend *b, lt_ctx *ctx, const lt_kernel *const *kernels, int n, lt_bmodule **out) {
    (void)b;
    lt_bmodule *m = lt_calloc(ctx, 1, sizeof *m, "loopir module");
    if (!m) return LT_ERR_NOMEM;
    m->kernels = n ? lt_calloc(ctx, (size_t)n, sizeof *m->kernels, "loopir module") : NULL;
    if (n && !m->kernels) {
        lt_mem_free(m);
        return LT_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) m->kernels[i] = kernels[i];
    m->n = n;
    *out = m;
    return LT_OK;
}

static void loopir_module_free(lt_backend *b, lt_bmodule *m) {
    (void)b;
    if (!m) return;
    lt_mem_free(m->kernels);
    lt_mem_free(m);
}

static lt_status loopir_load(lt_backend *b, lt_ctx *ctx, lt_bmodule *m, const char *name, lt_bkernel **out) {
    (void)b;
    for (int i = 0; m && i < m->n; i++)
        if (strcmp(m->kernels[i]->name, name) == 0) {
            *out = (lt_bkernel *)(void *)m->kernels[i];
            return LT_OK;
        }
    return lt_error(ctx, LT_ERR_INVALID, "loopir: no kernel '%s' in the module", name);
}

/* Host memory exactly as the CPU backend's (whose calls ignore the instance). */
static lt_status loopir_alloc(lt_backend *b, lt_ctx *ctx, size_t bytes, void **out) {
    return lt_backend_cpu.alloc(b, ctx, bytes, out);
}

static void loopir_free(lt_backend *b, void *p) { lt_backend_cpu.free(b, p); }

static lt_status loopir_copy(lt_backend *b, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir) {
    return lt_backend_cpu.copy(b, ctx, dst, src, bytes, dir);
}

/* The scalar intrinsics plain Loop IR may call (the lowering's, not microkernels). */
static lt_status intrinsic(lt_ctx *ctx, const char *name, int n, const lt_leval_arg *args, lt_leval_arg *result,
                           void *user) {
    (void)user;
    if (strcmp(name, "lt_exp_nonpos_f32") == 0 && n == 1) { /* exp of an argument <= 0 */
        result->f = (double)expf((float)args[0].f);
        return LT_OK;
    }
    if (strcmp(name, "lt_f32_order") == 0 && n == 1) { /* the prelude's (codegen/prelude/common.h) */
        float x = (float)args[0].f;
        uint32_t u;
        memcpy(&u, &x, sizeof u);
        int32_t b = (int32_t)u;
        result->i = x != x ? 0x7fffffff : x == 0.0f ? 0 : b >= 0 ? b : b ^ 0x7fffffff;
        result->f = (double)result->i;
        return LT_OK;
    }
    /* the prelude's lt_check_index (codegen/prelude/common.h): the check word, code, element, index, size */
    if (strcmp(name, "lt_check_index") == 0 && n == 5 && args[0].ptr && args[0].avail >= 4) {
        int64_t v = args[3].i, d = args[4].i;
        if (v < -d || v >= d) {
            int64_t w[4] = {args[1].i, args[2].i, v, d};
            memcpy(args[0].ptr, w, sizeof w);
            result->i = 0;
        } else {
            result->i = v < 0 ? v + d : v;
        }
        result->f = (double)result->i;
        return LT_OK;
    }
    return lt_error(ctx, LT_ERR_UNSUPPORTED, "loopir: no evaluator for the call %s/%d", name, n);
}

static lt_status loopir_launch(lt_backend *b, lt_ctx *ctx, const lt_bkernel *k, void *const *args, int n_args) {
    (void)b;
    const lt_kernel *kernel = (const lt_kernel *)(const void *)k;
    if (!kernel) return lt_error(ctx, LT_ERR_USAGE, "launch of a NULL kernel");
    if (n_args != kernel->n_args + kernel->n_scalars)
        return lt_error(ctx, LT_ERR_INTERNAL, "loopir: kernel %s takes %d arguments, launched with %d", kernel->name,
                        kernel->n_args + kernel->n_scalars, n_args);
    return lt_leval(ctx, kernel, args, intrinsic, NULL);
}

static lt_status loopir_sync(lt_backend *b, lt_ctx *ctx) {
    (void)b, (void)ctx;
    return LT_OK;
}

static lt_status loopir_ceilings(lt_backend *b, lt_ctx *ctx, lt_backend_ceilings *out) {
    (void)b, (void)out;
    return lt_error(ctx, LT_ERR_UNSUPPORTED, "the loopir backend (an evaluator) has no roofline ceilings");
}

/* The host CPU, its kernels plain Loop IR run by the evaluator: no microkernels, no tuned schedules,
 * no NCHWc layout (its ops lower only to microkernel calls). */
static lt_status loopir_target(lt_ctx *ctx, lt_backend *b, const lt_target_options *opt, lt_target *out) {
    (void)ctx, (void)b;
    lt_target_host(opt, out);
    out->name = "loopir";
    out->microkernels = false;
    out->runs_loop_ir = true;
    out->tune_db = false;
    out->layout_nchwc = false;
    return LT_OK;
}

const lt_backend_vtbl lt_backend_loopir = {
    .target = loopir_target,
    .name = "loopir",
    .lang = &lt_lang_c,
    .host_memory = true,
    .loop_ir_only = true,
    .create = loopir_create,
    .destroy = loopir_destroy,
    .compile = loopir_compile,
    .compile_ir = loopir_compile_ir,
    .module_free = loopir_module_free,
    .load = loopir_load,
    .alloc = loopir_alloc,
    .free = loopir_free,
    .copy = loopir_copy,
    .launch = loopir_launch,
    .sync = loopir_sync,
    .ceilings = loopir_ceilings,
};
