/*  exec_bulk_pool - threads that seal and open the bulk path's records beside the
    node's loop (see exec_bulk_pool.h). One lock guards the queue and every
    job's state; a thread takes the oldest queued job, runs it unlocked,
    marks it done, wakes the loop through the eventfd and any canceller
    waiting on it.
*/
#include "exec_bulk_pool.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "lux.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define S_MAX_THREADS 8

struct exec_bulk_pool {
    pthread_mutex_t lock;
    pthread_cond_t work;         /* a job was queued, or the pool stops */
    pthread_cond_t done;         /* a job finished (a canceller may wait for it) */
    exec_bulk_job_t *head, *tail; /* the queue, oldest first */
    pthread_t th[S_MAX_THREADS];
    int want;                    /* threads to run */
    int started;                 /* threads running */
    bool tried;                  /* the threads were started (or failed to) */
    bool stop;
    int efd;                     /* the eventfd the loop polls */
};

static void
s_wake(exec_bulk_pool_t *p)
{
    uint64_t one = 1;
    ssize_t k;
    do
        k = write(p->efd, &one, sizeof one);
    while (k < 0 && errno == EINTR);
}

static void *
s_thread(void *arg)
{
    exec_bulk_pool_t *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && !p->head)
            pthread_cond_wait(&p->work, &p->lock);
        if (p->stop)
            break;
        exec_bulk_job_t *j = p->head;
        if (!(p->head = j->next))
            p->tail = NULL;
        j->next = NULL;
        j->state = EXEC_BULK_JOB_RUNNING;
        pthread_mutex_unlock(&p->lock);
        j->run(j);
        pthread_mutex_lock(&p->lock);
        j->state = EXEC_BULK_JOB_DONE;
        pthread_cond_broadcast(&p->done);
        s_wake(p);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

exec_bulk_pool_t *
exec_bulk_pool_new(int threads)
{
    exec_bulk_pool_t *p = calloc(1, sizeof *p);
    if (!p) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    if ((p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        util_err(LUX_EIO, "bulk: eventfd: %s", strerror(errno));
        free(p);
        return NULL;
    }
    if (threads < 0) {
        const char *v = getenv("LUX_BULK_THREADS");
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 1 ? (int) (cpus - 1) : 0;
        if (threads > 3)
            threads = 3;
        if (v && *v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > S_MAX_THREADS)
                log_warn("bulk: LUX_BULK_THREADS=%s is not a number of threads from 0 to %d; "
                         "using %d", v, S_MAX_THREADS, threads);
            else
                threads = (int) n;
        }
    }
    p->want = threads > S_MAX_THREADS ? S_MAX_THREADS : threads;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    return p;
}

/* The threads, at the first push; with every signal blocked in them. */
static void
s_start(exec_bulk_pool_t *p)
{
    sigset_t all, old;
    p->tried = true;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < p->want; i++) {
        int rc = pthread_create(&p->th[i], NULL, s_thread, p);
        if (rc) {
            log_warn("bulk: thread %d of %d cannot start (%s); %d run", i + 1, p->want,
                     strerror(rc), i);
            break;
        }
        p->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p->started)
        log_info("bulk: %d thread%s to seal and open records", p->started, p->started == 1 ? "" : "s");
}

void
exec_bulk_pool_destroy(exec_bulk_pool_t **self_p)
{
    exec_bulk_pool_t *p = self_p ? *self_p : NULL;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    for (exec_bulk_job_t *j = p->head; j; j = j->next)
        j->state = EXEC_BULK_JOB_IDLE;
    p->head = p->tail = NULL;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->th[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    close(p->efd);
    free(p);
    *self_p = NULL;
}

int
exec_bulk_pool_threads(exec_bulk_pool_t *self)
{
    return self ? (self->tried ? self->started : self->want) : 0;
}

int
exec_bulk_pool_fd(exec_bulk_pool_t *self)
{
    return self ? self->efd : -1;
}

void
exec_bulk_pool_clear(exec_bulk_pool_t *self)
{
    uint64_t n;
    while (read(self->efd, &n, sizeof n) > 0)
        ;
}

void
exec_bulk_pool_push(exec_bulk_pool_t *self, exec_bulk_job_t *job)
{
    if (!self->tried && self->want > 0)
        s_start(self);
    if (self->started == 0) {
        job->state = EXEC_BULK_JOB_RUNNING;
        job->run(job);
        job->state = EXEC_BULK_JOB_DONE;
        return;
    }
    pthread_mutex_lock(&self->lock);
    job->next = NULL;
    job->state = EXEC_BULK_JOB_QUEUED;
    if (self->tail)
        self->tail->next = job;
    else
        self->head = job;
    self->tail = job;
    pthread_cond_signal(&self->work);
    pthread_mutex_unlock(&self->lock);
}

void
exec_bulk_pool_here(exec_bulk_pool_t *self, exec_bulk_job_t *job)
{
    job->run(job);
    if (self->started)
        pthread_mutex_lock(&self->lock);
    job->state = EXEC_BULK_JOB_DONE;
    if (self->started)
        pthread_mutex_unlock(&self->lock);
}

bool
exec_bulk_pool_done(exec_bulk_pool_t *self, exec_bulk_job_t *job)
{
    if (self->started == 0)
        return job->state == EXEC_BULK_JOB_DONE;
    pthread_mutex_lock(&self->lock);
    bool d = job->state == EXEC_BULK_JOB_DONE;
    pthread_mutex_unlock(&self->lock);
    return d;
}

void
exec_bulk_pool_cancel(exec_bulk_pool_t *self, exec_bulk_job_t *job)
{
    if (self->started == 0) {
        job->state = EXEC_BULK_JOB_IDLE;
        return;
    }
    pthread_mutex_lock(&self->lock);
    if (job->state == EXEC_BULK_JOB_QUEUED) {
        exec_bulk_job_t *prev = NULL;
        for (exec_bulk_job_t *j = self->head; j; prev = j, j = j->next)
            if (j == job) {
                if (prev)
                    prev->next = j->next;
                else
                    self->head = j->next;
                if (self->tail == j)
                    self->tail = prev;
                break;
            }
        job->next = NULL;
    }
    while (job->state == EXEC_BULK_JOB_RUNNING)
        pthread_cond_wait(&self->done, &self->lock);
    job->state = EXEC_BULK_JOB_IDLE;
    pthread_mutex_unlock(&self->lock);
}
