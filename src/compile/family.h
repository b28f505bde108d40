/* family.h — one compiled model for every input shape: symbolic dims compiled once.
 *
 * A family holds a model whose inputs have symbolic dims, and hands out a plan for each concrete set
 * of input shapes it is run at. Per new shape the host pipeline runs again at that shape (import,
 * bind, passes, fusion, lowering, schedules: milliseconds), so every shape decision (folding,
 * fusion, kernel choice, memory plan) is the static compiler's; what is not repeated is the
 * compiler: kernels take the extents that differ between shapes as run-time scalars
 * (src/loop/kparams.h), so shapes of one bucket emit the same source and share one built module,
 * loaded once. No C compiler or NVRTC runs for a shape whose bucket exists.
 *
 * Buckets. The first shape makes the first bucket: the model is lowered again at probe shapes
 * (each symbolic dim moved to a prime near it and one near twice it, multiples of 8 also by
 * multiples of 8; kept in its range; a dim of 1 stays 1), and each kernel's immediates that differ
 * between it and the probes of its structure become scalars (lt_kparams_diff); the module is built
 * from the rewritten kernels. A later shape joins a bucket when each of its kernels has the
 * bucket's structure, the same constants where the bucket has constants, and scalars that fit (the
 * guard); the emitted source is then the bucket's, and its module is used (looked up by the
 * source's hash, so a guard that passed wrongly could only cost a compile, never a wrong kernel).
 * A shape no bucket takes makes a new one (one compiler run). Where the best kernel or schedule
 * changes with the size (a batch of 1, a vector tail, a GEMM shape class) the lowering at that
 * shape makes different code: a different bucket, which the report lists.
 *
 * Plans are cached per input shapes (most recently used first, options.max_plans of them); each
 * has its own memory plan, computed for its shape, in one workspace the family holds for all of
 * them (grown to the next power of two when a shape needs more; the cached plans are then dropped).
 * The backend instance, the workspace and the modules belong to the family and outlive its plans.
 */
#ifndef LT_FAMILY_H
#define LT_FAMILY_H

#include "compile.h"

typedef struct lt_family lt_family;

/* A symbolic dim's range (`--dim seq=1..4096`): a shape outside it is refused, and probes stay in
 * it. Dims without one are unbounded (>= 1). */
typedef struct lt_dim_range {
    const char *name;
    int64_t lo, hi;
} lt_dim_range;

typedef struct lt_family_options {
    lt_compile_options compile;  /* every compile's options (copied; its strings must outlive the family).
                                  * given_inputs is set by the family; save_prebuilt / prebuilt
                                  * and the sharing hooks must be unset. With emit_only, buckets
                                  * only: each shape is lowered and emitted, no module is built and
                                  * lt_family_plan gives no plan (NULL); the modules counted are the
                                  * distinct sources, the builds the shapes would need (no device) */
    /* The model as loaded (dims symbolic): its inputs' names and declared types, the caller's (it
     * must outlive the family; nothing compiles it). */
    const lt_model *model;
    /* A fresh copy of it, which the family binds and compiles: the caller's loader (a file, bytes in
     * memory); the family frees it with lt_model_free. */
    lt_status (*load)(void *user, lt_ctx *ctx, lt_model **out);
    void *load_user;
    int n_ranges;
    const lt_dim_range *ranges;
    int max_plans;               /* plans kept (0: 8) */
} lt_family_options;

typedef struct lt_family_stats {
    int plans_built;             /* shapes compiled by the host pipeline */
    int plan_hits;               /* runs that found their shape's plan */
    int buckets;
    int modules_built;           /* C compiler / NVRTC runs (or cache loads) for new buckets */
    int modules_reused;          /* plans that took a bucket's module */
    int kernels, kernels_scalar; /* in the last plan built: kernels, those with run-time scalars */
    int64_t workspace_bytes;     /* the one workspace every plan runs in (0: none yet) */
    int workspace_grown;         /* times a shape needed a bigger one (the cached plans were dropped) */
    int graphs;                  /* device plans: instantiated graphs (a few per bucket and segment) */
    int64_t const_bytes;         /* device plans: bytes of the constants' buffers the plans share */
    int consts_shared;           /* times a plan took a constant's buffer an earlier plan uploaded */
    int64_t pack_bytes;          /* bytes of the packed weights' buffers the plans share */
    int packs_shared;            /* times a plan's packed weight was replaced by an earlier plan's */
    int graphs_instantiated;     /* times one was instantiated (its first run, or an update refused) */
    int graphs_updated;          /* times one was updated in place to another shape's plan */
} lt_family_stats;

lt_status lt_family_new(lt_ctx *ctx, const lt_family_options *o, lt_family **out);
void lt_family_free(lt_family *f); /* NULL is fine */

/* The model as loaded (symbolic dims): names, types and input order of every plan. */
const lt_model *lt_family_model(const lt_family *f);

/* The plan for these shapes of the model's inputs without an initializer, in graph order (n of
 * them: rank and dims each): cached, or compiled now. It belongs to the family and stays valid until
 * the next lt_family_plan call. A shape outside a range, or one the model refuses at shape
 * inference, is an error naming the input and dim. */
lt_status lt_family_plan(lt_ctx *ctx, lt_family *f, int n, const int *ranks, const int64_t *const *dims, lt_plan **out);

void lt_family_get_stats(const lt_family *f, lt_family_stats *out);
/* The module the last plan compiled by lt_family_plan took, numbered from 1 in the order modules were
 * built (with emit_only: distinct sources); 0 when it has no compiled kernels. */
int lt_family_last_module(const lt_family *f);
/* The buckets, one line each ("bucket 1: made at batch=2, sequence=16; 31 kernels, 24 with run-time
 * scalars (57 scalars); 3 shapes"), after a summary line. */
void lt_family_print(const lt_family *f, lt_strbuf *out);

#endif
