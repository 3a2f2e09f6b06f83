/*  heldfx - the store that t/3156, t/3164 and t/3165 build: a rebuilt
    output held on disk for a waiting task (DESIGN 7, rule 10), spilled.

    The embedded default, unrecorded, with a 16 MiB store and 2 workers
    (LUX_STORE_WAIT_MS 1000); X1, X2 (t_big, 4 MiB each) and T's outputs
    A and B (4 MiB each; T is t_h2, or t_h2once with a flag file), pushed
    out of the store by two 8 MiB puts (freed); a task G held at a gate
    (t_gate); D1, D2 (t_checks) waiting for G and X1, X2, whose rebuilt
    copies are held pinned: half the store; DB (t_h1) waiting for G and B,
    T rebuilt and B held on disk beyond the bound; then an 8 MiB put
    (freed) evicts A (dropped) and B (spilled). */
#ifndef T_LIB_HELDFX_H_INCLUDED
#define T_LIB_HELDFX_H_INCLUDED

#include "lux.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define HELDFX_MB (1024 * 1024)
#define HELDFX_L (4 * HELDFX_MB) /* X1, X2, A, B */

typedef struct {
    lux_t *lx;
    char dir[PATH_MAX];    /* the node's directory: its spill files in dir/spill */
    char go[PATH_MAX + 8]; /* G's gate: made by heldfx_open */
    int64_t tctl[3];       /* T's control: salt + 1, A's and B's sizes */
    int64_t hctl[2];       /* DB's (t_h1): salt + 2, 64 bytes */
    lux_ref_t x[2], ab[2], g, d[2], db;
    int64_t made;          /* outputs the module's tasks made before the rebuilds */
    uint8_t *buf;          /* 8 MiB, the tests' to use */
} heldfx_t;

/* Build it: X1's salt is salt, T's salt + 1, DB's salt + 2, X2's salt +
   3, the puts' bytes from salt + 4 on. With flag, T is t_h2once (it fails
   once the file flag exists: the file is removed before T's rebuild for
   B, and that rebuild makes it again). Four checks, as the tests made
   them: made and pushed out; rebuilt; the 8 MiB put; B spilled. Whether
   all four passed. */
bool heldfx_build(heldfx_t *h, int64_t salt, const char *flag);

/* The spill files in dir/spill (-1: none such), and whether one is ref's. */
int heldfx_spill_files(const char *dir, const lux_ref_t *ref, bool *its);

/* Wait until the test module's tasks have counted want outputs (60 s at
   most without one more). Whether they did. */
bool heldfx_ticks(int64_t want);

/* Open G's gate. */
void heldfx_open(heldfx_t *h);

/* Free every ref it made (the frees go with the next call or get). */
void heldfx_free(heldfx_t *h);

/* Free the buffer and shut the node down. */
void heldfx_end(heldfx_t *h);

#endif
