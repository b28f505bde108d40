/* fuse.c — partition the main graph into kernel groups by pattern kind (lt_fuse), print them, and
 * decide which nodes can compile (lt_lower_supported).
 *
 * Algorithm (every group has exactly one ROOT node, whose outputs are the group's outputs; every
 * other node of a group has all its outputs read by one node of the same group, so its values are
 * never materialized; groups sorted by root index are therefore in topological order):
 *   1. epilogues, forward: an anchor (a node with a `lower` hook: REDUCE, OUT_EW_FUSABLE, pooling;
 *      one output) whose output is read by
 *      exactly one ELEMWISE/BROADCAST node with the same output dims (and, for OUT_EW_FUSABLE, the
 *      same dtype, as the epilogue is applied in place) takes that node as its epilogue; repeat
 *      from the new node. The last node of the chain is the root.
 *      A reshape (Reshape, Flatten, Squeeze, Unsqueeze: the same bytes) may end the chain, or
 *      continue it when it only adds or drops leading 1s (Gemm [T, D] -> [1, T, D] -> + x). The
 *      chain of a MatMul/Gemm/Conv stops before a node its call cannot apply (not a bias/residual
 *      add, scalar scale or activation) when that node leads into a softmax or norm: the node
 *      then joins that reduction as its prologue (unless it reads a bool mask: see reads_bytes).
 *      A MatMul's chain may end with a Transpose that keeps the columns innermost (and reshapes
 *      after it): the call writes the transposed layout.
 *   2. prologues and chains, backward: a compilable ELEMWISE/BROADCAST/INJECTIVE node p whose one
 *      output is read only by one compiled node c (not a graph output, not read by a subgraph)
 *      joins c's group when p's output is not smaller than c's (no recomputation through
 *      broadcasting) and, if c is or precedes an OUT_EW_FUSABLE anchor (whose microkernel reads
 *      memory), p is a reshape, or a Transpose whose layout chain into a MatMul operand is a strided
 *      view the GEMM call reads in place (lower_view.c). Otherwise p roots a new group. A node
 *      whose kernel checks indices the model computes always roots its group (its output stored
 *      whole, so every index is checked, as the interpreter checks every one).
 *      Non-compilable nodes are single-node host groups.
 */
#include "lower_impl.h"

#include <stdio.h>
#include <string.h>

const char *lt_pattern_name(lt_pattern p) {
    switch (p) {
    case LT_PK_ELEMWISE: return "elemwise";
    case LT_PK_BROADCAST: return "broadcast";
    case LT_PK_INJECTIVE: return "injective";
    case LT_PK_REDUCE: return "reduce";
    case LT_PK_OUT_EW_FUSABLE: return "out_ew_fusable";
    case LT_PK_OPAQUE: return "opaque";
    case LT_PK_CONTROL: return "control";
    }
    return "?";
}

/* ---- compilability ---- */

static bool value_static(const lt_value *v, char *why, size_t n, const char *role, int i) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (!lt_lower_shape(v, &rank, dims)) {
        char tb[128];
        snprintf(why, n, "%s %d '%s' has no static shape (%s)", role, i, v->name,
                 lt_type_str(&v->type, tb, sizeof tb));
        return false;
    }
    return true;
}

bool lt_lower_supported(const lt_node *n, char *why, size_t why_size) {
    const lt_lower_reg *r = lt_lower_reg_get(n->op);
    if (!r) {
        snprintf(why, why_size, "no lowering for %s", n->op_type);
        return false;
    }
    for (int i = 0; i < n->n_in; i++) {
        const lt_value *v = n->in[i];
        if (!v) continue;
        if (i < 32 && (r->unused_inputs >> i & 1u)) continue;
        if (i < 32 && (r->const_inputs >> i & 1u)) {
            if (!lt_lower_const(v)) {
                snprintf(why, why_size, "input %d '%s' is not a constant", i, v->name);
                return false;
            }
            continue;
        }
        if (!value_static(v, why, why_size, "input", i)) return false;
        /* an empty operand has no element a kernel could load, even a clamped or unselected one */
        if (lt_lower_numel(v) == 0) {
            snprintf(why, why_size, "input %d '%s' is empty", i, v->name);
            return false;
        }
    }
    bool any_out = false;
    for (int i = 0; i < n->n_out; i++) {
        const lt_value *v = n->out[i];
        if (!v) continue;
        any_out = true;
        if (!value_static(v, why, why_size, "output", i)) return false;
        if (lt_lower_numel(v) == 0) {
            snprintf(why, why_size, "output %d '%s' is empty", i, v->name);
            return false;
        }
    }
    if (!any_out) {
        snprintf(why, why_size, "no outputs");
        return false;
    }
    /* Compiled kernels index with the shapes inference derived: only shapes it checked against
     * every rule of the op (ops.def CHECKS) may be trusted. Anything else runs in the interpreter,
     * which checks at run time. */
    if (!n->shapes_verified) {
        snprintf(why, why_size, "shapes not verified by inference (%s)",
                 lt_op_info_get(n->op)->flags & LT_OPF_INFER_CHECKS ? "shapes it could not derive"
                                                                    : "its inference does not check every rule");
        return false;
    }
    return r->accept ? r->accept(n, why, why_size) : lt_lower_accept_default(n, why, why_size);
}

/* ---- use counts ---- */

typedef struct fuse_state {
    const lt_graph *g;
    int *cons;        /* value id -> the one node index reading it, -1 none, -2 several/escapes */
    bool *ok;         /* node -> compilable */
    const char **why; /* node -> host reason */
    int *root;        /* node -> root node index of its group (-1 unset) */
    int *anchor;      /* root node -> anchor node index (-1 none) */
    bool gpu;         /* lt_fuse_options.gpu */
} fuse_state;

static void mark_outer_uses(const lt_graph *sub, int *cons, const lt_graph *main) {
    for (int i = 0; i < sub->n_values; i++) {
        const lt_value *v = sub->values[i];
        while (v->outer) v = v->outer;
        if (v != sub->values[i] && v->id < main->n_values && main->values[v->id] == v) cons[v->id] = -2;
    }
    for (int i = 0; i < sub->n_nodes; i++) {
        const lt_node *n = sub->nodes[i];
        for (int a = 0; a < n->n_attr; a++) {
            const lt_attr *at = &n->attrs[a];
            if (at->type == LT_AT_GRAPH && at->g) mark_outer_uses(at->g, cons, main);
            if (at->type == LT_AT_GRAPHS)
                for (int j = 0; j < at->n; j++)
                    if (at->graphs[j]) mark_outer_uses(at->graphs[j], cons, main);
        }
    }
}

static void count_uses(fuse_state *s) {
    const lt_graph *g = s->g;
    for (int i = 0; i < g->n_values; i++) s->cons[i] = g->values[i]->is_output ? -2 : -1;
    for (int i = 0; i < g->n_outputs; i++) s->cons[g->outputs[i]->id] = -2;
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        for (int j = 0; j < n->n_in; j++) {
            const lt_value *v = n->in[j];
            if (!v) continue;
            int *c = &s->cons[v->id];
            if (*c == -1) *c = i;
            else if (*c != i) *c = -2;
        }
        for (int a = 0; a < n->n_attr; a++) {
            const lt_attr *at = &n->attrs[a];
            if (at->type == LT_AT_GRAPH && at->g) mark_outer_uses(at->g, s->cons, g);
            if (at->type == LT_AT_GRAPHS)
                for (int j = 0; j < at->n; j++)
                    if (at->graphs[j]) mark_outer_uses(at->graphs[j], s->cons, g);
        }
    }
}

static int single_out(const lt_node *n) { /* index of the only present output, or -1 */
    int k = -1;
    for (int i = 0; i < n->n_out; i++) {
        if (!n->out[i]) continue;
        if (k >= 0) return -1;
        k = i;
    }
    return k;
}

static bool is_ew(lt_pattern p) { return p == LT_PK_ELEMWISE || p == LT_PK_BROADCAST; }
static bool is_chain(lt_pattern p) { return is_ew(p) || p == LT_PK_INJECTIVE; }
/* Anchors are the nodes lowered by a `lower` hook (reductions, MatMul/Gemm/Conv, pooling). */
static bool is_anchor(const lt_node *n) {
    const lt_lower_reg *r = lt_lower_reg_get(n->op);
    return r && r->lower;
}
static lt_pattern pat(const lt_node *n) { return lt_op_info_get(n->op)->pattern; }

static bool same_dims(const lt_value *a, const lt_value *b) {
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (!lt_lower_shape(a, &ra, da) || !lt_lower_shape(b, &rb, db) || ra != rb) return false;
    return memcmp(da, db, sizeof(int64_t) * (size_t)ra) == 0;
}

static int64_t max_out_numel(const lt_node *n) {
    int64_t m = 0;
    for (int i = 0; i < n->n_out; i++)
        if (n->out[i] && lt_lower_numel(n->out[i]) > m) m = lt_lower_numel(n->out[i]);
    return m;
}

/* Epilogue ops a GEMM/conv call applies in its own epilogue (what lower_gemm.c's call matching
 * takes, approximately: bias and residual adds, a scalar scale, one activation). */
static bool call_absorbs(const lt_node *e) {
    switch (e->op) {
    case LT_OP_Add: case LT_OP_Relu: case LT_OP_Sigmoid: case LT_OP_Tanh: case LT_OP_LeakyRelu:
    case LT_OP_HardSigmoid: case LT_OP_Gelu: case LT_OP_Clip: case LT_OP_HardSwish:
        return true;
    case LT_OP_Swish: return lt_attr_float(e, "alpha", 1.0f) == 1.0f; /* SiLU */
    case LT_OP_Mul: case LT_OP_Div:
        return e->n_in == 2 && e->in[0] && e->in[1] && (lt_lower_is_imm(e->in[1]) || lt_lower_is_imm(e->in[0]));
    default: return lt_lower_is_view(e);
    }
}

/* The order a GPU entry applies its epilogue in (lower_gemm.c match_chain): a scalar scale before
 * anything else, then up to two adds (bias, residual), one activation and one add after it. A node
 * out of that order would leave a second pass the entry cannot make, and the whole group would lower
 * as a plain loop nest (a 1x1 conv, hardswish, then x 0.8: 37 us where the call takes 3). */
typedef struct {
    int adds;
    bool act, add_after_act;
} call_epi_order;

static bool call_takes_in_order(const lt_node *e, call_epi_order *o) {
    if (lt_lower_is_view(e)) return true;
    if (!call_absorbs(e)) return false;
    switch (e->op) {
    case LT_OP_Mul: case LT_OP_Div: return o->adds == 0 && !o->act;
    case LT_OP_Add:
        if (o->act) return !o->add_after_act && (o->add_after_act = true);
        return ++o->adds <= 2;
    default: return !o->act && (o->act = true);
    }
}

/* Does e read a one-byte tensor (a bool mask)? GCC does not vectorize a loop that mixes byte loads
 * with the float exp of a softmax pass (it sizes vectors by the byte type), so such a node is
 * better applied in the GEMM's epilogue nest than in the softmax's three passes. */
static bool reads_bytes(const lt_node *e) {
    for (int i = 0; i < e->n_in; i++)
        if (e->in[i] && lt_dtype_size(e->in[i]->type.dtype) == 1) return true;
    return false;
}

/* Does node c's output lead, through single-reader elementwise nodes, into a compilable REDUCE
 * anchor (softmax, a norm), which would take them all as its prologue? */
static bool feeds_reduce(const fuse_state *s, int c) {
    const lt_graph *g = s->g;
    for (int guard = 0; guard < 16; guard++) {
        int o = single_out(g->nodes[c]);
        int n = o < 0 ? -1 : s->cons[g->nodes[c]->out[o]->id];
        if (n < 0 || !s->ok[n]) return false;
        const lt_node *nn = g->nodes[n];
        if (is_anchor(nn)) return pat(nn) == LT_PK_REDUCE;
        if (!is_ew(pat(nn))) return false;
        c = n;
    }
    return false;
}

/* May MatMul an store its output through Transpose e (its output's one reader)? The columns must
 * stay the innermost dim (the GEMM call writes rows contiguously) and both operands be matrices. */
static bool out_transpose_ok(const fuse_state *s, const lt_node *an, const lt_node *e) {
    (void)s;
    if (an->op != LT_OP_MatMul || e->op != LT_OP_Transpose || single_out(e) < 0) return false;
    int r = an->out[0]->type.rank;
    if (r < 3 || an->in[0]->type.rank < 2 || an->in[1]->type.rank < 2 || e->in[0]->type.rank != r) return false;
    lt_sview in, out;
    int64_t d[LT_MAX_RANK];
    int rr;
    if (!lt_lower_shape(e->out[single_out(e)], &rr, d)) return false;
    lt_lower_view_contig(rr, d, &out);
    if (!lt_lower_view_step(e, false, &out, &in)) return false;
    return in.st[r - 1] == 1;
}

/* Phase 1: grow the epilogue chain of anchor a; every node of the chain gets the last as root. */
static void grow_epilogue(fuse_state *s, int a, int *chain) {
    const lt_graph *g = s->g;
    const lt_node *an = g->nodes[a];
    int nc = 0;
    chain[nc++] = a;
    const lt_lower_reg *reg = lt_lower_reg_get(an->op);
    int ao = reg && (reg->flags & LT_LF_NO_EPILOGUE) ? -1 : single_out(an);
    const lt_value *ref = ao >= 0 ? an->out[ao] : NULL; /* the shape epilogue nodes keep */
    call_epi_order order = {0};
    for (int cur = a; ao >= 0;) {
        int co = single_out(g->nodes[cur]);
        int c = co < 0 ? -1 : s->cons[g->nodes[cur]->out[co]->id];
        if (c < 0 || !s->ok[c] || s->root[c] >= 0) break;
        const lt_node *e = g->nodes[c];
        int eo = single_out(e);
        if (lt_lower_is_view(e) && eo >= 0) { /* a reshape ends the chain: the same bytes, stored */
            chain[nc++] = c;
            if (!lt_lower_lead_reshape(e)) break;
            cur = c, ref = e->out[eo]; /* leading 1s added or dropped: elementwise nodes may follow */
            continue;
        }
        if (out_transpose_ok(s, an, e)) { /* a MatMul writes its output transposed, then reshapes */
            chain[nc++] = cur = c;
            for (int guard = 0; guard < 4; guard++) {
                int o = single_out(g->nodes[cur]);
                int n2 = o < 0 ? -1 : s->cons[g->nodes[cur]->out[o]->id];
                if (n2 < 0 || !s->ok[n2] || s->root[n2] >= 0 || !lt_lower_is_view(g->nodes[n2]) ||
                    single_out(g->nodes[n2]) < 0)
                    break;
                chain[nc++] = cur = n2;
            }
            break;
        }
        if (!is_ew(pat(e)) || eo < 0 || !same_dims(e->out[eo], ref)) break;
        if (pat(an) == LT_PK_OUT_EW_FUSABLE && e->out[eo]->type.dtype != an->out[ao]->type.dtype) break;
        /* a GEMM/conv call applies bias/scale/activation itself; anything else would be a second pass
         * over its output after the call: when the rest of the chain feeds a softmax or a norm, it
         * is better read there, as that reduction's prologue (masked attention scores) */
        if (pat(an) == LT_PK_OUT_EW_FUSABLE && !call_absorbs(e) && !reads_bytes(e) && feeds_reduce(s, c)) break;
        /* on the GPU a CUDA entry applies the epilogue: nothing after it but what it absorbs */
        if (s->gpu && pat(an) == LT_PK_OUT_EW_FUSABLE && !call_takes_in_order(e, &order)) break;
        chain[nc++] = cur = c;
    }
    int root = chain[nc - 1];
    for (int i = 0; i < nc; i++) s->root[chain[i]] = root;
    s->anchor[root] = a;
}

/* Will value v (read by one node) be computed inside its reader's group, as a layout node's output
 * that phase 2 inlines? (The predicate of lt_lower_operand_view at fusion time.) */
static bool fuse_inlined(void *user, const lt_value *v) {
    const fuse_state *s = user;
    const lt_node *p = v->producer;
    return p && p->graph == s->g && s->cons[v->id] >= 0 && s->ok[p->index] && is_chain(pat(p)) &&
           single_out(p) >= 0;
}

/* A MatMul operand read through a strided view: both matrix dims present, one of them with unit
 * stride (the GEMM call reads rows or columns contiguously). */
static bool matrix_view_ok(const lt_sview *v) {
    int r = v->rank;
    if (r < 2) return false;
    return v->st[r - 1] == 1 || v->st[r - 2] == 1 || v->dims[r - 1] == 1 || v->dims[r - 2] == 1;
}

/* Transpose p leads, through layout nodes already in the group, into MatMul a: may the MatMul read
 * its result in place (a strided view of the stored value the layout chain starts from)? */
static bool matmul_operand_ok(const fuse_state *s, int a, int p) {
    const lt_graph *g = s->g;
    const lt_node *an = g->nodes[a];
    if (an->op != LT_OP_MatMul || an->n_in < 2 || an->in[0] == an->in[1]) return false;
    int cur = p;
    for (int guard = 0; guard < 16 && cur != a; guard++) {
        int o = single_out(g->nodes[cur]);
        int c = o < 0 ? -1 : s->cons[g->nodes[cur]->out[o]->id];
        if (c < 0) return false;
        if (c == a) {
            const lt_value *v = g->nodes[cur]->out[o];
            int slot = an->in[0] == v ? 0 : an->in[1] == v ? 1 : -1;
            const lt_value *base;
            lt_sview view;
            return slot >= 0 && lt_lower_operand_view(v, fuse_inlined, (void *)s, &base, &view) &&
                   matrix_view_ok(&view);
        }
        if (!lt_lower_is_layout(g->nodes[c])) return false;
        cur = c;
    }
    return false;
}

/* Phase 2: may p be inlined into the group of its one consumer? Returns that consumer or -1. */
static int inline_target(const fuse_state *s, int p) {
    const lt_graph *g = s->g;
    const lt_node *pn = g->nodes[p];
    if (!is_chain(pat(pn))) return -1;
    /* a Gather whose kernel checks its indices stores its whole output: every index is checked */
    if (lt_lower_checks_in_kernel(pn)) return -1;
    int po = single_out(pn);
    if (po < 0) return -1;
    int c = s->cons[pn->out[po]->id];
    if (c < 0 || !s->ok[c] || s->root[c] < 0) return -1;
    const lt_node *cn = g->nodes[c];
    /* MatMul/Gemm/Conv read operands from memory: only reshapes of a stored value (the same
     * bytes), and transposes a MatMul reads as a strided view, may precede them in their group
     * (they cost no work there, whatever their size) */
    int a = s->anchor[s->root[c]];
    if (a >= 0 && pat(g->nodes[a]) == LT_PK_OUT_EW_FUSABLE && c <= a) {
        if (lt_lower_is_view(pn)) return c;
        if (pn->op == LT_OP_Transpose && matmul_operand_ok(s, a, p)) return c;
        return -1;
    }
    if (lt_lower_numel(pn->out[po]) < max_out_numel(cn)) return -1;
    return c;
}

static lt_status fuse_error_nomem(lt_ctx *ctx) {
    return lt_error(ctx, LT_ERR_NOMEM, "fusion: out of memory");
}

static bool push_unique(lt_value **arr, int *n, lt_value *v) {
    for (int i = 0; i < *n; i++)
        if (arr[i] == v) return false;
    arr[(*n)++] = v;
    return true;
}

static lt_status build_group(lt_ctx *ctx, lt_arena *arena, const fuse_state *s, int root,
                             const int *members, int n_members, lt_group *gr) {
    const lt_graph *g = s->g;
    gr->n_nodes = n_members;
    gr->nodes = lt_arena_alloc(arena, sizeof(lt_node *) * (size_t)n_members);
    if (!gr->nodes) return fuse_error_nomem(ctx);
    for (int i = 0; i < n_members; i++) gr->nodes[i] = g->nodes[members[i]];
    const lt_node *rn = g->nodes[root];
    gr->host = !s->ok[root];
    if (gr->host) {
        gr->reason = s->why[root];
        gr->pattern = pat(rn);
        gr->anchor = g->nodes[root];
    } else {
        int a = s->anchor[root];
        if (a >= 0) {
            gr->anchor = g->nodes[a];
            gr->pattern = pat(gr->anchor);
        } else {
            gr->anchor = g->nodes[root];
            gr->pattern = LT_PK_ELEMWISE;
            for (int i = 0; i < n_members; i++) {
                lt_pattern p = pat(gr->nodes[i]);
                if (p > gr->pattern) gr->pattern = p;
            }
        }
    }
    /* inputs */
    int cap = 0;
    for (int i = 0; i < n_members; i++) cap += gr->nodes[i]->n_in;
    lt_value **tmp = lt_arena_alloc(arena, sizeof(lt_value *) * (size_t)(cap + 1));
    gr->inputs = lt_arena_alloc(arena, sizeof(lt_value *) * (size_t)(cap + 1));
    if (!tmp || !gr->inputs) return fuse_error_nomem(ctx);
    int nt = 0;
    for (int i = 0; i < n_members; i++) {
        const lt_node *n = gr->nodes[i];
        for (int j = 0; j < n->n_in; j++) {
            lt_value *v = n->in[j];
            if (!v) continue;
            if (!gr->host && !lt_lower_reads_input(n, j)) continue;
            if (!gr->host) {
                if (v->producer && v->producer->graph == g && s->root[v->producer->index] == root) continue;
                /* one-element constants are immediates, except for the operands of a GEMM or
                 * convolution call, which reads each operand (a bias of one channel) from memory */
                if (lt_lower_is_imm(v) && lt_op_info_get(n->op)->pattern != LT_PK_OUT_EW_FUSABLE) continue;
            }
            push_unique(tmp, &nt, v);
        }
    }
    gr->n_inputs = 0;
    for (int pass = 0; pass < 2; pass++) /* non-constants first, then weights */
        for (int i = 0; i < nt; i++)
            if (gr->host ? pass == 0 : (lt_lower_const(tmp[i]) != NULL) == (pass == 1))
                gr->inputs[gr->n_inputs++] = tmp[i];
    /* outputs: values read outside the group, graph outputs, and the root's outputs */
    cap = 0;
    for (int i = 0; i < n_members; i++) cap += gr->nodes[i]->n_out;
    gr->outputs = lt_arena_alloc(arena, sizeof(lt_value *) * (size_t)(cap + 1));
    if (!gr->outputs) return fuse_error_nomem(ctx);
    gr->n_outputs = 0;
    for (int i = 0; i < n_members; i++) {
        const lt_node *n = gr->nodes[i];
        for (int j = 0; j < n->n_out; j++) {
            lt_value *v = n->out[j];
            if (!v) continue;
            int c = s->cons[v->id];
            bool outside = c == -2 || (c >= 0 && s->root[c] != root) || n->index == root;
            if (outside) gr->outputs[gr->n_outputs++] = v;
        }
    }
    return LT_OK;
}

lt_status lt_fuse(lt_ctx *ctx, const lt_model *m, lt_arena *arena, const lt_fuse_options *opt,
                  lt_groups *out) {
    static const lt_fuse_options dflt = {0};
    if (!opt) opt = &dflt;
    const lt_graph *g = m->graph;
    int nn = g->n_nodes, nv = g->n_values;
    for (int i = 0; i < nv; i++) {
        const lt_value *v = g->values[i];
        if (v->id != i) return lt_error(ctx, LT_ERR_INTERNAL, "fusion: value '%s' has id %d at %d", v->name, v->id, i);
    }
    fuse_state s = {.g = g, .gpu = opt->gpu};
    s.cons = lt_arena_alloc(arena, sizeof(int) * (size_t)(nv + 1));
    s.ok = lt_arena_alloc(arena, sizeof(bool) * (size_t)(nn + 1));
    s.why = lt_arena_alloc(arena, sizeof(char *) * (size_t)(nn + 1));
    s.root = lt_arena_alloc(arena, sizeof(int) * (size_t)(nn + 1));
    s.anchor = lt_arena_alloc(arena, sizeof(int) * (size_t)(nn + 1));
    int *members = lt_arena_alloc(arena, sizeof(int) * (size_t)(nn + 1));
    int *gid_of_root = lt_arena_alloc(arena, sizeof(int) * (size_t)(nn + 1));
    int *node_group = lt_arena_alloc(arena, sizeof(int) * (size_t)(nn + 1));
    if (!s.cons || !s.ok || !s.why || !s.root || !s.anchor || !members || !gid_of_root || !node_group)
        return fuse_error_nomem(ctx);
    count_uses(&s);
    for (int i = 0; i < nn; i++) {
        const lt_node *n = g->nodes[i];
        if (n->index != i) return lt_error(ctx, LT_ERR_INTERNAL, "fusion: node %d has index %d", i, n->index);
        s.root[i] = -1;
        s.anchor[i] = -1;
        char why[256];
        if (opt->all_host) {
            s.ok[i] = false;
            snprintf(why, sizeof why, "all nodes on the host");
        } else {
            s.ok[i] = lt_lower_supported(n, why, sizeof why) || (opt->gpu && lt_lower_gpu_supported(n, why, sizeof why));
        }
        if (!s.ok[i]) {
            s.why[i] = lt_arena_strdup(arena, why);
            if (!s.why[i]) return fuse_error_nomem(ctx);
        }
    }
    bool fusion = !opt->no_fusion && !opt->all_host;
    /* 1. anchors and their epilogues */
    for (int i = 0; i < nn; i++) {
        if (!s.ok[i] || s.root[i] >= 0 || !is_anchor(g->nodes[i])) continue;
        if (fusion && !opt->no_epilogues) grow_epilogue(&s, i, members);
        else {
            s.root[i] = i;
            s.anchor[i] = i;
        }
    }
    /* 2. backward: chains and prologues */
    for (int i = nn - 1; i >= 0; i--) {
        if (s.root[i] >= 0) continue;
        int c = (fusion && s.ok[i]) ? inline_target(&s, i) : -1;
        if (c >= 0) s.root[i] = s.root[c];
        else s.root[i] = i;
    }
    /* groups in root order */
    int ng = 0;
    for (int i = 0; i < nn; i++) gid_of_root[i] = s.root[i] == i ? ng++ : -1;
    out->model = m;
    out->n = ng;
    out->groups = lt_arena_alloc(arena, sizeof(lt_group) * (size_t)(ng + 1));
    if (!out->groups) return fuse_error_nomem(ctx);
    out->node_group = node_group;
    out->n_host = 0;
    out->n_compiled_nodes = 0;
    for (int i = 0; i < nn; i++) node_group[i] = gid_of_root[s.root[i]];
    for (int r = 0; r < nn; r++) {
        if (s.root[r] != r) continue;
        int nm = 0;
        for (int i = 0; i <= r; i++)
            if (s.root[i] == r) members[nm++] = i;
        lt_group *gr = &out->groups[gid_of_root[r]];
        memset(gr, 0, sizeof *gr);
        gr->id = gid_of_root[r];
        LT_TRY(build_group(ctx, arena, &s, r, members, nm, gr));
        if (gr->host) out->n_host++;
        else out->n_compiled_nodes += nm;
    }
    return LT_OK;
}

/* ---- printing ---- */

static void print_values(lt_strbuf *o, const char *label, lt_value *const *vs, int n) {
    lt_sb_printf(o, " %s=[", label);
    for (int i = 0; i < n; i++) lt_sb_printf(o, "%s%s", i ? ", " : "", vs[i]->name);
    lt_sb_printf(o, "]");
}

void lt_groups_print(const lt_groups *gs, lt_strbuf *o) {
    int nodes = 0;
    for (int i = 0; i < gs->n; i++) {
        const lt_group *gr = &gs->groups[i];
        nodes += gr->n_nodes;
        const lt_node *a = gr->anchor;
        if (gr->host) {
            lt_sb_printf(o, "g%d host (%s) n%d '%s': %s\n", gr->id, a->op_type, a->index, a->name,
                         gr->reason ? gr->reason : "");
            continue;
        }
        lt_sb_printf(o, "g%d %s anchor=n%d '%s' (%s) nodes=[", gr->id, lt_pattern_name(gr->pattern),
                     a->index, a->name, a->op_type);
        for (int j = 0; j < gr->n_nodes; j++)
            lt_sb_printf(o, "%sn%d %s", j ? ", " : "", gr->nodes[j]->index, gr->nodes[j]->op_type);
        lt_sb_printf(o, "]");
        print_values(o, "in", gr->inputs, gr->n_inputs);
        print_values(o, "out", gr->outputs, gr->n_outputs);
        lt_sb_printf(o, "\n");
    }
    lt_sb_printf(o, "groups: %d (%d host), nodes compiled: %d/%d\n", gs->n, gs->n_host,
                 gs->n_compiled_nodes, nodes);
}
