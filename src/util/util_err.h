/*  util_err - error codes with a message that gains context as it travels.

    Every fallible function returns 0 or a negative LUX_E* code (src/lux.h).
    The code says what kind of failure; the message, kept per thread, says
    what failed and why. The innermost failure sets the message with
    util_err(); callers on the way up may prefix context with util_err_ctx().
*/
#ifndef UTIL_ERR_H_INCLUDED
#define UTIL_ERR_H_INCLUDED

#include "../lux.h"

#define UTIL_ERRMSG_MAX 1024

/* Set the calling thread's message from fmt and return code. */
int util_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefix the calling thread's message with "context: " and return code. */
int util_err_ctx(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The calling thread's message; "" when none was set. */
const char *util_errmsg(void);

/* Forget the calling thread's message. */
void util_err_clear(void);

#endif
