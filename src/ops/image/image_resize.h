/* image_resize.h — the tap tables of a Resize or Upsample whose scales / sizes are constants, as the
 * interpreter computes them (image_resize.c), for passes that rewrite the op into ops lathe compiles.
 *
 * For each axis of the input: n taps per output position (0: the axis is not resized), the clamped
 * input index of each tap and, for linear and cubic modes, its weight (the output is the separable
 * weighted sum, axis after axis; for nearest, the element at the picked index).
 */
#ifndef LT_OPS_IMAGE_RESIZE_H
#define LT_OPS_IMAGE_RESIZE_H

#include "../ops.h"

typedef struct lt_resize_taps {
    int64_t in, out; /* the axis's size before and after */
    int n;           /* taps per output position; 0: untouched */
    int64_t *idx;    /* out * n input indices (heap) */
    double *w;       /* out * n weights (heap; NULL for nearest) */
} lt_resize_taps;

/* Tables of Resize/Upsample node n for an input of shape in_dims[rank] (the node's scale / size / roi
 * inputs must be constants). *nearest: one tap, no weights. LT_ERR_UNSUPPORTED (with a message in
 * ctx) for what the tables do not express: tf_crop_and_resize (extrapolation), nearest with
 * exclude_outside, a linear or cubic mode over a non-float input, parameters that are not constants;
 * LT_ERR_INVALID for parameters the op refuses. Free with lt_resize_taps_free. */
lt_status lt_resize_taps_build(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *in_dims, lt_dtype dtype,
                               lt_resize_taps *axes, bool *nearest);
void lt_resize_taps_free(lt_resize_taps *axes, int rank);

#endif
