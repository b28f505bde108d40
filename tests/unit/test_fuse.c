/* test_fuse.c — unit tests of fusion (src/lower/fuse.c): the printed groups of small models
 * (tests/data/lower_*.onnx) against expectations, the fusion options (no fusion, no epilogues, all
 * host), host groups and their reasons, and the invariants every partition must keep on every test
 * model: each node in exactly one group, groups in topological order, a group's internal values read
 * only inside it, inputs/outputs listed once. Exits non-zero on failure. */
#include "lower/lower.h"
#include "onnx/onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef struct fused {
    lt_model *m;
    lt_arena arena;
    lt_groups gs;
    char *text;
} fused;

static bool fuse_file(const char *path, const lt_fuse_options *opt, fused *f) {
    lt_ctx ctx = {0};
    memset(f, 0, sizeof *f);
    lt_arena_init(&f->arena);
    if (lt_onnx_load_file(&ctx, path, NULL, &f->m) != LT_OK || lt_fuse(&ctx, f->m, &f->arena, opt, &f->gs) != LT_OK) {
        fprintf(stderr, "%s: %s\n", path, ctx.msg);
        failures++;
        return false;
    }
    lt_strbuf sb = {0};
    lt_groups_print(&f->gs, &sb);
    f->text = strdup(sb.s ? sb.s : "");
    lt_sb_free(&sb);
    return true;
}

static void fused_free(fused *f) {
    free(f->text);
    lt_arena_free(&f->arena);
    lt_model_free(f->m);
}

static void expect_line(const fused *f, const char *line) {
    if (!strstr(f->text, line)) {
        fprintf(stderr, "expected line not found:\n  %s\nin:\n%s", line, f->text);
        failures++;
    }
}

/* The invariants of lower.h, checked on any partition. */
static void check_invariants(const char *path, const fused *f) {
    const lt_graph *g = f->m->graph;
    const lt_groups *gs = &f->gs;
    int *seen = calloc((size_t)g->n_nodes + 1, sizeof *seen);
    int *group_of = calloc((size_t)g->n_nodes + 1, sizeof *group_of);
    int host = 0, compiled_nodes = 0;
    for (int i = 0; i < gs->n; i++) {
        const lt_group *gr = &gs->groups[i];
        CHECK(gr->id == i && gr->n_nodes >= 1 && gr->anchor);
        if (gr->host) {
            host++;
            CHECK(gr->n_nodes == 1 && gr->reason && gr->reason[0]);
        }
        else compiled_nodes += gr->n_nodes;
        for (int j = 0; j < gr->n_nodes; j++) {
            const lt_node *n = gr->nodes[j];
            seen[n->index]++;
            group_of[n->index] = i;
            CHECK(gs->node_group[n->index] == i);
            if (j) CHECK(gr->nodes[j - 1]->index < n->index);
        }
        for (int a = 0; a < gr->n_inputs; a++)
            for (int b = a + 1; b < gr->n_inputs; b++) CHECK(gr->inputs[a] != gr->inputs[b]);
        CHECK(gr->n_outputs >= 1);
    }
    CHECK(host == gs->n_host && compiled_nodes == gs->n_compiled_nodes);
    for (int i = 0; i < g->n_nodes; i++) CHECK(seen[i] == 1);
    /* every input of a group comes from an earlier group (or is a graph input / constant) */
    for (int i = 0; i < gs->n; i++) {
        const lt_group *gr = &gs->groups[i];
        for (int a = 0; a < gr->n_inputs; a++) {
            const lt_value *v = gr->inputs[a];
            if (v->producer) CHECK(group_of[v->producer->index] < i);
        }
        /* values produced here and read by another group are outputs */
        for (int j = 0; j < gr->n_nodes; j++)
            for (int o = 0; o < gr->nodes[j]->n_out; o++) {
                const lt_value *v = gr->nodes[j]->out[o];
                if (!v) continue;
                bool read_outside = v->is_output;
                for (int k = 0; k < g->n_nodes; k++)
                    for (int q = 0; q < g->nodes[k]->n_in; q++)
                        if (g->nodes[k]->in[q] == v && group_of[k] != i) read_outside = true;
                if (read_outside) {
                    bool listed = false;
                    for (int q = 0; q < gr->n_outputs; q++) listed |= gr->outputs[q] == v;
                    if (!listed) fprintf(stderr, "%s: g%d does not list '%s'\n", path, i, v->name);
                    CHECK(listed);
                }
            }
    }
    free(seen);
    free(group_of);
}

static void test_expected_groups(void) {
    fused f;
    if (fuse_file("tests/data/lower_ew.onnx", NULL, &f)) {
        /* x is read twice: each chain is its own group, both read x from memory */
        expect_line(&f, "g0 broadcast anchor=n3 'y' (Exp) nodes=[n0 Relu, n1 Mul, n2 Add, n3 Exp] in=[x, z, c] out=[y]\n");
        expect_line(&f, "g1 elemwise anchor=n5 'y2' (Neg) nodes=[n4 Sigmoid, n5 Neg] in=[x] out=[y2]\n");
        expect_line(&f, "groups: 2 (0 host), nodes compiled: 6/6\n");
        fused_free(&f);
    }
    if (fuse_file("tests/data/lower_mlp.onnx", NULL, &f)) {
        /* bias add into the MatMul; residual add into the second; the Gelu chain is one kernel; the
         * scalar constants (sqrt2, one, half) are immediates, not inputs */
        expect_line(&f, "g0 out_ew_fusable anchor=n0 'h' (MatMul) nodes=[n0 MatMul, n1 Add] in=[x, w1, b1] out=[hb]\n");
        expect_line(&f, "g1 broadcast anchor=n6 'g' (Mul) nodes=[n2 Div, n3 Erf, n4 Add, n5 Mul, n6 Mul] in=[hb] out=[g]\n");
        expect_line(&f, "g2 out_ew_fusable anchor=n7 'o' (MatMul) nodes=[n7 MatMul, n8 Add, n9 Add] in=[g, x, w2, b2] out=[y]\n");
        expect_line(&f, "g3 out_ew_fusable anchor=n10 'y2' (Gemm) nodes=[n10 Gemm, n11 Tanh] in=[x2, w3, b3] out=[y3]\n");
        fused_free(&f);
    }
    if (fuse_file("tests/data/lower_ln.onnx", NULL, &f)) {
        /* the prologue Pow into the second ReduceMean, its epilogue Add+Sqrt; d is read twice */
        expect_line(&f, "g2 reduce anchor=n3 'var' (ReduceMean) nodes=[n2 Pow, n3 ReduceMean, n4 Add, n5 Sqrt] in=[d] out=[sd]\n");
        expect_line(&f, "g4 reduce anchor=n9 'y2' (LayerNormalization) nodes=[n9 LayerNormalization] in=[x, g, b] out=[y2]\n");
        fused_free(&f);
    }
    if (fuse_file("tests/data/lower_attn.onnx", NULL, &f)) {
        /* the Reshape+Transpose chains of the operands are read by the MatMuls as strided views;
         * scale and mask as the QK^T MatMul's epilogue; the output Transpose+Reshape as the second
         * MatMul's store; the shape inputs of Reshape are not kernel inputs */
        expect_line(&f, "g0 out_ew_fusable anchor=n4 'sc' (MatMul) nodes=[n0 Reshape, n1 Transpose, n2 Reshape, "
                        "n3 Transpose, n4 MatMul, n5 Mul, n6 Add] in=[q, k, mask] out=[scm]\n");
        expect_line(&f, "g1 reduce anchor=n7 'p' (Softmax) nodes=[n7 Softmax] in=[scm] out=[p]\n");
        expect_line(&f, "g2 out_ew_fusable anchor=n10 'o' (MatMul) nodes=[n8 Reshape, n9 Transpose, n10 MatMul, "
                        "n11 Transpose, n12 Reshape] in=[v, p] out=[y]\n");
        fused_free(&f);
    }
    if (fuse_file("tests/data/lower_attn2.onnx", NULL, &f)) {
        /* heads of Split outputs read as strided views (the shared Reshape q4 is stored: two
         * readers); Div as the call's alpha, the bool-mask Where in the epilogue; the residual and
         * the merging Transpose+Reshape after the second MatMul; a Transpose whose Reshape merges
         * non-adjacent dims stays a copy; a Sub moves from a MatMul into the next Softmax */
        expect_line(&f, "g2 out_ew_fusable anchor=n7 's' (MatMul) nodes=[n2 Transpose, n3 Reshape, n4 Transpose, n7 MatMul, "
                        "n8 Div, n9 Where] in=[q4, k, mask] out=[sw]\n");
        expect_line(&f, "g3 reduce anchor=n10 'p' (Softmax) nodes=[n10 Softmax] in=[sw] out=[p]\n");
        expect_line(&f, "g4 out_ew_fusable anchor=n11 'o' (MatMul) nodes=[n5 Reshape, n6 Transpose, n11 MatMul, n12 Add, "
                        "n13 Transpose, n14 Reshape] in=[v, p, r] out=[y]\n");
        expect_line(&f, "g5 injective anchor=n15 'qh2' (Transpose) nodes=[n15 Transpose] in=[q4] out=[qh2]\n");
        expect_line(&f, "g6 out_ew_fusable anchor=n17 'z' (MatMul) nodes=[n16 Reshape, n17 MatMul] in=[qh2, w] out=[z]\n");
        expect_line(&f, "g7 out_ew_fusable anchor=n18 's2' (MatMul) nodes=[n18 MatMul] in=[a, w2] out=[s2]\n");
        expect_line(&f, "g8 reduce anchor=n20 'sm' (Softmax) nodes=[n19 Sub, n20 Softmax] in=[s2, fm] out=[sm]\n");
        fused_free(&f);
    }
    if (fuse_file("tests/data/lower_proj.onnx", NULL, &f)) {
        /* epilogues continue through a reshape that adds a leading 1; the written-out GELU reads
         * the Gemm's output three times: it is not a chain, so the Gemm's group ends at the reshape */
        expect_line(&f, "g0 out_ew_fusable anchor=n0 'p' (Gemm) nodes=[n0 Gemm, n1 Reshape, n2 Add] in=[x, xr, w, b] out=[y]\n");
        expect_line(&f, "g1 out_ew_fusable anchor=n3 'm' (MatMul) nodes=[n3 MatMul, n4 Reshape, n5 Add, n6 Where] "
                        "in=[x, xr, cond, w2] out=[y2]\n");
        expect_line(&f, "g2 out_ew_fusable anchor=n7 'h' (Gemm) nodes=[n7 Gemm, n8 Reshape] in=[x, w3, b3] out=[hr]\n");
        fused_free(&f);
    }
    if (fuse_file("tests/data/lower_host.onnx", NULL, &f)) {
        expect_line(&f, "g1 host (NonZero) n1 'nz': no lowering for NonZero\n");
        expect_line(&f, "g2 host (Cast) n2 'nzf': input 0 'nz' has no static shape (int64[2,?])\n");
        expect_line(&f, "groups: 4 (2 host), nodes compiled: 2/4\n");
        fused_free(&f);
    }
    if (fuse_file("tests/data/lower_inj.onnx", NULL, &f)) {
        /* a Gather whose indices are a model input compiles (the plan range-checks them before
         * each run) and fuses with the Slice; Split's two outputs from one group; Slice's constant
         * parameters are not inputs */
        expect_line(&f, "g0 injective anchor=n1 'sl' (Slice) nodes=[n0 Gather, n1 Slice] in=[ids, emb] out=[sl]\n");
        expect_line(&f, "g1 injective anchor=n3 's1' (Split) nodes=[n2 Concat, n3 Split] in=[sl, sl2] out=[s1, s2]\n");
        fused_free(&f);
    }
}

static void test_options(void) {
    fused f;
    lt_fuse_options none = {.no_fusion = true};
    if (fuse_file("tests/data/lower_mlp.onnx", &none, &f)) {
        CHECK(f.gs.n == 12 && f.gs.n_host == 0);
        expect_line(&f, "g1 broadcast anchor=n1 'hb' (Add) nodes=[n1 Add] in=[h, b1] out=[hb]\n");
        fused_free(&f);
    }
    lt_fuse_options noepi = {.no_epilogues = true};
    if (fuse_file("tests/data/lower_mlp.onnx", &noepi, &f)) {
        expect_line(&f, "g0 out_ew_fusable anchor=n0 'h' (MatMul) nodes=[n0 MatMul] in=[x, w1] out=[h]\n");
        /* the bias add is then its own kernel (hb has two readers), the residual adds one kernel */
        expect_line(&f, "g1 broadcast anchor=n1 'hb' (Add) nodes=[n1 Add] in=[h, b1] out=[hb]\n");
        expect_line(&f, "g4 broadcast anchor=n9 'y' (Add) nodes=[n8 Add, n9 Add] in=[o, x, b2] out=[y]\n");
        fused_free(&f);
    }
    lt_fuse_options host = {.all_host = true};
    if (fuse_file("tests/data/lower_conv.onnx", &host, &f)) {
        CHECK(f.gs.n_host == f.gs.n && f.gs.n_compiled_nodes == 0);
        expect_line(&f, "g0 host (Conv) n0 'c1': all nodes on the host\n");
        fused_free(&f);
    }
}

static void test_invariants(void) {
    static const char *const paths[] = {"tests/data/lower_ew.onnx", "tests/data/lower_ln.onnx", "tests/data/lower_attn.onnx",
                                        "tests/data/lower_attn2.onnx", "tests/data/lower_proj.onnx",
                                        "tests/data/lower_mlp.onnx", "tests/data/lower_conv.onnx", "tests/data/lower_inj.onnx",
                                        "tests/data/lower_red.onnx", "tests/data/lower_host.onnx", "tests/data/add.onnx",
                                        "tests/data/sym_add.onnx"};
    lt_fuse_options opts[4] = {{0}, {.no_fusion = true}, {.no_epilogues = true}, {.all_host = true}};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        for (int o = 0; o < 4; o++) {
            fused f;
            if (!fuse_file(paths[i], &opts[o], &f)) continue;
            check_invariants(paths[i], &f);
            fused_free(&f);
        }
}

static void test_supported(void) {
    fused f;
    if (!fuse_file("tests/data/sym_add.onnx", NULL, &f)) return;
    /* symbolic N: not compilable until bound */
    char why[256];
    CHECK(!lt_lower_supported(f.m->graph->nodes[0], why, sizeof why));
    CHECK(strstr(why, "no static shape") != NULL);
    CHECK(f.gs.n_host == 1); /* the Identity of a static int64[2] compiles */
    fused_free(&f);
    CHECK(strcmp(lt_pattern_name(LT_PK_OUT_EW_FUSABLE), "out_ew_fusable") == 0);
}

int main(void) {
    test_expected_groups();
    test_options();
    test_invariants();
    test_supported();
    if (failures) fprintf(stderr, "test_fuse: %d failure(s)\n", failures);
    return failures != 0;
}
