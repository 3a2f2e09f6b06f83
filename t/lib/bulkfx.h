/*  bulkfx - the harness of the bulk path's tests, written once.

    In one process (t/6040, t/6117, t/6123): a source and pullers that are
    exec_bulk parts on 127.0.0.1, up to BULKFX_N pulls at once, the
    callbacks (bulkfx_fns) that serve pull i's object bulkfx.src[i] under
    bulkfx.key[i] and record what came (bulkfx.got, .ended, .rc, .err),
    and a loop that turns both parts until the pulls moved or ended.

    On a cluster (t/6030, t/6116): nodes joined to a head started by
    fx_start on 127.0.0.1 (node I at 127.0.0.(I+1)), stopped at exit,
    objects of xfx.h got and compared, and the nodes' logs counted. */
#ifndef BULKFX_H_INCLUDED
#define BULKFX_H_INCLUDED

#include "exec/exec_bulk.h"
#include "lib/fx.h"
#include "lib/xfx.h"
#include "lux.h"

#include <stdbool.h>
#include <stdint.h>

#define BULKFX_N 3 /* pulls at once, at most */

/* The state the callbacks serve from and write to: one a process. */
typedef struct {
    uint8_t *src[BULKFX_N];       /* pull i's object at the source (borrowed) */
    uint64_t size;                /* the size of every object */
    exec_bulk_key_t key[BULKFX_N]; /* pull i's key (xid 0: none) */
    uint64_t got[BULKFX_N];       /* bytes of pull i come so far */
    int ended[BULKFX_N];          /* how many times pull i ended */
    int rc[BULKFX_N];             /* its code when it ended */
    char err[BULKFX_N][512];      /* and its message ("" for 0) */
    bool have_fp[BULKFX_N];       /* it handed over a fingerprint at its end... */
    uint8_t fp[BULKFX_N][16];     /* ...this one (made as its chunks opened) */
    int served;                   /* objects the source handed out */
} bulkfx_t;

extern bulkfx_t bulkfx;
extern const exec_bulk_fns_t bulkfx_fns;

/* A free TCP port on 127.0.0.1 (bails out when there is none). */
int bulkfx_free_port(void);
/* Pull i's counts back to nothing (ended: as if it ended already). */
void bulkfx_reset(int i, bool ended);
/* Start pull i of bulkfx.size bytes into dst from 127.0.0.1:port with a
   new key of cipher, chunk bytes a chunk, window in flight (bails out
   when it cannot). */
exec_bulk_pull_t *bulkfx_pull(exec_bulk_t *pul, int port, int i, int cipher, uint8_t *dst,
                              uint32_t chunk, int window);
/* Pull 0 of size bytes of bulkfx.src[0] into dst (zeroed first), chunk
   bytes a chunk under a new key of cipher, 8 in flight, both parts turned
   until it ended (120 s at most; then stopped, said in a diag): whether
   it ended whole, by its code and its bytes. */
bool bulkfx_pull_whole(exec_bulk_t *src, exec_bulk_t *pul, int port, uint8_t *dst,
                       uint64_t size, uint32_t chunk, int cipher);
/* The fingerprint pull i handed over at its end is util_fp of p[0..n). */
bool bulkfx_fp_is(int i, const uint8_t *p, uint64_t n);
/* Turn both parts (fired and tick) for up to ms, until every pull i in
   mask (bit i) has moved at least min bytes, or ended; min 0: until
   they ended. Whether they did. */
bool bulkfx_pump(exec_bulk_t *a, exec_bulk_t *b, int ms, unsigned mask, uint64_t min);

/* The cluster: the head's directory and port, the nodes', the objects. */
typedef struct {
    db_cluster_t c;       /* the head (fx_start) */
    int port;             /* its port on 127.0.0.1 */
    char dir[5][600];     /* 0: the head's directory; 1..4 the nodes' */
    const xfx_obj_t *obj; /* the test's objects (borrowed) */
    const lux_ref_t *ref; /* and their refs, object k's at [k] (borrowed) */
} bulkfx_cl_t;

/* Start node i (1..4) at 127.0.0.(i+1) with a store of store_mb, joined
   to cl's head (with the environment as it is now), and check it joined
   ("node X joins on 127.0.0.(i+1)" then what); bails out when it does
   not. The nodes started so are stopped at exit. */
void bulkfx_join(bulkfx_cl_t *cl, int i, int store_mb, const char *what);
/* lx gets object k (120 s at most): rc (said in a diag); *same when its
   bytes are the object's. */
int bulkfx_get(const bulkfx_cl_t *cl, lux_t *lx, int k, bool *same);
/* How many lines of node i's log (0: the head's) hold a and b (b may be
   NULL). */
int bulkfx_log(const bulkfx_cl_t *cl, int i, const char *a, const char *b);

#endif
