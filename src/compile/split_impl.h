/* split_impl.h — private to split.c (the cut, the rewrite) and split_rest.c (the rest model, its
 * cache and its runs): the classes of values, the cut, and the rest's structures.
 */
#ifndef LT_SPLIT_IMPL_H
#define LT_SPLIT_IMPL_H

#include "split.h"
#include "family.h"

/* What a main-graph value is to the cut. */
enum { V_HEAD, V_REST, V_PADDED, V_FRONTIER };

typedef struct rest_in {  /* one input of the rest model */
    int value_in;         /* the DataDependentRest node's input holding it (padded: the buffer) */
    int count_in;         /* padded: the node's input holding the count; -1 */
    int axis;             /* padded: the axis whose length is the count (the value is the buffer's
                           * first elements, compact, with that axis count long) */
    const char *label;    /* padded: the op's node, for a count out of range ("node 3 'topk' (TopK)") */
    bool topk;            /* padded: TopK's (the count is its K) */
} rest_in;

typedef struct rest_out { /* one output of the DataDependentRest node */
    int model_out;        /* the rest model's output it is, or -1: */
    int view_of;          /* a padded output the graph returns: this rest model input */
} rest_out;

/* The rest model and its family: one per split plan, or shared by the plans of a family whose shapes
 * split alike (lt_rest_cache: the same model bytes). */
typedef struct rest_model {
    int refs;
    char sha[65];         /* of bytes */
    uint8_t *bytes;       /* the rest model (ONNX) */
    size_t size;
    lt_arena arena;       /* the options' strings */
    lt_compile_options opt;
    lt_model *model;      /* as loaded, the family's (made at the first run) */
    lt_family *fam;
} rest_model;

struct lt_rest_cache {
    rest_model **v;
    int n, cap;
};

struct lt_split {
    lt_arena arena;
    int n_in, n_out, n_model_out;
    rest_in *ins;
    rest_out *outs;
    rest_model *rm;       /* NULL: the rest model was not written (a compile that builds no plan) */
    char first[256];      /* the first data-dependent node, for reports */
};

/* Values in the order first added, each once (what a node or a subgraph reads: a few). */
typedef struct value_set {
    const lt_graph *g;    /* the graph whose reads it collects */
    lt_value **v;
    int n, cap;
    bool nomem;           /* an add failed */
} value_set;
void lt_split_vset_add(value_set *s, lt_value *v);

/* The cut: per value its class, per node whether it is in the rest. */
typedef struct cut {
    const lt_graph *g;
    unsigned char *vclass;  /* per value id */
    bool *rest, *padded;    /* per node index */
    int *pad_axis;          /* per value id: a padded output's data-decided axis (-1) */
    int n_rest, n_frontier, n_padded;
    const lt_node *first;   /* the first frontier node */
    lt_value **in;          /* the rest model's inputs: values crossing (V_HEAD, V_FRONTIER), padded outputs */
    int n_in;
    lt_value **inits;       /* initializers the rest reads */
    int n_inits;
    lt_value **outs;        /* the DataDependentRest node's outputs: graph outputs of the rest, then
                             * padded outputs the graph returns */
    int n_outs, n_model_out;
} cut;

/* The rest model of this cut: written, then the cache's when it holds the same bytes (split_rest.c).
 * *out holds a reference (lt_split_rest_release). */
lt_status lt_split_make_rest(lt_ctx *ctx, const lt_model *m, const lt_compile_options *opt, const cut *c,
                             rest_model **out);
void lt_split_rest_release(rest_model *rm); /* NULL is fine */
/* rm (its bytes and sha set; one reference, which passes to *out) given its compile options (o's
 * target and code generation: lt_split_rest_options), then replaced by the cache's model of the same
 * bytes, or added to the cache (o->rest_cache; none: kept alone). */
lt_status lt_split_rest_share(lt_ctx *ctx, const lt_compile_options *o, rest_model *rm, rest_model **out);
lt_status lt_split_rest_options(lt_ctx *ctx, const lt_compile_options *o, rest_model *rm);
/* A rest_model with one reference and nothing in it yet; NULL when out of memory. */
rest_model *lt_split_rest_new(lt_ctx *ctx);
/* rm's family (its model loaded from its bytes first), made unless it exists. */
lt_status lt_split_rest_family(lt_ctx *ctx, rest_model *rm);
/* Does a compile with these options compile parts at run time (a rest, host steps' subgraphs)? No for
 * no_split and all_host compiles, and for artifacts (saved or loaded: no compiler where they run). */
bool lt_split_compiles_rest(const lt_compile_options *o);

/* A new host tensor of dtype dt and shape dims holding a copy of src, in dev's memory. */
lt_status lt_split_download(lt_ctx *ctx, lt_backend *dev, lt_dtype dt, int rank, const int64_t *dims, const void *src,
                            lt_tensor **out);

/* Run Loop node n (its inputs in: trip count, condition, the initial loop-carried values) with plan,
 * its body's plan compiled for the first iteration's shapes (inputs: the iteration number, the
 * condition, the loop-carried values, then the outer values the body reads, roots[0..n_roots)), and
 * fill out (new references) (loop_run.c). *done false, with nothing written, when the plan cannot
 * run this Loop's iterations: why says why when it is the body (empty when it is the inputs: zero
 * iterations, a malformed trip count); the caller then interprets the Loop. *iterations: how many ran. */
lt_status lt_loop_run(lt_eval *ev, const lt_node *n, lt_plan *plan, lt_datum *const *in, lt_datum *const *roots,
                      int n_roots, lt_datum **out, bool *done, char *why, size_t why_size, int64_t *iterations);

#endif
