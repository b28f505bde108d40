/* nn_einsum.h — an Einsum equation parsed as the interpreter parses it (nn_einsum.c), for passes
 * that rewrite the op into ops lathe compiles.
 *
 * Labels: 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51, the ellipsis dims -> 52.. (right-aligned across
 * the inputs, LT_EINSUM_LETTERS + position among the broadcast ellipsis dims). Each input axis has
 * its label (a label repeated within a term is a diagonal), the output its labels in order (the
 * implicit output when the equation has no '->': the ellipsis dims, then the letters that occur
 * exactly once, alphabetically). Every other label is summed.
 */
#ifndef LT_OPS_NN_EINSUM_H
#define LT_OPS_NN_EINSUM_H

#include "../ops.h"

#define LT_EINSUM_MAX_IN 32
#define LT_EINSUM_LETTERS 52
#define LT_EINSUM_MAX_LAB (LT_EINSUM_LETTERS + LT_MAX_RANK)

typedef struct lt_einsum {
    int nin;
    int rank[LT_EINSUM_MAX_IN];
    int lab[LT_EINSUM_MAX_IN][LT_MAX_RANK]; /* label of each axis of each input */
    int out_rank;
    int out_lab[LT_EINSUM_MAX_LAB];
    int ell;                                /* broadcast ellipsis rank */
    bool used[LT_EINSUM_MAX_LAB];
} lt_einsum;

/* Parse equation eq for nin inputs of the given ranks; false with a message in err when the op
 * refuses it. */
bool lt_einsum_parse(const char *eq, int nin, const int *ranks, lt_einsum *e, char *err, size_t errn);

#endif
