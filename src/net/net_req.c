/*  net_req - a request received on a ROUTER socket (see net_req.h). */
#include "net_req.h"
#include "../util/util_err.h"

#include <stdio.h>

void
net_req_refuse(zsock_t *sock, const zframe_t *rid, uint32_t shard, uint64_t epoch, int code,
               uint64_t req, const char *text)
{
    zmsg_t *e = net_error_msg(shard, epoch, code, "%s", text);
    if (req)
        net_error_req(e, req);
    if (rid)
        zmsg_prepend(e, &(zframe_t *) {zframe_dup((zframe_t *) rid)});
    zmsg_send(&e, sock);
}

int
net_req_take(net_req_t *r, zmsg_t **msg_p)
{
    *r = (net_req_t) {0};
    if (!msg_p || !(r->msg = *msg_p))
        return util_err(LUX_EINTR, "no message");
    *msg_p = NULL;
    r->rid = zmsg_pop(r->msg);
    r->hf = zmsg_pop(r->msg);
    r->body = zmsg_pop(r->msg);
    return net_hdr_decode(&r->h, r->hf);
}

int
net_req_recv(net_req_t *r, zsock_t *sock, util_complain_t *c, const char *where, uint32_t shard,
             uint64_t epoch)
{
    zmsg_t *msg = zmsg_recv(sock);
    if (!msg) {
        *r = (net_req_t) {0};
        return LUX_EINTR;
    }
    int rc = net_req_take(r, &msg);
    if (rc) {
        char text[256];
        snprintf(text, sizeof text, "%s", lux_errmsg());
        util_complain(c, "%s%sdropped a bad message: %s", where ? where : "", where ? ": " : "",
                      text);
        if (r->rid)
            net_req_refuse(sock, r->rid, shard, epoch, rc, 0, text);
    }
    return rc;
}

void
net_req_done(net_req_t *r)
{
    zframe_destroy(&r->rid);
    zframe_destroy(&r->hf);
    zframe_destroy(&r->body);
    zmsg_destroy(&r->msg);
}
