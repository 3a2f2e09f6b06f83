/*  exec_bulk_job - a bulk chunk sealed or opened on a pool thread (see
    exec_bulk_job.h). */
#include "exec_bulk_job.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <time.h>

static long
s_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt;
}

/* Reads the object's bytes and the key, both fixed while the connection
   streams; writes only the slot. */
void
exec_bulk_seal_run(exec_bulk_job_t *job)
{
    exec_bulk_slot_t *sl = (exec_bulk_slot_t *) job;
    int64_t cpu0 = sl->prof ? util_thread_cpu_ns() : 0, t0 = exec_bulk_t0(sl->prof);
    long flt0 = sl->prof ? s_faults() : 0;
    uint8_t *rec = sl->buf, *body = rec + EXEC_BULK_REC;
    const uint8_t *src = sl->obj + sl->off;
    if (sl->spoil) { /* the test's: bytes that are not the object's, sealed as if they were */
        memcpy(body, src, sl->len);
        body[sl->len / 2] ^= 0x40;
        src = body;
    }
    size_t zn = sl->spoil ? 0 : exec_bulk_lz4(src, sl->len, body, sl->cap - EXEC_BULK_REC);
    sl->codec = zn > 0;
    sl->clen = sl->codec ? (uint32_t) zn : sl->len;
    /* integrity only: a raw chunk is sent from the store as it is */
    bool as_is = !sl->codec && sl->key->cipher == EXEC_BULK_GMAC;
    sl->body = as_is ? src : body;
    exec_bulk_add(sl->prof, &sl->p_lz4, t0);
    exec_bulk_hdr(rec, EXEC_BULK_R_CHUNK, sl->codec, sl->len, sl->clen, sl->off);
    t0 = exec_bulk_t0(sl->prof);
    exec_bulk_seal(&sl->aead, sl->key, 0, sl->ctr, rec, as_is ? NULL : body,
                   sl->codec ? body : src, sl->clen, rec + EXEC_BULK_HDR);
    exec_bulk_add(sl->prof, &sl->p_crypt, t0);
    if (sl->prof) {
        sl->p_cpu += util_thread_cpu_ns() - cpu0;
        sl->p_flt += s_faults() - flt0;
    }
}

int
exec_bulk_fpq_init(exec_bulk_fpq_t *q, exec_bulk_slot_t *ring, int n)
{
    if (!(q->fp = util_fp_stream_new()))
        return util_err(LUX_ENOMEM, "out of memory for a pull's fingerprint");
    pthread_mutex_init(&q->lock, NULL);
    q->ring = ring;
    q->n = n;
    q->next = 0;
    q->busy = false;
    return 0;
}

void
exec_bulk_fpq_fini(exec_bulk_fpq_t *q)
{
    if (!q->fp)
        return;
    util_fp_stream_free(&q->fp);
    pthread_mutex_destroy(&q->lock);
}

/* sl is opened (or failed): hash the opened chunks from the next in
   order on, unless another thread does (see exec_bulk_job.h). */
static void
s_fp_turn(exec_bulk_slot_t *sl)
{
    exec_bulk_fpq_t *q = sl->fpq;
    pthread_mutex_lock(&q->lock);
    sl->opened = true;
    if (q->busy) { /* that thread takes this one too when its turn comes */
        pthread_mutex_unlock(&q->lock);
        return;
    }
    q->busy = true;
    int64_t t0 = exec_bulk_t0(sl->prof);
    for (;;) {
        exec_bulk_slot_t *h = &q->ring[q->next];
        if (!h->opened || h->rc)
            break; /* not yet opened, or failed: nothing more is hashed */
        h->opened = false;
        pthread_mutex_unlock(&q->lock);
        util_fp_stream_add(q->fp, h->obj + h->off, h->len);
        atomic_store_explicit(&h->hashed, true, memory_order_release);
        pthread_mutex_lock(&q->lock);
        q->next = (q->next + 1) % q->n;
    }
    q->busy = false;
    pthread_mutex_unlock(&q->lock);
    exec_bulk_add(sl->prof, &sl->p_fp, t0);
}

/* Writes only the block at [off, off + len) and the slot (and, hashing,
   reads the block's opened chunks). */
void
exec_bulk_open_run(exec_bulk_job_t *job)
{
    exec_bulk_slot_t *sl = (exec_bulk_slot_t *) job;
    if (atomic_load_explicit(sl->fail, memory_order_acquire) < sl->ctr) {
        sl->rc = EXEC_BULK_AFTER_BAD; /* a record before it failed: nothing more goes in */
        return;
    }
    int64_t cpu0 = sl->prof ? util_thread_cpu_ns() : 0, t0 = exec_bulk_t0(sl->prof);
    long flt0 = sl->prof ? s_faults() : 0;
    uint8_t *body = (uint8_t *) sl->body;
    sl->rc = EXEC_BULK_OPENED;
    if (!exec_bulk_open(&sl->aead, sl->key, 0, sl->ctr, sl->hdr, body, sl->clen,
                        sl->hdr + EXEC_BULK_HDR))
        sl->rc = EXEC_BULK_BAD_TAG;
    exec_bulk_add(sl->prof, &sl->p_crypt, t0);
    t0 = exec_bulk_t0(sl->prof);
    if (!sl->rc && sl->codec == 1 &&
        LZ4_decompress_safe((const char *) body, (char *) sl->obj + sl->off, (int) sl->clen,
                            (int) sl->len) != (int) sl->len)
        sl->rc = EXEC_BULK_BAD_LZ4;
    exec_bulk_add(sl->prof, &sl->p_lz4, t0);
    if (sl->rc) { /* the first failed record's number, for the jobs after it */
        uint64_t was = atomic_load_explicit(sl->fail, memory_order_relaxed);
        while (sl->ctr < was && !atomic_compare_exchange_weak_explicit(
                                    sl->fail, &was, sl->ctr, memory_order_release,
                                    memory_order_relaxed))
            ;
    }
    if (sl->fpq)
        s_fp_turn(sl);
    if (sl->prof) {
        sl->p_cpu += util_thread_cpu_ns() - cpu0;
        sl->p_flt += s_faults() - flt0;
    }
}

void
exec_bulk_prof_log(const exec_bulk_prof_t *p, bool src, const char *peer, uint64_t moved,
                   uint64_t size, int nth)
{
    double all = (double) (util_mono_ns() - p->start) / 1e6;
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    char threads[160], fp[48] = "";
    const char *did = src ? "sealed" : "opened";
    if (!src)
        snprintf(fp, sizeof fp, ", fingerprint %.1f ms", (double) p->fp / 1e6);
    if (nth)
        snprintf(threads, sizeof threads, "; %s on %d thread%s: %.1f ms of their CPU, %ld "
                 "page faults%s", did, nth, nth == 1 ? "" : "s", (double) p->cpu / 1e6,
                 p->flt, fp);
    else
        snprintf(threads, sizeof threads, "; %s in the loop's thread%s", did, fp);
    double cpu = (double) (ru.ru_utime.tv_sec - p->ru.ru_utime.tv_sec +
                           ru.ru_stime.tv_sec - p->ru.ru_stime.tv_sec) * 1e3 +
                 (double) (ru.ru_utime.tv_usec - p->ru.ru_utime.tv_usec +
                           ru.ru_stime.tv_usec - p->ru.ru_stime.tv_usec) / 1e3;
    log_info("bulk profile: %s %s, %llu of %llu bytes in %.1f ms (the node's loop thread: "
             "%.1f ms of CPU, %ld page faults): %s %.1f ms, %s %.1f ms in %llu calls, lz4 "
             "%.1f ms, %llu turns of the loop%s",
             src ? "to" : "from", peer, (unsigned long long) moved, (unsigned long long) size,
             all, cpu, ru.ru_minflt - p->ru.ru_minflt, src ? "seal" : "open",
             (double) p->crypt / 1e6, src ? "send" : "recv", (double) p->io / 1e6,
             (unsigned long long) p->calls, (double) p->lz4 / 1e6,
             (unsigned long long) p->turns, threads);
}

/* --- tuning ---------------------------------------------------------------------------- */

static int
s_bytes(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n > (256L << 20)) {
        log_warn("bulk: %s=%s is not a size in bytes from 0 (the kernel's) to 268435456; "
                 "using %d", name, v, dflt);
        return dflt;
    }
    return (int) n;
}

void
exec_bulk_tune_read(exec_bulk_tune_t *t)
{
    static const struct {
        const char *word;
        int bits;
    } words[] = {{"seal", EXEC_BULK_LOOP_SEAL},
                 {"open", EXEC_BULK_LOOP_OPEN},
                 {"gmac-seal", EXEC_BULK_LOOP_GMAC_SEAL},
                 {"gmac-open", EXEC_BULK_LOOP_GMAC_OPEN},
                 {"gmac", EXEC_BULK_LOOP_GMAC_SEAL | EXEC_BULK_LOOP_GMAC_OPEN},
                 {"none", 0}};
    t->sndbuf = s_bytes("LUX_BULK_SNDBUF", 0);
    t->rcvbuf = s_bytes("LUX_BULK_RCVBUF", 0);
    t->loop = 0;
    const char *v = getenv("LUX_BULK_LOOP");
    for (const char *p = v ? v : ""; *p;) {
        size_t n = strcspn(p, ",");
        size_t i = 0, nw = sizeof words / sizeof words[0];
        while (i < nw && !(strlen(words[i].word) == n && strncmp(words[i].word, p, n) == 0))
            i++;
        if (i == nw) {
            log_warn("bulk: LUX_BULK_LOOP=%s: '%.*s' is not seal, open, gmac-seal, gmac-open, "
                     "gmac or none; ignored", v, (int) n, p);
        } else {
            t->loop |= words[i].bits;
        }
        p += n + (p[n] == ',');
    }
}

bool
exec_bulk_tune_on_loop(const exec_bulk_tune_t *t, bool seal, int cipher)
{
    if (cipher == EXEC_BULK_GMAC &&
        (t->loop & (seal ? EXEC_BULK_LOOP_GMAC_SEAL : EXEC_BULK_LOOP_GMAC_OPEN)))
        return true;
    return (t->loop & (seal ? EXEC_BULK_LOOP_SEAL : EXEC_BULK_LOOP_OPEN)) != 0;
}

void
exec_bulk_tune_sock(const exec_bulk_tune_t *t, int fd, bool src)
{
    int n = src ? t->sndbuf : t->rcvbuf;
    if (n > 0 && setsockopt(fd, SOL_SOCKET, src ? SO_SNDBUF : SO_RCVBUF, &n, sizeof n) < 0)
        log_warn("bulk: %s of %d bytes: not set", src ? "SO_SNDBUF" : "SO_RCVBUF", n);
}
