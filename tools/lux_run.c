/*  lux_run - `lux run MODULE.so [ARGS]`: run a module's entry point as the
    driver, on the embedded default or on a running cluster; and `lux
    worker`, the worker process the node manager starts. */
#include "lux_cmd.h"
#include "lux_opt.h"
#include "lux.h"
#include "db/db_cluster.h"
#include "exec/exec_arena.h"
#include "exec/exec_client.h"
#include "exec/exec_worker.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_log.h"
#include "util/util_proc.h"

#include <czmq.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const char s_run_usage[] =
    "lux run [--address DIR | --address HOST:PORT [--token-file F] [--node-ip IP]]\n"
    "        [--workers N] [--shards N] [--store-mb N] [--resources R]\n"
    "        [--dir RUNS] [--detach] [--record-puts[=LIMIT]] MODULE.so [ARGS...]";

/* Load the module before the cluster starts, check that it has an entry
   point, and let its LUX_CONFIGURE, if it has one, read its arguments into
   cfg. lux_init loads the same module again, which finds it loaded (by
   hash). 0, or the exit status: nothing has started when it is not 0. */
static int
s_configure(lux_config_t *cfg, int argc, char **argv)
{
    char path[PATH_MAX];
    uint8_t *bytes, hash[16];
    size_t n;
    exec_module_t *m;
    if (util_abspath(cfg->module, path, sizeof path) ||
        exec_module_read(path, &bytes, &n, hash))
        return lux_fail("run", "%s", lux_errmsg());
    free(bytes);
    if (!(m = exec_module_load(path, hash)))
        return lux_fail("run", "%s", lux_errmsg());
    if (!exec_module_main(m))
        return lux_fail("run", "%s has no entry point (LUX_MAIN): nothing to run", cfg->module);
    lux_configure_t fn = exec_module_configure(m);
    return fn ? fn(cfg, argc, argv) : 0;
}

/* A signal that ends the run (SIGTERM, SIGINT, SIGHUP): the embedded node
   manager's store file goes first, then the signal does what it would
   have done. The process still dies of it, as before: the module's main
   is the user's code, with no way to be told to stop. */
static void
s_on_ending(int sig)
{
    exec_arena_unlink_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void
s_on_ending_signals(void)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* ignored (nohup): stays so */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = s_on_ending;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
    }
}

int
cmd_run(int argc, char **argv)
{
    lux_config_t cfg = {0};
    unsigned long v;
    static const struct option opts[] = {
        {"address", required_argument, 0, 'a'}, {"dir", required_argument, 0, 'd'},
        {"resources", required_argument, 0, 'R'}, {"workers", required_argument, 0, 'w'},
        {"shards", required_argument, 0, 's'},  {"store-mb", required_argument, 0, 'm'},
        {"detach", no_argument, 0, 'D'},        {"record-puts", optional_argument, 0, 'P'},
        {"token-file", required_argument, 0, 'T'}, {"node-ip", required_argument, 0, 'I'},
        {0}};
    const char *token = NULL, *node_ip = NULL;
    /* in order: the options after MODULE.so are the module's */
    lux_opt_t p = {.cmd = "run", .usage = s_run_usage, .opts = opts, .in_order = true,
                   .help = "Runs the module's LUX_MAIN entry point as the driver. Without --address "
                           "(or LUX_ADDRESS)\nit starts a private cluster (the embedded default) "
                           "and stops it at the end;\nthe run's log stays in its directory "
                           "(printed at the end).\n"};
    int o;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        switch (o) {
        case 'D': /* the job's tasks outlive the driver */
            cfg.detached = 1;
            break;
        case 'P': { /* the largest put kept for replay; alone: every one */
            uint64_t lim = UINT64_MAX;
            if (optarg && db_cluster_parse_size(optarg, &lim))
                return lux_opt_usage(&p, "--record-puts: %s", lux_errmsg());
            cfg.record_puts = lim == 0 ? -1 : lim > INT64_MAX ? INT64_MAX : (int64_t) lim;
            break;
        }
        case 'a':
            cfg.address = optarg;
            break;
        case 'T':
            token = optarg;
            break;
        case 'I':
            node_ip = optarg;
            break;
        case 'd':
            cfg.dir = optarg;
            break;
        case 'R':
            if (!lux_opt_resources(&p, "--resources"))
                return 2;
            cfg.resources = optarg;
            break;
        case 'w':
            if (!lux_opt_uint(&p, "--workers", 1024, false, &v))
                return 2;
            cfg.workers = (int) v;
            break;
        case 's':
            if (!lux_opt_uint(&p, "--shards", 256, false, &v))
                return 2;
            cfg.shards = (int) v;
            break;
        case 'm':
            if (!lux_opt_uint(&p, "--store-mb", 1UL << 24, false, &v))
                return 2;
            cfg.store_bytes = (uint64_t) v << 20;
            break;
        default:
            return p.status;
        }
    }
    if (!lux_opt_args(&p, argc, argv, 1, -1, "a MODULE.so"))
        return 2;
    int i = optind;
    cfg.module = argv[i];
    int rc = s_configure(&cfg, argc - i, argv + i);
    if (rc)
        return rc;
    if ((token || node_ip) && !lux_run_is_remote(cfg.address))
        return lux_opt_usage(&p, "--token-file and --node-ip go with --address HOST:PORT");
    /* a cluster elsewhere: a node of our own joins it (lux_run_remote.c) */
    char node_dir[PATH_MAX] = "";
    if (lux_run_is_remote(cfg.address)) {
        if (lux_run_node_up(cfg.address, token, node_ip, node_dir, sizeof node_dir))
            return lux_fail("run", "%s", lux_errmsg());
        cfg.address = node_dir;
    }
    s_on_ending_signals();
    lux_t *lx = lux_init(&cfg);
    if (!lx) {
        rc = lux_fail("run", "%s", lux_errmsg());
        if (node_dir[0])
            lux_run_node_down(node_dir);
        return rc;
    }
    lux_main_t main_fn = exec_module_main(lx->module);
    if (!main_fn) {
        lux_shutdown(&lx);
        if (node_dir[0])
            lux_run_node_down(node_dir);
        return lux_fail("run", "%s has no entry point (LUX_MAIN)", argv[i]);
    }
    rc = main_fn(lx, argc - i, argv + i);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    bool embedded = lx->head != NULL;
    lux_shutdown(&lx);
    if (node_dir[0])
        lux_run_node_down(node_dir);
    if (embedded && getenv("LUX_RUN_QUIET") == NULL && isatty(2))
        fprintf(stderr, "lux run: the log of this run is in %s (lux sql --dir %s ...)\n", dir,
                dir);
    return rc;
}

int
cmd_worker(int argc, char **argv)
{
    static const struct option opts[] = {{"dir", required_argument, 0, 'd'},
                                         {"node", required_argument, 0, 'n'}, {0}};
    lux_opt_t p = {.cmd = "worker", .usage = "lux worker --dir DIR --node ENDPOINT "
                                             "(internal: started by a node manager)",
                   .opts = opts};
    const char *dir = NULL, *node = NULL;
    int o;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        if (o == 'd')
            dir = optarg;
        else if (o == 'n')
            node = optarg;
        else
            return p.status;
    }
    if (!lux_opt_args(&p, argc, argv, 0, 0, ""))
        return 2;
    if (!dir || !node)
        return lux_opt_usage(&p, "--dir and --node are required");
    util_log_init(UTIL_LOG_INFO);
    util_log_name("worker %d", (int) getpid());
    if (util_die_with_parent())
        return lux_fail("worker", "%s", lux_errmsg());
    zsys_init();
    return exec_worker_main(dir, node);
}
