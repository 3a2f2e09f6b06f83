/* 5004-sub-silence: a subscriber that misses the master's pushes still
   follows its shard across tail failures.

   The master pushes each new configuration once; a push can be lost. The
   subscriber here drops every push (db_sub_drop_pushes). First the tail
   hangs (SIGSTOP): the master replaces it, and the only way on is what
   doc/protocol.md 10.2 rule 8 says: notice that the live tail went silent
   and ask the master. Then the tail is killed with -9 and restarted by
   its supervisor at the same endpoints. Each time the subscriber must see
   every seq exactly once, chained, up to the last one acknowledged. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_sub.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static db_cluster_t s_c;
static db_sub_t *s_sub;
static fx_chain_t s_ck; /* what the subscriber delivered */
static pid_t s_stopped; /* a replica we stopped, to continue at exit */

static void
s_cont(void)
{
    if (s_stopped > 0)
        kill(s_stopped, SIGCONT);
    s_stopped = 0;
}

static int
s_append(db_client_t *cl, int n)
{
    util_id_t job;
    util_id_random(&job);
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        DB_SET_INT(&e, idx, DB_F_IDX, i);
        if (db_client_append(cl, &e))
            return -1;
    }
    return db_client_sync(cl, 30000);
}

/* Follow until the subscriber has delivered seq `upto`, for at most
   limit_ms (a bound on a stuck subscriber, not a timing check). */
static bool
s_follow(uint64_t upto, int limit_ms)
{
    return fx_chain_follow(s_sub, &s_ck, upto, 0, limit_ms, NULL, NULL);
}

int
main(void)
{
    fx_start(&s_c, 1, 3, "--log-only");
    db_client_opts_t co = {.cluster = &s_c};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    s_sub = db_sub_new(&s_c, NULL, 0, 0);
    if (!s_sub)
        bail("subscriber: %s", lux_errmsg());
    db_sub_drop_pushes(s_sub, true);
    fx_chain_init(&s_ck, &s_c, 0);

    tap_atexit(s_cont);
    is_int(s_append(cl, 100), 0, "100 events appended");
    bool got = s_follow(db_client_acked_seq(cl, 0), 20000);
    ok(got, "the subscriber follows them (at seq %llu)", (unsigned long long) s_ck.next - 1);

    static const char *how[] = {"hung (SIGSTOP)", "killed (SIGKILL)"};
    for (int round = 0; round < 2; round++) {
        uint32_t index;
        pid_t pid = fx_pid_at(&s_c, 0, -1, &index);
        ok(pid > 0, "the tail is replica %u (pid %d)", index, (int) pid);
        if (pid <= 0)
            break;
        if (round == 0)
            kill(s_stopped = pid, SIGSTOP);
        else
            kill(pid, SIGKILL);
        is_int(s_append(cl, 100), 0, "the tail %s: 100 more events acknowledged", how[round]);
        uint64_t want = db_client_acked_seq(cl, 0);
        got = s_follow(want, 30000);
        ok(got, "the tail %s: the subscriber, deaf to pushes, reached seq %llu (it is at %llu)",
           how[round], (unsigned long long) want, (unsigned long long) s_ck.next - 1);
        if (round == 0) {
            uint64_t silences = db_sub_silences(s_sub);
            ok(silences > 0, "it asked the master after the tail fell silent (%llu times)",
               (unsigned long long) silences);
        }
        s_cont();
        ok(fx_wait_chain(&s_c, 0, 3, 30000), "the chain is whole again");
    }
    ok(s_ck.bad == 0, "every seq exactly once, in order, chained (%s)",
       s_ck.bad ? s_ck.why : "yes");
    db_sub_destroy(&s_sub);
    db_client_destroy(&cl);
    return done_testing();
}
