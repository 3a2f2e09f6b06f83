/*  exec_store - the object store's requests (ALLOC, UNALLOC, PUT, GET,
    FREE), as the node manager's loop hands them over (see exec_store.c).
    Each takes the message's body frame (NULL when it had none: complained
    of and dropped) from client c.
*/
#ifndef EXEC_STORE_H_INCLUDED
#define EXEC_STORE_H_INCLUDED

#include "exec_node_int.h"

void nm_store_on_put(nm_t *nm, nm_client_t *c, zframe_t *body);
void nm_store_on_alloc(nm_t *nm, nm_client_t *c, zframe_t *body);
void nm_store_on_unalloc(nm_t *nm, nm_client_t *c, zframe_t *body);
void nm_store_on_get(nm_t *nm, nm_client_t *c, zframe_t *body);
void nm_store_on_free(nm_t *nm, nm_client_t *c, zframe_t *body);

/* After a round of messages: the waiting ALLOCs and GETs of spilled puts
   tried again when room may have appeared, answered at their deadline. */
void nm_store_retry(nm_t *nm);

/* Client c left (NULL: the node stops): its waiting ALLOCs and GETs go. */
void nm_store_alloc_waits_drop(nm_t *nm, nm_client_t *c);
void nm_store_restore_waits_drop(nm_t *nm, nm_client_t *c);

#endif
