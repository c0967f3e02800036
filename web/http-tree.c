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
#define LINK_HOPS_MAX 8
#define RESOLVE_DEPTH_MAX 64

/* resolve()'s answer for a link whose target is a host path (a snapshot's
 * root): never shown, never followed over HTTP. */
#define RESOLVE_OUT_OF_TREE (-EREMOTE)

/* Walks path from the root. A link in the middle (exec/last, a box's
 * snapshots/ID) continues at its target, read as a path relative to the
 * link's directory, `..` included (boxes/NAME/snapshots/ID leads to
 * ../../../snapshots/ID): the walk keeps the directories it went through,
 * so `..` goes back up the tree's own path, never above its root
 * (-ENOENT), at most LINK_HOPS_MAX links a path (-ELOOP). A final link is
 * returned as is, unless follow_last (a path ending in '/': the directory
 * it leads to). A target that is absolute (a host path) is never followed:
 * RESOLVE_OUT_OF_TREE. Fills the final node's parent and name for
 * mkdir/rmdir. */
static int resolve(struct tree *t, const char *path, bool follow_last, uint64_t *ret_parent,
		   char *ret_name, size_t name_size, struct tree_attr *ret)
{
	char buf[HTTP_PATH_MAX], tmp[HTTP_PATH_MAX];
	uint64_t dirs[RESOLVE_DEPTH_MAX];
	size_t depth = 1;
	struct tree_attr a = {0};
	uint64_t parent = TREE_ROOT_INO;
	unsigned hops = 0;
	char *s, *next;
	int k;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return -ENAMETOOLONG;
	if (ret_name)
		ret_name[0] = '\0';
	dirs[0] = TREE_ROOT_INO;
	k = tree_getattr(t, TREE_ROOT_INO, &a);
	if (k < 0)
		return k;
	for (s = buf; *s; s = next) {
		next = strchr(s, '/');
		if (next)
			*next++ = '\0';
		else
			next = s + strlen(s);
		if (!*s || strcmp(s, ".") == 0)
			continue; /* only a link's target has these: the URL's are refused */
		if (!S_ISDIR(a.mode))
			return -ENOTDIR;
		if (strcmp(s, "..") == 0) {
			if (depth == 1)
				return -ENOENT; /* above the tree's root */
			depth--;
			k = tree_getattr(t, dirs[depth - 1], &a);
			if (k < 0)
				return k;
			parent = depth > 1 ? dirs[depth - 2] : TREE_ROOT_INO;
			if (ret_name)
				ret_name[0] = '\0';
			continue;
		}
		parent = dirs[depth - 1];
		k = tree_lookup(t, parent, s, &a);
		if (k < 0)
			return k;
		if (S_ISLNK(a.mode) && (*next || follow_last)) {
			char target[256];
			if (++hops > LINK_HOPS_MAX)
				return -ELOOP;
			k = tree_readlink(t, a.ino, target, sizeof(target));
			if (k < 0)
				return k;
			if (target[0] == '/')
				return RESOLVE_OUT_OF_TREE;
			/* The target, then what is left of the path, from the
			 * link's directory. */
			if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", target, next) >=
			    sizeof(buf))
				return -ENAMETOOLONG;
			memcpy(buf, tmp, strlen(tmp) + 1);
			next = buf;
			k = tree_getattr(t, parent, &a);
			if (k < 0)
				return k;
			continue;
		}
		if (ret_name)
			snprintf(ret_name, name_size, "%s", s);
		if (depth == RESOLVE_DEPTH_MAX)
			return -ENAMETOOLONG;
		dirs[depth++] = a.ino;
	}
	if (ret_parent)
		*ret_parent = parent;
	*ret = a;
	return 0;
}

/* The reason for a failed tree call: the line it recorded in its object's
 * error file, handed back by the call itself (struct tree_error: never the
 * file read back, which a call at the same time may have overwritten),
 * otherwise the errno's text with the path. */
static void reply_tree_error(struct req *r, int k, const struct tree_error *te)
{
	char msg[HTTP_PATH_MAX + TREE_ERROR_MAX + 128];

	if (k == RESOLVE_OUT_OF_TREE) {
		/* A snapshot's root: a directory of the host, outside the tree. */
		snprintf(msg, sizeof(msg),
			 "/%s: leads to files outside the tree, which are not served over HTTP "
			 "(read the snapshot's export, or browse it through the mount)",
			 r->path);
		req_reply_error(r, ENOTSUP, msg);
		return;
	}
	if (te && te->code && te->text[0]) {
		snprintf(msg, sizeof(msg), "%s", te->text);
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

/* A file's type: its JSON values are application/json (a client may parse
 * them as such), a .png an image, everything else text. */
static const char *content_type(const char *path, const struct tree_file *f)
{
	size_t n = strlen(path);

	if (tree_file_is_json(f))
		return "application/json";
	return n > 4 && strcmp(path + n - 4, ".png") == 0 ? "image/png"
							  : "text/plain; charset=utf-8";
}

static void tree_get(struct req *r)
{
	struct tree *t = http_tree(r->h);
	struct tree_error te;
	struct tree_attr a;
	struct tree_file *f = NULL;
	int k;

	k = resolve(t, r->path, r->dir, NULL, NULL, 0, &a);
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
		/* A host path (a snapshot's root) is never shown: the link
		 * answers as the directory it leads to does over HTTP. */
		if (k >= 0 && target[0] == '/')
			k = RESOLVE_OUT_OF_TREE;
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
	k = tree_open(t, a.ino, O_RDONLY | (r->follow ? 0 : O_NONBLOCK), &f, &te);
	if (k < 0) {
		/* A refused read (exit of a job not started) says why. */
		reply_tree_error(r, k, &te);
		return;
	}
	if (tree_file_is_stream(f)) {
		struct MHD_Response *resp;
		r->file = f;
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader,
							 r, NULL);
		if (!resp)
			return;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
					content_type(r->path, f));
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
		MHD_add_response_header(resp, "X-Accel-Buffering", "no");
		if (r->resp)
			MHD_destroy_response(r->resp);
		r->resp = resp;
		r->status = 200;
		return;
	}

	/* A value: rendered at open, read whole. */
	const char *type = content_type(r->path, f);
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
	req_reply_text(r, 200, type, buf, len);
}

/* The path's last name and the attributes of the directory above it. */
static int resolve_parent(struct tree *t, const char *path, struct tree_attr *ret_dir, char *name,
			  size_t name_size)
{
	char parent[HTTP_PATH_MAX];
	char *slash;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (!slash)
		return -ENOENT; /* the top level makes nothing */
	*slash = '\0';
	if (strlen(slash + 1) >= name_size)
		return -ENAMETOOLONG;
	snprintf(name, name_size, "%s", slash + 1);
	return resolve(t, parent, /* follow_last= */ true, NULL, NULL, 0, ret_dir);
}

/* PUT of secrets/NAME that does not exist: made, as a shell's
 * `echo v > secrets/NAME` makes it (tree_create()). Elsewhere a PUT
 * makes nothing: -ENOENT. */
static int create_secret(struct req *r, struct tree_file **ret)
{
	struct tree *t = http_tree(r->h);
	char name[TREE_NAME_MAX + 1];
	struct tree_attr dir, a;
	int k = resolve_parent(t, r->path, &dir, name, sizeof(name));

	if (k < 0 || dir.ino != TREE_SECRETS_INO)
		return -ENOENT;
	return tree_create(t, dir.ino, name, O_WRONLY | O_CREAT | O_TRUNC, &a, ret);
}

static void work_write(struct req *r)
{
	struct tree *t = http_tree(r->h);
	struct tree_error te = {0};
	struct tree_attr a;
	struct tree_file *f = NULL;
	_cleanup_free_ char *answer = NULL;
	int k;

	k = resolve(t, r->path, /* follow_last= */ false, NULL, NULL, 0, &a);
	if (k == -ENOENT)
		k = create_secret(r, &f);
	else if (k >= 0 && !S_ISREG(a.mode))
		k = S_ISDIR(a.mode) ? -EISDIR : -EINVAL;
	if (k >= 0 && !f)
		k = tree_open(t, a.ino, O_WRONLY | O_TRUNC, &f, &te);
	if (k >= 0) {
		k = tree_write(t, f, 0, r->body.data ? r->body.data : "", r->body.len, &te);
		if (k >= 0)
			k = tree_flush(t, f, &te);
		/* What the write made (a snapshot's id): the reply's body (none
		 * if there is no memory for it: the write itself happened). */
		if (k >= 0 && tree_file_answer(f))
			answer = strdup(tree_file_answer(f));
		tree_release(t, f);
	}
	if (k < 0) {
		reply_tree_error(r, k, &te);
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
	struct tree_attr a, parent_attr;
	char parent_path[HTTP_PATH_MAX], *slash;
	const char *name;
	int k;

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
	k = resolve(t, parent_path, /* follow_last= */ true, NULL, NULL, 0, &parent_attr);
	if (k >= 0)
		k = tree_mkdir(t, parent_attr.ino, name, &a);
	if (k < 0) {
		reply_tree_error(r, k, NULL);
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
	struct tree_error te = {0};
	struct tree_attr a;
	uint64_t parent;
	char name[TREE_NAME_MAX + 1];
	int k;

	k = resolve(t, r->path, /* follow_last= */ false, &parent, name, sizeof(name), &a);
	/* secrets/NAME is a file: DELETE removes it, as unlink does. */
	if (k >= 0 && parent == TREE_SECRETS_INO && S_ISREG(a.mode)) {
		k = tree_unlink(t, parent, name);
		if (k < 0)
			reply_tree_error(r, k, NULL);
		else
			req_reply_text(r, 204, NULL, "", 0);
		return;
	}
	if (k >= 0 && !S_ISDIR(a.mode))
		k = -ENOTDIR;
	if (k >= 0 && !*name)
		k = -EBUSY;
	if (k >= 0)
		k = tree_rmdir(t, parent, name, &te);
	if (k < 0) {
		reply_tree_error(r, k, &te);
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
