/* backend.c — the backend registry: one line per backend, lookup by name, lt_backend_register for
 * backends added at run time (tests), and the create/destroy wrappers. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

enum { LT_BACKEND_MAX = 8 };
static const lt_backend_vtbl *registry[LT_BACKEND_MAX + 1] = {
    &lt_backend_cpu,
    &lt_backend_cuda,
    &lt_backend_loopir,
    &lt_backend_c,
    NULL,
};

lt_status lt_backend_register(lt_ctx *ctx, const lt_backend_vtbl *vt) {
    if (!vt || !vt->name) return lt_error(ctx, LT_ERR_USAGE, "lt_backend_register: no backend");
    int n = 0;
    for (; registry[n]; n++)
        if (strcmp(registry[n]->name, vt->name) == 0)
            return registry[n] == vt ? LT_OK : lt_error(ctx, LT_ERR_USAGE, "backend '%s' is already registered", vt->name);
    if (n >= LT_BACKEND_MAX) return lt_error(ctx, LT_ERR_USAGE, "backend registry full (%d backends)", n);
    registry[n] = vt;
    registry[n + 1] = NULL;
    return LT_OK;
}

const lt_backend_vtbl *lt_backend_find(const char *name) {
    for (int i = 0; name && registry[i]; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

const char *const *lt_backend_names(void) {
    static const char *names[sizeof registry / sizeof registry[0]];
    for (size_t i = 0; registry[i]; i++) names[i] = registry[i]->name;
    return names;
}

lt_status lt_backend_create(lt_ctx *ctx, const char *name, const lt_backend_options *opt, lt_backend **out) {
    const lt_backend_vtbl *vt = lt_backend_find(name);
    if (!vt) {
        char known[256] = "";
        for (int i = 0; registry[i]; i++) {
            size_t len = strlen(known);
            snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", registry[i]->name);
        }
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "unknown backend '%s' (known: %s)", name ? name : "(null)", known);
    }
    lt_backend_options none = {0};
    return vt->create(ctx, opt ? opt : &none, out);
}

void lt_backend_destroy(lt_backend *b) {
    if (b) b->vt->destroy(b);
}

lt_status lt_backend_target(lt_ctx *ctx, const lt_backend_vtbl *vt, lt_backend *b, const lt_target_options *opt,
                            lt_target *out) {
    lt_target_options none = {0};
    if (!opt) opt = &none;
    if (vt->target) return vt->target(ctx, b, opt, out);
    /* a backend without its own constructor (one registered by a test): the host's, its language */
    lt_target_host(opt, out);
    out->name = vt->name;
    out->lang = vt->lang;
    out->dtypes = lt_target_lang_dtypes(vt->lang);
    out->gpu_blocks = vt->lang && vt->lang->block_index[0] != NULL;
    out->host_memory = vt->host_memory;
    out->runs_loop_ir = vt->compile_ir != NULL;
    out->microkernels = out->microkernels && !vt->loop_ir_only;
    out->tune_db = out->layout_nchwc = false;
    return LT_OK;
}

lt_status lt_backend_target_named(lt_ctx *ctx, const char *name, const lt_target_options *opt, lt_target *out) {
    const lt_backend_vtbl *vt = lt_backend_find(name);
    if (!vt) return lt_error(ctx, LT_ERR_UNSUPPORTED, "unknown backend '%s'", name ? name : "(null)");
    return lt_backend_target(ctx, vt, NULL, opt, out);
}
