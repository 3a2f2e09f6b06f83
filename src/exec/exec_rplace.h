/*  exec_rplace - asking the global scheduler where a task goes: the
    request, sent again when its answer is lost, and the head's answers
    kept so that a repeated ask gets the same one (issue 28; exec_rplace.c,
    doc/protocol.md 17.2).
*/
#ifndef EXEC_RPLACE_H_INCLUDED
#define EXEC_RPLACE_H_INCLUDED

#include "exec_peer.h"

typedef struct nm_rplace nm_rplace_t;

/* Make nm->rplace (from nm_remote_new): NULL with the message. */
nm_rplace_t *nm_rplace_new(nm_t *nm);
void nm_rplace_destroy(nm_rplace_t **self_p);

/* The NODE_PLACE request for t into text[n] (self: this node is one of
   the places weighed). */
void nm_rplace_text(nm_t *nm, nm_task_t *t, bool self, char *text, size_t n);
/* Send t's NODE_PLACE to head_ep (again: marked as the same ask sent
   again). 0 or a code with the message. */
int nm_rplace_send(nm_t *nm, nm_task_t *t, bool self, bool again, const char *head_ep);
/* t's NODE_PLACE went (its first send): remembered until answered. */
void nm_rplace_asked(nm_t *nm, nm_task_t *t, bool self);
/* The answer for task id came: not asked again. */
void nm_rplace_answered(nm_t *nm, const util_id_t *id);
/* Each tick: asks unanswered are sent again, or their tasks fail (silent:
   the head's monitor does not answer either, which exec_remote.c's
   s_headless ends instead). */
typedef bool nm_rplace_ask_fn(nm_t *nm, nm_task_t *t, bool self);
void nm_rplace_tick(nm_t *nm, const char *head_ep, bool silent, nm_rplace_ask_fn *ask);
/* The scheduler answered "wait MS REASON" for t (no alive node can run
   it; nodes that could died lately): asked anew by the tick (ask) in
   ms, the reason logged at the first such answer. */
void nm_rplace_wait(nm_t *nm, nm_task_t *t, int ms, const char *reason);

/* Node node is dead (the monitor said so, in its table or its node_died
   event, or a node asking where a task goes says it knows): remembered (the latest S_DEAD_MAX), never placed
   on, and told to the head with every NODE_PLACE ("dead HEX" lines). */
void nm_rplace_dead(nm_t *nm, const util_id_t *node);
bool nm_rplace_is_dead(nm_t *nm, const util_id_t *node);
/* Whether node is known dead here, and then when that was learned
   (*since_ms, util_mono_ms; the monitor had counted dead_ms of its
   silence by then) and whether it left cleanly (*left; either may be
   NULL). The head measures a dead node's silence from it at each
   decision (exec_table.c), whatever the age of its table. */
bool nm_rplace_dead_since(nm_t *nm, const util_id_t *node, int64_t *since_ms, bool *left);
/* Node node joined again (node_joined after its node_died): not dead. */
void nm_rplace_alive(nm_t *nm, const util_id_t *node);
/* The head, before a decision: the log's node events not read yet
   (node_died, node_left: the monitor's verdict, whatever the age of the
   scheduler's table; node_joined after them), read at most every
   S_LOG_EVERY_MS. A log it cannot read is complained of, not fatal. */
void nm_rplace_from_log(nm_t *nm);

/* The head: the scheduler's decision for a request text into answer[n]. */
typedef void nm_rplace_decide_fn(nm_t *nm, const char *text, char *answer, size_t n);
/* The head's answer for task id: the one kept when text is marked
   "again" and the node it names is not known dead, else decide's, kept. */
void nm_rplace_answer(nm_t *nm, const util_id_t *id, const char *text, char *answer, size_t n,
                      nm_rplace_decide_fn *decide);
/* The head, test hook LUX_TEST_PLACE_DROP: whether this answer to task
   id is to be dropped (logged). */
bool nm_rplace_drop(nm_t *nm, const util_id_t *id);

/* Test hook LUX_TEST_TABLE_SLOW_MS (a slow membership monitor): true while
   the head's table ask sent at asked_ms (now: the time) is under that old,
   after sleeping up to wait_ms for it; the answer is then not taken. */
bool nm_rplace_slow(nm_t *nm, int64_t asked_ms, int64_t now, int wait_ms);

#endif
