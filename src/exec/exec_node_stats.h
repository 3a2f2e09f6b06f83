/*  exec_node_stats - the node manager's state in a few "key value" lines,
    for its daemon's heartbeat and `lux status` (see exec_node_stats.c).
*/
#ifndef EXEC_NODE_STATS_H_INCLUDED
#define EXEC_NODE_STATS_H_INCLUDED

#include "exec_node_int.h"

/* Answer STATS on the pipe with the node's state. */
void nm_stats_send(nm_t *nm);

#endif
