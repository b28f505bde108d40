/* artifact.h — .lathe artifacts: a compiled model that runs on a machine with no C compiler and no
 * NVRTC (`lathe compile MODEL --save model.lathe`, then `lathe run model.lathe`, lathe_compile,
 * lathe.compile, lathe.InferenceSession).
 *
 * Format (all integers little-endian): the magic "LATHEART", a u32 format version
 * (LT_ARTIFACT_VERSION), a u32 section count, then each section: an 8-byte tag (ASCII, NUL-padded),
 * a u64 length, the 32-byte SHA-256 of its data, then the data. Sections, each once, in this order:
 *   meta    text, one key=value a line: format, lathe version, backend, machine, the options that
 *           decide the code (opt level, passes enabled / disabled, fusion flags, vector lanes,
 *           threads, arch), the bound shape of every input, the given inputs, the CPU features the
 *           module was built for (or the GPU arch), the SHA-256 of the emitted source the module
 *           was built from and of the module itself;
 *   model   the ONNX bytes as read (a model with external data is refused when saving);
 *   module  the backend's module: one whole shared object (CPU), a cubin (CUDA); absent when the
 *           model compiled to no kernel.
 * Loading verifies everything before anything runs: the structure (every length against the bytes
 * left; errors name the file and the byte offset), every section's hash (a mismatch names the
 * section), the meta's keys, the machine (the CPU features, the machine kind), then the caller
 * compiles the model with the recorded options (lt_artifact_compile_options) and the compile's
 * backend stage takes the module when the emitted source hashes to the recorded value
 * (compile.h: options.prebuilt) — never running a compiler.
 * A GPU artifact records the architecture its module was built for (`arch`); the loader lowers for
 * that very architecture (options.arch), so the source is the one the module was built from whether
 * it was saved on a GPU or on a machine with none (lt_artifact_offline_*: the compile only emits the
 * source, NVRTC builds the cubin here exactly as the backend would at run time).
 * Entry points: lt_artifact_is_file / lt_artifact_is_data, lt_artifact_parse, lt_artifact_open,
 * lt_artifact_check_machine, lt_artifact_load_model, lt_artifact_compile_options, lt_artifact_free;
 * saving: lt_artifact_meta (before the compile) and lt_artifact_write (after it); with no device:
 * lt_artifact_offline_check, then an emit-only compile, then lt_artifact_offline_build.
 */
#ifndef LT_COMPILE_ARTIFACT_H
#define LT_COMPILE_ARTIFACT_H

#include "compile.h"

#define LT_ARTIFACT_MAGIC "LATHEART"
#define LT_ARTIFACT_VERSION 1u
#define LT_ARTIFACT_MAX_SECTIONS 8

typedef struct lt_artifact_shape {
    int input;                  /* position among the loaded model's graph inputs */
    int rank;
    int64_t dims[LT_MAX_RANK];
} lt_artifact_shape;

typedef struct lt_artifact {
    char *name;                 /* the file, for messages */
    uint8_t *data;              /* the whole file (owned) */
    size_t size;
    const uint8_t *model;       /* into data */
    size_t model_size;
    lt_prebuilt module;         /* image into data (NULL: none); the hashes from meta */
    /* meta */
    char *meta;                 /* NUL-terminated copy */
    char version[64], backend[32], machine[32], arch[32], cpu_model[128];
    char *cpu_features;         /* space-separated ("" none) */
    int opt_level, threads, vector_lanes, stop_after;
    bool no_microkernels, no_fusion, no_epilogues, all_host, keep_initializer_inputs;
    char *enable, *disable;     /* comma-separated pass names, NULL none */
    char **given;               /* NULL-terminated (given inputs) */
    int n_shapes;
    lt_artifact_shape *shapes;
} lt_artifact;

/* Does the file / buffer start with the artifact magic? (A file that cannot be read: false.) */
bool lt_artifact_is_file(const char *path);
bool lt_artifact_is_data(const void *data, size_t size);

/* Parse and verify an artifact held in memory (copied): structure, section hashes, meta. Errors
 * (LT_ERR_INVALID) are one line naming `name`, the byte offset and what is wrong. */
lt_status lt_artifact_parse(lt_ctx *ctx, const char *name, const void *data, size_t size, lt_artifact **out);
/* Read the file, parse it, and check the machine (lt_artifact_check_machine). */
lt_status lt_artifact_open(lt_ctx *ctx, const char *path, lt_artifact **out);
/* This machine can run the module: same machine kind, every CPU feature the module was built for
 * (else LT_ERR_UNSUPPORTED, one line naming the missing features). */
lt_status lt_artifact_check_machine(lt_ctx *ctx, const lt_artifact *a);
/* The model from the `model` section, shapes bound as recorded. The artifact must outlive it. */
lt_status lt_artifact_load_model(lt_ctx *ctx, const lt_artifact *a, lt_model **out);
/* The recorded options over o (backend, opt level, passes, fusion flags, lanes, threads, arch, given
 * inputs), o->prebuilt = the module, and no tuning database. The artifact must outlive the compile. */
void lt_artifact_compile_options(const lt_artifact *a, lt_compile_options *o);
void lt_artifact_free(lt_artifact *a); /* NULL is fine */

/* Saving. lt_artifact_meta: what the artifact records of m (bound, not compiled yet: the compile
 * rewrites it) and o, the options it is about to be compiled with (o->given_inputs included);
 * refuses options an artifact cannot reproduce (a schedule hook). lt_artifact_write: the file, from
 * that meta, the model's bytes (refused when they need external data) and the compile's
 * save_prebuilt; written atomically. A GPU target's meta needs o->arch (the architecture the
 * module is built for: the device's own, or the one built for with no device). */
lt_status lt_artifact_meta(lt_ctx *ctx, const lt_model *m, const lt_compile_options *o, lt_strbuf *meta);
lt_status lt_artifact_write(lt_ctx *ctx, const char *path, const char *meta, const void *model, size_t model_size,
                            const lt_prebuilt *pb);

/* Saving with no device (CUDA on a machine without a GPU). The caller checks first
 * (lt_artifact_offline_check), then compiles with o->arch = arch, o->emit_only and o->emit_source
 * (after lt_artifact_meta, which records arch), then builds that source here.
 * lt_artifact_offline_check: `backend` can build its module here for `arch` (CUDA: a cubin
 * architecture sm_XY, sm_XYa or sm_XYf that the NVRTC found through `nvrtc` (the library tried
 * first, NULL none) builds for); one line: LT_ERR_USAGE for the architecture, LT_ERR_UNSUPPORTED
 * for a backend with no offline build or no NVRTC.
 * lt_artifact_offline_build: pb (zeroed first) from the emitted source: its SHA-256 and the module
 * the backend's own compile builds from it (CUDA: NVRTC, the options and program name the backend
 * uses, no cache), so the loader checks and loads it as it would a module saved on a GPU; no
 * module when the source is empty (no kernels). One line about the build is appended to log (may
 * be NULL). The caller frees pb->image (lt_mem_free). */
lt_status lt_artifact_offline_check(lt_ctx *ctx, const char *backend, const char *nvrtc, const char *arch);
lt_status lt_artifact_offline_build(lt_ctx *ctx, const char *backend, const char *nvrtc, const char *arch,
                                    const char *source, size_t source_len, lt_prebuilt *pb, lt_strbuf *log);

#endif
