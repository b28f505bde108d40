/* test_nchwc.c — the layout_nchwc pass and the channel-blocked ops (src/ops/nn/nn_nchwc.c,
 * src/lower/lower_nchwc.c, codegen/prelude/conv_nchwc.h).
 *
 *   1. before/after on printed IR: a conv -> relu -> conv -> residual add chain becomes one blocked
 *      chain with one reorder in and one out; a first conv of 3 channels stays NCHW;
 *   2. the interpreter agrees before and after the pass (the blocked ops' evals against Conv,
 *      MaxPool, AveragePool, GlobalAveragePool), on random inputs, for many conv geometries;
 *   3. the compiled CPU plan of the rewritten model agrees with the interpreter (rtol 1e-4): the
 *      blocked conv kernel (1x1 / 3x3 / 7x7, stride 1 / 2, padding, dilation, bias, relu, clip,
 *      residual, depthwise, channel counts that are not multiples of the block), the pools and the
 *      reorders, with the group epilogues fused into the calls.
 *   4. the pass's enabled hook: -O3, CPU target only, off with --no-microkernels; a rewritten model
 *      imports the "lathe" opset (written models declare the domain).
 * The pass runs through its descriptor (it is not in the default pipeline yet, see layout_nchwc.c).
 * On a host without AVX2 the pass does nothing and parts 1-3 only check that.
 */
#include "test_passes_util.h"

#include "compile/compile.h"

#include <unistd.h>

static char cache_dir[512];

static int64_t host_B(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (__builtin_cpu_supports("avx2")) return 8;
#endif
    return 0;
}

static lt_value *rand_const(tb *b, const char *name, int rank, const int64_t *dims, uint64_t *seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    double *v = malloc(sizeof *v * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = ((double)(*seed >> 11) / 9007199254740992.0 - 0.5) * 0.4;
    }
    lt_value *c = tb_const(b, name, LT_FLOAT, rank, dims, v);
    free(v);
    return c;
}

static lt_status run_pass(tb *b, bool *changed) {
    lt_pass_options o = {.level = 3, .verify_each = true};
    *changed = false;
    LT_TRY(lt_pass_layout_nchwc.run(&b->ctx, b->m, &o, changed));
    LT_TRY(lt_graph_compact(&b->ctx, b->g));
    LT_TRY(lt_graph_infer(&b->ctx, b->m));
    return lt_graph_verify(&b->ctx, b->m->graph);
}

typedef struct conv_case {
    int64_t C, M, H, W, k, s, p, d, group;
    bool bias, relu, residual, pool;
} conv_case;

static lt_node *conv(tb *b, lt_value *x, const conv_case *c, const char *out, uint64_t *seed) {
    char wn[64], bn[64];
    snprintf(wn, sizeof wn, "%s_w", out);
    snprintf(bn, sizeof bn, "%s_b", out);
    int64_t wd[4] = {c->M, c->C / c->group, c->k, c->k};
    lt_value *w = rand_const(b, wn, 4, wd, seed), *bias = c->bias ? rand_const(b, bn, 1, &c->M, seed) : NULL;
    lt_node *n = c->bias ? tb_node(b, "Conv", out, 3, x, w, bias) : tb_node(b, "Conv", out, 2, x, w);
    int64_t pads[4] = {c->p, c->p, c->p, c->p}, st[2] = {c->s, c->s}, dl[2] = {c->d, c->d};
    CHECK_OK(lt_node_set_attr_ints(&b->ctx, n, "pads", 4, pads), &b->ctx);
    CHECK_OK(lt_node_set_attr_ints(&b->ctx, n, "strides", 2, st), &b->ctx);
    CHECK_OK(lt_node_set_attr_ints(&b->ctx, n, "dilations", 2, dl), &b->ctx);
    if (c->group != 1) CHECK_OK(lt_node_set_attr_int(&b->ctx, n, "group", c->group), &b->ctx);
    return n;
}

/* x [1, C, H, W] -> conv(C -> C, 3x3 pad 1) -> relu -> case conv [-> relu] [+ residual] [pools]. */
static void build_case(tb *b, const conv_case *c) {
    tb_init(b, 13);
    uint64_t seed = 99;
    int64_t xd[4] = {1, c->C, c->H, c->W};
    lt_value *x = tb_input(b, "x", LT_FLOAT, 4, xd);
    conv_case first = {.C = c->C, .M = c->C, .k = 3, .s = 1, .p = 1, .d = 1, .group = 1, .bias = true};
    lt_value *h = conv(b, x, &first, "c0", &seed)->out[0];
    h = tb_node(b, "Relu", "r0", 1, h)->out[0];
    lt_value *y = conv(b, h, c, "c1", &seed)->out[0];
    if (c->residual) y = tb_node(b, "Add", "a1", 2, y, h)->out[0];
    if (c->relu) y = tb_node(b, "Relu", "r1", 1, y)->out[0];
    else y = tb_node(b, "Clip", "k1", 3, y, tb_scalar(b, "lo", LT_FLOAT, -0.5), tb_scalar(b, "hi", LT_FLOAT, 0.5))->out[0];
    if (c->pool) {
        lt_node *mp = tb_node(b, "MaxPool", "mp", 1, y);
        int64_t k[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
        CHECK_OK(lt_node_set_attr_ints(&b->ctx, mp, "kernel_shape", 2, k), &b->ctx);
        CHECK_OK(lt_node_set_attr_ints(&b->ctx, mp, "strides", 2, s2), &b->ctx);
        CHECK_OK(lt_node_set_attr_ints(&b->ctx, mp, "pads", 4, p1), &b->ctx);
        lt_node *ap = tb_node(b, "AveragePool", "ap", 1, mp->out[0]);
        CHECK_OK(lt_node_set_attr_ints(&b->ctx, ap, "kernel_shape", 2, k), &b->ctx);
        CHECK_OK(lt_node_set_attr_ints(&b->ctx, ap, "pads", 4, p1), &b->ctx);
        CHECK_OK(lt_node_set_attr_int(&b->ctx, ap, "count_include_pad", c->d > 1), &b->ctx);
        tb_output(b, tb_node(b, "GlobalAveragePool", "gap", 1, ap->out[0])->out[0]);
    }
    tb_output(b, y);
    tb_infer(b);
}

static void check_compiled(tb *b, tb_snap *s, const char *what) {
    lt_compile_options o;
    lt_compile_options_init(&o);
    o.cache_dir = cache_dir;
    o.threads = 2;
    o.strict = true;
    lt_plan *p = NULL;
    lt_compile_report rep = {0};
    lt_ctx ctx = {0};
    if (lt_compile(&ctx, b->m, &o, &p, &rep) != LT_OK) {
        fprintf(stderr, "%s: compile: %s\n", what, ctx.msg);
        failures++;
        lt_compile_report_free(&rep);
        return;
    }
    CHECK(rep.n_fallback_groups == 0 && rep.n_host_groups == 0);
    lt_datum *out[8] = {0};
    lt_ctx c2 = {0};
    CHECK(lt_plan_run(&c2, p, NULL, s->in, out) == LT_OK);
    for (int i = 0; i < s->n; i++) {
        if (!out[i] || !tensors_close(out[i]->tensor, s->out[i]->tensor, 1e-4, 1e-5)) {
            fprintf(stderr, "%s: compiled output %d '%s' differs from the interpreter\n", what, i, b->g->outputs[i]->name);
            failures++;
        }
        lt_datum_release(out[i]);
    }
    lt_plan_free(p);
    lt_compile_report_free(&rep);
}

/* The interpreter on the rewritten model agrees with the snapshot (rtol 1e-4, atol 1e-5: the
 * blocked eval sums in double, Conv's in float; outputs near 0 differ by rounding). Frees s. */
static void check_interp_after(tb *b, tb_snap *s, const char *what) {
    lt_datum *out[8] = {0};
    lt_ctx c = {0};
    if (lt_interp_run(&c, b->m, NULL, s->in, out) != LT_OK) {
        fprintf(stderr, "%s: interpreter after the pass: %s\n", what, c.msg);
        failures++;
    }
    for (int i = 0; i < s->n; i++) {
        if (out[i] && !tensors_close(out[i]->tensor, s->out[i]->tensor, 1e-4, 1e-5)) {
            fprintf(stderr, "%s: output %d '%s' of the interpreter differs after the pass\n", what, i,
                    b->g->outputs[i]->name);
            failures++;
        }
        lt_datum_release(out[i]);
    }
    for (int i = 0; i < 8; i++) {
        lt_datum_release(s->in[i]);
        lt_datum_release(s->out[i]);
    }
}

static void test_ir(int64_t B) {
    tb b;
    conv_case c = {.C = 32, .M = 32, .H = 6, .W = 5, .k = 1, .s = 1, .p = 0, .d = 1, .group = 1, .residual = true,
                   .relu = true};
    build_case(&b, &c);
    bool changed;
    CHECK_OK(run_pass(&b, &changed), &b.ctx);
    CHECK(changed == (B != 0));
    if (!B) {
        tb_free(&b);
        return;
    }
    char want[4096];
    long long Cb = 32 / B;
    snprintf(want, sizeof want,
             "graph main (%%x: float[1,32,6,5]) {\n"
             "  %%x_nchwc = lathe.NchwcReorderIn(%%x) {block=%lld} : float[1,%lld,6,5,%lld]\n"
             "  %%c0_nchwc = lathe.NchwcConv(%%x_nchwc, %%c0_w, %%c0_b) {pads=[1,1,1,1], strides=[1,1], "
             "dilations=[1,1]} : float[1,%lld,6,5,%lld]\n"
             "  %%r0_nchwc = Relu(%%c0_nchwc) : float[1,%lld,6,5,%lld]\n"
             "  %%c1_nchwc = lathe.NchwcConv(%%r0_nchwc, %%c1_w) {pads=[0,0,0,0], strides=[1,1], dilations=[1,1]} : "
             "float[1,%lld,6,5,%lld]\n"
             "  %%a1_nchwc = Add(%%c1_nchwc, %%r0_nchwc) : float[1,%lld,6,5,%lld]\n"
             "  %%r1_nchwc = Relu(%%a1_nchwc) : float[1,%lld,6,5,%lld]\n"
             "  %%r1 = lathe.NchwcReorderOut(%%r1_nchwc) {channels=32} : float[1,32,6,5]\n"
             "  return %%r1\n"
             "}\n",
             (long long)B, Cb, (long long)B, Cb, (long long)B, Cb, (long long)B, Cb, (long long)B, Cb, (long long)B,
             Cb, (long long)B);
    EXPECT_IR(&b, want);
    tb_free(&b);

    /* a first conv of 3 channels stays NCHW: the chain starts at the next conv */
    tb_init(&b, 13);
    uint64_t seed = 1;
    int64_t xd[4] = {1, 3, 8, 8};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 4, xd);
    conv_case c3 = {.C = 3, .M = 32, .k = 3, .s = 1, .p = 1, .d = 1, .group = 1};
    conv_case c4 = {.C = 32, .M = 32, .k = 3, .s = 1, .p = 1, .d = 1, .group = 1};
    lt_value *y = conv(&b, x, &c3, "first", &seed)->out[0];
    tb_output(&b, conv(&b, y, &c4, "second", &seed)->out[0]);
    tb_infer(&b);
    CHECK_OK(run_pass(&b, &changed), &b.ctx);
    CHECK(ir_has(&b, "= Conv(%x, %first_w)"));
    CHECK(ir_has(&b, "lathe.NchwcReorderIn(%first)"));
    CHECK(ir_has(&b, "lathe.NchwcConv(%first_nchwc, %second_w)"));
    tb_free(&b);
}

static void test_cases(void) {
    static const conv_case cases[] = {
        /* C, M, H, W, k, s, p, d, group, bias, relu, residual, pool */
        {32, 32, 9, 11, 3, 1, 1, 1, 1, true, true, true, true},    /* 3x3, residual + relu */
        {32, 48, 14, 13, 3, 2, 1, 1, 1, true, false, false, true}, /* stride 2, clip, M % 16 != 0 */
        {24, 40, 10, 31, 1, 1, 0, 1, 1, false, true, false, false}, /* 1x1 long row, C, M not multiples */
        {32, 32, 12, 12, 1, 2, 0, 1, 1, true, true, false, false},  /* 1x1 stride 2 */
        {32, 32, 15, 17, 7, 1, 3, 1, 1, true, true, true, false},   /* 7x7 pad 3 */
        {32, 16, 13, 13, 3, 1, 2, 2, 1, true, false, false, true},  /* dilation 2 */
        {48, 48, 11, 9, 3, 1, 1, 1, 48, true, true, true, false},   /* depthwise */
        {40, 40, 12, 10, 3, 2, 1, 1, 40, false, false, false, true}, /* depthwise stride 2, 40 = 2.5 blocks */
        {64, 64, 3, 3, 3, 1, 1, 1, 1, true, true, true, true},      /* tiny image: edges only */
        {32, 32, 5, 40, 5, 2, 0, 1, 1, true, true, false, false},   /* no padding, 5x5 stride 2 */
        {32, 32, 7, 30, 3, 1, 1, 1, 32, true, true, true, false},   /* depthwise: 12-pixel strips + rest */
        {48, 48, 9, 29, 3, 2, 1, 1, 48, true, false, false, false}, /* depthwise stride 2, wide */
        {24, 24, 8, 27, 5, 1, 4, 2, 24, false, true, true, false},  /* depthwise 5x5 dilation 2 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tb b;
        build_case(&b, &cases[i]);
        tb_snap s;
        tb_snapshot(&b, &s);
        bool changed;
        CHECK_OK(run_pass(&b, &changed), &b.ctx);
        CHECK(changed == (host_B() != 0));
        char what[64];
        snprintf(what, sizeof what, "case %zu", i);
        if (host_B()) CHECK(ir_has(&b, "lathe.NchwcConv") && lt_model_opset(b.m, "lathe") == 1);
        check_compiled(&b, &s, what);
        check_interp_after(&b, &s, what);
        tb_free(&b);
    }
}

/* Bad input to the blocked ops: an error naming the node, never a crash. */
static void test_errors(void) {
    tb b;
    tb_init(&b, 13);
    int64_t xd[4] = {1, 4, 3, 3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 4, xd), *in[1] = {x};
    lt_node *n;
    CHECK_OK(lt_node_new(&b.ctx, b.g, "NchwcReorderOut", "lathe", 1, in, 1, "y", NULL, &n), &b.ctx);
    CHECK_OK(lt_node_set_attr_int(&b.ctx, n, "channels", 4), &b.ctx);
    tb_output(&b, n->out[0]);
    lt_ctx c = {0};
    lt_datum *din[1] = {tb_random_input(x, &(uint64_t){7})}, *dout[1] = {0};
    CHECK(lt_interp_run(&c, b.m, NULL, din, dout) != LT_OK && strstr(c.msg, "NchwcReorderOut"));
    lt_datum_release(din[0]);
    lt_datum_release(dout[0]);
    tb_free(&b);
}

/* The pass is off by default (LT_PIPE_OFF in pipeline.c): it runs only when enabled by name, then at
 * any level >= 1, and only for a target that takes the NCHWc layout (the CPU), with microkernels (its ops lower to calls only). */
static void test_enabled(void) {
    const lt_pass *p = &lt_pass_layout_nchwc;
    CHECK(lt_pass_find("layout_nchwc") == p && lt_pass_off_by_default(p));
    CHECK(!lt_pass_is_enabled(&(lt_pass_options){.level = 3}, p));
    CHECK(!lt_pass_is_enabled(&(lt_pass_options){.level = 3, .no_nchwc_layout = false}, p));
    CHECK(lt_pass_is_enabled(&(lt_pass_options){.level = 3, .enable = "layout_nchwc"}, p));
    CHECK(lt_pass_is_enabled(&(lt_pass_options){.level = 1, .no_nchwc_layout = false, .enable = "cse,layout_nchwc"}, p));
    CHECK(!lt_pass_is_enabled(&(lt_pass_options){.level = 0, .enable = "layout_nchwc"}, p));
    CHECK(!lt_pass_is_enabled(&(lt_pass_options){.level = 3, .no_nchwc_layout = true, .enable = "layout_nchwc"}, p));
    CHECK(!lt_pass_is_enabled(&(lt_pass_options){.level = 3, .no_microkernels = true, .enable = "layout_nchwc"}, p));
    CHECK(!lt_pass_is_enabled(&(lt_pass_options){.level = 3, .disable = "layout_nchwc"}, p));
    /* a default-on pass is not affected by the list; enabling one runs it below its level */
    CHECK(lt_pass_is_enabled(&(lt_pass_options){.level = 3, .enable = "layout_nchwc"}, &lt_pass_cse));
    CHECK(!lt_pass_is_enabled(&(lt_pass_options){.level = 1}, &lt_pass_cse));
    CHECK(lt_pass_is_enabled(&(lt_pass_options){.level = 1, .enable = "cse"}, &lt_pass_cse));
    /* option checks: unknown names (message lists the passes), both lists */
    lt_ctx c = {0};
    CHECK(lt_pass_options_check(&c, &(lt_pass_options){.level = 3, .enable = "layout_nchwc,nope"}) == LT_ERR_USAGE);
    CHECK(strstr(c.msg, "'nope'") && strstr(c.msg, "layout_nchwc") && strstr(c.msg, "simplify"));
    lt_ctx c2 = {0};
    CHECK(lt_pass_options_check(&c2, &(lt_pass_options){.level = 3, .enable = "layout_nchwc",
                                                         .disable = "layout_nchwc"}) == LT_ERR_USAGE);
    CHECK(strstr(c2.msg, "both disabled and enabled") != NULL);
    lt_ctx c3 = {0};
    CHECK(lt_pass_options_check(&c3, &(lt_pass_options){.level = 3, .enable = "layout_nchwc"}) == LT_OK);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_dir, sizeof cache_dir, "%s/lathe-test-cache-%ld", tmp && *tmp ? tmp : "/tmp", (long)getuid());
    int64_t B = host_B();
    test_enabled();
    test_ir(B);
    test_cases();
    test_errors();
    if (failures) {
        fprintf(stderr, "test_nchwc: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_nchwc: ok (block %lld)\n", (long long)B);
    return 0;
}
