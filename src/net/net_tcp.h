/*  net_tcp - plain TCP sockets, non-blocking, for the paths that do not go
    through ZeroMQ (the bulk port of src/exec/exec_bulk.c, doc/DESIGN.md
    7.3): a listening socket, a connection made from a given local
    address, and a peer's printable name.
*/
#ifndef NET_TCP_H_INCLUDED
#define NET_TCP_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* A non-blocking socket bound to host:port (SO_REUSEADDR), listening
   unless listening is false (bound only: connections to it are refused).
   Its descriptor, or -1 with the message naming host:port and why. */
int net_tcp_listen(const char *host, int port, bool listening);

/* A non-blocking connection to host:port with TCP_NODELAY, from the local
   address local when it is not NULL (a bind that fails leaves the choice
   to the route). Its descriptor, or -1 with the message when no socket
   can be made; *err is then 0, or 0 with the connection on its way, or
   the errno of a connect that failed at once (the descriptor is still
   returned, for the caller to report later). */
int net_tcp_dial(const char *host, int port, const char *local, int *err);

/* "IP:PORT" of sa into out. */
void net_tcp_name(const struct sockaddr_storage *sa, char *out, size_t n);

#endif
