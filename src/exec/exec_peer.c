/*  exec_peer - the node manager's tcp endpoint and its connections to the
    other nodes' (see exec_peer.h). Nothing here knows what the messages
    mean: each goes to the handler its part registered for its type.
*/
#include "exec_peer.h"
#include "../net/net_ep.h"
#include "../net/net_wire.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_OUT_MAX 32       /* peers this node has DEALERs to at once */
#define S_READ_MAX 256     /* messages read from one socket per turn: the others get theirs */
#define S_IDLE_CLOSE_MS 60000 /* a DEALER unused this long is closed */

typedef struct {
    char ep[DB_EP_MAX];
    zsock_t *dealer;
    int64_t used_ms;
} s_out_t;

struct nm_peer {
    nm_t *nm;                /* the node it belongs to */
    net_sec_t *sec;
    zsock_t *router;
    char ep[DB_EP_MAX];      /* what other nodes connect to */
    int port;
    nm_peer_fn *fn[256];
    s_out_t out[S_OUT_MAX];
    int nout;
};

bool
nm_peer_up(nm_t *nm)
{
    return nm->peer && nm->peer->router;
}

const char *
nm_peer_endpoint(nm_t *nm)
{
    return nm_peer_up(nm) ? nm->peer->ep : "";
}

int
nm_peer_port(nm_t *nm)
{
    return nm_peer_up(nm) ? nm->peer->port : 0;
}

bool
nm_peer_is_head(nm_t *nm)
{
    return !nm->cluster.node;
}

char *
nm_peer_head_ep(nm_t *nm, char *out, size_t n)
{
    if (!db_cluster_head_node_ep(&nm->cluster, out, n))
        snprintf(out, n, "%s", "");
    return out;
}

bool
nm_peer_wanted(nm_t *nm)
{
    return db_cluster_tcp(&nm->cluster) && nm->address[0] && strcmp(nm->address, "local") != 0;
}

nm_peer_t *
nm_peer_new(nm_t *nm)
{
    char keys[PATH_MAX + 32], bind[DB_EP_MAX];
    nm_peer_t *p = calloc(1, sizeof *p);
    if (!p) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    p->nm = nm;
    /* the head binds the host it was told to listen on (a wildcard only
       when it was told so); a node its own address */
    const char *host = nm_peer_is_head(nm) ? nm->cluster.listen + 6 : nm->address;
    db_cluster_node_ep(&nm->cluster, host, bind, sizeof bind);
    db_cluster_node_ep(&nm->cluster, nm->address, p->ep, sizeof p->ep);
    p->port = nm->cluster.master_port + DB_NODE_PORT_OFFSET;
    if (!(p->sec = net_sec_load(db_cluster_path(&nm->cluster, keys, sizeof keys, "keys")))) {
        util_err_ctx(LUX_EAUTH, "the node's endpoint");
        nm_peer_destroy(&p);
        return NULL;
    }
    /* no high-water mark on what it sends: an answer is never dropped
       (a puller asks for a bounded number of chunks at a time) */
    if (!(p->router = net_bind_hwm(ZMQ_ROUTER, bind, p->sec, NULL, 0, 0, -1))) {
        util_err_ctx(LUX_EIO, "the node's endpoint (port %d = --port + %d; every "
                     "node takes it on its own address)", p->port, DB_NODE_PORT_OFFSET);
        nm_peer_destroy(&p);
        return NULL;
    }
    zsock_set_router_mandatory(p->router, 1); /* an answer to a gone peer fails, not blocks */
    log_info("node endpoint at %s", p->ep);
    return p;
}

void
nm_peer_destroy(nm_peer_t **self_p)
{
    nm_peer_t *p = *self_p;
    if (!p)
        return;
    for (int i = 0; i < p->nout; i++)
        zsock_destroy(&p->out[i].dealer);
    zsock_destroy(&p->router);
    net_sec_destroy(&p->sec);
    free(p);
    *self_p = NULL;
}

int
nm_peer_on(nm_t *nm, int type, nm_peer_fn *fn)
{
    if (!nm->peer || type <= 0 || type > 255 || (nm->peer->fn[type] && fn))
        return util_err(LUX_EINVAL, "node endpoint: type %d cannot take a handler", type);
    nm->peer->fn[type] = fn;
    return 0;
}

static s_out_t *
s_out(nm_t *nm, const char *ep)
{
    struct nm_peer *p = nm->peer;
    for (int i = 0; i < p->nout; i++)
        if (strcmp(p->out[i].ep, ep) == 0)
            return &p->out[i];
    if (p->nout == S_OUT_MAX) { /* close the one unused longest */
        int old = 0;
        for (int i = 1; i < p->nout; i++)
            if (p->out[i].used_ms < p->out[old].used_ms)
                old = i;
        zsock_destroy(&p->out[old].dealer);
        p->out[old] = p->out[--p->nout];
    }
    s_out_t *o = &p->out[p->nout];
    if (!(o->dealer = net_connect(ZMQ_DEALER, ep, p->sec)))
        return NULL;
    zsock_set_linger(o->dealer, 0);
    zsock_set_sndhwm(o->dealer, 0);
    snprintf(o->ep, sizeof o->ep, "%s", ep);
    p->nout++;
    return o;
}

int
nm_peer_send(nm_t *nm, const char *ep, int type, zmsg_t **body)
{
    zmsg_t *m = body && *body ? *body : zmsg_new();
    if (body)
        *body = NULL;
    s_out_t *o = nm_peer_up(nm) ? s_out(nm, ep) : NULL;
    if (!o) {
        zmsg_destroy(&m);
        return nm_peer_up(nm) ? util_err_ctx(LUX_EIO, "connecting to node %s", ep)
                              : util_err(LUX_EINVAL, "this node has no tcp endpoint (an ipc "
                                         "cluster) to reach %s from", ep);
    }
    o->used_ms = util_mono_ms();
    zmsg_prepend(m, &(zframe_t *) {net_hdr_frame(type, NET_NO_SHARD, 0)});
    if (zmsg_send(&m, o->dealer) != 0) {
        zmsg_destroy(&m);
        return util_err(LUX_EIO, "sending %s to node %s: %s", net_type_name(type), ep,
                        zmq_strerror(zmq_errno()));
    }
    return 0;
}

void
nm_peer_forget(nm_t *nm, const char *ep)
{
    struct nm_peer *p = nm->peer;
    if (!nm_peer_up(nm) || !ep || !*ep)
        return;
    for (int i = 0; i < p->nout; i++)
        if (strcmp(p->out[i].ep, ep) == 0) {
            zsock_destroy(&p->out[i].dealer); /* linger 0: its queue goes with it */
            p->out[i] = p->out[--p->nout];
            log_info("node %s is dead: what was queued for it is dropped", ep);
            return;
        }
}

bool
nm_peer_body(nm_t *nm, const nm_peer_msg_t *m, util_rd_t *r)
{
    zframe_t *f = zmsg_first(m->msg);
    if (!f) {
        util_complain(&nm->complain, "node: dropped a bad message: %s without a body%s%s",
                      net_type_name(m->type), m->ep ? " from " : "", m->ep ? m->ep : "");
        return false;
    }
    util_rd_init(r, zframe_data(f), zframe_size(f));
    return true;
}

void
nm_peer_reply(nm_t *nm, const nm_peer_msg_t *m, int type, zmsg_t **body)
{
    zmsg_t *r = body && *body ? *body : zmsg_new();
    if (body)
        *body = NULL;
    if (!nm_peer_up(nm) || !m->rid) {
        zmsg_destroy(&r);
        return;
    }
    zmsg_prepend(r, &(zframe_t *) {net_hdr_frame(type, NET_NO_SHARD, 0)});
    zmsg_prepend(r, &(zframe_t *) {zframe_dup(m->rid)});
    if (zmsg_send(&r, nm->peer->router) != 0) /* the peer went (router_mandatory) */
        zmsg_destroy(&r);
}

size_t
nm_peer_items(nm_t *nm, zmq_pollitem_t *items, size_t max)
{
    struct nm_peer *p = nm->peer;
    size_t k = 0;
    if (!nm_peer_up(nm) || max == 0)
        return 0;
    items[k++] = (zmq_pollitem_t) {zsock_resolve(p->router), 0, ZMQ_POLLIN, 0};
    for (int i = 0; i < p->nout && k < max; i++)
        items[k++] = (zmq_pollitem_t) {zsock_resolve(p->out[i].dealer), 0, ZMQ_POLLIN, 0};
    return k;
}

/* Hand one message (the header first) to its handler. */
static void
s_dispatch(nm_t *nm, zsock_t *from, zframe_t *rid, const char *ep, zmsg_t *msg)
{
    net_hdr_t h;
    zframe_t *hf = zmsg_pop(msg);
    int rc = hf ? net_hdr_decode(&h, hf) : util_err(LUX_EPROTO, "a message without a header");
    zframe_destroy(&hf);
    nm_peer_fn *fn = rc ? NULL : nm->peer->fn[h.type];
    if (!fn) {
        if (!rc)
            util_err(LUX_EPROTO, "message type %s (%d) is not taken at a node's endpoint",
                     net_type_name(h.type), h.type);
        nm_complain(nm, lux_errmsg());
        if (rid) { /* a request: the asker learns why */
            zmsg_t *e = net_error_msg(NET_NO_SHARD, 0, LUX_EPROTO, "%s", lux_errmsg());
            zmsg_prepend(e, &(zframe_t *) {zframe_dup(rid)});
            if (zmsg_send(&e, from) != 0)
                zmsg_destroy(&e);
        }
        return;
    }
    nm_peer_msg_t m = {.type = h.type, .rid = rid, .ep = ep, .msg = msg};
    fn(nm, &m);
}

static void
s_read(nm_t *nm, zsock_t *s, bool router, const char *ep)
{
    for (int i = 0; i < S_READ_MAX && (zsock_events(s) & ZMQ_POLLIN); i++) {
        zmsg_t *msg = zmsg_recv_nowait(s);
        if (!msg)
            break;
        zframe_t *rid = router ? zmsg_pop(msg) : NULL;
        s_dispatch(nm, s, rid, ep, msg);
        zframe_destroy(&rid);
        zmsg_destroy(&msg);
        if (!nm->peer)
            return;
    }
}

void
nm_peer_fired(nm_t *nm, const zmq_pollitem_t *items, size_t n)
{
    struct nm_peer *p = nm->peer;
    if (!nm_peer_up(nm) || n == 0)
        return;
    if (items[0].revents & ZMQ_POLLIN)
        s_read(nm, p->router, true, p->ep);
    /* the DEALERs as they were when items was made: match by socket, a
       handler may have added or closed some */
    for (size_t k = 1; k < n; k++) {
        if (!(items[k].revents & ZMQ_POLLIN))
            continue;
        for (int i = 0; i < p->nout; i++)
            if (zsock_resolve(p->out[i].dealer) == items[k].socket) {
                char ep[DB_EP_MAX];
                snprintf(ep, sizeof ep, "%s", p->out[i].ep);
                p->out[i].used_ms = util_mono_ms();
                s_read(nm, p->out[i].dealer, false, ep);
                break;
            }
    }
}

void
nm_peer_tick(nm_t *nm)
{
    struct nm_peer *p = nm->peer;
    if (!nm_peer_up(nm))
        return;
    int64_t now = util_mono_ms();
    for (int i = 0; i < p->nout;) {
        if (now - p->out[i].used_ms > S_IDLE_CLOSE_MS) {
            zsock_destroy(&p->out[i].dealer);
            p->out[i] = p->out[--p->nout];
        } else {
            i++;
        }
    }
}
