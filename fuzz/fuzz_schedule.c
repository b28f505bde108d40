/* fuzz_schedule.c — libFuzzer target for applying tuning-database schedules (src/loop/schedule.c,
 * sched_rows.c, and the step-list parser of src/tune/tune_db.c) to real kernels: the fused groups of
 * the small models tests/data/lower_*.onnx, lowered to plain Loop IR (no microkernels); each input
 * starts from the kernel as lowered (restored as the tuner's search does; lowered again every 512
 * inputs, which frees what earlier steps allocated).
 *
 * Input: byte 0 picks a kernel, the rest is a step list as the database stores it ("split i0 4;
 * vectorize i0.i"). The steps are parsed and applied (they stop at the first that fails: a refused
 * step must be LT_ERR_INVALID / LT_ERR_NOMEM and leave the kernel valid); the scheduled kernel must
 * pass lt_kernel_verify and, run by the bounds-checked Loop IR evaluator (src/loop/leval.h) on fixed
 * pseudo-random inputs, write what the unscheduled kernel writes (floats within 1e-4 relative). An
 * out-of-bounds access, a divergence or an invalid kernel aborts, which the fuzzer reports. Kernels a
 * schedule makes longer than 16384 iterations are checked but not run (the evaluator is slow), as are
 * those the evaluator cannot run (vector nodes, GPU row-reduction calls); kernels longer than 4096
 * iterations unscheduled are left out.
 * The models are read from tests/data under the current folder, else the source tree's.
 * Seeds: LATHE_FUZZ_SCHEDULE_SEEDS=DIR build-fuzz/fuzz_schedule -runs=0 writes each kernel's default
 * CPU and GPU schedules into DIR (fuzz/schedule_seeds.sh does that).
 * Run:   build-fuzz/fuzz_schedule -dict=fuzz/schedule.dict -max_len=512 CORPUS_DIR */
#include "ops/infer.h"
#include "loop/leval.h"
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "tune/tune.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LT_FUZZ_DATA_DIR
#define LT_FUZZ_DATA_DIR "tests/data"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_KERNELS 64
#define MAX_ITERS 16384.0      /* a scheduled kernel longer than this is checked, not run */
#define MAX_BASE_ITERS 4096.0  /* kernels longer than this unscheduled are left out (speed) */

static const char *const models[] = {"lower_ew", "lower_bcast", "lower_red", "lower_ln", "lower_mlp",
                                     "lower_conv", "lower_attn", "lower_proj", "lower_inj"};

typedef struct fkernel {
    const lt_groups *gs;
    int group;
    void **ref;      /* every argument after the unscheduled kernel ran */
    lt_arena arena;  /* of the lowered kernel, lowered again every RELOWER inputs (steps allocate here) */
    lt_lowered lw;
    lt_kernel saved; /* the kernel as lowered: body, variable and buffer counts restored per input */
    int uses;
} fkernel;
#define RELOWER 512

static fkernel kernels[MAX_KERNELS];
static int n_kernels;
#define N_MODELS (sizeof models / sizeof models[0])
static lt_arena arenas[N_MODELS];
static lt_groups groups[N_MODELS];
static const lt_lower_options lower_cpu = {.vector_lanes = 4, .no_microkernels = true, .no_packing = true, .threads = 2};

static lt_model *load(const char *name) {
    char path[1024];
    const char *dirs[2] = {"tests/data", LT_FUZZ_DATA_DIR};
    for (int d = 0; d < 2; d++) {
        lt_ctx ctx = {0};
        lt_model *m = NULL;
        snprintf(path, sizeof path, "%s/%s.onnx", dirs[d], name);
        if (lt_onnx_load_file(&ctx, path, NULL, &m) == LT_OK) {
            if (lt_graph_infer(&ctx, m) == LT_OK) return m;
            lt_model_free(m);
        }
    }
    return NULL;
}

/* Iterations of the statements under n (constant extents; a variable one counts as its bound 64). */
static double iterations(const lt_lnode *n) {
    if (!n) return 0;
    if (n->kind == LT_L_FOR) {
        int64_t e = 64;
        lt_lis_int(n->kids[1], &e);
        return (double)(e > 0 ? e : 0) * (1 + iterations(n->kids[2]));
    }
    if (!lt_lnode_info_get(n->kind)->is_stmt) return 0;
    double s = 0;
    for (int i = 0; i < n->n; i++) s += iterations(n->kids[i]);
    return s + 1;
}

static void write_seeds(const char *dir) {
    for (int i = 0; i < n_kernels; i++)
        for (int gpu = 0; gpu < 2; gpu++) {
            lt_ctx ctx = {0};
            lt_arena arena;
            lt_arena_init(&arena);
            lt_lower_options lo = lower_cpu;
            lo.gpu = gpu;
            lt_lowered lw;
            if (lt_lower_group(&ctx, kernels[i].gs, &kernels[i].gs->groups[kernels[i].group], &arena, &lo, &lw) == LT_OK) {
                lt_strbuf sb = {0};
                lt_tune_schedule_format(&lw.schedule, &sb);
                char path[1024];
                snprintf(path, sizeof path, "%s/k%02d_%s", dir, i, gpu ? "gpu" : "cpu");
                FILE *f = fopen(path, "wb");
                if (f) {
                    fputc(i, f);
                    fputs(sb.s ? sb.s : "-", f);
                    fclose(f);
                }
                lt_sb_free(&sb);
            }
            lt_arena_free(&arena);
        }
}

static void **make_args(const lt_kernel *k, size_t *bytes);
static void free_args(void **args, int n);

/* The arguments after k ran unscheduled; NULL when the evaluator cannot run it (a call it cannot
 * make) or it is too long to run for every input. */
static void **reference(const lt_kernel *k) {
    size_t bytes[256];
    if (k->n_args > 256 || iterations(k->body) > MAX_BASE_ITERS) return NULL;
    void **args = make_args(k, bytes);
    lt_ctx ctx = {0};
    if (lt_leval(&ctx, k, args, NULL, NULL) == LT_OK) return args;
    free_args(args, k->n_args);
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    for (size_t mi = 0; mi < N_MODELS; mi++) {
        lt_model *m = load(models[mi]); /* kept for the process's life */
        if (!m) {
            fprintf(stderr, "fuzz_schedule: cannot load %s.onnx from tests/data or %s\n", models[mi], LT_FUZZ_DATA_DIR);
            abort();
        }
        lt_ctx ctx = {0};
        lt_arena *arena = &arenas[mi];
        lt_groups *gs = &groups[mi];
        lt_arena_init(arena);
        if (lt_fuse(&ctx, m, arena, NULL, gs) != LT_OK) abort();
        for (int g = 0; g < gs->n && n_kernels < MAX_KERNELS; g++) {
            if (gs->groups[g].host) continue;
            lt_arena tmp;
            lt_arena_init(&tmp);
            lt_lowered lw;
            void **ref = NULL;
            if (lt_lower_group(&ctx, gs, &gs->groups[g], &tmp, &lower_cpu, &lw) == LT_OK && (ref = reference(lw.kernel)))
                kernels[n_kernels++] = (fkernel){.gs = gs, .group = g, .ref = ref};
            ctx = (lt_ctx){0};
            lt_arena_free(&tmp);
        }
    }
    fprintf(stderr, "fuzz_schedule: %d kernels of %d models\n", n_kernels, (int)N_MODELS);
    const char *seeds = getenv("LATHE_FUZZ_SCHEDULE_SEEDS");
    if (seeds) write_seeds(seeds);
    return 0;
}

/* Buffers for every argument of k, inputs filled from a fixed seed (integers 0/1: valid indices). */
static void **make_args(const lt_kernel *k, size_t *bytes) {
    void **args = calloc((size_t)k->n_args + 1, sizeof *args);
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < k->n_args; i++) {
        const lt_lbuf *b = k->args[i];
        size_t es = (size_t)lt_dtype_size(b->dtype), n = (size_t)b->size;
        bytes[i] = es * n;
        args[i] = calloc(n ? n : 1, es ? es : 1);
        for (size_t e = 0; e < n; e++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            if (lt_dtype_get(b->dtype)->cls == LT_DC_FLOAT) lt_store_f64(args[i], b->dtype, (int64_t)e, (double)(r % 1000) / 500.0 - 1);
            else lt_store_i64(args[i], b->dtype, (int64_t)e, (int64_t)(r & 1));
        }
    }
    return args;
}

static void free_args(void **args, int n) {
    for (int i = 0; i < n; i++) free(args[i]);
    free(args);
}

static bool close_enough(const lt_lbuf *b, const void *x, const void *y) {
    bool fl = lt_dtype_get(b->dtype)->cls == LT_DC_FLOAT;
    for (int64_t e = 0; e < b->size; e++) {
        if (!fl) {
            if (lt_load_i64(x, b->dtype, e) != lt_load_i64(y, b->dtype, e)) return false;
            continue;
        }
        double u = lt_load_f64(x, b->dtype, e), v = lt_load_f64(y, b->dtype, e);
        if (isnan(u) && isnan(v)) continue;
        if (!(fabs(u - v) <= 1e-4 * fmax(1.0, fmax(fabs(u), fabs(v))))) return false;
    }
    return true;
}

static void fail(const char *what, const lt_kernel *k, const char *steps, const char *msg) {
    lt_strbuf sb = {0};
    if (k) lt_kernel_print(k, &sb);
    fprintf(stderr, "fuzz_schedule: %s\nsteps: %s\nmessage: %s\nkernel:\n%s\n", what, steps, msg, sb.s ? sb.s : "?");
    lt_sb_free(&sb);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 2048 || !n_kernels) return 0;
    char text[2048];
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    if (strlen(text) != size - 1) return 0;
    lt_ctx ctx = {0};
    lt_schedule s;
    if (lt_tune_schedule_parse(&ctx, text, &s) != LT_OK) {
        if (ctx.status != LT_ERR_INVALID || !ctx.msg[0]) fail("the parser failed without an invalid-input error", NULL, text, ctx.msg);
        return 0;
    }
    fkernel *fk = &kernels[data[0] % n_kernels];
    if (fk->uses++ % RELOWER == 0) {
        if (fk->uses > 1) lt_arena_free(&fk->arena);
        lt_arena_init(&fk->arena);
        if (lt_lower_group(&ctx, fk->gs, &fk->gs->groups[fk->group], &fk->arena, &lower_cpu, &fk->lw) != LT_OK) abort();
        fk->saved = *fk->lw.kernel;
    }
    lt_kernel *k = fk->lw.kernel; /* as lowered (what the tuner's search restores between candidates) */
    k->body = fk->saved.body;
    k->n_vars = fk->saved.n_vars;
    k->n_bufs = fk->saved.n_bufs;
    k->flops = fk->saved.flops;
    k->bytes = fk->saved.bytes;
    size_t bytes[256];
    if (k->n_args > 256) abort();
    void **ref = fk->ref, **got = make_args(k, bytes);
    lt_ctx c2 = {0};
    lt_status st = LT_OK;
    for (int i = 0; i < s.n && st == LT_OK; i++) {
        const lt_lnode *before = k->body;
        st = lt_sched_apply(&c2, k, &s.steps[i]);
        if (st != LT_OK && k->body != before) fail("a refused step changed the kernel", k, text, c2.msg);
    }
    if (st != LT_OK && st != LT_ERR_INVALID && st != LT_ERR_NOMEM) fail("a step failed with an unexpected status", k, text, c2.msg);
    lt_ctx c3 = {0};
    lt_lnode *b = lt_lsimplify(k, k->body);
    if (!b) abort();
    k->body = b;
    if (lt_kernel_verify(&c3, k) != LT_OK) fail("the schedule made an invalid kernel", k, text, c3.msg);
    lt_kernel_cost(k);
    if (iterations(k->body) <= MAX_ITERS) {
        lt_ctx c4 = {0};
        st = lt_leval(&c4, k, got, NULL, NULL);
        if (st == LT_ERR_INVALID) fail("the scheduled kernel accesses memory out of bounds (or divides by zero)", k, text, c4.msg);
        if (st == LT_OK)
            for (int i = 0; i < k->n_args; i++)
                if (!close_enough(k->args[i], ref[i], got[i])) {
                    char m[128];
                    snprintf(m, sizeof m, "argument %d (%s) differs", i, k->args[i]->name);
                    fail("the scheduled kernel computes something else", k, text, m);
                }
    }
    free_args(got, k->n_args);
    return 0;
}
