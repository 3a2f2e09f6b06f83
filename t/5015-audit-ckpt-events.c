/* 5015-audit-ckpt-events: `lux audit` checks the signed checkpoints the
   log carries as `checkpoint` events (kind 20), not only the witness file's
   (issue 26). A 2-shard, 3-replica cluster signs a checkpoint every 40
   events; the test appends until each shard's log holds one, appends more,
   and stops. Then on copies of the stopped cluster, each case must fail
   the audit (exit 1) with a message naming the shard, the file and the seq:
     - the tail cut below the seq its checkpoint event signs, the witness
       deleted: the other replicas' checkpoint event still tells (and lux
       sql warns);
     - the checkpoint event forged in every replica (its line altered,
       every hash after it recomputed), the witness deleted: its signature
       fails, in the cluster and in a file lux pull made of it;
     - the event at the signed seq edited in every replica, hashes
       recomputed, the witness deleted: the checkpoint event's hash
       disagrees with the log;
     - the checkpoint event re-signed with the key over another hash and
       the witness's newest lines dropped: it disagrees with the witness;
     - the witness line of a logged checkpoint removed, later lines kept;
     - a checkpoint event whose info is not a checkpoint line, in every
       replica, the witness deleted.
   Each of these passed the audit before it read checkpoint events. The
   untouched log passes, with and without its witness. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/tamper.h"
#include "db/db_ckpt.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

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
    db_client_t *cl = fx_client(&s_c, 32, 0);
    fx_notes_spread(cl, n, "an event under a checkpoint", 0);
    db_client_destroy(&cl);
}

/* An edit for tamper_forge: the checkpoint event at seq `at` gets the
   info `line` (everything else as it was). */
typedef struct {
    uint64_t at;
    const char *line;
} s_info_edit_t;

static bool
s_edit_info(void *arg, uint64_t seq, const uint8_t *rec, size_t n, util_buf_t *out)
{
    const s_info_edit_t *ed = arg;
    db_event_t e;
    if (seq != ed->at)
        return false;
    if (db_event_decode(&e, rec, n) || e.kind != DB_K_checkpoint)
        bail("seq %llu is not a checkpoint event", (unsigned long long) seq);
    db_event_set_info(&e, ed->line);
    db_event_encode(&e, out);
    return true;
}

/* The info of the checkpoint event at seq `at` of a file, parsed. */
static void
s_ckpt_at(const char *path, uint32_t shard, uint64_t at, db_ckpt_t *c)
{
    db_store_opts_t o = {.path = path, .cluster = s_c.id, .shard = shard, .readonly = true};
    db_store_t *st = db_store_open(&o);
    util_buf_t b;
    uint32_t got = 0;
    db_event_t e;
    char line[512];
    util_buf_init(&b);
    if (!st || db_store_read(st, at, 1, SIZE_MAX, &b, &got) || got != 1 ||
        db_event_decode(&e, b.data + 4, util_rd32(b.data)) || e.kind != DB_K_checkpoint)
        bail("%s: no checkpoint event at seq %llu", path, (unsigned long long) at);
    snprintf(line, sizeof line, "%.*s", (int) e.info_len, e.info);
    if (db_ckpt_parse(line, c))
        bail("%s", lux_errmsg());
    db_store_close(&st);
    util_buf_free(&b);
}

/* The witness line of c, without its newline. */
static void
s_line(const db_ckpt_t *c, char *line, size_t n)
{
    db_event_t e;
    if (db_ckpt_event(c, s_c.shards, &e, line, n))
        bail("%s", lux_errmsg());
}

/* lux audit of dir (extra options), expecting failure with every one of
   the fragments in its output. */
static void
s_caught(const char *what, const char *dir, const char *extra, const char *f1, const char *f2)
{
    int rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s %s", dir, extra ? extra : "");
    bool all = strstr(s_out, f1) && (!f2 || strstr(s_out, f2));
    ok(rc == 1 && all, "%s: caught (exit %d), naming \"%s\"%s%s%s", what, rc, f1,
       f2 ? " and \"" : "", f2 ? f2 : "", f2 ? "\"" : "");
    if (rc != 1 || !all)
        diag("%s", s_out);
}

int
main(void)
{
    char dir[PATH_MAX], path[PATH_MAX], frag[2 * PATH_MAX + 128],
        frag2[256];
    fx_start(&s_c, 2, 3, "--log-only --checkpoint-events 40 --checkpoint-s 0");
    if (!fx_wait_chain(&s_c, 0, 3, 60000) || !fx_wait_chain(&s_c, 1, 3, 60000))
        bail("the chains did not form");

    /* appends until both shards' logs hold a checkpoint event (the
       supervisor signs once a second at most), then more above it */
    db_chain_t chain[2];
    db_chain_load_state(&s_c, chain);
    uint64_t at = 0, signs = 0;
    int64_t t0 = util_mono_ms();
    for (;;) {
        s_append(100);
        bool both = true;
        for (uint32_t s = 0; s < 2; s++)
            both &= tamper_newest_ckpt(tamper_db(s_c.dir, s, chain[s].m[chain[s].n - 1].index, path,
                                       sizeof path), &at, &signs);
        if (both)
            break;
        if (util_mono_ms() - t0 > 60000)
            bail("no checkpoint event in both shards after 60 s of appends");
        usleep(200000);
    }
    s_append(100);
    /* wait until the supervisor has signed past these appends (its event
       lands after them), then append fewer than 40 more, which it does
       not sign: the newest checkpoint event is then followed by events,
       and the checkpoint at the stop is a later witness line (on a slow
       machine the event could otherwise be the log's last) */
    uint64_t want = 0;
    for (uint32_t s = 0; s < 2; s++) {
        tamper_db(s_c.dir, s, chain[s].m[chain[s].n - 1].index, path, sizeof path);
        want = tamper_last(path);
        t0 = util_mono_ms();
        while (!(tamper_newest_ckpt(path, &at, &signs) && signs + 1 >= want)) {
            if (util_mono_ms() - t0 > 60000)
                bail("shard %u: no checkpoint event signing past seq %llu after 60 s", s,
                     (unsigned long long) want - 1);
            usleep(100000);
        }
    }
    s_append(10);
    fx_stop(&s_c);

    db_chain_load_state(&s_c, chain);
    uint32_t tail = chain[0].m[chain[0].n - 1].index, head = chain[0].m[0].index;
    tamper_db(s_c.dir, 0, tail, path, sizeof path);
    uint64_t last = tamper_last(path);
    if (!tamper_newest_ckpt(path, &at, &signs))
        bail("shard 0's tail holds no checkpoint event");
    ok(signs < at && at < last, "shard 0 (%llu events) holds a checkpoint event at seq %llu"
       " signing seq %llu", (unsigned long long) last, (unsigned long long) at,
       (unsigned long long) signs);
    char wit[PATH_MAX];
    db_ckpt_witness_path(&s_c, wit, sizeof wit);

    /* the untouched log, with and without its witness */
    int rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s", s_c.dir);
    snprintf(frag, sizeof frag, "shard 0: %s: signed checkpoint events verified: ", path);
    ok(rc == 0 && strstr(s_out, frag),
       "an untouched log passes, its checkpoint events verified (%d)", rc);
    if (rc || !strstr(s_out, frag))
        diag("%s", s_out);
    tamper_copy(s_c.dir, "nowitness", dir, sizeof dir);
    tamper_sh("rm -f '%s/witness'", dir);
    rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s", dir);
    ok(rc == 0, "without its witness the untouched log passes (%d)", rc);
    if (rc)
        diag("%s", s_out);

    /* the tail cut below the seq its checkpoint event signs, no witness */
    tamper_copy(s_c.dir, "tailcut", dir, sizeof dir);
    tamper_sh("rm -f '%s/witness'", dir);
    tamper_exec(tamper_db(dir, 0, tail, path, sizeof path), "DELETE FROM event WHERE seq >= %llu",
                (unsigned long long) signs);
    snprintf(frag, sizeof frag, "shard 0: %s ends at seq %llu, before the signed checkpoint at seq"
             " %llu (the checkpoint event at seq %llu of ", path, (unsigned long long) signs - 1,
             (unsigned long long) signs, (unsigned long long) at);
    s_caught("the tail cut below a logged checkpoint, the witness deleted", dir, NULL, frag, NULL);
    char err[4096] = "";
    fx_lux(NULL, 0, err, sizeof err, "sql --dir %s \"SELECT count(*) FROM event\"", dir);
    snprintf(frag, sizeof frag, "shard 0: the tail's file (replica %u) ends at seq %llu, before"
             " the signed checkpoint at seq %llu", tail, (unsigned long long) signs - 1,
             (unsigned long long) signs);
    ok(strstr(err, "warning") && strstr(err, frag), "lux sql on it warns on stderr: %s", err);

    /* the checkpoint event forged in every replica: another seq signed */
    db_ckpt_t ck;
    char line[512];
    s_ckpt_at(tamper_db(s_c.dir, 0, tail, path, sizeof path), 0, at, &ck);
    tamper_copy(s_c.dir, "forged-event", dir, sizeof dir);
    tamper_sh("rm -f '%s/witness'", dir);
    {
        db_ckpt_t f = ck;
        f.ts += 1; /* a different statement under the old signature */
        s_line(&f, line, sizeof line);
        s_info_edit_t ed = {.at = at, .line = line};
        for (uint32_t r = 0; r < 3; r++)
            tamper_forge(tamper_db(dir, 0, r, path, sizeof path), &s_c.id, 0, s_edit_info, &ed);
    }
    snprintf(frag, sizeof frag, "shard 0: %s: seq %llu: a checkpoint event that does not hold:",
             tamper_db(dir, 0, tail, path, sizeof path), (unsigned long long) at);
    s_caught("a checkpoint event forged in every replica, the witness deleted", dir, NULL, frag,
             "signature");
    /* the same log pulled into a file: lux audit OUT.db checks its events too */
    char file[PATH_MAX], pub[PATH_MAX], err2[4096];
    snprintf(file, sizeof file, "%s/forged-event.db", tap_tmpdir());
    db_ckpt_public_path(&s_c, pub, sizeof pub);
    rc = fx_lux(s_out, sizeof s_out, err2, sizeof err2, "pull --dir %s %s", dir, file);
    if (rc)
        bail("pull of the forged copy: %s%s", s_out, err2);
    rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit %s --public-key %s", file, pub);
    snprintf(frag, sizeof frag, "shard 0: BROKEN at seq %llu: a checkpoint event that does not"
             " hold: its signature", (unsigned long long) at);
    ok(rc == 1 && strstr(s_out, frag), "lux audit OUT.db of a pull of it: caught (exit %d),"
       " naming \"%s\"", rc, frag);
    if (rc != 1 || !strstr(s_out, frag))
        diag("%s", s_out);

    /* an event below the signed seq edited in every replica */
    tamper_copy(s_c.dir, "forged-below", dir, sizeof dir);
    tamper_sh("rm -f '%s/witness'", dir);
    uint64_t edit = signs; /* the signed seq itself: older checkpoints sign below it */
    for (uint32_t r = 0; r < 3; r++)
        tamper_forge(tamper_db(dir, 0, r, path, sizeof path), &s_c.id, 0, tamper_edit_ts, &edit);
    tamper_db(dir, 0, head, path, sizeof path);
    snprintf(frag, sizeof frag, "shard 0: %s: the hash at seq", path);
    snprintf(frag2, sizeof frag2, "is not the signed one (the checkpoint event at seq %llu of ",
             (unsigned long long) at);
    s_caught("every replica edited below a logged checkpoint, the witness deleted", dir, NULL,
             frag, frag2);

    /* re-signed with the key over another hash; the witness's newest lines
       (the checkpoint at the stop) dropped, so that it ends at this one */
    tamper_copy(s_c.dir, "resigned", dir, sizeof dir);
    {
        char sk_path[PATH_MAX];
        uint8_t sk[DB_CKPT_SK_LEN];
        snprintf(sk_path, sizeof sk_path, "%s/keys/checkpoint.secret", dir);
        if (db_ckpt_load_secret(sk_path, sk))
            bail("%s", lux_errmsg());
        db_ckpt_t f = ck;
        db_store_opts_t o = {.path = tamper_db(dir, 0, tail, path, sizeof path),
                             .cluster = s_c.id, .shard = 0, .readonly = true};
        db_store_t *st = db_store_open(&o);
        if (!st || db_store_hash_at(st, f.seq - 1, f.hash))
            bail("hash at %llu: %s", (unsigned long long) f.seq - 1, lux_errmsg());
        db_store_close(&st);
        db_ckpt_sign(&f, sk);
        s_line(&f, line, sizeof line);
        s_info_edit_t ed = {.at = at, .line = line};
        for (uint32_t r = 0; r < 3; r++)
            tamper_forge(tamper_db(dir, 0, r, path, sizeof path), &s_c.id, 0, s_edit_info, &ed);
        /* keep the witness up to the line of this checkpoint */
        s_line(&ck, line, sizeof line);
        tamper_sh("sed -i '\\|^%s$|q' '%s/witness'", line, dir);
    }
    snprintf(frag, sizeof frag, "shard 0: %s: seq %llu: the checkpoint event signs another hash"
             " at seq %llu than witness", tamper_db(dir, 0, tail, path, sizeof path),
             (unsigned long long) at, (unsigned long long) signs);
    s_caught("a checkpoint event re-signed over another hash", dir, NULL, frag,
             "the key signed two histories");

    /* the witness line of a logged checkpoint removed, later lines kept */
    tamper_copy(s_c.dir, "witness-gap", dir, sizeof dir);
    s_line(&ck, line, sizeof line);
    tamper_sh("sed -i '\\|^%s$|d' '%s/witness'", line, dir);
    snprintf(frag, sizeof frag, "shard 0: %s: seq %llu: the checkpoint of seq %llu it holds is not"
             " in witness", tamper_db(dir, 0, tail, path, sizeof path), (unsigned long long) at,
             (unsigned long long) signs);
    s_caught("a logged checkpoint's witness line removed", dir, NULL, frag,
             "lines were removed from the witness");

    /* a checkpoint event whose info is not a checkpoint */
    tamper_copy(s_c.dir, "garbled", dir, sizeof dir);
    tamper_sh("rm -f '%s/witness'", dir);
    {
        s_info_edit_t ed = {.at = at, .line = "lux-checkpoint 1 not a checkpoint at all"};
        for (uint32_t r = 0; r < 3; r++)
            tamper_forge(tamper_db(dir, 0, r, path, sizeof path), &s_c.id, 0, s_edit_info, &ed);
        tamper_db(dir, 0, head, path, sizeof path);
    }
    snprintf(frag, sizeof frag, "shard 0: %s: seq %llu: a checkpoint event that does not hold: its"
             " info is not a checkpoint line", path, (unsigned long long) at);
    s_caught("a checkpoint event that is not a checkpoint", dir, NULL, frag, NULL);

    return done_testing();
}
