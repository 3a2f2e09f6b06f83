/*  exec_bulk_job - what the pool's threads (exec_bulk_pool.h) do for the
    bulk path (doc/DESIGN.md 7.3): a source's chunk sealed, a puller's
    chunk opened. exec_bulk.c owns the slots and their order; a job reads
    and writes only what its slot names, so the loop may receive or send
    other records meanwhile.

    A source's slot: the chunk at off of the object (obj, len bytes),
    compressed into buf where lz4's probe says it pays, sealed under key
    as record number ctr; buf then holds the header, the tag and (unless
    a raw chunk goes integrity only, straight from obj) the body.

    A puller's slot: a record received whole, its header and tag in hdr,
    its body at body (in the object's block at off, or, compressed, in
    buf); the job opens it where it lies and decompresses a compressed
    one into the block. A job that fails says so in rc and lowers *fail
    to its record number; a job whose record comes after one that failed
    (*fail below its ctr when it starts) does nothing, so nothing is
    opened into the block after a record that failed, where the pool runs
    jobs in order (one thread); with several, a later record may be
    opened while the failed one is, and its bytes are never counted.
*/
#ifndef EXEC_BULK_JOB_H_INCLUDED
#define EXEC_BULK_JOB_H_INCLUDED

#include "exec_bulk_pool.h"
#include "exec_bulk_rec.h"
#include "../util/util_time.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A puller's job's rc */
enum { EXEC_BULK_OPENED, EXEC_BULK_BAD_TAG, EXEC_BULK_BAD_LZ4, EXEC_BULK_AFTER_BAD };

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
    size_t pos;                   /* the source: bytes of the record sent */
    bool seen;                    /* the loop has taken it done (profile counted) */
    bool prof;                    /* LUX_XFER_PROFILE: count the costs below */
    exec_bulk_aead_t aead;        /* the slot's cipher context (one thread at a time) */
    int64_t p_crypt, p_lz4, p_cpu; /* ns: sealing or opening, lz4, the thread's CPU */
    long p_flt;                   /* the thread's minor page faults during the job */
} exec_bulk_slot_t;

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
