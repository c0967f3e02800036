/* engine-internal.h - the engine's in-memory box record, shared by engine.c
 * and its unit tests. */
#pragma once

#include <pthread.h>

#include "engine.h"
#include "runtime.h"

struct box {
	struct box_row row; /* what the store holds */
	enum box_state state;
	pid_t pid;
	bool busy;     /* a slow action runs outside the lock */
	bool deleting; /* rmdir in progress */
	uint64_t disk_bytes;
	unsigned long long disk_checked_usec;
};

struct engine {
	const struct pd_config *cfg;
	struct store *store;
	struct runtime *rt;
	pthread_mutex_t lock;
	struct box **boxes;
	size_t n_boxes;
	char *images_dir;
	char *boxes_dir;
	char *events_path;
	int events_fd; /* global log, O_APPEND */
	engine_wake_fn wake;
	void *wake_data;

	pthread_t timer;
	bool timer_started;
	bool stopping;
	pthread_cond_t timer_cond; /* signalled when a deadline changes */
};
