/* npy.c — numpy .npy images: a bounded decoder (format 1.0/2.0/3.0, header dict parsed by hand, every
 * length checked against the bytes present) and an encoder (1.0, or 2.0 for huge headers).
 * Entry points: lt_npy_decode, lt_npy_read_file, lt_npy_encode (io.h).
 */
#include "io.h"

#include <stdio.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6

/* ---- header dict parsing ---- */
typedef struct npy_header {
    char descr[32];
    bool have_descr, have_order, have_shape;
    bool fortran;
    int rank;
    int64_t dims[LT_MAX_RANK];
} npy_header;

typedef struct hparse {
    const char *s;
    size_t n, i;
} hparse;

static void hp_ws(hparse *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}
static bool hp_eat(hparse *p, char c) {
    hp_ws(p);
    if (p->i < p->n && p->s[p->i] == c) { p->i++; return true; }
    return false;
}
/* A quoted Python string literal (no escapes needed by numpy headers). */
static bool hp_string(hparse *p, char *buf, size_t cap) {
    hp_ws(p);
    if (p->i >= p->n || (p->s[p->i] != '\'' && p->s[p->i] != '"')) return false;
    char q = p->s[p->i++];
    size_t k = 0;
    while (p->i < p->n && p->s[p->i] != q) {
        if (p->s[p->i] == '\\' || k + 1 >= cap) return false;
        buf[k++] = p->s[p->i++];
    }
    if (p->i >= p->n) return false;
    p->i++;
    buf[k] = 0;
    return true;
}
static bool hp_word(hparse *p, const char *w) {
    hp_ws(p);
    size_t l = strlen(w);
    if (p->n - p->i >= l && memcmp(p->s + p->i, w, l) == 0) { p->i += l; return true; }
    return false;
}
static bool hp_int(hparse *p, int64_t *v) {
    hp_ws(p);
    int64_t x = 0;
    size_t start = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        if (!lt_mul_i64(x, 10, &x) || !lt_add_i64(x, p->s[p->i] - '0', &x)) return false;
        p->i++;
    }
    if (p->i == start) return false;
    if (p->i < p->n && p->s[p->i] == 'L') p->i++; /* Python 2 longs */
    *v = x;
    return true;
}

static lt_status parse_header(lt_ctx *ctx, const char *s, size_t n, const char *what, npy_header *h) {
    hparse p = {s, n, 0};
    memset(h, 0, sizeof *h);
    if (!hp_eat(&p, '{')) goto bad;
    for (;;) {
        if (hp_eat(&p, '}')) break;
        char key[32];
        if (!hp_string(&p, key, sizeof key) || !hp_eat(&p, ':')) goto bad;
        if (strcmp(key, "descr") == 0) {
            hp_ws(&p);
            if (p.i < p.n && (p.s[p.i] == '[' || p.s[p.i] == '('))
                return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: structured numpy dtypes are not supported", what);
            if (!hp_string(&p, h->descr, sizeof h->descr)) goto bad;
            h->have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (hp_word(&p, "True")) h->fortran = true;
            else if (hp_word(&p, "False")) h->fortran = false;
            else goto bad;
            h->have_order = true;
        } else if (strcmp(key, "shape") == 0) {
            if (!hp_eat(&p, '(')) goto bad;
            h->rank = 0;
            while (!hp_eat(&p, ')')) {
                int64_t d;
                if (!hp_int(&p, &d)) goto bad;
                if (h->rank >= LT_MAX_RANK)
                    return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: array rank exceeds %d", what, LT_MAX_RANK);
                h->dims[h->rank++] = d;
                if (!hp_eat(&p, ',')) {
                    if (!hp_eat(&p, ')')) goto bad;
                    break;
                }
            }
            h->have_shape = true;
        } else {
            goto bad;
        }
        if (!hp_eat(&p, ',')) {
            if (!hp_eat(&p, '}')) goto bad;
            break;
        }
    }
    if (!h->have_descr || !h->have_order || !h->have_shape) goto bad;
    return LT_OK;
bad:
    return lt_error(ctx, LT_ERR_INVALID, "%s: malformed .npy header near byte %zu of the header dict", what, p.i);
}

/* ---- descr ---- */
typedef enum { NK_NUM, NK_BYTES, NK_UNICODE } npy_kind;
typedef struct npy_dtype {
    npy_kind kind;
    lt_dtype dt;
    int64_t itemsize; /* bytes per element in the file */
    int64_t chars;    /* S/U: characters per element */
    bool swap;        /* big-endian data */
} npy_dtype;

static lt_status parse_descr(lt_ctx *ctx, const char *d, const char *what, npy_dtype *o) {
    memset(o, 0, sizeof *o);
    const char *s = d;
    char order = '=';
    if (*s == '<' || *s == '>' || *s == '|' || *s == '=') order = *s++;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    o->swap = order == '<';
#else
    o->swap = order == '>';
#endif
    char kind = *s++;
    if (!kind) goto bad;
    int64_t n = 0;
    const char *digits = s;
    while (*s >= '0' && *s <= '9') {
        if (!lt_mul_i64(n, 10, &n) || !lt_add_i64(n, *s - '0', &n)) goto bad;
        s++;
    }
    if (*s || s == digits) goto bad;
    switch (kind) {
    case 'b': if (n == 1) o->dt = LT_BOOL; break;
    case 'i': o->dt = n == 1 ? LT_INT8 : n == 2 ? LT_INT16 : n == 4 ? LT_INT32 : n == 8 ? LT_INT64 : LT_UNDEFINED; break;
    case 'u': o->dt = n == 1 ? LT_UINT8 : n == 2 ? LT_UINT16 : n == 4 ? LT_UINT32 : n == 8 ? LT_UINT64 : LT_UNDEFINED; break;
    case 'f': o->dt = n == 2 ? LT_FLOAT16 : n == 4 ? LT_FLOAT : n == 8 ? LT_DOUBLE : LT_UNDEFINED; break;
    case 'c': o->dt = n == 8 ? LT_COMPLEX64 : n == 16 ? LT_COMPLEX128 : LT_UNDEFINED; break;
    case 'S': o->kind = NK_BYTES; o->dt = LT_STRING; o->chars = n; o->itemsize = n; break;
    case 'U':
        o->kind = NK_UNICODE; o->dt = LT_STRING; o->chars = n;
        if (!lt_mul_i64(n, 4, &o->itemsize)) goto bad;
        break;
    default: break;
    }
    if (o->dt == LT_UNDEFINED)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: numpy dtype '%s' is not supported", what, d);
    if (o->kind == NK_NUM) o->itemsize = lt_dtype_size(o->dt);
    if (o->kind != NK_NUM && o->chars == 0)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: zero-width string dtype '%s' is not supported", what, d);
    if (o->itemsize > LT_NPY_MAX_ITEMSIZE)
        return lt_error(ctx, LT_ERR_INVALID, "%s: numpy dtype '%s': item size %lld bytes exceeds the limit of %lld", what, d,
                        (long long)o->itemsize, (long long)LT_NPY_MAX_ITEMSIZE);
    return LT_OK;
bad:
    return lt_error(ctx, LT_ERR_INVALID, "%s: malformed numpy dtype '%s'", what, d);
}

static void swap_bytes(uint8_t *p, int64_t count, int width) {
    for (int64_t i = 0; i < count; i++, p += width)
        for (int a = 0, b = width - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* Append code point cp as UTF-8 to buf (capacity >= k + 4). */
static size_t put_utf8(char *buf, size_t k, uint32_t cp) {
    if (cp < 0x80) { buf[k++] = (char)cp; }
    else if (cp < 0x800) { buf[k++] = (char)(0xC0 | (cp >> 6)); buf[k++] = (char)(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
        buf[k++] = (char)(0xE0 | (cp >> 12)); buf[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        buf[k++] = (char)(0x80 | (cp & 0x3F));
    } else {
        buf[k++] = (char)(0xF0 | (cp >> 18)); buf[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        buf[k++] = (char)(0x80 | ((cp >> 6) & 0x3F)); buf[k++] = (char)(0x80 | (cp & 0x3F));
    }
    return k;
}

/* Fill string element `dst` of t from file element `src`. */
static lt_status read_string_elem(lt_ctx *ctx, lt_tensor *t, int64_t dst, const uint8_t *src,
                                  const npy_dtype *nd, const char *what, char *scratch) {
    size_t k = 0;
    if (nd->kind == NK_BYTES) {
        while ((int64_t)k < nd->chars && src[k]) k++;
        return lt_tensor_set_string(ctx, t, dst, (const char *)src, k);
    }
    for (int64_t c = 0; c < nd->chars; c++) {
        const uint8_t *q = src + 4 * c;
        uint32_t cp = nd->swap ? ((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3])
                               : ((uint32_t)q[3] << 24 | (uint32_t)q[2] << 16 | (uint32_t)q[1] << 8 | q[0]);
        if (cp == 0) break;
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return lt_error(ctx, LT_ERR_INVALID, "%s: invalid unicode code point 0x%X in element %lld", what,
                            cp, (long long)dst);
        k = put_utf8(scratch, k, cp);
    }
    return lt_tensor_set_string(ctx, t, dst, scratch, k);
}

int64_t lt_io_max_bytes(const lt_io_limits *lim) {
    return lim && lim->max_bytes > 0 ? lim->max_bytes : LT_IO_DEFAULT_MAX_BYTES;
}

/* Bytes the decoded array takes: its data block, or for strings a pointer, an allocation (counted
 * as 32 bytes) and at most the file's bytes of characters per element. False on overflow. */
static bool decoded_bytes(const npy_dtype *nd, int64_t numel, int64_t nbytes, int64_t *out) {
    if (nd->kind == NK_NUM) { *out = nbytes; return true; }
    int64_t per;
    return lt_mul_i64(numel, (int64_t)sizeof(char *) + 32, &per) && lt_add_i64(per, nbytes, out);
}

/* Fortran order: the element at C multi-index idx sits at sum(idx[k] * fstr[k]). Only called for
 * a non-empty array, whose element count (the product of all dims) is known to fit. */
static void fortran_strides(const npy_header *h, int64_t *fstr) {
    int64_t acc = 1;
    for (int k = 0; k < h->rank; k++) {
        fstr[k] = acc;
        if (!lt_mul_i64(acc, h->dims[k], &acc)) acc = INT64_MAX; /* unreachable: the product fits */
    }
}

lt_status lt_npy_decode(lt_ctx *ctx, const void *data, size_t size, const char *what, lt_tensor **out) {
    return lt_npy_decode_limited(ctx, data, size, what, NULL, out);
}

lt_status lt_npy_decode_limited(lt_ctx *ctx, const void *data, size_t size, const char *what,
                                const lt_io_limits *lim, lt_tensor **out) {
    const uint8_t *b = data;
    if (size < 10 || memcmp(b, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return lt_error(ctx, LT_ERR_INVALID, "%s: not a .npy file (bad magic)", what);
    int major = b[6], minor = b[7];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) return lt_error(ctx, LT_ERR_INVALID, "%s: truncated .npy header", what);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hoff = 12;
    } else {
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: .npy format version %d.%d is not supported", what,
                        major, minor);
    }
    if (minor != 0)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: .npy format version %d.%d is not supported", what,
                        major, minor);
    if (hlen > size - hoff)
        return lt_error(ctx, LT_ERR_INVALID, "%s: .npy header length %zu exceeds the file (%zu bytes)", what,
                        hlen, size);
    npy_header h;
    LT_TRY(parse_header(ctx, (const char *)b + hoff, hlen, what, &h));
    npy_dtype nd;
    LT_TRY(parse_descr(ctx, h.descr, what, &nd));
    int64_t numel, nbytes;
    if (!lt_prod_i64(h.dims, h.rank, &numel) || !lt_mul_i64(numel, nd.itemsize, &nbytes))
        return lt_error(ctx, LT_ERR_INVALID, "%s: array size overflows", what);
    size_t doff = hoff + hlen;
    if ((uint64_t)nbytes != (uint64_t)(size - doff))
        return lt_error(ctx, LT_ERR_INVALID, "%s: expected %lld data bytes for %s%s, file has %zu", what,
                        (long long)nbytes, h.descr, lt_shape_str(h.rank, h.dims, (char[256]){0}, 256),
                        size - doff);
    int64_t need, limit = lt_io_max_bytes(lim);
    if (!decoded_bytes(&nd, numel, nbytes, &need) || need > limit)
        return lt_error(ctx, LT_ERR_INVALID, "%s: %s%s would take more than the limit of %lld bytes for decoded arrays",
                        what, h.descr, lt_shape_str(h.rank, h.dims, (char[256]){0}, 256), (long long)limit);
    lt_tensor *t = NULL;
    LT_TRY(lt_tensor_new(ctx, nd.dt, h.rank, h.dims, &t));
    const uint8_t *src = b + doff;
    int64_t fstr[LT_MAX_RANK], idx[LT_MAX_RANK] = {0};
    bool fortran = h.fortran && h.rank > 1 && numel > 0;
    if (fortran) fortran_strides(&h, fstr);
    char *scratch = NULL;
    if (nd.kind == NK_UNICODE && numel > 0) { /* chars * 4 = itemsize <= the file's data bytes */
        size_t cap;
        if (!lt_mul_size((size_t)nd.chars, 4, &cap) || !(scratch = lt_alloc(ctx, cap + 1, "npy string"))) {
            lt_tensor_release(t);
            return lt_error(ctx, LT_ERR_NOMEM, "%s: out of memory", what);
        }
    }
    lt_status st = LT_OK;
    if (nd.kind == NK_NUM && !fortran) {
        if (numel) memcpy(t->data, src, (size_t)nbytes);
    } else {
        for (int64_t i = 0; i < numel && st == LT_OK; i++) {
            int64_t s = i;
            if (fortran) {
                s = 0;
                for (int k = 0; k < h.rank; k++) s += idx[k] * fstr[k];
                for (int k = h.rank - 1; k >= 0; k--) {
                    if (++idx[k] < h.dims[k]) break;
                    idx[k] = 0;
                }
            }
            const uint8_t *e = src + s * nd.itemsize;
            if (nd.kind == NK_NUM) memcpy((uint8_t *)t->data + i * nd.itemsize, e, (size_t)nd.itemsize);
            else st = read_string_elem(ctx, t, i, e, &nd, what, scratch);
        }
    }
    lt_mem_free(scratch);
    if (st != LT_OK) { lt_tensor_release(t); return st; }
    if (nd.kind == NK_NUM && nd.swap && nd.itemsize > 1) {
        bool cplx = nd.dt == LT_COMPLEX64 || nd.dt == LT_COMPLEX128;
        swap_bytes(t->data, cplx ? numel * 2 : numel, cplx ? (int)nd.itemsize / 2 : (int)nd.itemsize);
    }
    if (nd.dt == LT_BOOL) {
        uint8_t *p = t->data;
        for (int64_t i = 0; i < numel; i++) p[i] = p[i] != 0;
    }
    *out = t;
    return LT_OK;
}

lt_status lt_npy_read_file(lt_ctx *ctx, const char *path, lt_tensor **out) {
    return lt_npy_read_file_limited(ctx, path, NULL, out);
}

lt_status lt_npy_read_file_limited(lt_ctx *ctx, const char *path, const lt_io_limits *lim, lt_tensor **out) {
    uint8_t *data;
    size_t size;
    LT_TRY(lt_io_read_file(ctx, path, &data, &size));
    lt_status st = lt_npy_decode_limited(ctx, data, size, path, lim, out);
    lt_mem_free(data);
    return st;
}

/* ---- encoder ---- */
/* The dtype a tensor is written as. */
static lt_dtype npy_write_dtype(lt_dtype dt) {
    switch (dt) {
    case LT_BFLOAT16: case LT_FLOAT8E4M3FN: case LT_FLOAT8E4M3FNUZ: case LT_FLOAT8E5M2:
    case LT_FLOAT8E5M2FNUZ: case LT_FLOAT4E2M1: case LT_FLOAT8E8M0:
        return LT_FLOAT;
    case LT_INT4: case LT_INT2: return LT_INT8;
    case LT_UINT4: case LT_UINT2: return LT_UINT8;
    default: return dt;
    }
}

/* Decode one UTF-8 sequence at s[0..n); invalid bytes give U+FFFD and advance by one. */
static uint32_t get_utf8(const unsigned char *s, size_t n, size_t *adv) {
    unsigned c = s[0];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    *adv = 1;
    if (len == 1) return c;
    if (len == 0 || (size_t)len > n) return 0xFFFD;
    uint32_t cp = c & (0x7F >> len);
    for (int k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0xFFFD;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    static const uint32_t minv[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < minv[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0xFFFD;
    *adv = (size_t)len;
    return cp;
}
static int64_t utf8_count(const char *s) {
    int64_t n = 0;
    size_t len = strlen(s), i = 0, adv;
    while (i < len) { get_utf8((const unsigned char *)s + i, len - i, &adv); i += adv; n++; }
    return n;
}

lt_status lt_npy_encode(lt_ctx *ctx, const lt_tensor *t, uint8_t **data, size_t *size, bool *widened) {
    lt_dtype wdt = npy_write_dtype(t->dtype);
    if (widened && wdt != t->dtype) *widened = true;
    char descr[32];
    int64_t itemsize;
    if (t->dtype == LT_STRING) {
        int64_t maxc = 1;
        char **strs = t->data;
        for (int64_t i = 0; i < t->numel; i++) {
            int64_t c = utf8_count(strs[i] ? strs[i] : "");
            if (c > maxc) maxc = c;
        }
        if (!lt_mul_i64(maxc, 4, &itemsize)) return lt_error(ctx, LT_ERR_NOMEM, "string too long for .npy");
        snprintf(descr, sizeof descr, "<U%lld", (long long)maxc);
    } else {
        const char *np = lt_dtype_get(wdt)->numpy;
        if (!np) return lt_error(ctx, LT_ERR_UNSUPPORTED, "dtype %s cannot be written to .npy", lt_dtype_name(t->dtype));
        snprintf(descr, sizeof descr, "%s", np);
        itemsize = lt_dtype_size(wdt);
    }
    /* header dict */
    char hdr[1024];
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int k = 0; k < t->rank; k++)
        hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, "%lld%s", (long long)t->dims[k],
                       t->rank == 1 ? "," : k + 1 < t->rank ? ", " : "");
    hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, "), }");
    /* total prefix (magic + len + dict + padding + '\n') is a multiple of 64 */
    size_t pre = 10, total_hdr = pre + (size_t)hl + 1;
    size_t padded = (total_hdr + 63) / 64 * 64;
    int64_t nbytes;
    if (!lt_mul_i64(t->numel, itemsize, &nbytes) || nbytes > LT_TENSOR_MAX_BYTES)
        return lt_error(ctx, LT_ERR_NOMEM, "array too large for .npy");
    size_t fsize = padded + (size_t)nbytes;
    uint8_t *buf = lt_alloc(ctx, fsize ? fsize : 1, ".npy image");
    if (!buf) return LT_ERR_NOMEM;
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    size_t dl = padded - pre;
    buf[8] = (uint8_t)(dl & 0xFF);
    buf[9] = (uint8_t)(dl >> 8);
    memcpy(buf + pre, hdr, (size_t)hl);
    memset(buf + pre + hl, ' ', padded - pre - (size_t)hl - 1);
    buf[padded - 1] = '\n';
    uint8_t *dst = buf + padded;
    if (t->dtype == LT_STRING) {
        memset(dst, 0, (size_t)nbytes);
        char **strs = t->data;
        for (int64_t i = 0; i < t->numel; i++) {
            const char *s = strs[i] ? strs[i] : "";
            size_t len = strlen(s), k = 0, adv;
            uint8_t *e = dst + i * itemsize;
            for (int64_t c = 0; k < len; c++) {
                uint32_t cp = get_utf8((const unsigned char *)s + k, len - k, &adv);
                k += adv;
                e[4 * c] = (uint8_t)cp;
                e[4 * c + 1] = (uint8_t)(cp >> 8);
                e[4 * c + 2] = (uint8_t)(cp >> 16);
                e[4 * c + 3] = (uint8_t)(cp >> 24);
            }
        }
    } else if (wdt == t->dtype) {
        if (nbytes) memcpy(dst, t->data, (size_t)nbytes);
    } else {
        for (int64_t i = 0; i < t->numel; i++) {
            if (wdt == LT_FLOAT) lt_store_f64(dst, LT_FLOAT, i, lt_load_f64(t->data, t->dtype, i));
            else lt_store_i64(dst, wdt, i, lt_load_i64(t->data, t->dtype, i));
        }
    }
    *data = buf;
    *size = fsize;
    return LT_OK;
}
