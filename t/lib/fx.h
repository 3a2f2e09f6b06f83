/*  fx - fixtures for tests that run real clusters: start and stop a head
    through the `lux` binary (LUX_BIN), find replicas by role, wait for a
    chain to be whole again. Every cluster a test starts is stopped at exit,
    and only the processes it started are ever killed. */
#ifndef FX_H_INCLUDED
#define FX_H_INCLUDED

#include "db/db_event.h"
#include "db/db_master.h"
#include "db/db_query.h"
#include "db/db_sub.h"
#include "net/net_wire.h"
#include "lux.h"

#include <stdbool.h>
#include <sys/types.h>

/* Start a head in a new directory under the test's scratch directory with
   fast failure detection (heartbeat 50 ms, dead after 400 ms). extra is
   appended to the command line (or NULL). Bails out on failure. */
void fx_start(db_cluster_t *c, uint32_t shards, uint32_t replicas, const char *extra);
void fx_stop(db_cluster_t *c);

/* Start a tcp head on 127.0.0.1 (fx_start with --workers 1 --store-mb 16)
   on a port of its own: 20000 + (pid % 2000) * 7 + slot (a test's slot
   keeps it apart from the other tests' ports), the port in *port. *good
   gets the cluster's key pair, *other a new one made under the scratch
   directory; both checked (two checks). Bails out when the head fails. */
void fx_start_tcp(db_cluster_t *c, uint32_t shards, uint32_t replicas, int slot, int *port,
                  struct net_sec_t **good, struct net_sec_t **other);

/* Run `lux ARGS` and return its exit status; its stdout into out (may be
   NULL), stderr into err (may be NULL). */
int fx_lux(char *out, size_t outlen, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The pid of the replica at position pos of shard's chain (-1: the tail),
   and its index; 0 when unknown. */
pid_t fx_pid_at(const db_cluster_t *c, uint32_t shard, int pos, uint32_t *index);

/* Wait until shard's chain has n members, all serving at its epoch;
   false on timeout. */
bool fx_wait_chain(const db_cluster_t *c, uint32_t shard, uint32_t n, int timeout_ms);

/* Every pid of the head's processes (supervisor first); returns the count. */
int fx_pids(const db_cluster_t *c, pid_t *pids, int max);

/* The live child processes of this process (for the embedded default:
   its workers), found in /proc by their parent pid; returns the count.
   Zombies are left out. */
int fx_children(pid_t *pids, int max);
/* The same for the children of parent. */
int fx_children_of(pid_t parent, pid_t *pids, int max);

/* Wait up to timeout_ms until dir holds n signs held-PID of tasks that
   are running (t/lib/testmod.c's t_hold, t_gateh1); their pids into pids
   (up to n). Returns how many were there at the end. */
int fx_held(const char *dir, int n, pid_t *pids, int timeout_ms);

/* Start a t_hold task on lx that holds a worker until fx_release(name):
   its gate is tap_tmpdir()/name; waits up to 120 s for it to run. 0 with
   *ref and *pid set; lux_call's code; or LUX_ETIMEDOUT (it never ran). */
int fx_hold(lux_t *lx, const char *name, lux_ref_t *ref, pid_t *pid);
/* Let fx_hold's task of that name end. */
void fx_release(const char *name);

/* Let the node manager this process starts (the embedded default) start
   its workers from the lux program itself, not through the libtool
   wrapper script that LUX_BIN names in a build tree: `lux --help` took
   0.5 s through it at load 11 on a 2-core machine, 0.06 s without it
   (this test's own wrapper has set the library path the program needs). For the tests that kill workers by the hundred. Nothing changes
   where LUX_BIN is not such a wrapper. Call it before lux_init. */
void fx_lux_unwrapped(void);

/* Whether pid runs `lux worker` (one of its arguments is "worker"): a
   worker of a node manager, safe for a test to kill. */
bool fx_is_worker(pid_t pid);

/* The log of the cluster in dir, opened for queries; bails out on failure. */
db_query_t *fx_query_open(const char *dir);

/* The first column of the first row of a query over the log (printf-style),
   as an integer; -1 (and a diag) when the query fails or gives no row. */
int64_t fx_count(db_query_t *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 when a CURVE handshake with the tcp endpoint ep (whose server key is
   server's: the cluster's) completes for a client holding client's key
   pair (NULL: no key at all), 0 when it fails or does not happen within
   3 s (watched with ZeroMQ's socket monitor). pub: ep is a PUB (a SUB
   connects), else a ROUTER (a DEALER connects and sends). */
struct net_sec_t;
int fx_curve_handshake(const char *ep, bool pub, struct net_sec_t *server,
                       struct net_sec_t *client);

/* Test gates (LUX_TEST_*_GATE=DIR, a process waits in DIR until told):
   write DIR/NAME holding text (bails out on failure); wait until DIR/held
   exists, polling cl meanwhile when not NULL (false after timeout_ms). */
struct db_client_t;
/* Wait until path exists, polling every 10 ms; false after ms. (A gate of
   one file: LUX_TEST_BLOB_GATE, LUX_TEST_SPILL_GATE make PATH.waiting.) */
bool fx_wait_file(const char *path, int ms);
void fx_gate_touch(const char *dir, const char *name, const char *text);
bool fx_gate_wait(const char *dir, struct db_client_t *cl, int timeout_ms);

/* Append n note events through cl (idx = *count, job = job when not NULL),
   counting them in *count, and flush; bails out on failure. */
void fx_append_notes(struct db_client_t *cl, const util_id_t *job, int n, uint64_t *count);

/* What a subscriber delivered of one shard, checked: every seq once, in
   order, each record's hash chained on the one before (fx_chain_*). */
typedef struct {
    uint64_t next;               /* the seq expected next */
    uint8_t prev[DB_HASH_LEN];   /* the chain hash of the record before it */
    int bad;                     /* records out of order or off the chain */
    char why[200];               /* the first of them */
} fx_chain_t;
/* Called for each record fx_chain_batch checked. */
typedef void(fx_rec_fn)(void *arg, uint64_t seq, const uint8_t *rec, size_t len);
/* Expect shard's genesis: seq 1 next. */
void fx_chain_init(fx_chain_t *k, const db_cluster_t *c, uint32_t shard);
/* Check every record of b (then each, when not NULL). */
void fx_chain_batch(fx_chain_t *k, net_batch_t *b, fx_rec_fn *each, void *arg);
/* Receive from sub until it delivered seq upto (0: until it has nothing
   for wait_ms), for at most limit_ms (a bound on a stuck subscriber, not
   a timing check), checking each batch; whether it got to upto. */
bool fx_chain_follow(db_sub_t *sub, fx_chain_t *k, uint64_t upto, int wait_ms,
                     int limit_ms, fx_rec_fn *each, void *arg);

/* A log client of the cluster in c (batch and max_inflight: 0 for the
   defaults); bails out when it cannot be made. */
struct db_client_t *fx_client(const db_cluster_t *c, uint32_t batch, uint32_t max_inflight);

/* Append n notes through cl, each of a job of its own (so they spread
   over every shard), idx 0..n-1 and info; sync every sync_every events
   (0: none between) and at the end (60 s at most); bails out on failure. */
void fx_notes_spread(struct db_client_t *cl, int n, const char *info, int sync_every);

/* The last seq in replica index's file of shard (0 when it cannot be
   opened). */
uint64_t fx_last_seq(const db_cluster_t *c, uint32_t shard, uint32_t index);

/* A message of the wire (doc/protocol.md 3): a header frame of type,
   shard and epoch, then body's n bytes as one frame when body is set. */
zmsg_t *fx_msg(int type, uint32_t shard, uint64_t epoch, const void *body, size_t n);

/* A READ (doc/protocol.md 9) on rd, a DEALER connected to a read endpoint:
   send one for shard at epoch, from seq from, at most max events (request
   ID 7); take its answer: 0 for READ_REP (*last: the tail's last seq, *top:
   the batch's highest seq, 0 when empty), 1 for ERROR (*code, text).
   Bails out when no answer comes within rd's receive timeout or it is not
   one of those. fx_read_connect: a DEALER to replica index's read endpoint
   with a receive timeout of 60 s (bails out on failure). */
zsock_t *fx_read_connect(const db_cluster_t *c, uint32_t shard, uint32_t index);
void fx_read_send(zsock_t *rd, uint32_t shard, uint64_t epoch, uint64_t from, uint32_t max);
int fx_read_answer(zsock_t *rd, uint64_t *last, uint64_t *top, int *code, char *text,
                   size_t n);

#endif
