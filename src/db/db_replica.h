/*  db_replica - one replica of one shard: a component (czmq actor) that
    plays head, middle or tail of its shard's chain (DESIGN section 5).

    Endpoints it binds:
        append  ROUTER  clients' APPEND (served while head)
        chain   ROUTER  its predecessor's HELLO and FORWARD
        read    ROUTER  READ of committed events (served while tail),
                        by db_reader's thread
        pub     PUB     PUBLISH of committed events (while tail)
    and it connects a DEALER to the chain master, one to its successor's
    chain endpoint, and, while catching up, one to the tail's read endpoint.

    Threads: this actor's (network, hashing, chain logic), a writer
    (db_writer: SQLite group commit) and a reader (db_reader: range reads,
    checkpoints).

    Actor commands: $TERM. The actor sends "FAILED", text on its pipe when
    it stops after an error it cannot recover from (a failed write); its
    host should then exit so that it is restarted and rejoins.
*/
#ifndef DB_REPLICA_H_INCLUDED
#define DB_REPLICA_H_INCLUDED

#include "db_cluster.h"
#include "../net/net_ep.h"

#include <czmq.h>

typedef struct {
    const db_cluster_t *cluster; /* settings and paths (copied) */
    uint32_t shard;
    uint32_t index;
    net_sec_t *sec;              /* cluster key, for tcp; may be NULL for ipc */
} db_replica_opts_t;

/* Start a replica; NULL with the message set when it cannot open its file
   or bind its endpoints. */
zactor_t *db_replica_new(const db_replica_opts_t *opts);

/* The test hooks (t/README) a replica's restarted process is given, NULL
   ended: LUX_TEST_REPLICA_HOLD, which holds restarts back (t/5020), and
   LUX_TEST_APPEND_GATE, which gates a restarted head's appends (t/5304).
   Its supervisor starts a replica the first time with its own
   environment, and restarts it with no other LUX_TEST_ variable: a hook
   set for the processes a test started (LUX_TEST_TAKE_FAIL fails a
   replica's take once; the gates hold the first process armed) is not
   one for each process after them (t/1019). */
extern const char *const db_replica_restart_hooks[];

#endif
