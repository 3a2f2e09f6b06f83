/* 3150-plumbing: the helpers every daemon shares, written once.
   - util_complain: at most one line per interval, per complainer (the
     node manager's used to live in a file-level static, so two nodes in
     one process silenced each other);
   - net_pipe: an actor's command pipe ends its loop on $TERM only;
   - net_raw: sockets polled by their descriptor lose no message, with
     or without a zloop: a new socket is read at once (its earlier
     messages gave no notice), a handler's -1 stops;
   - net_req: a routed message with a bad header is answered by an ERROR
     naming the cause, a good one is handed over decoded. */
#include "tap.h"
#include "lux.h"
#include "net/net_pipe.h"
#include "net/net_raw.h"
#include "net/net_req.h"
#include "util/util_complain.h"
#include "util/util_log.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

/* --- util_complain ------------------------------------------------------------------ */

static void
s_complain(void)
{
    util_complain_t a, b;
    util_complain_init(&a, 1000);
    util_complain_init(&b, 1000);
    ok(util_complain_at(&a, 5, "test: first of a"), "a first complaint is logged");
    ok(!util_complain_at(&a, 900, "test: second of a"), "a second within the interval is not");
    ok(util_complain_at(&b, 900, "test: first of b"), "another complainer is not silenced by it");
    is_int((int64_t) a.dropped, 1, "the one not logged is counted");
    ok(util_complain_at(&a, 1005, "test: third of a"), "once the interval passed, it logs again");
    util_complain_t z;
    util_complain_init(&z, 0);
    ok(util_complain_at(&z, 1, "x") && util_complain_at(&z, 1, "y"), "an interval of 0 logs all");
}

/* --- net_pipe ----------------------------------------------------------------------- */

static int
s_beat(zloop_t *loop, int id, void *arg)
{
    (void) loop;
    (void) id;
    (*(int *) arg)++;
    return 0;
}

/* net_pipe_on_term, then "STILL" back when it did not end the loop, so the
   test knows the message was read (no sleep standing in for that) */
static int
s_on_pipe(zloop_t *loop, zsock_t *pipe, void *arg)
{
    int rc = net_pipe_on_term(loop, pipe, arg);
    if (rc == 0)
        zstr_send(pipe, "STILL");
    return rc;
}

static void
s_pipe_actor(zsock_t *pipe, void *arg)
{
    int beats = 0;
    zloop_t *loop = zloop_new();
    zloop_reader(loop, pipe, s_on_pipe, NULL);
    zloop_timer(loop, 1, 0, s_beat, &beats);
    zsock_signal(pipe, 0);
    zloop_start(loop);
    zloop_destroy(&loop);
    *(int *) arg = 1; /* the loop ended */
}

static void
s_pipe(void)
{
    int ended = 0;
    zactor_t *a = zactor_new(s_pipe_actor, &ended);
    zstr_send(a, "HELLO"); /* not a command: ignored */
    zpoller_t *p = zpoller_new(a, NULL);
    char *still = zpoller_wait(p, 30000) == a ? zstr_recv(a) : NULL;
    zpoller_destroy(&p);
    ok(still && !ended, "a command other than $TERM leaves the loop running");
    zstr_free(&still);
    zactor_destroy(&a); /* sends $TERM and waits for the actor */
    ok(ended, "$TERM ends it");
}

/* --- net_raw -------------------------------------------------------------------------- */

typedef struct {
    int got;
    int stop_at; /* return -1 on this message's number */
} s_count_t;

static int
s_on_msg(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_count_t *c = arg;
    char *s = zstr_recv(sock);
    zstr_free(&s);
    return ++c->got == c->stop_at ? -1 : 0;
}

/* Wait up to 5 s for fd to be readable. */
static bool
s_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 5000) == 1;
}

static void
s_raw_by_hand(void)
{
    zsock_t *in = zsock_new_pair("@inproc://raw-hand"), *out = zsock_new_pair(">inproc://raw-hand");
    for (int i = 0; i < 3; i++)
        zstr_send(out, "before");
    zclock_sleep(10);
    s_count_t c = {0};
    net_raw_t *raw = net_raw_new(NULL, &c);
    int r = net_raw_add(raw, in, s_on_msg);
    is_int(r, 0, "the first socket takes slot 0");
    ok(net_raw_dirty(raw), "a new socket is dirty: what came before gave no notice");
    is_int(net_raw_settle(raw), 0, "settle");
    is_int(c.got, 3, "settling read the three messages sent before it was added");
    ok(!net_raw_dirty(raw), "and left it clean");
    zstr_send(out, "after");
    int tries = 0, rc = 0;
    while (c.got < 4 && tries++ < 50 && s_readable(net_raw_fd(raw, r)))
        rc = net_raw_fired(raw, net_raw_fd(raw, r));
    is_int(c.got, 4, "a message sent later wakes the descriptor and is read");
    is_int(rc, 0, "no handler said stop");
    c.stop_at = 5;
    zstr_send(out, "stop");
    zstr_send(out, "more");
    rc = 0;
    tries = 0;
    while (rc == 0 && tries++ < 50 && s_readable(net_raw_fd(raw, r)))
        rc = net_raw_fired(raw, net_raw_fd(raw, r));
    is_int(rc, -1, "a handler's -1 comes back");
    is_int(c.got, 5, "and nothing after it was read");
    net_raw_touch(raw, in);
    ok(net_raw_dirty(raw), "a touched socket is dirty");
    net_raw_on(raw, r, false);
    ok(!net_raw_dirty(raw), "a socket not polled is not");
    net_raw_destroy(&raw);
    ok(raw == NULL, "destroy nulls the pointer");
    net_raw_destroy(&raw);
    zsock_destroy(&out);
    zsock_destroy(&in);
}

typedef struct {
    zsock_t *out;
    int sent;
} s_sender_t;

static int
s_send_one(zloop_t *loop, int id, void *arg)
{
    s_sender_t *s = arg;
    zstr_send(s->out, "tick");
    s->sent++;
    return 0;
}

static int
s_give_up(zloop_t *loop, int id, void *arg)
{
    return -1;
}

static void
s_raw_zloop(void)
{
    zsock_t *in = zsock_new_pair("@inproc://raw-loop"), *out = zsock_new_pair(">inproc://raw-loop");
    zstr_send(out, "early");
    zloop_t *loop = zloop_new();
    s_count_t c = {.stop_at = 6};
    s_sender_t s = {out, 0};
    net_raw_t *raw = net_raw_new(loop, &c);
    ok(net_raw_add(raw, in, s_on_msg) == 0, "a socket joins a zloop's set");
    zloop_timer(loop, 2, 5, s_send_one, &s);
    zloop_timer(loop, 10000, 1, s_give_up, NULL); /* a hung test ends */
    net_raw_settle(raw);                          /* the early message */
    zloop_start(loop);
    is_int(c.got, 6, "the loop read every message and stopped on the handler's -1");
    net_raw_destroy(&raw);
    zloop_destroy(&loop);
    zsock_destroy(&out);
    zsock_destroy(&in);
}

/* --- net_req ------------------------------------------------------------------------- */

static void
s_req(void)
{
    zsock_t *router = zsock_new_router("@inproc://req"), *dealer = zsock_new_dealer(">inproc://req");
    zsock_set_rcvtimeo(router, 5000);
    zsock_set_rcvtimeo(dealer, 5000);
    util_complain_t c;
    util_complain_init(&c, 1000);
    net_req_t r;

    zstr_sendm(dealer, "not a header");
    zstr_send(dealer, "body");
    int rc = net_req_recv(&r, router, &c, "test", 7, 3);
    is_int(rc, LUX_EPROTO, "a bad header: LUX_EPROTO");
    net_req_done(&r);
    ok(r.rid == NULL && r.msg == NULL, "done destroys what it held");
    zmsg_t *e = zmsg_recv(dealer);
    zframe_t *hf = e ? zmsg_pop(e) : NULL, *body = e ? zmsg_pop(e) : NULL;
    net_hdr_t h = {0};
    ok(hf && net_hdr_decode(&h, hf) == 0 && h.type == NET_ERROR && h.shard == 7 && h.epoch == 3,
       "the sender got an ERROR naming the shard and epoch given");
    int code = 0;
    char text[256] = "";
    if (body)
        net_error_decode(body, &code, text, sizeof text);
    is_int(code, LUX_EPROTO, "with the header's error code");
    ok(text[0] != '\0', "and its cause (%s)", text);
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&e);

    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_PING, 2, 9)});
    zmsg_addstr(m, "b1");
    zmsg_addstr(m, "b2");
    zmsg_send(&m, dealer);
    rc = net_req_recv(&r, router, &c, "test", 7, 3);
    is_int(rc, 0, "a good message: 0");
    ok(r.h.type == NET_PING && r.h.shard == 2 && r.h.epoch == 9, "its header decoded");
    ok(r.rid && r.body && zframe_streq(r.body, "b1") && zmsg_size(r.msg) == 1,
       "routing ID, body, and the rest handed over");
    net_req_refuse(router, r.rid, 2, 9, LUX_ESHARD, 42, "wrong shard");
    net_req_done(&r);
    e = zmsg_recv(dealer);
    hf = e ? zmsg_pop(e) : NULL;
    body = e ? zmsg_pop(e) : NULL;
    zframe_t *req = e ? zmsg_pop(e) : NULL;
    code = 0;
    if (body)
        net_error_decode(body, &code, text, sizeof text);
    ok(code == LUX_ESHARD && strcmp(text, "wrong shard") == 0 && req && zframe_size(req) == 8,
       "a refusal carries its code, text and request");
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zframe_destroy(&req);
    zmsg_destroy(&e);
    zsock_destroy(&dealer);
    zsock_destroy(&router);
}

int
main(void)
{
    util_log_level = tap_verbose() ? UTIL_LOG_DEBUG : -1; /* the complaints above */
    s_complain();
    s_pipe();
    s_raw_by_hand();
    s_raw_zloop();
    s_req();
    return done_testing();
}
