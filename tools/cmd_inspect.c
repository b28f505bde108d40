/* cmd_inspect.c — `lathe inspect MODEL`: what a model is made of (IR version, producer, opsets,
 * inputs and outputs with their types, node count, op histogram, initializers) and every op lathe
 * cannot run, all at once. Exits 0 even when ops are unsupported (it reports them), 2 on a bad model.
 * Everything the model names is printed escaped (cli_esc): a name cannot drive the terminal.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "ops/infer.h"

static const char HELP[] =
    "usage: lathe inspect MODEL [options]\n"
    "\n"
    "Describe an ONNX model: IR version, producer, opsets, inputs and outputs (symbolic dims by\n"
    "name), node count, op histogram, initializers, and every unsupported op.\n"
    "\n"
    "options:\n"
    "  --shapes NAME:DIMS[,NAME:DIMS]  fix input shapes, e.g. --shapes data:1x3x224x224 (repeatable)\n"
    "  --dim NAME=N                    bind a symbolic dim everywhere, e.g. --dim batch=1 (repeatable)\n"
    "  --graph                         also print the graph, one node per line\n"
    "  -h, --help                      show this help\n"
    "\n"
    "Exit status: 0 (also when ops are unsupported: they are listed), 1 usage, 2 bad model.\n";

typedef struct op_count {
    char name[256];
    int count;
} op_count;

typedef struct stats {
    op_count *ops;
    int n_ops, cap_ops;
    int nodes, sub_nodes;
    int64_t init_count, init_bytes;
} stats;

static void count_graph(const lt_graph *g, stats *s, int depth) {
    for (int i = 0; i < g->n_values; i++) {
        const lt_value *v = g->values[i];
        if (v->init && !v->producer) {
            s->init_count++;
            s->init_bytes += lt_tensor_nbytes(v->init);
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        if (depth) s->sub_nodes++;
        else s->nodes++;
        char name[256];
        bool dom = n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0;
        snprintf(name, sizeof name, "%s%s%s", dom ? n->domain : "", dom ? ":" : "", n->op_type);
        int k = 0;
        while (k < s->n_ops && strcmp(s->ops[k].name, name) != 0) k++;
        if (k == s->n_ops) {
            if (s->n_ops == s->cap_ops) {
                int cap = s->cap_ops ? s->cap_ops * 2 : 32;
                op_count *nv = realloc(s->ops, (size_t)cap * sizeof *nv);
                if (!nv) continue;
                s->ops = nv;
                s->cap_ops = cap;
            }
            snprintf(s->ops[k].name, sizeof s->ops[k].name, "%s", name);
            s->ops[k].count = 0;
            s->n_ops++;
        }
        s->ops[k].count++;
        for (int a = 0; a < n->n_attr; a++) {
            const lt_attr *at = &n->attrs[a];
            if (at->type == LT_AT_GRAPH && at->g) count_graph(at->g, s, depth + 1);
            if (at->type == LT_AT_GRAPHS)
                for (int j = 0; j < at->n; j++)
                    if (at->graphs[j]) count_graph(at->graphs[j], s, depth + 1);
        }
    }
}

static int cmp_ops(const void *a, const void *b) {
    const op_count *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->name, y->name);
}

static void print_bytes(int64_t b) {
    if (b >= (int64_t)1 << 30) printf("%.2f GiB", (double)b / (double)((int64_t)1 << 30));
    else if (b >= 1 << 20) printf("%.2f MiB", (double)b / (double)(1 << 20));
    else if (b >= 1 << 10) printf("%.2f KiB", (double)b / 1024.0);
    else printf("%lld bytes", (long long)b);
}

int cmd_inspect(int argc, char **argv) {
    const char *model = NULL;
    const char **shapes = calloc((size_t)argc, sizeof *shapes), **dims = calloc((size_t)argc, sizeof *dims);
    int n_shapes = 0, n_dims = 0, rc = CLI_EXIT_OK;
    bool show_graph = false;
    if (!shapes || !dims) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(HELP, stdout); goto out; }
        if (strcmp(a, "--graph") == 0) { show_graph = true; i++; continue; }
        if ((r = cli_opt_value("inspect", argc, argv, &i, "--shapes", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            shapes[n_shapes++] = v;
        } else if ((r = cli_opt_value("inspect", argc, argv, &i, "--dim", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            dims[n_dims++] = v;
        } else if (a[0] == '-' && a[1]) {
            rc = cli_usage("inspect", "unknown option '%s'", a);
            goto out;
        } else if (model) {
            rc = cli_usage("inspect", "only one MODEL may be given ('%s' and '%s')", model, a);
            goto out;
        } else {
            model = a;
            i++;
        }
    }
    if (!model) { rc = cli_usage("inspect", "missing MODEL"); goto out; }
    lt_model *m = NULL;
    rc = cli_load_model(model, n_shapes, shapes, n_dims, dims, &m);
    if (rc) goto out;
    const lt_graph *g = m->graph;
    char tb[1024];
    printf("model: %s\n", cli_esc(model));
    printf("ir_version: %lld\n", (long long)m->ir_version);
    printf("producer: %s%s%s\n", m->producer_name && *m->producer_name ? cli_esc(m->producer_name) : "(none)",
           m->producer_version && *m->producer_version ? " " : "", m->producer_version ? cli_esc(m->producer_version) : "");
    printf("opsets:");
    for (int i = 0; i < m->n_opsets; i++)
        printf("%s %s %lld", i ? "," : "",
               m->opsets[i].domain && *m->opsets[i].domain ? cli_esc(m->opsets[i].domain) : "ai.onnx",
               (long long)m->opsets[i].version);
    printf("%s\n", m->n_opsets ? "" : " (none)");
    int n_free = 0, n_init_inputs = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        if (g->inputs[i]->init) n_init_inputs++;
        else n_free++;
    }
    printf("inputs (%d):\n", n_free);
    for (int i = 0; i < g->n_inputs; i++)
        if (!g->inputs[i]->init)
            printf("  %s: %s\n", cli_esc(g->inputs[i]->name), cli_esc(lt_type_str(&g->inputs[i]->type, tb, sizeof tb)));
    if (n_init_inputs) printf("  (%d more inputs have initializers and are optional)\n", n_init_inputs);
    printf("outputs (%d):\n", g->n_outputs);
    for (int i = 0; i < g->n_outputs; i++)
        printf("  %s: %s\n", cli_esc(g->outputs[i]->name), cli_esc(lt_type_str(&g->outputs[i]->type, tb, sizeof tb)));
    stats s = {0};
    count_graph(g, &s, 0);
    if (s.sub_nodes) printf("nodes: %d (+%d in subgraphs)\n", s.nodes, s.sub_nodes);
    else printf("nodes: %d\n", s.nodes);
    if (s.n_ops) qsort(s.ops, (size_t)s.n_ops, sizeof *s.ops, cmp_ops);
    printf("ops (%d kinds):\n", s.n_ops);
    for (int k = 0; k < s.n_ops; k++) printf("  %-28s %d\n", cli_esc(s.ops[k].name), s.ops[k].count);
    printf("initializers: %lld (", (long long)s.init_count);
    print_bytes(s.init_bytes);
    printf(")\n");
    free(s.ops);
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, m) == LT_OK) {
        printf("unsupported ops: none\n");
    } else if (ctx.status == LT_ERR_UNSUPPORTED) {
        cli_put_text(stdout, ctx.msg);
        putchar('\n');
    } else {
        rc = cli_fail(&ctx);
    }
    if (show_graph && rc == CLI_EXIT_OK) {
        lt_strbuf b = {0};
        lt_graph_print(g, &b);
        if (b.s) cli_put_text(stdout, b.s);
        lt_sb_free(&b);
    }
    lt_model_free(m);
out:
    free(shapes);
    free(dims);
    return rc;
}
