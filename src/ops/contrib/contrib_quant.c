/* contrib_quant.c — com.microsoft ops of onnxruntime's dynamic quantizer and BERT embedding fusion:
 *   DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?): A (float) quantized to uint8 as
 *     ONNX DynamicQuantizeLinear does (float32 arithmetic, one scale and zero point for all of A),
 *     then Y = (Aq - a_zp) x (B - b_zp) (exact integer sums) * (a_scale * b_scale) + bias.
 *   MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?):
 *     Y = (A - a_zp) x (B - b_zp) * (a_scale * b_scale) + bias.
 *   For both: A is N-D (matmul over its last dim), B int8 / uint8 [K, N]; b_scale / b_zero_point one
 *   value or one per column [N]; a_scale / a_zero_point one value; the product of the scales and
 *   each multiply and add rounded to float, as onnxruntime's output processor does.
 *   EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
 *     segment_embedding?, gamma, beta?, mask?, position_ids?) -> output, mask_index, embedding_sum?:
 *     s = word[input_ids] + position[p] (+ segment[segment_ids]), p = position_ids ([B, S], or [1, S]
 *     for every batch row) or the token's index in the sequence; output = LayerNorm(s) * gamma + beta
 *     over the hidden dim (epsilon, default 1e-12); mask_index [B] int32 = the number of mask
 *     entries equal to 1 per batch row (0 without a mask); embedding_sum = s. Ids are int32; an id
 *     out of its table's range is an error naming the node.
 */
#include "contrib_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool is_q8(lt_dtype dt) { return dt == LT_INT8 || dt == LT_UINT8; }

static lt_status want_q8(lt_ctx *ctx, const lt_node *n, const ct_arg *a, const char *what) {
    if (a->dt != LT_UNDEFINED && !is_q8(a->dt))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be int8 or uint8, not %s", what, lt_dtype_name(a->dt));
    return LT_OK;
}

/* A scale or zero point: one value, or (per_col) a 1-D tensor of N values. */
static lt_status want_qparam(lt_ctx *ctx, const lt_node *n, const ct_arg *a, lt_dtype dt, bool per_col, int64_t N,
                             const char *what) {
    if (!ct_present(a)) return LT_OK;
    if (a->dt != LT_UNDEFINED && dt != LT_UNDEFINED && a->dt != dt)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be %s, not %s", what, lt_dtype_name(dt), lt_dtype_name(a->dt));
    int64_t cnt = ct_numel(a->rank, a->d);
    if (a->rank <= 1 && (cnt == 1 || cnt < 0)) return LT_OK;
    if (per_col && a->rank == 1) return ct_want_dim(ctx, n, a->d[0], N, "the length of a per-column scale / zero point");
    return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must hold one value%s", what, per_col ? " or one per column of B" : "");
}

/* The rules shared by both products: A (a_rank >= 1) x B [K, N]; b_scale, b_zero_point, bias at
 * in[bs], in[bz], in[bi]; Y's shape and dtype float. */
static lt_status check_qmm(lt_ctx *ctx, const lt_node *n, const ct_arg *in, int bs, int bz, int bi, ct_out *out) {
    const ct_arg *a = &in[0], *b = &in[1];
    LT_TRY(want_q8(ctx, n, b, "B"));
    if (a->rank < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "A must have rank >= 1");
    if (b->rank != 2) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "B must be a matrix [K, N], not of rank %d", b->rank);
    LT_TRY(ct_want_dim(ctx, n, a->d[a->rank - 1], b->d[0], "the last dim of A (K)"));
    int64_t N = b->d[1];
    LT_TRY(want_qparam(ctx, n, &in[bs], LT_FLOAT, true, N, "b_scale"));
    LT_TRY(want_qparam(ctx, n, &in[bz], b->dt, true, N, "b_zero_point"));
    if (ct_present(&in[bi])) {
        LT_TRY(ct_want_float(ctx, n, &in[bi], LT_FLOAT, "bias"));
        LT_TRY(ct_want_vec(ctx, n, &in[bi], N, "bias"));
    }
    int64_t od[LT_MAX_RANK];
    memcpy(od, a->d, sizeof od);
    od[a->rank - 1] = N;
    ct_out_set(&out[0], LT_FLOAT, a->rank, od);
    return LT_OK;
}

static double at_or_first(const ct_arg *a, int64_t i, double dflt) {
    if (!ct_present(a)) return dflt;
    return a->numel == 1 ? a->v[0] : a->v[i];
}

/* Y = (A - azp) x (B - bzp) * float(a_scale * b_scale) + bias, A's values in av (integers). */
static void qmm_compute(const double *av, double azp, float as, const ct_arg *in, int bs, int bz, int bi, ct_out *y) {
    const ct_arg *b = &in[1];
    int64_t K = b->d[0], N = b->d[1], M = N ? y->numel / N : 0;
    for (int64_t j = 0; j < N; j++) {
        double bzp = at_or_first(&in[bz], j, 0.0);
        float mult = (float)(as * (float)at_or_first(&in[bs], j, 0.0));
        for (int64_t i = 0; i < M; i++) {
            int64_t acc = 0;
            for (int64_t k = 0; k < K; k++) acc += (int64_t)(av[i * K + k] - azp) * (int64_t)(b->v[k * N + j] - bzp);
            float r = (float)acc * mult;
            if (ct_present(&in[bi])) r = r + (float)in[bi].v[j];
            y->v[i * N + j] = r;
        }
    }
}

/* ---- DynamicQuantizeMatMul ---- */

static lt_status check_dqmm(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    LT_TRY(ct_want_float(ctx, n, &in[0], LT_FLOAT, "A"));
    return check_qmm(ctx, n, in, 2, 3, 4, out);
}

static lt_status compute_dqmm(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *a = &in[0];
    float mx = 0.0f, mn = 0.0f;
    for (int64_t i = 0; i < a->numel; i++) {
        float x = (float)a->v[i];
        if (x > mx) mx = x;
        if (x < mn) mn = x;
    }
    float scale = (mx == mn ? 1.0f : (mx - mn)) / 255.0f;
    float zp0 = 0.0f - mn / scale;
    float zpi = rintf(zp0 < 0.0f ? 0.0f : zp0 > 255.0f ? 255.0f : zp0);
    double *q = lt_mem_alloc((size_t)(a->numel ? a->numel : 1) * sizeof *q);
    if (!q) return lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory (quantized A)");
    for (int64_t i = 0; i < a->numel; i++) {
        float v = rintf((float)a->v[i] / scale) + zpi;
        if (v != v) v = zpi;
        q[i] = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
    }
    qmm_compute(q, zpi, scale, in, 2, 3, 4, &out[0]);
    lt_mem_free(q);
    return LT_OK;
}

/* ---- MatMulIntegerToFloat ---- */

static lt_status check_mmitf(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    LT_TRY(want_q8(ctx, n, &in[0], "A"));
    LT_TRY(want_qparam(ctx, n, &in[2], LT_FLOAT, false, 0, "a_scale"));
    LT_TRY(want_qparam(ctx, n, &in[4], in[0].dt, false, 0, "a_zero_point"));
    return check_qmm(ctx, n, in, 3, 5, 6, out);
}

static lt_status compute_mmitf(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    (void)ev;
    (void)n;
    qmm_compute(in[0].v, at_or_first(&in[4], 0, 0.0), (float)in[2].v[0], in, 3, 5, 6, &out[0]);
    return LT_OK;
}

/* ---- EmbedLayerNormalization ---- */

static lt_status want_ids(lt_ctx *ctx, const lt_node *n, const ct_arg *a, const ct_arg *ids, const char *what) {
    if (!ct_present(a)) return LT_OK;
    if (a->dt != LT_UNDEFINED && a->dt != LT_INT32)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be int32, not %s", what, lt_dtype_name(a->dt));
    LT_TRY(ct_want_rank(ctx, n, a, 2, what));
    if (a == ids) return LT_OK;
    char buf[96];
    snprintf(buf, sizeof buf, "the batch dim of %s", what);
    LT_TRY(ct_want_dim(ctx, n, a->d[0], ids->d[0], buf));
    snprintf(buf, sizeof buf, "the sequence dim of %s", what);
    return ct_want_dim(ctx, n, a->d[1], ids->d[1], buf);
}

static lt_status want_table(lt_ctx *ctx, const lt_node *n, const ct_arg *a, int64_t H, const char *what) {
    LT_TRY(ct_want_float(ctx, n, a, LT_FLOAT, what));
    LT_TRY(ct_want_rank(ctx, n, a, 2, what));
    char buf[96];
    snprintf(buf, sizeof buf, "the hidden dim of %s", what);
    return ct_want_dim(ctx, n, a->d[1], H, buf);
}

static lt_status check_embed(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *ids = &in[0], *word = &in[2], *pos = &in[3], *pids = &in[8];
    if (!(lt_attr_float(n, "epsilon", 1e-12f) >= 0)) return lt_node_error(ctx, n, LT_ERR_INVALID, "epsilon must be >= 0");
    if (!ct_present(word) || !ct_present(pos) || !ct_present(&in[5]))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "word_embedding, position_embedding and gamma are required");
    LT_TRY(want_ids(ctx, n, ids, ids, "input_ids"));
    if (ct_present(&in[1]) != ct_present(&in[4]))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "segment_ids and segment_embedding must be given together");
    LT_TRY(want_ids(ctx, n, &in[1], ids, "segment_ids"));
    LT_TRY(want_ids(ctx, n, &in[7], ids, "mask"));
    LT_TRY(ct_want_rank(ctx, n, word, 2, "word_embedding"));
    int64_t H = word->d[1];
    LT_TRY(want_table(ctx, n, word, H, "word_embedding"));
    LT_TRY(want_table(ctx, n, pos, H, "position_embedding"));
    if (ct_present(&in[4])) LT_TRY(want_table(ctx, n, &in[4], H, "segment_embedding"));
    LT_TRY(ct_want_float(ctx, n, &in[5], LT_FLOAT, "gamma"));
    LT_TRY(ct_want_vec(ctx, n, &in[5], H, "gamma"));
    if (ct_present(&in[6])) {
        LT_TRY(ct_want_float(ctx, n, &in[6], LT_FLOAT, "beta"));
        LT_TRY(ct_want_vec(ctx, n, &in[6], H, "beta"));
    }
    if (ct_present(pids)) {
        if (pids->dt != LT_UNDEFINED && pids->dt != LT_INT32)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "position_ids must be int32, not %s", lt_dtype_name(pids->dt));
        LT_TRY(ct_want_rank(ctx, n, pids, 2, "position_ids"));
        if (pids->d[0] != 1) LT_TRY(ct_want_dim(ctx, n, pids->d[0], ids->d[0], "the batch dim of position_ids (or 1)"));
        LT_TRY(ct_want_dim(ctx, n, pids->d[1], ids->d[1], "the sequence dim of position_ids"));
    } else if (ids->d[1] >= 0 && pos->d[0] >= 0 && ids->d[1] > pos->d[0]) {
        return lt_node_error(ctx, n, LT_ERR_INVALID, "sequence length %lld exceeds the %lld positions of position_embedding",
                             (long long)ids->d[1], (long long)pos->d[0]);
    }
    int64_t od[3] = {ids->d[0], ids->d[1], H};
    ct_out_set(&out[0], LT_FLOAT, 3, od);
    ct_out_set(&out[1], LT_INT32, 1, od);
    ct_out_set(&out[2], LT_FLOAT, 3, od);
    return LT_OK;
}

/* Row `id` of a table with `rows` rows, or an error naming the input and element. */
static lt_status table_row(lt_eval *ev, const lt_node *n, const ct_arg *t, double id, const char *what, int64_t at,
                           const double **row) {
    int64_t rows = t->d[0], H = t->d[1];
    if (!(id >= 0 && id < (double)rows))
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s element %lld is %.0f, outside [0, %lld)", what, (long long)at, id,
                           (long long)rows);
    *row = t->v + (int64_t)id * H;
    return LT_OK;
}

static lt_status compute_embed(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *ids = &in[0], *pids = &in[8];
    int64_t B = ids->d[0], S = ids->d[1], H = in[2].d[1];
    double eps = lt_attr_float(n, "epsilon", 1e-12f);
    for (int64_t t = 0; t < B * S; t++) {
        const double *w = NULL, *p = NULL, *sg = NULL;
        double pid = !ct_present(pids) ? (double)(t % S) : pids->d[0] == 1 ? pids->v[t % S] : pids->v[t];
        LT_TRY(table_row(ev, n, &in[2], ids->v[t], "input_ids", t, &w));
        LT_TRY(table_row(ev, n, &in[3], pid, ct_present(pids) ? "position_ids" : "position", t, &p));
        if (ct_present(&in[1])) LT_TRY(table_row(ev, n, &in[4], in[1].v[t], "segment_ids", t, &sg));
        double *y = out[0].v + t * H, mean = 0, var = 0;
        for (int64_t h = 0; h < H; h++) {
            y[h] = w[h] + p[h] + (sg ? sg[h] : 0.0);
            if (out[2].v) out[2].v[t * H + h] = y[h];
            mean += y[h];
        }
        mean /= (double)H;
        for (int64_t h = 0; h < H; h++) var += (y[h] - mean) * (y[h] - mean);
        double inv = 1.0 / sqrt(var / (double)H + eps);
        for (int64_t h = 0; h < H; h++)
            y[h] = (y[h] - mean) * inv * in[5].v[h] + (ct_present(&in[6]) ? in[6].v[h] : 0.0);
    }
    for (int64_t b = 0; b < B && out[1].v && ct_present(&in[7]); b++)
        for (int64_t s = 0; s < S; s++) out[1].v[b] += in[7].v[b * S + s] == 1.0;
    return LT_OK;
}

const ct_op ct_ops_quant[] = {
    {LT_OP_DynamicQuantizeMatMul, 3, 5, check_dqmm, compute_dqmm},
    {LT_OP_MatMulIntegerToFloat, 4, 7, check_mmitf, compute_mmitf},
    {LT_OP_EmbedLayerNormalization, 1, 9, check_embed, compute_embed},
    {0, 0, 0, NULL, NULL},
};
