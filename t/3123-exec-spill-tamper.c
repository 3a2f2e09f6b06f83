/* 3123-exec-spill-tamper: a spilled put whose file is replaced by another
   valid LZ4 frame of the same size (another value of the same length,
   checksum and all) is not handed out as the object. The node checks the
   object's fingerprint when it brings the bytes back: lux_get fails naming
   the object and why, a task given the object as an argument fails
   without running on the other bytes, and objects left alone still come
   back right. */
#include "tap.h"
#include "lib/graph.h"
#include "exec/exec_spill.h"
#include "util/util_err.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define S_SIZE ((size_t) 3 << 20)
#define S_PUTS 8

static void
s_pattern(uint8_t *p, int64_t seed, size_t n)
{
    memcpy(p, &seed, 8);
    for (size_t i = 8; i < n; i++)
        p[i] = (uint8_t) (seed * 31 + (int64_t) i);
}

/* Wait (up to 120 s) until the file done has a line that is line: the
   spill writer handed that write over to the node (exec_test_gate_passed).
   The file itself appears a moment before, when the writer renames it:
   a get in that moment brought the object back from the node's copy on
   the heap, which is right but is not what this test checks. */
static bool
s_wait_handed(const char *done, const char *line)
{
    char buf[512];
    for (int i = 0; i < 1200; i++) {
        FILE *f = fopen(done, "r");
        bool found = false;
        while (f && !found && fgets(buf, sizeof buf, f)) {
            buf[strcspn(buf, "\n")] = '\0';
            found = strcmp(buf, line) == 0;
        }
        if (f)
            fclose(f);
        if (found)
            return true;
        nanosleep(&(struct timespec) {0, 100000000}, NULL);
    }
    return false;
}

int
main(void)
{
    char gate[PATH_MAX], done[PATH_MAX + 8];
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    snprintf(done, sizeof done, "%s.done", gate);
    FILE *g = fopen(gate, "w"); /* open: the hook holds no write, it only tells */
    if (!g)
        bail("cannot create %s", gate);
    fclose(g);
    setenv("LUX_TEST_SPILL_GATE", gate, 1);
    lux_t *lx = graph_embedded(2, 16 << 20, "start the embedded default with a 16 MB object store");
    uint8_t *buf = malloc(S_SIZE);
    lux_ref_t refs[S_PUTS];
    int bad = 0;
    for (int i = 0; i < S_PUTS; i++) {
        s_pattern(buf, 100 + i, S_SIZE);
        bad += lux_put(lx, buf, S_SIZE, &refs[i]) != 0;
    }
    is_int(bad, 0, "put %d objects of 3 MB: more than the store holds", S_PUTS);

    /* the two oldest were spilled to make room */
    char path[2][PATH_MAX + 64], hex[LUX_REF_LEN * 2 + 1];
    for (int k = 0; k < 2; k++)
        snprintf(path[k], sizeof path[k], "%s/spill/%s.lz4", lux_dir(lx),
                 lux_ref_hex(&refs[k], hex));
    ok(s_wait_handed(done, path[0]) && s_wait_handed(done, path[1]),
       "the first two were spilled to disk, their writes handed over to the node");

    /* each replaced by a valid frame of another value of the same size */
    char tmp[PATH_MAX + 80];
    for (int k = 0; k < 2; k++) {
        s_pattern(buf, 900 + k, S_SIZE);
        snprintf(tmp, sizeof tmp, "%s.other", path[k]);
        int rc = exec_spill_write(tmp, buf, S_SIZE);
        is_int(rc == 0 && rename(tmp, path[k]) == 0 ? 0 : -1, 0,
               "replace spill file %d with another value's frame of the same size", k);
    }

    lux_val_t v;
    int rc = lux_get(lx, &refs[0], &v, 60000);
    ok(rc != 0, "lux_get of the first does not return the other value (rc %d)", rc);
    ok(strstr(lux_errmsg(), "fingerprint") != NULL,
       "it says the spilled copy does not match the object's fingerprint: %s", lux_errmsg());
    rc = lux_get(lx, &refs[0], &v, 60000);
    ok(rc != 0, "and says so again when asked again");

    /* the second as a task's argument: t_check reads the seed and every byte */
    lux_ref_t out;
    rc = lux_call(lx, "t_check", 1, (lux_arg_t[]) {LUX_REF(refs[1])}, 1, &out);
    is_int(rc, 0, "call t_check on the second");
    rc = lux_get(lx, &out, &v, 60000);
    int64_t got = -1;
    if (!rc && v.size == 8)
        memcpy(&got, v.data, 8);
    ok(rc != 0, "the task does not run on the other value (rc %d, result %lld; "
       "the other value's would be %lld)", rc, (long long) got,
       (long long) ((901 + (int64_t) S_SIZE) % 1000003));
    ok(strstr(lux_errmsg(), "fingerprint") != NULL, "its error names the cause: %s",
       lux_errmsg());

    /* the others are intact */
    int wrong = 0;
    for (int i = 2; i < S_PUTS; i++) {
        lux_val_t w;
        if (lux_get(lx, &refs[i], &w, 60000) || w.size != S_SIZE) {
            diag("object %d: %s", i, lux_errmsg());
            wrong++;
            continue;
        }
        s_pattern(buf, 100 + i, S_SIZE);
        wrong += memcmp(w.data, buf, S_SIZE) != 0;
        lux_free(lx, 1, &refs[i]);
    }
    is_int(wrong, 0, "the other %d objects come back right", S_PUTS - 2);
    free(buf);
    lux_shutdown(&lx);
    return done_testing();
}
