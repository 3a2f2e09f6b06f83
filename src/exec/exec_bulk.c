/*  exec_bulk - the bulk data path of objects between nodes (see
    exec_bulk.h for the records and why the port is safe without CURVE).

    Sections: connections (the epoll set, killing and sweeping), the
    source (accept, hello, request, the stream's sealing slots), the
    puller (connect, request, chunks, credit), and the part's life. The
    records themselves are exec_bulk_rec.c's.

    The source seals on the pool's threads (exec_bulk_pool.c) while the
    loop sends: a streaming connection has S_SLOTS slots, each one
    record; the loop fills a free slot (the chunk's offset and its record
    number, taken in order, so the nonce is still the record counter) and
    pushes it to the pool, and sends the oldest slot once it is sealed.
    At most S_SLOTS chunks per connection are sealed or waiting, never
    the object. A connection is killed only after its slots' jobs are
    taken off the queue or have finished (exec_bulk_pool_cancel), so no
    thread reads the object or the key after exec_bulk_drop returns.

    The puller opens on the same pool while its loop receives: each
    record whole (its header and tag in a free slot, its body in the
    block, or compressed in the slot) goes to the pool with its record
    number; the loop takes the oldest back once opened and only then
    counts it and hands back credit, so a record that failed ends the
    pull at its turn, and no thread writes into the block after the pull
    ends (the same cancel as the source's). The jobs are exec_bulk_job.c's.

    A connection killed while exec_bulk_fired walks its events is only
    marked (its descriptor closed, its key wiped) and freed after the
    walk, so a callback may stop any pull.
*/
#include "exec_bulk.h"
#include "exec_bulk_job.h"
#include "exec_bulk_pool.h"
#include "../net/net_tcp.h"
#include "../util/util_buf.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <errno.h>
#include <lz4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define S_HELLO 16             /* "LUXB", version, 0 [3], xid u64 */
#define S_HDR EXEC_BULK_HDR    /* type, codec, 0 u16, plen, clen, off: the additional data */
#define S_REC EXEC_BULK_REC    /* a record's header and tag */
#define S_REQ_LEN (LUX_REF_LEN + 8)
#define S_SAY_MS 10000         /* a connection says who it is within this */
#define S_SILENT_MS 10000      /* a streaming connection that moves nothing this long goes */
#define S_UNSAID_MAX 16        /* connections not yet authenticated, at once */
#define S_TURN_BYTES (8u << 20) /* bytes one connection moves per turn of the loop */
#define S_CHUNK_MIN 4096
#define S_CHUNK_MAX (64u << 20)
#define S_SLOTS 4              /* a streaming connection's chunks sealed or being sealed, at most */

enum { R_REQ = EXEC_BULK_R_REQ, R_CREDIT = EXEC_BULK_R_CREDIT, R_CHUNK = EXEC_BULK_R_CHUNK };
enum { K_LISTEN, K_SRC, K_PULL };
/* a source connection: hello, request, streaming, waiting for the end */
enum { SS_HELLO, SS_REQ, SS_STREAM, SS_DRAIN };
/* a puller's: connecting, a record's header, its body; failed at once */
enum { PS_CONNECT, PS_HDR, PS_BODY, PS_FAILED };

typedef exec_bulk_slot_t s_slot_t; /* a record sealed or opened on a pool thread */

typedef struct s_conn {
    int kind;                 /* K_* */
    int fd;
    bool dead;                /* killed: freed at the sweep */
    uint32_t events;          /* what epoll has for it now (maybe none) */
    bool added;               /* in the epoll set */
    int st;                   /* SS_* or PS_* */
    char peer[64];            /* the other end, IP:PORT */
    exec_bulk_key_t key;      /* the transfer's */
    uint64_t ctr_in, ctr_out; /* records opened from / sealed to the other end */
    uint8_t in[S_REC + 64];   /* a header (or a small record) being read */
    size_t in_len, in_need;
    uint8_t *out;             /* what waits to be sent ... */
    size_t out_cap, out_len, out_pos;
    int64_t deadline_ms;      /* the source: when an unsaid, silent or drained connection goes */
    /* the source's stream */
    const uint8_t *bytes;     /* the object's */
    uint64_t size, off, sent; /* its size; the next chunk's offset (sent or received); bytes sent */
    uint32_t chunk, credit;   /* chunk bytes asked; chunks it may still send */
    s_slot_t slot[S_SLOTS];   /* a ring: the oldest at s_head, s_n of them in use (both ends) */
    int s_head, s_n;
    bool flip;                /* test: a byte of its second chunk flipped after sealing */
    bool spoil;               /* test: a byte of its second chunk altered before sealing */
    bool on_loop;             /* its jobs run on the loop's thread (LUX_BULK_LOOP) */
    bool hold, held;          /* test: nothing after the first chunk while the hold file is; said so */
    /* the puller's */
    void *who;
    uint8_t id[LUX_REF_LEN];
    uint8_t *dst;             /* the object's block */
    size_t zcap;              /* room for a compressed chunk (in a slot's buf) */
    _Atomic uint64_t fail;    /* the first record that failed to open, or ~0 (exec_bulk_job.h) */
    exec_bulk_fpq_t fpq;      /* the block's fingerprint, chunk by chunk (fp NULL: none) */
    uint8_t *body;            /* where the current record's body goes */
    uint64_t got;             /* bytes opened into dst */
    uint32_t unthanked;       /* chunks opened, not yet credited back */
    int window;
    exec_bulk_aead_t enc, dec; /* the loop thread's cipher contexts: credits, requests */
    /* LUX_XFER_PROFILE: where a transfer's time went, logged at its end */
    bool prof;
    exec_bulk_prof_t pf;
    int fail_rc;              /* PS_FAILED: the code, and... */
    char fail_why[256];       /* ...why */
    struct s_conn *next;
} s_conn_t;

struct exec_bulk {
    int epfd;
    s_conn_t *listen;        /* NULL: serves nothing */
    int port;
    s_conn_t *conns;
    int depth;               /* inside exec_bulk_fired: kill only marks */
    exec_bulk_pool_t *pool;  /* the threads that seal a source's chunks and open a puller's */
    exec_bulk_fns_t fns;
    void *arg;
    util_complain_t complain;
    char *flip_file;         /* LUX_TEST_BULK_FLIP: a tampered chunk when this file exists */
    char *spoil_file;        /* LUX_TEST_BULK_SPOIL: a chunk altered before sealing, so */
    char *badkey_file;       /* LUX_TEST_BULK_BADKEY: a wrong key when this file exists */
    char *hold_file;         /* LUX_TEST_BULK_HOLD: a source holds after one chunk while it exists */
    char *local;             /* the node's address: where its pulls come from */
    bool profile;            /* LUX_XFER_PROFILE=1 */
    exec_bulk_tune_t tune;   /* LUX_BULK_SNDBUF, _RCVBUF, _LOOP */
};

/* --- connections ------------------------------------------------------------------------ */

static void
s_want(exec_bulk_t *b, s_conn_t *c, uint32_t ev)
{
    if (c->dead || c->fd < 0 || ev == c->events)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    if (epoll_ctl(b->epfd, c->added ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &e) == 0)
        c->events = ev, c->added = true;
}

static void
s_free(s_conn_t *c)
{
    for (int i = 0; i < S_SLOTS; i++)
        free(c->slot[i].buf);
    free(c->out);
    free(c);
}

static void
s_sweep(exec_bulk_t *b)
{
    for (s_conn_t **q = &b->conns; *q;) {
        if ((*q)->dead) {
            s_conn_t *c = *q;
            *q = c->next;
            s_free(c);
        } else {
            q = &(*q)->next;
        }
    }
}

static void
s_kill(exec_bulk_t *b, s_conn_t *c)
{
    if (c->dead)
        return;
    if (c->fd >= 0) {
        epoll_ctl(b->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    /* no thread seals for it any more: then its key and the object's
       bytes are no longer read (exec_bulk_drop's promise) */
    for (int i = 0; i < c->s_n; i++) {
        s_slot_t *sl = &c->slot[(c->s_head + i) % S_SLOTS];
        exec_bulk_pool_cancel(b->pool, &sl->job);
        if (sl->seen)
            continue;
        c->pf.crypt += sl->p_crypt, c->pf.lz4 += sl->p_lz4, c->pf.cpu += sl->p_cpu;
        c->pf.flt += sl->p_flt, c->pf.fp += sl->p_fp;
    }
    c->s_n = 0;
    exec_bulk_fpq_fini(&c->fpq); /* no job runs on the slots any more */
    for (int i = 0; i < S_SLOTS; i++)
        exec_bulk_aead_free(&c->slot[i].aead);
    if (c->prof && c->pf.start && c->kind != K_LISTEN)
        exec_bulk_prof_log(&c->pf, c->kind == K_SRC, c->peer, c->kind == K_SRC ? c->sent : c->got,
                           c->size, c->on_loop ? 0 : exec_bulk_pool_threads(b->pool));
    exec_bulk_key_wipe(&c->key);
    exec_bulk_aead_free(&c->enc); /* cleansed: the last key's schedule goes too */
    exec_bulk_aead_free(&c->dec);
    c->dead = true;
    if (b->depth == 0)
        s_sweep(b);
}

/* A slot's job to the pool, or run at once where its connection says. */
static void
s_push(exec_bulk_t *b, s_conn_t *c, s_slot_t *sl)
{
    if (c->on_loop)
        exec_bulk_pool_here(b->pool, &sl->job);
    else
        exec_bulk_pool_push(b->pool, &sl->job);
}

static s_conn_t *
s_conn_new(exec_bulk_t *b, int kind, int fd)
{
    s_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->kind = kind;
    c->fd = fd;
    c->prof = b->profile;
    c->next = b->conns;
    b->conns = c;
    return c;
}

/* One send of the n pieces at iov, timed for the profile: the bytes
   sent (the connection moves), 0 when its socket is full, -1 when it
   broke. */
static ssize_t
s_send(s_conn_t *c, struct iovec *iov, int n)
{
    for (;;) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t) n};
        int64_t t0 = exec_bulk_t0(c->prof);
        ssize_t k = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        exec_bulk_add(c->prof, &c->pf.io, t0);
        c->pf.calls++;
        if (k > 0) {
            c->deadline_ms = util_mono_ms() + S_SILENT_MS; /* it moves */
            return k;
        }
        if (k < 0 && errno == EINTR)
            continue;
        return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
}

/* One receive of up to n bytes into p, timed: the bytes come, 0 when
   none are there yet, -1 at the end of the stream (errno 0) or an error. */
static ssize_t
s_recv(s_conn_t *c, uint8_t *p, size_t n)
{
    for (;;) {
        int64_t t0 = exec_bulk_t0(c->prof);
        ssize_t k = recv(c->fd, p, n, MSG_DONTWAIT);
        exec_bulk_add(c->prof, &c->pf.io, t0);
        c->pf.calls++;
        if (k > 0)
            return k;
        if (k == 0)
            return errno = 0, -1;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

/* Send what waits in c->out: 0, or -1 when the connection broke. */
static int
s_flush(s_conn_t *c)
{
    while (c->out_pos < c->out_len) {
        struct iovec iov = {c->out + c->out_pos, c->out_len - c->out_pos};
        ssize_t k = s_send(c, &iov, 1);
        if (k <= 0)
            return (int) k;
        c->out_pos += (size_t) k;
    }
    c->out_pos = c->out_len = 0;
    return 0;
}

static int
s_out_room(s_conn_t *c, size_t n)
{
    if (c->out_cap - c->out_len >= n)
        return 0;
    size_t cap = c->out_len + n;
    uint8_t *p = realloc(c->out, cap);
    if (!p)
        return -1;
    c->out = p;
    c->out_cap = cap;
    return 0;
}

/* Read into c->in up to c->in_need bytes: 1 when they are all there, 0
   when more are to come, -1 at the end of the stream or an error (errno
   0 for the end). */
static int
s_read_in(s_conn_t *c)
{
    while (c->in_len < c->in_need) {
        ssize_t k = s_recv(c, c->in + c->in_len, c->in_need - c->in_len);
        if (k <= 0)
            return (int) k;
        c->in_len += (size_t) k;
    }
    return 1;
}

/* --- the source ------------------------------------------------------------------------- */

static void
s_refuse(exec_bulk_t *b, s_conn_t *c, const char *why)
{
    util_complain(&b->complain, "bulk port %d: refused the connection from %s: %s", b->port,
                  c->peer, why);
    s_kill(b, c);
}

/* A connection that was served ends: it goes, then the transfer's holder
   hears, once a chunk went (before that, the puller may still read the
   object over CURVE under the same OPEN). */
static void
s_src_end(exec_bulk_t *b, s_conn_t *c)
{
    uint64_t xid = c->key.xid;
    bool over = c->st >= SS_STREAM && c->ctr_out > 0;
    s_kill(b, c);
    if (over && b->fns.over)
        b->fns.over(b->arg, xid);
}

static void
s_accept(exec_bulk_t *b)
{
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        int fd = accept4(b->listen->fd, (struct sockaddr *) &sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        char peer[64];
        net_tcp_name(&sa, peer, sizeof peer);
        int unsaid = 0;
        for (s_conn_t *c = b->conns; c; c = c->next)
            unsaid += !c->dead && c->kind == K_SRC && c->st <= SS_REQ;
        s_conn_t *c = unsaid < S_UNSAID_MAX ? s_conn_new(b, K_SRC, fd) : NULL;
        if (!c) {
            util_complain(&b->complain, "bulk port %d: refused the connection from %s: %d others "
                          "have not said who they are yet", b->port, peer, unsaid);
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        exec_bulk_tune_sock(&b->tune, fd, true);
        snprintf(c->peer, sizeof c->peer, "%s", peer);
        c->st = SS_HELLO;
        c->in_need = S_HELLO;
        c->deadline_ms = util_mono_ms() + S_SAY_MS;
        s_want(b, c, EPOLLIN);
    }
}

/* Chunks into free slots, to be sealed, while the puller's credit lasts:
   each takes the next offset and record number. -1 when there is no
   memory for a slot. */
static int
s_src_fill(exec_bulk_t *b, s_conn_t *c)
{
    while (c->s_n < S_SLOTS && c->st == SS_STREAM && c->credit > 0 && c->off < c->size &&
           !(c->hold && c->ctr_out > 0)) {
        s_slot_t *sl = &c->slot[(c->s_head + c->s_n) % S_SLOTS];
        uint32_t len = c->size - c->off < c->chunk ? (uint32_t) (c->size - c->off) : c->chunk;
        size_t need = S_REC + (size_t) LZ4_compressBound((int) len);
        if (sl->cap < need) {
            uint8_t *p = realloc(sl->buf, need);
            if (!p)
                return -1;
            sl->buf = p;
            sl->cap = need;
        }
        sl->key = &c->key;
        sl->obj = (uint8_t *) c->bytes;
        sl->prof = c->prof;
        sl->off = c->off;
        sl->len = len;
        sl->ctr = c->ctr_out++;
        sl->pos = 0;
        sl->seen = false;
        sl->spoil = c->spoil && (sl->ctr == 1 || c->off + len == c->size);
        c->spoil &= !sl->spoil;
        sl->p_crypt = sl->p_lz4 = sl->p_cpu = 0;
        sl->p_flt = 0;
        sl->job.run = exec_bulk_seal_run;
        c->off += len;
        c->credit--;
        c->s_n++;
        s_push(b, c, sl);
    }
    return 0;
}

/* The oldest slot, when it is sealed: counted, tampered with by the test. */
static s_slot_t *
s_src_ready(exec_bulk_t *b, s_conn_t *c)
{
    if (c->s_n == 0)
        return NULL;
    s_slot_t *sl = &c->slot[c->s_head];
    if (!sl->seen) {
        if (!exec_bulk_pool_done(b->pool, &sl->job))
            return NULL;
        sl->seen = true;
        c->pf.crypt += sl->p_crypt, c->pf.lz4 += sl->p_lz4, c->pf.cpu += sl->p_cpu;
        c->pf.flt += sl->p_flt;
        if (c->flip && (sl->ctr == 1 || sl->off + sl->len == c->size)) {
            if (sl->body != sl->buf + S_REC) /* not the store's bytes: a copy */
                sl->body = memcpy(sl->buf + S_REC, sl->body, sl->clen);
            sl->buf[S_REC + sl->clen / 2] ^= 0x40; /* the test's tampering, after the seal */
            c->flip = false;
            log_warn("bulk: flipped a byte of the chunk at %llu sent to %s (LUX_TEST_BULK_FLIP)",
                     (unsigned long long) sl->off, c->peer);
        }
    }
    return sl;
}

/* Send sealed slots in order, up to S_TURN_BYTES: 0, or -1 when the
   connection broke. */
static int
s_src_send(exec_bulk_t *b, s_conn_t *c)
{
    size_t moved = 0;
    s_slot_t *sl;
    while (moved < S_TURN_BYTES && (sl = s_src_ready(b, c))) {
        size_t all = S_REC + sl->clen;
        while (sl->pos < all) {
            /* the header and tag from the slot, the body from where it lies */
            struct iovec iov[2] = {{sl->buf + sl->pos, S_REC - sl->pos},
                                   {(uint8_t *) sl->body, sl->clen}};
            if (sl->pos >= S_REC)
                iov[1].iov_base = (uint8_t *) sl->body + (sl->pos - S_REC),
                iov[1].iov_len = all - sl->pos;
            ssize_t k = s_send(c, iov + (sl->pos >= S_REC), 2 - (sl->pos >= S_REC));
            if (k <= 0)
                return (int) k;
            sl->pos += (size_t) k;
            moved += (size_t) k;
        }
        c->sent += sl->len;
        c->s_head = (c->s_head + 1) % S_SLOTS;
        c->s_n--;
        b->fns.sent(b->arg, c->key.xid);
        if (c->hold && !c->held) { /* said once its first chunk went */
            log_warn("bulk: holding transfer %016llx to %s after its first chunk while %s "
                     "exists (LUX_TEST_BULK_HOLD)", (unsigned long long) c->key.xid, c->peer,
                     b->hold_file);
            c->held = true;
        }
        if (s_src_fill(b, c))
            return errno = ENOMEM, -1;
    }
    return 0;
}

static void
s_src_want(exec_bulk_t *b, s_conn_t *c)
{
    /* writable matters only when the oldest slot is sealed; until then
       the pool's eventfd says when it is (one sealed in this thread
       says nothing) */
    bool out = c->s_n > 0 && (c->slot[c->s_head].seen ||
                              exec_bulk_pool_done(b->pool, &c->slot[c->s_head].job));
    s_want(b, c, EPOLLIN | (out ? EPOLLOUT : 0));
}

/* The hello and the request: the transfer named, the key proved. */
static void
s_src_say(exec_bulk_t *b, s_conn_t *c)
{
    int r = s_read_in(c);
    if (r < 0) {
        s_refuse(b, c, "it closed before saying who it is");
        return;
    }
    if (r == 0)
        return;
    char why[300];
    if (c->st == SS_HELLO) {
        if (memcmp(c->in, "LUXB", 4) != 0 || c->in[4] != 1) {
            s_refuse(b, c, "it does not open with a bulk hello");
            return;
        }
        c->key.xid = exec_bulk_u64(c->in + 8);
        c->st = SS_REQ;
        c->in_len = 0;
        c->in_need = S_REC + S_REQ_LEN;
        if ((r = s_read_in(c)) <= 0) {
            if (r < 0)
                s_refuse(b, c, "it closed before its request");
            return;
        }
    }
    /* the request: the right type and length, sealed with the key */
    uint8_t *h = c->in;
    if (h[0] != R_REQ || exec_bulk_u32(h + 4) != S_REQ_LEN || exec_bulk_u32(h + 8) != S_REQ_LEN) {
        s_refuse(b, c, "its first record is not a request");
        return;
    }
    exec_bulk_key_t k;
    const uint8_t *bytes = NULL;
    uint64_t size = 0;
    uint8_t req[S_REQ_LEN];
    memcpy(req, h + S_REC, S_REQ_LEN);
    /* what the hello names must be a transfer handed out; its key opens
       the request; only then is the transfer taken */
    int rc = b->fns.serve(b->arg, c->key.xid, NULL, &k, NULL, NULL);
    if (rc) {
        snprintf(why, sizeof why, "%s", lux_errmsg());
        s_refuse(b, c, why);
        return;
    }
    if (!exec_bulk_open(&c->dec, &k, 1, 0, h, req, S_REQ_LEN, h + S_HDR)) {
        exec_bulk_key_wipe(&k);
        snprintf(why, sizeof why, "its request does not open with the key of transfer %016llx "
                 "(a wrong key, or not the puller it was handed to)",
                 (unsigned long long) c->key.xid);
        s_refuse(b, c, why);
        return;
    }
    if ((rc = b->fns.serve(b->arg, c->key.xid, req, &k, &bytes, &size))) {
        exec_bulk_key_wipe(&k);
        snprintf(why, sizeof why, "%s", lux_errmsg());
        s_refuse(b, c, why);
        return;
    }
    c->key = k;
    exec_bulk_key_wipe(&k);
    c->on_loop = exec_bulk_tune_on_loop(&b->tune, true, c->key.cipher);
    c->ctr_in = 1;
    c->bytes = bytes;
    c->size = size;
    c->chunk = exec_bulk_u32(req + LUX_REF_LEN);
    c->credit = exec_bulk_u32(req + LUX_REF_LEN + 4);
    if (c->chunk < S_CHUNK_MIN || c->chunk > S_CHUNK_MAX || c->credit == 0 || c->credit > 4096) {
        s_refuse(b, c, "its request asks for chunks of a size or number this node does not send");
        return;
    }
    struct stat st;
    if (b->flip_file && stat(b->flip_file, &st) == 0 && unlink(b->flip_file) == 0)
        c->flip = true;
    if (b->spoil_file && stat(b->spoil_file, &st) == 0 && unlink(b->spoil_file) == 0) {
        c->spoil = true;
        log_warn("bulk: a byte of a chunk to %s altered before sealing (LUX_TEST_BULK_SPOIL)",
                 c->peer);
    }
    c->hold = b->hold_file && stat(b->hold_file, &st) == 0;
    c->st = SS_STREAM;
    c->deadline_ms = util_mono_ms() + S_SILENT_MS;
    c->pf.start = exec_bulk_t0(c->prof);
    if (c->prof)
        getrusage(RUSAGE_THREAD, &c->pf.ru);
    c->in_len = 0;
    c->in_need = S_REC + 4;
    log_debug("bulk: streaming transfer %016llx (%llu bytes) to %s",
              (unsigned long long) c->key.xid, (unsigned long long) size, c->peer);
}

/* A streaming connection: credits read, chunks sent. */
static void
s_src_stream(exec_bulk_t *b, s_conn_t *c)
{
    c->pf.turns++;
    for (;;) {
        int r = s_read_in(c);
        if (r < 0) { /* the puller went: it has all, or gave up */
            if (c->sent < c->size)
                log_info("bulk: %s closed transfer %016llx after %llu of %llu bytes", c->peer,
                         (unsigned long long) c->key.xid, (unsigned long long) c->sent,
                         (unsigned long long) c->size);
            s_src_end(b, c);
            return;
        }
        if (r == 0)
            break;
        uint8_t *h = c->in;
        if (c->st != SS_STREAM || h[0] != R_CREDIT || exec_bulk_u32(h + 4) != 4 || exec_bulk_u32(h + 8) != 4 ||
            !exec_bulk_open(&c->dec, &c->key, 1, c->ctr_in, h, h + S_REC, 4, h + S_HDR)) {
            util_complain(&b->complain, "bulk port %d: ended transfer %016llx to %s: a record "
                          "after its request that is not its credit", b->port,
                          (unsigned long long) c->key.xid, c->peer);
            s_src_end(b, c);
            return;
        }
        c->ctr_in++;
        c->deadline_ms = util_mono_ms() + S_SILENT_MS; /* the puller lives */
        uint32_t n = exec_bulk_u32(h + S_REC);
        c->credit = c->credit + n > 4096 ? 4096 : c->credit + n;
        c->in_len = 0;
    }
    if (s_src_fill(b, c) || s_src_send(b, c)) {
        log_info("bulk: the connection to %s broke during transfer %016llx: %s", c->peer,
                 (unsigned long long) c->key.xid, strerror(errno));
        s_src_end(b, c);
        return;
    }
    if (c->st == SS_STREAM && c->off >= c->size && c->s_n == 0) {
        c->st = SS_DRAIN; /* all sent: wait for the puller to close (a close now could reset) */
        c->deadline_ms = util_mono_ms() + S_SAY_MS;
    }
    s_src_want(b, c);
}

static void
s_src_fired(exec_bulk_t *b, s_conn_t *c, uint32_t ev)
{
    (void) ev;
    if (c->st <= SS_REQ) {
        s_src_say(b, c);
        if (c->dead || c->st <= SS_REQ)
            return;
    }
    if (c->st == SS_DRAIN) {
        uint8_t junk[256];
        ssize_t k;
        while ((k = recv(c->fd, junk, sizeof junk, MSG_DONTWAIT)) > 0)
            ;
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            s_src_end(b, c);
        else
            s_want(b, c, EPOLLIN);
        return;
    }
    s_src_stream(b, c);
}

void
exec_bulk_drop(exec_bulk_t *self, uint64_t xid)
{
    if (!self)
        return;
    /* s_kill at depth 0 frees what it ends (s_sweep): not while this walks
       the list (it read a freed connection's link: t/6040) */
    self->depth++;
    for (s_conn_t *c = self->conns; c; c = c->next)
        if (!c->dead && c->kind == K_SRC && c->st >= SS_STREAM && c->key.xid == xid)
            s_kill(self, c);
    if (--self->depth == 0)
        s_sweep(self);
}

/* --- the puller ------------------------------------------------------------------------- */

/* The pull ends: the connection goes first, then the caller hears. */
static void
s_pull_end(exec_bulk_t *b, s_conn_t *c, int rc, bool fallback)
{
    void *who = c->who;
    uint8_t fp[16];
    bool have = rc == 0 && c->fpq.fp; /* every chunk is counted, so hashed */
    if (have)
        util_fp_stream_end(c->fpq.fp, fp);
    s_kill(b, c);
    b->fns.ended(b->arg, who, rc, fallback, have ? fp : NULL);
}

/* Hand back credit for the chunks opened since the last (half a window
   at a time). */
static int
s_credit(s_conn_t *c, bool all)
{
    uint32_t at = c->window > 1 ? (uint32_t) c->window / 2 : 1;
    if (c->unthanked == 0 || (!all && c->unthanked < at))
        return 0;
    if (s_out_room(c, S_REC + 4))
        return -1;
    uint8_t *rec = c->out + c->out_len, n[4];
    for (int i = 0; i < 4; i++)
        n[i] = (uint8_t) (c->unthanked >> (8 * i));
    exec_bulk_hdr(rec, R_CREDIT, 0, 4, 4, 0);
    exec_bulk_seal(&c->enc, &c->key, 1, c->ctr_out++, rec, rec + S_REC, n, 4, rec + S_HDR);
    c->out_len += S_REC + 4;
    c->unthanked = 0;
    return s_flush(c);
}

static void
s_pull_fail(exec_bulk_t *b, s_conn_t *c, int rc, const char *fmt, const char *arg)
{
    util_err(rc, fmt, c->peer, arg ? arg : "");
    s_pull_end(b, c, rc, false);
}

/* A record's header came: check it, and say where its body goes (into
   the block where it belongs, or a compressed one into the next slot's
   buffer). */
static int
s_pull_hdr(exec_bulk_t *b, s_conn_t *c)
{
    const uint8_t *h = c->in;
    uint32_t plen = exec_bulk_u32(h + 4), clen = exec_bulk_u32(h + 8);
    uint64_t off = exec_bulk_u64(h + 12);
    if (h[0] != R_CHUNK || off != c->off || plen == 0 || plen > c->size - c->off ||
        plen > c->chunk || (h[1] == 0 && clen != plen) || h[1] > 1 ||
        (h[1] == 1 && clen > c->zcap)) {
        char what[96];
        snprintf(what, sizeof what, "%llu (%u bytes, codec %u)", (unsigned long long) off, plen,
                 h[1]);
        s_pull_fail(b, c, LUX_EPROTO, "the source %s sent a chunk that does not fit the object "
                    "at %s", what);
        return -1;
    }
    s_slot_t *sl = &c->slot[(c->s_head + c->s_n) % S_SLOTS];
    if (h[1] == 1 && sl->cap < c->zcap) {
        uint8_t *p = realloc(sl->buf, c->zcap);
        if (!p) {
            s_pull_fail(b, c, LUX_ENOMEM, "the pull from %s: out of memory for a compressed "
                        "chunk%s", "");
            return -1;
        }
        sl->buf = p;
        sl->cap = c->zcap;
    }
    c->body = h[1] ? sl->buf : c->dst + off;
    c->st = PS_BODY;
    return 0;
}

/* A record's body came: to a pool thread, to be opened where it lies
   (exec_bulk_open_run); the loop goes on receiving the next. */
static void
s_pull_body(exec_bulk_t *b, s_conn_t *c)
{
    const uint8_t *h = c->in;
    s_slot_t *sl = &c->slot[(c->s_head + c->s_n) % S_SLOTS];
    memcpy(sl->hdr, h, S_REC);
    sl->key = &c->key;
    sl->obj = c->dst;
    sl->body = c->body;
    sl->off = exec_bulk_u64(h + 12);
    sl->len = exec_bulk_u32(h + 4);
    sl->clen = exec_bulk_u32(h + 8);
    sl->codec = h[1];
    sl->ctr = c->ctr_in++;
    sl->fail = &c->fail;
    sl->fpq = c->fpq.fp ? &c->fpq : NULL;
    atomic_store_explicit(&sl->hashed, false, memory_order_relaxed);
    sl->prof = c->prof;
    sl->seen = false;
    sl->p_crypt = sl->p_lz4 = sl->p_cpu = sl->p_fp = 0;
    sl->p_flt = 0;
    sl->job.run = exec_bulk_open_run;
    c->off += sl->len;
    c->s_n++;
    c->st = PS_HDR;
    c->in_len = 0;
    c->in_need = S_REC;
    s_push(b, c, sl);
}

/* The oldest slots whose records are opened, in order: counted and
   credited, or the pull fails at the first that did not open. true
   when the pull ended (whole, or failed). */
static bool
s_pull_reap(exec_bulk_t *b, s_conn_t *c)
{
    while (c->s_n > 0) {
        s_slot_t *sl = &c->slot[c->s_head];
        if (!exec_bulk_pool_done(b->pool, &sl->job))
            return false;
        if (!exec_bulk_fpq_hashed(sl))
            return false; /* the thread hashing it says so when done (the pool's eventfd) */
        sl->seen = true;
        c->pf.crypt += sl->p_crypt, c->pf.lz4 += sl->p_lz4, c->pf.cpu += sl->p_cpu;
        c->pf.flt += sl->p_flt, c->pf.fp += sl->p_fp;
        if (sl->rc) { /* the first that failed comes before any it stopped (AFTER_BAD) */
            char where[64];
            snprintf(where, sizeof where, "%llu", (unsigned long long) sl->off);
            if (sl->rc == EXEC_BULK_BAD_LZ4)
                s_pull_fail(b, c, LUX_ECORRUPT, "the compressed chunk at offset %2$s from %1$s "
                            "does not decompress", where);
            else
                s_pull_fail(b, c, LUX_ECORRUPT, "the chunk at offset %2$s from %1$s failed "
                            "authentication (altered, replayed or reordered on the way, or not "
                            "sealed with this transfer's key)", where);
            return true;
        }
        c->s_head = (c->s_head + 1) % S_SLOTS;
        c->s_n--;
        c->got += sl->len;
        c->unthanked++;
        if (c->got == c->size) {
            s_pull_end(b, c, 0, false);
            return true;
        }
        if (s_credit(c, false)) {
            s_pull_fail(b, c, LUX_EDEAD, "the bulk connection to %s broke while asking for "
                        "more%s", NULL);
            return true;
        }
    }
    return false;
}

/* The connection's bytes: headers and bodies received in order while a
   slot is free, bodies handed to the pool, opened ones reaped. */
static void
s_pull_read(exec_bulk_t *b, s_conn_t *c)
{
    size_t moved = 0;
    uint64_t got = c->got;
    void *who = c->who;
    c->pf.turns++;
    while (moved < S_TURN_BYTES && !c->dead) {
        if (s_pull_reap(b, c))
            return;
        if (c->s_n == S_SLOTS)
            break; /* every slot is being opened: the pool's eventfd says when one is done */
        if (c->st == PS_HDR) {
            int r = s_read_in(c);
            if (r == 0)
                break;
            if (r < 0) {
                const char *why = errno ? strerror(errno) : "it closed the connection";
                if (c->off == 0) {
                    util_err(LUX_EAUTH, "the source %s ended its bulk connection before any "
                             "chunk (%s: it refused the request, or is gone)", c->peer, why);
                    s_pull_end(b, c, LUX_EAUTH, true);
                } else {
                    char what[160];
                    snprintf(what, sizeof what, "%llu of %llu bytes (%s)",
                             (unsigned long long) c->off, (unsigned long long) c->size, why);
                    s_pull_fail(b, c, LUX_EDEAD, "the bulk connection to %s ended after %s",
                                what);
                }
                return;
            }
            if (s_pull_hdr(b, c))
                return;
        }
        const uint8_t *h = c->in;
        uint32_t clen = exec_bulk_u32(h + 8);
        size_t have = c->in_len - S_REC; /* body bytes read so far (in_len counts past the header) */
        while (have < clen) {
            ssize_t k = s_recv(c, c->body + have, clen - have);
            if (k == 0)
                break;
            if (k < 0) {
                char what[160];
                snprintf(what, sizeof what, "%llu of %llu bytes (%s)",
                         (unsigned long long) c->off, (unsigned long long) c->size,
                         errno ? strerror(errno) : "it closed the connection");
                s_pull_fail(b, c, LUX_EDEAD, "the bulk connection to %s ended after %s", what);
                return;
            }
            have += (size_t) k;
            moved += (size_t) k;
        }
        c->in_len = S_REC + have;
        if (have < clen)
            break;
        s_pull_body(b, c);
    }
    if (!c->dead && s_pull_reap(b, c)) /* those run at once (no threads) */
        return;
    if (c->got != got) /* bytes received but not yet opened are not news */
        b->fns.moved(b->arg, who, c->got);
}

/* Readable matters only while a slot is free (else the pool's eventfd
   says when one is: level-triggered, a readable socket would spin). */
static void
s_pull_want(exec_bulk_t *b, s_conn_t *c)
{
    s_want(b, c, (c->s_n < S_SLOTS ? EPOLLIN : 0) | (c->out_pos < c->out_len ? EPOLLOUT : 0));
}

static void
s_pull_fired(exec_bulk_t *b, s_conn_t *c, uint32_t ev)
{
    if (c->st == PS_CONNECT) {
        int err = 0;
        socklen_t len = sizeof err;
        if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            util_err(LUX_EIO, "cannot connect to the bulk port %s: %s", c->peer, strerror(err));
            s_pull_end(b, c, LUX_EIO, true);
            return;
        }
        c->st = PS_HDR;
        c->in_len = 0;
        c->in_need = S_REC;
    }
    if (s_flush(c)) {
        if (c->off == 0) {
            util_err(LUX_EAUTH, "the bulk connection to %s broke before any chunk: %s", c->peer,
                     strerror(errno));
            s_pull_end(b, c, LUX_EAUTH, true);
        } else {
            s_pull_fail(b, c, LUX_EDEAD, "the bulk connection to %s broke%s", "");
        }
        return;
    }
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
        s_pull_read(b, c);
    if (!c->dead)
        s_pull_want(b, c);
}

exec_bulk_pull_t *
exec_bulk_pull_start(exec_bulk_t *self, const char *host, int port, const exec_bulk_key_t *key,
                     const uint8_t id[LUX_REF_LEN], uint8_t *dst, uint64_t size, uint32_t chunk,
                     int window, void *who)
{
    int err, fd = net_tcp_dial(host, port, self->local, &err);
    if (fd < 0) {
        util_err_ctx(LUX_EIO, "bulk port");
        return NULL;
    }
    s_conn_t *c = s_conn_new(self, K_PULL, fd);
    size_t zcap = (size_t) LZ4_compressBound((int) chunk);
    if (!c || s_out_room(c, S_HELLO + S_REC + S_REQ_LEN)) {
        util_err(LUX_ENOMEM, "bulk connection to %s: out of memory", host);
        if (c)
            s_kill(self, c);
        else
            close(fd);
        return NULL;
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
    exec_bulk_tune_sock(&self->tune, fd, false);
    c->on_loop = exec_bulk_tune_on_loop(&self->tune, false, key->cipher);
    c->key = *key;
    c->who = who;
    memcpy(c->id, id, LUX_REF_LEN);
    c->dst = dst;
    c->size = size;
    c->chunk = chunk;
    c->window = window;
    c->zcap = zcap;
    atomic_init(&c->fail, UINT64_MAX);
    if (exec_bulk_fpq_init(&c->fpq, c->slot, S_SLOTS)) /* then the check hashes the block */
        log_warn("bulk pull from %s: %s", c->peer, lux_errmsg());
    /* the hello and the request, sent once connected */
    uint8_t *o = c->out;
    memcpy(o, "LUXB\1\0\0\0", 8);
    for (int i = 0; i < 8; i++)
        o[8 + i] = (uint8_t) (key->xid >> (8 * i));
    uint8_t *rec = o + S_HELLO, req[S_REQ_LEN];
    memcpy(req, id, LUX_REF_LEN);
    for (int i = 0; i < 4; i++) {
        req[LUX_REF_LEN + i] = (uint8_t) (chunk >> (8 * i));
        req[LUX_REF_LEN + 4 + i] = (uint8_t) ((uint32_t) window >> (8 * i));
    }
    exec_bulk_hdr(rec, R_REQ, 0, S_REQ_LEN, S_REQ_LEN, 0);
    exec_bulk_key_t k = *key;
    struct stat st;
    if (self->badkey_file && stat(self->badkey_file, &st) == 0 && unlink(self->badkey_file) == 0) {
        k.key[0] ^= 1; /* the test's wrong key */
        log_warn("bulk: a wrong key for the request to %s (LUX_TEST_BULK_BADKEY)", c->peer);
    }
    exec_bulk_seal(&c->enc, &k, 1, c->ctr_out++, rec, rec + S_REC, req, S_REQ_LEN, rec + S_HDR);
    exec_bulk_key_wipe(&k);
    c->out_len = S_HELLO + S_REC + S_REQ_LEN;
    c->st = PS_CONNECT;
    c->pf.start = exec_bulk_t0(c->prof);
    if (c->prof)
        getrusage(RUSAGE_THREAD, &c->pf.ru);
    if (err) {
        c->st = PS_FAILED; /* told on the next tick, never from in here */
        c->fail_rc = LUX_EIO;
        snprintf(c->fail_why, sizeof c->fail_why, "cannot connect to the bulk port %s: %s",
                 c->peer, strerror(err));
    } else {
        s_want(self, c, EPOLLOUT);
    }
    return (exec_bulk_pull_t *) c;
}

void
exec_bulk_pull_stop(exec_bulk_t *self, exec_bulk_pull_t **pull_p)
{
    if (!pull_p || !*pull_p)
        return;
    s_kill(self, (s_conn_t *) *pull_p);
    *pull_p = NULL;
}

/* --- the part --------------------------------------------------------------------------- */

static s_conn_t *
s_listen(exec_bulk_t *b, const char *host, int port)
{
    const char *test = getenv("LUX_TEST_BULK_REFUSE"); /* bound, never listening: refused */
    bool refuse = test && *test == '1';
    int fd = net_tcp_listen(host, port, !refuse);
    if (fd < 0) {
        log_warn("bulk port %s; objects go out over CURVE only", lux_errmsg());
        return NULL;
    }
    s_conn_t *c = s_conn_new(b, K_LISTEN, fd);
    if (!c) {
        close(fd);
        return NULL;
    }
    if (!refuse)
        s_want(b, c, EPOLLIN);
    log_info("bulk port at %s:%d%s", host, port, refuse ? " (LUX_TEST_BULK_REFUSE: not listening)"
                                                        : "");
    return c;
}

static char *
s_env_dup(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strdup(v) : NULL;
}

exec_bulk_t *
exec_bulk_new(const char *host, int port, const char *local, const exec_bulk_fns_t *fns,
              void *arg)
{
    if (sodium_init() < 0) {
        util_err(LUX_EIO, "libsodium cannot start");
        return NULL;
    }
    exec_bulk_t *b = calloc(1, sizeof *b);
    if (!b) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    b->fns = *fns;
    b->arg = arg;
    util_complain_init(&b->complain, UTIL_COMPLAIN_MS);
    if ((b->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        util_err(LUX_EIO, "bulk: epoll_create1: %s", strerror(errno));
        free(b);
        return NULL;
    }
    b->flip_file = s_env_dup("LUX_TEST_BULK_FLIP");
    b->spoil_file = s_env_dup("LUX_TEST_BULK_SPOIL");
    b->badkey_file = s_env_dup("LUX_TEST_BULK_BADKEY");
    b->hold_file = s_env_dup("LUX_TEST_BULK_HOLD");
    const char *prof = getenv("LUX_XFER_PROFILE");
    b->profile = prof && *prof == '1';
    exec_bulk_tune_read(&b->tune);
    b->local = local && *local ? strdup(local) : NULL;
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL}; /* NULL: the pool */
    if (!(b->pool = exec_bulk_pool_new(-1)) ||
        epoll_ctl(b->epfd, EPOLL_CTL_ADD, exec_bulk_pool_fd(b->pool), &e) < 0) {
        util_err_ctx(LUX_EIO, "bulk: its threads");
        exec_bulk_destroy(&b);
        return NULL;
    }
    if (host && port > 0 && (b->listen = s_listen(b, host, port)))
        b->port = port;
    return b;
}

void
exec_bulk_destroy(exec_bulk_t **self_p)
{
    exec_bulk_t *b = self_p ? *self_p : NULL;
    if (!b)
        return;
    b->depth = 1; /* s_kill frees nothing while the list is walked (t/6040) */
    for (s_conn_t *c = b->conns; c; c = c->next)
        s_kill(b, c);
    b->depth = 0;
    s_sweep(b);
    exec_bulk_pool_destroy(&b->pool);
    close(b->epfd);
    free(b->flip_file);
    free(b->spoil_file);
    free(b->badkey_file);
    free(b->hold_file);
    free(b->local);
    free(b);
    *self_p = NULL;
}

int
exec_bulk_port(exec_bulk_t *self)
{
    return self ? self->port : 0;
}

int
exec_bulk_fd(exec_bulk_t *self)
{
    return self ? self->epfd : -1;
}

void
exec_bulk_fired(exec_bulk_t *self)
{
    struct epoll_event evs[32];
    self->depth++;
    int n = epoll_wait(self->epfd, evs, 32, 0);
    for (int i = 0; i < n; i++) {
        s_conn_t *c = evs[i].data.ptr;
        if (!c) { /* chunks were sealed or opened: send them, count them */
            exec_bulk_pool_clear(self->pool);
            for (s_conn_t *s = self->conns; s; s = s->next)
                if (!s->dead && s->kind == K_SRC && s->st == SS_STREAM && s->s_n > 0)
                    s_src_stream(self, s);
                else if (!s->dead && s->kind == K_PULL && s->s_n > 0)
                    s_pull_fired(self, s, EPOLLIN);
            continue;
        }
        if (c->dead)
            continue;
        if (c->kind == K_LISTEN)
            s_accept(self);
        else if (c->kind == K_SRC)
            s_src_fired(self, c, evs[i].events);
        else
            s_pull_fired(self, c, evs[i].events);
    }
    self->depth--;
    s_sweep(self);
}

void
exec_bulk_tick(exec_bulk_t *self)
{
    if (!self)
        return;
    int64_t now = util_mono_ms();
    self->depth++;
    for (s_conn_t *c = self->conns; c; c = c->next) {
        if (c->dead)
            continue;
        if (c->kind == K_PULL && c->st == PS_FAILED) {
            util_err(c->fail_rc, "%s", c->fail_why);
            s_pull_end(self, c, c->fail_rc, true);
        } else if (c->kind == K_SRC && c->hold) {
            struct stat st;
            c->deadline_ms = now + S_SILENT_MS; /* held by the test, not silent */
            if (stat(self->hold_file, &st) != 0) {
                c->hold = false;
                log_info("bulk: transfer %016llx to %s goes on (LUX_TEST_BULK_HOLD is gone)",
                         (unsigned long long) c->key.xid, c->peer);
                s_src_stream(self, c);
            }
        } else if (c->kind == K_SRC && now > c->deadline_ms) {
            if (c->st == SS_DRAIN) {
                s_src_end(self, c);
            } else if (c->st == SS_STREAM) {
                log_warn("bulk: transfer %016llx to %s moved nothing for %d s (the puller is "
                         "stopped, or cut off without a close): ended after %llu of %llu bytes",
                         (unsigned long long) c->key.xid, c->peer, S_SILENT_MS / 1000,
                         (unsigned long long) c->sent, (unsigned long long) c->size);
                s_src_end(self, c);
            } else {
                s_refuse(self, c, "it did not say who it is within 10 s");
            }
        }
    }
    self->depth--;
    s_sweep(self);
}
