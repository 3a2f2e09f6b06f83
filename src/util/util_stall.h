/*  util_stall - the time a periodic tick did not run, kept out of the
    silence that a failure detector counts.

    WHY. A loop that declares a peer dead after some silence counts that
    silence on its own clock, from the peer's last message it read. When
    the loop itself does not run (its process stopped by SIGSTOP, its
    machine paused, or starved of CPU), the peers' messages wait unread in
    its socket, and the first tick after counts the whole stall as their
    silence: every peer whose message it has not read yet looks dead. The
    head's membership monitor (src/exec/exec_members.c, t/6121) and the
    chain master (src/db/db_master.c, t/1012) both met this; the rule that
    answers it is here, once.

    THE RULE. A tick is due one period after the last; one that comes
    more than `late_ms` after it was due says that the loop did not run
    for the time past its due moment (`away`). Each silence clock is then
    moved forward by `away`, never past now: the time the loop was away
    is not counted, what the peer was silent before and after is. A peer
    that died meanwhile is still found dead, a full dead time after the
    loop runs again. A check made outside the tick (a request judged on a
    peer's silence) asks the same question first, on the same state, so
    that no stall is credited twice.
*/
#ifndef UTIL_STALL_H_INCLUDED
#define UTIL_STALL_H_INCLUDED

#include <stdint.h>

typedef struct {
    int64_t tick_ms;   /* when the loop last asked (0: never) */
    int64_t period_ms; /* its tick's period */
    int64_t late_ms;   /* lateness past the due tick that counts as a stall */
} util_stall_t;

/* A loop that ticks every period_ms, stalled when a tick comes more than
   late_ms after it was due. */
void util_stall_init(util_stall_t *s, int64_t period_ms, int64_t late_ms);

/* The loop runs at now_ms (a tick, or a check between ticks): how long
   it did not run before, when that is more than late_ms past its due tick;
   else 0 (and 0 at the first call). Remembers now_ms either way. */
int64_t util_stall_tick(util_stall_t *s, int64_t now_ms);

/* Moves the silence clock *since_ms (a peer's last message, or a start)
   forward by away_ms, not past now_ms. Returns how far it moved it: what
   was credited to that peer. */
int64_t util_stall_credit(int64_t *since_ms, int64_t away_ms, int64_t now_ms);

#endif
