/*  util_buf - growable encoding buffer and bounds-checked reader.

    The buffer grows by doubling. On allocation failure it keeps what it has,
    sets oom, and ignores further puts: encoders test oom once at the end.
*/
#include "util_buf.h"

#include <stdlib.h>

void
util_buf_init(util_buf_t *b)
{
    memset(b, 0, sizeof *b);
}

void
util_buf_free(util_buf_t *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

bool
util_buf_reserve(util_buf_t *b, size_t n)
{
    if (b->oom)
        return false;
    if (b->len + n <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

uint8_t *
util_buf_take(util_buf_t *b, size_t *len)
{
    uint8_t *d = b->data;
    if (len)
        *len = b->len;
    memset(b, 0, sizeof *b);
    return d;
}

void
util_buf_put(util_buf_t *b, const void *p, size_t n)
{
    if (n == 0 || !util_buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void
util_buf_put_u8(util_buf_t *b, uint8_t v)
{
    if (util_buf_reserve(b, 1))
        b->data[b->len++] = v;
}

void
util_buf_put_u16(util_buf_t *b, uint16_t v)
{
    if (util_buf_reserve(b, 2)) {
        util_le16(b->data + b->len, v);
        b->len += 2;
    }
}

void
util_buf_put_u32(util_buf_t *b, uint32_t v)
{
    if (util_buf_reserve(b, 4)) {
        util_le32(b->data + b->len, v);
        b->len += 4;
    }
}

void
util_buf_put_u64(util_buf_t *b, uint64_t v)
{
    if (util_buf_reserve(b, 8)) {
        util_le64(b->data + b->len, v);
        b->len += 8;
    }
}

void
util_buf_put_str(util_buf_t *b, const char *s, size_t n)
{
    if (n > 65535)
        n = 65535;
    util_buf_put_u16(b, (uint16_t) n);
    util_buf_put(b, s, n);
}

void
util_buf_put_blob(util_buf_t *b, const void *p, size_t n)
{
    util_buf_put_u32(b, (uint32_t) n);
    util_buf_put(b, p, n);
}

const uint8_t *
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

uint8_t
util_rd_u8(util_rd_t *r)
{
    const uint8_t *p = util_rd_take(r, 1);
    return p ? p[0] : 0;
}

uint16_t
util_rd_u16(util_rd_t *r)
{
    const uint8_t *p = util_rd_take(r, 2);
    return p ? util_rd16(p) : 0;
}

uint32_t
util_rd_u32(util_rd_t *r)
{
    const uint8_t *p = util_rd_take(r, 4);
    return p ? util_rd32(p) : 0;
}

uint64_t
util_rd_u64(util_rd_t *r)
{
    const uint8_t *p = util_rd_take(r, 8);
    return p ? util_rd64(p) : 0;
}

const char *
util_rd_str(util_rd_t *r, size_t *n)
{
    size_t len = util_rd_u16(r);
    const uint8_t *p = util_rd_take(r, len);
    *n = p ? len : 0;
    return (const char *) p;
}

const uint8_t *
util_rd_blob(util_rd_t *r, size_t *n)
{
    size_t len = util_rd_u32(r);
    const uint8_t *p = util_rd_take(r, len);
    *n = p ? len : 0;
    return p;
}
