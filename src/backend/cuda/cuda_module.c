/* cuda_module.c — CUDA source to a loaded module: NVRTC through an on-disk cubin cache
 * (lt_cuda_build, no device needed), cuModuleLoadData, and the launch shapes of emitted kernels
 * read back from the source (see cuda.h).
 *
 * Cache: <dir>/<key>.cubin (or .ptx), its manifest <key>.cubin.sha256 (the image's SHA-256) and
 * <dir>/<key>.cu, key = SHA-256 of a format version, the NVRTC version, the target, each option
 * and the source, NUL-separated. The folder and the files are trusted as base/private_file.h says
 * (ours, no group/other write, read through one descriptor, written to a temporary and renamed);
 * an image that fails a check or does not match its manifest is rebuilt and replaced, never loaded. Shapes: after the end-of-prelude marker, each
 * `extern "C" __global__ void NAME(params)` takes the last "launch: grid (..), block (..)" line
 * written between the previous kernel and it (", dynamic shared N" after it: N bytes of dynamic
 * shared memory, allowed with cuFuncSetAttribute when the kernel is looked up, passed at each
 * launch); the parameter count is the top-level comma count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../codegen/codegen.h"
#include "../../base/file.h"
#include "../../base/hash.h"
#include "../../base/private_file.h"
#include "cuda_impl.h"

#define KEY_VERSION "lathe-cuda-cubin-v1"
#define MANIFEST_MAGIC "lathe-cuda-manifest-v1"
#define MAX_EXTRA 24

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- the cache's files ---- */
/* The cached image at path if it is ours (base/private_file.h) and its SHA-256 is the one its
 * manifest (path + ".sha256") recorded when it was built; false means a miss (rebuilt, replaced). */
static bool read_cached(const char *path, char **data, size_t *n) {
    lt_ctx quiet = {0};
    char man_path[4200], sha[65];
    snprintf(man_path, sizeof man_path, "%s.sha256", path);
    uint8_t *man = NULL, *img = NULL;
    size_t man_n = 0, img_n = 0;
    bool ok = lt_private_read(&quiet, man_path, "CUDA cache manifest", 256, &man, &man_n) == LT_OK &&
              lt_private_read(&quiet, path, "CUDA cache image", LT_IO_MAX_FILE, &img, &img_n) == LT_OK && img_n > 0;
    if (ok) {
        lt_sha256_hex(img, img_n, sha);
        ok = man_n == strlen(MANIFEST_MAGIC) + 1 + 64 + 1 && !memcmp(man, MANIFEST_MAGIC "\n", strlen(MANIFEST_MAGIC) + 1) &&
             !memcmp(man + strlen(MANIFEST_MAGIC) + 1, sha, 64) && man[man_n - 1] == '\n';
    }
    lt_mem_free(man);
    if (!ok) {
        lt_mem_free(img);
        return false;
    }
    *data = (char *)img;
    *n = img_n;
    return true;
}

/* The image, then its manifest (a reader that sees the manifest sees the image it names). */
static lt_status write_cached(lt_ctx *ctx, const char *path, const void *data, size_t n) {
    char man_path[4200], text[128], sha[65];
    snprintf(man_path, sizeof man_path, "%s.sha256", path);
    lt_sha256_hex(data, n, sha);
    int tn = snprintf(text, sizeof text, MANIFEST_MAGIC "\n%s\n", sha);
    LT_TRY(lt_private_write_atomic(ctx, path, data, n));
    return lt_private_write_atomic(ctx, man_path, text, (size_t)tn);
}

/* ---- lt_cuda_build ---- */
lt_status lt_cuda_build(lt_ctx *ctx, lt_nvrtc *nv, const char *source, const char *arch, const char *cache_dir,
                        const lt_cuda_compile_options *opt, lt_cuda_image *out) {
    lt_cuda_compile_options none = {0};
    if (!opt) opt = &none;
    if (!nv || !source || !arch || !out || opt->n_extra < 0 || opt->n_extra > MAX_EXTRA || (opt->n_extra && !opt->extra))
        return lt_error(ctx, LT_ERR_USAGE, "lt_cuda_build: bad arguments");
    double t0 = now_s();
    const char *name = opt->name ? opt->name : "lathe.cu";
    bool cubin = strncmp(arch, "sm_", 3) == 0;

    lt_sha256 h;
    lt_sha256_init(&h);
    int ma = 0, mi = 0;
    lt_nvrtc_version(nv, &ma, &mi);
    char head[128];
    int hn = snprintf(head, sizeof head, "%s%cnvrtc %d.%d%c%s%c", KEY_VERSION, 0, ma, mi, 0, arch, 0);
    lt_sha256_update(&h, head, (size_t)hn);
    for (int i = 0; i < opt->n_extra; i++) lt_sha256_update(&h, opt->extra[i], strlen(opt->extra[i]) + 1);
    lt_sha256_update(&h, source, strlen(source));
    uint8_t dig[32];
    lt_sha256_final(&h, dig);
    lt_cuda_image img = {0};
    for (int i = 0; i < 32; i++) snprintf(img.key + 2 * i, 3, "%02x", dig[i]);

    char path[4096] = "", src_path[4096] = "";
    if (cache_dir) {
        LT_TRY(lt_private_dir_prepare(ctx, cache_dir, "cache folder"));
        snprintf(path, sizeof path, "%s/%s.%s", cache_dir, img.key, cubin ? "cubin" : "ptx");
        snprintf(src_path, sizeof src_path, "%s/%s.cu", cache_dir, img.key);
        char *data = NULL;
        size_t n = 0;
        if (read_cached(path, &data, &n)) {
            img.data = data;
            img.size = cubin ? n : n + 1;
            img.is_cubin = cubin;
            img.cache_hit = true;
            img.seconds = now_s() - t0;
            *out = img;
            return LT_OK;
        }
    }
    const char *extra[MAX_EXTRA + 1];
    int n_extra = 0;
    for (int i = 0; i < opt->n_extra; i++) extra[n_extra++] = opt->extra[i];
    lt_nvrtc_output o = {0};
    LT_TRY(lt_nvrtc_compile(ctx, nv, source, name, arch, extra, n_extra, &o));
    if (cache_dir) {
        lt_status s = lt_private_write_atomic(ctx, src_path, source, strlen(source));
        if (s == LT_OK) s = write_cached(ctx, path, o.image, cubin ? o.size : strlen(o.image));
        if (s != LT_OK) {
            lt_nvrtc_output_free(&o);
            return s;
        }
    }
    img.data = o.image;
    img.size = o.size;
    img.is_cubin = o.is_cubin;
    img.log = o.log;
    img.seconds = now_s() - t0;
    *out = img;
    return LT_OK;
}

void lt_cuda_image_free(lt_cuda_image *img) {
    if (!img) return;
    lt_mem_free(img->data);
    lt_mem_free(img->log);
    memset(img, 0, sizeof *img);
}

/* ---- modules ---- */
typedef struct kshape {
    char *name;
    bool has_shape;
    unsigned grid[3], block[3];
    int grid_scalar[3];    /* -1, or the run-time scalar grid axis a is, times grid[a] */
    int shared; /* bytes of dynamic shared memory */
    int n_params;
    int n_scalars; /* "run-time scalars: N" in the header comment: the last N parameters */
} kshape;

struct lt_cuda_module {
    cu_module mod;
    bool has_image;
    lt_cuda_image image; /* how it was built (data freed after loading) */
    kshape *shapes;      /* kernels parsed from the source */
    int n_shapes;
    lt_cuda_func **funcs; /* looked up so far */
    int n_funcs, cap_funcs;
};

static bool is_ident(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* One grid extent at *p: a number, or "s<i>*<m>" (run-time scalar i times m: emit.c); advances *p. */
static bool parse_extent(const char **p, long long *v, int *scalar) {
    int end = 0;
    *scalar = -1;
    if (**p == 's') {
        if (sscanf(*p, "s%d*%lld%n", scalar, v, &end) != 2 || !end || *scalar < 0) return false;
    } else if (sscanf(*p, "%lld%n", v, &end) != 1 || !end) {
        return false;
    }
    *p += end;
    return *v > 0 && *v <= 0x7fffffffLL;
}

/* Parse "grid (a, b, c), block (d, e, f)[, dynamic shared N]" at p (a, b, c: parse_extent). */
static bool parse_launch(const char *p, unsigned g[3], int gs[3], unsigned b[3], int *shared) {
    static const char head[] = "launch: grid (";
    if (strncmp(p, head, sizeof head - 1) != 0) return false;
    p += sizeof head - 1;
    long long v[6], sh = 0;
    for (int i = 0; i < 3; i++) {
        if (i && strncmp(p, ", ", 2) != 0) return false;
        if (i) p += 2;
        if (!parse_extent(&p, &v[i], &gs[i])) return false;
    }
    int end = 0;
    if (sscanf(p, "), block (%lld, %lld, %lld)%n", &v[3], &v[4], &v[5], &end) != 3 || !end) return false;
    for (int i = 3; i < 6; i++)
        if (v[i] <= 0 || v[i] > 0x7fffffffLL) return false;
    if (sscanf(p + end, ", dynamic shared %lld", &sh) == 1 && (sh < 0 || sh > 0x7fffffffLL)) return false;
    for (int i = 0; i < 3; i++) g[i] = (unsigned)v[i], b[i] = (unsigned)v[3 + i];
    *shared = (int)sh;
    return true;
}

static lt_status parse_shapes(lt_ctx *ctx, lt_cuda_module *m, const char *src) {
    static const char sig[] = "extern \"C\" __global__ void ";
    const char *start = strstr(src, LT_EMIT_MARK_END_PRELUDE);
    const char *p = start ? start : src, *prev = p;
    int cap = 0;
    while ((p = strstr(p, sig)) != NULL) {
        const char *nm = p + sizeof sig - 1;
        if (strncmp(nm, "__launch_bounds__(", 18) == 0) { /* skip "__launch_bounds__(...) " */
            const char *e = strchr(nm, ')');
            if (!e) break;
            for (nm = e + 1; *nm == ' '; nm++) {}
        }
        size_t len = 0;
        while (is_ident(nm[len])) len++;
        const char *q = nm + len;
        while (*q == ' ') q++;
        if (!len || *q != '(') { p = nm; continue; }
        /* parameters: top-level commas up to the matching ')' */
        int depth = 0, commas = 0;
        bool any = false;
        const char *r = q + 1;
        for (; *r && !(depth == 0 && *r == ')'); r++) {
            if (*r == '(') depth++;
            else if (*r == ')') depth--;
            else if (*r == ',' && depth == 0) commas++;
            else if (*r != ' ' && *r != '\n' && *r != '\t') any = true;
        }
        kshape k = {.grid_scalar = {-1, -1, -1}};
        k.n_params = any ? commas + 1 : 0;
        /* the launch line closest before the signature, after the previous kernel */
        const char *best = NULL;
        for (const char *l = strstr(prev, "launch: grid ("); l && l < p; l = strstr(l + 1, "launch: grid (")) best = l;
        k.has_shape = best && parse_launch(best, k.grid, k.grid_scalar, k.block, &k.shared);
        const char *sc = NULL; /* the scalars line of this kernel's header (emit.c) */
        for (const char *l = strstr(prev, "run-time scalars: "); l && l < p; l = strstr(l + 1, "run-time scalars: ")) sc = l;
        if (sc && (sscanf(sc, "run-time scalars: %d", &k.n_scalars) != 1 || k.n_scalars < 0 || k.n_scalars > k.n_params))
            k.n_scalars = 0;
        for (int a = 0; a < 3 && k.has_shape; a++) /* a grid that reads a scalar the kernel does not have */
            if (k.grid_scalar[a] >= k.n_scalars) k.has_shape = false;
        if (m->n_shapes == cap) {
            int nc = cap ? 2 * cap : 16;
            kshape *ns = lt_mem_realloc(m->shapes, (size_t)nc * sizeof *ns);
            if (!ns) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA kernel list)");
            m->shapes = ns;
            cap = nc;
        }
        if (!(k.name = lt_mem_alloc(len + 1))) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA kernel list)");
        memcpy(k.name, nm, len);
        k.name[len] = 0;
        m->shapes[m->n_shapes++] = k;
        prev = p = *r ? r : nm;
    }
    return LT_OK;
}

void lt_cuda_module_free(lt_cuda *cu, lt_cuda_module *m) {
    if (!m) return;
    if (m->mod && cu && cu->api.ctx_set_current(cu->context) == CU_SUCCESS) cu->api.module_unload(m->mod);
    for (int i = 0; i < m->n_shapes; i++) lt_mem_free(m->shapes[i].name);
    lt_mem_free(m->shapes);
    for (int i = 0; i < m->n_funcs; i++) lt_mem_free(m->funcs[i]);
    lt_mem_free(m->funcs);
    lt_cuda_image_free(&m->image);
    lt_mem_free(m);
}

lt_status lt_cuda_module_load(lt_cuda *cu, lt_ctx *ctx, const void *image, const char *source, lt_cuda_module **out) {
    if (!image || !out) return lt_error(ctx, LT_ERR_USAGE, "lt_cuda_module_load: no image");
    LT_TRY(lt_cuda_bind_(cu, ctx));
    lt_cuda_module *m = lt_calloc(ctx, 1, sizeof *m, "CUDA module");
    if (!m) return LT_ERR_NOMEM;
    lt_status s = source ? parse_shapes(ctx, m, source) : LT_OK;
    if (s == LT_OK) {
        cu_result r = cu->api.module_load_data(&m->mod, image);
        if (r != CU_SUCCESS) {
            m->mod = NULL;
            s = lt_cuda_fail_(cu, ctx, r, "cuModuleLoadData", "a module for %s on %s", cu->info.arch, cu->info.name);
        }
    }
    if (s != LT_OK) {
        lt_cuda_module_free(cu, m);
        return s;
    }
    *out = m;
    return LT_OK;
}

lt_status lt_cuda_module_compile(lt_cuda *cu, lt_ctx *ctx, const char *source, const lt_cuda_compile_options *opt,
                                 lt_cuda_module **out) {
    if (!cu || !source || !out) return lt_error(ctx, LT_ERR_USAGE, "lt_cuda_module_compile: bad arguments");
    lt_nvrtc *nv;
    LT_TRY(lt_cuda_nvrtc(cu, ctx, &nv));
    lt_cuda_image img = {0};
    LT_TRY(lt_cuda_build(ctx, nv, source, cu->info.arch, cu->cache_dir, opt, &img));
    lt_cuda_module *m = NULL;
    lt_status s = lt_cuda_module_load(cu, ctx, img.data, source, &m);
    if (s != LT_OK) {
        lt_cuda_image_free(&img);
        return s;
    }
    m->image = img; /* the cubin kept (small): an artifact saves it (lt_cuda_module_image) */
    m->has_image = true;
    *out = m;
    return LT_OK;
}

const lt_cuda_image *lt_cuda_module_image(const lt_cuda_module *m) { return m && m->has_image ? &m->image : NULL; }

lt_status lt_cuda_module_func(lt_cuda *cu, lt_ctx *ctx, lt_cuda_module *m, const char *name, lt_cuda_func **out) {
    if (!m || !name) return lt_error(ctx, LT_ERR_USAGE, "lt_cuda_module_func: no module or name");
    for (int i = 0; i < m->n_funcs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0) {
            *out = m->funcs[i];
            return LT_OK;
        }
    LT_TRY(lt_cuda_bind_(cu, ctx));
    cu_function fn = NULL;
    cu_result r = cu->api.module_get_function(&fn, m->mod, name);
    if (r == CU_ERROR_NOT_FOUND) return lt_error(ctx, LT_ERR_INVALID, "CUDA module has no kernel named %s", name);
    if (r != CU_SUCCESS) return lt_cuda_fail_(cu, ctx, r, "cuModuleGetFunction", "kernel %s", name);
    if (m->n_funcs == m->cap_funcs) {
        int nc = m->cap_funcs ? 2 * m->cap_funcs : 8;
        lt_cuda_func **nf = lt_mem_realloc(m->funcs, (size_t)nc * sizeof *nf);
        if (!nf) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA kernel handles)");
        m->funcs = nf;
        m->cap_funcs = nc;
    }
    size_t len = strlen(name);
    lt_cuda_func *f = lt_mem_calloc(1, sizeof *f + len + 1);
    if (!f) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA kernel handle)");
    char *nm = (char *)(f + 1);
    memcpy(nm, name, len + 1);
    f->fn = fn;
    f->name = nm;
    f->n_params = -1;
    for (int a = 0; a < 3; a++) f->grid_scalar[a] = -1;
    for (int i = 0; i < m->n_shapes; i++)
        if (strcmp(m->shapes[i].name, name) == 0) {
            f->has_shape = m->shapes[i].has_shape;
            memcpy(f->grid, m->shapes[i].grid, sizeof f->grid);
            memcpy(f->block, m->shapes[i].block, sizeof f->block);
            f->n_params = m->shapes[i].n_params;
            f->n_scalars = m->shapes[i].n_scalars;
            memcpy(f->grid_scalar, m->shapes[i].grid_scalar, sizeof f->grid_scalar);
            f->dyn_shared = m->shapes[i].shared;
        }
    /* an emitted kernel that needs more than the default 48 KiB of dynamic shared memory: allowed once, here */
    if (f->dyn_shared > 48 * 1024) {
        lt_status s = lt_cuda_func_set_shared(cu, ctx, f, f->dyn_shared);
        if (s != LT_OK) {
            lt_mem_free(f);
            return s;
        }
    }
    m->funcs[m->n_funcs++] = f;
    *out = f;
    return LT_OK;
}
