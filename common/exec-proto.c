/* exec-proto.c - the client's side of the box's exec server (exec-proto.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/exec-proto.h"

#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Appends s and its NUL to buf (len used of cap); false when it overflows. */
static bool req_add(char *buf, size_t cap, size_t *len, const char *s)
{
	size_t n = strlen(s) + 1;

	if (n > cap - *len)
		return false;
	memcpy(buf + *len, s, n);
	*len += n;
	return true;
}

int exec_proto_request(unsigned uid, unsigned gid, const char *cwd, const char *const *argv,
		       const char *const *env, char **ret, size_t *ret_len)
{
	static const char *const default_env[] = {DEFAULT_PATH, NULL};
	char suid[16], sgid[16], argc[16];
	size_t len = 0, n = 0;
	bool ok;
	char *buf;

	if (!env)
		env = default_env;
	snprintf(suid, sizeof suid, "%u", uid);
	snprintf(sgid, sizeof sgid, "%u", gid);
	for (const char *const *a = argv; *a; a++)
		n++;
	snprintf(argc, sizeof argc, "%zu", n);
	buf = malloc(EXEC_REQ_MAX);
	if (!buf)
		return -ENOMEM;
	ok = req_add(buf, EXEC_REQ_MAX, &len, EXEC_PROTO_MAGIC) &&
	     req_add(buf, EXEC_REQ_MAX, &len, suid) && req_add(buf, EXEC_REQ_MAX, &len, sgid) &&
	     req_add(buf, EXEC_REQ_MAX, &len, cwd ? cwd : "/") &&
	     req_add(buf, EXEC_REQ_MAX, &len, argc);
	for (const char *const *a = argv; ok && *a; a++)
		ok = req_add(buf, EXEC_REQ_MAX, &len, *a);
	for (const char *const *e = env; ok && *e; e++)
		ok = req_add(buf, EXEC_REQ_MAX, &len, *e);
	if (!ok) {
		free(buf);
		return -E2BIG;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

int exec_proto_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENOENT; /* never bound (runtime/crun.c checks the same) */
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int exec_proto_send(int conn, const char *req, size_t len, const int fds[3])
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(3 * sizeof(int))];
	} ctl;
	int sndbuf = EXEC_REQ_MAX + 4096;
	struct iovec iov = {.iov_base = (void *)req, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	/* One message: room for the largest request. */
	(void)setsockopt(conn, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
	/* Every reply then carries its sender's credentials, PID translated
	 * to ours: how the command's "run" tells its host PID. */
	if (setsockopt(conn, SOL_SOCKET, SO_PASSCRED, &(int){1}, sizeof(int)) < 0)
		return -errno;
	memset(&ctl, 0, sizeof ctl);
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof ctl.buf;
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
	if (sendmsg(conn, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

ssize_t exec_proto_recv(int conn, int flags, char *buf, size_t bufsz, int *ret_fd, pid_t *ret_pid)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct ucred cred = {0};
	struct iovec iov = {.iov_base = buf, .iov_len = bufsz - 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof ctl.buf};
	ssize_t n = recvmsg(conn, &msg, flags | MSG_CMSG_CLOEXEC);
	int fd = -1;

	*ret_fd = -1;
	*ret_pid = 0;
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int))) {
			if (fd >= 0)
				close(fd);
			memcpy(&fd, CMSG_DATA(c), sizeof fd);
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			/* More fds than one: none is ours to keep. */
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int x;
				memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof x);
				close(x);
			}
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
			   c->cmsg_len == CMSG_LEN(sizeof cred))
			memcpy(&cred, CMSG_DATA(c), sizeof cred);
	buf[n] = '\0';
	*ret_fd = fd;
	*ret_pid = cred.pid;
	return n;
}
