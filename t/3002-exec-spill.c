/* 3002-exec-spill: objects spilled to LZ4 files and read back. Round trips
   of random, zero and mixed data of many sizes (up to 300 MB, across block
   boundaries), the atomic write, and damaged files: every truncation and
   every flipped byte of a small file, flips in raw and compressed blocks of
   a large one, a wrong size, trailing bytes, a missing file, files that are
   not LZ4 or lack a checksum: each a clear error naming the file. */
#include "tap.h"
#include "exec/exec_spill.h"
#include "util/util_err.h"

#include <fcntl.h>
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB ((size_t) 1 << 20)

static uint64_t s_rng = 0x2545f4914f6cdd1dULL;
#define s_rand() tap_rand(&s_rng)

static void
s_fill_random(uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t r = s_rand();
        memcpy(p + i, &r, 8);
    }
    for (; i < n; i++)
        p[i] = (uint8_t) s_rand();
}

/* A file in the scratch directory (one of 8 buffers, reused in turn). */
static const char *
s_file(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", tap_tmpdir(), name);
    return p;
}

static uint8_t *
s_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        bail("cannot read %s", path);
    fseek(f, 0, SEEK_END);
    *n = (size_t) ftell(f);
    rewind(f);
    uint8_t *p = malloc(*n ? *n : 1);
    if (fread(p, 1, *n, f) != *n)
        bail("short read of %s", path);
    fclose(f);
    return p;
}

static void
s_dump(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        bail("cannot write %s", path);
}

static int64_t
s_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t) st.st_size : -1;
}

/* Write src, read it back into a fresh buffer, compare; whether all went
   well (if not, a diagnostic says what). */
static bool
s_round_trip(const char *path, const uint8_t *src, size_t n)
{
    uint8_t *dst = malloc(n ? n : 1);
    int rc = exec_spill_write(path, src, n);
    if (rc) {
        diag("write %zu: %s", n, util_errmsg());
        free(dst);
        return false;
    }
    memset(dst, 0xa5, n);
    rc = exec_spill_read(path, dst, n);
    int64_t sz = exec_spill_size(path);
    bool good = rc == 0 && memcmp(dst, src, n) == 0 && sz == (int64_t) n;
    if (!good)
        diag("round trip of %zu bytes: read %d, size %lld: %s", n, rc, (long long) sz,
             util_errmsg());
    free(dst);
    return good;
}

static void
s_round_trips(void)
{
    static const size_t sizes[] = {
        0, 1, 63, 64, 4095, MiB, 4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 9 * MiB + 13,
    };
    size_t max = 9 * MiB + 13;
    uint8_t *src = malloc(max);
    const char *path = s_file("obj");
    int bad = 0;

    s_fill_random(src, max);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        bad += !s_round_trip(path, src, sizes[i]);
    is_int(bad, 0, "random data of 0 B to 9 MiB round-trips, sizes from the header");
    ok(s_file_size(path) > (int64_t) max && s_file_size(path) < (int64_t) (max + max / 100),
       "random data costs about its size on disk (%lld for %zu)", (long long) s_file_size(path),
       max);
    ok(access(s_file("obj.tmp"), F_OK) != 0, "no .tmp is left behind");

    /* the file is a standard LZ4 frame: the lz4 tool reads it */
    if (system("command -v lz4 >/dev/null 2>&1") == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "lz4 -dcq '%s' > '%s/obj.out'", path, tap_tmpdir());
        size_t got = 0;
        uint8_t *out = system(cmd) == 0 ? s_slurp(s_file("obj.out"), &got) : NULL;
        ok(out && got == max && memcmp(out, src, max) == 0, "lz4 -d reads it back");
        free(out);
    } else {
        skip("no lz4 tool");
    }

    memset(src, 0, max);
    ok(s_round_trip(path, src, max), "zeros round-trip");
    ok(s_file_size(path) < (int64_t) (max / 100), "and compress (%lld bytes for %zu)",
       (long long) s_file_size(path), max);
    free(src);

    /* 300 MB, in 64 KiB pieces alternating random and compressible, so
       that blocks of both kinds (raw and compressed) are on the path */
    size_t n = 300 * 1000 * 1000;
    uint8_t *big = malloc(n);
    for (size_t off = 0; off < n; off += 65536) {
        size_t k = n - off < 65536 ? n - off : 65536;
        if (s_rand() % 2)
            s_fill_random(big + off, k);
        else
            for (size_t j = 0; j < k; j++)
                big[off + j] = (uint8_t) (j / 100);
    }
    ok(s_round_trip(path, big, n), "300 MB of mixed data round-trip");
    diag("300 MB mixed: %lld bytes on disk", (long long) s_file_size(path));

    /* a file made by a standard tool's settings is read too: our reader
       does not depend on our writer's block size or mode */
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    prefs.frameInfo.contentSize = 5 * MiB;
    size_t cap = LZ4F_compressFrameBound(5 * MiB, &prefs);
    uint8_t *frame = malloc(cap), *dst = malloc(5 * MiB);
    size_t flen = LZ4F_compressFrame(frame, cap, big, 5 * MiB, &prefs);
    s_dump(s_file("linked"), frame, flen);
    ok(!LZ4F_isError(flen) && exec_spill_read(s_file("linked"), dst, 5 * MiB) == 0 &&
           memcmp(dst, big, 5 * MiB) == 0,
       "a frame with linked 64 KiB blocks reads back");

    /* without a content checksum: refused, damage would go unnoticed */
    prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
    flen = LZ4F_compressFrame(frame, cap, big, 5 * MiB, &prefs);
    s_dump(s_file("nosum"), frame, flen);
    is_int(exec_spill_read(s_file("nosum"), dst, 5 * MiB), LUX_ECORRUPT,
           "a frame without a content checksum is refused");
    ok(strstr(util_errmsg(), "checksum") != NULL, "saying so: %s", util_errmsg());
    free(frame);
    free(dst);
    free(big);
}

/* ------------------------------------------------------------------------
   Damage */

/* Read path as an object of n bytes; whether it failed with code and a
   message naming path. */
static bool
s_fails(const char *path, size_t n, int code)
{
    uint8_t *dst = malloc(n ? n : 1);
    int rc = exec_spill_read(path, dst, n);
    free(dst);
    if (rc != code || !strstr(util_errmsg(), path)) {
        diag("%s as %zu bytes: got %d (%s), wanted %d", path, n, rc, util_errmsg(), code);
        return false;
    }
    return true;
}

static void
s_damage(void)
{
    /* a small object, partly compressible, so that its file has a header,
       compressed data and a checksum, and every byte of it can be tried */
    size_t n = 3000;
    uint8_t src[3000], back[3000];
    for (size_t i = 0; i < n; i++)
        src[i] = i < 1000 ? (uint8_t) s_rand() : (uint8_t) (i % 17);
    char goodp[512], badp[512];
    snprintf(goodp, sizeof goodp, "%s", s_file("small"));
    snprintf(badp, sizeof badp, "%s", s_file("small.bad"));
    exec_spill_write(goodp, src, n);
    size_t flen;
    uint8_t *file = s_slurp(goodp, &flen);
    diag("a %zu-byte object: a %zu-byte file", n, flen);

    int missed = 0;
    for (size_t cut = 0; cut < flen; cut++) {
        s_dump(badp, file, cut);
        missed += !s_fails(badp, n, LUX_ECORRUPT);
    }
    is_int(missed, 0, "every truncation (%zu) is LUX_ECORRUPT naming the file", flen);
    s_dump(badp, file, 100);
    exec_spill_read(badp, back, n);
    ok(strstr(util_errmsg(), "truncated") != NULL, "saying truncated: %s", util_errmsg());

    /* a flip either is found, or changes nothing of the content: LZ4 has
       a few bits that decoding ignores (the match-length half of a block's
       last token); the content checksum vouches for the rest */
    int found = 0, harmless = 0, tries = 0;
    missed = 0;
    for (size_t pos = 0; pos < flen; pos++) {
        for (int bit = 0; bit < 8; bit += 3) {
            file[pos] ^= (uint8_t) (1 << bit);
            s_dump(badp, file, flen);
            file[pos] ^= (uint8_t) (1 << bit);
            int rc = exec_spill_read(badp, back, n);
            tries++;
            if (rc == LUX_ECORRUPT && strstr(util_errmsg(), badp))
                found++;
            else if (rc == 0 && memcmp(back, src, n) == 0)
                harmless++;
            else if (missed++ == 0)
                diag("byte %zu bit %d: %d (%s)", pos, bit, rc, util_errmsg());
        }
    }
    is_int(missed, 0, "every flipped bit (3 per byte) is LUX_ECORRUPT or harmless");
    ok(harmless * 100 < tries, "harmless ones are rare (%d of %d)", harmless, tries);

    is_int(exec_spill_read(goodp, back, n), 0, "the undamaged file still reads");
    ok(s_fails(goodp, n - 1, LUX_ECORRUPT), "asking for one byte less: LUX_ECORRUPT");
    ok(strstr(util_errmsg(), "holds 3000 bytes, not 2999") != NULL, "saying so: %s", util_errmsg());
    ok(s_fails(goodp, n + 1, LUX_ECORRUPT), "asking for one byte more: LUX_ECORRUPT");

    uint8_t *longer = malloc(flen + 5);
    memcpy(longer, file, flen);
    memcpy(longer + flen, "extra", 5);
    s_dump(badp, longer, flen + 5);
    ok(s_fails(badp, n, LUX_ECORRUPT), "bytes after the frame: LUX_ECORRUPT");
    ok(strstr(util_errmsg(), "after the end") != NULL, "saying so: %s", util_errmsg());
    free(longer);
    free(file);

    /* a large random object: raw blocks, where only the content checksum
       can find a flipped byte, and a cut in the middle */
    size_t bn = 10 * MiB;
    uint8_t *big = malloc(bn);
    s_fill_random(big, bn);
    exec_spill_write(goodp, big, bn);
    file = s_slurp(goodp, &flen);
    file[flen / 2] ^= 0x10;
    s_dump(badp, file, flen);
    ok(s_fails(badp, bn, LUX_ECORRUPT), "a flipped byte in a raw block: LUX_ECORRUPT");
    ok(strstr(util_errmsg(), "hecksum") != NULL, "found by the checksum: %s", util_errmsg());
    file[flen / 2] ^= 0x10;
    s_dump(badp, file, flen / 2);
    ok(s_fails(badp, bn, LUX_ECORRUPT), "cut in the middle: LUX_ECORRUPT");
    is_int(exec_spill_size(badp), (int64_t) bn, "its size still comes from the header");
    free(file);

    memset(big, 7, bn);
    exec_spill_write(goodp, big, bn);
    file = s_slurp(goodp, &flen);
    file[flen / 2] ^= 0x01;
    s_dump(badp, file, flen);
    ok(s_fails(badp, bn, LUX_ECORRUPT), "a flipped byte in a compressed block: LUX_ECORRUPT");
    free(file);
    free(big);

    /* not there, not LZ4 */
    const char *missing = s_file("missing");
    uint8_t b[16];
    ok(s_fails(missing, 16, LUX_ENOTFOUND), "a missing file: LUX_ENOTFOUND naming it");
    is_int(exec_spill_size(missing), LUX_ENOTFOUND, "its size: LUX_ENOTFOUND");
    s_dump(badp, "hello, world, this is not lz4\n", 30);
    ok(s_fails(badp, 30, LUX_ECORRUPT), "a text file: LUX_ECORRUPT");
    ok(strstr(util_errmsg(), "not an LZ4 frame") != NULL, "saying so: %s", util_errmsg());
    is_int(exec_spill_size(badp), LUX_ECORRUPT, "its size: LUX_ECORRUPT");
    s_dump(badp, "", 0);
    ok(s_fails(badp, 0, LUX_ECORRUPT), "an empty file: LUX_ECORRUPT");
    is_int(exec_spill_read(s_file("."), b, 16) < 0, 1, "a directory: an error");

    /* a write that cannot happen changes nothing */
    char nodir[600];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/obj", tap_tmpdir());
    is_int(exec_spill_write(nodir, b, 16), LUX_EIO, "writing into a missing directory: LUX_EIO");
    ok(strstr(util_errmsg(), "no/such/dir/obj.tmp") != NULL, "naming the file: %s", util_errmsg());
}

int
main(void)
{
    s_round_trips();
    s_damage();
    return done_testing();
}
