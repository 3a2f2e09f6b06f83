/* 1016-db-join-probe-cut: a joiner's probe (db_join_probe) when the
   tail's answer is cut short by its byte limit (DB_READ_MAX_BYTES: 8 MiB,
   a few large events) before the joiner's last seq. Every record of such
   an answer agreeing, the joiner reads on from its end; it cuts only after
   the newest seq that really agrees. Before, the end of the answer was
   taken for that seq: the joiner truncated acknowledged events the tail
   held ("truncating unacknowledged events 8649..10314"), fetched them
   again, and did so window after window down the log (t/5020, seeds 9
   and 11: rejoins of 33 and 40 s).
   The records here are bare hashes, as in the chain fixture (t/5012):
   db_join reads only a record's last DB_HASH_LEN bytes. */
#include "tap.h"
#include "db/db_join.h"
#include "net/net_wire.h"
#include "util/util_buf.h"

#include <string.h>

#define HAVE 100 /* the joiner's log: seqs 1..HAVE */
#define TAIL 150 /* the tail's */
#define WIN 32   /* the probe window */

static uint64_t s_fork; /* the joiner's hashes differ from the tail's from this seq (0: never) */

static void
s_hash(uint8_t out[DB_HASH_LEN], uint64_t seq, bool joiner)
{
    memset(out, 0, DB_HASH_LEN);
    memcpy(out, &seq, sizeof seq);
    out[15] = joiner && s_fork && seq >= s_fork ? 0xee : 0x11;
}

static int
s_mine(void *arg, uint64_t seq, uint8_t *hash)
{
    (void) arg;
    if (seq == 0 || seq > HAVE)
        return -1;
    s_hash(hash, seq, true);
    return 0;
}

/* The tail's answer to the joiner's current READ, cut after `cut`
   records (0: as many as asked, up to its last seq); db_join_probe's
   verdict, *agree set; -1 when the joiner has no READ out. */
static int
s_answer(db_join_t *j, uint32_t cut, uint64_t *agree)
{
    uint64_t from;
    uint32_t count;
    *agree = 0;
    if (!db_join_read(j, HAVE, &from, &count)) {
        diag("no READ to answer (phase %d)", j->phase);
        return -1;
    }
    uint64_t upto = from + count - 1 < TAIL ? from + count - 1 : TAIL;
    uint32_t n = from <= upto ? (uint32_t) (upto - from + 1) : 0;
    if (cut && cut < n)
        n = cut;
    util_buf_t b;
    net_batch_t in;
    util_buf_init(&b);
    net_batch_begin(&b, from);
    for (uint32_t k = 0; k < n; k++) {
        uint8_t h[DB_HASH_LEN];
        s_hash(h, from + k, false);
        net_batch_add(&b, h, DB_HASH_LEN);
    }
    net_batch_end(&b, n);
    if (net_batch_parse(&in, b.data, b.len))
        bail("a batch made here does not parse");
    int rc = db_join_probe(j, &in, TAIL, HAVE, s_mine, NULL, agree);
    util_buf_free(&b);
    return rc;
}

/* Where the joiner's next READ starts (0: it has none out). */
static uint64_t
s_next(const db_join_t *j)
{
    uint64_t from;
    uint32_t count;
    return db_join_read(j, HAVE, &from, &count) ? from : 0;
}

static void
s_begin(db_join_t *j, uint64_t fork)
{
    memset(j, 0, sizeof *j);
    j->window = WIN;
    s_fork = fork;
    db_join_begin(j, HAVE);
}

int
main(void)
{
    db_join_t j;
    uint64_t agree, from;
    int rc;

    /* the same log as the tail's: no cut, whatever the answers' sizes */
    s_begin(&j, 0);
    rc = s_answer(&j, 12, &agree); /* 69..80 of 69..100 */
    ok(rc == DB_JOIN_READ && j.phase == DB_J_PROBE,
       "an answer cut short that agrees is read on from, not cut after (%s at %llu)",
       rc == DB_JOIN_TRUNCATE ? "truncate" : "read", (unsigned long long) agree);
    from = s_next(&j);
    ok(from == 81, "the next READ starts after it (at %llu)", (unsigned long long) from);
    rc = s_answer(&j, 7, &agree); /* 81..87, cut again */
    from = s_next(&j);
    ok(rc == DB_JOIN_READ && from == 88, "and again after a second cut answer (at %llu)",
       (unsigned long long) from);
    rc = s_answer(&j, 0, &agree); /* 88..119 */
    ok(rc == DB_JOIN_READ && j.phase == DB_J_FETCH,
       "an answer reaching its last seq, all agreeing: it fetches, nothing cut (phase %d)",
       j.phase);

    /* a fork at 91: cut answers read on, then the cut is after 90 */
    s_begin(&j, 91);
    rc = s_answer(&j, 12, &agree); /* 69..80 */
    ok(rc == DB_JOIN_READ, "fork at 91: a cut answer 69..80 is read on from");
    rc = s_answer(&j, 10, &agree); /* 81..90, all agreeing */
    ok(rc == DB_JOIN_READ, "fork at 91: so is 81..90");
    rc = s_answer(&j, 0, &agree); /* 91..122: nothing agrees */
    ok(rc == DB_JOIN_TRUNCATE && agree == 90,
       "fork at 91: nothing agrees after the cut answers: truncate after 90 (%s at %llu), "
       "no probe further back",
       rc == DB_JOIN_TRUNCATE ? "truncate" : "read", (unsigned long long) agree);

    /* a fork inside a cut answer: cut where it forks, as before */
    s_begin(&j, 75);
    rc = s_answer(&j, 12, &agree); /* 69..80, 75.. differ */
    ok(rc == DB_JOIN_TRUNCATE && agree == 74,
       "fork at 75 inside a cut answer: truncate after "
       "74 (%s at %llu)",
       rc == DB_JOIN_TRUNCATE ? "truncate" : "read", (unsigned long long) agree);

    /* a fork before the window, answers whole: probe further back, as before */
    s_begin(&j, 50);
    rc = s_answer(&j, 0, &agree); /* 69..100: nothing agrees */
    from = s_next(&j);
    ok(rc == DB_JOIN_READ && from == 37,
       "fork at 50: nothing agrees in 69..100: the probe goes back to 37 (at %llu)",
       (unsigned long long) from);
    rc = s_answer(&j, 0, &agree); /* 37..68 */
    ok(rc == DB_JOIN_TRUNCATE && agree == 49, "fork at 50: truncate after 49 (%s at %llu)",
       rc == DB_JOIN_TRUNCATE ? "truncate" : "read", (unsigned long long) agree);
    /* ...and with that window cut short before the fork: read on */
    s_begin(&j, 50);
    s_answer(&j, 0, &agree);
    rc = s_answer(&j, 5, &agree); /* 37..41 */
    from = s_next(&j);
    ok(rc == DB_JOIN_READ && from == 42,
       "fork at 50, the window back cut at 41: read on from 42 (at %llu)",
       (unsigned long long) from);
    rc = s_answer(&j, 0, &agree); /* 42..73 */
    ok(rc == DB_JOIN_TRUNCATE && agree == 49, "then truncate after 49 (%s at %llu)",
       rc == DB_JOIN_TRUNCATE ? "truncate" : "read", (unsigned long long) agree);
    return done_testing();
}
