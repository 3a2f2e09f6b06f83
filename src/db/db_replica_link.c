/*  db_replica_link - a replica's local links: clients on this machine
    append through a stream socket beside the append endpoint (net_link.h)
    instead of ZeroMQ. This part accepts the links, reads their messages
    and hands each to the append part as if the append socket had received
    it, under a routing ID made here (DB_REP_LINK_RID_LEN); db_rep_emit
    sends an answer back on the link that routing ID names, or on the
    socket when it is a ZeroMQ peer's. It owns the links and their
    listening socket.
*/
#include "db_replica_int.h"
#include "../util/util_err.h"
#include "../util/util_log.h"

#include <string.h>
#include <unistd.h>

static db_rep_link_t *
s_link_by_id(db_rep_t *self, uint64_t id)
{
    for (size_t i = 0; i < self->nlinks; i++)
        if (self->links[i].id == id)
            return &self->links[i];
    return NULL;
}

/* The link a routing ID names, or NULL (a ZeroMQ peer's, or a closed link's). */
static db_rep_link_t *
s_link_of(db_rep_t *self, zframe_t *rid)
{
    if (!rid || zframe_size(rid) != DB_REP_LINK_RID_LEN || memcmp(zframe_data(rid), "\0lnk", 4) != 0)
        return NULL;
    return s_link_by_id(self, util_rd64(zframe_data(rid) + 4));
}

static int s_on_link(zloop_t *loop, zmq_pollitem_t *item, void *arg);
static int s_on_link_accept(zloop_t *loop, zmq_pollitem_t *item, void *arg);
DB_REP_SETTLING(s_on_link, zmq_pollitem_t *)
DB_REP_SETTLING(s_on_link_accept, zmq_pollitem_t *)

/* Poll l for what it needs: input unless appends are paused, output
   while some waits. */
static void
s_link_watch(db_rep_t *self, db_rep_link_t *l)
{
    short want = (short) ((self->append_paused ? 0 : ZMQ_POLLIN) |
                          (net_link_pending(l->link) ? ZMQ_POLLOUT : 0));
    if (want == l->events)
        return;
    zmq_pollitem_t item = {NULL, net_link_fd(l->link), want, 0};
    if (l->events)
        zloop_poller_end(self->loop, &item);
    l->events = 0;
    if (want && zloop_poller(self->loop, &item, s_on_link_w, self) == 0) {
        zloop_poller_set_tolerant(self->loop, &item); /* a hang-up is ours to see */
        l->events = want;
    }
}

static void
s_link_close(db_rep_t *self, db_rep_link_t *l)
{
    if (l->events && self->loop) {
        zmq_pollitem_t item = {NULL, net_link_fd(l->link), 0, 0};
        zloop_poller_end(self->loop, &item);
    }
    net_link_destroy(&l->link);
    *l = self->links[--self->nlinks];
}

/* Send m on sock, or on the local link its routing ID names (an answer
   for a link that has closed is dropped: its client resends). */
void
db_rep_emit(db_rep_t *self, zsock_t *sock, zmsg_t **m_p)
{
    zframe_t *first = zmsg_first(*m_p);
    if (sock != self->sk_append || !first || zframe_size(first) != DB_REP_LINK_RID_LEN) {
        zmsg_send(m_p, sock);
        zmsg_destroy(m_p); /* not sent (a socket that does not wait): dropped */
        db_rep_touch(self, sock);
        return;
    }
    db_rep_link_t *l = s_link_of(self, first);
    zframe_t *rid = zmsg_pop(*m_p);
    zframe_destroy(&rid);
    if (!l)
        zmsg_destroy(m_p);
    else if (net_link_send(l->link, m_p))
        s_link_close(self, l);
    else
        s_link_watch(self, l);
}

static int
s_on_link(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    db_rep_t *self = arg;
    db_rep_link_t *l = NULL;
    (void) loop;
    for (size_t i = 0; i < self->nlinks && !l; i++)
        if (net_link_fd(self->links[i].link) == item->fd)
            l = &self->links[i];
    if (!l)
        return 0;
    uint64_t id = l->id;
    uint8_t rid[DB_REP_LINK_RID_LEN] = {0, 'l', 'n', 'k'};
    util_le64(rid + 4, id);
    if ((item->revents & ZMQ_POLLOUT) && net_link_write(l->link)) {
        s_link_close(self, l);
        return 0;
    }
    if (item->revents & (ZMQ_POLLIN | ZMQ_POLLERR)) {
        net_link_read(l->link); /* a hang-up shows in net_link_dead below */
        zmsg_t *m;
        while (l && (m = net_link_next(l->link))) {
            zmsg_pushmem(m, rid, sizeof rid);
            db_rep_append_msg(self, m);
            l = s_link_by_id(self, id); /* an answer that failed closed it */
        }
        if (l && net_link_dead(l->link)) {
            s_link_close(self, l);
            l = NULL;
        }
    }
    if (l)
        s_link_watch(self, l);
    return 0;
}

static int
s_on_link_accept(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    db_rep_t *self = arg;
    net_link_t *link;
    int rc;
    (void) loop;
    (void) item;
    while ((rc = net_link_accept(self->link_fd, &link)) != LUX_ETIMEDOUT) {
        if (rc) {
            db_rep_complain(self, "append link", lux_errmsg());
            return 0;
        }
        if (self->nlinks == self->caplinks) {
            size_t cap = self->caplinks ? 2 * self->caplinks : 8;
            db_rep_link_t *a = realloc(self->links, cap * sizeof *a);
            if (!a) {
                net_link_destroy(&link); /* the client goes on over ZeroMQ */
                return 0;
            }
            self->links = a;
            self->caplinks = cap;
        }
        db_rep_link_t *l = &self->links[self->nlinks++];
        *l = (db_rep_link_t) {link, ++self->link_ids, 0};
        s_link_watch(self, l);
    }
    return 0;
}

void
db_rep_links_listen(db_rep_t *self)
{
    char path[DB_EP_MAX];
    if (net_link_path(self->ep[DB_EP_APPEND], path, sizeof path) != 0)
        return;
    int fd = net_link_listen(path);
    zmq_pollitem_t item = {NULL, fd, ZMQ_POLLIN, 0};
    if (fd < 0)
        log_warn("no append link: %s", lux_errmsg());
    else if (zloop_poller(self->loop, &item, s_on_link_accept_w, self) == 0)
        self->link_fd = fd;
    else
        close(fd);
}

void
db_rep_links_watch(db_rep_t *self)
{
    for (size_t i = 0; i < self->nlinks; i++)
        s_link_watch(self, &self->links[i]);
}

void
db_rep_links_close(db_rep_t *self)
{
    while (self->nlinks)
        s_link_close(self, &self->links[0]);
    free(self->links);
    self->links = NULL;
    if (self->link_fd >= 0) {
        char path[DB_EP_MAX];
        close(self->link_fd);
        self->link_fd = -1;
        if (net_link_path(self->ep[DB_EP_APPEND], path, sizeof path) == 0)
            unlink(path);
    }
}
