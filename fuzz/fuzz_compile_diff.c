/* fuzz_compile_diff.c — differential fuzzer of the whole compile pipeline against the interpreter.
 *
 * The seeds are onnx's node-test models (the folder named by LATHE_FUZZ_NODE_TESTS, e.g.
 * .../onnx/backend/test/data/node; read once at start-up). Each fuzz input picks one model and a
 * list of mutations, applied identically to two fresh copies of it:
 *   - input shapes: a dim or the rank changed (small sizes, 0 included), the data then random;
 *   - small integer inputs (shapes, axes, sizes, pads, indices) frozen into constants, so the
 *     compiler lowers the ops that read them, with one element sometimes replaced by an edge value;
 *   - INT / INTS attributes: one element replaced by an edge value (negative, 0, huge).
 * Copy A runs on the reference interpreter; copy B is compiled (graph passes, fusion, lowering,
 * default schedules, plan, memory plan) for the "loopir" backend, which runs every kernel through the
 * bounds-checked Loop IR evaluator. A finding (abort, so libFuzzer keeps the input) is:
 *   - a kernel that indexes outside a buffer (the evaluator's error "kernel ...");
 *   - an internal error;
 *   - the interpreter rejecting what the compiled plan runs, or the reverse;
 *   - outputs that differ (shape, dtype, or values beyond rtol 1e-2 / atol 1e-3 — the compiled path
 *     may sum in another order, and some node tests compute a variance as E[x^2] - E[x]^2).
 * A model that shape inference rejects after mutation is rejected identically by both paths (they
 * share inference), and counts as an execution that found nothing. Also built with the sanitizers,
 * so memory errors in the library itself (the interpreter included) are findings too.
 * Models with control flow or random ops are left out (their bodies and draws are not the subject).
 * Run: LATHE_FUZZ_NODE_TESTS=DIR fuzz_compile_diff -entropic=0 CORPUS (entropic scheduling spends most
 * of the time on bookkeeping with this many coverage features); LATHE_FUZZ_DEBUG=1 prints the
 * mutated inputs and the compile report of each input (to reproduce a finding).
 */
#include "compile/compile.h"
#include "ops/infer.h"
#include "interp/interp.h"
#include "io/io.h"
#include "onnx/onnx.h"
#include "onnx/onnx_writer.h"
#include "runtime/plan.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_IN = 16, MAX_ATTR_MUT = 3, MAX_SEED_NUMEL = 20000 };

typedef struct seed_model {
    char *name;
    uint8_t *bytes;
    size_t size;
    int n_in;
    lt_tensor *in[MAX_IN]; /* the test's input data (NULL: none for that input) */
} seed_model;

static seed_model *g_models;
static int g_n_models;

/* ---- start-up: the node tests ---- */

static bool read_all(const char *path, uint8_t **data, size_t *size) {
    lt_ctx ctx = {0};
    return lt_io_read_file(&ctx, path, data, size) == LT_OK;
}

static bool unwanted_op(const lt_graph *g) {
    static const char *const skip[] = {"Loop", "Scan", "If", "SequenceMap", "RandomNormal", "RandomUniform",
                                       "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial",
                                       "Dropout", NULL};
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; skip[k]; k++)
            if (strcmp(g->nodes[i]->op_type, skip[k]) == 0) return true;
    return false;
}

static void load_seed(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, name);
    seed_model sm = {0};
    if (!read_all(path, &sm.bytes, &sm.size)) return;
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    bool keep = lt_onnx_load_memory(&ctx, sm.bytes, sm.size, NULL, NULL, &m) == LT_OK && !unwanted_op(m->graph) &&
                m->graph->n_inputs <= MAX_IN;
    int64_t total = 0;
    for (int i = 0; keep && i < m->graph->n_inputs; i++) {
        const lt_value *v = m->graph->inputs[i];
        if (v->type.kind != LT_TK_TENSOR || v->type.dtype == LT_STRING) keep = false;
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", dir, name, i);
        uint8_t *pb;
        size_t n;
        if (!keep || !read_all(path, &pb, &n)) continue;
        keep = lt_onnx_decode_tensor(&ctx, pb, n, &sm.in[i], NULL) == LT_OK;
        free(pb);
        if (keep) total += sm.in[i]->numel;
    }
    if (m) sm.n_in = m->graph->n_inputs;
    lt_model_free(m);
    if (!keep || total > MAX_SEED_NUMEL) {
        for (int i = 0; i < MAX_IN; i++) lt_tensor_release(sm.in[i]);
        free(sm.bytes);
        return;
    }
    sm.name = strdup(name);
    seed_model *grown = realloc(g_models, sizeof *g_models * (size_t)(g_n_models + 1));
    if (!grown || !sm.name) abort();
    g_models = grown;
    g_models[g_n_models++] = sm;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A model may ask at run time for a tensor of any size (Tile or Expand with run-time repeats, a
 * Range with a huge limit): the interpreter allocates what the model asked for, which is right, but
 * then the input tells nothing and takes minutes or all the memory. Allocations past this fail, the
 * run ends with LT_ERR_NOMEM, and the input is skipped (as too_big skips static shapes). */
#define MAX_ONE_ALLOCATION ((size_t)16 << 20) /* too_big allows 2^20 elements of 8 bytes in all */
static void *capped_alloc(void *user, size_t size) {
    (void)user;
    return size > MAX_ONE_ALLOCATION ? NULL : malloc(size);
}
static void *capped_realloc(void *user, void *p, size_t size) {
    (void)user;
    return size > MAX_ONE_ALLOCATION ? NULL : realloc(p, size);
}
static void capped_free(void *user, void *p) {
    (void)user;
    free(p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    lt_set_allocator(&(lt_allocator){capped_alloc, capped_realloc, capped_free, NULL});
    const char *dir = getenv("LATHE_FUZZ_NODE_TESTS");
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) {
        fprintf(stderr, "fuzz_compile_diff: set LATHE_FUZZ_NODE_TESTS to onnx's backend/test/data/node folder\n");
        exit(2);
    }
    char **names = NULL;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "test_", 5) != 0) continue;
        char **g = realloc(names, sizeof *names * (size_t)(n + 1));
        if (!g) abort();
        names = g;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name); /* the same model numbering on every machine */
    for (int i = 0; i < n; i++) {
        load_seed(dir, names[i]);
        free(names[i]);
    }
    free(names);
    fprintf(stderr, "fuzz_compile_diff: %d seed models\n", g_n_models);
    if (!g_n_models) exit(2);
    return 0;
}

/* ---- the mutation plan, decoded from the fuzz input ---- */

typedef struct reader {
    const uint8_t *p;
    size_t n, i;
} reader;

static unsigned next8(reader *r) { return r->i < r->n ? r->p[r->i++] : 0; }
static unsigned next16(reader *r) { return next8(r) | next8(r) << 8; }

static const int64_t k_edge[] = {-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 1000, 65536, INT64_MAX, INT64_MIN,
                                 (int64_t)1 << 62};
static const int64_t k_dims[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 16};
#define COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

typedef struct input_mut {
    bool reshape, freeze, tweak;
    int rank;
    int64_t dims[6];
    unsigned tweak_at;
    int64_t tweak_val;
} input_mut;

typedef struct attr_mut {
    unsigned node, attr, elem;
    int64_t val;
} attr_mut;

typedef struct mutation {
    int model;
    uint64_t seed;
    input_mut in[MAX_IN];
    int n_attr;
    attr_mut attr[MAX_ATTR_MUT];
} mutation;

static void decode(reader *r, mutation *mu) {
    memset(mu, 0, sizeof *mu);
    mu->model = (int)(next16(r) % (unsigned)g_n_models);
    const seed_model *sm = &g_models[mu->model];
    mu->seed = next16(r) | (uint64_t)next16(r) << 16;
    for (int i = 0; i < sm->n_in; i++) {
        input_mut *im = &mu->in[i];
        unsigned b = next8(r);
        const lt_tensor *t = sm->in[i];
        im->reshape = t && (b & 3) == 0;
        if (im->reshape) {
            int rank = t->rank + (int)(next8(r) % 3) - 1;
            im->rank = rank < 0 ? 0 : rank > 6 ? 6 : rank;
            for (int k = 0; k < im->rank; k++) {
                unsigned c = next8(r);
                im->dims[k] = (c & 1) && k < t->rank ? t->dims[k] : k_dims[(c >> 1) % COUNT(k_dims)];
            }
        }
        im->freeze = t && lt_dtype_is_int(t->dtype) && t->rank <= 1 && t->numel <= 16 && !(b & 4);
        im->tweak = (b & 8) != 0;
        im->tweak_at = next8(r);
        im->tweak_val = k_edge[next8(r) % COUNT(k_edge)];
    }
    mu->n_attr = (int)(next8(r) % 8);
    if (mu->n_attr > MAX_ATTR_MUT) mu->n_attr = 0; /* most inputs mutate no attribute */
    for (int a = 0; a < mu->n_attr; a++)
        mu->attr[a] = (attr_mut){next8(r), next8(r), next8(r), k_edge[next8(r) % COUNT(k_edge)]};
}

/* ---- applying it ---- */

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* The data of one input under its mutation (new reference): the test's, or random in the new shape. */
/* v is a value of integer dtype dt (a wrapped -3 in a uint32 exponent is 2^32-3, whose parity
 * float32 cannot hold: a rounding question, not the compiler's) */
static bool fits(lt_dtype dt, int64_t v) {
    int bits = lt_dtype_size(dt) * 8;
    bool is_unsigned = lt_dtype_get(dt)->cls == LT_DC_UINT;
    if (bits >= 64) return !is_unsigned || v >= 0;
    int64_t lo = is_unsigned ? 0 : -((int64_t)1 << (bits - 1));
    int64_t hi = is_unsigned ? ((int64_t)1 << bits) - 1 : ((int64_t)1 << (bits - 1)) - 1;
    return v >= lo && v <= hi;
}

static lt_status input_tensor(lt_ctx *ctx, const lt_tensor *src, const input_mut *im, uint64_t *rng,
                              lt_tensor **out) {
    lt_tensor *t;
    if (!im->reshape) LT_TRY(lt_tensor_copy(ctx, src, &t));
    else {
        LT_TRY(lt_tensor_new(ctx, src->dtype, im->rank, im->dims, &t));
        bool is_float = lt_dtype_is_float(t->dtype);
        for (int64_t e = 0; e < t->numel && t->dtype != LT_STRING; e++) {
            uint64_t v = rng_next(rng);
            /* floats mostly positive, so sums rarely cancel (log of a sum near 0 is ill-conditioned) */
            double x = is_float ? (0.1 + (double)(v % 2001) / 1000.0) * ((v >> 20) % 8 ? 1 : -1)
                                : (double)(int64_t)(v % 12) - (lt_dtype_get(t->dtype)->cls == LT_DC_UINT ? 0 : 3);
            if (t->dtype == LT_BOOL) x = (double)(v & 1);
            lt_store_f64(t->data, t->dtype, e, x);
        }
    }
    if (im->tweak && lt_dtype_is_int(t->dtype) && t->numel > 0 && fits(t->dtype, im->tweak_val)) {
        int64_t at = (int64_t)(im->tweak_at % (uint64_t)t->numel);
        if (t->dtype == LT_INT64) ((int64_t *)t->data)[at] = im->tweak_val;
        else lt_store_f64(t->data, t->dtype, at, (double)im->tweak_val);
    }
    *out = t;
    return LT_OK;
}

static lt_status set_dims(lt_ctx *ctx, lt_model *m, lt_value *v, const lt_tensor *t) {
    lt_dim *d = t->rank ? lt_arena_alloc(&m->arena, sizeof *d * (size_t)t->rank) : NULL;
    if (t->rank && !d) return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
    for (int k = 0; k < t->rank; k++) d[k] = (lt_dim){t->dims[k], NULL};
    v->type.rank = t->rank;
    v->type.dims = d;
    return LT_OK;
}

/* Apply mu to a fresh copy m: input types (frozen inputs get the data as initializer), attributes,
 * and every computed value's shape forgotten, then shape inference. ins[i]: the data of input i. */
static lt_status apply(lt_ctx *ctx, lt_model *m, const mutation *mu, lt_tensor *const *ins) {
    lt_graph *g = m->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        lt_value *v = g->inputs[i];
        if (!ins[i]) continue;
        LT_TRY(set_dims(ctx, m, v, ins[i]));
        if (mu->in[i].freeze && !v->init) {
            if (!lt_vec_push(&m->owned_tensors, lt_tensor_retain(ins[i]))) {
                lt_tensor_release(ins[i]);
                return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
            }
            v->init = ins[i];
        }
    }
    for (int a = 0; a < mu->n_attr; a++) {
        const attr_mut *am = &mu->attr[a];
        if (!g->n_nodes) break;
        lt_node *n = g->nodes[am->node % (unsigned)g->n_nodes];
        if (!n->n_attr) continue;
        lt_attr *at = &n->attrs[am->attr % (unsigned)n->n_attr];
        if (at->type == LT_AT_INT) at->i = am->val;
        else if (at->type == LT_AT_INTS && at->n > 0) at->ints[am->elem % (unsigned)at->n] = am->val;
    }
    for (int i = 0; i < g->n_values; i++) {
        lt_value *v = g->values[i];
        if (v->producer && v->type.kind == LT_TK_TENSOR) v->type.rank = -1, v->type.dims = NULL;
    }
    return lt_graph_infer(ctx, m);
}

/* Mutated attributes can ask for huge tensors (pads of 1000 on four axes), which the evaluator
 * would take minutes over: inputs to skip, not findings. */
static bool too_big(const lt_graph *g) {
    double total = 0;
    for (int i = 0; i < g->n_values; i++) {
        const lt_type *t = &g->values[i]->type;
        if (t->kind != LT_TK_TENSOR || t->rank < 0 || (t->rank && !t->dims)) continue;
        double n = 1;
        for (int k = 0; k < t->rank; k++) n *= t->dims[k].value < 0 ? 1 : (double)t->dims[k].value;
        total += n;
    }
    return total > (double)(1 << 20);
}

/* ---- comparing ---- */

static void finding(const mutation *mu, const char *what, const char *a, const char *b) {
    fprintf(stderr, "\nfuzz_compile_diff: FINDING on %s (seed %llu): %s\n  interp: %s\n  loopir: %s\n",
            g_models[mu->model].name, (unsigned long long)mu->seed, what, a, b);
    abort();
}

static bool close_enough(double a, double b, bool exact, double rtol, double atol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (exact || isinf(a) || isinf(b)) return a == b;
    /* loose: sums in another order amplify cancellation (a variance as E[x^2] - E[x]^2); wrong
     * indexing or semantics show as far larger errors */
    return fabs(a - b) <= atol + rtol * fabs(b);
}

/* The narrowest float type of any value in the graph: the compiled kernels compute float16 and
 * bfloat16 in float and round only where they store (or an explicit Cast asks), the interpreter
 * after every op, so the outputs of a graph with such values differ by a few of its roundings. */
static lt_dtype narrowest_float(const lt_graph *g) {
    lt_dtype r = LT_FLOAT;
    for (int i = 0; i < g->n_values; i++) {
        lt_dtype dt = g->values[i]->type.dtype;
        if (g->values[i]->type.kind != LT_TK_TENSOR) continue;
        if (dt == LT_BFLOAT16) return LT_BFLOAT16;
        if (dt == LT_FLOAT16) r = LT_FLOAT16;
    }
    return r;
}

static void compare(const mutation *mu, const lt_datum *a, const lt_datum *b, int k, lt_dtype narrow) {
    char why[256], da[128], db[128];
    if (!a || !b || a->kind != LT_DK_TENSOR || b->kind != LT_DK_TENSOR) {
        if (!a != !b) finding(mu, "one path produced no output", a ? "output" : "none", b ? "output" : "none");
        return;
    }
    const lt_tensor *x = a->tensor, *y = b->tensor;
    bool same = x->dtype == y->dtype && x->rank == y->rank;
    for (int d = 0; same && d < x->rank; d++) same = x->dims[d] == y->dims[d];
    if (!same) {
        snprintf(why, sizeof why, "output %d: different dtype or shape", k);
        finding(mu, why, lt_datum_describe(a, da, sizeof da), lt_datum_describe(b, db, sizeof db));
    }
    if (x->dtype == LT_STRING) return;
    bool exact = !lt_dtype_is_float(x->dtype);
    double rtol = narrow == LT_BFLOAT16 ? 4e-2 : 1e-2, atol = narrow == LT_FLOAT ? 1e-3 : 1e-2;
    for (int64_t e = 0; e < x->numel; e++) {
        double p = lt_load_f64(x->data, x->dtype, e), q = lt_load_f64(y->data, y->dtype, e);
        if (close_enough(p, q, exact, rtol, atol)) continue;
        snprintf(why, sizeof why, "output %d element %lld differs", k, (long long)e);
        snprintf(da, sizeof da, "%.9g", p);
        snprintf(db, sizeof db, "%.9g", q);
        finding(mu, why, da, db);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size, 0};
    mutation mu;
    decode(&r, &mu);
    const seed_model *sm = &g_models[mu.model];
    lt_ctx ca = {0}, cb = {0};
    lt_model *ma = NULL, *mb = NULL;
    lt_tensor *ins[MAX_IN] = {0};
    lt_datum *din[MAX_IN + 1] = {0}, *dplan[MAX_IN + 1] = {0}, *oa[64] = {0}, *ob[64] = {0};
    lt_plan *plan = NULL;
    uint64_t rng = mu.seed | 1;
    bool debug = getenv("LATHE_FUZZ_DEBUG") != NULL;
    if (debug) fprintf(stderr, "model %s (seed %llu)\n", sm->name, (unsigned long long)mu.seed);
    if (lt_onnx_load_memory(&ca, sm->bytes, sm->size, NULL, NULL, &ma) != LT_OK ||
        lt_onnx_load_memory(&cb, sm->bytes, sm->size, NULL, NULL, &mb) != LT_OK)
        abort(); /* loaded once already */
    int n_out = ma->graph->n_outputs;
    if (n_out > 64) goto done;
    for (int i = 0; i < sm->n_in; i++)
        if (sm->in[i] && input_tensor(&ca, sm->in[i], &mu.in[i], &rng, &ins[i]) != LT_OK) goto done;
    lt_status sa = apply(&ca, ma, &mu, ins);
    lt_status sb = apply(&cb, mb, &mu, ins);
    if (sa != sb || (sa && strcmp(ca.msg, cb.msg)))
        finding(&mu, "shape inference differs between two copies", ca.msg, cb.msg);
    if (sa != LT_OK) goto done; /* rejected before either path runs: the same message on both */
    const char *save = debug ? getenv("LATHE_FUZZ_SAVE") : NULL; /* the mutated model, frozen inputs as constants */
    if (save && lt_onnx_write_model_file(&cb, mb, save) != LT_OK) fprintf(stderr, "LATHE_FUZZ_SAVE: %s\n", cb.msg);
    if (too_big(ma->graph)) goto done;

    const char *given[MAX_IN + 1];
    int ng = 0;
    for (int i = 0; i < sm->n_in; i++) {
        if (ins[i] && lt_datum_tensor(&ca, lt_tensor_retain(ins[i]), &din[i]) != LT_OK) goto done;
        if (ins[i] && !mu.in[i].freeze) {
            dplan[i] = lt_datum_retain(din[i]);
            given[ng++] = mb->graph->inputs[i]->name;
        }
    }
    given[ng] = NULL;
    lt_interp_options io = {.seed = mu.seed};
    sa = lt_interp_run(&ca, ma, &io, din, oa);

    lt_compile_options co;
    lt_compile_options_init(&co);
    co.backend = "loopir";
    co.given_inputs = given;
    lt_compile_report rep = {0};
    if (debug) { /* reproducing a finding: what runs (before the compile, which may be what fails) */
        for (int i = 0; i < sm->n_in; i++) {
            char d[128];
            fprintf(stderr, "input %d: %s freeze %d\n", i, ins[i] ? lt_datum_describe(din[i], d, sizeof d) : "-", mu.in[i].freeze);
        }
    }
    sb = lt_compile(&cb, mb, &co, &plan, &rep);
    if (debug) { /* how it compiled */
        lt_strbuf rs = {0};
        lt_compile_report_print(&rep, &rs);
        fprintf(stderr, "%s\n", rs.s ? rs.s : "");
        lt_sb_free(&rs);
    }
    lt_compile_report_free(&rep);
    if (sb == LT_OK) {
        lt_plan_run_options ro = {.seed = mu.seed};
        sb = lt_plan_run(&cb, plan, &ro, dplan, ob);
    }
    if (sb == LT_ERR_INTERNAL || (sb != LT_OK && strncmp(cb.msg, "kernel ", 7) == 0))
        finding(&mu, "the compiled plan failed inside a kernel or the compiler", sa ? ca.msg : "ok", cb.msg);
    if (sa == LT_ERR_NOMEM || sb == LT_ERR_NOMEM) goto done;
    if ((sa == LT_OK) != (sb == LT_OK))
        finding(&mu, "one path rejected what the other ran", sa ? ca.msg : "ok", sb ? cb.msg : "ok");
    if (sa == LT_OK)
        for (int k = 0; k < n_out; k++) compare(&mu, oa[k], ob[k], k, narrowest_float(ma->graph));
done:
    for (int k = 0; k < 64; k++) lt_datum_release(oa[k]), lt_datum_release(ob[k]);
    for (int i = 0; i <= MAX_IN; i++) lt_datum_release(din[i]), lt_datum_release(dplan[i]);
    for (int i = 0; i < MAX_IN; i++) lt_tensor_release(ins[i]);
    lt_plan_free(plan);
    lt_model_free(ma);
    lt_model_free(mb);
    return 0;
}
