/* lower_scan.c — `lower` hooks of the scan anchors: CumSum / CumProd and TopK. Each output row (one
 * position of every dim but the axis) is independent; along the axis the work is serial.
 *
 * Kernel shape: loops over the dims other than the axis ("o0", "o1", ...; role KEPT: the default
 * schedule parallelizes them on the CPU and gives each row one GPU thread), around serial loops over
 * the axis (role REDUCE: their iterations carry state, so no schedule parallelizes or vectorizes
 * them). Inputs are read with lt_lower_value, so a fused elementwise prologue is computed once per
 * element. Results are bit-identical to the interpreter's eval hooks (src/ops/reduce/reduce_scan.c):
 *   - CumSum / CumProd: a scalar accumulator (LET / ASSIGN) in the interpreter's type (double for
 *     every float type, uint64 for integers: fixed-width wrapping), updated in index order (reversed
 *     for `reverse`), each step's value (the one before the update for `exclusive`) rounded to the
 *     output type as the interpreter stores it (float16 straight from double, bfloat16 through
 *     float) and stored through the group's epilogue;
 *   - TopK: the k slots of the row in the outputs themselves (values and int64 indices) hold the
 *     best elements so far, in order. The axis is scanned in index order; an element that ranks
 *     strictly before the last slot (the first k always enter) is inserted, shifting the worse
 *     slots down. Strict comparison keeps equal elements in index order, as the interpreter's
 *     stable sort does; NaN ranks above every number (first for largest, last for smallest). The
 *     output is always sorted (also for sorted=0). A stored float16 / bfloat16 X is copied as bits
 *     (a NaN keeps its payload, as in the interpreter). Both outputs must be present and are stored
 *     as they are (nothing fuses after a node with two outputs). For larger k a heap replaces the
 *     insertion: over int64 keys of value and index for float32 (one integer compare each), else
 *     over the values with the same NaN-aware order.
 * K and the axis are compile-time constants (const_inputs); shape inference checked them (ops.def
 * CHECKS). A K known only at run time: TopKPadded (the split stage's, src/compile/split.h), the same
 * insertion with k read in the kernel and the outputs in the compact layout of an axis of length k
 * at the start of buffers of X's shape.
 */
#include "lower_impl.h"

#include <stdio.h>
#include <string.h>

#define K (lc->k)

/* The loops over the dims other than `axis`: variables and the multi-index they give. */
typedef struct rows {
    int rank, axis;
    int64_t dims[LT_MAX_RANK]; /* the input's */
    lt_lvar *ov[LT_MAX_RANK];  /* NULL at the axis */
    lt_lnode *idx[LT_MAX_RANK];
} rows;

static lt_status rows_init(lt_lctx *lc, const lt_node *n, int axis, rows *r) {
    memset(r, 0, sizeof *r);
    if (!lt_lower_shape(n->in[0], &r->rank, r->dims) || axis < 0 || axis >= r->rank)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input has no static shape or the axis is out of range");
    r->axis = axis;
    int ko = 0;
    for (int d = 0; d < r->rank; d++) {
        if (d == axis) continue;
        char name[16];
        snprintf(name, sizeof name, "o%d", ko++);
        r->ov[d] = lt_kernel_var(K, name, LT_INT64);
        if (!(r->idx[d] = lt_l_var(K, r->ov[d]))) return lt_lower_nomem(lc);
    }
    return LT_OK;
}

/* The multi-index of the row with `at` along the axis. */
static void rows_at(const rows *r, lt_lnode *at, lt_lnode **idx) {
    for (int d = 0; d < r->rank; d++) idx[d] = d == r->axis ? at : r->idx[d];
}

static lt_lnode *rows_loops(lt_lctx *lc, const rows *r, lt_lnode *body) {
    for (int d = r->rank - 1; d >= 0; d--)
        if (r->ov[d])
            body = lt_l_for(K, r->ov[d], LT_ROLE_KEPT, lt_l_int(K, 0), lt_l_int(K, r->dims[d]), LT_LOOP_SERIAL, body);
    return body;
}

/* X at idx in its compute type; a value computed in the group (a fused prologue) of a narrow float
 * type is rounded to it first, as the interpreter holds it between the two ops. *raw (when not NULL)
 * gets the load of a stored X of a narrow float type (its bits, NULL otherwise): TopK copies those,
 * as the interpreter does, instead of rounding the float back (CUDA's conversion makes every NaN
 * 0x7fff). */
static lt_status read_x(lt_lctx *lc, const lt_node *n, lt_lnode *const *idx, lt_lnode **x, lt_lnode **raw) {
    LT_TRY(lt_lower_value(lc, n->in[0], idx, x));
    lt_dtype dt = n->in[0]->type.dtype;
    if (raw) {
        const lt_lnode *l = (*x)->kind == LT_L_CAST ? lt_lexpr_a(*x) : NULL;
        *raw = l && l->kind == LT_L_LOAD && l->dtype == dt && lt_dtype_size(dt) == 2 && !lc->in_group[n->in[0]->id]
                   ? lt_l_load(K, l->buf, lt_lload_index(l))
                   : NULL;
    }
    bool rounded = *x && (*x)->kind == LT_L_CAST && lt_lexpr_a(*x)->dtype == dt; /* a Cast to dt's value */
    if ((dt == LT_FLOAT16 || dt == LT_BFLOAT16) && lc->in_group[n->in[0]->id] && !rounded)
        *x = lt_lower_conv(lc, lt_l_cast(K, dt, *x), dt);
    return LT_LNN(lc, *x);
}

static bool dtype_scannable(lt_dtype dt) { return lt_lower_dtype_ok(dt) && dt != LT_BOOL; }

/* ---- CumSum / CumProd ---- */

static int cum_axis(const lt_node *n) {
    int64_t a;
    int r = n->in[0]->type.rank;
    if (n->n_in < 2 || lt_lower_const_ints(n, 1, &a, 1) != 1) return -1;
    if (a < 0) a += r;
    return a >= 0 && a < r ? (int)a : -1;
}

static bool accept_cum(const lt_node *n, char *why, size_t size) {
    if (cum_axis(n) < 0) {
        snprintf(why, size, "the axis is not a constant in range");
        return false;
    }
    if (!dtype_scannable(n->in[0]->type.dtype)) {
        snprintf(why, size, "input dtype %s", lt_dtype_name(n->in[0]->type.dtype));
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* The interpreter's stored value of accumulator acc for output dtype dt, in dt's compute type. */
static lt_lnode *cum_value(lt_lctx *lc, lt_lnode *acc, lt_dtype dt) {
    if (dt == LT_BFLOAT16) /* lt_store_f64: bfloat16 rounds from float */
        return lt_lower_conv(lc, lt_l_cast(K, LT_BFLOAT16, lt_l_cast(K, LT_FLOAT, acc)), dt);
    return lt_lower_conv(lc, lt_l_cast(K, dt, acc), dt);
}

static lt_status l_cum(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    rows r;
    LT_TRY(rows_init(lc, n, cum_axis(n), &r));
    lt_dtype dt = n->in[0]->type.dtype;
    bool fl = lt_dtype_is_float(dt), prod = n->op == LT_OP_CumProd;
    bool excl = lt_attr_int(n, "exclusive", 0) != 0, rev = lt_attr_int(n, "reverse", 0) != 0;
    lt_dtype at = fl ? LT_DOUBLE : LT_UINT64; /* the interpreter's accumulator */
    int64_t len = r.dims[r.axis];
    lt_lvar *acc = lt_kernel_var(K, "acc", at), *j = lt_kernel_var(K, "r0", LT_INT64);
    lt_lvar *xv = lt_kernel_var(K, "x", at);
    if (!acc || !j || !xv) return lt_lower_nomem(lc);
    lt_lnode *pos = lt_l_var(K, j);
    if (rev) pos = lt_l_binary(K, LT_LOP_SUB, lt_l_int(K, len - 1), pos);
    lt_lnode *idx[LT_MAX_RANK], *x = NULL;
    rows_at(&r, pos, idx);
    LT_TRY(read_x(lc, n, idx, &x, NULL));
    lt_lnode *s[4];
    int ns = 0;
    s[ns++] = lt_l_let(K, xv, lt_l_cast(K, at, x));
    lt_lnode *upd =
        lt_l_assign(K, acc, lt_l_binary(K, prod ? LT_LOP_MUL : LT_LOP_ADD, lt_l_var(K, acc), lt_l_var(K, xv)));
    if (!excl) s[ns++] = upd;
    LT_TRY(lt_lower_store_out(lc, n->out[0], idx, cum_value(lc, lt_l_var(K, acc), dt), &s[ns]));
    ns++;
    if (excl) s[ns++] = upd;
    lt_lnode *scan = lt_l_for(K, j, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, len), LT_LOOP_SERIAL, lt_l_seq(K, ns, s));
    lt_lnode *init = fl ? lt_l_float(K, LT_DOUBLE, prod ? 1 : 0) : lt_l_cast(K, LT_UINT64, lt_l_int(K, prod ? 1 : 0));
    lt_lnode *row[2] = {lt_l_let(K, acc, init), scan};
    *res = rows_loops(lc, &r, lt_l_seq(K, 2, row));
    return LT_LNN(lc, *res);
}

/* ---- TopK ---- */

static int topk_axis(const lt_node *n) {
    int r = n->in[0]->type.rank;
    int64_t a = lt_attr_int(n, "axis", -1);
    if (a < 0) a += r;
    return a >= 0 && a < r ? (int)a : -1;
}

static bool accept_topk(const lt_node *n, char *why, size_t size) {
    int a = topk_axis(n);
    if (a < 0) {
        snprintf(why, size, "axis out of range");
        return false;
    }
    if (n->n_out < 2 || !n->out[0] || !n->out[1]) {
        snprintf(why, size, "an output is absent");
        return false;
    }
    if (!dtype_scannable(n->in[0]->type.dtype) || n->out[1]->type.dtype != LT_INT64) {
        snprintf(why, size, "input dtype %s", lt_dtype_name(n->in[0]->type.dtype));
        return false;
    }
    int r;
    int64_t xd[LT_MAX_RANK], vd[LT_MAX_RANK], id[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &r, xd) || !lt_lower_shape(n->out[0], &r, vd) || !lt_lower_shape(n->out[1], &r, id) ||
        memcmp(vd, id, sizeof(int64_t) * (size_t)r) != 0 || vd[a] < 1 || vd[a] > xd[a]) {
        snprintf(why, size, "K is not known at compile time");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

typedef struct topk {
    lt_lctx *lc;
    const rows *r;
    int64_t k;
    lt_lvar *kvar;   /* TopKPadded: k known at run time (the outputs' axis length is kvar, not odims) */
    int64_t odims[LT_MAX_RANK];
    lt_dtype dt;     /* values */
    bool largest;
    lt_lbuf *vb, *ib; /* the two outputs */
} topk;

/* Flat offset of slot s (an expression) of the row in the outputs (TopKPadded: in the compact layout
 * of an axis of length kvar). */
static lt_lnode *slot(topk *t, lt_lnode *s) {
    lt_lctx *lc = t->lc;
    lt_lnode *idx[LT_MAX_RANK] = {NULL};
    rows_at(t->r, s, idx);
    if (!t->kvar) return lt_lower_flat(t->lc, t->r->rank, t->odims, idx);
    lt_lnode *f = idx[0];
    for (int d = 1; d < t->r->rank; d++)
        f = lt_l_add(K, lt_l_mul(K, f, d == t->r->axis ? lt_l_var(K, t->kvar) : lt_l_int(K, t->odims[d])), idx[d]);
    return f;
}

static lt_lnode *slot_value(topk *t, lt_lnode *s) {
    lt_lctx *lc = t->lc;
    return lt_lower_conv(lc, lt_l_load(K, t->vb, slot(t, s)), t->dt);
}

/* Does a rank strictly before b (both leaves: a variable or an immediate, read twice)? */
static lt_lnode *before(topk *t, lt_lnode *a, lt_lnode *b) {
    lt_lctx *lc = t->lc;
    lt_lnode *cmp = lt_l_binary(K, t->largest ? LT_LOP_GT : LT_LOP_LT, a, b);
    if (!lt_dtype_is_float(t->dt)) return cmp;
    /* NaN is the greatest: for largest a NaN a precedes any number b, for smallest a number a
     * precedes a NaN b; two NaNs tie */
    lt_lnode *an = lt_l_unary(K, LT_LOP_ISNAN, a), *bn = lt_l_unary(K, LT_LOP_ISNAN, b);
    lt_lnode *nan = t->largest ? lt_l_binary(K, LT_LOP_AND, an, lt_l_unary(K, LT_LOP_NOT, bn))
                               : lt_l_binary(K, LT_LOP_AND, lt_l_unary(K, LT_LOP_NOT, an), bn);
    return lt_l_binary(K, LT_LOP_OR, nan, cmp);
}

/* Insert element x (a variable) of index j into the first m+1 slots, whose first m hold the best so
 * far in order: walking up from slot m-1, each slot x ranks before moves down one; x goes where the
 * walk stopped. (The walk does not break: the slots are sorted, so once x does not rank before one
 * it ranks before none above it.) Slot m, when it was held, is dropped. */
static lt_lnode *insert(topk *t, lt_lvar *x, lt_lnode *raw, lt_lnode *j, lt_lnode *m) {
    lt_lctx *lc = t->lc;
    lt_lvar *pos = lt_kernel_var(K, "pos", LT_INT64), *q = lt_kernel_var(K, "q", LT_INT64);
    lt_lvar *cur = lt_kernel_var(K, "cur", lt_lower_cdtype(t->dt));
    if (!pos || !q || !cur) return NULL;
    /* s = m - 1 - q */
    lt_lnode *s = lt_l_binary(K, LT_LOP_SUB, lt_l_binary(K, LT_LOP_SUB, m, lt_l_int(K, 1)), lt_l_var(K, q));
    lt_lnode *s1 = lt_l_binary(K, LT_LOP_SUB, m, lt_l_var(K, q));
    lt_lnode *mv[3] = {
        lt_l_store(K, t->vb, slot(t, s1), lt_l_load(K, t->vb, slot(t, s))),
        lt_l_store(K, t->ib, slot(t, s1), lt_l_load(K, t->ib, slot(t, s))),
        lt_l_assign(K, pos, s),
    };
    lt_lnode *step[2] = {
        lt_l_let(K, cur, slot_value(t, s)),
        lt_l_if(K, before(t, lt_l_var(K, x), lt_l_var(K, cur)), lt_l_seq(K, 3, mv), NULL),
    };
    lt_lnode *walk = lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), m, LT_LOOP_SERIAL, lt_l_seq(K, 2, step));
    lt_lnode *xs = raw ? raw : x->dtype == t->dt ? lt_l_var(K, x) : lt_l_cast(K, t->dt, lt_l_var(K, x));
    lt_lnode *all[4] = {
        lt_l_let(K, pos, m),
        walk,
        lt_l_store(K, t->vb, slot(t, lt_l_var(K, pos)), xs),
        lt_l_store(K, t->ib, slot(t, lt_l_var(K, pos)), j),
    };
    return lt_l_seq(K, 4, all);
}

/* ---- TopK by a heap (k > TOPK_HEAP_MIN): O(len log k) instead of the insertion's O(len k) ----
 * The k slots of the row hold a binary heap whose root (slot 0) is the worst element kept: an element
 * ranks after another when its value ranks after (`before`, NaN included) or, on equal values, when
 * its index is larger, a total order that gives the insertion's (and the interpreter's stable sort's)
 * result. The first k elements enter by sifting up; each later one that ranks before the root
 * replaces it and sifts down; then a heap sort (the root swapped to the end, the heap shrunk) leaves
 * the slots best first. Moves go through a hole (the element in flight held in variables). Only for
 * types stored as they are computed (not float16 / bfloat16, whose bits the insertion copies). */
#define TOPK_HEAP_MIN 16
#define TOPK_PADDED_HEAP_MIN 64 /* TopKPadded: the heap when the axis is longer (k is not known) */

/* a ranks after b (a and b: a value and an index variable each) */
static lt_lnode *heap_worse(topk *t, lt_lvar *av, lt_lvar *ai, lt_lvar *bv, lt_lvar *bi) {
    lt_lctx *lc = t->lc;
    lt_lnode *tie = lt_l_binary(K, LT_LOP_AND, lt_l_unary(K, LT_LOP_NOT, before(t, lt_l_var(K, av), lt_l_var(K, bv))),
                                lt_l_binary(K, LT_LOP_GT, lt_l_var(K, ai), lt_l_var(K, bi)));
    return lt_l_binary(K, LT_LOP_OR, before(t, lt_l_var(K, bv), lt_l_var(K, av)), tie);
}

/* LET v = the value of slot s; LET i = its index (s: an expression, built twice). */
static void heap_read(topk *t, lt_lnode *(*s)(topk *, void *), void *u, lt_lvar *v, lt_lvar *i, lt_lnode **out) {
    lt_lctx *lc = t->lc;
    out[0] = lt_l_let(K, v, slot_value(t, s(t, u)));
    out[1] = lt_l_let(K, i, lt_l_load(K, t->ib, slot(t, s(t, u))));
}

static lt_lnode *at_var(topk *t, void *u) { return lt_l_var(t->lc->k, u); }

/* slot d = (v, i) */
static lt_lnode *heap_write(topk *t, lt_lnode *d, lt_lnode *d2, lt_lvar *v, lt_lvar *i) {
    lt_lctx *lc = t->lc;
    lt_lnode *w[2] = {lt_l_store(K, t->vb, slot(t, d), lt_l_var(K, v)), lt_l_store(K, t->ib, slot(t, d2), lt_l_var(K, i))};
    return lt_l_seq(K, 2, w);
}

/* Iterations of a sift: the heap's depth + 1 (k up to the axis length when k is known at run time). */
static int heap_levels(const topk *t) {
    int64_t k = t->kvar ? t->r->dims[t->r->axis] : t->k;
    int l = 1;
    while (((int64_t)1 << (l - 1)) <= k) l++;
    return l;
}

/* k + add: an immediate, or TopKPadded's run-time k */
static lt_lnode *kplus(topk *t, int64_t add) {
    lt_lctx *lc = t->lc;
    if (!t->kvar) return lt_l_int(K, t->k + add);
    return add ? lt_l_add(K, lt_l_var(K, t->kvar), lt_l_int(K, add)) : lt_l_var(K, t->kvar);
}

/* Sift (mv, mi) down from slot 0 in a heap of `size` slots (an expression), then store it. */
static lt_lnode *heap_sift_down(topk *t, lt_lvar *mv, lt_lvar *mi, lt_lnode *size_a, lt_lnode *size_b) {
    lt_lctx *lc = t->lc;
    lt_dtype cd = lt_lower_cdtype(t->dt);
    lt_lvar *pos = lt_kernel_var(K, "pos", LT_INT64), *act = lt_kernel_var(K, "act", LT_INT64);
    lt_lvar *q = lt_kernel_var(K, "q", LT_INT64), *l = lt_kernel_var(K, "l", LT_INT64), *w = lt_kernel_var(K, "w", LT_INT64);
    lt_lvar *wv = lt_kernel_var(K, "wv", cd), *wi = lt_kernel_var(K, "wi", LT_INT64);
    lt_lvar *rv = lt_kernel_var(K, "rv", cd), *ri = lt_kernel_var(K, "ri", LT_INT64), *r = lt_kernel_var(K, "rc", LT_INT64);
    if (!pos || !act || !q || !l || !w || !wv || !wi || !rv || !ri || !r) return NULL;
    lt_lnode *rd[2], *rr[2];
    heap_read(t, at_var, l, wv, wi, rd);
    heap_read(t, at_var, r, rv, ri, rr);
    lt_lnode *take_r[3] = {lt_l_assign(K, w, lt_l_var(K, r)), lt_l_assign(K, wv, lt_l_var(K, rv)), lt_l_assign(K, wi, lt_l_var(K, ri))};
    lt_lnode *right[4] = {rr[0], rr[1], lt_l_if(K, heap_worse(t, rv, ri, wv, wi), lt_l_seq(K, 3, take_r), NULL)};
    lt_lnode *move[2] = {heap_write(t, lt_l_var(K, pos), lt_l_var(K, pos), wv, wi), lt_l_assign(K, pos, lt_l_var(K, w))};
    lt_lnode *child[6] = {
        lt_l_let(K, w, lt_l_var(K, l)), rd[0], rd[1],
        lt_l_let(K, r, lt_l_add(K, lt_l_var(K, l), lt_l_int(K, 1))),
        lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, r), size_b), lt_l_seq(K, 3, right), NULL),
        lt_l_if(K, heap_worse(t, wv, wi, mv, mi), lt_l_seq(K, 2, move), lt_l_assign(K, act, lt_l_int(K, 0))),
    };
    lt_lnode *level[2] = {
        lt_l_let(K, l, lt_l_add(K, lt_l_mul(K, lt_l_var(K, pos), lt_l_int(K, 2)), lt_l_int(K, 1))),
        lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, l), size_a), lt_l_seq(K, 6, child), lt_l_assign(K, act, lt_l_int(K, 0))),
    };
    lt_lnode *body = lt_l_if(K, lt_l_binary(K, LT_LOP_NE, lt_l_var(K, act), lt_l_int(K, 0)), lt_l_seq(K, 2, level), NULL);
    lt_lnode *all[4] = {
        lt_l_let(K, pos, lt_l_int(K, 0)), lt_l_let(K, act, lt_l_int(K, 1)),
        lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, heap_levels(t)), LT_LOOP_SERIAL, body),
        heap_write(t, lt_l_var(K, pos), lt_l_var(K, pos), mv, mi),
    };
    return lt_l_seq(K, 4, all);
}

/* Element (x, j) sifted up from slot j (the heap holds slots [0, j)), then stored. */
static lt_lnode *heap_sift_up(topk *t, lt_lvar *mv, lt_lvar *mi, lt_lvar *j) {
    lt_lctx *lc = t->lc;
    lt_dtype cd = lt_lower_cdtype(t->dt);
    lt_lvar *pos = lt_kernel_var(K, "pos", LT_INT64), *act = lt_kernel_var(K, "act", LT_INT64);
    lt_lvar *q = lt_kernel_var(K, "q", LT_INT64), *p = lt_kernel_var(K, "par", LT_INT64);
    lt_lvar *pv = lt_kernel_var(K, "pv", cd), *pi = lt_kernel_var(K, "pi", LT_INT64);
    if (!pos || !act || !q || !p || !pv || !pi) return NULL;
    lt_lnode *rd[2];
    heap_read(t, at_var, p, pv, pi, rd);
    lt_lnode *move[2] = {heap_write(t, lt_l_var(K, pos), lt_l_var(K, pos), pv, pi), lt_l_assign(K, pos, lt_l_var(K, p))};
    lt_lnode *up[4] = {
        lt_l_let(K, p, lt_l_binary(K, LT_LOP_DIV, lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, pos), lt_l_int(K, 1)), lt_l_int(K, 2))),
        rd[0], rd[1],
        lt_l_if(K, heap_worse(t, mv, mi, pv, pi), lt_l_seq(K, 2, move), lt_l_assign(K, act, lt_l_int(K, 0))),
    };
    lt_lnode *go = lt_l_binary(K, LT_LOP_AND, lt_l_binary(K, LT_LOP_NE, lt_l_var(K, act), lt_l_int(K, 0)),
                               lt_l_binary(K, LT_LOP_GT, lt_l_var(K, pos), lt_l_int(K, 0)));
    lt_lnode *all[4] = {
        lt_l_let(K, pos, lt_l_var(K, j)), lt_l_let(K, act, lt_l_int(K, 1)),
        lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, heap_levels(t)), LT_LOOP_SERIAL,
                 lt_l_if(K, go, lt_l_seq(K, 4, up), NULL)),
        heap_write(t, lt_l_var(K, pos), lt_l_var(K, pos), mv, mi),
    };
    return lt_l_seq(K, 4, all);
}

/* The row's statements (TopKPadded wraps them in its k guard and the rows loops; TopK in the rows
 * loops). */
static lt_status topk_heap_row(lt_lctx *lc, const lt_node *n, topk *t, lt_lnode **res) {
    const rows *r = t->r;
    int64_t len = r->dims[r->axis];
    lt_dtype cd = lt_lower_cdtype(t->dt);
    lt_lvar *j0 = lt_kernel_var(K, "r0", LT_INT64), *j1 = lt_kernel_var(K, "r1", LT_INT64), *e = lt_kernel_var(K, "r2", LT_INT64);
    lt_lvar *x0 = lt_kernel_var(K, "x", cd), *xi0 = lt_kernel_var(K, "xi", LT_INT64);
    lt_lvar *x1 = lt_kernel_var(K, "x", cd), *xi1 = lt_kernel_var(K, "xi", LT_INT64);
    lt_lvar *root = lt_kernel_var(K, "root", cd), *hv = lt_kernel_var(K, "hv", cd), *hi = lt_kernel_var(K, "hi", LT_INT64);
    lt_lvar *last = lt_kernel_var(K, "last", LT_INT64);
    if (!j0 || !j1 || !e || !x0 || !xi0 || !x1 || !xi1 || !root || !hv || !hi || !last) return lt_lower_nomem(lc);
    lt_lnode *idx[LT_MAX_RANK], *xv = NULL;
    /* the first k: sifted up */
    rows_at(r, lt_l_var(K, j0), idx);
    LT_TRY(read_x(lc, n, idx, &xv, NULL));
    lt_lnode *up = heap_sift_up(t, x0, xi0, j0);
    if (!up) return lt_lower_nomem(lc);
    lt_lnode *b0[3] = {lt_l_let(K, x0, xv), lt_l_let(K, xi0, lt_l_var(K, j0)), up};
    lt_lnode *fill = lt_l_for(K, j0, LT_ROLE_REDUCE, lt_l_int(K, 0), kplus(t, 0), LT_LOOP_SERIAL, lt_l_seq(K, 3, b0));
    /* the others: each that ranks before the root replaces it */
    rows_at(r, lt_l_var(K, j1), idx);
    LT_TRY(read_x(lc, n, idx, &xv, NULL));
    lt_lnode *down = heap_sift_down(t, x1, xi1, kplus(t, 0), kplus(t, 0));
    if (!down) return lt_lower_nomem(lc);
    lt_lnode *enter[3] = {lt_l_let(K, xi1, lt_l_var(K, j1)), down, lt_l_assign(K, root, slot_value(t, lt_l_int(K, 0)))};
    lt_lnode *b1[2] = {lt_l_let(K, x1, xv), lt_l_if(K, before(t, lt_l_var(K, x1), lt_l_var(K, root)), lt_l_seq(K, 3, enter), NULL)};
    lt_lnode *scan = lt_l_for(K, j1, LT_ROLE_REDUCE, kplus(t, 0),
                              t->kvar ? lt_l_binary(K, LT_LOP_SUB, lt_l_int(K, len), kplus(t, 0)) : lt_l_int(K, len - t->k),
                              LT_LOOP_SERIAL, lt_l_seq(K, 2, b1));
    /* heap sort: the root to slot last = k-1-e, the heap [0, last) */
    lt_lnode *down2 = heap_sift_down(t, hv, hi, lt_l_var(K, last), lt_l_var(K, last));
    if (!down2) return lt_lower_nomem(lc);
    lt_lnode *rd[2];
    heap_read(t, at_var, last, hv, hi, rd);
    lt_lnode *sort_body[5] = {
        lt_l_let(K, last, lt_l_binary(K, LT_LOP_SUB, kplus(t, -1), lt_l_var(K, e))), rd[0], rd[1],
        lt_l_seq(K, 2, (lt_lnode *[]){lt_l_store(K, t->vb, slot(t, lt_l_var(K, last)), lt_l_load(K, t->vb, slot(t, lt_l_int(K, 0)))),
                                       lt_l_store(K, t->ib, slot(t, lt_l_var(K, last)), lt_l_load(K, t->ib, slot(t, lt_l_int(K, 0))))}),
        down2,
    };
    lt_lnode *sort = lt_l_for(K, e, LT_ROLE_REDUCE, lt_l_int(K, 0), kplus(t, -1), LT_LOOP_SERIAL, lt_l_seq(K, 5, sort_body));
    bool any_rest = t->kvar || len > t->k;
    lt_lnode *row[4] = {fill, lt_l_let(K, root, slot_value(t, lt_l_int(K, 0))), scan, sort};
    *res = lt_l_seq(K, any_rest ? 4 : 2, any_rest ? row : (lt_lnode *[]){fill, sort});
    return LT_LNN(lc, *res);
}

/* ---- TopK of float32 by integer keys (a heap of k > TOPK_HEAP_MIN) ----
 * Each element enters the heap as one int64 key, ord(x) * 2^31 + (2^31 - 1 - j): ord (the prelude's
 * lt_f32_order: the value's order, -0 = +0, NaN above every number; for smallest its reverse, -1 -
 * ord, NaN below every number) then the index j, smaller first. A larger key ranks before a smaller
 * one, the order of the float heap above, but a comparison is one integer compare: no NaN tests, and
 * the larger child is picked with selects. The k slots of the indices output hold the keys while the
 * row is scanned (a min-heap: the root is the worst kept); after the heap sort (best first), each slot
 * is decoded: its index from the low 31 bits, its value X at that index read again, so a stored value
 * is copied exactly (-0 and NaN payloads included). Axes of at most 2^31 elements (no key and no
 * step of its arithmetic overflows, in whatever order the simplifier leaves the sum). */
static bool key_topk_fits(const topk *t) { return t->dt == LT_FLOAT && t->r->dims[t->r->axis] <= ((int64_t)1 << 31); }

static lt_lnode *elem_key(topk *t, lt_lnode *x, lt_lnode *j) {
    lt_lctx *lc = t->lc;
    lt_lnode *args[1] = {x};
    lt_lnode *ord = lt_l_call(K, LT_INT64, "lt_f32_order", 1, args);
    if (!t->largest) ord = lt_l_binary(K, LT_LOP_SUB, lt_l_int(K, -1), ord);
    return lt_lower_heap_key(lc, ord, j);
}

static lt_lnode *key_at(topk *t, lt_lnode *s) { return lt_l_load(t->lc->k, t->ib, slot(t, s)); }

/* The flat element of heap slot s (lt_heap_slot_fn). */
static lt_lnode *topk_slot(void *t, lt_lnode *s) { return slot(t, s); }

/* Key c (a variable) sifted down from slot 0 of a min-heap of `size` slots, then stored. */
static lt_lnode *key_sift_down(topk *t, lt_lvar *c, lt_lnode *size) {
    return lt_lower_heap_sift_down(t->lc, t->ib, topk_slot, t, c, lt_l_int(t->lc->k, 0), size, heap_levels(t), false);
}

/* Key c (a variable) sifted up from slot j (the heap holds slots [0, j)), then stored. */
static lt_lnode *key_sift_up(topk *t, lt_lvar *c, lt_lvar *j) {
    lt_lctx *lc = t->lc;
    lt_lvar *pos = lt_kernel_var(K, "pos", LT_INT64), *act = lt_kernel_var(K, "act", LT_INT64);
    lt_lvar *q = lt_kernel_var(K, "q", LT_INT64), *p = lt_kernel_var(K, "par", LT_INT64), *pc = lt_kernel_var(K, "pc", LT_INT64);
    if (!pos || !act || !q || !p || !pc) return NULL;
    lt_lnode *move[2] = {lt_l_store(K, t->ib, slot(t, lt_l_var(K, pos)), lt_l_var(K, pc)), lt_l_assign(K, pos, lt_l_var(K, p))};
    lt_lnode *up[3] = {
        lt_l_let(K, p, lt_l_binary(K, LT_LOP_DIV, lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, pos), lt_l_int(K, 1)), lt_l_int(K, 2))),
        lt_l_let(K, pc, key_at(t, lt_l_var(K, p))),
        lt_l_if(K, lt_l_binary(K, LT_LOP_GT, lt_l_var(K, pc), lt_l_var(K, c)), lt_l_seq(K, 2, move), lt_l_assign(K, act, lt_l_int(K, 0))),
    };
    lt_lnode *go = lt_l_binary(K, LT_LOP_AND, lt_l_binary(K, LT_LOP_NE, lt_l_var(K, act), lt_l_int(K, 0)),
                               lt_l_binary(K, LT_LOP_GT, lt_l_var(K, pos), lt_l_int(K, 0)));
    lt_lnode *all[4] = {
        lt_l_let(K, pos, lt_l_var(K, j)), lt_l_let(K, act, lt_l_int(K, 1)),
        lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, heap_levels(t)), LT_LOOP_SERIAL,
                 lt_l_if(K, go, lt_l_seq(K, 3, up), NULL)),
        lt_l_store(K, t->ib, slot(t, lt_l_var(K, pos)), lt_l_var(K, c)),
    };
    return lt_l_seq(K, 4, all);
}

/* The row's statements (wrapped as topk_heap_row's are). */
static lt_status topk_key_row(lt_lctx *lc, const lt_node *n, topk *t, lt_lnode **res) {
    const rows *r = t->r;
    int64_t len = r->dims[r->axis];
    lt_lvar *j0 = lt_kernel_var(K, "r0", LT_INT64), *j1 = lt_kernel_var(K, "r1", LT_INT64), *e = lt_kernel_var(K, "r2", LT_INT64);
    lt_lvar *j3 = lt_kernel_var(K, "r3", LT_INT64), *c0 = lt_kernel_var(K, "c", LT_INT64), *c1 = lt_kernel_var(K, "c", LT_INT64);
    lt_lvar *root = lt_kernel_var(K, "root", LT_INT64), *h = lt_kernel_var(K, "hc", LT_INT64);
    lt_lvar *last = lt_kernel_var(K, "last", LT_INT64), *ix = lt_kernel_var(K, "ix", LT_INT64);
    if (!j0 || !j1 || !e || !j3 || !c0 || !c1 || !root || !h || !last || !ix) return lt_lower_nomem(lc);
    lt_lnode *idx[LT_MAX_RANK], *xv = NULL;
    /* the first k: sifted up */
    rows_at(r, lt_l_var(K, j0), idx);
    LT_TRY(read_x(lc, n, idx, &xv, NULL));
    lt_lnode *up = key_sift_up(t, c0, j0);
    if (!up) return lt_lower_nomem(lc);
    lt_lnode *b0[2] = {lt_l_let(K, c0, elem_key(t, xv, lt_l_var(K, j0))), up};
    lt_lnode *fill = lt_l_for(K, j0, LT_ROLE_REDUCE, lt_l_int(K, 0), kplus(t, 0), LT_LOOP_SERIAL, lt_l_seq(K, 2, b0));
    /* the others: each whose key is above the root's replaces it */
    rows_at(r, lt_l_var(K, j1), idx);
    LT_TRY(read_x(lc, n, idx, &xv, NULL));
    lt_lnode *down = key_sift_down(t, c1, kplus(t, 0));
    if (!down) return lt_lower_nomem(lc);
    lt_lnode *enter[2] = {down, lt_l_assign(K, root, key_at(t, lt_l_int(K, 0)))};
    lt_lnode *b1[2] = {lt_l_let(K, c1, elem_key(t, xv, lt_l_var(K, j1))),
                       lt_l_if(K, lt_l_binary(K, LT_LOP_GT, lt_l_var(K, c1), lt_l_var(K, root)), lt_l_seq(K, 2, enter), NULL)};
    lt_lnode *scan = lt_l_for(K, j1, LT_ROLE_REDUCE, kplus(t, 0),
                              t->kvar ? lt_l_binary(K, LT_LOP_SUB, lt_l_int(K, len), kplus(t, 0)) : lt_l_int(K, len - t->k),
                              LT_LOOP_SERIAL, lt_l_seq(K, 2, b1));
    /* heap sort: the root (the worst left) to slot last = k-1-e, the heap [0, last) */
    lt_lnode *down2 = key_sift_down(t, h, lt_l_var(K, last));
    if (!down2) return lt_lower_nomem(lc);
    lt_lnode *sort_body[4] = {
        lt_l_let(K, last, lt_l_binary(K, LT_LOP_SUB, kplus(t, -1), lt_l_var(K, e))),
        lt_l_let(K, h, key_at(t, lt_l_var(K, last))),
        lt_l_store(K, t->ib, slot(t, lt_l_var(K, last)), key_at(t, lt_l_int(K, 0))),
        down2,
    };
    lt_lnode *sort = lt_l_for(K, e, LT_ROLE_REDUCE, lt_l_int(K, 0), kplus(t, -1), LT_LOOP_SERIAL, lt_l_seq(K, 4, sort_body));
    /* decode: the index from the low 31 bits, the value read again */
    rows_at(r, lt_l_var(K, ix), idx);
    LT_TRY(read_x(lc, n, idx, &xv, NULL));
    lt_lnode *dec[3] = {
        lt_l_let(K, ix, lt_lower_heap_key_index(lc, key_at(t, lt_l_var(K, j3)))),
        lt_l_store(K, t->ib, slot(t, lt_l_var(K, j3)), lt_l_var(K, ix)),
        lt_l_store(K, t->vb, slot(t, lt_l_var(K, j3)), xv),
    };
    lt_lnode *decode = lt_l_for(K, j3, LT_ROLE_REDUCE, lt_l_int(K, 0), kplus(t, 0), LT_LOOP_SERIAL, lt_l_seq(K, 3, dec));
    bool any_rest = t->kvar || len > t->k;
    lt_lnode *row[5] = {fill, lt_l_let(K, root, key_at(t, lt_l_int(K, 0))), scan, sort, decode};
    *res = any_rest ? lt_l_seq(K, 5, row) : lt_l_seq(K, 3, (lt_lnode *[]){fill, sort, decode});
    return LT_LNN(lc, *res);
}

static lt_status l_topk_heap(lt_lctx *lc, const lt_node *n, topk *t, lt_lnode **res) {
    LT_TRY(topk_heap_row(lc, n, t, res));
    *res = rows_loops(lc, t->r, *res);
    return LT_LNN(lc, *res);
}

static lt_status l_topk(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    rows r;
    LT_TRY(rows_init(lc, n, topk_axis(n), &r));
    topk t = {.lc = lc, .r = &r, .dt = n->in[0]->type.dtype};
    int orank;
    if (!lt_lower_shape(n->out[0], &orank, t.odims) || orank != r.rank)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "output has no static shape");
    t.k = t.odims[r.axis];
    t.largest = n->opset < 11 || lt_attr_int(n, "largest", 1) != 0;
    t.vb = lc->vbuf[n->out[0]->id];
    t.ib = lc->vbuf[n->out[1]->id];
    if (!t.vb || !t.ib || t.vb->dtype != t.dt || t.ib->dtype != LT_INT64)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "the outputs are not stored as they are");
    int64_t len = r.dims[r.axis];
    lt_dtype cd = lt_lower_cdtype(t.dt);
    if (t.k > TOPK_HEAP_MIN && key_topk_fits(&t)) {
        LT_TRY(topk_key_row(lc, n, &t, res));
        *res = rows_loops(lc, &r, *res);
        return LT_LNN(lc, *res);
    }
    if (t.k > TOPK_HEAP_MIN && cd == t.dt) return l_topk_heap(lc, n, &t, res);
    lt_lnode *row[3];
    int nr = 0;
    /* the first k elements always enter: element j is inserted into slots [0, j] */
    {
        lt_lvar *j = lt_kernel_var(K, "r0", LT_INT64), *x = lt_kernel_var(K, "x", cd);
        if (!j || !x) return lt_lower_nomem(lc);
        lt_lnode *idx[LT_MAX_RANK], *xv = NULL, *raw = NULL;
        rows_at(&r, lt_l_var(K, j), idx);
        LT_TRY(read_x(lc, n, idx, &xv, &raw));
        lt_lnode *b[2] = {lt_l_let(K, x, xv), insert(&t, x, raw, lt_l_var(K, j), lt_l_var(K, j))};
        row[nr++] = lt_l_for(K, j, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, t.k), LT_LOOP_SERIAL, lt_l_seq(K, 2, b));
    }
    /* the rest enter when they rank before the last slot (kept in `last`) */
    if (len > t.k) {
        lt_lvar *j = lt_kernel_var(K, "r1", LT_INT64), *x = lt_kernel_var(K, "x", cd);
        lt_lvar *last = lt_kernel_var(K, "last", cd);
        if (!j || !x || !last) return lt_lower_nomem(lc);
        lt_lnode *idx[LT_MAX_RANK], *xv = NULL, *raw = NULL;
        rows_at(&r, lt_l_var(K, j), idx);
        LT_TRY(read_x(lc, n, idx, &xv, &raw));
        lt_lnode *in[2] = {insert(&t, x, raw, lt_l_var(K, j), lt_l_int(K, t.k - 1)),
                           lt_l_assign(K, last, slot_value(&t, lt_l_int(K, t.k - 1)))};
        lt_lnode *b[2] = {lt_l_let(K, x, xv),
                          lt_l_if(K, before(&t, lt_l_var(K, x), lt_l_var(K, last)), lt_l_seq(K, 2, in), NULL)};
        row[nr++] = lt_l_let(K, last, slot_value(&t, lt_l_int(K, t.k - 1)));
        row[nr++] = lt_l_for(K, j, LT_ROLE_REDUCE, lt_l_int(K, t.k), lt_l_int(K, len - t.k), LT_LOOP_SERIAL,
                             lt_l_seq(K, 2, b));
    }
    *res = rows_loops(lc, &r, lt_l_seq(K, nr, row));
    return LT_LNN(lc, *res);
}

/* ---- TopKPadded: k read at run time ---- */

static bool accept_topk_padded(const lt_node *n, char *why, size_t size) {
    int r;
    int64_t xd[LT_MAX_RANK];
    if (topk_axis(n) < 0 || !lt_lower_shape(n->in[0], &r, xd)) {
        snprintf(why, size, "axis out of range or no static shape");
        return false;
    }
    if (n->n_out < 3 || !n->out[0] || !n->out[1] || !n->out[2]) {
        snprintf(why, size, "an output is absent");
        return false;
    }
    if (!dtype_scannable(n->in[0]->type.dtype) || !lt_dtype_is_int(n->in[1]->type.dtype)) {
        snprintf(why, size, "input dtype %s", lt_dtype_name(n->in[0]->type.dtype));
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* Per row: k = K[0] clamped to [0, len] (the count output gets K[0] itself: the split's rest refuses
 * a k out of range), then as TopK: the first k elements inserted, the others when they rank before
 * the last slot; slots in the compact layout of an axis of length k. */
/* TopKPadded's row by insertion (k > 0 known at run time in t->kvar): the first k elements inserted,
 * the others when they rank before the last slot. */
static lt_status padded_insertion_row(lt_lctx *lc, const lt_node *n, topk *t, lt_lnode **res) {
    const rows *rr = t->r;
    int64_t len = rr->dims[rr->axis];
    lt_dtype cd = lt_lower_cdtype(t->dt);
    lt_lvar *j0 = lt_kernel_var(K, "r0", LT_INT64), *j1 = lt_kernel_var(K, "r1", LT_INT64);
    lt_lvar *x0 = lt_kernel_var(K, "x", cd), *x1 = lt_kernel_var(K, "x", cd), *last = lt_kernel_var(K, "last", cd);
    if (!j0 || !j1 || !x0 || !x1 || !last) return lt_lower_nomem(lc);
    lt_lnode *km1 = lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, t->kvar), lt_l_int(K, 1));
    /* the first k elements always enter: element j is inserted into slots [0, j] */
    lt_lnode *idx[LT_MAX_RANK], *xv = NULL, *raw = NULL;
    rows_at(rr, lt_l_var(K, j0), idx);
    LT_TRY(read_x(lc, n, idx, &xv, &raw));
    lt_lnode *b0[2] = {lt_l_let(K, x0, xv), insert(t, x0, raw, lt_l_var(K, j0), lt_l_var(K, j0))};
    lt_lnode *first = lt_l_for(K, j0, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_var(K, t->kvar), LT_LOOP_SERIAL, lt_l_seq(K, 2, b0));
    /* the rest enter when they rank before the last slot */
    rows_at(rr, lt_l_var(K, j1), idx);
    LT_TRY(read_x(lc, n, idx, &xv, &raw));
    lt_lnode *in[2] = {insert(t, x1, raw, lt_l_var(K, j1), km1),
                       lt_l_assign(K, last, slot_value(t, lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, t->kvar), lt_l_int(K, 1))))};
    lt_lnode *b1[2] = {lt_l_let(K, x1, xv), lt_l_if(K, before(t, lt_l_var(K, x1), lt_l_var(K, last)), lt_l_seq(K, 2, in), NULL)};
    lt_lnode *rest = lt_l_for(K, j1, LT_ROLE_REDUCE, lt_l_var(K, t->kvar),
                              lt_l_binary(K, LT_LOP_SUB, lt_l_int(K, len), lt_l_var(K, t->kvar)), LT_LOOP_SERIAL,
                              lt_l_seq(K, 2, b1));
    lt_lnode *work[3] = {first,
                         lt_l_let(K, last, slot_value(t, lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, t->kvar), lt_l_int(K, 1)))),
                         rest};
    *res = lt_l_seq(K, 3, work);
    return LT_LNN(lc, *res);
}

static lt_status l_topk_padded(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    rows r;
    LT_TRY(rows_init(lc, n, topk_axis(n), &r));
    topk t = {.lc = lc, .r = &r, .dt = n->in[0]->type.dtype};
    memcpy(t.odims, r.dims, sizeof t.odims);
    t.largest = n->opset < 11 || lt_attr_int(n, "largest", 1) != 0;
    t.vb = lc->vbuf[n->out[0]->id];
    t.ib = lc->vbuf[n->out[1]->id];
    lt_lbuf *cb = lc->vbuf[n->out[2]->id];
    if (!t.vb || !t.ib || !cb || t.vb->dtype != t.dt || t.ib->dtype != LT_INT64 || cb->dtype != LT_INT64)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "the outputs are not stored as they are");
    int64_t len = r.dims[r.axis];
    lt_dtype cd = lt_lower_cdtype(t.dt);
    lt_lvar *kraw = lt_kernel_var(K, "kraw", LT_INT64);
    t.kvar = lt_kernel_var(K, "k", LT_INT64);
    if (!kraw || !t.kvar) return lt_lower_nomem(lc);
    lt_lnode *k0[1] = {lt_l_int(K, 0)}, *kval = NULL;
    LT_TRY(lt_lower_value(lc, n->in[1], k0, &kval));
    LT_TRY(LT_LNN(lc, kval));
    lt_lnode *kr = lt_l_var(K, kraw);
    lt_lnode *clamped = lt_l_select(K, lt_l_binary(K, LT_LOP_LT, kr, lt_l_int(K, 0)), lt_l_int(K, 0),
                                    lt_l_select(K, lt_l_binary(K, LT_LOP_GT, lt_l_var(K, kraw), lt_l_int(K, len)),
                                                lt_l_int(K, len), lt_l_var(K, kraw)));
    lt_lnode *body = NULL; /* the row once k > 0: the heap where k may be large, else the insertion */
    if (len > TOPK_PADDED_HEAP_MIN && key_topk_fits(&t)) LT_TRY(topk_key_row(lc, n, &t, &body));
    else if (len > TOPK_PADDED_HEAP_MIN && cd == t.dt) LT_TRY(topk_heap_row(lc, n, &t, &body));
    else LT_TRY(padded_insertion_row(lc, n, &t, &body));
    lt_lnode *row[4] = {
        lt_l_let(K, kraw, lt_l_cast(K, LT_INT64, kval)),
        lt_l_let(K, t.kvar, clamped),
        lt_l_store(K, cb, lt_l_int(K, 0), lt_l_var(K, kraw)),
        lt_l_if(K, lt_l_binary(K, LT_LOP_GT, lt_l_var(K, t.kvar), lt_l_int(K, 0)), body, NULL),
    };
    *res = rows_loops(lc, &r, lt_l_seq(K, 4, row));
    return LT_LNN(lc, *res);
}

const lt_lower_reg lt_lower_scan[] = {
    {LT_OP_CumSum, accept_cum, NULL, l_cum, 1u << 1, 0, 0},
    {LT_OP_CumProd, accept_cum, NULL, l_cum, 1u << 1, 0, 0},
    {LT_OP_TopK, accept_topk, NULL, l_topk, 1u << 1, 0, 0},
    {LT_OP_TopKPadded, accept_topk_padded, NULL, l_topk_padded, 0, 0, LT_LF_NO_EPILOGUE},
    {0},
};
