/* cmd_compile.c — `lathe compile MODEL`: compile a model for its bound shapes and print the compile
 * report (stage times, groups, kernels, host steps, cache hit, the memory plan: workspace peak next
 * to the sum of all intermediates). A model that keeps symbolic dims (none bound, or ranges such as
 * --dim seq=1..512) is compiled for every shape (tools/cli_family.c): built at each probe shape
 * (--probe, or a default set), it prints which shapes share which bucket and module, the kernels
 * with run-time scalars and the compiler runs. With -o DIR (--target c, the default) also export it as
 * standalone C (the "c" target, src/backend/c: DIR/model.c, model.h, model_main.c and model.weights,
 * or weights embedded in model.c under 1 MiB). --print-plan lists the plan's steps and buffers.
 * --target NAME is looked up in the backend registry like --backend: any target with a write_output
 * (c, cuda) is one -o can write. A target whose output is its emitted source (cuda: DIR/model.cu with
 * the Loop IR and groups, and DIR/model.cubin when NVRTC is found, --arch, default sm_90) is compiled
 * emit-only, with no device needed. DIR is created with its missing parents (mkdir -p). Names and
 * paths are printed escaped (cli_esc).
 * Exit codes: 0 ok, 1 usage, 2 bad model, 3 unsupported (backend, or host steps in an export).
 */
#include "cli_compile.h"
#include "cli_family.h"

#include <stdlib.h>
#include <string.h>

#include "ops/infer.h"
#include "base/file.h"
#include "runtime/export.h"

static const char HELP[] =
    "usage: lathe compile MODEL [options]\n"
    "\n"
    "Compile an ONNX model and print the compile report. With -o DIR, also write it as standalone C\n"
    "that builds with `cc -O2 model.c model_main.c -lm` and needs no lathe library (-o and --save\n"
    "need every input shape known: declared, or bound with --shapes/--dim NAME=N).\n"
    "\n"
    "A model that keeps symbolic dims (unbound, or given a range with --dim NAME=LO..HI) is compiled\n"
    "for every shape: built at each probe shape, it reports which shapes share a bucket (one built\n"
    "module, its kernels taking the sizes as run-time scalars), the kernels with run-time scalars and\n"
    "how many compiler runs it took. Probe shapes: --probe, else every combination of each ranged\n"
    "dim's low end, midpoint and high end and 1 and 8 for each dim without a range (at most 64).\n"
    "\n"
    "options:\n"
    "  -o, --output DIR      export into DIR (created, with missing parents, if missing)\n"
    "  --target c|cuda       what -o writes (c: model.c, model.h, model_main.c, model.weights; cuda:\n"
    "                        model.cu, kernels.txt, groups.txt and, when NVRTC is found, model.cubin;\n"
    "                        needs no GPU)\n"
    "  --arch SM             --target cuda: the cubin's target (-o: default sm_90; --save: built here\n"
    "                        with NVRTC, no GPU needed)\n"
    "  --name NAME           C prefix and file stem of the export (default model)\n"
    "  --embed-limit BYTES   embed the weights in model.c when smaller (default 1048576; 0 never)\n"
    "  --shapes NAME:DIMS[,NAME:DIMS]  fix input shapes (repeatable)\n"
    "  --dim NAME=N          bind a symbolic dim everywhere (repeatable)\n"
    "  --dim NAME=LO..HI     keep dim NAME symbolic within LO..HI (compiled for every shape)\n"
    "  --probe NAME:DIMS[,NAME:DIMS]  a shape to build the model compiled for every shape at (inputs\n"
    "                        not named take their dims from those named; repeatable)\n"
    "  --backend NAME        backend to compile for (default cpu)\n"
    "  --print-plan          list the plan: steps, buffers and their workspace offsets\n"
    "  --save FILE           write a .lathe artifact: the model, its options and the compiled module\n"
    "                        in one file that `lathe run FILE` runs with no C compiler and no NVRTC\n"
    "                        (--target cpu, the default: the machine running it needs this CPU's\n"
    "                        features; --target cuda: a cubin for the GPU's architecture, or for\n"
    "                        --arch SM with no GPU)\n"
    CLI_COMPILE_HELP
    "  -h, --help            show this help\n"
    "\n"
    "Exit status: 0 ok, 1 usage error, 2 bad model, 3 unsupported (an export with host steps).\n";

static void warn_line(const char *msg) { cli_warn("%s", msg); }

/* Every input of m needs a concrete shape to compile for one shape (`what`: -o, --save; NULL: a
 * report only). Exit code. */
static int check_input_shapes(const lt_model *m, const char *what) {
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, m) != LT_OK) return cli_fail(&ctx);
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const lt_value *v = m->graph->inputs[i];
        if (v->init || v->type.kind != LT_TK_TENSOR) continue;
        int rank;
        int64_t d[LT_MAX_RANK];
        if (lt_io_input_shape(&ctx, v, NULL, &rank, d) == LT_OK) continue;
        if (!what) return cli_fail(&ctx);
        cli_error("%s (%s writes code for one shape: every dim must be bound)", ctx.msg, what);
        return lt_status_exit_code(ctx.status);
    }
    return 0;
}

/* Was an option's value taken from the command line (the very argv string, "--arch X" or "--arch=X"),
 * rather than its default? */
static bool value_given(int argc, char **argv, const char *name, const char *value) {
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++)
        if (value == argv[i] || (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=' && value == argv[i] + n + 1))
            return true;
    return false;
}

/* --save --target cuda with no --arch: the device's own architecture (sm_90a on Hopper), which the
 * compile on it builds for; with no usable device, one line saying --arch builds here with NVRTC. */
static int cuda_device_arch(const cli_compile_args *ca, char *arch, size_t n) {
    lt_ctx ctx = {0};
    lt_backend *b = NULL;
    lt_backend_options bo = {.device = ca->o.device, .nvrtc = ca->o.nvrtc};
    if (lt_backend_create(&ctx, "cuda", &bo, &b) != LT_OK) {
        if (ctx.status != LT_ERR_UNSUPPORTED) return cli_fail(&ctx);
        cli_error("--save --target cuda: %s; with no GPU, give --arch (sm_90a for H100/H200, sm_80 for A100, ...) to "
                  "build the cubin here with NVRTC", ctx.msg);
        return CLI_EXIT_USAGE;
    }
    lt_target t;
    lt_target_options to = {0};
    lt_status s = lt_backend_target(&ctx, b->vt, b, &to, &t);
    lt_backend_destroy(b);
    if (s != LT_OK) return cli_fail(&ctx);
    if (!t.arch[0]) {
        cli_error("--save --target cuda: the device reports no architecture; give --arch");
        return CLI_EXIT_UNSUPPORTED;
    }
    snprintf(arch, n, "%s", t.arch);
    return 0;
}

/* --save FILE: compile (one whole module, no cache, no tuning database) and write the .lathe
 * artifact (src/compile/artifact.h): the model's bytes, the options, the module. arch: the GPU
 * architecture the module is built for (NULL for the CPU). offline: no device is used: the compile
 * lowers for arch and emits the source only, and NVRTC builds the cubin here (what the backend's
 * compile on a GPU of arch builds from the same source, so the artifact is the one saved there). */
static int save_artifact(cli_compile_args *ca, const char *model, const char *path, lt_model *m, const char *arch,
                         bool offline) {
    lt_ctx ctx = {0};
    uint8_t *bytes = NULL;
    size_t size = 0;
    lt_strbuf meta = {0}, source = {0}, log = {0};
    lt_prebuilt pb;
    memset(&pb, 0, sizeof pb);
    lt_plan *plan = NULL;
    lt_compile_report rep = {0};
    int rc = 0;
    if ((rc = cli_make_parent_dirs("--save", path))) return rc;
    if (lt_io_read_file(&ctx, model, &bytes, &size) != LT_OK) return cli_fail(&ctx);
    ca->no_tune_db = true;
    ca->o.backend = ca->backend;
    ca->o.arch = arch; /* recorded: the loader lowers for it */
    ca->o.save_prebuilt = &pb;
    if (lt_artifact_meta(&ctx, m, &ca->o, &meta) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    if (offline) {
        ca->o.emit_only = true;
        ca->o.emit_source = &source;
    }
    if ((rc = cli_compile_model(ca, m, NULL, &plan, &rep))) goto out;
    printf("model: %s\n", cli_esc(model));
    if (offline) {
        printf("lowered for %s with no device: %d kernels (+%d weight packing), %d host groups; CUDA source %zu bytes "
               "(compile %.3f s, emit only)\n", cli_esc(arch), rep.n_kernels, rep.n_pack_kernels, rep.n_host_groups,
               source.len, rep.total_seconds);
    } else {
        cli_compile_print_report(&rep, stdout);
    }
    lt_compile_report_free(&rep);
    if (offline && lt_artifact_offline_build(&ctx, ca->backend, ca->o.nvrtc, arch, source.s, source.len, &pb, &log) != LT_OK) {
        rc = cli_fail(&ctx);
        goto out;
    }
    if (log.s) printf("cuda: %s", log.s);
    if (lt_artifact_write(&ctx, path, meta.s, bytes, size, &pb) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    printf("saved: %s (%s%s%s, model %zu bytes, module %zu bytes); runs with no %s: lathe run %s\n", cli_esc(path),
           ca->backend, arch ? " " : "", arch ? cli_esc(arch) : "", size, pb.image_size,
           arch ? "NVRTC, on a GPU that runs this architecture" : "C compiler", cli_esc(path));
out:
    ca->o.save_prebuilt = NULL;
    ca->o.emit_only = false;
    ca->o.emit_source = NULL;
    ca->o.arch = NULL;
    lt_plan_free(plan);
    lt_mem_free(pb.image);
    lt_sb_free(&meta);
    lt_sb_free(&source);
    lt_sb_free(&log);
    lt_mem_free(bytes);
    return rc;
}

/* The standalone program of a plan (the runtime's C export), for targets whose output it is. */
static lt_status write_program(lt_ctx *ctx, const lt_output_request *req, const lt_lang *lang, lt_strbuf *log) {
    lt_export_options eo = {.dir = req->dir, .prefix = req->prefix, .model_path = req->model_path,
                            .embed_limit = req->embed_limit, .lang = lang};
    lt_export_report er = {0};
    LT_TRY(lt_export_c(ctx, req->plan, &eo, &er));
    lt_sb_printf(log, "export: %d kernels, weights %lld bytes (%s), workspace %lld bytes\n", er.n_kernels,
                 (long long)er.weight_bytes, er.embedded ? "embedded" : "separate file", (long long)er.workspace_bytes);
    for (int i = 0; i < er.n_files; i++) lt_sb_printf(log, "  wrote %s\n", req->esc(er.files[i]));
    const char *P = req->prefix ? req->prefix : "model";
    lt_sb_printf(log, "build: cc -O2 %s/%s.c %s/%s_main.c -lm   (add -O3 -march=native -fopenmp for speed)\n",
                 req->esc(req->dir), req->esc(P), req->esc(req->dir), req->esc(P));
    return LT_OK;
}

/* -o DIR: the target writes its output (its target built as the compile's was); stdout gets its lines. */
static int write_output(const lt_backend_vtbl *tv, const cli_compile_args *ca, const lt_output_request *req) {
    lt_ctx ctx = {0};
    lt_target t;
    lt_target_options to = {.threads = ca->o.threads, .vector_lanes = ca->o.vector_lanes, .arch = ca->o.arch,
                            .no_microkernels = ca->o.no_microkernels};
    lt_strbuf log = {0};
    lt_status s = lt_backend_target(&ctx, tv, NULL, &to, &t);
    if (s == LT_OK) s = tv->write_output(&ctx, &t, req, &log);
    if (log.s) fputs(log.s, stdout);
    lt_sb_free(&log);
    return s == LT_OK ? 0 : cli_fail(&ctx);
}

int cmd_compile(int argc, char **argv) {
    const char *model = NULL, *outdir = NULL, *target = "c", *name = NULL, *arch = "sm_90", *save = NULL;
    bool target_given = false;
    const char **shapes = calloc((size_t)argc, sizeof *shapes), **dims = calloc((size_t)argc, sizeof *dims),
               **probes = calloc((size_t)argc, sizeof *probes);
    int n_shapes = 0, n_dims = 0, n_probes = 0, rc = CLI_EXIT_OK;
    cli_dims dd = {0};
    bool symbolic = false;
    int64_t embed = -1;
    bool print_plan = false, have_rep = false;
    lt_model *m = NULL;
    lt_plan *plan = NULL;
    lt_compile_report rep = {0};
    lt_strbuf source = {0};
    cli_compile_args ca;
    cli_compile_init(&ca, "cpu");
    ca.stop_stages = true;
    if (!shapes || !dims || !probes) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
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
            target_given = true;
        } else if ((r = cli_opt_value("compile", argc, argv, &i, "--save", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            save = v;
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
        } else if ((r = cli_opt_value("compile", argc, argv, &i, "--probe", &v))) {
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            probes[n_probes++] = v;
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
    if ((rc = cli_dims_split("compile", n_dims, dims, &dd))) goto out;
    if (n_probes && (save || outdir)) {
        rc = cli_usage("compile", "--probe is for the report of a model compiled for every shape, not for %s",
                       save ? "--save" : "-o");
        goto out;
    }
    if (save) { /* a .lathe artifact for a backend (--target cpu, the default, or cuda) */
        if (outdir) { rc = cli_usage("compile", "--save and -o write different things: give one"); goto out; }
        if (target_given && strcmp(target, "cpu") != 0 && strcmp(target, "cuda") != 0) {
            rc = cli_usage("compile", "--save takes --target cpu or cuda, not '%s'", target);
            goto out;
        }
        if (target_given) ca.backend = target;
        /* cuda: --arch SM builds for SM here with NVRTC, no device used (none needed); without --arch,
         * the device's own architecture, compiled on it */
        bool cuda = strcmp(ca.backend, "cuda") == 0, offline = value_given(argc, argv, "--arch", arch);
        char dev_arch[32] = "";
        const char *save_arch = NULL;
        if (offline && !cuda) {
            rc = cli_usage("compile", "--arch is for --target cuda, not a '%s' artifact", ca.backend);
            goto out;
        }
        if (offline) {
            lt_ctx actx = {0};
            if (lt_artifact_offline_check(&actx, ca.backend, ca.o.nvrtc, arch) != LT_OK) {
                cli_error("--save --target cuda --arch %s: %s", arch, actx.msg);
                rc = lt_status_exit_code(actx.status);
                goto out;
            }
            save_arch = arch;
        } else if (cuda) {
            if ((rc = cuda_device_arch(&ca, dev_arch, sizeof dev_arch))) goto out;
            save_arch = dev_arch;
        } else if ((rc = cli_compile_check_backend(&ca, false))) {
            goto out;
        }
        if ((rc = cli_load_model(model, n_shapes, shapes, dd.n_fixed, dd.fixed, &m)) ||
            (rc = cli_dims_check_ranges("compile", &dd, m)) || (rc = check_input_shapes(m, "--save")))
            goto out;
        rc = save_artifact(&ca, model, save, m, save_arch, offline);
        goto out;
    }
    /* the target -o writes: a registered backend with an output */
    const lt_backend_vtbl *tv = lt_backend_find(target);
    if (!tv || !tv->write_output) {
        const char *outs[16];
        int no = 0;
        for (const char *const *n = lt_backend_names(); n && *n && no < 16; n++)
            if (lt_backend_find(*n)->write_output) outs[no++] = *n;
        for (int i = 1; i < no; i++) /* in name order */
            for (int j = i; j > 0 && strcmp(outs[j - 1], outs[j]) > 0; j--) {
                const char *x = outs[j];
                outs[j] = outs[j - 1], outs[j - 1] = x;
            }
        char names[256] = "";
        size_t off = 0;
        for (int i = 0; i < no && off < sizeof names; i++)
            off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", i ? " or " : "", outs[i]);
        rc = cli_usage("compile", "--target must be %s, not '%s'", names, target);
        goto out;
    }
    bool from_source = tv->output_from_source;
    if (from_source) { /* emit only: no device needed (without -o: the bucket report of a symbolic model) */
        ca.backend = target;
        ca.o.emit_only = true;
        if (outdir) ca.o.dump_code_dir = outdir; /* else --dump-code's, if given (a family: the last shape's code) */
        ca.o.emit_source = &source;
        ca.o.arch = arch; /* the kernels are lowered for the output's architecture */
    } else {
        if (outdir && !ca.backend_given) ca.backend = target; /* the target compiles the plan it writes */
        if ((rc = cli_compile_check_backend(&ca, false))) goto out;
    }
    if (ca.o.stop_after_stage && outdir && !from_source) {
        rc = cli_usage("compile", "--stop-after %s builds no plan: nothing for -o to write", ca.o.stop_after_stage);
        goto out;
    }
    if ((rc = cli_load_model(model, n_shapes, shapes, dd.n_fixed, dd.fixed, &m)) ||
        (rc = cli_dims_check_ranges("compile", &dd, m)))
        goto out;
    if (outdir && (rc = check_input_shapes(m, "-o"))) goto out;
    if ((rc = cli_model_symbolic(m, &symbolic))) goto out;
    if (n_probes && !symbolic) {
        rc = cli_usage("compile", "--probe is for a model that keeps symbolic dims: every dim of this one is bound");
        goto out;
    }
    if (from_source && !outdir && !symbolic) { rc = cli_usage("compile", "--target %s needs -o DIR", target); goto out; }
    if (symbolic) { /* compiled for every shape: the bucket report at the probe shapes */
        lt_ctx sctx = {0};
        if (lt_model_check_supported(&sctx, m) != LT_OK) { rc = cli_fail(&sctx); goto out; }
        if (ca.o.stop_after_stage) {
            rc = cli_usage("compile", "--stop-after %s needs every dim bound (--dim NAME=N or --shapes)",
                           ca.o.stop_after_stage);
            goto out;
        }
        rc = cli_family_report(&ca, model, n_shapes, shapes, &dd, m, n_probes, probes, print_plan);
        goto out;
    }
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
    lt_output_request req = {.dir = outdir, .prefix = name, .model_path = model,
                             .embed_limit = embed < 0 ? 0 : embed == 0 ? -1 : embed, .nvrtc = ca.o.nvrtc,
                             .plan = plan, .source = source.s, .source_len = source.len, .n_kernels = rep.n_kernels,
                             .n_pack_kernels = rep.n_pack_kernels, .n_host_groups = rep.n_host_groups,
                             .esc = cli_esc, .warn = warn_line, .write_program = write_program};
    if (from_source) {
        rc = write_output(tv, &ca, &req);
        goto out;
    }
    printf("model: %s\n", cli_esc(model));
    cli_compile_print_report(&rep, stdout);
    if (!plan) { /* --stop-after STAGE */
        printf("stopped after %s: no plan\n", rep.stopped_after ? rep.stopped_after : "?");
        goto out;
    }
    if (rep.source_path[0]) printf("generated: %s\n", cli_esc(rep.source_path));
    if (print_plan) {
        lt_strbuf b = {0};
        lt_plan_print(plan, &b);
        if (b.s) cli_put_text(stdout, b.s);
        lt_sb_free(&b);
    }
    if (outdir) rc = write_output(tv, &ca, &req);
out:
    lt_sb_free(&source);
    lt_plan_free(plan);
    if (have_rep) lt_compile_report_free(&rep);
    lt_model_free(m);
    cli_dims_free(&dd);
    free(shapes);
    free(dims);
    free(probes);
    return rc;
}
