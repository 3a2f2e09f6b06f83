/*  util_err - the error table's texts and the per-thread error message.

    The message lives in thread-local storage so that components, which are
    threads, never see each other's errors. A message is bounded; context that
    would not fit is cut at the end, never at the start, so the innermost
    cause (which explains the failure) may be lost before the outer context.
    That trade is deliberate: the outer context names the component.
*/
#include "util_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char s_msg[UTIL_ERRMSG_MAX];

const char *
lux_strerror(int code)
{
    switch (code) {
#define X(name, value, text)                                                  \
    case value:                                                               \
        return text;
        LUX_ERRORS(X)
#undef X
    }
    return "unknown error";
}

const char *
lux_errmsg(void)
{
    return s_msg;
}

const char *
util_errmsg(void)
{
    return s_msg;
}

void
util_err_clear(void)
{
    s_msg[0] = '\0';
}

int
util_err(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s_msg, sizeof s_msg, fmt, ap);
    va_end(ap);
    return code;
}

int
util_err_ctx(int code, const char *fmt, ...)
{
    char old[UTIL_ERRMSG_MAX];
    char ctx[UTIL_ERRMSG_MAX];
    va_list ap;

    memcpy(old, s_msg, sizeof old);
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    if (old[0] == '\0')
        snprintf(s_msg, sizeof s_msg, "%s: %s", ctx, lux_strerror(code));
    else
        snprintf(s_msg, sizeof s_msg, "%s: %s", ctx, old);
    return code;
}
