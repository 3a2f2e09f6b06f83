/*  exec_bulk - the bulk data path of objects between nodes (issue 28,
    doc/DESIGN.md 7.3, doc/protocol.md 17.1): one plain TCP connection per
    pull, its chunks sealed with an AEAD under a key used for that one
    transfer, not encrypted by ZeroMQ's CURVE message by message.

    The key travels over CURVE: the source's answer to OPEN (exec_xfer.c,
    on the CURVE-authenticated node endpoint) hands the puller a fresh
    random key (32 bytes, libsodium randombytes), a transfer ID, the
    cipher and this node's bulk port (--port + EXEC_BULK_PORT_OFFSET). The
    puller connects there and opens with a hello naming the transfer, then
    a request sealed with the key; the source refuses any connection whose
    first request does not open with the key of a transfer it handed out
    and has not yet served, so an unauthenticated peer gets nothing and
    makes the node do no work beyond reading and checking 80 bytes.

    Records, in both directions (little-endian):
        hello (puller, plain):  "LUXB" | version u8 (1) | 0 [3] | xid u64
        record:                 type u8 | codec u8 | 0 u16 | plen u32 |
                                clen u32 | off u64 | tag [16] | clen bytes
    type 1 REQ (puller: id [20], chunk u32, window u32), 2 CREDIT (puller:
    n u32, more chunks it has room for), 3 CHUNK (source: the object's
    bytes at off, plen of them, lz4-compressed to clen when codec is 1).
    Each record's bytes are sealed (exec_bulk_rec.c: AES-256-GCM where
    both CPUs have AES-NI, else ChaCha20-Poly1305-IETF) with its first 20
    bytes as additional data and the nonce dir u8 | 0 [3] | counter u64:
    dir 0 from the source, 1 from the puller, the counter each side's
    record number. A record replayed, reordered, dropped, altered or cut
    fails to open at the receiver, which ends the connection. The source
    sends a chunk only while the puller has given it credit (the window
    of doc/DESIGN.md 7.3, in chunks); the receiver reads a raw chunk
    straight into the object's block in its store and opens it there (a
    compressed one into a scratch chunk, then decompresses into the
    block): no buffer of the whole object on either side.

    Every socket is in one epoll set whose descriptor the node's loop
    polls (exec_bulk_fd), with the eventfd of the threads that seal the
    source's chunks while the loop sends (exec_bulk_pool.h);
    exec_bulk_fired does what came. What the source
    serves and what the puller wants are exec_xfer.c's: the callbacks
    below. Keys are wiped (sodium_memzero) when their transfer ends.
*/
#ifndef EXEC_BULK_H_INCLUDED
#define EXEC_BULK_H_INCLUDED

#include "exec_bulk_rec.h"
#include "../util/util_complain.h"
#include "lux.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The bulk port is the head's --port plus this, on every node's address. */
#define EXEC_BULK_PORT_OFFSET 4

typedef struct exec_bulk exec_bulk_t;
typedef struct exec_bulk_pull exec_bulk_pull_t;

/* What exec_xfer.c answers for the bulk part. */
typedef struct {
    /* The source: the transfer xid, if this node handed it out, its
       object still pinned and not yet streamed: 0 with *key set; else a
       code with the message. With id (the request opened with that key:
       the object it names) also *bytes (the object's, valid until
       exec_bulk_drop(xid)) and *size, and the transfer is marked as
       served (a second connection for it is refused). */
    int (*serve)(void *arg, uint64_t xid, const uint8_t id[LUX_REF_LEN],
                 exec_bulk_key_t *key, const uint8_t **bytes, uint64_t *size);
    /* The source: a chunk of xid went (the transfer is alive). */
    void (*sent)(void *arg, uint64_t xid);
    /* The source: the connection serving xid ended after it sent a chunk
       (the puller has all, went away, or moved nothing for 10 s): the
       transfer cannot be served again, so what it holds may go now. Not
       called for exec_bulk_drop's ends, nor from exec_bulk_destroy. */
    void (*over)(void *arg, uint64_t xid);
    /* The puller: more of who's pull came and opened in place: got
       bytes of it so far, from its start, in order. */
    void (*moved)(void *arg, void *who, uint64_t got);
    /* The puller: who's pull ended (its handle is gone already): rc 0
       when every byte came and opened, else a code with lux_errmsg();
       fallback true when it ended before any chunk came because the
       connection could not be made or was refused (the caller may pull
       the same object another way). With rc 0, fp is the fingerprint
       (util_fp) of the size bytes now at dst, made chunk by chunk as
       they opened, or NULL when none was kept (no memory for it): the
       caller then hashes dst itself. */
    void (*ended)(void *arg, void *who, int rc, bool fallback, const uint8_t *fp);
} exec_bulk_fns_t;

/* A bulk part for one node: host and port to listen on (port 0 or host
   NULL: pull only, serve nothing), and the node's own address, which its
   pulls' connections come from (NULL: any). NULL with the message when the epoll
   set cannot be made; a port that cannot be bound is logged and the node
   serves nothing in bulk (its pullers then use CURVE). */
exec_bulk_t *exec_bulk_new(const char *host, int port, const char *local,
                           const exec_bulk_fns_t *fns, void *arg);
void exec_bulk_destroy(exec_bulk_t **self_p);

/* The port this node serves on, 0 when none. */
int exec_bulk_port(exec_bulk_t *self);
/* The epoll set's descriptor, for the node's poll; then exec_bulk_fired
   when it is readable. */
int exec_bulk_fd(exec_bulk_t *self);
void exec_bulk_fired(exec_bulk_t *self);
/* Each tick: connections that did not say who they are in time go, and
   those that moved nothing for 10 s (a puller or source stopped, or cut
   off without a close). */
void exec_bulk_tick(exec_bulk_t *self);

/* The source: end any connection serving xid (its transfer closed). */
void exec_bulk_drop(exec_bulk_t *self, uint64_t xid);

/* The puller: pull the size bytes of object id from host:port under key
   into dst, asking chunks of chunk bytes, window of them in flight. The
   key is copied (the caller wipes its own). NULL with the message when no
   socket can be made; otherwise ended() is called once, later (never
   from inside this call), unless exec_bulk_pull_stop comes first. */
exec_bulk_pull_t *exec_bulk_pull_start(exec_bulk_t *self, const char *host, int port,
                                       const exec_bulk_key_t *key,
                                       const uint8_t id[LUX_REF_LEN], uint8_t *dst,
                                       uint64_t size, uint32_t chunk, int window, void *who);
/* Stop a pull (ended() is not called); the handle is taken. */
void exec_bulk_pull_stop(exec_bulk_t *self, exec_bulk_pull_t **pull_p);

#endif
