/*  net_link - messages over a unix stream socket, between processes of
    one machine where a round trip's latency is what users wait for: a node
    manager and its clients (drivers and workers), and a log client and
    the head of a shard (the APPEND an actor call's result waits for).

    Why not ZeroMQ there (DESIGN section 12): ZeroMQ hands every message
    to an I/O thread on each side, and a round trip over ipc:// took 53-61
    us on the development machine against 15.6 us for a unix socket; a
    synchronous task makes two such round trips (node to worker and back),
    which were 65 of its 106 us. Anything that crosses machines stays on
    ZeroMQ, and so does the rest of the log's traffic.

    A message is a list of frames, held in a zmsg_t so that the code on
    either side does not care what carried it. On the wire:
        u32 size of what follows, then per frame: u32 length, bytes
    (little-endian). A message is at most NET_LINK_MAX bytes.

    Sending never blocks: what the socket does not take now waits in the
    link's queue, written when the socket is writable (net_link_write; a
    node manager polls for POLLOUT while net_link_pending). Receiving
    reads what the socket has and hands out complete messages.
    net_link_recv is the blocking form, for clients.

    Security: the socket lives in the cluster's private directory (mode
    0700), and net_link_accept refuses a peer of another user.
*/
#ifndef NET_LINK_H_INCLUDED
#define NET_LINK_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>
#include <sys/types.h>

#define NET_LINK_MAX ((size_t) 1 << 30)

typedef struct net_link net_link_t;

/* A listening socket at path (a stale socket file there is replaced): its
   fd, or a negative LUX_E* code with the message set. */
int net_link_listen(const char *path);
/* The path of the link beside ipc endpoint ep (its socket path with
   ".link" added, in the same private directory): 0, or LUX_EINVAL when ep
   is not ipc:// or the path is too long for a unix socket. */
int net_link_path(const char *ep, char *out, size_t n);
/* Accept one connection (non-blocking) into *out: 0; LUX_ETIMEDOUT when
   none is waiting; LUX_EAUTH (a peer of another user) or LUX_EIO. */
int net_link_accept(int listen_fd, net_link_t **out);
/* Connect to the node manager's socket at path; NULL with the message. */
net_link_t *net_link_connect(const char *path);
/* A link over fd (taken over: made non-blocking, closed by destroy). */
net_link_t *net_link_new(int fd);
void net_link_destroy(net_link_t **self_p);

int net_link_fd(net_link_t *self);
/* The peer's process ID, from the kernel (accepted links; 0 otherwise). */
pid_t net_link_peer_pid(net_link_t *self);
/* The peer hung up, or broke the framing: nothing more will come. */
bool net_link_dead(net_link_t *self);

/* Queue *msg_p (destroyed) and write what the socket takes now. 0, or
   LUX_EDEAD when the peer is gone (the message is dropped). */
int net_link_send(net_link_t *self, zmsg_t **msg_p);
/* While held, net_link_send only queues (and net_link_drain waits for
   nothing); the release writes the queue, so that messages sent together
   take one system call. 0, or LUX_EDEAD (at the release) when the peer
   is gone. */
int net_link_hold(net_link_t *self, bool hold);
/* Bytes queued and not yet written. */
bool net_link_pending(net_link_t *self);
/* Write queued bytes (when the socket is writable). 0 or LUX_EDEAD. */
int net_link_write(net_link_t *self);

/* Read what the socket holds now, without blocking. 0, or LUX_EDEAD when
   the peer hung up (complete messages already read are still handed out). */
int net_link_read(net_link_t *self);
/* The next complete message read, or NULL. */
zmsg_t *net_link_next(net_link_t *self);

/* Wait up to timeout_ms (-1: for ever) for a message, writing queued
   bytes meanwhile. NULL on timeout (LUX_ETIMEDOUT), when the peer is gone
   (LUX_EDEAD) or on a signal (LUX_EINTR), with the message set. */
zmsg_t *net_link_recv(net_link_t *self, int timeout_ms);
/* Write everything queued, waiting up to timeout_ms. 0 or a code. */
int net_link_drain(net_link_t *self, int timeout_ms);

#endif
