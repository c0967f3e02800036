/* owners.c - what the host writes through a box's root/ belongs to the box.
 *
 * root/ is the box's overlay itself (a bind view under RUN/roots), so a
 * host user's new file is owned by that user's host id, which is outside
 * the box's range (idmap.h): inside, it would show as nobody's, and box
 * root could not even chown it. The daemon watches each view with a
 * fanotify mount mark (FAN_CLOSE_WRITE: the event carries the file, open)
 * and gives every file written through it whose owner or group is outside
 * the box's range to the box's default user (the image's, as the box sees
 * it), with the directories leading to it from the root. An owner inside
 * the range is what the writer asked for and stays (chown to BASE+N).
 *
 * A directory's owner set after its files were written (cp -a and tar
 * restore owners last) raises no event: the directories seen in a burst
 * of events are given again once it has been quiet for OWNERS_QUIET_MS.
 *
 * Only the views are watched: what the box itself writes goes through its
 * own mount and is in its range anyway. The walk up to the root opens each
 * directory beneath the view without following links (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so a box renaming a directory
 * into a link meanwhile cannot point the daemon at another file. What is
 * not written through a file (an empty directory from mkdir, a symlink, a
 * chown to a host id) keeps its host owner: docs/security.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/internal.h"
#include "runtime/idmap.h"
#include "runtime/image.h"
#include "common/log.h"

#define OWNERS_QUIET_MS 200
#define OWNERS_PENDING_MAX 4096
/* After a read that found events, the thread waits this long before it
 * reads again, without waiting on the group meanwhile: a copy's events
 * pile up and are read in batches, and the writer's close wakes nobody
 * (a thread blocked in poll on the group is woken at every event, which
 * costs the writer a wake-up and the daemon a context switch per file). */
#define OWNERS_BATCH_MS 2

struct owner {
	int64_t box_id;
	uint32_t base;
	uint32_t uid, gid; /* as the box sees them */
	char root[4096];   /* the view */
};

static int open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)flags | O_CLOEXEC | O_NOFOLLOW,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

/* The image's user in the box's own /etc/passwd (read beneath its root):
 * root when the image names none or the file lacks it. */
static void default_user(const struct engine *e, const char *image, int rootfd, uint32_t *uid,
			 uint32_t *gid)
{
	struct image_info img;
	struct passwd *pw;
	FILE *f;
	int fd;

	*uid = *gid = 0;
	if (image_get(e->images_dir, image, &img) < 0 || !img.user[0])
		return;
	fd = open_beneath(rootfd, "etc/passwd", O_RDONLY);
	f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((pw = fgetpwent(f)))
		if (strcmp(pw->pw_name, img.user) == 0) {
			if (pw->pw_uid < IDMAP_IDS && pw->pw_gid < IDMAP_IDS) {
				*uid = pw->pw_uid;
				*gid = pw->pw_gid;
			}
			break;
		}
	fclose(f);
}

/* Which box's view a path is in: RUN/roots/ID/... */
static int owner_of(struct engine *e, const char *path, struct owner *o, const char **ret_rel)
{
	size_t n = strlen(e->roots_dir);
	const char *p = path + n + 1;
	char *end;
	long long id;
	struct box *b;

	if (strncmp(path, e->roots_dir, n) != 0 || path[n] != '/')
		return -ENOENT;
	id = strtoll(p, &end, 10);
	if (end == p || (*end != '/' && *end))
		return -ENOENT;
	*ret_rel = *end ? end + 1 : "";
	if (o->box_id == id)
		return 0;
	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, id);
	if (b) {
		o->box_id = id;
		o->base = eng_box_base(e, b);
		eng_box_root(e, b, o->root, sizeof o->root);
		char image[sizeof b->row.image];
		snprintf(image, sizeof image, "%s", b->row.image);
		pd_mutex_unlock(&e->lock);
		int rootfd = open(o->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		default_user(e, image, rootfd, &o->uid, &o->gid);
		if (rootfd >= 0)
			close(rootfd);
		return 0;
	}
	pd_mutex_unlock(&e->lock);
	return -ENOENT;
}

/* fd's owner, or its group, outside the box's range: the box's user's. */
static void give(int fd, const struct owner *o)
{
	struct stat st;
	uid_t uid;
	gid_t gid;

	if (fstat(fd, &st) < 0)
		return;
	uid = idmap_base_of((uint32_t)st.st_uid) == o->base ? st.st_uid : o->base + o->uid;
	gid = idmap_base_of((uint32_t)st.st_gid) == o->base ? st.st_gid : o->base + o->gid;
	if (uid == st.st_uid && gid == st.st_gid)
		return;
	if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0)
		log_debug("cannot give a file to box %lld: %s", (long long)o->box_id,
			  strerror(errno));
}

/* Directories to give again after a burst (see the top). */
struct pending {
	int64_t box_id[OWNERS_PENDING_MAX];
	char *rel[OWNERS_PENDING_MAX];
	size_t n;
	bool full;
};

static void pending_add(struct pending *p, int64_t box_id, const char *rel)
{
	if (p->n == OWNERS_PENDING_MAX) {
		if (!p->full)
			log_warn("many directories written through root/ at once: some keep the "
				 "owner a copy gave them");
		p->full = true;
		return;
	}
	p->rel[p->n] = strdup(rel);
	if (p->rel[p->n])
		p->box_id[p->n++] = box_id;
}

/* Gives each directory on the way from the view's root to rel. */
static void give_dirs(const struct owner *o, const char *rel_in)
{
	char rel[4096];
	int rootfd = open(o->root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (rootfd < 0)
		return;
	snprintf(rel, sizeof rel, "%s", rel_in);
	for (char *p = rel; p;) {
		char *next = strchr(p, '/');
		if (next)
			*next = '\0';
		int d = open_beneath(rootfd, rel, O_PATH | O_DIRECTORY);
		if (next)
			*next = '/';
		if (d < 0)
			break;
		give(d, o);
		close(d);
		p = next ? next + 1 : NULL;
	}
	close(rootfd);
}

static void pending_run(struct engine *e, struct pending *p)
{
	struct owner o = {.box_id = -1};
	char path[4200];

	for (size_t i = 0; i < p->n; i++) {
		const char *rel;
		snprintf(path, sizeof path, "%s/%lld/%s", e->roots_dir, (long long)p->box_id[i],
			 p->rel[i]);
		if (owner_of(e, path, &o, &rel) >= 0 && o.base)
			give_dirs(&o, rel);
		free(p->rel[i]);
	}
	p->n = 0;
	p->full = false;
}

static void handle(struct engine *e, int fd, struct owner *o, char *last_dir, size_t last_dirsz,
		   struct pending *pend)
{
	char self[64], path[4096];
	const char *rel;
	ssize_t n;

	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	n = readlink(self, path, sizeof path - 1);
	if (n <= 0)
		return;
	path[n] = '\0';
	if (owner_of(e, path, o, &rel) < 0 || o->base == 0)
		return;
	give(fd, o);
	/* The directories from the root down to it, each once per run of
	 * events in one directory. */
	char *slash = strrchr(rel, '/');
	if (!slash)
		return;
	*slash = '\0';
	if (strcmp(rel, last_dir) == 0)
		return;
	snprintf(last_dir, last_dirsz, "%s", rel);
	give_dirs(o, rel);
	pending_add(pend, o->box_id, rel);
}

/* Reads every event queued now (the group is non-blocking); whether there
 * was any. */
static bool drain(struct engine *e, struct owner *o, char *last_dir, size_t last_dirsz,
		  struct pending *pend, char *buf, size_t bufsz)
{
	bool any = false;

	for (;;) {
		ssize_t len = read(e->owners_fd, buf, bufsz);
		if (len <= 0)
			return any;
		any = true;
		for (struct fanotify_event_metadata *m = (void *)buf; FAN_EVENT_OK(m, len);
		     m = FAN_EVENT_NEXT(m, len)) {
			if (m->mask & FAN_Q_OVERFLOW)
				log_warn("too many files written through root/ at once: some "
					 "keep their host owner");
			if (m->fd >= 0) {
				handle(e, m->fd, o, last_dir, last_dirsz, pend);
				close(m->fd);
			}
		}
	}
}

static void *owners_main(void *userdata)
{
	struct engine *e = userdata;
	struct owner o = {.box_id = -1};
	char last_dir[4096] = "";
	static struct pending pend; /* one owners thread */
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
	bool batch = false;

	for (;;) {
		struct pollfd p[3] = {{.fd = e->owners_fd, .events = POLLIN},
				      {.fd = e->owners_stop, .events = POLLIN},
				      {.fd = e->owners_flush, .events = POLLIN}};
		if (batch) {
			/* Events were read last time: more may be coming. The
			 * group is not waited on (p[0] unused); the stop and
			 * a flush are. */
			p[0].fd = -1;
			if (poll(p, 3, OWNERS_BATCH_MS) < 0 && errno != EINTR)
				break;
			if (!p[1].revents && !p[2].revents) {
				batch =
				    drain(e, &o, last_dir, sizeof last_dir, &pend, buf, sizeof buf);
				continue;
			}
		} else if (poll(p, 3, pend.n ? OWNERS_QUIET_MS : 1000) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[2].revents & POLLIN) {
			/* Everything queued before the ask, the burst's
			 * directories too, then the answer. */
			uint64_t n, asked;
			(void)!read(e->owners_flush, &n, sizeof n);
			pd_mutex_lock(&e->owners_lock);
			asked = e->owners_asked;
			pd_mutex_unlock(&e->owners_lock);
			drain(e, &o, last_dir, sizeof last_dir, &pend, buf, sizeof buf);
			batch = false;
			pending_run(e, &pend);
			pd_mutex_lock(&e->owners_lock);
			e->owners_done = asked;
			pthread_cond_broadcast(&e->owners_cond);
			pd_mutex_unlock(&e->owners_lock);
			continue;
		}
		if (!(p[0].revents & POLLIN)) {
			/* Quiet: the burst's directories again, and forget the
			 * cache (a box may have changed). */
			pending_run(e, &pend);
			o.box_id = -1;
			last_dir[0] = '\0';
			continue;
		}
		batch = drain(e, &o, last_dir, sizeof last_dir, &pend, buf, sizeof buf);
	}
	for (size_t i = 0; i < pend.n; i++)
		free(pend.rel[i]);
	pend.n = 0;
	return NULL;
}

void eng_owners_watch(struct engine *e, const char *view)
{
	if (e->owners_fd >= 0 && fanotify_mark(e->owners_fd, FAN_MARK_ADD | FAN_MARK_MOUNT,
					       FAN_CLOSE_WRITE, AT_FDCWD, view) < 0)
		log_warn("cannot watch %s: files written there keep their host owner: %s", view,
			 strerror(errno));
}

void eng_owners_flush(struct engine *e)
{
	uint64_t one = 1, mine;
	struct timespec until;

	if (!e->owners_started)
		return;
	lock_assert_no_slow("a wait for the owners of files written through root/");
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 1;
	pd_mutex_lock(&e->owners_lock);
	mine = ++e->owners_asked;
	(void)!write(e->owners_flush, &one, sizeof one);
	while (e->owners_done < mine)
		if (pd_cond_timedwait(&e->owners_cond, &e->owners_lock, &until) == ETIMEDOUT)
			break;
	pd_mutex_unlock(&e->owners_lock);
}

int eng_owners_start(struct engine *e)
{
	char view[4096];
	pthread_condattr_t ca;
	int r;

	e->owners_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK,
				     O_RDONLY | O_CLOEXEC | O_LARGEFILE | O_NOATIME);
	if (e->owners_fd < 0)
		return -errno;
	e->owners_stop = eventfd(0, EFD_CLOEXEC);
	e->owners_flush = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->owners_stop < 0 || e->owners_flush < 0)
		return -errno;
	pd_mutex_init(&e->owners_lock, LOCK_RANK_LEAF, 0, "owners_lock");
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->owners_cond, &ca);
	pthread_condattr_destroy(&ca);
	e->owners_asked = e->owners_done = 0;
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_boxes; i++) {
		eng_box_root(e, e->boxes[i], view, sizeof view);
		if (eng_is_mountpoint(view))
			eng_owners_watch(e, view);
	}
	pd_mutex_unlock(&e->lock);
	r = pthread_create(&e->owners_thread, NULL, owners_main, e);
	if (r != 0)
		return -r;
	e->owners_started = true;
	return 0;
}

void eng_owners_stop(struct engine *e)
{
	if (e->owners_started) {
		uint64_t one = 1;
		(void)!write(e->owners_stop, &one, sizeof one);
		pthread_join(e->owners_thread, NULL);
		e->owners_started = false;
		pd_mutex_destroy(&e->owners_lock);
		pthread_cond_destroy(&e->owners_cond);
	}
	if (e->owners_fd >= 0)
		close(e->owners_fd);
	if (e->owners_stop >= 0)
		close(e->owners_stop);
	if (e->owners_flush >= 0)
		close(e->owners_flush);
	e->owners_fd = e->owners_stop = e->owners_flush = -1;
}
