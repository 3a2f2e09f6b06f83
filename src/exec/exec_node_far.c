/*  exec_node_far - a task's arguments held on other nodes (issue 28,
    doc/DESIGN.md 7.3, "Arguments from other nodes").

    A task's ref argument that this node's store does not hold, and that
    no task here is making, may live on another node of the cluster (a put
    there, an output of a task that ran there). Where the task runs, the
    argument is pulled into the store (exec_xfer.c, at the priority of a
    task's argument, after gets and waits) before the task is dispatched:
    the task waits for the pull as it waits for an argument's task. When
    the pull fails (no live node holds it, or its source died mid-way),
    the object is rebuilt from its lineage where the log can be read (the
    head's node; another node's pull asks the head to, exec_xfer.c
    s_make); a put, which has none, fails the task with the pull's
    error, naming the object and the node.

    Pulls report per object (done is called once per request, with no
    task pointer to outlive its task): the tasks that wait for the object
    are found by looking, one argument per report, so a task that failed
    or was cancelled meanwhile is simply not found.
*/
#include "exec_node_far.h"
#include "exec_node_int.h"
#include "exec_xfer.h"
#include "exec_peer.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const lux_ref_t *id;
    nm_task_t **v;
    size_t n, cap;
} s_waiters_t;

/* The index of t's first argument naming id that is not counted yet as a
   use of it (t->counted NULL: none is), or -1. */
static int
s_uncounted(const nm_task_t *t, const lux_ref_t *id)
{
    nm_args_t it;
    exec_arg_t a;
    int i;
    nm_args_init(&it, t);
    while (nm_args_next_ref(&it, &a, &i))
        if (!(t->counted && (t->counted[i] & NM_ARG_COUNTED)) &&
            memcmp(a.ref.b, id->b, LUX_REF_LEN) == 0)
            return i;
    return -1;
}

/* Collect the tasks waiting for a pull of w->id. */
static int
s_collect(void *arg, const void *key, void *value)
{
    (void) key;
    s_waiters_t *w = arg;
    nm_task_t *t = *(nm_task_t **) value;
    if (!t->nfar || !t->waiting)
        return 0;
    if (s_uncounted(t, w->id) < 0)
        return 0;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        nm_task_t **p = realloc(w->v, cap * sizeof *p);
        if (!p)
            return 0;
        w->v = p;
        w->cap = cap;
    }
    w->v[w->n++] = t;
    return 0;
}

/* Count t's first uncounted argument naming o as a use of it. */
static void
s_count(nm_task_t *t, nm_obj_t *o)
{
    int i = s_uncounted(t, &o->id);
    if (i >= 0 && t->counted) {
        t->counted[i] |= NM_ARG_COUNTED;
        o->uses++;
    }
}

/* One pull of id ended (exec_xfer.h): each task waiting for it goes on
   (here now), waits for its rebuild, or fails. */
static void
s_fetched(nm_t *nm, void *arg, const lux_ref_t *id, int rc)
{
    (void) arg;
    char pulled[UTIL_ERRMSG_MAX];
    snprintf(pulled, sizeof pulled, "%s", rc ? lux_errmsg() : "");
    s_waiters_t w = {.id = id};
    util_idmap_each(nm->tasks, s_collect, &w);
    nm_obj_t *o = rc ? NULL : nm_obj_get(nm, id);
    if (!rc && (!o || o->state != OBJ_READY)) {
        /* here a moment ago, gone again (the store made room): pull again */
        for (size_t i = 0; i < w.n; i++) {
            w.v[i]->nfar--;
            w.v[i]->waiting--;
            if (nm_far_fetch(nm, w.v[i], id)) {
                char why[UTIL_ERRMSG_MAX + 32];
                snprintf(why, sizeof why, "its argument %s", lux_errmsg());
                nm_task_fail(nm, w.v[i], LUX_EIO, why);
            }
        }
        free(w.v);
        return;
    }
    for (size_t i = 0; i < w.n; i++) {
        nm_task_t *t = w.v[i];
        if (!nm_task_find(nm, &t->id))
            continue; /* failed with an earlier one of the list */
        t->nfar--;
        if (o) {
            s_count(t, o);
            if (--t->waiting == 0)
                nm_task_wake(nm, t);
            continue;
        }
        /* the pull failed: its lineage, where the log can be read */
        util_id_t dt_id;
        exec_ref_task(id, &dt_id);
        nm_task_t *dt = NULL;
        int brc = LUX_ENOTFOUND;
        char rebuilt[UTIL_ERRMSG_MAX] = "";
        if (nm_peer_is_head(nm)) {
            if ((brc = nm_rebuild(nm, id)) == 0)
                dt = nm_task_find(nm, &dt_id);
            else
                snprintf(rebuilt, sizeof rebuilt, "; and it cannot be rebuilt: %s",
                         lux_errmsg());
        }
        if (dt && exec_ref_idx(id) < dt->nret && nm_task_depend(nm, dt, t, exec_ref_idx(id))) {
            char hex[2 * LUX_REF_LEN + 1];
            util_hex(hex, id->b, LUX_REF_LEN);
            log_warn("object %s: %s; rebuilding it from its lineage", hex, pulled);
            continue; /* t waits for the rebuild as for any task */
        }
        char why[2 * UTIL_ERRMSG_MAX + 32];
        snprintf(why, sizeof why, "its argument %s%s", pulled, rebuilt);
        nm_task_fail(nm, t, rc == LUX_ENOTFOUND ? LUX_ENOTFOUND : LUX_EDEAD, why);
    }
    free(w.v);
}

int
nm_far_fetch(nm_t *nm, nm_task_t *t, const lux_ref_t *id)
{
    int rc = nm_xfer_pull(nm, id, NM_XFER_ARG, s_fetched, NULL);
    if (rc)
        return rc;
    t->nfar++;
    t->waiting++;
    return 0;
}

bool
nm_far_here(nm_t *nm, const lux_ref_t *id)
{
    util_id_t tid;
    exec_ref_task(id, &tid);
    nm_obj_t *o = nm_obj_get(nm, id);
    return !nm_xfer_on(nm) || (o && o->state != OBJ_LOST) || nm_task_find(nm, &tid);
}

void
nm_far_resume(nm_t *nm, nm_task_t *t)
{
    util_rd_t r;
    exec_arg_t a;
    t->far_later = false;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a)) {
        if (a.kind != EXEC_ARG_REF || nm_far_here(nm, &a.ref))
            continue;
        if (nm_far_fetch(nm, t, &a.ref)) {
            char why[UTIL_ERRMSG_MAX + 32];
            snprintf(why, sizeof why, "its argument %s", lux_errmsg());
            nm_task_fail(nm, t, LUX_EIO, why);
            return;
        }
    }
    if (t->waiting == 0)
        nm_task_wake(nm, t);
}

void
nm_far_open(nm_t *nm)
{
    nm->ops.far_here = nm_far_here;
    nm->ops.far_fetch = nm_far_fetch;
}
