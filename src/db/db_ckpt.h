/*  db_ckpt - signed checkpoints of the committed log, and the witness file
    that keeps them (see db_ckpt.c for the formats, doc/DESIGN.md "Signed
    checkpoints" for the threat model).

    A checkpoint says, signed with the cluster's Ed25519 key: shard S of
    cluster C had committed seq N, whose chain hash is H. Anyone with the
    public key can check a replica file against it: a file that ends
    before N was cut, one whose hash at N differs was rewritten. */
#ifndef DB_CKPT_H_INCLUDED
#define DB_CKPT_H_INCLUDED

#include "db_cluster.h"
#include "db_event.h"

#include <stdbool.h>
#include <stdint.h>

#define DB_CKPT_PK_LEN 32  /* crypto_sign_PUBLICKEYBYTES */
#define DB_CKPT_SK_LEN 64  /* crypto_sign_SECRETKEYBYTES */
#define DB_CKPT_SIG_LEN 64 /* crypto_sign_BYTES */

typedef struct {
    util_id_t cluster;
    uint32_t shard;
    uint64_t seq;                  /* committed */
    uint8_t hash[DB_HASH_LEN];     /* the chain hash at seq */
    int64_t ts;                    /* ns since the Unix epoch, when it was signed */
    uint8_t sig[DB_CKPT_SIG_LEN];  /* over all of the above (db_ckpt.c) */
} db_ckpt_t;

/* The default places: DIR/keys/checkpoint.secret (0600),
   DIR/keys/checkpoint.public, DIR/witness. */
char *db_ckpt_secret_path(const db_cluster_t *c, char *out, size_t n);
char *db_ckpt_public_path(const db_cluster_t *c, char *out, size_t n);
char *db_ckpt_witness_path(const db_cluster_t *c, char *out, size_t n);

/* Make a key pair at the two paths unless the secret one exists (0, or
   LUX_EIO naming the file). The secret file is written 0600. The new
   public key is also appended to checkpoint.history beside public_path
   (with the key it replaces first, when that file did not list it). */
int db_ckpt_keygen(const char *secret_path, const char *public_path);
/* Read a key file (hex on one line). 0, LUX_ENOTFOUND, LUX_EINVAL (not a
   key), or LUX_EAUTH for a secret file readable by others than its owner. */
int db_ckpt_load_secret(const char *path, uint8_t sk[DB_CKPT_SK_LEN]);
int db_ckpt_load_public(const char *path, uint8_t pk[DB_CKPT_PK_LEN]);

void db_ckpt_sign(db_ckpt_t *c, const uint8_t sk[DB_CKPT_SK_LEN]);
bool db_ckpt_verify(const db_ckpt_t *c, const uint8_t pk[DB_CKPT_PK_LEN]);

/* The public keys an audit believes: after a rotation of the signing key
   (a new pair made when keys/checkpoint.secret is missing at start), the
   checkpoints signed before it verify only with the old public key. */
#define DB_CKPT_KEYS_MAX 16
typedef struct {
    int n;
    uint8_t pk[DB_CKPT_KEYS_MAX][DB_CKPT_PK_LEN];
} db_ckpt_keys_t;
/* Add the keys of a public key file: one key (hex) per non-empty line, so
   a key history (keys/checkpoint.history) adds each. 0, LUX_ENOTFOUND,
   LUX_EINVAL naming the file and line, or LUX_ERANGE past
   DB_CKPT_KEYS_MAX keys. */
int db_ckpt_keys_add(db_ckpt_keys_t *k, const char *path);
/* Whether c's signature verifies with one of k's keys. */
bool db_ckpt_keys_verify(const db_ckpt_t *c, const db_ckpt_keys_t *k);
/* DIR/keys/checkpoint.history: every public key the cluster signed with,
   oldest first, one a line (db_ckpt_keygen appends each new one). */
char *db_ckpt_history_path(const db_cluster_t *c, char *out, size_t n);
/* The cluster's own keys: its history, or (a cluster older than the
   history) its checkpoint.public; *from names the file read. 0 or
   LUX_ENOTFOUND when it has neither, or db_ckpt_keys_add's error. Anyone
   who can write DIR can write these: a third party gives its own. */
int db_ckpt_keys_cluster(const db_cluster_t *c, db_ckpt_keys_t *k, char *from, size_t n);

/* Append c to the witness file as one line, then fsync it (0 or LUX_EIO). */
int db_ckpt_append(const char *witness, const db_ckpt_t *c);

/* Each line of a witness file: fn(arg, line number, the checkpoint or NULL
   for a line that does not parse). A missing file is LUX_ENOTFOUND; fn
   returning nonzero stops the walk. */
int db_ckpt_each(const char *witness, int (*fn)(void *arg, int line, const db_ckpt_t *c),
                 void *arg);

/* Sign shard's committed state and append it to the witness: the last seq
   and hash of the tail's file (master.state names the tail; what the tail
   holds is committed by definition). Only when that seq is above `after`;
   *seq (OUT) is the seq signed, or `after`. 0, or a code naming the file. */
int db_ckpt_take(const db_cluster_t *c, const uint8_t sk[DB_CKPT_SK_LEN], const char *witness,
                 uint32_t shard, uint64_t after, uint64_t *seq, db_ckpt_t *out);

/* The checkpoint as a log event (kind checkpoint), to be appended to its
   own shard: job = db_ckpt_shard_key (the same ID for every checkpoint of
   a shard, one the shard function sends there), idx = the seq signed,
   info = the witness line without its newline (line, n: its buffer, which
   e borrows). So the log carries its own signed checkpoints, checked with
   the public key alone (db_ckpt_parse, db_ckpt_verify); the event lands
   after the seq it signs. 0 or LUX_EINVAL. */
int db_ckpt_event(const db_ckpt_t *c, uint32_t shards, db_event_t *e, char *line, size_t n);
void db_ckpt_shard_key(const util_id_t *cluster, uint32_t shard, uint32_t shards, util_id_t *key);
/* Append c's event through log and send it (not waited for: the client
   resends it to a new head while it lives). 0 or the client's error. */
struct db_client_t;
int db_ckpt_log(struct db_client_t *log, const db_ckpt_t *c, uint32_t shards);
/* A witness line (as in the file or a checkpoint event's info) into c. */
int db_ckpt_parse(const char *line, db_ckpt_t *c);

/* A checkpoint event found at seq `at` of shard's log (its idx and info)
   checked as an audit must before believing it: its info is a witness
   line of this cluster and this shard, signing a seq below `at` that idx
   repeats, and (keys not NULL) its signature verifies with one of keys. What it signs goes
   into c (OUT), also on failure when the line parsed. 0, or LUX_ECORRUPT
   saying what is wrong; LUX_EAUTH for a signature that fails. */
int db_ckpt_check_event(const util_id_t *cluster, uint32_t shard, uint64_t at, int64_t idx,
                        const char *info, const db_ckpt_keys_t *keys, db_ckpt_t *c);

#endif
