/* nn.c — the nn family's op table, and the helpers its files share (nn_impl.h): sliding-window
 * geometry from the conv/pool attributes, dtype buffers for the kernels, shape-inference helpers.
 * The hooks live in nn_conv.c, nn_pool.c, nn_matmul.c, nn_quant.c and nn_einsum.c. */
#include "nn_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const lt_op_reg lt_ops_nn[] = {
    {LT_OP_AveragePool, nn_infer_AveragePool, nn_eval_AveragePool},
    {LT_OP_Col2Im, nn_infer_Col2Im, nn_eval_Col2Im},
    {LT_OP_Conv, nn_infer_Conv, nn_eval_Conv},
    {LT_OP_ConvInteger, nn_infer_ConvInteger, nn_eval_ConvInteger},
    {LT_OP_ConvTranspose, nn_infer_ConvTranspose, nn_eval_ConvTranspose},
    {LT_OP_DeformConv, nn_infer_DeformConv, nn_eval_DeformConv},
    {LT_OP_DequantizeLinear, nn_infer_DequantizeLinear, nn_eval_DequantizeLinear},
    {LT_OP_Det, nn_infer_Det, nn_eval_Det},
    {LT_OP_DynamicQuantizeLinear, nn_infer_DynamicQuantizeLinear, nn_eval_DynamicQuantizeLinear},
    {LT_OP_Einsum, nn_infer_Einsum, nn_eval_Einsum},
    {LT_OP_Gemm, nn_infer_Gemm, nn_eval_Gemm},
    {LT_OP_GlobalAveragePool, nn_infer_GlobalPool, nn_eval_GlobalPool},
    {LT_OP_GlobalLpPool, nn_infer_GlobalPool, nn_eval_GlobalPool},
    {LT_OP_GlobalMaxPool, nn_infer_GlobalPool, nn_eval_GlobalPool},
    {LT_OP_LpPool, nn_infer_LpPool, nn_eval_LpPool},
    {LT_OP_MatMul, nn_infer_MatMul, nn_eval_MatMul},
    {LT_OP_MatMulInteger, nn_infer_MatMulInteger, nn_eval_MatMulInteger},
    {LT_OP_MaxPool, nn_infer_MaxPool, nn_eval_MaxPool},
    {LT_OP_MaxUnpool, nn_infer_MaxUnpool, nn_eval_MaxUnpool},
    {LT_OP_QLinearConv, nn_infer_QLinearConv, nn_eval_QLinearConv},
    {LT_OP_QLinearMatMul, nn_infer_QLinearMatMul, nn_eval_QLinearMatMul},
    {LT_OP_QuantizeLinear, nn_infer_QuantizeLinear, nn_eval_QuantizeLinear},
    {0, NULL, NULL},
};

/* ---------------------------------------------------------------------------------------------- */
/* geometry                                                                                        */

bool nn_span(int64_t k, int64_t d, int64_t *out) {
    int64_t t;
    if (!lt_mul_i64(k - 1, d, &t) || !lt_add_i64(t, 1, &t)) return false;
    *out = t;
    return true;
}

bool nn_parse_autopad(const lt_node *n, nn_autopad *ap, char *err, size_t errn) {
    const char *s = lt_attr_string(n, "auto_pad", "NOTSET");
    if (!strcmp(s, "NOTSET") || !*s) *ap = NN_PAD_NOTSET;
    else if (!strcmp(s, "SAME_UPPER")) *ap = NN_PAD_SAME_UPPER;
    else if (!strcmp(s, "SAME_LOWER")) *ap = NN_PAD_SAME_LOWER;
    else if (!strcmp(s, "VALID")) *ap = NN_PAD_VALID;
    else {
        snprintf(err, errn, "unknown auto_pad '%s'", s);
        return false;
    }
    return true;
}

/* An int list attribute of exactly `want` entries, each >= lo; absent: every entry dflt. */
static bool read_list(const lt_node *n, const char *name, int want, int64_t dflt, int64_t lo, int64_t *out,
                      char *err, size_t errn) {
    const int64_t *v;
    int c = lt_attr_ints(n, name, &v);
    if (!v) {
        for (int i = 0; i < want; i++) out[i] = dflt;
        return true;
    }
    if (c != want) {
        snprintf(err, errn, "attribute %s has %d entries, expected %d", name, c, want);
        return false;
    }
    for (int i = 0; i < want; i++) {
        if (v[i] < lo) {
            snprintf(err, errn, "attribute %s[%d] = %lld must be >= %lld", name, i, (long long)v[i],
                     (long long)lo);
            return false;
        }
        out[i] = v[i];
    }
    return true;
}

bool nn_geom_attrs(const lt_node *n, int nsp, nn_geom *g, char *err, size_t errn) {
    if (nsp < 1 || nsp > NN_MAX_SP) {
        snprintf(err, errn, "%d spatial dimensions are not supported (1..%d)", nsp, NN_MAX_SP);
        return false;
    }
    g->nsp = nsp;
    int64_t pads[2 * NN_MAX_SP];
    if (!read_list(n, "strides", nsp, 1, 1, g->s, err, errn)) return false;
    if (!read_list(n, "dilations", nsp, 1, 1, g->d, err, errn)) return false;
    if (!read_list(n, "pads", 2 * nsp, 0, 0, pads, err, errn)) return false;
    for (int i = 0; i < nsp; i++) {
        g->pb[i] = pads[i];
        g->pe[i] = pads[nsp + i];
    }
    return true;
}

/* The error of a window that fits nowhere: every output size must be >= 1 (as onnxruntime). */
static bool out_empty(int i, int64_t in, int64_t span, const nn_geom *g, char *err, size_t errn) {
    snprintf(err, errn,
             "spatial dim %d: the window of extent %lld does not fit the input of size %lld with pads %lld and %lld "
             "(output size < 1)",
             i, (long long)span, (long long)in, (long long)g->pb[i], (long long)g->pe[i]);
    return false;
}

bool nn_geom_init(const lt_node *n, int nsp, const int64_t *in, const int64_t *kernel, bool pool,
                  nn_geom *g, char *err, size_t errn) {
    if (!nn_geom_attrs(n, nsp, g, err, errn)) return false;
    nn_autopad ap;
    if (!nn_parse_autopad(n, &ap, err, errn)) return false;
    const int64_t *ks;
    int kc = lt_attr_ints(n, "kernel_shape", &ks);
    if (ks) {
        if (kc != nsp) {
            snprintf(err, errn, "kernel_shape has %d entries, expected %d", kc, nsp);
            return false;
        }
        for (int i = 0; i < nsp; i++) {
            if (ks[i] < 1) {
                snprintf(err, errn, "kernel_shape[%d] = %lld must be >= 1", i, (long long)ks[i]);
                return false;
            }
            if (kernel && kernel[i] >= 0 && kernel[i] != ks[i]) {
                snprintf(err, errn, "kernel_shape[%d] = %lld disagrees with the weight's %lld", i,
                         (long long)ks[i], (long long)kernel[i]);
                return false;
            }
            g->k[i] = ks[i];
        }
    } else if (kernel) {
        for (int i = 0; i < nsp; i++) g->k[i] = kernel[i];
    } else {
        snprintf(err, errn, "attribute kernel_shape is required");
        return false;
    }
    bool ceil_mode = pool && lt_attr_int(n, "ceil_mode", 0) != 0;
    for (int i = 0; i < nsp; i++) {
        g->in[i] = in[i];
        g->out[i] = -1;
        if (g->k[i] < 0) { /* unknown kernel (inference only) */
            if (ap != NN_PAD_NOTSET && ap != NN_PAD_VALID && in[i] >= 0)
                g->out[i] = (in[i] + g->s[i] - 1) / g->s[i];
            continue;
        }
        int64_t span;
        if (g->k[i] < 1 || !nn_span(g->k[i], g->d[i], &span)) {
            snprintf(err, errn, "kernel size %lld with dilation %lld is invalid", (long long)g->k[i],
                     (long long)g->d[i]);
            return false;
        }
        /* onnxruntime's pooling rule: an explicit pad is smaller than the kernel (a window made only
         * of padding has no element to pool) */
        if (pool && ap == NN_PAD_NOTSET && (g->pb[i] >= g->k[i] || g->pe[i] >= g->k[i])) {
            snprintf(err, errn, "pads %lld and %lld of spatial dim %d must be smaller than the kernel size %lld",
                     (long long)g->pb[i], (long long)g->pe[i], i, (long long)g->k[i]);
            return false;
        }
        if (ap == NN_PAD_VALID) g->pb[i] = g->pe[i] = 0;
        if (in[i] < 0) continue;
        if (ap == NN_PAD_SAME_UPPER || ap == NN_PAD_SAME_LOWER) {
            int64_t o = in[i] / g->s[i] + (in[i] % g->s[i] != 0), total;
            if (!lt_mul_i64(o > 0 ? o - 1 : 0, g->s[i], &total) || !lt_add_i64(total, span - in[i], &total)) {
                snprintf(err, errn, "window geometry overflows");
                return false;
            }
            if (total < 0) total = 0;
            int64_t half = total / 2;
            g->pb[i] = ap == NN_PAD_SAME_UPPER ? half : total - half;
            g->pe[i] = total - g->pb[i];
            g->out[i] = o;
            if (o < 1) return out_empty(i, in[i], span, g, err, errn);
            continue;
        }
        int64_t num;
        if (!lt_add_i64(in[i], g->pb[i], &num) || !lt_add_i64(num, g->pe[i], &num)) {
            snprintf(err, errn, "pads overflow");
            return false;
        }
        /* out = floor (ceil with ceil_mode) of num/s, plus 1; a window longer than the padded input
         * gives an empty output (or, with ceil_mode, one partial window) */
        num -= span;
        int64_t s = g->s[i], q = num >= 0 ? num / s : -((-num + s - 1) / s); /* floor(num/s) */
        if (ceil_mode && q * s != num) q++;
        int64_t o = q + 1;
        /* the last window must start inside the input or the leading padding */
        int64_t start;
        if (ceil_mode && o > 0 && (!lt_mul_i64(o - 1, s, &start) || start >= in[i] + g->pb[i])) o--;
        g->out[i] = o > 0 ? o : 0;
        if (o < 1) return out_empty(i, in[i], span, g, err, errn);
        /* every window position the kernels compute must fit in int64 */
        int64_t last;
        if (!lt_mul_i64(g->out[i], s, &last) || !lt_add_i64(last, span, &last)) {
            snprintf(err, errn, "window geometry overflows");
            return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------------------------------------------- */
/* buffers                                                                                         */

bool nn_is_float(lt_dtype dt) {
    return dt == LT_FLOAT || dt == LT_DOUBLE || dt == LT_FLOAT16 || dt == LT_BFLOAT16;
}

void *nn_alloc(lt_eval *ev, const lt_node *n, int64_t count, size_t elem, const char *what) {
    size_t bytes;
    if (count < 0 || !lt_mul_size((size_t)count, elem, &bytes) || (int64_t)bytes > LT_TENSOR_MAX_BYTES) {
        lt_op_error(ev, n, LT_ERR_NOMEM, "scratch buffer for %s is too large", what);
        return NULL;
    }
    void *p = lt_mem_alloc(bytes ? bytes : 1);
    if (!p) lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory (%zu bytes for %s)", bytes, what);
    return p;
}

lt_status nn_f32_view(lt_eval *ev, const lt_node *n, const lt_tensor *t, const float **out, float **owned) {
    *owned = NULL;
    if (t->dtype == LT_FLOAT) {
        *out = t->data;
        return LT_OK;
    }
    float *b = nn_alloc(ev, n, t->numel, sizeof(float), "a float32 copy");
    if (!b) return ev->ctx->status ? ev->ctx->status : LT_ERR_NOMEM;
    if (t->dtype == LT_FLOAT16) {
        const uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++) b[i] = lt_f16_to_f32(h[i]);
    } else {
        for (int64_t i = 0; i < t->numel; i++) b[i] = (float)lt_load_f64(t->data, t->dtype, i);
    }
    *out = b;
    *owned = b;
    return LT_OK;
}

lt_status nn_f64_copy(lt_eval *ev, const lt_node *n, const lt_tensor *t, double **out) {
    double *b = nn_alloc(ev, n, t->numel, sizeof(double), "a float64 copy");
    if (!b) return ev->ctx->status ? ev->ctx->status : LT_ERR_NOMEM;
    if (t->dtype == LT_FLOAT) {
        const float *f = t->data;
        for (int64_t i = 0; i < t->numel; i++) b[i] = f[i];
    } else {
        for (int64_t i = 0; i < t->numel; i++) b[i] = lt_load_f64(t->data, t->dtype, i);
    }
    *out = b;
    return LT_OK;
}

lt_status nn_u64_copy(lt_eval *ev, const lt_node *n, const lt_tensor *t, uint64_t **out) {
    uint64_t *b = nn_alloc(ev, n, t->numel, sizeof(uint64_t), "an integer copy");
    if (!b) return ev->ctx->status ? ev->ctx->status : LT_ERR_NOMEM;
    bool uns = lt_dtype_get(t->dtype)->cls == LT_DC_UINT;
    for (int64_t i = 0; i < t->numel; i++)
        b[i] = uns ? lt_load_u64(t->data, t->dtype, i) : (uint64_t)lt_load_i64(t->data, t->dtype, i);
    *out = b;
    return LT_OK;
}

void nn_store_f32(lt_tensor *t, const float *v) {
    if (t->dtype == LT_FLOAT) {
        memcpy(t->data, v, (size_t)t->numel * sizeof(float));
        return;
    }
    if (t->dtype == LT_FLOAT16) {
        uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++) h[i] = lt_f32_to_f16(v[i]);
        return;
    }
    for (int64_t i = 0; i < t->numel; i++) lt_store_f64(t->data, t->dtype, i, v[i]);
}

void nn_store_f64(lt_tensor *t, const double *v) {
    if (t->dtype == LT_DOUBLE) {
        memcpy(t->data, v, (size_t)t->numel * sizeof(double));
        return;
    }
    if (t->dtype == LT_FLOAT) {
        float *f = t->data;
        for (int64_t i = 0; i < t->numel; i++) f[i] = (float)v[i];
        return;
    }
    for (int64_t i = 0; i < t->numel; i++) lt_store_f64(t->data, t->dtype, i, v[i]);
}

double nn_round_to(lt_dtype dt, double v) {
    switch (dt) {
    case LT_FLOAT: return (float)v;
    case LT_FLOAT16: return lt_f16_to_f32(lt_f64_to_f16(v));
    case LT_BFLOAT16: return lt_bf16_to_f32(lt_f32_to_bf16((float)v));
    default: return v;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* shape inference helpers                                                                          */

bool nn_in_shape(const lt_node *n, int i, int *rank, int64_t *dims) {
    const lt_type *t = lt_infer_in(n, i);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank > LT_MAX_RANK) return false;
    *rank = t->rank;
    for (int d = 0; d < t->rank; d++) dims[d] = t->dims ? t->dims[d].value : -1;
    return true;
}

lt_dtype nn_in_dtype(const lt_node *n, int i) {
    const lt_type *t = lt_infer_in(n, i);
    return t && (t->kind == LT_TK_TENSOR || t->kind == LT_TK_SPARSE_TENSOR) ? t->dtype : LT_UNDEFINED;
}

bool nn_const_ints(const lt_node *n, int i, int64_t *buf, int max, int *count) {
    const lt_tensor *t = lt_infer_const(n, i);
    if (!t || !lt_dtype_is_int(t->dtype) || t->numel > max) return false;
    for (int64_t k = 0; k < t->numel; k++) buf[k] = lt_load_i64(t->data, t->dtype, k);
    *count = (int)t->numel;
    return true;
}

lt_dim nn_in_dim(const lt_node *n, int i, int axis) {
    const lt_type *t = lt_infer_in(n, i);
    if (!t || t->kind != LT_TK_TENSOR || axis < 0 || axis >= t->rank || !t->dims) return (lt_dim){-1, NULL};
    return t->dims[axis];
}

lt_status nn_infer_out(lt_infer *ic, lt_node *n, int i, lt_dtype dt, int rank, const int64_t *dims, lt_dim s0,
                       lt_dim s1) {
    lt_dim d[LT_MAX_RANK];
    if (rank > LT_MAX_RANK) return lt_infer_set(ic, n, i, dt, -1, NULL);
    for (int a = 0; a < rank; a++) d[a] = (lt_dim){dims[a] >= 0 ? dims[a] : -1, NULL};
    if (rank > 0 && dims[0] < 0) d[0] = s0;
    if (rank > 1 && dims[1] < 0) d[1] = s1;
    return lt_infer_set(ic, n, i, dt, rank, d);
}
