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
#include "shape_impl.h"

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
/* Resolve a Reshape target against the input dims (0 = copy unless allowzero, one -1 = infer): the
 * rules of both hooks. sh[0..r) is rewritten to the output dims. */
static lt_status reshape_dims(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd, int64_t *sh, int r,
                              bool allowzero) {
    int64_t numel;
    LT_TRY(lt_shp_numel(ctx, n, "input", xr, xd, &numel));
    int neg = -1;
    bool zero = false;
    int64_t known = 1;
    for (int i = 0; i < r; i++) {
        if (sh[i] == -1) {
            if (neg >= 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "shape has more than one -1");
            neg = i;
            continue;
        }
        if (sh[i] == 0) zero = true;
        if (sh[i] == 0 && !allowzero) {
            if (i >= xr)
                return lt_node_error(ctx, n, LT_ERR_INVALID,
                                     "shape[%d] = 0 copies a dimension the rank-%d input lacks", i, xr);
            sh[i] = xd[i];
        }
        if (sh[i] < 0)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "invalid dimension %lld in shape", (long long)sh[i]);
        if (!lt_mul_i64(known, sh[i], &known)) return lt_node_error(ctx, n, LT_ERR_INVALID, "shape size overflows");
    }
    if (allowzero && zero && neg >= 0)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "shape has both 0 and -1 while allowzero is set");
    char a[256], b[256];
    if (neg >= 0) {
        if (known == 0 || numel % known != 0)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot reshape %s into %s (with -1)",
                                 lt_shape_str(xr, xd, a, sizeof a), lt_shape_str(r, sh, b, sizeof b));
        sh[neg] = numel / known;
    } else if (known != numel) {
        return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot reshape %s into %s", lt_shape_str(xr, xd, a, sizeof a),
                             lt_shape_str(r, sh, b, sizeof b));
    }
    return LT_OK;
}

static int reshape_shape_input(const lt_node *n) { return n->opset >= 5 ? 1 : -1; }
static bool reshape_allowzero(const lt_node *n) { return n->opset >= 14 && lt_attr_int(n, "allowzero", 0) != 0; }

static lt_status eval_reshape(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t sh[LT_MAX_RANK];
    int r;
    bool present;
    LT_TRY(lt_shp_int_list(ev, n, in, reshape_shape_input(n), "shape", sh, LT_MAX_RANK, &r, &present));
    if (!present) return lt_op_error(ev, n, LT_ERR_INVALID, "Reshape needs a shape");
    LT_TRY(reshape_dims(ev->ctx, n, x->rank, x->dims, sh, r, reshape_allowzero(n)));
    return lt_shp_out_reshaped(ev, n, out, 0, x, r, sh);
}

static lt_status infer_reshape(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    int64_t sh[LT_MAX_RANK], xd[LT_MAX_RANK];
    int r, xr;
    const lt_tensor *st;
    bool present;
    /* Static input and constant shape: the interpreter's rules, in full. */
    if (lt_shp_infer_static(n, 0, &xr, xd) && lt_shp_infer_const_opt(n, reshape_shape_input(n), &st)) {
        LT_TRY(lt_shp_list(ic->ctx, n, st, reshape_shape_input(n), "shape", sh, LT_MAX_RANK, &r, &present));
        if (!present) return lt_infer_error(ic, n, "Reshape needs a shape");
        LT_TRY(reshape_dims(ic->ctx, n, xr, xd, sh, r, reshape_allowzero(n)));
        return lt_infer_set_i64(ic, n, 0, dt, r, sh);
    }
    if (!lt_shp_infer_ints(n, reshape_shape_input(n), "shape", sh, LT_MAX_RANK, &r)) {
        const lt_type *st = lt_shp_infer_ranked(n, 1);
        lt_dim d0 = lt_shp_dim(st, 0);
        /* an empty shape makes a scalar whatever its values: the output is then fully known, so
         * the element count is checked here too (the compiled path trusts a static output) */
        if (st && st->rank == 1 && d0.value == 0 && lt_shp_infer_static(n, 0, &xr, xd))
            LT_TRY(reshape_dims(ic->ctx, n, xr, xd, sh, 0, reshape_allowzero(n)));
        if (st && st->rank == 1 && d0.value >= 0 && d0.value <= LT_MAX_RANK)
            return lt_infer_set(ic, n, 0, dt, (int)d0.value, NULL);
        return lt_infer_set(ic, n, 0, dt, -1, NULL);
    }
    bool allowzero = reshape_allowzero(n);
    const lt_type *xt = lt_shp_infer_ranked(n, 0);
    lt_dim d[LT_MAX_RANK];
    int neg = -1;
    for (int i = 0; i < r; i++) {
        if (sh[i] == -1) {
            if (neg >= 0) return lt_infer_error(ic, n, "shape has more than one -1");
            neg = i;
            d[i] = (lt_dim){-1, NULL};
        } else if (sh[i] == 0 && !allowzero) {
            if (xt && i >= xt->rank)
                return lt_infer_error(ic, n, "shape[%d] = 0 copies a dimension the rank-%d input lacks", i, xt->rank);
            d[i] = lt_shp_dim(xt, i);
        } else if (sh[i] < 0) {
            return lt_infer_error(ic, n, "invalid dimension %lld in shape", (long long)sh[i]);
        } else {
            d[i] = (lt_dim){sh[i], NULL};
        }
    }
    /* Some input dim is unknown here, so the -1 (if any) stays unknown. */
    return lt_infer_set(ic, n, 0, dt, r, d);
}

/* ======================================================================== Flatten */
/* Output dims of Flatten: the rules of both hooks (axis in [-rank, rank]). */
static lt_status flatten_dims(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *xd, int64_t *d) {
    int64_t a = lt_attr_int(n, "axis", 1);
    if (a < 0) a += rank;
    if (a < 0 || a > rank)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is out of range for rank %d",
                             (long long)lt_attr_int(n, "axis", 1), rank);
    d[0] = d[1] = 1;
    for (int i = 0; i < rank; i++)
        if (!lt_mul_i64(d[i >= a], xd[i], &d[i >= a]))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "flattened size overflows");
    return LT_OK;
}

static lt_status eval_flatten(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t d[2];
    LT_TRY(flatten_dims(ev->ctx, n, x->rank, x->dims, d));
    return lt_shp_out_reshaped(ev, n, out, 0, x, 2, d);
}

static lt_status infer_flatten(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, 2, NULL);
    /* Unknown dims count as 1 for the check; the product of a part with an unknown dim is unknown. */
    int64_t xd[LT_MAX_RANK], d[2];
    for (int i = 0; i < t->rank; i++) {
        lt_dim v = lt_shp_dim(t, i);
        xd[i] = v.value >= 0 ? v.value : 1;
    }
    LT_TRY(flatten_dims(ic->ctx, n, t->rank, xd, d));
    int64_t a = lt_attr_int(n, "axis", 1);
    if (a < 0) a += t->rank;
    for (int i = 0; i < t->rank; i++)
        if (lt_shp_dim(t, i).value < 0) d[i >= a] = -1;
    return lt_infer_set_i64(ic, n, 0, dt, 2, d);
}

/* ======================================================================== Squeeze, Unsqueeze */
/* Squeeze's axes (input 1 from opset 13, attribute before), given the axes tensor t (NULL: none). */
static lt_status squeeze_axes(lt_ctx *ctx, const lt_node *n, const lt_tensor *t, int64_t *axes, int *na,
                              bool *present) {
    LT_TRY(lt_shp_list(ctx, n, t, 1, "axes", axes, LT_MAX_RANK, na, present));
    if (*present && *na == 0 && n->opset < 13) *present = false; /* Squeeze-1/11: [] means all */
    return LT_OK;
}

/* Which axes Squeeze drops: the rules of both hooks. dims < 0 are unknown (infer): an unknown dim
 * named in axes passes (it must be 1 at run time), and without axes *known turns false. */
static lt_status squeeze_plan(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *xd, int64_t *axes, int na,
                              bool present, bool *drop, bool *known) {
    *known = true;
    for (int i = 0; i < rank; i++) drop[i] = false;
    if (!present) {
        for (int i = 0; i < rank; i++) {
            if (xd[i] < 0) *known = false;
            drop[i] = xd[i] == 1;
        }
        return LT_OK;
    }
    LT_TRY(lt_shp_axes(ctx, n, axes, na, rank));
    for (int i = 0; i < na; i++) {
        if (xd[axes[i]] >= 0 && xd[axes[i]] != 1)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot squeeze axis %lld of size %lld", (long long)axes[i],
                                 (long long)xd[axes[i]]);
        drop[axes[i]] = true;
    }
    return LT_OK;
}

static lt_status eval_squeeze(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x, *at = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &at));
    int64_t axes[LT_MAX_RANK], d[LT_MAX_RANK];
    int na, r = 0;
    bool present, known, drop[LT_MAX_RANK];
    LT_TRY(squeeze_axes(ev->ctx, n, at, axes, &na, &present));
    LT_TRY(squeeze_plan(ev->ctx, n, x->rank, x->dims, axes, na, present, drop, &known));
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) d[r++] = x->dims[i];
    return lt_shp_out_reshaped(ev, n, out, 0, x, r, d);
}

static lt_status infer_squeeze(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    const lt_tensor *at;
    if (!t || !lt_shp_infer_const_opt(n, 1, &at)) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int64_t axes[LT_MAX_RANK], xd[LT_MAX_RANK];
    int na, r = 0;
    bool present, known, drop[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) xd[i] = lt_shp_dim(t, i).value;
    LT_TRY(squeeze_axes(ic->ctx, n, at, axes, &na, &present));
    LT_TRY(squeeze_plan(ic->ctx, n, t->rank, xd, axes, na, present, drop, &known));
    if (!known) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        if (!drop[i]) d[r++] = lt_shp_dim(t, i);
    return lt_infer_set(ic, n, 0, dt, r, d);
}

/* Where Unsqueeze inserts axes (ins[i] true at a new axis of the output): the rules of both hooks. */
static lt_status unsqueeze_plan(lt_ctx *ctx, const lt_node *n, const int64_t *axes, int na, int rank, bool *ins) {
    int r = rank + na;
    if (r > LT_MAX_RANK)
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, LT_MAX_RANK);
    for (int i = 0; i < r; i++) ins[i] = false;
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is out of range for output rank %d",
                                 (long long)axes[i], r);
        if (ins[a]) return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is repeated", (long long)a);
        ins[a] = true;
    }
    return LT_OK;
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
    LT_TRY(unsqueeze_plan(ev->ctx, n, axes, na, x->rank, ins));
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
    bool present, ins[LT_MAX_RANK];
    const lt_tensor *at;
    if (!lt_shp_infer_const_opt(n, 1, &at)) {
        const lt_type *aty = lt_shp_infer_ranked(n, 1);
        lt_dim d0 = lt_shp_dim(aty, 0);
        if (t && aty && aty->rank == 1 && d0.value >= 0 && t->rank + d0.value <= LT_MAX_RANK)
            return lt_infer_set(ic, n, 0, dt, t->rank + (int)d0.value, NULL);
        return lt_infer_set(ic, n, 0, dt, -1, NULL);
    }
    LT_TRY(lt_shp_list(ic->ctx, n, at, 1, "axes", axes, LT_MAX_RANK, &na, &present));
    if (!present) return lt_infer_error(ic, n, "Unsqueeze needs axes");
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    LT_TRY(unsqueeze_plan(ic->ctx, n, axes, na, t->rank, ins));
    lt_dim d[LT_MAX_RANK];
    int r = t->rank + na;
    for (int i = 0, k = 0; i < r; i++) d[i] = ins[i] ? (lt_dim){1, NULL} : lt_shp_dim(t, k++);
    return lt_infer_set(ic, n, 0, dt, r, d);
}

/* ======================================================================== Expand */
/* Output dims of Expand (the bidirectional broadcast of the input dims and the shape): the rules of
 * both hooks. xd < 0 is unknown (infer): such a dim gives -1 unless the shape's entry is 1. */
static lt_status expand_dims(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd, int ns, const int64_t *sh,
                             int *rank, int64_t *d) {
    int r = ns > xr ? ns : xr;
    for (int i = 0; i < r; i++) {
        int xi = i - (r - xr), si = i - (r - ns);
        int64_t a = xi >= 0 ? xd[xi] : 1, b = si >= 0 ? sh[si] : 1;
        if (b < 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "negative dimension %lld in shape", (long long)b);
        if (a == b || b == 1) d[i] = a;
        else if (a == 1) d[i] = b;
        else if (a < 0) d[i] = -1; /* a or b, decided at run time */
        else {
            char s1[256], s2[256];
            return lt_node_error(ctx, n, LT_ERR_INVALID, "input shape %s cannot be expanded to %s",
                                 lt_shape_str(xr, xd, s1, sizeof s1), lt_shape_str(ns, sh, s2, sizeof s2));
        }
    }
    *rank = r;
    for (int i = 0; i < r; i++)
        if (d[i] < 0) return LT_OK;
    int64_t numel;
    return lt_shp_numel(ctx, n, "output", r, d, &numel);
}

static lt_status expand_shape(lt_ctx *ctx, const lt_node *n, const lt_tensor *st, int64_t *sh, int *ns) {
    if (st->rank > 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "shape input must be 1-D");
    bool present;
    return lt_shp_list(ctx, n, st, 1, NULL, sh, LT_MAX_RANK, ns, &present);
}

static lt_status eval_expand(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x, *st;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &st));
    int64_t sh[LT_MAX_RANK], d[LT_MAX_RANK];
    int ns, r;
    LT_TRY(expand_shape(ev->ctx, n, st, sh, &ns));
    LT_TRY(expand_dims(ev->ctx, n, x->rank, x->dims, ns, sh, &r, d));
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
    int64_t sh[LT_MAX_RANK], xd[LT_MAX_RANK], d[LT_MAX_RANK];
    int ns, r;
    const lt_tensor *st;
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (!lt_shp_infer_const_opt(n, 1, &st) || !st) {
        const lt_type *sty = lt_shp_infer_ranked(n, 1);
        lt_dim d0 = lt_shp_dim(sty, 0);
        if (sty && sty->rank == 1 && d0.value >= 0 && d0.value <= LT_MAX_RANK)
            return lt_infer_set(ic, n, 0, dt, d0.value > t->rank ? (int)d0.value : t->rank, NULL);
        return lt_infer_set(ic, n, 0, dt, -1, NULL);
    }
    LT_TRY(expand_shape(ic->ctx, n, st, sh, &ns));
    for (int i = 0; i < t->rank; i++) xd[i] = lt_shp_dim(t, i).value;
    LT_TRY(expand_dims(ic->ctx, n, t->rank, xd, ns, sh, &r, d));
    /* Keep symbolic names where the input's dim passes through. */
    lt_dim od[LT_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int xi = i - (r - t->rank);
        lt_dim a = xi >= 0 ? lt_shp_dim(t, xi) : (lt_dim){1, NULL};
        od[i] = d[i] == a.value ? a : (lt_dim){d[i], NULL};
    }
    return lt_infer_set(ic, n, 0, dt, r, od);
}

/* ======================================================================== Concat */
static int64_t concat_axis_attr(const lt_node *n) { return lt_attr_int(n, "axis", n->opset < 4 ? 1 : 0); }

/* Output dims of Concat over k inputs (rank[i], dims[i], dtype[i]; dims < 0 unknown, dtype
 * UNDEFINED unknown): the rules of both hooks. An unknown dim on the axis makes the sum unknown;
 * off the axis, the first known size wins. */
static lt_status concat_dims(lt_ctx *ctx, const lt_node *n, int k, const int *rank, int64_t (*dims)[LT_MAX_RANK],
                             const lt_dtype *dtype, int *axis, int64_t *d) {
    if (k < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "Concat needs at least one input");
    if (n->opset >= 4 && !lt_node_attr(n, "axis"))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "missing required attribute 'axis'");
    int r = rank[0];
    if (r == 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot concatenate scalars");
    LT_TRY(lt_shp_axis(ctx, n, concat_axis_attr(n), r, axis));
    int a = *axis;
    for (int i = 0; i < r; i++) d[i] = dims[0][i];
    d[a] = 0;
    for (int j = 0; j < k; j++) {
        if (dtype[j] != LT_UNDEFINED && dtype[0] != LT_UNDEFINED && dtype[j] != dtype[0])
            return lt_node_error(ctx, n, LT_ERR_INVALID, "input %d is %s, input 0 is %s", j, lt_dtype_name(dtype[j]),
                                 lt_dtype_name(dtype[0]));
        bool ok = rank[j] == r;
        for (int i = 0; ok && i < r; i++) {
            int64_t v = dims[j][i];
            if (i == a) continue;
            if (d[i] < 0) d[i] = v;
            else ok = v < 0 || v == d[i];
        }
        if (!ok) {
            char s1[256], s2[256];
            return lt_node_error(ctx, n, LT_ERR_INVALID, "input %d of shape %s does not match input 0 of shape %s", j,
                                 lt_shape_str(rank[j], dims[j], s1, sizeof s1), lt_shape_str(r, dims[0], s2, sizeof s2));
        }
        if (d[a] < 0) continue;
        if (dims[j][a] < 0) d[a] = -1;
        else if (!lt_add_i64(d[a], dims[j][a], &d[a]))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "concatenated size overflows");
    }
    for (int i = 0; i < r; i++)
        if (d[i] < 0) return LT_OK;
    int64_t numel;
    return lt_shp_numel(ctx, n, "output", r, d, &numel);
}

static lt_status eval_concat(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    int k = n->n_in, *rank = NULL, axis;
    int64_t(*dims)[LT_MAX_RANK] = NULL, d[LT_MAX_RANK];
    lt_dtype *dtype = NULL;
    const lt_tensor *x0 = NULL;
    lt_status s = LT_OK;
    if (k > 0) {
        rank = lt_alloc(ev->ctx, (size_t)k * sizeof *rank, "concat shapes");
        dims = lt_alloc(ev->ctx, (size_t)k * sizeof *dims, "concat shapes");
        dtype = lt_alloc(ev->ctx, (size_t)k * sizeof *dtype, "concat shapes");
        if (!rank || !dims || !dtype) s = LT_ERR_NOMEM;
    }
    for (int j = 0; s == LT_OK && j < k; j++) {
        const lt_tensor *x;
        s = lt_in_tensor(ev, n, in, j, &x);
        if (s) break;
        if (j == 0) x0 = x;
        rank[j] = x->rank;
        dtype[j] = x->dtype;
        for (int i = 0; i < x->rank; i++) dims[j][i] = x->dims[i];
    }
    if (s == LT_OK) s = concat_dims(ev->ctx, n, k, rank, dims, dtype, &axis, d);
    lt_mem_free(rank);
    lt_mem_free(dims);
    lt_mem_free(dtype);
    LT_TRY(s);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x0->dtype, x0->rank, d, &y));
    if (y->numel == 0) return LT_OK;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= d[i];
    for (int i = axis + 1; i < x0->rank; i++) inner *= d[i];
    int64_t off = 0;
    for (int j = 0; j < k; j++) {
        const lt_tensor *x;
        LT_TRY(lt_in_tensor(ev, n, in, j, &x));
        int64_t run = x->dims[axis] * inner;
        int64_t dims2[2] = {outer, run}, dstr[2] = {d[axis] * inner, 1}, sstr[2] = {run, 1};
        LT_TRY(lt_shp_strided_copy(ev->ctx, y, off * inner, dstr, x, 0, sstr, 2, dims2));
        off += x->dims[axis];
    }
    return LT_OK;
}

static lt_status infer_concat(lt_infer *ic, lt_node *n) {
    int k = n->n_in, axis;
    lt_dtype dt = LT_UNDEFINED;
    for (int j = 0; j < k && dt == LT_UNDEFINED; j++) dt = lt_shp_infer_dtype(n, j);
    for (int j = 0; j < k; j++)
        if (!lt_shp_infer_ranked(n, j)) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (k < 1) return lt_infer_error(ic, n, "Concat needs at least one input");
    int *rank = lt_arena_alloc(ic->arena, (size_t)k * sizeof *rank);
    int64_t(*dims)[LT_MAX_RANK] = lt_arena_alloc(ic->arena, (size_t)k * sizeof *dims), d[LT_MAX_RANK];
    lt_dtype *dtype = lt_arena_alloc(ic->arena, (size_t)k * sizeof *dtype);
    if (!rank || !dims || !dtype) return lt_error(ic->ctx, LT_ERR_NOMEM, "out of memory (types)");
    for (int j = 0; j < k; j++) {
        const lt_type *t = lt_shp_infer_ranked(n, j);
        rank[j] = t->rank;
        dtype[j] = lt_shp_infer_dtype(n, j);
        for (int i = 0; i < t->rank; i++) dims[j][i] = lt_shp_dim(t, i).value;
    }
    LT_TRY(concat_dims(ic->ctx, n, k, rank, dims, dtype, &axis, d));
    const lt_type *t0 = lt_shp_infer_ranked(n, 0);
    lt_dim od[LT_MAX_RANK];
    for (int i = 0; i < t0->rank; i++) {
        lt_dim v = lt_shp_dim(t0, i);
        od[i] = i != axis && d[i] == v.value ? v : (lt_dim){d[i], NULL};
    }
    return lt_infer_set(ic, n, 0, dt, t0->rank, od);
}

/* ======================================================================== Split */
/* Split sizes: from the split tensor st (input 1; NULL: omitted) or attribute, else equal parts (last
 * one smaller from opset 18): the rules of both hooks. dim < 0 is unknown (infer): the sizes of an
 * equal split are then -1 and their sum is not checked. */
static lt_status split_sizes(lt_ctx *ctx, const lt_node *n, const lt_tensor *st, int64_t dim, int64_t *sz) {
    int nout = n->n_out, cnt;
    bool present;
    if (nout < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "node has no outputs");
    const lt_attr *sa = st ? NULL : lt_node_attr(n, "split");
    int64_t given = st ? st->numel : sa && sa->type == LT_AT_INTS ? sa->n : nout;
    if (given != nout)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "split has %lld entries for %d outputs", (long long)given, nout);
    LT_TRY(lt_shp_list(ctx, n, st, 1, "split", sz, nout, &cnt, &present));
    const lt_attr *no = n->opset >= 18 ? lt_node_attr(n, "num_outputs") : NULL;
    if (present) {
        if (no) return lt_node_error(ctx, n, LT_ERR_INVALID, "split and num_outputs are both given");
        if (cnt != nout)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "split has %d entries for %d outputs", cnt, nout);
        int64_t sum = 0;
        for (int i = 0; i < nout; i++) {
            if (sz[i] < 0 || !lt_add_i64(sum, sz[i], &sum))
                return lt_node_error(ctx, n, LT_ERR_INVALID, "invalid split size %lld", (long long)sz[i]);
        }
        if (dim >= 0 && sum != dim)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "split sizes sum to %lld, the axis has %lld", (long long)sum,
                                 (long long)dim);
        return LT_OK;
    }
    if (no && no->i != nout)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "num_outputs %lld but the node has %d outputs", (long long)no->i,
                             nout);
    if (dim < 0) {
        for (int i = 0; i < nout; i++) sz[i] = -1;
        return LT_OK;
    }
    int64_t chunk = dim / nout + (dim % nout != 0);
    if (dim % nout != 0 && !no && n->opset < 18)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis of size %lld cannot be split evenly into %d parts",
                             (long long)dim, nout);
    int64_t last = dim - chunk * (nout - 1);
    if (last < 0)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis of size %lld cannot be split into %d parts of %lld",
                             (long long)dim, nout, (long long)chunk);
    for (int i = 0; i < nout; i++) sz[i] = i == nout - 1 ? last : chunk;
    return LT_OK;
}

static lt_status split_axis(lt_ctx *ctx, const lt_node *n, int rank, int *axis) {
    if (rank == 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot split a scalar");
    return lt_shp_axis(ctx, n, lt_attr_int(n, "axis", 0), rank, axis);
}

static lt_status eval_split(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x, *st;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &st));
    int axis;
    LT_TRY(split_axis(ev->ctx, n, x->rank, &axis));
    int64_t *sz = lt_alloc(ev->ctx, (size_t)n->n_out * sizeof *sz, "split sizes");
    if (!sz) return LT_ERR_NOMEM;
    lt_status s = split_sizes(ev->ctx, n, st, x->dims[axis], sz);
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
    const lt_tensor *st;
    int nout = n->n_out, a;
    if (!t) {
        for (int k = 0; k < nout; k++) LT_TRY(lt_infer_set(ic, n, k, dt, -1, NULL));
        return LT_OK;
    }
    LT_TRY(split_axis(ic->ctx, n, t->rank, &a));
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) d[i] = lt_shp_dim(t, i);
    int64_t *sz = nout > 0 ? lt_arena_alloc(ic->arena, (size_t)nout * sizeof *sz) : NULL;
    if (nout > 0 && !sz) return lt_error(ic->ctx, LT_ERR_NOMEM, "out of memory (types)");
    bool known = lt_shp_infer_const_opt(n, 1, &st);
    if (known) LT_TRY(split_sizes(ic->ctx, n, st, d[a].value, sz));
    for (int k = 0; k < nout; k++) {
        d[a] = (lt_dim){known ? sz[k] : -1, NULL};
        LT_TRY(lt_infer_set(ic, n, k, dt, t->rank, d));
    }
    return LT_OK;
}

/* ======================================================================== Transpose */
/* The permutation (default: reversed axes): the rule of both hooks. */
static lt_status transpose_perm(lt_ctx *ctx, const lt_node *n, int rank, int *perm) {
    const int64_t *p;
    int np = lt_attr_ints(n, "perm", &p);
    if (!p) {
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return LT_OK;
    }
    bool ok = np == rank, seen[LT_MAX_RANK] = {false};
    for (int i = 0; ok && i < rank; i++) {
        int64_t a = p[i] < 0 ? p[i] + rank : p[i]; /* negative entries accepted, like numpy */
        ok = a >= 0 && a < rank && !seen[a];
        if (ok) seen[a] = true, perm[i] = (int)a;
    }
    if (!ok) return lt_node_error(ctx, n, LT_ERR_INVALID, "perm is not a permutation of %d axes", rank);
    return LT_OK;
}

static lt_status eval_transpose(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int perm[LT_MAX_RANK];
    LT_TRY(transpose_perm(ev->ctx, n, x->rank, perm));
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
    LT_TRY(transpose_perm(ic->ctx, n, t->rank, perm));
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) d[i] = lt_shp_dim(t, perm[i]);
    return lt_infer_set(ic, n, 0, dt, t->rank, d);
}

/* ======================================================================== Tile */
/* Repeats per axis from t1 (repeats; Tile-1: tiles) and t2 (Tile-1: axis): the rules of both hooks.
 * With dims xd (< 0 unknown) the tiled dims go to d (-1 where unknown), overflow-checked. */
static lt_status tile_dims(lt_ctx *ctx, const lt_node *n, const lt_tensor *t1, const lt_tensor *t2, int rank,
                           const int64_t *xd, int64_t *rep, int64_t *d) {
    if (!t1 || (n->opset < 6 && !t2))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "required input %d is missing", t1 ? 2 : 1);
    if (n->opset < 6) { /* Tile-1: tiles (count) and axis inputs */
        int64_t tiles, axis;
        int a;
        LT_TRY(lt_shp_scalar_type(ctx, n, "tiles", t1->rank, t1->dims, t1->dtype));
        LT_TRY(lt_shp_scalar_type(ctx, n, "axis", t2->rank, t2->dims, t2->dtype));
        tiles = lt_load_i64(t1->data, t1->dtype, 0);
        axis = lt_load_i64(t2->data, t2->dtype, 0);
        LT_TRY(lt_shp_axis(ctx, n, axis, rank, &a));
        for (int i = 0; i < rank; i++) rep[i] = i == a ? tiles : 1;
    } else {
        int nr;
        bool present;
        if (t1->rank != 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "repeats must be 1-D");
        LT_TRY(lt_shp_list(ctx, n, t1, 1, NULL, rep, LT_MAX_RANK, &nr, &present));
        if (nr != rank)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "repeats has %d entries for an input of rank %d", nr, rank);
    }
    bool known = true;
    for (int i = 0; i < rank; i++) {
        if (rep[i] < 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "negative repeat %lld", (long long)rep[i]);
        if (rep[i] == 0) d[i] = 0;
        else if (xd[i] < 0) d[i] = -1, known = false;
        else if (!lt_mul_i64(xd[i], rep[i], &d[i]))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "tiled dimension overflows");
    }
    int64_t numel;
    return known ? lt_shp_numel(ctx, n, "output", rank, d, &numel) : LT_OK;
}

static lt_status eval_tile(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x, *t1, *t2 = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &t1));
    if (n->opset < 6) LT_TRY(lt_in_tensor(ev, n, in, 2, &t2));
    int r = x->rank;
    int64_t rep[LT_MAX_RANK], d[LT_MAX_RANK];
    LT_TRY(tile_dims(ev->ctx, n, t1, t2, r, x->dims, rep, d));
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
    const lt_tensor *t1, *t2 = NULL;
    int64_t rep[LT_MAX_RANK], xd[LT_MAX_RANK], d[LT_MAX_RANK];
    bool known = lt_shp_infer_const_opt(n, 1, &t1) && (n->opset >= 6 || lt_shp_infer_const_opt(n, 2, &t2));
    if (!known) return lt_infer_set(ic, n, 0, dt, t->rank, NULL);
    for (int i = 0; i < t->rank; i++) xd[i] = lt_shp_dim(t, i).value;
    LT_TRY(tile_dims(ic->ctx, n, t1, t2, t->rank, xd, rep, d));
    lt_dim od[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) od[i] = rep[i] == 1 ? lt_shp_dim(t, i) : (lt_dim){d[i], NULL};
    return lt_infer_set(ic, n, 0, dt, t->rank, od);
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
/* Rank >= 2 and k (rank kr, dims kd, dtype kdt; kr < 0: omitted) one integer: the rules of both hooks. */
static lt_status trilu_check(lt_ctx *ctx, const lt_node *n, int rank, int kr, const int64_t *kd, lt_dtype kdt) {
    if (rank < 2) return lt_node_error(ctx, n, LT_ERR_INVALID, "Trilu needs rank >= 2, got %d", rank);
    return kr >= 0 ? lt_shp_scalar_type(ctx, n, "k", kr, kd, kdt) : LT_OK;
}

static lt_status infer_trilu(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    int kr = -1;
    int64_t kd[LT_MAX_RANK];
    bool k_known = !(n->n_in > 1 && n->in[1]) || lt_shp_infer_static(n, 1, &kr, kd);
    lt_dtype kdt = lt_shp_infer_dtype(n, 1);
    if (t && k_known && (kr < 0 || kdt != LT_UNDEFINED)) LT_TRY(trilu_check(ic->ctx, n, t->rank, kr, kd, kdt));
    else if (t && t->rank < 2) LT_TRY(trilu_check(ic->ctx, n, t->rank, -1, NULL, LT_UNDEFINED));
    return lt_infer_copy(ic, n, 0, 0);
}

static lt_status eval_trilu(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    NEED_OUT(ev, n);
    const lt_tensor *x, *kt;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &kt));
    LT_TRY(trilu_check(ev->ctx, n, x->rank, kt ? kt->rank : -1, kt ? kt->dims : NULL, kt ? kt->dtype : LT_UNDEFINED));
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
    {LT_OP_Trilu, infer_trilu, eval_trilu},
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
