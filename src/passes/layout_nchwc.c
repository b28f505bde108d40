/* layout_nchwc.c — convolutions on the CPU in the channel-blocked NCHW{B}c layout (ops of
 * src/ops/nn/nn_nchwc.c), with reorders only at the ends of each blocked chain.
 *
 * B is the f32 SIMD width of the host: 16 with AVX-512, 8 with AVX2; on other hosts the pass does
 * nothing (the blocked kernels would not pay). In one walk over the main graph, in order:
 *   - a float32 2-D Conv with static shapes, constant weights (and bias), group 1 or depthwise
 *     (group == C == M), becomes NchwcConv when it pays: its input is already blocked, or it has at
 *     least B input and B output channels (a first conv of 3 channels stays NCHW: measured slower
 *     blocked). Its input is blocked by one NchwcReorderIn, shared by every conv reading it;
 *   - MaxPool / AveragePool (2-D, no Indices output) / GlobalAveragePool / GlobalMaxPool of a
 *     blocked value becomes its blocked variant;
 *   - Relu, LeakyRelu, Clip (scalar bounds) of a blocked value, and Add of two blocked values of
 *     the same shape, are layout-agnostic: they are cloned onto the blocked values (padding lanes
 *     stay finite, which is all the blocked ops need of them);
 *   - any other reader of a converted value, and graph outputs, read it through one
 *     NchwcReorderOut after the converted node (the original value's uses move to it);
 *   - NchwcReorderIn(NchwcReorderOut(z)) of z's block size is z (a pair left by other rewrites).
 * Subgraphs are left alone. Level -O3, once, after the simplification group.
 *
 * Runs only for the CPU target without --no-microkernels (enabled hook: lt_pass_options.target,
 * .no_microkernels); a rewritten model imports the "lathe" opset (version 1).
 *
 * Status: in the pipeline but off by default (LT_PIPE_OFF in pipeline.c): runs when enabled by name
 * (--enable-pass layout_nchwc, lt_pass_options.enable), which compiles do for a model that `lathe
 * tune` measured faster blocked on this machine (lt_compile_options.tuned_passes). On the
 * development VM NCHW wins for every bench model (MobileNetV2 1 thread 9.5 vs 10.1 ms; dense 3x3 at
 * 14x14 / 7x7 and depthwise stride 1 lose per layer); docs/PASSES.md has the per-layer picture.
 * Tests also run the descriptor directly.
 */
#include "util.h"

#include <stdio.h>
#include <string.h>

typedef struct nchwc_state {
    lt_ctx *ctx;
    lt_graph *g;
    int64_t B;
    int cap;
    lt_value **blk;  /* value id -> its blocked version (NULL: none) */
    bool *conv;      /* node index (original order) -> converted (original removed at the end) */
} nchwc_state;

static int64_t host_block(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (__builtin_cpu_supports("avx2")) return 8;
#endif
    return 0;
}

static lt_value *blocked(const nchwc_state *s, const lt_value *v) {
    return v && v->id >= 0 && v->id < s->cap ? s->blk[v->id] : NULL;
}

static lt_status set_blocked(nchwc_state *s, const lt_value *v, lt_value *b) {
    if (v->id >= s->cap) {
        int cap = v->id * 2 + 16;
        lt_value **nb = lt_mem_realloc(s->blk, sizeof *nb * (size_t)cap);
        if (!nb) return lt_error(s->ctx, LT_ERR_NOMEM, "out of memory (layout_nchwc)");
        memset(nb + s->cap, 0, sizeof *nb * (size_t)(cap - s->cap));
        s->blk = nb, s->cap = cap;
    }
    s->blk[v->id] = b;
    return LT_OK;
}

/* A float32 tensor of static shape [N, C, H, W]. */
static bool image4(const lt_value *v, int64_t *d) {
    int r;
    return v && lt_pu_dtype(v) == LT_FLOAT && lt_value_static_shape(v, &r, d) && r == 4;
}

static bool conv_ok(const nchwc_state *s, const lt_node *n) {
    int64_t xd[LT_MAX_RANK], yd[LT_MAX_RANK], wd[LT_MAX_RANK];
    int wr;
    if (n->n_out != 1 || !image4(n->in[0], xd) || !image4(n->out[0], yd) || n->n_in < 2) return false;
    const lt_tensor *w = lt_value_const(n->in[1]);
    if (!w || w->dtype != LT_FLOAT || !lt_value_static_shape(n->in[1], &wr, wd) || wr != 4) return false;
    if (n->n_in > 2 && n->in[2]) {
        const lt_tensor *b = lt_value_const(n->in[2]);
        if (!b || b->dtype != LT_FLOAT || b->numel != wd[0]) return false;
    }
    int64_t group = lt_attr_int(n, "group", 1), C = xd[1], M = wd[0];
    bool dw = group > 1 && group == C && M == C && wd[1] == 1;
    if (group != 1 && !dw) return false;
    if (wd[1] * group != C) return false;
    if (blocked(s, n->in[0])) return true; /* the chain continues */
    return C >= s->B && M >= s->B;
}

static bool pool_ok(const nchwc_state *s, const lt_node *n) {
    int64_t xd[LT_MAX_RANK];
    if (!blocked(s, n->in[0]) || !image4(n->in[0], xd) || n->n_in != 1) return false;
    for (int i = 1; i < n->n_out; i++)
        if (n->out[i]) return false; /* MaxPool's Indices */
    if (n->op == LT_OP_MaxPool && lt_attr_int(n, "storage_order", 0) != 0) return false;
    int64_t yd[LT_MAX_RANK];
    return image4(n->out[0], yd);
}

/* A scalar (one element, static) or absent input. */
static bool scalar_or_absent(const lt_node *n, int i) {
    if (i >= n->n_in || !n->in[i]) return true;
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_value_static_shape(n->in[i], &r, d)) return false;
    int64_t c = 1;
    for (int k = 0; k < r; k++) c *= d[k];
    return c == 1;
}

static bool ew_ok(const nchwc_state *s, const lt_node *n) {
    int64_t d[LT_MAX_RANK];
    if (n->n_out != 1 || !n->out[0] || !image4(n->out[0], d) || !blocked(s, n->in[0])) return false;
    switch (n->op) {
    case LT_OP_Relu: case LT_OP_LeakyRelu: return n->n_in == 1;
    case LT_OP_Clip: return scalar_or_absent(n, 1) && scalar_or_absent(n, 2);
    case LT_OP_Add:
        return n->n_in == 2 && blocked(s, n->in[1]) && lt_pu_same_static_shape(n->in[0], n->in[1]) &&
               lt_pu_same_static_shape(n->in[0], n->out[0]);
    default: return false;
    }
}

static lt_status new_node(nchwc_state *s, const char *op, const char *domain, int n_in, lt_value *const *in,
                          const char *hint, lt_node *before, lt_node **out) {
    LT_TRY(lt_node_new(s->ctx, s->g, op, domain, n_in, in, 1, hint, before, out));
    return LT_OK;
}

/* The blocked version of v (an image read by a converted conv): an NchwcReorderIn before `before`. */
static lt_status block_input(nchwc_state *s, lt_value *v, lt_node *before, lt_value **out) {
    if ((*out = blocked(s, v))) return LT_OK;
    lt_node *r;
    char hint[256];
    snprintf(hint, sizeof hint, "%s_nchwc", v->name);
    LT_TRY(new_node(s, "NchwcReorderIn", "lathe", 1, &v, hint, before, &r));
    LT_TRY(lt_node_set_attr_int(s->ctx, r, "block", s->B));
    LT_TRY(lt_node_infer(s->ctx, r));
    *out = r->out[0];
    return set_blocked(s, v, *out);
}

static const char *blocked_op(int op) {
    switch (op) {
    case LT_OP_Conv: return "NchwcConv";
    case LT_OP_MaxPool: return "NchwcMaxPool";
    case LT_OP_AveragePool: return "NchwcAveragePool";
    case LT_OP_GlobalAveragePool: return "NchwcGlobalAveragePool";
    case LT_OP_GlobalMaxPool: return "NchwcGlobalMaxPool";
    default: return NULL;
    }
}

/* Convert node n (known convertible): the blocked node goes before n; n is removed later. */
static lt_status convert(nchwc_state *s, lt_node *n) {
    lt_value *in[3] = {NULL, NULL, NULL};
    int n_in = n->n_in;
    const char *op = blocked_op(n->op), *domain = "lathe";
    if (n->op == LT_OP_Conv) LT_TRY(block_input(s, n->in[0], n, &in[0]));
    else in[0] = blocked(s, n->in[0]);
    for (int i = 1; i < n_in && i < 3; i++) in[i] = n->op == LT_OP_Add ? blocked(s, n->in[i]) : n->in[i];
    if (!op) op = n->op_type, domain = n->domain; /* layout-agnostic elementwise */
    char hint[256];
    snprintf(hint, sizeof hint, "%s_nchwc", n->out[0]->name);
    lt_node *b;
    LT_TRY(new_node(s, op, domain, n_in, in, hint, n, &b));
    LT_TRY(lt_node_copy_attrs(s->ctx, b, n));
    if (!strcmp(domain, "lathe")) {
        b->name = n->name;
    } else {
        b->opset = n->opset;
        b->name = n->name;
    }
    LT_TRY(lt_node_infer(s->ctx, b));
    return set_blocked(s, n->out[0], b->out[0]);
}

/* NchwcReorderIn(NchwcReorderOut(z)) -> z when the blocks agree. */
static lt_status drop_pairs(nchwc_state *s, bool *changed) {
    for (int i = 0; i < s->g->n_nodes; i++) {
        lt_node *n = s->g->nodes[i];
        if (n->op != LT_OP_NchwcReorderIn || !n->out[0]) continue;
        lt_node *p = lt_pu_producer(s->g, n->in[0], LT_OP_NchwcReorderOut);
        if (!p) continue;
        int r;
        int64_t d[LT_MAX_RANK];
        if (!lt_value_static_shape(p->in[0], &r, d) || r != 5 || d[4] != lt_attr_int(n, "block", 0)) continue;
        LT_TRY(lt_value_replace_uses(s->ctx, s->g, n->out[0], p->in[0]));
        lt_node_remove(s->g, n);
        lt_pu_remove_if_dead(s->g, p);
        *changed = true;
        i = -1; /* indices moved */
    }
    return LT_OK;
}

static lt_status run_graph(nchwc_state *s, bool *changed) {
    lt_graph *g = s->g;
    int n0 = g->n_nodes;
    lt_node **orig = lt_mem_alloc(sizeof *orig * (size_t)(n0 + 1));
    s->conv = lt_mem_calloc((size_t)n0 + 1, sizeof *s->conv);
    if (!orig || !s->conv) {
        lt_mem_free(orig);
        return lt_error(s->ctx, LT_ERR_NOMEM, "out of memory (layout_nchwc)");
    }
    memcpy(orig, g->nodes, sizeof *orig * (size_t)n0);
    lt_status st = LT_OK;
    int converted = 0;
    for (int i = 0; i < n0 && st == LT_OK; i++) {
        lt_node *n = orig[i];
        bool ok = false;
        switch (n->op) {
        case LT_OP_Conv: ok = conv_ok(s, n); break;
        case LT_OP_MaxPool: case LT_OP_AveragePool: case LT_OP_GlobalAveragePool: case LT_OP_GlobalMaxPool:
            ok = pool_ok(s, n);
            break;
        default: ok = ew_ok(s, n); break;
        }
        if (!ok) continue;
        st = convert(s, n);
        s->conv[i] = true;
        converted++;
    }
    /* originals go; their remaining readers (and graph outputs) read a reorder back */
    for (int i = 0; i < n0; i++)
        if (s->conv[i]) lt_node_remove(g, orig[i]);
    for (int i = 0; i < n0 && st == LT_OK; i++) {
        if (!s->conv[i]) continue;
        lt_node *n = orig[i];
        lt_value *y = n->out[0], *yb = blocked(s, y);
        if (!y->is_output && lt_value_count_uses(g, y) == 0) continue;
        int64_t d[LT_MAX_RANK];
        int r;
        lt_node *ro;
        if (!lt_value_static_shape(y, &r, d)) {
            st = lt_error(s->ctx, LT_ERR_INTERNAL, "value '%s' lost its shape", y->name);
            break;
        }
        char hint[256];
        snprintf(hint, sizeof hint, "%s_nchw", y->name);
        if ((st = new_node(s, "NchwcReorderOut", "lathe", 1, &yb, hint, NULL, &ro)) != LT_OK) break;
        if ((st = lt_node_set_attr_int(s->ctx, ro, "channels", d[1])) != LT_OK) break;
        if ((st = lt_node_infer(s->ctx, ro)) != LT_OK) break;
        if ((st = lt_value_replace_uses(s->ctx, g, y, ro->out[0])) != LT_OK) break;
        lt_pu_take_name(g, ro->out[0], y);
    }
    if (st == LT_OK && converted) st = lt_graph_sort(s->ctx, g);
    if (st == LT_OK && converted) *changed = true;
    if (st == LT_OK) st = drop_pairs(s, changed);
    lt_mem_free(orig);
    lt_mem_free(s->conv);
    s->conv = NULL;
    return st;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    int64_t B = host_block();
    if (!B || !m->graph) return LT_OK;
    nchwc_state s = {.ctx = ctx, .g = m->graph, .B = B};
    bool ch = false;
    lt_status st = run_graph(&s, &ch);
    lt_mem_free(s.blk);
    if (st == LT_OK && ch) st = lt_model_import_lathe(ctx, m);
    if (ch) *changed = true;
    return st;
}

/* Only when compiling for the host CPU with microkernels: the blocked ops lower to CPU prelude
 * calls only (no plain Loop IR form), so --no-microkernels keeps the model in NCHW. */
static bool enabled(const lt_pass_options *opt) { return lt_pass_target_nchwc(opt) && !opt->no_microkernels; }

const lt_pass lt_pass_layout_nchwc = {
    .name = "layout_nchwc",
    .min_level = 3,
    .run = run,
    .enabled = enabled,
    .summary = "convolution chains in the channel-blocked NCHW{B}c layout (CPU, AVX2/AVX-512)",
};
