/* 6051-gsched-place: the global scheduler's decision (exec_gsched.c) on
   tables of nodes: a resource only one node has sends the task there; a
   resource no alive node has is refused at once, naming it; a node with
   the resources free now goes before one whose are busy (a busy one still
   takes the task, to wait in its queue, when it is the only one); then the
   node holding most of the arguments' bytes; then the least loaded, with
   the tasks placed since the last beat counted; dead nodes never; and the
   table is read from the monitor's "key value" blocks. */
#include "tap.h"

#include "exec/exec_gsched.h"

#include <stdio.h>
#include <string.h>

static void
s_node(gs_node_t *n, int id, const char *total, const char *free_, int workers, int queue)
{
    memset(n, 0, sizeof *n);
    n->id.b[15] = (uint8_t) id;
    n->alive = true;
    gs_res_parse(&n->total, total, false);
    gs_res_parse(&n->free, free_, false);
    n->workers = (uint32_t) workers;
    n->queue = (uint64_t) queue;
}

static int
s_place(gs_node_t *nodes, size_t n, const char *needs, const gs_arg_t *args, size_t nargs,
        char *why)
{
    gs_res_t r;
    size_t pick = 99;
    gs_res_parse(&r, needs, false);
    int rc = gs_place(nodes, n, &r, args, nargs, &pick, why, 256);
    return rc == GS_PLACED ? (int) pick : rc;
}

int
main(void)
{
    gs_node_t nd[3];
    char why[256] = "";

    s_node(&nd[0], 1, "CPU=2", "CPU=2", 2, 0);
    s_node(&nd[1], 2, "CPU=2,GPU=1", "CPU=2,GPU=1", 2, 0);
    is_int(s_place(nd, 2, "CPU=1,GPU=1", NULL, 0, why), 1, "GPU only on node B: B");
    is_int(s_place(nd, 2, "CPU=1,GPU=2", NULL, 0, why), GS_INFEASIBLE,
           "GPU=2 where the most is 1: refused");
    ok(strstr(why, "no node of the cluster has GPU=2 (the most any alive node has is 1)") != NULL,
       "... naming the resource and the most there is: %s", why);
    is_int(s_place(nd, 2, "CPU=1,disk=1", NULL, 0, why), GS_INFEASIBLE,
           "a resource nobody has: refused");
    ok(strstr(why, "disk=1 (the most any alive node has is 0)") != NULL, "... named: %s", why);

    /* busy first, then free */
    s_node(&nd[1], 2, "CPU=2,GPU=1", "CPU=2,GPU=0", 2, 5);
    is_int(s_place(nd, 2, "CPU=1,GPU=1", NULL, 0, why), 1,
           "the GPU is busy on its only node: the task still goes there, to wait");
    nd[1].alive = false;
    is_int(s_place(nd, 2, "CPU=1,GPU=1", NULL, 0, why), GS_INFEASIBLE,
           "its only node is dead: refused");

    /* locality */
    s_node(&nd[0], 1, "CPU=2", "CPU=2", 2, 0);
    s_node(&nd[1], 2, "CPU=2", "CPU=2", 2, 0);
    gs_arg_t args[2] = {{.node = nd[1].id, .bytes = 64 << 20}, {.node = nd[0].id, .bytes = 100}};
    is_int(s_place(nd, 2, "CPU=1", args, 2, why), 1, "64 MiB of arguments on B: B");
    args[0].node = nd[0].id;
    args[1].node = nd[1].id;
    is_int(s_place(nd, 2, "CPU=1", args, 2, why), 0, "on A: A");
    s_node(&nd[0], 1, "CPU=2", "CPU=0", 2, 3);
    is_int(s_place(nd, 2, "CPU=1", args, 2, why), 1,
           "A holds them but has no free CPU, B has: B (resources first)");

    /* load */
    s_node(&nd[0], 1, "CPU=2", "CPU=2", 2, 6);
    s_node(&nd[1], 2, "CPU=2", "CPU=2", 2, 1);
    is_int(s_place(nd, 2, "CPU=1", NULL, 0, why), 1, "queue 6 against 1: the shorter");
    s_node(&nd[0], 1, "CPU=2", "CPU=2", 2, 0);
    s_node(&nd[1], 2, "CPU=2", "CPU=2", 2, 0);
    s_node(&nd[2], 3, "CPU=4", "CPU=4", 4, 0);
    int count[3] = {0, 0, 0};
    for (int i = 0; i < 16; i++) {
        int p = s_place(nd, 3, "CPU=1", NULL, 0, why);
        if (p >= 0 && p < 3)
            count[p]++;
    }
    ok(count[0] == 4 && count[1] == 4 && count[2] == 8,
       "16 tasks between beats spread by what was placed per worker: %d %d %d", count[0],
       count[1], count[2]);

    /* the monitor's table */
    gs_node_t x;
    const char *blk = "node 000000000000000000000000000000aa\naddress 127.0.0.3\n"
                      "resources CPU=2,GPU=1\nfree CPU=1.5,GPU=0\nworkers 2\nqueue 7\n"
                      "state alive\nage_ms 12\n";
    ok(gs_node_from_text(&x, blk) == 0, "a STATUS block parses");
    ok(x.id.b[15] == 0xaa && !strcmp(x.address, "127.0.0.3") && x.alive, "its node and address");
    ok(gs_res_get(&x.total, "GPU") == 1000 && gs_res_get(&x.free, "CPU") == 1500 &&
       gs_res_get(&x.free, "GPU") == 0, "its resources total and free");
    ok(x.workers == 2 && x.queue == 7, "its workers and queue");
    ok(gs_node_from_text(&x, "node 00aa\nstate dead\n") == -1, "a bad node ID: refused");
    ok(gs_node_from_text(&x, "node 000000000000000000000000000000aa\nstate dead\n") == 0 &&
       !x.alive, "a dead node is not alive");
    gs_res_t r;
    ok(gs_res_parse(&r, "CPU=1,GPU", false) == -1 && gs_res_parse(&r, "=1", false) == -1 &&
       gs_res_parse(&r, "CPU=x", false) == -1, "garbage resources: refused");

    /* placement at random (LUX_PLACE_RANDOM=1): seeded, repeatable */
    s_node(&nd[0], 1, "CPU=2,w=1", "CPU=2,w=1", 2, 0);
    s_node(&nd[1], 2, "CPU=2", "CPU=2", 2, 0);
    s_node(&nd[2], 3, "CPU=2,w=1", "CPU=2,w=1", 2, 0);
    gs_res_parse(&r, "CPU=1,w=1", false);
    gs_rand_t g1, g2, g;
    uint64_t s1 = gs_rand_seed(&g1, 0), s2 = gs_rand_seed(&g2, 0);
    ok(s1 && s2 && s1 != s2, "two seeds drawn differ (%llu, %llu)", (unsigned long long) s1,
       (unsigned long long) s2);
    char seq1[65] = "", seq2[65] = "", seq3[65] = "";
    int cnt[3] = {0, 0, 0};
    bool fits = true;
    gs_rand_seed(&g1, s1);
    gs_rand_seed(&g2, s1);
    gs_rand_seed(&g, s2);
    for (int i = 0; i < 64; i++) {
        size_t a = 9, b = 9, c = 9;
        fits = fits && gs_pick_random(nd, 3, &r, NULL, &g1, &a) == GS_PLACED &&
               gs_pick_random(nd, 3, &r, NULL, &g2, &b) == GS_PLACED &&
               gs_pick_random(nd, 3, &r, NULL, &g, &c) == GS_PLACED && a < 3 && b < 3 && c < 3;
        seq1[i] = (char) ('0' + a), seq2[i] = (char) ('0' + b), seq3[i] = (char) ('0' + c);
        if (a < 3)
            cnt[a]++;
    }
    ok(fits, "64 draws of three generators each place the task");
    is_str(seq1, seq2, "the same seed draws the same nodes");
    ok(strcmp(seq1, seq3) != 0, "another seed draws others: %s / %s", seq1, seq3);
    ok(cnt[1] == 0 && cnt[0] > 8 && cnt[2] > 8,
       "only nodes with w are drawn, both of them: %d %d %d", cnt[0], cnt[1], cnt[2]);
    size_t p = 9;
    ok(gs_pick_random(nd, 3, &r, &nd[0].id, &g, &p) == GS_PLACED && p == 2,
       "the requester left out: the other node with w");
    nd[2].alive = false;
    ok(gs_pick_random(nd, 3, &r, &nd[0].id, &g, &p) == GS_INFEASIBLE, "none left: infeasible");
    return done_testing();
}
