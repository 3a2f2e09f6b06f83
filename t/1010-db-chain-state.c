/* 1010-db-chain-state: master.state is read strictly. A well-formed file
   (comments and blank lines included) loads; no file gives every chain
   0..R-1 at epoch 1; and each malformed case is an error that names the
   file, the line and what is wrong, instead of being skipped (a skipped
   line restarted its shard at epoch 1 with every replica: issue 27). */
#include "tap.h"
#include "db/db_chain.h"
#include "util/util_err.h"
#include "util/util_fs.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static db_cluster_t s_c;
static db_chain_t s_chains[2];

static int
s_load(const char *text)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/master.state", s_c.dir);
    FILE *f = fopen(path, "w");
    if (!f)
        bail("%s", path);
    fputs(text, f);
    fclose(f);
    return db_chain_load_state(&s_c, s_chains);
}

/* A malformed file: LUX_ECORRUPT, naming master.state, line and want. */
static void
s_bad(const char *text, int line, const char *want)
{
    int rc = s_load(text);
    char at[64];
    snprintf(at, sizeof at, "master.state line %d: ", line);
    const char *msg = lux_errmsg();
    ok(rc == LUX_ECORRUPT && (line == 0 || strstr(msg, at)) && strstr(msg, want),
       "refused (%d): %s", rc, msg);
}

int
main(void)
{
    snprintf(s_c.dir, sizeof s_c.dir, "%s", tap_tmpdir());
    s_c.shards = 2;
    s_c.replicas = 3;

    is_int(db_chain_load_state(&s_c, s_chains), 0, "no file: loads");
    ok(s_chains[1].epoch == 1 && s_chains[1].n == 3 && s_chains[1].m[2].index == 2,
       "no file: every chain is 0..R-1 at epoch 1");

    is_int(s_load("# a comment\n\nshard 0 epoch 7 chain 2 0\nshard 1 epoch 3 chain 1 2 0  \n"),
           0, "a well-formed file loads");
    ok(s_chains[0].epoch == 7 && s_chains[0].n == 2 && s_chains[0].m[0].index == 2 &&
       s_chains[0].m[1].index == 0 && s_chains[1].epoch == 3 && s_chains[1].n == 3 &&
       s_chains[1].m[0].index == 1, "...with its epochs and chains");

    /* what db_chain_save_state writes, it reads back */
    s_chains[1].epoch = 12;
    is_int(db_chain_save_state(&s_c, s_chains), 0, "saved");
    db_chain_t back[2];
    is_int(db_chain_load_state(&s_c, back), 0, "read back");
    ok(back[1].epoch == 12 && back[0].n == 2, "the same chains");

    /* a replica removed and not back: its out line, read back as saved */
    is_int(s_load("shard 0 epoch 7 chain 2 0\nout shard 0 replica 1 epoch 6 committed 1150\n"
                  "shard 1 epoch 3 chain 1 2 0\n"),
           0, "an out line loads");
    ok(s_chains[0].out[1].epoch == 6 && s_chains[0].out[1].committed == 1150 &&
           !s_chains[0].out[0].epoch && !s_chains[1].out[1].epoch,
       "...as replica 1 of shard 0 out since epoch 6, the tail then at seq 1150");
    s_chains[1].n = 2; /* replica 0 of shard 1 leaves at epoch 4, nothing committed */
    s_chains[1].epoch = 4;
    s_chains[1].out[0] = (db_out_t) {.epoch = 4, .committed = 0};
    s_chains[0].out[2] = (db_out_t) {.epoch = 5, .committed = 9}; /* a member: not written */
    is_int(db_chain_save_state(&s_c, s_chains), 0, "saved with out records");
    memset(back, 0, sizeof back);
    is_int(db_chain_load_state(&s_c, back), 0, "read back");
    ok(back[0].out[1].epoch == 6 && back[0].out[1].committed == 1150 && back[1].out[0].epoch == 4 &&
           back[1].out[0].committed == 0 && !back[0].out[2].epoch && back[1].n == 2,
       "the same out records, none for a member");

    s_bad("shard 0 epoch 7 chain 0 1 2\nshard 1 epoc 3 chain 0 1 2\n", 2,
          "expected \"shard S epoch E chain I...\"");
    s_bad("shard 0 epoch 7 chain 0 1 2\nshard 2 epoch 3 chain 0\n", 2, "the cluster has 2");
    s_bad("shard 0 epoch 7 chain 0 1 2\nshard 0 epoch 8 chain 0\n", 2, "a second line for shard 0");
    s_bad("shard 0 epoch 0 chain 0\nshard 1 epoch 1 chain 0\n", 1, "epoch 0");
    s_bad("shard 0 epoch 4 chain 0 x\nshard 1 epoch 1 chain 0\n", 1, "is not a replica index");
    s_bad("shard 0 epoch 4 chain 0 3\nshard 1 epoch 1 chain 0\n", 1, "replica 3");
    s_bad("shard 0 epoch 4 chain 1 1\nshard 1 epoch 1 chain 0\n", 1, "twice");
    s_bad("shard 0 epoch 4 chain\nshard 1 epoch 1 chain 0\n", 1, "no member");
    s_bad("shard 0 epoch 4 chain 0 1\n", 0, "no line for shard 1");
    s_bad("shard 0 epoch 4 chain 0 1\nshard 1 epoch 18446744073709551616 chain 0\n", 2,
          "epoch");
    s_bad("shard 0 epoch 7 chain 0 1\nout shard 0 replica 2 epoch 7 committed x\n"
          "shard 1 epoch 1 chain 0\n", 2, "expected \"out shard S replica I epoch E committed T\"");
    s_bad("out shard 0 replica 2 epoch 7 committed 5\nshard 0 epoch 7 chain 0 1\n"
          "shard 1 epoch 1 chain 0\n", 1, "before its shard line");
    s_bad("shard 0 epoch 7 chain 0 1\nout shard 0 replica 1 epoch 7 committed 5\n"
          "shard 1 epoch 1 chain 0\n", 2, "replica 1 is out and a member");
    s_bad("shard 0 epoch 7 chain 0 1\nout shard 0 replica 2 epoch 7 committed 5\n"
          "out shard 0 replica 2 epoch 6 committed 5\nshard 1 epoch 1 chain 0\n", 3, "out twice");
    s_bad("shard 0 epoch 7 chain 0 1\nout shard 0 replica 2 epoch 8 committed 5\n"
          "shard 1 epoch 1 chain 0\n", 2, "not in 1..7");
    s_bad("shard 0 epoch 7 chain 0 1\nout shard 0 replica 3 epoch 7 committed 5\n"
          "shard 1 epoch 1 chain 0\n", 2, "replica 3");
    return done_testing();
}
