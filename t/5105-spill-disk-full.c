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
#include "util/util_err.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#define MB (1024 * 1024)
#define S_PUT (3 * MB)
#define S_MAX 40

int
main(void)
{
    char spill[PATH_MAX + 16], why[UTIL_ERRMSG_MAX];
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "1000", 1); /* a put refused after 1 s, not 10 */
    lux_t *lx = graph_small_spill(NULL, 16 * MB, spill, sizeof spill);
    lux_ref_t refs[S_MAX];
    int rc, accepted = graph_puts_until_full(lx, S_PUT, 100, S_MAX, refs, &rc, why, sizeof why);
    ok(accepted >= 8, "%d puts of 3 MiB go into a 16 MiB store whose spills find a 2 MiB disk: "
       "the spilled ones are held in the node's memory", accepted);
    ok(rc == LUX_EFULL, "once the node holds a store's size of unwritten spills, a put is "
       "refused (rc %d after %d puts)", rc, accepted);
    ok(strstr(why, spill) && strstr(why, "No space left on device"),
       "its error names the spill directory and the disk's error: %s", why);
    is_int(graph_puts_wrong(lx, S_PUT, 100, accepted, refs), 0,
           "every one of the %d puts accepted reads back right, nothing lost", accepted);
    lux_shutdown(&lx);
    umount(spill);
    return done_testing();
}
