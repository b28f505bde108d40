/* test_plan_device.c — device plans (src/runtime/plan_device.c) on the CPU, with no GPU: a test
 * backend "testdev" wraps the CPU backend (same C kernels) but declares that its memory is not host
 * memory. Its allocations are mmap'ed PROT_NONE and opened only inside its own copy and launch calls,
 * so any host access of device memory by the runtime crashes the test. It counts copies per
 * direction (bytes and calls), allocations, launches, syncs, and records graphs (launch lists
 * replayed with the argument values captured: a plan that changed an argument after capture would
 * compute garbage).
 * Checks, per model (host steps between kernels: NonZero, Hardmax, ReduceSum on a dynamic shape, a
 * Loop reading a kernel output from its body; and models with no host step, with packed weights and
 * scratch): outputs equal the interpreter's on random data (1e-4), through lt_plan_run and
 * lt_plan_run_buffers, over several runs; a run allocates no device memory; its copies are exactly
 * the kernel-read inputs and host-written values read by kernels (host->device) and the
 * kernel-written values host steps read plus the kernel-written outputs (device->host); a plan
 * without host steps replays one graph, makes no other launch and syncs once; no_graphs launches the
 * kernels one by one.
 * Runs from the source root (tests/data). Exits non-zero on failure. */
#include "compile/compile.h"
#include "compile/family.h"
#include "interp/interp.h"
#include "onnx/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "test_models.h"

/* ---- the test backend ---- */

typedef struct counts {
    int64_t h2d_bytes, d2h_bytes;
    int h2d, d2h, allocs, launches, graph_launches, syncs, graph_updates, graph_instantiations;
} counts;
static counts C;

enum { MAX_REC = 4096 };

typedef struct rec_launch {
    const lt_bkernel *k;
    int n;
    void *args[64];
} rec_launch;
typedef struct tgraph {
    int n;
    rec_launch *l;
} tgraph;
static tgraph *capturing;

#define TD_ON_ALLOC() (C.allocs++)
#include "test_devbackend.h"

static lt_status td_copy(lt_backend *b, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir) {
    (void)b;
    (void)ctx;
    if (capturing) abort(); /* copies are never captured */
    open_all(PROT_READ | PROT_WRITE);
    memcpy(dst, src, bytes);
    open_all(PROT_NONE);
    if (dir == LT_COPY_HOST_TO_DEVICE) C.h2d++, C.h2d_bytes += (int64_t)bytes;
    if (dir == LT_COPY_DEVICE_TO_HOST) C.d2h++, C.d2h_bytes += (int64_t)bytes;
    return LT_OK;
}
static lt_status run_kernel(lt_backend *b, lt_ctx *ctx, const lt_bkernel *k, void *const *args, int n) {
    open_all(PROT_READ | PROT_WRITE);
    lt_status s = lt_backend_cpu.launch(cpu_of(b), ctx, k, args, n);
    open_all(PROT_NONE);
    return s;
}
static lt_status td_launch(lt_backend *b, lt_ctx *ctx, const lt_bkernel *k, void *const *args, int n) {
    if (capturing) {
        if (n > 64 || capturing->n >= MAX_REC) return lt_error(ctx, LT_ERR_UNSUPPORTED, "testdev: graph too big");
        rec_launch *r = &capturing->l[capturing->n++];
        r->k = k;
        r->n = n;
        memcpy(r->args, args, sizeof(void *) * (size_t)n);
        return LT_OK;
    }
    C.launches++;
    return run_kernel(b, ctx, k, args, n);
}
static lt_status td_sync(lt_backend *b, lt_ctx *ctx) {
    (void)b;
    (void)ctx;
    C.syncs++;
    return LT_OK;
}
static lt_status td_ceilings(lt_backend *b, lt_ctx *ctx, lt_backend_ceilings *out) {
    return lt_backend_cpu.ceilings(cpu_of(b), ctx, out);
}
static lt_status td_graph_begin(lt_backend *b, lt_ctx *ctx) {
    (void)b;
    capturing = calloc(1, sizeof *capturing);
    if (capturing) capturing->l = calloc(MAX_REC, sizeof *capturing->l);
    return capturing && capturing->l ? LT_OK : lt_error(ctx, LT_ERR_NOMEM, "testdev graph");
}
static lt_status td_graph_end(lt_backend *b, lt_ctx *ctx, bool instantiate, void **g) {
    (void)b;
    (void)ctx;
    (void)instantiate; /* a template and an instantiated graph are the same list here */
    *g = capturing;
    capturing = NULL;
    return LT_OK;
}
static lt_status td_graph_launch(lt_backend *b, lt_ctx *ctx, void *g) {
    tgraph *t = g;
    C.graph_launches++;
    for (int i = 0; i < t->n; i++) LT_TRY(run_kernel(b, ctx, t->l[i].k, t->l[i].args, t->l[i].n));
    return LT_OK;
}
/* a holder is a copy of the template it was loaded with; an update copies another template of as
 * many launches (the real driver also refuses other topologies) */
static lt_status td_graph_replay(lt_backend *b, lt_ctx *ctx, void **holder, void *g, bool load, lt_graph_replay *how) {
    tgraph *t = g, *h = *holder;
    *how = LT_GRAPH_REPLAYED;
    if (h && load) {
        if (h->n == t->n) {
            memcpy(h->l, t->l, sizeof *t->l * (size_t)t->n);
            *how = LT_GRAPH_UPDATED;
            C.graph_updates++;
        } else {
            free(h->l);
            free(h);
            *holder = h = NULL;
        }
    }
    if (!h) {
        h = calloc(1, sizeof *h);
        if (h) h->l = calloc(MAX_REC, sizeof *h->l);
        if (!h || !h->l) {
            free(h);
            return lt_error(ctx, LT_ERR_NOMEM, "testdev graph");
        }
        h->n = t->n;
        memcpy(h->l, t->l, sizeof *t->l * (size_t)t->n);
        *holder = h;
        *how = LT_GRAPH_INSTANTIATED;
        C.graph_instantiations++;
    }
    return td_graph_launch(b, ctx, h);
}
static void td_graph_free(lt_backend *b, void *g) {
    (void)b;
    tgraph *t = g;
    if (t) free(t->l);
    free(t);
}

/* events: launches run synchronously here, so the wall clock at record time is the device time */
static lt_status td_event_new(lt_backend *b, lt_ctx *ctx, void **e) {
    (void)b;
    *e = calloc(1, sizeof(double));
    return *e ? LT_OK : lt_error(ctx, LT_ERR_NOMEM, "testdev event");
}
static lt_status td_event_record(lt_backend *b, lt_ctx *ctx, void *e) {
    (void)b;
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)e = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    return LT_OK;
}
static lt_status td_event_elapsed(lt_backend *b, lt_ctx *ctx, void *a, void *e, double *s) {
    (void)b;
    (void)ctx;
    *s = *(double *)e - *(double *)a;
    return LT_OK;
}
static void td_event_free(lt_backend *b, void *e) {
    (void)b;
    free(e);
}

static const lt_backend_vtbl tdev_vt = {
    .name = "testdev", .lang = &lt_lang_c, .host_memory = false,
    .create = td_create, .destroy = td_destroy, .compile = td_compile, .module_free = td_module_free,
    .load = td_load, .alloc = td_alloc, .free = td_free, .copy = td_copy, .launch = td_launch,
    .sync = td_sync, .ceilings = td_ceilings, .copy_async = td_copy,
    .graph_begin = td_graph_begin, .graph_end = td_graph_end, .graph_launch = td_graph_launch,
    .graph_replay = td_graph_replay,
    .graph_free = td_graph_free, .event_new = td_event_new, .event_record = td_event_record,
    .event_elapsed = td_event_elapsed, .event_free = td_event_free,
};

/* ---- models, inputs, references ---- */

static uint64_t rng = 0x2545F4914F6CDD1Dull; /* the random inputs' sequence (test_models.h) */

static bool close_tensor(const lt_tensor *x, const lt_tensor *y) {
    if (x->dtype != y->dtype || x->rank != y->rank || x->numel != y->numel) return false;
    for (int k = 0; k < x->rank; k++)
        if (x->dims[k] != y->dims[k]) return false;
    for (int64_t i = 0; i < x->numel; i++) {
        double p = lt_load_f64(x->data, x->dtype, i), q = lt_load_f64(y->data, y->dtype, i);
        if (!(fabs(p - q) <= 1e-4 * (1 + fabs(q)) || (isnan(p) && isnan(q)))) return false;
    }
    return true;
}

static lt_datum **reference(const lt_model *m, lt_datum **in) {
    lt_ctx ctx = {0};
    lt_datum **out = calloc((size_t)m->graph->n_outputs + 1, sizeof *out);
    if (!out || lt_interp_run(&ctx, m, NULL, in, out) != LT_OK) {
        fprintf(stderr, "interpreter: %s\n", ctx.msg);
        failures++;
    }
    return out;
}

/* ---- expected copies of one run, from the public plan ---- */

static bool reads(const lt_plan_step *st, int sl) {
    if (st->kind == LT_STEP_KERNEL) {
        for (int j = st->group->n_outputs; j < st->n_args; j++)
            if (st->arg_slots[j] == sl) return true;
        return false;
    }
    for (int k = 0; k < st->n_in; k++)
        if (st->in_slots[k] == sl) return true;
    return false;
}

/* Host->device: inputs kernels read, and static values host steps write that kernels read.
 * Device->host: kernel-written values host steps read, and kernel-written outputs not read by one. */
static void expected_copies(const lt_plan *p, int64_t *h2d, int64_t *d2h, int *n_h2d, int *n_d2h) {
    *h2d = *d2h = 0;
    *n_h2d = *n_d2h = 0;
    int ns = lt_plan_n_steps(p);
    for (int sl = 0; sl < lt_plan_n_slots(p); sl++) {
        const lt_plan_slot *S = lt_plan_get_slot(p, sl);
        bool by_kernel_read = false, by_host_read = false;
        for (int i = 0; i < ns; i++) {
            const lt_plan_step *st = lt_plan_get_step(p, i);
            if (!reads(st, sl)) continue;
            if (st->kind == LT_STEP_KERNEL) by_kernel_read = true;
            else by_host_read = true;
        }
        bool host_written = S->def_step >= 0 && lt_plan_get_step(p, S->def_step)->kind == LT_STEP_HOST;
        bool kernel_written = S->def_step >= 0 && !host_written;
        if ((S->kind == LT_SLOT_INPUT || (host_written && S->kind != LT_SLOT_DYNAMIC)) && by_kernel_read)
            *h2d += S->bytes, ++*n_h2d;
        if (kernel_written && !S->scratch && S->kind != LT_SLOT_PACKED && (by_host_read || S->kind == LT_SLOT_OUTPUT))
            *d2h += S->bytes, ++*n_d2h;
    }
}

/* ---- one model ---- */

static void check_model(const char *path, bool no_graphs, const char *cache) {
    lt_model *ref = test_load_model(path), *m = test_load_model(path);
    if (!ref || !m) { lt_model_free(ref); lt_model_free(m); return; }
    int no = m->graph->n_outputs, ni = m->graph->n_inputs;
    lt_compile_options o;
    lt_compile_options_init(&o);
    o.no_split = true; /* the host steps of data-dependent ops and what follows are what is tested */
    o.backend = "testdev";
    o.cache_dir = cache;
    o.no_graphs = no_graphs;
    lt_ctx ctx = {0};
    lt_plan *p = NULL;
    lt_compile_report rep = {0};
    memset(&C, 0, sizeof C);
    if (lt_compile(&ctx, m, &o, &p, &rep) != LT_OK) {
        fprintf(stderr, "%s: compile on testdev: %s\n", path, ctx.msg);
        failures++;
        lt_compile_report_free(&rep);
        lt_model_free(ref);
        lt_model_free(m);
        return;
    }
    lt_plan_stats st;
    lt_plan_get_stats(p, &st);
    CHECK(st.device);
    int64_t want_h2d, want_d2h;
    int want_nh2d, want_nd2h;
    expected_copies(p, &want_h2d, &want_d2h, &want_nh2d, &want_nd2h);
    int launching = 0;
    for (int i = 0; i < lt_plan_n_steps(p); i++)
        launching += lt_plan_get_step(p, i)->kind == LT_STEP_KERNEL && !lt_plan_get_step(p, i)->view;
    printf("%s%s: %d steps (%d host), %d segments, %d graphs; per run %d+%d copies, %lld+%lld bytes; "
           "constants %lld bytes on the device\n", path, no_graphs ? " (no graphs)" : "", st.n_steps, st.n_host,
           st.n_segments, st.n_graphs, want_nh2d, want_nd2h, (long long)want_h2d, (long long)want_d2h,
           (long long)st.device_const_bytes);
    CHECK(st.n_transfers == want_nh2d + want_nd2h);
    CHECK(no_graphs ? st.n_graphs == 0 : st.n_graphs == st.n_segments);
    for (int r = 0; r < 3; r++) {
        lt_datum **in = test_random_inputs(ref, &rng, true);
        lt_datum **want = reference(ref, in);
        lt_datum **got = calloc((size_t)no + 1, sizeof *got);
        lt_ctx c2 = {0};
        memset(&C, 0, sizeof C);
        double dev_s = -1;
        lt_plan_run_options ro = {.device_seconds = &dev_s};
        if (lt_plan_run(&c2, p, &ro, in, got) != LT_OK) {
            fprintf(stderr, "%s: run %d: %s\n", path, r, c2.msg);
            failures++;
        } else {
            for (int k = 0; k < no; k++)
                if (!got[k] || !want[k] || got[k]->kind != LT_DK_TENSOR || !close_tensor(got[k]->tensor, want[k]->tensor)) {
                    fprintf(stderr, "%s: run %d: output %d '%s' differs from the interpreter\n", path, r, k,
                            m->graph->outputs[k]->name);
                    failures++;
                }
            CHECK(C.allocs == 0);
            CHECK(C.h2d_bytes == want_h2d && C.d2h_bytes == want_d2h);
            CHECK(C.h2d == want_nh2d && C.d2h == want_nd2h);
            CHECK(dev_s >= 0);
            if (st.n_host == 0) CHECK(C.syncs == 1); /* the run's one sync */
            if (no_graphs) CHECK(C.launches == launching && C.graph_launches == 0);
            else CHECK(C.launches == 0 && C.graph_launches == st.n_graphs);
            if (C.h2d_bytes != want_h2d || C.d2h_bytes != want_d2h)
                fprintf(stderr, "  copies: %d h2d %lld bytes, %d d2h %lld bytes\n", C.h2d, (long long)C.h2d_bytes, C.d2h,
                        (long long)C.d2h_bytes);
        }
        /* caller memory */
        bool all_static = true;
        for (int k = 0; k < no; k++) all_static &= lt_plan_output_bytes(p, k) >= 0;
        if (all_static && r == 0) {
            void **ob = calloc((size_t)no + 1, sizeof *ob);
            const void **ib = calloc((size_t)ni + 1, sizeof *ib);
            for (int i = 0; i < ni; i++) ib[i] = in[i] ? in[i]->tensor->data : NULL;
            for (int k = 0; k < no; k++) ob[k] = calloc(1, (size_t)lt_plan_output_bytes(p, k) + 1);
            lt_ctx c3 = {0};
            memset(&C, 0, sizeof C);
            CHECK(lt_plan_run_buffers(&c3, p, NULL, ib, ob) == LT_OK);
            CHECK(C.allocs == 0 && C.h2d_bytes == want_h2d && C.d2h_bytes == want_d2h);
            for (int k = 0; k < no; k++) {
                const lt_tensor *w = want[k]->tensor;
                lt_tensor *t = NULL;
                if (lt_tensor_borrow(&c3, w->dtype, w->rank, w->dims, ob[k], &t) == LT_OK && !close_tensor(t, w)) {
                    fprintf(stderr, "%s: buffers: output %d differs from the interpreter\n", path, k);
                    failures++;
                }
                lt_tensor_release(t);
                free(ob[k]);
            }
            free(ob);
            free(ib);
        }
        test_free_datums(got, no);
        test_free_datums(want, no);
        test_free_datums(in, ni);
    }
    /* step times through the plan (no graphs while timing steps) */
    double *secs = calloc((size_t)lt_plan_n_steps(p) + 1, sizeof *secs);
    lt_datum **in = test_random_inputs(ref, &rng, true), **got = calloc((size_t)no + 1, sizeof *got);
    lt_plan_run_options ro = {.step_seconds = secs};
    memset(&C, 0, sizeof C);
    CHECK(lt_plan_run(&ctx, p, &ro, in, got) == LT_OK);
    CHECK(C.graph_launches == 0 && C.launches == launching);
    free(secs);
    test_free_datums(got, no);
    test_free_datums(in, ni);
    lt_plan_free(p);
    lt_compile_report_free(&rep);
    lt_model_free(ref);
    lt_model_free(m);
}

/* ---- plans sharing their graphs (a family's plans of one bucket) ---- */

static lt_plan_graph_slot shared_slots[8];
static lt_plan_graph_slot *shared_slot(void *user, int segment) {
    (void)user;
    return segment < 8 ? &shared_slots[segment] : NULL;
}

/* Two plans of one model on one backend, their segments replayed through shared slots of `capacity`
 * graphs: with one, each run of the other plan updates the slot's graph to its own arguments (its
 * buffers); with two, each plan keeps its own; outputs stay the interpreter's either way. */
static void check_shared_graphs(const char *path, const char *cache, int capacity) {
    lt_model *ref = test_load_model(path), *m[2] = {test_load_model(path), test_load_model(path)};
    lt_plan *p[2] = {NULL, NULL};
    lt_ctx ctx = {0};
    memset(shared_slots, 0, sizeof shared_slots);
    for (int k = 0; k < 8; k++) shared_slots[k].capacity = capacity;
    for (int i = 0; i < 2 && ref && m[i]; i++) {
        lt_compile_options o;
        lt_compile_options_init(&o);
        o.no_split = true;
        o.backend = "testdev";
        o.cache_dir = cache;
        lt_plan_device_share share = {.graph_slot = shared_slot};
        o.device_share = &share;
        if (lt_compile(&ctx, m[i], &o, &p[i], NULL) != LT_OK) {
            fprintf(stderr, "%s: shared graphs: %s\n", path, ctx.msg);
            failures++;
        }
    }
    int no = ref ? ref->graph->n_outputs : 0, ni = ref ? ref->graph->n_inputs : 0, segs = 0;
    if (p[0] && p[1]) {
        lt_plan_stats st;
        lt_plan_get_stats(p[0], &st);
        segs = st.n_graphs;
        CHECK(segs >= 1 && segs <= 8);
        static const int order[] = {0, 1, 1, 0, 1};
        for (int r = 0; r < 5; r++) {
            lt_datum **in = test_random_inputs(ref, &rng, true), **want = reference(ref, in);
            lt_datum **got = calloc((size_t)no + 1, sizeof *got);
            memset(&C, 0, sizeof C);
            CHECK(lt_plan_run(&ctx, p[order[r]], NULL, in, got) == LT_OK);
            for (int k = 0; k < no; k++)
                if (!got[k] || !want[k] || !close_tensor(got[k]->tensor, want[k]->tensor)) {
                    fprintf(stderr, "%s: shared graphs, run %d (plan %d): output %d differs\n", path, r, order[r], k);
                    failures++;
                }
            /* the first run instantiates; a run of the other plan updates; the same plan replays */
            CHECK(C.graph_launches == segs && C.launches == 0);
            bool first_of_plan = r == 0 || (r == 1 && order[1] != order[0]);
            bool switched = r > 0 && order[r] != order[r - 1];
            CHECK(C.graph_instantiations == (r == 0 || (capacity > 1 && first_of_plan) ? segs : 0));
            CHECK(C.graph_updates == (capacity == 1 && switched ? segs : 0));
            test_free_datums(got, no);
            test_free_datums(want, no);
            test_free_datums(in, ni);
        }
        int inst = 0, upd = 0;
        for (int k = 0; k < segs; k++) inst += shared_slots[k].instantiated, upd += shared_slots[k].updated;
        CHECK(capacity == 1 ? inst == segs && upd == 3 * segs : inst == 2 * segs && upd == 0);
        printf("%s: two plans, %d segment%s sharing %d graph%s each: instantiated %d, updated %d\n", path, segs,
               segs == 1 ? "" : "s", capacity, capacity == 1 ? "" : "s", inst, upd);
    }
    for (int i = 0; i < 2; i++) lt_plan_free(p[i]);
    for (int k = 0; k < 8; k++)
        for (int j = 0; j < LT_GRAPH_SLOT_MAX; j++)
            if (shared_slots[k].exec[j]) td_graph_free(NULL, shared_slots[k].exec[j]);
    for (int i = 0; i < 2; i++) lt_model_free(m[i]);
    lt_model_free(ref);
}

/* ---- a model compiled for every shape on the device ---- */

static lt_status load_sym(void *user, lt_ctx *ctx, lt_model **out) {
    return lt_onnx_load_file(ctx, (const char *)user, NULL, out);
}

static int live_allocations(void) {
    int n = 0;
    for (int i = 0; i < TD_MAX_ALLOCS; i++) n += allocs[i].p != NULL;
    return n;
}

/* dev_sym.onnx (a symbolic batch, three weights) at batches 2, 3, 5, 3 through one family: each
 * output equals the interpreter's; the plans hold one device copy of the weights (the second and
 * third plans take the first's buffers), share a few graphs per segment, and the family frees every
 * device allocation. */
static void check_family(const char *cache) {
    const char *path = "tests/data/dev_sym.onnx";
    lt_model *sym = test_load_model(path);
    if (!sym) return;
    int before = live_allocations();
    lt_family_options fo = {.model = sym, .load = load_sym, .load_user = (void *)path};
    lt_compile_options_init(&fo.compile);
    fo.compile.backend = "testdev";
    fo.compile.cache_dir = cache;
    lt_ctx ctx = {0};
    lt_family *f = NULL;
    if (lt_family_new(&ctx, &fo, &f) != LT_OK) {
        fprintf(stderr, "dev_sym: family: %s\n", ctx.msg);
        failures++;
        lt_model_free(sym);
        return;
    }
    static const int64_t batches[] = {2, 3, 5, 3};
    int64_t first_const_bytes = -1;
    for (int r = 0; r < 4; r++) {
        int64_t dims[2] = {batches[r], 16};
        const int64_t *dp[1] = {dims};
        int rank = 2;
        lt_plan *p = NULL;
        lt_tensor *t = NULL;
        lt_datum *in[1] = {NULL}, *got[1] = {NULL};
        CHECK(lt_family_plan(&ctx, f, 1, &rank, dp, &p) == LT_OK && p);
        CHECK(lt_tensor_new(&ctx, LT_FLOAT, 2, dims, &t) == LT_OK && lt_datum_tensor(&ctx, t, &in[0]) == LT_OK);
        for (int64_t e = 0; t && e < t->numel; e++) ((float *)t->data)[e] = (float)test_frand(&rng);
        lt_datum **want = reference(sym, in);
        if (p && in[0] && lt_plan_run(&ctx, p, NULL, in, got) == LT_OK) {
            if (!got[0] || !want[0] || !close_tensor(got[0]->tensor, want[0]->tensor)) {
                fprintf(stderr, "dev_sym: batch %lld differs from the interpreter\n", (long long)batches[r]);
                failures++;
            }
        } else {
            fprintf(stderr, "dev_sym: batch %lld: %s\n", (long long)batches[r], ctx.msg);
            failures++;
        }
        lt_family_stats fs;
        lt_family_get_stats(f, &fs);
        if (r == 0) first_const_bytes = fs.const_bytes;
        CHECK(fs.const_bytes == first_const_bytes); /* no second copy of a weight */
        test_free_datums(want, 1);
        lt_datum_release(in[0]);
        lt_datum_release(got[0]);
    }
    lt_family_stats fs;
    lt_family_get_stats(f, &fs);
    /* the three weights (MatMul B operands may be packed instead: then fewer are kernel constants) */
    CHECK(fs.const_bytes > 0 && fs.const_bytes <= (16 * 32 + 32 + 32 * 8) * 4);
    CHECK(fs.consts_shared >= 2); /* the plans at 3 and 5 took the first plan's */
    CHECK(fs.plans_built == 3 && fs.graphs == 3 && fs.graphs_instantiated == 3 && fs.graphs_updated == 0);
    printf("%s: 4 runs, 3 shapes through a family: %lld bytes of device constants (%d taken from an earlier plan), "
           "%d graphs\n", path, (long long)fs.const_bytes, fs.consts_shared, fs.graphs);
    lt_family_free(f);
    CHECK(live_allocations() == before);
    lt_model_free(sym);
}

int main(void) {
    if (system("cc --version >/dev/null 2>&1") != 0) {
        printf("test_plan_device: SKIP (no C compiler for the CPU kernels)\n");
        return 0;
    }
    page = (size_t)sysconf(_SC_PAGESIZE);
    lt_ctx ctx = {0};
    CHECK(lt_backend_register(&ctx, &tdev_vt) == LT_OK);
    CHECK(lt_backend_register(&ctx, &tdev_vt) == LT_OK); /* the same one again: fine */
    lt_backend_vtbl other = tdev_vt;
    lt_ctx uc = {0};
    CHECK(lt_backend_register(&uc, &other) == LT_ERR_USAGE && strstr(uc.msg, "already registered")); /* same name */
    CHECK(lt_backend_find("testdev") == &tdev_vt);
    char cache[512];
    snprintf(cache, sizeof cache, "%s/lathe-test-plan-device-%d", P_tmpdir, (int)getuid());
    static const char *const models[] = {"tests/data/dev_mix.onnx",   "tests/data/dev_loop.onnx",
                                         "tests/data/lower_host.onnx", "tests/data/lower_mlp.onnx",
                                         "tests/data/lower_conv.onnx", "tests/data/lower_attn.onnx", NULL};
    for (int i = 0; models[i]; i++) {
        check_model(models[i], false, cache);
        check_model(models[i], true, cache);
    }
    check_family(cache);
    for (int capacity = 1; capacity <= 2; capacity++) {
        check_shared_graphs("tests/data/lower_attn.onnx", cache, capacity);
        check_shared_graphs("tests/data/dev_mix.onnx", cache, capacity);
    }
    /* the models with host steps in the middle really cross both ways */
    lt_model *m = test_load_model("tests/data/dev_mix.onnx");
    lt_compile_options o;
    lt_compile_options_init(&o);
    o.no_split = true; /* the host steps of data-dependent ops and what follows are what is tested */
    o.backend = "testdev";
    o.cache_dir = cache;
    lt_plan *p = NULL;
    if (m && lt_compile(&ctx, m, &o, &p, NULL) == LT_OK) {
        int64_t h2d, d2h;
        int nh, nd;
        expected_copies(p, &h2d, &d2h, &nh, &nd);
        lt_plan_stats st;
        lt_plan_get_stats(p, &st);
        CHECK(nh >= 3 && nd >= 3 && st.n_host >= 3 && st.n_segments >= 3 && st.staging_bytes > 0);
    } else {
        fprintf(stderr, "dev_mix: %s\n", ctx.msg);
        failures++;
    }
    lt_plan_free(p);
    lt_model_free(m);
    if (failures) fprintf(stderr, "test_plan_device: %d failure(s)\n", failures);
    else printf("test_plan_device: ok\n");
    return failures ? 1 : 0;
}
