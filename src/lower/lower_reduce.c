/* lower_reduce.c — `lower` hooks of the REDUCE anchors: Reduce* (Sum Mean Max Min Prod L1 L2
 * SumSquare LogSum LogSumExp), ArgMax/ArgMin, Softmax/LogSoftmax, LayerNormalization and
 * RMSNormalization.
 *
 * Every kernel has the same shape: loops over the kept dims ("o0", "o1", ...; the default schedule
 * parallelizes them), then one or more passes over the reduced dims ("r0".. per pass) that update
 * scalar accumulators (LET / ASSIGN), then the store of the result through the group's epilogue
 * (lt_lower_store_out). Inputs are read with lt_lower_value, so a fused elementwise prologue is
 * recomputed in each pass instead of being materialized (softmax reads it three times: max,
 * exp-sum, normalize). Accumulators have the compute dtype (float for float16/bfloat16).
 */
#include "lower_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define K (lc->k)

typedef struct rnest {
    lt_lctx *lc;
    const lt_node *n;
    int rank;
    int64_t dims[LT_MAX_RANK];
    bool red[LT_MAX_RANK];
    lt_lvar *ov[LT_MAX_RANK]; /* kept-dim loop variables (NULL for reduced dims) */
    lt_lnode *oidx[LT_MAX_RANK];
    int64_t count; /* elements per reduction */
} rnest;

static lt_status rnest_init(lt_lctx *lc, const lt_node *n, const bool *red, rnest *rn) {
    memset(rn, 0, sizeof *rn);
    rn->lc = lc;
    rn->n = n;
    if (!lt_lower_shape(n->in[0], &rn->rank, rn->dims))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input has no static shape");
    rn->count = 1;
    int ko = 0;
    for (int d = 0; d < rn->rank; d++) {
        rn->red[d] = red[d];
        if (red[d]) {
            rn->count *= rn->dims[d];
            continue;
        }
        char name[16];
        snprintf(name, sizeof name, "o%d", ko++);
        rn->ov[d] = lt_kernel_var(K, name, LT_INT64);
        if (!(rn->oidx[d] = lt_l_var(K, rn->ov[d]))) return lt_lower_nomem(lc);
    }
    return LT_OK;
}

/* Loops over the reduced dims (of the given role: REDUCE when body accumulates, REDUCED_OUTPUT when
 * it stores an output per element) around body(full index). */
typedef lt_status (*rbody_fn)(rnest *rn, lt_lnode *const *full, void *user, lt_lnode **body);

static lt_status red_pass(rnest *rn, lt_loop_role role, rbody_fn fn, void *user, lt_lnode **res) {
    lt_lctx *lc = rn->lc;
    lt_lvar *rv[LT_MAX_RANK] = {0};
    lt_lnode *full[LT_MAX_RANK];
    int kr = 0;
    for (int d = 0; d < rn->rank; d++) {
        if (!rn->red[d]) {
            full[d] = rn->oidx[d];
            continue;
        }
        char name[16];
        snprintf(name, sizeof name, "r%d", kr++);
        rv[d] = lt_kernel_var(K, name, LT_INT64);
        if (!(full[d] = lt_l_var(K, rv[d]))) return lt_lower_nomem(lc);
    }
    /* On the GPU, trailing reduced dims (a pool's plane, a norm's [C, H, W]) are one loop over their
     * product, each dim's index taken from it by division (which the simplifier folds back into the
     * flat offset of a contiguous read): a nest of short loops with run-time extents issued its loads
     * a row at a time, each row a trip to memory (a global pool of a 2x2 plane: 4 loads, 3 waits) */
    int first = rn->rank;
    while (first > 0 && rv[first - 1]) first--;
    int64_t merged = 1;
    for (int d = first; d < rn->rank; d++) merged *= rn->dims[d];
    lt_lvar *flat = NULL;
    if (lc->opt->gpu && rn->rank - first >= 2 && merged > 0) {
        if (!(flat = lt_kernel_var(K, "rf", LT_INT64))) return lt_lower_nomem(lc);
        LT_TRY(lt_lower_unflat(lc, lt_l_var(K, flat), rn->rank - first, rn->dims + first, full + first));
    }
    lt_lnode *body = NULL;
    LT_TRY(fn(rn, full, user, &body));
    if (flat) body = lt_l_for(K, flat, role, lt_l_int(K, 0), lt_l_int(K, merged), LT_LOOP_SERIAL, body);
    for (int d = (flat ? first : rn->rank) - 1; d >= 0; d--)
        if (rv[d]) body = lt_l_for(K, rv[d], role, lt_l_int(K, 0), lt_l_int(K, rn->dims[d]), LT_LOOP_SERIAL, body);
    *res = body;
    return LT_LNN(lc, body);
}

/* Wrap body in the kept-dim loops. */
static lt_lnode *kept_loops(rnest *rn, lt_lnode *body) {
    lt_lctx *lc = rn->lc;
    for (int d = rn->rank - 1; d >= 0; d--)
        if (rn->ov[d]) body = lt_l_for(K, rn->ov[d], LT_ROLE_KEPT, lt_l_int(K, 0), lt_l_int(K, rn->dims[d]), LT_LOOP_SERIAL, body);
    return body;
}

/* Output index of a reduction: kept dims, with 0 at reduced dims when keepdims. */
static int out_index(rnest *rn, bool keep, lt_lnode **idx) {
    int r = 0;
    for (int d = 0; d < rn->rank; d++) {
        if (!rn->red[d]) idx[r++] = rn->oidx[d];
        else if (keep) idx[r++] = lt_l_int(rn->lc->k, 0);
    }
    return r;
}

static lt_lnode *seq(lt_lctx *lc, int n, lt_lnode **s) { return lt_l_seq(K, n, s); }

/* ---- accumulation passes ---- */

typedef enum { A_SUM, A_PROD, A_MAX, A_MIN, A_ABS_SUM, A_SQ_SUM, A_EXP_SUM, A_CENTERED_SQ } acc_kind;

typedef struct acc_pass {
    acc_kind kind;
    lt_lvar *acc;
    lt_lnode *shift; /* A_EXP_SUM: x - shift; A_CENTERED_SQ: (x - shift)^2 */
    lt_lbuf *save;   /* A_EXP_SUM with lanes: also store each exp term here (softmax's output), at
                      * the input's flat index */
} acc_pass;

/* exp(d) for d = x - max <= 0 (softmax, log-sum-exp), with results below FLT_MIN flushed to 0:
 * computing a subnormal result costs x86 cores a microcode assist (~5x slower kernels when masked
 * attention scores sit at -inf or -1e4), and a value below 1.2e-38 changes no sum it is added to. */
static lt_lnode *exp_ftz(lt_lctx *lc, lt_lnode *d) {
    if (lc->opt->gpu && d && d->dtype == LT_FLOAT) /* the CUDA prelude's exp2f form (cuda_core.h) */
        return lt_l_call(K, LT_FLOAT, "lt_exp_nonpos_f32", 1, &d);
    lt_lnode *e = lt_l_unary(K, LT_LOP_EXP, d);
    if (!e || d->dtype != LT_FLOAT) return e;
    lt_lnode *tiny = lt_l_binary(K, LT_LOP_LT, d, lt_l_float(K, LT_FLOAT, -87.33654475));
    return lt_l_select(K, tiny, lt_l_float(K, LT_FLOAT, 0), e);
}

static lt_lnode *acc_combine(lt_lctx *lc, acc_kind kind, lt_lnode *a, lt_lnode *x, lt_lnode *shift) {
    switch (kind) {
    case A_SUM: return lt_l_add(K, a, x);
    case A_PROD: return lt_l_mul(K, a, x);
    case A_MAX: return lt_l_binary(K, LT_LOP_MAX, a, x);
    case A_MIN: return lt_l_binary(K, LT_LOP_MIN, a, x);
    case A_ABS_SUM: return lt_l_add(K, a, lt_l_unary(K, LT_LOP_ABS, x));
    case A_SQ_SUM: return lt_l_add(K, a, lt_l_mul(K, x, x));
    case A_EXP_SUM: return lt_l_add(K, a, exp_ftz(lc, lt_l_binary(K, LT_LOP_SUB, x, shift)));
    case A_CENTERED_SQ: {
        lt_lnode *d = lt_l_binary(K, LT_LOP_SUB, x, shift);
        return lt_l_add(K, a, lt_l_mul(K, d, d));
    }
    }
    return NULL;
}

/* How partial results merge: sums add, products multiply, max/min. */
static lt_lop merge_op(acc_kind kind) {
    return kind == A_PROD ? LT_LOP_MUL : kind == A_MAX ? LT_LOP_MAX : kind == A_MIN ? LT_LOP_MIN : LT_LOP_ADD;
}

static lt_status acc_body(rnest *rn, lt_lnode *const *full, void *user, lt_lnode **body) {
    lt_lctx *lc = rn->lc;
    acc_pass *ap = user;
    lt_lnode *x;
    LT_TRY(lt_lower_value(lc, rn->n->in[0], full, &x));
    x = lt_lower_conv(lc, x, ap->acc->dtype);
    *body = lt_l_assign(K, ap->acc, acc_combine(lc, ap->kind, lt_l_var(K, ap->acc), x, ap->shift));
    return LT_LNN(lc, *body);
}

/* Lanes for a partial-vector accumulation: the last input dim is reduced, contiguous, and a
 * multiple of the vector width; 0 when the plain scalar pass is used. */
static int acc_lanes(const rnest *rn) {
    const lt_lower_options *o = rn->lc->opt;
    int L = o->vector_lanes > 0 ? o->vector_lanes : 16;
    int64_t e = rn->rank ? rn->dims[rn->rank - 1] : 0;
    if (o->gpu || L <= 1 || !rn->rank || !rn->red[rn->rank - 1] || e % L || e < 2 * L) return 0;
    return L;
}

/* The reduction with L partial accumulators, one per vector lane (no loop-carried dependence
 * inside the "lane" loop, which the default schedule vectorizes):
 *   alloc part[L]: for q: part[q] = init
 *                  for r..: for ro: for lane: part[lane] = combine(part[lane], x[.., ro*L + lane])
 *                  for q: acc = merge(acc, part[q])                                             */
static lt_status acc_pass_lanes(rnest *rn, acc_pass *ap, lt_lnode *init, int L, lt_lnode **res) {
    lt_lctx *lc = rn->lc;
    lt_dtype dt = ap->acc->dtype;
    lt_lbuf *part = lt_kernel_local(K, "part", dt, L, LT_SCOPE_LOCAL);
    lt_lvar *q = lt_kernel_var(K, "q", LT_INT64), *q2 = lt_kernel_var(K, "q", LT_INT64);
    lt_lvar *ro = lt_kernel_var(K, "ro", LT_INT64), *lane = lt_kernel_var(K, "lane", LT_INT64);
    lt_lvar *rv[LT_MAX_RANK] = {0};
    lt_lnode *full[LT_MAX_RANK];
    int last = rn->rank - 1, kr = 0;
    for (int d = 0; d < last; d++) {
        if (!rn->red[d]) {
            full[d] = rn->oidx[d];
            continue;
        }
        char name[16];
        snprintf(name, sizeof name, "r%d", kr++);
        rv[d] = lt_kernel_var(K, name, LT_INT64);
        if (!(full[d] = lt_l_var(K, rv[d]))) return lt_lower_nomem(lc);
    }
    full[last] = lt_l_add(K, lt_l_mul(K, lt_l_var(K, ro), lt_l_int(K, L)), lt_l_var(K, lane));
    lt_lnode *x;
    LT_TRY(lt_lower_value(lc, rn->n->in[0], full, &x));
    x = lt_lower_conv(lc, x, dt);
    lt_lnode *pl = lt_l_var(K, lane);
    lt_lnode *body;
    if (ap->save && ap->kind == A_EXP_SUM) { /* e = exp(x - shift): stored, and summed */
        lt_lvar *ev = lt_kernel_var(K, "e", dt);
        if (!ev) return lt_lower_nomem(lc);
        lt_lnode *three[3];
        three[0] = lt_l_let(K, ev, exp_ftz(lc, lt_l_binary(K, LT_LOP_SUB, x, ap->shift)));
        three[1] = lt_l_store(K, ap->save, lt_lower_flat(lc, rn->rank, rn->dims, full), lt_l_var(K, ev));
        three[2] = lt_l_store(K, part, pl, lt_l_add(K, lt_l_load(K, part, pl), lt_l_var(K, ev)));
        body = lt_l_seq(K, 3, three);
    } else {
        body = lt_l_store(K, part, pl, acc_combine(lc, ap->kind, lt_l_load(K, part, pl), x, ap->shift));
    }
    body = lt_l_for(K, lane, LT_ROLE_LANES, lt_l_int(K, 0), lt_l_int(K, L), LT_LOOP_SERIAL, body);
    body = lt_l_for(K, ro, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, rn->dims[last] / L), LT_LOOP_SERIAL, body);
    for (int d = last - 1; d >= 0; d--)
        if (rv[d]) body = lt_l_for(K, rv[d], LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, rn->dims[d]), LT_LOOP_SERIAL, body);
    lt_lnode *s3[3];
    s3[0] = lt_l_for(K, q, LT_ROLE_PARTIALS, lt_l_int(K, 0), lt_l_int(K, L), LT_LOOP_SERIAL, lt_l_store(K, part, lt_l_var(K, q), init));
    s3[1] = body;
    s3[2] = lt_l_for(K, q2, LT_ROLE_PARTIALS, lt_l_int(K, 0), lt_l_int(K, L), LT_LOOP_SERIAL,
                     lt_l_assign(K, ap->acc, lt_l_binary(K, merge_op(ap->kind), lt_l_var(K, ap->acc),
                                                         lt_l_load(K, part, lt_l_var(K, q2)))));
    *res = lt_l_alloc(K, part, lt_l_seq(K, 3, s3));
    return LT_LNN(lc, *res);
}

/* LET acc = init; passes over the reduced dims. Appends two statements to s. */
static lt_status accumulate_save(rnest *rn, acc_kind kind, lt_dtype dt, lt_lnode *init, lt_lnode *shift,
                                 const char *name, lt_lbuf *save, lt_lvar **acc, lt_lnode **s, int *ns) {
    lt_lctx *lc = rn->lc;
    acc_pass ap = {kind, lt_kernel_var(K, name, dt), shift, save};
    if (!ap.acc || !init) return lt_lower_nomem(lc);
    s[(*ns)++] = lt_l_let(K, ap.acc, init);
    int L = acc_lanes(rn);
    if (L) LT_TRY(acc_pass_lanes(rn, &ap, init, L, &s[*ns]));
    else LT_TRY(red_pass(rn, LT_ROLE_REDUCE, acc_body, &ap, &s[*ns]));
    (*ns)++;
    *acc = ap.acc;
    return LT_OK;
}

static lt_status accumulate(rnest *rn, acc_kind kind, lt_dtype dt, lt_lnode *init, lt_lnode *shift,
                            const char *name, lt_lvar **acc, lt_lnode **s, int *ns) {
    return accumulate_save(rn, kind, dt, init, shift, name, NULL, acc, s, ns);
}

/* LET name = value; returns VAR name */
static lt_lnode *bind(lt_lctx *lc, const char *name, lt_lnode *value, lt_lnode **s, int *ns) {
    if (!value) return NULL;
    lt_lvar *v = lt_kernel_var(K, name, value->dtype);
    s[(*ns)++] = lt_l_let(K, v, value);
    return lt_l_var(K, v);
}

/* ---- Reduce* ---- */

static bool reduce_axes_from_input(const lt_node *n) { return n->opset >= (n->op == LT_OP_ReduceSum ? 13 : 18); }

static bool reduce_mask(const lt_node *n, bool *mask) {
    int r = n->in[0]->type.rank;
    int64_t axes[LT_MAX_RANK];
    int na = 0;
    if (reduce_axes_from_input(n)) {
        if (n->n_in > 1 && n->in[1]) {
            na = lt_lower_const_ints(n, 1, axes, LT_MAX_RANK);
            if (na < 0) return false;
        }
    } else {
        const int64_t *a;
        na = lt_attr_ints(n, "axes", &a);
        if (na > LT_MAX_RANK) return false;
        if (na) memcpy(axes, a, sizeof(int64_t) * (size_t)na);
    }
    if (na == 0) {
        bool noop = reduce_axes_from_input(n) && lt_attr_int(n, "noop_with_empty_axes", 0) != 0;
        for (int d = 0; d < r; d++) mask[d] = !noop;
        return true;
    }
    for (int d = 0; d < r; d++) mask[d] = false;
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || mask[a]) return false;
        mask[a] = true;
    }
    return true;
}

static lt_status l_reduce(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    bool mask[LT_MAX_RANK];
    if (!reduce_mask(n, mask)) return lt_lower_error(lc, n, LT_ERR_INVALID, "bad axes");
    rnest rn;
    LT_TRY(rnest_init(lc, n, mask, &rn));
    lt_dtype dt = lt_lower_cdtype(n->in[0]->type.dtype);
    lt_lnode *s[8];
    int ns = 0;
    lt_lvar *acc = NULL, *mx = NULL;
    lt_lnode *zero = lt_lower_imm(lc, dt, 0);
    switch (n->op) {
    case LT_OP_ReduceSum: case LT_OP_ReduceMean: case LT_OP_ReduceLogSum:
        LT_TRY(accumulate(&rn, A_SUM, dt, zero, NULL, "acc", &acc, s, &ns));
        break;
    case LT_OP_ReduceProd: LT_TRY(accumulate(&rn, A_PROD, dt, lt_lower_imm(lc, dt, 1), NULL, "acc", &acc, s, &ns)); break;
    case LT_OP_ReduceMax: LT_TRY(accumulate(&rn, A_MAX, dt, lt_lower_lowest(lc, dt), NULL, "acc", &acc, s, &ns)); break;
    case LT_OP_ReduceMin: LT_TRY(accumulate(&rn, A_MIN, dt, lt_lower_highest(lc, dt), NULL, "acc", &acc, s, &ns)); break;
    case LT_OP_ReduceL1: LT_TRY(accumulate(&rn, A_ABS_SUM, dt, zero, NULL, "acc", &acc, s, &ns)); break;
    case LT_OP_ReduceL2: case LT_OP_ReduceSumSquare:
        LT_TRY(accumulate(&rn, A_SQ_SUM, dt, zero, NULL, "acc", &acc, s, &ns));
        break;
    case LT_OP_ReduceLogSumExp: {
        LT_TRY(accumulate(&rn, A_MAX, dt, lt_lower_lowest(lc, dt), NULL, "mx", &mx, s, &ns));
        /* shift by the max when finite (all -inf rows: 0) */
        lt_lnode *m = lt_l_var(K, mx);
        lt_lnode *sh = bind(lc, "shift", lt_l_select(K, lt_l_unary(K, LT_LOP_ISINF, m), zero, m), s, &ns);
        LT_TRY(accumulate(&rn, A_EXP_SUM, dt, zero, sh, "acc", &acc, s, &ns));
        break;
    }
    default: return lt_lower_error(lc, n, LT_ERR_INTERNAL, "not a reduction");
    }
    lt_lnode *v = lt_l_var(K, acc);
    switch (n->op) {
    case LT_OP_ReduceMean:
        v = lt_l_binary(K, LT_LOP_DIV, v, lt_lower_imm(lc, dt, (double)rn.count));
        break;
    case LT_OP_ReduceL2: v = lt_l_unary(K, LT_LOP_SQRT, v); break;
    case LT_OP_ReduceLogSum: v = lt_l_unary(K, LT_LOP_LOG, v); break;
    case LT_OP_ReduceLogSumExp: {
        lt_lnode *m = lt_l_var(K, mx);
        v = lt_l_add(K, lt_l_unary(K, LT_LOP_LOG, v), lt_l_select(K, lt_l_unary(K, LT_LOP_ISINF, m), zero, m));
        break;
    }
    default: break;
    }
    lt_lnode *oi[LT_MAX_RANK];
    out_index(&rn, lt_attr_int(n, "keepdims", 1) != 0, oi);
    LT_TRY(lt_lower_store_out(lc, n->out[0], oi, v, &s[ns]));
    ns++;
    *res = kept_loops(&rn, seq(lc, ns, s));
    return LT_LNN(lc, *res);
}

static bool accept_reduce(const lt_node *n, char *why, size_t size) {
    bool mask[LT_MAX_RANK];
    if (!reduce_mask(n, mask)) {
        snprintf(why, size, "axes are not constants");
        return false;
    }
    lt_dtype dt = n->in[0]->type.dtype;
    bool float_only = n->op == LT_OP_ReduceMean || n->op == LT_OP_ReduceL2 || n->op == LT_OP_ReduceLogSum ||
                      n->op == LT_OP_ReduceLogSumExp;
    if (dt == LT_BOOL || (float_only && !lt_dtype_is_float(dt))) {
        snprintf(why, size, "%s on %s", n->op_type, lt_dtype_name(dt));
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* ---- ArgMax / ArgMin ---- */

typedef struct arg_pass {
    lt_lvar *best, *bi;
    int axis;
    bool is_max, last;
} arg_pass;

static lt_status arg_body(rnest *rn, lt_lnode *const *full, void *user, lt_lnode **body) {
    lt_lctx *lc = rn->lc;
    arg_pass *ap = user;
    lt_lnode *x;
    LT_TRY(lt_lower_value(lc, rn->n->in[0], full, &x));
    lt_lvar *xv = lt_kernel_var(K, "x", x->dtype);
    lt_lnode *s[3];
    s[0] = lt_l_let(K, xv, x);
    lt_lnode *X = lt_l_var(K, xv), *B = lt_l_var(K, ap->best);
    lt_lop cmp = ap->is_max ? (ap->last ? LT_LOP_GE : LT_LOP_GT) : (ap->last ? LT_LOP_LE : LT_LOP_LT);
    lt_lnode *better = lt_l_binary(K, cmp, X, B);
    s[1] = lt_l_assign(K, ap->bi, lt_l_select(K, better, full[ap->axis], lt_l_var(K, ap->bi)));
    s[2] = lt_l_assign(K, ap->best, lt_l_select(K, better, X, B)); /* best unchanged since `better` */
    *body = lt_l_seq(K, 3, s);
    return LT_LNN(lc, *body);
}

static lt_status l_argmax(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int r = n->in[0]->type.rank;
    int64_t ax = lt_attr_int(n, "axis", 0);
    if (ax < 0) ax += r;
    bool mask[LT_MAX_RANK] = {0};
    mask[ax] = true;
    rnest rn;
    LT_TRY(rnest_init(lc, n, mask, &rn));
    lt_dtype dt = lt_lower_cdtype(n->in[0]->type.dtype);
    arg_pass ap = {lt_kernel_var(K, "best", dt), lt_kernel_var(K, "bi", LT_INT64), (int)ax, n->op == LT_OP_ArgMax,
                   lt_attr_int(n, "select_last_index", 0) != 0};
    lt_lnode *s[4];
    int ns = 0;
    s[ns++] = lt_l_let(K, ap.best, ap.is_max ? lt_lower_lowest(lc, dt) : lt_lower_highest(lc, dt));
    s[ns++] = lt_l_let(K, ap.bi, lt_l_int(K, 0));
    LT_TRY(red_pass(&rn, LT_ROLE_REDUCE, arg_body, &ap, &s[ns]));
    ns++;
    lt_lnode *oi[LT_MAX_RANK];
    out_index(&rn, lt_attr_int(n, "keepdims", 1) != 0, oi);
    LT_TRY(lt_lower_store_out(lc, n->out[0], oi, lt_l_var(K, ap.bi), &s[ns]));
    ns++;
    *res = kept_loops(&rn, seq(lc, ns, s));
    return LT_LNN(lc, *res);
}

static bool accept_argmax(const lt_node *n, char *why, size_t size) {
    int r = n->in[0]->type.rank;
    int64_t ax = lt_attr_int(n, "axis", 0);
    if (r < 1 || ax < -r || ax >= r) {
        snprintf(why, size, "axis out of range");
        return false;
    }
    if (n->in[0]->type.dtype == LT_BOOL) {
        snprintf(why, size, "bool input");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* ---- Softmax / LogSoftmax ---- */

static bool softmax_mask(const lt_node *n, bool *mask) {
    int r = n->in[0]->type.rank;
    bool old = n->opset < 13;
    int64_t ax = lt_attr_int(n, "axis", old ? 1 : -1);
    if (ax < 0) ax += r;
    if (r == 0 || ax < 0 || ax > r || (!old && ax == r)) return false;
    for (int d = 0; d < r; d++) mask[d] = old ? d >= ax : d == ax;
    return true;
}

typedef struct norm_pass {
    lt_lnode *m, *inv, *ls; /* max, 1/sum (softmax) or log-sum (log-softmax) */
    bool log;
    lt_lbuf *saved;         /* softmax: the output already holds exp(x - max): scale it in place */
} norm_pass;

static lt_status softmax_store(rnest *rn, lt_lnode *const *full, void *user, lt_lnode **body) {
    lt_lctx *lc = rn->lc;
    norm_pass *np = user;
    if (np->saved) {
        lt_lnode *off = lt_lower_flat(lc, rn->rank, rn->dims, full);
        *body = lt_l_store(K, np->saved, off, lt_l_mul(K, lt_l_load(K, np->saved, off), np->inv));
        return LT_LNN(lc, *body);
    }
    lt_lnode *x;
    LT_TRY(lt_lower_value(lc, rn->n->in[0], full, &x));
    x = lt_lower_conv(lc, x, np->m->dtype);
    lt_lnode *d = lt_l_binary(K, LT_LOP_SUB, x, np->m);
    lt_lnode *v = np->log ? lt_l_binary(K, LT_LOP_SUB, d, np->ls) : lt_l_mul(K, exp_ftz(lc, d), np->inv);
    if (!v) return lt_lower_nomem(lc);
    return lt_lower_store_out(lc, rn->n->out[0], full, v, body);
}

static lt_status l_softmax(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    bool mask[LT_MAX_RANK];
    if (!softmax_mask(n, mask)) return lt_lower_error(lc, n, LT_ERR_INVALID, "bad axis");
    rnest rn;
    LT_TRY(rnest_init(lc, n, mask, &rn));
    lt_dtype dt = lt_lower_cdtype(n->in[0]->type.dtype);
    lt_lnode *s[8];
    int ns = 0;
    lt_lvar *mx, *sum;
    LT_TRY(accumulate(&rn, A_MAX, dt, lt_lower_lowest(lc, dt), NULL, "mx", &mx, s, &ns));
    lt_lnode *m = lt_l_var(K, mx);
    /* softmax with no epilogue, stored as float: the sum pass stores exp(x - max) into the output
     * and the last pass scales it (one exp per element instead of two) */
    const lt_value *fin = NULL;
    lt_lbuf *ob = lt_lower_out_buf(lc, n->out[0], &fin);
    lt_lbuf *save = n->op == LT_OP_Softmax && ob && fin == n->out[0] && ob->dtype == LT_FLOAT && dt == LT_FLOAT &&
                            acc_lanes(&rn) ? ob : NULL;
    LT_TRY(accumulate_save(&rn, A_EXP_SUM, dt, lt_lower_imm(lc, dt, 0), m, "sum", save, &sum, s, &ns));
    norm_pass np = {.m = m, .log = n->op == LT_OP_LogSoftmax, .saved = save};
    if (np.log) np.ls = bind(lc, "lsum", lt_l_unary(K, LT_LOP_LOG, lt_l_var(K, sum)), s, &ns);
    else np.inv = bind(lc, "inv", lt_l_binary(K, LT_LOP_DIV, lt_lower_imm(lc, dt, 1), lt_l_var(K, sum)), s, &ns);
    if (!np.ls && !np.inv) return lt_lower_nomem(lc);
    LT_TRY(red_pass(&rn, LT_ROLE_REDUCED_OUTPUT, softmax_store, &np, &s[ns]));
    ns++;
    *res = kept_loops(&rn, seq(lc, ns, s));
    return LT_LNN(lc, *res);
}

static bool accept_softmax(const lt_node *n, char *why, size_t size) {
    bool mask[LT_MAX_RANK];
    if (!softmax_mask(n, mask)) {
        snprintf(why, size, "axis out of range");
        return false;
    }
    return lt_lower_accept_float(n, why, size);
}

/* ---- LayerNormalization / RMSNormalization ---- */

static bool norm_mask(const lt_node *n, bool *mask) {
    int r = n->in[0]->type.rank;
    int64_t ax = lt_attr_int(n, "axis", -1);
    if (ax < 0) ax += r;
    if (r == 0 || ax < 0 || ax >= r) return false;
    for (int d = 0; d < r; d++) mask[d] = d >= ax;
    return true;
}

typedef struct ln_pass {
    lt_lnode *mean, *inv;
} ln_pass;

static lt_status ln_store(rnest *rn, lt_lnode *const *full, void *user, lt_lnode **body) {
    lt_lctx *lc = rn->lc;
    const lt_node *n = rn->n;
    ln_pass *lp = user;
    lt_lnode *x, *sc, *b = NULL;
    LT_TRY(lt_lower_value(lc, n->in[0], full, &x));
    x = lt_lower_conv(lc, x, lp->inv->dtype);
    LT_TRY(lt_lower_input(lc, n, 1, rn->rank, rn->dims, full, &sc));
    if (n->op == LT_OP_LayerNormalization && n->n_in > 2 && n->in[2])
        LT_TRY(lt_lower_input(lc, n, 2, rn->rank, rn->dims, full, &b));
    lt_lnode *c = lp->mean ? lt_l_binary(K, LT_LOP_SUB, x, lp->mean) : x;
    lt_lnode *v = lt_l_mul(K, lt_l_mul(K, c, lp->inv), lt_lower_conv(lc, sc, lp->inv->dtype));
    if (b) v = lt_l_add(K, v, lt_lower_conv(lc, b, lp->inv->dtype));
    if (!v) return lt_lower_nomem(lc);
    return lt_lower_store_out(lc, n->out[0], full, v, body);
}

static lt_status l_norm(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    bool mask[LT_MAX_RANK];
    if (!norm_mask(n, mask)) return lt_lower_error(lc, n, LT_ERR_INVALID, "bad axis");
    rnest rn;
    LT_TRY(rnest_init(lc, n, mask, &rn));
    lt_dtype dt = LT_FLOAT;
    if (lt_lower_cdtype(n->in[0]->type.dtype) == LT_DOUBLE) dt = LT_DOUBLE;
    double eps = lt_attr_float(n, "epsilon", 1e-5f);
    lt_lnode *s[12];
    int ns = 0;
    lt_lvar *acc;
    lt_lnode *cnt = lt_lower_imm(lc, dt, (double)rn.count);
    ln_pass lp = {0};
    if (n->op == LT_OP_LayerNormalization) {
        LT_TRY(accumulate(&rn, A_SUM, dt, lt_lower_imm(lc, dt, 0), NULL, "sum", &acc, s, &ns));
        lp.mean = bind(lc, "mean", lt_l_binary(K, LT_LOP_DIV, lt_l_var(K, acc), cnt), s, &ns);
        LT_TRY(accumulate(&rn, A_CENTERED_SQ, dt, lt_lower_imm(lc, dt, 0), lp.mean, "var", &acc, s, &ns));
    } else {
        LT_TRY(accumulate(&rn, A_SQ_SUM, dt, lt_lower_imm(lc, dt, 0), NULL, "sq", &acc, s, &ns));
    }
    lt_lnode *var = lt_l_binary(K, LT_LOP_DIV, lt_l_var(K, acc), cnt);
    lp.inv = bind(lc, "inv", lt_l_binary(K, LT_LOP_DIV, lt_lower_imm(lc, dt, 1),
                                         lt_l_unary(K, LT_LOP_SQRT, lt_l_add(K, var, lt_lower_imm(lc, dt, eps)))), s, &ns);
    if (!lp.inv) return lt_lower_nomem(lc);
    LT_TRY(red_pass(&rn, LT_ROLE_REDUCED_OUTPUT, ln_store, &lp, &s[ns]));
    ns++;
    /* optional Mean / InvStdDev outputs, shaped like X with 1 at the normalized dims */
    lt_lnode *oi[LT_MAX_RANK];
    out_index(&rn, true, oi);
    if (n->op == LT_OP_LayerNormalization)
        for (int o = 1; o <= 2 && o < n->n_out; o++) {
            if (!n->out[o]) continue;
            LT_TRY(lt_lower_store_out(lc, n->out[o], oi, o == 1 ? lp.mean : lp.inv, &s[ns]));
            ns++;
        }
    *res = kept_loops(&rn, seq(lc, ns, s));
    return LT_LNN(lc, *res);
}

static bool accept_norm(const lt_node *n, char *why, size_t size) {
    bool mask[LT_MAX_RANK];
    if (!norm_mask(n, mask)) {
        snprintf(why, size, "axis out of range");
        return false;
    }
    if (n->n_in < 2 || !n->in[1]) {
        snprintf(why, size, "no scale");
        return false;
    }
    int64_t st = lt_attr_int(n, "stash_type", 1);
    if (st != LT_FLOAT && st != LT_DOUBLE) {
        snprintf(why, size, "stash_type %lld", (long long)st);
        return false;
    }
    return lt_lower_accept_float(n, why, size);
}

#define RED(op) {LT_OP_##op, accept_reduce, NULL, l_reduce, 1u << 1, 0, 0}

const lt_lower_reg lt_lower_reduce[] = {
    RED(ReduceSum), RED(ReduceMean), RED(ReduceMax), RED(ReduceMin), RED(ReduceProd), RED(ReduceL1),
    RED(ReduceL2), RED(ReduceSumSquare), RED(ReduceLogSum), RED(ReduceLogSumExp),
    {LT_OP_ArgMax, accept_argmax, NULL, l_argmax, 0, 0, 0},
    {LT_OP_ArgMin, accept_argmax, NULL, l_argmax, 0, 0, 0},
    {LT_OP_Softmax, accept_softmax, NULL, l_softmax, 0, 0, 0},
    {LT_OP_LogSoftmax, accept_softmax, NULL, l_softmax, 0, 0, 0},
    {LT_OP_LayerNormalization, accept_norm, NULL, l_norm, 0, 0, 0},
    {LT_OP_RMSNormalization, accept_norm, NULL, l_norm, 0, 0, 0},
    {0},
};
