/*  cancelmod - the module of t/5308-cancel-wedge.sh and t/3109-exec-cancel:
    tasks that never return, one that stops when cancelled, one that
    waits for a file, a trivial one, an actor, and an entry point that
    plays the drivers of issue 25's wedge (`lux run --address DIR
    cancelmod.so MODE ...`):

        hang N DIR    call c_pause(DIR) N times, wait 1 s for each, exit 0
                      (a driver that gives up on tasks that hang)
        hold N DIR    call c_pause(DIR) N times, print "submitted", flush,
                      and sleep until killed (a driver killed with -9)
        gate PATH DIR call c_gate(PATH, DIR), print "submitted", exit 0 without
                      waiting (run it with --detach, or without)
        one MS        call c_one, wait up to MS ms for it; print its value
                      and exit 0, or the error and exit 1

    Tasks that run say so by making a file DIR/running.PID (their
    worker's pid), so a test waits for them to run, not for a time.
*/
#include "lux.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Say that a task runs: DIR/running.PID (argument 0 is DIR). */
static void
s_running(const lux_val_t *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%.*s/running.%d", (int) dir->size, (const char *) dir->data,
             (int) getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

/* Never returns: pause() again after any signal. Only killing its worker
   ends it. */
static int
c_pause(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) lx, (void) argc;
    s_running(&argv[0]);
    for (;;)
        pause();
    return 0;
}
LUX_FUNCTION(c_pause, 1, 1)

/* Sleeps until it is cancelled (lux_cancel without force): the cancel's
   signal ends its nanosleep, and it returns an error saying so. */
static int
c_nap(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    s_running(&argv[0]);
    for (;;) {
        if (lux_cancelled(lx))
            return lux_raise(lx, "c_nap: interrupted, stopping");
        struct timespec ts = {30, 0};
        nanosleep(&ts, NULL);
    }
}
LUX_FUNCTION(c_nap, 1, 1)

/* Says it runs (in DIR argv[1]), then waits (at most 120 s) until the
   file argv[0] exists; returns 1. */
static int
c_gate(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    char path[1024];
    s_running(&argv[1]);
    snprintf(path, sizeof path, "%.*s", (int) argv[0].size, (const char *) argv[0].data);
    for (int i = 0; i < 12000 && access(path, F_OK) != 0; i++)
        usleep(10000);
    if (access(path, F_OK) != 0)
        return lux_raise(lx, "c_gate: %s did not appear within 120 s", path);
    int64_t v = 1;
    return lux_set(lx, 0, &v, sizeof v);
}
LUX_FUNCTION(c_gate, 2, 1)

/* Its argument back. */
static int
c_echo(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    return lux_set(lx, 0, argv[0].data, argv[0].size);
}
LUX_FUNCTION(c_echo, 1, 1)

/* An actor whose method waits for a file (c_gate's), for a call that is
   still pending when it is cancelled. */
static void *
Gate_new(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) lx, (void) argc, (void) argv;
    static int self;
    return &self;
}
LUX_ACTOR(Gate, 0, Gate_new, NULL, NULL, NULL)

static int
Gate_wait(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    (void) self;
    return c_gate(lx, argc, argv);
}
LUX_METHOD(Gate, wait, 2, 1)

static int
c_one(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc, (void) argv;
    int64_t v = 1;
    return lux_set(lx, 0, &v, sizeof v);
}
LUX_FUNCTION(c_one, 0, 1)

static int
s_main(lux_t *lx, int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "cancelmod: usage: hang N DIR | hold N DIR | gate PATH DIR | one MS\n");
        return 2;
    }
    int n = atoi(argv[2]);
    if (strcmp(argv[1], "gate") == 0) {
        lux_ref_t r;
        lux_val_t v;
        if (argc < 4)
            return 2;
        if (lux_call(lx, "c_gate", 2,
                     (lux_arg_t[]) {LUX_VAL(argv[2], strlen(argv[2])),
                                    LUX_VAL(argv[3], strlen(argv[3]))},
                     1, &r)) {
            fprintf(stderr, "cancelmod: lux_call: %s\n", lux_errmsg());
            return 1;
        }
        lux_get(lx, &r, &v, 0); /* sends the call */
        printf("submitted\n");
        return 0;
    }
    if (strcmp(argv[1], "hang") == 0 || strcmp(argv[1], "hold") == 0) {
        lux_ref_t refs[16];
        if (n < 1 || n > 16 || argc < 4)
            return 2;
        lux_arg_t dir = LUX_VAL(argv[3], strlen(argv[3]));
        for (int i = 0; i < n; i++)
            if (lux_call(lx, "c_pause", 1, &dir, 1, &refs[i])) {
                fprintf(stderr, "cancelmod: lux_call: %s\n", lux_errmsg());
                return 1;
            }
        if (strcmp(argv[1], "hold") == 0) {
            lux_val_t v;
            lux_get(lx, &refs[0], &v, 0); /* sends the calls */
            printf("submitted\n");
            fflush(stdout);
            for (;;)
                pause();
        }
        for (int i = 0; i < n; i++) {
            lux_val_t v;
            int rc = lux_get(lx, &refs[i], &v, 1000);
            printf("c_pause %d: %s\n", i, rc ? lux_strerror(rc) : "returned");
        }
        return 0;
    }
    if (strcmp(argv[1], "one") == 0) {
        lux_ref_t r;
        lux_val_t v;
        int rc = lux_call(lx, "c_one", 0, NULL, 1, &r);
        if (!rc)
            rc = lux_get(lx, &r, &v, n);
        if (rc) {
            printf("c_one: %s\n", lux_errmsg());
            return 1;
        }
        printf("c_one: %lld\n", (long long) *(const int64_t *) v.data);
        return 0;
    }
    fprintf(stderr, "cancelmod: unknown mode '%s'\n", argv[1]);
    return 2;
}
LUX_MAIN(s_main)
