/* cli_progress.h — one updating status line on stderr for long work (cold compiles, lathe tune,
 * lathe conformance), drawn only when stderr is a terminal; nothing at all otherwise.
 *
 *     cli_progress("tune: %s (%d searched)", name, n);   // replaces the line
 *     cli_progress_clear();                               // erase it before printing any other line
 *     ca.o.progress = cli_progress_compile;               // lt_compile's stages as that line
 */
#ifndef LATHE_CLI_PROGRESS_H
#define LATHE_CLI_PROGRESS_H

#include <stdbool.h>

/* Whether the line is drawn (stderr is a terminal and TERM is not "dumb"; LATHE_NO_PROGRESS unset). */
bool cli_progress_enabled(void);
/* Replace the line with the formatted text (cut to the terminal's width). */
void cli_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Erase the line if one is drawn. */
void cli_progress_clear(void);
/* lt_compile_options.progress: "compiling: <stage>" lines, "scheduling kernel i/n", cleared at the end. */
void cli_progress_compile(void *user, int stage, int done, int total);

#endif
