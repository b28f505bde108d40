/* external.c — tensors stored outside the model file (data_location = EXTERNAL), and the model's
 * list of mapped files.
 *
 * A location must be a relative path that stays inside the model's folder: absolute paths, drive
 * letters, empty locations, NUL bytes and any ".." component are refused. Every component is
 * checked with lstat: symbolic links anywhere on the path are refused, folders must be folders, and
 * the file must be a regular file with a single link (a hard link could expose a file from outside
 * the folder). The file is then opened with O_NOFOLLOW and checked again by fstat (same device and
 * inode), its size compared with the load's max_bytes, and offset + length checked (overflow-safe)
 * against the size before anything is read. Each file is read once per load into private memory
 * (an anonymous mapping, so tensors can borrow from it and write it) that stays for the model's
 * lifetime; the model's on_free hook unmaps every mapping. Each refusal is LT_ERR_INVALID naming
 * the tensor, the path and the reason.
 *
 * Why read and not map the file: a mapping of the file itself (even MAP_PRIVATE) still reads its
 * pages from the file until they are written, so when anyone truncates the file while the model is
 * loaded, the next access of a page past the new end raises SIGBUS in whatever thread touches the
 * weights, and a library may not install signal handlers. Reading with pread costs the file's size
 * in memory once, but the model then holds the data as it was at load time whatever happens to the
 * file; a file that shrinks during the read is an LT_ERR_IO naming it.
 */
#include "onnx_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct onnx_mapping {
    void *addr;
    size_t len;
} onnx_mapping;

typedef struct onnx_ext_file {
    struct onnx_ext_file *next;
    const char *location;
    const uint8_t *data;
    size_t size;
} onnx_ext_file;

void onnx_model_on_free(lt_model *m) {
    for (int i = 0; i < m->mappings.n; i++) {
        onnx_mapping *mp = m->mappings.items[i];
        if (mp && mp->addr && mp->len) munmap(mp->addr, mp->len);
    }
    lt_vec_free(&m->mappings);
}

lt_status onnx_keep_mapping(onnx_load *L, void *addr, size_t len) {
    onnx_mapping *mp = L->m ? lt_arena_alloc(&L->m->arena, sizeof *mp) : NULL;
    if (!mp || !lt_vec_push(&L->m->mappings, mp)) {
        munmap(addr, len);
        return lt_error(L->ctx, LT_ERR_NOMEM, "out of memory (mapping list)");
    }
    mp->addr = addr;
    mp->len = len;
    return LT_OK;
}

#define EXT_ERR(...) lt_error(L->ctx, LT_ERR_INVALID, __VA_ARGS__)

/* Read the file's first n bytes into p (pread: the descriptor's offset is not shared state). */
static lt_status read_all(onnx_load *L, int fd, uint8_t *p, size_t n, const char *tname, const char *loc) {
    size_t got = 0;
    while (got < n) {
        size_t want = n - got > ((size_t)1 << 30) ? (size_t)1 << 30 : n - got;
        ssize_t r = pread(fd, p + got, want, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return lt_error(L->ctx, LT_ERR_IO, "%s: tensor '%s': cannot read external data file '%s' at byte %zu: %s", L->file,
                            tname, loc, got, strerror(errno));
        if (r == 0)
            return lt_error(L->ctx, LT_ERR_IO, "%s: tensor '%s': external data file '%s' shrank to %zu bytes while being read "
                            "(expected %zu)", L->file, tname, loc, got, n);
        got += (size_t)r;
    }
    return LT_OK;
}

static lt_status open_checked(onnx_load *L, const char *tname, const char *loc, onnx_ext_file **out) {
    /* Walk the components: base_dir/c1, base_dir/c1/c2, ... */
    size_t blen = strlen(L->base_dir), llen = strlen(loc);
    char *path = lt_arena_alloc(&L->scratch, blen + llen + 2);
    if (!path) return lt_error(L->ctx, LT_ERR_NOMEM, "out of memory (external data path)");
    memcpy(path, L->base_dir, blen);
    size_t n = blen;
    path[n++] = '/';
    struct stat sb = {0};
    const char *c = loc;
    while (*c) {
        while (*c == '/') c++;
        if (!*c) break;
        const char *e = c;
        while (*e && *e != '/') e++;
        memcpy(path + n, c, (size_t)(e - c));
        n += (size_t)(e - c);
        path[n] = 0;
        if (lstat(path, &sb) != 0) {
            int err = errno;
            return EXT_ERR("%s: tensor '%s': external data file '%s' %s: %s", L->file, tname, loc,
                           err == ENOENT ? "is missing" : "cannot be examined", strerror(err));
        }
        if (S_ISLNK(sb.st_mode))
            return EXT_ERR("%s: tensor '%s': external data file '%s' refused: '%s' is a symbolic link", L->file, tname, loc, path);
        bool last = true;
        for (const char *k = e; *k; k++)
            if (*k != '/') { last = false; break; }
        if (!last) {
            if (!S_ISDIR(sb.st_mode))
                return EXT_ERR("%s: tensor '%s': external data file '%s' refused: '%s' is not a folder", L->file, tname, loc, path);
            path[n++] = '/';
        }
        c = e;
    }
    path[n] = 0;
    if (!S_ISREG(sb.st_mode))
        return EXT_ERR("%s: tensor '%s': external data file '%s' refused: not a regular file", L->file, tname, loc);
    if (sb.st_nlink > 1)
        return EXT_ERR("%s: tensor '%s': external data file '%s' refused: it is a hard link (%lu links)", L->file, tname, loc,
                       (unsigned long)sb.st_nlink);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return EXT_ERR("%s: tensor '%s': external data file '%s' cannot be opened: %s", L->file, tname, loc, strerror(errno));
    struct stat fb;
    if (fstat(fd, &fb) != 0 || fb.st_dev != sb.st_dev || fb.st_ino != sb.st_ino || !S_ISREG(fb.st_mode) || fb.st_nlink > 1) {
        close(fd);
        return EXT_ERR("%s: tensor '%s': external data file '%s' refused: it changed while being opened", L->file, tname, loc);
    }
    if (fb.st_size < 0 || (int64_t)fb.st_size > L->max_bytes) {
        close(fd);
        return EXT_ERR("%s: tensor '%s': external data file '%s' refused: %lld bytes exceed the limit of %lld", L->file, tname,
                       loc, (long long)fb.st_size, (long long)L->max_bytes);
    }
    onnx_ext_file *f = lt_arena_alloc(&L->scratch, sizeof *f);
    char *lcopy = lt_arena_strdup(&L->scratch, loc);
    if (!f || !lcopy) {
        close(fd);
        return lt_error(L->ctx, LT_ERR_NOMEM, "out of memory (external data)");
    }
    f->location = lcopy;
    f->size = (size_t)fb.st_size;
    f->data = (const uint8_t *)"";
    if (f->size) {
        void *p = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            close(fd);
            return lt_error(L->ctx, LT_ERR_NOMEM, "%s: tensor '%s': no memory for external data file '%s' (%zu bytes): %s",
                            L->file, tname, loc, f->size, strerror(err));
        }
        lt_status st = read_all(L, fd, p, f->size, tname, loc);
        close(fd);
        if (st != LT_OK) {
            munmap(p, f->size);
            return st;
        }
        LT_TRY(onnx_keep_mapping(L, p, f->size));
        f->data = p;
    } else {
        close(fd);
    }
    f->next = L->ext_files;
    L->ext_files = f;
    *out = f;
    return LT_OK;
}

lt_status onnx_external_bytes(onnx_load *L, lt_wire *w, const char *tname, const char *location, size_t loc_len,
                              int64_t offset, int64_t length, const uint8_t **data, size_t *size) {
    size_t off = lt_wire_off(w, w->start);
    char shown[256];
    snprintf(shown, sizeof shown, "%.*s", (int)(loc_len > 200 ? 200 : loc_len), location);
    if (!L->base_dir || !L->m)
        return EXT_ERR("%s: byte %zu: tensor '%s': external data '%s' refused: no model folder (loaded from memory)", L->file,
                       off, tname, shown);
    if (loc_len == 0) return EXT_ERR("%s: byte %zu: tensor '%s': external data location is empty", L->file, off, tname);
    if (memchr(location, 0, loc_len))
        return EXT_ERR("%s: byte %zu: tensor '%s': external data location '%s' contains a NUL byte", L->file, off, tname, shown);
    if (location[0] == '/' || location[0] == '\\' || (loc_len >= 2 && location[1] == ':'))
        return EXT_ERR("%s: byte %zu: tensor '%s': external data '%s' refused: absolute path", L->file, off, tname, shown);
    for (size_t i = 0; i < loc_len;) {
        size_t j = i;
        while (j < loc_len && location[j] != '/' && location[j] != '\\') j++;
        if (j - i == 2 && location[i] == '.' && location[i + 1] == '.')
            return EXT_ERR("%s: byte %zu: tensor '%s': external data '%s' refused: '..' leaves the model folder", L->file, off,
                           tname, shown);
        i = j + 1;
    }
    if (memchr(location, '\\', loc_len) || loc_len > 4096)
        return EXT_ERR("%s: byte %zu: tensor '%s': external data '%s' refused: backslashes or an over-long path", L->file, off,
                       tname, shown);
    char *loc = lt_arena_strndup(&L->scratch, location, loc_len);
    if (!loc) return lt_error(L->ctx, LT_ERR_NOMEM, "out of memory (external data)");
    onnx_ext_file *f = L->ext_files;
    while (f && strcmp(f->location, loc) != 0) f = f->next;
    if (!f) LT_TRY(open_checked(L, tname, loc, &f));
    if (offset < 0 || (uint64_t)offset > f->size)
        return EXT_ERR("%s: byte %zu: tensor '%s': external data '%s': offset %lld is past the end of the file (%zu bytes)",
                       L->file, off, tname, shown, (long long)offset, f->size);
    if (length < 0) length = (int64_t)f->size - offset;
    int64_t end;
    if (!lt_add_i64(offset, length, &end) || (uint64_t)end > f->size)
        return EXT_ERR("%s: byte %zu: tensor '%s': external data '%s': offset %lld + length %lld is past the end of the file "
                       "(%zu bytes)",
                       L->file, off, tname, shown, (long long)offset, (long long)length, f->size);
    *data = f->data + offset;
    *size = (size_t)length;
    return LT_OK;
}
