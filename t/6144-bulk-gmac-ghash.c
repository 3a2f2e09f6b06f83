/* 6144-bulk-gmac-ghash: our own GHASH (util_ghash, VPCLMULQDQ) and the
   bulk path's GMAC records made with it (exec_bulk_rec.c, doc/DESIGN.md
   7.3) give OpenSSL's tags, bit for bit:
   - util_ghash under random keys, with every loop this CPU has (one
     block at a time, AVX2, AVX-512), on 3,000 lengths of additional data
     (0, 1, 15, 16, 17, ... either side of each multiple of 16 up to
     1,100 bytes and of each multiple of 512 blocks up to 4 MiB, random
     ones up to 4 MiB) cut into random parts, against OpenSSL's
     AES-256-GCM over no plaintext (GMAC); and GCM with a ciphertext
     (util_ghash_pad between the parts) against OpenSSL's GCM tag;
   - exec_bulk_seal's GMAC records (a 20-byte header and the bytes as
     additional data, the nonce from direction and counter) on random
     keys, counters and lengths: OpenSSL's EVP GMAC tag of the same, and
     exec_bulk_open takes them;
   - one bit changed anywhere (the header, the bytes, the tag, the
     counter, the direction, the key) and exec_bulk_open refuses it;
   - a process with LUX_BULK_GHASH=openssl (OpenSSL's GCM, the fallback)
     opens our records and we open its. */
#include "tap.h"
#include "exec/exec_bulk_rec.h"
#include "util/util_ghash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HAVE_OPENSSL
#include <openssl/evp.h>

#define MAXN (4u << 20)
#define NLEN 3000

static uint64_t s_seed = 6144;
static uint8_t *s_buf; /* MAXN + 64 random bytes */

static void
s_fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t) tap_rand(&s_seed);
}

/* OpenSSL's AES-256-GCM tag: a (an bytes) as additional data in one
   piece, m (mn bytes) sealed into c */
static void
s_ossl(const uint8_t key[32], const uint8_t iv[12], const uint8_t *a, size_t an, const uint8_t *m,
       size_t mn, uint8_t *c, uint8_t tag[16])
{
    EVP_CIPHER_CTX *e = EVP_CIPHER_CTX_new();
    uint8_t last[16];
    int l;
    if (!e || !EVP_EncryptInit_ex(e, EVP_aes_256_gcm(), NULL, key, iv) ||
        (an && !EVP_EncryptUpdate(e, NULL, &l, a, (int) an)) ||
        (mn && !EVP_EncryptUpdate(e, c, &l, m, (int) mn)) || !EVP_EncryptFinal_ex(e, last, &l) ||
        !EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_AEAD_GET_TAG, 16, tag))
        bail("OpenSSL's AES-256-GCM failed");
    EVP_CIPHER_CTX_free(e);
}

/* One AES-256 block: E_K(in) */
static void
s_aes(const uint8_t key[32], const uint8_t in[16], uint8_t out[16])
{
    EVP_CIPHER_CTX *e = EVP_CIPHER_CTX_new();
    int l;
    if (!e || !EVP_EncryptInit_ex(e, EVP_aes_256_ecb(), NULL, key, NULL) ||
        !EVP_CIPHER_CTX_set_padding(e, 0) || !EVP_EncryptUpdate(e, out, &l, in, 16))
        bail("OpenSSL's AES-256 failed");
    EVP_CIPHER_CTX_free(e);
}

/* util_ghash's GHASH of p (n bytes) cut at up to 5 random places, then
   (when cn) zeros to the block's end and c (cn bytes), with the loop
   given, as GCM's tag: E_K(J0) ^ GHASH */
static void
s_ours(const uint8_t key[32], const uint8_t iv[12], int loop, const uint8_t *p, size_t n,
       const uint8_t *c, size_t cn, uint8_t tag[16])
{
    uint8_t zero[16] = {0}, h[16], j0[16], ek[16];
    util_ghash_key_t k;
    util_ghash_t g;
    s_aes(key, zero, h);
    memcpy(j0, iv, 12);
    j0[12] = j0[13] = j0[14] = 0;
    j0[15] = 1;
    s_aes(key, j0, ek);
    util_ghash_key(&k, h);
    k.loop = loop;
    util_ghash_start(&g, &k);
    size_t at = 0;
    int cuts = (int) (tap_rand(&s_seed) % 6);
    for (int i = 0; i < cuts && at < n; i++) {
        size_t part = (size_t) (tap_rand(&s_seed) % (n - at + 1));
        if (tap_rand(&s_seed) % 2)
            part %= 40; /* small parts too: a block begun and ended in pieces */
        util_ghash_add(&g, p + at, part);
        at += part;
    }
    util_ghash_add(&g, p + at, n - at);
    if (cn) {
        util_ghash_pad(&g);
        util_ghash_add(&g, c, cn);
    }
    util_ghash_end(&g, n, cn, tag);
    for (int i = 0; i < 16; i++)
        tag[i] ^= ek[i];
}

/* The i-th length of the 3,000 */
static size_t
s_len(int i)
{
    if (i < 1100)
        return (size_t) i; /* 0 .. 1,099: every one */
    if (i < 1100 + 2 * 256) {
        /* either side of each multiple of 512 blocks (8 KiB) up to 2 MiB:
           the AVX-512 loop's groups, AVX2's and the tail */
        int j = i - 1100;
        size_t base = (size_t) (j / 2 + 1) * 8192;
        return j % 2 ? base + tap_rand(&s_seed) % 40 : base - 1 - tap_rand(&s_seed) % 40;
    }
    if (i < 2900)
        return (size_t) (tap_rand(&s_seed) % 70000);
    return (size_t) (tap_rand(&s_seed) % (MAXN + 1));
}

/* --- util_ghash against OpenSSL ---------------------------------------- */

static void
s_check_ghash(void)
{
    int best = util_ghash_best(), bad[4] = {0}, badgcm = 0, ran[4] = {0};
    size_t firstbad[4] = {0};
    uint8_t *c = malloc(70000);
    if (!c)
        bail("no memory");
    for (int i = 0; i < NLEN; i++) {
        uint8_t key[32], iv[12], want[16], got[16];
        size_t n = s_len(i);
        const uint8_t *p = s_buf + tap_rand(&s_seed) % 64; /* any alignment */
        s_fill(key, sizeof key);
        s_fill(iv, sizeof iv);
        s_ossl(key, iv, p, n, NULL, 0, NULL, want);
        for (int loop = UTIL_GHASH_1; loop <= best; loop++) {
            s_ours(key, iv, loop, p, n, NULL, 0, got);
            ran[loop]++;
            if (memcmp(got, want, 16) != 0 && bad[loop]++ == 0)
                firstbad[loop] = n;
        }
        if (i % 10 == 0) {
            /* GCM with both parts: a short header, up to 70,000 bytes sealed */
            size_t an = n % 45, cn = (size_t) (tap_rand(&s_seed) % 70000);
            s_ossl(key, iv, p, an, p + an, cn, c, want);
            s_ours(key, iv, best, p, an, c, cn, got);
            badgcm += memcmp(got, want, 16) != 0;
        }
    }
    static const char *name[4] = {"", "one block at a time", "AVX2", "AVX-512"};
    for (int loop = UTIL_GHASH_1; loop <= 3; loop++) {
        if (loop > best) {
            skip(loop == UTIL_GHASH_AVX512 ? "no AVX-512 here" : "no AVX2 here");
            continue;
        }
        ok(bad[loop] == 0 && ran[loop] == NLEN,
           "util_ghash %s: OpenSSL's GMAC tag on %d of %d lengths, keys and cuts (first "
           "wrong: %zu bytes)",
           name[loop], ran[loop] - bad[loop], NLEN, firstbad[loop]);
    }
    ok(badgcm == 0,
       "util_ghash with a ciphertext (pad, then its bytes): OpenSSL's GCM tag "
       "(%d of %d wrong)",
       badgcm, NLEN / 10);
    free(c);
}

/* --- the bulk path's records ----------------------------------------- */

/* The bulk path's nonce (exec_bulk_rec.c): direction, 3 zeros, counter
   little-endian */
static void
s_nonce(uint8_t n[12], int dir, uint64_t ctr)
{
    memset(n, 0, 12);
    n[0] = (uint8_t) dir;
    for (int i = 0; i < 8; i++)
        n[4 + i] = (uint8_t) (ctr >> (8 * i));
}

static void
s_check_records(void)
{
    exec_bulk_aead_t x = {0}, y = {0};
    exec_bulk_key_t k;
    uint8_t *a = malloc(EXEC_BULK_HDR + MAXN), *cp = malloc(MAXN);
    int wrong = 0, refused = 0, copied = 0, n_rec = 400;
    size_t firstwrong = 0;
    if (!a || !cp)
        bail("no memory");
    for (int i = 0; i < n_rec; i++) {
        uint8_t h[EXEC_BULK_HDR], tag[16], want[16], iv[12];
        size_t n = i < 200 ? s_len(i * 5) : s_len(1100 + (i - 200) * 13 % 1900);
        uint64_t ctr = tap_rand(&s_seed) >> (tap_rand(&s_seed) % 64);
        int dir = (int) (tap_rand(&s_seed) % 2);
        if (i % 50 == 0)
            exec_bulk_key_new(&k, EXEC_BULK_GMAC); /* a new transfer now and then */
        const uint8_t *m = s_buf + tap_rand(&s_seed) % 64;
        exec_bulk_hdr(h, EXEC_BULK_R_CHUNK, 0, (uint32_t) n, (uint32_t) n, tap_rand(&s_seed));
        /* sealed from where it lies, or copied to cp on the way */
        bool copy = i % 3 == 0;
        exec_bulk_seal(&x, &k, dir, ctr, h, copy ? cp : NULL, m, n, tag);
        memcpy(a, h, EXEC_BULK_HDR);
        memcpy(a + EXEC_BULK_HDR, m, n);
        s_nonce(iv, dir, ctr);
        s_ossl(k.key, iv, a, EXEC_BULK_HDR + n, NULL, 0, NULL, want);
        if (memcmp(tag, want, 16) != 0 && wrong++ == 0)
            firstwrong = n;
        copied += copy && memcmp(cp, m, n) != 0;
        refused += !exec_bulk_open(&y, &k, dir, ctr, h, (uint8_t *) m, n, tag);
    }
    ok(wrong == 0,
       "exec_bulk_seal's GMAC: OpenSSL's GMAC tag of header and bytes on %d of "
       "%d records (first wrong: %zu bytes)",
       n_rec - wrong, n_rec, firstwrong);
    ok(refused == 0, "exec_bulk_open takes them (%d refused)", refused);
    ok(copied == 0, "a record sealed into a copy: the bytes copied as they are (%d not)", copied);

    /* one bit changed anywhere: refused */
    static const size_t lens[] = {0, 1, 12, 13, 300, 70001};
    int took = 0, tries = 0, whole = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t n = lens[li];
        uint8_t h[EXEC_BULK_HDR], tag[16], *m = cp;
        uint64_t ctr = tap_rand(&s_seed);
        memcpy(m, s_buf, n);
        exec_bulk_hdr(h, EXEC_BULK_R_CHUNK, 0, (uint32_t) n, (uint32_t) n, li);
        exec_bulk_seal(&x, &k, 0, ctr, h, NULL, m, n, tag);
        for (int b = 0; b < EXEC_BULK_HDR * 8; b++) {
            h[b / 8] ^= (uint8_t) (1u << (b % 8));
            took += exec_bulk_open(&y, &k, 0, ctr, h, m, n, tag), tries++;
            h[b / 8] ^= (uint8_t) (1u << (b % 8));
        }
        for (int b = 0; b < 128; b++) {
            tag[b / 8] ^= (uint8_t) (1u << (b % 8));
            took += exec_bulk_open(&y, &k, 0, ctr, h, m, n, tag), tries++;
            tag[b / 8] ^= (uint8_t) (1u << (b % 8));
        }
        for (size_t t = 0; t < (n * 8 < 600 ? n * 8 : 600); t++) {
            size_t b = n * 8 < 600 ? t : (size_t) (tap_rand(&s_seed) % (n * 8));
            m[b / 8] ^= (uint8_t) (1u << (b % 8));
            took += exec_bulk_open(&y, &k, 0, ctr, h, m, n, tag), tries++;
            m[b / 8] ^= (uint8_t) (1u << (b % 8));
        }
        for (int b = 0; b < 64; b++)
            took += exec_bulk_open(&y, &k, 0, ctr ^ (1ull << b), h, m, n, tag), tries++;
        took += exec_bulk_open(&y, &k, 1, ctr, h, m, n, tag), tries++;
        exec_bulk_key_t k2 = k;
        for (int b = 0; b < 256; b += 7) {
            k2.key[b / 8] ^= (uint8_t) (1u << (b % 8));
            took += exec_bulk_open(&y, &k2, 0, ctr, h, m, n, tag), tries++;
            k2.key[b / 8] ^= (uint8_t) (1u << (b % 8));
        }
        whole += exec_bulk_open(&y, &k, 0, ctr, h, m, n, tag); /* and the key back */
    }
    ok(took == 0,
       "one bit changed in the header, bytes, tag, counter, direction or key: "
       "refused %d of %d times",
       tries - took, tries);
    ok(whole == (int) (sizeof lens / sizeof lens[0]), "and the records as sealed open (%d of %zu)",
       whole, sizeof lens / sizeof lens[0]);
    exec_bulk_key_wipe(&k);
    exec_bulk_aead_free(&x);
    exec_bulk_aead_free(&y);
    free(a);
    free(cp);
}

/* --- against a process that uses OpenSSL's GCM ---------------------- */

#define XN 24
#define XLEN 100000
typedef struct {
    exec_bulk_key_t k;
    uint8_t h[XN][EXEC_BULK_HDR];
    uint8_t tag_theirs[XN][16]; /* sealed by the child (OpenSSL's GCM) */
    uint8_t tag_ours[XN][16];   /* sealed here */
    int they_opened;            /* how many of ours the child opened */
    char how[40];               /* the child's exec_bulk_gmac_how() */
} s_shared_t;

static size_t
s_xlen(int i)
{
    return (size_t) (i * 4099) % XLEN;
}

static void
s_check_mixed(void)
{
    s_shared_t *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int go[2], done[2];
    if (sh == MAP_FAILED || pipe(go) || pipe(done))
        bail("mmap or pipe failed");
    memset(sh, 0, sizeof *sh);
    exec_bulk_key_new(&sh->k, EXEC_BULK_GMAC);
    for (int i = 0; i < XN; i++)
        exec_bulk_hdr(sh->h[i], EXEC_BULK_R_CHUNK, 0, (uint32_t) s_xlen(i), (uint32_t) s_xlen(i),
                      (uint64_t) i << 20);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        bail("fork failed");
    if (pid == 0) {
        /* the other node: OpenSSL's GCM for GMAC; seals, then opens ours */
        exec_bulk_aead_t x = {0};
        char b;
        setenv("LUX_BULK_GHASH", "openssl", 1);
        snprintf(sh->how, sizeof sh->how, "%s", exec_bulk_gmac_how());
        for (int i = 0; i < XN; i++)
            exec_bulk_seal(&x, &sh->k, 0, (uint64_t) i, sh->h[i], NULL, s_buf, s_xlen(i),
                           sh->tag_theirs[i]);
        if (write(done[1], "s", 1) != 1 || read(go[0], &b, 1) != 1)
            _exit(2);
        for (int i = 0; i < XN; i++)
            sh->they_opened += exec_bulk_open(&x, &sh->k, 1, (uint64_t) i, sh->h[i], s_buf,
                                              s_xlen(i), sh->tag_ours[i]);
        exec_bulk_aead_free(&x);
        _exit(0);
    }
    exec_bulk_aead_t x = {0};
    int we_opened = 0, status = 0;
    char b;
    if (read(done[0], &b, 1) != 1)
        bail("the child died before sealing");
    for (int i = 0; i < XN; i++) {
        we_opened += exec_bulk_open(&x, &sh->k, 0, (uint64_t) i, sh->h[i], s_buf, s_xlen(i),
                                    sh->tag_theirs[i]);
        exec_bulk_seal(&x, &sh->k, 1, (uint64_t) i, sh->h[i], NULL, s_buf, s_xlen(i),
                       sh->tag_ours[i]);
    }
    if (write(go[1], "o", 1) != 1)
        bail("write to the child failed");
    waitpid(pid, &status, 0);
    ok(strncmp(exec_bulk_gmac_how(), "VPCLMULQDQ", 10) == 0,
       "GMAC records here by util_ghash (\"%s\")", exec_bulk_gmac_how());
    ok(strcmp(sh->how, "OpenSSL") == 0, "with LUX_BULK_GHASH=openssl by OpenSSL (\"%s\")", sh->how);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && sh->they_opened == XN,
       "OpenSSL's GCM opens our GMAC records (%d of %d)", sh->they_opened, XN);
    ok(we_opened == XN, "we open those it sealed (%d of %d)", we_opened, XN);
    exec_bulk_aead_free(&x);
    exec_bulk_key_wipe(&sh->k);
    munmap(sh, sizeof *sh);
    close(go[0]), close(go[1]), close(done[0]), close(done[1]);
}

int
main(void)
{
    if (!exec_bulk_gmac_here())
        skip_all("no GMAC records here (they need OpenSSL's libcrypto and AES-NI)");
    if (getenv("LUX_BULK_GHASH"))
        skip_all("LUX_BULK_GHASH is set: this test sets it itself");
    if (!(s_buf = malloc(MAXN + 64)))
        bail("no memory");
    s_fill(s_buf, MAXN + 64);
    if (!util_ghash_here()) {
        diag("no VPCLMULQDQ here: util_ghash is not used, GMAC is OpenSSL's");
        s_check_records();
        free(s_buf);
        return done_testing();
    }
    diag("util_ghash's best loop here: %d (3: AVX-512, 2: AVX2)", util_ghash_best());
    s_check_ghash();
    s_check_mixed(); /* first: its child must read LUX_BULK_GHASH afresh */
    s_check_records();
    free(s_buf);
    return done_testing();
}
#else
int
main(void)
{
    skip_all("lux is built without OpenSSL's libcrypto: no GMAC records");
}
#endif
