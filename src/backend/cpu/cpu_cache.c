/* cpu_cache.c — what the compiled-module cache trusts: a folder only we can write, objects checked
 * through the descriptor they are loaded from, and nothing left behind by killed compiles.
 *
 * The threat: a cache folder another user can write (a shared LATHE_CACHE_DIR, a group-writable
 * home) where they plant or swap a shared object that lathe would dlopen, running their code as us.
 * The defence is the owner/mode rule of base/private_file.h (the folder is checked when the cache is
 * opened). Inside it, every object lathe loads (a module, a shared prelude library) is opened once
 * with O_NOFOLLOW, checked through that descriptor, hashed (SHA-256) through it and compared with
 * the manifest written when it was built, then dlopen'ed as /proc/self/fd/N: the path is never
 * opened again after the check, so nothing can be swapped in between. The manifest only catches
 * corruption and stray files (a copied-in or truncated .so). A failed check is a cache miss for the
 * caller: rebuilt and replaced atomically (rename), never loaded.
 * glibc knows a loaded object by the name it was opened with, and /proc/self/fd/N names repeat as
 * descriptors are reused: a descriptor stays open while an object loaded through it is loaded
 * (lt_cpu_fd_release keeps such descriptors in a small list and closes them once their object is
 * unloaded), so a new N never names an object loaded before.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../base/hash.h"
#include "../../base/private_file.h"
#include "cpu_impl.h"

#define MANIFEST_MAGIC "lathe-cpu-manifest-v1"
#define MANIFEST_MAX 1024

lt_status lt_cpu_open_checked(lt_ctx *ctx, const char *path, bool just_built, int *fd_out, char sha[65]) {
    int fd;
    LT_TRY(lt_private_open(ctx, path, "compiled module", just_built, &fd));
    if (sha && !lt_sha256_fd(fd, sha, NULL)) {
        int e = errno;
        close(fd);
        return lt_error(ctx, LT_ERR_IO, "%s: %s", path, strerror(e));
    }
    *fd_out = fd;
    return LT_OK;
}

static bool is_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return s[n] == 0;
}

lt_status lt_cpu_manifest_read(lt_ctx *ctx, const char *path, lt_cpu_manifest *out) {
    int fd;
    LT_TRY(lt_cpu_open_checked(ctx, path, false, &fd, NULL));
    char buf[MANIFEST_MAX + 1];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
        if (n == sizeof buf - 1) break;
    }
    close(fd);
    buf[n] = 0;
    memset(out, 0, sizeof *out);
    /* "<magic>\nsha256 <64 hex>\n" then optionally "prelude <32 hex>\n", nothing else */
    char *save = NULL, *line = strtok_r(buf, "\n", &save);
    bool ok = line && strcmp(line, MANIFEST_MAGIC) == 0;
    int lines = 0;
    while (ok && (line = strtok_r(NULL, "\n", &save))) {
        if (lines == 0 && strncmp(line, "sha256 ", 7) == 0 && is_hex(line + 7, 64)) memcpy(out->sha256, line + 7, 65);
        else if (lines == 1 && strncmp(line, "prelude ", 8) == 0 && is_hex(line + 8, 32)) memcpy(out->prelude, line + 8, 33);
        else ok = false;
        lines++;
    }
    if (!ok || !out->sha256[0]) return lt_error(ctx, LT_ERR_IO, "%s: not a lathe module manifest", path);
    return LT_OK;
}

lt_status lt_cpu_manifest_write(lt_ctx *ctx, const char *path, const lt_cpu_manifest *m) {
    char text[256];
    int n = snprintf(text, sizeof text, MANIFEST_MAGIC "\nsha256 %s\n%s%s%s", m->sha256, m->prelude[0] ? "prelude " : "",
                     m->prelude, m->prelude[0] ? "\n" : "");
    return lt_private_write_atomic(ctx, path, text, (size_t)n);
}

lt_status lt_cpu_dlopen_fd(lt_ctx *ctx, int fd, const char *path, void **handle) {
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    dlerror();
    *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
        const char *why = dlerror();
        return lt_error(ctx, LT_ERR_IO, "cannot load compiled module %s: %s", path, why ? why : "?");
    }
    return LT_OK;
}

/* Is an object loaded under the name /proc/self/fd/<fd> (or from the file fd is open on)? */
static bool fd_name_loaded(int fd) {
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

/* Descriptors whose object outlived the module that loaded it (another module of the same file, or
 * of the same prelude library, still holds it): re-checked at every release, closed once unloaded. */
static pthread_mutex_t g_reserved_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_reserved[64], g_n_reserved;

void lt_cpu_fd_release(int fd) {
    pthread_mutex_lock(&g_reserved_mu);
    for (int i = 0; i < g_n_reserved;) {
        if (fd_name_loaded(g_reserved[i])) {
            i++;
            continue;
        }
        close(g_reserved[i]);
        g_reserved[i] = g_reserved[--g_n_reserved];
    }
    if (fd >= 0 && fd_name_loaded(fd)) { /* the name must stay ours while it names a loaded object */
        if (g_n_reserved < (int)(sizeof g_reserved / sizeof *g_reserved)) g_reserved[g_n_reserved++] = fd;
        fd = -1; /* (when the list is full it simply stays open) */
    }
    pthread_mutex_unlock(&g_reserved_mu);
    if (fd >= 0) close(fd);
}
