/* export.h — standalone C export of a plan: `lathe compile MODEL -o DIR --target c`.
 *
 * Writes into DIR (created if missing), for prefix P (default "model"):
 *   P.c            the kernels (the same emitter and prelude as the CPU backend), the weights when
 *                  embedded, and the API below; builds with plain `cc -O2 P.c main.c -lm` (add
 *                  -fopenmp -march=native for threads and wider SIMD) and needs no lathe library
 *   P.h            the API, documented: every input and output (fields in_<i> / out_<i>, the ONNX
 *                  names in P_input_names[] / P_output_names[]) with its C type, shape and byte
 *                  size, the workspace size, how to load the weights
 *   P.weights      the weights, when they are 1 MiB or more (embed_limit): a 16-byte header
 *                  "LATHEWTS" + little-endian uint64 payload size, then the initializers at
 *                  64-byte aligned offsets
 *   P_main.c       a command-line program: reads each input from a .npy (or raw) file, runs
 *                  (optionally N times and prints the median), writes each output as .npy (or raw);
 *                  --help lists the inputs, outputs and where the weights are looked for
 * All build with -std=c99 and -std=c11, -Wall -Werror.
 * The API (P_ replaced by the prefix):
 *   int  P_init(const char *weights_path);  load weights (NULL when embedded), pack, allocate the
 *                                           default workspace; 0 on success
 *   int  P_run(const P_inputs *in, P_outputs *out, void *workspace);  workspace NULL: the default
 *        one; else P_WORKSPACE_BYTES of 64-byte aligned memory. No allocation. 0 on success.
 *   void P_free(void);  const char *P_error(void);  void P_set_threads(int n);
 * Kernels run in plan order with the plan's static workspace offsets. Export fails with
 * LT_ERR_UNSUPPORTED naming the node when the plan has host steps (ops with no lowering or dynamic
 * shapes need the lathe runtime).
 * Entry point: lt_export_c.
 */
#ifndef LT_EXPORT_H
#define LT_EXPORT_H

#include "../codegen/lang.h"
#include "plan.h"

typedef struct lt_export_options {
    const char *dir;
    const char *prefix;         /* C identifier prefix and file name stem (NULL = "model") */
    int64_t embed_limit;        /* weights under this many bytes are embedded (0 = 1 MiB; < 0 never) */
    const char *model_path;     /* for the header comment (may be NULL) */
    const lt_lang *lang;        /* the target's language table (NULL: lt_lang_c) */
} lt_export_options;

typedef struct lt_export_report {
    int64_t weight_bytes, workspace_bytes, packed_bytes;
    bool embedded;
    int n_kernels;
    size_t source_bytes;
    char files[4][1024];        /* paths written */
    int n_files;
} lt_export_report;

lt_status lt_export_c(lt_ctx *ctx, const lt_plan *p, const lt_export_options *opt, lt_export_report *rep);

#endif
