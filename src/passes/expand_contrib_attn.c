/* expand_contrib_attn.c — the attention half of the expand_contrib pass (expand_contrib.c): com.microsoft's
 * Attention, MultiHeadAttention and GroupQueryAttention (semantics: src/ops/contrib/contrib_attention.c)
 * become standard ops:
 *   Q, K, V as [B, heads, len, H]: Slice of the projection (Attention: MatMul(input, weights) + bias;
 *   MHA: the inputs + bias slices), Reshape, Transpose; past K / V concatenated before the new ones
 *   (the present outputs); GQA's kv heads repeated (Reshape, Expand, Reshape) for its query groups
 *   scores = MatMul(Q, Transpose(K)) * scale  [GQA: softcap c * Tanh(scores / c)]
 *            + mask  (Attention / MHA: mask_filter_value * max(key mask, causal) built from the mask
 *                     input by comparisons; GQA: a constant -inf causal / local-window mask)
 *            + attention_bias
 *   Softmax over the keys (GQA's sink: a column of the sink value concatenated, then sliced off)
 *   output = Reshape(Transpose(MatMul(P, V)), [B, S, heads * Hv])
 * GroupQueryAttention is rewritten only when seqlens_k and total_sequence_length are constants (the op's
 * check has then verified they describe unpadded batches); its rotary uses the rotary rewrite.
 */
#include "expand_contrib.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ops/contrib/contrib_attention.h"

/* x [B, L, width]: columns [col, col + heads * hd) as [B, heads, L, hd]. */
static lt_status to_heads(xc *b, lt_value *x, int64_t B, int64_t L, int64_t width, int64_t col, int64_t heads,
                          int64_t hd, lt_value **out) {
    if (col != 0 || heads * hd != width) LT_TRY(xc_slice(b, x, 2, col, col + heads * hd, &x));
    int64_t d[4] = {B, L, heads, hd};
    static const int perm[4] = {0, 2, 1, 3};
    LT_TRY(xc_reshape(b, x, 4, d, &x));
    return xc_transpose(b, x, 4, perm, out);
}

/* o [B, heads, S, Hv] -> [B, S, heads * Hv] */
static lt_status from_heads(xc *b, lt_value *o, int64_t B, int64_t S, int64_t heads, int64_t Hv, lt_value **out) {
    static const int perm[4] = {0, 2, 1, 3};
    int64_t d[3] = {B, S, heads * Hv};
    LT_TRY(xc_transpose(b, o, 4, perm, &o));
    return xc_reshape(b, o, 3, d, out);
}

/* x [B, Nkv, T, H] with each head repeated G times -> [B, Nkv * G, T, H] */
static lt_status repeat_heads(xc *b, lt_value *x, int64_t B, int64_t Nkv, int64_t G, int64_t T, int64_t H, lt_value **out) {
    if (G == 1) {
        *out = x;
        return LT_OK;
    }
    int64_t d5[5] = {B, Nkv, 1, T, H}, e5[5] = {B, Nkv, G, T, H}, d4[4] = {B, Nkv * G, T, H};
    lt_value *shape;
    LT_TRY(xc_reshape(b, x, 5, d5, &x));
    LT_TRY(xc_ints(b, 5, e5, &shape));
    LT_TRY(xc_op2(b, "Expand", x, shape, &x));
    return xc_reshape(b, x, 4, d4, out);
}

typedef struct core {
    int64_t B, N, S, T, H, Hv;
    double scale, softcap;
    lt_value *mask;     /* additive, broadcast to [B, N, S, T], or NULL */
    lt_value *bias;     /* attention_bias or NULL */
    lt_value *sink;     /* [N] sink logits (GQA head_sink / smooth softmax zeros), or NULL */
} core;

static lt_status attend(xc *b, const core *c, lt_value *q, lt_value *k, lt_value *v, lt_value **out) {
    static const int kt[4] = {0, 1, 3, 2};
    lt_value *s, *p;
    lt_dtype dt = lt_pu_dtype(q);
    LT_TRY(xc_transpose(b, k, 4, kt, &k));
    LT_TRY(xc_op2(b, "MatMul", q, k, &s));
    LT_TRY(xc_mul_scalar(b, s, c->scale, &s));
    if (c->softcap > 0) {
        LT_TRY(xc_mul_scalar(b, s, 1.0 / c->softcap, &s));
        LT_TRY(xc_op(b, "Tanh", 1, &s, &s));
        LT_TRY(xc_mul_scalar(b, s, c->softcap, &s));
    }
    if (c->mask) LT_TRY(xc_op2(b, "Add", s, c->mask, &s));
    if (c->bias) LT_TRY(xc_op2(b, "Add", s, c->bias, &s));
    if (c->sink) { /* softmax over [scores, sink]: the sink only adds to the denominator */
        int64_t sd[4] = {1, c->N, 1, 1}, ed[4] = {c->B, c->N, c->S, 1};
        lt_value *col, *shape;
        LT_TRY(xc_reshape(b, c->sink, 4, sd, &col));
        LT_TRY(xc_ints(b, 4, ed, &shape));
        LT_TRY(xc_op2(b, "Expand", col, shape, &col));
        lt_value *parts[2] = {s, col};
        LT_TRY(xc_concat(b, 2, parts, 3, &s));
    }
    LT_TRY(xc_op_int(b, "Softmax", s, "axis", -1, &p));
    if (c->sink) LT_TRY(xc_slice(b, p, 3, 0, c->T, &p));
    (void)dt;
    LT_TRY(xc_op2(b, "MatMul", p, v, &p));
    return from_heads(b, p, c->B, c->S, c->N, c->Hv, out);
}

/* ---- masks (Attention, MultiHeadAttention) ---- */

/* 1 where t > P + s, as dt [S, T] */
static lt_status causal_ones(xc *b, lt_dtype dt, int64_t S, int64_t T, int64_t P, double value, double other,
                             int64_t window, lt_value **out) {
    double *m = lt_mem_alloc((size_t)(S * T > 0 ? S * T : 1) * sizeof *m);
    if (!m) return lt_error(b->ctx, LT_ERR_NOMEM, "out of memory");
    for (int64_t s = 0; s < S; s++)
        for (int64_t t = 0; t < T; t++)
            m[s * T + t] = t > P + s || (window > 0 && t < P + s - window) ? value : other;
    int64_t d[2] = {S, T};
    lt_status st = xc_const(b, dt, 2, d, m, out);
    lt_mem_free(m);
    return st;
}

/* mask_filter_value * max(key mask, causal), broadcastable to [B, N, S, T]; NULL when neither. */
static lt_status key_mask(xc *b, const lt_node *n, lt_value *mask, lt_dtype dt, int64_t B, int64_t S, int64_t T,
                          int64_t P, bool causal, lt_value **out) {
    lt_value *m = NULL;
    *out = NULL;
    if (mask) {
        int rank;
        int64_t md[LT_MAX_RANK];
        if (!xc_static(mask, &rank, md)) return LT_ERR_UNSUPPORTED;
        if (rank == 1) { /* valid lengths: t >= length[b] */
            double *ar = lt_mem_alloc((size_t)T * sizeof *ar);
            if (!ar) return lt_error(b->ctx, LT_ERR_NOMEM, "out of memory");
            for (int64_t t = 0; t < T; t++) ar[t] = (double)t;
            int64_t ad[2] = {1, T}, ld[2] = {B, 1};
            lt_value *arv, *len;
            lt_status st = xc_const(b, LT_INT32, 2, ad, ar, &arv);
            lt_mem_free(ar);
            LT_TRY(st);
            LT_TRY(xc_reshape(b, mask, 2, ld, &len));
            LT_TRY(xc_op2(b, "GreaterOrEqual", arv, len, &m));
        } else { /* 0 = masked */
            lt_value *zero;
            LT_TRY(xc_scalar(b, LT_INT32, 0, &zero));
            LT_TRY(xc_op2(b, "LessOrEqual", mask, zero, &m));
        }
        LT_TRY(xc_op_int(b, "Cast", m, "to", dt, &m));
        int64_t d4[4] = {B, 1, rank == 3 ? S : 1, T};
        LT_TRY(xc_reshape(b, m, 4, d4, &m));
    }
    if (causal) {
        lt_value *c;
        LT_TRY(causal_ones(b, dt, S, T, P, 1.0, 0.0, 0, &c));
        if (m) LT_TRY(xc_op2(b, "Max", m, c, &m));
        else m = c;
    }
    if (!m) return LT_OK;
    return xc_mul_scalar(b, m, lt_attr_float(n, "mask_filter_value", -10000.0f), out);
}

static double scale_of(const lt_node *n, int64_t H) {
    double s = lt_attr_float(n, "scale", 0.0f);
    return s != 0.0 ? s : 1.0 / sqrt((double)H);
}

static lt_value *in_opt(const lt_node *n, int i) { return i < n->n_in ? n->in[i] : NULL; }

/* ---- Attention ---- */

static lt_status rw_attention(xc *b, lt_node *n, bool *changed) {
    int xr, wr, pr = -1;
    int64_t xd[LT_MAX_RANK], wd[LT_MAX_RANK], pd[LT_MAX_RANK];
    lt_value *past = in_opt(n, 4);
    if (!xc_static(n->in[0], &xr, xd) || !xc_static(in_opt(n, 1), &wr, wd) || (past && !xc_static(past, &pr, pd)))
        return LT_OK;
    int mr;
    int64_t md[LT_MAX_RANK];
    if (in_opt(n, 3) && !xc_static(n->in[3], &mr, md)) return LT_OK; /* nothing is built before this */
    lt_attention g;
    LT_TRY(lt_attention_geom(b->ctx, n, xd, wd, pr, pd, &g));
    lt_dtype dt = lt_pu_dtype(n->in[0]);
    lt_value *qkv, *q, *k, *v;
    LT_TRY(xc_op2(b, "MatMul", n->in[0], n->in[1], &qkv));
    if (in_opt(n, 2)) LT_TRY(xc_op2(b, "Add", qkv, n->in[2], &qkv));
    int64_t W = g.Dq + g.Dk + g.Dv;
    LT_TRY(to_heads(b, qkv, g.B, g.S, W, 0, g.N, g.H, &q));
    LT_TRY(to_heads(b, qkv, g.B, g.S, W, g.Dq, g.N, g.H, &k));
    LT_TRY(to_heads(b, qkv, g.B, g.S, W, g.Dq + g.Dk, g.N, g.Hv, &v));
    if (past) {
        lt_value *pk, *pv, *i0, *i1;
        LT_TRY(xc_scalar(b, LT_INT64, 0, &i0));
        LT_TRY(xc_scalar(b, LT_INT64, 1, &i1));
        LT_TRY(xc_op2(b, "Gather", past, i0, &pk));
        LT_TRY(xc_op2(b, "Gather", past, i1, &pv));
        lt_value *kp[2] = {pk, k}, *vp[2] = {pv, v};
        LT_TRY(xc_concat(b, 2, kp, 2, &k));
        LT_TRY(xc_concat(b, 2, vp, 2, &v));
    }
    core c = {.B = g.B, .N = g.N, .S = g.S, .T = g.T, .H = g.H, .Hv = g.Hv, .scale = scale_of(n, g.H),
              .bias = in_opt(n, 5)};
    lt_status s = key_mask(b, n, in_opt(n, 3), dt, g.B, g.S, g.T, g.P, lt_attr_int(n, "unidirectional", 0) != 0, &c.mask);
    if (s == LT_ERR_UNSUPPORTED) return LT_OK;
    LT_TRY(s);
    lt_value *y, *present = NULL;
    LT_TRY(attend(b, &c, q, k, v, &y));
    if (n->n_out > 1 && n->out[1]) {
        lt_value *ku, *vu;
        LT_TRY(xc_unsqueeze(b, k, 0, &ku));
        LT_TRY(xc_unsqueeze(b, v, 0, &vu));
        lt_value *parts[2] = {ku, vu};
        LT_TRY(xc_concat(b, 2, parts, 0, &present));
    }
    LT_TRY(xc_forward(b, n, 0, y, changed));
    return xc_forward(b, n, 1, present, changed);
}

/* ---- MultiHeadAttention ---- */

/* bias[from, from + len) */
static lt_status bias_part(xc *b, lt_value *bias, int64_t from, int64_t len, lt_value **out) {
    if (!bias) {
        *out = NULL;
        return LT_OK;
    }
    return xc_slice(b, bias, 0, from, from + len, out);
}

static lt_status add_opt(xc *b, lt_value *x, lt_value *y, lt_value **out) {
    if (!y) {
        *out = x;
        return LT_OK;
    }
    return xc_op2(b, "Add", x, y, out);
}

/* packed x [B, L, N, parts, H]: part p as [B, N, L, H] (+ bias, [N * H]) */
static lt_status unpack_part(xc *b, lt_value *x, const lt_mha *g, int64_t L, int64_t p, lt_value *bias, lt_value **out) {
    static const int perm[4] = {0, 2, 1, 3};
    int64_t d4[4] = {g->B, L, g->N, g->H}, bd[2] = {g->N, g->H};
    LT_TRY(xc_slice(b, x, 3, p, p + 1, &x));
    LT_TRY(xc_reshape(b, x, 4, d4, &x));
    if (bias) {
        LT_TRY(xc_reshape(b, bias, 2, bd, &bias));
        LT_TRY(xc_op2(b, "Add", x, bias, &x));
    }
    return xc_transpose(b, x, 4, perm, out);
}

static lt_status rw_mha(xc *b, lt_node *n, bool *changed) {
    int r[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    int64_t d[8][LT_MAX_RANK];
    for (int i = 0; i < 8; i++)
        if (in_opt(n, i) && !xc_static(n->in[i], &r[i], d[i])) return LT_OK;
    if (in_opt(n, 8) || in_opt(n, 9)) return LT_OK;
    lt_mha g;
    LT_TRY(lt_mha_geom(b->ctx, n, r[0], d[0], r[1], d[1], r[2], d[2], r[6], d[6], &g));
    lt_dtype dt = lt_pu_dtype(n->in[0]);
    int64_t D = g.N * g.H, Dv = g.N * g.Hv;
    lt_value *bias = in_opt(n, 3), *bq, *bk, *bv, *q, *k, *v;
    LT_TRY(bias_part(b, bias, 0, D, &bq));
    LT_TRY(bias_part(b, bias, D, D, &bk));
    LT_TRY(bias_part(b, bias, 2 * D, Dv, &bv));
    switch (g.form) {
    case LT_MHA_PACKED_QKV:
        LT_TRY(unpack_part(b, n->in[0], &g, g.S, 0, bq, &q));
        LT_TRY(unpack_part(b, n->in[0], &g, g.S, 1, bk, &k));
        LT_TRY(unpack_part(b, n->in[0], &g, g.S, 2, bv, &v));
        break;
    case LT_MHA_PACKED_KV:
        LT_TRY(add_opt(b, n->in[0], bq, &q));
        LT_TRY(to_heads(b, q, g.B, g.S, D, 0, g.N, g.H, &q));
        LT_TRY(unpack_part(b, n->in[1], &g, g.L, 0, bk, &k));
        LT_TRY(unpack_part(b, n->in[1], &g, g.L, 1, bv, &v));
        break;
    case LT_MHA_BSD:
        LT_TRY(add_opt(b, n->in[0], bq, &q));
        LT_TRY(add_opt(b, n->in[1], bk, &k));
        LT_TRY(add_opt(b, n->in[2], bv, &v));
        LT_TRY(to_heads(b, q, g.B, g.S, D, 0, g.N, g.H, &q));
        LT_TRY(to_heads(b, k, g.B, g.L, D, 0, g.N, g.H, &k));
        LT_TRY(to_heads(b, v, g.B, g.L, Dv, 0, g.N, g.Hv, &v));
        break;
    case LT_MHA_BNSH:
        LT_TRY(to_heads(b, n->in[0], g.B, g.S, D, 0, g.N, g.H, &q));
        k = n->in[1];
        v = n->in[2];
        break;
    }
    if (in_opt(n, 6)) {
        lt_value *kp[2] = {n->in[6], k}, *vp[2] = {n->in[7], v};
        LT_TRY(xc_concat(b, 2, kp, 2, &k));
        LT_TRY(xc_concat(b, 2, vp, 2, &v));
    }
    core c = {.B = g.B, .N = g.N, .S = g.S, .T = g.T, .H = g.H, .Hv = g.Hv, .scale = scale_of(n, g.H),
              .bias = in_opt(n, 5)};
    lt_status s = key_mask(b, n, in_opt(n, 4), dt, g.B, g.S, g.T, g.P, lt_attr_int(n, "unidirectional", 0) != 0, &c.mask);
    if (s == LT_ERR_UNSUPPORTED) return LT_OK;
    LT_TRY(s);
    lt_value *y;
    LT_TRY(attend(b, &c, q, k, v, &y));
    LT_TRY(xc_forward(b, n, 0, y, changed));
    LT_TRY(xc_forward(b, n, 1, k, changed));
    return xc_forward(b, n, 2, v, changed);
}

/* ---- GroupQueryAttention ---- */

/* cos or sin rows [.., S, R/2] for the new tokens: position_ids [B, S] -> [B, 1, S, R/2], else P + s. */
static lt_status gqa_rows(xc *b, lt_value *cache, lt_value *pos, const lt_gqa *g, lt_value **out) {
    lt_value *idx;
    if (pos) {
        idx = pos;
    } else {
        int64_t ids[4096];
        if (g->S > 4096) return LT_ERR_UNSUPPORTED;
        for (int64_t s = 0; s < g->S; s++) ids[s] = g->P + s;
        LT_TRY(xc_ints(b, (int)g->S, ids, &idx));
    }
    lt_value *rows;
    LT_TRY(xc_op2(b, "Gather", cache, idx, &rows));
    if (pos) LT_TRY(xc_unsqueeze(b, rows, 1, &rows));
    *out = rows;
    return LT_OK;
}

static lt_status rw_gqa(xc *b, lt_node *n, bool *changed) {
    int qr, kr = -1, pr = -1, cr = -1;
    int64_t qd[LT_MAX_RANK], kd[LT_MAX_RANK], pd[LT_MAX_RANK], cd[LT_MAX_RANK];
    lt_value *key = in_opt(n, 1), *pk = in_opt(n, 3);
    if (!xc_static(n->in[0], &qr, qd) || (key && !xc_static(key, &kr, kd)) || (pk && !xc_static(pk, &pr, pd)))
        return LT_OK;
    if (!lt_value_is_const(in_opt(n, 5)) || !lt_value_is_const(in_opt(n, 6))) return LT_OK; /* lengths at run time */
    if (in_opt(n, 7) && !xc_static(n->in[7], &cr, cd)) return LT_OK;
    if (qd[1] > 4096) return LT_OK; /* gqa_rows' position table */
    if (in_opt(n, 9) && !lt_value_is_const(n->in[9])) return LT_OK; /* run-time positions: the op checks them */
    lt_gqa g;
    LT_TRY(lt_gqa_geom(b->ctx, n, qd, !key, kd, pr, pd, &g));
    lt_dtype dt = lt_pu_dtype(n->in[0]);
    int64_t width = key ? g.N * g.H : (g.N + 2 * g.Nkv) * g.H, kvw = key ? g.Nkv * g.H : width;
    lt_value *q, *k, *v;
    LT_TRY(to_heads(b, n->in[0], g.B, g.S, width, 0, g.N, g.H, &q));
    LT_TRY(to_heads(b, key ? key : n->in[0], g.B, g.S, kvw, key ? 0 : g.N * g.H, g.Nkv, g.H, &k));
    LT_TRY(to_heads(b, key ? n->in[2] : n->in[0], g.B, g.S, kvw, key ? 0 : (g.N + g.Nkv) * g.H, g.Nkv, g.H, &v));
    if (g.do_rotary) {
        lt_value *c, *s;
        lt_status st = gqa_rows(b, n->in[7], in_opt(n, 9), &g, &c);
        if (st == LT_ERR_UNSUPPORTED) return LT_OK;
        LT_TRY(st);
        LT_TRY(gqa_rows(b, n->in[8], in_opt(n, 9), &g, &s));
        int64_t q4[4] = {g.B, g.N, g.S, g.H}, k4[4] = {g.B, g.Nkv, g.S, g.H};
        LT_TRY(xc_rotate_head(b, q, 4, q4, 2 * cd[1], g.interleaved, c, s, &q));
        LT_TRY(xc_rotate_head(b, k, 4, k4, 2 * cd[1], g.interleaved, c, s, &k));
    }
    if (pk) {
        lt_value *kp[2] = {pk, k}, *vp[2] = {n->in[4], v};
        LT_TRY(xc_concat(b, 2, kp, 2, &k));
        LT_TRY(xc_concat(b, 2, vp, 2, &v));
    }
    lt_value *ka, *va, *sink = in_opt(n, 11);
    LT_TRY(repeat_heads(b, k, g.B, g.Nkv, g.N / g.Nkv, g.T, g.H, &ka));
    LT_TRY(repeat_heads(b, v, g.B, g.Nkv, g.N / g.Nkv, g.T, g.H, &va));
    if (!sink && lt_attr_int(n, "smooth_softmax", 0)) {
        double *z = lt_mem_calloc((size_t)g.N, sizeof *z);
        if (!z) return lt_error(b->ctx, LT_ERR_NOMEM, "out of memory");
        lt_status st = xc_const(b, dt, 1, &g.N, z, &sink);
        lt_mem_free(z);
        LT_TRY(st);
    }
    core c = {.B = g.B, .N = g.N, .S = g.S, .T = g.T, .H = g.H, .Hv = g.H, .scale = scale_of(n, g.H),
              .softcap = g.softcap, .bias = in_opt(n, 10), .sink = sink};
    LT_TRY(causal_ones(b, dt, g.S, g.T, g.P, -INFINITY, 0.0, g.window, &c.mask));
    lt_value *y;
    LT_TRY(attend(b, &c, q, ka, va, &y));
    LT_TRY(xc_forward(b, n, 0, y, changed));
    LT_TRY(xc_forward(b, n, 1, k, changed));
    return xc_forward(b, n, 2, v, changed);
}

lt_status xc_attention(xc *b, lt_node *n, bool *changed) {
    switch (n->op) {
    case LT_OP_MsAttention: return rw_attention(b, n, changed);
    case LT_OP_MultiHeadAttention: return rw_mha(b, n, changed);
    case LT_OP_GroupQueryAttention: return rw_gqa(b, n, changed);
    default: return LT_OK;
    }
}
