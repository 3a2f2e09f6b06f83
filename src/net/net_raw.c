/*  net_raw - ZeroMQ sockets polled by their descriptor (see net_raw.h). */
#include "net_raw.h"
#include "../util/util_err.h"
#include "../util/util_log.h"

#include <assert.h>
#include <stdlib.h>

typedef struct {
    zsock_t *sock;       /* borrowed */
    zloop_reader_fn *fn; /* handles one message */
    int fd;              /* ZMQ_FD of sock */
    bool on;             /* polled */
    bool dirty;          /* its events must be read: a notice may be lost */
} s_slot_t;

struct net_raw_t {
    zloop_t *loop; /* borrowed; NULL: the caller polls */
    void *arg;     /* for the handlers */
    int n;         /* slots used */
    s_slot_t slot[NET_RAW_MAX];
};

net_raw_t *
net_raw_new(zloop_t *loop, void *arg)
{
    net_raw_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->loop = loop;
    self->arg = arg;
    return self;
}

void
net_raw_destroy(net_raw_t **self_p)
{
    net_raw_t *self = *self_p;
    if (!self)
        return;
    for (int r = 0; r < self->n; r++)
        net_raw_on(self, r, false);
    free(self);
    *self_p = NULL;
}

static int s_on_fd(zloop_t *loop, zmq_pollitem_t *item, void *arg);

void
net_raw_on(net_raw_t *self, int r, bool on)
{
    assert(r >= 0 && r < self->n);
    s_slot_t *s = &self->slot[r];
    if (on == s->on)
        return;
    if (!self->loop) {
        s->on = on;
        s->dirty = on;
        return;
    }
    zmq_pollitem_t item = {NULL, s->fd, ZMQ_POLLIN, 0};
    if (!on) {
        zloop_poller_end(self->loop, &item);
        s->on = false;
    } else if (zloop_poller(self->loop, &item, s_on_fd, self) == 0) {
        s->on = true;
        s->dirty = true; /* what came meanwhile gave no notice */
    } else {
        log_error("cannot poll a socket: %s", zmq_strerror(zmq_errno()));
    }
}

int
net_raw_add(net_raw_t *self, zsock_t *sock, zloop_reader_fn *fn)
{
    if (self->n == NET_RAW_MAX)
        return util_err(LUX_ENOMEM, "a raw socket set holds %d sockets", NET_RAW_MAX);
    int r = self->n++;
    self->slot[r] = (s_slot_t) {.sock = sock, .fn = fn, .fd = zsock_fd(sock)};
    net_raw_on(self, r, true);
    if (!self->slot[r].on) {
        self->n--;
        return util_err(LUX_ENOMEM, "cannot poll a socket: %s", zmq_strerror(zmq_errno()));
    }
    return r;
}

int
net_raw_fd(const net_raw_t *self, int r)
{
    assert(r >= 0 && r < self->n);
    return self->slot[r].fd;
}

void
net_raw_touch(net_raw_t *self, zsock_t *sock)
{
    for (int r = 0; r < self->n; r++)
        if (self->slot[r].sock == sock)
            self->slot[r].dirty = true;
}

void
net_raw_touch_all(net_raw_t *self)
{
    for (int r = 0; r < self->n; r++)
        self->slot[r].dirty = true;
}

bool
net_raw_dirty(const net_raw_t *self)
{
    for (int r = 0; r < self->n; r++)
        if (self->slot[r].on && self->slot[r].dirty)
            return true;
    return false;
}

int
net_raw_drain(net_raw_t *self, int r)
{
    assert(r >= 0 && r < self->n);
    s_slot_t *s = &self->slot[r];
    for (;;) {
        s->dirty = false;
        if (!s->on || !(zsock_events(s->sock) & ZMQ_POLLIN))
            return 0;
        if (s->fn(self->loop, s->sock, self->arg) == -1)
            return -1;
    }
}

int
net_raw_settle(net_raw_t *self)
{
    for (int round = 0; round < 64; round++) {
        bool any = false;
        for (int r = 0; r < self->n; r++)
            if (self->slot[r].on && self->slot[r].dirty) {
                any = true;
                if (net_raw_drain(self, r) == -1)
                    return -1;
            }
        if (!any)
            return 0;
    }
    return 0; /* still dirty: the next settle goes on */
}

int
net_raw_fired(net_raw_t *self, int fd)
{
    for (int r = 0; r < self->n; r++)
        if (self->slot[r].on && self->slot[r].fd == fd && net_raw_drain(self, r) == -1)
            return -1;
    return net_raw_settle(self);
}

static int
s_on_fd(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    return net_raw_fired(arg, item->fd);
}
