/* lower_nms.c — `lower` hook of NonMaxSuppressionPadded (src/ops/shape/shape_split.c): NonMaxSuppression
 * with an output of a size known at compile time (selected int64 [B * C * N, 3] and the count), the compiled
 * half of a model split at it (src/compile/split.h). boxes [B, N, 4] and scores [B, C, N].
 *
 * Kernel shape (pairs): each (batch b, class c) pair p = bC + c is selected on its own, in its own region
 * of a scratch buffer (3N int64: the rows kept from its start, the candidate heap at its end, in reverse
 * order: heap slot j is element 3N(p + 1) - 1 - j) and of a float scratch (the geometry of each kept box,
 * 5N floats). On the CPU the pairs are a parallel loop (the plan's threads); on a GPU they run on one
 * block, a thread per pair. The loops inside a pair carry state (role REDUCE, LT_LOOP_SERIAL):
 *   1. fill ("r2"): every box whose score passes the score threshold (every box without one) enters the
 *      candidate heap as one int64 key of its score's order and its index (cand_key), nc of them;
 *   2. heapify ("r3"): each slot from the middle up sifts down; the heap's root is the first candidate in
 *      the reference's order (score descending, NaN last, then index ascending: a total order, the keys'
 *      integer order, so the pops come in the order of the reference's own heap);
 *   3. pop ("r4", at most N rounds): while candidates remain and fewer than max_output are kept, the root is
 *      taken (the last slot sifts down from the root in its place) and tested against the boxes kept
 *      before for this pair ("r5", their geometry as stored); unless one of them suppresses it, its row
 *      (b, c, index) is written at the region's row ns (ns kept so far) and its geometry stored.
 * Rows never reach a live heap slot: when row s is written, s + 1 of the pair's nc0 <= N candidates were
 * popped, so the live slots are below N - s - 1, their elements above 3N - N + s = 2N + s of the region,
 * while the row ends at element 3s + 2, below that as s < N. Sifts are bounded loops of the heap's depth +
 * 1 iterations with an "active" flag, as TopK's heap (lower_scan.c). Then the pairs' counts become
 * offsets (in pair order) and their total is stored to the count output, and each pair's rows are copied
 * to the front of the selected output (on the GPU between barriers, each thread a share of the rows).
 * The rest of the selected output is unspecified, as the padded layout allows.
 *
 * Bit-identical to the reference (src/ops/image/image_roi.c, lt_img_nms_eval): scores, boxes and thresholds
 * become float32 as (float) of the reference's double load (a float16 / bfloat16 widens exactly; an integer
 * threshold goes through double), a value a fused prologue computes in a narrow float type is rounded to
 * it first (as the interpreter holds it between the ops); max_output is the first element as int64,
 * negative -> 0, clamped to N; an absent optional input is what the reference makes of it (max_output 0:
 * nothing selected; no iou threshold: 0; no score threshold: every box a candidate). An empty one (which
 * the reference reads as absent) never gets here: no kernel takes an empty operand (lt_lower_supported),
 * so such a node runs on the host. A box's
 * geometry (nms_geometry: corners in either order, or center and size) is computed from boxes when it is popped,
 * kept boxes' geometry stored in a float scratch (`kept`) for the later tests,
 * and a pair is tested as nms_suppress does, in float32: fmaxf / fminf as selects (a NaN operand yields the
 * other). The generated code may contract a product into a following add (gcc -O3 -march=native in GNU C,
 * NVRTC's default --fmad=true), which would round once where the reference rounds twice: on the GPU every
 * product is __fmul_rn (never contracted); in C every product also has a use that is not an add or a
 * subtraction (an area and the intersection are compared with 0, a half width goes through a select on its
 * NaN-ness), which keeps gcc from forming an FMA. Center-format boxes of subnormal size tell the two
 * apart (tests/test_padded_nms.py, test_degenerate_boxes).
 */
#include "lower_impl.h"
#include "lower_gpu.h"

#include <math.h>
#include <stdio.h>

#define K (lc->k)

enum { IN_BOXES, IN_SCORES, IN_MAX_OUTPUT, IN_IOU, IN_SCORE_THRESHOLD };

/* Optional input i of n when it holds a value: present and not empty (the reference reads an empty one as
 * absent). */
static const lt_value *given(const lt_node *n, int i) {
    const lt_value *v = i < n->n_in ? n->in[i] : NULL;
    return v && lt_lower_numel(v) != 0 ? v : NULL;
}

/* ---- accept ---- */

static bool refuse(char *why, size_t size, const char *what) {
    snprintf(why, size, "%s", what);
    return false;
}

static bool box_dtype_ok(lt_dtype dt) { return lt_dtype_is_float(dt) && lt_lower_dtype_ok(dt); }

static bool threshold_dtype_ok(lt_dtype dt) { return box_dtype_ok(dt) || (lt_dtype_is_int(dt) && lt_lower_dtype_ok(dt)); }

static bool accept_nms(const lt_node *n, char *why, size_t size) {
    int rb, rs, ro;
    int64_t bd[LT_MAX_RANK], sd[LT_MAX_RANK], od[LT_MAX_RANK];
    if (n->n_in < 2 || !lt_lower_shape(n->in[IN_BOXES], &rb, bd) || !lt_lower_shape(n->in[IN_SCORES], &rs, sd))
        return refuse(why, size, "boxes or scores have no static shape");
    if (rb != 3 || rs != 3 || bd[2] != 4 || sd[0] != bd[0] || sd[2] != bd[1])
        return refuse(why, size, "boxes and scores are not [B, N, 4] and [B, C, N]");
    if (n->n_out < 2 || !n->out[0] || !n->out[1])
        return refuse(why, size, "an output is absent");
    if (!lt_lower_shape(n->out[0], &ro, od) || ro != 2 || od[1] != 3 || od[0] != sd[0] * sd[1] * sd[2] ||
        n->out[0]->type.dtype != LT_INT64 || n->out[1]->type.dtype != LT_INT64)
        return refuse(why, size, "the selected output is not int64 [B * C * N, 3]");
    if (!box_dtype_ok(n->in[IN_BOXES]->type.dtype) || !box_dtype_ok(n->in[IN_SCORES]->type.dtype))
        return refuse(why, size, "boxes or scores are not of a float type");
    const lt_value *mo = given(n, IN_MAX_OUTPUT), *iou = given(n, IN_IOU), *st = given(n, IN_SCORE_THRESHOLD);
    if (mo && !(lt_dtype_is_int(mo->type.dtype) && lt_lower_dtype_ok(mo->type.dtype)))
        return refuse(why, size, "max_output_boxes_per_class is not an integer tensor");
    if ((iou && !threshold_dtype_ok(iou->type.dtype)) || (st && !threshold_dtype_ok(st->type.dtype)))
        return refuse(why, size, "a threshold is not numeric");
    if (bd[1] > ((int64_t)1 << 31)) return refuse(why, size, "more than 2^31 boxes"); /* the heap's keys */
    int64_t cpb = lt_attr_int(n, "center_point_box", 0);
    if (cpb != 0 && cpb != 1) return refuse(why, size, "center_point_box is not 0 or 1");
    return lt_lower_accept_default(n, why, size);
}

/* ---- the kernel ---- */

typedef struct nms {
    lt_lctx *lc;
    const lt_node *n;
    int64_t B, C, N;
    int64_t end;       /* 3 * B * C * N: the elements of the selected output */
    int levels;        /* iterations of a sift: the heap's depth + 1 */
    bool center, gpu;
    lt_lbuf *yb;       /* selected: every pair's rows at the front, in pair order, copied there last */
    lt_lbuf *wb;       /* scratch: each pair's rows and candidate heap (3N elements a pair) */
    lt_lvar *b, *c;    /* the pair's loop variables */
    lt_lvar *total;    /* the offsets' running sum: rows kept by the pairs before */
    lt_lvar *pair;     /* the pair b * C + c, whose rows and heap are wb's elements from 3N * pair */
    lt_lbuf *kept;     /* float scratch: the geometry of each box kept so far for the pair (xlo, xhi,
                        * ylo, yhi, area per row: 5N floats a pair), computed once */
    lt_lvar *thr;      /* the iou threshold, float */
    lt_lvar *sthr;     /* the score threshold, float (NULL: none) */
} nms;

/* Value v at idx in its compute type; a narrow float computed in the group (a fused prologue) is rounded
 * to its type first. */
static lt_status read_value(lt_lctx *lc, const lt_value *v, lt_lnode *const *idx, lt_lnode **res) {
    LT_TRY(lt_lower_value(lc, v, idx, res));
    LT_TRY(LT_LNN(lc, *res));
    lt_dtype dt = v->type.dtype;
    bool rounded = (*res)->kind == LT_L_CAST && lt_lexpr_a(*res)->dtype == dt;
    if ((dt == LT_FLOAT16 || dt == LT_BFLOAT16) && lc->in_group[v->id] && !rounded)
        *res = lt_lower_conv(lc, lt_l_cast(K, dt, *res), dt);
    return LT_LNN(lc, *res);
}

/* e (v's compute type) as the reference's (float) of its double load. */
static lt_lnode *to_f32(lt_lctx *lc, lt_lnode *e, lt_dtype dt) {
    lt_dtype cd = lt_lower_cdtype(dt);
    if (cd == LT_FLOAT) return e;
    return lt_l_cast(K, LT_FLOAT, cd == LT_DOUBLE ? e : lt_l_cast(K, LT_DOUBLE, e));
}

/* The first element of v (a small input of static shape), in its compute type. */
static lt_status read_first(lt_lctx *lc, const lt_value *v, lt_lnode **res) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_lnode *idx[LT_MAX_RANK];
    if (!lt_lower_shape(v, &rank, dims)) return lt_error(lc->ctx, LT_ERR_INTERNAL, "'%s' has no static shape", v->name);
    for (int d = 0; d < rank; d++)
        if (!(idx[d] = lt_l_int(K, 0))) return lt_lower_nomem(lc);
    return read_value(lc, v, idx, res);
}

/* scores[b, c, box] as float (box: an index expression). */
static lt_status score_at(nms *t, lt_lnode *box, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    const lt_value *v = t->n->in[IN_SCORES];
    lt_lnode *idx[3] = {lt_l_var(K, t->b), lt_l_var(K, t->c), box};
    LT_TRY(read_value(lc, v, idx, res));
    *res = to_f32(lc, *res, v->type.dtype);
    return LT_LNN(lc, *res);
}

/* boxes[b, box, e] as float. */
static lt_status coord_at(nms *t, lt_lnode *box, int e, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    const lt_value *v = t->n->in[IN_BOXES];
    lt_lnode *idx[3] = {lt_l_var(K, t->b), box, lt_l_int(K, e)};
    LT_TRY(read_value(lc, v, idx, res));
    *res = to_f32(lc, *res, v->type.dtype);
    return LT_LNN(lc, *res);
}

/* Element of heap slot j: 3N (pair + 1) - 1 - j, from the end of the pair's region. */
static lt_lnode *slot(nms *t, lt_lnode *j) {
    lt_lctx *lc = t->lc;
    lt_lnode *end = lt_l_mul(K, lt_l_add(K, lt_l_var(K, t->pair), lt_l_int(K, 1)), lt_l_int(K, 3 * t->N));
    return lt_l_binary(K, LT_LOP_SUB, lt_l_binary(K, LT_LOP_SUB, end, lt_l_int(K, 1)), j);
}

/* Element `col` of row s of the pair's region (row N * pair + s of wb). */
static lt_lnode *row_elem(nms *t, lt_lnode *s, int col) {
    lt_lctx *lc = t->lc;
    lt_lnode *row0 = lt_l_mul(K, lt_l_var(K, t->pair), lt_l_int(K, t->N));
    return lt_l_add(K, lt_l_mul(K, lt_l_add(K, row0, s), lt_l_int(K, 3)), lt_l_int(K, col));
}

/* Element `e` of the kept geometry of the pair's row s (s an expression): the pair's region holds five
 * columns of N floats (xlo, xhi, ylo, yhi, area), so the test against the kept boxes reads each
 * contiguously. */
static lt_lnode *kept_elem(nms *t, lt_lnode *s, int e) {
    lt_lctx *lc = t->lc;
    lt_lnode *col = lt_l_add(K, lt_l_mul(K, lt_l_var(K, t->pair), lt_l_int(K, 5)), lt_l_int(K, e));
    return lt_l_add(K, lt_l_mul(K, col, lt_l_int(K, t->N)), s);
}

/* a * b in float32, rounded on its own (never contracted into an add on the GPU; see the top comment). */
static lt_lnode *fmul(nms *t, lt_lnode *a, lt_lnode *b) {
    lt_lctx *lc = t->lc;
    if (!t->gpu) return lt_l_binary(K, LT_LOP_MUL, a, b);
    lt_lnode *args[2] = {a, b};
    return lt_l_call(K, LT_FLOAT, "__fmul_rn", 2, args);
}

static lt_lnode *var(lt_lctx *lc, lt_lvar *v) { return lt_l_var(K, v); }

/* a when it compares `op` (GT: fmaxf, LT: fminf) to b or b is NaN, else b: a NaN operand yields the other. */
static lt_lnode *nan_ignoring(lt_lctx *lc, lt_lop op, lt_lvar *a, lt_lvar *b) {
    lt_lnode *pick = lt_l_binary(K, LT_LOP_OR, lt_l_binary(K, op, var(lc, a), var(lc, b)),
                                 lt_l_unary(K, LT_LOP_ISNAN, var(lc, b)));
    return lt_l_select(K, pick, var(lc, a), var(lc, b));
}

static lt_lnode *fmax_of(lt_lctx *lc, lt_lvar *a, lt_lvar *b) { return nan_ignoring(lc, LT_LOP_GT, a, b); }

static lt_lnode *fmin_of(lt_lctx *lc, lt_lvar *a, lt_lvar *b) { return nan_ignoring(lc, LT_LOP_LT, a, b); }

/* A candidate in the heap: one int64 key, ord(score) * 2^31 + (2^31 - 1 - index), where ord is the
 * score's order (the prelude's lt_f32_order: -0 = +0) and NaN below every number. A larger key ranks
 * before a smaller one: the reference's nms_cmp (a number before NaN, a higher score first, equal
 * scores or two NaNs by index), with one integer compare and no score read during the sifts. */
static lt_lnode *cand_key(nms *t, lt_lvar *score, lt_lnode *box) {
    lt_lctx *lc = t->lc;
    lt_lnode *args[1] = {var(lc, score)};
    lt_lnode *ord = lt_l_select(K, lt_l_unary(K, LT_LOP_ISNAN, var(lc, score)), lt_l_int(K, INT32_MIN),
                                lt_l_call(K, LT_INT64, "lt_f32_order", 1, args));
    return lt_lower_heap_key(lc, ord, box);
}

static lt_lnode *nms_slot(void *t, lt_lnode *j) { return slot(t, j); }

/* The key mk (a variable) sifted down from slot `start` (a variable) in a heap of `size` slots (a
 * variable), then stored: the larger child moves up into the hole while it is above mk. */
static lt_status sift_down(nms *t, lt_lvar *mk, lt_lvar *start, lt_lvar *size, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    *res = lt_lower_heap_sift_down(lc, t->wb, nms_slot, t, mk, var(lc, start), var(lc, size), t->levels, true);
    return *res ? LT_OK : lt_lower_nomem(lc);
}

/* A box's edges and area in float32 (nms_geometry), as variables. */
typedef struct geo {
    lt_lvar *xlo, *xhi, *ylo, *yhi, *area;
} geo;

/* x / 2 in float32 (center_point_box): a product by 0.5 once the compiler rewrites it, so on the GPU
 * __fmul_rn, and in C with a use that is not an add (a select on its NaN-ness: a NaN half width gives NaN
 * edges either way, and nothing reads a NaN's payload). */
static lt_lnode *half(nms *t, lt_lvar *x, lt_lvar *h) {
    lt_lctx *lc = t->lc;
    if (t->gpu) return lt_l_let(K, h, fmul(t, var(lc, x), lt_l_float(K, LT_FLOAT, 0.5)));
    lt_lnode *q = lt_l_binary(K, LT_LOP_DIV, var(lc, x), lt_l_float(K, LT_FLOAT, 2.0));
    lt_lnode *s[2] = {lt_l_let(K, h, q), lt_l_assign(K, h, lt_l_select(K, lt_l_unary(K, LT_LOP_ISNAN, var(lc, h)),
                                                                       lt_l_float(K, LT_FLOAT, NAN), var(lc, h)))};
    return lt_l_seq(K, 2, s);
}

/* LET lo / hi = the smaller / larger of a and b as the reference's minmax does (a >= b: lo = b, hi = a). */
static void min_max(lt_lctx *lc, lt_lvar *a, lt_lvar *b, lt_lvar *lo, lt_lvar *hi, lt_lnode **out) {
    out[0] = lt_l_let(K, lo, lt_l_select(K, lt_l_binary(K, LT_LOP_GE, var(lc, a), var(lc, b)), var(lc, b), var(lc, a)));
    out[1] = lt_l_let(K, hi, lt_l_select(K, lt_l_binary(K, LT_LOP_GE, var(lc, a), var(lc, b)), var(lc, a), var(lc, b)));
}

/* The statements computing g for box index `box` (a variable) of batch b. */
static lt_status box_geometry(nms *t, lt_lvar *box, geo *g, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    lt_lvar *cv[4];
    lt_lnode *s[14];
    int ns = 0;
    for (int e = 0; e < 4; e++) {
        lt_lnode *x = NULL;
        if (!(cv[e] = lt_kernel_var(K, "bc", LT_FLOAT))) return lt_lower_nomem(lc);
        LT_TRY(coord_at(t, var(lc, box), e, &x));
        s[ns++] = lt_l_let(K, cv[e], x);
    }
    g->xlo = lt_kernel_var(K, "xlo", LT_FLOAT), g->xhi = lt_kernel_var(K, "xhi", LT_FLOAT);
    g->ylo = lt_kernel_var(K, "ylo", LT_FLOAT), g->yhi = lt_kernel_var(K, "yhi", LT_FLOAT);
    g->area = lt_kernel_var(K, "area", LT_FLOAT);
    if (!g->xlo || !g->xhi || !g->ylo || !g->yhi || !g->area) return lt_lower_nomem(lc);
    if (!t->center) { /* corners (y1, x1, y2, x2) in either order */
        min_max(lc, cv[1], cv[3], g->xlo, g->xhi, &s[ns]);
        min_max(lc, cv[0], cv[2], g->ylo, g->yhi, &s[ns + 2]);
        ns += 4;
    } else { /* (x_center, y_center, width, height) */
        lt_lvar *w = lt_kernel_var(K, "hw", LT_FLOAT), *h = lt_kernel_var(K, "hh", LT_FLOAT);
        if (!w || !h) return lt_lower_nomem(lc);
        s[ns++] = half(t, cv[2], w);
        s[ns++] = half(t, cv[3], h);
        s[ns++] = lt_l_let(K, g->xlo, lt_l_binary(K, LT_LOP_SUB, var(lc, cv[0]), var(lc, w)));
        s[ns++] = lt_l_let(K, g->xhi, lt_l_binary(K, LT_LOP_ADD, var(lc, cv[0]), var(lc, w)));
        s[ns++] = lt_l_let(K, g->ylo, lt_l_binary(K, LT_LOP_SUB, var(lc, cv[1]), var(lc, h)));
        s[ns++] = lt_l_let(K, g->yhi, lt_l_binary(K, LT_LOP_ADD, var(lc, cv[1]), var(lc, h)));
    }
    s[ns++] = lt_l_let(K, g->area, fmul(t, lt_l_binary(K, LT_LOP_SUB, var(lc, g->xhi), var(lc, g->xlo)),
                                        lt_l_binary(K, LT_LOP_SUB, var(lc, g->yhi), var(lc, g->ylo))));
    *res = lt_l_seq(K, ns, s);
    return LT_LNN(lc, *res);
}

static lt_lnode *positive(lt_lctx *lc, lt_lvar *v) { return lt_l_binary(K, LT_LOP_GT, var(lc, v), lt_l_float(K, LT_FLOAT, 0)); }

/* The statements setting `sup` (a BOOL variable declared here) to whether kept box k suppresses candidate a
 * (nms_suppress(a, k): the intersection over the union above the threshold, with its early outs). */
static lt_status suppresses(nms *t, const geo *a, const geo *k, lt_lvar *sup, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    lt_lvar *ixlo = lt_kernel_var(K, "ixlo", LT_FLOAT), *ixhi = lt_kernel_var(K, "ixhi", LT_FLOAT);
    lt_lvar *iylo = lt_kernel_var(K, "iylo", LT_FLOAT), *iyhi = lt_kernel_var(K, "iyhi", LT_FLOAT);
    lt_lvar *inter = lt_kernel_var(K, "inter", LT_FLOAT), *uni = lt_kernel_var(K, "uni", LT_FLOAT);
    if (!ixlo || !ixhi || !iylo || !iyhi || !inter || !uni) return lt_lower_nomem(lc);
    lt_lnode *iw = lt_l_binary(K, LT_LOP_SUB, var(lc, ixhi), var(lc, ixlo));
    lt_lnode *ih = lt_l_binary(K, LT_LOP_SUB, var(lc, iyhi), var(lc, iylo));
    lt_lnode *sum = lt_l_binary(K, LT_LOP_ADD, var(lc, a->area), var(lc, k->area));
    lt_lnode *conds[7] = {
        lt_l_binary(K, LT_LOP_GT, var(lc, ixhi), var(lc, ixlo)),
        lt_l_binary(K, LT_LOP_GT, var(lc, iyhi), var(lc, iylo)),
        positive(lc, inter), positive(lc, a->area), positive(lc, k->area), positive(lc, uni),
        lt_l_binary(K, LT_LOP_GT, lt_l_binary(K, LT_LOP_DIV, var(lc, inter), var(lc, uni)), var(lc, t->thr)),
    };
    lt_lnode *all = conds[0];
    for (int i = 1; i < 7; i++) all = lt_l_binary(K, LT_LOP_AND, all, conds[i]);
    lt_lnode *s[7] = {
        lt_l_let(K, ixlo, fmax_of(lc, a->xlo, k->xlo)),
        lt_l_let(K, ixhi, fmin_of(lc, a->xhi, k->xhi)),
        lt_l_let(K, iylo, fmax_of(lc, a->ylo, k->ylo)),
        lt_l_let(K, iyhi, fmin_of(lc, a->yhi, k->yhi)),
        lt_l_let(K, inter, fmul(t, iw, ih)),
        lt_l_let(K, uni, lt_l_binary(K, LT_LOP_SUB, sum, var(lc, inter))),
        lt_l_let(K, sup, all),
    };
    *res = lt_l_seq(K, 7, s);
    return LT_LNN(lc, *res);
}

/* Fill: every box whose score passes the threshold enters heap slot nc (nc += 1). */
static lt_status fill_pass(nms *t, lt_lvar *nc, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    lt_lvar *i = lt_kernel_var(K, "r2", LT_INT64), *s = lt_kernel_var(K, "sc", LT_FLOAT);
    if (!i || !s) return lt_lower_nomem(lc);
    lt_lnode *put[2] = {lt_l_store(K, t->wb, slot(t, var(lc, nc)), cand_key(t, s, var(lc, i))),
                        lt_l_assign(K, nc, lt_l_add(K, var(lc, nc), lt_l_int(K, 1)))};
    lt_lnode *enter = lt_l_seq(K, 2, put), *sc = NULL;
    LT_TRY(score_at(t, var(lc, i), &sc));
    if (t->sthr) enter = lt_l_if(K, lt_l_binary(K, LT_LOP_GT, var(lc, s), var(lc, t->sthr)), enter, NULL);
    lt_lnode *body[2] = {lt_l_let(K, s, sc), enter};
    *res = lt_l_for(K, i, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, t->N), LT_LOOP_SERIAL, lt_l_seq(K, 2, body));
    return LT_LNN(lc, *res);
}

/* Heapify: slots nc/2 - 1 down to 0 each sift down. */
static lt_status heapify_pass(nms *t, lt_lvar *nc, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    lt_lvar *q = lt_kernel_var(K, "r3", LT_INT64), *start = lt_kernel_var(K, "start", LT_INT64);
    lt_lvar *mk = lt_kernel_var(K, "mk", LT_INT64);
    if (!q || !start || !mk) return lt_lower_nomem(lc);
    lt_lnode *half_n = lt_l_binary(K, LT_LOP_DIV, var(lc, nc), lt_l_int(K, 2));
    lt_lnode *sift = NULL;
    LT_TRY(sift_down(t, mk, start, nc, &sift));
    lt_lnode *body[3] = {
        lt_l_let(K, start, lt_l_binary(K, LT_LOP_SUB, lt_l_binary(K, LT_LOP_SUB, half_n, lt_l_int(K, 1)), var(lc, q))),
        lt_l_let(K, mk, lt_l_load(K, t->wb, slot(t, var(lc, start)))), sift,
    };
    *res = lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_binary(K, LT_LOP_DIV, var(lc, nc), lt_l_int(K, 2)),
                    LT_LOOP_SERIAL, lt_l_seq(K, 3, body));
    return LT_LNN(lc, *res);
}

/* Test candidate cd (geometry a) against the ns boxes kept for this pair (their geometry as stored
 * when they were kept): `keep` ends 0 when one suppresses it. */
static lt_status kept_pass(nms *t, const geo *a, lt_lvar *ns, lt_lvar *keep, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    lt_lvar *j = lt_kernel_var(K, "r5", LT_INT64), *sup = lt_kernel_var(K, "sup", LT_BOOL);
    geo k = {lt_kernel_var(K, "kxlo", LT_FLOAT), lt_kernel_var(K, "kxhi", LT_FLOAT), lt_kernel_var(K, "kylo", LT_FLOAT),
             lt_kernel_var(K, "kyhi", LT_FLOAT), lt_kernel_var(K, "karea", LT_FLOAT)};
    if (!j || !sup || !k.xlo || !k.xhi || !k.ylo || !k.yhi || !k.area) return lt_lower_nomem(lc);
    lt_lnode *test = NULL;
    LT_TRY(suppresses(t, a, &k, sup, &test));
    lt_lvar *kv[5] = {k.xlo, k.xhi, k.ylo, k.yhi, k.area};
    lt_lnode *body[7];
    for (int e = 0; e < 5; e++) body[e] = lt_l_let(K, kv[e], lt_l_load(K, t->kept, kept_elem(t, var(lc, j), e)));
    body[5] = test;
    if (!t->gpu) { /* no branch: the C compiler vectorizes the tests (all ns of them: no early exit) */
        body[6] = lt_l_assign(K, keep, lt_l_select(K, var(lc, sup), lt_l_int(K, 0), var(lc, keep)));
        *res = lt_l_for(K, j, LT_ROLE_REDUCE, lt_l_int(K, 0), var(lc, ns), LT_LOOP_SERIAL, lt_l_seq(K, 7, body));
        return LT_LNN(lc, *res);
    }
    body[6] = lt_l_if(K, var(lc, sup), lt_l_assign(K, keep, lt_l_int(K, 0)), NULL);
    lt_lnode *guarded = lt_l_if(K, lt_l_binary(K, LT_LOP_NE, var(lc, keep), lt_l_int(K, 0)), lt_l_seq(K, 7, body), NULL);
    *res = lt_l_for(K, j, LT_ROLE_REDUCE, lt_l_int(K, 0), var(lc, ns), LT_LOOP_SERIAL, guarded);
    return LT_LNN(lc, *res);
}

/* Pop: up to N rounds; while candidates remain and fewer than mo are kept, take the root, sift the last
 * slot down in its place, and write the candidate's row unless a kept box suppresses it. */
static lt_status pop_pass(nms *t, lt_lvar *nc, lt_lvar *ns, lt_lvar *mo, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    lt_lvar *r = lt_kernel_var(K, "r4", LT_INT64), *cd = lt_kernel_var(K, "cd", LT_INT64);
    lt_lvar *lk = lt_kernel_var(K, "lk", LT_INT64);
    lt_lvar *keep = lt_kernel_var(K, "keep", LT_INT32), *root = lt_kernel_var(K, "root", LT_INT64);
    if (!r || !cd || !lk || !keep || !root) return lt_lower_nomem(lc);
    geo a = {0};
    lt_lnode *sift = NULL, *ageo = NULL, *test = NULL;
    LT_TRY(sift_down(t, lk, root, nc, &sift));
    LT_TRY(box_geometry(t, cd, &a, &ageo));
    LT_TRY(kept_pass(t, &a, ns, keep, &test));
    lt_lnode *refill[3] = {lt_l_let(K, lk, lt_l_load(K, t->wb, slot(t, var(lc, nc)))), lt_l_let(K, root, lt_l_int(K, 0)), sift};
    lt_lvar *av[5] = {a.xlo, a.xhi, a.ylo, a.yhi, a.area};
    lt_lnode *write[9] = {
        lt_l_store(K, t->wb, row_elem(t, var(lc, ns), 0), var(lc, t->b)),
        lt_l_store(K, t->wb, row_elem(t, var(lc, ns), 1), var(lc, t->c)),
        lt_l_store(K, t->wb, row_elem(t, var(lc, ns), 2), var(lc, cd)),
    };
    for (int e = 0; e < 5; e++) write[3 + e] = lt_l_store(K, t->kept, kept_elem(t, var(lc, ns), e), var(lc, av[e]));
    write[8] = lt_l_assign(K, ns, lt_l_add(K, var(lc, ns), lt_l_int(K, 1)));
    lt_lnode *round[7] = {
        lt_l_let(K, cd, lt_lower_heap_key_index(lc, lt_l_load(K, t->wb, slot(t, lt_l_int(K, 0))))),
        lt_l_assign(K, nc, lt_l_binary(K, LT_LOP_SUB, var(lc, nc), lt_l_int(K, 1))),
        lt_l_if(K, lt_l_binary(K, LT_LOP_GT, var(lc, nc), lt_l_int(K, 0)), lt_l_seq(K, 3, refill), NULL),
        ageo,
        lt_l_let(K, keep, lt_l_int(K, 1)),
        test,
        lt_l_if(K, lt_l_binary(K, LT_LOP_NE, var(lc, keep), lt_l_int(K, 0)), lt_l_seq(K, 9, write), NULL),
    };
    lt_lnode *go = lt_l_binary(K, LT_LOP_AND, lt_l_binary(K, LT_LOP_GT, var(lc, nc), lt_l_int(K, 0)),
                               lt_l_binary(K, LT_LOP_LT, var(lc, ns), var(lc, mo)));
    *res = lt_l_for(K, r, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, t->N), LT_LOOP_SERIAL,
                    lt_l_if(K, go, lt_l_seq(K, 7, round), NULL));
    return LT_LNN(lc, *res);
}

/* The selection of one pair (b, c): fill, heapify and pop, ns (declared 0 by the caller) rows kept. */
static lt_status one_pair(nms *t, lt_lvar *mo, lt_lvar *ns, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    lt_lvar *nc = lt_kernel_var(K, "nc", LT_INT64);
    if (!nc) return lt_lower_nomem(lc);
    lt_lnode *fill = NULL, *heapify = NULL, *pop = NULL;
    LT_TRY(fill_pass(t, nc, &fill));
    LT_TRY(heapify_pass(t, nc, &heapify));
    LT_TRY(pop_pass(t, nc, ns, mo, &pop));
    lt_lnode *pair[4] = {lt_l_let(K, nc, lt_l_int(K, 0)), fill, heapify, pop};
    *res = lt_l_seq(K, 4, pair);
    return LT_LNN(lc, *res);
}

/* The pairs (b, c), each selected in its own region of the scratch buffer wb (rows from element
 * 3N pair, the heap ending at 3N (pair + 1); its kept geometry from 5N pair), its count in cnt[pair];
 * then the counts become offsets (off[pair]) and the total is stored; then each pair's rows are copied
 * to the front of the selected output, in pair order. The rows and their order are those of one walk
 * over the pairs in order. On the CPU the pairs are a parallel loop (the threads of the plan), the
 * offsets and the copy serial; on the GPU they run on one block of T threads (pair = thread + k T),
 * thread 0 makes the offsets between barriers, and every thread copies its share of each pair's rows
 * (row i by thread i mod T). lets: the inputs' scalars, computed first (by every thread). */
static lt_status pairs(nms *t, lt_lvar *mo, lt_lbuf *cb, lt_lnode *const *lets, int n_lets, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    bool gpu = t->gpu;
    int64_t P = t->B * t->C, T = !gpu ? 1 : lc->opt->shape_generic || P >= 1024 ? 1024 : (P + 31) / 32 * 32;
    lt_lbuf *cnt = lt_lower_add_scratch(lc, "pair_count", LT_INT64, P), *off = lt_lower_add_scratch(lc, "pair_off", LT_INT64, P);
    lt_lvar *blk = lt_kernel_var(K, "gblk", LT_INT64), *thr = lt_kernel_var(K, "gthr", LT_INT64);
    lt_lvar *k = lt_kernel_var(K, "pk", LT_INT64), *ns = lt_kernel_var(K, "ns", LT_INT64);
    lt_lvar *p = lt_kernel_var(K, "cp", LT_INT64), *q = lt_kernel_var(K, "cq", LT_INT64), *i = lt_kernel_var(K, "ci", LT_INT64);
    lt_lvar *e = lt_kernel_var(K, "ce", LT_INT64);
    t->pair = lt_kernel_var(K, "pair", LT_INT64);
    if (!cnt || !off || !blk || !thr || !k || !ns || !p || !q || !i || !e || !t->pair) return lt_lower_nomem(lc);
    lt_lnode *sel = NULL;
    LT_TRY(one_pair(t, mo, ns, &sel));
    lt_lnode *per_pair[5] = {
        lt_l_let(K, t->b, lt_l_binary(K, LT_LOP_DIV, var(lc, t->pair), lt_l_int(K, t->C))),
        lt_l_let(K, t->c, lt_l_binary(K, LT_LOP_MOD, var(lc, t->pair), lt_l_int(K, t->C))),
        lt_l_let(K, ns, lt_l_int(K, 0)),
        lt_l_if(K, lt_l_binary(K, LT_LOP_GT, var(lc, mo), lt_l_int(K, 0)), sel, NULL), /* max_output 0: none */
        lt_l_store(K, cnt, var(lc, t->pair), var(lc, ns)),
    };
    lt_lnode *select = NULL;
    if (gpu) {
        lt_lnode *mine[2] = {
            lt_l_let(K, t->pair, lt_l_add(K, lt_l_mul(K, var(lc, k), lt_l_int(K, T)), var(lc, thr))),
            lt_l_if(K, lt_l_binary(K, LT_LOP_LT, var(lc, t->pair), lt_l_int(K, P)), lt_l_seq(K, 5, per_pair), NULL),
        };
        select = lt_l_for(K, k, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, (P + T - 1) / T), LT_LOOP_SERIAL, lt_l_seq(K, 2, mine));
    } else {
        select = lt_l_for(K, t->pair, LT_ROLE_OUTPUT, lt_l_int(K, 0), lt_l_int(K, P), LT_LOOP_PARALLEL, lt_l_seq(K, 5, per_pair));
    }
    /* the offsets and the total */
    lt_lnode *scan[2] = {lt_l_store(K, off, var(lc, p), var(lc, t->total)),
                         lt_l_assign(K, t->total, lt_l_add(K, var(lc, t->total), lt_l_load(K, cnt, var(lc, p))))};
    lt_lnode *first[3] = {
        lt_l_let(K, t->total, lt_l_int(K, 0)),
        lt_l_for(K, p, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, P), LT_LOOP_SERIAL, lt_l_seq(K, 2, scan)),
        cb ? lt_l_store(K, cb, lt_l_int(K, 0), var(lc, t->total)) : NULL,
    };
    /* rows i (GPU: i = thr + q T) of each pair p to rows off[p] + i */
    lt_lnode *src = lt_l_add(K, lt_l_mul(K, lt_l_add(K, lt_l_mul(K, var(lc, p), lt_l_int(K, t->N)), var(lc, i)), lt_l_int(K, 3)),
                             var(lc, e));
    lt_lnode *dst = lt_l_add(K, lt_l_mul(K, lt_l_add(K, lt_l_load(K, off, var(lc, p)), var(lc, i)), lt_l_int(K, 3)), var(lc, e));
    lt_lnode *row = lt_l_for(K, e, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, 3), LT_LOOP_SERIAL,
                             lt_l_store(K, t->yb, dst, lt_l_load(K, t->wb, src)));
    lt_lnode *rows = NULL;
    if (gpu) {
        lt_lnode *take[2] = {
            lt_l_let(K, i, lt_l_add(K, lt_l_mul(K, var(lc, q), lt_l_int(K, T)), var(lc, thr))),
            lt_l_if(K, lt_l_binary(K, LT_LOP_LT, var(lc, i), lt_l_load(K, cnt, var(lc, p))), row, NULL),
        };
        rows = lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, (t->N + T - 1) / T), LT_LOOP_SERIAL, lt_l_seq(K, 2, take));
    } else {
        rows = lt_l_for(K, i, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_load(K, cnt, var(lc, p)), LT_LOOP_SERIAL, row);
    }
    lt_lnode *copy = lt_l_for(K, p, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, P), LT_LOOP_SERIAL, rows);
    lt_lnode *body[24];
    int nb = 0;
    for (int j = 0; j < n_lets; j++) body[nb++] = lets[j];
    body[nb++] = select;
    if (gpu) body[nb++] = lt_l_barrier(K);
    lt_lnode *offsets = lt_l_seq(K, cb ? 3 : 2, first);
    body[nb++] = gpu ? lt_l_if(K, lt_l_binary(K, LT_LOP_EQ, var(lc, thr), lt_l_int(K, 0)), offsets, NULL) : offsets;
    if (gpu) body[nb++] = lt_l_barrier(K);
    body[nb++] = copy;
    *res = lt_l_seq(K, nb, body);
    if (gpu) {
        lt_lnode *b = lt_lower_gpu_loop(lc, thr, LT_ROLE_OUTPUT, T, LT_LOOP_GPU_THREAD, 0, *res);
        *res = lt_lower_gpu_loop(lc, blk, LT_ROLE_OUTPUT, 1, LT_LOOP_GPU_BLOCK, 0, b);
    }
    return LT_LNN(lc, *res);
}

/* LET v = the float threshold of input i (0 when absent), or *v = NULL when absent and `optional`. */
static lt_status threshold(nms *t, int i, const char *name, bool optional, lt_lvar **v, lt_lnode **let) {
    lt_lctx *lc = t->lc;
    const lt_value *in = given(t->n, i);
    *v = NULL, *let = NULL;
    if (!in && optional) return LT_OK;
    lt_lnode *x = lt_l_float(K, LT_FLOAT, 0);
    if (in) {
        LT_TRY(read_first(lc, in, &x));
        x = to_f32(lc, x, in->type.dtype);
    }
    if (!(*v = lt_kernel_var(K, name, LT_FLOAT))) return lt_lower_nomem(lc);
    *let = lt_l_let(K, *v, x);
    return LT_LNN(lc, *let);
}

/* LET mo = max_output clamped to [0, N]. */
static lt_status max_output(nms *t, const lt_value *in, lt_lvar *mo, lt_lnode **res) {
    lt_lctx *lc = t->lc;
    lt_lnode *x = NULL;
    LT_TRY(read_first(lc, in, &x));
    lt_lvar *raw = lt_kernel_var(K, "mo_raw", LT_INT64);
    if (!raw) return lt_lower_nomem(lc);
    lt_lnode *clamped = lt_l_select(K, lt_l_binary(K, LT_LOP_LT, var(lc, raw), lt_l_int(K, 0)), lt_l_int(K, 0),
                                    lt_l_select(K, lt_l_binary(K, LT_LOP_GT, var(lc, raw), lt_l_int(K, t->N)),
                                                lt_l_int(K, t->N), var(lc, raw)));
    lt_lnode *s[2] = {lt_l_let(K, raw, x->dtype == LT_INT64 ? x : lt_l_cast(K, LT_INT64, x)), lt_l_let(K, mo, clamped)};
    *res = lt_l_seq(K, 2, s);
    return LT_LNN(lc, *res);
}

static lt_status l_nms(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int rs;
    int64_t sd[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[IN_SCORES], &rs, sd) || rs != 3)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "scores have no static shape");
    nms t = {.lc = lc, .n = n, .B = sd[0], .C = sd[1], .N = sd[2]};
    t.end = 3 * t.B * t.C * t.N;
    t.center = lt_attr_int(n, "center_point_box", 0) == 1;
    t.gpu = lc->opt->gpu;
    t.levels = 1;
    while (((int64_t)1 << (t.levels - 1)) <= t.N) t.levels++;
    t.yb = lc->vbuf[n->out[0]->id];
    lt_lbuf *cb = n->out[1] ? lc->vbuf[n->out[1]->id] : NULL;
    if (!t.yb || t.yb->dtype != LT_INT64 || (cb && cb->dtype != LT_INT64))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "the outputs are not stored as they are");
    t.b = lt_kernel_var(K, "r0", LT_INT64), t.c = lt_kernel_var(K, "r1", LT_INT64);
    t.total = lt_kernel_var(K, "total", LT_INT64);
    if (!t.b || !t.c || !t.total) return lt_lower_nomem(lc);
    const lt_value *mov = given(n, IN_MAX_OUTPUT);
    if (!mov || t.N == 0) { /* without max_output nothing is selected: only the count (0) is stored */
        *res = cb ? lt_l_store(K, cb, lt_l_int(K, 0), lt_l_int(K, 0)) : lt_l_empty(K);
        return LT_LNN(lc, *res);
    }
    lt_lvar *mo = lt_kernel_var(K, "mo", LT_INT64);
    if (!mo) return lt_lower_nomem(lc);
    lt_lnode *lets[3] = {NULL, NULL, NULL};
    LT_TRY(max_output(&t, mov, mo, &lets[0]));
    LT_TRY(threshold(&t, IN_IOU, "iou_thr", false, &t.thr, &lets[1]));
    LT_TRY(threshold(&t, IN_SCORE_THRESHOLD, "score_thr", true, &t.sthr, &lets[2]));
    if (!(t.kept = lt_lower_add_scratch(lc, "kept_geometry", LT_FLOAT, 5 * t.N * t.B * t.C)) ||
        !(t.wb = lt_lower_add_scratch(lc, "nms_rows", LT_INT64, t.end)))
        return lt_lower_nomem(lc);
    return pairs(&t, mo, cb, lets, lets[2] ? 3 : 2, res);
}

const lt_lower_reg lt_lower_nms[] = {
    {LT_OP_NonMaxSuppressionPadded, accept_nms, NULL, l_nms, 0, 0, LT_LF_NO_EPILOGUE},
    {0},
};
