/* store.h - the engine's state, recorded in sqlite (WAL, foreign keys,
 * schema versioned by PRAGMA user_version with forward migrations).
 *
 * The store is not thread-safe: the engine serialises every call under its
 * own lock. Strings returned inside structs are copied into fixed buffers, so
 * nothing returned needs freeing except where stated.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/error.h"
#include "store/layers.h"
#include "common/parse.h"

/* The schema version this build writes. */
#define STORE_SCHEMA_VERSION 14
/* Host ids per box (its user namespace maps 0..STORE_BOX_IDS-1). */
#define STORE_BOX_IDS 65536

struct store;

struct box_row {
	int64_t id;
	char name[NAME_MAX_LEN + 1];
	char state[16]; /* a box_state name, or "creating"/"deleting" mid-action */
	char type[NAME_MAX_LEN + 1];
	char image[NAME_MAX_LEN + 1];
	int64_t created;      /* unix seconds */
	int64_t last_started; /* unix seconds, 0 = never */
	int64_t expires;      /* TTL deadline, unix seconds, 0 = none */
	char error[PD_ERROR_MAX + 64];
	char layers[LAYER_STACK_TEXT_MAX]; /* its layer stack, newest first */
	int64_t net_addr;		   /* IPv4 address (host order) while running, 0 = none */
	/* The first host id of its range (STORE_BOX_IDS ids), 0 = none (a box
	 * from before user namespaces, or with them off); store_box_insert()
	 * allocates one when it is < 0. */
	int64_t uid_base;
	/* Its desktop (engine/desktop.c): 1 while it is to run (at every
	 * start of the box too), and its geometry, "WxH" ('': the default). */
	int64_t desktop;
	char geometry[16];
	/* Docker in the box (engine/docker.c): 1 on, 0 off, -1 (any value
	 * below 0) as its image says. */
	int64_t docker;
};

/* Opens (creating if needed) the database at path and migrates it to
 * STORE_SCHEMA_VERSION. A database written by a newer version is refused
 * with -EPROTO. The file and its -wal and -shm are made (or made again)
 * 0600: they hold the owner's password hash. */
int store_open(const char *path, struct store **ret, pd_error *err);
struct store *store_close(struct store *s);

/* A second connection to the database store_open() made and migrated, for
 * reads that must not wait for (nor hold) the engine lock: it refuses
 * writes (query_only) but may checkpoint (store_checkpoint()). -ENOENT if
 * there is no database at path. Like every connection, one thread at a
 * time. */
int store_open_reader(const char *path, struct store **ret, pd_error *err);

/* A read transaction: every read between store_read_begin() and
 * store_read_end() sees the database as one commit left it, whatever other
 * connections commit meanwhile (WAL: they do not wait for it). */
int store_read_begin(struct store *s);
void store_read_end(struct store *s);

/* Copies what the write-ahead log holds into the database file, as far as
 * no reader needs it (a passive checkpoint: it waits for no one and no
 * writer waits for it). The connection that commits checkpoints only as a
 * fallback (store_set_autocheckpoint()), so its commits do not pay for the
 * copy and its fsync. */
int store_checkpoint(struct store *s);
/* After a commit that leaves at least pages in the log, that connection
 * checkpoints itself (sqlite's default: 1000). */
void store_set_autocheckpoint(struct store *s, int pages);

/* The schema version of the open database. */
int store_schema_version(struct store *s);

/* Where boxes' id ranges come from: count ids from first (a multiple of
 * STORE_BOX_IDS); count 0: none. */
void store_set_user_ids(struct store *s, uint32_t first, uint32_t count);
/* The lowest range no box has, in *ret; -ENOSPC when all are taken. */
int store_box_alloc_ids(struct store *s, int64_t *ret, pd_error *err);
/* Inserts a box; -EEXIST if the name is taken. Sets row->id (and
 * row->uid_base when it is < 0: the lowest free range). */
int store_box_insert(struct store *s, struct box_row *row, pd_error *err);
/* Rewrites every column of the box with row->id. */
int store_box_update(struct store *s, const struct box_row *row, pd_error *err);
int store_box_delete(struct store *s, int64_t id, pd_error *err);
/* -ENOENT if there is no box with that id. */
int store_box_get(struct store *s, int64_t id, struct box_row *ret);

/* A box's network policy text (policy.h), malloc'd; new boxes have
 * "allow-all" (parse it: the stored text need not be canonical). -ENOENT if there is no such box.
 */
int store_box_policy_get(struct store *s, int64_t id, char **ret);
int store_box_policy_set(struct store *s, int64_t id, const char *text, pd_error *err);
/* A box's published ports, their canonical text (common/ports.h),
 * malloc'd ("" for none); -ENOENT if there is no such box. */
int store_box_ports_get(struct store *s, int64_t id, char **ret);
int store_box_ports_set(struct store *s, int64_t id, const char *text, pd_error *err);
/* Gives box `to` the policy, the published ports and the list of volumes of box `from` (a
 * fork); `to` has no volumes yet. Part of the caller's transaction. */
int store_box_copy_settings(struct store *s, int64_t from, int64_t to, pd_error *err);

/* Calls fn for every box in id order; stops early when fn returns < 0 and
 * returns that value. */
int store_box_foreach(struct store *s, int (*fn)(const struct box_row *row, void *userdata),
		      void *userdata);

/* Runs fn inside one transaction (BEGIN IMMEDIATE ... COMMIT, or ROLLBACK
 * when fn returns < 0). */
int store_transaction(struct store *s, int (*fn)(struct store *s, void *userdata), void *userdata,
		      pd_error *err);

struct job_row {
	int64_t id;
	int64_t box_id;
	char name[NAME_MAX_LEN + 1];
	char state[16]; /* created, running, ended */
	char kind[8];	/* exec, prompt (a name space each); "" on insert: exec */
};

/* Jobs; deleting a box deletes its jobs (foreign key). */
int store_job_insert(struct store *s, struct job_row *row, pd_error *err);
int store_job_set_state(struct store *s, int64_t id, const char *state, pd_error *err);
int store_job_delete(struct store *s, int64_t id, pd_error *err);
int store_job_foreach(struct store *s, int (*fn)(const struct job_row *row, void *userdata),
		      void *userdata);

/* The owner's password and access tokens (auth.h is their only user). The
 * store holds hashes only: of the one-time setup secret and of each token;
 * the password as a crypto_pwhash_str() string. */
#define STORE_HASH_LEN 32
#define STORE_PWHASH_MAX 128 /* crypto_pwhash_STRBYTES, NUL included */
#define STORE_TOKEN_ID_MAX 15
#define STORE_TOKEN_LABEL_MAX 64

struct owner_row {
	char pwhash[STORE_PWHASH_MAX]; /* "" while no password is set */
	bool has_setup;		       /* a setup secret is pending */
	uint8_t setup_hash[STORE_HASH_LEN];
	int64_t created; /* when the password was set, unix seconds */
};

/* The single owner row; -ENOENT before the first setup secret. */
int store_owner_get(struct store *s, struct owner_row *ret);
/* Records the hash of a new setup secret, replacing a pending one.
 * -EEXIST (and nothing changes) once a password is set. */
int store_owner_set_setup(struct store *s, const uint8_t hash[STORE_HASH_LEN], pd_error *err);
/* Sets the password and forgets the setup secret, only if that secret is
 * still the pending one and no password is set: else -ENOENT. The caller
 * has already compared the secret's hash in constant time; this condition
 * only settles a race between two setups. */
int store_owner_set_password(struct store *s, const uint8_t setup_hash[STORE_HASH_LEN],
			     const char *pwhash, int64_t now, pd_error *err);

struct token_row {
	int64_t seq; /* never reused, even after a revoke (inode numbers) */
	char id[STORE_TOKEN_ID_MAX + 1];
	uint8_t hash[STORE_HASH_LEN];
	char label[STORE_TOKEN_LABEL_MAX + 1];
	int64_t created;   /* unix seconds */
	int64_t last_used; /* unix seconds, 0 = never */
	int64_t expires;   /* unix seconds, 0 = never (NULL in the table) */
};

/* Inserts a token and sets row->seq; -EEXIST if its id or hash is taken. */
int store_token_insert(struct store *s, struct token_row *row, pd_error *err);
/* -ENOENT if there is no such token. */
int store_token_get(struct store *s, const char *id, struct token_row *ret);
int store_token_get_seq(struct store *s, int64_t seq, struct token_row *ret);
int store_token_set_last_used(struct store *s, const char *id, int64_t when, pd_error *err);
/* -ENOENT if there is no such token. */
int store_token_delete(struct store *s, const char *id, pd_error *err);
/* The earliest expiry of a token that expires after `after` (unix
 * seconds), 0 when none does. */
int store_token_next_expiry(struct store *s, int64_t after, int64_t *ret);
/* Deletes the tokens that expired at or before `before`; returns how many. */
int store_token_delete_expired(struct store *s, int64_t before, pd_error *err);
/* Calls fn for every token in creation (seq) order; stops early when fn
 * returns < 0 and returns that value. */
int store_token_foreach(struct store *s, int (*fn)(const struct token_row *row, void *userdata),
			void *userdata);

/* Layers (layers.h): the table allocates their ids and caches their sizes;
 * the directories DATA/layers/L<ID> hold them. */
int store_layer_insert(struct store *s, int64_t created, int64_t *ret_id, pd_error *err);
int store_layer_delete(struct store *s, int64_t id);
/* size < 0: not measured yet. -ENOENT if there is no such layer. */
int store_layer_get_size(struct store *s, int64_t id, int64_t *ret);
int store_layer_set_size(struct store *s, int64_t id, int64_t size);
/* Every layer id, ascending; *ret malloc'd. */
int store_layer_ids(struct store *s, int64_t **ret, size_t *ret_n);
/* 1 if a box's or a snapshot's stack or an intent names layer id, 0 if
 * none does, -errno if the rows cannot be read. One statement: cheap enough
 * to ask under the engine lock for each layer about to be removed. */
int store_layer_referenced(struct store *s, int64_t id);

#define STORE_LABEL_MAX 255

struct snapshot_row {
	int64_t seq; /* never reused (its inode) */
	char id[NAME_MAX_LEN + 1];
	char box[NAME_MAX_LEN + 1]; /* the box it was taken from (may be gone) */
	int64_t box_id;		    /* that box's id (never reused) */
	char label[STORE_LABEL_MAX + 1];
	int64_t created;
	char image[NAME_MAX_LEN + 1];
	char layers[LAYER_STACK_TEXT_MAX]; /* newest first; never empty */
	char error[PD_ERROR_MAX + 64];
};

/* Inserts a snapshot, choosing its id (layers_snapshot_id(box, seq)): sets
 * row->seq and row->id. */
int store_snapshot_insert(struct store *s, struct snapshot_row *row, pd_error *err);
/* -ENOENT if there is no such snapshot. */
int store_snapshot_get(struct store *s, const char *id, struct snapshot_row *ret);
int store_snapshot_get_seq(struct store *s, int64_t seq, struct snapshot_row *ret);
/* Rewrites label and error. -ENOENT if there is no such snapshot. */
int store_snapshot_update(struct store *s, const struct snapshot_row *row, pd_error *err);
int store_snapshot_delete(struct store *s, int64_t seq, pd_error *err);
/* Every snapshot in creation order; box_id 0: of every box. Stops early
 * when fn returns < 0 and returns that value. */
int store_snapshot_foreach(struct store *s, int64_t box_id,
			   int (*fn)(const struct snapshot_row *row, void *userdata),
			   void *userdata);

/* An action on layers in flight (engine crash safety): written before the
 * first change on disk, deleted in the transaction that commits the action.
 * kind: "stop", "snapshot", "fork" (freeze or copy a box's upper into
 * layer; fork also makes box new_box_id), "restore" (target: a snapshot),
 * "merge" (layer: the merge of box_id's oldest layers, see snapshots.c). */
struct intent_row {
	int64_t id;
	char kind[16];
	int64_t box_id;
	int64_t layer;
	bool copy; /* the upper is copied (running box), not moved */
	int64_t new_box_id;
	char label[STORE_LABEL_MAX + 1];
	char target[NAME_MAX_LEN + 1];
};

int store_intent_insert(struct store *s, struct intent_row *row, pd_error *err);
int store_intent_set_copy(struct store *s, int64_t id, bool copy, pd_error *err);
int store_intent_delete(struct store *s, int64_t id, pd_error *err);
int store_intent_foreach(struct store *s, int (*fn)(const struct intent_row *row, void *userdata),
			 void *userdata);

/* Named volumes (store-volumes.c). */
struct volume_row {
	int64_t id;
	char name[NAME_MAX_LEN + 1];
	char state[16];	 /* "ready", or "creating"/"deleting" mid-action */
	int64_t created; /* unix seconds */
};

/* Inserts a volume and sets row->id; -EEXIST if the name is taken. */
int store_volume_insert(struct store *s, struct volume_row *row, pd_error *err);
/* -ENOENT if there is no such volume. */
int store_volume_set_state(struct store *s, int64_t id, const char *state, pd_error *err);
/* Deletes the volume; -EBUSY (and nothing changes) while a box lists it. */
int store_volume_delete(struct store *s, int64_t id, pd_error *err);
/* Calls fn for every volume in id order; stops early when fn returns < 0
 * and returns that value. */
int store_volume_foreach(struct store *s, int (*fn)(const struct volume_row *row, void *userdata),
			 void *userdata);

/* The volume ids a box lists, in its order, in a malloc'd array (NULL when
 * none). */
int store_box_volumes(struct store *s, int64_t box_id, int64_t **ret, size_t *ret_n);
/* Replaces the box's list with ids[0..n) in one transaction. -ENOENT if the
 * box or one of the volumes is not in the database (nothing changes). */
int store_box_set_volumes(struct store *s, int64_t box_id, const int64_t *ids, size_t n,
			  pd_error *err);
/* The ids of the boxes listing the volume, in box id order, malloc'd. */
int store_volume_boxes(struct store *s, int64_t volume_id, int64_t **ret, size_t *ret_n);

/* Secrets (store/secrets.c). The store keeps what the engine sealed (a
 * nonce and a ciphertext): it never sees a clear value. Names are at most
 * STORE_SECRET_NAME_MAX bytes (checked by the engine). */
#define STORE_SECRET_NAME_MAX 128
struct secret_row {
	int64_t id; /* never reused: a secret removed and set again is another */
	char name[STORE_SECRET_NAME_MAX + 1];
	int64_t set_time; /* unix seconds of the last set */
	/* store_secret_get() only: malloc'd, the caller frees them. */
	unsigned char *nonce, *value;
	size_t nonce_len, value_len;
};

/* Sets name's sealed value: inserts it, or replaces the value, nonce and
 * time of the one there (its id stays). ret_id may be NULL. */
int store_secret_put(struct store *s, const char *name, const void *nonce, size_t nonce_len,
		     const void *value, size_t value_len, int64_t set_time, int64_t *ret_id,
		     pd_error *err);
/* By name (id 0) or by id (name NULL); with the sealed value when
 * with_value. -ENOENT when there is no such secret. */
int store_secret_get(struct store *s, const char *name, int64_t id, bool with_value,
		     struct secret_row *ret);
void secret_row_release(struct secret_row *row);
/* Removes it (and its name from every box's list); -ENOENT if not there. */
int store_secret_delete(struct store *s, int64_t id, pd_error *err);
/* Every secret's name in name order, malloc'd (free each, then the array). */
int store_secret_names(struct store *s, char ***ret, size_t *ret_n);
/* The names a box lists, in its order. */
int store_box_secrets(struct store *s, int64_t box_id, char ***ret, size_t *ret_n);
/* Replaces the box's list in one transaction: -ENOENT "secret X is not
 * set" for a name that is not (nothing changes). */
int store_box_set_secrets(struct store *s, int64_t box_id, char *const *names, size_t n,
			  pd_error *err);
