/* check_store.c - the state store: WAL and schema version on open, private
 * files, refusal of a newer schema, box rows round-trip, constraint errors,
 * transactions. */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-tap.h"
#include "store/store.h"

/* Each test runs in its own process (fork mode) with a fresh directory. */
static char tmpdir[64];
static char db_path[128];
static struct store *st;

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(db_path, sizeof(db_path), "%s/paddock.db", tmpdir);
	st = NULL;
}

static void teardown(void)
{
	st = store_close(st);
	rm_rf(tmpdir);
}

static void open_store(void)
{
	pd_error err = {0};
	int r = store_open(db_path, &st, &err);
	ck_assert_msg(r == 0, "store_open: %d %s", r, err.msg);
	ck_assert_ptr_nonnull(st);
}

/* A second, independent connection to the same file. */
static sqlite3 *raw_open(void)
{
	sqlite3 *db = NULL;
	ck_assert_int_eq(
	    sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
	    SQLITE_OK);
	return db;
}

/* The first column of the first row of sql, as text (static buffer). */
static const char *raw_query(sqlite3 *db, const char *sql)
{
	static char out[256];
	sqlite3_stmt *stmt = NULL;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
	snprintf(out, sizeof(out), "%s", (const char *)sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	return out;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
}

static struct box_row make_row(const char *name)
{
	struct box_row row;

	memset(&row, 0, sizeof(row));
	snprintf(row.name, sizeof(row.name), "%s", name);
	snprintf(row.state, sizeof(row.state), "created");
	snprintf(row.type, sizeof(row.type), "small");
	snprintf(row.image, sizeof(row.image), "debian");
	row.created = 1700000000;
	row.last_started = 0;
	return row;
}

static void insert(struct box_row *row)
{
	pd_error err = {0};
	int r = store_box_insert(st, row, &err);
	ck_assert_msg(r == 0, "insert %s: %d %s", row->name, r, err.msg);
}

/* Collects every row foreach gives. */
struct rows {
	struct box_row v[16];
	size_t n;
};

static int collect(const struct box_row *row, void *userdata)
{
	struct rows *rs = userdata;
	ck_assert_uint_lt(rs->n, ELEMENTSOF(rs->v));
	rs->v[rs->n++] = *row;
	return 0;
}

static struct rows all_rows(void)
{
	struct rows rs;

	memset(&rs, 0, sizeof(rs));
	ck_assert_int_eq(store_box_foreach(st, collect, &rs), 0);
	return rs;
}

static void assert_row_eq(const struct box_row *a, const struct box_row *b)
{
	ck_assert_int_eq(a->id, b->id);
	ck_assert_str_eq(a->name, b->name);
	ck_assert_str_eq(a->state, b->state);
	ck_assert_str_eq(a->type, b->type);
	ck_assert_str_eq(a->image, b->image);
	ck_assert_int_eq(a->created, b->created);
	ck_assert_int_eq(a->last_started, b->last_started);
	ck_assert_str_eq(a->error, b->error);
}

/* ---- core ---- */

START_TEST(test_open_creates_wal_db)
{
	struct stat s;
	sqlite3 *db;

	ck_assert_int_ne(stat(db_path, &s), 0);
	open_store();
	ck_assert_int_eq(stat(db_path, &s), 0);

	db = raw_open();
	ck_assert_str_eq(raw_query(db, "PRAGMA journal_mode"), "wal");
	sqlite3_close(db);
}
END_TEST

static unsigned mode_of(const char *suffix)
{
	char p[256];
	struct stat s;

	snprintf(p, sizeof(p), "%s%s", db_path, suffix);
	ck_assert_msg(lstat(p, &s) == 0, "%s: %s", p, strerror(errno));
	return s.st_mode & 07777;
}

/* The database and its -wal and -shm hold password hashes: 0600 from the
 * start (not chmod'ed once written), and an older install's 0644 fixed. */
START_TEST(test_files_private)
{
	struct box_row a = make_row("web");
	char p[256];

	umask(022);
	open_store();
	insert(&a);
	ck_assert_uint_eq(mode_of(""), 0600);
	ck_assert_uint_eq(mode_of("-wal"), 0600);
	ck_assert_uint_eq(mode_of("-shm"), 0600);
	st = store_close(st);

	/* As an older daemon left them (the last close removed -wal). */
	ck_assert_int_eq(chmod(db_path, 0644), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s%s", db_path, i ? "-shm" : "-wal");
		int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fchmod(fd, 0644), 0);
		close(fd);
	}
	open_store();
	ck_assert_uint_eq(mode_of(""), 0600);
	ck_assert_uint_eq(mode_of("-wal"), 0600);
	ck_assert_uint_eq(mode_of("-shm"), 0600);
	ck_assert_uint_eq(all_rows().n, 1);
}
END_TEST

/* A second connection of the same process (the auth module's) must not
 * break the first one's locks: if it did, a third connection would take
 * itself for the last one and remove the -wal on close. */
START_TEST(test_second_open_keeps_locks)
{
	struct box_row a = make_row("web");
	struct store *second = NULL;
	pd_error err = {0};
	struct stat s;
	char wal[256];

	open_store();
	insert(&a);
	ck_assert_int_eq(store_open(db_path, &second, &err), 0);
	/* Another program: locks are per process, and a forked copy of this
	 * one would believe it holds this one's (sqlite counts them itself). */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execlp("python3", "python3", "-c",
		       "import sqlite3, sys\n"
		       "c = sqlite3.connect(sys.argv[1])\n"
		       "c.execute('SELECT count(*) FROM boxes').fetchall()\n"
		       "c.close()\n",
		       db_path, (char *)NULL);
		_exit(127);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "python3 failed: %d", status);
	snprintf(wal, sizeof(wal), "%s-wal", db_path);
	ck_assert_msg(stat(wal, &s) == 0, "the -wal was removed under an open connection");
	store_close(second);
	ck_assert_uint_eq(all_rows().n, 1);
}
END_TEST

/* A link in the database's place is not followed. */
START_TEST(test_link_refused)
{
	char target[256];
	struct stat s;
	pd_error err = {0};
	struct store *out = NULL;

	snprintf(target, sizeof(target), "%s/elsewhere", tmpdir);
	ck_assert_int_eq(symlink(target, db_path), 0);
	ck_assert_int_eq(store_open(db_path, &out, &err), -ELOOP);
	ck_assert_ptr_null(out);
	ck_assert_int_ne(stat(target, &s), 0);
}
END_TEST

START_TEST(test_schema_version)
{
	char want[16];
	sqlite3 *db;

	open_store();
	ck_assert_int_eq(store_schema_version(st), STORE_SCHEMA_VERSION);

	db = raw_open();
	snprintf(want, sizeof(want), "%d", STORE_SCHEMA_VERSION);
	ck_assert_str_eq(raw_query(db, "PRAGMA user_version"), want);
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM boxes"), "0");
	sqlite3_close(db);
}
END_TEST

START_TEST(test_reopen_idempotent)
{
	struct box_row row = make_row("web");
	struct rows rs;

	open_store();
	insert(&row);
	st = store_close(st);

	/* Opening again migrates nothing and loses nothing. */
	for (int i = 0; i < 3; i++) {
		open_store();
		ck_assert_int_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
		rs = all_rows();
		ck_assert_uint_eq(rs.n, 1);
		assert_row_eq(&rs.v[0], &row);
		st = store_close(st);
	}
}
END_TEST

START_TEST(test_insert_foreach)
{
	struct box_row a = make_row("alpha"), b = make_row("beta"), c = make_row("gamma");
	struct rows rs;

	open_store();
	b.last_started = 1700000100;
	snprintf(b.state, sizeof(b.state), "stopped");
	snprintf(b.error, sizeof(b.error), "2026-01-01T00:00:00Z state: no (EIO)");
	snprintf(c.type, sizeof(c.type), "large");
	snprintf(c.image, sizeof(c.image), "alpine-3.19");
	insert(&a);
	insert(&b);
	insert(&c);
	ck_assert_int_gt(a.id, 0);
	ck_assert_int_gt(b.id, a.id);
	ck_assert_int_gt(c.id, b.id);

	/* In id order, every column as written. */
	rs = all_rows();
	ck_assert_uint_eq(rs.n, 3);
	assert_row_eq(&rs.v[0], &a);
	assert_row_eq(&rs.v[1], &b);
	assert_row_eq(&rs.v[2], &c);
}
END_TEST

START_TEST(test_update)
{
	struct box_row a = make_row("alpha"), b = make_row("beta");
	pd_error err = {0};
	struct rows rs;

	open_store();
	insert(&a);
	insert(&b);

	snprintf(a.state, sizeof(a.state), "running");
	snprintf(a.type, sizeof(a.type), "medium");
	snprintf(a.image, sizeof(a.image), "ubuntu");
	a.last_started = 1700000500;
	a.created = 1600000000;
	snprintf(a.error, sizeof(a.error), "some error");
	ck_assert_int_eq(store_box_update(st, &a, &err), 0);

	rs = all_rows();
	ck_assert_uint_eq(rs.n, 2);
	assert_row_eq(&rs.v[0], &a);
	assert_row_eq(&rs.v[1], &b); /* untouched */

	/* A rename through update keeps the id. */
	snprintf(a.name, sizeof(a.name), "renamed");
	ck_assert_int_eq(store_box_update(st, &a, &err), 0);
	rs = all_rows();
	ck_assert_str_eq(rs.v[0].name, "renamed");
	ck_assert_int_eq(rs.v[0].id, a.id);
}
END_TEST

START_TEST(test_delete)
{
	struct box_row a = make_row("alpha"), b = make_row("beta"), c = make_row("gamma");
	pd_error err = {0};
	struct rows rs;

	open_store();
	insert(&a);
	insert(&b);
	insert(&c);
	ck_assert_int_eq(store_box_delete(st, b.id, &err), 0);
	rs = all_rows();
	ck_assert_uint_eq(rs.n, 2);
	assert_row_eq(&rs.v[0], &a);
	assert_row_eq(&rs.v[1], &c);

	/* The name is free again; ids are never reused (AUTOINCREMENT). */
	struct box_row b2 = make_row("beta");
	insert(&b2);
	ck_assert_int_gt(b2.id, c.id);

	ck_assert_int_eq(store_box_delete(st, a.id, &err), 0);
	ck_assert_int_eq(store_box_delete(st, c.id, &err), 0);
	ck_assert_int_eq(store_box_delete(st, b2.id, &err), 0);
	rs = all_rows();
	ck_assert_uint_eq(rs.n, 0);
}
END_TEST

static int stop_at_second(const struct box_row *row, void *userdata)
{
	int *seen = userdata;
	(void)row;
	return ++*seen == 2 ? -ECANCELED : 0;
}

START_TEST(test_foreach_stops_early)
{
	struct box_row a = make_row("a"), b = make_row("b"), c = make_row("c");
	int seen = 0;

	open_store();
	insert(&a);
	insert(&b);
	insert(&c);
	ck_assert_int_eq(store_box_foreach(st, stop_at_second, &seen), -ECANCELED);
	ck_assert_int_eq(seen, 2);
}
END_TEST

static int insert_two(struct store *s, void *userdata)
{
	const char *prefix = userdata;
	char name[32];

	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		struct box_row row = make_row(name);
		int r = store_box_insert(s, &row, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

START_TEST(test_transaction_commit)
{
	pd_error err = {0};
	struct rows rs;

	open_store();
	ck_assert_int_eq(store_transaction(st, insert_two, (void *)"t", &err), 0);
	rs = all_rows();
	ck_assert_uint_eq(rs.n, 2);
	ck_assert_str_eq(rs.v[0].name, "t0");
	ck_assert_str_eq(rs.v[1].name, "t1");

	/* Committed for other connections too, and after reopening. */
	sqlite3 *db = raw_open();
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM boxes"), "2");
	sqlite3_close(db);
	st = store_close(st);
	open_store();
	ck_assert_uint_eq(all_rows().n, 2);
}
END_TEST

static int insert_then_fail(struct store *s, void *userdata)
{
	int r = insert_two(s, userdata);
	return r < 0 ? r : -ECANCELED;
}

static int update_then_fail(struct store *s, void *userdata)
{
	struct box_row *row = userdata;
	int r;

	snprintf(row->state, sizeof(row->state), "running");
	r = store_box_update(s, row, NULL);
	if (r < 0)
		return r;
	r = store_box_delete(s, row->id, NULL);
	if (r < 0)
		return r;
	return -EIO;
}

START_TEST(test_transaction_rollback)
{
	struct box_row keep = make_row("keep");
	pd_error err = {0};
	struct rows rs;

	open_store();
	insert(&keep);

	/* fn's own error comes back and nothing it did stays. */
	ck_assert_int_eq(store_transaction(st, insert_then_fail, (void *)"r", &err), -ECANCELED);
	rs = all_rows();
	ck_assert_uint_eq(rs.n, 1);
	assert_row_eq(&rs.v[0], &keep);

	struct box_row changed = keep;
	ck_assert_int_eq(store_transaction(st, update_then_fail, &changed, &err), -EIO);
	rs = all_rows();
	ck_assert_uint_eq(rs.n, 1);
	assert_row_eq(&rs.v[0], &keep);

	/* The store is usable afterwards (no transaction left open). */
	ck_assert_int_eq(store_transaction(st, insert_two, (void *)"ok", &err), 0);
	ck_assert_uint_eq(all_rows().n, 3);
	sqlite3 *db = raw_open();
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM boxes"), "3");
	sqlite3_close(db);
}
END_TEST

/* ---- limits ---- */

START_TEST(test_long_fields)
{
	struct box_row row = make_row("x");
	struct rows rs;

	open_store();
	/* Every fixed buffer filled to its last byte survives the trip. */
	memset(row.name, 'n', sizeof(row.name) - 1);
	row.name[sizeof(row.name) - 1] = '\0';
	memset(row.type, 't', sizeof(row.type) - 1);
	row.type[sizeof(row.type) - 1] = '\0';
	memset(row.image, 'i', sizeof(row.image) - 1);
	row.image[sizeof(row.image) - 1] = '\0';
	memset(row.state, 's', sizeof(row.state) - 1);
	row.state[sizeof(row.state) - 1] = '\0';
	memset(row.error, 'e', sizeof(row.error) - 1);
	row.error[sizeof(row.error) - 1] = '\0';
	row.created = INT64_MAX;
	row.last_started = INT64_MIN;
	insert(&row);

	rs = all_rows();
	ck_assert_uint_eq(rs.n, 1);
	assert_row_eq(&rs.v[0], &row);
}
END_TEST

START_TEST(test_many_rows)
{
	char name[32];
	int seen = 0;

	open_store();
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "box%03d", i);
		struct box_row row = make_row(name);
		insert(&row);
	}
	sqlite3 *db = raw_open();
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM boxes"), "500");
	sqlite3_close(db);
	ck_assert_int_eq(store_box_foreach(st, stop_at_second, &seen), -ECANCELED);
	ck_assert_int_eq(seen, 2);
}
END_TEST

/* A database written by the first release (schema 1) is migrated forward
 * and keeps its boxes. */
static int first_row(const struct box_row *row, void *userdata)
{
	*(struct box_row *)userdata = *row;
	return 0;
}

START_TEST(test_migrate_from_v1)
{
	struct box_row row = {0};
	struct job_row job = {0};
	struct store *s = NULL;
	pd_error err = {0};
	sqlite3 *db = raw_open();

	raw_exec(db, "CREATE TABLE boxes (id INTEGER PRIMARY KEY AUTOINCREMENT,"
		     " name TEXT NOT NULL UNIQUE, state TEXT NOT NULL, type TEXT NOT NULL,"
		     " image TEXT NOT NULL, created INTEGER NOT NULL,"
		     " last_started INTEGER NOT NULL DEFAULT 0, error TEXT NOT NULL DEFAULT '');"
		     "INSERT INTO boxes (name, state, type, image, created)"
		     " VALUES ('old', 'stopped', 'small', 'tiny', 42);"
		     "PRAGMA user_version = 1;");
	sqlite3_close(db);

	ck_assert_int_eq(store_open(db_path, &s, &err), 0);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(store_box_foreach(s, first_row, &row), 0);
	ck_assert_str_eq(row.name, "old");
	ck_assert_str_eq(row.state, "stopped");
	ck_assert_int_eq(row.created, 42);
	ck_assert_int_eq(row.expires, 0);
	/* The jobs table exists and follows its box. */
	job.box_id = row.id;
	snprintf(job.name, sizeof job.name, "1");
	snprintf(job.state, sizeof job.state, "ended");
	ck_assert_int_eq(store_job_insert(s, &job, &err), 0);
	ck_assert_int_eq(store_box_delete(s, row.id, &err), 0);
	db = raw_open();
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM jobs"), "0");
	/* And the owner and tokens tables. */
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM owner"), "0");
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM tokens"), "0");
	sqlite3_close(db);
	store_close(s);
}
END_TEST

/* A database of schema 3 (boxes, jobs) gains the owner and tokens tables
 * and keeps its rows. */
START_TEST(test_migrate_from_v3)
{
	struct box_row row = {0};
	struct owner_row o;
	struct token_row t = {0}, got;
	struct store *s = NULL;
	pd_error err = {0};
	sqlite3 *db = raw_open();

	raw_exec(db, "CREATE TABLE boxes (id INTEGER PRIMARY KEY AUTOINCREMENT,"
		     " name TEXT NOT NULL UNIQUE, state TEXT NOT NULL, type TEXT NOT NULL,"
		     " image TEXT NOT NULL, created INTEGER NOT NULL,"
		     " last_started INTEGER NOT NULL DEFAULT 0, error TEXT NOT NULL DEFAULT '',"
		     " expires INTEGER NOT NULL DEFAULT 0);"
		     "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT,"
		     " box_id INTEGER NOT NULL REFERENCES boxes(id) ON DELETE CASCADE,"
		     " name TEXT NOT NULL, state TEXT NOT NULL, UNIQUE (box_id, name));"
		     "INSERT INTO boxes (name, state, type, image, created, expires)"
		     " VALUES ('kept', 'running', 'small', 'tiny', 7, 99);"
		     "INSERT INTO jobs (box_id, name, state) VALUES (1, '1', 'ended');"
		     "PRAGMA user_version = 3;");
	sqlite3_close(db);

	ck_assert_int_eq(store_open(db_path, &s, &err), 0);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(store_box_foreach(s, first_row, &row), 0);
	ck_assert_str_eq(row.name, "kept");
	ck_assert_int_eq(row.expires, 99);
	db = raw_open();
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM jobs"), "1");
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM owner"), "0");
	sqlite3_close(db);

	ck_assert_int_eq(store_owner_get(s, &o), -ENOENT);
	snprintf(t.id, sizeof t.id, "abcdefghijkl");
	memset(t.hash, 7, sizeof t.hash);
	t.created = 5;
	ck_assert_int_eq(store_token_insert(s, &t, &err), 0);
	ck_assert_int_eq(store_token_get(s, "abcdefghijkl", &got), 0);
	ck_assert_int_eq(got.created, 5);
	store_close(s);
}
END_TEST

/* Schema 11: jobs have a kind, a name space each; the ids and the id
 * sequence survive the table's rebuild (ids are inodes, never reused). */
START_TEST(test_migrate_jobs_kind)
{
	struct job_row j = {.box_id = 1};
	struct store *s = NULL;
	pd_error err = {0};
	sqlite3 *db = raw_open();

	raw_exec(db, "CREATE TABLE boxes (id INTEGER PRIMARY KEY AUTOINCREMENT,"
		     " name TEXT NOT NULL UNIQUE, state TEXT NOT NULL, type TEXT NOT NULL,"
		     " image TEXT NOT NULL, created INTEGER NOT NULL,"
		     " last_started INTEGER NOT NULL DEFAULT 0, error TEXT NOT NULL DEFAULT '',"
		     " expires INTEGER NOT NULL DEFAULT 0);"
		     "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT,"
		     " box_id INTEGER NOT NULL REFERENCES boxes(id) ON DELETE CASCADE,"
		     " name TEXT NOT NULL, state TEXT NOT NULL, UNIQUE (box_id, name));"
		     "INSERT INTO boxes (name, state, type, image, created, expires)"
		     " VALUES ('kept', 'running', 'small', 'tiny', 7, 99);"
		     "INSERT INTO jobs (box_id, name, state) VALUES (1, '1', 'ended');"
		     "INSERT INTO jobs (box_id, name, state) VALUES (1, 'build', 'running');"
		     "INSERT INTO jobs (box_id, name, state) VALUES (1, '3', 'ended');"
		     "DELETE FROM jobs WHERE id = 3;"
		     "PRAGMA user_version = 3;");
	sqlite3_close(db);

	ck_assert_int_eq(store_open(db_path, &s, &err), 0);
	db = raw_open();
	ck_assert_str_eq(raw_query(db, "SELECT group_concat(id || kind || name, ',') FROM jobs"),
			 "1exec1,2execbuild");
	sqlite3_close(db);
	/* The next id is 4, not 3: the deleted job's id is not reused. */
	snprintf(j.name, sizeof j.name, "1");
	snprintf(j.state, sizeof j.state, "created");
	snprintf(j.kind, sizeof j.kind, "prompt");
	ck_assert_int_eq(store_job_insert(s, &j, &err), 0);
	ck_assert_int_eq(j.id, 4);
	/* A prompt and an exec job may share a name; two exec jobs may not. */
	snprintf(j.kind, sizeof j.kind, "exec");
	ck_assert_int_eq(store_job_insert(s, &j, &err), -EEXIST);
	j.kind[0] = '\0'; /* exec */
	snprintf(j.name, sizeof j.name, "build");
	ck_assert_int_eq(store_job_insert(s, &j, &err), -EEXIST);
	store_close(s);
}
END_TEST

/* Schema 12: a database of schema 11 gains boxes.docker, -1 (as its image
 * says) for every box it had: the upgrade turns no box's Docker on or off.
 * The schema-11 file is this store's, the column dropped again. */
START_TEST(test_migrate_docker)
{
	struct box_row a = make_row("before"), b = make_row("after"), got;
	struct store *s = NULL;
	pd_error err = {0};
	sqlite3 *db;

	open_store();
	insert(&a);
	st = store_close(st);
	db = raw_open();
	raw_exec(db, "ALTER TABLE boxes DROP COLUMN docker;"
		     "ALTER TABLE boxes DROP COLUMN ports;"
		     "ALTER TABLE tokens DROP COLUMN expires;"
		     "INSERT INTO boxes (name, state, type, image, created)"
		     " VALUES ('raw', 'stopped', 'small', 'docker', 8);"
		     "PRAGMA user_version = 11;");
	ck_assert_str_eq(raw_query(db, "SELECT count(*) FROM pragma_table_info('boxes')"
				       " WHERE name = 'docker'"),
			 "0");
	sqlite3_close(db);

	ck_assert_int_eq(store_open(db_path, &s, &err), 0);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(store_box_get(s, a.id, &got), 0);
	ck_assert_str_eq(got.name, "before");
	ck_assert_int_eq(got.docker, -1);
	db = raw_open();
	ck_assert_str_eq(raw_query(db, "SELECT group_concat(name || ':' || docker, ',')"
				       " FROM (SELECT * FROM boxes ORDER BY id)"),
			 "before:-1,raw:-1");
	ck_assert_str_eq(raw_query(db, "PRAGMA user_version"), "14");
	sqlite3_close(db);
	/* A box made after the upgrade has the column like any other. */
	b.docker = 1;
	ck_assert_int_eq(store_box_insert(s, &b, &err), 0);
	ck_assert_int_eq(store_box_get(s, b.id, &got), 0);
	ck_assert_int_eq(got.docker, 1);
	store_close(s);
}
END_TEST

/* Schema 12 -> 13: every box gains an empty list of published ports;
 * the list round-trips and a fork's copy of the settings carries it. */
START_TEST(test_migrate_ports)
{
	struct box_row a = make_row("before"), b = make_row("fork");
	struct store *s = NULL;
	pd_error err = {0};
	char *text = NULL;
	sqlite3 *db;

	open_store();
	insert(&a);
	st = store_close(st);
	db = raw_open();
	raw_exec(db, "ALTER TABLE boxes DROP COLUMN ports; ALTER TABLE tokens DROP COLUMN expires;"
		     " PRAGMA user_version = 12;");
	sqlite3_close(db);

	ck_assert_int_eq(store_open(db_path, &s, &err), 0);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(store_box_ports_get(s, a.id, &text), 0);
	ck_assert_str_eq(text, "");
	free(text);
	ck_assert_int_eq(store_box_ports_set(s, a.id, "3000 public\n8080\n", &err), 0);
	ck_assert_int_eq(store_box_ports_get(s, a.id, &text), 0);
	ck_assert_str_eq(text, "3000 public\n8080\n");
	free(text);
	ck_assert_int_eq(store_box_insert(s, &b, &err), 0);
	ck_assert_int_eq(store_box_copy_settings(s, a.id, b.id, &err), 0);
	ck_assert_int_eq(store_box_ports_get(s, b.id, &text), 0);
	ck_assert_str_eq(text, "3000 public\n8080\n");
	free(text);
	ck_assert_int_eq(store_box_ports_get(s, 999999, &text), -ENOENT);
	ck_assert_int_eq(store_box_ports_set(s, 999999, "1\n", &err), -ENOENT);
	store_close(s);
}
END_TEST

/* Schema 13 -> 14: tokens gain a nullable expiry; the tokens of the older
 * database are kept and never expire. */
START_TEST(test_migrate_token_expiry)
{
	struct token_row a = {0}, b = {0}, got;
	struct store *s = NULL;
	pd_error err = {0};
	int64_t next = -1;
	sqlite3 *db;

	open_store();
	st = store_close(st);
	db = raw_open();
	raw_exec(db, "ALTER TABLE tokens DROP COLUMN expires;"
		     "INSERT INTO tokens (id, hash, label, created)"
		     " VALUES ('oldoldoldold', "
		     "x'0101010101010101010101010101010101010101010101010101010101010101',"
		     " 'old', 5);"
		     "PRAGMA user_version = 13;");
	sqlite3_close(db);

	ck_assert_int_eq(store_open(db_path, &s, &err), 0);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(store_token_get(s, "oldoldoldold", &got), 0);
	ck_assert_str_eq(got.label, "old");
	ck_assert_int_eq(got.expires, 0);
	db = raw_open();
	ck_assert_str_eq(raw_query(db, "SELECT typeof(expires) FROM tokens"), "null");
	sqlite3_close(db);

	/* A token with an expiry: stored, read back, found by the next expiry
	 * and deleted once it has passed; one without stays NULL (never). */
	snprintf(a.id, sizeof a.id, "aaaaaaaaaaaa");
	memset(a.hash, 0xaa, sizeof a.hash);
	a.created = 100;
	a.expires = 1000;
	ck_assert_int_eq(store_token_insert(s, &a, &err), 0);
	snprintf(b.id, sizeof b.id, "bbbbbbbbbbbb");
	memset(b.hash, 0xbb, sizeof b.hash);
	b.created = 100;
	b.expires = 2000;
	ck_assert_int_eq(store_token_insert(s, &b, &err), 0);
	ck_assert_int_eq(store_token_get(s, "aaaaaaaaaaaa", &got), 0);
	ck_assert_int_eq(got.expires, 1000);
	ck_assert_int_eq(store_token_next_expiry(s, 0, &next), 0);
	ck_assert_int_eq(next, 1000);
	ck_assert_int_eq(store_token_next_expiry(s, 1000, &next), 0);
	ck_assert_int_eq(next, 2000);
	ck_assert_int_eq(store_token_next_expiry(s, 2000, &next), 0);
	ck_assert_int_eq(next, 0);
	ck_assert_int_eq(store_token_delete_expired(s, 999, &err), 0);
	ck_assert_int_eq(store_token_delete_expired(s, 1000, &err), 1);
	ck_assert_int_eq(store_token_get(s, "aaaaaaaaaaaa", &got), -ENOENT);
	ck_assert_int_eq(store_token_delete_expired(s, 1LL << 40, &err), 1);
	ck_assert_int_eq(store_token_get(s, "oldoldoldold", &got), 0);
	store_close(s);
}
END_TEST

/* boxes.docker round-trips each of its values through insert, update and
 * both ways of reading (one row, every row), across a reopen. */
START_TEST(test_docker_round_trip)
{
	static const int64_t values[] = {0, 1, -1};
	struct box_row rows[3], got;
	struct rows all;
	pd_error err = {0};

	open_store();
	for (size_t i = 0; i < ELEMENTSOF(values); i++) {
		char name[16];

		snprintf(name, sizeof name, "d%zu", i);
		rows[i] = make_row(name);
		rows[i].docker = values[i];
		insert(&rows[i]);
	}
	st = store_close(st);
	open_store();
	all = all_rows();
	ck_assert_uint_eq(all.n, 3);
	for (size_t i = 0; i < ELEMENTSOF(values); i++) {
		ck_assert_int_eq(store_box_get(st, rows[i].id, &got), 0);
		ck_assert_int_eq(got.docker, values[i]);
		for (size_t k = 0; k < all.n; k++)
			if (all.v[k].id == rows[i].id)
				ck_assert_int_eq(all.v[k].docker, values[i]);
	}
	/* Each value to the next (0 -> 1 -> -1 -> 0), by update. */
	for (size_t i = 0; i < ELEMENTSOF(values); i++) {
		rows[i].docker = values[(i + 1) % ELEMENTSOF(values)];
		ck_assert_int_eq(store_box_update(st, &rows[i], &err), 0);
	}
	st = store_close(st);
	open_store();
	for (size_t i = 0; i < ELEMENTSOF(values); i++) {
		ck_assert_int_eq(store_box_get(st, rows[i].id, &got), 0);
		ck_assert_int_eq(got.docker, values[(i + 1) % ELEMENTSOF(values)]);
		assert_row_eq(&got, &rows[i]);
	}
}
END_TEST

START_TEST(test_owner)
{
	uint8_t h1[STORE_HASH_LEN], h2[STORE_HASH_LEN];
	struct owner_row o;
	pd_error err = {0};

	memset(h1, 1, sizeof h1);
	memset(h2, 2, sizeof h2);
	open_store();
	ck_assert_int_eq(store_owner_get(st, &o), -ENOENT);
	ck_assert_int_eq(store_owner_set_setup(st, h1, &err), 0);
	ck_assert_int_eq(store_owner_get(st, &o), 0);
	ck_assert_str_eq(o.pwhash, "");
	ck_assert(o.has_setup);
	ck_assert(memcmp(o.setup_hash, h1, sizeof h1) == 0);

	/* A new secret replaces the old one. */
	ck_assert_int_eq(store_owner_set_setup(st, h2, &err), 0);
	ck_assert_int_eq(store_owner_set_password(st, h1, "$hash1", 10, &err), -ENOENT);
	ck_assert_int_eq(store_owner_get(st, &o), 0);
	ck_assert_str_eq(o.pwhash, "");
	ck_assert_int_eq(store_owner_set_password(st, h2, "$hash2", 10, &err), 0);
	ck_assert_int_eq(store_owner_get(st, &o), 0);
	ck_assert_str_eq(o.pwhash, "$hash2");
	ck_assert(!o.has_setup);
	ck_assert_int_eq(o.created, 10);

	/* Once set: no second setup, no second password. */
	ck_assert_int_eq(store_owner_set_setup(st, h1, &err), -EEXIST);
	ck_assert_int_eq(store_owner_set_password(st, h2, "$hash3", 11, &err), -ENOENT);
	st = store_close(st);
	open_store();
	ck_assert_int_eq(store_owner_get(st, &o), 0);
	ck_assert_str_eq(o.pwhash, "$hash2");
}
END_TEST

static int collect_tokens(const struct token_row *row, void *userdata)
{
	struct token_row *v = userdata;
	size_t i = 0;

	while (v[i].seq)
		i++;
	v[i] = *row;
	return 0;
}

START_TEST(test_tokens)
{
	struct token_row a = {0}, b = {0}, got, all[4];
	pd_error err = {0};

	open_store();
	snprintf(a.id, sizeof a.id, "aaaaaaaaaaaa");
	memset(a.hash, 0xaa, sizeof a.hash);
	snprintf(a.label, sizeof a.label, "laptop");
	a.created = 100;
	ck_assert_int_eq(store_token_insert(st, &a, &err), 0);
	ck_assert_int_gt(a.seq, 0);
	b = a;
	ck_assert_int_eq(store_token_insert(st, &b, &err), -EEXIST); /* same id */
	snprintf(b.id, sizeof b.id, "bbbbbbbbbbbb");
	ck_assert_int_eq(store_token_insert(st, &b, &err), -EEXIST); /* same hash */
	memset(b.hash, 0xbb, sizeof b.hash);
	b.label[0] = '\0';
	ck_assert_int_eq(store_token_insert(st, &b, &err), 0);
	ck_assert_int_gt(b.seq, a.seq);

	ck_assert_int_eq(store_token_get(st, "aaaaaaaaaaaa", &got), 0);
	ck_assert_int_eq(got.seq, a.seq);
	ck_assert_str_eq(got.label, "laptop");
	ck_assert_int_eq(got.created, 100);
	ck_assert_int_eq(got.last_used, 0);
	ck_assert(memcmp(got.hash, a.hash, sizeof a.hash) == 0);
	ck_assert_int_eq(store_token_get_seq(st, b.seq, &got), 0);
	ck_assert_str_eq(got.id, "bbbbbbbbbbbb");
	ck_assert_int_eq(store_token_get(st, "cccccccccccc", &got), -ENOENT);
	ck_assert_int_eq(store_token_get_seq(st, b.seq + 1, &got), -ENOENT);

	ck_assert_int_eq(store_token_set_last_used(st, "aaaaaaaaaaaa", 200, &err), 0);
	ck_assert_int_eq(store_token_get(st, "aaaaaaaaaaaa", &got), 0);
	ck_assert_int_eq(got.last_used, 200);

	memset(all, 0, sizeof all);
	ck_assert_int_eq(store_token_foreach(st, collect_tokens, all), 0);
	ck_assert_str_eq(all[0].id, "aaaaaaaaaaaa");
	ck_assert_str_eq(all[1].id, "bbbbbbbbbbbb");
	ck_assert_int_eq(all[2].seq, 0);

	/* Deleted: gone, and its number is not given out again. */
	int64_t b_seq = b.seq;
	ck_assert_int_eq(store_token_delete(st, "bbbbbbbbbbbb", &err), 0);
	ck_assert_int_eq(store_token_delete(st, "bbbbbbbbbbbb", &err), -ENOENT);
	ck_assert_int_eq(store_token_get(st, "bbbbbbbbbbbb", &got), -ENOENT);
	snprintf(b.id, sizeof b.id, "dddddddddddd");
	ck_assert_int_eq(store_token_insert(st, &b, &err), 0);
	ck_assert_int_gt(b.seq, b_seq);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_newer_schema_refused)
{
	pd_error err = {0};
	struct store *s = (struct store *)&err; /* must stay untouched */
	sqlite3 *db = raw_open();

	raw_exec(db, "PRAGMA user_version = 99");
	sqlite3_close(db);

	ck_assert_int_eq(store_open(db_path, &s, &err), -EPROTO);
	ck_assert_int_eq(err.code, -EPROTO);
	ck_assert_ptr_nonnull(strstr(err.msg, "99"));
	ck_assert_ptr_eq(s, (struct store *)&err);

	/* Refused, not downgraded. */
	db = raw_open();
	ck_assert_str_eq(raw_query(db, "PRAGMA user_version"), "99");
	sqlite3_close(db);

	/* err may be NULL. */
	ck_assert_int_eq(store_open(db_path, &s, NULL), -EPROTO);
}
END_TEST

START_TEST(test_duplicate_name)
{
	struct box_row a = make_row("web"), dup = make_row("web");
	pd_error err = {0};
	struct rows rs;

	open_store();
	insert(&a);
	dup.id = 12345;
	ck_assert_int_eq(store_box_insert(st, &dup, &err), -EEXIST);
	ck_assert_int_eq(err.code, -EEXIST);
	ck_assert_str_eq(err.msg, "box web already exists");
	ck_assert_int_eq(dup.id, 12345); /* id set only on success */
	ck_assert_int_eq(store_box_insert(st, &dup, NULL), -EEXIST);

	rs = all_rows();
	ck_assert_uint_eq(rs.n, 1);
	assert_row_eq(&rs.v[0], &a);

	/* Renaming onto a taken name is refused the same way. */
	struct box_row b = make_row("other");
	insert(&b);
	snprintf(b.name, sizeof(b.name), "web");
	pd_error_clear(&err);
	ck_assert_int_eq(store_box_update(st, &b, &err), -EEXIST);
	ck_assert_int_eq(err.code, -EEXIST);
	ck_assert_str_ne(err.msg, "");
	rs = all_rows();
	ck_assert_str_eq(rs.v[1].name, "other");
}
END_TEST

START_TEST(test_update_missing)
{
	struct box_row a = make_row("ghost");
	pd_error err = {0};

	open_store();
	a.id = 42;
	ck_assert_int_eq(store_box_update(st, &a, &err), -ENOENT);
	ck_assert_int_eq(err.code, -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "ghost"));
	ck_assert_int_eq(store_box_update(st, &a, NULL), -ENOENT);
	ck_assert_uint_eq(all_rows().n, 0);

	/* Deleted, then updated: gone is gone. */
	insert(&a);
	ck_assert_int_eq(store_box_delete(st, a.id, &err), 0);
	ck_assert_int_eq(store_box_update(st, &a, &err), -ENOENT);
	ck_assert_uint_eq(all_rows().n, 0);
}
END_TEST

START_TEST(test_open_errors)
{
	pd_error err = {0};
	struct store *s = NULL;
	char path[256];

	/* A directory that does not exist. */
	snprintf(path, sizeof(path), "%s/no/such/dir/db", tmpdir);
	ck_assert_int_lt(store_open(path, &s, &err), 0);
	ck_assert_int_lt(err.code, 0);
	ck_assert_str_ne(err.msg, "");
	ck_assert_ptr_null(s);

	/* A file that is not a database. */
	snprintf(path, sizeof(path), "%s/garbage", tmpdir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	char junk[4096];
	memset(junk, 'j', sizeof(junk));
	ck_assert_int_eq(write_all(fd, junk, sizeof(junk)), 0);
	close(fd);
	pd_error_clear(&err);
	ck_assert_int_lt(store_open(path, &s, &err), 0);
	ck_assert_int_lt(err.code, 0);
	ck_assert_str_ne(err.msg, "");
	ck_assert_ptr_null(s);
	ck_assert_int_lt(store_open(path, &s, NULL), 0);
}
END_TEST

static int count_snap(const struct snapshot_row *row, void *userdata)
{
	(void)row;
	(*(int *)userdata)++;
	return 0;
}

static int first_intent(const struct intent_row *row, void *userdata)
{
	*(struct intent_row *)userdata = *row;
	return 0;
}

START_TEST(test_layers_snapshots_intents)
{
	struct box_row b = {0}, got = {0};
	struct snapshot_row sn = {0}, sg;
	struct intent_row in = {0}, ig = {0};
	pd_error err = {0};
	int64_t l1, l2, size, *ids;
	size_t n;
	int count = 0;

	open_store();
	snprintf(b.name, sizeof b.name, "web");
	snprintf(b.state, sizeof b.state, "stopped");
	snprintf(b.type, sizeof b.type, "small");
	snprintf(b.image, sizeof b.image, "tiny");
	ck_assert_int_eq(store_box_insert(st, &b, &err), 0);
	ck_assert_int_eq(store_layer_insert(st, 1, &l1, &err), 0);
	ck_assert_int_eq(store_layer_insert(st, 2, &l2, &err), 0);
	ck_assert_int_gt(l2, l1);
	ck_assert_int_eq(store_layer_get_size(st, l1, &size), 0);
	ck_assert_int_eq(size, -1);
	ck_assert_int_eq(store_layer_set_size(st, l1, 4096), 0);
	ck_assert_int_eq(store_layer_get_size(st, l1, &size), 0);
	ck_assert_int_eq(size, 4096);

	snprintf(b.layers, sizeof b.layers, "%lld,%lld", (long long)l2, (long long)l1);
	ck_assert_int_eq(store_box_update(st, &b, &err), 0);
	ck_assert_int_eq(store_box_get(st, b.id, &got), 0);
	ck_assert_str_eq(got.layers, b.layers);
	ck_assert_int_eq(store_box_get(st, b.id + 100, &got), -ENOENT);

	snprintf(sn.box, sizeof sn.box, "web");
	sn.box_id = b.id;
	snprintf(sn.label, sizeof sn.label, "stop");
	snprintf(sn.image, sizeof sn.image, "tiny");
	snprintf(sn.layers, sizeof sn.layers, "%s", b.layers);
	ck_assert_int_eq(store_snapshot_insert(st, &sn, &err), 0);
	ck_assert_int_gt(sn.seq, 0);
	{
		char want[64];
		snprintf(want, sizeof want, "web-%lld", (long long)sn.seq);
		ck_assert_str_eq(sn.id, want);
	}
	ck_assert_int_eq(store_snapshot_get(st, sn.id, &sg), 0);
	ck_assert_str_eq(sg.layers, b.layers);
	ck_assert_int_eq(sg.box_id, b.id);
	snprintf(sg.label, sizeof sg.label, "renamed");
	ck_assert_int_eq(store_snapshot_update(st, &sg, &err), 0);
	ck_assert_int_eq(store_snapshot_get_seq(st, sn.seq, &sg), 0);
	ck_assert_str_eq(sg.label, "renamed");
	ck_assert_int_eq(store_snapshot_foreach(st, b.id, count_snap, &count), 0);
	ck_assert_int_eq(count, 1);
	count = 0;
	ck_assert_int_eq(store_snapshot_foreach(st, b.id + 1, count_snap, &count), 0);
	ck_assert_int_eq(count, 0);
	/* Snapshots outlive their box. */
	ck_assert_int_eq(store_box_delete(st, b.id, &err), 0);
	ck_assert_int_eq(store_snapshot_get(st, sn.id, &sg), 0);
	ck_assert_int_eq(store_snapshot_delete(st, sn.seq, &err), 0);
	ck_assert_int_eq(store_snapshot_get(st, sn.id, &sg), -ENOENT);

	snprintf(in.kind, sizeof in.kind, "fork");
	in.box_id = 3;
	in.layer = l2;
	snprintf(in.target, sizeof in.target, "web2");
	ck_assert_int_eq(store_intent_insert(st, &in, &err), 0);
	ck_assert_int_eq(store_intent_set_copy(st, in.id, true, &err), 0);
	ck_assert_int_eq(store_intent_foreach(st, first_intent, &ig), 0);
	ck_assert_int_eq(ig.id, in.id);
	ck_assert(ig.copy);
	ck_assert_str_eq(ig.target, "web2");
	ck_assert_int_eq(store_intent_delete(st, in.id, &err), 0);

	ck_assert_int_eq(store_layer_delete(st, l1), 0);
	ck_assert_int_eq(store_layer_ids(st, &ids, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(ids[0], l2);
	free(ids);
}
END_TEST

static int count_box(const struct box_row *row, void *userdata)
{
	(void)row;
	(*(int *)userdata)++;
	return 0;
}

/* What the layer collector asks under the engine lock: whether any box,
 * snapshot or intent names a layer. Whole ids only: 1 is not in "12,21". */
START_TEST(test_layer_referenced)
{
	struct box_row b = {0};
	struct snapshot_row sn = {0};
	struct intent_row in = {0};
	pd_error err = {0};

	open_store();
	for (int64_t id = 1; id <= 30; id++)
		ck_assert_int_eq(store_layer_referenced(st, id), 0);
	snprintf(b.name, sizeof b.name, "web");
	snprintf(b.state, sizeof b.state, "stopped");
	snprintf(b.type, sizeof b.type, "small");
	snprintf(b.image, sizeof b.image, "tiny");
	snprintf(b.layers, sizeof b.layers, "12,21");
	ck_assert_int_eq(store_box_insert(st, &b, &err), 0);
	snprintf(sn.box, sizeof sn.box, "gone");
	snprintf(sn.image, sizeof sn.image, "tiny");
	snprintf(sn.layers, sizeof sn.layers, "3");
	ck_assert_int_eq(store_snapshot_insert(st, &sn, &err), 0);
	snprintf(in.kind, sizeof in.kind, "snapshot");
	in.box_id = b.id;
	in.layer = 7;
	ck_assert_int_eq(store_intent_insert(st, &in, &err), 0);
	for (int64_t id = 1; id <= 30; id++)
		ck_assert_msg(store_layer_referenced(st, id) ==
				  (id == 12 || id == 21 || id == 3 || id == 7),
			      "layer %lld", (long long)id);
	ck_assert_int_eq(store_snapshot_delete(st, sn.seq, &err), 0);
	ck_assert_int_eq(store_layer_referenced(st, 3), 0);
}
END_TEST

/* The collector's connection: it refuses writes, and one read transaction
 * sees one state while the other connection commits. */
START_TEST(test_reader)
{
	struct store *rd = NULL;
	struct box_row b = {0};
	pd_error err = {0};
	int64_t l;
	int n = 0;

	ck_assert_int_eq(store_open_reader(db_path, &rd, &err), -ENOENT);
	open_store();
	ck_assert_int_eq(store_open_reader(db_path, &rd, &err), 0);
	ck_assert_int_lt(store_layer_insert(rd, 1, &l, &err), 0);
	ck_assert_int_eq(store_read_begin(rd), 0);
	snprintf(b.name, sizeof b.name, "web");
	snprintf(b.state, sizeof b.state, "stopped");
	snprintf(b.type, sizeof b.type, "small");
	snprintf(b.image, sizeof b.image, "tiny");
	ck_assert_int_eq(store_box_insert(st, &b, &err), 0);
	ck_assert_int_eq(store_box_foreach(rd, count_box, &n), 0);
	ck_assert_int_eq(n, 0);
	store_read_end(rd);
	n = 0;
	ck_assert_int_eq(store_box_foreach(rd, count_box, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(store_checkpoint(rd), 0);
	store_close(rd);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_open_creates_wal_db);
	tcase_add_test(tc, test_files_private);
	tcase_add_test(tc, test_second_open_keeps_locks);
	tcase_add_test(tc, test_schema_version);
	tcase_add_test(tc, test_reopen_idempotent);
	tcase_add_test(tc, test_insert_foreach);
	tcase_add_test(tc, test_update);
	tcase_add_test(tc, test_delete);
	tcase_add_test(tc, test_foreach_stops_early);
	tcase_add_test(tc, test_transaction_commit);
	tcase_add_test(tc, test_transaction_rollback);
	tcase_add_test(tc, test_layers_snapshots_intents);
	tcase_add_test(tc, test_layer_referenced);
	tcase_add_test(tc, test_reader);
	tcase_add_test(tc, test_migrate_from_v1);
	tcase_add_test(tc, test_migrate_from_v3);
	tcase_add_test(tc, test_migrate_jobs_kind);
	tcase_add_test(tc, test_migrate_docker);
	tcase_add_test(tc, test_migrate_ports);
	tcase_add_test(tc, test_migrate_token_expiry);
	tcase_add_test(tc, test_docker_round_trip);
	tcase_add_test(tc, test_owner);
	tcase_add_test(tc, test_tokens);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_long_fields);
	tcase_add_test(tc, test_many_rows);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_newer_schema_refused);
	tcase_add_test(tc, test_duplicate_name);
	tcase_add_test(tc, test_update_missing);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_link_refused);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return check_tap_run(store_suite());
}
