/*  exec_node_far - a task's arguments held on other nodes, pulled into
    this node's store before the task runs (see exec_node_far.c, DESIGN
    7.3).
*/
#ifndef EXEC_NODE_FAR_H_INCLUDED
#define EXEC_NODE_FAR_H_INCLUDED

#include "exec_node_int.h"

/* Give the task graph its calls to this part (nm->ops). */
void nm_far_open(nm_t *nm);

/* Pull id, an argument of t another node holds, into this node's store:
   t waits for it (t->waiting, t->nfar). 0, or a code with the message. */
int nm_far_fetch(nm_t *nm, nm_task_t *t, const lux_ref_t *id);

/* Whether id is no business of a pull: here (not lost), made here, or
   no tcp endpoint to pull with. */
bool nm_far_here(nm_t *nm, const lux_ref_t *id);

/* t, placed here by the global scheduler after waiting for that: pull
   its arguments held elsewhere now, and queue it once they are here. */
void nm_far_resume(nm_t *nm, nm_task_t *t);

#endif
