/* contrib_attention.c — com.microsoft's attention ops, as onnxruntime's CPU kernels compute them.
 * Q (B, N, S, H), K and V (B, Nkv, T, H / Hv) with T = past + new; a query head h reads kv head
 * h / (N / Nkv); probabilities softmax(scale * Q K' + mask + attention_bias) over T, scale default
 * 1 / sqrt(H); output (B, S, N * Hv).
 *   Attention(input, weights, bias?, mask_index?, past?, attention_bias?): Q, K, V = input x weights
 *     (+ bias) split by qkv_hidden_sizes (default: three equal parts); past (2, B, N, P, H) goes
 *     before K and V, output 1 present = (2, B, N, T, H).
 *   MultiHeadAttention(query, key?, value?, bias?, key_padding_mask?, attention_bias?, past_key?,
 *     past_value?): key / value (B, L, D) or already (B, N, L, H); query (B, S, N, 3, H) packs Q, K, V
 *     and key (B, L, N, 2, H) packs K, V; bias (D + D + Dv) adds to the (B, L, D)-shaped forms; past
 *     key / value (B, N, P, H) go before K / V, outputs 1, 2: present key / value (B, N, T, H).
 *   Masks (both): mask_index / key_padding_mask int32 (B) valid lengths, (B, T) or (B, S, T) with 0 =
 *     masked; unidirectional masks t > P + s. A masked score gets mask_filter_value (default -10000)
 *     added once, however many rules mask it (onnxruntime's mask holds 0 or the filter), then
 *     attention_bias (B or 1, N or 1, S, T) is added.
 *   GroupQueryAttention(query, key?, value?, past_key?, past_value?, seqlens_k, total_sequence_length,
 *     cos_cache?, sin_cache?, position_ids?, attention_bias?, head_sink?): query (B, S, N * H) (or Q, K,
 *     V packed on its last dim when key is omitted), key / value (B, S, Nkv * H), past (B, Nkv, P, H);
 *     present key / value = past then new (B, Nkv, P + S, H). Only unpadded batches: every seqlens_k
 *     entry must be total_sequence_length - 1 and total_sequence_length = P + S. do_rotary rotates the
 *     new Q and K (contrib_rotary.h; positions position_ids or P + s). Causal: query s sees keys t <=
 *     P + s, and with local_window_size w > 0 only t >= P + s - w. softcap c > 0: c tanh(x / c) before
 *     attention_bias; smooth_softmax / head_sink add exp(sink - max) (sink 0, or head_sink[h]) to the
 *     softmax denominator.
 * Refused (clear errors): Attention's do_rotary, past_present_share_buffer, past_sequence_length and 4-D
 * masks; MultiHeadAttention's qk output, past_sequence_length, cache_indirection and the (3B + 2)
 * mask; GroupQueryAttention's output_qk and padded batches.
 */
#include "contrib_impl.h"
#include "contrib_attention.h"

#include <math.h>
#include <string.h>

/* ---- the shared core ---- */

typedef struct attn {
    int64_t B, N, Nkv, S, T, H, Hv, P;
    double scale, filter, softcap;
    bool causal, smooth;
    int64_t window;     /* GQA local window; <= 0: none */
    bool exclude;       /* GQA: masked keys are left out (probability 0), not given the filter value */
    const ct_arg *mask; /* key mask (Attention / MHA) */
    const ct_arg *bias; /* attention_bias */
    const ct_arg *sink; /* head_sink */
} attn;

/* Whether key t is masked for query s of batch b (mask and causality). */
static bool masked(const attn *a, int64_t b, int64_t s, int64_t t) {
    if (a->causal && t > a->P + s) return true;
    if (a->window > 0 && t < a->P + s - a->window) return true;
    const ct_arg *m = a->mask;
    if (!m || !ct_present(m)) return false;
    if (m->rank == 1) return t >= (int64_t)m->v[b];
    if (m->rank == 2) return !(m->v[b * a->T + t] > 0);
    return !(m->v[(b * a->S + s) * a->T + t] > 0);
}

static double bias_at(const ct_arg *bi, int64_t b, int64_t h, int64_t s, int64_t t, int64_t S, int64_t T) {
    int64_t bb = bi->d[0] == 1 ? 0 : b, hh = bi->d[1] == 1 ? 0 : h;
    return bi->v[((bb * bi->d[1] + hh) * S + s) * T + t];
}

/* out (B, S, N * Hv) from q (B, N, S, H), k (B, Nkv, T, H), v (B, Nkv, T, Hv). */
static lt_status attend(lt_eval *ev, const lt_node *n, const attn *a, const double *q, const double *k,
                        const double *v, double *out) {
    double *row = lt_mem_alloc((size_t)(a->T ? a->T : 1) * sizeof *row);
    if (!row) return lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory");
    int64_t G = a->N / a->Nkv;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < a->N; h++) {
            const double *K = k + (b * a->Nkv + h / G) * a->T * a->H, *V = v + (b * a->Nkv + h / G) * a->T * a->Hv;
            for (int64_t s = 0; s < a->S; s++) {
                const double *Q = q + ((b * a->N + h) * a->S + s) * a->H;
                double mx = -INFINITY;
                for (int64_t t = 0; t < a->T; t++) {
                    double x = 0;
                    for (int64_t j = 0; j < a->H; j++) x += Q[j] * K[t * a->H + j];
                    x *= a->scale;
                    if (a->softcap > 0) x = a->softcap * tanh(x / a->softcap);
                    bool m = masked(a, b, s, t);
                    if (m) x = a->exclude ? -INFINITY : x + a->filter; /* the filter is added once however masked */
                    if (a->bias && ct_present(a->bias) && !(m && a->exclude)) x += bias_at(a->bias, b, h, s, t, a->S, a->T);
                    row[t] = x;
                    if (x > mx) mx = x;
                }
                double sink = a->sink && ct_present(a->sink) ? a->sink->v[h] : 0.0;
                bool has_sink = a->smooth || (a->sink && ct_present(a->sink));
                if (has_sink && sink > mx) mx = sink;
                double sum = has_sink ? exp(sink - mx) : 0.0;
                for (int64_t t = 0; t < a->T; t++) sum += row[t] = row[t] == -INFINITY ? 0.0 : exp(row[t] - mx);
                double *o = out + ((b * a->S + s) * a->N + h) * a->Hv;
                for (int64_t j = 0; j < a->Hv; j++) {
                    double acc = 0;
                    for (int64_t t = 0; t < a->T; t++) acc += row[t] * V[t * a->Hv + j];
                    o[j] = sum > 0 ? acc / sum : 0.0;
                }
            }
        }
    lt_mem_free(row);
    return LT_OK;
}

/* x (B, L, ...) with head h's hd values at column col + h * hstride of rows of width `width` -> dst
 * (B, heads, L, hd) (+ bias[h * hd + j]). */
static void split_heads_strided(const double *x, int64_t B, int64_t L, int64_t width, int64_t col, int64_t heads,
                                int64_t hd, int64_t hstride, const double *bias, double *dst) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t l = 0; l < L; l++)
            for (int64_t h = 0; h < heads; h++)
                for (int64_t j = 0; j < hd; j++)
                    dst[((b * heads + h) * L + l) * hd + j] =
                        x[(b * L + l) * width + col + h * hstride + j] + (bias ? bias[h * hd + j] : 0.0);
}

/* x (B, L, heads * hd) at column offset `col` of rows of width `width` -> dst (B, heads, L, hd) (+ bias). */
static void split_heads(const double *x, int64_t B, int64_t L, int64_t width, int64_t col, int64_t heads, int64_t hd,
                        const double *bias, double *dst) {
    split_heads_strided(x, B, L, width, col, heads, hd, hd, bias, dst);
}

/* cat (B, heads, P + L, hd) = past (B, heads, P, hd) then new (B, heads, L, hd). */
static void concat_past(const double *past, const double *nw, int64_t B, int64_t heads, int64_t P, int64_t L, int64_t hd,
                        double *cat) {
    for (int64_t bh = 0; bh < B * heads; bh++) {
        if (P) memcpy(cat + bh * (P + L) * hd, past + bh * P * hd, (size_t)(P * hd) * sizeof *cat);
        memcpy(cat + (bh * (P + L) + P) * hd, nw + bh * L * hd, (size_t)(L * hd) * sizeof *cat);
    }
}

static double default_scale(const lt_node *n, int64_t H) {
    double s = lt_attr_float(n, "scale", 0.0f);
    return s != 0.0 ? s : 1.0 / sqrt((double)H);
}

/* ---- checks shared by the three ---- */

static lt_status check_key_mask(lt_ctx *ctx, const lt_node *n, const ct_arg *m, int64_t B, int64_t S, int64_t T,
                                const char *what) {
    if (!ct_present(m)) return LT_OK;
    if (m->dt != LT_INT32 && m->dt != LT_UNDEFINED) return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be int32", what);
    if (m->rank == 1) return ct_want_dim(ctx, n, m->d[0], B, "the length of the mask (batch_size)");
    if (m->rank == 2 || m->rank == 3) {
        LT_TRY(ct_want_dim(ctx, n, m->d[0], B, "the mask's batch dim"));
        if (m->rank == 3) LT_TRY(ct_want_dim(ctx, n, m->d[1], S, "the mask's sequence dim"));
        return ct_want_dim(ctx, n, m->d[m->rank - 1], T, "the mask's last dim (total sequence length)");
    }
    return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "%s of rank %d is not supported ((B), (B, T) or (B, S, T))", what,
                         m->rank);
}

static lt_status check_attn_bias(lt_ctx *ctx, const lt_node *n, const ct_arg *bi, lt_dtype dt, int64_t B, int64_t N,
                                 int64_t S, int64_t T) {
    if (!ct_present(bi)) return LT_OK;
    LT_TRY(ct_want_float(ctx, n, bi, dt, "attention_bias"));
    LT_TRY(ct_want_rank(ctx, n, bi, 4, "attention_bias"));
    if (bi->d[0] != 1) LT_TRY(ct_want_dim(ctx, n, bi->d[0], B, "attention_bias' dim 0 (batch or 1)"));
    if (bi->d[1] != 1) LT_TRY(ct_want_dim(ctx, n, bi->d[1], N, "attention_bias' dim 1 (heads or 1)"));
    LT_TRY(ct_want_dim(ctx, n, bi->d[2], S, "attention_bias' dim 2 (sequence length)"));
    return ct_want_dim(ctx, n, bi->d[3], T, "attention_bias' dim 3 (total sequence length)");
}

static lt_status want_absent(lt_ctx *ctx, const lt_node *n, const ct_arg *in, int i, const char *what) {
    if (ct_present(&in[i])) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "input %s is not supported", what);
    return LT_OK;
}

static lt_status heads_attr(lt_ctx *ctx, const lt_node *n, const char *name, int64_t *out) {
    return ct_attr_int(ctx, n, name, 0, 1, 1 << 20, out);
}

static lt_status mask_filter(lt_ctx *ctx, const lt_node *n, double *out) {
    *out = lt_attr_float(n, "mask_filter_value", -10000.0f);
    if (!isfinite(*out)) return lt_node_error(ctx, n, LT_ERR_INVALID, "mask_filter_value must be finite");
    return LT_OK;
}

/* ---- Attention ---- */

lt_status lt_attention_geom(lt_ctx *ctx, const lt_node *n, const int64_t *xd, const int64_t *wd, int past_rank,
                            const int64_t *pd, lt_attention *g) {
    LT_TRY(heads_attr(ctx, n, "num_heads", &g->N));
    if (lt_attr_int(n, "do_rotary", 0)) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "do_rotary is not supported");
    if (lt_attr_int(n, "past_present_share_buffer", 0))
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "past_present_share_buffer is not supported");
    g->B = xd[0];
    g->S = xd[1];
    const int64_t *qkv;
    int c = lt_attr_ints(n, "qkv_hidden_sizes", &qkv);
    if (qkv && c != 3) return lt_node_error(ctx, n, LT_ERR_INVALID, "qkv_hidden_sizes must have 3 entries");
    if (qkv) {
        g->Dq = qkv[0], g->Dk = qkv[1], g->Dv = qkv[2];
        if (g->Dq < 1 || g->Dk != g->Dq || g->Dv < 1)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "qkv_hidden_sizes must be positive with equal Q and K sizes");
        if (wd[1] >= 0 && wd[1] != g->Dq + g->Dk + g->Dv)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "weights have %lld columns, qkv_hidden_sizes sum to %lld",
                                 (long long)wd[1], (long long)(g->Dq + g->Dk + g->Dv));
    } else {
        if (wd[1] < 0 || wd[1] % 3) return lt_node_error(ctx, n, LT_ERR_INVALID, "weights' columns must be 3 * hidden size");
        g->Dq = g->Dk = g->Dv = wd[1] / 3;
    }
    if (g->Dq % g->N || g->Dv % g->N)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "hidden sizes %lld, %lld are not multiples of num_heads %lld",
                             (long long)g->Dq, (long long)g->Dv, (long long)g->N);
    g->H = g->Dq / g->N;
    g->Hv = g->Dv / g->N;
    g->P = 0;
    if (past_rank >= 0) {
        if (g->H != g->Hv) return lt_node_error(ctx, n, LT_ERR_INVALID, "past needs equal Q, K and V hidden sizes");
        if (past_rank != 5 || pd[0] != 2 || (pd[1] >= 0 && g->B >= 0 && pd[1] != g->B) || pd[2] != g->N || pd[4] != g->H)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "past must be (2, batch, num_heads, past_length, head_size)");
        g->P = pd[3];
    }
    g->T = g->P >= 0 && g->S >= 0 ? g->P + g->S : -1;
    return LT_OK;
}

static lt_status check_attention(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *x = &in[0], *w = &in[1], *bias = &in[2], *past = &in[4];
    LT_TRY(ct_want_float(ctx, n, x, LT_UNDEFINED, "input"));
    LT_TRY(ct_want_rank(ctx, n, x, 3, "input"));
    LT_TRY(ct_want_float(ctx, n, w, x->dt, "weights"));
    LT_TRY(ct_want_rank(ctx, n, w, 2, "weights"));
    LT_TRY(ct_want_dim(ctx, n, w->d[0], x->d[2], "the weights' rows (input hidden size)"));
    LT_TRY(want_absent(ctx, n, in, 6, "past_sequence_length"));
    double filter;
    LT_TRY(mask_filter(ctx, n, &filter));
    lt_attention g;
    LT_TRY(lt_attention_geom(ctx, n, x->d, w->d, ct_present(past) ? past->rank : -1, past->d, &g));
    if (ct_present(past)) LT_TRY(ct_want_float(ctx, n, past, x->dt, "past"));
    if (ct_present(bias)) {
        LT_TRY(ct_want_float(ctx, n, bias, x->dt, "bias"));
        LT_TRY(ct_want_vec(ctx, n, bias, g.Dq + g.Dk + g.Dv, "bias"));
    }
    LT_TRY(check_key_mask(ctx, n, &in[3], g.B, g.S, g.T, "mask_index"));
    LT_TRY(check_attn_bias(ctx, n, &in[5], x->dt, g.B, g.N, g.S, g.T));
    int64_t od[3] = {g.B, g.S, g.Dv}, pd[5] = {2, g.B, g.N, g.T, g.H};
    ct_out_set(&out[0], x->dt, 3, od);
    if (n->n_out > 1) {
        if (g.H != g.Hv) return lt_node_error(ctx, n, LT_ERR_INVALID, "present needs equal K and V hidden sizes");
        ct_out_set(&out[1], x->dt, 5, pd);
    }
    return LT_OK;
}

static lt_status compute_attention(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *x = &in[0], *past = &in[4];
    lt_attention g;
    LT_TRY(lt_attention_geom(ev->ctx, n, x->d, in[1].d, ct_present(past) ? past->rank : -1, past->d, &g));
    int64_t W = g.Dq + g.Dk + g.Dv, rows = g.B * g.S;
    double *qkv = lt_mem_alloc((size_t)(rows * W) * sizeof(double));
    double *q = lt_mem_alloc((size_t)(rows * g.Dq) * sizeof(double));
    double *kn = lt_mem_alloc((size_t)(rows * g.Dk) * sizeof(double));
    double *vn = lt_mem_alloc((size_t)(rows * g.Dv) * sizeof(double));
    double *k = lt_mem_alloc((size_t)(g.B * g.N * g.T * g.H) * sizeof(double) + 8);
    double *v = lt_mem_alloc((size_t)(g.B * g.N * g.T * g.Hv) * sizeof(double) + 8);
    lt_status s = LT_OK;
    if (!qkv || !q || !kn || !vn || !k || !v) s = lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory");
    if (!s) {
        ct_gemm(rows, W, x->d[2], x->v, in[1].v, qkv);
        const double *bias = ct_present(&in[2]) ? in[2].v : NULL;
        split_heads(qkv, g.B, g.S, W, 0, g.N, g.H, bias, q);
        split_heads(qkv, g.B, g.S, W, g.Dq, g.N, g.H, bias ? bias + g.Dq : NULL, kn);
        split_heads(qkv, g.B, g.S, W, g.Dq + g.Dk, g.N, g.Hv, bias ? bias + g.Dq + g.Dk : NULL, vn);
        const double *pk = ct_present(past) ? past->v : NULL;
        concat_past(pk, kn, g.B, g.N, g.P, g.S, g.H, k);
        concat_past(pk ? pk + g.B * g.N * g.P * g.H : NULL, vn, g.B, g.N, g.P, g.S, g.Hv, v);
        attn a = {.B = g.B, .N = g.N, .Nkv = g.N, .S = g.S, .T = g.T, .H = g.H, .Hv = g.Hv, .P = g.P,
                  .scale = default_scale(n, g.H), .causal = lt_attr_int(n, "unidirectional", 0) != 0,
                  .mask = &in[3], .bias = &in[5]};
        s = mask_filter(ev->ctx, n, &a.filter);
        if (!s) s = attend(ev, n, &a, q, k, v, out[0].v);
        if (!s && n->n_out > 1 && out[1].v) {
            int64_t half = g.B * g.N * g.T * g.H;
            memcpy(out[1].v, k, (size_t)half * sizeof(double));
            memcpy(out[1].v + half, v, (size_t)half * sizeof(double));
        }
    }
    lt_mem_free(qkv), lt_mem_free(q), lt_mem_free(kn), lt_mem_free(vn), lt_mem_free(k), lt_mem_free(v);
    return s;
}

/* ---- MultiHeadAttention ---- */

lt_status lt_mha_geom(lt_ctx *ctx, const lt_node *n, int qr, const int64_t *qd, int kr, const int64_t *kd, int vr,
                      const int64_t *vd, int pr, const int64_t *pd, lt_mha *g) {
    LT_TRY(heads_attr(ctx, n, "num_heads", &g->N));
    int64_t N = g->N;
    g->B = qd[0];
    g->S = qd[1];
    g->P = 0;
    if (qr == 5) { /* packed QKV (B, S, N, 3, H) */
        if (kr >= 0 || vr >= 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "packed QKV takes no key or value");
        if (qd[2] != N || qd[3] != 3) return lt_node_error(ctx, n, LT_ERR_INVALID, "packed QKV must be (B, S, N, 3, H)");
        g->form = LT_MHA_PACKED_QKV;
        g->H = g->Hv = qd[4];
        g->L = g->S;
    } else {
        if (qr != 3) return lt_node_error(ctx, n, LT_ERR_INVALID, "query must be (B, S, D) or (B, S, N, 3, H)");
        if (qd[2] < 0 || qd[2] % N) return lt_node_error(ctx, n, LT_ERR_INVALID, "query's hidden size is not a multiple of num_heads");
        g->H = qd[2] / N;
        if (kr == 5) { /* packed KV (B, L, N, 2, H) */
            if (vr >= 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "packed KV takes no value");
            if (kd[2] != N || kd[3] != 2 || kd[4] != g->H)
                return lt_node_error(ctx, n, LT_ERR_INVALID, "packed KV must be (B, L, N, 2, H)");
            g->form = LT_MHA_PACKED_KV;
            g->L = kd[1];
            g->Hv = g->H;
        } else if (kr == 3 && vr == 3) {
            g->form = LT_MHA_BSD;
            g->L = kd[1];
            if (kd[2] != qd[2]) return lt_node_error(ctx, n, LT_ERR_INVALID, "key's hidden size differs from query's");
            if (vd[1] != kd[1] || vd[2] < 0 || vd[2] % N)
                return lt_node_error(ctx, n, LT_ERR_INVALID, "value must be (B, L, Dv), Dv a multiple of num_heads");
            g->Hv = vd[2] / N;
        } else if (kr == 4 && vr == 4) {
            g->form = LT_MHA_BNSH;
            if (kd[1] != N || kd[3] != g->H || vd[1] != N || vd[2] != kd[2])
                return lt_node_error(ctx, n, LT_ERR_INVALID, "key and value must be (B, N, L, H)");
            g->L = kd[2];
            g->Hv = vd[3];
        } else {
            return lt_node_error(ctx, n, LT_ERR_INVALID, "key and value must both be (B, L, D) or (B, N, L, H), or packed");
        }
        if (kd[0] != g->B) return lt_node_error(ctx, n, LT_ERR_INVALID, "key's batch differs from query's");
    }
    if (pr >= 0) {
        if (g->form != LT_MHA_BSD)
            return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "past_key / past_value need (B, L, D) key and value");
        if (pr != 4 || pd[0] != g->B || pd[1] != N || pd[3] != g->H || g->H != g->Hv)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "past_key and past_value must be (B, N, P, H)");
        g->P = pd[2];
    }
    g->T = g->P + g->L;
    return LT_OK;
}

static lt_status check_mha(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *q = &in[0], *k = &in[1], *v = &in[2], *pk = &in[6], *pv = &in[7];
    LT_TRY(ct_want_float(ctx, n, q, LT_UNDEFINED, "query"));
    for (int i = 1; i <= 7; i++)
        if (i != 4 && ct_present(&in[i])) LT_TRY(ct_want_float(ctx, n, &in[i], q->dt, "key, value, bias and past"));
    LT_TRY(want_absent(ctx, n, in, 8, "past_sequence_length"));
    LT_TRY(want_absent(ctx, n, in, 9, "cache_indirection"));
    if (n->n_out > 3 && n->out[3]) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "output qk is not supported");
    if (ct_present(pk) != ct_present(pv)) return lt_node_error(ctx, n, LT_ERR_INVALID, "past_key and past_value go together");
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < in[i].rank; j++)
            if (in[i].d[j] < 0) { /* shapes not known yet: outputs of unknown shape */
                for (int o = 0; o < n->n_out && o < 3; o++) out[o] = (ct_out){.rank = -1, .dt = q->dt};
                return LT_OK;
            }
    if (ct_present(pk))
        for (int j = 0; j < 4; j++)
            if (pv->rank != pk->rank || pv->d[j] != pk->d[j])
                return lt_node_error(ctx, n, LT_ERR_INVALID, "past_key and past_value have different shapes");
    double filter;
    LT_TRY(mask_filter(ctx, n, &filter));
    lt_mha g;
    LT_TRY(lt_mha_geom(ctx, n, q->rank, q->d, ct_present(k) ? k->rank : -1, k->d, ct_present(v) ? v->rank : -1, v->d,
                       ct_present(pk) ? pk->rank : -1, pk->d, &g));
    if (ct_present(&in[3])) {
        if (g.form == LT_MHA_BNSH) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "bias with (B, N, L, H) key and value");
        LT_TRY(ct_want_vec(ctx, n, &in[3], g.N * (2 * g.H + g.Hv), "bias"));
    }
    LT_TRY(check_key_mask(ctx, n, &in[4], g.B, g.S, g.T, "key_padding_mask"));
    LT_TRY(check_attn_bias(ctx, n, &in[5], q->dt, g.B, g.N, g.S, g.T));
    int64_t od[3] = {g.B, g.S, g.N * g.Hv}, kd[4] = {g.B, g.N, g.T, g.H}, vd[4] = {g.B, g.N, g.T, g.Hv};
    ct_out_set(&out[0], q->dt, 3, od);
    if (n->n_out > 1) ct_out_set(&out[1], q->dt, 4, kd);
    if (n->n_out > 2) ct_out_set(&out[2], q->dt, 4, vd);
    return LT_OK;
}

static lt_status compute_mha(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *q = &in[0], *k = &in[1], *v = &in[2], *pk = &in[6];
    lt_mha g;
    LT_TRY(lt_mha_geom(ev->ctx, n, q->rank, q->d, ct_present(k) ? k->rank : -1, k->d, ct_present(v) ? v->rank : -1, v->d,
                       ct_present(pk) ? pk->rank : -1, pk->d, &g));
    int64_t B = g.B, N = g.N, H = g.H, Hv = g.Hv, D = N * H, Dv = N * Hv;
    double *qh = lt_mem_alloc((size_t)(B * N * g.S * H) * sizeof(double) + 8);
    double *kn = lt_mem_alloc((size_t)(B * N * g.L * H) * sizeof(double) + 8);
    double *vn = lt_mem_alloc((size_t)(B * N * g.L * Hv) * sizeof(double) + 8);
    double *kc = lt_mem_alloc((size_t)(B * N * g.T * H) * sizeof(double) + 8);
    double *vc = lt_mem_alloc((size_t)(B * N * g.T * Hv) * sizeof(double) + 8);
    lt_status s = LT_OK;
    if (!qh || !kn || !vn || !kc || !vc) s = lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory");
    if (!s) {
        const double *bias = ct_present(&in[3]) ? in[3].v : NULL;
        const double *bq = bias, *bk = bias ? bias + D : NULL, *bv = bias ? bias + 2 * D : NULL;
        switch (g.form) {
        case LT_MHA_PACKED_QKV: /* (B, S, N, 3, H): head h's q, k, v at columns (3h + 0, 1, 2) * H */
            split_heads_strided(q->v, B, g.S, N * 3 * H, 0, N, H, 3 * H, bq, qh);
            split_heads_strided(q->v, B, g.S, N * 3 * H, H, N, H, 3 * H, bk, kn);
            split_heads_strided(q->v, B, g.S, N * 3 * H, 2 * H, N, H, 3 * H, bv, vn);
            break;
        case LT_MHA_PACKED_KV: /* key (B, L, N, 2, H) */
            split_heads(q->v, B, g.S, D, 0, N, H, bq, qh);
            split_heads_strided(k->v, B, g.L, N * 2 * H, 0, N, H, 2 * H, bk, kn);
            split_heads_strided(k->v, B, g.L, N * 2 * H, H, N, H, 2 * H, bv, vn);
            break;
        case LT_MHA_BSD:
            split_heads(q->v, B, g.S, D, 0, N, H, bq, qh);
            split_heads(k->v, B, g.L, D, 0, N, H, bk, kn);
            split_heads(v->v, B, g.L, Dv, 0, N, Hv, bv, vn);
            break;
        case LT_MHA_BNSH:
            split_heads(q->v, B, g.S, D, 0, N, H, NULL, qh);
            memcpy(kn, k->v, (size_t)(B * N * g.L * H) * sizeof(double));
            memcpy(vn, v->v, (size_t)(B * N * g.L * Hv) * sizeof(double));
            break;
        }
        concat_past(ct_present(pk) ? pk->v : NULL, kn, B, N, g.P, g.L, H, kc);
        concat_past(ct_present(pk) ? in[7].v : NULL, vn, B, N, g.P, g.L, Hv, vc);
        attn a = {.B = B, .N = N, .Nkv = N, .S = g.S, .T = g.T, .H = H, .Hv = Hv, .P = g.P,
                  .scale = default_scale(n, H), .causal = lt_attr_int(n, "unidirectional", 0) != 0,
                  .mask = &in[4], .bias = &in[5]};
        s = mask_filter(ev->ctx, n, &a.filter);
        if (!s) s = attend(ev, n, &a, qh, kc, vc, out[0].v);
        if (!s && n->n_out > 1 && out[1].v) memcpy(out[1].v, kc, (size_t)out[1].numel * sizeof(double));
        if (!s && n->n_out > 2 && out[2].v) memcpy(out[2].v, vc, (size_t)out[2].numel * sizeof(double));
    }
    lt_mem_free(qh), lt_mem_free(kn), lt_mem_free(vn), lt_mem_free(kc), lt_mem_free(vc);
    return s;
}

/* ---- GroupQueryAttention ---- */

lt_status lt_gqa_geom(lt_ctx *ctx, const lt_node *n, const int64_t *qd, bool packed, const int64_t *kd, int pr,
                      const int64_t *pd, lt_gqa *g) {
    LT_TRY(heads_attr(ctx, n, "num_heads", &g->N));
    LT_TRY(heads_attr(ctx, n, "kv_num_heads", &g->Nkv));
    if (g->N % g->Nkv) return lt_node_error(ctx, n, LT_ERR_INVALID, "num_heads is not a multiple of kv_num_heads");
    int64_t qo = lt_attr_int(n, "qk_output", 0);
    if (qo) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "qk_output is not supported");
    g->B = qd[0];
    g->S = qd[1];
    int64_t parts = packed ? g->N + 2 * g->Nkv : g->N;
    if (qd[2] < 0 || qd[2] % parts) return lt_node_error(ctx, n, LT_ERR_INVALID, "query's hidden size does not split into heads");
    g->H = qd[2] / parts;
    if (!packed && (kd[0] != g->B || kd[1] != g->S || kd[2] != g->Nkv * g->H))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "key and value must be (B, S, kv_num_heads * head_size)");
    g->P = 0;
    if (pr >= 0) {
        if (pr != 4 || pd[0] != g->B || pd[1] != g->Nkv || pd[3] != g->H)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "past_key and past_value must be (B, kv_num_heads, P, H)");
        g->P = pd[2];
    }
    g->T = g->P + g->S;
    g->do_rotary = lt_attr_int(n, "do_rotary", 0) != 0;
    g->interleaved = lt_attr_int(n, "rotary_interleaved", 0) != 0;
    g->window = lt_attr_int(n, "local_window_size", -1);
    g->softcap = lt_attr_float(n, "softcap", 0.0f);
    if (!isfinite(g->softcap) || g->softcap < 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "softcap must be >= 0");
    return LT_OK;
}

/* seqlens_k and total_sequence_length (when known) describe unpadded batches of T tokens. */
static lt_status gqa_lengths(lt_ctx *ctx, const lt_node *n, const lt_tensor *sk, const lt_tensor *tot, const lt_gqa *g) {
    if (tot && tot->numel == 1 && lt_load_i64(tot->data, tot->dtype, 0) != g->T)
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED,
                             "total_sequence_length %lld differs from past + new = %lld (shared kv buffers are not supported)",
                             (long long)lt_load_i64(tot->data, tot->dtype, 0), (long long)g->T);
    for (int64_t b = 0; sk && b < sk->numel; b++)
        if (lt_load_i64(sk->data, sk->dtype, b) != g->T - 1)
            return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED,
                                 "seqlens_k[%lld] = %lld: padded batches are not supported (every entry must be %lld)",
                                 (long long)b, (long long)lt_load_i64(sk->data, sk->dtype, b), (long long)(g->T - 1));
    return LT_OK;
}

static lt_status check_gqa(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *q = &in[0], *k = &in[1], *v = &in[2], *pk = &in[3], *pv = &in[4];
    LT_TRY(ct_want_float(ctx, n, q, LT_UNDEFINED, "query"));
    LT_TRY(ct_want_rank(ctx, n, q, 3, "query"));
    if (n->n_out > 3 && n->out[3]) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "output output_qk is not supported");
    bool packed = !ct_present(k);
    if (ct_present(k) != ct_present(v)) return lt_node_error(ctx, n, LT_ERR_INVALID, "key and value go together");
    if (ct_present(pk) != ct_present(pv)) return lt_node_error(ctx, n, LT_ERR_INVALID, "past_key and past_value go together");
    for (int i = 1; i <= 4; i++)
        if (ct_present(&in[i])) LT_TRY(ct_want_float(ctx, n, &in[i], q->dt, "key, value and past"));
    if (!packed) {
        LT_TRY(ct_want_rank(ctx, n, k, 3, "key"));
        for (int j = 0; j < 3; j++) LT_TRY(ct_want_dim(ctx, n, v->d[j], k->d[j], "a dim of value"));
    }
    if (ct_present(pk))
        for (int j = 0; j < 4 && j < pk->rank; j++) LT_TRY(ct_want_dim(ctx, n, pv->d[j], pk->d[j], "a dim of past_value"));
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < in[i].rank; j++)
            if (in[i].d[j] < 0) {
                for (int o = 0; o < n->n_out && o < 3; o++) out[o] = (ct_out){.rank = -1, .dt = q->dt};
                return LT_OK;
            }
    lt_gqa g;
    LT_TRY(lt_gqa_geom(ctx, n, q->d, packed, k->d, ct_present(pk) ? pk->rank : -1, pk->d, &g));
    const ct_arg *sk = &in[5], *tot = &in[6];
    if (!ct_present(sk) || !ct_present(tot) || (sk->dt != LT_INT32 && sk->dt != LT_UNDEFINED) ||
        (tot->dt != LT_INT32 && tot->dt != LT_UNDEFINED))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "seqlens_k and total_sequence_length (int32) are required");
    LT_TRY(ct_want_vec(ctx, n, sk, g.B, "seqlens_k"));
    if (ct_numel(tot->rank, tot->d) != 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "total_sequence_length must be a scalar");
    LT_TRY(gqa_lengths(ctx, n, sk->c, tot->c, &g));
    if (g.do_rotary) {
        const ct_arg *c = &in[7], *s = &in[8];
        if (!ct_present(c) || !ct_present(s)) return lt_node_error(ctx, n, LT_ERR_INVALID, "do_rotary needs cos_cache and sin_cache");
        LT_TRY(ct_want_float(ctx, n, c, q->dt, "cos_cache"));
        LT_TRY(ct_want_float(ctx, n, s, q->dt, "sin_cache"));
        if (c->rank != 2 || s->rank != 2 || c->d[0] != s->d[0] || c->d[1] != s->d[1] || 2 * c->d[1] > g.H || c->d[1] < 1)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "cos_cache and sin_cache must be (max_positions, R / 2), R <= head size");
        if (ct_present(&in[9])) {
            if (in[9].dt != LT_INT64) return lt_node_error(ctx, n, LT_ERR_INVALID, "position_ids must be int64");
            if (in[9].rank != 2 || in[9].d[0] != g.B || in[9].d[1] != g.S)
                return lt_node_error(ctx, n, LT_ERR_INVALID, "position_ids must be (batch, sequence)");
            LT_TRY(ct_check_positions(ctx, n, in[9].c, 0, c->d[0]));
        } else if (g.T > c->d[0]) {
            return lt_node_error(ctx, n, LT_ERR_INVALID, "position %lld is outside the caches' %lld positions",
                                 (long long)(g.T - 1), (long long)c->d[0]);
        }
    }
    LT_TRY(check_attn_bias(ctx, n, &in[10], q->dt, g.B, g.N, g.S, g.T));
    if (ct_present(&in[11])) {
        LT_TRY(ct_want_float(ctx, n, &in[11], q->dt, "head_sink"));
        LT_TRY(ct_want_vec(ctx, n, &in[11], g.N, "head_sink"));
    }
    int64_t od[3] = {g.B, g.S, g.N * g.H}, kd[4] = {g.B, g.Nkv, g.T, g.H};
    ct_out_set(&out[0], q->dt, 3, od);
    if (n->n_out > 1) ct_out_set(&out[1], q->dt, 4, kd);
    if (n->n_out > 2) ct_out_set(&out[2], q->dt, 4, kd);
    return LT_OK;
}

/* x (B, heads, S, H) rotated in place at positions pos(b, s). */
static lt_status gqa_rotate(lt_eval *ev, const lt_node *n, double *x, const lt_gqa *g, int64_t heads, const ct_arg *in,
                            double *tmp) {
    const ct_arg *c = &in[7], *sn = &in[8], *pid = &in[9];
    int64_t half = c->d[1];
    for (int64_t b = 0; b < g->B; b++)
        for (int64_t s = 0; s < g->S; s++) {
            double pv = ct_present(pid) ? pid->v[b * g->S + s] : (double)(g->P + s);
            if (!(pv >= 0 && pv < (double)c->d[0]))
                return lt_op_error(ev, n, LT_ERR_INVALID, "position %.0f is outside the caches' %lld positions", pv,
                                   (long long)c->d[0]);
            int64_t p = (int64_t)pv;
            for (int64_t h = 0; h < heads; h++) {
                double *row = x + ((b * heads + h) * g->S + s) * g->H;
                ct_rotate(row, tmp, g->H, 2 * half, c->v + p * half, sn->v + p * half, g->interleaved);
                memcpy(row, tmp, (size_t)g->H * sizeof *row);
            }
        }
    return LT_OK;
}

static lt_status compute_gqa(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *q = &in[0], *k = &in[1], *pk = &in[3];
    bool packed = !ct_present(k);
    lt_gqa g;
    LT_TRY(lt_gqa_geom(ev->ctx, n, q->d, packed, k->d, ct_present(pk) ? pk->rank : -1, pk->d, &g));
    LT_TRY(gqa_lengths(ev->ctx, n, in[5].c, in[6].c, &g));
    int64_t B = g.B, S = g.S, H = g.H, N = g.N, Nkv = g.Nkv, width = packed ? (N + 2 * Nkv) * H : N * H;
    double *qh = lt_mem_alloc((size_t)(B * N * S * H) * sizeof(double) + 8);
    double *kn = lt_mem_alloc((size_t)(B * Nkv * S * H) * sizeof(double) + 8);
    double *vn = lt_mem_alloc((size_t)(B * Nkv * S * H) * sizeof(double) + 8);
    double *tmp = lt_mem_alloc((size_t)H * sizeof(double) + 8);
    lt_status s = LT_OK;
    if (!qh || !kn || !vn || !tmp) s = lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory");
    if (!s) {
        split_heads(q->v, B, S, width, 0, N, H, NULL, qh);
        split_heads(packed ? q->v : k->v, B, S, packed ? width : Nkv * H, packed ? N * H : 0, Nkv, H, NULL, kn);
        split_heads(packed ? q->v : in[2].v, B, S, packed ? width : Nkv * H, packed ? (N + Nkv) * H : 0, Nkv, H, NULL, vn);
        if (g.do_rotary) s = gqa_rotate(ev, n, qh, &g, N, in, tmp);
        if (!s && g.do_rotary) s = gqa_rotate(ev, n, kn, &g, Nkv, in, tmp);
    }
    lt_mem_free(tmp);
    /* present key / value are the attention's K and V: make them even when not requested */
    double *kc = s ? NULL : (n->n_out > 1 && out[1].v ? out[1].v : lt_mem_alloc((size_t)(B * Nkv * g.T * H) * sizeof(double) + 8));
    double *vc = s ? NULL : (n->n_out > 2 && out[2].v ? out[2].v : lt_mem_alloc((size_t)(B * Nkv * g.T * H) * sizeof(double) + 8));
    if (!s && (!kc || !vc)) s = lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory");
    if (!s) {
        concat_past(ct_present(pk) ? pk->v : NULL, kn, B, Nkv, g.P, S, H, kc);
        concat_past(ct_present(pk) ? in[4].v : NULL, vn, B, Nkv, g.P, S, H, vc);
        attn a = {.B = B, .N = N, .Nkv = Nkv, .S = S, .T = g.T, .H = H, .Hv = H, .P = g.P,
                  .scale = default_scale(n, H), .causal = true, .window = g.window, .exclude = true,
                  .softcap = g.softcap, .smooth = lt_attr_int(n, "smooth_softmax", 0) != 0, .bias = &in[10],
                  .sink = &in[11]};
        s = attend(ev, n, &a, qh, kc, vc, out[0].v);
    }
    if (kc && !(n->n_out > 1 && kc == out[1].v)) lt_mem_free(kc);
    if (vc && !(n->n_out > 2 && vc == out[2].v)) lt_mem_free(vc);
    lt_mem_free(qh), lt_mem_free(kn), lt_mem_free(vn);
    return s;
}

const ct_op ct_ops_attention[] = {
    {LT_OP_MsAttention, 2, 7, check_attention, compute_attention},
    {LT_OP_MultiHeadAttention, 1, 10, check_mha, compute_mha},
    {LT_OP_GroupQueryAttention, 1, 12, check_gqa, compute_gqa},
    {0, 0, 0, NULL, NULL},
};
