/*  net_ep - ZeroMQ endpoints made safe by default.

    ipc:// endpoints must live in a private directory (mode 0700, ours):
    binding elsewhere is refused. tcp:// endpoints always use CURVE with the
    cluster's key pair (created by `lux start --head`): a server accepts only
    clients that hold the cluster's key, through a ZAP handler (czmq's zauth)
    started once per process. Binding or connecting tcp without the key is
    refused. inproc:// needs neither.

    Every socket made here has a short linger (so a reply queued just before
    a socket closes is still sent) and is otherwise czmq's.
*/
#ifndef NET_EP_H_INCLUDED
#define NET_EP_H_INCLUDED

#include <czmq.h>

typedef struct net_sec_t net_sec_t;

/* Create a cluster key pair in keydir (made private):
   keydir/cluster.cert, keydir/cluster.cert_secret, keydir/allowed/.
   0, or LUX_EIO / LUX_EEXIST. */
int net_sec_create(const char *keydir);

/* Load the cluster key pair from keydir; NULL with a message when it is
   missing or unreadable. */
net_sec_t *net_sec_load(const char *keydir);
void net_sec_destroy(net_sec_t **self_p);

/* The cluster's public key (Z85, 40 characters). */
const char *net_sec_public(const net_sec_t *self);
/* Its secret key (Z85, 40 characters): for the token file a head writes
   for the machines that join it (never sent over a network by Lux). */
const char *net_sec_secret(const net_sec_t *self);

/* Make keydir (private) hold a cluster key pair given as Z85 text, as
   net_sec_create would have: how a joining node takes the keys of the
   token file. 0, or LUX_EINVAL (not a key pair) / LUX_EEXIST (keydir
   holds another pair) / LUX_EIO. */
int net_sec_import(const char *keydir, const char *public_z85, const char *secret_z85);

/* Bind a new socket of type (ZMQ_ROUTER...) to ep. The endpoint peers
   should connect to is written to bound (which may be NULL when not
   needed): see net_advertise. NULL with a message on failure. */
zsock_t *net_bind(int type, const char *ep, net_sec_t *sec, char *bound, size_t n);
/* The same with the high-water marks (messages; 0: none; -1: ZeroMQ's
   default) of the connections it accepts, which are fixed at bind time:
   net_hwm after net_bind does not change them. */
zsock_t *net_bind_hwm(int type, const char *ep, net_sec_t *sec, char *bound, size_t n,
                      int sndhwm, int rcvhwm);

/* The endpoint to advertise for a socket bound to `given` whose bound
   address ZeroMQ reports as `bound` (for "tcp://0.0.0.0:*", say,
   "tcp://0.0.0.0:41234"): for tcp, the host as given with the port
   actually bound, except that a wildcard host (*, 0.0.0.0, [::]) becomes
   this machine's address and an interface name that interface's address
   (net_host_address), since peers cannot connect to either. Other
   transports: bound as it is. 0, or LUX_EINVAL / LUX_ENOTFOUND. */
int net_advertise(const char *given, const char *bound, char *out, size_t n);

/* The address peers reach a listening host by: host itself, unless it is
   a wildcard (then the first address of an interface that is up and not
   a loopback, of the wildcard's family, or the loopback address when
   there is none) or an interface name (then its address). A machine with
   several such interfaces should be given the one to use. */
int net_host_address(const char *host, char *out, size_t n);

/* Connect a new socket of type to ep (CURVE client for tcp). An ipc
   endpoint bound by net_bind in this process is reached through its
   inproc:// twin instead (unless LUX_NO_INPROC is set: for comparisons). */
zsock_t *net_connect(int type, const char *ep, net_sec_t *sec);
/* A watch on the connection attempts of s (a socket net_connect made):
   a PAIR socket to poll beside s, NULL when it cannot be made (the
   message says why). Read it with net_watch_read: 1 when a connection
   was made, -1 when an attempt failed and will be retried (refused:
   nothing listens there), 0 for any other event. Destroy it before s. */
zsock_t *net_watch(zsock_t *s);
int net_watch_read(zsock_t *w);

/* Whether net_connect reaches ep through its inproc:// twin (bound in
   this process). */
bool net_is_local(const char *ep);
/* ep is no longer bound in this process (call before closing its socket). */
void net_forget(const char *ep);

/* Set send and receive high-water marks (messages; 0 = no limit). */
void net_hwm(zsock_t *s, int hwm);

#endif
