/* elementwise_check.c — the shape, dtype-agreement and attribute rules of the elementwise family,
 * in one function (lt_ew_check) that both the infer and the eval hooks call: inference rejects a
 * model with the interpreter's own message whenever the input shapes are known, so the compiled
 * path (which trusts inferred shapes) never runs a node the interpreter would refuse.
 *
 * Dims and ranks may be unknown (< 0) when inference calls: a rule is checked as far as they are
 * known; eval always passes concrete shapes, so there every rule is checked in full.
 */
#include "elementwise_impl.h"

#include <stdio.h>
#include <string.h>

static bool is_float(lt_dtype dt) { return dt != LT_UNDEFINED && lt_ew_kind_of(dt) == LT_EW_F; }

/* "[2,3]" with unknown dims as "?" */
static const char *shape_str(const lt_ew_arg *a, char *buf, size_t size) {
    if (a->rank < 0) return "(unknown rank)";
    size_t k = 0;
    buf[k++] = '[';
    for (int i = 0; i < a->rank && k + 24 < size; i++) {
        if (i) buf[k++] = ',';
        if (a->dims[i] < 0) buf[k++] = '?';
        else k += (size_t)snprintf(buf + k, size - k, "%lld", (long long)a->dims[i]);
    }
    buf[k++] = ']';
    buf[k] = 0;
    return buf;
}

static lt_status broadcast_error(lt_ctx *ctx, const lt_node *n, const lt_ew_arg *a, const lt_ew_arg *b) {
    char s1[256], s2[256];
    return lt_node_error(ctx, n, LT_ERR_INVALID, "shapes %s and %s cannot be broadcast", shape_str(a, s1, sizeof s1),
                         shape_str(b, s2, sizeof s2));
}

/* Multidirectional (numpy) broadcast of the present inputs with known rank. */
static lt_status check_broadcast(lt_ctx *ctx, const lt_node *n, int count, const lt_ew_arg *args) {
    int r = 0;
    for (int k = 0; k < count; k++)
        if (args[k].present && args[k].rank > r) r = args[k].rank;
    if (r > LT_MAX_RANK) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "rank %d exceeds %d", r, LT_MAX_RANK);
    int64_t numel = 1; /* of the output, while every dim is known; -1 after an unknown one */
    for (int d = 0; d < r; d++) {
        int first = -1; /* the input that set the known size > 1 on this output dim */
        int64_t size = 1;
        bool unknown = false;
        for (int k = 0; k < count; k++) {
            const lt_ew_arg *a = &args[k];
            if (!a->present || a->rank < 0 || d < r - a->rank) continue;
            int64_t v = a->dims[d - (r - a->rank)];
            if (v < 0) unknown = true;
            if (v < 0 || v == 1) continue;
            if (first < 0) {
                first = k;
                size = v;
            } else if (v != size) {
                return broadcast_error(ctx, n, &args[first], a);
            }
        }
        int64_t od = first >= 0 ? size : unknown ? -1 : 1;
        if (od < 0) numel = -1;
        else if (numel >= 0 && !lt_mul_i64(numel, od, &numel))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "broadcast output has more elements than fit in 64 bits");
    }
    return LT_OK;
}

/* Opset < 7 with broadcast=1: B's dims must match A's from `axis` (default: aligned right). */
static lt_status check_legacy(lt_ctx *ctx, const lt_node *n, const lt_ew_arg *a, const lt_ew_arg *b) {
    if (a->rank < 0 || b->rank < 0) return LT_OK;
    int64_t axis = lt_attr_int(n, "axis", a->rank - b->rank);
    if (axis < 0) axis += a->rank;
    if (b->rank > a->rank || axis < 0 || axis + b->rank > a->rank)
        return lt_node_error(ctx, n, LT_ERR_INVALID,
                             "legacy broadcast: B of rank %d does not fit A of rank %d at axis %lld", b->rank,
                             a->rank, (long long)axis);
    for (int d = 0; d < b->rank; d++) {
        int64_t bv = b->dims[d], av = a->dims[axis + d];
        if (bv >= 0 && av >= 0 && bv != av && bv != 1)
            return lt_node_error(ctx, n, LT_ERR_INVALID,
                                 "legacy broadcast: B dim %d (%lld) does not match A dim %lld (%lld)", d,
                                 (long long)bv, (long long)(axis + d), (long long)av);
    }
    return LT_OK;
}

static lt_status same_dtype(lt_ctx *ctx, const lt_node *n, const lt_ew_arg *a, const lt_ew_arg *b) {
    if (!a->present || !b->present || a->dtype == LT_UNDEFINED || b->dtype == LT_UNDEFINED || a->dtype == b->dtype)
        return LT_OK;
    return lt_node_error(ctx, n, LT_ERR_INVALID, "inputs have different types %s and %s", lt_dtype_name(a->dtype),
                         lt_dtype_name(b->dtype));
}

static lt_status need_inputs(lt_ctx *ctx, const lt_node *n, int count, const lt_ew_arg *args, int required) {
    for (int i = 0; i < required; i++)
        if (i >= count || !args[i].present)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "required input %d is missing", i);
    return LT_OK;
}

/* PRelu: slope unidirectionally broadcastable to X; the older form, a 1-D slope that matches
 * exactly one dimension of X, applies along that dimension. */
static lt_status check_prelu(lt_ctx *ctx, const lt_node *n, const lt_ew_arg *x, const lt_ew_arg *s) {
    if (x->rank < 0 || s->rank < 0) return LT_OK;
    bool ok = s->rank <= x->rank;
    for (int d = 0; ok && d < s->rank; d++) {
        int64_t sv = s->dims[d], xv = x->dims[d + x->rank - s->rank];
        ok = sv < 0 || xv < 0 || sv == 1 || sv == xv;
    }
    if (!ok && s->rank == 1 && s->dims[0] >= 0) {
        int hits = 0;
        bool unknown = false;
        for (int d = 0; d < x->rank; d++) {
            if (x->dims[d] < 0) unknown = true;
            else if (x->dims[d] == s->dims[0]) hits++;
        }
        ok = hits == 1 || (unknown && hits == 0);
    }
    if (ok) return LT_OK;
    char s1[256], s2[256];
    return lt_node_error(ctx, n, LT_ERR_INVALID, "slope of shape %s cannot be broadcast to X of shape %s",
                         shape_str(s, s1, sizeof s1), shape_str(x, s2, sizeof s2));
}

/* Clip (opset >= 11): min and max, when given, hold one element of X's dtype. */
static lt_status check_clip(lt_ctx *ctx, const lt_node *n, int count, const lt_ew_arg *args) {
    if (n->opset < 11) return LT_OK;
    for (int i = 1; i < 3 && i < count; i++) {
        const lt_ew_arg *b = &args[i];
        if (!b->present) continue;
        const char *what = i == 1 ? "min" : "max";
        if (b->dtype != LT_UNDEFINED && args[0].dtype != LT_UNDEFINED && b->dtype != args[0].dtype)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "%s has type %s, input has %s", what,
                                 lt_dtype_name(b->dtype), lt_dtype_name(args[0].dtype));
        if (b->rank < 0) continue;
        int64_t numel = 1;
        bool known = true;
        for (int d = 0; d < b->rank; d++) {
            if (b->dims[d] < 0) known = false;
            else if (!lt_mul_i64(numel, b->dims[d], &numel)) numel = INT64_MAX;
        }
        if ((known || numel == 0) && numel != 1)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be a scalar (has %lld elements)", what,
                                 (long long)numel);
    }
    return LT_OK;
}

static lt_status check_round_mode(lt_ctx *ctx, const lt_node *n) {
    const char *m = lt_attr_string(n, "round_mode", "up");
    if (strcmp(m, "up") && strcmp(m, "down") && strcmp(m, "nearest"))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "unknown round_mode '%s'", m);
    return LT_OK;
}

/* Attributes of the unary ops. */
static lt_status check_unary_attrs(lt_ctx *ctx, const lt_node *n) {
    if (n->op == LT_OP_Gelu) {
        const char *a = lt_attr_string(n, "approximate", "none");
        if (strcmp(a, "tanh") != 0 && strcmp(a, "none") != 0)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "unknown approximate mode '%s'", a);
    }
    if (n->op == LT_OP_Celu && lt_attr_float(n, "alpha", 1.0f) == 0)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "alpha must not be 0");
    return LT_OK;
}

/* Two-input broadcasting ops: dtype agreement (not Pow), op attributes, legacy or numpy broadcast. */
static lt_status check_binary(lt_ctx *ctx, const lt_node *n, int count, const lt_ew_arg *args) {
    LT_TRY(need_inputs(ctx, n, count, args, 2));
    if (n->op != LT_OP_Pow) LT_TRY(same_dtype(ctx, n, &args[0], &args[1]));
    if (n->op == LT_OP_BitShift) {
        const char *dir = lt_attr_string(n, "direction", "");
        if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "direction must be LEFT or RIGHT, got '%s'", dir);
    }
    if (n->op == LT_OP_Mod && is_float(args[0].dtype) && lt_attr_int(n, "fmod", 0) == 0)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "fmod must be 1 for %s inputs", lt_dtype_name(args[0].dtype));
    if (n->opset < 7 && lt_attr_int(n, "broadcast", 0) != 0) return check_legacy(ctx, n, &args[0], &args[1]);
    return check_broadcast(ctx, n, 2, args);
}

lt_status lt_ew_check(lt_ctx *ctx, const lt_node *n, int count, const lt_ew_arg *args) {
    switch (n->op) {
    case LT_OP_Add: case LT_OP_Sub: case LT_OP_Mul: case LT_OP_Div: case LT_OP_Mod: case LT_OP_Pow:
    case LT_OP_Equal: case LT_OP_Greater: case LT_OP_GreaterOrEqual: case LT_OP_Less: case LT_OP_LessOrEqual:
    case LT_OP_And: case LT_OP_Or: case LT_OP_Xor: case LT_OP_BitwiseAnd: case LT_OP_BitwiseOr:
    case LT_OP_BitwiseXor: case LT_OP_BitShift:
        return check_binary(ctx, n, count, args);
    case LT_OP_PRelu:
        LT_TRY(need_inputs(ctx, n, count, args, 2));
        LT_TRY(same_dtype(ctx, n, &args[0], &args[1]));
        return check_prelu(ctx, n, &args[0], &args[1]);
    case LT_OP_Where:
        LT_TRY(need_inputs(ctx, n, count, args, 3));
        if (args[1].dtype != LT_UNDEFINED && args[2].dtype != LT_UNDEFINED && args[1].dtype != args[2].dtype)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "X and Y have different types %s and %s",
                                 lt_dtype_name(args[1].dtype), lt_dtype_name(args[2].dtype));
        return check_broadcast(ctx, n, 3, args);
    case LT_OP_Sum: case LT_OP_Mean: case LT_OP_Max: case LT_OP_Min:
        if (count < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "needs at least one input");
        LT_TRY(need_inputs(ctx, n, count, args, count));
        for (int k = 1; k < count; k++)
            if (args[k].dtype != LT_UNDEFINED && args[0].dtype != LT_UNDEFINED && args[k].dtype != args[0].dtype)
                return lt_node_error(ctx, n, LT_ERR_INVALID, "input %d has type %s, input 0 has %s", k,
                                     lt_dtype_name(args[k].dtype), lt_dtype_name(args[0].dtype));
        return check_broadcast(ctx, n, count, args);
    case LT_OP_Clip:
        LT_TRY(need_inputs(ctx, n, count, args, 1));
        return check_clip(ctx, n, count, args);
    case LT_OP_Cast:
        LT_TRY(need_inputs(ctx, n, count, args, 1));
        return check_round_mode(ctx, n);
    case LT_OP_CastLike:
        LT_TRY(need_inputs(ctx, n, count, args, 2));
        return check_round_mode(ctx, n);
    default:
        LT_TRY(need_inputs(ctx, n, count, args, 1));
        return check_unary_attrs(ctx, n);
    }
}

/* ---- the two callers' views of the inputs ---- */
#define EW_STACK_ARGS 4

static lt_status check_with(lt_ctx *ctx, const lt_node *n, lt_eval *ev, lt_datum **in) {
    int count = n->n_in;
    lt_ew_arg stack[EW_STACK_ARGS], *args = stack;
    if (count > EW_STACK_ARGS && !(args = lt_alloc(ctx, (size_t)count * sizeof *args, "elementwise checks")))
        return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    for (int i = 0; i < count && s == LT_OK; i++) {
        lt_ew_arg *a = &args[i];
        memset(a, 0, sizeof *a);
        a->rank = -1;
        a->dtype = LT_UNDEFINED;
        if (ev) {
            const lt_tensor *t;
            s = lt_in_tensor_opt(ev, n, in, i, &t);
            if (s || !t) continue;
            a->present = true;
            a->rank = t->rank;
            a->dtype = t->dtype;
            for (int d = 0; d < t->rank; d++) a->dims[d] = t->dims[d];
            continue;
        }
        const lt_type *t = lt_infer_in(n, i);
        if (!t) continue;
        a->present = true;
        if (t->kind != LT_TK_TENSOR) continue;
        a->dtype = t->dtype;
        if (t->rank < 0 || t->rank > LT_MAX_RANK) continue;
        a->rank = t->rank;
        for (int d = 0; d < t->rank; d++) a->dims[d] = t->dims ? t->dims[d].value : -1;
    }
    if (s == LT_OK) s = lt_ew_check(ctx, n, count, args);
    if (args != stack) lt_mem_free(args);
    return s;
}

lt_status lt_ew_check_eval(lt_eval *ev, const lt_node *n, lt_datum **in) { return check_with(ev->ctx, n, ev, in); }
lt_status lt_ew_check_infer(lt_infer *ic, const lt_node *n) { return check_with(ic->ctx, n, NULL, NULL); }
