/* npz.c — numpy .npz archives: a bounded zip reader (end-of-central-directory search, zip64 records
 * and extras, stored or deflated members inflated with zlib, CRC-32 checked, every offset and size
 * checked against the archive before use) and a writer of stored (uncompressed) archives.
 * Entry points: lt_npz_decode, lt_npz_read_file, lt_npz_free, lt_npz_find, lt_npz_encode,
 * lt_npz_write_file (io.h).
 */
#include "io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u
#define MAX_MEMBERS 100000

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

void lt_npz_free(lt_npz *z) {
    if (!z) return;
    for (int i = 0; i < z->n; i++) {
        lt_mem_free(z->names[i]);
        lt_tensor_release(z->tensors[i]);
    }
    lt_mem_free(z->names);
    lt_mem_free(z->tensors);
    lt_mem_free(z);
}

int lt_npz_find(const lt_npz *z, const char *name) {
    for (int i = 0; i < z->n; i++)
        if (strcmp(z->names[i], name) == 0) return i;
    return -1;
}

/* Extract one member's bytes (heap). */
static lt_status extract(lt_ctx *ctx, const uint8_t *b, size_t size, const char *what, const char *name,
                         uint64_t loff, uint64_t csize, uint64_t usize, unsigned method, uint32_t crc,
                         uint8_t **out) {
    if (loff > size || size - loff < 30 || rd32(b + loff) != SIG_LOCAL)
        return lt_error(ctx, LT_ERR_INVALID, "%s: member '%s': bad local header at offset %llu", what, name,
                        (unsigned long long)loff);
    uint64_t doff = loff + 30 + rd16(b + loff + 26) + rd16(b + loff + 28);
    if (doff > size || csize > size - doff)
        return lt_error(ctx, LT_ERR_INVALID, "%s: member '%s': data (%llu bytes at %llu) runs past the end",
                        what, name, (unsigned long long)csize, (unsigned long long)doff);
    if (usize > (uint64_t)LT_IO_MAX_FILE)
        return lt_error(ctx, LT_ERR_INVALID, "%s: member '%s' is too large (%llu bytes)", what, name,
                        (unsigned long long)usize);
    if (method == 0 && csize != usize)
        return lt_error(ctx, LT_ERR_INVALID, "%s: member '%s': stored sizes disagree", what, name);
    /* deflate cannot expand more than ~1032:1: a larger claim is corrupt (or a bomb). */
    if (method == 8 && usize > csize * 1100 + 1024)
        return lt_error(ctx, LT_ERR_INVALID, "%s: member '%s': implausible size %llu for %llu compressed bytes",
                        what, name, (unsigned long long)usize, (unsigned long long)csize);
    uint8_t *buf = lt_alloc(ctx, (size_t)usize + 1, "npz member");
    if (!buf) return LT_ERR_NOMEM;
    if (method == 0) {
        if (usize) memcpy(buf, b + doff, (size_t)usize);
    } else {
        z_stream zs;
        memset(&zs, 0, sizeof zs);
        if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
            lt_mem_free(buf);
            return lt_error(ctx, LT_ERR_NOMEM, "%s: zlib initialization failed", what);
        }
        /* Feed input and output space in chunks (uInt is 32 bits); one spare output byte makes a
         * stream longer than declared show up as total > usize. */
        uint64_t in_given = 0, out_cap = usize + 1, out_given = 0;
        int zr;
        do {
            if (zs.avail_in == 0 && in_given < csize) {
                uInt c = csize - in_given > 0x40000000u ? 0x40000000u : (uInt)(csize - in_given);
                zs.next_in = (Bytef *)(uintptr_t)(b + doff + in_given);
                zs.avail_in = c;
                in_given += c;
            }
            if (zs.avail_out == 0 && out_given < out_cap) {
                uInt c = out_cap - out_given > 0x40000000u ? 0x40000000u : (uInt)(out_cap - out_given);
                zs.next_out = buf + out_given;
                zs.avail_out = c;
                out_given += c;
            }
            zr = inflate(&zs, Z_NO_FLUSH);
        } while (zr == Z_OK);
        uint64_t out_done = out_given - zs.avail_out;
        inflateEnd(&zs);
        if (out_done > usize) { /* never grown: the spare byte shows the excess */
            lt_mem_free(buf);
            return lt_error(ctx, LT_ERR_INVALID, "%s: member '%s' inflates to more than the %llu bytes its directory entry claims",
                            what, name, (unsigned long long)usize);
        }
        if (zr != Z_STREAM_END || out_done != usize) {
            lt_mem_free(buf);
            return lt_error(ctx, LT_ERR_INVALID, "%s: member '%s': corrupt deflate data", what, name);
        }
    }
    uLong c = crc32(0L, Z_NULL, 0);
    for (uint64_t off = 0; off < usize;) {
        uInt chunk = usize - off > 0x40000000u ? 0x40000000u : (uInt)(usize - off);
        c = crc32(c, buf + off, chunk);
        off += chunk;
    }
    if ((uint32_t)c != crc) {
        lt_mem_free(buf);
        return lt_error(ctx, LT_ERR_INVALID, "%s: member '%s': CRC-32 mismatch", what, name);
    }
    *out = buf;
    return LT_OK;
}

/* One .npy member of the central directory. */
typedef struct npz_member {
    const char *name; /* in the archive, not NUL-terminated: name_len bytes without ".npy" */
    int name_len;
    unsigned method;
    uint32_t crc;
    uint64_t csize, usize, loff;
    uint64_t begin, end; /* the bytes it occupies: local header through compressed data */
} npz_member;

static int by_position(const void *a, const void *b) {
    const npz_member *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int by_name(const void *a, const void *b) {
    const npz_member *x = a, *y = b;
    int c = memcmp(x->name, y->name, (size_t)(x->name_len < y->name_len ? x->name_len : y->name_len));
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Where member m's local header and data lie: [begin, end) within the archive. */
static lt_status member_extent(lt_ctx *ctx, const uint8_t *b, size_t size, const char *what, npz_member *m) {
    if (m->loff > size || size - m->loff < 30 || rd32(b + m->loff) != SIG_LOCAL)
        return lt_error(ctx, LT_ERR_INVALID, "%s: member '%.*s.npy': bad local header at offset %llu", what, m->name_len,
                        m->name, (unsigned long long)m->loff);
    uint64_t doff = m->loff + 30 + rd16(b + m->loff + 26) + rd16(b + m->loff + 28);
    if (doff > size || m->csize > size - doff)
        return lt_error(ctx, LT_ERR_INVALID, "%s: member '%.*s.npy': data (%llu bytes at %llu) runs past the end", what,
                        m->name_len, m->name, (unsigned long long)m->csize, (unsigned long long)doff);
    m->begin = m->loff;
    m->end = doff + m->csize;
    return LT_OK;
}

/* Read the central directory's .npy members into ms[0..*n) (other entries, e.g. folders, skipped). */
static lt_status read_directory(lt_ctx *ctx, const uint8_t *b, size_t size, const char *what, size_t p, size_t end,
                                uint64_t count, npz_member *ms, int *n) {
    for (uint64_t e = 0; e < count; e++) {
        if (end - p < 46 || rd32(b + p) != SIG_CENTRAL)
            return lt_error(ctx, LT_ERR_INVALID, "%s: bad central directory entry %llu at offset %zu", what,
                            (unsigned long long)e, p);
        unsigned flags = rd16(b + p + 8), method = rd16(b + p + 10);
        uint32_t crc = rd32(b + p + 16);
        uint64_t csize = rd32(b + p + 20), usize = rd32(b + p + 24), loff = rd32(b + p + 42);
        size_t nlen = rd16(b + p + 28), xlen = rd16(b + p + 30), clen = rd16(b + p + 32);
        if (end - p - 46 < nlen + xlen + clen)
            return lt_error(ctx, LT_ERR_INVALID, "%s: central directory entry %llu runs past the directory", what,
                            (unsigned long long)e);
        npz_member *m = &ms[*n];
        const char *name = (const char *)b + p + 46;
        if (nlen >= 1024) return lt_error(ctx, LT_ERR_INVALID, "%s: member name too long", what);
        if (memchr(name, 0, nlen)) return lt_error(ctx, LT_ERR_INVALID, "%s: member name contains a NUL byte", what);
        /* zip64 extra: the 0xFFFFFFFF fields, in the order usize, csize, offset */
        const uint8_t *x = b + p + 46 + nlen, *xend = x + xlen;
        while (xend - x >= 4) {
            unsigned id = rd16(x), len = rd16(x + 2);
            if ((size_t)(xend - x - 4) < len) break;
            if (id == 0x0001) {
                const uint8_t *f = x + 4, *fend = f + len;
                if (usize == 0xFFFFFFFFu && fend - f >= 8) { usize = rd64(f); f += 8; }
                if (csize == 0xFFFFFFFFu && fend - f >= 8) { csize = rd64(f); f += 8; }
                if (loff == 0xFFFFFFFFu && fend - f >= 8) { loff = rd64(f); f += 8; }
            }
            x += 4 + len;
        }
        p += 46 + nlen + xlen + clen;
        if (nlen < 4 || memcmp(name + nlen - 4, ".npy", 4) != 0) continue; /* not an array (e.g. a folder) */
        if (flags & 1)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s:%.*s: encrypted members are not supported", what, (int)nlen, name);
        if (method != 0 && method != 8)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s:%.*s: compression method %u is not supported (stored or deflate only)",
                            what, (int)nlen, name, method);
        m->name = name;
        m->name_len = (int)nlen - 4;
        m->method = method;
        m->crc = crc;
        m->csize = csize;
        m->usize = usize;
        m->loff = loff;
        LT_TRY(member_extent(ctx, b, size, what, m));
        (*n)++;
    }
    return LT_OK;
}

/* Members may not share bytes (the zip bomb that points many entries at one deflate stream), and
 * the sizes they claim may not add up to more than the limit: both checked before inflating. */
static lt_status check_members(lt_ctx *ctx, const char *what, const npz_member *ms, int n, int64_t limit) {
    npz_member *sorted = lt_alloc(ctx, (size_t)(n ? n : 1) * sizeof *sorted, "npz directory");
    if (!sorted) return LT_ERR_NOMEM;
    memcpy(sorted, ms, (size_t)n * sizeof *sorted);
    lt_status st = LT_OK;
    qsort(sorted, (size_t)n, sizeof *sorted, by_name);
    for (int i = 1; i < n && st == LT_OK; i++)
        if (by_name(&sorted[i - 1], &sorted[i]) == 0)
            st = lt_error(ctx, LT_ERR_INVALID, "%s:%.*s.npy: duplicate member", what, sorted[i].name_len, sorted[i].name);
    qsort(sorted, (size_t)n, sizeof *sorted, by_position);
    for (int i = 1; i < n && st == LT_OK; i++)
        if (sorted[i].begin < sorted[i - 1].end)
            st = lt_error(ctx, LT_ERR_INVALID,
                          "%s: members '%.*s.npy' (bytes %llu..%llu) and '%.*s.npy' (from byte %llu) overlap: refused as a "
                          "zip bomb", what, sorted[i - 1].name_len, sorted[i - 1].name,
                          (unsigned long long)sorted[i - 1].begin, (unsigned long long)sorted[i - 1].end,
                          sorted[i].name_len, sorted[i].name, (unsigned long long)sorted[i].begin);
    lt_mem_free(sorted);
    uint64_t total = 0; /* <= limit */
    for (int i = 0; i < n && st == LT_OK; i++) {
        if (ms[i].usize > (uint64_t)limit - total)
            st = lt_error(ctx, LT_ERR_INVALID,
                          "%s: the members up to '%.*s.npy' claim more than the limit of %lld bytes for decoded arrays "
                          "(this one %llu bytes)", what, ms[i].name_len, ms[i].name, (long long)limit,
                          (unsigned long long)ms[i].usize);
        else total += ms[i].usize;
    }
    return st;
}

lt_status lt_npz_decode(lt_ctx *ctx, const void *data, size_t size, const char *what, lt_npz **out) {
    return lt_npz_decode_limited(ctx, data, size, what, NULL, out);
}

lt_status lt_npz_decode_limited(lt_ctx *ctx, const void *data, size_t size, const char *what,
                                const lt_io_limits *lim, lt_npz **out) {
    const uint8_t *b = data;
    if (size < 22) return lt_error(ctx, LT_ERR_INVALID, "%s: not a zip/npz file (too short)", what);
    /* End of central directory: last 22 bytes, or earlier by up to a 65535-byte comment. */
    size_t eocd = SIZE_MAX;
    size_t lo = size - 22 > 65535 ? size - 22 - 65535 : 0;
    for (size_t p = size - 22 + 1; p-- > lo;)
        if (rd32(b + p) == SIG_EOCD && p + 22 + rd16(b + p + 20) <= size) { eocd = p; break; }
    if (eocd == SIZE_MAX) return lt_error(ctx, LT_ERR_INVALID, "%s: not a zip/npz file (no end of central directory)", what);
    uint64_t count = rd16(b + eocd + 10), cd_size = rd32(b + eocd + 12), cd_off = rd32(b + eocd + 16);
    if (rd16(b + eocd + 4) != 0 || rd16(b + eocd + 6) != 0)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported", what);
    if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
        if (eocd < 20 || rd32(b + eocd - 20) != SIG_LOC64)
            return lt_error(ctx, LT_ERR_INVALID, "%s: zip64 locator missing", what);
        uint64_t e64 = rd64(b + eocd - 20 + 8);
        if (e64 > size || size - e64 < 56 || rd32(b + e64) != SIG_EOCD64)
            return lt_error(ctx, LT_ERR_INVALID, "%s: bad zip64 end of central directory", what);
        count = rd64(b + e64 + 32);
        cd_size = rd64(b + e64 + 40);
        cd_off = rd64(b + e64 + 48);
    }
    if (cd_off > size || cd_size > size - cd_off)
        return lt_error(ctx, LT_ERR_INVALID, "%s: central directory (%llu bytes at %llu) runs past the end", what,
                        (unsigned long long)cd_size, (unsigned long long)cd_off);
    if (count > MAX_MEMBERS || count > cd_size / 46 + 1)
        return lt_error(ctx, LT_ERR_INVALID, "%s: implausible member count %llu", what, (unsigned long long)count);
    int64_t limit = lt_io_max_bytes(lim);
    npz_member *ms = lt_calloc(ctx, (size_t)count + 1, sizeof *ms, "npz directory");
    lt_npz *z = ms ? lt_calloc(ctx, 1, sizeof *z, "npz") : NULL;
    if (!z) { lt_mem_free(ms); return LT_ERR_NOMEM; }
    int nm = 0;
    lt_status st = read_directory(ctx, b, size, what, (size_t)cd_off, (size_t)(cd_off + cd_size), count, ms, &nm);
    if (st == LT_OK) st = check_members(ctx, what, ms, nm, limit);
    if (st == LT_OK && nm) {
        z->names = lt_calloc(ctx, (size_t)nm, sizeof *z->names, "npz");
        z->tensors = lt_calloc(ctx, (size_t)nm, sizeof *z->tensors, "npz");
        if (!z->names || !z->tensors) st = LT_ERR_NOMEM;
    }
    int64_t used = 0; /* decoded bytes so far (each member's own within the limit left) */
    char label[1400];
    for (int i = 0; i < nm && st == LT_OK; i++) {
        const npz_member *m = &ms[i];
        snprintf(label, sizeof label, "%s:%.*s.npy", what, m->name_len, m->name);
        uint8_t *mem = NULL;
        st = extract(ctx, b, size, what, label + strlen(what) + 1, m->loff, m->csize, m->usize, m->method, m->crc, &mem);
        if (st != LT_OK) break;
        lt_tensor *t = NULL;
        lt_io_limits left = {limit - used};
        if (left.max_bytes <= 0) left.max_bytes = 1;
        st = lt_npy_decode_limited(ctx, mem, (size_t)m->usize, label, &left, &t);
        lt_mem_free(mem);
        if (st != LT_OK) break;
        used += lt_tensor_nbytes(t) + (t->dtype == LT_STRING ? t->numel * ((int64_t)sizeof(char *) + 32) : 0);
        char *nmcopy = lt_alloc(ctx, (size_t)m->name_len + 1, "npz member name");
        if (nmcopy) memcpy(nmcopy, m->name, (size_t)m->name_len), nmcopy[m->name_len] = 0;
        if (!nmcopy) { lt_tensor_release(t); st = lt_error(ctx, LT_ERR_NOMEM, "out of memory (npz)"); break; }
        z->names[z->n] = nmcopy;
        z->tensors[z->n] = t;
        z->n++;
    }
    lt_mem_free(ms);
    if (st != LT_OK) { lt_npz_free(z); return st; }
    *out = z;
    return LT_OK;
}

lt_status lt_npz_read_file(lt_ctx *ctx, const char *path, lt_npz **out) {
    return lt_npz_read_file_limited(ctx, path, NULL, out);
}

lt_status lt_npz_read_file_limited(lt_ctx *ctx, const char *path, const lt_io_limits *lim, lt_npz **out) {
    uint8_t *data;
    size_t size;
    LT_TRY(lt_io_read_file(ctx, path, &data, &size));
    lt_status st = lt_npz_decode_limited(ctx, data, size, path, lim, out);
    lt_mem_free(data);
    return st;
}

/* ---- writer (stored members, classic zip: each offset and size below 4 GiB) ---- */
static void wr16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }

lt_status lt_npz_encode(lt_ctx *ctx, int n, const char *const *names, const lt_tensor *const *ts,
                        uint8_t **data, size_t *size, bool *widened) {
    if (n < 0 || n > 0xFFFE) return lt_error(ctx, LT_ERR_UNSUPPORTED, "too many arrays for .npz (%d)", n);
    uint8_t **imgs = lt_calloc(ctx, (size_t)(n ? n : 1), sizeof *imgs, "npz");
    size_t *lens = lt_calloc(ctx, (size_t)(n ? n : 1), sizeof *lens, "npz");
    uint8_t *buf = NULL;
    lt_status st = LT_OK;
    if (!imgs || !lens) { st = LT_ERR_NOMEM; goto done; }
    uint64_t total = 22;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        if (nl == 0 || nl + 4 > 0xFFFF) { st = lt_error(ctx, LT_ERR_INVALID, "bad array name '%s' for .npz", names[i]); goto done; }
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0) { st = lt_error(ctx, LT_ERR_INVALID, "duplicate array name '%s' for .npz", names[i]); goto done; }
        st = lt_npy_encode(ctx, ts[i], &imgs[i], &lens[i], widened);
        if (st != LT_OK) goto done;
        total += 30 + 46 + 2 * (nl + 4) + (uint64_t)lens[i];
        if (total >= 0xFFFFFFFFu) {
            st = lt_error(ctx, LT_ERR_UNSUPPORTED, "arrays too large for the .npz writer (4 GiB total)");
            goto done;
        }
    }
    buf = lt_alloc(ctx, (size_t)total, "npz image");
    if (!buf) { st = LT_ERR_NOMEM; goto done; }
    size_t p = 0;
    uint32_t *offs = NULL, *crcs = NULL;
    offs = lt_calloc(ctx, (size_t)(n ? n : 1), sizeof *offs, "npz");
    crcs = lt_calloc(ctx, (size_t)(n ? n : 1), sizeof *crcs, "npz");
    if (!offs || !crcs) { lt_mem_free(offs); lt_mem_free(crcs); st = LT_ERR_NOMEM; goto done; }
    const unsigned dos_time = 0, dos_date = (0 << 9) | (1 << 5) | 1; /* 1980-01-01 00:00 */
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(names[i]) + 4;
        crcs[i] = (uint32_t)crc32(crc32(0L, Z_NULL, 0), imgs[i], (uInt)lens[i]);
        offs[i] = (uint32_t)p;
        uint8_t *h = buf + p;
        wr32(h, SIG_LOCAL); wr16(h + 4, 20); wr16(h + 6, 0); wr16(h + 8, 0);
        wr16(h + 10, dos_time); wr16(h + 12, dos_date); wr32(h + 14, crcs[i]);
        wr32(h + 18, (uint32_t)lens[i]); wr32(h + 22, (uint32_t)lens[i]);
        wr16(h + 26, (unsigned)nl); wr16(h + 28, 0);
        memcpy(h + 30, names[i], nl - 4);
        memcpy(h + 30 + nl - 4, ".npy", 4);
        p += 30 + nl;
        memcpy(buf + p, imgs[i], lens[i]);
        p += lens[i];
    }
    size_t cd_off = p;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(names[i]) + 4;
        uint8_t *h = buf + p;
        wr32(h, SIG_CENTRAL); wr16(h + 4, 20); wr16(h + 6, 20); wr16(h + 8, 0); wr16(h + 10, 0);
        wr16(h + 12, dos_time); wr16(h + 14, dos_date); wr32(h + 16, crcs[i]);
        wr32(h + 20, (uint32_t)lens[i]); wr32(h + 24, (uint32_t)lens[i]);
        wr16(h + 28, (unsigned)nl); wr16(h + 30, 0); wr16(h + 32, 0); wr16(h + 34, 0); wr16(h + 36, 0);
        wr32(h + 38, 0644u << 16); wr32(h + 42, offs[i]);
        memcpy(h + 46, names[i], nl - 4);
        memcpy(h + 46 + nl - 4, ".npy", 4);
        p += 46 + nl;
    }
    uint8_t *e = buf + p;
    wr32(e, SIG_EOCD); wr16(e + 4, 0); wr16(e + 6, 0); wr16(e + 8, (unsigned)n); wr16(e + 10, (unsigned)n);
    wr32(e + 12, (uint32_t)(p - cd_off)); wr32(e + 16, (uint32_t)cd_off); wr16(e + 20, 0);
    p += 22;
    lt_mem_free(offs);
    lt_mem_free(crcs);
    *data = buf;
    *size = p;
    buf = NULL;
done:
    for (int i = 0; imgs && i < n; i++) lt_mem_free(imgs[i]);
    lt_mem_free(imgs);
    lt_mem_free(lens);
    lt_mem_free(buf);
    return st;
}

lt_status lt_npz_write_file(lt_ctx *ctx, const char *path, int n, const char *const *names,
                            const lt_tensor *const *ts, bool *widened) {
    uint8_t *data;
    size_t size;
    LT_TRY(lt_npz_encode(ctx, n, names, ts, &data, &size, widened));
    lt_status st = lt_io_write_file_atomic(ctx, path, data, size);
    lt_mem_free(data);
    return st;
}
