/* cuda_kernels.c — host launchers for the CUDA prelude kernels (see cuda_kernels.h).
 *
 * A kernel is compiled on first use as a module of its own: the CUDA prelude (lt_emit_prelude_all
 * for lt_lang_cuda: cuda_core.h, common.h and every cuda_*.h) followed by one instantiation line
 * (LT_NORM_KERNELS(f16), LT_GEMM_TC(...)), so a process compiles only the kernels it launches, and the
 * cubin cache keeps them across processes. The modules live until lt_cuda_close (the state hangs on
 * lt_cuda.kernels). The parameter structs, op and activation codes and the GEMM configurations are
 * those of the prelude's abi.h, the one definition the device code compiles too.
 */
#include "cuda_kernels.h"

#include <stdio.h>
#include <string.h>

#include "../../codegen/codegen.h"
#include "../../codegen/prelude/abi.h"
#include "cuda_impl.h"

/* ---- compiled modules, by instantiation line ---- */
typedef struct kmod {
    char *inst;
    lt_cuda_module *mod;
} kmod;
typedef struct kstate {
    char *prelude;
    kmod *m;
    int n, cap;
} kstate;

static void kstate_free(lt_cuda *cu) {
    kstate *k = cu->kernels;
    if (!k) return;
    for (int i = 0; i < k->n; i++) {
        lt_cuda_module_free(cu, k->m[i].mod);
        lt_mem_free(k->m[i].inst);
    }
    lt_mem_free(k->m);
    lt_mem_free(k->prelude);
    lt_mem_free(k);
    cu->kernels = NULL;
}

static lt_status prelude_text(lt_ctx *ctx, char **out) {
    lt_strbuf sb = {0};
    lt_status s = lt_emit_prelude_all(ctx, &lt_lang_cuda, &sb);
    if (s != LT_OK) {
        lt_sb_free(&sb);
        return s;
    }
    if (sb.failed || !sb.s) {
        lt_sb_free(&sb);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA prelude text)");
    }
    *out = sb.s;
    return LT_OK;
}

lt_status lt_cuda_kernel_source(lt_ctx *ctx, const char *instantiate, char **out) {
    char *pre = NULL;
    LT_TRY(prelude_text(ctx, &pre));
    lt_strbuf sb = {0};
    lt_sb_printf(&sb, "%s\n/* ---- lathe: prelude kernels ---- */\n%s\n", pre, instantiate ? instantiate : "");
    lt_mem_free(pre);
    if (sb.failed || !sb.s) {
        lt_sb_free(&sb);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA kernel source)");
    }
    *out = sb.s;
    return LT_OK;
}

static lt_status get_kernel(lt_cuda *cu, lt_ctx *ctx, const char *inst, const char *name, lt_cuda_func **out) {
    if (!cu->kernels) {
        kstate *k = lt_calloc(ctx, 1, sizeof *k, "CUDA kernel state");
        if (!k) return LT_ERR_NOMEM;
        cu->kernels = k;
        cu->kernels_free = kstate_free;
    }
    kstate *k = cu->kernels;
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->m[i].inst, inst) == 0) return lt_cuda_module_func(cu, ctx, k->m[i].mod, name, out);
    if (!k->prelude) LT_TRY(prelude_text(ctx, &k->prelude));
    if (k->n == k->cap) {
        int nc = k->cap ? 2 * k->cap : 8;
        kmod *nm = lt_mem_realloc(k->m, (size_t)nc * sizeof *nm);
        if (!nm) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA kernel modules)");
        k->m = nm;
        k->cap = nc;
    }
    lt_strbuf src = {0};
    lt_sb_printf(&src, "%s\n/* ---- lathe: prelude kernels ---- */\n%s\n", k->prelude, inst);
    char *inst_copy = lt_mem_strdup(inst);
    if (src.failed || !src.s || !inst_copy) {
        lt_sb_free(&src);
        lt_mem_free(inst_copy);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA kernel source)");
    }
    char prog[96];
    snprintf(prog, sizeof prog, "%s.cu", name);
    lt_cuda_compile_options o = {.name = prog};
    lt_cuda_module *mod = NULL;
    lt_status s = lt_cuda_module_compile(cu, ctx, src.s, &o, &mod);
    lt_sb_free(&src);
    if (s != LT_OK) {
        lt_mem_free(inst_copy);
        return s;
    }
    k->m[k->n++] = (kmod){inst_copy, mod};
    return lt_cuda_module_func(cu, ctx, mod, name, out);
}

static const char *dt_suffix(lt_dtype t) {
    return t == LT_FLOAT ? "f32" : t == LT_FLOAT16 ? "f16" : t == LT_BFLOAT16 ? "bf16" : NULL;
}
static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* ---- norms ---- */
typedef struct norm_plan {
    char inst[64], name[64];
    int tpr, rpb;
} norm_plan;

static lt_status norm_choose(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_norm_args *a, norm_plan *np) {
    const char *dt = dt_suffix(a->dtype);
    if (!dt) return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA row kernels: dtype %s (float, float16, bfloat16 only)",
                             lt_dtype_name(a->dtype));
    if ((unsigned)a->op > LT_CUDA_ROWSUM) return lt_error(ctx, LT_ERR_USAGE, "CUDA row kernels: unknown op %d", (int)a->op);
    if (a->rows < 0 || a->cols < 1) return lt_error(ctx, LT_ERR_USAGE, "CUDA row kernels: %lld rows of %d columns",
                                                    (long long)a->rows, a->cols);
    if (!a->y || !a->x) return lt_error(ctx, LT_ERR_USAGE, "CUDA row kernels: x or y is NULL");
    if (a->rows > 0x7fffffffLL) return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA row kernels: %lld rows (at most 2^31 - 1)",
                                                (long long)a->rows);
    (void)cu;
    const int vn = 16 / (int)lt_dtype_size(a->dtype), nvec = a->cols / vn;
    const bool vec_ok = a->cols % vn == 0 && aligned16(a->x) && (a->op == LT_CUDA_ROWSUM || aligned16(a->y)) &&
                        aligned16(a->gamma) && aligned16(a->beta);
    int tpr = 0;
    if (a->variant > 0) {
        if (a->variant != 32 && a->variant != 128 && a->variant != 256 && a->variant != 512 && a->variant != 1024)
            return lt_error(ctx, LT_ERR_USAGE, "CUDA row kernels: variant %d (32, 128, 256, 512, 1024 or -1)", a->variant);
        if (!vec_ok || nvec > a->variant * 4)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA row kernel with %d threads a row cannot hold a row of %d %s%s",
                            a->variant, a->cols, lt_dtype_name(a->dtype), vec_ok ? "" : " (unaligned)");
        tpr = a->variant;
    } else if (a->variant == 0 && vec_ok) {
        static const int opts[] = {32, 128, 256, 512, 1024};
        for (int i = 0; i < 5 && !tpr; i++)
            if (nvec <= opts[i] * 4) tpr = opts[i];
    }
    if (tpr) {
        snprintf(np->name, sizeof np->name, "lt_cuda_norm_%s_t%d", dt, tpr);
        np->tpr = tpr;
        np->rpb = tpr == 32 ? 4 : 1;
    } else {
        snprintf(np->name, sizeof np->name, "lt_cuda_norm_%s_any", dt);
        np->tpr = 256;
        np->rpb = 1;
    }
    snprintf(np->inst, sizeof np->inst, "LT_NORM_KERNELS(%s)", dt);
    return LT_OK;
}

lt_status lt_cuda_norm_prepare(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_norm_args *a, const char **kernel_name) {
    norm_plan np;
    LT_TRY(norm_choose(cu, ctx, a, &np));
    lt_cuda_func *f;
    LT_TRY(get_kernel(cu, ctx, np.inst, np.name, &f));
    if (kernel_name) *kernel_name = lt_cuda_func_name(f);
    return LT_OK;
}

lt_status lt_cuda_norm(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_norm_args *a) {
    norm_plan np;
    LT_TRY(norm_choose(cu, ctx, a, &np));
    if (a->rows == 0) return LT_OK;
    lt_cuda_func *f;
    LT_TRY(get_kernel(cu, ctx, np.inst, np.name, &f));
    lt_cuda_norm_params p = {
        .y = a->y, .x = a->x, .gamma = a->gamma, .beta = a->beta, .mean = a->mean, .rstd = a->rstd,
        .rows = a->rows, .cols = a->cols, .op = (int)a->op, .eps = a->eps, .scale = a->scale != 0 ? a->scale : 1.0f,
    };
    void *params[] = {&p};
    unsigned grid[3] = {(unsigned)((a->rows + np.rpb - 1) / np.rpb), 1, 1}, block[3] = {(unsigned)(np.tpr * np.rpb), 1, 1};
    return lt_cuda_launch(cu, ctx, f, grid, block, 0, params);
}

/* ---- GEMM ---- */
typedef struct tc_config {
    const char *name;
    bool wg; /* wgmma (sm_90a only) rather than mma.sync */
    int bm, bn, bk, wm, wn, stages, minb; /* warp tile wm x wn: mma.sync only */
} tc_config;
/* abi.h's LT_GEMM_TC_CONFIGS then LT_GEMM_WG_CONFIGS, in their order (the config numbers) */
#define TC_ROW(dt, lay, BT, BM, BN, BK, WM, WN, ST, MINB) {#BM "x" #BN "x" #BK, false, BM, BN, BK, WM, WN, ST, MINB},
#define WG_ROW(dt, lay, BT, BM, BN, BK, ST, MINB) {"wg" #BM "x" #BN "x" #BK, true, BM, BN, BK, 0, 0, ST, MINB},
static const tc_config tc_configs[] = {LT_GEMM_TC_CONFIGS(TC_ROW, -, -, -) LT_GEMM_WG_CONFIGS(WG_ROW, -, -, -)};
#undef TC_ROW
#undef WG_ROW
enum { N_TC = (int)(sizeof tc_configs / sizeof tc_configs[0]), SIMT = N_TC };

static int config_index(const char *name) {
    int i = 0;
    while (i < N_TC && strcmp(tc_configs[i].name, name) != 0) i++;
    return i;
}

int lt_cuda_gemm_n_configs(void) { return N_TC + 1; }
const char *lt_cuda_gemm_config_name(int config) {
    return config >= 0 && config < N_TC ? tc_configs[config].name : config == SIMT ? "simt" : NULL;
}

typedef struct gemm_plan {
    char inst[96], name[64];
    int config, threads, smem, bm, bn;
    int lda, ldb, ldc, ldr, batch;
} gemm_plan;

static lt_status gemm_choose(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_gemm_args *a, gemm_plan *gp) {
    const char *dt = dt_suffix(a->dtype);
    if (!dt) return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA GEMM: dtype %s (float, float16, bfloat16 only)",
                             lt_dtype_name(a->dtype));
    if (a->m < 0 || a->n < 0 || a->k < 0 || a->batch < 0)
        return lt_error(ctx, LT_ERR_USAGE, "CUDA GEMM: negative size (m %d, n %d, k %d, batch %d)", a->m, a->n, a->k, a->batch);
    if (!a->c || !a->a || !a->b) return lt_error(ctx, LT_ERR_USAGE, "CUDA GEMM: a, b or c is NULL");
    if (a->bias_kind < 0 || a->bias_kind > 2 || (a->bias_kind && !a->bias))
        return lt_error(ctx, LT_ERR_USAGE, "CUDA GEMM: bias_kind %d with %s bias", a->bias_kind, a->bias ? "a" : "no");
    if (a->act != LT_ACT_NONE && a->act != LT_ACT_RELU && a->act != LT_ACT_GELU && a->act != LT_ACT_GELU_TANH &&
        a->act != LT_ACT_SIGMOID)
        return lt_error(ctx, LT_ERR_USAGE, "CUDA GEMM: unknown activation %d", a->act);
    gp->lda = a->lda ? a->lda : a->k;
    gp->ldb = a->ldb ? a->ldb : (a->b_trans ? a->k : a->n);
    gp->ldc = a->ldc ? a->ldc : a->n;
    gp->ldr = a->ldr ? a->ldr : a->n;
    gp->batch = a->batch ? a->batch : 1;
    if (gp->lda < a->k || gp->ldb < (a->b_trans ? a->k : a->n) || gp->ldc < a->n || (a->res && gp->ldr < a->n))
        return lt_error(ctx, LT_ERR_USAGE, "CUDA GEMM: a leading dimension is smaller than its row (lda %d, ldb %d, ldc %d, "
                        "ldr %d for m %d, n %d, k %d)", gp->lda, gp->ldb, gp->ldc, gp->ldr, a->m, a->n, a->k);
    bool tc_ok = a->dtype != LT_FLOAT && a->k % 8 == 0 && a->n % 8 == 0 && gp->lda % 8 == 0 && gp->ldb % 8 == 0 &&
                 gp->ldc % 8 == 0 && (!a->res || (gp->ldr % 8 == 0 && aligned16(a->res) && a->stride_r % 8 == 0)) &&
                 aligned16(a->a) && aligned16(a->b) && aligned16(a->c) && a->stride_a % 8 == 0 && a->stride_b % 8 == 0 &&
                 a->stride_c % 8 == 0;
    const bool wg_ok = strcmp(cu->info.arch, "sm_90a") == 0; /* the kernels are built for the device's own target */
    int cfg = a->config;
    if (cfg >= 0) {
        if (cfg > SIMT) return lt_error(ctx, LT_ERR_USAGE, "CUDA GEMM: config %d (0 .. %d)", cfg, SIMT);
        if (cfg < SIMT && !tc_ok)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA GEMM: the tensor-core kernels need float16/bfloat16 with k, n, "
                            "the leading dimensions and batch strides multiples of 8 and 16-byte aligned operands");
        if (cfg < SIMT && tc_configs[cfg].wg && !wg_ok)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA GEMM: config %s needs wgmma (sm_90a); the target is %s",
                            tc_configs[cfg].name, cu->info.arch);
    } else if (!tc_ok) {
        cfg = SIMT;
    } else { /* the first preferred tile that still gives every SM a block, else the small one */
        /* Measured on an H200 (bench/gpu, 4096^3 and 8192^3, fp16 and bf16, % of cuBLAS): wgmma
         * 128x256x64 73-78, 256x128x64 70-75, 128x128x64 60-65; mma.sync 128x256x32 51-59,
         * 128x128x32 50-54. */
        static const char *const wgmma[] = {"wg128x256x64", "wg128x128x64"};
        static const char *const mma[] = {"128x256x32", "128x128x32"};
        const char *const *pref = wg_ok ? wgmma : mma;
        int64_t sms = cu->info.sm_count > 0 ? cu->info.sm_count : 1;
        cfg = config_index("64x64x32");
        for (int p = 0; p < 2; p++) {
            const tc_config *t = &tc_configs[config_index(pref[p])];
            if ((int64_t)((a->m + t->bm - 1) / t->bm) * ((a->n + t->bn - 1) / t->bn) * gp->batch >= sms) {
                cfg = config_index(pref[p]);
                break;
            }
        }
    }
    gp->config = cfg;
    const char *lay = a->b_trans ? "nt" : "nn";
    if (cfg == SIMT) {
        snprintf(gp->inst, sizeof gp->inst, "LT_GEMM_SIMT(%s, %s, %s)", dt, lay, a->b_trans ? "true" : "false");
        snprintf(gp->name, sizeof gp->name, "lt_cuda_gemm_%s_%s_simt", dt, lay);
        gp->threads = 256, gp->smem = 0, gp->bm = 128, gp->bn = 128;
    } else {
        const tc_config *t = &tc_configs[cfg];
        const char *bt = a->b_trans ? "true" : "false";
        if (t->wg) {
            snprintf(gp->inst, sizeof gp->inst, "LT_GEMM_WG(%s, %s, %s, %d, %d, %d, %d, %d)", dt, lay, bt, t->bm, t->bn,
                     t->bk, t->stages, t->minb);
            gp->threads = t->bm / 64 * 128;
            gp->smem = LT_GEMM_SMEM_WG(t->bm, t->bn, t->bk, t->stages);
        } else {
            snprintf(gp->inst, sizeof gp->inst, "LT_GEMM_TC(%s, %s, %s, %d, %d, %d, %d, %d, %d, %d)", dt, lay, bt, t->bm,
                     t->bn, t->bk, t->wm, t->wn, t->stages, t->minb);
            gp->threads = (t->bm / t->wm) * (t->bn / t->wn) * 32;
            gp->smem = LT_GEMM_SMEM_TC(t->bm, t->bn, t->bk, t->stages);
        }
        snprintf(gp->name, sizeof gp->name, "lt_cuda_gemm_%s_%s_%s", dt, lay, t->name);
        gp->bm = t->bm, gp->bn = t->bn;
    }
    int64_t tiles = (int64_t)((a->m + gp->bm - 1) / gp->bm) * ((a->n + gp->bn - 1) / gp->bn);
    if (tiles > 0x7fffffffLL) return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA GEMM: %lld tiles (m %d, n %d)", (long long)tiles,
                                              a->m, a->n);
    return LT_OK;
}

lt_status lt_cuda_gemm_prepare(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_gemm_args *a, const char **kernel_name) {
    gemm_plan gp;
    LT_TRY(gemm_choose(cu, ctx, a, &gp));
    lt_cuda_func *f;
    LT_TRY(get_kernel(cu, ctx, gp.inst, gp.name, &f));
    if (gp.smem > 48 * 1024) LT_TRY(lt_cuda_func_set_shared(cu, ctx, f, gp.smem));
    if (kernel_name) *kernel_name = lt_cuda_func_name(f);
    return LT_OK;
}

lt_status lt_cuda_gemm(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_gemm_args *a) {
    gemm_plan gp;
    LT_TRY(gemm_choose(cu, ctx, a, &gp));
    if (a->m == 0 || a->n == 0) return LT_OK;
    lt_cuda_func *f;
    LT_TRY(get_kernel(cu, ctx, gp.inst, gp.name, &f));
    if (gp.smem > 48 * 1024) LT_TRY(lt_cuda_func_set_shared(cu, ctx, f, gp.smem));
    const size_t es = lt_dtype_size(a->dtype);
    lt_cuda_gemm_params p = {
        .c = a->c, .a = a->a, .b = a->b, .bias = a->bias, .res = a->res,
        .stride_a = a->stride_a, .stride_b = a->stride_b, .stride_c = a->stride_c, .stride_r = a->stride_r,
        .m = a->m, .n = a->n, .k = a->k, .lda = gp.lda, .ldb = gp.ldb, .ldc = gp.ldc, .ldr = gp.ldr,
        .bias_kind = a->bias_kind, .act = a->act, .res_after_act = a->res_after_act ? 1 : 0,
        .alpha = a->alpha != 0 ? a->alpha : 1.0f, .beta = a->beta != 0 ? a->beta : 1.0f,
    };
    unsigned tiles = (unsigned)(((a->m + gp.bm - 1) / gp.bm) * ((a->n + gp.bn - 1) / gp.bn));
    unsigned block[3] = {(unsigned)gp.threads, 1, 1};
    /* gridDim.y is at most 65535: larger batches go in chunks, the pointers advanced */
    for (int z0 = 0; z0 < gp.batch; z0 += 65535) {
        int nz = gp.batch - z0 < 65535 ? gp.batch - z0 : 65535;
        lt_cuda_gemm_params q = p;
        q.c = (char *)a->c + (size_t)z0 * (size_t)a->stride_c * es;
        q.a = (const char *)a->a + (size_t)z0 * (size_t)a->stride_a * es;
        q.b = (const char *)a->b + (size_t)z0 * (size_t)a->stride_b * es;
        if (a->res) q.res = (const char *)a->res + (size_t)z0 * (size_t)a->stride_r * es;
        void *params[] = {&q};
        unsigned grid[3] = {tiles, (unsigned)nz, 1};
        LT_TRY(lt_cuda_launch(cu, ctx, f, grid, block, (unsigned)gp.smem, params));
    }
    return LT_OK;
}
