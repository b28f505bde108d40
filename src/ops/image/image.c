/* image.c — the image family of ops (see ops.def): the family table and helpers its files share.
 *
 * The hooks live in image_resize.c (Resize, Upsample), image_sample.c (GridSample, AffineGrid),
 * image_roi.c (RoiAlign, MaxRoiPool, NonMaxSuppression), image_signal.c (DFT, STFT, the window
 * functions, MelWeightMatrix) and image_decode.c (ImageDecoder); image_impl.h declares them.
 */
#include "image_impl.h"

#include <float.h>
#include <math.h>

const lt_op_reg lt_ops_image[] = {
    {LT_OP_Resize, lt_img_resize_infer, lt_img_resize_eval},
    {LT_OP_Upsample, lt_img_upsample_infer, lt_img_upsample_eval},
    {LT_OP_GridSample, lt_img_gridsample_infer, lt_img_gridsample_eval},
    {LT_OP_AffineGrid, lt_img_affinegrid_infer, lt_img_affinegrid_eval},
    {LT_OP_RoiAlign, lt_img_roialign_infer, lt_img_roialign_eval},
    {LT_OP_MaxRoiPool, lt_img_maxroipool_infer, lt_img_maxroipool_eval},
    {LT_OP_NonMaxSuppression, lt_img_nms_infer, lt_img_nms_eval},
    {LT_OP_DFT, lt_img_dft_infer, lt_img_dft_eval},
    {LT_OP_STFT, lt_img_stft_infer, lt_img_stft_eval},
    {LT_OP_BlackmanWindow, lt_img_window_infer, lt_img_window_eval},
    {LT_OP_HammingWindow, lt_img_window_infer, lt_img_window_eval},
    {LT_OP_HannWindow, lt_img_window_infer, lt_img_window_eval},
    {LT_OP_MelWeightMatrix, lt_img_mel_infer, lt_img_mel_eval},
    {LT_OP_ImageDecoder, lt_img_decoder_infer, lt_img_decoder_eval},
    {0, NULL, NULL},
};

/* Largest finite value of a float type (ml_dtypes' finfo().max). */
static double float_max(lt_dtype dt) {
    switch (dt) {
    case LT_FLOAT: return FLT_MAX;
    case LT_FLOAT16: return 65504.0;
    case LT_BFLOAT16: return 3.3895313892515355e38;
    case LT_FLOAT8E4M3FN: return 448.0;
    case LT_FLOAT8E4M3FNUZ: return 240.0;
    case LT_FLOAT8E5M2: case LT_FLOAT8E5M2FNUZ: return 57344.0;
    case LT_FLOAT4E2M1: return 6.0;
    case LT_FLOAT8E8M0: return 1.7014118346046923e38;
    default: return DBL_MAX;
    }
}

static void int_range(lt_dtype dt, double *lo, double *hi) {
    switch (dt) {
    case LT_INT8: *lo = -128; *hi = 127; break;
    case LT_UINT8: *lo = 0; *hi = 255; break;
    case LT_INT16: *lo = -32768; *hi = 32767; break;
    case LT_UINT16: *lo = 0; *hi = 65535; break;
    case LT_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    case LT_UINT32: *lo = 0; *hi = 4294967295.0; break;
    case LT_INT4: *lo = -8; *hi = 7; break;
    case LT_UINT4: *lo = 0; *hi = 15; break;
    case LT_INT2: *lo = -2; *hi = 1; break;
    case LT_UINT2: *lo = 0; *hi = 3; break;
    case LT_UINT64: *lo = 0; *hi = 18446744073709551615.0; break;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854775807.0; break;
    }
}

void lt_img_store_sat(void *data, lt_dtype dt, int64_t i, double v) {
    lt_dclass c = lt_dtype_get(dt)->cls;
    if (c == LT_DC_SINT || c == LT_DC_UINT) {
        double lo, hi;
        int_range(dt, &lo, &hi);
        if (isnan(v)) v = 0;
        v = nearbyint(v);
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        /* lt_store_f64 saturates the 64-bit types at their limits (no UB for 2^63, 2^64). */
        lt_store_f64(data, dt, i, v);
        return;
    }
    if (c == LT_DC_FLOAT) {
        double m = float_max(dt);
        if (v > m) v = m;
        else if (v < -m) v = -m;
    }
    lt_store_f64(data, dt, i, v);
}

bool lt_img_numeric(lt_dtype dt) {
    lt_dclass c = lt_dtype_get(dt)->cls;
    return c == LT_DC_FLOAT || c == LT_DC_SINT || c == LT_DC_UINT;
}

lt_status lt_img_scalar_i64(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what,
                            int64_t *out) {
    if (t->numel != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must hold exactly one value, got %lld", what,
                           (long long)t->numel);
    if (!lt_dtype_is_int(t->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be an integer tensor, got %s", what,
                           lt_dtype_name(t->dtype));
    *out = lt_load_i64(t->data, t->dtype, 0);
    return LT_OK;
}

lt_status lt_img_scalar_f64(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what,
                            double *out) {
    if (t->numel != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must hold exactly one value, got %lld", what,
                           (long long)t->numel);
    if (!lt_img_numeric(t->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be numeric, got %s", what,
                           lt_dtype_name(t->dtype));
    *out = lt_load_f64(t->data, t->dtype, 0);
    return LT_OK;
}

bool lt_img_const_i64(const lt_node *n, int i, int64_t *out) {
    const lt_tensor *t = lt_infer_const(n, i);
    if (!t || t->numel != 1 || !lt_dtype_is_int(t->dtype)) return false;
    *out = lt_load_i64(t->data, t->dtype, 0);
    return true;
}

const lt_type *lt_img_ranked(const lt_node *n, int i) {
    const lt_type *t = lt_infer_in(n, i);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank > LT_MAX_RANK) return NULL;
    if (t->rank > 0 && !t->dims) return NULL;
    return t;
}
