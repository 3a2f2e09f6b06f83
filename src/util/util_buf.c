/*  util_buf - growable encoding buffer and bounds-checked reader.

    The buffer grows by doubling. On allocation failure it keeps what it has,
    sets oom, and ignores further puts: encoders test oom once at the end.
    The puts and the reader are inline in util_buf.h; here is what grows
    and frees the buffer.
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
