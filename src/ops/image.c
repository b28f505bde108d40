/* image.c — the image family of ops (see ops.def): infer and eval hooks. */
#include "ops.h"

const lt_op_reg lt_ops_image[] = {
    {0, NULL, NULL},
};
