/*  net_ep - endpoints: private ipc directories and CURVE on tcp.

    Authentication model (DESIGN section 10): one key pair per cluster.
    Servers are CURVE servers with that pair; clients present the same pair
    and know the server key; zauth accepts a client only if its public key
    is in keydir/allowed/, which holds the cluster's public key alone. So a
    peer without the cluster's secret key cannot complete the handshake.
*/
#include "net_ep.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_log.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct net_sec_t {
    zcert_t *cert;        /* the cluster's key pair */
    char allow[PATH_MAX]; /* directory of allowed public certs */
    bool auth_ref;        /* holds a reference on the process's zauth */
};

/* One zauth per process, shared by every net_sec_t that bound tcp (ZAP is
   per context), destroyed with the last of them. */
static zactor_t *s_auth;
static int s_auth_refs;
static pthread_mutex_t s_auth_lock = PTHREAD_MUTEX_INITIALIZER;

/* Save cert (taken, NULL when it could not be made) as the cluster's key
   pair in keydir: the pair (secret 0600) and its public half under
   allowed/, the one key a peer must hold. */
static int
s_save(const char *keydir, zcert_t *cert)
{
    char path[PATH_MAX], allow[PATH_MAX];
    int rc;
    if (!cert)
        return util_err(LUX_ENOMEM, "cannot make a CURVE key pair");
    snprintf(allow, sizeof allow, "%s/allowed", keydir);
    if ((rc = util_private_dir(allow))) {
        zcert_destroy(&cert);
        return rc;
    }
    snprintf(path, sizeof path, "%s/cluster.cert", keydir);
    zcert_set_meta(cert, "role", "lux cluster");
    rc = zcert_save(cert, path);
    if (rc == 0) {
        snprintf(allow, sizeof allow, "%s/allowed/cluster.cert", keydir);
        rc = zcert_save_public(cert, allow);
    }
    zcert_destroy(&cert);
    if (rc != 0)
        return util_err(LUX_EIO, "%s: cannot save the cluster key", path);
    snprintf(path, sizeof path, "%s/cluster.cert_secret", keydir);
    chmod(path, 0600);
    return 0;
}

int
net_sec_create(const char *keydir)
{
    char path[PATH_MAX];
    int rc;
    if ((rc = util_private_dir(keydir)))
        return rc;
    snprintf(path, sizeof path, "%s/cluster.cert", keydir);
    if (util_exists(path))
        return util_err(LUX_EEXIST, "%s: a cluster key already exists", path);
    return s_save(keydir, zcert_new());
}

net_sec_t *
net_sec_load(const char *keydir)
{
    char path[PATH_MAX];
    net_sec_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    snprintf(path, sizeof path, "%s/cluster.cert", keydir);
    snprintf(self->allow, sizeof self->allow, "%s/allowed", keydir);
    self->cert = zcert_load(path);
    if (!self->cert || strcmp(zcert_secret_txt(self->cert),
                              "0000000000000000000000000000000000000000") == 0) {
        util_err(LUX_EAUTH, "%s: no cluster key pair (is this the cluster's directory?)", path);
        net_sec_destroy(&self);
        return NULL;
    }
    return self;
}

void
net_sec_destroy(net_sec_t **self_p)
{
    if (*self_p) {
        if ((*self_p)->auth_ref) {
            pthread_mutex_lock(&s_auth_lock);
            if (--s_auth_refs == 0)
                zactor_destroy(&s_auth);
            pthread_mutex_unlock(&s_auth_lock);
        }
        zcert_destroy(&(*self_p)->cert);
        free(*self_p);
        *self_p = NULL;
    }
}

const char *
net_sec_public(const net_sec_t *self)
{
    return zcert_public_txt(self->cert);
}

const char *
net_sec_secret(const net_sec_t *self)
{
    return zcert_secret_txt(self->cert);
}

int
net_sec_import(const char *keydir, const char *public_z85, const char *secret_z85)
{
    char path[PATH_MAX];
    uint8_t pub[32], sec[32], derived[32];
    int rc;
    if (!public_z85 || !secret_z85 || strlen(public_z85) != 40 || strlen(secret_z85) != 40 ||
        !zmq_z85_decode(pub, public_z85) || !zmq_z85_decode(sec, secret_z85))
        return util_err(LUX_EINVAL, "not a CURVE key pair (two 40-character Z85 keys)");
    /* the public key must be the secret's: a token edited by hand, or the
       halves of two clusters, would otherwise fail later and in silence */
    char derived_z85[41];
    if (zmq_curve_public(derived_z85, secret_z85) != 0 || !zmq_z85_decode(derived, derived_z85))
        return util_err(LUX_EINVAL, "the secret key is not a CURVE key");
    if (memcmp(derived, pub, 32) != 0)
        return util_err(LUX_EINVAL, "the public key is not the secret key's");
    if ((rc = util_private_dir(keydir)))
        return rc;
    snprintf(path, sizeof path, "%s/cluster.cert", keydir);
    if (util_exists(path)) {
        net_sec_t *old = net_sec_load(keydir);
        bool same = old && strcmp(net_sec_public(old), public_z85) == 0 &&
                    strcmp(net_sec_secret(old), secret_z85) == 0;
        net_sec_destroy(&old);
        return same ? 0
                    : util_err(LUX_EEXIST, "%s holds another cluster's key pair", keydir);
    }
    return s_save(keydir, zcert_new_from(pub, sec));
}

static int
s_auth_start(net_sec_t *sec)
{
    int rc = 0;
    pthread_mutex_lock(&s_auth_lock);
    if (!s_auth) {
        s_auth = zactor_new(zauth, NULL);
        if (!s_auth)
            rc = util_err(LUX_EIO, "cannot start the ZAP authenticator");
        else {
            zstr_sendx(s_auth, "CURVE", sec->allow, NULL);
            zsock_wait(s_auth);
        }
    }
    if (!rc && !sec->auth_ref) {
        sec->auth_ref = true;
        s_auth_refs++;
    }
    pthread_mutex_unlock(&s_auth_lock);
    return rc;
}

/* For ipc://path, check that path's directory is private to us. */
static int
s_ipc_check(const char *ep)
{
    char dir[PATH_MAX];
    struct stat st;
    snprintf(dir, sizeof dir, "%s", ep + 6);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) < 0)
        return util_err(LUX_EIO, "%s: socket directory %s is missing", ep, dir);
    if (st.st_uid != geteuid() || (st.st_mode & 077))
        return util_err(LUX_EAUTH, "%s: socket directory %s must be ours with mode 0700 (is %o)",
                        ep, dir, st.st_mode & 0777);
    return 0;
}

static zsock_t *
s_new(int type)
{
    zsock_t *s = zsock_new(type);
    if (s)
        zsock_set_linger(s, 200);
    else
        util_err(LUX_EIO, "cannot create a socket: %s", zmq_strerror(zmq_errno()));
    return s;
}

/* ipc endpoints bound in this process, each also bound as inproc://PATH:
   a client in the same process connects there, which skips ZeroMQ's I/O
   threads and the kernel (an embedded cluster's log is a thread of the
   driver's process: the acknowledgement an actor call waits for comes
   back sooner). */
#define S_LOCAL_MAX 256
static pthread_mutex_t s_local_lock = PTHREAD_MUTEX_INITIALIZER;
static char *s_local[S_LOCAL_MAX];

static bool
s_local_has(const char *ep)
{
    bool found = false;
    pthread_mutex_lock(&s_local_lock);
    for (int i = 0; i < S_LOCAL_MAX && !found; i++)
        found = s_local[i] && strcmp(s_local[i], ep) == 0;
    pthread_mutex_unlock(&s_local_lock);
    return found;
}

static void
s_local_add(const char *ep)
{
    pthread_mutex_lock(&s_local_lock);
    for (int i = 0; i < S_LOCAL_MAX; i++)
        if (!s_local[i]) {
            s_local[i] = strdup(ep);
            break;
        }
    pthread_mutex_unlock(&s_local_lock);
}

bool
net_is_local(const char *ep)
{
    return strncmp(ep, "ipc://", 6) == 0 && s_local_has(ep) && !getenv("LUX_NO_INPROC");
}

void
net_forget(const char *ep)
{
    pthread_mutex_lock(&s_local_lock);
    for (int i = 0; i < S_LOCAL_MAX; i++)
        if (s_local[i] && strcmp(s_local[i], ep) == 0) {
            free(s_local[i]);
            s_local[i] = NULL;
        }
    pthread_mutex_unlock(&s_local_lock);
}

zsock_t *
net_bind(int type, const char *ep, net_sec_t *sec, char *bound, size_t n)
{
    return net_bind_hwm(type, ep, sec, bound, n, -1, -1);
}

zsock_t *
net_bind_hwm(int type, const char *ep, net_sec_t *sec, char *bound, size_t n, int sndhwm,
             int rcvhwm)
{
    bool tcp = strncmp(ep, "tcp://", 6) == 0;
    zsock_t *s;
    if (tcp && !sec) {
        util_err(LUX_EAUTH, "%s: tcp endpoints need the cluster key (CURVE)", ep);
        return NULL;
    }
    if (strncmp(ep, "ipc://", 6) == 0 && s_ipc_check(ep))
        return NULL;
    if (tcp && s_auth_start(sec))
        return NULL;
    if (!(s = s_new(type)))
        return NULL;
    /* before binding: a connection accepted later takes the options the
       socket had when it was bound (net_hwm after net_bind changes only
       the connections the socket makes itself) */
    if (sndhwm >= 0)
        zsock_set_sndhwm(s, sndhwm);
    if (rcvhwm >= 0)
        zsock_set_rcvhwm(s, rcvhwm);
    if (tcp) {
        zsock_set_zap_domain(s, "lux");
        zcert_apply(sec->cert, s);
        zsock_set_curve_server(s, 1);
    }
    if (zsock_bind(s, "%s", ep) < 0) {
        util_err(LUX_EIO, "bind %s: %s", ep, zmq_strerror(zmq_errno()));
        zsock_destroy(&s);
        return NULL;
    }
    if (bound) {
        char *last = zsock_last_endpoint(s); /* ours to free */
        int rc = net_advertise(ep, last ? last : ep, bound, n);
        free(last);
        if (rc) {
            zsock_destroy(&s);
            return NULL;
        }
    }
    if (strncmp(ep, "ipc://", 6) == 0) {
        if (zsock_bind(s, "inproc://%s", ep + 6) == 0)
            s_local_add(ep);
        else /* a socket bound there before in this process: ipc only */
            net_forget(ep);
    }
    return s;
}

/* --- what to advertise ----------------------------------------------------------------- */

/* The first address of family fam on an interface that is up: the one
   named `name`, or (name NULL) any that is not a loopback. IPv6 in
   brackets. 0, or LUX_ENOTFOUND. */
static int
s_iface_addr(const char *name, int fam, char *out, size_t n)
{
    struct ifaddrs *all, *i;
    int rc = LUX_ENOTFOUND;
    if (getifaddrs(&all) < 0)
        return LUX_ENOTFOUND;
    for (i = all; i && rc; i = i->ifa_next) {
        char text[INET6_ADDRSTRLEN];
        if (!i->ifa_addr || i->ifa_addr->sa_family != fam || !(i->ifa_flags & IFF_UP))
            continue;
        if (name ? strcmp(i->ifa_name, name) != 0 : (i->ifa_flags & IFF_LOOPBACK) != 0)
            continue;
        const void *a = fam == AF_INET
                            ? (const void *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr
                            : (const void *) &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
        if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *) a))
            continue; /* needs a scope to be reached */
        if (!inet_ntop(fam, a, text, sizeof text))
            continue;
        snprintf(out, n, fam == AF_INET6 ? "[%s]" : "%s", text);
        rc = 0;
    }
    freeifaddrs(all);
    return rc;
}

int
net_host_address(const char *host, char *out, size_t n)
{
    bool v6 = strcmp(host, "[::]") == 0 || strcmp(host, "::") == 0 || strcmp(host, "[*]") == 0;
    int fam = v6 ? AF_INET6 : AF_INET;
    if (strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0 || v6) {
        if (s_iface_addr(NULL, fam, out, n) == 0)
            return 0;
        /* no other interface: only this machine can reach us anyway */
        snprintf(out, n, v6 ? "[::1]" : "127.0.0.1");
        return 0;
    }
    if (if_nametoindex(host) != 0) /* ZeroMQ binds "tcp://eth0:*" to eth0's address */
        return s_iface_addr(host, AF_INET, out, n) == 0 || s_iface_addr(host, AF_INET6, out, n) == 0
                   ? 0
                   : util_err(LUX_ENOTFOUND, "interface %s has no address to advertise", host);
    snprintf(out, n, "%s", host);
    return 0;
}

int
net_advertise(const char *given, const char *bound, char *out, size_t n)
{
    char host[256], addr[300];
    const char *colon, *port;
    if (strncmp(given, "tcp://", 6) != 0 || strncmp(bound, "tcp://", 6) != 0) {
        snprintf(out, n, "%s", bound);
        return 0;
    }
    colon = strrchr(given + 6, ':');
    port = strrchr(bound + 6, ':');
    if (!colon || !port || (size_t) (colon - (given + 6)) >= sizeof host)
        return util_err(LUX_EINVAL, "%s: not tcp://HOST:PORT", given);
    memcpy(host, given + 6, (size_t) (colon - (given + 6)));
    host[colon - (given + 6)] = '\0';
    if (net_host_address(host, addr, sizeof addr))
        return LUX_ENOTFOUND;
    if ((size_t) snprintf(out, n, "tcp://%s%s", addr, port) >= n)
        return util_err(LUX_EINVAL, "tcp://%s%s is longer than %zu bytes", addr, port, n - 1);
    return 0;
}

zsock_t *
net_connect(int type, const char *ep, net_sec_t *sec)
{
    bool tcp = strncmp(ep, "tcp://", 6) == 0;
    zsock_t *s;
    if (tcp && !sec) {
        util_err(LUX_EAUTH, "%s: tcp endpoints need the cluster key (CURVE)", ep);
        return NULL;
    }
    if (!(s = s_new(type)))
        return NULL;
    if (tcp) {
        zcert_apply(sec->cert, s);
        zsock_set_curve_serverkey(s, zcert_public_txt(sec->cert));
    }
    if (net_is_local(ep)) {
        if (zsock_connect(s, "inproc://%s", ep + 6) == 0)
            return s;
    }
    if (zsock_connect(s, "%s", ep) < 0) {
        util_err(LUX_EIO, "connect %s: %s", ep, zmq_strerror(zmq_errno()));
        zsock_destroy(&s);
        return NULL;
    }
    return s;
}

void
net_hwm(zsock_t *s, int hwm)
{
    zsock_set_sndhwm(s, hwm);
    zsock_set_rcvhwm(s, hwm);
}

zsock_t *
net_watch(zsock_t *s)
{
    static _Atomic unsigned n;
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://net-watch-%d-%u", (int) getpid(), n++);
    if (zmq_socket_monitor(zsock_resolve(s), ep,
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED) != 0) {
        util_err(LUX_EIO, "a watch on a socket: %s", zmq_strerror(zmq_errno()));
        return NULL;
    }
    zsock_t *w = zsock_new(ZMQ_PAIR);
    if (!w || zsock_connect(w, "%s", ep) < 0) {
        util_err(LUX_EIO, "a watch on a socket: %s", zmq_strerror(zmq_errno()));
        zsock_destroy(&w);
        zmq_socket_monitor(zsock_resolve(s), NULL, 0);
        return NULL;
    }
    return w;
}

int
net_watch_read(zsock_t *w)
{
    /* frame 1: the event (u16) and a value (u32); frame 2: the endpoint */
    zmsg_t *m = zmsg_recv(w);
    zframe_t *f = m ? zmsg_first(m) : NULL;
    int rc = 0;
    if (f && zframe_size(f) >= 2) {
        uint16_t ev;
        memcpy(&ev, zframe_data(f), sizeof ev); /* libzmq writes it in host order */
        rc = ev == ZMQ_EVENT_CONNECTED ? 1 : ev == ZMQ_EVENT_CONNECT_RETRIED ? -1 : 0;
    }
    zmsg_destroy(&m);
    return rc;
}
