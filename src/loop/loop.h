/* loop.h — the Loop IR: loops, stores and expressions over flat buffers, with the schedule kinds
 * (parallel, vectorized, unrolled, GPU block/thread) carried on the For node, and buffer scopes.
 *
 * A kernel (lt_kernel) is a statement tree over its argument buffers. Nodes are allocated in the
 * kernel's arena (compilation lifetime) and treated as immutable: transformations build new nodes
 * and return the same pointer when nothing changed (lt_lmutate), so "did this change anything" is a
 * pointer compare. Indices are flattened element offsets (int64 arithmetic).
 * Entry points: builders (lt_l_*), lt_lprint, lt_lsimplify (simplify.c), lt_lhoist (hoist.c), lt_lmutate / lt_lwalk,
 * schedules (schedule.h).
 */
#ifndef LT_LOOP_H
#define LT_LOOP_H

#include "../base/base.h"
#include "../base/dtype.h"

typedef enum lt_lkind {
#define LT_LNODE(name, cls, nkids, doc) LT_L_##name,
#include "nodes.def"
#undef LT_LNODE
    LT_L_COUNT
} lt_lkind;

/* Operators of UNARY / BINARY nodes, and the names the emitters map them to. */
#define LT_LOPS(X)                                                                                 \
    X(NEG) X(NOT) X(ABS) X(EXP) X(LOG) X(SQRT) X(RSQRT) X(TANH) X(ERF) X(SIGMOID) X(FLOOR) X(CEIL) \
    X(ROUND) X(SIN) X(COS) X(TAN) X(ASIN) X(ACOS) X(ATAN) X(SINH) X(COSH) X(ASINH) X(ACOSH)         \
    X(ATANH) X(RECIP) X(ISNAN) X(ISINF) X(SIGN)                                                     \
    X(ADD) X(SUB) X(MUL) X(DIV) X(MOD) X(FMOD) X(MIN) X(MAX) X(POW) X(AND) X(OR) X(XOR) X(BITAND)   \
    X(BITOR) X(BITXOR) X(SHL) X(SHR) X(LT) X(LE) X(GT) X(GE) X(EQ) X(NE)
typedef enum lt_lop {
#define LT_X(n) LT_LOP_##n,
    LT_LOPS(LT_X)
#undef LT_X
    LT_LOP_COUNT
} lt_lop;
const char *lt_lop_name(lt_lop op);
bool lt_lop_is_binary(lt_lop op);

typedef enum lt_loop_kind {
    LT_LOOP_SERIAL,
    LT_LOOP_PARALLEL,   /* CPU threads (OpenMP) */
    LT_LOOP_VECTORIZED, /* SIMD lanes */
    LT_LOOP_UNROLLED,
    LT_LOOP_GPU_BLOCK,  /* ival: axis 0..2 (x, y, z) */
    LT_LOOP_GPU_THREAD
} lt_loop_kind;
const char *lt_loop_kind_name(lt_loop_kind k);

/* What a loop is for. The lowering sets it where it creates the loop (lt_l_for); schedule steps keep
 * it (a split or tile gives two loops of the role, a fuse the outer loop's, a reorder moves it with
 * its loop); the default schedules and the tuner find loops by it, never by their names (names are
 * how schedule steps refer to loops, nothing more). */
#define LT_LOOP_ROLES(X)                                                                           \
    X(NONE, "")                 /* none given: loops built by hand (tests) */                      \
    X(OUTPUT, "output")         /* over output elements: elementwise / injective nests, GEMM's i, j */ \
    X(KEPT, "kept")             /* a kept (not reduced) dim of a reduction, pooling or direct      \
                                 * convolution: independent iterations holding the reduction */    \
    X(BATCH_OUTER, "batch_outer") /* the outermost batch dim around a GEMM (its product or call) */ \
    X(BATCH, "batch")           /* the other batch dims around a GEMM */                           \
    X(BLOCK, "block")           /* a block of GEMM rows (plain loops): a disjoint part of the output */ \
    X(INIT, "init")             /* the rows of an output zeroed before the nest accumulates into it \
                                 * (plain GEMM) */                                                 \
    X(INIT_COLS, "init_cols")   /* the columns of that zeroing (contiguous) */                     \
    X(REDUCE, "reduce")         /* a reduced dim: its iterations carry an accumulator */           \
    X(REDUCED_OUTPUT, "reduced_output") /* over a reduced dim, one output written per iteration     \
                                 * (the normalize pass of softmax and the norms) */                \
    X(LANES, "lanes")           /* partial accumulators, one per vector lane (no carried dependence) */ \
    X(PARTIALS, "partials")     /* over the partial accumulators: their init and merge */          \
    X(LANE_OUTPUT, "lane_output") /* outputs one per vector lane with no bounds checks (pooling's  \
                                 * interior) */                                                    \
    X(EPILOGUE, "epilogue")     /* an epilogue nest over a GEMM's output, after the product: its   \
                                 * batch dims and rows */                                          \
    X(EPILOGUE_COLS, "epilogue_cols") /* the columns of that epilogue (contiguous) */              \
    X(COPY, "copy")             /* a copy into or out of a staged buffer (the cache step) */       \
    X(ROW_THREADS, "row_threads") /* a row's threads and the work they share (the rowreduce step) */
typedef enum lt_loop_role {
#define LT_X(n, s) LT_ROLE_##n,
    LT_LOOP_ROLES(LT_X)
#undef LT_X
    LT_ROLE_COUNT
} lt_loop_role;
const char *lt_loop_role_name(lt_loop_role r); /* "kept", ...; "" for NONE */

typedef enum lt_scope {
    LT_SCOPE_GLOBAL, /* kernel argument or workspace */
    LT_SCOPE_LOCAL,  /* per-thread registers / stack */
    LT_SCOPE_SHARED  /* GPU shared memory (CPU: per-thread stack) */
} lt_scope;

typedef struct lt_lvar {
    const char *name; /* unique within its kernel */
    int id;
    lt_dtype dtype;   /* INT64 for loop variables */
    /* A run-time scalar that integer divisions divide by (as itself times div_magic_mul): the scalar
     * holding the multiplier of that divisor (lt_div_magic), so emitters divide by multiplying.
     * NULL: none (lt_kparams_apply makes them). */
    struct lt_lvar *div_magic;
    int64_t div_magic_mul;
} lt_lvar;

typedef struct lt_lbuf {
    const char *name;
    int id;
    lt_dtype dtype;
    int64_t size;     /* elements */
    lt_scope scope;
    int arg;          /* position in the kernel's argument list; -1 for ALLOC'd buffers */
    bool read, written;
} lt_lbuf;

typedef struct lt_lnode {
    lt_lkind kind;
    lt_dtype dtype;   /* value type of an expression (INT64 for index math, BOOL for conditions) */
    int op;           /* UNARY/BINARY: lt_lop; FOR: lt_loop_kind */
    lt_loop_role role; /* FOR: what the loop is for */
    int lanes;        /* vector width of an expression or LOAD/STORE (1 = scalar) */
    int64_t ival;     /* INT value; FOR: unroll/vector factor, GPU axis, or a PARALLEL loop's minimum
                       * work for threads (0: always threads) */
    double fval;      /* FLOAT value */
    const char *name; /* CALL: function name */
    lt_lvar *var;     /* VAR, FOR, LET, ASSIGN */
    lt_lbuf *buf;     /* LOAD, STORE, ALLOC */
    int n;
    struct lt_lnode **kids;
} lt_lnode;

/* Named reads of node children (nodes.def gives each kind's children): code that knows the node's
 * kind reads its fields through these; only code that goes over all the children of a node
 * (lt_lwalk, lt_lmutate, hashing, the builders) indexes kids. */
static inline lt_lnode *lt_lfor_min(const lt_lnode *f) { return f->kids[0]; }
static inline lt_lnode *lt_lfor_extent(const lt_lnode *f) { return f->kids[1]; }
static inline lt_lnode *lt_lfor_body(const lt_lnode *f) { return f->kids[2]; }
static inline lt_lnode *lt_lstore_index(const lt_lnode *s) { return s->kids[0]; }
static inline lt_lnode *lt_lstore_value(const lt_lnode *s) { return s->kids[1]; }
static inline lt_lnode *lt_lload_index(const lt_lnode *l) { return l->kids[0]; }   /* LOAD and ADDR */
static inline lt_lnode *lt_lmem_index(const lt_lnode *m) { return m->kids[0]; }    /* LOAD, ADDR or STORE */
static inline lt_lnode *lt_lif_cond(const lt_lnode *i) { return i->kids[0]; }
static inline lt_lnode *lt_lif_then(const lt_lnode *i) { return i->kids[1]; }
static inline lt_lnode *lt_lif_else(const lt_lnode *i) { return i->n > 2 ? i->kids[2] : NULL; }
static inline lt_lnode *lt_lsel_cond(const lt_lnode *s) { return s->kids[0]; }
static inline lt_lnode *lt_lsel_then(const lt_lnode *s) { return s->kids[1]; }
static inline lt_lnode *lt_lsel_else(const lt_lnode *s) { return s->kids[2]; }
static inline lt_lnode *lt_lexpr_a(const lt_lnode *e) { return e->kids[0]; } /* UNARY, CAST, BINARY lhs */
static inline lt_lnode *lt_lexpr_b(const lt_lnode *e) { return e->kids[1]; } /* BINARY rhs */
static inline lt_lnode *lt_llet_value(const lt_lnode *s) { return s->kids[0]; } /* LET, ASSIGN: the value */
static inline lt_lnode *lt_lalloc_body(const lt_lnode *a) { return a->kids[0]; }
static inline lt_lnode *lt_lstmt_call(const lt_lnode *e) { return e->kids[0]; } /* EVAL: the CALL */
static inline lt_lnode *lt_lseq_stmt(const lt_lnode *s, int i) { return s->kids[i]; } /* SEQ: statement i */

/* A kernel: its arguments (buffers with arg >= 0, in order) and body, plus static cost. */
typedef struct lt_kernel {
    const char *name;
    lt_arena *arena;
    int n_args;
    lt_lbuf **args;
    lt_lnode *body;
    int n_vars, n_bufs; /* id counters */
    double flops;       /* static cost (set by lt_kernel_cost) */
    double bytes;
    lt_lvar **vars;     /* every variable, indexed by id (n_vars of them) */
    lt_lbuf **bufs;     /* every buffer, indexed by id (n_bufs of them) */
    int cap_vars, cap_bufs;
    int64_t dyn_shared; /* GPU: bytes of dynamic shared memory a launch needs (set by the lowering when
                         * a prelude tile entry it calls uses extern __shared__ storage; 0: none) */
    /* Run-time scalars (the calling convention of docs/COMPILER.md: arguments n_args .. n_args +
     * n_scalars - 1, after the buffers): variables bound for the whole body, INT64 (an extent or
     * stride known only at run time) or DOUBLE (a constant such as 1/N that depends on one), each
     * with the value this kernel was made for (scalar_bits: the int64, or the double's bits).
     * Made by lt_kparams_apply (kparams.h); 0 for every kernel a lowering builds. */
    int n_scalars;
    lt_lvar **scalars;
    int64_t *scalar_bits;
    /* Lowered for a model compiled once for many shapes (lt_lower_options.shape_generic): its code
     * should not change with a size's divisibility, so splits keep their guard even when the factor
     * divides the extent, and lt_lsimplify keeps loops of extent 0 or 1 (a peeled tail that is empty
     * at this size, a grid of one block). Set by the lowering after its own simplification. */
    bool shape_generic;
} lt_kernel;

/* ---- construction (all allocate in k->arena; NULL only on out-of-memory) ---- */
lt_kernel *lt_kernel_new(lt_arena *arena, const char *name);
lt_lbuf *lt_kernel_arg(lt_kernel *k, const char *name, lt_dtype dt, int64_t size);
lt_lbuf *lt_kernel_local(lt_kernel *k, const char *name, lt_dtype dt, int64_t size, lt_scope scope);
lt_lvar *lt_kernel_var(lt_kernel *k, const char *name, lt_dtype dt); /* name made unique */
/* Buffer names are made unique too ("A", "A_1", ...); variable names likewise ("i", "i_1").
 * Names may contain '.' (split loops are "i.o", "i.i"): emitters mangle them. */
lt_lvar *lt_kernel_find_var(const lt_kernel *k, const char *name);  /* NULL if none */
/* The multiplier that divides by d with a multiply: ceil(2^64 / d) for 2 <= d < 2^32, so that
 * n / d == (n * M) >> 64 for every 0 <= n < 2^32 (Lemire, Kaser and Kurz, "Faster remainder by
 * direct computation", 2019: F = 64 >= 32 + log2(d) bits); 0 for other d (no multiplier: divide). */
uint64_t lt_div_magic(int64_t d);
/* For dividends below 2^31: the 32-bit multiplier m = floor(2^32 (2^l - d) / d) + 1 with
 * l = ceil(log2 d), packed as m | l << 32, so that n / d == (mulhi32(n, m) + n) >> l for every
 * 0 <= n < 2^31 (Granlund and Montgomery, "Division by invariant integers using multiplication",
 * 1994, with the sum kept in 32 bits because n < 2^31): common.h's lt_divu31. Any 1 <= d < 2^31
 * (d == 1: m = 1, l = 0); 0 for other d. */
uint64_t lt_div_magic31(int64_t d);
/* A new run-time scalar (INT64 or DOUBLE) with its value's bits; NULL on out-of-memory. */
lt_lvar *lt_kernel_scalar(lt_kernel *k, const char *name, lt_dtype dt, int64_t bits);
lt_lbuf *lt_kernel_find_buf(const lt_kernel *k, const char *name);  /* NULL if none */

/* Type rules of the builders: INT immediates and index math are INT64; comparisons, logical
 * AND/OR/XOR/NOT, ISNAN and ISINF give BOOL; other ops keep their operand type. Binary operands
 * must have the same dtype (callers cast explicitly); an INT or FLOAT immediate operand is retyped
 * to the other side's dtype as a convenience. A mixed-type node gets dtype UNDEFINED, which
 * lt_kernel_verify reports as an internal error naming the node. Builders return NULL only on
 * out-of-memory and propagate NULL children and a NULL kernel (so a chain of builders needs one
 * NULL check at its end). */

lt_lnode *lt_l_int(lt_kernel *k, int64_t v);
lt_lnode *lt_l_float(lt_kernel *k, lt_dtype dt, double v);
lt_lnode *lt_l_var(lt_kernel *k, lt_lvar *v);
lt_lnode *lt_l_load(lt_kernel *k, lt_lbuf *b, lt_lnode *index);
lt_lnode *lt_l_unary(lt_kernel *k, lt_lop op, lt_lnode *a);
lt_lnode *lt_l_binary(lt_kernel *k, lt_lop op, lt_lnode *a, lt_lnode *b); /* comparisons: BOOL */
lt_lnode *lt_l_select(lt_kernel *k, lt_lnode *c, lt_lnode *a, lt_lnode *b);
lt_lnode *lt_l_cast(lt_kernel *k, lt_dtype dt, lt_lnode *a);
lt_lnode *lt_l_call(lt_kernel *k, lt_dtype dt, const char *name, int n, lt_lnode *const *args);
lt_lnode *lt_l_seq(lt_kernel *k, int n, lt_lnode *const *stmts);
lt_lnode *lt_l_for(lt_kernel *k, lt_lvar *v, lt_loop_role role, lt_lnode *min, lt_lnode *extent, lt_loop_kind kind,
                   lt_lnode *body);
lt_lnode *lt_l_store(lt_kernel *k, lt_lbuf *b, lt_lnode *index, lt_lnode *value);
lt_lnode *lt_l_if(lt_kernel *k, lt_lnode *cond, lt_lnode *then_s, lt_lnode *else_s /* may be NULL */);
lt_lnode *lt_l_alloc(lt_kernel *k, lt_lbuf *b, lt_lnode *body);
lt_lnode *lt_l_let(lt_kernel *k, lt_lvar *v, lt_lnode *value);
lt_lnode *lt_l_assign(lt_kernel *k, lt_lvar *v, lt_lnode *value);
lt_lnode *lt_l_eval(lt_kernel *k, lt_lnode *call);
lt_lnode *lt_l_barrier(lt_kernel *k);
lt_lnode *lt_l_addr(lt_kernel *k, lt_lbuf *b, lt_lnode *index); /* &b[index], CALL args only */
lt_lnode *lt_l_empty(lt_kernel *k); /* an empty SEQ: the statement that does nothing */
lt_lnode *lt_l_add(lt_kernel *k, lt_lnode *a, lt_lnode *b); /* shorthands for index math */
lt_lnode *lt_l_mul(lt_kernel *k, lt_lnode *a, lt_lnode *b);
/* Shallow copy of n with new children (same count); the mutator's building block. */
lt_lnode *lt_l_with_kids(lt_kernel *k, const lt_lnode *n, lt_lnode *const *kids);

/* ---- traversal ---- */
typedef struct lt_lnode_info {
    const char *name;
    bool is_stmt;
    int n_fixed_kids; /* -1: variable */
    const char *doc;
} lt_lnode_info;
const lt_lnode_info *lt_lnode_info_get(lt_lkind k);

/* Pre-order walk; the callback returns false to skip a node's children. */
typedef bool (*lt_lwalk_fn)(const lt_lnode *n, void *user);
void lt_lwalk(const lt_lnode *n, lt_lwalk_fn fn, void *user);
/* Post-order rewrite: fn gets a node whose children were already rewritten and returns its
 * replacement (or the node itself). Unchanged subtrees keep their pointers. fn must depend only on
 * the node it gets (and user): a subtree shared by several parents is rewritten once per call and
 * stays shared. NULL = out of memory (or fn returned NULL). */
typedef lt_lnode *(*lt_lmutate_fn)(lt_kernel *k, lt_lnode *n, void *user);
lt_lnode *lt_lmutate(lt_kernel *k, lt_lnode *n, lt_lmutate_fn fn, void *user);
/* Replace every VAR v by expression e. */
lt_lnode *lt_lsubstitute(lt_kernel *k, lt_lnode *n, const lt_lvar *v, lt_lnode *e);
/* Replace the node `old` (by pointer) by `with` in the tree n. NULL = out of memory. */
lt_lnode *lt_lreplace(lt_kernel *k, lt_lnode *n, const lt_lnode *old, lt_lnode *with);

/* ---- queries ---- */
bool lt_lequal(const lt_lnode *a, const lt_lnode *b);      /* structural equality */
bool lt_luses_var(const lt_lnode *n, const lt_lvar *v);    /* is v read (VAR) or assigned in n? */
bool lt_lis_int(const lt_lnode *n, int64_t *v);            /* an INT immediate (v may be NULL) */
/* n as a variable times an integer immediate (`v * g`, or `v` alone with g = 1): the variable and
 * *factor = g; NULL for any other form (a run-time scalar as a divisor: kparams.c, emit.c). */
const lt_lvar *lt_lvar_scaled(const lt_lnode *n, int64_t *factor);
bool lt_lis_empty(const lt_lnode *n);                      /* an empty SEQ */
/* The FOR loop whose variable is called `name` (NULL if none); *parent gets its parent node. */
lt_lnode *lt_lfind_loop(lt_lnode *root, const char *name, lt_lnode **parent);
/* Integer bounds of an index expression, given bounds of the enclosing loop variables
 * (lo/hi indexed by var id, `known` says which are set; pass NULL for none). False if unbounded. */
bool lt_lbounds(const lt_lnode *n, const int64_t *lo, const int64_t *hi, const bool *known,
                int64_t *out_lo, int64_t *out_hi);
/* Check the kernel's invariants (types, child counts, buffers in range of the kernel, loop
 * variables bound before use): LT_ERR_INTERNAL with a message naming the node on failure. */
lt_status lt_kernel_verify(lt_ctx *ctx, const lt_kernel *k);

/* ---- printing and simplification ---- */
/* Statements print one per line, indented by 2 spaces per level ("parallel for i in [0, 64):",
 * "vectorized(16) for j in [0, 100):", "C[i*100 + j] = A[i*100 + j] + B[i*100 + j]");
 * expressions print inline, parenthesized only where precedence needs it. */
void lt_lprint(const lt_lnode *n, lt_strbuf *out, int indent);
void lt_kernel_print(const lt_kernel *k, lt_strbuf *out);
/* lt_kernel_print with each loop's role after its line ("for o0 in [0, 4):  [kept]"): the code
 * dump's form. lt_kernel_print leaves roles out (tuning database keys are hashes of its text). */
void lt_kernel_dump(const lt_kernel *k, lt_strbuf *out);
/* Constant folding and algebraic identities on index math (x*1, x+0, (a*c1)*c2, min/max of
 * constants, division/modulo by 1, loops of extent 1 removed). Returns the same pointer if unchanged. */
lt_lnode *lt_lsimplify(lt_kernel *k, lt_lnode *n);
/* lt_lsimplify on the expressions of every statement only: the loop structure stays as it is (no
 * loop of extent 1 removed), so loops a schedule names survive. NULL in, NULL out. */
lt_lnode *lt_lsimplify_exprs(lt_kernel *k, lt_lnode *n);
/* Loop-invariant LETs (no variable the loop binds or changes, no load, no call) moved out of serial
 * and unrolled loops, as far out as they stay invariant (hoist.c). Same pointer if nothing moved. */
lt_lnode *lt_lhoist(lt_kernel *k, lt_lnode *n);
/* Static FLOPs and bytes moved (loads/stores of global buffers), counting loop trip counts.
 * FLOPs: UNARY/BINARY nodes on floating operands (× lanes). Loops with non-constant extents count
 * the extent's upper bound when lt_lbounds finds one, else 1; IF counts the larger branch; a
 * microkernel CALL counts the cost recorded on it (fval, ival: the whole operation's), once when
 * it sits inside GPU block / thread loops. Sets k->flops and k->bytes. */
void lt_kernel_cost(lt_kernel *k);

#endif
