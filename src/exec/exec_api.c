/*  exec_api - lux_init and lux_shutdown: connect to a cluster, or start the
    embedded default, and register the driver's module. */
#include "exec_arena.h"
#include "exec_client.h"
#include "exec_head.h"
#include "exec_node.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_log.h"
#include "../util/util_proc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t s_ending_pid; /* the process whose handlers these are */

/* SIGTERM or SIGINT ends a program on the embedded default: its store's
   file in /dev/shm goes first (unlink is async-signal-safe), then the
   signal does what it would have done (the program dies of it). A
   process forked from it (with the handler, not the store) only dies. */
static void
s_on_ending(int sig)
{
    if (getpid() == (pid_t) s_ending_pid)
        exec_arena_unlink_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The handlers, only where the program left a signal's default action: a
   program's own handler (or an ignored signal) stays as it is, and its
   store's file is then removed by the next start of a node manager of the
   same user (exec_arena_sweep, as after a kill -9). */
static void
s_on_ending_signals(void)
{
    static const int sigs[] = {SIGTERM, SIGINT};
    s_ending_pid = (sig_atomic_t) getpid();
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        if (sigaction(sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = s_on_ending;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* The program's name and arguments, for the job_started event. */
static void
s_cmdline(char *name, size_t nn, char *info, size_t ni)
{
    size_t len;
    char *s = util_read_file("/proc/self/cmdline", &len);
    name[0] = info[0] = '\0';
    if (!s)
        return;
    size_t k = 0;
    for (size_t i = 0; i < len; i += strlen(s + i) + 1) {
        if (i == 0)
            snprintf(name, nn, "%s", s);
        else
            k += (size_t) snprintf(info + k, k < ni ? ni - k : 0, "%s%s", k ? " " : "", s + i);
    }
    free(s);
}

lux_t *
lux_init(const lux_config_t *cfg)
{
    lux_config_t c = cfg ? *cfg : (lux_config_t) {0};
    exec_head_t *head = NULL;
    char endpoint[DB_EP_MAX], name[256], info[1024];
    const char *address = c.address ? c.address : getenv("LUX_ADDRESS");
    exec_module_t *module = NULL;
    char path[PATH_MAX];

    /* a library does not take over the program's signals */
    zsys_handler_set(NULL);
    /* ZeroMQ aborts the process when a socket finds no descriptor: room
       first, or a clear error */
    if (util_fd_limit(UTIL_FD_NEED))
        return NULL;
    zsys_init();
    util_log_init(UTIL_LOG_WARN);
    /* the module first: one that is missing or not a module fails here,
       before a cluster is started (or connected to) for nothing */
    if (c.module) {
        uint8_t *bytes, hash[16];
        size_t n;
        if (util_abspath(c.module, path, sizeof path) ||
            exec_module_read(path, &bytes, &n, hash))
            return NULL;
        free(bytes);
        if (!(module = exec_module_load(path, hash)))
            return NULL;
    }
    if (address && *address) {
        db_cluster_t cl;
        if (db_cluster_load(&cl, address))
            return NULL;
        exec_node_endpoint(&cl, endpoint, sizeof endpoint);
    } else {
        if (!(head = exec_head_start(&c)))
            return NULL;
        s_on_ending_signals(); /* zero leaked store files (issue 24) */
        snprintf(endpoint, sizeof endpoint, "%s", exec_head_endpoint(head));
    }
    s_cmdline(name, sizeof name, info, sizeof info);
    lux_t *lx = exec_client_connect(
        endpoint, EXEC_HELLO_DRIVER | (c.detached ? EXEC_CONNECT_DETACHED : 0), name, info);
    if (!lx) {
        exec_head_stop(&head);
        return NULL;
    }
    lx->head = head;
    if (module && exec_client_send_module(lx, lx->module = module, path))
        goto fail;
    return lx;
fail:
    {
        char why[UTIL_ERRMSG_MAX];
        snprintf(why, sizeof why, "%s", lux_errmsg());
        lux_shutdown(&lx);
        util_err(LUX_EINVAL, "%s", why);
    }
    return NULL;
}

int
lux_shutdown(lux_t **lx_p)
{
    lux_t *lx = *lx_p;
    if (!lx)
        return 0;
    exec_head_t *head = lx->head;
    exec_client_close(lx_p, 0);
    exec_head_stop(&head);
    return 0;
}
