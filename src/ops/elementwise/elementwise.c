/* elementwise.c — the elementwise family's table, its shared machinery (typed element accessors,
 * broadcasting iterator, legacy broadcast, unary inference) and the unary ops.
 *
 * Unary math ops compute in double from the exact input value and round once into the input's
 * dtype (float32 results then match numpy's float32 ufuncs to within an ulp). Integer inputs take
 * exact int64/uint64 paths where the op allows them (Abs, Neg, Sign, Relu, BitwiseNot; Shrink goes
 * through double and truncates like the reference). Binary/variadic ops live in
 * elementwise_binary.c, Cast/CastLike/BitCast in elementwise_cast.c (hooks declared in
 * elementwise_impl.h).
 */
#include "elementwise_impl.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

/* ---- typed accessors ---- */
#define EW_GEN_ACCESS(NAME, DT)                                                                    \
    static double ldf_##NAME(const void *p, int64_t i) { return lt_load_f64(p, DT, i); }           \
    static void stf_##NAME(void *p, int64_t i, double v) { lt_store_f64(p, DT, i, v); }            \
    static int64_t ldi_##NAME(const void *p, int64_t i) { return lt_load_i64(p, DT, i); }          \
    static void sti_##NAME(void *p, int64_t i, int64_t v) { lt_store_i64(p, DT, i, v); }

EW_GEN_ACCESS(f16, LT_FLOAT16)
EW_GEN_ACCESS(bf16, LT_BFLOAT16)
EW_GEN_ACCESS(e4m3fn, LT_FLOAT8E4M3FN)
EW_GEN_ACCESS(e4m3fnuz, LT_FLOAT8E4M3FNUZ)
EW_GEN_ACCESS(e5m2, LT_FLOAT8E5M2)
EW_GEN_ACCESS(e5m2fnuz, LT_FLOAT8E5M2FNUZ)
EW_GEN_ACCESS(f4, LT_FLOAT4E2M1)
EW_GEN_ACCESS(e8m0, LT_FLOAT8E8M0)
EW_GEN_ACCESS(u4, LT_UINT4)
EW_GEN_ACCESS(i4, LT_INT4)
EW_GEN_ACCESS(u2, LT_UINT2)
EW_GEN_ACCESS(i2, LT_INT2)
EW_GEN_ACCESS(c64, LT_COMPLEX64)
EW_GEN_ACCESS(c128, LT_COMPLEX128)
EW_GEN_ACCESS(u64, LT_UINT64)

/* Fast accessors for the common plain C types. */
#define EW_NATIVE_ACCESS(NAME, T, DT)                                                              \
    static double ldf_##NAME(const void *p, int64_t i) { return (double)((const T *)p)[i]; }       \
    static int64_t ldi_##NAME(const void *p, int64_t i) { return (int64_t)((const T *)p)[i]; }     \
    static void sti_##NAME(void *p, int64_t i, int64_t v) { ((T *)p)[i] = (T)v; }                  \
    static void stf_##NAME(void *p, int64_t i, double v) { lt_store_f64(p, DT, i, v); }

EW_NATIVE_ACCESS(i8, int8_t, LT_INT8)
EW_NATIVE_ACCESS(u8, uint8_t, LT_UINT8)
EW_NATIVE_ACCESS(i16, int16_t, LT_INT16)
EW_NATIVE_ACCESS(u16, uint16_t, LT_UINT16)
EW_NATIVE_ACCESS(i32, int32_t, LT_INT32)
EW_NATIVE_ACCESS(u32, uint32_t, LT_UINT32)
EW_NATIVE_ACCESS(i64, int64_t, LT_INT64)

static double ldf_f32(const void *p, int64_t i) { return ((const float *)p)[i]; }
static void stf_f32(void *p, int64_t i, double v) { ((float *)p)[i] = (float)v; }
static int64_t ldi_f32(const void *p, int64_t i) { return lt_load_i64(p, LT_FLOAT, i); }
static void sti_f32(void *p, int64_t i, int64_t v) { ((float *)p)[i] = (float)v; }
static double ldf_f64(const void *p, int64_t i) { return ((const double *)p)[i]; }
static void stf_f64(void *p, int64_t i, double v) { ((double *)p)[i] = v; }
static int64_t ldi_f64(const void *p, int64_t i) { return lt_load_i64(p, LT_DOUBLE, i); }
static void sti_f64(void *p, int64_t i, int64_t v) { ((double *)p)[i] = (double)v; }
static double ldf_b(const void *p, int64_t i) { return ((const uint8_t *)p)[i] != 0; }
static void stf_b(void *p, int64_t i, double v) { ((uint8_t *)p)[i] = v != 0; }
static int64_t ldi_b(const void *p, int64_t i) { return ((const uint8_t *)p)[i] != 0; }
static void sti_b(void *p, int64_t i, int64_t v) { ((uint8_t *)p)[i] = v != 0; }
static double ldf_none(const void *p, int64_t i) { (void)p; (void)i; return 0; }
static void stf_none(void *p, int64_t i, double v) { (void)p; (void)i; (void)v; }
static int64_t ldi_none(const void *p, int64_t i) { (void)p; (void)i; return 0; }
static void sti_none(void *p, int64_t i, int64_t v) { (void)p; (void)i; (void)v; }

#define EW_ROW(DT, NAME) [DT] = {ldf_##NAME, stf_##NAME, ldi_##NAME, sti_##NAME}
static const struct {
    lt_ew_ldf_fn ldf;
    lt_ew_stf_fn stf;
    lt_ew_ldi_fn ldi;
    lt_ew_sti_fn sti;
} g_access[LT_DTYPE_COUNT] = {
    EW_ROW(LT_UNDEFINED, none), EW_ROW(LT_FLOAT, f32),          EW_ROW(LT_UINT8, u8),
    EW_ROW(LT_INT8, i8),        EW_ROW(LT_UINT16, u16),         EW_ROW(LT_INT16, i16),
    EW_ROW(LT_INT32, i32),      EW_ROW(LT_INT64, i64),          EW_ROW(LT_STRING, none),
    EW_ROW(LT_BOOL, b),         EW_ROW(LT_FLOAT16, f16),        EW_ROW(LT_DOUBLE, f64),
    EW_ROW(LT_UINT32, u32),     EW_ROW(LT_UINT64, u64),         EW_ROW(LT_COMPLEX64, c64),
    EW_ROW(LT_COMPLEX128, c128), EW_ROW(LT_BFLOAT16, bf16),     EW_ROW(LT_FLOAT8E4M3FN, e4m3fn),
    EW_ROW(LT_FLOAT8E4M3FNUZ, e4m3fnuz), EW_ROW(LT_FLOAT8E5M2, e5m2),
    EW_ROW(LT_FLOAT8E5M2FNUZ, e5m2fnuz), EW_ROW(LT_UINT4, u4),  EW_ROW(LT_INT4, i4),
    EW_ROW(LT_FLOAT4E2M1, f4),  EW_ROW(LT_FLOAT8E8M0, e8m0),    EW_ROW(LT_UINT2, u2),
    EW_ROW(LT_INT2, i2),
};

static int dt_index(lt_dtype dt) { return lt_dtype_valid((int)dt) ? (int)dt : 0; }
lt_ew_ldf_fn lt_ew_ldf(lt_dtype dt) { return g_access[dt_index(dt)].ldf; }
lt_ew_stf_fn lt_ew_stf(lt_dtype dt) { return g_access[dt_index(dt)].stf; }
lt_ew_ldi_fn lt_ew_ldi(lt_dtype dt) { return g_access[dt_index(dt)].ldi; }
lt_ew_sti_fn lt_ew_sti(lt_dtype dt) { return g_access[dt_index(dt)].sti; }

lt_ew_kind lt_ew_kind_of(lt_dtype dt) {
    switch (lt_dtype_get(dt)->cls) {
    case LT_DC_FLOAT: return LT_EW_F;
    case LT_DC_SINT: return LT_EW_S;
    case LT_DC_UINT: return LT_EW_U;
    case LT_DC_BOOL: return LT_EW_B;
    case LT_DC_STRING: return LT_EW_STR;
    default: return LT_EW_OTHER;
    }
}

int lt_ew_int_bits(lt_dtype dt) { return lt_dtype_get(dt)->wire_bits; }

/* ---- broadcasting ---- */
void lt_ew_bc_init_to(int n, const lt_tensor *const *ts, int rank, const int64_t *dims, lt_ew_bc *bc) {
    memset(bc, 0, sizeof *bc);
    bc->rank = rank;
    bc->n = n;
    bc->numel = 1;
    for (int d = 0; d < rank; d++) {
        bc->dims[d] = dims[d];
        bc->numel *= dims[d]; /* bounded: an output of this shape was (or will be) allocated */
    }
    for (int k = 0; k < n; k++) lt_broadcast_strides(ts[k], rank, bc->dims, bc->st[k]);
}

lt_status lt_ew_bc_init(lt_eval *ev, const lt_node *node, int n, const lt_tensor *const *ts, lt_ew_bc *bc) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    LT_TRY(lt_broadcast_shapes(ev, node, n, ts, &rank, dims));
    int64_t numel;
    if (!lt_prod_i64(dims, rank, &numel))
        return lt_op_error(ev, node, LT_ERR_NOMEM, "broadcast output is too large");
    lt_ew_bc_init_to(n, ts, rank, dims, bc);
    return LT_OK;
}

lt_status lt_ew_legacy_bcast(lt_eval *ev, const lt_node *n, const lt_tensor *a, const lt_tensor *b,
                             lt_tensor *view) {
    *view = *b;
    if (n->opset >= 7 || lt_attr_int(n, "broadcast", 0) == 0) return LT_OK;
    int64_t axis = lt_attr_int(n, "axis", a->rank - b->rank);
    if (axis < 0) axis += a->rank;
    if (b->rank > a->rank || axis < 0 || axis + b->rank > a->rank)
        return lt_op_error(ev, n, LT_ERR_INVALID, "legacy broadcast: B of rank %d does not fit A of rank %d at axis %lld",
                           b->rank, a->rank, (long long)axis);
    for (int d = 0; d < b->rank; d++)
        if (b->dims[d] != a->dims[axis + d] && b->dims[d] != 1)
            return lt_op_error(ev, n, LT_ERR_INVALID, "legacy broadcast: B dim %d (%lld) does not match A dim %lld (%lld)",
                               d, (long long)b->dims[d], (long long)(axis + d), (long long)a->dims[axis + d]);
    view->rank = a->rank;
    for (int d = 0; d < a->rank; d++) view->dims[d] = 1;
    for (int d = 0; d < b->rank; d++) view->dims[axis + d] = b->dims[d];
    return LT_OK;
}

lt_status lt_ew_infer_unary_dt(lt_infer *ic, lt_node *n, lt_dtype dt) {
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    return lt_infer_set(ic, n, 0, dt, t->rank, t->dims);
}

lt_dtype lt_ew_dtype_from_any_name(const char *s) {
    char low[32];
    size_t k = 0;
    for (; s[k] && k + 1 < sizeof low; k++) low[k] = (char)tolower((unsigned char)s[k]);
    low[k] = 0;
    if (s[k]) return LT_UNDEFINED;
    return lt_dtype_from_name(low);
}

/* ---- unary ops ---- */
typedef struct ew_par {
    double alpha, beta, gamma, bias, lambd;
    int mode;
} ew_par;

typedef double (*ew_f1)(double x, const ew_par *p);

static double f_abs(double x, const ew_par *p) { (void)p; return fabs(x); }
static double f_neg(double x, const ew_par *p) { (void)p; return -x; }
static double f_sign(double x, const ew_par *p) { (void)p; return isnan(x) ? x : (double)((x > 0) - (x < 0)); }
static double f_relu(double x, const ew_par *p) { (void)p; return isnan(x) ? x : (x > 0 ? x : 0.0); }
static double f_ceil(double x, const ew_par *p) { (void)p; return ceil(x); }
static double f_floor(double x, const ew_par *p) { (void)p; return floor(x); }
static double f_round(double x, const ew_par *p) { (void)p; return nearbyint(x); }
static double f_exp(double x, const ew_par *p) { (void)p; return exp(x); }
static double f_log(double x, const ew_par *p) { (void)p; return log(x); }
static double f_sqrt(double x, const ew_par *p) { (void)p; return sqrt(x); }
static double f_recip(double x, const ew_par *p) { (void)p; return 1.0 / x; }
static double sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}
static double f_sigmoid(double x, const ew_par *p) { (void)p; return sigmoid(x); }
static double f_tanh(double x, const ew_par *p) { (void)p; return tanh(x); }
static double f_sin(double x, const ew_par *p) { (void)p; return sin(x); }
static double f_cos(double x, const ew_par *p) { (void)p; return cos(x); }
static double f_tan(double x, const ew_par *p) { (void)p; return tan(x); }
static double f_asin(double x, const ew_par *p) { (void)p; return asin(x); }
static double f_acos(double x, const ew_par *p) { (void)p; return acos(x); }
static double f_atan(double x, const ew_par *p) { (void)p; return atan(x); }
static double f_sinh(double x, const ew_par *p) { (void)p; return sinh(x); }
static double f_cosh(double x, const ew_par *p) { (void)p; return cosh(x); }
static double f_asinh(double x, const ew_par *p) { (void)p; return asinh(x); }
static double f_acosh(double x, const ew_par *p) { (void)p; return acosh(x); }
static double f_atanh(double x, const ew_par *p) { (void)p; return atanh(x); }
static double f_erf(double x, const ew_par *p) { (void)p; return erf(x); }
static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double f_softplus(double x, const ew_par *p) { (void)p; return softplus(x); }
static double f_softsign(double x, const ew_par *p) { (void)p; return x / (1.0 + fabs(x)); }
static double f_elu(double x, const ew_par *p) { return x > 0 ? x : p->alpha * expm1(x); }
static double f_selu(double x, const ew_par *p) {
    return x > 0 ? p->gamma * x : p->gamma * (p->alpha * exp(x) - p->alpha);
}
static double f_celu(double x, const ew_par *p) {
    if (isnan(x)) return x;
    double neg = p->alpha * expm1(x / p->alpha);
    return (x > 0 ? x : 0.0) + (neg < 0 ? neg : 0.0);
}
static double f_leaky(double x, const ew_par *p) { return x > 0 ? x : p->alpha * x; }
static double f_threlu(double x, const ew_par *p) { return x > p->alpha ? x : 0.0; }
static double f_hsigmoid(double x, const ew_par *p) {
    double v = p->alpha * x + p->beta;
    if (isnan(v)) return v;
    return v < 0 ? 0.0 : (v > 1 ? 1.0 : v);
}
static double f_hswish(double x, const ew_par *p) {
    (void)p;
    double v = x / 6.0 + 0.5;
    if (isnan(v)) return v;
    return x * (v < 0 ? 0.0 : (v > 1 ? 1.0 : v));
}
static double f_mish(double x, const ew_par *p) { (void)p; return x * tanh(softplus(x)); }
static double f_gelu(double x, const ew_par *p) {
    if (p->mode == 1) {
        const double k = 0.7978845608028654; /* sqrt(2/pi) */
        return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
    return 0.5 * x * (1.0 + erf(x / 1.4142135623730951));
}
static double f_swish(double x, const ew_par *p) { return x * sigmoid(p->alpha * x); }
static double f_shrink(double x, const ew_par *p) {
    if (x < -p->lambd) return x + p->bias;
    if (x > p->lambd) return x - p->bias;
    return 0.0;
}

/* Integer paths (exact): value in, value out, wrapping on store. `u` says the dtype is unsigned. */
typedef int64_t (*ew_i1)(int64_t x, bool u);
static int64_t i_abs(int64_t x, bool u) { return (u || x >= 0) ? x : (int64_t)(0 - (uint64_t)x); }
static int64_t i_neg(int64_t x, bool u) { (void)u; return (int64_t)(0 - (uint64_t)x); }
static int64_t i_sign(int64_t x, bool u) { return u ? (x != 0) : (x > 0) - (x < 0); }
static int64_t i_relu(int64_t x, bool u) { return (u || x > 0) ? x : 0; }
static int64_t i_not(int64_t x, bool u) { (void)u; return ~x; }

enum { EW_INT_NONE, EW_INT_EXACT, EW_INT_VIA_DOUBLE };
typedef struct ew_unary {
    int op;
    ew_f1 f;
    ew_i1 fi;
    int ints; /* EW_INT_* */
} ew_unary;

static const ew_unary g_unary[] = {
    {LT_OP_Abs, f_abs, i_abs, EW_INT_EXACT},
    {LT_OP_Neg, f_neg, i_neg, EW_INT_EXACT},
    {LT_OP_Sign, f_sign, i_sign, EW_INT_EXACT},
    {LT_OP_Relu, f_relu, i_relu, EW_INT_EXACT},
    {LT_OP_BitwiseNot, NULL, i_not, EW_INT_EXACT},
    {LT_OP_Ceil, f_ceil, NULL, EW_INT_NONE},
    {LT_OP_Floor, f_floor, NULL, EW_INT_NONE},
    {LT_OP_Round, f_round, NULL, EW_INT_NONE},
    {LT_OP_Exp, f_exp, NULL, EW_INT_NONE},
    {LT_OP_Log, f_log, NULL, EW_INT_NONE},
    {LT_OP_Sqrt, f_sqrt, NULL, EW_INT_NONE},
    {LT_OP_Reciprocal, f_recip, NULL, EW_INT_NONE},
    {LT_OP_Sigmoid, f_sigmoid, NULL, EW_INT_NONE},
    {LT_OP_Tanh, f_tanh, NULL, EW_INT_NONE},
    {LT_OP_Sin, f_sin, NULL, EW_INT_NONE},
    {LT_OP_Cos, f_cos, NULL, EW_INT_NONE},
    {LT_OP_Tan, f_tan, NULL, EW_INT_NONE},
    {LT_OP_Asin, f_asin, NULL, EW_INT_NONE},
    {LT_OP_Acos, f_acos, NULL, EW_INT_NONE},
    {LT_OP_Atan, f_atan, NULL, EW_INT_NONE},
    {LT_OP_Sinh, f_sinh, NULL, EW_INT_NONE},
    {LT_OP_Cosh, f_cosh, NULL, EW_INT_NONE},
    {LT_OP_Asinh, f_asinh, NULL, EW_INT_NONE},
    {LT_OP_Acosh, f_acosh, NULL, EW_INT_NONE},
    {LT_OP_Atanh, f_atanh, NULL, EW_INT_NONE},
    {LT_OP_Erf, f_erf, NULL, EW_INT_VIA_DOUBLE},
    {LT_OP_Softplus, f_softplus, NULL, EW_INT_NONE},
    {LT_OP_Softsign, f_softsign, NULL, EW_INT_NONE},
    {LT_OP_Elu, f_elu, NULL, EW_INT_NONE},
    {LT_OP_Selu, f_selu, NULL, EW_INT_NONE},
    {LT_OP_Celu, f_celu, NULL, EW_INT_NONE},
    {LT_OP_LeakyRelu, f_leaky, NULL, EW_INT_NONE},
    {LT_OP_ThresholdedRelu, f_threlu, NULL, EW_INT_NONE},
    {LT_OP_HardSigmoid, f_hsigmoid, NULL, EW_INT_NONE},
    {LT_OP_HardSwish, f_hswish, NULL, EW_INT_NONE},
    {LT_OP_Mish, f_mish, NULL, EW_INT_NONE},
    {LT_OP_Gelu, f_gelu, NULL, EW_INT_NONE},
    {LT_OP_Swish, f_swish, NULL, EW_INT_NONE},
    {LT_OP_Shrink, f_shrink, NULL, EW_INT_VIA_DOUBLE},
};

static const ew_unary *find_unary(int op) {
    for (size_t k = 0; k < sizeof g_unary / sizeof *g_unary; k++)
        if (g_unary[k].op == op) return &g_unary[k];
    return NULL;
}

static lt_status read_params(const lt_node *n, ew_par *p) {
    memset(p, 0, sizeof *p);
    switch (n->op) {
    case LT_OP_Elu: case LT_OP_Celu: case LT_OP_ThresholdedRelu: case LT_OP_Swish:
        p->alpha = lt_attr_float(n, "alpha", 1.0f);
        break;
    case LT_OP_Selu:
        p->alpha = lt_attr_float(n, "alpha", 1.67326319217681884765625f);
        p->gamma = lt_attr_float(n, "gamma", 1.05070102214813232421875f);
        break;
    case LT_OP_LeakyRelu: p->alpha = lt_attr_float(n, "alpha", 0.01f); break;
    case LT_OP_HardSigmoid:
        p->alpha = lt_attr_float(n, "alpha", 0.2f);
        p->beta = lt_attr_float(n, "beta", 0.5f);
        break;
    case LT_OP_Shrink:
        p->bias = lt_attr_float(n, "bias", 0.0f);
        p->lambd = lt_attr_float(n, "lambd", 0.5f);
        break;
    case LT_OP_Gelu: p->mode = strcmp(lt_attr_string(n, "approximate", "none"), "tanh") == 0; break;
    default: break;
    }
    return LT_OK; /* the attributes' rules: lt_ew_check */
}

static lt_status eval_unary(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_ew_check_eval(ev, n, in));
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    const ew_unary *u = find_unary(n->op);
    if (!u) return lt_op_error(ev, n, LT_ERR_INTERNAL, "no unary kernel");
    ew_par par;
    LT_TRY(read_params(n, &par));
    lt_ew_kind k = lt_ew_kind_of(x->dtype);
    bool ok = (k == LT_EW_F && u->f) || ((k == LT_EW_S || k == LT_EW_U) && u->ints != EW_INT_NONE);
    if (!ok)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    int64_t cnt = x->numel;
    if (k == LT_EW_F) {
        if (x->dtype == LT_FLOAT) {
            const float *xp = x->data;
            float *yp = y->data;
            for (int64_t i = 0; i < cnt; i++) yp[i] = (float)u->f(xp[i], &par);
        } else {
            lt_ew_ldf_fn ld = lt_ew_ldf(x->dtype);
            lt_ew_stf_fn st = lt_ew_stf(x->dtype);
            for (int64_t i = 0; i < cnt; i++) st(y->data, i, u->f(ld(x->data, i), &par));
        }
    } else if (u->ints == EW_INT_EXACT) {
        lt_ew_ldi_fn ld = lt_ew_ldi(x->dtype);
        lt_ew_sti_fn st = lt_ew_sti(x->dtype);
        bool uns = k == LT_EW_U;
        for (int64_t i = 0; i < cnt; i++) st(y->data, i, u->fi(ld(x->data, i), uns));
    } else {
        lt_ew_ldf_fn ld = lt_ew_ldf(x->dtype);
        lt_ew_stf_fn st = lt_ew_stf(x->dtype);
        for (int64_t i = 0; i < cnt; i++) st(y->data, i, u->f(ld(x->data, i), &par));
    }
    return LT_OK;
}

/* IsNaN, IsInf: float in, bool out (integer inputs are never NaN or infinite). */
static lt_status eval_isclass(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_ew_check_eval(ev, n, in));
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_ew_kind k = lt_ew_kind_of(x->dtype);
    if (k != LT_EW_F && k != LT_EW_S && k != LT_EW_U)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    bool neg = lt_attr_int(n, "detect_negative", 1) != 0, pos = lt_attr_int(n, "detect_positive", 1) != 0;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_BOOL, x->rank, x->dims, &y));
    if (k != LT_EW_F) return LT_OK;
    lt_ew_ldf_fn ld = lt_ew_ldf(x->dtype);
    uint8_t *yp = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = ld(x->data, i);
        if (n->op == LT_OP_IsNaN) yp[i] = isnan(v) != 0;
        else yp[i] = isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
    }
    return LT_OK;
}

static lt_status eval_not(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_ew_check_eval(ev, n, in));
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (x->dtype != LT_BOOL)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported (bool only)", lt_dtype_name(x->dtype));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_BOOL, x->rank, x->dims, &y));
    const uint8_t *xp = x->data;
    uint8_t *yp = y->data;
    for (int64_t i = 0; i < x->numel; i++) yp[i] = !xp[i];
    return LT_OK;
}

static lt_status infer_bool_unary(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_ew_check_infer(ic, n));
    return lt_ew_infer_unary_dt(ic, n, LT_BOOL);
}
static lt_status infer_same(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_ew_check_infer(ic, n));
    const lt_type *t = lt_infer_in(n, 0);
    return lt_ew_infer_unary_dt(ic, n, t ? t->dtype : LT_UNDEFINED);
}

const lt_op_reg lt_ops_elementwise[] = {
    {LT_OP_Abs, infer_same, eval_unary},
    {LT_OP_Acos, infer_same, eval_unary},
    {LT_OP_Acosh, infer_same, eval_unary},
    {LT_OP_Add, lt_ew_infer_binary, lt_ew_eval_arith},
    {LT_OP_And, lt_ew_infer_compare, lt_ew_eval_logical},
    {LT_OP_Asin, infer_same, eval_unary},
    {LT_OP_Asinh, infer_same, eval_unary},
    {LT_OP_Atan, infer_same, eval_unary},
    {LT_OP_Atanh, infer_same, eval_unary},
    {LT_OP_BitCast, lt_ew_infer_bitcast, lt_ew_eval_bitcast},
    {LT_OP_BitShift, lt_ew_infer_binary, lt_ew_eval_bitshift},
    {LT_OP_BitwiseAnd, lt_ew_infer_binary, lt_ew_eval_bitwise},
    {LT_OP_BitwiseNot, infer_same, eval_unary},
    {LT_OP_BitwiseOr, lt_ew_infer_binary, lt_ew_eval_bitwise},
    {LT_OP_BitwiseXor, lt_ew_infer_binary, lt_ew_eval_bitwise},
    {LT_OP_Cast, lt_ew_infer_cast, lt_ew_eval_cast},
    {LT_OP_CastLike, lt_ew_infer_castlike, lt_ew_eval_castlike},
    {LT_OP_Ceil, infer_same, eval_unary},
    {LT_OP_Celu, infer_same, eval_unary},
    {LT_OP_Clip, infer_same, lt_ew_eval_clip},
    {LT_OP_Cos, infer_same, eval_unary},
    {LT_OP_Cosh, infer_same, eval_unary},
    {LT_OP_Div, lt_ew_infer_binary, lt_ew_eval_arith},
    {LT_OP_Elu, infer_same, eval_unary},
    {LT_OP_Equal, lt_ew_infer_compare, lt_ew_eval_compare},
    {LT_OP_Erf, infer_same, eval_unary},
    {LT_OP_Exp, infer_same, eval_unary},
    {LT_OP_Floor, infer_same, eval_unary},
    {LT_OP_Gelu, infer_same, eval_unary},
    {LT_OP_Greater, lt_ew_infer_compare, lt_ew_eval_compare},
    {LT_OP_GreaterOrEqual, lt_ew_infer_compare, lt_ew_eval_compare},
    {LT_OP_HardSigmoid, infer_same, eval_unary},
    {LT_OP_HardSwish, infer_same, eval_unary},
    {LT_OP_IsInf, infer_bool_unary, eval_isclass},
    {LT_OP_IsNaN, infer_bool_unary, eval_isclass},
    {LT_OP_LeakyRelu, infer_same, eval_unary},
    {LT_OP_Less, lt_ew_infer_compare, lt_ew_eval_compare},
    {LT_OP_LessOrEqual, lt_ew_infer_compare, lt_ew_eval_compare},
    {LT_OP_Log, infer_same, eval_unary},
    {LT_OP_Max, lt_ew_infer_variadic, lt_ew_eval_variadic},
    {LT_OP_Mean, lt_ew_infer_variadic, lt_ew_eval_variadic},
    {LT_OP_Min, lt_ew_infer_variadic, lt_ew_eval_variadic},
    {LT_OP_Mish, infer_same, eval_unary},
    {LT_OP_Mod, lt_ew_infer_binary, lt_ew_eval_arith},
    {LT_OP_Mul, lt_ew_infer_binary, lt_ew_eval_arith},
    {LT_OP_Neg, infer_same, eval_unary},
    {LT_OP_Not, infer_same, eval_not},
    {LT_OP_Or, lt_ew_infer_compare, lt_ew_eval_logical},
    {LT_OP_PRelu, infer_same, lt_ew_eval_prelu}, /* Y has X's shape (slope broadcasts to X) */
    {LT_OP_Pow, lt_ew_infer_binary, lt_ew_eval_pow},
    {LT_OP_Reciprocal, infer_same, eval_unary},
    {LT_OP_Relu, infer_same, eval_unary},
    {LT_OP_Round, infer_same, eval_unary},
    {LT_OP_Selu, infer_same, eval_unary},
    {LT_OP_Shrink, infer_same, eval_unary},
    {LT_OP_Sigmoid, infer_same, eval_unary},
    {LT_OP_Sign, infer_same, eval_unary},
    {LT_OP_Sin, infer_same, eval_unary},
    {LT_OP_Sinh, infer_same, eval_unary},
    {LT_OP_Softplus, infer_same, eval_unary},
    {LT_OP_Softsign, infer_same, eval_unary},
    {LT_OP_Sqrt, infer_same, eval_unary},
    {LT_OP_Sub, lt_ew_infer_binary, lt_ew_eval_arith},
    {LT_OP_Sum, lt_ew_infer_variadic, lt_ew_eval_variadic},
    {LT_OP_Swish, infer_same, eval_unary},
    {LT_OP_Tan, infer_same, eval_unary},
    {LT_OP_Tanh, infer_same, eval_unary},
    {LT_OP_ThresholdedRelu, infer_same, eval_unary},
    {LT_OP_Where, lt_ew_infer_where, lt_ew_eval_where},
    {LT_OP_Xor, lt_ew_infer_compare, lt_ew_eval_logical},
    {0, NULL, NULL},
};
