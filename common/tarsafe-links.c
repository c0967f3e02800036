/* tarsafe-links.c - where a symlink leads, found by walking a model of the
 * tree component by component and following every link on the way, like
 * the kernel's path resolution (see tarsafe-internal.h).
 *
 * A judge pass walks the targets of every link of an archive; many walks
 * share their paths and links (a chain of 39 links and 99,000 links to its
 * head). The cache remembers what each path is, and where each link leads
 * once followed, so that a link is resolved once per pass. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tarsafe-internal.h"
#include "common/util.h"

/* Most links followed in one walk, as the kernel's MAXSYMLINKS. */
#define WALK_MAX_LINKS 40
/* Past this many bytes the cache starts over. */
#define CACHE_MAX_BYTES (16u << 20)

enum memo {
	MEMO_NONE,
	MEMO_OK,   /* leads to memo_text, following memo_links links (itself too) */
	MEMO_OUT,  /* leads outside: memo_text says why */
	MEMO_DEEP, /* needs more than memo_links links */
};

/* A path looked up, and for a link, where following it leads. */
struct cent {
	struct cent *next;
	uint64_t hash;
	enum tarsafe_node node;
	char *target; /* LINK, REDIRECT */
	enum memo memo;
	uint64_t memo_gen; /* valid while it is the cache's gen */
	unsigned memo_links;
	bool memo_tainted;
	char *memo_text;
	char path[];
};

struct tarsafe_walk_cache {
	struct cent **buckets;
	size_t n_buckets, n, bytes;
	uint64_t gen; /* moves on when a link's meaning may have changed */
};

static uint64_t hash_path(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static void cent_free(struct cent *e)
{
	free(e->target);
	free(e->memo_text);
	free(e);
}

static void cache_clear(struct tarsafe_walk_cache *c)
{
	for (size_t i = 0; i < c->n_buckets; i++)
		for (struct cent *e = c->buckets[i], *next; e; e = next) {
			next = e->next;
			cent_free(e);
		}
	memset(c->buckets, 0, c->n_buckets * sizeof(c->buckets[0]));
	c->n = c->bytes = 0;
	c->gen++;
}

struct tarsafe_walk_cache *tarsafe_walk_cache_new(void)
{
	struct tarsafe_walk_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->n_buckets = 1024;
	c->buckets = calloc(c->n_buckets, sizeof(c->buckets[0]));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	c->gen = 1;
	return c;
}

void tarsafe_walk_cache_free(struct tarsafe_walk_cache *c)
{
	if (!c)
		return;
	cache_clear(c);
	free(c->buckets);
	free(c);
}

static struct cent **cache_slot(struct tarsafe_walk_cache *c, const char *path, uint64_t h)
{
	struct cent **p = &c->buckets[h & (c->n_buckets - 1)];

	for (; *p; p = &(*p)->next)
		if ((*p)->hash == h && strcmp((*p)->path, path) == 0)
			break;
	return p;
}

static void cache_grow(struct tarsafe_walk_cache *c)
{
	size_t n = c->n_buckets * 2;
	struct cent **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->n_buckets; i++)
		for (struct cent *e = c->buckets[i], *next; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	free(c->buckets);
	c->buckets = b;
	c->n_buckets = n;
}

/* Remembers what PATH is; NULL when out of memory (the caller goes on
 * without). */
static struct cent *cache_add(struct tarsafe_walk_cache *c, const char *path,
			      enum tarsafe_node node, const char *target)
{
	size_t len = strlen(path) + 1, tlen = target ? strlen(target) + 1 : 0;
	uint64_t h = hash_path(path);
	struct cent *e;

	if (c->bytes + sizeof(*e) + len + tlen > CACHE_MAX_BYTES)
		cache_clear(c);
	e = calloc(1, sizeof(*e) + len);
	if (!e)
		return NULL;
	memcpy(e->path, path, len);
	e->hash = h;
	e->node = node;
	if (target && !(e->target = strdup(target))) {
		free(e);
		return NULL;
	}
	if (c->n >= c->n_buckets)
		cache_grow(c);
	e->next = c->buckets[h & (c->n_buckets - 1)];
	c->buckets[h & (c->n_buckets - 1)] = e;
	c->n++;
	c->bytes += sizeof(*e) + len + tlen;
	return e;
}

static struct cent *cache_find(struct tarsafe_walk_cache *c, const char *path)
{
	return *cache_slot(c, path, hash_path(path));
}

void tarsafe_walk_cache_forget(struct tarsafe_walk_cache *c, const char *path)
{
	struct cent **p, *e;

	if (!c)
		return;
	p = cache_slot(c, path, hash_path(path));
	e = *p;
	if (!e)
		return; /* no walk met it since the cache last started over */
	*p = e->next;
	c->n--;
	c->bytes -= sizeof(*e) + strlen(e->path) + 1 + (e->target ? strlen(e->target) + 1 : 0);
	cent_free(e);
	c->gen++; /* a remembered link may have gone through it */
}

/* ---- the walk ---- */

struct walk {
	const struct tarsafe_walk *w;
	char *cur; /* PATH_MAX bytes: where the walk is, normalized */
	size_t len;
	unsigned links; /* followed so far */
	bool deep;	/* the refusal was for too many links */
	char *scratch;	/* PATH_MAX bytes: a target looked up without a cache */
	char via[160];	/* the last link followed, "PATH -> TARGET", for messages */
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
	k->deep = false;
	return -EPERM;
}

static int refuse_deep(struct walk *k)
{
	int r = refuse(k, "more than %d levels of symbolic links", WALK_MAX_LINKS);

	k->deep = true;
	return r;
}

static void set_cur(struct walk *k, const char *path)
{
	k->len = strlen(path);
	memmove(k->cur, path, k->len + 1);
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

/* What k->cur is: *ret_target (LINK, REDIRECT) stays valid until the next
 * lookup. */
static int lookup(struct walk *k, enum tarsafe_node *ret, const char **ret_target)
{
	struct tarsafe_walk_cache *c = k->w->cache;
	struct cent *e;

	if (k->w->budget) {
		if (*k->w->budget == 0)
			return -E2BIG;
		(*k->w->budget)--;
	}
	if (c && (e = cache_find(c, k->cur))) {
		*ret = e->node;
		*ret_target = e->target;
		return 0;
	}
	*ret = k->w->lookup(k->w->userdata, k->cur, k->scratch, PATH_MAX);
	*ret_target = k->scratch;
	if (*ret != TARSAFE_NODE_LINK && *ret != TARSAFE_NODE_REDIRECT)
		*ret_target = NULL;
	if (c && (e = cache_add(c, k->cur, *ret, *ret_target)))
		*ret_target = e->target;
	return 0;
}

/* Remembers where the link at `link` leads (see enum memo). */
static void memo_store(struct walk *k, const char *link, enum memo memo, unsigned links,
		       bool tainted, const char *text)
{
	struct tarsafe_walk_cache *c = k->w->cache;
	struct cent *e = c ? cache_find(c, link) : NULL;
	char *copy;

	if (!e || e->node != TARSAFE_NODE_LINK)
		return; /* the cache started over meanwhile */
	copy = text ? strdup(text) : NULL;
	if (text && !copy)
		return;
	if (e->memo_text)
		c->bytes -= strlen(e->memo_text) + 1;
	free(e->memo_text);
	e->memo_text = copy;
	if (copy)
		c->bytes += strlen(copy) + 1;
	e->memo = memo;
	e->memo_gen = c->gen;
	e->memo_links = links;
	e->memo_tainted = tainted;
}

static int walk_path(struct walk *k, const char *path, bool *tainted);

/* Follows the link at k->cur, whose target is `target`; on success k->cur
 * is where it leads and *tainted whether the rest is lexical. */
static int follow(struct walk *k, const char *target_in, bool *tainted)
{
	_cleanup_free_ char *target = strdup(target_in), *link = strdup(k->cur);
	struct tarsafe_walk_cache *c = k->w->cache;
	unsigned before = k->links, room = WALK_MAX_LINKS - k->links;
	struct cent *e = c && link ? cache_find(c, link) : NULL;
	bool sub_tainted = false;
	int r;

	if (!target || !link)
		return -ENOMEM;
	if (e && e->memo != MEMO_NONE && e->memo_gen == c->gen) {
		switch (e->memo) {
		case MEMO_OK:
			note_via(k, target);
			if (e->memo_links > room)
				return refuse_deep(k);
			k->links += e->memo_links;
			*tainted = e->memo_tainted;
			set_cur(k, e->memo_text);
			return 0;
		case MEMO_OUT:
			snprintf(k->why, k->whysz, "%s", e->memo_text);
			k->deep = false;
			return -EPERM;
		case MEMO_DEEP:
			if (room <= e->memo_links) {
				note_via(k, target);
				return refuse_deep(k);
			}
			break; /* more room this time: try */
		case MEMO_NONE:
			break;
		}
	}

	note_via(k, target);
	if (++k->links > WALK_MAX_LINKS)
		return refuse_deep(k);
	pop(k); /* the link's directory */
	r = walk_path(k, target, &sub_tainted);
	if (r == 0) {
		memo_store(k, link, MEMO_OK, k->links - before, sub_tainted, k->cur);
		*tainted = sub_tainted;
	} else if (r == -EPERM && k->deep) {
		memo_store(k, link, MEMO_DEEP, room, false, NULL);
	} else if (r == -EPERM) {
		memo_store(k, link, MEMO_OUT, 0, false, k->why);
	}
	return r;
}

/* Walks `path` from k->cur. Returns 0 with k->cur where it ends, -EPERM
 * (k->why says why) when it leaves the root, -E2BIG or -ENOMEM. */
static int walk_path(struct walk *k, const char *path, bool *tainted)
{
	const char *p = path, *target;

	if (*p == '/') {
		if (!k->w->abs_in_root)
			return refuse(k, "leads to an absolute path");
		set_cur(k, "");
		*tainted = false;
	}
	for (size_t len; (len = tarsafe_next_component(&p)) > 0; p += len) {
		enum tarsafe_node node;
		int r;

		if (len == 1 && p[0] == '.')
			continue;
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (k->len == 0)
				return refuse(k, "climbs above it");
			pop(k);
			continue;
		}
		if (k->len + (k->len > 0) + len + 1 > PATH_MAX)
			return refuse(k, "too long to resolve");
		if (k->len > 0)
			k->cur[k->len++] = '/';
		memcpy(k->cur + k->len, p, len);
		k->len += len;
		k->cur[k->len] = '\0';
		if (*tainted)
			continue;
		r = lookup(k, &node, &target);
		if (r < 0)
			return r;
		switch (node) {
		case TARSAFE_NODE_DIR:
			break;
		case TARSAFE_NODE_MISSING:
		case TARSAFE_NODE_OTHER:
			/* Nothing to follow; a later `..` counts lexically,
			 * as if a directory were made there. */
			*tainted = true;
			break;
		case TARSAFE_NODE_REDIRECT:
			note_via(k, target);
			if (++k->links > WALK_MAX_LINKS)
				return refuse_deep(k);
			set_cur(k, target);
			break;
		case TARSAFE_NODE_LINK:
			r = follow(k, target, tainted);
			if (r < 0)
				return r;
			break;
		}
	}
	return 0;
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
	_cleanup_free_ char *scratch = malloc(PATH_MAX);
	struct walk k = {
	    .w = w, .cur = cur, .len = strlen(cur), .scratch = scratch, .why = why, .whysz = whysz};
	bool tainted = false;
	int r = tarsafe_link_shape(target, w->abs_in_root, why, whysz);

	if (r < 0)
		return r;
	if (!scratch)
		return -ENOMEM;
	return walk_path(&k, target, &tainted);
}
