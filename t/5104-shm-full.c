/* 5104-shm-full: /dev/shm filled by someone else after the object store
   was made. Writing a page of the store that /dev/shm has no room for
   kills the writer with SIGBUS, and the driver of the embedded default is
   the process that holds the whole cluster; so room is made ready before
   anyone writes to it (exec_arena.h), and a full /dev/shm is an error:
   lux_put returns LUX_EFULL, a task's lux_set_alloc fails its task, the
   room goes back, and nothing already stored is lost. Once /dev/shm has
   room again, the same calls work.

   It runs in a mount namespace of its own, with a 96 MB tmpfs on
   /dev/shm, so that filling it disturbs nobody: that needs root (or
   CAP_SYS_ADMIN); without it the test is skipped. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "util/util_err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define S_MB (1 << 20)
#define S_FILLER "/dev/shm/lux-test-filler"

/* Fill /dev/shm to the last byte: the bytes written. */
static size_t
s_fill(void)
{
    static uint8_t buf[S_MB];
    memset(buf, 0x5a, sizeof buf);
    int fd = open(S_FILLER, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        bail("open %s: %s", S_FILLER, strerror(errno));
    size_t total = 0, chunk = sizeof buf;
    while (chunk >= 4096) {
        ssize_t n = write(fd, buf, chunk);
        if (n > 0)
            total += (size_t) n;
        else
            chunk /= 2; /* ENOSPC: the rest in smaller pieces */
    }
    close(fd);
    return total;
}

static void
s_pattern(uint8_t *p, size_t n, uint8_t k)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t) (i * 7 + k);
}

int
main(void)
{
    /* the scratch directory (the log) must not be on the /dev/shm we fill */
    (void) tap_tmpdir();
    const char *tmp = getenv("TMPDIR");
    if (tmp && strncmp(tmp, "/dev/shm", 8) == 0)
        skip_all("TMPDIR is on /dev/shm, which this test fills");
    if (unshare(CLONE_NEWNS) != 0)
        skip_all("no mount namespace of our own (needs root): a full /dev/shm is not tried");
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=96m,mode=1777") != 0)
        skip_all("cannot mount a small tmpfs on /dev/shm here");

    lux_t *lx = graph_embedded(2, 64 << 20, "start the embedded default with a 64 MB store on a 96 MB /dev/shm");

    /* stored before: 4 MB put, and a task's 4 MB output */
    size_t n = 4 * S_MB;
    uint8_t *data = malloc(16 * S_MB);
    if (!data)
        bail("out of memory");
    s_pattern(data, n, 1);
    lux_ref_t before, big_before;
    lux_val_t v;
    is_int(lux_put(lx, data, n, &before), 0, "a 4 MB put while there is room");
    ok(graph_call_big(lx, 11, (int64_t) n, &big_before) == 0 &&
           lux_get(lx, &big_before, &v, 60000) == 0 && graph_big_ok(&v, 11, (int64_t) n),
       "a task's 4 MB output while there is room");

    size_t filled = s_fill();
    diag("filled /dev/shm with %zu MB", filled / S_MB);

    /* three of each: were the room not given back, 96 MB would be held
       in a 64 MB store, and what is stored would be spilled or dropped */
    lux_ref_t ref;
    s_pattern(data, 16 * S_MB, 2);
    int rc = 0, why = 0;
    for (int i = 0; i < 3; i++) {
        rc = lux_put(lx, data, 16 * S_MB, &ref);
        why += rc == LUX_EFULL && strstr(lux_errmsg(), "/dev/shm is full") != NULL;
    }
    is_int(rc, LUX_EFULL, "/dev/shm full: a 16 MB put fails with LUX_EFULL");
    is_int(why, 3, "each of three says why: %s", lux_errmsg());
    why = 0;
    for (int i = 0; i < 3; i++) {
        rc = graph_call_big(lx, 12 + i, 16 * S_MB, &ref);
        if (rc == 0)
            rc = lux_get(lx, &ref, &v, 60000);
        why += rc == LUX_ETASK && strstr(lux_errmsg(), "/dev/shm is full") != NULL;
        lux_free(lx, 1, &ref);
    }
    is_int(rc, LUX_ETASK, "a task whose 16 MB output has no room fails");
    is_int(why, 3, "each of three says why: %s", lux_errmsg());

    s_pattern(data, n, 1);
    ok(lux_get(lx, &before, &v, 60000) == 0 && v.size == n && memcmp(v.data, data, n) == 0,
       "the put stored before reads back the same");
    ok(lux_get(lx, &big_before, &v, 60000) == 0 && graph_big_ok(&v, 11, (int64_t) n),
       "and so does the task's output");

    if (unlink(S_FILLER) != 0)
        bail("unlink %s: %s", S_FILLER, strerror(errno));
    s_pattern(data, 16 * S_MB, 3);
    rc = lux_put(lx, data, 16 * S_MB, &ref);
    is_int(rc, 0, "room again: the 16 MB put works");
    ok(rc == 0 && lux_get(lx, &ref, &v, 60000) == 0 && v.size == 16 * S_MB &&
           memcmp(v.data, data, 16 * S_MB) == 0,
       "and reads back the same");
    rc = graph_call_big(lx, 20, 16 * S_MB, &ref);
    if (rc == 0)
        rc = lux_get(lx, &ref, &v, 60000);
    if (rc)
        diag("%s", lux_errmsg());
    ok(rc == 0 && graph_big_ok(&v, 20, 16 * S_MB), "and so does the task making 16 MB");
    free(data);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);

    db_query_t *q = fx_query_open(dir);
    ok(q != NULL, "open the run's log");
    is_int(fx_count(q, "SELECT count(*) FROM events WHERE kind IN ('object_spilled', "
                       "'object_lost')"),
           0, "nothing was spilled or dropped: the room of each failure went back");
    db_query_close(&q);
    return done_testing();
}
