/*  xfx - fixtures for the tests of objects between nodes (see xfx.h). */
#include "xfx.h"
#include "fx.h"
#include "../tap.h"
#include "util/util_fs.h"
#include "util/util_hash.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void
xfx_fill(const xfx_obj_t *o, uint8_t *p, size_t n)
{
    if (o->text) {
        static const char line[] = "the quick brown fox jumps over the lazy dog %08zu\n";
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t) line[(i + i / 4096) % (sizeof line - 1)];
        return;
    }
    uint64_t x = 0x9e3779b97f4a7c15ull * o->seed;
    for (size_t i = 0; i < n; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(p + i, &x, n - i < 8 ? n - i : 8);
    }
}

bool
xfx_same(const xfx_obj_t *o, const void *p, size_t n)
{
    if (n != o->size)
        return false;
    uint8_t *want = malloc(n ? n : 1);
    if (!want)
        return false;
    xfx_fill(o, want, n);
    bool same = memcmp(p, want, n) == 0;
    free(want);
    return same;
}

/* The putting driver: put, send the refs, then obey: 'f' k frees object
   k (answered 'k'), anything else or the end of the pipe ends it. */
static void
s_putter(const char *dir, const xfx_obj_t *objs, int n, int out, int in)
{
    lux_config_t cfg = {.address = dir};
    lux_t *lx = lux_init(&cfg);
    lux_ref_t *refs = calloc((size_t) n, sizeof *refs);
    if (!lx || !refs)
        _exit(2);
    for (int k = 0; k < n; k++) {
        uint8_t *p = malloc(objs[k].size ? objs[k].size : 1);
        if (!p)
            _exit(3);
        xfx_fill(&objs[k], p, objs[k].size);
        if (lux_put(lx, p, objs[k].size, &refs[k]))
            _exit(3);
        free(p);
        if (write(out, refs[k].b, sizeof refs[k].b) != (ssize_t) sizeof refs[k].b)
            _exit(4);
    }
    uint8_t cmd[2];
    while (read(in, cmd, 2) == 2 && cmd[0] == 'f' && cmd[1] < n) {
        lux_free(lx, 1, &refs[cmd[1]]);
        lux_wait(lx, 0, NULL, 0, 0, NULL); /* sends the free */
        if (write(out, "k", 1) != 1)
            _exit(4);
    }
    lux_shutdown(&lx);
    _exit(0);
}

void
xfx_put(xfx_putter_t *d, const char *dir, const xfx_obj_t *objs, int n, lux_ref_t *refs,
        char (*hex)[2 * LUX_REF_LEN + 1])
{
    int to[2], from[2];
    if (n > 255 || pipe(to) || pipe(from))
        bail("pipe");
    pid_t pid = fork();
    if (pid < 0)
        bail("fork");
    if (pid == 0) {
        close(to[1]);
        close(from[0]);
        s_putter(dir, objs, n, from[1], to[0]);
    }
    close(to[0]);
    close(from[1]);
    for (int k = 0; k < n; k++) {
        if (read(from[0], refs[k].b, sizeof refs[k].b) != (ssize_t) sizeof refs[k].b)
            bail("the driver on %s did not put its objects", dir);
        if (hex)
            util_hex(hex[k], refs[k].b, LUX_REF_LEN);
    }
    d->pid = pid;
    d->to = to[1];
    d->from = from[0];
    d->n = n;
}

int
xfx_put_free(xfx_putter_t *d, int k)
{
    uint8_t cmd[2] = {'f', (uint8_t) k}, ack;
    if (k < 0 || k >= d->n || write(d->to, cmd, 2) != 2 || read(d->from, &ack, 1) != 1)
        return -1;
    return 0;
}

void
xfx_put_end(xfx_putter_t *d)
{
    if (d->pid <= 0)
        return;
    if (write(d->to, "q", 1) < 0)
        diag("the driver on a node is gone already");
    close(d->to);
    close(d->from);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
}

pid_t
xfx_get_spawn(const char *dir, const lux_ref_t *ref, int *fd)
{
    int p[2];
    if (pipe(p))
        bail("pipe");
    pid_t pid = fork();
    if (pid < 0)
        bail("fork");
    if (pid == 0) {
        close(p[0]);
        lux_config_t cfg = {.address = dir};
        lux_t *lx = lux_init(&cfg);
        char msg[1024] = "";
        int rc = lx ? 0 : LUX_EIO;
        lux_val_t v;
        if (lx && (rc = lux_get(lx, ref, &v, 120000)))
            snprintf(msg, sizeof msg, "%s", lux_errmsg());
        else if (!lx)
            snprintf(msg, sizeof msg, "%s", lux_errmsg());
        if (write(p[1], &rc, sizeof rc) < 0 || write(p[1], msg, strlen(msg) + 1) < 0)
            _exit(4);
        lux_shutdown(&lx);
        _exit(0);
    }
    close(p[1]);
    *fd = p[0];
    return pid;
}

int
xfx_got(int fd, pid_t pid, char *msg, size_t n)
{
    int rc = LUX_EIO;
    ssize_t k = read(fd, &rc, sizeof rc), m = k > 0 ? read(fd, msg, n - 1) : 0;
    msg[m > 0 ? m : 0] = '\0';
    close(fd);
    waitpid(pid, NULL, 0);
    return k == sizeof rc ? rc : LUX_EIO;
}

int
xfx_log_lines(const char *dir, bool head, const char *a, const char *b)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log/%s.log", dir, head ? "supervisor" : "node");
    char *text = util_read_file(path, NULL);
    int n = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
        n += strstr(line, a) && (!b || strstr(line, b));
    free(text);
    return n;
}

bool
xfx_log_wait(const char *dir, bool head, const char *a, const char *b, int n, int ms)
{
    int64_t end = util_mono_ms() + ms;
    while (util_mono_ms() < end && xfx_log_lines(dir, head, a, b) <= n)
        usleep(20000);
    return xfx_log_lines(dir, head, a, b) > n;
}

int64_t
xfx_store_used(const char *head_dir, const char *address)
{
    static char out[1 << 16];
    char want[96];
    if (fx_lux(out, sizeof out, NULL, 0, "status --dir %s --json", head_dir) != 0)
        return -1;
    snprintf(want, sizeof want, "\"address\": \"%s\"", address);
    const char *at = strstr(out, want), *end = at ? strchr(at, '}') : NULL;
    const char *used = at ? strstr(at, "\"store_used\": ") : NULL;
    if (!used || (end && used > end))
        return -1;
    used += strlen("\"store_used\": ");
    return *used >= '0' && *used <= '9' ? strtoll(used, NULL, 10) : -1;
}
