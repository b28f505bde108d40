/* file.c — lt_io_read_tensor_file, which picks the reader (.npy / .npz / .pb) for a path (whole-file
 * reads and atomic writes are src/base/file.c's).
 */
#include "io.h"

#include <stdio.h>
#include <string.h>

#include "../onnx/onnx.h"

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
