/* check_auth.c - the owner's password, the one-time setup secret, tokens and
 * the login rate limit, over a real database in a temporary directory.
 *
 * Password hashing runs at libsodium's minimum cost (auth_options) except
 * in the test of the production default. */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/auth.h"
#include "check-tap.h"
#include "store/store.h"

#define PASSWORD "correct horse battery"

static char tmpdir[64];
static char db_path[128];
static struct auth *au;

/* Minimum hashing cost, and a budget generous enough that only the tests
 * of the budget meet it. */
static const struct auth_options fast = {
    .opslimit = crypto_pwhash_OPSLIMIT_MIN,
    .memlimit = crypto_pwhash_MEMLIMIT_MIN,
    .budget_interval_ms = 1,
    .budget_burst = 1000,
};

static void open_auth_with(const struct auth_options *opts)
{
	pd_error err = {0};
	int r;

	au = auth_free(au);
	r = auth_new(db_path, opts, &au, &err);
	ck_assert_msg(r == 0, "auth_new: %d %s", r, err.msg);
}

static void open_auth(void)
{
	open_auth_with(&fast);
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_auth.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(db_path, sizeof(db_path), "%s/paddock.db", tmpdir);
	au = NULL;
	open_auth();
}

static void teardown(void)
{
	au = auth_free(au);
	rm_rf(tmpdir);
}

/* ---- helpers ---- */

static void begin(char secret[AUTH_SECRET_LEN + 1])
{
	int r = auth_setup_begin(au, secret, AUTH_SECRET_LEN + 1);
	ck_assert_msg(r == 0, "setup_begin: %d", r);
}

static void set_owner(const char *password)
{
	char secret[AUTH_SECRET_LEN + 1];
	pd_error err = {0};
	int r;

	begin(secret);
	r = auth_setup_finish(au, secret, password, &err);
	ck_assert_msg(r == 0, "setup_finish: %d %s", r, err.msg);
}

static int login(const char *client, const char *password, const char *label, char *token, char *id,
		 unsigned *retry)
{
	char tbuf[AUTH_TOKEN_LEN + 1], ibuf[AUTH_ID_LEN + 1];
	unsigned rbuf = 0;
	pd_error err = {0};
	int r;

	r = auth_login(au, client, password, label, 0, token ? token : tbuf, AUTH_TOKEN_LEN + 1,
		       id ? id : ibuf, AUTH_ID_LEN + 1, NULL, retry ? retry : &rbuf, &err);
	if (r < 0) {
		ck_assert_int_eq(err.code, r);
		ck_assert_str_ne(err.msg, "");
	}
	return r;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static size_t token_count(void)
{
	struct auth_token *v = NULL;
	size_t n = 99;

	ck_assert_int_eq(auth_token_list(au, &v, &n), 0);
	free(v);
	return n;
}

static void raw_exec(const char *sql)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	sqlite3_close(db);
}

static bool b64url(const char *s, size_t len)
{
	if (strlen(s) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
			    s[i]))
			return false;
	return true;
}

/* ---- setup ---- */

START_TEST(test_setup_once)
{
	char secret[AUTH_SECRET_LEN + 1];
	pd_error err = {0};

	ck_assert(!auth_has_owner(au));
	begin(secret);
	ck_assert(b64url(secret, AUTH_SECRET_LEN));
	ck_assert(!auth_has_owner(au));

	/* A short password is refused and the secret keeps working. */
	ck_assert_int_eq(auth_setup_finish(au, secret, "1234567", &err), -EINVAL);
	ck_assert_str_ne(err.msg, "");
	ck_assert(!auth_has_owner(au));
	ck_assert_int_eq(auth_setup_finish(au, secret, PASSWORD, &err), 0);
	ck_assert(auth_has_owner(au));

	/* Used once: gone. */
	pd_error_clear(&err);
	ck_assert_int_eq(auth_setup_finish(au, secret, "another password", &err), -ENOENT);
	ck_assert_str_ne(err.msg, "");
	ck_assert_int_eq(auth_setup_begin(au, secret, sizeof(secret)), -EEXIST);
	/* The first password stands. */
	ck_assert_int_eq(login("1.2.3.4", PASSWORD, NULL, NULL, NULL, NULL), 0);
}
END_TEST

START_TEST(test_setup_wrong_secret)
{
	char secret[AUTH_SECRET_LEN + 1], wrong[AUTH_SECRET_LEN + 1];
	pd_error err = {0};

	/* Nothing pending at all. */
	ck_assert_int_eq(auth_setup_finish(au, "x", PASSWORD, &err), -ENOENT);
	begin(secret);
	memcpy(wrong, secret, sizeof(wrong));
	wrong[0] = wrong[0] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(auth_setup_finish(au, wrong, PASSWORD, &err), -ENOENT);
	ck_assert_int_eq(auth_setup_finish(au, "", PASSWORD, &err), -ENOENT);
	ck_assert_int_eq(auth_setup_finish(au, NULL, PASSWORD, &err), -ENOENT);
	wrong[AUTH_SECRET_LEN - 1] = '\0';
	ck_assert_int_eq(auth_setup_finish(au, wrong, PASSWORD, &err), -ENOENT);
	/* The wrong secret is checked before the password. */
	ck_assert_int_eq(auth_setup_finish(au, "nope", "short", &err), -ENOENT);
	ck_assert(!auth_has_owner(au));
	ck_assert_int_eq(auth_setup_finish(au, secret, PASSWORD, &err), 0);
}
END_TEST

START_TEST(test_setup_replaced)
{
	char first[AUTH_SECRET_LEN + 1], second[AUTH_SECRET_LEN + 1];
	pd_error err = {0};

	begin(first);
	begin(second);
	ck_assert_str_ne(first, second);
	ck_assert_int_eq(auth_setup_finish(au, first, PASSWORD, &err), -ENOENT);
	ck_assert_int_eq(auth_setup_finish(au, second, PASSWORD, &err), 0);
}
END_TEST

START_TEST(test_setup_password_bounds)
{
	char secret[AUTH_SECRET_LEN + 1], big[AUTH_PASSWORD_MAX + 2];
	pd_error err = {0};

	begin(secret);
	memset(big, 'p', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(auth_setup_finish(au, secret, big, &err), -EINVAL); /* 1025 */
	ck_assert_int_eq(auth_setup_finish(au, secret, "", &err), -EINVAL);
	ck_assert_int_eq(auth_setup_finish(au, secret, NULL, &err), -EINVAL);
	big[AUTH_PASSWORD_MAX] = '\0';
	ck_assert_int_eq(auth_setup_finish(au, secret, big, &err), 0); /* 1024 */
	ck_assert_int_eq(login("c", big, NULL, NULL, NULL, NULL), 0);
}
END_TEST

START_TEST(test_setup_small_buffer)
{
	char secret[AUTH_SECRET_LEN + 1];

	ck_assert_int_eq(auth_setup_begin(au, secret, AUTH_SECRET_LEN), -EINVAL);
	ck_assert_int_eq(auth_setup_begin(au, secret, sizeof(secret)), 0);
}
END_TEST

/* ---- login and tokens ---- */

START_TEST(test_login_before_setup)
{
	pd_error err = {0};
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1];
	unsigned retry = 0;

	ck_assert_int_eq(auth_login(au, "c", PASSWORD, NULL, 0, token, sizeof(token), id,
				    sizeof(id), NULL, &retry, &err),
			 -EACCES);
	ck_assert_ptr_nonnull(strstr(err.msg, "setup link"));
	ck_assert_uint_eq(token_count(), 0);
}
END_TEST

START_TEST(test_login_right_wrong)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1];
	pd_error err = {0};
	unsigned retry = 0;

	set_owner(PASSWORD);
	ck_assert_int_eq(login("10.0.0.1", PASSWORD, "laptop", token, id, NULL), 0);
	ck_assert_uint_eq(strlen(token), AUTH_TOKEN_LEN);
	ck_assert_uint_eq(strlen(id), AUTH_ID_LEN);
	ck_assert(strncmp(token, "pd_", 3) == 0);
	ck_assert(strncmp(token + 3, id, AUTH_ID_LEN) == 0);
	ck_assert_int_eq(token[3 + AUTH_ID_LEN], '_');
	ck_assert(b64url(token + 4 + AUTH_ID_LEN, AUTH_SECRET_LEN));
	for (int i = 0; i < AUTH_ID_LEN; i++)
		ck_assert((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9'));
	ck_assert_int_eq(auth_check_token_id(au, token, NULL), 0);

	ck_assert_int_eq(auth_login(au, "10.0.0.2", "wrong password", NULL, 0, token, sizeof(token),
				    id, sizeof(id), NULL, &retry, &err),
			 -EACCES);
	ck_assert_str_eq(err.msg, "wrong password");
	ck_assert_uint_eq(token_count(), 1);

	/* Two logins: two different tokens, both valid. */
	char other[AUTH_TOKEN_LEN + 1];
	ck_assert_int_eq(login("10.0.0.1", PASSWORD, NULL, other, NULL, NULL), 0);
	ck_assert_str_ne(other, token);
	ck_assert_int_eq(auth_check_token_id(au, other, NULL), 0);
	ck_assert_int_eq(auth_check_token_id(au, token, NULL), 0);
}
END_TEST

START_TEST(test_login_bad_arguments)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], client[AUTH_CLIENT_MAX + 2];
	pd_error err = {0};
	unsigned retry = 0;

	set_owner(PASSWORD);
	ck_assert_int_eq(auth_login(au, "c", PASSWORD, NULL, 0, token, AUTH_TOKEN_LEN, id,
				    sizeof(id), NULL, &retry, &err),
			 -EINVAL);
	ck_assert_int_eq(auth_login(au, "c", PASSWORD, NULL, 0, token, sizeof(token), id,
				    AUTH_ID_LEN, NULL, &retry, &err),
			 -EINVAL);
	memset(client, 'c', sizeof(client) - 1);
	client[sizeof(client) - 1] = '\0';
	ck_assert_int_eq(login(client, PASSWORD, NULL, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(login(NULL, PASSWORD, NULL, NULL, NULL, NULL), -EINVAL);
	/* Out of bounds passwords are simply wrong. */
	ck_assert_int_eq(login("c", NULL, NULL, NULL, NULL, NULL), -EACCES);
	ck_assert_uint_eq(token_count(), 0);
}
END_TEST

START_TEST(test_check_token_invalid)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], bad[AUTH_TOKEN_LEN + 2];

	set_owner(PASSWORD);
	ck_assert_int_eq(login("c", PASSWORD, NULL, token, id, NULL), 0);

	ck_assert_int_eq(auth_check_token_id(au, NULL, NULL), -EACCES);
	ck_assert_int_eq(auth_check_token_id(au, "", NULL), -EACCES);
	ck_assert_int_eq(auth_check_token_id(au, "pd_", NULL), -EACCES);
	ck_assert_int_eq(auth_check_token_id(au, PASSWORD, NULL), -EACCES);

	/* One character changed in the secret. */
	memcpy(bad, token, sizeof(token));
	bad[AUTH_TOKEN_LEN - 1] = bad[AUTH_TOKEN_LEN - 1] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(auth_check_token_id(au, bad, NULL), -EACCES);
	/* The right secret under another (unknown) id. */
	memcpy(bad, token, sizeof(token));
	bad[3] = bad[3] == 'a' ? 'b' : 'a';
	ck_assert_int_eq(auth_check_token_id(au, bad, NULL), -EACCES);
	/* Upper case id, a missing separator, truncated, extended. */
	memcpy(bad, token, sizeof(token));
	bad[4] = 'A';
	ck_assert_int_eq(auth_check_token_id(au, bad, NULL), -EACCES);
	memcpy(bad, token, sizeof(token));
	bad[3 + AUTH_ID_LEN] = '-';
	ck_assert_int_eq(auth_check_token_id(au, bad, NULL), -EACCES);
	memcpy(bad, token, sizeof(token));
	bad[AUTH_TOKEN_LEN - 1] = '\0';
	ck_assert_int_eq(auth_check_token_id(au, bad, NULL), -EACCES);
	memcpy(bad, token, sizeof(token));
	bad[AUTH_TOKEN_LEN] = 'x';
	bad[AUTH_TOKEN_LEN + 1] = '\0';
	ck_assert_int_eq(auth_check_token_id(au, bad, NULL), -EACCES);
	/* Another prefix. */
	memcpy(bad, token, sizeof(token));
	bad[0] = 'x';
	ck_assert_int_eq(auth_check_token_id(au, bad, NULL), -EACCES);

	ck_assert_int_eq(auth_check_token_id(au, token, NULL), 0);
}
END_TEST

START_TEST(test_revoke)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], keep[AUTH_TOKEN_LEN + 1];
	struct auth_token t;

	set_owner(PASSWORD);
	ck_assert_int_eq(login("c", PASSWORD, NULL, token, id, NULL), 0);
	ck_assert_int_eq(login("c", PASSWORD, NULL, keep, NULL, NULL), 0);
	ck_assert_int_eq(auth_token_revoke(au, id), 0);
	ck_assert_int_eq(auth_check_token_id(au, token, NULL), -EACCES);
	ck_assert_int_eq(auth_token_get(au, id, &t), -ENOENT);
	ck_assert_int_eq(auth_token_revoke(au, id), -ENOENT);
	ck_assert_int_eq(auth_token_revoke(au, "nosuchtoken0"), -ENOENT);
	ck_assert_int_eq(auth_token_revoke(au, NULL), -ENOENT);
	/* The other token is untouched. */
	ck_assert_int_eq(auth_check_token_id(au, keep, NULL), 0);
	ck_assert_uint_eq(token_count(), 1);
}
END_TEST

START_TEST(test_list_get)
{
	char t1[AUTH_TOKEN_LEN + 1], id1[AUTH_ID_LEN + 1], id2[AUTH_ID_LEN + 1];
	struct auth_token *v = NULL, t;
	time_t before = time(NULL);
	size_t n = 0;

	set_owner(PASSWORD);
	ck_assert_uint_eq(token_count(), 0);
	ck_assert_int_eq(login("c", PASSWORD, "laptop", t1, id1, NULL), 0);
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, id2, NULL), 0);

	ck_assert_int_eq(auth_token_list(au, &v, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(v[0].id, id1);
	ck_assert_str_eq(v[0].label, "laptop");
	ck_assert_str_eq(v[1].id, id2);
	ck_assert_str_eq(v[1].label, "");
	ck_assert_int_lt(v[0].seq, v[1].seq);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_ge(v[i].created, before);
		ck_assert_int_le(v[i].created, time(NULL));
		ck_assert_int_eq(v[i].last_used, 0);
	}

	ck_assert_int_eq(auth_token_get(au, id1, &t), 0);
	ck_assert_str_eq(t.id, id1);
	ck_assert_str_eq(t.label, "laptop");
	ck_assert_int_eq(t.seq, v[0].seq);
	ck_assert_int_eq(t.last_used, 0);
	ck_assert_int_eq(auth_token_get_seq(au, v[1].seq, &t), 0);
	ck_assert_str_eq(t.id, id2);
	ck_assert_int_eq(auth_token_get_seq(au, v[1].seq + 100, &t), -ENOENT);
	ck_assert_int_eq(auth_token_get(au, "nosuchtoken0", &t), -ENOENT);
	ck_assert_int_eq(auth_token_get(au, NULL, &t), -ENOENT);
	free(v);

	/* A use shows in last_used. */
	ck_assert_int_eq(auth_check_token_id(au, t1, NULL), 0);
	ck_assert_int_eq(auth_token_get(au, id1, &t), 0);
	ck_assert_int_ge(t.last_used, before);
	ck_assert_int_le(t.last_used, time(NULL));
}
END_TEST

START_TEST(test_seq_not_reused)
{
	char id[AUTH_ID_LEN + 1];
	struct auth_token t;
	int64_t first;

	set_owner(PASSWORD);
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, id, NULL), 0);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0);
	first = t.seq;
	ck_assert_int_eq(auth_token_revoke(au, id), 0);
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, id, NULL), 0);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0);
	ck_assert_int_gt(t.seq, first);
}
END_TEST

START_TEST(test_last_used_throttled)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], sql[256];
	struct auth_token t;
	time_t now = time(NULL);

	set_owner(PASSWORD);
	ck_assert_int_eq(login("c", PASSWORD, NULL, token, id, NULL), 0);

	/* Used 30 s ago: not written again. */
	snprintf(sql, sizeof(sql), "UPDATE tokens SET last_used = %lld WHERE id = '%s'",
		 (long long)(now - 30), id);
	raw_exec(sql);
	ck_assert_int_eq(auth_check_token_id(au, token, NULL), 0);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0);
	ck_assert_int_eq(t.last_used, now - 30);

	/* Used over a minute ago: written. */
	snprintf(sql, sizeof(sql), "UPDATE tokens SET last_used = %lld WHERE id = '%s'",
		 (long long)(now - 61), id);
	raw_exec(sql);
	ck_assert_int_eq(auth_check_token_id(au, token, NULL), 0);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0);
	ck_assert_int_ge(t.last_used, now);
}
END_TEST

START_TEST(test_label_validation)
{
	char label[AUTH_LABEL_MAX + 2], id[AUTH_ID_LEN + 1];
	static const char *const bad[] = {
	    "tab\there",	"new\nline",	"del\x7f", "\x1b[31m", "\xff", "\xc3",
	    "\xc0\xaf",		"\xed\xa0\x80", /* a surrogate */
	    "\xf4\x90\x80\x80",			/* above U+10FFFF */
	};
	struct auth_token t;

	set_owner(PASSWORD);
	memset(label, 'l', sizeof(label) - 1);
	label[sizeof(label) - 1] = '\0';
	ck_assert_int_eq(login("c", PASSWORD, label, NULL, NULL, NULL), -EINVAL); /* 65 */
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		ck_assert_msg(login("c", PASSWORD, bad[i], NULL, NULL, NULL) == -EINVAL,
			      "label %zu", i);
	ck_assert_uint_eq(token_count(), 0);
	/* A bad label is no failed login either. */
	ck_assert_int_eq(login("c", PASSWORD, "work", NULL, NULL, NULL), 0);

	label[AUTH_LABEL_MAX] = '\0';
	ck_assert_int_eq(login("c", PASSWORD, label, NULL, id, NULL), 0);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0);
	ck_assert_str_eq(t.label, label);
	ck_assert_int_eq(login("c", PASSWORD, "Café — Zoë's phone 📱", NULL, id, NULL), 0);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0);
	ck_assert_str_eq(t.label, "Café — Zoë's phone 📱");
	ck_assert_uint_eq(token_count(), 3);
}
END_TEST

/* ---- the rate limit ---- */

START_TEST(test_rate_limit)
{
	unsigned retry = 0;

	set_owner(PASSWORD);
	ck_assert_int_eq(login("10.0.0.9", "wrong one", NULL, NULL, NULL, &retry), -EACCES);
	/* Locked for 0.5 s: even the right password is refused unchecked. */
	ck_assert_int_eq(login("10.0.0.9", PASSWORD, NULL, NULL, NULL, &retry), -EAGAIN);
	ck_assert_uint_eq(retry, 1);
	sleep_ms(600);
	ck_assert_int_eq(login("10.0.0.9", "wrong two", NULL, NULL, NULL, &retry), -EACCES);
	retry = 0;
	ck_assert_int_eq(login("10.0.0.9", PASSWORD, NULL, NULL, NULL, &retry), -EAGAIN);
	ck_assert_uint_ge(retry, 1);
	ck_assert_uint_le(retry, 1); /* 1 s after the second failure */

	/* Other clients are not affected. */
	ck_assert_int_eq(login("10.0.0.10", PASSWORD, NULL, NULL, NULL, &retry), 0);

	/* 0.6 s is not enough now; 1.1 s is. */
	sleep_ms(600);
	ck_assert_int_eq(login("10.0.0.9", PASSWORD, NULL, NULL, NULL, &retry), -EAGAIN);
	sleep_ms(500);
	ck_assert_int_eq(login("10.0.0.9", PASSWORD, NULL, NULL, NULL, &retry), 0);

	/* A success starts over at 0.5 s. */
	ck_assert_int_eq(login("10.0.0.9", "wrong three", NULL, NULL, NULL, &retry), -EACCES);
	sleep_ms(600);
	ck_assert_int_eq(login("10.0.0.9", PASSWORD, NULL, NULL, NULL, &retry), 0);
	ck_assert_uint_eq(token_count(), 3);
}
END_TEST

START_TEST(test_rate_limit_doubles)
{
	unsigned retry = 0;

	set_owner(PASSWORD);
	/* Failures 1..3 lock for 0.5, 1 and 2 s. */
	ck_assert_int_eq(login("c", "wrong", NULL, NULL, NULL, &retry), -EACCES);
	sleep_ms(550);
	ck_assert_int_eq(login("c", "wrong", NULL, NULL, NULL, &retry), -EACCES);
	sleep_ms(1050);
	ck_assert_int_eq(login("c", "wrong", NULL, NULL, NULL, &retry), -EACCES);
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, NULL, &retry), -EAGAIN);
	ck_assert_uint_eq(retry, 2);
	sleep_ms(1100);
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, NULL, &retry), -EAGAIN);
	ck_assert_uint_eq(retry, 1);
	sleep_ms(1000);
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, NULL, &retry), 0);
}
END_TEST

START_TEST(test_rate_limit_evicts_oldest)
{
	char client[32];
	unsigned retry = 0;
	unsigned long long t0;

	set_owner(PASSWORD);
	/* The oldest client is locked for 4 s after four failures. */
	ck_assert_int_eq(login("old", "wrong", NULL, NULL, NULL, &retry), -EACCES);
	sleep_ms(550);
	ck_assert_int_eq(login("old", "wrong", NULL, NULL, NULL, &retry), -EACCES);
	sleep_ms(1050);
	ck_assert_int_eq(login("old", "wrong", NULL, NULL, NULL, &retry), -EACCES);
	sleep_ms(2050);
	ck_assert_int_eq(login("old", "wrong", NULL, NULL, NULL, &retry), -EACCES);
	t0 = now_usec();
	/* Fill the table; short passwords fail without hashing, so this is
	 * quick. The last one makes the table forget "old". */
	for (int i = 0; i < AUTH_CLIENTS_MAX; i++) {
		snprintf(client, sizeof(client), "10.%d.%d.1", i / 256, i % 256);
		ck_assert_int_eq(login(client, "x", NULL, NULL, NULL, &retry), -EACCES);
	}
	ck_assert_int_eq(login("old", PASSWORD, NULL, NULL, NULL, &retry), 0);
	ck_assert_msg(now_usec() - t0 < 3500000, "too slow to tell eviction from expiry");
	/* The newest is still locked. */
	snprintf(client, sizeof(client), "10.%d.%d.1", (AUTH_CLIENTS_MAX - 1) / 256,
		 (AUTH_CLIENTS_MAX - 1) % 256);
	ck_assert_int_eq(login(client, PASSWORD, NULL, NULL, NULL, &retry), -EAGAIN);
}
END_TEST

/* Concurrent logins and checks from several clients: every result is a
 * success or a refusal by the limits, and every success is a token. */
struct worker {
	int id;
	int ok, refused;
	int bad;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	char client[32], token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1];
	pd_error err = {0};
	unsigned retry;

	snprintf(client, sizeof(client), "192.168.0.%d", w->id);
	for (int i = 0; i < 10; i++) {
		int r = auth_login(au, client, PASSWORD, NULL, 0, token, sizeof(token), id,
				   sizeof(id), NULL, &retry, &err);
		if (r == 0 && auth_check_token_id(au, token, NULL) == 0)
			w->ok++;
		else if (r == -EAGAIN)
			w->refused++;
		else
			w->bad++;
	}
	return NULL;
}

START_TEST(test_concurrent)
{
	struct worker w[8] = {{0}};
	pthread_t th[8];
	int ok = 0;

	set_owner(PASSWORD);
	for (int i = 0; i < 8; i++) {
		w[i].id = i;
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(w[i].bad, 0);
		ok += w[i].ok;
	}
	ck_assert_int_gt(ok, 0);
	ck_assert_uint_eq(token_count(), (size_t)ok);
}
END_TEST

/* ---- the global budget ---- */

START_TEST(test_client_key)
{
	char k[AUTH_CLIENT_MAX + 1];

	auth_client_key("192.0.2.7", k, sizeof(k));
	ck_assert_str_eq(k, "192.0.2.7");
	auth_client_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd", k, sizeof(k));
	ck_assert_str_eq(k, "2001:db8:1:2::/64");
	auth_client_key("2001:DB8:1:2::1", k, sizeof(k));
	ck_assert_str_eq(k, "2001:db8:1:2::/64");
	auth_client_key("::ffff:198.51.100.3", k, sizeof(k));
	ck_assert_str_eq(k, "198.51.100.3");
	auth_client_key("::1", k, sizeof(k));
	ck_assert_str_eq(k, "::/64");
	auth_client_key("unix", k, sizeof(k));
	ck_assert_str_eq(k, "unix");
}
END_TEST

/* One party rotating through the addresses of its IPv6 /64 is one client. */
START_TEST(test_ipv6_grouped)
{
	unsigned retry = 0;

	set_owner(PASSWORD);
	ck_assert_int_eq(login("2001:db8:1:2::1", "wrong one", NULL, NULL, NULL, &retry), -EACCES);
	ck_assert_int_eq(login("2001:db8:1:2::99", PASSWORD, NULL, NULL, NULL, &retry), -EAGAIN);
	ck_assert_int_eq(
	    login("2001:db8:1:2:ffff:ffff:ffff:ffff", PASSWORD, NULL, NULL, NULL, &retry), -EAGAIN);
	ck_assert_int_eq(login("2001:db8:1:3::1", PASSWORD, NULL, NULL, NULL, &retry), 0);
	/* IPv4 stays per address. */
	ck_assert_int_eq(login("10.0.0.1", "wrong one", NULL, NULL, NULL, &retry), -EACCES);
	ck_assert_int_eq(login("10.0.0.2", PASSWORD, NULL, NULL, NULL, &retry), 0);
}
END_TEST

/* An attacker with as many addresses as it likes, several threads at full
 * speed, each attempt from a fresh address. */
struct attacker {
	volatile bool *stop;
	int id;
	int checked, refused, other;
};

static void *attack_run(void *arg)
{
	struct attacker *w = arg;
	char client[32];

	for (int i = 0; !*w->stop; i++) {
		snprintf(client, sizeof(client), "10.%d.%d.%d", w->id, (i / 250) % 250,
			 i % 250 + 1);
		int r = login(client, "not the password", NULL, NULL, NULL, NULL);
		if (r == -EACCES)
			w->checked++;
		else if (r == -EAGAIN)
			w->refused++;
		else
			w->other++;
	}
	return NULL;
}

static const struct auth_options tight = {
    .opslimit = crypto_pwhash_OPSLIMIT_MIN,
    .memlimit = crypto_pwhash_MEMLIMIT_MIN,
    .budget_interval_ms = 100,
    .budget_burst = 3,
    .queue_max = 4,
    .verify_max = 2,
};

START_TEST(test_budget_bounds_rotation)
{
	struct attacker w[8] = {{0}};
	pthread_t th[8];
	volatile bool stop = false;
	int checked = 0, refused = 0;
	unsigned long long t0, t1, wait;

	open_auth_with(&tight);
	set_owner(PASSWORD);
	t0 = now_usec();
	for (int i = 0; i < 8; i++) {
		w[i].stop = &stop;
		w[i].id = i + 1;
		ck_assert_int_eq(pthread_create(&th[i], NULL, attack_run, &w[i]), 0);
	}
	sleep_ms(2000);
	stop = true;
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(w[i].other, 0);
		checked += w[i].checked;
		refused += w[i].refused;
	}
	t1 = now_usec();
	/* At most the burst plus one check per 100 ms while it lasted. */
	int most = 3 + (int)((t1 - t0) / 100000) + 1;
	fprintf(stderr, "# %d passwords checked, %d refused in %.2f s (at most %d allowed)\n",
		checked, refused, (double)(t1 - t0) / 1e6, most);
	ck_assert_int_le(checked, most);
	ck_assert_int_ge(checked, most / 2); /* the budget is used, not starved */
	ck_assert_int_gt(refused, 0);	     /* the queue is bounded */

	/* Right after the attack the owner, from a fresh address, gets in:
	 * within the queue's worth of budget. */
	t0 = now_usec();
	ck_assert_int_eq(login("192.0.2.200", PASSWORD, NULL, NULL, NULL, NULL), 0);
	wait = now_usec() - t0;
	ck_assert_msg(wait < 4 * 100000 + 300000, "waited %llu us", wait);
}
END_TEST

/* A login that finds the budget empty waits for its unit rather than being
 * refused; a full queue gives the place of its oldest login to the newest. */
struct waiter {
	const char *client;
	int r;
	unsigned retry;
	unsigned long long done;
};

static void *waiter_run(void *arg)
{
	struct waiter *w = arg;

	w->r = login(w->client, PASSWORD, NULL, NULL, NULL, &w->retry);
	w->done = now_usec();
	return NULL;
}

static const struct auth_options slow = {
    .opslimit = crypto_pwhash_OPSLIMIT_MIN,
    .memlimit = crypto_pwhash_MEMLIMIT_MIN,
    .budget_interval_ms = 400,
    .budget_burst = 1,
    .queue_max = 2,
    .verify_max = 1,
};

START_TEST(test_queue_newest_wins)
{
	struct waiter w[3] = {{"10.9.0.1", 1, 0, 0}, {"10.9.0.2", 1, 0, 0}, {"10.9.0.3", 1, 0, 0}};
	pthread_t th[3];
	unsigned long long t0;

	open_auth_with(&slow);
	set_owner(PASSWORD);
	t0 = now_usec();
	ck_assert_int_eq(login("10.9.0.9", PASSWORD, NULL, NULL, NULL, NULL), 0); /* the burst */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(pthread_create(&th[i], NULL, waiter_run, &w[i]), 0);
		sleep_ms(50);
	}
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	/* The first was pushed out by the third, early, with a retry time. */
	ck_assert_int_eq(w[0].r, -EAGAIN);
	ck_assert_uint_ge(w[0].retry, 1);
	ck_assert_uint_lt(w[0].done - t0, 300000);
	/* The others waited for their units, in order, 400 ms apart. */
	ck_assert_int_eq(w[1].r, 0);
	ck_assert_int_eq(w[2].r, 0);
	ck_assert_uint_ge(w[1].done - t0, 380000);
	ck_assert_uint_ge(w[2].done - t0, 780000);
	ck_assert_uint_gt(w[2].done, w[1].done);
	ck_assert_uint_eq(token_count(), 3);
}
END_TEST

START_TEST(test_cancel_waiting)
{
	struct waiter w = {"10.9.1.1", 1, 0, 0};
	pthread_t th;
	unsigned long long t0;

	open_auth_with(&slow);
	set_owner(PASSWORD);
	ck_assert_int_eq(login("10.9.1.9", PASSWORD, NULL, NULL, NULL, NULL), 0);
	t0 = now_usec();
	ck_assert_int_eq(pthread_create(&th, NULL, waiter_run, &w), 0);
	sleep_ms(100);
	auth_cancel_waiting(au);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(w.r, -EAGAIN);
	ck_assert_uint_lt(w.done - t0, 300000);
	/* Not a failure of that client: it may log in again at once. */
	ck_assert_int_eq(login("10.9.1.1", PASSWORD, NULL, NULL, NULL, NULL), 0);
}
END_TEST

/* Attempts that cannot be the password cost no verification: they do not
 * use the budget the owner needs. */
START_TEST(test_impossible_passwords_free)
{
	char client[32];
	unsigned long long t0;

	open_auth_with(&slow);
	set_owner(PASSWORD);
	for (int i = 0; i < 50; i++) {
		snprintf(client, sizeof(client), "10.8.0.%d", i + 1);
		ck_assert_int_eq(login(client, "short", NULL, NULL, NULL, NULL), -EACCES);
	}
	t0 = now_usec();
	ck_assert_int_eq(login("10.8.1.1", PASSWORD, NULL, NULL, NULL, NULL), 0);
	ck_assert_uint_lt(now_usec() - t0, 200000);
}
END_TEST

/* ---- revocation hooks ---- */

struct hook_log {
	int calls;
	char last[AUTH_ID_LEN + 1];
};

static void on_revoked(void *userdata, const char *id, time_t expired)
{
	struct hook_log *l = userdata;

	ck_assert_int_eq(expired, 0);
	l->calls++;
	snprintf(l->last, sizeof(l->last), "%s", id);
	/* The token is gone by the time hooks run. */
	struct auth_token t;
	ck_assert_int_eq(auth_token_get(au, id, &t), -ENOENT);
}

START_TEST(test_revoke_hooks)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], seen[AUTH_ID_LEN + 1];
	struct hook_log a = {0}, b = {0};
	uint64_t gen;

	set_owner(PASSWORD);
	ck_assert_int_eq(login("c", PASSWORD, NULL, token, id, NULL), 0);
	ck_assert_int_eq(auth_check_token_id(au, token, seen), 0);
	ck_assert_str_eq(seen, id);
	ck_assert_int_eq(auth_add_revoke_hook(au, on_revoked, &a), 0);
	ck_assert_int_eq(auth_add_revoke_hook(au, on_revoked, &b), 0);
	gen = auth_revocations(au);
	ck_assert_int_eq(auth_token_revoke(au, id), 0);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(b.calls, 1);
	ck_assert_str_eq(a.last, id);
	ck_assert_uint_eq(auth_revocations(au), gen + 1);
	ck_assert_int_eq(auth_check_token_id(au, token, seen), -EACCES);

	/* No such token: no call, no new generation. */
	ck_assert_int_eq(auth_token_revoke(au, id), -ENOENT);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_uint_eq(auth_revocations(au), gen + 1);

	auth_remove_revoke_hook(au, on_revoked, &a);
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, id, NULL), 0);
	ck_assert_int_eq(auth_token_revoke(au, id), 0);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(b.calls, 2);
	auth_remove_revoke_hook(au, on_revoked, &b);

	for (int i = 0; i < AUTH_HOOKS_MAX; i++)
		ck_assert_int_eq(auth_add_revoke_hook(au, on_revoked, &a), 0);
	ck_assert_int_eq(auth_add_revoke_hook(au, on_revoked, &a), -ENOSPC);
}
END_TEST

/* ---- expiry ---- */

static int login_ttl(const char *client, const char *password, int64_t ttl, char *token, char *id,
		     time_t *expires, pd_error *err)
{
	char tbuf[AUTH_TOKEN_LEN + 1], ibuf[AUTH_ID_LEN + 1];
	unsigned retry = 0;

	pd_error_clear(err);
	return auth_login(au, client, password, NULL, ttl, token ? token : tbuf, AUTH_TOKEN_LEN + 1,
			  id ? id : ibuf, AUTH_ID_LEN + 1, expires, &retry, err);
}

/* Sets a token's expiry behind auth's back (an older one than a login
 * can make), through a connection of the test's own. */
static void set_expires(const char *id, int64_t when)
{
	sqlite3 *db = NULL;
	char sql[128];

	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	snprintf(sql, sizeof(sql), "UPDATE tokens SET expires = %lld WHERE id = '%s'",
		 (long long)when, id);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_changes(db), 1);
	sqlite3_close(db);
}

START_TEST(test_token_expiry)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], old[AUTH_TOKEN_LEN + 1],
	    old_id[AUTH_ID_LEN + 1], forever[AUTH_TOKEN_LEN + 1], seen[AUTH_ID_LEN + 1];
	time_t expires = -1, now = time(NULL);
	struct auth_token t;
	pd_error err = {0};

	set_owner(PASSWORD);
	/* No ttl, no token_ttl: never. */
	ck_assert_int_eq(login_ttl("c", PASSWORD, 0, forever, NULL, &expires, &err), 0);
	ck_assert_int_eq(expires, 0);
	ck_assert_int_eq(auth_check_token(au, forever, NULL, &expires), 0);
	ck_assert_int_eq(expires, 0);

	ck_assert_int_eq(login_ttl("c", PASSWORD, 100, token, id, &expires, &err), 0);
	ck_assert_int_ge(expires, now + 100);
	ck_assert_int_le(expires, time(NULL) + 100);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0);
	ck_assert_int_eq(t.expires, expires);
	time_t made = expires;
	ck_assert_int_eq(auth_check_token(au, token, seen, &expires), 0);
	ck_assert_int_eq(expires, made);
	ck_assert_str_eq(seen, id);

	/* Expired: refused, and told apart from an unknown token. */
	set_expires(id, now - 10);
	ck_assert_int_eq(auth_check_token(au, token, NULL, &expires), -EACCES);
	ck_assert_int_eq(expires, now - 10);
	ck_assert_int_eq(auth_check_token_id(au, token, NULL), -EACCES);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0); /* kept for the reason */
	ck_assert_int_eq(t.expires, now - 10);
	/* The right ID with a wrong secret says nothing of the expiry. */
	char wrong[AUTH_TOKEN_LEN + 1];
	memcpy(wrong, token, sizeof(wrong));
	wrong[AUTH_TOKEN_LEN - 1] = wrong[AUTH_TOKEN_LEN - 1] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(auth_check_token(au, wrong, NULL, &expires), -EACCES);
	ck_assert_int_eq(expires, 0);
	ck_assert_uint_eq(token_count(), 2);

	/* Expired long ago: deleted by its check, then unknown. */
	set_expires(id, now - AUTH_EXPIRED_KEEP - 1);
	ck_assert_int_eq(auth_check_token(au, token, NULL, &expires), -EACCES);
	ck_assert_int_eq(expires, 0);
	ck_assert_int_eq(auth_token_get(au, id, &t), -ENOENT);

	/* ... or by a listing, or a login. */
	ck_assert_int_eq(login_ttl("c", PASSWORD, 5, old, old_id, &expires, &err), 0);
	set_expires(old_id, now - AUTH_EXPIRED_KEEP - 1);
	ck_assert_uint_eq(token_count(), 1);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 5, old, old_id, &expires, &err), 0);
	set_expires(old_id, now - AUTH_EXPIRED_KEEP - 1);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 0, NULL, NULL, NULL, &err), 0);
	ck_assert_int_eq(auth_token_get(au, old_id, &t), -ENOENT);
	ck_assert_int_eq(auth_check_token_id(au, forever, NULL), 0);
}
END_TEST

START_TEST(test_ttl_bounds)
{
	char id[AUTH_ID_LEN + 1];
	time_t expires = -1;
	pd_error err = {0};
	unsigned retry = 0;
	char token[AUTH_TOKEN_LEN + 1];

	set_owner(PASSWORD);
	/* Refused before the password is looked at: no lockout, no token. */
	ck_assert_int_eq(login_ttl("c", PASSWORD, -1, NULL, NULL, NULL, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "ttl"));
	ck_assert_int_eq(login_ttl("c", "wrong password", AUTH_TTL_MAX + 1, NULL, NULL, NULL, &err),
			 -EINVAL);
	ck_assert_int_eq(login_ttl("c", PASSWORD, INT64_MAX, NULL, NULL, NULL, &err), -EINVAL);
	ck_assert_uint_eq(token_count(), 0);
	ck_assert_int_eq(auth_login(au, "c", PASSWORD, NULL, AUTH_TTL_MAX, token, sizeof(token), id,
				    sizeof(id), &expires, &retry, &err),
			 0);
	ck_assert_int_ge(expires, time(NULL) + AUTH_TTL_MAX - 2);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 1, NULL, NULL, NULL, &err), 0);
	ck_assert_uint_eq(token_count(), 2);
}
END_TEST

/* token_ttl: the lifetime of a login that names none, and the longest one
 * may ask for. */
START_TEST(test_token_ttl_default)
{
	struct auth_options o = fast;
	time_t expires = 0, now;
	pd_error err = {0};

	o.token_ttl = 60;
	open_auth_with(&o);
	set_owner(PASSWORD);
	now = time(NULL);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 0, NULL, NULL, &expires, &err), 0);
	ck_assert_int_ge(expires, now + 60);
	ck_assert_int_le(expires, time(NULL) + 60);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 30, NULL, NULL, &expires, &err), 0);
	ck_assert_int_le(expires, time(NULL) + 30);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 60, NULL, NULL, &expires, &err), 0);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 61, NULL, NULL, &expires, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "ttl: at most 60 seconds on this server (its token_ttl)");
	ck_assert_uint_eq(token_count(), 3);

	/* Out of bounds itself: refused. */
	o.token_ttl = AUTH_TTL_MAX + 1;
	au = auth_free(au);
	ck_assert_int_eq(auth_new(db_path, &o, &au, &err), -EINVAL);
	ck_assert_ptr_null(au);
}
END_TEST

struct expiry_log {
	unsigned calls;
	char last[AUTH_ID_LEN + 1];
	time_t expired;
};

static void on_expired(void *userdata, const char *id, time_t expired)
{
	struct expiry_log *l = userdata;

	l->calls++;
	snprintf(l->last, sizeof(l->last), "%s", id);
	l->expired = expired;
}

/* Each expiry is announced once, through the revocation hooks, after it
 * passed; a token that expired before the start is not. */
START_TEST(test_expire_tick)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], gone_id[AUTH_ID_LEN + 1];
	struct expiry_log l = {0};
	time_t expires = 0;
	pd_error err = {0};
	uint64_t gen;

	set_owner(PASSWORD);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 1000, NULL, gone_id, NULL, &err), 0);
	set_expires(gone_id, time(NULL) - 5);
	au = auth_free(au);
	open_auth();
	ck_assert_int_eq(auth_add_revoke_hook(au, on_expired, &l), 0);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 1, token, id, &expires, &err), 0);
	ck_assert_int_eq(login_ttl("c", PASSWORD, 0, NULL, NULL, NULL, &err), 0);
	gen = auth_revocations(au);
	auth_expire_tick(au);
	if (time(NULL) < expires)
		ck_assert_uint_eq(l.calls, 0);
	while (time(NULL) < expires)
		sleep_ms(50);
	auth_expire_tick(au);
	ck_assert_uint_eq(l.calls, 1);
	ck_assert_str_eq(l.last, id);
	ck_assert_int_eq(l.expired, expires);
	ck_assert_uint_gt(auth_revocations(au), gen);
	ck_assert_int_eq(auth_check_token(au, token, NULL, &expires), -EACCES);
	ck_assert_int_eq(expires, l.expired);
	gen = auth_revocations(au);
	auth_expire_tick(au);
	ck_assert_uint_eq(l.calls, 1);
	ck_assert_uint_eq(auth_revocations(au), gen);
	auth_remove_revoke_hook(au, on_expired, &l);
}
END_TEST

/* ---- persistence ---- */

START_TEST(test_persistence)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], secret[AUTH_SECRET_LEN + 1];
	struct auth_token t;

	set_owner(PASSWORD);
	ck_assert_int_eq(login("c", PASSWORD, "desk", token, id, NULL), 0);
	au = auth_free(au);
	open_auth();

	ck_assert(auth_has_owner(au));
	ck_assert_int_eq(auth_check_token_id(au, token, NULL), 0);
	ck_assert_int_eq(auth_token_get(au, id, &t), 0);
	ck_assert_str_eq(t.label, "desk");
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, NULL, NULL), 0);
	ck_assert_int_eq(login("d", "not it at all", NULL, NULL, NULL, NULL), -EACCES);
	ck_assert_int_eq(auth_setup_begin(au, secret, sizeof(secret)), -EEXIST);
	ck_assert_uint_eq(token_count(), 2);
}
END_TEST

START_TEST(test_persistence_setup_replaced)
{
	char old[AUTH_SECRET_LEN + 1], fresh[AUTH_SECRET_LEN + 1];
	pd_error err = {0};

	begin(old);
	au = auth_free(au);
	open_auth();
	ck_assert(!auth_has_owner(au));
	/* What a restart does: a fresh link; the old one stops working. */
	begin(fresh);
	ck_assert_str_ne(old, fresh);
	ck_assert_int_eq(auth_setup_finish(au, old, PASSWORD, &err), -ENOENT);
	ck_assert_int_eq(auth_setup_finish(au, fresh, PASSWORD, &err), 0);
}
END_TEST

START_TEST(test_production_cost)
{
	char secret[AUTH_SECRET_LEN + 1];
	pd_error err = {0};
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char want[64];

	au = auth_free(au);
	ck_assert_int_eq(auth_new(db_path, NULL, &au, &err), 0);
	begin(secret);
	ck_assert_int_eq(auth_setup_finish(au, secret, PASSWORD, &err), 0);
	ck_assert_int_eq(login("c", PASSWORD, NULL, NULL, NULL, NULL), 0);

	/* Argon2id at the interactive limits; nothing of the password. */
	ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT pwhash FROM owner", -1, &st, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	const char *h = (const char *)sqlite3_column_text(st, 0);
	snprintf(want, sizeof(want), "$argon2id$v=19$m=%zu,t=%llu,p=1$",
		 (size_t)crypto_pwhash_MEMLIMIT_INTERACTIVE / 1024,
		 (unsigned long long)crypto_pwhash_OPSLIMIT_INTERACTIVE);
	ck_assert_msg(strncmp(h, want, strlen(want)) == 0, "%s", h);
	ck_assert_ptr_null(strstr(h, PASSWORD));
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

static Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_setup_once);
	tcase_add_test(tc, test_setup_replaced);
	tcase_add_test(tc, test_login_right_wrong);
	tcase_add_test(tc, test_revoke);
	tcase_add_test(tc, test_list_get);
	tcase_add_test(tc, test_seq_not_reused);
	tcase_add_test(tc, test_last_used_throttled);
	tcase_add_test(tc, test_persistence);
	tcase_add_test(tc, test_persistence_setup_replaced);
	tcase_add_test(tc, test_production_cost);
	tcase_add_test(tc, test_concurrent);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_setup_password_bounds);
	tcase_add_test(tc, test_label_validation);
	tcase_add_test(tc, test_rate_limit);
	tcase_add_test(tc, test_rate_limit_doubles);
	tcase_add_test(tc, test_rate_limit_evicts_oldest);
	tcase_add_test(tc, test_client_key);
	tcase_add_test(tc, test_ipv6_grouped);
	tcase_add_test(tc, test_budget_bounds_rotation);
	tcase_add_test(tc, test_queue_newest_wins);
	tcase_add_test(tc, test_cancel_waiting);
	tcase_add_test(tc, test_impossible_passwords_free);
	tcase_add_test(tc, test_revoke_hooks);
	tcase_add_test(tc, test_token_expiry);
	tcase_add_test(tc, test_ttl_bounds);
	tcase_add_test(tc, test_token_ttl_default);
	tcase_add_test(tc, test_expire_tick);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_setup_wrong_secret);
	tcase_add_test(tc, test_setup_small_buffer);
	tcase_add_test(tc, test_login_before_setup);
	tcase_add_test(tc, test_login_bad_arguments);
	tcase_add_test(tc, test_check_token_invalid);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return check_tap_run(auth_suite());
}
