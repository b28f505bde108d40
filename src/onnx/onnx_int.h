/* onnx_int.h — private interfaces shared by the ONNX importer's files (the .c files of src/onnx/).
 *
 * onnx_load: the state of one load or decode: the wire source, the model being built (NULL when only
 * test data is decoded), the scratch arena (freed when the load ends), external-data settings and
 * files, model-local functions. Files:
 *   wire.c          bounded protobuf reader
 *   tensor_proto.c  TensorProto / SparseTensorProto decode, test-data datums, tensor encode
 *   external.c      external data: path checks, mapping, the model's mapping list
 *   types.c         TypeProto -> lt_type
 *   import.c        ModelProto / GraphProto / NodeProto / AttributeProto -> lt_model
 *   functions.c     model-local FunctionProto parsing and inlining
 */
#ifndef LT_ONNX_INT_H
#define LT_ONNX_INT_H

#include "onnx.h"
#include "wire.h"

#include <string.h>

#define LT_ONNX_DEFAULT_MAX_BYTES ((int64_t)64 << 30)
#define LT_ONNX_MAX_INLINE_DEPTH 32
/* Nodes that function inlining may create in one load (calls can fan out exponentially). */
#define LT_ONNX_MAX_INLINED_NODES ((int64_t)1 << 18)
/* Largest dense tensor made from a sparse one (also bounded by the load's max_bytes). */
#define LT_ONNX_MAX_DENSIFIED_BYTES ((int64_t)1 << 32)

/* name scopes: base/strmap.h (NUL-terminated keys, not copied -> pointers) */
#include "../base/strmap.h"

/* A byte slice of the source buffer. */
typedef struct lt_slice {
    const uint8_t *p;
    size_t n;
    int depth; /* nesting depth of the message it holds */
} lt_slice;

struct onnx_func;
struct onnx_ext_file;

typedef struct onnx_load {
    lt_ctx *ctx;
    lt_wire_src src;
    lt_model *m;          /* NULL when decoding test data */
    lt_arena scratch;
    const char *file;     /* display name for messages */
    const char *base_dir; /* folder for external data; NULL refuses it */
    int64_t max_bytes;
    bool borrow;          /* tensors may reference the source buffer (model import) */
    struct onnx_ext_file *ext_files;
    struct onnx_func *funcs;
    int n_funcs;
    int64_t inline_count; /* numbering for inlined calls (unique names) */
    int64_t inlined_nodes; /* nodes created inside function bodies (budget) */
} onnx_load;

/* Status of the load's first error (INVALID when a reader failed without one). */
static inline lt_status onnx_wire_status(const onnx_load *L) { return L->src.status ? L->src.status : LT_ERR_INVALID; }
/* "" and "ai.onnx" name the same domain. */
static inline const char *onnx_norm_domain(const char *d) { return strcmp(d, "ai.onnx") == 0 ? "" : d; }

/* Reader over a slice. */
static inline void onnx_reader(onnx_load *L, lt_wire *w, lt_slice s, const char *msg) {
    lt_wire_sub_at(w, &L->src, s.p, s.n, s.depth, msg);
}
/* The current LEN field as a slice one level deeper (depth checked). */
bool onnx_slice(lt_wire *w, lt_slice *out, const char *msg);

/* Arena string of a wire byte string (error if it contains a NUL byte). */
const char *onnx_str(onnx_load *L, lt_wire *w, const uint8_t *p, size_t n, const char *what);

/* ---- tensors (tensor_proto.c) ---- */
/* Decode the TensorProto in slice s. With L->borrow the data may point into the source buffer
 * (or a mapped external file) when aligned; otherwise it is copied. name_out (optional) receives
 * the tensor's name as a slice of the buffer. `what` describes the tensor for messages. */
lt_status onnx_tensor(onnx_load *L, lt_slice s, const char *what, lt_tensor **out, lt_slice *name_out);
/* Decode a SparseTensorProto into a dense tensor (at most LT_ONNX_MAX_DENSIFIED_BYTES and L->max_bytes). */
lt_status onnx_sparse_tensor(onnx_load *L, lt_slice s, const char *what, lt_tensor **out, lt_slice *name_out);
/* Register a tensor in the model's owned list (releases it on failure). */
lt_status onnx_own(onnx_load *L, lt_tensor *t);

/* ---- external data (external.c) ---- */
/* Locate the bytes of an external tensor: key/value entries already parsed; checks the path and the
 * range and maps the file (cached per file for the load). */
lt_status onnx_external_bytes(onnx_load *L, lt_wire *w, const char *tname, const char *location, size_t loc_len,
                              int64_t offset, int64_t length, const uint8_t **data, size_t *size);
/* The model's on_free hook: unmaps every mapping in m->mappings. */
void onnx_model_on_free(lt_model *m);
/* Keep a mapping alive for the model's lifetime (unmaps it on failure). */
lt_status onnx_keep_mapping(onnx_load *L, void *addr, size_t len);

/* ---- types (types.c) ---- */
lt_status onnx_type(onnx_load *L, lt_slice s, lt_type *out);
/* Deep copy into the model arena. */
lt_status onnx_type_clone(onnx_load *L, const lt_type *src, lt_type *dst);

/* ---- graphs (import.c) ---- */
typedef struct onnx_scope onnx_scope;
typedef struct onnx_gstate onnx_gstate;

/* Per-graph construction state. */
struct onnx_gstate {
    lt_graph *g;
    lt_strmap all;  /* every value name of the graph (uniqueness) */
    lt_vec values;   /* lt_value* */
    lt_vec nodes;    /* lt_node* */
};

/* The function call a scope is inlining (functions.c). */
typedef struct onnx_call {
    const struct onnx_func *fn;
    const lt_attr *attrs; /* the call node's attributes */
    int n_attrs;
    onnx_scope *caller;   /* scope of the call node */
    const char *prefix;   /* for unique names and node names */
    int depth;
    /* formal output i -> actual output name (NULL: not requested) */
    const char **actual_out;
    lt_value **produced;  /* value created for formal output i */
} onnx_call;

/* Name resolution: a scope maps names to values of gs->g. Graph scopes look names up in their
 * parent scope (outer-scope references); a function body scope sees only its own names. */
struct onnx_scope {
    onnx_gstate *gs;
    lt_strmap own;      /* function scopes: formal/internal names; graph scopes: unused (gs->all) */
    lt_strmap *names;   /* the map used for lookups: &gs->all or &own */
    onnx_scope *parent;  /* enclosing graph's scope (NULL for the main graph and function bodies) */
    onnx_call *call;     /* set in a function body scope and in every scope nested inside it */
    bool is_function;
};

/* A value meaning "this formal input was omitted by the caller". */
extern lt_value onnx_absent_value;

lt_status onnx_import_node(onnx_load *L, onnx_scope *sc, lt_slice s, int depth_calls);
/* New value in sc's graph with a given (arena) name; registered in gs->all and sc->names. */
lt_status onnx_new_value(onnx_load *L, onnx_scope *sc, const char *name, lt_value **out);
/* Define a node output `name` in scope sc: graph scopes check it is new; function body scopes map a
 * formal output to the caller's name or give an internal name a unique one. `at`/`who` for errors. */
lt_status onnx_define_in(onnx_load *L, onnx_scope *sc, const char *name, const uint8_t *at, const char *who,
                         lt_value **out);
lt_status onnx_func_define(onnx_load *L, onnx_scope *sc, const char *name, const uint8_t *at, const char *who,
                           lt_value **out);
lt_status onnx_parse_opset(onnx_load *L, lt_slice s, lt_opset *o);
/* "FILE: byte N: text" error (first wins), marks the load failed. */
lt_status onnx_err(onnx_load *L, const uint8_t *at, lt_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
lt_status onnx_nomem(onnx_load *L, const char *what);
/* Resolve an input name (len bytes, no NUL) in scope, creating outer-scope references as needed;
 * *out NULL if not found, &onnx_absent_value for an omitted function input. */
lt_status onnx_resolve(onnx_load *L, onnx_scope *sc, const char *name, size_t len, lt_value **out);
/* Import a graph proto into g (g->model, parent, owner set by the caller). */
lt_status onnx_import_graph(onnx_load *L, onnx_scope *parent, lt_slice s, lt_graph *g);
/* Parse an AttributeProto into a (sc gives the scope for subgraphs and the call for references).
 * *keep is false when the attribute refers to a function attribute the caller did not give. */
lt_status onnx_attr(onnx_load *L, onnx_scope *sc, lt_node *owner, lt_slice s, lt_attr *a, bool *keep);

/* ---- functions (functions.c) ---- */
typedef struct onnx_func {
    const char *name, *domain, *overload;
    lt_slice proto;
    int n_in, n_out, n_nodes, n_attr_defaults, n_opsets;
    const char **inputs, **outputs;
    lt_slice *nodes;
    lt_slice *attr_defaults;      /* AttributeProto with default values */
    const char **attr_default_names;
    lt_opset *opsets;
} onnx_func;

lt_status onnx_parse_function(onnx_load *L, lt_slice s, onnx_func *f);
const onnx_func *onnx_find_function(const onnx_load *L, const char *domain, const char *op_type, const char *overload);
/* Inline a call of fn (the call node's name, inputs, outputs and attributes given). */
lt_status onnx_inline_call(onnx_load *L, onnx_scope *sc, const onnx_func *fn, const char *node_name,
                           lt_value **in, int n_in, const char **out_names, int n_out, const lt_attr *attrs,
                           int n_attrs, int depth_calls);
/* Opset of `domain` for a node in scope sc (function opset_import first, then the model's). */
int64_t onnx_scope_opset(const onnx_load *L, const onnx_scope *sc, const char *domain);

#endif
