/* 6003-cluster-curve: every tcp endpoint of a running cluster (the chain
   master's ROUTER and PUB, the membership endpoint nodes beat to, and each
   replica's append, chain, read and pub endpoints, the head's node
   manager's endpoint for other nodes) completes a CURVE
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

static void
s_check(const char *what, const char *ep, bool pub, net_sec_t *good, net_sec_t *other)
{
    ok(strstr(ep, "0.0.0.0") == NULL && strncmp(ep, "tcp://127.0.0.1:", 16) == 0,
       "%s listens on %s, not every interface", what, ep);
    is_int(fx_curve_handshake(ep, pub, good, good), 1, "%s: the cluster's key gets through",
           what);
    is_int(fx_curve_handshake(ep, pub, good, other), 0,
           "%s: another key pair is refused", what);
    is_int(fx_curve_handshake(ep, pub, good, NULL), 0, "%s: no key is refused", what);
}

int
main(void)
{
    db_cluster_t c;
    char ep[DB_EP_MAX], name[64];
    int port;
    net_sec_t *good, *other;
    fx_start_tcp(&c, 2, 2, 3, &port, &good, &other);

    s_check("the chain master", db_cluster_master_ep(&c, ep, sizeof ep), false, good, other);
    s_check("the chain master's PUB", db_cluster_master_pub(&c, ep, sizeof ep), true, good,
            other);
    s_check("the membership endpoint", db_cluster_members_ep(&c, false, ep, sizeof ep), false,
            good, other);
    s_check("the head's node manager's endpoint", db_cluster_head_node_ep(&c, ep, sizeof ep),
            false, good, other);
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
