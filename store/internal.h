/* store-internal.h - what the store's source files share (store.c, and one
 * file per group of tables such as store-volumes.c). */
#pragma once

#include <sqlite3.h>

#include "store/store.h"
#include "common/util.h"

struct store {
	sqlite3 *db;
	uint32_t ids_first, ids_count; /* store_set_user_ids() */
};

static inline void store_finalizep(sqlite3_stmt **st)
{
	sqlite3_finalize(*st);
}
#define _cleanup_stmt_ _cleanup_(store_finalizep)

/* Translates the connection's last sqlite error to -errno with a reason
 * ("what: message"): constraint -EEXIST, full -ENOSPC, busy -EAGAIN. */
int store_sql_error(struct store *s, pd_error *err, const char *what);
/* An UPDATE of one text column: sql binds text to ?1 and the row's id to
 * ?2. Returns the number of rows changed, or -errno with err set. */
int store_update_text(struct store *s, const char *sql, const char *text, int64_t id, pd_error *err,
		      const char *what);
/* Copies a text column (NULL as "") into a fixed buffer, truncating. */
void store_column_text(char *dst, size_t dstsz, sqlite3_stmt *st, int col);
