/*  net_wire - the header frame, batches and errors.

    MESSAGES are ZeroMQ multipart messages. Frame 0 is the header:

        offset  size  field
        0       1     magic   0x4c ('L')
        1       1     version 1
        2       1     type    enum net_type (net_wire.h)
        3       1     flags   0
        4       4     shard   u32 little-endian; 0xffffffff when none
        8       8     epoch   u64 little-endian: the sender's epoch of
                              that shard's chain

    The frames after the header depend on the type (doc/protocol.md lists
    them all). A receiver checks the header first: a frame that is not 16
    bytes, a wrong magic or an unknown type is LUX_EPROTO, another version
    LUX_ENOSYS; either way the message is dropped (and answered with an
    ERROR where the socket can answer) and nothing else changes.

    BATCHES carry records with consecutive seqs:

        0       8     first   u64, the seq of the first record
        8       4     count   u32
        12      ...   count times: length u32, then that many bytes

    A batch whose lengths do not add up exactly to its size is LUX_EPROTO.

    ERRORS: frame 1 is code i32 (a LUX_E* value) followed by UTF-8 text.
*/
#include "net_wire.h"
#include "../util/util_err.h"

#include <stdarg.h>

static const char *s_names[NET_TYPE_MAX] = {
#define X(name, code, what) [code] = #name,
    NET_TYPES(X)
#undef X
};

const char *
net_type_name(int type)
{
    if (type <= 0 || type >= NET_TYPE_MAX || !s_names[type]) /* a gap: no such type */
        return "UNKNOWN";
    return s_names[type];
}

zframe_t *
net_hdr_frame(int type, uint32_t shard, uint64_t epoch)
{
    uint8_t h[NET_HDR_LEN];
    h[0] = NET_MAGIC;
    h[1] = NET_VERSION;
    h[2] = (uint8_t) type;
    h[3] = 0;
    util_le32(h + 4, shard);
    util_le64(h + 8, epoch);
    return zframe_new(h, sizeof h);
}

int
net_hdr_decode(net_hdr_t *h, zframe_t *f)
{
    const uint8_t *p;
    if (!f)
        return util_err(LUX_EPROTO, "empty message");
    if (zframe_size(f) != NET_HDR_LEN)
        return util_err(LUX_EPROTO, "header frame of %zu bytes, not %d", zframe_size(f),
                        NET_HDR_LEN);
    p = zframe_data(f);
    if (p[0] != NET_MAGIC)
        return util_err(LUX_EPROTO, "bad magic 0x%02x", p[0]);
    if (p[1] != NET_VERSION)
        return util_err(LUX_ENOSYS, "protocol version %u, this side speaks %d", p[1],
                        NET_VERSION);
    h->type = p[2];
    h->flags = p[3];
    h->shard = util_rd32(p + 4);
    h->epoch = util_rd64(p + 8);
    if (h->type == 0 || h->type >= NET_TYPE_MAX || !s_names[h->type])
        return util_err(LUX_EPROTO, "unknown message type %u", h->type);
    return 0;
}

int
net_batch_parse(net_batch_t *b, const uint8_t *p, size_t n)
{
    util_rd_t r;
    if (n < NET_BATCH_HDR)
        return util_err(LUX_EPROTO, "batch of %zu bytes is shorter than its header", n);
    b->first = util_rd64(p);
    b->count = util_rd32(p + 8);
    b->recs = p + NET_BATCH_HDR;
    b->len = n - NET_BATCH_HDR;
    util_rd_init(&r, b->recs, b->len);
    for (uint32_t i = 0; i < b->count; i++) {
        uint32_t len = util_rd_u32(&r);
        if (!util_rd_take(&r, len))
            return util_err(LUX_EPROTO, "batch from seq %llu: record %u of %u is truncated",
                            (unsigned long long) b->first, i, b->count);
    }
    if (r.bad || util_rd_left(&r) != 0)
        return util_err(LUX_EPROTO, "batch from seq %llu: %zu bytes after %u records",
                        (unsigned long long) b->first, util_rd_left(&r), b->count);
    if (b->count && b->first == 0)
        return util_err(LUX_EPROTO, "batch starts at seq 0");
    return 0;
}

void
net_batch_iter(net_batch_it_t *it, const net_batch_t *b)
{
    util_rd_init(&it->r, b->recs, b->len);
    it->seq = b->first;
    it->left = b->count;
}

bool
net_batch_next(net_batch_it_t *it, uint64_t *seq, const uint8_t **rec, size_t *len)
{
    if (it->left == 0)
        return false;
    uint32_t n = util_rd_u32(&it->r);
    const uint8_t *p = util_rd_take(&it->r, n);
    if (!p)
        return false;
    *seq = it->seq++;
    *rec = p;
    *len = n;
    it->left--;
    return true;
}

void
net_batch_begin(util_buf_t *b, uint64_t first)
{
    b->len = 0;
    util_buf_put_u64(b, first);
    util_buf_put_u32(b, 0);
}

void
net_batch_add(util_buf_t *b, const uint8_t *rec, size_t n)
{
    util_buf_put_u32(b, (uint32_t) n);
    util_buf_put(b, rec, n);
}

void
net_batch_end(util_buf_t *b, uint32_t count)
{
    if (b->len >= NET_BATCH_HDR)
        util_le32(b->data + 8, count);
}

zmsg_t *
net_error_msg(uint32_t shard, uint64_t epoch, int code, const char *fmt, ...)
{
    char text[512];
    uint8_t buf[4 + sizeof text];
    va_list ap;
    zmsg_t *m = zmsg_new();

    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t) n >= sizeof text)
        n = sizeof text - 1;
    util_le32(buf, (uint32_t) code);
    memcpy(buf + 4, text, (size_t) n);
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_ERROR, shard, epoch)});
    zmsg_addmem(m, buf, 4 + (size_t) n);
    uint8_t req[8] = {0};
    zmsg_addmem(m, req, sizeof req); /* frame 2: the request, 0 until net_error_req */
    return m;
}

void
net_error_req(zmsg_t *m, uint64_t req)
{
    zframe_t *f = zmsg_last(m);
    if (f && zframe_size(f) == 8)
        util_le64(zframe_data(f), req);
}

void
net_error_decode(zframe_t *f, int *code, char *buf, size_t n)
{
    *code = LUX_EPROTO;
    buf[0] = '\0';
    if (!f || zframe_size(f) < 4)
        return;
    *code = (int32_t) util_rd32(zframe_data(f));
    size_t len = zframe_size(f) - 4;
    if (len >= n)
        len = n - 1;
    memcpy(buf, zframe_data(f) + 4, len);
    buf[len] = '\0';
}

/* --- polling ------------------------------------------------------------------------------ */

/* The events a ZeroMQ socket has now that the item asks for. Reading
   ZMQ_EVENTS also clears its descriptor's signal: after it, the
   descriptor fires for whatever comes next, so a poll(2) on it cannot
   sleep through a message (libzmq's rule for ZMQ_FD). */
static short
s_zmq_events(zmq_pollitem_t *it)
{
    int ev = 0;
    size_t len = sizeof ev;
    if (zmq_getsockopt(it->socket, ZMQ_EVENTS, &ev, &len) != 0)
        return 0;
    return (short) (ev & it->events & (ZMQ_POLLIN | ZMQ_POLLOUT));
}

int
net_poll(zmq_pollitem_t *items, int n, struct pollfd *pfds, long timeout_ms)
{
    int ready = 0, rc;
    for (int i = 0; i < n; i++) {
        zmq_pollitem_t *it = &items[i];
        it->revents = 0;
        pfds[i].revents = 0;
        if (it->socket) {
            size_t len = sizeof pfds[i].fd;
            if (zmq_getsockopt(it->socket, ZMQ_FD, &pfds[i].fd, &len) != 0)
                return -1;
            pfds[i].events = POLLIN;
            if ((it->revents = s_zmq_events(it)))
                ready++;
        } else {
            pfds[i].fd = it->fd;
            pfds[i].events = (short) ((it->events & ZMQ_POLLIN ? POLLIN : 0) |
                                      (it->events & ZMQ_POLLOUT ? POLLOUT : 0) |
                                      (it->events & ZMQ_POLLPRI ? POLLPRI : 0));
        }
    }
    rc = poll(pfds, (nfds_t) n, ready ? 0 : (int) timeout_ms);
    if (rc < 0)
        return -1;
    ready = 0;
    for (int i = 0; i < n; i++) {
        zmq_pollitem_t *it = &items[i];
        if (it->socket) {
            if (pfds[i].revents)
                it->revents = s_zmq_events(it);
        } else {
            short r = pfds[i].revents;
            it->revents = (short) ((r & POLLIN ? ZMQ_POLLIN : 0) | (r & POLLOUT ? ZMQ_POLLOUT : 0) |
                                   (r & POLLPRI ? ZMQ_POLLPRI : 0) |
                                   (r & (POLLERR | POLLHUP | POLLNVAL) ? ZMQ_POLLERR : 0));
            it->revents &= (short) (it->events | ZMQ_POLLERR);
        }
        if (it->revents)
            ready++;
    }
    return ready;
}
