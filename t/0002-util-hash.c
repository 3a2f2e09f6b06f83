/* 0002-util-hash: util_hash64 and util_id_shard give the values that
   doc/protocol.md 11.1 defines, on any host.

   The hash places events on shards, so a big-endian machine, a client in
   another language and this code must agree. The expected values below
   were computed from the page's definition (words read little-endian, a
   tail shorter than 8 bytes zero-padded) by an independent Python
   implementation, not by this code: on a big-endian host a version that
   reads words in host order fails here. */
#include "tap.h"
#include "util/util_hash.h"
#include "util/util_id.h"

#include <stdio.h>

int
main(void)
{
    /* the page's example: key 000102...0f */
    util_id_t key;
    for (int i = 0; i < 16; i++)
        key.b[i] = (uint8_t) i;
    ok(util_hash64(key.b, 16) == 0x329cab4a5503c258ULL,
       "H(000102...0f) = 0x329cab4a5503c258, as doc/protocol.md 11.1 says (got 0x%016llx)",
       (unsigned long long) util_hash64(key.b, 16));
    is_int(util_id_shard(&key, 2), 0, "that key goes to shard 0 of 2");
    is_int(util_id_shard(&key, 3), 2, "shard 2 of 3");
    is_int(util_id_shard(&key, 4), 0, "shard 0 of 4");
    is_int(util_id_shard(&key, 7), 3, "shard 3 of 7");
    is_int(util_id_shard(&key, 1), 0, "one shard: always shard 0");

    /* every length class: no word, a tail only, whole words, words and a tail */
    static const struct {
        size_t n;
        uint64_t h;
    } v[] = {
        {0, 0x492b8d6066c09227ULL},  {1, 0x0f07bf986b9af1deULL},  {7, 0xda6240a69fb072ebULL},
        {8, 0xd32775a981e04746ULL},  {9, 0x2ecd47fa92558afdULL},  {15, 0x3faeca874da1a33cULL},
        {16, 0xe8166f9257598776ULL}, {20, 0xdc8a2cd3403be8a3ULL}, {32, 0x30b7fbf673272b34ULL},
    };
    uint8_t in[32];
    for (int i = 0; i < 32; i++)
        in[i] = (uint8_t) (i * 37 + 5);
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        uint64_t got = util_hash64(in, v[k].n);
        ok(got == v[k].h, "%zu bytes: 0x%016llx (want 0x%016llx)", v[k].n,
           (unsigned long long) got, (unsigned long long) v[k].h);
    }
    return done_testing();
}
