/* api_impl.h — what the public API's files (api.c: models, tensors, the interpreter; api_compile.c:
 * compiled models) share: the tensor handle and handing outputs to the caller.
 */
#ifndef LT_API_IMPL_H
#define LT_API_IMPL_H

#include "lathe.h"

#include "graph/graph.h"

struct lathe_tensor {
    lt_tensor *t;
};

/* outs[k] (one per graph output of g) -> new lathe_tensor handles in outputs[k], all or none:
 * non-tensors are LT_ERR_UNSUPPORTED naming the output; a tensor shared with the model or viewing
 * its memory is copied. */
lt_status lt_api_hand_outputs(lt_ctx *ctx, const lt_graph *g, lt_datum *const *outs, lathe_tensor **outputs);

/* Apply the load options' shapes and dims to a loaded model. */
lt_status lt_api_bind(lt_ctx *ctx, lt_model *lm, const lathe_load_options *opts);
/* ctx's message into errbuf (truncated; nothing when errbuf is NULL). */
void lt_api_copy_err(const lt_ctx *ctx, char *errbuf, size_t n);

#endif
