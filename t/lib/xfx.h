/*  xfx - fixtures for the tests of objects between nodes (t/6011, t/6030,
    t/6031): the objects' bytes (noise or text, the same every time), a
    driver on a node that puts them and frees them when told, drivers that
    get one object and say how it went, a node's log read line by line,
    and a node's store use as `lux status` reports it. */
#ifndef XFX_H_INCLUDED
#define XFX_H_INCLUDED

#include "lux.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* An object to put: its size, and noise of seed or (text) lines of text. */
typedef struct {
    size_t size;
    bool text;
    uint64_t seed;
} xfx_obj_t;

/* The n bytes of o into p. */
void xfx_fill(const xfx_obj_t *o, uint8_t *p, size_t n);
/* Whether the n bytes at p are o's. */
bool xfx_same(const xfx_obj_t *o, const void *p, size_t n);

/* A driver that put objects on a node and holds them until told. */
typedef struct {
    pid_t pid;
    int to, from;   /* its commands; its answers */
    int n;
} xfx_putter_t;

/* Start a driver on the node at dir that puts the n objects objs, their
   refs into refs (and their hex into hex when not NULL, 2 * LUX_REF_LEN
   + 1 each); bails out when it cannot. */
void xfx_put(xfx_putter_t *d, const char *dir, const xfx_obj_t *objs, int n, lux_ref_t *refs,
             char (*hex)[2 * LUX_REF_LEN + 1]);
/* The driver frees its object k (of the n it put) and says it did: 0, or
   -1 when it is gone. */
int xfx_put_free(xfx_putter_t *d, int k);
/* The driver leaves (its puts go with it) and is waited for. */
void xfx_put_end(xfx_putter_t *d);

/* A driver on the node at dir that gets ref (waiting up to 120 s); its
   answer on *fd for xfx_got. */
pid_t xfx_get_spawn(const char *dir, const lux_ref_t *ref, int *fd);
/* That driver's code, its message into msg; the driver is waited for. */
int xfx_got(int fd, pid_t pid, char *msg, size_t n);

/* How many lines of the log of the node (or head, when head) at dir hold
   a and b (b may be NULL). */
int xfx_log_lines(const char *dir, bool head, const char *a, const char *b);
/* Wait (ms at most) until that log has more than n such lines. */
bool xfx_log_wait(const char *dir, bool head, const char *a, const char *b, int n, int ms);

/* The store bytes in use on the node at address (an IP) as the cluster
   whose head is at head_dir reports it (`lux status --json`); -1 when it
   does not say. */
int64_t xfx_store_used(const char *head_dir, const char *address);

#endif
