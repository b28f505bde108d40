/* tensor.c — creation, copying and release of run-time tensors and datums (tensor.h). */
#include "tensor.h"

#include <stdio.h>
#include <string.h>

static lt_status check_shape(lt_ctx *ctx, lt_dtype dt, int rank, const int64_t *dims, int64_t *numel) {
    if (!lt_dtype_valid((int)dt)) return lt_error(ctx, LT_ERR_INVALID, "invalid tensor data type %d", (int)dt);
    if (rank < 0 || rank > LT_MAX_RANK)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "tensor rank %d exceeds lathe's limit of %d", rank, LT_MAX_RANK);
    int64_t n, bytes;
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return lt_error(ctx, LT_ERR_INVALID, "negative dimension %lld in a tensor shape", (long long)dims[i]);
    if (!lt_prod_i64(dims, rank, &n) || !lt_mul_i64(n, lt_dtype_size(dt), &bytes) || bytes > LT_TENSOR_MAX_BYTES) {
        char b[256];
        return lt_error(ctx, LT_ERR_NOMEM, "tensor of shape %s (%s) is too large", lt_shape_str(rank, dims, b, sizeof b),
                        lt_dtype_name(dt));
    }
    *numel = n;
    return LT_OK;
}

lt_status lt_tensor_new(lt_ctx *ctx, lt_dtype dt, int rank, const int64_t *dims, lt_tensor **out) {
    int64_t numel;
    LT_TRY(check_shape(ctx, dt, rank, dims, &numel));
    lt_tensor *t = lt_calloc(ctx, 1, sizeof *t, "tensor");
    if (!t) return LT_ERR_NOMEM;
    t->data = lt_calloc(ctx, (size_t)(numel ? numel : 1), (size_t)lt_dtype_size(dt), "tensor data");
    if (!t->data) { lt_mem_free(t); return LT_ERR_NOMEM; }
    t->refs = 1;
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    t->numel = numel;
    if (dt == LT_STRING) {
        char **s = t->data;
        for (int64_t i = 0; i < numel; i++) {
            s[i] = lt_mem_calloc(1, 1);
            if (!s[i]) { lt_tensor_release(t); return lt_error(ctx, LT_ERR_NOMEM, "out of memory (string tensor)"); }
        }
    }
    *out = t;
    return LT_OK;
}

lt_status lt_tensor_scalar_f64(lt_ctx *ctx, lt_dtype dt, double v, lt_tensor **out) {
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, dt, 0, NULL, &t));
    lt_store_f64(t->data, dt, 0, v);
    *out = t;
    return LT_OK;
}
lt_status lt_tensor_scalar_i64(lt_ctx *ctx, lt_dtype dt, int64_t v, lt_tensor **out) {
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, dt, 0, NULL, &t));
    lt_store_i64(t->data, dt, 0, v);
    *out = t;
    return LT_OK;
}

lt_status lt_tensor_borrow(lt_ctx *ctx, lt_dtype dt, int rank, const int64_t *dims, void *data, lt_tensor **out) {
    int64_t numel;
    LT_TRY(check_shape(ctx, dt, rank, dims, &numel));
    lt_tensor *t = lt_calloc(ctx, 1, sizeof *t, "tensor");
    if (!t) return LT_ERR_NOMEM;
    t->refs = 1;
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    t->numel = numel;
    t->data = data;
    t->borrowed = true;
    *out = t;
    return LT_OK;
}

lt_status lt_tensor_reshape_copy(lt_ctx *ctx, const lt_tensor *t, int rank, const int64_t *dims, lt_tensor **out) {
    lt_tensor *c;
    LT_TRY(lt_tensor_new(ctx, t->dtype, rank, dims, &c));
    if (c->numel != t->numel) {
        lt_tensor_release(c);
        return lt_error(ctx, LT_ERR_INTERNAL, "reshape copy: element count %lld != %lld", (long long)c->numel,
                        (long long)t->numel);
    }
    if (t->dtype == LT_STRING) {
        for (int64_t i = 0; i < t->numel; i++) {
            const char *s = ((char *const *)t->data)[i];
            lt_status st = lt_tensor_set_string(ctx, c, i, s, strlen(s));
            if (st) { lt_tensor_release(c); return st; }
        }
    } else {
        memcpy(c->data, t->data, (size_t)lt_tensor_nbytes(t));
    }
    *out = c;
    return LT_OK;
}

lt_status lt_tensor_copy(lt_ctx *ctx, const lt_tensor *t, lt_tensor **out) {
    return lt_tensor_reshape_copy(ctx, t, t->rank, t->dims, out);
}

lt_status lt_tensor_set_string(lt_ctx *ctx, lt_tensor *t, int64_t i, const char *s, size_t len) {
    char *d = lt_alloc(ctx, len + 1, "string element");
    if (!d) return LT_ERR_NOMEM;
    if (len) memcpy(d, s, len);
    d[len] = 0;
    char **slot = &((char **)t->data)[i];
    lt_mem_free(*slot);
    *slot = d;
    return LT_OK;
}

lt_tensor *lt_tensor_retain(lt_tensor *t) {
    if (t) t->refs++;
    return t;
}

void lt_tensor_release(lt_tensor *t) {
    if (!t || --t->refs > 0) return;
    if (!t->borrowed) {
        if (t->dtype == LT_STRING) {
            char **s = t->data;
            for (int64_t i = 0; i < t->numel; i++) lt_mem_free(s[i]);
        }
        lt_mem_free(t->data);
    }
    lt_mem_free(t);
}

int64_t lt_tensor_nbytes(const lt_tensor *t) { return t->numel * lt_dtype_size(t->dtype); }

void lt_tensor_strides(const lt_tensor *t, int64_t *strides) {
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= t->dims[i];
    }
}

const char *lt_shape_str(int rank, const int64_t *dims, char *buf, size_t n) {
    size_t off = 0;
    off += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (off < n) snprintf(buf + off, n - off, "]");
    return buf;
}

const char *lt_tensor_describe(const lt_tensor *t, char *buf, size_t n) {
    char s[256];
    snprintf(buf, n, "%s%s", lt_dtype_name(t->dtype), lt_shape_str(t->rank, t->dims, s, sizeof s));
    return buf;
}

/* ---- datums ---- */
static lt_datum *datum_new(lt_ctx *ctx, lt_datum_kind k) {
    lt_datum *d = lt_calloc(ctx, 1, sizeof *d, "value");
    if (d) { d->refs = 1; d->kind = k; }
    return d;
}

lt_status lt_datum_tensor(lt_ctx *ctx, lt_tensor *t, lt_datum **out) {
    lt_datum *d = datum_new(ctx, LT_DK_TENSOR);
    if (!d) { lt_tensor_release(t); return LT_ERR_NOMEM; }
    d->tensor = t;
    d->elem_dtype = t->dtype;
    *out = d;
    return LT_OK;
}
lt_status lt_datum_sequence(lt_ctx *ctx, lt_dtype elem_dtype, lt_datum **out) {
    lt_datum *d = datum_new(ctx, LT_DK_SEQUENCE);
    if (!d) return LT_ERR_NOMEM;
    d->elem_dtype = elem_dtype;
    *out = d;
    return LT_OK;
}
lt_status lt_datum_seq_push(lt_ctx *ctx, lt_datum *seq, lt_datum *item) {
    if (seq->n == seq->cap) {
        int cap = seq->cap ? seq->cap * 2 : 4;
        lt_datum **items = lt_mem_realloc(seq->items, (size_t)cap * sizeof *items);
        if (!items) { lt_datum_release(item); return lt_error(ctx, LT_ERR_NOMEM, "out of memory (sequence)"); }
        seq->items = items;
        seq->cap = cap;
    }
    seq->items[seq->n++] = item;
    if (item->kind == LT_DK_TENSOR && seq->elem_dtype == LT_UNDEFINED) seq->elem_dtype = item->tensor->dtype;
    if (item->kind == LT_DK_SEQUENCE) seq->elem_is_sequence = true;
    return LT_OK;
}
lt_status lt_datum_optional(lt_ctx *ctx, lt_datum *value, lt_dtype elem_dtype, lt_datum **out) {
    lt_datum *d = datum_new(ctx, LT_DK_OPTIONAL);
    if (!d) { lt_datum_release(value); return LT_ERR_NOMEM; }
    d->value = value;
    d->elem_dtype = elem_dtype;
    if (value && value->kind == LT_DK_TENSOR) d->elem_dtype = value->tensor->dtype;
    if (value && value->kind == LT_DK_SEQUENCE) { d->elem_is_sequence = true; d->elem_dtype = value->elem_dtype; }
    *out = d;
    return LT_OK;
}
lt_datum *lt_datum_retain(lt_datum *d) {
    if (d) d->refs++;
    return d;
}
void lt_datum_release(lt_datum *d) {
    if (!d || --d->refs > 0) return;
    lt_tensor_release(d->tensor);
    for (int i = 0; i < d->n; i++) lt_datum_release(d->items[i]);
    lt_mem_free(d->items);
    lt_datum_release(d->value);
    lt_tensor_release(d->keys);
    lt_tensor_release(d->values);
    lt_mem_free(d);
}
const char *lt_datum_describe(const lt_datum *d, char *buf, size_t n) {
    switch (d->kind) {
    case LT_DK_TENSOR: return lt_tensor_describe(d->tensor, buf, n);
    case LT_DK_SEQUENCE: snprintf(buf, n, "sequence(%s) of %d", lt_dtype_name(d->elem_dtype), d->n); return buf;
    case LT_DK_OPTIONAL: snprintf(buf, n, "optional(%s)%s", lt_dtype_name(d->elem_dtype), d->value ? "" : " (none)"); return buf;
    case LT_DK_MAP: snprintf(buf, n, "map"); return buf;
    }
    return buf;
}
