/*  exec_bulk_rec - the bulk path's records: keys, ciphers, sealing and
    opening, lz4's probe (see exec_bulk_rec.h; the format is exec_bulk.h's).
*/
#include "exec_bulk_rec.h"
#include "../util/util_ghash.h"
#include "../util/util_log.h"

#include <lz4.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_OPENSSL
#include <openssl/evp.h>
#endif

int
exec_bulk_cipher_here(void)
{
    if (sodium_init() < 0)
        return EXEC_BULK_CHACHA20;
    return crypto_aead_aes256gcm_is_available() ? EXEC_BULK_AES256GCM : EXEC_BULK_CHACHA20;
}

bool
exec_bulk_gmac_here(void)
{
#ifdef HAVE_OPENSSL
    return exec_bulk_cipher_here() == EXEC_BULK_AES256GCM;
#else
    return false; /* libsodium's AES-GCM takes its additional data in one piece */
#endif
}

const char *
exec_bulk_cipher_name(int cipher)
{
    return cipher == EXEC_BULK_AES256GCM ? "aes256gcm"
           : cipher == EXEC_BULK_GMAC    ? "gmac"
                                         : "chacha20poly1305";
}

void
exec_bulk_key_new(exec_bulk_key_t *k, int cipher)
{
    if (sodium_init() < 0)
        log_warn("bulk: sodium_init failed");
    randombytes_buf(k->key, sizeof k->key);
    randombytes_buf(&k->xid, sizeof k->xid);
    k->cipher = cipher;
}

void
exec_bulk_key_wipe(exec_bulk_key_t *k)
{
    sodium_memzero(k, sizeof *k);
}

static void
s_nonce(uint8_t n[12], int dir, uint64_t ctr)
{
    memset(n, 0, 12);
    n[0] = (uint8_t) dir;
    for (int i = 0; i < 8; i++)
        n[4 + i] = (uint8_t) (ctr >> (8 * i));
}

void
exec_bulk_hdr(uint8_t h[EXEC_BULK_HDR], int type, int codec, uint32_t plen, uint32_t clen,
              uint64_t off)
{
    memset(h, 0, EXEC_BULK_HDR);
    h[0] = (uint8_t) type;
    h[1] = (uint8_t) codec;
    for (int i = 0; i < 4; i++) {
        h[4 + i] = (uint8_t) (plen >> (8 * i));
        h[8 + i] = (uint8_t) (clen >> (8 * i));
    }
    for (int i = 0; i < 8; i++)
        h[12 + i] = (uint8_t) (off >> (8 * i));
}

uint32_t
exec_bulk_u32(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

uint64_t
exec_bulk_u64(const uint8_t *p)
{
    return (uint64_t) exec_bulk_u32(p) | (uint64_t) exec_bulk_u32(p + 4) << 32;
}

#ifdef HAVE_OPENSSL
/* AES-256-GCM by OpenSSL's EVP: the same records as libsodium's
   crypto_aead_aes256gcm (12-byte nonce, 16-byte tag, the header as
   additional data), so either end may use either; OpenSSL's is 1.4-2.5
   times as fast on this machine's AVX-512/VAES CPU (doc/benchmarks.md).
   NULL when OpenSSL fails (the caller then uses libsodium). */
static EVP_CIPHER_CTX *
s_evp(exec_bulk_aead_t *x, bool enc)
{
    EVP_CIPHER_CTX **ctx = (EVP_CIPHER_CTX **) &x->evp;
    if (!*ctx && (*ctx = EVP_CIPHER_CTX_new()) &&
        !(enc ? EVP_EncryptInit_ex(*ctx, EVP_aes_256_gcm(), NULL, NULL, NULL)
              : EVP_DecryptInit_ex(*ctx, EVP_aes_256_gcm(), NULL, NULL, NULL))) {
        EVP_CIPHER_CTX_free(*ctx);
        *ctx = NULL;
    }
    return *ctx;
}
#endif

#ifdef HAVE_OPENSSL
/* GMAC with our own GHASH (util_ghash: VPCLMULQDQ, 2.2 times OpenSSL
   3.0's on this machine, doc/benchmarks.md stop 46) where the CPU has
   it and LUX_BULK_GHASH is not "openssl": the tag is AES-256-GCM's over
   no plaintext, E_K(J0) ^ GHASH_H(A || pad || len(A) || 0), A the
   header and the bytes, H = E_K(0^128), J0 = nonce || 0^31 || 1; AES
   itself is OpenSSL's, one block at a time. The same tags as OpenSSL's
   GCM (t/6144), so either end may use either. */
typedef struct {
    EVP_CIPHER_CTX *ecb;        /* AES-256 of single blocks under key */
    uint8_t key[EXEC_BULK_KEY]; /* the key ecb and gk are for */
    bool keyed;                 /* ecb and gk are key's */
    util_ghash_key_t gk;        /* H's powers */
} s_gmac_t;

/* Whether GMAC goes by util_ghash here: read once */
static bool
s_ghash_ours(void)
{
    static int ours = -1; /* racing first readers store the same */
    int o = __atomic_load_n(&ours, __ATOMIC_RELAXED);
    if (o < 0) {
        const char *e = getenv("LUX_BULK_GHASH");
        o = util_ghash_here() && !(e && strcmp(e, "openssl") == 0);
        __atomic_store_n(&ours, o, __ATOMIC_RELAXED);
    }
    return o;
}

/* The GMAC tag of h and m (n bytes) under k and nonce by util_ghash,
   into tag. False when this CPU cannot or OpenSSL failed (the caller
   then uses OpenSSL's GCM). */
static bool
s_gmac(exec_bulk_aead_t *x, const exec_bulk_key_t *k, const uint8_t nonce[12],
       const uint8_t h[EXEC_BULK_HDR], const uint8_t *m, size_t n, uint8_t tag[16])
{
    s_gmac_t *g = x->gmac;
    uint8_t blk[16], ek[16];
    int l;
    if (!s_ghash_ours())
        return false;
    if (!g) {
        if (!(g = calloc(1, sizeof *g)))
            return false;
        if (!(g->ecb = EVP_CIPHER_CTX_new())) {
            free(g);
            return false;
        }
        x->gmac = g;
    }
    if (!g->keyed || sodium_memcmp(g->key, k->key, EXEC_BULK_KEY) != 0) {
        /* a new transfer key: H = E_K(0^128) and its powers, once */
        g->keyed = false;
        memset(blk, 0, sizeof blk);
        if (!EVP_EncryptInit_ex(g->ecb, EVP_aes_256_ecb(), NULL, k->key, NULL) ||
            !EVP_CIPHER_CTX_set_padding(g->ecb, 0) ||
            !EVP_EncryptUpdate(g->ecb, ek, &l, blk, 16))
            return false;
        util_ghash_key(&g->gk, ek);
        memcpy(g->key, k->key, EXEC_BULK_KEY);
        g->keyed = true;
    }
    memcpy(blk, nonce, 12);
    blk[12] = blk[13] = blk[14] = 0;
    blk[15] = 1;
    if (!EVP_EncryptUpdate(g->ecb, ek, &l, blk, 16))
        return false;
    util_ghash_t gh;
    util_ghash_start(&gh, &g->gk);
    util_ghash_add(&gh, h, EXEC_BULK_HDR);
    util_ghash_add(&gh, m, n);
    util_ghash_end(&gh, EXEC_BULK_HDR + n, 0, tag);
    for (int i = 0; i < 16; i++)
        tag[i] ^= ek[i];
    sodium_memzero(ek, sizeof ek);
    return true;
}
#endif

const char *
exec_bulk_gmac_how(void)
{
#ifdef HAVE_OPENSSL
    if (s_ghash_ours())
        return util_ghash_best() == UTIL_GHASH_AVX512 ? "VPCLMULQDQ, AVX-512"
                                                       : "VPCLMULQDQ, AVX2";
#endif
    return "OpenSSL";
}

void
exec_bulk_seal(exec_bulk_aead_t *x, const exec_bulk_key_t *k, int dir, uint64_t ctr,
               const uint8_t h[EXEC_BULK_HDR], uint8_t *c, const uint8_t *m, size_t n,
               uint8_t tag[16])
{
    uint8_t nonce[12];
    s_nonce(nonce, dir, ctr);
#ifdef HAVE_OPENSSL
    EVP_CIPHER_CTX *e;
    int l;
    uint8_t none[16];
    if (k->cipher == EXEC_BULK_GMAC) {
        /* the header and the bytes as additional data, nothing encrypted */
        if (c && c != m)
            memmove(c, m, n);
        if (s_gmac(x, k, nonce, h, m, n, tag))
            return;
        if ((e = s_evp(x, true)) && EVP_EncryptInit_ex(e, NULL, NULL, k->key, nonce) &&
            EVP_EncryptUpdate(e, NULL, &l, h, EXEC_BULK_HDR) &&
            (n == 0 || EVP_EncryptUpdate(e, NULL, &l, m, (int) n)) &&
            EVP_EncryptFinal_ex(e, none, &l) &&
            EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_AEAD_GET_TAG, 16, tag))
            return;
        memset(tag, 0, 16); /* OpenSSL failed: a tag that opens nothing */
        return;
    }
    if (k->cipher == EXEC_BULK_AES256GCM && (e = s_evp(x, true)) &&
        EVP_EncryptInit_ex(e, NULL, NULL, k->key, nonce) &&
        EVP_EncryptUpdate(e, NULL, &l, h, EXEC_BULK_HDR) &&
        EVP_EncryptUpdate(e, c, &l, m, (int) n) && EVP_EncryptFinal_ex(e, c + l, &l) &&
        EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_AEAD_GET_TAG, 16, tag))
        return;
#else
    (void) x;
    if (k->cipher == EXEC_BULK_GMAC) { /* never offered without OpenSSL */
        memset(tag, 0, 16);
        return;
    }
#endif
    if (k->cipher == EXEC_BULK_AES256GCM)
        crypto_aead_aes256gcm_encrypt_detached(c, tag, NULL, m, n, h, EXEC_BULK_HDR, NULL, nonce,
                                               k->key);
    else
        crypto_aead_chacha20poly1305_ietf_encrypt_detached(c, tag, NULL, m, n, h, EXEC_BULK_HDR,
                                                           NULL, nonce, k->key);
}

bool
exec_bulk_open(exec_bulk_aead_t *x, const exec_bulk_key_t *k, int dir, uint64_t ctr,
               const uint8_t h[EXEC_BULK_HDR], uint8_t *c, size_t n, const uint8_t tag[16])
{
    uint8_t nonce[12];
    s_nonce(nonce, dir, ctr);
#ifdef HAVE_OPENSSL
    EVP_CIPHER_CTX *d;
    int l;
    uint8_t none[16], want[16];
    if (k->cipher == EXEC_BULK_GMAC && s_gmac(x, k, nonce, h, c, n, want)) {
        bool same = sodium_memcmp(want, tag, 16) == 0;
        sodium_memzero(want, sizeof want);
        return same;
    }
    if (k->cipher == EXEC_BULK_GMAC)
        return (d = s_evp(x, false)) && EVP_DecryptInit_ex(d, NULL, NULL, k->key, nonce) &&
               EVP_DecryptUpdate(d, NULL, &l, h, EXEC_BULK_HDR) &&
               (n == 0 || EVP_DecryptUpdate(d, NULL, &l, c, (int) n)) &&
               EVP_CIPHER_CTX_ctrl(d, EVP_CTRL_AEAD_SET_TAG, 16, (void *) tag) &&
               EVP_DecryptFinal_ex(d, none, &l) > 0;
    if (k->cipher == EXEC_BULK_AES256GCM && (d = s_evp(x, false)))
        return EVP_DecryptInit_ex(d, NULL, NULL, k->key, nonce) &&
               EVP_DecryptUpdate(d, NULL, &l, h, EXEC_BULK_HDR) &&
               EVP_DecryptUpdate(d, c, &l, c, (int) n) &&
               EVP_CIPHER_CTX_ctrl(d, EVP_CTRL_AEAD_SET_TAG, 16, (void *) tag) &&
               EVP_DecryptFinal_ex(d, c + l, &l) > 0;
#else
    (void) x;
    if (k->cipher == EXEC_BULK_GMAC)
        return false; /* never offered without OpenSSL */
#endif
    if (k->cipher == EXEC_BULK_AES256GCM)
        return crypto_aead_aes256gcm_decrypt_detached(c, NULL, c, n, tag, h, EXEC_BULK_HDR,
                                                      nonce, k->key) == 0;
    return crypto_aead_chacha20poly1305_ietf_decrypt_detached(c, NULL, c, n, tag, h,
                                                              EXEC_BULK_HDR, nonce, k->key) == 0;
}

void
exec_bulk_aead_free(exec_bulk_aead_t *x)
{
#ifdef HAVE_OPENSSL
    EVP_CIPHER_CTX_free(x->evp); /* cleansed: the last key's schedule goes too */
    s_gmac_t *g = x->gmac;
    if (g) {
        EVP_CIPHER_CTX_free(g->ecb);
        sodium_memzero(g, sizeof *g); /* the key and H's powers */
        free(g);
    }
#endif
    x->evp = NULL;
    x->gmac = NULL;
}

size_t
exec_bulk_lz4(const uint8_t *src, uint32_t len, uint8_t *dst, size_t cap)
{
    if (len < 4096 || cap < (size_t) LZ4_compressBound((int) len))
        return 0;
    int probe = len < EXEC_BULK_PROBE ? (int) len : EXEC_BULK_PROBE;
    int pn = LZ4_compress_default((const char *) src, (char *) dst, probe, (int) cap);
    if (pn <= 0 || pn >= probe * 3 / 4)
        return 0; /* only a clear gain on the probe pays for compressing the rest */
    int zn = LZ4_compress_default((const char *) src, (char *) dst, (int) len, (int) cap);
    return zn > 0 && (size_t) zn < (size_t) len * 7 / 8 ? (size_t) zn : 0;
}
