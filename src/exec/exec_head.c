/*  exec_head - the embedded default's cluster, hosted in this process.

    The run directory goes under cfg->dir, else $LUX_HOME/runs, else
    ~/.lux/runs, else /tmp/lux-UID/runs, named by the start time and a
    random suffix. It is an ordinary cluster directory (cluster.conf, one
    SQLite file per shard, logs); only its components live in this
    process's threads instead of daemons, and its workers are this
    process's children.
*/
#include "exec_head.h"
#include "exec_node.h"
#include "../db/db_master.h"
#include "../db/db_replica.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct exec_head {
    db_cluster_t cluster;
    zactor_t *master;
    zactor_t *replicas[DB_MAX_SHARDS];
    zactor_t *node;
    char endpoint[DB_EP_MAX];
};

static int
s_runs_dir(const lux_config_t *cfg, char *out, size_t n)
{
    const char *home = getenv("HOME"), *lh = getenv("LUX_HOME");
    if (cfg->dir && *cfg->dir)
        snprintf(out, n, "%s", cfg->dir);
    else if (lh && *lh)
        snprintf(out, n, "%s/runs", lh);
    else if (home && *home && access(home, W_OK) == 0)
        snprintf(out, n, "%s/.lux/runs", home);
    else
        snprintf(out, n, "/tmp/lux-%d/runs", (int) getuid());
    return util_mkdirs(out, 0700);
}

exec_head_t *
exec_head_start(const lux_config_t *cfg)
{
    exec_head_t *self = calloc(1, sizeof *self);
    char runs[PATH_MAX - 64], when[32], hex[UTIL_ID_HEX];
    time_t now = time(NULL);
    struct tm tm;
    if (!self) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    if (s_runs_dir(cfg, runs, sizeof runs))
        goto fail;
    db_cluster_t *c = &self->cluster;
    db_cluster_defaults(c);
    util_id_random(&c->id);
    localtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
    snprintf(c->dir, sizeof c->dir, "%s/%s-%.8s", runs, when, util_id_hex(&c->id, hex));
    if (c->dir[0] != '/') {
        char abs[PATH_MAX];
        if (util_abspath(c->dir, abs, sizeof abs))
            goto fail;
        snprintf(c->dir, sizeof c->dir, "%s", abs);
    }
    /* one shard below 4 cores: each shard is three threads more (network,
       writer, reader), and on 2 cores a second one measured slower for
       tasks, actor calls and ES alike (doc/DESIGN.md section 2) */
    c->shards = cfg->shards > 0 ? (uint32_t) cfg->shards
                                : (sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? 2 : 1);
    c->replicas = 1;
    if (cfg->record_puts)
        c->record_puts = cfg->record_puts < 0 ? 0 : (uint64_t) cfg->record_puts;
    if (db_cluster_create(c))
        goto fail;
    db_master_opts_t mo = {.cluster = c};
    if (!(self->master = db_master_new(&mo)))
        goto fail;
    for (uint32_t s = 0; s < c->shards; s++) {
        db_replica_opts_t ro = {.cluster = c, .shard = s, .index = 0};
        if (!(self->replicas[s] = db_replica_new(&ro)))
            goto fail;
    }
    exec_node_endpoint(c, self->endpoint, sizeof self->endpoint);
    exec_node_opts_t no = {.cluster = c, .workers = cfg->workers,
                           .store_bytes = cfg->store_bytes, .resources = cfg->resources};
    if (!(self->node = exec_node_new(&no)))
        goto fail;
    return self;
fail:
    exec_head_stop(&self);
    return NULL;
}

void
exec_head_stop(exec_head_t **self_p)
{
    exec_head_t *self = *self_p;
    if (!self)
        return;
    zactor_destroy(&self->node); /* first: it drains its events into the log */
    for (uint32_t s = 0; s < DB_MAX_SHARDS; s++)
        zactor_destroy(&self->replicas[s]);
    zactor_destroy(&self->master);
    free(self);
    *self_p = NULL;
}

const char *
exec_head_endpoint(exec_head_t *self)
{
    return self->endpoint;
}

const db_cluster_t *
exec_head_cluster(exec_head_t *self)
{
    return &self->cluster;
}
