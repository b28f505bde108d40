/* cstring.c — the one escaper for text from a model (tensor, node, graph names) that generated C or
 * CUDA carries: inside a string literal or inside a comment, in the kernels (emit.c, module.c) and in
 * the standalone export (runtime/export.c).
 *
 * Only letters, digits, the space and the punctuation that is inert in a string literal and in a
 * comment are copied; every other byte becomes a three-digit octal escape (`\ooo`, so a following
 * digit cannot extend it). Escaped on purpose: `?` (the trigraph `??/` is a backslash under
 * -std=c99/c11 and would end the literal), `\` and `"` (the literal's own syntax), `*` and `/` (a
 * comment end or start, a `//` line), `%` (a printf directive if the text ever reaches a format), and
 * every control byte and byte >= 0x7f (line breaks, ANSI escapes, invalid UTF-8 that NVRTC rejects).
 * The result is plain printable ASCII. Entry points: lt_c_escape, lt_c_quote.
 */
#include "codegen.h"

#include <string.h>

static bool inert(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return c != 0 && strchr(" !#$&'()+,-.:;<=>@[]^_`{|}~", c) != NULL;
}

void lt_c_escape(lt_strbuf *out, const char *text, size_t max_bytes) {
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t n = strlen((const char *)s);
    size_t take = max_bytes && n > max_bytes ? max_bytes : n;
    for (size_t i = 0; i < take; i++) {
        if (inert(s[i])) lt_sb_printf(out, "%c", s[i]);
        else lt_sb_printf(out, "\\%03o", s[i]);
    }
    if (take < n) lt_sb_printf(out, "...");
}

void lt_c_quote(lt_strbuf *out, const char *text, size_t max_bytes) {
    lt_sb_printf(out, "\"");
    lt_c_escape(out, text, max_bytes);
    lt_sb_printf(out, "\"");
}
