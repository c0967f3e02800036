/* check_volumes.c - named volumes: the parser of a box's `volumes` list and
 * the store's volume and attachment tables. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-tap.h"
#include "runtime/image.h"
#include "store/store.h"
#include "runtime/volume-live.h"
#include "engine/volumes.h"

static char tmpdir[64];
static struct store *st;

static void setup(void)
{
	char path[128];
	pd_error err = {0};

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_volumes.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/paddock.db", tmpdir);
	ck_assert_int_eq(store_open(path, &st, &err), 0);
}

static void teardown(void)
{
	st = store_close(st);
	rm_rf(tmpdir);
}

/* A child that waits to be killed: a process that is not a box. In a
 * mount namespace of its own when it may: a regression that took it for
 * a box then mounts nothing on the host's tree. */
static pid_t idle_child(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) == 0)
			(void)mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
		pause();
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A PID that is not the box's PID 1 any more (a host process got it, or
 * nobody has it): refused, and nothing made on the host, neither through
 * the box's root nor at the host's own /mnt/NAME. */
START_TEST(test_live_not_the_box)
{
	char name[64], path[256], rootfs[128];
	pid_t pid = idle_child();
	struct volume_live_box box = {.name = "b", .pid = pid, .rootfs = rootfs};
	pd_error err = {0};

	snprintf(rootfs, sizeof rootfs, "%s/rootfs", tmpdir);
	ck_assert_int_eq(mkdir(rootfs, 0755), 0);
	snprintf(name, sizeof name, "check-live-%d", (int)getpid());
	ck_assert_int_eq(volume_live_attach(&box, tmpdir, name, &err), -EBUSY);
	ck_assert_msg(strstr(err.msg, "box b no longer runs (PID"), "%s", err.msg);
	pd_error_clear(&err);
	ck_assert_int_eq(volume_live_detach(&box, tmpdir, name, &err), -EBUSY);
	snprintf(path, sizeof path, "/mnt/%s", name);
	ck_assert_int_eq(access(path, F_OK), -1);
	snprintf(path, sizeof path, "%s/mnt", rootfs);
	ck_assert_int_eq(access(path, F_OK), -1);
	reap(pid);
}
END_TEST

START_TEST(test_live_gone)
{
	pid_t pid = idle_child();
	struct volume_live_box box = {.name = "b", .pid = pid, .rootfs = tmpdir};
	pd_error err = {0};

	reap(pid);
	ck_assert_int_eq(volume_live_attach(&box, tmpdir, "v", &err), -EBUSY);
	ck_assert_msg(strstr(err.msg, "box b no longer runs"), "%s", err.msg);
	box.pid = 0;
	pd_error_clear(&err);
	ck_assert_int_eq(volume_live_detach(&box, tmpdir, "v", &err), -EBUSY);
}
END_TEST

/* Parses text; returns the names joined by ',' or "ERR <errno>: <reason>". */
static const char *parse(const char *text, size_t len)
{
	static char out[4096];
	char **names = NULL;
	size_t n = 0, off = 0;
	pd_error err = {0};
	int r = engine_volume_list_parse(text, len, &names, &n, &err);

	if (r < 0) {
		snprintf(out, sizeof(out), "ERR %d: %s", -r, err.msg);
		return out;
	}
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		off +=
		    (size_t)snprintf(out + off, sizeof(out) - off, "%s%s", i ? "," : "", names[i]);
	image_list_free(names, n);
	return out;
}
#define PARSE(s) parse(s, strlen(s))

START_TEST(test_parse_good)
{
	ck_assert_str_eq(PARSE(""), "");
	ck_assert_str_eq(PARSE("\n"), "");
	ck_assert_str_eq(PARSE("a"), "a");
	ck_assert_str_eq(PARSE("a\n"), "a");
	ck_assert_str_eq(PARSE("data\ncache.v2\n\nlogs_1-x\n"), "data,cache.v2,logs_1-x");
}
END_TEST

START_TEST(test_parse_bad)
{
	ck_assert_str_eq(
	    PARSE("a\nB\n"),
	    "ERR 22: line 2: invalid volume name \"B\": use [a-z0-9][a-z0-9._-]{0,62}");
	ck_assert_str_eq(PARSE("a\n\na\n"), "ERR 22: line 3: volume a listed twice");
	ck_assert_str_eq(
	    PARSE(" a\n"),
	    "ERR 22: line 1: invalid volume name \" a\": use [a-z0-9][a-z0-9._-]{0,62}");
	ck_assert_str_eq(
	    PARSE("a\r\n"),
	    "ERR 22: line 1: invalid volume name \"a\r\": use [a-z0-9][a-z0-9._-]{0,62}");
	ck_assert_str_eq(
	    PARSE("-a\n"),
	    "ERR 22: line 1: invalid volume name \"-a\": use [a-z0-9][a-z0-9._-]{0,62}");
	ck_assert_str_eq(parse("a\0b", 3), "ERR 22: NUL byte in the list of volumes");
}
END_TEST

START_TEST(test_parse_limits)
{
	char text[4096], longname[NAME_MAX_LEN + 2];
	size_t off = 0;

	for (int i = 0; i < VOLUMES_PER_BOX_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "v%d\n", i);
	ck_assert_str_ne(parse(text, off), "");
	ck_assert(strncmp(parse(text, off), "ERR", 3) != 0);
	off += (size_t)snprintf(text + off, sizeof(text) - off, "one-more\n");
	ck_assert_str_eq(parse(text, off), "ERR 22: line 33: at most 32 volumes per box");

	memset(longname, 'a', sizeof(longname) - 1);
	longname[NAME_MAX_LEN] = '\0'; /* 63: the longest valid name */
	ck_assert_str_eq(PARSE(longname), longname);
	longname[NAME_MAX_LEN] = 'a';
	longname[NAME_MAX_LEN + 1] = '\0';
	ck_assert_str_eq(PARSE(longname), "ERR 22: line 1: invalid volume name (too long)");
}
END_TEST

static int collect(const struct volume_row *row, void *userdata)
{
	char *out = userdata;
	size_t len = strlen(out);

	snprintf(out + len, 512 - len, "%s%s:%s", len ? "," : "", row->name, row->state);
	return 0;
}

static struct box_row box(const char *name)
{
	struct box_row b = {.created = 1};
	snprintf(b.name, sizeof(b.name), "%s", name);
	snprintf(b.state, sizeof(b.state), "created");
	snprintf(b.type, sizeof(b.type), "small");
	snprintf(b.image, sizeof(b.image), "tiny");
	return b;
}

static struct volume_row volume(const char *name)
{
	struct volume_row v = {.created = 7};
	snprintf(v.name, sizeof(v.name), "%s", name);
	snprintf(v.state, sizeof(v.state), "creating");
	return v;
}

START_TEST(test_store_volumes)
{
	struct volume_row a = volume("a"), b = volume("b"), dup = volume("a");
	char list[512] = "";
	pd_error err = {0};

	ck_assert_int_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(store_volume_insert(st, &a, &err), 0);
	ck_assert_int_eq(store_volume_insert(st, &b, &err), 0);
	ck_assert_int_gt(b.id, a.id);
	ck_assert_int_eq(store_volume_insert(st, &dup, &err), -EEXIST);
	ck_assert_str_eq(err.msg, "volume a already exists");
	ck_assert_int_eq(store_volume_set_state(st, a.id, "ready", &err), 0);
	ck_assert_int_eq(store_volume_set_state(st, 999, "ready", &err), -ENOENT);
	ck_assert_int_eq(store_volume_foreach(st, collect, list), 0);
	ck_assert_str_eq(list, "a:ready,b:creating");
	ck_assert_int_eq(store_volume_delete(st, b.id, &err), 0);
	list[0] = '\0';
	ck_assert_int_eq(store_volume_foreach(st, collect, list), 0);
	ck_assert_str_eq(list, "a:ready");
}
END_TEST

START_TEST(test_store_attach)
{
	struct box_row b1 = box("b1"), b2 = box("b2");
	struct volume_row x = volume("x"), y = volume("y");
	int64_t *ids = NULL;
	size_t n = 99;
	pd_error err = {0};

	ck_assert_int_eq(store_box_insert(st, &b1, &err), 0);
	ck_assert_int_eq(store_box_insert(st, &b2, &err), 0);
	ck_assert_int_eq(store_volume_insert(st, &x, &err), 0);
	ck_assert_int_eq(store_volume_insert(st, &y, &err), 0);

	/* The box's order is kept. */
	int64_t yx[] = {y.id, x.id};
	ck_assert_int_eq(store_box_set_volumes(st, b1.id, yx, 2, &err), 0);
	ck_assert_int_eq(store_box_volumes(st, b1.id, &ids, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ids[0], y.id);
	ck_assert_int_eq(ids[1], x.id);
	free(ids);
	ck_assert_int_eq(store_box_set_volumes(st, b2.id, &x.id, 1, &err), 0);
	ck_assert_int_eq(store_volume_boxes(st, x.id, &ids, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ids[0], b1.id);
	ck_assert_int_eq(ids[1], b2.id);
	free(ids);

	/* An attached volume cannot be deleted. */
	ck_assert_int_eq(store_volume_delete(st, x.id, &err), -EBUSY);

	/* A failed replacement changes nothing. */
	int64_t bad[] = {x.id, 12345};
	ck_assert_int_eq(store_box_set_volumes(st, b1.id, bad, 2, &err), -ENOENT);
	int64_t twice[] = {x.id, x.id};
	ck_assert_int_eq(store_box_set_volumes(st, b1.id, twice, 2, &err), -ENOENT);
	ck_assert_int_eq(store_box_volumes(st, b1.id, &ids, &n), 0);
	ck_assert_uint_eq(n, 2);
	free(ids);

	/* Deleting a box detaches its volumes; an empty list detaches all. */
	ck_assert_int_eq(store_box_delete(st, b2.id, &err), 0);
	ck_assert_int_eq(store_box_set_volumes(st, b1.id, NULL, 0, &err), 0);
	ck_assert_int_eq(store_volume_boxes(st, x.id, &ids, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(ids);
	ck_assert_int_eq(store_volume_delete(st, x.id, &err), 0);
}
END_TEST

/* A fork's settings: the source's policy and volumes, in its order. */
START_TEST(test_store_copy_settings)
{
	struct box_row src = box("src"), fork = box("fork");
	struct volume_row x = volume("x"), y = volume("y");
	int64_t yx[] = {0, 0}, *ids = NULL;
	_cleanup_free_ char *policy = NULL;
	size_t n = 0;
	pd_error err = {0};

	ck_assert_int_eq(store_box_insert(st, &src, &err), 0);
	ck_assert_int_eq(store_box_insert(st, &fork, &err), 0);
	ck_assert_int_eq(store_volume_insert(st, &x, &err), 0);
	ck_assert_int_eq(store_volume_insert(st, &y, &err), 0);
	yx[0] = y.id;
	yx[1] = x.id;
	ck_assert_int_eq(store_box_set_volumes(st, src.id, yx, 2, &err), 0);
	ck_assert_int_eq(store_box_policy_set(st, src.id, "allowlist\nexample.com\n", &err), 0);

	ck_assert_int_eq(store_box_copy_settings(st, src.id, fork.id, &err), 0);
	ck_assert_int_eq(store_box_policy_get(st, fork.id, &policy), 0);
	ck_assert_str_eq(policy, "allowlist\nexample.com\n");
	ck_assert_int_eq(store_box_volumes(st, fork.id, &ids, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ids[0], y.id);
	ck_assert_int_eq(ids[1], x.id);
	free(ids);
	/* The source keeps its own. */
	ck_assert_int_eq(store_box_volumes(st, src.id, &ids, &n), 0);
	ck_assert_uint_eq(n, 2);
	free(ids);
	/* No such box: refused. */
	ck_assert_int_eq(store_box_copy_settings(st, src.id, 12345, &err), -ENOENT);
}
END_TEST

static Suite *volumes_suite(void)
{
	Suite *s = suite_create("volumes");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, test_parse_good);
	tcase_add_test(tc, test_parse_bad);
	tcase_add_test(tc, test_parse_limits);
	suite_add_tcase(s, tc);

	tc = tcase_create("store");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_store_volumes);
	tcase_add_test(tc, test_store_attach);
	tcase_add_test(tc, test_store_copy_settings);
	suite_add_tcase(s, tc);

	tc = tcase_create("live");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_live_not_the_box);
	tcase_add_test(tc, test_live_gone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(volumes_suite());
}
