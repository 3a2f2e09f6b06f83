/* 6003-cluster-curve: every tcp endpoint of a running cluster (the chain
   master's ROUTER and PUB, the membership endpoint nodes beat to, and each
   replica's append, chain, read and pub endpoints) completes a CURVE
   handshake only with the cluster's key pair: a peer with another key
   pair, or with no key at all, is refused at the handshake (watched with
   ZeroMQ's socket monitor), and none of them listens on 0.0.0.0. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_master.h"
#include "exec/exec_members.h"
#include "net/net_ep.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { K_GOOD, K_OTHER, K_NONE };

/* 1: the handshake with ep succeeded; 0: it failed or did not happen
   within 3 s. */
static int
s_handshake(const char *ep, bool pub, net_sec_t *server, net_sec_t *client, int kind)
{
    static int n;
    char mon[64];
    zsock_t *s = zsock_new(pub ? ZMQ_SUB : ZMQ_DEALER);
    zsock_set_linger(s, 0);
    if (pub)
        zsock_set_subscribe(s, "");
    if (kind != K_NONE) {
        zsock_set_curve_serverkey(s, net_sec_public(server));
        zsock_set_curve_publickey(s, net_sec_public(client));
        zsock_set_curve_secretkey(s, net_sec_secret(client));
    }
    snprintf(mon, sizeof mon, "inproc://mon-%d", n++);
    zmq_socket_monitor(zsock_resolve(s), mon,
                       ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
    zsock_t *m = zsock_new(ZMQ_PAIR);
    zsock_connect(m, "%s", mon);
    zsock_connect(s, "%s", ep);
    if (!pub)
        zstr_send(s, "hello");
    int got = 0;
    int64_t end = util_mono_ms() + 3000;
    zpoller_t *p = zpoller_new(m, NULL);
    while (util_mono_ms() < end) {
        if (zpoller_wait(p, 100) != m)
            continue;
        zmsg_t *e = zmsg_recv(m);
        zframe_t *f = zmsg_first(e);
        uint16_t ev = 0;
        if (f && zframe_size(f) >= 2)
            memcpy(&ev, zframe_data(f), 2);
        zmsg_destroy(&e);
        if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            got = 1;
            break;
        }
        if (ev) /* a failure: the server may retry, the answer is no */
            break;
    }
    zpoller_destroy(&p);
    zmq_socket_monitor(zsock_resolve(s), NULL, 0);
    zsock_destroy(&m);
    zsock_destroy(&s);
    return got;
}

static void
s_check(const char *what, const char *ep, bool pub, net_sec_t *good, net_sec_t *other)
{
    ok(strstr(ep, "0.0.0.0") == NULL && strncmp(ep, "tcp://127.0.0.1:", 16) == 0,
       "%s listens on %s, not every interface", what, ep);
    is_int(s_handshake(ep, pub, good, good, K_GOOD), 1, "%s: the cluster's key gets through",
           what);
    is_int(s_handshake(ep, pub, good, other, K_OTHER), 0,
           "%s: another key pair is refused", what);
    is_int(s_handshake(ep, pub, good, NULL, K_NONE), 0, "%s: no key is refused", what);
}

int
main(void)
{
    db_cluster_t c;
    char extra[128], keys[600], ep[DB_EP_MAX], name[64];
    int port = 20000 + (int) (getpid() % 2000) * 7 + 3;
    snprintf(extra, sizeof extra, "--listen tcp://127.0.0.1 --port %d --workers 1 --store-mb 16",
             port);
    fx_start(&c, 2, 2, extra);
    snprintf(keys, sizeof keys, "%s/keys", c.dir);
    net_sec_t *good = net_sec_load(keys);
    snprintf(keys, sizeof keys, "%s/other-keys", tap_tmpdir());
    is_int(net_sec_create(keys), 0, "another key pair");
    net_sec_t *other = net_sec_load(keys);
    ok(good && other, "both key pairs load");

    s_check("the chain master", db_cluster_master_ep(&c, ep, sizeof ep), false, good, other);
    s_check("the chain master's PUB", db_cluster_master_pub(&c, ep, sizeof ep), true, good,
            other);
    s_check("the membership endpoint", db_cluster_members_ep(&c, false, ep, sizeof ep), false,
            good, other);
    fx_wait_chain(&c, 0, 2, 30000);
    fx_wait_chain(&c, 1, 2, 30000);
    db_status_t st;
    is_int(db_master_status(&c, good, &st, 5000), 0, "the master's status, with the key");
    static const char *kinds[DB_EP_N] = {"append", "chain", "read", "pub"};
    for (uint32_t i = 0; i < c.shards * c.replicas; i++)
        for (int k = 0; k < DB_EP_N; k++) {
            snprintf(name, sizeof name, "replica %u.%u's %s", i / c.replicas, i % c.replicas,
                     kinds[k]);
            s_check(name, st.beats[i].ep[k], k == DB_EP_PUB, good, other);
        }
    db_status_free(&st);
    net_sec_destroy(&good);
    net_sec_destroy(&other);
    fx_stop(&c);
    done_testing();
}
