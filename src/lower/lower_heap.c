/* lower_heap.c — a binary heap of int64 keys kept in a buffer, as Loop IR: the keys and the sift-down
 * that TopK (lower_scan.c, float32 by value-and-index keys) and NonMaxSuppression (lower_nms.c, its
 * candidates by score-and-index keys) share.
 *
 * A key is ord * 2^31 + (2^31 - 1 - index): the order of the element's value (an int32-range integer,
 * lt_f32_order's for a float), then its index, the smaller first; no step of the arithmetic overflows
 * for indices below 2^31. The index comes back from the low 31 bits.
 *
 * The key in flight moves down from slot `start` through a hole: each level reads the left child,
 * takes the right one instead when it ranks before (a select, no branch), and moves that child up
 * while it ranks before the key. "Ranks before" is the larger key in a max-heap, the smaller in a
 * min-heap. The loop runs `levels` iterations (the heap's depth + 1) with an active flag, since the
 * Loop IR has no early exit; the slot function maps a heap slot to its buffer element. */
#include "lower_impl.h"

#define K (lc->k)

lt_lnode *lt_lower_heap_sift_down(lt_lctx *lc, lt_lbuf *buf, lt_heap_slot_fn slot, void *user, lt_lvar *key,
                                  lt_lnode *start, lt_lnode *size, int levels, bool max_heap) {
    lt_lvar *sz = lt_kernel_var(K, "sz", LT_INT64), *pos = lt_kernel_var(K, "pos", LT_INT64);
    lt_lvar *act = lt_kernel_var(K, "act", LT_INT64), *q = lt_kernel_var(K, "q", LT_INT64);
    lt_lvar *l = lt_kernel_var(K, "l", LT_INT64), *w = lt_kernel_var(K, "w", LT_INT64);
    lt_lvar *wk = lt_kernel_var(K, "wk", LT_INT64), *rk = lt_kernel_var(K, "rk", LT_INT64);
    lt_lvar *tk = lt_kernel_var(K, "tk", LT_BOOL);
    if (!sz || !pos || !act || !q || !l || !w || !wk || !rk || !tk) return NULL;
    lt_lop before = max_heap ? LT_LOP_GT : LT_LOP_LT;
    lt_lnode *pick[4] = {
        lt_l_let(K, rk, lt_l_load(K, buf, slot(user, lt_l_add(K, lt_l_var(K, l), lt_l_int(K, 1))))),
        lt_l_let(K, tk, lt_l_binary(K, before, lt_l_var(K, rk), lt_l_var(K, wk))),
        lt_l_assign(K, w, lt_l_select(K, lt_l_var(K, tk), lt_l_add(K, lt_l_var(K, l), lt_l_int(K, 1)), lt_l_var(K, w))),
        lt_l_assign(K, wk, lt_l_select(K, lt_l_var(K, tk), lt_l_var(K, rk), lt_l_var(K, wk))),
    };
    lt_lnode *move[2] = {lt_l_store(K, buf, slot(user, lt_l_var(K, pos)), lt_l_var(K, wk)), lt_l_assign(K, pos, lt_l_var(K, w))};
    lt_lnode *child[4] = {
        lt_l_let(K, w, lt_l_var(K, l)),
        lt_l_let(K, wk, lt_l_load(K, buf, slot(user, lt_l_var(K, l)))),
        lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_add(K, lt_l_var(K, l), lt_l_int(K, 1)), lt_l_var(K, sz)),
                lt_l_seq(K, 4, pick), NULL),
        lt_l_if(K, lt_l_binary(K, before, lt_l_var(K, wk), lt_l_var(K, key)), lt_l_seq(K, 2, move),
                lt_l_assign(K, act, lt_l_int(K, 0))),
    };
    lt_lnode *level[2] = {
        lt_l_let(K, l, lt_l_add(K, lt_l_mul(K, lt_l_var(K, pos), lt_l_int(K, 2)), lt_l_int(K, 1))),
        lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, l), lt_l_var(K, sz)), lt_l_seq(K, 4, child),
                lt_l_assign(K, act, lt_l_int(K, 0))),
    };
    lt_lnode *body = lt_l_if(K, lt_l_binary(K, LT_LOP_NE, lt_l_var(K, act), lt_l_int(K, 0)), lt_l_seq(K, 2, level), NULL);
    lt_lnode *all[5] = {
        lt_l_let(K, sz, size), lt_l_let(K, pos, start), lt_l_let(K, act, lt_l_int(K, 1)),
        lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, levels), LT_LOOP_SERIAL, body),
        lt_l_store(K, buf, slot(user, lt_l_var(K, pos)), lt_l_var(K, key)),
    };
    return lt_l_seq(K, 5, all);
}

lt_lnode *lt_lower_heap_key(lt_lctx *lc, lt_lnode *ord, lt_lnode *index) {
    return lt_l_add(K, lt_l_mul(K, ord, lt_l_int(K, (int64_t)1 << 31)), lt_l_binary(K, LT_LOP_SUB, lt_l_int(K, 0x7fffffffLL), index));
}

lt_lnode *lt_lower_heap_key_index(lt_lctx *lc, lt_lnode *key) {
    return lt_l_binary(K, LT_LOP_SUB, lt_l_int(K, 0x7fffffffLL), lt_l_binary(K, LT_LOP_BITAND, key, lt_l_int(K, 0x7fffffffLL)));
}
