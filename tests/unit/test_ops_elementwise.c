/* test_ops_elementwise.c — unit tests of the elementwise and misc families (src/ops/elementwise/,
 * src/ops/misc/) and the narrow-float conversions in src/base/dtype.c, for what the ONNX node tests
 * do not reach: Cast to and from strings (numpy's shortest-repr formatting, parsing and its errors),
 * float8 NaN signs and e8m0 rounding modes, integer division and modulo corners (INT64_MIN / -1,
 * division by zero), shifts by the type's width or more, opset < 7 legacy broadcasting, Clip-6's
 * attributes, the RE2 regex engine (syntax the tests never use, error messages, linear time on
 * pathological patterns), tree-ensemble error paths, and out-of-memory on every allocation of a set
 * of ops with a check that nothing leaks. Nodes are built by hand and run through the op table's
 * hooks. Exits non-zero on any failure. */
#include "ops/misc/misc_impl.h"
#include "ops/ops.h"
#include "test_node.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Cast and strings ---- */
static void test_cast_strings(void) {
    tnode t;
    int64_t n8 = 8;
    const double v[8] = {0.1, 1e20, 1.0, 1e-5, 123456789.0, NAN, -INFINITY, -0.0};
    const char *want32[8] = {"0.1", "1e+20", "1.0", "1e-05", "123456790.0", "nan", "-inf", "-0.0"};
    tn_init_named(&t, "", "Cast", 21, 1);
    tn_input(&t, LT_FLOAT, 1, &n8, v, false);
    tn_int(&t, "to", LT_STRING);
    CHECK(tn_eval(&t) == LT_OK);
    for (int k = 0; k < 8 && tn_out(&t, 0); k++) CHECK(strcmp(outs(&t, 0, k), want32[k]) == 0);
    tn_free(&t);

    const char *want64[8] = {"0.1", "1e+20", "1.0", "1e-05", "123456789.0", "nan", "-inf", "-0.0"};
    tn_init_named(&t, "", "Cast", 21, 1);
    tn_input(&t, LT_DOUBLE, 1, &n8, v, false);
    tn_int(&t, "to", LT_STRING);
    CHECK(tn_eval(&t) == LT_OK);
    for (int k = 0; k < 8 && tn_out(&t, 0); k++) CHECK(strcmp(outs(&t, 0, k), want64[k]) == 0);
    tn_free(&t);

    /* float16 65504 prints as its shortest digits, "65500.0"; bool as True/False */
    int64_t n2 = 2;
    tn_init_named(&t, "", "Cast", 21, 1);
    tn_input(&t, LT_FLOAT16, 1, &n2, (double[]){65504, 0.1}, false);
    tn_int(&t, "to", LT_STRING);
    CHECK(tn_eval(&t) == LT_OK && strcmp(outs(&t, 0, 0), "65500.0") == 0 && strcmp(outs(&t, 0, 1), "0.1") == 0);
    tn_free(&t);

    const char *in[6] = {" 1.5 ", "-INF", "NaN", "1e5", "+Inf", "7"};
    tn_init_named(&t, "", "Cast", 21, 1);
    tn_str_in(&t, 1, (int64_t[]){6}, in);
    tn_int(&t, "to", LT_FLOAT);
    CHECK(tn_eval(&t) == LT_OK);
    if (tn_out(&t, 0)) {
        CHECK(outf(&t, 0, 0) == 1.5 && isinf(outf(&t, 0, 1)) && outf(&t, 0, 1) < 0 && isnan(outf(&t, 0, 2)));
        CHECK(outf(&t, 0, 3) == 1e5 && isinf(outf(&t, 0, 4)) && outf(&t, 0, 5) == 7);
    }
    tn_free(&t);

    const char *badf[2] = {"1.5x", "2"};
    tn_init_named(&t, "", "Cast", 21, 1);
    tn_str_in(&t, 1, (int64_t[]){2}, badf);
    tn_int(&t, "to", LT_DOUBLE);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "cannot parse '1.5x'"));
    tn_free(&t);

    const char *ints[3] = {"-12", " 40 ", "3"};
    tn_init_named(&t, "", "Cast", 21, 1);
    tn_str_in(&t, 1, (int64_t[]){3}, ints);
    tn_int(&t, "to", LT_INT8);
    CHECK(tn_eval(&t) == LT_OK && outi(&t, 0, 0) == -12 && outi(&t, 0, 1) == 40 && outi(&t, 0, 2) == 3);
    tn_free(&t);

    /* opset 1 spells `to` as a string */
    tn_init_named(&t, "", "Cast", 1, 1);
    tn_input(&t, LT_FLOAT, 1, &n2, (double[]){2.7, -2.7}, false);
    tn_str(&t, "to", "INT32");
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.dtype == LT_INT32);
    CHECK(tn_eval(&t) == LT_OK && outi(&t, 0, 0) == 2 && outi(&t, 0, 1) == -2);
    tn_free(&t);
}

static void test_narrow_floats(void) {
    /* NaN keeps its sign through float8 (the FNUZ NaN 0x80 decodes negative, like ml_dtypes). */
    CHECK(isnan(lt_f8_to_f32(0x80, LT_FLOAT8E4M3FNUZ)) && signbit(lt_f8_to_f32(0x80, LT_FLOAT8E4M3FNUZ)));
    CHECK(isnan(lt_f8_to_f32(0xff, LT_FLOAT8E4M3FN)) && signbit(lt_f8_to_f32(0xff, LT_FLOAT8E4M3FN)));
    CHECK(lt_f32_to_f8(-NAN, LT_FLOAT8E4M3FN, true) == 0xff && lt_f32_to_f8(NAN, LT_FLOAT8E5M2, false) == 0x7e);
    /* unsaturated overflow: inf for E5M2, NaN for the others; saturated: the largest finite value */
    CHECK(lt_f32_to_f8(-1e6f, LT_FLOAT8E5M2, false) == 0xfc && lt_f32_to_f8(1e6f, LT_FLOAT8E4M3FN, false) == 0x7f);
    CHECK(lt_f32_to_f8(464.0f, LT_FLOAT8E4M3FN, false) == 0x7e); /* a tie rounds to even: 448 */
    CHECK(lt_f32_to_f8(-INFINITY, LT_FLOAT8E4M3FNUZ, true) == 0xff);
    /* float4: NaN encodes like ml_dtypes, infinities saturate */
    CHECK(lt_f32_to_f4e2m1(NAN) == 0x8 && lt_f32_to_f4e2m1(-INFINITY) == 0xf && lt_f32_to_f4e2m1(0.75f) == 0x2);
    /* e8m0: exponent bits, rounding modes, saturation */
    CHECK(lt_f32_to_e8m0_rm(3.0f, true, LT_ROUND_UP) == 129 && lt_f32_to_e8m0_rm(3.0f, true, LT_ROUND_DOWN) == 128);
    CHECK(lt_f32_to_e8m0_rm(2.9f, true, LT_ROUND_NEAREST) == 128 && lt_f32_to_e8m0_rm(3.1f, true, LT_ROUND_NEAREST) == 129);
    CHECK(lt_f32_to_e8m0_rm(3e38f, true, LT_ROUND_UP) == 0xfe && lt_f32_to_e8m0_rm(3e38f, false, LT_ROUND_UP) == 0xff);
    CHECK(lt_f32_to_e8m0_rm(-4.0f, true, LT_ROUND_UP) == 129 && lt_f32_to_e8m0(INFINITY, true) == 0xff);
    /* int64 -> float32 rounds once from the integer */
    int64_t big = ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1;
    float f;
    lt_convert_elem(&big, LT_INT64, 0, &f, LT_FLOAT, 0, true);
    CHECK(f == (float)big);
}

/* ---- integer arithmetic corners ---- */
static void test_int_arith(void) {
    tnode t;
    int64_t a[5] = {INT64_MIN, 7, -7, 7, -7}, b[5] = {-1, 0, 2, -2, -2};
    tn_init_named(&t, "", "Div", 14, 1);
    tn_ints_in(&t, a, 5, false);
    tn_ints_in(&t, b, 5, false);
    CHECK(tn_eval(&t) == LT_OK);
    if (tn_out(&t, 0)) {
        const int64_t *y = tn_out(&t, 0)->data;
        CHECK(y[0] == INT64_MIN && y[1] == 0 && y[2] == -3 && y[3] == -3 && y[4] == 3);
    }
    tn_free(&t);

    for (int fm = 0; fm < 2; fm++) {
        tn_init_named(&t, "", "Mod", 13, 1);
        tn_ints_in(&t, a, 5, false);
        tn_ints_in(&t, b, 5, false);
        tn_int(&t, "fmod", fm);
        CHECK(tn_eval(&t) == LT_OK);
        if (tn_out(&t, 0)) {
            const int64_t *y = tn_out(&t, 0)->data;
            CHECK(y[0] == 0 && y[1] == 0);
            CHECK(fm ? (y[2] == -1 && y[3] == 1 && y[4] == -1) : (y[2] == 1 && y[3] == -1 && y[4] == -1));
        }
        tn_free(&t);
    }

    /* shifts by the width or more give 0 */
    int64_t n3 = 3;
    tn_init_named(&t, "", "BitShift", 11, 1);
    tn_input(&t, LT_UINT8, 1, &n3, (double[]){1, 255, 3}, false);
    tn_input(&t, LT_UINT8, 1, &n3, (double[]){7, 8, 200}, false);
    tn_str(&t, "direction", "LEFT");
    CHECK(tn_eval(&t) == LT_OK && outi(&t, 0, 0) == 128 && outi(&t, 0, 1) == 0 && outi(&t, 0, 2) == 0);
    tn_free(&t);

    tn_init_named(&t, "", "BitShift", 11, 1);
    tn_input(&t, LT_UINT8, 1, &n3, (double[]){1, 255, 3}, false);
    tn_input(&t, LT_UINT8, 1, &n3, (double[]){7, 8, 200}, false);
    tn_str(&t, "direction", "UP");
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "LEFT or RIGHT"));
    tn_free(&t);
}

/* ---- old opsets ---- */
static void test_legacy(void) {
    tnode t;
    int64_t d23[2] = {2, 3}, d2[1] = {2};
    tn_init_named(&t, "", "Add", 6, 1); /* B of shape [2] broadcast along axis 0 of A [2,3] */
    tn_input(&t, LT_FLOAT, 2, d23, (double[]){0, 1, 2, 3, 4, 5}, false);
    tn_input(&t, LT_FLOAT, 1, d2, (double[]){10, 20}, false);
    tn_int(&t, "broadcast", 1);
    tn_int(&t, "axis", 0);
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.rank == 2);
    CHECK(tn_eval(&t) == LT_OK && outf(&t, 0, 0) == 10 && outf(&t, 0, 2) == 12 && outf(&t, 0, 3) == 23);
    tn_free(&t);

    tn_init_named(&t, "", "Add", 6, 1);
    tn_input(&t, LT_FLOAT, 2, d23, NULL, false);
    tn_input(&t, LT_FLOAT, 1, (int64_t[]){4}, NULL, false);
    tn_int(&t, "broadcast", 1);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "legacy broadcast"));
    tn_free(&t);

    tn_init_named(&t, "", "Clip", 6, 1);
    tn_input(&t, LT_FLOAT, 2, d23, (double[]){-5, 0, 1, 2, 3, 9}, false);
    tn_float(&t, "min", 0.5f);
    tn_float(&t, "max", 2.5f);
    CHECK(tn_eval(&t) == LT_OK && outf(&t, 0, 0) == 0.5 && outf(&t, 0, 2) == 1 && outf(&t, 0, 5) == 2.5);
    tn_free(&t);
}

/* ---- regex ---- */
static int rx(const char *pat, const char *s) {
    lt_ctx c = {0};
    lt_regex *re;
    if (lt_regex_compile(&c, pat, strlen(pat), &re)) return -2;
    int r = lt_regex_full_match(re, s, strlen(s));
    lt_regex_free(re);
    return r;
}

static void test_regex(void) {
    CHECK(rx("www\\.[\\w.-]+\\.\\bcom\\b", "www.google.com") == 1);
    CHECK(rx("www\\.[\\w.-]+\\.\\bcom\\b", "www.bbc.co.uk") == 0);
    CHECK(rx("(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", "account@gmail.com") == 1);
    CHECK(rx("[[:alpha:]]+\\d", "abc1") == 1 && rx("[[:^digit:]]+", "ab") == 1);
    CHECK(rx("(?i)hello", "HeLLo") == 1 && rx("a(?i:bc)d", "aBCd") == 1 && rx("a(?i:bc)d", "aBCD") == 0);
    CHECK(rx("a{2,3}", "aaaa") == 0 && rx("a{2,}", "aaaa") == 1 && rx("a{,2}", "a{,2}") == 1);
    CHECK(rx("(?m)^ab$\\n^c$", "ab\nc") == 1 && rx("a.c", "a\nc") == 0 && rx("(?s)a.c", "a\nc") == 1);
    CHECK(rx(".\xc3\xa9.", "a\xc3\xa9" "b") == 1); /* '.' matches one UTF-8 code point */
    CHECK(rx("\\x41\\x{42}[\\x43-\\x45]", "ABD") == 1);
    CHECK(rx("(x+x+)+y", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx") == 0); /* no blow-up */
    lt_ctx c = {0};
    lt_regex *re;
    CHECK(lt_regex_compile(&c, "(ab", 3, &re) == LT_ERR_INVALID && strstr(c.msg, "missing )"));
    lt_ctx_clear(&c);
    CHECK(lt_regex_compile(&c, "a{5,2}", 6, &re) == LT_ERR_INVALID && strstr(c.msg, "repetition"));
    lt_ctx_clear(&c);
    CHECK(lt_regex_compile(&c, "((a{1000}){1000}){1000}", 23, &re) == LT_ERR_INVALID && strstr(c.msg, "too large"));
}

/* ---- misc ops: errors that name the node and the index ---- */
static void test_misc_errors(void) {
    tnode t;
    int64_t d23[2] = {2, 3};
    int64_t idx[2] = {0, 3};
    tn_init_named(&t, "ai.onnx.ml", "ArrayFeatureExtractor", 1, 1);
    tn_input(&t, LT_FLOAT, 2, d23, NULL, false);
    tn_ints_in(&t, idx, 2, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "index 3 out of range [0, 3)") && msg_has(&t, "'t'"));
    tn_free(&t);

    /* a legacy tree whose branches loop */
    int64_t tids[2] = {0, 0}, nids[2] = {0, 1}, feats[2] = {0, 0}, tn[2] = {1, 0}, fn[2] = {1, 0};
    int64_t tt[1] = {0}, tnn[1] = {1}, tid[1] = {0};
    const char *modes[2] = {"BRANCH_LEQ", "BRANCH_GT"};
    tn_init_named(&t, "ai.onnx.ml", "TreeEnsembleRegressor", 3, 1);
    tn_input(&t, LT_FLOAT, 2, d23, (double[]){1, 1, 1, 1, 1, 1}, false);
    tn_ints(&t, "nodes_treeids", tids, 2);
    tn_ints(&t, "nodes_nodeids", nids, 2);
    tn_ints(&t, "nodes_featureids", feats, 2);
    tn_ints(&t, "nodes_truenodeids", tn, 2);
    tn_ints(&t, "nodes_falsenodeids", fn, 2);
    tn_strs(&t, "nodes_modes", modes, 2);
    tn_ints(&t, "target_treeids", tt, 1);
    tn_ints(&t, "target_nodeids", tnn, 1);
    CHECK(tn_eval(&t) != LT_OK); /* target_ids missing: lengths differ */
    t.node.n_attr--;
    tn_ints(&t, "target_nodeids", tnn, 1);
    tn_ints(&t, "target_ids", tid, 1);
    lt_attr *nv = tn_attr(&t, "nodes_values", LT_AT_FLOATS);
    static const float vals[2] = {0, 5};
    nv->floats = (float *)vals;
    nv->n = 2;
    lt_attr *tw = tn_attr(&t, "target_weights", LT_AT_FLOATS);
    static const float w1[1] = {1};
    tw->floats = (float *)w1;
    tw->n = 1;
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "cycle"));
    tn_free(&t);
}

/* ---- out of memory: every allocation of these evaluations fails in turn, nothing leaks ---- */
static void oom_case(const char *label, void (*build)(tnode *)) {
    for (long k = 0; k < 400; k++) {
        tnode t;
        lt_set_allocator(&g_test_alloc);
        g_live = 0;
        g_countdown = -1;
        build(&t);
        g_countdown = k;
        lt_status s = tn_eval(&t);
        g_countdown = -1;
        tn_free(&t);
        if (g_live != 0) {
            fprintf(stderr, "%s: %ld blocks leaked when allocation %ld failed\n", label, g_live, k);
            failures++;
            break;
        }
        lt_set_allocator(NULL);
        if (s == LT_OK) break; /* every allocation has been failed once */
        CHECK(s == LT_ERR_NOMEM);
    }
    lt_set_allocator(NULL);
}

static void build_cast_str(tnode *t) {
    int64_t n = 3;
    tn_init_named(t, "", "Cast", 21, 1);
    tn_input(t, LT_FLOAT, 1, &n, (double[]){1.5, 2, 3}, false);
    tn_int(t, "to", LT_STRING);
}
static void build_split(tnode *t) {
    static const char *s[3] = {"a b c", "d", ""};
    tn_init_named(t, "", "StringSplit", 20, 2);
    tn_str_in(t, 1, (int64_t[]){3}, s);
}
static void build_regex(tnode *t) {
    static const char *s[2] = {"abc", "x"};
    tn_init_named(t, "", "RegexFullMatch", 20, 1);
    tn_str_in(t, 1, (int64_t[]){2}, s);
    tn_str(t, "pattern", "(a|b)+c?");
}
static void build_where(tnode *t) {
    static const char *s[2] = {"yes", "no"};
    int64_t n2 = 2;
    tn_init_named(t, "", "Where", 16, 1);
    tn_input(t, LT_BOOL, 1, &n2, (double[]){1, 0}, false);
    tn_str_in(t, 1, (int64_t[]){2}, s);
    tn_str_in(t, 1, (int64_t[]){2}, s);
}
static void build_sum(tnode *t) {
    int64_t d[2] = {2, 1}, e[1] = {3};
    tn_init_named(t, "", "Sum", 13, 1);
    tn_input(t, LT_FLOAT, 2, d, NULL, false);
    tn_input(t, LT_FLOAT, 1, e, NULL, false);
    tn_input(t, LT_FLOAT, 1, e, NULL, false);
}

/* ---- one rule, one message: the infer hook and the eval hook say the same (lt_ew_check) ---- */
static void ew_same_message(tnode *t, const char *part) {
    char m[LT_MSG_MAX];
    CHECK(tn_infer(t) == LT_ERR_INVALID);
    snprintf(m, sizeof m, "%s", t->ctx.msg);
    CHECK(tn_eval(t) == LT_ERR_INVALID && strcmp(m, t->ctx.msg) == 0 && strstr(m, part) != NULL);
    if (strcmp(m, t->ctx.msg) != 0) fprintf(stderr, "  infer: %s\n  eval:  %s\n", m, t->ctx.msg);
    tn_free(t);
}

static void test_infer_eval_same_message(void) {
    tnode t;
    int64_t d23[2] = {2, 3}, d3[1] = {3}, d4[1] = {4};

    tn_init_named(&t, "", "Add", 14, 1);
    tn_input(&t, LT_FLOAT, 2, d23, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d4, NULL, true);
    ew_same_message(&t, "shapes [2,3] and [4] cannot be broadcast");

    tn_init_named(&t, "", "Mul", 14, 1);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, false);
    tn_input(&t, LT_DOUBLE, 1, d3, NULL, true);
    ew_same_message(&t, "inputs have different types float and double");

    tn_init_named(&t, "", "Clip", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, true);
    ew_same_message(&t, "min must be a scalar (has 3 elements)");

    tn_init_named(&t, "", "PRelu", 16, 1);
    tn_input(&t, LT_FLOAT, 2, d23, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d4, NULL, true);
    ew_same_message(&t, "slope of shape [4] cannot be broadcast to X of shape [2,3]");

    tn_init_named(&t, "", "Where", 16, 1);
    tn_input(&t, LT_BOOL, 1, (int64_t[]){2}, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, false);
    ew_same_message(&t, "shapes [2] and [3] cannot be broadcast");

    tn_init_named(&t, "", "Sum", 13, 1);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d4, NULL, false);
    ew_same_message(&t, "shapes [3] and [4] cannot be broadcast");

    tn_init_named(&t, "", "BitShift", 11, 1);
    tn_input(&t, LT_UINT8, 1, d3, NULL, false);
    tn_input(&t, LT_UINT8, 1, d3, NULL, false);
    tn_str(&t, "direction", "UP");
    ew_same_message(&t, "direction must be LEFT or RIGHT, got 'UP'");

    tn_init_named(&t, "", "Mod", 13, 1);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, false);
    ew_same_message(&t, "fmod must be 1 for float inputs");

    tn_init_named(&t, "", "Add", 6, 1); /* legacy broadcast: B must match A from axis */
    tn_input(&t, LT_FLOAT, 2, d23, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, false);
    tn_int(&t, "broadcast", 1);
    tn_int(&t, "axis", 0);
    ew_same_message(&t, "legacy broadcast: B dim 0 (3) does not match A dim 0 (2)");

    tn_init_named(&t, "", "Celu", 12, 1);
    tn_input(&t, LT_FLOAT, 1, d3, NULL, false);
    tn_float(&t, "alpha", 0);
    ew_same_message(&t, "alpha must not be 0");
}

int main(void) {
    test_cast_strings();
    test_narrow_floats();
    test_int_arith();
    test_legacy();
    test_regex();
    test_misc_errors();
    test_infer_eval_same_message();
    oom_case("Cast to string", build_cast_str);
    oom_case("StringSplit", build_split);
    oom_case("RegexFullMatch", build_regex);
    oom_case("Where (strings)", build_where);
    oom_case("Sum", build_sum);
    return test_report("test_ops_elementwise");
}
