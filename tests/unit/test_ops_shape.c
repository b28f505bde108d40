/* test_ops_shape.c — unit tests of the shape family (src/ops/shape/) for what the ONNX node tests
 * do not reach: old-opset forms (attributes that later became inputs, Tile-1, Concat-1's default
 * axis), string tensors through every kind of data movement, the clamping corners of Slice and Pad,
 * error paths (indices out of range, negative or huge sizes, bad shapes) with their messages, infer
 * hooks on constant inputs, and out-of-memory on every allocation of a set of ops with a check that
 * nothing leaks. Nodes are built by hand and run through the hooks in the op table. Exits non-zero
 * on any failure. */
#include "ops/ops.h"
#include "test_node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double k_iota[24] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};

/* ---- old-opset forms ---- */
static void test_old_opsets(void) {
    tnode t;
    int64_t d23[2] = {2, 3}, d6[1] = {6};

    tn_init_named(&t, "", "Reshape", 4, 1); /* shape attribute */
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    int64_t sh[2] = {3, -1};
    tn_ints(&t, "shape", sh, 2);
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 2, (int64_t[]){3, 2}) && out_vals(&t, 0, k_iota, 6));
    tn_free(&t);

    tn_init_named(&t, "", "Squeeze", 11, 1); /* empty axes attribute: all ones */
    tn_input(&t, LT_FLOAT, 3, (int64_t[]){1, 3, 1}, k_iota, false);
    tn_ints(&t, "axes", NULL, 0);
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 1, (int64_t[]){3}));
    tn_free(&t);

    tn_init_named(&t, "", "Unsqueeze", 11, 1);
    tn_input(&t, LT_FLOAT, 1, d6, k_iota, false);
    int64_t ax[2] = {-1, 0};
    tn_ints(&t, "axes", ax, 2);
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 3, (int64_t[]){1, 6, 1}));
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 3, (int64_t[]){1, 6, 1}));
    tn_free(&t);

    tn_init_named(&t, "", "Slice", 9, 1); /* attributes, clamped ends */
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    int64_t st[2] = {1, -2}, en[2] = {1000, -1}, sa[2] = {1, 0};
    tn_ints(&t, "starts", st, 2);
    tn_ints(&t, "ends", en, 2);
    tn_ints(&t, "axes", sa, 2);
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 2, (int64_t[]){1, 2}) && out_vals(&t, 0, (double[]){1, 2}, 2));
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 2, (int64_t[]){1, 2}));
    tn_free(&t);

    tn_init_named(&t, "", "Pad", 2, 1); /* pads and value attributes */
    tn_input(&t, LT_INT32, 1, (int64_t[]){2}, k_iota + 4, false);
    int64_t pads[2] = {1, 2};
    tn_ints(&t, "pads", pads, 2);
    tn_float(&t, "value", 9);
    CHECK(tn_eval(&t) == LT_OK && out_vals(&t, 0, (double[]){9, 4, 5, 9, 9}, 5));
    tn_free(&t);

    tn_init_named(&t, "", "Split", 2, 2); /* split attribute */
    tn_input(&t, LT_FLOAT, 1, d6, k_iota, false);
    int64_t sp[2] = {4, 2};
    tn_ints(&t, "split", sp, 2);
    CHECK(tn_eval(&t) == LT_OK && out_vals(&t, 0, k_iota, 4) && out_vals(&t, 1, k_iota + 4, 2));
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 1, 1, (int64_t[]){2}));
    tn_free(&t);

    tn_init_named(&t, "", "Split", 13, 4); /* opset 13 without split: equal parts only */
    tn_input(&t, LT_FLOAT, 1, d6, k_iota, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "evenly"));
    tn_free(&t);

    tn_init_named(&t, "", "Split", 18, 4); /* num_outputs: last chunk smaller */
    tn_input(&t, LT_FLOAT, 1, (int64_t[]){7}, k_iota, false);
    tn_int(&t, "num_outputs", 4);
    CHECK(tn_eval(&t) == LT_OK && out_vals(&t, 3, k_iota + 6, 1) && out_vals(&t, 2, k_iota + 4, 2));
    tn_free(&t);

    tn_init_named(&t, "", "Tile", 1, 1); /* Tile-1: tiles and axis inputs */
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_input(&t, LT_INT64, 0, NULL, (double[]){2}, false);
    tn_input(&t, LT_INT64, 0, NULL, (double[]){1}, false);
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 2, (int64_t[]){2, 6}) &&
          out_vals(&t, 0, (double[]){0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}, 12));
    tn_free(&t);

    tn_init_named(&t, "", "Concat", 1, 1); /* Concat-1: axis defaults to 1 */
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 2, (int64_t[]){2, 6}));
    tn_free(&t);
    tn_init_named(&t, "", "Concat", 13, 1); /* ... and is required later */
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "axis"));
    tn_free(&t);
}

/* ---- strings through data movement ---- */
static void test_strings(void) {
    static const char *const s6[6] = {"a", "bb", "", "dddd", "e", "ff"};
    int64_t d23[2] = {2, 3};
    tnode t;

    tn_init_named(&t, "", "Transpose", 13, 1);
    tn_str_in(&t, 2, d23, s6);
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 2, (int64_t[]){3, 2}) && strcmp(outs(&t, 0, 1), "dddd") == 0 &&
          strcmp(outs(&t, 0, 4), "") == 0);
    tn_free(&t);

    tn_init_named(&t, "", "Slice", 13, 1); /* negative step over strings */
    tn_str_in(&t, 2, d23, s6);
    int64_t st[1] = {-1}, en[1] = {INT64_MIN}, ax[1] = {1}, sp[1] = {-2};
    tn_ints_in(&t, st, 1, true);
    tn_ints_in(&t, en, 1, true);
    tn_ints_in(&t, ax, 1, true);
    tn_ints_in(&t, sp, 1, true);
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 2, (int64_t[]){2, 2}) && strcmp(outs(&t, 0, 0), "") == 0 &&
          strcmp(outs(&t, 0, 1), "a") == 0 && strcmp(outs(&t, 0, 3), "dddd") == 0);
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 2, (int64_t[]){2, 2}));
    tn_free(&t);

    tn_init_named(&t, "", "Pad", 19, 1); /* wrap mode over strings, pads wider than the axis */
    tn_str_in(&t, 1, (int64_t[]){3}, s6);
    int64_t pads[2] = {4, 2};
    tn_ints_in(&t, pads, 2, true);
    tn_str(&t, "mode", "wrap");
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 1, (int64_t[]){9}));
    static const char *const want[9] = {"", "a", "bb", "", "a", "bb", "", "a", "bb"};
    for (int k = 0; k < 9 && tn_out(&t, 0); k++) CHECK(strcmp(outs(&t, 0, k), want[k]) == 0);
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 1, (int64_t[]){9}));
    tn_free(&t);

    tn_init_named(&t, "", "Unique", 11, 4);
    tn_str_in(&t, 1, (int64_t[]){5}, (const char *const[]){"b", "a", "b", "", "a"});
    CHECK(tn_eval(&t) == LT_OK && out_shape(&t, 0, 1, (int64_t[]){3}) && strcmp(outs(&t, 0, 0), "") == 0 &&
          strcmp(outs(&t, 0, 2), "b") == 0 && out_vals(&t, 1, (double[]){3, 1, 0}, 3) &&
          out_vals(&t, 2, (double[]){2, 1, 2, 0, 1}, 5) && out_vals(&t, 3, (double[]){1, 2, 2}, 3));
    tn_free(&t);

    tn_init_named(&t, "", "ScatterND", 18, 1);
    tn_str_in(&t, 1, (int64_t[]){3}, s6);
    tn_input(&t, LT_INT64, 2, (int64_t[]){1, 1}, (double[]){-1}, false);
    tn_str_in(&t, 1, (int64_t[]){1}, (const char *const[]){"new"});
    CHECK(tn_eval(&t) == LT_OK && strcmp(outs(&t, 0, 2), "new") == 0 && strcmp(outs(&t, 0, 1), "bb") == 0);
    tn_free(&t);
}

/* ---- error paths ---- */
static void test_errors(void) {
    tnode t;
    int64_t d23[2] = {2, 3};

    tn_init_named(&t, "", "Gather", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_input(&t, LT_INT64, 1, (int64_t[]){2}, (double[]){0, -4}, false);
    tn_int(&t, "axis", 1);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "index -4 out of range [-3, 3) at indices[1]"));
    tn_free(&t);

    tn_init_named(&t, "", "GatherND", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_input(&t, LT_INT64, 2, (int64_t[]){1, 2}, (double[]){2, 0}, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "index 2 out of range [-2, 2)"));
    tn_free(&t);

    tn_init_named(&t, "", "ScatterElements", 18, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_input(&t, LT_INT32, 2, (int64_t[]){1, 1}, (double[]){3}, false);
    tn_input(&t, LT_FLOAT, 2, (int64_t[]){1, 1}, k_iota, false);
    tn_int(&t, "axis", 1);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "out of range"));
    tn_free(&t);

    tn_init_named(&t, "", "ConstantOfShape", 21, 1);
    tn_ints_in(&t, (int64_t[]){4, -1}, 2, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "negative dimension"));
    tn_free(&t);

    tn_init_named(&t, "", "ConstantOfShape", 21, 1); /* 2^60 floats: refused, not attempted */
    tn_ints_in(&t, (int64_t[]){1 << 30, 1 << 30}, 2, false);
    CHECK(tn_eval(&t) == LT_ERR_NOMEM);
    tn_free(&t);

    tn_init_named(&t, "", "Range", 21, 1);
    tn_input(&t, LT_INT64, 0, NULL, NULL, false);
    lt_tensor *lim = tn_input(&t, LT_INT64, 0, NULL, NULL, false);
    tn_input(&t, LT_INT64, 0, NULL, (double[]){1}, false);
    if (lim) ((int64_t *)lim->data)[0] = INT64_MAX;
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "too large"));
    tn_free(&t);

    tn_init_named(&t, "", "Range", 21, 1); /* exact int64 count near the type's limits */
    lt_tensor *s0 = tn_input(&t, LT_INT64, 0, NULL, NULL, false);
    lim = tn_input(&t, LT_INT64, 0, NULL, NULL, false);
    lt_tensor *dl = tn_input(&t, LT_INT64, 0, NULL, NULL, false);
    if (s0 && lim && dl) {
        ((int64_t *)s0->data)[0] = INT64_MIN;
        ((int64_t *)lim->data)[0] = INT64_MAX;
        ((int64_t *)dl->data)[0] = INT64_MAX;
    }
    CHECK(tn_eval(&t) == LT_OK && tn_out(&t, 0) && tn_out(&t, 0)->numel == 3 &&
          ((int64_t *)tn_out(&t, 0)->data)[2] == INT64_MAX - 1);
    tn_free(&t);

    tn_init_named(&t, "", "Expand", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){2, 2}, 2, true);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "cannot be expanded"));
    CHECK(tn_infer(&t) == LT_ERR_INVALID);
    tn_free(&t);

    tn_init_named(&t, "", "Reshape", 14, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){4, -1}, 2, true);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "cannot reshape [2,3]"));
    tn_free(&t);

    tn_init_named(&t, "", "Pad", 18, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){0, -2, 0, -2}, 4, true);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);

    tn_init_named(&t, "", "TensorScatter", 24, 1);
    tn_input(&t, LT_FLOAT, 3, (int64_t[]){2, 3, 1}, k_iota, false);
    tn_input(&t, LT_FLOAT, 3, (int64_t[]){2, 2, 1}, k_iota, false);
    tn_input(&t, LT_INT64, 1, (int64_t[]){2}, (double[]){0, 2}, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "write_indices[1]"));
    tn_free(&t);

    tn_init_named(&t, "", "Squeeze", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){1}, 1, true);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && msg_has(&t, "cannot squeeze"));
    CHECK(tn_infer(&t) == LT_ERR_INVALID);
    tn_free(&t);

    tn_init_named(&t, "", "Identity", 13, 1);
    tn_skip_input(&t);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);
}

/* ---- infer hooks on constant inputs ---- */
static void test_infer(void) {
    tnode t;
    tn_init_named(&t, "", "Reshape", 14, 1);
    tn_input(&t, LT_FLOAT, 3, (int64_t[]){2, 3, 4}, NULL, false);
    tn_ints_in(&t, (int64_t[]){0, -1}, 2, true);
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 2, (int64_t[]){2, 12}));
    tn_free(&t);

    tn_init_named(&t, "", "Gather", 13, 1);
    tn_input(&t, LT_FLOAT, 3, (int64_t[]){2, 3, 4}, NULL, false);
    tn_input(&t, LT_INT64, 2, (int64_t[]){5, 6}, NULL, false);
    tn_int(&t, "axis", -2);
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 4, (int64_t[]){2, 5, 6, 4}));
    tn_free(&t);

    tn_init_named(&t, "", "Range", 21, 1);
    tn_input(&t, LT_FLOAT, 0, NULL, (double[]){1}, true);
    tn_input(&t, LT_FLOAT, 0, NULL, (double[]){2}, true);
    tn_input(&t, LT_FLOAT, 0, NULL, (double[]){0.25}, true);
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 1, (int64_t[]){4}));
    tn_free(&t);

    tn_init_named(&t, "", "Shape", 21, 1);
    tn_input(&t, LT_FLOAT, 3, (int64_t[]){2, 3, 4}, NULL, false);
    tn_int(&t, "start", -2);
    tn_int(&t, "end", 100);
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 1, (int64_t[]){2}));
    CHECK(tn_eval(&t) == LT_OK && out_vals(&t, 0, (double[]){3, 4}, 2));
    tn_free(&t);

    tn_init_named(&t, "", "Concat", 13, 1);
    tn_input(&t, LT_FLOAT, 2, (int64_t[]){2, 3}, NULL, false);
    tn_input(&t, LT_FLOAT, 2, (int64_t[]){2, 5}, NULL, false);
    tn_int(&t, "axis", -1);
    CHECK(tn_infer(&t) == LT_OK && infer_dims(&t, 0, 2, (int64_t[]){2, 8}));
    tn_free(&t);
}

/* ---- out of memory on every allocation, and no leaks ---- */
typedef void (*build_fn)(tnode *t);

static void b_transpose(tnode *t) {
    static const char *const s[6] = {"a", "bb", "c", "d", "e", "f"};
    tn_init_named(t, "", "Transpose", 13, 1);
    tn_str_in(t, 2, (int64_t[]){2, 3}, s);
}
static void b_split(tnode *t) {
    tn_init_named(t, "", "Split", 18, 3);
    tn_input(t, LT_FLOAT, 1, (int64_t[]){7}, k_iota, false);
    tn_int(t, "num_outputs", 3);
}
static void b_pad(tnode *t) {
    tn_init_named(t, "", "Pad", 18, 1);
    tn_input(t, LT_FLOAT, 2, (int64_t[]){2, 3}, k_iota, false);
    tn_ints_in(t, (int64_t[]){1, 2, 3, 1}, 4, true);
    tn_str(t, "mode", "reflect");
}
static void b_unique(tnode *t) {
    tn_init_named(t, "", "Unique", 11, 4);
    tn_input(t, LT_FLOAT, 2, (int64_t[]){3, 2}, (double[]){1, 2, 1, 2, 0, 0}, false);
    tn_int(t, "axis", 0);
}
static void b_constant_strings(tnode *t) {
    static const char *const s[3] = {"x", "", "zz"};
    static int64_t lens[3] = {1, 0, 2};
    tn_init_named(t, "", "Constant", 13, 1);
    lt_attr *a = &t->attrs[t->node.n_attr++];
    a->name = "value_strings";
    a->type = LT_AT_STRINGS;
    a->strings = (const char **)s;
    a->string_lens = lens;
    a->n = 3;
}
static void b_gather_strings(tnode *t) {
    static const char *const s[4] = {"p", "q", "r", "s"};
    tn_init_named(t, "", "Gather", 13, 1);
    tn_str_in(t, 1, (int64_t[]){4}, s);
    tn_input(t, LT_INT64, 1, (int64_t[]){3}, (double[]){3, -4, 1}, false);
}
static void b_onehot(tnode *t) {
    static const char *const s[2] = {"off", "on"};
    tn_init_named(t, "", "OneHot", 11, 1);
    tn_input(t, LT_INT64, 1, (int64_t[]){3}, (double[]){0, -1, 7}, false);
    tn_input(t, LT_INT64, 0, NULL, (double[]){3}, false);
    tn_str_in(t, 1, (int64_t[]){2}, s);
}

static void test_oom(void) {
    static const build_fn builds[] = {b_transpose, b_split, b_pad, b_unique, b_constant_strings, b_gather_strings,
                                      b_onehot};
    lt_set_allocator(&g_test_alloc);
    for (size_t b = 0; b < sizeof builds / sizeof *builds; b++) {
        bool done = false;
        for (long fail_at = 0; fail_at < 200 && !done; fail_at++) {
            tnode t;
            long base = g_live;
            builds[b](&t);
            g_countdown = fail_at;
            lt_status s = tn_eval(&t);
            g_countdown = -1;
            if (s == LT_OK) done = true;
            else CHECK(s == LT_ERR_NOMEM);
            tn_free(&t);
            if (g_live != base) {
                fprintf(stderr, "build %zu, failing allocation %ld: %ld blocks leaked\n", b, fail_at, g_live - base);
                failures++;
            }
        }
        CHECK(done);
    }
    lt_set_allocator(NULL);
}

/* ---- one rule, one message: the infer hook (constant inputs) and the eval hook say the same ---- */
static void same_message(tnode *t, const char *part) {
    char m[LT_MSG_MAX];
    CHECK(tn_infer(t) == LT_ERR_INVALID);
    snprintf(m, sizeof m, "%s", t->ctx.msg);
    CHECK(tn_eval(t) == LT_ERR_INVALID && strcmp(m, t->ctx.msg) == 0 && strstr(m, part) != NULL);
    if (strcmp(m, t->ctx.msg) != 0) fprintf(stderr, "  infer: %s\n  eval:  %s\n", m, t->ctx.msg);
    tn_free(t);
}

static void test_infer_eval_same_message(void) {
    tnode t;
    int64_t d23[2] = {2, 3}, d4[1] = {4};

    tn_init_named(&t, "", "Reshape", 14, 1);
    tn_input(&t, LT_FLOAT, 1, d4, k_iota, false);
    tn_ints_in(&t, (int64_t[]){4000}, 1, true);
    same_message(&t, "cannot reshape [4] into [4000]");

    tn_init_named(&t, "", "Reshape", 14, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){(int64_t)1 << 62, 8}, 2, true);
    same_message(&t, "shape size overflows");

    tn_init_named(&t, "", "Split", 13, 2);
    tn_input(&t, LT_FLOAT, 1, d4, k_iota, false);
    tn_ints_in(&t, (int64_t[]){2, 6}, 2, true);
    same_message(&t, "split sizes sum to 8, the axis has 4");

    tn_init_named(&t, "", "Split", 13, 2);
    tn_input(&t, LT_FLOAT, 1, d4, k_iota, false);
    tn_ints_in(&t, (int64_t[]){1, 1}, 2, true);
    same_message(&t, "split sizes sum to 2, the axis has 4");

    tn_init_named(&t, "", "Concat", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_input(&t, LT_FLOAT, 2, (int64_t[]){3, 3}, k_iota, false);
    tn_int(&t, "axis", 1);
    same_message(&t, "input 1 of shape [3,3] does not match input 0 of shape [2,3]");

    tn_init_named(&t, "", "Slice", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){0}, 1, true);
    tn_ints_in(&t, (int64_t[]){1}, 1, true);
    tn_ints_in(&t, (int64_t[]){1}, 1, true);
    tn_ints_in(&t, (int64_t[]){0}, 1, true);
    same_message(&t, "step on axis 0 is zero");

    tn_init_named(&t, "", "Tile", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){(int64_t)1 << 62, 1}, 2, true);
    same_message(&t, "tiled dimension overflows");

    tn_init_named(&t, "", "Transpose", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints(&t, "perm", (int64_t[]){1, 1}, 2);
    same_message(&t, "perm is not a permutation of 2 axes");

    tn_init_named(&t, "", "Squeeze", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){-2}, 1, true);
    same_message(&t, "cannot squeeze axis 0 of size 2");

    tn_init_named(&t, "", "Unsqueeze", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){1, -3}, 2, true);
    same_message(&t, "axis 1 is repeated");

    tn_init_named(&t, "", "Pad", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){0, -2, 0, -2}, 4, true);
    same_message(&t, "negative pads remove more than axis 1 holds");

    tn_init_named(&t, "", "DepthToSpace", 13, 1);
    tn_input(&t, LT_FLOAT, 4, (int64_t[]){1, 6, 1, 1}, k_iota, false);
    tn_int(&t, "blocksize", 2);
    same_message(&t, "channels 6 not divisible by blocksize^2 4");

    tn_init_named(&t, "", "GatherElements", 13, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_input(&t, LT_INT64, 2, (int64_t[]){4, 3}, NULL, true);
    tn_int(&t, "axis", 1);
    same_message(&t, "indices dimension 0 (4) exceeds data's (2)");

    tn_init_named(&t, "", "Trilu", 14, 1);
    tn_input(&t, LT_FLOAT, 2, d23, k_iota, false);
    tn_ints_in(&t, (int64_t[]){1, 2}, 2, true);
    same_message(&t, "k must hold exactly one value, got 2");
}

int main(void) {
    test_old_opsets();
    test_strings();
    test_errors();
    test_infer();
    test_infer_eval_same_message();
    test_oom();
    return test_report("test_ops_shape");
}
