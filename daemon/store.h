/* store.h - the engine's state, recorded in sqlite (WAL, foreign keys,
 * schema versioned by PRAGMA user_version with forward migrations).
 *
 * The store is not thread-safe: the engine serialises every call under its
 * own lock. Strings returned inside structs are copied into fixed buffers, so
 * nothing returned needs freeing except where stated.
 */
#pragma once

#include <stdint.h>
#include <time.h>

#include "error.h"
#include "parse.h"

/* The schema version this build writes. */
#define STORE_SCHEMA_VERSION 3

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
};

/* Opens (creating if needed) the database at path and migrates it to
 * STORE_SCHEMA_VERSION. A database written by a newer version is refused
 * with -EPROTO. */
int store_open(const char *path, struct store **ret, pd_error *err);
struct store *store_close(struct store *s);

/* The schema version of the open database. */
int store_schema_version(struct store *s);

/* Inserts a box; -EEXIST if the name is taken. Sets row->id. */
int store_box_insert(struct store *s, struct box_row *row, pd_error *err);
/* Rewrites every column of the box with row->id. */
int store_box_update(struct store *s, const struct box_row *row, pd_error *err);
int store_box_delete(struct store *s, int64_t id, pd_error *err);

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
};

/* Jobs; deleting a box deletes its jobs (foreign key). */
int store_job_insert(struct store *s, struct job_row *row, pd_error *err);
int store_job_set_state(struct store *s, int64_t id, const char *state, pd_error *err);
int store_job_delete(struct store *s, int64_t id, pd_error *err);
int store_job_foreach(struct store *s, int (*fn)(const struct job_row *row, void *userdata),
		      void *userdata);
