/* bind.c — binding user data to model inputs: checking a tensor against an input's declared type
 * (symbolic dims bind by name and must agree across inputs), working out the concrete shape of an
 * input that has no data, and the deterministic fills (random / zeros / ones / ramp).
 */
#include "io.h"

#include <stdio.h>
#include <string.h>

static const char *binding_get(const lt_dim_binding *b, const char *name, int64_t *v) {
    for (int i = 0; b && i < b->n; i++)
        if (strcmp(b->names[i], name) == 0) { *v = b->values[i]; return b->names[i]; }
    return NULL;
}

lt_status lt_io_check_input(lt_ctx *ctx, const lt_value *v, const lt_tensor *t, lt_dim_binding *b) {
    const lt_type *ty = &v->type;
    char want[512], got[256];
    if (ty->kind != LT_TK_TENSOR && ty->kind != LT_TK_UNKNOWN)
        return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected %s, got a tensor %s", v->name,
                        lt_type_str(ty, want, sizeof want), lt_tensor_describe(t, got, sizeof got));
    if (ty->kind == LT_TK_UNKNOWN) return LT_OK;
    lt_type_str(ty, want, sizeof want);
    lt_tensor_describe(t, got, sizeof got);
    if (ty->dtype != LT_UNDEFINED && ty->dtype != t->dtype)
        return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected dtype %s (%s), got %s", v->name,
                        lt_dtype_name(ty->dtype), want, got);
    if (ty->rank < 0) return LT_OK;
    if (ty->rank != t->rank)
        return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected rank %d (%s), got rank %d (%s)", v->name,
                        ty->rank, want, t->rank, got);
    for (int k = 0; k < ty->rank; k++) {
        const lt_dim *d = &ty->dims[k];
        if (d->value >= 0) {
            if (d->value != t->dims[k])
                return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected shape %s, got %s (axis %d: %lld vs %lld)",
                                v->name, want, got, k, (long long)d->value, (long long)t->dims[k]);
        } else if (d->param && d->param[0] && b) {
            int64_t have;
            if (binding_get(b, d->param, &have)) {
                if (have != t->dims[k])
                    return lt_error(ctx, LT_ERR_INVALID,
                                    "input '%s': dim '%s' (axis %d) is %lld but an earlier input bound it to %lld "
                                    "(expected %s, got %s)", v->name, d->param, k, (long long)t->dims[k],
                                    (long long)have, want, got);
            } else if (b->n < (int)(sizeof b->names / sizeof b->names[0])) {
                b->names[b->n] = d->param;
                b->values[b->n] = t->dims[k];
                b->n++;
            }
        }
    }
    return LT_OK;
}

lt_status lt_io_input_shape(lt_ctx *ctx, const lt_value *v, const lt_dim_binding *b, int *rank,
                            int64_t *dims) {
    const lt_type *ty = &v->type;
    if (ty->kind != LT_TK_TENSOR)
        return lt_error(ctx, LT_ERR_USAGE, "input '%s' is not a tensor (%s): give its data with --input", v->name,
                        lt_type_str(ty, (char[256]){0}, 256));
    if (ty->rank < 0)
        return lt_error(ctx, LT_ERR_USAGE, "input '%s' has an unknown rank: give its shape with --shapes %s:DIMS "
                        "or its data with --input", v->name, v->name);
    if (ty->rank > LT_MAX_RANK)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "input '%s': rank %d exceeds %d", v->name, ty->rank, LT_MAX_RANK);
    for (int k = 0; k < ty->rank; k++) {
        const lt_dim *d = &ty->dims[k];
        if (d->value >= 0) { dims[k] = d->value; continue; }
        if (d->param && d->param[0]) {
            if (binding_get(b, d->param, &dims[k])) continue;
            return lt_error(ctx, LT_ERR_USAGE, "input '%s': dim '%s' (axis %d) is not bound: give --dim %s=<size> "
                            "or --shapes %s:DIMS", v->name, d->param, k, d->param, v->name);
        }
        return lt_error(ctx, LT_ERR_USAGE, "input '%s': axis %d has an unknown size: give --shapes %s:DIMS",
                        v->name, k, v->name);
    }
    *rank = ty->rank;
    return LT_OK;
}

bool lt_fill_parse(const char *s, lt_fill_kind *out) {
    static const char *const names[] = {"random", "zeros", "ones", "ramp"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) { *out = (lt_fill_kind)i; return true; }
    return false;
}

/* splitmix64 */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

lt_status lt_io_fill_tensor(lt_ctx *ctx, lt_dtype dt, int rank, const int64_t *dims, lt_fill_kind k,
                            uint64_t *rng, lt_tensor **out) {
    lt_tensor *t = NULL;
    LT_TRY(lt_tensor_new(ctx, dt, rank, dims, &t));
    lt_dclass cls = lt_dtype_get(dt)->cls;
    int64_t n = t->numel;
    for (int64_t i = 0; i < n; i++) {
        if (cls == LT_DC_STRING) {
            char s[32];
            int len = k == LT_FILL_ZEROS ? 0 : k == LT_FILL_ONES ? snprintf(s, sizeof s, "1")
                    : snprintf(s, sizeof s, "%lld", (long long)(k == LT_FILL_RAMP ? i : (int64_t)(next_u64(rng) % 1000)));
            lt_status st = lt_tensor_set_string(ctx, t, i, len ? s : "", (size_t)len);
            if (st != LT_OK) { lt_tensor_release(t); return st; }
            continue;
        }
        switch (k) {
        case LT_FILL_ZEROS: break;
        case LT_FILL_ONES:
            if (cls == LT_DC_FLOAT || cls == LT_DC_COMPLEX) lt_store_f64(t->data, dt, i, 1.0);
            else lt_store_i64(t->data, dt, i, 1);
            break;
        case LT_FILL_RAMP:
            if (cls == LT_DC_FLOAT || cls == LT_DC_COMPLEX) lt_store_f64(t->data, dt, i, (double)i / (double)n);
            else if (cls == LT_DC_BOOL) lt_store_i64(t->data, dt, i, i & 1);
            else lt_store_i64(t->data, dt, i, i);
            break;
        case LT_FILL_RANDOM: {
            uint64_t r = next_u64(rng);
            if (cls == LT_DC_FLOAT || cls == LT_DC_COMPLEX)
                lt_store_f64(t->data, dt, i, (double)(r >> 11) * (1.0 / 9007199254740992.0));
            else if (cls == LT_DC_BOOL) lt_store_i64(t->data, dt, i, (int64_t)(r >> 63));
            else lt_store_i64(t->data, dt, i, (int64_t)(r % 10));
            break;
        }
        }
    }
    *out = t;
    return LT_OK;
}
