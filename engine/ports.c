/* ports.c - boxes/NAME/ports, the ports of servers in a box published as
 * preview URLs (common/ports.h, docs/preview.md), and the daemon's
 * connections to them for the HTTP proxy (web/preview-proxy.c).
 *
 * The list lives in the store (its canonical text) and in the box's
 * record, where the proxy reads it on every request: a change takes
 * effect at once, running or not.
 *
 * A connection to PORT is made from inside the box's network namespace to
 * 127.0.0.1:PORT, whatever the box's network setting (with network = off
 * a box has a namespace with its loopback only): the box's egress policy
 * is for what leaves it, and this traffic comes in. Nothing the box
 * controls is followed: the address and the port are ours, the namespace
 * is the one of the box's PID 1, taken by a pidfd under the engine lock
 * while the box runs (a PID reused after the box stopped is never
 * entered). The socket is made by a short thread that joined that
 * namespace (setns() is per thread); a socket stays in the namespace it
 * was made in, so the connect and every byte after happen in the
 * caller's thread, which never leaves the daemon's namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "engine/internal.h"
#include "store/store.h"

#define CONNECT_TIMEOUT_MS 5000 /* a full accept queue in the box */

/* Engine lock held: b's list from the store; a text that no longer parses
 * publishes nothing (never more than recorded). */
void eng_ports_load(struct engine *e, struct box *b)
{
	_cleanup_free_ char *text = NULL;
	pd_error err = {0};

	b->ports.n = 0;
	if (store_box_ports_get(e->store, b->row.id, &text) < 0 ||
	    ports_parse(text, strlen(text), &b->ports, &err) < 0) {
		log_warn("box %s: stored ports unreadable (%s): none published", b->row.name,
			 err.msg);
		b->ports.n = 0;
	}
}

int engine_box_ports(struct engine *e, int64_t id, struct port_list *ret)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (b)
		*ret = b->ports;
	pd_mutex_unlock(&e->lock);
	return b ? 0 : -ENOENT;
}

int engine_box_ports_text(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	struct port_list l;
	int r = engine_box_ports(e, id, &l);

	if (r < 0)
		return r;
	return (int)ports_format(&l, buf, bufsz);
}

int engine_box_set_ports(struct engine *e, int64_t id, const char *text, size_t len, pd_error *err)
{
	struct port_list l;
	char canon[PORTS_TEXT_MAX];
	struct box *b;
	int r;

	r = ports_parse(text, len, &l, err);
	if (r < 0)
		return r;
	ports_format(&l, canon, sizeof canon);
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		r = eng_box_gone(err);
		goto out;
	}
	/* The store first: on its failure the list in force stays. */
	r = store_box_ports_set(e->store, id, canon, err);
	if (r < 0)
		goto out;
	b->ports = l;
	if (l.n)
		eng_emit(e, b, "ports: %zu published", l.n);
	else
		eng_emit(e, b, "ports: none published");
out:
	pd_mutex_unlock(&e->lock);
	return r < 0 ? r : 0;
}

int engine_box_port_lookup(struct engine *e, const char *name, unsigned port,
			   struct engine_port *ret, pd_error *err)
{
	const struct port_entry *pe;
	struct box *b;
	int r = 0;

	pd_mutex_lock(&e->lock);
	b = eng_find_box(e, name);
	if (!b || b->deleting)
		r = pd_error_set(err, -ENOENT, "no such box: %s", name);
	else if (!(pe = ports_find(&b->ports, port)))
		r = pd_error_set(err, -ENOENT,
				 "port %u of box %s is not published (see boxes/%s/ports)", port,
				 name, name);
	else {
		ret->box_id = b->row.id;
		ret->port = port;
		ret->public = pe->public;
		snprintf(ret->box, sizeof ret->box, "%s", b->row.name);
	}
	pd_mutex_unlock(&e->lock);
	return r;
}

struct ns_socket {
	int nsfd;
	int fd, err;
};

static void *ns_socket_main(void *arg)
{
	struct ns_socket *a = arg;

	if (setns(a->nsfd, CLONE_NEWNET) < 0) {
		a->err = -errno;
		return NULL;
	}
	a->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (a->fd < 0)
		a->err = -errno;
	return NULL;
}

int engine_box_port_connect(struct engine *e, int64_t box_id, unsigned port, pd_error *err)
{
	struct ns_socket a = {.nsfd = -1, .fd = -1};
	struct box *b;
	pthread_t t;
	int r;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, box_id);
	if (!b)
		r = eng_box_gone(err);
	else if (b->state != BOX_RUNNING || b->pid <= 0)
		r = pd_error_set(err, -EAGAIN,
				 "box %s is %s, not running: start it to reach port %u",
				 b->row.name, box_state_to_string(b->state), port);
	else if (!ports_find(&b->ports, port))
		r = pd_error_set(err, -ENOENT, "port %u of box %s is not published", port,
				 b->row.name);
	else {
		a.nsfd = (int)syscall(SYS_pidfd_open, b->pid, 0);
		r = a.nsfd < 0 ? pd_error_set(err, -errno, "box %s: cannot open its PID 1: %m",
					      b->row.name)
			       : 0;
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;

	/* A thread that takes no signal (SIGTERM is the main thread's). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&t, NULL, ns_socket_main, &a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0) {
		pthread_join(t, NULL);
		r = a.err;
	}
	close(a.nsfd);
	if (r < 0)
		return pd_error_set(err, r, "cannot enter the box's network: %s", strerror(-r));

	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(a.fd, (struct sockaddr *)&sin, sizeof sin) < 0) {
		if (errno == EINPROGRESS) {
			struct pollfd pf = {.fd = a.fd, .events = POLLOUT};
			int so = 0;
			socklen_t sl = sizeof so;
			int n = poll(&pf, 1, CONNECT_TIMEOUT_MS);
			if (n == 0)
				so = ETIMEDOUT;
			else if (n < 0 || getsockopt(a.fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0)
				so = errno;
			if (so) {
				close(a.fd);
				return pd_error_set(err, so == ECONNREFUSED ? -ECONNREFUSED : -so,
						    "nothing answers on port %u in the box: %s",
						    port, strerror(so));
			}
		} else {
			int k = errno;
			close(a.fd);
			return pd_error_set(err, -k, "nothing answers on port %u in the box: %s",
					    port, strerror(k));
		}
	}
	return a.fd;
}
