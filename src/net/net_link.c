/*  net_link - framed messages over a unix stream socket (see net_link.h).

    The output queue is one buffer: a message is encoded into it only when
    the socket did not take all of it at once (the common case writes the
    frames straight from the zmsg with one writev). The input buffer
    grows to hold the largest message in flight and is compacted as
    messages are handed out.
*/
#include "net_link.h"
#include "../util/util_buf.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define S_IOV 64               /* frames written by one writev, at most */
#define S_READ (256u << 10)    /* read at most this much per call */

struct net_link {
    int fd;
    pid_t peer;
    bool dead;
    bool held;                 /* net_link_hold: queue, write at the release */
    uint8_t *out;              /* queued bytes: out[out_at..out_len) */
    size_t out_at, out_len, out_cap;
    uint8_t *in;               /* read bytes: in[in_at..in_len) */
    size_t in_at, in_len, in_cap;
};

/* --- sockets ------------------------------------------------------------------------------- */

static int
s_addr(const char *path, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a->sun_path)
        return util_err(LUX_EINVAL, "the socket path %s is longer than the %zu bytes a unix "
                        "socket allows: use a shorter cluster directory", path,
                        sizeof a->sun_path - 1);
    memcpy(a->sun_path, path, strlen(path) + 1);
    return 0;
}

int
net_link_listen(const char *path)
{
    struct sockaddr_un a;
    int rc = s_addr(path, &a);
    if (rc)
        return rc;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return util_err(LUX_EIO, "socket: %s", strerror(errno));
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path); /* left by a process that died */
    if (bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(fd, 128) < 0) {
        int e = errno;
        close(fd);
        return util_err(e == EADDRINUSE ? LUX_EEXIST : LUX_EIO, "listen on %s: %s", path,
                        strerror(e));
    }
    return fd;
}

int
net_link_path(const char *ep, char *out, size_t n)
{
    struct sockaddr_un a;
    if (strncmp(ep, "ipc://", 6) != 0)
        return util_err(LUX_EINVAL, "%s: a link goes beside an ipc:// endpoint", ep);
    size_t need = strlen(ep + 6) + sizeof ".link";
    if (need > sizeof a.sun_path || need > n)
        return util_err(LUX_EINVAL, "%s: the link's path would be longer than %zu bytes", ep,
                        sizeof a.sun_path - 1);
    snprintf(out, n, "%s.link", ep + 6);
    return 0;
}

int
net_link_accept(int listen_fd, net_link_t **out)
{
    *out = NULL;
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
                   ? LUX_ETIMEDOUT
                   : util_err(LUX_EIO, "accept: %s", strerror(errno));
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != getuid()) {
        close(fd);
        return util_err(LUX_EAUTH, "refused a connection from pid %d of user %d (not ours)",
                        (int) cred.pid, (int) cred.uid);
    }
    if (!(*out = net_link_new(fd)))
        return LUX_ENOMEM;
    (*out)->peer = cred.pid;
    return 0;
}

net_link_t *
net_link_connect(const char *path)
{
    struct sockaddr_un a;
    if (s_addr(path, &a))
        return NULL;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        util_err(LUX_EIO, "socket: %s", strerror(errno));
        return NULL;
    }
    if (connect(fd, (struct sockaddr *) &a, sizeof a) < 0) {
        int e = errno;
        close(fd);
        util_err(e == ENOENT || e == ECONNREFUSED ? LUX_ENOTFOUND : LUX_EIO,
                 "nothing listens at %s: %s", path, strerror(e));
        return NULL;
    }
    return net_link_new(fd);
}

net_link_t *
net_link_new(int fd)
{
    net_link_t *self = calloc(1, sizeof *self);
    if (!self) {
        close(fd);
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    self->fd = fd;
    return self;
}

void
net_link_destroy(net_link_t **self_p)
{
    net_link_t *self = *self_p;
    if (!self)
        return;
    if (self->fd >= 0)
        close(self->fd);
    free(self->out);
    free(self->in);
    free(self);
    *self_p = NULL;
}

int
net_link_fd(net_link_t *self)
{
    return self->fd;
}

pid_t
net_link_peer_pid(net_link_t *self)
{
    return self->peer;
}

bool
net_link_dead(net_link_t *self)
{
    return self->dead;
}

/* --- sending ------------------------------------------------------------------------------- */

static int
s_dead(net_link_t *self, const char *what, int e)
{
    if (!self->dead)
        util_err(LUX_EDEAD, "the other end of the link %s (%s)", what, strerror(e));
    self->dead = true;
    self->out_at = self->out_len = 0;
    return LUX_EDEAD;
}

/* Room for n more bytes in the queue. */
static int
s_out_room(net_link_t *self, size_t n)
{
    if (self->out_at == self->out_len)
        self->out_at = self->out_len = 0;
    if (self->out_len + n <= self->out_cap)
        return 0;
    if (self->out_at > 0 && self->out_len - self->out_at + n <= self->out_cap) {
        memmove(self->out, self->out + self->out_at, self->out_len - self->out_at);
        self->out_len -= self->out_at;
        self->out_at = 0;
        return 0;
    }
    size_t cap = self->out_cap ? self->out_cap : 4096;
    while (cap < self->out_len + n)
        cap *= 2;
    uint8_t *p = realloc(self->out, cap);
    if (!p)
        return util_err(LUX_ENOMEM, "out of memory queueing a message");
    self->out = p;
    self->out_cap = cap;
    return 0;
}


int
net_link_write(net_link_t *self)
{
    while (self->out_at < self->out_len) {
        ssize_t n = send(self->fd, self->out + self->out_at, self->out_len - self->out_at,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return s_dead(self, "is gone", errno);
        }
        self->out_at += (size_t) n;
    }
    self->out_at = self->out_len = 0;
    if (self->out_cap > (4u << 20)) { /* a big message went out: give the room back */
        free(self->out);
        self->out = NULL;
        self->out_cap = 0;
    }
    return 0;
}

int
net_link_hold(net_link_t *self, bool hold)
{
    self->held = hold;
    return hold || self->dead ? 0 : net_link_write(self);
}

bool
net_link_pending(net_link_t *self)
{
    return self->out_at < self->out_len;
}

int
net_link_send(net_link_t *self, zmsg_t **msg_p)
{
    zmsg_t *m = *msg_p;
    *msg_p = NULL;
    if (!m)
        return 0;
    if (self->dead) {
        zmsg_destroy(&m);
        return util_err(LUX_EDEAD, "the other end of the link is gone");
    }
    size_t nframes = zmsg_size(m), total = 0;
    for (zframe_t *f = zmsg_first(m); f; f = zmsg_next(m))
        total += 4 + zframe_size(f);
    if (total > NET_LINK_MAX) {
        zmsg_destroy(&m);
        return util_err(LUX_EINVAL, "a message of %zu bytes is larger than a link carries (%zu)",
                        total, NET_LINK_MAX);
    }
    uint8_t hdr[4 * (S_IOV + 1)];
    size_t written = 0;
    if (!self->held && !net_link_pending(self) && nframes <= S_IOV) {
        /* nothing queued: straight from the frames */
        struct iovec iov[2 * S_IOV + 1];
        int k = 0;
        util_le32(hdr, (uint32_t) total);
        iov[k++] = (struct iovec) {hdr, 4};
        size_t i = 1;
        for (zframe_t *f = zmsg_first(m); f; f = zmsg_next(m), i++) {
            util_le32(hdr + 4 * i, (uint32_t) zframe_size(f));
            iov[k++] = (struct iovec) {hdr + 4 * i, 4};
            if (zframe_size(f))
                iov[k++] = (struct iovec) {zframe_data(f), zframe_size(f)};
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t) k};
        for (;;) {
            ssize_t n = sendmsg(self->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n >= 0) {
                written = (size_t) n;
                break;
            }
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            zmsg_destroy(&m);
            return s_dead(self, "is gone", errno);
        }
        if (written == 4 + total) {
            zmsg_destroy(&m);
            return 0;
        }
    }
    /* queue what was not written */
    int rc = s_out_room(self, 4 + total - written);
    if (rc) {
        zmsg_destroy(&m);
        return rc;
    }
    size_t skip = written; /* bytes of the encoding already on the socket */
#define S_PUT(p, n)                                                             \
    do {                                                                        \
        size_t n_ = (n);                                                        \
        const uint8_t *p_ = (const uint8_t *) (p);                              \
        if (skip >= n_) {                                                       \
            skip -= n_;                                                         \
        } else {                                                                \
            memcpy(self->out + self->out_len, p_ + skip, n_ - skip);            \
            self->out_len += n_ - skip;                                         \
            skip = 0;                                                           \
        }                                                                       \
    } while (0)
    uint8_t b4[4];
    util_le32(b4, (uint32_t) total);
    S_PUT(b4, 4);
    for (zframe_t *f = zmsg_first(m); f; f = zmsg_next(m)) {
        util_le32(b4, (uint32_t) zframe_size(f));
        S_PUT(b4, 4);
        S_PUT(zframe_data(f), zframe_size(f));
    }
#undef S_PUT
    zmsg_destroy(&m);
    return self->held ? 0 : net_link_write(self);
}

/* --- receiving ----------------------------------------------------------------------------- */

int
net_link_read(net_link_t *self)
{
    if (self->dead)
        return LUX_EDEAD;
    for (;;) {
        /* room: compact, then grow to at least S_READ free */
        if (self->in_at == self->in_len) {
            self->in_at = self->in_len = 0;
        } else if (self->in_at > 0 && self->in_cap - self->in_len < S_READ) {
            memmove(self->in, self->in + self->in_at, self->in_len - self->in_at);
            self->in_len -= self->in_at;
            self->in_at = 0;
        }
        if (self->in_cap - self->in_len < S_READ) {
            size_t cap = self->in_cap ? self->in_cap * 2 : 2 * S_READ;
            while (cap - self->in_len < S_READ)
                cap *= 2;
            uint8_t *p = realloc(self->in, cap);
            if (!p)
                return util_err(LUX_ENOMEM, "out of memory reading a message");
            self->in = p;
            self->in_cap = cap;
        }
        ssize_t n = recv(self->fd, self->in + self->in_len, self->in_cap - self->in_len,
                         MSG_DONTWAIT);
        if (n > 0) {
            self->in_len += (size_t) n;
            if ((size_t) n < S_READ)
                return 0; /* drained, most likely: the caller polls again */
            continue;
        }
        if (n == 0) {
            self->dead = true;
            return util_err(LUX_EDEAD, "the other end of the link hung up");
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        self->dead = true;
        return util_err(LUX_EDEAD, "reading the link: %s", strerror(errno));
    }
}

zmsg_t *
net_link_next(net_link_t *self)
{
    size_t have = self->in_len - self->in_at;
    if (have < 4)
        return NULL;
    const uint8_t *p = self->in + self->in_at;
    size_t total = util_rd32(p);
    if (total > NET_LINK_MAX) {
        log_error("link: a message claims %zu bytes: the stream is broken", total);
        self->dead = true;
        self->in_at = self->in_len = 0;
        return NULL;
    }
    if (have < 4 + total)
        return NULL;
    zmsg_t *m = zmsg_new();
    size_t at = 4;
    while (at < 4 + total) {
        uint32_t n = 4 + total - at >= 4 ? util_rd32(p + at) : UINT32_MAX;
        if (n == UINT32_MAX || at + 4 + n > 4 + total) {
            log_error("link: a frame runs past its message: the stream is broken");
            zmsg_destroy(&m);
            self->dead = true;
            self->in_at = self->in_len = 0;
            return NULL;
        }
        zmsg_addmem(m, p + at + 4, n);
        at += 4 + n;
    }
    self->in_at += 4 + total;
    return m;
}

zmsg_t *
net_link_recv(net_link_t *self, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : util_mono_ms() + timeout_ms;
    for (;;) {
        zmsg_t *m = net_link_next(self);
        if (m)
            return m;
        if (self->dead) {
            util_err(LUX_EDEAD, "the link's peer is gone");
            return NULL;
        }
        int64_t left = deadline - util_mono_ms();
        if (left < 0) {
            util_err(LUX_ETIMEDOUT, "no message within %d ms", timeout_ms);
            return NULL;
        }
        struct pollfd pf = {self->fd, POLLIN | (net_link_pending(self) ? POLLOUT : 0), 0};
        int n = poll(&pf, 1, left > INT32_MAX ? -1 : (int) left);
        if (n < 0 && errno == EINTR && zsys_interrupted) {
            util_err(LUX_EINTR, "interrupted");
            return NULL;
        }
        if (n <= 0)
            continue;
        if ((pf.revents & POLLOUT) && net_link_write(self))
            continue; /* dead: said above */
        if (pf.revents & (POLLIN | POLLHUP | POLLERR))
            net_link_read(self);
    }
}

int
net_link_drain(net_link_t *self, int timeout_ms)
{
    int64_t deadline = util_mono_ms() + timeout_ms;
    while (!self->held && net_link_pending(self)) {
        int64_t left = deadline - util_mono_ms();
        if (left <= 0)
            return util_err(LUX_ETIMEDOUT, "the link's peer did not take a message within %d ms",
                            timeout_ms);
        struct pollfd pf = {self->fd, POLLOUT, 0};
        if (poll(&pf, 1, (int) left) > 0 && net_link_write(self))
            return LUX_EDEAD;
    }
    return self->dead ? LUX_EDEAD : 0;
}
