/*  db_reader - the thread that serves a replica's range reads and runs its
    WAL checkpoints.

    It binds the replica's read endpoint (ROUTER) and answers READ requests
    with committed events, from a connection of its own, so a subscriber
    catching up on a million events never stalls appends. Reads are served
    only while the replica is the tail of its chain in the epoch the request
    names (DESIGN section 5: a replica removed from the chain must not serve
    stale reads). It also runs the passive WAL checkpoints that the
    writer's connection is told not to do: when the WAL reaches
    DB_CKPT_PAGES pages, or a second after the last one if anything was
    written, so that the work per event does not depend on the rate.

    The WAL starts again from its beginning, instead of growing, only when
    a write transaction begins with every frame copied back and no reader
    in it. A passive checkpoint never leaves it so under a steady stream of
    commits (frames arrive while it copies): the WAL grew without end, 190
    MB in a 4 s benchmark, and each commit wrote into new file pages, a
    quarter of the replica thread's time. So when the WAL is DB_CKPT_PAGES
    long, once the passive copies have left at most DB_CKPT_WRAP frames, a
    FULL checkpoint holds the writer off while it copies those, and the
    writer's next transaction starts the WAL again. It waits for nothing:
    when the writer is in a transaction or a reader is on an older
    snapshot it copies what it can as a passive one would, and the next
    round tries again (waiting for readers while holding the writer off
    stalled the writer 35-55 ms at a time, 10% fewer n:n actor calls/s).
    The WAL is synced first without a lock, so the FULL syncs only the last
    frames: the writer waits 5-10 ms under n:n calls, about a millisecond
    under one call at a time. When the WAL did not start again after a
    FULL that copied everything (a reader was in it), the next FULL waits
    DB_CKPT_FULL_MS: one every 50 ms added three syncs each time, and
    8-10 us to log_ack_latency.

    Under a load that writes frames faster than a few passive passes copy
    them, no FULL runs, and the WAL grows until the load eases, as it did
    before.

    The WAL file keeps the largest size it reached: SQLite writes it again
    from its beginning and does not shrink it (no journal_size_limit), and
    only a clean close removes it. So a replica that took DB_CKPT_PAGES
    pages once holds a WAL file of about 17 MB (4096 frames of 4 KiB and
    their headers) from then on, more after a load the copies fell behind
    (25.6 MB at most in 20,000 one-event commits after a kill -9 and
    restart, the WAL started again 9 times; 18.2 MB in 6,000 before it).
    That is the 17-23 MB seen on t/5304's disk: room it needs, not a
    leak. Where this thread gets no CPU for long, the writer copies the
    WAL back itself past DB_WAL_CAP frames (db_writer.c): about 33 MB is
    the most a replica's WAL takes.

    READ body:     req u64, from u64 (1 or more: 0 is refused, EINVAL),
                   max u32, max_bytes u32 (0 or more than DB_READ_MAX and
                   DB_READ_MAX_BYTES: those limits)
    READ_REP body: req u64, last u64 (the tail's last seq); frame 2: batch
    A READ whose header names another shard is refused with ESHARD, one at
    another epoch with EEPOCH, one at a replica that is not the tail with
    ESTATE; the epoch, the tail and the acknowledged seq (upto) are
    checked again after the worker took the file's last seq, not only
    when the READ arrived (doc/protocol.md 9.1).
*/
#ifndef DB_READER_H_INCLUDED
#define DB_READER_H_INCLUDED

#include "db_store.h"
#include "../net/net_ep.h"

#include <czmq.h>
#include <stdatomic.h>

/* What the replica's network thread tells its reader. */
typedef struct {
    _Atomic uint64_t epoch;     /* current epoch of the chain */
    _Atomic int is_tail;        /* reads are served only by the tail */
    _Atomic uint64_t upto;      /* ...up to this seq: what it acknowledged
                                   (ack_seq; a hold for a joiner keeps it) */
    _Atomic uint64_t wal_pages; /* the writer's WAL size after its last commit */
} db_reader_state_t;

#define DB_READ_MAX 16384           /* events per READ_REP at most */
#define DB_CKPT_PAGES 4096          /* checkpoint when the WAL is this long */
#define DB_CKPT_WRAP 512            /* frames a FULL checkpoint copies at most */
#define DB_CKPT_FULL_MS 200         /* ...and its pause when the WAL stayed */
#define DB_WAL_CAP (2 * DB_CKPT_PAGES) /* the writer copies the WAL back itself
                                          (db_writer.c) past this many frames */
#define DB_READ_MAX_BYTES (8 << 20) /* bytes per READ_REP at most */
#define DB_READ_HWM 8                /* READ_REPs queued for one peer at most: past that,
                                        answers to a peer that does not read them are
                                        dropped (it asks again); see doc/protocol.md */

typedef struct {
    const char *db_path;     /* the replica's file */
    const util_id_t *cluster;
    uint32_t shard;
    const char *ep;          /* read endpoint to bind */
    net_sec_t *sec;          /* for tcp */
    db_reader_state_t *state; /* shared, owned by the replica */
    char *bound;             /* out: endpoint actually bound */
    size_t bound_len;
} db_reader_opts_t;

/* Start a reader; NULL (message set) if it cannot open or bind. */
zactor_t *db_reader_new(db_reader_opts_t *opts);

#endif
