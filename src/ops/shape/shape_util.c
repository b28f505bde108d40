/* shape_util.c — helpers shared by the shape family (declared in shape_impl.h): dtype-generic
 * element copies (strings duplicated), the strided copy most data-movement ops reduce to, integer
 * lists from inputs or attributes, index normalization, and small helpers for the infer hooks. */
#include "shape_impl.h"

#include <string.h>

static lt_status copy_strings(lt_ctx *ctx, lt_tensor *dst, int64_t di, const lt_tensor *src, int64_t si,
                              int64_t n) {
    char *const *s = src->data;
    for (int64_t k = 0; k < n; k++) {
        const char *v = s[si + k];
        LT_TRY(lt_tensor_set_string(ctx, dst, di + k, v, strlen(v)));
    }
    return LT_OK;
}

lt_status lt_shp_copy(lt_ctx *ctx, lt_tensor *dst, int64_t di, const lt_tensor *src, int64_t si, int64_t n) {
    if (n <= 0) return LT_OK;
    if (src->dtype == LT_STRING) return copy_strings(ctx, dst, di, src, si, n);
    size_t es = (size_t)lt_dtype_size(src->dtype);
    memmove((char *)dst->data + (size_t)di * es, (const char *)src->data + (size_t)si * es, (size_t)n * es);
    return LT_OK;
}

lt_status lt_shp_fill(lt_ctx *ctx, lt_tensor *dst, int64_t di, int64_t n, const lt_tensor *src, int64_t si) {
    if (n <= 0) return LT_OK;
    if (src->dtype == LT_STRING) {
        const char *v = ((char *const *)src->data)[si];
        size_t len = strlen(v);
        for (int64_t k = 0; k < n; k++) LT_TRY(lt_tensor_set_string(ctx, dst, di + k, v, len));
        return LT_OK;
    }
    size_t es = (size_t)lt_dtype_size(src->dtype);
    const char *v = (const char *)src->data + (size_t)si * es;
    bool zero = true;
    for (size_t b = 0; b < es; b++)
        if (v[b]) zero = false;
    char *d = (char *)dst->data + (size_t)di * es;
    if (zero) {
        memset(d, 0, (size_t)n * es);
        return LT_OK;
    }
    for (int64_t k = 0; k < n; k++) memcpy(d + (size_t)k * es, v, es);
    return LT_OK;
}

void lt_shp_strides(int rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* Copy one row of n elements with element strides ds / ss. */
static lt_status copy_row(lt_ctx *ctx, lt_tensor *dst, int64_t d, int64_t ds, const lt_tensor *src, int64_t s,
                          int64_t ss, int64_t n) {
    if (ds == 1 && ss == 1) return lt_shp_copy(ctx, dst, d, src, s, n);
    if (src->dtype == LT_STRING) {
        char *const *sv = src->data;
        for (int64_t k = 0; k < n; k++) {
            const char *v = sv[s + k * ss];
            LT_TRY(lt_tensor_set_string(ctx, dst, d + k * ds, v, strlen(v)));
        }
        return LT_OK;
    }
    switch (lt_dtype_size(src->dtype)) {
#define ROW(T)                                                                                     \
    {                                                                                              \
        T *dp = (T *)dst->data + d;                                                                \
        const T *sp = (const T *)src->data + s;                                                    \
        for (int64_t k = 0; k < n; k++) dp[k * ds] = sp[k * ss];                                   \
        return LT_OK;                                                                              \
    }
    case 1: ROW(uint8_t)
    case 2: ROW(uint16_t)
    case 4: ROW(uint32_t)
    case 8: ROW(uint64_t)
#undef ROW
    default: {
        size_t es = (size_t)lt_dtype_size(src->dtype);
        for (int64_t k = 0; k < n; k++)
            memcpy((char *)dst->data + (size_t)(d + k * ds) * es, (const char *)src->data + (size_t)(s + k * ss) * es,
                   es);
        return LT_OK;
    }
    }
}

lt_status lt_shp_strided_copy(lt_ctx *ctx, lt_tensor *dst, int64_t doff, const int64_t *dstr, const lt_tensor *src,
                              int64_t soff, const int64_t *sstr, int rank, const int64_t *dims) {
    for (int i = 0; i < rank; i++)
        if (dims[i] <= 0) return LT_OK;
    if (rank == 0) return copy_row(ctx, dst, doff, 1, src, soff, 1, 1);
    if (rank > LT_SHP_MAX_VIEW) return lt_error(ctx, LT_ERR_INTERNAL, "strided copy of rank %d", rank);
    int64_t idx[LT_SHP_MAX_VIEW] = {0};
    int outer = rank - 1;
    int64_t inner = dims[outer], di = dstr[outer], si = sstr[outer];
    for (;;) {
        int64_t d = doff, s = soff;
        for (int k = 0; k < outer; k++) {
            d += idx[k] * dstr[k];
            s += idx[k] * sstr[k];
        }
        LT_TRY(copy_row(ctx, dst, d, di, src, s, si, inner));
        if (!lt_index_next(outer, dims, idx)) break;
    }
    return LT_OK;
}

lt_status lt_shp_out_reshaped(lt_eval *ev, const lt_node *n, lt_datum **out, int i, const lt_tensor *x, int rank,
                              const int64_t *dims) {
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, i, x->dtype, rank, dims, &y));
    if (y->numel != x->numel)
        return lt_op_error(ev, n, LT_ERR_INTERNAL, "reshape from %lld to %lld elements", (long long)x->numel,
                           (long long)y->numel);
    return lt_shp_copy(ev->ctx, y, 0, x, 0, x->numel);
}

lt_status lt_shp_list(lt_ctx *ctx, const lt_node *n, const lt_tensor *t, int idx, const char *attr, int64_t *buf,
                      int max, int *count, bool *present) {
    *count = 0;
    *present = false;
    if (idx >= 0 && t) {
        if (t->rank > 1)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "input %d must be a 1-D integer list, got rank %d", idx,
                                 t->rank);
        if (!lt_dtype_is_int(t->dtype))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "expected an integer tensor, got %s",
                                 lt_dtype_name(t->dtype));
        if (t->numel > max)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "integer list of %lld entries exceeds %d",
                                 (long long)t->numel, max);
        for (int64_t i = 0; i < t->numel; i++) buf[i] = lt_load_i64(t->data, t->dtype, i);
        *count = (int)t->numel;
        *present = true;
        return LT_OK;
    }
    if (attr) {
        const lt_attr *a = lt_node_attr(n, attr);
        if (a && a->type == LT_AT_INTS) {
            if (a->n > max)
                return lt_node_error(ctx, n, LT_ERR_INVALID, "attribute '%s' has %d entries (at most %d)", attr, a->n,
                                     max);
            if (a->n) memcpy(buf, a->ints, (size_t)a->n * sizeof *buf);
            *count = a->n;
            *present = true;
        } else if (a && a->type == LT_AT_INT) {
            if (max < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "attribute '%s' has too many entries", attr);
            buf[0] = a->i;
            *count = 1;
            *present = true;
        }
    }
    return LT_OK;
}

lt_status lt_shp_int_list(lt_eval *ev, const lt_node *n, lt_datum **in, int idx, const char *attr, int64_t *buf,
                          int max, int *count, bool *present) {
    const lt_tensor *t = NULL;
    if (idx >= 0) LT_TRY(lt_in_tensor_opt(ev, n, in, idx, &t));
    return lt_shp_list(ev->ctx, n, t, idx, attr, buf, max, count, present);
}

lt_status lt_shp_scalar_type(lt_ctx *ctx, const lt_node *n, const char *what, int rank, const int64_t *dims,
                             lt_dtype dt) {
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        if (!lt_mul_i64(numel, dims[i], &numel)) numel = INT64_MAX;
    if (numel != 1)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must hold exactly one value, got %lld", what,
                             (long long)numel);
    lt_dclass c = lt_dtype_get(dt)->cls;
    if (c != LT_DC_SINT && c != LT_DC_UINT)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be an integer, got %s", what, lt_dtype_name(dt));
    return LT_OK;
}

lt_status lt_shp_scalar_int(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what, int64_t *v) {
    LT_TRY(lt_shp_scalar_type(ev->ctx, n, what, t->rank, t->dims, t->dtype));
    if (t->dtype == LT_UINT64) {
        uint64_t u = lt_load_u64(t->data, t->dtype, 0);
        *v = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    } else {
        *v = lt_load_i64(t->data, t->dtype, 0);
    }
    return LT_OK;
}

lt_status lt_shp_numel(lt_ctx *ctx, const lt_node *n, const char *what, int rank, const int64_t *dims,
                       int64_t *numel) {
    int64_t p = 1;
    for (int i = 0; i < rank; i++)
        if (!lt_mul_i64(p, dims[i], &p)) {
            char b[256];
            return lt_node_error(ctx, n, LT_ERR_INVALID, "%s of shape %s has more elements than fit in 64 bits",
                                 what, lt_shape_str(rank, dims, b, sizeof b));
        }
    *numel = p;
    return LT_OK;
}

lt_status lt_shp_axis(lt_ctx *ctx, const lt_node *n, int64_t axis, int rank, int *out) {
    return lt_node_axis(ctx, n, axis, rank, out);
}

lt_status lt_shp_axes(lt_ctx *ctx, const lt_node *n, int64_t *axes, int count, int rank) {
    for (int i = 0; i < count; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axes[i],
                                 rank);
        for (int j = 0; j < i; j++)
            if (axes[j] == a) return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is repeated", (long long)a);
        axes[i] = a;
    }
    return LT_OK;
}

lt_status lt_shp_norm_axes(lt_eval *ev, const lt_node *n, int64_t *axes, int count, int rank) {
    return lt_shp_axes(ev->ctx, n, axes, count, rank);
}

lt_status lt_shp_index(lt_eval *ev, const lt_node *n, int64_t v, int64_t dim, const char *where, int64_t *out) {
    if (v < -dim || v >= dim)
        return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [-%lld, %lld) at %s", (long long)v,
                           (long long)dim, (long long)dim, where);
    *out = v < 0 ? v + dim : v;
    return LT_OK;
}

/* ---- infer helpers ---- */
bool lt_shp_infer_ints(const lt_node *n, int i, const char *attr, int64_t *buf, int max, int *count) {
    *count = 0;
    if (i >= 0 && i < n->n_in && n->in[i]) {
        const lt_tensor *t = lt_infer_const(n, i);
        if (!t || !lt_dtype_is_int(t->dtype) || t->rank > 1 || t->numel > max) return false;
        for (int64_t k = 0; k < t->numel; k++) buf[k] = lt_load_i64(t->data, t->dtype, k);
        *count = (int)t->numel;
        return true;
    }
    if (!attr) return false;
    const lt_attr *a = lt_node_attr(n, attr);
    if (!a || a->type != LT_AT_INTS || a->n > max) return false;
    if (a->n) memcpy(buf, a->ints, (size_t)a->n * sizeof *buf);
    *count = a->n;
    return true;
}

const lt_type *lt_shp_infer_ranked(const lt_node *n, int i) {
    const lt_type *t = lt_infer_in(n, i);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank > LT_MAX_RANK) return NULL;
    return t;
}

lt_dim lt_shp_dim(const lt_type *t, int d) {
    if (!t || !t->dims || d < 0 || d >= t->rank) return (lt_dim){-1, NULL};
    return t->dims[d];
}

lt_dtype lt_shp_infer_dtype(const lt_node *n, int i) {
    const lt_type *t = lt_infer_in(n, i);
    if (!t || (t->kind != LT_TK_TENSOR && t->kind != LT_TK_SPARSE_TENSOR)) return LT_UNDEFINED;
    return t->dtype;
}

bool lt_shp_infer_static(const lt_node *n, int i, int *rank, int64_t *dims) {
    const lt_type *t = lt_shp_infer_ranked(n, i);
    if (!t || (t->rank > 0 && !t->dims)) return false;
    for (int k = 0; k < t->rank; k++) {
        if (t->dims[k].value < 0) return false;
        dims[k] = t->dims[k].value;
    }
    *rank = t->rank;
    return true;
}

bool lt_shp_infer_const_opt(const lt_node *n, int i, const lt_tensor **t) {
    *t = NULL;
    if (i < 0 || i >= n->n_in || !n->in[i]) return true;
    *t = lt_infer_const(n, i);
    return *t != NULL;
}
