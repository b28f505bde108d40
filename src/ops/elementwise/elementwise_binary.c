/* elementwise_binary.c — broadcasting binary, ternary and variadic elementwise ops: Add Sub Mul Div
 * Mod Pow, comparisons, logical and bitwise ops, BitShift, PRelu, Where, Clip, Sum Mean Max Min.
 *
 * Semantics follow onnx's reference (numpy): float ops compute in double from exact inputs and round
 * once into the output dtype, which for + - * / is bit-identical to numpy's float32/float16 ufuncs.
 * Integer ops are exact in int64/uint64 and wrap to the dtype's width. Integer division truncates
 * toward zero; x / 0 and x % 0 give 0 (numpy's result), INT_MIN / -1 wraps. Mod with fmod=0 takes
 * the divisor's sign (Python), fmod=1 the dividend's (C fmod). Max/Min propagate NaN. Opset < 7
 * binary ops honour the legacy broadcast/axis attributes.
 */
#include "elementwise_impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- inference ---- */
static bool legacy_applies(const lt_node *n) { return n->opset < 7 && lt_attr_int(n, "broadcast", 0) != 0; }

lt_status lt_ew_infer_binary(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_ew_check_infer(ic, n));
    const lt_type *t = lt_infer_in(n, 0);
    if (legacy_applies(n)) return lt_ew_infer_unary_dt(ic, n, t ? t->dtype : LT_UNDEFINED);
    return lt_infer_broadcast(ic, n, LT_UNDEFINED);
}

lt_status lt_ew_infer_compare(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_ew_check_infer(ic, n));
    if (legacy_applies(n)) return lt_ew_infer_unary_dt(ic, n, LT_BOOL);
    return lt_infer_broadcast(ic, n, LT_BOOL);
}

lt_status lt_ew_infer_where(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_ew_check_infer(ic, n));
    const lt_type *t = lt_infer_in(n, 1);
    return lt_infer_broadcast(ic, n, t ? t->dtype : LT_UNDEFINED);
}

lt_status lt_ew_infer_variadic(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_ew_check_infer(ic, n));
    return lt_infer_broadcast(ic, n, LT_UNDEFINED);
}

/* ---- shared setup for two-input ops ---- */
typedef struct bin_setup {
    const lt_tensor *a, *b;
    lt_tensor bview;
    lt_ew_bc bc;
    lt_tensor *y;
} bin_setup;

/* Read inputs 0 and 1, apply legacy broadcasting, set up the iterator, create output 0 (dtype ydt;
 * UNDEFINED: a's). same_dtype: a and b must have the same dtype. */
static lt_status bin_begin(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out, bool same_dtype,
                           lt_dtype ydt, bin_setup *s) {
    LT_TRY(lt_in_tensor(ev, n, in, 0, &s->a));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &s->b));
    if (same_dtype && s->a->dtype != s->b->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "inputs have different types %s and %s", lt_dtype_name(s->a->dtype),
                           lt_dtype_name(s->b->dtype));
    LT_TRY(lt_ew_legacy_bcast(ev, n, s->a, s->b, &s->bview));
    const lt_tensor *ts[2] = {s->a, &s->bview};
    LT_TRY(lt_ew_bc_init(ev, n, 2, ts, &s->bc));
    return lt_out_new(ev, n, out, 0, ydt == LT_UNDEFINED ? s->a->dtype : ydt, s->bc.rank, s->bc.dims, &s->y);
}

static lt_status bad_type(lt_eval *ev, const lt_node *n, lt_dtype dt) {
    return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(dt));
}

/* ---- Add Sub Mul Div Mod ---- */
static int64_t s_div(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    return a / b;
}
static int64_t s_mod(int64_t a, int64_t b, bool fmod_mode) {
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

lt_status lt_ew_eval_arith(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    bin_setup s;
    LT_TRY(bin_begin(ev, n, in, out, true, LT_UNDEFINED, &s));
    lt_dtype dt = s.a->dtype;
    lt_ew_kind k = lt_ew_kind_of(dt);
    int op = n->op;
    bool fm = lt_attr_int(n, "fmod", 0) != 0;
    lt_ew_bc *bc = &s.bc;
    const void *ap = s.a->data, *bp = s.b->data;
    void *yp = s.y->data;
    if (k == LT_EW_F) {
        if (dt == LT_FLOAT) {
            const float *af = ap, *bf = bp;
            float *yf = yp;
            for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
                double x = af[bc->off[0]], z = bf[bc->off[1]], r;
                switch (op) {
                case LT_OP_Add: r = x + z; break;
                case LT_OP_Sub: r = x - z; break;
                case LT_OP_Mul: r = x * z; break;
                case LT_OP_Div: r = x / z; break;
                default: r = fmod(x, z); if (!fm && isnan(r)) r = 0; break;
                }
                yf[i] = (float)r;
            }
            return LT_OK;
        }
        lt_ew_ldf_fn ld = lt_ew_ldf(dt);
        lt_ew_stf_fn st = lt_ew_stf(dt);
        for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
            double x = ld(ap, bc->off[0]), z = ld(bp, bc->off[1]), r;
            switch (op) {
            case LT_OP_Add: r = x + z; break;
            case LT_OP_Sub: r = x - z; break;
            case LT_OP_Mul: r = x * z; break;
            case LT_OP_Div: r = x / z; break;
            default: r = fmod(x, z); if (!fm && isnan(r)) r = 0; break;
            }
            st(yp, i, r);
        }
        return LT_OK;
    }
    if (k != LT_EW_S && k != LT_EW_U) return bad_type(ev, n, dt);
    lt_ew_ldi_fn ld = lt_ew_ldi(dt);
    lt_ew_sti_fn st = lt_ew_sti(dt);
    bool uns = k == LT_EW_U;
    for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
        int64_t x = ld(ap, bc->off[0]), z = ld(bp, bc->off[1]), r;
        uint64_t ux = (uint64_t)x, uz = (uint64_t)z;
        switch (op) {
        case LT_OP_Add: r = (int64_t)(ux + uz); break;
        case LT_OP_Sub: r = (int64_t)(ux - uz); break;
        case LT_OP_Mul: r = (int64_t)(ux * uz); break;
        case LT_OP_Div: r = uns ? (int64_t)(uz ? ux / uz : 0) : s_div(x, z); break;
        default: r = uns ? (int64_t)(uz ? ux % uz : 0) : s_mod(x, z, fm); break;
        }
        st(yp, i, r);
    }
    return LT_OK;
}

/* ---- Pow ---- */
static uint64_t ipow(uint64_t base, uint64_t e) {
    uint64_t r = 1;
    while (e) {
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
    }
    return r;
}

lt_status lt_ew_eval_pow(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    bin_setup s;
    LT_TRY(bin_begin(ev, n, in, out, false, LT_UNDEFINED, &s));
    lt_ew_kind ka = lt_ew_kind_of(s.a->dtype), kb = lt_ew_kind_of(s.b->dtype);
    if (ka != LT_EW_F && ka != LT_EW_S && ka != LT_EW_U) return bad_type(ev, n, s.a->dtype);
    if (kb != LT_EW_F && kb != LT_EW_S && kb != LT_EW_U) return bad_type(ev, n, s.b->dtype);
    lt_ew_bc *bc = &s.bc;
    const void *ap = s.a->data, *bp = s.b->data;
    void *yp = s.y->data;
    if (ka == LT_EW_F || kb == LT_EW_F) {
        lt_ew_ldf_fn la = lt_ew_ldf(s.a->dtype), lb = lt_ew_ldf(s.b->dtype);
        lt_ew_stf_fn st = lt_ew_stf(s.y->dtype);
        for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) st(yp, i, pow(la(ap, bc->off[0]), lb(bp, bc->off[1])));
        return LT_OK;
    }
    lt_ew_ldi_fn la = lt_ew_ldi(s.a->dtype), lb = lt_ew_ldi(s.b->dtype);
    lt_ew_sti_fn st = lt_ew_sti(s.y->dtype);
    bool ua = ka == LT_EW_U, ub = kb == LT_EW_U;
    for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
        int64_t x = la(ap, bc->off[0]), e = lb(bp, bc->off[1]), r;
        if (!ub && e < 0) {
            /* Integer to a negative power: the truncated real result. */
            if (x == 1) r = 1;
            else if (x == -1 && !ua) r = (e & 1) ? -1 : 1;
            else r = 0;
        } else {
            r = (int64_t)ipow((uint64_t)x, (uint64_t)e);
        }
        st(yp, i, r);
    }
    return LT_OK;
}

/* ---- comparisons ---- */
static int cmp_result(int op, int c) { /* c: -1, 0, 1 */
    switch (op) {
    case LT_OP_Equal: return c == 0;
    case LT_OP_Greater: return c > 0;
    case LT_OP_GreaterOrEqual: return c >= 0;
    case LT_OP_Less: return c < 0;
    default: return c <= 0; /* LessOrEqual */
    }
}

lt_status lt_ew_eval_compare(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    bin_setup s;
    LT_TRY(bin_begin(ev, n, in, out, true, LT_BOOL, &s));
    lt_dtype dt = s.a->dtype;
    lt_ew_kind k = lt_ew_kind_of(dt);
    lt_ew_bc *bc = &s.bc;
    const void *ap = s.a->data, *bp = s.b->data;
    uint8_t *yp = s.y->data;
    int op = n->op;
    if (k == LT_EW_F) {
        lt_ew_ldf_fn ld = lt_ew_ldf(dt);
        for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
            double x = ld(ap, bc->off[0]), z = ld(bp, bc->off[1]);
            if (isnan(x) || isnan(z)) yp[i] = 0;
            else yp[i] = (uint8_t)cmp_result(op, (x > z) - (x < z));
        }
    } else if (k == LT_EW_S || k == LT_EW_B) {
        lt_ew_ldi_fn ld = lt_ew_ldi(dt);
        for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
            int64_t x = ld(ap, bc->off[0]), z = ld(bp, bc->off[1]);
            yp[i] = (uint8_t)cmp_result(op, (x > z) - (x < z));
        }
    } else if (k == LT_EW_U) {
        lt_ew_ldi_fn ld = lt_ew_ldi(dt);
        for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
            uint64_t x = (uint64_t)ld(ap, bc->off[0]), z = (uint64_t)ld(bp, bc->off[1]);
            yp[i] = (uint8_t)cmp_result(op, (x > z) - (x < z));
        }
    } else if (k == LT_EW_STR) {
        char *const *as = ap, *const *bs = bp;
        for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
            int c = strcmp(as[bc->off[0]], bs[bc->off[1]]);
            yp[i] = (uint8_t)cmp_result(op, (c > 0) - (c < 0));
        }
    } else {
        return bad_type(ev, n, dt);
    }
    return LT_OK;
}

/* ---- And Or Xor (bool) ---- */
lt_status lt_ew_eval_logical(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    bin_setup s;
    LT_TRY(bin_begin(ev, n, in, out, true, LT_BOOL, &s));
    if (s.a->dtype != LT_BOOL) return bad_type(ev, n, s.a->dtype);
    lt_ew_bc *bc = &s.bc;
    const uint8_t *ap = s.a->data, *bp = s.b->data;
    uint8_t *yp = s.y->data;
    for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
        bool x = ap[bc->off[0]] != 0, z = bp[bc->off[1]] != 0;
        yp[i] = n->op == LT_OP_And ? (x && z) : n->op == LT_OP_Or ? (x || z) : (x != z);
    }
    return LT_OK;
}

/* ---- BitwiseAnd Or Xor ---- */
lt_status lt_ew_eval_bitwise(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    bin_setup s;
    LT_TRY(bin_begin(ev, n, in, out, true, LT_UNDEFINED, &s));
    lt_ew_kind k = lt_ew_kind_of(s.a->dtype);
    if (k != LT_EW_S && k != LT_EW_U && k != LT_EW_B) return bad_type(ev, n, s.a->dtype);
    lt_ew_ldi_fn ld = lt_ew_ldi(s.a->dtype);
    lt_ew_sti_fn st = lt_ew_sti(s.a->dtype);
    lt_ew_bc *bc = &s.bc;
    for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
        int64_t x = ld(s.a->data, bc->off[0]), z = ld(s.b->data, bc->off[1]);
        st(s.y->data, i, n->op == LT_OP_BitwiseAnd ? (x & z) : n->op == LT_OP_BitwiseOr ? (x | z) : (x ^ z));
    }
    return LT_OK;
}

/* ---- BitShift: shifts by the type's width or more give 0 (no UB) ---- */
lt_status lt_ew_eval_bitshift(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    const char *dir = lt_attr_string(n, "direction", "");
    bool left = strcmp(dir, "LEFT") == 0;
    if (!left && strcmp(dir, "RIGHT") != 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "direction must be LEFT or RIGHT, got '%s'", dir);
    bin_setup s;
    LT_TRY(bin_begin(ev, n, in, out, true, LT_UNDEFINED, &s));
    lt_ew_kind k = lt_ew_kind_of(s.a->dtype);
    if (k != LT_EW_S && k != LT_EW_U) return bad_type(ev, n, s.a->dtype);
    uint64_t width = (uint64_t)lt_ew_int_bits(s.a->dtype);
    lt_ew_ldi_fn ld = lt_ew_ldi(s.a->dtype);
    lt_ew_sti_fn st = lt_ew_sti(s.a->dtype);
    lt_ew_bc *bc = &s.bc;
    for (int64_t i = 0; i < bc->numel; i++, lt_ew_bc_next(bc)) {
        int64_t x = ld(s.a->data, bc->off[0]), z = ld(s.b->data, bc->off[1]), r;
        bool neg_shift = k == LT_EW_S && z < 0;
        uint64_t sh = (uint64_t)z;
        if (neg_shift || sh >= width) r = (!left && k == LT_EW_S && x < 0) ? -1 : 0;
        else if (left) r = (int64_t)((uint64_t)x << sh);
        else if (k == LT_EW_U) r = (int64_t)((uint64_t)x >> sh);
        else r = x < 0 ? ~(~x >> sh) : x >> sh; /* arithmetic shift without implementation-defined behaviour */
        st(s.y->data, i, r);
    }
    return LT_OK;
}

/* ---- PRelu ---- */
/* Is the slope unidirectionally broadcastable to X (the rule check_prelu applies first)? */
static bool slope_broadcasts_to(const lt_tensor *x, const lt_tensor *slope) {
    if (slope->rank > x->rank) return false;
    for (int d = 0; d < slope->rank; d++) {
        int64_t sv = slope->dims[d], xv = x->dims[d + x->rank - slope->rank];
        if (sv != 1 && sv != xv) return false;
    }
    return true;
}

lt_status lt_ew_eval_prelu(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    const lt_tensor *x, *slope;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &slope));
    if (x->dtype != slope->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "inputs have different types %s and %s", lt_dtype_name(x->dtype),
                           lt_dtype_name(slope->dtype));
    lt_tensor sv = *slope;
    if (!slope_broadcasts_to(x, slope) && slope->rank == 1) {
        /* Older PRelu: a 1-D slope matching exactly one dimension of X applies along it. */
        int hits = 0, at = -1;
        for (int d = 0; d < x->rank; d++)
            if (x->dims[d] == slope->dims[0]) hits++, at = d;
        if (hits == 1) {
            sv.rank = x->rank;
            for (int d = 0; d < x->rank; d++) sv.dims[d] = d == at ? slope->dims[0] : 1;
        }
    }
    const lt_tensor *ts[2] = {x, &sv};
    lt_ew_bc bc;
    LT_TRY(lt_ew_bc_init(ev, n, 2, ts, &bc));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, bc.rank, bc.dims, &y));
    lt_ew_kind k = lt_ew_kind_of(x->dtype);
    if (k == LT_EW_F) {
        lt_ew_ldf_fn ld = lt_ew_ldf(x->dtype);
        lt_ew_stf_fn st = lt_ew_stf(x->dtype);
        for (int64_t i = 0; i < bc.numel; i++, lt_ew_bc_next(&bc)) {
            double v = ld(x->data, bc.off[0]);
            st(y->data, i, v > 0 ? v : v * ld(slope->data, bc.off[1]));
        }
    } else if (k == LT_EW_S || k == LT_EW_U) {
        lt_ew_ldi_fn ld = lt_ew_ldi(x->dtype);
        lt_ew_sti_fn st = lt_ew_sti(x->dtype);
        for (int64_t i = 0; i < bc.numel; i++, lt_ew_bc_next(&bc)) {
            int64_t v = ld(x->data, bc.off[0]);
            bool pos = k == LT_EW_U ? v != 0 : v > 0;
            st(y->data, i, pos ? v : (int64_t)((uint64_t)v * (uint64_t)ld(slope->data, bc.off[1])));
        }
    } else {
        return bad_type(ev, n, x->dtype);
    }
    return LT_OK;
}

/* ---- Where ---- */
lt_status lt_ew_eval_where(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    const lt_tensor *c, *x, *z;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &c));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &z));
    if (x->dtype != z->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "X and Y have different types %s and %s", lt_dtype_name(x->dtype),
                           lt_dtype_name(z->dtype));
    lt_ew_kind kc = lt_ew_kind_of(c->dtype);
    if (kc != LT_EW_B && kc != LT_EW_S && kc != LT_EW_U) return bad_type(ev, n, c->dtype);
    const lt_tensor *ts[3] = {c, x, z};
    lt_ew_bc bc;
    LT_TRY(lt_ew_bc_init(ev, n, 3, ts, &bc));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, bc.rank, bc.dims, &y));
    lt_ew_ldi_fn lc = lt_ew_ldi(c->dtype);
    size_t es = (size_t)lt_dtype_size(x->dtype);
    for (int64_t i = 0; i < bc.numel; i++, lt_ew_bc_next(&bc)) {
        bool pick_x = lc(c->data, bc.off[0]) != 0;
        const lt_tensor *src = pick_x ? x : z;
        int64_t off = pick_x ? bc.off[1] : bc.off[2];
        if (x->dtype == LT_STRING) {
            const char *str = ((char *const *)src->data)[off];
            LT_TRY(lt_tensor_set_string(ev->ctx, y, i, str, strlen(str)));
        } else {
            memcpy((char *)y->data + (size_t)i * es, (const char *)src->data + (size_t)off * es, es);
        }
    }
    return LT_OK;
}

/* ---- Clip ---- */
static lt_status clip_bound(lt_eval *ev, const lt_node *n, lt_datum **in, int i, const lt_tensor *x,
                            const lt_tensor **t) {
    LT_TRY(lt_in_tensor_opt(ev, n, in, i, t));
    if (!*t) return LT_OK;
    if ((*t)->dtype != x->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s has type %s, input has %s", i == 1 ? "min" : "max",
                           lt_dtype_name((*t)->dtype), lt_dtype_name(x->dtype));
    if ((*t)->numel != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be a scalar (has %lld elements)", i == 1 ? "min" : "max",
                           (long long)(*t)->numel);
    return LT_OK;
}

lt_status lt_ew_eval_clip(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    const lt_tensor *x, *tmin = NULL, *tmax = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_ew_kind k = lt_ew_kind_of(x->dtype);
    if (k != LT_EW_F && k != LT_EW_S && k != LT_EW_U) return bad_type(ev, n, x->dtype);
    bool attr_form = n->opset < 11;
    if (!attr_form) {
        LT_TRY(clip_bound(ev, n, in, 1, x, &tmin));
        LT_TRY(clip_bound(ev, n, in, 2, x, &tmax));
    } else if (k != LT_EW_F) {
        return bad_type(ev, n, x->dtype);
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    if (k == LT_EW_F) {
        double lo = -INFINITY, hi = INFINITY;
        if (attr_form) {
            lo = lt_attr_float(n, "min", -FLT_MAX);
            hi = lt_attr_float(n, "max", FLT_MAX);
        }
        if (tmin) lo = lt_ew_ldf(tmin->dtype)(tmin->data, 0);
        if (tmax) hi = lt_ew_ldf(tmax->dtype)(tmax->data, 0);
        lt_ew_ldf_fn ld = lt_ew_ldf(x->dtype);
        lt_ew_stf_fn st = lt_ew_stf(x->dtype);
        for (int64_t i = 0; i < x->numel; i++) {
            double v = ld(x->data, i);
            if (v < lo) v = lo;
            if (v > hi) v = hi;
            st(y->data, i, v);
        }
        return LT_OK;
    }
    lt_ew_ldi_fn ld = lt_ew_ldi(x->dtype);
    lt_ew_sti_fn st = lt_ew_sti(x->dtype);
    bool uns = k == LT_EW_U;
    int64_t lo = tmin ? ld(tmin->data, 0) : 0, hi = tmax ? ld(tmax->data, 0) : 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t v = ld(x->data, i);
        if (uns) {
            if (tmin && (uint64_t)v < (uint64_t)lo) v = lo;
            if (tmax && (uint64_t)v > (uint64_t)hi) v = hi;
        } else {
            if (tmin && v < lo) v = lo;
            if (tmax && v > hi) v = hi;
        }
        st(y->data, i, v);
    }
    return LT_OK;
}

/* ---- Sum Mean Max Min: folded left to right in the output dtype, like the reference ---- */
lt_status lt_ew_eval_variadic(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    int cnt = n->n_in;
    if (cnt < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "needs at least one input");
    const lt_tensor **ts = lt_alloc(ev->ctx, (size_t)cnt * sizeof *ts, "variadic inputs");
    if (!ts) return LT_ERR_NOMEM;
    lt_status st = LT_OK;
    for (int k = 0; k < cnt && !st; k++) {
        st = lt_in_tensor(ev, n, in, k, &ts[k]);
        if (!st && ts[k]->dtype != ts[0]->dtype)
            st = lt_op_error(ev, n, LT_ERR_INVALID, "input %d has type %s, input 0 has %s", k,
                             lt_dtype_name(ts[k]->dtype), lt_dtype_name(ts[0]->dtype));
    }
    int rank = 0;
    int64_t dims[LT_MAX_RANK];
    if (!st) st = lt_broadcast_shapes(ev, n, cnt, ts, &rank, dims);
    lt_dtype dt = st ? LT_UNDEFINED : ts[0]->dtype;
    lt_ew_kind kind = lt_ew_kind_of(dt);
    if (!st && kind != LT_EW_F && kind != LT_EW_S && kind != LT_EW_U) st = bad_type(ev, n, dt);
    lt_tensor *y = NULL;
    if (!st) st = lt_out_new(ev, n, out, 0, dt, rank, dims, &y);
    if (st) {
        lt_mem_free(ts);
        return st;
    }
    int op = n->op;
    lt_ew_bc bc;
    if (kind == LT_EW_F) {
        lt_ew_ldf_fn ld = lt_ew_ldf(dt);
        lt_ew_stf_fn sf = lt_ew_stf(dt);
        for (int k = 0; k < cnt; k++) {
            lt_ew_bc_init_to(1, &ts[k], rank, dims, &bc);
            for (int64_t i = 0; i < bc.numel; i++, lt_ew_bc_next(&bc)) {
                double v = ld(ts[k]->data, bc.off[0]);
                if (k > 0) {
                    double acc = ld(y->data, i);
                    if (op == LT_OP_Sum || op == LT_OP_Mean) v = acc + v;
                    else if (isnan(acc) || isnan(v)) v = isnan(acc) ? acc : v;
                    else if (op == LT_OP_Max) v = acc > v ? acc : v;
                    else v = acc < v ? acc : v;
                }
                sf(y->data, i, v);
            }
        }
        if (op == LT_OP_Mean)
            for (int64_t i = 0; i < y->numel; i++) sf(y->data, i, ld(y->data, i) / cnt);
    } else {
        lt_ew_ldi_fn ld = lt_ew_ldi(dt);
        lt_ew_sti_fn si = lt_ew_sti(dt);
        bool uns = kind == LT_EW_U;
        for (int k = 0; k < cnt; k++) {
            lt_ew_bc_init_to(1, &ts[k], rank, dims, &bc);
            for (int64_t i = 0; i < bc.numel; i++, lt_ew_bc_next(&bc)) {
                int64_t v = ld(ts[k]->data, bc.off[0]);
                if (k > 0) {
                    int64_t acc = ld(y->data, i);
                    if (op == LT_OP_Sum || op == LT_OP_Mean) v = (int64_t)((uint64_t)acc + (uint64_t)v);
                    else if (op == LT_OP_Max) v = (uns ? (uint64_t)acc > (uint64_t)v : acc > v) ? acc : v;
                    else v = (uns ? (uint64_t)acc < (uint64_t)v : acc < v) ? acc : v;
                }
                si(y->data, i, v);
            }
        }
        if (op == LT_OP_Mean)
            for (int64_t i = 0; i < y->numel; i++) {
                int64_t v = ld(y->data, i);
                si(y->data, i, uns ? (int64_t)((uint64_t)v / (uint64_t)cnt) : v / cnt);
            }
    }
    lt_mem_free(ts);
    return LT_OK;
}
