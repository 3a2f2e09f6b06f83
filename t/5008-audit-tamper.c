/* 5008-audit-tamper: `lux audit` catches what an attacker who can write the
   replica files (but not read the signing key) can do to a log, and passes
   an untouched one. A 2-shard, 3-replica cluster takes appends, stops
   (a signed checkpoint per shard into DIR/witness), runs again, takes more,
   stops again; then each case below is made on a copy of the cluster and
   must fail the audit (exit 1) with a message naming the shard, the file
   and the seq:
     - the last event of shard 0 cut from every replica; the last five;
       every event of shard 0;
     - one replica (the tail, then a middle) cut short while others are whole;
     - a fork: one replica's event edited and every hash after it
       recomputed (db_event_chain), so that its own chain verifies;
     - the same forgery in every replica: only the signed checkpoint tells;
     - a replica file replaced by an older copy of itself;
     - a witness line edited (its signature no longer verifies).
   lux sql warns on stderr when the tail it reads ends before a checkpoint.
   And a third party with only the public key and the witness audits a
   copy holding no secret key (lux audit --public-key K --witness W). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/tamper.h"
#include "db/db_ckpt.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_fs.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static db_cluster_t s_c;
static char s_out[65536];

static void
s_append(int n)
{
    db_client_t *cl = fx_client(&s_c, 64, 1024);
    fx_notes_spread(cl, n, "an event to tamper with", 0);
    db_client_destroy(&cl);
}


/* lux audit of dir (extra options), expecting failure with every one of
   the fragments in its output. */
static void
s_caught(const char *what, const char *dir, const char *extra, const char *f1, const char *f2,
         const char *f3)
{
    int rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s %s", dir, extra ? extra : "");
    bool all = strstr(s_out, f1) && (!f2 || strstr(s_out, f2)) && (!f3 || strstr(s_out, f3));
    ok(rc == 1 && all, "%s: caught (exit %d), naming \"%s\"%s%s%s%s", what, rc, f1,
       f2 ? ", \"" : "", f2 ? f2 : "", f2 ? "\"" : "", f3 ? " and more" : "");
    if (rc != 1 || !all)
        diag("%s", s_out);
}

int
main(void)
{
    char dir[PATH_MAX], path[PATH_MAX], old[PATH_MAX], seq[64], frag[PATH_MAX + 64];
    fx_start(&s_c, 2, 3, "--log-only");
    s_append(600);
    fx_stop(&s_c);
    snprintf(old, sizeof old, "%s/older", tap_tmpdir());
    tamper_sh("cp -a '%s' '%s'", s_c.dir, old);
    if (fx_lux(NULL, 0, s_out, sizeof s_out, "start --head --dir %s --log-only", s_c.dir))
        bail("restart: %s", s_out);
    s_append(600);
    fx_stop(&s_c);

    /* the tail of each shard and the committed seq */
    db_chain_t chain[2];
    db_chain_load_state(&s_c, chain);
    uint32_t tail = chain[0].m[chain[0].n - 1].index, mid = chain[0].m[1].index;
    uint64_t last = tamper_last(tamper_db(s_c.dir, 0, tail, path, sizeof path));
    ok(last > 10, "shard 0 holds %llu events", (unsigned long long) last);
    char wit[PATH_MAX];
    char *wtext = util_read_file(db_ckpt_witness_path(&s_c, wit, sizeof wit), NULL);
    snprintf(seq, sizeof seq, " 0 %llu ", (unsigned long long) last);
    ok(wtext && strstr(wtext, seq), "the witness holds a checkpoint of shard 0 at seq %llu",
       (unsigned long long) last);
    free(wtext);

    char err[4096];
    fx_lux(NULL, 0, err, sizeof err, "sql --dir %s \"SELECT count(*) FROM event\"", s_c.dir);
    ok(!strstr(err, "warning"), "lux sql on the untouched log does not warn (%s)", err);
    int rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s", s_c.dir);
    ok(rc == 0 && strstr(s_out, "match every signed checkpoint"), "an untouched log passes (%d)",
       rc);
    if (rc)
        diag("%s", s_out);

    /* the end of the log cut from every replica */
    int cuts[] = {1, 5, -1};
    for (int k = 0; k < 3; k++) {
        uint64_t keep = cuts[k] < 0 ? 0 : last - (uint64_t) cuts[k];
        tamper_copy(s_c.dir, "cut", dir, sizeof dir);
        for (uint32_t r = 0; r < 3; r++)
            tamper_exec(tamper_db(dir, 0, r, path, sizeof path), "DELETE FROM event WHERE seq > %llu",
                   (unsigned long long) keep);
        snprintf(frag, sizeof frag, "shard 0: %s ends at seq %llu, before the signed checkpoint at"
                 " seq %llu", tamper_db(dir, 0, tail, path, sizeof path), (unsigned long long) keep,
                 (unsigned long long) last);
        char what[64];
        snprintf(what, sizeof what, cuts[k] < 0 ? "every event of shard 0 cut"
                                                : "the last %d event(s) of shard 0 cut", cuts[k]);
        s_caught(what, dir, NULL, frag, NULL, NULL);
        if (k == 0) {
            fx_lux(NULL, 0, err, sizeof err, "sql --dir %s \"SELECT count(*) FROM event\"", dir);
            snprintf(frag, sizeof frag, "shard 0: the tail's file (replica %u) ends at seq %llu,"
                     " before the signed checkpoint at seq %llu", tail, (unsigned long long) keep,
                     (unsigned long long) last);
            ok(strstr(err, "warning") && strstr(err, frag),
               "lux sql on the cut log warns on stderr: %s", err);
        }
    }

    /* one replica cut short, the others whole */
    uint32_t who[2] = {tail, mid};
    for (int k = 0; k < 2; k++) {
        uint64_t keep = last - 7;
        tamper_copy(s_c.dir, "short", dir, sizeof dir);
        tamper_exec(tamper_db(dir, 0, who[k], path, sizeof path), "DELETE FROM event WHERE seq > %llu",
               (unsigned long long) keep);
        snprintf(frag, sizeof frag, "shard 0: %s", path);
        snprintf(seq, sizeof seq, "ends at seq %llu", (unsigned long long) keep);
        s_caught(k ? "a middle replica cut short" : "the tail cut short", dir, NULL, frag, seq,
                 NULL);
    }

    /* a fork: one replica forged so that it verifies on its own */
    uint64_t at = last / 2;
    tamper_copy(s_c.dir, "fork", dir, sizeof dir);
    tamper_forge(tamper_db(dir, 0, mid, path, sizeof path), &s_c.id, 0, tamper_edit_ts, &at);
    snprintf(frag, sizeof frag, "shard 0: %s forks from", path);
    snprintf(seq, sizeof seq, "at seq %llu:", (unsigned long long) at);
    s_caught("one replica forked (an event edited, every hash after it recomputed)", dir, NULL,
             frag, seq, NULL);

    /* the same forgery in every replica: the replicas agree, the key does not */
    tamper_copy(s_c.dir, "forged", dir, sizeof dir);
    for (uint32_t r = 0; r < 3; r++)
        tamper_forge(tamper_db(dir, 0, r, path, sizeof path), &s_c.id, 0, tamper_edit_ts, &at);
    snprintf(frag, sizeof frag, "shard 0: %s: the hash at seq",
             tamper_db(dir, 0, tail, path, sizeof path));
    s_caught("every replica forged alike (hashes recomputed)", dir, NULL, frag,
             "is not the signed one", NULL);

    /* a replica file replaced by an older copy of itself */
    tamper_copy(s_c.dir, "older-copy", dir, sizeof dir);
    tamper_db(dir, 0, mid, path, sizeof path);
    char src[PATH_MAX];
    tamper_sh("rm -f '%s' '%s-wal' '%s-shm' && cp '%s' '%s'", path, path, path,
         tamper_db(old, 0, mid, src, sizeof src), path);
    snprintf(frag, sizeof frag, "shard 0: %s", path);
    snprintf(seq, sizeof seq, "ends at seq %llu", (unsigned long long) tamper_last(path));
    s_caught("a replica file replaced by an older copy", dir, NULL, frag, seq, NULL);

    /* a witness line edited: its signature fails */
    tamper_copy(s_c.dir, "witness", dir, sizeof dir);
    tamper_sh("sed -i '1s/ 0 \\([0-9]*\\) / 0 1\\1 /' '%s/witness'", dir);
    s_caught("a witness line edited", dir, NULL, "line 1: shard 0 seq 1", "bad signature", NULL);

    /* a third party: the public key and the witness, no secret key */
    char pub[PATH_MAX], w2[PATH_MAX];
    tamper_copy(s_c.dir, "third", dir, sizeof dir);
    snprintf(pub, sizeof pub, "%s/pub.key", tap_tmpdir());
    snprintf(w2, sizeof w2, "%s/witness.copy", tap_tmpdir());
    tamper_sh("mv '%s/keys/checkpoint.public' '%s' && mv '%s/witness' '%s' && rm -f"
         " '%s/keys/checkpoint.secret'", dir, pub, dir, w2, dir);
    char opts[2 * PATH_MAX + 64];
    snprintf(opts, sizeof opts, "--public-key %s --witness %s", pub, w2);
    rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s %s", dir, opts);
    ok(rc == 0 && strstr(s_out, "match every signed checkpoint"),
       "a third party with the public key and the witness: the untouched copy passes (%d)", rc);
    if (rc)
        diag("%s", s_out);
    tamper_exec(tamper_db(dir, 0, tail, path, sizeof path), "DELETE FROM event WHERE seq > %llu",
           (unsigned long long) last - 1);
    snprintf(frag, sizeof frag, "shard 0: %s ends at seq %llu, before the signed checkpoint",
             path, (unsigned long long) last - 1);
    s_caught("a third party catches the tail cut", dir, opts, frag, NULL, NULL);
    return done_testing();
}
