/*  util_fp - content fingerprints: XXH3, 128 bits (xxhash), of a value.

    Every task output and put is fingerprinted (DESIGN section 9: a replay
    checks each output against the fingerprint in the log), so the cost is
    on the path of every large object. XXH3 is defined independently of the
    vector width; this machine's AVX2 build runs at memory speed (18 GB/s
    on the development machine, against 13 for Debian's SSE2 library and
    about 1.5 for the 64-bit mixing hash used before), so util_fp picks it
    at run time when the CPU has AVX2. The digest is the same either way.
*/
#ifndef UTIL_FP_H_INCLUDED
#define UTIL_FP_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* out = the 16-byte fingerprint of p[0..n), little-endian (low 64 bits
   first). */
void util_fp(uint8_t out[16], const void *p, size_t n);

/* memcpy(dst, src, n) and the fingerprint of the bytes, the two in
   parallel (a second thread hashes) when n is large. */
void util_fp_copy(uint8_t out[16], void *dst, const void *src, size_t n);

/* The fingerprint of bytes that come in pieces, in order (a pull's
   chunks, doc/DESIGN.md 7.3): the same 16 bytes as util_fp of all of
   them at once. One thread at a time. */
typedef struct util_fp_stream util_fp_stream_t;

/* NULL when there is no memory. */
util_fp_stream_t *util_fp_stream_new(void);
void util_fp_stream_add(util_fp_stream_t *self, const void *p, size_t n);
/* The fingerprint of what was added so far (more may be added after). */
void util_fp_stream_end(const util_fp_stream_t *self, uint8_t out[16]);
void util_fp_stream_free(util_fp_stream_t **self_p);

#endif
