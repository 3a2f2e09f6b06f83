/* 1014-util-stall: the rule that keeps the time a failure detector's
   loop did not run out of its peers' silence (src/util/util_stall.h),
   shared by the head's membership monitor and the chain master: a tick
   more than late_ms past its due time reports the time away, silence
   clocks move forward by it and never past now; the same answers as the
   two copies of the rule it replaced, on random schedules; and, on a
   simulated loop, a peer that beats all along is never found silent for
   the dead time however long the loop stops, while one that died during
   a stop is found dead a dead time after the loop runs again.
   (Numbered 1014, in the db family's range given to this work, though it
   tests a util class.) */
#include "tap.h"
#include "util/util_stall.h"

#include <stdio.h>

/* The membership monitor's copy before util_stall (exec_members.c,
   6a62b26): it ticks every beat / 2, late past a beat. */
static int64_t
s_old_members(int64_t *tick, int64_t now, int64_t beat)
{
    int64_t away = *tick ? now - *tick - beat / 2 : 0;
    *tick = now;
    return away > beat ? away : 0;
}

/* The chain master's (db_master.c, e325547): every heartbeat, late past
   one. */
static int64_t
s_old_master(int64_t *tick, int64_t now, int64_t period)
{
    int64_t away = *tick ? now - *tick - period : 0;
    *tick = now;
    return away > period ? away : 0;
}

static int64_t
s_old_credit(int64_t seen, int64_t away, int64_t now)
{
    return seen + away < now ? seen + away : now;
}

/* A loop ticking every period (late past `late`) that is stopped from
   stop_at for stop_ms, a peer that beats every beat_ms until died_at
   (-1: never), its beats read when the loop runs, and a dead time: when
   (ms) the loop first finds the peer silent for dead_ms, or -1 within
   end_ms. *counted gets the silence it counted then. */
static int64_t
s_sim(int64_t period, int64_t late, int64_t beat_ms, int64_t dead_ms, int64_t stop_at,
      int64_t stop_ms, int64_t died_at, int64_t end_ms, int64_t *counted)
{
    util_stall_t s;
    util_stall_init(&s, period, late);
    int64_t seen = 1000, last_beat = 1000;
    for (int64_t now = 1000; now < end_ms; now += period) {
        if (now > stop_at && now < stop_at + stop_ms)
            now = stop_at + stop_ms; /* the loop runs again here */
        int64_t away = util_stall_tick(&s, now);
        util_stall_credit(&seen, away, now);
        /* then the beats that waited in its socket are read */
        while (last_beat + beat_ms <= now && (died_at < 0 || last_beat + beat_ms < died_at))
            last_beat += beat_ms;
        /* a tick comes before the reads (zloop: timers first): judge on
           what was read before this tick */
        if (now - seen >= dead_ms) {
            *counted = now - seen;
            return now;
        }
        seen = last_beat > seen ? last_beat : seen;
    }
    return -1;
}

int
main(void)
{
    util_stall_t s;
    int64_t since;

    /* the membership monitor's numbers: a tick every 250 ms, late past 500 */
    util_stall_init(&s, 250, 500);
    is_int(util_stall_tick(&s, 10000), 0, "the first tick has nothing to measure from");
    is_int(util_stall_tick(&s, 10250), 0, "a tick on time: no stall");
    is_int(util_stall_tick(&s, 11000), 0, "one 500 ms past its due time (the limit): no stall");
    is_int(util_stall_tick(&s, 11751), 501, "one 501 ms past it: away 501 ms");
    is_int(util_stall_tick(&s, 11900), 0, "a check between ticks, after: nothing more to credit");
    is_int(util_stall_tick(&s, 12150), 0, "and the tick after it is measured from that check");
    is_int(util_stall_tick(&s, 72150), 59750, "a 60 s stop: away 60 s less the period");

    since = 5000;
    is_int(util_stall_credit(&since, 3000, 9000), 3000, "a credit moves the clock by away");
    is_int(since, 8000, "... to 8000");
    is_int(util_stall_credit(&since, 3000, 9000), 1000, "never past now: 1000 of 3000 credited");
    is_int(since, 9000, "... it stops at now");
    is_int(util_stall_credit(&since, 0, 9500), 0, "no stall, no credit");
    is_int(since, 9000, "... the clock stays");

    /* the same answers as the two copies it replaced, on random schedules */
    uint64_t r = 0x5eed1014;
    int diff = 0;
    for (int k = 0; k < 2; k++) {
        int64_t p = k ? 100 : 500; /* the master's heartbeat; the monitor's beat */
        int64_t old_tick = 0, now = 1;
        int64_t seen_old = 1, seen_new = 1;
        if (k)
            util_stall_init(&s, p, p);
        else
            util_stall_init(&s, p / 2, p);
        for (int i = 0; i < 100000; i++) {
            uint64_t x = tap_rand(&r);
            /* mostly on time, sometimes late, now and then a long stop */
            now += x % 10 ? (int64_t) (x >> 8) % (3 * p) : (int64_t) (x >> 8) % 20000;
            int64_t a_old = k ? s_old_master(&old_tick, now, p) : s_old_members(&old_tick, now, p);
            int64_t a_new = util_stall_tick(&s, now);
            if (a_old > 0)
                seen_old = s_old_credit(seen_old, a_old, now);
            util_stall_credit(&seen_new, a_new, now);
            if (x % 7 == 0) /* a beat read */
                seen_old = seen_new = now;
            if (a_old != a_new || seen_old != seen_new) {
                if (!diff++)
                    diag("%s step %d: now %lld: away %lld vs %lld, seen %lld vs %lld",
                         k ? "master" : "members", i, (long long) now, (long long) a_old,
                         (long long) a_new, (long long) seen_old, (long long) seen_new);
            }
        }
    }
    is_int(diff, 0, "200,000 random ticks: the same away and silence clocks as the old copies");

    /* a simulated loop: beat 100 ms, tick 100 ms, dead 1 s (the master's test
       numbers in t/1012) */
    int64_t counted = 0;
    int64_t t;
    for (int64_t stop = 500; stop <= 120000; stop *= 2) {
        t = s_sim(100, 100, 100, 1000, 5000, stop, -1, 5000 + stop + 10000, &counted);
        if (t >= 0)
            break;
    }
    is_int(t, -1, "a peer that beats all along is never found dead, stops of 0.5 s to 2 min");
    t = s_sim(100, 100, 100, 1000, 5000, 60000, 5000, 80000, &counted);
    ok(t >= 65000 + 1000 - 300 && t <= 65000 + 1000 + 300,
       "one that died as a 60 s stop began is found dead about a dead time after it "
       "(at %lld ms, the stop ended at 65000)", (long long) t);
    ok(counted >= 1000 && counted < 1500, "... having counted %lld ms of silence, not 61 s",
       (long long) counted);
    t = s_sim(100, 100, 100, 1000, 5000, 0, 5000, 80000, &counted);
    ok(t >= 5900 && t <= 6200, "without a stop, a dead time after its last beat at 4900 (%lld ms)",
       (long long) t);
    return done_testing();
}
