/* leval.c — the Loop IR interpreter (see leval.h): a recursive evaluator over the kernel's tree with
 * an environment of variable values and buffer memories indexed by id.
 * Invariant: every buffer access is checked against the buffer's size before it happens.
 */
#include "leval.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct val {
    double f;
    int64_t i;
} val;

typedef struct ev {
    lt_ctx *ctx;
    const lt_kernel *k;
    val *vars;
    bool *bound;
    void **mem; /* per buffer id */
    lt_leval_call_fn call;
    void *user;
} ev;

static bool is_fl(lt_dtype dt) { return lt_dtype_is_float(dt); }

static lt_status fail(ev *e, lt_status s, const char *what, const lt_lnode *n) {
    lt_strbuf sb = {0};
    lt_lprint(n, &sb, 0);
    const char *txt = sb.s ? sb.s : "";
    size_t len = strlen(txt);
    while (len && txt[len - 1] == '\n') len--;
    lt_status r = lt_error(e->ctx, s, "kernel %s: %s at %.*s", e->k->name, what, (int)(len > 200 ? 200 : len), txt);
    lt_sb_free(&sb);
    return r;
}

/* Wrap an integer to dtype dt's width (BOOL: != 0). */
static int64_t wrap(lt_dtype dt, int64_t v) {
    if (dt == LT_BOOL) return v != 0;
    if (dt == LT_INT64 || dt == LT_UINT64 || !lt_dtype_is_int(dt)) return v;
    int64_t tmp = 0;
    lt_store_i64(&tmp, dt, 0, v);
    return lt_load_i64(&tmp, dt, 0);
}

/* A value of float type dt: rounded to its precision (float16 / bfloat16 straight from double, as
 * Cast stores them: no double rounding, the same result as the generated code's). */
static double round_fl(lt_dtype dt, double v) {
    if (dt == LT_FLOAT16 || dt == LT_BFLOAT16) {
        uint16_t h;
        lt_store_f64(&h, dt, 0, v);
        return lt_load_f64(&h, dt, 0);
    }
    return dt == LT_FLOAT ? (double)(float)v : v;
}

static lt_status eval(ev *e, const lt_lnode *n, val *out);

static lt_status check_index(ev *e, const lt_lnode *n, int64_t idx) {
    if (idx < 0 || idx >= n->buf->size) {
        char what[256];
        snprintf(what, sizeof what, "index %lld of buffer %s out of bounds [0, %lld)", (long long)idx, n->buf->name,
                 (long long)n->buf->size);
        return fail(e, LT_ERR_INVALID, what, n);
    }
    if (!e->mem[n->buf->id]) return fail(e, LT_ERR_INVALID, "buffer used outside its ALLOC", n);
    return LT_OK;
}

static lt_status unary(ev *e, const lt_lnode *n, val a, val *out) {
    lt_dtype dt = lt_lexpr_a(n)->dtype;
    if (is_fl(dt)) {
        double x = a.f, r;
        switch (n->op) {
        case LT_LOP_NEG: r = -x; break;
        case LT_LOP_ABS: r = fabs(x); break;
        case LT_LOP_EXP: r = exp(x); break;
        case LT_LOP_LOG: r = log(x); break;
        case LT_LOP_SQRT: r = sqrt(x); break;
        case LT_LOP_RSQRT: r = 1 / sqrt(x); break;
        case LT_LOP_TANH: r = tanh(x); break;
        case LT_LOP_ERF: r = erf(x); break;
        case LT_LOP_SIGMOID: r = 1 / (1 + exp(-x)); break;
        case LT_LOP_FLOOR: r = floor(x); break;
        case LT_LOP_CEIL: r = ceil(x); break;
        case LT_LOP_ROUND: r = nearbyint(x); break;
        case LT_LOP_SIN: r = sin(x); break;
        case LT_LOP_COS: r = cos(x); break;
        case LT_LOP_TAN: r = tan(x); break;
        case LT_LOP_ASIN: r = asin(x); break;
        case LT_LOP_ACOS: r = acos(x); break;
        case LT_LOP_ATAN: r = atan(x); break;
        case LT_LOP_SINH: r = sinh(x); break;
        case LT_LOP_COSH: r = cosh(x); break;
        case LT_LOP_ASINH: r = asinh(x); break;
        case LT_LOP_ACOSH: r = acosh(x); break;
        case LT_LOP_ATANH: r = atanh(x); break;
        case LT_LOP_RECIP: r = 1 / x; break;
        case LT_LOP_SIGN: r = x > 0 ? 1 : x < 0 ? -1 : x; break;
        case LT_LOP_ISNAN: out->i = isnan(x); return LT_OK;
        case LT_LOP_ISINF: out->i = isinf(x) != 0; return LT_OK;
        case LT_LOP_NOT: out->i = !x; return LT_OK;
        default: return fail(e, LT_ERR_UNSUPPORTED, "unary op on a floating value", n);
        }
        out->f = round_fl(n->dtype, r);
        return LT_OK;
    }
    int64_t x = a.i, r;
    switch (n->op) {
    case LT_LOP_NEG: r = (int64_t)(0 - (uint64_t)x); break;
    case LT_LOP_NOT: r = !x; break;
    case LT_LOP_ABS: r = x < 0 ? (int64_t)(0 - (uint64_t)x) : x; break;
    case LT_LOP_SIGN: r = (x > 0) - (x < 0); break;
    case LT_LOP_ISNAN:
    case LT_LOP_ISINF: r = 0; break;
    default: return fail(e, LT_ERR_UNSUPPORTED, "unary op on an integer value", n);
    }
    out->i = wrap(n->dtype, r);
    return LT_OK;
}

static lt_status binary(ev *e, const lt_lnode *n, val a, val b, val *out) {
    lt_dtype dt = lt_lexpr_a(n)->dtype;
    int op = n->op;
    if (op >= LT_LOP_LT && op <= LT_LOP_NE) {
        bool fl = is_fl(dt);
        double x = fl ? a.f : 0, y = fl ? b.f : 0;
        int64_t xi = a.i, yi = b.i;
        if (dt == LT_UINT64) { /* the one integer type whose values do not all fit int64's order */
            uint64_t ux = (uint64_t)xi, uy = (uint64_t)yi;
            xi = ux < uy ? -1 : ux > uy;
            yi = 0;
        }
        switch (op) {
        case LT_LOP_LT: out->i = fl ? x < y : xi < yi; break;
        case LT_LOP_LE: out->i = fl ? x <= y : xi <= yi; break;
        case LT_LOP_GT: out->i = fl ? x > y : xi > yi; break;
        case LT_LOP_GE: out->i = fl ? x >= y : xi >= yi; break;
        case LT_LOP_EQ: out->i = fl ? x == y : xi == yi; break;
        default: out->i = fl ? x != y : xi != yi; break;
        }
        return LT_OK;
    }
    if (is_fl(dt)) {
        double x = a.f, y = b.f, r;
        switch (op) {
        case LT_LOP_ADD: r = x + y; break;
        case LT_LOP_SUB: r = x - y; break;
        case LT_LOP_MUL: r = x * y; break;
        case LT_LOP_DIV: r = x / y; break;
        case LT_LOP_FMOD:
        case LT_LOP_MOD: r = fmod(x, y); break;
        case LT_LOP_MIN: r = isnan(x) || isnan(y) ? NAN : fmin(x, y); break;
        case LT_LOP_MAX: r = isnan(x) || isnan(y) ? NAN : fmax(x, y); break;
        case LT_LOP_POW: r = pow(x, y); break;
        default: return fail(e, LT_ERR_UNSUPPORTED, "binary op on floating values", n);
        }
        out->f = round_fl(n->dtype, r);
        return LT_OK;
    }
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    int64_t r;
    bool is_unsigned = lt_dtype_get(dt)->cls == LT_DC_UINT;
    switch (op) {
    case LT_LOP_ADD: r = (int64_t)(x + y); break;
    case LT_LOP_SUB: r = (int64_t)(x - y); break;
    case LT_LOP_MUL: r = (int64_t)(x * y); break;
    case LT_LOP_DIV:
    case LT_LOP_MOD:
    case LT_LOP_FMOD:
        if (!b.i) return fail(e, LT_ERR_INVALID, "integer division by zero", n);
        if (is_unsigned) r = (int64_t)(op == LT_LOP_DIV ? x / y : x % y);
        else if (a.i == INT64_MIN && b.i == -1) r = op == LT_LOP_DIV ? INT64_MIN : 0;
        else r = op == LT_LOP_DIV ? a.i / b.i : a.i % b.i;
        break;
    case LT_LOP_MIN: r = is_unsigned ? (int64_t)(x < y ? x : y) : a.i < b.i ? a.i : b.i; break;
    case LT_LOP_MAX: r = is_unsigned ? (int64_t)(x > y ? x : y) : a.i > b.i ? a.i : b.i; break;
    case LT_LOP_AND: r = a.i && b.i; break;
    case LT_LOP_OR: r = a.i || b.i; break;
    case LT_LOP_XOR: r = !a.i != !b.i; break;
    case LT_LOP_BITAND: r = (int64_t)(x & y); break;
    case LT_LOP_BITOR: r = (int64_t)(x | y); break;
    case LT_LOP_BITXOR: r = (int64_t)(x ^ y); break;
    case LT_LOP_SHL: r = y >= 64 ? 0 : (int64_t)(x << y); break;
    case LT_LOP_SHR: r = y >= 64 ? 0 : (int64_t)(x >> y); break;
    case LT_LOP_POW: {
        int64_t p = 1;
        for (uint64_t i = 0; i < y && i < 64; i++) p = (int64_t)((uint64_t)p * x);
        r = b.i < 0 ? 0 : p;
        break;
    }
    default: return fail(e, LT_ERR_UNSUPPORTED, "binary op on integer values", n);
    }
    out->i = wrap(n->dtype, r);
    return LT_OK;
}

static lt_status call(ev *e, const lt_lnode *n, val *out) {
    if (!e->call) return fail(e, LT_ERR_UNSUPPORTED, "call with no callback to run it", n);
    lt_leval_arg small[16], *args = small;
    if (n->n > 16 && !(args = lt_calloc(e->ctx, (size_t)n->n, sizeof *args, "loop interpreter call"))) return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    for (int i = 0; i < n->n && s == LT_OK; i++) {
        const lt_lnode *a = n->kids[i];
        memset(&args[i], 0, sizeof args[i]);
        args[i].dtype = a->dtype;
        val v = {0, 0};
        if (a->kind == LT_L_ADDR) {
            if ((s = eval(e, lt_lload_index(a), &v)) != LT_OK) break;
            if ((s = check_index(e, a, v.i)) != LT_OK) break;
            args[i].ptr = (char *)e->mem[a->buf->id] + v.i * lt_dtype_size(a->buf->dtype);
            args[i].avail = a->buf->size - v.i;
        } else if ((s = eval(e, a, &v)) == LT_OK) {
            args[i].i = v.i;
            args[i].f = v.f;
        }
    }
    lt_leval_arg res = {n->dtype, NULL, 0, 0, 0};
    if (s == LT_OK) s = e->call(e->ctx, n->name, n->n, args, &res, e->user);
    if (s == LT_OK) {
        out->i = res.i;
        out->f = res.f;
    }
    if (args != small) lt_mem_free(args);
    return s;
}

static lt_status eval(ev *e, const lt_lnode *n, val *out) {
    val a = {0, 0}, b = {0, 0}, c = {0, 0};
    out->f = 0;
    out->i = 0;
    if (n->lanes != 1) return fail(e, LT_ERR_UNSUPPORTED, "vector node", n);
    switch (n->kind) {
    case LT_L_INT: out->i = n->ival; out->f = (double)n->ival; return LT_OK;
    case LT_L_FLOAT: out->f = round_fl(n->dtype, n->fval); return LT_OK;
    case LT_L_VAR:
        if (!e->bound[n->var->id]) return fail(e, LT_ERR_INVALID, "variable read before it is set", n);
        *out = e->vars[n->var->id];
        return LT_OK;
    case LT_L_LOAD:
        LT_TRY(eval(e, lt_lload_index(n), &a));
        LT_TRY(check_index(e, n, a.i));
        if (is_fl(n->dtype)) out->f = round_fl(n->dtype, lt_load_f64(e->mem[n->buf->id], n->buf->dtype, a.i));
        else out->i = lt_load_i64(e->mem[n->buf->id], n->buf->dtype, a.i);
        return LT_OK;
    case LT_L_UNARY:
        LT_TRY(eval(e, lt_lexpr_a(n), &a));
        return unary(e, n, a, out);
    case LT_L_BINARY:
        LT_TRY(eval(e, lt_lexpr_a(n), &a));
        LT_TRY(eval(e, lt_lexpr_b(n), &b));
        return binary(e, n, a, b, out);
    case LT_L_SELECT:
        LT_TRY(eval(e, lt_lsel_cond(n), &c));
        return eval(e, c.i ? lt_lsel_then(n) : lt_lsel_else(n), out);
    case LT_L_CAST: {
        LT_TRY(eval(e, lt_lexpr_a(n), &a));
        bool from_fl = is_fl(lt_lexpr_a(n)->dtype);
        double ival = lt_lexpr_a(n)->dtype == LT_UINT64 ? (double)(uint64_t)a.i : (double)a.i;
        if (is_fl(n->dtype)) out->f = round_fl(n->dtype, from_fl ? a.f : ival);
        else if (n->dtype == LT_BOOL) out->i = from_fl ? a.f != 0 : a.i != 0;
        else if (from_fl) {
            int64_t tmp = 0;
            lt_store_f64(&tmp, n->dtype, 0, a.f); /* ONNX Cast: truncate, NaN -> 0, wraps */
            out->i = lt_load_i64(&tmp, n->dtype, 0);
        } else out->i = wrap(n->dtype, a.i);
        return LT_OK;
    }
    case LT_L_CALL: return call(e, n, out);
    default: return fail(e, LT_ERR_INVALID, "statement or address where a value is expected", n);
    }
}

static lt_status exec(ev *e, const lt_lnode *n) {
    val a = {0, 0}, b = {0, 0};
    switch (n->kind) {
    case LT_L_SEQ:
        for (int i = 0; i < n->n; i++) LT_TRY(exec(e, n->kids[i]));
        return LT_OK;
    case LT_L_FOR: {
        LT_TRY(eval(e, lt_lfor_min(n), &a));
        LT_TRY(eval(e, lt_lfor_extent(n), &b));
        int id = n->var->id;
        bool was = e->bound[id];
        val saved = e->vars[id];
        e->bound[id] = true;
        lt_status s = LT_OK;
        for (int64_t i = 0; i < b.i && s == LT_OK; i++) {
            e->vars[id].i = a.i + i;
            e->vars[id].f = (double)(a.i + i);
            s = exec(e, lt_lfor_body(n));
        }
        e->bound[id] = was;
        e->vars[id] = saved;
        return s;
    }
    case LT_L_STORE:
        if (n->lanes != 1) return fail(e, LT_ERR_UNSUPPORTED, "vector node", n);
        LT_TRY(eval(e, lt_lstore_index(n), &a));
        LT_TRY(eval(e, lt_lstore_value(n), &b));
        LT_TRY(check_index(e, n, a.i));
        if (is_fl(n->buf->dtype)) lt_store_f64(e->mem[n->buf->id], n->buf->dtype, a.i, b.f);
        else lt_store_i64(e->mem[n->buf->id], n->buf->dtype, a.i, b.i);
        return LT_OK;
    case LT_L_IF:
        LT_TRY(eval(e, lt_lif_cond(n), &a));
        if (a.i) return exec(e, lt_lif_then(n));
        return n->n > 2 ? exec(e, lt_lif_else(n)) : LT_OK;
    case LT_L_ALLOC: {
        const lt_lbuf *bf = n->buf;
        size_t bytes;
        if (bf->size < 0 || !lt_mul_size((size_t)bf->size, (size_t)lt_dtype_size(bf->dtype), &bytes))
            return fail(e, LT_ERR_INVALID, "bad local buffer size", n);
        void *m = lt_alloc(e->ctx, bytes ? bytes : 1, bf->name);
        if (!m) return LT_ERR_NOMEM;
        if (is_fl(bf->dtype))
            for (int64_t i = 0; i < bf->size; i++) lt_store_f64(m, bf->dtype, i, NAN);
        else memset(m, 0xA5, bytes);
        void *saved = e->mem[bf->id];
        e->mem[bf->id] = m;
        lt_status s = exec(e, lt_lalloc_body(n));
        e->mem[bf->id] = saved;
        lt_mem_free(m);
        return s;
    }
    case LT_L_LET:
    case LT_L_ASSIGN:
        LT_TRY(eval(e, lt_llet_value(n), &a));
        if (n->kind == LT_L_ASSIGN && !e->bound[n->var->id]) return fail(e, LT_ERR_INVALID, "assignment to an undeclared variable", n);
        e->vars[n->var->id] = a;
        e->bound[n->var->id] = true;
        return LT_OK;
    case LT_L_EVAL: return eval(e, lt_lstmt_call(n), &a);
    case LT_L_BARRIER: return LT_OK;
    default: return fail(e, LT_ERR_INVALID, "expression where a statement is expected", n);
    }
}

lt_status lt_leval(lt_ctx *ctx, const lt_kernel *k, void *const *args, lt_leval_call_fn call_fn, void *user) {
    if (!k->body) return lt_error(ctx, LT_ERR_INVALID, "kernel %s has no body", k->name);
    ev e = {ctx, k, NULL, NULL, NULL, call_fn, user};
    e.vars = lt_calloc(ctx, (size_t)k->n_vars + 1, sizeof *e.vars, "loop interpreter variables");
    e.bound = lt_calloc(ctx, (size_t)k->n_vars + 1, sizeof *e.bound, "loop interpreter variables");
    e.mem = lt_calloc(ctx, (size_t)k->n_bufs + 1, sizeof *e.mem, "loop interpreter buffers");
    lt_status s = LT_ERR_NOMEM;
    if (e.vars && e.bound && e.mem) {
        for (int i = 0; i < k->n_args; i++) e.mem[k->args[i]->id] = args[i];
        for (int i = 0; i < k->n_scalars; i++) { /* run-time scalars: the slots after the buffers */
            const lt_lvar *v = k->scalars[i];
            union { void *p; int64_t i; double d; } slot = {args[k->n_args + i]};
            if (v->dtype == LT_DOUBLE) e.vars[v->id].f = slot.d;
            else e.vars[v->id].i = slot.i;
            e.bound[v->id] = true;
        }
        s = exec(&e, k->body);
    }
    lt_mem_free(e.vars);
    lt_mem_free(e.bound);
    lt_mem_free(e.mem);
    return s;
}
