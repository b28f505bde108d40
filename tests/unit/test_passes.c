/* test_passes.c — the graph mutation API (src/passes/mutate.h), the pass manager (options, report,
 * dumps, bisecting) and the folding / DCE / CSE passes, each with a before/after check on printed
 * IR and the interpreter's answers compared before and after on the same inputs. Models are built
 * with the mutation API (test_passes_util.h). Exits non-zero on any failure. */
#include "test_passes_util.h"

/* ---------------------------------------------------------------- mutation API */

static void test_replace_keeps_output_names(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[2] = {2, 3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 2, d);
    lt_node *r = tb_node(&b, "Relu", "r", 1, x);
    lt_node *id = tb_node(&b, "Identity", "y", 1, r->out[0]);
    tb_output(&b, id->out[0]);
    tb_infer(&b);
    /* y := r: r takes over the name "y", the identity's output gets r's old name */
    CHECK_OK(lt_value_replace_uses(&b.ctx, b.g, id->out[0], r->out[0]), &b.ctx);
    CHECK(b.g->outputs[0] == r->out[0]);
    CHECK(strcmp(r->out[0]->name, "y") == 0);
    CHECK(r->out[0]->is_output && !id->out[0]->is_output);
    lt_node_remove(b.g, id);
    CHECK_OK(lt_graph_compact(&b.ctx, b.g), &b.ctx);
    CHECK_OK(lt_graph_verify(&b.ctx, b.g), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[2,3]) {\n"
                  "  %y = Relu(%x) : float[2,3]\n"
                  "  return %y\n"
                  "}\n");
    CHECK(b.g->n_values == 2 && b.g->values[1] == r->out[0] && r->out[0]->id == 1);

    /* an output that is a graph input cannot be renamed: the output stays the Identity's */
    lt_node *id2 = tb_node(&b, "Identity", "z", 1, x);
    tb_output(&b, id2->out[0]);
    CHECK_OK(lt_value_replace_uses(&b.ctx, b.g, id2->out[0], x), &b.ctx);
    CHECK(b.g->outputs[1] == id2->out[0] && strcmp(x->name, "x") == 0);
    tb_free(&b);
}

static void test_sort_and_subgraph_refs(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[1] = {4};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    int64_t sd[1] = {1};
    lt_value *c = tb_input(&b, "c", LT_BOOL, 0, sd);
    /* If(c) { then: Neg(a) ; else: Abs(a) } where a = Relu(x) is created AFTER the If (out of order) */
    lt_node *iff = tb_node_in(&b, b.g, "If", "res", 1, 1, c);
    lt_graph *br[2];
    const char *ops[2] = {"Neg", "Abs"};
    lt_value *refs[2];
    for (int k = 0; k < 2; k++) {
        lt_graph *s = lt_arena_alloc(&b.m->arena, sizeof *s);
        s->model = b.m;
        s->parent = b.g;
        s->owner = iff;
        s->name = k ? "else" : "then";
        br[k] = s;
    }
    lt_node *relu = tb_node(&b, "Relu", "a", 1, x);
    for (int k = 0; k < 2; k++) {
        CHECK_OK(lt_value_new(&b.ctx, br[k], "a", &relu->out[0]->type, &refs[k]), &b.ctx);
        refs[k]->outer = relu->out[0];
        lt_node *n = tb_node_in(&b, br[k], ops[k], "o", 1, 1, refs[k]);
        tb_output_in(&b, br[k], n->out[0]);
    }
    CHECK_OK(lt_node_set_attr_int(&b.ctx, iff, "dummy", 0), &b.ctx);
    lt_attr *at = (lt_attr *)lt_node_attr(iff, "dummy");
    at->name = "then_branch";
    at->type = LT_AT_GRAPH;
    at->g = br[0];
    CHECK_OK(lt_node_set_attr_int(&b.ctx, iff, "else_branch", 0), &b.ctx);
    at = (lt_attr *)lt_node_attr(iff, "else_branch");
    at->type = LT_AT_GRAPH;
    at->g = br[1];
    tb_output(&b, iff->out[0]);
    CHECK(lt_graph_verify(&b.ctx, b.g) == LT_OK); /* the verifier does not see reads through subgraphs */
    CHECK(lt_value_count_uses(b.g, relu->out[0]) == 2);
    /* the If reads a (through its branches): sorting must move Relu before it */
    CHECK_OK(lt_graph_sort(&b.ctx, b.g), &b.ctx);
    CHECK(relu->index == 0 && iff->index == 1);
    tb_infer(&b);

    /* replacing a by Sigmoid(x) re-points both branch references */
    lt_node *sg = tb_node(&b, "Sigmoid", "s", 1, x);
    CHECK_OK(lt_graph_sort(&b.ctx, b.g), &b.ctx);
    CHECK_OK(lt_value_replace_uses(&b.ctx, b.g, relu->out[0], sg->out[0]), &b.ctx);
    CHECK(refs[0]->outer == sg->out[0] && refs[1]->outer == sg->out[0]);
    CHECK(strcmp(refs[0]->name, "s") == 0);
    CHECK(lt_value_count_uses(b.g, relu->out[0]) == 0);
    CHECK_OK(lt_graph_sort(&b.ctx, b.g), &b.ctx);
    CHECK(sg->index < iff->index);

    /* dce removes the now-unused Relu */
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "dce", NULL), &b.ctx);
    CHECK(relu->index == -1 && b.g->n_nodes == 2);
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

static void test_sort_cycle_is_an_error(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[1] = {4};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    lt_node *a = tb_node(&b, "Relu", "a", 1, x);
    lt_node *c = tb_node(&b, "Neg", "c", 1, a->out[0]);
    a->in[0] = c->out[0]; /* a <- c <- a */
    lt_ctx ctx = {0};
    CHECK(lt_graph_sort(&ctx, b.g) == LT_ERR_INVALID);
    CHECK(strstr(ctx.msg, "cycle") != NULL);
    tb_free(&b);
}

/* ---------------------------------------------------------------- fold_constants */

static void test_fold_constants(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[1] = {3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    double one_two_three[3] = {1, 2, 3};
    lt_value *c1 = tb_const(&b, "c1", LT_FLOAT, 1, d, one_two_three);
    lt_value *c2 = tb_scalar(&b, "c2", LT_FLOAT, 2.0);
    lt_node *k = tb_node(&b, "Mul", "k", 2, c1, c2);           /* [2,4,6] */
    lt_node *e = tb_node(&b, "Exp", "e", 1, k->out[0]);        /* folds too */
    lt_node *y = tb_node(&b, "Add", "y", 2, x, e->out[0]);
    lt_node *rn = tb_node(&b, "RandomNormalLike", "rn", 1, c1); /* random: never folded */
    tb_output(&b, y->out[0]);
    lt_value *ev = e->out[0];
    tb_output(&b, ev); /* a folded graph output keeps its name */
    tb_output(&b, rn->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    lt_pass_report rep = {0};
    CHECK_OK(tb_run_passes(&b, "fold_constants", &rep), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[3]) {\n"
                  "  %y = Add(%x, %e) : float[3]\n"
                  "  %rn = RandomNormalLike(%c1) : float[3]\n"
                  "  return %y, %e, %rn\n"
                  "}\n");
    CHECK(ev->init != NULL && !ev->producer && e->index == -1);
    const lt_tensor *t = ev->init;
    CHECK(t && t->numel == 3 && fabs(((float *)t->data)[2] - expf(6.0f)) < 1e-3);
    CHECK(rep.n == 2 && rep.runs[0].changed && !rep.runs[1].changed && rep.converged);
    /* the random output is not compared: only y and e */
    s.compare = 2;
    TB_CHECK_SAME(&b, &s);
    lt_pass_report_free(&rep);
    tb_free(&b);
}

/* A Constant node becomes an initializer sharing the attribute's tensor. */
static void test_fold_constant_node(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[1] = {2};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    lt_node *cn = tb_node_in(&b, b.g, "Constant", "k", 1, 0, NULL);
    lt_tensor *t = NULL;
    CHECK_OK(lt_tensor_new(&b.ctx, LT_FLOAT, 1, d, &t), &b.ctx);
    ((float *)t->data)[0] = 3;
    ((float *)t->data)[1] = 4;
    CHECK_OK(lt_node_set_attr_tensor(&b.ctx, cn, "value", t), &b.ctx);
    lt_value *k = cn->out[0];
    lt_node *y = tb_node(&b, "Mul", "y", 2, x, k);
    tb_output(&b, y->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "fold_constants", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[2]) {\n"
                  "  %y = Mul(%x, %k) : float[2]\n"
                  "  return %y\n"
                  "}\n");
    CHECK(k->init == t && t->refs == 2);
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

/* Folding respects the size cap and skips nodes whose evaluation fails. */
static void test_fold_limits(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[1] = {1};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    int64_t big[2] = {64, 64};
    lt_value *shape = tb_ints(&b, "shape", 2, big);
    lt_node *cos = tb_node(&b, "ConstantOfShape", "zeros", 1, shape); /* 16 KiB of float */
    lt_value *data = tb_const(&b, "data", LT_FLOAT, 1, d, (double[]){5});
    lt_value *bad = tb_ints(&b, "bad", 1, (int64_t[]){7});
    lt_node *ga = tb_node(&b, "Gather", "g", 2, data, bad); /* index 7 out of range: left for run time */
    lt_node *y = tb_node(&b, "Add", "y", 2, x, cos->out[0]);
    tb_output(&b, y->out[0]);
    tb_output(&b, ga->out[0]);
    tb_infer(&b);
    lt_pass_options o = {.level = 1, .verify_each = true, .fold_max_bytes = 1024, .disable = "fold_shapes,dce"};
    CHECK_OK(lt_passes_run(&b.ctx, b.m, &o, NULL), &b.ctx);
    CHECK(cos->index >= 0 && ga->index >= 0); /* neither folded */
    o.fold_max_bytes = 0; /* default cap: 64 MiB */
    CHECK_OK(lt_passes_run(&b.ctx, b.m, &o, NULL), &b.ctx);
    CHECK(cos->index == -1 && ga->index >= 0);
    tb_free(&b);
}

/* ---------------------------------------------------------------- fold_shapes */

static void test_fold_shapes_chain(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[3] = {2, 3, 4};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 3, d);
    /* Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) : the PyTorch flatten idiom */
    lt_node *sh = tb_node(&b, "Shape", "s", 1, x);
    lt_node *ga = tb_node(&b, "Gather", "n", 2, sh->out[0], tb_scalar(&b, "zero", LT_INT64, 0));
    lt_node *un = tb_node(&b, "Unsqueeze", "n1", 2, ga->out[0], tb_ints(&b, "axes", 1, (int64_t[]){0}));
    lt_node *cc = tb_node(&b, "Concat", "shape", 2, un->out[0], tb_ints(&b, "minus1", 1, (int64_t[]){-1}));
    CHECK_OK(lt_node_set_attr_int(&b.ctx, cc, "axis", 0), &b.ctx);
    lt_node *rs = tb_node(&b, "Reshape", "y", 2, x, cc->out[0]);
    lt_node *sz = tb_node(&b, "Size", "count", 1, x);
    tb_output(&b, rs->out[0]);
    tb_output(&b, sz->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    lt_pass_report rep = {0};
    CHECK_OK(tb_run_passes(&b, "fold_shapes,fold_constants,dce", &rep), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[2,3,4]) {\n"
                  "  %y = Reshape(%x, %shape) : float[2,12]\n"
                  "  return %y, %count\n"
                  "}\n");
    CHECK(b.g->n_values == 4); /* x, shape, y, count: the intermediate constants are gone */
    CHECK(rep.rounds == 2 && rep.converged);
    TB_CHECK_SAME(&b, &s);
    lt_pass_report_free(&rep);
    tb_free(&b);
}

/* A symbolic batch dim: Gather(Shape(x), 1) folds, the Shape itself stays. */
static void test_fold_shapes_partial(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[2] = {-1, 5};
    const char *params[2] = {"N", NULL};
    lt_value *x = tb_input_in(&b, b.g, "x", LT_FLOAT, 2, d, params);
    lt_node *sh = tb_node(&b, "Shape", "s", 1, x);
    lt_node *g1 = tb_node(&b, "Gather", "cols", 2, sh->out[0], tb_scalar(&b, "one", LT_INT64, 1));
    lt_node *g0 = tb_node(&b, "Gather", "rows", 2, sh->out[0], tb_scalar(&b, "zero", LT_INT64, 0));
    lt_value *cols = g1->out[0];
    tb_output(&b, cols);
    tb_output(&b, g0->out[0]);
    tb_infer(&b);
    CHECK_OK(tb_run_passes(&b, "fold_shapes,dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[N,5]) {\n"
                  "  %s = Shape(%x) : int64[2]\n"
                  "  %rows = Gather(%s, %zero) : int64[]\n"
                  "  return %cols, %rows\n"
                  "}\n");
    CHECK(cols->init && ((int64_t *)cols->init->data)[0] == 5);
    tb_free(&b);
}

/* ---------------------------------------------------------------- dce */

static void test_dce(void) {
    tb b;
    tb_init(&b, 18); /* Split's num_outputs (uneven parts) is opset 18 */
    int64_t d[1] = {3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    lt_value *unused_in = tb_input(&b, "unused", LT_FLOAT, 1, d);
    lt_value *w = tb_const(&b, "w", LT_FLOAT, 1, d, (double[]){1, 2, 3});
    tb_const(&b, "orphan", LT_FLOAT, 1, d, (double[]){4, 5, 6});
    lt_node *dead1 = tb_node(&b, "Mul", "dead1", 2, x, w);
    tb_node(&b, "Relu", "dead2", 1, dead1->out[0]);
    lt_node *y = tb_node(&b, "Neg", "y", 1, x);
    lt_node *split = tb_node_in(&b, b.g, "Split", "part", 2, 1, x); /* only the first half is read */
    CHECK_OK(lt_node_set_attr_int(&b.ctx, split, "num_outputs", 2), &b.ctx);
    lt_node *z = tb_node(&b, "Abs", "z", 1, split->out[0]);
    tb_output(&b, y->out[0]);
    tb_output(&b, z->out[0]);
    (void)unused_in;
    int64_t sd[1] = {4};
    lt_tensor *st = NULL;
    CHECK_OK(lt_tensor_new(&b.ctx, LT_INT64, 1, sd, &st), &b.ctx);
    (void)st;
    lt_tensor_release(st);
    CHECK_OK(lt_node_set_attr_ints(&b.ctx, split, "split_unused_attr", 0, NULL), &b.ctx);
    lt_node_del_attr(split, "split_unused_attr");
    d[0] = 3;
    tb_infer(&b);
    int owned = b.m->owned_tensors.n;
    CHECK_OK(tb_run_passes(&b, "dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[3], %unused: float[3]) {\n"
                  "  %y = Neg(%x) : float[3]\n"
                  "  %part, %part_1 = Split(%x) {num_outputs=2} : float[2], float[1]\n"
                  "  %z = Abs(%part) : float[2]\n"
                  "  return %y, %z\n"
                  "}\n");
    CHECK(b.m->owned_tensors.n == owned - 2); /* w and orphan released */
    CHECK(b.g->n_values == 6);
    tb_free(&b);
}

/* ---------------------------------------------------------------- cse */

static void test_cse(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[2] = {2, 3};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 2, d);
    lt_value *a1 = tb_ints(&b, "axes1", 1, (int64_t[]){0});
    lt_value *a2 = tb_ints(&b, "axes2", 1, (int64_t[]){0});
    lt_node *u1 = tb_node(&b, "Unsqueeze", "u1", 2, x, a1);
    lt_node *u2 = tb_node(&b, "Unsqueeze", "u2", 2, x, a2); /* same after the constants merge */
    lt_node *r1 = tb_node(&b, "Relu", "r1", 1, u1->out[0]);
    lt_node *r2 = tb_node(&b, "Relu", "r2", 1, u2->out[0]);
    lt_node *sm1 = tb_node(&b, "Softmax", "sm1", 1, x);
    CHECK_OK(lt_node_set_attr_int(&b.ctx, sm1, "axis", 0), &b.ctx);
    lt_node *sm2 = tb_node(&b, "Softmax", "sm2", 1, x); /* different attributes: kept */
    CHECK_OK(lt_node_set_attr_int(&b.ctx, sm2, "axis", 1), &b.ctx);
    lt_node *sum = tb_node(&b, "Add", "sum", 2, r1->out[0], r2->out[0]);
    lt_node *both = tb_node(&b, "Add", "both", 2, sm1->out[0], sm2->out[0]);
    lt_node *dr1 = tb_node(&b, "RandomUniformLike", "ru1", 1, x);
    lt_node *dr2 = tb_node(&b, "RandomUniformLike", "ru2", 1, x); /* random: never merged */
    lt_node *r3 = tb_node(&b, "Relu", "r3", 1, x);
    lt_node *r4 = tb_node(&b, "Relu", "r4", 1, x); /* both graph outputs: r4 must keep its name */
    tb_output(&b, sum->out[0]);
    tb_output(&b, both->out[0]);
    tb_output(&b, dr1->out[0]);
    tb_output(&b, dr2->out[0]);
    tb_output(&b, r3->out[0]);
    tb_output(&b, r4->out[0]);
    tb_infer(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    CHECK_OK(tb_run_passes(&b, "cse,dce", NULL), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[2,3]) {\n"
                  "  %u1 = Unsqueeze(%x, %axes1) : float[1,2,3]\n"
                  "  %r1 = Relu(%u1) : float[1,2,3]\n"
                  "  %sm1 = Softmax(%x) {axis=0} : float[2,3]\n"
                  "  %sm2 = Softmax(%x) {axis=1} : float[2,3]\n"
                  "  %sum = Add(%r1, %r1) : float[1,2,3]\n"
                  "  %both = Add(%sm1, %sm2) : float[2,3]\n"
                  "  %ru1 = RandomUniformLike(%x) : float[2,3]\n"
                  "  %ru2 = RandomUniformLike(%x) : float[2,3]\n"
                  "  %r3 = Relu(%x) : float[2,3]\n"
                  "  %r4 = Relu(%x) : float[2,3]\n"
                  "  return %sum, %both, %ru1, %ru2, %r3, %r4\n"
                  "}\n");
    s.compare = 2;
    TB_CHECK_SAME(&b, &s);
    tb_free(&b);
}

/* ---------------------------------------------------------------- the manager */

static void dump_cb(void *user, const char *pass, int round, const char *ir) {
    lt_strbuf *sb = user;
    lt_sb_printf(sb, "[%s %d] %zu\n", pass, round, strlen(ir));
}

/* A model where every group pass has work: used for options. */
static void build_busy(tb *b) {
    tb_init(b, 17);
    int64_t d[2] = {2, 3};
    lt_value *x = tb_input(b, "x", LT_FLOAT, 2, d);
    lt_node *sh = tb_node(b, "Shape", "s", 1, x);
    lt_node *cast = tb_node(b, "Cast", "sf", 1, sh->out[0]);
    CHECK_OK(lt_node_set_attr_int(&b->ctx, cast, "to", LT_INT64), &b->ctx); /* same type: identity */
    lt_node *rs = tb_node(b, "Reshape", "r", 2, x, cast->out[0]);
    lt_node *a1 = tb_node(b, "Relu", "a1", 1, rs->out[0]);
    lt_node *a2 = tb_node(b, "Relu", "a2", 1, rs->out[0]);
    lt_node *y = tb_node(b, "Add", "y", 2, a1->out[0], a2->out[0]);
    tb_output(b, y->out[0]);
    /* rewrites that create nodes: Reshape -> Flatten (a new Reshape), a decomposed LayerNorm,
     * MatMul -> BatchNorm (a new Add) */
    lt_node *r2 = tb_node(b, "Reshape", "r2", 2, y->out[0], tb_ints(b, "s6", 1, (int64_t[]){6}));
    lt_node *fl = tb_node(b, "Flatten", "fl", 1, r2->out[0]);
    lt_node *mean = tb_node(b, "ReduceMean", "mean", 1, x);
    CHECK_OK(lt_node_set_attr_ints(&b->ctx, mean, "axes", 1, (int64_t[]){-1}), &b->ctx);
    lt_node *dv = tb_node(b, "Sub", "d", 2, x, mean->out[0]);
    lt_node *sq = tb_node(b, "Mul", "sq", 2, dv->out[0], dv->out[0]);
    lt_node *var = tb_node(b, "ReduceMean", "var", 1, sq->out[0]);
    CHECK_OK(lt_node_set_attr_ints(&b->ctx, var, "axes", 1, (int64_t[]){-1}), &b->ctx);
    lt_node *ve = tb_node(b, "Add", "ve", 2, var->out[0], tb_scalar(b, "eps", LT_FLOAT, 1e-5));
    lt_node *sd = tb_node(b, "Sqrt", "sd", 1, ve->out[0]);
    lt_node *ln = tb_node(b, "Div", "ln", 2, dv->out[0], sd->out[0]);
    lt_node *mm = tb_node(b, "MatMul", "mm", 2, ln->out[0], tb_const(b, "w", LT_FLOAT, 2, (int64_t[]){3, 2},
                                                                     (double[]){1, 2, 3, 4, 5, 6}));
    lt_value *p1 = tb_const(b, "p1", LT_FLOAT, 1, (int64_t[]){2}, (double[]){1, 2});
    lt_value *p2 = tb_const(b, "p2", LT_FLOAT, 1, (int64_t[]){2}, (double[]){0.5, 1});
    lt_node *bn = tb_node(b, "BatchNormalization", "bn", 5, mm->out[0], p1, p2, p2, p1);
    tb_output(b, fl->out[0]);
    tb_output(b, bn->out[0]);
    tb_infer(b);
}

static void test_manager_options(void) {
    tb b;
    lt_pass_report rep = {0};
    /* -O0 runs nothing */
    build_busy(&b);
    lt_pass_options o0 = {.level = 0};
    CHECK_OK(lt_passes_run(&b.ctx, b.m, &o0, &rep), &b.ctx);
    CHECK(rep.n == 0 && b.g->n_nodes == 17);
    lt_pass_report_free(&rep);
    tb_free(&b);

    /* -O3 with time, verify and a dump into a buffer after "all" */
    build_busy(&b);
    tb_snap s;
    tb_snapshot(&b, &s);
    lt_strbuf dump = {0};
    lt_pass_options o = {.level = 3, .verify_each = true, .time_passes = true, .dump_after = "all", .dump = &dump};
    CHECK_OK(lt_passes_run(&b.ctx, b.m, &o, &rep), &b.ctx);
    EXPECT_IR(&b, "graph main (%x: float[2,3]) {\n"
                  "  %a1 = Relu(%x) : float[2,3]\n"
                  "  %y = Add(%a1, %a1) : float[2,3]\n"
                  "  %fl = Reshape(%y, %shape) : float[6,1]\n"
                  "  %ln = LayerNormalization(%x, %ln_scale) {axis=1, epsilon=1e-05, stash_type=1} : float[2,3]\n"
                  "  %mm = MatMul(%ln, %w_bnfold) : float[2,2]\n"
                  "  %bn = Add(%mm, %w_bnbias) : float[2,2]\n"
                  "  return %y, %fl, %bn\n"
                  "}\n");
    TB_CHECK_CLOSE(&b, &s, 1e-5);
    CHECK(rep.converged && rep.nodes_before == 17 && rep.nodes_after == 6);
    CHECK(rep.total_seconds > 0);
    int changed_runs = 0;
    for (int i = 0; i < rep.n; i++) changed_runs += rep.runs[i].changed;
    /* one dump per changed run, none for the others */
    int dumps = 0;
    for (const char *p = dump.s; p && (p = strstr(p, "; after ")); p++) dumps++;
    CHECK(dumps == changed_runs && dumps > 0);
    CHECK(dump.s && strstr(dump.s, "; after fold_shapes (round 1)\n") != NULL);
    lt_strbuf table = {0};
    lt_pass_report_print(&rep, &table);
    CHECK(table.s && strstr(table.s, "fold_shapes") && strstr(table.s, "nodes 17 -> 6"));
    lt_sb_free(&table);
    lt_sb_free(&dump);
    lt_pass_report_free(&rep);
    tb_free(&b);

    /* dump_after one pass, through the callback */
    build_busy(&b);
    lt_strbuf cb = {0};
    lt_pass_options oc = {.level = 3, .dump_after = "cse", .dump_cb = dump_cb, .dump_user = &cb};
    CHECK_OK(lt_passes_run(&b.ctx, b.m, &oc, NULL), &b.ctx);
    CHECK(cb.s && strncmp(cb.s, "[cse 1] ", 8) == 0 && !strstr(cb.s, "[dce"));
    lt_sb_free(&cb);
    tb_free(&b);

    /* stop_after 1: only fold_shapes runs */
    build_busy(&b);
    lt_pass_options os = {.level = 3, .stop_after = 1};
    CHECK_OK(lt_passes_run(&b.ctx, b.m, &os, &rep), &b.ctx);
    CHECK(rep.n == 1 && rep.stopped && strcmp(rep.runs[0].name, "fold_shapes") == 0);
    CHECK(b.g->n_nodes == 16);
    lt_pass_report_free(&rep);
    tb_free(&b);

    /* disabled passes do not run; levels gate passes */
    build_busy(&b);
    lt_pass_options od = {.level = 1, .disable = "dce, fold_shapes, resize_gather, unroll_rnn, convt_phases, "
                                                 "instnorm_layernorm, groupnorm_layernorm, einsum_matmul, expand_contrib, "
                                                 "expand_quant, widen_gemm, inline_if, unroll_loop"};
    CHECK_OK(lt_passes_run(&b.ctx, b.m, &od, &rep), &b.ctx);
    for (int i = 0; i < rep.n; i++) CHECK(strcmp(rep.runs[i].name, "fold_constants") == 0);
    CHECK(b.g->n_nodes == 17);
    lt_pass_report_free(&rep);
    tb_free(&b);

    /* bad options are usage errors naming the problem */
    build_busy(&b);
    lt_ctx c = {0};
    lt_pass_options ob = {.level = 2, .disable = "cse,nosuch"};
    CHECK(lt_passes_run(&c, b.m, &ob, NULL) == LT_ERR_USAGE && strstr(c.msg, "nosuch"));
    lt_ctx c2 = {0};
    lt_pass_options ob2 = {.level = 4};
    CHECK(lt_passes_run(&c2, b.m, &ob2, NULL) == LT_ERR_USAGE);
    lt_ctx c3 = {0};
    lt_pass_options ob3 = {.level = 1, .dump_after = "bogus"};
    CHECK(lt_passes_run(&c3, b.m, &ob3, NULL) == LT_ERR_USAGE && strstr(c3.msg, "bogus"));
    CHECK(lt_pass_find("simplify") == &lt_pass_simplify && !lt_pass_find("x"));
    tb_free(&b);
}

/* verify_each names the pass after which the graph is invalid: a graph broken before the run is
 * reported before any pass. */
static void test_verify_reports(void) {
    tb b;
    tb_init(&b, 17);
    int64_t d[1] = {2};
    lt_value *x = tb_input(&b, "x", LT_FLOAT, 1, d);
    lt_node *a = tb_node(&b, "Relu", "a", 1, x);
    lt_node *c = tb_node(&b, "Neg", "c", 1, a->out[0]);
    tb_output(&b, c->out[0]);
    tb_infer(&b);
    a->in[0] = c->out[0];
    lt_ctx ctx = {0};
    lt_pass_options o = {.level = 1, .verify_each = true};
    CHECK(lt_passes_run(&ctx, b.m, &o, NULL) == LT_ERR_INVALID);
    CHECK(strstr(ctx.msg, "not defined before use") != NULL);
    tb_free(&b);
}

/* Out-of-memory on every allocation of a full -O3 run: an error or success, never a crash or a leak. */
static void test_oom(void) {
    int ok_runs = 0;
    long fail_at = 0;
    for (; fail_at < 4000; fail_at++) {
        lt_set_allocator(&g_test_alloc); /* count everything, the model's own allocations too */
        long before = g_live;
        tb b;
        build_busy(&b);
        g_countdown = fail_at;
        lt_ctx c = {0};
        lt_pass_options o = {.level = 3, .verify_each = true};
        lt_pass_report rep = {0};
        lt_status s = lt_passes_run(&c, b.m, &o, &rep);
        g_countdown = -1;
        lt_pass_report_free(&rep);
        if (s != LT_OK) {
            CHECK(s == LT_ERR_NOMEM && c.msg[0]);
            lt_ctx vc = {0}; /* the model is left valid: the caller may still run it */
            CHECK_OK(lt_graph_verify(&vc, b.g), &vc);
            tb_snap sn;
            tb_snapshot(&b, &sn);
            for (int i = 0; i < 8; i++) {
                lt_datum_release(sn.in[i]);
                lt_datum_release(sn.out[i]);
            }
        } else {
            ok_runs++;
        }
        tb_free(&b);
        CHECK(g_live == before); /* nothing leaked */
        lt_set_allocator(NULL);
        if (s == LT_OK) break;
    }
    CHECK(ok_runs == 1 && fail_at > 20); /* the run allocates: every one of those failures was survived */
    if (getenv("VERBOSE")) fprintf(stderr, "oom: %ld allocation failures survived\n", fail_at);
}

int main(void) {
    test_replace_keeps_output_names();
    test_sort_and_subgraph_refs();
    test_sort_cycle_is_an_error();
    test_fold_constants();
    test_fold_constant_node();
    test_fold_limits();
    test_fold_shapes_chain();
    test_fold_shapes_partial();
    test_dce();
    test_cse();
    test_manager_options();
    test_verify_reports();
    test_oom();
    return test_report("test_passes");
}
