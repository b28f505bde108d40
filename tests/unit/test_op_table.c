/* test_op_table.c — the op table's completeness (docs/AUDIT-IMPORT-INTERPRETER.md, 4.4).
 *   - every op lathe can evaluate also has a shape/type inference hook ("inference for every
 *     supported op"); ops listed in ops.def without an eval hook (reported as unsupported, by the
 *     table's design) are printed, and must be rare;
 *   - every op's name and domain look it up again (lt_op_lookup round trip, "ai.onnx" == ""),
 *     and unknown names, wrong domains and out-of-range ids fall back to LT_OP_UNKNOWN;
 *   - no two table lines share (domain, name).
 * Exits non-zero on failure, naming each op at fault. */
#include "ops/ops.h"

#include <stdio.h>
#include <string.h>

static int failures;
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "test_op_table: " __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                                       \
        failures++;                                                                                \
    } while (0)

int main(void) {
    int evaluable = 0, listed_only = 0;
    for (int op = 1; op < LT_OP_COUNT; op++) {
        const lt_op_info *info = lt_op_info_get(op);
        const lt_op_hooks *h = lt_op_hooks_get(op);
        if (!info || !info->name || !*info->name || !info->domain) {
            FAIL("op %d has no name or domain", op);
            continue;
        }
        const char *dom = *info->domain ? info->domain : "ai.onnx";
        if (!h) {
            FAIL("%s (%s): lt_op_hooks_get returned NULL", info->name, dom);
            continue;
        }
        if (!h->eval) {
            printf("test_op_table: note: %s (%s) is listed but has no eval hook (unsupported)\n", info->name, dom);
            listed_only++;
        }
        if (h->eval && !h->infer) FAIL("%s (%s): has an eval hook but no infer hook", info->name, dom);
        if (h->eval) evaluable++;
        if (lt_op_lookup(info->domain, info->name) != op)
            FAIL("%s (%s): lt_op_lookup finds %d, not %d", info->name, dom, lt_op_lookup(info->domain, info->name), op);
        if (!*info->domain && lt_op_lookup("ai.onnx", info->name) != op)
            FAIL("%s: not found under the domain spelled 'ai.onnx'", info->name);
        if (lt_op_lookup("audit.no.such.domain", info->name) != LT_OP_UNKNOWN)
            FAIL("%s (%s): found under a domain it does not belong to", info->name, dom);
        for (int k = op + 1; k < LT_OP_COUNT; k++) {
            const lt_op_info *o = lt_op_info_get(k);
            if (o && o->name && strcmp(o->name, info->name) == 0 && strcmp(o->domain, info->domain) == 0)
                FAIL("%s (%s): listed twice (ids %d and %d)", info->name, dom, op, k);
        }
    }
    if (lt_op_lookup("", "AuditNoSuchOp") != LT_OP_UNKNOWN) FAIL("an unknown op name was found");
    if (lt_op_lookup("", "relu") != LT_OP_UNKNOWN) FAIL("op lookup ignores case ('relu')");
    if (lt_op_hooks_get(-1) == NULL || lt_op_hooks_get(LT_OP_COUNT + 5) == NULL) FAIL("out-of-range ids give NULL hooks");
    if (lt_op_hooks_get(LT_OP_UNKNOWN)->eval) FAIL("LT_OP_UNKNOWN has an eval hook");
    if (evaluable < 150) FAIL("only %d evaluable ops", evaluable);
    if (listed_only > 3) FAIL("%d ops are listed in ops.def without an eval hook", listed_only);
    if (failures) {
        fprintf(stderr, "test_op_table: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_op_table: ok (%d ops, all with infer and eval hooks)\n", evaluable);
    return 0;
}
