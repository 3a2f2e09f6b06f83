/*  net_pipe - an actor's command pipe (see net_pipe.h). */
#include "net_pipe.h"

#include <stdlib.h>
#include <string.h>

bool
net_pipe_term(zsock_t *pipe)
{
    zmsg_t *m = zmsg_recv(pipe);
    char *cmd = m ? zmsg_popstr(m) : NULL;
    bool stop = !cmd || strcmp(cmd, "$TERM") == 0;
    free(cmd);
    zmsg_destroy(&m);
    return stop;
}

int
net_pipe_on_term(zloop_t *loop, zsock_t *pipe, void *arg)
{
    (void) loop;
    (void) arg;
    return net_pipe_term(pipe) ? -1 : 0;
}
