/* file.c — whole-file reads with a size limit and atomic writes (temp file + rename, nothing left
 * behind on failure): file.h.
 */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

lt_status lt_io_read_file(lt_ctx *ctx, const char *path, uint8_t **data, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return lt_error(ctx, LT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return lt_error(ctx, LT_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return lt_error(ctx, LT_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size < 0 || (int64_t)sb.st_size > LT_IO_MAX_FILE) {
        close(fd);
        return lt_error(ctx, LT_ERR_INVALID, "%s: file too large (%lld bytes)", path, (long long)sb.st_size);
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = lt_alloc(ctx, n ? n : 1, path);
    if (!buf) { close(fd); return LT_ERR_NOMEM; }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = errno;
            close(fd);
            lt_mem_free(buf);
            return r == 0 ? lt_error(ctx, LT_ERR_IO, "%s: file shrank while reading", path)
                          : lt_error(ctx, LT_ERR_IO, "%s: read failed: %s", path, strerror(e));
        }
        got += (size_t)r;
    }
    close(fd);
    *data = buf;
    *size = n;
    return LT_OK;
}

lt_status lt_io_write_file_atomic(lt_ctx *ctx, const char *path, const void *data, size_t size) {
    size_t pl = strlen(path);
    char *tmp = lt_alloc(ctx, pl + 16, "temp path");
    if (!tmp) return LT_ERR_NOMEM;
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp-XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        lt_mem_free(tmp);
        return lt_error(ctx, LT_ERR_IO, "%s: cannot create a temporary file: %s", path, strerror(e));
    }
    (void)fchmod(fd, 0644);
    const uint8_t *p = data;
    size_t done = 0;
    int err = 0;
    while (done < size) {
        ssize_t w = write(fd, p + done, size - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { err = w < 0 ? errno : EIO; break; }
        done += (size_t)w;
    }
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        lt_mem_free(tmp);
        return lt_error(ctx, LT_ERR_IO, "%s: write failed: %s", path, strerror(err));
    }
    lt_mem_free(tmp);
    return LT_OK;
}
