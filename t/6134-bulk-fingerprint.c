/* 6134-bulk-fingerprint: a pull's fingerprint made chunk by chunk as the
   chunks open (exec_bulk_job.c, doc/DESIGN.md 7.3), not by a pass over
   the whole block after the last.
   - util_fp_stream of bytes added in pieces of random sizes (empty ones
     among them) is util_fp of them at once: 0 and 1 bytes, the sizes
     around XXH3's 16/128/240-byte and 1 KiB stripe and 64 KiB block
     edges, random sizes up to 4 MiB; and the state goes on after a
     look (so old logs' fingerprints still verify);
   - in-process bulk pulls (the source with 3 threads, pullers with 2 and
     with none), sizes not a multiple of the chunk, 1 byte, noise and
     compressible, sealed and (where the build can) integrity only: the
     fingerprint the pull hands over at its end is util_fp of the source's
     bytes;
   - a chunk altered at the source before sealing (LUX_TEST_BULK_SPOIL):
     every tag opens and the pull ends whole by its records, but the
     fingerprint it hands over is not the source's object's: it is that
     of the bytes that came, so the check after it tells. */
#include "tap.h"
#include "exec/exec_bulk.h"
#include "lib/bulkfx.h"
#include "lux.h"
#include "util/util_fp.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_MAX (6u << 20)

static uint8_t *s_src, *s_dst;

static uint64_t s_rng = 0x9e3779b97f4a7c15ull;

static uint64_t
s_rand(void)
{
    s_rng ^= s_rng << 13;
    s_rng ^= s_rng >> 7;
    s_rng ^= s_rng << 17;
    return s_rng;
}

/* The stream's fingerprint of p[0..n) added in random pieces equals
   util_fp's; and one taken halfway does not stop it. */
static bool
s_same_stream(const uint8_t *p, size_t n)
{
    uint8_t one[16], got[16], half[16], mid[16];
    util_fp(one, p, n);
    util_fp(half, p, n / 2);
    util_fp_stream_t *st = util_fp_stream_new();
    if (!st)
        bail("out of memory");
    size_t at = 0;
    bool looked = false;
    while (at < n) {
        size_t k = s_rand() % 5 == 0 ? 0 : (size_t) (s_rand() % 70000);
        if (!looked && at + k > n / 2) { /* a look at n / 2 exactly, then on */
            k = n / 2 - at;
            util_fp_stream_add(st, p + at, k);
            at += k;
            util_fp_stream_end(st, mid);
            looked = true;
            continue;
        }
        if (k > n - at)
            k = n - at;
        util_fp_stream_add(st, p + at, k);
        at += k;
    }
    util_fp_stream_end(st, got);
    util_fp_stream_free(&st);
    return memcmp(one, got, 16) == 0 && (!looked || memcmp(half, mid, 16) == 0);
}

/* One pull of size bytes (compressible when squeeze) with chunk-byte
   chunks under cipher: whether it ended whole, by its records. */
static bool
s_pull(exec_bulk_t *src, exec_bulk_t *pul, int port, uint64_t size, bool squeeze,
       uint32_t chunk, int cipher)
{
    for (uint64_t k = 0; k < size; k++)
        s_src[k] = squeeze ? (uint8_t) (k / 4096 % 13) : (uint8_t) s_rand();
    bulkfx.src[0] = s_src;
    return bulkfx_pull_whole(src, pul, port, s_dst, size, chunk, cipher);
}

int
main(void)
{
    if (!(s_src = malloc(S_MAX)) || !(s_dst = malloc(S_MAX)))
        bail("out of memory");
    for (size_t i = 0; i < S_MAX; i++)
        s_src[i] = (uint8_t) s_rand();

    static const size_t edges[] = {0,    1,    2,    15,    16,    17,    127,   128,  129,
                                   239,  240,  241,  1023,  1024,  1025,  65535, 65536,
                                   65537, 1048575, 1048576, 1048577};
    int bad = 0;
    size_t first_bad = 0;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        if (!s_same_stream(s_src + i, edges[i]) && !bad++)
            first_bad = edges[i];
    is_int(bad, 0, "in pieces, the stream's fingerprint is util_fp's at %zu edge sizes, 0 and 1 "
           "byte among them (first differing: %zu)", sizeof edges / sizeof edges[0], first_bad);
    for (int i = 0; i < 24; i++) {
        size_t n = (size_t) (s_rand() % (4u << 20));
        if (!s_same_stream(s_src + s_rand() % 64, n) && !bad++)
            first_bad = n;
    }
    is_int(bad, 0, "and at 24 random sizes up to 4 MiB (first differing: %zu)", first_bad);

    char spoil[64];
    snprintf(spoil, sizeof spoil, "/tmp/lux-6134-spoil-%d", (int) getpid());
    unlink(spoil);
    setenv("LUX_TEST_BULK_SPOIL", spoil, 1);
    int port = bulkfx_free_port();
    setenv("LUX_BULK_THREADS", "3", 1);
    exec_bulk_t *src = exec_bulk_new("127.0.0.1", port, NULL, &bulkfx_fns, NULL);
    unsetenv("LUX_TEST_BULK_SPOIL");
    setenv("LUX_BULK_THREADS", "2", 1);
    exec_bulk_t *pul = exec_bulk_new(NULL, 0, NULL, &bulkfx_fns, NULL);
    setenv("LUX_BULK_THREADS", "0", 1);
    exec_bulk_t *pul0 = exec_bulk_new(NULL, 0, NULL, &bulkfx_fns, NULL);
    if (!src || !pul || !pul0 || exec_bulk_port(src) != port)
        bail("a source on 127.0.0.1:%d and pullers: %s", port, lux_errmsg());

    int ciphers[2] = {exec_bulk_cipher_here(), EXEC_BULK_GMAC};
    int nc = exec_bulk_gmac_here() ? 2 : 1;
    if (nc == 1)
        diag("integrity only is not here (no AES-NI or no libcrypto): sealed pulls only");
    static const uint64_t sizes[] = {(5u << 20) + 12345, 1, 65536 * 3, 70001};
    for (int c = 0; c < nc; c++) {
        const char *cn = exec_bulk_cipher_name(ciphers[c]);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            uint64_t n = sizes[i];
            ok(s_pull(src, pul, port, n, false, 65536, ciphers[c]) && bulkfx_fp_is(0, s_src, n),
               "%s, 2 threads: %llu bytes of noise in 64 KiB chunks: whole, and its fingerprint "
               "is util_fp's", cn, (unsigned long long) n);
        }
        ok(s_pull(src, pul, port, (5u << 20) + 999, true, 65536, ciphers[c]) &&
               bulkfx_fp_is(0, s_src, (5u << 20) + 999),
           "%s, 2 threads: compressible (decompressed on the threads): the same", cn);
        ok(s_pull(src, pul0, port, (5u << 20) + 4097, false, 131072, ciphers[c]) &&
               bulkfx_fp_is(0, s_src, (5u << 20) + 4097),
           "%s, no threads (opened in the loop), 128 KiB chunks: the same", cn);
    }

    /* a chunk's bytes altered before sealing: only the fingerprint tells */
    for (int c = 0; c < nc; c++) {
        const char *cn = exec_bulk_cipher_name(ciphers[c]);
        FILE *f = fopen(spoil, "w");
        if (!f)
            bail("cannot make %s", spoil);
        fclose(f);
        uint64_t n = (2u << 20) + 77;
        bool whole = s_pull(src, pul, port, n, false, 65536, ciphers[c]);
        ok(!whole && bulkfx.ended[0] == 1 && bulkfx.rc[0] == 0, "%s: a chunk altered before sealing: every tag "
           "opens (rc %d), the bytes differ", cn, bulkfx.rc[0]);
        ok(bulkfx.have_fp[0] && !bulkfx_fp_is(0, s_src, n) && bulkfx_fp_is(0, s_dst, n),
           "%s: the fingerprint handed over is not the object's but that of what came", cn);
        ok(access(spoil, F_OK) != 0, "%s: the hook is spent", cn);
    }
    unlink(spoil);

    exec_bulk_destroy(&pul0);
    exec_bulk_destroy(&pul);
    exec_bulk_destroy(&src);
    free(s_src);
    free(s_dst);
    return done_testing();
}
