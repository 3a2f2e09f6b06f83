/* 3135-spill-off-loop: the node manager goes on answering while a put is
   spilled to disk (issue 24, item 2: spills off the node's loop).

   A spill (lz4, write, fsync of the whole object) is written on the node
   manager's loop: a 1 GiB spill stalls the heartbeats and every client
   for seconds. The write is held in progress here on purpose, with no
   clock: the test hook LUX_TEST_SPILL_GATE=PATH makes a spill's write
   create PATH.waiting and then wait until PATH exists.

   A 16 MiB store holds an unread put A of 10 MiB and a put C of 1 MiB; a
   task asks for 8 MiB, so A is spilled to make room, and its write is
   held. Meanwhile the driver reads C, which is in the store: that needs
   only the node's loop (while spills were written on the loop, that read
   ran into its 30 s timeout). The task's output and A itself (from the
   node's copy of it, the write still held) are read too. Then the gate
   opens.

   A second node: the same, but A is freed while its write is held; the
   file written after the free must be removed (a spilled put freed is
   not left on disk). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "util/util_fs.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB (1024 * 1024)

/* a put of n bytes of t_big's pattern for seed */
static int
s_put(lux_t *lx, int64_t seed, size_t n, lux_ref_t *ref)
{
    uint8_t *p = malloc(n);
    if (!p)
        return LUX_ENOMEM;
    memcpy(p, &seed, 8);
    for (size_t i = 8; i < n; i++)
        p[i] = (uint8_t) (seed * 31 + (int64_t) i);
    int rc = lux_put(lx, p, n, ref);
    free(p);
    return rc;
}

/* The spill files (*.lz4, *.tmp) in dir: -1 when it cannot be read. */
static int
s_spill_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, ".lz4") != NULL;
    closedir(d);
    return n;
}

int
main(void)
{
    char cfg_dir[PATH_MAX];
    char gate[PATH_MAX], waiting[PATH_MAX + 16];
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    snprintf(waiting, sizeof waiting, "%s.waiting", gate);
    setenv("LUX_TEST_SPILL_GATE", gate, 1);
    setenv("LUX_LOG", "error", 0);
    lux_t *lx = graph_unrecorded(NULL, 1, 16 * MB);

    lux_ref_t a, c, out;
    int rc = s_put(lx, 11, 10 * MB, &a);
    rc = rc ? rc : s_put(lx, 12, 1 * MB, &c);
    ok(rc == 0, "an unread put A of 10 MiB and a put C of 1 MiB in a 16 MiB store (%s)",
       rc ? lux_errmsg() : "ok");

    int64_t seed = 13, n = 8 * MB;
    int ready = 0;
    rc = lux_call(lx, "t_big", 2, (lux_arg_t[]) {LUX_VAL(&seed, 8), LUX_VAL(&n, 8)}, 1, &out);
    if (!rc)
        lux_wait(lx, 1, &out, 1, 0, &ready); /* the call goes to the node now */
    ok(rc == 0 && fx_wait_file(waiting, 120000),
       "a task asks for 8 MiB: A is spilled to make room, its write begun and held (%s)",
       rc ? lux_errmsg() : waiting);

    /* the node answers while the spill is held */
    lux_val_t v;
    rc = lux_get(lx, &c, &v, 30000);
    ok(rc == 0 && graph_big_ok(&v, 12, 1 * MB),
       "C, in the store, is read while A's spill is written (rc %d: %s)", rc,
       rc ? lux_errmsg() : "ok");
    rc = lux_get(lx, &out, &v, 30000);
    ok(rc == 0 && graph_big_ok(&v, seed, n), "the task's 8 MiB output, in the room A left, "
       "while A's spill is written (%s)", rc ? lux_errmsg() : "ok");
    rc = lux_get(lx, &a, &v, 30000);
    ok(rc == 0 && graph_big_ok(&v, 11, 10 * MB) && access(gate, F_OK) != 0,
       "A itself, brought back while its spill is still held, has its bytes (%s)",
       rc ? lux_errmsg() : "ok");

    util_write_file(gate, "", 0, 0600); /* the spill goes on */
    lux_shutdown(&lx);

    /* a spilled put freed while its write is held */
    char spill[PATH_MAX + 16], done[PATH_MAX + 16], apath[PATH_MAX + 64], hex[LUX_REF_LEN * 2 + 1];
    snprintf(cfg_dir, sizeof cfg_dir, "%s/n2", tap_tmpdir());
    snprintf(done, sizeof done, "%s.done", gate);
    mkdir(cfg_dir, 0700);
    unlink(gate);
    unlink(waiting);
    unlink(done);
    lx = graph_unrecorded(cfg_dir, 1, 16 * MB);
    rc = s_put(lx, 21, 10 * MB, &a);
    rc = rc ? rc : s_put(lx, 22, 1 * MB, &c);
    rc = rc ? rc : lux_call(lx, "t_big", 2, (lux_arg_t[]) {LUX_VAL(&seed, 8), LUX_VAL(&n, 8)}, 1,
                            &out);
    if (!rc)
        lux_wait(lx, 1, &out, 1, 0, &ready);
    ok(rc == 0 && fx_wait_file(waiting, 120000),
       "a second node: A spilled to make room for a task's output, its write held (%s)",
       rc ? lux_errmsg() : waiting);
    lux_free(lx, 1, &a);
    rc = lux_get(lx, &out, &v, 30000);
    ok(rc == 0 && graph_big_ok(&v, seed, n), "A is freed and the task's output read, the "
       "write still held (%s)", rc ? lux_errmsg() : "ok");
    util_write_file(gate, "", 0, 0600);
    snprintf(spill, sizeof spill, "%s/spill", lux_dir(lx));
    snprintf(apath, sizeof apath, "%s/%s.lz4", spill, lux_ref_hex(&a, hex));
    /* the write ends and is handed over to the node (PATH.done names it,
       exec_test_gate_passed): only then may its file be removed; looked
       at before, no file was there yet, and the check could not fail */
    char line[PATH_MAX + 64] = "";
    bool handed = false;
    for (int i = 0; i < 12000 && !handed; i++) {
        FILE *f = fopen(done, "r");
        while (f && !handed && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            handed = strcmp(line, apath) == 0;
        }
        if (f)
            fclose(f);
        if (!handed)
            usleep(10000);
    }
    int files = -1;
    for (int i = 0; handed && i < 12000 && (files = s_spill_files(spill)) != 0; i++)
        usleep(10000);
    ok(handed && files == 0, "the file written after the free is removed once its write is "
       "handed over: %d left in %s%s", files, spill, handed ? "" : " (never handed over)");
    lux_shutdown(&lx);
    return done_testing();
}
