/*  db_join - the decisions of a join, without I/O (see db_join.h).

    DB_JOIN_PLANT, defined only when the chain fixture's planted-bug test
    (t/5013) compiles this file into itself, brings back the loss fixed in
    stop 31: the tail acknowledges past its hold, so a joiner admitted at
    the held seq may lack events clients were told of. The fixture must
    find it; no build of the library defines it.
*/
#include "db_join.h"

#include <string.h>

static uint64_t
s_window(const db_join_t *j)
{
    return j->window ? j->window : DB_JOIN_PROBE;
}

void
db_join_begin(db_join_t *j, uint64_t have)
{
    j->phase = have ? DB_J_PROBE : DB_J_FETCH;
    j->req = 0;
    j->agreed = 0;
    j->probe_from = have > s_window(j) ? have - s_window(j) + 1 : 1;
}

bool
db_join_read(const db_join_t *j, uint64_t have, uint64_t *from, uint32_t *count)
{
    if (j->phase == DB_J_PROBE) {
        *from = j->probe_from;
        *count = (uint32_t) s_window(j);
        return true;
    }
    if (j->phase == DB_J_FETCH) {
        *from = have + 1;
        *count = DB_JOIN_FETCH;
        return true;
    }
    return false;
}

int
db_join_probe(db_join_t *j, const net_batch_t *in, uint64_t tail_last, uint64_t have,
              db_join_hash_fn *fn, void *arg, uint64_t *agree)
{
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t n;
    bool found = false;
    uint64_t top = have < tail_last ? have : tail_last, last = 0;
    uint8_t mine[DB_HASH_LEN];

    *agree = 0;
    net_batch_iter(&it, in);
    while (net_batch_next(&it, &seq, &rec, &n)) {
        if (seq > top)
            break;
        last = seq;
        if (n >= DB_HASH_LEN && fn(arg, seq, mine) == 0 &&
            memcmp(mine, rec + n - DB_HASH_LEN, DB_HASH_LEN) == 0) {
            *agree = seq;
            found = true;
        }
    }
    if (found && *agree == last && last < top && in->count < s_window(j)) {
        /* the tail cut its answer short (8 MiB: a few large events) and
           every record of it agrees: ours may agree further, so read on
           from its end. Before, its end was taken for the newest seq that
           agrees, and the joiner cut the acknowledged events after it,
           then fetched them again, window after window (t/1016) */
        j->agreed = last;
        j->probe_from = last + 1;
        return DB_JOIN_READ;
    }
    if (!found && j->agreed && in->count && in->first == j->agreed + 1) {
        /* read on after an answer that agreed, and differs from its first
           seq: the newest that agrees is the one before */
        *agree = j->agreed;
        found = true;
    } else if (!found && in->count && in->first > 1 && top >= in->first) {
        /* nothing agrees in this window: look further back */
        j->probe_from = in->first > s_window(j) ? in->first - s_window(j) : 1;
        return DB_JOIN_READ;
    }
    if (!found && in->count == 0 && tail_last > 0 && j->probe_from > tail_last) {
        /* the tail is shorter than our window */
        j->probe_from = tail_last > s_window(j) ? tail_last - s_window(j) + 1 : 1;
        return DB_JOIN_READ;
    }
    if (*agree == have) {
        j->phase = DB_J_FETCH;
        return DB_JOIN_READ;
    }
    j->phase = DB_J_TRUNC;
    j->req = 0;
    return DB_JOIN_TRUNCATE;
}

int
db_join_fetched(db_join_t *j, bool bad, uint64_t have, uint64_t tail_last)
{
    if (bad) {
        /* start over, carefully */
        j->phase = DB_J_PROBE;
        j->probe_from = have > s_window(j) ? have - s_window(j) + 1 : 1;
        return DB_JOIN_READ;
    }
    if (have >= tail_last) {
        j->phase = DB_J_WAIT;
        return DB_JOIN_ASK;
    }
    return DB_JOIN_READ;
}

bool
db_hold_begin(db_hold_t *h, uint32_t joiner, uint64_t last, uint64_t ack_seq)
{
    bool begins = !h->on;
    if (begins) {
        h->on = true;
        h->seq = ack_seq;
    }
    h->index = joiner;
    h->last = last;
    return begins;
}

uint64_t
db_hold_ack_upto(const db_hold_t *h, uint64_t ack_seq, uint64_t commit_seq)
{
#ifdef DB_JOIN_PLANT
    (void) h;
    (void) ack_seq;
    return commit_seq;
#else
    return h->on ? ack_seq : commit_seq;
#endif
}

bool
db_join_admit(uint64_t last, uint64_t held)
{
    return last >= held;
}
