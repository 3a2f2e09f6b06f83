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

/* Little-endian integers at p (any alignment). On a little-endian host
   each is one load or store: the byte loops they replace were compiled as
   loops, and util_buf_put_u64 alone cost 90 instructions, four to six
   times in each event's encoding (callgrind, doc/benchmarks.md,
   2026-11-29, stop 46). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define UTIL_BUF_LE_HOST 1
#else
#define UTIL_BUF_LE_HOST 0
#endif
static inline void
util_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
}
static inline void
util_le32(uint8_t *p, uint32_t v)
{
    if (UTIL_BUF_LE_HOST) {
        memcpy(p, &v, 4);
        return;
    }
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}
static inline void
util_le64(uint8_t *p, uint64_t v)
{
    if (UTIL_BUF_LE_HOST) {
        memcpy(p, &v, 8);
        return;
    }
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
    if (UTIL_BUF_LE_HOST) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
           (uint32_t) p[3] << 24;
}
static inline uint64_t
util_rd64(const uint8_t *p)
{
    if (UTIL_BUF_LE_HOST) {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    return (uint64_t) util_rd32(p) | (uint64_t) util_rd32(p + 4) << 32;
}

/* The puts are inline: where the room is there already (nearly always)
   a put is a compare and a store, with no call; only growing the buffer
   calls util_buf_reserve. As before, after an allocation failure (oom)
   every put is ignored. */
static inline bool
util_buf_room(util_buf_t *b, size_t n)
{
    return (!b->oom && b->cap - b->len >= n) || util_buf_reserve(b, n);
}
static inline void
util_buf_put(util_buf_t *b, const void *p, size_t n)
{
    if (n == 0 || !util_buf_room(b, n))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}
static inline void
util_buf_put_u8(util_buf_t *b, uint8_t v)
{
    if (util_buf_room(b, 1))
        b->data[b->len++] = v;
}
static inline void
util_buf_put_u16(util_buf_t *b, uint16_t v)
{
    if (util_buf_room(b, 2)) {
        util_le16(b->data + b->len, v);
        b->len += 2;
    }
}
static inline void
util_buf_put_u32(util_buf_t *b, uint32_t v)
{
    if (util_buf_room(b, 4)) {
        util_le32(b->data + b->len, v);
        b->len += 4;
    }
}
static inline void
util_buf_put_u64(util_buf_t *b, uint64_t v)
{
    if (util_buf_room(b, 8)) {
        util_le64(b->data + b->len, v);
        b->len += 8;
    }
}
/* A string as u16 length + bytes; longer strings are cut at 65535. */
static inline void
util_buf_put_str(util_buf_t *b, const char *s, size_t n)
{
    if (n > 65535)
        n = 65535;
    util_buf_put_u16(b, (uint16_t) n);
    util_buf_put(b, s, n);
}
/* A blob as u32 length + bytes. */
static inline void
util_buf_put_blob(util_buf_t *b, const void *p, size_t n)
{
    util_buf_put_u32(b, (uint32_t) n);
    util_buf_put(b, p, n);
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

/* Take n bytes; NULL (and bad set) when fewer are left. Inline, as the
   puts are: a decoder calls these once a field. */
static inline const uint8_t *
util_rd_take(util_rd_t *r, size_t n)
{
    if (r->bad || (size_t) (r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}
static inline uint8_t
util_rd_u8(util_rd_t *r)
{
    const uint8_t *p = util_rd_take(r, 1);
    return p ? p[0] : 0;
}
static inline uint16_t
util_rd_u16(util_rd_t *r)
{
    const uint8_t *p = util_rd_take(r, 2);
    return p ? util_rd16(p) : 0;
}
static inline uint32_t
util_rd_u32(util_rd_t *r)
{
    const uint8_t *p = util_rd_take(r, 4);
    return p ? util_rd32(p) : 0;
}
static inline uint64_t
util_rd_u64(util_rd_t *r)
{
    const uint8_t *p = util_rd_take(r, 8);
    return p ? util_rd64(p) : 0;
}
/* A u16-length string; *n set to its length; not NUL-terminated. */
static inline const char *
util_rd_str(util_rd_t *r, size_t *n)
{
    size_t len = util_rd_u16(r);
    const uint8_t *p = util_rd_take(r, len);
    *n = p ? len : 0;
    return (const char *) p;
}
/* A u32-length blob; *n set to its length. */
static inline const uint8_t *
util_rd_blob(util_rd_t *r, size_t *n)
{
    size_t len = util_rd_u32(r);
    const uint8_t *p = util_rd_take(r, len);
    *n = p ? len : 0;
    return p;
}

#endif
