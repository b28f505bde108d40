/* test_backend_cpu.c — the compiled path end to end on the CPU: kernels built with the Loop IR
 * builders are emitted as C (lt_lang_c), compiled with the system compiler through the CPU backend,
 * run on random data, and compared with plain C computations (and with the Loop IR interpreter).
 * Also: float16/bfloat16 conversions in the prelude against lathe's reference conversions on every
 * half bit pattern, integer ops' edge cases (x / 0, INT_MIN / -1, shifts past the width), the cache
 * (second compile is a hit in < 50 ms), the prelude library checked before it loads (a planted one
 * is never loaded), the compiler error path (message names the generated file),
 * a missing compiler, no-cache builds, thread counts, and the backend vtable.
 * Exits non-zero on failure.
 */
#define _GNU_SOURCE
#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#include "codegen/codegen.h"
#include "loop/leval.h"
#include "loop/loop.h"
#include "loop/schedule.h"

#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#define CHECK_OK(ctx, expr)                                                                        \
    do {                                                                                           \
        lt_status s_ = (expr);                                                                     \
        if (s_ != LT_OK) {                                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, (ctx)->msg);       \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static char g_cache[64];
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* [-2, 2), never all zeros */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_rng >> 40) & 0xffffff) / (float)(1 << 22) - 2.0f;
}
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- kernel builders ---- */
#define R 64
#define C 100

/* y[i, j] = max(a[i, j] + b[j], 0): i parallel, j vectorized (after a split of j by 16). */
static lt_kernel *k_bias_relu(lt_arena *ar, lt_ctx *ctx) {
    lt_kernel *k = lt_kernel_new(ar, "lt_k_bias_relu");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, R * C);
    lt_lbuf *a = lt_kernel_arg(k, "a", LT_FLOAT, R * C);
    lt_lbuf *b = lt_kernel_arg(k, "b", LT_FLOAT, C);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lnode *idx = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, C)), lt_l_var(k, j));
    lt_lnode *v = lt_l_binary(k, LT_LOP_ADD, lt_l_load(k, a, idx), lt_l_load(k, b, lt_l_var(k, j)));
    v = lt_l_binary(k, LT_LOP_MAX, v, lt_l_float(k, LT_FLOAT, 0));
    lt_lnode *inner = lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, C), LT_LOOP_SERIAL, lt_l_store(k, y, idx, v));
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, R), LT_LOOP_SERIAL, inner);
    lt_schedule s = {0};
    const char *steps[] = {"split j 16", "vectorize j.i", "parallel i"};
    for (int n = 0; n < 3; n++) CHECK_OK(ctx, lt_sstep_parse(ctx, steps[n], &s.steps[s.n++]));
    CHECK_OK(ctx, lt_sched_apply_all(ctx, k, &s));
    lt_kernel_cost(k);
    return k;
}

/* sum[i] = sum_j x[i, j] (vectorized reduction), mx[i] = max_j x[i, j] (NaN-aware, no simd),
 * rows in parallel. */
static lt_kernel *k_rowreduce(lt_arena *ar) {
    lt_kernel *k = lt_kernel_new(ar, "lt_k_rowreduce");
    lt_lbuf *sum = lt_kernel_arg(k, "sum", LT_FLOAT, R);
    lt_lbuf *mx = lt_kernel_arg(k, "max", LT_FLOAT, R); /* "max" must be mangled */
    lt_lbuf *x = lt_kernel_arg(k, "x", LT_FLOAT, R * C);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lvar *j2 = lt_kernel_var(k, "j", LT_INT64);
    lt_lvar *acc = lt_kernel_var(k, "acc", LT_FLOAT), *m = lt_kernel_var(k, "m", LT_FLOAT);
    lt_lnode *xij = lt_l_load(k, x, lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, C)), lt_l_var(k, j)));
    lt_lnode *xij2 = lt_l_load(k, x, lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, C)), lt_l_var(k, j2)));
    lt_lnode *body[] = {
        lt_l_let(k, acc, lt_l_float(k, LT_FLOAT, 0)),
        lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, C), LT_LOOP_VECTORIZED,
                 lt_l_assign(k, acc, lt_l_binary(k, LT_LOP_ADD, lt_l_var(k, acc), xij))),
        lt_l_store(k, sum, lt_l_var(k, i), lt_l_var(k, acc)),
        lt_l_let(k, m, lt_l_float(k, LT_FLOAT, -INFINITY)),
        lt_l_for(k, j2, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, C), LT_LOOP_VECTORIZED,
                 lt_l_assign(k, m, lt_l_binary(k, LT_LOP_MAX, lt_l_var(k, m), xij2))),
        lt_l_store(k, mx, lt_l_var(k, i), lt_l_var(k, m)),
    };
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, R), LT_LOOP_PARALLEL, lt_l_seq(k, 6, body));
    lt_kernel_cost(k);
    return k;
}

/* Math and control flow: y[i] = x[i] > 0 ? exp(-x) * tanh(x) : sigmoid(x) + erf(x), unrolled by 4;
 * z[i] = (double)x[i] ^ 2 via pow, in double. */
#define NM 1000
static lt_kernel *k_math(lt_arena *ar) {
    lt_kernel *k = lt_kernel_new(ar, "lt_k_math");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, NM);
    lt_lbuf *z = lt_kernel_arg(k, "z", LT_DOUBLE, NM);
    lt_lbuf *x = lt_kernel_arg(k, "x", LT_FLOAT, NM);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
    lt_lnode *xi = lt_l_load(k, x, lt_l_var(k, i));
    lt_lnode *pos = lt_l_binary(k, LT_LOP_MUL, lt_l_unary(k, LT_LOP_EXP, lt_l_unary(k, LT_LOP_NEG, xi)),
                                lt_l_unary(k, LT_LOP_TANH, xi));
    lt_lnode *neg = lt_l_binary(k, LT_LOP_ADD, lt_l_unary(k, LT_LOP_SIGMOID, xi), lt_l_unary(k, LT_LOP_ERF, xi));
    lt_lnode *sel = lt_l_select(k, lt_l_binary(k, LT_LOP_GT, xi, lt_l_float(k, LT_FLOAT, 0)), pos, neg);
    lt_lnode *xd = lt_l_cast(k, LT_DOUBLE, xi);
    lt_lnode *st[] = {
        lt_l_store(k, y, lt_l_var(k, i), sel),
        lt_l_store(k, z, lt_l_var(k, i), lt_l_binary(k, LT_LOP_POW, xd, lt_l_float(k, LT_DOUBLE, 2.0))),
    };
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, NM), LT_LOOP_UNROLLED, lt_l_seq(k, 2, st));
    k->body->ival = 4;
    lt_kernel_cost(k);
    return k;
}

/* Narrow floats: h[i] = (f16)f[i]; bf[i] = (bf16)f[i]; hd[i] = (f16)d[i]; back[i] = (float)hin[i];
 * bback[i] = (float)bin[i]. */
#define NH 65536
static lt_kernel *k_half(lt_arena *ar) {
    lt_kernel *k = lt_kernel_new(ar, "lt_k_half");
    lt_lbuf *h = lt_kernel_arg(k, "h", LT_FLOAT16, NH);
    lt_lbuf *bf = lt_kernel_arg(k, "bf", LT_BFLOAT16, NH);
    lt_lbuf *hd = lt_kernel_arg(k, "hd", LT_FLOAT16, NH);
    lt_lbuf *back = lt_kernel_arg(k, "back", LT_FLOAT, NH);
    lt_lbuf *bback = lt_kernel_arg(k, "bback", LT_FLOAT, NH);
    lt_lbuf *f = lt_kernel_arg(k, "f", LT_FLOAT, NH);
    lt_lbuf *d = lt_kernel_arg(k, "d", LT_DOUBLE, NH);
    lt_lbuf *hin = lt_kernel_arg(k, "hin", LT_FLOAT16, NH);
    lt_lbuf *bin = lt_kernel_arg(k, "bin", LT_BFLOAT16, NH);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
#define IV lt_l_var(k, i)
    lt_lnode *st[] = {
        lt_l_store(k, h, IV, lt_l_cast(k, LT_FLOAT16, lt_l_load(k, f, IV))),
        lt_l_store(k, bf, IV, lt_l_cast(k, LT_BFLOAT16, lt_l_load(k, f, IV))),
        lt_l_store(k, hd, IV, lt_l_cast(k, LT_FLOAT16, lt_l_load(k, d, IV))),
        lt_l_store(k, back, IV, lt_l_cast(k, LT_FLOAT, lt_l_load(k, hin, IV))),
        lt_l_store(k, bback, IV, lt_l_cast(k, LT_FLOAT, lt_l_load(k, bin, IV))),
    };
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, NH), LT_LOOP_PARALLEL, lt_l_seq(k, 5, st));
#undef IV
    lt_kernel_cost(k);
    return k;
}

/* Integer semantics: q = a / b, r = a % b (truncated), sh = a << s, sr = a >> s (int32),
 * p = a ** e (int64), c = (int32)x (float: truncation, saturation, NaN -> 0), u = (uint8)x. */
#define NI 16
static lt_kernel *k_ints(lt_arena *ar) {
    lt_kernel *k = lt_kernel_new(ar, "lt_k_ints");
    lt_lbuf *q = lt_kernel_arg(k, "q", LT_INT32, NI), *r = lt_kernel_arg(k, "r", LT_INT32, NI);
    lt_lbuf *sh = lt_kernel_arg(k, "sh", LT_INT32, NI), *sr = lt_kernel_arg(k, "sr", LT_INT32, NI);
    lt_lbuf *p = lt_kernel_arg(k, "p", LT_INT64, NI), *c = lt_kernel_arg(k, "c", LT_INT32, NI);
    lt_lbuf *u = lt_kernel_arg(k, "u", LT_UINT8, NI), *bo = lt_kernel_arg(k, "bo", LT_BOOL, NI);
    lt_lbuf *a = lt_kernel_arg(k, "a", LT_INT32, NI), *b = lt_kernel_arg(k, "b", LT_INT32, NI);
    lt_lbuf *s = lt_kernel_arg(k, "s", LT_INT32, NI), *x = lt_kernel_arg(k, "x", LT_FLOAT, NI);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
#define IV lt_l_var(k, i)
#define LD(B) lt_l_load(k, B, IV)
    lt_lnode *st[] = {
        lt_l_store(k, q, IV, lt_l_binary(k, LT_LOP_DIV, LD(a), LD(b))),
        lt_l_store(k, r, IV, lt_l_binary(k, LT_LOP_MOD, LD(a), LD(b))),
        lt_l_store(k, sh, IV, lt_l_binary(k, LT_LOP_SHL, LD(a), LD(s))),
        lt_l_store(k, sr, IV, lt_l_binary(k, LT_LOP_SHR, LD(a), LD(s))),
        lt_l_store(k, p, IV, lt_l_binary(k, LT_LOP_POW, lt_l_cast(k, LT_INT64, LD(a)), lt_l_cast(k, LT_INT64, LD(s)))),
        lt_l_store(k, c, IV, lt_l_cast(k, LT_INT32, LD(x))),
        lt_l_store(k, u, IV, lt_l_cast(k, LT_UINT8, LD(x))),
        lt_l_store(k, bo, IV, lt_l_binary(k, LT_LOP_XOR, lt_l_cast(k, LT_BOOL, LD(x)),
                                          lt_l_binary(k, LT_LOP_LT, LD(a), LD(b)))),
    };
#undef IV
#undef LD
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, NI), LT_LOOP_SERIAL, lt_l_seq(k, 8, st));
    lt_kernel_cost(k);
    return k;
}

/* Vectorizable float math of the prelude (vmath.h) against double-precision libm: one output per
 * op, each over its own dense sweep. */
#define NV (1 << 18)
enum { VM_EXP, VM_LOG, VM_TANH, VM_ERF, VM_SIGMOID, VM_N };
static lt_kernel *k_vmath(lt_arena *ar) {
    static const int ops[VM_N] = {LT_LOP_EXP, LT_LOP_LOG, LT_LOP_TANH, LT_LOP_ERF, LT_LOP_SIGMOID};
    lt_kernel *k = lt_kernel_new(ar, "lt_k_vmath");
    lt_lbuf *out[VM_N], *in[VM_N];
    for (int o = 0; o < VM_N; o++) out[o] = lt_kernel_arg(k, "y", LT_FLOAT, NV);
    for (int o = 0; o < VM_N; o++) in[o] = lt_kernel_arg(k, "x", LT_FLOAT, NV);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
    lt_lnode *st[VM_N];
    for (int o = 0; o < VM_N; o++)
        st[o] = lt_l_store(k, out[o], lt_l_var(k, i), lt_l_unary(k, ops[o], lt_l_load(k, in[o], lt_l_var(k, i))));
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, NV), LT_LOOP_VECTORIZED, lt_l_seq(k, VM_N, st));
    lt_kernel_cost(k);
    return k;
}

/* C[M, N] = A[M, K] B[K, N] + 0.5 through the GEMM microkernel of the prelude (gemm.h), called as
 * generated code calls it (lt_gemm_f32, flat form), then a plain loop adding `bias` (+ tag). */
#define GM 33
#define GN 40
#define GK 17
static lt_kernel *k_gemm(lt_arena *ar, const char *name, float tag) {
    lt_kernel *k = lt_kernel_new(ar, name);
    lt_lbuf *c = lt_kernel_arg(k, "C", LT_FLOAT, GM * GN);
    lt_lbuf *a = lt_kernel_arg(k, "A", LT_FLOAT, GM * GK);
    lt_lbuf *b = lt_kernel_arg(k, "B", LT_FLOAT, GK * GN);
    lt_lnode *C0 = lt_l_addr(k, c, lt_l_int(k, 0));
    int64_t iv[] = {1, 1, GM, GN, GK, GK, 0, 0, 0, GN, 0, 0, 0, GN, 0, 0, 0, 0, 0, 0, 0, 0};
    lt_lnode *args[33] = {C0, lt_l_addr(k, a, lt_l_int(k, 0)), lt_l_addr(k, b, lt_l_int(k, 0)), C0, C0, C0};
    for (int i = 0; i < 22; i++) args[6 + i] = lt_l_int(k, iv[i]);
    args[28] = lt_l_float(k, LT_FLOAT, 0), args[29] = lt_l_float(k, LT_FLOAT, 0);
    args[30] = lt_l_float(k, LT_FLOAT, 1), args[31] = lt_l_float(k, LT_FLOAT, 0), args[32] = lt_l_int(k, 0);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
    lt_lnode *st[] = {
        lt_l_eval(k, lt_l_call(k, LT_UNDEFINED, "lt_gemm_f32", 33, args)),
        lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, GM * GN), LT_LOOP_VECTORIZED,
                 lt_l_store(k, c, lt_l_var(k, i), lt_l_binary(k, LT_LOP_ADD, lt_l_load(k, c, lt_l_var(k, i)),
                                                             lt_l_float(k, LT_FLOAT, 0.5 + tag)))),
    };
    k->body = lt_l_seq(k, 2, st);
    return k;
}

/* ---- helpers ---- */
static lt_status emit_c(lt_ctx *ctx, lt_kernel **ks, int n, lt_strbuf *out) {
    lt_emit_kernel ek[8];
    for (int i = 0; i < n; i++) ek[i] = (lt_emit_kernel){ks[i], "test kernel"};
    return lt_emit_module(ctx, &lt_lang_c, ek, n, NULL, out);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* ---- tests ---- */
static void test_kernels(void) {
    lt_ctx ctx = {0};
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *ks[4] = {k_bias_relu(&ar, &ctx), k_rowreduce(&ar), k_math(&ar), k_ints(&ar)};
    lt_strbuf src = {0};
    CHECK_OK(&ctx, emit_c(&ctx, ks, 4, &src));
    if (failures) { fprintf(stderr, "%s\n", src.s ? src.s : ""); goto out; }
    CHECK(strstr(src.s, "#pragma omp parallel for") != NULL);
    CHECK(strstr(src.s, "#pragma omp simd\n") != NULL);
    CHECK(strstr(src.s, "#pragma omp simd reduction(+:acc)") != NULL);
    CHECK(strstr(src.s, "#pragma GCC unroll 4") != NULL);

    lt_cpu_options opt = {.cache_dir = g_cache};
    lt_cpu_module *m = NULL;
    CHECK_OK(&ctx, lt_cpu_compile(&ctx, src.s, &opt, &m));
    if (!m) { fprintf(stderr, "%s\n", src.s); goto out; }
    int nk = 0;
    const lt_cpu_kernel_desc *table = lt_cpu_module_kernels(m, &nk);
    CHECK(table && nk == 4 && table[4].name == NULL);
    CHECK(lt_cpu_module_kernel(m, "lt_k_math") && lt_cpu_module_kernel(m, "lt_k_math")->n_args == 3);
    CHECK(lt_cpu_module_sym(m, "lathe_set_threads") != NULL);

    /* bias + relu, with 1 and 2 threads; also against the Loop IR interpreter */
    static float y[R * C], y2[R * C], a[R * C], b[C];
    for (int i = 0; i < R * C; i++) a[i] = frand();
    for (int j = 0; j < C; j++) b[j] = frand();
    for (int t = 1; t <= 2; t++) {
        lt_cpu_module_set_threads(m, t);
        memset(y, 0xff, sizeof y);
        void *args[] = {y, a, b};
        lt_cpu_module_kernel(m, "lt_k_bias_relu")->fn(args);
        int bad = 0;
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) {
                float want = a[i * C + j] + b[j];
                want = want > 0 ? want : 0;
                bad += y[i * C + j] != want;
            }
        CHECK(bad == 0);
    }
    void *eargs[] = {y2, a, b};
    CHECK_OK(&ctx, lt_leval(&ctx, ks[0], eargs, NULL, NULL));
    CHECK(memcmp(y, y2, sizeof y) == 0);

    /* row reductions, with a NaN in one row */
    static float x[R * C], sum[R], mx[R];
    for (int i = 0; i < R * C; i++) x[i] = frand();
    x[5 * C + 17] = NAN;
    void *rargs[] = {sum, mx, x};
    lt_cpu_module_kernel(m, "lt_k_rowreduce")->fn(rargs);
    for (int i = 0; i < R; i++) {
        double s = 0;
        float want_max = -INFINITY;
        for (int j = 0; j < C; j++) {
            s += x[i * C + j];
            want_max = (x[i * C + j] > want_max || isnan(x[i * C + j]) || isnan(want_max)) ? (isnan(want_max) ? want_max : x[i * C + j]) : want_max;
        }
        if (i == 5) CHECK(isnan(sum[i]) && isnan(mx[i]));
        else CHECK(fabs(sum[i] - s) <= 1e-4 * (1 + fabs(s)) && mx[i] == want_max);
    }

    /* math: against double-precision libm */
    static float mxv[NM], my[NM];
    static double mz[NM];
    for (int i = 0; i < NM; i++) mxv[i] = 8.0f * frand();
    void *margs[] = {my, mz, mxv};
    lt_cpu_module_kernel(m, "lt_k_math")->fn(margs);
    int bad = 0;
    for (int i = 0; i < NM; i++) {
        double v = mxv[i];
        double want = v > 0 ? exp(-v) * tanh(v) : 1 / (1 + exp(-v)) + erf(v);
        bad += fabs(my[i] - want) > 1e-5 * (1 + fabs(want));
        bad += mz[i] != v * v;
    }
    CHECK(bad == 0);

    /* integer edge cases */
    int32_t ia[NI] = {7, -7, 7, -7, INT32_MIN, 5, 1, -1, 100, 3, -8, 1 << 30, 0, 9, -9, 2};
    int32_t ib[NI] = {2, 2, -2, -2, -1, 0, 3, 3, 7, 3, 3, 5, 1, -4, -4, 2};
    int32_t is[NI] = {1, 1, 31, 32, 3, 0, 40, 2, -1, 2, 1, 1, 0, 3, 3, 30};
    float ix[NI] = {1.9f, -1.9f, NAN, 3e9f, -3e9f, 300.f, -1.f, 0.5f, -0.f, 255.5f, 256.f, 1e20f, -1e20f, 2.5f, INFINITY, -INFINITY};
    int32_t q[NI], r[NI], sh[NI], sr[NI], c[NI];
    int64_t p[NI];
    uint8_t u[NI], bo[NI];
    void *iargs[] = {q, r, sh, sr, p, c, u, bo, ia, ib, is, ix};
    lt_cpu_module_kernel(m, "lt_k_ints")->fn(iargs);
    for (int i = 0; i < NI; i++) {
        int64_t A = ia[i], B = ib[i], S = is[i];
        int32_t wq = B == 0 ? 0 : B == -1 ? (int32_t)(uint32_t)(0 - (uint64_t)A) : (int32_t)(A / B);
        int32_t wr = (B == 0 || B == -1) ? 0 : (int32_t)(A % B);
        int32_t wsh = (S < 0 || S >= 32) ? 0 : (int32_t)((uint32_t)A << S);
        int32_t wsr = (S < 0 || S >= 32) ? (A < 0 ? -1 : 0) : (int32_t)(A >> S);
        int64_t wp = 1;
        if (S < 0) wp = A == 1 ? 1 : A == -1 ? ((S & 1) ? -1 : 1) : 0;
        else for (int e = 0; e < S; e++) wp = (int64_t)((uint64_t)wp * (uint64_t)A);
        double xv = ix[i];
        int64_t wi = isnan(xv) ? 0 : xv >= 9223372036854775807.0 ? INT64_MAX : xv <= -9223372036854775808.0 ? INT64_MIN : (int64_t)xv;
        bool wb = (xv != 0) != (A < B);
        if (q[i] != wq || r[i] != wr || sh[i] != wsh || sr[i] != wsr || p[i] != wp || c[i] != (int32_t)wi ||
            u[i] != (uint8_t)wi || bo[i] != wb) {
            fprintf(stderr, "ints[%d]: a=%lld b=%lld s=%lld x=%g: q %d/%d r %d/%d shl %d/%d shr %d/%d pow %lld/%lld "
                    "c %d/%d u %u/%u bool %u/%d\n", i, (long long)A, (long long)B, (long long)S, xv, q[i], wq, r[i], wr,
                    sh[i], wsh, sr[i], wsr, (long long)p[i], (long long)wp, c[i], (int32_t)wi, u[i], (uint8_t)wi, bo[i], wb);
            failures++;
        }
    }
    lt_cpu_module_free(m);
out:
    lt_sb_free(&src);
    lt_arena_free(&ar);
}

static void test_half(void) {
    lt_ctx ctx = {0};
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k = k_half(&ar);
    lt_strbuf src = {0};
    CHECK_OK(&ctx, emit_c(&ctx, &k, 1, &src));
    lt_cpu_options opt = {.cache_dir = g_cache};
    lt_cpu_module *m = NULL;
    if (src.s) CHECK_OK(&ctx, lt_cpu_compile(&ctx, src.s, &opt, &m));
    if (!m) goto out;
    uint16_t *h = malloc(NH * 2), *bf = malloc(NH * 2), *hd = malloc(NH * 2), *hin = malloc(NH * 2), *bin = malloc(NH * 2);
    float *back = malloc(NH * 4), *bback = malloc(NH * 4), *f = malloc(NH * 4);
    double *d = malloc(NH * 8);
    for (int i = 0; i < NH; i++) {
        hin[i] = bin[i] = (uint16_t)i; /* every bit pattern */
        /* float inputs: every half value, midpoints between neighbours (ties), randoms, extremes */
        float hv = lt_f16_to_f32((uint16_t)i), nx = lt_f16_to_f32((uint16_t)(i + 1));
        if (i % 3 == 0) f[i] = hv;
        else if (i % 3 == 1 && isfinite(hv) && isfinite(nx)) f[i] = hv + (nx - hv) / 2;
        else f[i] = frand() * ldexpf(1.0f, i % 40) * 1e-6f;
        d[i] = (double)f[i] + (i % 5 == 0 ? (double)f[i] * 0x1p-30 : 0.0); /* just above a tie */
    }
    f[7] = 65519.f, f[10] = 65520.f, f[13] = 1e30f, f[16] = NAN, f[19] = -INFINITY, f[22] = 5.9604645e-8f / 2;
    void *args[] = {h, bf, hd, back, bback, f, d, hin, bin};
    lt_cpu_module_kernel(m, "lt_k_half")->fn(args);
    int bad = 0;
    for (int i = 0; i < NH; i++) {
        uint16_t wh = lt_f32_to_f16(f[i]), wbf = lt_f32_to_bf16(f[i]), whd = lt_f64_to_f16(d[i]);
        float wback = lt_f16_to_f32((uint16_t)i), wbback = lt_bf16_to_f32((uint16_t)i);
        bool ok = (h[i] == wh || (isnan(f[i]) && (h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff))) && bf[i] == wbf &&
                  (hd[i] == whd || isnan(d[i])) && (memcmp(&back[i], &wback, 4) == 0 || (isnan(back[i]) && isnan(wback))) &&
                  (memcmp(&bback[i], &wbback, 4) == 0 || (isnan(bback[i]) && isnan(wbback)));
        if (!ok && bad++ < 5)
            fprintf(stderr, "half[%d]: f=%.9g h %04x/%04x bf %04x/%04x d=%.17g hd %04x/%04x back %g/%g bback %g/%g\n", i,
                    f[i], h[i], wh, bf[i], wbf, d[i], hd[i], whd, back[i], wback, bback[i], wbback);
    }
    CHECK(bad == 0);
    free(h), free(bf), free(hd), free(hin), free(bin), free(back), free(bback), free(f), free(d);
    lt_cpu_module_free(m);
out:
    lt_sb_free(&src);
    lt_arena_free(&ar);
}

static void test_vmath(void) {
    lt_ctx ctx = {0};
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k = k_vmath(&ar);
    lt_strbuf src = {0};
    CHECK_OK(&ctx, emit_c(&ctx, &k, 1, &src));
    CHECK(src.s && strstr(src.s, "lt_erf_f32(a8[" /* buffers are named by position: x[3] is argument 8 */) && strstr(src.s, "#pragma omp simd"));
    lt_cpu_options opt = {.cache_dir = g_cache};
    lt_cpu_module *m = NULL;
    if (src.s) CHECK_OK(&ctx, lt_cpu_compile(&ctx, src.s, &opt, &m));
    if (!m) goto out;
    static const double lo[VM_N] = {-110, 0, -12, -6, -100}, hi[VM_N] = {95, 0, 12, 6, 100};
    static const double tol[VM_N] = {4e-7, 4e-7, 6e-7, 1.5e-6, 6e-7};
    static const char *names[VM_N] = {"exp", "log", "tanh", "erf", "sigmoid"};
    float *buf = malloc(sizeof(float) * NV * 2 * VM_N);
    void *args[2 * VM_N];
    for (int o = 0; o < 2 * VM_N; o++) args[o] = buf + (size_t)o * NV;
    for (int o = 0; o < VM_N; o++) {
        float *x = args[VM_N + o];
        for (int i = 0; i < NV; i++) {
            if (o == VM_LOG) { /* log: every binade from subnormals up, plus a linear sweep near 1 */
                uint32_t bits = (uint32_t)((uint64_t)i * 0x7f800000u / NV);
                memcpy(&x[i], &bits, 4);
                if (i % 4 == 0) x[i] = 0.5f + (float)i / NV;
            } else {
                x[i] = (float)(lo[o] + (hi[o] - lo[o]) * i / (NV - 1));
            }
        }
        float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-30f, -1e-30f, 88.7f, 88.8f, -87.5f, 1.0f};
        for (size_t j = 0; j < sizeof special / sizeof special[0]; j++) x[j * 97] = special[j];
    }
    lt_cpu_module_kernel(m, "lt_k_vmath")->fn(args);
    for (int o = 0; o < VM_N; o++) {
        const float *x = args[VM_N + o], *y = args[o];
        double worst = 0;
        int bad = 0;
        for (int i = 0; i < NV; i++) {
            double v = x[i], w;
            switch (o) {
            case VM_EXP: w = exp(v); break;
            case VM_LOG: w = log(v); break;
            case VM_TANH: w = tanh(v); break;
            case VM_ERF: w = erf(v); break;
            default: w = 1 / (1 + exp(-v)); break;
            }
            w = (double)(float)w; /* the float reference (overflow to inf, underflow to 0 as float does) */
            double err = fabs(y[i] - w);
            bool ok = isnan(w) ? isnan(y[i]) : isinf(w) ? y[i] == w : err <= tol[o] * fabs(w) + 1.5e-45;
            if (o == VM_TANH && w == 0) ok = ok && !signbit(y[i]) == !signbit(w); /* tanh(-0) = -0 */
            if (!isnan(w) && !isinf(w) && fabs(w) > 1e-37 && err / fabs(w) > worst) worst = err / fabs(w);
            if (!ok && bad++ < 3) fprintf(stderr, "%s(%.9g) = %.9g, want %.9g\n", names[o], v, y[i], w);
        }
        printf("vmath: %-7s max relative error %.2e over %d points\n", names[o], worst, NV);
        CHECK(bad == 0);
    }
    free(buf);
    lt_cpu_module_free(m);
out:
    lt_sb_free(&src);
    lt_arena_free(&ar);
}

/* Microkernels go through the shared prelude library (built once per cache), or are compiled in
 * the module (whole_module); the results are the same. */
static void test_prelude_library(void) {
    if (!lt_prelude_find("gemm.h")) {
        printf("test_backend_cpu: gemm.h not embedded, skipping the prelude-library test\n");
        return;
    }
    lt_ctx ctx = {0};
    lt_arena ar;
    lt_arena_init(&ar);
    static float Ag[GM * GK], Bg[GK * GN], want[GM * GN], Cg[GM * GN];
    for (int i = 0; i < GM * GK; i++) Ag[i] = frand();
    for (int i = 0; i < GK * GN; i++) Bg[i] = frand();
    for (int m = 0; m < GM; m++)
        for (int n = 0; n < GN; n++) {
            double acc = 0;
            for (int q = 0; q < GK; q++) acc += (double)Ag[m * GK + q] * Bg[q * GN + n];
            want[m * GN + n] = (float)acc;
        }
    const char *lib = NULL;
    for (int variant = 0; variant < 3; variant++) {
        lt_kernel *k = k_gemm(&ar, "lt_k_gemm", (float)variant);
        lt_strbuf src = {0};
        lt_cpu_module *m = NULL;
        CHECK_OK(&ctx, emit_c(&ctx, &k, 1, &src));
        CHECK(src.s && strstr(src.s, "prelude: gemm.h") && strstr(src.s, LT_EMIT_MARK_MICROKERNELS));
        lt_cpu_options opt = {.cache_dir = g_cache, .whole_module = variant == 2};
        if (src.s) CHECK_OK(&ctx, lt_cpu_compile(&ctx, src.s, &opt, &m));
        if (m) {
            const lt_cpu_module_info *info = lt_cpu_module_get_info(m);
            if (variant < 2) {
                CHECK(info->prelude_library && access(info->prelude_library, R_OK) == 0);
                if (variant == 0 && info->prelude_library) lib = strdup(info->prelude_library);
                else CHECK(lib && info->prelude_library && strcmp(lib, info->prelude_library) == 0); /* shared */
            } else {
                CHECK(info->prelude_library == NULL);
            }
            printf("prelude library: %s compile %.2f s\n", variant == 0 ? "first module (library built)," :
                   variant == 1 ? "second module (library reused)," : "whole module (no library),",
                   info->compile_seconds);
            for (int t = 1; t <= 2; t++) {
                lt_cpu_module_set_threads(m, t);
                void *args[] = {Cg, Ag, Bg};
                memset(Cg, 0, sizeof Cg);
                lt_cpu_module_kernel(m, "lt_k_gemm")->fn(args);
                int bad = 0;
                for (int i = 0; i < GM * GN; i++) {
                    float w = want[i] + 0.5f + (float)variant;
                    bad += fabsf(Cg[i] - w) > 1e-4f * (1 + fabsf(w));
                }
                CHECK(bad == 0);
            }
        }
        lt_cpu_module_free(m);
        lt_sb_free(&src);
    }
    free((void *)lib);
    lt_arena_free(&ar);
}

static bool copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    bool ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = false;
    return ok;
}

static int open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* The shared prelude library is checked like a module before anything loads it: a planted library
 * (its constructor would write a file) behind a cached module makes that module a miss, never a
 * hit. A fake compiler that answers --version as cc does keeps the cache key and fails every
 * build, so the miss shows as an error and costs nothing. Loading and freeing (the same module twice
 * at once too) leaks no descriptor. */
static void test_prelude_library_checked(void) {
    if (!lt_prelude_find("gemm.h")) return;
    char fake[128], planted_c[128], planted_so[128], saved[128], mark[128], cmd[600];
    snprintf(fake, sizeof fake, "%s.fake-cc", g_cache);
    snprintf(planted_c, sizeof planted_c, "%s.planted.c", g_cache);
    snprintf(planted_so, sizeof planted_so, "%s.planted.so", g_cache);
    snprintf(saved, sizeof saved, "%s.saved.so", g_cache);
    snprintf(mark, sizeof mark, "%s.mark", g_cache);
    FILE *f = fopen(fake, "w");
    if (f) fputs("#!/bin/sh\nfor a; do [ \"$a\" = --version ] && exec cc --version; done\nexit 1\n", f), fclose(f);
    chmod(fake, 0755);
    f = fopen(planted_c, "w");
    if (f) {
        fprintf(f, "#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {\n"
                   "    FILE *m = fopen(\"%s\", \"w\");\n    if (m) fclose(m);\n}\n", mark);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o %s %s", planted_so, planted_c);
    CHECK(system(cmd) == 0);

    lt_ctx ctx = {0};
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k = k_gemm(&ar, "lt_k_gemm", 0.0f); /* the first module of test_prelude_library */
    lt_strbuf src = {0};
    CHECK_OK(&ctx, emit_c(&ctx, &k, 1, &src));
    lt_cpu_options opt = {.cache_dir = g_cache, .cc = fake};
    lt_cpu_module *m = NULL;
    char lib[4200] = "";
    int fds = open_fds();
    if (src.s) CHECK_OK(&ctx, lt_cpu_compile(&ctx, src.s, &opt, &m)); /* a hit: the fake compiles nothing */
    if (m) {
        const lt_cpu_module_info *info = lt_cpu_module_get_info(m);
        CHECK(info->cache_hit && info->prelude_library);
        if (info->prelude_library) snprintf(lib, sizeof lib, "%s", info->prelude_library);
        CHECK(lt_cpu_module_kernel(m, "lt_k_gemm") != NULL);
    }
    lt_cpu_module *m2 = NULL; /* the same module twice at once: one object, two descriptors */
    if (src.s) CHECK_OK(&ctx, lt_cpu_compile(&ctx, src.s, &opt, &m2));
    CHECK(m2 && lt_cpu_module_kernel(m2, "lt_k_gemm") != NULL);
    lt_cpu_module_free(m);
    lt_cpu_module_free(m2);
    m = NULL;
    CHECK(open_fds() == fds);
    if (lib[0] && src.s && copy_file(lib, saved) && copy_file(planted_so, lib)) {
        lt_ctx pc = {0};
        CHECK(lt_cpu_compile(&pc, src.s, &opt, &m) == LT_ERR_INTERNAL && m == NULL); /* a miss the fake fails */
        CHECK(access(mark, F_OK) != 0);                                            /* never loaded */
        CHECK(copy_file(saved, lib));
        CHECK_OK(&ctx, lt_cpu_compile(&ctx, src.s, &opt, &m)); /* the real library: a hit again */
        CHECK(m && lt_cpu_module_get_info(m)->cache_hit);
        lt_cpu_module_free(m);
        CHECK(open_fds() == fds);
    } else {
        CHECK(!"could not swap the prelude library");
    }
    unlink(fake), unlink(planted_c), unlink(planted_so), unlink(saved), unlink(mark);
    lt_sb_free(&src);
    lt_arena_free(&ar);
}

static void test_cache_and_errors(void) {
    lt_ctx ctx = {0};
    const char *src = "/* cache test */\nint lathe_answer(void) { return 42; }\n";
    lt_cpu_options opt = {.cache_dir = g_cache};
    lt_cpu_module *m1 = NULL, *m2 = NULL;
    CHECK_OK(&ctx, lt_cpu_compile(&ctx, src, &opt, &m1));
    double t0 = now_s();
    CHECK_OK(&ctx, lt_cpu_compile(&ctx, src, &opt, &m2));
    double hit_s = now_s() - t0;
    if (m1 && m2) {
        const lt_cpu_module_info *i1 = lt_cpu_module_get_info(m1), *i2 = lt_cpu_module_get_info(m2);
        CHECK(!i1->cache_hit && i2->cache_hit);
        CHECK(strcmp(i1->key, i2->key) == 0 && strlen(i1->key) == 64);
        CHECK(access(i1->so_path, R_OK) == 0 && access(i1->source_path, R_OK) == 0);
        int (*answer)(void) = (int (*)(void))lt_cpu_module_sym(m2, "lathe_answer");
        CHECK(answer && answer() == 42);
        CHECK(lt_cpu_module_kernels(m2, NULL) == NULL);
        printf("cache: cold compile %.1f ms, hit %.2f ms\n", 1e3 * i1->compile_seconds, 1e3 * hit_s);
        CHECK(hit_s < 0.050);
    }
    lt_cpu_module_free(m1);
    lt_cpu_module_free(m2);

    /* different flags: a different key */
    lt_cpu_options opt2 = {.cache_dir = g_cache, .extra_flags = "-DLATHE_TEST_FLAG=1"};
    CHECK_OK(&ctx, lt_cpu_compile(&ctx, src, &opt2, &m1));
    if (m1) CHECK(!lt_cpu_module_get_info(m1)->cache_hit);
    lt_cpu_module_free(m1);
    m1 = NULL;

    /* a compiler error names the generated file and quotes the compiler */
    lt_ctx ec = {0};
    const char *broken = "int lathe_broken(void) { return undeclared_thing + ; }\n";
    CHECK(lt_cpu_compile(&ec, broken, &opt, &m1) == LT_ERR_INTERNAL && m1 == NULL);
    CHECK(strstr(ec.msg, g_cache) != NULL && strstr(ec.msg, ".c") != NULL);
    CHECK(strstr(ec.msg, "error") != NULL && strstr(ec.msg, "undeclared_thing") != NULL);
    char path[512];
    const char *p = strstr(ec.msg, g_cache);
    if (p) {
        snprintf(path, sizeof path, "%.*s", (int)strcspn(p, " :\n"), p);
        CHECK(access(path, R_OK) == 0); /* the file the message names exists */
    }

    /* a compiler that does not exist */
    lt_ctx mc = {0};
    lt_cpu_options bad = {.cc = "/nonexistent/lathe-cc", .cache_dir = g_cache};
    CHECK(lt_cpu_compile(&mc, src, &bad, &m1) == LT_ERR_UNSUPPORTED && strstr(mc.msg, "/nonexistent/lathe-cc"));

    /* no cache directory: builds in a private temporary directory and leaves nothing */
    lt_cpu_options none = {0};
    CHECK_OK(&ctx, lt_cpu_compile(&ctx, src, &none, &m1));
    if (m1) {
        CHECK(!lt_cpu_module_get_info(m1)->cache_hit && lt_cpu_module_get_info(m1)->so_path == NULL);
        int (*answer)(void) = (int (*)(void))lt_cpu_module_sym(m1, "lathe_answer");
        CHECK(answer && answer() == 42);
    }
    lt_cpu_module_free(m1);
}

static void test_vtable(void) {
    lt_ctx ctx = {0};
    lt_backend *be = NULL;
    lt_backend_options bo = {.cache_dir = g_cache, .threads = 2};
    CHECK(lt_backend_find("cpu") == &lt_backend_cpu && lt_backend_find("tpu") == NULL);
    lt_ctx uc = {0};
    CHECK(lt_backend_create(&uc, "tpu", &bo, &be) == LT_ERR_UNSUPPORTED && strstr(uc.msg, "cpu"));
    CHECK_OK(&ctx, lt_backend_create(&ctx, "cpu", &bo, &be));
    if (!be) return;
    const lt_backend_vtbl *vt = be->vt;
    CHECK(vt->lang == &lt_lang_c);
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k = k_bias_relu(&ar, &ctx);
    lt_strbuf src = {0};
    lt_bmodule *mod = NULL;
    lt_bkernel *kern = NULL;
    CHECK_OK(&ctx, emit_c(&ctx, &k, 1, &src));
    if (src.s) CHECK_OK(&ctx, vt->compile(be, &ctx, src.s, &mod));
    if (mod) {
        CHECK_OK(&ctx, vt->load(be, &ctx, mod, "lt_k_bias_relu", &kern));
        lt_ctx lc = {0};
        lt_bkernel *none = NULL;
        CHECK(vt->load(be, &lc, mod, "nope", &none) == LT_ERR_INVALID && none == NULL && strstr(lc.msg, "nope"));
    }
    if (kern) {
        float *dy = NULL, *da = NULL, *db = NULL;
        static float a[R * C], b[C], y[R * C];
        for (int i = 0; i < R * C; i++) a[i] = frand();
        for (int j = 0; j < C; j++) b[j] = frand();
        CHECK_OK(&ctx, vt->alloc(be, &ctx, sizeof y, (void **)&dy));
        CHECK_OK(&ctx, vt->alloc(be, &ctx, sizeof a, (void **)&da));
        CHECK_OK(&ctx, vt->alloc(be, &ctx, sizeof b, (void **)&db));
        if (dy && da && db) {
            CHECK(((uintptr_t)dy & 63) == 0);
            CHECK_OK(&ctx, vt->copy(be, &ctx, da, a, sizeof a, LT_COPY_HOST_TO_DEVICE));
            CHECK_OK(&ctx, vt->copy(be, &ctx, db, b, sizeof b, LT_COPY_HOST_TO_DEVICE));
            void *args[] = {dy, da, db};
            CHECK_OK(&ctx, vt->launch(be, &ctx, kern, args, 3));
            lt_ctx lc = {0};
            CHECK(vt->launch(be, &lc, kern, args, 2) == LT_ERR_USAGE && strstr(lc.msg, "lt_k_bias_relu"));
            CHECK_OK(&ctx, vt->sync(be, &ctx));
            CHECK_OK(&ctx, vt->copy(be, &ctx, y, dy, sizeof y, LT_COPY_DEVICE_TO_HOST));
            int bad = 0;
            for (int i = 0; i < R * C; i++) {
                float w = a[i] + b[i % C];
                bad += y[i] != (w > 0 ? w : 0);
            }
            CHECK(bad == 0);
        }
        vt->free(be, dy), vt->free(be, da), vt->free(be, db);
    }
    if (mod) vt->module_free(be, mod);
    /* ceilings: measured once (the profiler's numbers), then kept */
    lt_backend_ceilings c1 = {0}, c2 = {0};
    CHECK_OK(&ctx, vt->ceilings(be, &ctx, &c1));
    CHECK(c1.peak_gflops > 1 && c1.mem_gbps > 1);
    double t0 = now_s();
    CHECK_OK(&ctx, vt->ceilings(be, &ctx, &c2));
    CHECK(now_s() - t0 < 0.01 && c2.peak_gflops == c1.peak_gflops && c2.mem_gbps == c1.mem_gbps);
    printf("ceilings: %.1f GFLOP/s, %.1f GB/s (2 threads)\n", c1.peak_gflops, c1.mem_gbps);
    lt_sb_free(&src);
    lt_arena_free(&ar);
    lt_backend_destroy(be);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_backend_cpu: timed out after 600 s (a compile or a measurement hung)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(1);
    _exit(1);
}

int main(void) {
    signal(SIGALRM, on_alarm); /* a hang fails the test instead of stalling the suite */
    alarm(600);
    snprintf(g_cache, sizeof g_cache, "/tmp/lathe-test-cpu-XXXXXX");
    if (!mkdtemp(g_cache)) {
        perror("mkdtemp");
        return 1;
    }
    test_kernels();
    test_half();
    test_vmath();
    test_prelude_library();
    test_prelude_library_checked();
    test_cache_and_errors();
    test_vtable();
    nftw(g_cache, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    if (failures) {
        fprintf(stderr, "test_backend_cpu: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_backend_cpu: all passed\n");
    return 0;
}
