/* types.c — TypeProto -> lt_type (tensor with symbolic dims, sparse tensor, sequence, optional, map;
 * opaque types become UNKNOWN), and deep copies of types into the model arena.
 * A tensor type without a shape field has rank -1; a dimension with neither dim_value nor
 * dim_param is {-1, NULL}; a negative dim_value (old exporters' "dynamic") and a dim_param of "?"
 * (paddle2onnx and others write it for "unknown", as onnxruntime reads it) are treated the same: each
 * such dim is its own unknown, not one dimension shared by every "?". */
#include "onnx_int.h"

#include <string.h>

static void *arena_alloc(onnx_load *L, size_t n) {
    void *p = lt_arena_alloc(&L->m->arena, n);
    if (!p) lt_error(L->ctx, LT_ERR_NOMEM, "out of memory (%zu bytes for model types)", n);
    return p;
}

static lt_status parse_dim(onnx_load *L, lt_slice s, lt_dim *d) {
    lt_wire w;
    onnx_reader(L, &w, s, "TensorShapeProto.Dimension");
    *d = (lt_dim){-1, NULL};
    while (lt_wire_next(&w)) {
        if (w.field == 1) {
            int64_t v;
            if (!lt_wire_i64(&w, &v)) break;
            d->value = v >= 0 ? v : -1;
            d->param = NULL;
        } else if (w.field == 2) {
            const uint8_t *p;
            size_t n;
            if (!lt_wire_bytes(&w, &p, &n)) break;
            if (n == 0 || (n == 1 && p[0] == '?')) continue;
            const char *name = onnx_str(L, &w, p, n, "dim_param");
            if (!name) return onnx_wire_status(L);
            d->param = name;
            d->value = -1;
        }
    }
    return lt_wire_failed(&w) ? onnx_wire_status(L) : LT_OK;
}

static lt_status parse_shape(onnx_load *L, lt_slice s, lt_type *t) {
    lt_wire w;
    onnx_reader(L, &w, s, "TensorShapeProto");
    int64_t n = 0;
    while (lt_wire_next(&w))
        if (w.field == 1) n++;
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (n > INT32_MAX / 2) return lt_wire_error(&w, w.start, LT_ERR_INVALID, "%lld dimensions", (long long)n);
    t->rank = (int)n;
    t->dims = NULL;
    if (!n) return LT_OK;
    t->dims = arena_alloc(L, (size_t)n * sizeof *t->dims);
    if (!t->dims) return LT_ERR_NOMEM;
    onnx_reader(L, &w, s, "TensorShapeProto");
    int k = 0;
    while (lt_wire_next(&w)) {
        if (w.field != 1) continue;
        lt_slice d;
        if (!onnx_slice(&w, &d, "TensorShapeProto.Dimension")) break;
        LT_TRY(parse_dim(L, d, &t->dims[k++]));
    }
    return lt_wire_failed(&w) ? onnx_wire_status(L) : LT_OK;
}

static lt_status check_dtype(onnx_load *L, lt_wire *w, int32_t v, lt_dtype *out) {
    if (v != 0 && !lt_dtype_valid(v))
        return lt_wire_error(w, w->key_at, LT_ERR_INVALID, "elem_type %d is not an ONNX data type", (int)v);
    *out = (lt_dtype)v;
    return LT_OK;
}

/* TypeProto.Tensor / .SparseTensor */
static lt_status parse_tensor_type(onnx_load *L, lt_slice s, lt_type *t, lt_type_kind kind) {
    lt_wire w;
    onnx_reader(L, &w, s, "TypeProto.Tensor");
    t->kind = kind;
    t->dtype = LT_UNDEFINED;
    t->rank = -1;
    t->dims = NULL;
    t->elem = NULL;
    while (lt_wire_next(&w)) {
        if (w.field == 1) {
            int32_t v;
            if (!lt_wire_i32(&w, &v)) break;
            LT_TRY(check_dtype(L, &w, v, &t->dtype));
        } else if (w.field == 2) {
            lt_slice sh;
            if (!onnx_slice(&w, &sh, "TensorShapeProto")) break;
            LT_TRY(parse_shape(L, sh, t));
        }
    }
    return lt_wire_failed(&w) ? onnx_wire_status(L) : LT_OK;
}

/* TypeProto.Sequence / .Optional (elem_type = 1), TypeProto.Map (key_type = 1, value_type = 2). */
static lt_status parse_wrapped(onnx_load *L, lt_slice s, lt_type *t, lt_type_kind kind) {
    const char *msg = kind == LT_TK_SEQUENCE ? "TypeProto.Sequence" : kind == LT_TK_OPTIONAL ? "TypeProto.Optional" : "TypeProto.Map";
    lt_wire w;
    onnx_reader(L, &w, s, msg);
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->rank = -1;
    while (lt_wire_next(&w)) {
        if (kind == LT_TK_MAP && w.field == 1) {
            int32_t v;
            if (!lt_wire_i32(&w, &v)) break;
            LT_TRY(check_dtype(L, &w, v, &t->dtype));
        } else if ((kind != LT_TK_MAP && w.field == 1) || (kind == LT_TK_MAP && w.field == 2)) {
            lt_slice e;
            if (!onnx_slice(&w, &e, "TypeProto")) break;
            if (!t->elem && !(t->elem = arena_alloc(L, sizeof *t->elem))) return LT_ERR_NOMEM;
            LT_TRY(onnx_type(L, e, t->elem));
        }
    }
    return lt_wire_failed(&w) ? onnx_wire_status(L) : LT_OK;
}

lt_status onnx_type(onnx_load *L, lt_slice s, lt_type *out) {
    lt_wire w;
    onnx_reader(L, &w, s, "TypeProto");
    memset(out, 0, sizeof *out);
    out->kind = LT_TK_UNKNOWN;
    out->rank = -1;
    while (lt_wire_next(&w)) {
        lt_slice v;
        switch (w.field) {
        case 1:
            if (!onnx_slice(&w, &v, "TypeProto.Tensor")) break;
            LT_TRY(parse_tensor_type(L, v, out, LT_TK_TENSOR));
            break;
        case 8:
            if (!onnx_slice(&w, &v, "TypeProto.SparseTensor")) break;
            LT_TRY(parse_tensor_type(L, v, out, LT_TK_SPARSE_TENSOR));
            break;
        case 4:
            if (!onnx_slice(&w, &v, "TypeProto.Sequence")) break;
            LT_TRY(parse_wrapped(L, v, out, LT_TK_SEQUENCE));
            break;
        case 9:
            if (!onnx_slice(&w, &v, "TypeProto.Optional")) break;
            LT_TRY(parse_wrapped(L, v, out, LT_TK_OPTIONAL));
            break;
        case 5:
            if (!onnx_slice(&w, &v, "TypeProto.Map")) break;
            LT_TRY(parse_wrapped(L, v, out, LT_TK_MAP));
            break;
        case 7: /* opaque: nothing lathe can use */
            memset(out, 0, sizeof *out);
            out->kind = LT_TK_UNKNOWN;
            out->rank = -1;
            break;
        default: break;
        }
    }
    return lt_wire_failed(&w) ? onnx_wire_status(L) : LT_OK;
}

lt_status onnx_type_clone(onnx_load *L, const lt_type *src, lt_type *dst) {
    *dst = *src;
    if (src->rank > 0 && src->dims) {
        if (!(dst->dims = arena_alloc(L, (size_t)src->rank * sizeof *dst->dims))) return LT_ERR_NOMEM;
        memcpy(dst->dims, src->dims, (size_t)src->rank * sizeof *dst->dims);
    }
    if (src->elem) {
        if (!(dst->elem = arena_alloc(L, sizeof *dst->elem))) return LT_ERR_NOMEM;
        return onnx_type_clone(L, src->elem, dst->elem);
    }
    return LT_OK;
}
