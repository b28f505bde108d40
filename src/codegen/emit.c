/* emit.c — the one emitter: walks Loop IR and writes C or CUDA kernels as a language table says
 * (module.c assembles them with the prelude into a translation unit).
 *
 * A kernel = comment (origin, static cost, launch shape) + signature + argument unpacking + body.
 * Statements print one per line with 4-space indentation; expressions print with C precedence and
 * only the parentheses they need, so the code reads like what a person would write.
 *
 * Semantics carried out here (the Loop IR's, see loop.h and leval.c): integer DIV truncates, MOD
 * and FMOD are the truncated remainder (x / 0 and x % 0 give 0 through prelude helpers unless the
 * divisor is a constant other than 0 and -1), MIN/MAX propagate NaN, float16/bfloat16 values are
 * computed in float and rounded at stores and casts, float -> int casts truncate and saturate.
 * Loop kinds: a VECTORIZED loop gets `omp simd` only when that is safe (no nested loop or call, every
 * store indexed by the loop variable, a buffer both loaded and stored only at the same index, outer
 * variables only accumulated with + or *); otherwise it is a plain loop that the C compiler may still
 * vectorize. A PARALLEL loop that assigns a variable declared outside it is rejected (a data race).
 * Targets with vector_memory (CUDA) give a VECTORIZED loop a vector path: contiguous, aligned loads
 * and stores as whole 4/8/16-byte accesses into register arrays (see "explicit vector memory").
 * Entry points: lt_emit_function, lt_emit_launch_dims, lt_emit_kernels_ (for module.c).
 */
#include "codegen.h"
#include "emit_impl.h"
#include "loop_scan.h"
#include "../base/strmap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- C operator precedence (smaller binds tighter) ---- */
enum { P_PRIMARY = 1, P_UNARY, P_MUL, P_ADD, P_SHIFT, P_REL, P_EQ, P_BAND, P_BXOR, P_BOR, P_LAND,
       P_LOR, P_COND, P_ANY };

/* ---- the set of identifiers taken (base/strmap.h: each name its own value) ---- */
typedef lt_strmap nameset;

static bool ns_has(const nameset *ns, const char *s) { return lt_strmap_get(ns, s, strlen(s)) != NULL; }
static bool ns_add(nameset *ns, const char *s) { return lt_strmap_put(ns, s, (void *)s); }
static void ns_free(nameset *ns) { lt_strmap_free(ns); }

/* Identifiers a mangled name must not take: keywords and names generated code uses itself. */
static const char *const reserved_words[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "class", "new",
    "delete", "this", "template", "typename", "namespace", "operator", "private", "public",
    "protected", "virtual", "friend", "using", "throw", "try", "catch", "args", "main", "errno",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "size_t", "NULL", "isnan", "isinf", "memcpy", "blockIdx", "threadIdx", "blockDim", "gridDim",
    "asm", "half", "min", "max",
    /* C++ (CUDA is compiled as C++): alternative operator tokens and the other keywords */
    "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq",
    "alignas", "alignof", "char8_t", "char16_t", "char32_t", "concept", "consteval", "constexpr",
    "constinit", "const_cast", "co_await", "co_return", "co_yield", "decltype", "dynamic_cast",
    "explicit", "export", "mutable", "noexcept", "nullptr", "reinterpret_cast", "requires",
    "static_assert", "static_cast", "thread_local", "typeid", "wchar_t", NULL,
};

/* ---- emitter state ---- */
typedef struct em {
    lt_ctx *ctx;
    const lt_lang *L;
    const lt_kernel *k;
    lt_strbuf *o;
    lt_arena names_arena;
    nameset names;
    const char **vname; /* by var id */
    const char **bname; /* by buf id */
    int ind;
    lt_status st;
    int64_t grid[3], block[3]; /* CUDA launch shape of the kernel being emitted */
    int grid_scalar[3];        /* -1, or the run-time scalar the grid axis is (times grid_mult) */
    int64_t grid_mult[3];
    /* vector_memory targets: the register arrays of the VECTORIZED loop being emitted (vector path) */
    const struct vacc *vac;
    int n_vac;
    const lt_lnode *no_vec; /* the VECTORIZED loop being emitted as its plain fallback */
    bool *var_read;         /* by var id: some expression reads it (else its LET is followed by a (void)) */
} em;

static lt_status fail(em *e, lt_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static lt_status fail(em *e, lt_status s, const char *fmt, ...) {
    if (e->st != LT_OK) return e->st;
    char msg[LT_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    e->st = s;
    return lt_error(e->ctx, s, "codegen (%s) kernel %s: %s", e->L->name, e->k ? e->k->name : "?", msg);
}

#define OUT(...) lt_sb_printf(e->o, __VA_ARGS__)
static void put_indent(em *e) { OUT("%*s", 4 * e->ind, ""); }

/* ---- types ---- */
static bool is_narrow_float(lt_dtype dt) { return dt == LT_FLOAT16 || dt == LT_BFLOAT16; }
static bool is_fl(lt_dtype dt) { return dt == LT_FLOAT || dt == LT_DOUBLE || is_narrow_float(dt); }
static bool is_int(lt_dtype dt) { return lt_dtype_is_int(dt); }
static lt_dtype compute_dt(lt_dtype dt) { return is_narrow_float(dt) ? LT_FLOAT : dt; }

/* Helper-name suffix of a (compute) dtype: lt_max_f32, lt_div_i64, ... */
static const char *sfx(lt_dtype dt) {
    switch (compute_dt(dt)) {
    case LT_FLOAT: return "f32";
    case LT_DOUBLE: return "f64";
    case LT_INT8: return "i8";
    case LT_INT16: return "i16";
    case LT_INT32: return "i32";
    case LT_INT64: return "i64";
    case LT_UINT8: case LT_BOOL: return "u8";
    case LT_UINT16: return "u16";
    case LT_UINT32: return "u32";
    case LT_UINT64: return "u64";
    default: return NULL;
    }
}

static bool check_dtype(em *e, lt_dtype dt, const char *what) {
    if ((unsigned)dt < LT_DTYPE_COUNT && e->L->type_names[dt] && sfx(dt)) return true;
    fail(e, LT_ERR_UNSUPPORTED, "%s has dtype %s, which the %s target does not support", what,
         lt_dtype_name(dt), e->L->name);
    return false;
}
static const char *storage_type(em *e, lt_dtype dt) {
    return (unsigned)dt < LT_DTYPE_COUNT && e->L->type_names[dt] ? e->L->type_names[dt] : "void";
}
static const char *compute_type(em *e, lt_dtype dt) {
    if (dt == LT_BOOL) return e->L->bool_compute;
    return storage_type(e, compute_dt(dt));
}
/* 8- and 16-bit integers are promoted to int by C arithmetic: results are cast back to wrap. */
static bool needs_wrap(lt_dtype dt) {
    return dt == LT_INT8 || dt == LT_INT16 || dt == LT_UINT8 || dt == LT_UINT16;
}

/* ---- names ---- */
/* Lower-case names a header the generated code includes may define (as a macro, a type or a function
 * the kernels call): C's math.h, stdio.h, stdlib.h, stdint.h, iso646.h, stdbool.h, stdalign.h,
 * complex.h, sys/sysmacros.h, the compilers' predefined macros, CUDA's built-in names. Upper-case and
 * underscore-led names never reach an identifier (see plain_lower). */
static const char *const taken_lower[] = {
    "unix", "linux", "i386", "errno", "assert", "offsetof", "stdin", "stdout", "stderr", "alloca",
    "complex", "imaginary", "signbit", "fpclassify", "isfinite", "isnormal", "isgreater",
    "isgreaterequal", "isless", "islessequal", "islessgreater", "isunordered", "va_arg", "va_start",
    "va_end", "va_copy", "va_list", "noreturn", "major", "minor", "makedev", "dim3", "printf", "abs",
    "div", "exit", "free", "malloc", "calloc", "realloc", "memset", "memcmp", "memmove", "strlen",
    "fabs", "sin", "cos", "exp", "log", "pow", "sqrt", "tanh", "erf", "floor", "ceil", "rint", "fmod",
    "warpsize", "nv_bfloat16", "half2", "ptrdiff_t", "intptr_t", "uintptr_t", "wint_t", "max_align_t",
    "cudaerror", "float_t", "double_t", "clock", "time", "select", NULL,
};

/* CUDA's vector types: char1 .. ulonglong4, float1 .. double4 */
static bool cuda_vector_type(const char *s) {
    static const char *const base[] = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                                       "longlong", "ulonglong", "float", "double", NULL};
    for (int i = 0; base[i]; i++) {
        size_t n = strlen(base[i]);
        if (strncmp(s, base[i], n) == 0 && s[n] >= '1' && s[n] <= '4' && !s[n + 1]) return true;
    }
    return false;
}

/* [a-z][a-z0-9_]*, at most 32 characters, no "__" and no "lt_" prefix (the prelude's) */
static bool plain_lower(const char *s) {
    size_t n = strlen(s);
    if (!n || n > 32 || !(s[0] >= 'a' && s[0] <= 'z') || strstr(s, "__") || strncmp(s, "lt_", 3) == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) return false;
    return true;
}

static bool taken(em *e, const char *s) {
    for (int i = 0; reserved_words[i]; i++)
        if (strcmp(reserved_words[i], s) == 0) return true;
    for (int i = 0; taken_lower[i]; i++)
        if (strcmp(taken_lower[i], s) == 0) return true;
    if (cuda_vector_type(s)) return true;
    for (int op = 0; op < LT_LOP_COUNT; op++) /* a variable called "sqrtf" would hide sqrtf() */
        if ((e->L->math_f32[op] && strcmp(e->L->math_f32[op], s) == 0) ||
            (e->L->math_f64[op] && strcmp(e->L->math_f64[op], s) == 0) ||
            (e->L->math_f32_fast[op] && strcmp(e->L->math_f32_fast[op], s) == 0))
            return true;
    return false;
}

/* The identifier of a name lathe made (a variable "i.o", a register array "a1_in"): the name with
 * '.' as '_' when that is a plain lower-case identifier no header takes, "<name>_<id>" for a keyword
 * or a taken name, "v<id>" for anything else; a numeric suffix makes it unique in the kernel. */
static const char *mangle(em *e, const char *raw, int id) {
    char buf[48], cand[80];
    snprintf(buf, sizeof buf, "%s", raw ? raw : "");
    for (char *c = buf; *c; c++)
        if (*c == '.') *c = '_';
    if (!plain_lower(buf) || strlen(raw ? raw : "") >= sizeof buf) snprintf(buf, sizeof buf, "v%d", id);
    snprintf(cand, sizeof cand, "%s", buf);
    bool bad = ns_has(&e->names, cand) || taken(e, cand);
    for (int suffix = id; bad; suffix++) {
        snprintf(cand, sizeof cand, "%s_%d", buf, suffix);
        bad = ns_has(&e->names, cand) || taken(e, cand);
    }
    char *keep = lt_arena_strdup(&e->names_arena, cand);
    if (!keep || !ns_add(&e->names, keep)) {
        fail(e, LT_ERR_NOMEM, "out of memory naming variable %d", id);
        return "v";
    }
    return keep;
}

static const char *vname(em *e, const lt_lvar *v) {
    if (!v || v->id < 0 || v->id >= e->k->n_vars) {
        fail(e, LT_ERR_INVALID, "a variable is not one of the kernel's");
        return "v";
    }
    if (!e->vname[v->id]) e->vname[v->id] = mangle(e, v->name, v->id);
    return e->vname[v->id];
}
/* Buffers are named by role, never by their (tensor-derived) name: a<arg> for arguments, s<id> for
 * shared and t<id> for local buffers. */
static const char *bname(em *e, const lt_lbuf *b) {
    if (!b || b->id < 0 || b->id >= e->k->n_bufs) {
        fail(e, LT_ERR_INVALID, "a buffer is not one of the kernel's");
        return "b";
    }
    if (!e->bname[b->id]) {
        char raw[32];
        if (b->arg >= 0) snprintf(raw, sizeof raw, "a%d", b->arg);
        else snprintf(raw, sizeof raw, "%c%d", b->scope == LT_SCOPE_SHARED ? 's' : 't', b->id);
        e->bname[b->id] = mangle(e, raw, b->id);
    }
    return e->bname[b->id];
}

/* A C identifier of at most 128 characters (kernel and function names, which lathe makes) */
static bool is_ident(const char *s) {
    if (!s || !*s || (*s >= '0' && *s <= '9') || strlen(s) > 128) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
    return true;
}

/* A model's text in a comment of the generated code: quoted and escaped (lt_c_escape). */
static void put_text(em *e, const char *text, size_t max_bytes) { lt_c_quote(e->o, text, max_bytes); }

/* ---- literals ---- */
static void fmt_float(char *out, size_t n, double v, bool f32) {
    if (isnan(v)) { snprintf(out, n, "%s", f32 ? "LT_NAN_F32" : "LT_NAN_F64"); return; }
    if (isinf(v)) { snprintf(out, n, "%s%s", v < 0 ? "-" : "", f32 ? "LT_INF_F32" : "LT_INF_F64"); return; }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) { /* the shortest spelling that reads back exactly */
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (f32 ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".en")) strcat(buf, ".0");
    snprintf(out, n, "%s%s", buf, f32 ? "f" : "");
}

/* ---- expressions ---- */
static void ex(em *e, const lt_lnode *n, int maxp);

static int cast_prec(em *e, const lt_lnode *n);
static int prec_of(em *e, const lt_lnode *n) {
    switch (n->kind) {
    case LT_L_INT: return n->ival < 0 ? P_UNARY : P_PRIMARY;
    case LT_L_FLOAT: return (n->fval < 0 || (isinf(n->fval) && n->fval < 0)) ? P_UNARY : P_PRIMARY;
    case LT_L_ADDR: return lt_lis_int(lt_lload_index(n), NULL) && lt_lload_index(n)->ival == 0 ? P_PRIMARY : P_UNARY;
    case LT_L_UNARY:
        if (n->op == LT_LOP_NEG || n->op == LT_LOP_NOT) return P_UNARY;
        if (is_int(n->dtype) && (n->op == LT_LOP_FLOOR || n->op == LT_LOP_CEIL || n->op == LT_LOP_ROUND))
            return prec_of(e, lt_lexpr_a(n));
        return P_PRIMARY;
    case LT_L_BINARY: {
        lt_dtype dt = lt_lexpr_a(n)->dtype;
        bool fl = is_fl(dt);
        switch (n->op) {
        case LT_LOP_ADD: case LT_LOP_SUB: return needs_wrap(n->dtype) ? P_UNARY : P_ADD;
        case LT_LOP_MUL: return needs_wrap(n->dtype) ? P_UNARY : P_MUL;
        case LT_LOP_DIV: case LT_LOP_MOD: case LT_LOP_FMOD: {
            int64_t c;
            if (fl) return n->op == LT_LOP_DIV ? P_MUL : P_PRIMARY;
            return lt_lis_int(lt_lexpr_b(n), &c) && c != 0 && c != -1 ? P_MUL : P_PRIMARY;
        }
        case LT_LOP_AND: return P_LAND;
        case LT_LOP_OR: return P_LOR;
        case LT_LOP_XOR: return P_EQ;
        case LT_LOP_BITAND: return P_BAND;
        case LT_LOP_BITOR: return P_BOR;
        case LT_LOP_BITXOR: return P_BXOR;
        case LT_LOP_LT: case LT_LOP_LE: case LT_LOP_GT: case LT_LOP_GE: return P_REL;
        case LT_LOP_EQ: case LT_LOP_NE: return P_EQ;
        default: return P_PRIMARY;
        }
    }
    case LT_L_SELECT: return P_COND;
    case LT_L_CAST: return cast_prec(e, n);
    default: return P_PRIMARY;
    }
}

/* Name of the function for a math op on a float compute type, or NULL for the prelude helper. */
static const char *math_name(em *e, int op, lt_dtype dt) {
    const lt_lang *L = e->L;
    if (compute_dt(dt) == LT_DOUBLE) return L->math_f64[op];
    if (L->fast_math && L->math_f32_fast[op]) return L->math_f32_fast[op];
    return L->math_f32[op];
}
static void call1(em *e, const char *fn, const lt_lnode *a) {
    OUT("%s(", fn);
    ex(e, a, P_ANY);
    OUT(")");
}
static void call2(em *e, const char *fn, const lt_lnode *a, const lt_lnode *b) {
    OUT("%s(", fn);
    ex(e, a, P_ANY);
    OUT(", ");
    ex(e, b, P_ANY);
    OUT(")");
}
static void helper1(em *e, const char *op, lt_dtype dt, const lt_lnode *a) {
    OUT("lt_%s_%s(", op, sfx(dt));
    ex(e, a, P_ANY);
    OUT(")");
}
/* The multiplier scalar of divisor b (lt_lvar.div_magic): b is a run-time scalar, or one times the
 * factor its multiplier was made for; NULL otherwise. */
static const lt_lvar *div_magic_of(const lt_lnode *b) {
    int64_t g;
    const lt_lvar *v = lt_lvar_scaled(b, &g);
    return v && v->div_magic && v->div_magic_mul == g ? v->div_magic : NULL;
}

static void helper2(em *e, const char *op, lt_dtype dt, const lt_lnode *a, const lt_lnode *b) {
    OUT("lt_%s_%s(", op, sfx(dt));
    ex(e, a, P_ANY);
    OUT(", ");
    ex(e, b, P_ANY);
    OUT(")");
}

static void ex_unary(em *e, const lt_lnode *n) {
    const lt_lnode *a = lt_lexpr_a(n);
    lt_dtype dt = a->dtype;
    int op = n->op;
    if (op == LT_LOP_NEG || op == LT_LOP_NOT) {
        bool logical = op == LT_LOP_NOT && (dt == LT_BOOL || n->dtype == LT_BOOL);
        if (needs_wrap(n->dtype) && !logical) OUT("(%s)", storage_type(e, n->dtype));
        OUT("%s", op == LT_LOP_NEG ? "-" : logical ? "!" : "~");
        ex(e, a, P_PRIMARY); /* -(-1), never --1 */
        return;
    }
    if (!is_fl(dt)) {
        switch (op) {
        case LT_LOP_ABS: helper1(e, "abs", dt, a); return;
        case LT_LOP_SIGN: helper1(e, "sign", dt, a); return;
        case LT_LOP_ISNAN: case LT_LOP_ISINF: OUT("0"); return;
        case LT_LOP_FLOOR: case LT_LOP_CEIL: case LT_LOP_ROUND: ex(e, a, P_ANY); return;
        default:
            fail(e, LT_ERR_UNSUPPORTED, "%s of an integer (%s) value: cast it to a float type first",
                 lt_lop_name(op), lt_dtype_name(dt));
            return;
        }
    }
    const char *fn = math_name(e, op, dt);
    if (fn && (op == LT_LOP_ISNAN || op == LT_LOP_ISINF)) { /* C's isinf may say -1 for -inf: 0 or 1 */
        OUT("(");
        call1(e, fn, a);
        OUT(" != 0)");
        return;
    }
    if (fn) { call1(e, fn, a); return; }
    switch (op) {
    case LT_LOP_RSQRT: case LT_LOP_SIGMOID: case LT_LOP_RECIP: case LT_LOP_SIGN: case LT_LOP_ABS:
        helper1(e, lt_lop_name(op), dt, a);
        return;
    default:
        fail(e, LT_ERR_UNSUPPORTED, "the %s target has no function for %s on %s", e->L->name,
             lt_lop_name(op), lt_dtype_name(dt));
    }
}

static void infix(em *e, const lt_lnode *n, const char *sym, int p) {
    ex(e, lt_lexpr_a(n), p);
    OUT(" %s ", sym);
    ex(e, lt_lexpr_b(n), p - 1);
}

static void ex_binary(em *e, const lt_lnode *n) {
    const lt_lnode *a = lt_lexpr_a(n), *b = lt_lexpr_b(n);
    lt_dtype dt = a->dtype;
    bool fl = is_fl(dt);
    int64_t c;
    switch (n->op) {
    case LT_LOP_ADD: case LT_LOP_SUB: case LT_LOP_MUL: {
        const char *sym = n->op == LT_LOP_ADD ? "+" : n->op == LT_LOP_SUB ? "-" : "*";
        int p = n->op == LT_LOP_MUL ? P_MUL : P_ADD;
        if (needs_wrap(n->dtype)) {
            OUT("(%s)(", storage_type(e, n->dtype));
            infix(e, n, sym, p);
            OUT(")");
        } else {
            infix(e, n, sym, p);
        }
        return;
    }
    case LT_LOP_DIV: case LT_LOP_MOD: case LT_LOP_FMOD:
        if (fl) {
            if (n->op == LT_LOP_DIV) { infix(e, n, "/", P_MUL); return; }
            const char *fn = math_name(e, LT_LOP_FMOD, dt);
            if (fn) call2(e, fn, a, b);
            else helper2(e, "fmod", dt, a, b);
            return;
        }
        if (lt_lis_int(b, &c) && c != 0 && c != -1) {
            infix(e, n, n->op == LT_LOP_DIV ? "/" : "%", P_MUL);
            return;
        }
        const lt_lvar *mag = dt == LT_INT64 ? div_magic_of(b) : NULL;
        if (mag) { /* by multiplying (prelude lt_divm_i64) */
            OUT("lt_%sm_i64(", n->op == LT_LOP_DIV ? "div" : "fmod");
            ex(e, a, P_ANY);
            OUT(", ");
            ex(e, b, P_ANY);
            OUT(", (uint64_t)%s)", vname(e, mag));
            return;
        }
        helper2(e, n->op == LT_LOP_DIV ? "div" : "fmod", dt, a, b);
        return;
    case LT_LOP_MIN: case LT_LOP_MAX: helper2(e, lt_lop_name(n->op), dt, a, b); return;
    case LT_LOP_POW: {
        const char *fn = fl ? math_name(e, LT_LOP_POW, dt) : NULL;
        if (fn) call2(e, fn, a, b);
        else helper2(e, "pow", dt, a, b);
        return;
    }
    case LT_LOP_AND: infix(e, n, "&&", P_LAND); return;
    case LT_LOP_OR: infix(e, n, "||", P_LOR); return;
    case LT_LOP_XOR: infix(e, n, "!=", P_EQ); return; /* both sides are 0/1 */
    case LT_LOP_BITAND: infix(e, n, "&", P_BAND); return;
    case LT_LOP_BITOR: infix(e, n, "|", P_BOR); return;
    case LT_LOP_BITXOR: infix(e, n, "^", P_BXOR); return;
    case LT_LOP_SHL: case LT_LOP_SHR:
        if (fl) {
            fail(e, LT_ERR_UNSUPPORTED, "%s of floating values", lt_lop_name(n->op));
            return;
        }
        helper2(e, lt_lop_name(n->op), dt, a, b);
        return;
    case LT_LOP_LT: infix(e, n, "<", P_REL); return;
    case LT_LOP_LE: infix(e, n, "<=", P_REL); return;
    case LT_LOP_GT: infix(e, n, ">", P_REL); return;
    case LT_LOP_GE: infix(e, n, ">=", P_REL); return;
    case LT_LOP_EQ: infix(e, n, "==", P_EQ); return;
    case LT_LOP_NE: infix(e, n, "!=", P_EQ); return;
    default: fail(e, LT_ERR_INVALID, "unknown binary operator %d", n->op);
    }
}

/* Casts: how a value of type src becomes a value of type dst in compute form. */
typedef enum { CAST_NONE, CAST_C, CAST_FN, CAST_BOOL } cast_form;
static cast_form cast_kind(lt_dtype src, lt_dtype dst, const char **fn) {
    *fn = NULL;
    if (src == dst || (compute_dt(src) == LT_FLOAT && dst == LT_FLOAT)) return CAST_NONE;
    if (dst == LT_BOOL) return CAST_BOOL;
    if (is_narrow_float(dst)) {
        bool h = dst == LT_FLOAT16;
        if (compute_dt(src) == LT_FLOAT) *fn = h ? "lt_round_h" : "lt_round_bf";
        else *fn = h ? "lt_h2f(lt_d2h" : "lt_bf2f(lt_d2bf"; /* closed with "))" by the caller */
        return CAST_FN;
    }
    if (is_int(dst) && is_fl(src)) {
        *fn = dst == LT_UINT64 ? "lt_f2u64" : "lt_f2i64";
        return CAST_FN;
    }
    return CAST_C;
}
static int cast_prec(em *e, const lt_lnode *n) {
    const char *fn;
    switch (cast_kind(lt_lexpr_a(n)->dtype, n->dtype, &fn)) {
    case CAST_NONE: return prec_of(e, lt_lexpr_a(n));
    case CAST_C: return P_UNARY;
    case CAST_FN:
        return is_int(n->dtype) && n->dtype != LT_INT64 && n->dtype != LT_UINT64 ? P_UNARY : P_PRIMARY;
    default: return P_PRIMARY;
    }
}
static void ex_cast(em *e, const lt_lnode *n, int maxp) {
    const lt_lnode *a = lt_lexpr_a(n);
    lt_dtype src = a->dtype, dst = n->dtype;
    const char *fn;
    switch (cast_kind(src, dst, &fn)) {
    case CAST_NONE: ex(e, a, maxp); return;
    case CAST_BOOL: OUT("("); ex(e, a, P_EQ - 1); OUT(" != 0)"); return;
    case CAST_C: OUT("(%s)", compute_type(e, dst)); ex(e, a, P_UNARY); return;
    case CAST_FN:
        if (is_int(dst) && dst != LT_INT64 && dst != LT_UINT64) OUT("(%s)", storage_type(e, dst));
        OUT("%s(", fn);
        if (strchr(fn, '(')) { /* double path: lt_h2f(lt_d2h((double)x)) */
            if (src != LT_DOUBLE) OUT("(double)");
            ex(e, a, src != LT_DOUBLE ? P_UNARY : P_ANY);
            OUT("))");
        } else {
            if (is_narrow_float(dst) && compute_dt(src) != LT_FLOAT) OUT("(float)");
            ex(e, a, P_ANY);
            OUT(")");
        }
        return;
    }
}

static const struct vacc *vacc_find(const em *e, const lt_lbuf *b, const lt_lnode *index, bool store);
static const char *vacc_reg(const struct vacc *a);

static void ex_load(em *e, const lt_lnode *n) {
    const struct vacc *va = vacc_find(e, n->buf, lt_lload_index(n), false);
    if (va) { /* a lane of a vector loaded before the lane loop */
        if (n->buf->dtype == LT_FLOAT16) OUT("lt_h2f(");
        else if (n->buf->dtype == LT_BFLOAT16) OUT("lt_bf2f(");
        OUT("%s", vacc_reg(va));
        if (is_narrow_float(n->buf->dtype)) OUT(")");
        return;
    }
    const char *name = bname(e, n->buf);
    if (n->buf->dtype == LT_FLOAT16) OUT("lt_h2f(");
    else if (n->buf->dtype == LT_BFLOAT16) OUT("lt_bf2f(");
    OUT("%s[", name);
    ex(e, lt_lload_index(n), P_ANY);
    OUT("]");
    if (is_narrow_float(n->buf->dtype)) OUT(")");
}

static void ex(em *e, const lt_lnode *n, int maxp) {
    if (e->st != LT_OK) return;
    if (!n) { fail(e, LT_ERR_INVALID, "missing expression"); return; }
    if (lt_lnode_info_get(n->kind)->is_stmt) {
        fail(e, LT_ERR_INVALID, "%s statement used as an expression", lt_lnode_info_get(n->kind)->name);
        return;
    }
    if (n->lanes > 1) {
        fail(e, LT_ERR_UNSUPPORTED, "%s node with %d lanes: vector expressions are not emitted; mark the "
             "loop vectorized instead", lt_lnode_info_get(n->kind)->name, n->lanes);
        return;
    }
    if (n->kind != LT_L_CALL && n->kind != LT_L_ADDR && !check_dtype(e, n->dtype, lt_lnode_info_get(n->kind)->name))
        return;
    int p = prec_of(e, n);
    bool paren = p > maxp;
    if (paren) OUT("(");
    switch (n->kind) {
    case LT_L_INT:
        if (n->ival == INT64_MIN) OUT("(-9223372036854775807 - 1)");
        else if (n->dtype == LT_UINT64 || n->dtype == LT_UINT32) OUT("%lluu", (unsigned long long)n->ival);
        else OUT("%lld", (long long)n->ival);
        break;
    case LT_L_FLOAT: {
        char buf[64];
        double v = n->fval;
        if (n->dtype == LT_FLOAT16) v = lt_f16_to_f32(lt_f64_to_f16(v));
        else if (n->dtype == LT_BFLOAT16) v = lt_bf16_to_f32(lt_f32_to_bf16((float)v));
        if (is_int(n->dtype) || n->dtype == LT_BOOL) snprintf(buf, sizeof buf, "%lld", (long long)v);
        else fmt_float(buf, sizeof buf, v, compute_dt(n->dtype) == LT_FLOAT);
        OUT("%s", buf);
        break;
    }
    case LT_L_VAR: OUT("%s", vname(e, n->var)); break;
    case LT_L_LOAD: ex_load(e, n); break;
    case LT_L_ADDR:
        if (lt_lis_int(lt_lload_index(n), NULL) && lt_lload_index(n)->ival == 0) {
            OUT("%s", bname(e, n->buf));
        } else {
            OUT("&%s[", bname(e, n->buf));
            ex(e, lt_lload_index(n), P_ANY);
            OUT("]");
        }
        break;
    case LT_L_UNARY: ex_unary(e, n); break;
    case LT_L_BINARY: ex_binary(e, n); break;
    case LT_L_SELECT:
        ex(e, lt_lsel_cond(n), P_COND - 1);
        OUT(" ? ");
        ex(e, lt_lsel_then(n), P_COND - 1);
        OUT(" : ");
        ex(e, lt_lsel_else(n), P_COND);
        break;
    case LT_L_CAST: ex_cast(e, n, paren ? P_ANY : maxp); break;
    case LT_L_CALL:
        if (!is_ident(n->name)) {
            fail(e, LT_ERR_INVALID, "a call to a function whose name is not a C identifier");
            break;
        }
        OUT("%s(", n->name);
        for (int i = 0; i < n->n; i++) {
            if (i) OUT(", ");
            ex(e, n->kids[i], P_ANY);
        }
        OUT(")");
        break;
    default: fail(e, LT_ERR_INVALID, "unexpected %s in an expression", lt_lnode_info_get(n->kind)->name);
    }
    if (paren) OUT(")");
}

/* Scan a loop (loop_scan.h); false, with the error set, when out of memory. */
static bool scan_loop(em *e, const lt_lnode *loop, loop_scan *s) {
    if (lt_loop_scan(e->k->n_vars, loop, s)) return true;
    fail(e, LT_ERR_NOMEM, "out of memory analysing loop %s", loop->var->name);
    return false;
}

/* ---- statements ---- */
static void st(em *e, const lt_lnode *n);

static void block(em *e, const lt_lnode *body) {
    e->ind++;
    st(e, body);
    e->ind--;
}

/* ---- explicit vector memory accesses (targets with vector_memory: CUDA) ----
 * A VECTORIZED loop `for v in [0, V)` whose body is a chain of guards (IF without else) around
 * statements with no loop gets a vector path. Every load and store of a global buffer whose index
 * is base + v, with base a multiple of V (so the V elements are contiguous and aligned to V
 * elements), at a place the lanes always reach (not under an IF, a select branch or the right side
 * of && / ||), becomes one V-element register array filled (loads, before the lane loop) or written
 * back (stores, after it) in pieces of 4, 8 or 16 bytes (LT_COPY16/8/4); the lanes then run
 * unrolled on the registers, and other accesses stay per lane. Guards must be uniform (free of v)
 * or `base + v < bound` (true for every lane when true for lane V-1). A buffer the body stores must
 * be loaded and stored at one index only, and is redirected only when every store of it is
 * unconditional, so the order of lanes cannot matter. The path runs when the guards hold for all
 * lanes and the buffers' addresses are aligned (checked at run time); otherwise the plain loop runs.
 * Index math is assumed non-negative (flattened element offsets), as everywhere in Loop IR. */
#define VACC_MAX 16

typedef struct vacc {
    const lt_lbuf *buf;
    const lt_lnode *index; /* as written in the loop body */
    bool store;
    const char *reg;       /* register array name */
    const char *lane;      /* the lane variable's name */
    char text[200];        /* "reg[lane]" */
} vacc;

typedef struct vscan {
    const lt_lvar *v;
    int64_t V;
    const bool *inner; /* by var id: declared inside the loop body */
} vscan;

static const vacc *vacc_find(const em *e, const lt_lbuf *b, const lt_lnode *index, bool store) {
    for (int i = 0; i < e->n_vac; i++)
        if (e->vac[i].buf == b && e->vac[i].store == store && lt_lequal(e->vac[i].index, index)) return &e->vac[i];
    return NULL;
}
static const char *vacc_reg(const vacc *a) { return a->text; }

static bool vmult(const vscan *s, const lt_lnode *n);

/* Coefficient of v in the index expression n: 0 (free of v), 1 (base + v), -1 (anything else). */
static int vcoef(const vscan *s, const lt_lnode *n) {
    int64_t c;
    switch (n->kind) {
    case LT_L_INT: case LT_L_FLOAT: return 0;
    case LT_L_VAR: return n->var == s->v ? 1 : s->inner[n->var->id] ? -1 : 0;
    case LT_L_BINARY: {
        int a = vcoef(s, lt_lexpr_a(n)), b = vcoef(s, lt_lexpr_b(n));
        if (a < 0 || b < 0) return -1;
        if (!a && !b) return 0;
        if (!is_int(n->dtype)) return -1;
        switch (n->op) {
        case LT_LOP_ADD: return a + b == 1 ? 1 : -1;
        case LT_LOP_SUB: return b == 0 ? a : -1;
        case LT_LOP_MUL:
            return (a && lt_lis_int(lt_lexpr_b(n), &c) && c == 1) || (b && lt_lis_int(lt_lexpr_a(n), &c) && c == 1) ? 1 : -1;
        case LT_LOP_DIV: /* (mV + v) / (kV) == mV / (kV) for 0 <= v < V */
            return b == 0 && lt_lis_int(lt_lexpr_b(n), &c) && c > 0 && c % s->V == 0 && vmult(s, lt_lexpr_a(n)) ? 0 : -1;
        case LT_LOP_MOD: /* (mV + v) % (kV) == (mV) % (kV) + v */
            return b == 0 && lt_lis_int(lt_lexpr_b(n), &c) && c > 0 && c % s->V == 0 && vmult(s, lt_lexpr_a(n)) ? 1 : -1;
        default: return -1;
        }
    }
    default:
        for (int i = 0; i < n->n; i++)
            if (vcoef(s, n->kids[i]) != 0) return -1;
        return 0;
    }
}

/* Is the value of n at v = 0 a multiple of V? (false when unknown) */
static bool vmult(const vscan *s, const lt_lnode *n) {
    int64_t c;
    switch (n->kind) {
    case LT_L_INT: return n->ival % s->V == 0;
    case LT_L_VAR: return n->var == s->v;
    case LT_L_BINARY:
        if (!is_int(n->dtype)) return false;
        switch (n->op) {
        case LT_LOP_ADD: case LT_LOP_SUB: return vmult(s, lt_lexpr_a(n)) && vmult(s, lt_lexpr_b(n));
        case LT_LOP_MUL: return vmult(s, lt_lexpr_a(n)) || vmult(s, lt_lexpr_b(n));
        case LT_LOP_MOD: return lt_lis_int(lt_lexpr_b(n), &c) && c > 0 && c % s->V == 0 && vmult(s, lt_lexpr_a(n));
        default: return false;
        }
    default: return false;
    }
}

/* Bytes of one vector access of buffer b, or 0 when b cannot take one. */
static int64_t vbytes(const vscan *s, const lt_lbuf *b) {
    int64_t bytes = s->V * lt_dtype_size(b->dtype);
    if (b->scope != LT_SCOPE_GLOBAL || b->arg < 0 || bytes < 4 || bytes > 64 || (bytes & (bytes - 1))) return 0;
    return bytes;
}
static bool vaccess(const vscan *s, const lt_lbuf *b, const lt_lnode *index) {
    return vbytes(s, b) && vcoef(s, index) == 1 && vmult(s, index);
}

typedef struct vplan {
    vscan s;
    vacc acc[VACC_MAX];
    int n;
    bool reject;
    /* stored buffers: their one index, and whether some store of them is conditional */
    const lt_lbuf *sbuf[VACC_MAX];
    const lt_lnode *sidx[VACC_MAX];
    bool scond[VACC_MAX];
    int ns;
} vplan;

static void vmark_inner(const lt_lnode *n, bool *inner) {
    if (!n) return;
    if ((n->kind == LT_L_LET || n->kind == LT_L_FOR) && n->var) inner[n->var->id] = true;
    for (int i = 0; i < n->n; i++) vmark_inner(n->kids[i], inner);
}

/* Stores of the body: one index per buffer (else reject), conditional or not. */
static void vstores(vplan *p, const lt_lnode *n, bool cond) {
    if (!n || p->reject) return;
    if (n->kind == LT_L_FOR || n->kind == LT_L_ALLOC) { p->reject = true; return; }
    if (n->kind == LT_L_STORE) {
        int i = 0;
        while (i < p->ns && p->sbuf[i] != n->buf) i++;
        if (i == p->ns) {
            if (p->ns == VACC_MAX) { p->reject = true; return; }
            p->sbuf[i] = n->buf, p->sidx[i] = lt_lstore_index(n), p->scond[i] = cond, p->ns++;
        } else if (!lt_lequal(p->sidx[i], lt_lstore_index(n))) {
            p->reject = true;
            return;
        }
        p->scond[i] |= cond;
    }
    if (n->kind == LT_L_IF) {
        vstores(p, lt_lif_cond(n), cond);
        for (int i = 1; i < n->n; i++) vstores(p, n->kids[i], true);
        return;
    }
    for (int i = 0; i < n->n; i++) vstores(p, n->kids[i], cond);
}

static void vadd(vplan *p, const lt_lbuf *b, const lt_lnode *index, bool store) {
    for (int i = 0; i < p->n; i++)
        if (p->acc[i].buf == b && p->acc[i].store == store && lt_lequal(p->acc[i].index, index)) return;
    if (p->n == VACC_MAX) return; /* the rest stay per lane */
    vacc *a = &p->acc[p->n++];
    memset(a, 0, sizeof *a);
    a->buf = b, a->index = index, a->store = store;
}

/* Loads (and unconditional stores) that become vector accesses. */
static void vloads(vplan *p, const lt_lnode *n, bool cond) {
    if (!n || p->reject) return;
    if (n->kind == LT_L_LOAD) {
        for (int i = 0; i < p->ns; i++)
            if (p->sbuf[i] == n->buf && !lt_lequal(p->sidx[i], lt_lload_index(n))) { p->reject = true; return; }
        if (!cond && vaccess(&p->s, n->buf, lt_lload_index(n))) vadd(p, n->buf, lt_lload_index(n), false);
    }
    if (n->kind == LT_L_STORE && !cond && vaccess(&p->s, n->buf, lt_lstore_index(n))) {
        int i = 0;
        while (i < p->ns && p->sbuf[i] != n->buf) i++;
        if (i < p->ns && !p->scond[i]) vadd(p, n->buf, lt_lstore_index(n), true);
    }
    bool branchy = n->kind == LT_L_IF || n->kind == LT_L_SELECT ||
                   (n->kind == LT_L_BINARY && (n->op == LT_LOP_AND || n->op == LT_LOP_OR));
    for (int i = 0; i < n->n; i++) vloads(p, n->kids[i], cond || (branchy && i > 0));
}

static lt_lnode *vsub(em *e, const lt_lnode *n, const lt_lvar *v, int64_t val) {
    lt_kernel *k = (lt_kernel *)e->k; /* new index nodes live in the kernel's arena */
    lt_lnode *r = lt_lsubstitute(k, (lt_lnode *)n, v, lt_l_int(k, val));
    return r ? lt_lsimplify(k, r) : NULL;
}

static void st_for(em *e, const lt_lnode *n);

/* The copies of one vector access: LT_COPYn(&reg[j], &buf[base + j]) for each piece. */
static void vcopies(em *e, const vplan *p, const vacc *a, const lt_lnode *base) {
    int64_t bytes = vbytes(&p->s, a->buf), piece = bytes < 16 ? bytes : 16;
    int64_t per = piece / lt_dtype_size(a->buf->dtype);
    lt_kernel *k = (lt_kernel *)e->k;
    for (int64_t j = 0; j * per < p->s.V && e->st == LT_OK; j++) {
        lt_lnode *at = j ? lt_lsimplify(k, lt_l_add(k, (lt_lnode *)base, lt_l_int(k, j * per))) : (lt_lnode *)base;
        if (!at) { fail(e, LT_ERR_NOMEM, "out of memory"); return; }
        put_indent(e);
        OUT("LT_COPY%lld(", (long long)piece);
        if (a->store) {
            OUT("&%s[", bname(e, a->buf));
            ex(e, at, P_ANY);
            OUT("], &%s[%lld]);\n", a->reg, (long long)(j * per));
        } else {
            OUT("&%s[%lld], &%s[", a->reg, (long long)(j * per), bname(e, a->buf));
            ex(e, at, P_ANY);
            OUT("]);\n");
        }
    }
}

/* Emit the vector path of VECTORIZED loop n with its plain loop as the fallback; false when the
 * loop does not qualify (nothing written). */
static bool st_for_vector(em *e, const lt_lnode *n) {
    int64_t lo, V;
    if (e->vac || !lt_lis_int(lt_lfor_min(n), &lo) || lo != 0 || !lt_lis_int(lt_lfor_extent(n), &V) || V < 2 || V > 64) return false;
    /* peel the guards */
    const lt_lnode *guards[16], *body = lt_lfor_body(n);
    int ng = 0;
    for (;;) {
        while (body->kind == LT_L_SEQ && body->n == 1) body = lt_lseq_stmt(body, 0);
        if (body->kind != LT_L_IF || (body->n > 2 && lt_lif_else(body) && !lt_lis_empty(lt_lif_else(body))) || ng == 16) break;
        guards[ng++] = lt_lif_cond(body);
        body = lt_lif_then(body);
    }
    bool *inner = lt_mem_calloc((size_t)e->k->n_vars + 1, sizeof *inner);
    vplan *p = lt_mem_calloc(1, sizeof *p);
    lt_lnode **gx = lt_mem_calloc((size_t)ng + 1, sizeof *gx);
    bool done = false;
    if (!inner || !p || !gx) { fail(e, LT_ERR_NOMEM, "out of memory analysing loop %s", n->var->name); done = true; goto out; }
    vmark_inner(body, inner);
    p->s = (vscan){n->var, V, inner};
    for (int i = 0; i < ng && !p->reject; i++) {
        const lt_lnode *c = guards[i];
        int cc = vcoef(&p->s, c);
        if (cc == 0) gx[i] = (lt_lnode *)c;
        else if (c->kind == LT_L_BINARY && (c->op == LT_LOP_LT || c->op == LT_LOP_LE) &&
                 vcoef(&p->s, lt_lexpr_a(c)) == 1 && vcoef(&p->s, lt_lexpr_b(c)) == 0)
            gx[i] = vsub(e, c, n->var, V - 1); /* lane V-1 in bounds: every lane is */
        else p->reject = true;
        if (!p->reject && !gx[i]) { fail(e, LT_ERR_NOMEM, "out of memory"); done = true; goto out; }
    }
    vstores(p, body, false);
    vloads(p, body, false);
    if (p->reject || p->n == 0) goto out;
    done = true;
    const char *lane = vname(e, n->var);
    for (int i = 0; i < p->n; i++) {
        char raw[96];
        snprintf(raw, sizeof raw, "%s_%s", bname(e, p->acc[i].buf), p->acc[i].store ? "out" : "in");
        p->acc[i].reg = mangle(e, raw, 0);
        p->acc[i].lane = lane;
        snprintf(p->acc[i].text, sizeof p->acc[i].text, "%s[%s]", p->acc[i].reg, lane);
    }
    /* condition: aligned buffers, guards true for every lane */
    put_indent(e);
    OUT("if (");
    bool first = true;
    for (int i = 0; i < p->n; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++) seen |= p->acc[j].buf == p->acc[i].buf;
        if (seen) continue;
        int64_t bytes = vbytes(&p->s, p->acc[i].buf);
        OUT("%sLT_ALIGNED(%s, %lld)", first ? "" : " && ", bname(e, p->acc[i].buf), (long long)(bytes < 16 ? bytes : 16));
        first = false;
    }
    for (int i = 0; i < ng; i++) {
        OUT(" && ");
        ex(e, gx[i], P_LAND - 1);
    }
    OUT(") { /* vectorized %s: %lld lanes, whole-vector loads and stores */\n", lane, (long long)V);
    e->ind++;
    for (int i = 0; i < p->n && e->st == LT_OK; i++) {
        put_indent(e);
        OUT("LT_VREG(%s, %s, %lld);\n", storage_type(e, p->acc[i].buf->dtype), p->acc[i].reg, (long long)V);
        if (p->acc[i].store) continue;
        lt_lnode *base = vsub(e, p->acc[i].index, n->var, 0);
        if (!base) { fail(e, LT_ERR_NOMEM, "out of memory"); goto out; }
        vcopies(e, p, &p->acc[i], base);
    }
    if (e->L->unroll_pragma) {
        put_indent(e);
        OUT(e->L->unroll_pragma, (int)V);
        OUT("\n");
    }
    put_indent(e);
    OUT("for (%s %s = 0; %s < %lld; %s++) {\n", compute_type(e, n->var->dtype), lane, lane, (long long)V, lane);
    e->vac = p->acc;
    e->n_vac = p->n;
    block(e, body);
    e->vac = NULL;
    e->n_vac = 0;
    put_indent(e);
    OUT("}\n");
    for (int i = 0; i < p->n && e->st == LT_OK; i++) {
        if (!p->acc[i].store) continue;
        lt_lnode *base = vsub(e, p->acc[i].index, n->var, 0);
        if (!base) { fail(e, LT_ERR_NOMEM, "out of memory"); goto out; }
        vcopies(e, p, &p->acc[i], base);
    }
    e->ind--;
    put_indent(e);
    OUT("} else {\n");
    e->ind++;
    const lt_lnode *saved = e->no_vec;
    e->no_vec = n;
    st_for(e, n);
    e->no_vec = saved;
    e->ind--;
    put_indent(e);
    OUT("}\n");
out:
    lt_mem_free(inner);
    lt_mem_free(p);
    lt_mem_free(gx);
    return done;
}

/* The first loop of a loop body (through SEQs: a peeled loop's main part), NULL when none leads it. */
static const lt_lnode *first_loop(const lt_lnode *body) {
    while (body && body->kind == LT_L_SEQ && body->n > 0) body = lt_lseq_stmt(body, 0);
    return body && body->kind == LT_L_FOR ? body : NULL;
}

/* " if(W >= min)" after a PARALLEL loop's pragma (ival: the minimum work): W is the product of the
 * extents of n and of the first loop inside at each level, run-time scalars for a shape-generic
 * kernel, so one code runs small shapes on one thread and large ones on all. */
static void parallel_if(em *e, const lt_lnode *n) {
    OUT(" if(");
    for (const lt_lnode *f = n; f; f = first_loop(lt_lfor_body(f))) {
        if (f != n) OUT(" * ");
        OUT("(int64_t)");
        ex(e, lt_lfor_extent(f), P_UNARY);
    }
    OUT(" >= %lld)", (long long)n->ival);
}

static void st_for(em *e, const lt_lnode *n) {
    const char *v = vname(e, n->var);
    const lt_lnode *lo = lt_lfor_min(n), *ext = lt_lfor_extent(n);
    int64_t clo = 0, cext = 0;
    bool klo = lt_lis_int(lo, &clo), kext = lt_lis_int(ext, &cext);
    const char *vt = compute_type(e, n->var->dtype);
    lt_loop_kind kind = (lt_loop_kind)n->op;

    if (kind == LT_LOOP_GPU_BLOCK || kind == LT_LOOP_GPU_THREAD) {
        int axis = (int)n->ival;
        const char *const *idx = kind == LT_LOOP_GPU_BLOCK ? e->L->block_index : e->L->thread_index;
        if (axis < 0 || axis > 2 || !idx[axis]) {
            fail(e, LT_ERR_UNSUPPORTED, "loop %s is bound to a GPU %s (axis %d), which the %s target cannot run",
                 n->var->name, kind == LT_LOOP_GPU_BLOCK ? "block" : "thread", axis, e->L->name);
            return;
        }
        int64_t dim = kind == LT_LOOP_GPU_BLOCK ? e->grid[axis] : e->block[axis];
        put_indent(e);
        OUT("{ /* %s %s */\n", lt_loop_kind_name(kind), v);
        e->ind++;
        put_indent(e);
        OUT("const %s %s = (%s)%s", vt, v, vt, idx[axis]);
        if (!klo || clo) { OUT(" + "); ex(e, lo, P_ADD - 1); }
        OUT(";\n");
        if (!kext || cext != dim) { /* a shorter sibling loop on the same axis */
            put_indent(e);
            OUT("if (%s < ", v);
            if (klo && kext) OUT("%lld", (long long)(clo + cext));
            else { ex(e, lo, P_ADD); OUT(" + "); ex(e, ext, P_ADD - 1); }
            OUT(") {\n");
            block(e, lt_lfor_body(n));
            put_indent(e);
            OUT("}\n");
        } else {
            st(e, lt_lfor_body(n));
        }
        e->ind--;
        put_indent(e);
        OUT("}\n");
        return;
    }

    if (kind == LT_LOOP_VECTORIZED && e->L->vector_memory && e->no_vec != n && st_for_vector(e, n)) return;

    char pragma[256] = "";
    if (kind == LT_LOOP_PARALLEL) {
        if (!e->L->parallel_pragma) {
            fail(e, LT_ERR_UNSUPPORTED, "parallel loop %s: the %s target has no CPU threads (bind it to GPU "
                 "blocks or threads)", n->var->name, e->L->name);
            return;
        }
        loop_scan s;
        if (!scan_loop(e, n, &s)) return;
        if (s.n_outer) {
            fail(e, LT_ERR_INVALID, "parallel loop %s assigns %s, a variable declared outside it: the threads "
                 "would race (make it a local of the loop body or parallelize an outer loop)",
                 n->var->name, s.outer[0]->name);
            return;
        }
        snprintf(pragma, sizeof pragma, "%s", e->L->parallel_pragma);
    } else if (kind == LT_LOOP_VECTORIZED && e->L->simd_pragma) {
        loop_scan s;
        if (!scan_loop(e, n, &s)) return;
        bool ok = !s.nested && !s.call && !s.store_invariant && !s.dependence;
        for (int i = 0; i < s.n_outer && ok; i++) ok = s.red_op[i] != NULL;
        if (ok && s.n_outer > 0) {
            /* one reduction clause per variable, all on one line */
            size_t len = 0;
            for (int i = 0; i < s.n_outer; i++) {
                char one[160];
                snprintf(one, sizeof one, e->L->simd_reduction_pragma, s.red_op[i], vname(e, s.outer[i]));
                if (i == 0) len = (size_t)snprintf(pragma, sizeof pragma, "%s", one);
                else if (len < sizeof pragma) {
                    const char *clause = strstr(one, "reduction(");
                    len += (size_t)snprintf(pragma + len, sizeof pragma - len, " %s", clause ? clause : "");
                }
            }
        } else if (ok) {
            snprintf(pragma, sizeof pragma, "%s", e->L->simd_pragma);
        } else {
            put_indent(e);
            OUT("/* vectorized loop %s: left to the compiler (%s) */\n", v,
                s.nested ? "nested loop" : s.call ? "call in body" : s.store_invariant ? "store not indexed by the loop"
                : s.dependence ? "a buffer is loaded and stored at different indices" : "outer variable not a sum");
        }
    } else if (kind == LT_LOOP_UNROLLED && e->L->unroll_pragma) {
        int64_t f = n->ival > 0 ? n->ival : kext ? cext : 8;
        if (f > 1024) f = 1024;
        if (f > 1) snprintf(pragma, sizeof pragma, e->L->unroll_pragma, (int)f);
    } else if (kind == LT_LOOP_VECTORIZED && e->L->unroll_pragma && kext && cext <= 64) {
        snprintf(pragma, sizeof pragma, e->L->unroll_pragma, (int)cext);
    }
    if (pragma[0]) {
        put_indent(e);
        OUT("%s", pragma);
        if (kind == LT_LOOP_PARALLEL && n->ival > 0) parallel_if(e, n);
        OUT("\n");
    }
    put_indent(e);
    OUT("for (%s %s = ", vt, v);
    ex(e, lo, P_ANY);
    OUT("; %s < ", v);
    if (klo && kext) OUT("%lld", (long long)(clo + cext));
    else if (klo && clo == 0) ex(e, ext, P_REL - 1);
    else { ex(e, lo, P_ADD); OUT(" + "); ex(e, ext, P_ADD - 1); }
    OUT("; %s++) {\n", v);
    block(e, lt_lfor_body(n));
    put_indent(e);
    OUT("}\n");
}

static void st_store(em *e, const lt_lnode *n) {
    const lt_lnode *idx = lt_lstore_index(n), *val = lt_lstore_value(n);
    if (n->lanes > 1 || idx->lanes > 1 || val->lanes > 1) {
        fail(e, LT_ERR_UNSUPPORTED, "vector store into %s (%d lanes): mark the loop vectorized instead",
             n->buf->name, n->lanes);
        return;
    }
    if (!check_dtype(e, n->buf->dtype, "stored buffer")) return;
    put_indent(e);
    const struct vacc *va = vacc_find(e, n->buf, idx, true);
    if (va) { /* a lane of a vector stored after the lane loop */
        OUT("%s = ", vacc_reg(va));
    } else {
        OUT("%s[", bname(e, n->buf));
        ex(e, idx, P_ANY);
        OUT("] = ");
    }
    lt_dtype bt = n->buf->dtype;
    if (e->L->vector_memory && is_narrow_float(bt) && val->kind == LT_L_LOAD && val->buf->dtype == bt) {
        /* a copy between float16 (bfloat16) buffers: the bits, no round trip through float */
        const struct vacc *vl = vacc_find(e, val->buf, lt_lload_index(val), false);
        if (vl) OUT("%s", vacc_reg(vl));
        else {
            OUT("%s[", bname(e, val->buf));
            ex(e, lt_lload_index(val), P_ANY);
            OUT("]");
        }
    } else if (bt == LT_FLOAT16 || bt == LT_BFLOAT16) {
        const char *fn = bt == LT_FLOAT16 ? "lt_f2h" : "lt_f2bf";
        /* storing Cast(float x -> bt): the store's own conversion rounds x once, the same bits */
        if (val->kind == LT_L_CAST && val->dtype == bt && compute_dt(lt_lexpr_a(val)->dtype) == LT_FLOAT)
            val = lt_lexpr_a(val);
        bool dbl = compute_dt(val->dtype) == LT_DOUBLE;
        OUT("%s(%s", fn, dbl ? "lt_d2f_odd(" : "");
        ex(e, val, P_ANY);
        OUT("%s", dbl ? "))" : ")");
    } else {
        ex(e, val, P_ANY);
    }
    OUT(";\n");
}

static void st_alloc(em *e, const lt_lnode *n) {
    const lt_lbuf *b = n->buf;
    if (!check_dtype(e, b->dtype, "local buffer")) return;
    int64_t bytes = 0;
    if (b->size <= 0 || !lt_mul_i64(b->size, lt_dtype_size(b->dtype), &bytes) || bytes > e->L->max_local_bytes) {
        fail(e, LT_ERR_UNSUPPORTED, "local buffer %s of %lld elements (%lld bytes) exceeds the %s target's "
             "limit of %lld bytes per block", b->name, (long long)b->size, (long long)bytes, e->L->name,
             (long long)e->L->max_local_bytes);
        return;
    }
    put_indent(e);
    OUT("%s%s %s[%lld]%s; /* %s */\n", b->scope == LT_SCOPE_SHARED ? e->L->shared_qualifier : "",
        storage_type(e, b->dtype), bname(e, b), (long long)b->size, e->L->local_attr,
        b->scope == LT_SCOPE_SHARED ? "shared" : "local");
    st(e, lt_lalloc_body(n));
}

static void st(em *e, const lt_lnode *n) {
    if (e->st != LT_OK) return;
    if (!n) { fail(e, LT_ERR_INVALID, "missing statement"); return; }
    switch (n->kind) {
    case LT_L_SEQ:
        for (int i = 0; i < n->n && e->st == LT_OK; i++) st(e, n->kids[i]);
        break;
    case LT_L_FOR: st_for(e, n); break;
    case LT_L_STORE: st_store(e, n); break;
    case LT_L_IF:
        put_indent(e);
        OUT("if (");
        ex(e, lt_lif_cond(n), P_ANY);
        OUT(") {\n");
        block(e, lt_lif_then(n));
        if (n->n > 2 && lt_lif_else(n) && !lt_lis_empty(lt_lif_else(n))) {
            put_indent(e);
            OUT("} else {\n");
            block(e, lt_lif_else(n));
        }
        put_indent(e);
        OUT("}\n");
        break;
    case LT_L_ALLOC: st_alloc(e, n); break;
    case LT_L_LET:
        if (!check_dtype(e, n->var->dtype, "variable")) return;
        put_indent(e);
        OUT("%s %s = ", compute_type(e, n->var->dtype), vname(e, n->var));
        ex(e, lt_llet_value(n), P_ANY);
        OUT(";\n");
        if (e->var_read && n->var->id >= 0 && n->var->id < e->k->n_vars && !e->var_read[n->var->id]) {
            put_indent(e); /* a value the kernel never reads (-Wunused-variable under -Werror) */
            OUT("(void)%s;\n", vname(e, n->var));
        }
        break;
    case LT_L_ASSIGN:
        put_indent(e);
        OUT("%s = ", vname(e, n->var));
        ex(e, lt_llet_value(n), P_ANY);
        OUT(";\n");
        break;
    case LT_L_EVAL:
        put_indent(e);
        ex(e, lt_lstmt_call(n), P_ANY);
        OUT(";\n");
        break;
    case LT_L_BARRIER:
        put_indent(e);
        if (e->L->barrier) OUT("%s\n", e->L->barrier);
        else OUT("/* barrier: nothing to do on this target */\n");
        break;
    default:
        fail(e, LT_ERR_INVALID, "%s expression used as a statement", lt_lnode_info_get(n->kind)->name);
    }
}

/* ---- launch dimensions ---- */
typedef struct dims_scan {
    lt_ctx *ctx;
    const lt_kernel *k;
    int64_t *grid, *block;
    int *gsym;       /* per block axis: -1, or the run-time scalar its one loop's extent is (times gmul) */
    int64_t *gmul;
    unsigned active; /* bit a: block axis a bound by an enclosing loop; bit 3+a: thread axis */
    bool seen[3];    /* block axis bound by some loop */
    lt_status st;
} dims_scan;

/* The run-time scalar an extent is (a scalar, or a scalar times a positive constant: *mult), or -1. */
static int scalar_extent(const lt_kernel *k, const lt_lnode *e, int64_t *mult) {
    int64_t c = 1;
    if (e->kind == LT_L_BINARY && e->op == LT_LOP_MUL && lt_lis_int(lt_lexpr_b(e), &c) && c > 0) e = lt_lexpr_a(e);
    if (e->kind != LT_L_VAR) return -1;
    for (int i = 0; i < k->n_scalars; i++)
        if (k->scalars[i] == e->var && e->var->dtype == LT_INT64) {
            *mult = c;
            return i;
        }
    return -1;
}

static void dims_rec(dims_scan *d, const lt_lnode *n) {
    if (!n || d->st != LT_OK) return;
    unsigned bit = 0;
    if (n->kind == LT_L_FOR && (n->op == LT_LOOP_GPU_BLOCK || n->op == LT_LOOP_GPU_THREAD)) {
        int axis = (int)n->ival;
        int64_t ext;
        bool blk = n->op == LT_LOOP_GPU_BLOCK;
        const char *nm = n->var ? n->var->name : "?";
        if (axis < 0 || axis > 2) {
            d->st = lt_error(d->ctx, LT_ERR_INVALID, "kernel %s: loop %s bound to GPU axis %d (not 0..2)",
                             d->k->name, nm, axis);
            return;
        }
        int sym = blk ? scalar_extent(d->k, lt_lfor_extent(n), &ext) : -1;
        if (sym < 0 && (!lt_lis_int(lt_lfor_extent(n), &ext) || ext <= 0)) {
            d->st = lt_error(d->ctx, LT_ERR_UNSUPPORTED, "kernel %s: loop %s is bound to a GPU %s but its "
                             "extent is not a positive constant%s", d->k->name, nm, blk ? "block" : "thread",
                             blk ? " or a run-time scalar" : "");
            return;
        }
        if (blk && (sym >= 0 || d->gsym[axis] >= 0) && d->seen[axis]) { /* the launch needs one extent */
            d->st = lt_error(d->ctx, LT_ERR_UNSUPPORTED, "kernel %s: loop %s shares GPU block axis %c with another "
                             "loop and one of their extents is a run-time scalar", d->k->name, nm, "xyz"[axis]);
            return;
        }
        if (blk) {
            d->seen[axis] = true;
            if (sym >= 0) d->gsym[axis] = sym, d->gmul[axis] = ext;
        }
        if (sym >= 0) ext *= d->k->scalar_bits[sym]; /* this kernel's own value, for the numeric shape */
        bit = 1u << (axis + (blk ? 0 : 3));
        if (d->active & bit) {
            d->st = lt_error(d->ctx, LT_ERR_UNSUPPORTED, "kernel %s: loop %s binds GPU %s axis %c inside "
                             "another loop bound to it", d->k->name, nm, blk ? "block" : "thread", "xyz"[axis]);
            return;
        }
        int64_t *dim = blk ? &d->grid[axis] : &d->block[axis];
        if (ext > *dim) *dim = ext;
        d->active |= bit;
    }
    for (int i = 0; i < n->n; i++) dims_rec(d, n->kids[i]);
    d->active &= ~bit;
}

/* The launch shape, and which grid axes are run-time scalars (gsym, gmul: -1 / 1 when not). */
static lt_status launch_dims(lt_ctx *ctx, const lt_kernel *k, int64_t grid[3], int64_t block[3], int gsym[3],
                             int64_t gmul[3]) {
    int64_t g[3] = {1, 1, 1}, b[3] = {1, 1, 1};
    for (int a = 0; a < 3; a++) gsym[a] = -1, gmul[a] = 1;
    dims_scan d = {.ctx = ctx, .k = k, .grid = g, .block = b, .gsym = gsym, .gmul = gmul, .st = LT_OK};
    dims_rec(&d, k->body);
    if (d.st != LT_OK) return d.st;
    memcpy(grid, g, sizeof g);
    memcpy(block, b, sizeof b);
    return LT_OK;
}

lt_status lt_emit_launch_dims(lt_ctx *ctx, const lt_kernel *k, int64_t grid[3], int64_t block[3]) {
    int gsym[3];
    int64_t gmul[3];
    return launch_dims(ctx, k, grid, block, gsym, gmul);
}

/* ---- kernels ---- */
static void fmt_qty(char *out, size_t n, double v, const char *unit) {
    const char *pre[] = {"", "K", "M", "G", "T"};
    int i = 0;
    while (v >= 1000 && i < 4) v /= 1000, i++;
    snprintf(out, n, "%.*f %s%s", i ? 2 : 0, v, pre[i], unit);
}

typedef struct arg_use {
    bool read, written;
} arg_use;
static bool use_walk(const lt_lnode *n, void *user) {
    arg_use *u = user;
    if ((n->kind == LT_L_LOAD) && n->buf && n->buf->arg >= 0) u[n->buf->id].read = true;
    if ((n->kind == LT_L_STORE || n->kind == LT_L_ADDR) && n->buf && n->buf->arg >= 0) u[n->buf->id].written = true;
    if (n->kind == LT_L_ADDR && n->buf && n->buf->arg >= 0) u[n->buf->id].read = true;
    return true;
}

static bool read_walk(const lt_lnode *n, void *user) {
    em *e = user;
    if (n->kind == LT_L_VAR && n->var && n->var->id >= 0 && n->var->id < e->k->n_vars) e->var_read[n->var->id] = true;
    return true;
}

static lt_status emit_kernel(em *e, const lt_emit_kernel *ek) {
    const lt_kernel *k = ek->kernel;
    const lt_lang *L = e->L;
    e->k = k;
    e->st = LT_OK;
    ns_free(&e->names);
    e->vname = lt_arena_alloc(&e->names_arena, ((size_t)k->n_vars + 1) * sizeof *e->vname);
    e->bname = lt_arena_alloc(&e->names_arena, ((size_t)k->n_bufs + 1) * sizeof *e->bname);
    arg_use *use = lt_mem_calloc((size_t)k->n_bufs + 1, sizeof *use);
    e->var_read = lt_arena_alloc(&e->names_arena, ((size_t)k->n_vars + 1) * sizeof *e->var_read);
    if (!e->vname || !e->bname || !use || !e->var_read) {
        lt_mem_free(use);
        return fail(e, LT_ERR_NOMEM, "out of memory");
    }
    lt_status s = LT_OK;
    if (!k->name || !*k->name) { s = fail(e, LT_ERR_INVALID, "kernel without a name"); goto done; }
    if (!is_ident(k->name)) { s = fail(e, LT_ERR_INVALID, "kernel name is not a C identifier"); goto done; }
    if ((s = lt_kernel_verify(e->ctx, k)) != LT_OK) { e->st = s; goto done; }
    if (!ns_add(&e->names, k->name)) { s = fail(e, LT_ERR_NOMEM, "out of memory"); goto done; }
    if ((s = launch_dims(e->ctx, k, e->grid, e->block, e->grid_scalar, e->grid_mult)) != LT_OK) { e->st = s; goto done; }
    if (L->max_block_threads > 0 && e->block[0] * e->block[1] * e->block[2] > L->max_block_threads) {
        s = fail(e, LT_ERR_UNSUPPORTED, "a block of %lld x %lld x %lld threads exceeds the %s target's %lld",
                 (long long)e->block[0], (long long)e->block[1], (long long)e->block[2], L->name,
                 (long long)L->max_block_threads);
        goto done;
    }
    lt_lwalk(k->body, use_walk, use);
    memset(e->var_read, 0, ((size_t)k->n_vars + 1) * sizeof *e->var_read);
    lt_lwalk(k->body, read_walk, e);

    /* header comment: origin, (CUDA) the arguments' tensors, cost, launch shape (last: cuda_module.c
     * reads it); the model's names only escaped */
    char fl[32], by[32];
    fmt_qty(fl, sizeof fl, k->flops, "FLOP");
    fmt_qty(by, sizeof by, k->bytes, "B");
    OUT("\n/* %s", k->name);
    if (ek->origin && *ek->origin) {
        OUT(": ");
        lt_c_escape(e->o, ek->origin, 400);
    }
    /* a kernel with run-time scalars is one code for many shapes: its text says nothing that
     * depends on the shape it was made at (buffer sizes, cost), so every shape emits it alike */
    bool shapeless = k->n_scalars > 0;
    for (int i = 0; !L->args_array && i < k->n_args; i++) {
        const lt_lbuf *b = k->args[i];
        if (!b || b->arg != i) break; /* reported below */
        OUT("\n * %s: ", bname(e, b));
        put_text(e, b->name, 80);
        if (shapeless) OUT(" %s[run-time size]", lt_dtype_name(b->dtype));
        else OUT(" %s[%lld]", lt_dtype_name(b->dtype), (long long)b->size);
    }
    if (shapeless) OUT("\n * run-time scalars: %d (extents and constants of the shape it runs at)", k->n_scalars);
    else OUT("\n * static cost: %s, %s moved", fl, by);
    if (L->block_index[0]) {
        /* a grid axis that is run-time scalar i times m reads "s<i>*<m>" (cuda_module.c parses it) */
        OUT("\n * launch: grid (");
        for (int a = 0; a < 3; a++) {
            if (e->grid_scalar[a] >= 0) OUT("%ss%d*%lld", a ? ", " : "", e->grid_scalar[a], (long long)e->grid_mult[a]);
            else OUT("%s%lld", a ? ", " : "", (long long)e->grid[a]);
        }
        OUT("), block (%lld, %lld, %lld)", (long long)e->block[0], (long long)e->block[1], (long long)e->block[2]);
        if (k->dyn_shared > 0) OUT(", dynamic shared %lld", (long long)k->dyn_shared);
    }
    OUT(" */\n");

    /* signature and arguments */
    for (int i = 0; i < k->n_args; i++) {
        const lt_lbuf *b = k->args[i];
        if (!b || b->arg != i) { s = fail(e, LT_ERR_INVALID, "argument %d is not marked as argument %d", i, i); goto done; }
        if (!check_dtype(e, b->dtype, "argument buffer")) { s = e->st; goto done; }
        bname(e, b);
    }
    OUT("%s ", L->kernel_prefix);
    int64_t threads = e->block[0] * e->block[1] * e->block[2];
    if (L->launch_bounds && L->block_index[0] && threads > LT_LAUNCH_BOUNDS_MIN_THREADS) {
        OUT(L->launch_bounds, (long long)threads);
        OUT(" ");
    }
    OUT("%s(", k->name);
    if (L->args_array) {
        OUT("void *const *args) {\n");
        for (int i = 0; i < k->n_args; i++) {
            const lt_lbuf *b = k->args[i];
            bool ro = !use[b->id].written;
            const char *t = storage_type(e, b->dtype);
            OUT("    %s%s *%s = (%s%s *)args[%d]; /* ", ro ? "const " : "", t, bname(e, b), ro ? "const " : "", t, i);
            put_text(e, b->name, 80);
            if (shapeless) OUT(" %s", lt_dtype_name(b->dtype));
            else OUT(" %s[%lld]", lt_dtype_name(b->dtype), (long long)b->size);
            OUT("%s */\n", use[b->id].written ? (use[b->id].read ? ", in/out" : ", out") : "");
        }
        /* scalars travel by value in their pointer-sized slots (abi.h): an int64, or a double's bits */
        for (int i = 0; i < k->n_scalars; i++) {
            const lt_lvar *v = k->scalars[i];
            if (v->dtype == LT_DOUBLE)
                OUT("    const double %s = ((union { void *p; double d; }){args[%d]}).d;\n", vname(e, v), k->n_args + i);
            else OUT("    const long long %s = (long long)(intptr_t)args[%d];\n", vname(e, v), k->n_args + i);
            if (!e->var_read[v->id]) OUT("    (void)%s;\n", vname(e, v));
        }
        for (int i = 0; i < k->n_args; i++) /* an argument the body never touches (-Wunused-variable) */
            if (!use[k->args[i]->id].read && !use[k->args[i]->id].written) OUT("    (void)%s;\n", bname(e, k->args[i]));
    } else {
        for (int i = 0; i < k->n_args; i++) {
            const lt_lbuf *b = k->args[i];
            OUT("%s%s%s *%s", i ? ", " : "", use[b->id].written ? "" : "const ", storage_type(e, b->dtype),
                bname(e, b));
        }
        for (int i = 0; i < k->n_scalars; i++) /* after the buffers, by value */
            OUT("%s%s %s", i || k->n_args ? ", " : "", k->scalars[i]->dtype == LT_DOUBLE ? "double" : "long long",
                vname(e, k->scalars[i]));
        OUT(") {\n");
    }
    e->ind = 1;
    st(e, k->body);
    e->ind = 0;
    OUT("}\n");
    s = e->st;
done:
    lt_mem_free(use);
    return s;
}

static void em_init(em *e, lt_ctx *ctx, const lt_lang *lang, lt_strbuf *out) {
    memset(e, 0, sizeof *e);
    e->ctx = ctx;
    e->L = lang;
    e->o = out;
    lt_arena_init(&e->names_arena);
}
static void em_fini(em *e) {
    ns_free(&e->names);
    lt_arena_free(&e->names_arena);
}

lt_status lt_emit_function(lt_ctx *ctx, const lt_lang *lang, const lt_emit_kernel *kernel, lt_strbuf *out) {
    if (!lang || !kernel || !kernel->kernel || !out)
        return lt_error(ctx, LT_ERR_USAGE, "lt_emit_function: missing language, kernel or output");
    em e;
    em_init(&e, ctx, lang, out);
    lt_status s = emit_kernel(&e, kernel);
    em_fini(&e);
    if (s == LT_OK && out->failed) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory writing kernel %s", kernel->kernel->name);
    return s;
}

lt_status lt_emit_kernels_(lt_ctx *ctx, const lt_lang *lang, const lt_emit_kernel *kernels, int n, lt_strbuf *out) {
    em e;
    em_init(&e, ctx, lang, out);
    lt_status s = LT_OK;
    for (int i = 0; i < n && s == LT_OK; i++) s = emit_kernel(&e, &kernels[i]);
    em_fini(&e);
    return s;
}

