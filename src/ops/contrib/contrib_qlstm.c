/* contrib_qlstm.c — com.microsoft DynamicQuantizeLSTM (what onnxruntime's dynamic quantizer makes of
 * an LSTM with constant weights): ONNX LSTM (opset 14 semantics, layout 0) whose W and R are int8 /
 * uint8, transposed, with per-direction or per-gate-column scales and zero points (contrib_qlstm.h).
 * Inputs X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?, W_scale, W_zero_point, R_scale,
 * R_zero_point; outputs Y, Y_h, Y_c; attributes as LSTM's (hidden_size required).
 * The reference dequantizes W and R into float weights of ONNX LSTM's layout and runs the LSTM op's
 * own reference on them, in X's precision. onnxruntime's CPU kernel also quantizes X and the hidden
 * state to uint8 for its integer GEMMs, so its results differ from this one by that activation
 * rounding (about 1e-2 here); it refuses per-column zero points that differ (uint8) or are not 0
 * (int8), which this reference accepts.
 */
#include "contrib_impl.h"
#include "contrib_qlstm.h"

#include <string.h>

lt_status lt_qlstm_attrs(lt_ctx *ctx, const lt_node *n, int64_t *D, int64_t *GH) {
    const char *dir = lt_attr_string(n, "direction", "forward");
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional"))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "unknown direction '%s'", dir);
    int64_t H = lt_attr_int(n, "hidden_size", 0);
    if (H < 1 || H > ((int64_t)1 << 30))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "attribute hidden_size must be given and >= 1 (got %lld)",
                             (long long)H);
    *D = strcmp(dir, "bidirectional") ? 1 : 2;
    *GH = 4 * H;
    return LT_OK;
}

/* Scale or zero point: [D] or [D, GH]. */
static lt_status check_param(lt_ctx *ctx, const lt_node *n, const char *what, const char *which, const lt_tensor *p,
                             int64_t D, int64_t GH) {
    if (!((p->rank == 1 && p->dims[0] == D) || (p->rank == 2 && p->dims[0] == D && p->dims[1] == GH)))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s_%s must have shape [%lld] or [%lld, %lld]", what, which,
                             (long long)D, (long long)D, (long long)GH);
    return LT_OK;
}

lt_status lt_qlstm_check(lt_ctx *ctx, const lt_node *n, const char *what, const lt_tensor *q, const lt_tensor *scale,
                         const lt_tensor *zp, int64_t D, int64_t GH, int64_t K) {
    if (q->dtype != LT_INT8 && q->dtype != LT_UINT8)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be int8 or uint8, not %s", what, lt_dtype_name(q->dtype));
    if (q->rank != 3 || q->dims[0] != D || q->dims[2] != GH || (K >= 0 && q->dims[1] != K))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must have shape [%lld, %lld, %lld] (num_directions, %s, 4*hidden_size)",
                             what, (long long)D, (long long)K, (long long)GH, K >= 0 && !strcmp(what, "R") ? "hidden_size" : "input_size");
    if (scale->dtype != LT_FLOAT) return lt_node_error(ctx, n, LT_ERR_INVALID, "%s_scale must be float", what);
    if (zp->dtype != q->dtype)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s_zero_point must have %s's dtype %s", what, what,
                             lt_dtype_name(q->dtype));
    LT_TRY(check_param(ctx, n, what, "scale", scale, D, GH));
    LT_TRY(check_param(ctx, n, what, "zero_point", zp, D, GH));
    return LT_OK;
}

lt_status lt_qlstm_dequant(lt_ctx *ctx, const lt_node *n, const char *what, const lt_tensor *q, const lt_tensor *scale,
                           const lt_tensor *zp, int64_t D, int64_t GH, lt_dtype dt, lt_tensor **out) {
    LT_TRY(lt_qlstm_check(ctx, n, what, q, scale, zp, D, GH, -1));
    int64_t K = q->dims[1], dims[3] = {D, GH, K};
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, dt, 3, dims, &t));
    int64_t ps = scale->rank == 2 ? GH : 1, pz = zp->rank == 2 ? GH : 1;
    for (int64_t d = 0; d < D; d++)
        for (int64_t j = 0; j < GH; j++) {
            double s = lt_load_f64(scale->data, scale->dtype, d * ps + (ps > 1 ? j : 0));
            double z = lt_load_f64(zp->data, zp->dtype, d * pz + (pz > 1 ? j : 0));
            for (int64_t k = 0; k < K; k++) {
                double v = lt_load_f64(q->data, q->dtype, (d * K + k) * GH + j);
                lt_store_f64(t->data, dt, (d * GH + j) * K + k, (double)(float)((v - z) * s));
            }
        }
    *out = t;
    return LT_OK;
}

lt_status ct_qlstm_infer(lt_infer *ic, lt_node *n) {
    int64_t D, GH;
    LT_TRY(lt_qlstm_attrs(ic->ctx, n, &D, &GH));
    if (n->n_in != 12) return lt_infer_error(ic, n, "DynamicQuantizeLSTM takes 12 inputs, not %d", n->n_in);
    const lt_type *x = lt_infer_in(n, 0);
    lt_dtype dt = x && x->kind == LT_TK_TENSOR ? x->dtype : LT_UNDEFINED;
    if (dt != LT_UNDEFINED && dt != LT_FLOAT) return lt_infer_error(ic, n, "X must be float, not %s", lt_dtype_name(dt));
    lt_dim y[4] = {{-1, NULL}, {D, NULL}, {-1, NULL}, {GH / 4, NULL}};
    if (x && x->kind == LT_TK_TENSOR && x->rank == 3 && x->dims) y[0] = x->dims[0], y[2] = x->dims[1];
    else if (x && x->kind == LT_TK_TENSOR && x->rank >= 0) return lt_infer_error(ic, n, "X must have rank 3");
    const lt_tensor *q[2] = {lt_infer_const(n, 1), lt_infer_const(n, 2)};
    const lt_tensor *sc[2] = {lt_infer_const(n, 8), lt_infer_const(n, 10)}, *zp[2] = {lt_infer_const(n, 9), lt_infer_const(n, 11)};
    int64_t K[2] = {x && x->kind == LT_TK_TENSOR && x->rank == 3 && x->dims ? x->dims[2].value : -1, GH / 4};
    for (int w = 0; w < 2; w++)
        if (q[w] && sc[w] && zp[w]) LT_TRY(lt_qlstm_check(ic->ctx, n, w ? "R" : "W", q[w], sc[w], zp[w], D, GH, K[w]));
    LT_TRY(lt_infer_set(ic, n, 0, LT_FLOAT, 4, y));
    LT_TRY(lt_infer_set(ic, n, 1, LT_FLOAT, 3, y + 1));
    return lt_infer_set(ic, n, 2, LT_FLOAT, 3, y + 1);
}

lt_status ct_qlstm_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    int64_t D, GH;
    LT_TRY(lt_qlstm_attrs(ev->ctx, n, &D, &GH));
    if (n->n_in != 12) return lt_op_error(ev, n, LT_ERR_INVALID, "DynamicQuantizeLSTM takes 12 inputs, not %d", n->n_in);
    const lt_tensor *X, *q[2], *sc[2], *zp[2];
    LT_TRY(lt_in_tensor(ev, n, in, 0, &X));
    for (int w = 0; w < 2; w++) {
        LT_TRY(lt_in_tensor(ev, n, in, 1 + w, &q[w]));
        LT_TRY(lt_in_tensor(ev, n, in, 8 + 2 * w, &sc[w]));
        LT_TRY(lt_in_tensor(ev, n, in, 9 + 2 * w, &zp[w]));
    }
    if (X->dtype != LT_FLOAT || X->rank != 3)
        return lt_op_error(ev, n, LT_ERR_INVALID, "X must be a float tensor of rank 3");
    LT_TRY(lt_qlstm_check(ev->ctx, n, "W", q[0], sc[0], zp[0], D, GH, X->dims[2]));
    LT_TRY(lt_qlstm_check(ev->ctx, n, "R", q[1], sc[1], zp[1], D, GH, GH / 4));
    /* the LSTM reference on the dequantized weights: the same node read as an LSTM of 8 inputs */
    lt_datum *lin[8] = {in[0], NULL, NULL, in[3], in[4], in[5], in[6], in[7]};
    lt_status s = LT_OK;
    for (int w = 0; w < 2 && !s; w++) {
        lt_tensor *t;
        s = lt_qlstm_dequant(ev->ctx, n, w ? "R" : "W", q[w], sc[w], zp[w], D, GH, X->dtype, &t);
        if (!s) s = lt_datum_tensor(ev->ctx, t, &lin[1 + w]);
    }
    if (!s) {
        lt_node as_lstm = *n;
        as_lstm.op = LT_OP_LSTM;
        as_lstm.n_in = 8;
        as_lstm.opset = 14;
        s = lt_op_hooks_get(LT_OP_LSTM)->eval(ev, &as_lstm, lin, out);
    }
    lt_datum_release(lin[1]);
    lt_datum_release(lin[2]);
    return s;
}
