/* 6010-xfer-endpoint: every node manager of a tcp cluster listens for the
   other nodes on its own address at --port + 3 (exec_peer.h): the head's
   and a joined node's. Each completes a CURVE handshake only with the
   cluster's key pair; its port is in the `nodes` view, beside the
   address, so other nodes find it; a message of a type no part takes is
   answered with an ERROR and the endpoint goes on serving. */
#include "tap.h"
#include "lib/fx.h"
#include "net/net_ep.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void
s_check(const char *what, const char *ep, const char *host, net_sec_t *good, net_sec_t *other)
{
    char want[64];
    snprintf(want, sizeof want, "tcp://%s:", host);
    ok(strncmp(ep, want, strlen(want)) == 0, "%s listens on %s, its own address", what, ep);
    is_int(fx_curve_handshake(ep, false, good, good), 1, "%s: the cluster's key gets through",
           what);
    is_int(fx_curve_handshake(ep, false, good, other), 0, "%s: another key pair is refused",
           what);
    is_int(fx_curve_handshake(ep, false, good, NULL), 0, "%s: no key is refused", what);
}

/* Send a message of type (no body) to ep with the cluster's key and wait
   for the answer's type (0: none within 10 s). */
static int
s_ask(const char *ep, net_sec_t *sec, int type, char *text, size_t n)
{
    zsock_t *d = net_connect(ZMQ_DEALER, ep, sec);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(type, NET_NO_SHARD, 0)});
    zmsg_send(&m, d);
    zpoller_t *p = zpoller_new(d, NULL);
    int got = 0;
    text[0] = '\0';
    if (zpoller_wait(p, 10000) == d) {
        zmsg_t *r = zmsg_recv(d);
        net_hdr_t h;
        zframe_t *hf = r ? zmsg_pop(r) : NULL, *body = r ? zmsg_first(r) : NULL;
        if (hf && net_hdr_decode(&h, hf) == 0)
            got = h.type;
        if (body && zframe_size(body) > 4)
            snprintf(text, n, "%.*s", (int) zframe_size(body) - 4,
                     (const char *) zframe_data(body) + 4);
        zframe_destroy(&hf);
        zmsg_destroy(&r);
    }
    zpoller_destroy(&p);
    zsock_destroy(&d);
    return got;
}

int
main(void)
{
    db_cluster_t c;
    char ep[DB_EP_MAX], nep[DB_EP_MAX], out[4096], err[4096], text[600];
    int port;
    net_sec_t *good, *other;
    fx_start_tcp(&c, 1, 1, 2, &port, &good, &other);

    /* a node on 127.0.0.2 */
    char ndir[600];
    snprintf(ndir, sizeof ndir, "%s/n1", tap_tmpdir());
    int rc = fx_lux(out, sizeof out, err, sizeof err,
                    "start --address 127.0.0.1:%d --dir %s --token-file %s/token "
                    "--node-ip 127.0.0.2 --workers 1 --store-mb 16",
                    port, ndir, c.dir);
    if (!is_int(rc, 0, "a node joins on 127.0.0.2"))
        diag("%s", err);

    s_check("the head's node manager", db_cluster_head_node_ep(&c, ep, sizeof ep), "127.0.0.1",
            good, other);
    db_cluster_node_ep(&c, "127.0.0.2", nep, sizeof nep);
    s_check("the joined node's manager", nep, "127.0.0.2", good, other);

    /* where others find them: the nodes view */
    db_query_t *q = fx_query_open(c.dir);
    int64_t end = util_mono_ms() + 30000, n = 0;
    while (util_mono_ms() < end &&
           (n = fx_count(q, "SELECT count(*) FROM nodes WHERE port = %d AND state = 'alive' AND "
                         "address IN ('127.0.0.1', '127.0.0.2')",
                         port + 3)) < 2) {
        db_query_close(&q);
        usleep(200000);
        q = fx_query_open(c.dir);
    }
    is_int(n, 2, "the nodes view gives both nodes' port (%d)", port + 3);
    db_query_close(&q);

    /* a type nobody takes (one past the last: 60 was, until modules were
       fetched by hash): an ERROR, and the endpoint still answers */
    is_int(s_ask(nep, good, NET_TYPE_MAX, text, sizeof text), NET_ERROR,
           "a message of a type no part takes is answered with an ERROR");
    ok(strstr(text, "not taken") || strstr(text, "unknown message type"),
       "which says why: %s", text);
    is_int(s_ask(nep, good, NET_PING, text, sizeof text), NET_ERROR,
           "and the endpoint goes on serving");

    is_int(fx_lux(NULL, 0, err, sizeof err, "stop --dir %s", ndir), 0, "the node stops");
    net_sec_destroy(&good);
    net_sec_destroy(&other);
    fx_stop(&c);
    done_testing();
}
