/* 5105-spill-disk-full: puts spilled onto a full disk (issue 24, the
   review of the spill writer thread). Nothing may be lost: a put whose
   spill cannot be written stays in the node's memory and reads back
   right; once no more can be held there, a put that needs the room is
   refused, and its error names the spill directory and the disk's error
   (before: only "the object store has no room", which sends the reader
   to the store's size, not to the disk).

   It runs in a mount namespace of its own, with a 2 MiB tmpfs mounted on
   the node's spill directory, so that filling it disturbs nobody: that
   needs root (or CAP_SYS_ADMIN); without it the test is skipped.

   A 16 MiB store; puts of 3 MiB that do not compress (hx_fill), until
   one is refused (40 at most): no spill fits on the disk, so each
   spilled put's copy stays in memory, up to the store's size of them,
   and the next put that needs room must be refused, naming the spill
   directory and "No space left on device". Every put accepted reads back
   with its bytes (each freed once read: a read pins it). */
#include "tap.h"
#include "lib/graph.h"
#include "lib/hx.h"
#include "util/util_err.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB (1024 * 1024)
#define S_PUT (3 * MB)
#define S_MAX 40

int
main(void)
{
    char spill[PATH_MAX + 16];
    if (unshare(CLONE_NEWNS) != 0)
        skip_all("no mount namespace of our own (needs root): a full spill disk is not tried");
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
        skip_all("cannot make the mounts private here");
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "1000", 1); /* a put refused after 1 s, not 10 */
    lux_t *lx = graph_unrecorded(NULL, 1, 16 * MB);
    snprintf(spill, sizeof spill, "%s/spill", lux_dir(lx));
    if (mount("tmpfs", spill, "tmpfs", MS_NOSUID | MS_NODEV, "size=2m,mode=0700") != 0) {
        lux_shutdown(&lx);
        skip_all("cannot mount a small tmpfs on the spill directory here");
    }

    uint8_t *buf = malloc(S_PUT);
    if (!buf)
        bail("out of memory");
    lux_ref_t refs[S_MAX];
    char why[UTIL_ERRMSG_MAX] = "";
    int rc = 0, n = 0;
    for (; n < S_MAX && rc == 0; n++) {
        hx_fill(buf, S_PUT, 100 + (uint64_t) n);
        rc = lux_put(lx, buf, S_PUT, &refs[n]);
        if (rc)
            snprintf(why, sizeof why, "%s", lux_errmsg());
    }
    int accepted = rc ? n - 1 : n;
    ok(accepted >= 8, "%d puts of 3 MiB go into a 16 MiB store whose spills find a 2 MiB disk: "
       "the spilled ones are held in the node's memory", accepted);
    ok(rc == LUX_EFULL, "once the node holds a store's size of unwritten spills, a put is "
       "refused (rc %d after %d puts)", rc, accepted);
    ok(strstr(why, spill) && strstr(why, "No space left on device"),
       "its error names the spill directory and the disk's error: %s", why);

    int wrong = 0;
    lux_val_t v;
    for (int i = 0; i < accepted; i++) {
        hx_fill(buf, S_PUT, 100 + (uint64_t) i);
        if (lux_get(lx, &refs[i], &v, 60000) != 0 || v.size != S_PUT ||
            memcmp(v.data, buf, S_PUT) != 0) {
            diag("put %d: %s", i, lux_errmsg());
            wrong++;
        }
        lux_free(lx, 1, &refs[i]); /* read in place: pinned until freed */
    }
    is_int(wrong, 0, "every one of the %d puts accepted reads back right, nothing lost",
           accepted);
    free(buf);
    lux_shutdown(&lx);
    umount(spill);
    return done_testing();
}
