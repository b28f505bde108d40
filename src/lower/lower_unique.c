/* lower_unique.c — `lower` hook of UniquePadded (src/ops/shape/shape_split.c). */
#include "lower_impl.h"

const lt_lower_reg lt_lower_unique[] = {
    {0},
};
