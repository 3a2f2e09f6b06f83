/* 1015-db-take-fail: a replica that cannot take a forwarded record into
   its batch (out of memory) fails, saying which record, whether the
   record is the first of its batch or a later one (issue 24 leftovers).

   db_rep_take_batch failed the replica when a later record could not be
   added to the batch, but when the batch itself could not be made, for
   its first record, it dropped the batch and went on as if it had taken
   nothing: no failure, no error, the replica stuck short of the log.

   A head with one shard and 3 replicas, and the test hook
   LUX_TEST_TAKE_FAIL=1:40 (replica 1, the middle, cannot take seq 40).
   Events are appended one at a time, each synced, so each FORWARD carries
   one record: seq 40 is the first of its batch. Replica 1 must fail
   naming seq 40 (its log), the chain go on without it (every sync
   answered), and its file end before seq 40. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "util/util_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main(void)
{
    db_cluster_t c;
    setenv("LUX_TEST_TAKE_FAIL", "1:40", 1);
    fx_start(&c, 1, 3, NULL);
    unsetenv("LUX_TEST_TAKE_FAIL");
    ok(fx_wait_chain(&c, 0, 3, 30000), "a chain of 3 replicas");
    db_client_t *cl = fx_client(&c, 1, 0);
    util_id_t job;
    util_id_random(&job);
    int synced = 0, rc = 0;
    for (int i = 0; i < 60; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        DB_SET_INT(&e, idx, DB_F_IDX, i);
        db_event_set_info(&e, "one at a time");
        rc = db_client_append(cl, &e);
        rc = rc ? rc : db_client_sync(cl, 30000);
        if (rc) {
            diag("append %d: %s", i, lux_errmsg());
            break;
        }
        synced++;
    }
    is_int(synced, 60, "60 events appended one at a time, each synced");

    char path[700], line[1200];
    snprintf(path, sizeof path, "%s/log/replica-0-1.log", c.dir);
    bool failed = false;
    for (int i = 0; i < 100 && !failed; i++) { /* the log is written as it goes */
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, "replica 1 failed") && strstr(line, "out of memory taking seq 40")) {
                failed = true;
                diag("%s", line);
            }
        if (f)
            fclose(f);
        if (!failed)
            usleep(100 * 1000);
    }
    ok(failed, "replica 1 failed, naming seq 40, the first record of its batch (%s)", path);
    uint64_t last = fx_last_seq(&c, 0, 1);
    ok(last > 0 && last < 40, "replica 1's file ends before seq 40 (at %llu)",
       (unsigned long long) last);
    db_client_destroy(&cl);
    fx_stop(&c);
    return done_testing();
}
