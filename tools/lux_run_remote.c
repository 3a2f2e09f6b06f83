/*  lux_run_remote - `lux run --address HOST:PORT`: a driver on any machine,
    in the cluster or outside it (doc/DESIGN.md 7.5).

    A driver maps its node's store (puts and gets are shared memory), so a
    driver on a machine without a node brings one: this process starts a
    node of its own that joins the cluster at HOST:PORT with the cluster's
    token (`lux start --address HOST:PORT --token-file F`, CURVE like every
    node; a missing or wrong token is refused by the join, with its
    reason), without CPUs (CPU=0: the driver's tasks go to the cluster's
    nodes through the global scheduler), connects to it as any driver
    does, and stops it (node_left) when the driver ends. Its directory is
    a private temporary one, removed after a clean stop. A driver killed
    (SIGKILL: no stop) leaves its node behind no longer: the node is told
    the driver's pid and start time (LUX_NODE_OWNER_PID=PID:START) and
    leaves the cluster when that process is gone, its pid free or reused
    by another process (lux_node.c).
*/
#include "lux_cmd.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Whether address is HOST:PORT (a cluster to join), not a directory. */
bool
lux_run_is_remote(const char *address)
{
    const char *c = address ? strrchr(address, ':') : NULL;
    if (!c || !c[1] || strchr(address, '/'))
        return false;
    for (const char *p = c + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

/* Run `lux ARGV...` (this executable), its output into log; its exit status
   (or -1 with the message). */
static int
s_lux(char *const argv[], const char *log)
{
    char exe[PATH_MAX];
    if (util_self_exe(exe, sizeof exe))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return util_err(LUX_EIO, "fork: %s", strerror(errno)), -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(exe, argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return util_err(LUX_EIO, "waitpid: %s", strerror(errno)), -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int
lux_run_node_up(const char *address, const char *token, const char *node_ip, char *dir,
                size_t n)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, n, "%s/lux-driver-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return util_err(LUX_EIO, "cannot make a directory for the driver's node (%s): %s", dir,
                        strerror(errno));
    char node_dir[PATH_MAX], log[PATH_MAX + 16];
    snprintf(node_dir, sizeof node_dir, "%s/node", dir);
    snprintf(log, sizeof log, "%s/start.out", dir);
    char *argv[16];
    int k = 0;
    argv[k++] = "lux";
    argv[k++] = "start";
    argv[k++] = "--address";
    argv[k++] = (char *) address;
    argv[k++] = "--dir";
    argv[k++] = node_dir;
    argv[k++] = "--workers";
    argv[k++] = "1";
    argv[k++] = "--resources";
    argv[k++] = "CPU=0";
    if (token) {
        argv[k++] = "--token-file";
        argv[k++] = (char *) token;
    }
    if (node_ip) {
        argv[k++] = "--node-ip";
        argv[k++] = (char *) node_ip;
    }
    argv[k] = NULL;
    /* the node leaves when this process ends without stopping it (lux_node.c) */
    char owner[48];
    snprintf(owner, sizeof owner, "%d:%llu", (int) getpid(),
             (unsigned long long) util_proc_start(getpid()));
    setenv("LUX_NODE_OWNER_PID", owner, 1);
    int rc = s_lux(argv, log);
    unsetenv("LUX_NODE_OWNER_PID");
    if (rc == 0) {
        snprintf(dir + strlen(dir), n - strlen(dir), "/node");
        return 0;
    }
    /* its own words say why (a refused token, no head there) */
    size_t len = 0;
    char *out = util_read_file(log, &len);
    char why[1200] = "";
    if (out) {
        snprintf(why, sizeof why, "%s", out);
        for (char *p = why + strlen(why); p > why && (p[-1] == '\n' || p[-1] == ' ');)
            *--p = '\0';
    }
    free(out);
    unlink(log);
    rmdir(node_dir);
    rmdir(dir);
    return util_err(strstr(why, "token") || strstr(why, "key") ? LUX_EAUTH : LUX_EIO,
                    "the driver's node could not join the cluster at %s: %s", address,
                    why[0] ? why : "lux start failed");
}

void
lux_run_node_down(const char *node_dir)
{
    char *argv[] = {"lux", "stop", "--dir", (char *) node_dir, NULL};
    char log[PATH_MAX + 16], parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", node_dir);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = '\0';
    snprintf(log, sizeof log, "%s/stop.out", parent);
    if (s_lux(argv, log) != 0) {
        fprintf(stderr, "lux run: stopping the driver's node in %s failed (see %s)\n", node_dir,
                log);
        return;
    }
    char *rm[] = {"rm", "-rf", parent, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execvp("rm", rm);
        _exit(127);
    }
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
}
