/*  util_buf - a growable byte buffer for encoding, and a bounds-checked
    reader for decoding what a peer sent.

    All integers are little-endian on the wire. The writer records an
    allocation failure in `oom` instead of failing each put, so an encoder
    checks once at the end. The reader never reads past its end: a short
    input sets `bad` and every later get returns zeros, so a decoder checks
    once at the end too. That is what makes decoding garbage safe.
*/
#ifndef UTIL_BUF_H_INCLUDED
#define UTIL_BUF_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint8_t *data; /* owned bytes */
    size_t len;    /* bytes written */
    size_t cap;    /* bytes allocated */
    bool oom;      /* an allocation failed; contents are incomplete */
} util_buf_t;

void util_buf_init(util_buf_t *b);
void util_buf_free(util_buf_t *b);
/* Make room for n more bytes; false (and oom set) when memory ran out. */
bool util_buf_reserve(util_buf_t *b, size_t n);
/* Hand the bytes to the caller (who frees them) and reset the buffer. */
uint8_t *util_buf_take(util_buf_t *b, size_t *len);

void util_buf_put(util_buf_t *b, const void *p, size_t n);
void util_buf_put_u8(util_buf_t *b, uint8_t v);
void util_buf_put_u16(util_buf_t *b, uint16_t v);
void util_buf_put_u32(util_buf_t *b, uint32_t v);
void util_buf_put_u64(util_buf_t *b, uint64_t v);
/* A string as u16 length + bytes; longer strings are cut at 65535. */
void util_buf_put_str(util_buf_t *b, const char *s, size_t n);
/* A blob as u32 length + bytes. */
void util_buf_put_blob(util_buf_t *b, const void *p, size_t n);

static inline void
util_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
}
static inline void
util_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}
static inline void
util_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}
static inline uint16_t
util_rd16(const uint8_t *p)
{
    return (uint16_t) (p[0] | p[1] << 8);
}
static inline uint32_t
util_rd32(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
           (uint32_t) p[3] << 24;
}
static inline uint64_t
util_rd64(const uint8_t *p)
{
    return (uint64_t) util_rd32(p) | (uint64_t) util_rd32(p + 4) << 32;
}

typedef struct {
    const uint8_t *p;   /* next byte */
    const uint8_t *end; /* one past the last byte */
    bool bad;           /* an input was short or malformed */
} util_rd_t;

static inline void
util_rd_init(util_rd_t *r, const void *p, size_t n)
{
    r->p = (const uint8_t *) p;
    r->end = r->p + n;
    r->bad = false;
}

static inline size_t
util_rd_left(const util_rd_t *r)
{
    return r->bad ? 0 : (size_t) (r->end - r->p);
}

/* Take n bytes; NULL (and bad set) when fewer are left. */
const uint8_t *util_rd_take(util_rd_t *r, size_t n);
uint8_t util_rd_u8(util_rd_t *r);
uint16_t util_rd_u16(util_rd_t *r);
uint32_t util_rd_u32(util_rd_t *r);
uint64_t util_rd_u64(util_rd_t *r);
/* A u16-length string; *n set to its length; not NUL-terminated. */
const char *util_rd_str(util_rd_t *r, size_t *n);
/* A u32-length blob; *n set to its length. */
const uint8_t *util_rd_blob(util_rd_t *r, size_t *n);

#endif
