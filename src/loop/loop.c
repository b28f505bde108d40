/* loop.c — the Loop IR core: kernels, variables and buffers, node builders with their type rules,
 * the node info table (generated from nodes.def), walking / mutation / substitution, structural
 * queries, integer bounds of index expressions, the verifier, the printer and the static cost.
 *
 * Invariants: nodes live in the kernel's arena and are never modified after construction (except
 * by their builder); children are never NULL (an IF without else has 2 kids); lt_lmutate returns the
 * same pointer for unchanged subtrees. Builders return NULL only on out-of-memory.
 * Entry points: see loop.h.
 */
#include "loop.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- tables ---- */

static const lt_lnode_info node_info[LT_L_COUNT] = {
#define LT_LNODE(name, cls, nkids, doc) [LT_L_##name] = {#name, LT_##cls##_IS_STMT, nkids, doc},
#define LT_EXPR_IS_STMT false
#define LT_STMT_IS_STMT true
#include "nodes.def"
#undef LT_EXPR_IS_STMT
#undef LT_STMT_IS_STMT
#undef LT_LNODE
};

const lt_lnode_info *lt_lnode_info_get(lt_lkind k) {
    static const lt_lnode_info bad = {"?", false, 0, "invalid node kind"};
    return (unsigned)k < LT_L_COUNT ? &node_info[k] : &bad;
}

static const char *const lop_names[] = {
    "neg",  "not",   "abs",  "exp",  "log",   "sqrt",  "rsqrt", "tanh",   "erf",   "sigmoid",
    "floor", "ceil", "round", "sin", "cos",   "tan",   "asin",  "acos",   "atan",  "sinh",
    "cosh", "asinh", "acosh", "atanh", "recip", "isnan", "isinf", "sign",
    "add",  "sub",   "mul",  "div",  "mod",   "fmod",  "min",   "max",    "pow",   "and",
    "or",   "xor",   "bitand", "bitor", "bitxor", "shl", "shr",  "lt",     "le",    "gt",
    "ge",   "eq",    "ne",
};
_Static_assert(sizeof lop_names / sizeof lop_names[0] == LT_LOP_COUNT, "lop_names out of date");

const char *lt_lop_name(lt_lop op) { return (unsigned)op < LT_LOP_COUNT ? lop_names[op] : "?"; }
bool lt_lop_is_binary(lt_lop op) { return op >= LT_LOP_ADD && op < LT_LOP_COUNT; }

static bool lop_is_compare(int op) { return op >= LT_LOP_LT && op <= LT_LOP_NE; }
static bool lop_is_logical(int op) {
    return op == LT_LOP_AND || op == LT_LOP_OR || op == LT_LOP_XOR || op == LT_LOP_NOT;
}

const char *lt_loop_kind_name(lt_loop_kind k) {
    switch (k) {
    case LT_LOOP_SERIAL: return "serial";
    case LT_LOOP_PARALLEL: return "parallel";
    case LT_LOOP_VECTORIZED: return "vectorized";
    case LT_LOOP_UNROLLED: return "unrolled";
    case LT_LOOP_GPU_BLOCK: return "gpu_block";
    case LT_LOOP_GPU_THREAD: return "gpu_thread";
    }
    return "?";
}

const char *lt_loop_role_name(lt_loop_role r) {
    static const char *const names[] = {
#define LT_X(n, s) s,
        LT_LOOP_ROLES(LT_X)
#undef LT_X
    };
    return (unsigned)r < LT_ROLE_COUNT ? names[r] : "?";
}

/* ---- kernels, variables, buffers ---- */

lt_kernel *lt_kernel_new(lt_arena *arena, const char *name) {
    lt_kernel *k = lt_arena_alloc(arena, sizeof *k);
    if (!k) return NULL;
    k->arena = arena;
    k->name = lt_arena_strdup(arena, name ? name : "kernel");
    return k->name ? k : NULL;
}

/* Grow an arena-allocated pointer array (the old block stays in the arena). */
static bool grow(lt_arena *a, void ***items, int *cap, int n) {
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : 16;
    void **p = lt_arena_alloc(a, (size_t)nc * sizeof *p);
    if (!p) return false;
    if (n) memcpy(p, *items, (size_t)n * sizeof *p);
    *items = p;
    *cap = nc;
    return true;
}

static bool name_taken(const lt_kernel *k, const char *s) {
    return lt_kernel_find_var(k, s) || lt_kernel_find_buf(k, s);
}

/* `name`, or `name_N` for the smallest N >= 1 that is not taken by a variable or buffer. */
static const char *unique_name(lt_kernel *k, const char *name) {
    if (!name || !*name) name = "t";
    if (!name_taken(k, name)) return lt_arena_strdup(k->arena, name);
    char tmp[160];
    for (int i = 1;; i++) {
        snprintf(tmp, sizeof tmp, "%.140s_%d", name, i);
        if (!name_taken(k, tmp)) return lt_arena_strdup(k->arena, tmp);
    }
}

lt_lvar *lt_kernel_var(lt_kernel *k, const char *name, lt_dtype dt) {
    if (!k) return NULL;
    if (!grow(k->arena, (void ***)&k->vars, &k->cap_vars, k->n_vars)) return NULL;
    lt_lvar *v = lt_arena_alloc(k->arena, sizeof *v);
    if (!v || !(v->name = unique_name(k, name))) return NULL;
    v->id = k->n_vars;
    v->dtype = dt;
    k->vars[k->n_vars++] = v;
    return v;
}

static lt_lbuf *new_buf(lt_kernel *k, const char *name, lt_dtype dt, int64_t size, lt_scope scope) {
    if (!k) return NULL;
    if (!grow(k->arena, (void ***)&k->bufs, &k->cap_bufs, k->n_bufs)) return NULL;
    lt_lbuf *b = lt_arena_alloc(k->arena, sizeof *b);
    if (!b || !(b->name = unique_name(k, name))) return NULL;
    b->id = k->n_bufs;
    b->dtype = dt;
    b->size = size;
    b->scope = scope;
    b->arg = -1;
    k->bufs[k->n_bufs++] = b;
    return b;
}

lt_lbuf *lt_kernel_arg(lt_kernel *k, const char *name, lt_dtype dt, int64_t size) {
    lt_lbuf *b = new_buf(k, name, dt, size, LT_SCOPE_GLOBAL);
    if (!b) return NULL;
    lt_lbuf **args = lt_arena_alloc(k->arena, (size_t)(k->n_args + 1) * sizeof *args);
    if (!args) return NULL;
    if (k->n_args) memcpy(args, k->args, (size_t)k->n_args * sizeof *args);
    b->arg = k->n_args;
    args[k->n_args++] = b;
    k->args = args;
    return b;
}

uint64_t lt_div_magic(int64_t d) { return d >= 2 && d <= (int64_t)UINT32_MAX ? UINT64_MAX / (uint64_t)d + 1 : 0; }

uint64_t lt_div_magic31(int64_t d) {
    if (d < 1 || d > INT32_MAX) return 0;
    uint64_t l = 0;
    while (((uint64_t)1 << l) < (uint64_t)d) l++;
    uint64_t m = ((((uint64_t)1 << l) - (uint64_t)d) << 32) / (uint64_t)d + 1; /* (2^l - d) < 2^31: no overflow */
    return m | l << 32;
}

lt_lvar *lt_kernel_scalar(lt_kernel *k, const char *name, lt_dtype dt, int64_t bits) {
    lt_lvar *v = lt_kernel_var(k, name, dt);
    if (!v) return NULL;
    lt_lvar **vars = lt_arena_alloc(k->arena, (size_t)(k->n_scalars + 1) * sizeof *vars);
    int64_t *vals = lt_arena_alloc(k->arena, (size_t)(k->n_scalars + 1) * sizeof *vals);
    if (!vars || !vals) return NULL;
    if (k->n_scalars) {
        memcpy(vars, k->scalars, (size_t)k->n_scalars * sizeof *vars);
        memcpy(vals, k->scalar_bits, (size_t)k->n_scalars * sizeof *vals);
    }
    vars[k->n_scalars] = v;
    vals[k->n_scalars] = bits;
    k->scalars = vars;
    k->scalar_bits = vals;
    k->n_scalars++;
    return v;
}

lt_lbuf *lt_kernel_local(lt_kernel *k, const char *name, lt_dtype dt, int64_t size, lt_scope scope) {
    return new_buf(k, name, dt, size, scope);
}

lt_lvar *lt_kernel_find_var(const lt_kernel *k, const char *name) {
    for (int i = 0; i < k->n_vars; i++)
        if (!strcmp(k->vars[i]->name, name)) return k->vars[i];
    return NULL;
}

lt_lbuf *lt_kernel_find_buf(const lt_kernel *k, const char *name) {
    for (int i = 0; i < k->n_bufs; i++)
        if (!strcmp(k->bufs[i]->name, name)) return k->bufs[i];
    return NULL;
}

/* ---- builders ---- */

static lt_lnode *mk(lt_kernel *k, lt_lkind kind, lt_dtype dt, int n) {
    if (!k) return NULL;
    lt_lnode *x = lt_arena_alloc(k->arena, sizeof *x + (size_t)n * sizeof(lt_lnode *));
    if (!x) return NULL;
    x->kind = kind;
    x->dtype = dt;
    x->lanes = 1;
    x->n = n;
    x->kids = n ? (lt_lnode **)(x + 1) : NULL;
    return x;
}

lt_lnode *lt_l_int(lt_kernel *k, int64_t v) {
    lt_lnode *x = mk(k, LT_L_INT, LT_INT64, 0);
    if (x) x->ival = v;
    return x;
}

lt_lnode *lt_l_float(lt_kernel *k, lt_dtype dt, double v) {
    lt_lnode *x = mk(k, LT_L_FLOAT, dt, 0);
    if (x) x->fval = v;
    return x;
}

lt_lnode *lt_l_var(lt_kernel *k, lt_lvar *v) {
    if (!v) return NULL;
    lt_lnode *x = mk(k, LT_L_VAR, v->dtype, 0);
    if (x) x->var = v;
    return x;
}

lt_lnode *lt_l_load(lt_kernel *k, lt_lbuf *b, lt_lnode *index) {
    if (!b || !index) return NULL;
    lt_lnode *x = mk(k, LT_L_LOAD, b->dtype, 1);
    if (!x) return NULL;
    x->buf = b;
    x->kids[0] = index;
    b->read = true;
    return x;
}

lt_lnode *lt_l_addr(lt_kernel *k, lt_lbuf *b, lt_lnode *index) {
    if (!b || !index) return NULL;
    lt_lnode *x = mk(k, LT_L_ADDR, b->dtype, 1);
    if (!x) return NULL;
    x->buf = b;
    x->kids[0] = index;
    return x;
}

lt_lnode *lt_l_unary(lt_kernel *k, lt_lop op, lt_lnode *a) {
    if (!a) return NULL;
    bool to_bool = op == LT_LOP_NOT || op == LT_LOP_ISNAN || op == LT_LOP_ISINF;
    lt_lnode *x = mk(k, LT_L_UNARY, to_bool ? LT_BOOL : a->dtype, 1);
    if (!x) return NULL;
    x->op = op;
    x->lanes = a->lanes;
    x->kids[0] = a;
    return x;
}

/* An immediate retyped to dt (INT/FLOAT immediates adapt to the other operand's type). */
static lt_lnode *retype_imm(lt_kernel *k, lt_lnode *imm, lt_dtype dt) {
    if (imm->kind == LT_L_INT && lt_dtype_is_float(dt)) return lt_l_float(k, dt, (double)imm->ival);
    lt_lnode *x = mk(k, imm->kind, dt, 0);
    if (!x) return NULL;
    x->ival = imm->ival;
    x->fval = imm->fval;
    x->lanes = imm->lanes;
    return x;
}

static bool is_imm(const lt_lnode *n) { return n->kind == LT_L_INT || n->kind == LT_L_FLOAT; }

lt_lnode *lt_l_binary(lt_kernel *k, lt_lop op, lt_lnode *a, lt_lnode *b) {
    if (!a || !b) return NULL;
    if (a->dtype != b->dtype) {
        if (is_imm(b) && !(b->kind == LT_L_FLOAT && !lt_dtype_is_float(a->dtype))) b = retype_imm(k, b, a->dtype);
        else if (is_imm(a) && !(a->kind == LT_L_FLOAT && !lt_dtype_is_float(b->dtype))) a = retype_imm(k, a, b->dtype);
        if (!a || !b) return NULL;
    }
    lt_dtype dt = a->dtype != b->dtype ? LT_UNDEFINED
                  : lop_is_compare(op) || lop_is_logical(op) ? LT_BOOL
                                                             : a->dtype;
    lt_lnode *x = mk(k, LT_L_BINARY, dt, 2);
    if (!x) return NULL;
    x->op = op;
    x->lanes = a->lanes > b->lanes ? a->lanes : b->lanes;
    x->kids[0] = a;
    x->kids[1] = b;
    return x;
}

lt_lnode *lt_l_add(lt_kernel *k, lt_lnode *a, lt_lnode *b) { return lt_l_binary(k, LT_LOP_ADD, a, b); }
lt_lnode *lt_l_mul(lt_kernel *k, lt_lnode *a, lt_lnode *b) { return lt_l_binary(k, LT_LOP_MUL, a, b); }

lt_lnode *lt_l_select(lt_kernel *k, lt_lnode *c, lt_lnode *a, lt_lnode *b) {
    if (!c || !a || !b) return NULL;
    if (a->dtype != b->dtype) {
        if (is_imm(b)) b = retype_imm(k, b, a->dtype);
        else if (is_imm(a)) a = retype_imm(k, a, b->dtype);
        if (!a || !b) return NULL;
    }
    lt_lnode *x = mk(k, LT_L_SELECT, a->dtype == b->dtype && c->dtype == LT_BOOL ? a->dtype : LT_UNDEFINED, 3);
    if (!x) return NULL;
    x->lanes = a->lanes > b->lanes ? a->lanes : b->lanes;
    x->kids[0] = c;
    x->kids[1] = a;
    x->kids[2] = b;
    return x;
}

lt_lnode *lt_l_cast(lt_kernel *k, lt_dtype dt, lt_lnode *a) {
    if (!a) return NULL;
    lt_lnode *x = mk(k, LT_L_CAST, dt, 1);
    if (!x) return NULL;
    x->lanes = a->lanes;
    x->kids[0] = a;
    return x;
}

lt_lnode *lt_l_call(lt_kernel *k, lt_dtype dt, const char *name, int n, lt_lnode *const *args) {
    for (int i = 0; i < n; i++)
        if (!args[i]) return NULL;
    lt_lnode *x = mk(k, LT_L_CALL, dt, n);
    if (!x || !(x->name = lt_arena_strdup(k->arena, name))) return NULL;
    if (n) memcpy(x->kids, args, (size_t)n * sizeof *args);
    return x;
}

lt_lnode *lt_l_seq(lt_kernel *k, int n, lt_lnode *const *stmts) {
    for (int i = 0; i < n; i++)
        if (!stmts[i]) return NULL;
    lt_lnode *x = mk(k, LT_L_SEQ, LT_UNDEFINED, n);
    if (x && n) memcpy(x->kids, stmts, (size_t)n * sizeof *stmts);
    return x;
}

lt_lnode *lt_l_empty(lt_kernel *k) { return lt_l_seq(k, 0, NULL); }

lt_lnode *lt_l_for(lt_kernel *k, lt_lvar *v, lt_loop_role role, lt_lnode *min, lt_lnode *extent, lt_loop_kind kind,
                   lt_lnode *body) {
    if (!v || !min || !extent || !body) return NULL;
    lt_lnode *x = mk(k, LT_L_FOR, LT_UNDEFINED, 3);
    if (!x) return NULL;
    x->var = v;
    x->op = kind;
    x->role = role;
    x->kids[0] = min;
    x->kids[1] = extent;
    x->kids[2] = body;
    return x;
}

lt_lnode *lt_l_store(lt_kernel *k, lt_lbuf *b, lt_lnode *index, lt_lnode *value) {
    if (!b || !index || !value) return NULL;
    lt_lnode *x = mk(k, LT_L_STORE, b->dtype, 2);
    if (!x) return NULL;
    if (value->dtype != b->dtype && is_imm(value) && !(value->kind == LT_L_FLOAT && !lt_dtype_is_float(b->dtype)))
        if (!(value = retype_imm(k, value, b->dtype))) return NULL;
    x->buf = b;
    x->lanes = value->lanes;
    x->kids[0] = index;
    x->kids[1] = value;
    b->written = true;
    return x;
}

lt_lnode *lt_l_if(lt_kernel *k, lt_lnode *cond, lt_lnode *then_s, lt_lnode *else_s) {
    if (!cond || !then_s) return NULL;
    lt_lnode *x = mk(k, LT_L_IF, LT_UNDEFINED, else_s ? 3 : 2);
    if (!x) return NULL;
    x->kids[0] = cond;
    x->kids[1] = then_s;
    if (else_s) x->kids[2] = else_s;
    return x;
}

lt_lnode *lt_l_alloc(lt_kernel *k, lt_lbuf *b, lt_lnode *body) {
    if (!b || !body) return NULL;
    lt_lnode *x = mk(k, LT_L_ALLOC, b->dtype, 1);
    if (!x) return NULL;
    x->buf = b;
    x->kids[0] = body;
    return x;
}

static lt_lnode *var_stmt(lt_kernel *k, lt_lkind kind, lt_lvar *v, lt_lnode *value) {
    if (!v || !value) return NULL;
    if (value->dtype != v->dtype && is_imm(value) && !(value->kind == LT_L_FLOAT && !lt_dtype_is_float(v->dtype)))
        if (!(value = retype_imm(k, value, v->dtype))) return NULL;
    lt_lnode *x = mk(k, kind, v->dtype, 1);
    if (!x) return NULL;
    x->var = v;
    x->kids[0] = value;
    return x;
}

lt_lnode *lt_l_let(lt_kernel *k, lt_lvar *v, lt_lnode *value) { return var_stmt(k, LT_L_LET, v, value); }
lt_lnode *lt_l_assign(lt_kernel *k, lt_lvar *v, lt_lnode *value) { return var_stmt(k, LT_L_ASSIGN, v, value); }

lt_lnode *lt_l_eval(lt_kernel *k, lt_lnode *call) {
    if (!call) return NULL;
    lt_lnode *x = mk(k, LT_L_EVAL, LT_UNDEFINED, 1);
    if (x) x->kids[0] = call;
    return x;
}

lt_lnode *lt_l_barrier(lt_kernel *k) { return mk(k, LT_L_BARRIER, LT_UNDEFINED, 0); }

lt_lnode *lt_l_with_kids(lt_kernel *k, const lt_lnode *n, lt_lnode *const *kids) {
    for (int i = 0; i < n->n; i++)
        if (!kids[i]) return NULL;
    lt_lnode *x = mk(k, n->kind, n->dtype, n->n);
    if (!x) return NULL;
    lt_lnode **own = x->kids;
    *x = *n;
    x->kids = own;
    if (n->n) memcpy(x->kids, kids, (size_t)n->n * sizeof *kids);
    return x;
}

/* ---- traversal ---- */

void lt_lwalk(const lt_lnode *n, lt_lwalk_fn fn, void *user) {
    if (!n || !fn(n, user)) return;
    for (int i = 0; i < n->n; i++) lt_lwalk(n->kids[i], fn, user);
}

/* The mutator memoizes old -> new per call, so a subtree shared by several parents (lowering reuses
 * index expressions) is rewritten once and stays shared: linear time on DAGs, not exponential. */
typedef struct memo {
    const lt_lnode **key;
    lt_lnode **val;
    size_t cap, n;
    bool oom;
} memo;

static size_t memo_hash(const lt_lnode *p, size_t cap) { return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1); }

static lt_lnode *memo_get(const memo *m, const lt_lnode *key) {
    if (!m->cap) return NULL;
    for (size_t i = memo_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->key[i]) return NULL;
        if (m->key[i] == key) return m->val[i];
    }
}

static void memo_put(memo *m, const lt_lnode *key, lt_lnode *val) {
    if (2 * (m->n + 1) > m->cap) {
        size_t nc = m->cap ? 2 * m->cap : 64;
        const lt_lnode **nk = lt_mem_calloc(nc, sizeof *nk);
        lt_lnode **nv = lt_mem_calloc(nc, sizeof *nv);
        if (!nk || !nv) {
            lt_mem_free(nk);
            lt_mem_free(nv);
            m->oom = true;
            return;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t j = memo_hash(m->key[i], nc);
                while (nk[j]) j = (j + 1) & (nc - 1);
                nk[j] = m->key[i];
                nv[j] = m->val[i];
            }
        lt_mem_free(m->key);
        lt_mem_free(m->val);
        m->key = nk, m->val = nv, m->cap = nc;
    }
    size_t i = memo_hash(key, m->cap);
    while (m->key[i]) i = (i + 1) & (m->cap - 1);
    m->key[i] = key;
    m->val[i] = val;
    m->n++;
}

static lt_lnode *mutate_rec(lt_kernel *k, lt_lnode *n, lt_lmutate_fn fn, void *user, memo *m) {
    if (n->n) { /* leaves are cheap: no memo */
        lt_lnode *done = memo_get(m, n);
        if (done) return done;
    }
    lt_lnode *small[8], **kids = small;
    if (n->n > 8 && !(kids = lt_arena_alloc(k->arena, (size_t)n->n * sizeof *kids))) return NULL;
    bool changed = false;
    for (int i = 0; i < n->n; i++) {
        kids[i] = mutate_rec(k, n->kids[i], fn, user, m);
        if (!kids[i]) return NULL;
        changed |= kids[i] != n->kids[i];
    }
    lt_lnode *r = n;
    if (changed && !(r = lt_l_with_kids(k, n, kids))) return NULL;
    if (!(r = fn(k, r, user))) return NULL;
    if (n->n) {
        memo_put(m, n, r);
        if (m->oom) return NULL;
    }
    return r;
}

lt_lnode *lt_lmutate(lt_kernel *k, lt_lnode *n, lt_lmutate_fn fn, void *user) {
    if (!n) return NULL;
    memo m = {0};
    lt_lnode *r = mutate_rec(k, n, fn, user, &m);
    lt_mem_free(m.key);
    lt_mem_free(m.val);
    return r;
}

typedef struct subst_ctx {
    const lt_lvar *v;
    lt_lnode *e;
} subst_ctx;

static lt_lnode *subst_fn(lt_kernel *k, lt_lnode *n, void *user) {
    subst_ctx *s = user;
    (void)k;
    return n->kind == LT_L_VAR && n->var == s->v ? s->e : n;
}

lt_lnode *lt_lsubstitute(lt_kernel *k, lt_lnode *n, const lt_lvar *v, lt_lnode *e) {
    if (!e) return NULL;
    subst_ctx s = {v, e};
    return lt_lmutate(k, n, subst_fn, &s);
}

typedef struct replace_ctx {
    const lt_lnode *old;
    lt_lnode *with;
} replace_ctx;

static lt_lnode *replace_rec(lt_kernel *k, lt_lnode *n, const replace_ctx *r) {
    if (n == r->old) return r->with;
    /* a statement is never inside an expression: do not descend into them */
    if (lt_lnode_info_get(r->old->kind)->is_stmt && !lt_lnode_info_get(n->kind)->is_stmt) return n;
    lt_lnode *small[8], **kids = small;
    if (n->n > 8 && !(kids = lt_arena_alloc(k->arena, (size_t)n->n * sizeof *kids))) return NULL;
    bool changed = false;
    for (int i = 0; i < n->n; i++) {
        if (!(kids[i] = replace_rec(k, n->kids[i], r))) return NULL;
        changed |= kids[i] != n->kids[i];
    }
    return changed ? lt_l_with_kids(k, n, kids) : n;
}

lt_lnode *lt_lreplace(lt_kernel *k, lt_lnode *n, const lt_lnode *old, lt_lnode *with) {
    if (!n || !with) return NULL;
    replace_ctx r = {old, with};
    return replace_rec(k, n, &r);
}

/* ---- queries ---- */

bool lt_lequal(const lt_lnode *a, const lt_lnode *b) {
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind || a->dtype != b->dtype || a->op != b->op || a->lanes != b->lanes ||
        a->ival != b->ival || a->var != b->var || a->buf != b->buf || a->n != b->n)
        return false;
    if (a->kind == LT_L_FLOAT && !(a->fval == b->fval || (isnan(a->fval) && isnan(b->fval)))) return false;
    if (a->kind == LT_L_CALL && strcmp(a->name, b->name)) return false;
    for (int i = 0; i < a->n; i++)
        if (!lt_lequal(a->kids[i], b->kids[i])) return false;
    return true;
}

bool lt_luses_var(const lt_lnode *n, const lt_lvar *v) {
    if (n->kind == LT_L_VAR) return n->var == v;
    if ((n->kind == LT_L_ASSIGN) && n->var == v) return true;
    for (int i = 0; i < n->n; i++)
        if (lt_luses_var(n->kids[i], v)) return true;
    return false;
}

bool lt_lis_int(const lt_lnode *n, int64_t *v) {
    if (!n || n->kind != LT_L_INT) return false;
    if (v) *v = n->ival;
    return true;
}

const lt_lvar *lt_lvar_scaled(const lt_lnode *n, int64_t *factor) {
    *factor = 1;
    if (n->kind == LT_L_BINARY && n->op == LT_LOP_MUL) {
        if (!lt_lis_int(n->kids[1], factor)) return NULL;
        n = n->kids[0];
    }
    return n->kind == LT_L_VAR ? n->var : NULL;
}

bool lt_lis_empty(const lt_lnode *n) { return n && n->kind == LT_L_SEQ && n->n == 0; }

static lt_lnode *find_loop(lt_lnode *n, lt_lnode *up, const char *name, lt_lnode **parent) {
    if (n->kind == LT_L_FOR && !strcmp(n->var->name, name)) {
        if (parent) *parent = up;
        return n;
    }
    if (!lt_lnode_info_get(n->kind)->is_stmt) return NULL;
    for (int i = 0; i < n->n; i++) {
        lt_lnode *f = find_loop(n->kids[i], n, name, parent);
        if (f) return f;
    }
    return NULL;
}

lt_lnode *lt_lfind_loop(lt_lnode *root, const char *name, lt_lnode **parent) {
    return root ? find_loop(root, NULL, name, parent) : NULL;
}

/* Interval arithmetic on int64 with overflow giving "unbounded". */
bool lt_lbounds(const lt_lnode *n, const int64_t *lo, const int64_t *hi, const bool *known,
                int64_t *out_lo, int64_t *out_hi) {
    int64_t al, ah, bl, bh;
    switch (n->kind) {
    case LT_L_INT: *out_lo = *out_hi = n->ival; return true;
    case LT_L_VAR:
        if (!known || !known[n->var->id]) return false;
        *out_lo = lo[n->var->id];
        *out_hi = hi[n->var->id];
        return true;
    case LT_L_CAST: return lt_dtype_is_int(n->dtype) && lt_lbounds(lt_lexpr_a(n), lo, hi, known, out_lo, out_hi);
    case LT_L_SELECT:
        if (!lt_lbounds(lt_lsel_then(n), lo, hi, known, &al, &ah) || !lt_lbounds(lt_lsel_else(n), lo, hi, known, &bl, &bh))
            return false;
        *out_lo = al < bl ? al : bl;
        *out_hi = ah > bh ? ah : bh;
        return true;
    case LT_L_BINARY: break;
    default: return false;
    }
    if (!lt_dtype_is_int(n->dtype)) return false;
    bool ka = lt_lbounds(lt_lexpr_a(n), lo, hi, known, &al, &ah);
    bool kb = lt_lbounds(lt_lexpr_b(n), lo, hi, known, &bl, &bh);
    int64_t r[4];
    switch (n->op) {
    case LT_LOP_ADD:
        if (!ka || !kb || !lt_add_i64(al, bl, out_lo) || !lt_add_i64(ah, bh, out_hi)) return false;
        return true;
    case LT_LOP_SUB:
        if (!ka || !kb || bl == INT64_MIN || bh == INT64_MIN) return false;
        return lt_add_i64(al, -bh, out_lo) && lt_add_i64(ah, -bl, out_hi);
    case LT_LOP_MUL:
        if (!ka || !kb || !lt_mul_i64(al, bl, &r[0]) || !lt_mul_i64(al, bh, &r[1]) || !lt_mul_i64(ah, bl, &r[2]) ||
            !lt_mul_i64(ah, bh, &r[3]))
            return false;
        *out_lo = *out_hi = r[0];
        for (int i = 1; i < 4; i++) {
            if (r[i] < *out_lo) *out_lo = r[i];
            if (r[i] > *out_hi) *out_hi = r[i];
        }
        return true;
    case LT_LOP_MIN: /* min(a, b) <= either upper bound */
        if (ka && kb) {
            *out_lo = al < bl ? al : bl;
            *out_hi = ah < bh ? ah : bh;
            return true;
        }
        return false;
    case LT_LOP_MAX:
        if (!ka || !kb) return false;
        *out_lo = al > bl ? al : bl;
        *out_hi = ah > bh ? ah : bh;
        return true;
    case LT_LOP_DIV: /* by a positive constant (C truncation is monotonic) */
        if (!ka || !kb || bl != bh || bl <= 0) return false;
        *out_lo = al / bl;
        *out_hi = ah / bl;
        return true;
    case LT_LOP_MOD:
        if (!kb || bl != bh || bl <= 0) return false;
        if (ka && al >= 0 && ah < bl) {
            *out_lo = al;
            *out_hi = ah;
        } else {
            *out_lo = ka && al >= 0 ? 0 : -(bl - 1);
            *out_hi = bl - 1;
        }
        return true;
    default: return false;
    }
}

/* ---- verifier ---- */

typedef struct verify_ctx {
    lt_ctx *ctx;
    const lt_kernel *k;
    bool *bound;     /* per var id: in scope */
    bool *allocated; /* per buf id: in scope (args always) */
} verify_ctx;

static lt_status vfail(verify_ctx *v, const lt_lnode *n, const char *what) {
    lt_strbuf sb = {0};
    lt_lprint(n, &sb, 0);
    const char *s = sb.s ? sb.s : "";
    size_t len = strlen(s);
    while (len && s[len - 1] == '\n') len--;
    lt_status st = lt_error(v->ctx, LT_ERR_INTERNAL, "kernel %s: %s node %.*s%s: %s", v->k->name,
                            lt_lnode_info_get(n->kind)->name, (int)(len > 160 ? 160 : len), s,
                            len > 160 ? "..." : "", what);
    lt_sb_free(&sb);
    return st;
}

static bool buf_ok(verify_ctx *v, const lt_lbuf *b) {
    return b && b->id >= 0 && b->id < v->k->n_bufs && v->k->bufs[b->id] == b && (b->arg >= 0 || v->allocated[b->id]);
}

/* Checks of one node whose children were verified already (so the deepest culprit is named). */
static lt_status verify_self(verify_ctx *v, const lt_lnode *n) {
    switch (n->kind) {
    case LT_L_VAR:
        if (!n->var || n->var->id >= v->k->n_vars || !v->bound[n->var->id]) return vfail(v, n, "variable used out of scope");
        break;
    case LT_L_LOAD:
    case LT_L_STORE:
    case LT_L_ADDR:
        if (!buf_ok(v, n->buf)) return vfail(v, n, "buffer not an argument nor allocated here");
        if (lt_lmem_index(n)->dtype != LT_INT64) return vfail(v, n, "index is not int64");
        if (n->kind == LT_L_STORE && lt_lstore_value(n)->dtype != n->buf->dtype) return vfail(v, n, "stored value has the wrong dtype");
        break;
    case LT_L_UNARY:
    case LT_L_BINARY:
    case LT_L_SELECT:
        if (n->dtype == LT_UNDEFINED) return vfail(v, n, "operands of different dtypes (cast explicitly)");
        if (n->kind != LT_L_SELECT && (n->op < 0 || n->op >= LT_LOP_COUNT || lt_lop_is_binary(n->op) != (n->kind == LT_L_BINARY)))
            return vfail(v, n, "bad operator");
        if (n->kind == LT_L_SELECT && lt_lsel_cond(n)->dtype != LT_BOOL) return vfail(v, n, "condition is not bool");
        break;
    case LT_L_IF:
        if (lt_lif_cond(n)->dtype != LT_BOOL) return vfail(v, n, "condition is not bool");
        break;
    case LT_L_FOR:
        if (lt_lfor_min(n)->dtype != LT_INT64 || lt_lfor_extent(n)->dtype != LT_INT64) return vfail(v, n, "bounds are not int64");
        break;
    case LT_L_LET:
    case LT_L_ASSIGN:
        if (lt_llet_value(n)->dtype != n->var->dtype) return vfail(v, n, "value does not have the variable's dtype");
        if (n->kind == LT_L_ASSIGN && !v->bound[n->var->id]) return vfail(v, n, "assignment to a variable out of scope");
        if (n->kind == LT_L_LET && v->bound[n->var->id]) return vfail(v, n, "variable declared twice in one scope");
        break;
    case LT_L_EVAL:
        if (lt_lstmt_call(n)->kind != LT_L_CALL) return vfail(v, n, "EVAL of something other than a CALL");
        break;
    default: break;
    }
    return LT_OK;
}

/* Scopes: FOR binds its var in its body, ALLOC its buffer in its body, LET its var for the rest of
 * the enclosing SEQ (the SEQ unbinds it). */
static lt_status verify_rec(verify_ctx *v, const lt_lnode *n) {
    const lt_lnode_info *info = lt_lnode_info_get(n->kind);
    if ((unsigned)n->kind >= LT_L_COUNT) return vfail(v, n, "invalid kind");
    if (info->n_fixed_kids >= 0 && n->n != info->n_fixed_kids) return vfail(v, n, "wrong number of children");
    if (n->kind == LT_L_IF && (n->n < 2 || n->n > 3)) return vfail(v, n, "wrong number of children");
    for (int i = 0; i < n->n; i++) {
        if (!n->kids[i]) return vfail(v, n, "NULL child");
        bool want_stmt = (n->kind == LT_L_SEQ) || (n->kind == LT_L_FOR && i == 2) || (n->kind == LT_L_IF && i > 0) ||
                         (n->kind == LT_L_ALLOC);
        if (lt_lnode_info_get(n->kids[i]->kind)->is_stmt != want_stmt)
            return vfail(v, n, want_stmt ? "expression where a statement belongs" : "statement where an expression belongs");
    }
    if (n->kind == LT_L_FOR) {
        LT_TRY(verify_rec(v, lt_lfor_min(n)));
        LT_TRY(verify_rec(v, lt_lfor_extent(n)));
        if (v->bound[n->var->id]) return vfail(v, n, "loop variable already bound");
        v->bound[n->var->id] = true;
        lt_status s = verify_rec(v, lt_lfor_body(n));
        v->bound[n->var->id] = false;
        return s != LT_OK ? s : verify_self(v, n);
    }
    if (n->kind == LT_L_ALLOC) {
        if (!n->buf || n->buf->id >= v->k->n_bufs || v->k->bufs[n->buf->id] != n->buf || n->buf->arg >= 0)
            return vfail(v, n, "allocates an argument or foreign buffer");
        if (v->allocated[n->buf->id]) return vfail(v, n, "buffer allocated twice");
        v->allocated[n->buf->id] = true;
        lt_status s = verify_rec(v, lt_lalloc_body(n));
        v->allocated[n->buf->id] = false;
        return s;
    }
    for (int i = 0; i < n->n; i++) LT_TRY(verify_rec(v, n->kids[i]));
    LT_TRY(verify_self(v, n));
    if (n->kind == LT_L_LET) v->bound[n->var->id] = true;
    if (n->kind == LT_L_SEQ)
        for (int i = 0; i < n->n; i++)
            if (n->kids[i]->kind == LT_L_LET) v->bound[n->kids[i]->var->id] = false;
    return LT_OK;
}

lt_status lt_kernel_verify(lt_ctx *ctx, const lt_kernel *k) {
    if (!k->body) return lt_error(ctx, LT_ERR_INTERNAL, "kernel %s: no body", k->name);
    bool *bound = lt_calloc(ctx, (size_t)k->n_vars + 1, sizeof *bound, "loop verifier");
    bool *alloc = lt_calloc(ctx, (size_t)k->n_bufs + 1, sizeof *alloc, "loop verifier");
    lt_status s = LT_ERR_NOMEM;
    if (bound && alloc) {
        verify_ctx v = {ctx, k, bound, alloc};
        for (int i = 0; i < k->n_scalars; i++) bound[k->scalars[i]->id] = true; /* bound for the whole body */
        s = verify_rec(&v, k->body);
        if (s == LT_OK && !lt_lnode_info_get(k->body->kind)->is_stmt)
            s = lt_error(ctx, LT_ERR_INTERNAL, "kernel %s: body is an expression", k->name);
    }
    lt_mem_free(bound);
    lt_mem_free(alloc);
    return s;
}

/* ---- printer ---- */

enum { P_SELECT = 10, P_OR = 20, P_AND = 25, P_BOR = 30, P_BXOR = 35, P_BAND = 40, P_EQ = 45, P_CMP = 50,
       P_SHIFT = 60, P_ADD = 70, P_MUL = 80, P_UNARY = 90, P_ATOM = 100 };

/* Infix spelling and precedence of a binary op, or NULL for ops printed as calls. */
static const char *infix(int op, int *prec) {
    switch (op) {
    case LT_LOP_ADD: *prec = P_ADD; return "+";
    case LT_LOP_SUB: *prec = P_ADD; return "-";
    case LT_LOP_MUL: *prec = P_MUL; return "*";
    case LT_LOP_DIV: *prec = P_MUL; return "/";
    case LT_LOP_MOD: *prec = P_MUL; return "%";
    case LT_LOP_SHL: *prec = P_SHIFT; return "<<";
    case LT_LOP_SHR: *prec = P_SHIFT; return ">>";
    case LT_LOP_LT: *prec = P_CMP; return "<";
    case LT_LOP_LE: *prec = P_CMP; return "<=";
    case LT_LOP_GT: *prec = P_CMP; return ">";
    case LT_LOP_GE: *prec = P_CMP; return ">=";
    case LT_LOP_EQ: *prec = P_EQ; return "==";
    case LT_LOP_NE: *prec = P_EQ; return "!=";
    case LT_LOP_BITAND: *prec = P_BAND; return "&";
    case LT_LOP_BITXOR: *prec = P_BXOR; return "^";
    case LT_LOP_BITOR: *prec = P_BOR; return "|";
    case LT_LOP_AND: *prec = P_AND; return "&&";
    case LT_LOP_OR: *prec = P_OR; return "||";
    default: *prec = P_ATOM; return NULL;
    }
}

static int expr_prec(const lt_lnode *n) {
    int p;
    switch (n->kind) {
    case LT_L_BINARY: infix(n->op, &p); return p;
    case LT_L_UNARY: return n->op == LT_LOP_NEG || n->op == LT_LOP_NOT ? P_UNARY : P_ATOM;
    case LT_L_SELECT: return P_SELECT;
    case LT_L_INT: return n->ival < 0 ? P_UNARY : P_ATOM;
    case LT_L_FLOAT: return n->fval < 0 ? P_UNARY : P_ATOM;
    default: return P_ATOM;
    }
}

static void print_expr(const lt_lnode *n, lt_strbuf *o, int min_prec);

static void print_lanes(const lt_lnode *n, lt_strbuf *o) {
    if (n->lanes > 1) lt_sb_printf(o, "x%d", n->lanes);
}

static void print_float(double v, lt_dtype dt, lt_strbuf *o) {
    char tmp[64];
    if (isnan(v)) snprintf(tmp, sizeof tmp, "nan");
    else if (isinf(v)) snprintf(tmp, sizeof tmp, v < 0 ? "-inf" : "inf");
    else {
        snprintf(tmp, sizeof tmp, "%.17g", v);
        if (dt == LT_FLOAT) snprintf(tmp, sizeof tmp, "%.9g", v); /* shortest that round-trips float */
        if (!strpbrk(tmp, ".en")) strcat(tmp, ".0");
    }
    if (dt == LT_FLOAT) lt_sb_printf(o, "%sf", tmp);
    else if (dt == LT_DOUBLE) lt_sb_printf(o, "%s", tmp);
    else lt_sb_printf(o, "%s(%s)", lt_dtype_name(dt), tmp);
}

static void print_args(const lt_lnode *n, lt_strbuf *o, int from) {
    for (int i = from; i < n->n; i++) {
        if (i > from) lt_sb_printf(o, ", ");
        print_expr(n->kids[i], o, 0);
    }
}

static void print_expr(const lt_lnode *n, lt_strbuf *o, int min_prec) {
    int p = expr_prec(n);
    bool paren = p < min_prec;
    if (paren) lt_sb_printf(o, "(");
    switch (n->kind) {
    case LT_L_INT:
        if (n->dtype == LT_INT64) lt_sb_printf(o, "%lld", (long long)n->ival);
        else if (n->dtype == LT_BOOL) lt_sb_printf(o, "%s", n->ival ? "true" : "false");
        else lt_sb_printf(o, "%s(%lld)", lt_dtype_name(n->dtype), (long long)n->ival);
        break;
    case LT_L_FLOAT: print_float(n->fval, n->dtype, o); break;
    case LT_L_VAR: lt_sb_printf(o, "%s", n->var->name); break;
    case LT_L_LOAD:
    case LT_L_ADDR:
        lt_sb_printf(o, "%s%s[", n->kind == LT_L_ADDR ? "&" : "", n->buf->name);
        print_expr(lt_lload_index(n), o, 0);
        lt_sb_printf(o, "]");
        print_lanes(n, o);
        break;
    case LT_L_UNARY:
        if (n->op == LT_LOP_NEG || n->op == LT_LOP_NOT) {
            lt_sb_printf(o, "%s", n->op == LT_LOP_NEG ? "-" : "!");
            print_expr(lt_lexpr_a(n), o, P_UNARY);
        } else {
            lt_sb_printf(o, "%s(", lt_lop_name(n->op));
            print_expr(lt_lexpr_a(n), o, 0);
            lt_sb_printf(o, ")");
        }
        break;
    case LT_L_BINARY: {
        int bp;
        const char *s = infix(n->op, &bp);
        if (s) {
            print_expr(lt_lexpr_a(n), o, bp);
            lt_sb_printf(o, bp >= P_MUL ? "%s" : " %s ", s);
            print_expr(lt_lexpr_b(n), o, bp + 1);
        } else {
            lt_sb_printf(o, "%s(", lt_lop_name(n->op));
            print_args(n, o, 0);
            lt_sb_printf(o, ")");
        }
        break;
    }
    case LT_L_SELECT:
        print_expr(lt_lsel_cond(n), o, P_SELECT + 1);
        lt_sb_printf(o, " ? ");
        print_expr(lt_lsel_then(n), o, P_SELECT + 1);
        lt_sb_printf(o, " : ");
        print_expr(lt_lsel_else(n), o, P_SELECT);
        break;
    case LT_L_CAST:
        lt_sb_printf(o, "%s(", lt_dtype_name(n->dtype));
        print_expr(lt_lexpr_a(n), o, 0);
        lt_sb_printf(o, ")");
        break;
    case LT_L_CALL:
        lt_sb_printf(o, "%s(", n->name);
        print_args(n, o, 0);
        lt_sb_printf(o, ")");
        break;
    default: lt_sb_printf(o, "<%s>", lt_lnode_info_get(n->kind)->name); break;
    }
    if (paren) lt_sb_printf(o, ")");
}

static const char *scope_name(lt_scope s) {
    return s == LT_SCOPE_LOCAL ? "local" : s == LT_SCOPE_SHARED ? "shared" : "global";
}

static const char axis_name[] = "xyz";

static void print_stmt(const lt_lnode *n, lt_strbuf *o, int ind, bool roles) {
    switch (n->kind) {
    case LT_L_SEQ:
        if (!n->n) lt_sb_printf(o, "%*snop\n", 2 * ind, "");
        for (int i = 0; i < n->n; i++) print_stmt(n->kids[i], o, ind, roles);
        return;
    case LT_L_FOR: {
        lt_sb_printf(o, "%*s", 2 * ind, "");
        switch ((lt_loop_kind)n->op) {
        case LT_LOOP_SERIAL: break;
        case LT_LOOP_PARALLEL: lt_sb_printf(o, "parallel "); break;
        case LT_LOOP_VECTORIZED: lt_sb_printf(o, "vectorized(%lld) ", (long long)n->ival); break;
        case LT_LOOP_UNROLLED:
            if (n->ival > 0) lt_sb_printf(o, "unrolled(%lld) ", (long long)n->ival);
            else lt_sb_printf(o, "unrolled ");
            break;
        case LT_LOOP_GPU_BLOCK:
        case LT_LOOP_GPU_THREAD:
            lt_sb_printf(o, "%s.%c ", n->op == LT_LOOP_GPU_BLOCK ? "block" : "thread",
                         n->ival >= 0 && n->ival < 3 ? axis_name[n->ival] : '?');
            break;
        }
        lt_sb_printf(o, "for %s in [", n->var->name);
        int64_t m, e;
        print_expr(lt_lfor_min(n), o, 0);
        lt_sb_printf(o, ", ");
        if (lt_lis_int(lt_lfor_min(n), &m) && lt_lis_int(lt_lfor_extent(n), &e)) lt_sb_printf(o, "%lld", (long long)(m + e));
        else if (lt_lis_int(lt_lfor_min(n), &m) && m == 0) print_expr(lt_lfor_extent(n), o, 0);
        else {
            print_expr(lt_lfor_min(n), o, P_ADD);
            lt_sb_printf(o, " + ");
            print_expr(lt_lfor_extent(n), o, P_ADD + 1);
        }
        lt_sb_printf(o, "):");
        if (roles && n->role != LT_ROLE_NONE) lt_sb_printf(o, "  [%s]", lt_loop_role_name(n->role));
        lt_sb_printf(o, "\n");
        print_stmt(lt_lfor_body(n), o, ind + 1, roles);
        return;
    }
    case LT_L_STORE:
        lt_sb_printf(o, "%*s%s[", 2 * ind, "", n->buf->name);
        print_expr(lt_lstore_index(n), o, 0);
        lt_sb_printf(o, "]");
        print_lanes(n, o);
        lt_sb_printf(o, " = ");
        print_expr(lt_lstore_value(n), o, 0);
        lt_sb_printf(o, "\n");
        return;
    case LT_L_IF:
        lt_sb_printf(o, "%*sif ", 2 * ind, "");
        print_expr(lt_lif_cond(n), o, 0);
        lt_sb_printf(o, ":\n");
        print_stmt(lt_lif_then(n), o, ind + 1, roles);
        if (n->n > 2) {
            lt_sb_printf(o, "%*selse:\n", 2 * ind, "");
            print_stmt(lt_lif_else(n), o, ind + 1, roles);
        }
        return;
    case LT_L_ALLOC:
        lt_sb_printf(o, "%*salloc %s %s %s[%lld]:\n", 2 * ind, "", scope_name(n->buf->scope), lt_dtype_name(n->buf->dtype),
                     n->buf->name, (long long)n->buf->size);
        print_stmt(lt_lalloc_body(n), o, ind + 1, roles);
        return;
    case LT_L_LET:
    case LT_L_ASSIGN:
        lt_sb_printf(o, "%*s", 2 * ind, "");
        if (n->kind == LT_L_LET) lt_sb_printf(o, "let %s ", lt_dtype_name(n->var->dtype));
        lt_sb_printf(o, "%s = ", n->var->name);
        print_expr(lt_llet_value(n), o, 0);
        lt_sb_printf(o, "\n");
        return;
    case LT_L_EVAL:
        lt_sb_printf(o, "%*seval ", 2 * ind, "");
        print_expr(lt_lstmt_call(n), o, 0);
        lt_sb_printf(o, "\n");
        return;
    case LT_L_BARRIER: lt_sb_printf(o, "%*sbarrier\n", 2 * ind, ""); return;
    default: /* an expression where a statement was expected: print it inline */
        lt_sb_printf(o, "%*s", 2 * ind, "");
        print_expr(n, o, 0);
        lt_sb_printf(o, "\n");
        return;
    }
}

void lt_lprint(const lt_lnode *n, lt_strbuf *out, int indent) {
    if (!n) {
        lt_sb_printf(out, "%*s<null>\n", 2 * indent, "");
        return;
    }
    if (lt_lnode_info_get(n->kind)->is_stmt) print_stmt(n, out, indent, false);
    else print_expr(n, out, 0);
}

static void kernel_print(const lt_kernel *k, lt_strbuf *out, bool roles) {
    lt_sb_printf(out, "kernel %s(", k->name);
    for (int i = 0; i < k->n_args; i++) {
        const lt_lbuf *b = k->args[i];
        lt_sb_printf(out, "%s%s %s %s[%lld]", i ? ", " : "",
                     b->written ? (b->read ? "inout" : "out") : "in", lt_dtype_name(b->dtype), b->name,
                     (long long)b->size);
    }
    for (int i = 0; i < k->n_scalars; i++)
        lt_sb_printf(out, "%s%s %s", i || k->n_args ? ", " : "", lt_dtype_name(k->scalars[i]->dtype), k->scalars[i]->name);
    lt_sb_printf(out, "):\n");
    if (!k->body) lt_sb_printf(out, "  <null>\n");
    else if (lt_lnode_info_get(k->body->kind)->is_stmt) print_stmt(k->body, out, 1, roles);
    else print_expr(k->body, out, 0);
}

void lt_kernel_print(const lt_kernel *k, lt_strbuf *out) { kernel_print(k, out, false); }
void lt_kernel_dump(const lt_kernel *k, lt_strbuf *out) { kernel_print(k, out, true); }

/* ---- static cost ---- */

typedef struct cost_ctx {
    int64_t *lo, *hi;
    bool *known;
    int gpu_depth;          /* GPU block / thread loops around the current node */
    double call_f, call_b;  /* costs of calls inside them, counted once (see LT_L_CALL) */
} cost_ctx;

static void cost_rec(cost_ctx *c, const lt_lnode *n, double *flops, double *bytes) {
    double f = 0, b = 0;
    switch (n->kind) {
    case LT_L_FOR: {
        int64_t mlo, mhi, elo, ehi;
        double trips = 1;
        bool have_min = lt_lbounds(lt_lfor_min(n), c->lo, c->hi, c->known, &mlo, &mhi);
        if (lt_lbounds(lt_lfor_extent(n), c->lo, c->hi, c->known, &elo, &ehi)) trips = ehi > 0 ? (double)ehi : 0;
        double fb = 0, bb = 0;
        int id = n->var->id;
        if (c->known && have_min && trips > 0) {
            c->known[id] = true;
            c->lo[id] = mlo;
            c->hi[id] = mhi + (int64_t)trips - 1;
        }
        bool gpu = n->op == LT_LOOP_GPU_BLOCK || n->op == LT_LOOP_GPU_THREAD;
        c->gpu_depth += gpu;
        cost_rec(c, lt_lfor_body(n), &fb, &bb);
        c->gpu_depth -= gpu;
        if (c->known) c->known[id] = false;
        /* the bounds expressions themselves are evaluated once */
        cost_rec(c, lt_lfor_min(n), &f, &b);
        cost_rec(c, lt_lfor_extent(n), &f, &b);
        f += trips * fb;
        b += trips * bb;
        break;
    }
    case LT_L_IF: {
        double ft = 0, bt = 0, fe = 0, be = 0;
        cost_rec(c, lt_lif_cond(n), &f, &b);
        cost_rec(c, lt_lif_then(n), &ft, &bt);
        if (n->n > 2) cost_rec(c, lt_lif_else(n), &fe, &be);
        f += ft > fe ? ft : fe;
        b += bt > be ? bt : be;
        break;
    }
    case LT_L_CALL:
        /* a microkernel's recorded cost is its whole operation's: a GPU tile entry that every block
         * and thread calls counts it once, not once per block x thread */
        if (c->gpu_depth > 0) c->call_f += n->fval, c->call_b += (double)n->ival;
        else f += n->fval, b += (double)n->ival;
        for (int i = 0; i < n->n; i++) cost_rec(c, n->kids[i], &f, &b);
        break;
    default:
        if ((n->kind == LT_L_LOAD || n->kind == LT_L_STORE) && n->buf->scope == LT_SCOPE_GLOBAL)
            b += (double)n->lanes * lt_dtype_size(n->buf->dtype);
        if ((n->kind == LT_L_UNARY || n->kind == LT_L_BINARY) && lt_dtype_is_float(lt_lexpr_a(n)->dtype))
            f += n->lanes;
        for (int i = 0; i < n->n; i++) cost_rec(c, n->kids[i], &f, &b);
        break;
    }
    *flops += f;
    *bytes += b;
}

void lt_kernel_cost(lt_kernel *k) {
    size_t nv = (size_t)k->n_vars + 1;
    int64_t *lo = lt_mem_calloc(nv, sizeof *lo), *hi = lt_mem_calloc(nv, sizeof *hi);
    bool *known = lt_mem_calloc(nv, sizeof *known);
    k->flops = k->bytes = 0;
    cost_ctx c = {lo, hi, known, 0, 0, 0};
    if (!lo || !hi || !known) c = (cost_ctx){NULL, NULL, NULL, 0, 0, 0}; /* out of memory: no variable bounds */
    if (k->body) cost_rec(&c, k->body, &k->flops, &k->bytes);
    k->flops += c.call_f;
    k->bytes += c.call_b;
    lt_mem_free(lo);
    lt_mem_free(hi);
    lt_mem_free(known);
}
