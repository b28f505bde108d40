/* test_load_limits.c — the decoder's configurable limits and the lifetime of its file mappings, which
 * no other unit test exercises (docs/AUDIT-IMPORT-INTERPRETER.md):
 *   - lt_load_options.max_bytes caps the model (memory and file) and every external-data file;
 *   - lt_load_options.max_depth is the nesting limit actually applied (exact boundary);
 *   - out-of-range options are usage errors, and the first error wins on the context;
 *   - external data is refused for a model loaded from memory without a folder;
 *   - lt_model_free unmaps the model file and its external-data files (checked in /proc/self/maps);
 *   - every allocation failure during a load with external data is an error, never a leak.
 * Files go to a fresh mkdtemp folder under /tmp, removed at the end. Exits non-zero on failure. */
#include "onnx/onnx.h"
#include "test_pb.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ValueInfoProto "name": float[4]. Depth below it: Type(+1) Tensor(+2) Shape(+3) Dimension(+4). */
static void w_value_info(pb *b, int field, const char *name) {
    pb dim = {0}, shape = {0}, tensor = {0}, type = {0}, v = {0};
    fv(&dim, 1, 4);
    fmsg(&shape, 1, &dim);
    fv(&tensor, 1, 1);
    fmsg(&tensor, 2, &shape);
    fmsg(&type, 1, &tensor);
    fs(&v, 1, name);
    fmsg(&v, 2, &type);
    fmsg(b, field, &v);
}

/* y = x + w, w a float[4] initializer: raw_data, or external data at `location` (offset 0). */
static pb model_bytes(const char *location) {
    pb node = {0}, init = {0}, graph = {0}, opset = {0}, model = {0};
    fs(&node, 1, "x");
    fs(&node, 1, "w");
    fs(&node, 2, "y");
    fs(&node, 3, "add");
    fs(&node, 4, "Add");
    fv(&init, 1, 4);
    fv(&init, 2, 1);
    fs(&init, 8, "w");
    if (location) {
        pb e1 = {0}, e2 = {0};
        fs(&e1, 1, "location");
        fs(&e1, 2, location);
        fmsg(&init, 13, &e1);
        fs(&e2, 1, "length");
        fs(&e2, 2, "16");
        fmsg(&init, 13, &e2);
        fv(&init, 14, 1);
    } else {
        const float w[4] = {1, 2, 3, 4};
        fbytes(&init, 9, w, sizeof w);
    }
    fmsg(&graph, 1, &node);
    fs(&graph, 2, "g");
    fmsg(&graph, 5, &init);
    w_value_info(&graph, 11, "x");
    w_value_info(&graph, 12, "y");
    fv(&model, 1, 8);
    fv(&opset, 2, 17);
    fmsg(&model, 8, &opset);
    fmsg(&model, 7, &graph);
    return model;
}

static char g_dir[64];

static void write_file(const char *name, const void *d, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "test_load_limits: cannot write %s\n", path);
        exit(2);
    }
}

/* Whether /proc/self/maps names a file whose path contains `needle` (-1 when unreadable). */
static int mapped(const char *needle) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) found = 1;
    fclose(f);
    return found;
}

static void test_max_bytes(void) {
    pb mb = model_bytes(NULL);
    lt_model *m = NULL;
    lt_ctx ctx = {0};
    CHECK(lt_onnx_load_memory(&ctx, mb.p, mb.n, NULL, NULL, &m) == LT_OK);
    lt_model_free(m);
    m = NULL;
    /* exactly the size passes, one byte less is refused */
    lt_load_options opt = {.max_bytes = (int64_t)mb.n};
    lt_ctx c1 = {0};
    CHECK(lt_onnx_load_memory(&c1, mb.p, mb.n, NULL, &opt, &m) == LT_OK);
    lt_model_free(m);
    m = NULL;
    opt.max_bytes = (int64_t)mb.n - 1;
    lt_ctx c2 = {0};
    CHECK(lt_onnx_load_memory(&c2, mb.p, mb.n, NULL, &opt, &m) == LT_ERR_INVALID && m == NULL);
    CHECK_MSG(c2, "exceeds the limit");
    /* the same for a file, whose name the message gives */
    write_file("small.onnx", mb.p, mb.n);
    char path[256];
    snprintf(path, sizeof path, "%s/small.onnx", g_dir);
    lt_ctx c3 = {0};
    CHECK(lt_onnx_load_file(&c3, path, &opt, &m) == LT_ERR_INVALID && m == NULL);
    CHECK_MSG(c3, "small.onnx");
    CHECK_MSG(c3, "exceeds the limit");
    free(mb.p);

    /* an external-data file larger than max_bytes is refused before it is mapped */
    pb me = model_bytes("big.bin");
    write_file("ext.onnx", me.p, me.n);
    static uint8_t big[8192];
    write_file("big.bin", big, sizeof big);
    snprintf(path, sizeof path, "%s/ext.onnx", g_dir);
    opt.max_bytes = 4096;
    CHECK((int64_t)me.n < opt.max_bytes);
    lt_ctx c4 = {0};
    CHECK(lt_onnx_load_file(&c4, path, &opt, &m) == LT_ERR_INVALID && m == NULL);
    CHECK_MSG(c4, "'w'");
    CHECK_MSG(c4, "big.bin");
    CHECK_MSG(c4, "exceed the limit");
    opt.max_bytes = 0; /* default */
    lt_ctx c5 = {0};
    CHECK(lt_onnx_load_file(&c5, path, &opt, &m) == LT_OK && m);
    if (m) {
        const lt_value *w = lt_graph_find_value(m->graph, "w");
        CHECK(w && w->init && w->init->numel == 4 && ((const float *)w->init->data)[3] == 0.0f);
        CHECK(mapped("/big.bin") <= 0); /* read into memory, not mapped: truncating it cannot SIGBUS the model */
        lt_model_free(m);
        m = NULL;
    }
    CHECK(mapped("/big.bin") <= 0);
    CHECK(mapped("/ext.onnx") <= 0);
    /* from memory there is no folder: external data is refused, naming the tensor */
    lt_ctx c6 = {0};
    CHECK(lt_onnx_load_memory(&c6, me.p, me.n, NULL, NULL, &m) == LT_ERR_INVALID && m == NULL);
    CHECK_MSG(c6, "'w'");
    CHECK_MSG(c6, "no model folder");
    free(me.p);
}

static void test_max_depth(void) {
    /* Deepest message: Model(0) > Graph(1) > ValueInfo(2) > Type(3) > Tensor(4) > Shape(5) > Dimension(6). */
    pb mb = model_bytes(NULL);
    lt_model *m = NULL;
    lt_load_options opt = {.max_depth = 6};
    lt_ctx c1 = {0};
    CHECK(lt_onnx_load_memory(&c1, mb.p, mb.n, NULL, &opt, &m) == LT_OK);
    lt_model_free(m);
    m = NULL;
    opt.max_depth = 5;
    lt_ctx c2 = {0};
    CHECK(lt_onnx_load_memory(&c2, mb.p, mb.n, NULL, &opt, &m) == LT_ERR_INVALID && m == NULL);
    CHECK_MSG(c2, "nested deeper than the limit of 5");
    CHECK_MSG(c2, "byte ");
    /* option range: usage errors, and the first error wins */
    opt.max_depth = 257;
    lt_ctx c3 = {0};
    CHECK(lt_onnx_load_memory(&c3, mb.p, mb.n, NULL, &opt, &m) == LT_ERR_USAGE && m == NULL);
    char first[LT_MSG_MAX];
    snprintf(first, sizeof first, "%s", c3.msg);
    opt = (lt_load_options){.max_bytes = -1};
    CHECK(lt_onnx_load_memory(&c3, mb.p, mb.n, NULL, &opt, &m) == LT_ERR_USAGE && m == NULL);
    CHECK(c3.status == LT_ERR_USAGE && strcmp(c3.msg, first) == 0);
    free(mb.p);
}

/* ---- allocation failures during a load with external data ---- */

static void test_alloc_failures_external(void) {
    pb me = model_bytes("w.bin");
    write_file("alloc.onnx", me.p, me.n);
    free(me.p);
    const float w[4] = {5, 6, 7, 8};
    write_file("w.bin", w, sizeof w);
    char path[256];
    snprintf(path, sizeof path, "%s/alloc.onnx", g_dir);
    lt_set_allocator(&g_test_alloc);
    long ok_at = -1;
    for (long k = 0; k < 10000 && ok_at < 0; k++) {
        g_fail_at = k;
        g_calls = 0;
        g_live = 0;
        lt_ctx ctx = {0};
        lt_model *m = NULL;
        lt_status st = lt_onnx_load_file(&ctx, path, NULL, &m);
        if (st == LT_OK) {
            const lt_value *v = lt_graph_find_value(m->graph, "w");
            CHECK(v && v->init && ((const float *)v->init->data)[2] == 7.0f);
            lt_model_free(m);
            ok_at = k;
        } else {
            CHECK(m == NULL && ctx.status != LT_OK && ctx.msg[0]);
        }
        CHECK(g_live == 0);
        if (g_live) fprintf(stderr, "  (%ld blocks left after failing allocation %ld)\n", g_live, k);
    }
    lt_set_allocator(NULL);
    CHECK(ok_at > 0);
    CHECK(mapped("/w.bin") <= 0);
}

static void cleanup(void) {
    static const char *const names[] = {"small.onnx", "ext.onnx", "big.bin", "alloc.onnx", "w.bin"};
    char path[256];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    rmdir(g_dir);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/lathe-load-limits-XXXXXX");
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "test_load_limits: mkdtemp failed\n");
        return 2;
    }
    test_max_bytes();
    test_max_depth();
    test_alloc_failures_external();
    cleanup();
    return test_report("test_load_limits");
}
