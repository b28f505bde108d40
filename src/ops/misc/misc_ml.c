/* misc_ml.c — ai.onnx.ml operators: TreeEnsemble (opset 5), Scaler, Normalizer, Imputer,
 * LinearRegressor, LinearClassifier, OneHotEncoder, FeatureVectorizer, CategoryMapper, and the
 * post transforms they share.
 *
 * Every attribute index (feature ids, node ids, leaf ids, target ids) is range-checked before use
 * and tree walks are bounded by the node count, so a malformed model gets an error naming the node,
 * never a crash or a hang. Scores compute in double and round once into the output dtype.
 * PROBIT uses the same erf^-1 approximation as onnx's reference (and onnxruntime).
 */
#include "misc_impl.h"

#include "../elementwise/elementwise_impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- post transforms ---- */
bool lt_misc_post_parse(const char *s, lt_post *out) {
    static const char *names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
    for (int k = 0; k < 5; k++)
        if (strcmp(s, names[k]) == 0) { *out = (lt_post)k; return true; }
    return false;
}

static double erf_inv_approx(double x) {
    double sgn = x < 0 ? -1.0 : 1.0;
    x = (1.0 - x) * (1.0 + x);
    if (x == 0) return 0;
    double lg = log(x);
    double v = 2.0 / (3.14159265358979323846 * 0.147) + 0.5 * lg;
    double v2 = 1.0 / 0.147 * lg;
    double v3 = -v + sqrt(v * v - v2);
    return sgn * sqrt(v3);
}

void lt_misc_post_apply(lt_post p, double *v, int64_t n) {
    if (n <= 0) return;
    switch (p) {
    case LT_POST_NONE: break;
    case LT_POST_LOGISTIC:
        for (int64_t i = 0; i < n; i++) {
            double e = 1.0 / (1.0 + exp(-fabs(v[i])));
            v[i] = v[i] < 0 ? 1.0 - e : e;
        }
        break;
    case LT_POST_SOFTMAX: {
        double mx = v[0], s = 0;
        for (int64_t i = 1; i < n; i++) if (v[i] > mx) mx = v[i];
        for (int64_t i = 0; i < n; i++) { v[i] = exp(v[i] - mx); s += v[i]; }
        for (int64_t i = 0; i < n; i++) v[i] /= s;
        break;
    }
    case LT_POST_SOFTMAX_ZERO: {
        double mx = v[0], s = 0;
        for (int64_t i = 1; i < n; i++) if (v[i] > mx) mx = v[i];
        double e = exp(-mx);
        for (int64_t i = 0; i < n; i++) {
            v[i] = (v[i] > 1e-7 || v[i] < -1e-7) ? exp(v[i] - mx) : v[i] * e;
            s += v[i];
        }
        for (int64_t i = 0; i < n; i++) v[i] = s == 0 ? 0.5 : v[i] / s;
        break;
    }
    case LT_POST_PROBIT:
        for (int64_t i = 0; i < n; i++) v[i] = 1.41421356 * erf_inv_approx(v[i] * 2 - 1);
        break;
    }
}

static lt_status get_post(lt_eval *ev, const lt_node *n, lt_post *p) {
    const char *s = lt_attr_string(n, "post_transform", "NONE");
    if (!lt_misc_post_parse(s, p)) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown post_transform '%s'", s);
    return LT_OK;
}

/* Rows and columns of a [N, C] (or [C]: one row) numeric input. */
static lt_status rows_cols(lt_eval *ev, const lt_node *n, const lt_tensor *x, int64_t *rows, int64_t *cols) {
    lt_ew_kind k = lt_ew_kind_of(x->dtype);
    if (k != LT_EW_F && k != LT_EW_S && k != LT_EW_U)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    if (x->rank == 1) { *rows = 1; *cols = x->dims[0]; return LT_OK; }
    if (x->rank == 2) { *rows = x->dims[0]; *cols = x->dims[1]; return LT_OK; }
    return lt_op_error(ev, n, LT_ERR_INVALID, "input must have shape [N, C] or [C], got rank %d", x->rank);
}

static lt_status infer_rows_by(lt_infer *ic, lt_node *n, int out, lt_dtype dt, int64_t cols) {
    const lt_type *t = lt_infer_in(n, 0);
    lt_dim d[2] = {{-1, NULL}, {cols, NULL}};
    if (t && t->kind == LT_TK_TENSOR && t->rank == 2) d[0] = t->dims[0];
    if (t && t->kind == LT_TK_TENSOR && t->rank == 1) d[0] = (lt_dim){1, NULL};
    return lt_infer_set(ic, n, out, dt, 2, d);
}

/* ---- TreeEnsemble (ai.onnx.ml 5) ---- */
enum { M_LEQ, M_LT, M_GTE, M_GT, M_EQ, M_NEQ, M_MEMBER };

typedef struct tree_model {
    int64_t nn, nl;
    const int64_t *feat, *tid, *fid, *tleaf, *fleaf, *miss, *ltarget, *roots;
    int64_t nroots, n_miss;
    const lt_tensor *modes, *splits, *weights, *members;
    int64_t *mstart, *mcount; /* membership ranges per node (heap) */
    int64_t n_targets;
    int agg;
    int post;
} tree_model;

static lt_status tree_read(lt_eval *ev, const lt_node *n, tree_model *m, int64_t n_features) {
    memset(m, 0, sizeof *m);
    const int64_t *p;
    m->nn = lt_attr_ints(n, "nodes_featureids", &m->feat);
    int64_t c1 = lt_attr_ints(n, "nodes_truenodeids", &m->tid), c2 = lt_attr_ints(n, "nodes_falsenodeids", &m->fid);
    int64_t c3 = lt_attr_ints(n, "nodes_trueleafs", &m->tleaf), c4 = lt_attr_ints(n, "nodes_falseleafs", &m->fleaf);
    m->n_miss = lt_attr_ints(n, "nodes_missing_value_tracks_true", &m->miss);
    m->nl = lt_attr_ints(n, "leaf_targetids", &m->ltarget);
    m->nroots = lt_attr_ints(n, "tree_roots", &m->roots);
    m->modes = lt_attr_tensor(n, "nodes_modes");
    m->splits = lt_attr_tensor(n, "nodes_splits");
    m->weights = lt_attr_tensor(n, "leaf_weights");
    m->members = lt_attr_tensor(n, "membership_values");
    m->n_targets = lt_attr_int(n, "n_targets", -1);
    m->agg = (int)lt_attr_int(n, "aggregate_function", 1);
    m->post = (int)lt_attr_int(n, "post_transform", 0);
    (void)p;
    if (!m->modes || !m->splits || !m->weights)
        return lt_op_error(ev, n, LT_ERR_INVALID, "missing nodes_modes, nodes_splits or leaf_weights");
    if (c1 != m->nn || c2 != m->nn || c3 != m->nn || c4 != m->nn || m->modes->numel != m->nn || m->splits->numel != m->nn ||
        (m->n_miss && m->n_miss != m->nn))
        return lt_op_error(ev, n, LT_ERR_INVALID, "node attributes have different lengths");
    if (m->weights->numel != m->nl)
        return lt_op_error(ev, n, LT_ERR_INVALID, "leaf_weights has %lld entries, leaf_targetids %lld",
                           (long long)m->weights->numel, (long long)m->nl);
    if (m->n_targets < 1 || m->n_targets > ((int64_t)1 << 30))
        return lt_op_error(ev, n, LT_ERR_INVALID, "n_targets must be positive");
    if (m->agg < 0 || m->agg > 3) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown aggregate_function %d", m->agg);
    if (m->post < 0 || m->post > 4) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown post_transform %d", m->post);
    if (!lt_dtype_is_float(m->splits->dtype) || !lt_dtype_is_float(m->weights->dtype) ||
        lt_ew_kind_of(m->modes->dtype) == LT_EW_OTHER || lt_ew_kind_of(m->modes->dtype) == LT_EW_STR)
        return lt_op_error(ev, n, LT_ERR_INVALID, "bad dtype for nodes_modes, nodes_splits or leaf_weights");
    for (int64_t k = 0; k < m->nn; k++) {
        if (m->feat[k] < 0 || m->feat[k] >= n_features)
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at nodes_featureids[%lld]",
                               (long long)m->feat[k], (long long)n_features, (long long)k);
        int64_t mode = lt_load_i64(m->modes->data, m->modes->dtype, k);
        if (mode < 0 || mode > M_MEMBER) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown node mode %lld", (long long)mode);
        const int64_t *ids[2] = {m->tid, m->fid}, *leafs[2] = {m->tleaf, m->fleaf};
        for (int b = 0; b < 2; b++) {
            int64_t lim = leafs[b][k] ? m->nl : m->nn;
            if (ids[b][k] < 0 || ids[b][k] >= lim)
                return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at nodes_%snodeids[%lld]",
                                   (long long)ids[b][k], (long long)lim, b ? "false" : "true", (long long)k);
        }
    }
    for (int64_t k = 0; k < m->nl; k++)
        if (m->ltarget[k] < 0 || m->ltarget[k] >= m->n_targets)
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at leaf_targetids[%lld]",
                               (long long)m->ltarget[k], (long long)m->n_targets, (long long)k);
    for (int64_t k = 0; k < m->nroots; k++)
        if (m->roots[k] < 0 || m->roots[k] >= m->nn)
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at tree_roots[%lld]",
                               (long long)m->roots[k], (long long)m->nn, (long long)k);
    /* Membership sets: each MEMBER node, in node order, takes the values up to the next NaN. */
    m->mstart = lt_calloc(ev->ctx, (size_t)(m->nn ? m->nn : 1) * 2, sizeof(int64_t), "tree membership");
    if (!m->mstart) return LT_ERR_NOMEM;
    m->mcount = m->mstart + m->nn;
    int64_t pos = 0, total = m->members ? m->members->numel : 0;
    for (int64_t k = 0; k < m->nn; k++) {
        if (lt_load_i64(m->modes->data, m->modes->dtype, k) != M_MEMBER) continue;
        if (!m->members || pos > total) {
            lt_mem_free(m->mstart);
            m->mstart = NULL;
            return lt_op_error(ev, n, LT_ERR_INVALID, "node %lld tests set membership but membership_values runs out",
                               (long long)k);
        }
        m->mstart[k] = pos;
        while (pos < total && !isnan(lt_load_f64(m->members->data, m->members->dtype, pos))) pos++;
        m->mcount[k] = pos - m->mstart[k];
        pos++; /* the NaN */
    }
    return LT_OK;
}

static bool tree_test(const tree_model *m, int64_t k, double v) {
    int mode = (int)lt_load_i64(m->modes->data, m->modes->dtype, k);
    double s = lt_load_f64(m->splits->data, m->splits->dtype, k);
    if (isnan(v) && m->n_miss && m->miss[k]) return true;
    switch (mode) {
    case M_LEQ: return v <= s;
    case M_LT: return v < s;
    case M_GTE: return v >= s;
    case M_GT: return v > s;
    case M_EQ: return v == s;
    case M_NEQ: return v != s;
    default:
        for (int64_t q = 0; q < m->mcount[k]; q++)
            if (lt_load_f64(m->members->data, m->members->dtype, m->mstart[k] + q) == v) return true;
        return false;
    }
}

lt_status lt_misc_infer_tree(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    return infer_rows_by(ic, n, 0, t ? t->dtype : LT_UNDEFINED, lt_attr_int(n, "n_targets", -1));
}

lt_status lt_misc_eval_tree(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (!lt_dtype_is_float(x->dtype)) return lt_op_error(ev, n, LT_ERR_INVALID, "X must be a float tensor");
    int64_t rows, cols;
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    tree_model m;
    LT_TRY(tree_read(ev, n, &m, cols));
    int64_t dims[2] = {rows, m.n_targets};
    lt_tensor *y;
    lt_status st = lt_out_new(ev, n, out, 0, x->dtype, 2, dims, &y);
    double *acc = st ? NULL : lt_alloc(ev->ctx, (size_t)m.n_targets * sizeof *acc, "tree scores");
    if (!st && !acc) st = LT_ERR_NOMEM;
    for (int64_t r = 0; !st && r < rows; r++) {
        double init = m.agg == 2 ? DBL_MAX : m.agg == 3 ? -DBL_MAX : 0.0;
        if (m.agg >= 2) init = x->dtype == LT_DOUBLE ? init : (init > 0 ? FLT_MAX : -FLT_MAX);
        for (int64_t t = 0; t < m.n_targets; t++) acc[t] = init;
        for (int64_t ti = 0; !st && ti < m.nroots; ti++) {
            int64_t k = m.roots[ti], leaf = -1;
            if (m.tleaf[k] && m.fleaf[k] && m.tid[k] == m.fid[k]) leaf = m.tid[k];
            for (int64_t steps = 0; leaf < 0; steps++) {
                if (steps > m.nn) {
                    st = lt_op_error(ev, n, LT_ERR_INVALID, "tree %lld has a cycle", (long long)ti);
                    break;
                }
                bool c = tree_test(&m, k, lt_load_f64(x->data, x->dtype, r * cols + m.feat[k]));
                int64_t next = c ? m.tid[k] : m.fid[k];
                if (c ? m.tleaf[k] : m.fleaf[k]) leaf = next;
                else k = next;
            }
            if (leaf < 0) break;
            double w = lt_load_f64(m.weights->data, m.weights->dtype, leaf);
            double *a = &acc[m.ltarget[leaf]];
            if (m.agg == 1) *a += w;
            else if (m.agg == 0) *a += w / (double)m.nroots;
            else if (m.agg == 2) *a = w < *a ? w : *a;
            else *a = w > *a ? w : *a;
        }
        if (st) break;
        lt_misc_post_apply((lt_post)m.post, acc, m.n_targets);
        for (int64_t t = 0; t < m.n_targets; t++) lt_store_f64(y->data, x->dtype, r * m.n_targets + t, acc[t]);
    }
    lt_mem_free(acc);
    lt_mem_free(m.mstart);
    return st;
}

/* ---- Scaler ---- */
lt_status lt_misc_infer_scaler(lt_infer *ic, lt_node *n) { return lt_ew_infer_unary_dt(ic, n, LT_FLOAT); }

lt_status lt_misc_eval_scaler(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t rows, cols;
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    const float *off, *sc;
    int no = lt_attr_floats(n, "offset", &off), ns = lt_attr_floats(n, "scale", &sc);
    if ((no != 1 && no != cols && no != 0) || (ns != 1 && ns != cols && ns != 0))
        return lt_op_error(ev, n, LT_ERR_INVALID, "offset/scale must have 1 or %lld entries", (long long)cols);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, x->rank, x->dims, &y));
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = cols ? i % cols : 0;
        double o = no ? off[no == 1 ? 0 : c] : 0.0, s = ns ? sc[ns == 1 ? 0 : c] : 1.0;
        ((float *)y->data)[i] = (float)((lt_load_f64(x->data, x->dtype, i) - o) * s);
    }
    return LT_OK;
}

/* ---- Normalizer ---- */
lt_status lt_misc_eval_normalizer(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t rows, cols;
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    const char *norm = lt_attr_string(n, "norm", "MAX");
    int kind = strcmp(norm, "MAX") == 0 ? 0 : strcmp(norm, "L1") == 0 ? 1 : strcmp(norm, "L2") == 0 ? 2 : -1;
    if (kind < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown norm '%s'", norm);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, x->rank, x->dims, &y));
    for (int64_t r = 0; r < rows; r++) {
        double d = 0;
        for (int64_t c = 0; c < cols; c++) {
            double v = lt_load_f64(x->data, x->dtype, r * cols + c);
            if (kind == 0) d = fabs(v) > d ? fabs(v) : d;
            else if (kind == 1) d += fabs(v);
            else d += v * v;
        }
        if (kind == 2) d = sqrt(d);
        if (d < 1e-30) d = 1e-30;
        for (int64_t c = 0; c < cols; c++)
            ((float *)y->data)[r * cols + c] = (float)(lt_load_f64(x->data, x->dtype, r * cols + c) / d);
    }
    return LT_OK;
}

/* ---- Imputer ---- */
lt_status lt_misc_infer_imputer(lt_infer *ic, lt_node *n) { return lt_infer_same_as_input0(ic, n); }

lt_status lt_misc_eval_imputer(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t rows, cols;
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    const float *vf;
    const int64_t *vi;
    int nf = lt_attr_floats(n, "imputed_value_floats", &vf), ni = lt_attr_ints(n, "imputed_value_int64s", &vi);
    bool fl = nf > 0;
    int nv = fl ? nf : ni;
    if (nv == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "no imputed values");
    if (nv != 1 && nv != cols)
        return lt_op_error(ev, n, LT_ERR_INVALID, "imputed values must have 1 or %lld entries", (long long)cols);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    memcpy(y->data, x->data, (size_t)lt_tensor_nbytes(x));
    double rf = lt_attr_float(n, "replaced_value_float", 0.0f);
    int64_t ri = lt_attr_int(n, "replaced_value_int64", 0);
    bool xfloat = lt_dtype_is_float(x->dtype);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = cols ? i % cols : 0, vk = nv == 1 ? 0 : c;
        bool hit;
        if (xfloat) {
            double v = lt_load_f64(x->data, x->dtype, i);
            hit = isnan(rf) ? isnan(v) : v == rf;
        } else {
            hit = lt_load_i64(x->data, x->dtype, i) == ri;
        }
        if (!hit) continue;
        if (fl) lt_store_f64(y->data, x->dtype, i, vf[vk]);
        else lt_store_i64(y->data, x->dtype, i, vi[vk]);
    }
    return LT_OK;
}

/* ---- LinearRegressor / LinearClassifier ---- */
static lt_status linear_scores(lt_eval *ev, const lt_node *n, const lt_tensor *x, int64_t rows, int64_t cols,
                               int64_t targets, double **out) {
    const float *coef, *icpt;
    int nc = lt_attr_floats(n, "coefficients", &coef), ni = lt_attr_floats(n, "intercepts", &icpt);
    int64_t need;
    if (!lt_mul_i64(targets, cols, &need) || nc != need)
        return lt_op_error(ev, n, LT_ERR_INVALID, "coefficients has %d entries, expected %lld x %lld", nc,
                           (long long)targets, (long long)cols);
    if (ni != 0 && ni != targets)
        return lt_op_error(ev, n, LT_ERR_INVALID, "intercepts has %d entries, expected %lld", ni, (long long)targets);
    int64_t cells;
    if (!lt_mul_i64(rows, targets, &cells) || cells > ((int64_t)1 << 36))
        return lt_op_error(ev, n, LT_ERR_NOMEM, "output of %lld x %lld is too large", (long long)rows, (long long)targets);
    double *s = lt_calloc(ev->ctx, (size_t)(cells > 0 ? cells : 1), sizeof *s, "linear scores");
    if (!s) return LT_ERR_NOMEM;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t t = 0; t < targets; t++) {
            double acc = ni ? icpt[t] : 0.0;
            for (int64_t c = 0; c < cols; c++) acc += lt_load_f64(x->data, x->dtype, r * cols + c) * coef[t * cols + c];
            s[r * targets + t] = acc;
        }
    *out = s;
    return LT_OK;
}

lt_status lt_misc_infer_linreg(lt_infer *ic, lt_node *n) {
    return infer_rows_by(ic, n, 0, LT_FLOAT, lt_attr_int(n, "targets", 1));
}

lt_status lt_misc_eval_linreg(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t rows, cols, targets = lt_attr_int(n, "targets", 1);
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    if (targets < 1 || targets > ((int64_t)1 << 30)) return lt_op_error(ev, n, LT_ERR_INVALID, "targets must be positive");
    lt_post post;
    LT_TRY(get_post(ev, n, &post));
    double *s;
    LT_TRY(linear_scores(ev, n, x, rows, cols, targets, &s));
    int64_t dims[2] = {rows, targets};
    lt_tensor *y;
    lt_status st = lt_out_new(ev, n, out, 0, LT_FLOAT, 2, dims, &y);
    for (int64_t r = 0; !st && r < rows; r++) {
        lt_misc_post_apply(post, s + r * targets, targets);
        for (int64_t t = 0; t < targets; t++) ((float *)y->data)[r * targets + t] = (float)s[r * targets + t];
    }
    lt_mem_free(s);
    return st;
}

lt_status lt_misc_infer_linclass(lt_infer *ic, lt_node *n) {
    const int64_t *li;
    int nli = lt_attr_ints(n, "classlabels_ints", &li);
    const float *coef;
    int nc = lt_attr_floats(n, "coefficients", &coef);
    const lt_type *t = lt_infer_in(n, 0);
    int64_t cols = t && t->kind == LT_TK_TENSOR && t->rank == 2 ? t->dims[1].value : -1;
    int64_t e = cols > 0 ? nc / cols : -1;
    int64_t ncls = nli ? nli : lt_attr_strings(n, "classlabels_strings", &(const char *const *){0});
    if (e == 1 && ncls == 2) e = 2;
    lt_dim d0[1] = {{-1, NULL}};
    if (t && t->kind == LT_TK_TENSOR && t->rank == 2) d0[0] = t->dims[0];
    LT_TRY(lt_infer_set(ic, n, 0, nli || !lt_node_attr(n, "classlabels_strings") ? LT_INT64 : LT_STRING, 1, d0));
    return infer_rows_by(ic, n, 1, LT_FLOAT, e);
}

lt_status lt_misc_eval_linclass(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t rows, cols;
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    const int64_t *li;
    const char *const *ls;
    int nli = lt_attr_ints(n, "classlabels_ints", &li), nls = lt_attr_strings(n, "classlabels_strings", &ls);
    const float *coef;
    int nc = lt_attr_floats(n, "coefficients", &coef);
    if (cols < 1 || nc % cols) return lt_op_error(ev, n, LT_ERR_INVALID, "coefficients do not divide into %lld columns", (long long)cols);
    int64_t e = nc / cols, ncls = nli > nls ? nli : nls;
    lt_post post;
    LT_TRY(get_post(ev, n, &post));
    double *s;
    LT_TRY(linear_scores(ev, n, x, rows, cols, e, &s));
    int64_t w = (e == 1 && ncls == 2) ? 2 : e;
    bool strings = nls > 0 && nli == 0;
    int64_t d1[1] = {rows}, d2[2] = {rows, w};
    lt_tensor *lab, *sc;
    lt_status st = lt_out_new(ev, n, out, 0, strings ? LT_STRING : LT_INT64, 1, d1, &lab);
    if (!st) st = lt_out_new(ev, n, out, 1, LT_FLOAT, 2, d2, &sc);
    double row[2];
    for (int64_t r = 0; !st && r < rows; r++) {
        double *v = s + r * e;
        if (w == 2 && e == 1) {
            row[0] = -v[0];
            row[1] = v[0];
            v = row;
        }
        lt_misc_post_apply(post, v, w);
        for (int64_t t = 0; t < w; t++) ((float *)sc->data)[r * w + t] = (float)v[t];
        int64_t best = 0;
        bool pos = true;
        if (w > 1) {
            for (int64_t t = 1; t < w; t++)
                if (v[t] > v[best]) best = t;
        } else {
            pos = v[0] >= (post == LT_POST_NONE ? 0.0 : 0.5);
        }
        if (strings) {
            const char *l = w > 1 ? (best < nls ? ls[best] : "") : (pos && nls ? ls[0] : "");
            st = lt_tensor_set_string(ev->ctx, lab, r, l, strlen(l));
        } else {
            int64_t l = w > 1 ? (nli ? (best < nli ? li[best] : best) : best) : (pos ? (nli ? li[0] : 1) : 0);
            ((int64_t *)lab->data)[r] = l;
        }
    }
    lt_mem_free(s);
    return st;
}

/* ---- OneHotEncoder ---- */
lt_status lt_misc_infer_onehot(lt_infer *ic, lt_node *n) {
    const int64_t *ci;
    const char *const *cs;
    int64_t k = lt_attr_ints(n, "cats_int64s", &ci);
    if (!k) k = lt_attr_strings(n, "cats_strings", &cs);
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank >= LT_MAX_RANK) return lt_infer_set(ic, n, 0, LT_FLOAT, -1, NULL);
    lt_dim d[LT_MAX_RANK];
    for (int q = 0; q < t->rank; q++) d[q] = t->dims[q];
    d[t->rank] = (lt_dim){k, NULL};
    return lt_infer_set(ic, n, 0, LT_FLOAT, t->rank + 1, d);
}

lt_status lt_misc_eval_onehot(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    const int64_t *ci;
    const char *const *cs;
    int ni = lt_attr_ints(n, "cats_int64s", &ci), ns = lt_attr_strings(n, "cats_strings", &cs);
    bool strings = ni == 0;
    int64_t k = strings ? ns : ni;
    if (k == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "no categories");
    if (strings != (x->dtype == LT_STRING))
        return lt_op_error(ev, n, LT_ERR_INVALID, "input type %s does not match the categories", lt_dtype_name(x->dtype));
    if (!strings && lt_ew_kind_of(x->dtype) == LT_EW_OTHER) return lt_op_error(ev, n, LT_ERR_INVALID, "unsupported input type");
    if (x->rank + 1 > LT_MAX_RANK) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input rank too large");
    int64_t dims[LT_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
    dims[x->rank] = k;
    bool zeros = lt_attr_int(n, "zeros", 1) != 0;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, x->rank + 1, dims, &y));
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t hit = -1;
        for (int64_t c = 0; c < k && hit < 0; c++) {
            if (strings) hit = strcmp(((char *const *)x->data)[i], cs[c]) == 0 ? c : -1;
            else hit = lt_load_f64(x->data, x->dtype, i) == (double)ci[c] ? c : -1;
        }
        if (hit >= 0) ((float *)y->data)[i * k + hit] = 1.0f;
        else if (!zeros) return lt_op_error(ev, n, LT_ERR_INVALID, "element %lld is not a known category", (long long)i);
    }
    return LT_OK;
}

/* ---- FeatureVectorizer ---- */
lt_status lt_misc_infer_featvec(lt_infer *ic, lt_node *n) {
    const int64_t *d;
    int nd = lt_attr_ints(n, "inputdimensions", &d);
    int64_t total = 0;
    for (int k = 0; k < nd; k++) total += d[k] > 0 ? d[k] : 0;
    return infer_rows_by(ic, n, 0, LT_FLOAT, total);
}

lt_status lt_misc_eval_featvec(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const int64_t *d;
    int nd = lt_attr_ints(n, "inputdimensions", &d);
    if (nd != n->n_in) return lt_op_error(ev, n, LT_ERR_INVALID, "inputdimensions has %d entries for %d inputs", nd, n->n_in);
    int64_t rows = -1, total = 0;
    for (int k = 0; k < n->n_in; k++) {
        const lt_tensor *x;
        int64_t r, c;
        LT_TRY(lt_in_tensor(ev, n, in, k, &x));
        LT_TRY(rows_cols(ev, n, x, &r, &c));
        if (x->rank == 1) { r = x->dims[0]; c = 1; }
        if (rows >= 0 && r != rows) return lt_op_error(ev, n, LT_ERR_INVALID, "inputs have different row counts");
        rows = r;
        if (d[k] < 0 || d[k] > ((int64_t)1 << 30)) return lt_op_error(ev, n, LT_ERR_INVALID, "bad inputdimensions[%d]", k);
        total += d[k];
    }
    if (rows < 0) rows = 0;
    int64_t dims[2] = {rows, total};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, 2, dims, &y));
    int64_t col0 = 0;
    for (int k = 0; k < n->n_in; k++) {
        const lt_tensor *x;
        LT_TRY(lt_in_tensor(ev, n, in, k, &x));
        int64_t c = x->rank == 1 ? 1 : x->dims[1];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < d[k] && j < c; j++)
                ((float *)y->data)[r * total + col0 + j] = (float)lt_load_f64(x->data, x->dtype, r * c + j);
        col0 += d[k];
    }
    return LT_OK;
}

/* ---- CategoryMapper ---- */
lt_status lt_misc_infer_catmap(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    return lt_ew_infer_unary_dt(ic, n, t && t->dtype == LT_STRING ? LT_INT64 : LT_STRING);
}

lt_status lt_misc_eval_catmap(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    const int64_t *ci;
    const char *const *cs;
    int ni = lt_attr_ints(n, "cats_int64s", &ci), ns = lt_attr_strings(n, "cats_strings", &cs);
    if (ni != ns) return lt_op_error(ev, n, LT_ERR_INVALID, "cats_int64s and cats_strings differ in length");
    bool xs = x->dtype == LT_STRING;
    if (!xs && !lt_dtype_is_int(x->dtype)) return lt_op_error(ev, n, LT_ERR_INVALID, "input must be string or int64");
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, xs ? LT_INT64 : LT_STRING, x->rank, x->dims, &y));
    int64_t dint = lt_attr_int(n, "default_int64", -1);
    const char *dstr = lt_attr_string(n, "default_string", "_Unused");
    for (int64_t i = 0; i < x->numel; i++) {
        if (xs) {
            int64_t v = dint;
            for (int k = 0; k < ns; k++)
                if (strcmp(cs[k], ((char *const *)x->data)[i]) == 0) { v = ci[k]; break; }
            ((int64_t *)y->data)[i] = v;
        } else {
            const char *s = dstr;
            int64_t v = lt_load_i64(x->data, x->dtype, i);
            for (int k = 0; k < ni; k++)
                if (ci[k] == v) { s = cs[k]; break; }
            LT_TRY(lt_tensor_set_string(ev->ctx, y, i, s, strlen(s)));
        }
    }
    return LT_OK;
}
