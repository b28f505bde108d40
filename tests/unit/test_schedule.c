/* test_schedule.c — unit tests of schedule steps (src/loop/schedule.c): every step kind on small
 * kernels built with the builders (elementwise add over [64, 100], a matmul nest with ragged sizes,
 * a row reduction, a triangular nest with a variable extent), checking the printed IR before/after,
 * that the transformed kernel computes what the original does (Loop IR interpreter on random data,
 * including a microkernel callback that follows the documented calling convention), that bad steps
 * fail with messages naming the loop and leave the kernel unchanged, random step sequences, the
 * text format round trip, and allocation failures. Exits non-zero on failure. */
#include "loop/leval.h"
#include "loop/schedule.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static double frand(void) { /* in [-1, -0.1] u [0.1, 1]: never zero */
    double v = 0.1 + 0.9 * (double)(next() >> 11) / 9007199254740992.0;
    return next() & 1 ? v : -v;
}

/* ---- kernels ---- */

typedef lt_kernel *(*builder_fn)(lt_arena *a);

static lt_kernel *build_add(lt_arena *a) { /* C[i*100 + j] = A[i*100 + j] + B[i*100 + j] */
    lt_kernel *k = lt_kernel_new(a, "add");
    lt_lbuf *C = lt_kernel_arg(k, "C", LT_FLOAT, 6400), *A = lt_kernel_arg(k, "A", LT_FLOAT, 6400),
            *B = lt_kernel_arg(k, "B", LT_FLOAT, 6400);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lnode *idx = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, 100)), lt_l_var(k, j));
    lt_lnode *st = lt_l_store(k, C, idx, lt_l_add(k, lt_l_load(k, A, idx), lt_l_load(k, B, idx)));
    lt_lnode *body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 64), LT_LOOP_SERIAL,
                              lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 100), LT_LOOP_SERIAL, st));
    if (!body) return NULL;
    k->body = body;
    return k;
}

enum { MM_M = 20, MM_N = 30, MM_K = 12 };
static lt_kernel *build_mm(lt_arena *a) { /* C[i,j] += A[i,k] * B[k,j] */
    lt_kernel *k = lt_kernel_new(a, "mm");
    lt_lbuf *C = lt_kernel_arg(k, "C", LT_FLOAT, MM_M * MM_N), *A = lt_kernel_arg(k, "A", LT_FLOAT, MM_M * MM_K),
            *B = lt_kernel_arg(k, "B", LT_FLOAT, MM_K * MM_N);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64), *kk = lt_kernel_var(k, "k", LT_INT64);
    lt_lnode *ci = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, MM_N)), lt_l_var(k, j));
    lt_lnode *ai = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, MM_K)), lt_l_var(k, kk));
    lt_lnode *bi = lt_l_add(k, lt_l_mul(k, lt_l_var(k, kk), lt_l_int(k, MM_N)), lt_l_var(k, j));
    lt_lnode *upd = lt_l_store(k, C, ci, lt_l_add(k, lt_l_load(k, C, ci), lt_l_mul(k, lt_l_load(k, A, ai), lt_l_load(k, B, bi))));
    lt_lnode *body = lt_l_for(k, i, LT_ROLE_OUTPUT, lt_l_int(k, 0), lt_l_int(k, MM_M), LT_LOOP_SERIAL,
                              lt_l_for(k, j, LT_ROLE_OUTPUT, lt_l_int(k, 0), lt_l_int(k, MM_N), LT_LOOP_SERIAL,
                                       lt_l_for(k, kk, LT_ROLE_REDUCE, lt_l_int(k, 0), lt_l_int(k, MM_K), LT_LOOP_SERIAL, upd)));
    if (!body) return NULL;
    k->body = body;
    return k;
}

static lt_kernel *build_rsum(lt_arena *a) { /* out[i] = 0; out[i] = out[i] + x[i*50 + j] */
    lt_kernel *k = lt_kernel_new(a, "rsum");
    lt_lbuf *O = lt_kernel_arg(k, "out", LT_DOUBLE, 24), *X = lt_kernel_arg(k, "x", LT_DOUBLE, 24 * 50);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lnode *oi = lt_l_var(k, i);
    lt_lnode *xi = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, 50)), lt_l_var(k, j));
    lt_lnode *init = lt_l_store(k, O, oi, lt_l_float(k, LT_DOUBLE, 0));
    lt_lnode *acc = lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 50), LT_LOOP_SERIAL,
                             lt_l_store(k, O, oi, lt_l_add(k, lt_l_load(k, O, oi), lt_l_load(k, X, xi))));
    lt_lnode *seq[2] = {init, acc};
    lt_lnode *body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 24), LT_LOOP_SERIAL, lt_l_seq(k, 2, seq));
    if (!body) return NULL;
    k->body = body;
    return k;
}

static lt_kernel *build_tri(lt_arena *a) { /* for i in [0, 12): for j in [0, i + 1): L[i*12 + j] = 2*S[i*12 + j] */
    lt_kernel *k = lt_kernel_new(a, "tri");
    lt_lbuf *L = lt_kernel_arg(k, "L", LT_FLOAT, 144), *S = lt_kernel_arg(k, "S", LT_FLOAT, 144);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lnode *idx = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, 12)), lt_l_var(k, j));
    lt_lnode *st = lt_l_store(k, L, idx, lt_l_mul(k, lt_l_load(k, S, idx), lt_l_float(k, LT_FLOAT, 2)));
    lt_lnode *body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 12), LT_LOOP_SERIAL,
                              lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_add(k, lt_l_var(k, i), lt_l_int(k, 1)), LT_LOOP_SERIAL, st));
    if (!body) return NULL;
    k->body = body;
    return k;
}

/* ---- helpers ---- */

static const char *pk(const lt_kernel *k) {
    static char out[16384];
    lt_strbuf sb = {0};
    lt_lprint(k->body, &sb, 0);
    snprintf(out, sizeof out, "%s", sb.s ? sb.s : "");
    lt_sb_free(&sb);
    return out;
}

/* Microkernels for the interpreter, following schedule.h's convention:
 *   "mac": b0[...] = b0[...] + b1[...] * b2[...]   "add": b0[...] = b1[...] + b2[...]
 * args = 3 pointers, nl extents, 3*nl strides. */
static int calls;
static lt_status run_micro(lt_ctx *ctx, const char *name, int n, const lt_leval_arg *args, lt_leval_arg *res, void *user) {
    (void)res, (void)user;
    bool mac = !strcmp(name, "mac");
    if (!mac && strcmp(name, "add")) return lt_error(ctx, LT_ERR_UNSUPPORTED, "unknown microkernel %s", name);
    if ((n - 3) % 4) return lt_error(ctx, LT_ERR_INVALID, "%s: %d args do not fit the convention", name, n);
    int nl = (n - 3) / 4;
    for (int b = 0; b < 3; b++)
        if (!args[b].ptr || args[b].dtype != LT_FLOAT) return lt_error(ctx, LT_ERR_INVALID, "%s: arg %d not a float pointer", name, b);
    int64_t x[32] = {0}, total = 1;
    for (int l = 0; l < nl; l++) total *= args[3 + l].i;
    calls++;
    for (int64_t t = 0; t < total; t++) {
        int64_t off[3] = {0, 0, 0}, rem = t;
        for (int l = nl - 1; l >= 0; l--) x[l] = rem % args[3 + l].i, rem /= args[3 + l].i;
        for (int b = 0; b < 3; b++) {
            for (int l = 0; l < nl; l++) off[b] += args[3 + nl + b * nl + l].i * x[l];
            if (off[b] < 0 || off[b] >= args[b].avail) return lt_error(ctx, LT_ERR_INVALID, "%s: buffer %d out of range", name, b);
        }
        float *p0 = args[0].ptr, *p1 = args[1].ptr, *p2 = args[2].ptr;
        p0[off[0]] = mac ? p0[off[0]] + p1[off[1]] * p2[off[2]] : p1[off[1]] + p2[off[2]];
    }
    return LT_OK;
}

/* Run both kernels on the same random inputs; true when every output agrees (rel. 1e-6). */
static bool same_results(const lt_kernel *ref, const lt_kernel *k, char *why, size_t nwhy) {
    void *ra[8], *ka[8];
    bool ok = true;
    int n = ref->n_args;
    for (int i = 0; i < n; i++) {
        const lt_lbuf *b = ref->args[i];
        size_t bytes = (size_t)b->size * (size_t)lt_dtype_size(b->dtype);
        ra[i] = malloc(bytes), ka[i] = malloc(bytes);
        for (int64_t e = 0; e < b->size; e++) lt_store_f64(ra[i], b->dtype, e, frand());
        memcpy(ka[i], ra[i], bytes);
    }
    lt_ctx c1 = {0}, c2 = {0};
    if (lt_leval(&c1, ref, ra, run_micro, NULL) != LT_OK) snprintf(why, nwhy, "reference failed: %.400s", c1.msg), ok = false;
    else if (lt_leval(&c2, k, ka, run_micro, NULL) != LT_OK) snprintf(why, nwhy, "scheduled failed: %.400s", c2.msg), ok = false;
    for (int i = 0; i < n && ok; i++) {
        const lt_lbuf *b = ref->args[i];
        for (int64_t e = 0; e < b->size && ok; e++) {
            double x = lt_load_f64(ra[i], b->dtype, e), y = lt_load_f64(ka[i], b->dtype, e);
            if (!(fabs(x - y) <= 1e-6 * (1 + fabs(x)))) {
                snprintf(why, nwhy, "%s[%lld]: %g (reference) vs %g", b->name, (long long)e, x, y);
                ok = false;
            }
        }
    }
    for (int i = 0; i < n; i++) free(ra[i]), free(ka[i]);
    return ok;
}

/* Apply `steps` (text lines, NULL-terminated) to a fresh kernel; check the printed body (when want is
 * not NULL), the verifier, and the results against the unscheduled kernel. */
static void sched_case(builder_fn build, const char *const *steps, const char *want, int line) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *ref = build(&a), *k = build(&a);
    lt_ctx c = {0};
    for (int i = 0; steps[i]; i++) {
        lt_sstep st;
        if (lt_sstep_parse(&c, steps[i], &st) != LT_OK || lt_sched_apply(&c, k, &st) != LT_OK) {
            fprintf(stderr, "%s:%d: step '%s' failed: %s\n", __FILE__, line, steps[i], c.msg);
            failures++;
            lt_arena_free(&a);
            return;
        }
    }
    if (want && strcmp(pk(k), want)) {
        fprintf(stderr, "%s:%d: text mismatch\n--- got:\n%s--- want:\n%s", __FILE__, line, pk(k), want);
        failures++;
    }
    if (lt_kernel_verify(&c, k) != LT_OK) {
        fprintf(stderr, "%s:%d: verifier: %s\n", __FILE__, line, c.msg);
        failures++;
    }
    char why[512];
    if (!same_results(ref, k, why, sizeof why)) {
        fprintf(stderr, "%s:%d: results differ after scheduling: %s\n%s", __FILE__, line, why, pk(k));
        failures++;
    }
    lt_arena_free(&a);
}
#define SCHED(build, want, ...)                                                                    \
    do {                                                                                           \
        const char *steps_[] = {__VA_ARGS__, NULL};                                                \
        sched_case(build, steps_, want, __LINE__);                                                 \
    } while (0)

/* A step that must fail with a message containing every string in `needles`; the kernel keeps its
 * body and its variables. */
static void fail_case(builder_fn build, const char *const *pre, const char *step, const char *const *needles, int line) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build(&a);
    lt_ctx c = {0};
    lt_sstep st;
    for (int i = 0; pre && pre[i]; i++)
        if (lt_sstep_parse(&c, pre[i], &st) != LT_OK || lt_sched_apply(&c, k, &st) != LT_OK) {
            fprintf(stderr, "%s:%d: setup step '%s' failed: %s\n", __FILE__, line, pre[i], c.msg);
            failures++;
            lt_arena_free(&a);
            return;
        }
    const lt_lnode *body = k->body;
    int nv = k->n_vars, nb = k->n_bufs;
    lt_status s = lt_sstep_parse(&c, step, &st);
    if (s == LT_OK) s = lt_sched_apply(&c, k, &st);
    bool ok = s == LT_ERR_INVALID && k->body == body && k->n_vars == nv && k->n_bufs == nb && strstr(c.msg, step);
    for (int i = 0; needles[i]; i++) ok &= strstr(c.msg, needles[i]) != NULL;
    if (!ok) {
        fprintf(stderr, "%s:%d: step '%s': status %d, message '%s'\n", __FILE__, line, step, (int)s, c.msg);
        failures++;
    }
    lt_arena_free(&a);
}
#define FAILS(build, pre, step, ...)                                                               \
    do {                                                                                           \
        const char *needles_[] = {__VA_ARGS__, NULL};                                              \
        fail_case(build, pre, step, needles_, __LINE__);                                           \
    } while (0)

/* ---- tests ---- */

static void test_split_reorder_tile_fuse(void) {
    lt_arena a;
    lt_arena_init(&a);
    const char *before = pk(build_mm(&a)), *want = "for i in [0, 20):\n"
                                                   "  for j in [0, 30):\n"
                                                   "    for k in [0, 12):\n"
                                                   "      C[i*30 + j] = C[i*30 + j] + A[i*12 + k]*B[k*30 + j]\n";
    if (strcmp(before, want)) fprintf(stderr, "matmul before scheduling:\n%s", before), failures++;
    lt_arena_free(&a);
    SCHED(build_add,
          "for i in [0, 64):\n"
          "  for j.o in [0, 5):\n"
          "    for j.i in [0, 20):\n"
          "      C[i*100 + j.o*20 + j.i] = A[i*100 + j.o*20 + j.i] + B[i*100 + j.o*20 + j.i]\n",
          "split j 20");
    SCHED(build_add, /* tail: guard around the innermost statement */
          "for i.o in [0, 10):\n"
          "  for i.i in [0, 7):\n"
          "    for j in [0, 100):\n"
          "      if i.o*7 + i.i < 64:\n"
          "        C[i.o*700 + i.i*100 + j] = A[i.o*700 + i.i*100 + j] + B[i.o*700 + i.i*100 + j]\n",
          "split i 7");
    SCHED(build_add,
          "for j in [0, 100):\n"
          "  for i in [0, 64):\n"
          "    C[i*100 + j] = A[i*100 + j] + B[i*100 + j]\n",
          "reorder j i");
    SCHED(build_mm,
          "for i.o in [0, 3):\n"
          "  for j.o in [0, 2):\n"
          "    for i.i in [0, 8):\n"
          "      for j.i in [0, 16):\n"
          "        for k in [0, 12):\n"
          "          if j.o*16 + j.i < 30:\n"
          "            if i.o*8 + i.i < 20:\n"
          "              C[i.o*240 + i.i*30 + j.o*16 + j.i] = C[i.o*240 + i.i*30 + j.o*16 + j.i] + "
          "A[i.o*96 + i.i*12 + k]*B[k*30 + j.o*16 + j.i]\n",
          "tile i j 8 16");
    SCHED(build_add,
          "for i.j in [0, 6400):\n"
          "  C[i.j] = A[i.j] + B[i.j]\n",
          "fuse i j");
    SCHED(build_mm,
          "for i.j in [0, 600):\n"
          "  for k in [0, 12):\n"
          "    C[i.j] = C[i.j] + A[i.j/30*12 + k]*B[k*30 + i.j%30]\n",
          "fuse i j");
    SCHED(build_mm, NULL, "split k 5", "reorder j k.o", "reorder i k.o", "split i 3", "fuse j k.i");
    SCHED(build_rsum,
          "for i.o in [0, 5):\n"
          "  for i.i in [0, 5):\n"
          "    if i.o*5 + i.i < 24:\n"
          "      out[i.o*5 + i.i] = 0.0\n"
          "      for j in [0, 50):\n"
          "        out[i.o*5 + i.i] = out[i.o*5 + i.i] + x[i.o*250 + i.i*50 + j]\n",
          "split i 5");
    SCHED(build_rsum, NULL, "split j 8", "split j.i 2", "reorder j.i.o j.i.i", "fuse j.i.i j.i.o");
    SCHED(build_tri, /* variable extent: ceil-divided outer, guarded */
          "for i in [0, 12):\n"
          "  for j.o in [0, (i + 4)/4):\n"
          "    for j.i in [0, 4):\n"
          "      if j.o*4 + j.i < i + 1:\n"
          "        L[i*12 + j.o*4 + j.i] = S[i*12 + j.o*4 + j.i]*2.0f\n",
          "split j 4");
    SCHED(build_mm, NULL, "split i 1", "split j 30", "split k 64", "tile i.i j.o 1 1");
}

/* peel: a main loop of whole vectors and a tail loop, no guard; results equal for any extent. */
static void test_peel(void) {
    SCHED(build_add,
          "for i in [0, 64):\n"
          "  for j.o in [0, 12):\n"
          "    for j.i in [0, 8):\n"
          "      C[i*100 + j.o*8 + j.i] = A[i*100 + j.o*8 + j.i] + B[i*100 + j.o*8 + j.i]\n"
          "  for j.t in [0, 4):\n"
          "    C[i*100 + j.t + 96] = A[i*100 + j.t + 96] + B[i*100 + j.t + 96]\n",
          "peel j 8");
    SCHED(build_add, NULL, "peel j 8", "vectorize j.i", "parallel i");
    SCHED(build_add, NULL, "fuse i j", "peel i.j 16", "vectorize i.j.i", "parallel i.j.o 1000");
    SCHED(build_rsum, NULL, "peel i 5", "peel j 7");
    SCHED(build_add, NULL, "peel j 100", "peel i 64"); /* empty tails */
    FAILS(build_tri, NULL, "peel j 4", "variable extent");
    FAILS(build_add, NULL, "peel j 0", "1..");
}

/* A shape-generic kernel keeps a split's guard when the factor divides the extent; lt_lsimplify keeps
 * its loops of extent 0 and 1 (the shape's code for every size), and a plain kernel loses them. */
static void test_shape_generic(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_ctx c = {0};
    lt_sstep st;
    for (int generic = 0; generic < 2; generic++) {
        lt_kernel *k = build_add(&a);
        k->shape_generic = generic;
        CHECK(lt_sstep_parse(&c, "split j 20", &st) == LT_OK && lt_sched_apply(&c, k, &st) == LT_OK);
        CHECK((strstr(pk(k), "if j.o*20 + j.i < 100") != NULL) == generic);
        k = build_add(&a);
        k->shape_generic = generic;
        CHECK(lt_sstep_parse(&c, "peel j 100", &st) == LT_OK && lt_sched_apply(&c, k, &st) == LT_OK);
        CHECK(lt_sstep_parse(&c, "split i 64", &st) == LT_OK && lt_sched_apply(&c, k, &st) == LT_OK);
        k->body = lt_lsimplify(k, k->body);
        CHECK(k->body && (strstr(pk(k), "for j.t in [0, 0)") != NULL) == generic &&
              (strstr(pk(k), "for i.o in [0, 1)") != NULL) == generic);
    }
    lt_arena_free(&a);
}

static void test_markers(void) {
    SCHED(build_mm,
          "parallel for i in [0, 20):\n"
          "  for j.o in [0, 2):\n"
          "    unrolled(4) for k in [0, 12):\n"
          "      vectorized(16) for j.i in [0, 16):\n"
          "        if j.o*16 + j.i < 30:\n"
          "          C[i*30 + j.o*16 + j.i] = C[i*30 + j.o*16 + j.i] + A[i*12 + k]*B[k*30 + j.o*16 + j.i]\n",
          "split j 16", "reorder j.i k", "vectorize j.i", "unroll k 4", "parallel i");
    SCHED(build_add,
          "block.x for i in [0, 64):\n"
          "  for j.o in [0, 4):\n"
          "    thread.x for j.i in [0, 25):\n"
          "      C[i*100 + j.o*25 + j.i] = A[i*100 + j.o*25 + j.i] + B[i*100 + j.o*25 + j.i]\n",
          "bind i block x", "split j 25", "bind j.i thread x");
    SCHED(build_add, "unrolled for i in [0, 64):\n  thread.z for j in [0, 100):\n    C[i*100 + j] = A[i*100 + j] + B[i*100 + j]\n",
          "unroll i 0", "bind j thread z");
}

static void test_cache(void) {
    SCHED(build_mm,
          "for i in [0, 20):\n"
          "  alloc local float A_local[12]:\n"
          "    for A_local.c0 in [0, 12):\n"
          "      A_local[A_local.c0] = A[i*12 + A_local.c0]\n"
          "    for j in [0, 30):\n"
          "      for k in [0, 12):\n"
          "        C[i*30 + j] = C[i*30 + j] + A_local[k]*B[k*30 + j]\n",
          "cache A i local");
    SCHED(build_mm, /* a written buffer: copy-in and copy-out of a 2-d box */
          "for i.o in [0, 4):\n"
          "  alloc local float C_local[150]:\n"
          "    for C_local.c0 in [0, 5):\n"
          "      for C_local.c1 in [0, 30):\n"
          "        C_local[C_local.c0*30 + C_local.c1] = C[i.o*150 + C_local.c0*30 + C_local.c1]\n"
          "    for i.i in [0, 5):\n"
          "      for j in [0, 30):\n"
          "        for k in [0, 12):\n"
          "          C_local[i.i*30 + j] = C_local[i.i*30 + j] + A[i.o*60 + i.i*12 + k]*B[k*30 + j]\n"
          "    for C_local.c0_1 in [0, 5):\n"
          "      for C_local.c1_1 in [0, 30):\n"
          "        C[i.o*150 + C_local.c0_1*30 + C_local.c1_1] = C_local[C_local.c0_1*30 + C_local.c1_1]\n",
          "split i 5", "cache C i.o local");
    SCHED(build_mm, /* a tile of B with a tail: bounds-guarded copy-in, barriers for shared */
          "for i in [0, 20):\n"
          "  for j.o in [0, 2):\n"
          "    alloc shared float B_shared[192]:\n"
          "      for B_shared.c0 in [0, 12):\n"
          "        for B_shared.c1 in [0, 16):\n"
          "          if j.o*16 + B_shared.c0*30 + B_shared.c1 >= 0 && j.o*16 + B_shared.c0*30 + B_shared.c1 < 360:\n"
          "            B_shared[B_shared.c0*16 + B_shared.c1] = B[j.o*16 + B_shared.c0*30 + B_shared.c1]\n"
          "      barrier\n"
          "      for j.i in [0, 16):\n"
          "        for k in [0, 12):\n"
          "          if j.o*16 + j.i < 30:\n"
          "            C[i*30 + j.o*16 + j.i] = C[i*30 + j.o*16 + j.i] + A[i*12 + k]*B_shared[j.i + k*16]\n",
          "split j 16", "cache B j.o shared");
    SCHED(build_rsum, NULL, "split i 4", "cache out i.o local", "cache x i.o local", "split j 10");
    SCHED(build_add, NULL, "split j 25", "cache C j.o local", "cache A i local", "cache B j.o shared");
    SCHED(build_mm, NULL, "split i 4", "cache C i.o local", "cache C_local j local", "cache A i.i local");
}

static void test_microkernel(void) {
    SCHED(build_mm, "eval mac(&C[0], &A[0], &B[0], 20, 30, 12, 30, 1, 0, 12, 0, 1, 0, 1, 30)\n", "microkernel i mac");
    SCHED(build_mm,
          "for i.o in [0, 5):\n"
          "  for j in [0, 30):\n"
          "    eval mac(&C[i.o*120 + j], &A[i.o*48], &B[j], 4, 12, 30, 0, 12, 1, 0, 30)\n",
          "split i 4", "reorder i.i j", "microkernel i.i mac");
    SCHED(build_add, NULL, "split j 20", "microkernel j.i add");
    SCHED(build_add, NULL, "split i 8", "cache C i.o local", "microkernel i.i add");
    /* the call keeps the nest's static cost */
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_mm(&a);
    lt_kernel_cost(k);
    double f = k->flops, b = k->bytes;
    lt_ctx c = {0};
    lt_sstep st;
    CHECK(lt_sstep_parse(&c, "split i 4", &st) == LT_OK && lt_sched_apply(&c, k, &st) == LT_OK);
    CHECK(lt_sstep_parse(&c, "microkernel i.i mac", &st) == LT_OK && lt_sched_apply(&c, k, &st) == LT_OK);
    lt_kernel_cost(k);
    CHECK(f == 2.0 * MM_M * MM_N * MM_K && k->flops == f && k->bytes == b);
    int before = calls;
    float C[MM_M * MM_N] = {0}, A[MM_M * MM_K], B[MM_K * MM_N];
    for (int i = 0; i < MM_M * MM_K; i++) A[i] = 1;
    for (int i = 0; i < MM_K * MM_N; i++) B[i] = 2;
    void *args[3] = {C, A, B};
    CHECK(lt_leval(&c, k, args, run_micro, NULL) == LT_OK && calls - before == 5 && C[MM_M * MM_N - 1] == 2 * MM_K);
    lt_arena_free(&a);
}

static lt_loop_role role_of(lt_kernel *k, const char *loop) {
    lt_lnode *f = lt_lfind_loop(k->body, loop, NULL);
    return f ? f->role : LT_ROLE_COUNT;
}

/* Steps keep loop roles: a split gives two loops of the role, a tile four, a fuse the outer's, a
 * reorder and the markers move the role with the loop; the dump shows them. */
static void test_roles(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_mm(&a);
    const char *steps[] = {"split k 4", "tile i j 4 4", "fuse i.o j.o", "reorder i.i j.i", "vectorize k.i",
                           "parallel i.o.j.o"};
    lt_ctx ctx = {0};
    for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
        lt_sstep st;
        CHECK(lt_sstep_parse(&ctx, steps[s], &st) == LT_OK);
        CHECK(lt_sched_apply(&ctx, k, &st) == LT_OK);
    }
    CHECK(role_of(k, "k.o") == LT_ROLE_REDUCE && role_of(k, "k.i") == LT_ROLE_REDUCE);
    CHECK(role_of(k, "i.o.j.o") == LT_ROLE_OUTPUT);
    CHECK(role_of(k, "i.i") == LT_ROLE_OUTPUT && role_of(k, "j.i") == LT_ROLE_OUTPUT);
    lt_strbuf b = {0};
    lt_kernel_dump(k, &b);
    CHECK(b.s && strstr(b.s, "parallel for i.o.j.o in [0, 40):  [output]\n"));
    CHECK(b.s && strstr(b.s, "vectorized(4) for k.i in [0, 4):  [reduce]\n"));
    lt_sb_free(&b);
    lt_kernel_print(k, &b); /* the tuning key's text: no roles */
    CHECK(b.s && !strstr(b.s, "[output]") && !strstr(b.s, "[reduce]"));
    lt_sb_free(&b);
    CHECK(!strcmp(lt_loop_role_name(LT_ROLE_LANE_OUTPUT), "lane_output") && !strcmp(lt_loop_role_name(LT_ROLE_NONE), ""));
    lt_arena_free(&a);
}

static void test_errors(void) {
    const char *split_j[] = {"split j 16", NULL}, *par_j[] = {"parallel j", NULL}, *par_i[] = {"parallel i", NULL};
    const char *blk[] = {"bind i block x", NULL}, *cache_a[] = {"cache A i local", NULL};
    FAILS(build_add, NULL, "split q 4", "no loop named 'q'");
    FAILS(build_add, NULL, "split i 0", "'i'", ">= 1");
    FAILS(build_mm, NULL, "reorder i k", "'i'", "'k'", "not perfectly nested");
    FAILS(build_rsum, NULL, "reorder i j", "'i'", "'j'", "not perfectly nested");
    FAILS(build_tri, NULL, "reorder i j", "bounds of loop 'j' depend on loop 'i'");
    FAILS(build_tri, NULL, "vectorize j", "loop 'j'", "variable extent");
    FAILS(build_tri, NULL, "fuse i j", "bounds of loop 'j' depend on loop 'i'");
    FAILS(build_rsum, NULL, "fuse i j", "'i'", "'j'", "not perfectly nested");
    FAILS(build_add, NULL, "vectorize j", "loop 'j'", "extent 100");
    FAILS(build_add, NULL, "unroll j -1", "'j'", "negative");
    FAILS(build_tri, NULL, "unroll j 0", "loop 'j'", "variable extent");
    FAILS(build_add, par_i, "parallel j", "'j' is inside parallel loop 'i'");
    FAILS(build_add, par_j, "parallel i", "loop 'i' contains parallel loop 'j'");
    FAILS(build_add, blk, "bind j block x", "'j'", "'i'", "same GPU axis");
    FAILS(build_add, NULL, "bind j thread 3", "axis 3", "'j'");
    FAILS(build_add, NULL, "tile j i 4 4", "'j'", "'i'", "not perfectly nested");
    FAILS(build_add, NULL, "cache Z i local", "no buffer named 'Z'");
    FAILS(build_add, NULL, "cache A q local", "no loop named 'q'");
    FAILS(build_mm, split_j, "cache C j.o local", "'C'", "'j.o'", "under an IF");
    FAILS(build_mm, cache_a, "cache A j local", "'A'", "not accessed inside loop 'j'");
    FAILS(build_mm, cache_a, "cache A_local i local", "'A_local'", "allocated inside loop 'i'");
    FAILS(build_add, NULL, "cache A i.j local", "no loop named 'i.j'");
    FAILS(build_mm, split_j, "microkernel j.o mac", "'j.o'", "condition");
    FAILS(build_tri, NULL, "microkernel i mac", "bounds of loop 'j' depend on the nest at 'i'");
    FAILS(build_mm, NULL, "parse me", "unknown step 'parse'");
    FAILS(build_mm, NULL, "split i", "takes 2 words");
    FAILS(build_mm, NULL, "split i x4", "bad argument");
    FAILS(build_mm, NULL, "bind i warp x", "bad argument");
    FAILS(build_mm, NULL, "cache A i register", "bad argument");
}

/* Random step sequences: whatever succeeds must verify and compute the same results; whatever fails
 * must say which step and leave the kernel untouched. */
static bool collect_names(const lt_lnode *n, void *user) {
    lt_vec *v = user;
    if (n->kind == LT_L_FOR) lt_vec_push(v, (void *)n->var->name);
    return true;
}

static void test_random(void) {
    static const builder_fn builders[] = {build_add, build_mm, build_rsum, build_tri};
    static const lt_sstep_kind kinds[] = {LT_S_SPLIT, LT_S_REORDER, LT_S_TILE, LT_S_FUSE, LT_S_VECTORIZE,
                                          LT_S_UNROLL, LT_S_PARALLEL, LT_S_BIND, LT_S_CACHE};
    static const int64_t factors[] = {1, 2, 3, 4, 7, 16};
    int applied = 0, rejected = 0;
    for (int trial = 0; trial < 120; trial++) {
        lt_arena a;
        lt_arena_init(&a);
        builder_fn build = builders[trial % 4];
        lt_kernel *ref = build(&a), *k = build(&a);
        char log[2048] = "";
        for (int s = 0; s < 5; s++) {
            lt_vec names = {0};
            lt_lwalk(k->body, collect_names, &names);
            if (!names.n) {
                lt_vec_free(&names);
                break;
            }
            lt_sstep st;
            memset(&st, 0, sizeof st);
            st.kind = kinds[next() % (sizeof kinds / sizeof kinds[0])];
            snprintf(st.loop, sizeof st.loop, "%s", (const char *)names.items[next() % names.n]);
            snprintf(st.loop2, sizeof st.loop2, "%s", (const char *)names.items[next() % names.n]);
            st.factor = factors[next() % 6];
            st.factor2 = factors[next() % 6];
            if (st.kind == LT_S_BIND) st.factor = (int64_t)(next() % 2), st.factor2 = (int64_t)(next() % 3);
            if (st.kind == LT_S_CACHE) {
                const lt_lbuf *b = k->bufs[next() % k->n_bufs];
                snprintf(st.loop, sizeof st.loop, "%s", b->name);
                st.factor = (int64_t)(next() % 2);
            }
            lt_vec_free(&names);
            char line[256];
            lt_sstep_format(&st, line, sizeof line);
            const lt_lnode *body = k->body;
            lt_ctx c = {0};
            if (lt_sched_apply(&c, k, &st) == LT_OK) {
                applied++;
                snprintf(log + strlen(log), sizeof log - strlen(log), "%s; ", line);
                if (lt_kernel_verify(&c, k) != LT_OK) {
                    fprintf(stderr, "random %d: after %s: verifier: %s\n", trial, log, c.msg);
                    failures++;
                    break;
                }
            } else {
                rejected++;
                if (c.status != LT_ERR_INVALID || k->body != body || !strstr(c.msg, line)) {
                    fprintf(stderr, "random %d: step '%s' failed badly: %s\n", trial, line, c.msg);
                    failures++;
                }
            }
        }
        char why[512];
        if (!same_results(ref, k, why, sizeof why)) {
            fprintf(stderr, "random %d: results differ after %s: %s\n%s", trial, log, why, pk(k));
            failures++;
        }
        lt_arena_free(&a);
    }
    printf("random schedules: %d steps applied, %d rejected\n", applied, rejected);
    CHECK(applied > 150 && rejected > 50);
}

static void test_format(void) {
    static const char *lines[] = {"split i 16", "reorder i.o j", "tile i j 8 16", "fuse i j", "vectorize j.i",
                                  "unroll k 4", "parallel i.o", "bind i.o block x", "bind j thread z",
                                  "cache A j.o local", "cache B k.o shared", "microkernel i lt_sgemm", "peel j 8",
                                  "parallel i.o 16384"};
    lt_ctx c = {0};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        lt_sstep st;
        char back[256];
        CHECK(lt_sstep_parse(&c, lines[i], &st) == LT_OK);
        lt_sstep_format(&st, back, sizeof back);
        if (strcmp(back, lines[i])) fprintf(stderr, "format: '%s' came back as '%s'\n", lines[i], back), failures++;
        static const lt_sstep_kind want[] = {LT_S_SPLIT, LT_S_REORDER, LT_S_TILE, LT_S_FUSE, LT_S_VECTORIZE, LT_S_UNROLL,
                                             LT_S_PARALLEL, LT_S_BIND, LT_S_BIND, LT_S_CACHE, LT_S_CACHE, LT_S_MICROKERNEL,
                                             LT_S_PEEL, LT_S_PARALLEL};
        CHECK(st.kind == want[i]);
    }
    lt_sstep st;
    CHECK(lt_sstep_parse(&c, "  tile   a  b 2 3 \n", &st) == LT_OK && st.kind == LT_S_TILE && !strcmp(st.loop2, "b") &&
          st.factor == 2 && st.factor2 == 3);
    CHECK(lt_sstep_parse(&c, "bind x thread y", &st) == LT_OK && st.factor == 1 && st.factor2 == 1);
    CHECK(lt_sstep_parse(&c, "", &st) == LT_ERR_INVALID);
    CHECK(lt_sstep_parse(&c, "parallel i -5", &st) == LT_ERR_INVALID);
    CHECK(lt_sstep_parse(&c, "parallel i.o 0", &st) == LT_OK && st.factor == 0);
    lt_ctx_clear(&c);
    char longname[100];
    memset(longname, 'a', 99), longname[99] = 0;
    char line[160];
    snprintf(line, sizeof line, "parallel %s", longname);
    CHECK(lt_sstep_parse(&c, line, &st) == LT_ERR_INVALID && strstr(c.msg, "bad argument"));
    char small[8];
    st.kind = LT_S_SPLIT, strcpy(st.loop, "iiiiiiii"), st.factor = 4;
    lt_sstep_format(&st, small, sizeof small);
    CHECK(strlen(small) == 7);
    CHECK(!strcmp(lt_sstep_kind_name(LT_S_MICROKERNEL), "microkernel"));
    /* apply_all stops at the first error */
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_add(&a);
    lt_schedule s = {0};
    lt_ctx_clear(&c);
    CHECK(lt_sstep_parse(&c, "split j 10", &s.steps[s.n++]) == LT_OK);
    CHECK(lt_sstep_parse(&c, "vectorize q", &s.steps[s.n++]) == LT_OK);
    CHECK(lt_sstep_parse(&c, "parallel i", &s.steps[s.n++]) == LT_OK);
    CHECK(lt_sched_apply_all(&c, k, &s) == LT_ERR_INVALID && strstr(c.msg, "'q'") && lt_lfind_loop(k->body, "j.o", NULL) &&
          lt_lfind_loop(k->body, "i", NULL)->op == LT_LOOP_SERIAL);
    lt_arena_free(&a);
}

/* Allocation failures while scheduling: NOMEM or success, never a crash or another status. */
static void test_oom(void) {
    static const char *steps[] = {"tile i j 4 10", "cache C j.o local", "fuse i.o j.o", "microkernel i.i mac"};
    lt_set_allocator(&g_test_alloc);
    bool done = false;
    int nomem = 0;
    for (long n = 0; n < 400 && !done; n++) {
        g_countdown = n;
        lt_arena a;
        lt_arena_init(&a);
        lt_kernel *k = build_mm(&a);
        lt_status s = k ? LT_OK : LT_ERR_NOMEM;
        lt_ctx c = {0};
        for (int i = 0; i < 4 && s == LT_OK; i++) {
            lt_sstep st;
            s = lt_sstep_parse(&c, steps[i], &st);
            if (s == LT_OK) s = lt_sched_apply(&c, k, &st);
        }
        if (s != LT_OK && s != LT_ERR_NOMEM) {
            fprintf(stderr, "oom %ld: status %d: %s\n", n, (int)s, c.msg);
            failures++;
        }
        nomem += s == LT_ERR_NOMEM;
        done = s == LT_OK;
        lt_arena_free(&a);
    }
    g_countdown = -1;
    lt_set_allocator(NULL);
    CHECK(done && nomem > 0);
}

int main(void) {
    test_split_reorder_tile_fuse();
    test_peel();
    test_shape_generic();
    test_markers();
    test_cache();
    test_microkernel();
    test_roles();
    test_errors();
    test_random();
    test_format();
    test_oom();
    return test_report("test_schedule");
}
