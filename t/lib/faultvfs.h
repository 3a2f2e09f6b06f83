/*  faultvfs - a SQLite VFS for tests that fails writes on demand, under
    every connection the test process opens (the log writer's lux-wal VFS
    included: it wraps the default VFS, which this becomes).

    Armed with k, the k-th write, sync or truncate from then on fails, and
    so does every later one, deletes included, until it is disarmed: what
    a process that died at that step left in its files is what the files
    hold then. A test closes its connections while still armed (SQLite's
    own clean-up on close cannot reach the files either), disarms, and
    reopens them as the restarted process would. */
#ifndef T_LIB_FAULTVFS_H_INCLUDED
#define T_LIB_FAULTVFS_H_INCLUDED

#include <stdbool.h>

/* Register as the default VFS, wrapping the one that was; call before the
   first connection (and before the first db_store_open, whose lux-wal VFS
   wraps the default it finds then). 0, or SQLite's error code. */
int faultvfs_install(void);

/* The k-th write/sync/truncate from now fails, and every one after it
   (k >= 1). */
void faultvfs_arm(long k);

/* Only the k-th call from now fails (k >= 1), and the calls after it pass
   again: a write that found the disk full where a later, smaller one finds
   room (in a WAL written again from its start), or with reads, one read
   that fails (EIO); reads are counted then, as writes, syncs, truncates
   and deletes are. */
void faultvfs_arm_once(long k, bool reads);

/* Whether the armed fault has fired (the process is dead). */
bool faultvfs_fired(void);

/* Back to passing every call through. Returns whether the fault fired. */
bool faultvfs_disarm(void);

/* Writes, syncs and truncates (and with arm_once's reads, reads) passed
   through since the last arm. */
long faultvfs_ops(void);

#endif
