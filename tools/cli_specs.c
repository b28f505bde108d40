/* cli_specs.c — what an `--input` spec means for a model, decided without reading any file:
 * NAME=FILE (the NAME before one of the spec's '=' is an input: the first such '=' wins, so names
 * may themselves hold '='), FILE.npz (every array to the input of its name), or FILE for a model
 * with one input to give. Whether a spec that holds '=' but names no input is a file is asked of
 * the caller (file_exists), so fuzz/fuzz_cli_specs.c runs this with no file system.
 */
#include "cli.h"

#include <string.h>
#include <strings.h>

static bool ends_with_npz(const char *s) {
    size_t n = strlen(s);
    return n >= 4 && strcasecmp(s + n - 4, ".npz") == 0;
}

/* Index of the graph input named by the n bytes at s, -1 if none. */
static int input_named(const lt_graph *g, const char *s, size_t n) {
    for (int i = 0; i < g->n_inputs; i++) {
        const char *name = g->inputs[i]->name;
        if (strlen(name) == n && memcmp(name, s, n) == 0) return i;
    }
    return -1;
}

void cli_input_spec_parse(const lt_graph *g, const char *spec, bool (*file_exists)(const char *path),
                          cli_input_spec *out) {
    memset(out, 0, sizeof *out);
    out->input = -1;
    const char *first_eq = strchr(spec, '=');
    for (const char *eq = first_eq; eq; eq = strchr(eq + 1, '=')) {
        int idx = input_named(g, spec, (size_t)(eq - spec));
        if (idx >= 0) {
            out->kind = CLI_INPUT_NAMED;
            out->input = idx;
            out->path = eq + 1;
            return;
        }
    }
    if (first_eq && !(file_exists && file_exists(spec))) {
        out->kind = CLI_INPUT_NO_SUCH_INPUT;
        out->name = spec;
        out->name_len = (size_t)(first_eq - spec);
        return;
    }
    out->path = spec; /* a plain FILE */
    if (ends_with_npz(spec)) {
        out->kind = CLI_INPUT_NPZ_ALL;
        return;
    }
    int n_free = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (!g->inputs[i]->init) {
            out->input = i;
            n_free++;
        }
    out->kind = n_free == 1 ? CLI_INPUT_ONLY : CLI_INPUT_WHICH;
    if (n_free != 1) out->input = -1;
}
