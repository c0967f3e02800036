/* check_access.c - who may use the tree (access.h): the group by name and
 * by number, a missing group, the membership rule, and unix socket peers
 * (a child that drops to another uid connects). Root is needed for the
 * peer tests; they skip otherwise. */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/access.h"
#include "check-tap.h"
#include "common/util.h"

START_TEST(test_numeric_group)
{
	struct pd_access a;
	pd_error err = {0};
	gid_t other[] = {7, 4242};

	ck_assert_int_eq(access_init("4242", &a, &err), 0);
	ck_assert(a.has_group);
	ck_assert_uint_eq(access_gid(&a), 4242);
	ck_assert(access_allows(&a, 0, 0, NULL, 0));	     /* root */
	ck_assert(access_allows(&a, 1000, 4242, NULL, 0));   /* primary group */
	ck_assert(access_allows(&a, 1000, 1000, other, 2));  /* supplementary */
	ck_assert(!access_allows(&a, 1000, 1000, other, 1)); /* not a member */
	ck_assert(!access_allows(&a, 65534, 65534, NULL, 0));
}
END_TEST

START_TEST(test_named_group)
{
	struct pd_access a;
	pd_error err = {0};
	struct group *g = getgrgid(0);

	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq(access_init(g->gr_name, &a, &err), 0);
	ck_assert(a.has_group);
	ck_assert_uint_eq(access_gid(&a), 0);
}
END_TEST

START_TEST(test_missing_group)
{
	struct pd_access a;
	pd_error err = {0};

	ck_assert_int_eq(access_init("no-such-group-pd", &a, &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "groupadd --system no-such-group-pd"));
	ck_assert(!a.has_group);
	ck_assert_uint_eq(access_gid(&a), 0);
	/* fail closed: gid 0 is no member of a group that does not exist */
	ck_assert(access_allows(&a, 0, 0, NULL, 0));
	ck_assert(!access_allows(&a, 1000, 0, NULL, 0));
	ck_assert_int_eq(access_init("", &a, &err), -EINVAL);
	ck_assert(!a.has_group);
}
END_TEST

/* Connects to a listening socket at path as uid/gid (with groups), and
 * returns the server's verdict on that peer. */
static int peer_verdict(const struct pd_access *a, uid_t uid, gid_t gid, const gid_t *groups,
			size_t n)
{
	char dir[] = "/tmp/check_access.XXXXXX";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int lfd, cfd, status, r;
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chmod(dir, 0777), 0);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/s", dir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(chmod(sa.sun_path, 0666), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (setgroups(n, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			_exit(2);
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
			_exit(3);
		char c;
		(void)!read(fd, &c, 1); /* until the server has looked */
		_exit(0);
	}
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(cfd, 0);
	r = access_check_socket_peer(a, cfd);
	close(cfd);
	close(lfd);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	rm_rf(dir);
	return r;
}

START_TEST(test_socket_peers)
{
	struct pd_access a;
	pd_error err = {0};
	gid_t member[] = {100, 4242};

	if (geteuid() != 0)
		return; /* needs root to become another user */
	ck_assert_int_eq(access_init("4242", &a, &err), 0);
	ck_assert_int_eq(peer_verdict(&a, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(peer_verdict(&a, 65534, 65534, NULL, 0), -EACCES);
	ck_assert_int_eq(peer_verdict(&a, 65534, 4242, NULL, 0), 0);
	ck_assert_int_eq(peer_verdict(&a, 65534, 65534, member, 2), 0);
	ck_assert_int_eq(peer_verdict(&a, 65534, 65534, member, 1), -EACCES);
	/* no group: root only */
	ck_assert_int_eq(access_init("no-such-group-pd", &a, &err), -ENOENT);
	ck_assert_int_eq(peer_verdict(&a, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(peer_verdict(&a, 65534, 0, NULL, 0), -EACCES);
}
END_TEST

static Suite *access_suite(void)
{
	Suite *s = suite_create("access");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_numeric_group);
	tcase_add_test(tc, test_named_group);
	tcase_add_test(tc, test_missing_group);
	suite_add_tcase(s, tc);
	tc = tcase_create("peers");
	tcase_add_test(tc, test_socket_peers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(access_suite());
}
