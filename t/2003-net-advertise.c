/* 2003-net-advertise: the endpoint a tcp socket advertises is one peers
   can connect to: the host given, with the port actually bound; for a
   wildcard host (0.0.0.0, *, [::]) this machine's address instead, never
   the wildcard; for an interface name, its address.

   Nothing here connects to the machine's address: the wildcard bind only
   listens, and its advertised address is checked against the machine's
   interfaces. */
#include "tap.h"
#include "net/net_ep.h"
#include "util/util_err.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is text ("1.2.3.4" or "[::1]") an address of an interface that is up
   and not a loopback, or the loopback address when there is no such
   interface of that family? */
static bool
s_machine_addr(const char *text, int fam)
{
    struct ifaddrs *all, *i;
    bool found = false, others = false;
    char want[INET6_ADDRSTRLEN + 2];
    if (getifaddrs(&all) < 0)
        return false;
    for (i = all; i; i = i->ifa_next) {
        char t[INET6_ADDRSTRLEN];
        if (!i->ifa_addr || i->ifa_addr->sa_family != fam || !(i->ifa_flags & IFF_UP) ||
            (i->ifa_flags & IFF_LOOPBACK))
            continue;
        const void *a = fam == AF_INET
                            ? (const void *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr
                            : (const void *) &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
        if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *) a))
            continue;
        inet_ntop(fam, a, t, sizeof t);
        snprintf(want, sizeof want, fam == AF_INET6 ? "[%s]" : "%s", t);
        others = true;
        found = found || strcmp(want, text) == 0;
    }
    freeifaddrs(all);
    return others ? found : strcmp(text, fam == AF_INET ? "127.0.0.1" : "[::1]") == 0;
}

/* The host and port of a tcp endpoint. */
static bool
s_split(const char *ep, char *host, size_t n, int *port)
{
    const char *colon = strrchr(ep, ':');
    if (strncmp(ep, "tcp://", 6) != 0 || !colon || (size_t) (colon - ep - 6) >= n)
        return false;
    memcpy(host, ep + 6, (size_t) (colon - ep - 6));
    host[colon - ep - 6] = '\0';
    *port = atoi(colon + 1);
    return true;
}

int
main(void)
{
    char out[200], host[100], keys[600];
    int port = 0;

    is_int(net_advertise("tcp://127.0.0.1:*", "tcp://127.0.0.1:4444", out, sizeof out), 0,
           "a numeric host");
    is_str(out, "tcp://127.0.0.1:4444", "is advertised as given, with the port bound");
    net_advertise("tcp://localhost:*", "tcp://127.0.0.1:4444", out, sizeof out);
    is_str(out, "tcp://localhost:4444", "a host name is advertised as given, not as resolved");

    const char *wild[] = {"tcp://0.0.0.0:*", "tcp://*:*"};
    for (int k = 0; k < 2; k++) {
        int rc = net_advertise(wild[k], "tcp://0.0.0.0:4444", out, sizeof out);
        ok(rc == 0 && s_split(out, host, sizeof host, &port) && port == 4444 &&
               strcmp(host, "0.0.0.0") != 0 && s_machine_addr(host, AF_INET),
           "bound to %s, the machine's address is advertised: %s", wild[k], out);
    }
    int rc = net_advertise("tcp://[::]:*", "tcp://[::]:4444", out, sizeof out);
    ok(rc == 0 && s_split(out, host, sizeof host, &port) && port == 4444 &&
           strcmp(host, "[::]") != 0 && s_machine_addr(host, AF_INET6),
       "bound to [::], an IPv6 address of the machine is advertised: %s", out);
    net_advertise("tcp://lo:*", "tcp://127.0.0.1:4444", out, sizeof out);
    ok(strncmp(out, "tcp://127.", 10) == 0 && strstr(out, ":4444"),
       "bound to an interface (lo), its address is advertised: %s", out);
    is_int(net_advertise("tcp://nosuchif0:*", "tcp://1.2.3.4:5", out, sizeof out), 0,
           "a name that is no interface is taken for a host name");
    is_str(out, "tcp://nosuchif0:5", "and advertised as given");
    net_advertise("ipc:///tmp/x/y", "ipc:///tmp/x/y", out, sizeof out);
    is_str(out, "ipc:///tmp/x/y", "ipc endpoints are advertised as bound");

    /* a real socket bound to every interface (it only listens) */
    snprintf(keys, sizeof keys, "%s/keys", tap_tmpdir());
    net_sec_create(keys);
    net_sec_t *sec = net_sec_load(keys);
    zsock_t *s = net_bind(ZMQ_ROUTER, "tcp://0.0.0.0:*", sec, out, sizeof out);
    ok(s && s_split(out, host, sizeof host, &port) && port > 0 &&
           strcmp(host, "0.0.0.0") != 0 && s_machine_addr(host, AF_INET),
       "net_bind tcp://0.0.0.0:* reports %s", s ? out : lux_errmsg());
    zsock_destroy(&s);
    net_sec_destroy(&sec);
    return done_testing();
}
