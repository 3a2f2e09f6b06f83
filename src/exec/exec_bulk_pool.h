/*  exec_bulk_pool - threads beside the node's loop that seal and open the
    bulk path's records (doc/DESIGN.md 7.3, exec_bulk_job.h), so that the
    loop sends one chunk while the next is sealed, and receives one while
    the last is opened: before, one thread sealed, then sent, in series,
    and the source was the pull's bottleneck (issue 28: 376 ms sealing and
    279 ms sending per GiB on one thread); then the puller was (363 ms
    opening and 184 ms receiving).

    A job is a struct the caller owns, with exec_bulk_job_t first; the
    caller pushes it, a pool thread runs it, and the pool's descriptor
    (an eventfd, in the caller's poll set) becomes readable once it is
    done. The caller must not touch what the job works on until
    exec_bulk_pool_done says so, and must cancel a job before freeing
    what it uses: exec_bulk_pool_cancel takes it off the queue, or waits
    for the thread running it (one chunk's work, about a millisecond).

    Threads: LUX_BULK_THREADS (0-8), else one fewer than the online CPUs,
    at most 3; with none, a push runs the job at once in the caller's
    thread (as before the pool). They start at the first push, so a node
    that never moves an object in bulk has none, and they block every
    signal (the loop's thread takes them).
*/
#ifndef EXEC_BULK_POOL_H_INCLUDED
#define EXEC_BULK_POOL_H_INCLUDED

#include <stdbool.h>

typedef struct exec_bulk_pool exec_bulk_pool_t;
typedef struct exec_bulk_job exec_bulk_job_t;

enum { EXEC_BULK_JOB_IDLE, EXEC_BULK_JOB_QUEUED, EXEC_BULK_JOB_RUNNING, EXEC_BULK_JOB_DONE };

struct exec_bulk_job {
    void (*run)(exec_bulk_job_t *job); /* set by the caller; runs on a pool thread */
    int state;                         /* EXEC_BULK_JOB_*, under the pool's lock */
    exec_bulk_job_t *next;             /* the queue's */
};

/* A pool of threads as above (threads < 0: that default). NULL with the
   message when its eventfd cannot be made. */
exec_bulk_pool_t *exec_bulk_pool_new(int threads);
/* Stops and joins the threads; jobs still queued are dropped, not run. */
void exec_bulk_pool_destroy(exec_bulk_pool_t **self_p);
/* How many threads it runs jobs on (0: in the caller's). */
int exec_bulk_pool_threads(exec_bulk_pool_t *self);
/* Readable once a job is done since the last exec_bulk_pool_clear. */
int exec_bulk_pool_fd(exec_bulk_pool_t *self);
void exec_bulk_pool_clear(exec_bulk_pool_t *self);
/* Queue job (its run set). Without threads (or when none can be
   started) it runs here and now. */
void exec_bulk_pool_push(exec_bulk_pool_t *self, exec_bulk_job_t *job);
/* Run job here and now, in the caller's thread, as done (the loop's
   choice for a connection: LUX_BULK_LOOP, exec_bulk_job.h). */
void exec_bulk_pool_here(exec_bulk_pool_t *self, exec_bulk_job_t *job);
/* Whether job has run (then it is the caller's again, and stays done
   until pushed again). */
bool exec_bulk_pool_done(exec_bulk_pool_t *self, exec_bulk_job_t *job);
/* Job will not run, or has run: taken off the queue, or waited for. */
void exec_bulk_pool_cancel(exec_bulk_pool_t *self, exec_bulk_job_t *job);

#endif
