/*  exec_members - who is in the cluster: the head's membership monitor,
    and what nodes say to it (DESIGN section 2, "Nodes joining, beating
    and dying").

    The monitor runs in the head's supervisor. It binds the cluster's
    membership endpoint (db_cluster_members_ep: tcp with CURVE on
    --port + 2 for a tcp cluster, ipc otherwise) and keeps a table of the
    nodes from their heartbeats: every node's daemon sends a BEAT every
    EXEC_MEMBERS_BEAT_MS with its state as "key value" lines (node ID,
    address, resources total and free, store used and capacity, workers,
    queue length). A node silent for dead_ms is declared dead: the
    monitor appends `node_died` (the node, its address, and why) to the
    log and answers that node's next BEAT with DEAD, so a node cut off
    for longer than that stops rather than coming back under an ID the log
    says is dead; a monitor started again (the head restarted) reads the
    log's dead and departed nodes, lists them in its table as dead or
    left (the latest EXEC_MEMBERS_MAX / 4 of them; `lux status`, the
    global scheduler) and refuses their beats the same way. A
    node that leaves (`lux stop`) says LEAVE and the
    monitor appends `node_left`. `lux status` asks STATUS.

    The messages (doc/protocol.md, "Membership"), DEALER to ROUTER:
        BEAT text          -> OK | DEAD why
        LEAVE node-hex     -> OK (after node_left is in the log) | ERR why
        STATUS             -> NODES text   (one block per node, blank lines
                                            between; each block the node's
                                            last BEAT plus "state" and
                                            "age_ms" lines, "why" for an
                                            ended one, "unconfirmed 1" for
                                            one alive in the log at the
                                            monitor's start, not heard from
                                            since: its lines are the log's)
*/
#ifndef EXEC_MEMBERS_H_INCLUDED
#define EXEC_MEMBERS_H_INCLUDED

#include "../db/db_cluster.h"
#include "../net/net_ep.h"

#include <czmq.h>

#define EXEC_MEMBERS_BEAT_MS 500     /* a node's heartbeat period */
#define EXEC_MEMBERS_DEAD_MS 5000    /* silence after which a node is dead */
#define EXEC_MEMBERS_DEAD_WAIT 4     /* the global scheduler waits for a lately dead node
                                        that could run a task (exec_table.c) until this
                                        many dead times after its last beat; an actor's
                                        handle elsewhere waits as long (exec_ractor.c) */
#define EXEC_MEMBERS_MAX 4096        /* nodes a monitor keeps */

typedef struct {
    const db_cluster_t *cluster; /* the head's cluster (copied) */
    net_sec_t *sec;              /* the cluster key, for a tcp cluster (kept: the
                                    caller destroys it after the monitor) */
    int dead_ms;                 /* 0: EXEC_MEMBERS_DEAD_MS, or LUX_NODE_DEAD_MS */
} exec_members_opts_t;

/* Start the monitor; NULL with the message set (the endpoint cannot be
   bound). */
zactor_t *exec_members_new(const exec_members_opts_t *opts);
/* The silence after which the monitor declares a node dead when its
   options do not say: LUX_NODE_DEAD_MS, else EXEC_MEMBERS_DEAD_MS (the
   head's node manager, in the monitor's process, reads it too). */
int exec_members_dead_ms(void);

/* The head's own node, told the monitor by the head's supervisor as
   "OWN" and the node's ID in hex on the monitor's pipe: that node is
   not declared dead for its silence. It runs in the monitor's process,
   beating from the supervisor's loop, and it is the global scheduler:
   its silence is the supervisor's loop starved or busy, not the node
   gone, and declaring it dead either left the head without a node or
   (stopping it) cut every driver off the head (t/6129). Its death is
   logged when the head starts again (the rebuild). Test hook
   LUX_TEST_MEMBERS_JUDGE_OWN=1: judged like any node. */

/* One request to the monitor of cluster c: send what (and text, when
   not NULL), wait up to timeout_ms for the answer. *reply gets the
   answer's text (the second frame, or "" when none; free it) and the
   return value is 0 when the answer's first frame is OK or NODES,
   LUX_EDEAD after DEAD, LUX_EIO after ERR (the message says why),
   LUX_EDEAD too, within about a second, when the endpoint refuses every
   connection (nothing listens there: the head's process is gone; before,
   a node whose head was killed waited out timeout_ms to stop, t/5022),
   and LUX_ETIMEDOUT with a message naming the endpoint when nothing
   came. */
int exec_members_ask(const db_cluster_t *c, net_sec_t *sec, const char *what, const char *text,
                     int timeout_ms, char **reply);

/* The value of key in a block of "key value" lines, into out[n]; out,
   or NULL when the key is not there. */
char *exec_members_get(const char *text, const char *key, char *out, size_t n);

#endif
