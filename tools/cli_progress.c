/* cli_progress.c — the CLI's progress line (cli_progress.h): "\r<text>ESC[K" on stderr, only when
 * stderr is a terminal, so logs and pipes never see it. Callers update it per step (a compile stage,
 * a kernel, a finished test: hundreds of short writes at most); the text is cut to the terminal's
 * width so it never wraps.
 */
#include "cli_progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "compile/compile.h"

static int g_state = -1; /* -1: not decided, 0: off, 1: on */
static bool g_drawn;

bool cli_progress_enabled(void) {
    if (g_state < 0) {
        const char *term = getenv("TERM"), *off = getenv("LATHE_NO_PROGRESS");
        g_state = isatty(2) && !(term && !strcmp(term, "dumb")) && !(off && *off);
    }
    return g_state == 1;
}

static int width(void) {
    struct winsize ws;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8) return ws.ws_col - 1;
    return 79;
}

void cli_progress(const char *fmt, ...) {
    if (!cli_progress_enabled()) return;
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fflush(stdout); /* what stdout printed first stays above the line */
    fprintf(stderr, "\r%.*s\033[K", width(), text);
    fflush(stderr);
    g_drawn = true;
}

void cli_progress_clear(void) {
    if (!g_drawn) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    g_drawn = false;
}

void cli_progress_compile(void *user, int stage, int done, int total) {
    (void)user;
    if (stage < 0) {
        cli_progress_clear();
        return;
    }
    if (stage == LT_STAGE_BACKEND)
        cli_progress("compiling: building the generated code (the C compiler, unless cached)");
    else if (total > 0)
        cli_progress("compiling: %s, group %d of %d", lt_compile_stage_name(stage), done + 1, total);
    else
        cli_progress("compiling: %s", lt_compile_stage_name(stage));
}
