/* private_file.c — folders and files only the effective user could have written (private_file.h):
 * the owner/mode rule, checked reads through one descriptor, atomic writes, stale temporaries.
 */
#define _GNU_SOURCE
#include "private_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The owner/mode rule for a folder (st from stat or lstat of dir). */
static lt_status check_folder(lt_ctx *ctx, const char *dir, const char *what, const struct stat *st) {
    if (!S_ISDIR(st->st_mode)) return lt_error(ctx, LT_ERR_IO, "%s %s is not a folder", what, dir);
    unsigned uid = (unsigned)geteuid();
    if (st->st_uid != geteuid())
        return lt_error(ctx, LT_ERR_IO,
                        "%s %s is owned by uid %u, not by you (uid %u, mode %04o): lathe loads compiled "
                        "code only from a folder of yours; use another folder (or chown it)",
                        what, dir, (unsigned)st->st_uid, uid, (unsigned)(st->st_mode & 07777));
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return lt_error(ctx, LT_ERR_IO,
                        "%s %s is writable by %s (mode %04o, owner uid %u): lathe loads compiled code only "
                        "from a folder only you can write; run chmod go-w %s (or use another folder)",
                        what, dir, (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777),
                        (unsigned)st->st_uid, dir);
    return LT_OK;
}

lt_status lt_private_dir_prepare(lt_ctx *ctx, const char *dir, const char *what) {
    char path[4096];
    if (!dir || !*dir) return lt_error(ctx, LT_ERR_USAGE, "%s: empty path", what);
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return lt_error(ctx, LT_ERR_USAGE, "%s path too long: %s", what, dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char c = *p;
        *p = 0;
        if (mkdir(path, 0700) == 0) { /* ours: check it as we made it (lstat: not swapped for a link) */
            struct stat st;
            if (lstat(path, &st) != 0)
                return lt_error(ctx, LT_ERR_IO, "cannot inspect %s %s: %s", what, path, strerror(errno));
            LT_TRY(check_folder(ctx, path, what, &st));
        } else if (errno != EEXIST) {
            return lt_error(ctx, LT_ERR_IO, "cannot create %s %s: %s", what, path, strerror(errno));
        }
        *p = c;
        if (!c) break;
    }
    struct stat st;
    if (stat(path, &st) != 0) return lt_error(ctx, LT_ERR_IO, "cannot inspect %s %s: %s", what, path, strerror(errno));
    return check_folder(ctx, path, what, &st);
}

lt_status lt_private_open(lt_ctx *ctx, const char *path, const char *what, bool just_built, int *fd_out) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ELOOP)
        return lt_error(ctx, LT_ERR_IO, "%s %s is a symbolic link: not followed (name the file itself)", what, path);
    if (fd < 0) return lt_error(ctx, LT_ERR_IO, "%s %s: cannot open: %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return lt_error(ctx, LT_ERR_IO, "%s %s: %s", what, path, strerror(e));
    }
    if (just_built && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) &&
        fchmod(fd, st.st_mode & 0755) == 0) /* a umask such as 002 gave our own output group write */
        st.st_mode &= ~(mode_t)(S_IWGRP | S_IWOTH | S_ISUID | S_ISGID | S_ISVTX);
    lt_status s = LT_OK;
    if (!S_ISREG(st.st_mode))
        s = lt_error(ctx, LT_ERR_IO, "%s %s is not a regular file", what, path);
    else if (st.st_uid != geteuid())
        s = lt_error(ctx, LT_ERR_IO,
                     "%s %s is owned by uid %u, not by you (uid %u, mode %04o): lathe trusts it only when it is "
                     "yours; copy it to a file you own",
                     what, path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)(st.st_mode & 07777));
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        s = lt_error(ctx, LT_ERR_IO,
                     "%s %s is writable by %s (mode %04o, owner uid %u): lathe trusts it only when only you can "
                     "write it; run chmod go-w %s",
                     what, path, (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 07777),
                     (unsigned)st.st_uid, path);
    if (s != LT_OK) {
        close(fd);
        return s;
    }
    *fd_out = fd;
    return LT_OK;
}

lt_status lt_private_read(lt_ctx *ctx, const char *path, const char *what, int64_t max_bytes, uint8_t **data,
                          size_t *size) {
    int fd;
    LT_TRY(lt_private_open(ctx, path, what, false, &fd));
    struct stat st;
    lt_status s = fstat(fd, &st) != 0 ? lt_error(ctx, LT_ERR_IO, "%s %s: %s", what, path, strerror(errno)) : LT_OK;
    if (s == LT_OK && (int64_t)st.st_size > max_bytes)
        s = lt_error(ctx, LT_ERR_INVALID, "%s %s: file too large (%lld bytes, at most %lld)", what, path,
                     (long long)st.st_size, (long long)max_bytes);
    size_t n = s == LT_OK ? (size_t)st.st_size : 0, got = 0;
    uint8_t *buf = s == LT_OK ? lt_alloc(ctx, n + 1, path) : NULL;
    if (s == LT_OK && !buf) s = LT_ERR_NOMEM;
    while (s == LT_OK && got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) s = lt_error(ctx, LT_ERR_IO, "%s %s: read failed at byte %zu: %s", what, path, got, strerror(errno));
        else if (r == 0) n = got; /* shrank since fstat: what was there */
        else got += (size_t)r;
    }
    close(fd);
    if (s != LT_OK) {
        lt_mem_free(buf);
        return s;
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return LT_OK;
}

static unsigned next_tmp_id(void) {
    static unsigned counter;
    return __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
}

void lt_private_tmp_name(char *buf, size_t n, const char *path) {
    snprintf(buf, n, "%s.tmp.%ld.%u", path, (long)getpid(), next_tmp_id());
}

lt_status lt_private_write_atomic(lt_ctx *ctx, const char *path, const void *data, size_t len) {
    char tmp[4200];
    lt_private_tmp_name(tmp, sizeof tmp, path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return lt_error(ctx, LT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    const char *p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, p + done, len - done);
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

int lt_private_sweep_tmp(const char *dir, double max_age_s) {
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

void lt_private_remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}
