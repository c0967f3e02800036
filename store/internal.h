/* store-internal.h - what the store's source files share (store.c, and one
 * file per group of tables such as store-volumes.c). */
#pragma once

#include <sqlite3.h>

#include "store/store.h"
#include "common/util.h"

/* Room for every statement text the store prepares through store_stmt(). */
#define STORE_STMTS_MAX 48

struct store {
	sqlite3 *db;
	uint32_t ids_first, ids_count; /* store_set_user_ids() */
	/* Statements prepared once and kept (store_stmt()), by the address of
	 * their text. */
	struct {
		const char *sql;
		sqlite3_stmt *st;
	} stmts[STORE_STMTS_MAX];
	size_t n_stmts;
};

static inline void store_finalizep(sqlite3_stmt **st)
{
	sqlite3_finalize(*st);
}
#define _cleanup_stmt_ _cleanup_(store_finalizep)

/* The statement of sql, a string literal (kept by its address), prepared
 * the first time and kept for the connection's life: the statements run
 * under the engine lock skip the parse. Released with _cleanup_cached_
 * (reset, bindings cleared), never finalized by the caller. Not for a
 * statement whose caller may run it again before releasing it (a foreach
 * whose callback uses the store). -ENOSPC when STORE_STMTS_MAX texts are
 * kept already, -EIO if it does not prepare (the connection's error set). */
int store_stmt(struct store *s, const char *sql, sqlite3_stmt **ret);
static inline void store_stmt_releasep(sqlite3_stmt **st)
{
	if (*st) {
		sqlite3_reset(*st);
		sqlite3_clear_bindings(*st);
	}
}
#define _cleanup_cached_ _cleanup_(store_stmt_releasep)

/* Translates the connection's last sqlite error to -errno with a reason
 * ("what: message"): constraint -EEXIST, full -ENOSPC, busy -EAGAIN. */
int store_sql_error(struct store *s, pd_error *err, const char *what);
/* An UPDATE of one text column: sql binds text to ?1 and the row's id to
 * ?2. Returns the number of rows changed, or -errno with err set. */
int store_update_text(struct store *s, const char *sql, const char *text, int64_t id, pd_error *err,
		      const char *what);
/* Copies a text column (NULL as "") into a fixed buffer, truncating. */
void store_column_text(char *dst, size_t dstsz, sqlite3_stmt *st, int col);
