/* split.h — a model cut at its data-dependent ops, the rest compiled at run time for the sizes the
 * data gives.
 *
 * An op whose output size depends on the values of its input (NonZero, NonMaxSuppression, Unique,
 * TopK with a computed k, Compress, a Loop's scan outputs) leaves every node after it without a
 * static shape: compiled alone, those would all be host steps. The compile's split stage (after the
 * graph passes, at the shapes the model is compiled for) cuts the main graph there:
 *   - a frontier node is one whose inputs all have static shapes and whose outputs do not (tensors
 *     of known dtype and rank); the rest is every node that reads, directly or in a subgraph, a
 *     frontier output or the output of another node of the rest;
 *   - NonZero on a static input of rank >= 1 becomes NonZeroPadded (src/ops/shape/shape_split.c), a
 *     compiled kernel whose output has a size known now (rank x numel) plus the count; TopK with a
 *     K computed or given becomes TopKPadded, Compress CompressPadded, likewise (outputs of the
 *     input's shape, the data-decided axis compact at their start); NonMaxSuppression on static
 *     boxes and scores becomes NonMaxSuppressionPadded ([B * C * N, 3]: every box of every class),
 *     a flattened, sorted Unique of numbers UniquePadded (Y, indices and counts numel long;
 *     inverse_indices static); any other frontier node (Loop, Unique along an axis, ...) stays a
 *     host step (its outputs are datums of the sizes it found);
 *   - the rest leaves the graph for one DataDependentRest node that reads every value the rest reads
 *     from before the cut (the values crossing, the padded buffers and their counts) and produces
 *     the graph outputs the rest computes. It is written as an ONNX model (its inputs: the values
 *     crossing, with each size the data decides as an unnamed symbolic dim; its initializers: the
 *     weights it reads), loaded at the first run and compiled as a family (src/compile/family.h):
 *     the sizes a run finds select a plan, compiled once per bucket, with no C compiler or NVRTC run
 *     for sizes whose bucket exists. The rest may be split again at its own data-dependent ops.
 * The plan runs the DataDependentRest step through its rest hook (lt_plan_set_rest): the padded
 * outputs are viewed as [rank, count] (no copy), the family's plan for those shapes runs, and its
 * outputs become the step's.
 * Not split: compiles that save or load an artifact (a .lathe holds no compiler for the rest: its
 * data-dependent ops and what follows stay host steps), all_host compiles, a rest that would read a
 * value that is not a tensor of known dtype and rank.
 * Entry points: lt_split_graph (the stage), lt_split_attach (the rest to the plan), lt_split_free,
 * lt_rest_cache_new / lt_rest_cache_free (rests shared by a family's plans).
 */
#ifndef LT_SPLIT_H
#define LT_SPLIT_H

#include "compile.h"

typedef struct lt_split lt_split;

/* The rest models of one family's plans (src/compile/family.c sets lt_compile_options.rest_cache):
 * compiled for every shape, a split writes the dims of the rest model's inputs that have the sizes of
 * the family's symbolic dims (lt_compile_options.symbolic_sizes), and every dim of its outputs, as
 * symbolic dims, so the plans of the input shapes write the same model; the cache hands them one
 * rest model and its family (found by the model's SHA-256), compiled once. */
lt_rest_cache *lt_rest_cache_new(void); /* NULL: out of memory */
void lt_rest_cache_free(lt_rest_cache *c); /* after the plans that use it */

/* Split the main graph of m (after the passes) when it has data-dependent ops. *out: NULL when the
 * graph is left as it is, else the rest, to attach to the plan (or free). build_rest false: the
 * graph is cut the same way but the rest model is not written (a compile that stops before the
 * plan). The report's split counts are filled. */
lt_status lt_split_graph(lt_ctx *ctx, lt_model *m, const lt_compile_options *opt, bool build_rest,
                         lt_compile_report *r, lt_split **out);
/* The plan takes the rest over (freed with the plan). */
void lt_split_attach(lt_split *s, lt_plan *p);
void lt_split_free(lt_split *s); /* NULL is fine */

/* The runner of the subgraphs p's host steps hold (a Loop's body, an If's branches), compiled at
 * run time (src/compile/split_body.c); nothing when p has none or opt compiles no rest (split()'s
 * conditions). m is p's model. */
lt_status lt_split_attach_subgraphs(lt_ctx *ctx, const lt_model *m, const lt_compile_options *opt, lt_plan *p);

#endif
