/* http-root.c - files under a box's root/ over HTTP: plain reads, writes,
 * mkdir and removal, and tar push/pull, every path resolved inside the
 * box's root (tarsafe.h). Files the owner puts in a box belong to the
 * image's user, like files the box makes itself, whatever owners an
 * archive names; a tar push must fit in what the box's type leaves of its
 * disk limit. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/config.h"
#include "runtime/export.h"
#include "web/http-internal.h"
#include "runtime/image.h"
#include "common/log.h"
#include "common/tarsafe.h"
#include "common/util.h"
#include "engine/volumes.h"

#define PIPE_SIZE (1 << 20)

enum root_op { OP_NONE, OP_PUT_FILE, OP_PUT_TAR };

struct disk_hold {
	struct engine *e;
	int64_t id;
	char box[64];
	char type[NAME_MAX_LEN + 1];
	uint64_t limit;
	uint64_t held;
};

struct root_upload {
	enum root_op op;
	struct tarsafe_replace rep;
	int pipe_w;
	pthread_t thread;
	bool thread_started;
	int result;
	pd_error err;
	struct tar_result tr;
	int pipe_r;
	struct tar_limits lim;
	struct tar_extract_hooks hooks, inner; /* inner: a volume's export checks */
	struct disk_hold hold;		       /* a box's disk room, when holding */
	bool holding;
	struct req *r;
};

static void image_user(struct req *r, const struct box_view *v, uid_t *uid, gid_t *gid);

/* The owner of what the host puts in a box: the image's user, as the box
 * sees it (its ids in the box's range), root when the image names none;
 * in a volume, root ((uid_t)-1: the daemon's own ids, which a volume keeps
 * as 0..65535 for every box). */
static void box_owner(struct req *r, uid_t *uid, gid_t *gid)
{
	struct box_view v;

	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (r->volume || engine_box_get(http_engine(r->h), r->box, &v) < 0)
		return;
	image_user(r, &v, uid, gid);
	if (v.uid_base) {
		*uid = (*uid == (uid_t)-1 ? 0 : *uid) + (uid_t)v.uid_base;
		*gid = (*gid == (gid_t)-1 ? 0 : *gid) + (gid_t)v.uid_base;
	}
}

/* The uid/gid of the image's user, read from the box's own /etc/passwd
 * (inside its root). Left as they are when the image names none, root, or
 * a user the file lacks. */
static void image_user(struct req *r, const struct box_view *v, uid_t *uid, gid_t *gid)
{
	struct image_info img;
	struct engine *e = http_engine(r->h);
	char buf[64 * 1024];
	ssize_t n;
	int fd;

	if (image_get(engine_images_dir(e), v->image, &img) < 0 || !img.user[0] ||
	    strcmp(img.user, "root") == 0)
		return;
	fd = tarsafe_open(r->rootfd, "etc/passwd", O_RDONLY, 0);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	size_t ul = strlen(img.user);
	for (char *line = buf; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, img.user, ul) == 0 && line[ul] == ':') {
			unsigned u, g;
			char *p = strchr(line + ul + 1, ':');
			if (p && sscanf(p + 1, "%u:%u", &u, &g) == 2) {
				*uid = (uid_t)u;
				*gid = (gid_t)g;
			}
			return;
		}
		line = next;
	}
}

static int open_root(struct req *r, pd_error *err)
{
	char path[PATH_MAX];
	int k;

	if (r->rootfd >= 0)
		return 0;
	const char *what = r->volume ? "volume" : "box";
	struct engine *e = http_engine(r->h);
	struct volume_view vv;
	struct box_view bv;
	/* The path names the object once per request: its id from here. */
	k = r->volume ? engine_volume_get(e, r->box, &vv) : engine_box_get(e, r->box, &bv);
	if (k >= 0)
		k = r->volume ? engine_volume_datadir(e, vv.id, path, sizeof(path))
			      : engine_box_rootfs(e, bv.id, path, sizeof(path));
	if (k < 0)
		return pd_error_set(err, k,
				    k == -ENOENT ? "no %s %s, or its filesystem is not available"
						 : "the filesystem of %s %s is not available: %s",
				    what, r->box, strerror(-k));
	r->rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->rootfd < 0)
		return pd_error_set(err, -errno, "cannot open the filesystem of %s %s: %m", what,
				    r->box);
	return 0;
}

/* A push into a box holds room under its type's disk limit for every
 * entry before the entry is written (engine_box_push_*()). */

/* Starts holding room for a push into box r->box. False when there is
 * nothing to hold (no limit: the box or its type is gone). */
static bool disk_hold_begin(struct req *r, struct disk_hold *h)
{
	struct engine *e = http_engine(r->h);
	const struct box_type *t;
	struct box_view v;

	if (engine_box_get(e, r->box, &v) < 0)
		return false;
	t = config_find_type(engine_config(e), v.type);
	if (!t || engine_box_push_begin(e, v.id) < 0)
		return false;
	*h = (struct disk_hold){.e = e, .id = v.id, .limit = t->disk};
	snprintf(h->box, sizeof(h->box), "%s", r->box);
	snprintf(h->type, sizeof(h->type), "%s", t->name);
	return true;
}

/* The extractor's hooks: a volume's export checks (inner), and last of
 * all, once the whole archive is staged, the token's revocation: a push
 * whose token was revoked while it came merges nothing. */
static int push_special(void *userdata, const char *data, size_t len, pd_error *err)
{
	struct root_upload *u = userdata;

	return u->inner.on_special(u->inner.userdata, data, len, err);
}

static int push_before_merge(void *userdata, int stagefd, pd_error *err)
{
	struct root_upload *u = userdata;
	int k = u->inner.before_merge ? u->inner.before_merge(u->inner.userdata, stagefd, err) : 0;

	if (k >= 0 && atomic_load(&u->r->revoked))
		k = pd_error_set(err, -EACCES, "the token %s during the push; nothing was merged",
				 atomic_load(&u->r->expired_at) ? "expired" : "was revoked");
	return k;
}

static int disk_reserve(void *userdata, uint64_t bytes, pd_error *err)
{
	struct disk_hold *h = userdata;
	uint64_t used = 0;
	int k = engine_box_push_reserve(h->e, h->id, h->limit, bytes, &used);

	if (k == -ENOSPC)
		return pd_error_set(err, k,
				    "box %s has a disk limit of %llu bytes (type %s), %llu in use "
				    "or held by pushes",
				    h->box, (unsigned long long)h->limit, h->type,
				    (unsigned long long)used);
	if (k < 0)
		return pd_error_set(err, k, "box %s is gone", h->box);
	h->held += bytes;
	return 0;
}

static int push_reserve(void *userdata, uint64_t bytes, pd_error *err)
{
	struct root_upload *u = userdata;

	return disk_reserve(&u->hold, bytes, err);
}

static void *extract_main(void *arg)
{
	struct root_upload *u = arg;
	struct export_verify verify = {0};
	u->hooks = (struct tar_extract_hooks){.before_merge = push_before_merge, .userdata = u};
	if (u->r->volume) {
		/* Into a volume, an archive made by export is checked against
		 * its manifest (and the manifest is not extracted), as
		 * volumes/NAME/import does; box roots take any tar as it is. */
		export_verify_hooks(&verify, &u->inner);
		u->hooks.special = u->inner.special;
		u->hooks.special_max = u->inner.special_max;
		u->hooks.on_special = push_special;
	} else if ((u->holding = disk_hold_begin(u->r, &u->hold))) {
		/* A box's disk limit is not enforced by the filesystem yet:
		 * what the archive takes is held against it before each entry
		 * is written. */
		u->hooks.reserve = push_reserve;
	}
	u->result = tarsafe_extract_ex(u->r->rootfd, u->r->rel[0] ? u->r->rel : ".", u->pipe_r,
				       &u->lim, &u->hooks, &u->tr, &u->err);
	if (u->holding) {
		engine_box_push_end(u->hold.e, u->hold.id, u->hold.held, u->result);
		if (u->result == -ENOSPC)
			pd_error_prefix(&u->err, "push refused, the box is unchanged");
	}
	export_verify_release(&verify);
	close(u->pipe_r);
	u->pipe_r = -1;
	req_finish_async(u->r);
	return NULL;
}

static int upload_begin(struct req *r, struct root_upload *u)
{
	int fds[2];
	uid_t uid;
	gid_t gid;
	int k = open_root(r, &u->err);

	if (k < 0)
		return k;
	box_owner(r, &uid, &gid);
	if (u->op == OP_PUT_FILE)
		return tarsafe_replace_begin(r->rootfd, r->rel, 0644, uid, gid, &u->rep, &u->err);

	const struct pd_config *cfg = engine_config(http_engine(r->h));
	u->lim.max_entries = cfg->push_max_entries;
	u->lim.max_bytes = cfg->push_max_bytes;
	u->lim.uid = uid;
	u->lim.gid = gid;
	/* Absolute link targets mean the box's (or, in a volume, the boxes')
	 * own paths: they resolve from the root, as the daemon reads them. */
	u->lim.flags = TAR_ABS_LINKS_IN_ROOT;
	u->lim.root_what = r->volume ? "the volume" : "the box root";
	if (pipe2(fds, O_CLOEXEC) < 0)
		return pd_error_set(&u->err, -errno, "cannot create a pipe: %m");
	(void)fcntl(fds[1], F_SETPIPE_SZ, PIPE_SIZE);
	u->pipe_r = fds[0];
	u->pipe_w = fds[1];
	if (pthread_create(&u->thread, NULL, extract_main, u) != 0) {
		close(fds[0]);
		close(fds[1]);
		u->pipe_r = u->pipe_w = -1;
		return pd_error_set(&u->err, -EAGAIN, "cannot start a thread");
	}
	u->thread_started = true;
	return 0;
}

void http_root_upload(struct req *r, const char *data, size_t len)
{
	struct root_upload *u = r->upload;
	int k;

	if (r->method != M_PUT || r->upload_failed)
		return;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u) {
			r->upload_failed = true;
			return;
		}
		u->r = r;
		u->pipe_r = u->pipe_w = -1;
		u->rep.fd = -1;
		u->rep.dirfd = -1;
		r->upload = u;
		if (r->format && strcmp(r->format, "tar") == 0)
			u->op = OP_PUT_TAR;
		else if (!r->dir)
			u->op = OP_PUT_FILE;
		if (u->op == OP_NONE)
			return;
		k = upload_begin(r, u);
		if (k < 0) {
			u->result = k;
			r->upload_failed = true;
			return;
		}
	}
	if (!len || u->op == OP_NONE)
		return;
	int fd = u->op == OP_PUT_FILE ? u->rep.fd : u->pipe_w;
	if (fd < 0)
		return;
	k = write_all(fd, data, len);
	if (k < 0) {
		if (u->op == OP_PUT_FILE) {
			u->result =
			    pd_error_set(&u->err, k, "cannot write %s: %s", r->rel, strerror(-k));
			r->upload_failed = true;
		} else {
			/* The extractor stopped reading: it has the reason. */
			close(u->pipe_w);
			u->pipe_w = -1;
		}
	}
}

void http_root_release(struct req *r)
{
	struct root_upload *u = r->upload;

	if (u) {
		if (u->pipe_w >= 0)
			close(u->pipe_w);
		if (u->thread_started)
			pthread_join(u->thread, NULL);
		if (u->pipe_r >= 0)
			close(u->pipe_r);
		if (u->op == OP_PUT_FILE)
			tarsafe_replace_abort(&u->rep);
		free(u);
		r->upload = NULL;
	}
	if (r->rootfd >= 0)
		close(r->rootfd);
	r->rootfd = -1;
}

/* --- reads --------------------------------------------------------------- */

/* Appends one entry of a listing: an object to arr (the JSON form), or
 * without arr a line to text (the text form). false without memory. */
static bool listing_add(json_t *arr, struct pd_buf *text, const char *type, const char *mode,
			long long size, const char *raw_name)
{
	/* A box names its files as it likes: every name is shown, in both
	 * forms escaped alike (http_json_text()), so that none is left out,
	 * none breaks a line and no two look the same. */
	json_t *name = http_json_text(raw_name);

	if (!name)
		return false;
	if (arr)
		return json_array_append_new(arr, json_pack("{s:o, s:s, s:s, s:I}", "name", name,
							    "type", type, "mode", mode, "size",
							    (json_int_t)size)) == 0;
	bool ok = pd_buf_printf(text, "%c %s %lld %s\n", type[0], mode, size,
				json_string_value(name)) == 0;
	json_decref(name);
	return ok;
}

static void reply_dir_listing(struct req *r, int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	bool as_text = r->format && strcmp(r->format, "text") == 0, ok;
	json_t *arr = as_text ? NULL : json_array();
	_cleanup_pd_buf_ struct pd_buf text = {0};

	if (!d) {
		close(fd);
		json_decref(arr);
		req_reply_error(r, errno, NULL);
		return;
	}
	ok = arr || as_text;
	while (ok && (de = readdir(d))) {
		struct stat st;
		char mode[8];
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		const char *type = S_ISDIR(st.st_mode)	 ? "dir"
				   : S_ISLNK(st.st_mode) ? "link"
							 : "file";
		snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
		ok = listing_add(arr, &text, type, mode, (long long)st.st_size, de->d_name);
	}
	closedir(d);
	if (!ok) {
		json_decref(arr);
		req_reply_error(r, ENOMEM, "out of memory");
	} else if (as_text)
		req_reply_text(r, 200, "text/plain; charset=utf-8", text.data ? text.data : "",
			       text.len);
	else
		req_reply_listing(r, arr);
}

/* A pull: a thread writes the archive into a pipe, the response reads it.
 * Whoever lets go of it last frees it. */
struct tar_pull {
	int rootfd;
	uint32_t owner_base; /* the box's range: owners written as it sees them */
	char box[64];
	char rel[HTTP_PATH_MAX];
	int out;	   /* the pipe's write end, the thread's */
	int in;		   /* its read end, the response's */
	atomic_int result; /* the creator's: 1 while it runs */
	atomic_int refs;
};

static void pull_unref(struct tar_pull *p)
{
	if (atomic_fetch_sub(&p->refs, 1) == 1)
		free(p);
}

static void *pull_main(void *arg)
{
	struct tar_pull *p = arg;
	pd_error err = {0};
	struct tar_create_hooks hooks = {.owner_base = p->owner_base};
	int r = tarsafe_create_ex(p->rootfd, p->rel[0] ? p->rel : ".", p->out, &hooks, &err);

	/* A cut archive has no end-of-archive marker; the response also ends
	 * with an error, so a client never takes it for a whole one. */
	if (r < 0 && r != -EPIPE)
		log_warn("pull of box %s /%s cut short: %s", p->box, p->rel, err.msg);
	atomic_store(&p->result, r);
	close(p->out); /* after the result: the reader sees EOF once it is set */
	close(p->rootfd);
	pull_unref(p);
	return NULL;
}

static ssize_t pull_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct tar_pull *p = cls;
	ssize_t n;

	(void)pos;
	do
		n = read(p->in, buf, max);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return n;
	if (n == 0 && atomic_load(&p->result) == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void pull_free(void *cls)
{
	struct tar_pull *p = cls;

	close(p->in); /* a creator still writing gets EPIPE */
	pull_unref(p);
}

/* Streams r->rel as a tar archive (the body of a 200 response). */
static void reply_tar(struct req *r)
{
	struct MHD_Response *resp;
	struct tar_pull *p = calloc(1, sizeof(*p));
	pthread_t th;
	int fds[2];

	if (!p || pipe2(fds, O_CLOEXEC) < 0) {
		free(p);
		req_reply_error(r, ENOMEM, "cannot create a pipe");
		return;
	}
	(void)fcntl(fds[1], F_SETPIPE_SZ, PIPE_SIZE);
	p->rootfd = fcntl(r->rootfd, F_DUPFD_CLOEXEC, 0);
	snprintf(p->box, sizeof(p->box), "%s", r->box);
	snprintf(p->rel, sizeof(p->rel), "%s", r->rel);
	if (!r->volume) {
		struct box_view v;
		if (engine_box_get(http_engine(r->h), r->box, &v) >= 0)
			p->owner_base = (uint32_t)v.uid_base;
	}
	p->in = fds[0];
	p->out = fds[1];
	atomic_init(&p->result, 1);
	atomic_init(&p->refs, 2);
	resp =
	    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, pull_read, p, pull_free);
	if (!resp || p->rootfd < 0 || pthread_create(&th, NULL, pull_main, p) != 0) {
		if (resp)
			MHD_destroy_response(resp); /* pull_free: one reference */
		else
			close(fds[0]);
		if (p->rootfd >= 0)
			close(p->rootfd);
		close(fds[1]);
		if (!resp)
			free(p);
		else
			pull_unref(p);
		req_reply_error(r, EAGAIN, "cannot start a thread");
		return;
	}
	pthread_detach(th);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-tar");
	r->resp = resp;
	r->status = 200;
}

static void root_get(struct req *r)
{
	pd_error err = {0};
	struct stat st;
	int fd, k;

	k = open_root(r, &err);
	if (k < 0) {
		req_reply_error(r, k, err.msg);
		return;
	}
	fd = tarsafe_open(r->rootfd, r->rel[0] ? r->rel : ".", O_RDONLY, 0);
	if (fd < 0) {
		char msg[HTTP_PATH_MAX + 64];
		snprintf(msg, sizeof(msg), "/%s: %s", r->rel, strerror(-fd));
		req_reply_error(r, fd, msg);
		return;
	}
	if (fstat(fd, &st) < 0) {
		k = -errno;
		close(fd);
		req_reply_error(r, k, NULL);
		return;
	}
	if (r->format && strcmp(r->format, "tar") == 0) {
		close(fd);
		reply_tar(r);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		reply_dir_listing(r, fd);
		return;
	}
	if (r->dir) {
		close(fd);
		req_reply_error(r, ENOTDIR, "not a directory");
		return;
	}
	struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
	if (!resp) {
		close(fd);
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	r->resp = resp;
	r->status = 200;
}

/* --- writes -------------------------------------------------------------- */

static void work_put(struct req *r)
{
	struct root_upload *u = r->upload;
	int k;

	if (!u || u->op != OP_PUT_FILE) {
		req_reply_error(r, EINVAL, "nothing to write");
		return;
	}
	k = tarsafe_replace_commit(&u->rep, &u->err);
	if (k < 0) {
		req_reply_error(r, k, u->err.msg);
		return;
	}
	req_reply_text(r, 204, NULL, "", 0);
}

static void work_mkdir(struct req *r)
{
	pd_error err = {0};
	uid_t uid;
	gid_t gid;
	int k = open_root(r, &err);

	if (k < 0) {
		req_reply_error(r, k, err.msg);
		return;
	}
	box_owner(r, &uid, &gid);
	k = r->rel[0] ? tarsafe_mkdir_p(r->rootfd, r->rel, 0755, uid, gid) : 0;
	if (k < 0) {
		char msg[HTTP_PATH_MAX + 64];
		snprintf(msg, sizeof(msg), "/%s: %s", r->rel, strerror(-k));
		req_reply_error(r, k, msg);
		return;
	}
	req_reply_text(r, k > 0 ? 201 : 200, "application/json", "{}\n", 3);
}

static void work_delete(struct req *r)
{
	pd_error err = {0};
	int k = open_root(r, &err);

	if (k >= 0)
		k = tarsafe_remove(r->rootfd, r->rel[0] ? r->rel : ".", r->recursive, &err);
	if (k < 0) {
		req_reply_error(r, k, err.msg);
		return;
	}
	req_reply_text(r, 204, NULL, "", 0);
}

void http_root_handle(struct req *r)
{
	struct root_upload *u = r->upload;

	switch (r->method) {
	case M_GET:
	case M_HEAD:
		root_get(r);
		return;
	case M_DELETE:
		req_run_async(r, work_delete);
		return;
	case M_PUT:
		break;
	default:
		req_reply_error(r, EINVAL, "method not supported under root/");
		r->status = 405;
		return;
	}
	if (r->upload_failed) {
		req_reply_error(r, u && u->result ? u->result : -ENOMEM,
				u && u->err.msg[0] ? u->err.msg : NULL);
		return;
	}
	if (!u || u->op == OP_NONE) {
		req_run_async(r, work_mkdir);
		return;
	}
	if (u->op == OP_PUT_FILE) {
		req_run_async(r, work_put);
		return;
	}
	/* The whole body is in the pipe: end it and wait for the extractor. */
	if (u->pipe_w >= 0) {
		close(u->pipe_w);
		u->pipe_w = -1;
	}
	req_wait_async(r);
}

void http_root_finish_push(struct req *r)
{
	struct root_upload *u = r->upload;

	if (!u || u->op != OP_PUT_TAR || r->resp)
		return;
	if (u->result == -EACCES && atomic_load(&r->revoked)) {
		req_reply_unauthorized(r, u->err.msg);
		return;
	}
	if (u->result < 0) {
		req_reply_error(r, u->result, u->err.msg);
		return;
	}
	char s[96];
	snprintf(s, sizeof(s), "{\"entries\":%llu,\"bytes\":%llu}",
		 (unsigned long long)u->tr.entries, (unsigned long long)u->tr.bytes);
	req_reply_json(r, 200, s);
}
