/* lower_conv.h — the geometry of a convolution node as the lowerings see it, shared by Conv
 * (lower_nn.c) and ConvInteger (lower_int8.c): static X, W and Y of one rank >= 3, a valid group
 * split, and the output size the window geometry gives (nn_geom of src/ops/nn). */
#ifndef LT_LOWER_CONV_H
#define LT_LOWER_CONV_H

#include "lower_impl.h"

#include "../ops/nn/nn_impl.h"

typedef struct lt_conv_geom {
    nn_geom g;
    int nsp;                 /* spatial dims */
    int64_t N, C, M, group;  /* images, input channels, output channels, groups */
} lt_conv_geom;

/* n's geometry (inputs 0 and 1 X and W, output 0 Y); false with the reason in why when it has none
 * the lowerings take. */
bool lt_lower_conv_geom(const lt_node *n, lt_conv_geom *ci, char *why, size_t size);

#endif
