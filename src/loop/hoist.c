/* hoist.c — lt_lhoist: loop-invariant LETs moved out of serial loops.
 *
 * A LET at the top level of a serial or unrolled loop's body whose value reads no variable the loop
 * binds or changes (the loop's own, every LET, FOR and ASSIGN inside it that stays), no buffer, and
 * calls nothing, is computed once before the loop instead of at every iteration. Lowering puts index
 * arithmetic next to the load that needs it (lower_share.c's LETs: a flattened thread index split
 * into coordinates), which is inside a reduction's loop. With sizes known at compile time the C
 * compiler and NVRTC move it out themselves; a kernel of a model compiled for every shape divides by
 * run-time sizes, and the compilers keep a division inside a loop that may run zero times (division
 * by zero is undefined: it may not be executed speculatively), so a GEMM's k loop did four 64-bit
 * divisions per multiply-add.
 * An integer division or modulo anywhere in the loop whose operands are invariant likewise becomes a
 * new LET before the loop (innermost first, so `t / n % m` gives two).
 * Safe: lowered expressions never trap (divisors are guarded), a hoisted LET's variable is assigned
 * nowhere, and variable names are unique in a kernel, so its wider scope hides nothing. Loops other
 * than serial and unrolled ones (parallel, vectorized, GPU blocks and threads) keep their LETs: their
 * iterations are threads or lanes. Inner loops first, and a body's SEQ absorbs what its inner loops
 * hoisted, so a LET climbs as far out as it is invariant.
 * Invariant: returns the same pointer when nothing moved; NULL only on out-of-memory.
 */
#include "loop.h"

#include <string.h>

typedef struct hoist {
    lt_kernel *k;
    bool *bound;  /* by var id: bound or changed inside the loop being scanned */
    int n_bound;  /* its length: variables made since (the new LETs) are not bound */
    int *decls;   /* by var id: LETs declaring it in the kernel (one moves; two share a name in
                   * separate scopes, a peeled loop's copies, and stay) */
    bool *assigned; /* by var id: an ASSIGN in the kernel changes it (a LET of it stays) */
    int n_decls;  /* the length of both: the kernel's variables as it came */
    lt_lnode **lets; /* the division LETs made for the loop being scanned */
    int n_lets, cap_lets;
} hoist;

static bool mark_bound(const lt_lnode *n, void *user) {
    hoist *h = user;
    if ((n->kind == LT_L_FOR || n->kind == LT_L_LET || n->kind == LT_L_ASSIGN) && n->var && n->var->id < h->n_bound)
        h->bound[n->var->id] = true;
    return true;
}

static bool count_decl(const lt_lnode *n, void *user) {
    hoist *h = user;
    if (n->kind == LT_L_LET && n->var && n->var->id < h->n_decls) h->decls[n->var->id]++;
    if (n->kind == LT_L_ASSIGN && n->var && n->var->id < h->n_decls) h->assigned[n->var->id] = true;
    return true;
}

typedef struct reads {
    const hoist *h;
    bool variant;
} reads;

static bool check_read(const lt_lnode *n, void *user) {
    reads *r = user;
    if (r->variant) return false;
    if (n->kind == LT_L_LOAD || n->kind == LT_L_CALL || n->kind == LT_L_ADDR ||
        (n->kind == LT_L_VAR && n->var && n->var->id < r->h->n_bound && r->h->bound[n->var->id]))
        r->variant = true;
    return !r->variant;
}

static bool invariant(const hoist *h, const lt_lnode *e) {
    reads r = {h, false};
    lt_lwalk(e, check_read, &r);
    return !r.variant;
}

/* lt_lmutate callback: an invariant integer division or modulo becomes a new variable, its LET kept
 * for the loop's front. */
static lt_lnode *divide_out(lt_kernel *k, lt_lnode *n, void *user) {
    hoist *h = user;
    if (n->kind != LT_L_BINARY || (n->op != LT_LOP_DIV && n->op != LT_LOP_MOD) || n->lanes != 1 ||
        (n->dtype != LT_INT64 && n->dtype != LT_INT32) || !invariant(h, n))
        return n;
    if (h->n_lets == h->cap_lets) {
        int cap = h->cap_lets ? 2 * h->cap_lets : 8;
        lt_lnode **nl = lt_arena_alloc(k->arena, (size_t)cap * sizeof *nl);
        if (!nl) return NULL;
        if (h->n_lets) memcpy(nl, h->lets, (size_t)h->n_lets * sizeof *nl);
        h->lets = nl, h->cap_lets = cap;
    }
    lt_lvar *v = lt_kernel_var(k, "q", n->dtype);
    lt_lnode *let = v ? lt_l_let(k, v, n) : NULL;
    if (!let) return NULL;
    h->lets[h->n_lets++] = let;
    return lt_l_var(k, v);
}

static lt_lnode *rewrite(hoist *h, lt_lnode *n);

/* The statements of a SEQ rewritten, a SEQ a kid became (an inner loop with its hoisted LETs in
 * front) spliced in. */
static lt_lnode *rewrite_seq(hoist *h, lt_lnode *n) {
    int total = 0;
    bool changed = false;
    lt_lnode **kids = lt_arena_alloc(h->k->arena, ((size_t)n->n + 1) * sizeof *kids);
    if (!kids) return NULL;
    for (int i = 0; i < n->n; i++) {
        if (!(kids[i] = rewrite(h, n->kids[i]))) return NULL;
        changed |= kids[i] != n->kids[i];
        total += kids[i]->kind == LT_L_SEQ && kids[i] != n->kids[i] ? kids[i]->n : 1;
    }
    if (!changed) return n;
    lt_lnode **flat = lt_arena_alloc(h->k->arena, ((size_t)total + 1) * sizeof *flat);
    if (!flat) return NULL;
    int m = 0;
    for (int i = 0; i < n->n; i++) {
        if (kids[i]->kind == LT_L_SEQ && kids[i] != n->kids[i])
            for (int j = 0; j < kids[i]->n; j++) flat[m++] = kids[i]->kids[j];
        else
            flat[m++] = kids[i];
    }
    return lt_l_seq(h->k, m, flat);
}

/* A serial loop whose body was rewritten: SEQ(the LETs that move out..., the loop) or the loop. */
static lt_lnode *hoist_loop(hoist *h, lt_lnode *f) {
    lt_lnode *body = lt_lfor_body(f);
    if (body->kind != LT_L_SEQ || body->n == 0) return f;
    h->n_bound = h->k->n_vars;
    h->bound = lt_arena_alloc(h->k->arena, ((size_t)h->n_bound + 1) * sizeof *h->bound);
    if (!h->bound) return NULL;
    memset(h->bound, 0, ((size_t)h->n_bound + 1) * sizeof *h->bound);
    h->bound[f->var->id] = true;
    lt_lwalk(body, mark_bound, h);
    lt_lnode **out = lt_arena_alloc(h->k->arena, ((size_t)body->n + 1) * sizeof *out);
    lt_lnode **stay = lt_arena_alloc(h->k->arena, ((size_t)body->n + 1) * sizeof *stay);
    if (!out || !stay) return NULL;
    int n_out = 0, n_stay = 0;
    for (int i = 0; i < body->n; i++) {
        lt_lnode *s = body->kids[i];
        if (s->kind == LT_L_LET && s->var->id < h->n_decls && h->decls[s->var->id] == 1 && !h->assigned[s->var->id] &&
            invariant(h, s->kids[0])) {
            out[n_out++] = s;
            h->bound[s->var->id] = false; /* now outside: LETs after it may read it */
        } else {
            stay[n_stay++] = s;
        }
    }
    lt_lnode *rest = n_out ? lt_l_seq(h->k, n_stay, stay) : body;
    h->n_lets = 0;
    if (rest) rest = lt_lmutate(h->k, rest, divide_out, h);
    if (!rest) return NULL;
    if (!n_out && !h->n_lets) return f;
    lt_lnode **all = lt_arena_alloc(h->k->arena, ((size_t)n_out + (size_t)h->n_lets + 2) * sizeof *all);
    if (!all) return NULL;
    memcpy(all, out, (size_t)n_out * sizeof *all);
    if (h->n_lets) memcpy(all + n_out, h->lets, (size_t)h->n_lets * sizeof *all);
    lt_lnode *kids[3] = {f->kids[0], f->kids[1], rest};
    int n_all = n_out + h->n_lets;
    if (!(all[n_all++] = lt_l_with_kids(h->k, f, kids))) return NULL;
    return lt_l_seq(h->k, n_all, all);
}

static lt_lnode *rewrite(hoist *h, lt_lnode *n) {
    if (!n || !lt_lnode_info_get(n->kind)->is_stmt) return n;
    if (n->kind == LT_L_SEQ) return rewrite_seq(h, n);
    if (n->kind != LT_L_FOR && n->kind != LT_L_IF && n->kind != LT_L_ALLOC) return n;
    lt_lnode *kids[4];
    bool changed = false;
    for (int i = 0; i < n->n && i < 4; i++) {
        kids[i] = n->kids[i];
        bool stmt = (n->kind == LT_L_FOR && i == 2) || (n->kind == LT_L_IF && i > 0) || n->kind == LT_L_ALLOC;
        if (stmt && n->kids[i] && !(kids[i] = rewrite(h, n->kids[i]))) return NULL;
        changed |= kids[i] != n->kids[i];
    }
    lt_lnode *r = changed ? lt_l_with_kids(h->k, n, kids) : n;
    if (!r) return NULL;
    bool serial = r->kind == LT_L_FOR && (r->op == LT_LOOP_SERIAL || r->op == LT_LOOP_UNROLLED);
    return serial ? hoist_loop(h, r) : r;
}

lt_lnode *lt_lhoist(lt_kernel *k, lt_lnode *n) {
    if (!n || k->n_vars <= 0) return n;
    hoist h = {.k = k, .n_decls = k->n_vars};
    h.decls = lt_arena_alloc(k->arena, (size_t)k->n_vars * sizeof *h.decls);
    h.assigned = lt_arena_alloc(k->arena, (size_t)k->n_vars * sizeof *h.assigned);
    if (!h.decls || !h.assigned) return NULL;
    memset(h.decls, 0, (size_t)k->n_vars * sizeof *h.decls);
    memset(h.assigned, 0, (size_t)k->n_vars * sizeof *h.assigned);
    lt_lwalk(n, count_decl, &h);
    return rewrite(&h, n);
}
