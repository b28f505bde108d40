/* file.c — whole-file reads with a size limit, atomic writes (temp file + rename, nothing left behind
 * on failure), and lt_io_read_tensor_file, which picks the reader (.npy / .npz / .pb) for a path.
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../onnx/onnx.h"

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

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcasecmp(s + a - b, suf) == 0;
}

lt_status lt_io_read_tensor_file(lt_ctx *ctx, const char *path, lt_tensor **out) {
    return lt_io_read_tensor_file_limited(ctx, path, NULL, out);
}

lt_status lt_io_read_tensor_file_limited(lt_ctx *ctx, const char *path, const lt_io_limits *lim,
                                         lt_tensor **out) {
    uint8_t *data;
    size_t size;
    LT_TRY(lt_io_read_file(ctx, path, &data, &size));
    lt_status st;
    bool npy = ends_with(path, ".npy"), npz = ends_with(path, ".npz"), pb = ends_with(path, ".pb");
    if (!npy && !npz && !pb) {
        npy = size >= 6 && memcmp(data, "\x93NUMPY", 6) == 0;
        npz = !npy && size >= 4 && memcmp(data, "PK\x03\x04", 4) == 0;
        pb = !npy && !npz;
    }
    if (npy) {
        st = lt_npy_decode_limited(ctx, data, size, path, lim, out);
    } else if (npz) {
        lt_npz *z = NULL;
        st = lt_npz_decode_limited(ctx, data, size, path, lim, &z);
        if (st == LT_OK) {
            if (z->n != 1) {
                st = lt_error(ctx, LT_ERR_INVALID, "%s: expected one array in the .npz, found %d", path, z->n);
            } else {
                *out = lt_tensor_retain(z->tensors[0]);
            }
            lt_npz_free(z);
        }
    } else {
        st = lt_onnx_decode_tensor(ctx, data, size, out, NULL);
        if (st != LT_OK && ctx->status == st && strncmp(ctx->msg, path, strlen(path)) != 0) {
            /* prefix the file name (the decoder names only the byte offset) */
            char msg[2 * LT_MSG_MAX + 8];
            snprintf(msg, sizeof msg, "%s: %s", path, ctx->msg);
            size_t l = strlen(msg);
            if (l >= sizeof ctx->msg) l = sizeof ctx->msg - 1;
            memcpy(ctx->msg, msg, l);
            ctx->msg[l] = 0;
        }
    }
    lt_mem_free(data);
    return st;
}
