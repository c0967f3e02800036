/* tarsafe-links.c - where a symlink leads, found by walking a model of the
 * tree component by component and following every link on the way, like
 * the kernel's path resolution (see tarsafe-internal.h). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tarsafe-internal.h"
#include "util.h"

/* Most links followed in one walk, as the kernel's MAXSYMLINKS. */
#define WALK_MAX_LINKS 40
/* A link's target plus what is left of the path after it. */
#define REST_MAX (2 * PATH_MAX + 2)

struct walk {
	const struct tarsafe_walk *w;
	bool clamp; /* `..` at the root stays there, as RESOLVE_IN_ROOT */
	char *cur;  /* PATH_MAX bytes: where the walk is, normalized */
	size_t len;
	char via[160]; /* the last link followed, "PATH -> TARGET", for messages */
	char *why;
	size_t whysz;
};

static int refuse(struct walk *k, const char *fmt, ...) _printf_(2, 3);

static int refuse(struct walk *k, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	if (vsnprintf(what, sizeof(what), fmt, ap) < 0)
		what[0] = '\0';
	va_end(ap);
	if (k->via[0])
		snprintf(k->why, k->whysz, "%s (through %s)", what, k->via);
	else
		snprintf(k->why, k->whysz, "%s", what);
	return -EPERM;
}

static void pop(struct walk *k)
{
	char *slash = memrchr(k->cur, '/', k->len);

	k->len = slash ? (size_t)(slash - k->cur) : 0;
	k->cur[k->len] = '\0';
}

static void note_via(struct walk *k, const char *target)
{
	char a[72], b[72];

	snprintf(k->via, sizeof(k->via), "%s -> %s", tarsafe_printable(k->cur, a, sizeof(a)),
		 tarsafe_printable(target, b, sizeof(b)));
}

/* Walks `path` from k->cur. Returns 0 with k->cur where it ends, -EPERM
 * (k->why says why) when it leaves the root, or -ENOMEM. */
static int walk(struct walk *k, const char *path)
{
	_cleanup_free_ char *rest = malloc(REST_MAX), *next = malloc(REST_MAX);
	char target[PATH_MAX];
	unsigned links = 0;
	bool tainted = false; /* past a missing entry or a file: lexical */
	const char *p;

	if (!rest || !next)
		return -ENOMEM;
	if (strlen(path) >= REST_MAX)
		return refuse(k, "too long to resolve");
	memcpy(rest, path, strlen(path) + 1);
	p = rest;
	if (*p == '/') {
		if (!k->clamp && !k->w->abs_in_root)
			return refuse(k, "absolute, so outside");
		k->len = 0;
		k->cur[0] = '\0';
	}
	for (size_t len; (len = tarsafe_next_component(&p)) > 0; p += len) {
		size_t before = k->len;
		int n;

		if (len == 1 && p[0] == '.')
			continue;
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (k->len > 0)
				pop(k);
			else if (!k->clamp)
				return refuse(k, "climbs above it");
			continue;
		}
		if (k->len + (k->len > 0) + len + 1 > PATH_MAX)
			return refuse(k, "too long to resolve");
		if (k->len > 0)
			k->cur[k->len++] = '/';
		memcpy(k->cur + k->len, p, len);
		k->len += len;
		k->cur[k->len] = '\0';
		if (tainted)
			continue;
		switch (k->w->lookup(k->w->userdata, k->cur, target, sizeof(target))) {
		case TARSAFE_NODE_DIR:
			continue;
		case TARSAFE_NODE_MISSING:
		case TARSAFE_NODE_OTHER:
			/* Nothing to follow; a later `..` counts lexically,
			 * as if a directory were made there. */
			tainted = true;
			continue;
		case TARSAFE_NODE_LINK:
			break;
		}
		if (++links > WALK_MAX_LINKS)
			return refuse(k, "more than %d levels of symbolic links", WALK_MAX_LINKS);
		note_via(k, target);
		k->len = before;
		k->cur[k->len] = '\0';
		if (target[0] == '/') {
			if (!k->clamp && !k->w->abs_in_root)
				return refuse(k, "leads to an absolute path");
			k->len = 0;
			k->cur[0] = '\0';
		}
		n = snprintf(next, REST_MAX, "%s/%s", target, p + len);
		if (n < 0 || n >= REST_MAX)
			return refuse(k, "too long to resolve");
		memcpy(rest, next, (size_t)n + 1);
		p = rest;
		len = 0;
	}
	return 0;
}

int tarsafe_walk_in_root(const struct tarsafe_walk *w, char *cur, const char *path)
{
	char why[8];
	struct walk k = {.w = w,
			 .clamp = true,
			 .cur = cur,
			 .len = strlen(cur),
			 .why = why,
			 .whysz = sizeof(why)};
	int r = walk(&k, path);

	/* Clamped, only a loop or a length stops it. */
	return r == -EPERM ? -ELOOP : r;
}

int tarsafe_link_shape(const char *target, bool abs_in_root, char *why, size_t whysz)
{
	bool name = false;
	const char *p = target;

	if (target[0] == '/' && !abs_in_root) {
		snprintf(why, whysz, "it is absolute");
		return -EPERM;
	}
	for (size_t len; (len = tarsafe_next_component(&p)) > 0; p += len) {
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (target[0] == '/' && !name) {
				/* An absolute target starts at the root. */
				snprintf(why, whysz, "climbs above it");
				return -EPERM;
			}
			if (name) {
				snprintf(why, whysz,
					 "goes back up (..) after a name: only leading "
					 ".. are allowed");
				return -EPERM;
			}
		} else if (!(len == 1 && p[0] == '.')) {
			name = true;
		}
	}
	return 0;
}

int tarsafe_walk_link(const struct tarsafe_walk *w, char *cur, const char *target, char *why,
		      size_t whysz)
{
	struct walk k = {.w = w, .cur = cur, .len = strlen(cur), .why = why, .whysz = whysz};
	int r = tarsafe_link_shape(target, w->abs_in_root, why, whysz);

	return r < 0 ? r : walk(&k, target);
}
