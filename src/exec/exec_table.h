/*  exec_table - the global scheduler on the head: the membership
    monitor's table of nodes, read ahead and held, and the decision where
    a task goes (issue 28; exec_table.c, exec_gsched.h, doc/DESIGN.md 7.2).
*/
#ifndef EXEC_TABLE_H_INCLUDED
#define EXEC_TABLE_H_INCLUDED

#include "exec_node_int.h"

/* How long an ask of the monitor (STATUS) is waited for: the table's,
   and the watch's by default (exec_remote.c). */
#define NM_TABLE_ASK_WAIT_MS 2000

typedef struct nm_table nm_table_t;

/* Make nm->table (from nm_remote_new, on every node: the watch asks the
   monitor through it too): NULL with the message. */
nm_table_t *nm_table_new(nm_t *nm);
void nm_table_destroy(nm_table_t **self_p);

/* Send STATUS to the membership monitor on *sock (connected, with the
   cluster's keys, when not yet), without waiting for the answer: the
   scheduler's table and the watch (exec_remote.c s_watch_read) each keep
   one. 0 or a code with the message. */
int nm_table_monitor_ask(nm_t *nm, zsock_t **sock);

/* The scheduler's answer to a request (text as in NODE_PLACE, from
   exec_rplace.c's nm_rplace_text) into answer[n]: "node HEX\nendpoint
   EP\n", "local\n" or "infeasible WHY\n". May wait on the loop for the
   monitor's table (up to NM_TABLE_ASK_WAIT_MS). */
void nm_table_decide(nm_t *nm, const char *text, char *answer, size_t n);

#endif
