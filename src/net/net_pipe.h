/*  net_pipe - the command pipe of a czmq actor, as every long-lived
    component of Lux (replica, reader, master, node manager) reads it: the
    only command is "$TERM", sent by zactor_destroy, and a pipe that fails
    to read means the same (the owner is gone). Anything else is ignored.
*/
#ifndef NET_PIPE_H_INCLUDED
#define NET_PIPE_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>

/* Read one message from pipe: true when it says stop ($TERM, or nothing
   could be read). Blocks until a message comes: call it when the pipe is
   readable. */
bool net_pipe_term(zsock_t *pipe);

/* net_pipe_term as a zloop reader (and a net_raw handler): -1 (end the
   loop) on $TERM, else 0. */
int net_pipe_on_term(zloop_t *loop, zsock_t *pipe, void *arg);

#endif
