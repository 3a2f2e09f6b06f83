/* 5018-audit-keys: `lux audit` checks a log signed with more than one key
   (issue 26): after the cluster's signing key is rotated, the checkpoints
   signed before carry the old key's signatures, and an audit that took
   one public key failed every one of them.

   A cluster can rotate its key today by hand: stop it, remove
   keys/checkpoint.secret, start it again; the supervisor makes a new pair
   (db_ckpt_keygen), and keys/checkpoint.history keeps every public key.
   The test signs checkpoints with key 1, rotates, signs more with key 2,
   stops, and audits:
     - with key 2 alone: refused, naming the seq of a checkpoint event
       signed with key 1 (what the single-key audit did to every rotated
       log);
     - with --public-key given twice (key 1, key 2): passes;
     - with no key given: the cluster's history, both keys: passes;
     - with key 1 and a key the cluster never used: refused, naming the
       seq of a checkpoint event signed with key 2;
     - a key file that holds no key: exit 1 naming the file;
     - lux pull verifies the witness with the history, and the pulled
       file audits with both keys, not with key 2 alone;
     - lux pull with --public-key given twice verifies the witness (it
       kept only the last file given: refused), with key 2 alone it is
       refused naming the witness and seq. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/tamper.h"
#include "db/db_ckpt.h"
#include "db/db_client.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OPTS "--log-only --checkpoint-events 40 --checkpoint-s 0"

static db_cluster_t s_c;
static char s_out[65536];
static uint64_t s_count;

/* Append until the replica file holds a checkpoint event signing past
   seq `after`; its seq in *at. */
static void
s_sign_past(uint64_t after, uint64_t *at)
{
    char path[PATH_MAX];
    uint64_t signs = 0;
    db_client_opts_t co = {.cluster = &s_c, .batch = 32};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    tamper_db(s_c.dir, 0, 0, path, sizeof path);
    for (int64_t t0 = util_mono_ms();;) {
        fx_append_notes(cl, NULL, 50, &s_count);
        if (db_client_sync(cl, 60000))
            bail("sync: %s", lux_errmsg());
        if (tamper_newest_ckpt(path, at, &signs) && signs > after)
            break;
        if (util_mono_ms() - t0 > 60000)
            bail("no checkpoint event signing past seq %llu after 60 s of appends",
                 (unsigned long long) after);
        usleep(200000);
    }
    db_client_destroy(&cl);
}

static void
s_start(void)
{
    char err[4096];
    int rc = fx_lux(NULL, 0, err, sizeof err,
                    "start --head --dir %s " OPTS, s_c.dir);
    if (rc)
        bail("lux start (again) failed (%d): %s", rc, err);
}

/* lux audit --dir with extra options: its exit status, the output in s_out */
static int
s_audit(const char *extra)
{
    int rc = fx_lux(s_out, sizeof s_out, s_out + 32768, 32768, "audit --dir %s %s", s_c.dir,
                    extra);
    s_out[32767] = 0;
    if (tap_verbose())
        diag("audit %s: exit %d:\n%s%s", extra, rc, s_out, s_out + 32768);
    return rc;
}

int
main(void)
{
    char k1[PATH_MAX], k2[PATH_MAX], k3[PATH_MAX], sk3[PATH_MAX], bad[PATH_MAX];
    char pk[PATH_MAX], sk[PATH_MAX], hist[PATH_MAX], opt[4 * PATH_MAX], frag[128];
    uint64_t at1 = 0, at2 = 0;

    fx_start(&s_c, 1, 1, OPTS);
    db_ckpt_public_path(&s_c, pk, sizeof pk);
    db_ckpt_secret_path(&s_c, sk, sizeof sk);
    db_ckpt_history_path(&s_c, hist, sizeof hist);
    s_sign_past(0, &at1);
    fx_stop(&s_c);
    /* key 1 may have signed more than one event by then (the loop sees a
       checkpoint event only after another batch of appends, which at a
       high load can bring the next one): key 1's last is the one that
       key 2's must follow */
    {
        char path[PATH_MAX];
        uint64_t signs = 0;
        tamper_db(s_c.dir, 0, 0, path, sizeof path);
        if (!tamper_newest_ckpt(path, &at1, &signs))
            bail("no checkpoint event in %s after the first run", path);
    }
    snprintf(k1, sizeof k1, "%s/key1.public", tap_tmpdir());
    tamper_sh("cp '%s' '%s'", pk, k1);
    diag("key 1 signed the checkpoint event at seq %llu", (unsigned long long) at1);

    /* the rotation: a start without the secret makes a new pair */
    if (unlink(sk))
        bail("rm %s", sk);
    s_start();
    snprintf(k2, sizeof k2, "%s/key2.public", tap_tmpdir());
    tamper_sh("cp '%s' '%s'", pk, k2);
    tamper_sh("cmp -s '%s' '%s' && exit 1 || exit 0", k1, k2);
    ok(true, "a start without keys/checkpoint.secret made a new key pair (rotated)");
    char *h = util_read_file(hist, NULL);
    char *t1 = util_read_file(k1, NULL), *t2 = util_read_file(k2, NULL);
    ok(h && t1 && t2 && strstr(h, t1) && strstr(h, t2) && strstr(h, t1) < strstr(h, t2),
       "keys/checkpoint.history keeps both public keys, the old one first");
    free(h);
    free(t1);
    free(t2);
    s_sign_past(at1, &at2);
    fx_stop(&s_c);
    diag("key 2 signed the checkpoint event at seq %llu", (unsigned long long) at2);

    /* key 2 alone: the older checkpoints fail */
    snprintf(opt, sizeof opt, "--public-key %s", k2);
    int rc = s_audit(opt);
    snprintf(frag, sizeof frag, "seq %llu: a checkpoint event that does not hold",
             (unsigned long long) at1);
    ok(rc == 1 && strstr(s_out, frag) && strstr(s_out, "signature"),
       "with key 2 alone: refused (exit %d), naming \"%s\"", rc, frag);

    /* both keys, given */
    snprintf(opt, sizeof opt, "--public-key %s --public-key %s", k1, k2);
    rc = s_audit(opt);
    ok(rc == 0 && strstr(s_out, "2 public keys") && strstr(s_out, "match every signed"),
       "with --public-key key 1 --public-key key 2: the log passes (exit %d)", rc);
    if (rc)
        diag("%s", s_out);

    /* the cluster's own history */
    rc = s_audit("");
    ok(rc == 0 && strstr(s_out, "2 public keys"),
       "with no key given: the cluster's key history, both keys: passes (exit %d)", rc);

    /* key 1 and a key the cluster never used: key 2's events fail */
    snprintf(k3, sizeof k3, "%s/key3.public", tap_tmpdir());
    snprintf(sk3, sizeof sk3, "%s/key3.secret", tap_tmpdir());
    if (db_ckpt_keygen(sk3, k3))
        bail("%s", lux_errmsg());
    snprintf(opt, sizeof opt, "--public-key %s --public-key %s", k1, k3);
    rc = s_audit(opt);
    snprintf(frag, sizeof frag, "seq %llu: a checkpoint event that does not hold",
             (unsigned long long) at2);
    ok(rc == 1 && strstr(s_out, frag) && strstr(s_out, "every public key given"),
       "with key 1 and a key not the cluster's: refused (exit %d), naming \"%s\"", rc, frag);
    if (rc != 1)
        diag("%s", s_out);
    snprintf(frag, sizeof frag, "seq %llu: a checkpoint event", (unsigned long long) at1);
    ok(!strstr(s_out, frag), "...and not the event at seq %llu, which key 1 signed",
       (unsigned long long) at1);

    /* lux pull of the rotated log: its witness spans both keys (the
       cluster's history verifies it), and the pulled file audits with
       both keys, not with key 2 alone */
    char out[PATH_MAX + 16], err[4096];
    snprintf(out, sizeof out, "%s/pulled.db", tap_tmpdir());
    rc = fx_lux(NULL, 0, err, sizeof err, "pull --dir %s %s", s_c.dir, out);
    ok(rc == 0, "lux pull of the rotated log verifies its witness with the key history (exit "
       "%d%s%s)", rc, rc ? ": " : "", rc ? err : "");
    rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit %s --public-key %s --public-key %s", out,
                k1, k2);
    ok(rc == 0, "lux audit of the pulled file with both keys passes (exit %d)", rc);
    if (rc)
        diag("%s", s_out);
    rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit %s --public-key %s", out, k2);
    ok(rc == 1 && strstr(s_out, "signature"), "...and with key 2 alone fails (exit %d)", rc);

    /* lux pull with the keys given: every --public-key counts (the
       witness spans both keys), and a key the witness was not signed
       with is refused */
    snprintf(out, sizeof out, "%s/pulled2.db", tap_tmpdir());
    err[0] = 0;
    rc = fx_lux(NULL, 0, err, sizeof err, "pull --dir %s --public-key %s --public-key %s %s",
                s_c.dir, k1, k2, out);
    err[strcspn(err, "\n")] = 0;
    ok(rc == 0, "lux pull --public-key key 1 --public-key key 2 verifies the witness (exit "
       "%d%s%s)", rc, rc ? ": " : "", rc ? err : "");
    snprintf(out, sizeof out, "%s/pulled3.db", tap_tmpdir());
    rc = fx_lux(NULL, 0, err, sizeof err, "pull --dir %s --public-key %s %s", s_c.dir, k2, out);
    err[strcspn(err, "\n")] = 0;
    ok(rc == 1 && strstr(err, "witness") && strstr(err, "seq"),
       "...and with key 2 alone is refused naming the witness and seq (exit %d: %s)", rc, err);

    /* a file with no key */
    snprintf(bad, sizeof bad, "%s/empty.public", tap_tmpdir());
    tamper_sh(": > '%s'", bad);
    snprintf(opt, sizeof opt, "--public-key %s --public-key %s", k1, bad);
    rc = s_audit(opt);
    ok(rc == 1 && strstr(s_out + 32768, bad) && strstr(s_out + 32768, "no public key"),
       "a key file without a key: exit %d naming it", rc);
    return done_testing();
}
