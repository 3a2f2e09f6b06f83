/*  net_req - a request as a ROUTER socket receives it: the routing ID,
    the header frame and the body, with the header decoded. What every
    daemon's router handler began with by hand (receive, pop the frames,
    decode the header, complain of garbage, answer ERROR), written once.

        net_req_t r;
        if (net_req_recv(&r, sock, &self->complain, "master", shard, epoch) == 0) {
            switch (r.h.type) { ... }
        }
        net_req_done(&r);

    net_req_recv always leaves r ready for net_req_done, which destroys
    what the handler did not take (a handler may take r.rid or r.body and
    set the field to NULL).
*/
#ifndef NET_REQ_H_INCLUDED
#define NET_REQ_H_INCLUDED

#include "net_wire.h"
#include "../util/util_complain.h"

#include <czmq.h>

typedef struct {
    zmsg_t *msg;    /* the frames after the body, if any */
    zframe_t *rid;  /* the peer's routing ID */
    zframe_t *hf;   /* the header frame */
    zframe_t *body; /* the first body frame, or NULL */
    net_hdr_t h;    /* the decoded header (when net_req_recv gave 0) */
} net_req_t;

/* Receive one message from the ROUTER sock. 0 with r filled;
   LUX_EINTR when nothing could be read (interrupted); otherwise the
   header's error (LUX_EPROTO, LUX_ENOSYS): then the garbage was
   complained of through c as "WHERE: dropped a bad message: WHY" (where
   may be NULL) and answered by an ERROR naming shard and epoch. */
int net_req_recv(net_req_t *r, zsock_t *sock, util_complain_t *c, const char *where,
                 uint32_t shard, uint64_t epoch);

/* The same for a message received already (*msg_p taken), without the
   complaint and the ERROR: for a caller that answers through another
   path than the socket (db_replica's local links). 0, or the header's
   error with its message set. */
int net_req_take(net_req_t *r, zmsg_t **msg_p);

/* Answer an ERROR (code, text; req as net_error_req) to rid on the
   ROUTER sock; rid is borrowed. */
void net_req_refuse(zsock_t *sock, const zframe_t *rid, uint32_t shard, uint64_t epoch, int code,
                    uint64_t req, const char *text);

/* Destroy what r still holds. */
void net_req_done(net_req_t *r);

#endif
