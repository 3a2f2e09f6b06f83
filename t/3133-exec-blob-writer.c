/* 3133-exec-blob-writer: the node manager goes on answering while a put's
   bytes are written to the blob store for replay (issue 24).

   Under load a node was declared dead: recording a big put (lz4, write,
   fsync) ran on the node manager's loop, which then answered nothing, its
   daemon's heartbeat (a STATS on the same loop) included, for more than
   the 5 s after which the head's membership monitor gives a node up.

   The write is held in progress here on purpose, with no clock: the test
   hook LUX_TEST_BLOB_GATE=PATH makes the write create PATH.waiting and
   then wait until PATH exists. With the write held, a task is called and
   its result read (every step goes through the node's loop); before the
   fix that lux_get ran into its 60 s timeout. Then the gate opens, and
   the put's object_put event must say "recorded", its blob be there, and
   a second put of the same bytes be found there (one file). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "util/util_fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#define MB (1024 * 1024)

int
main(void)
{
    char gate[PATH_MAX], waiting[PATH_MAX + 16], dir[PATH_MAX];
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    snprintf(waiting, sizeof waiting, "%s.waiting", gate);
    setenv("LUX_TEST_BLOB_GATE", gate, 1);
    lux_t *lx = graph_embedded(1, 64 * MB, "start the embedded default (puts recorded)");
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));

    size_t n = 24 * MB;
    uint8_t *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t) (i * 7 + (i >> 16));
    lux_ref_t put, put2, out;
    int rc = lux_put(lx, buf, n, &put);
    is_int(rc, 0, "a put of 24 MiB");
    ok(fx_wait_file(waiting, 120000), "its blob's write has begun and is held (%s)", waiting);

    /* the node answers while the write is held */
    int64_t a = 20, got = -1;
    lux_val_t v;
    rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&a, 8)}, 1, &out);
    rc = rc ? rc : lux_get(lx, &out, &v, 60000);
    if (!rc && v.size == 8)
        memcpy(&got, v.data, 8);
    ok(rc == 0 && got == 61, "a task is called and its result read while the write is held "
       "(rc %d: %s)", rc, rc ? lux_errmsg() : "ok");
    rc = lux_get(lx, &put, &v, 60000);
    ok(rc == 0 && v.size == n && memcmp(v.data, buf, n) == 0,
       "the put itself is read back meanwhile (rc %d)", rc);

    util_write_file(gate, "", 0, 0600); /* the write goes on */
    rc = lux_put(lx, buf, n, &put2);
    is_int(rc, 0, "the same bytes put again");
    free(buf);
    lux_shutdown(&lx);

    db_query_t *q = fx_query_open(dir);
    int64_t rec = fx_count(q, "SELECT count(*) FROM events WHERE kind = 'object_put' AND "
                              "size = %zu AND info = 'recorded'", n);
    int64_t again = fx_count(q, "SELECT count(*) FROM events WHERE kind = 'object_put' AND "
                                "size = %zu AND info LIKE 'recorded (the same bytes%%'", n);
    int64_t fin = fx_count(q, "SELECT count(*) FROM tasks WHERE status = 'finished'");
    db_query_close(&q);
    is_int(rec, 1, "the first put's object_put event says recorded");
    is_int(again, 1, "the second says the same bytes were recorded before");
    is_int(fin, 1, "the task finished");
    /* one blob file (.lz4), no temporary left */
    char blobs[PATH_MAX + 8];
    snprintf(blobs, sizeof blobs, "%s/blobs", dir);
    int nlz4 = 0, nother = 0;
    DIR *d = opendir(blobs);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t k = strlen(e->d_name);
        if (e->d_name[0] == '.')
            continue;
        if (k > 4 && strcmp(e->d_name + k - 4, ".lz4") == 0)
            nlz4++;
        else
            nother++;
    }
    if (d)
        closedir(d);
    ok(nlz4 == 1 && nother == 0, "one blob in %s (%d, and %d other files)", blobs, nlz4, nother);
    return done_testing();
}
