/* shape_unique.c — Unique (shape family; hooks registered by shape.c through shape_impl.h).
 *
 * Without `axis` the input is flattened and its elements are compared; with `axis` the slices along
 * that axis are compared lexicographically (elements in row-major order with the axis removed, as
 * numpy does). A stable merge sort orders the slices, equal neighbours form groups; sorted=0 orders
 * the groups by first occurrence. Floats compare numerically (-0 == 0, NaNs equal and last), strings
 * bytewise. Outputs: Y, indices (first occurrence), inverse_indices, counts (int64).
 */
#include "shape_impl.h"

#include <math.h>
#include <string.h>

typedef struct uq_ctx {
    const lt_tensor *x;
    int64_t outer, inner, dim; /* slice j holds x[o, j, i] for o < outer, i < inner */
    /* One-element slices of an integer, bool or float tensor: the keys loaded once, compared as
     * cmp_elem compares them (NaN after every number, NaNs equal); NULL otherwise. */
    const int64_t *ki;
    const uint64_t *ku;
    const double *kf;
} uq_ctx;

static int cmp_elem(const lt_tensor *x, int64_t a, int64_t b) {
    lt_dtype dt = x->dtype;
    switch (lt_dtype_get(dt)->cls) {
    case LT_DC_STRING: {
        int c = strcmp(((char *const *)x->data)[a], ((char *const *)x->data)[b]);
        return (c > 0) - (c < 0);
    }
    case LT_DC_SINT: {
        int64_t p = lt_load_i64(x->data, dt, a), q = lt_load_i64(x->data, dt, b);
        return (p > q) - (p < q);
    }
    case LT_DC_UINT:
    case LT_DC_BOOL: {
        uint64_t p = lt_load_u64(x->data, dt, a), q = lt_load_u64(x->data, dt, b);
        return (p > q) - (p < q);
    }
    case LT_DC_COMPLEX:
        for (int part = 0; part < 2; part++) {
            double p, q;
            if (dt == LT_COMPLEX64) {
                p = ((const float *)x->data)[2 * a + part];
                q = ((const float *)x->data)[2 * b + part];
            } else {
                p = ((const double *)x->data)[2 * a + part];
                q = ((const double *)x->data)[2 * b + part];
            }
            if (isnan(p) || isnan(q)) {
                if (isnan(p) != isnan(q)) return isnan(p) ? 1 : -1;
                continue;
            }
            if (p != q) return p < q ? -1 : 1;
        }
        return 0;
    default: {
        double p = lt_load_f64(x->data, dt, a), q = lt_load_f64(x->data, dt, b);
        if (isnan(p) || isnan(q)) return isnan(p) == isnan(q) ? 0 : isnan(p) ? 1 : -1;
        return (p > q) - (p < q);
    }
    }
}

static int cmp_key(const uq_ctx *c, int64_t a, int64_t b) {
    if (c->ki) return (c->ki[a] > c->ki[b]) - (c->ki[a] < c->ki[b]);
    if (c->ku) return (c->ku[a] > c->ku[b]) - (c->ku[a] < c->ku[b]);
    double p = c->kf[a], q = c->kf[b];
    if (isnan(p) || isnan(q)) return isnan(p) == isnan(q) ? 0 : isnan(p) ? 1 : -1;
    return (p > q) - (p < q);
}

static int cmp_slice(const uq_ctx *c, int64_t a, int64_t b) {
    if (c->ki || c->ku || c->kf) return cmp_key(c, a, b);
    for (int64_t o = 0; o < c->outer; o++)
        for (int64_t i = 0; i < c->inner; i++) {
            int64_t base = o * c->dim * c->inner + i;
            int r = cmp_elem(c->x, base + a * c->inner, base + b * c->inner);
            if (r) return r;
        }
    return 0;
}

/* Stable merge sort of v[0..n) by slice order (tmp: scratch of n). */
static void msort(const uq_ctx *c, int64_t *v, int64_t *tmp, int64_t n) {
    if (n < 2) return;
    int64_t h = n / 2;
    msort(c, v, tmp, h);
    msort(c, v + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp_slice(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

lt_status lt_shp_eval_Unique(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (lt_dtype_get(x->dtype)->cls == LT_DC_NONE)
        return lt_op_error(ev, n, LT_ERR_INVALID, "Unique of %s", lt_dtype_name(x->dtype));
    uq_ctx c = {.x = x, .outer = 1, .inner = 1, .dim = x->numel};
    const lt_attr *aa = lt_node_attr(n, "axis");
    int axis = -1;
    if (aa && aa->type == LT_AT_INT) {
        if (x->rank == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "axis given for a scalar input");
        LT_TRY(lt_norm_axis(ev, n, aa->i, x->rank, &axis));
        c.dim = x->dims[axis];
        for (int i = 0; i < axis; i++) c.outer *= x->dims[i];
        for (int i = axis + 1; i < x->rank; i++) c.inner *= x->dims[i];
    }
    bool sorted = lt_attr_int(n, "sorted", 1) != 0;
    int64_t m = c.dim;
    size_t cnt = (size_t)(m ? m : 1);
    lt_dclass cls = lt_dtype_get(x->dtype)->cls;
    void *keys = NULL; /* one-element slices: the keys loaded once (cmp_key) */
    if (c.outer * c.inner == 1 && (cls == LT_DC_SINT || cls == LT_DC_UINT || cls == LT_DC_BOOL || cls == LT_DC_FLOAT)) {
        if (!(keys = lt_alloc(ev->ctx, cnt * 8, "unique keys"))) return LT_ERR_NOMEM;
        for (int64_t j = 0; j < m; j++) {
            if (cls == LT_DC_SINT) ((int64_t *)keys)[j] = lt_load_i64(x->data, x->dtype, j);
            else if (cls == LT_DC_FLOAT) ((double *)keys)[j] = lt_load_f64(x->data, x->dtype, j);
            else ((uint64_t *)keys)[j] = lt_load_u64(x->data, x->dtype, j);
        }
        if (cls == LT_DC_SINT) c.ki = keys;
        else if (cls == LT_DC_FLOAT) c.kf = keys;
        else c.ku = keys;
    }
    /* order: slices sorted; grp: group of each slice; first/counts per group (in sorted order);
     * pos: output position of each sorted group. */
    int64_t *buf = lt_alloc(ev->ctx, cnt * 6 * sizeof(int64_t), "unique scratch");
    if (!buf) {
        lt_mem_free(keys);
        return LT_ERR_NOMEM;
    }
    int64_t *order = buf, *tmp = buf + cnt, *grp = buf + 2 * cnt, *first = buf + 3 * cnt, *counts = buf + 4 * cnt,
            *pos = buf + 5 * cnt;
    for (int64_t j = 0; j < m; j++) order[j] = j;
    msort(&c, order, tmp, m);
    int64_t ng = 0;
    for (int64_t k = 0; k < m; k++) {
        if (k == 0 || cmp_slice(&c, order[k - 1], order[k]) != 0) {
            first[ng] = order[k]; /* stable sort: the earliest occurrence leads its group */
            counts[ng] = 0;
            ng++;
        }
        grp[order[k]] = ng - 1;
        counts[ng - 1]++;
    }
    /* Output order of the groups: sorted, or by first occurrence. */
    int64_t *gorder = tmp; /* group ids in output order */
    for (int64_t g = 0; g < ng; g++) gorder[g] = g;
    if (!sorted) {
        /* Groups in order of first occurrence: walk the slices, emit each group when first seen. */
        int64_t k = 0;
        for (int64_t g = 0; g < ng; g++) pos[g] = -1;
        for (int64_t j = 0; j < m; j++)
            if (pos[grp[j]] < 0) {
                pos[grp[j]] = k;
                gorder[k++] = grp[j];
            }
    } else {
        for (int64_t g = 0; g < ng; g++) pos[g] = g;
    }
    lt_status s = LT_OK;
    lt_tensor *y;
    int64_t d[LT_MAX_RANK];
    int r = 1;
    if (axis < 0) d[0] = ng;
    else {
        r = x->rank;
        memcpy(d, x->dims, sizeof(int64_t) * (size_t)r);
        d[axis] = ng;
    }
    if (n->n_out >= 1) s = lt_out_new(ev, n, out, 0, x->dtype, r, d, &y);
    for (int64_t k = 0; s == LT_OK && n->n_out >= 1 && k < ng; k++) {
        int64_t j = first[gorder[k]];
        int64_t dims2[2] = {c.outer, c.inner}, ds[2] = {ng * c.inner, 1}, ss[2] = {c.dim * c.inner, 1};
        s = lt_shp_strided_copy(ev->ctx, y, k * c.inner, ds, x, j * c.inner, ss, 2, dims2);
    }
    lt_tensor *t;
    if (s == LT_OK && n->n_out >= 2 && (s = lt_out_new(ev, n, out, 1, LT_INT64, 1, &ng, &t)) == LT_OK)
        for (int64_t k = 0; k < ng; k++) ((int64_t *)t->data)[k] = first[gorder[k]];
    if (s == LT_OK && n->n_out >= 3 && (s = lt_out_new(ev, n, out, 2, LT_INT64, 1, &m, &t)) == LT_OK)
        for (int64_t j = 0; j < m; j++) ((int64_t *)t->data)[j] = pos[grp[j]];
    if (s == LT_OK && n->n_out >= 4 && (s = lt_out_new(ev, n, out, 3, LT_INT64, 1, &ng, &t)) == LT_OK)
        for (int64_t k = 0; k < ng; k++) ((int64_t *)t->data)[k] = counts[gorder[k]];
    lt_mem_free(buf);
    lt_mem_free(keys);
    return s;
}

lt_status lt_shp_infer_Unique(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    const lt_attr *aa = lt_node_attr(n, "axis");
    int64_t m = -1;
    if (!aa) {
        LT_TRY(lt_infer_set(ic, n, 0, dt, 1, NULL));
        if (t) {
            m = 1;
            for (int i = 0; i < t->rank && m >= 0; i++) {
                lt_dim v = lt_shp_dim(t, i);
                if (v.value < 0 || !lt_mul_i64(m, v.value, &m)) m = -1;
            }
        }
    } else if (t) {
        int64_t a = aa->i < 0 ? aa->i + t->rank : aa->i;
        if (a < 0 || a >= t->rank) return lt_infer_error(ic, n, "axis is out of range for rank %d", t->rank);
        lt_dim d[LT_MAX_RANK];
        for (int i = 0; i < t->rank; i++) d[i] = i == a ? (lt_dim){-1, NULL} : lt_shp_dim(t, i);
        LT_TRY(lt_infer_set(ic, n, 0, dt, t->rank, d));
        m = lt_shp_dim(t, (int)a).value;
    } else {
        LT_TRY(lt_infer_set(ic, n, 0, dt, -1, NULL));
    }
    int64_t unk = -1;
    LT_TRY(lt_infer_set_i64(ic, n, 1, LT_INT64, 1, &unk));
    LT_TRY(lt_infer_set_i64(ic, n, 2, LT_INT64, 1, &m));
    return lt_infer_set_i64(ic, n, 3, LT_INT64, 1, &unk);
}
