/*  lux.h - the one public header of Lux.

    Lux is a distributed execution framework after the Ray paper whose control
    store is an event-sourced lineage log (see README and doc/). This header
    is all a program needs; everything it declares is documented here and in
    lux(3).

    Conventions: every function that can fail returns an int that is 0 on
    success or a negative LUX_E* code; lux_errmsg() then gives a message that
    names what failed and why, for the calling thread.
*/
#ifndef LUX_H_INCLUDED
#define LUX_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LUX_VERSION_MAJOR 0
#define LUX_VERSION_MINOR 1
#define LUX_VERSION_PATCH 0

/* Error codes, one table: X(name, value, text). */
#define LUX_ERRORS(X)                                                         \
    X(LUX_OK, 0, "success")                                                   \
    X(LUX_ENOMEM, -1, "out of memory")                                        \
    X(LUX_EINVAL, -2, "invalid argument")                                     \
    X(LUX_EIO, -3, "input/output error")                                      \
    X(LUX_ECORRUPT, -4, "corrupt data")                                       \
    X(LUX_EPROTO, -5, "protocol error")                                       \
    X(LUX_EEPOCH, -6, "stale epoch")                                          \
    X(LUX_ETIMEDOUT, -7, "timed out")                                         \
    X(LUX_ENOTFOUND, -8, "not found")                                         \
    X(LUX_EGAP, -9, "sequence gap")                                           \
    X(LUX_ESTATE, -10, "wrong state")                                         \
    X(LUX_EFULL, -11, "full")                                                 \
    X(LUX_ESQL, -12, "SQL error")                                             \
    X(LUX_EREADONLY, -13, "read-only")                                        \
    X(LUX_EAUTH, -14, "authentication failed")                                \
    X(LUX_EDEAD, -15, "peer is dead")                                         \
    X(LUX_ETASK, -16, "task failed")                                          \
    X(LUX_ENOSYS, -17, "not supported")                                       \
    X(LUX_EEXIST, -18, "already exists")                                      \
    X(LUX_EINTR, -19, "interrupted")

enum lux_error {
#define LUX_X_ENUM(name, value, text) name = value,
    LUX_ERRORS(LUX_X_ENUM)
#undef LUX_X_ENUM
};

/* The text of an error code ("sequence gap"); never NULL. */
const char *lux_strerror(int code);

/* The message of the last error of the calling thread, with its context
   ("shard 2: seq gap 1041 -> 1043 from replica 3"); "" when none. */
const char *lux_errmsg(void);

#ifdef __cplusplus
}
#endif
#endif
