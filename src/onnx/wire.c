/* wire.c — the bounded protobuf reader of wire.h: varints (at most 10 bytes, no overflow), fixed
 * 32/64-bit values, length-delimited values checked against the bytes left, nesting depth, packed and
 * unpacked repeated numerics, and error messages naming the file, the byte offset and the field. */
#include "wire.h"

#include <stdio.h>
#include <string.h>

void lt_wire_src_init(lt_wire_src *s, lt_ctx *ctx, const void *data, size_t size, const char *file, int max_depth) {
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->base = data ? data : (const uint8_t *)"";
    s->size = data ? size : 0;
    s->file = file ? file : "<memory>";
    s->max_depth = max_depth > 0 ? max_depth : 64;
}

void lt_wire_sub_at(lt_wire *w, lt_wire_src *s, const uint8_t *p, size_t n, int depth, const char *msg) {
    memset(w, 0, sizeof *w);
    w->src = s;
    w->p = w->start = p;
    w->end = p + n;
    w->depth = depth;
    w->msg = msg;
}

void lt_wire_root(lt_wire *w, lt_wire_src *s, const char *msg) { lt_wire_sub_at(w, s, s->base, s->size, 0, msg); }

/* ---- field names for messages ---- */
typedef struct field_name {
    const char *msg;
    uint32_t field;
    const char *name;
} field_name;

static const field_name g_fields[] = {
    {"ModelProto", 1, "ir_version"}, {"ModelProto", 2, "producer_name"}, {"ModelProto", 3, "producer_version"},
    {"ModelProto", 4, "domain"}, {"ModelProto", 5, "model_version"}, {"ModelProto", 6, "doc_string"},
    {"ModelProto", 7, "graph"}, {"ModelProto", 8, "opset_import"}, {"ModelProto", 14, "metadata_props"},
    {"ModelProto", 20, "training_info"}, {"ModelProto", 25, "functions"}, {"ModelProto", 26, "configuration"},
    {"GraphProto", 1, "node"}, {"GraphProto", 2, "name"}, {"GraphProto", 5, "initializer"},
    {"GraphProto", 10, "doc_string"}, {"GraphProto", 11, "input"}, {"GraphProto", 12, "output"},
    {"GraphProto", 13, "value_info"}, {"GraphProto", 14, "quantization_annotation"},
    {"GraphProto", 15, "sparse_initializer"}, {"GraphProto", 16, "metadata_props"},
    {"NodeProto", 1, "input"}, {"NodeProto", 2, "output"}, {"NodeProto", 3, "name"}, {"NodeProto", 4, "op_type"},
    {"NodeProto", 5, "attribute"}, {"NodeProto", 6, "doc_string"}, {"NodeProto", 7, "domain"},
    {"NodeProto", 8, "overload"}, {"NodeProto", 9, "metadata_props"}, {"NodeProto", 10, "device_configurations"},
    {"AttributeProto", 1, "name"}, {"AttributeProto", 2, "f"}, {"AttributeProto", 3, "i"}, {"AttributeProto", 4, "s"},
    {"AttributeProto", 5, "t"}, {"AttributeProto", 6, "g"}, {"AttributeProto", 7, "floats"},
    {"AttributeProto", 8, "ints"}, {"AttributeProto", 9, "strings"}, {"AttributeProto", 10, "tensors"},
    {"AttributeProto", 11, "graphs"}, {"AttributeProto", 13, "doc_string"}, {"AttributeProto", 14, "tp"},
    {"AttributeProto", 15, "type_protos"}, {"AttributeProto", 20, "type"}, {"AttributeProto", 21, "ref_attr_name"},
    {"AttributeProto", 22, "sparse_tensor"}, {"AttributeProto", 23, "sparse_tensors"},
    {"TensorProto", 1, "dims"}, {"TensorProto", 2, "data_type"}, {"TensorProto", 3, "segment"},
    {"TensorProto", 4, "float_data"}, {"TensorProto", 5, "int32_data"}, {"TensorProto", 6, "string_data"},
    {"TensorProto", 7, "int64_data"}, {"TensorProto", 8, "name"}, {"TensorProto", 9, "raw_data"},
    {"TensorProto", 10, "double_data"}, {"TensorProto", 11, "uint64_data"}, {"TensorProto", 12, "doc_string"},
    {"TensorProto", 13, "external_data"}, {"TensorProto", 14, "data_location"}, {"TensorProto", 16, "metadata_props"},
    {"StringStringEntryProto", 1, "key"}, {"StringStringEntryProto", 2, "value"},
    {"ValueInfoProto", 1, "name"}, {"ValueInfoProto", 2, "type"}, {"ValueInfoProto", 3, "doc_string"},
    {"TypeProto", 1, "tensor_type"}, {"TypeProto", 4, "sequence_type"}, {"TypeProto", 5, "map_type"},
    {"TypeProto", 6, "denotation"}, {"TypeProto", 7, "opaque_type"}, {"TypeProto", 8, "sparse_tensor_type"},
    {"TypeProto", 9, "optional_type"},
    {"TypeProto.Tensor", 1, "elem_type"}, {"TypeProto.Tensor", 2, "shape"},
    {"TypeProto.Sequence", 1, "elem_type"}, {"TypeProto.Optional", 1, "elem_type"},
    {"TypeProto.Map", 1, "key_type"}, {"TypeProto.Map", 2, "value_type"},
    {"TensorShapeProto", 1, "dim"}, {"TensorShapeProto.Dimension", 1, "dim_value"},
    {"TensorShapeProto.Dimension", 2, "dim_param"}, {"TensorShapeProto.Dimension", 3, "denotation"},
    {"OperatorSetIdProto", 1, "domain"}, {"OperatorSetIdProto", 2, "version"},
    {"SparseTensorProto", 1, "values"}, {"SparseTensorProto", 2, "indices"}, {"SparseTensorProto", 3, "dims"},
    {"FunctionProto", 1, "name"}, {"FunctionProto", 4, "input"}, {"FunctionProto", 5, "output"},
    {"FunctionProto", 6, "attribute"}, {"FunctionProto", 7, "node"}, {"FunctionProto", 8, "doc_string"},
    {"FunctionProto", 9, "opset_import"}, {"FunctionProto", 10, "domain"}, {"FunctionProto", 11, "attribute_proto"},
    {"FunctionProto", 12, "value_info"}, {"FunctionProto", 13, "overload"},
    {"SequenceProto", 1, "name"}, {"SequenceProto", 2, "elem_type"}, {"SequenceProto", 3, "tensor_values"},
    {"SequenceProto", 4, "sparse_tensor_values"}, {"SequenceProto", 5, "sequence_values"},
    {"SequenceProto", 6, "map_values"}, {"SequenceProto", 7, "optional_values"},
    {"OptionalProto", 1, "name"}, {"OptionalProto", 2, "elem_type"}, {"OptionalProto", 3, "tensor_value"},
    {"OptionalProto", 4, "sparse_tensor_value"}, {"OptionalProto", 5, "sequence_value"},
    {"OptionalProto", 6, "map_value"}, {"OptionalProto", 7, "optional_value"},
    {"MapProto", 1, "name"}, {"MapProto", 2, "key_type"}, {"MapProto", 3, "keys"}, {"MapProto", 4, "string_keys"},
    {"MapProto", 5, "values"},
};

const char *lt_wire_field_name(const char *msg, uint32_t field) {
    if (!msg) return NULL;
    for (size_t i = 0; i < sizeof g_fields / sizeof *g_fields; i++)
        if (g_fields[i].field == field && strcmp(g_fields[i].msg, msg) == 0) return g_fields[i].name;
    return NULL;
}

lt_status lt_wire_error(lt_wire *w, const uint8_t *at, lt_status s, const char *fmt, ...) {
    char text[LT_MSG_MAX / 2], where[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    const char *fname = w->field ? lt_wire_field_name(w->msg, w->field) : NULL;
    if (fname) snprintf(where, sizeof where, "%s.%s", w->msg, fname);
    else if (w->field) snprintf(where, sizeof where, "%s field %u", w->msg ? w->msg : "message", (unsigned)w->field);
    else snprintf(where, sizeof where, "%s", w->msg ? w->msg : "message");
    if (!at) at = w->p;
    w->src->failed = true;
    if (w->src->status == LT_OK) w->src->status = s;
    return lt_error(w->src->ctx, s, "%s: byte %zu: %s: %s", w->src->file, lt_wire_off(w, at), where, text);
}

/* ---- primitives ---- */
static bool read_varint(lt_wire *w, uint64_t *out) {
    const uint8_t *start = w->p;
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (w->p >= w->end) {
            w->src->truncated = !w->src->failed;
            lt_wire_error(w, start, LT_ERR_INVALID, "truncated varint (%zu bytes left)", (size_t)(w->end - start));
            return false;
        }
        uint8_t b = *w->p++;
        if (i == 9 && b > 1) {
            lt_wire_error(w, start, LT_ERR_INVALID, "varint overflows 64 bits");
            return false;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    lt_wire_error(w, start, LT_ERR_INVALID, "varint longer than 10 bytes");
    return false;
}

static bool need(lt_wire *w, size_t n, const char *what) {
    if ((size_t)(w->end - w->p) < n) {
        w->src->truncated = !w->src->failed;
        lt_wire_error(w, w->p, LT_ERR_INVALID, "truncated %s: needs %zu bytes, %zu left", what, n, (size_t)(w->end - w->p));
        return false;
    }
    return true;
}

static bool read_len(lt_wire *w, const uint8_t **p, size_t *n) {
    const uint8_t *at = w->p;
    uint64_t len;
    if (!read_varint(w, &len)) return false;
    if (len > (uint64_t)(w->end - w->p)) {
        w->src->truncated = !w->src->failed;
        lt_wire_error(w, at, LT_ERR_INVALID, "length %llu exceeds the %zu bytes left", (unsigned long long)len,
                      (size_t)(w->end - w->p));
        return false;
    }
    *p = w->p;
    *n = (size_t)len;
    w->p += len;
    return true;
}

bool lt_wire_skip(lt_wire *w) {
    if (w->src->failed) return false;
    if (!w->pending) return true;
    w->pending = false;
    switch (w->wt) {
    case LT_WT_VARINT: {
        uint64_t v;
        return read_varint(w, &v);
    }
    case LT_WT_I64:
        if (!need(w, 8, "fixed64")) return false;
        w->p += 8;
        return true;
    case LT_WT_I32:
        if (!need(w, 4, "fixed32")) return false;
        w->p += 4;
        return true;
    case LT_WT_LEN: {
        const uint8_t *p;
        size_t n;
        return read_len(w, &p, &n);
    }
    default:
        lt_wire_error(w, w->key_at, LT_ERR_INVALID, "unsupported wire type %d (groups are not used by ONNX)", w->wt);
        return false;
    }
}

bool lt_wire_next(lt_wire *w) {
    if (w->src->failed) return false;
    if (w->pending && !lt_wire_skip(w)) return false;
    if (w->p >= w->end) return false;
    w->key_at = w->p;
    uint64_t key;
    w->field = 0;
    if (!read_varint(w, &key)) return false;
    uint64_t field = key >> 3;
    w->wt = (int)(key & 7);
    if (field == 0 || field > 0x1fffffff) {
        lt_wire_error(w, w->key_at, LT_ERR_INVALID, "invalid field number %llu", (unsigned long long)field);
        return false;
    }
    w->field = (uint32_t)field;
    if (w->wt != LT_WT_VARINT && w->wt != LT_WT_I64 && w->wt != LT_WT_LEN && w->wt != LT_WT_I32) {
        lt_wire_error(w, w->key_at, LT_ERR_INVALID, "unsupported wire type %d", w->wt);
        return false;
    }
    w->pending = true;
    return true;
}

static const char *wt_name(int wt) {
    switch (wt) {
    case LT_WT_VARINT: return "varint";
    case LT_WT_I64: return "fixed64";
    case LT_WT_LEN: return "length-delimited";
    case LT_WT_I32: return "fixed32";
    default: return "group";
    }
}

static bool expect(lt_wire *w, int wt) {
    if (w->src->failed) return false;
    if (!w->pending) {
        lt_wire_error(w, w->key_at, LT_ERR_INTERNAL, "value read twice");
        return false;
    }
    if (w->wt != wt) {
        lt_wire_error(w, w->key_at, LT_ERR_INVALID, "wire type %s where %s was expected", wt_name(w->wt), wt_name(wt));
        return false;
    }
    w->pending = false;
    return true;
}

bool lt_wire_u64(lt_wire *w, uint64_t *v) { return expect(w, LT_WT_VARINT) && read_varint(w, v); }
bool lt_wire_i64(lt_wire *w, int64_t *v) {
    uint64_t u;
    if (!lt_wire_u64(w, &u)) return false;
    *v = (int64_t)u;
    return true;
}
bool lt_wire_i32(lt_wire *w, int32_t *v) {
    uint64_t u;
    if (!lt_wire_u64(w, &u)) return false;
    *v = (int32_t)(uint32_t)u;
    return true;
}

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

bool lt_wire_f32(lt_wire *w, float *v) {
    if (!expect(w, LT_WT_I32) || !need(w, 4, "fixed32")) return false;
    uint32_t u = le32(w->p);
    memcpy(v, &u, 4);
    w->p += 4;
    return true;
}
bool lt_wire_f64(lt_wire *w, double *v) {
    if (!expect(w, LT_WT_I64) || !need(w, 8, "fixed64")) return false;
    uint64_t u = le64(w->p);
    memcpy(v, &u, 8);
    w->p += 8;
    return true;
}
bool lt_wire_bytes(lt_wire *w, const uint8_t **p, size_t *n) { return expect(w, LT_WT_LEN) && read_len(w, p, n); }

bool lt_wire_msg(lt_wire *w, lt_wire *sub, const char *msg) {
    const uint8_t *at = w->key_at;
    const uint8_t *p;
    size_t n;
    if (!lt_wire_bytes(w, &p, &n)) return false;
    if (w->depth + 1 > w->src->max_depth) {
        lt_wire_error(w, at, LT_ERR_INVALID, "messages nested deeper than the limit of %d", w->src->max_depth);
        return false;
    }
    lt_wire_sub_at(sub, w->src, p, n, w->depth + 1, msg);
    return true;
}

/* ---- repeated numerics ---- */
static bool room(lt_wire *w, int64_t n, int64_t add, int64_t cap) {
    if (add > cap - n) {
        lt_wire_error(w, w->key_at, LT_ERR_INTERNAL, "repeated field grew between passes (%lld > %lld)",
                      (long long)(n + add), (long long)cap);
        return false;
    }
    return true;
}

bool lt_wire_rep_varint(lt_wire *w, uint64_t *dst, int64_t cap, int64_t *n) {
    if (w->src->failed) return false;
    if (w->wt == LT_WT_VARINT) {
        uint64_t v;
        if (!lt_wire_u64(w, &v)) return false;
        if (dst) {
            if (!room(w, *n, 1, cap)) return false;
            dst[*n] = v;
        }
        (*n)++;
        return true;
    }
    const uint8_t *p;
    size_t len;
    if (!lt_wire_bytes(w, &p, &len)) return false;
    if (!dst) { /* count the terminating bytes; the last one must terminate */
        int64_t c = 0;
        for (size_t i = 0; i < len; i++) c += !(p[i] & 0x80);
        if (len && (p[len - 1] & 0x80)) {
            lt_wire_error(w, p + len - 1, LT_ERR_INVALID, "truncated varint in a packed field");
            return false;
        }
        *n += c;
        return true;
    }
    lt_wire sub;
    lt_wire_sub_at(&sub, w->src, p, len, w->depth, w->msg);
    sub.field = w->field;
    while (sub.p < sub.end) {
        uint64_t v;
        if (!read_varint(&sub, &v)) return false;
        if (!room(w, *n, 1, cap)) return false;
        dst[(*n)++] = v;
    }
    return true;
}

static bool rep_fixed(lt_wire *w, int size, void *dst, int64_t cap, int64_t *n) {
    if (w->src->failed) return false;
    int wt = size == 4 ? LT_WT_I32 : LT_WT_I64;
    if (w->wt == wt) {
        if (!expect(w, wt) || !need(w, (size_t)size, size == 4 ? "fixed32" : "fixed64")) return false;
        if (dst) {
            if (!room(w, *n, 1, cap)) return false;
            if (size == 4) ((uint32_t *)dst)[*n] = le32(w->p);
            else ((uint64_t *)dst)[*n] = le64(w->p);
        }
        w->p += size;
        (*n)++;
        return true;
    }
    const uint8_t *p;
    size_t len;
    if (!lt_wire_bytes(w, &p, &len)) return false;
    if (len % (size_t)size) {
        lt_wire_error(w, w->key_at, LT_ERR_INVALID, "packed %d-byte values: length %zu is not a multiple of %d", size,
                      len, size);
        return false;
    }
    int64_t c = (int64_t)(len / (size_t)size);
    if (dst) {
        if (!room(w, *n, c, cap)) return false;
        for (int64_t i = 0; i < c; i++) {
            if (size == 4) ((uint32_t *)dst)[*n + i] = le32(p + i * 4);
            else ((uint64_t *)dst)[*n + i] = le64(p + i * 8);
        }
    }
    *n += c;
    return true;
}

bool lt_wire_rep_fixed32(lt_wire *w, uint32_t *dst, int64_t cap, int64_t *n) { return rep_fixed(w, 4, dst, cap, n); }
bool lt_wire_rep_fixed64(lt_wire *w, uint64_t *dst, int64_t cap, int64_t *n) { return rep_fixed(w, 8, dst, cap, n); }
