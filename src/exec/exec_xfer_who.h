/*  exec_xfer_who - who made an object the log has no event of, as far as
    the log says (exec_xfer_who.c): the head's "on its way, or made up?".
    For the exec_xfer files and the global scheduler's locality.
*/
#ifndef LUX_EXEC_XFER_WHO_H
#define LUX_EXEC_XFER_WHO_H

#include "exec_xfer_src.h"

/* Who made an object, as far as the log says (exec_xfer_who.c): the
   creator its ID's first 8 bytes name. */
enum { XFER_BY_UNKNOWN = 0, XFER_BY_DRIVER, XFER_BY_TASK };
typedef struct {
    int by;            /* XFER_BY_*: nobody the log knows, a driver, a task */
    util_id_t job;     /* its job */
    bool job_known;    /* UNKNOWN: the job is known all the same (a put's sibling) */
    util_id_t creator; /* the driver's root, or the task */
    bool ended;        /* the driver's job_finished, or the task's end, is logged */
    util_id_t node;    /* where it is (the node of its job_started or its task's first event) */
    bool has_node;
} xfer_by_t;
/* Who made id, into *b. 0 or a code with the message. */
int nm_xfer_who(nm_t *nm, const lux_ref_t *id, xfer_by_t *b);
/* Whether id, which the log has no event of, never will have one: no
   creator the log knows made it, or its creator has ended (why[n] says
   which). false when the log cannot be read. */
bool nm_xfer_madeup(nm_t *nm, const lux_ref_t *id, char *why, size_t n);
/* Statement i of those nm_xfer_who runs on db_query's views (NULL past
   the last), for the tests of their query plans (t/6148); all but step
   3's scan of the task events (s_tasks_sql), which is a scan. */
const char *nm_xfer_who_sql(int i);

#endif
