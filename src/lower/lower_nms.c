/* lower_nms.c — `lower` hook of NonMaxSuppressionPadded (src/ops/shape/shape_split.c). */
#include "lower_impl.h"

const lt_lower_reg lt_lower_nms[] = {
    {0},
};
