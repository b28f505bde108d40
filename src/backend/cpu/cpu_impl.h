/* cpu_impl.h — internals of the CPU backend shared by cpu_compile.c, cpu_split.c and cpu_cache.c. */
#ifndef LT_BACKEND_CPU_IMPL_H
#define LT_BACKEND_CPU_IMPL_H

#include "cpu.h"

/* The source of the shared prelude library: every prelude header of the C target compiled with
 * LT_PRELUDE_LIBRARY, plus an exported lt_pl_<f>(int threads, ...) per public microkernel function. */
lt_status lt_cpu_prelude_library_source(lt_ctx *ctx, lt_strbuf *out);
/* The module's translation unit for use with the library: its prelude up to the microkernel
 * headers, forwarding stubs for the microkernel functions its kernels call, then its kernels.
 * false (out partly written) when the module has no microkernel section or calls none of them. */
bool lt_cpu_split_module(const char *source, const char *library_source, lt_strbuf *out);

/* ---- the cache's trust checks (cpu_cache.c) ---- */

/* What a module's manifest (<key>.manifest, <lkey>.prelude.manifest) records. */
typedef struct lt_cpu_manifest {
    char sha256[65]; /* of the .so, hex */
    char prelude[33]; /* the key of the shared prelude library the module links ("" = none) */
} lt_cpu_manifest;

/* Open path with O_NOFOLLOW and check it through the descriptor (lt_private_open); sha (when not NULL) gets its SHA-256 read through it.
 * just_built: the compiler's fresh output, whose group/other write bits (from a umask such as 002)
 * are cleared through the descriptor first. LT_ERR_IO naming the path and the reason when a check
 * fails. */
lt_status lt_cpu_open_checked(lt_ctx *ctx, const char *path, bool just_built, int *fd, char sha[65]);
/* Read a manifest (checked like an object); LT_ERR_IO when missing, stray or malformed. */
lt_status lt_cpu_manifest_read(lt_ctx *ctx, const char *path, lt_cpu_manifest *out);
/* Write a manifest atomically (temporary file + rename). */
lt_status lt_cpu_manifest_write(lt_ctx *ctx, const char *path, const lt_cpu_manifest *m);
/* dlopen the checked descriptor as /proc/self/fd/N (RTLD_NOW | RTLD_LOCAL); path names it in errors. */
lt_status lt_cpu_dlopen_fd(lt_ctx *ctx, int fd, const char *path, void **handle);
/* Close a descriptor an object was loaded through, after dlclose: kept open (its name reserved) while
 * the object is still loaded by another user, and closed by a later release once it is not. -1 is
 * fine (then only the kept ones are looked at). Thread-safe. */
void lt_cpu_fd_release(int fd);
#endif
