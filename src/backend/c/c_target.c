/* c_target.c — the "c" target: a model as standalone C (`lathe compile MODEL --target c -o DIR`,
 * written by src/runtime/export.c through the request's write_program): DIR/model.c, model.h, model_main.c and model.weights, built with a plain C
 * compiler and no lathe library.
 *
 * A target like cpu and cuda, found in the same registry (backend.c): its language table is derived
 * from the C one (the export is the CPU's C: the same emitter, prelude and type names; what the
 * export alone needs differently goes into c_lang), its constructor the host CPU's target, and its
 * instance the CPU backend (the plan is compiled, checked and run as on the CPU; the export writes
 * that plan's kernels in plan order). write_output writes the files and says what it wrote.
 */
#include "../backend.h"

#include <pthread.h>

static lt_lang c_lang_table;
static pthread_once_t c_lang_once = PTHREAD_ONCE_INIT;

static void c_lang_init(void) {
    c_lang_table = lt_lang_c;
    c_lang_table.name = "c";
}

static const lt_lang *c_lang(void) {
    pthread_once(&c_lang_once, c_lang_init);
    return &c_lang_table;
}

static lt_status c_target(lt_ctx *ctx, lt_backend *b, const lt_target_options *opt, lt_target *out) {
    (void)ctx, (void)b;
    lt_target_host(opt, out);
    out->name = "c";
    out->lang = c_lang();
    out->dtypes = lt_target_lang_dtypes(out->lang);
    return LT_OK;
}

/* The instance is the CPU backend's (its vtable drives the plan). */
static lt_status c_create(lt_ctx *ctx, const lt_backend_options *opt, lt_backend **out) {
    c_lang();
    return lt_backend_cpu.create(ctx, opt, out);
}

/* The program is written from the plan by the writer the caller passes (the runtime's C export):
 * the plan is above this layer. */
static lt_status c_write_output(lt_ctx *ctx, const lt_target *t, const lt_output_request *req, lt_strbuf *log) {
    if (!req->plan || !req->write_program) return lt_error(ctx, LT_ERR_USAGE, "target %s: no plan to export", t->name);
    return req->write_program(ctx, req, t->lang, log);
}

const lt_backend_vtbl lt_backend_c = {
    .name = "c",
    .lang = &c_lang_table, /* filled by c_lang() before any use (target, create) */
    .host_memory = true,
    .target = c_target,
    .create = c_create,
    .write_output = c_write_output,
};
