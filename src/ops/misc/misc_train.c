/* misc_train.c — random ops (RandomUniform, RandomNormal and their *Like forms, Bernoulli,
 * Multinomial) and the ai.onnx.preview.training optimizers (Adagrad, Momentum, Adam).
 *
 * Random values come from a deterministic generator: the node's `seed` attribute when it has one
 * (the same seed gives the same values on every run), else the interpreter's stream
 * (lt_eval_random, seeded by the run options). Values can not match another implementation's
 * generator, only its distribution. Normal samples use the Box-Muller transform.
 * Optimizers compute in double from the exact inputs and round once into each output's dtype.
 */
#include "misc_impl.h"

#include <math.h>
#include <string.h>

/* ---- random source ---- */
typedef struct rng {
    lt_eval *ev;
    bool local;
    uint64_t state;
} rng;

static void rng_init(lt_eval *ev, const lt_node *n, rng *r) {
    r->ev = ev;
    const lt_attr *a = lt_node_attr(n, "seed");
    r->local = a && (a->type == LT_AT_FLOAT || a->type == LT_AT_INT);
    if (r->local) {
        double s = a->type == LT_AT_FLOAT ? (double)a->f : (double)a->i;
        uint64_t bits;
        memcpy(&bits, &s, sizeof bits);
        r->state = bits ^ 0x5deece66dull;
    }
}

static double rng_next(rng *r) { /* uniform in [0, 1) */
    if (!r->local) return lt_eval_random(r->ev);
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_normal(rng *r) {
    double u1 = 1.0 - rng_next(r), u2 = rng_next(r); /* u1 in (0, 1] */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static bool is_like(const lt_node *n) {
    return n->op == LT_OP_RandomUniformLike || n->op == LT_OP_RandomNormalLike;
}

static lt_dtype random_dtype(const lt_node *n, lt_dtype input_dt) {
    const lt_attr *a = lt_node_attr(n, "dtype");
    if (a && a->type == LT_AT_INT) return lt_dtype_valid((int)a->i) && a->i == (int)a->i ? (lt_dtype)a->i : LT_UNDEFINED;
    return is_like(n) || n->op == LT_OP_Bernoulli ? input_dt : LT_FLOAT;
}

lt_status lt_misc_infer_random(lt_infer *ic, lt_node *n) {
    if (is_like(n)) {
        const lt_type *t = lt_infer_in(n, 0);
        lt_dtype dt = random_dtype(n, t ? t->dtype : LT_UNDEFINED);
        if (!t || t->kind != LT_TK_TENSOR) return lt_infer_set(ic, n, 0, dt, -1, NULL);
        return lt_infer_set(ic, n, 0, dt, t->rank, t->dims);
    }
    const int64_t *shape;
    int r = lt_attr_ints(n, "shape", &shape);
    if (r > LT_MAX_RANK) return lt_infer_error(ic, n, "shape has rank %d, more than %d", r, LT_MAX_RANK);
    return lt_infer_set_i64(ic, n, 0, random_dtype(n, LT_UNDEFINED), r, shape);
}

lt_status lt_misc_eval_random(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_dtype dt;
    if (is_like(n)) {
        const lt_tensor *x;
        LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
        rank = x->rank;
        memcpy(dims, x->dims, sizeof dims);
        dt = random_dtype(n, x->dtype);
    } else {
        const int64_t *shape;
        rank = lt_attr_ints(n, "shape", &shape);
        if (!lt_node_attr(n, "shape")) return lt_op_error(ev, n, LT_ERR_INVALID, "missing 'shape' attribute");
        if (rank > LT_MAX_RANK) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "shape rank %d is too large", rank);
        for (int k = 0; k < rank; k++) {
            if (shape[k] < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "negative dimension %lld in shape", (long long)shape[k]);
            dims[k] = shape[k];
        }
        dt = random_dtype(n, LT_FLOAT);
    }
    if (!lt_dtype_is_float(dt))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "output type %s is not supported (floats only)", lt_dtype_name(dt));
    bool normal = n->op == LT_OP_RandomNormal || n->op == LT_OP_RandomNormalLike;
    double a = normal ? lt_attr_float(n, "mean", 0.0f) : lt_attr_float(n, "low", 0.0f);
    double b = normal ? lt_attr_float(n, "scale", 1.0f) : lt_attr_float(n, "high", 1.0f);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, dt, rank, dims, &y));
    rng r;
    rng_init(ev, n, &r);
    for (int64_t i = 0; i < y->numel; i++)
        lt_store_f64(y->data, dt, i, normal ? a + b * rng_normal(&r) : a + (b - a) * rng_next(&r));
    return LT_OK;
}

/* ---- Bernoulli ---- */
lt_status lt_misc_infer_bernoulli(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    lt_dtype dt = random_dtype(n, t ? t->dtype : LT_UNDEFINED);
    if (!t || t->kind != LT_TK_TENSOR) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    return lt_infer_set(ic, n, 0, dt, t->rank, t->dims);
}

lt_status lt_misc_eval_bernoulli(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (!lt_dtype_is_float(x->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "input must be a float tensor, got %s", lt_dtype_name(x->dtype));
    lt_dtype dt = random_dtype(n, x->dtype);
    lt_dclass c = lt_dtype_get(dt)->cls;
    if (c != LT_DC_FLOAT && c != LT_DC_SINT && c != LT_DC_UINT && c != LT_DC_BOOL)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "output type %s is not supported", lt_dtype_name(dt));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, dt, x->rank, x->dims, &y));
    rng r;
    rng_init(ev, n, &r);
    for (int64_t i = 0; i < x->numel; i++) {
        double p = lt_load_f64(x->data, x->dtype, i);
        lt_store_i64(y->data, dt, i, rng_next(&r) < p ? 1 : 0);
    }
    return LT_OK;
}

/* ---- Multinomial ---- */
lt_status lt_misc_infer_multinomial(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    lt_dtype dt = (lt_dtype)lt_attr_int(n, "dtype", LT_INT32);
    lt_dim d[2] = {{-1, NULL}, {lt_attr_int(n, "sample_size", 1), NULL}};
    if (t && t->kind == LT_TK_TENSOR && t->rank == 2) d[0] = t->dims[0];
    return lt_infer_set(ic, n, 0, lt_dtype_valid((int)dt) ? dt : LT_UNDEFINED, 2, d);
}

lt_status lt_misc_eval_multinomial(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (!lt_dtype_is_float(x->dtype) || x->rank != 2)
        return lt_op_error(ev, n, LT_ERR_INVALID, "input must be a 2-D float tensor [batch, classes]");
    int64_t dt = lt_attr_int(n, "dtype", LT_INT32), samples = lt_attr_int(n, "sample_size", 1);
    if (dt != LT_INT32 && dt != LT_INT64)
        return lt_op_error(ev, n, LT_ERR_INVALID, "dtype must be int32 or int64, got %lld", (long long)dt);
    if (samples < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "sample_size must be positive");
    int64_t batch = x->dims[0], classes = x->dims[1];
    if (classes < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "needs at least one class");
    int64_t dims[2] = {batch, samples};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, (lt_dtype)dt, 2, dims, &y));
    double *cdf = lt_alloc(ev->ctx, (size_t)classes * sizeof *cdf, "multinomial");
    if (!cdf) return LT_ERR_NOMEM;
    rng r;
    rng_init(ev, n, &r);
    for (int64_t b = 0; b < batch; b++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < classes; c++) {
            double v = lt_load_f64(x->data, x->dtype, b * classes + c);
            if (v > mx) mx = v;
        }
        for (int64_t c = 0; c < classes; c++) {
            double v = lt_load_f64(x->data, x->dtype, b * classes + c);
            sum += isfinite(mx) ? exp(v - mx) : 0.0;
            cdf[c] = sum;
        }
        for (int64_t s = 0; s < samples; s++) {
            double u = rng_next(&r) * sum;
            int64_t c = 0;
            while (c < classes - 1 && cdf[c] <= u) c++;
            lt_store_i64(y->data, (lt_dtype)dt, b * samples + s, c);
        }
    }
    lt_mem_free(cdf);
    return LT_OK;
}

/* ---- Adagrad / Momentum / Adam ---- */
static int groups_in(const lt_node *n) { return n->op == LT_OP_Adam ? 4 : 3; }

lt_status lt_misc_infer_optimizer(lt_infer *ic, lt_node *n) {
    int g = groups_in(n), cnt = (n->n_in - 2) / g;
    for (int k = 0; k < n->n_out; k++) {
        int grp = cnt ? k / cnt : 0, idx = cnt ? k % cnt : 0;
        int src = 2 + (grp == 0 ? 0 : grp + 1) * cnt + idx;
        if (src < n->n_in) LT_TRY(lt_infer_copy(ic, n, k, src));
    }
    return LT_OK;
}

lt_status lt_misc_eval_optimizer(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    int g = groups_in(n);
    if (n->n_in < 2 + g || (n->n_in - 2) % g)
        return lt_op_error(ev, n, LT_ERR_INVALID, "expected 2 + %d*N inputs, got %d", g, n->n_in);
    int cnt = (n->n_in - 2) / g;
    if (n->n_out > (g - 1) * cnt)
        return lt_op_error(ev, n, LT_ERR_INVALID, "expected at most %d outputs, got %d", (g - 1) * cnt, n->n_out);
    const lt_tensor *tr, *tt;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &tr));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &tt));
    if (tr->numel != 1 || tt->numel != 1 || !lt_dtype_is_float(tr->dtype) || !lt_dtype_is_int(tt->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "R must be a float scalar and T an integer scalar");
    double R = lt_load_f64(tr->data, tr->dtype, 0);
    int64_t T = lt_load_i64(tt->data, tt->dtype, 0);
    double norm = lt_attr_float(n, "norm_coefficient", 0.0f);
    const char *mode = lt_attr_string(n, "mode", "standard");
    if (n->op == LT_OP_Momentum && strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "unknown mode '%s'", mode);
    for (int k = 0; k < cnt; k++) {
        const lt_tensor *t[4] = {0};
        for (int q = 0; q < g; q++) {
            LT_TRY(lt_in_tensor(ev, n, in, 2 + q * cnt + k, &t[q]));
            if (t[q]->numel != t[0]->numel || !lt_dtype_is_float(t[q]->dtype))
                return lt_op_error(ev, n, LT_ERR_INVALID, "input %d must be a float tensor shaped like X", 2 + q * cnt + k);
        }
        lt_tensor *o[3] = {0};
        for (int q = 0; q < g - 1; q++) {
            int oi = q * cnt + k, src = q == 0 ? 0 : q + 1;
            if (oi < n->n_out && n->out[oi])
                LT_TRY(lt_out_new(ev, n, out, oi, t[src]->dtype, t[src]->rank, t[src]->dims, &o[q]));
        }
        for (int64_t i = 0; i < t[0]->numel; i++) {
            double x = lt_load_f64(t[0]->data, t[0]->dtype, i), gr = lt_load_f64(t[1]->data, t[1]->dtype, i);
            double greg = norm * x + gr, xn, s1, s2 = 0;
            if (n->op == LT_OP_Adagrad) {
                double decay = lt_attr_float(n, "decay_factor", 0.0f), eps = lt_attr_float(n, "epsilon", 1e-6f);
                double h = lt_load_f64(t[2]->data, t[2]->dtype, i);
                double r = R / (1 + (double)T * decay);
                s1 = h + greg * greg;
                xn = x - r * greg / (sqrt(s1) + eps);
            } else if (n->op == LT_OP_Momentum) {
                double alpha = lt_attr_float(n, "alpha", 0.0f), beta = lt_attr_float(n, "beta", 0.0f);
                double v = lt_load_f64(t[2]->data, t[2]->dtype, i);
                s1 = alpha * v + (T > 0 ? beta : 1.0) * greg;
                xn = strcmp(mode, "nesterov") == 0 ? x - R * (greg + alpha * s1) : x - R * s1;
            } else {
                double alpha = lt_attr_float(n, "alpha", 0.9f), beta = lt_attr_float(n, "beta", 0.999f);
                double eps = lt_attr_float(n, "epsilon", 1e-6f), post = lt_attr_float(n, "norm_coefficient_post", 0.0f);
                double v = lt_load_f64(t[2]->data, t[2]->dtype, i), h = lt_load_f64(t[3]->data, t[3]->dtype, i);
                s1 = alpha * v + (1 - alpha) * greg;
                s2 = beta * h + (1 - beta) * greg * greg;
                double radj = T > 0 ? R * sqrt(1 - pow(beta, (double)T)) / (1 - pow(alpha, (double)T)) : R;
                xn = (1 - post) * (x - radj * (s1 / (sqrt(s2) + eps)));
            }
            if (o[0]) lt_store_f64(o[0]->data, o[0]->dtype, i, xn);
            if (o[1]) lt_store_f64(o[1]->data, o[1]->dtype, i, s1);
            if (o[2]) lt_store_f64(o[2]->data, o[2]->dtype, i, s2);
        }
    }
    return LT_OK;
}
