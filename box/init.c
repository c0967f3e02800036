/* init.c - paddock-init, PID 1 inside every box.
 *
 * The box's processes are started by `crun exec`, not by this program; its
 * only jobs are the two a PID 1 cannot leave to anyone else:
 *
 *  - reap orphans: a process whose parent exits is re-parented to PID 1 of
 *    its PID namespace, and stays a zombie until PID 1 waits for it;
 *  - turn SIGTERM (and SIGINT, SIGHUP, SIGPWR) into a clean stop: pass
 *    SIGTERM on to every process in the box, wait until they are all gone,
 *    then exit, which ends the container.
 *
 * It never exits otherwise and prints nothing (its stdio is /dev/null). It is
 * linked statically so that it runs in any image, and allocates nothing.
 *
 * Signals are taken synchronously with sigwaitinfo() rather than by handlers:
 * no async-signal-safety to reason about, and no SIGCHLD can slip between a
 * check and a wait. Blocking them also matters for a reason specific to PID 1:
 * the kernel discards signals sent to a namespace's init whose disposition is
 * SIG_DFL, but queues blocked ones.
 *
 * Why "all gone" and not just "no children left" (waitpid's ECHILD): a
 * process entered with `crun exec` stays a child of crun, outside the box, so
 * this program never hears of its exit. Were it to exit as soon as its own
 * children are gone, the kernel would SIGKILL those processes at once, and the
 * daemon's grace period between SIGTERM and SIGKILL would be lost. So while
 * stopping it also polls, every STOP_POLL_MS, whether any other process is
 * left. One that ignores SIGTERM keeps the box up until the daemon's SIGKILL.
 */

/* Autoconf's header is autoconfig.h: "config.h" is the daemon's own. */
#ifdef HAVE_CONFIG_H
#include "autoconfig.h"
#endif

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define STOP_POLL_MS 20

/* Reaps every child that has exited; returns once none is left to reap now. */
static void reap_children(void)
{
	for (;;) {
		pid_t pid = waitpid(-1, NULL, WNOHANG);

		if (pid > 0)
			continue;
		if (pid < 0 && errno == EINTR)
			continue;
		return; /* 0: children still running; ECHILD: none at all */
	}
}

/* True when no process but this one is left in the box's PID namespace.
 * kill(-1, 0) checks every process this one may signal, which for the init
 * of a namespace is every other process in it: its children and processes
 * entered with setns() alike, zombies included. */
static bool box_is_empty(void)
{
	return kill(-1, 0) < 0 && errno == ESRCH;
}

static bool is_stop_signal(int sig)
{
	return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGPWR;
}

int main(int argc, char *argv[])
{
	static const struct timespec stop_poll = {.tv_nsec = STOP_POLL_MS * 1000000L};
	sigset_t all;
	bool stopping = false;

	/* Arguments are ignored, except a request for the version. */
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("paddock-init %s\n", PACKAGE_VERSION);
		return EXIT_SUCCESS;
	}

	/* SIGKILL and SIGSTOP cannot be blocked; sigprocmask leaves them be. */
	sigfillset(&all);
	if (sigprocmask(SIG_BLOCK, &all, NULL) < 0)
		return EXIT_FAILURE; /* cannot happen with a valid set; nothing runs yet */

	/* Do not keep the directory we were started in busy. */
	if (chdir("/") < 0) {
		/* Harmless: the box works the same from any directory. */
	}

	for (;;) {
		/* -1 (EINTR, or the poll timeout while stopping) just means
		 * "look again"; any signal but a stop signal is consumed. */
		int sig = stopping ? sigtimedwait(&all, NULL, &stop_poll) : sigwaitinfo(&all, NULL);

		if (is_stop_signal(sig)) {
			/* Repeated on every such signal: a second SIGTERM reaches
			 * processes started since the first. */
			stopping = true;
			kill(-1, SIGTERM); /* all but ourselves; ESRCH if none */
		}

		/* Whatever woke us: one SIGCHLD may stand for many exits. */
		reap_children();

		/* Checked right after the stop signal too, in case the box is
		 * already empty. */
		if (stopping && box_is_empty())
			return EXIT_SUCCESS;
	}
}
