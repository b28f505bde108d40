/* misc.c — the misc family of ops (see ops.def): infer and eval hooks. */
#include "ops.h"

const lt_op_reg lt_ops_misc[] = {
    {0, NULL, NULL},
};
