/*  exec_node_obj - the node manager's object store: the object table,
    the arena's room, pins, the LRU list, eviction and spilling, and what
    each client is told of the objects it owns or asked for (see
    exec_node_obj.c). The requests clients send to the store are
    exec_store.c's.
*/
#ifndef EXEC_NODE_OBJ_H_INCLUDED
#define EXEC_NODE_OBJ_H_INCLUDED

#include "exec_node_int.h"

nm_obj_t *nm_obj_get(nm_t *nm, const lux_ref_t *id);

nm_obj_t *nm_obj_new(nm_t *nm, const lux_ref_t *id);

void nm_obj_set_inline(nm_t *nm, nm_obj_t *o, const void *bytes, uint64_t size);

void nm_obj_set_arena(nm_t *nm, nm_obj_t *o, uint64_t off, uint64_t size);

void nm_obj_set_error(nm_t *nm, nm_obj_t *o, const char *msg);

/* A value made again for o (a rebuild runs its task again and makes every
   output; a replay does every call's results): true when o holds one
   already (READY), which stays, and the caller drops the new one. fp, the
   new value's fingerprint (NULL: not known), is compared with the one
   kept: a difference is logged (a function that is not deterministic). */
bool nm_obj_made_again(const nm_obj_t *o, const uint8_t *fp);

/* Make o's value from size bytes that came in a message (another node's
   result): inline when small, else in the store, its fingerprint
   computed; a value o holds already stays (nm_obj_made_again). 0 or a
   code (no room). */
int nm_obj_fill(nm_t *nm, nm_obj_t *o, const void *bytes, size_t size);

void nm_obj_ready(nm_t *nm, nm_obj_t *o);       /* tell the owner */

void nm_obj_pin(nm_t *nm, nm_obj_t *o);

void nm_obj_unpin(nm_t *nm, nm_obj_t *o);

void nm_obj_delete(nm_t *nm, nm_obj_t *o);
/* The same, saying why it went when object_locations listed it here
   (the object_lost event's info; NULL: the usual reasons). */
void nm_obj_delete_why(nm_t *nm, nm_obj_t *o, const char *why);

/* Nothing holds o any more: a rebuilt copy in the store stays, evictable;
   anything else is deleted. */
void nm_obj_let_go(nm_t *nm, nm_obj_t *o);

/* What tasks waiting hold of o rebuilt (DESIGN 7, rule 10), in nm->holds:
   its counts, made (all 0) when make; NULL when it has none (making: no
   memory). nm_obj_hold_done drops them once all are 0 again. The table
   also counts the actors' calls kept for a replay that take o (rule 15). */
nm_obj_hold_t *nm_obj_hold(nm_t *nm, nm_obj_t *o, bool make);
void nm_obj_hold_done(nm_t *nm, nm_obj_t *o);
/* Of those, how many hold it on disk (NM_ARG_DISK). */
uint32_t nm_obj_held_disk(nm_t *nm, const nm_obj_t *o);
/* An actor's call kept for a replay takes o (keep), or no longer does:
   counted in nm->holds; while counted, o is spilled, not dropped, when
   evicted (DESIGN 7, rule 15; s_evict_one reads the count). */
void nm_obj_replay_keep(nm_t *nm, nm_obj_t *o, bool keep);

/* Evict o now, as the store does to make room (a task's output LOST, a
   put spilled; the log told): false when it cannot be (not READY in the
   arena, or pinned). For test hooks (LUX_TEST_PULL_REMAKE). */
bool nm_obj_evict(nm_t *nm, nm_obj_t *o);

/* Bring a spilled put back: 0; LUX_EFULL while the store has no room
   (the message says what it holds: wait and try again); LUX_ECORRUPT when
   the bytes read back are not the object's (its fingerprint): the object
   is then an error for good; another code. */
int nm_obj_restore(nm_t *nm, nm_obj_t *o);

/* A copy of the bytes of o, SPILLED, on the heap in *out (the caller
   frees it), without bringing o back into the store: from its heap copy
   while its write is on its way, else read from its file and checked
   against its fingerprint (o and its file stay as they are). 0, or a
   code whose message names the object and why. */
int nm_obj_copy_spilled(nm_t *nm, const nm_obj_t *o, uint8_t **out);

/* Spills are written by a thread (exec_node_obj.c): hand back the writes
   done (each tick), and at the node's end, after its objects are freed,
   let the write in progress end and drop the rest. */
void nm_obj_spill_tick(nm_t *nm);
void nm_obj_spill_close(nm_t *nm);

/* o as a client is told of it: its value inline, its place in the store,
   or its error. A SPILLED object has no place to tell (its old offset is
   other objects' room now). */
void nm_obj_describe(nm_t *nm, const nm_obj_t *o, exec_obj_t *d);

/* Send m (header frame first) to client c: on its connection, or to the
   node it stands for (nm->ops.peer_send); dropped when c is gone. */
void nm_send(nm_t *nm, nm_client_t *c, zmsg_t **m);

/* Tell c of o (pinned: pinned for c). Nothing is sent for a SPILLED
   object: a GET of one brings it back first (exec_store.c). */
void nm_client_send_obj(nm_t *nm, nm_client_t *c, const nm_obj_t *o, bool pinned);

/* Answer c's GET of id with "not now" (EXEC_W_UNAVAILABLE): code (a
   LUX_E*) and msg say why; the object itself has not failed, so the
   client asks again at its next get. */
void nm_client_send_unavailable(nm_t *nm, nm_client_t *c, const lux_ref_t *id, int code,
                                const char *msg);

void nm_client_pin(nm_t *nm, nm_client_t *c, nm_obj_t *o);

void nm_client_unpin(nm_t *nm, nm_client_t *c, const lux_ref_t *id);

int nm_store_alloc(nm_t *nm, uint64_t size, uint64_t *off); /* evicts to make room */

/* The same, without the message: LUX_EFULL quietly when there is no room. */
int nm_store_try(nm_t *nm, uint64_t size, uint64_t *off);

void nm_store_free(nm_t *nm, uint64_t off);

/* Whether waiting may bring room to client c (NULL: a task not yet
   running): a task other than c's is running, whose end may unpin. When
   none is, a request for room goes beyond the store's size at once (DESIGN
   7, rule 9). */
bool nm_store_room_may_come(nm_t *nm, const nm_client_t *c);

/* Whether a request for room that found none even beyond the store's
   size gives up: when no task (other than c's) is blocked in a get, at
   once; else when no task that may free room has run for
   LUX_STORE_WAIT_MS, or when it has waited LUX_STORE_WAIT_MAX_MS since
   since_ms. Tasks blocked in gets let go when what they wait for ends, so
   while that runs the request waits on (DESIGN 7, rule 13). The first
   time a request (what, of size bytes; *noted its own flag, false at
   first) waits on past LUX_STORE_WAIT_MS, that is logged (rate-limited). */
bool nm_store_room_stuck(nm_t *nm, const nm_client_t *c, int64_t since_ms, bool *noted,
                         const char *what, uint64_t size);

/* Free the arena room c was granted and has not sealed. */
void nm_client_drop_grants(nm_t *nm, nm_client_t *c);

void nm_flush_clients(nm_t *nm);

#endif
