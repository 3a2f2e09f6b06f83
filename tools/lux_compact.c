/*  lux_compact - `lux compact --dir DIR --before SEQ|AGE`: move old events
    of every shard out of the replica files into the shard's archive
    (src/db/db_archive.h), keeping one hash chain across the boundary.

    --before SEQ moves the events with a seq below SEQ in each shard;
    --before AGE (a number and s, m, h or d) those older than that.
    Never beyond what every member of a shard's chain holds.
*/
#include "lux_cmd.h"
#include "lux_opt.h"
#include "db/db_archive.h"
#include "db/db_cluster.h"
#include "util/util_err.h"
#include "util/util_proc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char s_usage[] = "lux compact --dir DIR --before SEQ|AGE";
static const char s_help[] =
    "Moves the old events of each shard out of its replica files into the shard's\n"
    "archive (DIR/shard-S/archive.db, a log file of the same format), keeping one\n"
    "hash chain across the boundary. SEQ: the events below that seq in each shard;\n"
    "AGE (30s, 10m, 1h, 2d): the events older than that. lux sql, lux audit and\n"
    "lux pull read the archive and the live files as one log. Killed midway, the\n"
    "log still reads and audits the same; run it again to finish. The cluster may be\n"
    "running: appends go on meanwhile. One compaction of a cluster at a time; lux start\n"
    "--compact-after AGE runs one in the background. See lux(1).\n";

/* LUX_COMPACT_HOLD=STEP (tests): at that step (archive, base, delete; see
   db_archive_opts_t.hold), say so on stderr and wait there up to 120 s
   for the test's kill -9 */
static void
s_hold(const char *step)
{
    const char *want = getenv("LUX_COMPACT_HOLD");
    if (!want || strcmp(want, step) != 0)
        return;
    fprintf(stderr, "lux compact: holding after step %s (pid %d)\n", step, (int) getpid());
    fflush(stderr);
    for (int i = 0; i < 1200; i++)
        usleep(100000);
}

bool
lux_parse_age(const char *v, int64_t *ns)
{
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    int64_t unit;
    if (end == v || end[0] == '\0' || end[1] != '\0')
        return false;
    switch (*end) {
    case 's': unit = 1000000000LL; break;
    case 'm': unit = 60 * 1000000000LL; break;
    case 'h': unit = 3600 * 1000000000LL; break;
    case 'd': unit = 86400 * 1000000000LL; break;
    default: return false;
    }
    if (n > (unsigned long long) (INT64_MAX / unit))
        return false;
    *ns = (int64_t) n * unit;
    return true;
}

int
cmd_compact(int argc, char **argv)
{
    const char *dir = NULL, *before = NULL;
    static const struct option opts[] = {{"dir", required_argument, 0, 'd'},
                                         {"before", required_argument, 0, 'b'},
                                         {0}};
    const lux_opt_str_t strs[] = {{'d', &dir}, {'b', &before}, {0}};
    lux_opt_t p = {.cmd = "compact", .usage = s_usage, .help = s_help, .opts = opts,
                   .strs = strs};
    if (lux_opt_next(&p, argc, argv) != -1)
        return p.status;
    if (!lux_opt_args(&p, argc, argv, 0, 0, ""))
        return p.status;
    if (!dir || !before)
        return lux_opt_usage(&p, "%s is required", !dir ? "--dir DIR" : "--before SEQ|AGE");
    db_archive_opts_t ao = {0};
    int64_t age;
    char *end;
    unsigned long long seq = strtoull(before, &end, 10);
    if (end != before && *end == '\0' && seq >= 1)
        ao.before_seq = seq;
    else if (lux_parse_age(before, &age)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ao.before_ns = (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec - age;
        if (ao.before_ns <= 0)
            ao.before_ns = 1;
    } else
        return lux_opt_usage(&p, "--before takes a seq (1 or more) or an age (30s, 10m, 1h, "
                             "2d), not '%s'", before);
    if (getenv("LUX_COMPACT_STOP_AFTER_ARCHIVE")) /* tests: a compaction cut short */
        ao.stop_after_archive = true;
    db_cluster_t c;
    if (db_cluster_load(&c, dir))
        return lux_fail("compact", "%s", lux_errmsg());
    if (getenv("LUX_COMPACT_HOLD"))
        ao.hold = s_hold;
    if (getenv("LUX_COMPACT_BATCH")) /* tests: rows deleted per transaction */
        ao.batch = (uint32_t) strtoul(getenv("LUX_COMPACT_BATCH"), NULL, 10);
    /* one at a time: lux start --compact-after's and a user's */
    char lock[PATH_MAX + 32];
    int fd = util_lock_file(db_cluster_path(&c, lock, sizeof lock, "run/compact.lock"));
    if (fd < 0)
        return lux_fail("compact", "another lux compact runs on %s (%s)", c.dir, lux_errmsg());
    db_archive_stats_t st;
    int rc = db_archive_compact(&c, &ao, &st);
    close(fd);
    if (rc)
        return lux_fail("compact", "%s", lux_errmsg());
    printf("archived %" PRIu64 " events of %u shards of %s, deleted %" PRIu64
           " rows from the replica files (%.2f s)\n",
           st.moved, c.shards, c.dir, st.deleted, st.seconds);
    return 0;
}
