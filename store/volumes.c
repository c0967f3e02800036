/* store-volumes.c - the volumes and box_volumes tables. */
#include <string.h>

#include "store/internal.h"

int store_volume_insert(struct store *s, struct volume_row *row, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO volumes (name, state, created) VALUES (?1, ?2, ?3)", -1,
			       &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, row->name, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, row->state, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 3, row->created) != SQLITE_OK)
		return store_sql_error(s, err, "insert volume");
	if (sqlite3_step(st) != SQLITE_DONE) {
		int r = store_sql_error(s, err, "insert volume");
		if (r == -EEXIST)
			return pd_error_set(err, -EEXIST, "volume %s already exists", row->name);
		return r;
	}
	row->id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_volume_set_state(struct store *s, int64_t id, const char *state, pd_error *err)
{
	int r = store_update_text(s, "UPDATE volumes SET state = ?1 WHERE id = ?2", state, id, err,
				  "update volume");

	if (r == 0)
		return pd_error_set(err, -ENOENT, "volume %lld is not in the database",
				    (long long)id);
	return r < 0 ? r : 0;
}

int store_volume_delete(struct store *s, int64_t id, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "DELETE FROM volumes WHERE id = ?1", -1, &st, NULL) !=
		SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
		return store_sql_error(s, err, "delete volume");
	if (sqlite3_step(st) != SQLITE_DONE) {
		int r = store_sql_error(s, err, "delete volume");
		/* The foreign key of box_volumes: still attached. */
		return r == -EEXIST ? pd_error_set(err, -EBUSY, "the volume is attached to a box")
				    : r;
	}
	return 0;
}

int store_volume_foreach(struct store *s, int (*fn)(const struct volume_row *row, void *userdata),
			 void *userdata)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT id, name, state, created FROM volumes ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct volume_row row = {0};
		int r;

		row.id = sqlite3_column_int64(st, 0);
		store_column_text(row.name, sizeof row.name, st, 1);
		store_column_text(row.state, sizeof row.state, st, 2);
		row.created = sqlite3_column_int64(st, 3);
		r = fn(&row, userdata);
		if (r < 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* The first column of every row of a one-parameter query, as int64s. */
static int query_ids(struct store *s, const char *sql, int64_t param, int64_t **ret, size_t *ret_n)
{
	_cleanup_cached_ sqlite3_stmt *st = NULL;
	_cleanup_free_ int64_t *ids = NULL;
	size_t n = 0;
	int rc;

	if (store_stmt(s, sql, &st) < 0 || sqlite3_bind_int64(st, 1, param) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t *ni = realloc(ids, (n + 1) * sizeof *ni);
		if (!ni)
			return -ENOMEM;
		ids = ni;
		ids[n++] = sqlite3_column_int64(st, 0);
	}
	if (rc != SQLITE_DONE)
		return -EIO;
	*ret = TAKE_PTR(ids);
	*ret_n = n;
	return 0;
}

int store_box_volumes(struct store *s, int64_t box_id, int64_t **ret, size_t *ret_n)
{
	return query_ids(s, "SELECT volume_id FROM box_volumes WHERE box_id = ?1 ORDER BY pos",
			 box_id, ret, ret_n);
}

int store_volume_boxes(struct store *s, int64_t volume_id, int64_t **ret, size_t *ret_n)
{
	return query_ids(s, "SELECT box_id FROM box_volumes WHERE volume_id = ?1 ORDER BY box_id",
			 volume_id, ret, ret_n);
}

struct set_args {
	int64_t box_id;
	const int64_t *ids;
	size_t n;
	pd_error *err;
};

static int set_volumes(struct store *s, void *userdata)
{
	struct set_args *a = userdata;
	_cleanup_stmt_ sqlite3_stmt *del = NULL, *ins = NULL;

	if (sqlite3_prepare_v2(s->db, "DELETE FROM box_volumes WHERE box_id = ?1", -1, &del,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(del, 1, a->box_id) != SQLITE_OK || sqlite3_step(del) != SQLITE_DONE)
		return store_sql_error(s, a->err, "detach volumes");
	if (sqlite3_prepare_v2(
		s->db, "INSERT INTO box_volumes (box_id, volume_id, pos) VALUES (?1, ?2, ?3)", -1,
		&ins, NULL) != SQLITE_OK)
		return store_sql_error(s, a->err, "attach volumes");
	for (size_t i = 0; i < a->n; i++) {
		sqlite3_reset(ins);
		if (sqlite3_bind_int64(ins, 1, a->box_id) != SQLITE_OK ||
		    sqlite3_bind_int64(ins, 2, a->ids[i]) != SQLITE_OK ||
		    sqlite3_bind_int64(ins, 3, (int64_t)i) != SQLITE_OK)
			return store_sql_error(s, a->err, "attach volumes");
		if (sqlite3_step(ins) != SQLITE_DONE) {
			int r = store_sql_error(s, a->err, "attach volumes");
			/* A foreign key (no such box or volume) or a duplicate. */
			return r == -EEXIST ? pd_error_set(a->err, -ENOENT,
							   "no such box or volume, or a duplicate")
					    : r;
		}
	}
	return 0;
}

int store_box_set_volumes(struct store *s, int64_t box_id, const int64_t *ids, size_t n,
			  pd_error *err)
{
	struct set_args a = {.box_id = box_id, .ids = ids, .n = n, .err = err};

	return store_transaction(s, set_volumes, &a, err);
}
