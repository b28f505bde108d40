/* einsum_matmul.c — an Einsum of one or two inputs that is a (batched) matrix product, an outer
 * product, a transpose or a sum over axes becomes Transpose / Reshape / ReduceSum / MatMul / Mul,
 * which lathe compiles. The equation is parsed by the interpreter's own parser (lt_einsum_parse:
 * implicit outputs, '...' broadcast labels). With the labels of the inputs A, B and the output:
 *     one input:   Y = Transpose(ReduceSum(A, the labels not in the output))
 *     two inputs:  a label only in A (only in B) and not in the output is summed out of A (B) first;
 *                  the rest are batch labels (A, B, output), contracted labels K (A, B), kept labels
 *                  M (A, output) and N (B, output):
 *                  A' = Reshape(Transpose(A) [batch, M, K], [b, m, k]), B' likewise [b, k, n]
 *                  Y  = Transpose(Reshape(MatMul(A', B') [b, m, n], [batch, M, N]))
 *                  (no contracted label: Mul of A' [b, m, 1] and B' [b, 1, n]).
 * A size-1 axis broadcast against a larger one of the other input is reshaped away first (the value
 * does not depend on its label). Transposes and reshapes that change nothing are left out, so
 * "bij,bjk->bik" is one MatMul. MatMul compiles for float32 only: for the other float types the
 * product is Mul([b, m, k, 1], [b, 1, k, n]) summed over k by a ReduceSum (one fused reduction),
 * when that broadcast product has at most MAX_PRODUCT elements.
 * Left alone (the interpreter runs them): more than two inputs, a label repeated within a term (a
 * diagonal, "ii->i"), dynamic or empty shapes, non-float dtypes, a larger non-float32 product.
 * Level -O1.
 */
#include "util.h"

#include <stdio.h>
#include <string.h>

#include "../ops/nn/nn_einsum.h"

#define NLAB LT_EINSUM_MAX_LAB
#define MAX_PRODUCT ((int64_t)1 << 24)

/* A value with the label of each axis and its size. */
typedef struct lval {
    lt_value *v;
    int rank;
    int lab[LT_MAX_RANK];
    int64_t dim[LT_MAX_RANK];
} lval;

typedef struct eb {
    lt_ctx *ctx;
    lt_graph *g;
    lt_node *at; /* new nodes go before it */
    char hint[96];
} eb;

static int find(const int *labs, int n, int l) {
    for (int i = 0; i < n; i++)
        if (labs[i] == l) return i;
    return -1;
}

/* x summed over the axes whose label is not in keep[] (a label mask). */
static lt_status sum_out(eb *b, lval *x, const bool *keep) {
    int64_t axes[LT_MAX_RANK];
    int na = 0, r = 0;
    lval y = {.v = NULL};
    for (int a = 0; a < x->rank; a++) {
        if (keep[x->lab[a]]) {
            y.lab[r] = x->lab[a];
            y.dim[r++] = x->dim[a];
        } else {
            axes[na++] = a;
        }
    }
    if (!na) return LT_OK;
    lt_node *rs;
    LT_TRY(lt_node_new(b->ctx, b->g, "ReduceSum", "", 1, &x->v, 1, b->hint, b->at, &rs));
    LT_TRY(lt_node_set_attr_int(b->ctx, rs, "keepdims", 0));
    if (rs->opset >= 13) {
        lt_tensor *t;
        LT_TRY(lt_pu_tensor_i64(b->ctx, na, axes, &t));
        LT_TRY(lt_node_set_n_inputs(b->ctx, rs, 2));
        LT_TRY(lt_value_new_const(b->ctx, b->g, b->hint, t, &rs->in[1]));
    } else {
        LT_TRY(lt_node_set_attr_ints(b->ctx, rs, "axes", na, axes));
    }
    LT_TRY(lt_node_infer(b->ctx, rs));
    y.v = rs->out[0];
    y.rank = r;
    *x = y;
    return LT_OK;
}

/* x with its axes in the label order order[0..n) (every label of x, once). */
static lt_status permute(eb *b, lval *x, const int *order, int n) {
    int64_t perm[LT_MAX_RANK];
    bool ident = true;
    lval y = *x;
    for (int i = 0; i < n; i++) {
        perm[i] = find(x->lab, x->rank, order[i]);
        ident &= perm[i] == i;
        y.lab[i] = x->lab[perm[i]];
        y.dim[i] = x->dim[perm[i]];
    }
    if (ident) return LT_OK;
    lt_node *tr;
    LT_TRY(lt_node_new(b->ctx, b->g, "Transpose", "", 1, &x->v, 1, b->hint, b->at, &tr));
    LT_TRY(lt_node_set_attr_ints(b->ctx, tr, "perm", n, perm));
    LT_TRY(lt_node_infer(b->ctx, tr));
    y.v = tr->out[0];
    *x = y;
    return LT_OK;
}

/* v reshaped to dims[rank] unless it has that shape already. */
static lt_status reshape(eb *b, lt_value **v, int rank, const int64_t *dims) {
    int r;
    int64_t d[LT_MAX_RANK];
    if (lt_value_static_shape(*v, &r, d) && r == rank && !memcmp(d, dims, (size_t)rank * sizeof *d)) return LT_OK;
    return lt_pu_reshape(b->ctx, b->g, *v, rank, dims, b->hint, b->at, v);
}

/* Input k of n as a labelled value; false for what the rewrite leaves alone. */
static bool operand(const lt_node *n, const lt_einsum *e, int k, int64_t *size, lval *x) {
    if (!n->in[k] || !lt_value_static_shape(n->in[k], &x->rank, x->dim) || x->rank != e->rank[k]) return false;
    x->v = n->in[k];
    for (int a = 0; a < x->rank; a++) {
        int l = e->lab[k][a];
        if (find(x->lab, a, l) >= 0 || x->dim[a] < 1) return false; /* a diagonal, an empty axis */
        if (size[l] > 1 && x->dim[a] > 1 && size[l] != x->dim[a]) return false;
        if (x->dim[a] > size[l]) size[l] = x->dim[a];
        x->lab[a] = l;
    }
    return true;
}

/* x without its size-1 axes whose label has a larger size in the other input (broadcast: the value
 * does not depend on that label). */
static lt_status drop_broadcast(eb *b, lval *x, const int64_t *size) {
    lval y = *x;
    y.rank = 0;
    for (int a = 0; a < x->rank; a++)
        if (x->dim[a] == size[x->lab[a]]) {
            y.lab[y.rank] = x->lab[a];
            y.dim[y.rank++] = x->dim[a];
        }
    if (y.rank == x->rank) return LT_OK;
    LT_TRY(reshape(b, &y.v, y.rank, y.dim));
    *x = y;
    return LT_OK;
}

/* The product of the sizes of labels labs[0..n) (1 for none: an outer product is [b, m, 1] * [b, 1, n]). */
static int64_t prod(const int64_t *size, const int *labs, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= size[labs[i]];
    return p;
}

/* Two inputs: the labelled product, its labels in the order batch, M, N. gemm: a MatMul (float32),
 * else a Mul broadcast over [b, m, k, n] and a ReduceSum over k. */
static lt_status contract(eb *b, const lt_einsum *e, const int64_t *size, bool gemm, lval *A, lval *B, lval *y) {
    bool out[NLAB] = {false}, inA[NLAB] = {false}, inB[NLAB] = {false}, keepA[NLAB], keepB[NLAB];
    for (int j = 0; j < e->out_rank; j++) out[e->out_lab[j]] = true;
    for (int a = 0; a < A->rank; a++) inA[A->lab[a]] = true;
    for (int a = 0; a < B->rank; a++) inB[B->lab[a]] = true;
    for (int l = 0; l < NLAB; l++) {
        keepA[l] = out[l] || inB[l];
        keepB[l] = out[l] || inA[l];
    }
    LT_TRY(sum_out(b, A, keepA));
    LT_TRY(sum_out(b, B, keepB));
    int bat[LT_MAX_RANK], M[LT_MAX_RANK], N[LT_MAX_RANK], K[LT_MAX_RANK], nb = 0, nm = 0, nn = 0, nk = 0;
    for (int j = 0; j < e->out_rank; j++) { /* output order within each class */
        int l = e->out_lab[j];
        if (inA[l] && inB[l]) bat[nb++] = l;
        else if (inA[l]) M[nm++] = l;
        else N[nn++] = l;
    }
    for (int a = 0; a < A->rank; a++)
        if (!out[A->lab[a]]) K[nk++] = A->lab[a];
    int oa[LT_MAX_RANK], ob[LT_MAX_RANK], oy[LT_MAX_RANK];
    memcpy(oa, bat, sizeof(int) * (size_t)nb), memcpy(oa + nb, M, sizeof(int) * (size_t)nm);
    memcpy(oa + nb + nm, K, sizeof(int) * (size_t)nk);
    memcpy(ob, bat, sizeof(int) * (size_t)nb), memcpy(ob + nb, K, sizeof(int) * (size_t)nk);
    memcpy(ob + nb + nk, N, sizeof(int) * (size_t)nn);
    LT_TRY(permute(b, A, oa, nb + nm + nk));
    LT_TRY(permute(b, B, ob, nb + nk + nn));
    int64_t bs = prod(size, bat, nb), ms = prod(size, M, nm), ns = prod(size, N, nn), ks = prod(size, K, nk);
    if (gemm) {
        int r = nb ? 3 : 2;
        int64_t da[3] = {bs, ms, ks}, db[3] = {bs, ks, ns};
        LT_TRY(reshape(b, &A->v, r, nb ? da : da + 1));
        LT_TRY(reshape(b, &B->v, r, nb ? db : db + 1));
    } else { /* [b, m, k, 1] * [b, 1, k, n], summed over k */
        int64_t da[4] = {bs, ms, ks, 1}, db[4] = {bs, 1, ks, ns};
        LT_TRY(reshape(b, &A->v, 4, da));
        LT_TRY(reshape(b, &B->v, 4, db));
    }
    lt_value *in[2] = {A->v, B->v};
    LT_TRY(lt_pu_new_op(b->ctx, b->g, gemm && nk ? "MatMul" : "Mul", 2, in, NULL, 0, b->hint, b->at, &y->v));
    if (!gemm) {
        lval p = {.v = y->v, .rank = 4, .lab = {0, 1, 2, 3}, .dim = {bs, ms, ks, ns}};
        bool keep[NLAB] = {true, true, false, true};
        LT_TRY(sum_out(b, &p, keep));
        y->v = p.v;
    }
    y->rank = 0;
    memcpy(oy, bat, sizeof(int) * (size_t)nb), memcpy(oy + nb, M, sizeof(int) * (size_t)nm);
    memcpy(oy + nb + nm, N, sizeof(int) * (size_t)nn);
    int64_t yd[LT_MAX_RANK];
    for (int i = 0; i < nb + nm + nn; i++) {
        y->lab[y->rank] = oy[i];
        yd[i] = y->dim[y->rank++] = size[oy[i]];
    }
    return reshape(b, &y->v, y->rank, yd);
}

/* Elements of the product over every label of the inputs (what the Mul form materializes at most),
 * saturating at MAX_PRODUCT + 1. */
static int64_t broadcast_product(const lt_einsum *e, const int64_t *size) {
    int64_t p = 1;
    for (int l = 0; l < NLAB; l++)
        if (e->used[l] && size[l] > 0 && (!lt_mul_i64(p, size[l], &p) || p > MAX_PRODUCT)) return MAX_PRODUCT + 1;
    return p;
}

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    const char *eq = lt_attr_string(n, "equation", NULL);
    if (!eq || n->n_in < 1 || n->n_in > 2 || !n->out[0]) return LT_OK;
    lt_dtype dt = lt_pu_dtype(n->in[0] ? n->in[0] : n->out[0]);
    if (!lt_dtype_is_float(dt)) return LT_OK;
    int ranks[2];
    for (int k = 0; k < n->n_in; k++) {
        if (!n->in[k] || lt_pu_dtype(n->in[k]) != dt || n->in[k]->type.rank < 0) return LT_OK;
        ranks[k] = lt_value_const(n->in[k]) ? lt_value_const(n->in[k])->rank : n->in[k]->type.rank;
    }
    lt_einsum e;
    char err[256];
    if (!lt_einsum_parse(eq, n->n_in, ranks, &e, err, sizeof err)) return LT_OK;
    int64_t size[NLAB];
    for (int l = 0; l < NLAB; l++) size[l] = -1;
    lval x[2], y;
    for (int k = 0; k < n->n_in; k++)
        if (!operand(n, &e, k, size, &x[k])) return LT_OK;
    if (n->n_in == 2 && dt != LT_FLOAT && broadcast_product(&e, size) > MAX_PRODUCT) return LT_OK;
    eb b = {.ctx = ctx, .g = g, .at = n};
    snprintf(b.hint, sizeof b.hint, "%s_ein", n->out[0]->name);
    if (n->n_in == 2) {
        LT_TRY(drop_broadcast(&b, &x[0], size));
        LT_TRY(drop_broadcast(&b, &x[1], size));
        LT_TRY(contract(&b, &e, size, dt == LT_FLOAT, &x[0], &x[1], &y));
    } else {
        bool keep[NLAB] = {false};
        for (int j = 0; j < e.out_rank; j++) keep[e.out_lab[j]] = true;
        y = x[0];
        LT_TRY(sum_out(&b, &y, keep));
    }
    LT_TRY(permute(&b, &y, e.out_lab, e.out_rank));
    if (y.v == n->in[0]) LT_TRY(lt_pu_new_op(ctx, g, "Identity", 1, &y.v, NULL, 0, b.hint, n, &y.v));
    lt_pu_take_name(g, y.v, n->out[0]);
    return lt_pu_forward(ctx, g, n, 0, y.v, changed);
}

static bool is_einsum(const lt_node *n) { return n->op == LT_OP_Einsum; }

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_einsum, rewrite, changed);
}

const lt_pass lt_pass_einsum_matmul = {.name = "einsum_matmul", .min_level = 1, .run = run,
    .summary = "Einsum of one or two inputs -> Transpose / Reshape / ReduceSum / MatMul (compiled)"};
