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

/* "lathe: error: ..." on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "lathe: warning: ..." on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the context's message as an error and return the exit code for its status. */
int cli_fail(const lt_ctx *ctx);
/* Usage error: print the message and a pointer to `lathe CMD --help`; returns 1. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Option parsing. At argv[*i]: if it is `name` (then the value is argv[*i+1]) or `name=value`, set
 * *val, advance *i past what was used and return 1; return -1 (after printing a usage error) when
 * the value is missing; 0 when argv[*i] is another option. */
int cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **val);
/* snprintf that always truncates quietly (paths and messages are bounded, truncation is fine). */
void cli_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Parse a non-negative integer / number; false if malformed. */
bool cli_parse_i64(const char *s, int64_t *out);
bool cli_parse_double(const char *s, double *out);

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
