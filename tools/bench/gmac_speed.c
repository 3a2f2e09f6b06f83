/*  gmac-speed - the bulk path's record ciphers alone, on 1 MiB records
    (doc/benchmarks.md, stop 46: a GHASH of our own):

      ossl-gmac     OpenSSL's AES-256-GCM with the 20-byte header and the
                    bytes as additional data (the GMAC records as before
                    stop 46: a key set per record, as exec_bulk_rec did)
      gmac-1        E_K(J0) by OpenSSL and util_ghash one block at a time
      gmac-avx2     ... util_ghash's AVX2 loop (2 blocks per VPCLMULQDQ)
      gmac-avx512   ... its AVX-512 loop (4 blocks per VPCLMULQDQ)
      ossl-gcm      OpenSSL's AES-256-GCM sealing the bytes (the default)
      ossl-ctr      OpenSSL's AES-256-CTR over the bytes, no tag
      ctr+ghash     AES-256-GCM made of OpenSSL's AES-256-CTR and
                    util_ghash's best loop over the sealed bytes (what
                    the default could be; its tags are checked against
                    OpenSSL's before the clock starts)

    Each round runs every one of them over the same records in turn (the
    first one rotating), each over SPAN bytes of records taken in order
    from a buffer of SPAN bytes (256 MiB: from memory, as a pull's chunks;
    --hot: the same 1 MiB each time, from the cache). It prints per
    variant the median over the rounds of MB/s of the thread's CPU time
    (1 MB = 10^6 bytes; CLOCK_THREAD_CPUTIME_ID, which load moves less
    than the wall clock), its range, and ms of CPU per GiB.

      tools/bench/gmac-speed [--rounds N] [--span MIB] [--hot]

    Every tag is checked against OpenSSL's once first; a mismatch stops it
    (exit 1). Needs OpenSSL's libcrypto and VPCLMULQDQ for the util_ghash
    rows (rows this CPU cannot run are left out).
*/
#include "util/util_ghash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_OPENSSL
#include <openssl/evp.h>

#define REC (1u << 20)
#define HDR 20
#define NV 7

static const char *s_name[NV] = {"ossl-gmac", "gmac-1",   "gmac-avx2", "gmac-avx512",
                                 "ossl-gcm",  "ossl-ctr", "ctr+ghash"};

static uint8_t s_key[32];
static EVP_CIPHER_CTX *s_gcm, *s_ecb, *s_ctr;
static util_ghash_key_t s_gk;
static uint8_t *s_out;

static void
s_nonce(uint8_t iv[12], uint64_t ctr)
{
    memset(iv, 0, 12);
    memcpy(iv + 4, &ctr, 8);
}

static void
s_ossl_gmac(const uint8_t *hdr, const uint8_t *m, size_t n, uint64_t ctr, uint8_t tag[16])
{
    uint8_t iv[12], none[16];
    int l;
    s_nonce(iv, ctr);
    if (!EVP_EncryptInit_ex(s_gcm, NULL, NULL, s_key, iv) ||
        !EVP_EncryptUpdate(s_gcm, NULL, &l, hdr, HDR) ||
        (n && !EVP_EncryptUpdate(s_gcm, NULL, &l, m, (int) n)) ||
        !EVP_EncryptFinal_ex(s_gcm, none, &l) ||
        !EVP_CIPHER_CTX_ctrl(s_gcm, EVP_CTRL_AEAD_GET_TAG, 16, tag))
        abort();
}

static void
s_ossl_gcm(const uint8_t *hdr, const uint8_t *m, size_t n, uint64_t ctr, uint8_t tag[16])
{
    uint8_t iv[12];
    int l;
    s_nonce(iv, ctr);
    if (!EVP_EncryptInit_ex(s_gcm, NULL, NULL, s_key, iv) ||
        !EVP_EncryptUpdate(s_gcm, NULL, &l, hdr, HDR) ||
        !EVP_EncryptUpdate(s_gcm, s_out, &l, m, (int) n) ||
        !EVP_EncryptFinal_ex(s_gcm, s_out + l, &l) ||
        !EVP_CIPHER_CTX_ctrl(s_gcm, EVP_CTRL_AEAD_GET_TAG, 16, tag))
        abort();
}

/* E_K(J0) for the 12-byte nonce of ctr */
static void
s_ekj0(uint64_t ctr, uint8_t ek[16])
{
    uint8_t j0[16];
    int l;
    s_nonce(j0, ctr);
    j0[12] = j0[13] = j0[14] = 0;
    j0[15] = 1;
    if (!EVP_EncryptUpdate(s_ecb, ek, &l, j0, 16))
        abort();
}

static void
s_gmac(int loop, const uint8_t *hdr, const uint8_t *m, size_t n, uint64_t ctr, uint8_t tag[16])
{
    uint8_t ek[16];
    util_ghash_t g;
    s_ekj0(ctr, ek);
    s_gk.loop = loop;
    util_ghash_start(&g, &s_gk);
    util_ghash_add(&g, hdr, HDR);
    util_ghash_add(&g, m, n);
    util_ghash_end(&g, HDR + n, 0, tag);
    for (int i = 0; i < 16; i++)
        tag[i] ^= ek[i];
}

static void
s_ossl_ctr(const uint8_t *m, size_t n, uint64_t ctr)
{
    uint8_t iv[16];
    int l;
    s_nonce(iv, ctr);
    iv[12] = iv[13] = iv[14] = 0;
    iv[15] = 2; /* GCM's first counter block: inc32(J0) */
    if (!EVP_EncryptInit_ex(s_ctr, NULL, NULL, NULL, iv) ||
        !EVP_EncryptUpdate(s_ctr, s_out, &l, m, (int) n))
        abort();
}

static void
s_ctr_ghash(const uint8_t *hdr, const uint8_t *m, size_t n, uint64_t ctr, uint8_t tag[16])
{
    uint8_t ek[16];
    util_ghash_t g;
    s_ossl_ctr(m, n, ctr);
    s_ekj0(ctr, ek);
    s_gk.loop = util_ghash_best();
    util_ghash_start(&g, &s_gk);
    util_ghash_add(&g, hdr, HDR);
    util_ghash_pad(&g);
    util_ghash_add(&g, s_out, n);
    util_ghash_end(&g, HDR, n, tag);
    for (int i = 0; i < 16; i++)
        tag[i] ^= ek[i];
}

static bool
s_can(int v)
{
    int best = util_ghash_best();
    return (v != 1 && v != 2 && v != 3 && v != 6) || (v == 1 && best) || (v == 2 && best) ||
           (v == 3 && best == UTIL_GHASH_AVX512) || (v == 6 && best);
}

static void
s_run(int v, const uint8_t *hdr, const uint8_t *m, size_t n, uint64_t ctr, uint8_t tag[16])
{
    switch (v) {
    case 0:
        s_ossl_gmac(hdr, m, n, ctr, tag);
        break;
    case 1:
        s_gmac(UTIL_GHASH_1, hdr, m, n, ctr, tag);
        break;
    case 2:
        s_gmac(UTIL_GHASH_AVX2, hdr, m, n, ctr, tag);
        break;
    case 3:
        s_gmac(UTIL_GHASH_AVX512, hdr, m, n, ctr, tag);
        break;
    case 4:
        s_ossl_gcm(hdr, m, n, ctr, tag);
        break;
    case 5:
        s_ossl_ctr(m, n, ctr);
        memset(tag, 0, 16);
        break;
    default:
        s_ctr_ghash(hdr, m, n, ctr, tag);
        break;
    }
}

static double
s_now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int
s_cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
    int rounds = 7;
    size_t span = 256u << 20;
    int hot = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--span") == 0 && i + 1 < argc)
            span = (size_t) atoi(argv[++i]) << 20;
        else if (strcmp(argv[i], "--hot") == 0)
            hot = 1;
        else {
            fprintf(stderr, "usage: gmac-speed [--rounds N] [--span MIB] [--hot]\n");
            return 2;
        }
    }
    if (rounds < 1 || span < REC) {
        fprintf(stderr, "gmac-speed: --rounds from 1, --span from 1\n");
        return 2;
    }
    uint8_t *buf = malloc(span), hdr[HDR];
    s_out = malloc(REC);
    if (!buf || !s_out)
        return 1;
    uint64_t r = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < span; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        buf[i] = (uint8_t) r;
    }
    for (int i = 0; i < 32; i++)
        s_key[i] = (uint8_t) (i * 7 + 1);
    for (int i = 0; i < HDR; i++)
        hdr[i] = (uint8_t) i;
    s_gcm = EVP_CIPHER_CTX_new();
    s_ecb = EVP_CIPHER_CTX_new();
    s_ctr = EVP_CIPHER_CTX_new();
    uint8_t zero[16] = {0}, h[16];
    int l;
    if (!s_gcm || !s_ecb || !s_ctr ||
        !EVP_EncryptInit_ex(s_gcm, EVP_aes_256_gcm(), NULL, NULL, NULL) ||
        !EVP_EncryptInit_ex(s_ecb, EVP_aes_256_ecb(), NULL, s_key, NULL) ||
        !EVP_EncryptInit_ex(s_ctr, EVP_aes_256_ctr(), NULL, s_key, NULL) ||
        !EVP_EncryptUpdate(s_ecb, h, &l, zero, 16))
        return 1;
    if (util_ghash_here())
        util_ghash_key(&s_gk, h);

    /* the tags first: every variant's against OpenSSL's, a few lengths */
    static const size_t lens[] = {0, 1, 12, 13, 100, 4096, REC - 1, REC};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        uint8_t want[16], got[16];
        s_ossl_gmac(hdr, buf + 3, lens[i], i, want);
        for (int v = 1; v <= 3; v++)
            if (s_can(v)) {
                s_run(v, hdr, buf + 3, lens[i], i, got);
                if (memcmp(got, want, 16) != 0) {
                    fprintf(stderr, "gmac-speed: %s's tag is not OpenSSL's (%zu bytes)\n",
                            s_name[v], lens[i]);
                    return 1;
                }
            }
        if (s_can(6) && lens[i] > 0) {
            uint8_t c[16];
            s_ossl_gcm(hdr, buf + 3, lens[i], i, want);
            memcpy(c, s_out, lens[i] < 16 ? lens[i] : 16);
            s_ctr_ghash(hdr, buf + 3, lens[i], i, got);
            if (memcmp(got, want, 16) != 0 || memcmp(c, s_out, lens[i] < 16 ? lens[i] : 16)) {
                fprintf(stderr, "gmac-speed: ctr+ghash is not OpenSSL's GCM (%zu bytes)\n",
                        lens[i]);
                return 1;
            }
        }
    }

    double *mbs = calloc((size_t) NV * rounds, sizeof *mbs);
    size_t nrec = span / REC;
    uint64_t ctr = 100;
    for (int k = 0; k < rounds; k++) {
        for (int j = 0; j < NV; j++) {
            int v = (j + k) % NV;
            if (!s_can(v))
                continue;
            uint8_t tag[16];
            double t0 = s_now(CLOCK_THREAD_CPUTIME_ID);
            for (size_t i = 0; i < nrec; i++)
                s_run(v, hdr, buf + (hot ? 0 : i * REC), REC, ctr++, tag);
            double t = s_now(CLOCK_THREAD_CPUTIME_ID) - t0;
            mbs[v * rounds + k] = (double) nrec * REC / t / 1e6;
        }
    }
    printf("# gmac-speed: %d rounds, %zu MiB of 1 MiB records a variant a round%s\n", rounds,
           span >> 20, hot ? ", the same record (--hot)" : "");
    printf("%-12s %9s %9s %9s %10s\n", "variant", "MB/s", "min", "max", "ms/GiB");
    for (int v = 0; v < NV; v++) {
        if (!s_can(v))
            continue;
        double *a = mbs + v * rounds;
        qsort(a, (size_t) rounds, sizeof *a, s_cmp);
        double med = rounds % 2 ? a[rounds / 2] : (a[rounds / 2 - 1] + a[rounds / 2]) / 2;
        printf("%-12s %9.0f %9.0f %9.0f %10.1f\n", s_name[v], med, a[0], a[rounds - 1],
               (double) (1u << 30) / (med * 1e6) * 1e3);
    }
    return 0;
}
#else
int
main(void)
{
    fprintf(stderr, "gmac-speed: needs lux built with OpenSSL's libcrypto\n");
    return 2;
}
#endif
