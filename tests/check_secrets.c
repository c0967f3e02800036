/* check_secrets.c - secrets: sealing and opening (round trip, a tampered
 * ciphertext, another key, another name), names, the key file's checks, the
 * store's tables, the supervisor's reader of the daemon's pipe and its merge
 * into a job's environment, and the engine's list per box (eng_secrets_env)
 * on the in-memory runtime. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box/supervisor.h"
#include "check-mounts.h"
#include "check-tap.h"
#include "common/config.h"
#include "common/util.h"
#include "engine/internal.h"
#include "engine/secrets.h"
#include "runtime/fake.h"
#include "store/store.h"

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/check_secrets.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	detach_under(tmpdir);
	rm_rf(tmpdir);
}

static void random_key(unsigned char *key)
{
	ck_assert_int_ge(sodium_init(), 0);
	randombytes_buf(key, crypto_secretbox_KEYBYTES);
}

/* --- sealing ------------------------------------------------------------------ */

START_TEST(round_trip)
{
	unsigned char key[32], *nonce, *ct;
	const char value[] = "sk-ant-0123456789\nsecond line";
	size_t ct_len, len;
	char *out;

	random_key(key);
	ck_assert_int_eq(secret_seal(key, "API_KEY", value, strlen(value), &nonce, &ct, &ct_len),
			 0);
	ck_assert_ptr_null(memmem(ct, ct_len, "sk-ant", 6)); /* not in clear */
	ck_assert_int_eq(secret_open(key, "API_KEY", nonce, 24, ct, ct_len, &out, &len), 0);
	ck_assert_uint_eq(len, strlen(value));
	ck_assert_str_eq(out, value);
	secret_value_free(out);
	free(nonce);
	free(ct);
}
END_TEST

START_TEST(empty_value)
{
	unsigned char key[32], *nonce, *ct;
	size_t ct_len, len = 99;
	char *out;

	random_key(key);
	ck_assert_int_eq(secret_seal(key, "E", "", 0, &nonce, &ct, &ct_len), 0);
	ck_assert_int_eq(secret_open(key, "E", nonce, 24, ct, ct_len, &out, &len), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(out, "");
	secret_value_free(out);
	free(nonce);
	free(ct);
}
END_TEST

START_TEST(fresh_nonce_each_time)
{
	unsigned char key[32], *n1, *n2, *c1, *c2;
	size_t l1, l2;

	random_key(key);
	ck_assert_int_eq(secret_seal(key, "A", "same", 4, &n1, &c1, &l1), 0);
	ck_assert_int_eq(secret_seal(key, "A", "same", 4, &n2, &c2, &l2), 0);
	ck_assert_mem_ne(n1, n2, 24);
	ck_assert_uint_eq(l1, l2);
	ck_assert_mem_ne(c1, c2, l1);
	free(n1), free(n2), free(c1), free(c2);
}
END_TEST

START_TEST(tampered_refused)
{
	unsigned char key[32], *nonce, *ct;
	size_t ct_len, len;
	char *out = NULL;

	random_key(key);
	ck_assert_int_eq(secret_seal(key, "TOKEN", "value", 5, &nonce, &ct, &ct_len), 0);
	for (size_t i = 0; i < ct_len; i++) {
		ct[i] ^= 0x01;
		ck_assert_int_eq(secret_open(key, "TOKEN", nonce, 24, ct, ct_len, &out, &len),
				 -EBADMSG);
		ct[i] ^= 0x01;
	}
	nonce[3] ^= 0x80;
	ck_assert_int_eq(secret_open(key, "TOKEN", nonce, 24, ct, ct_len, &out, &len), -EBADMSG);
	nonce[3] ^= 0x80;
	/* Cut short, or a nonce of the wrong size. */
	ck_assert_int_eq(secret_open(key, "TOKEN", nonce, 24, ct, ct_len - 1, &out, &len),
			 -EBADMSG);
	ck_assert_int_eq(secret_open(key, "TOKEN", nonce, 23, ct, ct_len, &out, &len), -EBADMSG);
	ck_assert_int_eq(secret_open(key, "TOKEN", nonce, 24, ct, 3, &out, &len), -EBADMSG);
	ck_assert_ptr_null(out);
	free(nonce);
	free(ct);
}
END_TEST

START_TEST(wrong_key_refused)
{
	unsigned char key[32], other[32], *nonce, *ct;
	size_t ct_len, len;
	char *out = NULL;

	random_key(key);
	random_key(other);
	ck_assert_int_eq(secret_seal(key, "TOKEN", "value", 5, &nonce, &ct, &ct_len), 0);
	ck_assert_int_eq(secret_open(other, "TOKEN", nonce, 24, ct, ct_len, &out, &len), -EBADMSG);
	ck_assert_ptr_null(out);
	free(nonce);
	free(ct);
}
END_TEST

/* A value moved to another secret's row (same key) does not open there. */
START_TEST(other_name_refused)
{
	unsigned char key[32], *nonce, *ct;
	size_t ct_len, len;
	char *out = NULL;

	random_key(key);
	ck_assert_int_eq(secret_seal(key, "ADMIN", "root-pw", 7, &nonce, &ct, &ct_len), 0);
	ck_assert_int_eq(secret_open(key, "GUEST", nonce, 24, ct, ct_len, &out, &len), -EBADMSG);
	ck_assert_int_eq(secret_open(key, "ADMIN2", nonce, 24, ct, ct_len, &out, &len), -EBADMSG);
	ck_assert_int_eq(secret_open(key, "ADMI", nonce, 24, ct, ct_len, &out, &len), -EBADMSG);
	ck_assert_ptr_null(out);
	free(nonce);
	free(ct);
}
END_TEST

START_TEST(value_too_large)
{
	unsigned char key[32], *nonce, *ct;
	size_t ct_len;
	char *big = calloc(1, SECRET_VALUE_MAX + 2);

	random_key(key);
	memset(big, 'a', SECRET_VALUE_MAX + 1);
	ck_assert_int_eq(secret_seal(key, "BIG", big, SECRET_VALUE_MAX + 1, &nonce, &ct, &ct_len),
			 -EFBIG);
	ck_assert_int_eq(secret_seal(key, "BIG", big, SECRET_VALUE_MAX, &nonce, &ct, &ct_len), 0);
	free(nonce);
	free(ct);
	free(big);
}
END_TEST

/* --- names ------------------------------------------------------------------------ */

START_TEST(name_rules)
{
	char longest[SECRET_NAME_MAX + 2];

	ck_assert(secret_name_valid("ANTHROPIC_API_KEY"));
	ck_assert(secret_name_valid("_"));
	ck_assert(secret_name_valid("a1"));
	ck_assert(!secret_name_valid(""));
	ck_assert(!secret_name_valid(NULL));
	ck_assert(!secret_name_valid("1A"));
	ck_assert(!secret_name_valid("A-B"));
	ck_assert(!secret_name_valid("A=B"));
	ck_assert(!secret_name_valid("../x"));
	ck_assert(!secret_name_valid("a/b"));
	ck_assert(!secret_name_valid("."));
	ck_assert(!secret_name_valid(".."));
	ck_assert(!secret_name_valid("A B"));
	ck_assert(!secret_name_valid("A\nB"));
	ck_assert(!secret_name_valid("É"));
	memset(longest, 'A', SECRET_NAME_MAX);
	longest[SECRET_NAME_MAX] = '\0';
	ck_assert(secret_name_valid(longest));
	longest[SECRET_NAME_MAX] = 'A';
	longest[SECRET_NAME_MAX + 1] = '\0';
	ck_assert(!secret_name_valid(longest));
}
END_TEST

/* --- the key file ---------------------------------------------------------------- */

START_TEST(key_made_once)
{
	unsigned char k1[32], k2[32];
	char path[128];
	struct stat st;
	pd_error err = {0};

	snprintf(path, sizeof path, "%s/secrets.key", tmpdir);
	ck_assert_int_eq(secret_key_load(path, false, k1, &err), -ENOENT);
	ck_assert_int_eq(secret_key_load(path, true, k1, &err), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(st.st_size, 32);
	ck_assert_int_eq(secret_key_load(path, true, k2, &err), 0);
	ck_assert_mem_eq(k1, k2, 32); /* loaded again, not made again */
}
END_TEST

START_TEST(key_wrong_mode_refused)
{
	unsigned char key[32];
	char path[128];
	struct stat st;
	pd_error err = {0};

	snprintf(path, sizeof path, "%s/secrets.key", tmpdir);
	ck_assert_int_eq(secret_key_load(path, true, key, &err), 0);
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(secret_key_load(path, true, key, &err), -EPERM);
	ck_assert_ptr_nonnull(strstr(err.msg, "mode 0640, not 0600"));
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640); /* left alone */
	ck_assert_int_eq(chmod(path, 0400), 0);
	ck_assert_int_eq(secret_key_load(path, true, key, &err), -EPERM);
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert_int_eq(secret_key_load(path, true, key, &err), 0);
}
END_TEST

START_TEST(key_wrong_owner_refused)
{
	unsigned char key[32];
	char path[128];
	pd_error err = {0};

	if (geteuid() != 0)
		return; /* only root can give a file away */
	snprintf(path, sizeof path, "%s/secrets.key", tmpdir);
	ck_assert_int_eq(secret_key_load(path, true, key, &err), 0);
	ck_assert_int_eq(chown(path, 65534, 0), 0);
	ck_assert_int_eq(secret_key_load(path, true, key, &err), -EPERM);
	ck_assert_ptr_nonnull(strstr(err.msg, "owned by uid 65534"));
}
END_TEST

START_TEST(key_not_a_key_refused)
{
	unsigned char key[32];
	char path[128], target[128];
	pd_error err = {0};
	int fd;

	snprintf(path, sizeof path, "%s/secrets.key", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "short", 5), 5);
	close(fd);
	ck_assert_int_eq(secret_key_load(path, true, key, &err), -EPERM);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a key"));
	/* A link is not followed (someone could point it at their own file). */
	ck_assert_int_eq(unlink(path), 0);
	snprintf(target, sizeof target, "%s/elsewhere", tmpdir);
	ck_assert_int_eq(secret_key_load(target, true, key, &err), 0);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_lt(secret_key_load(path, true, key, &err), 0);
	/* A directory is not a key. */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkdir(path, 0600), 0);
	ck_assert_int_lt(secret_key_load(path, true, key, &err), 0);
}
END_TEST

/* --- the store -------------------------------------------------------------------- */

static struct store *open_store(void)
{
	char path[128];
	struct store *s;
	pd_error err = {0};

	snprintf(path, sizeof path, "%s/paddock.db", tmpdir);
	ck_assert_int_eq(store_open(path, &s, &err), 0);
	return s;
}

static int64_t add_box(struct store *s, const char *name)
{
	struct box_row row = {0};
	pd_error err = {0};

	snprintf(row.name, sizeof row.name, "%s", name);
	snprintf(row.state, sizeof row.state, "created");
	snprintf(row.type, sizeof row.type, "small");
	snprintf(row.image, sizeof row.image, "tiny");
	ck_assert_int_eq(store_box_insert(s, &row, &err), 0);
	return row.id;
}

START_TEST(store_tables)
{
	struct store *s = open_store();
	struct secret_row row;
	pd_error err = {0};
	int64_t id1, id1b, id2, box;
	char **names;
	size_t n;

	ck_assert_int_eq(store_secret_put(s, "A", "n1", 2, "c1", 2, 100, &id1, &err), 0);
	ck_assert_int_eq(store_secret_put(s, "B", "n2", 2, "c2", 2, 101, &id2, &err), 0);
	/* A new value keeps the id (the tree's inode). */
	ck_assert_int_eq(store_secret_put(s, "A", "n3", 2, "c3x", 3, 102, &id1b, &err), 0);
	ck_assert_int_eq(id1, id1b);
	ck_assert_int_eq(store_secret_get(s, "A", 0, true, &row), 0);
	ck_assert_int_eq(row.set_time, 102);
	ck_assert_uint_eq(row.value_len, 3);
	ck_assert_mem_eq(row.value, "c3x", 3);
	ck_assert_mem_eq(row.nonce, "n3", 2);
	secret_row_release(&row);
	ck_assert_int_eq(store_secret_get(s, NULL, id2, false, &row), 0);
	ck_assert_str_eq(row.name, "B");
	ck_assert_ptr_null(row.value);
	ck_assert_int_eq(store_secret_get(s, "C", 0, false, &row), -ENOENT);

	box = add_box(s, "b");
	char *list[] = {(char *)"B", (char *)"A"};
	ck_assert_int_eq(store_box_set_secrets(s, box, list, 2, &err), 0);
	ck_assert_int_eq(store_box_secrets(s, box, &names, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(names[0], "B");
	ck_assert_str_eq(names[1], "A");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);

	/* An unset name: refused whole, the old list stays. */
	char *bad[] = {(char *)"A", (char *)"NOPE"};
	ck_assert_int_eq(store_box_set_secrets(s, box, bad, 2, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "secret NOPE is not set");
	char *twice[] = {(char *)"A", (char *)"A"};
	ck_assert_int_eq(store_box_set_secrets(s, box, twice, 2, &err), -EEXIST);
	ck_assert_int_eq(store_box_secrets(s, box, &names, &n), 0);
	ck_assert_uint_eq(n, 2);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);

	/* Removing a secret drops it from the box's list. */
	ck_assert_int_eq(store_secret_delete(s, id2, &err), 0);
	ck_assert_int_eq(store_secret_delete(s, id2, &err), -ENOENT);
	ck_assert_int_eq(store_box_secrets(s, box, &names, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(names[0], "A");
	free(names[0]);
	free(names);
	ck_assert_int_eq(store_secret_names(s, &names, &n), 0);
	ck_assert_uint_eq(n, 1);
	free(names[0]);
	free(names);

	/* Deleting the box drops its list. */
	ck_assert_int_eq(store_box_delete(s, box, &err), 0);
	ck_assert_int_eq(store_box_secrets(s, box, &names, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(names);
	store_close(s);
}
END_TEST

/* --- the supervisor's side ----------------------------------------------------------- */

static int pipe_with(const char *data, size_t len)
{
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], data, len), (ssize_t)len);
	close(p[1]);
	return p[0];
}

START_TEST(supervisor_reads_the_pipe)
{
	static const char data[] = "A=1\0B=two words\0C=\0";
	char **v = NULL;

	ck_assert_int_eq(sup_secrets_read(pipe_with(data, sizeof data - 1), &v), 0);
	ck_assert_str_eq(v[0], "A=1");
	ck_assert_str_eq(v[1], "B=two words");
	ck_assert_str_eq(v[2], "C=");
	ck_assert_ptr_null(v[3]);
	sup_secrets_free(v);
	ck_assert_int_eq(sup_secrets_read(pipe_with("", 0), &v), 0);
	ck_assert_ptr_null(v[0]);
	sup_secrets_free(v);
	/* Malformed: no '=', an empty name, an unterminated last entry. */
	ck_assert_int_eq(sup_secrets_read(pipe_with("A\0", 2), &v), -EINVAL);
	ck_assert_int_eq(sup_secrets_read(pipe_with("=x\0", 3), &v), -EINVAL);
	ck_assert_int_eq(sup_secrets_read(pipe_with("A=1", 3), &v), -EINVAL);
}
END_TEST

START_TEST(supervisor_merges_env)
{
	struct sup_spec *spec;
	pd_error err = {0};
	static const char json[] = "{\"container\":\"x\",\"crun\":\"/c\",\"crun_root\":\"/r\","
				   "\"env\":[\"PATH=/bin\",\"API_KEY=mine\"],\"argv\":[\"sh\"]}";
	char *secrets[] = {(char *)"API_KEY=secret", (char *)"TOKEN=t", (char *)"PATHX=p", NULL};

	ck_assert_int_eq(sup_spec_parse(json, strlen(json), &spec, &err), 0);
	ck_assert_int_eq(sup_spec_add_env(spec, secrets), 0);
	/* The job's own env line wins; names are compared whole. */
	ck_assert_str_eq(spec->env[0], "PATH=/bin");
	ck_assert_str_eq(spec->env[1], "API_KEY=mine");
	ck_assert_str_eq(spec->env[2], "TOKEN=t");
	ck_assert_str_eq(spec->env[3], "PATHX=p");
	ck_assert_ptr_null(spec->env[4]);
	sup_spec_free(spec);
}
END_TEST

/* --- the engine (in-memory runtime) ---------------------------------------------------- */

static void replace(char **field, const char *value)
{
	free(*field);
	*field = strdup(value);
}

START_TEST(engine_box_env)
{
	struct pd_config cfg;
	struct runtime *rt;
	struct engine *e;
	struct box_view v;
	pd_error err = {0};
	char path[256], **env, *list;

	ck_assert_int_eq(config_load(NULL, &cfg, &err), 0);
	snprintf(path, sizeof path, "%s/data", tmpdir);
	replace(&cfg.data, path);
	snprintf(path, sizeof path, "%s/run", tmpdir);
	replace(&cfg.run, path);
	replace(&cfg.default_image, "tiny");
	cfg.network = false;
	cfg.userns = false;
	cfg.disk_limit = false;
	free(cfg.lxcfs);
	cfg.lxcfs = NULL;
	static const char *const image[][2] = {{"rootfs/etc/passwd", "root:x:0:0::/root:/bin/sh\n"},
					       {"description", "test image\n"},
					       {"size", "4096\n"},
					       {"created", "2026-01-01T00:00:00Z\n"}};
	snprintf(path, sizeof path, "%s/data/images/tiny/rootfs/etc", tmpdir);
	ck_assert_int_eq(mkdir_p(path, 0755), 0);
	for (size_t i = 0; i < ELEMENTSOF(image); i++) {
		snprintf(path, sizeof path, "%s/data/images/tiny/%s", tmpdir, image[i][0]);
		ck_assert_int_eq(write_file_replace(path, image[i][1], strlen(image[i][1])), 0);
	}
	ck_assert_int_eq(runtime_fake_new(&rt), 0);
	ck_assert_msg(engine_new_on(&cfg, "/nonexistent", rt, &e, &err) == 0, "%s", err.msg);

	ck_assert_int_eq(engine_box_create(e, "b", &err), 0);
	ck_assert_int_eq(engine_box_get(e, "b", &v), 0);
	ck_assert_int_eq(engine_secret_set(e, "K1", "v1", 2, &err), 0);
	ck_assert_int_eq(engine_secret_set(e, "K2", "v2", 2, &err), 0);
	ck_assert_int_eq(engine_secret_set(e, "bad-name", "x", 1, &err), -EINVAL);
	ck_assert_int_eq(engine_secret_set(e, "NUL", "a\0b", 3, &err), -EINVAL);
	ck_assert_int_eq(engine_box_set_secrets(e, v.id, "K2\n  K1 \n\n", 10, &err), 0);
	ck_assert_int_eq(engine_box_secrets(e, v.id, &list), 0);
	ck_assert_str_eq(list, "K2\nK1\n");
	free(list);
	ck_assert_int_eq(engine_box_set_secrets(e, v.id, "K1\nK3\n", 6, &err), -ENOENT);
	ck_assert_str_eq(err.msg, "secret K3 is not set");

	ck_assert_int_eq(eng_secrets_env(e, v.id, &env, &err), 0);
	ck_assert_str_eq(env[0], "K2=v2");
	ck_assert_str_eq(env[1], "K1=v1");
	ck_assert_ptr_null(env[2]);
	eng_secrets_env_free(env);
	/* Rotation: the next read has the new value. */
	ck_assert_int_eq(engine_secret_set(e, "K1", "new", 3, &err), 0);
	ck_assert_int_eq(eng_secrets_env(e, v.id, &env, &err), 0);
	ck_assert_str_eq(env[1], "K1=new");
	eng_secrets_env_free(env);

	/* The database holds no clear value. */
	snprintf(path, sizeof path, "%s/data/paddock.db", tmpdir);
	{
		char *db = NULL;
		size_t len = 0;
		ck_assert_int_eq(read_file_at(AT_FDCWD, path, 64 << 20, &db, &len), 0);
		ck_assert_ptr_null(memmem(db, len, "K1\0new", 6));
		free(db);
	}

	/* The in-memory runtime has no exec server: a job of a box with
	 * secrets is refused rather than run where they could show. */
	{
		char name[32];
		int r = engine_job_new(e, v.id, "true", name, sizeof name, &err);
		ck_assert_int_eq(r, -EOPNOTSUPP);
		ck_assert_ptr_nonnull(strstr(err.msg, "never put on a command line"));
	}
	ck_assert_int_eq(engine_box_set_secrets(e, v.id, "", 0, &err), 0);

	e = engine_free(e);
	/* A restart with the same key decrypts. */
	ck_assert_msg(engine_new_on(&cfg, "/nonexistent", rt, &e, &err) == 0, "%s", err.msg);
	{
		struct secret_view sv;
		char buf[64];
		ck_assert_int_eq(engine_secret_get(e, "K1", &sv), 0);
		ck_assert_int_eq(engine_secret_read_time(e, sv.id, buf, sizeof buf), 0);
		ck_assert_int_eq(strncmp(buf, "set 20", 6), 0);
		ck_assert_int_eq(engine_box_set_secrets(e, v.id, "K1", 2, &err), 0);
		ck_assert_int_eq(eng_secrets_env(e, v.id, &env, &err), 0);
		ck_assert_str_eq(env[0], "K1=new");
		eng_secrets_env_free(env);
		/* Removed: gone from the box's list. */
		ck_assert_int_eq(engine_secret_delete(e, sv.id, &err), 0);
		ck_assert_int_eq(engine_box_secrets(e, v.id, &list), 0);
		ck_assert_str_eq(list, "");
		free(list);
	}
	e = engine_free(e);
	rt = runtime_free(rt);
	config_release(&cfg);
}
END_TEST

static Suite *secrets_suite(void)
{
	Suite *s = suite_create("secrets");
	TCase *tc = tcase_create("crypto");

	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, empty_value);
	tcase_add_test(tc, fresh_nonce_each_time);
	tcase_add_test(tc, tampered_refused);
	tcase_add_test(tc, wrong_key_refused);
	tcase_add_test(tc, other_name_refused);
	tcase_add_test(tc, value_too_large);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_test(tc, name_rules);
	suite_add_tcase(s, tc);

	tc = tcase_create("key");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, key_made_once);
	tcase_add_test(tc, key_wrong_mode_refused);
	tcase_add_test(tc, key_wrong_owner_refused);
	tcase_add_test(tc, key_not_a_key_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("store");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, store_tables);
	suite_add_tcase(s, tc);

	tc = tcase_create("supervisor");
	tcase_add_test(tc, supervisor_reads_the_pipe);
	tcase_add_test(tc, supervisor_merges_env);
	suite_add_tcase(s, tc);

	tc = tcase_create("engine");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, engine_box_env);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(secrets_suite());
}
