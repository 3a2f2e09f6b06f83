/*  hello_log - write the events of a small job into a running cluster's
    log, the way the runtime will: a job starts, registers its module, a
    node joins, the driver puts its initial weights, and for a few
    iterations fans out rollout tasks that read the weights, then an update
    task that reads every rollout and makes the next weights. One rollout
    fails once (its worker crashed) and is retried.

    It uses the log's client directly (src/db), not the task API, so it is
    a demonstration of the log, not of scheduling: timings are invented.

    usage: hello_log --dir DIR [--iterations N] [--width N]
    Prints the ID of the final weights object, whose lineage is the job.
*/
#include "db/db_client.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_client_t *s_cl;
static util_id_t s_job, s_driver, s_node;
static uint64_t s_counter; /* the driver's submission counter */
static int64_t s_clock;    /* invented time, ns */

static void
s_put(db_event_t *e)
{
    if (db_client_append(s_cl, e)) {
        fprintf(stderr, "hello_log: %s\n", lux_errmsg());
        exit(1);
    }
}

/* One object ID as 20 bytes: task ID and return index, big-endian. */
static void
s_dep(uint8_t *out, const util_id_t *task, uint32_t idx)
{
    memcpy(out, task->b, 16);
    out[16] = (uint8_t) (idx >> 24);
    out[17] = (uint8_t) (idx >> 16);
    out[18] = (uint8_t) (idx >> 8);
    out[19] = (uint8_t) idx;
}

/* Submit a task reading deps (n objects); return its ID. */
static util_id_t
s_submit(const char *fn, const uint8_t *deps, uint32_t n)
{
    util_id_t t;
    db_event_t e = {.kind = DB_K_task_submitted};
    util_id_child(&t, &s_job, &s_driver, ++s_counter);
    DB_SET_ID(&e, task, DB_F_TASK, &t);
    DB_SET_ID(&e, job, DB_F_JOB, &s_job);
    DB_SET_ID(&e, parent, DB_F_PARENT, &s_driver);
    DB_SET_INT(&e, idx, DB_F_IDX, 1);
    db_event_set_name(&e, fn);
    if (n) {
        e.deps = deps;
        e.deps_len = n * DB_DEP_LEN;
        e.mask |= DB_F_DEPS;
    }
    s_put(&e);
    return t;
}

static void
s_finish(const util_id_t *t, int attempt, int64_t ms, bool fail)
{
    db_event_t e = {.kind = fail ? DB_K_task_failed : DB_K_task_finished};
    DB_SET_ID(&e, task, DB_F_TASK, t);
    DB_SET_ID(&e, node, DB_F_NODE, &s_node);
    DB_SET_INT(&e, worker, DB_F_WORKER, 4000 + attempt);
    DB_SET_INT(&e, attempt, DB_F_ATTEMPT, attempt);
    DB_SET_INT(&e, status, DB_F_STATUS, fail ? LUX_EDEAD : 0);
    DB_SET_INT(&e, t_start, DB_F_T_START, s_clock);
    s_clock += ms * 1000000;
    DB_SET_INT(&e, t_end, DB_F_T_END, s_clock);
    DB_SET_INT(&e, size, DB_F_SIZE, fail ? 0 : 4096);
    if (fail)
        db_event_set_info(&e, "worker 4001 died (signal 9)");
    s_put(&e);
}

int
main(int argc, char **argv)
{
    const char *dir = NULL;
    int iterations = 3, width = 8;
    db_cluster_t c;
    char hex[UTIL_ID_HEX];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--width") == 0 && i + 1 < argc)
            width = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: hello_log --dir DIR [--iterations N] [--width N]\n");
            return 2;
        }
    }
    if (!dir || iterations < 1 || width < 1 || width > 1000) {
        fprintf(stderr, "usage: hello_log --dir DIR [--iterations N] [--width 1..1000]\n");
        return 2;
    }
    zsys_init();
    if (db_cluster_load(&c, dir)) {
        fprintf(stderr, "hello_log: %s\n", lux_errmsg());
        return 1;
    }
    db_client_opts_t o = {.cluster = &c};
    if (!(s_cl = db_client_new(&o))) {
        fprintf(stderr, "hello_log: %s\n", lux_errmsg());
        return 1;
    }
    util_id_random(&s_job);
    util_id_random(&s_driver);
    util_id_random(&s_node);
    s_clock = util_now_ns();

    db_event_t e = {.kind = DB_K_job_started};
    DB_SET_ID(&e, job, DB_F_JOB, &s_job);
    db_event_set_name(&e, "hello_log");
    db_event_set_info(&e, "--iterations 3");
    s_put(&e);
    e = (db_event_t) {.kind = DB_K_node_joined};
    DB_SET_ID(&e, node, DB_F_NODE, &s_node);
    db_event_set_name(&e, "ipc://local");
    db_event_set_info(&e, "CPU=2");
    s_put(&e);

    /* the initial weights: an object put by the driver */
    util_id_t weights;
    util_id_child(&weights, &s_job, &s_driver, ++s_counter);
    e = (db_event_t) {.kind = DB_K_object_put};
    DB_SET_ID(&e, task, DB_F_TASK, &weights);
    DB_SET_ID(&e, node, DB_F_NODE, &s_node);
    DB_SET_INT(&e, idx, DB_F_IDX, 0);
    DB_SET_INT(&e, size, DB_F_SIZE, 4096);
    s_put(&e);

    uint8_t *deps = malloc((size_t) (width + 1) * DB_DEP_LEN);
    for (int it = 0; it < iterations; it++) {
        util_id_t *roll = malloc((size_t) width * sizeof *roll);
        uint8_t wdep[DB_DEP_LEN];
        s_dep(wdep, &weights, 0);
        for (int k = 0; k < width; k++)
            roll[k] = s_submit("es.rollout", wdep, 1);
        for (int k = 0; k < width; k++) {
            if (it == 1 && k == 2) { /* a crash, then a retry */
                s_finish(&roll[k], 1, 3, true);
                db_event_t r = {.kind = DB_K_task_retried};
                DB_SET_ID(&r, task, DB_F_TASK, &roll[k]);
                DB_SET_ID(&r, node, DB_F_NODE, &s_node);
                DB_SET_INT(&r, attempt, DB_F_ATTEMPT, 2);
                db_event_set_info(&r, "worker died: retry 2 of 3");
                s_put(&r);
                s_finish(&roll[k], 2, 11 + k, false);
            } else {
                s_finish(&roll[k], 1, 10 + k, false);
            }
            s_dep(deps + (size_t) k * DB_DEP_LEN, &roll[k], 0);
        }
        s_dep(deps + (size_t) width * DB_DEP_LEN, &weights, 0);
        weights = s_submit("es.update", deps, (uint32_t) width + 1);
        s_finish(&weights, 1, 5, false);
        free(roll);
    }
    free(deps);
    e = (db_event_t) {.kind = DB_K_job_finished};
    DB_SET_ID(&e, job, DB_F_JOB, &s_job);
    DB_SET_INT(&e, status, DB_F_STATUS, 0);
    db_event_set_info(&e, "ok");
    s_put(&e);
    if (db_client_sync(s_cl, 30000)) {
        fprintf(stderr, "hello_log: %s\n", lux_errmsg());
        return 1;
    }
    db_client_destroy(&s_cl);
    printf("%s00000000\n", util_id_hex(&weights, hex));
    return 0;
}
