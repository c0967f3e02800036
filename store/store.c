#include <fcntl.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#include "store/internal.h"

/* Each entry takes the schema from version i to i + 1. Append only: a
 * released migration is never edited. */
static const char *const migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE boxes ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL UNIQUE,"
    "  state TEXT NOT NULL,"
    "  type TEXT NOT NULL,"
    "  image TEXT NOT NULL,"
    "  created INTEGER NOT NULL,"
    "  last_started INTEGER NOT NULL DEFAULT 0,"
    "  error TEXT NOT NULL DEFAULT ''"
    ");",
    /* 1 -> 2: TTL deadlines */
    "ALTER TABLE boxes ADD COLUMN expires INTEGER NOT NULL DEFAULT 0;",
    /* 2 -> 3: exec jobs (their files live in the job's directory) */
    "CREATE TABLE jobs ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  box_id INTEGER NOT NULL REFERENCES boxes(id) ON DELETE CASCADE,"
    "  name TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  UNIQUE (box_id, name)"
    ");",
    /* 3 -> 4: the owner's password and access tokens (hashes only). seq
     * gives each token a number that is never reused (its inode). */
    "CREATE TABLE owner ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  pwhash TEXT,"
    "  setup_hash BLOB,"
    "  created INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE TABLE tokens ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  id TEXT NOT NULL UNIQUE,"
    "  hash BLOB NOT NULL UNIQUE,"
    "  label TEXT NOT NULL DEFAULT '',"
    "  created INTEGER NOT NULL,"
    "  last_used INTEGER"
    ");",
    /* 4 -> 5: frozen overlay layers, each box's layer stack ("7,5,2",
     * newest first), snapshots (they outlive their box: box is a name, not
     * a reference) and the intents of layer actions in flight. */
    "ALTER TABLE boxes ADD COLUMN layers TEXT NOT NULL DEFAULT '';"
    "CREATE TABLE layers ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  created INTEGER NOT NULL,"
    "  size INTEGER NOT NULL DEFAULT -1"
    ");"
    "CREATE TABLE snapshots ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  id TEXT NOT NULL UNIQUE,"
    "  box TEXT NOT NULL,"
    "  box_id INTEGER NOT NULL,"
    "  label TEXT NOT NULL DEFAULT '',"
    "  created INTEGER NOT NULL,"
    "  image TEXT NOT NULL,"
    "  layers TEXT NOT NULL,"
    "  error TEXT NOT NULL DEFAULT ''"
    ");"
    "CREATE TABLE intents ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  kind TEXT NOT NULL,"
    "  box_id INTEGER NOT NULL,"
    "  layer INTEGER NOT NULL DEFAULT 0,"
    "  copy INTEGER NOT NULL DEFAULT 0,"
    "  new_box_id INTEGER NOT NULL DEFAULT 0,"
    "  label TEXT NOT NULL DEFAULT '',"
    "  target TEXT NOT NULL DEFAULT ''"
    ");",
    /* 5 -> 6: named volumes (store-volumes.c) and which boxes they are
     * attached to, in the order each box lists them. state is "ready", or
     * "creating"/"deleting" while an action is in flight. */
    "CREATE TABLE volumes ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL UNIQUE,"
    "  state TEXT NOT NULL,"
    "  created INTEGER NOT NULL"
    ");"
    "CREATE TABLE box_volumes ("
    "  box_id INTEGER NOT NULL REFERENCES boxes(id) ON DELETE CASCADE,"
    "  volume_id INTEGER NOT NULL REFERENCES volumes(id),"
    "  pos INTEGER NOT NULL,"
    "  PRIMARY KEY (box_id, volume_id)"
    ");",
    /* 6 -> 7: networking: each box's egress policy (its canonical text,
     * policy.h) and its IPv4 address while running (0: none). */
    "ALTER TABLE boxes ADD COLUMN policy TEXT NOT NULL DEFAULT 'allow-all';"
    "ALTER TABLE boxes ADD COLUMN net_addr INTEGER NOT NULL DEFAULT 0;",
    /* 7 -> 8: user namespaces: the first host id of each box's range (0: a
     * box made before them, given one at its next start). Never two boxes
     * on one range. */
    "ALTER TABLE boxes ADD COLUMN uid_base INTEGER NOT NULL DEFAULT 0;"
    "CREATE UNIQUE INDEX boxes_uid_base ON boxes (uid_base) WHERE uid_base != 0;",
    /* 8 -> 9: the desktop: whether its session is on (1), kept across the
     * box's stops, and its geometry ("WxH"; '': the default). */
    "ALTER TABLE boxes ADD COLUMN desktop INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE boxes ADD COLUMN geometry TEXT NOT NULL DEFAULT '';",
    /* 9 -> 10: secrets (store/secrets.c): each value sealed with the
     * daemon's key (nonce and ciphertext only, never the clear value),
     * and the secrets each box's jobs get, in the box's order. A secret
     * removed leaves every box's list. */
    "CREATE TABLE secrets ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL UNIQUE,"
    "  nonce BLOB NOT NULL,"
    "  value BLOB NOT NULL,"
    "  set_time INTEGER NOT NULL"
    ");"
    "CREATE TABLE box_secrets ("
    "  box_id INTEGER NOT NULL REFERENCES boxes(id) ON DELETE CASCADE,"
    "  secret_id INTEGER NOT NULL REFERENCES secrets(id) ON DELETE CASCADE,"
    "  pos INTEGER NOT NULL,"
    "  PRIMARY KEY (box_id, secret_id)"
    ");",
    /* 10 -> 11: prompts are jobs of kind "prompt" (exec jobs: "exec"), each
     * kind a name space of its own in a box. The table is rebuilt for the
     * new UNIQUE; ids and the id sequence are kept (ids are inodes). */
    "CREATE TABLE jobs_new ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  box_id INTEGER NOT NULL REFERENCES boxes(id) ON DELETE CASCADE,"
    "  kind TEXT NOT NULL DEFAULT 'exec',"
    "  name TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  UNIQUE (box_id, kind, name)"
    ");"
    "INSERT INTO jobs_new (id, box_id, kind, name, state)"
    "  SELECT id, box_id, 'exec', name, state FROM jobs;"
    "DELETE FROM sqlite_sequence WHERE name = 'jobs_new';"
    "INSERT INTO sqlite_sequence (name, seq)"
    "  SELECT 'jobs_new', seq FROM sqlite_sequence WHERE name = 'jobs';"
    "DROP TABLE jobs;"
    "ALTER TABLE jobs_new RENAME TO jobs;",
    /* 11 -> 12: Docker in the box (engine/docker.c): -1 its image's
     * default, 0 off, 1 on. */
    "ALTER TABLE boxes ADD COLUMN docker INTEGER NOT NULL DEFAULT -1;",
    /* 12 -> 13: the ports published as preview URLs (common/ports.h),
     * their canonical text ('' none). */
    "ALTER TABLE boxes ADD COLUMN ports TEXT NOT NULL DEFAULT '';",
    /* 13 -> 14: tokens that expire: unix seconds, NULL never (every token
     * made before keeps working as it did). */
    "ALTER TABLE tokens ADD COLUMN expires INTEGER;",
};

static int sql_err(sqlite3 *db, pd_error *err, const char *what)
{
	int rc = sqlite3_extended_errcode(db);
	int e;

	switch (rc & 0xff) {
	case SQLITE_CONSTRAINT:
		e = -EEXIST;
		break;
	case SQLITE_FULL:
		e = -ENOSPC;
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		e = -EAGAIN;
		break;
	case SQLITE_READONLY:
	case SQLITE_PERM:
		e = -EPERM;
		break;
	case SQLITE_NOMEM:
		e = -ENOMEM;
		break;
	default:
		e = -EIO;
	}
	return pd_error_set(err, e, "%s: %s", what, sqlite3_errmsg(db));
}

/* Runs one statement whose only parameter ?1 is v (a delete or update by
 * id). err may be NULL. */
int store_stmt(struct store *s, const char *sql, sqlite3_stmt **ret)
{
	for (size_t i = 0; i < s->n_stmts; i++)
		if (s->stmts[i].sql == sql) {
			*ret = s->stmts[i].st;
			return 0;
		}
	if (s->n_stmts == STORE_STMTS_MAX)
		return -ENOSPC;
	if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, ret, NULL) != SQLITE_OK)
		return -EIO;
	s->stmts[s->n_stmts].sql = sql;
	s->stmts[s->n_stmts++].st = *ret;
	return 0;
}

static int exec_int64(struct store *s, const char *sql, int64_t v, pd_error *err, const char *what)
{
	_cleanup_cached_ sqlite3_stmt *st = NULL;

	if (store_stmt(s, sql, &st) < 0 || sqlite3_bind_int64(st, 1, v) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, what);
	return 0;
}

/* An UPDATE of one column: sql binds the value to ?1 (text, or v when text
 * is NULL) and the row's id to ?2. Returns the number of rows changed, or
 * the error. */
static int update_one(struct store *s, const char *sql, const char *text, int64_t v, int64_t id,
		      pd_error *err, const char *what)
{
	_cleanup_cached_ sqlite3_stmt *st = NULL;

	if (store_stmt(s, sql, &st) < 0 ||
	    (text ? sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC)
		  : sqlite3_bind_int64(st, 1, v)) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, id) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, what);
	return sqlite3_changes(s->db);
}

int store_update_text(struct store *s, const char *sql, const char *text, int64_t id, pd_error *err,
		      const char *what)
{
	return update_one(s, sql, text ? text : "", 0, id, err, what);
}

static int update_int64(struct store *s, const char *sql, int64_t v, int64_t id, pd_error *err,
			const char *what)
{
	return update_one(s, sql, NULL, v, id, err, what);
}

static int exec_sql(sqlite3 *db, const char *sql, pd_error *err, const char *what)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sql_err(db, err, what);
	return 0;
}

int store_schema_version(struct store *s)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	return sqlite3_column_int(st, 0);
}

static int migrate(struct store *s, pd_error *err)
{
	int v = store_schema_version(s);

	if (v < 0)
		return pd_error_set(err, v, "cannot read schema version");
	if (v > (int)ELEMENTSOF(migrations))
		return pd_error_set(err, -EPROTO,
				    "database schema version %d is newer than this paddockd (%d)",
				    v, (int)ELEMENTSOF(migrations));
	for (; v < (int)ELEMENTSOF(migrations); v++) {
		char bump[64];
		int r;

		r = exec_sql(s->db, "BEGIN IMMEDIATE", err, "begin migration");
		if (r < 0)
			return r;
		snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
		r = exec_sql(s->db, migrations[v], err, "migrate");
		if (r >= 0)
			r = exec_sql(s->db, bump, err, "set schema version");
		if (r >= 0)
			r = exec_sql(s->db, "COMMIT", err, "commit migration");
		if (r < 0) {
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
			return pd_error_prefix(err, "schema %d -> %d", v, v + 1);
		}
	}
	return 0;
}

/* The database holds the owner's password hash and the tokens' hashes: it
 * and its -wal and -shm are 0600 from their first byte, whatever the umask.
 * sqlite gives -wal and -shm the mode of the database file, so the file is
 * made here, 0600, before sqlite opens it; the looser modes of an older
 * install are fixed. Links are not followed.
 *
 * Another connection of this process may have these files open (the auth
 * module opens the database a second time): closing a descriptor of them
 * would drop that connection's POSIX locks, and with them sqlite's
 * guarantees. Only a new file is opened for real; existing ones through
 * O_PATH, whose close leaves locks alone. */
static int make_private(const char *path, bool create, pd_error *err)
{
	char proc[64];
	struct stat st;
	int fd, r = 0;

	if (create) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
			  0600);
		if (fd >= 0)
			close(fd); /* new: no one holds a lock on it */
		else if (errno != EEXIST)
			return pd_error_set(err, -errno, "cannot create database %s: %s", path,
					    strerror(errno));
	}
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && !create
			   ? 0
			   : pd_error_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = S_ISLNK(st.st_mode) ? -ELOOP : -EINVAL;
	else if ((st.st_mode & 07777) != 0600) {
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		if (chmod(proc, 0600) < 0)
			r = -errno;
	}
	close(fd);
	return r < 0 ? pd_error_set(err, r, "cannot make %s private: %s", path, strerror(-r)) : 0;
}

static int secure_files(const char *path, pd_error *err)
{
	static const char *const suffixes[] = {"-wal", "-shm", "-journal"};
	char p[4096];
	int r;

	if (strcmp(path, ":memory:") == 0)
		return 0;
	r = make_private(path, /* create= */ true, err);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(suffixes); i++) {
		snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
		r = make_private(p, /* create= */ false, err);
	}
	return r;
}

/* One connection: flags for sqlite3_open_v2(), then pragmas, then (if
 * migrate_it) the migrations. */
static int open_db(const char *path, int flags, const char *pragmas, bool migrate_it,
		   struct store **ret, pd_error *err)
{
	struct store *s = calloc(1, sizeof *s);
	int r;

	if (!s)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if (sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		r = !(flags & SQLITE_OPEN_CREATE) && sqlite3_errcode(s->db) == SQLITE_CANTOPEN
			? -ENOENT
			: -EIO;
		r = pd_error_set(err, r, "cannot open database %s: %s", path,
				 s->db ? sqlite3_errmsg(s->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 5000);
	r = exec_sql(s->db, pragmas, err, "configure database");
	if (r >= 0 && migrate_it)
		r = migrate(s, err);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	store_close(s);
	return r;
}

int store_open(const char *path, struct store **ret, pd_error *err)
{
	int r = secure_files(path, err);

	if (r < 0)
		return r;
	return open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
		       "PRAGMA journal_mode = WAL;"
		       "PRAGMA synchronous = NORMAL;"
		       "PRAGMA foreign_keys = ON;",
		       /* migrate_it= */ true, ret, err);
}

int store_open_reader(const char *path, struct store **ret, pd_error *err)
{
	return open_db(path, SQLITE_OPEN_READWRITE, "PRAGMA query_only = ON;",
		       /* migrate_it= */ false, ret, err);
}

int store_read_begin(struct store *s)
{
	/* A deferred BEGIN takes its snapshot at the first read: read once. */
	if (sqlite3_exec(s->db, "BEGIN; SELECT 1 FROM sqlite_schema LIMIT 1;", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return -EIO;
	}
	return 0;
}

void store_read_end(struct store *s)
{
	if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int store_checkpoint(struct store *s)
{
	int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);

	return rc == SQLITE_OK ? 0 : rc == SQLITE_BUSY ? -EAGAIN : -EIO;
}

void store_set_autocheckpoint(struct store *s, int pages)
{
	sqlite3_wal_autocheckpoint(s->db, pages);
}

struct store *store_close(struct store *s)
{
	if (s) {
		for (size_t i = 0; i < s->n_stmts; i++)
			sqlite3_finalize(s->stmts[i].st);
		sqlite3_close(s->db);
		free(s);
	}
	return NULL;
}

static void copy_text(char *dst, size_t dstsz, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	snprintf(dst, dstsz, "%s", t ? (const char *)t : "");
}

static int bind_row(sqlite3_stmt *st, const struct box_row *row)
{
	if (sqlite3_bind_text(st, 1, row->name, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, row->state, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, row->type, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 4, row->image, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 5, row->created) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 6, row->last_started) != SQLITE_OK ||
	    sqlite3_bind_text(st, 7, row->error, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 9, row->expires) != SQLITE_OK ||
	    sqlite3_bind_text(st, 10, row->layers, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 11, row->net_addr) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 12, row->uid_base) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 13, row->desktop) != SQLITE_OK ||
	    sqlite3_bind_text(st, 14, row->geometry, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 15, row->docker) != SQLITE_OK)
		return -EIO;
	return 0;
}

void store_set_user_ids(struct store *s, uint32_t first, uint32_t count)
{
	s->ids_first = first;
	s->ids_count = count;
}

int store_box_alloc_ids(struct store *s, int64_t *ret, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int64_t next = s->ids_first, end = (int64_t)s->ids_first + s->ids_count;
	int rc;

	if (!s->ids_count)
		return pd_error_set(err, -EINVAL, "no user ids are configured for boxes");
	/* The lowest free range: the ranges in use, in order, up to a gap. */
	if (sqlite3_prepare_v2(s->db,
			       "SELECT uid_base FROM boxes WHERE uid_base >= ?1 ORDER BY uid_base",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, next) != SQLITE_OK)
		return sql_err(s->db, err, "allocate user ids");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t used = sqlite3_column_int64(st, 0);
		if (used >= next + STORE_BOX_IDS)
			break;
		if (used + STORE_BOX_IDS > next)
			next = used + STORE_BOX_IDS;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sql_err(s->db, err, "allocate user ids");
	if (next + STORE_BOX_IDS > end)
		return pd_error_set(err, -ENOSPC,
				    "every range of user ids is taken (%u boxes): widen user_ids "
				    "in the configuration or delete boxes",
				    (unsigned)(s->ids_count / STORE_BOX_IDS));
	*ret = next;
	return 0;
}

int store_box_insert(struct store *s, struct box_row *row, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (row->uid_base < 0) {
		int r = store_box_alloc_ids(s, &row->uid_base, err);
		if (r < 0)
			return r;
	}
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO boxes (name, state, type, image, created, last_started,"
			       " error, expires, layers, net_addr, uid_base, desktop, geometry, docker)"
			       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
			       -1, &st, NULL) != SQLITE_OK ||
	    bind_row(st, row) < 0)
		return sql_err(s->db, err, "insert box");
	if (sqlite3_step(st) != SQLITE_DONE) {
		int r = sql_err(s->db, err, "insert box");
		if (r == -EEXIST)
			return pd_error_set(err, -EEXIST, "box %s already exists", row->name);
		return r;
	}
	row->id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_box_update(struct store *s, const struct box_row *row, pd_error *err)
{
	static const char sql[] =
	    "UPDATE boxes SET name = ?1, state = ?2, type = ?3, image = ?4,"
	    " created = ?5, last_started = ?6, error = ?7, expires = ?9, layers = ?10,"
	    " net_addr = ?11, uid_base = ?12, desktop = ?13, geometry = ?14, docker = ?15"
	    " WHERE id = ?8";
	_cleanup_cached_ sqlite3_stmt *st = NULL;

	if (store_stmt(s, sql, &st) < 0 || bind_row(st, row) < 0 ||
	    sqlite3_bind_int64(st, 8, row->id) != SQLITE_OK)
		return sql_err(s->db, err, "update box");
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "update box");
	if (sqlite3_changes(s->db) != 1)
		return pd_error_set(err, -ENOENT, "box %s is not in the database", row->name);
	return 0;
}

int store_box_delete(struct store *s, int64_t id, pd_error *err)
{
	return exec_int64(s, "DELETE FROM boxes WHERE id = ?1", id, err, "delete box");
}

#define BOX_COLUMNS                                                                                \
	"id, name, state, type, image, created, last_started, error, expires, layers, net_addr,"   \
	" uid_base, desktop, geometry, docker"

static void box_from(sqlite3_stmt *st, struct box_row *row)
{
	memset(row, 0, sizeof *row);
	row->id = sqlite3_column_int64(st, 0);
	copy_text(row->name, sizeof row->name, st, 1);
	copy_text(row->state, sizeof row->state, st, 2);
	copy_text(row->type, sizeof row->type, st, 3);
	copy_text(row->image, sizeof row->image, st, 4);
	row->created = sqlite3_column_int64(st, 5);
	row->last_started = sqlite3_column_int64(st, 6);
	copy_text(row->error, sizeof row->error, st, 7);
	row->expires = sqlite3_column_int64(st, 8);
	copy_text(row->layers, sizeof row->layers, st, 9);
	row->net_addr = sqlite3_column_int64(st, 10);
	row->uid_base = sqlite3_column_int64(st, 11);
	row->desktop = sqlite3_column_int64(st, 12);
	copy_text(row->geometry, sizeof row->geometry, st, 13);
	row->docker = sqlite3_column_int64(st, 14);
}

/* One text column of a box, malloc'd. */
static int box_text_get(struct store *s, const char *sql, int64_t id, char **ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	const unsigned char *t;
	char *copy;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
		return -EIO;
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		break;
	case SQLITE_DONE:
		return -ENOENT;
	default:
		return -EIO;
	}
	t = sqlite3_column_text(st, 0);
	copy = strdup(t ? (const char *)t : "");
	if (!copy)
		return -ENOMEM;
	*ret = copy;
	return 0;
}

int store_box_policy_get(struct store *s, int64_t id, char **ret)
{
	return box_text_get(s, "SELECT policy FROM boxes WHERE id = ?1", id, ret);
}

int store_box_ports_get(struct store *s, int64_t id, char **ret)
{
	return box_text_get(s, "SELECT ports FROM boxes WHERE id = ?1", id, ret);
}

int store_box_ports_set(struct store *s, int64_t id, const char *text, pd_error *err)
{
	int r = store_update_text(s, "UPDATE boxes SET ports = ?1 WHERE id = ?2", text, id, err,
				  "save ports");

	if (r == 0)
		return pd_error_set(err, -ENOENT, "box %lld is not in the database", (long long)id);
	return r < 0 ? r : 0;
}

int store_box_policy_set(struct store *s, int64_t id, const char *text, pd_error *err)
{
	int r = store_update_text(s, "UPDATE boxes SET policy = ?1 WHERE id = ?2", text, id, err,
				  "save policy");

	if (r == 0)
		return pd_error_set(err, -ENOENT, "box %lld is not in the database", (long long)id);
	return r < 0 ? r : 0;
}

int store_box_copy_settings(struct store *s, int64_t from, int64_t to, pd_error *err)
{
	int r = update_int64(s,
			     "UPDATE boxes SET policy = (SELECT policy FROM boxes WHERE id = ?1),"
			     " ports = (SELECT ports FROM boxes WHERE id = ?1) WHERE id = ?2",
			     from, to, err, "copy policy and ports");

	if (r == 0)
		return pd_error_set(err, -ENOENT, "box %lld is not in the database", (long long)to);
	if (r > 0)
		r = update_int64(s,
				 "INSERT INTO box_volumes (box_id, volume_id, pos)"
				 " SELECT ?2, volume_id, pos FROM box_volumes WHERE box_id = ?1",
				 from, to, err, "copy volumes");
	return r < 0 ? r : 0;
}

int store_box_get(struct store *s, int64_t id, struct box_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT " BOX_COLUMNS " FROM boxes WHERE id = ?1", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
	box_from(st, ret);
	return 0;
}

int store_box_foreach(struct store *s, int (*fn)(const struct box_row *row, void *userdata),
		      void *userdata)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT " BOX_COLUMNS " FROM boxes ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct box_row row;
		int r;

		box_from(st, &row);
		r = fn(&row, userdata);
		if (r < 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int store_transaction(struct store *s, int (*fn)(struct store *s, void *userdata), void *userdata,
		      pd_error *err)
{
	int r;

	r = exec_sql(s->db, "BEGIN IMMEDIATE", err, "begin");
	if (r < 0)
		return r;
	r = fn(s, userdata);
	if (r < 0) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return r;
	}
	return exec_sql(s->db, "COMMIT", err, "commit");
}

int store_job_insert(struct store *s, struct job_row *row, pd_error *err)
{
	_cleanup_cached_ sqlite3_stmt *st = NULL;

	if (store_stmt(s, "INSERT INTO jobs (box_id, name, state, kind) VALUES (?1, ?2, ?3, ?4)",
		       &st) < 0 ||
	    sqlite3_bind_int64(st, 1, row->box_id) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, row->name, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, row->state, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 4, row->kind[0] ? row->kind : "exec", -1, SQLITE_STATIC) !=
		SQLITE_OK)
		return sql_err(s->db, err, "insert job");
	if (sqlite3_step(st) != SQLITE_DONE) {
		int r = sql_err(s->db, err, "insert job");
		if (r == -EEXIST)
			return pd_error_set(err, -EEXIST, "job %s already exists", row->name);
		return r;
	}
	row->id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_job_set_state(struct store *s, int64_t id, const char *state, pd_error *err)
{
	int r = store_update_text(s, "UPDATE jobs SET state = ?1 WHERE id = ?2", state, id, err,
				  "update job");

	return r < 0 ? r : 0;
}

int store_job_delete(struct store *s, int64_t id, pd_error *err)
{
	return exec_int64(s, "DELETE FROM jobs WHERE id = ?1", id, err, "delete job");
}

int store_job_foreach(struct store *s, int (*fn)(const struct job_row *row, void *userdata),
		      void *userdata)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT id, box_id, name, state, kind FROM jobs ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct job_row row = {0};
		int r;

		row.id = sqlite3_column_int64(st, 0);
		row.box_id = sqlite3_column_int64(st, 1);
		copy_text(row.name, sizeof row.name, st, 2);
		copy_text(row.state, sizeof row.state, st, 3);
		copy_text(row.kind, sizeof row.kind, st, 4);
		r = fn(&row, userdata);
		if (r < 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* --- owner and tokens ------------------------------------------------------ */

static bool copy_hash(uint8_t dst[STORE_HASH_LEN], sqlite3_stmt *st, int col)
{
	const void *b = sqlite3_column_blob(st, col);

	if (!b || sqlite3_column_bytes(st, col) != STORE_HASH_LEN)
		return false;
	memcpy(dst, b, STORE_HASH_LEN);
	return true;
}

int store_owner_get(struct store *s, struct owner_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	struct owner_row row = {0};
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT pwhash, setup_hash, created FROM owner WHERE id = 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
	copy_text(row.pwhash, sizeof row.pwhash, st, 0);
	row.has_setup = copy_hash(row.setup_hash, st, 1);
	row.created = sqlite3_column_int64(st, 2);
	*ret = row;
	return 0;
}

int store_owner_set_setup(struct store *s, const uint8_t hash[STORE_HASH_LEN], pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO owner (id, pwhash, setup_hash) VALUES (1, NULL, ?1)"
			       " ON CONFLICT (id) DO UPDATE SET setup_hash = excluded.setup_hash"
			       " WHERE pwhash IS NULL",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 1, hash, STORE_HASH_LEN, SQLITE_STATIC) != SQLITE_OK)
		return sql_err(s->db, err, "record setup secret");
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "record setup secret");
	if (sqlite3_changes(s->db) != 1)
		return pd_error_set(err, -EEXIST, "the owner's password is already set");
	return 0;
}

int store_owner_set_password(struct store *s, const uint8_t setup_hash[STORE_HASH_LEN],
			     const char *pwhash, int64_t now, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db,
			       "UPDATE owner SET pwhash = ?1, setup_hash = NULL, created = ?2"
			       " WHERE id = 1 AND pwhash IS NULL AND setup_hash = ?3",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, pwhash, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, now) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 3, setup_hash, STORE_HASH_LEN, SQLITE_STATIC) != SQLITE_OK)
		return sql_err(s->db, err, "set password");
	if (sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "set password");
	if (sqlite3_changes(s->db) != 1)
		return pd_error_set(err, -ENOENT, "the setup secret is wrong or was already used");
	return 0;
}

int store_token_insert(struct store *s, struct token_row *row, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO tokens (id, hash, label, created, last_used, expires)"
			       " VALUES (?1, ?2, ?3, ?4, NULLIF(?5, 0), NULLIF(?6, 0))",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, row->id, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 2, row->hash, STORE_HASH_LEN, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, row->label, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 4, row->created) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 5, row->last_used) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 6, row->expires) != SQLITE_OK)
		return sql_err(s->db, err, "insert token");
	if (sqlite3_step(st) != SQLITE_DONE) {
		int r = sql_err(s->db, err, "insert token");
		if (r == -EEXIST)
			return pd_error_set(err, -EEXIST, "token %s already exists", row->id);
		return r;
	}
	row->seq = sqlite3_last_insert_rowid(s->db);
	return 0;
}

#define TOKEN_COLUMNS "seq, id, hash, label, created, coalesce(last_used, 0), coalesce(expires, 0)"

static int token_from(sqlite3_stmt *st, struct token_row *row)
{
	memset(row, 0, sizeof *row);
	row->seq = sqlite3_column_int64(st, 0);
	copy_text(row->id, sizeof row->id, st, 1);
	if (!copy_hash(row->hash, st, 2))
		return -EIO;
	copy_text(row->label, sizeof row->label, st, 3);
	row->created = sqlite3_column_int64(st, 4);
	row->last_used = sqlite3_column_int64(st, 5);
	row->expires = sqlite3_column_int64(st, 6);
	return 0;
}

static int token_get(sqlite3_stmt *st, struct token_row *ret)
{
	struct token_row row;
	int rc = sqlite3_step(st), r;

	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
	r = token_from(st, &row);
	if (r < 0)
		return r;
	*ret = row;
	return 0;
}

int store_token_get(struct store *s, const char *id, struct token_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "SELECT " TOKEN_COLUMNS " FROM tokens WHERE id = ?1", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC) != SQLITE_OK)
		return -EIO;
	return token_get(st, ret);
}

int store_token_get_seq(struct store *s, int64_t seq, struct token_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "SELECT " TOKEN_COLUMNS " FROM tokens WHERE seq = ?1", -1,
			       &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, seq) != SQLITE_OK)
		return -EIO;
	return token_get(st, ret);
}

int store_token_set_last_used(struct store *s, const char *id, int64_t when, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "UPDATE tokens SET last_used = ?1 WHERE id = ?2", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, when) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "update token");
	return 0;
}

int store_token_delete(struct store *s, const char *id, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "DELETE FROM tokens WHERE id = ?1", -1, &st, NULL) !=
		SQLITE_OK ||
	    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "delete token");
	if (sqlite3_changes(s->db) != 1)
		return pd_error_set(err, -ENOENT, "no token %s", id);
	return 0;
}

int store_token_foreach(struct store *s, int (*fn)(const struct token_row *row, void *userdata),
			void *userdata)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT " TOKEN_COLUMNS " FROM tokens ORDER BY seq", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct token_row row;
		int r = token_from(st, &row);
		if (r >= 0)
			r = fn(&row, userdata);
		if (r < 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int store_token_next_expiry(struct store *s, int64_t after, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT coalesce(min(expires), 0) FROM tokens WHERE expires > ?1",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, after) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	*ret = sqlite3_column_int64(st, 0);
	return 0;
}

int store_token_delete_expired(struct store *s, int64_t before, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "DELETE FROM tokens WHERE expires <= ?1", -1, &st, NULL) !=
		SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, before) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "delete expired tokens");
	return sqlite3_changes(s->db);
}

/* --- layers, snapshots, intents ---------------------------------------------- */

int store_layer_insert(struct store *s, int64_t created, int64_t *ret_id, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "INSERT INTO layers (created) VALUES (?1)", -1, &st, NULL) !=
		SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, created) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "insert layer");
	*ret_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_layer_delete(struct store *s, int64_t id)
{
	return exec_int64(s, "DELETE FROM layers WHERE id = ?1", id, NULL, "delete layer");
}

int store_layer_get_size(struct store *s, int64_t id, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT size FROM layers WHERE id = ?1", -1, &st, NULL) !=
		SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, id) != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
	*ret = sqlite3_column_int64(st, 0);
	return 0;
}

int store_layer_set_size(struct store *s, int64_t id, int64_t size)
{
	int r = update_int64(s, "UPDATE layers SET size = ?1 WHERE id = ?2", size, id, NULL,
			     "update layer");

	return r < 0 ? r : 0;
}

int store_layer_ids(struct store *s, int64_t **ret, size_t *ret_n)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	_cleanup_free_ int64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT id FROM layers ORDER BY id", -1, &st, NULL) !=
	    SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			int64_t *nv = realloc(v, nc * sizeof *nv);
			if (!nv)
				return -ENOMEM;
			v = nv;
			cap = nc;
		}
		v[n++] = sqlite3_column_int64(st, 0);
	}
	if (rc != SQLITE_DONE)
		return -EIO;
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

int store_layer_referenced(struct store *s, int64_t id)
{
	_cleanup_cached_ sqlite3_stmt *st = NULL;

	/* A stack is "7,5,2": ",7,5,2," holds ",5," exactly when 5 is in it. */
	if (store_stmt(s,
		       "SELECT EXISTS (SELECT 1 FROM boxes"
		       "  WHERE instr(',' || layers || ',', ',' || ?1 || ',') > 0)"
		       " OR EXISTS (SELECT 1 FROM snapshots"
		       "  WHERE instr(',' || layers || ',', ',' || ?1 || ',') > 0)"
		       " OR EXISTS (SELECT 1 FROM intents WHERE layer = ?1)",
		       &st) < 0 ||
	    sqlite3_bind_int64(st, 1, id) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	return sqlite3_column_int(st, 0) ? 1 : 0;
}

#define SNAPSHOT_COLUMNS "seq, id, box, label, created, image, layers, error, box_id"

static void snapshot_from(sqlite3_stmt *st, struct snapshot_row *row)
{
	memset(row, 0, sizeof *row);
	row->seq = sqlite3_column_int64(st, 0);
	copy_text(row->id, sizeof row->id, st, 1);
	copy_text(row->box, sizeof row->box, st, 2);
	copy_text(row->label, sizeof row->label, st, 3);
	row->created = sqlite3_column_int64(st, 4);
	copy_text(row->image, sizeof row->image, st, 5);
	copy_text(row->layers, sizeof row->layers, st, 6);
	copy_text(row->error, sizeof row->error, st, 7);
	row->box_id = sqlite3_column_int64(st, 8);
}

int store_snapshot_insert(struct store *s, struct snapshot_row *row, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL, *up = NULL;
	char tmp[64], id[NAME_MAX_LEN + 1];
	int64_t seq;
	int r;

	/* The id needs the seq: insert under a unique placeholder, then name
	 * it (the caller's transaction makes the two steps one). */
	snprintf(tmp, sizeof tmp, "-pending-%llu", (unsigned long long)now_usec());
	if (sqlite3_prepare_v2(
		s->db,
		"INSERT INTO snapshots (id, box, label, created, image, layers, error,"
		" box_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		-1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, tmp, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, row->box, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, row->label, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 4, row->created) != SQLITE_OK ||
	    sqlite3_bind_text(st, 5, row->image, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 6, row->layers, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 7, row->error, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 8, row->box_id) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "insert snapshot");
	seq = sqlite3_last_insert_rowid(s->db);
	r = layers_snapshot_id(row->box, seq, id, sizeof id);
	if (r < 0)
		return pd_error_set(err, r, "cannot name a snapshot of %s", row->box);
	if (sqlite3_prepare_v2(s->db, "UPDATE snapshots SET id = ?1 WHERE seq = ?2", -1, &up,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_text(up, 1, id, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(up, 2, seq) != SQLITE_OK || sqlite3_step(up) != SQLITE_DONE)
		return sql_err(s->db, err, "name snapshot");
	row->seq = seq;
	snprintf(row->id, sizeof row->id, "%s", id);
	return 0;
}

static int snapshot_get(sqlite3_stmt *st, struct snapshot_row *ret)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return -EIO;
	snapshot_from(st, ret);
	return 0;
}

int store_snapshot_get(struct store *s, const char *id, struct snapshot_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "SELECT " SNAPSHOT_COLUMNS " FROM snapshots WHERE id = ?1",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC) != SQLITE_OK)
		return -EIO;
	return snapshot_get(st, ret);
}

int store_snapshot_get_seq(struct store *s, int64_t seq, struct snapshot_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "SELECT " SNAPSHOT_COLUMNS " FROM snapshots WHERE seq = ?1",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, seq) != SQLITE_OK)
		return -EIO;
	return snapshot_get(st, ret);
}

int store_snapshot_update(struct store *s, const struct snapshot_row *row, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db, "UPDATE snapshots SET label = ?1, error = ?2 WHERE seq = ?3",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, row->label, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, row->error, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 3, row->seq) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "update snapshot");
	if (sqlite3_changes(s->db) != 1)
		return pd_error_set(err, -ENOENT, "no snapshot %s", row->id);
	return 0;
}

int store_snapshot_delete(struct store *s, int64_t seq, pd_error *err)
{
	return exec_int64(s, "DELETE FROM snapshots WHERE seq = ?1", seq, err, "delete snapshot");
}

int store_snapshot_foreach(struct store *s, int64_t box_id,
			   int (*fn)(const struct snapshot_row *row, void *userdata),
			   void *userdata)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db,
			       box_id ? "SELECT " SNAPSHOT_COLUMNS
					" FROM snapshots WHERE box_id = ?1 ORDER BY seq"
				      : "SELECT " SNAPSHOT_COLUMNS " FROM snapshots ORDER BY seq",
			       -1, &st, NULL) != SQLITE_OK ||
	    (box_id && sqlite3_bind_int64(st, 1, box_id) != SQLITE_OK))
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct snapshot_row row;
		int r;

		snapshot_from(st, &row);
		r = fn(&row, userdata);
		if (r < 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int store_intent_insert(struct store *s, struct intent_row *row, pd_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO intents (kind, box_id, layer, copy, new_box_id, label,"
			       " target) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, row->kind, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, row->box_id) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 3, row->layer) != SQLITE_OK ||
	    sqlite3_bind_int(st, 4, row->copy) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 5, row->new_box_id) != SQLITE_OK ||
	    sqlite3_bind_text(st, 6, row->label, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 7, row->target, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		return sql_err(s->db, err, "record intent");
	row->id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_intent_set_copy(struct store *s, int64_t id, bool copy, pd_error *err)
{
	int r = update_int64(s, "UPDATE intents SET copy = ?1 WHERE id = ?2", copy, id, err,
			     "update intent");

	return r < 0 ? r : 0;
}

int store_intent_delete(struct store *s, int64_t id, pd_error *err)
{
	return exec_int64(s, "DELETE FROM intents WHERE id = ?1", id, err, "delete intent");
}

int store_intent_foreach(struct store *s, int (*fn)(const struct intent_row *row, void *userdata),
			 void *userdata)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT id, kind, box_id, layer, copy, new_box_id, label, target"
			       " FROM intents ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct intent_row row = {0};
		int r;

		row.id = sqlite3_column_int64(st, 0);
		copy_text(row.kind, sizeof row.kind, st, 1);
		row.box_id = sqlite3_column_int64(st, 2);
		row.layer = sqlite3_column_int64(st, 3);
		row.copy = sqlite3_column_int(st, 4) != 0;
		row.new_box_id = sqlite3_column_int64(st, 5);
		copy_text(row.label, sizeof row.label, st, 6);
		copy_text(row.target, sizeof row.target, st, 7);
		r = fn(&row, userdata);
		if (r < 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int store_sql_error(struct store *s, pd_error *err, const char *what)
{
	return sql_err(s->db, err, what);
}

void store_column_text(char *dst, size_t dstsz, sqlite3_stmt *st, int col)
{
	copy_text(dst, dstsz, st, col);
}
