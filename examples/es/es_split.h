/*  es_split - how many rollouts each of an iteration's tasks gets.

    WHY. es.so sends one rollout task per worker, and an iteration lasts
    as long as its slowest task. Split evenly, a worker that is slower for
    a while holds the others up: on the shared VM Lux is measured on, one
    vCPU ran the same rollouts 20-45% slower than the other for bursts of
    30 iterations or more (100+ ms), about a fifth of a CartPole run, while
    the other vCPU idled at the end of every iteration. es_local does not
    see it: its threads take rollouts one at a time from a counter. Tasks
    cannot do that (they are pure functions of their arguments, for the
    log's lineage and replay), so the driver does the balancing instead:
    it times each task and gives the next iteration's tasks rollouts in
    proportion to how fast their slot ran.

    A SLOT is a task's position in the iteration (first submitted, second,
    ...). The node manager gives the ready tasks to its idle workers in the
    same order each time, so a slot keeps its worker as long as the pool
    does; when it does not (another node, a worker replaced), the estimates
    only average out towards an even split.

    THE ESTIMATE. Per slot, the time per rollout: the time from submitting
    to the result, over the rollouts it had; smoothed over iterations
    (weight ES_SPLIT_ALPHA for the newest). The split follows the estimates
    only when they differ by more than ES_SPLIT_MIN_GAP, so that the noise
    of a steady run keeps it even, and never gives a slot less than half
    or more than one and a half of an even share.

    The split never changes a result: each rollout's result depends only on
    its task (es_rollout.h), and the driver orders them by rollout number.
*/
#ifndef ES_SPLIT_H_INCLUDED
#define ES_SPLIT_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#define ES_SPLIT_ALPHA 0.4      /* weight of the newest time in the estimate */
#define ES_SPLIT_MIN_GAP 0.15   /* estimates closer than this (relative): an even split */

typedef struct {
    int slots;     /* tasks per iteration */
    size_t total;  /* rollouts per iteration */
    bool balance;  /* false: always even */
    size_t *count; /* rollouts of each slot, this iteration; slot k's follow
                      those of slots 0..k-1, in rollout order */
    double *per;   /* estimated seconds per rollout of each slot; 0: none yet */
    double *want;  /* scratch */
    long uneven;   /* iterations split unevenly so far */
} es_split_t;

/* An even split of total rollouts (> 0) over slots (1..total; fewer
   rollouts than slots: one slot per rollout). 0, or -1 when out of
   memory. es_split_free frees what it allocated. */
int es_split_init(es_split_t *s, int slots, size_t total, bool balance);
void es_split_free(es_split_t *s);

/* This iteration's tasks took seconds[k] each, from submission to result:
   update the estimates and set the next iteration's counts. */
void es_split_update(es_split_t *s, const double *seconds);

#endif
