/* store/secrets.c - the secrets and box_secrets tables. Values arrive and
 * leave sealed (engine/secrets.c): nothing here is a clear value. */
#include <string.h>

#include "store/internal.h"

int store_secret_put(struct store *s, const char *name, const void *nonce, size_t nonce_len,
		     const void *value, size_t value_len, int64_t set_time, int64_t *ret_id,
		     pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	/* One statement: a crash leaves the old row or the new one. */
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO secrets (name, nonce, value, set_time)"
			       " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET"
			       " nonce = excluded.nonce, value = excluded.value,"
			       " set_time = excluded.set_time RETURNING id",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 2, nonce, (int)nonce_len, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 3, value, (int)value_len, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 4, set_time) != SQLITE_OK)
		return store_sql_error(s, err, "set secret");
	if (sqlite3_step(st) != SQLITE_ROW)
		return store_sql_error(s, err, "set secret");
	if (ret_id)
		*ret_id = sqlite3_column_int64(st, 0);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_sql_error(s, err, "set secret");
	return 0;
}

static int blob_dup(sqlite3_stmt *st, int col, unsigned char **ret, size_t *ret_len)
{
	const void *p = sqlite3_column_blob(st, col);
	int n = sqlite3_column_bytes(st, col);

	*ret = malloc(n > 0 ? (size_t)n : 1);
	if (!*ret)
		return -ENOMEM;
	if (n > 0)
		memcpy(*ret, p, (size_t)n);
	*ret_len = (size_t)(n > 0 ? n : 0);
	return 0;
}

void secret_row_release(struct secret_row *row)
{
	if (!row)
		return;
	free(row->nonce);
	free(row->value);
	row->nonce = row->value = NULL;
}

int store_secret_get(struct store *s, const char *name, int64_t id, bool with_value,
		     struct secret_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	struct secret_row row = {0};
	int rc;

	if (sqlite3_prepare_v2(s->db,
			       name ? "SELECT id, name, set_time, nonce, value FROM secrets"
				      " WHERE name = ?1"
				    : "SELECT id, name, set_time, nonce, value FROM secrets"
				      " WHERE id = ?1",
			       -1, &st, NULL) != SQLITE_OK ||
	    (name ? sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC)
		  : sqlite3_bind_int64(st, 1, id)) != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
	row.id = sqlite3_column_int64(st, 0);
	store_column_text(row.name, sizeof row.name, st, 1);
	row.set_time = sqlite3_column_int64(st, 2);
	if (with_value && (blob_dup(st, 3, &row.nonce, &row.nonce_len) < 0 ||
			   blob_dup(st, 4, &row.value, &row.value_len) < 0)) {
		secret_row_release(&row);
		return -ENOMEM;
	}
	*ret = row;
	return 0;
}

int store_secret_delete(struct store *s, int64_t id, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "DELETE FROM secrets WHERE id = ?1", -1, &st, NULL) !=
		SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, id) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
		return store_sql_error(s, err, "remove secret");
	if (sqlite3_changes(s->db) == 0)
		return pd_error_set(err, -ENOENT, "the secret is not set");
	return 0;
}

/* The first column of a query's rows (text), with one optional int64
 * parameter ?1. */
static int query_names(struct store *s, const char *sql, const int64_t *param, char ***ret,
		       size_t *ret_n)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char **v = NULL;
	size_t n = 0;
	int rc, r = 0;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK ||
	    (param && sqlite3_bind_int64(st, 1, *param) != SQLITE_OK))
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char **nv = realloc(v, (n + 2) * sizeof *nv);
		const char *text = (const char *)sqlite3_column_text(st, 0);
		if (!nv) {
			r = -ENOMEM;
			break;
		}
		v = nv;
		v[n] = strdup(text ? text : "");
		if (!v[n]) {
			r = -ENOMEM;
			break;
		}
		v[++n] = NULL;
	}
	if (r >= 0 && rc != SQLITE_DONE)
		r = -EIO;
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int store_secret_names(struct store *s, char ***ret, size_t *ret_n)
{
	return query_names(s, "SELECT name FROM secrets ORDER BY name", NULL, ret, ret_n);
}

int store_box_secrets(struct store *s, int64_t box_id, char ***ret, size_t *ret_n)
{
	return query_names(s,
			   "SELECT s.name FROM box_secrets b JOIN secrets s ON s.id = b.secret_id"
			   " WHERE b.box_id = ?1 ORDER BY b.pos",
			   &box_id, ret, ret_n);
}

struct set_args {
	int64_t box_id;
	char *const *names;
	size_t n;
	pd_error *err;
};

static int set_secrets(struct store *s, void *userdata)
{
	struct set_args *a = userdata;
	_cleanup_stmt_ sqlite3_stmt *del = NULL, *ins = NULL;

	if (sqlite3_prepare_v2(s->db, "DELETE FROM box_secrets WHERE box_id = ?1", -1, &del,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(del, 1, a->box_id) != SQLITE_OK || sqlite3_step(del) != SQLITE_DONE)
		return store_sql_error(s, a->err, "set the box's secrets");
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO box_secrets (box_id, secret_id, pos)"
			       " SELECT ?1, id, ?3 FROM secrets WHERE name = ?2",
			       -1, &ins, NULL) != SQLITE_OK)
		return store_sql_error(s, a->err, "set the box's secrets");
	for (size_t i = 0; i < a->n; i++) {
		sqlite3_reset(ins);
		if (sqlite3_bind_int64(ins, 1, a->box_id) != SQLITE_OK ||
		    sqlite3_bind_text(ins, 2, a->names[i], -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_int64(ins, 3, (int64_t)i) != SQLITE_OK)
			return store_sql_error(s, a->err, "set the box's secrets");
		if (sqlite3_step(ins) != SQLITE_DONE) {
			int r = store_sql_error(s, a->err, "set the box's secrets");
			return r == -EEXIST ? pd_error_set(a->err, -EEXIST,
							   "secret %s is named twice", a->names[i])
					    : r;
		}
		if (sqlite3_changes(s->db) == 0)
			return pd_error_set(a->err, -ENOENT, "secret %s is not set", a->names[i]);
	}
	return 0;
}

int store_box_set_secrets(struct store *s, int64_t box_id, char *const *names, size_t n,
			  pd_error *err)
{
	struct set_args a = {.box_id = box_id, .names = names, .n = n, .err = err};

	return store_transaction(s, set_secrets, &a, err);
}
