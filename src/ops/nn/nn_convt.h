/* nn_convt.h — the geometry of a ConvTranspose as the interpreter computes it (nn_conv.c), for passes
 * that rewrite the op into ops lathe compiles: strides, dilations, kernel, the effective pads (from
 * pads, auto_pad or output_shape) and the output size per spatial axis. Output position o of axis i
 * reads input positions p with o + pad_begin[i] = p * stride[i] + kk * dilation[i], kk < kernel[i]
 * (the full extent is stride * (in - 1) + span + output_padding; positions past it get the bias).
 */
#ifndef LT_OPS_NN_CONVT_H
#define LT_OPS_NN_CONVT_H

#include "../ops.h"

typedef struct lt_convt_geom {
    int nsp; /* spatial axes */
    int64_t in[LT_MAX_RANK], k[LT_MAX_RANK], s[LT_MAX_RANK], d[LT_MAX_RANK];
    int64_t pad_begin[LT_MAX_RANK], pad_end[LT_MAX_RANK], out[LT_MAX_RANK];
} lt_convt_geom;

/* Geometry of ConvTranspose node n over nsp spatial axes of sizes in[] with weight kernel sizes
 * kernel[] (all known); false with a message in err when the op refuses them. */
bool lt_convt_geometry(const lt_node *n, int nsp, const int64_t *in, const int64_t *kernel, lt_convt_geom *g,
                       char *err, size_t errn);

#endif
