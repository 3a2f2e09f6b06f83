/* 2102-wal-bound: a steady stream of small commits (one event each, as a
   caller making one actor call at a time makes) does not grow a replica's
   WAL without end. Each commit writes whole pages into the WAL; 20,000 of
   them write some 240 MB. The WAL starts again from its beginning once
   its frames are copied back (src/db/db_reader.h); before that, it only
   grew while the commits came (190 MB in a 4 s benchmark).

   Part 1, as a replica runs: what is checked is that the WAL starts
   again, many times: each start bumps the checkpoint sequence number in
   the WAL's header, which the test samples. How long it grows between two
   starts depends on how soon the reader's thread gets a CPU: near
   DB_CKPT_PAGES pages (16 MB) on an idle machine, 81 MB once under a
   parallel `make check`, where the writer's cap (part 2) now stops it.

   Part 2, with the reader's checkpoints off (LUX_TEST_CKPT_OFF, as a
   reader thread that gets no CPU at all): the writer copies the WAL back
   itself once it is DB_WAL_CAP frames long, so the file never passes that
   size and a commit's frames. Before the cap the WAL took all 240 MB, and
   t/5304's 32 MiB disk filled once under CI's load with room for the run
   it checks. And every event is still there afterwards. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_event.h"
#include "db/db_reader.h"
#include "util/util_err.h"
#include "util/util_id.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define S_COMMITS 20000

static db_cluster_t s_c;

static int64_t
s_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t) st.st_size : 0;
}

/* The checkpoint sequence number in a WAL's header (big-endian, bytes
   12-15; SQLite's file format, section 4.1), or -1 when it cannot be read. */
static int64_t
s_ckpt_seq(const char *path)
{
    unsigned char h[16];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(h, 1, sizeof h, f) : 0;
    if (f)
        fclose(f);
    if (n != sizeof h)
        return -1;
    return (int64_t) ((uint32_t) h[12] << 24 | (uint32_t) h[13] << 16 | (uint32_t) h[14] << 8 |
                      (uint32_t) h[15]);
}

/* S_COMMITS one-event appends, each acknowledged before the next; the
   WAL's largest size and how often it started again, sampled every 100. */
static int
s_stream(db_cluster_t *c, int64_t *peak, int *starts)
{
    char db[4096], wal[4200];
    db_cluster_replica_db(c, 0, 0, db, sizeof db);
    snprintf(wal, sizeof wal, "%s-wal", db);
    db_client_opts_t co = {.cluster = c};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    util_id_t job;
    util_id_random(&job);
    int64_t last_seq = -1;
    int failed = 0;
    *peak = 0;
    *starts = 0;
    for (int i = 0; i < S_COMMITS && !failed; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        db_event_set_info(&e, "one small commit");
        if (db_client_append(cl, &e) || db_client_sync(cl, 20000)) {
            diag("append %d: %s", i, lux_errmsg());
            failed = 1;
        }
        if (i % 100 == 0 || i == S_COMMITS - 1) {
            int64_t n = s_size(wal), seq = s_ckpt_seq(wal);
            if (n > *peak)
                *peak = n;
            if (seq >= 0 && last_seq >= 0 && seq != last_seq)
                (*starts)++;
            if (seq >= 0)
                last_seq = seq;
        }
    }
    db_client_destroy(&cl);
    return failed;
}

static void
s_all_there(db_cluster_t *c)
{
    db_query_t *q = fx_query_open(c->dir);
    is_int(fx_count(q, "SELECT count(*) FROM event WHERE kind = %d AND info = 'one small commit'",
                    DB_K_note),
           S_COMMITS, "every event is in the log");
    db_query_close(&q);
}

int
main(void)
{
    int64_t peak, bound = (int64_t) S_COMMITS * 3 * 4096 / 2;
    int starts;

    fx_start(&s_c, 1, 1, "--log-only");
    ok(!s_stream(&s_c, &peak, &starts), "%d appends, each acknowledged before the next",
       S_COMMITS);
    ok(starts >= 2, "the WAL started again from its beginning while they came (seen %d times)",
       starts);
    ok(peak > 0 && peak <= bound, "the WAL stayed at most %lld bytes, half what they wrote "
       "(its largest: %lld; %d pages of WAL start the reader's copy)",
       (long long) bound, (long long) peak, DB_CKPT_PAGES);
    s_all_there(&s_c);
    fx_stop(&s_c);

    /* part 2: no checkpoint from the reader; the file's size is its
       header, then 24 bytes and a page a frame: at most the cap and the
       frames of one commit (a one-event commit writes a few pages) */
    setenv("LUX_TEST_CKPT_OFF", "1", 1);
    fx_start(&s_c, 1, 1, "--log-only");
    int64_t cap = 32 + (int64_t) (DB_WAL_CAP + 64) * (24 + 4096);
    ok(!s_stream(&s_c, &peak, &starts),
       "with the reader's checkpoints off: %d appends, each acknowledged", S_COMMITS);
    ok(peak > 0 && peak <= cap, "the WAL stayed within the writer's cap, %lld bytes (%d frames "
       "and one commit's; its largest: %lld)", (long long) cap, DB_WAL_CAP, (long long) peak);
    ok(starts >= 2, "the WAL started again while they came (seen %d times)", starts);
    s_all_there(&s_c);
    return done_testing();
}
