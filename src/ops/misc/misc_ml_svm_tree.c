/* misc_ml_svm_tree.c — more ai.onnx.ml operators: TreeEnsembleRegressor and TreeEnsembleClassifier
 * (opset 1-3, trees addressed by (tree id, node id)), SVMRegressor, SVMClassifier, and the map ops
 * ZipMap, DictVectorizer, CastMap.
 *
 * The classifiers reproduce onnx's reference (which follows onnxruntime): the binary-class score
 * layouts, the label choice from votes or scores, Platt-scaled pairwise probabilities combined by
 * the iterative multiclass_probability method. Node lookups are binary searches over sorted
 * (tree, node) pairs; a missing node, an out-of-range feature or class id, or a cycle is an error
 * naming the node. Maps are lt_datum MAP values: a 1-D keys tensor and a values tensor whose first
 * dimension matches it.
 */
#include "misc_impl.h"

#include "../elementwise/elementwise_impl.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- shared ---- */
static lt_status get_post(lt_eval *ev, const lt_node *n, lt_post *p) {
    const char *s = lt_attr_string(n, "post_transform", "NONE");
    if (!lt_misc_post_parse(s, p)) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown post_transform '%s'", s);
    return LT_OK;
}

static lt_status rows_cols(lt_eval *ev, const lt_node *n, const lt_tensor *x, int64_t *rows, int64_t *cols) {
    lt_ew_kind k = lt_ew_kind_of(x->dtype);
    if (k != LT_EW_F && k != LT_EW_S && k != LT_EW_U)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    if (x->rank == 1) { *rows = 1; *cols = x->dims[0]; return LT_OK; }
    if (x->rank == 2) { *rows = x->dims[0]; *cols = x->dims[1]; return LT_OK; }
    return lt_op_error(ev, n, LT_ERR_INVALID, "input must have shape [N, C] or [C], got rank %d", x->rank);
}

/* A float-list attribute, or its *_as_tensor form (any float dtype), read as doubles (heap). */
static lt_status attr_doubles(lt_eval *ev, const lt_node *n, const char *name, double **out, int64_t *count) {
    char tname[96];
    snprintf(tname, sizeof tname, "%s_as_tensor", name);
    const lt_tensor *t = lt_attr_tensor(n, tname);
    const float *f;
    int64_t cnt = t ? t->numel : lt_attr_floats(n, name, &f);
    double *d = lt_alloc(ev->ctx, (size_t)(cnt ? cnt : 1) * sizeof *d, name);
    if (!d) return LT_ERR_NOMEM;
    for (int64_t k = 0; k < cnt; k++) d[k] = t ? lt_load_f64(t->data, t->dtype, k) : f[k];
    *out = d;
    *count = cnt;
    return LT_OK;
}

/* ---- legacy tree ensembles ---- */
enum { TM_LEQ, TM_LT, TM_GTE, TM_GT, TM_EQ, TM_NEQ, TM_LEAF };

typedef struct ltree {
    int64_t nn;
    const int64_t *treeids, *nodeids, *feat, *tid, *fid, *miss;
    int64_t n_miss;
    uint8_t *mode;
    double *value;
    int64_t *order;   /* node indices sorted by (tree id, node id) */
    int64_t *skey;    /* (tree id, node id, index) triples in that order, for the binary search */
    int64_t *trees;   /* root node index of each tree, trees in ascending id order */
    int64_t ntrees;
    int64_t *efirst;  /* CSR over nodes: entries (targets/classes) of node k at eidx[efirst[k]..efirst[k+1]) */
    int64_t *eidx;
} ltree;

/* Sort (tree id, node id, index) triples: the keys travel with the index, so the comparison needs
 * no context (qsort has no user pointer, and a static one would not be thread-safe). */
static int cmp_triples(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    for (int k = 0; k < 3; k++)
        if (x[k] != y[k]) return x[k] < y[k] ? -1 : 1;
    return 0;
}

static int64_t ltree_find(const ltree *t, int64_t tree, int64_t node) {
    int64_t lo = 0, hi = t->nn;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const int64_t *e = t->skey + 3 * mid;
        if (e[0] < tree || (e[0] == tree && e[1] < node)) lo = mid + 1;
        else hi = mid;
    }
    if (lo < t->nn && t->skey[3 * lo] == tree && t->skey[3 * lo + 1] == node) return t->skey[3 * lo + 2];
    return -1;
}

static void ltree_free(ltree *t) {
    lt_mem_free(t->mode);
    lt_mem_free(t->value);
    lt_mem_free(t->order);
    lt_mem_free(t->skey);
    lt_mem_free(t->trees);
    lt_mem_free(t->efirst);
    lt_mem_free(t->eidx);
}

/* prefix: "target" or "class" (entries: <prefix>_treeids, _nodeids, _ids). */
static lt_status ltree_read(lt_eval *ev, const lt_node *n, ltree *t, int64_t n_features, const char *prefix,
                            const int64_t **ids, int64_t *n_entries) {
    memset(t, 0, sizeof *t);
    t->nn = lt_attr_ints(n, "nodes_treeids", &t->treeids);
    int64_t c[4];
    c[0] = lt_attr_ints(n, "nodes_nodeids", &t->nodeids);
    c[1] = lt_attr_ints(n, "nodes_featureids", &t->feat);
    c[2] = lt_attr_ints(n, "nodes_truenodeids", &t->tid);
    c[3] = lt_attr_ints(n, "nodes_falsenodeids", &t->fid);
    t->n_miss = lt_attr_ints(n, "nodes_missing_value_tracks_true", &t->miss);
    const char *const *modes;
    int64_t nm = lt_attr_strings(n, "nodes_modes", &modes);
    for (int k = 0; k < 4; k++)
        if (c[k] != t->nn) return lt_op_error(ev, n, LT_ERR_INVALID, "node attributes have different lengths");
    if (nm != t->nn || (t->n_miss && t->n_miss != t->nn))
        return lt_op_error(ev, n, LT_ERR_INVALID, "nodes_modes or nodes_missing_value_tracks_true has the wrong length");
    int64_t nv;
    lt_status st = attr_doubles(ev, n, "nodes_values", &t->value, &nv);
    if (st) return st;
    if (nv != t->nn) { ltree_free(t); return lt_op_error(ev, n, LT_ERR_INVALID, "nodes_values has the wrong length"); }
    size_t nn1 = (size_t)(t->nn ? t->nn : 1);
    t->mode = lt_alloc(ev->ctx, nn1, "tree modes");
    t->order = lt_alloc(ev->ctx, nn1 * sizeof *t->order, "tree order");
    t->skey = lt_alloc(ev->ctx, nn1 * 3 * sizeof *t->skey, "tree order");
    t->trees = lt_alloc(ev->ctx, nn1 * sizeof *t->trees, "tree roots");
    t->efirst = lt_calloc(ev->ctx, nn1 + 1, sizeof *t->efirst, "tree entries");
    if (!t->mode || !t->order || !t->skey || !t->trees || !t->efirst) { ltree_free(t); return LT_ERR_NOMEM; }
    static const char *names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF"};
    for (int64_t k = 0; k < t->nn; k++) {
        int m = -1;
        for (int q = 0; q < 7; q++)
            if (strcmp(modes[k], names[q]) == 0) m = q;
        if (m < 0) { ltree_free(t); return lt_op_error(ev, n, LT_ERR_INVALID, "unknown node mode '%s'", modes[k]); }
        t->mode[k] = (uint8_t)m;
        if (m != TM_LEAF && (t->feat[k] < 0 || t->feat[k] >= n_features)) {
            ltree_free(t);
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at nodes_featureids[%lld]",
                               (long long)t->feat[k], (long long)n_features, (long long)k);
        }
        t->skey[3 * k] = t->treeids[k];
        t->skey[3 * k + 1] = t->nodeids[k];
        t->skey[3 * k + 2] = k;
    }
    qsort(t->skey, (size_t)t->nn, 3 * sizeof *t->skey, cmp_triples);
    for (int64_t q = 0; q < t->nn; q++) t->order[q] = t->skey[3 * q + 2];
    for (int64_t q = 0; q < t->nn; q++) {
        int64_t k = t->order[q];
        if (q > 0 && t->treeids[k] == t->treeids[t->order[q - 1]] && t->nodeids[k] == t->nodeids[t->order[q - 1]]) {
            ltree_free(t);
            return lt_op_error(ev, n, LT_ERR_INVALID, "node (%lld, %lld) is defined twice", (long long)t->treeids[k],
                               (long long)t->nodeids[k]);
        }
        if (q == 0 || t->treeids[k] != t->treeids[t->order[q - 1]]) t->trees[t->ntrees++] = k;
        else if (k < t->trees[t->ntrees - 1]) t->trees[t->ntrees - 1] = k; /* the root is the tree's first node */
    }
    /* entries */
    char nm1[64], nm2[64], nm3[64];
    snprintf(nm1, sizeof nm1, "%s_treeids", prefix);
    snprintf(nm2, sizeof nm2, "%s_nodeids", prefix);
    snprintf(nm3, sizeof nm3, "%s_ids", prefix);
    const int64_t *et, *en;
    int64_t ne = lt_attr_ints(n, nm1, &et);
    if (lt_attr_ints(n, nm2, &en) != ne || lt_attr_ints(n, nm3, ids) != ne) {
        ltree_free(t);
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s_* attributes have different lengths", prefix);
    }
    t->eidx = lt_alloc(ev->ctx, (size_t)(ne ? ne : 1) * sizeof *t->eidx, "tree entries");
    int64_t *fill = lt_calloc(ev->ctx, nn1, sizeof *fill, "tree entries");
    if (!t->eidx || !fill) { lt_mem_free(fill); ltree_free(t); return LT_ERR_NOMEM; }
    for (int64_t e = 0; e < ne; e++) {
        int64_t k = ltree_find(t, et[e], en[e]);
        if (k < 0) {
            lt_mem_free(fill);
            ltree_free(t);
            return lt_op_error(ev, n, LT_ERR_INVALID, "%s entry %lld names node (%lld, %lld), which does not exist", prefix,
                               (long long)e, (long long)et[e], (long long)en[e]);
        }
        t->efirst[k + 1]++;
    }
    for (int64_t k = 0; k < t->nn; k++) t->efirst[k + 1] += t->efirst[k];
    for (int64_t e = 0; e < ne; e++) {
        int64_t k = ltree_find(t, et[e], en[e]);
        t->eidx[t->efirst[k] + fill[k]++] = e;
    }
    lt_mem_free(fill);
    *n_entries = ne;
    return LT_OK;
}

/* Leaf node index reached by row x in tree ti, or -1 after reporting an error. */
static int64_t ltree_leaf(lt_eval *ev, const lt_node *n, const ltree *t, int64_t ti, const lt_tensor *x, int64_t off) {
    int64_t k = t->trees[ti];
    for (int64_t steps = 0; t->mode[k] != TM_LEAF; steps++) {
        if (steps > t->nn) {
            lt_op_error(ev, n, LT_ERR_INVALID, "tree %lld has a cycle", (long long)t->treeids[k]);
            return -1;
        }
        double v = lt_load_f64(x->data, x->dtype, off + t->feat[k]), s = t->value[k];
        bool r;
        if (isnan(v)) r = t->n_miss && t->miss[k] >= 1;
        else switch (t->mode[k]) {
            case TM_LEQ: r = v <= s; break;
            case TM_LT: r = v < s; break;
            case TM_GTE: r = v >= s; break;
            case TM_GT: r = v > s; break;
            case TM_EQ: r = v == s; break;
            default: r = v != s; break;
            }
        int64_t next = ltree_find(t, t->treeids[k], r ? t->tid[k] : t->fid[k]);
        if (next < 0) {
            lt_op_error(ev, n, LT_ERR_INVALID, "node (%lld, %lld) branches to missing node %lld", (long long)t->treeids[k],
                        (long long)t->nodeids[k], (long long)(r ? t->tid[k] : t->fid[k]));
            return -1;
        }
        k = next;
    }
    return k;
}

lt_status lt_misc_infer_tree_legacy(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    lt_dim rows = {-1, NULL};
    if (t && t->kind == LT_TK_TENSOR && t->rank == 2) rows = t->dims[0];
    if (n->op == LT_OP_TreeEnsembleRegressor) {
        lt_dim d[2] = {rows, {lt_attr_int(n, "n_targets", -1), NULL}};
        return lt_infer_set(ic, n, 0, LT_FLOAT, 2, d);
    }
    const int64_t *li;
    bool ints = lt_attr_ints(n, "classlabels_int64s", &li) > 0 || !lt_node_attr(n, "classlabels_strings");
    LT_TRY(lt_infer_set(ic, n, 0, ints ? LT_INT64 : LT_STRING, 1, &rows));
    lt_dim d[2] = {rows, {-1, NULL}};
    return lt_infer_set(ic, n, 1, LT_FLOAT, 2, d);
}

lt_status lt_misc_eval_tree_legacy(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t rows, cols;
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    lt_post post;
    LT_TRY(get_post(ev, n, &post));
    bool reg = n->op == LT_OP_TreeEnsembleRegressor;
    const int64_t *ids = NULL; /* set by ltree_read (initialized for compilers that cannot tell) */
    int64_t ne = 0;
    ltree t;
    LT_TRY(ltree_read(ev, n, &t, cols, reg ? "target" : "class", &ids, &ne));
    double *w = NULL, *base = NULL, *res = NULL;
    int64_t nw = 0, nb = 0;
    const int64_t *li = NULL;
    const char *const *ls = NULL;
    int64_t nli = lt_attr_ints(n, "classlabels_int64s", &li), nls = lt_attr_strings(n, "classlabels_strings", &ls);
    int64_t width = reg ? lt_attr_int(n, "n_targets", 1) : (nli > nls ? nli : nls);
    lt_status st = attr_doubles(ev, n, reg ? "target_weights" : "class_weights", &w, &nw);
    if (!st) st = attr_doubles(ev, n, "base_values", &base, &nb);
    if (!st && nw != ne) st = lt_op_error(ev, n, LT_ERR_INVALID, "weights have %lld entries, ids %lld", (long long)nw, (long long)ne);
    if (!st && (width < 1 || width > ((int64_t)1 << 24)))
        st = lt_op_error(ev, n, LT_ERR_INVALID, "bad number of %s: %lld", reg ? "targets" : "classes", (long long)width);
    if (!st && nb && nb != width)
        st = lt_op_error(ev, n, LT_ERR_INVALID, "base_values has %lld entries, expected %lld", (long long)nb, (long long)width);
    for (int64_t e = 0; !st && e < ne; e++)
        if (ids[e] < 0 || ids[e] >= width)
            st = lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at %s_ids[%lld]", (long long)ids[e],
                             (long long)width, reg ? "target" : "class", (long long)e);
    /* Binary classifier: a single distinct class id. */
    bool binary = false;
    if (!st && !reg && ne > 0) {
        binary = true;
        for (int64_t e = 1; e < ne; e++)
            if (ids[e] != ids[0]) binary = false;
    }
    int64_t ow = (!reg && binary && width == 1) ? 2 : width;
    int64_t cells;
    if (!st && (!lt_mul_i64(rows, ow, &cells) || cells > ((int64_t)1 << 36)))
        st = lt_op_error(ev, n, LT_ERR_NOMEM, "output is too large");
    if (!st && !(res = lt_calloc(ev->ctx, (size_t)(cells ? cells : 1), sizeof *res, "tree scores"))) st = LT_ERR_NOMEM;
    const char *agg = reg ? lt_attr_string(n, "aggregate_function", "SUM") : "SUM";
    int ag = strcmp(agg, "SUM") == 0 ? 0 : strcmp(agg, "AVERAGE") == 0 ? 1 : strcmp(agg, "MIN") == 0 ? 2 : strcmp(agg, "MAX") == 0 ? 3 : -1;
    if (!st && ag < 0) st = lt_op_error(ev, n, LT_ERR_INVALID, "unknown aggregate_function '%s'", agg);
    /* The reference accumulates in the output's precision (float32 unless a regressor reads
     * doubles); doing the same keeps ties (0.5 vs 0.5) resolved the same way. */
    bool f32 = !(reg && x->dtype == LT_DOUBLE);
    for (int64_t r = 0; !st && r < rows; r++) {
        double *v = res + r * ow;
        double init = ag == 2 ? FLT_MAX : ag == 3 ? -FLT_MAX : 0.0;
        if (x->dtype == LT_DOUBLE && ag >= 2) init = ag == 2 ? DBL_MAX : -DBL_MAX;
        for (int64_t c = 0; c < width; c++) v[c] = reg ? init : (nb ? base[c] : 0.0);
        for (int64_t ti = 0; ti < t.ntrees; ti++) {
            int64_t leaf = ltree_leaf(ev, n, &t, ti, x, r * cols);
            if (leaf < 0) { st = ev->ctx->status ? ev->ctx->status : LT_ERR_INVALID; break; }
            for (int64_t q = t.efirst[leaf]; q < t.efirst[leaf + 1]; q++) {
                int64_t e = t.eidx[q];
                double *a = &v[ids[e]];
                if (ag <= 1) *a = f32 ? (double)(float)(*a + (double)(float)w[e]) : *a + w[e];
                else if (ag == 2) *a = w[e] < *a ? w[e] : *a;
                else *a = w[e] > *a ? w[e] : *a;
            }
        }
        if (st) break;
        if (reg) {
            for (int64_t c = 0; c < width; c++) {
                if (ag == 1) v[c] /= (double)(t.ntrees ? t.ntrees : 1);
                if (nb) v[c] += base[c];
            }
        } else if (binary) {
            v[1] = v[0];
            v[0] = (post == LT_POST_NONE || post == LT_POST_PROBIT) ? (double)(float)(1 - v[1]) : -v[1];
        }
        lt_misc_post_apply(post, v, ow);
    }
    lt_tensor *lab = NULL, *sc;
    int64_t d1[1] = {rows}, d2[2] = {rows, ow};
    if (!st && reg) st = lt_out_new(ev, n, out, 0, LT_FLOAT, 2, d2, &sc);
    else if (!st) {
        bool strings = nls > 0 && nli == 0;
        if (!strings && nli == 1 && li[0] != 1)
            st = lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "a single class label other than 1 is not supported");
        if (!st && strings && nls == 1)
            st = lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "a single string class label is not supported");
        if (!st) st = lt_out_new(ev, n, out, 0, strings ? LT_STRING : LT_INT64, 1, d1, &lab);
        if (!st) st = lt_out_new(ev, n, out, 1, LT_FLOAT, 2, d2, &sc);
        for (int64_t r = 0; !st && r < rows; r++) {
            const double *v = res + r * ow;
            int64_t best = 0;
            for (int64_t c = 1; c < ow; c++)
                if (v[c] > v[best]) best = c;
            if (strings) st = lt_tensor_set_string(ev->ctx, lab, r, ls[best], strlen(ls[best]));
            else ((int64_t *)lab->data)[r] = nli == 1 ? (best == 1 ? 1 : 0) : (best < nli ? li[best] : best);
        }
    }
    if (!st)
        for (int64_t i = 0; i < rows * ow; i++) ((float *)sc->data)[i] = (float)res[i];
    lt_mem_free(res);
    lt_mem_free(w);
    lt_mem_free(base);
    ltree_free(&t);
    return st;
}

/* ---- SVMs ---- */
typedef struct svm {
    int kernel; /* 0 linear, 1 poly, 2 rbf, 3 sigmoid */
    double gamma, coef0;
    int degree;
} svm;

static lt_status svm_kernel(lt_eval *ev, const lt_node *n, svm *k) {
    const char *kt = lt_attr_string(n, "kernel_type", "LINEAR");
    static const char *names[] = {"LINEAR", "POLY", "RBF", "SIGMOID"};
    k->kernel = -1;
    for (int q = 0; q < 4; q++)
        if (strcasecmp(kt, names[q]) == 0) k->kernel = q;
    if (k->kernel < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown kernel_type '%s'", kt);
    const float *kp;
    int nk = lt_attr_floats(n, "kernel_params", &kp);
    k->gamma = nk > 0 ? kp[0] : 0.0;
    k->coef0 = nk > 1 ? kp[1] : 0.0;
    k->degree = nk > 2 ? (int)kp[2] : 0;
    return LT_OK;
}

static double svm_dot(const svm *k, int kernel, const lt_tensor *x, int64_t off, const float *b, int64_t cols) {
    double s = 0;
    if (kernel == 2) {
        for (int64_t c = 0; c < cols; c++) {
            double d = lt_load_f64(x->data, x->dtype, off + c) - b[c];
            s += d * d;
        }
        return exp(-k->gamma * s);
    }
    for (int64_t c = 0; c < cols; c++) s += lt_load_f64(x->data, x->dtype, off + c) * b[c];
    if (kernel == 1) return pow(s * k->gamma + k->coef0, k->degree);
    if (kernel == 3) return tanh(s * k->gamma + k->coef0);
    return s;
}

lt_status lt_misc_infer_svm(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    lt_dim rows = {-1, NULL};
    if (t && t->kind == LT_TK_TENSOR && t->rank == 2) rows = t->dims[0];
    if (n->op == LT_OP_SVMRegressor) {
        lt_dim d[2] = {rows, {1, NULL}};
        return lt_infer_set(ic, n, 0, LT_FLOAT, 2, d);
    }
    const int64_t *li;
    bool ints = lt_attr_ints(n, "classlabels_ints", &li) > 0 || !lt_node_attr(n, "classlabels_strings");
    LT_TRY(lt_infer_set(ic, n, 0, ints ? LT_INT64 : LT_STRING, 1, &rows));
    lt_dim d[2] = {rows, {-1, NULL}};
    return lt_infer_set(ic, n, 1, LT_FLOAT, 2, d);
}

static lt_status eval_svm_reg(lt_eval *ev, const lt_node *n, const lt_tensor *x, int64_t rows, int64_t cols, lt_datum **out) {
    svm k;
    LT_TRY(svm_kernel(ev, n, &k));
    lt_post post;
    LT_TRY(get_post(ev, n, &post));
    const float *coef, *rho, *sv;
    int64_t nc = lt_attr_floats(n, "coefficients", &coef), nr = lt_attr_floats(n, "rho", &rho);
    int64_t nsv = lt_attr_floats(n, "support_vectors", &sv), ns = lt_attr_int(n, "n_supports", 0);
    bool one_class = lt_attr_int(n, "one_class", 0) != 0;
    if (nr < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "rho is missing");
    int64_t need;
    if (ns > 0 && (nc < ns || !lt_mul_i64(ns, cols, &need) || nsv != need))
        return lt_op_error(ev, n, LT_ERR_INVALID, "support_vectors/coefficients do not match n_supports=%lld and %lld features",
                           (long long)ns, (long long)cols);
    if (ns <= 0 && nc != cols) return lt_op_error(ev, n, LT_ERR_INVALID, "coefficients must have %lld entries", (long long)cols);
    int64_t dims[2] = {rows, 1};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, 2, dims, &y));
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        if (ns > 0)
            for (int64_t j = 0; j < ns; j++) s += coef[j] * svm_dot(&k, k.kernel, x, r * cols, sv + j * cols, cols);
        else
            s = svm_dot(&k, 0, x, r * cols, coef, cols);
        s += rho[0];
        if (one_class) s = s > 0 ? 1 : -1;
        lt_misc_post_apply(post, &s, 1);
        ((float *)y->data)[r] = (float)s;
    }
    return LT_OK;
}

static double logistic1(double v) {
    double e = 1.0 / (1.0 + exp(-fabs(v)));
    return v < 0 ? 1.0 - e : e;
}

/* Pairwise probabilities r (k x k) -> class probabilities p (Wu, Lin and Weng's method 2, as in
 * libsvm and onnxruntime; onnx's numpy reference collapses Q's off-diagonal row to one dot product,
 * a transcription slip we do not copy). */
static void multiclass_probability(int64_t k, const double *R, double *P, double *Q, double *Qp) {
    int64_t max_iter = k > 100 ? k : 100;
    double eps = 0.005 / (double)k;
    for (int64_t t = 0; t < k; t++) {
        P[t] = 1.0 / (double)k;
        double qtt = 0;
        for (int64_t j = 0; j < t; j++) qtt += R[j * k + t] * R[j * k + t];
        for (int64_t j = 0; j < t; j++) Q[t * k + j] = Q[j * k + t];
        for (int64_t j = t + 1; j < k; j++) qtt += R[j * k + t] * R[j * k + t];
        Q[t * k + t] = qtt;
        for (int64_t j = t + 1; j < k; j++) Q[t * k + j] = -R[j * k + t] * R[t * k + j];
    }
    for (int64_t it = 0; it < max_iter; it++) {
        double pQp = 0;
        for (int64_t t = 0; t < k; t++) {
            Qp[t] = 0;
            for (int64_t j = 0; j < k; j++) Qp[t] += Q[t * k + j] * P[j];
            pQp += P[t] * Qp[t];
        }
        double max_error = 0;
        for (int64_t t = 0; t < k; t++) {
            double e = fabs(Qp[t] - pQp);
            if (e > max_error) max_error = e;
        }
        if (max_error < eps) break;
        for (int64_t t = 0; t < k; t++) {
            double diff = (-Qp[t] + pQp) / Q[t * k + t];
            P[t] += diff;
            pQp = (pQp + diff * (diff * Q[t * k + t] + 2 * Qp[t])) / ((1 + diff) * (1 + diff));
            for (int64_t j = 0; j < k; j++) {
                P[j] /= 1 + diff;
                Qp[j] = (Qp[j] + diff * Q[t * k + j]) / (1 + diff);
            }
        }
    }
}

static lt_status eval_svm_class(lt_eval *ev, const lt_node *n, const lt_tensor *x, int64_t rows, int64_t cols, lt_datum **out) {
    svm k;
    LT_TRY(svm_kernel(ev, n, &k));
    lt_post post;
    LT_TRY(get_post(ev, n, &post));
    const float *coef, *rho, *sv, *pa, *pb;
    const int64_t *vpc, *li;
    const char *const *ls;
    int64_t nc = lt_attr_floats(n, "coefficients", &coef), nr = lt_attr_floats(n, "rho", &rho);
    int64_t nsv = lt_attr_floats(n, "support_vectors", &sv), nvpc = lt_attr_ints(n, "vectors_per_class", &vpc);
    int64_t npa = lt_attr_floats(n, "prob_a", &pa), npb = lt_attr_floats(n, "prob_b", &pb);
    int64_t nli = lt_attr_ints(n, "classlabels_ints", &li), nls = lt_attr_strings(n, "classlabels_strings", &ls);
    int64_t ncls = nli ? nli : nls;
    if (ncls < 1) ncls = 1;
    if (ncls > 4096) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "too many classes");
    int64_t vcount = 0;
    for (int64_t q = 0; q < nvpc; q++) {
        if (vpc[q] < 0 || vcount + vpc[q] > nc) return lt_op_error(ev, n, LT_ERR_INVALID, "bad vectors_per_class");
        vcount += vpc[q];
    }
    bool svc = vcount > 0;
    int kern = svc ? k.kernel : 0;
    int64_t need, npairs = ncls * (ncls - 1) / 2;
    if (svc) {
        if (nvpc < ncls || !lt_mul_i64(vcount, cols, &need) || nsv != need || nc < (ncls - 1) * vcount || nr < npairs)
            return lt_op_error(ev, n, LT_ERR_INVALID, "support vectors, coefficients and rho do not fit %lld classes", (long long)ncls);
    } else if (!lt_mul_i64(ncls, cols, &need) || nc < need || nr < 1) {
        return lt_op_error(ev, n, LT_ERR_INVALID, "coefficients must have %lld x %lld entries", (long long)ncls, (long long)cols);
    }
    bool has_proba = svc && npa > 0;
    if (has_proba && (npa < npairs || npb < npairs)) return lt_op_error(ev, n, LT_ERR_INVALID, "prob_a/prob_b are too short");
    bool all_pos = true;
    for (int64_t q = 0; q < nc; q++)
        if (coef[q] < 0) all_pos = false;
    int64_t nscore = svc ? (has_proba ? ncls : npairs) : ncls;
    /* Output width from write_scores: >= 2 scores stay, 1 score becomes 2 (or 1 with PROBIT or no
     * binary labels). */
    bool two_labels = nr == 1 && ncls == 2;
    int64_t ow = nscore >= 2 ? nscore : (post == LT_POST_PROBIT ? 1 : (two_labels ? 2 : 1));
    int64_t d1[1] = {rows}, d2[2] = {rows, ow};
    bool strings = nls > 0 && nli == 0;
    lt_tensor *lab, *sc;
    LT_TRY(lt_out_new(ev, n, out, 0, strings ? LT_STRING : LT_INT64, 1, d1, &lab));
    LT_TRY(lt_out_new(ev, n, out, 1, LT_FLOAT, 2, d2, &sc));
    size_t scratch = (size_t)(vcount + 2 * ncls + 3 * ncls * ncls + npairs + 8);
    double *buf = lt_alloc(ev->ctx, scratch * sizeof *buf, "svm scratch");
    if (!buf) return LT_ERR_NOMEM;
    double *kern_v = buf, *votes = kern_v + vcount, *scores = votes + ncls, *R = scores + (npairs > ncls ? npairs : ncls) + 2;
    double *Q = R + ncls * ncls, *Qp = Q + ncls * ncls, *P = Qp + ncls;
    int64_t *start = lt_alloc(ev->ctx, (size_t)ncls * sizeof *start, "svm scratch");
    if (!start) { lt_mem_free(buf); return LT_ERR_NOMEM; }
    for (int64_t q = 0, s = 0; q < ncls; q++) { start[q] = s; s += svc ? vpc[q] : 0; }
    lt_status st = LT_OK;
    for (int64_t r = 0; !st && r < rows; r++) {
        int64_t off = r * cols, ns = 0;
        if (!svc) {
            for (int64_t j = 0; j < ncls; j++) scores[ns++] = rho[0] + svm_dot(&k, 0, x, off, coef + j * cols, cols);
        } else {
            for (int64_t j = 0; j < vcount; j++) kern_v[j] = svm_dot(&k, kern, x, off, sv + j * cols, cols);
            for (int64_t q = 0; q < ncls; q++) votes[q] = 0;
            int64_t evals = 0;
            for (int64_t i = 0; i < ncls; i++)
                for (int64_t j = i + 1; j < ncls; j++) {
                    double s1 = 0, s2 = 0;
                    for (int64_t q = 0; q < vpc[i]; q++) s1 += coef[(j - 1) * vcount + start[i] + q] * kern_v[start[i] + q];
                    for (int64_t q = 0; q < vpc[j]; q++) s2 += coef[i * vcount + start[j] + q] * kern_v[start[j] + q];
                    double s = rho[evals] + s1 + s2;
                    scores[ns++] = s;
                    votes[s > 0 ? i : j] += 1;
                    evals++;
                }
        }
        if (has_proba) {
            int64_t idx = 0;
            for (int64_t i = 0; i < ncls; i++) {
                R[i * ncls + i] = 0;
                for (int64_t j = i + 1; j < ncls; j++) {
                    double v = 1 - logistic1(scores[idx] * pa[idx] + pb[idx]);
                    v = v < 1e-7 ? 1e-7 : v > 1 - 1e-7 ? 1 - 1e-7 : v;
                    R[i * ncls + j] = v;
                    R[j * ncls + i] = 1 - v;
                    idx++;
                }
            }
            multiclass_probability(ncls, R, P, Q, Qp);
            for (int64_t q = 0; q < ncls; q++) scores[q] = P[q];
            ns = ncls;
        }
        /* label */
        int64_t maxc = 0;
        double maxw;
        const double *src = svc ? votes : scores;
        int64_t nsrc = svc ? ncls : ns;
        for (int64_t q = 1; q < nsrc; q++)
            if (src[q] > src[maxc]) maxc = q;
        maxw = nsrc ? src[maxc] : 0;
        int64_t label; /* an index into the class labels, or the raw value 0/1 when `raw` */
        bool raw = false;
        int wadd = -1;
        if (nr == 1) {
            if (ncls == 2) {
                wadd = 2;
                if (!has_proba && all_pos && maxw >= 0.5) label = 1;
                else label = maxc;
            } else {
                raw = true;
                label = maxw > 0 ? 1 : 0;
            }
        } else {
            label = maxc;
        }
        if (strings) {
            if (label >= nls) {
                st = lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "label index %lld has no string class", (long long)label);
                break;
            }
            st = lt_tensor_set_string(ev->ctx, lab, r, ls[label], strlen(ls[label]));
        } else {
            ((int64_t *)lab->data)[r] = raw ? label : (nli ? (label < nli ? li[label] : label) : label);
        }
        /* scores */
        double outv[2];
        double *o = scores;
        int64_t on = ns;
        if (ns >= 2) {
            lt_misc_post_apply(post, scores, ns);
        } else if (ns == 1) {
            if (post == LT_POST_PROBIT) {
                lt_misc_post_apply(post, scores, 1);
            } else if (wadd == 0 || wadd == 1) {
                outv[0] = 1 - scores[0], outv[1] = scores[0], o = outv, on = 2;
            } else if (wadd == 2 || wadd == 3) {
                outv[0] = -scores[0], outv[1] = scores[0], o = outv, on = 2;
                if (post == LT_POST_LOGISTIC) { outv[0] = logistic1(-scores[0]); outv[1] = logistic1(scores[0]); }
                else lt_misc_post_apply(post, outv, 2);
            }
        }
        for (int64_t q = 0; q < ow; q++) ((float *)sc->data)[r * ow + q] = q < on ? (float)o[q] : 0.0f;
    }
    lt_mem_free(buf);
    lt_mem_free(start);
    return st;
}

lt_status lt_misc_eval_svm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t rows, cols;
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    return n->op == LT_OP_SVMRegressor ? eval_svm_reg(ev, n, x, rows, cols, out) : eval_svm_class(ev, n, x, rows, cols, out);
}

/* ---- maps ---- */
static lt_status new_map(lt_eval *ev, lt_tensor *keys, lt_tensor *values, lt_datum **out) {
    lt_datum *d = lt_calloc(ev->ctx, 1, sizeof *d, "map");
    if (!d) {
        lt_tensor_release(keys);
        lt_tensor_release(values);
        return LT_ERR_NOMEM;
    }
    d->refs = 1;
    d->kind = LT_DK_MAP;
    d->keys = keys;
    d->values = values;
    d->elem_dtype = values->dtype;
    *out = d;
    return LT_OK;
}

/* ZipMap: [N, C] float scores -> a sequence of N maps label -> score. */
lt_status lt_misc_infer_zipmap(lt_infer *ic, lt_node *n) {
    const int64_t *li;
    bool ints = lt_attr_ints(n, "classlabels_int64s", &li) > 0;
    lt_type val = {.kind = LT_TK_TENSOR, .dtype = LT_FLOAT, .rank = 0};
    lt_type map = {.kind = LT_TK_MAP, .dtype = ints ? LT_INT64 : LT_STRING, .rank = -1, .elem = &val};
    lt_type seq = {.kind = LT_TK_SEQUENCE, .dtype = LT_UNDEFINED, .rank = -1, .elem = &map};
    return lt_infer_set_type(ic, n, 0, &seq);
}

lt_status lt_misc_eval_zipmap(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t rows, cols;
    LT_TRY(rows_cols(ev, n, x, &rows, &cols));
    const int64_t *li;
    const char *const *ls;
    int64_t nli = lt_attr_ints(n, "classlabels_int64s", &li), nls = lt_attr_strings(n, "classlabels_strings", &ls);
    bool ints = nli > 0;
    int64_t nk = ints ? nli : nls;
    if (nk != cols) return lt_op_error(ev, n, LT_ERR_INVALID, "%lld class labels for %lld columns", (long long)nk, (long long)cols);
    lt_datum *seq;
    LT_TRY(lt_datum_sequence(ev->ctx, LT_FLOAT, &seq));
    lt_status st = LT_OK;
    for (int64_t r = 0; !st && r < rows; r++) {
        lt_tensor *keys = NULL, *vals = NULL;
        st = lt_tensor_new(ev->ctx, ints ? LT_INT64 : LT_STRING, 1, &nk, &keys);
        if (!st) st = lt_tensor_new(ev->ctx, LT_FLOAT, 1, &nk, &vals);
        for (int64_t c = 0; !st && c < nk; c++) {
            if (ints) ((int64_t *)keys->data)[c] = li[c];
            else st = lt_tensor_set_string(ev->ctx, keys, c, ls[c], strlen(ls[c]));
            if (!st) ((float *)vals->data)[c] = (float)lt_load_f64(x->data, x->dtype, r * cols + c);
        }
        lt_datum *m = NULL;
        if (!st) st = new_map(ev, keys, vals, &m);
        else { lt_tensor_release(keys); lt_tensor_release(vals); }
        if (!st) st = lt_datum_seq_push(ev->ctx, seq, m);
    }
    if (st) {
        lt_datum_release(seq);
        return st;
    }
    lt_datum_release(out[0]);
    out[0] = seq;
    return LT_OK;
}

static lt_status in_map(lt_eval *ev, const lt_node *n, lt_datum **in, const lt_datum **m) {
    if (n->n_in < 1 || !in[0] || in[0]->kind != LT_DK_MAP || !in[0]->keys || !in[0]->values)
        return lt_op_error(ev, n, LT_ERR_INVALID, "input must be a map");
    *m = in[0];
    if ((*m)->keys->rank != 1 || (*m)->values->rank < 1 || (*m)->values->dims[0] != (*m)->keys->numel)
        return lt_op_error(ev, n, LT_ERR_INVALID, "malformed map (keys and values differ in length)");
    return LT_OK;
}

/* DictVectorizer: map -> [1, V] in vocabulary order (absent keys 0). */
lt_status lt_misc_infer_dictvec(lt_infer *ic, lt_node *n) {
    const int64_t *vi;
    const char *const *vs;
    int64_t nv = lt_attr_ints(n, "int64_vocabulary", &vi);
    if (!nv) nv = lt_attr_strings(n, "string_vocabulary", &vs);
    const lt_type *t = lt_infer_in(n, 0);
    lt_dtype dt = t && t->kind == LT_TK_MAP && t->elem ? t->elem->dtype : LT_UNDEFINED;
    lt_dim d[2] = {{1, NULL}, {nv, NULL}};
    return lt_infer_set(ic, n, 0, dt, 2, d);
}

lt_status lt_misc_eval_dictvec(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_datum *m;
    LT_TRY(in_map(ev, n, in, &m));
    const int64_t *vi;
    const char *const *vs;
    int64_t nvi = lt_attr_ints(n, "int64_vocabulary", &vi), nvs = lt_attr_strings(n, "string_vocabulary", &vs);
    bool skeys = m->keys->dtype == LT_STRING;
    if (skeys ? nvs == 0 : nvi == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "no vocabulary for the map's key type");
    int64_t nv = skeys ? nvs : nvi;
    if (m->values->rank != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "map values must be scalars");
    int64_t dims[2] = {1, nv};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, m->values->dtype, 2, dims, &y));
    for (int64_t v = 0; v < nv; v++)
        for (int64_t q = 0; q < m->keys->numel; q++) {
            bool eq = skeys ? strcmp(((char *const *)m->keys->data)[q], vs[v]) == 0
                            : lt_load_i64(m->keys->data, m->keys->dtype, q) == vi[v];
            if (!eq) continue;
            if (y->dtype == LT_STRING) {
                const char *s = ((char *const *)m->values->data)[q];
                LT_TRY(lt_tensor_set_string(ev->ctx, y, v, s, strlen(s)));
            } else {
                lt_convert_elem(m->values->data, m->values->dtype, q, y->data, y->dtype, v, true);
            }
        }
    return LT_OK;
}

/* CastMap: map int64 -> (string | float) to a [1, N] tensor ordered by key. */
static lt_dtype castmap_to(const lt_node *n) {
    const char *c = lt_attr_string(n, "cast_to", "TO_FLOAT");
    return strcmp(c, "TO_FLOAT") == 0 ? LT_FLOAT : strcmp(c, "TO_STRING") == 0 ? LT_STRING
         : strcmp(c, "TO_INT64") == 0 ? LT_INT64 : LT_UNDEFINED;
}

lt_status lt_misc_infer_castmap(lt_infer *ic, lt_node *n) {
    lt_dim d[2] = {{1, NULL}, {-1, NULL}};
    if (strcmp(lt_attr_string(n, "map_form", "DENSE"), "SPARSE") == 0) d[1].value = lt_attr_int(n, "max_map", 1);
    return lt_infer_set(ic, n, 0, castmap_to(n), 2, d);
}

static int cmp_pairs(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

lt_status lt_misc_eval_castmap(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_datum *m;
    LT_TRY(in_map(ev, n, in, &m));
    lt_dtype to = castmap_to(n);
    if (to == LT_UNDEFINED) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown cast_to '%s'", lt_attr_string(n, "cast_to", ""));
    if (!lt_dtype_is_int(m->keys->dtype) || m->values->rank != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "input must be a map from integers to scalars");
    bool sparse = strcmp(lt_attr_string(n, "map_form", "DENSE"), "SPARSE") == 0;
    int64_t nk = m->keys->numel, width = sparse ? lt_attr_int(n, "max_map", 1) : nk;
    if (width < 0 || width > ((int64_t)1 << 30)) return lt_op_error(ev, n, LT_ERR_INVALID, "bad max_map");
    int64_t *order = lt_alloc(ev->ctx, (size_t)(nk ? nk : 1) * 2 * sizeof *order, "castmap"); /* (key, index) */
    if (!order) return LT_ERR_NOMEM;
    for (int64_t q = 0; q < nk; q++) {
        order[2 * q] = lt_load_i64(m->keys->data, m->keys->dtype, q);
        order[2 * q + 1] = q;
    }
    qsort(order, (size_t)nk, 2 * sizeof *order, cmp_pairs);
    int64_t dims[2] = {1, width};
    lt_tensor *y;
    lt_status st = lt_out_new(ev, n, out, 0, to, 2, dims, &y);
    for (int64_t q = 0; !st && q < nk; q++) {
        int64_t src = order[2 * q + 1], dst = q;
        if (sparse) {
            dst = lt_load_i64(m->keys->data, m->keys->dtype, src);
            if (dst < 0 || dst >= width) continue; /* keys beyond max_map are dropped */
        }
        if (to == LT_STRING) {
            char buf[64];
            const char *s = buf;
            if (m->values->dtype == LT_STRING) s = ((char *const *)m->values->data)[src];
            else snprintf(buf, sizeof buf, "%.9g", lt_load_f64(m->values->data, m->values->dtype, src));
            st = lt_tensor_set_string(ev->ctx, y, dst, s, strlen(s));
        } else if (m->values->dtype == LT_STRING) {
            const char *s = ((char *const *)m->values->data)[src];
            char *end;
            double v = strtod(s, &end);
            if (end == s) st = lt_op_error(ev, n, LT_ERR_INVALID, "cannot parse map value '%.64s' as a number", s);
            else lt_store_f64(y->data, to, dst, v);
        } else {
            lt_convert_elem(m->values->data, m->values->dtype, src, y->data, to, dst, true);
        }
    }
    lt_mem_free(order);
    return st;
}
