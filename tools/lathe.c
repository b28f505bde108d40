/* lathe.c — the `lathe` command-line tool: dispatches to the subcommands (tools/cmd_*.c) and prints
 * the version and the help. The only part of lathe that prints or reads the environment.
 * Exit codes: 0 ok, 1 usage, 2 bad model or input, 3 unsupported.
 * Environment (read only here and in the subcommands): CC, LATHE_CACHE_DIR, XDG_CACHE_HOME, HOME,
 * LATHE_ONNX_SUITE, LATHE_PYTHON; OMP_WAIT_POLICY / GOMP_SPINCOUNT (default_wait_policy).
 */
#include <stdlib.h>
#include <string.h>

#include "cli_compile.h"

static const char HELP[] =
    "usage: lathe <command> [options]\n"
    "\n"
    "lathe — a deep-learning compiler for ONNX models.\n"
    "\n"
    "commands:\n"
    "  run MODEL          compile and run a model on given or generated inputs, print or save the\n"
    "                     outputs (--backend interp: the reference interpreter)\n"
    "  compile MODEL      compile a model, print the compile report; -o DIR exports standalone C\n"
    "  profile MODEL      time every kernel and compare it with the machine's roofline\n"
    "  ceilings           measure this machine's peak FLOP rate and memory bandwidth (cached)\n"
    "  tune MODEL         search and measure faster schedules for MODEL's loop kernels on this CPU\n"
    "  inspect MODEL      describe a model and list the ops lathe does not support\n"
    "  conformance        run the ONNX backend node tests\n"
    "  help [COMMAND]     show this help, or a command's help\n"
    "\n"
    "options:\n"
    "  --version          print the version\n"
    "  -h, --help         show this help\n"
    "\n"
    "'lathe COMMAND --help' describes a command's options. Exit status: 0 ok, 1 usage error,\n"
    "2 bad model or input, 3 unsupported op or backend.\n";

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
} command;

static const command COMMANDS[] = {
    {"run", cmd_run},
    {"compile", cmd_compile},
    {"profile", cmd_profile},
    {"tune", cmd_tune},
    {"ceilings", cmd_ceilings},
    {"inspect", cmd_inspect},
    {"conformance", cmd_conformance},
};

static const command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++)
        if (strcmp(COMMANDS[i].name, name) == 0) return &COMMANDS[i];
    return NULL;
}

/* OpenMP's default wait policy spins idle threads between parallel regions; on a machine whose cores
 * are shared (other processes, or another thread pool) that stalls every kernel behind a descheduled
 * spinner (measured: MobileNetV2 on 2 threads 4-5x slower under load). The tool's idle threads sleep
 * instead, unless the user chose a policy. Set here, before any compiled module (and so the OpenMP
 * runtime) loads: the library itself never touches the environment. */
static void default_wait_policy(void) {
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}

int main(int argc, char **argv) {
    default_wait_policy();
    if (argc < 2) {
        fputs(HELP, stderr);
        return CLI_EXIT_USAGE;
    }
    const char *a = argv[1];
    if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0 || strcmp(a, "version") == 0) {
        printf("lathe %s\n", LATHE_VERSION);
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        fputs(HELP, stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "help") == 0) {
        if (argc < 3) {
            fputs(HELP, stdout);
            return CLI_EXIT_OK;
        }
        const command *c = find_command(argv[2]);
        if (!c) return cli_usage(NULL, "unknown command '%s'", argv[2]);
        char *hargv[] = {argv[2], "--help", NULL};
        return c->fn(2, hargv);
    }
    const command *c = find_command(a);
    if (!c) return cli_usage(NULL, "unknown command '%s'", a);
    return c->fn(argc - 1, argv + 1);
}
