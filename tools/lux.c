/*  lux - the command: start, stop and inspect log clusters, query the log,
    audit it, and run benchmarks. See lux(1). */
#include "lux_cmd.h"
#include "lux_node.h"
#include "lux.h"
#include "util/util_log.h"
#include "util/util_proc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help; /* NULL: internal, not listed */
} s_cmd_t;

static const s_cmd_t s_cmds[] = {
    {"start", cmd_start, "start a cluster's head, or a node that joins one (--address)"},
    {"stop", cmd_stop, "stop a cluster's head or node cleanly"},
    {"status", cmd_status, "list components, shards, replicas and nodes"},
    {"sql", cmd_sql, "query the log of all shards, read-only"},
    {"audit", cmd_audit, "verify the hash chain of every replica's log"},
    {"pull", cmd_pull, "copy a cluster's log into one local SQLite file, verified"},
    {"compact", cmd_compact, "move old events into each shard's archive, chain kept"},
    {"timeline", cmd_timeline, "write a run's tasks as a Chrome/Perfetto trace"},
    {"replay", cmd_replay, "run a recorded job again and verify its outputs"},
    {"lineage", cmd_lineage, "an object's lineage graph: text, graphviz or SVG"},
    {"run", cmd_run, "run a module's entry point as the driver"},
    {"bench", cmd_bench, "run benchmarks"},
    {"worker", cmd_worker, NULL},
    {"bench-client", cmd_bench_client, NULL},
    {"supervise", cmd_supervise, NULL},
    {"replica", cmd_replica, NULL},
    {"node", cmd_node, NULL},
};

static void
s_usage(FILE *f)
{
    fprintf(f, "usage: lux COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof s_cmds / sizeof s_cmds[0]; i++)
        if (s_cmds[i].help)
            fprintf(f, "  %-10s %s\n", s_cmds[i].name, s_cmds[i].help);
    fprintf(f, "\n`lux COMMAND --help` for a command's options; lux(1) for the details.\n"
               "Set LUX_LOG=info (or debug) for more output.\n");
}

int
lux_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lux %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 1;
}

int
lux_usage(const char *cmd, const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lux %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nusage: %s\n", usage);
    va_end(ap);
    return 2;
}

void
lux_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

bool
lux_parse_uint(const char *cmd, const char *opt, const char *s, unsigned long max,
               unsigned long *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v == 0 || v > max) {
        fprintf(stderr, "lux %s: %s must be a number from 1 to %lu, not '%s'\n", cmd, opt, max, s);
        return false;
    }
    *out = v;
    return true;
}

int
main(int argc, char **argv)
{
    util_log_init(UTIL_LOG_WARN);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        s_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("lux %d.%d.%d\n", LUX_VERSION_MAJOR, LUX_VERSION_MINOR, LUX_VERSION_PATCH);
        return 0;
    }
    for (size_t i = 0; i < sizeof s_cmds / sizeof s_cmds[0]; i++)
        if (strcmp(argv[1], s_cmds[i].name) == 0) {
            /* before any socket: ZeroMQ aborts when one finds no descriptor */
            if (util_fd_limit(UTIL_FD_NEED)) {
                fprintf(stderr, "lux %s: %s\n", argv[1], lux_errmsg());
                return 1;
            }
            return s_cmds[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "lux: unknown command '%s'\n\n", argv[1]);
    s_usage(stderr);
    return 2;
}
