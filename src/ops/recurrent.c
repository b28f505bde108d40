/* recurrent.c — the recurrent family of ops (see ops.def): infer and eval hooks. */
#include "ops.h"

const lt_op_reg lt_ops_recurrent[] = {
    {0, NULL, NULL},
};
