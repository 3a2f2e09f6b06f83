/*  graph - random task graphs for the runtime's tests: built from the
    functions of t/lib/testmod.c, run on a cluster, and computed again
    here, sequentially, to compare. */
#ifndef GRAPH_H_INCLUDED
#define GRAPH_H_INCLUDED

#include "lux.h"

#include <stdbool.h>
#include <stdint.h>

#define GRAPH_M 1000003

enum { G_PUT, G_BIGPUT, G_MIX, G_SPLIT, G_BIG, G_CHECK, G_NESTED, G_KINDS };

typedef struct {
    int kind;
    int nout;
    lux_ref_t ref[2];
    int64_t want[2];   /* expected int64 outputs (G_BIG/G_BIGPUT: seed + size mod M) */
    int64_t seed, size; /* G_BIG, G_BIGPUT */
    bool blob;          /* the output is a large blob, checked by G_CHECK */
    int nin, in[8];     /* nodes whose output is an argument (-1: a literal) */
    bool wrong;         /* graph_check found an output wrong */
} graph_node_t;

typedef struct {
    graph_node_t *nodes;
    int n;
    uint64_t rng;
    int counts[G_KINDS];
} graph_t;

/* Submit a random graph of n nodes (values and refs mixed, multiple
   returns, nested tasks, big blobs of up to max_blob bytes). 0 or a code. */
int graph_submit(lux_t *lx, graph_t *g, int n, uint64_t seed, int64_t max_blob);
/* The same, every call made with opts (NULL: the defaults). */
int graph_submit_opts(lux_t *lx, graph_t *g, int n, uint64_t seed, int64_t max_blob,
                      const lux_opts_t *opts);
/* Get every output and compare; returns the number of mismatches (0 is
   success); why gets the first. The gets wait while the graph makes
   progress (a task of it finishes, see graph_ticks, or a get succeeds)
   and fail after 2 minutes without any. */
int graph_check(lux_t *lx, graph_t *g, char *why, size_t n);
void graph_free(graph_t *g);

/* Call t_mix (fn 0), t_split (1: two arguments, two outputs) or t_nested
   (2) on n arguments whose values are vals, with opts (NULL: the
   defaults): the outputs' refs into refs, the values they must have into
   want. lux_call's code. */
int graph_call_int(lux_t *lx, const lux_opts_t *opts, int fn, int n, const lux_arg_t *args,
                   const int64_t *vals, lux_ref_t *refs, int64_t *want);

/* Call t_big, the test module's large value (n bytes from seed), into
   *ref: lux_call's code. */
int graph_call_big(lux_t *lx, int64_t seed, int64_t n, lux_ref_t *ref);
/* Whether v is t_big's value for seed and n, every byte checked. */
bool graph_big_ok(const lux_val_t *v, int64_t seed, int64_t n);

/* Count the tasks of the test module's graph functions (t_mix, t_split,
   t_big, t_check, t_nested) that finish from now on: their workers append
   a byte each to a file in the test's scratch directory, named to them by
   the environment variable LUX_T_TICKS, which this sets (call it before
   lux_init; graph_embedded does). */
void graph_ticks_start(void);
/* (graph_ticks_start takes $LUX_T_TICKS when it is set already: the file
   of a cluster started with it, whose workers count there.)
   How many finished since graph_ticks_start (0 when it was not called). */
int64_t graph_ticks(void);

/* The path of t/lib's test module, built by make check. */
const char *graph_module(void);

/* The embedded default with the test module in dir (NULL: the test's
   scratch directory), workers worker processes, an object store of
   store_bytes and no put recorded for replay (so no blob writer's pins
   in the store: the tests of a full store count every byte); bails out
   if it does not start. */
lux_t *graph_unrecorded(const char *dir, int workers, uint64_t store_bytes);

/* The spill tests on a full disk (t/5105, t/3170): the embedded default
   as graph_unrecorded(dir, 1, store_bytes), in a mount namespace of this
   process's own, with a 2 MiB tmpfs on its spill directory (its path into
   spill, n bytes), so that filling it disturbs nobody. Skips the whole
   test where that cannot be made (it needs root or CAP_SYS_ADMIN); call it
   before any other thread runs. Unmount spill after lux_shutdown. */
lux_t *graph_small_spill(const char *dir, uint64_t store_bytes, char *spill, size_t n);

/* Puts of size bytes that do not compress (hx_fill of seed + i for the
   i-th) into refs, until one is refused or max were accepted: how many
   were accepted; the refusal's code into *rc (0: none) and its message
   into why (n bytes). */
int graph_puts_until_full(lux_t *lx, size_t size, uint64_t seed, int max, lux_ref_t *refs,
                          int *rc, char *why, size_t n);

/* Each of the count puts of graph_puts_until_full read back (and freed
   once read: a read pins it): how many were not whole (each said in a
   diag). */
int graph_puts_wrong(lux_t *lx, size_t size, uint64_t seed, int count, lux_ref_t *refs);

/* The embedded default with the test module, workers worker processes and
   an object store of store_bytes, in the test's scratch directory; checks
   that it started (ok, described by what) and bails out if it did not. */
lux_t *graph_embedded(int workers, uint64_t store_bytes, const char *what);

/* The int64 that ref holds (8 bytes) into *out, waiting up to 120 s: 0,
   lux_get's code, or LUX_EPROTO for another size. */
int graph_get8(lux_t *lx, const lux_ref_t *ref, int64_t *out);

/* Actor HAcc (testmod.c, the running hash from h0, opts ao or NULL) in *a,
   made busy in a call wait(GATE) whose result is *w: GATE is "gate" in
   the test's scratch directory, its path into gate (n bytes); the call
   returns once that file exists. Returns when the call has told it waits
   (GATE.waiting, up to 120 s): 0, or the failing call's code, or
   LUX_ETIMEDOUT. */
int graph_hacc_busy(lux_t *lx, int64_t h0, const lux_actor_opts_t *ao, char *gate, size_t n,
                    lux_actor_t *a, lux_ref_t *w);

/* Whether the error message m says "<ref r in hex> say" (what names the
   part of the chain looked for, in the diag when it does not). */
bool graph_says(const char *m, const char *what, const lux_ref_t *r, const char *say);

/* The tests' random numbers: the next of a 64-bit LCG (31 bits). */
uint64_t graph_rand(uint64_t *rng);
/* testmod.c's t_mix over n values: their sum, times 3 plus 1, mod GRAPH_M. */
int64_t graph_mix(const int64_t *v, int n);

#endif
