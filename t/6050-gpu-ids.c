/* 6050-gpu-ids: a task or actor given GPUs gets the ids of those it holds
   (lux_gpu_ids, and CUDA_VISIBLE_DEVICES set to them), and two holders
   never share one. Four fake GPUs with ids 2,3,5,7 (LUX_FAKE_GPUS, the
   stand-in for a machine's devices) on the embedded default; every
   holder of a GPU makes DIR/gpu.ID exclusively while it holds it, so a
   GPU handed out twice at the same time fails a task (t/lib/gpumod.c).
   A task without GPUs sees none (CUDA_VISIBLE_DEVICES ""), GPU=0.5 holds
   one whole GPU, an actor keeps its GPU for its life and tasks get the
   others meanwhile, and a pool worker that ran a GPU task is not reused
   (CUDA reads CUDA_VISIBLE_DEVICES once per process). */
#include "tap.h"

#include "lux.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT 12

static char s_mod[PATH_MAX];

/* g_hold(ms) with resources res: its ref. */
static lux_ref_t
s_hold(lux_t *lx, const char *res, int64_t ms)
{
    lux_ref_t r;
    memset(&r, 0, sizeof r);
    lux_opts_t o = {.resources = res};
    if (lux_call_opts(lx, &o, "g_hold", 1, (lux_arg_t[]) {LUX_VAL(&ms, 8)}, 1, &r))
        diag("g_hold: %s", lux_errmsg());
    return r;
}

/* The text a holder returned, into out ("" and a diagnostic on error). */
static void
s_text(lux_t *lx, const lux_ref_t *r, char *out, size_t n)
{
    lux_val_t v;
    out[0] = '\0';
    if (lux_get(lx, r, &v, 60000)) {
        diag("get: %s", lux_errmsg());
        return;
    }
    snprintf(out, n, "%.*s", (int) v.size, (const char *) v.data);
    lux_free(lx, 1, r);
}

/* Parse "ids=A,B cvd=C pid=P": ids into ids (count returned), cvd, pid. */
static int
s_parse(const char *text, int *ids, char *cvd, size_t ncvd, long *pid)
{
    int n = 0;
    const char *p = strstr(text, "ids=");
    const char *c = strstr(text, " cvd=");
    const char *q = strstr(text, " pid=");
    if (!p || !c || !q)
        return -1;
    for (p += 4; p < c && n < 64;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        ids[n++] = (int) v;
        p = *end == ',' ? end + 1 : end;
    }
    snprintf(cvd, ncvd, "%.*s", (int) (q - c - 5), c + 5);
    *pid = strtol(q + 5, NULL, 10);
    return n;
}

static bool
s_is_fake(int id)
{
    return id == 2 || id == 3 || id == 5 || id == 7;
}

int
main(void)
{
    const char *b = getenv("LUX_BUILDDIR");
    snprintf(s_mod, sizeof s_mod, "%s/t/lib/.libs/gpumod.so", b && *b ? b : ".");
    setenv("LUX_FAKE_GPUS", "2,3,5,7", 1);
    lux_config_t cfg = {.module = s_mod, .dir = tap_tmpdir(), .store_bytes = 32 << 20,
                        .workers = 6, .resources = "CPU=6"};
    lux_t *lx = lux_init(&cfg);
    ok(lx != NULL, "the embedded default starts with four fake GPUs");
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    char text[512], cvd[512];
    int ids[64];
    long pid;

    /* --- a task without GPUs ------------------------------------------------------------ */
    lux_ref_t r0 = s_hold(lx, NULL, 0);
    s_text(lx, &r0, text, sizeof text);
    int n = s_parse(text, ids, cvd, sizeof cvd, &pid);
    is_int(n, 0, "a task that asks for no GPU holds none (%s)", text);
    is_str(cvd, "", "... and sees none: CUDA_VISIBLE_DEVICES is empty");
    is_int(lux_gpu_ids(lx, ids, 64), 0, "lux_gpu_ids outside a task: 0");

    /* --- an actor holds one for its life ------------------------------------------------- */
    lux_actor_t a;
    lux_actor_opts_t ao = {.resources = "GPU=1"};
    ok(lux_actor_create(lx, "GpuA", 0, NULL, &ao, &a) == 0, "an actor with GPU=1");
    lux_ref_t ra;
    lux_actor_call(lx, &a, "ids", 0, NULL, 1, &ra);
    s_text(lx, &ra, text, sizeof text);
    n = s_parse(text, ids, cvd, sizeof cvd, &pid);
    int actor_gpu = n == 1 ? ids[0] : -1;
    ok(n == 1 && s_is_fake(actor_gpu), "the actor holds one of the four (%s)", text);
    char want[32];
    snprintf(want, sizeof want, "%d", actor_gpu);
    is_str(cvd, want, "its CUDA_VISIBLE_DEVICES names it");
    lux_actor_call(lx, &a, "ids", 0, NULL, 1, &ra);
    s_text(lx, &ra, text, sizeof text);
    n = s_parse(text, ids, cvd, sizeof cvd, &pid);
    ok(n == 1 && ids[0] == actor_gpu, "a later call: the same GPU (%s)", text);

    /* --- tasks share the other three, never one at a time ---------------------------------- */
    lux_ref_t rt[NT];
    for (int i = 0; i < NT; i++)
        rt[i] = s_hold(lx, "GPU=1", 150);
    int good = 0, wrong_cvd = 0, on_actor = 0;
    long pids[NT];
    for (int i = 0; i < NT; i++) {
        s_text(lx, &rt[i], text, sizeof text);
        n = s_parse(text, ids, cvd, sizeof cvd, &pids[i]);
        if (n != 1 || !s_is_fake(ids[0])) {
            diag("task %d: %s", i, text[0] ? text : "failed");
            continue;
        }
        good++;
        snprintf(want, sizeof want, "%d", ids[0]);
        wrong_cvd += strcmp(cvd, want) != 0;
        on_actor += ids[0] == actor_gpu;
    }
    is_int(good, NT, "%d tasks with GPU=1 on three free GPUs: each held one, none held twice",
           NT);
    is_int(wrong_cvd, 0, "each one's CUDA_VISIBLE_DEVICES names its GPU");
    is_int(on_actor, 0, "none got the actor's GPU");
    int reused = 0;
    for (int i = 0; i < NT; i++)
        for (int j = i + 1; j < NT; j++)
            reused += pids[i] == pids[j];
    is_int(reused, 0, "no worker ran two GPU tasks (each leaves after its GPU task)");

    /* --- several GPUs, and a fraction of one ---------------------------------------------- */
    lux_ref_t r2[3];
    for (int i = 0; i < 3; i++)
        r2[i] = s_hold(lx, "GPU=2", 100);
    int two = 0;
    for (int i = 0; i < 3; i++) {
        s_text(lx, &r2[i], text, sizeof text);
        n = s_parse(text, ids, cvd, sizeof cvd, &pid);
        char w2[32];
        if (n == 2)
            snprintf(w2, sizeof w2, "%d,%d", ids[0], ids[1]);
        if (n == 2 && ids[0] != ids[1] && s_is_fake(ids[0]) && s_is_fake(ids[1]) &&
            ids[0] != actor_gpu && ids[1] != actor_gpu && strcmp(cvd, w2) == 0)
            two++;
        else
            diag("GPU=2 task %d: %s", i, text[0] ? text : "failed");
    }
    is_int(two, 3, "tasks with GPU=2 hold two distinct GPUs, named in CUDA_VISIBLE_DEVICES");
    lux_ref_t rh = s_hold(lx, "GPU=0.5", 0);
    s_text(lx, &rh, text, sizeof text);
    n = s_parse(text, ids, cvd, sizeof cvd, &pid);
    ok(n == 1 && s_is_fake(ids[0]), "GPU=0.5 holds one whole GPU (%s)", text);
    lux_ref_t r5 = s_hold(lx, "GPU=5", 0);
    lux_val_t v;
    int rc = lux_get(lx, &r5, &v, 60000);
    ok(rc == LUX_ETASK && strstr(lux_errmsg(), "GPU=5"), "GPU=5 on a node of four fails: %s",
       lux_errmsg());

    /* --- the actor's GPU comes back when it goes ------------------------------------------- */
    ok(lux_actor_kill(lx, &a) == 0, "kill the actor");
    /* its process was killed: its marker stays, the GPU comes back */
    char mark[PATH_MAX + 32];
    snprintf(mark, sizeof mark, "%s/gpu.%d", lux_dir(lx), actor_gpu);
    unlink(mark);
    lux_ref_t r4 = s_hold(lx, "GPU=4", 0);
    s_text(lx, &r4, text, sizeof text);
    n = s_parse(text, ids, cvd, sizeof cvd, &pid);
    is_str(cvd, "2,3,5,7", "then a task with GPU=4 holds all four (%s)", text);

    lux_shutdown(&lx);
    return done_testing();
}
