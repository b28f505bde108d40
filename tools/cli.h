/* cli.h — private interface shared by the lathe command-line tool's files: one function per
 * subcommand (tools/cmd_*.c), option parsing, error printing, model loading, value comparison.
 * The tool is the only part of lathe that prints or reads the environment.
 * Exit codes: 0 ok, 1 usage, 2 bad model or input, 3 unsupported (lt_status_exit_code).
 */
#ifndef LATHE_CLI_H
#define LATHE_CLI_H

#include <stdio.h>

#include "base/base.h"
#include "graph/graph.h"

#ifndef LATHE_VERSION
#define LATHE_VERSION "0.0.0"
#endif

#define CLI_EXIT_OK 0
#define CLI_EXIT_USAGE 1
#define CLI_EXIT_INVALID 2
#define CLI_EXIT_UNSUPPORTED 3

/* Subcommands: argv[0] is the subcommand name. Return the exit code. */
int cmd_conformance(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_inspect(int argc, char **argv);

/* "lathe: error: ..." on stderr. The message (and those of cli_warn, cli_fail, cli_usage) is printed
 * through cli_put_text: model names in it cannot send control sequences to the terminal. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "lathe: warning: ..." on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the context's message as an error and return the exit code for its status. */
int cli_fail(const lt_ctx *ctx);
/* Usage error: print the message and a pointer to `lathe CMD --help`; returns 1. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Printing what a model or a file chose (names, strings, paths). cli_esc returns `s` with every byte a
 * terminal would act on written as an escape: C0 controls and DEL (\n, \t, \r, else \xHH, so ESC is
 * \x1b), C1 controls (U+0080..U+009F), Unicode direction overrides and line separators, and bytes
 * that are not UTF-8, each as \xHH; printable ASCII and other UTF-8 stay as they are. The result lives
 * in one of 8 rotating per-thread buffers (valid until 8 more calls), so several may appear in one
 * printf. cli_put_text writes multi-line text (library messages, reports, graph listings) the same
 * way but leaves '\n' and '\t' alone. */
const char *cli_esc(const char *s);
/* The first n bytes of s as a new NUL-terminated string (malloc; NULL when out of memory). */
char *cli_copy_str(const char *s, size_t n);
void cli_put_text(FILE *f, const char *text);
/* The escaped form of s appended to buf[0..n) (always terminated); for strings kept with a result.
 * keep_lines leaves '\n' and '\t' as they are. Returns the length the whole escaped form needs. */
size_t cli_esc_into(char *buf, size_t n, const char *s, bool keep_lines);

/* A byte count from environment variable `name` (digits, optionally followed by K, M, G or T): 0 when
 * unset or empty; one warning and 0 (the default) when it is not such a size. */
int64_t cli_env_size(const char *name);
/* The limit on what a Loop's scan outputs or one sequence may hold while it runs (interpreter and
 * host steps): LATHE_MAX_LOOP_BYTES, 0 = the library's default. */
#define cli_max_loop_bytes() cli_env_size("LATHE_MAX_LOOP_BYTES")

/* Create folder `dir` and its missing parents (mkdir -p: mode 0777 less the umask). 0, or prints
 * "WHAT DIR: cannot create folder PART: REASON" (or "...: PART is not a folder") and returns 2. */
int cli_make_dirs(const char *what, const char *dir);
/* The same for the folder that will hold file `path` (nothing to do without a '/'). */
int cli_make_parent_dirs(const char *what, const char *path);

/* Option parsing. At argv[*i]: if it is `name` (then the value is argv[*i+1]) or `name=value`, set
 * *val, advance *i past what was used and return 1; return -1 (after printing a usage error) when
 * the value is missing; 0 when argv[*i] is another option. */
int cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **val);
/* snprintf that always truncates quietly (paths and messages are bounded, truncation is fine). */
void cli_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Parse a non-negative integer / number; false if malformed. */
bool cli_parse_i64(const char *s, int64_t *out);
bool cli_parse_double(const char *s, double *out);

/* What an --input spec means for graph g (tools/cli_specs.c; reads no file). */
typedef enum cli_input_kind {
    CLI_INPUT_NAMED,         /* NAME=FILE: input `input` from `path` */
    CLI_INPUT_NPZ_ALL,       /* FILE.npz: each array to the input of its name (`path`) */
    CLI_INPUT_ONLY,          /* FILE: the model's only input to give (`input`) from `path` */
    CLI_INPUT_NO_SUCH_INPUT, /* NAME=FILE where no input is NAME (name, name_len) and no file is the spec */
    CLI_INPUT_WHICH,         /* FILE for a model with several inputs (or none) to give: say which */
} cli_input_kind;

typedef struct cli_input_spec {
    cli_input_kind kind;
    int input;        /* graph input index, or -1 */
    const char *path; /* points into the spec */
    const char *name; /* NO_SUCH_INPUT: the name asked for, name_len bytes (not terminated) */
    size_t name_len;
} cli_input_spec;

/* NAME=FILE when the text before one of the spec's '=' (the first that does) names an input; else the
 * whole spec is a FILE, unless it holds '=' and file_exists(spec) (NULL: never) says there is no such
 * file. */
void cli_input_spec_parse(const lt_graph *g, const char *spec, bool (*file_exists)(const char *path),
                          cli_input_spec *out);

/* Load a model and apply --shapes / --dim specs (each array may be empty). Exit code (0 = ok). */
int cli_load_model(const char *path, int n_shapes, const char *const *shapes, int n_dims,
                   const char *const *dims, lt_model **out);

/* Distinct op types used by a model (subgraphs included), "Op" or "domain:Op", sorted; the strings
 * live in arena `a`; *out is heap (lt_mem_free). Returns the count, -1 on out of memory. */
int cli_model_ops(const lt_model *m, lt_arena *a, const char ***out);

/* Compare a computed value with the expected one: dtype, shape, values (|a-b| <= atol + rtol*|b|,
 * NaN matches NaN, infinities exactly; ints, bools and strings exactly; sequences, optionals and maps
 * recursively). On mismatch writes a one-line reason to why (prefixed with `what`). */
bool cli_compare_datum(const lt_datum *got, const lt_datum *want, double rtol, double atol, const char *what,
                       char *why, size_t why_size);

#endif
