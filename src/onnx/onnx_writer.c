/* onnx_writer.c — a small protobuf encoder for ONNX ModelProto (see onnx_writer.h).
 *
 * Messages are built inside out: each submessage is encoded into its own growable buffer, then
 * appended to its parent as a length-delimited field. Repeated scalars are written unpacked (the
 * proto2 default of onnx.proto; every reader accepts it). Field numbers follow onnx.proto:
 *   ModelProto     1 ir_version, 2 producer_name, 3 producer_version, 7 graph, 8 opset_import
 *   GraphProto     1 node, 2 name, 5 initializer, 11 input, 12 output, 13 value_info
 *   NodeProto      1 input, 2 output, 3 name, 4 op_type, 5 attribute, 7 domain
 *   AttributeProto 1 name, 2 f, 3 i, 4 s, 5 t, 6 g, 7 floats, 8 ints, 9 strings, 10 tensors,
 *                  11 graphs, 14 tp, 15 type_protos, 20 type, 22 sparse_tensor, 23 sparse_tensors
 *   ValueInfoProto 1 name, 2 type;  TypeProto 1 tensor_type, 4 sequence_type, 5 map_type,
 *                  8 sparse_tensor_type, 9 optional_type;  TensorShapeProto.Dimension 1 value, 2 param
 *   SparseTensorProto 1 values, 2 indices (linearized, [NNZ]), 3 dims
 * An omitted optional node input or output is written as the empty name "". Outer-scope
 * references of subgraphs are plain names. Initializers are the graph's values that hold a tensor
 * and have no producer.
 */
#include "onnx_writer.h"

#include <string.h>

#include "../base/file.h"
#include "onnx.h"

#ifndef LATHE_VERSION
#define LATHE_VERSION "0.0.0"
#endif

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wbuf;

static void wb_put(wbuf *b, const void *src, size_t n) {
    if (b->oom || !n) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) {
            if (cap > SIZE_MAX / 2) { b->oom = true; return; }
            cap *= 2;
        }
        uint8_t *np = lt_mem_realloc(b->p, cap);
        if (!np) { b->oom = true; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void wb_varint(wbuf *b, uint64_t v) {
    uint8_t tmp[10];
    int k = 0;
    do {
        tmp[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) tmp[k] |= 0x80;
        k++;
    } while (v);
    wb_put(b, tmp, (size_t)k);
}

static void wb_key(wbuf *b, int field, int wt) { wb_varint(b, (uint64_t)field << 3 | (uint64_t)wt); }
static void wb_int(wbuf *b, int field, int64_t v) { wb_key(b, field, 0); wb_varint(b, (uint64_t)v); }
static void wb_bytes(wbuf *b, int field, const void *s, size_t n) {
    wb_key(b, field, 2);
    wb_varint(b, n);
    wb_put(b, s, n);
}
static void wb_str(wbuf *b, int field, const char *s) { wb_bytes(b, field, s ? s : "", s ? strlen(s) : 0); }
static void wb_float(wbuf *b, int field, float f) {
    wb_key(b, field, 5);
    uint8_t t[4];
    uint32_t u;
    memcpy(&u, &f, 4);
    for (int i = 0; i < 4; i++) t[i] = (uint8_t)(u >> (8 * i));
    wb_put(b, t, 4);
}
/* Append sub as a length-delimited field and free it. */
static void wb_msg(wbuf *b, int field, wbuf *sub) {
    if (sub->oom) b->oom = true;
    wb_bytes(b, field, sub->p, sub->n);
    lt_mem_free(sub->p);
    *sub = (wbuf){0};
}

typedef struct wctx {
    lt_ctx *ctx;
    lt_status status;
} wctx;

static void fail(wctx *w, lt_status s) {
    if (w->status == LT_OK) w->status = s;
}

/* ---- tensors and types ---- */

static void put_tensor(wctx *w, wbuf *b, int field, const lt_tensor *t, const char *name) {
    uint8_t *data = NULL;
    size_t size = 0;
    if (lt_onnx_encode_tensor(w->ctx, t, name, &data, &size) != LT_OK) {
        fail(w, w->ctx->status);
        return;
    }
    wb_bytes(b, field, data, size);
    lt_mem_free(data);
}

static void put_sparse(wctx *w, wbuf *b, int field, const lt_tensor *t) {
    /* dense -> sparse: the nonzero elements and their linearized indices */
    const lt_dtype_info *di = lt_dtype_get(t->dtype);
    int64_t esz = di->size, nnz = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        const uint8_t *e = (const uint8_t *)t->data + i * esz;
        for (int64_t k = 0; k < esz; k++)
            if (e[k]) { nnz++; break; }
    }
    lt_tensor *vals = NULL, *idx = NULL;
    if (lt_tensor_new(w->ctx, t->dtype, 1, &nnz, &vals) != LT_OK || lt_tensor_new(w->ctx, LT_INT64, 1, &nnz, &idx) != LT_OK) {
        fail(w, w->ctx->status);
        lt_tensor_release(vals);
        return;
    }
    int64_t j = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        const uint8_t *e = (const uint8_t *)t->data + i * esz;
        bool nz = false;
        for (int64_t k = 0; k < esz && !nz; k++) nz = e[k] != 0;
        if (!nz) continue;
        memcpy((uint8_t *)vals->data + j * esz, e, (size_t)esz);
        ((int64_t *)idx->data)[j++] = i;
    }
    wbuf sp = {0};
    put_tensor(w, &sp, 1, vals, NULL);
    put_tensor(w, &sp, 2, idx, NULL);
    for (int i = 0; i < t->rank; i++) wb_int(&sp, 3, t->dims[i]);
    wb_msg(b, field, &sp);
    lt_tensor_release(vals);
    lt_tensor_release(idx);
}

static void put_type(wctx *w, wbuf *b, int field, const lt_type *t);

static void put_shape(wbuf *b, int field, const lt_type *t) {
    if (t->rank < 0) return;
    wbuf sh = {0};
    for (int i = 0; i < t->rank; i++) {
        wbuf d = {0};
        if (t->dims && t->dims[i].value >= 0) wb_int(&d, 1, t->dims[i].value);
        else if (t->dims && t->dims[i].param && t->dims[i].param[0]) wb_str(&d, 2, t->dims[i].param);
        wb_msg(&sh, 1, &d);
    }
    wb_msg(b, field, &sh);
}

static void put_type(wctx *w, wbuf *b, int field, const lt_type *t) {
    wbuf tp = {0}, inner = {0};
    switch (t->kind) {
    case LT_TK_TENSOR:
    case LT_TK_SPARSE_TENSOR:
        if (t->dtype != LT_UNDEFINED) wb_int(&inner, 1, t->dtype);
        put_shape(&inner, 2, t);
        wb_msg(&tp, t->kind == LT_TK_TENSOR ? 1 : 8, &inner);
        break;
    case LT_TK_SEQUENCE:
    case LT_TK_OPTIONAL:
        if (t->elem) put_type(w, &inner, 1, t->elem);
        wb_msg(&tp, t->kind == LT_TK_SEQUENCE ? 4 : 9, &inner);
        break;
    case LT_TK_MAP:
        wb_int(&inner, 1, t->dtype);
        if (t->elem) put_type(w, &inner, 2, t->elem);
        wb_msg(&tp, 5, &inner);
        break;
    case LT_TK_UNKNOWN: break;
    }
    wb_msg(b, field, &tp);
}

static void put_value_info(wctx *w, wbuf *b, int field, const lt_value *v) {
    wbuf vi = {0};
    wb_str(&vi, 1, v->name);
    if (v->type.kind != LT_TK_UNKNOWN) put_type(w, &vi, 2, &v->type);
    wb_msg(b, field, &vi);
}

/* ---- graphs ---- */

static void put_graph(wctx *w, wbuf *b, int field, const lt_graph *g);

static void put_attr(wctx *w, wbuf *b, const lt_attr *a) {
    wbuf at = {0};
    wb_str(&at, 1, a->name);
    switch (a->type) {
    case LT_AT_FLOAT: wb_float(&at, 2, a->f); break;
    case LT_AT_INT: wb_int(&at, 3, a->i); break;
    case LT_AT_STRING: wb_bytes(&at, 4, a->s ? a->s : "", a->s ? (size_t)a->s_len : 0); break;
    case LT_AT_TENSOR: if (a->t) put_tensor(w, &at, 5, a->t, NULL); break;
    case LT_AT_GRAPH: if (a->g) put_graph(w, &at, 6, a->g); break;
    case LT_AT_FLOATS: for (int i = 0; i < a->n; i++) wb_float(&at, 7, a->floats[i]); break;
    case LT_AT_INTS: for (int i = 0; i < a->n; i++) wb_int(&at, 8, a->ints[i]); break;
    case LT_AT_STRINGS:
        for (int i = 0; i < a->n; i++)
            wb_bytes(&at, 9, a->strings[i], a->string_lens ? (size_t)a->string_lens[i] : strlen(a->strings[i]));
        break;
    case LT_AT_TENSORS: for (int i = 0; i < a->n; i++) put_tensor(w, &at, 10, a->tensors[i], NULL); break;
    case LT_AT_GRAPHS: for (int i = 0; i < a->n; i++) put_graph(w, &at, 11, a->graphs[i]); break;
    case LT_AT_SPARSE_TENSOR: if (a->t) put_sparse(w, &at, 22, a->t); break;
    case LT_AT_SPARSE_TENSORS: for (int i = 0; i < a->n; i++) put_sparse(w, &at, 23, a->tensors[i]); break;
    case LT_AT_TYPE_PROTO: if (a->tp) put_type(w, &at, 14, a->tp); break;
    case LT_AT_TYPE_PROTOS: for (int i = 0; i < a->n; i++) put_type(w, &at, 15, a->tps[i]); break;
    case LT_AT_UNDEFINED: break;
    }
    wb_int(&at, 20, a->type);
    wb_msg(b, 5, &at);
}

static void put_node(wctx *w, wbuf *b, const lt_node *n) {
    wbuf nb = {0};
    /* trailing omitted inputs / outputs are dropped, inner ones written as "" */
    int n_in = n->n_in, n_out = n->n_out;
    while (n_in > 0 && !n->in[n_in - 1]) n_in--;
    while (n_out > 0 && !n->out[n_out - 1]) n_out--;
    for (int i = 0; i < n_in; i++) wb_str(&nb, 1, n->in[i] ? n->in[i]->name : "");
    for (int i = 0; i < n_out; i++) wb_str(&nb, 2, n->out[i] ? n->out[i]->name : "");
    if (n->name && *n->name) wb_str(&nb, 3, n->name);
    wb_str(&nb, 4, n->op_type);
    for (int i = 0; i < n->n_attr; i++) put_attr(w, &nb, &n->attrs[i]);
    if (n->domain && *n->domain) wb_str(&nb, 7, n->domain);
    wb_msg(b, 1, &nb);
}

static void put_graph(wctx *w, wbuf *b, int field, const lt_graph *g) {
    wbuf gb = {0};
    for (int i = 0; i < g->n_nodes; i++) put_node(w, &gb, g->nodes[i]);
    wb_str(&gb, 2, g->name && *g->name ? g->name : "lathe");
    for (int i = 0; i < g->n_values; i++) {
        const lt_value *v = g->values[i];
        if (v->init && !v->producer && !v->outer) put_tensor(w, &gb, 5, v->init, v->name);
    }
    for (int i = 0; i < g->n_inputs; i++) put_value_info(w, &gb, 11, g->inputs[i]);
    for (int i = 0; i < g->n_outputs; i++) put_value_info(w, &gb, 12, g->outputs[i]);
    for (int i = 0; i < g->n_values; i++) {
        const lt_value *v = g->values[i];
        if (!v->producer || v->is_output || v->outer || v->type.kind == LT_TK_UNKNOWN) continue;
        bool listed = false;
        for (int k = 0; k < g->n_outputs && !listed; k++) listed = g->outputs[k] == v;
        if (!listed) put_value_info(w, &gb, 13, v);
    }
    wb_msg(b, field, &gb);
}

lt_status lt_onnx_write_model(lt_ctx *ctx, const lt_model *m, uint8_t **data, size_t *size) {
    wctx w = {ctx, LT_OK};
    wbuf b = {0};
    wb_int(&b, 1, m->ir_version < 4 ? 4 : m->ir_version);
    wb_str(&b, 2, "lathe");
    wb_str(&b, 3, LATHE_VERSION);
    put_graph(&w, &b, 7, m->graph);
    for (int i = 0; i < m->n_opsets; i++) {
        wbuf os = {0};
        const char *d = m->opsets[i].domain;
        if (d && *d && strcmp(d, "ai.onnx") != 0) wb_str(&os, 1, d);
        wb_int(&os, 2, m->opsets[i].version);
        wb_msg(&b, 8, &os);
    }
    if (w.status == LT_OK && b.oom) w.status = lt_error(ctx, LT_ERR_NOMEM, "out of memory writing the ONNX model");
    if (w.status != LT_OK) {
        lt_mem_free(b.p);
        return w.status;
    }
    *data = b.p;
    *size = b.n;
    return LT_OK;
}

lt_status lt_onnx_write_model_file(lt_ctx *ctx, const lt_model *m, const char *path) {
    uint8_t *data = NULL;
    size_t size = 0;
    LT_TRY(lt_onnx_write_model(ctx, m, &data, &size));
    lt_status s = lt_io_write_file_atomic(ctx, path, data, size);
    lt_mem_free(data);
    return s;
}
