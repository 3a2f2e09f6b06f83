/*  exec_bulk_rec - the bulk path's records (doc/DESIGN.md 7.3; the format
    is exec_bulk.h's): a transfer's key, the cipher each end can use, a
    record's header, sealing and opening a record, and lz4's probe.

    Sealing and opening take a context of their own (exec_bulk_aead_t:
    OpenSSL's, made on first use) so that several threads may seal or
    open records of one transfer at once, each with its own context
    (exec_bulk.c's sealing slots). Nothing here keeps state between calls
    but that context.
*/
#ifndef EXEC_BULK_REC_H_INCLUDED
#define EXEC_BULK_REC_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXEC_BULK_KEY 32
#define EXEC_BULK_HDR 20               /* type, codec, 0 u16, plen, clen, off: the additional data */
#define EXEC_BULK_REC (EXEC_BULK_HDR + 16) /* a record's header and tag */

/* The records' types (exec_bulk.h) */
enum { EXEC_BULK_R_REQ = 1, EXEC_BULK_R_CREDIT = 2, EXEC_BULK_R_CHUNK = 3 };

/* The records' ciphers. GMAC is integrity only (LUX_BULK_CIPHER=gmac at
   both ends, DESIGN 10): AES-256-GCM over no plaintext, with the header
   and the bytes as the additional data, so the tag covers both and the
   bytes go as they are. */
enum { EXEC_BULK_AES256GCM = 1, EXEC_BULK_CHACHA20 = 2, EXEC_BULK_GMAC = 3 };

/* A transfer's secret, made by the source for one pull. */
typedef struct {
    uint8_t key[EXEC_BULK_KEY];
    uint64_t xid;  /* names the transfer on the bulk port (not a secret) */
    int cipher;    /* EXEC_BULK_* */
} exec_bulk_key_t;

/* One direction's cipher context for one thread (zeroed to start). */
typedef struct {
    void *evp;     /* OpenSSL's EVP_CIPHER_CTX, made on first use; NULL without */
    void *gmac;    /* GMAC by util_ghash: its key's AES and H's powers, made on
                      the first GMAC record where the CPU can; NULL without */
} exec_bulk_aead_t;

/* The cipher this CPU does fastest (aes256gcm when AES-NI is here). */
int exec_bulk_cipher_here(void);
/* Whether this build and CPU can seal and open GMAC records (OpenSSL's
   AES-GCM, whose additional data may come in parts, and AES-NI). */
bool exec_bulk_gmac_here(void);
/* How GMAC records are tagged here, for the log: util_ghash's loop
   ("VPCLMULQDQ, AVX-512" or "..., AVX2") where the CPU has VPCLMULQDQ,
   else (or with LUX_BULK_GHASH=openssl) "OpenSSL" (its AES-256-GCM).
   Either gives the same tags. */
const char *exec_bulk_gmac_how(void);
/* The cipher's name, as logs and lux bench say it. */
const char *exec_bulk_cipher_name(int cipher);
/* A fresh key for a transfer: cipher as given, key and xid random. */
void exec_bulk_key_new(exec_bulk_key_t *k, int cipher);
void exec_bulk_key_wipe(exec_bulk_key_t *k);

/* A record's header into h; the fields back out of it. */
void exec_bulk_hdr(uint8_t h[EXEC_BULK_HDR], int type, int codec, uint32_t plen, uint32_t clen,
                   uint64_t off);
uint32_t exec_bulk_u32(const uint8_t *p);
uint64_t exec_bulk_u64(const uint8_t *p);

/* Seal m (n bytes) into c (may be m) with the header h as additional
   data, the nonce dir | counter, x's context; the tag into tag. With
   EXEC_BULK_GMAC m is not encrypted: the tag covers h and m, and m is
   copied to c as it is unless c is NULL (a chunk sent from where it
   lies) or m. */
void exec_bulk_seal(exec_bulk_aead_t *x, const exec_bulk_key_t *k, int dir, uint64_t ctr,
                    const uint8_t h[EXEC_BULK_HDR], uint8_t *c, const uint8_t *m, size_t n,
                    uint8_t tag[16]);
/* Open c (n bytes) in place: true when it is what the other end sealed
   (with GMAC: when the tag is that of h and c, which stay as they are). */
bool exec_bulk_open(exec_bulk_aead_t *x, const exec_bulk_key_t *k, int dir, uint64_t ctr,
                    const uint8_t h[EXEC_BULK_HDR], uint8_t *c, size_t n, const uint8_t tag[16]);
/* The context goes (OpenSSL cleanses its key schedule). */
void exec_bulk_aead_free(exec_bulk_aead_t *x);

/* A chunk of len bytes at src lz4-compressed into dst (cap bytes, at
   least LZ4_compressBound(len)) when it pays: lz4 of its first
   EXEC_BULK_PROBE bytes must come under 3/4 of them, and the whole under
   7/8 of len. Its compressed length, or 0 (send it raw). The one probe
   of both paths of a pull (the bulk port's chunks, CURVE's CHUNK). */
#define EXEC_BULK_PROBE 65536
size_t exec_bulk_lz4(const uint8_t *src, uint32_t len, uint8_t *dst, size_t cap);

#endif
