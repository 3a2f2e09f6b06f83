/*  exec_xfer_src - the source's side of a pull (exec_xfer_src.c: OPEN
    pins an object, CHUNK reads it, CLOSE or silence unpins it, the bulk
    port's requests are served from the same table), and the state that
    the puller's side (exec_xfer.c, above it) and the head's locator
    (exec_xfer_loc.h) share with it: the limits, the opened objects,
    struct nm_xfer. For those files alone.
*/
#ifndef LUX_EXEC_XFER_SRC_H
#define LUX_EXEC_XFER_SRC_H

#include "exec_bulk.h"
#include "exec_peer.h"
#include "../db/db_query.h"
#include "../util/util_buf.h"
#include "../util/util_hash.h"

#include <sodium.h>

#define XFER_ACTIVE_MAX 4          /* pulls moving chunks at once */
#define XFER_SRC_MAX 8             /* sources tried per pull */
#define S_CHUNK_DEFAULT (1u << 20) /* bytes per chunk (LUX_XFER_CHUNK) */
#define S_WINDOW_DEFAULT 8         /* chunks in flight per pull (LUX_XFER_WINDOW) */
#define S_TIMEOUT_DEFAULT 10000    /* ms without an answer from a source (LUX_XFER_TIMEOUT_MS) */
#define S_LOCATE_MS 2000           /* how long a location the log lacks is asked again */
#define S_MAKING_MS 600000         /* how long in all a puller waits while the head makes an
                                      object again (LUX_XFER_MAKING_MS) */
#define S_UNRECORDED_MS 60000      /* how long a pull waits for the log to record an object it
                                      has no event of at all (LUX_XFER_UNRECORDED_MS) */
#define S_OPEN_IDLE_MS 30000       /* a source unpins an object nobody read for this long
                                      (LUX_XFER_OPEN_IDLE_MS) */
#define S_FELL_MAX 32              /* source nodes remembered as reached over CURVE only */
#define S_FELL_MS 60000            /* a bulk port that could not be reached is not asked again for this long */

enum { OP_OPEN = 1, OP_CHUNK = 2, OP_CLOSE = 3 };
/* OPEN's flags: the puller takes the bulk path; has AES-NI; allows
   integrity only (GMAC: LUX_BULK_CIPHER=gmac, DESIGN 7.3 and 10) */
enum { XF_BULK = 1, XF_AES = 2, XF_GMAC = 4 };
/* Why a source does not hold an object it was asked to OPEN: the u8
   after the text of its ENOTFOUND (absent from older sources: 0). */
enum {
    XF_GONE_LOST = 1,    /* not here, and not being made here: freed, never here */
    XF_GONE_EVICTED = 2, /* dropped to make room, and not being made again here */
    XF_GONE_PENDING = 3, /* its task is running here again: ready when it ends */
    XF_GONE_ERROR = 4    /* its task failed */
};
/* An object this node serves to a puller (between OPEN and CLOSE). */
typedef struct s_open {
    lux_ref_t id;
    uint64_t token;          /* the puller's; 0: a hold for an asker (nm_xfer_src_hold) */
    int64_t last_ms;
    bool offered, served;    /* a bulk key was handed out; a connection took it */
    exec_bulk_key_t key;
    struct s_open *next;
} s_open_t;

/* A source node whose bulk port was not used: logged once; not asked
   for it again until until_ms when it could not be reached. */
typedef struct {
    char ep[DB_EP_MAX];
    int64_t until_ms;
} s_fell_t;

#define XFER_WHO_KEEP 16

struct nm_xfer {
    nm_t *nm;                /* the node it belongs to */
    struct s_pull *pulls;     /* the puller's (exec_xfer.c) */
    s_open_t *opens;
    uint64_t next_token;
    uint32_t chunk;
    int window;
    int64_t timeout_ms;
    int64_t open_idle_ms;    /* S_OPEN_IDLE_MS */
    int64_t locate_ms;       /* S_LOCATE_MS (LUX_XFER_LOCATE_MS) */
    int64_t making_ms;       /* S_MAKING_MS (LUX_XFER_MAKING_MS) */
    int64_t unrecorded_ms;   /* S_UNRECORDED_MS (LUX_XFER_UNRECORDED_MS) */
    char *drop_file;         /* LUX_TEST_PULL_DROP: a pulled copy goes before its
                                requesters are told, once, when this file exists */
    char *remake_file;       /* LUX_TEST_PULL_REMAKE: the head evicts an object it is
                                asked where it lives, and makes it again, once, when
                                this file exists */
    char *evict_file;        /* LUX_TEST_LOCATE_EVICT: the head evicts an object it has
                                just said it holds, while this file exists */
    db_query_t *q;           /* the head: the log, for NODE_LOCATE */
    util_buf_t buf;
    uint8_t *zbuf;           /* scratch for a compressed chunk */
    size_t zcap;
    uint64_t n_done, n_failed, bytes, n_lz4;
    exec_bulk_t *bulk;       /* the bulk path (NULL: LUX_XFER_BULK=0) */
    bool gmac;               /* LUX_BULK_CIPHER=gmac and this build can: integrity only
                                when the other end allows it too */
    s_fell_t fell[S_FELL_MAX];
    int nfell;
    struct {                 /* the head: creators found by a scan (exec_xfer_who.c) */
        uint8_t scope[8];
        util_id_t job, task;
        bool used;
    } who[XFER_WHO_KEEP];
    int who_next;
};

static inline char *
xfer_hex(const lux_ref_t *id, char out[2 * LUX_REF_LEN + 1])
{
    util_hex(out, id->b, LUX_REF_LEN);
    return out;
}

/* --- the source (exec_xfer_src.c) --- */

/* NODE_PULL (registered by nm_xfer_new). */
void nm_xfer_src_on_pull(nm_t *nm, nm_peer_msg_t *m);
/* The head's node has answered a NODE_LOCATE with itself first: its copy
   of id, READY, is pinned for the asker's OPEN (an entry of the opened
   objects with token 0, one an answer), let go by an OPEN of id (one
   entry each) or after LUX_XFER_TIMEOUT_MS. */
void nm_xfer_src_hold(nm_t *nm, const lux_ref_t *id);
/* Let the object served at *q go (unpinned, its bulk key dropped) and
   unlink it. */
void nm_xfer_src_close(nm_t *nm, s_open_t **q);
/* exec_bulk's serve, sent and over callbacks (arg: the node); over
   closes the transfer's OPEN at once (unpins the object). */
int nm_xfer_src_bulk_serve(void *arg, uint64_t xid, const uint8_t id[LUX_REF_LEN],
                           exec_bulk_key_t *key, const uint8_t **bytes, uint64_t *size);
void nm_xfer_src_bulk_sent(void *arg, uint64_t xid);
void nm_xfer_src_bulk_over(void *arg, uint64_t xid);

#endif
