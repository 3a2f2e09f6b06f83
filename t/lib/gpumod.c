/*  gpumod - the module of t/6050-gpu-ids: tasks and an actor that say
    which GPUs they hold (lux_gpu_ids and CUDA_VISIBLE_DEVICES), and
    catch a GPU held twice: each holder makes DIR/gpu.ID exclusively while
    it holds GPU ID (DIR the cluster's directory), so a second holder of
    the same GPU at the same time fails naming it.

        g_hold(ms i64) -> "ids=2,5 cvd=2,5 pid=123": holds its GPUs ms ms
        GpuA() actor, method ids() -> the same, for its whole life
*/
#include "lux.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What the holder sees, as text into out. */
static void
s_seen(lux_t *lx, char *out, size_t n)
{
    int ids[64], k = lux_gpu_ids(lx, ids, 64);
    size_t at = (size_t) snprintf(out, n, "ids=");
    for (int i = 0; i < k && i < 64 && at < n; i++)
        at += (size_t) snprintf(out + at, n - at, "%s%d", i ? "," : "", ids[i]);
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (at < n)
        snprintf(out + at, n - at, " cvd=%s pid=%d", cvd ? cvd : "(unset)", (int) getpid());
}

/* Claim (1) or release (0) the marker files of the GPUs held: the id of
   one another holder has, or -1. */
static int
s_claim(lux_t *lx, int claim)
{
    int ids[64], k = lux_gpu_ids(lx, ids, 64);
    for (int i = 0; i < k && i < 64; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/gpu.%d", lux_dir(lx), ids[i]);
        if (!claim) {
            unlink(path);
            continue;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            return ids[i];
        if (fd >= 0)
            close(fd);
    }
    return -1;
}

static int
g_hold(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    int64_t ms;
    memcpy(&ms, argv[0].data, 8);
    int twice = s_claim(lx, 1);
    if (twice >= 0)
        return lux_raise(lx, "GPU %d is held by another task or actor too", twice);
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    char out[512];
    s_seen(lx, out, sizeof out);
    s_claim(lx, 0);
    return lux_set(lx, 0, out, strlen(out) + 1);
}
LUX_FUNCTION(g_hold, 1, 1)

typedef struct {
    char dir[1024];
    int ids[64], n;
} gpu_a_t;

static void *
gpua_new(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc, (void) argv;
    if (s_claim(lx, 1) >= 0)
        return NULL; /* the constructor fails: a GPU held twice */
    gpu_a_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    snprintf(a->dir, sizeof a->dir, "%s", lux_dir(lx));
    a->n = lux_gpu_ids(lx, a->ids, 64);
    return a;
}

static void
gpua_free(void *self)
{
    gpu_a_t *a = self;
    for (int i = 0; i < a->n && i < 64; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/gpu.%d", a->dir, a->ids[i]);
        unlink(path);
    }
    free(a);
}
LUX_ACTOR(GpuA, 0, gpua_new, gpua_free, NULL, NULL)

static int
GpuA_ids(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    (void) self, (void) argc, (void) argv;
    char out[512];
    s_seen(lx, out, sizeof out);
    return lux_set(lx, 0, out, strlen(out) + 1);
}
LUX_METHOD(GpuA, ids, 0, 1)
