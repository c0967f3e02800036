/* supervise.c - what the daemon's supervisor threads of processes in boxes
 * (the desktop's session, desktop.c; dockerd, docker.c) share: a detached
 * thread with an eventfd to wake it, naps it can be woken from, the
 * backoff between restarts, and ending a command it started. */
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/internal.h"
#include "runtime/box-exec.h"

int eng_spawn_detached(void *(*fn)(void *), void *arg, int *wake)
{
	pthread_attr_t attr;
	pthread_t thread;
	int r;

	*wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (*wake < 0)
		return -errno;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&thread, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		close(*wake);
		*wake = -1;
	}
	return r;
}

bool eng_nap(int wake, int ms)
{
	struct pollfd p = {.fd = wake, .events = POLLIN};

	return poll(&p, 1, ms) == 0;
}

int eng_backoff_ms(unsigned failures, unsigned max_s)
{
	unsigned sec = 1u << (failures > 5 ? 5 : failures ? failures - 1 : 0);

	return (int)(sec > max_s ? max_s : sec) * 1000;
}

void eng_proc_end(struct box_exec_proc *p, int grace_ms)
{
	if (p->pidfd >= 0 && !p->ended) {
		(void)box_exec_kill(p, SIGTERM);
		if (pidfd_wait_exit(p->pidfd, grace_ms) < 0)
			(void)box_exec_kill(p, SIGKILL);
		(void)pidfd_wait_exit(p->pidfd, grace_ms);
	}
	box_exec_release(p);
	*p = (struct box_exec_proc)BOX_EXEC_PROC_INIT;
}
