/* lower.c — lowering of one kernel group to a Loop IR kernel (lt_lower_group) and the helpers the
 * per-op hooks share (lower_impl.h): reading values as expressions (inlining producers of the same
 * group, LOADs with numpy broadcasting otherwise), storing outputs through the fused epilogue,
 * loop nests, constants, dtype conversion, and the hook table.
 *
 * Pure elementwise/broadcast groups are lowered over a COALESCED view of the output: adjacent output
 * dims merge when every value read from memory is either full or broadcast (size 1) along both, so
 * `x + y` on equal shapes is one flat loop and a bias add over [N, C] is two. The view changes only
 * the multi-index the hooks see (lc->view); flat offsets are the same as in the original shapes.
 */
#include "lower_impl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the hook table ---- */

const lt_lower_reg *lt_lower_reg_get(int op) {
    static const lt_lower_reg *const tables[] = {lt_lower_elementwise, lt_lower_injective, lt_lower_reduce,
                                                 lt_lower_gemm_ops, lt_lower_nn, lt_lower_nchwc,
                                                 lt_lower_scatter, lt_lower_scan, lt_lower_select,
                                                 lt_lower_nms, lt_lower_unique};
    if (op <= 0) return NULL;
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const lt_lower_reg *r = tables[t]; r->op; r++)
            if (r->op == op) return r;
    return NULL;
}

bool lt_lower_reads_input(const lt_node *n, int i) {
    const lt_lower_reg *r = lt_lower_reg_get(n->op);
    if (i >= n->n_in || !n->in[i]) return false;
    if (!r || i >= 32) return true;
    return !((r->const_inputs | r->unused_inputs) >> i & 1u);
}

bool lt_lower_is_view(const lt_node *n) {
    return n->op == LT_OP_Reshape || n->op == LT_OP_Flatten || n->op == LT_OP_Squeeze || n->op == LT_OP_Unsqueeze;
}

const lt_value *lt_lower_mem_value(lt_lctx *lc, const lt_value *v) {
    while (v && !lc->vbuf[v->id]) {
        if (!lc->in_group[v->id] || !v->producer || !lt_lower_is_view(v->producer)) return NULL;
        v = v->producer->in[0];
    }
    return v;
}

/* ---- shapes, constants, dtypes ---- */

bool lt_lower_shape(const lt_value *v, int *rank, int64_t *dims) {
    if (!v || v->type.kind != LT_TK_TENSOR || v->type.rank < 0 || v->type.rank > LT_MAX_RANK) return false;
    for (int i = 0; i < v->type.rank; i++) {
        if (v->type.dims[i].value < 0) return false;
        dims[i] = v->type.dims[i].value;
    }
    *rank = v->type.rank;
    return true;
}

int64_t lt_lower_numel(const lt_value *v) {
    int r;
    int64_t d[LT_MAX_RANK], n;
    if (!lt_lower_shape(v, &r, d) || !lt_prod_i64(d, r, &n)) return -1;
    return n;
}

const lt_tensor *lt_lower_const(const lt_value *v) {
    if (!v) return NULL;
    while (v->outer && !v->init) v = v->outer;
    if (v->is_input) return NULL;
    if (v->init) return v->init;
    if (v->producer && v->producer->op == LT_OP_Constant) return lt_attr_tensor(v->producer, "value");
    return NULL;
}

static bool tensor_int_at(const lt_tensor *t, int64_t i, int64_t *out) {
    switch (t->dtype) {
    case LT_INT64: *out = ((const int64_t *)t->data)[i]; return true;
    case LT_INT32: *out = ((const int32_t *)t->data)[i]; return true;
    case LT_INT16: *out = ((const int16_t *)t->data)[i]; return true;
    case LT_INT8: *out = ((const int8_t *)t->data)[i]; return true;
    case LT_UINT8: *out = ((const uint8_t *)t->data)[i]; return true;
    case LT_UINT16: *out = ((const uint16_t *)t->data)[i]; return true;
    case LT_UINT32: *out = ((const uint32_t *)t->data)[i]; return true;
    case LT_BOOL: *out = ((const uint8_t *)t->data)[i] != 0; return true;
    default: return false;
    }
}

int lt_lower_const_ints(const lt_node *n, int i, int64_t *buf, int max) {
    if (i >= n->n_in || !n->in[i]) return -1;
    const lt_tensor *t = lt_lower_const(n->in[i]);
    if (!t || t->numel > max) return -1;
    for (int64_t j = 0; j < t->numel; j++)
        if (!tensor_int_at(t, j, &buf[j])) return -1;
    return (int)t->numel;
}

static bool tensor_double_at(const lt_tensor *t, int64_t i, double *out) {
    int64_t iv;
    switch (t->dtype) {
    case LT_FLOAT: *out = ((const float *)t->data)[i]; return true;
    case LT_DOUBLE: *out = ((const double *)t->data)[i]; return true;
    default:
        if (!tensor_int_at(t, i, &iv)) return false;
        *out = (double)iv;
        return true;
    }
}

bool lt_lower_is_imm(const lt_value *v) {
    const lt_tensor *t = lt_lower_const(v);
    double d;
    return t && t->numel == 1 && t->dtype != LT_UINT64 && tensor_double_at(t, 0, &d);
}

bool lt_lower_dtype_ok(lt_dtype dt) {
    switch (dt) {
    case LT_FLOAT: case LT_DOUBLE: case LT_FLOAT16: case LT_BFLOAT16:
    case LT_INT8: case LT_INT16: case LT_INT32: case LT_INT64:
    case LT_UINT8: case LT_UINT16: case LT_UINT32: case LT_UINT64: case LT_BOOL:
        return true;
    default: return false;
    }
}

static bool accept_types(const lt_node *n, char *why, size_t size, bool floats_only) {
    for (int pass = 0; pass < 2; pass++) {
        int cnt = pass ? n->n_out : n->n_in;
        lt_value *const *vs = pass ? n->out : n->in;
        for (int i = 0; i < cnt; i++) {
            if (!vs[i]) continue;
            lt_dtype dt = vs[i]->type.dtype;
            bool ok = floats_only ? (dt == LT_FLOAT || dt == LT_DOUBLE || dt == LT_FLOAT16 || dt == LT_BFLOAT16)
                                  : lt_lower_dtype_ok(dt);
            if (!ok) {
                snprintf(why, size, "%s %d '%s' has dtype %s", pass ? "output" : "input", i, vs[i]->name,
                         lt_dtype_name(dt));
                return false;
            }
        }
    }
    return true;
}

bool lt_lower_accept_default(const lt_node *n, char *why, size_t why_size) {
    return accept_types(n, why, why_size, false);
}

bool lt_lower_accept_float(const lt_node *n, char *why, size_t why_size) {
    return accept_types(n, why, why_size, true);
}

lt_dtype lt_lower_cdtype(lt_dtype dt) { return dt == LT_FLOAT16 || dt == LT_BFLOAT16 ? LT_FLOAT : dt; }

lt_lnode *lt_lower_conv(lt_lctx *lc, lt_lnode *e, lt_dtype dt) {
    if (!e) return NULL;
    lt_dtype c = lt_lower_cdtype(dt);
    return e->dtype == c ? e : lt_l_cast(lc->k, c, e);
}

/* Storage conversion: compute value e into a buffer of dtype dt. */
static lt_lnode *to_storage(lt_lctx *lc, lt_lnode *e, lt_dtype dt) {
    if (!e) return NULL;
    return e->dtype == dt ? e : lt_l_cast(lc->k, dt, e);
}

lt_lnode *lt_lower_imm(lt_lctx *lc, lt_dtype dt, double v) {
    dt = lt_lower_cdtype(dt);
    if (lt_dtype_is_float(dt)) return lt_l_float(lc->k, dt, v);
    lt_lnode *x = lt_l_int(lc->k, (int64_t)v);
    if (x) x->dtype = dt;
    return x;
}

static lt_lnode *int_imm(lt_lctx *lc, lt_dtype dt, int64_t v) {
    lt_lnode *x = lt_l_int(lc->k, v);
    if (x) x->dtype = dt;
    return x;
}

lt_lnode *lt_lower_lowest(lt_lctx *lc, lt_dtype dt) {
    dt = lt_lower_cdtype(dt);
    switch (dt) {
    case LT_FLOAT: case LT_DOUBLE: return lt_l_float(lc->k, dt, -INFINITY);
    case LT_INT8: return int_imm(lc, dt, INT8_MIN);
    case LT_INT16: return int_imm(lc, dt, INT16_MIN);
    case LT_INT32: return int_imm(lc, dt, INT32_MIN);
    case LT_INT64: return int_imm(lc, dt, INT64_MIN);
    default: return int_imm(lc, dt, 0);
    }
}

lt_lnode *lt_lower_highest(lt_lctx *lc, lt_dtype dt) {
    dt = lt_lower_cdtype(dt);
    switch (dt) {
    case LT_FLOAT: case LT_DOUBLE: return lt_l_float(lc->k, dt, INFINITY);
    case LT_INT8: return int_imm(lc, dt, INT8_MAX);
    case LT_INT16: return int_imm(lc, dt, INT16_MAX);
    case LT_INT32: return int_imm(lc, dt, INT32_MAX);
    case LT_INT64: return int_imm(lc, dt, INT64_MAX);
    case LT_UINT8: return int_imm(lc, dt, UINT8_MAX);
    case LT_UINT16: return int_imm(lc, dt, UINT16_MAX);
    case LT_UINT32: return int_imm(lc, dt, UINT32_MAX);
    case LT_UINT64: return int_imm(lc, dt, -1); /* all ones */
    case LT_BOOL: return int_imm(lc, dt, 1);
    default: return int_imm(lc, dt, 0);
    }
}

/* ---- errors ---- */

lt_status lt_lower_error(lt_lctx *lc, const lt_node *n, lt_status s, const char *fmt, ...) {
    char msg[1024], label[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n) lt_node_label(n, label, sizeof label);
    return lt_error(lc->ctx, s, "lowering group g%d: %s%s%s", lc->g ? lc->g->id : -1, n ? label : "",
                    n ? ": " : "", msg);
}

lt_status lt_lower_nomem(lt_lctx *lc) {
    return lt_error(lc->ctx, LT_ERR_NOMEM, "lowering group g%d: out of memory", lc->g ? lc->g->id : -1);
}

/* ---- the coalesced view ---- */

/* Shape of v as the hooks see it: the coalesced view when one is active, else its own shape. */
bool lt_lower_vshape(lt_lctx *lc, const lt_value *v, int *rank, int64_t *dims) {
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_shape(v, &r, d)) return false;
    if (!lc->view) {
        *rank = r;
        memcpy(dims, d, sizeof(int64_t) * (size_t)r);
        return true;
    }
    /* align right to the full output rank, then multiply within each view group */
    int fr = lc->view_full_rank;
    int64_t full[LT_MAX_RANK];
    for (int i = 0; i < fr; i++) full[i] = i < fr - r ? 1 : d[i - (fr - r)];
    for (int gi = 0; gi < lc->view_rank; gi++) {
        int64_t p = 1;
        for (int i = lc->view_start[gi]; i < lc->view_start[gi + 1]; i++) p *= full[i];
        dims[gi] = p;
    }
    *rank = lc->view_rank;
    return true;
}

/* Can output dims [a, b] (inclusive) of a pure elementwise group form one view dim? Every LOADed
 * value (aligned right) must be, over the dims of size > 1, either all full or all broadcast. */
static bool view_merge_ok(const lt_group *g, int fr, const int64_t *od, int a, int b) {
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        int r;
        int64_t d[LT_MAX_RANK];
        if (!lt_lower_shape(v, &r, d) || r > fr) return false;
        bool full = false, bcast = false;
        for (int q = a; q <= b; q++) {
            if (od[q] == 1) continue; /* neutral */
            int64_t dq = q < fr - r ? 1 : d[q - (fr - r)];
            if (dq == od[q]) full = true;
            else if (dq == 1) bcast = true;
            else return false;
        }
        if (full && bcast) return false;
    }
    return true;
}

static void setup_view(lt_lctx *lc) {
    const lt_group *g = lc->g;
    if (g->pattern != LT_PK_ELEMWISE && g->pattern != LT_PK_BROADCAST) return;
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_lower_reg *r = lt_lower_reg_get(g->nodes[i]->op);
        if (r && (r->flags & LT_LF_NO_VIEW)) return;
    }
    /* all outputs must share one shape; intermediate values have it too (fusion never inlines a
     * smaller producer into a broadcasting consumer) */
    int fr;
    int64_t od[LT_MAX_RANK];
    if (!lt_lower_shape(g->outputs[0], &fr, od)) return;
    for (int i = 1; i < g->n_outputs; i++) {
        int r;
        int64_t d[LT_MAX_RANK];
        if (!lt_lower_shape(g->outputs[i], &r, d) || r != fr || memcmp(d, od, sizeof(int64_t) * (size_t)r)) return;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i]->n_out; j++) {
            const lt_value *v = g->nodes[i]->out[j];
            if (v && lt_lower_numel(v) != lt_lower_numel(g->outputs[0])) return;
        }
    if (fr == 0) return;
    int vr = 0;
    lc->view_start[vr++] = 0;
    for (int i = 1; i < fr; i++) {
        /* merge dim i into the current group if it can merge with the previous dim */
        if (!view_merge_ok(g, fr, od, lc->view_start[vr - 1], i)) lc->view_start[vr++] = i;
    }
    lc->view_start[vr] = fr;
    lc->view_rank = vr;
    lc->view_full_rank = fr;
    lc->view = true;
}

/* ---- reading values ---- */

lt_lnode *lt_lower_flat(lt_lctx *lc, int rank, const int64_t *dims, lt_lnode *const *idx) {
    lt_lnode *off = lt_l_int(lc->k, 0);
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        if (dims[d] != 1) off = lt_l_add(lc->k, off, stride == 1 ? idx[d] : lt_l_mul(lc->k, idx[d], lt_l_int(lc->k, stride)));
        /* lowered values have element counts inference checked to fit int64; the stride past the
         * outermost dim is never used, so it may not fit */
        if (d > 0 && !lt_mul_i64(stride, dims[d], &stride)) return NULL;
    }
    return off;
}

lt_lnode *lt_lower_strided(lt_lctx *lc, const lt_sview *v, lt_lnode *const *idx) {
    lt_lnode *off = lt_l_int(lc->k, 0);
    for (int d = v->rank - 1; d >= 0; d--)
        if (v->dims[d] != 1)
            off = lt_l_add(lc->k, off, v->st[d] == 1 ? idx[d] : lt_l_mul(lc->k, idx[d], lt_l_int(lc->k, v->st[d])));
    return off;
}

lt_status lt_lower_unflat(lt_lctx *lc, lt_lnode *flat, int rank, const int64_t *dims, lt_lnode **idx) {
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        lt_lnode *q = stride == 1 ? flat : lt_l_binary(lc->k, LT_LOP_DIV, flat, lt_l_int(lc->k, stride));
        idx[d] = d == 0 ? q : lt_l_binary(lc->k, LT_LOP_MOD, q, lt_l_int(lc->k, dims[d]));
        if (!idx[d]) return lt_lower_nomem(lc);
        stride *= dims[d];
    }
    return LT_OK;
}

static lt_lnode *imm_of_const(lt_lctx *lc, const lt_value *v) {
    const lt_tensor *t = lt_lower_const(v);
    lt_dtype cd = lt_lower_cdtype(v->type.dtype);
    if (lt_dtype_is_float(cd)) {
        double d = 0;
        if (t->dtype == LT_FLOAT16 || t->dtype == LT_BFLOAT16 || !tensor_double_at(t, 0, &d)) return NULL;
        return lt_l_float(lc->k, cd, d);
    }
    int64_t iv = 0;
    if (!tensor_int_at(t, 0, &iv)) return NULL;
    return int_imm(lc, cd, iv);
}

lt_status lt_lower_value(lt_lctx *lc, const lt_value *v, lt_lnode *const *idx, lt_lnode **res) {
    if (v == lc->ov) {
        *res = lc->ov_expr;
        return LT_OK;
    }
    if (lc->in_group[v->id]) {
        const lt_node *p = v->producer;
        const lt_lower_reg *r = lt_lower_reg_get(p->op);
        if (!r || !r->expr) return lt_lower_error(lc, p, LT_ERR_INTERNAL, "inlined without an expr hook");
        LT_TRY(r->expr(lc, p, v->producer_out, idx, res));
        if (!*res) return lt_lower_nomem(lc);
        return LT_OK;
    }
    if (lt_lower_is_imm(v) && (*res = imm_of_const(lc, v))) return LT_OK;
    lt_lbuf *b = lc->vbuf[v->id];
    if (!b)
        return lt_error(lc->ctx, LT_ERR_INTERNAL, "lowering group g%d: value '%s' is not available in the kernel",
                        lc->g->id, v->name);
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_vshape(lc, v, &r, d))
        return lt_error(lc->ctx, LT_ERR_INTERNAL, "lowering group g%d: value '%s' has no static shape", lc->g->id, v->name);
    *res = lt_lower_conv(lc, lt_l_load(lc->k, b, lt_lower_flat(lc, r, d, idx)), v->type.dtype);
    return LT_LNN(lc, *res);
}

lt_status lt_lower_input(lt_lctx *lc, const lt_node *n, int i, int out_rank, const int64_t *out_dims,
                         lt_lnode *const *idx, lt_lnode **res) {
    const lt_value *v = i < n->n_in ? n->in[i] : NULL;
    if (!v) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input %d is absent", i);
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_vshape(lc, v, &r, d)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input %d has no static shape", i);
    if (r > out_rank) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input %d has a higher rank than the output", i);
    lt_lnode *sub[LT_MAX_RANK];
    lt_lnode *zero = NULL;
    for (int j = 0; j < r; j++) {
        int oj = j + out_rank - r;
        if (d[j] == out_dims[oj]) sub[j] = idx[oj];
        else if (d[j] == 1) {
            if (!zero && !(zero = lt_l_int(lc->k, 0))) return lt_lower_nomem(lc);
            sub[j] = zero;
        } else
            return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input %d does not broadcast to the output", i);
    }
    return lt_lower_value(lc, v, sub, res);
}

lt_status lt_lower_input0(lt_lctx *lc, const lt_node *n, int i, lt_lnode *const *idx, lt_lnode **res) {
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_vshape(lc, n->out[0], &r, d)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "output has no static shape");
    return lt_lower_input(lc, n, i, r, d, idx, res);
}

/* ---- nests, outputs, epilogues ---- */

lt_status lt_lower_nest(lt_lctx *lc, const char *prefix, int rank, const int64_t *dims,
                        lt_lower_body_fn fn, void *user, lt_lnode **res) {
    lt_lvar *vars[LT_MAX_RANK];
    lt_lnode *idx[LT_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) {
        char name[32];
        snprintf(name, sizeof name, "%s%d", prefix, d);
        vars[d] = lt_kernel_var(lc->k, name, LT_INT64);
        if (!(idx[d] = lt_l_var(lc->k, vars[d]))) return lt_lower_nomem(lc);
    }
    lt_lnode *body = NULL;
    LT_TRY(fn(lc, idx, user, &body));
    for (int d = rank - 1; d >= 0; d--)
        body = lt_l_for(lc->k, vars[d], LT_ROLE_OUTPUT, lt_l_int(lc->k, 0), lt_l_int(lc->k, dims[d]), LT_LOOP_SERIAL, body);
    *res = body;
    return LT_LNN(lc, body);
}

/* The one node of the group reading v (NULL if none). */
static const lt_node *group_reader(lt_lctx *lc, const lt_value *v) {
    for (int i = 0; i < lc->g->n_nodes; i++) {
        const lt_node *n = lc->g->nodes[i];
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] == v) return n;
    }
    return NULL;
}

static const lt_value *last_out(const lt_node *n) {
    const lt_value *v = NULL;
    for (int j = 0; j < n->n_out; j++)
        if (n->out[j]) v = n->out[j];
    return v;
}

int lt_lower_epilogue_chain(lt_lctx *lc, const lt_value *v, const lt_node **nodes, int max) {
    int c = 0;
    for (const lt_value *cur = v; cur && !lc->vbuf[cur->id] && c <= lc->g->n_nodes;) {
        const lt_node *next = group_reader(lc, cur);
        if (!next || c == max) return -1;
        nodes[c++] = next;
        cur = last_out(next);
    }
    return c;
}

/* The group output an anchor value leads to through the epilogue chain (v itself if none). */
static const lt_value *epilogue_end(lt_lctx *lc, const lt_value *v) {
    const lt_value *cur = v;
    for (int guard = 0; cur && guard < lc->g->n_nodes + 1; guard++) {
        if (lc->vbuf[cur->id]) return cur; /* a group output */
        const lt_node *next = group_reader(lc, cur);
        cur = next ? last_out(next) : NULL;
    }
    return NULL;
}

lt_lbuf *lt_lower_out_buf(lt_lctx *lc, const lt_value *v, const lt_value **final) {
    const lt_value *e = epilogue_end(lc, v);
    if (final) *final = e;
    return e ? lc->vbuf[e->id] : NULL;
}

lt_status lt_lower_store_out(lt_lctx *lc, const lt_value *v, lt_lnode *const *idx, lt_lnode *val,
                             lt_lnode **res) {
    const lt_value *fin = NULL;
    lt_lbuf *ob = lt_lower_out_buf(lc, v, &fin);
    if (!ob) {
        /* an anchor output nobody reads (optional outputs): nothing to store */
        if (!(*res = lt_l_empty(lc->k))) return lt_lower_nomem(lc);
        return LT_OK;
    }
    /* layout nodes ending the chain (reshapes: the same bytes; a transpose after a MatMul) store the
     * value before them, at idx, at its place in the output buffer */
    lt_sview lv;
    bool strided = false;
    if (fin != v) {
        const lt_value *before = fin;
        if (!lt_lower_output_view(v, fin, &lv, &before))
            return lt_error(lc->ctx, LT_ERR_INTERNAL, "lowering group g%d: the layout nodes before '%s' are not a view",
                            lc->g->id, fin->name);
        strided = !lt_lower_view_is_contig(&lv);
        fin = before;
    }
    int r, rv;
    int64_t d[LT_MAX_RANK], dv[LT_MAX_RANK];
    if (!lt_lower_vshape(lc, fin, &r, d) || !lt_lower_vshape(lc, v, &rv, dv))
        return lt_error(lc->ctx, LT_ERR_INTERNAL, "lowering: '%s' has no shape", fin->name);
    if (strided && lv.rank != r)
        return lt_error(lc->ctx, LT_ERR_INTERNAL, "lowering group g%d: view rank of '%s'", lc->g->id, fin->name);
    /* a reshape adding or dropping leading 1s inside the chain: fin's index from v's */
    lt_lnode *fidx[LT_MAX_RANK];
    if (fin != v && (r != rv || memcmp(d, dv, sizeof(int64_t) * (size_t)r) != 0)) {
        if (!lt_lower_lead_index(lc, rv, dv, idx, r, d, fidx))
            return lt_error(lc->ctx, LT_ERR_INTERNAL, "lowering group g%d: '%s' is not '%s' reshaped", lc->g->id,
                            fin->name, v->name);
        idx = fidx;
    }
    lt_lnode *let = NULL;
    if (fin != v) {
        /* bind a computed value once; the epilogue may read it several times */
        if (val->kind != LT_L_VAR && val->kind != LT_L_LOAD && val->kind != LT_L_INT && val->kind != LT_L_FLOAT) {
            lt_lvar *t = lt_kernel_var(lc->k, "acc_v", val->dtype);
            if (!(let = lt_l_let(lc->k, t, val))) return lt_lower_nomem(lc);
            val = lt_l_var(lc->k, t);
        }
        const lt_value *sov = lc->ov;
        lt_lnode *sox = lc->ov_expr;
        lc->ov = v;
        lc->ov_expr = val;
        signed char was = lc->in_group[fin->id];
        lc->in_group[fin->id] = 1; /* computed by its producer's hook, not loaded */
        lt_status s = lt_lower_value(lc, fin, idx, &val);
        lc->in_group[fin->id] = was;
        lc->ov = sov;
        lc->ov_expr = sox;
        LT_TRY(s);
    }
    lt_lnode *off = strided ? lt_lower_strided(lc, &lv, idx) : lt_lower_flat(lc, r, d, idx);
    lt_lnode *st = lt_l_store(lc->k, ob, off, to_storage(lc, val, ob->dtype));
    if (let) {
        lt_lnode *two[2] = {let, st};
        st = lt_l_seq(lc->k, 2, two);
    }
    *res = st;
    return LT_LNN(lc, st);
}

lt_lbuf *lt_lower_add_pack(lt_lctx *lc, const lt_value *src, const char *name, lt_dtype dt,
                           int64_t size, lt_kernel *pack_kernel) {
    if (lc->n_packs == lc->cap_packs) {
        int nc = lc->cap_packs ? lc->cap_packs * 2 : 4;
        lt_lpack *np = lt_arena_alloc(lc->arena, sizeof(lt_lpack) * (size_t)nc);
        if (!np) return NULL;
        if (lc->n_packs) memcpy(np, lc->packs, sizeof(lt_lpack) * (size_t)lc->n_packs);
        lc->packs = np;
        lc->cap_packs = nc;
    }
    lt_lbuf *b = lt_kernel_arg(lc->k, name, dt, size);
    if (!b) return NULL;
    lt_lpack *p = &lc->packs[lc->n_packs++];
    p->arg = b->arg;
    p->src = (lt_value *)src;
    p->dtype = dt;
    p->size = size;
    p->kernel = pack_kernel;
    return b;
}

typedef struct epi_from {
    const lt_node *n;
    lt_lbuf *src;
    int rank;
    int64_t dims[LT_MAX_RANK];
} epi_from;

static lt_status epi_from_body(lt_lctx *lc, lt_lnode *const *idx, void *user, lt_lnode **body) {
    const epi_from *e = user;
    lt_lnode *v = lt_l_load(lc->k, e->src, lt_lower_flat(lc, e->rank, e->dims, idx));
    return lt_lower_store_out(lc, e->n->out[0], idx, v, body);
}

lt_status lt_lower_epilogue_from(lt_lctx *lc, const lt_node *n, lt_lbuf *src, const char *prefix, lt_lnode **res) {
    epi_from e = {n, src, 0, {0}};
    if (!lt_lower_shape(n->out[0], &e.rank, e.dims)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "output shape");
    return lt_lower_nest(lc, prefix, e.rank, e.dims, epi_from_body, &e, res);
}

lt_lbuf *lt_lower_add_scratch(lt_lctx *lc, const char *name, lt_dtype dt, int64_t size) {
    if (lc->n_scratch == lc->cap_scratch) {
        int nc = lc->cap_scratch ? lc->cap_scratch * 2 : 4;
        lt_lscratch *ns = lt_arena_alloc(lc->arena, sizeof(lt_lscratch) * (size_t)nc);
        if (!ns) return NULL;
        if (lc->n_scratch) memcpy(ns, lc->scratch, sizeof(lt_lscratch) * (size_t)lc->n_scratch);
        lc->scratch = ns;
        lc->cap_scratch = nc;
    }
    lt_lbuf *b = lt_kernel_arg(lc->k, name, dt, size);
    if (!b) return NULL;
    lc->scratch[lc->n_scratch++] = (lt_lscratch){b->arg, dt, size};
    return b;
}

/* ---- pure elementwise / injective groups ---- */

typedef struct chain_ctx {
    const lt_value *v;
} chain_ctx;

static lt_status chain_body(lt_lctx *lc, lt_lnode *const *idx, void *user, lt_lnode **body) {
    const lt_value *v = ((chain_ctx *)user)->v;
    lt_lnode *e = NULL;
    LT_TRY(lt_lower_value(lc, v, idx, &e));
    int r;
    int64_t d[LT_MAX_RANK];
    lt_lower_vshape(lc, v, &r, d);
    lt_lbuf *b = lc->vbuf[v->id];
    *body = lt_l_store(lc->k, b, lt_lower_flat(lc, r, d, idx), to_storage(lc, e, b->dtype));
    return LT_LNN(lc, *body);
}

static lt_status lower_chain(lt_lctx *lc, lt_lnode **res) {
    const lt_group *g = lc->g;
    lt_lnode **nests = lt_arena_alloc(lc->arena, sizeof(lt_lnode *) * (size_t)g->n_outputs);
    if (!nests) return lt_lower_nomem(lc);
    for (int i = 0; i < g->n_outputs; i++) {
        const lt_value *v = g->outputs[i];
        /* the stored value is computed from its producer's hook, not re-loaded */
        lc->in_group[v->id] = 1;
        int r;
        int64_t d[LT_MAX_RANK];
        if (!lt_lower_vshape(lc, v, &r, d)) return lt_lower_error(lc, v->producer, LT_ERR_INTERNAL, "no static shape");
        chain_ctx cc = {v};
        LT_TRY(lt_lower_nest(lc, "i", r, d, chain_body, &cc, &nests[i]));
        lc->in_group[v->id] = 0;
    }
    *res = g->n_outputs == 1 ? nests[0] : lt_l_seq(lc->k, g->n_outputs, nests);
    return LT_LNN(lc, *res);
}

/* ---- the entry points ---- */

/* A readable buffer name from a value name: [A-Za-z0-9_], not starting with a digit. */
static const char *buf_name(const char *vname, char *tmp, size_t n) {
    size_t j = 0;
    if (!vname || !*vname || isdigit((unsigned char)vname[0])) tmp[j++] = 'v';
    for (size_t i = 0; vname && vname[i] && j + 1 < n && j < 48; i++) {
        unsigned char c = (unsigned char)vname[i];
        tmp[j++] = isalnum(c) ? (char)c : '_';
    }
    tmp[j] = 0;
    return tmp;
}

static lt_lbuf *add_arg(lt_lctx *lc, const lt_value *v) {
    char tmp[64];
    int64_t n = lt_lower_numel(v);
    lt_lbuf *b = lt_kernel_arg(lc->k, buf_name(v->name, tmp, sizeof tmp), v->type.dtype, n < 0 ? 0 : n);
    if (b) lc->vbuf[v->id] = b;
    return b;
}

lt_status lt_lower_group(lt_ctx *ctx, const lt_groups *gs, const lt_group *g, lt_arena *arena,
                         const lt_lower_options *opt, lt_lowered *out) {
    static const lt_lower_options dflt = {0};
    if (!opt) opt = &dflt;
    if (g->host) return lt_error(ctx, LT_ERR_INTERNAL, "lowering group g%d: a host group has no kernel", g->id);
    const lt_graph *graph = gs->model->graph;
    char kname[32];
    snprintf(kname, sizeof kname, "lt_k%d", g->id);
    lt_lctx lcs = {.ctx = ctx, .arena = arena, .gs = gs, .g = g, .opt = opt, .graph = graph};
    lt_lctx *lc = &lcs;
    lc->k = lt_kernel_new(arena, kname);
    lc->vbuf = lt_arena_alloc(arena, sizeof(lt_lbuf *) * (size_t)(graph->n_values + 1));
    lc->in_group = lt_arena_alloc(arena, (size_t)(graph->n_values + 1));
    if (!lc->k || !lc->vbuf || !lc->in_group) return lt_lower_nomem(lc);
    /* values produced by inlinable nodes of the group (everything but the anchor of an anchor group) */
    const lt_lower_reg *areg = lt_lower_reg_get(g->anchor->op);
    bool anchored = areg && areg->lower;
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        if (anchored && n == g->anchor) continue;
        for (int j = 0; j < n->n_out; j++)
            if (n->out[j]) lc->in_group[n->out[j]->id] = 1;
    }
    /* arguments: outputs, then inputs (non-constants first, then weights, as fusion ordered them) */
    int n_args = g->n_outputs + g->n_inputs;
    for (int i = 0; i < g->n_outputs; i++) {
        if (!add_arg(lc, g->outputs[i])) return lt_lower_nomem(lc);
        lc->in_group[g->outputs[i]->id] = 0;
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (!add_arg(lc, g->inputs[i])) return lt_lower_nomem(lc);
    lt_lnode *body = NULL;
    if (anchored) {
        LT_TRY(areg->lower(lc, g->anchor, &body));
    } else {
        setup_view(lc);
        LT_TRY(lower_chain(lc, &body));
    }
    if (!body) return lt_lower_nomem(lc);
    LT_TRY(lt_lower_share(lc, body, &body));
    lt_lnode *simple = lt_lsimplify(lc->k, body);
    if (!simple) return lt_lower_nomem(lc);
    lc->k->body = simple;
    lc->k->shape_generic = opt->shape_generic;
    LT_TRY(lt_kernel_verify(ctx, lc->k));
    lt_kernel_cost(lc->k);
    memset(out, 0, sizeof *out);
    out->group = g;
    out->kernel = lc->k;
    out->body0 = simple;
    out->n_args = lc->k->n_args;
    out->arg_values = lt_arena_alloc(arena, sizeof(lt_value *) * (size_t)(out->n_args + 1));
    if (!out->arg_values) return lt_lower_nomem(lc);
    for (int i = 0; i < n_args; i++) out->arg_values[i] = i < g->n_outputs ? g->outputs[i] : g->inputs[i - g->n_outputs];
    for (int i = 0; i < lc->n_packs; i++) out->arg_values[lc->packs[i].arg] = lc->packs[i].src;
    out->n_packs = lc->n_packs;
    out->packs = lc->packs;
    out->n_scratch = lc->n_scratch;
    out->scratch = lc->scratch;
    out->status_arg = lc->status ? lc->status->arg : -1;
    return lt_sched_default(ctx, g, lc->k, opt, &out->schedule);
}

lt_status lt_lower_apply_schedule(lt_ctx *ctx, lt_lowered *lw) {
    lw->kernel->body = lw->body0;
    LT_TRY(lt_sched_apply_all(ctx, lw->kernel, &lw->schedule));
    LT_TRY(lt_kernel_verify(ctx, lw->kernel));
    lt_kernel_cost(lw->kernel);
    return LT_OK;
}

lt_status lt_lower_simplify(lt_ctx *ctx, lt_lowered *lw) {
    lt_lnode *s = lt_lsimplify(lw->kernel, lw->kernel->body);
    if (s) s = lt_lhoist(lw->kernel, s);
    if (!s) return lt_error(ctx, LT_ERR_NOMEM, "simplifying %s: out of memory", lw->kernel->name);
    lw->kernel->body = s;
    LT_TRY(lt_kernel_verify(ctx, lw->kernel));
    lt_kernel_cost(lw->kernel);
    return LT_OK;
}
