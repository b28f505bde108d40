/* ops.c — the op table generated from ops.def, lookup by (domain, op_type), and the hook index built
 * from the family tables (lt_ops_<family>[]). */
#include "ops.h"

#include <stdio.h>
#include <string.h>
#include <threads.h>

static const lt_op_info g_infos[LT_OP_COUNT] = {
    [LT_OP_UNKNOWN] = {"<unknown>", "", "", LT_PK_OPAQUE, 0},
#define LT_OP(name, domain, pattern, family, flags) \
    [LT_OP_##name] = {#name, domain, #family, LT_PK_##pattern, LT_OPF_##flags},
#define LT_OP_NAMED(id, name, domain, pattern, family, flags) \
    [LT_OP_##id] = {name, domain, #family, LT_PK_##pattern, LT_OPF_##flags},
#include "ops.def"
#undef LT_OP_NAMED
#undef LT_OP
};

const lt_op_info *lt_op_info_get(int op) {
    return (op > 0 && op < LT_OP_COUNT) ? &g_infos[op] : &g_infos[LT_OP_UNKNOWN];
}

int lt_op_lookup(const char *domain, const char *op_type) {
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (int i = 1; i < LT_OP_COUNT; i++)
        if (strcmp(g_infos[i].name, op_type) == 0 && strcmp(g_infos[i].domain, domain) == 0) return i;
    return LT_OP_UNKNOWN;
}

static lt_op_hooks g_hooks[LT_OP_COUNT];
static once_flag g_hooks_once = ONCE_FLAG_INIT;

static void build_hooks(void) {
    const lt_op_reg *const families[] = {lt_ops_elementwise, lt_ops_reduce, lt_ops_shape, lt_ops_nn,
                                         lt_ops_control, lt_ops_recurrent, lt_ops_image, lt_ops_misc,
                                         lt_ops_nchwc, lt_ops_split, lt_ops_contrib};
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const lt_op_reg *r = families[f]; r->op; r++)
            if (r->op > 0 && r->op < LT_OP_COUNT) g_hooks[r->op] = (lt_op_hooks){r->infer, r->eval};
}

const lt_op_hooks *lt_op_hooks_get(int op) {
    call_once(&g_hooks_once, build_hooks);
    return (op > 0 && op < LT_OP_COUNT) ? &g_hooks[op] : &g_hooks[LT_OP_UNKNOWN];
}
