/*  exec_gsched - the global scheduler: where a task that its node spills
    goes (doc/DESIGN.md 7.2, "The global scheduler").

    A node manager keeps a task when it has the resources and its queue is
    short; otherwise it spills the task here. The scheduler picks a node
    by the resources that fit, then by how many bytes of the task's
    arguments each node already holds (locality), then by load. It knows
    the nodes from the membership monitor's table (the heartbeats: each
    node's resources total and free, its workers and queue length, rebuilt
    from the log when the head restarts), adds what it placed since each
    node's last beat, and is told the arguments' holders by the node that
    spills (which asked where they live). So its whole state comes from the
    log and the beats: it keeps nothing that a restart would lose.

    This header is the decision itself, a pure function over a table, so
    that it is tested alone (t/6051) and usable wherever the table is.
*/
#ifndef EXEC_GSCHED_H_INCLUDED
#define EXEC_GSCHED_H_INCLUDED

#include "../util/util_id.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_RES_MAX 16

/* Amounts of named resources, in thousandths ("CPU=2,GPU=1"). */
typedef struct {
    char name[GS_RES_MAX][32];
    int64_t amount[GS_RES_MAX];
    int n;
} gs_res_t;

/* Parse "CPU=2,GPU=1" into r (adding to what is there when add). 0, or
   -1 on garbage. */
int gs_res_parse(gs_res_t *r, const char *text, bool add);
/* The amount of name in r (0 when absent). */
int64_t gs_res_get(const gs_res_t *r, const char *name);

/* A node as the scheduler sees it. */
typedef struct {
    util_id_t id;
    char address[64];  /* its host (for its endpoint) */
    bool alive;
    bool dead;         /* declared dead (not alive, and not left cleanly) */
    bool said_dead;    /* the table says so: its age_ms was the silence when it was asked */
    bool unconfirmed;  /* alive in the log at the head's restart, no beat since (the
                          table's "unconfirmed 1"): alive is false, its resources the
                          log's; a task only it could run waits (gs_dead_had) */
    int64_t age_ms;    /* the table's age_ms: since its last beat, when the table was asked */
    int64_t silent_ms; /* a dead node's silence now: the head sets it at each decision
                          (exec_table.c s_deaths), from the clock, not the table's age */
    gs_res_t total, free;
    uint32_t workers;
    uint64_t queue;    /* tasks waiting there, from its last beat */
    uint64_t placed;   /* tasks sent there since its last beat */
    uint64_t local;    /* scratch for gs_place: argument bytes it holds */
} gs_node_t;

/* Fill n from a block of "key value" lines (a BEAT, or a block of the
   monitor's STATUS): node, address, resources, free, workers, queue,
   state. 0, or -1 when it has no valid node line. */
int gs_node_from_text(gs_node_t *n, const char *text);

/* An argument of the task: its bytes, and the node that holds them. */
typedef struct {
    util_id_t node;
    uint64_t bytes;
} gs_arg_t;

enum { GS_PLACED = 0, GS_INFEASIBLE = -1 };

/* Where a task needing `needs`, with arguments args[nargs], goes among
   nodes[n]: GS_PLACED with *pick set, or GS_INFEASIBLE with why (no alive
   node has that much of some resource at all). Among the nodes whose
   totals cover the needs: those whose free resources cover them now come
   first, then the most argument bytes held, then the lightest load
   ((queue + placed) per worker); ties go to the lower index. A node with
   the resources all busy is still a place: the task waits in its queue
   (placed once, never bounced). nodes[i].placed of the pick is bumped. */
int gs_place(gs_node_t *nodes, size_t n, const gs_res_t *needs, const gs_arg_t *args,
             size_t nargs, size_t *pick, char *why, size_t nwhy);

/* When no alive node can run a task needing `needs` (gs_place said
   GS_INFEASIBLE): the nodes declared dead whose totals covered it, and the
   unconfirmed ones (not heard from since the head's restart) whose
   logged totals cover it, into list[nlist] ("node HEX (silent N ms)" or
   "node HEX (unconfirmed: not heard from since the head started again)",
   comma-separated; "" for none), *had their count. Returns how many of
   them may still come: the unconfirmed (the monitor declares one dead
   after LUX_NODE_DEAD_MS), and the dead silent (silent_ms, which the
   caller sets for this decision) for less than wait_ms: they may be
   restarting (a node killed and started again under a new ID, as t/6091
   does), so such a task waits rather than fails at once (DESIGN 7.2). */
int gs_dead_had(const gs_node_t *nodes, size_t n, const gs_res_t *needs, int64_t wait_ms,
                int *had, char *list, size_t nlist);

/* Placement at random (LUX_PLACE_RANDOM=1, for `lux bench
   locality_placement` only): a generator of its own (not rand(), which
   nobody seeded), whose seed is said so that a run can be repeated. */
typedef struct {
    uint64_t s;
} gs_rand_t;

/* Seed g with seed, or with one drawn from the clock and the process
   when seed is 0. Returns the seed used (never 0). */
uint64_t gs_rand_seed(gs_rand_t *g, uint64_t seed);
/* A node drawn from g among the alive nodes[n] whose totals cover needs,
   skip left out (NULL: none): GS_PLACED with *pick set, or GS_INFEASIBLE
   when none fits. */
int gs_pick_random(const gs_node_t *nodes, size_t n, const gs_res_t *needs,
                   const util_id_t *skip, gs_rand_t *g, size_t *pick);

/* Whether the membership monitor's table (exec_members.h's text) says
   node is alive; absent: not. */
bool gs_table_alive(const char *table, const util_id_t *node);

#endif
