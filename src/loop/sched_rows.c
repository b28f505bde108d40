/* sched_rows.c — the "rowreduce" schedule step (schedule.h): each iteration of a loop L (one row of
 * a reduction kernel: a GPU block, or one warp of a block) spread over T GPU threads, with
 * cooperative reductions of the row's accumulators. GPU only: the result calls the CUDA prelude's
 * lt_warp_* / lt_block_* reductions (cuda_core.h), which the CPU target does not have.
 *
 * rowreduce L T V: L's body becomes `for L.t in [0, T) bound to GPU threads (axis x) { body' }`:
 *   - every FOR nest in the body (a perfect nest of serial loops with constant bounds: the reduced
 *     dims of one pass over the row) is flattened to f in [0, C) and distributed as
 *         for r.j in [0, J = ceil(C / (T*V))):          (unrolled when <= 8 iterations)
 *           vectorized for r.v in [0, V):               (absent when V = 1)
 *             [if f < C:] body[r.. := digits of f]      f = (r.j*T + L.t)*V + r.v
 *     so consecutive threads read consecutive V-element vectors (the emitter makes them 16-byte
 *     accesses, see emit.c). In a shape-generic kernel (one code for every size of a bucket) J is
 *     rounded up to a power of two and the guard is always there, so rows of 65..128 elements (say)
 *     share one code, C a run-time size; otherwise every row length of a class would be a bucket.
 *     A variable assigned in the nest and declared outside it is an
 *     accumulator: each of its ASSIGNs must be `a = a OP e` (OP: + * max min, e free of a, one OP per
 *     variable), a is read nowhere else in the nest, and its type is float32, float64, int32 or int64.
 *     Each thread accumulates into a new partial a_p (starting at OP's identity), and after the nest
 *     a = a OP lt_block_OP_S(a_p, T) (lt_warp_OP_S(a_p) when T = 32): the same value in every thread;
 *   - LET / ASSIGN statements run in every thread (they see the same values), STOREs only in thread
 *     0, IFs recurse into their branches;
 *   - anything else (EVAL, ALLOC, BARRIER, a nest holding another loop) is an error naming it;
 *   - the row cache (below): elements the first nest loads and later nests load again, and
 *     transcendental subexpressions later nests repeat, are kept in per-thread LOCAL arrays
 *     (registers): the row is read from memory once, softmax's exp computed once per element.
 * T is 32 (a warp per row: L is usually bound to threads y, several rows per block) or a multiple
 * of 32 up to 1024 (a block per row: L bound to blocks, no other thread loop); V in [1, 16].
 * Floating sums are reassociated (partials per thread, then a fixed tree), as any parallel reduction.
 * Entry points: lt_sched_rowreduce_ (called by lt_sched_apply), lt_sched_rowreduce_check.
 */
#include "schedule.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define RR_MAX_NEST 16 /* loops of one nest the step flattens */
#define RR_MAX_CACHE 4     /* arrays of the row cache */
#define RR_CACHE_ELEMS 64  /* elements per thread of one array (registers) */
#define RR_CACHE_TOTAL 96  /* elements per thread of all arrays */
#define RR_MAX_ITEMS 64    /* statements of a row body the cache looks at (a longer body: no cache) */

typedef struct centry {
    lt_lnode *nest;       /* the nest that fills the array */
    const lt_lnode *expr; /* a LOAD or an expression, in that nest's loop variables */
    lt_lbuf *local;       /* the per-thread array: local[j*V + v] */
} centry;

typedef struct rr {
    lt_ctx *ctx;
    lt_kernel *k;
    const lt_sstep *step;
    int64_t T, V;
    lt_lvar *t;
    char *why; /* check: the reason it does not apply */
    size_t why_n;
    /* the row cache (see below) */
    int n_items;
    bool items_over;               /* the body has more than RR_MAX_ITEMS statements */
    lt_lnode *items[RR_MAX_ITEMS]; /* L's body statements in order (nests not entered) */
    lt_lnode *xbody[RR_MAX_ITEMS]; /* nests: the innermost body with its LETs expanded */
    int nc;
    centry ce[RR_MAX_CACHE];
    int64_t slots;                 /* elements per thread of a row: J*V */
} rr;

static bool nope(rr *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool nope(rr *r, const char *fmt, ...) {
    if (r->why && r->why_n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, r->why_n, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool has_var_ref(const lt_lnode *n, const lt_lvar *v, int *reads, int *assigns) {
    if (!n) return false;
    if (n->kind == LT_L_VAR && n->var == v) (*reads)++;
    if (n->kind == LT_L_ASSIGN && n->var == v) (*assigns)++;
    for (int i = 0; i < n->n; i++) has_var_ref(n->kids[i], v, reads, assigns);
    return *reads || *assigns;
}

/* The op of `a = a OP e` (or `a = e OP a`), or -1. */
static int acc_op(const lt_lnode *as) {
    const lt_lnode *x = lt_llet_value(as);
    if (x->kind != LT_L_BINARY) return -1;
    if (x->op != LT_LOP_ADD && x->op != LT_LOP_MUL && x->op != LT_LOP_MAX && x->op != LT_LOP_MIN) return -1;
    bool l = lt_lexpr_a(x)->kind == LT_L_VAR && lt_lexpr_a(x)->var == as->var && !lt_luses_var(lt_lexpr_b(x), as->var);
    bool rr_ = lt_lexpr_b(x)->kind == LT_L_VAR && lt_lexpr_b(x)->var == as->var && !lt_luses_var(lt_lexpr_a(x), as->var);
    return l || rr_ ? x->op : -1;
}

/* Accumulators of nest body b: variables assigned in b and not declared in it. */
typedef struct accs {
    int n;
    lt_lvar *v[16];
    int op[16];
} accs;

static void declared(const lt_lnode *n, bool *decl) {
    if (!n) return;
    if ((n->kind == LT_L_LET || n->kind == LT_L_FOR) && n->var) decl[n->var->id] = true;
    for (int i = 0; i < n->n; i++) declared(n->kids[i], decl);
}

static bool collect_accs(rr *r, const lt_lnode *n, const bool *decl, accs *a) {
    if (!n) return true;
    if (n->kind == LT_L_FOR || n->kind == LT_L_ALLOC || n->kind == LT_L_EVAL || n->kind == LT_L_BARRIER)
        return nope(r, "the innermost body of a nest holds a %s", lt_lnode_info_get(n->kind)->name);
    if (n->kind == LT_L_ASSIGN && !decl[n->var->id]) {
        int op = acc_op(n), i = 0;
        if (op < 0) return nope(r, "variable %s is assigned something other than %s OP e", n->var->name, n->var->name);
        while (i < a->n && a->v[i] != n->var) i++;
        if (i == a->n) {
            if (a->n == 16) return nope(r, "more than 16 accumulators");
            lt_dtype dt = n->var->dtype;
            if (dt != LT_FLOAT && dt != LT_DOUBLE && dt != LT_INT32 && dt != LT_INT64)
                return nope(r, "accumulator %s has dtype %s (float32, float64, int32, int64 only)", n->var->name,
                            lt_dtype_name(dt));
            a->v[i] = n->var, a->op[i] = op, a->n++;
        } else if (a->op[i] != op) {
            return nope(r, "accumulator %s is combined with two operators", n->var->name);
        }
    }
    for (int i = 0; i < n->n; i++)
        if (lt_lnode_info_get(n->kids[i]->kind)->is_stmt && !collect_accs(r, n->kids[i], decl, a)) return false;
    return true;
}

/* The perfect nest at n: loops (outermost first) and the innermost body. */
static int nest_of(lt_lnode *n, lt_lnode **loops, int max, lt_lnode **body) {
    int c = 0;
    while (n->kind == LT_L_FOR && c < max) {
        loops[c++] = n;
        n = lt_lfor_body(n);
        while (n->kind == LT_L_SEQ && n->n == 1) n = lt_lseq_stmt(n, 0);
    }
    *body = n;
    return c;
}

static bool check_nest(rr *r, lt_lnode *f, accs *a) {
    lt_lnode *loops[RR_MAX_NEST], *body;
    int nl = nest_of(f, loops, RR_MAX_NEST, &body);
    if (body->kind == LT_L_FOR) return nope(r, "nest at loop %s is deeper than %d loops", f->var->name, nl);
    for (int i = 0; i < nl; i++) {
        int64_t lo, e;
        if (loops[i]->op != LT_LOOP_SERIAL) return nope(r, "loop %s is not serial", loops[i]->var->name);
        if (!lt_lis_int(lt_lfor_min(loops[i]), &lo) || !lt_lis_int(lt_lfor_extent(loops[i]), &e) || e < 1)
            return nope(r, "loop %s has non-constant bounds", loops[i]->var->name);
    }
    bool *decl = lt_mem_calloc((size_t)r->k->n_vars + 1, sizeof *decl);
    if (!decl) return nope(r, "out of memory");
    declared(body, decl);
    a->n = 0;
    bool ok = collect_accs(r, body, decl, a);
    lt_mem_free(decl);
    if (!ok) return false;
    for (int i = 0; i < a->n; i++) {
        int reads = 0, assigns = 0;
        has_var_ref(body, a->v[i], &reads, &assigns);
        if (reads != assigns) return nope(r, "accumulator %s is read outside its updates", a->v[i]->name);
    }
    return true;
}

static bool check_stmt(rr *r, lt_lnode *n) {
    accs a;
    switch (n->kind) {
    case LT_L_SEQ:
        for (int i = 0; i < n->n; i++)
            if (!check_stmt(r, n->kids[i])) return false;
        return true;
    case LT_L_IF:
        for (int i = 1; i < n->n; i++)
            if (n->kids[i] && !check_stmt(r, n->kids[i])) return false;
        return true;
    case LT_L_FOR: return check_nest(r, n, &a);
    case LT_L_LET: case LT_L_ASSIGN: case LT_L_STORE: return true;
    default: return nope(r, "a %s statement in the row", lt_lnode_info_get(n->kind)->name);
    }
}

static bool check(rr *r, lt_lnode *L) {
    if (r->T != 32 && (r->T < 64 || r->T > 1024 || r->T % 32))
        return nope(r, "thread count %lld is not 32 or a multiple of 32 in [64, 1024]", (long long)r->T);
    if (r->V < 1 || r->V > 16) return nope(r, "vector width %lld is not in [1, 16]", (long long)r->V);
    return check_stmt(r, lt_lfor_body(L));
}

/* ---- building ---- */

/* Iterations of r.j for a nest of C elements (see the top). */
static int64_t chunks(const rr *r, int64_t C) {
    int64_t per = r->T * r->V, J = (C + per - 1) / per;
    if (r->k->shape_generic)
        for (int64_t p = 1; p < J; p *= 2)
            if (p * 2 >= J) return p * 2;
    return J;
}

typedef struct rename_acc {
    const lt_lvar *from;
    lt_lvar *to;
} rename_acc;

static lt_lnode *rename_fn(lt_kernel *k, lt_lnode *n, void *user) {
    const rename_acc *ra = user;
    if (n->kind == LT_L_VAR && n->var == ra->from) return lt_l_var(k, ra->to);
    if (n->kind == LT_L_ASSIGN && n->var == ra->from) return lt_l_assign(k, ra->to, lt_llet_value(n));
    return n;
}

static lt_lnode *identity(lt_kernel *k, lt_dtype dt, int op) {
    bool fl = dt == LT_FLOAT || dt == LT_DOUBLE;
    switch (op) {
    case LT_LOP_ADD: return fl ? lt_l_float(k, dt, 0) : lt_l_cast(k, dt, lt_l_int(k, 0));
    case LT_LOP_MUL: return fl ? lt_l_float(k, dt, 1) : lt_l_cast(k, dt, lt_l_int(k, 1));
    case LT_LOP_MAX:
        return fl ? lt_l_float(k, dt, -INFINITY) : lt_l_cast(k, dt, lt_l_int(k, dt == LT_INT32 ? INT32_MIN : INT64_MIN));
    default:
        return fl ? lt_l_float(k, dt, INFINITY) : lt_l_cast(k, dt, lt_l_int(k, dt == LT_INT32 ? INT32_MAX : INT64_MAX));
    }
}

static lt_lnode *combine(rr *r, lt_lvar *a, lt_lvar *part, int op) {
    lt_kernel *k = r->k;
    const char *opn = op == LT_LOP_ADD ? "sum" : op == LT_LOP_MUL ? "prod" : op == LT_LOP_MAX ? "max" : "min";
    lt_dtype dt = a->dtype;
    const char *sfx = dt == LT_FLOAT ? "f32" : dt == LT_DOUBLE ? "f64" : dt == LT_INT32 ? "i32" : "i64";
    char name[48];
    snprintf(name, sizeof name, "lt_%s_%s_%s", r->T == 32 ? "warp" : "block", opn, sfx);
    lt_lnode *args[2] = {lt_l_var(k, part), lt_l_int(k, r->T)};
    lt_lnode *red = lt_l_call(k, dt, name, r->T == 32 ? 1 : 2, args);
    return lt_l_assign(k, a, lt_l_binary(k, (lt_lop)op, lt_l_var(k, a), red));
}

static char *suffixed(lt_kernel *k, const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = lt_arena_alloc(k->arena, n);
    if (s) snprintf(s, n, "%s%s", a, b);
    return s;
}

/* ---- the row cache ----
 * Values a later nest would compute again from memory are kept per thread in LOCAL arrays indexed
 * [j*V + v] (with j and v unrolled they live in registers), filled by the nest that first has them:
 *   - loads: an element the first nest loads unconditionally, of a buffer the kernel never writes,
 *     that a later nest of the same loop structure loads too (same index once the later nest's loop
 *     variables are renamed to the first's): the row is read from memory once (softmax: max, sum,
 *     normalize; the norms: statistics, then the store);
 *   - expressions: a floating subexpression of a later nest holding a transcendental op (exp, log,
 *     tanh, erf, pow, a prelude math call, ...) that an earlier nest of the same structure computes unconditionally, when
 *     no variable it reads is assigned from that nest on: softmax's exp(x - max) is computed once.
 * Only while the arrays fit: J*V <= RR_CACHE_ELEMS per array, RR_CACHE_TOTAL elements in all. */

static bool same_nest_shape(lt_lnode *a, lt_lnode *b) {
    lt_lnode *la[RR_MAX_NEST], *lb[RR_MAX_NEST], *ba, *bb;
    int na = nest_of(a, la, RR_MAX_NEST, &ba), nb = nest_of(b, lb, RR_MAX_NEST, &bb);
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (!lt_lequal(lt_lfor_min(la[i]), lt_lfor_min(lb[i])) || !lt_lequal(lt_lfor_extent(la[i]), lt_lfor_extent(lb[i]))) return false;
    return true;
}

/* The statements of L's body in order, through SEQs and IF branches (nests are not entered). */
static void row_items(rr *r, lt_lnode *n) {
    if (!n) return;
    if (n->kind == LT_L_SEQ || n->kind == LT_L_IF) {
        for (int i = n->kind == LT_L_IF ? 1 : 0; i < n->n; i++) row_items(r, n->kids[i]);
        return;
    }
    if (r->n_items < RR_MAX_ITEMS) r->items[r->n_items++] = n;
    else r->items_over = true;
}

static int item_of(const rr *r, const lt_lnode *n) {
    for (int i = 0; i < r->n_items; i++)
        if (r->items[i] == n) return i;
    return -1;
}

/* n with nest `from`'s loop variables renamed to nest `to`'s (NULL on out of memory). */
static lt_lnode *renamed(rr *r, const lt_lnode *n, lt_lnode *from, lt_lnode *to) {
    lt_lnode *lf[RR_MAX_NEST], *lt_[RR_MAX_NEST], *bf, *bt;
    int nl = nest_of(from, lf, RR_MAX_NEST, &bf);
    nest_of(to, lt_, RR_MAX_NEST, &bt);
    lt_lnode *x = (lt_lnode *)n;
    for (int i = 0; i < nl && x; i++)
        if (lt_luses_var(x, lf[i]->var)) x = lt_lsubstitute(r->k, x, lf[i]->var, lt_l_var(r->k, lt_[i]->var));
    return x;
}

static bool transcendental(const lt_lnode *n) {
    if (!n) return false;
    if (n->kind == LT_L_UNARY && n->op != LT_LOP_NEG && n->op != LT_LOP_ABS && n->op != LT_LOP_NOT &&
        n->op != LT_LOP_SIGN && n->op != LT_LOP_FLOOR && n->op != LT_LOP_CEIL && n->op != LT_LOP_ROUND &&
        n->op != LT_LOP_ISNAN && n->op != LT_LOP_ISINF && n->op != LT_LOP_RECIP)
        return true;
    if (n->kind == LT_L_BINARY && n->op == LT_LOP_POW) return true;
    if (n->kind == LT_L_CALL && n->dtype != LT_UNDEFINED) return true; /* a prelude math function (exp2f form) */
    for (int i = 0; i < n->n; i++)
        if (transcendental(n->kids[i])) return true;
    return false;
}

/* Is there an expression equal to e at an unconditional place of statement/expression n? */
static bool has_unconditional(const lt_lnode *n, const lt_lnode *e, bool cond) {
    if (!n) return false;
    if (!cond && !lt_lnode_info_get(n->kind)->is_stmt && lt_lequal(n, e)) return true;
    bool branchy = n->kind == LT_L_IF || n->kind == LT_L_SELECT ||
                   (n->kind == LT_L_BINARY && (n->op == LT_LOP_AND || n->op == LT_LOP_OR));
    for (int i = 0; i < n->n; i++)
        if (has_unconditional(n->kids[i], e, cond || (branchy && i > 0))) return true;
    return false;
}

static void assigned_vars(const lt_lnode *n, bool *set) {
    if (!n) return;
    if (n->kind == LT_L_ASSIGN || n->kind == LT_L_LET || n->kind == LT_L_FOR) set[n->var->id] = true;
    for (int i = 0; i < n->n; i++) assigned_vars(n->kids[i], set);
}
static bool reads_any(const lt_lnode *n, const bool *set) {
    if (!n) return false;
    if (n->kind == LT_L_VAR && set[n->var->id]) return true;
    for (int i = 0; i < n->n; i++)
        if (reads_any(n->kids[i], set)) return true;
    return false;
}

static bool add_entry(rr *r, lt_lnode *nest, const lt_lnode *expr) {
    for (int i = 0; i < r->nc; i++)
        if (r->ce[i].nest == nest && lt_lequal(r->ce[i].expr, expr)) return true;
    if (r->nc == RR_MAX_CACHE) return false;
    r->ce[r->nc].nest = nest, r->ce[r->nc].expr = expr, r->ce[r->nc].local = NULL, r->nc++;
    return true;
}

/* Unconditional loads of never-written global buffers in the first nest's body. */
static void load_candidates(const lt_lnode *n, bool cond, const lt_lnode **out, int *nout) {
    if (!n) return;
    if (n->kind == LT_L_LOAD && !cond && !n->buf->written && n->buf->scope == LT_SCOPE_GLOBAL && *nout < 16) {
        bool dup = false;
        for (int i = 0; i < *nout; i++) dup |= lt_lequal(out[i], n);
        if (!dup) out[(*nout)++] = n;
    }
    bool branchy = n->kind == LT_L_IF || n->kind == LT_L_SELECT ||
                   (n->kind == LT_L_BINARY && (n->op == LT_LOP_AND || n->op == LT_LOP_OR));
    for (int i = 0; i < n->n; i++) load_candidates(n->kids[i], cond || (branchy && i > 0), out, nout);
}

/* Expression entries for nest k (item ik): top-down, the first subexpressions an earlier nest of the
 * same structure computes unconditionally. `bad`: variables assigned from that nest on, or declared
 * inside nest k. */
static void expr_entries(rr *r, const lt_lnode *n, lt_lnode *k, int ik, bool *bad) {
    if (!n || r->nc == RR_MAX_CACHE) return;
    bool stmt = lt_lnode_info_get(n->kind)->is_stmt;
    if (!stmt && (n->dtype == LT_FLOAT || n->dtype == LT_DOUBLE) && n->kind != LT_L_LOAD && transcendental(n)) {
        for (int ip = ik - 1; ip >= 0; ip--) {
            lt_lnode *p = r->items[ip];
            if (p->kind != LT_L_FOR || !same_nest_shape(p, k)) continue;
            lt_lnode *e = renamed(r, n, k, p);
            if (!e) return;
            /* variables assigned from nest p on (p's own accumulators and loop vars included) */
            memset(bad, 0, sizeof(bool) * (size_t)(r->k->n_vars + 1));
            for (int i = ip; i < ik; i++) assigned_vars(r->items[i], bad);
            lt_lnode *lk[RR_MAX_NEST], *bk, *lp[RR_MAX_NEST], *bp;
            int nl = nest_of(k, lk, RR_MAX_NEST, &bk);
            nest_of(p, lp, RR_MAX_NEST, &bp);
            for (int i = 0; i < nl; i++) bad[lp[i]->var->id] = false; /* p's loop vars: the element itself */
            assigned_vars(bk, bad);                                  /* declared inside nest k */
            for (int i = 0; i < nl; i++) bad[lp[i]->var->id] = false;
            if (!reads_any(e, bad) && has_unconditional(r->xbody[ip], e, false)) {
                add_entry(r, p, e);
                return;
            }
        }
    }
    for (int i = 0; i < n->n; i++) expr_entries(r, n->kids[i], k, ik, bad);
}

/* Does nest k (not the first) load an entry's element? (the loads of the first nest) */
static bool loads_entry(rr *r, lt_lnode *k, const lt_lnode *n, const centry *c) {
    if (!n) return false;
    if (n->kind == LT_L_LOAD && n->buf == c->expr->buf) {
        lt_lnode *e = renamed(r, n, k, c->nest);
        if (e && lt_lequal(e, c->expr)) return true;
    }
    for (int i = 0; i < n->n; i++)
        if (loads_entry(r, k, n->kids[i], c)) return true;
    return false;
}

static bool stores_buf(const lt_lnode *n, const lt_lbuf *b) {
    if (!n) return false;
    if (n->kind == LT_L_STORE && n->buf == b) return true;
    for (int i = 0; i < n->n; i++)
        if (stores_buf(n->kids[i], b)) return true;
    return false;
}
static bool loads_stored(const lt_lnode *n, const lt_lnode *body) {
    if (!n) return false;
    if (n->kind == LT_L_LOAD && stores_buf(body, n->buf)) return true;
    for (int i = 0; i < n->n; i++)
        if (loads_stored(n->kids[i], body)) return true;
    return false;
}

/* A nest body with the uses of its LETs replaced by their values (and the LETs dropped), so equal
 * computations in two nests compare equal whatever their temporaries are called. A LET is expanded
 * when its variable is never reassigned and its value loads nothing the body stores. */
static lt_lnode *expand_lets(rr *r, lt_lnode *body) {
    if (body->kind != LT_L_SEQ) return body;
    lt_lnode **kids = lt_arena_alloc(r->k->arena, sizeof *kids * (size_t)(body->n + 1));
    lt_lvar *vars[32];
    lt_lnode *vals[32];
    int nv = 0;
    if (!kids) return NULL;
    for (int i = 0; i < body->n; i++) {
        lt_lnode *st = body->kids[i];
        for (int j = 0; j < nv && st; j++) st = lt_lsubstitute(r->k, st, vars[j], vals[j]);
        if (!st) return NULL;
        kids[i] = st;
        if (st->kind == LT_L_LET && nv < 32 && !loads_stored(lt_llet_value(st), body)) {
            int reads = 0, assigns = 0;
            has_var_ref(body, st->var, &reads, &assigns);
            if (!assigns) vars[nv] = st->var, vals[nv] = lt_llet_value(st), nv++;
        }
    }
    /* drop the expanded LETs (nothing reads them now) */
    int n = 0;
    for (int i = 0; i < body->n; i++) {
        bool expanded = false;
        for (int j = 0; j < nv && !expanded; j++) expanded = kids[i]->kind == LT_L_LET && kids[i]->var == vars[j];
        if (!expanded) kids[n++] = kids[i];
    }
    return n == 1 ? kids[0] : n == 0 ? lt_l_empty(r->k) : lt_l_seq(r->k, n, kids);
}

/* Decide the cache for L's body. */
static lt_status cache_plan(rr *r, lt_lnode *body) {
    row_items(r, body);
    if (r->items_over) { /* not every statement was looked at: no cache (never a partial one) */
        r->n_items = 0;
        return LT_OK;
    }
    for (int i = 0; i < r->n_items; i++) {
        lt_lnode *lk[RR_MAX_NEST], *bk;
        if (r->items[i]->kind != LT_L_FOR) continue;
        nest_of(r->items[i], lk, RR_MAX_NEST, &bk);
        if (!(r->xbody[i] = expand_lets(r, bk))) return LT_ERR_NOMEM;
    }
    lt_lnode *first = NULL;
    for (int i = 0; i < r->n_items && !first; i++)
        if (r->items[i]->kind == LT_L_FOR) first = r->items[i];
    if (!first) return LT_OK;
    lt_lnode *loops[RR_MAX_NEST], *b;
    int nl = nest_of(first, loops, RR_MAX_NEST, &b);
    b = r->xbody[item_of(r, first)];
    int64_t C = 1, e;
    for (int i = 0; i < nl; i++) C *= lt_lis_int(lt_lfor_extent(loops[i]), &e) ? e : 0;
    r->slots = chunks(r, C) * r->V;
    if (C <= 0 || r->slots > RR_CACHE_ELEMS || chunks(r, C) > 8) return LT_OK;
    bool *bad = lt_mem_calloc((size_t)r->k->n_vars + 1, sizeof *bad);
    if (!bad) return LT_ERR_NOMEM;
    /* loads of the first nest that a later nest of its shape loads again */
    const lt_lnode *cand[16];
    int ncand = 0;
    load_candidates(b, false, cand, &ncand);
    for (int c = 0; c < ncand; c++) {
        centry ce = {first, cand[c], NULL};
        for (int i = 0; i < r->n_items; i++) {
            lt_lnode *k = r->items[i];
            lt_lnode *lk[RR_MAX_NEST], *bk;
            if (k == first || k->kind != LT_L_FOR || !same_nest_shape(k, first)) continue;
            nest_of(k, lk, RR_MAX_NEST, &bk);
            if (loads_entry(r, k, r->xbody[i], &ce)) {
                add_entry(r, first, cand[c]);
                break;
            }
        }
    }
    /* expressions a later nest repeats */
    for (int i = 0; i < r->n_items; i++) {
        lt_lnode *k = r->items[i], *lk[RR_MAX_NEST], *bk;
        if (k->kind != LT_L_FOR || k == first) continue;
        nest_of(k, lk, RR_MAX_NEST, &bk);
        expr_entries(r, r->xbody[i], k, i, bad);
    }
    lt_mem_free(bad);
    while (r->nc * r->slots > RR_CACHE_TOTAL) r->nc--;
    for (int c = 0; c < r->nc; c++) {
        const lt_lnode *x = r->ce[c].expr;
        char name[80];
        snprintf(name, sizeof name, "%s_row", x->kind == LT_L_LOAD ? x->buf->name : "e");
        lt_dtype dt = x->kind == LT_L_LOAD ? x->buf->dtype : x->dtype;
        if (!(r->ce[c].local = lt_kernel_local(r->k, name, dt, r->slots, LT_SCOPE_LOCAL))) return LT_ERR_NOMEM;
    }
    return LT_OK;
}

/* Pre-order: expressions of nest f that an entry of an earlier nest holds become loads of its array. */
typedef struct cache_use {
    rr *r;
    lt_lnode *f;
    int fi;          /* f's item index */
    lt_lnode *slot;  /* j*V + v */
    bool own;        /* also replace f's own entries (its body, after the fill statements) */
} cache_use;

static lt_lnode *cache_replace(cache_use *cu, lt_lnode *n) {
    rr *r = cu->r;
    lt_kernel *k = r->k;
    if (!lt_lnode_info_get(n->kind)->is_stmt) {
        for (int c = 0; c < r->nc; c++) {
            const centry *e = &r->ce[c];
            if ((e->nest == cu->f && !cu->own) || item_of(r, e->nest) > cu->fi || !same_nest_shape(e->nest, cu->f)) continue;
            if (n->kind != e->expr->kind || n->dtype != e->expr->dtype) continue;
            lt_lnode *x = renamed(r, n, cu->f, e->nest);
            if (!x) return NULL;
            if (lt_lequal(x, e->expr)) return lt_l_load(k, e->local, cu->slot);
        }
    }
    if (!n->n) return n;
    lt_lnode *small[16], **kids = small;
    if (n->n > 16 && !(kids = lt_arena_alloc(k->arena, sizeof *kids * (size_t)n->n))) return NULL;
    bool changed = false;
    for (int i = 0; i < n->n; i++) {
        if (!(kids[i] = cache_replace(cu, n->kids[i]))) return NULL;
        changed |= kids[i] != n->kids[i];
    }
    return changed ? lt_l_with_kids(k, n, kids) : n;
}

static lt_lnode *build_nest(rr *r, lt_lnode *f) {
    lt_kernel *k = r->k;
    lt_lnode *loops[RR_MAX_NEST], *body;
    int nl = nest_of(f, loops, RR_MAX_NEST, &body);
    accs a;
    if (!check_nest(r, f, &a)) return NULL; /* checked before: cannot fail here */
    int64_t lo[RR_MAX_NEST], ext[RR_MAX_NEST], C = 1;
    for (int i = 0; i < nl; i++) {
        lt_lis_int(lt_lfor_min(loops[i]), &lo[i]);
        lt_lis_int(lt_lfor_extent(loops[i]), &ext[i]);
        C *= ext[i];
    }
    const char *base = f->var->name;
    char *jn = suffixed(k, base, ".j"), *vn = suffixed(k, base, ".v");
    if (!jn || !vn) return NULL;
    lt_lvar *j = lt_kernel_var(k, jn, LT_INT64), *v = r->V > 1 ? lt_kernel_var(k, vn, LT_INT64) : NULL;
    if (!j || (r->V > 1 && !v)) return NULL;
    /* f = (j*T + t)*V + v */
    lt_lnode *flat = lt_l_add(k, lt_l_mul(k, lt_l_var(k, j), lt_l_int(k, r->T)), lt_l_var(k, r->t));
    if (v) flat = lt_l_add(k, lt_l_mul(k, flat, lt_l_int(k, r->V)), lt_l_var(k, v));
    lt_lnode *b = body;
    if (r->nc) { /* the row cache: fill the arrays this nest owns, read those of earlier nests */
        int fi = item_of(r, f);
        if (fi >= 0 && r->xbody[fi]) b = r->xbody[fi];
        lt_lnode *slot = v ? lt_l_add(k, lt_l_mul(k, lt_l_var(k, j), lt_l_int(k, r->V)), lt_l_var(k, v)) : lt_l_var(k, j);
        cache_use cu = {r, f, item_of(r, f), slot, true};
        b = cache_replace(&cu, b);
        cu.own = false;
        lt_lnode *st[RR_MAX_CACHE + 1];
        int ns = 0;
        for (int c = 0; c < r->nc && b; c++)
            if (r->ce[c].nest == f) { /* its value as the body computes it (earlier arrays read) */
                lt_lnode *val = cache_replace(&cu, (lt_lnode *)r->ce[c].expr);
                if (!val) return NULL;
                st[ns++] = lt_l_store(k, r->ce[c].local, slot, val);
            }
        if (ns && b) {
            st[ns++] = b;
            b = lt_l_seq(k, ns, st);
        }
        if (!b) return NULL;
    }
    int64_t stride = 1;
    for (int i = nl - 1; i >= 0 && b; i--) {
        lt_lnode *d = flat;
        if (stride > 1) d = lt_l_binary(k, LT_LOP_DIV, d, lt_l_int(k, stride));
        if (i > 0) d = lt_l_binary(k, LT_LOP_MOD, d, lt_l_int(k, ext[i]));
        if (lo[i]) d = lt_l_add(k, d, lt_l_int(k, lo[i]));
        b = d ? lt_lsubstitute(k, b, loops[i]->var, d) : NULL;
        stride *= ext[i];
    }
    lt_lnode *pre[16], *post[16];
    for (int i = 0; i < a.n && b; i++) {
        lt_lvar *part = lt_kernel_var(k, suffixed(k, a.v[i]->name, "_part"), a.v[i]->dtype);
        if (!part) return NULL;
        rename_acc ra = {a.v[i], part};
        b = lt_lmutate(k, b, rename_fn, &ra);
        pre[i] = lt_l_let(k, part, identity(k, part->dtype, a.op[i]));
        post[i] = combine(r, a.v[i], part, a.op[i]);
    }
    if (!b) return NULL;
    int64_t J = chunks(r, C);
    if (C != J * r->T * r->V || r->k->shape_generic) b = lt_l_if(k, lt_l_binary(k, LT_LOP_LT, flat, lt_l_int(k, C)), b, NULL);
    if (v) {
        b = lt_l_for(k, v, f->role, lt_l_int(k, 0), lt_l_int(k, r->V), LT_LOOP_VECTORIZED, b);
        if (b) b->ival = r->V;
    }
    b = lt_l_for(k, j, f->role, lt_l_int(k, 0), lt_l_int(k, J), J <= 8 && J > 1 ? LT_LOOP_UNROLLED : LT_LOOP_SERIAL, b);
    if (b && J <= 8 && J > 1) b->ival = J;
    lt_lnode *all[33];
    int na = 0;
    for (int i = 0; i < a.n; i++) all[na++] = pre[i];
    all[na++] = b;
    for (int i = 0; i < a.n; i++) all[na++] = post[i];
    return na == 1 ? b : lt_l_seq(k, na, all);
}

static lt_lnode *build_stmt(rr *r, lt_lnode *n) {
    lt_kernel *k = r->k;
    switch (n->kind) {
    case LT_L_SEQ:
    case LT_L_IF: {
        lt_lnode *small[16], **kids = small;
        if (n->n > 16 && !(kids = lt_arena_alloc(k->arena, sizeof *kids * (size_t)n->n))) return NULL;
        for (int i = 0; i < n->n; i++) {
            kids[i] = n->kids[i];
            bool stmt = n->kind == LT_L_SEQ || i > 0;
            if (stmt && kids[i] && !(kids[i] = build_stmt(r, kids[i]))) return NULL;
        }
        return lt_l_with_kids(k, n, kids);
    }
    case LT_L_FOR: return build_nest(r, n);
    case LT_L_STORE: return lt_l_if(k, lt_l_binary(k, LT_LOP_EQ, lt_l_var(k, r->t), lt_l_int(k, 0)), n, NULL);
    default: return n;
    }
}

bool lt_sched_rowreduce_check(const lt_kernel *k, const char *loop, int64_t threads, int64_t lanes, char *why,
                              size_t why_n) {
    rr r = {.k = (lt_kernel *)k, .T = threads, .V = lanes, .why = why, .why_n = why_n};
    lt_lnode *L = k->body ? lt_lfind_loop(k->body, loop, NULL) : NULL;
    if (!L) return nope(&r, "no loop named '%s'", loop);
    return check(&r, L);
}

lt_status lt_sched_rowreduce_(lt_ctx *ctx, lt_kernel *k, const lt_sstep *step) {
    char text[256], why[256] = "";
    lt_sstep_format(step, text, sizeof text);
    if (!lt_sched_rowreduce_check(k, step->loop, step->factor, step->factor2, why, sizeof why))
        return lt_error(ctx, LT_ERR_INVALID, "schedule step '%s' on kernel %s: %s", text, k->name, why);
    rr r = {.ctx = ctx, .k = k, .step = step, .T = step->factor, .V = step->factor2};
    lt_lnode *L = lt_lfind_loop(k->body, step->loop, NULL);
    char *tn = suffixed(k, L->var->name, ".t");
    r.t = tn ? lt_kernel_var(k, tn, LT_INT64) : NULL;
    lt_lnode *nb = NULL, *nl = NULL, *body = NULL;
    if (r.t && cache_plan(&r, lt_lfor_body(L)) == LT_OK) {
        nb = build_stmt(&r, lt_lfor_body(L));
        for (int c = 0; c < r.nc && nb; c++) nb = lt_l_alloc(k, r.ce[c].local, nb);
        lt_lnode *tl = nb ? lt_l_for(k, r.t, LT_ROLE_ROW_THREADS, lt_l_int(k, 0), lt_l_int(k, r.T), LT_LOOP_GPU_THREAD, nb) : NULL;
        if (tl) tl->ival = 0;
        nl = tl ? lt_l_for(k, L->var, L->role, lt_lfor_min(L), lt_lfor_extent(L), (lt_loop_kind)L->op, tl) : NULL;
        if (nl) nl->ival = L->ival;
        body = nl ? lt_lreplace(k, k->body, L, nl) : NULL;
        body = lt_lsimplify_exprs(k, body);
    }
    if (!body) return lt_error(ctx, LT_ERR_NOMEM, "out of memory applying schedule step '%s' on kernel %s", text, k->name);
    k->body = body;
    return LT_OK;
}
