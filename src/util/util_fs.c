/*  util_fs - directories, whole-file reads and atomic writes. */
#include "util_fs.h"
#include "util_err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
util_mkdirs(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int) sizeof tmp)
        return util_err(LUX_EINVAL, "%s: path too long", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) < 0 && errno != EEXIST)
            return util_err(LUX_EIO, "mkdir %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return util_err(LUX_EIO, "mkdir %s: %s", tmp, strerror(errno));
    return 0;
}

int
util_private_dir(const char *path)
{
    struct stat st;
    int rc = util_mkdirs(path, 0700);
    if (rc)
        return rc;
    if (stat(path, &st) < 0)
        return util_err(LUX_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return util_err(LUX_EIO, "%s: not a directory", path);
    if (st.st_uid != geteuid())
        return util_err(LUX_EAUTH, "%s: owned by uid %d, not us", path, (int) st.st_uid);
    if (st.st_mode & 077) {
        if (chmod(path, st.st_mode & 0700) < 0)
            return util_err(LUX_EAUTH, "%s: mode %o is open to others and chmod failed: %s",
                            path, st.st_mode & 0777, strerror(errno));
    }
    return 0;
}

char *
util_read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    char *buf = NULL;
    size_t got = 0, cap;

    if (fd < 0) {
        util_err(errno == ENOENT ? LUX_ENOTFOUND : LUX_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    /* files in /proc say they are empty: read until the end, growing */
    cap = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t) st.st_size + 1 : 4096;
    for (;;) {
        if (got + 1 >= cap || !buf) {
            char *nb = realloc(buf, cap = buf ? 2 * cap : cap);
            if (!nb) {
                util_err(LUX_ENOMEM, "%s: out of memory", path);
                free(buf);
                close(fd);
                return NULL;
            }
            buf = nb;
        }
        ssize_t n = read(fd, buf + got, cap - got - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            util_err(LUX_EIO, "read %s: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (n == 0)
            break;
        got += (size_t) n;
    }
    close(fd);
    buf[got] = '\0';
    if (len)
        *len = got;
    return buf;
}

int
util_write_file(const char *path, const void *p, size_t n, mode_t mode)
{
    char tmp[PATH_MAX];
    const char *s = p;
    int fd;

    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int) getpid()) >= (int) sizeof tmp)
        return util_err(LUX_EINVAL, "%s: path too long", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return util_err(LUX_EIO, "%s: %s", tmp, strerror(errno));
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return util_err(LUX_EIO, "write %s: %s", tmp, strerror(e));
        }
        s += w;
        n -= (size_t) w;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        unlink(tmp);
        return util_err(LUX_EIO, "fsync %s: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) < 0) {
        unlink(tmp);
        return util_err(LUX_EIO, "rename %s: %s", path, strerror(errno));
    }
    return 0;
}

int
util_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

int
util_self_exe(char *out, size_t n)
{
    ssize_t r = readlink("/proc/self/exe", out, n - 1);
    if (r < 0)
        return util_err(LUX_EIO, "/proc/self/exe: %s", strerror(errno));
    out[r] = '\0';
    return 0;
}

int
util_abspath(const char *path, char *out, size_t n)
{
    char cwd[PATH_MAX];
    if (path[0] == '/') {
        if (snprintf(out, n, "%s", path) >= (int) n)
            return util_err(LUX_EINVAL, "%s: path too long", path);
        return 0;
    }
    if (!getcwd(cwd, sizeof cwd))
        return util_err(LUX_EIO, "getcwd: %s", strerror(errno));
    if (snprintf(out, n, "%s/%s", cwd, path) >= (int) n)
        return util_err(LUX_EINVAL, "%s: path too long", path);
    return 0;
}
