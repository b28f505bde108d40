/* leval.h — a Loop IR interpreter: runs a kernel directly on memory buffers. A debugging aid and the
 * oracle of the schedule tests (a transformed kernel must compute what the original computes).
 *
 * Scalars are evaluated in double (floating dtypes, FLOAT results rounded to float after every
 * operation) or int64 (integers wrap to their width; BOOL is 0/1). Every load and store is
 * bounds-checked; local/shared buffers (ALLOC) are filled with NaN / a garbage pattern so reading
 * what was never written shows. Vector nodes (lanes > 1) are not supported. CALLs go to a
 * user callback (microkernels); without one they fail.
 */
#ifndef LT_LEVAL_H
#define LT_LEVAL_H

#include "loop.h"

/* One argument of a CALL as the callback sees it. */
typedef struct lt_leval_arg {
    lt_dtype dtype;
    void *ptr;       /* ADDR arguments: the element's address; NULL otherwise */
    int64_t avail;   /* ADDR: elements from ptr to the end of its buffer */
    int64_t i;       /* integer and bool values */
    double f;        /* floating values */
} lt_leval_arg;

typedef lt_status (*lt_leval_call_fn)(lt_ctx *ctx, const char *name, int n, const lt_leval_arg *args,
                                      lt_leval_arg *result, void *user);

/* Run k on args[i] = the memory of k->args[i] (k->args[i]->size elements of its dtype, in the
 * layout of base/dtype.h). Errors (out-of-bounds index, division by zero, unknown call, unsupported
 * node) are LT_ERR_INVALID / LT_ERR_UNSUPPORTED naming the kernel, buffer and index. */
lt_status lt_leval(lt_ctx *ctx, const lt_kernel *k, void *const *args, lt_leval_call_fn call, void *user);

#endif
