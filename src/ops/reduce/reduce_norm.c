/* reduce_norm.c — the normalization ops and Dropout (part of the reduce family, see reduce.c):
 * BatchNormalization, InstanceNormalization, GroupNormalization, LayerNormalization,
 * RMSNormalization, LpNormalization, MeanVarianceNormalization, LRN, Dropout.
 *
 * Statistics are computed in double, two-pass (mean, then the mean of squared deviations: the
 * population variance, as the onnx reference), and each output is rounded once to its type.
 * BatchNormalization trains when training_mode=1 (opset >= 14) or, before 14, when the optional
 * statistics outputs are requested; it then normalizes with the batch statistics and outputs the
 * running statistics (input * momentum + batch * (1 - momentum)).
 * Dropout is the identity with an all-true mask unless it is in training mode with ratio > 0; then
 * elements are dropped with probability ratio. With a `seed` attribute the uniform draws come from
 * a Mersenne Twister (MT19937) seeded with it, producing doubles the way numpy's RandomState does,
 * so a seeded model gives the same mask as the onnx reference; without one, from the evaluation RNG
 * (lt_eval_random).
 */
#include "reduce_impl.h"

#include <math.h>
#include <string.h>

/* Required float input i with an exact element count (count < 0: any). */
static lt_status param_in(lt_eval *ev, const lt_node *n, lt_datum **in, int i, int64_t count, const char *name,
                          const lt_tensor **out) {
    LT_TRY(lt_in_tensor(ev, n, in, i, out));
    LT_TRY(lt_red_need_float(ev, n, *out, name));
    if (count >= 0 && (*out)->numel != count)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must have %lld elements, got %lld", name, (long long)count,
                           (long long)(*out)->numel);
    return LT_OK;
}

static inline double ld(const lt_tensor *t, int64_t i) { return lt_load_f64(t->data, t->dtype, i); }

/* Mean and population variance of `count` elements of x starting at base, step 1. */
static void block_stats(const lt_tensor *x, int64_t base, int64_t count, double *mean, double *var) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < count; i++) s += ld(x, base + i);
    double m = count ? s / (double)count : NAN;
    for (int64_t i = 0; i < count; i++) {
        double d = ld(x, base + i) - m;
        q += d * d;
    }
    *mean = m;
    *var = count ? q / (double)count : NAN;
}

/* N, C, spatial size of an [N, C, ...] input. */
static lt_status nc_shape(lt_eval *ev, const lt_node *n, const lt_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    if (x->rank < 2) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 2 (N, C, ...), got %d", x->rank);
    int64_t s = 1;
    for (int d = 2; d < x->rank; d++) s *= x->dims[d];
    *N = x->dims[0];
    *C = x->dims[1];
    *S = s;
    return LT_OK;
}

/* ================= BatchNormalization ================= */

static const char *const bn_param_names[5] = {"X", "scale", "B", "input_mean", "input_var"};

/* The shape rules of BatchNormalization: X [N, C, ...] of rank >= 2, each parameter (inputs 1..4)
 * of shape [C], or before opset 9 with spatial=0 of C * prod(spatial dims) elements. ranks[i] < 0:
 * input i's shape unknown; dims -1 unknown. Shape inference and eval both call it. */
static lt_status bn_check(lt_ctx *ctx, const lt_node *n, const int *ranks, int64_t (*dims)[LT_MAX_RANK]) {
    int xr = ranks[0];
    if (xr < 0) return LT_OK;
    if (xr < 2) return lt_node_error(ctx, n, LT_ERR_INVALID, "input must have rank >= 2 (N, C, ...), got %d", xr);
    bool spatial = n->opset >= 9 || lt_attr_int(n, "spatial", 1) != 0;
    int64_t C = dims[0][1], pc = C;
    if (!spatial) {
        int64_t sdims[LT_MAX_RANK];
        for (int d = 1; d < xr; d++) sdims[d - 1] = dims[0][d];
        pc = lt_red_numel(xr - 1, sdims);
    }
    for (int i = 1; i < 5; i++) {
        int r = ranks[i];
        if (r < 0) continue;
        if (spatial && r != 1)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must have shape [C], got rank %d", bn_param_names[i], r);
        int64_t cnt = lt_red_numel(r, dims[i]);
        if (cnt >= 0 && pc >= 0 && cnt != pc)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must have %lld elements, got %lld", bn_param_names[i],
                                 (long long)pc, (long long)cnt);
    }
    return LT_OK;
}

lt_status lt_red_eval_batchnorm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sc, *b, *mean, *var;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "X"));
    {
        int ranks[5];
        int64_t dims[5][LT_MAX_RANK];
        for (int i = 0; i < 5; i++) {
            const lt_tensor *t;
            LT_TRY(lt_in_tensor(ev, n, in, i, &t));
            ranks[i] = t->rank;
            memcpy(dims[i], t->dims, sizeof(int64_t) * (size_t)t->rank);
        }
        LT_TRY(bn_check(ev->ctx, n, ranks, dims));
    }
    int64_t N = 0, C = 0, S = 0;
    LT_TRY(nc_shape(ev, n, x, &N, &C, &S));
    bool spatial = n->opset >= 9 || lt_attr_int(n, "spatial", 1) != 0;
    int64_t pc = spatial ? C : C * S;
    LT_TRY(param_in(ev, n, in, 1, pc, "scale", &sc));
    LT_TRY(param_in(ev, n, in, 2, pc, "B", &b));
    LT_TRY(param_in(ev, n, in, 3, pc, "input_mean", &mean));
    LT_TRY(param_in(ev, n, in, 4, pc, "input_var", &var));
    double eps = lt_attr_float(n, "epsilon", 1e-5f), mom = lt_attr_float(n, "momentum", 0.9f);
    bool training;
    if (n->opset >= 14) {
        training = lt_attr_int(n, "training_mode", 0) != 0;
    } else {
        training = false;
        for (int i = 1; i < n->n_out; i++)
            if (n->out[i]) training = true;
        if (n->opset < 7 && lt_attr_int(n, "is_test", 0)) training = false;
    }
    if (training && !spatial)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "training mode with spatial=0 is not supported");
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    double *bm = NULL, *bv = NULL;
    if (training) {
        bm = lt_red_doubles(ev, C);
        bv = lt_red_doubles(ev, C);
        if (!bm || !bv) {
            lt_mem_free(bm);
            lt_mem_free(bv);
            return LT_ERR_NOMEM;
        }
        int64_t cnt = N * S;
        for (int64_t c = 0; c < C; c++) {
            double s = 0, q = 0;
            for (int64_t i = 0; i < N; i++)
                for (int64_t k = 0; k < S; k++) s += ld(x, (i * C + c) * S + k);
            double m = cnt ? s / (double)cnt : NAN;
            for (int64_t i = 0; i < N; i++)
                for (int64_t k = 0; k < S; k++) {
                    double d = ld(x, (i * C + c) * S + k) - m;
                    q += d * d;
                }
            bm[c] = m;
            bv[c] = cnt ? q / (double)cnt : NAN;
        }
    }
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < S; k++) {
                int64_t e = (i * C + c) * S + k, p = spatial ? c : c * S + k;
                double m = training ? bm[c] : ld(mean, p), v = training ? bv[c] : ld(var, p);
                lt_store_f64(y->data, y->dtype, e, ld(sc, p) * (ld(x, e) - m) / sqrt(v + eps) + ld(b, p));
            }
    lt_status s = LT_OK;
    /* Outputs 1, 2: running mean / var; 3, 4 (before opset 14): the batch mean / var. */
    for (int o = 1; o < n->n_out && o <= (n->opset >= 14 ? 2 : 4) && !s; o++) {
        const lt_tensor *src = (o == 1 || o == 3) ? mean : var;
        lt_tensor *t;
        s = lt_out_new(ev, n, out, o, src->dtype, src->rank, src->dims, &t);
        for (int64_t c = 0; !s && c < pc; c++) {
            double v = ld(src, c);
            if (training) {
                double bs = (o == 1 || o == 3) ? bm[c] : bv[c];
                v = o <= 2 ? v * mom + bs * (1.0 - mom) : bs;
            }
            lt_store_f64(t->data, t->dtype, c, v);
        }
    }
    lt_mem_free(bm);
    lt_mem_free(bv);
    return s;
}

lt_status lt_red_infer_batchnorm(lt_infer *ic, lt_node *n) {
    int ranks[5];
    int64_t dims[5][LT_MAX_RANK];
    for (int i = 0; i < 5; i++)
        if (!lt_red_in_shape(n, i, &ranks[i], dims[i])) ranks[i] = -1;
    LT_TRY(bn_check(ic->ctx, n, ranks, dims));
    LT_TRY(lt_infer_copy(ic, n, 0, 0));
    for (int o = 1; o < n->n_out && o <= 4; o++) LT_TRY(lt_infer_copy(ic, n, o, (o == 1 || o == 3) ? 3 : 4));
    return LT_OK;
}

/* ================= InstanceNormalization / GroupNormalization ================= */

lt_status lt_red_eval_instancenorm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sc, *b;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "input"));
    int64_t N = 0, C = 0, S = 0;
    LT_TRY(nc_shape(ev, n, x, &N, &C, &S));
    LT_TRY(param_in(ev, n, in, 1, C, "scale", &sc));
    LT_TRY(param_in(ev, n, in, 2, C, "B", &b));
    double eps = lt_attr_float(n, "epsilon", 1e-5f);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (i * C + c) * S;
            double m, v;
            block_stats(x, base, S, &m, &v);
            double sd = sqrt(v + eps), g = ld(sc, c), bb = ld(b, c);
            for (int64_t k = 0; k < S; k++)
                lt_store_f64(y->data, y->dtype, base + k, g * (ld(x, base + k) - m) / sd + bb);
        }
    return LT_OK;
}

lt_status lt_red_infer_instancenorm(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }

lt_status lt_red_eval_groupnorm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sc, *b;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "X"));
    int64_t N = 0, C = 0, S = 0;
    LT_TRY(nc_shape(ev, n, x, &N, &C, &S));
    if (!lt_node_attr(n, "num_groups")) return lt_op_error(ev, n, LT_ERR_INVALID, "attribute num_groups is missing");
    int64_t G = lt_attr_int(n, "num_groups", 0);
    if (G <= 0 || C % G != 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "num_groups %lld does not divide the %lld channels", (long long)G,
                           (long long)C);
    /* Opset 18: scale and bias per group; 21: per channel. */
    bool per_channel = n->opset >= 21;
    LT_TRY(param_in(ev, n, in, 1, per_channel ? C : G, "scale", &sc));
    LT_TRY(param_in(ev, n, in, 2, per_channel ? C : G, "bias", &b));
    double eps = lt_attr_float(n, "epsilon", 1e-5f);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    int64_t cpg = C / G, blk = cpg * S;
    for (int64_t i = 0; i < N; i++)
        for (int64_t g = 0; g < G; g++) {
            int64_t base = (i * G + g) * blk;
            double m, v;
            block_stats(x, base, blk, &m, &v);
            double sd = sqrt(v + eps);
            for (int64_t k = 0; k < blk; k++) {
                int64_t p = per_channel ? g * cpg + k / (S ? S : 1) : g;
                lt_store_f64(y->data, y->dtype, base + k, ld(sc, p) * ((ld(x, base + k) - m) / sd) + ld(b, p));
            }
        }
    return LT_OK;
}

lt_status lt_red_infer_groupnorm(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }

/* ================= LayerNormalization / RMSNormalization ================= */

/* The shape and attribute rules of LayerNormalization / RMSNormalization on X (rank xr, dims xd),
 * the scale (input 1) and LayerNormalization's bias (input 2) (rank < 0: absent or unknown; dims -1
 * unknown): X of rank >= 1, axis in [-rank, rank), stash_type a float type, scale and bias
 * unidirectionally broadcastable to X. *axis gets the normalized axis. Shape inference and eval both
 * call it, so every backend reports the same error. */
static lt_status norm_check(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd, int sr, const int64_t *sd,
                            int br, const int64_t *bd, int *axis) {
    int64_t st = lt_attr_int(n, "stash_type", 1);
    if (!lt_dtype_valid((int)st) || st != (int)st || !lt_dtype_is_float((lt_dtype)st))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "stash_type %lld is not a float type", (long long)st);
    if (xr < 0) return LT_OK;
    if (xr == 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "input must have rank >= 1");
    int64_t ax = lt_attr_int(n, "axis", -1), a = ax < 0 ? ax + xr : ax;
    if (a < 0 || a >= xr)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)ax, xr);
    *axis = (int)a;
    bool ln = n->op == LT_OP_LayerNormalization;
    if (sr >= 0) LT_TRY(lt_red_uni_check(ctx, n, sr, sd, xr, xd, ln ? "Scale" : "scale"));
    if (br >= 0) LT_TRY(lt_red_uni_check(ctx, n, br, bd, xr, xd, "B"));
    return LT_OK;
}

/* rows x cols view at a normalized axis (norm_check's rules). */
static lt_status rows_cols(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *sc,
                           const lt_tensor *b, int *axis, int64_t *rows, int64_t *cols) {
    LT_TRY(norm_check(ev->ctx, n, x->rank, x->dims, sc->rank, sc->dims, b ? b->rank : -1, b ? b->dims : NULL, axis));
    int64_t r = 1, c = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < *axis) r *= x->dims[d];
        else c *= x->dims[d];
    }
    *rows = r;
    *cols = c;
    return LT_OK;
}

/* norm_check on the input types (shape inference); *axis -1 when X's rank is unknown. */
static lt_status norm_infer_check(lt_infer *ic, const lt_node *n, int *axis) {
    int xr, sr, br;
    int64_t xd[LT_MAX_RANK], sd[LT_MAX_RANK], bd[LT_MAX_RANK];
    if (!lt_red_in_shape(n, 0, &xr, xd)) xr = -1;
    if (!lt_red_in_shape(n, 1, &sr, sd)) sr = -1;
    if (n->op != LT_OP_LayerNormalization || !lt_red_in_shape(n, 2, &br, bd)) br = -1;
    *axis = -1;
    return norm_check(ic->ctx, n, xr, xd, sr, sd, br, bd, axis);
}

/* The stash_type attribute as a float dtype (norm_check's rule). */
static lt_status stash_dtype(lt_eval *ev, const lt_node *n, lt_dtype *dt) {
    int64_t st = lt_attr_int(n, "stash_type", 1);
    if (!lt_dtype_valid((int)st) || st != (int)st || !lt_dtype_is_float((lt_dtype)st))
        return lt_op_error(ev, n, LT_ERR_INVALID, "stash_type %lld is not a float type", (long long)st);
    *dt = (lt_dtype)st;
    return LT_OK;
}

lt_status lt_red_eval_layernorm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sc, *b;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "X"));
    LT_TRY(param_in(ev, n, in, 1, -1, "Scale", &sc));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &b));
    if (b) LT_TRY(lt_red_need_float(ev, n, b, "B"));
    lt_dtype ust = LT_FLOAT;
    LT_TRY(stash_dtype(ev, n, &ust));
    int axis = 0;
    int64_t rows = 0, cols = 0, ss[LT_MAX_RANK], bs[LT_MAX_RANK];
    LT_TRY(rows_cols(ev, n, x, sc, b, &axis, &rows, &cols));
    LT_TRY(lt_red_uni_strides(ev, n, sc, x, "Scale", ss));
    if (b) LT_TRY(lt_red_uni_strides(ev, n, b, x, "B", bs));
    double eps = lt_attr_float(n, "epsilon", 1e-5f);
    int64_t sdims[LT_MAX_RANK];
    for (int d = 0; d < x->rank; d++) sdims[d] = d < axis ? x->dims[d] : 1;
    lt_tensor *y, *ym = NULL, *yi = NULL;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    if (n->n_out > 1) LT_TRY(lt_out_new(ev, n, out, 1, ust, x->rank, sdims, &ym));
    if (n->n_out > 2) LT_TRY(lt_out_new(ev, n, out, 2, ust, x->rank, sdims, &yi));
    lt_red_iter its, itb;
    lt_red_iter_init(&its, x->rank, x->dims, ss);
    if (b) lt_red_iter_init(&itb, x->rank, x->dims, bs);
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * cols;
        double m, v;
        block_stats(x, base, cols, &m, &v);
        double inv = 1.0 / sqrt(v + eps);
        if (ym) lt_store_f64(ym->data, ym->dtype, r, m);
        if (yi) lt_store_f64(yi->data, yi->dtype, r, inv);
        for (int64_t k = 0; k < cols; k++) {
            double val = (ld(x, base + k) - m) * inv * ld(sc, its.off);
            if (b) {
                val += ld(b, itb.off);
                lt_red_iter_next(&itb);
            }
            lt_red_iter_next(&its);
            lt_store_f64(y->data, y->dtype, base + k, val);
        }
    }
    return LT_OK;
}

lt_status lt_red_infer_layernorm(lt_infer *ic, lt_node *n) {
    int axis;
    LT_TRY(norm_infer_check(ic, n, &axis));
    LT_TRY(lt_infer_copy(ic, n, 0, 0));
    int64_t st = lt_attr_int(n, "stash_type", 1);
    lt_dtype ust = lt_dtype_valid((int)st) && lt_dtype_is_float((lt_dtype)st) ? (lt_dtype)st : LT_UNDEFINED;
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR || t->rank <= 0 || t->rank > LT_MAX_RANK) {
        for (int o = 1; o <= 2; o++) LT_TRY(lt_infer_set(ic, n, o, ust, -1, NULL));
        return LT_OK;
    }
    int a = axis; /* checked by norm_infer_check */
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) d[i] = i < a ? (t->dims ? t->dims[i] : (lt_dim){-1, NULL}) : (lt_dim){1, NULL};
    for (int o = 1; o <= 2; o++) LT_TRY(lt_infer_set(ic, n, o, ust, t->rank, d));
    return LT_OK;
}

lt_status lt_red_eval_rmsnorm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sc;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "X"));
    LT_TRY(param_in(ev, n, in, 1, -1, "scale", &sc));
    lt_dtype ust = LT_FLOAT;
    LT_TRY(stash_dtype(ev, n, &ust));
    int axis = 0;
    int64_t rows = 0, cols = 0, ss[LT_MAX_RANK];
    LT_TRY(rows_cols(ev, n, x, sc, NULL, &axis, &rows, &cols));
    LT_TRY(lt_red_uni_strides(ev, n, sc, x, "scale", ss));
    double eps = lt_attr_float(n, "epsilon", 1e-5f);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, sc->dtype, x->rank, x->dims, &y));
    lt_red_iter its;
    lt_red_iter_init(&its, x->rank, x->dims, ss);
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * cols;
        double q = 0;
        for (int64_t k = 0; k < cols; k++) {
            double v = ld(x, base + k);
            q += v * v;
        }
        double inv = 1.0 / sqrt((cols ? q / (double)cols : NAN) + eps);
        for (int64_t k = 0; k < cols; k++, lt_red_iter_next(&its))
            lt_store_f64(y->data, y->dtype, base + k, ld(x, base + k) * inv * ld(sc, its.off));
    }
    return LT_OK;
}

lt_status lt_red_infer_rmsnorm(lt_infer *ic, lt_node *n) {
    int axis;
    LT_TRY(norm_infer_check(ic, n, &axis));
    lt_dtype dt = lt_red_in_dtype(n, 1);
    return lt_red_infer_like(ic, n, 0, 0, dt ? dt : lt_red_in_dtype(n, 0));
}

/* ================= LpNormalization ================= */

lt_status lt_red_eval_lpnorm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "input"));
    int64_t p = lt_attr_int(n, "p", 2);
    if (p != 1 && p != 2) return lt_op_error(ev, n, LT_ERR_INVALID, "p must be 1 or 2, got %lld", (long long)p);
    if (x->rank == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 1");
    int axis = 0;
    LT_TRY(lt_norm_axis(ev, n, lt_attr_int(n, "axis", -1), x->rank, &axis));
    int64_t outer = 0, len = 0, inner = 0;
    lt_red_split(x, axis, &outer, &len, &inner);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            double s = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = ld(x, base + k * inner);
                s += p == 1 ? fabs(v) : v * v;
            }
            double norm = p == 1 ? s : sqrt(s);
            for (int64_t k = 0; k < len; k++) {
                int64_t e = base + k * inner;
                lt_store_f64(y->data, y->dtype, e, norm == 0 ? 0.0 : ld(x, e) / norm);
            }
        }
    return LT_OK;
}

lt_status lt_red_infer_lpnorm(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }

/* ================= MeanVarianceNormalization ================= */

lt_status lt_red_eval_mvn(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "X"));
    static const int64_t dflt[] = {0, 2, 3};
    const int64_t *axes;
    int na = lt_attr_ints(n, "axes", &axes);
    if (!lt_node_attr(n, "axes")) {
        axes = dflt;
        na = 3;
    }
    bool mask[LT_MAX_RANK] = {0};
    for (int k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + x->rank : axes[k];
        if (a < 0 || a >= x->rank)
            return lt_op_error(ev, n, LT_ERR_INVALID, "axis %lld out of range [-%d, %d)", (long long)axes[k], x->rank,
                               x->rank);
        mask[a] = true;
    }
    int64_t ostr[LT_MAX_RANK], on, cnt = 1;
    lt_red_mask_strides(x->rank, x->dims, mask, ostr, &on);
    for (int d = 0; d < x->rank; d++)
        if (mask[d]) cnt *= x->dims[d];
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    double *m = lt_red_doubles(ev, on), *q = lt_red_doubles(ev, on);
    if (!m || !q) {
        lt_mem_free(m);
        lt_mem_free(q);
        return LT_ERR_NOMEM;
    }
    lt_red_iter it;
    lt_red_iter_init(&it, x->rank, x->dims, ostr);
    for (int64_t i = 0; i < x->numel; i++, lt_red_iter_next(&it)) m[it.off] += ld(x, i);
    for (int64_t o = 0; o < on; o++) m[o] /= (double)cnt;
    lt_red_iter_init(&it, x->rank, x->dims, ostr);
    for (int64_t i = 0; i < x->numel; i++, lt_red_iter_next(&it)) {
        double d = ld(x, i) - m[it.off];
        q[it.off] += d * d;
    }
    for (int64_t o = 0; o < on; o++) q[o] = sqrt(q[o] / (double)cnt) + 1e-9; /* the function body's epsilon */
    lt_red_iter_init(&it, x->rank, x->dims, ostr);
    for (int64_t i = 0; i < x->numel; i++, lt_red_iter_next(&it))
        lt_store_f64(y->data, y->dtype, i, (ld(x, i) - m[it.off]) / q[it.off]);
    lt_mem_free(m);
    lt_mem_free(q);
    return LT_OK;
}

lt_status lt_red_infer_mvn(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }

/* ================= LRN ================= */

lt_status lt_red_eval_lrn(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "X"));
    int64_t N = 0, C = 0, S = 0;
    LT_TRY(nc_shape(ev, n, x, &N, &C, &S));
    int64_t size = lt_attr_int(n, "size", 0);
    if (size <= 0) return lt_op_error(ev, n, LT_ERR_INVALID, "attribute size must be positive, got %lld", (long long)size);
    double alpha = lt_attr_float(n, "alpha", 1e-4f), beta = lt_attr_float(n, "beta", 0.75f),
           bias = lt_attr_float(n, "bias", 1.0f);
    int64_t lo = (size - 1) / 2, hi = size / 2; /* floor((size-1)/2), ceil((size-1)/2) */
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < S; k++) {
                int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi > C - 1 ? C - 1 : c + hi;
                double sq = 0;
                for (int64_t j = c0; j <= c1; j++) {
                    double v = ld(x, (i * C + j) * S + k);
                    sq += v * v;
                }
                int64_t e = (i * C + c) * S + k;
                lt_store_f64(y->data, y->dtype, e, ld(x, e) / pow(bias + alpha / (double)size * sq, beta));
            }
    return LT_OK;
}

lt_status lt_red_infer_lrn(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }

/* ================= Dropout ================= */

/* MT19937 (Matsumoto & Nishimura), seeded with the 32-bit initializer of the original paper. */
typedef struct mt19937 {
    uint32_t s[624];
    int i;
} mt19937;

static void mt_seed(mt19937 *m, uint32_t seed) {
    m->s[0] = seed;
    for (int i = 1; i < 624; i++) m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
    m->i = 624;
}

static uint32_t mt_next(mt19937 *m) {
    if (m->i >= 624) {
        for (int k = 0; k < 624; k++) {
            uint32_t y = (m->s[k] & 0x80000000u) | (m->s[(k + 1) % 624] & 0x7fffffffu);
            m->s[k] = m->s[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        m->i = 0;
    }
    uint32_t y = m->s[m->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* A double in [0, 1) from 53 random bits (27 + 26), as numpy's random_sample. */
static double mt_double(mt19937 *m) {
    uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
    return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

/* The shape rules of Dropout (opset >= 12): ratio (input 1) and training_mode (input 2) are scalars
 * (one element), of a float and the bool type. Ranks < 0: absent or unknown; dims -1, dtype
 * UNDEFINED: unknown. Shape inference and eval both call it, so every backend gives one error. */
static lt_status dropout_check(lt_ctx *ctx, const lt_node *n, int rr, const int64_t *rd, lt_dtype rdt, int tr,
                               const int64_t *td, lt_dtype tdt) {
    if (n->opset < 12) return LT_OK;
    int64_t c;
    if (rr >= 0 && (((c = lt_red_numel(rr, rd)) >= 0 && c != 1) || (rdt != LT_UNDEFINED && !lt_dtype_is_float(rdt))))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "ratio must be a float scalar");
    if (tr >= 0 && (((c = lt_red_numel(tr, td)) >= 0 && c != 1) || (tdt != LT_UNDEFINED && tdt != LT_BOOL)))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "training_mode must be a bool scalar");
    return LT_OK;
}

/* In training mode the ratio is in [0, 1). Shared by eval and (when both are constants) inference. */
static lt_status dropout_ratio_check(lt_ctx *ctx, const lt_node *n, bool training, double ratio) {
    if (training && ratio != 0 && !(ratio > 0 && ratio < 1))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "ratio %g is not in [0, 1)", ratio);
    return LT_OK;
}

lt_status lt_red_eval_dropout(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "data"));
    double ratio = 0.5;
    bool training = false;
    if (n->opset >= 12) {
        const lt_tensor *r, *tm;
        LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &r));
        LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &tm));
        LT_TRY(dropout_check(ev->ctx, n, r ? r->rank : -1, r ? r->dims : NULL, r ? r->dtype : LT_UNDEFINED,
                             tm ? tm->rank : -1, tm ? tm->dims : NULL, tm ? tm->dtype : LT_UNDEFINED));
        if (r) ratio = ld(r, 0);
        if (tm) training = ((const uint8_t *)tm->data)[0] != 0;
    } else {
        ratio = lt_attr_float(n, "ratio", 0.5f);
        training = n->opset < 7 && lt_attr_int(n, "is_test", 0) == 0;
    }
    LT_TRY(dropout_ratio_check(ev->ctx, n, training, ratio));
    if (training && ratio == 0) training = false;
    lt_tensor *y, *mask = NULL;
    lt_dtype mdt = n->opset >= 10 ? LT_BOOL : x->dtype;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    if (n->n_out > 1) LT_TRY(lt_out_new(ev, n, out, 1, mdt, x->rank, x->dims, &mask));
    if (!training) {
        memcpy(y->data, x->data, (size_t)lt_tensor_nbytes(x));
        if (mask)
            for (int64_t i = 0; i < x->numel; i++) lt_store_f64(mask->data, mdt, i, 1.0);
        return LT_OK;
    }
    double scale = 1.0 / (1.0 - ratio);
    mt19937 *mt = NULL;
    if (lt_node_attr(n, "seed")) {
        mt = lt_alloc(ev->ctx, sizeof *mt, "Dropout generator");
        if (!mt) return LT_ERR_NOMEM;
        mt_seed(mt, (uint32_t)lt_attr_int(n, "seed", 0));
    }
    for (int64_t i = 0; i < x->numel; i++) {
        bool keep = (mt ? mt_double(mt) : lt_eval_random(ev)) >= ratio;
        lt_store_f64(y->data, y->dtype, i, keep ? ld(x, i) * scale : 0.0);
        if (mask) lt_store_f64(mask->data, mdt, i, keep ? 1.0 : 0.0);
    }
    lt_mem_free(mt);
    return LT_OK;
}

lt_status lt_red_infer_dropout(lt_infer *ic, lt_node *n) {
    int rr, tr;
    int64_t rd[LT_MAX_RANK], td[LT_MAX_RANK];
    if (!lt_red_in_shape(n, 1, &rr, rd)) rr = -1;
    if (!lt_red_in_shape(n, 2, &tr, td)) tr = -1;
    LT_TRY(dropout_check(ic->ctx, n, rr, rd, lt_red_in_dtype(n, 1), tr, td, lt_red_in_dtype(n, 2)));
    /* the ratio rule when the mode and the ratio are known (attributes, or constant inputs) */
    double ratio = 0.5;
    bool training = false, known = true;
    if (n->opset >= 12) {
        const lt_tensor *r = lt_infer_const(n, 1), *tm = lt_infer_const(n, 2);
        if (n->n_in > 1 && n->in[1]) known = r && r->numel == 1 && lt_dtype_is_float(r->dtype);
        if (known && r) ratio = ld(r, 0);
        if (n->n_in > 2 && n->in[2]) known = known && tm && tm->numel == 1 && tm->dtype == LT_BOOL;
        if (known && tm) training = ((const uint8_t *)tm->data)[0] != 0;
    } else {
        ratio = lt_attr_float(n, "ratio", 0.5f);
        training = n->opset < 7 && lt_attr_int(n, "is_test", 0) == 0;
    }
    if (known) LT_TRY(dropout_ratio_check(ic->ctx, n, training, ratio));
    LT_TRY(lt_infer_copy(ic, n, 0, 0));
    return lt_red_infer_like(ic, n, 1, 0, n->opset >= 10 ? LT_BOOL : lt_red_in_dtype(n, 0));
}
