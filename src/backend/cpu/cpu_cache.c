/* cpu_cache.c — what the compiled-module cache trusts: a folder only we can write, objects checked
 * through the descriptor they are loaded from, and nothing left behind by killed compiles.
 *
 * The threat: a cache folder another user can write (a shared LATHE_CACHE_DIR, a group-writable
 * home) where they plant or swap a shared object that lathe would dlopen, running their code as us.
 * The defence is ownership, as ssh and pip require of their own files: a cache folder must be owned
 * by the effective user and not writable by group or others, or lathe refuses it with one line
 * (lt_cpu_cache_dir_prepare); the folders lathe creates are created 0700. Inside it, every object
 * lathe loads (a module, a shared prelude library) is opened once with O_NOFOLLOW, checked through
 * that descriptor (a regular file owned by us, no group/other write), hashed (SHA-256) through it
 * and compared with the manifest written when it was built, then dlopen'ed as /proc/self/fd/N: the
 * path is never opened again after the check, so nothing can be swapped in between. The manifest
 * only catches corruption and stray files (a copied-in or truncated .so): whoever could write the
 * folder could rewrite it too, which is why the owner/mode check comes first. A failed check is a
 * cache miss for the caller: rebuilt and replaced atomically (rename), never loaded.
 * glibc knows a loaded object by the name it was opened with, and /proc/self/fd/N names repeat as
 * descriptors are reused: a descriptor stays open while an object loaded through it is loaded
 * (lt_cpu_fd_release keeps such descriptors in a small list and closes them once their object is
 * unloaded), so a new N never names an object loaded before.
 * Temporary files (<name>.tmp.<pid>.<n>) of a compile killed with -9 are swept on the next miss.
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
#include "cpu_impl.h"

#define MANIFEST_MAGIC "lathe-cpu-manifest-v1"
#define MANIFEST_MAX 1024

/* The owner/mode rule for a folder (st from stat or lstat of dir). */
static lt_status check_folder(lt_ctx *ctx, const char *dir, const struct stat *st) {
    if (!S_ISDIR(st->st_mode)) return lt_error(ctx, LT_ERR_IO, "cache folder %s is not a folder", dir);
    unsigned uid = (unsigned)geteuid();
    if (st->st_uid != geteuid())
        return lt_error(ctx, LT_ERR_IO,
                        "cache folder %s is owned by uid %u, not by you (uid %u, mode %04o): lathe loads compiled "
                        "code only from a folder of yours; use another cache folder (or chown it)",
                        dir, (unsigned)st->st_uid, uid, (unsigned)(st->st_mode & 07777));
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return lt_error(ctx, LT_ERR_IO,
                        "cache folder %s is writable by %s (mode %04o, owner uid %u): lathe loads compiled code only "
                        "from a folder only you can write; run chmod go-w %s (or use another cache folder)",
                        dir, (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777),
                        (unsigned)st->st_uid, dir);
    return LT_OK;
}

lt_status lt_cpu_cache_dir_prepare(lt_ctx *ctx, const char *dir) {
    char path[4096];
    if (!dir || !*dir) return lt_error(ctx, LT_ERR_USAGE, "cache folder: empty path");
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return lt_error(ctx, LT_ERR_USAGE, "cache folder path too long: %s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char c = *p;
        *p = 0;
        if (mkdir(path, 0700) == 0) { /* ours: check it as we made it (lstat: not swapped for a link) */
            struct stat st;
            if (lstat(path, &st) != 0)
                return lt_error(ctx, LT_ERR_IO, "cannot inspect cache folder %s: %s", path, strerror(errno));
            LT_TRY(check_folder(ctx, path, &st));
        } else if (errno != EEXIST) {
            return lt_error(ctx, LT_ERR_IO, "cannot create cache folder %s: %s", path, strerror(errno));
        }
        *p = c;
        if (!c) break;
    }
    struct stat st; /* the folder itself (a link to a folder of ours is fine: its target is checked) */
    if (stat(path, &st) != 0) return lt_error(ctx, LT_ERR_IO, "cannot inspect cache folder %s: %s", path, strerror(errno));
    return check_folder(ctx, path, &st);
}

lt_status lt_cpu_open_checked(lt_ctx *ctx, const char *path, bool just_built, int *fd_out, char sha[65]) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return lt_error(ctx, LT_ERR_IO, "%s: %s", path, errno == ELOOP ? "a symbolic link (not followed)" : strerror(errno));
    struct stat st;
    const char *why = fstat(fd, &st) != 0 ? strerror(errno) : NULL;
    if (!why && just_built && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) &&
        fchmod(fd, st.st_mode & 0755) == 0) /* a umask such as 002 gave our own output group write */
        st.st_mode &= ~(mode_t)(S_IWGRP | S_IWOTH | S_ISUID | S_ISGID | S_ISVTX);
    if (why) {
        /* fstat failed: why says so */
    } else if (!S_ISREG(st.st_mode)) why = "not a regular file";
    else if (st.st_uid != geteuid()) why = "owned by another user";
    else if (st.st_mode & (S_IWGRP | S_IWOTH)) why = "writable by group or others";
    else if (sha && !lt_sha256_fd(fd, sha, NULL)) why = strerror(errno);
    if (why) {
        close(fd);
        return lt_error(ctx, LT_ERR_IO, "%s: %s", path, why);
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

static unsigned next_tmp_id(void) {
    static unsigned counter;
    return __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
}

void lt_cpu_tmp_name(char *buf, size_t n, const char *path) {
    snprintf(buf, n, "%s.tmp.%ld.%u", path, (long)getpid(), next_tmp_id());
}

lt_status lt_cpu_write_atomic(lt_ctx *ctx, const char *path, const char *data, size_t len) {
    char tmp[4200];
    lt_cpu_tmp_name(tmp, sizeof tmp, path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return lt_error(ctx, LT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int err = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return lt_error(ctx, LT_ERR_IO, "cannot write %s: %s", tmp, strerror(err));
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        return lt_error(ctx, LT_ERR_IO, "cannot write %s: %s", path, strerror(err));
    }
    return LT_OK;
}

lt_status lt_cpu_manifest_write(lt_ctx *ctx, const char *path, const lt_cpu_manifest *m) {
    char text[256];
    int n = snprintf(text, sizeof text, MANIFEST_MAGIC "\nsha256 %s\n%s%s%s", m->sha256, m->prelude[0] ? "prelude " : "",
                     m->prelude, m->prelude[0] ? "\n" : "");
    return lt_cpu_write_atomic(ctx, path, text, (size_t)n);
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

int lt_cpu_cache_sweep(const char *dir, double max_age_s) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".tmp.")) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || difftime(now, st.st_mtime) < max_age_s)
            continue;
        removed += unlinkat(dirfd(d), e->d_name, 0) == 0;
    }
    closedir(d);
    return removed;
}

void lt_cpu_remove_private_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}
