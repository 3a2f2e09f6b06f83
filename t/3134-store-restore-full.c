/* 3134-store-restore-full: a spilled object comes back into a store full
   of pins when nothing a wait could bring would free them, and is refused
   with the store's state only when it cannot fit at all (issue 24).

   The long form of t/3108 (seed 5, chaos) failed a nested task's subtask
   with "waited 10000 ms for room to bring back a spilled argument": the
   driver kept 85 MB of puts pinned (read in place) in a 64 MiB store, and
   the subtask's argument, a put spilled earlier, found no room. An ALLOC
   in that state goes beyond the store's size at once (DESIGN 7 rule 9),
   but bringing back a spilled object for a task or a lux_get still waited
   its LUX_STORE_WAIT_MS, and its last try before the deadline was made
   without leave to go beyond the store's size, so it could fail although
   the spare region had room.

   Here: a 16 MiB store, three puts of 3 MiB left unread (so spilled) and
   five of 3 MiB read in place (15 MiB pinned by the driver). The wait is
   an hour: a wait taken shows as a get past its 120 s bound. Then the
   same store with a task running (a wait may free room): it waits the
   (short) time and then goes beyond the store's size, not failing. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MB (1024 * 1024)

/* t_big's pattern (t/lib/testmod.c): the seed, then seed * 31 + i */
static void
s_fill(uint8_t *p, size_t n, int64_t seed)
{
    memcpy(p, &seed, 8);
    for (size_t i = 8; i < n; i++)
        p[i] = (uint8_t) (seed * 31 + (int64_t) i);
}

/* nspilled puts of 3 MiB left alone, then five read in place: with a
   16 MiB store the first ones are spilled to make room for the last. */
static int
s_fill_store(lux_t *lx, lux_ref_t *spilled, int nspilled, lux_val_t *kept)
{
    uint8_t *buf = malloc(3 * MB);
    lux_ref_t r;
    int rc = buf ? 0 : LUX_ENOMEM;
    for (int i = 0; i < nspilled && !rc; i++) {
        s_fill(buf, 3 * MB, 100 + i);
        rc = lux_put(lx, buf, 3 * MB, &spilled[i]);
    }
    for (int i = 0; i < 5 && !rc; i++) {
        s_fill(buf, 3 * MB, 200 + i);
        rc = lux_put(lx, buf, 3 * MB, &r);
        rc = rc ? rc : lux_get(lx, &r, &kept[i], 60000);
    }
    free(buf);
    return rc;
}

/* t_check of ref: (seed + size) mod M when its bytes are right */
static int
s_check(lux_t *lx, const lux_ref_t *ref, int64_t *got)
{
    lux_ref_t out;
    lux_val_t v;
    int rc = lux_call(lx, "t_check", 1, (lux_arg_t[]) {LUX_REF(*ref)}, 1, &out);
    rc = rc ? rc : lux_get(lx, &out, &v, 120000);
    if (!rc && v.size == 8)
        memcpy(got, v.data, 8);
    return rc;
}

int
main(void)
{
    setenv("LUX_STORE_WAIT_MS", "3600000", 1);
    setenv("LUX_LOG", "error", 0);
    lux_t *lx = graph_unrecorded(NULL, 2, 16 * MB);
    lux_ref_t sp[3];
    lux_val_t kept[5], v;
    int rc = s_fill_store(lx, sp, 3, kept);
    ok(rc == 0, "three puts of 3 MiB, then five read in place: 15 of the store's 16 MiB pinned "
       "by the driver (%s)", rc ? lux_errmsg() : "ok");

    int64_t got = -1, want = (100 + 3 * MB) % GRAPH_M;
    rc = s_check(lx, &sp[0], &got);
    ok(rc == 0 && got == want, "a task whose argument was spilled runs at once, beyond the "
       "store's size: no running task could free the driver's pins (%s)",
       rc ? lux_errmsg() : "ok");
    rc = lux_get(lx, &sp[1], &v, 120000);
    ok(rc == 0 && graph_big_ok(&v, 101, 3 * MB), "the driver's own lux_get of a spilled put is "
       "answered at once too, with its bytes (%s)", rc ? lux_errmsg() : "ok");

    /* Now the spare region full as well: puts of 3 MiB read in place
       until one is refused (the first put, back in the spare region and
       unpinned since its task ended, is spilled again on the way). All
       there is 3 MiB blocks, so what is left of the spare region's 16 MiB
       is less than 3 MiB: bringing a spilled put back can never succeed
       while the driver holds all that. Refused at once, naming the store
       and why. */
    uint8_t *buf = malloc(3 * MB);
    lux_ref_t fill[8];
    lux_val_t fv[8];
    int nfill = 0;
    rc = 0;
    while (nfill < 8 && !rc) {
        s_fill(buf, 3 * MB, 300 + nfill);
        rc = lux_put(lx, buf, 3 * MB, &fill[nfill]);
        if (!rc && (rc = lux_get(lx, &fill[nfill], &fv[nfill], 60000)) == 0)
            nfill++;
    }
    free(buf);
    ok(rc == LUX_EFULL && nfill >= 1 && nfill < 8, "puts of 3 MiB read in place fill the spare "
       "region: %d, then refused (%s)", nfill, lux_errmsg());
    /* the refusal says what the spare region has left, not only the
       store's own largest block (which told the reader nothing of why
       the spare could not take it) */
    ok(strstr(lux_errmsg(), "spare region (whose free bytes are ") &&
       strstr(lux_errmsg(), "largest free block outside it is"),
       "... the refusal names the spare region's free bytes and the store's largest block");
    rc = s_check(lx, &sp[0], &got);
    ok(rc == LUX_ETASK && strstr(lux_errmsg(), "spilled argument") &&
       strstr(lux_errmsg(), "object store"),
       "a task whose spilled argument cannot fit even beyond the store fails at once, "
       "saying why: %s", lux_errmsg());
    rc = lux_get(lx, &sp[2], &v, 120000);
    ok(rc == LUX_EFULL && strstr(lux_errmsg(), "bring it back") &&
       strstr(lux_errmsg(), "object store"),
       "so does a lux_get of a spilled put, with LUX_EFULL (the put has not failed; the "
       "store is full): %s", lux_errmsg());
    rc = lux_get(lx, &sp[2], &v, 120000);
    ok(rc == LUX_EFULL && strstr(lux_errmsg(), "bring it back"),
       "asked again while the store is as full: the same answer (%d)", rc);
    bool right = true;
    for (int i = 0; i < nfill; i++)
        right = right && graph_big_ok(&fv[i], 300 + i, 3 * MB);
    for (int i = 0; i < 5; i++)
        right = right && graph_big_ok(&kept[i], 200 + i, 3 * MB);
    ok(right, "the driver's objects kept their bytes");
    /* the driver lets go of what filled the spare region: the same
       driver's next get of the spilled put brings it back (it was kept
       on disk, and the earlier refusal was an answer to that get, not
       the object's fate) */
    lux_free(lx, nfill, fill);
    rc = lux_get(lx, &sp[2], &v, 120000);
    ok(rc == 0 && graph_big_ok(&v, 102, 3 * MB),
       "once the driver frees the spare region's puts, its next get of the spilled put "
       "brings it back, byte for byte (%s)", rc ? lux_errmsg() : "ok");
    lux_shutdown(&lx);

    /* A task running (held at a gate by t_hold) may free room when it
       ends: the spilled argument waits the store's wait (1 s here), then
       goes beyond the store's size; the held task is still running when
       the answer comes. */
    setenv("LUX_STORE_WAIT_MS", "1000", 1);
    lx = graph_unrecorded(NULL, 2, 16 * MB);
    rc = s_fill_store(lx, sp, 1, kept);
    ok(rc == 0, "the same store again: one spilled put, 15 MiB pinned (%s)",
       rc ? lux_errmsg() : "ok");
    lux_ref_t hold;
    pid_t held;
    int ready = 0;
    rc = fx_hold(lx, "hold", &hold, &held);
    ok(rc == 0, "a task is held running on one worker (%s)",
       rc == LUX_ETIMEDOUT ? "not running within 120 s" : rc ? lux_errmsg() : "ok");
    got = -1;
    rc = s_check(lx, &sp[0], &got);
    lux_wait(lx, 1, &hold, 1, 0, &ready);
    ok(rc == 0 && got == want && !ready,
       "a task whose argument was spilled runs after the wait, beyond the store's size, "
       "while the held task still runs (%s)", rc ? lux_errmsg() : "ok");
    fx_release("hold");
    rc = lux_get(lx, &hold, &v, 120000);
    ok(rc == 0, "the held task ends once let go (%s)", rc ? lux_errmsg() : "ok");
    lux_shutdown(&lx);
    return done_testing();
}
