/* simplify.c — lt_lsimplify: the Loop IR expression and statement simplifier (a post-order
 * lt_lmutate callback).
 *
 * Expressions: constant folding (int64 index math checked for overflow, float/double arithmetic,
 * comparisons, casts, selects); identities (x*1, x/1, x-0 for every type; x+0, x*0, x%1 for
 * integers; min/max(x, x)); integer sums are put in a canonical linear form (terms in order of
 * first appearance, like terms merged, constants folded and moved last, (x/c)*c + x%c = x), which
 * also re-associates (x*c1)*c2 and (x+c1)+c2 and distributes constants over sums; (c*x)/c = x.
 * Statements: FOR loops of extent 1 are replaced by their body with the variable substituted by the
 * min, loops of extent <= 0 and empty bodies vanish, IF on a constant condition keeps one branch,
 * nested SEQs are flattened and empty ones dropped.
 * Integer division and modulo follow C (truncation), as in the generated code.
 * Invariant: returns the same pointer when nothing changed; NULL only on out-of-memory.
 */
#include "loop.h"

#include <math.h>
#include <string.h>

static bool is_int(const lt_lnode *n, int64_t v) { return n->kind == LT_L_INT && n->ival == v; }
static bool is_float(const lt_lnode *n, double v) { return n->kind == LT_L_FLOAT && n->fval == v; }

/* v representable in integer dtype dt (BOOL: 0/1). */
static bool int_fits(lt_dtype dt, int64_t v) {
    switch (dt) {
    case LT_INT64: return true;
    case LT_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case LT_INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case LT_INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case LT_UINT8: return v >= 0 && v <= UINT8_MAX;
    case LT_UINT16: return v >= 0 && v <= UINT16_MAX;
    case LT_UINT32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case LT_UINT64: return v >= 0;
    case LT_BOOL: return v == 0 || v == 1;
    default: return false;
    }
}

static lt_lnode *mk_int(lt_kernel *k, lt_dtype dt, int64_t v) {
    lt_lnode *x = lt_l_int(k, v);
    if (x) x->dtype = dt;
    return x;
}

static lt_lnode *mk_float(lt_kernel *k, lt_dtype dt, double v) {
    return lt_l_float(k, dt, dt == LT_FLOAT ? (double)(float)v : v);
}

/* ---- constant folding ---- */

/* Fold op(a, b) of two INT immediates; false when it does not fold (overflow, division by 0). */
static bool fold_int(int op, lt_dtype dt, int64_t a, int64_t b, int64_t *r) {
    switch (op) {
    case LT_LOP_ADD: return lt_add_i64(a, b, r);
    case LT_LOP_SUB: return b != INT64_MIN && lt_add_i64(a, -b, r);
    case LT_LOP_MUL: return lt_mul_i64(a, b, r);
    case LT_LOP_DIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        *r = a / b;
        return true;
    case LT_LOP_MOD:
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        *r = a % b;
        return true;
    case LT_LOP_MIN: *r = a < b ? a : b; return true;
    case LT_LOP_MAX: *r = a > b ? a : b; return true;
    case LT_LOP_AND: *r = a && b; return true;
    case LT_LOP_OR: *r = a || b; return true;
    case LT_LOP_XOR: *r = !a != !b; return true;
    case LT_LOP_BITAND: *r = a & b; return true;
    case LT_LOP_BITOR: *r = a | b; return true;
    case LT_LOP_BITXOR: *r = a ^ b; return true;
    case LT_LOP_LT: *r = a < b; return true;
    case LT_LOP_LE: *r = a <= b; return true;
    case LT_LOP_GT: *r = a > b; return true;
    case LT_LOP_GE: *r = a >= b; return true;
    case LT_LOP_EQ: *r = a == b; return true;
    case LT_LOP_NE: *r = a != b; return true;
    default: (void)dt; return false;
    }
}

static bool fold_float(int op, double a, double b, double *r, bool *is_bool) {
    *is_bool = false;
    switch (op) {
    case LT_LOP_ADD: *r = a + b; return true;
    case LT_LOP_SUB: *r = a - b; return true;
    case LT_LOP_MUL: *r = a * b; return true;
    case LT_LOP_DIV: *r = a / b; return true;
    case LT_LOP_MIN: *r = fmin(a, b); return !isnan(a) && !isnan(b);
    case LT_LOP_MAX: *r = fmax(a, b); return !isnan(a) && !isnan(b);
    default: break;
    }
    *is_bool = true;
    switch (op) {
    case LT_LOP_LT: *r = a < b; return true;
    case LT_LOP_LE: *r = a <= b; return true;
    case LT_LOP_GT: *r = a > b; return true;
    case LT_LOP_GE: *r = a >= b; return true;
    case LT_LOP_EQ: *r = a == b; return true;
    case LT_LOP_NE: *r = a != b; return true;
    default: return false;
    }
}

/* ---- linear integer sums ---- */

#define LIN_MAX 32
typedef struct lin {
    int n;
    lt_lnode *term[LIN_MAX];
    int64_t coeff[LIN_MAX];
    int64_t c;
    int visits; /* bounded: a sum over a deeply shared DAG is left alone */
    bool ok;
} lin;

static void lin_add_term(lin *l, lt_lnode *t, int64_t coeff) {
    for (int i = 0; i < l->n; i++)
        if (lt_lequal(l->term[i], t)) {
            if (!lt_add_i64(l->coeff[i], coeff, &l->coeff[i])) l->ok = false;
            return;
        }
    if (l->n == LIN_MAX) {
        l->ok = false;
        return;
    }
    l->term[l->n] = t;
    l->coeff[l->n++] = coeff;
}

static void lin_collect(lin *l, lt_lnode *n, int64_t scale) {
    int64_t c, s2;
    if (++l->visits > 512) l->ok = false;
    if (!l->ok) return;
    if (n->kind == LT_L_INT) {
        if (!lt_mul_i64(n->ival, scale, &c) || !lt_add_i64(l->c, c, &l->c)) l->ok = false;
        return;
    }
    if (n->kind == LT_L_BINARY && n->dtype == LT_INT64) {
        switch (n->op) {
        case LT_LOP_ADD:
            lin_collect(l, lt_lexpr_a(n), scale);
            lin_collect(l, lt_lexpr_b(n), scale);
            return;
        case LT_LOP_SUB:
            lin_collect(l, lt_lexpr_a(n), scale);
            if (scale == INT64_MIN) l->ok = false;
            else lin_collect(l, lt_lexpr_b(n), -scale);
            return;
        case LT_LOP_MUL:
            for (int side = 0; side < 2; side++)
                if (lt_lis_int(n->kids[side], &c)) {
                    if (!lt_mul_i64(scale, c, &s2)) l->ok = false;
                    else lin_collect(l, n->kids[1 - side], s2);
                    return;
                }
            break;
        default: break;
        }
    }
    if (n->kind == LT_L_UNARY && n->op == LT_LOP_NEG && n->dtype == LT_INT64 && scale != INT64_MIN) {
        lin_collect(l, lt_lexpr_a(n), -scale);
        return;
    }
    lin_add_term(l, n, scale);
}

/* (x/c)*(c*m) + (x%c)*m -> x*m, for c > 0 (C: (x/c)*c + x%c == x). */
static void lin_merge_divmod(lin *l) {
    for (int i = 0; i < l->n; i++) {
        lt_lnode *d = l->term[i];
        int64_t c;
        if (d->kind != LT_L_BINARY || d->op != LT_LOP_DIV || !lt_lis_int(lt_lexpr_b(d), &c) || c <= 0) continue;
        for (int j = 0; j < l->n; j++) {
            lt_lnode *m = l->term[j];
            int64_t cm;
            if (m->kind != LT_L_BINARY || m->op != LT_LOP_MOD || !is_int(lt_lexpr_b(m), c) ||
                !lt_lequal(lt_lexpr_a(m), lt_lexpr_a(d)) || !l->coeff[j] || !lt_mul_i64(l->coeff[j], c, &cm) ||
                l->coeff[i] != cm)
                continue;
            int64_t m_coeff = l->coeff[j];
            l->coeff[i] = l->coeff[j] = 0;
            lin_add_term(l, lt_lexpr_a(d), m_coeff);
            break;
        }
    }
}

static lt_lnode *lin_build(lt_kernel *k, const lin *l) {
    lt_lnode *acc = NULL;
    for (int i = 0; i < l->n; i++) {
        int64_t c = l->coeff[i];
        if (!c) continue;
        bool sub = acc && c < 0 && c != INT64_MIN;
        int64_t mag = sub ? -c : c;
        lt_lnode *t = mag == 1 ? l->term[i] : lt_l_mul(k, l->term[i], lt_l_int(k, mag));
        if (!t) return NULL;
        acc = !acc ? t : lt_l_binary(k, sub ? LT_LOP_SUB : LT_LOP_ADD, acc, t);
        if (!acc) return NULL;
    }
    if (!acc) return lt_l_int(k, l->c);
    if (l->c > 0) return lt_l_add(k, acc, lt_l_int(k, l->c));
    if (l->c < 0 && l->c != INT64_MIN) return lt_l_binary(k, LT_LOP_SUB, acc, lt_l_int(k, -l->c));
    if (l->c < 0) return lt_l_add(k, acc, lt_l_int(k, l->c));
    return acc;
}

static lt_lnode *canon_sum(lt_kernel *k, lt_lnode *n) {
    lin l = {.ok = true};
    lin_collect(&l, n, 1);
    if (!l.ok) return n;
    lin_merge_divmod(&l);
    lt_lnode *r = lin_build(k, &l);
    if (!r) return NULL;
    return lt_lequal(r, n) ? n : r;
}

/* (sum of multiples of c) / c and % c: exact for truncating division. */
static lt_lnode *divmod_exact(lt_kernel *k, lt_lnode *n) {
    int64_t c;
    if (n->dtype != LT_INT64 || !lt_lis_int(lt_lexpr_b(n), &c) || c <= 0) return n;
    lin l = {.ok = true};
    lin_collect(&l, lt_lexpr_a(n), 1);
    if (!l.ok || l.c % c) return n;
    for (int i = 0; i < l.n; i++)
        if (l.coeff[i] % c) return n;
    if (n->op == LT_LOP_MOD) return lt_l_int(k, 0);
    for (int i = 0; i < l.n; i++) l.coeff[i] /= c;
    l.c /= c;
    return lin_build(k, &l);
}

/* ---- expressions ---- */

static bool commutative(int op) {
    switch (op) {
    case LT_LOP_ADD: case LT_LOP_MUL: case LT_LOP_MIN: case LT_LOP_MAX: case LT_LOP_AND: case LT_LOP_OR:
    case LT_LOP_XOR: case LT_LOP_BITAND: case LT_LOP_BITOR: case LT_LOP_BITXOR: case LT_LOP_EQ: case LT_LOP_NE:
        return true;
    default: return false;
    }
}

static lt_lnode *simp_binary(lt_kernel *k, lt_lnode *n) {
    lt_lnode *a = lt_lexpr_a(n), *b = lt_lexpr_b(n);
    lt_dtype dt = a->dtype; /* operand type */
    int op = n->op;
    if (a->dtype != b->dtype || n->dtype == LT_UNDEFINED || n->lanes != 1) return n;
    bool ints = lt_dtype_is_int(dt) || dt == LT_BOOL, floats = dt == LT_FLOAT || dt == LT_DOUBLE;
    /* constants */
    if (a->kind == LT_L_INT && b->kind == LT_L_INT && ints) {
        int64_t r;
        if (fold_int(op, dt, a->ival, b->ival, &r) && int_fits(n->dtype, r)) return mk_int(k, n->dtype, r);
    }
    if (a->kind == LT_L_FLOAT && b->kind == LT_L_FLOAT && floats) {
        double r;
        bool to_bool;
        if (fold_float(op, a->fval, b->fval, &r, &to_bool))
            return to_bool ? mk_int(k, LT_BOOL, (int64_t)r) : mk_float(k, dt, r);
    }
    /* constants to the right */
    if (commutative(op) && (a->kind == LT_L_INT || a->kind == LT_L_FLOAT) && b->kind != LT_L_INT && b->kind != LT_L_FLOAT) {
        lt_lnode *kids[2] = {b, a};
        return simp_binary(k, lt_l_with_kids(k, n, kids));
    }
    /* identities */
    switch (op) {
    case LT_LOP_ADD:
        if (ints && is_int(b, 0)) return a;
        break;
    case LT_LOP_SUB:
        if ((ints && is_int(b, 0)) || (floats && is_float(b, 0))) return a;
        break;
    case LT_LOP_MUL:
        if ((ints && is_int(b, 1)) || (floats && is_float(b, 1))) return a;
        if (ints && is_int(b, 0)) return b;
        break;
    case LT_LOP_DIV:
        if ((ints && is_int(b, 1)) || (floats && is_float(b, 1))) return a;
        break;
    case LT_LOP_MOD:
        if (ints && (is_int(b, 1) || is_int(b, -1))) return mk_int(k, n->dtype, 0);
        break;
    case LT_LOP_MIN:
    case LT_LOP_MAX:
        if (lt_lequal(a, b)) return a;
        if (ints && a->kind == LT_L_BINARY && a->op == op && lt_lexpr_b(a)->kind == LT_L_INT && b->kind == LT_L_INT) {
            /* min(min(x, c1), c2) -> min(x, min(c1, c2)) */
            int64_t c = op == LT_LOP_MIN ? (lt_lexpr_b(a)->ival < b->ival ? lt_lexpr_b(a)->ival : b->ival)
                                         : (lt_lexpr_b(a)->ival > b->ival ? lt_lexpr_b(a)->ival : b->ival);
            return lt_l_binary(k, op, lt_lexpr_a(a), mk_int(k, dt, c));
        }
        break;
    case LT_LOP_AND:
        if (dt == LT_BOOL && is_int(b, 1)) return a;
        if (dt == LT_BOOL && is_int(b, 0)) return b;
        break;
    case LT_LOP_OR:
        if (dt == LT_BOOL && is_int(b, 0)) return a;
        if (dt == LT_BOOL && is_int(b, 1)) return b;
        break;
    default: break;
    }
    if (dt == LT_INT64 && (op == LT_LOP_ADD || op == LT_LOP_SUB || (op == LT_LOP_MUL && b->kind == LT_L_INT)))
        return canon_sum(k, n);
    if (op == LT_LOP_DIV || op == LT_LOP_MOD) return divmod_exact(k, n);
    return n;
}

static lt_lnode *simp_unary(lt_kernel *k, lt_lnode *n) {
    lt_lnode *a = lt_lexpr_a(n);
    if (a->kind == LT_L_INT && a->dtype == LT_INT64 && n->op == LT_LOP_NEG && a->ival != INT64_MIN)
        return lt_l_int(k, -a->ival);
    if (a->kind == LT_L_FLOAT && n->op == LT_LOP_NEG) return mk_float(k, a->dtype, -a->fval);
    if (a->kind == LT_L_INT && a->dtype == LT_BOOL && n->op == LT_LOP_NOT) return mk_int(k, LT_BOOL, !a->ival);
    if (a->kind == LT_L_UNARY && a->op == n->op && (n->op == LT_LOP_NEG || n->op == LT_LOP_NOT)) return lt_lexpr_a(a);
    return n;
}

static lt_lnode *simp_cast(lt_kernel *k, lt_lnode *n) {
    lt_lnode *a = lt_lexpr_a(n);
    if (a->dtype == n->dtype) return a;
    if (a->kind == LT_L_INT && int_fits(n->dtype, a->ival)) return mk_int(k, n->dtype, a->ival);
    if (a->kind == LT_L_INT && (n->dtype == LT_DOUBLE || n->dtype == LT_FLOAT))
        return mk_float(k, n->dtype, (double)a->ival);
    if (a->kind == LT_L_FLOAT && (a->dtype == LT_FLOAT || a->dtype == LT_DOUBLE) &&
        (n->dtype == LT_DOUBLE || n->dtype == LT_FLOAT))
        return mk_float(k, n->dtype, a->fval);
    return n;
}

/* ---- statements ---- */

static lt_lnode *simp_seq(lt_kernel *k, lt_lnode *n) {
    int count = 0;
    bool change = false;
    for (int i = 0; i < n->n; i++) {
        lt_lnode *c = n->kids[i];
        if (c->kind == LT_L_SEQ) {
            count += c->n;
            change = true;
        } else count++;
    }
    if (!change && n->n != 1) return n;
    if (count == 1) { /* a SEQ of one statement is that statement */
        for (int i = 0; i < n->n; i++) {
            lt_lnode *c = n->kids[i];
            if (c->kind != LT_L_SEQ) return c;
            if (c->n) return lt_lseq_stmt(c, 0);
        }
    }
    lt_lnode **kids = lt_arena_alloc(k->arena, (size_t)(count ? count : 1) * sizeof *kids);
    if (!kids) return NULL;
    int m = 0;
    for (int i = 0; i < n->n; i++) {
        lt_lnode *c = n->kids[i];
        if (c->kind == LT_L_SEQ) for (int j = 0; j < c->n; j++) kids[m++] = c->kids[j];
        else kids[m++] = c;
    }
    return lt_l_seq(k, m, kids);
}

static lt_lnode *simp(lt_kernel *k, lt_lnode *n, void *user) {
    (void)user;
    int64_t v;
    switch (n->kind) {
    case LT_L_BINARY: return simp_binary(k, n);
    case LT_L_UNARY: return simp_unary(k, n);
    case LT_L_CAST: return simp_cast(k, n);
    case LT_L_SELECT:
        if (lt_lis_int(lt_lsel_cond(n), &v)) return v ? lt_lsel_then(n) : lt_lsel_else(n);
        if (lt_lequal(lt_lsel_then(n), lt_lsel_else(n))) return lt_lsel_then(n);
        return n;
    case LT_L_SEQ: return simp_seq(k, n);
    case LT_L_FOR:
        if (lt_lis_empty(lt_lfor_body(n))) return lt_lfor_body(n);
        if (k->shape_generic && lt_lis_int(lt_lfor_extent(n), &v) && v <= 1) return n; /* the shape's code for every extent */
        if (lt_lis_int(lt_lfor_extent(n), &v) && v <= 0) return lt_l_empty(k);
        if (lt_lis_int(lt_lfor_extent(n), &v) && v == 1) {
            lt_lnode *body = lt_lsubstitute(k, lt_lfor_body(n), n->var, lt_lfor_min(n));
            return body ? lt_lsimplify(k, body) : NULL;
        }
        return n;
    case LT_L_IF:
        if (lt_lis_int(lt_lif_cond(n), &v)) return v ? lt_lif_then(n) : n->n > 2 ? lt_lif_else(n) : lt_l_empty(k);
        if (n->n > 2 && lt_lis_empty(lt_lif_else(n))) return lt_l_if(k, lt_lif_cond(n), lt_lif_then(n), NULL);
        if (n->n == 2 && lt_lis_empty(lt_lif_then(n))) return lt_lif_then(n);
        return n;
    case LT_L_ALLOC: return lt_lis_empty(lt_lalloc_body(n)) ? lt_lalloc_body(n) : n;
    default: return n;
    }
}

lt_lnode *lt_lsimplify(lt_kernel *k, lt_lnode *n) { return lt_lmutate(k, n, simp, NULL); }

/* Statement nodes: their expression kids simplified, the statements themselves left as they are. */
static lt_lnode *simp_exprs(lt_kernel *k, lt_lnode *n, void *user) {
    (void)user;
    if (!lt_lnode_info_get(n->kind)->is_stmt || !n->n) return n;
    lt_lnode *small[16], **kids = small;
    if (n->n > 16 && !(kids = lt_arena_alloc(k->arena, (size_t)n->n * sizeof *kids))) return NULL;
    bool changed = false;
    for (int i = 0; i < n->n; i++) {
        kids[i] = n->kids[i];
        if (!lt_lnode_info_get(kids[i]->kind)->is_stmt && !(kids[i] = lt_lsimplify(k, kids[i]))) return NULL;
        changed |= kids[i] != n->kids[i];
    }
    return changed ? lt_l_with_kids(k, n, kids) : n;
}

lt_lnode *lt_lsimplify_exprs(lt_kernel *k, lt_lnode *n) { return n ? lt_lmutate(k, n, simp_exprs, NULL) : NULL; }
