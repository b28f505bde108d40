/* test_passes_simplify.c — the simplify, fold_batchnorm and patterns passes: each rule on a small
 * model built with the mutation API, a before/after check on the printed IR, cases where a rule
 * must NOT apply (shapes that broadcast, lossy casts, reversing slices, mixed conditions, training
 * mode), and the interpreter's outputs compared before and after on the same inputs. Exits non-zero
 * on any failure. */
#include "test_passes_util.h"

static lt_node *attr_i(tb *b, lt_node *n, const char *name, int64_t v) {
    CHECK_OK(lt_node_set_attr_int(&b->ctx, n, name, v), &b->ctx);
    return n;
}
static lt_node *attr_is(tb *b, lt_node *n, const char *name, int cnt, const int64_t *v) {
    CHECK_OK(lt_node_set_attr_ints(&b->ctx, n, name, cnt, v), &b->ctx);
    return n;
}

/* Every identity rule in one chain: y = Relu(chain(x)) becomes y = Relu(x). */
static void test_identities(void) {
    tb b;
    tb_init(&b, 18);
    int64_t d[2] = {2, 3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 2, d);
    lt_value *other = tb_input(&b, "other", LT_FLOAT, 2, d);
    lt_value *v = x;
    v = tb_node(&b, "Identity", "i", 1, v)->out[0];
    v = attr_i(&b, tb_node(&b, "Cast", "c", 1, v), "to", LT_FLOAT)->out[0];
    v = tb_node(&b, "CastLike", "cl", 2, v, other)->out[0];
    v = tb_node(&b, "Reshape", "r", 2, v, tb_ints(&b, "shape", 2, (int64_t[]){2, -1}))->out[0];
    v = attr_is(&b, tb_node(&b, "Transpose", "t", 1, v), "perm", 2, (int64_t[]){0, 1})->out[0];
    v = tb_node(&b, "Expand", "e", 2, v, tb_ints(&b, "eshape", 1, (int64_t[]){3}))->out[0];
    v = tb_node(&b, "Add", "a0", 2, v, tb_scalar(&b, "zero", LT_FLOAT, 0))->out[0];
    v = tb_node(&b, "Add", "a1", 2, tb_const(&b, "zeros", LT_FLOAT, 1, (int64_t[]){3}, (double[]){0, 0, 0}), v)->out[0];
    v = tb_node(&b, "Mul", "m1", 2, tb_scalar(&b, "one", LT_FLOAT, 1), v)->out[0];
    v = tb_node(&b, "Sub", "s0", 2, v, tb_scalar(&b, "zero2", LT_FLOAT, 0))->out[0];
    v = tb_node(&b, "Div", "d1", 2, v, tb_scalar(&b, "one2", LT_FLOAT, 1))->out[0];
    v = tb_node(&b, "Pow", "p1", 2, v, tb_scalar(&b, "one3", LT_INT64, 1))->out[0];
    v = tb_node(&b, "Pad", "pad", 2, v, tb_ints(&b, "pads", 4, (int64_t[]){0, 0, 0, 0}))->out[0];
    v = tb_node(&b, "Slice", "sl", 5, v, tb_ints(&b, "st", 1, (int64_t[]){0}), tb_ints(&b, "en", 1, (int64_t[]){100}),
                tb_ints(&b, "ax", 1, (int64_t[]){1}), tb_ints(&b, "steps", 1, (int64_t[]){1}))->out[0];
    v = attr_i(&b, tb_node(&b, "Concat", "cc", 1, v), "axis", 0)->out[0];
    v = tb_node(&b, "Tile", "tl", 2, v, tb_ints(&b, "reps", 2, (int64_t[]){1, 1}))->out[0];
    lt_value *t = tb_const(&b, "true", LT_BOOL, 2, d, (double[]){1, 1, 1, 1, 1, 1});
    v = tb_node(&b, "Where", "w", 3, t, v, other)->out[0];
    v = tb_node(&b, "Dropout", "dr", 1, v)->out[0];
    v = tb_node(&b, "Sum", "sum", 1, v)->out[0];
    v = tb_node(&b, "Max", "max", 1, v)->out[0];
    lt_node *sp = tb_node_in(&b, b.g, "Split", "sp", 1, 1, v);
    v = sp->out[0];
    lt_node *y = tb_node(&b, "Relu", "y", 1, v);
    tb_output(&b, y->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "simplify,dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[2,3], %other: float[2,3]) {\n"
                  "  %y = Relu(%x) : float[2,3]\n"
                  "  return %y\n"
                  "}\n");
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

/* Look-alikes that must stay: each would change values or shapes. */
static void test_identities_negative(void) {
    tb b;
    tb_init(&b, 18);
    int64_t d[1] = {3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    lt_value *outs[8];
    int n = 0;
    /* x + zeros[2,3] broadcasts to a bigger shape */
    int64_t d23[2] = {2, 3};
    outs[n++] = tb_node(&b, "Add", "bcast", 2, x, tb_const(&b, "z23", LT_FLOAT, 2, d23, (double[]){0, 0, 0, 0, 0, 0}))->out[0];
    /* x * 2 is not neutral; 0 * x is not x */
    outs[n++] = tb_node(&b, "Mul", "twice", 2, x, tb_scalar(&b, "two", LT_FLOAT, 2))->out[0];
    outs[n++] = tb_node(&b, "Sub", "neg", 2, tb_scalar(&b, "z", LT_FLOAT, 0), x)->out[0];
    /* Cast to another type */
    outs[n++] = attr_i(&b, tb_node(&b, "Cast", "toint", 1, x), "to", LT_INT32)->out[0];
    /* Slice reversing the whole tensor keeps the shape but not the values */
    outs[n++] = tb_node(&b, "Slice", "rev", 5, x, tb_ints(&b, "st", 1, (int64_t[]){-1}),
                        tb_ints(&b, "en", 1, (int64_t[]){-100}), tb_ints(&b, "ax", 1, (int64_t[]){0}),
                        tb_ints(&b, "steps", 1, (int64_t[]){-1}))->out[0];
    /* Where with a mixed condition */
    outs[n++] = tb_node(&b, "Where", "mix", 3, tb_const(&b, "cond", LT_BOOL, 1, d, (double[]){1, 0, 1}), x,
                        tb_scalar(&b, "five", LT_FLOAT, 5))->out[0];
    /* Transpose reversing (default perm) */
    lt_value *x2 = tb_input(&b, "x2", LT_FLOAT, 2, d23);
    outs[n++] = tb_node(&b, "Transpose", "tr", 1, x2)->out[0];
    for (int i = 0; i < n; i++) tb_output(&b, outs[i]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    int before = b.g->n_nodes;
    lt_pass_report rep = {0};
    CHECK_OK(tb_run_passes(&b, "simplify", &rep), &b.ctx);
    CHECK(b.g->n_nodes == before && rep.n == 1 && !rep.runs[0].changed);
    TB_CHECK_SAME(&b, &s);
    lt_pass_report_free(&rep);
    tb_free(&b);
}

/* A Dropout in training mode, or whose mask is read, stays. */
static void test_dropout_kept(void) {
    tb b;
    tb_init(&b, 13);
    int64_t d[1] = {4};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    lt_node *tr = tb_node(&b, "Dropout", "tr", 3, x, tb_scalar(&b, "ratio", LT_FLOAT, 0.5),
                          tb_scalar(&b, "train", LT_BOOL, 1));
    lt_node *mk = tb_node_in(&b, b.g, "Dropout", "mk", 2, 1, x);
    lt_node *inf = tb_node(&b, "Dropout", "inf", 3, x, tb_scalar(&b, "ratio2", LT_FLOAT, 0.5),
                           tb_scalar(&b, "notrain", LT_BOOL, 0));
    lt_node *y = tb_node(&b, "Neg", "y", 1, inf->out[0]);
    tb_output(&b, tr->out[0]);
    tb_output(&b, mk->out[1]);
    tb_output(&b, y->out[0]);
    tb_infer(&b);
    CHECK_OK(tb_run_passes(&b, "simplify", NULL), &b.ctx);
    CHECK(tr->index >= 0 && mk->index >= 0 && inf->index == -1 && y->in[0] == x);
    tb_free(&b);
}

/* ---------------------------------------------------------------- chains */

static void test_chains(void) {
    tb b;
    tb_init(&b, 18);
    int64_t d[3] = {2, 3, 4};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 3, d);
    /* Transpose pairs: inverse -> gone; two others -> one */
    lt_node *t1 = attr_is(&b, tb_node(&b, "Transpose", "t1", 1, x), "perm", 3, (int64_t[]){1, 0, 2});
    lt_node *t2 = attr_is(&b, tb_node(&b, "Transpose", "t2", 1, t1->out[0]), "perm", 3, (int64_t[]){1, 0, 2});
    lt_node *t3 = attr_is(&b, tb_node(&b, "Transpose", "t3", 1, x), "perm", 3, (int64_t[]){0, 2, 1});
    lt_node *t4 = attr_is(&b, tb_node(&b, "Transpose", "t4", 1, t3->out[0]), "perm", 3, (int64_t[]){2, 0, 1});
    /* Reshape -> Reshape -> Unsqueeze: one Reshape */
    lt_node *r1 = tb_node(&b, "Reshape", "r1", 2, x, tb_ints(&b, "s1", 2, (int64_t[]){6, 4}));
    lt_node *r2 = tb_node(&b, "Reshape", "r2", 2, r1->out[0], tb_ints(&b, "s2", 1, (int64_t[]){24}));
    lt_node *u = tb_node(&b, "Unsqueeze", "u", 2, r2->out[0], tb_ints(&b, "ax0", 1, (int64_t[]){0}));
    /* Flatten then Reshape back to x's shape: nothing */
    lt_node *f = attr_i(&b, tb_node(&b, "Flatten", "f", 1, x), "axis", 1);
    lt_node *rb = tb_node(&b, "Reshape", "rb", 2, f->out[0], tb_ints(&b, "s3", 3, (int64_t[]){2, 3, 4}));
    lt_node *o1 = tb_node(&b, "Add", "o1", 2, t2->out[0], t2->out[0]);
    lt_node *o3 = tb_node(&b, "Neg", "o3", 1, rb->out[0]);
    tb_output(&b, o1->out[0]);
    tb_output(&b, t4->out[0]);
    tb_output(&b, u->out[0]);
    tb_output(&b, o3->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "simplify,dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[2,3,4]) {\n"
                  "  %t4 = Transpose(%x) {perm=[1,0,2]} : float[3,2,4]\n"
                  "  %u = Reshape(%x, %shape_1) : float[1,24]\n"
                  "  %o1 = Add(%x, %x) : float[2,3,4]\n"
                  "  %o3 = Neg(%x) : float[2,3,4]\n"
                  "  return %o1, %t4, %u, %o3\n"
                  "}\n");
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

static void test_cast_and_squeeze_chains(void) {
    tb b;
    tb_init(&b, 18);
    int64_t d[2] = {-1, 3};
    const char *params[2] = {"N", NULL};
    lt_value *x = tb_input_in(&b, b.g, "x", LT_INT32, 2, d, params);
    /* int32 -> int64 -> int32: exact round trip */
    lt_node *c1 = attr_i(&b, tb_node(&b, "Cast", "c1", 1, x), "to", LT_INT64);
    lt_node *c2 = attr_i(&b, tb_node(&b, "Cast", "c2", 1, c1->out[0]), "to", LT_INT32);
    /* int32 -> double -> float: the first is exact, so one cast int32 -> float */
    lt_node *c3 = attr_i(&b, tb_node(&b, "Cast", "c3", 1, x), "to", LT_DOUBLE);
    lt_node *c4 = attr_i(&b, tb_node(&b, "Cast", "c4", 1, c3->out[0]), "to", LT_FLOAT);
    /* int32 -> float -> int32 is lossy (big ints round): kept */
    lt_node *c5 = attr_i(&b, tb_node(&b, "Cast", "c5", 1, x), "to", LT_FLOAT);
    lt_node *c6 = attr_i(&b, tb_node(&b, "Cast", "c6", 1, c5->out[0]), "to", LT_INT32);
    /* Unsqueeze then Squeeze of the same axis, symbolic N */
    lt_node *un = tb_node(&b, "Unsqueeze", "un", 2, c2->out[0], tb_ints(&b, "ax", 1, (int64_t[]){-1}));
    lt_node *sq = tb_node(&b, "Squeeze", "sq", 2, un->out[0], tb_ints(&b, "ax2", 1, (int64_t[]){2}));
    lt_node *y = tb_node(&b, "Neg", "y", 1, sq->out[0]);
    tb_output(&b, y->out[0]);
    tb_output(&b, c4->out[0]);
    tb_output(&b, c6->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "simplify,dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: int32[N,3]) {\n"
                  "  %c4 = Cast(%x) {to=1} : float[N,3]\n"
                  "  %c5 = Cast(%x) {to=1} : float[N,3]\n"
                  "  %c6 = Cast(%c5) {to=6} : int32[N,3]\n"
                  "  %y = Neg(%x) : int32[N,3]\n"
                  "  return %y, %c4, %c6\n"
                  "}\n");
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

static void test_expand_into_broadcast(void) {
    tb b;
    tb_init(&b, 18);
    int64_t d13[2] = {1, 3}, d23[2] = {2, 3}, d21[2] = {2, 1};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 2, d13);
    lt_value *y = tb_input(&b, "y", LT_FLOAT, 2, d23);
    lt_value *z = tb_input(&b, "z", LT_FLOAT, 2, d21);
    lt_value *sh = tb_ints(&b, "sh", 2, (int64_t[]){2, 3});
    lt_node *e = tb_node(&b, "Expand", "e", 2, x, sh);
    lt_node *a = tb_node(&b, "Add", "a", 2, e->out[0], y);  /* [2,3] anyway: Expand goes */
    lt_node *e2 = tb_node(&b, "Expand", "e2", 2, x, sh);
    lt_node *m = tb_node(&b, "Mul", "m", 2, e2->out[0], x); /* x*x is [1,3]: Expand stays */
    lt_node *e3 = tb_node(&b, "Expand", "e3", 2, z, sh);
    lt_node *w = tb_node(&b, "Sub", "w", 2, x, e3->out[0]); /* [1,3] - [2,1] = [2,3]: Expand goes */
    tb_output(&b, a->out[0]);
    tb_output(&b, m->out[0]);
    tb_output(&b, w->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "simplify,dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[1,3], %y: float[2,3], %z: float[2,1]) {\n"
                  "  %a = Add(%x, %y) : float[2,3]\n"
                  "  %e2 = Expand(%x, %sh) : float[2,3]\n"
                  "  %m = Mul(%e2, %x) : float[2,3]\n"
                  "  %w = Sub(%x, %z) : float[2,3]\n"
                  "  return %a, %m, %w\n"
                  "}\n");
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

/* A bias Expand'ed to a big shape is not folded into a big constant: simplify drops the Expand and
 * the Add reads the small bias (a small Expand still folds). */
static void test_big_expand_not_folded(void) {
    tb b;
    tb_init(&b, 18);
    int64_t dx[2] = {64, 512}, db[1] = {512}, ds[1] = {4};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 2, dx);
    double *bias = calloc(512, sizeof *bias);
    for (int i = 0; i < 512; i++) bias[i] = 0.01 * i;
    lt_value *bv = tb_const(&b, "bias", LT_FLOAT, 1, db, bias);
    free(bias);
    lt_node *e = tb_node(&b, "Expand", "e", 2, bv, tb_ints(&b, "shape", 2, dx));
    lt_node *y = tb_node(&b, "Add", "y", 2, x, e->out[0]);
    lt_value *small = tb_const(&b, "small", LT_FLOAT, 1, ds, (double[]){1, 2, 3, 4});
    lt_node *e2 = tb_node(&b, "Expand", "e2", 2, small, tb_ints(&b, "shape2", 2, (int64_t[]){2, 4}));
    lt_value *e2v = e2->out[0];
    tb_output(&b, y->out[0]);
    tb_output(&b, e2v);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    lt_strbuf dump = {0};
    lt_pass_options o = {.level = 3, .verify_each = true, .dump_after = "all", .dump = &dump};
    CHECK_OK(lt_passes_run(&b.ctx, b.m, &o, NULL), &b.ctx);
    if (getenv("DUMP")) fprintf(stderr, "%s", dump.s);
    lt_sb_free(&dump);
    EXPECT_IR(&b, "graph main (%x: float[64,512]) {\n"
                  "  %y = Add(%x, %bias) : float[64,512]\n"
                  "  return %y, %e2\n"
                  "}\n");
    CHECK(e2v->init && e2v->init->numel == 8);
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

/* Rules inside a subgraph: the branch's Identity reading an outer value goes. */
static void test_simplify_in_subgraph(void) {
    tb b;
    tb_init(&b, 18);
    int64_t d[1] = {3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    lt_value *c = tb_input(&b, "c", LT_BOOL, 0, NULL);
    lt_node *iff = tb_node_in(&b, b.g, "If", "r", 1, 1, c);
    lt_graph *br[2];
    for (int k = 0; k < 2; k++) {
        lt_graph *s = lt_arena_alloc(&b.m->arena, sizeof *s);
        s->model = b.m;
        s->parent = b.g;
        s->owner = iff;
        s->name = k ? "else" : "then";
        br[k] = s;
        lt_value *ref = NULL;
        CHECK_OK(lt_value_new(&b.ctx, s, "x", &x->type, &ref), &b.ctx);
        ref->outer = x;
        lt_node *id = tb_node_in(&b, s, "Identity", "i", 1, 1, ref);
        lt_node *o = tb_node_in(&b, s, k ? "Neg" : "Abs", "o", 1, 1, id->out[0]);
        tb_output_in(&b, s, o->out[0]);
    }
    CHECK_OK(lt_node_set_attr_int(&b.ctx, iff, "then_branch", 0), &b.ctx);
    CHECK_OK(lt_node_set_attr_int(&b.ctx, iff, "else_branch", 0), &b.ctx);
    iff->attrs[0].type = LT_AT_GRAPH;
    iff->attrs[0].g = br[0];
    iff->attrs[1].type = LT_AT_GRAPH;
    iff->attrs[1].g = br[1];
    tb_output(&b, iff->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "simplify,dce", NULL), &b.ctx);
    CHECK(br[0]->n_nodes == 1 && br[1]->n_nodes == 1 && br[0]->nodes[0]->in[0]->outer == x);
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

/* ---------------------------------------------------------------- fold_batchnorm */

static lt_value *bn_params(tb *b, const char *p, int C, lt_value **out) {
    double sc[8], bi[8], mean[8], var[8];
    for (int i = 0; i < C; i++) {
        sc[i] = 0.5 + 0.25 * i;
        bi[i] = 0.1 * i - 0.2;
        mean[i] = 0.3 - 0.05 * i;
        var[i] = 0.7 + 0.2 * i;
    }
    int64_t d[1] = {C};
    char nm[64];
    snprintf(nm, sizeof nm, "%s_scale", p);
    out[0] = tb_const(b, nm, LT_FLOAT, 1, d, sc);
    snprintf(nm, sizeof nm, "%s_bias", p);
    out[1] = tb_const(b, nm, LT_FLOAT, 1, d, bi);
    snprintf(nm, sizeof nm, "%s_mean", p);
    out[2] = tb_const(b, nm, LT_FLOAT, 1, d, mean);
    snprintf(nm, sizeof nm, "%s_var", p);
    out[3] = tb_const(b, nm, LT_FLOAT, 1, d, var);
    return out[0];
}

static lt_value *weights(tb *b, const char *name, int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    double *v = calloc((size_t)n, sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = sin(0.7 * (double)i + 0.3);
    lt_value *w = tb_const(b, name, LT_FLOAT, rank, dims, v);
    free(v);
    return w;
}

static void test_fold_batchnorm(void) {
    tb b;
    tb_init(&b, 15);
    int64_t dx[4] = {1, 2, 5, 5}, dw[4] = {3, 2, 3, 3}, dg[2] = {4, 6}, dgw[2] = {3, 6}, dmw[2] = {6, 3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 4, dx);
    lt_value *a = tb_input(&b, "a", LT_FLOAT, 2, dg);
    lt_value *p[4];
    /* Conv without bias -> BN */
    lt_node *conv = tb_node(&b, "Conv", "conv", 2, x, weights(&b, "w", 4, dw));
    bn_params(&b, "bn1", 3, p);
    lt_node *bn1 = tb_node(&b, "BatchNormalization", "y1", 5, conv->out[0], p[0], p[1], p[2], p[3]);
    attr_i(&b, bn1, "epsilon", 0); /* replaced below by a float */
    CHECK_OK(lt_node_set_attr_float(&b.ctx, bn1, "epsilon", 1e-3f), &b.ctx);
    /* Gemm(transB, C[3]) -> BN */
    lt_node *gm = tb_node(&b, "Gemm", "gm", 3, a, weights(&b, "gw", 2, dgw),
                          tb_const(&b, "gc", LT_FLOAT, 1, (int64_t[]){3}, (double[]){1, -1, 0.5}));
    attr_i(&b, gm, "transB", 1);
    CHECK_OK(lt_node_set_attr_float(&b.ctx, gm, "beta", 0.5f), &b.ctx);
    bn_params(&b, "bn2", 3, p);
    lt_node *bn2 = tb_node(&b, "BatchNormalization", "y2", 5, gm->out[0], p[0], p[1], p[2], p[3]);
    /* MatMul + Add -> BN */
    lt_node *mm = tb_node(&b, "MatMul", "mm", 2, a, weights(&b, "mw", 2, dmw));
    lt_node *ad = tb_node(&b, "Add", "ad", 2, tb_const(&b, "mb", LT_FLOAT, 1, (int64_t[]){3}, (double[]){0.5, 0.25, 2}),
                          mm->out[0]);
    bn_params(&b, "bn3", 3, p);
    lt_node *bn3 = tb_node(&b, "BatchNormalization", "y3", 5, ad->out[0], p[0], p[1], p[2], p[3]);
    /* MatMul -> BN (an Add is created) */
    lt_node *mm2 = tb_node(&b, "MatMul", "mm2", 2, a, weights(&b, "mw2", 2, dmw));
    bn_params(&b, "bn4", 3, p);
    lt_node *bn4 = tb_node(&b, "BatchNormalization", "y4", 5, mm2->out[0], p[0], p[1], p[2], p[3]);
    /* Conv read twice: not folded */
    lt_node *conv2 = tb_node(&b, "Conv", "conv2", 2, x, weights(&b, "w2", 4, dw));
    bn_params(&b, "bn5", 3, p);
    lt_node *bn5 = tb_node(&b, "BatchNormalization", "y5", 5, conv2->out[0], p[0], p[1], p[2], p[3]);
    tb_output(&b, bn1->out[0]);
    tb_output(&b, bn2->out[0]);
    tb_output(&b, bn3->out[0]);
    tb_output(&b, bn4->out[0]);
    tb_output(&b, bn5->out[0]);
    tb_output(&b, conv2->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "fold_batchnorm,dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[1,2,5,5], %a: float[4,6]) {\n"
                  "  %y1 = Conv(%x, %w_bnfold, %w_bnbias) : float[1,3,3,3]\n"
                  "  %y2 = Gemm(%a, %gw_bnfold, %gw_bnbias) {transB=1, beta=1} : float[4,3]\n"
                  "  %mm = MatMul(%a, %mw_bnfold) : float[4,3]\n"
                  "  %y3 = Add(%mw_bnbias, %mm) : float[4,3]\n"
                  "  %mm2 = MatMul(%a, %mw2_bnfold) : float[4,3]\n"
                  "  %y4 = Add(%mm2, %mw2_bnbias) : float[4,3]\n"
                  "  %conv2 = Conv(%x, %w2) : float[1,3,3,3]\n"
                  "  %y5 = BatchNormalization(%conv2, %bn5_scale, %bn5_bias, %bn5_mean, %bn5_var) : float[1,3,3,3]\n"
                  "  return %y1, %y2, %y3, %y4, %y5, %conv2\n"
                  "}\n");
    TB_CHECK_CLOSE(&b, &s, 1e-5);
    tb_free(&b);
}

/* BN in training mode is left alone. */
static void test_batchnorm_training_kept(void) {
    tb b;
    tb_init(&b, 15);
    int64_t dx[4] = {2, 2, 3, 3}, dw[4] = {3, 2, 1, 1};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 4, dx);
    lt_node *conv = tb_node(&b, "Conv", "conv", 2, x, weights(&b, "w", 4, dw));
    lt_value *p[4];
    bn_params(&b, "bn", 3, p);
    lt_node *bn = tb_node(&b, "BatchNormalization", "y", 5, conv->out[0], p[0], p[1], p[2], p[3]);
    attr_i(&b, bn, "training_mode", 1);
    tb_output(&b, bn->out[0]);
    tb_infer(&b);
    CHECK_OK(tb_run_passes(&b, "fold_batchnorm", NULL), &b.ctx);
    CHECK(bn->index >= 0 && conv->n_in == 2);
    tb_free(&b);
}

/* ---------------------------------------------------------------- patterns */

/* PyTorch's decomposed LayerNorm with gamma and beta, and GELU in two associations. */
static void test_patterns(void) {
    tb b;
    tb_init(&b, 13);
    int64_t d[3] = {2, 3, 4};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 3, d);
    lt_node *mean = attr_is(&b, tb_node(&b, "ReduceMean", "mean", 1, x), "axes", 1, (int64_t[]){-1});
    lt_node *dv = tb_node(&b, "Sub", "d", 2, x, mean->out[0]);
    lt_node *sq = tb_node(&b, "Pow", "sq", 2, dv->out[0], tb_scalar(&b, "two", LT_FLOAT, 2));
    lt_node *var = attr_is(&b, tb_node(&b, "ReduceMean", "var", 1, sq->out[0]), "axes", 1, (int64_t[]){-1});
    lt_node *ve = tb_node(&b, "Add", "ve", 2, var->out[0], tb_scalar(&b, "eps", LT_FLOAT, 1e-5));
    lt_node *sd = tb_node(&b, "Sqrt", "sd", 1, ve->out[0]);
    lt_node *nrm = tb_node(&b, "Div", "nrm", 2, dv->out[0], sd->out[0]);
    lt_node *sc = tb_node(&b, "Mul", "sc", 2, nrm->out[0],
                          tb_const(&b, "gamma", LT_FLOAT, 1, (int64_t[]){4}, (double[]){1, 2, 0.5, -1}));
    lt_node *ln = tb_node(&b, "Add", "ln", 2, sc->out[0],
                          tb_const(&b, "beta", LT_FLOAT, 1, (int64_t[]){4}, (double[]){0, 0.1, 0.2, 0.3}));
    /* GELU: (x * (erf(x / sqrt2) + 1)) * 0.5 */
    lt_node *dd = tb_node(&b, "Div", "g_div", 2, ln->out[0], tb_scalar(&b, "sqrt2", LT_FLOAT, 1.4142135381698608));
    lt_node *er = tb_node(&b, "Erf", "g_erf", 1, dd->out[0]);
    lt_node *p1 = tb_node(&b, "Add", "g_add", 2, er->out[0], tb_scalar(&b, "one", LT_FLOAT, 1));
    lt_node *xm = tb_node(&b, "Mul", "g_mul", 2, ln->out[0], p1->out[0]);
    lt_node *ge = tb_node(&b, "Mul", "gelu", 2, xm->out[0], tb_scalar(&b, "half", LT_FLOAT, 0.5));
    /* GELU: (x * 0.5) * (1 + erf(x * 0.7071)) on x directly */
    lt_node *m2 = tb_node(&b, "Mul", "h_mul", 2, x, tb_scalar(&b, "rs2", LT_FLOAT, 0.7071067811865476));
    lt_node *e2 = tb_node(&b, "Erf", "h_erf", 1, m2->out[0]);
    lt_node *a2 = tb_node(&b, "Add", "h_add", 2, tb_scalar(&b, "one2", LT_FLOAT, 1), e2->out[0]);
    lt_node *hx = tb_node(&b, "Mul", "h_half", 2, tb_scalar(&b, "half2", LT_FLOAT, 0.5), x);
    lt_node *g2 = tb_node(&b, "Mul", "gelu2", 2, hx->out[0], a2->out[0]);
    tb_output(&b, ge->out[0]);
    tb_output(&b, g2->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "patterns,dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[2,3,4]) {\n"
                  "  %ln = LayerNormalization(%x, %gamma, %beta) {axis=2, epsilon=1e-05, stash_type=1} : float[2,3,4]\n"
                  "  %gelu = Gelu(%ln) : float[2,3,4]\n"
                  "  %gelu2 = Gelu(%x) : float[2,3,4]\n"
                  "  return %gelu, %gelu2\n"
                  "}\n");
    TB_CHECK_CLOSE(&b, &s, 1e-5);
    tb_free(&b);
}

/* Near misses: a wrong constant or an extra reader of the product keeps the decomposed form. */
static void test_patterns_negative(void) {
    tb b;
    tb_init(&b, 13);
    int64_t d[2] = {2, 4};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 2, d);
    lt_node *dd = tb_node(&b, "Div", "g_div", 2, x, tb_scalar(&b, "notsqrt2", LT_FLOAT, 1.5));
    lt_node *er = tb_node(&b, "Erf", "g_erf", 1, dd->out[0]);
    lt_node *p1 = tb_node(&b, "Add", "g_add", 2, er->out[0], tb_scalar(&b, "one", LT_FLOAT, 1));
    lt_node *xm = tb_node(&b, "Mul", "g_mul", 2, x, p1->out[0]);
    lt_node *ge = tb_node(&b, "Mul", "gelu", 2, xm->out[0], tb_scalar(&b, "half", LT_FLOAT, 0.5));
    /* mean over the first axis: not a trailing-axes normalization */
    lt_node *mean = attr_is(&b, tb_node(&b, "ReduceMean", "mean", 1, x), "axes", 1, (int64_t[]){0});
    lt_node *dv = tb_node(&b, "Sub", "d", 2, x, mean->out[0]);
    lt_node *sq = tb_node(&b, "Mul", "sq", 2, dv->out[0], dv->out[0]);
    lt_node *var = attr_is(&b, tb_node(&b, "ReduceMean", "var", 1, sq->out[0]), "axes", 1, (int64_t[]){0});
    lt_node *ve = tb_node(&b, "Add", "ve", 2, var->out[0], tb_scalar(&b, "eps", LT_FLOAT, 1e-5));
    lt_node *sd = tb_node(&b, "Sqrt", "sd", 1, ve->out[0]);
    lt_node *nrm = tb_node(&b, "Div", "nrm", 2, dv->out[0], sd->out[0]);
    tb_output(&b, ge->out[0]);
    tb_output(&b, nrm->out[0]);
    tb_infer(&b);
    int before = b.g->n_nodes;
    CHECK_OK(tb_run_passes(&b, "patterns", NULL), &b.ctx);
    CHECK(b.g->n_nodes == before);
    tb_free(&b);
}

int main(void) {
    test_identities();
    test_identities_negative();
    test_dropout_kept();
    test_chains();
    test_cast_and_squeeze_chains();
    test_expand_into_broadcast();
    test_big_expand_not_folded();
    test_simplify_in_subgraph();
    test_fold_batchnorm();
    test_batchnorm_training_kept();
    test_patterns();
    test_patterns_negative();
    return test_report("test_passes_simplify");
}
