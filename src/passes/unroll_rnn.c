/* unroll_rnn.c — LSTM, GRU and RNN over a static sequence become ops lathe compiles.
 *
 * Per direction d (forward, reverse, or both), with gate order as ONNX lays out W, R and B
 * (LSTM i o f c, GRU z r h, RNN one gate) and weights pre-transposed into new constants:
 *     XW = X[T*B, I] @ W_d^T + Wb_d (+ Rb_d but GRU's h gate)    one GEMM for every step's input gates
 *     for each step t (reverse: from the end), xw = XW[t]:
 *       LSTM  g = xw + H @ R_d^T;  i, o, f, c~ = split(g);  C = f(f)*C + f(i)*g(c~);  H = f(o)*h(C)
 *       GRU   z = f(xw_z + H R_z^T + Rb_z);  r = f(xw_r + H R_r^T + Rb_r)
 *             h~ = g(xw_h + r * (H R_h^T + Rb_h))              linear_before_reset = 1 (torch)
 *             h~ = g(xw_h + (r * H) R_h^T + Rb_h)              linear_before_reset = 0
 *             H = h~ + z * (H - h~)
 *       RNN   H = f(xw + H @ R_d^T)
 *     Y = the steps' H stacked [T, D, B, H]; Y_h, Y_c = the last step's H, C per direction.
 * f, g, h are the node's activations (default Sigmoid, Tanh, Tanh for LSTM and GRU, Tanh for RNN;
 * Sigmoid, Tanh and Relu are rewritten). The recurrence is unrolled into the graph, so fusion makes
 * each step's elementwise tail one kernel after its small GEMM.
 * Left alone (the interpreter runs them): W, R or B not constants, a non-static X, sequence_lens that
 * are not all T (constant), peepholes, clip, LSTM's input_forget, other activations, layout 1, more
 * than MAX_STEPS steps. Level -O1.
 */
#include "util.h"

#include <stdio.h>
#include <string.h>

#define MAX_STEPS 512

typedef struct rb {
    lt_ctx *ctx;
    lt_graph *g;
    lt_node *at; /* new nodes go before it */
    char hint[64];
    lt_status st;
} rb;

/* op(in[0..n)) with an optional int attribute, inferred; NULL once something failed. */
static lt_value *mk(rb *b, const char *op, int n, lt_value *const *in, const char *attr, int64_t v) {
    lt_value *out = NULL;
    for (int i = 0; i < n; i++)
        if (!in[i]) return NULL;
    if (!b->st) b->st = lt_pu_new_op(b->ctx, b->g, op, n, in, attr, v, b->hint, b->at, &out);
    return b->st ? NULL : out;
}

/* op(a, b) (b may be NULL: unary). */
static lt_value *op2(rb *b, const char *op, lt_value *x, lt_value *y) {
    lt_value *in[2] = {x, y};
    return mk(b, op, y ? 2 : 1, in, NULL, 0);
}

static lt_value *act(rb *b, const char *name, lt_value *x) { return op2(b, name, x, NULL); }

/* A new float constant [rows, cols] (or [cols] when rows is 0) from src (a lt_load_f64 source):
 * element (r, c) = src[off + r * rs + c * cs]. */
static lt_value *fconst(rb *b, lt_dtype dt, int64_t rows, int64_t cols, const lt_tensor *src, int64_t off, int64_t rs,
                        int64_t cs) {
    if (b->st) return NULL;
    int64_t dims[2] = {rows, cols};
    lt_tensor *t;
    if ((b->st = lt_tensor_new(b->ctx, dt, rows ? 2 : 1, rows ? dims : dims + 1, &t)) != LT_OK) return NULL;
    for (int64_t r = 0; r < (rows ? rows : 1); r++)
        for (int64_t c = 0; c < cols; c++)
            lt_store_f64(t->data, dt, r * cols + c, src ? lt_load_f64(src->data, src->dtype, off + r * rs + c * cs) : 0.0);
    lt_value *v;
    if ((b->st = lt_value_new_const(b->ctx, b->g, b->hint, t, &v)) != LT_OK) return NULL;
    return v;
}

static lt_value *iconst(rb *b, int n, const int64_t *vals, bool scalar) {
    if (b->st) return NULL;
    int64_t d = n;
    lt_tensor *t;
    if ((b->st = lt_tensor_new(b->ctx, LT_INT64, scalar ? 0 : 1, &d, &t)) != LT_OK) return NULL;
    for (int i = 0; i < n; i++) ((int64_t *)t->data)[i] = vals[i];
    lt_value *v;
    if ((b->st = lt_value_new_const(b->ctx, b->g, b->hint, t, &v)) != LT_OK) return NULL;
    return v;
}

/* Columns [c0, c0 + w) of a [B, *] value. */
static lt_value *cols(rb *b, lt_value *x, int64_t c0, int64_t w) {
    int64_t s = c0, e = c0 + w, ax = 1;
    lt_value *in[4] = {x, iconst(b, 1, &s, false), iconst(b, 1, &e, false), iconst(b, 1, &ax, false)};
    return mk(b, "Slice", 4, in, NULL, 0);
}

static lt_value *unsqueeze0(rb *b, lt_value *x, int64_t axis) { return op2(b, "Unsqueeze", x, iconst(b, 1, &axis, false)); }

static lt_value *concat(rb *b, lt_value *const *xs, int n, int64_t axis) {
    return n == 1 ? (b->st ? NULL : xs[0]) : mk(b, "Concat", n, xs, "axis", axis);
}

/* Row `i` of a value's first axis (the axis dropped). */
static lt_value *row(rb *b, lt_value *x, int64_t i) {
    lt_value *in[2] = {x, iconst(b, 1, &i, true)};
    return mk(b, "Gather", 2, in, NULL, 0);
}

static bool known_act(const char *s) { return !strcmp(s, "Sigmoid") || !strcmp(s, "Tanh") || !strcmp(s, "Relu"); }

typedef struct rnn_kind {
    int gates, n_acts;          /* gates per direction; activations per direction */
    const char *dflt[3];
} rnn_kind;

static const rnn_kind LSTM_K = {4, 3, {"Sigmoid", "Tanh", "Tanh"}}, GRU_K = {3, 2, {"Sigmoid", "Tanh", NULL}},
                      RNN_K = {1, 1, {"Tanh", NULL, NULL}};

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    const rnn_kind *k = n->op == LT_OP_LSTM ? &LSTM_K : n->op == LT_OP_GRU ? &GRU_K : &RNN_K;
    bool lstm = n->op == LT_OP_LSTM, gru = n->op == LT_OP_GRU;
    const lt_tensor *W = n->n_in > 1 && n->in[1] ? lt_value_const(n->in[1]) : NULL;
    const lt_tensor *R = n->n_in > 2 && n->in[2] ? lt_value_const(n->in[2]) : NULL;
    const lt_tensor *Bt = n->n_in > 3 && n->in[3] ? lt_value_const(n->in[3]) : NULL;
    int rank;
    int64_t xd[LT_MAX_RANK];
    if (!n->in[0] || !W || !R || (n->n_in > 3 && n->in[3] && !Bt) || !lt_value_static_shape(n->in[0], &rank, xd) ||
        rank != 3 || W->rank != 3 || R->rank != 3)
        return LT_OK;
    if (lt_attr_int(n, "layout", 0) != 0 || lt_node_attr(n, "clip") || (lstm && lt_attr_int(n, "input_forget", 0)))
        return LT_OK;
    if (lstm && n->n_in > 7 && n->in[7]) return LT_OK; /* peepholes */
    int64_t T = xd[0], B = xd[1], I = xd[2], D = W->dims[0], GH = W->dims[1], H = GH / k->gates;
    lt_dtype dt = n->in[0]->type.dtype;
    if (D < 1 || D > 2 || B < 1 || I < 1 || H < 1 || B > (1 << 20) / H) return LT_OK; /* zero states stay small */
    if (T < 1 || T > MAX_STEPS || GH != H * k->gates || W->dims[2] != I || R->dims[0] != D || R->dims[1] != GH ||
        R->dims[2] != H || (Bt && (Bt->rank != 2 || Bt->dims[0] != D || Bt->dims[1] != 2 * GH)) || !lt_dtype_is_float(dt))
        return LT_OK;
    const char *dir = lt_attr_string(n, "direction", "forward");
    if ((D == 2) != !strcmp(dir, "bidirectional") || (strcmp(dir, "forward") && strcmp(dir, "reverse") && D != 2))
        return LT_OK;
    if (n->n_in > 4 && n->in[4]) { /* sequence_lens: constants, all T */
        const lt_tensor *sl = lt_value_const(n->in[4]);
        if (!sl) return LT_OK;
        for (int64_t i = 0; i < sl->numel; i++)
            if (lt_load_i64(sl->data, sl->dtype, i) != T) return LT_OK;
    }
    const char *const *names;
    int na = lt_attr_strings(n, "activations", &names);
    const char *acts[6];
    for (int d = 0; d < D; d++)
        for (int a = 0; a < k->n_acts; a++) {
            acts[d * k->n_acts + a] = na ? (d * k->n_acts + a < na ? names[d * k->n_acts + a] : NULL) : k->dflt[a];
            if (!acts[d * k->n_acts + a] || !known_act(acts[d * k->n_acts + a])) return LT_OK;
        }
    bool lbr = gru && lt_attr_int(n, "linear_before_reset", 0) != 0;

    rb b = {.ctx = ctx, .g = g, .at = n};
    snprintf(b.hint, sizeof b.hint, "%s_rnn", n->out[0] ? n->out[0]->name : (n->n_out > 1 && n->out[1] ? n->out[1]->name : "rnn"));
    int64_t flat[2] = {T * B, I};
    lt_value *X2 = op2(&b, "Reshape", n->in[0], iconst(&b, 2, flat, false));
    lt_value *hs[2][MAX_STEPS], *hlast[2], *clast[2];
    for (int d = 0; d < D && !b.st; d++) {
        const char *f = acts[d * k->n_acts], *gx = k->n_acts > 1 ? acts[d * k->n_acts + 1] : NULL,
                   *hx = k->n_acts > 2 ? acts[d * k->n_acts + 2] : NULL;
        /* input gates for every step: X W^T + Wb (+ Rb, except GRU's h gate) */
        lt_value *Wt = fconst(&b, dt, I, GH, W, d * GH * I, 1, I);
        lt_value *bias = NULL;
        if (Bt) {
            lt_tensor *bt;
            if ((b.st = lt_tensor_new(ctx, dt, 1, &GH, &bt)) != LT_OK) break;
            for (int64_t j = 0; j < GH; j++) {
                double v = lt_load_f64(Bt->data, Bt->dtype, d * 2 * GH + j);
                if (!gru || j < 2 * H) v += lt_load_f64(Bt->data, Bt->dtype, d * 2 * GH + GH + j);
                lt_store_f64(bt->data, dt, j, v);
            }
            if ((b.st = lt_value_new_const(ctx, g, b.hint, bt, &bias)) != LT_OK) break;
        }
        lt_value *XW = op2(&b, "MatMul", X2, Wt);
        if (bias) XW = op2(&b, "Add", XW, bias);
        int64_t tbg[3] = {T, B, GH};
        XW = op2(&b, "Reshape", XW, iconst(&b, 3, tbg, false));
        lt_value *Rt = fconst(&b, dt, H, GH, R, d * GH * H, 1, H);
        lt_value *Rbh = gru && Bt ? fconst(&b, dt, 0, H, Bt, d * 2 * GH + GH + 2 * H, 0, 1) : NULL;
        lt_value *Hc = n->n_in > 5 && n->in[5] ? row(&b, n->in[5], d) : fconst(&b, dt, B, H, NULL, 0, 0, 0);
        lt_value *Cc = lstm ? (n->n_in > 6 && n->in[6] ? row(&b, n->in[6], d) : fconst(&b, dt, B, H, NULL, 0, 0, 0)) : NULL;
        bool rev = !strcmp(dir, "reverse") || d == 1;
        for (int64_t s = 0; s < T && !b.st; s++) {
            int64_t t = rev ? T - 1 - s : s;
            lt_value *xw = row(&b, XW, t);
            if (lstm) {
                lt_value *gt = op2(&b, "Add", xw, op2(&b, "MatMul", Hc, Rt));
                lt_value *ig = act(&b, f, cols(&b, gt, 0, H)), *og = act(&b, f, cols(&b, gt, H, H));
                lt_value *fg = act(&b, f, cols(&b, gt, 2 * H, H)), *cg = act(&b, gx, cols(&b, gt, 3 * H, H));
                Cc = op2(&b, "Add", op2(&b, "Mul", fg, Cc), op2(&b, "Mul", ig, cg));
                Hc = op2(&b, "Mul", og, act(&b, hx, Cc));
            } else if (gru) {
                lt_value *hr = op2(&b, "MatMul", Hc, Rt);
                lt_value *z = act(&b, f, op2(&b, "Add", cols(&b, xw, 0, H), cols(&b, hr, 0, H)));
                lt_value *r = act(&b, f, op2(&b, "Add", cols(&b, xw, H, H), cols(&b, hr, H, H)));
                lt_value *hh;
                if (lbr) {
                    hh = cols(&b, hr, 2 * H, H);
                    if (Rbh) hh = op2(&b, "Add", hh, Rbh);
                    hh = op2(&b, "Mul", r, hh);
                } else {
                    lt_value *Rth = fconst(&b, dt, H, H, R, d * GH * H + 2 * H * H, 1, H);
                    hh = op2(&b, "MatMul", op2(&b, "Mul", r, Hc), Rth);
                    if (Rbh) hh = op2(&b, "Add", hh, Rbh);
                }
                lt_value *ht = act(&b, gx, op2(&b, "Add", cols(&b, xw, 2 * H, H), hh));
                Hc = op2(&b, "Add", ht, op2(&b, "Mul", z, op2(&b, "Sub", Hc, ht)));
            } else {
                Hc = act(&b, f, op2(&b, "Add", xw, op2(&b, "MatMul", Hc, Rt)));
            }
            hs[d][t] = Hc;
        }
        hlast[d] = Hc;
        clast[d] = Cc;
    }
    lt_value *y = NULL, *yh = NULL, *yc = NULL;
    if (!b.st && n->out[0]) { /* Y [T, D, B, H] */
        lt_value *steps[MAX_STEPS];
        for (int64_t t = 0; t < T && !b.st; t++) {
            lt_value *per[2];
            for (int d = 0; d < D; d++) per[d] = unsqueeze0(&b, hs[d][t], 0);
            steps[t] = unsqueeze0(&b, concat(&b, per, (int)D, 0), 0);
        }
        y = concat(&b, steps, (int)T, 0);
    }
    if (!b.st && n->n_out > 1 && n->out[1]) {
        lt_value *per[2];
        for (int d = 0; d < D; d++) per[d] = unsqueeze0(&b, hlast[d], 0);
        yh = concat(&b, per, (int)D, 0);
    }
    if (!b.st && lstm && n->n_out > 2 && n->out[2]) {
        lt_value *per[2];
        for (int d = 0; d < D; d++) per[d] = unsqueeze0(&b, clast[d], 0);
        yc = concat(&b, per, (int)D, 0);
    }
    LT_TRY(b.st);
    lt_value *outs[3] = {y, yh, yc};
    for (int o = 0; o < n->n_out && o < 3; o++) {
        if (!n->out[o] || !outs[o]) continue;
        lt_pu_take_name(g, outs[o], n->out[o]);
        bool ch = false;
        LT_TRY(lt_pu_forward(ctx, g, n, o, outs[o], &ch));
        *changed |= ch;
    }
    return LT_OK;
}

static bool is_rnn(const lt_node *n) { return n->op == LT_OP_LSTM || n->op == LT_OP_GRU || n->op == LT_OP_RNN; }

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_rnn, rewrite, changed);
}

const lt_pass lt_pass_unroll_rnn = {.name = "unroll_rnn", .min_level = 1, .run = run,
    .summary = "LSTM / GRU / RNN over a static sequence -> one input GEMM and unrolled compiled steps"};
