/* misc.c — the misc family's table and its string and feature ops: StringConcat, StringSplit,
 * StringNormalizer, RegexFullMatch, TfIdfVectorizer, LabelEncoder, ArrayFeatureExtractor,
 * Binarizer, and the op table. Random and training ops live in misc_train.c, the other ai.onnx.ml
 * ops in misc_ml.c and misc_ml_svm_tree.c, the regex engine in misc_regex.c (hooks declared in misc_impl.h).
 *
 * Strings are bytes (UTF-8 passes through untouched); case changes and case-insensitive
 * comparisons are ASCII-only. Semantics follow the ONNX spec, checked against onnx's reference:
 * StringSplit splits like Python's str.split (no delimiter: runs of blanks, leading/trailing ones
 * dropped), StringNormalizer removes whole elements equal to a stopword.
 */
#include "misc_impl.h"

#include "../elementwise/elementwise_impl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *str_at(const lt_tensor *t, int64_t i) { return ((char *const *)t->data)[i]; }

static lt_status need_dtype(lt_eval *ev, const lt_node *n, const lt_tensor *t, lt_dtype dt, const char *what) {
    if (t->dtype != dt)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be %s, got %s", what, lt_dtype_name(dt), lt_dtype_name(t->dtype));
    return LT_OK;
}

/* ---- StringConcat ---- */
static lt_status infer_strconcat(lt_infer *ic, lt_node *n) { return lt_infer_broadcast(ic, n, LT_STRING); }

static lt_status eval_strconcat(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *a, *b;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &a));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &b));
    LT_TRY(need_dtype(ev, n, a, LT_STRING, "X"));
    LT_TRY(need_dtype(ev, n, b, LT_STRING, "Y"));
    const lt_tensor *ts[2] = {a, b};
    lt_ew_bc bc;
    LT_TRY(lt_ew_bc_init(ev, n, 2, ts, &bc));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_STRING, bc.rank, bc.dims, &y));
    for (int64_t i = 0; i < bc.numel; i++, lt_ew_bc_next(&bc)) {
        const char *x = str_at(a, bc.off[0]), *z = str_at(b, bc.off[1]);
        size_t lx = strlen(x), lz = strlen(z);
        char *s = lt_alloc(ev->ctx, lx + lz + 1, "string");
        if (!s) return LT_ERR_NOMEM;
        memcpy(s, x, lx);
        memcpy(s + lx, z, lz + 1);
        char **slot = &((char **)y->data)[i];
        lt_mem_free(*slot);
        *slot = s;
    }
    return LT_OK;
}

/* ---- StringSplit ---- */
static bool py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* Split s like Python's s.split(delim or None, maxsplit); with y non-NULL, store the pieces at
 * y[base..]. Returns the number of pieces, or -1 on allocation failure. */
static int64_t split_one(lt_ctx *ctx, const char *s, const char *delim, int64_t maxsplit, lt_tensor *y, int64_t base) {
    int64_t count = 0;
    size_t len = strlen(s);
#define PIECE(p, l)                                                                                \
    do {                                                                                           \
        if (y && lt_tensor_set_string(ctx, y, base + count, (p), (l))) return -1;                  \
        count++;                                                                                   \
    } while (0)
    if (!delim || !*delim) {
        size_t i = 0;
        while (maxsplit < 0 || count < maxsplit) {
            while (i < len && py_space((unsigned char)s[i])) i++;
            if (i == len) break;
            size_t j = i;
            while (i < len && !py_space((unsigned char)s[i])) i++;
            PIECE(s + j, i - j);
        }
        while (i < len && py_space((unsigned char)s[i])) i++;
        if (i < len) PIECE(s + i, len - i);
        return count;
    }
    size_t dl = strlen(delim), i = 0;
    for (;;) {
        const char *hit = (maxsplit < 0 || count < maxsplit) ? strstr(s + i, delim) : NULL;
        if (!hit) {
            PIECE(s + i, len - i);
            return count;
        }
        PIECE(s + i, (size_t)(hit - (s + i)));
        i = (size_t)(hit - s) + dl;
    }
#undef PIECE
}

static lt_status infer_strsplit(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank + 1 > LT_MAX_RANK) {
        LT_TRY(lt_infer_set(ic, n, 0, LT_STRING, -1, NULL));
        return lt_infer_set(ic, n, 1, LT_INT64, -1, NULL);
    }
    lt_dim d[LT_MAX_RANK];
    for (int k = 0; k < t->rank; k++) d[k] = t->dims[k];
    d[t->rank] = (lt_dim){-1, NULL};
    LT_TRY(lt_infer_set(ic, n, 0, LT_STRING, t->rank + 1, d));
    return lt_infer_set(ic, n, 1, LT_INT64, t->rank, t->dims);
}

static lt_status eval_strsplit(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(need_dtype(ev, n, x, LT_STRING, "X"));
    if (x->rank + 1 > LT_MAX_RANK) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input rank %d is too large", x->rank);
    const char *delim = lt_attr_string(n, "delimiter", NULL);
    int64_t maxsplit = lt_attr_int(n, "maxsplit", -1);
    lt_tensor *z;
    LT_TRY(lt_out_new(ev, n, out, 1, LT_INT64, x->rank, x->dims, &z));
    int64_t most = 0, *zc = z->data;
    for (int64_t i = 0; i < x->numel; i++) {
        zc[i] = split_one(ev->ctx, str_at(x, i), delim, maxsplit, NULL, 0);
        if (zc[i] > most) most = zc[i];
    }
    int64_t dims[LT_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
    dims[x->rank] = most;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_STRING, x->rank + 1, dims, &y));
    for (int64_t i = 0; i < x->numel; i++)
        if (split_one(ev->ctx, str_at(x, i), delim, maxsplit, y, i * most) < 0) return LT_ERR_NOMEM;
    return LT_OK;
}

/* ---- StringNormalizer ---- */
static lt_status infer_strnorm(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    int rank = t && t->kind == LT_TK_TENSOR ? t->rank : -1;
    if (rank == 2) {
        lt_dim d[2] = {{1, NULL}, {-1, NULL}};
        return lt_infer_set(ic, n, 0, LT_STRING, 2, d);
    }
    return lt_infer_set(ic, n, 0, LT_STRING, rank == 1 ? 1 : -1, NULL);
}

static lt_status eval_strnorm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(need_dtype(ev, n, x, LT_STRING, "X"));
    if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1)))
        return lt_op_error(ev, n, LT_ERR_INVALID, "input must have shape [C] or [1, C]");
    const char *action = lt_attr_string(n, "case_change_action", "NONE");
    int mode = strcmp(action, "LOWER") == 0 ? 1 : strcmp(action, "UPPER") == 0 ? 2 : 0;
    if (!mode && strcmp(action, "NONE") != 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "unknown case_change_action '%s'", action);
    bool sensitive = lt_attr_int(n, "is_case_sensitive", 0) != 0;
    const char *const *stops;
    int nstops = lt_attr_strings(n, "stopwords", &stops);
    uint8_t *keep = lt_calloc(ev->ctx, (size_t)(x->numel ? x->numel : 1), 1, "stopword mask");
    if (!keep) return LT_ERR_NOMEM;
    int64_t kept = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        bool stop = false;
        for (int k = 0; k < nstops && !stop; k++)
            stop = sensitive ? strcmp(str_at(x, i), stops[k]) == 0 : strcasecmp(str_at(x, i), stops[k]) == 0;
        keep[i] = !stop;
        kept += keep[i];
    }
    int64_t dims[2] = {1, kept ? kept : 1};
    if (x->rank == 1) dims[0] = kept ? kept : 1;
    lt_tensor *y;
    lt_status st = lt_out_new(ev, n, out, 0, LT_STRING, x->rank, dims, &y);
    for (int64_t i = 0, o = 0; !st && i < x->numel; i++) {
        if (!keep[i]) continue;
        const char *s = str_at(x, i);
        size_t l = strlen(s);
        st = lt_tensor_set_string(ev->ctx, y, o, s, l);
        if (st) break;
        char *d = ((char **)y->data)[o++];
        for (size_t c = 0; c < l; c++)
            d[c] = (char)(mode == 1 ? tolower((unsigned char)d[c]) : mode == 2 ? toupper((unsigned char)d[c]) : d[c]);
    }
    lt_mem_free(keep);
    return st;
}

/* ---- RegexFullMatch ---- */
static lt_status infer_regex(lt_infer *ic, lt_node *n) { return lt_ew_infer_unary_dt(ic, n, LT_BOOL); }

static lt_status eval_regex(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(need_dtype(ev, n, x, LT_STRING, "X"));
    const lt_attr *pa = lt_node_attr(n, "pattern");
    if (!pa || pa->type != LT_AT_STRING) return lt_op_error(ev, n, LT_ERR_INVALID, "missing 'pattern' attribute");
    lt_regex *re;
    lt_ctx tmp = {0};
    if (lt_regex_compile(&tmp, pa->s, (size_t)pa->s_len, &re))
        return lt_op_error(ev, n, tmp.status, "%s", tmp.msg);
    lt_tensor *y;
    lt_status st = lt_out_new(ev, n, out, 0, LT_BOOL, x->rank, x->dims, &y);
    for (int64_t i = 0; !st && i < x->numel; i++) {
        const char *s = str_at(x, i);
        int r = lt_regex_full_match(re, s, strlen(s));
        if (r < 0) st = lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory matching element %lld", (long long)i);
        else ((uint8_t *)y->data)[i] = (uint8_t)r;
    }
    lt_regex_free(re);
    return st;
}

/* ---- TfIdfVectorizer ---- */
typedef struct tfidf {
    const lt_node *n;
    bool strings;
    const int64_t *pool_i;
    const char *const *pool_s;
    int64_t pool_n;
    const int64_t *counts; /* ngram_counts: start of each gram size in the pool */
    int n_counts;
    const int64_t *indexes; /* ngram_indexes: output column of each gram */
    int n_indexes;
    int64_t out_size;
} tfidf;

/* Index (0-based) of the gram equal to the n items x[start], x[start+d], ... of size n, or -1.
 * Later duplicates win, like the reference's map. */
static int64_t tfidf_find(const tfidf *t, const lt_tensor *x, int64_t row_off, int64_t start, int64_t d, int size) {
    if (size < 1 || size > t->n_counts) return -1;
    int64_t lo = t->counts[size - 1];
    int64_t hi = size < t->n_counts ? t->counts[size] : t->pool_n;
    int64_t id = 0; /* grams before this size */
    for (int k = 0; k < size - 1; k++) {
        int64_t e = k + 1 < t->n_counts ? t->counts[k + 1] : t->pool_n;
        id += (e - t->counts[k]) / (k + 1);
    }
    int64_t found = -1;
    for (int64_t g = lo, gi = 0; g + size <= hi; g += size, gi++) {
        bool eq = true;
        for (int k = 0; k < size && eq; k++) {
            int64_t xi = row_off + start + k * d;
            if (t->strings) eq = strcmp(str_at(x, xi), t->pool_s[g + k]) == 0;
            else eq = lt_load_i64(x->data, x->dtype, xi) == t->pool_i[g + k];
        }
        if (eq) found = id + gi;
    }
    return found;
}

static lt_status tfidf_setup(const lt_node *n, tfidf *t, char *err, size_t errn) {
    memset(t, 0, sizeof *t);
    t->n = n;
    int ni = lt_attr_ints(n, "pool_int64s", &t->pool_i);
    int ns = lt_attr_strings(n, "pool_strings", &t->pool_s);
    t->strings = ns > 0;
    t->pool_n = t->strings ? ns : ni;
    t->n_counts = lt_attr_ints(n, "ngram_counts", &t->counts);
    t->n_indexes = lt_attr_ints(n, "ngram_indexes", &t->indexes);
    int64_t total = 0;
    for (int k = 0; k < t->n_counts; k++) {
        int64_t e = k + 1 < t->n_counts ? t->counts[k + 1] : t->pool_n;
        if (t->counts[k] < 0 || e < t->counts[k] || e > t->pool_n) {
            snprintf(err, errn, "ngram_counts[%d..%d] = [%lld, %lld) is not a range of the %lld-entry pool", k, k + 1,
                     (long long)t->counts[k], (long long)e, (long long)t->pool_n);
            return LT_ERR_INVALID;
        }
        total += (e - t->counts[k]) / (k + 1);
    }
    if (total > t->n_indexes) {
        snprintf(err, errn, "ngram_indexes has %d entries, the pool has %lld n-grams", t->n_indexes, (long long)total);
        return LT_ERR_INVALID;
    }
    t->out_size = 0;
    for (int k = 0; k < t->n_indexes; k++) {
        if (t->indexes[k] < 0 || t->indexes[k] > ((int64_t)1 << 40)) {
            snprintf(err, errn, "ngram_indexes[%d] = %lld is out of range", k, (long long)t->indexes[k]);
            return LT_ERR_INVALID;
        }
        if (t->indexes[k] + 1 > t->out_size) t->out_size = t->indexes[k] + 1;
    }
    return LT_OK;
}

static lt_status infer_tfidf(lt_infer *ic, lt_node *n) {
    tfidf t;
    char err[256];
    if (tfidf_setup(n, &t, err, sizeof err)) return lt_infer_error(ic, n, "%s", err);
    const lt_type *x = lt_infer_in(n, 0);
    if (x && x->kind == LT_TK_TENSOR && x->rank == 2) {
        lt_dim d[2] = {x->dims[0], {t.out_size, NULL}};
        return lt_infer_set(ic, n, 0, LT_FLOAT, 2, d);
    }
    if (x && x->kind == LT_TK_TENSOR && x->rank >= 0 && x->rank <= 1) {
        lt_dim d[1] = {{t.out_size, NULL}};
        return lt_infer_set(ic, n, 0, LT_FLOAT, 1, d);
    }
    return lt_infer_set(ic, n, 0, LT_FLOAT, -1, NULL);
}

static lt_status eval_tfidf(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    tfidf t;
    char err[256];
    if (tfidf_setup(n, &t, err, sizeof err)) return lt_op_error(ev, n, LT_ERR_INVALID, "%s", err);
    if (t.strings ? x->dtype != LT_STRING : !lt_dtype_is_int(x->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "input type %s does not match the pool (%s)", lt_dtype_name(x->dtype),
                           t.strings ? "strings" : "integers");
    if (x->rank > 2) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have shape [C] or [B, C]");
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, cols = x->rank == 0 ? 1 : x->dims[x->rank - 1];
    int64_t minn = lt_attr_int(n, "min_gram_length", 1), maxn = lt_attr_int(n, "max_gram_length", 1);
    int64_t skip = lt_attr_int(n, "max_skip_count", 0);
    const char *mode = lt_attr_string(n, "mode", "TF");
    int wmode = strcmp(mode, "TF") == 0 ? 0 : strcmp(mode, "IDF") == 0 ? 1 : strcmp(mode, "TFIDF") == 0 ? 2 : -1;
    if (wmode < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown mode '%s'", mode);
    if (minn < 1 || maxn < minn || skip < 0 || maxn > 64)
        return lt_op_error(ev, n, LT_ERR_INVALID, "bad n-gram lengths [%lld, %lld] or skip count %lld", (long long)minn,
                           (long long)maxn, (long long)skip);
    const float *w;
    int nw = lt_attr_floats(n, "weights", &w);
    int64_t dims[2] = {rows, t.out_size};
    lt_tensor *y;
    if (x->rank == 2) LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, 2, dims, &y));
    else LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, 1, &dims[1], &y));
    float *yp = y->data;
    for (int64_t r = 0; r < rows; r++) {
        int64_t row_off = r * cols;
        int64_t start_size = minn;
        /* a gap of cols or more fits no n-gram of two or more: stop there (a huge max_skip_count
         * would otherwise loop for ever) */
        int64_t last_d = skip < cols ? skip + 1 : cols;
        for (int64_t d = 1; d <= last_d; d++) {
            for (int64_t s0 = 0; s0 < cols; s0++) {
                for (int64_t size = start_size; size <= maxn; size++) {
                    if (s0 + d * (size - 1) >= cols) break;
                    int64_t id = tfidf_find(&t, x, row_off, s0, d, (int)size);
                    if (id >= 0) yp[r * t.out_size + t.indexes[id]] += 1.0f;
                }
            }
            if (start_size == 1) { /* unigrams are counted once, whatever the skip */
                start_size = 2;
                if (start_size > maxn) break;
            }
        }
        for (int64_t c = 0; c < t.out_size; c++) {
            float *v = &yp[r * t.out_size + c];
            if (wmode == 1) *v = *v > 0 ? (nw ? (c < nw ? w[c] : 0.0f) : 1.0f) : 0.0f;
            else if (wmode == 2 && nw) *v = (c < nw ? w[c] : 0.0f) * *v;
        }
    }
    return LT_OK;
}

/* ---- LabelEncoder ---- */
typedef enum { LE_STR, LE_INT, LE_FLT } le_kind;
typedef struct le_list {
    le_kind kind;
    int64_t n;
    const char *const *s;
    const int64_t *i;
    const float *f;
    const lt_tensor *t; /* tensor form */
} le_list;

static double le_f(const le_list *l, int64_t k) { return l->t ? lt_load_f64(l->t->data, l->t->dtype, k) : l->f[k]; }
static int64_t le_i(const le_list *l, int64_t k) { return l->t ? lt_load_i64(l->t->data, l->t->dtype, k) : l->i[k]; }
static const char *le_s(const le_list *l, int64_t k) { return l->t ? str_at(l->t, k) : l->s[k]; }

static bool le_read(const lt_node *n, const char *prefix, le_list *l) {
    char name[64];
    memset(l, 0, sizeof *l);
    snprintf(name, sizeof name, "%s_tensor", prefix);
    const lt_tensor *t = lt_attr_tensor(n, name);
    if (t) {
        l->t = t;
        l->n = t->numel;
        l->kind = t->dtype == LT_STRING ? LE_STR : lt_dtype_is_float(t->dtype) ? LE_FLT : LE_INT;
        return true;
    }
    snprintf(name, sizeof name, "%s_strings", prefix);
    if (lt_node_attr(n, name)) { l->kind = LE_STR; l->n = lt_attr_strings(n, name, &l->s); return true; }
    snprintf(name, sizeof name, "%s_int64s", prefix);
    if (lt_node_attr(n, name)) { l->kind = LE_INT; l->n = lt_attr_ints(n, name, &l->i); return true; }
    snprintf(name, sizeof name, "%s_floats", prefix);
    if (lt_node_attr(n, name)) { l->kind = LE_FLT; l->n = lt_attr_floats(n, name, &l->f); return true; }
    return false;
}

static lt_dtype le_out_dtype(const lt_node *n, const lt_type *xt) {
    le_list v;
    if (n->opset < 2 || !le_read(n, "values", &v)) { /* opset 1: string <-> int64 through classes_strings */
        if (!xt) return LT_UNDEFINED;
        return xt->dtype == LT_STRING ? LT_INT64 : LT_STRING;
    }
    if (v.t) return v.t->dtype;
    return v.kind == LE_STR ? LT_STRING : v.kind == LE_INT ? LT_INT64 : LT_FLOAT;
}

static lt_status infer_labelenc(lt_infer *ic, lt_node *n) {
    return lt_ew_infer_unary_dt(ic, n, le_out_dtype(n, lt_infer_in(n, 0)));
}

/* ai.onnx.ml opset 1: classes_strings[i] <-> i. */
static lt_status eval_labelenc_v1(lt_eval *ev, const lt_node *n, const lt_tensor *x, lt_datum **out) {
    const char *const *cls;
    int ncls = lt_attr_strings(n, "classes_strings", &cls);
    bool xs = x->dtype == LT_STRING;
    if (!xs && !lt_dtype_is_int(x->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "input type %s is not supported", lt_dtype_name(x->dtype));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, xs ? LT_INT64 : LT_STRING, x->rank, x->dims, &y));
    int64_t dint = lt_attr_int(n, "default_int64", -1);
    const char *dstr = lt_attr_string(n, "default_string", "_Unused");
    for (int64_t i = 0; i < x->numel; i++) {
        if (xs) {
            int64_t hit = dint;
            for (int k = 0; k < ncls; k++)
                if (strcmp(cls[k], str_at(x, i)) == 0) { hit = k; break; }
            ((int64_t *)y->data)[i] = hit;
        } else {
            int64_t v = lt_load_i64(x->data, x->dtype, i);
            const char *s = v >= 0 && v < ncls ? cls[v] : dstr;
            LT_TRY(lt_tensor_set_string(ev->ctx, y, i, s, strlen(s)));
        }
    }
    return LT_OK;
}

static lt_status eval_labelenc(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (n->opset < 2) return eval_labelenc_v1(ev, n, x, out);
    le_list keys, vals;
    if (!le_read(n, "keys", &keys) || !le_read(n, "values", &vals))
        return lt_op_error(ev, n, LT_ERR_INVALID, "missing keys_* or values_* attribute");
    if (keys.n != vals.n)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%lld keys but %lld values", (long long)keys.n, (long long)vals.n);
    bool xs = x->dtype == LT_STRING;
    lt_ew_kind xk = lt_ew_kind_of(x->dtype);
    if (xs != (keys.kind == LE_STR) || (!xs && xk != LT_EW_F && xk != LT_EW_S && xk != LT_EW_U))
        return lt_op_error(ev, n, LT_ERR_INVALID, "input type %s does not match the keys", lt_dtype_name(x->dtype));
    lt_dtype odt = le_out_dtype(n, NULL);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, odt, x->rank, x->dims, &y));
    const lt_tensor *dt = lt_attr_tensor(n, "default_tensor");
    const char *dstr = lt_attr_string(n, "default_string", "_Unused");
    int64_t dint = lt_attr_int(n, "default_int64", -1);
    double dflt = lt_attr_float(n, "default_float", -0.0f);
    bool by_float = xk == LT_EW_F || keys.kind == LE_FLT;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t hit = -1; /* the last equal key wins, like a dict built from the pairs */
        if (xs) {
            const char *s = str_at(x, i);
            for (int64_t k = 0; k < keys.n; k++)
                if (strcmp(le_s(&keys, k), s) == 0) hit = k;
        } else if (by_float) {
            double v = lt_load_f64(x->data, x->dtype, i);
            for (int64_t k = 0; k < keys.n; k++) {
                double kv = keys.kind == LE_FLT ? le_f(&keys, k) : (double)le_i(&keys, k);
                if (kv == v || (isnan(kv) && isnan(v))) hit = k;
            }
        } else {
            int64_t v = lt_load_i64(x->data, x->dtype, i);
            for (int64_t k = 0; k < keys.n; k++)
                if (le_i(&keys, k) == v) hit = k;
        }
        if (odt == LT_STRING) {
            const char *s = hit >= 0 ? le_s(&vals, hit) : (dt && dt->dtype == LT_STRING && dt->numel ? str_at(dt, 0) : dstr);
            LT_TRY(lt_tensor_set_string(ev->ctx, y, i, s, strlen(s)));
        } else if (hit >= 0) {
            if (vals.kind == LE_FLT) lt_store_f64(y->data, odt, i, le_f(&vals, hit));
            else lt_store_i64(y->data, odt, i, le_i(&vals, hit));
        } else if (dt && dt->numel && dt->dtype != LT_STRING) {
            lt_convert_elem(dt->data, dt->dtype, 0, y->data, odt, i, true);
        } else if (lt_dtype_is_float(odt)) {
            lt_store_f64(y->data, odt, i, dflt);
        } else {
            lt_store_i64(y->data, odt, i, dint);
        }
    }
    return LT_OK;
}

/* ---- ArrayFeatureExtractor ---- */
static lt_status infer_afe(lt_infer *ic, lt_node *n) {
    const lt_type *x = lt_infer_in(n, 0);
    lt_dtype dt = x ? x->dtype : LT_UNDEFINED;
    if (!x || x->kind != LT_TK_TENSOR || x->rank < 1) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    lt_dim d[LT_MAX_RANK];
    int r = x->rank == 1 ? 2 : x->rank;
    if (x->rank == 1) d[0] = (lt_dim){1, NULL};
    else for (int k = 0; k < x->rank - 1; k++) d[k] = x->dims[k];
    d[r - 1] = (lt_dim){-1, NULL};
    const lt_tensor *idx = lt_infer_const(n, 1);
    if (idx) d[r - 1].value = idx->numel;
    return lt_infer_set(ic, n, 0, dt, r, d);
}

static lt_status eval_afe(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *idx;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &idx));
    if (!lt_dtype_is_int(idx->dtype)) return lt_op_error(ev, n, LT_ERR_INVALID, "indices must be integers");
    if (x->rank < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "X must have rank >= 1");
    int64_t last = x->dims[x->rank - 1], k = idx->numel;
    for (int64_t j = 0; j < k; j++) {
        int64_t v = lt_load_i64(idx->data, idx->dtype, j);
        if (v < 0 || v >= last)
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at position %lld", (long long)v,
                               (long long)last, (long long)j);
    }
    int64_t dims[LT_MAX_RANK];
    int r = x->rank == 1 ? 2 : x->rank;
    if (x->rank == 1) dims[0] = 1;
    else memcpy(dims, x->dims, (size_t)(x->rank - 1) * sizeof *dims);
    dims[r - 1] = k;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, dims, &y));
    int64_t rows = last ? x->numel / last : 0;
    size_t es = (size_t)lt_dtype_size(x->dtype);
    for (int64_t row = 0; row < rows; row++)
        for (int64_t j = 0; j < k; j++) {
            int64_t src = row * last + lt_load_i64(idx->data, idx->dtype, j), dst = row * k + j;
            if (x->dtype == LT_STRING) {
                const char *s = str_at(x, src);
                LT_TRY(lt_tensor_set_string(ev->ctx, y, dst, s, strlen(s)));
            } else {
                memcpy((char *)y->data + (size_t)dst * es, (const char *)x->data + (size_t)src * es, es);
            }
        }
    return LT_OK;
}

/* ---- Binarizer ---- */
static lt_status infer_same0(lt_infer *ic, lt_node *n) { return lt_infer_same_as_input0(ic, n); }

static lt_status eval_binarizer(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_ew_kind k = lt_ew_kind_of(x->dtype);
    if (k != LT_EW_F && k != LT_EW_S && k != LT_EW_U)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    double th = lt_attr_float(n, "threshold", 0.0f);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    for (int64_t i = 0; i < x->numel; i++) lt_store_f64(y->data, x->dtype, i, lt_load_f64(x->data, x->dtype, i) > th ? 1.0 : 0.0);
    return LT_OK;
}

const lt_op_reg lt_ops_misc[] = {
    {LT_OP_StringConcat, infer_strconcat, eval_strconcat},
    {LT_OP_StringSplit, infer_strsplit, eval_strsplit},
    {LT_OP_StringNormalizer, infer_strnorm, eval_strnorm},
    {LT_OP_RegexFullMatch, infer_regex, eval_regex},
    {LT_OP_TfIdfVectorizer, infer_tfidf, eval_tfidf},
    {LT_OP_LabelEncoder, infer_labelenc, eval_labelenc},
    {LT_OP_ArrayFeatureExtractor, infer_afe, eval_afe},
    {LT_OP_Binarizer, infer_same0, eval_binarizer},
    {LT_OP_RandomUniform, lt_misc_infer_random, lt_misc_eval_random},
    {LT_OP_RandomUniformLike, lt_misc_infer_random, lt_misc_eval_random},
    {LT_OP_RandomNormal, lt_misc_infer_random, lt_misc_eval_random},
    {LT_OP_RandomNormalLike, lt_misc_infer_random, lt_misc_eval_random},
    {LT_OP_Bernoulli, lt_misc_infer_bernoulli, lt_misc_eval_bernoulli},
    {LT_OP_Multinomial, lt_misc_infer_multinomial, lt_misc_eval_multinomial},
    {LT_OP_Adagrad, lt_misc_infer_optimizer, lt_misc_eval_optimizer},
    {LT_OP_Momentum, lt_misc_infer_optimizer, lt_misc_eval_optimizer},
    {LT_OP_Adam, lt_misc_infer_optimizer, lt_misc_eval_optimizer},
    {LT_OP_TreeEnsemble, lt_misc_infer_tree, lt_misc_eval_tree},
    {LT_OP_Scaler, lt_misc_infer_scaler, lt_misc_eval_scaler},
    {LT_OP_Normalizer, lt_misc_infer_scaler, lt_misc_eval_normalizer},
    {LT_OP_Imputer, lt_misc_infer_imputer, lt_misc_eval_imputer},
    {LT_OP_LinearRegressor, lt_misc_infer_linreg, lt_misc_eval_linreg},
    {LT_OP_LinearClassifier, lt_misc_infer_linclass, lt_misc_eval_linclass},
    {LT_OP_OneHotEncoder, lt_misc_infer_onehot, lt_misc_eval_onehot},
    {LT_OP_FeatureVectorizer, lt_misc_infer_featvec, lt_misc_eval_featvec},
    {LT_OP_CategoryMapper, lt_misc_infer_catmap, lt_misc_eval_catmap},
    {LT_OP_TreeEnsembleRegressor, lt_misc_infer_tree_legacy, lt_misc_eval_tree_legacy},
    {LT_OP_TreeEnsembleClassifier, lt_misc_infer_tree_legacy, lt_misc_eval_tree_legacy},
    {LT_OP_SVMRegressor, lt_misc_infer_svm, lt_misc_eval_svm},
    {LT_OP_SVMClassifier, lt_misc_infer_svm, lt_misc_eval_svm},
    {LT_OP_ZipMap, lt_misc_infer_zipmap, lt_misc_eval_zipmap},
    {LT_OP_DictVectorizer, lt_misc_infer_dictvec, lt_misc_eval_dictvec},
    {LT_OP_CastMap, lt_misc_infer_castmap, lt_misc_eval_castmap},
    {0, NULL, NULL},
};
