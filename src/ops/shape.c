/* shape.c — the shape family (see ops.def): ops that create, reshape, copy and rearrange tensors
 * without arithmetic. This file holds the family table lt_ops_shape[] and the simpler ops
 * (Identity, Constant, ConstantOfShape, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Expand,
 * Concat, Split, Transpose, Tile, Range, EyeLike, Trilu); indexing ops live in shape_index.c,
 * padding/slicing/block rearrangement in shape_pad.c, Unique in shape_unique.c.
 *
 * Every op is dtype-generic (elements move as bytes, strings are duplicated) and checks every size
 * and index it reads from data before using it. Opset differences (attributes that became inputs)
 * are handled by reading the input when present and the attribute otherwise.
 */
#include "shape_internal.h"

#include <math.h>
#include <string.h>

#define NEED_OUT(ev, n)                                                                            \
    do {                                                                                           \
        if ((n)->n_out < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "node has no outputs");      \
    } while (0)

/* ======================================================================== Identity */
static lt_status eval_identity(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    if (n->n_in < 1 || !in[0]) return lt_op_error(ev, n, LT_ERR_INVALID, "required input 0 is missing");
    lt_datum_release(out[0]);
    out[0] = lt_datum_retain(in[0]);
    return LT_OK;
}
static lt_status infer_identity(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }

/* ======================================================================== Constant */
static const char *const k_const_attrs[] = {"value",     "sparse_value", "value_float",  "value_floats",
                                            "value_int", "value_ints",   "value_string", "value_strings"};

static const lt_attr *constant_attr(const lt_node *n) {
    for (size_t i = 0; i < sizeof k_const_attrs / sizeof *k_const_attrs; i++) {
        const lt_attr *a = lt_node_attr(n, k_const_attrs[i]);
        if (a) return a;
    }
    return NULL;
}

/* dtype and shape of the constant; false when the attribute is missing or malformed. */
static bool constant_type(const lt_attr *a, lt_dtype *dt, int *rank, int64_t *dims) {
    switch (a->type) {
    case LT_AT_TENSOR:
    case LT_AT_SPARSE_TENSOR:
        if (!a->t) return false;
        *dt = a->t->dtype;
        *rank = a->t->rank;
        if (a->t->rank) memcpy(dims, a->t->dims, (size_t)a->t->rank * sizeof *dims);
        return true;
    case LT_AT_FLOAT: *dt = LT_FLOAT; *rank = 0; return true;
    case LT_AT_INT: *dt = LT_INT64; *rank = 0; return true;
    case LT_AT_STRING: *dt = LT_STRING; *rank = 0; return true;
    case LT_AT_FLOATS: *dt = LT_FLOAT; *rank = 1; dims[0] = a->n; return true;
    case LT_AT_INTS: *dt = LT_INT64; *rank = 1; dims[0] = a->n; return true;
    case LT_AT_STRINGS: *dt = LT_STRING; *rank = 1; dims[0] = a->n; return true;
    default: return false;
    }
}

static lt_status eval_constant(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_attr *a = constant_attr(n);
    lt_dtype dt;
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (!a || !constant_type(a, &dt, &rank, dims))
        return lt_op_error(ev, n, LT_ERR_INVALID, "Constant needs one of the value attributes");
    if (a->type == LT_AT_TENSOR || a->type == LT_AT_SPARSE_TENSOR) {
        lt_tensor *t;
        LT_TRY(lt_tensor_copy(ev->ctx, a->t, &t));
        return lt_out_set(ev, out, 0, t);
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, dt, rank, dims, &y));
    switch (a->type) {
    case LT_AT_FLOAT: ((float *)y->data)[0] = a->f; break;
    case LT_AT_INT: ((int64_t *)y->data)[0] = a->i; break;
    case LT_AT_STRING: return lt_tensor_set_string(ev->ctx, y, 0, a->s ? a->s : "", a->s ? (size_t)a->s_len : 0);
    case LT_AT_FLOATS:
        if (a->n) memcpy(y->data, a->floats, (size_t)a->n * sizeof(float));
        break;
    case LT_AT_INTS:
        if (a->n) memcpy(y->data, a->ints, (size_t)a->n * sizeof(int64_t));
        break;
    case LT_AT_STRINGS:
        for (int i = 0; i < a->n; i++) {
            const char *s = a->strings[i] ? a->strings[i] : "";
            size_t len = a->string_lens && a->strings[i] ? (size_t)a->string_lens[i] : strlen(s);
            LT_TRY(lt_tensor_set_string(ev->ctx, y, i, s, len));
        }
        break;
    default: break;
    }
    return LT_OK;
}

static lt_status infer_constant(lt_infer *ic, lt_node *n) {
    const lt_attr *a = constant_attr(n);
    lt_dtype dt;
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (!a || !constant_type(a, &dt, &rank, dims))
        return lt_infer_error(ic, n, "Constant needs one of the value attributes");
    return lt_infer_set_i64(ic, n, 0, dt, rank, dims);
}

/* ======================================================================== ConstantOfShape */
static lt_status eval_constant_of_shape(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *shp;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &shp));
    if (shp->rank != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "shape input must be 1-D, got rank %d", shp->rank);
    int64_t dims[LT_MAX_RANK];
    int rank;
    LT_TRY(lt_tensor_ints(ev, n, shp, dims, LT_MAX_RANK, &rank));
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return lt_op_error(ev, n, LT_ERR_INVALID, "negative dimension %lld in shape", (long long)dims[i]);
    const lt_tensor *v = lt_attr_tensor(n, "value");
    if (v && v->numel != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "'value' must hold one element, got %lld", (long long)v->numel);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, v ? v->dtype : LT_FLOAT, rank, dims, &y));
    return v ? lt_shp_fill(ev->ctx, y, 0, y->numel, v, 0) : LT_OK;
}

static lt_status infer_constant_of_shape(lt_infer *ic, lt_node *n) {
    const lt_tensor *v = lt_attr_tensor(n, "value");
    lt_dtype dt = v ? v->dtype : LT_FLOAT;
    int64_t dims[LT_MAX_RANK];
    int rank;
    if (lt_shp_infer_ints(n, 0, NULL, dims, LT_MAX_RANK, &rank)) {
        for (int i = 0; i < rank; i++)
            if (dims[i] < 0) return lt_infer_error(ic, n, "negative dimension %lld in shape", (long long)dims[i]);
        return lt_infer_set_i64(ic, n, 0, dt, rank, dims);
    }
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    lt_dim d0 = lt_shp_dim(t, 0);
    if (t && t->rank == 1 && d0.value >= 0 && d0.value <= LT_MAX_RANK)
        return lt_infer_set(ic, n, 0, dt, (int)d0.value, NULL);
    return lt_infer_set(ic, n, 0, dt, -1, NULL);
}

/* ======================================================================== Shape, Size */
static void shape_range(const lt_node *n, int rank, int *start, int *end) {
    int64_t s = 0, e = rank;
    if (n->opset >= 15) {
        s = lt_attr_int(n, "start", 0);
        const lt_attr *a = lt_node_attr(n, "end");
        if (a && a->type == LT_AT_INT) e = a->i;
    }
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *start = (int)s;
    *end = (int)(e > s ? e : s);
}

static lt_status eval_shape(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int s, e;
    shape_range(n, x->rank, &s, &e);
    int64_t len = e - s;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_INT64, 1, &len, &y));
    for (int i = s; i < e; i++) ((int64_t *)y->data)[i - s] = x->dims[i];
    return LT_OK;
}

static lt_status infer_shape(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, LT_INT64, 1, NULL);
    int s, e;
    shape_range(n, t->rank, &s, &e);
    int64_t len = e - s;
    return lt_infer_set_i64(ic, n, 0, LT_INT64, 1, &len);
}

static lt_status eval_size(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_INT64, 0, NULL, &y));
    ((int64_t *)y->data)[0] = x->numel;
    return LT_OK;
}
static lt_status infer_size(lt_infer *ic, lt_node *n) { return lt_infer_set(ic, n, 0, LT_INT64, 0, NULL); }

/* ======================================================================== Reshape */
/* Resolve a Reshape target against the input dims (0 = copy unless allowzero, one -1 = infer). */
static lt_status reshape_dims(lt_eval *ev, const lt_node *n, const lt_tensor *x, int64_t *sh, int r, bool allowzero) {
    int neg = -1;
    int64_t known = 1;
    for (int i = 0; i < r; i++) {
        if (sh[i] == -1) {
            if (neg >= 0) return lt_op_error(ev, n, LT_ERR_INVALID, "shape has more than one -1");
            neg = i;
            continue;
        }
        if (sh[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return lt_op_error(ev, n, LT_ERR_INVALID, "shape[%d] = 0 copies a dimension the rank-%d input lacks",
                                   i, x->rank);
            sh[i] = x->dims[i];
        }
        if (sh[i] < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "invalid dimension %lld in shape", (long long)sh[i]);
        if (!lt_mul_i64(known, sh[i], &known)) return lt_op_error(ev, n, LT_ERR_INVALID, "shape size overflows");
    }
    char a[256], b[256];
    if (neg >= 0) {
        if (known == 0 || x->numel % known != 0)
            return lt_op_error(ev, n, LT_ERR_INVALID, "cannot reshape %s into %s (with -1)",
                               lt_shape_str(x->rank, x->dims, a, sizeof a), lt_shape_str(r, sh, b, sizeof b));
        sh[neg] = x->numel / known;
    } else if (known != x->numel) {
        return lt_op_error(ev, n, LT_ERR_INVALID, "cannot reshape %s into %s",
                           lt_shape_str(x->rank, x->dims, a, sizeof a), lt_shape_str(r, sh, b, sizeof b));
    }
    return LT_OK;
}

static lt_status eval_reshape(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t sh[LT_MAX_RANK];
    int r;
    bool present;
    LT_TRY(lt_shp_int_list(ev, n, in, n->opset >= 5 ? 1 : -1, "shape", sh, LT_MAX_RANK, &r, &present));
    if (!present) return lt_op_error(ev, n, LT_ERR_INVALID, "Reshape needs a shape");
    bool allowzero = n->opset >= 14 && lt_attr_int(n, "allowzero", 0) != 0;
    LT_TRY(reshape_dims(ev, n, x, sh, r, allowzero));
    return lt_shp_out_reshaped(ev, n, out, 0, x, r, sh);
}

static lt_status infer_reshape(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    int64_t sh[LT_MAX_RANK];
    int r;
    if (!lt_shp_infer_ints(n, n->opset >= 5 ? 1 : -1, "shape", sh, LT_MAX_RANK, &r)) {
        const lt_type *st = lt_shp_infer_ranked(n, 1);
        lt_dim d0 = lt_shp_dim(st, 0);
        if (st && st->rank == 1 && d0.value >= 0 && d0.value <= LT_MAX_RANK)
            return lt_infer_set(ic, n, 0, dt, (int)d0.value, NULL);
        return lt_infer_set(ic, n, 0, dt, -1, NULL);
    }
    bool allowzero = n->opset >= 14 && lt_attr_int(n, "allowzero", 0) != 0;
    const lt_type *xt = lt_shp_infer_ranked(n, 0);
    lt_dim d[LT_MAX_RANK];
    int neg = -1;
    for (int i = 0; i < r; i++) {
        if (sh[i] == -1) {
            if (neg >= 0) return lt_infer_error(ic, n, "shape has more than one -1");
            neg = i;
            d[i] = (lt_dim){-1, NULL};
        } else if (sh[i] == 0 && !allowzero) {
            if (xt && i >= xt->rank) return lt_infer_error(ic, n, "shape[%d] = 0 copies a missing dimension", i);
            d[i] = lt_shp_dim(xt, i);
        } else if (sh[i] < 0) {
            return lt_infer_error(ic, n, "invalid dimension %lld in shape", (long long)sh[i]);
        } else {
            d[i] = (lt_dim){sh[i], NULL};
        }
    }
    if (neg >= 0 && xt) {
        /* Infer the -1 when every dim involved is known. */
        int64_t total = 1, known = 1;
        bool ok = true;
        for (int i = 0; i < xt->rank && ok; i++) {
            lt_dim v = lt_shp_dim(xt, i);
            ok = v.value >= 0 && lt_mul_i64(total, v.value, &total);
        }
        for (int i = 0; i < r && ok; i++)
            if (i != neg) ok = d[i].value >= 0 && lt_mul_i64(known, d[i].value, &known);
        if (ok && known > 0 && total % known == 0) d[neg] = (lt_dim){total / known, NULL};
    }
    return lt_infer_set(ic, n, 0, dt, r, d);
}

/* ======================================================================== Flatten */
static lt_status flatten_axis(const lt_node *n, int rank, int *axis) {
    int64_t a = lt_attr_int(n, "axis", 1);
    if (a < 0) a += rank;
    if (a < 0 || a > rank) return LT_ERR_INVALID;
    *axis = (int)a;
    return LT_OK;
}

static lt_status eval_flatten(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int axis;
    if (flatten_axis(n, x->rank, &axis))
        return lt_op_error(ev, n, LT_ERR_INVALID, "axis %lld is out of range for rank %d",
                           (long long)lt_attr_int(n, "axis", 1), x->rank);
    int64_t d[2] = {1, 1};
    for (int i = 0; i < x->rank; i++) d[i >= axis] *= x->dims[i]; /* products bounded by numel */
    return lt_shp_out_reshaped(ev, n, out, 0, x, 2, d);
}

static lt_status infer_flatten(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, 2, NULL);
    int axis;
    if (flatten_axis(n, t->rank, &axis)) return lt_infer_error(ic, n, "axis is out of range for rank %d", t->rank);
    int64_t d[2] = {1, 1};
    for (int i = 0; i < t->rank; i++) {
        lt_dim v = lt_shp_dim(t, i);
        int k = i >= axis;
        if (d[k] < 0) continue;
        if (v.value < 0 || !lt_mul_i64(d[k], v.value, &d[k])) d[k] = -1;
    }
    return lt_infer_set_i64(ic, n, 0, dt, 2, d);
}

/* ======================================================================== Squeeze, Unsqueeze */
static lt_status eval_squeeze(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t axes[LT_MAX_RANK];
    int na;
    bool present;
    LT_TRY(lt_shp_int_list(ev, n, in, 1, "axes", axes, LT_MAX_RANK, &na, &present));
    if (present && na == 0 && n->opset < 13) present = false; /* Squeeze-1/11: [] means all */
    bool drop[LT_MAX_RANK] = {false};
    if (present) {
        LT_TRY(lt_shp_norm_axes(ev, n, axes, na, x->rank));
        for (int i = 0; i < na; i++) {
            if (x->dims[axes[i]] != 1)
                return lt_op_error(ev, n, LT_ERR_INVALID, "cannot squeeze axis %lld of size %lld", (long long)axes[i],
                                   (long long)x->dims[axes[i]]);
            drop[axes[i]] = true;
        }
    } else {
        for (int i = 0; i < x->rank; i++) drop[i] = x->dims[i] == 1;
    }
    int64_t d[LT_MAX_RANK];
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) d[r++] = x->dims[i];
    return lt_shp_out_reshaped(ev, n, out, 0, x, r, d);
}

static lt_status infer_squeeze(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int64_t axes[LT_MAX_RANK];
    int na;
    bool drop[LT_MAX_RANK] = {false};
    bool has_axes_input = n->n_in > 1 && n->in[1];
    if (has_axes_input || lt_node_attr(n, "axes")) {
        if (!lt_shp_infer_ints(n, 1, "axes", axes, LT_MAX_RANK, &na)) return lt_infer_set(ic, n, 0, dt, -1, NULL);
        if (na == 0 && n->opset < 13) goto all;
        for (int i = 0; i < na; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + t->rank : axes[i];
            if (a < 0 || a >= t->rank) return lt_infer_error(ic, n, "axis %lld is out of range", (long long)axes[i]);
            lt_dim v = lt_shp_dim(t, (int)a);
            if (v.value >= 0 && v.value != 1)
                return lt_infer_error(ic, n, "cannot squeeze axis %lld of size %lld", (long long)a, (long long)v.value);
            drop[a] = true;
        }
    } else {
    all:
        for (int i = 0; i < t->rank; i++) {
            lt_dim v = lt_shp_dim(t, i);
            if (v.value < 0) return lt_infer_set(ic, n, 0, dt, -1, NULL);
            drop[i] = v.value == 1;
        }
    }
    lt_dim d[LT_MAX_RANK];
    int r = 0;
    for (int i = 0; i < t->rank; i++)
        if (!drop[i]) d[r++] = lt_shp_dim(t, i);
    return lt_infer_set(ic, n, 0, dt, r, d);
}

/* Output dims of Unsqueeze; ins[i] true where a new axis goes. */
static bool unsqueeze_plan(const int64_t *axes, int na, int rank, bool *ins) {
    int r = rank + na;
    if (r > LT_MAX_RANK) return false;
    for (int i = 0; i < r; i++) ins[i] = false;
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || ins[a]) return false;
        ins[a] = true;
    }
    return true;
}

static lt_status eval_unsqueeze(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t axes[LT_MAX_RANK];
    int na;
    bool present, ins[LT_MAX_RANK];
    LT_TRY(lt_shp_int_list(ev, n, in, 1, "axes", axes, LT_MAX_RANK, &na, &present));
    if (!present) return lt_op_error(ev, n, LT_ERR_INVALID, "Unsqueeze needs axes");
    if (!unsqueeze_plan(axes, na, x->rank, ins))
        return lt_op_error(ev, n, LT_ERR_INVALID, "invalid or repeated axes for output rank %d", x->rank + na);
    int64_t d[LT_MAX_RANK];
    int r = x->rank + na;
    for (int i = 0, k = 0; i < r; i++) d[i] = ins[i] ? 1 : x->dims[k++];
    return lt_shp_out_reshaped(ev, n, out, 0, x, r, d);
}

static lt_status infer_unsqueeze(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    int64_t axes[LT_MAX_RANK];
    int na;
    bool ins[LT_MAX_RANK];
    if (!lt_shp_infer_ints(n, 1, "axes", axes, LT_MAX_RANK, &na)) {
        const lt_type *at = lt_shp_infer_ranked(n, 1);
        lt_dim d0 = lt_shp_dim(at, 0);
        if (t && at && at->rank == 1 && d0.value >= 0 && t->rank + d0.value <= LT_MAX_RANK)
            return lt_infer_set(ic, n, 0, dt, t->rank + (int)d0.value, NULL);
        return lt_infer_set(ic, n, 0, dt, -1, NULL);
    }
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (!unsqueeze_plan(axes, na, t->rank, ins)) return lt_infer_error(ic, n, "invalid or repeated axes");
    lt_dim d[LT_MAX_RANK];
    int r = t->rank + na;
    for (int i = 0, k = 0; i < r; i++) d[i] = ins[i] ? (lt_dim){1, NULL} : lt_shp_dim(t, k++);
    return lt_infer_set(ic, n, 0, dt, r, d);
}

/* ======================================================================== Expand */
static lt_status eval_expand(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x, *st;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &st));
    if (st->rank > 1) return lt_op_error(ev, n, LT_ERR_INVALID, "shape input must be 1-D");
    int64_t sh[LT_MAX_RANK], d[LT_MAX_RANK];
    int ns;
    LT_TRY(lt_tensor_ints(ev, n, st, sh, LT_MAX_RANK, &ns));
    int r = ns > x->rank ? ns : x->rank;
    for (int i = 0; i < r; i++) {
        int xi = i - (r - x->rank), si = i - (r - ns);
        int64_t a = xi >= 0 ? x->dims[xi] : 1, b = si >= 0 ? sh[si] : 1;
        if (b < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "negative dimension %lld in shape", (long long)b);
        if (a == b || b == 1) d[i] = a;
        else if (a == 1) d[i] = b;
        else {
            char s1[256], s2[256];
            return lt_op_error(ev, n, LT_ERR_INVALID, "input shape %s cannot be expanded to %s",
                               lt_shape_str(x->rank, x->dims, s1, sizeof s1), lt_shape_str(ns, sh, s2, sizeof s2));
        }
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, d, &y));
    int64_t sstr[LT_MAX_RANK], dstr[LT_MAX_RANK];
    lt_broadcast_strides(x, r, d, sstr);
    lt_shp_strides(r, d, dstr);
    return lt_shp_strided_copy(ev->ctx, y, 0, dstr, x, 0, sstr, r, d);
}

static lt_status infer_expand(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    int64_t sh[LT_MAX_RANK];
    int ns;
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (!lt_shp_infer_ints(n, 1, NULL, sh, LT_MAX_RANK, &ns)) {
        const lt_type *st = lt_shp_infer_ranked(n, 1);
        lt_dim d0 = lt_shp_dim(st, 0);
        if (st && st->rank == 1 && d0.value >= 0 && d0.value <= LT_MAX_RANK)
            return lt_infer_set(ic, n, 0, dt, d0.value > t->rank ? (int)d0.value : t->rank, NULL);
        return lt_infer_set(ic, n, 0, dt, -1, NULL);
    }
    int r = ns > t->rank ? ns : t->rank;
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int xi = i - (r - t->rank), si = i - (r - ns);
        lt_dim a = xi >= 0 ? lt_shp_dim(t, xi) : (lt_dim){1, NULL};
        int64_t b = si >= 0 ? sh[si] : 1;
        if (b < 0) return lt_infer_error(ic, n, "negative dimension %lld in shape", (long long)b);
        if (b == 1) d[i] = a;
        else if (a.value == 1 || a.value == b) d[i] = (lt_dim){b, NULL};
        else if (a.value < 0) d[i] = (lt_dim){-1, NULL}; /* a or b, decided at run time */
        else return lt_infer_error(ic, n, "dimension %lld cannot be expanded to %lld", (long long)a.value, (long long)b);
    }
    return lt_infer_set(ic, n, 0, dt, r, d);
}

/* ======================================================================== Concat */
static int64_t concat_axis_attr(const lt_node *n) { return lt_attr_int(n, "axis", n->opset < 4 ? 1 : 0); }

static lt_status eval_concat(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    if (n->n_in < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "Concat needs at least one input");
    if (n->opset >= 4 && !lt_node_attr(n, "axis"))
        return lt_op_error(ev, n, LT_ERR_INVALID, "missing required attribute 'axis'");
    const lt_tensor *x0;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x0));
    if (x0->rank == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "cannot concatenate scalars");
    int axis;
    LT_TRY(lt_norm_axis(ev, n, concat_axis_attr(n), x0->rank, &axis));
    int64_t d[LT_MAX_RANK];
    memcpy(d, x0->dims, sizeof d);
    d[axis] = 0;
    for (int k = 0; k < n->n_in; k++) {
        const lt_tensor *x;
        LT_TRY(lt_in_tensor(ev, n, in, k, &x));
        if (x->dtype != x0->dtype)
            return lt_op_error(ev, n, LT_ERR_INVALID, "input %d is %s, input 0 is %s", k, lt_dtype_name(x->dtype),
                               lt_dtype_name(x0->dtype));
        bool ok = x->rank == x0->rank;
        for (int i = 0; ok && i < x->rank; i++) ok = i == axis || x->dims[i] == x0->dims[i];
        if (!ok) {
            char a[256], b[256];
            return lt_op_error(ev, n, LT_ERR_INVALID, "input %d of shape %s does not match input 0 of shape %s", k,
                               lt_shape_str(x->rank, x->dims, a, sizeof a),
                               lt_shape_str(x0->rank, x0->dims, b, sizeof b));
        }
        if (!lt_add_i64(d[axis], x->dims[axis], &d[axis]))
            return lt_op_error(ev, n, LT_ERR_INVALID, "concatenated size overflows");
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x0->dtype, x0->rank, d, &y));
    if (y->numel == 0) return LT_OK;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= d[i];
    for (int i = axis + 1; i < x0->rank; i++) inner *= d[i];
    int64_t off = 0;
    for (int k = 0; k < n->n_in; k++) {
        const lt_tensor *x;
        LT_TRY(lt_in_tensor(ev, n, in, k, &x));
        int64_t run = x->dims[axis] * inner;
        int64_t dims2[2] = {outer, run}, dstr[2] = {d[axis] * inner, 1}, sstr[2] = {run, 1};
        LT_TRY(lt_shp_strided_copy(ev->ctx, y, off * inner, dstr, x, 0, sstr, 2, dims2));
        off += x->dims[axis];
    }
    return LT_OK;
}

static lt_status infer_concat(lt_infer *ic, lt_node *n) {
    lt_dtype dt = LT_UNDEFINED;
    const lt_type *t0 = NULL;
    for (int k = 0; k < n->n_in; k++) {
        if (dt == LT_UNDEFINED) dt = lt_shp_infer_dtype(n, k);
        if (!t0) t0 = lt_shp_infer_ranked(n, k);
    }
    if (!t0) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (t0->rank == 0) return lt_infer_error(ic, n, "cannot concatenate scalars");
    int64_t a = concat_axis_attr(n);
    if (a < 0) a += t0->rank;
    if (a < 0 || a >= t0->rank) return lt_infer_error(ic, n, "axis %lld is out of range", (long long)concat_axis_attr(n));
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t0->rank; i++) d[i] = lt_shp_dim(t0, i);
    int64_t sum = 0;
    for (int k = 0; k < n->n_in; k++) {
        const lt_type *t = lt_shp_infer_ranked(n, k);
        if (!t) { sum = -1; continue; }
        if (t->rank != t0->rank) return lt_infer_error(ic, n, "input %d has rank %d, expected %d", k, t->rank, t0->rank);
        for (int i = 0; i < t->rank; i++) {
            lt_dim v = lt_shp_dim(t, i);
            if (i == a) {
                if (sum >= 0 && (v.value < 0 || !lt_add_i64(sum, v.value, &sum))) sum = -1;
            } else if (d[i].value < 0 && v.value >= 0) {
                d[i] = v;
            } else if (d[i].value >= 0 && v.value >= 0 && d[i].value != v.value) {
                return lt_infer_error(ic, n, "input %d has size %lld on axis %d, expected %lld", k, (long long)v.value,
                                      i, (long long)d[i].value);
            }
        }
    }
    d[a] = (lt_dim){sum, NULL};
    return lt_infer_set(ic, n, 0, dt, t0->rank, d);
}

/* ======================================================================== Split */
/* Split sizes: from the split input / attribute, else equal parts (last one smaller). */
static lt_status split_sizes(lt_eval *ev, const lt_node *n, lt_datum **in, int64_t dim, int64_t *sz) {
    int nout = n->n_out, cnt;
    bool present;
    LT_TRY(lt_shp_int_list(ev, n, in, 1, "split", sz, nout, &cnt, &present));
    if (present) {
        if (cnt != nout)
            return lt_op_error(ev, n, LT_ERR_INVALID, "split has %d entries for %d outputs", cnt, nout);
        int64_t sum = 0;
        for (int i = 0; i < nout; i++) {
            if (sz[i] < 0 || !lt_add_i64(sum, sz[i], &sum))
                return lt_op_error(ev, n, LT_ERR_INVALID, "invalid split size %lld", (long long)sz[i]);
        }
        if (sum != dim)
            return lt_op_error(ev, n, LT_ERR_INVALID, "split sizes sum to %lld, the axis has %lld", (long long)sum,
                               (long long)dim);
        return LT_OK;
    }
    const lt_attr *no = n->opset >= 18 ? lt_node_attr(n, "num_outputs") : NULL;
    if (no && no->i != nout)
        return lt_op_error(ev, n, LT_ERR_INVALID, "num_outputs %lld but the node has %d outputs", (long long)no->i, nout);
    int64_t chunk = dim / nout + (dim % nout != 0);
    if (dim % nout != 0 && !no && n->opset < 18)
        return lt_op_error(ev, n, LT_ERR_INVALID, "axis of size %lld cannot be split evenly into %d parts",
                           (long long)dim, nout);
    int64_t last = dim - chunk * (nout - 1);
    if (last < 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "axis of size %lld cannot be split into %d parts of %lld",
                           (long long)dim, nout, (long long)chunk);
    for (int i = 0; i < nout; i++) sz[i] = i == nout - 1 ? last : chunk;
    return LT_OK;
}

static lt_status eval_split(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (x->rank == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "cannot split a scalar");
    int axis;
    LT_TRY(lt_norm_axis(ev, n, lt_attr_int(n, "axis", 0), x->rank, &axis));
    int64_t *sz = lt_alloc(ev->ctx, (size_t)n->n_out * sizeof *sz, "split sizes");
    if (!sz) return LT_ERR_NOMEM;
    lt_status s = split_sizes(ev, n, in, x->dims[axis], sz);
    int64_t outer = 1, inner = 1, off = 0;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    for (int k = 0; s == LT_OK && k < n->n_out; k++) {
        int64_t d[LT_MAX_RANK];
        memcpy(d, x->dims, sizeof d);
        d[axis] = sz[k];
        lt_tensor *y;
        s = lt_out_new(ev, n, out, k, x->dtype, x->rank, d, &y);
        if (s) break;
        int64_t run = sz[k] * inner;
        int64_t dims2[2] = {outer, run}, dstr[2] = {run, 1}, sstr[2] = {x->dims[axis] * inner, 1};
        s = lt_shp_strided_copy(ev->ctx, y, 0, dstr, x, off * inner, sstr, 2, dims2);
        off += sz[k];
    }
    lt_mem_free(sz);
    return s;
}

static lt_status infer_split(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) {
        for (int k = 0; k < n->n_out; k++) LT_TRY(lt_infer_set(ic, n, k, dt, -1, NULL));
        return LT_OK;
    }
    if (t->rank == 0) return lt_infer_error(ic, n, "cannot split a scalar");
    int64_t a = lt_attr_int(n, "axis", 0);
    if (a < 0) a += t->rank;
    if (a < 0 || a >= t->rank) return lt_infer_error(ic, n, "axis is out of range for rank %d", t->rank);
    int nout = n->n_out, cnt = 0;
    int64_t sz[64];
    bool known = nout <= 64 && lt_shp_infer_ints(n, 1, "split", sz, 64, &cnt) && cnt == nout;
    lt_dim dim = lt_shp_dim(t, (int)a);
    bool has_split = (n->n_in > 1 && n->in[1]) || lt_node_attr(n, "split");
    if (!known && !has_split && dim.value >= 0 && nout > 0 && nout <= 64) {
        int64_t chunk = dim.value / nout + (dim.value % nout != 0), last = dim.value - chunk * (nout - 1);
        if (last >= 0) {
            for (int k = 0; k < nout; k++) sz[k] = k == nout - 1 ? last : chunk;
            known = true;
        }
    }
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) d[i] = lt_shp_dim(t, i);
    for (int k = 0; k < nout; k++) {
        d[a] = (lt_dim){known ? sz[k] : -1, NULL};
        LT_TRY(lt_infer_set(ic, n, k, dt, t->rank, d));
    }
    return LT_OK;
}

/* ======================================================================== Transpose */
static bool transpose_perm(const lt_node *n, int rank, int *perm) {
    const int64_t *p;
    int np = lt_attr_ints(n, "perm", &p);
    if (!p) {
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return true;
    }
    if (np != rank) return false;
    bool seen[LT_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) {
        int64_t a = p[i] < 0 ? p[i] + rank : p[i]; /* negative entries accepted, like numpy */
        if (a < 0 || a >= rank || seen[a]) return false;
        seen[a] = true;
        perm[i] = (int)a;
    }
    return true;
}

static lt_status eval_transpose(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int perm[LT_MAX_RANK];
    if (!transpose_perm(n, x->rank, perm))
        return lt_op_error(ev, n, LT_ERR_INVALID, "perm is not a permutation of %d axes", x->rank);
    int64_t d[LT_MAX_RANK], xs[LT_MAX_RANK], ss[LT_MAX_RANK], ds[LT_MAX_RANK];
    lt_shp_strides(x->rank, x->dims, xs);
    for (int i = 0; i < x->rank; i++) {
        d[i] = x->dims[perm[i]];
        ss[i] = xs[perm[i]];
    }
    lt_shp_strides(x->rank, d, ds);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, d, &y));
    return lt_shp_strided_copy(ev->ctx, y, 0, ds, x, 0, ss, x->rank, d);
}

static lt_status infer_transpose(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) {
        const int64_t *p;
        int np = lt_attr_ints(n, "perm", &p);
        return lt_infer_set(ic, n, 0, dt, p ? np : -1, NULL);
    }
    int perm[LT_MAX_RANK];
    if (!transpose_perm(n, t->rank, perm)) return lt_infer_error(ic, n, "perm is not a permutation of %d axes", t->rank);
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) d[i] = lt_shp_dim(t, perm[i]);
    return lt_infer_set(ic, n, 0, dt, t->rank, d);
}

/* ======================================================================== Tile */
static lt_status tile_repeats(lt_eval *ev, const lt_node *n, lt_datum **in, int rank, int64_t *rep) {
    if (n->opset < 6) { /* Tile-1: tiles (count) and axis inputs */
        const lt_tensor *tt, *at;
        int64_t tiles, axis;
        LT_TRY(lt_in_tensor(ev, n, in, 1, &tt));
        LT_TRY(lt_in_tensor(ev, n, in, 2, &at));
        LT_TRY(lt_shp_scalar_int(ev, n, tt, "tiles", &tiles));
        LT_TRY(lt_shp_scalar_int(ev, n, at, "axis", &axis));
        int a;
        LT_TRY(lt_norm_axis(ev, n, axis, rank, &a));
        for (int i = 0; i < rank; i++) rep[i] = i == a ? tiles : 1;
    } else {
        const lt_tensor *rt;
        int nr;
        LT_TRY(lt_in_tensor(ev, n, in, 1, &rt));
        if (rt->rank != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "repeats must be 1-D");
        LT_TRY(lt_tensor_ints(ev, n, rt, rep, LT_MAX_RANK, &nr));
        if (nr != rank)
            return lt_op_error(ev, n, LT_ERR_INVALID, "repeats has %d entries for an input of rank %d", nr, rank);
    }
    for (int i = 0; i < rank; i++)
        if (rep[i] < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "negative repeat %lld", (long long)rep[i]);
    return LT_OK;
}

static lt_status eval_tile(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int r = x->rank;
    int64_t rep[LT_MAX_RANK], d[LT_MAX_RANK];
    LT_TRY(tile_repeats(ev, n, in, r, rep));
    for (int i = 0; i < r; i++)
        if (!lt_mul_i64(x->dims[i], rep[i], &d[i]))
            return lt_op_error(ev, n, LT_ERR_INVALID, "tiled dimension overflows");
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, d, &y));
    /* View the output as [rep0, x0, rep1, x1, ...]: each tile reads the whole input. */
    int64_t xs[LT_MAX_RANK], ys[LT_MAX_RANK];
    int64_t vd[LT_SHP_MAX_VIEW], vds[LT_SHP_MAX_VIEW], vss[LT_SHP_MAX_VIEW];
    lt_shp_strides(r, x->dims, xs);
    lt_shp_strides(r, d, ys);
    for (int i = 0; i < r; i++) {
        vd[2 * i] = rep[i];
        vd[2 * i + 1] = x->dims[i];
        vds[2 * i] = x->dims[i] * ys[i];
        vds[2 * i + 1] = ys[i];
        vss[2 * i] = 0;
        vss[2 * i + 1] = xs[i];
    }
    return lt_shp_strided_copy(ev->ctx, y, 0, vds, x, 0, vss, 2 * r, vd);
}

static lt_status infer_tile(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int64_t rep[LT_MAX_RANK];
    int nr;
    lt_dim d[LT_MAX_RANK];
    bool known = n->opset >= 6 && lt_shp_infer_ints(n, 1, NULL, rep, LT_MAX_RANK, &nr) && nr == t->rank;
    for (int i = 0; i < t->rank; i++) {
        lt_dim v = lt_shp_dim(t, i);
        d[i] = (lt_dim){-1, NULL};
        if (!known) continue;
        if (rep[i] == 1) d[i] = v;
        else if (rep[i] == 0) d[i] = (lt_dim){0, NULL};
        else if (v.value >= 0 && rep[i] > 0 && !lt_mul_i64(v.value, rep[i], &d[i].value)) d[i].value = -1;
    }
    return lt_infer_set(ic, n, 0, dt, t->rank, d);
}

/* ======================================================================== Range */
#define LT_RANGE_MAX_COUNT ((int64_t)1 << 40)

static lt_status eval_range(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *t[3];
    static const char *const names[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++) {
        LT_TRY(lt_in_tensor(ev, n, in, i, &t[i]));
        if (t[i]->numel != 1)
            return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be a scalar, got %lld elements", names[i],
                               (long long)t[i]->numel);
        if (t[i]->dtype != t[0]->dtype)
            return lt_op_error(ev, n, LT_ERR_INVALID, "%s is %s, start is %s", names[i], lt_dtype_name(t[i]->dtype),
                               lt_dtype_name(t[0]->dtype));
    }
    lt_dtype dt = t[0]->dtype;
    lt_dclass c = lt_dtype_get(dt)->cls;
    lt_tensor *y;
    if (c == LT_DC_SINT || c == LT_DC_UINT) {
        __int128 v[3];
        for (int i = 0; i < 3; i++)
            v[i] = dt == LT_UINT64 ? (__int128)lt_load_u64(t[i]->data, dt, 0) : (__int128)lt_load_i64(t[i]->data, dt, 0);
        __int128 s = v[0], l = v[1], d = v[2], cnt;
        if (d == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "delta must not be zero");
        if (d > 0) cnt = l > s ? (l - s + d - 1) / d : 0;
        else cnt = l < s ? (s - l - d - 1) / -d : 0;
        if (cnt > LT_RANGE_MAX_COUNT)
            return lt_op_error(ev, n, LT_ERR_INVALID, "range of %lld elements is too large", (long long)cnt);
        int64_t len = (int64_t)cnt;
        LT_TRY(lt_out_new(ev, n, out, 0, dt, 1, &len, &y));
        for (int64_t i = 0; i < len; i++) {
            __int128 val = s + (__int128)i * d;
            if (dt == LT_UINT64) lt_store_u64(y->data, dt, i, (uint64_t)val);
            else lt_store_i64(y->data, dt, i, (int64_t)val);
        }
        return LT_OK;
    }
    if (c != LT_DC_FLOAT) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "Range of %s", lt_dtype_name(dt));
    double s = lt_load_f64(t[0]->data, dt, 0), l = lt_load_f64(t[1]->data, dt, 0), d = lt_load_f64(t[2]->data, dt, 0);
    if (!isfinite(s) || !isfinite(l) || !isfinite(d) || d == 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "start, limit and delta must be finite and delta non-zero");
    double cnt = ceil((l - s) / d);
    if (!(cnt <= (double)LT_RANGE_MAX_COUNT))
        return lt_op_error(ev, n, LT_ERR_INVALID, "range of %g elements is too large", cnt);
    int64_t len = cnt > 0 ? (int64_t)cnt : 0;
    LT_TRY(lt_out_new(ev, n, out, 0, dt, 1, &len, &y));
    for (int64_t i = 0; i < len; i++) {
        double v = s + (double)i * d;
        if (dt == LT_FLOAT) ((float *)y->data)[i] = (float)v;
        else lt_store_f64(y->data, dt, i, v);
    }
    return LT_OK;
}

static lt_status infer_range(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    int64_t len = -1;
    const lt_tensor *c0 = lt_infer_const(n, 0), *c1 = lt_infer_const(n, 1), *c2 = lt_infer_const(n, 2);
    if (c0 && c1 && c2 && c0->numel == 1 && c1->numel == 1 && c2->numel == 1 && c0->dtype == c1->dtype &&
        c0->dtype == c2->dtype) {
        lt_dtype t = c0->dtype;
        if (lt_dtype_is_int(t) && t != LT_UINT64) {
            __int128 s = lt_load_i64(c0->data, t, 0), l = lt_load_i64(c1->data, t, 0), d = lt_load_i64(c2->data, t, 0);
            __int128 cnt = d > 0 ? (l > s ? (l - s + d - 1) / d : 0) : d < 0 ? (l < s ? (s - l - d - 1) / -d : 0) : -1;
            if (cnt >= 0 && cnt <= LT_RANGE_MAX_COUNT) len = (int64_t)cnt;
        } else if (lt_dtype_is_float(t)) {
            double s = lt_load_f64(c0->data, t, 0), l = lt_load_f64(c1->data, t, 0), d = lt_load_f64(c2->data, t, 0);
            double cnt = d != 0 ? ceil((l - s) / d) : NAN;
            if (cnt <= (double)LT_RANGE_MAX_COUNT) len = cnt > 0 ? (int64_t)cnt : 0;
        }
    }
    return lt_infer_set_i64(ic, n, 0, dt, 1, &len);
}

/* ======================================================================== EyeLike */
static lt_dtype eyelike_dtype(const lt_node *n, lt_dtype in_dt) {
    const lt_attr *a = lt_node_attr(n, "dtype");
    return a && a->type == LT_AT_INT ? (lt_dtype)a->i : in_dt;
}

static lt_status eval_eyelike(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (x->rank != 2 && x->rank != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "EyeLike needs a 2-D input, got rank %d", x->rank);
    const lt_attr *da = lt_node_attr(n, "dtype");
    if (da && (da->type != LT_AT_INT || !lt_dtype_valid((int)da->i)))
        return lt_op_error(ev, n, LT_ERR_INVALID, "invalid dtype attribute");
    lt_dtype dt = eyelike_dtype(n, x->dtype);
    lt_dclass c = lt_dtype_get(dt)->cls;
    if (c == LT_DC_STRING || c == LT_DC_NONE)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "EyeLike of %s", lt_dtype_name(dt));
    int64_t d[2] = {x->dims[0], x->rank == 2 ? x->dims[1] : x->dims[0]};
    int64_t k = lt_attr_int(n, "k", 0);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, dt, 2, d, &y));
    if (k >= d[1] || k <= -d[0]) return LT_OK;
    for (int64_t i = 0; i < d[0]; i++) {
        int64_t j = i + k;
        if (j >= 0 && j < d[1]) lt_store_f64(y->data, dt, i * d[1] + j, 1.0);
    }
    return LT_OK;
}

static lt_status infer_eyelike(lt_infer *ic, lt_node *n) {
    lt_dtype dt = eyelike_dtype(n, lt_shp_infer_dtype(n, 0));
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (t && t->rank == 2) {
        lt_dim d[2] = {lt_shp_dim(t, 0), lt_shp_dim(t, 1)};
        return lt_infer_set(ic, n, 0, dt, 2, d);
    }
    return lt_infer_set(ic, n, 0, dt, 2, NULL);
}

/* ======================================================================== Trilu */
static lt_status eval_trilu(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x, *kt;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &kt));
    if (x->rank < 2) return lt_op_error(ev, n, LT_ERR_INVALID, "Trilu needs rank >= 2, got %d", x->rank);
    int64_t k = 0;
    if (kt) LT_TRY(lt_shp_scalar_int(ev, n, kt, "k", &k));
    bool upper = lt_attr_int(n, "upper", 1) != 0;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t lim = rows + cols + 1;
    k = k > lim ? lim : k < -lim ? -lim : k;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    if (y->numel == 0) return LT_OK;
    int64_t mats = y->numel / (rows * cols);
    for (int64_t m = 0; m < mats; m++) {
        for (int64_t i = 0; i < rows; i++) {
            int64_t lo = 0, hi = cols; /* kept columns [lo, hi) */
            if (upper) lo = i + k < 0 ? 0 : i + k;
            else hi = i + k + 1 > cols ? cols : i + k + 1;
            if (lo >= hi) continue;
            int64_t base = (m * rows + i) * cols;
            LT_TRY(lt_shp_copy(ev->ctx, y, base + lo, x, base + lo, hi - lo));
        }
    }
    return LT_OK;
}

/* ======================================================================== table */
const lt_op_reg lt_ops_shape[] = {
    {LT_OP_Identity, infer_identity, eval_identity},
    {LT_OP_Constant, infer_constant, eval_constant},
    {LT_OP_ConstantOfShape, infer_constant_of_shape, eval_constant_of_shape},
    {LT_OP_Shape, infer_shape, eval_shape},
    {LT_OP_Size, infer_size, eval_size},
    {LT_OP_Reshape, infer_reshape, eval_reshape},
    {LT_OP_Flatten, infer_flatten, eval_flatten},
    {LT_OP_Squeeze, infer_squeeze, eval_squeeze},
    {LT_OP_Unsqueeze, infer_unsqueeze, eval_unsqueeze},
    {LT_OP_Expand, infer_expand, eval_expand},
    {LT_OP_Concat, infer_concat, eval_concat},
    {LT_OP_Split, infer_split, eval_split},
    {LT_OP_Transpose, infer_transpose, eval_transpose},
    {LT_OP_Tile, infer_tile, eval_tile},
    {LT_OP_Range, infer_range, eval_range},
    {LT_OP_EyeLike, infer_eyelike, eval_eyelike},
    {LT_OP_Trilu, lt_infer_same_as_input0, eval_trilu},
    {LT_OP_Gather, lt_shp_infer_Gather, lt_shp_eval_Gather},
    {LT_OP_GatherElements, lt_shp_infer_GatherElements, lt_shp_eval_GatherElements},
    {LT_OP_GatherND, lt_shp_infer_GatherND, lt_shp_eval_GatherND},
    {LT_OP_Scatter, lt_shp_infer_ScatterElements, lt_shp_eval_ScatterElements},
    {LT_OP_ScatterElements, lt_shp_infer_ScatterElements, lt_shp_eval_ScatterElements},
    {LT_OP_ScatterND, lt_shp_infer_ScatterND, lt_shp_eval_ScatterND},
    {LT_OP_TensorScatter, lt_shp_infer_TensorScatter, lt_shp_eval_TensorScatter},
    {LT_OP_Compress, lt_shp_infer_Compress, lt_shp_eval_Compress},
    {LT_OP_NonZero, lt_shp_infer_NonZero, lt_shp_eval_NonZero},
    {LT_OP_OneHot, lt_shp_infer_OneHot, lt_shp_eval_OneHot},
    {LT_OP_Pad, lt_shp_infer_Pad, lt_shp_eval_Pad},
    {LT_OP_CenterCropPad, lt_shp_infer_CenterCropPad, lt_shp_eval_CenterCropPad},
    {LT_OP_Slice, lt_shp_infer_Slice, lt_shp_eval_Slice},
    {LT_OP_DepthToSpace, lt_shp_infer_DepthToSpace, lt_shp_eval_DepthToSpace},
    {LT_OP_SpaceToDepth, lt_shp_infer_SpaceToDepth, lt_shp_eval_SpaceToDepth},
    {LT_OP_ReverseSequence, lt_shp_infer_ReverseSequence, lt_shp_eval_ReverseSequence},
    {LT_OP_Unique, lt_shp_infer_Unique, lt_shp_eval_Unique},
    {0, NULL, NULL},
};
