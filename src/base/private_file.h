/* private_file.h — folders and files only the effective user could have written.
 *
 * What lathe loads as code or lets steer the code it generates lives in such files: compiled
 * modules and shared prelude libraries (cpu cache), CUDA binaries (cuda cache), the tuning database
 * and the measured machine ceilings. Another user who can write one of them could run code as us or
 * change what we compute, so the rule is ownership, as ssh and pip require of their own files:
 *  - a folder lathe keeps such files in is created 0700 (each missing parent too) and refused, with
 *    one line saying what to do, when it is owned by another user or writable by group or others;
 *  - a file is opened once with O_NOFOLLOW and checked through that descriptor (a regular file owned
 *    by the effective user, not writable by group or others), and read or loaded through the same
 *    descriptor, never re-opened by name after the check;
 *  - files are written to "<path>.tmp.<pid>.<n>" (mode 0600) and renamed into place, so a reader never
 *    sees a partial file; a writer killed with -9 leaves the temporary, which lt_private_sweep_tmp
 *    removes once stale.
 * Content hashes (a manifest beside a module) only catch corruption and stray files: whoever could
 * write the folder could rewrite the manifest too, which is why the owner/mode rule comes first.
 */
#ifndef LT_BASE_PRIVATE_FILE_H
#define LT_BASE_PRIVATE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

/* Create dir (and its missing parents) 0700 and check the owner/mode rule on every folder created
 * and on dir itself (a symbolic link to a folder of ours is fine: its target is checked).
 * `what` names the folder in messages ("cache folder"). LT_ERR_IO with one line when refused. */
lt_status lt_private_dir_prepare(lt_ctx *ctx, const char *dir, const char *what);

/* Open path with O_NOFOLLOW and check it through the descriptor. just_built: a file we have just
 * written whose mode a umask such as 002 widened is narrowed first. On failure LT_ERR_IO with a line
 * "<what> <path> ...: <why and what to do>". The caller closes *fd. */
lt_status lt_private_open(lt_ctx *ctx, const char *path, const char *what, bool just_built, int *fd);

/* The whole file through one checked descriptor, at most max_bytes (LT_ERR_INVALID past it), into a
 * new heap buffer with a NUL after the data (lt_mem_free it). */
lt_status lt_private_read(lt_ctx *ctx, const char *path, const char *what, int64_t max_bytes, uint8_t **data,
                          size_t *size);

/* A unique temporary name beside path: "<path>.tmp.<pid>.<n>" (what lt_private_sweep_tmp removes). */
void lt_private_tmp_name(char *buf, size_t n, const char *path);

/* Write len bytes to path: a new 0600 temporary beside it (O_EXCL, O_NOFOLLOW), renamed into place. */
lt_status lt_private_write_atomic(lt_ctx *ctx, const char *path, const void *data, size_t len);

/* Remove the temporaries in dir older than max_age_s that belong to us; returns how many. */
int lt_private_sweep_tmp(const char *dir, double max_age_s);

/* Remove a private temporary folder of lathe's and the files in it (not recursive). */
void lt_private_remove_dir(const char *dir);

#endif
