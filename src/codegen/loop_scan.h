/* loop_scan.h — may a loop carry a marking faithfully? What the emitters ask of a loop before they
 * give it a `parallel` or `simd` pragma: nested loops, calls, stores that do not move with the loop,
 * a buffer loaded and stored at different indices, and the outer variables the body assigns (a
 * reduction when each is only updated by `x = x + ...` or `x = x * ...`). Used by emit.c. */
#ifndef LT_CODEGEN_LOOP_SCAN_H
#define LT_CODEGEN_LOOP_SCAN_H

#include "../loop/loop.h"

typedef struct loop_scan {
    const lt_lvar *v;
    bool *inner;         /* by var id: declared inside the loop (LET or FOR) */
    bool *dep;           /* by var id: the loop variable, or a local whose value depends on it */
    bool nested, call, store_invariant, dependence;
    int n_outer;         /* ASSIGNs to outer variables */
    const lt_lvar *outer[8];
    const char *red_op[8]; /* "+" / "*" for a reduction, NULL otherwise */
} loop_scan;

/* Scan `loop` of a kernel with n_vars variables into s; false when out of memory. */
bool lt_loop_scan(int n_vars, const lt_lnode *loop, loop_scan *s);

#endif
