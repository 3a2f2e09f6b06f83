/*  util_complain - a rate-limited complaint: an error line logged at most
    once per interval, for what a daemon drops (garbage from a peer, a
    message of the wrong type) where a flood of it must not fill the log.

    Each complainer keeps its own state, so two of them (two node managers
    in one process, the replica's and the reader's threads) do not silence
    each other. It owns no memory: embed it by value and init it.

        util_complain_t c;
        util_complain_init(&c, 1000);
        util_complain(&c, "node: dropped a bad message: %s", what);

    A line logged after some were not ends with their count and the time
    since the last line: "(41 more like it in the last 1.0 s)".
*/
#ifndef UTIL_COMPLAIN_H_INCLUDED
#define UTIL_COMPLAIN_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t every_ms; /* at most one line per this many ms */
    int64_t last_ms;  /* monotonic ms of the last line; INT64_MIN: none yet */
    uint64_t dropped; /* complaints not logged since the last line (the interval had not passed) */
} util_complain_t;

/* The interval most daemons use: one line a second. */
#define UTIL_COMPLAIN_MS 1000

void util_complain_init(util_complain_t *c, int64_t every_ms);

/* Log fmt at the error level unless c logged less than every_ms ago.
   true when the line was logged. */
bool util_complain(util_complain_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same at a given monotonic time (ms), for tests. */
bool util_complain_at(util_complain_t *c, int64_t now_ms, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same at level (UTIL_LOG_*): for what the caller retries rather
   than drops, a peer's refusal it will resend (db_client.c). */
bool util_complain_lvl(util_complain_t *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
