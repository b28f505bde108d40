/* lower_impl.h — internals shared by the lowering files: the per-group lowering context, the per-op
 * hook table, and the helpers hooks use to read their inputs as Loop IR expressions.
 *
 * Hook kinds (one table per family file, gathered by lower.c):
 *   accept(n, why, size)   may node n compile? (dtypes, attributes, constant shape inputs). NULL:
 *                          accepted when every tensor input/output has a dtype in lt_lower_dtype_ok.
 *   expr(lc, n, o, idx, r) ELEMWISE / BROADCAST / INJECTIVE ops: the Loop IR expression of output o
 *                          of n at the multi-index idx (INT64 expressions, one per output dim). Reads
 *                          inputs with lt_lower_input (numpy broadcasting) or lt_lower_value (an
 *                          explicit index map: Transpose, Slice, Gather, ...).
 *   lower(lc, n, r)        anchors: build the statement that computes n's output and stores the group
 *                          output through lt_lower_store_out (which applies the fused epilogue).
 *   const_inputs           bit i set: input i is read at compile time only (shape, axes, starts...):
 *                          it must be a constant for the node to compile and is never a kernel arg.
 *   unused_inputs          bit i set: input i is not read at all (need not be constant).
 *
 * Loop roles (lt_loop_role, loop.h: the default schedules find loops by these, never by name) and
 * the names that go with them (for people and for schedule steps): pure elementwise nests use
 * OUTPUT loops "i0", "i1", ... per output dim (of the coalesced view); reductions, softmax, norms,
 * pooling and direct convolution use KEPT "o0".. for kept dims and REDUCE "r0".. for reduced dims
 * (REDUCED_OUTPUT for the normalize passes that store per element), REDUCE "ro" / LANES "lane" /
 * PARTIALS "q" for partial-vector accumulation, LANE_OUTPUT "vo" for pooling's unguarded interior;
 * GEMM nests: see lower_gemm.c.
 */
#ifndef LT_LOWER_IMPL_H
#define LT_LOWER_IMPL_H

#include "lower.h"
#include "../codegen/prelude/abi.h" /* the codes lowering passes to prelude calls */

typedef struct lt_lctx {
    lt_ctx *ctx;
    lt_kernel *k;
    lt_arena *arena;
    const lt_groups *gs;
    const lt_group *g;
    const lt_lower_options *opt;
    const lt_graph *graph;
    lt_lbuf **vbuf;            /* value id -> kernel buffer (external inputs and group outputs) */
    signed char *in_group;     /* value id -> produced by an inlinable node of this group */
    /* While building an epilogue: `ov` (the anchor's output, or a stored group output) reads as
     * ov_expr whatever the index. */
    const lt_value *ov;
    lt_lnode *ov_expr;
    int n_packs, cap_packs;
    lt_lpack *packs;
    int n_scratch, cap_scratch;
    lt_lscratch *scratch;
    lt_lbuf *status;           /* the check word argument, made by the first lt_lower_index_pos that checks */
    /* Coalesced view of pure elementwise groups: view dim i covers output dims
     * [view_start[i], view_start[i+1]) of the full output rank. */
    bool view;
    int view_rank, view_full_rank;
    int view_start[LT_MAX_RANK + 1];
} lt_lctx;

typedef bool (*lt_lower_accept_fn)(const lt_node *n, char *why, size_t why_size);
typedef lt_status (*lt_lower_expr_fn)(lt_lctx *lc, const lt_node *n, int out, lt_lnode *const *idx,
                                      lt_lnode **res);
typedef lt_status (*lt_lower_fn)(lt_lctx *lc, const lt_node *n, lt_lnode **res);

typedef struct lt_lower_reg {
    int op;
    lt_lower_accept_fn accept;
    lt_lower_expr_fn expr;
    lt_lower_fn lower;
    unsigned const_inputs;  /* inputs read at compile time: must be constants, never kernel args */
    unsigned unused_inputs; /* inputs the kernel never reads (CastLike's target, Dropout's ratio) */
    unsigned flags;         /* LT_LF_* */
} lt_lower_reg;

enum {
    LT_LF_NO_VIEW = 1,    /* reads inputs by a non-numpy rule: no coalesced view in its group */
    LT_LF_NO_EPILOGUE = 2 /* an anchor that writes its output more than once (a copy, then updates
                           * read back): nothing fuses after it, its output is stored as it is */
};
/* Does n's kernel read input i (not compile-time only, not unused)? */
bool lt_lower_reads_input(const lt_node *n, int i);

/* Family tables, each ended by an entry with op 0. */
extern const lt_lower_reg lt_lower_elementwise[], lt_lower_injective[], lt_lower_reduce[],
    lt_lower_gemm_ops[], lt_lower_nn[], lt_lower_nchwc[], lt_lower_scatter[],
    lt_lower_scan[], lt_lower_select[], lt_lower_nms[], lt_lower_unique[];
const lt_lower_reg *lt_lower_reg_get(int op); /* NULL when the op has no lowering */

/* ---- shapes and constants ---- */
/* Static shape of a tensor value: false when the type is not a tensor of known rank and dims. */
bool lt_lower_shape(const lt_value *v, int *rank, int64_t *dims);
int64_t lt_lower_numel(const lt_value *v); /* -1 when not static */
/* The constant tensor behind v (initializer that is not a graph input, or a Constant node's
 * output), or NULL. */
const lt_tensor *lt_lower_const(const lt_value *v);
/* Constant integer input i of n (any int dtype) into buf (max entries); -1 when absent/not const. */
int lt_lower_const_ints(const lt_node *n, int i, int64_t *buf, int max);
/* A scalar constant (one element, number dtype) that kernels use as an immediate instead of an
 * argument: fusion leaves it out of group inputs, lt_lower_value folds it in. */
bool lt_lower_is_imm(const lt_value *v);
/* dtypes the expression lowering handles (float32/64, float16/bfloat16 via float, ints, bool). */
bool lt_lower_dtype_ok(lt_dtype dt);
/* Default accept: every present tensor input and output has a dtype lt_lower_dtype_ok accepts. */
bool lt_lower_accept_default(const lt_node *n, char *why, size_t why_size);
/* Accept only the listed float types (FLOAT, and DOUBLE/FLOAT16/BFLOAT16 when `all_floats`). */
bool lt_lower_accept_float(const lt_node *n, char *why, size_t why_size);

/* Reshape, Flatten, Squeeze, Unsqueeze: the output is the input's bytes under another shape. */
bool lt_lower_is_view(const lt_node *n);
/* The stored value whose bytes v is (v itself, or the source of reshapes inlined in the group), or
 * NULL when v is computed in the group. */
const lt_value *lt_lower_mem_value(lt_lctx *lc, const lt_value *v);

/* ---- strided views (lower_view.c) ----
 * Element (i0, .., i[rank-1]) of a value lives at sum(i_d * st[d]) of a stored buffer. */
typedef struct lt_sview {
    int rank;
    int64_t dims[LT_MAX_RANK], st[LT_MAX_RANK];
} lt_sview;
/* Reshape/Flatten/Squeeze/Unsqueeze, or Transpose. */
bool lt_lower_is_layout(const lt_node *n);
void lt_lower_view_contig(int rank, const int64_t *dims, lt_sview *out);
bool lt_lower_view_is_contig(const lt_sview *v);
/* Layout node n applied forward (view of its input -> view of its output) or backward. False when
 * a reshape is not expressible by strides. */
bool lt_lower_view_step(const lt_node *n, bool forward, const lt_sview *in, lt_sview *out);
/* Shapes equal but for leading 1s; a reshape between such shapes (the same bytes, and the same
 * numpy broadcasting of anything right-aligned against them). */
bool lt_lower_same_but_lead(int ra, const int64_t *da, int rb, const int64_t *db);
bool lt_lower_lead_reshape(const lt_node *n);
/* View `in` over shape dims (the same but leading 1s): false when the shapes differ otherwise. */
bool lt_lower_view_relead(const lt_sview *in, int rank, const int64_t *dims, lt_sview *out);
/* idx over da as an index over db (same but leading 1s): right-aligned, 0 for extra leading dims. */
bool lt_lower_lead_index(lt_lctx *lc, int ra, const int64_t *da, lt_lnode *const *ia, int rb, const int64_t *db,
                         lt_lnode **ib);
/* Is value v (produced by a layout node) computed inside the kernel rather than stored? */
typedef bool (*lt_lower_inlined_fn)(void *user, const lt_value *v);
/* v as a view of the stored value *base it comes from through inlined layout nodes (v itself when
 * none). False when a reshape in the chain is not expressible. */
bool lt_lower_operand_view(const lt_value *v, lt_lower_inlined_fn inlined, void *user, const lt_value **base,
                           lt_sview *out);
/* The view, inside the contiguous buffer of group output `final`, of the value *before that the
 * layout nodes ending final's epilogue chain start from (walking back from final to v at most).
 * False when not expressible. */
bool lt_lower_output_view(const lt_value *v, const lt_value *final, lt_sview *out, const lt_value **before);

/* Gather / Scatter families (input 1 the indices): may node n compile, its indices checked before
 * any kernel sees them (constant and in range, or a model input the plan checks each run) or else by
 * its own kernel (lt_lower_index_pos: indices the model computes)? lower_inj.c. */
bool lt_lower_indices_checked(const lt_node *n, char *why, size_t size);
/* Does node n's kernel check its indices itself (neither constant nor a model input)? Such a node's
 * output is stored whole (fusion ends its group there), so every index is checked, as the
 * interpreter checks every one. */
bool lt_lower_checks_in_kernel(const lt_node *n);
/* Index expression iv (any integer dtype) on an axis of size d as a position in [0, d): negative
 * from the end. For a node whose kernel checks its indices (lt_lower_checks_in_kernel), a value out
 * of range is recorded in the check word (element `elem` of n's indices) and reads position 0;
 * otherwise it is clamped. */
lt_lnode *lt_lower_index_pos(lt_lctx *lc, const lt_node *n, lt_lnode *iv, int64_t d, lt_lnode *elem);

/* ---- errors ---- */
lt_status lt_lower_error(lt_lctx *lc, const lt_node *n, lt_status s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define LT_LNN(lc, e) ((e) ? LT_OK : lt_lower_nomem(lc)) /* NULL from a builder = out of memory */
lt_status lt_lower_nomem(lt_lctx *lc);

/* ---- reading values ---- */
/* The value v at multi-index idx (v's rank entries): inlined when produced in the group, the
 * override expression when v == lc->ov, an immediate for a scalar constant, else a LOAD. The
 * result has the compute dtype of v (lt_lower_cdtype). */
lt_status lt_lower_value(lt_lctx *lc, const lt_value *v, lt_lnode *const *idx, lt_lnode **res);
/* Shape of v as hooks see it (the coalesced view when active). False when not static. */
bool lt_lower_vshape(lt_lctx *lc, const lt_value *v, int *rank, int64_t *dims);
/* Input i of n at the OUTPUT index idx (out_rank entries), with numpy broadcasting. */
lt_status lt_lower_input(lt_lctx *lc, const lt_node *n, int i, int out_rank, const int64_t *out_dims,
                         lt_lnode *const *idx, lt_lnode **res);
/* Input i of n with out = n->out[0]'s shape (the common case). */
lt_status lt_lower_input0(lt_lctx *lc, const lt_node *n, int i, lt_lnode *const *idx,
                          lt_lnode **res);
/* Flat row-major offset of idx in dims. */
lt_lnode *lt_lower_flat(lt_lctx *lc, int rank, const int64_t *dims, lt_lnode *const *idx);
/* Offset of idx in strided view v (lower_view.c). */
lt_lnode *lt_lower_strided(lt_lctx *lc, const lt_sview *v, lt_lnode *const *idx);
/* Split a flat index expression into a multi-index over dims (div/mod). */
lt_status lt_lower_unflat(lt_lctx *lc, lt_lnode *flat, int rank, const int64_t *dims, lt_lnode **idx);
/* Compute dtype: FLOAT16/BFLOAT16 compute in FLOAT; others as themselves. */
lt_dtype lt_lower_cdtype(lt_dtype dt);
/* Convert an expression to dtype dt's compute type (CAST when it differs). */
lt_lnode *lt_lower_conv(lt_lctx *lc, lt_lnode *e, lt_dtype dt);

/* ---- outputs and epilogues ---- */
/* Store: the value of `v` (an anchor output) is `val` at idx; apply the group's epilogue chain
 * from v to the group output it leads to, and store into that output's buffer. */
lt_status lt_lower_store_out(lt_lctx *lc, const lt_value *v, lt_lnode *const *idx, lt_lnode *val,
                             lt_lnode **res);
/* A nest over n's output 0 (loop variables prefix0..) that reads its values back from `src` (the
 * product a call stored there, contiguous, of that shape) and stores them through the group's
 * epilogue chain (lt_lower_store_out). */
lt_status lt_lower_epilogue_from(lt_lctx *lc, const lt_node *n, lt_lbuf *src, const char *prefix, lt_lnode **res);
/* The group output buffer an anchor value's epilogue leads to (the anchor's output buffer itself when
 * no epilogue); also reports the final value. */
lt_lbuf *lt_lower_out_buf(lt_lctx *lc, const lt_value *v, const lt_value **final);
/* The epilogue nodes after anchor value v, in order, into nodes (max entries): returns their count
 * (0: v is itself a group output), -1 when the chain is longer than max. */
int lt_lower_epilogue_chain(lt_lctx *lc, const lt_value *v, const lt_node **nodes, int max);
/* A loop nest over dims with fresh variables named prefix0.. (kind serial, role OUTPUT), body from
 * a callback. */
typedef lt_status (*lt_lower_body_fn)(lt_lctx *lc, lt_lnode *const *idx, void *user, lt_lnode **body);
lt_status lt_lower_nest(lt_lctx *lc, const char *prefix, int rank, const int64_t *dims,
                        lt_lower_body_fn fn, void *user, lt_lnode **res);
/* Register a packed weight (returns the new kernel argument). */
lt_lbuf *lt_lower_add_pack(lt_lctx *lc, const lt_value *src, const char *name, lt_dtype dt,
                           int64_t size, lt_kernel *pack_kernel);

/* Register a scratch buffer (returns the new kernel argument; NULL on out-of-memory). */
lt_lbuf *lt_lower_add_scratch(lt_lctx *lc, const char *name, lt_dtype dt, int64_t size);

/* ---- GEMM-shaped anchors (lower_gemm.c) ----
 * C[b.., i, j] = alpha * sum_k A[b.., i, k] * B[b.., k, j] (+ bias) then the group's epilogue,
 * on flat buffers with element strides; batch dims may broadcast (stride 0). */
typedef struct lt_gemm_desc {
    const lt_node *n;                   /* the anchor */
    int64_t M, N, K;
    lt_lbuf *C, *A, *B;                 /* C: the group buffer the epilogue ends in */
    const lt_value *Av, *Bv;            /* operand values (constants are packed) */
    int nb;                             /* batch dims, outermost first */
    int64_t bext[LT_MAX_RANK], bsc[LT_MAX_RANK], bsa[LT_MAX_RANK], bsb[LT_MAX_RANK];
    int64_t ci, cj, ai, ak, bk, bj;     /* element strides of the matrices */
    double alpha;
    const lt_value *bias;               /* the node's own bias vector (Gemm's C, Conv's B), or NULL */
    int bias_mode;                      /* LT_BIAS_COL: bias[j] per column, LT_BIAS_ROW: bias[i] per row (abi.h) */
    const lt_value *cmat;               /* Gemm's C when not a bias vector: beta * C broadcast */
    double beta;
    /* the output multi-index of element (b.., i, j), for the epilogue's store */
    lt_status (*out_index)(lt_lctx *lc, const struct lt_gemm_desc *g, lt_lnode *const *bidx, lt_lnode *i,
                           lt_lnode *j, lt_lnode **idx);
    int out_rank;
    int64_t out_dims[LT_MAX_RANK];
    int row_dim0, row_dim1, col_dim0;   /* output dims forming rows [row_dim0, row_dim1) and
                                         * columns [col_dim0, out_rank): bias/residual matching */
    bool no_alpha;                      /* the call has no alpha (conv.h): a scalar Mul/Div stays a
                                         * Loop IR epilogue */
    bool c_strided;                     /* C is not contiguous (a transposed MatMul output): a
                                         * residual is added by the Loop IR epilogue */
    bool has_cview;                     /* cview: C as a view over the output index (MatMul), so the
                                         * epilogue nest loads C at the very offset it stores */
    lt_sview cview;
    void *user;
} lt_gemm_desc;
lt_status lt_lower_gemm(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode **res);
/* The epilogue a prelude call (lt_gemm_f32, lt_conv2d_f32) applies itself: bias (LT_BIAS_COL per
 * column / per channel, LT_BIAS_ROW per row), residual (LT_RES_BEFORE_ACT or LT_RES_AFTER_ACT the
 * activation), activation (LT_ACT_*): the codes of codegen/prelude/abi.h. */
typedef struct lt_call_epi {
    const lt_value *bias, *res;
    int bias_mode, res_mode, act;
    double act_a, act_b;
    double scale;  /* Mul/Div by a scalar constant right after the product: folded into alpha */
    const lt_value *from; /* the value the call leaves in C: the anchor's output, or the last
                           * epilogue node the call applies */
} lt_call_epi;
/* Fill ce with g's own bias and the longest prefix of the group's epilogue chain the call can
 * apply (all of it when it fits). Returns whether a Loop IR epilogue nest
 * (lt_lower_call_epilogue_nest: the rest of the chain, from ce->from) must follow the call. */
bool lt_lower_call_epilogue(lt_lctx *lc, const lt_gemm_desc *g, lt_call_epi *ce);
lt_status lt_lower_call_epilogue_nest(lt_lctx *lc, const lt_gemm_desc *g, const lt_call_epi *ce,
                                      lt_lnode **res);
/* A pack kernel: eval fn(&packed[0], &src[0], ints...) (at most 14 ints); NULL on out-of-memory.
 * The float one, and one with the source's and the packed buffer's dtypes. */
lt_kernel *lt_lower_pack_kernel(lt_lctx *lc, const char *fn, const lt_value *src, int64_t size, int n_ints,
                                const int64_t *ints);
lt_kernel *lt_lower_pack_kernel_dt(lt_lctx *lc, const char *fn, const lt_value *src, lt_dtype src_dt, lt_dtype dst_dt,
                                   int64_t size, int n_ints, const int64_t *ints);
/* Rows of a packed GEMM operand for every instruction set of gemm.h (A: MR 6 or 8; B: NR <= 48). */
int64_t lt_lower_packed_rows(int64_t rows, bool is_a);
/* The GEMM/conv packing scratch ("ws"), sized for opt->threads; NULL with *floats 0 unless
 * opt->scratch. */
lt_lbuf *lt_lower_gemm_scratch(lt_lctx *lc, int64_t *floats);
/* Accept hook part: float32 inputs. */
bool lt_lower_accept_f32_operands(const lt_node *n, char *why, size_t size);

/* ---- 8-bit integer products (lower_int8.c), hooks of lt_lower_gemm_ops ---- */
bool lt_lower_accept_matmul_integer(const lt_node *n, char *why, size_t size);
bool lt_lower_accept_conv_integer(const lt_node *n, char *why, size_t size);
lt_status lt_lower_matmul_integer(lt_lctx *lc, const lt_node *n, lt_lnode **res);
lt_status lt_lower_conv_integer(lt_lctx *lc, const lt_node *n, lt_lnode **res);

/* A heap of int64 keys in buf (lower_heap.c): `key` (a variable) sifted down from slot `start` in a heap
 * of `size` slots (expressions, each read once), then stored; slot(user, s) is the element of heap
 * slot s. The larger key ranks first in a max-heap, the smaller in a min-heap. NULL: out of memory. */
typedef lt_lnode *(*lt_heap_slot_fn)(void *user, lt_lnode *s);
lt_lnode *lt_lower_heap_sift_down(lt_lctx *lc, lt_lbuf *buf, lt_heap_slot_fn slot, void *user, lt_lvar *key,
                                  lt_lnode *start, lt_lnode *size, int levels, bool max_heap);
/* The heap key of an element: its order ord (an int32-range int64 expression) then its index (below
 * 2^31), the smaller index first; and the index back from a key. */
lt_lnode *lt_lower_heap_key(lt_lctx *lc, lt_lnode *ord, lt_lnode *index);
lt_lnode *lt_lower_heap_key_index(lt_lctx *lc, lt_lnode *key);

/* Shared (DAG) expression nodes of every statement in body become LETs (lower_share.c). */
lt_status lt_lower_share(lt_lctx *lc, lt_lnode *body, lt_lnode **out);

/* ---- small builders ---- */
lt_lnode *lt_lower_imm(lt_lctx *lc, lt_dtype dt, double v); /* immediate of compute dtype dt */
lt_lnode *lt_lower_lowest(lt_lctx *lc, lt_dtype dt);        /* -inf / minimum of dt */
lt_lnode *lt_lower_highest(lt_lctx *lc, lt_dtype dt);       /* +inf / maximum of dt */

#endif
