/* 6040-bulk-drop: a bulk source's connection ended by exec_bulk_drop
   (the object it streams is let go, exec_xfer_src.c) or by
   exec_bulk_destroy (the node's end), outside the bulk loop.
   exec_bulk_drop walked the list of connections while s_kill, at depth 0,
   freed the one it had just ended: the next step read the freed
   connection's link. Found by t/6091-cluster-harsh.sh (seeds 6101 and
   6111 with 800 tasks: the head's node manager died with SIGSEGV in
   s_kill, under exec_bulk_drop and exec_bulk_destroy). A plain build may
   read the stale link and go on; under AddressSanitizer (.ci/run runs
   this test so) or valgrind it is a heap-use-after-free. Both ends here
   are exec_bulk parts in this one process, on 127.0.0.1. */
#include "tap.h"
#include "lib/bulkfx.h"

#include <stdlib.h>

#define SIZE (64u << 20)
#define NPULL BULKFX_N

int
main(void)
{
    int port = bulkfx_free_port();
    exec_bulk_t *src = exec_bulk_new("127.0.0.1", port, NULL, &bulkfx_fns, NULL);
    exec_bulk_t *pul = exec_bulk_new(NULL, 0, NULL, &bulkfx_fns, NULL);
    ok(src && pul && exec_bulk_port(src) == port, "a source on 127.0.0.1:%d and a puller", port);
    uint8_t *obj = malloc(SIZE), *dst[NPULL];
    for (uint32_t i = 0; obj && i < SIZE; i++)
        obj[i] = (uint8_t) (i * 2654435761u >> 13);
    bulkfx.size = SIZE;
    exec_bulk_pull_t *h[NPULL];
    for (int i = 0; i < NPULL; i++) {
        bulkfx.src[i] = obj;
        dst[i] = malloc(SIZE);
        h[i] = bulkfx_pull(pul, port, i, exec_bulk_cipher_here(), dst[i], 65536, 1);
    }
    bulkfx_pump(src, pul, 60000, 7, 1);
    int moving = 0;
    for (int i = 0; i < NPULL; i++)
        moving += bulkfx.got[i] > 0;
    is_int(moving, NPULL, "all %d pulls are moving (the source served %d)", NPULL, bulkfx.served);

    /* the first pull's object let go at the source: its connection ends,
       the others' go on */
    exec_bulk_drop(src, bulkfx.key[0].xid);
    ok(1, "exec_bulk_drop of a streaming transfer, the first of three connections");
    exec_bulk_drop(src, bulkfx.key[NPULL - 1].xid);
    ok(1, "and of the last");
    uint64_t before = bulkfx.got[1];
    bulkfx.got[1] = 0;
    bulkfx_pump(src, pul, 20000, 2, 1);
    ok(bulkfx.got[1] > before || bulkfx.ended[1], "the middle one goes on (%llu then %llu bytes)",
       (unsigned long long) before, (unsigned long long) bulkfx.got[1]);

    /* the node's end with connections still open */
    exec_bulk_destroy(&src);
    ok(src == NULL, "exec_bulk_destroy with a connection streaming");
    for (int i = 0; i < NPULL; i++)
        if (!bulkfx.ended[i])
            exec_bulk_pull_stop(pul, &h[i]);
    exec_bulk_destroy(&pul);
    ok(pul == NULL, "and the puller's end");
    for (int i = 0; i < NPULL; i++)
        free(dst[i]);
    free(obj);
    return done_testing();
}
