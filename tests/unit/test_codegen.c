/* test_codegen.c — the shared emitter and its two language tables: the exact C text of a small
 * kernel, name mangling, literals, casts, the safety rules for loop markings (vectorized loops with
 * a dependence are left plain, parallel loops that race are rejected), unsupported dtypes / kinds,
 * module assembly (prelude pasted once with includes resolved, optional microkernel headers pulled
 * in by calls, kernel table), the CUDA rendering and launch shape, NVRTC compiling emitted CUDA
 * (skipped with a visible message when NVRTC is absent), and out-of-memory at every allocation.
 * Exits non-zero on failure.
 */
#include "backend/cuda/nvrtc.h"
#include "codegen/codegen.h"
#include "loop/loop.h"
#include "test_util.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* Emit one kernel as C; returns the status, text in *out. */
static lt_status emit1(lt_ctx *ctx, const lt_lang *L, lt_kernel *k, const char *origin, lt_strbuf *out) {
    lt_emit_kernel ek = {k, origin};
    return lt_emit_function(ctx, L, &ek, out);
}

/* ---- the exact text of a small kernel ---- */
static void test_exact_text(void) {
    lt_arena ar;
    lt_arena_init(&ar);
    lt_ctx ctx = {0};
    lt_kernel *k = lt_kernel_new(&ar, "lt_k0");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, 32);
    lt_lbuf *x = lt_kernel_arg(k, "x", LT_FLOAT, 32);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
    lt_lnode *xi = lt_l_load(k, x, lt_l_var(k, i));
    lt_lnode *v = lt_l_binary(k, LT_LOP_MUL, lt_l_binary(k, LT_LOP_ADD, xi, lt_l_float(k, LT_FLOAT, 1)),
                              lt_l_unary(k, LT_LOP_EXP, lt_l_unary(k, LT_LOP_NEG, xi)));
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 32), LT_LOOP_VECTORIZED, lt_l_store(k, y, lt_l_var(k, i), v));
    lt_kernel_cost(k);
    lt_strbuf o = {0};
    CHECK(emit1(&ctx, &lt_lang_c, k, "Mul_3 (Mul)", &o) == LT_OK);
    const char *want =
        "\n/* lt_k0: Mul_3 (Mul)\n"
        " * static cost: 128 FLOP, 384 B moved */\n"
        "void lt_k0(void *const *args) {\n"
        "    float *a0 = (float *)args[0]; /* \"y\" float[32], out */\n"
        "    const float *a1 = (const float *)args[1]; /* \"x\" float[32] */\n"
        "    #pragma omp simd\n"
        "    for (int64_t i = 0; i < 32; i++) {\n"
        "        a0[i] = (a1[i] + 1.0f) * lt_exp_f32(-a1[i]);\n"
        "    }\n"
        "}\n";
    if (!o.s || strcmp(o.s, want) != 0) {
        fprintf(stderr, "exact text differs:\n--- got\n%s--- want\n%s", o.s ? o.s : "(null)", want);
        failures++;
    }
    lt_sb_free(&o);

    /* CUDA: the same kernel with the loop bound to threads of one block */
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 32), LT_LOOP_GPU_THREAD, lt_l_store(k, y, lt_l_var(k, i), v));
    CHECK(emit1(&ctx, &lt_lang_cuda, k, NULL, &o) == LT_OK);
    CHECK(o.s && strstr(o.s, "extern \"C\" __global__ void lt_k0(float *a0, const float *a1) {\n"));
    { /* a block of more than 256 threads: launch bounds keep the registers within what it may use */
        lt_strbuf o2 = {0};
        lt_lnode *body = k->body;
        k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 512), LT_LOOP_GPU_THREAD,
                           lt_l_store(k, y, lt_l_var(k, i), lt_l_load(k, x, lt_l_var(k, i))));
        CHECK(emit1(&ctx, &lt_lang_cuda, k, NULL, &o2) == LT_OK);
        CHECK(o2.s && strstr(o2.s, "extern \"C\" __global__ void __launch_bounds__(512) lt_k0("));
        lt_sb_free(&o2);
        k->body = body;
    }
    CHECK(o.s && strstr(o.s, " * a0: \"y\" float[32]\n * a1: \"x\" float[32]\n"));
    CHECK(o.s && strstr(o.s, "const int64_t i = (int64_t)threadIdx.x;\n"));
    CHECK(o.s && strstr(o.s, "launch: grid (1, 1, 1), block (32, 1, 1)"));
    CHECK(o.s && strstr(o.s, "a0[i] = (a1[i] + 1.0f) * expf(-a1[i]);"));
    lt_sb_free(&o);
    lt_lang fast = lt_lang_cuda;
    fast.fast_math = true;
    CHECK(emit1(&ctx, &fast, k, NULL, &o) == LT_OK && strstr(o.s, "__expf(-a1[i])"));
    lt_sb_free(&o);
    lt_arena_free(&ar);
}

/* ---- names, literals, casts ---- */
static void test_names_literals_casts(void) {
    lt_arena ar;
    lt_arena_init(&ar);
    lt_ctx ctx = {0};
    lt_kernel *k = lt_kernel_new(&ar, "lt_k1");
    lt_lbuf *a = lt_kernel_arg(k, "out.0", LT_FLOAT, 8);
    lt_lbuf *b = lt_kernel_arg(k, "3d/input:0", LT_FLOAT16, 8);
    lt_lbuf *c = lt_kernel_arg(k, "int", LT_DOUBLE, 8);
    lt_lbuf *d = lt_kernel_arg(k, "lt_tmp", LT_INT32, 8);
    lt_lbuf *e = lt_kernel_arg(k, "out_0", LT_UINT8, 8);
    lt_lbuf *f = lt_kernel_arg(k, "h", LT_BFLOAT16, 8);
    lt_lbuf *g = lt_kernel_arg(k, "sqrt", LT_DOUBLE, 8); /* a math function's name */
    lt_lvar *i = lt_kernel_var(k, "i.o", LT_INT64);
    lt_lnode *iv = lt_l_var(k, i);
    lt_lnode *st[] = {
        lt_l_store(k, a, iv, lt_l_binary(k, LT_LOP_ADD, lt_l_cast(k, LT_FLOAT, lt_l_load(k, b, iv)),
                                         lt_l_float(k, LT_FLOAT, 0.1))),
        lt_l_store(k, c, iv, lt_l_select(k, lt_l_binary(k, LT_LOP_LT, lt_l_load(k, c, iv), lt_l_float(k, LT_DOUBLE, 0.1)),
                                         lt_l_float(k, LT_DOUBLE, INFINITY), lt_l_float(k, LT_DOUBLE, NAN))),
        lt_l_store(k, d, iv, lt_l_cast(k, LT_INT32, lt_l_load(k, a, iv))),
        lt_l_store(k, e, iv, lt_l_binary(k, LT_LOP_ADD, lt_l_load(k, e, iv), lt_l_int(k, 200))),
        lt_l_store(k, b, iv, lt_l_cast(k, LT_FLOAT16, lt_l_load(k, c, iv))),
        lt_l_store(k, f, iv, lt_l_float(k, LT_BFLOAT16, 0.1)),
        lt_l_store(k, a, iv, lt_l_float(k, LT_FLOAT, -1e30)),
        lt_l_store(k, d, iv, lt_l_binary(k, LT_LOP_DIV, lt_l_load(k, d, iv), lt_l_int(k, 7))),
        lt_l_store(k, d, iv, lt_l_binary(k, LT_LOP_DIV, lt_l_load(k, d, iv), lt_l_load(k, d, lt_l_int(k, 0)))),
        lt_l_store(k, g, iv, lt_l_unary(k, LT_LOP_SQRT, lt_l_load(k, g, iv))),
    };
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 8), LT_LOOP_SERIAL, lt_l_seq(k, 10, st));
    lt_strbuf o = {0};
    CHECK(emit1(&ctx, &lt_lang_c, k, NULL, &o) == LT_OK);
    const char *s = o.s ? o.s : "";
    /* buffers are named by position, their (tensor) names only escaped in comments */
    CHECK(strstr(s, "float *a0 = (float *)args[0]; /* \"out.0\" float[8], in/out */"));
    CHECK(strstr(s, "uint16_t *a1 = (uint16_t *)args[1]; /* \"3d\\057input:0\" float16[8], in/out */"));
    CHECK(strstr(s, "double *a2 = (double *)args[2]; /* \"int\" double[8], in/out */"));
    CHECK(strstr(s, "int32_t *a3 = (int32_t *)args[3]; /* \"lt_tmp\" int32[8], in/out */"));
    CHECK(strstr(s, "uint8_t *a4 = (uint8_t *)args[4]; /* \"out_0\" uint8[8], in/out */"));
    CHECK(strstr(s, "for (int64_t i_o = 0; i_o < 8; i_o++)"));
    CHECK(strstr(s, "a0[i_o] = lt_h2f(a1[i_o]) + 0.1f;"));
    CHECK(strstr(s, "a2[i_o] = a2[i_o] < 0.1 ? LT_INF_F64 : LT_NAN_F64;"));
    CHECK(strstr(s, "a3[i_o] = (int32_t)lt_f2i64(a0[i_o]);"));
    CHECK(strstr(s, "a4[i_o] = (uint8_t)(a4[i_o] + 200);"));
    CHECK(strstr(s, "a1[i_o] = lt_f2h(lt_h2f(lt_d2h(a2[i_o])));"));
    CHECK(strstr(s, "a5[i_o] = lt_f2bf(0.100097656f);")); /* the literal rounded to bfloat16 */
    CHECK(strstr(s, "a0[i_o] = -1e+30f;")); /* the shortest spelling of the float */
    CHECK(strstr(s, "a3[i_o] = a3[i_o] / 7;"));
    CHECK(strstr(s, "a3[i_o] = lt_div_i32(a3[i_o], a3[0]);"));
    CHECK(strstr(s, "a6[i_o] = sqrt(a6[i_o]);"));
    CHECK(!strstr(s, "out_0[") && !strstr(s, "int[") && !strstr(s, "sqrt["));
    if (failures) fprintf(stderr, "%s", s);
    lt_sb_free(&o);

    /* variables keep a plain lower-case name no header takes; others become v<id>, taken ones get a
     * suffix; a buffer's name in a comment is escaped (no comment end, no trigraph, no raw byte) */
    lt_kernel *k2 = lt_kernel_new(&ar, "lt_k2");
    lt_lbuf *y = lt_kernel_arg(k2, "*/ ?\?/ \"\xff", LT_FLOAT, 4);
    const char *vn[] = {"INFINITY", "int", "uint4", "lt_x", "unix", "a0", "M_PI", "_x"};
    lt_lnode *lets[9];
    for (int v = 0; v < 8; v++) lets[v] = lt_l_let(k2, lt_kernel_var(k2, vn[v], LT_FLOAT), lt_l_float(k2, LT_FLOAT, v));
    lt_lvar *j = lt_kernel_var(k2, "j", LT_INT64);
    lets[8] = lt_l_for(k2, j, LT_ROLE_NONE, lt_l_int(k2, 0), lt_l_int(k2, 4), LT_LOOP_SERIAL, lt_l_store(k2, y, lt_l_var(k2, j), lt_l_float(k2, LT_FLOAT, 1)));
    k2->body = lt_l_seq(k2, 9, lets);
    CHECK(emit1(&ctx, &lt_lang_c, k2, "'x*/y' (Relu)", &o) == LT_OK);
    s = o.s ? o.s : "";
    CHECK(strstr(s, "float *a0 = (float *)args[0]; /* \"\\052\\057 \\077\\077\\057 \\042\\377\" float[4], out */"));
    CHECK(strstr(s, "/* lt_k2: 'x\\052\\057y' (Relu)\n"));
    CHECK(strstr(s, "float v0 = 0.0f;") && strstr(s, "float int_1 = 1.0f;") && strstr(s, "float uint4_2 = 2.0f;"));
    CHECK(strstr(s, "float v3 = 3.0f;") && strstr(s, "float unix_4 = 4.0f;") && strstr(s, "float a0_5 = 5.0f;"));
    CHECK(strstr(s, "float v6 = 6.0f;") && strstr(s, "float v7 = 7.0f;"));
    CHECK(strstr(s, "float v0 = 0.0f;\n    (void)v0;\n")); /* never read: no -Wunused-variable under -Werror */
    if (failures) fprintf(stderr, "%s", s);
    lt_sb_free(&o);
    lt_arena_free(&ar);
}

/* ---- loop markings: faithful or refused ---- */
static void test_loop_safety(void) {
    lt_arena ar;
    lt_arena_init(&ar);
    lt_ctx ctx = {0};
    /* prefix sum marked vectorized: y[i] = y[i-1] + x[i] has a loop-carried dependence */
    lt_kernel *k = lt_kernel_new(&ar, "lt_scan");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, 64);
    lt_lbuf *x = lt_kernel_arg(k, "x", LT_FLOAT, 64);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
    lt_lnode *prev = lt_l_load(k, y, lt_l_binary(k, LT_LOP_SUB, lt_l_var(k, i), lt_l_int(k, 1)));
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 1), lt_l_int(k, 63), LT_LOOP_VECTORIZED,
                       lt_l_store(k, y, lt_l_var(k, i), lt_l_binary(k, LT_LOP_ADD, prev, lt_l_load(k, x, lt_l_var(k, i)))));
    lt_strbuf o = {0};
    CHECK(emit1(&ctx, &lt_lang_c, k, NULL, &o) == LT_OK);
    CHECK(o.s && !strstr(o.s, "omp simd") && strstr(o.s, "left to the compiler"));
    CHECK(o.s && strstr(o.s, "for (int64_t i = 1; i < 64; i++)"));
    lt_sb_free(&o);

    /* a store indexed through a local computed from the loop variable is still per-iteration */
    lt_kernel *k3 = lt_kernel_new(&ar, "lt_strided");
    y = lt_kernel_arg(k3, "y", LT_FLOAT, 128);
    x = lt_kernel_arg(k3, "x", LT_FLOAT, 64);
    i = lt_kernel_var(k3, "i", LT_INT64);
    lt_lvar *t = lt_kernel_var(k3, "t", LT_INT64);
    lt_lnode *sb[] = {lt_l_let(k3, t, lt_l_mul(k3, lt_l_var(k3, i), lt_l_int(k3, 2))),
                      lt_l_store(k3, y, lt_l_var(k3, t), lt_l_load(k3, x, lt_l_var(k3, i)))};
    k3->body = lt_l_for(k3, i, LT_ROLE_NONE, lt_l_int(k3, 0), lt_l_int(k3, 64), LT_LOOP_VECTORIZED, lt_l_seq(k3, 2, sb));
    CHECK(emit1(&ctx, &lt_lang_c, k3, NULL, &o) == LT_OK);
    CHECK(o.s && strstr(o.s, "#pragma omp simd\n") && strstr(o.s, "int64_t t = i * 2;\n"));
    lt_sb_free(&o);
    sb[0] = lt_l_let(k3, t, lt_l_int(k3, 5)); /* ... but not through a loop-invariant one */
    k3->body = lt_l_for(k3, i, LT_ROLE_NONE, lt_l_int(k3, 0), lt_l_int(k3, 64), LT_LOOP_VECTORIZED, lt_l_seq(k3, 2, sb));
    CHECK(emit1(&ctx, &lt_lang_c, k3, NULL, &o) == LT_OK);
    CHECK(o.s && !strstr(o.s, "omp simd") && strstr(o.s, "store not indexed by the loop"));
    lt_sb_free(&o);

    /* a parallel loop with a minimum of work: threads only when the nest's extents multiply to it */
    lt_kernel *k4 = lt_kernel_new(&ar, "lt_par_min");
    y = lt_kernel_arg(k4, "y", LT_FLOAT, 6400);
    x = lt_kernel_arg(k4, "x", LT_FLOAT, 6400);
    i = lt_kernel_var(k4, "i", LT_INT64);
    lt_lvar *j = lt_kernel_var(k4, "j", LT_INT64);
    lt_lnode *ij = lt_l_add(k4, lt_l_mul(k4, lt_l_var(k4, i), lt_l_int(k4, 100)), lt_l_var(k4, j));
    k4->body = lt_l_for(k4, i, LT_ROLE_NONE, lt_l_int(k4, 0), lt_l_int(k4, 64), LT_LOOP_PARALLEL,
                        lt_l_for(k4, j, LT_ROLE_NONE, lt_l_int(k4, 0), lt_l_int(k4, 100), LT_LOOP_SERIAL,
                                 lt_l_store(k4, y, ij, lt_l_load(k4, x, ij))));
    k4->body->ival = 16384;
    CHECK(emit1(&ctx, &lt_lang_c, k4, NULL, &o) == LT_OK);
    CHECK(o.s && strstr(o.s, "num_threads(lt_nthreads()) if((int64_t)64 * (int64_t)100 >= 16384)\n"));
    lt_sb_free(&o);

    /* a sum whose accumulator is also read elsewhere in the loop is no reduction */
    lt_kernel *k2 = lt_kernel_new(&ar, "lt_cumsum");
    y = lt_kernel_arg(k2, "y", LT_FLOAT, 64);
    x = lt_kernel_arg(k2, "x", LT_FLOAT, 64);
    i = lt_kernel_var(k2, "i", LT_INT64);
    lt_lvar *acc = lt_kernel_var(k2, "acc", LT_FLOAT);
    lt_lnode *body[] = {
        lt_l_assign(k2, acc, lt_l_binary(k2, LT_LOP_ADD, lt_l_var(k2, acc), lt_l_load(k2, x, lt_l_var(k2, i)))),
        lt_l_store(k2, y, lt_l_var(k2, i), lt_l_var(k2, acc)),
    };
    lt_lnode *top[] = {
        lt_l_let(k2, acc, lt_l_float(k2, LT_FLOAT, 0)),
        lt_l_for(k2, i, LT_ROLE_NONE, lt_l_int(k2, 0), lt_l_int(k2, 64), LT_LOOP_VECTORIZED, lt_l_seq(k2, 2, body)),
    };
    k2->body = lt_l_seq(k2, 2, top);
    CHECK(emit1(&ctx, &lt_lang_c, k2, NULL, &o) == LT_OK);
    CHECK(o.s && !strstr(o.s, "omp simd"));
    lt_sb_free(&o);

    /* the same accumulation in a parallel loop is a race: rejected, naming loop and variable */
    k2->body->kids[1]->op = LT_LOOP_PARALLEL;
    lt_ctx pc = {0};
    CHECK(emit1(&pc, &lt_lang_c, k2, NULL, &o) == LT_ERR_INVALID);
    CHECK(strstr(pc.msg, "lt_cumsum") && strstr(pc.msg, "parallel loop i") && strstr(pc.msg, "acc"));
    lt_sb_free(&o);

    /* CUDA has no CPU threads; C has no GPU blocks */
    lt_ctx cc = {0};
    CHECK(emit1(&cc, &lt_lang_cuda, k2, NULL, &o) == LT_ERR_UNSUPPORTED && strstr(cc.msg, "parallel loop i"));
    lt_sb_free(&o);
    k2->body->kids[1]->op = LT_LOOP_GPU_BLOCK;
    lt_ctx gc = {0};
    CHECK(emit1(&gc, &lt_lang_c, k2, NULL, &o) == LT_ERR_UNSUPPORTED && strstr(gc.msg, "GPU block"));
    lt_sb_free(&o);
    lt_arena_free(&ar);
}

static void test_unsupported(void) {
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k = lt_kernel_new(&ar, "lt_str");
    lt_lbuf *y = lt_kernel_arg(k, "names", LT_STRING, 4);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 4), LT_LOOP_SERIAL,
                       lt_l_store(k, y, lt_l_var(k, i), lt_l_load(k, y, lt_l_int(k, 0))));
    lt_ctx ctx = {0};
    lt_strbuf o = {0};
    CHECK(emit1(&ctx, &lt_lang_c, k, NULL, &o) == LT_ERR_UNSUPPORTED);
    CHECK(strstr(ctx.msg, "lt_str") && strstr(ctx.msg, "string"));
    lt_sb_free(&o);

    /* vector expressions (lanes > 1) are refused, naming the kernel */
    lt_kernel *k2 = lt_kernel_new(&ar, "lt_vec");
    lt_lbuf *a = lt_kernel_arg(k2, "a", LT_FLOAT, 16);
    lt_lnode *ld = lt_l_load(k2, a, lt_l_int(k2, 0));
    ld->lanes = 8;
    k2->body = lt_l_store(k2, a, lt_l_int(k2, 0), ld);
    k2->body->lanes = 8;
    lt_ctx vc = {0};
    CHECK(emit1(&vc, &lt_lang_c, k2, NULL, &o) == LT_ERR_UNSUPPORTED && strstr(vc.msg, "lt_vec") && strstr(vc.msg, "lanes"));
    lt_sb_free(&o);

    /* an oversized local buffer */
    lt_kernel *k3 = lt_kernel_new(&ar, "lt_big");
    lt_lbuf *out = lt_kernel_arg(k3, "out", LT_FLOAT, 1);
    lt_lbuf *tmp = lt_kernel_local(k3, "tmp", LT_FLOAT, 1 << 20, LT_SCOPE_LOCAL);
    k3->body = lt_l_alloc(k3, tmp, lt_l_seq(k3, 2, (lt_lnode *[]){
        lt_l_store(k3, tmp, lt_l_int(k3, 0), lt_l_float(k3, LT_FLOAT, 1)),
        lt_l_store(k3, out, lt_l_int(k3, 0), lt_l_load(k3, tmp, lt_l_int(k3, 0)))}));
    lt_ctx bc = {0};
    CHECK(emit1(&bc, &lt_lang_c, k3, NULL, &o) == LT_ERR_UNSUPPORTED && strstr(bc.msg, "tmp"));
    lt_sb_free(&o);
    lt_arena_free(&ar);
}

/* ---- module assembly ---- */
static lt_kernel *tiny(lt_arena *ar, const char *name, const char *call) {
    lt_kernel *k = lt_kernel_new(ar, name);
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, 4);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
    lt_lnode *v = lt_l_load(k, y, lt_l_var(k, i));
    if (call) {
        lt_lnode *args[] = {lt_l_int(k, 1), lt_l_int(k, 1), lt_l_int(k, 1)};
        lt_lnode *st[] = {lt_l_eval(k, lt_l_call(k, LT_UNDEFINED, call, 3, args)), lt_l_store(k, y, lt_l_var(k, i), v)};
        k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 4), LT_LOOP_SERIAL, lt_l_seq(k, 2, st));
    } else {
        k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 4), LT_LOOP_SERIAL, lt_l_store(k, y, lt_l_var(k, i), v));
    }
    return k;
}

static void test_module(void) {
    lt_arena ar;
    lt_arena_init(&ar);
    lt_ctx ctx = {0};
    lt_emit_kernel ks[2] = {{tiny(&ar, "lt_ka", NULL), "A"}, {tiny(&ar, "lt_kb", NULL), "B"}};
    lt_strbuf o = {0};
    CHECK(lt_emit_module(&ctx, &lt_lang_c, ks, 2, "int lathe_extra(void) { return 1; }", &o) == LT_OK);
    const char *s = o.s ? o.s : "";
    CHECK(strncmp(s, "/* Generated by lathe for target c: 2 kernels.", 45) == 0);
    CHECK(count(s, "---- prelude: core.h ----") == 1 && count(s, "---- prelude: common.h ----") == 1);
    CHECK(count(s, "#include \"") == 0); /* prelude includes resolved */
    CHECK(count(s, "LT_PRELUDE_COMMON_H") == 2);  /* one guard: #ifndef + #define */
    CHECK(count(s, "prelude: gemm.h") == 0);      /* not called */
    CHECK(strstr(s, "const lt_kernel_desc lathe_kernels[] = {\n    {\"lt_ka\", lt_ka, 1, 0},\n    {\"lt_kb\", lt_kb, 1, 0},\n"
                    "    {0, 0, 0, 0},\n};\nconst int lathe_n_kernels = 2;\n"));
    CHECK(strstr(s, "int lathe_extra(void) { return 1; }\n"));
    lt_sb_free(&o);

    /* a call into a microkernel header pastes that header (once, after core.h) */
    if (lt_prelude_find("gemm.h")) {
        lt_emit_kernel kc[2] = {{tiny(&ar, "lt_kc", "lt_sgemm_pack_b"), NULL}, {tiny(&ar, "lt_kd", "lt_sgemm"), NULL}};
        CHECK(lt_emit_module(&ctx, &lt_lang_c, kc, 2, NULL, &o) == LT_OK);
        CHECK(count(o.s, "---- prelude: gemm.h ----") == 1 && count(o.s, "---- prelude: core.h ----") == 1);
        CHECK(count(o.s, "#include \"") == 0);
        lt_sb_free(&o);
    } else {
        printf("test_codegen: gemm.h not embedded, skipping the microkernel-header check\n");
    }

    /* duplicate kernel names are an error and leave the output untouched */
    lt_emit_kernel dup[2] = {{ks[0].kernel, NULL}, {ks[0].kernel, NULL}};
    lt_sb_printf(&o, "keep");
    lt_ctx dc = {0};
    CHECK(lt_emit_module(&dc, &lt_lang_c, dup, 2, NULL, &o) == LT_ERR_INVALID && strstr(dc.msg, "lt_ka"));
    CHECK(o.s && strcmp(o.s, "keep") == 0);
    /* an error inside a kernel also restores the output */
    lt_kernel *bad = tiny(&ar, "lt_bad", NULL);
    bad->body->op = LT_LOOP_GPU_BLOCK;
    lt_emit_kernel kb[2] = {{ks[0].kernel, NULL}, {bad, NULL}};
    lt_ctx ec = {0};
    CHECK(lt_emit_module(&ec, &lt_lang_c, kb, 2, NULL, &o) == LT_ERR_UNSUPPORTED && strcmp(o.s, "keep") == 0);
    lt_sb_free(&o);
    lt_arena_free(&ar);
}

/* ---- CUDA: shared memory, barrier, launch shape, NVRTC ---- */
#define ROWS 64
#define COLS 256
/* out[r] = sum_c x[r, c] (float16 input): one block per row, one thread per column, a shared
 * array and a barrier; thread 0 sums. y[r, c] = relu(x[r, c]) in a second kernel (2-D grid). */
static void cuda_kernels(lt_arena *ar, lt_kernel **k1, lt_kernel **k2) {
    lt_kernel *k = lt_kernel_new(ar, "lt_rowsum");
    lt_lbuf *out = lt_kernel_arg(k, "out", LT_FLOAT, ROWS);
    lt_lbuf *x = lt_kernel_arg(k, "x", LT_FLOAT16, ROWS * COLS);
    lt_lbuf *sh = lt_kernel_local(k, "part", LT_FLOAT, COLS, LT_SCOPE_SHARED);
    lt_lvar *r = lt_kernel_var(k, "r", LT_INT64), *c = lt_kernel_var(k, "c", LT_INT64);
    lt_lvar *j = lt_kernel_var(k, "j", LT_INT64), *acc = lt_kernel_var(k, "acc", LT_FLOAT);
    lt_lnode *xrc = lt_l_cast(k, LT_FLOAT, lt_l_load(k, x, lt_l_add(k, lt_l_mul(k, lt_l_var(k, r), lt_l_int(k, COLS)), lt_l_var(k, c))));
    lt_lnode *sum[] = {
        lt_l_let(k, acc, lt_l_float(k, LT_FLOAT, 0)),
        lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, COLS), LT_LOOP_SERIAL,
                 lt_l_assign(k, acc, lt_l_binary(k, LT_LOP_ADD, lt_l_var(k, acc), lt_l_load(k, sh, lt_l_var(k, j))))),
        lt_l_store(k, out, lt_l_var(k, r), lt_l_var(k, acc)),
    };
    lt_lnode *tb[] = {
        lt_l_store(k, sh, lt_l_var(k, c), xrc),
        lt_l_barrier(k),
        lt_l_if(k, lt_l_binary(k, LT_LOP_EQ, lt_l_var(k, c), lt_l_int(k, 0)), lt_l_seq(k, 3, sum), NULL),
    };
    lt_lnode *th = lt_l_for(k, c, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, COLS), LT_LOOP_GPU_THREAD, lt_l_seq(k, 3, tb));
    k->body = lt_l_alloc(k, sh, lt_l_for(k, r, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, ROWS), LT_LOOP_GPU_BLOCK, th));
    *k1 = k;

    k = lt_kernel_new(ar, "lt_relu2d");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, ROWS * COLS);
    lt_lbuf *xf = lt_kernel_arg(k, "x", LT_FLOAT, ROWS * COLS);
    lt_lvar *bx = lt_kernel_var(k, "bx", LT_INT64), *by = lt_kernel_var(k, "by", LT_INT64), *t = lt_kernel_var(k, "t", LT_INT64);
    lt_lnode *idx = lt_l_add(k, lt_l_mul(k, lt_l_add(k, lt_l_mul(k, lt_l_var(k, by), lt_l_int(k, 4)), lt_l_var(k, bx)), lt_l_int(k, 128)),
                             lt_l_var(k, t));
    lt_lnode *v = lt_l_binary(k, LT_LOP_MAX, lt_l_load(k, xf, idx), lt_l_float(k, LT_FLOAT, 0));
    lt_lnode *tl = lt_l_for(k, t, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 128), LT_LOOP_GPU_THREAD, lt_l_store(k, y, idx, v));
    lt_lnode *bl = lt_l_for(k, bx, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 4), LT_LOOP_GPU_BLOCK, tl);
    bl->ival = 0;
    k->body = lt_l_for(k, by, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, ROWS * COLS / 512), LT_LOOP_GPU_BLOCK, bl);
    k->body->ival = 1;
    *k2 = k;
}

static void test_cuda(void) {
    lt_arena ar;
    lt_arena_init(&ar);
    lt_ctx ctx = {0};
    lt_kernel *k1, *k2;
    cuda_kernels(&ar, &k1, &k2);
    int64_t g[3], b[3];
    CHECK(lt_emit_launch_dims(&ctx, k1, g, b) == LT_OK && g[0] == ROWS && g[1] == 1 && b[0] == COLS && b[1] == 1);
    CHECK(lt_emit_launch_dims(&ctx, k2, g, b) == LT_OK && g[0] == 4 && g[1] == ROWS * COLS / 512 && b[0] == 128);
    lt_emit_kernel ks[2] = {{k1, "ReduceSum_1"}, {k2, "Relu_2"}};
    lt_strbuf o = {0};
    CHECK(lt_emit_module(&ctx, &lt_lang_cuda, ks, 2, NULL, &o) == LT_OK);
    const char *s = o.s ? o.s : "";
    CHECK(strstr(s, "---- prelude: cuda_core.h ----") && strstr(s, "---- prelude: common.h ----"));
    CHECK(!strstr(s, "prelude: core.h") && !strstr(s, "lathe_kernels") && !strstr(s, "#include"));
    CHECK(strstr(s, "__shared__ float s2[256]"));
    CHECK(strstr(s, "__syncthreads();"));
    CHECK(strstr(s, "const int64_t r = (int64_t)blockIdx.x;"));
    CHECK(strstr(s, "const int64_t by = (int64_t)blockIdx.y;"));
    CHECK(strstr(s, "s2[c] = lt_h2f(a1[r * 256 + c]);"));
    CHECK(strstr(s, "extern \"C\" __global__ void lt_rowsum(float *a0, const uint16_t *a1)"));

    /* two loops binding the same axis, nested: refused */
    lt_kernel *k3 = lt_kernel_new(&ar, "lt_twice");
    lt_lbuf *y = lt_kernel_arg(k3, "y", LT_FLOAT, 16);
    lt_lvar *p = lt_kernel_var(k3, "p", LT_INT64), *q = lt_kernel_var(k3, "q", LT_INT64);
    k3->body = lt_l_for(k3, p, LT_ROLE_NONE, lt_l_int(k3, 0), lt_l_int(k3, 4), LT_LOOP_GPU_THREAD,
                        lt_l_for(k3, q, LT_ROLE_NONE, lt_l_int(k3, 0), lt_l_int(k3, 4), LT_LOOP_GPU_THREAD,
                                 lt_l_store(k3, y, lt_l_add(k3, lt_l_mul(k3, lt_l_var(k3, p), lt_l_int(k3, 4)), lt_l_var(k3, q)),
                                            lt_l_float(k3, LT_FLOAT, 1))));
    lt_ctx tc = {0};
    CHECK(lt_emit_launch_dims(&tc, k3, g, b) == LT_ERR_UNSUPPORTED && strstr(tc.msg, "lt_twice") && strstr(tc.msg, "q"));

    /* NVRTC: compile what was emitted (cubin and PTX) */
    lt_nvrtc *nv = NULL;
    lt_ctx nc = {0};
    if (lt_nvrtc_open(&nc, &nv) != LT_OK) {
        printf("test_codegen: SKIP NVRTC compile check: %s\n", nc.msg);
    } else {
        int ma, mi;
        lt_nvrtc_version(nv, &ma, &mi);
        lt_nvrtc_output img = {0};
        lt_ctx cc = {0};
        lt_status st = lt_nvrtc_compile(&cc, nv, s, "lathe_test.cu", "sm_90", NULL, 0, &img);
        if (st != LT_OK) fprintf(stderr, "NVRTC: %s\n--- source\n%s", cc.msg, s);
        CHECK(st == LT_OK && img.is_cubin && img.size > 1000);
        printf("test_codegen: NVRTC %d.%d (%s) compiled %zu bytes of CUDA into a %zu-byte sm_90 cubin\n", ma, mi,
               lt_nvrtc_path(nv), o.len, img.size);
        lt_nvrtc_output_free(&img);
        st = lt_nvrtc_compile(&cc, nv, s, "lathe_test.cu", "compute_90", NULL, 0, &img);
        CHECK(st == LT_OK && !img.is_cubin && img.image && strstr(img.image, ".entry lt_rowsum"));
        lt_nvrtc_output_free(&img);
        /* an NVRTC error names the program and quotes the log */
        lt_ctx ec = {0};
        CHECK(lt_nvrtc_compile(&ec, nv, "extern \"C\" __global__ void f() { undeclared_x = 1; }", "broken.cu", NULL, NULL, 0,
                               &img) == LT_ERR_INTERNAL);
        CHECK(strstr(ec.msg, "broken.cu") && strstr(ec.msg, "undeclared_x"));
        lt_nvrtc_close(nv);
    }
    lt_sb_free(&o);
    lt_arena_free(&ar);
}

/* ---- CUDA on a GPU (when one is present): run the emitted kernels through the driver API ----
 * Test-only driver calls with our own prototypes (the CUDA backend proper is src/backend/cuda's). Without
 * libcuda or a device the test says so and skips. */
typedef struct cuda_api {
    void *lib;
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*attr)(int *, int, int);
    int (*ctx_retain)(void **, int);
    int (*ctx_release)(int);
    int (*ctx_set)(void *);
    int (*load)(void **, const void *);
    int (*unload)(void *);
    int (*get_fn)(void **, void *, const char *);
    int (*alloc)(unsigned long long *, size_t);
    int (*free)(unsigned long long);
    int (*h2d)(unsigned long long, const void *, size_t);
    int (*d2h)(void *, unsigned long long, size_t);
    int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
    int (*sync)(void);
} cuda_api;

static bool cuda_open(cuda_api *c, int *dev, char *arch, size_t n) {
    memset(c, 0, sizeof *c);
    c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) return false;
    struct { void **slot; const char *name; } syms[] = {
        {(void **)&c->init, "cuInit"}, {(void **)&c->device_get, "cuDeviceGet"},
        {(void **)&c->attr, "cuDeviceGetAttribute"}, {(void **)&c->ctx_retain, "cuDevicePrimaryCtxRetain"},
        {(void **)&c->ctx_release, "cuDevicePrimaryCtxRelease_v2"}, {(void **)&c->ctx_set, "cuCtxSetCurrent"},
        {(void **)&c->load, "cuModuleLoadData"}, {(void **)&c->unload, "cuModuleUnload"},
        {(void **)&c->get_fn, "cuModuleGetFunction"}, {(void **)&c->alloc, "cuMemAlloc_v2"},
        {(void **)&c->free, "cuMemFree_v2"}, {(void **)&c->h2d, "cuMemcpyHtoD_v2"},
        {(void **)&c->d2h, "cuMemcpyDtoH_v2"}, {(void **)&c->launch, "cuLaunchKernel"},
        {(void **)&c->sync, "cuCtxSynchronize"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (!(*syms[i].slot = dlsym(c->lib, syms[i].name))) return false;
    int major = 0, minor = 0;
    void *ctx = NULL;
    if (c->init(0) || c->device_get(dev, 0) || c->attr(&major, 75, *dev) || c->attr(&minor, 76, *dev) ||
        c->ctx_retain(&ctx, *dev) || c->ctx_set(ctx))
        return false;
    snprintf(arch, n, "sm_%d%d", major, minor);
    return true;
}

/* y[i] = op(x[i]) for the float math ops, on a 1-D grid of 256-thread blocks */
#define NG 4096
static lt_kernel *cuda_math_kernel(lt_arena *ar, const int *ops, int nops) {
    lt_kernel *k = lt_kernel_new(ar, "lt_math");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, (int64_t)NG * nops);
    lt_lbuf *h = lt_kernel_arg(k, "h", LT_FLOAT16, NG);
    lt_lbuf *x = lt_kernel_arg(k, "x", LT_FLOAT, NG);
    lt_lvar *b = lt_kernel_var(k, "b", LT_INT64), *t = lt_kernel_var(k, "t", LT_INT64);
    lt_lnode *i = lt_l_add(k, lt_l_mul(k, lt_l_var(k, b), lt_l_int(k, 256)), lt_l_var(k, t));
    lt_lnode *st[16];
    for (int o = 0; o < nops; o++)
        st[o] = lt_l_store(k, y, lt_l_add(k, lt_l_mul(k, lt_l_int(k, o), lt_l_int(k, NG)), i),
                           lt_l_unary(k, ops[o], lt_l_load(k, x, i)));
    st[nops] = lt_l_store(k, h, i, lt_l_cast(k, LT_FLOAT16, lt_l_load(k, x, i)));
    k->body = lt_l_for(k, b, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, NG / 256), LT_LOOP_GPU_BLOCK,
                       lt_l_for(k, t, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 256), LT_LOOP_GPU_THREAD, lt_l_seq(k, nops + 1, st)));
    return k;
}

static void test_cuda_run(void) {
    cuda_api cu;
    int dev = 0;
    char arch[16];
    if (!cuda_open(&cu, &dev, arch, sizeof arch)) {
        printf("test_codegen: SKIP running CUDA kernels: no libcuda.so.1 or no usable GPU\n");
        if (cu.lib) dlclose(cu.lib);
        return;
    }
    lt_nvrtc *nv = NULL;
    lt_ctx ctx = {0};
    if (lt_nvrtc_open(&ctx, &nv) != LT_OK) {
        printf("test_codegen: SKIP running CUDA kernels: %s\n", ctx.msg);
        dlclose(cu.lib);
        return;
    }
    lt_arena ar;
    lt_arena_init(&ar);
    static const int ops[] = {LT_LOP_EXP, LT_LOP_LOG, LT_LOP_TANH, LT_LOP_ERF, LT_LOP_SIGMOID, LT_LOP_RSQRT,
                              LT_LOP_SIGN, LT_LOP_ROUND};
    const int nops = (int)(sizeof ops / sizeof ops[0]);
    lt_kernel *k1, *k2;
    cuda_kernels(&ar, &k1, &k2);
    lt_emit_kernel ks[3] = {{k1, NULL}, {k2, NULL}, {cuda_math_kernel(&ar, ops, nops), NULL}};
    lt_strbuf src = {0};
    lt_nvrtc_output img = {0};
    void *mod = NULL, *f[3] = {0};
    CHECK(lt_emit_module(&ctx, &lt_lang_cuda, ks, 3, NULL, &src) == LT_OK);
    CHECK(src.s && lt_nvrtc_compile(&ctx, nv, src.s, "run.cu", arch, NULL, 0, &img) == LT_OK);
    if (failures || cu.load(&mod, img.image)) {
        fprintf(stderr, "CUDA module: %s\n", ctx.msg);
        failures++;
        goto out;
    }
    for (int i = 0; i < 3; i++) CHECK(cu.get_fn(&f[i], mod, ks[i].kernel->name) == 0);

    /* data */
    static float xf[ROWS * COLS], relu[ROWS * COLS], sums[ROWS], mx[NG], my[NG * 8];
    static uint16_t xh[ROWS * COLS], mh[NG];
    for (int i = 0; i < ROWS * COLS; i++) {
        xf[i] = (float)((i * 7919) % 2001 - 1000) / 256.0f;
        xh[i] = lt_f32_to_f16(xf[i]);
    }
    for (int i = 0; i < NG; i++) mx[i] = i < 16 ? (float[]){0, -0.0f, 1, -1, 0.5f, 1.5f, 2.5f, -2.5f, 1e-30f, 100, -100,
                                                              INFINITY, -INFINITY, NAN, 20, -20}[i]
                                               : (float)(i - NG / 2) / 128.0f;
    unsigned long long d_out = 0, d_xh = 0, d_y = 0, d_xf = 0, d_my = 0, d_mh = 0, d_mx = 0;
    bool allocated = !cu.alloc(&d_out, sizeof sums) && !cu.alloc(&d_xh, sizeof xh) && !cu.alloc(&d_y, sizeof relu) &&
                     !cu.alloc(&d_xf, sizeof xf) && !cu.alloc(&d_my, sizeof my) && !cu.alloc(&d_mh, sizeof mh) &&
                     !cu.alloc(&d_mx, sizeof mx);
    CHECK(allocated);
    if (!allocated) goto release;
    CHECK(!cu.h2d(d_xh, xh, sizeof xh) && !cu.h2d(d_xf, xf, sizeof xf) && !cu.h2d(d_mx, mx, sizeof mx));
    void *a1[] = {&d_out, &d_xh}, *a2[] = {&d_y, &d_xf}, *a3[] = {&d_my, &d_mh, &d_mx};
    void **args[3] = {a1, a2, a3};
    for (int i = 0; i < 3; i++) {
        int64_t g[3], b[3];
        CHECK(lt_emit_launch_dims(&ctx, ks[i].kernel, g, b) == LT_OK);
        CHECK(cu.launch(f[i], (unsigned)g[0], (unsigned)g[1], (unsigned)g[2], (unsigned)b[0], (unsigned)b[1],
                        (unsigned)b[2], 0, NULL, args[i], NULL) == 0);
    }
    CHECK(cu.sync() == 0);
    CHECK(!cu.d2h(sums, d_out, sizeof sums) && !cu.d2h(relu, d_y, sizeof relu) && !cu.d2h(my, d_my, sizeof my) &&
          !cu.d2h(mh, d_mh, sizeof mh));
    int bad = 0;
    for (int r = 0; r < ROWS; r++) {
        double s = 0;
        for (int c = 0; c < COLS; c++) s += lt_f16_to_f32(xh[r * COLS + c]);
        bad += fabs(sums[r] - s) > 1e-4 * (1 + fabs(s));
    }
    for (int i = 0; i < ROWS * COLS; i++) bad += relu[i] != (xf[i] > 0 ? xf[i] : 0);
    CHECK(bad == 0);
    for (int o = 0; o < nops; o++) {
        int wrong = 0;
        for (int i = 0; i < NG; i++) {
            double v = mx[i], w;
            switch (ops[o]) {
            case LT_LOP_EXP: w = exp(v); break;
            case LT_LOP_LOG: w = log(v); break;
            case LT_LOP_TANH: w = tanh(v); break;
            case LT_LOP_ERF: w = erf(v); break;
            case LT_LOP_SIGMOID: w = 1 / (1 + exp(-v)); break;
            case LT_LOP_RSQRT: w = 1 / sqrt(v); break;
            case LT_LOP_SIGN: w = v > 0 ? 1 : v < 0 ? -1 : v == v ? 0 : v; break;
            default: w = nearbyint(v); break;
            }
            w = (double)(float)w;
            float got = my[o * NG + i];
            bool ok = isnan(w) ? isnan(got) : isinf(w) ? got == w : fabs(got - w) <= 1e-6 * fabs(w) + 1e-37;
            if (!ok && wrong++ < 3) fprintf(stderr, "GPU %s(%.9g) = %.9g, want %.9g\n", lt_lop_name(ops[o]), v, got, w);
        }
        CHECK(wrong == 0);
    }
    int hb = 0;
    for (int i = 0; i < NG; i++) {
        uint16_t w = lt_f32_to_f16(mx[i]);
        hb += mh[i] != w && !(isnan(mx[i]) && (mh[i] & 0x7fff) > 0x7c00);
    }
    CHECK(hb == 0);
    printf("test_codegen: ran %d emitted CUDA kernels on the GPU (%s): %s\n", 3, arch, failures ? "MISMATCH" : "all match");
release:;
    unsigned long long all[] = {d_out, d_xh, d_y, d_xf, d_my, d_mh, d_mx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) cu.free(all[i]);
out:
    if (mod) cu.unload(mod);
    cu.ctx_release(dev);
    lt_nvrtc_output_free(&img);
    lt_sb_free(&src);
    lt_nvrtc_close(nv);
    lt_arena_free(&ar);
    dlclose(cu.lib);
}

/* ---- out of memory at every allocation: a status, never a crash ---- */

static void test_oom(void) {
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k1, *k2;
    cuda_kernels(&ar, &k1, &k2);
    lt_emit_kernel ks[2] = {{tiny(&ar, "lt_t", NULL), "b"}, {k1, "a"}};
    for (int lang = 0; lang < 2; lang++) {
        bool ok = false;
        long n = 0;
        for (; n < 100000 && !ok; n++) {
            lt_ctx ctx = {0};
            lt_strbuf o = {0};
            g_countdown = n;
            lt_set_allocator(&g_test_alloc);
            lt_status s = lt_emit_module(&ctx, lang ? &lt_lang_cuda : &lt_lang_c, ks + lang, 1, NULL, &o);
            lt_set_allocator(NULL);
            g_countdown = -1;
            if (s != LT_OK && s != LT_ERR_NOMEM) {
                fprintf(stderr, "oom at allocation %ld: %s\n", n, ctx.msg);
                failures++;
                break;
            }
            ok = s == LT_OK;
            lt_sb_free(&o);
        }
        CHECK(ok && n > 3); /* several allocations failed on the way, each reported */
    }
    lt_arena_free(&ar);
}

int main(void) {
    test_exact_text();
    test_names_literals_casts();
    test_loop_safety();
    test_unsupported();
    test_module();
    test_cuda();
    test_cuda_run();
    test_oom();
    return test_report("test_codegen");
}
