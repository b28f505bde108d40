/* test_loop.c — unit tests of the Loop IR core (src/loop/loop.c, simplify.c, hoist.c, leval.c): builder type
 * rules, the node table, walk / mutate / substitute (same pointer when unchanged), the printer
 * (exact text), the simplifier (before/after text), static cost, the verifier, the interpreter on
 * random data, and out-of-memory behaviour of the builders. Exits non-zero on the first failure. */
#include "codegen/prelude/core.h" /* lt_divu31, the generated code's own */
#include "loop/leval.h"
#include "loop/loop.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_text(const char *got, const char *want, int line) {
    if (!got || strcmp(got, want)) {
        fprintf(stderr, "%s:%d: text mismatch\n--- got:\n%s\n--- want:\n%s\n", __FILE__, line, got ? got : "(null)", want);
        failures++;
    }
}

/* Printed form of a node / kernel (static buffer, valid until the next call). */
static const char *pn(const lt_lnode *n) {
    static char out[8192];
    lt_strbuf sb = {0};
    lt_lprint(n, &sb, 0);
    snprintf(out, sizeof out, "%s", sb.s ? sb.s : "");
    lt_sb_free(&sb);
    return out;
}
static const char *pk(const lt_kernel *k) {
    static char out[8192];
    lt_strbuf sb = {0};
    lt_kernel_print(k, &sb);
    snprintf(out, sizeof out, "%s", sb.s ? sb.s : "");
    lt_sb_free(&sb);
    return out;
}
#define CHECK_TEXT(got, want) check_text(got, want, __LINE__)

static uint64_t rng = 88172645463325252ull;
static double frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* C[i*100 + j] = A[i*100 + j] + B[i*100 + j] over [64, 100] */
static lt_kernel *build_add(lt_arena *a) {
    lt_kernel *k = lt_kernel_new(a, "add");
    if (!k) return NULL;
    lt_lbuf *C = lt_kernel_arg(k, "C", LT_FLOAT, 6400), *A = lt_kernel_arg(k, "A", LT_FLOAT, 6400),
            *B = lt_kernel_arg(k, "B", LT_FLOAT, 6400);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lnode *idx = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, 100)), lt_l_var(k, j));
    lt_lnode *st = lt_l_store(k, C, idx, lt_l_add(k, lt_l_load(k, A, idx), lt_l_load(k, B, idx)));
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 64), LT_LOOP_SERIAL,
                       lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 100), LT_LOOP_SERIAL, st));
    return k->body ? k : NULL;
}

static void test_types(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = lt_kernel_new(&a, "t");
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *i2 = lt_kernel_var(k, "i", LT_INT64);
    CHECK(!strcmp(i->name, "i") && !strcmp(i2->name, "i_1") && i2->id == 1);
    lt_lbuf *X = lt_kernel_arg(k, "X", LT_FLOAT, 10), *Y = lt_kernel_arg(k, "i", LT_INT32, 10);
    CHECK(!strcmp(Y->name, "i_2") && Y->arg == 1 && X->arg == 0 && k->n_args == 2);
    CHECK(lt_kernel_find_buf(k, "X") == X && lt_kernel_find_var(k, "i_1") == i2 && !lt_kernel_find_var(k, "q"));
    lt_lnode *iv = lt_l_var(k, i), *x = lt_l_load(k, X, iv), *y = lt_l_load(k, Y, iv);
    CHECK(lt_l_int(k, 3)->dtype == LT_INT64);
    CHECK(lt_l_add(k, iv, lt_l_int(k, 1))->dtype == LT_INT64);
    CHECK(lt_l_binary(k, LT_LOP_LT, x, x)->dtype == LT_BOOL);
    CHECK(lt_l_binary(k, LT_LOP_AND, lt_l_binary(k, LT_LOP_LT, x, x), lt_l_binary(k, LT_LOP_GT, x, x))->dtype == LT_BOOL);
    CHECK(lt_l_unary(k, LT_LOP_ISNAN, x)->dtype == LT_BOOL && lt_l_unary(k, LT_LOP_EXP, x)->dtype == LT_FLOAT);
    /* immediates adapt to the other side */
    lt_lnode *xf = lt_l_mul(k, x, lt_l_int(k, 2));
    CHECK(xf->dtype == LT_FLOAT && xf->kids[1]->kind == LT_L_FLOAT && xf->kids[1]->fval == 2);
    CHECK(lt_l_add(k, y, lt_l_int(k, 2))->dtype == LT_INT32);
    /* mixed types: UNDEFINED (not NULL), reported by the verifier naming the node */
    lt_lnode *bad = lt_l_add(k, x, y);
    CHECK(bad && bad->dtype == LT_UNDEFINED);
    CHECK(lt_l_add(k, x, lt_l_cast(k, LT_FLOAT, y))->dtype == LT_FLOAT);
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 10), LT_LOOP_SERIAL, lt_l_store(k, X, iv, bad));
    lt_ctx c = {0};
    CHECK(lt_kernel_verify(&c, k) == LT_ERR_INTERNAL && strstr(c.msg, "X[i] + i_2[i]") && strstr(c.msg, "dtypes"));
    /* NULL children propagate */
    CHECK(!lt_l_add(k, NULL, iv) && !lt_l_store(k, X, NULL, x) && !lt_l_for(k, i, LT_ROLE_NONE, iv, iv, LT_LOOP_SERIAL, NULL));
    /* node table */
    CHECK(!strcmp(lt_lnode_info_get(LT_L_FOR)->name, "FOR") && lt_lnode_info_get(LT_L_FOR)->is_stmt);
    CHECK(!lt_lnode_info_get(LT_L_LOAD)->is_stmt && lt_lnode_info_get(LT_L_SELECT)->n_fixed_kids == 3);
    CHECK(lt_lnode_info_get(LT_L_CALL)->n_fixed_kids == -1 && lt_lnode_info_get(LT_L_COUNT)->name[0] == '?');
    CHECK(!strcmp(lt_lop_name(LT_LOP_SIGMOID), "sigmoid") && !strcmp(lt_lop_name(LT_LOP_NE), "ne"));
    CHECK(lt_lop_is_binary(LT_LOP_ADD) && !lt_lop_is_binary(LT_LOP_SIGN));
    CHECK(!strcmp(lt_loop_kind_name(LT_LOOP_GPU_THREAD), "gpu_thread"));
    lt_arena_free(&a);
}

static void test_print(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_add(&a);
    CHECK_TEXT(pk(k), "kernel add(out float C[6400], in float A[6400], in float B[6400]):\n"
                      "  for i in [0, 64):\n"
                      "    for j in [0, 100):\n"
                      "      C[i*100 + j] = A[i*100 + j] + B[i*100 + j]\n");
    lt_lvar *i = k->vars[0], *j = k->vars[1], *t = lt_kernel_var(k, "t", LT_FLOAT);
    lt_lbuf *A = k->args[1], *L = lt_kernel_local(k, "acc", LT_FLOAT, 16, LT_SCOPE_LOCAL);
    lt_lnode *iv = lt_l_var(k, i), *jv = lt_l_var(k, j);
    /* precedence */
    CHECK_TEXT(pn(lt_l_mul(k, lt_l_add(k, iv, jv), lt_l_int(k, 3))), "(i + j)*3");
    CHECK_TEXT(pn(lt_l_binary(k, LT_LOP_SUB, iv, lt_l_binary(k, LT_LOP_SUB, jv, iv))), "i - (j - i)");
    CHECK_TEXT(pn(lt_l_binary(k, LT_LOP_SUB, lt_l_binary(k, LT_LOP_SUB, iv, jv), iv)), "i - j - i");
    CHECK_TEXT(pn(lt_l_binary(k, LT_LOP_DIV, iv, lt_l_mul(k, jv, lt_l_int(k, 2)))), "i/(j*2)");
    CHECK_TEXT(pn(lt_l_unary(k, LT_LOP_NEG, lt_l_add(k, iv, lt_l_int(k, -1)))), "-(i + -1)");
    lt_lnode *ld = lt_l_load(k, A, iv);
    CHECK_TEXT(pn(lt_l_select(k, lt_l_binary(k, LT_LOP_LT, iv, jv), ld, lt_l_float(k, LT_FLOAT, 0.5))),
               "i < j ? A[i] : 0.5f");
    CHECK_TEXT(pn(lt_l_binary(k, LT_LOP_MAX, lt_l_unary(k, LT_LOP_EXP, ld), lt_l_float(k, LT_FLOAT, 1))),
               "max(exp(A[i]), 1.0f)");
    CHECK_TEXT(pn(lt_l_cast(k, LT_INT32, lt_l_float(k, LT_DOUBLE, 2.25))), "int32(2.25)");
    lt_lnode *args[2] = {lt_l_addr(k, A, iv), jv};
    CHECK_TEXT(pn(lt_l_call(k, LT_UNDEFINED, "f", 2, args)), "f(&A[i], j)");
    /* statements: kinds, if/else, alloc, let/assign, eval, barrier, nop */
    lt_lnode *store = lt_l_store(k, L, jv, lt_l_var(k, t));
    lt_lnode *body[5] = {lt_l_let(k, t, lt_l_float(k, LT_FLOAT, 0)), lt_l_assign(k, t, lt_l_add(k, lt_l_var(k, t), ld)),
                         lt_l_if(k, lt_l_binary(k, LT_LOP_EQ, jv, lt_l_int(k, 0)), store, lt_l_empty(k)),
                         lt_l_eval(k, lt_l_call(k, LT_UNDEFINED, "g", 0, NULL)), lt_l_barrier(k)};
    lt_lnode *vec = lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 16), LT_LOOP_VECTORIZED, lt_l_seq(k, 5, body));
    vec->ival = 16;
    lt_lnode *par = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 64), LT_LOOP_PARALLEL, lt_l_alloc(k, L, vec));
    CHECK_TEXT(pn(par), "parallel for i in [0, 64):\n"
                        "  alloc local float acc[16]:\n"
                        "    vectorized(16) for j in [0, 16):\n"
                        "      let float t = 0.0f\n"
                        "      t = t + A[i]\n"
                        "      if j == 0:\n"
                        "        acc[j] = t\n"
                        "      else:\n"
                        "        nop\n"
                        "      eval g()\n"
                        "      barrier\n");
    lt_lnode *un = lt_l_for(k, j, LT_ROLE_NONE, iv, lt_l_int(k, 4), LT_LOOP_UNROLLED, lt_l_empty(k));
    un->ival = 4;
    CHECK_TEXT(pn(un), "unrolled(4) for j in [i, i + 4):\n  nop\n");
    lt_lnode *bl = lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 2), lt_l_int(k, 4), LT_LOOP_GPU_BLOCK, lt_l_empty(k));
    bl->ival = 1;
    CHECK_TEXT(pn(bl), "block.y for j in [2, 6):\n  nop\n");
    lt_arena_free(&a);
}

static bool count_fn(const lt_lnode *n, void *u) {
    (*(int *)u)++;
    return n->kind != LT_L_STORE; /* skip the store's children */
}

static lt_lnode *id_fn(lt_kernel *k, lt_lnode *n, void *u) {
    (void)k, (void)u;
    return n;
}

static void test_traverse(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_add(&a);
    int count = 0;
    lt_lwalk(k->body, count_fn, &count);
    CHECK(count == 7); /* FOR, INT, INT, FOR, INT, INT, STORE (its children skipped) */
    CHECK(lt_lmutate(k, k->body, id_fn, NULL) == k->body);
    lt_lvar *other = lt_kernel_var(k, "z", LT_INT64);
    CHECK(lt_lsubstitute(k, k->body, other, lt_l_int(k, 5)) == k->body);
    lt_lnode *inner = k->body->kids[2];
    lt_lnode *s = lt_lsubstitute(k, inner, k->vars[0], lt_l_int(k, 7));
    CHECK(s != inner && inner->kids[2]->kids[0]->kids[0]->kind == LT_L_BINARY); /* original untouched */
    CHECK_TEXT(pn(s), "for j in [0, 100):\n  C[7*100 + j] = A[7*100 + j] + B[7*100 + j]\n");
    CHECK_TEXT(pn(lt_lsimplify(k, s)), "for j in [0, 100):\n  C[j + 700] = A[j + 700] + B[j + 700]\n");
    /* lreplace and structural queries */
    lt_lnode *r = lt_lreplace(k, k->body, inner, lt_l_empty(k));
    CHECK_TEXT(pn(r), "for i in [0, 64):\n  nop\n");
    CHECK(lt_lequal(k->body, build_add(&a)->body) == false); /* different variables */
    CHECK(lt_lequal(inner->kids[2]->kids[0], inner->kids[2]->kids[1]->kids[0]->kids[0]));
    CHECK(lt_luses_var(inner, k->vars[0]) && !lt_luses_var(inner, other));
    /* a deeply shared DAG (2^40 paths) is rewritten in linear time and stays shared */
    lt_lvar *x = lt_kernel_var(k, "x", LT_INT64);
    lt_lnode *e = lt_l_var(k, x);
    for (int d = 0; d < 40; d++) e = lt_l_binary(k, LT_LOP_MAX, e, e);
    lt_lnode *e2 = lt_lsubstitute(k, e, x, lt_l_var(k, other));
    CHECK(e2 && e2 != e && e2->kids[0] == e2->kids[1]);
    const lt_lnode *leaf = e2;
    while (leaf && leaf->kind == LT_L_BINARY) leaf = leaf->kids[0];
    CHECK(leaf && leaf->kind == LT_L_VAR && leaf->var == other);
    lt_lnode *e3 = lt_lsimplify(k, e2);
    CHECK(e3 && e3->kind == LT_L_VAR && e3->var == other); /* max(x, x) = x, 40 times */
    e = lt_l_var(k, x);
    for (int d = 0; d < 40; d++) e = lt_l_add(k, e, e);
    CHECK_TEXT(pn(lt_lsimplify(k, e)), "x*1099511627776");
    lt_lnode *parent = NULL;
    CHECK(lt_lfind_loop(k->body, "j", &parent) == inner && parent == k->body && !lt_lfind_loop(k->body, "x", NULL));
    lt_arena_free(&a);
}

static void simp_case(lt_kernel *k, lt_lnode *n, const char *want, int line) {
    lt_lnode *s = lt_lsimplify(k, n);
    check_text(s ? pn(s) : NULL, want, line);
    if (s && lt_lsimplify(k, s) != s) { /* idempotent: a second run changes nothing */
        fprintf(stderr, "%s:%d: simplify not idempotent on %s\n", __FILE__, line, want);
        failures++;
    }
}
#define SIMP(n, want) simp_case(k, n, want, __LINE__)

static void test_simplify(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = lt_kernel_new(&a, "s");
    lt_lvar *xv = lt_kernel_var(k, "x", LT_INT64), *yv = lt_kernel_var(k, "y", LT_INT64), *fvv = lt_kernel_var(k, "f", LT_FLOAT);
    lt_lbuf *A = lt_kernel_arg(k, "A", LT_FLOAT, 100);
#define X lt_l_var(k, xv)
#define Y lt_l_var(k, yv)
#define F lt_l_var(k, fvv)
#define I(v) lt_l_int(k, v)
#define B(op, p, q) lt_l_binary(k, LT_LOP_##op, p, q)
    SIMP(B(ADD, I(2), B(MUL, I(3), I(4))), "14");
    SIMP(B(ADD, X, I(0)), "x");
    SIMP(B(ADD, I(0), X), "x");
    SIMP(B(SUB, X, I(0)), "x");
    SIMP(B(MUL, X, I(1)), "x");
    SIMP(B(MUL, I(0), X), "0");
    SIMP(B(DIV, X, I(1)), "x");
    SIMP(B(MOD, X, I(1)), "0");
    SIMP(B(MUL, B(MUL, X, I(4)), I(8)), "x*32");
    SIMP(B(ADD, B(ADD, X, I(3)), I(5)), "x + 8");
    SIMP(B(ADD, B(ADD, I(3), X), B(SUB, Y, I(3))), "x + y");
    SIMP(B(MUL, B(ADD, X, I(2)), I(10)), "x*10 + 20");
    SIMP(B(SUB, B(ADD, X, Y), X), "y");
    SIMP(B(ADD, B(MUL, B(DIV, X, I(30)), I(30)), B(MOD, X, I(30))), "x");
    SIMP(B(ADD, Y, B(ADD, B(MUL, B(DIV, X, I(30)), I(60)), B(MUL, B(MOD, X, I(30)), I(2)))), "y + x*2");
    SIMP(B(DIV, B(MUL, X, I(8)), I(4)), "x*2");
    SIMP(B(MOD, B(ADD, B(MUL, X, I(8)), I(16)), I(4)), "0");
    SIMP(B(DIV, B(ADD, X, I(8)), I(4)), "(x + 8)/4"); /* not exact: kept */
    SIMP(B(MIN, I(3), I(5)), "3");
    SIMP(B(MAX, X, X), "x");
    SIMP(B(MIN, B(MIN, X, I(7)), I(5)), "min(x, 5)");
    SIMP(B(DIV, I(7), I(0)), "7/0"); /* division by zero is left for the runtime */
    SIMP(B(LT, I(3), I(4)), "true");
    SIMP(B(AND, B(LT, X, Y), B(LT, I(1), I(2))), "x < y");
    SIMP(B(MUL, lt_l_float(k, LT_FLOAT, 1.5), lt_l_float(k, LT_FLOAT, 2)), "3.0f");
    SIMP(B(MUL, F, lt_l_float(k, LT_FLOAT, 1)), "f");
    SIMP(B(ADD, F, lt_l_float(k, LT_FLOAT, 0)), "f + 0.0f"); /* -0 + 0 = +0: kept */
    SIMP(B(MUL, F, lt_l_float(k, LT_FLOAT, 0)), "f*0.0f");   /* nan*0 = nan: kept */
    SIMP(lt_l_select(k, B(LT, I(1), I(0)), F, lt_l_float(k, LT_FLOAT, 2)), "2.0f");
    SIMP(lt_l_cast(k, LT_FLOAT, I(3)), "3.0f");
    SIMP(lt_l_cast(k, LT_INT64, X), "x");
    SIMP(lt_l_unary(k, LT_LOP_NEG, lt_l_unary(k, LT_LOP_NEG, X)), "x");
    /* statements */
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lnode *st = lt_l_store(k, A, B(ADD, B(MUL, lt_l_var(k, i), I(10)), lt_l_var(k, j)), F);
    SIMP(lt_l_for(k, i, LT_ROLE_NONE, I(3), I(1), LT_LOOP_SERIAL, lt_l_for(k, j, LT_ROLE_NONE, I(0), I(10), LT_LOOP_SERIAL, st)),
         "for j in [0, 10):\n  A[j + 30] = f\n");
    SIMP(lt_l_for(k, i, LT_ROLE_NONE, I(0), I(0), LT_LOOP_SERIAL, st), "nop\n");
    lt_lnode *e = lt_l_empty(k);
    lt_lnode *inner[3] = {e, st, e}, *inner_seq = lt_l_seq(k, 3, inner);
    lt_lnode *outer[3] = {inner_seq, lt_l_seq(k, 0, NULL), st};
    SIMP(lt_l_seq(k, 3, outer), "A[i*10 + j] = f\nA[i*10 + j] = f\n");
    SIMP(lt_l_seq(k, 1, inner + 1), "A[i*10 + j] = f\n");
    SIMP(lt_l_if(k, B(LT, I(1), I(2)), st, e), "A[i*10 + j] = f\n");
    SIMP(lt_l_if(k, B(GT, I(1), I(2)), st, NULL), "nop\n");
    SIMP(lt_l_if(k, B(LT, X, Y), st, e), "if x < y:\n  A[i*10 + j] = f\n");
    SIMP(lt_l_for(k, i, LT_ROLE_NONE, I(0), I(4), LT_LOOP_SERIAL, e), "nop\n");
    /* unchanged trees keep their pointer */
    lt_lnode *kept = lt_l_for(k, i, LT_ROLE_NONE, I(0), I(4), LT_LOOP_PARALLEL, st);
    CHECK(lt_lsimplify(k, kept) == kept);
    lt_arena_free(&a);
}

static void test_cost_verify(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_add(&a);
    lt_kernel_cost(k);
    CHECK(k->flops == 6400 && k->bytes == 6400.0 * 3 * 4);
    lt_ctx c = {0};
    CHECK(lt_kernel_verify(&c, k) == LT_OK);
    /* triangular loop: for i in [0, 10): for j in [0, min(i + 1, 4)): the inner extent's upper bound is 4 */
    lt_kernel *t = lt_kernel_new(&a, "tri");
    lt_lbuf *O = lt_kernel_arg(t, "O", LT_DOUBLE, 100), *In = lt_kernel_arg(t, "In", LT_DOUBLE, 100);
    lt_lvar *i = lt_kernel_var(t, "i", LT_INT64), *j = lt_kernel_var(t, "j", LT_INT64), *n = lt_kernel_var(t, "n", LT_INT64);
    lt_lnode *idx = lt_l_add(t, lt_l_mul(t, lt_l_var(t, i), lt_l_int(t, 10)), lt_l_var(t, j));
    lt_lnode *st = lt_l_store(t, O, idx, lt_l_unary(t, LT_LOP_EXP, lt_l_load(t, In, idx)));
    lt_lnode *ext = lt_l_binary(t, LT_LOP_MIN, lt_l_add(t, lt_l_var(t, i), lt_l_int(t, 1)), lt_l_int(t, 4));
    t->body = lt_l_for(t, i, LT_ROLE_NONE, lt_l_int(t, 0), lt_l_int(t, 10), LT_LOOP_SERIAL, lt_l_for(t, j, LT_ROLE_NONE, lt_l_int(t, 0), ext, LT_LOOP_SERIAL, st));
    lt_kernel_cost(t);
    CHECK(t->flops == 10 * 4 && t->bytes == 10 * 4 * 16);
    CHECK(lt_kernel_verify(&c, t) == LT_OK);
    /* an unknown extent counts 1 trip */
    lt_kernel *u = lt_kernel_new(&a, "unk");
    lt_lbuf *U = lt_kernel_arg(u, "U", LT_FLOAT, 8);
    lt_lvar *q = lt_kernel_var(u, "q", LT_INT64), *m = lt_kernel_var(u, "m", LT_INT64);
    lt_lnode *body[2] = {lt_l_let(u, m, lt_l_cast(u, LT_INT64, lt_l_load(u, U, lt_l_int(u, 0)))),
                         lt_l_for(u, q, LT_ROLE_NONE, lt_l_int(u, 0), lt_l_var(u, m), LT_LOOP_SERIAL,
                                  lt_l_store(u, U, lt_l_var(u, q), lt_l_float(u, LT_FLOAT, 1)))};
    u->body = lt_l_seq(u, 2, body);
    lt_kernel_cost(u);
    CHECK(u->flops == 0 && u->bytes == 8);
    CHECK(lt_kernel_verify(&c, u) == LT_OK);
    /* a microkernel call's recorded cost is the whole operation's: inside a serial loop it counts
     * per trip, inside GPU block / thread loops (every thread calls the tile entry) once */
    lt_kernel *g = lt_kernel_new(&a, "gpu");
    lt_lvar *bx = lt_kernel_var(g, "bx", LT_INT64), *tx = lt_kernel_var(g, "tx", LT_INT64), *s = lt_kernel_var(g, "s", LT_INT64);
    lt_lnode *call = lt_l_call(g, LT_UNDEFINED, "lt_tile", 0, NULL);
    CHECK(call != NULL);
    if (call) {
        call->fval = 1000, call->ival = 64;
        g->body = lt_l_for(g, bx, LT_ROLE_NONE, lt_l_int(g, 0), lt_l_int(g, 40), LT_LOOP_GPU_BLOCK,
                           lt_l_for(g, tx, LT_ROLE_NONE, lt_l_int(g, 0), lt_l_int(g, 128), LT_LOOP_GPU_THREAD, call));
        lt_kernel_cost(g);
        CHECK(g->flops == 1000 && g->bytes == 64);
        g->body = lt_l_for(g, s, LT_ROLE_NONE, lt_l_int(g, 0), lt_l_int(g, 3), LT_LOOP_SERIAL, call);
        lt_kernel_cost(g);
        CHECK(g->flops == 3000 && g->bytes == 192);
    }
    /* verifier failures name the node */
    t->body = lt_l_store(t, O, lt_l_var(t, n), lt_l_float(t, LT_DOUBLE, 1));
    CHECK(lt_kernel_verify(&c, t) == LT_ERR_INTERNAL && strstr(c.msg, "VAR node n") && strstr(c.msg, "out of scope"));
    lt_ctx_clear(&c);
    lt_lbuf *loc = lt_kernel_local(t, "tmp", LT_DOUBLE, 4, LT_SCOPE_LOCAL);
    t->body = lt_l_store(t, loc, lt_l_int(t, 0), lt_l_float(t, LT_DOUBLE, 1));
    CHECK(lt_kernel_verify(&c, t) == LT_ERR_INTERNAL && strstr(c.msg, "tmp[0]") && strstr(c.msg, "allocated"));
    lt_ctx_clear(&c);
    t->body = lt_l_alloc(t, loc, t->body);
    CHECK(lt_kernel_verify(&c, t) == LT_OK);
    t->body = lt_l_store(t, O, lt_l_int(t, 0), lt_l_cast(t, LT_FLOAT, lt_l_float(t, LT_DOUBLE, 1)));
    CHECK(lt_kernel_verify(&c, t) == LT_ERR_INTERNAL && strstr(c.msg, "wrong dtype"));
    lt_arena_free(&a);
}

static void test_leval(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_add(&a);
    float *A = malloc(6400 * 4), *B = malloc(6400 * 4), *C = malloc(6400 * 4);
    for (int i = 0; i < 6400; i++) A[i] = (float)frand(), B[i] = (float)frand(), C[i] = 0;
    void *args[3] = {C, A, B};
    lt_ctx c = {0};
    CHECK(lt_leval(&c, k, args, NULL, NULL) == LT_OK);
    int bad = 0;
    for (int i = 0; i < 6400; i++) bad += C[i] != A[i] + B[i];
    CHECK(bad == 0);
    /* reduction with a scalar accumulator: out[i] = sum_j exp(x[i*16 + j]) in double */
    lt_kernel *r = lt_kernel_new(&a, "rsum");
    lt_lbuf *O = lt_kernel_arg(r, "out", LT_DOUBLE, 8), *In = lt_kernel_arg(r, "x", LT_DOUBLE, 128);
    lt_lvar *i = lt_kernel_var(r, "i", LT_INT64), *j = lt_kernel_var(r, "j", LT_INT64), *s = lt_kernel_var(r, "s", LT_DOUBLE);
    lt_lnode *idx = lt_l_add(r, lt_l_mul(r, lt_l_var(r, i), lt_l_int(r, 16)), lt_l_var(r, j));
    lt_lnode *body[3] = {lt_l_let(r, s, lt_l_float(r, LT_DOUBLE, 0)),
                         lt_l_for(r, j, LT_ROLE_NONE, lt_l_int(r, 0), lt_l_int(r, 16), LT_LOOP_SERIAL,
                                  lt_l_assign(r, s, lt_l_add(r, lt_l_var(r, s), lt_l_unary(r, LT_LOP_EXP, lt_l_load(r, In, idx))))),
                         lt_l_store(r, O, lt_l_var(r, i), lt_l_var(r, s))};
    r->body = lt_l_for(r, i, LT_ROLE_NONE, lt_l_int(r, 0), lt_l_int(r, 8), LT_LOOP_SERIAL, lt_l_seq(r, 3, body));
    CHECK(lt_kernel_verify(&c, r) == LT_OK);
    double x[128], out[8];
    for (int q = 0; q < 128; q++) x[q] = frand();
    void *rargs[2] = {out, x};
    CHECK(lt_leval(&c, r, rargs, NULL, NULL) == LT_OK);
    for (int q = 0; q < 8; q++) {
        double want = 0;
        for (int w = 0; w < 16; w++) want += exp(x[q * 16 + w]);
        CHECK(fabs(out[q] - want) < 1e-12);
    }
    /* out-of-bounds index: error naming the buffer and the index */
    lt_kernel *o = lt_kernel_new(&a, "oob");
    lt_lbuf *D = lt_kernel_arg(o, "D", LT_INT32, 10);
    lt_lvar *q = lt_kernel_var(o, "q", LT_INT64);
    o->body = lt_l_for(o, q, LT_ROLE_NONE, lt_l_int(o, 0), lt_l_int(o, 11), LT_LOOP_SERIAL,
                       lt_l_store(o, D, lt_l_var(o, q), lt_l_cast(o, LT_INT32, lt_l_mul(o, lt_l_var(o, q), lt_l_int(o, 3)))));
    int32_t d[11] = {0};
    void *oargs[1] = {d};
    CHECK(lt_leval(&c, o, oargs, NULL, NULL) == LT_ERR_INVALID && strstr(c.msg, "index 10 of buffer D") && strstr(c.msg, "oob"));
    CHECK(d[9] == 27 && d[10] == 0);
    lt_ctx_clear(&c);
    /* division by zero and integer wrap */
    o->body = lt_l_store(o, D, lt_l_int(o, 0), lt_l_binary(o, LT_LOP_DIV, lt_l_load(o, D, lt_l_int(o, 9)), lt_l_int(o, 0)));
    CHECK(lt_leval(&c, o, oargs, NULL, NULL) == LT_ERR_INVALID && strstr(c.msg, "division by zero"));
    lt_ctx_clear(&c);
    o->body = lt_l_store(o, D, lt_l_int(o, 1), lt_l_add(o, lt_l_load(o, D, lt_l_int(o, 9)), lt_l_cast(o, LT_INT32, lt_l_int(o, INT32_MAX))));
    CHECK(lt_leval(&c, o, oargs, NULL, NULL) == LT_OK && d[1] == (int32_t)(27u + (uint32_t)INT32_MAX));
    /* a call with no callback */
    o->body = lt_l_eval(o, lt_l_call(o, LT_UNDEFINED, "nope", 0, NULL));
    CHECK(lt_leval(&c, o, oargs, NULL, NULL) == LT_ERR_UNSUPPORTED && strstr(c.msg, "nope()"));
    free(A), free(B), free(C);
    lt_arena_free(&a);
}

/* Allocation failures: builders return NULL (never crash), the verifier / cost / simplify cope. */
static void test_oom(void) {
    lt_set_allocator(&g_test_alloc);
    bool succeeded = false;
    for (long n = 0; n < 200 && !succeeded; n++) {
        g_countdown = n;
        lt_arena a;
        lt_arena_init(&a);
        lt_kernel *k = build_add(&a);
        lt_lnode *s = k ? lt_lsimplify(k, k->body) : NULL;
        if (s) {
            lt_ctx c = {0};
            lt_status st = lt_kernel_verify(&c, k);
            CHECK(st == LT_OK || st == LT_ERR_NOMEM);
            lt_kernel_cost(k);
            CHECK(k->flops == 6400); /* cost degrades gracefully without memory */
            succeeded = st == LT_OK;
        }
        lt_arena_free(&a);
    }
    g_countdown = -1;
    lt_set_allocator(NULL);
    CHECK(succeeded);
}

/* lt_lhoist: invariant LETs and integer divisions leave serial loops (as far out as they stay
 * invariant); a LET the loop reassigns, one that reads the loop variable or a load, and everything
 * in a parallel loop stay; the results are the same. */
static void test_hoist(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = lt_kernel_new(&a, "hoist");
    lt_lbuf *Yb = lt_kernel_arg(k, "Y", LT_FLOAT, 8), *Xb = lt_kernel_arg(k, "X", LT_FLOAT, 256);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *r = lt_kernel_var(k, "r", LT_INT64), *acc = lt_kernel_var(k, "acc", LT_FLOAT);
    lt_lvar *t = lt_kernel_var(k, "t", LT_INT64), *u = lt_kernel_var(k, "u", LT_INT64), *w = lt_kernel_var(k, "w", LT_INT64);
    lt_lvar *x = lt_kernel_var(k, "x", LT_FLOAT);
    lt_lnode *iv = lt_l_var(k, i);
    lt_lnode *idx = lt_l_add(k, lt_l_binary(k, LT_LOP_MOD, lt_l_binary(k, LT_LOP_DIV, lt_l_var(k, u), lt_l_int(k, 4)), lt_l_int(k, 64)),
                             lt_l_binary(k, LT_LOP_DIV, iv, lt_l_int(k, 3)));
    lt_lnode *inner[6] = {
        lt_l_let(k, t, lt_l_mul(k, iv, lt_l_int(k, 16))),            /* invariant: moves */
        lt_l_let(k, u, lt_l_add(k, lt_l_var(k, t), lt_l_var(k, r))), /* reads r: stays */
        lt_l_let(k, w, lt_l_mul(k, iv, lt_l_int(k, 2))),             /* reassigned below: stays */
        lt_l_assign(k, w, lt_l_add(k, lt_l_var(k, w), lt_l_int(k, 1))),
        lt_l_let(k, x, lt_l_load(k, Xb, lt_l_var(k, w))),              /* a load: stays */
        lt_l_assign(k, acc, lt_l_add(k, lt_l_var(k, acc), lt_l_add(k, lt_l_var(k, x), lt_l_load(k, Xb, idx)))),
    };
    lt_lnode *outer[3] = {lt_l_let(k, acc, lt_l_float(k, LT_FLOAT, 0)),
                          lt_l_for(k, r, LT_ROLE_REDUCE, lt_l_int(k, 0), lt_l_int(k, 16), LT_LOOP_SERIAL, lt_l_seq(k, 6, inner)),
                          lt_l_store(k, Yb, iv, lt_l_var(k, acc))};
    k->body = lt_l_for(k, i, LT_ROLE_OUTPUT, lt_l_int(k, 0), lt_l_int(k, 8), LT_LOOP_PARALLEL, lt_l_seq(k, 3, outer));
    float xs[256], y0[8], y1[8];
    for (int q = 0; q < 256; q++) xs[q] = (float)frand();
    lt_ctx c = {0};
    void *args0[2] = {y0, xs}, *args1[2] = {y1, xs};
    CHECK(lt_leval(&c, k, args0, NULL, NULL) == LT_OK);
    lt_lnode *before = k->body, *h = lt_lhoist(k, k->body);
    CHECK(h && h != before);
    k->body = h;
    CHECK(lt_kernel_verify(&c, k) == LT_OK);
    CHECK_TEXT(pn(h), "parallel for i in [0, 8):\n"
                      "  let float acc = 0.0f\n"
                      "  let int64 t = i*16\n"
                      "  let int64 q = i/3\n"
                      "  for r in [0, 16):\n"
                      "    let int64 u = t + r\n"
                      "    let int64 w = i*2\n"
                      "    w = w + 1\n"
                      "    let float x = X[w]\n"
                      "    acc = acc + (x + X[u/4%64 + q])\n"
                      "  Y[i] = acc\n");
    CHECK(lt_leval(&c, k, args1, NULL, NULL) == LT_OK);
    CHECK(memcmp(y0, y1, sizeof y0) == 0);
    CHECK(lt_lhoist(k, h) == h); /* nothing left to move */
    lt_arena_free(&a);
}

/* lt_div_magic: n / d is the high half of n * M for every 32-bit n (the CUDA prelude's lt_divm_i64
 * takes that half with __umul64hi; here a 32 x 64-bit multiply), at the edges and at random */
static uint64_t mulhi_u32x64(uint64_t a, uint64_t m) { return (a * (m >> 32) + ((a * (m & 0xffffffffu)) >> 32)) >> 32; }
static void test_div_magic(void) {
    CHECK(lt_div_magic(0) == 0 && lt_div_magic(1) == 0 && lt_div_magic(-5) == 0 && lt_div_magic((int64_t)1 << 32) == 0);
    CHECK(lt_div_magic(2) == (uint64_t)1 << 63);
    static const uint64_t ds[] = {2, 3, 5, 7, 31, 32, 33, 640, 1000, 4095, 65536, 65537, 1u << 31, 2147483647u,
                                  2147483649u, 4294967295u, 3000000019u};
    static const uint64_t ns[] = {0, 1, 2, 3, 31, 63, 64, 65, 999, 1000, 65535, 65536, 2147483647u, 2147483648u,
                                  4294967294u, 4294967295u};
    int bad = 0;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        uint64_t m = lt_div_magic((int64_t)ds[i]);
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) bad += mulhi_u32x64(ns[j], m) != ns[j] / ds[i];
        for (uint64_t k = 1; k < 4; k++) { /* around multiples of d */
            uint64_t n = ds[i] * k;
            if (n < ((uint64_t)1 << 32)) bad += mulhi_u32x64(n, m) != k || mulhi_u32x64(n - 1, m) != k - 1;
        }
    }
    for (int r = 0; r < 200000; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t d = (x >> 32) % 4294967294u + 2, n = x & 0xffffffffu;
        if (r & 1) d = (d >> (x & 31)) + 2; /* small divisors too */
        if (d > 4294967295u) continue;
        bad += mulhi_u32x64(n, lt_div_magic((int64_t)d)) != n / d;
    }
    CHECK(bad == 0);
}

/* lt_div_magic31 with the prelude's lt_divu31 (the C target's: (mulhi32(n, m) + n) >> l): n / d for
 * every n < 2^31, for every divisor up to 2^12 around each of its multiples, at the edges and at random */
static void test_div_magic31(void) {
    CHECK(lt_div_magic31(0) == 0 && lt_div_magic31(-3) == 0 && lt_div_magic31((int64_t)1 << 31) == 0);
    CHECK(lt_div_magic31(1) == 1 && lt_div_magic31(2) == (1 | (uint64_t)1 << 32));
    int bad = 0;
    const uint32_t top = 0x7fffffffu;
    for (uint32_t d = 1; d <= 4096; d++) {
        uint64_t ml = lt_div_magic31(d);
        for (uint32_t k = 0; k <= top / d; k += k < 64 ? 1 : k / 8 + 1) { /* around multiples of d */
            uint32_t n = d * k;
            bad += lt_divu31(n, ml) != k;
            if (n) bad += lt_divu31(n - 1, ml) != k - 1;
            if (n < top) bad += lt_divu31(n + 1, ml) != (n + 1) / d;
        }
        bad += lt_divu31(top, ml) != top / d;
    }
    static const uint32_t ds[] = {65535, 65536, 65537, 1000003, 1u << 30, (1u << 30) + 1, 2147483646u, 2147483647u};
    static const uint32_t ns[] = {0, 1, 65535, 65536, 1u << 30, (1u << 30) + 1, 2147483646u, 2147483647u};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) bad += lt_divu31(ns[j], lt_div_magic31(ds[i])) != ns[j] / ds[i];
    uint64_t x = 0x2545F4914F6CDD1Dull;
    for (int r = 0; r < 400000; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t d = (uint32_t)(x >> 33), n = (uint32_t)x & top;
        if (r & 1) d >>= (x >> 20) & 31; /* small divisors too */
        if (!d) d = 1;
        bad += lt_divu31(n, lt_div_magic31(d)) != n / d;
    }
    CHECK(bad == 0);
}

int main(void) {
    test_div_magic();
    test_div_magic31();
    test_types();
    test_print();
    test_traverse();
    test_simplify();
    test_cost_verify();
    test_leval();
    test_hoist();
    test_oom();
    return test_report("test_loop");
}
