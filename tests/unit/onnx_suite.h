/* onnx_suite.h — shared by the C unit tests that walk the ONNX node-test suite: finding it (as
 * `lathe conformance` does: $LATHE_ONNX_SUITE, else the onnx Python package of $LATHE_PYTHON or
 * python3), listing its test folders in sorted order, and loading one test's model with the input
 * shapes of its first data set bound (suite_load). Header-only (static functions). */
#ifndef ONNX_SUITE_H
#define ONNX_SUITE_H

#include "ops/infer.h"
#include "onnx/onnx.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static inline bool suite_is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The suite's folder into out; false when it is not there. */
static inline bool suite_find(char *out, size_t n) {
    const char *env = getenv("LATHE_ONNX_SUITE");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return suite_is_dir(out);
    }
    const char *py = getenv("LATHE_PYTHON");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' -c 'import onnx,os;print(os.path.dirname(onnx.__file__))' 2>/dev/null",
             py && *py ? py : "python3");
    FILE *f = popen(cmd, "r");
    if (!f) return false;
    char line[768] = "";
    bool got = fgets(line, sizeof line, f) != NULL;
    pclose(f);
    line[strcspn(line, "\r\n")] = 0;
    if (!got || !*line) return false;
    snprintf(out, n, "%s/backend/test/data/node", line);
    return suite_is_dir(out);
}

static inline int suite_cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The suite's test folders ("test_*"), sorted; *n gets their count. Free each and the array. */
static inline char **suite_list(const char *suite, int *n) {
    *n = 0;
    DIR *d = opendir(suite);
    if (!d) return NULL;
    char **names = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "test_", 5) != 0) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            char **nn = realloc(names, (size_t)cap * sizeof *names);
            if (!nn) break;
            names = nn;
        }
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (names) qsort(names, (size_t)*n, sizeof *names, suite_cmp_names);
    return names;
}

/* Load dir/model.onnx and bind each graph input without an initializer to the shape of its tensor
 * in test_data_set_0 (best effort). NULL when the model does not load or is not supported. */
static inline lt_model *suite_load(const char *dir) {
    char path[2304];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) return NULL;
    if (lt_model_check_supported(&ctx, m) != LT_OK) {
        lt_model_free(m);
        return NULL;
    }
    lt_graph *g = m->graph;
    int next = 0;
    for (int k = 0;; k++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
        FILE *f = fopen(path, "rb");
        if (!f) break;
        fclose(f);
        while (next < g->n_inputs && g->inputs[next]->init) next++;
        lt_datum *d = NULL;
        lt_ctx c = {0};
        if (next >= g->n_inputs || lt_onnx_read_datum_file(&c, path, &g->inputs[next]->type, &d) != LT_OK) break;
        if (d->kind == LT_DK_TENSOR && g->inputs[next]->type.kind == LT_TK_TENSOR)
            lt_model_bind_shape(&c, m, g->inputs[next]->name, d->tensor->rank, d->tensor->dims);
        lt_datum_release(d);
        next++;
    }
    return m;
}

#endif
