/* misc_regex.c — a small RE2-syntax regular expression engine for RegexFullMatch (see misc_impl.h).
 *
 * Pattern -> AST (recursive descent; nodes in a growable array) -> NFA program (emitting a node
 * once per copy a counted repetition needs) -> Pike VM: all threads advance together over the UTF-8
 * code points of the text, each program counter at most once per position, so matching is
 * O(text * program) with no recursion and no backtracking.
 */
#include "misc_impl.h"

#include <stdio.h>
#include <string.h>

/* ---- AST ---- */
enum { N_EMPTY, N_LIT, N_ANY, N_CLASS, N_ASSERT, N_CAT, N_ALT, N_REP };
enum { A_BOT, A_EOT, A_WORDB, A_NWORDB, A_BOL, A_EOL }; /* BOL/EOL: ^ $ under (?m) */

typedef struct rx_node {
    int kind;
    int a, b;      /* CAT/ALT: children; REP: child in a */
    int min, max;  /* REP (max -1: unbounded) */
    uint32_t c;    /* LIT code point; ASSERT kind; CLASS index */
    bool icase;
    bool dotnl;    /* ANY: matches newline too (?s) */
} rx_node;

typedef struct rx_range { uint32_t lo, hi; } rx_range;
typedef struct rx_class {
    int first, count; /* ranges[first .. first+count) */
    bool neg;
} rx_class;

enum { I_CHAR, I_ANY, I_CLASS, I_SPLIT, I_JMP, I_ASSERT, I_MATCH };
typedef struct rx_inst {
    uint8_t op;
    bool icase, dotnl;
    uint32_t c; /* CHAR code point, CLASS index, ASSERT kind */
    int x, y;   /* SPLIT/JMP targets */
} rx_inst;

struct lt_regex {
    rx_inst *prog;
    int n_prog;
    rx_range *ranges;
    int n_ranges;
    rx_class *classes;
    int n_classes;
};

typedef struct rx_parser {
    lt_ctx *ctx;
    const unsigned char *s;
    size_t len, pos;
    rx_node *nodes;
    int n_nodes, cap_nodes;
    rx_range *ranges;
    int n_ranges, cap_ranges;
    rx_class *classes;
    int n_classes, cap_classes;
    bool icase, dotnl, multiline;
    int depth;
    lt_status st;
} rx_parser;

static lt_status rx_err(rx_parser *p, const char *what) {
    if (!p->st)
        p->st = lt_error(p->ctx, LT_ERR_INVALID, "invalid regular expression: %s at offset %zu", what, p->pos);
    return p->st;
}

static bool grow(rx_parser *p, void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap * 2 : 32;
    while (nc < need) nc *= 2;
    void *q = lt_mem_realloc(*arr, (size_t)nc * elem);
    if (!q) {
        if (!p->st) p->st = lt_error(p->ctx, LT_ERR_NOMEM, "out of memory (regex)");
        return false;
    }
    *arr = q;
    *cap = nc;
    return true;
}

static int new_node(rx_parser *p, int kind) {
    if (p->n_nodes >= LT_REGEX_MAX_INST) { rx_err(p, "pattern too large"); return -1; }
    if (!grow(p, (void **)&p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof *p->nodes)) return -1;
    rx_node *n = &p->nodes[p->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->icase = p->icase;
    n->dotnl = p->dotnl;
    return p->n_nodes++;
}

static bool add_range(rx_parser *p, uint32_t lo, uint32_t hi) {
    if (!grow(p, (void **)&p->ranges, &p->cap_ranges, p->n_ranges + 1, sizeof *p->ranges)) return false;
    p->ranges[p->n_ranges++] = (rx_range){lo, hi};
    return true;
}

/* Decode one UTF-8 code point from s[*i..len); invalid bytes decode as themselves. */
static uint32_t utf8_next(const unsigned char *s, size_t len, size_t *i) {
    unsigned char c = s[*i];
    size_t extra = (c >= 0xf0 && c < 0xf8) ? 3 : (c >= 0xe0 && c < 0xf0) ? 2 : (c >= 0xc0 && c < 0xe0) ? 1 : 0;
    if (extra && *i + extra < len) {
        uint32_t v = c & (0x3fu >> extra);
        bool ok = true;
        for (size_t k = 1; ok && k <= extra; k++) {
            unsigned char d = s[*i + k];
            if ((d & 0xc0) != 0x80) ok = false;
            else v = (v << 6) | (d & 0x3f);
        }
        if (ok) {
            *i += extra + 1;
            return v;
        }
    }
    (*i)++;
    return c;
}

static bool is_word(uint32_t c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* Perl / POSIX class ranges. */
static const rx_range R_DIGIT[] = {{'0', '9'}};
static const rx_range R_WORD[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
static const rx_range R_SPACE[] = {{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}};
static const rx_range R_ALPHA[] = {{'A', 'Z'}, {'a', 'z'}};
static const rx_range R_ALNUM[] = {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}};
static const rx_range R_UPPER[] = {{'A', 'Z'}};
static const rx_range R_LOWER[] = {{'a', 'z'}};
static const rx_range R_PSPACE[] = {{'\t', '\r'}, {' ', ' '}};
static const rx_range R_XDIGIT[] = {{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
static const rx_range R_PUNCT[] = {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}};
static const rx_range R_BLANK[] = {{'\t', '\t'}, {' ', ' '}};
static const rx_range R_CNTRL[] = {{0, 0x1f}, {0x7f, 0x7f}};
static const rx_range R_PRINT[] = {{' ', '~'}};
static const rx_range R_GRAPH[] = {{'!', '~'}};
static const rx_range R_ASCII[] = {{0, 0x7f}};

static bool add_set(rx_parser *p, const rx_range *r, int n, bool neg) {
    if (!neg) {
        for (int k = 0; k < n; k++)
            if (!add_range(p, r[k].lo, r[k].hi)) return false;
        return true;
    }
    uint32_t next = 0;
    for (int k = 0; k < n; k++) {
        if (r[k].lo > next && !add_range(p, next, r[k].lo - 1)) return false;
        next = r[k].hi + 1;
    }
    return add_range(p, next, 0x10ffff);
}

/* \d \w \s \D \W \S: adds the set and returns true if `c` names one. */
static int perl_class(rx_parser *p, unsigned char c) {
    switch (c) {
    case 'd': return add_set(p, R_DIGIT, 1, false) ? 1 : -1;
    case 'D': return add_set(p, R_DIGIT, 1, true) ? 1 : -1;
    case 'w': return add_set(p, R_WORD, 4, false) ? 1 : -1;
    case 'W': return add_set(p, R_WORD, 4, true) ? 1 : -1;
    case 's': return add_set(p, R_SPACE, 3, false) ? 1 : -1;
    case 'S': return add_set(p, R_SPACE, 3, true) ? 1 : -1;
    default: return 0;
    }
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A single-character escape after '\' (not a class or assertion): the code point, or -1. */
static int64_t escape_char(rx_parser *p) {
    if (p->pos >= p->len) { rx_err(p, "trailing backslash"); return -1; }
    unsigned char c = p->s[p->pos++];
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'a': return '\a';
    case '0': return 0;
    case 'x': {
        uint32_t v = 0;
        if (p->pos < p->len && p->s[p->pos] == '{') {
            p->pos++;
            int digits = 0;
            while (p->pos < p->len && p->s[p->pos] != '}') {
                int h = hexval(p->s[p->pos++]);
                if (h < 0 || ++digits > 6) { rx_err(p, "bad \\x{...} escape"); return -1; }
                v = v * 16 + (uint32_t)h;
            }
            if (p->pos >= p->len || v > 0x10ffff) { rx_err(p, "bad \\x{...} escape"); return -1; }
            p->pos++;
            return v;
        }
        for (int k = 0; k < 2; k++) {
            int h = p->pos < p->len ? hexval(p->s[p->pos]) : -1;
            if (h < 0) { rx_err(p, "bad \\x escape"); return -1; }
            p->pos++;
            v = v * 16 + (uint32_t)h;
        }
        return v;
    }
    default:
        if (c >= 0x80 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return c;
        rx_err(p, "unsupported escape");
        return -1;
    }
}

static int parse_class(rx_parser *p) { /* after '[' */
    int first = p->n_ranges;
    bool neg = false;
    if (p->pos < p->len && p->s[p->pos] == '^') { neg = true; p->pos++; }
    bool start = true;
    for (;;) {
        if (p->pos >= p->len) { rx_err(p, "missing ]"); return -1; }
        unsigned char c = p->s[p->pos];
        if (c == ']' && !start) { p->pos++; break; }
        start = false;
        if (c == '[' && p->pos + 1 < p->len && p->s[p->pos + 1] == ':') {
            static const struct { const char *name; const rx_range *r; int n; } posix[] = {
                {"alpha", R_ALPHA, 2}, {"digit", R_DIGIT, 1}, {"alnum", R_ALNUM, 3}, {"upper", R_UPPER, 1},
                {"lower", R_LOWER, 1}, {"space", R_PSPACE, 2}, {"xdigit", R_XDIGIT, 3}, {"punct", R_PUNCT, 4},
                {"blank", R_BLANK, 2}, {"cntrl", R_CNTRL, 2}, {"print", R_PRINT, 1}, {"graph", R_GRAPH, 1},
                {"word", R_WORD, 4}, {"ascii", R_ASCII, 1}};
            size_t q = p->pos + 2;
            bool pneg = q < p->len && p->s[q] == '^';
            if (pneg) q++;
            size_t e = q;
            while (e + 1 < p->len && !(p->s[e] == ':' && p->s[e + 1] == ']')) e++;
            if (e + 1 >= p->len) { rx_err(p, "bad POSIX class"); return -1; }
            bool found = false;
            for (size_t k = 0; k < sizeof posix / sizeof *posix; k++)
                if (strlen(posix[k].name) == e - q && memcmp(posix[k].name, p->s + q, e - q) == 0) {
                    if (!add_set(p, posix[k].r, posix[k].n, pneg)) return -1;
                    found = true;
                }
            if (!found) { rx_err(p, "unknown POSIX class"); return -1; }
            p->pos = e + 2;
            continue;
        }
        uint32_t lo;
        if (c == '\\') {
            p->pos++;
            if (p->pos < p->len) {
                int pc = perl_class(p, p->s[p->pos]);
                if (pc < 0) return -1;
                if (pc > 0) { p->pos++; continue; }
            }
            int64_t v = escape_char(p);
            if (v < 0) return -1;
            lo = (uint32_t)v;
        } else {
            lo = utf8_next(p->s, p->len, &p->pos);
        }
        uint32_t hi = lo;
        if (p->pos + 1 < p->len && p->s[p->pos] == '-' && p->s[p->pos + 1] != ']') {
            p->pos++;
            if (p->s[p->pos] == '\\') {
                p->pos++;
                int64_t v = escape_char(p);
                if (v < 0) return -1;
                hi = (uint32_t)v;
            } else {
                hi = utf8_next(p->s, p->len, &p->pos);
            }
            if (hi < lo) { rx_err(p, "bad character class range"); return -1; }
        }
        if (!add_range(p, lo, hi)) return -1;
    }
    if (!grow(p, (void **)&p->classes, &p->cap_classes, p->n_classes + 1, sizeof *p->classes)) return -1;
    p->classes[p->n_classes] = (rx_class){first, p->n_ranges - first, neg};
    int node = new_node(p, N_CLASS);
    if (node < 0) return -1;
    p->nodes[node].c = (uint32_t)p->n_classes++;
    return node;
}

static int class_node_from_perl(rx_parser *p, unsigned char c) {
    int first = p->n_ranges;
    if (perl_class(p, c) < 0) return -1;
    if (!grow(p, (void **)&p->classes, &p->cap_classes, p->n_classes + 1, sizeof *p->classes)) return -1;
    p->classes[p->n_classes] = (rx_class){first, p->n_ranges - first, false};
    int node = new_node(p, N_CLASS);
    if (node < 0) return -1;
    p->nodes[node].c = (uint32_t)p->n_classes++;
    return node;
}

static int parse_alt(rx_parser *p);

static int binary(rx_parser *p, int kind, int a, int b) {
    int n = new_node(p, kind);
    if (n < 0) return -1;
    p->nodes[n].a = a;
    p->nodes[n].b = b;
    return n;
}

/* (?flags) or (?flags:...) — flags i, s, m, U (U only swaps greedy and lazy: no effect on
 * whether the whole text matches). */
static bool parse_flags(rx_parser *p, bool *icase, bool *dotnl, bool *multiline, bool *is_group) {
    bool neg = false;
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos++];
        if (c == ')') { *is_group = false; return true; }
        if (c == ':') { *is_group = true; return true; }
        if (c == '-') { neg = true; continue; }
        if (c == 'i') *icase = !neg;
        else if (c == 's') *dotnl = !neg;
        else if (c == 'm') *multiline = !neg;
        else if (c == 'U') continue;
        else { rx_err(p, "bad regex flag"); return false; }
    }
    rx_err(p, "missing )");
    return false;
}

static int parse_atom(rx_parser *p) {
    unsigned char c = p->s[p->pos];
    if (c == '(') {
        p->pos++;
        if (++p->depth > 1000) { rx_err(p, "nesting too deep"); return -1; }
        bool save_i = p->icase, save_s = p->dotnl, save_m = p->multiline;
        if (p->pos < p->len && p->s[p->pos] == '?') {
            p->pos++;
            if (p->pos < p->len && (p->s[p->pos] == 'P' || p->s[p->pos] == '<')) {
                /* named group (?P<name>...) / (?<name>...) */
                while (p->pos < p->len && p->s[p->pos] != '>') p->pos++;
                if (p->pos >= p->len) { rx_err(p, "bad group name"); return -1; }
                p->pos++;
            } else {
                bool is_group;
                if (!parse_flags(p, &p->icase, &p->dotnl, &p->multiline, &is_group)) return -1;
                if (!is_group) { /* flags apply to the rest of the enclosing group */
                    p->depth--;
                    return new_node(p, N_EMPTY);
                }
            }
        }
        int e = parse_alt(p);
        if (e < 0) return -1;
        if (p->pos >= p->len || p->s[p->pos] != ')') { rx_err(p, "missing )"); return -1; }
        p->pos++;
        p->icase = save_i;
        p->dotnl = save_s;
        p->multiline = save_m;
        p->depth--;
        return e;
    }
    if (c == '[') { p->pos++; return parse_class(p); }
    if (c == '.') { p->pos++; return new_node(p, N_ANY); }
    if (c == '^' || c == '$') {
        p->pos++;
        int n = new_node(p, N_ASSERT);
        if (n >= 0) p->nodes[n].c = c == '^' ? (p->multiline ? A_BOL : A_BOT) : (p->multiline ? A_EOL : A_EOT);
        return n;
    }
    if (c == '\\') {
        p->pos++;
        if (p->pos >= p->len) { rx_err(p, "trailing backslash"); return -1; }
        unsigned char e = p->s[p->pos];
        int as = e == 'b' ? A_WORDB : e == 'B' ? A_NWORDB : e == 'A' ? A_BOT : e == 'z' ? A_EOT : -1;
        if (as >= 0) {
            p->pos++;
            int n = new_node(p, N_ASSERT);
            if (n >= 0) p->nodes[n].c = (uint32_t)as;
            return n;
        }
        if (e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S') {
            p->pos++;
            return class_node_from_perl(p, e);
        }
        int64_t v = escape_char(p);
        if (v < 0) return -1;
        int n = new_node(p, N_LIT);
        if (n >= 0) p->nodes[n].c = (uint32_t)v;
        return n;
    }
    if (c == '*' || c == '+' || c == '?' || c == ')' || c == '|') { rx_err(p, "missing argument to repetition operator"); return -1; }
    uint32_t cp = utf8_next(p->s, p->len, &p->pos);
    int n = new_node(p, N_LIT);
    if (n >= 0) p->nodes[n].c = cp;
    return n;
}

static bool parse_int(rx_parser *p, int *out) {
    size_t start = p->pos;
    long v = 0;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        v = v * 10 + (p->s[p->pos++] - '0');
        if (v > 100000) v = 100000;
    }
    *out = (int)v;
    return p->pos > start;
}

static int parse_repeat(rx_parser *p) {
    int atom = parse_atom(p);
    if (atom < 0) return -1;
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        int mn, mx;
        if (c == '*') { mn = 0; mx = -1; p->pos++; }
        else if (c == '+') { mn = 1; mx = -1; p->pos++; }
        else if (c == '?') { mn = 0; mx = 1; p->pos++; }
        else if (c == '{') {
            size_t save = p->pos;
            p->pos++;
            if (!parse_int(p, &mn)) { p->pos = save; break; } /* a literal '{' */
            mx = mn;
            if (p->pos < p->len && p->s[p->pos] == ',') {
                p->pos++;
                if (!parse_int(p, &mx)) mx = -1;
            }
            if (p->pos >= p->len || p->s[p->pos] != '}') { p->pos = save; break; }
            p->pos++;
            if (mn > 1000 || mx > 1000 || (mx >= 0 && mx < mn)) { rx_err(p, "bad repetition count"); return -1; }
        } else {
            break;
        }
        if (p->pos < p->len && p->s[p->pos] == '?') p->pos++; /* lazy: same set of full matches */
        int r = new_node(p, N_REP);
        if (r < 0) return -1;
        p->nodes[r].a = atom;
        p->nodes[r].min = mn;
        p->nodes[r].max = mx;
        atom = r;
        if (p->pos < p->len && (p->s[p->pos] == '*' || p->s[p->pos] == '+' || p->s[p->pos] == '?')) {
            rx_err(p, "bad repetition operator");
            return -1;
        }
    }
    return atom;
}

static int parse_cat(rx_parser *p) {
    int acc = -1;
    while (p->pos < p->len && p->s[p->pos] != '|' && p->s[p->pos] != ')') {
        int e = parse_repeat(p);
        if (e < 0) return -1;
        acc = acc < 0 ? e : binary(p, N_CAT, acc, e);
        if (acc < 0) return -1;
    }
    return acc < 0 ? new_node(p, N_EMPTY) : acc;
}

static int parse_alt(rx_parser *p) {
    int acc = parse_cat(p);
    while (acc >= 0 && p->pos < p->len && p->s[p->pos] == '|') {
        p->pos++;
        int e = parse_cat(p);
        if (e < 0) return -1;
        acc = binary(p, N_ALT, acc, e);
    }
    return acc;
}

/* ---- code generation ---- */
typedef struct rx_gen {
    rx_parser *p;
    rx_inst *prog;
    int n, cap;
} rx_gen;

static int emit(rx_gen *g, rx_inst in) {
    if (g->n >= LT_REGEX_MAX_INST) { rx_err(g->p, "pattern too large after expanding repetitions"); return -1; }
    if (!grow(g->p, (void **)&g->prog, &g->cap, g->n + 1, sizeof *g->prog)) return -1;
    g->prog[g->n] = in;
    return g->n++;
}

/* Emit node k; explicit recursion depth is bounded by the parser's nesting checks plus the
 * CAT/ALT chains, which we walk iteratively on their left spine. */
static bool gen(rx_gen *g, int k, int depth) {
    if (depth > 2000) { rx_err(g->p, "pattern too deeply nested"); return false; }
    const rx_node *nd = &g->p->nodes[k];
    switch (nd->kind) {
    case N_EMPTY: return true;
    case N_LIT: return emit(g, (rx_inst){.op = I_CHAR, .c = nd->c, .icase = nd->icase}) >= 0;
    case N_ANY: return emit(g, (rx_inst){.op = I_ANY, .dotnl = nd->dotnl}) >= 0;
    case N_CLASS: return emit(g, (rx_inst){.op = I_CLASS, .c = nd->c, .icase = nd->icase}) >= 0;
    case N_ASSERT: return emit(g, (rx_inst){.op = I_ASSERT, .c = nd->c}) >= 0;
    case N_CAT: {
        /* Walk the left spine iteratively: CAT(CAT(CAT(a,b),c),d). */
        int spine[32], ns = 0, cur = k;
        while (g->p->nodes[cur].kind == N_CAT && ns < 32) { spine[ns++] = cur; cur = g->p->nodes[cur].a; }
        if (!gen(g, cur, depth + 1)) return false;
        while (ns > 0)
            if (!gen(g, g->p->nodes[spine[--ns]].b, depth + 1)) return false;
        return true;
    }
    case N_ALT: {
        int split = emit(g, (rx_inst){.op = I_SPLIT});
        if (split < 0) return false;
        g->prog[split].x = g->n;
        if (!gen(g, nd->a, depth + 1)) return false;
        int jmp = emit(g, (rx_inst){.op = I_JMP});
        if (jmp < 0) return false;
        g->prog[split].y = g->n;
        if (!gen(g, nd->b, depth + 1)) return false;
        g->prog[jmp].x = g->n;
        return true;
    }
    case N_REP: {
        int child = nd->a, mn = nd->min, mx = nd->max;
        for (int r = 0; r < mn; r++)
            if (!gen(g, child, depth + 1)) return false;
        if (mx < 0) {
            int split = emit(g, (rx_inst){.op = I_SPLIT});
            if (split < 0) return false;
            g->prog[split].x = g->n;
            if (!gen(g, child, depth + 1)) return false;
            if (emit(g, (rx_inst){.op = I_JMP, .x = split}) < 0) return false;
            g->prog[split].y = g->n;
            return true;
        }
        /* Optional copies: each SPLIT's second branch skips to the end, patched once known (its
         * y is -2 until then; nested repetitions patch theirs before returning). */
        int start = g->n;
        for (int r = mn; r < mx; r++) {
            int split = emit(g, (rx_inst){.op = I_SPLIT, .y = -2});
            if (split < 0) return false;
            g->prog[split].x = g->n;
            if (!gen(g, child, depth + 1)) return false;
        }
        for (int q = start; q < g->n; q++)
            if (g->prog[q].op == I_SPLIT && g->prog[q].y == -2) g->prog[q].y = g->n;
        return true;
    }
    default: return false;
    }
}

lt_status lt_regex_compile(lt_ctx *ctx, const char *pattern, size_t len, lt_regex **out) {
    rx_parser p = {.ctx = ctx, .s = (const unsigned char *)pattern, .len = len};
    int root = parse_alt(&p);
    if (root >= 0 && p.pos < p.len) { rx_err(&p, "unmatched )"); root = -1; }
    rx_gen g = {.p = &p};
    if (root >= 0 && gen(&g, root, 0)) emit(&g, (rx_inst){.op = I_MATCH});
    lt_regex *re = NULL;
    if (!p.st) {
        re = lt_calloc(ctx, 1, sizeof *re, "regex");
        if (!re) p.st = LT_ERR_NOMEM;
    }
    lt_mem_free(p.nodes);
    if (p.st) {
        lt_mem_free(g.prog);
        lt_mem_free(p.ranges);
        lt_mem_free(p.classes);
        return p.st ? p.st : LT_ERR_INVALID;
    }
    re->prog = g.prog;
    re->n_prog = g.n;
    re->ranges = p.ranges;
    re->n_ranges = p.n_ranges;
    re->classes = p.classes;
    re->n_classes = p.n_classes;
    *out = re;
    return LT_OK;
}

void lt_regex_free(lt_regex *re) {
    if (!re) return;
    lt_mem_free(re->prog);
    lt_mem_free(re->ranges);
    lt_mem_free(re->classes);
    lt_mem_free(re);
}

/* ---- Pike VM ---- */
static uint32_t fold(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

static bool class_has(const lt_regex *re, const rx_class *cl, uint32_t c) {
    for (int k = 0; k < cl->count; k++) {
        const rx_range *r = &re->ranges[cl->first + k];
        if (c >= r->lo && c <= r->hi) return true;
    }
    return false;
}

static bool inst_matches(const lt_regex *re, const rx_inst *in, uint32_t c) {
    switch (in->op) {
    case I_CHAR: return in->icase ? fold(c) == fold(in->c) : c == in->c;
    case I_ANY: return in->dotnl || c != '\n';
    case I_CLASS: {
        const rx_class *cl = &re->classes[in->c];
        bool has = class_has(re, cl, c);
        if (!has && in->icase) {
            uint32_t lc = fold(c), uc = (c >= 'a' && c <= 'z') ? c - 32 : c;
            has = class_has(re, cl, lc) || class_has(re, cl, uc);
        }
        return has != cl->neg;
    }
    default: return false;
    }
}

typedef struct rx_list {
    int *pcs;
    int n;
} rx_list;

/* Add pc and everything reachable through JMP/SPLIT/ASSERT at this position. */
typedef struct rx_pos {
    bool at_start, at_end;
    uint32_t prev, next; /* code points around the position (valid unless at_start / at_end) */
} rx_pos;

static bool assert_ok(uint32_t kind, const rx_pos *ps) {
    bool pw = !ps->at_start && is_word(ps->prev), nw = !ps->at_end && is_word(ps->next);
    switch (kind) {
    case A_BOT: return ps->at_start;
    case A_EOT: return ps->at_end;
    case A_BOL: return ps->at_start || ps->prev == '\n';
    case A_EOL: return ps->at_end || ps->next == '\n';
    case A_WORDB: return pw != nw;
    default: return pw == nw;
    }
}

static void add_thread(const lt_regex *re, rx_list *l, int pc, uint32_t *mark, uint32_t gen, int *stack,
                       const rx_pos *ps) {
    int sp = 0;
    stack[sp++] = pc;
    while (sp) {
        int q = stack[--sp];
        if (mark[q] == gen) continue;
        mark[q] = gen;
        const rx_inst *in = &re->prog[q];
        switch (in->op) {
        case I_JMP: stack[sp++] = in->x; break;
        case I_SPLIT: stack[sp++] = in->y; stack[sp++] = in->x; break;
        case I_ASSERT:
            if (assert_ok(in->c, ps)) stack[sp++] = q + 1;
            break;
        default: l->pcs[l->n++] = q; break;
        }
    }
}

int lt_regex_full_match(const lt_regex *re, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    int np = re->n_prog;
    int *buf = lt_mem_alloc((size_t)np * 3 * sizeof(int) + (size_t)np * 2 * sizeof(int));
    uint32_t *mark = lt_mem_calloc((size_t)np, sizeof *mark);
    if (!buf || !mark) {
        lt_mem_free(buf);
        lt_mem_free(mark);
        return -1;
    }
    rx_list cl = {buf, 0}, nl = {buf + np, 0};
    int *stack = buf + 2 * np; /* each pc pushed at most twice per closure (SPLIT pushes two) */
    uint32_t gen = 1;
    size_t i = 0, j = 0;                              /* i: current position; j: after `cur` */
    uint32_t cur = len ? utf8_next(s, len, &j) : 0; /* code point at i */
    rx_pos ps = {true, len == 0, 0, cur};
    add_thread(re, &cl, 0, mark, gen, stack, &ps);
    int result = 0;
    while (cl.n > 0) {
        if (i >= len) {
            for (int k = 0; k < cl.n; k++)
                if (re->prog[cl.pcs[k]].op == I_MATCH) result = 1;
            break;
        }
        size_t j2 = j;
        bool at_end = j >= len;
        uint32_t nxt = at_end ? 0 : utf8_next(s, len, &j2);
        gen++;
        nl.n = 0;
        ps = (rx_pos){false, at_end, cur, nxt};
        for (int k = 0; k < cl.n; k++) {
            const rx_inst *in = &re->prog[cl.pcs[k]];
            if (in->op != I_MATCH && inst_matches(re, in, cur)) add_thread(re, &nl, cl.pcs[k] + 1, mark, gen, stack, &ps);
        }
        rx_list t = cl;
        cl = nl;
        nl = t;
        i = j;
        j = j2;
        cur = nxt;
    }
    lt_mem_free(buf);
    lt_mem_free(mark);
    return result;
}
