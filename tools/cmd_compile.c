/* cmd_compile.c — `lathe compile MODEL`: compile a model for its bound shapes and print the compile
 * report (stage times, groups, kernels, host steps, cache hit, the memory plan: workspace peak next
 * to the sum of all intermediates); with -o DIR (--target c, the default) also export it as
 * standalone C (src/runtime/export.h): DIR/model.c, model.h, model_main.c and model.weights (or
 * weights embedded in model.c under 1 MiB). --print-plan lists the plan's steps and buffers.
 * --target cuda -o DIR writes the CUDA translation unit (DIR/model.cu, with the Loop IR and groups)
 * with no GPU needed, and DIR/model.cubin when NVRTC is found (--arch, default sm_90). DIR is created
 * with its missing parents (mkdir -p). Names and paths are printed escaped (cli_esc).
 * Exit codes: 0 ok, 1 usage, 2 bad model, 3 unsupported (backend, or host steps in an export).
 */
#include "cli_compile.h"

#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda.h"
#include "ops/infer.h"
#include "runtime/export.h"

static const char HELP[] =
    "usage: lathe compile MODEL [options]\n"
    "\n"
    "Compile an ONNX model (every input shape must be known: declared, or bound with --shapes/--dim)\n"
    "and print the compile report. With -o DIR, also write it as standalone C that builds with\n"
    "`cc -O2 model.c model_main.c -lm` and needs no lathe library.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR      export into DIR (created, with missing parents, if missing)\n"
    "  --target c|cuda       what -o writes (c: model.c, model.h, model_main.c, model.weights; cuda:\n"
    "                        model.cu, kernels.txt, groups.txt and, when NVRTC is found, model.cubin;\n"
    "                        needs no GPU)\n"
    "  --arch SM             --target cuda: the cubin's target (default sm_90)\n"
    "  --name NAME           C prefix and file stem of the export (default model)\n"
    "  --embed-limit BYTES   embed the weights in model.c when smaller (default 1048576; 0 never)\n"
    "  --shapes NAME:DIMS[,NAME:DIMS]  fix input shapes (repeatable)\n"
    "  --dim NAME=N          bind a symbolic dim everywhere (repeatable)\n"
    "  --backend NAME        backend to compile for (default cpu)\n"
    "  --print-plan          list the plan: steps, buffers and their workspace offsets\n"
    CLI_COMPILE_HELP
    "  -h, --help            show this help\n"
    "\n"
    "Exit status: 0 ok, 1 usage error, 2 bad model, 3 unsupported (an export with host steps).\n";

/* --target cuda: DIR/model.cu is written; compile it to DIR/model.cubin when NVRTC is here. */
static int write_cubin(const char *dir, const char *arch, const char *nvrtc, const lt_compile_report *rep) {
    char path[4096];
    cli_fmt(path, sizeof path, "%s/model.cu", dir);
    printf("cuda: %d kernels (+%d weight packing), %d host groups; wrote %s (%zu bytes), kernels.txt, groups.txt\n",
           rep->n_kernels, rep->n_pack_kernels, rep->n_host_groups, cli_esc(path), rep->source_bytes);
    lt_ctx ctx = {0};
    lt_nvrtc *nv = NULL;
    if (lt_nvrtc_open_path(&ctx, nvrtc, &nv) != LT_OK) {
        cli_warn("no cubin: %s", ctx.msg);
        return 0;
    }
    char *src = NULL;
    size_t len = 0;
    FILE *f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        src = n >= 0 ? malloc((size_t)n + 1) : NULL;
        len = src ? fread(src, 1, (size_t)n, f) : 0;
        if (src) src[len] = 0;
        fclose(f);
    }
    int rc = 0;
    lt_cuda_image img = {0};
    lt_cuda_compile_options co = {.name = "model.cu"};
    if (!src) {
        cli_error("%s: cannot read back", path);
        rc = CLI_EXIT_INVALID;
    } else if (lt_cuda_build(&ctx, nv, src, arch, NULL, &co, &img) != LT_OK) {
        rc = cli_fail(&ctx);
    } else {
        cli_fmt(path, sizeof path, "%s/model.%s", dir, img.is_cubin ? "cubin" : "ptx");
        FILE *o = fopen(path, "wb");
        if (!o || fwrite(img.data, 1, img.size, o) != img.size) {
            cli_error("%s: cannot write", path);
            rc = CLI_EXIT_INVALID;
        } else {
            printf("cuda: wrote %s (%zu bytes, %s, NVRTC %.2f s)\n", cli_esc(path), img.size, cli_esc(arch), img.seconds);
        }
        if (o) fclose(o);
    }
    lt_cuda_image_free(&img);
    free(src);
    lt_nvrtc_close(nv);
    return rc;
}

int cmd_compile(int argc, char **argv) {
    const char *model = NULL, *outdir = NULL, *target = "c", *name = NULL, *arch = "sm_90";
    const char **shapes = calloc((size_t)argc, sizeof *shapes), **dims = calloc((size_t)argc, sizeof *dims);
    int n_shapes = 0, n_dims = 0, rc = CLI_EXIT_OK;
    int64_t embed = -1;
    bool print_plan = false, have_rep = false;
    lt_model *m = NULL;
    lt_plan *plan = NULL;
    lt_compile_report rep = {0};
    cli_compile_args ca;
    cli_compile_init(&ca, "cpu");
    if (!shapes || !dims) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(HELP, stdout); goto out; }
        if (strcmp(a, "--print-plan") == 0) { print_plan = true; i++; continue; }
        r = cli_compile_opt("compile", argc, argv, &i, &ca);
        if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
        if (r > 0) continue;
        if ((r = cli_opt_value("compile", argc, argv, &i, "-o", &v)) ||
            (r = cli_opt_value("compile", argc, argv, &i, "--output", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            outdir = v;
        } else if ((r = cli_opt_value("compile", argc, argv, &i, "--target", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            target = v;
        } else if ((r = cli_opt_value("compile", argc, argv, &i, "--arch", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            arch = v;
        } else if ((r = cli_opt_value("compile", argc, argv, &i, "--name", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            name = v;
        } else if ((r = cli_opt_value("compile", argc, argv, &i, "--embed-limit", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            if (!cli_parse_i64(v, &embed)) { rc = cli_usage("compile", "--embed-limit needs a byte count, got '%s'", v); goto out; }
        } else if ((r = cli_opt_value("compile", argc, argv, &i, "--shapes", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            shapes[n_shapes++] = v;
        } else if ((r = cli_opt_value("compile", argc, argv, &i, "--dim", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            dims[n_dims++] = v;
        } else if (a[0] == '-' && a[1]) {
            rc = cli_usage("compile", "unknown option '%s'", a);
            goto out;
        } else if (model) {
            rc = cli_usage("compile", "only one MODEL may be given ('%s' and '%s')", model, a);
            goto out;
        } else {
            model = a;
            i++;
        }
    }
    if (!model) { rc = cli_usage("compile", "missing MODEL"); goto out; }
    bool cuda = strcmp(target, "cuda") == 0;
    if (!cuda && strcmp(target, "c") != 0) { rc = cli_usage("compile", "--target must be c or cuda, not '%s'", target); goto out; }
    if (cuda && !outdir) { rc = cli_usage("compile", "--target cuda needs -o DIR"); goto out; }
    if (cuda) { /* emit only: no device needed */
        ca.backend = "cuda";
        ca.o.emit_only = true;
        ca.o.dump_code_dir = outdir;
        ca.o.arch = arch; /* the kernels are lowered for the cubin's target */
    } else if ((rc = cli_compile_check_backend(&ca, false))) goto out;
    if ((rc = cli_load_model(model, n_shapes, shapes, n_dims, dims, &m))) goto out;
    /* -o DIR is created with its missing parents (before compiling: --target cuda writes into it) */
    if (outdir && (rc = cli_make_dirs("-o", outdir))) goto out;
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, m) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    /* every input needs a concrete shape */
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const lt_value *v = m->graph->inputs[i];
        if (v->init || v->type.kind != LT_TK_TENSOR) continue;
        int rank;
        int64_t d[LT_MAX_RANK];
        if (lt_io_input_shape(&ctx, v, NULL, &rank, d) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    }
    if ((rc = cli_compile_model(&ca, m, NULL, &plan, &rep))) goto out;
    have_rep = true;
    if (cuda) {
        rc = write_cubin(outdir, arch, ca.o.nvrtc, &rep);
        goto out;
    }
    printf("model: %s\n", cli_esc(model));
    cli_compile_print_report(&rep, stdout);
    if (rep.source_path[0]) printf("generated: %s\n", cli_esc(rep.source_path));
    if (print_plan) {
        lt_strbuf b = {0};
        lt_plan_print(plan, &b);
        if (b.s) cli_put_text(stdout, b.s);
        lt_sb_free(&b);
    }
    if (outdir) {
        lt_export_options eo = {.dir = outdir, .prefix = name, .model_path = model,
                                .embed_limit = embed < 0 ? 0 : embed == 0 ? -1 : embed};
        lt_export_report er = {0};
        if (lt_export_c(&ctx, plan, &eo, &er) != LT_OK) { rc = cli_fail(&ctx); goto out; }
        printf("export: %d kernels, weights %lld bytes (%s), workspace %lld bytes\n", er.n_kernels,
               (long long)er.weight_bytes, er.embedded ? "embedded" : "separate file", (long long)er.workspace_bytes);
        for (int i = 0; i < er.n_files; i++) printf("  wrote %s\n", cli_esc(er.files[i]));
        const char *P = cli_esc(name ? name : "model"), *D = cli_esc(outdir);
        printf("build: cc -O2 %s/%s.c %s/%s_main.c -lm   (add -O3 -march=native -fopenmp for speed)\n", D, P, D, P);
    }
out:
    lt_plan_free(plan);
    if (have_rep) lt_compile_report_free(&rep);
    lt_model_free(m);
    free(shapes);
    free(dims);
    return rc;
}
