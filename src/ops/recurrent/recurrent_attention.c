/* recurrent_attention.c — scaled dot-product attention: Attention (opset 23, 24) and FlexAttention
 * (ai.onnx.preview 1), infer + eval hooks (registered in recurrent.c's table).
 *
 * Attention: 4-D (B, heads, seq, head_size) or 3-D (B, seq, heads*head_size, with q_num_heads and
 * kv_num_heads) Q/K/V; grouped-query heads (query head h reads KV head h / (Hq/Hkv)); past_key/
 * past_value concatenated in front of K/V into present_key/present_value; the bias from attn_mask (bool:
 * false -> -inf; numeric: added; a short last dim is padded with -inf), is_causal (upper-left aligned
 * after the past), nonpad_kv_seqlen (opset 24); scale (default 1/sqrt(head_size), applied as
 * sqrt(scale) to Q and K), softcap (before the bias), qk_matmul_output_mode 0..3, softmax_precision.
 * onnx's reference computes this in float64 for every input type (the scale is a numpy float64), so
 * so do we, rounding once into the output type.
 *
 * FlexAttention: rank-4 Q/K/V, scores = (Q*sqrt(scale)) @ (K*sqrt(scale))^T in the input type, then
 * softmax in the softmax precision (float32 unless the input is double or softmax_precision says),
 * with the optional score_mod / prob_mod subgraphs run on the whole (B, Hq, L, S) tensor through
 * lt_eval_subgraph; intermediate roundings follow the reference.
 */
#include "recurrent_impl.h"

#include <math.h>
#include <string.h>

/* ======================================================================================== Attention */

typedef struct attn_dims {
    int rank;                  /* 3 or 4 */
    int64_t B, Hq, Hkv, Lq, Lkv, P, T, Dq, Dv;
} attn_dims;

/* Element (b, h, l, d) of a Q/K/V tensor in its 3-D or 4-D layout. */
static inline int64_t qkv_index(int rank, int64_t H, int64_t L, int64_t D, int64_t b, int64_t h, int64_t l,
                                int64_t d) {
    if (rank == 4) return ((b * H + h) * L + l) * D + d;
    return (b * L + l) * (H * D) + h * D + d;
}

static lt_status attn_shapes(lt_eval *ev, const lt_node *n, const lt_tensor *Q, const lt_tensor *K,
                             const lt_tensor *V, const lt_tensor *PK, const lt_tensor *PV, attn_dims *a) {
    char b1[256], b2[256], b3[256];
    if (Q->rank != K->rank || Q->rank != V->rank || (Q->rank != 3 && Q->rank != 4))
        return lt_op_error(ev, n, LT_ERR_INVALID, "Q, K, V must all be 3-D or all 4-D, got %s, %s, %s",
                           lt_shape_str(Q->rank, Q->dims, b1, sizeof b1), lt_shape_str(K->rank, K->dims, b2, sizeof b2),
                           lt_shape_str(V->rank, V->dims, b3, sizeof b3));
    a->rank = Q->rank;
    a->B = Q->dims[0];
    int64_t Dk;
    if (a->rank == 3) {
        int64_t qh = lt_attr_int(n, "q_num_heads", 0), kvh = lt_attr_int(n, "kv_num_heads", 0);
        if (qh <= 0 || kvh <= 0)
            return lt_op_error(ev, n, LT_ERR_INVALID, "3-D inputs need positive q_num_heads and kv_num_heads (got %lld, %lld)",
                               (long long)qh, (long long)kvh);
        if (Q->dims[2] % qh || K->dims[2] % kvh || V->dims[2] % kvh)
            return lt_op_error(ev, n, LT_ERR_INVALID,
                               "hidden sizes %lld (Q), %lld (K), %lld (V) are not multiples of the head counts %lld, %lld",
                               (long long)Q->dims[2], (long long)K->dims[2], (long long)V->dims[2], (long long)qh,
                               (long long)kvh);
        a->Hq = qh, a->Hkv = kvh;
        a->Lq = Q->dims[1], a->Lkv = K->dims[1];
        a->Dq = Q->dims[2] / qh, Dk = K->dims[2] / kvh, a->Dv = V->dims[2] / kvh;
        if (V->dims[1] != a->Lkv)
            return lt_op_error(ev, n, LT_ERR_INVALID, "K and V sequence lengths differ (%lld, %lld)",
                               (long long)a->Lkv, (long long)V->dims[1]);
    } else {
        a->Hq = Q->dims[1], a->Lq = Q->dims[2], a->Dq = Q->dims[3];
        a->Hkv = K->dims[1], a->Lkv = K->dims[2], Dk = K->dims[3];
        a->Dv = V->dims[3];
        if (V->dims[1] != a->Hkv || V->dims[2] != a->Lkv)
            return lt_op_error(ev, n, LT_ERR_INVALID, "K %s and V %s disagree on heads or sequence length",
                               lt_shape_str(K->rank, K->dims, b1, sizeof b1), lt_shape_str(V->rank, V->dims, b2, sizeof b2));
    }
    if (K->dims[0] != a->B || V->dims[0] != a->B)
        return lt_op_error(ev, n, LT_ERR_INVALID, "batch sizes differ: Q %lld, K %lld, V %lld", (long long)a->B,
                           (long long)K->dims[0], (long long)V->dims[0]);
    if (Dk != a->Dq)
        return lt_op_error(ev, n, LT_ERR_INVALID, "Q head size %lld differs from K head size %lld", (long long)a->Dq,
                           (long long)Dk);
    if (a->Hkv <= 0 || a->Hq % a->Hkv)
        return lt_op_error(ev, n, LT_ERR_INVALID, "q_num_heads %lld must be a multiple of kv_num_heads %lld",
                           (long long)a->Hq, (long long)a->Hkv);
    a->P = 0;
    if ((PK != NULL) != (PV != NULL))
        return lt_op_error(ev, n, LT_ERR_INVALID, "past_key and past_value must be given together");
    if (PK) {
        if (PK->rank != 4 || PV->rank != 4 || PK->dims[0] != a->B || PK->dims[1] != a->Hkv || PK->dims[3] != a->Dq ||
            PV->dims[0] != a->B || PV->dims[1] != a->Hkv || PV->dims[2] != PK->dims[2] || PV->dims[3] != a->Dv)
            return lt_op_error(ev, n, LT_ERR_INVALID,
                               "past_key %s / past_value %s do not match (batch %lld, kv heads %lld, past, %lld / %lld)",
                               lt_shape_str(PK->rank, PK->dims, b1, sizeof b1), lt_shape_str(PV->rank, PV->dims, b2, sizeof b2),
                               (long long)a->B, (long long)a->Hkv, (long long)a->Dq, (long long)a->Dv);
        a->P = PK->dims[2];
    }
    if (!lt_add_i64(a->P, a->Lkv, &a->T))
        return lt_op_error(ev, n, LT_ERR_INVALID, "total sequence length overflows");
    /* Bound the work: B*Hq*Lq*T scores, each a Dq-long dot product. */
    int64_t sd[4] = {a->B, a->Hq, a->Lq, a->T}, cnt;
    if (!lt_prod_i64(sd, 4, &cnt) || cnt > LT_TENSOR_MAX_BYTES)
        return lt_op_error(ev, n, LT_ERR_INVALID, "attention score tensor %s is too large",
                           lt_shape_str(4, sd, b1, sizeof b1));
    return LT_OK;
}

/* The mask's strides against the (B, Hq, Lq, T) target; mlast = its last dim (may be < T). */
static lt_status mask_layout(lt_eval *ev, const lt_node *n, const lt_tensor *M, const attn_dims *a, int64_t *mstr,
                             int64_t *mlast) {
    char b1[256];
    int64_t tgt[4] = {a->B, a->Hq, a->Lq, a->T};
    if (M->rank < 1 || M->rank > 4)
        return lt_op_error(ev, n, LT_ERR_INVALID, "attn_mask %s must have rank 1 to 4",
                           lt_shape_str(M->rank, M->dims, b1, sizeof b1));
    *mlast = M->dims[M->rank - 1];
    if (*mlast > a->T)
        return lt_op_error(ev, n, LT_ERR_INVALID, "attn_mask's last dim %lld exceeds the total sequence length %lld",
                           (long long)*mlast, (long long)a->T);
    int64_t s = 1;
    for (int k = 3; k >= 0; k--) {
        int md = k - (4 - M->rank);
        if (md < 0) {
            mstr[k] = 0;
            continue;
        }
        int64_t dim = M->dims[md];
        if (k < 3 && dim != 1 && dim != tgt[k])
            return lt_op_error(ev, n, LT_ERR_INVALID, "attn_mask %s cannot broadcast to (%lld, %lld, %lld, %lld)",
                               lt_shape_str(M->rank, M->dims, b1, sizeof b1), (long long)tgt[0], (long long)tgt[1],
                               (long long)tgt[2], (long long)tgt[3]);
        mstr[k] = (k < 3 && dim == 1) ? 0 : s;
        s *= dim;
    }
    return LT_OK;
}

static bool valid_precision(int64_t p) {
    return p == LT_FLOAT || p == LT_FLOAT16 || p == LT_BFLOAT16 || p == LT_DOUBLE;
}

lt_status lt_rec_attention_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *Q, *K, *V, *M, *PK, *PV, *NP = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &Q));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &K));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &V));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &M));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 4, &PK));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 5, &PV));
    if (n->n_in > 6) LT_TRY(lt_in_tensor_opt(ev, n, in, 6, &NP));
    LT_TRY(lt_rec_check_float(ev, n, Q, "Q"));
    LT_TRY(lt_rec_check_float(ev, n, K, "K"));
    LT_TRY(lt_rec_check_float(ev, n, V, "V"));
    if (K->dtype != Q->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "K has type %s, Q %s", lt_dtype_name(K->dtype), lt_dtype_name(Q->dtype));
    if (PK && PK->dtype != K->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "past_key has type %s, K %s", lt_dtype_name(PK->dtype),
                           lt_dtype_name(K->dtype));
    if (PV && PV->dtype != V->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "past_value has type %s, V %s", lt_dtype_name(PV->dtype),
                           lt_dtype_name(V->dtype));
    if (M && M->dtype != LT_BOOL && !lt_rec_is_float(M->dtype) && !lt_dtype_is_int(M->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "attn_mask has unsupported type %s", lt_dtype_name(M->dtype));
    attn_dims a;
    LT_TRY(attn_shapes(ev, n, Q, K, V, PK, PV, &a));
    int64_t mstr[4] = {0, 0, 0, 0}, mlast = 0;
    if (M) LT_TRY(mask_layout(ev, n, M, &a, mstr, &mlast));
    if (NP) {
        if (NP->dtype != LT_INT64 || NP->rank != 1 || NP->dims[0] != a.B)
            return lt_op_error(ev, n, LT_ERR_INVALID, "nonpad_kv_seqlen must be int64 of shape (%lld)", (long long)a.B);
    }
    int64_t mode = lt_attr_int(n, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3)
        return lt_op_error(ev, n, LT_ERR_INVALID, "qk_matmul_output_mode must be 0..3, got %lld", (long long)mode);
    const lt_attr *sp_attr = lt_node_attr(n, "softmax_precision");
    lt_dtype sm_dt = LT_UNDEFINED;
    if (sp_attr) {
        if (!valid_precision(sp_attr->i))
            return lt_op_error(ev, n, LT_ERR_INVALID, "softmax_precision %lld is not a floating type", (long long)sp_attr->i);
        sm_dt = (lt_dtype)sp_attr->i;
    }
    const lt_attr *sc_attr = lt_node_attr(n, "scale");
    double scale = sc_attr ? (double)sc_attr->f : 1.0 / sqrt((double)a.Dq);
    double sq = sqrt(scale);
    double softcap = lt_attr_float(n, "softcap", 0.0f);
    bool causal = lt_attr_int(n, "is_causal", 0) != 0;

    /* Outputs. */
    lt_tensor *Y = NULL, *PKo = NULL, *PVo = NULL, *QK = NULL;
    int64_t yd[4], kd[4] = {a.B, a.Hkv, a.T, a.Dq}, vd[4] = {a.B, a.Hkv, a.T, a.Dv}, qd[4] = {a.B, a.Hq, a.Lq, a.T};
    if (a.rank == 4) yd[0] = a.B, yd[1] = a.Hq, yd[2] = a.Lq, yd[3] = a.Dv;
    else {
        yd[0] = a.B, yd[1] = a.Lq;
        if (!lt_mul_i64(a.Hq, a.Dv, &yd[2])) return lt_op_error(ev, n, LT_ERR_INVALID, "output hidden size overflows");
    }
    LT_TRY(lt_out_new(ev, n, out, 0, Q->dtype, a.rank, yd, &Y));
    if (n->n_out > 1) LT_TRY(lt_out_new(ev, n, out, 1, K->dtype, 4, kd, &PKo));
    if (n->n_out > 2) LT_TRY(lt_out_new(ev, n, out, 2, V->dtype, 4, vd, &PVo));
    if (n->n_out > 3) LT_TRY(lt_out_new(ev, n, out, 3, Q->dtype, 4, qd, &QK));

    lt_status s = LT_OK;
    double *qs = NULL, *ks = NULL, *vs = NULL, *row = NULL;
    int64_t nq, nk, nv;
    if (!lt_prod_i64(qd, 3, &nq) || !lt_mul_i64(nq, a.Dq, &nq) || !lt_prod_i64(kd, 4, &nk) || !lt_prod_i64(vd, 4, &nv))
        return lt_op_error(ev, n, LT_ERR_INVALID, "tensor sizes overflow");
    if ((s = lt_rec_alloc(ev, n, nq, &qs)) || (s = lt_rec_alloc(ev, n, nk, &ks)) || (s = lt_rec_alloc(ev, n, nv, &vs)) ||
        (s = lt_rec_alloc(ev, n, 4 * a.T, &row)))
        goto done;
    /* Q (B, Hq, Lq, Dq) scaled; K/V with the past in front (B, Hkv, T, D). */
    for (int64_t b = 0; b < a.B; b++)
        for (int64_t h = 0; h < a.Hq; h++)
            for (int64_t l = 0; l < a.Lq; l++)
                for (int64_t d = 0; d < a.Dq; d++)
                    qs[((b * a.Hq + h) * a.Lq + l) * a.Dq + d] =
                        lt_load_f64(Q->data, Q->dtype, qkv_index(a.rank, a.Hq, a.Lq, a.Dq, b, h, l, d)) * sq;
    for (int64_t b = 0; b < a.B; b++)
        for (int64_t h = 0; h < a.Hkv; h++)
            for (int64_t t = 0; t < a.T; t++) {
                int64_t ko = ((b * a.Hkv + h) * a.T + t) * a.Dq, vo = ((b * a.Hkv + h) * a.T + t) * a.Dv;
                for (int64_t d = 0; d < a.Dq; d++) {
                    double v = t < a.P ? lt_load_f64(PK->data, PK->dtype, ((b * a.Hkv + h) * a.P + t) * a.Dq + d)
                                       : lt_load_f64(K->data, K->dtype,
                                                     qkv_index(a.rank, a.Hkv, a.Lkv, a.Dq, b, h, t - a.P, d));
                    if (PKo) lt_store_f64(PKo->data, PKo->dtype, ko + d, v);
                    ks[ko + d] = v * sq;
                }
                for (int64_t d = 0; d < a.Dv; d++) {
                    double v = t < a.P ? lt_load_f64(PV->data, PV->dtype, ((b * a.Hkv + h) * a.P + t) * a.Dv + d)
                                       : lt_load_f64(V->data, V->dtype,
                                                     qkv_index(a.rank, a.Hkv, a.Lkv, a.Dv, b, h, t - a.P, d));
                    if (PVo) lt_store_f64(PVo->data, PVo->dtype, vo + d, v);
                    vs[vo + d] = v;
                }
            }

    if (a.Dq == 0 && a.Dv == 0 && !QK) goto done; /* Y and the presents are empty */
    double *raw = row, *capped = row + a.T, *biased = row + 2 * a.T, *prob = row + 3 * a.T;
    int64_t group = a.Hq / a.Hkv;
    for (int64_t b = 0; b < a.B; b++) {
        int64_t np = NP ? lt_load_i64(NP->data, NP->dtype, b) : a.T;
        for (int64_t h = 0; h < a.Hq; h++) {
            int64_t kh = h / group;
            for (int64_t i = 0; i < a.Lq; i++) {
                const double *qrow = qs + ((b * a.Hq + h) * a.Lq + i) * a.Dq;
                for (int64_t j = 0; j < a.T; j++) {
                    const double *krow = ks + ((b * a.Hkv + kh) * a.T + j) * a.Dq;
                    double acc = 0;
                    for (int64_t d = 0; d < a.Dq; d++) acc += qrow[d] * krow[d];
                    raw[j] = acc;
                    capped[j] = softcap > 0 ? softcap * tanh(acc / softcap) : acc;
                    double bias = 0;
                    if (M) {
                        if (j >= mlast) bias = -INFINITY;
                        else {
                            int64_t mo = b * mstr[0] + h * mstr[1] + i * mstr[2] + j * mstr[3];
                            if (M->dtype == LT_BOOL) bias = ((const uint8_t *)M->data)[mo] ? 0.0 : -INFINITY;
                            else bias = lt_load_f64(M->data, M->dtype, mo);
                        }
                    }
                    if (causal && j > i + a.P) bias += -INFINITY;
                    if (j >= np) bias += -INFINITY;
                    biased[j] = capped[j] + bias;
                    if (sm_dt != LT_UNDEFINED) biased[j] = lt_rec_round(sm_dt, biased[j]);
                }
                double mx = -INFINITY;
                for (int64_t j = 0; j < a.T; j++)
                    if (biased[j] > mx || biased[j] != biased[j]) mx = biased[j] != biased[j] ? NAN : biased[j];
                double sum = 0;
                for (int64_t j = 0; j < a.T; j++) sum += prob[j] = exp(biased[j] - mx);
                for (int64_t j = 0; j < a.T; j++) {
                    prob[j] /= sum;
                    if (sm_dt != LT_UNDEFINED) prob[j] = lt_rec_round(sm_dt, prob[j]);
                }
                if (QK) {
                    const double *src = mode == 0 ? raw : mode == 1 ? capped : mode == 2 ? biased : prob;
                    int64_t qo = ((b * a.Hq + h) * a.Lq + i) * a.T;
                    for (int64_t j = 0; j < a.T; j++) lt_store_f64(QK->data, QK->dtype, qo + j, src[j]);
                }
                for (int64_t e = 0; e < a.Dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < a.T; j++) acc += prob[j] * vs[((b * a.Hkv + kh) * a.T + j) * a.Dv + e];
                    lt_store_f64(Y->data, Y->dtype, qkv_index(a.rank, a.Hq, a.Lq, a.Dv, b, h, i, e), acc);
                }
            }
        }
    }
done:
    lt_mem_free(qs);
    lt_mem_free(ks);
    lt_mem_free(vs);
    lt_mem_free(row);
    return s;
}

lt_status lt_rec_attention_infer(lt_infer *ic, lt_node *n) {
    lt_dtype qt = lt_rec_dtype(n, 0), kt = lt_rec_dtype(n, 1), vt = lt_rec_dtype(n, 2);
    int rank = lt_rec_rank(n, 0);
    lt_dim B = lt_rec_dim(n, 0, 0), Hq, Hkv, Lq, Lkv, Dq, Dv;
    if (rank == 3) {
        int64_t qh = lt_attr_int(n, "q_num_heads", 0), kvh = lt_attr_int(n, "kv_num_heads", 0);
        if (qh <= 0 || kvh <= 0) return lt_infer_error(ic, n, "3-D inputs need positive q_num_heads and kv_num_heads");
        Hq = lt_rec_known(qh), Hkv = lt_rec_known(kvh);
        Lq = lt_rec_dim(n, 0, 1), Lkv = lt_rec_dim(n, 1, 1);
        Dq = lt_rec_dim_div(lt_rec_dim(n, 0, 2), qh);
        Dv = lt_rec_dim_div(lt_rec_dim(n, 2, 2), kvh);
    } else {
        Hq = lt_rec_dim(n, 0, 1), Lq = lt_rec_dim(n, 0, 2), Dq = lt_rec_dim(n, 0, 3);
        Hkv = lt_rec_dim(n, 1, 1), Lkv = lt_rec_dim(n, 1, 2), Dv = lt_rec_dim(n, 2, 3);
        if (rank != 4) {
            B = Hq = Lq = Dq = Hkv = Lkv = Dv = lt_rec_unknown();
            if (Dv.value < 0 && lt_rec_rank(n, 2) == 4) Dv = lt_rec_dim(n, 2, 3);
        }
    }
    lt_dim T = Lkv;
    if (n->n_in > 4 && n->in[4]) T = lt_rec_dim_add(lt_rec_dim(n, 4, 2), Lkv);
    if (rank == 3) {
        lt_dim y[3] = {B, Lq, lt_rec_unknown()};
        if (Dv.value >= 0) y[2] = lt_rec_dim_mul(Dv, Hq.value);
        LT_TRY(lt_infer_set(ic, n, 0, qt, 3, y));
    } else if (rank == 4) {
        lt_dim y[4] = {B, Hq, Lq, Dv};
        LT_TRY(lt_infer_set(ic, n, 0, qt, 4, y));
    } else {
        LT_TRY(lt_infer_set(ic, n, 0, qt, -1, NULL));
    }
    lt_dim pk[4] = {B, Hkv, T, Dq}, pv[4] = {B, Hkv, T, Dv}, qk[4] = {B, Hq, Lq, T};
    LT_TRY(lt_infer_set(ic, n, 1, kt, 4, pk));
    LT_TRY(lt_infer_set(ic, n, 2, vt, 4, pv));
    LT_TRY(lt_infer_set(ic, n, 3, qt, 4, qk));
    return LT_OK;
}

/* ======================================================================================== FlexAttention */

/* Run a modifier subgraph on x (dtype cd, shape dims) and load its single output back, rounded to cd. */
static lt_status run_mod(lt_eval *ev, const lt_node *n, const char *attr, const lt_graph *g, lt_dtype cd,
                         const int64_t *dims, double *x) {
    if (g->n_inputs != 1 || g->n_outputs != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must have exactly 1 input and 1 output (has %d, %d)", attr,
                           g->n_inputs, g->n_outputs);
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ev->ctx, cd, 4, dims, &t));
    for (int64_t i = 0; i < t->numel; i++) lt_store_f64(t->data, cd, i, x[i]);
    lt_datum *din, *dout = NULL;
    LT_TRY(lt_datum_tensor(ev->ctx, t, &din));
    lt_status s = lt_eval_subgraph(ev, g, &din, 1, &dout);
    lt_datum_release(din);
    if (s) {
        lt_datum_release(dout);
        return s;
    }
    const lt_datum *d = dout;
    if (d && d->kind == LT_DK_OPTIONAL) d = d->value;
    const lt_tensor *r = d && d->kind == LT_DK_TENSOR ? d->tensor : NULL;
    bool ok = r && r->rank == 4 && memcmp(r->dims, dims, 4 * sizeof *dims) == 0;
    if (ok && !lt_rec_is_float(r->dtype) && !lt_dtype_is_int(r->dtype) && r->dtype != LT_BOOL) ok = false;
    if (!ok) {
        char b1[256], b2[256];
        s = lt_op_error(ev, n, LT_ERR_INVALID, "%s must return a numeric tensor of shape %s, got %s", attr,
                        lt_shape_str(4, dims, b1, sizeof b1),
                        r ? lt_shape_str(r->rank, r->dims, b2, sizeof b2) : "a non-tensor");
    } else {
        for (int64_t i = 0; i < r->numel; i++) x[i] = lt_rec_round(cd, lt_load_f64(r->data, r->dtype, i));
    }
    lt_datum_release(dout);
    return s;
}

lt_status lt_rec_flex_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *Q, *K, *V;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &Q));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &K));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &V));
    LT_TRY(lt_rec_check_float(ev, n, Q, "Q"));
    LT_TRY(lt_rec_check_rank(ev, n, Q, 4, "Q"));
    LT_TRY(lt_rec_check_rank(ev, n, K, 4, "K"));
    LT_TRY(lt_rec_check_rank(ev, n, V, 4, "V"));
    if (K->dtype != Q->dtype || V->dtype != Q->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "Q, K, V types differ (%s, %s, %s)", lt_dtype_name(Q->dtype),
                           lt_dtype_name(K->dtype), lt_dtype_name(V->dtype));
    int64_t B = Q->dims[0], Hq = Q->dims[1], L = Q->dims[2], E = Q->dims[3];
    int64_t Hkv = K->dims[1], S = K->dims[2], Ev = V->dims[3];
    if (K->dims[0] != B || V->dims[0] != B || V->dims[1] != Hkv || V->dims[2] != S || K->dims[3] != E ||
        Hkv <= 0 || Hq % Hkv) {
        char b1[256], b2[256], b3[256];
        return lt_op_error(ev, n, LT_ERR_INVALID, "incompatible Q %s, K %s, V %s",
                           lt_shape_str(4, Q->dims, b1, sizeof b1), lt_shape_str(4, K->dims, b2, sizeof b2),
                           lt_shape_str(4, V->dims, b3, sizeof b3));
    }
    lt_dtype qt = Q->dtype, cd = qt == LT_DOUBLE ? LT_DOUBLE : LT_FLOAT;
    const lt_attr *sp_attr = lt_node_attr(n, "softmax_precision");
    if (sp_attr) {
        if (!valid_precision(sp_attr->i))
            return lt_op_error(ev, n, LT_ERR_INVALID, "softmax_precision %lld is not a floating type", (long long)sp_attr->i);
        cd = (lt_dtype)sp_attr->i;
    }
    const lt_attr *sc_attr = lt_node_attr(n, "scale");
    double scale = sc_attr ? (double)sc_attr->f : 1.0 / sqrt((double)E);
    double sq = lt_rec_round(qt, (double)sqrtf((float)scale));
    const lt_graph *score_mod = lt_attr_graph(n, "score_mod"), *prob_mod = lt_attr_graph(n, "prob_mod");

    int64_t sd[4] = {B, Hq, L, S}, yd[4] = {B, Hq, L, Ev}, ns;
    if (!lt_prod_i64(sd, 4, &ns) || ns > LT_TENSOR_MAX_BYTES)
        return lt_op_error(ev, n, LT_ERR_INVALID, "score tensor is too large");
    lt_tensor *Y;
    LT_TRY(lt_out_new(ev, n, out, 0, V->dtype, 4, yd, &Y));
    double *q = NULL, *k = NULL, *sc = NULL;
    lt_status s;
    if ((s = lt_rec_load(ev, n, Q, &q)) || (s = lt_rec_load(ev, n, K, &k)) || (s = lt_rec_alloc(ev, n, ns, &sc)))
        goto done;
    for (int64_t i = 0; i < Q->numel; i++) q[i] = lt_rec_round(qt, q[i] * sq);
    for (int64_t i = 0; i < K->numel; i++) k[i] = lt_rec_round(qt, k[i] * sq);
    int64_t group = Hq / Hkv;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < L; i++)
                for (int64_t j = 0; j < S; j++) {
                    const double *qr = q + ((b * Hq + h) * L + i) * E, *kr = k + ((b * Hkv + h / group) * S + j) * E;
                    double acc = 0;
                    for (int64_t d = 0; d < E; d++) acc += qr[d] * kr[d];
                    sc[((b * Hq + h) * L + i) * S + j] = lt_rec_round(cd, lt_rec_round(qt, acc));
                }
    if (score_mod && (s = run_mod(ev, n, "score_mod", score_mod, cd, sd, sc))) goto done;
    for (int64_t r = 0; r < ns / (S ? S : 1) && S; r++) {
        double *x = sc + r * S, mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; j++)
            if (x[j] > mx || x[j] != x[j]) mx = x[j] != x[j] ? NAN : x[j];
        for (int64_t j = 0; j < S; j++) sum += x[j] = lt_rec_round(cd, exp(lt_rec_round(cd, x[j] - mx)));
        sum = lt_rec_round(cd, sum);
        for (int64_t j = 0; j < S; j++) x[j] = lt_rec_round(cd, x[j] / sum);
    }
    if (prob_mod && (s = run_mod(ev, n, "prob_mod", prob_mod, cd, sd, sc))) goto done;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < L; i++)
                for (int64_t e = 0; e < Ev; e++) {
                    const double *pr = sc + ((b * Hq + h) * L + i) * S;
                    double acc = 0;
                    for (int64_t j = 0; j < S; j++)
                        acc += pr[j] * lt_rec_round(cd, lt_load_f64(V->data, V->dtype, ((b * Hkv + h / group) * S + j) * Ev + e));
                    lt_store_f64(Y->data, Y->dtype, ((b * Hq + h) * L + i) * Ev + e, lt_rec_round(cd, acc));
                }
done:
    lt_mem_free(q);
    lt_mem_free(k);
    lt_mem_free(sc);
    return s;
}

lt_status lt_rec_flex_infer(lt_infer *ic, lt_node *n) {
    lt_dim y[4] = {lt_rec_dim(n, 0, 0), lt_rec_dim(n, 0, 1), lt_rec_dim(n, 0, 2), lt_rec_dim(n, 2, 3)};
    if (lt_rec_rank(n, 0) >= 0 && lt_rec_rank(n, 0) != 4) return lt_infer_error(ic, n, "Q must be rank 4");
    return lt_infer_set(ic, n, 0, lt_rec_dtype(n, 0), 4, y);
}
