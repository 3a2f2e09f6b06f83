/* 6117-bulk-seal-threads: a bulk source that seals on threads while its
   loop sends (exec_bulk_pool.c, doc/DESIGN.md 7.3). Both ends are
   exec_bulk parts in this one process, on 127.0.0.1, with 3 sealing
   threads (LUX_BULK_THREADS=3), so that records are sealed out of order
   and must still go in order, each under its own record number.
   - three pulls of 32 MiB at once, 64 KiB chunks, 16 in flight: each
     whole, byte for byte;
   - each source's object sits in its own mapping: one transfer dropped
     in the middle (exec_bulk_drop), its mapping made unreadable at once
     (PROT_NONE): a thread still sealing from it would kill the test
     with SIGSEGV; the others go on and end whole. This catches a
     missing wait only when a job is queued or running at the drop,
     which the timing rarely gives: with exec_bulk_pool_cancel taken out
     of s_kill the test passed 2 runs of 2 (2026-11-29), so it guards
     the path, not the race; ASan builds see a job writing a freed slot;
   - the same with GMAC (integrity only, chunks sent from the object's
     own mapping) where this build can;
   - exec_bulk_destroy with a transfer streaming. */
#include "tap.h"
#include "lib/bulkfx.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SIZE (32u << 20)
#define NPULL BULKFX_N

static uint8_t *s_dst[NPULL];

/* One round: NPULL pulls under cipher; the first dropped mid-way when
   drop. How many ended whole. */
static int
s_round(exec_bulk_t *src, exec_bulk_t *pul, int port, int cipher, bool drop)
{
    exec_bulk_pull_t *h[NPULL];
    for (int i = 0; i < NPULL; i++) {
        uint8_t *o = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        s_dst[i] = malloc(SIZE);
        if (o == MAP_FAILED || !s_dst[i])
            bail("out of memory");
        for (uint32_t k = 0; k < SIZE; k += 4) {
            uint32_t v = (k + (uint32_t) i) * 2654435761u;
            memcpy(o + k, &v, 4);
        }
        bulkfx.src[i] = o;
        h[i] = bulkfx_pull(pul, port, i, cipher, s_dst[i], 65536, 16);
    }
    if (drop) {
        bulkfx_pump(src, pul, 60000, 7, 4u << 20);
        ok(bulkfx.got[0] > 0 && bulkfx.got[0] < SIZE, "the first pull is on its way (%llu bytes)",
           (unsigned long long) bulkfx.got[0]);
        exec_bulk_drop(src, bulkfx.key[0].xid);
        /* no thread may read its object any more */
        ok(mprotect(bulkfx.src[0], SIZE, PROT_NONE) == 0, "dropped, its object made unreadable");
    }
    bulkfx_pump(src, pul, 120000, 7, 0);
    int whole = 0;
    for (int i = 0; i < NPULL; i++) {
        if (!bulkfx.ended[i])
            exec_bulk_pull_stop(pul, &h[i]);
        whole += bulkfx.ended[i] && bulkfx.rc[i] == 0 &&
                 memcmp(bulkfx.src[i], s_dst[i], SIZE) == 0;
    }
    if (drop)
        ok(bulkfx.ended[0] && bulkfx.rc[0] != 0, "the dropped pull ended with an error (%d)",
           bulkfx.rc[0]);
    for (int i = 0; i < NPULL; i++) {
        munmap(bulkfx.src[i], SIZE);
        free(s_dst[i]);
    }
    return whole;
}

int
main(void)
{
    setenv("LUX_BULK_THREADS", "3", 1);
    int port = bulkfx_free_port();
    exec_bulk_t *src = exec_bulk_new("127.0.0.1", port, NULL, &bulkfx_fns, NULL);
    exec_bulk_t *pul = exec_bulk_new(NULL, 0, NULL, &bulkfx_fns, NULL);
    if (!src || !pul || exec_bulk_port(src) != port)
        bail("a source on 127.0.0.1:%d and a puller: %s", port, lux_errmsg());
    bulkfx.size = SIZE;
    int cipher = exec_bulk_cipher_here();
    is_int(s_round(src, pul, port, cipher, false), NPULL,
           "%d pulls of 32 MiB at once, sealed (%s) on 3 threads: all whole", NPULL,
           exec_bulk_cipher_name(cipher));
    is_int(s_round(src, pul, port, cipher, true), NPULL - 1,
           "one dropped in the middle: the other %d whole, no thread read the dropped object",
           NPULL - 1);
    if (exec_bulk_gmac_here())
        is_int(s_round(src, pul, port, EXEC_BULK_GMAC, true), NPULL - 1,
               "the same with integrity only (GMAC): the other %d whole", NPULL - 1);
    else
        skip("this build cannot do GMAC (no libcrypto or no AES-NI)");

    uint8_t *o = malloc(SIZE), *d = malloc(SIZE);
    if (!o || !d)
        bail("out of memory");
    memset(o, 7, SIZE);
    bulkfx.src[0] = o;
    bulkfx_reset(1, true);
    bulkfx_reset(2, true);
    exec_bulk_pull_t *h = bulkfx_pull(pul, port, 0, cipher, d, 65536, 16);
    bulkfx_pump(src, pul, 60000, 1, 1);
    exec_bulk_destroy(&src);
    ok(src == NULL && bulkfx.got[0] > 0,
       "exec_bulk_destroy with a transfer streaming (%llu bytes in)",
       (unsigned long long) bulkfx.got[0]);
    if (!bulkfx.ended[0])
        exec_bulk_pull_stop(pul, &h);
    exec_bulk_destroy(&pul);
    free(o);
    free(d);
    return done_testing();
}
