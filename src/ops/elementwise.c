/* elementwise.c — the elementwise family of ops (see ops.def): infer and eval hooks. */
#include "ops.h"

const lt_op_reg lt_ops_elementwise[] = {
    {0, NULL, NULL},
};
