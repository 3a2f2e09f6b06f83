/* 3170-no-room-long-path: the "no room" error keeps its census whole when
   the spill directory's path is long (issue 24 leftovers).

   The error names what holds the store, then, last, why puts that would
   make room cannot be spilled: the spill's error, which names the file.
   The message has UTIL_ERRMSG_MAX (1,024) bytes; with a long node
   directory (--dir), the file's path took the rest, and the message was
   cut: the disk's error ("No space left on device") was lost, and with a
   task's context before it, more.

   As t/5105: a mount namespace of its own with a 2 MiB tmpfs on the
   node's spill directory (root needed, else skipped), a 16 MiB store,
   puts of 3 MiB that do not compress until one is refused, but the
   node's directory is about 430 bytes long. The refusal must hold the
   census (the store's figures, the tasks' part, the spill's error with
   "No space left on device" at its end), with the path shortened by
   "..." in its middle, and fit in the message. Then a task's 3 MiB
   output is refused the same way: its error, read by lux_get with the
   task's context before it, must end the same. Before, checks 2 and 4
   failed: the put's refusal was cut at 1,023 bytes in the path, the
   task's at 653 (the worker's and the node's 600-byte copies of a task's
   error cut it in the tasks' census, long path or not, once anything was
   spilled). */
#include "tap.h"
#include "lib/graph.h"
#include "util/util_err.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define MB (1024 * 1024)
#define S_PUT (3 * MB)
#define S_MAX 40

/* The census's parts that must be in a refusal, in order, and its end. */
static void
s_whole(const char *msg, const char *what)
{
    static const char *parts[] = {"has no room for", "bytes are in use", "granted to tasks",
                                  "the largest free block outside it is", "running",
                                  "puts that would make room cannot be spilled: ", "..."};
    const char *p = msg;
    bool all = true;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const char *q = strstr(p, parts[i]);
        if (!q) {
            diag("  missing (or out of order): %s", parts[i]);
            all = false;
            continue;
        }
        p = q;
    }
    size_t n = strlen(msg), e = strlen("No space left on device");
    bool end = n >= e && strcmp(msg + n - e, "No space left on device") == 0;
    if (!end)
        diag("  it does not end with the disk's error");
    ok(all && end && n < UTIL_ERRMSG_MAX - 1, "%s: the census whole, the path shortened, the "
       "disk's error last (%zu bytes)", what, n);
    diag("  got: %s", msg);
}

int
main(void)
{
    char dir[PATH_MAX], spill[PATH_MAX + 16], why[UTIL_ERRMSG_MAX];
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "1000", 1);
    /* a node directory of about 430 bytes: 8 levels of 48 (SQLite takes
       paths of at most 512 bytes, and the log is under it) */
    int k = snprintf(dir, sizeof dir, "%s", tap_tmpdir());
    for (int i = 0; i < 8; i++) {
        k += snprintf(dir + k, sizeof dir - (size_t) k, "/%02d-a-long-directory-name-for-the-spill-path", i);
        mkdir(dir, 0700);
    }
    lux_t *lx = graph_small_spill(dir, 16 * MB, spill, sizeof spill);
    diag("the spill directory's path: %zu bytes", strlen(spill));

    lux_ref_t refs[S_MAX];
    int rc, accepted = graph_puts_until_full(lx, S_PUT, 3170, S_MAX, refs, &rc, why, sizeof why);
    ok(rc == LUX_EFULL, "puts of 3 MiB until one is refused: %d accepted", accepted);
    s_whole(why, "a put's refusal");

    /* a task's output that needs the room */
    lux_ref_t t;
    lux_val_t v;
    rc = graph_call_big(lx, 3170, S_PUT, &t);
    rc = rc ? rc : lux_get(lx, &t, &v, 120000);
    snprintf(why, sizeof why, "%s", rc ? lux_errmsg() : "");
    ok(rc == LUX_ETASK, "a task's 3 MiB output is refused (rc %d)", rc);
    s_whole(why, "the task's error");
    lux_free(lx, 1, &t);

    is_int(graph_puts_wrong(lx, S_PUT, 3170, accepted, refs), 0,
           "every put accepted reads back right");
    lux_shutdown(&lx);
    umount(spill);
    return done_testing();
}
