/*  exec_xfer_loc - the head's locator (exec_xfer_loc.c): where an object
    lives, read from the log, for NODE_LOCATE, the head's own pulls and the
    global scheduler's locality. For the exec_xfer files alone.
*/
#ifndef LUX_EXEC_XFER_LOC_H
#define LUX_EXEC_XFER_LOC_H

#include "exec_xfer_src.h"

/* NODE_LOCATE's flags: the sources the head listed all said they do not
   hold it (STALE: the head makes it again); nobody was listed for the
   puller's locate_ms (UNSEEN: the head lists who holds it now, and makes
   it again only when nobody does). */
enum { XFER_LOCATE_STALE = 1, XFER_LOCATE_UNSEEN = 2 };
/* NODE_LOCATE_REP's byte after LUX_ENOTFOUND: the head is making it
   (ask again), or the log has no event of it at all yet (ask again,
   up to LUX_XFER_UNRECORDED_MS), or it has none and none will come: no
   creator the log knows made it, or its creator has ended (MADEUP, the
   text says why; the puller asks once more after XFER_MADEUP_MS, then
   fails). */
enum { XFER_MAKING = 1, XFER_UNRECORDED = 2, XFER_MADEUP = 3 };
#define XFER_MADEUP_MS 300
enum { FP_NONE = 0, FP_EXACT, FP_OF_ONE }; /* what the log's fingerprint is of */

typedef struct {
    util_id_t node;
    char ep[DB_EP_MAX];
} xfer_src_t;

/* Where the log says an object lives. */
typedef struct {
    bool self;               /* in: this node is listed too (another node asks) */
    bool asked;              /* in: for NODE_LOCATE (LUX_TEST_LOCATE_GATE's point) */
    xfer_src_t src[XFER_SRC_MAX]; /* live holders, its origin first ... */
    int nsrc;                /* ... and how many */
    int fpkind;              /* FP_*: what log_fp is */
    uint8_t log_fp[16];
    uint64_t size;           /* its size, when the log says it */
    bool made;               /* no holder, but the log records its making */
} xfer_loc_t;

/* The live nodes the log says hold id, into *l. 0, or LUX_ENOTFOUND
   (l->made: the log records its making, so no event of it is on its way
   and nothing will come by waiting), or a code with the message. */
int nm_xfer_locate(nm_t *nm, const lux_ref_t *id, xfer_loc_t *l);
/* Whether the log has any event of id's task (or put) at all; true when
   it cannot be read (nothing is waited for on a guess). */
bool nm_xfer_recorded(nm_t *nm, const lux_ref_t *id);

/* Statement i of the locator's on db_query's views (NULL past the last):
   for the tests of their query plans (t/6148). */
const char *nm_xfer_loc_sql(int i);

/* NODE_LOCATE (registered by nm_xfer_new). */
void nm_xfer_on_locate(nm_t *nm, nm_peer_msg_t *m);

#endif
