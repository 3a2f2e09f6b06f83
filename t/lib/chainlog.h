/*  chainlog - the logs of the chain fixture's replicas (t/5012): arrays of
    (value, chain hash) that survive a replica's crash, and, once
    chainlog_real() is on, a real replica file behind each (db_store over
    SQLite and the writer's lux-wal VFS, with t/lib/faultvfs under them).

    In real mode every write the fixture makes to a replica's log goes to
    its file too, in one transaction (chainlog_sync: the events it lacks
    appended, or the ones past the log cut with db_store_truncate), and
    may fail at the k-th write, sync or truncate of the SQLite files, the
    replica dying there. A restarted replica's log is read back from its
    file (chainlog_reload), which must hold the log as it was before that
    write or as it would be after it, hash chain verified. So the joins,
    cuts and rejoins of the fixture's schedules run on what the storage
    code really leaves behind, not on what a model says it leaves. */
#ifndef T_LIB_CHAINLOG_H_INCLUDED
#define T_LIB_CHAINLOG_H_INCLUDED

#include "db/db_event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t val;
    uint8_t hash[DB_HASH_LEN];
} ent_t;

/* Real files from now on, under dir (NULL: a directory of this process
   in /dev/shm, where no fsync waits for a disk, else the test's scratch
   directory; removed at exit), for replicas 0..nr-1 (at most 8). Logs
   quieter than errors are silenced unless the test is verbose (each cut
   warns). 0, or -1 with the reason in why. */
int chainlog_real(const char *dir, int nr, char *why, size_t len);
bool chainlog_is_real(void);

/* The chain hash of value val at seq after prev: the real one (an
   event's record through db_event_chain) in real mode, a cheap mix
   otherwise. The hash before seq 1. */
void chainlog_hash(uint8_t out[DB_HASH_LEN], const uint8_t prev[DB_HASH_LEN], uint64_t seq,
                   uint64_t val);
const uint8_t *chainlog_genesis(void);

/* A new schedule: replica i's file made empty. 0 or -1 (why). */
int chainlog_reset(int i, char *why, size_t len);

/* Make replica i's file hold log[0..n), the k-th write failing (k 0: no
   fault). 0 done (or not real); 1 the fault fired: the replica died
   (its file closed as it was); -1 an error without a fault (why). */
int chainlog_sync(int i, const ent_t *log, uint64_t n, long k, char *why, size_t len);

/* Replica i restarts: its file reopened and read into log, *n set to
   what it holds. It must be log[0..*n) (as the fixture last had it), or,
   after a fault, the log before or after the failed write. 0 or -1 (why). */
int chainlog_reload(int i, ent_t *log, uint64_t *n, char *why, size_t len);

/* The file of replica i holds exactly log[0..n). 0 or -1 (why). */
int chainlog_check(int i, const ent_t *log, uint64_t n, char *why, size_t len);

/* A replica's log file as it stands (t/5001, t/5020: a real cluster's
   files, not this fixture's), opened read-only: its last seq, returned,
   with that event's chain hash in last_hash; if hash_at is given, the
   chain hash at seq at there (zeros where the file lacks it); *verified
   whether its whole hash chain verifies (if not, a diag says why). 0 and
   not verified when the file cannot be opened. */
uint64_t chainlog_file_last(const char *path, uint64_t at, uint8_t last_hash[DB_HASH_LEN],
                            uint8_t hash_at[DB_HASH_LEN], bool *verified);

/* Close every file. */
void chainlog_close(void);

#endif
