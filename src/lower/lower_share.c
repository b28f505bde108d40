/* lower_share.c — turn shared expression nodes into LET variables (lt_lower_share).
 *
 * The expression hooks build DAGs: an input read once and used several times (Clip's x in both
 * selects, Gelu's x three times, an epilogue value read by two nodes) is one node with several
 * parents. Printed or emitted as a tree, a chain of such ops grows exponentially. This pass walks
 * each statement's expressions, and every non-leaf expression node reached more than once by
 * pointer becomes `let tN = ...` placed just before the statement, in dependency order, with its
 * uses replaced by the variable; so does a LOAD in an arm of a SELECT (a conditional load in C,
 * which compilers rarely vectorize). Hoisting is safe because lowered expressions never trap or read
 * out of bounds when evaluated unconditionally (indices are clamped, integer divisors guarded).
 * Statements are rebuilt only where something changed (the same pointer otherwise).
 */
#include "lower_impl.h"

#include <string.h>

typedef struct share_map {
    const lt_lnode **keys;
    int *count;
    lt_lnode **repl;
    int cap, n;
    bool oom;
} share_map;

static size_t hash_ptr(const void *p) {
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= 0xed5ad4bbu;
    x ^= x >> 11;
    return (size_t)x;
}

static int find_slot(const share_map *m, const lt_lnode *k) {
    size_t mask = (size_t)m->cap - 1, i = hash_ptr(k) & mask;
    while (m->keys[i] && m->keys[i] != k) i = (i + 1) & mask;
    return (int)i;
}

static bool grow(lt_arena *a, share_map *m) {
    int nc = m->cap ? m->cap * 2 : 256;
    share_map nm = {lt_arena_alloc(a, sizeof(lt_lnode *) * (size_t)nc), lt_arena_alloc(a, sizeof(int) * (size_t)nc),
                    lt_arena_alloc(a, sizeof(lt_lnode *) * (size_t)nc), nc, m->n, false};
    if (!nm.keys || !nm.count || !nm.repl) return false;
    for (int i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            int j = find_slot(&nm, m->keys[i]);
            nm.keys[j] = m->keys[i], nm.count[j] = m->count[i], nm.repl[j] = m->repl[i];
        }
    *m = nm;
    return true;
}

/* Count references; descend into a node only on its first visit. */
static void count_refs(lt_arena *a, share_map *m, const lt_lnode *e) {
    if (!e || m->oom) return;
    if ((m->n + 1) * 2 > m->cap && !grow(a, m)) {
        m->oom = true;
        return;
    }
    int i = find_slot(m, e);
    if (m->keys[i]) {
        m->count[i]++;
        return;
    }
    m->keys[i] = e, m->count[i] = 1, m->repl[i] = NULL, m->n++;
    for (int k = 0; k < e->n; k++) count_refs(a, m, e->kids[k]);
    /* a load in an arm of a select is hoisted too: C's `c ? x[i] : y` reads x only when c holds, a
     * conditional load compilers rarely vectorize (masked attention scores: Where(mask, s, -inf));
     * a loaded value is a blend of two vectors */
    if (e->kind == LT_L_SELECT) {
        const lt_lnode *arms[2] = {lt_lsel_then(e), lt_lsel_else(e)};
        for (int k = 0; k < 2; k++)
            if (arms[k] && arms[k]->kind == LT_L_LOAD) {
                int j = find_slot(m, arms[k]);
                if (m->keys[j] == arms[k]) m->count[j]++;
            }
    }
}

static bool is_leaf(const lt_lnode *e) {
    return e->kind == LT_L_INT || e->kind == LT_L_FLOAT || e->kind == LT_L_VAR || e->kind == LT_L_ADDR;
}

typedef struct lets {
    lt_lnode **items;
    int n, cap;
} lets;

static lt_lnode *rebuild(lt_lctx *lc, share_map *m, lets *ls, lt_lnode *e) {
    if (!e) return NULL;
    int slot = find_slot(m, e);
    if (m->keys[slot] && m->repl[slot]) return m->repl[slot];
    lt_lnode *kids[16], **kp = kids;
    if (e->n > 16 && !(kp = lt_arena_alloc(lc->arena, sizeof(lt_lnode *) * (size_t)e->n))) return NULL;
    bool changed = false;
    for (int k = 0; k < e->n; k++) {
        if (!(kp[k] = rebuild(lc, m, ls, e->kids[k]))) return NULL;
        changed |= kp[k] != e->kids[k];
    }
    lt_lnode *r = changed ? lt_l_with_kids(lc->k, e, kp) : e;
    if (!r) return NULL;
    if (m->keys[slot] && m->count[slot] > 1 && !is_leaf(e) && e->dtype != LT_UNDEFINED) {
        lt_lvar *t = lt_kernel_var(lc->k, "t", e->dtype);
        if (!t) return NULL;
        if (ls->n == ls->cap) {
            int nc = ls->cap ? ls->cap * 2 : 8;
            lt_lnode **ni = lt_arena_alloc(lc->arena, sizeof(lt_lnode *) * (size_t)nc);
            if (!ni) return NULL;
            if (ls->n) memcpy(ni, ls->items, sizeof(lt_lnode *) * (size_t)ls->n);
            ls->items = ni, ls->cap = nc;
        }
        if (!(ls->items[ls->n++] = lt_l_let(lc->k, t, r))) return NULL;
        r = lt_l_var(lc->k, t);
    }
    m->repl[slot] = r;
    return r;
}

/* One statement with expression kids (STORE, LET, ASSIGN, EVAL, IF condition). */
static lt_lnode *share_stmt(lt_lctx *lc, lt_lnode *st, int first_expr, int n_expr, bool *err) {
    share_map m = {0};
    for (int k = first_expr; k < first_expr + n_expr; k++) count_refs(lc->arena, &m, st->kids[k]);
    if (m.oom) {
        *err = true;
        return st;
    }
    bool shared = false;
    for (int i = 0; i < m.cap && !shared; i++)
        if (m.keys[i] && m.count[i] > 1 && !is_leaf(m.keys[i]) && m.keys[i]->dtype != LT_UNDEFINED) shared = true;
    if (!shared) return st;
    lets ls = {0};
    lt_lnode *kids[16], **kp = kids;
    if (st->n > 16 && !(kp = lt_arena_alloc(lc->arena, sizeof(lt_lnode *) * (size_t)st->n))) {
        *err = true;
        return st;
    }
    for (int k = 0; k < st->n; k++) {
        kp[k] = k >= first_expr && k < first_expr + n_expr ? rebuild(lc, &m, &ls, st->kids[k]) : st->kids[k];
        if (!kp[k]) {
            *err = true;
            return st;
        }
    }
    lt_lnode *ns = lt_l_with_kids(lc->k, st, kp);
    if (!ns || !ls.n) {
        if (!ns) *err = true;
        return ns ? ns : st;
    }
    lt_lnode **all = lt_arena_alloc(lc->arena, sizeof(lt_lnode *) * (size_t)(ls.n + 1));
    if (!all) {
        *err = true;
        return st;
    }
    memcpy(all, ls.items, sizeof(lt_lnode *) * (size_t)ls.n);
    all[ls.n] = ns;
    lt_lnode *seq = lt_l_seq(lc->k, ls.n + 1, all);
    if (!seq) *err = true;
    return seq ? seq : st;
}

static lt_lnode *share_rec(lt_lctx *lc, lt_lnode *st, bool *err) {
    if (!st || *err) return st;
    switch (st->kind) {
    case LT_L_STORE: return share_stmt(lc, st, 0, 2, err);
    case LT_L_LET: case LT_L_ASSIGN: case LT_L_EVAL: return share_stmt(lc, st, 0, 1, err);
    case LT_L_SEQ: case LT_L_FOR: case LT_L_IF: case LT_L_ALLOC: {
        /* FOR: kids 0, 1 are bounds (left alone), 2 the body; IF: kid 0 the condition */
        int from = st->kind == LT_L_FOR ? 2 : st->kind == LT_L_IF ? 1 : 0;
        lt_lnode *kids[64], **kp = kids;
        if (st->n > 64 && !(kp = lt_arena_alloc(lc->arena, sizeof(lt_lnode *) * (size_t)st->n))) {
            *err = true;
            return st;
        }
        bool changed = false;
        for (int k = 0; k < st->n; k++) {
            kp[k] = k >= from ? share_rec(lc, st->kids[k], err) : st->kids[k];
            changed |= kp[k] != st->kids[k];
        }
        if (!changed) return st;
        lt_lnode *r = lt_l_with_kids(lc->k, st, kp);
        if (!r) *err = true;
        return r ? r : st;
    }
    default: return st;
    }
}

lt_status lt_lower_share(lt_lctx *lc, lt_lnode *body, lt_lnode **out) {
    bool err = false;
    lt_lnode *r = share_rec(lc, body, &err);
    if (err) return lt_lower_nomem(lc);
    *out = r;
    return LT_OK;
}
