/*  exec_bulk_job - what the pool's threads (exec_bulk_pool.h) do for the
    bulk path (doc/DESIGN.md 7.3): a source's chunk sealed, a puller's
    chunk opened. exec_bulk.c owns the slots and their order; a job reads
    and writes only what its slot names, so the loop may receive or send
    other records meanwhile.

    A source's slot: the chunk at off of the object (obj, len bytes),
    compressed into buf where lz4's probe says it pays, sealed under key
    as record number ctr; buf then holds the header, the tag and (unless
    a raw chunk goes integrity only, straight from obj) the body. A test
    (LUX_TEST_BULK_SPOIL) has one chunk's bytes altered before they are
    sealed: every tag opens, and only the fingerprint can tell.

    A puller's slot: a record received whole, its header and tag in hdr,
    its body at body (in the object's block at off, or, compressed, in
    buf); the job opens it where it lies and decompresses a compressed
    one into the block. A job that fails says so in rc and lowers *fail
    to its record number; a job whose record comes after one that failed
    (*fail below its ctr when it starts) does nothing, so nothing is
    opened into the block after a record that failed, where the pool runs
    jobs in order (one thread); with several, a later record may be
    opened while the failed one is, and its bytes are never counted.

    The puller's fingerprint (exec_bulk_fpq_t): the XXH3 of the block,
    advanced in order, chunk by chunk, by whichever thread opens the next
    chunk in order, while it is hot in that CPU's cache: a job that
    opened its chunk marks it opened and, unless another thread is at it,
    hashes every opened chunk from the next in order on, its own among
    them or not. Its slot is then marked hashed, and the loop counts a
    slot only once it is (a job whose chunk another thread hashes returns
    first). So the fingerprint of the whole block is there when the last
    chunk is counted, and the check after the pull is no pass over the
    block of its own, in series (issue 28: about 0.1 s per GiB on the
    puller's loop). A chunk that failed is never hashed, nor any after it.
*/
#ifndef EXEC_BULK_JOB_H_INCLUDED
#define EXEC_BULK_JOB_H_INCLUDED

#include "exec_bulk_pool.h"
#include "exec_bulk_rec.h"
#include "../util/util_fp.h"
#include "../util/util_time.h"

#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A puller's job's rc */
enum { EXEC_BULK_OPENED, EXEC_BULK_BAD_TAG, EXEC_BULK_BAD_LZ4, EXEC_BULK_AFTER_BAD };

typedef struct exec_bulk_fpq exec_bulk_fpq_t;

typedef struct {
    exec_bulk_job_t job;          /* first: the pool's */
    const exec_bulk_key_t *key;   /* the transfer's (fixed while its connection lives) */
    uint8_t *obj;                 /* the object's bytes (the source reads, the puller writes) */
    uint8_t *buf;                 /* the source: the record; the puller: a compressed body */
    size_t cap;
    uint8_t hdr[EXEC_BULK_REC];   /* the puller: the record's header and tag */
    const uint8_t *body;          /* the body: sent (source) or received (puller) */
    uint64_t off, ctr;            /* the chunk's offset in the object; its record number */
    uint32_t len, clen;           /* the chunk's bytes; the body's (compressed when codec 1) */
    int codec;
    int rc;                       /* the puller: EXEC_BULK_OPENED or what failed */
    _Atomic uint64_t *fail;       /* the puller: the first failed record's number, or ~0 */
    exec_bulk_fpq_t *fpq;         /* the puller: its fingerprint, or NULL (none kept) */
    bool opened;                  /* under fpq's lock: opened, not yet hashed */
    _Atomic bool hashed;          /* its bytes are in the fingerprint (the loop resets it) */
    size_t pos;                   /* the source: bytes of the record sent */
    bool seen;                    /* the loop has taken it done (profile counted) */
    bool spoil;                   /* the source, a test: a byte altered before sealing */
    bool prof;                    /* LUX_XFER_PROFILE: count the costs below */
    exec_bulk_aead_t aead;        /* the slot's cipher context (one thread at a time) */
    int64_t p_crypt, p_lz4, p_cpu; /* ns: sealing or opening, lz4, the thread's CPU */
    int64_t p_fp;                 /* ns: hashing (this job's and others' chunks) */
    long p_flt;                   /* the thread's minor page faults during the job */
} exec_bulk_slot_t;

/* A puller's fingerprint of its block, over a ring of n slots that the
   loop fills in order from ring[0]. */
struct exec_bulk_fpq {
    pthread_mutex_t lock;
    util_fp_stream_t *fp;
    exec_bulk_slot_t *ring;
    int n, next;                  /* slots; the next one to hash */
    bool busy;                    /* a thread hashes */
};

/* 0, or LUX_ENOMEM with the message. */
int exec_bulk_fpq_init(exec_bulk_fpq_t *q, exec_bulk_slot_t *ring, int n);
/* Once no job runs on its slots (exec_bulk_pool_cancel). */
void exec_bulk_fpq_fini(exec_bulk_fpq_t *q);
/* Whether sl's chunk counts: not hashed yet only while no fingerprint
   is kept or its job failed. */
static inline bool
exec_bulk_fpq_hashed(const exec_bulk_slot_t *sl)
{
    return !sl->fpq || sl->rc || atomic_load_explicit(&sl->hashed, memory_order_acquire);
}

/* LUX_XFER_PROFILE: where a connection's time went, logged at its end. */
typedef struct {
    int64_t start, crypt, io, lz4; /* ns: all; sealing/opening; send/recv; lz4 */
    int64_t cpu, fp;               /* ns: the pool threads' CPU for it; hashing */
    long flt;                      /* the pool threads' page faults for it */
    uint64_t calls, turns;         /* send/recv calls; turns of the node's loop */
    struct rusage ru;              /* the loop thread's at the start */
} exec_bulk_prof_t;

/* Log it: a source's (src) or a puller's connection to peer, moved of
   size bytes, its jobs on nth pool threads (0: on the loop's). */
void exec_bulk_prof_log(const exec_bulk_prof_t *p, bool src, const char *peer, uint64_t moved,
                        uint64_t size, int nth);

/* Tuning of the bulk path, from the environment (lux(1) ENVIRONMENT;
   the defaults are what doc/benchmarks.md measured best, stop 44):
   LUX_BULK_SNDBUF / LUX_BULK_RCVBUF, SO_SNDBUF of a source's connection
   and SO_RCVBUF of a puller's in bytes (0, the default: the kernel's own
   sizing), and LUX_BULK_LOOP, the jobs run on the loop's thread rather
   than on the pool's, a comma list of seal, open (every cipher's),
   gmac-seal, gmac-open and gmac (both, integrity only), or none: on few
   CPUs a hand-off's wake-ups may cost more than the overlap gives. */
enum { EXEC_BULK_LOOP_SEAL = 1, EXEC_BULK_LOOP_OPEN = 2, EXEC_BULK_LOOP_GMAC_SEAL = 4,
       EXEC_BULK_LOOP_GMAC_OPEN = 8 };
typedef struct {
    int sndbuf, rcvbuf;           /* bytes; 0: the kernel's */
    int loop;                     /* EXEC_BULK_LOOP_* */
} exec_bulk_tune_t;

/* Read it (a value it cannot read is logged and its default kept). */
void exec_bulk_tune_read(exec_bulk_tune_t *t);
/* Whether a source's (seal) or a puller's job for a transfer of cipher
   runs on the loop's thread. */
bool exec_bulk_tune_on_loop(const exec_bulk_tune_t *t, bool seal, int cipher);
/* The buffer sizes on a source's (src) or a puller's socket. */
void exec_bulk_tune_sock(const exec_bulk_tune_t *t, int fd, bool src);

/* The jobs (exec_bulk_job_t.run) of a source's and a puller's slot. */
void exec_bulk_seal_run(exec_bulk_job_t *job);
void exec_bulk_open_run(exec_bulk_job_t *job);

/* The profile's clock (LUX_XFER_PROFILE): 0 unless prof, and the time
   since t0 added to *acc when prof. */
static inline int64_t
exec_bulk_t0(bool prof)
{
    return prof ? util_mono_ns() : 0;
}

static inline void
exec_bulk_add(bool prof, int64_t *acc, int64_t t0)
{
    if (prof)
        *acc += util_mono_ns() - t0;
}

#endif
