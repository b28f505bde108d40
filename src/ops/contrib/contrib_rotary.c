/* contrib_rotary.c — com.microsoft's RotaryEmbedding (the geometry and formula: contrib_rotary.h),
 * and ct_rotate, the rotation of one head vector that GroupQueryAttention's do_rotary shares. */
#include "contrib_impl.h"
#include "contrib_rotary.h"

static int64_t exact_div(int64_t a, int64_t b) { return a >= 0 && b > 0 && a % b == 0 ? a / b : -1; }

lt_status lt_rotary_geom(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *d, int pos_rank, const int64_t *pd,
                         const int64_t *cd, const int64_t *sd, lt_rotary *g) {
    int64_t heads = lt_attr_int(n, "num_heads", 0), rdim = lt_attr_int(n, "rotary_embedding_dim", 0);
    if (lt_attr_int(n, "is_packed_batching", 0))
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "is_packed_batching is not supported");
    if (heads < 0 || rdim < 0 || (rdim > 0 && heads == 0))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "num_heads must be given (> 0) with rotary_embedding_dim");
    int64_t inter = lt_attr_int(n, "interleaved", 0);
    if (inter != 0 && inter != 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "interleaved must be 0 or 1");
    g->interleaved = inter;
    if (rank != 3 && rank != 4)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "input must be (B, S, hidden) or (B, N, S, H), not of rank %d", rank);
    for (int k = 0; k < 2; k++)
        if (cd[k] >= 0 && sd[k] >= 0 && cd[k] != sd[k])
            return lt_node_error(ctx, n, LT_ERR_INVALID, "cos_cache and sin_cache have different shapes");
    g->max_pos = cd[0];
    g->bnsh = rank == 4;
    g->B = d[0];
    g->S = g->bnsh ? d[2] : d[1];
    if (g->bnsh) {
        g->N = d[1];
        g->H = d[3];
        if (heads > 0 && g->N >= 0 && heads != g->N)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "num_heads %lld differs from the input's %lld heads", (long long)heads,
                                 (long long)g->N);
    } else if (rdim == 0 && heads == 0) {
        g->H = cd[1] >= 0 ? 2 * cd[1] : -1;
        g->N = exact_div(d[2], g->H);
    } else {
        g->N = heads ? heads : -1;
        g->H = exact_div(d[2], heads ? heads : -1);
    }
    if (!g->bnsh && d[2] >= 0 && g->H >= 0 && (g->H == 0 || d[2] % g->H))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "hidden size %lld is not a multiple of the head size %lld",
                             (long long)d[2], (long long)g->H);
    if (!g->bnsh && d[2] >= 0 && heads > 0 && d[2] % heads)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "hidden size %lld is not a multiple of num_heads %lld", (long long)d[2],
                             (long long)heads);
    g->R = rdim > 0 ? rdim : g->H;
    if (g->R >= 0 && (g->R % 2 || (g->H >= 0 && g->R > g->H) || g->R == 0))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "rotary dim %lld must be even, > 0 and <= the head size %lld",
                             (long long)g->R, (long long)g->H);
    if (g->R >= 0 && cd[1] >= 0 && cd[1] != g->R / 2)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "the caches' second dim %lld is not rotary dim / 2 = %lld",
                             (long long)cd[1], (long long)(g->R / 2));
    if (pos_rank == 1 && (pd[0] == 1 || pd[0] < 0)) g->per_token = false;
    else if (pos_rank == 2) {
        g->per_token = true;
        if ((pd[0] >= 0 && g->B >= 0 && pd[0] != g->B) || (pd[1] >= 0 && g->S >= 0 && pd[1] != g->S))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "position_ids must be (1) or (batch, sequence)");
    } else
        return lt_node_error(ctx, n, LT_ERR_INVALID, "position_ids must be (1) or (batch, sequence)");
    return LT_OK;
}

void ct_rotate(const double *x, double *y, int64_t H, int64_t R, const double *c, const double *s, bool interleaved) {
    int64_t h = R / 2;
    for (int64_t j = 0; j < h; j++) {
        int64_t i0 = interleaved ? 2 * j : j, i1 = interleaved ? 2 * j + 1 : j + h;
        y[i0] = x[i0] * c[j] - x[i1] * s[j];
        y[i1] = x[i1] * c[j] + x[i0] * s[j];
    }
    for (int64_t j = R; j < H; j++) y[j] = x[j];
}

static lt_status check(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *x = &in[0], *pos = &in[1], *cs = &in[2], *sn = &in[3];
    LT_TRY(ct_want_float(ctx, n, x, LT_UNDEFINED, "input"));
    if (pos->dt != LT_INT64 && pos->dt != LT_UNDEFINED) return lt_node_error(ctx, n, LT_ERR_INVALID, "position_ids must be int64");
    LT_TRY(ct_want_float(ctx, n, cs, x->dt, "cos_cache"));
    LT_TRY(ct_want_float(ctx, n, sn, x->dt, "sin_cache"));
    LT_TRY(ct_want_rank(ctx, n, cs, 2, "cos_cache"));
    LT_TRY(ct_want_rank(ctx, n, sn, 2, "sin_cache"));
    lt_rotary g;
    LT_TRY(lt_rotary_geom(ctx, n, x->rank, x->d, pos->rank, pos->d, cs->d, sn->d, &g));
    LT_TRY(ct_check_positions(ctx, n, pos->c, g.per_token ? 0 : g.S, g.max_pos));
    ct_out_like(&out[0], x, x->dt);
    return LT_OK;
}

lt_status ct_check_positions(lt_ctx *ctx, const lt_node *n, const lt_tensor *pos, int64_t span, int64_t max_pos) {
    if (!pos || max_pos < 0) return LT_OK;
    for (int64_t i = 0; i < pos->numel; i++) {
        int64_t p = lt_load_i64(pos->data, pos->dtype, i), last = p + (span > 0 ? span - 1 : 0);
        if (p < 0 || last >= max_pos)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "position %lld is outside the caches' %lld positions",
                                 (long long)(p < 0 ? p : last), (long long)max_pos);
    }
    return LT_OK;
}

static lt_status compute(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *x = &in[0], *pos = &in[1];
    lt_rotary g;
    LT_TRY(lt_rotary_geom(ev->ctx, n, x->rank, x->d, pos->rank, pos->d, in[2].d, in[3].d, &g));
    int64_t h = g.R / 2;
    for (int64_t b = 0; b < g.B; b++)
        for (int64_t s = 0; s < g.S; s++) {
            double pv = g.per_token ? pos->v[b * g.S + s] : pos->v[0] + (double)s;
            if (!(pv >= 0 && pv < (double)g.max_pos))
                return lt_op_error(ev, n, LT_ERR_INVALID, "position %.0f is outside the caches' %lld positions", pv,
                                   (long long)g.max_pos);
            int64_t p = (int64_t)pv;
            for (int64_t hd = 0; hd < g.N; hd++) {
                int64_t off = g.bnsh ? ((b * g.N + hd) * g.S + s) * g.H : ((b * g.S + s) * g.N + hd) * g.H;
                ct_rotate(x->v + off, out[0].v + off, g.H, g.R, in[2].v + p * h, in[3].v + p * h, g.interleaved);
            }
        }
    return LT_OK;
}

const ct_op ct_ops_rotary[] = {
    {LT_OP_MsRotaryEmbedding, 4, 4, check, compute},
    {0, 0, 0, NULL, NULL},
};
