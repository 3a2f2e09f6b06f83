/* 0001-util-buf: the encoder, the bounds-checked reader, hex and IDs. */
#include "tap.h"
#include "util/util_buf.h"
#include "util/util_err.h"
#include "util/util_hash.h"
#include "util/util_id.h"

#include <stdlib.h>
#include <string.h>

int
main(void)
{
    util_buf_t b;
    util_rd_t r;
    size_t n;

    util_buf_init(&b);
    util_buf_put_u8(&b, 7);
    util_buf_put_u16(&b, 0x1234);
    util_buf_put_u32(&b, 0xdeadbeef);
    util_buf_put_u64(&b, 0x0102030405060708ULL);
    util_buf_put_str(&b, "hello", 5);
    util_buf_put_blob(&b, "xyz", 3);
    is_int((int64_t) b.len, 1 + 2 + 4 + 8 + 2 + 5 + 4 + 3, "encoded length");
    is_int(b.data[1], 0x34, "little-endian u16");

    util_rd_init(&r, b.data, b.len);
    is_int(util_rd_u8(&r), 7, "u8 back");
    is_int(util_rd_u16(&r), 0x1234, "u16 back");
    is_int(util_rd_u32(&r), 0xdeadbeef, "u32 back");
    ok(util_rd_u64(&r) == 0x0102030405060708ULL, "u64 back");
    const char *s = util_rd_str(&r, &n);
    ok(n == 5 && memcmp(s, "hello", 5) == 0, "string back");
    const uint8_t *p = util_rd_blob(&r, &n);
    ok(n == 3 && memcmp(p, "xyz", 3) == 0, "blob back");
    ok(!r.bad && util_rd_left(&r) == 0, "nothing left, nothing bad");

    /* every truncation of the input is detected, never read past */
    int caught = 0;
    for (size_t cut = 0; cut < b.len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, b.data, cut);
        util_rd_init(&r, copy, cut);
        util_rd_u8(&r);
        util_rd_u16(&r);
        util_rd_u32(&r);
        util_rd_u64(&r);
        util_rd_str(&r, &n);
        util_rd_blob(&r, &n);
        caught += r.bad;
        free(copy);
    }
    is_int(caught, (int64_t) b.len, "every truncated input sets bad");

    /* a length that claims more than there is */
    uint8_t lie[6] = {0xff, 0xff, 0xff, 0x7f, 'a', 'b'};
    util_rd_init(&r, lie, sizeof lie);
    p = util_rd_blob(&r, &n);
    ok(p == NULL && n == 0 && r.bad, "lying length is refused");
    util_buf_free(&b);

    /* hex and IDs */
    util_id_t a, c, d;
    char hex[UTIL_ID_HEX];
    util_id_random(&a);
    util_id_hex(&a, hex);
    is_int(util_id_parse(&c, hex), 0, "parse own hex");
    ok(util_id_eq(&a, &c), "hex round trip");
    is_int(util_id_parse(&c, "zz"), LUX_EINVAL, "short hex refused");
    ok(strstr(util_errmsg(), "hex digits") != NULL, "with a message: %s", util_errmsg());
    util_id_child(&c, &a, &a, 1);
    util_id_child(&d, &a, &a, 2);
    ok(memcmp(c.b, d.b, 8) == 0, "children of one scope share a prefix");
    ok(memcmp(c.b, d.b, 16) < 0, "and sort in counter order");
    util_id_child(&d, &a, &a, 1);
    ok(util_id_eq(&c, &d), "child IDs are deterministic");
    int counts[4] = {0};
    for (int i = 0; i < 4000; i++) {
        util_id_child(&c, &a, &a, (uint64_t) i);
        counts[util_id_shard(&c, 4)]++;
    }
    ok(counts[0] > 800 && counts[1] > 800 && counts[2] > 800 && counts[3] > 800,
       "siblings spread over shards (%d %d %d %d)", counts[0], counts[1], counts[2], counts[3]);
    return done_testing();
}
