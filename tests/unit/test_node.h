/* test_node.h — a hand-built node for the op-family unit tests (tests/unit/test_ops_*.c): one node
 * with its input and output values made by hand (no graph, no model), attributes appended one by
 * one, and the op table's infer and eval hooks run on it directly; readers of the outputs and of
 * the inferred types; the out-of-memory sweep that fails every allocation of an eval in turn.
 * Header-only (static functions); includes test_util.h for CHECK and the failing allocator. */
#ifndef TEST_NODE_H
#define TEST_NODE_H

#include "test_util.h"

#include "interp/interp.h"
#include "ops/ops.h"

#define TN_MAXIO 9  /* inputs, and outputs, at most */
#define TN_MAXATTR 16

typedef struct tnode {
    lt_node node;
    lt_value vin[TN_MAXIO], vout[TN_MAXIO];
    lt_value *pin[TN_MAXIO], *pout[TN_MAXIO];
    lt_dim dims[TN_MAXIO][LT_MAX_RANK];
    lt_datum *in[TN_MAXIO], *out[TN_MAXIO];
    lt_attr attrs[TN_MAXATTR];
    lt_ctx ctx;
    lt_arena arena;
} tnode;

/* A node "t" of op (an op-table index) with n_out outputs named "y" and no inputs yet. */
static inline void tn_init(tnode *t, int op, const char *op_type, int opset, int n_out) {
    memset(t, 0, sizeof *t);
    lt_arena_init(&t->arena);
    t->node.name = "t";
    t->node.op_type = op_type;
    t->node.domain = "";
    t->node.op = op;
    t->node.opset = opset;
    t->node.in = t->pin;
    t->node.out = t->pout;
    t->node.attrs = t->attrs;
    t->node.n_out = n_out;
    for (int i = 0; i < n_out; i++) {
        t->vout[i].name = "y";
        t->pout[i] = &t->vout[i];
    }
}
/* The same with the op looked up by domain and name. */
static inline void tn_init_named(tnode *t, const char *domain, const char *op_type, int opset, int n_out) {
    tn_init(t, lt_op_lookup(domain, op_type), op_type, opset, n_out);
    t->node.domain = domain;
}

/* ---- inputs ---- */
/* Append an input tensor (values as doubles, or NULL: zeros); const_init: also an initializer. */
static inline lt_tensor *tn_input(tnode *t, lt_dtype dt, int rank, const int64_t *dims, const double *vals,
                                  bool const_init) {
    int i = t->node.n_in++;
    lt_tensor *x;
    if (lt_tensor_new(&t->ctx, dt, rank, dims, &x)) return NULL;
    for (int64_t k = 0; vals && k < x->numel; k++) lt_store_f64(x->data, dt, k, vals[k]);
    lt_datum_tensor(&t->ctx, x, &t->in[i]);
    for (int d = 0; d < rank; d++) t->dims[i][d] = (lt_dim){dims[d], NULL};
    t->vin[i].name = "x";
    lt_type_set_tensor(&t->vin[i].type, dt, rank, t->dims[i]);
    if (const_init) t->vin[i].init = x;
    else t->vin[i].is_input = true;
    t->pin[i] = &t->vin[i];
    return x;
}
/* A 1-D int64 input holding v[0..n) exactly. */
static inline void tn_ints_in(tnode *t, const int64_t *v, int64_t n, bool const_init) {
    lt_tensor *x = tn_input(t, LT_INT64, 1, &n, NULL, const_init);
    if (x && n) memcpy(x->data, v, (size_t)n * sizeof *v);
}
/* A string input holding strs[0..numel). */
static inline void tn_str_in(tnode *t, int rank, const int64_t *dims, const char *const *strs) {
    lt_tensor *x = tn_input(t, LT_STRING, rank, dims, NULL, false);
    for (int64_t k = 0; x && k < x->numel; k++) lt_tensor_set_string(&t->ctx, x, k, strs[k], strlen(strs[k]));
}
/* A 1-D uint8 input holding the bytes b[0..n). */
static inline lt_tensor *tn_bytes(tnode *t, const uint8_t *b, size_t n) {
    int64_t d[1] = {(int64_t)n};
    lt_tensor *x = tn_input(t, LT_UINT8, 1, d, NULL, false);
    if (x && n) memcpy(x->data, b, n);
    return x;
}
/* An omitted optional input. */
static inline void tn_skip_input(tnode *t) { t->node.n_in++; }

/* ---- attributes (arrays are referenced, not copied) ---- */
static inline lt_attr *tn_attr(tnode *t, const char *name, lt_attr_type ty) {
    if (t->node.n_attr >= TN_MAXATTR) abort(); /* a test bug, not a library one */
    lt_attr *a = &t->attrs[t->node.n_attr++];
    a->name = name;
    a->type = ty;
    return a;
}
static inline void tn_int(tnode *t, const char *name, int64_t v) { tn_attr(t, name, LT_AT_INT)->i = v; }
static inline void tn_float(tnode *t, const char *name, float v) { tn_attr(t, name, LT_AT_FLOAT)->f = v; }
static inline void tn_str(tnode *t, const char *name, const char *s) {
    lt_attr *a = tn_attr(t, name, LT_AT_STRING);
    a->s = s;
    a->s_len = (int64_t)strlen(s);
}
static inline void tn_ints(tnode *t, const char *name, int64_t *v, int n) {
    lt_attr *a = tn_attr(t, name, LT_AT_INTS);
    a->ints = v;
    a->n = n;
}
static inline void tn_floats(tnode *t, const char *name, float *v, int n) {
    lt_attr *a = tn_attr(t, name, LT_AT_FLOATS);
    a->floats = v;
    a->n = n;
}
static inline void tn_strs(tnode *t, const char *name, const char **v, int n) {
    lt_attr *a = tn_attr(t, name, LT_AT_STRINGS);
    a->strings = v;
    a->n = n;
}

/* ---- running the hooks (each clears the recorded error first) ---- */
static inline void tn_clear_out(tnode *t) {
    for (int i = 0; i < TN_MAXIO; i++) {
        lt_datum_release(t->out[i]);
        t->out[i] = NULL;
    }
}
static inline lt_status tn_eval(tnode *t) {
    lt_eval ev = {.ctx = &t->ctx, .rng = 1, .run_subgraph = lt_interp_subgraph};
    tn_clear_out(t);
    lt_ctx_clear(&t->ctx);
    return lt_op_hooks_get(t->node.op)->eval(&ev, &t->node, t->in, t->out);
}
static inline lt_status tn_infer(tnode *t) {
    lt_infer ic = {&t->ctx, &t->arena};
    lt_ctx_clear(&t->ctx);
    return lt_op_hooks_get(t->node.op)->infer(&ic, &t->node);
}
static inline void tn_free(tnode *t) {
    for (int i = 0; i < TN_MAXIO; i++) {
        lt_datum_release(t->in[i]);
        lt_datum_release(t->out[i]);
    }
    lt_arena_free(&t->arena);
}

/* ---- reading the results ---- */
static inline const lt_tensor *tn_out(tnode *t, int i) { return t->out[i] ? t->out[i]->tensor : NULL; }
static inline double outf(tnode *t, int i, int64_t k) { return lt_load_f64(tn_out(t, i)->data, tn_out(t, i)->dtype, k); }
static inline int64_t outi(tnode *t, int i, int64_t k) { return lt_load_i64(tn_out(t, i)->data, tn_out(t, i)->dtype, k); }
static inline const char *outs(tnode *t, int i, int64_t k) { return ((char *const *)tn_out(t, i)->data)[k]; }
static inline bool msg_has(tnode *t, const char *s) { return strstr(t->ctx.msg, s) != NULL; }
/* Output i exists with exactly this shape. */
static inline bool out_shape(tnode *t, int i, int rank, const int64_t *dims) {
    const lt_tensor *y = tn_out(t, i);
    if (!y || y->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (y->dims[d] != dims[d]) return false;
    return true;
}
/* Output i holds exactly v[0..n). */
static inline bool out_vals(tnode *t, int i, const double *v, int64_t n) {
    const lt_tensor *y = tn_out(t, i);
    if (!y || y->numel != n) return false;
    for (int64_t k = 0; k < n; k++)
        if (outf(t, i, k) != v[k]) return false;
    return true;
}
/* Inference gave output i a tensor type of this shape (-1: unknown dim). */
static inline bool infer_dims(tnode *t, int i, int rank, const int64_t *dims) {
    const lt_type *ty = &t->vout[i].type;
    if (ty->kind != LT_TK_TENSOR || ty->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if ((ty->dims ? ty->dims[d].value : -1) != dims[d]) return false;
    return true;
}

/* ---- out of memory ---- */
/* Every allocation of the eval fails in turn (up to 64): the op reports NOMEM, never crashes, and
 * eventually succeeds. */
static inline void oom_sweep(tnode *t) {
    bool ok = false;
    for (long n = 0; n < 64 && !ok; n++) {
        lt_ctx_clear(&t->ctx);
        test_alloc_fail_after(n);
        lt_status s = tn_eval(t);
        test_alloc_restore();
        CHECK(s == LT_OK || s == LT_ERR_NOMEM);
        ok = s == LT_OK;
    }
    CHECK(ok);
}

#endif
