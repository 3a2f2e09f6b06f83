/*  net_tcp - plain TCP sockets, non-blocking (see net_tcp.h). */
#include "net_tcp.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "lux.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
net_tcp_listen(const char *host, int port, bool listening)
{
    char ps[16];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    snprintf(ps, sizeof ps, "%d", port);
    int g = getaddrinfo(host, ps, &hints, &ai);
    if (g)
        return util_err(LUX_EIO, "%s:%d: %s", host, port, gai_strerror(g)), -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || (listening && listen(fd, 64) < 0)) {
        util_err(LUX_EIO, "%s:%d cannot be bound (%s)", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

int
net_tcp_dial(const char *host, int port, const char *local, int *err)
{
    char ps[16];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL, *la = NULL;
    *err = 0;
    snprintf(ps, sizeof ps, "%d", port);
    int g = getaddrinfo(host, ps, &hints, &ai);
    if (g)
        return util_err(LUX_EIO, "%s: %s", host, gai_strerror(g)), -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) {
        util_err(LUX_EIO, "a socket to %s: %s", host, strerror(errno));
        freeaddrinfo(ai);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* from the node's own address (the one the other end's log names),
       not whatever the route picks */
    struct addrinfo lh = {.ai_family = ai->ai_family, .ai_socktype = SOCK_STREAM,
                          .ai_flags = AI_PASSIVE | AI_NUMERICHOST};
    if (local && *local && getaddrinfo(local, "0", &lh, &la) == 0) {
        if (bind(fd, la->ai_addr, la->ai_addrlen) < 0)
            log_debug("tcp: cannot send from %s (%s): the route picks", local, strerror(errno));
        freeaddrinfo(la);
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
        *err = errno;
    freeaddrinfo(ai);
    return fd;
}

void
net_tcp_name(const struct sockaddr_storage *sa, char *out, size_t n)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *) sa;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
    } else if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *) sa;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        port = ntohs(a->sin6_port);
    }
    snprintf(out, n, "%s:%d", host, port);
}
