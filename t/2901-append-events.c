/*  2901-append-events - append a known mix of events to a running cluster
    and print each one, once acknowledged, as a JSON object.

    A helper of t/2901-protocol-foreign.sh, not a test by itself: the test
    compares what this program says it appended with what the Python
    subscriber (tools/lux_subscribe.py), written from doc/protocol.md alone,
    decodes. So the mix covers every field, every kind of key (job, task,
    actor, node: several shards), empty but present strings and blobs,
    binary bytes, non-ASCII text, negative and extreme integers and one
    record larger than 64 KiB.

    usage: 2901-append-events --dir DIR [--count N] [--tag T] [--spread-ms MS]

    --spread-ms spreads the appends over about MS milliseconds (so that a
    test can kill a replica while they flow). Output: one line per event,
    in the order appended, only after every event was acknowledged; exit 1
    when the cluster did not acknowledge them all.
*/
#include "db/db_client.h"
#include "util/util_err.h"
#include "util/util_hash.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What we appended, kept to print after the acknowledgement: the event
   struct points at these buffers. */
typedef struct {
    db_event_t e;
    uint32_t shard;
    char name[64];
    char info[160];
    uint8_t deps[3 * DB_DEP_LEN];
    uint8_t *body;
} s_ev_t;

static void
s_hex(FILE *f, const void *p, size_t n)
{
    const uint8_t *b = p;
    fputc('"', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", b[i]);
    fputc('"', f);
}

/* A JSON string of UTF-8 bytes: escape what JSON requires, pass the rest. */
static void
s_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void
s_print(FILE *f, const s_ev_t *v)
{
    const db_event_t *e = &v->e;
    fprintf(f, "{\"shard\": %u, \"kind\": \"%s\", \"client\": ", v->shard, db_kind_name(e->kind));
    s_hex(f, e->client.b, 16);
    fprintf(f, ", \"cseq\": %llu", (unsigned long long) e->cseq);
#define ID(bit, field)                                                        \
    if (e->mask & bit) {                                                      \
        fprintf(f, ", \"" #field "\": ");                                     \
        s_hex(f, e->field.b, 16);                                             \
    }
    ID(DB_F_JOB, job)
    ID(DB_F_TASK, task)
    ID(DB_F_PARENT, parent)
    ID(DB_F_ACTOR, actor)
    ID(DB_F_NODE, node)
#undef ID
#define INT(bit, field)                                                       \
    if (e->mask & bit)                                                        \
        fprintf(f, ", \"" #field "\": %lld", (long long) e->field);
    INT(DB_F_IDX, idx)
    INT(DB_F_WORKER, worker)
    INT(DB_F_ATTEMPT, attempt)
    INT(DB_F_STATUS, status)
    INT(DB_F_T_START, t_start)
    INT(DB_F_T_END, t_end)
    INT(DB_F_SIZE, size)
#undef INT
    if (e->mask & DB_F_NAME) {
        fprintf(f, ", \"name\": ");
        s_str(f, e->name, e->name_len);
    }
    if (e->mask & DB_F_INFO) {
        fprintf(f, ", \"info\": ");
        s_str(f, e->info, e->info_len);
    }
    if (e->mask & DB_F_FP) {
        fprintf(f, ", \"fp\": ");
        s_hex(f, e->fp, DB_FP_LEN);
    }
    if (e->mask & DB_F_DEPS) {
        fprintf(f, ", \"deps\": [");
        for (uint32_t k = 0; k < e->deps_len / DB_DEP_LEN; k++) {
            fprintf(f, "%s", k ? ", " : "");
            s_hex(f, e->deps + k * DB_DEP_LEN, DB_DEP_LEN);
        }
        fprintf(f, "]");
    }
    if (e->mask & DB_F_BODY) {
        fprintf(f, ", \"body\": ");
        s_hex(f, e->body, e->body_len);
    }
    fprintf(f, "}\n");
}

/* An object ID: the task ID, then the return index big-endian. */
static void
s_obj(uint8_t *out, const util_id_t *task, uint32_t index)
{
    memcpy(out, task->b, 16);
    for (int i = 0; i < 4; i++)
        out[16 + i] = (uint8_t) (index >> (8 * (3 - i)));
}

/* Event i of the mix (ten shapes, then again). */
static void
s_make(s_ev_t *v, uint64_t i, const char *tag, const util_id_t *job)
{
    db_event_t *e = &v->e;
    util_id_t task, parent, actor, node;
    util_id_child(&task, job, job, 2 * i + 1);
    util_id_child(&parent, job, job, 2 * i);
    util_id_child(&actor, job, &task, 7);
    util_id_child(&node, &task, &task, 9);
    memset(v, 0, sizeof *v);
    int64_t t0 = 1763790000000000000LL + (int64_t) i * 1000;
    switch (i % 10) {
    case 0:
        e->kind = DB_K_job_started;
        DB_SET_ID(e, job, DB_F_JOB, job);
        DB_SET_INT(e, t_start, DB_F_T_START, t0);
        snprintf(v->name, sizeof v->name, "driver-%s", tag);
        snprintf(v->info, sizeof v->info, "started by 2901 \xce\xb1\xce\xb2 \xe2\x9c\x93 #%llu",
                 (unsigned long long) i);
        db_event_set_name(e, v->name);
        db_event_set_info(e, v->info);
        break;
    case 1:
        e->kind = DB_K_task_submitted;
        DB_SET_ID(e, job, DB_F_JOB, job);
        DB_SET_ID(e, task, DB_F_TASK, &task);
        DB_SET_ID(e, parent, DB_F_PARENT, &parent);
        DB_SET_INT(e, idx, DB_F_IDX, 2);
        DB_SET_INT(e, attempt, DB_F_ATTEMPT, 1);
        snprintf(v->name, sizeof v->name, "f");
        db_event_set_name(e, v->name);
        s_obj(v->deps, &parent, 0);
        s_obj(v->deps + DB_DEP_LEN, &parent, 0x01020304);
        e->deps = v->deps;
        e->deps_len = 2 * DB_DEP_LEN;
        e->mask |= DB_F_DEPS;
        v->body = malloc(37);
        for (int k = 0; k < 37; k++)
            v->body[k] = (uint8_t) (k * 7 + i); /* zero bytes included */
        e->body = v->body;
        e->body_len = 37;
        e->mask |= DB_F_BODY;
        break;
    case 2:
        e->kind = DB_K_task_finished;
        DB_SET_ID(e, task, DB_F_TASK, &task);
        DB_SET_ID(e, node, DB_F_NODE, &node);
        DB_SET_INT(e, worker, DB_F_WORKER, 4242);
        DB_SET_INT(e, attempt, DB_F_ATTEMPT, 1);
        DB_SET_INT(e, status, DB_F_STATUS, 0);
        DB_SET_INT(e, t_start, DB_F_T_START, t0);
        DB_SET_INT(e, t_end, DB_F_T_END, t0 + 999);
        DB_SET_INT(e, size, DB_F_SIZE, 123456789012LL);
        util_blake(e->fp, DB_FP_LEN, &i, sizeof i);
        e->mask |= DB_F_FP;
        break;
    case 3:
        e->kind = DB_K_task_failed;
        DB_SET_ID(e, task, DB_F_TASK, &task);
        DB_SET_INT(e, status, DB_F_STATUS, LUX_ETASK);
        DB_SET_INT(e, attempt, DB_F_ATTEMPT, 2);
        snprintf(v->info, sizeof v->info, "line 1\nquote \" backslash \\ tab\t end %llu",
                 (unsigned long long) i);
        db_event_set_info(e, v->info);
        break;
    case 4:
        e->kind = DB_K_object_put;
        DB_SET_ID(e, task, DB_F_TASK, &task);
        DB_SET_ID(e, node, DB_F_NODE, &node);
        DB_SET_INT(e, idx, DB_F_IDX, 1);
        DB_SET_INT(e, size, DB_F_SIZE, 0);
        memset(e->fp, 0xff, DB_FP_LEN);
        e->mask |= DB_F_FP;
        break;
    case 5:
        e->kind = DB_K_actor_created;
        DB_SET_ID(e, actor, DB_F_ACTOR, &actor);
        DB_SET_ID(e, job, DB_F_JOB, job);
        DB_SET_ID(e, node, DB_F_NODE, &node);
        snprintf(v->name, sizeof v->name, "Counter");
        db_event_set_name(e, v->name);
        e->body = (const uint8_t *) ""; /* present, zero bytes */
        e->body_len = 0;
        e->mask |= DB_F_BODY;
        break;
    case 6:
        e->kind = DB_K_actor_call;
        DB_SET_ID(e, actor, DB_F_ACTOR, &actor);
        DB_SET_INT(e, idx, DB_F_IDX, (int64_t) i);
        snprintf(v->name, sizeof v->name, "incr");
        db_event_set_name(e, v->name);
        s_obj(v->deps, &task, 0);
        e->deps = v->deps;
        e->deps_len = DB_DEP_LEN;
        e->mask |= DB_F_DEPS;
        v->body = malloc(4);
        memcpy(v->body, "args", 4);
        e->body = v->body;
        e->body_len = 4;
        e->mask |= DB_F_BODY;
        break;
    case 7:
        e->kind = DB_K_node_joined;
        DB_SET_ID(e, node, DB_F_NODE, &node);
        db_event_set_name(e, ""); /* present, empty */
        db_event_set_info(e, "");
        break;
    case 8:
        e->kind = DB_K_note;
        DB_SET_ID(e, job, DB_F_JOB, job);
        snprintf(v->info, sizeof v->info, "note %llu of %s", (unsigned long long) i, tag);
        db_event_set_info(e, v->info);
        break;
    default: { /* every field, extreme values; the first one is large */
        size_t n = i == 9 ? 70000 : 1000;
        e->kind = DB_K_actor_checkpoint;
        DB_SET_ID(e, job, DB_F_JOB, job);
        DB_SET_ID(e, task, DB_F_TASK, &task);
        DB_SET_ID(e, parent, DB_F_PARENT, &parent);
        DB_SET_ID(e, actor, DB_F_ACTOR, &actor);
        DB_SET_ID(e, node, DB_F_NODE, &node);
        DB_SET_INT(e, idx, DB_F_IDX, INT64_MIN);
        DB_SET_INT(e, worker, DB_F_WORKER, INT64_MAX);
        DB_SET_INT(e, attempt, DB_F_ATTEMPT, -1);
        DB_SET_INT(e, status, DB_F_STATUS, 0);
        DB_SET_INT(e, t_start, DB_F_T_START, 0);
        DB_SET_INT(e, t_end, DB_F_T_END, -1);
        DB_SET_INT(e, size, DB_F_SIZE, (int64_t) 1 << 62);
        snprintf(v->name, sizeof v->name, "checkpoint-%llu", (unsigned long long) i);
        db_event_set_name(e, v->name);
        snprintf(v->info, sizeof v->info, "all eighteen fields");
        db_event_set_info(e, v->info);
        util_blake(e->fp, DB_FP_LEN, v->name, strlen(v->name));
        e->mask |= DB_F_FP;
        for (uint32_t k = 0; k < 3; k++)
            s_obj(v->deps + k * DB_DEP_LEN, &task, k);
        e->deps = v->deps;
        e->deps_len = 3 * DB_DEP_LEN;
        e->mask |= DB_F_DEPS;
        v->body = malloc(n);
        for (size_t k = 0; k < n; k++)
            v->body[k] = (uint8_t) (k ^ (k >> 8));
        e->body = v->body;
        e->body_len = (uint32_t) n;
        e->mask |= DB_F_BODY;
        break;
    }
    }
}

int
main(int argc, char **argv)
{
    const char *dir = NULL, *tag = "t";
    long count = 40, spread_ms = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
        else if (strcmp(argv[i], "--count") == 0)
            count = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--tag") == 0)
            tag = argv[i + 1];
        else if (strcmp(argv[i], "--spread-ms") == 0)
            spread_ms = atol(argv[i + 1]);
    }
    if (!dir || count < 1) {
        fprintf(stderr, "usage: 2901-append-events --dir DIR [--count N] [--tag T] "
                        "[--spread-ms MS]\n");
        return 2;
    }
    db_cluster_t c;
    if (db_cluster_load(&c, dir)) {
        fprintf(stderr, "2901-append-events: %s\n", lux_errmsg());
        return 1;
    }
    net_sec_t *sec = NULL;
    if (db_cluster_tcp(&c)) {
        char keys[PATH_MAX + 32];
        if (!(sec = net_sec_load(db_cluster_path(&c, keys, sizeof keys, "keys")))) {
            fprintf(stderr, "2901-append-events: %s\n", lux_errmsg());
            return 1;
        }
    }
    db_client_opts_t o = {.cluster = &c, .sec = sec, .batch = 16, .timeout_ms = 20000};
    db_client_t *cl = db_client_new(&o);
    if (!cl) {
        fprintf(stderr, "2901-append-events: %s\n", lux_errmsg());
        return 1;
    }
    s_ev_t *evs = calloc((size_t) count, sizeof *evs);
    util_id_t job;
    util_id_random(&job);
    int rc = 0;
    for (long i = 0; i < count && !rc; i++) {
        s_ev_t *v = &evs[i];
        s_make(v, (uint64_t) i, tag, &job);
        v->shard = db_client_shard(cl, &v->e);
        if ((rc = db_client_append(cl, &v->e)))
            fprintf(stderr, "2901-append-events: append %ld: %s\n", i, lux_errmsg());
        if (spread_ms && i % 4 == 3) {
            db_client_flush(cl);
            int64_t until = util_mono_ms() + spread_ms * 4 / count;
            do
                db_client_poll(cl, 5);
            while (util_mono_ms() < until);
        }
    }
    if (!rc && (rc = db_client_sync(cl, 20000)))
        fprintf(stderr, "2901-append-events: %s\n", lux_errmsg());
    if (!rc)
        for (long i = 0; i < count; i++)
            s_print(stdout, &evs[i]);
    for (long i = 0; i < count; i++)
        free(evs[i].body);
    free(evs);
    db_client_destroy(&cl);
    net_sec_destroy(&sec);
    return rc ? 1 : 0;
}
