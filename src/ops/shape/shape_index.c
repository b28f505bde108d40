/* shape_index.c — the shape family's indexing ops: Gather, GatherElements, GatherND, Scatter /
 * ScatterElements, ScatterND, TensorScatter, Compress, NonZero, OneHot (hooks registered by
 * shape.c through shape_impl.h).
 *
 * Every index read from a tensor is range-checked before use (negative indices count from the end
 * where the spec allows them); an index out of range is an error naming the node and the position.
 * Scatter reductions (add, mul, max, min) combine in the element's own arithmetic: integers wrap
 * like numpy, floats combine in double and round once (exact for a single + or *).
 */
#include "shape_impl.h"
#include "index_rule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Index element j of an integer tensor as int64 (uint64 above INT64_MAX saturates, so it stays
 * out of range instead of wrapping negative). */
static int64_t load_index(const lt_tensor *t, int64_t j) {
    if (t->dtype == LT_UINT64) {
        uint64_t u = lt_load_u64(t->data, t->dtype, j);
        return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    return lt_load_i64(t->data, t->dtype, j);
}

static lt_status need_int_indices(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what) {
    if (!lt_dtype_is_int(t->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be an integer tensor, got %s", what,
                           lt_dtype_name(t->dtype));
    return LT_OK;
}

static void where_str(char *buf, size_t size, const char *what, int64_t j) {
    snprintf(buf, size, "%s[%lld]", what, (long long)j);
}

/* ======================================================================== Gather */
/* Output dims of Gather from data (xr, xd) and indices (ir, id, idt): the rules of both hooks
 * (dims < 0 unknown pass through; idt UNDEFINED: unknown). The indices' values are data: the eval
 * hook checks each one, and lowering compiles only constant, in-range indices. */
static lt_status gather_dims(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd, int ir, const int64_t *id,
                             lt_dtype idt, int *axis, int *rank, int64_t *d) {
    if (idt != LT_UNDEFINED && !lt_dtype_is_int(idt))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "indices must be an integer tensor, got %s", lt_dtype_name(idt));
    if (xr == 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot gather from a scalar");
    LT_TRY(lt_shp_axis(ctx, n, lt_attr_int(n, "axis", 0), xr, axis));
    int r = xr - 1 + ir;
    if (r > LT_MAX_RANK)
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, LT_MAX_RANK);
    int k = 0;
    for (int i = 0; i < *axis; i++) d[k++] = xd[i];
    for (int i = 0; i < ir; i++) d[k++] = id[i];
    for (int i = *axis + 1; i < xr; i++) d[k++] = xd[i];
    *rank = r;
    for (int i = 0; i < r; i++)
        if (d[i] < 0) return LT_OK;
    int64_t numel;
    return lt_shp_numel(ctx, n, "output", r, d, &numel);
}

lt_status lt_shp_eval_Gather(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *ix;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &ix));
    int axis, r;
    int64_t d[LT_MAX_RANK];
    LT_TRY(gather_dims(ev->ctx, n, x->rank, x->dims, ix->rank, ix->dims, ix->dtype, &axis, &r, d));
    int64_t outer = 1, inner = 1, dim = x->dims[axis], ni = ix->numel;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    /* Check every index once, before any copying. */
    for (int64_t j = 0; j < ni; j++) {
        int64_t v;
        char w[64];
        where_str(w, sizeof w, "indices", j);
        LT_TRY(lt_shp_index(ev, n, load_index(ix, j), dim, w, &v));
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, d, &y));
    if (y->numel == 0) return LT_OK;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t v = load_index(ix, j);
            if (v < 0) v += dim;
            LT_TRY(lt_shp_copy(ev->ctx, y, (o * ni + j) * inner, x, (o * dim + v) * inner, inner));
        }
    return LT_OK;
}

/* Dims of ranked input i (-1 where unknown). */
static void type_dims(const lt_type *t, int64_t *d) {
    for (int i = 0; i < t->rank; i++) d[i] = lt_shp_dim(t, i).value;
}

lt_status lt_shp_infer_Gather(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *x = lt_shp_infer_ranked(n, 0), *ix = lt_shp_infer_ranked(n, 1);
    if (!x || !ix) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int64_t xd[LT_MAX_RANK], id[LT_MAX_RANK], d[LT_MAX_RANK];
    int axis, r;
    type_dims(x, xd);
    type_dims(ix, id);
    LT_TRY(gather_dims(ic->ctx, n, x->rank, xd, ix->rank, id, lt_shp_infer_dtype(n, 1), &axis, &r, d));
    lt_dim od[LT_MAX_RANK];
    int k = 0;
    for (int i = 0; i < axis; i++) od[k++] = lt_shp_dim(x, i);
    for (int i = 0; i < ix->rank; i++) od[k++] = lt_shp_dim(ix, i);
    for (int i = axis + 1; i < x->rank; i++) od[k++] = lt_shp_dim(x, i);
    return lt_infer_set(ic, n, 0, dt, r, od);
}

/* ======================================================================== GatherElements */
/* Checks shared by GatherElements and ScatterElements, by their infer and eval hooks: integer
 * indices, data not a scalar, axis in range, same rank, indices within data on every other axis
 * (as onnxruntime requires). dims < 0 are unknown and pass. */
static lt_status elements_check(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd, int ir,
                                const int64_t *id, lt_dtype idt, int *axis) {
    if (idt != LT_UNDEFINED && !lt_dtype_is_int(idt))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "indices must be an integer tensor, got %s", lt_dtype_name(idt));
    if (xr == 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot gather from a scalar");
    LT_TRY(lt_shp_axis(ctx, n, lt_attr_int(n, "axis", 0), xr, axis));
    if (ir != xr)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "indices have rank %d, data has rank %d", ir, xr);
    for (int i = 0; i < xr; i++)
        if (i != *axis && id[i] >= 0 && xd[i] >= 0 && id[i] > xd[i])
            return lt_node_error(ctx, n, LT_ERR_INVALID, "indices dimension %d (%lld) exceeds data's (%lld)", i,
                                 (long long)id[i], (long long)xd[i]);
    return LT_OK;
}

/* Data offset for the element of indices at multi-index idx (linear j); checked. */
static lt_status elements_offset(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *ix,
                                 const int64_t *xs, int axis, const int64_t *idx, int64_t j, int64_t *off) {
    int64_t v;
    char w[64];
    where_str(w, sizeof w, "indices", j);
    LT_TRY(lt_shp_index(ev, n, load_index(ix, j), x->dims[axis], w, &v));
    int64_t o = 0;
    for (int i = 0; i < x->rank; i++) o += (i == axis ? v : idx[i]) * xs[i];
    *off = o;
    return LT_OK;
}

lt_status lt_shp_eval_GatherElements(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *ix;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &ix));
    int axis;
    LT_TRY(elements_check(ev->ctx, n, x->rank, x->dims, ix->rank, ix->dims, ix->dtype, &axis));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, ix->rank, ix->dims, &y));
    if (y->numel == 0) return LT_OK;
    int64_t xs[LT_MAX_RANK], idx[LT_MAX_RANK] = {0};
    lt_shp_strides(x->rank, x->dims, xs);
    int64_t j = 0;
    do {
        int64_t off;
        LT_TRY(elements_offset(ev, n, x, ix, xs, axis, idx, j, &off));
        LT_TRY(lt_shp_copy(ev->ctx, y, j, x, off, 1));
        j++;
    } while (lt_index_next(ix->rank, ix->dims, idx));
    return LT_OK;
}

lt_status lt_shp_infer_GatherElements(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *x = lt_shp_infer_ranked(n, 0), *ix = lt_shp_infer_ranked(n, 1);
    if (!ix) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (x) {
        int64_t xd[LT_MAX_RANK], id[LT_MAX_RANK];
        int axis;
        type_dims(x, xd);
        type_dims(ix, id);
        LT_TRY(elements_check(ic->ctx, n, x->rank, xd, ix->rank, id, lt_shp_infer_dtype(n, 1), &axis));
    }
    return lt_infer_set(ic, n, 0, dt, ix->rank, ix->dims);
}

/* ======================================================================== GatherND */
typedef struct nd_plan {
    int b, k;             /* batch dims, index tuple length */
    int64_t batches;      /* prod data dims[:b] */
    int64_t tuples;       /* index tuples per batch */
    int64_t slice;        /* elements per gathered/scattered slice: prod data dims[b+k:] */
    int64_t block;        /* elements per batch in data: prod data dims[b:] */
} nd_plan;

static lt_status nd_prepare(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *ix, int b,
                            nd_plan *p) {
    LT_TRY(need_int_indices(ev, n, ix, "indices"));
    if (ix->rank < 1 || x->rank < 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "data and indices must have rank >= 1");
    if (b < 0 || b >= ix->rank || b >= x->rank)
        return lt_op_error(ev, n, LT_ERR_INVALID, "batch_dims %d must be less than both ranks (%d, %d)", b, x->rank,
                           ix->rank);
    int64_t k = ix->dims[ix->rank - 1];
    if (k < 1 || k > x->rank - b)
        return lt_op_error(ev, n, LT_ERR_INVALID, "index tuples of length %lld for data of rank %d (batch_dims %d)",
                           (long long)k, x->rank, b);
    for (int i = 0; i < b; i++)
        if (ix->dims[i] != x->dims[i])
            return lt_op_error(ev, n, LT_ERR_INVALID, "batch dimension %d differs: data %lld, indices %lld", i,
                               (long long)x->dims[i], (long long)ix->dims[i]);
    p->b = b;
    p->k = (int)k;
    p->batches = 1;
    p->slice = 1;
    p->block = 1;
    p->tuples = 1;
    for (int i = 0; i < b; i++) p->batches *= x->dims[i];
    for (int i = b; i < x->rank; i++) p->block *= x->dims[i];
    for (int i = b + p->k; i < x->rank; i++) p->slice *= x->dims[i];
    for (int i = b; i < ix->rank - 1; i++) p->tuples *= ix->dims[i];
    return LT_OK;
}

/* Offset (in slices, within one batch block) of tuple t of batch bi; checked. */
static lt_status nd_tuple(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *ix, const nd_plan *p,
                          int64_t bi, int64_t t, int64_t *off) {
    int64_t base = (bi * p->tuples + t) * p->k, o = 0;
    for (int j = 0; j < p->k; j++) {
        int64_t v;
        char w[64];
        where_str(w, sizeof w, "indices", base + j);
        LT_TRY(lt_shp_index(ev, n, load_index(ix, base + j), x->dims[p->b + j], w, &v));
        o = o * x->dims[p->b + j] + v;
    }
    *off = o;
    return LT_OK;
}

lt_status lt_shp_eval_GatherND(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *ix;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &ix));
    nd_plan p;
    LT_TRY(nd_prepare(ev, n, x, ix, (int)lt_attr_int(n, "batch_dims", 0), &p));
    int r = ix->rank - 1 + x->rank - p.b - p.k;
    if (r > LT_MAX_RANK) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, LT_MAX_RANK);
    int64_t d[LT_MAX_RANK];
    int q = 0;
    for (int i = 0; i < ix->rank - 1; i++) d[q++] = ix->dims[i];
    for (int i = p.b + p.k; i < x->rank; i++) d[q++] = x->dims[i];
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, d, &y));
    for (int64_t bi = 0; bi < p.batches; bi++)
        for (int64_t t = 0; t < p.tuples; t++) {
            int64_t off;
            LT_TRY(nd_tuple(ev, n, x, ix, &p, bi, t, &off));
            LT_TRY(lt_shp_copy(ev->ctx, y, (bi * p.tuples + t) * p.slice, x, bi * p.block + off * p.slice, p.slice));
        }
    return LT_OK;
}

lt_status lt_shp_infer_GatherND(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *x = lt_shp_infer_ranked(n, 0), *ix = lt_shp_infer_ranked(n, 1);
    int64_t b = lt_attr_int(n, "batch_dims", 0);
    if (!x || !ix || ix->rank < 1) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    /* the rules nd_prepare checks at run time, on what is known here */
    lt_dtype idt = lt_shp_infer_dtype(n, 1);
    if (idt != LT_UNDEFINED && !lt_dtype_is_int(idt))
        return lt_infer_error(ic, n, "indices must be an integer tensor, got %s", lt_dtype_name(idt));
    if (x->rank < 1) return lt_infer_error(ic, n, "data and indices must have rank >= 1");
    if (b < 0 || b >= ix->rank || b >= x->rank)
        return lt_infer_error(ic, n, "batch_dims %lld must be less than both ranks (%d, %d)", (long long)b, x->rank,
                              ix->rank);
    for (int i = 0; i < b; i++) {
        lt_dim xd = lt_shp_dim(x, i), id = lt_shp_dim(ix, i);
        if (xd.value >= 0 && id.value >= 0 && xd.value != id.value)
            return lt_infer_error(ic, n, "batch dimension %d differs: data %lld, indices %lld", i, (long long)xd.value,
                                  (long long)id.value);
    }
    lt_dim kd = lt_shp_dim(ix, ix->rank - 1);
    if (kd.value < 0) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (kd.value < 1 || kd.value > x->rank - b) return lt_infer_error(ic, n, "index tuples of length %lld do not fit data of rank %d", (long long)kd.value, x->rank);
    int r = ix->rank - 1 + x->rank - (int)b - (int)kd.value;
    if (r > LT_MAX_RANK) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    lt_dim d[LT_MAX_RANK];
    int q = 0;
    for (int i = 0; i < ix->rank - 1; i++) d[q++] = lt_shp_dim(ix, i);
    for (int i = (int)b + (int)kd.value; i < x->rank; i++) d[q++] = lt_shp_dim(x, i);
    return lt_infer_set(ic, n, 0, dt, r, d);
}

/* ======================================================================== scatter reductions */
/* The reduction attribute of a scatter node over elements of dtype dt (UNDEFINED: not known yet),
 * by the eval and infer hooks. */
static lt_status parse_reduction(lt_ctx *ctx, const lt_node *n, lt_dtype dt, lt_scatter_red *r) {
    const char *s = n->opset >= 16 ? lt_attr_string(n, "reduction", "none") : "none";
    if (!lt_scatter_reduction(n, r)) return lt_node_error(ctx, n, LT_ERR_INVALID, "unknown reduction '%s'", s);
    lt_dclass c = lt_dtype_get(dt)->cls;
    if (dt != LT_UNDEFINED && *r != LT_SCATTER_NONE && (c == LT_DC_STRING || c == LT_DC_COMPLEX || c == LT_DC_NONE))
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "reduction '%s' on %s", s, lt_dtype_name(dt));
    return LT_OK;
}

/* y[yi] = y[yi] (red) u[ui], or a copy for LT_SCATTER_NONE. */
static lt_status scatter_one(lt_ctx *ctx, lt_tensor *y, int64_t yi, const lt_tensor *u, int64_t ui, lt_scatter_red r) {
    if (r == LT_SCATTER_NONE) return lt_shp_copy(ctx, y, yi, u, ui, 1);
    lt_dtype dt = y->dtype;
    switch (lt_dtype_get(dt)->cls) {
    case LT_DC_SINT: {
        int64_t a = lt_load_i64(y->data, dt, yi), b = lt_load_i64(u->data, dt, ui), v;
        switch (r) {
        case LT_SCATTER_ADD: v = (int64_t)((uint64_t)a + (uint64_t)b); break;
        case LT_SCATTER_MUL: v = (int64_t)((uint64_t)a * (uint64_t)b); break;
        case LT_SCATTER_MAX: v = a > b ? a : b; break;
        default: v = a < b ? a : b; break;
        }
        lt_store_i64(y->data, dt, yi, v);
        return LT_OK;
    }
    case LT_DC_UINT: {
        uint64_t a = lt_load_u64(y->data, dt, yi), b = lt_load_u64(u->data, dt, ui), v;
        switch (r) {
        case LT_SCATTER_ADD: v = a + b; break;
        case LT_SCATTER_MUL: v = a * b; break;
        case LT_SCATTER_MAX: v = a > b ? a : b; break;
        default: v = a < b ? a : b; break;
        }
        lt_store_u64(y->data, dt, yi, v);
        return LT_OK;
    }
    case LT_DC_BOOL: {
        uint8_t a = ((uint8_t *)y->data)[yi] != 0, b = ((const uint8_t *)u->data)[ui] != 0;
        ((uint8_t *)y->data)[yi] = (r == LT_SCATTER_ADD || r == LT_SCATTER_MAX) ? (a | b) : (a & b);
        return LT_OK;
    }
    default: {
        double a = lt_load_f64(y->data, dt, yi), b = lt_load_f64(u->data, dt, ui), v;
        switch (r) {
        case LT_SCATTER_ADD: v = a + b; break;
        case LT_SCATTER_MUL: v = a * b; break;
        case LT_SCATTER_MAX: v = isnan(a) || isnan(b) ? NAN : a > b ? a : b; break;
        default: v = isnan(a) || isnan(b) ? NAN : a < b ? a : b; break;
        }
        if (dt == LT_FLOAT) ((float *)y->data)[yi] = (float)v;
        else lt_store_f64(y->data, dt, yi, v);
        return LT_OK;
    }
    }
}

static lt_status same_dtype(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *u) {
    if (u->dtype != x->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "updates are %s, data is %s", lt_dtype_name(u->dtype),
                           lt_dtype_name(x->dtype));
    return LT_OK;
}

/* ======================================================================== Scatter, ScatterElements */
lt_status lt_shp_eval_ScatterElements(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *ix, *u;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &ix));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &u));
    LT_TRY(need_int_indices(ev, n, ix, "indices"));
    LT_TRY(same_dtype(ev, n, x, u));
    if (x->rank == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "cannot scatter into a scalar");
    int axis;
    LT_TRY(lt_norm_axis(ev, n, lt_attr_int(n, "axis", 0), x->rank, &axis));
    LT_TRY(elements_check(ev->ctx, n, x->rank, x->dims, ix->rank, ix->dims, ix->dtype, &axis));
    bool same = u->rank == ix->rank;
    for (int i = 0; same && i < u->rank; i++) same = u->dims[i] == ix->dims[i];
    if (!same) return lt_op_error(ev, n, LT_ERR_INVALID, "updates and indices must have the same shape");
    lt_scatter_red red;
    LT_TRY(parse_reduction(ev->ctx, n, x->dtype, &red));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    LT_TRY(lt_shp_copy(ev->ctx, y, 0, x, 0, x->numel));
    if (ix->numel == 0) return LT_OK;
    int64_t xs[LT_MAX_RANK], idx[LT_MAX_RANK] = {0};
    lt_shp_strides(x->rank, x->dims, xs);
    int64_t j = 0;
    do {
        int64_t off;
        LT_TRY(elements_offset(ev, n, x, ix, xs, axis, idx, j, &off));
        LT_TRY(scatter_one(ev->ctx, y, off, u, j, red));
        j++;
    } while (lt_index_next(ix->rank, ix->dims, idx));
    return LT_OK;
}

/* Every rule the eval hook checks that types show (unknown dims and dtypes pass): the output is the
 * data's type. */
static lt_status scatter_infer_common(lt_infer *ic, const lt_node *n) {
    lt_dtype xt = lt_shp_infer_dtype(n, 0), ut = lt_shp_infer_dtype(n, 2), it = lt_shp_infer_dtype(n, 1);
    if (n->n_in < 3 || !n->in[0] || !n->in[1] || !n->in[2])
        return lt_infer_error(ic, n, "data, indices and updates are required");
    if (xt != LT_UNDEFINED && ut != LT_UNDEFINED && xt != ut)
        return lt_infer_error(ic, n, "updates are %s, data is %s", lt_dtype_name(ut), lt_dtype_name(xt));
    if (it != LT_UNDEFINED && !lt_dtype_is_int(it))
        return lt_infer_error(ic, n, "indices must be an integer tensor, got %s", lt_dtype_name(it));
    lt_scatter_red red;
    return parse_reduction(ic->ctx, n, xt, &red);
}

static bool dims_equal(const lt_type *a, int a0, const lt_type *b, int b0, int count) {
    for (int i = 0; i < count; i++) {
        int64_t x = lt_shp_dim(a, a0 + i).value, y = lt_shp_dim(b, b0 + i).value;
        if (x >= 0 && y >= 0 && x != y) return false;
    }
    return true;
}

lt_status lt_shp_infer_ScatterElements(lt_infer *ic, lt_node *n) {
    LT_TRY(scatter_infer_common(ic, n));
    const lt_type *x = lt_shp_infer_ranked(n, 0), *ix = lt_shp_infer_ranked(n, 1), *u = lt_shp_infer_ranked(n, 2);
    if (x && x->rank == 0) return lt_infer_error(ic, n, "cannot scatter into a scalar");
    if (x && ix) {
        int64_t xd[LT_MAX_RANK], id[LT_MAX_RANK];
        int axis;
        type_dims(x, xd);
        type_dims(ix, id);
        LT_TRY(elements_check(ic->ctx, n, x->rank, xd, ix->rank, id, lt_shp_infer_dtype(n, 1), &axis));
    }
    if (ix && u && (u->rank != ix->rank || !dims_equal(u, 0, ix, 0, u->rank)))
        return lt_infer_error(ic, n, "updates and indices must have the same shape");
    return lt_infer_copy(ic, n, 0, 0);
}

/* ======================================================================== ScatterND */
lt_status lt_shp_eval_ScatterND(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *ix, *u;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &ix));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &u));
    LT_TRY(same_dtype(ev, n, x, u));
    nd_plan p;
    LT_TRY(nd_prepare(ev, n, x, ix, 0, &p));
    /* updates shape = indices.shape[:-1] + data.shape[k:] */
    bool ok = u->rank == ix->rank - 1 + x->rank - p.k;
    for (int i = 0; ok && i < ix->rank - 1; i++) ok = u->dims[i] == ix->dims[i];
    for (int i = p.k; ok && i < x->rank; i++) ok = u->dims[ix->rank - 1 + i - p.k] == x->dims[i];
    if (!ok) {
        char a[256];
        return lt_op_error(ev, n, LT_ERR_INVALID, "updates of shape %s do not match indices and data",
                           lt_shape_str(u->rank, u->dims, a, sizeof a));
    }
    lt_scatter_red red;
    LT_TRY(parse_reduction(ev->ctx, n, x->dtype, &red));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    LT_TRY(lt_shp_copy(ev->ctx, y, 0, x, 0, x->numel));
    for (int64_t t = 0; t < p.tuples; t++) {
        int64_t off;
        LT_TRY(nd_tuple(ev, n, x, ix, &p, 0, t, &off));
        if (red == LT_SCATTER_NONE) {
            LT_TRY(lt_shp_copy(ev->ctx, y, off * p.slice, u, t * p.slice, p.slice));
        } else {
            for (int64_t e = 0; e < p.slice; e++)
                LT_TRY(scatter_one(ev->ctx, y, off * p.slice + e, u, t * p.slice + e, red));
        }
    }
    return LT_OK;
}

lt_status lt_shp_infer_ScatterND(lt_infer *ic, lt_node *n) {
    LT_TRY(scatter_infer_common(ic, n));
    const lt_type *x = lt_shp_infer_ranked(n, 0), *ix = lt_shp_infer_ranked(n, 1), *u = lt_shp_infer_ranked(n, 2);
    if (x && x->rank < 1) return lt_infer_error(ic, n, "data and indices must have rank >= 1");
    if (ix && ix->rank < 1) return lt_infer_error(ic, n, "data and indices must have rank >= 1");
    int64_t k = ix ? lt_shp_dim(ix, ix->rank - 1).value : -1;
    if (x && k >= 0 && (k < 1 || k > x->rank))
        return lt_infer_error(ic, n, "index tuples of length %lld for data of rank %d", (long long)k, x->rank);
    /* updates shape = indices.shape[:-1] + data.shape[k:] */
    if (x && ix && u && k >= 1) {
        bool ok = u->rank == ix->rank - 1 + x->rank - (int)k && dims_equal(u, 0, ix, 0, ix->rank - 1) &&
                  dims_equal(u, ix->rank - 1, x, (int)k, x->rank - (int)k);
        if (!ok) return lt_infer_error(ic, n, "updates of rank %d do not match indices and data", u->rank);
    }
    return lt_infer_copy(ic, n, 0, 0);
}

/* ======================================================================== TensorScatter */
lt_status lt_shp_eval_TensorScatter(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *u, *w;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &u));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &w));
    LT_TRY(same_dtype(ev, n, x, u));
    if (x->rank < 2) return lt_op_error(ev, n, LT_ERR_INVALID, "past_cache must have rank >= 2, got %d", x->rank);
    int axis;
    LT_TRY(lt_norm_axis(ev, n, lt_attr_int(n, "axis", -2), x->rank, &axis));
    if (axis == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "axis must not be the batch axis 0");
    const char *mode = lt_attr_string(n, "mode", "linear");
    bool circular = strcmp(mode, "circular") == 0;
    if (!circular && strcmp(mode, "linear") != 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "unknown mode '%s'", mode);
    bool ok = u->rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++) ok = i == axis ? u->dims[i] <= x->dims[i] : u->dims[i] == x->dims[i];
    if (!ok) {
        char a[256], b[256];
        return lt_op_error(ev, n, LT_ERR_INVALID, "update of shape %s does not fit past_cache of shape %s",
                           lt_shape_str(u->rank, u->dims, a, sizeof a), lt_shape_str(x->rank, x->dims, b, sizeof b));
    }
    if (w) {
        LT_TRY(need_int_indices(ev, n, w, "write_indices"));
        if (w->rank != 1 || w->dims[0] != x->dims[0])
            return lt_op_error(ev, n, LT_ERR_INVALID, "write_indices must have shape [%lld]", (long long)x->dims[0]);
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    LT_TRY(lt_shp_copy(ev->ctx, y, 0, x, 0, x->numel));
    int64_t prefix = 1, inner = 1, maxs = x->dims[axis], seq = u->dims[axis];
    for (int i = 0; i < axis; i++) prefix *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    if (prefix == 0 || seq == 0 || inner == 0) return LT_OK;
    int64_t per_batch = prefix / x->dims[0];
    for (int64_t p = 0; p < prefix; p++) {
        int64_t bi = p / per_batch, wi = w ? load_index(w, bi) : 0;
        for (int64_t s = 0; s < seq; s++) {
            int64_t pos;
            if (!lt_add_i64(wi, s, &pos)) pos = INT64_MAX;
            if (circular) {
                pos %= maxs;
                if (pos < 0) pos += maxs;
            } else if (pos < 0 || pos >= maxs) {
                return lt_op_error(ev, n, LT_ERR_INVALID,
                                   "write index %lld + %lld out of range [0, %lld) at write_indices[%lld]",
                                   (long long)wi, (long long)s, (long long)maxs, (long long)bi);
            }
            LT_TRY(lt_shp_copy(ev->ctx, y, (p * maxs + pos) * inner, u, (p * seq + s) * inner, inner));
        }
    }
    return LT_OK;
}

lt_status lt_shp_infer_TensorScatter(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }

/* ======================================================================== Compress */
lt_status lt_shp_eval_Compress(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *c;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &c));
    if (c->rank != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "condition must be 1-D, got rank %d", c->rank);
    lt_dclass cc = lt_dtype_get(c->dtype)->cls;
    if (cc == LT_DC_STRING || cc == LT_DC_NONE)
        return lt_op_error(ev, n, LT_ERR_INVALID, "condition must be bool, got %s", lt_dtype_name(c->dtype));
    const lt_attr *aa = lt_node_attr(n, "axis");
    int axis = -1;
    if (aa) {
        if (x->rank == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "axis given for a scalar input");
        LT_TRY(lt_norm_axis(ev, n, aa->i, x->rank, &axis));
    }
    int64_t dim = axis < 0 ? x->numel : x->dims[axis], outer = 1, inner = 1, cnt = 0;
    if (axis >= 0) {
        for (int i = 0; i < axis; i++) outer *= x->dims[i];
        for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    }
    for (int64_t i = 0; i < c->numel; i++) {
        if (lt_load_f64(c->data, c->dtype, i) == 0) continue;
        if (i >= dim)
            return lt_op_error(ev, n, LT_ERR_INVALID, "condition[%lld] is true beyond the axis size %lld",
                               (long long)i, (long long)dim);
        cnt++;
    }
    int64_t d[LT_MAX_RANK];
    int r = 1;
    if (axis < 0) d[0] = cnt;
    else {
        memcpy(d, x->dims, sizeof d);
        d[axis] = cnt;
        r = x->rank;
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, d, &y));
    if (y->numel == 0) return LT_OK;
    for (int64_t o = 0; o < outer; o++) {
        int64_t k = 0;
        for (int64_t i = 0; i < c->numel && i < dim; i++) {
            if (lt_load_f64(c->data, c->dtype, i) == 0) continue;
            LT_TRY(lt_shp_copy(ev->ctx, y, (o * cnt + k) * inner, x, (o * dim + i) * inner, inner));
            k++;
        }
    }
    return LT_OK;
}

lt_status lt_shp_infer_Compress(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_attr *aa = lt_node_attr(n, "axis");
    if (!aa) return lt_infer_set(ic, n, 0, dt, 1, NULL);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int64_t a = aa->i < 0 ? aa->i + t->rank : aa->i;
    if (a < 0 || a >= t->rank) return lt_infer_error(ic, n, "axis is out of range for rank %d", t->rank);
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) d[i] = i == a ? (lt_dim){-1, NULL} : lt_shp_dim(t, i);
    return lt_infer_set(ic, n, 0, dt, t->rank, d);
}

/* ======================================================================== NonZero */
static bool elem_nonzero(const lt_tensor *x, int64_t i) {
    switch (lt_dtype_get(x->dtype)->cls) {
    case LT_DC_STRING: return ((char *const *)x->data)[i][0] != 0;
    case LT_DC_SINT:
    case LT_DC_BOOL: return lt_load_i64(x->data, x->dtype, i) != 0;
    case LT_DC_UINT: return lt_load_u64(x->data, x->dtype, i) != 0;
    case LT_DC_COMPLEX:
        if (x->dtype == LT_COMPLEX64) {
            const float *p = (const float *)x->data + 2 * i;
            return p[0] != 0 || p[1] != 0;
        } else {
            const double *p = (const double *)x->data + 2 * i;
            return p[0] != 0 || p[1] != 0;
        }
    default: return lt_load_f64(x->data, x->dtype, i) != 0;
    }
}

int64_t lt_shp_nonzero_count(const lt_tensor *x) {
    int64_t nnz = 0;
    for (int64_t i = 0; i < x->numel; i++) nnz += elem_nonzero(x, i);
    return nnz;
}

void lt_shp_nonzero_fill(const lt_tensor *x, int64_t nnz, int64_t *o) {
    int64_t idx[LT_MAX_RANK] = {0}, c = 0;
    for (int64_t i = 0; i < x->numel && nnz > 0; i++) {
        if (elem_nonzero(x, i)) {
            for (int k = 0; k < x->rank; k++) o[k * nnz + c] = idx[k];
            c++;
        }
        lt_index_next(x->rank, x->dims, idx);
    }
}

lt_status lt_shp_eval_NonZero(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t nnz = lt_shp_nonzero_count(x);
    /* A scalar is treated as 1-D (numpy's behaviour): one row of zeros. */
    int r = x->rank ? x->rank : 1;
    int64_t d[2] = {r, nnz};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_INT64, 2, d, &y));
    lt_shp_nonzero_fill(x, nnz, y->data);
    return LT_OK;
}

lt_status lt_shp_infer_NonZero(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    int64_t d[2] = {t ? (t->rank ? t->rank : 1) : -1, -1};
    return lt_infer_set_i64(ic, n, 0, LT_INT64, 2, d);
}

/* ======================================================================== OneHot */
lt_status lt_shp_eval_OneHot(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *ix, *dt, *vals;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &ix));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &dt));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &vals));
    lt_dclass ic = lt_dtype_get(ix->dtype)->cls, dc = lt_dtype_get(dt->dtype)->cls;
    if (ic != LT_DC_SINT && ic != LT_DC_UINT && ic != LT_DC_FLOAT)
        return lt_op_error(ev, n, LT_ERR_INVALID, "indices must be numeric, got %s", lt_dtype_name(ix->dtype));
    if (dc != LT_DC_SINT && dc != LT_DC_UINT && dc != LT_DC_FLOAT)
        return lt_op_error(ev, n, LT_ERR_INVALID, "depth must be numeric, got %s", lt_dtype_name(dt->dtype));
    if (dt->numel != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "depth must hold one value");
    if (vals->numel != 2)
        return lt_op_error(ev, n, LT_ERR_INVALID, "values must hold [off_value, on_value], got %lld elements",
                           (long long)vals->numel);
    int64_t depth = dt->dtype == LT_UINT64 ? (int64_t)(lt_load_u64(dt->data, dt->dtype, 0) >> 1)
                                           : lt_load_i64(dt->data, dt->dtype, 0);
    if (depth < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "depth %lld is negative", (long long)depth);
    int r = ix->rank + 1;
    if (r > LT_MAX_RANK) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, LT_MAX_RANK);
    int axis;
    LT_TRY(lt_norm_axis(ev, n, lt_attr_int(n, "axis", -1), r, &axis));
    int64_t d[LT_MAX_RANK], outer = 1, inner = 1;
    for (int i = 0, k = 0; i < r; i++) d[i] = i == axis ? depth : ix->dims[k++];
    for (int i = 0; i < axis; i++) outer *= ix->dims[i];
    for (int i = axis; i < ix->rank; i++) inner *= ix->dims[i];
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, vals->dtype, r, d, &y));
    LT_TRY(lt_shp_fill(ev->ctx, y, 0, y->numel, vals, 0));
    if (y->numel == 0) return LT_OK;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t v = load_index(ix, o * inner + i); /* floats truncate toward zero */
            if (v < 0 && v >= -depth) v += depth;
            if (v < 0 || v >= depth) continue; /* out of range: all off_value (spec) */
            LT_TRY(lt_shp_copy(ev->ctx, y, (o * depth + v) * inner + i, vals, 1, 1));
        }
    return LT_OK;
}

lt_status lt_shp_infer_OneHot(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 2);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t || t->rank + 1 > LT_MAX_RANK) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int r = t->rank + 1;
    int64_t a = lt_attr_int(n, "axis", -1);
    if (a < 0) a += r;
    if (a < 0 || a >= r) return lt_infer_error(ic, n, "axis is out of range for rank %d", r);
    lt_dim depth = {-1, NULL};
    const lt_tensor *c = lt_infer_const(n, 1);
    if (c && c->numel == 1 && (lt_dtype_is_int(c->dtype) || lt_dtype_is_float(c->dtype))) {
        int64_t v = lt_load_i64(c->data, c->dtype, 0);
        if (v >= 0) depth.value = v;
    }
    lt_dim d[LT_MAX_RANK];
    for (int i = 0, k = 0; i < r; i++) d[i] = i == a ? depth : lt_shp_dim(t, k++);
    return lt_infer_set(ic, n, 0, dt, r, d);
}
