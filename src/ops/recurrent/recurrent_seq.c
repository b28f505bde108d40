/* recurrent_seq.c — sequence-position ops of the recurrent family: RotaryEmbedding (opset 23),
 * LinearAttention and CausalConvWithState (opset 27), infer + eval hooks (registered in recurrent.c).
 *
 * RotaryEmbedding: 4-D (B, heads, S, D) or 3-D (B, S, heads*D, num_heads attribute) input; cos/sin
 * caches indexed by position_ids (B, S) when given (negative ids count from the end, as numpy's
 * indexing in the reference), else shaped (B, S, rot/2); half-split or interleaved pairs; the first
 * rotary_embedding_dim features rotate, the rest pass through. Arithmetic is rounded to the input
 * type after each operation, as the numpy reference computes it.
 * LinearAttention: the recurrent state update (linear, gated, delta, gated_delta) token by token in
 * float32 like the reference, with GQA sharing of KV-head states.
 * CausalConvWithState: depthwise causal conv over [past_state | input] with optional bias and SiLU.
 */
#include "recurrent_impl.h"

#include <math.h>
#include <string.h>

/* ======================================================================================== RotaryEmbedding */

lt_status lt_rec_rotary_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *X, *C, *S, *PI;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &X));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &C));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &S));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &PI));
    LT_TRY(lt_rec_check_float(ev, n, X, "input"));
    if (C->dtype != X->dtype || S->dtype != X->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "cos_cache/sin_cache types (%s, %s) differ from the input's %s",
                           lt_dtype_name(C->dtype), lt_dtype_name(S->dtype), lt_dtype_name(X->dtype));
    char b1[256], b2[256];
    int64_t B, H, L, D;
    if (X->rank == 4) {
        B = X->dims[0], H = X->dims[1], L = X->dims[2], D = X->dims[3];
    } else if (X->rank == 3) {
        int64_t nh = lt_attr_int(n, "num_heads", 0);
        if (nh <= 0 || X->dims[2] % nh)
            return lt_op_error(ev, n, LT_ERR_INVALID, "3-D input needs num_heads dividing its hidden size %lld (num_heads %lld)",
                               (long long)X->dims[2], (long long)nh);
        B = X->dims[0], L = X->dims[1], H = nh, D = X->dims[2] / nh;
    } else {
        return lt_op_error(ev, n, LT_ERR_INVALID, "input must be 3-D or 4-D, got %s",
                           lt_shape_str(X->rank, X->dims, b1, sizeof b1));
    }
    int64_t rd = lt_attr_int(n, "rotary_embedding_dim", 0);
    if (rd == 0) rd = D;
    if (rd < 0 || rd > D || rd % 2)
        return lt_op_error(ev, n, LT_ERR_INVALID, "rotary_embedding_dim %lld must be even and at most the head size %lld",
                           (long long)rd, (long long)D);
    int64_t half = rd / 2, maxpos = 0;
    if (PI) {
        if (!lt_dtype_is_int(PI->dtype) || PI->rank != 2 || PI->dims[0] != B || PI->dims[1] != L)
            return lt_op_error(ev, n, LT_ERR_INVALID, "position_ids must be an integer tensor of shape (%lld, %lld), got %s %s",
                               (long long)B, (long long)L, lt_dtype_name(PI->dtype),
                               lt_shape_str(PI->rank, PI->dims, b1, sizeof b1));
        if (C->rank != 2 || C->dims[1] != half)
            return lt_op_error(ev, n, LT_ERR_INVALID, "cos_cache must have shape (max_position, %lld), got %s",
                               (long long)half, lt_shape_str(C->rank, C->dims, b1, sizeof b1));
        maxpos = C->dims[0];
    } else if (C->rank != 3 || C->dims[0] != B || C->dims[1] != L || C->dims[2] != half) {
        return lt_op_error(ev, n, LT_ERR_INVALID, "cos_cache must have shape (%lld, %lld, %lld), got %s", (long long)B,
                           (long long)L, (long long)half, lt_shape_str(C->rank, C->dims, b1, sizeof b1));
    }
    if (S->rank != C->rank || memcmp(S->dims, C->dims, (size_t)C->rank * sizeof *C->dims) != 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "sin_cache %s and cos_cache %s differ in shape",
                           lt_shape_str(S->rank, S->dims, b1, sizeof b1), lt_shape_str(C->rank, C->dims, b2, sizeof b2));
    lt_tensor *Y;
    LT_TRY(lt_out_new(ev, n, out, 0, X->dtype, X->rank, X->dims, &Y));
    lt_dtype dt = X->dtype;
    bool interleaved = lt_attr_int(n, "interleaved", 0) != 0;
    if (X->numel == 0) return LT_OK;
    for (int64_t b = 0; b < B; b++)
        for (int64_t l = 0; l < L; l++) {
            int64_t crow;
            if (PI) {
                int64_t p = lt_load_i64(PI->data, PI->dtype, b * L + l);
                if (p < -maxpos || p >= maxpos)
                    return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [-%lld, %lld) at position_ids[%lld, %lld]",
                                       (long long)p, (long long)maxpos, (long long)maxpos, (long long)b, (long long)l);
                crow = (p < 0 ? p + maxpos : p) * half;
            } else {
                crow = (b * L + l) * half;
            }
            for (int64_t h = 0; h < H; h++) {
                int64_t base = X->rank == 4 ? ((b * H + h) * L + l) * D : ((b * L + l) * H + h) * D;
                for (int64_t k = 0; k < half; k++) {
                    int64_t i1 = interleaved ? 2 * k : k, i2 = interleaved ? 2 * k + 1 : k + half;
                    double c = lt_load_f64(C->data, dt, crow + k), s = lt_load_f64(S->data, dt, crow + k);
                    double x1 = lt_load_f64(X->data, dt, base + i1), x2 = lt_load_f64(X->data, dt, base + i2);
                    double re = lt_rec_round(dt, lt_rec_round(dt, c * x1) - lt_rec_round(dt, s * x2));
                    double im = lt_rec_round(dt, lt_rec_round(dt, s * x1) + lt_rec_round(dt, c * x2));
                    lt_store_f64(Y->data, dt, base + i1, re);
                    lt_store_f64(Y->data, dt, base + i2, im);
                }
                size_t es = (size_t)lt_dtype_size(dt);
                if (D > rd)
                    memcpy((char *)Y->data + (size_t)(base + rd) * es, (const char *)X->data + (size_t)(base + rd) * es,
                           (size_t)(D - rd) * es);
            }
        }
    return LT_OK;
}

lt_status lt_rec_rotary_infer(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }

/* ======================================================================================== LinearAttention */

enum { UR_LINEAR, UR_GATED, UR_DELTA, UR_GATED_DELTA };

lt_status lt_rec_linattn_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *Qt, *Kt, *Vt, *PS, *DC, *BT;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &Qt));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &Kt));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &Vt));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &PS));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 4, &DC));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 5, &BT));
    const char *rule = lt_attr_string(n, "update_rule", "gated_delta");
    int ur;
    if (strcmp(rule, "linear") == 0) ur = UR_LINEAR;
    else if (strcmp(rule, "gated") == 0) ur = UR_GATED;
    else if (strcmp(rule, "delta") == 0) ur = UR_DELTA;
    else if (strcmp(rule, "gated_delta") == 0) ur = UR_GATED_DELTA;
    else return lt_op_error(ev, n, LT_ERR_INVALID, "unknown update_rule '%s'", rule);
    bool gating = ur == UR_GATED || ur == UR_GATED_DELTA, delta = ur == UR_DELTA || ur == UR_GATED_DELTA;
    if (gating != (DC != NULL))
        return lt_op_error(ev, n, LT_ERR_INVALID, "update_rule '%s' %s the decay input", rule, gating ? "requires" : "forbids");
    if (delta != (BT != NULL))
        return lt_op_error(ev, n, LT_ERR_INVALID, "update_rule '%s' %s the beta input", rule, delta ? "requires" : "forbids");
    int64_t qh = lt_attr_int(n, "q_num_heads", 0), kvh = lt_attr_int(n, "kv_num_heads", 0);
    if (qh <= 0 || kvh <= 0 || qh % kvh)
        return lt_op_error(ev, n, LT_ERR_INVALID, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                           (long long)qh, (long long)kvh);
    const lt_tensor *all[] = {Qt, Kt, Vt, PS, DC, BT};
    const char *names[] = {"query", "key", "value", "past_state", "decay", "beta"};
    for (int k = 0; k < 6; k++) {
        if (!all[k]) continue;
        LT_TRY(lt_rec_check_float(ev, n, all[k], names[k]));
        if (k != 3) LT_TRY(lt_rec_check_rank(ev, n, all[k], 3, names[k]));
        if (k != 3 && k != 0 && all[k]->dtype != Qt->dtype)
            return lt_op_error(ev, n, LT_ERR_INVALID, "%s has type %s, query %s", names[k], lt_dtype_name(all[k]->dtype),
                               lt_dtype_name(Qt->dtype));
    }
    int64_t B = Qt->dims[0], T = Qt->dims[1];
    if (Qt->dims[2] % qh || Vt->dims[2] % kvh)
        return lt_op_error(ev, n, LT_ERR_INVALID, "query/value hidden sizes %lld, %lld are not multiples of the head counts",
                           (long long)Qt->dims[2], (long long)Vt->dims[2]);
    int64_t dk = Qt->dims[2] / qh, dv = Vt->dims[2] / kvh, group = qh / kvh;
    for (int k = 1; k < 6; k++)
        if (all[k] && k != 3 && (all[k]->dims[0] != B || all[k]->dims[1] != T))
            return lt_op_error(ev, n, LT_ERR_INVALID, "%s has batch/time (%lld, %lld), query (%lld, %lld)", names[k],
                               (long long)all[k]->dims[0], (long long)all[k]->dims[1], (long long)B, (long long)T);
    int64_t kdim;
    if (!lt_mul_i64(kvh, dk, &kdim) || Kt->dims[2] != kdim)
        return lt_op_error(ev, n, LT_ERR_INVALID, "key hidden size %lld must be kv_num_heads * d_k = %lld * %lld",
                           (long long)Kt->dims[2], (long long)kvh, (long long)dk);
    bool decay_per_head = false;
    if (DC) {
        if (DC->dims[2] == kvh) decay_per_head = true;
        else if (DC->dims[2] != kdim)
            return lt_op_error(ev, n, LT_ERR_INVALID, "decay's last dim %lld must be kv_num_heads (%lld) or kv_num_heads*d_k (%lld)",
                               (long long)DC->dims[2], (long long)kvh, (long long)kdim);
    }
    if (BT && BT->dims[2] != kvh && BT->dims[2] != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "beta's last dim %lld must be kv_num_heads (%lld) or 1",
                           (long long)BT->dims[2], (long long)kvh);
    int64_t sdims[4] = {B, kvh, dk, dv}, nstate;
    if (PS) {
        char b1[256], b2[256];
        if (PS->rank != 4 || memcmp(PS->dims, sdims, sizeof sdims) != 0)
            return lt_op_error(ev, n, LT_ERR_INVALID, "past_state %s must have shape %s",
                               lt_shape_str(PS->rank, PS->dims, b1, sizeof b1), lt_shape_str(4, sdims, b2, sizeof b2));
    }
    if (!lt_prod_i64(sdims, 4, &nstate) || nstate > LT_TENSOR_MAX_BYTES)
        return lt_op_error(ev, n, LT_ERR_INVALID, "state is too large");
    const lt_attr *sa = lt_node_attr(n, "scale");
    double scale = (sa && sa->f != 0.0f) ? (double)sa->f : 1.0 / sqrt((double)dk);

    int64_t odims[3] = {B, T, 0};
    if (!lt_mul_i64(qh, dv, &odims[2])) return lt_op_error(ev, n, LT_ERR_INVALID, "output size overflows");
    lt_tensor *O, *PSo = NULL;
    LT_TRY(lt_out_new(ev, n, out, 0, Qt->dtype, 3, odims, &O));
    if (n->n_out > 1) LT_TRY(lt_out_new(ev, n, out, 1, PS ? PS->dtype : Qt->dtype, 4, sdims, &PSo));

    if (dv == 0) return LT_OK; /* both outputs are empty */
    double *st = NULL, *vt = NULL;
    lt_status s;
    if ((s = lt_rec_alloc(ev, n, nstate, &st)) || (s = lt_rec_alloc(ev, n, dv, &vt))) goto done;
    if (PS)
        for (int64_t i = 0; i < nstate; i++) st[i] = (float)lt_load_f64(PS->data, PS->dtype, i);
    lt_dtype ft = LT_FLOAT; /* the reference's working precision */
    for (int64_t t = 0; t < T; t++) {
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < kvh; h++) {
                double *S = st + (b * kvh + h) * dk * dv;
                int64_t bt = b * T + t;
                if (gating)
                    for (int64_t d = 0; d < dk; d++) {
                        int64_t di = decay_per_head ? bt * kvh + h : bt * kdim + h * dk + d;
                        double g = lt_rec_round(ft, exp((float)lt_load_f64(DC->data, DC->dtype, di)));
                        for (int64_t m = 0; m < dv; m++) S[d * dv + m] = lt_rec_round(ft, S[d * dv + m] * g);
                    }
                for (int64_t m = 0; m < dv; m++) vt[m] = (float)lt_load_f64(Vt->data, Vt->dtype, bt * kvh * dv + h * dv + m);
                if (delta) {
                    double beta = (float)lt_load_f64(BT->data, BT->dtype, BT->dims[2] == 1 ? bt : bt * kvh + h);
                    for (int64_t m = 0; m < dv; m++) {
                        double r = 0;
                        for (int64_t d = 0; d < dk; d++)
                            r += S[d * dv + m] * (float)lt_load_f64(Kt->data, Kt->dtype, bt * kdim + h * dk + d);
                        vt[m] = lt_rec_round(ft, beta * lt_rec_round(ft, vt[m] - lt_rec_round(ft, r)));
                    }
                }
                for (int64_t d = 0; d < dk; d++) {
                    double kv = (float)lt_load_f64(Kt->data, Kt->dtype, bt * kdim + h * dk + d);
                    for (int64_t m = 0; m < dv; m++)
                        S[d * dv + m] = lt_rec_round(ft, S[d * dv + m] + lt_rec_round(ft, kv * vt[m]));
                }
            }
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < qh; h++) {
                const double *S = st + (b * kvh + h / group) * dk * dv;
                int64_t bt = b * T + t;
                for (int64_t m = 0; m < dv; m++) {
                    double acc = 0;
                    for (int64_t d = 0; d < dk; d++)
                        acc += (float)lt_load_f64(Qt->data, Qt->dtype, bt * qh * dk + h * dk + d) * S[d * dv + m];
                    lt_store_f64(O->data, O->dtype, bt * qh * dv + h * dv + m, lt_rec_round(ft, scale * lt_rec_round(ft, acc)));
                }
            }
    }
    if (PSo)
        for (int64_t i = 0; i < nstate; i++) lt_store_f64(PSo->data, PSo->dtype, i, st[i]);
done:
    lt_mem_free(st);
    lt_mem_free(vt);
    return s;
}

lt_status lt_rec_linattn_infer(lt_infer *ic, lt_node *n) {
    int64_t qh = lt_attr_int(n, "q_num_heads", 0), kvh = lt_attr_int(n, "kv_num_heads", 0);
    lt_dtype qt = lt_rec_dtype(n, 0);
    lt_dim B = lt_rec_dim(n, 0, 0), T = lt_rec_dim(n, 0, 1), dk = lt_rec_unknown(), dv = lt_rec_unknown();
    if (qh > 0) dk = lt_rec_dim_div(lt_rec_dim(n, 0, 2), qh);
    if (kvh > 0) dv = lt_rec_dim_div(lt_rec_dim(n, 2, 2), kvh);
    lt_dim o[3] = {B, T, dv.value >= 0 && qh > 0 ? lt_rec_dim_mul(dv, qh) : lt_rec_unknown()};
    LT_TRY(lt_infer_set(ic, n, 0, qt, 3, o));
    lt_dim st[4] = {B, kvh > 0 ? lt_rec_known(kvh) : lt_rec_unknown(), dk, dv};
    lt_dtype sdt = (n->n_in > 3 && n->in[3]) ? lt_rec_dtype(n, 3) : qt;
    return lt_infer_set(ic, n, 1, sdt, 4, st);
}

/* ======================================================================================== CausalConvWithState */

lt_status lt_rec_cconv_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *X, *Wt, *Bt, *PS;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &X));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &Wt));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &Bt));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &PS));
    LT_TRY(lt_rec_check_float(ev, n, X, "input"));
    LT_TRY(lt_rec_check_rank(ev, n, X, 3, "input"));
    LT_TRY(lt_rec_check_rank(ev, n, Wt, 3, "weight"));
    const char *act = lt_attr_string(n, "activation", "none");
    bool silu;
    if (strcmp(act, "none") == 0) silu = false;
    else if (strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0) silu = true;
    else return lt_op_error(ev, n, LT_ERR_INVALID, "unknown activation '%s' (none, silu, swish)", act);
    int64_t B = X->dims[0], C = X->dims[1], L = X->dims[2], k = Wt->dims[2];
    char b1[256];
    if (Wt->dims[0] != C || Wt->dims[1] != 1 || k < 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "weight %s must have shape (%lld, 1, k >= 1)",
                           lt_shape_str(Wt->rank, Wt->dims, b1, sizeof b1), (long long)C);
    if (Bt && (Bt->rank != 1 || Bt->dims[0] != C))
        return lt_op_error(ev, n, LT_ERR_INVALID, "bias %s must have shape (%lld)",
                           lt_shape_str(Bt->rank, Bt->dims, b1, sizeof b1), (long long)C);
    int64_t sdims[3] = {B, C, k - 1};
    if (PS && (PS->rank != 3 || PS->dims[0] != B || PS->dims[1] != C || PS->dims[2] != k - 1))
        return lt_op_error(ev, n, LT_ERR_INVALID, "past_state %s must have shape (%lld, %lld, %lld)",
                           lt_shape_str(PS->rank, PS->dims, b1, sizeof b1), (long long)B, (long long)C, (long long)(k - 1));
    const lt_tensor *same[] = {Wt, Bt, PS};
    for (int i = 0; i < 3; i++)
        if (same[i] && same[i]->dtype != X->dtype)
            return lt_op_error(ev, n, LT_ERR_INVALID, "%s has type %s, input %s", i == 0 ? "weight" : i == 1 ? "bias" : "past_state",
                               lt_dtype_name(same[i]->dtype), lt_dtype_name(X->dtype));
    lt_tensor *Y, *PSo = NULL;
    LT_TRY(lt_out_new(ev, n, out, 0, X->dtype, 3, X->dims, &Y));
    if (n->n_out > 1) LT_TRY(lt_out_new(ev, n, out, 1, X->dtype, 3, sdims, &PSo));
    lt_dtype dt = X->dtype;
    if (Y->numel == 0 && (!PSo || PSo->numel == 0)) return LT_OK; /* nothing to compute */
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t xo = (b * C + c) * L, so = (b * C + c) * (k - 1);
            /* padded[p] = p < k-1 ? past[p] (or 0) : x[p - (k-1)] */
#define PADDED(p) ((p) < k - 1 ? (PS ? lt_load_f64(PS->data, dt, so + (p)) : 0.0) : lt_load_f64(X->data, dt, xo + (p) - (k - 1)))
            for (int64_t t = 0; t < L; t++) {
                double acc = 0;
                for (int64_t j = 0; j < k; j++) acc += lt_load_f64(Wt->data, dt, c * k + j) * PADDED(t + j);
                double v = lt_rec_round(dt, acc);
                if (Bt) v = lt_rec_round(dt, lt_load_f64(Bt->data, dt, c) + v);
                if (silu) {
                    float f = (float)v, sg = 1.0f / (1.0f + expf(-f));
                    v = (double)(f * sg);
                }
                lt_store_f64(Y->data, dt, xo + t, v);
            }
            if (PSo)
                for (int64_t q = 0; q < k - 1; q++) lt_store_f64(PSo->data, dt, so + q, PADDED(L + q));
#undef PADDED
        }
    return LT_OK;
}

lt_status lt_rec_cconv_infer(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_infer_copy(ic, n, 0, 0));
    lt_dim k = lt_rec_dim(n, 1, 2);
    lt_dim st[3] = {lt_rec_dim(n, 0, 0), lt_rec_dim(n, 0, 1), k.value >= 1 ? lt_rec_known(k.value - 1) : lt_rec_unknown()};
    return lt_infer_set(ic, n, 1, lt_rec_dtype(n, 0), 3, st);
}
