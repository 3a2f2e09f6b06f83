/* 2002-net-curve: tcp endpoints are CURVE-authenticated with the cluster's
   key: a client holding it talks; a client with another cluster's key, or
   none, gets nothing through; tcp without a key and ipc in a directory open
   to others are refused outright. */
#include "tap.h"
#include "net/net_ep.h"
#include "util/util_err.h"
#include "util/util_fs.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static bool
s_talks(zsock_t *server, zsock_t *client)
{
    zstr_send(client, "hello");
    zpoller_t *p = zpoller_new(server, NULL);
    bool got = zpoller_wait(p, 1000) == server;
    if (got) {
        zmsg_t *m = zmsg_recv(server);
        zmsg_destroy(&m);
    }
    zpoller_destroy(&p);
    return got;
}

int
main(void)
{
    char a[600], b[600], bound[200], ipcdir[600], ep[700];
    snprintf(a, sizeof a, "%s/keys-a", tap_tmpdir());
    snprintf(b, sizeof b, "%s/keys-b", tap_tmpdir());
    is_int(net_sec_create(a), 0, "make cluster A's key pair");
    is_int(net_sec_create(b), 0, "make cluster B's key pair");
    is_int(net_sec_create(a), LUX_EEXIST, "an existing key pair is never overwritten");
    struct stat st;
    stat(a, &st);
    ok((st.st_mode & 077) == 0, "the key directory is private (%o)", st.st_mode & 0777);
    net_sec_t *ka = net_sec_load(a), *kb = net_sec_load(b);
    ok(ka && kb, "load both");
    ok(strcmp(net_sec_public(ka), net_sec_public(kb)) != 0, "different keys");

    zsock_t *srv = net_bind(ZMQ_ROUTER, "tcp://127.0.0.1:*", ka, bound, sizeof bound);
    ok(srv != NULL, "bind tcp with cluster A's key: %s", bound);
    zsock_t *good = net_connect(ZMQ_DEALER, bound, ka);
    ok(s_talks(srv, good), "a client with cluster A's key gets through");
    zsock_t *other = net_connect(ZMQ_DEALER, bound, kb);
    ok(!s_talks(srv, other), "a client with cluster B's key does not");
    zsock_t *plain = zsock_new(ZMQ_DEALER);
    zsock_set_linger(plain, 0);
    zsock_connect(plain, "%s", bound);
    ok(!s_talks(srv, plain), "a client with no key at all does not");
    ok(s_talks(srv, good), "and the good client still does");

    ok(net_bind(ZMQ_ROUTER, "tcp://127.0.0.1:*", NULL, NULL, 0) == NULL &&
           strstr(lux_errmsg(), "CURVE"),
       "binding tcp without the key is refused: %s", lux_errmsg());
    ok(net_connect(ZMQ_DEALER, bound, NULL) == NULL, "connecting tcp without the key is refused");

    snprintf(ipcdir, sizeof ipcdir, "%s/open", tap_tmpdir());
    util_mkdirs(ipcdir, 0755);
    chmod(ipcdir, 0755);
    snprintf(ep, sizeof ep, "ipc://%s/sock", ipcdir);
    ok(net_bind(ZMQ_ROUTER, ep, NULL, NULL, 0) == NULL && strstr(lux_errmsg(), "0700"),
       "ipc in a directory open to others is refused: %s", lux_errmsg());
    chmod(ipcdir, 0700);
    zsock_t *ipc = net_bind(ZMQ_ROUTER, ep, NULL, NULL, 0);
    ok(ipc != NULL, "ipc in a private directory binds");

    zsock_destroy(&ipc);
    zsock_destroy(&plain);
    zsock_destroy(&other);
    zsock_destroy(&good);
    zsock_destroy(&srv);
    net_sec_destroy(&ka);
    net_sec_destroy(&kb);
    return done_testing();
}
