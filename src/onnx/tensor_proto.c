/* tensor_proto.c — TensorProto and SparseTensorProto decoding into lt_tensor, test-data values
 * (SequenceProto / OptionalProto / MapProto) into lt_datum, and TensorProto encoding.
 *
 * Data rules (ONNX-WIRE.md): raw_data is little-endian, fixed width; the typed fields are float_data
 * (FLOAT, COMPLEX64 pairs), double_data (DOUBLE, COMPLEX128 pairs), int64_data (INT64), uint64_data
 * (UINT32, UINT64), string_data (STRING) and int32_data (every other type, one element per entry as
 * bits; the 4-bit and 2-bit types one packed byte per entry). The element count of the data field
 * (or the byte length of raw_data) must match the dims exactly; dims must be >= 0 and their product
 * may not overflow. 4-bit and 2-bit types are unpacked to one element per byte (INT4/INT2
 * sign-extended); BOOL bytes are normalized to 0/1. Sparse tensors are densified (indices bounds-checked,
 * the dense size capped by LT_ONNX_MAX_DENSIFIED_BYTES and the load's max_bytes).
 * Zero-copy: with L->borrow (model import), raw_data and external data are referenced in place when
 * no conversion is needed and the address is aligned to the element size; otherwise they are copied.
 * A borrowed tensor points into the model's mapping (copy-on-write, never written back to the file)
 * or into the caller's buffer for lt_onnx_load_memory, which must then outlive the model and must
 * not be written through the tensor. The host must be little-endian.
 */
#include "onnx_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "lathe's ONNX decoder assumes a little-endian host"
#endif

lt_status onnx_own(onnx_load *L, lt_tensor *t) {
    if (!L->m) return LT_OK;
    if (!lt_vec_push(&L->m->owned_tensors, t)) {
        lt_tensor_release(t);
        return lt_error(L->ctx, LT_ERR_NOMEM, "out of memory (tensor list)");
    }
    return LT_OK;
}

/* ---- TensorProto ---- */
typedef struct tp {
    int64_t n_dims;
    int32_t dtype;
    bool has_dtype, has_raw, has_segment;
    lt_slice name;
    const uint8_t *raw;
    size_t raw_n;
    int64_t count[16]; /* entries per field number (4,5,6,7,10,11) */
    int32_t data_location;
    const uint8_t *loc;
    size_t loc_n;
    bool has_loc, has_offset, has_length;
    int64_t offset, length;
} tp;

static const char *field_label(int f) {
    switch (f) {
    case 4: return "float_data";
    case 5: return "int32_data";
    case 6: return "string_data";
    case 7: return "int64_data";
    case 10: return "double_data";
    case 11: return "uint64_data";
    default: return "?";
    }
}

/* The typed field that carries dtype dt and how many entries numel elements take there. */
static int typed_field(lt_dtype dt, int64_t numel, int64_t *entries) {
    *entries = numel;
    switch (dt) {
    case LT_FLOAT: return 4;
    case LT_COMPLEX64: *entries = numel * 2; return 4;
    case LT_DOUBLE: return 10;
    case LT_COMPLEX128: *entries = numel * 2; return 10;
    case LT_INT64: return 7;
    case LT_UINT32:
    case LT_UINT64: return 11;
    case LT_STRING: return 6;
    case LT_INT4:
    case LT_UINT4:
    case LT_FLOAT4E2M1: *entries = numel / 2 + numel % 2; return 5;
    case LT_INT2:
    case LT_UINT2: *entries = numel / 4 + (numel % 4 != 0); return 5;
    default: return 5;
    }
}

/* Bytes numel elements take on the wire (raw_data / external data). */
static int64_t wire_bytes(lt_dtype dt, int64_t numel) {
    const lt_dtype_info *di = lt_dtype_get(dt);
    if (di->wire_bits == 4) return numel / 2 + numel % 2;
    if (di->wire_bits == 2) return numel / 4 + (numel % 4 != 0);
    return numel * di->size; /* caller checked the byte count does not overflow */
}

/* Strict decimal int64 (external data offset/length). */
static bool parse_dec(const uint8_t *p, size_t n, int64_t *out) {
    if (n == 0 || n > 19) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        if (!lt_mul_i64(v, 10, &v) || !lt_add_i64(v, p[i] - '0', &v)) return false;
    }
    *out = v;
    return true;
}

static bool slice_is(const uint8_t *p, size_t n, const char *s) { return strlen(s) == n && memcmp(p, s, n) == 0; }

static lt_status parse_ext_entry(onnx_load *L, lt_wire *w, tp *t) {
    lt_wire e;
    if (!lt_wire_msg(w, &e, "StringStringEntryProto")) return onnx_wire_status(L);
    const uint8_t *k = NULL, *v = NULL;
    size_t kn = 0, vn = 0;
    while (lt_wire_next(&e)) {
        if (e.field == 1 && !lt_wire_bytes(&e, &k, &kn)) break;
        if (e.field == 2 && !lt_wire_bytes(&e, &v, &vn)) break;
    }
    if (lt_wire_failed(&e)) return onnx_wire_status(L);
    if (!k) return LT_OK;
    if (!v) v = (const uint8_t *)"";
    if (slice_is(k, kn, "location")) {
        t->loc = v;
        t->loc_n = vn;
        t->has_loc = true;
    } else if (slice_is(k, kn, "offset") || slice_is(k, kn, "length")) {
        int64_t x;
        bool is_off = slice_is(k, kn, "offset");
        if (!parse_dec(v, vn, &x))
            return lt_wire_error(w, w->key_at, LT_ERR_INVALID, "external data %s '%.*s' is not a non-negative integer",
                                 is_off ? "offset" : "length", (int)(vn > 40 ? 40 : vn), (const char *)v);
        if (is_off) { t->offset = x; t->has_offset = true; }
        else { t->length = x; t->has_length = true; }
    }
    return LT_OK;
}

static lt_status scan(onnx_load *L, lt_slice s, tp *t) {
    lt_wire w;
    onnx_reader(L, &w, s, "TensorProto");
    memset(t, 0, sizeof *t);
    while (lt_wire_next(&w)) {
        switch (w.field) {
        case 1: lt_wire_rep_varint(&w, NULL, 0, &t->n_dims); break;
        case 2: t->has_dtype = lt_wire_i32(&w, &t->dtype); break;
        case 3: t->has_segment = true; break;
        case 4: lt_wire_rep_fixed32(&w, NULL, 0, &t->count[4]); break;
        case 5: lt_wire_rep_varint(&w, NULL, 0, &t->count[5]); break;
        case 6: t->count[6]++; break;
        case 7: lt_wire_rep_varint(&w, NULL, 0, &t->count[7]); break;
        case 8: {
            const uint8_t *p;
            size_t n;
            if (lt_wire_bytes(&w, &p, &n)) t->name = (lt_slice){p, n, 0};
            break;
        }
        case 9:
            if (lt_wire_bytes(&w, &t->raw, &t->raw_n)) t->has_raw = true;
            break;
        case 10: lt_wire_rep_fixed64(&w, NULL, 0, &t->count[10]); break;
        case 11: lt_wire_rep_varint(&w, NULL, 0, &t->count[11]); break;
        case 13: LT_TRY(parse_ext_entry(L, &w, t)); break;
        case 14: lt_wire_i32(&w, &t->data_location); break;
        default: break;
        }
    }
    return lt_wire_failed(&w) ? onnx_wire_status(L) : LT_OK;
}

/* Unpack 4-bit / 2-bit elements from packed bytes into one byte each. */
static void unpack_bits(lt_dtype dt, const uint8_t *src, uint8_t *dst, int64_t numel) {
    int bits = lt_dtype_get(dt)->wire_bits, per = 8 / bits;
    uint8_t mask = (uint8_t)((1u << bits) - 1);
    bool sign = dt == LT_INT4 || dt == LT_INT2;
    for (int64_t i = 0; i < numel; i++) {
        uint8_t v = (uint8_t)((src[i / per] >> ((i % per) * bits)) & mask);
        if (sign && (v & (1u << (bits - 1)))) v |= (uint8_t)~mask;
        dst[i] = v;
    }
}

static lt_status from_bytes(onnx_load *L, const char *label, lt_dtype dt, int rank, const int64_t *dims, int64_t numel,
                            const uint8_t *data, size_t n, bool may_borrow, lt_tensor **out) {
    int64_t want = wire_bytes(dt, numel);
    if ((int64_t)n != want) {
        char sb[256];
        return lt_error(L->ctx, LT_ERR_INVALID, "%s: %s has %zu bytes, expected %lld for %s%s", L->file, label, n,
                        (long long)want, lt_dtype_name(dt), lt_shape_str(rank, dims, sb, sizeof sb));
    }
    const lt_dtype_info *di = lt_dtype_get(dt);
    bool plain = di->wire_bits == 8 * di->size;
    if (plain && dt == LT_BOOL)
        for (size_t i = 0; i < n && plain; i++) plain = data[i] <= 1;
    if (plain && may_borrow && L->borrow && numel > 0 && (uintptr_t)data % (uintptr_t)di->size == 0)
        return lt_tensor_borrow(L->ctx, dt, rank, dims, (void *)(uintptr_t)data, out);
    lt_tensor *t;
    LT_TRY(lt_tensor_new(L->ctx, dt, rank, dims, &t));
    if (di->wire_bits < 8) unpack_bits(dt, data, t->data, numel);
    else if (dt == LT_BOOL)
        for (int64_t i = 0; i < numel; i++) ((uint8_t *)t->data)[i] = data[i] != 0;
    else if (n) memcpy(t->data, data, n);
    *out = t;
    return LT_OK;
}

/* Decode typed field `field` (entries counted) into t. */
static lt_status from_typed(onnx_load *L, lt_slice s, int field, int64_t entries, lt_tensor *t) {
    lt_dtype dt = t->dtype;
    int64_t numel = t->numel, got = 0;
    lt_wire w;
    onnx_reader(L, &w, s, "TensorProto");
    if (field == 6) { /* strings */
        while (lt_wire_next(&w)) {
            if (w.field != 6) continue;
            const uint8_t *p;
            size_t n;
            if (!lt_wire_bytes(&w, &p, &n)) break;
            if (got >= numel) break;
            LT_TRY(lt_tensor_set_string(L->ctx, t, got++, (const char *)p, n));
        }
        return lt_wire_failed(&w) ? onnx_wire_status(L) : LT_OK;
    }
    bool direct = (field == 4) || (field == 10) || (field == 7) || (field == 11 && dt == LT_UINT64);
    uint64_t *tmp = NULL;
    void *dst = t->data;
    if (!direct) {
        tmp = lt_calloc(L->ctx, (size_t)(entries ? entries : 1), sizeof *tmp, "tensor data");
        if (!tmp) return LT_ERR_NOMEM;
        dst = tmp;
    }
    while (lt_wire_next(&w)) {
        if ((int)w.field != field) continue;
        if (field == 4) lt_wire_rep_fixed32(&w, dst, entries, &got);
        else if (field == 10) lt_wire_rep_fixed64(&w, dst, entries, &got);
        else lt_wire_rep_varint(&w, dst, entries, &got);
    }
    if (lt_wire_failed(&w)) {
        lt_mem_free(tmp);
        return onnx_wire_status(L);
    }
    if (tmp) {
        uint8_t *d8 = t->data;
        uint16_t *d16 = t->data;
        uint32_t *d32 = t->data;
        const lt_dtype_info *di = lt_dtype_get(dt);
        if (di->wire_bits < 8) {
            uint8_t *packed = lt_alloc(L->ctx, (size_t)(entries ? entries : 1), "tensor data");
            if (!packed) {
                lt_mem_free(tmp);
                return LT_ERR_NOMEM;
            }
            for (int64_t i = 0; i < entries; i++) packed[i] = (uint8_t)tmp[i];
            unpack_bits(dt, packed, d8, numel);
            lt_mem_free(packed);
        } else if (dt == LT_BOOL) {
            for (int64_t i = 0; i < numel; i++) d8[i] = (uint32_t)tmp[i] != 0;
        } else if (di->size == 1) {
            for (int64_t i = 0; i < numel; i++) d8[i] = (uint8_t)tmp[i];
        } else if (di->size == 2) {
            for (int64_t i = 0; i < numel; i++) d16[i] = (uint16_t)tmp[i];
        } else {
            for (int64_t i = 0; i < numel; i++) d32[i] = (uint32_t)tmp[i];
        }
        lt_mem_free(tmp);
    }
    return LT_OK;
}

lt_status onnx_tensor(onnx_load *L, lt_slice s, const char *what, lt_tensor **out, lt_slice *name_out) {
    tp t;
    LT_TRY(scan(L, s, &t));
    char label[320];
    const uint8_t *at = s.p;
    size_t off = (size_t)(at - L->src.base);
    snprintf(label, sizeof label, "%s '%.*s'", what, (int)(t.name.n > 200 ? 200 : t.name.n), t.name.p ? (const char *)t.name.p : "");
    if (name_out) *name_out = t.name;
#define TERR(st, ...) lt_error(L->ctx, st, "%s: byte %zu: %s: " __VA_ARGS__)
    if (t.has_segment) return TERR(LT_ERR_UNSUPPORTED, "%s", L->file, off, label, "segmented tensors are not supported");
    if (!t.has_dtype || t.dtype == 0) return TERR(LT_ERR_INVALID, "%s", L->file, off, label, "tensor has no data_type");
    if (!lt_dtype_valid(t.dtype))
        return TERR(LT_ERR_INVALID, "data_type %d is not an ONNX data type", L->file, off, label, (int)t.dtype);
    lt_dtype dt = (lt_dtype)t.dtype;
    if (t.n_dims > LT_MAX_RANK)
        return TERR(LT_ERR_UNSUPPORTED, "rank %lld exceeds lathe's limit of %d", L->file, off, label, (long long)t.n_dims,
                    LT_MAX_RANK);
    int64_t dims[LT_MAX_RANK] = {0};
    int rank = (int)t.n_dims;
    if (rank) {
        uint64_t ud[LT_MAX_RANK];
        int64_t got = 0;
        lt_wire w;
        onnx_reader(L, &w, s, "TensorProto");
        while (lt_wire_next(&w))
            if (w.field == 1) lt_wire_rep_varint(&w, ud, rank, &got);
        if (lt_wire_failed(&w)) return onnx_wire_status(L);
        for (int i = 0; i < rank; i++) dims[i] = (int64_t)ud[i];
    }
    char sb[256];
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return TERR(LT_ERR_INVALID, "negative dimension %lld in dims %s", L->file, off, label, (long long)dims[i],
                        lt_shape_str(rank, dims, sb, sizeof sb));
    int64_t numel, bytes;
    if (!lt_prod_i64(dims, rank, &numel) || !lt_mul_i64(numel, lt_dtype_size(dt), &bytes) || bytes > LT_TENSOR_MAX_BYTES)
        return TERR(LT_ERR_INVALID, "dims %s (%s) overflow the size limit", L->file, off, label,
                    lt_shape_str(rank, dims, sb, sizeof sb), lt_dtype_name(dt));
    int64_t entries;
    int field = typed_field(dt, numel, &entries);
    for (int f = 4; f <= 11; f++) {
        if (f == 8 || f == 9 || f == field || !t.count[f]) continue;
        return TERR(LT_ERR_INVALID, "%s given for a %s tensor", L->file, off, label, field_label(f), lt_dtype_name(dt));
    }
    if (t.data_location != 0 && t.data_location != 1)
        return TERR(LT_ERR_INVALID, "data_location %d is not DEFAULT (0) or EXTERNAL (1)", L->file, off, label,
                    (int)t.data_location);
    lt_tensor *r = NULL;
    if (t.data_location == 1) {
        if (dt == LT_STRING) return TERR(LT_ERR_INVALID, "%s", L->file, off, label, "string tensors cannot use external data");
        if (!t.has_loc) return TERR(LT_ERR_INVALID, "%s", L->file, off, label, "external data without a location");
        const uint8_t *data;
        size_t n;
        char tname[240];
        snprintf(tname, sizeof tname, "%.*s", (int)(t.name.n > 200 ? 200 : t.name.n), t.name.p ? (const char *)t.name.p : "");
        lt_wire w;
        onnx_reader(L, &w, s, "TensorProto");
        LT_TRY(onnx_external_bytes(L, &w, tname, (const char *)t.loc, t.loc_n, t.has_offset ? t.offset : 0,
                                   t.has_length ? t.length : -1, &data, &n));
        char el[400];
        snprintf(el, sizeof el, "%s: external data", label);
        LT_TRY(from_bytes(L, el, dt, rank, dims, numel, data, n, true, &r));
    } else if (t.has_raw) {
        if (dt == LT_STRING) return TERR(LT_ERR_INVALID, "%s", L->file, off, label, "string tensors cannot use raw_data");
        if (t.count[field])
            return TERR(LT_ERR_INVALID, "both raw_data and %s are set", L->file, off, label, field_label(field));
        char el[400];
        snprintf(el, sizeof el, "byte %zu: %s: raw_data", off, label);
        LT_TRY(from_bytes(L, el, dt, rank, dims, numel, t.raw, t.raw_n, true, &r));
    } else {
        if (t.count[field] != entries) {
            if (t.count[field] == 0)
                return TERR(LT_ERR_INVALID, "tensor has no data (%s%s needs %lld elements)", L->file, off, label,
                            lt_dtype_name(dt), lt_shape_str(rank, dims, sb, sizeof sb), (long long)numel);
            return TERR(LT_ERR_INVALID, "%s has %lld entries, expected %lld for %s%s", L->file, off, label,
                        field_label(field), (long long)t.count[field], (long long)entries, lt_dtype_name(dt),
                        lt_shape_str(rank, dims, sb, sizeof sb));
        }
        LT_TRY(lt_tensor_new(L->ctx, dt, rank, dims, &r));
        if (entries) {
            lt_status st = from_typed(L, s, field, entries, r);
            if (st) {
                lt_tensor_release(r);
                return st;
            }
        }
    }
#undef TERR
    *out = r;
    return LT_OK;
}

/* ---- SparseTensorProto ---- */
lt_status onnx_sparse_tensor(onnx_load *L, lt_slice s, const char *what, lt_tensor **out, lt_slice *name_out) {
    lt_wire w;
    onnx_reader(L, &w, s, "SparseTensorProto");
    lt_slice vs = {0}, is = {0};
    bool has_v = false, has_i = false;
    int64_t n_dims = 0;
    while (lt_wire_next(&w)) {
        if (w.field == 1) has_v = onnx_slice(&w, &vs, "TensorProto");
        else if (w.field == 2) has_i = onnx_slice(&w, &is, "TensorProto");
        else if (w.field == 3) lt_wire_rep_varint(&w, NULL, 0, &n_dims);
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    size_t off = (size_t)(s.p - L->src.base);
    if (!has_v || !has_i)
        return lt_error(L->ctx, LT_ERR_INVALID, "%s: byte %zu: %s: sparse tensor without values or indices", L->file, off, what);
    if (n_dims > LT_MAX_RANK)
        return lt_error(L->ctx, LT_ERR_UNSUPPORTED, "%s: byte %zu: %s: sparse tensor rank %lld exceeds lathe's limit of %d",
                        L->file, off, what, (long long)n_dims, LT_MAX_RANK);
    int rank = (int)n_dims;
    int64_t dims[LT_MAX_RANK] = {0};
    {
        uint64_t ud[LT_MAX_RANK];
        int64_t got = 0;
        onnx_reader(L, &w, s, "SparseTensorProto");
        while (lt_wire_next(&w))
            if (w.field == 3) lt_wire_rep_varint(&w, ud, rank, &got);
        if (lt_wire_failed(&w)) return onnx_wire_status(L);
        for (int i = 0; i < rank; i++) dims[i] = (int64_t)ud[i];
    }
    lt_tensor *vals = NULL, *idx = NULL, *dense = NULL;
    lt_status st = onnx_tensor(L, vs, what, &vals, name_out);
    if (!st) st = onnx_tensor(L, is, what, &idx, NULL);
    char sb[256];
    int64_t numel = 0, bytes = 0, nnz = vals ? vals->numel : 0;
    if (!st) {
        bool bad = false;
        for (int i = 0; i < rank; i++) bad |= dims[i] < 0;
        if (bad || !lt_prod_i64(dims, rank, &numel) || !lt_mul_i64(numel, lt_dtype_size(vals->dtype), &bytes) ||
            bytes > L->max_bytes || bytes > LT_ONNX_MAX_DENSIFIED_BYTES)
            st = lt_error(L->ctx, LT_ERR_INVALID, "%s: byte %zu: %s: sparse tensor dims %s are negative or too large", L->file,
                          off, what, lt_shape_str(rank, dims, sb, sizeof sb));
    }
    if (!st && !lt_dtype_is_int(idx->dtype))
        st = lt_error(L->ctx, LT_ERR_INVALID, "%s: byte %zu: %s: sparse indices must be integers, not %s", L->file, off, what,
                      lt_dtype_name(idx->dtype));
    bool linear = false;
    if (!st) {
        if (vals->rank != 1) st = lt_error(L->ctx, LT_ERR_INVALID, "%s: byte %zu: %s: sparse values must be 1-D", L->file, off, what);
        else if (idx->rank == 1 && idx->dims[0] == nnz) linear = true;
        else if (!(idx->rank == 2 && idx->dims[0] == nnz && idx->dims[1] == rank))
            st = lt_error(L->ctx, LT_ERR_INVALID, "%s: byte %zu: %s: sparse indices of shape %s do not fit %lld values of rank %d",
                          L->file, off, what, lt_shape_str(idx->rank, idx->dims, sb, sizeof sb), (long long)nnz, rank);
    }
    if (!st) st = lt_tensor_new(L->ctx, vals->dtype, rank, dims, &dense);
    int esize = vals ? lt_dtype_size(vals->dtype) : 0;
    for (int64_t k = 0; !st && k < nnz; k++) {
        int64_t lin = 0;
        if (linear) {
            lin = lt_load_i64(idx->data, idx->dtype, k);
            if (lin < 0 || lin >= numel)
                st = lt_error(L->ctx, LT_ERR_INVALID, "%s: byte %zu: %s: sparse index %lld out of range [0, %lld)", L->file, off,
                              what, (long long)lin, (long long)numel);
        } else {
            for (int d = 0; d < rank && !st; d++) {
                int64_t c = lt_load_i64(idx->data, idx->dtype, k * rank + d);
                if (c < 0 || c >= dims[d])
                    st = lt_error(L->ctx, LT_ERR_INVALID, "%s: byte %zu: %s: sparse index %lld out of range in dimension %d (size %lld)",
                                  L->file, off, what, (long long)c, d, (long long)dims[d]);
                lin = lin * dims[d] + c;
            }
        }
        if (st) break;
        if (vals->dtype == LT_STRING) {
            const char *sv = ((char *const *)vals->data)[k];
            st = lt_tensor_set_string(L->ctx, dense, lin, sv, strlen(sv));
        } else {
            memcpy((uint8_t *)dense->data + lin * esize, (const uint8_t *)vals->data + k * esize, (size_t)esize);
        }
    }
    lt_tensor_release(vals);
    lt_tensor_release(idx);
    if (st) {
        lt_tensor_release(dense);
        return st;
    }
    *out = dense;
    return LT_OK;
}

/* ---- test-data values ---- */
static lt_status decode_value(onnx_load *L, lt_slice s, int elem_kind, const lt_type *expected, lt_datum **out);

static lt_dtype elem_dtype_of(const lt_type *t) {
    return t && t->elem && (t->elem->kind == LT_TK_TENSOR || t->elem->kind == LT_TK_SPARSE_TENSOR) ? t->elem->dtype
                                                                                                      : LT_UNDEFINED;
}

/* Sequence / Optional value fields: 3 tensor, 4 sparse tensor, 5 sequence, 6 map, 7 optional,
 * matching elem_type 1..5. */
static int kind_of_field(uint32_t f) { return f >= 3 && f <= 7 ? (int)f - 2 : 0; }
static const char *msg_of_kind(int k) {
    switch (k) {
    case 1: return "TensorProto";
    case 2: return "SparseTensorProto";
    case 3: return "SequenceProto";
    case 4: return "MapProto";
    default: return "OptionalProto";
    }
}

static lt_status decode_sequence(onnx_load *L, lt_slice s, const lt_type *expected, lt_datum **out) {
    lt_wire w;
    onnx_reader(L, &w, s, "SequenceProto");
    int32_t elem_type = 0;
    while (lt_wire_next(&w))
        if (w.field == 2) lt_wire_i32(&w, &elem_type);
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (elem_type < 0 || elem_type > 5)
        return lt_wire_error(&w, s.p, LT_ERR_INVALID, "elem_type %d is not 1..5", (int)elem_type);
    lt_datum *seq;
    LT_TRY(lt_datum_sequence(L->ctx, elem_dtype_of(expected), &seq));
    if (expected && expected->elem && expected->elem->kind == LT_TK_SEQUENCE) seq->elem_is_sequence = true;
    onnx_reader(L, &w, s, "SequenceProto");
    while (lt_wire_next(&w)) {
        int k = kind_of_field(w.field);
        if (!k) continue;
        if (elem_type && k != elem_type) {
            lt_datum_release(seq);
            return lt_wire_error(&w, w.key_at, LT_ERR_INVALID, "value of kind %d in a sequence of elem_type %d", k, (int)elem_type);
        }
        lt_slice v;
        if (!onnx_slice(&w, &v, msg_of_kind(k))) break;
        lt_datum *item;
        lt_status st = decode_value(L, v, k, expected ? expected->elem : NULL, &item);
        if (!st) st = lt_datum_seq_push(L->ctx, seq, item);
        if (st) {
            lt_datum_release(seq);
            return st;
        }
    }
    if (lt_wire_failed(&w)) {
        lt_datum_release(seq);
        return onnx_wire_status(L);
    }
    *out = seq;
    return LT_OK;
}

static lt_status decode_optional(onnx_load *L, lt_slice s, const lt_type *expected, lt_datum **out) {
    lt_wire w;
    onnx_reader(L, &w, s, "OptionalProto");
    int32_t elem_type = 0;
    lt_slice v = {0};
    int vk = 0;
    while (lt_wire_next(&w)) {
        if (w.field == 2) lt_wire_i32(&w, &elem_type);
        else if (kind_of_field(w.field)) {
            vk = kind_of_field(w.field);
            onnx_slice(&w, &v, msg_of_kind(vk));
        }
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (elem_type < 0 || elem_type > 5)
        return lt_wire_error(&w, s.p, LT_ERR_INVALID, "elem_type %d is not 1..5", (int)elem_type);
    if (vk && elem_type && vk != elem_type)
        return lt_wire_error(&w, s.p, LT_ERR_INVALID, "value of kind %d in an optional of elem_type %d", vk, (int)elem_type);
    lt_datum *val = NULL;
    if (vk) LT_TRY(decode_value(L, v, vk, expected ? expected->elem : NULL, &val));
    lt_datum *d;
    LT_TRY(lt_datum_optional(L->ctx, val, elem_dtype_of(expected), &d));
    if ((!val && expected && expected->elem && expected->elem->kind == LT_TK_SEQUENCE) || elem_type == 3) d->elem_is_sequence = true;
    if (!val && expected && expected->elem && expected->elem->kind == LT_TK_SEQUENCE && expected->elem->elem)
        d->elem_dtype = expected->elem->elem->dtype;
    *out = d;
    return LT_OK;
}

static lt_status decode_map(onnx_load *L, lt_slice s, const lt_type *expected, lt_datum **out) {
    lt_wire w;
    onnx_reader(L, &w, s, "MapProto");
    int32_t key_type = 0;
    int64_t n_keys = 0, n_skeys = 0;
    lt_slice vals = {0};
    bool has_vals = false;
    while (lt_wire_next(&w)) {
        if (w.field == 2) lt_wire_i32(&w, &key_type);
        else if (w.field == 3) lt_wire_rep_varint(&w, NULL, 0, &n_keys);
        else if (w.field == 4) n_skeys++;
        else if (w.field == 5) has_vals = onnx_slice(&w, &vals, "SequenceProto");
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (!lt_dtype_valid(key_type) || (key_type == LT_STRING ? n_keys != 0 : n_skeys != 0) ||
        !(key_type == LT_STRING || lt_dtype_is_int((lt_dtype)key_type)))
        return lt_wire_error(&w, s.p, LT_ERR_INVALID, "map key_type %d with %lld integer and %lld string keys", (int)key_type,
                             (long long)n_keys, (long long)n_skeys);
    int64_t nk = key_type == LT_STRING ? n_skeys : n_keys;
    lt_datum *seq = NULL, *d = NULL;
    lt_tensor *keys = NULL, *values = NULL;
    lt_status st = lt_tensor_new(L->ctx, (lt_dtype)key_type, 1, &nk, &keys);
    if (!st) {
        int64_t got = 0;
        uint64_t *tmp = NULL;
        if (key_type != LT_STRING && !(tmp = lt_calloc(L->ctx, (size_t)(nk ? nk : 1), sizeof *tmp, "map keys"))) st = LT_ERR_NOMEM;
        onnx_reader(L, &w, s, "MapProto");
        while (!st && lt_wire_next(&w)) {
            if (w.field == 3 && tmp) lt_wire_rep_varint(&w, tmp, nk, &got);
            else if (w.field == 4 && key_type == LT_STRING) {
                const uint8_t *p;
                size_t n;
                if (lt_wire_bytes(&w, &p, &n) && got < nk) st = lt_tensor_set_string(L->ctx, keys, got++, (const char *)p, n);
            }
        }
        if (!st && lt_wire_failed(&w)) st = onnx_wire_status(L);
        if (!st && tmp)
            for (int64_t i = 0; i < nk; i++) lt_store_i64(keys->data, keys->dtype, i, (int64_t)tmp[i]);
        lt_mem_free(tmp);
    }
    lt_type seq_t = {.kind = LT_TK_SEQUENCE, .rank = -1, .elem = expected ? expected->elem : NULL};
    if (!st && has_vals) st = decode_sequence(L, vals, &seq_t, &seq);
    if (!st && (seq ? seq->n : 0) != nk)
        st = lt_wire_error(&w, s.p, LT_ERR_INVALID, "map has %lld keys and %d values", (long long)nk, seq ? seq->n : 0);
    /* Values: stack the per-key tensors (all of one dtype and shape) into one tensor [n, ...]. */
    if (!st) {
        const lt_tensor *first = nk ? (seq->items[0]->kind == LT_DK_TENSOR ? seq->items[0]->tensor : NULL) : NULL;
        lt_dtype vdt = first ? first->dtype : elem_dtype_of(&seq_t) ? elem_dtype_of(&seq_t) : LT_FLOAT;
        int64_t vd[LT_MAX_RANK] = {nk};
        int vr = 1;
        if (nk && !first) st = lt_error(L->ctx, LT_ERR_UNSUPPORTED, "%s: map values that are not tensors", L->file);
        else if (first && first->rank + 1 > LT_MAX_RANK) st = lt_error(L->ctx, LT_ERR_UNSUPPORTED, "%s: map value rank too large", L->file);
        if (!st && first) {
            memcpy(vd + 1, first->dims, (size_t)first->rank * sizeof *vd);
            vr = first->rank + 1;
        }
        for (int64_t i = 1; !st && i < nk; i++) {
            const lt_datum *it = seq->items[i];
            if (it->kind != LT_DK_TENSOR || it->tensor->dtype != vdt || it->tensor->rank != first->rank ||
                memcmp(it->tensor->dims, first->dims, (size_t)first->rank * sizeof *vd) != 0)
                st = lt_error(L->ctx, LT_ERR_UNSUPPORTED, "%s: map values of different types or shapes", L->file);
        }
        if (!st) st = lt_tensor_new(L->ctx, vdt, vr, vd, &values);
        int64_t per = first ? first->numel : 0;
        for (int64_t i = 0; !st && i < nk; i++) {
            const lt_tensor *v = seq->items[i]->tensor;
            if (vdt == LT_STRING) {
                for (int64_t j = 0; !st && j < per; j++) {
                    const char *sv = ((char *const *)v->data)[j];
                    st = lt_tensor_set_string(L->ctx, values, i * per + j, sv, strlen(sv));
                }
            } else if (per) {
                memcpy((uint8_t *)values->data + i * per * lt_dtype_size(vdt), v->data, (size_t)lt_tensor_nbytes(v));
            }
        }
    }
    if (!st && !(d = lt_calloc(L->ctx, 1, sizeof *d, "map"))) st = LT_ERR_NOMEM;
    lt_datum_release(seq);
    if (st) {
        lt_tensor_release(keys);
        lt_tensor_release(values);
        return st;
    }
    d->refs = 1;
    d->kind = LT_DK_MAP;
    d->keys = keys;
    d->values = values;
    d->elem_dtype = values->dtype;
    *out = d;
    return LT_OK;
}

/* kind: 1 tensor, 2 sparse, 3 sequence, 4 map, 5 optional. */
static lt_status decode_value(onnx_load *L, lt_slice s, int kind, const lt_type *expected, lt_datum **out) {
    lt_tensor *t;
    switch (kind) {
    case 1:
        LT_TRY(onnx_tensor(L, s, "tensor", &t, NULL));
        return lt_datum_tensor(L->ctx, t, out);
    case 2:
        LT_TRY(onnx_sparse_tensor(L, s, "sparse tensor", &t, NULL));
        return lt_datum_tensor(L->ctx, t, out);
    case 3: return decode_sequence(L, s, expected, out);
    case 4: return decode_map(L, s, expected, out);
    default: return decode_optional(L, s, expected, out);
    }
}

static void load_init(onnx_load *L, lt_ctx *ctx, const void *data, size_t size, const char *file) {
    memset(L, 0, sizeof *L);
    L->ctx = ctx;
    L->file = file ? file : "<memory>";
    L->max_bytes = LT_ONNX_DEFAULT_MAX_BYTES;
    lt_arena_init(&L->scratch);
    lt_wire_src_init(&L->src, ctx, data, size, L->file, 0);
}

static lt_status decode_root(lt_ctx *ctx, const void *data, size_t size, const char *file, const lt_type *expected,
                             lt_datum **out) {
    onnx_load L;
    load_init(&L, ctx, data, size, file);
    lt_slice s = {L.src.base, L.src.size, 0};
    int kind = 1;
    if (expected) {
        switch (expected->kind) {
        case LT_TK_SEQUENCE: kind = 3; break;
        case LT_TK_MAP: kind = 4; break;
        case LT_TK_OPTIONAL: kind = 5; break;
        default: kind = 1; break;
        }
    }
    lt_status st = decode_value(&L, s, kind, expected, out);
    lt_arena_free(&L.scratch);
    return st;
}

lt_status lt_onnx_decode_datum(lt_ctx *ctx, const void *data, size_t size, const lt_type *expected, lt_datum **out) {
    return decode_root(ctx, data, size, NULL, expected, out);
}

lt_status lt_onnx_decode_tensor(lt_ctx *ctx, const void *data, size_t size, lt_tensor **out, char **name_out) {
    onnx_load L;
    load_init(&L, ctx, data, size, NULL);
    lt_slice s = {L.src.base, L.src.size, 0}, name = {0};
    lt_tensor *t;
    lt_status st = onnx_tensor(&L, s, "tensor", &t, &name);
    lt_arena_free(&L.scratch);
    if (st) return st;
    if (name_out) {
        if (name.n && memchr(name.p, 0, name.n)) {
            lt_tensor_release(t);
            return lt_error(ctx, LT_ERR_INVALID, "<memory>: tensor name contains a NUL byte");
        }
        char *nm = lt_alloc(ctx, name.n + 1, "tensor name");
        if (!nm) {
            lt_tensor_release(t);
            return LT_ERR_NOMEM;
        }
        if (name.n) memcpy(nm, name.p, name.n);
        nm[name.n] = 0;
        *name_out = nm;
    }
    *out = t;
    return LT_OK;
}

lt_status lt_onnx_read_datum_file(lt_ctx *ctx, const char *path, const lt_type *expected, lt_datum **out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return lt_error(ctx, LT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return lt_error(ctx, LT_ERR_INVALID, "%s: not a regular file", path);
    }
    if (sb.st_size > (off_t)LT_TENSOR_MAX_BYTES) {
        close(fd);
        return lt_error(ctx, LT_ERR_INVALID, "%s: file of %lld bytes is too large", path, (long long)sb.st_size);
    }
    size_t size = (size_t)sb.st_size, got = 0;
    uint8_t *buf = lt_alloc(ctx, size ? size : 1, "test data file");
    if (!buf) {
        close(fd);
        return LT_ERR_NOMEM;
    }
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            close(fd);
            lt_mem_free(buf);
            return lt_error(ctx, LT_ERR_IO, "%s: read failed: %s", path, e ? strerror(e) : "file shrank while reading");
        }
        got += (size_t)r;
    }
    close(fd);
    lt_status st = decode_root(ctx, buf, size, path, expected, out);
    lt_mem_free(buf);
    return st;
}

/* ---- encoding ---- */
typedef struct obuf {
    uint8_t *p;
    size_t n, cap;
    bool failed;
} obuf;

static void ob_put(obuf *b, const void *d, size_t n) {
    if (b->failed) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) {
            if (cap > SIZE_MAX / 2) { b->failed = true; return; }
            cap *= 2;
        }
        uint8_t *p = lt_mem_realloc(b->p, cap);
        if (!p) { b->failed = true; return; }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void ob_varint(obuf *b, uint64_t v) {
    uint8_t t[10];
    int n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[n] |= 0x80;
        n++;
    } while (v);
    ob_put(b, t, (size_t)n);
}
static void ob_key(obuf *b, uint32_t field, int wt) { ob_varint(b, (uint64_t)field << 3 | (uint64_t)wt); }
static void ob_bytes(obuf *b, uint32_t field, const void *d, size_t n) {
    ob_key(b, field, LT_WT_LEN);
    ob_varint(b, n);
    ob_put(b, d, n);
}

lt_status lt_onnx_encode_tensor(lt_ctx *ctx, const lt_tensor *t, const char *name, uint8_t **data, size_t *size) {
    if (!lt_dtype_valid((int)t->dtype)) return lt_error(ctx, LT_ERR_INVALID, "cannot encode a tensor of type %d", (int)t->dtype);
    obuf b = {0};
    for (int i = 0; i < t->rank; i++) {
        ob_key(&b, 1, LT_WT_VARINT);
        ob_varint(&b, (uint64_t)t->dims[i]);
    }
    ob_key(&b, 2, LT_WT_VARINT);
    ob_varint(&b, (uint64_t)t->dtype);
    if (name) ob_bytes(&b, 8, name, strlen(name));
    const lt_dtype_info *di = lt_dtype_get(t->dtype);
    if (t->dtype == LT_STRING) {
        for (int64_t i = 0; i < t->numel; i++) {
            const char *s = ((char *const *)t->data)[i];
            ob_bytes(&b, 6, s, strlen(s));
        }
    } else if (di->wire_bits < 8) {
        int per = 8 / di->wire_bits;
        int64_t nb = wire_bytes(t->dtype, t->numel);
        uint8_t *packed = lt_mem_calloc((size_t)(nb ? nb : 1), 1);
        if (!packed) b.failed = true;
        else {
            uint8_t mask = (uint8_t)((1u << di->wire_bits) - 1);
            for (int64_t i = 0; i < t->numel; i++)
                packed[i / per] |= (uint8_t)((((const uint8_t *)t->data)[i] & mask) << ((i % per) * di->wire_bits));
            ob_bytes(&b, 9, packed, (size_t)nb);
            lt_mem_free(packed);
        }
    } else {
        ob_bytes(&b, 9, t->data, (size_t)lt_tensor_nbytes(t));
    }
    if (b.failed) {
        lt_mem_free(b.p);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (encoding a tensor)");
    }
    if (!b.p && !(b.p = lt_mem_alloc(1))) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (encoding a tensor)");
    *data = b.p;
    *size = b.n;
    return LT_OK;
}
