/* compare.c — comparing computed values with expected ones, the way the ONNX backend test runner
 * does (numpy.testing.assert_allclose): same dtype and shape, |got - want| <= atol + rtol * |want|,
 * NaN matches NaN, an infinity only itself; integers, bools and strings exactly; sequences,
 * optionals and maps element by element. The reason names the first mismatching element (flat index
 * and multi-index) with both values, and how many elements differ.
 */
#include "cli.h"

#include <math.h>
#include <string.h>

static void multi_index(const lt_tensor *t, int64_t flat, char *buf, size_t n) {
    int64_t idx[LT_MAX_RANK];
    for (int k = t->rank - 1; k >= 0; k--) {
        int64_t d = t->dims[k] > 0 ? t->dims[k] : 1;
        idx[k] = flat % d;
        flat /= d;
    }
    size_t off = (size_t)snprintf(buf, n, "(");
    for (int k = 0; k < t->rank && off < n; k++)
        off += (size_t)snprintf(buf + off, n - off, "%s%lld", k ? "," : "", (long long)idx[k]);
    if (off < n) snprintf(buf + off, n - off, ")");
}

static bool close_enough(double a, double b, double rtol, double atol) {
    if (isnan(b)) return isnan(a);
    if (isinf(b)) return a == b;
    if (!isfinite(a)) return false;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

/* Element i of t as (re, im) doubles. */
static void load_c(const lt_tensor *t, int64_t i, double *re, double *im) {
    if (t->dtype == LT_COMPLEX64) {
        const float *p = t->data;
        *re = p[2 * i];
        *im = p[2 * i + 1];
    } else if (t->dtype == LT_COMPLEX128) {
        const double *p = t->data;
        *re = p[2 * i];
        *im = p[2 * i + 1];
    } else {
        *re = lt_load_f64(t->data, t->dtype, i);
        *im = 0;
    }
}

static bool compare_tensor(const lt_tensor *g, const lt_tensor *w, double rtol, double atol, const char *what,
                           char *why, size_t n) {
    char a[256], b[256];
    if (g->dtype != w->dtype) {
        snprintf(why, n, "%s: dtype %s, expected %s", what, lt_dtype_name(g->dtype), lt_dtype_name(w->dtype));
        return false;
    }
    bool same_shape = g->rank == w->rank;
    for (int k = 0; same_shape && k < g->rank; k++) same_shape = g->dims[k] == w->dims[k];
    if (!same_shape) {
        snprintf(why, n, "%s: shape %s, expected %s", what, lt_shape_str(g->rank, g->dims, a, sizeof a),
                 lt_shape_str(w->rank, w->dims, b, sizeof b));
        return false;
    }
    lt_dclass cls = lt_dtype_get(w->dtype)->cls;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < w->numel; i++) {
        bool ok;
        switch (cls) {
        case LT_DC_STRING: {
            const char *x = ((char *const *)g->data)[i], *y = ((char *const *)w->data)[i];
            ok = strcmp(x ? x : "", y ? y : "") == 0;
            break;
        }
        case LT_DC_FLOAT:
            ok = close_enough(lt_load_f64(g->data, g->dtype, i), lt_load_f64(w->data, w->dtype, i), rtol, atol);
            break;
        case LT_DC_COMPLEX: {
            double gr, gi, wr, wi;
            load_c(g, i, &gr, &gi);
            load_c(w, i, &wr, &wi);
            ok = close_enough(gr, wr, rtol, atol) && close_enough(gi, wi, rtol, atol);
            break;
        }
        case LT_DC_UINT:
            ok = lt_load_u64(g->data, g->dtype, i) == lt_load_u64(w->data, w->dtype, i);
            break;
        default:
            ok = lt_load_i64(g->data, g->dtype, i) == lt_load_i64(w->data, w->dtype, i);
            break;
        }
        if (!ok) {
            if (first < 0) first = i;
            bad++;
        }
    }
    if (!bad) return true;
    char mi[256], gv[192], wv[192];
    multi_index(w, first, mi, sizeof mi);
    switch (cls) {
    case LT_DC_STRING:
        snprintf(gv, sizeof gv, "\"%.80s\"", ((char *const *)g->data)[first]);
        snprintf(wv, sizeof wv, "\"%.80s\"", ((char *const *)w->data)[first]);
        break;
    case LT_DC_FLOAT:
        snprintf(gv, sizeof gv, "%.9g", lt_load_f64(g->data, g->dtype, first));
        snprintf(wv, sizeof wv, "%.9g", lt_load_f64(w->data, w->dtype, first));
        break;
    case LT_DC_COMPLEX: {
        double r, im;
        load_c(g, first, &r, &im);
        snprintf(gv, sizeof gv, "(%.9g%+.9gj)", r, im);
        load_c(w, first, &r, &im);
        snprintf(wv, sizeof wv, "(%.9g%+.9gj)", r, im);
        break;
    }
    case LT_DC_UINT:
        snprintf(gv, sizeof gv, "%llu", (unsigned long long)lt_load_u64(g->data, g->dtype, first));
        snprintf(wv, sizeof wv, "%llu", (unsigned long long)lt_load_u64(w->data, w->dtype, first));
        break;
    default:
        snprintf(gv, sizeof gv, "%lld", (long long)lt_load_i64(g->data, g->dtype, first));
        snprintf(wv, sizeof wv, "%lld", (long long)lt_load_i64(w->data, w->dtype, first));
        break;
    }
    snprintf(why, n, "%s: %lld of %lld elements differ; first at index %lld %s: got %s, expected %s", what,
             (long long)bad, (long long)w->numel, (long long)first, mi, gv, wv);
    return false;
}

static const char *kind_name(lt_datum_kind k) {
    switch (k) {
    case LT_DK_TENSOR: return "tensor";
    case LT_DK_SEQUENCE: return "sequence";
    case LT_DK_OPTIONAL: return "optional";
    case LT_DK_MAP: return "map";
    }
    return "?";
}

bool cli_compare_datum(const lt_datum *got, const lt_datum *want, double rtol, double atol, const char *what,
                       char *why, size_t why_size) {
    if (!got || !want) {
        snprintf(why, why_size, "%s: %s, expected %s", what, got ? "a value" : "no value", want ? "a value" : "none");
        return !got && !want;
    }
    /* An optional holding a value compares like the value (the runner unwraps optionals). */
    if (got->kind == LT_DK_OPTIONAL && want->kind != LT_DK_OPTIONAL && got->value)
        return cli_compare_datum(got->value, want, rtol, atol, what, why, why_size);
    if (want->kind == LT_DK_OPTIONAL && got->kind != LT_DK_OPTIONAL && want->value)
        return cli_compare_datum(got, want->value, rtol, atol, what, why, why_size);
    if (got->kind != want->kind) {
        snprintf(why, why_size, "%s: got a %s, expected a %s", what, kind_name(got->kind), kind_name(want->kind));
        return false;
    }
    char sub[256];
    switch (want->kind) {
    case LT_DK_TENSOR:
        return compare_tensor(got->tensor, want->tensor, rtol, atol, what, why, why_size);
    case LT_DK_SEQUENCE:
        if (got->n != want->n) {
            snprintf(why, why_size, "%s: sequence of %d, expected %d", what, got->n, want->n);
            return false;
        }
        for (int i = 0; i < want->n; i++) {
            snprintf(sub, sizeof sub, "%s[%d]", what, i);
            if (!cli_compare_datum(got->items[i], want->items[i], rtol, atol, sub, why, why_size)) return false;
        }
        return true;
    case LT_DK_OPTIONAL:
        if (!got->value != !want->value) {
            snprintf(why, why_size, "%s: optional is %s, expected %s", what, got->value ? "present" : "empty",
                     want->value ? "present" : "empty");
            return false;
        }
        return !want->value || cli_compare_datum(got->value, want->value, rtol, atol, what, why, why_size);
    case LT_DK_MAP:
        if (!got->keys || !want->keys || !got->values || !want->values) {
            snprintf(why, why_size, "%s: incomplete map", what);
            return false;
        }
        snprintf(sub, sizeof sub, "%s.keys", what);
        if (!compare_tensor(got->keys, want->keys, 0, 0, sub, why, why_size)) return false;
        snprintf(sub, sizeof sub, "%s.values", what);
        return compare_tensor(got->values, want->values, rtol, atol, sub, why, why_size);
    }
    return false;
}
