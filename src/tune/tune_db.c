/* tune_db.c — the tuning database: key -> best schedule and time, kept in a TSV file (tune.h).
 *
 * In memory: an array of entries (heap, grown by doubling), an index from the key's three fields
 * joined by tabs to the entry number (base/strmap.h), and an arena for the step arrays and the
 * index's key texts. Replacing an entry allocates its new steps in the arena (the old ones stay
 * until the database is freed: entries improve a bounded number of times).
 * Invariants: every stored key passed check_key; at most one entry per key; time_s > 0 and finite.
 * The file is trusted as the compiled-module cache trusts what it loads (its schedules steer the
 * generated code): read by lt_private_read (base/private_file.h), so only a regular file of the
 * effective user's that group and others cannot write, through one descriptor, links not followed.
 */
#include "tune.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/hash.h"
#include "../base/strmap.h"
#include "../base/private_file.h"
#include "../io/io.h"
#include "../profile/profile.h"

struct lt_tune_db {
    lt_tune_entry *e;
    int n, cap;
    lt_strmap index; /* key text (key_text) -> entry number + 1, as a pointer-sized integer */
    lt_arena arena;  /* step arrays, key texts */
};

/* ---- keys ---- */

static bool clean_field(const char *s) { return !strpbrk(s, "\t\n\r"); }

static lt_status set_fields(lt_ctx *ctx, lt_tune_key *k, const char *target, const char *shapes) {
    if (!target || !*target) return lt_error(ctx, LT_ERR_USAGE, "tuning key: empty target");
    if (!shapes) shapes = "";
    if (strlen(target) >= sizeof k->target || strlen(shapes) >= sizeof k->shapes)
        return lt_error(ctx, LT_ERR_USAGE, "tuning key: target '%.40s' or shapes '%.40s' too long", target, shapes);
    if (!clean_field(target) || !clean_field(shapes) || !strcmp(shapes, "-"))
        return lt_error(ctx, LT_ERR_USAGE, "tuning key: target '%s' / shapes '%s' may not hold tabs or newlines (or be \"-\")",
                        target, shapes);
    snprintf(k->target, sizeof k->target, "%s", target);
    snprintf(k->shapes, sizeof k->shapes, "%s", shapes);
    return LT_OK;
}

lt_status lt_tune_key_make(lt_ctx *ctx, const void *text, size_t len, const char *target, const char *shapes,
                           lt_tune_key *out) {
    lt_tune_key k;
    memset(&k, 0, sizeof k);
    LT_TRY(set_fields(ctx, &k, target, shapes));
    lt_sha256_hex(text, len, k.hash);
    *out = k;
    return LT_OK;
}

lt_status lt_tune_key_kernel(lt_ctx *ctx, const lt_kernel *k, const char *target, const char *shapes,
                             lt_tune_key *out) {
    /* printed with the kernel's and its buffers' names left out (buffers as b<id>): a model's
     * identical layers, whose buffers carry their values' names, share the key. The names are
     * swapped for the print and put back. */
    lt_strbuf b = {0};
    lt_kernel anon = *k;
    anon.name = "kernel";
    char (*ids)[16] = malloc(sizeof *ids * (size_t)(k->n_bufs + 1));
    const char **names = malloc(sizeof *names * (size_t)(k->n_bufs + 1));
    if (!ids || !names) {
        free(ids);
        free(names);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (tuning key of kernel %s)", k->name);
    }
    for (int i = 0; i < k->n_bufs; i++) {
        lt_lbuf *buf = k->bufs[i];
        names[i] = buf ? buf->name : NULL;
        snprintf(ids[i], sizeof ids[i], "b%d", i);
        if (buf) buf->name = ids[i];
    }
    lt_kernel_print(&anon, &b);
    for (int i = 0; i < k->n_bufs; i++)
        if (k->bufs[i]) k->bufs[i]->name = names[i];
    free(ids);
    free(names);
    if (b.failed || !b.s) {
        lt_sb_free(&b);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (printing kernel %s for its tuning key)", k->name);
    }
    lt_status s = lt_tune_key_make(ctx, b.s, b.len, target, shapes, out);
    lt_sb_free(&b);
    return s;
}

void lt_tune_target_cpu(char *buf, size_t n) { snprintf(buf, n, "cpu-%s", lt_ceilings_isa()); }

static bool is_hex64(const char *h) {
    if (strlen(h) != 64) return false;
    for (const char *p = h; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
    return true;
}

static lt_status check_key(lt_ctx *ctx, const lt_tune_key *k) {
    if (!memchr(k->hash, 0, sizeof k->hash) || !is_hex64(k->hash))
        return lt_error(ctx, LT_ERR_USAGE, "tuning key: hash is not 64 lowercase hex digits");
    if (!memchr(k->target, 0, sizeof k->target) || !memchr(k->shapes, 0, sizeof k->shapes))
        return lt_error(ctx, LT_ERR_USAGE, "tuning key: unterminated target or shapes");
    lt_tune_key tmp;
    return set_fields(ctx, &tmp, k->target, k->shapes);
}

/* The key as one string for the index: its fields joined by tabs (no field holds one). */
#define KEY_TEXT_MAX (sizeof((lt_tune_key *)0)->hash + LT_TUNE_TARGET_MAX + LT_TUNE_SHAPES_MAX + 2)
static size_t key_text(const lt_tune_key *k, char *buf) {
    int n = snprintf(buf, KEY_TEXT_MAX, "%s\t%s\t%s", k->hash, k->target, k->shapes);
    return n < 0 ? 0 : (size_t)n;
}

static int key_cmp(const lt_tune_key *a, const lt_tune_key *b) {
    int c = strcmp(a->hash, b->hash);
    if (!c) c = strcmp(a->target, b->target);
    if (!c) c = strcmp(a->shapes, b->shapes);
    return c;
}

/* ---- schedule text ---- */

void lt_tune_schedule_format(const lt_schedule *s, lt_strbuf *out) {
    if (s->n <= 0) {
        lt_sb_printf(out, "-");
        return;
    }
    for (int i = 0; i < s->n && i < (int)(sizeof s->steps / sizeof s->steps[0]); i++) {
        char line[256];
        lt_sstep_format(&s->steps[i], line, sizeof line);
        lt_sb_printf(out, "%s%s", i ? "; " : "", line);
    }
}

lt_status lt_tune_schedule_parse(lt_ctx *ctx, const char *line, lt_schedule *out) {
    lt_schedule s;
    s.n = 0;
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (!strcmp(p, "-") || !*p) {
        *out = s;
        return LT_OK;
    }
    for (;;) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        char step[512];
        if (len >= sizeof step) return lt_error(ctx, LT_ERR_INVALID, "schedule step too long: '%.60s...'", p);
        memcpy(step, p, len);
        step[len] = 0;
        if (s.n == (int)(sizeof s.steps / sizeof s.steps[0]))
            return lt_error(ctx, LT_ERR_INVALID, "schedule has more than %d steps", (int)(sizeof s.steps / sizeof s.steps[0]));
        LT_TRY(lt_sstep_parse(ctx, step, &s.steps[s.n]));
        s.n++;
        if (!semi) break;
        p = semi + 1;
    }
    *out = s;
    return LT_OK;
}

/* ---- the table ---- */

lt_status lt_tune_db_new(lt_ctx *ctx, lt_tune_db **out) {
    lt_tune_db *db = lt_calloc(ctx, 1, sizeof *db, "tuning database");
    if (!db) return LT_ERR_NOMEM;
    lt_arena_init(&db->arena);
    *out = db;
    return LT_OK;
}

void lt_tune_db_free(lt_tune_db *db) {
    if (!db) return;
    lt_mem_free(db->e);
    lt_strmap_free(&db->index);
    lt_arena_free(&db->arena);
    lt_mem_free(db);
}

int lt_tune_db_count(const lt_tune_db *db) { return db->n; }

const lt_tune_entry *lt_tune_db_get(const lt_tune_db *db, int i) { return i >= 0 && i < db->n ? &db->e[i] : NULL; }

const lt_tune_entry *lt_tune_db_lookup(const lt_tune_db *db, const lt_tune_key *key) {
    char text[KEY_TEXT_MAX];
    intptr_t v = (intptr_t)lt_strmap_get(&db->index, text, key_text(key, text));
    return v ? &db->e[v - 1] : NULL;
}

static lt_status set_steps(lt_ctx *ctx, lt_tune_db *db, lt_tune_entry *e, const lt_schedule *s) {
    int n = s->n < 0 ? 0 : s->n;
    lt_sstep *steps = NULL;
    if (n) {
        steps = lt_arena_alloc(&db->arena, (size_t)n * sizeof *steps);
        if (!steps) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (tuning database steps)");
        memcpy(steps, s->steps, (size_t)n * sizeof *steps);
    }
    e->steps = steps;
    e->n_steps = n;
    return LT_OK;
}

lt_status lt_tune_db_insert(lt_ctx *ctx, lt_tune_db *db, const lt_tune_key *key, const lt_schedule *s, double time_s,
                            bool *stored) {
    if (stored) *stored = false;
    LT_TRY(check_key(ctx, key));
    if (!isfinite(time_s) || time_s <= 0)
        return lt_error(ctx, LT_ERR_USAGE, "tuning database: time %g s for kernel %.12s is not positive", time_s, key->hash);
    if (s->n < 0 || s->n > (int)(sizeof s->steps / sizeof s->steps[0]))
        return lt_error(ctx, LT_ERR_USAGE, "tuning database: schedule of %d steps", s->n);
    for (int i = 0; i < s->n; i++) { /* every step must survive the text file */
        char line[256];
        lt_sstep back;
        lt_ctx tmp = {0};
        lt_sstep_format(&s->steps[i], line, sizeof line);
        if (strchr(line, ';') || lt_sstep_parse(&tmp, line, &back) != LT_OK || back.kind != s->steps[i].kind ||
            strcmp(back.loop, s->steps[i].loop) || strcmp(back.loop2, s->steps[i].loop2) ||
            strcmp(back.name, s->steps[i].name) || back.factor != s->steps[i].factor ||
            back.factor2 != s->steps[i].factor2)
            return lt_error(ctx, LT_ERR_USAGE, "tuning database: step %d ('%s') of kernel %.12s does not read back as written",
                            i, line, key->hash);
    }
    char text[KEY_TEXT_MAX];
    size_t tl = key_text(key, text);
    intptr_t found = (intptr_t)lt_strmap_get(&db->index, text, tl);
    if (found) {
        lt_tune_entry *e = &db->e[found - 1];
        if (!(time_s < e->time_s)) return LT_OK; /* the stored one is at least as fast */
        LT_TRY(set_steps(ctx, db, e, s));
        e->time_s = time_s;
        if (stored) *stored = true;
        return LT_OK;
    }
    if (db->n == db->cap) {
        int cap = db->cap ? db->cap * 2 : 32;
        lt_tune_entry *ne = lt_mem_realloc(db->e, (size_t)cap * sizeof *ne);
        if (!ne) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (tuning database of %d entries)", cap);
        db->e = ne;
        db->cap = cap;
    }
    lt_tune_entry *e = &db->e[db->n];
    memset(e, 0, sizeof *e);
    e->key = *key;
    e->time_s = time_s;
    LT_TRY(set_steps(ctx, db, e, s));
    char *kept = lt_arena_strdup(&db->arena, text);
    if (!kept || !lt_strmap_put(&db->index, kept, (void *)(intptr_t)(db->n + 1)))
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (tuning database index)");
    db->n++;
    if (stored) *stored = true;
    return LT_OK;
}

void lt_tune_entry_schedule(const lt_tune_entry *e, lt_schedule *out) {
    int n = e->n_steps;
    if (n > (int)(sizeof out->steps / sizeof out->steps[0])) n = (int)(sizeof out->steps / sizeof out->steps[0]);
    out->n = n;
    if (n) memcpy(out->steps, e->steps, (size_t)n * sizeof *e->steps);
}

/* ---- the file ---- */

#define DB_HEADER "# lathe tuning database v1\n# hash\ttarget\tshapes\tseconds\tschedule\n"

static lt_status parse_line(lt_ctx *ctx, lt_tune_db *db, const char *path, int line_no, char *line) {
    char *f[5];
    int nf = 0;
    for (char *p = line;;) {
        if (nf == 5) return lt_error(ctx, LT_ERR_INVALID, "%s:%d: more than 5 tab-separated fields", path, line_no);
        f[nf++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = 0;
        p = tab + 1;
    }
    if (nf != 5) return lt_error(ctx, LT_ERR_INVALID, "%s:%d: expected 5 tab-separated fields, got %d", path, line_no, nf);
    lt_tune_key key;
    memset(&key, 0, sizeof key);
    if (!is_hex64(f[0])) return lt_error(ctx, LT_ERR_INVALID, "%s:%d: hash '%.70s' is not 64 hex digits", path, line_no, f[0]);
    memcpy(key.hash, f[0], 65);
    lt_ctx tmp = {0};
    if (set_fields(&tmp, &key, f[1], strcmp(f[2], "-") ? f[2] : "") != LT_OK)
        return lt_error(ctx, LT_ERR_INVALID, "%s:%d: %s", path, line_no, tmp.msg);
    char *end;
    errno = 0;
    double t = strtod(f[3], &end);
    if (end == f[3] || *end || errno || !isfinite(t) || t <= 0)
        return lt_error(ctx, LT_ERR_INVALID, "%s:%d: time '%.40s' is not a positive number of seconds", path, line_no, f[3]);
    lt_schedule s;
    if (lt_tune_schedule_parse(&tmp, f[4], &s) != LT_OK)
        return lt_error(ctx, LT_ERR_INVALID, "%s:%d: %s", path, line_no, tmp.msg);
    return lt_tune_db_insert(ctx, db, &key, &s, t, NULL);
}

lt_status lt_tune_db_load(lt_ctx *ctx, lt_tune_db *db, const char *path) {
    if (!path || !*path) return lt_error(ctx, LT_ERR_USAGE, "tuning database: no path");
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT) return LT_OK;
    uint8_t *raw = NULL;
    size_t size = 0;
    LT_TRY(lt_private_read(ctx, path, "tuning database", LT_IO_MAX_FILE, &raw, &size));
    lt_status s = lt_tune_db_load_text(ctx, db, raw, size, path);
    lt_mem_free(raw);
    return s;
}

lt_status lt_tune_db_load_text(lt_ctx *ctx, lt_tune_db *db, const void *text, size_t size, const char *path) {
    char *data = lt_alloc(ctx, size + 1, path);
    if (!data) return LT_ERR_NOMEM;
    if (size) memcpy(data, text, size);
    data[size] = 0;
    if (memchr(data, 0, size)) {
        lt_mem_free(data);
        return lt_error(ctx, LT_ERR_INVALID, "%s: not a text file (NUL byte)", path);
    }
    lt_status s = LT_OK;
    int line_no = 0;
    for (char *p = data; *p && s == LT_OK;) {
        char *nl = strchr(p, '\n'), *line = p;
        if (nl) *nl = 0;
        p = nl ? nl + 1 : p + strlen(p);
        line_no++;
        size_t ll = strlen(line);
        if (ll && line[ll - 1] == '\r') line[--ll] = 0;
        if (!ll || line[0] == '#') continue;
        s = parse_line(ctx, db, path, line_no, line);
    }
    lt_mem_free(data);
    return s;
}

/* Stable merge sort of entry numbers by key (tmp: scratch of the same length). */
static void sort_by_key(const lt_tune_db *db, int *a, int *tmp, int n) {
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = key_cmp(&db->e[a[j]].key, &db->e[a[i]].key) < 0 ? a[j++] : a[i++];
            while (i < mid) tmp[o++] = a[i++];
            while (j < hi) tmp[o++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

lt_status lt_tune_db_save(lt_ctx *ctx, const lt_tune_db *db, const char *path) {
    if (!path || !*path) return lt_error(ctx, LT_ERR_USAGE, "tuning database: no path");
    int *order = db->n ? lt_calloc(ctx, 2 * (size_t)db->n, sizeof *order, "tuning database order") : NULL;
    if (db->n && !order) return LT_ERR_NOMEM;
    for (int i = 0; i < db->n; i++) order[i] = i;
    if (db->n) sort_by_key(db, order, order + db->n, db->n);
    lt_strbuf b = {0};
    lt_sb_printf(&b, DB_HEADER);
    for (int i = 0; i < db->n; i++) {
        const lt_tune_entry *e = &db->e[order[i]];
        lt_sb_printf(&b, "%s\t%s\t%s\t%.6g\t", e->key.hash, e->key.target, e->key.shapes[0] ? e->key.shapes : "-",
                     e->time_s);
        lt_schedule s;
        lt_tune_entry_schedule(e, &s);
        lt_tune_schedule_format(&s, &b);
        lt_sb_printf(&b, "\n");
    }
    lt_mem_free(order);
    lt_status st = b.failed ? lt_error(ctx, LT_ERR_NOMEM, "out of memory (formatting %s)", path)
                            : lt_io_write_file_atomic(ctx, path, b.s, b.len);
    lt_sb_free(&b);
    return st;
}
