/* convt_phases.c — a ConvTranspose with constant weights becomes one ordinary Conv and a
 * depth-to-space, which lathe compiles, with no multiplication by inserted zeros (the sub-pixel or
 * phase decomposition).
 *
 * Per spatial axis with stride s, kernel k and begin pad pb (the pads the interpreter computes from
 * pads, auto_pad or output_shape: lt_convt_geometry), output position o is o' = o + pb = q*s + r,
 * and phase r of the full output is z_r[q] = sum_{m < M} x[q - m] * w[r + s*m], M = ceil(k/s)
 * (a tap with r + s*m >= k is zero). So
 *     Y  = Conv(X, W', B', group, kernel M, pads [M-1-q0, right])   channels (group, r_1..r_d, cout)
 *     Y  = Reshape [N, group, s_1..s_d, cout, Q_1..Q_d] -> Transpose [N, group, cout, Q_1, s_1, ..]
 *          -> Reshape [N, group*cout, Q_1*s_1, ..]                    (phases interleaved)
 *     out = Slice [pb - q0*s, pb - q0*s + out) per axis
 * where W'[(g, r, co), ci, t] = W[g*Cin/group + ci, co, r + s*(M-1-t)] (the sub-kernels flipped,
 * built here as a constant), B' the bias repeated per phase, q0 the first phase row the output
 * needs (at most M-1, negative when pb is) and Q the rows computed. Output positions past the full
 * extent (output_padding, a large output_shape) read only padding: they get the bias, as in the
 * interpreter. With every stride 1 there are no phases: the Conv and the Slice remain.
 * Left alone (the interpreter runs them): dilations other than 1, a weight or bias that is not a
 * constant, a non-static input, a dtype other than float32 (Conv compiles for float32 only), an
 * empty input or output, a weight larger than MAX_WEIGHT elements after the rewrite.
 * Level -O1.
 */
#include "util.h"

#include <stdio.h>
#include <string.h>

#include "../ops/nn/nn_convt.h"

#define MAX_WEIGHT ((int64_t)1 << 28)

static int64_t floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Per-axis plan of the phase decomposition. */
typedef struct axis_plan {
    int64_t s, k, M, q0, Q, pl, pr, crop; /* crop: first interleaved position the output keeps */
} axis_plan;

typedef struct convt {
    int d;                 /* spatial axes */
    int64_t N, Cin, Cog, G, R; /* R: phases, prod(s) */
    lt_convt_geom g;
    axis_plan ax[LT_MAX_RANK];
} convt;

/* The plan of axis i: the phase rows q0 .. q0+Q-1 computed, the Conv's pads, the crop. */
static void plan_axis(const lt_convt_geom *g, int i, axis_plan *a) {
    a->s = g->s[i];
    a->k = g->k[i];
    a->M = (a->k + a->s - 1) / a->s;
    int64_t pb = g->pad_begin[i], qlo = floordiv(pb, a->s), qhi = floordiv(pb + g->out[i] - 1, a->s);
    a->q0 = qlo < a->M - 1 ? qlo : a->M - 1;
    a->pl = a->M - 1 - a->q0;
    int64_t pr = qhi + 1 - g->in[i]; /* Conv rows = in + pl + pr - M + 1 = qhi - q0 + 1 */
    a->pr = pr > 0 ? pr : 0;
    a->Q = g->in[i] + a->pl + a->pr - a->M + 1;
    a->crop = pb - a->q0 * a->s;
}

/* W' [(G, r..., Cog), Cin/G, M...] from W [Cin, Cog, k...]. */
static lt_status phase_weight(lt_ctx *ctx, const convt *c, const lt_tensor *w, lt_tensor **out) {
    int64_t dims[LT_MAX_RANK], Cig = c->Cin / c->G, taps = 1;
    dims[0] = c->G * c->R * c->Cog;
    dims[1] = Cig;
    for (int i = 0; i < c->d; i++) {
        dims[2 + i] = c->ax[i].M;
        taps *= c->ax[i].M;
    }
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, LT_FLOAT, c->d + 2, dims, &t));
    float *dst = t->data;
    const float *src = w->data;
    int64_t wtaps = 1;
    for (int i = 0; i < c->d; i++) wtaps *= c->ax[i].k;
    for (int64_t oc = 0; oc < dims[0]; oc++) {
        int64_t co = oc % c->Cog, rl = (oc / c->Cog) % c->R, gi = oc / (c->Cog * c->R);
        int64_t r[LT_MAX_RANK];
        for (int i = c->d - 1; i >= 0; i--) {
            r[i] = rl % c->ax[i].s;
            rl /= c->ax[i].s;
        }
        for (int64_t ci = 0; ci < Cig; ci++)
            for (int64_t tl = 0; tl < taps; tl++) {
                int64_t rem = tl, kl = 0;
                bool inside = true;
                int64_t kk[LT_MAX_RANK];
                for (int i = c->d - 1; i >= 0; i--) {
                    int64_t ti = rem % c->ax[i].M;
                    rem /= c->ax[i].M;
                    kk[i] = r[i] + c->ax[i].s * (c->ax[i].M - 1 - ti);
                    inside &= kk[i] < c->ax[i].k;
                }
                for (int i = 0; i < c->d && inside; i++) kl = kl * c->ax[i].k + kk[i];
                dst[(oc * Cig + ci) * taps + tl] = inside ? src[((gi * Cig + ci) * c->Cog + co) * wtaps + kl] : 0.0f;
            }
    }
    *out = t;
    return LT_OK;
}

/* B' [(G, r..., Cog)] from B [G*Cog]. */
static lt_status phase_bias(lt_ctx *ctx, const convt *c, const lt_tensor *b, lt_tensor **out) {
    int64_t n = c->G * c->R * c->Cog;
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, LT_FLOAT, 1, &n, &t));
    for (int64_t oc = 0; oc < n; oc++)
        ((float *)t->data)[oc] = ((const float *)b->data)[(oc / (c->Cog * c->R)) * c->Cog + oc % c->Cog];
    *out = t;
    return LT_OK;
}

static lt_status iconst(lt_ctx *ctx, lt_graph *g, const char *hint, int n, const int64_t *vals, lt_value **out) {
    lt_tensor *t;
    LT_TRY(lt_pu_tensor_i64(ctx, n, vals, &t));
    return lt_value_new_const(ctx, g, hint, t, out);
}

/* The phase Conv: X, W', B' -> [N, G*R*Cog, Q...]. */
static lt_status phase_conv(lt_ctx *ctx, lt_graph *g, lt_node *n, const convt *c, lt_value *wv, lt_value *bv,
                            const char *hint, lt_value **out) {
    lt_value *in[3] = {n->in[0], wv, bv};
    lt_node *cv;
    LT_TRY(lt_node_new(ctx, g, "Conv", "", bv ? 3 : 2, in, 1, hint, n, &cv));
    int64_t ks[LT_MAX_RANK], pads[2 * LT_MAX_RANK];
    for (int i = 0; i < c->d; i++) {
        ks[i] = c->ax[i].M;
        pads[i] = c->ax[i].pl;
        pads[c->d + i] = c->ax[i].pr;
    }
    LT_TRY(lt_node_set_attr_int(ctx, cv, "group", c->G));
    LT_TRY(lt_node_set_attr_ints(ctx, cv, "kernel_shape", c->d, ks));
    LT_TRY(lt_node_set_attr_ints(ctx, cv, "pads", 2 * c->d, pads));
    LT_TRY(lt_node_infer(ctx, cv));
    *out = cv->out[0];
    return LT_OK;
}

/* [N, G*R*Cog, Q...] -> [N, G*Cog, Q_1*s_1, ...]: the phases interleaved (depth-to-space). */
static lt_status interleave(lt_ctx *ctx, lt_graph *g, lt_node *n, const convt *c, const char *hint, lt_value **y) {
    int d = c->d;
    int64_t split[LT_MAX_RANK], perm[LT_MAX_RANK], merged[LT_MAX_RANK];
    split[0] = c->N;
    split[1] = c->G;
    for (int i = 0; i < d; i++) split[2 + i] = c->ax[i].s;
    split[2 + d] = c->Cog;
    for (int i = 0; i < d; i++) split[3 + d + i] = c->ax[i].Q;
    perm[0] = 0, perm[1] = 1, perm[2] = 2 + d;
    for (int i = 0; i < d; i++) {
        perm[3 + 2 * i] = 3 + d + i;
        perm[4 + 2 * i] = 2 + i;
    }
    merged[0] = c->N;
    merged[1] = c->G * c->Cog;
    for (int i = 0; i < d; i++) merged[2 + i] = c->ax[i].Q * c->ax[i].s;
    lt_value *shape, *t;
    LT_TRY(iconst(ctx, g, hint, 3 + 2 * d, split, &shape));
    lt_value *ri[2] = {*y, shape};
    LT_TRY(lt_pu_new_op(ctx, g, "Reshape", 2, ri, NULL, 0, hint, n, &t));
    lt_node *tr;
    LT_TRY(lt_node_new(ctx, g, "Transpose", "", 1, &t, 1, hint, n, &tr));
    LT_TRY(lt_node_set_attr_ints(ctx, tr, "perm", 3 + 2 * d, perm));
    LT_TRY(lt_node_infer(ctx, tr));
    LT_TRY(iconst(ctx, g, hint, 2 + d, merged, &shape));
    lt_value *mi[2] = {tr->out[0], shape};
    return lt_pu_new_op(ctx, g, "Reshape", 2, mi, NULL, 0, hint, n, y);
}

/* y[..., crop_i : crop_i + out_i] per spatial axis (nothing when that is all of y). */
static lt_status crop(lt_ctx *ctx, lt_graph *g, lt_node *n, const convt *c, const char *hint, lt_value **y) {
    int64_t st[LT_MAX_RANK], en[LT_MAX_RANK], axes[LT_MAX_RANK];
    bool whole = true;
    for (int i = 0; i < c->d; i++) {
        st[i] = c->ax[i].crop;
        en[i] = c->ax[i].crop + c->g.out[i];
        axes[i] = 2 + i;
        whole &= st[i] == 0 && en[i] == c->ax[i].Q * c->ax[i].s;
    }
    if (whole) return LT_OK;
    lt_value *in[4] = {*y, NULL, NULL, NULL};
    LT_TRY(iconst(ctx, g, hint, c->d, st, &in[1]));
    LT_TRY(iconst(ctx, g, hint, c->d, en, &in[2]));
    LT_TRY(iconst(ctx, g, hint, c->d, axes, &in[3]));
    return lt_pu_new_op(ctx, g, "Slice", 4, in, NULL, 0, hint, n, y);
}

/* The node's shapes and geometry, when the rewrite applies. */
static bool plan(const lt_node *n, convt *c, const lt_tensor **w, const lt_tensor **b) {
    int rank;
    int64_t xd[LT_MAX_RANK];
    *w = n->n_in > 1 && n->in[1] ? lt_value_const(n->in[1]) : NULL;
    *b = n->n_in > 2 && n->in[2] ? lt_value_const(n->in[2]) : NULL;
    if (!n->in[0] || !n->out[0] || !*w || (n->n_in > 2 && n->in[2] && !*b)) return false;
    if (!lt_value_static_shape(n->in[0], &rank, xd) || rank < 3 || (*w)->rank != rank) return false;
    if (n->in[0]->type.dtype != LT_FLOAT || (*w)->dtype != LT_FLOAT || (*b && (*b)->dtype != LT_FLOAT)) return false;
    c->d = rank - 2;
    c->N = xd[0];
    c->Cin = xd[1];
    c->G = lt_attr_int(n, "group", 1);
    c->Cog = (*w)->dims[1];
    if (c->G < 1 || c->Cin % c->G || (*w)->dims[0] != c->Cin || c->N < 1 || c->Cog < 1) return false;
    if (*b && ((*b)->rank != 1 || (*b)->dims[0] != c->G * c->Cog)) return false;
    char err[256];
    if (!lt_convt_geometry(n, c->d, xd + 2, (*w)->dims + 2, &c->g, err, sizeof err)) return false;
    int64_t wsize, sm; /* the new weight: Cin * Cog * prod(s * M) */
    if (!lt_mul_i64(c->Cin, c->Cog, &wsize)) return false;
    c->R = 1;
    for (int i = 0; i < c->d; i++) {
        if (c->g.d[i] != 1 || c->g.in[i] < 1 || c->g.out[i] < 1 || c->g.s[i] < 1 || c->g.k[i] < 1) return false;
        if (c->g.s[i] > MAX_WEIGHT || c->g.pad_begin[i] > MAX_WEIGHT || c->g.pad_begin[i] < -MAX_WEIGHT ||
            c->g.out[i] > MAX_WEIGHT)
            return false;
        plan_axis(&c->g, i, &c->ax[i]);
        if (!lt_mul_i64(c->R, c->ax[i].s, &c->R) || !lt_mul_i64(c->ax[i].s, c->ax[i].M, &sm) ||
            !lt_mul_i64(wsize, sm, &wsize) || wsize > MAX_WEIGHT || c->ax[i].Q > MAX_WEIGHT)
            return false;
    }
    return true;
}

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    convt c;
    const lt_tensor *w, *b;
    if (!plan(n, &c, &w, &b)) return LT_OK;
    char hint[96];
    snprintf(hint, sizeof hint, "%s_phase", n->out[0]->name);
    lt_tensor *wt, *bt = NULL;
    lt_value *wv, *bv = NULL, *y;
    LT_TRY(phase_weight(ctx, &c, w, &wt));
    LT_TRY(lt_value_new_const(ctx, g, hint, wt, &wv));
    if (b) {
        LT_TRY(phase_bias(ctx, &c, b, &bt));
        LT_TRY(lt_value_new_const(ctx, g, hint, bt, &bv));
    }
    LT_TRY(phase_conv(ctx, g, n, &c, wv, bv, hint, &y));
    if (c.R > 1) LT_TRY(interleave(ctx, g, n, &c, hint, &y));
    LT_TRY(crop(ctx, g, n, &c, hint, &y));
    lt_pu_take_name(g, y, n->out[0]);
    return lt_pu_forward(ctx, g, n, 0, y, changed);
}

static bool is_convt(const lt_node *n) { return n->op == LT_OP_ConvTranspose; }

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_convt, rewrite, changed);
}

const lt_pass lt_pass_convt_phases = {.name = "convt_phases", .min_level = 1, .run = run,
    .summary = "ConvTranspose with constant weights -> one phase Conv and a depth-to-space (compiled)"};
