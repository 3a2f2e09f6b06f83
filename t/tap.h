/*  tap - a small TAP producer for Lux's tests (after c-tap-harness).

    A test is a program that calls plan() or ends with done_testing(), and
    reports checks with ok()/is_int()/is_str()... Output goes to stdout as
    TAP; diag() goes to stderr. Each test gets a scratch directory from
    tap_tmpdir(), removed at exit unless the test failed or LUX_KEEP is set.
*/
#ifndef TAP_H_INCLUDED
#define TAP_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

void plan(int n);
void skip_all(const char *why) __attribute__((noreturn));
int done_testing(void);
/* A check. One whose fmt holds "# TODO why" marks a known failure (TAP's
   TODO: automake counts it XFAIL, and XPASS, a failure, once it passes);
   its failure does not fail the program. */
bool ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool is_int(int64_t got, int64_t want, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool is_str(const char *got, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void skip(const char *why);
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Stop the test now: prints "Bail out!" and exits 255. */
void bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
bool tap_verbose(void);

/* A private scratch directory for this test (created once). */
const char *tap_tmpdir(void);

/* Call fn when the test exits (including on bail); up to 16. */
void tap_atexit(void (*fn)(void));

/* The next of a test's xorshift64 sequence whose state is *s (not 0). */
static inline uint64_t
tap_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#endif
