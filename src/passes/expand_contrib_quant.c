/* expand_contrib_quant.c — the expand_contrib rewrites of onnxruntime's quantized and embedding ops
 * (semantics: src/ops/contrib/contrib_quant.c, contrib_qlstm.c) into standard ops lathe compiles:
 *   DynamicQuantizeLSTM      LSTM(X, W', R', B, ...) with W', R' dequantized at compile time into
 *                            float constants of ONNX's [num_directions, 4*hidden, input] layout (the
 *                            op's own function); unroll_rnn then compiles the LSTM. Needs constant
 *                            W, R, scales and zero points.
 *   DynamicQuantizeMatMul    DynamicQuantizeLinear(A) -> MatMulInteger(Aq, B, a_zp, b_zp) -> Cast ->
 *                            Mul(a_scale * b_scale) [-> Add bias]
 *   MatMulIntegerToFloat     MatMulInteger(A, B, a_zp, b_zp) -> Cast -> Mul(a_scale * b_scale) [-> Add bias]
 *                            (expand_quant, in the same group, then makes the integer ops exact float ops)
 *   EmbedLayerNormalization  Gather(word, input_ids) + Gather(position, position_ids) or the table's
 *                            first S rows + Gather(segment, segment_ids) -> LayerNormalization; mask_index
 *                            ReduceSum(Cast(Equal(mask, 1))) per row, or zeros. The ids feed the Gathers
 *                            directly, so a model input's ids are checked on the host before each run
 *                            (a negative id wraps there, as Gather's do; the interpreter refuses it).
 * Left alone (the interpreter runs them): non-constant LSTM weights, input_ids of unknown shape.
 */
#include "expand_contrib.h"

#include "../ops/contrib/contrib_qlstm.h"

/* ---- DynamicQuantizeLSTM ---- */

static lt_status rw_qlstm(xc *b, lt_node *n, bool *changed) {
    int64_t D, GH;
    lt_ctx tmp = {0};
    if (n->n_in != 12 || lt_qlstm_attrs(&tmp, n, &D, &GH) || lt_pu_dtype(n->in[0]) != LT_FLOAT) return LT_OK;
    const lt_tensor *c[6];
    int idx[6] = {1, 2, 8, 9, 10, 11};
    for (int k = 0; k < 6; k++)
        if (!n->in[idx[k]] || !(c[k] = lt_value_const(n->in[idx[k]]))) return LT_OK;
    lt_value *in[8] = {n->in[0], NULL, NULL, n->in[3], n->in[4], n->in[5], n->in[6], n->in[7]};
    for (int w = 0; w < 2; w++) {
        lt_tensor *t;
        LT_TRY(lt_qlstm_dequant(b->ctx, n, w ? "R" : "W", c[w], c[2 + 2 * w], c[3 + 2 * w], D, GH, LT_FLOAT, &t));
        LT_TRY(lt_value_new_const(b->ctx, b->g, b->hint, t, &in[1 + w]));
    }
    lt_node *ln;
    LT_TRY(xc_node(b, "LSTM", 8, in, 3, &ln));
    LT_TRY(lt_node_copy_attrs(b->ctx, ln, n));
    LT_TRY(lt_node_infer(b->ctx, ln));
    for (int k = 0; k < 3; k++) LT_TRY(xc_forward(b, n, k, ln->out[k], changed));
    return LT_OK;
}

/* ---- integer matrix products ---- */

/* A one-value zero point as a scalar (MatMulInteger takes a scalar or one per row / column). */
static lt_status zp_arg(xc *b, lt_value *zp, lt_value **out) {
    int rank;
    int64_t d[LT_MAX_RANK];
    *out = zp;
    if (zp && lt_pu_dims(zp, &rank, d) && rank == 1 && d[0] == 1) return xc_reshape(b, zp, 0, NULL, out);
    return LT_OK;
}

/* Cast(MatMulInteger(a, B, azp, bzp)) * (a_scale * b_scale) [+ bias], output 0 of n. */
static lt_status int_product(xc *b, lt_node *n, lt_value *a, lt_value *azp, lt_value *as, lt_value *bs, lt_value *bzp,
                             lt_value *bias, bool *changed) {
    lt_value *in[4] = {a, n->in[1], azp, NULL}, *y, *scale;
    LT_TRY(zp_arg(b, azp, &in[2]));
    LT_TRY(zp_arg(b, bzp, &in[3]));
    int n_in = in[3] ? 4 : in[2] ? 3 : 2;
    LT_TRY(xc_op(b, "MatMulInteger", n_in, in, &y));
    LT_TRY(xc_op_int(b, "Cast", y, "to", LT_FLOAT, &y));
    LT_TRY(xc_op2(b, "Mul", as, bs, &scale));
    LT_TRY(xc_op2(b, "Mul", y, scale, &y));
    if (bias) LT_TRY(xc_op2(b, "Add", y, bias, &y));
    return xc_forward(b, n, 0, y, changed);
}

static lt_value *opt_in(const lt_node *n, int i) { return i < n->n_in ? n->in[i] : NULL; }

static lt_status rw_dqmm(xc *b, lt_node *n, bool *changed) {
    lt_node *dq;
    lt_value *x = n->in[0];
    LT_TRY(xc_node(b, "DynamicQuantizeLinear", 1, &x, 3, &dq));
    LT_TRY(xc_done(b, dq, NULL));
    return int_product(b, n, dq->out[0], dq->out[2], dq->out[1], n->in[2], opt_in(n, 3), opt_in(n, 4), changed);
}

static lt_status rw_mmitf(xc *b, lt_node *n, bool *changed) {
    return int_product(b, n, n->in[0], opt_in(n, 4), n->in[2], n->in[3], opt_in(n, 5), opt_in(n, 6), changed);
}

/* ---- EmbedLayerNormalization ---- */

static lt_status gather(xc *b, lt_value *table, lt_value *ids, lt_value **out) {
    lt_value *in[2] = {table, ids};
    lt_node *g;
    LT_TRY(xc_node(b, "Gather", 2, in, 1, &g));
    LT_TRY(lt_node_set_attr_int(b->ctx, g, "axis", 0));
    return xc_done(b, g, out);
}

/* mask_index: per batch row, the number of mask entries equal to 1 (int32), or zeros. */
static lt_status mask_index(xc *b, lt_value *mask, int64_t B, lt_value **out) {
    if (!mask) {
        lt_tensor *t;
        LT_TRY(lt_tensor_new(b->ctx, LT_INT32, 1, &B, &t));
        return lt_value_new_const(b->ctx, b->g, b->hint, t, out);
    }
    lt_value *one, *eq, *axes;
    int64_t ax = 1;
    double v = 1;
    LT_TRY(xc_const(b, LT_INT32, 0, NULL, &v, &one));
    LT_TRY(xc_op2(b, "Equal", mask, one, &eq));
    LT_TRY(xc_op_int(b, "Cast", eq, "to", LT_INT32, &eq));
    LT_TRY(xc_ints(b, 1, &ax, &axes));
    lt_value *in[2] = {eq, axes};
    lt_node *r;
    LT_TRY(xc_node(b, "ReduceSum", 2, in, 1, &r));
    LT_TRY(lt_node_set_attr_int(b->ctx, r, "keepdims", 0));
    return xc_done(b, r, out);
}

static lt_status rw_embed(xc *b, lt_node *n, bool *changed) {
    int rank;
    int64_t d[LT_MAX_RANK];
    if (!xc_static(n->in[0], &rank, d) || rank != 2) return LT_OK;
    lt_value *seg = opt_in(n, 1), *beta = opt_in(n, 6), *mask = opt_in(n, 7), *pids = opt_in(n, 8);
    lt_value *s, *p, *y, *mi;
    LT_TRY(gather(b, n->in[2], n->in[0], &s));
    if (pids) LT_TRY(gather(b, n->in[3], pids, &p));
    else LT_TRY(xc_slice(b, n->in[3], 0, 0, d[1], &p));
    LT_TRY(xc_op2(b, "Add", s, p, &s));
    if (seg) {
        lt_value *sg;
        LT_TRY(gather(b, n->in[4], seg, &sg));
        LT_TRY(xc_op2(b, "Add", s, sg, &s));
    }
    lt_value *in[3] = {s, n->in[5], beta};
    lt_node *ln;
    LT_TRY(xc_node(b, "LayerNormalization", beta ? 3 : 2, in, 1, &ln));
    LT_TRY(lt_node_set_attr_int(b->ctx, ln, "axis", -1));
    LT_TRY(lt_node_set_attr_float(b->ctx, ln, "epsilon", lt_attr_float(n, "epsilon", 1e-12f)));
    LT_TRY(xc_done(b, ln, &y));
    LT_TRY(mask_index(b, mask, d[0], &mi));
    LT_TRY(xc_forward(b, n, 0, y, changed));
    LT_TRY(xc_forward(b, n, 1, mi, changed));
    return xc_forward(b, n, 2, s, changed);
}

lt_status xc_quant(xc *b, lt_node *n, bool *changed) {
    switch (n->op) {
    case LT_OP_DynamicQuantizeLSTM: return rw_qlstm(b, n, changed);
    case LT_OP_DynamicQuantizeMatMul: return rw_dqmm(b, n, changed);
    case LT_OP_MatMulIntegerToFloat: return rw_mmitf(b, n, changed);
    case LT_OP_EmbedLayerNormalization: return rw_embed(b, n, changed);
    default: return LT_OK;
    }
}
