/* graph.h — the graph IR: typed values (dims may be symbolic), nodes with attributes, subgraphs.
 *
 * A model owns one arena (the model lifetime); every graph, node, value, attribute and name lives in
 * it. Initializer tensors are lt_tensor objects that usually borrow their data from the mapped model
 * file (zero-copy); the model releases them when it is freed.
 * Invariants (checked by lt_graph_verify): nodes are in topological order; every node input is a
 * graph input, an initializer, an earlier node's output, or an outer-scope value (subgraphs only:
 * value->outer points at the value in an enclosing graph); every value has exactly one definition.
 */
#ifndef LT_GRAPH_H
#define LT_GRAPH_H

#include "../base/tensor.h"

struct lt_graph;
struct lt_node;

/* A dimension: value >= 0 when known; otherwise value is -1 and param (if non-NULL) names it. */
typedef struct lt_dim {
    int64_t value;
    const char *param;
} lt_dim;

typedef enum lt_type_kind {
    LT_TK_UNKNOWN = 0, /* nothing known yet */
    LT_TK_TENSOR,
    LT_TK_SEQUENCE,
    LT_TK_OPTIONAL,
    LT_TK_MAP,
    LT_TK_SPARSE_TENSOR
} lt_type_kind;

typedef struct lt_type {
    lt_type_kind kind;
    lt_dtype dtype;       /* TENSOR / SPARSE: element type (UNDEFINED if unknown); MAP: key type */
    int rank;             /* TENSOR: -1 when the rank is unknown */
    lt_dim *dims;         /* rank entries (arena) */
    struct lt_type *elem; /* SEQUENCE / OPTIONAL element type; MAP value type */
} lt_type;

typedef struct lt_value {
    const char *name;       /* "" never: omitted optional inputs are NULL pointers in node->in */
    int id;                 /* index in its graph's values[] */
    lt_type type;
    struct lt_node *producer; /* NULL for graph inputs, initializers and outer-scope references */
    int producer_out;
    lt_tensor *init;        /* initializer / constant value, or NULL */
    struct lt_value *outer; /* subgraphs: the enclosing graph's value this name refers to */
    bool is_input, is_output;
} lt_value;

typedef enum lt_attr_type {
    LT_AT_UNDEFINED = 0, LT_AT_FLOAT = 1, LT_AT_INT = 2, LT_AT_STRING = 3, LT_AT_TENSOR = 4,
    LT_AT_GRAPH = 5, LT_AT_FLOATS = 6, LT_AT_INTS = 7, LT_AT_STRINGS = 8, LT_AT_TENSORS = 9,
    LT_AT_GRAPHS = 10, LT_AT_SPARSE_TENSOR = 11, LT_AT_SPARSE_TENSORS = 12, LT_AT_TYPE_PROTO = 13,
    LT_AT_TYPE_PROTOS = 14
} lt_attr_type;

typedef struct lt_attr {
    const char *name;
    lt_attr_type type;
    float f;
    int64_t i;
    const char *s;          /* STRING: bytes, NUL-terminated for convenience; s_len the true length */
    int64_t s_len;
    lt_tensor *t;           /* TENSOR, SPARSE_TENSOR (densified) */
    struct lt_graph *g;     /* GRAPH */
    lt_type *tp;            /* TYPE_PROTO */
    int n;                  /* count for the list kinds */
    float *floats;
    int64_t *ints;
    const char **strings;
    int64_t *string_lens;
    lt_tensor **tensors;
    struct lt_graph **graphs;
    lt_type **tps;
} lt_attr;

typedef struct lt_node {
    int index;              /* position in its graph */
    const char *name;       /* may be "" */
    const char *op_type;
    const char *domain;     /* "" for ai.onnx */
    int op;                 /* lt_op (ops.h); LT_OP_UNKNOWN when lathe has no such op */
    int opset;              /* the model's opset version for this node's domain */
    int n_in, n_out;
    lt_value **in;          /* in[i] NULL: optional input omitted */
    lt_value **out;         /* out[i] NULL: optional output not requested */
    int n_attr;
    lt_attr *attrs;
    struct lt_graph *graph;
    bool shapes_verified;   /* set by shape inference (ops/infer.c): the op's infer hook checked every
                             * shape and attribute rule of the spec on static input shapes and produced
                             * static output shapes; lowering compiles only such nodes */
} lt_node;

typedef struct lt_opset {
    const char *domain;
    int64_t version;
} lt_opset;

typedef struct lt_graph {
    struct lt_model *model;
    struct lt_graph *parent; /* enclosing graph for subgraphs */
    struct lt_node *owner;   /* node whose attribute holds this subgraph */
    const char *name;
    int n_nodes, n_values, n_inputs, n_outputs;
    lt_node **nodes;
    lt_value **values;
    lt_value **inputs;       /* declared inputs, in order (may include initializers, IR < 4) */
    lt_value **outputs;
} lt_graph;

typedef struct lt_model {
    lt_arena arena;
    int64_t ir_version;
    const char *producer_name, *producer_version, *path;
    int n_opsets;
    lt_opset *opsets;
    lt_graph *graph;
    lt_vec owned_tensors;   /* initializers and attribute tensors to release */
    lt_vec mappings;        /* the importer's mapped files (opaque to the graph module) */
    void (*on_free)(struct lt_model *m); /* importer's hook: unmap files; called by lt_model_free */
} lt_model;

/* ---- queries ---- */
lt_value *lt_graph_find_value(const lt_graph *g, const char *name); /* this graph only */
const lt_attr *lt_node_attr(const lt_node *n, const char *name);    /* NULL if absent */
int64_t lt_attr_int(const lt_node *n, const char *name, int64_t dflt);
float lt_attr_float(const lt_node *n, const char *name, float dflt);
const char *lt_attr_string(const lt_node *n, const char *name, const char *dflt);
/* List attributes: returns the count (0 if absent) and sets *out (NULL if absent). */
int lt_attr_ints(const lt_node *n, const char *name, const int64_t **out);
int lt_attr_floats(const lt_node *n, const char *name, const float **out);
int lt_attr_strings(const lt_node *n, const char *name, const char *const **out);
const lt_tensor *lt_attr_tensor(const lt_node *n, const char *name);
const lt_graph *lt_attr_graph(const lt_node *n, const char *name);
int64_t lt_model_opset(const lt_model *m, const char *domain); /* 0 if not imported */
/* "node 3 'conv1' (Conv)" into buf: the standard way messages name a node. */
const char *lt_node_label(const lt_node *n, char *buf, size_t size);

/* ---- types ---- */
void lt_type_set_tensor(lt_type *t, lt_dtype dt, int rank, lt_dim *dims);
/* "float[1,3,N,224]" / "seq(float[?])" into buf. */
const char *lt_type_str(const lt_type *t, char *buf, size_t n);

/* ---- whole-model operations ---- */
void lt_model_free(lt_model *m);
/* Structural checks (see the invariants above). */
lt_status lt_graph_verify(lt_ctx *ctx, const lt_graph *g);
/* Human-readable listing of the graph (one node per line, subgraphs indented). */
void lt_graph_print(const lt_graph *g, lt_strbuf *out);

#endif
