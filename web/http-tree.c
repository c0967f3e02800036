/* http-tree.c - tree nodes over HTTP: reads (values, listings, streams),
 * control writes, mkdir and rmdir, each one tree_* call (fs/tree.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "web/http-internal.h"
#include "common/util.h"
#include "engine/volumes.h"

#define VALUE_READ_MAX (16u << 20)
#define LINK_HOPS_MAX 4

/* Walks path from the root. A link in the middle (exec/last) continues at
 * its target, resolved in the link's directory; a final link is returned
 * as is. Fills the final node's parent and name for mkdir/rmdir. */
static int resolve(struct tree *t, const char *path, uint64_t *ret_parent, char *ret_name,
		   size_t name_size, struct tree_attr *ret)
{
	char buf[HTTP_PATH_MAX];
	struct tree_attr a = {0};
	uint64_t dir = TREE_ROOT_INO, parent = TREE_ROOT_INO;
	char *s, *next;
	int k;

	snprintf(buf, sizeof(buf), "%s", path);
	if (ret_name)
		ret_name[0] = '\0';
	k = tree_getattr(t, TREE_ROOT_INO, &a);
	if (k < 0)
		return k;
	for (s = buf; *s; s = next) {
		next = strchr(s, '/');
		if (next)
			*next++ = '\0';
		else
			next = s + strlen(s);
		if (!S_ISDIR(a.mode))
			return -ENOTDIR;
		parent = dir;
		k = tree_lookup(t, dir, s, &a);
		if (k < 0)
			return k;
		for (int hops = 0; S_ISLNK(a.mode) && *next && hops < LINK_HOPS_MAX; hops++) {
			char target[256];
			k = tree_readlink(t, a.ino, target, sizeof(target));
			if (k < 0)
				return k;
			if (strchr(target, '/'))
				return -EXDEV; /* only links within a directory */
			k = tree_lookup(t, dir, target, &a);
			if (k < 0)
				return k;
		}
		if (ret_name)
			snprintf(ret_name, name_size, "%s", s);
		dir = a.ino;
	}
	if (ret_parent)
		*ret_parent = parent;
	*ret = a;
	return 0;
}

/* The reason for a failed tree call: the box's error file when this call
 * recorded one (it changed), otherwise the errno's text with the path. */
struct box_error_mark {
	char box[64];
	bool volume; /* box names a volume (its error file) */
	char before[PD_ERROR_MAX + 64];
};

/* The current error of the box or volume m names, in buf. */
static int object_error(struct req *r, const struct box_error_mark *m, char *buf, size_t size)
{
	struct volume_view vv;
	struct box_view v;

	if (m->volume) {
		if (engine_volume_get(http_engine(r->h), m->box, &vv) < 0)
			return -ENOENT;
		snprintf(buf, size, "%s", vv.error);
		return 0;
	}
	if (engine_box_get(http_engine(r->h), m->box, &v) < 0)
		return -ENOENT;
	snprintf(buf, size, "%s", v.error);
	return 0;
}

static void mark_box_error(struct req *r, struct box_error_mark *m)
{
	const char *p = r->path;

	m->box[0] = m->before[0] = '\0';
	m->volume = strncmp(p, "volumes/", 8) == 0;
	if (!m->volume && strncmp(p, "boxes/", 6) != 0)
		return;
	p += m->volume ? 8 : 6;
	size_t n = strcspn(p, "/");
	if (n == 0 || n >= sizeof(m->box))
		return;
	memcpy(m->box, p, n);
	m->box[n] = '\0';
	(void)object_error(r, m, m->before, sizeof(m->before));
}

/* True when error (the object's error line, "TIME FILE: reason (ERRNO)")
 * is a failure of this very path with this errno: recorded by this call
 * even when it reads as before (the same failure again within a second). */
static bool error_is_about(const struct req *r, int k, const char *error)
{
	char label[HTTP_PATH_MAX + 4], code[32];
	const char *file = strchr(r->path, '/');

	file = file ? strchr(file + 1, '/') : NULL; /* past boxes/NAME/ */
	if (!file || !file[1])
		return false;
	snprintf(label, sizeof(label), " %s: ", file + 1);
	snprintf(code, sizeof(code), "(%s)", errno_name(k < 0 ? -k : k));
	size_t n = strlen(error), c = strlen(code);
	return strstr(error, label) && n >= c && strcmp(error + n - c, code) == 0;
}

static void reply_tree_error(struct req *r, int k, const struct box_error_mark *m)
{
	char msg[HTTP_PATH_MAX + PD_ERROR_MAX + 128], now[PD_ERROR_MAX + 64];

	if (m && m->box[0] && object_error(r, m, now, sizeof(now)) == 0 && now[0] &&
	    (strcmp(now, m->before) != 0 || error_is_about(r, k, now))) {
		snprintf(msg, sizeof(msg), "%s", now);
		msg[strcspn(msg, "\n")] = '\0';
	} else
		snprintf(msg, sizeof(msg), "/%s: %s", r->path, strerror(-k));
	req_reply_error(r, k, msg);
}

static const char *type_name(uint32_t mode)
{
	return S_ISDIR(mode) ? "dir" : S_ISLNK(mode) ? "link" : "file";
}

static void reply_listing(struct req *r, uint64_t ino)
{
	_cleanup_free_ struct tree_entry *ents = NULL;
	size_t n = 0;
	int k = tree_readdir(http_tree(r->h), ino, &ents, &n);

	if (k < 0) {
		reply_tree_error(r, k, NULL);
		return;
	}
	if (r->format && strcmp(r->format, "text") == 0) {
		size_t cap = n * (TREE_NAME_MAX + 40) + 1, len = 0;
		_cleanup_free_ char *s = malloc(cap);
		if (!s)
			return;
		for (size_t i = 0; i < n; i++)
			len += (size_t)snprintf(
			    s + len, cap - len, "%c %04o %llu %s\n",
			    type_name(ents[i].attr.mode)[0], ents[i].attr.mode & 07777,
			    (unsigned long long)ents[i].attr.size, ents[i].name);
		req_reply_text(r, 200, "text/plain; charset=utf-8", s, len);
		return;
	}
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		char mode[8];
		snprintf(mode, sizeof(mode), "%04o", ents[i].attr.mode & 07777);
		json_array_append_new(arr, json_pack("{s:o, s:s, s:s, s:I}", "name",
						     http_json_text(ents[i].name), "type",
						     type_name(ents[i].attr.mode), "mode", mode,
						     "size", (json_int_t)ents[i].attr.size));
	}
	req_reply_listing(r, arr);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct req *r = cls;
	struct tree *t = http_tree(r->h);

	if (atomic_load(&r->hangup))
		return MHD_CONTENT_READER_END_WITH_ERROR;
	http_park_arm(r->h, r, tree_file_wait_key(r->file));
	size_t n = 0;
	int k = tree_read(t, r->file, pos, buf, max, &n);
	if (k == TREE_WAIT) {
		http_park_suspend(r->h, r);
		return 0;
	}
	http_park_disarm(r->h, r);
	if (k == -EAGAIN)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (k < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return (ssize_t)n;
}

static const char *content_type(const char *path)
{
	size_t n = strlen(path);
	return n > 4 && strcmp(path + n - 4, ".png") == 0 ? "image/png"
							  : "text/plain; charset=utf-8";
}

static void tree_get(struct req *r)
{
	struct tree *t = http_tree(r->h);
	struct tree_attr a;
	struct tree_file *f = NULL;
	int k;

	k = resolve(t, r->path, NULL, NULL, 0, &a);
	if (k < 0) {
		reply_tree_error(r, k, NULL);
		return;
	}
	if (S_ISDIR(a.mode)) {
		reply_listing(r, a.ino);
		return;
	}
	if (r->dir) {
		reply_tree_error(r, -ENOTDIR, NULL);
		return;
	}
	if (S_ISLNK(a.mode)) {
		char target[PATH_MAX];
		k = tree_readlink(t, a.ino, target, sizeof(target));
		if (k < 0) {
			reply_tree_error(r, k, NULL);
			return;
		}
		json_t *o = json_pack("{s:o}", "link", http_json_text(target));
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		if (s)
			req_reply_json(r, 200, s);
		else
			req_reply_error(r, ENOMEM, "out of memory");
		free(s);
		return;
	}
	k = tree_open(t, a.ino, O_RDONLY | (r->follow ? 0 : O_NONBLOCK), &f);
	if (k < 0) {
		/* A refused read (exit of a job not started) says why in the
		 * error file; the mark is taken after, so only an error about
		 * this file is quoted (error_is_about()). */
		struct box_error_mark m;
		mark_box_error(r, &m);
		reply_tree_error(r, k, &m);
		return;
	}
	if (tree_file_is_stream(f)) {
		struct MHD_Response *resp;
		r->file = f;
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader,
							 r, NULL);
		if (!resp)
			return;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type(r->path));
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
		MHD_add_response_header(resp, "X-Accel-Buffering", "no");
		if (r->resp)
			MHD_destroy_response(r->resp);
		r->resp = resp;
		r->status = 200;
		return;
	}

	/* A value: rendered at open, read whole. */
	size_t cap = 4096, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	for (;;) {
		size_t n = 0;
		if (!buf) {
			k = -ENOMEM;
			break;
		}
		if (len == cap) {
			if (cap >= VALUE_READ_MAX) {
				k = -EFBIG;
				break;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				k = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		k = tree_read(t, f, len, buf + len, cap - len, &n);
		if (k < 0 || k == TREE_WAIT || n == 0)
			break;
		len += n;
	}
	tree_release(t, f);
	if (k < 0) {
		reply_tree_error(r, k, NULL);
		return;
	}
	req_reply_text(r, 200, content_type(r->path), buf, len);
}

static void work_write(struct req *r)
{
	struct tree *t = http_tree(r->h);
	struct box_error_mark m;
	struct tree_attr a;
	struct tree_file *f = NULL;
	_cleanup_free_ char *answer = NULL;
	int k;

	mark_box_error(r, &m);
	k = resolve(t, r->path, NULL, NULL, 0, &a);
	if (k >= 0 && !S_ISREG(a.mode))
		k = S_ISDIR(a.mode) ? -EISDIR : -EINVAL;
	if (k >= 0)
		k = tree_open(t, a.ino, O_WRONLY | O_TRUNC, &f);
	if (k >= 0) {
		k = tree_write(t, f, 0, r->body ? r->body : "", r->len);
		if (k >= 0)
			k = tree_flush(t, f);
		/* What the write made (a snapshot's id): the reply's body (none
		 * if there is no memory for it: the write itself happened). */
		if (k >= 0 && tree_file_answer(f))
			answer = strdup(tree_file_answer(f));
		tree_release(t, f);
	}
	if (k < 0) {
		reply_tree_error(r, k, &m);
		return;
	}
	if (answer)
		req_reply_json(r, 200, answer);
	else
		req_reply_text(r, 204, NULL, "", 0);
}

static void work_mkdir(struct req *r)
{
	struct tree *t = http_tree(r->h);
	struct box_error_mark m;
	struct tree_attr a, parent_attr;
	char parent_path[HTTP_PATH_MAX], *slash;
	const char *name;
	int k;

	mark_box_error(r, &m);
	snprintf(parent_path, sizeof(parent_path), "%s", r->path);
	slash = strrchr(parent_path, '/');
	if (slash) {
		*slash = '\0';
		name = slash + 1;
	} else {
		name = parent_path;
		memmove(parent_path + 1, parent_path, strlen(parent_path) + 1);
		parent_path[0] = '\0';
		name = parent_path + 1;
	}
	if (!*name) {
		req_reply_error(r, EEXIST, "the root exists");
		return;
	}
	k = resolve(t, parent_path, NULL, NULL, 0, &parent_attr);
	if (k >= 0)
		k = tree_mkdir(t, parent_attr.ino, name, &a);
	if (k < 0) {
		reply_tree_error(r, k, &m);
		return;
	}
	json_t *o = json_pack("{s:o}", "created", http_json_text(r->path));
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	req_reply_json(r, 201, s ? s : "{}");
	free(s);
}

static void work_rmdir(struct req *r)
{
	struct tree *t = http_tree(r->h);
	struct box_error_mark m;
	struct tree_attr a;
	uint64_t parent;
	char name[TREE_NAME_MAX + 1];
	int k;

	mark_box_error(r, &m);
	k = resolve(t, r->path, &parent, name, sizeof(name), &a);
	if (k >= 0 && !S_ISDIR(a.mode))
		k = -ENOTDIR;
	if (k >= 0 && !*name)
		k = -EBUSY;
	if (k >= 0)
		k = tree_rmdir(t, parent, name);
	if (k < 0) {
		reply_tree_error(r, k, &m);
		return;
	}
	req_reply_text(r, 204, NULL, "", 0);
}

void http_tree_handle(struct req *r)
{
	switch (r->method) {
	case M_GET:
	case M_HEAD:
		tree_get(r);
		break;
	case M_PUT:
		req_run_async(r, r->dir ? work_mkdir : work_write);
		break;
	case M_DELETE:
		req_run_async(r, work_rmdir);
		break;
	default:
		req_reply_error(r, EINVAL, "method not supported on the tree");
		r->status = 405;
	}
}
