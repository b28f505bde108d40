/* memplan.c — static memory planning: offsets of a plan's intermediate buffers in ONE workspace.
 *
 * Input: buffers with a size and a live range [def, last] over the step order (plan.h lt_mp_buf).
 * 1. In-place: a buffer may take over the memory of the buffer named by inplace_of when that one
 *    dies at the step that writes it (last == def) and is at least as large; each buffer is taken
 *    over at most once. Granted pairs are merged (union-find) into one "region" whose live range is
 *    the union of theirs and whose size is the largest member's.
 * 2. Regions are placed greedily by size, largest first (ties: earlier def): among the regions
 *    already placed whose live ranges intersect this one, the free gaps between them (sorted by
 *    offset) are candidates; the smallest gap that fits wins (best fit), else the region goes on top
 *    of the highest conflicting one. Offsets are multiples of LT_MEMPLAN_ALIGN.
 * The result reports the workspace peak, the naive sum (one allocation per buffer) and the lower
 * bound (the most bytes live at one step). lt_memplan_verify re-checks a placement independently.
 * Everything is O(n^2) in the number of buffers (thousands at most), with no recursion.
 */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

static int64_t align_up(int64_t v) { return (v + LT_MEMPLAN_ALIGN - 1) / LT_MEMPLAN_ALIGN * LT_MEMPLAN_ALIGN; }

static int uf_find(int *parent, int i) {
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

typedef struct region {
    int root;          /* union-find root buffer */
    int def, last;
    int64_t bytes;     /* aligned */
    int64_t offset;
    bool placed;
} region;

static int cmp_region_size(const void *a, const void *b) {
    const region *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->def != y->def) return x->def < y->def ? -1 : 1;
    return x->root < y->root ? -1 : x->root > y->root;
}

typedef struct span {
    int64_t lo, hi;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->hi < y->hi ? -1 : x->hi > y->hi);
}

static bool overlaps(int d1, int l1, int d2, int l2) { return d1 <= l2 && d2 <= l1; }

static lt_status check_bufs(lt_ctx *ctx, const lt_mp_buf *bufs, int n) {
    for (int i = 0; i < n; i++) {
        const lt_mp_buf *b = &bufs[i];
        if (b->bytes < 0 || b->bytes > ((int64_t)1 << 50))
            return lt_error(ctx, LT_ERR_INVALID, "memory plan: buffer %d has a bad size %lld", i, (long long)b->bytes);
        if (b->def > b->last || b->def < -1)
            return lt_error(ctx, LT_ERR_INVALID, "memory plan: buffer %d has a bad live range [%d, %d]", i, b->def,
                            b->last);
        if (b->inplace_of >= n || b->inplace_of < -1 || b->inplace_of == i)
            return lt_error(ctx, LT_ERR_INVALID, "memory plan: buffer %d: in-place source %d is not another buffer", i,
                            b->inplace_of);
    }
    return LT_OK;
}

lt_status lt_memplan(lt_ctx *ctx, lt_mp_buf *bufs, int n, lt_mp_result *out) {
    LT_TRY(check_bufs(ctx, bufs, n));
    lt_mp_result res = {0};
    if (n == 0) {
        *out = res;
        return LT_OK;
    }
    int *parent = lt_calloc(ctx, (size_t)n, sizeof *parent, "memory plan");
    bool *taken = lt_calloc(ctx, (size_t)n, sizeof *taken, "memory plan");
    region *regs = lt_calloc(ctx, (size_t)n, sizeof *regs, "memory plan");
    int *reg_of = lt_calloc(ctx, (size_t)n, sizeof *reg_of, "memory plan");
    span *spans = lt_calloc(ctx, (size_t)n + 1, sizeof *spans, "memory plan");
    lt_status s = LT_OK;
    if (!parent || !taken || !regs || !reg_of || !spans) { s = LT_ERR_NOMEM; goto done; }

    for (int i = 0; i < n; i++) {
        parent[i] = i;
        bufs[i].inplace = false;
        bufs[i].offset = 0;
        if (!lt_add_i64(res.sum_bytes, align_up(bufs[i].bytes), &res.sum_bytes)) {
            s = lt_error(ctx, LT_ERR_NOMEM, "memory plan: total size overflows");
            goto done;
        }
    }
    /* 1. in-place merges, in order of the consumer's definition (a chain merges front to back) */
    for (int i = 0; i < n; i++) {
        int a = bufs[i].inplace_of;
        if (a < 0 || taken[a]) continue;
        if (bufs[a].last != bufs[i].def || bufs[a].bytes < bufs[i].bytes || bufs[a].def >= bufs[i].def) continue;
        int ra = uf_find(parent, a), ri = uf_find(parent, i);
        if (ra == ri) continue;
        /* The merged region never needs the memory twice at once: a was defined strictly before i and
         * dies at i's def, so every earlier member of a's chain died before; every later member of
         * i's chain is defined strictly after i. Members meet only at hand-over steps. */
        parent[ri] = ra;
        taken[a] = true;
        bufs[i].inplace = true;
        res.n_inplace++;
    }
    /* regions */
    int nr = 0;
    for (int i = 0; i < n; i++) reg_of[i] = -1;
    for (int i = 0; i < n; i++) {
        int r = uf_find(parent, i);
        if (reg_of[r] < 0) {
            reg_of[r] = nr;
            regs[nr] = (region){.root = r, .def = bufs[i].def, .last = bufs[i].last, .bytes = 0};
            nr++;
        }
        region *g = &regs[reg_of[r]];
        if (bufs[i].def < g->def) g->def = bufs[i].def;
        if (bufs[i].last > g->last) g->last = bufs[i].last;
        int64_t b = align_up(bufs[i].bytes);
        if (b > g->bytes) g->bytes = b;
    }
    qsort(regs, (size_t)nr, sizeof *regs, cmp_region_size);
    /* 2. greedy by size, best fit among conflicting regions */
    for (int r = 0; r < nr; r++) {
        region *g = &regs[r];
        g->placed = true;
        if (g->bytes == 0) { g->offset = 0; continue; }
        int ns = 0;
        for (int q = 0; q < r; q++)
            if (regs[q].bytes > 0 && overlaps(g->def, g->last, regs[q].def, regs[q].last))
                spans[ns++] = (span){regs[q].offset, regs[q].offset + regs[q].bytes};
        qsort(spans, (size_t)ns, sizeof *spans, cmp_span);
        int64_t cursor = 0, best = -1, best_gap = 0;
        for (int k = 0; k < ns; k++) {
            if (spans[k].lo > cursor) {
                int64_t gap = spans[k].lo - cursor;
                if (gap >= g->bytes && (best < 0 || gap < best_gap)) { best = cursor; best_gap = gap; }
            }
            if (spans[k].hi > cursor) cursor = spans[k].hi;
        }
        g->offset = best >= 0 ? best : cursor;
        int64_t end;
        if (!lt_add_i64(g->offset, g->bytes, &end)) {
            s = lt_error(ctx, LT_ERR_NOMEM, "memory plan: workspace size overflows");
            goto done;
        }
        if (end > res.workspace_bytes) res.workspace_bytes = end;
    }
    /* offsets back to buffers (reg_of was indexed by root before sorting: rebuild) */
    for (int r = 0; r < nr; r++) reg_of[regs[r].root] = r;
    for (int i = 0; i < n; i++) bufs[i].offset = regs[reg_of[uf_find(parent, i)]].offset;
    /* lower bound: bytes live at each region's first step (the maximum is reached at some def) */
    for (int r = 0; r < nr; r++) {
        int64_t live = 0;
        for (int q = 0; q < nr; q++)
            if (regs[q].def <= regs[r].def && regs[r].def <= regs[q].last) live += regs[q].bytes;
        if (live > res.lower_bound) res.lower_bound = live;
    }
    *out = res;
done:
    lt_mem_free(parent);
    lt_mem_free(taken);
    lt_mem_free(regs);
    lt_mem_free(reg_of);
    lt_mem_free(spans);
    return s;
}

lt_status lt_memplan_verify(lt_ctx *ctx, const lt_mp_buf *bufs, int n, int64_t workspace_bytes) {
    LT_TRY(check_bufs(ctx, bufs, n));
    int *parent = lt_calloc(ctx, (size_t)(n ? n : 1), sizeof *parent, "memory plan check");
    if (!parent) return LT_ERR_NOMEM;
    for (int i = 0; i < n; i++) parent[i] = i;
    for (int i = 0; i < n; i++)
        if (bufs[i].inplace) {
            int a = bufs[i].inplace_of;
            if (a < 0 || bufs[a].offset != bufs[i].offset || bufs[a].last != bufs[i].def || bufs[a].bytes < bufs[i].bytes ||
                bufs[a].def >= bufs[i].def) {
                lt_mem_free(parent);
                return lt_error(ctx, LT_ERR_INTERNAL, "memory plan: buffer %d was granted an illegal in-place reuse of %d",
                                i, a);
            }
            parent[uf_find(parent, i)] = uf_find(parent, a);
        }
    lt_status s = LT_OK;
    for (int i = 0; i < n && s == LT_OK; i++) {
        const lt_mp_buf *a = &bufs[i];
        if (a->bytes == 0) continue;
        if (a->offset < 0 || a->offset % LT_MEMPLAN_ALIGN || a->offset + a->bytes > workspace_bytes) {
            s = lt_error(ctx, LT_ERR_INTERNAL, "memory plan: buffer %d at [%lld, %lld) is misaligned or outside the %lld-byte workspace",
                         i, (long long)a->offset, (long long)(a->offset + a->bytes), (long long)workspace_bytes);
            break;
        }
        for (int j = i + 1; j < n; j++) {
            const lt_mp_buf *b = &bufs[j];
            if (b->bytes == 0 || !overlaps(a->def, a->last, b->def, b->last)) continue;
            if (uf_find(parent, i) == uf_find(parent, j)) {
                /* same in-place region: only the hand-over step may be shared */
                if (a->last == b->def || b->last == a->def) continue;
            }
            if (a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes) {
                s = lt_error(ctx, LT_ERR_INTERNAL,
                             "memory plan: buffers %d [%lld, %lld) live [%d, %d] and %d [%lld, %lld) live [%d, %d] overlap",
                             i, (long long)a->offset, (long long)(a->offset + a->bytes), a->def, a->last, j,
                             (long long)b->offset, (long long)(b->offset + b->bytes), b->def, b->last);
                break;
            }
        }
    }
    lt_mem_free(parent);
    return s;
}
