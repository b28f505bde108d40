/* schedule.c — schedule steps on Loop IR: split, reorder, tile, fuse, vectorize, unroll, parallel,
 * bind, cache (stage a buffer into a local/shared copy) and microkernel (replace a nest by a call),
 * rowreduce (GPU rows over threads: sched_rows.c), peel (a vector main loop and a scalar tail),
 * plus the one-line text format of steps. Semantics and the microkernel calling convention are
 * documented in schedule.h.
 *
 * Invariants: a step checks all its preconditions before it creates variables or buffers, builds a
 * new tree (nodes are immutable) and only then stores it in k->body, so a failed step leaves the
 * kernel as it was. Errors are LT_ERR_INVALID "schedule step 'TEXT' on kernel K: ..." naming the
 * loop(s) and buffer at fault.
 * Entry points: lt_sched_apply, lt_sched_apply_all, lt_sstep_format, lt_sstep_parse.
 */
#include "schedule.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_MAX_ELEMS 65536
#define AFF_MAXV 24 /* loops in a nest the affine analysis handles */
#define AFF_MAXR 8  /* base terms (made of outer variables) of one index */

static const char *const step_names[LT_S_COUNT] = {"split", "reorder", "tile", "fuse", "vectorize", "unroll",
                                                    "parallel", "bind", "cache", "microkernel", "rowreduce",
                                                    "peel"};

const char *lt_sstep_kind_name(lt_sstep_kind k) { return (unsigned)k < LT_S_COUNT ? step_names[k] : "?"; }

/* ---- errors ---- */

typedef struct sctx {
    lt_ctx *ctx;
    lt_kernel *k;
    const lt_sstep *step;
} sctx;

static lt_status serr(sctx *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static lt_status serr(sctx *s, const char *fmt, ...) {
    char text[256], msg[1024];
    lt_sstep_format(s->step, text, sizeof text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lt_error(s->ctx, LT_ERR_INVALID, "schedule step '%s' on kernel %s: %s", text, s->k->name, msg);
}

static lt_status oom(sctx *s) {
    char text[256];
    lt_sstep_format(s->step, text, sizeof text);
    return lt_error(s->ctx, LT_ERR_NOMEM, "out of memory applying schedule step '%s' on kernel %s", text, s->k->name);
}

/* ---- helpers ---- */

/* The loop named `name`, with the chain of its enclosing loops (outermost first) in path; *deep is
 * set when a chain longer than max was met (not searched). */
static bool find_path(lt_lnode *n, const char *name, lt_lnode **path, int *depth, int max, bool *deep) {
    if (n->kind == LT_L_FOR) {
        if (*depth >= max) {
            *deep = true;
            return false;
        }
        path[(*depth)++] = n;
        if (!strcmp(n->var->name, name)) return true;
    }
    if (lt_lnode_info_get(n->kind)->is_stmt)
        for (int i = 0; i < n->n; i++)
            if (find_path(n->kids[i], name, path, depth, max, deep)) return true;
    if (n->kind == LT_L_FOR) (*depth)--;
    return false;
}

static lt_status find(sctx *s, const char *name, lt_lnode **out) {
    lt_lnode *l = lt_lfind_loop(s->k->body, name, NULL);
    if (!l) return serr(s, "no loop named '%s'", name);
    *out = l;
    return LT_OK;
}

/* A loop that is the whole body of `outer` (directly, or as the only statement of a SEQ). */
static lt_lnode *sole_loop(lt_lnode *body) {
    if (body->kind == LT_L_SEQ && body->n == 1) body = lt_lseq_stmt(body, 0);
    return body->kind == LT_L_FOR ? body : NULL;
}

static lt_lnode *mk_for_like(lt_kernel *k, const lt_lnode *f, lt_lnode *min, lt_lnode *ext, lt_lnode *body) {
    lt_lnode *x = lt_l_for(k, f->var, f->role, min, ext, (lt_loop_kind)f->op, body);
    if (x) x->ival = f->ival;
    return x;
}


/* Install `with` in place of `old` and simplify index math. */
static lt_status commit(sctx *s, const lt_lnode *old, lt_lnode *with) {
    lt_lnode *body = lt_lsimplify_exprs(s->k, lt_lreplace(s->k, s->k->body, old, with));
    if (!body) return oom(s);
    s->k->body = body;
    return LT_OK;
}

static char *joined(sctx *s, const char *a, const char *sep, const char *b) {
    size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
    char *r = lt_arena_alloc(s->k->arena, n);
    if (r) snprintf(r, n, "%s%s%s", a, sep, b);
    return r;
}

/* ---- split ---- */

/* Wrap the innermost statement of the perfect loop nest `body` in IF(cond). */
static lt_lnode *guard_innermost(lt_kernel *k, lt_lnode *body, lt_lnode *cond) {
    lt_lnode *inner = sole_loop(body);
    if (inner) {
        lt_lnode *nb = guard_innermost(k, lt_lfor_body(inner), cond);
        return nb ? mk_for_like(k, inner, lt_lfor_min(inner), lt_lfor_extent(inner), nb) : NULL;
    }
    return lt_l_if(k, cond, body, NULL);
}

static lt_status split(sctx *s, lt_lnode *l, int64_t f, const char **outer_name, const char **inner_name) {
    lt_kernel *k = s->k;
    if (f < 1) return serr(s, "split factor %lld of loop '%s' must be >= 1", (long long)f, l->var->name);
    lt_lnode *min = lt_lfor_min(l), *ext = lt_lsimplify(k, lt_lfor_extent(l));
    if (!ext) return oom(s);
    int64_t e;
    bool cext = lt_lis_int(ext, &e);
    if (f > LT_SCHED_MAX_FACTOR && !(cext && f <= e)) { /* the inner loop would run f mostly idle iterations */
        if (cext)
            return serr(s, "split factor %lld of loop '%s' exceeds both its extent %lld and the limit %lld", (long long)f,
                        l->var->name, (long long)e, (long long)LT_SCHED_MAX_FACTOR);
        return serr(s, "split factor %lld of loop '%s' (a variable extent) exceeds the limit %lld", (long long)f,
                    l->var->name, (long long)LT_SCHED_MAX_FACTOR);
    }
    const char *on = joined(s, l->var->name, ".", "o"), *in = joined(s, l->var->name, ".", "i");
    if (!on || !in) return oom(s);
    lt_lvar *vo = lt_kernel_var(k, on, LT_INT64), *vi = lt_kernel_var(k, in, LT_INT64);
    if (!vo || !vi) return oom(s);
    bool exact = cext && e % f == 0 && !k->shape_generic; /* shape-generic: one code for every extent */
    lt_lnode *off = lt_l_add(k, lt_l_mul(k, lt_l_var(k, vo), lt_l_int(k, f)), lt_l_var(k, vi));
    lt_lnode *body = lt_lsubstitute(k, lt_lfor_body(l), l->var, lt_l_add(k, min, off));
    lt_lnode *oext = cext ? lt_l_int(k, e / f + (e % f != 0))
                                         : lt_l_binary(k, LT_LOP_DIV, lt_l_add(k, ext, lt_l_int(k, f - 1)), lt_l_int(k, f));
    if (!exact) body = guard_innermost(k, body, lt_l_binary(k, LT_LOP_LT, off, ext));
    lt_lnode *inner = lt_l_for(k, vi, l->role, lt_l_int(k, 0), lt_l_int(k, f), LT_LOOP_SERIAL, body);
    lt_lnode *outer = inner ? mk_for_like(k, l, lt_l_int(k, 0), oext, inner) : NULL;
    if (!outer) return oom(s);
    outer->var = vo;
    if (outer_name) *outer_name = vo->name;
    if (inner_name) *inner_name = vi->name;
    return commit(s, l, outer);
}

/* ---- peel ---- */

/* Loop l of constant extent e: l.o (e / f) over l.i (f), then l.t (e % f) running the same body on
 * the last elements. Unlike split, no iteration is guarded: l.i can be vectorized whatever e is. */
static lt_status peel(sctx *s, lt_lnode *l, int64_t f) {
    lt_kernel *k = s->k;
    lt_lnode *ext = lt_lsimplify(k, lt_lfor_extent(l));
    if (!ext) return oom(s);
    int64_t e;
    if (!lt_lis_int(ext, &e)) return serr(s, "loop '%s' has a variable extent; peeling needs a constant one", l->var->name);
    if (f < 1 || f > LT_SCHED_MAX_FACTOR)
        return serr(s, "peel factor %lld of loop '%s' must be 1..%lld", (long long)f, l->var->name,
                    (long long)LT_SCHED_MAX_FACTOR);
    const char *on = joined(s, l->var->name, ".", "o"), *in = joined(s, l->var->name, ".", "i"),
               *tn = joined(s, l->var->name, ".", "t");
    if (!on || !in || !tn) return oom(s);
    lt_lvar *vo = lt_kernel_var(k, on, LT_INT64), *vi = lt_kernel_var(k, in, LT_INT64), *vt = lt_kernel_var(k, tn, LT_INT64);
    if (!vo || !vi || !vt) return oom(s);
    lt_lnode *min = lt_lfor_min(l);
    lt_lnode *main_at = lt_l_add(k, min, lt_l_add(k, lt_l_mul(k, lt_l_var(k, vo), lt_l_int(k, f)), lt_l_var(k, vi)));
    lt_lnode *tail_at = lt_l_add(k, min, lt_l_add(k, lt_l_int(k, e / f * f), lt_l_var(k, vt)));
    lt_lnode *main_body = lt_lsubstitute(k, lt_lfor_body(l), l->var, main_at);
    lt_lnode *tail_body = lt_lsubstitute(k, lt_lfor_body(l), l->var, tail_at);
    lt_lnode *inner = main_body ? lt_l_for(k, vi, l->role, lt_l_int(k, 0), lt_l_int(k, f), LT_LOOP_SERIAL, main_body) : NULL;
    lt_lnode *outer = inner ? mk_for_like(k, l, lt_l_int(k, 0), lt_l_int(k, e / f), inner) : NULL;
    lt_lnode *tail = tail_body ? lt_l_for(k, vt, l->role, lt_l_int(k, 0), lt_l_int(k, e % f), LT_LOOP_SERIAL, tail_body) : NULL;
    if (!outer || !tail) return oom(s);
    outer->var = vo;
    lt_lnode *both[2] = {outer, tail};
    lt_lnode *seq = lt_l_seq(k, 2, both);
    if (!seq) return oom(s);
    return commit(s, l, seq);
}

/* ---- reorder / fuse ---- */

/* outer directly holding inner, with inner's bounds independent of outer. */
static lt_status check_nested(sctx *s, lt_lnode *outer, lt_lnode *inner, const char *what) {
    if (sole_loop(lt_lfor_body(outer)) != inner)
        return serr(s, "loops '%s' and '%s' are not perfectly nested (the body of '%s' must be exactly loop '%s' to %s)",
                    outer->var->name, inner->var->name, outer->var->name, inner->var->name, what);
    if (lt_luses_var(lt_lfor_min(inner), outer->var) || lt_luses_var(lt_lfor_extent(inner), outer->var))
        return serr(s, "the bounds of loop '%s' depend on loop '%s'", inner->var->name, outer->var->name);
    return LT_OK;
}

static lt_status reorder(sctx *s, const char *a_name, const char *b_name) {
    lt_lnode *a = NULL, *b = NULL;
    LT_TRY(find(s, a_name, &a));
    LT_TRY(find(s, b_name, &b));
    if (a == b) return serr(s, "cannot reorder loop '%s' with itself", a_name);
    lt_lnode *outer = a, *inner = b;
    if (sole_loop(lt_lfor_body(b)) == a) outer = b, inner = a;
    LT_TRY(check_nested(s, outer, inner, "swap them"));
    lt_lnode *no = mk_for_like(s->k, outer, lt_lfor_min(outer), lt_lfor_extent(outer), lt_lfor_body(inner));
    lt_lnode *ni = no ? mk_for_like(s->k, inner, lt_lfor_min(inner), lt_lfor_extent(inner), no) : NULL;
    if (!ni) return oom(s);
    return commit(s, outer, ni);
}

static lt_status fuse(sctx *s) {
    lt_kernel *k = s->k;
    lt_lnode *a = NULL, *b = NULL;
    LT_TRY(find(s, s->step->loop, &a));
    LT_TRY(find(s, s->step->loop2, &b));
    LT_TRY(check_nested(s, a, b, "fuse them"));
    int64_t ea, eb, e;
    if (!lt_lis_int(lt_lfor_extent(a), &ea) || !lt_lis_int(lt_lfor_extent(b), &eb))
        return serr(s, "fusing needs constant extents; loop '%s' or '%s' has a variable one", a->var->name, b->var->name);
    if (ea < 1 || eb < 1 || !lt_mul_i64(ea, eb, &e)) return serr(s, "bad extents %lld x %lld", (long long)ea, (long long)eb);
    const char *name = joined(s, a->var->name, ".", b->var->name);
    lt_lvar *v = name ? lt_kernel_var(k, name, LT_INT64) : NULL;
    if (!v) return oom(s);
    lt_lnode *fv = lt_l_var(k, v);
    lt_lnode *body = lt_lsubstitute(k, lt_lfor_body(b), b->var,
                                    lt_l_add(k, lt_lfor_min(b), lt_l_binary(k, LT_LOP_MOD, fv, lt_l_int(k, eb))));
    body = lt_lsubstitute(k, body, a->var, lt_l_add(k, lt_lfor_min(a), lt_l_binary(k, LT_LOP_DIV, fv, lt_l_int(k, eb))));
    lt_lnode *f = body ? mk_for_like(k, a, lt_l_int(k, 0), lt_l_int(k, e), body) : NULL;
    if (!f) return oom(s);
    f->var = v;
    return commit(s, a, f);
}

/* ---- kind markers ---- */

static const lt_lnode *find_kind(const lt_lnode *n, lt_loop_kind kind) {
    if (n->kind == LT_L_FOR && n->op == (int)kind) return n;
    if (lt_lnode_info_get(n->kind)->is_stmt)
        for (int i = 0; i < n->n; i++) {
            const lt_lnode *f = find_kind(n->kids[i], kind);
            if (f) return f;
        }
    return NULL;
}

static lt_status mark(sctx *s, lt_loop_kind kind, int64_t ival) {
    enum { MAX_DEPTH = 256 };
    lt_lnode *path[MAX_DEPTH];
    int depth = 0;
    bool deep = false;
    const char *name = s->step->loop;
    if (!find_path(s->k->body, name, path, &depth, MAX_DEPTH, &deep))
        return deep ? serr(s, "loops nested deeper than %d (looking for loop '%s')", MAX_DEPTH, name)
                    : serr(s, "no loop named '%s'", name);
    lt_lnode *l = path[depth - 1];
    int64_t e = 0;
    bool const_ext = lt_lis_int(lt_lfor_extent(l), &e);
    if (kind == LT_LOOP_VECTORIZED) {
        if (!const_ext) return serr(s, "loop '%s' has a variable extent; vectorizing needs a constant one (split it first)", name);
        if (e < 1 || e > 64) return serr(s, "loop '%s' has extent %lld; vectorizing needs 1..64 (split it first)", name, (long long)e);
        ival = e;
    }
    if (kind == LT_LOOP_UNROLLED) {
        if (ival < 0) return serr(s, "unroll factor %lld of loop '%s' is negative", (long long)ival, name);
        if (ival == 0 && !const_ext) return serr(s, "loop '%s' has a variable extent; full unrolling needs a constant one", name);
    }
    if (kind == LT_LOOP_PARALLEL) {
        if (ival < 0) return serr(s, "minimum work %lld of parallel loop '%s' is negative", (long long)ival, name);
        for (int i = 0; i < depth - 1; i++)
            if (path[i]->op == LT_LOOP_PARALLEL)
                return serr(s, "loop '%s' is inside parallel loop '%s'", name, path[i]->var->name);
    }
    if (kind == LT_LOOP_GPU_BLOCK || kind == LT_LOOP_GPU_THREAD) {
        if (ival < 0 || ival > 2) return serr(s, "GPU axis %lld of loop '%s' must be 0..2 (x, y, z)", (long long)ival, name);
        for (int i = 0; i < depth - 1; i++)
            if (path[i]->op == (int)kind && path[i]->ival == ival)
                return serr(s, "loop '%s' is inside loop '%s', already bound to the same GPU axis", name, path[i]->var->name);
    }
    if (kind == LT_LOOP_PARALLEL) {
        const lt_lnode *inner = find_kind(lt_lfor_body(l), LT_LOOP_PARALLEL);
        if (inner) return serr(s, "loop '%s' contains parallel loop '%s'", name, inner->var->name);
    }
    lt_lnode *m = mk_for_like(s->k, l, lt_lfor_min(l), lt_lfor_extent(l), lt_lfor_body(l));
    if (!m) return oom(s);
    m->op = kind;
    m->ival = ival;
    return commit(s, l, m);
}

/* ---- affine index analysis (cache, microkernel) ---- */

typedef struct aff {
    int64_t coeff[AFF_MAXV]; /* per nest variable */
    int64_t c;
    int nr;
    lt_lnode *rest[AFF_MAXR]; /* base terms, free of nest variables */
    int64_t rcoeff[AFF_MAXR];
    bool ok;
} aff;

typedef struct nest {
    int nv;
    lt_lnode *loop[AFF_MAXV]; /* the FOR nodes */
} nest;

static int nest_index(const nest *ns, const lt_lvar *v) {
    for (int i = 0; i < ns->nv; i++)
        if (ns->loop[i]->var == v) return i;
    return -1;
}

static bool uses_nest(const nest *ns, const lt_lnode *n) {
    for (int i = 0; i < ns->nv; i++)
        if (lt_luses_var(n, ns->loop[i]->var)) return true;
    return false;
}

static void aff_collect(aff *a, const nest *ns, lt_lnode *n, int64_t scale) {
    int64_t c, s2;
    if (!a->ok) return;
    switch (n->kind) {
    case LT_L_INT:
        if (!lt_mul_i64(n->ival, scale, &c) || !lt_add_i64(a->c, c, &a->c)) a->ok = false;
        return;
    case LT_L_VAR: {
        int i = nest_index(ns, n->var);
        if (i >= 0) {
            if (!lt_add_i64(a->coeff[i], scale, &a->coeff[i])) a->ok = false;
            return;
        }
        break;
    }
    case LT_L_BINARY:
        if (n->dtype != LT_INT64) break;
        if (n->op == LT_LOP_ADD || n->op == LT_LOP_SUB) {
            aff_collect(a, ns, lt_lexpr_a(n), scale);
            if (n->op == LT_LOP_SUB && scale == INT64_MIN) a->ok = false;
            else aff_collect(a, ns, lt_lexpr_b(n), n->op == LT_LOP_SUB ? -scale : scale);
            return;
        }
        if (n->op == LT_LOP_MUL)
            for (int side = 0; side < 2; side++)
                if (lt_lis_int(n->kids[side], &c)) {
                    if (!lt_mul_i64(scale, c, &s2)) a->ok = false;
                    else aff_collect(a, ns, n->kids[1 - side], s2);
                    return;
                }
        break;
    default: break;
    }
    if (uses_nest(ns, n)) {
        a->ok = false;
        return;
    }
    for (int i = 0; i < a->nr; i++)
        if (lt_lequal(a->rest[i], n)) {
            if (!lt_add_i64(a->rcoeff[i], scale, &a->rcoeff[i])) a->ok = false;
            return;
        }
    if (a->nr == AFF_MAXR) {
        a->ok = false;
        return;
    }
    a->rest[a->nr] = n;
    a->rcoeff[a->nr++] = scale;
}

static bool aff_of(aff *a, const nest *ns, lt_lnode *index) {
    memset(a, 0, sizeof *a);
    a->ok = true;
    aff_collect(a, ns, index, 1);
    return a->ok;
}

static bool aff_same_base(const aff *a, const aff *b) {
    int na = 0, nb = 0;
    for (int i = 0; i < a->nr; i++) na += a->rcoeff[i] != 0;
    for (int i = 0; i < b->nr; i++) nb += b->rcoeff[i] != 0;
    if (na != nb) return false;
    for (int i = 0; i < a->nr; i++) {
        if (!a->rcoeff[i]) continue;
        bool found = false;
        for (int j = 0; j < b->nr && !found; j++) found = b->rcoeff[j] == a->rcoeff[i] && lt_lequal(a->rest[i], b->rest[j]);
        if (!found) return false;
    }
    return true;
}

static bool aff_same(const aff *a, const aff *b, int nv) {
    return a->c == b->c && !memcmp(a->coeff, b->coeff, (size_t)nv * sizeof a->coeff[0]) && aff_same_base(a, b);
}

/* base + c as an expression. */
static lt_lnode *aff_base(lt_kernel *k, const aff *a, int64_t c) {
    lt_lnode *e = lt_l_int(k, c);
    for (int i = 0; i < a->nr; i++)
        if (a->rcoeff[i]) e = lt_l_add(k, e, lt_l_mul(k, a->rest[i], lt_l_int(k, a->rcoeff[i])));
    return e ? lt_lsimplify(k, e) : NULL;
}

/* Accesses (LOAD / STORE / ADDR) of one buffer, or of all buffers, under a subtree. */
typedef struct access {
    lt_lnode *node;
    bool guarded; /* under an IF within the subtree */
} access;

typedef struct acc_list {
    const lt_lbuf *buf; /* NULL: every buffer */
    access *items;
    int n, cap;
    bool oom;
    const lt_lnode *let_var_user; /* a LET-declared variable used in an index (cache) */
} acc_list;

static void collect_acc(acc_list *l, lt_lnode *n, bool guarded, lt_arena *arena) {
    if ((n->kind == LT_L_LOAD || n->kind == LT_L_STORE || n->kind == LT_L_ADDR) && (!l->buf || n->buf == l->buf)) {
        if (l->n == l->cap) {
            int nc = l->cap ? 2 * l->cap : 16;
            access *p = lt_arena_alloc(arena, (size_t)nc * sizeof *p);
            if (!p) {
                l->oom = true;
                return;
            }
            if (l->n) memcpy(p, l->items, (size_t)l->n * sizeof *p);
            l->items = p;
            l->cap = nc;
        }
        l->items[l->n++] = (access){n, guarded};
    }
    for (int i = 0; i < n->n; i++) collect_acc(l, n->kids[i], guarded || (n->kind == LT_L_IF && i > 0), arena);
}

static void collect_nest(nest *ns, lt_lnode *n, bool *overflow) {
    if (n->kind == LT_L_FOR) {
        if (ns->nv == AFF_MAXV) *overflow = true;
        else ns->loop[ns->nv++] = n;
    }
    if (lt_lnode_info_get(n->kind)->is_stmt)
        for (int i = 0; i < n->n; i++) collect_nest(ns, n->kids[i], overflow);
}

static bool allocates(const lt_lnode *n, const lt_lbuf *b) {
    if (n->kind == LT_L_ALLOC && n->buf == b) return true;
    if (lt_lnode_info_get(n->kind)->is_stmt)
        for (int i = 0; i < n->n; i++)
            if (allocates(n->kids[i], b)) return true;
    return false;
}

static bool declares_let(const lt_lnode *n, const lt_lnode *expr) {
    if (n->kind == LT_L_LET && lt_luses_var(expr, n->var)) return true;
    if (lt_lnode_info_get(n->kind)->is_stmt)
        for (int i = 0; i < n->n; i++)
            if (declares_let(n->kids[i], expr)) return true;
    return false;
}

/* ---- cache ---- */

typedef struct cache_plan {
    const nest *ns;
    const lt_lbuf *from;
    lt_lbuf *to;
    bool box;
    int nd;                         /* box: dimensions, coefficients decreasing */
    int64_t dcoef[AFF_MAXV], dext[AFF_MAXV], dstride[AFF_MAXV];
    int64_t lo;                     /* window: lowest offset */
} cache_plan;

/* The local index of an access with affine form a (nest vars shifted by their constant mins). */
static lt_lnode *local_index(lt_kernel *k, const cache_plan *p, const aff *a) {
    lt_lnode *e = lt_l_int(k, p->box ? 0 : a->c - p->lo);
    for (int v = 0; v < p->ns->nv; v++) {
        if (!a->coeff[v]) continue;
        const lt_lnode *f = p->ns->loop[v];
        lt_lnode *u = lt_l_binary(k, LT_LOP_SUB, lt_l_var(k, f->var), lt_lfor_min(f));
        int64_t mult = a->coeff[v];
        if (p->box)
            for (int d = 0; d < p->nd; d++)
                if (p->dcoef[d] == a->coeff[v]) mult = p->dstride[d];
        e = lt_l_add(k, e, lt_l_mul(k, u, lt_l_int(k, mult)));
    }
    return e ? lt_lsimplify(k, e) : NULL;
}

typedef struct redirect_ctx {
    const cache_plan *p;
    bool fail;
} redirect_ctx;

static lt_lnode *redirect_fn(lt_kernel *k, lt_lnode *n, void *user) {
    redirect_ctx *r = user;
    if ((n->kind != LT_L_LOAD && n->kind != LT_L_STORE) || n->buf != r->p->from) return n;
    aff a;
    if (!aff_of(&a, r->p->ns, lt_lmem_index(n))) { /* cannot happen: checked before */
        r->fail = true;
        return n;
    }
    lt_lnode *idx = local_index(k, r->p, &a);
    lt_lnode *x = n->kind == LT_L_LOAD ? lt_l_load(k, r->p->to, idx) : lt_l_store(k, r->p->to, idx, lt_lstore_value(n));
    if (x) x->lanes = n->lanes;
    return x;
}

/* for t_0..t_{nd-1}: [if 0 <= g < size:] dst = src, copying between the global and local buffer. */
static lt_lnode *copy_nest(sctx *s, const cache_plan *p, lt_lnode *base, bool in, bool guard) {
    lt_kernel *k = s->k;
    int nd = p->box ? p->nd : 1;
    lt_lvar *t[AFF_MAXV];
    lt_lnode *g = base, *l = lt_l_int(k, 0);
    for (int d = 0; d < nd; d++) {
        char nm[32];
        snprintf(nm, sizeof nm, "c%d", d);
        const char *name = joined(s, p->to->name, ".", nm);
        if (!name || !(t[d] = lt_kernel_var(k, name, LT_INT64))) return NULL;
        int64_t gc = p->box ? p->dcoef[d] : 1, lc = p->box ? p->dstride[d] : 1;
        g = lt_l_add(k, g, lt_l_mul(k, lt_l_var(k, t[d]), lt_l_int(k, gc)));
        l = lt_l_add(k, l, lt_l_mul(k, lt_l_var(k, t[d]), lt_l_int(k, lc)));
    }
    if (!(g = lt_lsimplify(k, g)) || !(l = lt_lsimplify(k, l))) return NULL;
    lt_lnode *st = in ? lt_l_store(k, p->to, l, lt_l_load(k, (lt_lbuf *)p->from, g))
                      : lt_l_store(k, (lt_lbuf *)p->from, g, lt_l_load(k, p->to, l));
    if (guard) {
        lt_lnode *ok = lt_l_binary(k, LT_LOP_AND, lt_l_binary(k, LT_LOP_GE, g, lt_l_int(k, 0)),
                                   lt_l_binary(k, LT_LOP_LT, g, lt_l_int(k, p->from->size)));
        st = lt_l_if(k, ok, st, NULL);
    }
    for (int d = nd - 1; d >= 0; d--)
        st = lt_l_for(k, t[d], LT_ROLE_COPY, lt_l_int(k, 0), lt_l_int(k, p->box ? p->dext[d] : p->dext[0]), LT_LOOP_SERIAL, st);
    return st;
}

static lt_status cache(sctx *s) {
    lt_kernel *k = s->k;
    const char *bname = s->step->loop, *lname = s->step->loop2;
    lt_lbuf *B = lt_kernel_find_buf(k, bname);
    if (!B) return serr(s, "no buffer named '%s'", bname);
    lt_lnode *L = NULL;
    LT_TRY(find(s, lname, &L));
    if (s->step->factor != 0 && s->step->factor != 1)
        return serr(s, "cache scope %lld must be 0 (local) or 1 (shared)", (long long)s->step->factor);
    lt_lnode *body = lt_lfor_body(L);
    if (allocates(body, B)) return serr(s, "buffer '%s' is allocated inside loop '%s'", bname, lname);
    nest ns = {0};
    bool overflow = false;
    collect_nest(&ns, body, &overflow);
    if (overflow) return serr(s, "more than %d loops inside loop '%s'", AFF_MAXV, lname);
    acc_list al = {.buf = B};
    collect_acc(&al, body, false, k->arena);
    if (al.oom) return oom(s);
    if (!al.n) return serr(s, "buffer '%s' is not accessed inside loop '%s'", bname, lname);
    aff *fa = lt_arena_alloc(k->arena, (size_t)al.n * sizeof *fa);
    if (!fa) return oom(s);
    bool written = false, read = false, guarded = false, same = true, consts_equal = true;
    for (int i = 0; i < al.n; i++) {
        lt_lnode *n = al.items[i].node;
        if (n->kind == LT_L_ADDR) return serr(s, "buffer '%s' is passed to a call inside loop '%s'", bname, lname);
        if (n->lanes != 1) return serr(s, "buffer '%s' has vector accesses inside loop '%s'", bname, lname);
        written |= n->kind == LT_L_STORE;
        read |= n->kind == LT_L_LOAD;
        guarded |= al.items[i].guarded;
        if (!aff_of(&fa[i], &ns, lt_lmem_index(n)))
            return serr(s, "an index of '%s' is not affine in the loops inside '%s'", bname, lname);
        for (int v = 0; v < ns.nv; v++) {
            int64_t m;
            if (fa[i].coeff[v] && (!lt_lis_int(lt_lfor_min(ns.loop[v]), &m) || !lt_lis_int(lt_lfor_extent(ns.loop[v]), &m)))
                return serr(s, "loop '%s' indexing '%s' has non-constant bounds", ns.loop[v]->var->name, bname);
            if (fa[i].coeff[v] < 0) return serr(s, "'%s' is indexed backwards by loop '%s'", bname, ns.loop[v]->var->name);
            /* fold the constant min into the offset */
            int64_t mn = lt_lfor_min(ns.loop[v])->ival, t;
            if (fa[i].coeff[v] && (!lt_mul_i64(mn, fa[i].coeff[v], &t) || !lt_add_i64(fa[i].c, t, &fa[i].c)))
                return serr(s, "index overflow for '%s'", bname);
        }
        for (int r = 0; r < fa[i].nr; r++)
            if (fa[i].rcoeff[r] && declares_let(body, fa[i].rest[r]))
                return serr(s, "an index of '%s' uses a variable declared inside loop '%s'", bname, lname);
        if (i && !aff_same_base(&fa[i], &fa[0]))
            return serr(s, "the accesses of '%s' inside loop '%s' have different base offsets", bname, lname);
        if (i) same &= aff_same(&fa[i], &fa[0], ns.nv), consts_equal &= fa[i].c == fa[0].c;
    }
    cache_plan p = {.ns = &ns, .from = B, .box = consts_equal};
    int64_t size = 1;
    if (p.box) { /* dimensions = distinct coefficients, largest first */
        for (int i = 0; i < al.n; i++)
            for (int v = 0; v < ns.nv; v++) {
                int64_t c = fa[i].coeff[v];
                int d = 0;
                while (d < p.nd && p.dcoef[d] != c) d++;
                if (c && d == p.nd) {
                    int at = 0;
                    while (at < p.nd && p.dcoef[at] > c) at++;
                    memmove(&p.dcoef[at + 1], &p.dcoef[at], (size_t)(p.nd - at) * sizeof p.dcoef[0]);
                    p.dcoef[at] = c;
                    p.nd++;
                }
            }
        for (int d = 0; d < p.nd; d++) {
            p.dext[d] = 1;
            for (int i = 0; i < al.n; i++) { /* extent of the sum of this access's vars with coefficient dcoef[d] */
                int64_t e = 1;
                for (int v = 0; v < ns.nv; v++)
                    if (fa[i].coeff[v] == p.dcoef[d]) e += lt_lfor_extent(ns.loop[v])->ival - 1;
                if (e > p.dext[d]) p.dext[d] = e;
            }
        }
        for (int d = p.nd - 1; d >= 0; d--) {
            p.dstride[d] = size;
            if (!lt_mul_i64(size, p.dext[d], &size) || size > CACHE_MAX_ELEMS)
                return serr(s, "the footprint of '%s' in loop '%s' exceeds %d elements", bname, lname, CACHE_MAX_ELEMS);
        }
        if (written) { /* distinct local elements must be distinct global ones */
            int64_t reach = 0;
            for (int d = p.nd - 1; d >= 0; d--) {
                if (p.dcoef[d] <= reach)
                    return serr(s, "written buffer '%s' has overlapping index dimensions inside loop '%s'", bname, lname);
                reach += p.dcoef[d] * (p.dext[d] - 1);
            }
        }
    } else { /* contiguous window */
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int i = 0; i < al.n; i++) {
            int64_t h = fa[i].c;
            for (int v = 0; v < ns.nv; v++) h += fa[i].coeff[v] * (lt_lfor_extent(ns.loop[v])->ival - 1);
            if (fa[i].c < lo) lo = fa[i].c;
            if (h > hi) hi = h;
        }
        size = hi - lo + 1;
        if (size > CACHE_MAX_ELEMS)
            return serr(s, "the footprint of '%s' in loop '%s' exceeds %d elements", bname, lname, CACHE_MAX_ELEMS);
        p.lo = lo;
        p.dext[0] = size;
    }
    /* exact: the footprint is exactly the set of elements accessed (every inner loop runs) */
    bool all_run = true;
    for (int v = 0; v < ns.nv; v++) {
        int64_t e;
        all_run &= lt_lis_int(lt_lfor_extent(ns.loop[v]), &e) && e >= 1;
    }
    bool exact = same && !guarded && all_run;
    if (written && !exact)
        return serr(s, "written buffer '%s' needs one unconditional access pattern inside loop '%s'%s", bname, lname,
                    guarded ? " (it is written under an IF: cache before splitting with a tail)"
                    : !all_run ? " (a loop inside has a variable extent)" : "");
    /* build */
    bool shared = s->step->factor == 1;
    const char *lnm = joined(s, bname, "_", shared ? "shared" : "local");
    if (!lnm || !(p.to = lt_kernel_local(k, lnm, B->dtype, size, shared ? LT_SCOPE_SHARED : LT_SCOPE_LOCAL))) return oom(s);
    redirect_ctx rc = {&p, false};
    lt_lnode *nb = lt_lmutate(k, body, redirect_fn, &rc);
    if (!nb) return oom(s);
    if (rc.fail) return lt_error(s->ctx, LT_ERR_INTERNAL, "cache: affine form of '%s' changed while rewriting", bname);
    lt_lnode *base = aff_base(k, &fa[0], p.box ? fa[0].c : p.lo);
    lt_lnode *stmts[5];
    int ns_ = 0;
    if (read || !exact) {
        if (!(stmts[ns_++] = copy_nest(s, &p, base, true, !exact))) return oom(s);
        if (shared && !(stmts[ns_++] = lt_l_barrier(k))) return oom(s);
    }
    stmts[ns_++] = nb;
    if (written) {
        if (shared && !(stmts[ns_++] = lt_l_barrier(k))) return oom(s);
        if (!(stmts[ns_++] = copy_nest(s, &p, base, false, false))) return oom(s);
    }
    lt_lnode *nl = mk_for_like(k, L, lt_lfor_min(L), lt_lfor_extent(L), lt_l_alloc(k, p.to, lt_l_seq(k, ns_, stmts)));
    if (!nl) return oom(s);
    return commit(s, L, nl);
}

/* ---- microkernel ---- */

/* A variable that a LET or ASSIGN inside `nest` sets and `index` reads (the call's arguments are
 * evaluated before the nest would run: such an index has no value there), or NULL. */
static const lt_lvar *inner_var_read(const lt_lnode *nest, const lt_lnode *index) {
    if (!nest) return NULL;
    if ((nest->kind == LT_L_LET || nest->kind == LT_L_ASSIGN) && nest->var && lt_luses_var(index, nest->var))
        return nest->var;
    for (int i = 0; lt_lnode_info_get(nest->kind)->is_stmt && i < nest->n; i++) {
        const lt_lvar *v = inner_var_read(nest->kids[i], index);
        if (v) return v;
    }
    return NULL;
}

static lt_status microkernel(sctx *s) {
    lt_kernel *k = s->k;
    lt_lnode *L = NULL;
    LT_TRY(find(s, s->step->loop, &L));
    if (!s->step->name[0]) return serr(s, "no microkernel name");
    nest ns = {0};
    bool overflow = false;
    collect_nest(&ns, L, &overflow);
    if (overflow) return serr(s, "more than %d loops in the nest at '%s'", AFF_MAXV, L->var->name);
    for (int i = 0; i < ns.nv; i++)
        if (uses_nest(&ns, lt_lfor_min(ns.loop[i])) || uses_nest(&ns, lt_lfor_extent(ns.loop[i])))
            return serr(s, "the bounds of loop '%s' depend on the nest at '%s'", ns.loop[i]->var->name, L->var->name);
    const lt_lnode *stack[512];
    int sp = 0;
    stack[sp++] = L;
    while (sp) { /* no IF inside */
        const lt_lnode *n = stack[--sp];
        if (n->kind == LT_L_IF) return serr(s, "the nest at '%s' holds a condition (a split tail?)", L->var->name);
        if (lt_lnode_info_get(n->kind)->is_stmt)
            for (int i = 0; i < n->n; i++) {
                if (sp == 512) return serr(s, "the nest at '%s' is too large", L->var->name);
                stack[sp++] = n->kids[i];
            }
    }
    acc_list al = {0};
    collect_acc(&al, L, false, k->arena);
    if (al.oom) return oom(s);
    /* buffers in first-appearance order, each with one affine pattern */
    const lt_lbuf *bufs[64];
    aff *fa = lt_arena_alloc(k->arena, 64 * sizeof *fa);
    if (!fa) return oom(s);
    int nb = 0;
    for (int i = 0; i < al.n; i++) {
        lt_lnode *n = al.items[i].node;
        aff a;
        const lt_lvar *inner = inner_var_read(L, lt_lmem_index(n));
        if (inner)
            return serr(s, "an index of '%s' reads '%s', computed inside the nest at '%s'", n->buf->name, inner->name,
                        L->var->name);
        if (!aff_of(&a, &ns, lt_lmem_index(n)))
            return serr(s, "an index of '%s' is not affine in the nest at '%s'", n->buf->name, L->var->name);
        int j = 0;
        while (j < nb && bufs[j] != n->buf) j++;
        if (j == nb) {
            if (nb == 64) return serr(s, "more than 64 buffers in the nest at '%s'", L->var->name);
            bufs[nb] = n->buf;
            fa[nb++] = a;
        } else if (!aff_same(&a, &fa[j], ns.nv))
            return serr(s, "buffer '%s' is accessed with different index patterns in the nest at '%s'", n->buf->name,
                        L->var->name);
    }
    int nargs = nb + ns.nv + nb * ns.nv;
    lt_lnode **args = lt_arena_alloc(k->arena, (size_t)(nargs ? nargs : 1) * sizeof *args);
    if (!args) return oom(s);
    for (int j = 0; j < nb; j++) {
        lt_lnode *off = aff_base(k, &fa[j], fa[j].c);
        for (int v = 0; v < ns.nv && off; v++)
            if (fa[j].coeff[v]) off = lt_l_add(k, off, lt_l_mul(k, lt_lfor_min(ns.loop[v]), lt_l_int(k, fa[j].coeff[v])));
        if (!(args[j] = lt_l_addr(k, (lt_lbuf *)bufs[j], off ? lt_lsimplify(k, off) : NULL))) return oom(s);
    }
    for (int v = 0; v < ns.nv; v++) args[nb + v] = lt_lfor_extent(ns.loop[v]);
    for (int j = 0; j < nb; j++)
        for (int v = 0; v < ns.nv; v++)
            if (!(args[nb + ns.nv + j * ns.nv + v] = lt_l_int(k, fa[j].coeff[v]))) return oom(s);
    lt_kernel tmp = *k; /* the nest's static cost, recorded on the call */
    tmp.body = L;
    lt_kernel_cost(&tmp);
    lt_lnode *call = lt_l_call(k, LT_UNDEFINED, s->step->name, nargs, args);
    if (!call) return oom(s);
    call->fval = tmp.flops;
    call->ival = (int64_t)tmp.bytes;
    lt_lnode *ev = lt_l_eval(k, call);
    if (!ev) return oom(s);
    return commit(s, L, ev);
}

/* ---- entry points ---- */

lt_status lt_sched_apply(lt_ctx *ctx, lt_kernel *k, const lt_sstep *step) {
    sctx s = {ctx, k, step};
    lt_lnode *a = NULL, *b = NULL;
    if (!k->body) return lt_error(ctx, LT_ERR_INTERNAL, "kernel %s has no body to schedule", k->name);
    switch (step->kind) {
    case LT_S_SPLIT:
        LT_TRY(find(&s, step->loop, &a));
        return split(&s, a, step->factor, NULL, NULL);
    case LT_S_REORDER: return reorder(&s, step->loop, step->loop2);
    case LT_S_TILE: {
        LT_TRY(find(&s, step->loop, &a));
        LT_TRY(find(&s, step->loop2, &b));
        LT_TRY(check_nested(&s, a, b, "tile them"));
        if (step->factor < 1 || step->factor2 < 1)
            return serr(&s, "tile factors %lld, %lld must be >= 1", (long long)step->factor, (long long)step->factor2);
        const char *ai, *bo;
        LT_TRY(split(&s, a, step->factor, NULL, &ai));
        LT_TRY(find(&s, step->loop2, &b));
        LT_TRY(split(&s, b, step->factor2, &bo, NULL));
        return reorder(&s, ai, bo);
    }
    case LT_S_FUSE: return fuse(&s);
    case LT_S_VECTORIZE: return mark(&s, LT_LOOP_VECTORIZED, 0);
    case LT_S_UNROLL: return mark(&s, LT_LOOP_UNROLLED, step->factor);
    case LT_S_PARALLEL: return mark(&s, LT_LOOP_PARALLEL, step->factor);
    case LT_S_BIND:
        if (step->factor != 0 && step->factor != 1)
            return serr(&s, "bind kind %lld must be 0 (block) or 1 (thread)", (long long)step->factor);
        return mark(&s, step->factor ? LT_LOOP_GPU_THREAD : LT_LOOP_GPU_BLOCK, step->factor2);
    case LT_S_CACHE: return cache(&s);
    case LT_S_MICROKERNEL: return microkernel(&s);
    case LT_S_ROWREDUCE: return lt_sched_rowreduce_(ctx, k, step);
    case LT_S_PEEL:
        LT_TRY(find(&s, step->loop, &a));
        return peel(&s, a, step->factor);
    case LT_S_COUNT: break;
    }
    return lt_error(ctx, LT_ERR_INVALID, "schedule step of unknown kind %d on kernel %s", (int)step->kind, k->name);
}

lt_status lt_sched_apply_all(lt_ctx *ctx, lt_kernel *k, const lt_schedule *s) {
    for (int i = 0; i < s->n && i < (int)(sizeof s->steps / sizeof s->steps[0]); i++) LT_TRY(lt_sched_apply(ctx, k, &s->steps[i]));
    return LT_OK;
}

/* ---- text format ---- */

static const char axis_names[] = "xyz";

void lt_sstep_format(const lt_sstep *s, char *buf, size_t n) {
    if (!n) return;
    const char *kw = lt_sstep_kind_name(s->kind);
    long long f = (long long)s->factor, f2 = (long long)s->factor2;
    switch (s->kind) {
    case LT_S_SPLIT:
    case LT_S_PEEL:
    case LT_S_UNROLL: snprintf(buf, n, "%s %s %lld", kw, s->loop, f); break;
    case LT_S_REORDER:
    case LT_S_FUSE: snprintf(buf, n, "%s %s %s", kw, s->loop, s->loop2); break;
    case LT_S_TILE: snprintf(buf, n, "%s %s %s %lld %lld", kw, s->loop, s->loop2, f, f2); break;
    case LT_S_PARALLEL:
        if (f > 0) {
            snprintf(buf, n, "%s %s %lld", kw, s->loop, f);
            break;
        }
        /* fall through */
    case LT_S_VECTORIZE: snprintf(buf, n, "%s %s", kw, s->loop); break;
    case LT_S_BIND:
        if (f2 >= 0 && f2 < 3) snprintf(buf, n, "%s %s %s %c", kw, s->loop, f ? "thread" : "block", axis_names[f2]);
        else snprintf(buf, n, "%s %s %s %lld", kw, s->loop, f ? "thread" : "block", f2);
        break;
    case LT_S_CACHE: snprintf(buf, n, "%s %s %s %s", kw, s->loop, s->loop2, f ? "shared" : "local"); break;
    case LT_S_MICROKERNEL: snprintf(buf, n, "%s %s %s", kw, s->loop, s->name); break;
    case LT_S_ROWREDUCE: snprintf(buf, n, "%s %s %lld %lld", kw, s->loop, f, f2); break;
    default: snprintf(buf, n, "? kind %d", (int)s->kind); break;
    }
}

static bool parse_int(const char *w, int64_t *out) {
    char *end;
    if (!*w) return false;
    errno = 0;
    long long v = strtoll(w, &end, 10);
    if (*end || errno == ERANGE) return false; /* out of range: never clamped to INT64_MAX */
    *out = v;
    return true;
}

static bool copy_word(char dst[64], const char *w) {
    size_t n = strlen(w);
    if (n >= 64) return false;
    memcpy(dst, w, n + 1);
    return true;
}

lt_status lt_sstep_parse(lt_ctx *ctx, const char *line, lt_sstep *out) {
    char tmp[512], *words[8], *save = NULL;
    int nw = 0;
    if (strlen(line) >= sizeof tmp) return lt_error(ctx, LT_ERR_INVALID, "schedule step line too long: '%.80s...'", line);
    strcpy(tmp, line);
    for (char *w = strtok_r(tmp, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
        if (nw == 8) return lt_error(ctx, LT_ERR_INVALID, "schedule step '%s': too many words", line);
        words[nw++] = w;
    }
    if (!nw) return lt_error(ctx, LT_ERR_INVALID, "empty schedule step");
    lt_sstep s;
    memset(&s, 0, sizeof s);
    int kind = -1;
    for (int i = 0; i < LT_S_COUNT; i++)
        if (!strcmp(words[0], step_names[i])) kind = i;
    if (kind < 0) return lt_error(ctx, LT_ERR_INVALID, "schedule step '%s': unknown step '%s'", line, words[0]);
    s.kind = (lt_sstep_kind)kind;
    static const int want[LT_S_COUNT] = {3, 3, 5, 3, 2, 3, 2, 4, 4, 3, 4, 3};
    if (nw != want[kind] && !(kind == LT_S_PARALLEL && nw == 3)) /* parallel L [MIN_WORK] */
        return lt_error(ctx, LT_ERR_INVALID, "schedule step '%s': '%s' takes %d words, got %d", line, words[0], want[kind] - 1,
                        nw - 1);
    bool ok = copy_word(s.loop, words[1]);
    switch (s.kind) {
    case LT_S_SPLIT:
    case LT_S_PEEL:
    case LT_S_UNROLL: ok &= parse_int(words[2], &s.factor); break;
    case LT_S_REORDER:
    case LT_S_FUSE: ok &= copy_word(s.loop2, words[2]); break;
    case LT_S_TILE: ok &= copy_word(s.loop2, words[2]) && parse_int(words[3], &s.factor) && parse_int(words[4], &s.factor2); break;
    case LT_S_BIND:
        if (!strcmp(words[2], "block")) s.factor = 0;
        else if (!strcmp(words[2], "thread")) s.factor = 1;
        else ok = false;
        if (strlen(words[3]) == 1 && strchr(axis_names, words[3][0])) s.factor2 = strchr(axis_names, words[3][0]) - axis_names;
        else ok &= parse_int(words[3], &s.factor2);
        break;
    case LT_S_CACHE:
        ok &= copy_word(s.loop2, words[2]);
        if (!strcmp(words[3], "local")) s.factor = 0;
        else if (!strcmp(words[3], "shared")) s.factor = 1;
        else ok = false;
        break;
    case LT_S_MICROKERNEL: ok &= copy_word(s.name, words[2]); break;
    case LT_S_PARALLEL:
        if (nw == 3) ok &= parse_int(words[2], &s.factor) && s.factor >= 0;
        break;
    case LT_S_ROWREDUCE: ok &= parse_int(words[2], &s.factor) && parse_int(words[3], &s.factor2); break;
    default: break;
    }
    if (!ok) return lt_error(ctx, LT_ERR_INVALID, "schedule step '%s': bad argument (names < 64 chars, integers, block|thread, x|y|z, local|shared)", line);
    *out = s;
    return LT_OK;
}
