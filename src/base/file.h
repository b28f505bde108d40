/* file.h — whole files: read one into memory under a size limit, write one atomically (a temporary
 * file in the destination folder renamed into place only when everything succeeded, so a failed
 * write never leaves a partial file). The tensor file formats built on them are src/io's.
 */
#ifndef LT_BASE_FILE_H
#define LT_BASE_FILE_H

#include "base.h"

/* Largest file the readers accept (bytes). */
#define LT_IO_MAX_FILE ((int64_t)1 << 38)

/* Read a whole file into a new heap buffer (lt_mem_free it). A 1-byte buffer for an empty file. */
lt_status lt_io_read_file(lt_ctx *ctx, const char *path, uint8_t **data, size_t *size);
/* Write `size` bytes to path atomically (temp file in the same folder + rename). */
lt_status lt_io_write_file_atomic(lt_ctx *ctx, const char *path, const void *data, size_t size);

#endif
