/*  net_raw - ZeroMQ sockets polled by their descriptor.

    WHY. A loop that polls a ZeroMQ socket as a socket (zmq_poll, zloop)
    asks ZeroMQ for its events (a poll and a getpid) once or twice a turn,
    whatever happened: under one actor called at a time that was most of a
    replica's system calls, and checking the node manager's pipe on every
    turn cost it two system calls a turn. ZeroMQ makes a socket's
    descriptor (ZMQ_FD) readable when the socket's state changes, so a
    loop may poll that descriptor instead, read the socket's events only
    then, and handle each message until none is left.

    THE CATCH. The descriptor is edge-triggered: a notice taken by anyone
    (a send on the socket, an events check) is not given again. So a set
    keeps a "dirty" mark per socket: a new socket is dirty (what came
    before it was polled gave no notice), a send marks its socket dirty
    (net_raw_touch), and the loop, after each of its handlers, drains the
    dirty ones (net_raw_settle). A loop with a heartbeat marks them all on
    each beat (net_raw_touch_all), so that a notice missed by a mistake
    costs a beat's delay, not a hang.

    USE. With a zloop (net_raw_new(loop, arg)), the set registers each
    socket's descriptor with the loop itself, and a handler's -1 ends the
    loop as a zloop reader's would. Without one (net_raw_new(NULL, arg)),
    the caller polls net_raw_fd(r) itself, calls net_raw_fired(fd) when it
    fires, and net_raw_settle while net_raw_dirty. Handlers are zloop
    readers: fn(loop, sock, arg) handles ONE message, -1 to stop.
*/
#ifndef NET_RAW_H_INCLUDED
#define NET_RAW_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>

#define NET_RAW_MAX 8 /* sockets in one set */

typedef struct net_raw_t net_raw_t;

/* A set whose handlers get arg; loop may be NULL (the caller polls).
   NULL when out of memory. */
net_raw_t *net_raw_new(zloop_t *loop, void *arg);
void net_raw_destroy(net_raw_t **self_p);

/* Add sock, handled by fn, polled at once and dirty: its slot (0, 1...),
   or LUX_ENOMEM (the set is full, or the loop refused it; logged). */
int net_raw_add(net_raw_t *self, zsock_t *sock, zloop_reader_fn *fn);

/* Poll slot r or stop polling it (with a zloop: its poller comes and
   goes). Turned on, it is dirty. */
void net_raw_on(net_raw_t *self, int r, bool on);

/* The descriptor of slot r, to poll for POLLIN. */
int net_raw_fd(const net_raw_t *self, int r);

/* sock may have taken a notice (a send on it): read its events at the
   next settle. A socket not in the set is ignored. */
void net_raw_touch(net_raw_t *self, zsock_t *sock);
/* Every socket, as a heartbeat does. */
void net_raw_touch_all(net_raw_t *self);
/* Some socket is dirty: a loop polling itself should not sleep. */
bool net_raw_dirty(const net_raw_t *self);

/* Handle slot r's messages until its events say none is left: 0, or -1
   when a handler said stop. */
int net_raw_drain(net_raw_t *self, int r);
/* Drain the dirty sockets, again while handlers dirty others (up to 64
   rounds, the next settle goes on): 0 or -1. */
int net_raw_settle(net_raw_t *self);
/* The descriptor fd fired: drain its socket, then settle. 0 or -1. */
int net_raw_fired(net_raw_t *self, int fd);

#endif
