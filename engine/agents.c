/* agents.c - the agent catalogue from the images' agents.ini (agents.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "engine/agents.h"
#include "engine/internal.h"
#include "common/buf.h"
#include "common/util.h"
#include "runtime/image.h"

static void entry_release(struct agent_entry *a)
{
	free(a->name);
	free(a->version);
	free(a->bin);
	free(a->secrets);
	free(a->endpoints);
}

static void image_release(struct agent_image *im)
{
	for (size_t i = 0; i < im->n; i++)
		entry_release(&im->agents[i]);
	free(im->agents);
	im->agents = NULL;
	im->n = 0;
}

void agents_release(struct agent_catalogue *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		image_release(&c->images[i]);
	free(c->images);
	*c = (struct agent_catalogue){0};
}

struct ini_state {
	struct agent_image *im;
	int r;
};

/* Printable one-line values only: they end up in files and errors. */
static bool value_ok(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 || *v == 0x7f)
			return false;
	return true;
}

static int on_pair(void *user, const char *section, const char *key, const char *value)
{
	struct ini_state *st = user;
	struct agent_image *im = st->im;
	struct agent_entry *a = NULL;
	char **field;

	if (!name_valid(section))
		return 1; /* skipped */
	for (size_t i = 0; i < im->n; i++)
		if (strcmp(im->agents[i].id, section) == 0)
			a = &im->agents[i];
	if (!a) {
		struct agent_entry *v = realloc(im->agents, (im->n + 1) * sizeof *v);
		if (!v) {
			st->r = -ENOMEM;
			return 0;
		}
		im->agents = v;
		a = &im->agents[im->n++];
		*a = (struct agent_entry){0};
		snprintf(a->id, sizeof a->id, "%s", section);
	}
	field = strcmp(key, "name") == 0	? &a->name
		: strcmp(key, "version") == 0	? &a->version
		: strcmp(key, "bin") == 0	? &a->bin
		: strcmp(key, "secrets") == 0	? &a->secrets
		: strcmp(key, "endpoints") == 0 ? &a->endpoints
						: NULL;
	if (!field || !value_ok(value))
		return 1; /* package, install, ...: not the daemon's business */
	free(*field);
	*field = strdup(value);
	if (!*field) {
		st->r = -ENOMEM;
		return 0;
	}
	return 1;
}

int agents_parse_file(const char *path, struct agent_image *ret)
{
	_cleanup_free_ char *text = NULL;
	struct ini_state st = {.im = ret};
	size_t len;
	int r;

	ret->agents = NULL;
	ret->n = 0;
	r = read_file_at(AT_FDCWD, path, AGENTS_INI_MAX, &text, &len);
	if (r < 0)
		return r;
	if (memchr(text, '\0', len))
		return -EINVAL;
	/* inih reports the first bad line but goes on: what parses is kept. */
	(void)ini_parse_string(text, on_pair, &st);
	if (st.r < 0) {
		image_release(ret);
		return st.r;
	}
	return 0;
}

int agents_load(const char *images_dir, struct agent_catalogue *ret)
{
	struct agent_catalogue c = {0};
	char **names = NULL;
	size_t n = 0;
	int r;

	*ret = c;
	r = image_list(images_dir, &names, &n);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	c.images = calloc(n + 1, sizeof *c.images);
	if (!c.images) {
		image_list_free(names, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct agent_image *im = &c.images[c.n];
		char path[4096];
		snprintf(path, sizeof path, "%s/%s/agents.ini", images_dir, names[i]);
		r = agents_parse_file(path, im);
		if (r == -ENOMEM) {
			image_list_free(names, n);
			agents_release(&c);
			return r;
		}
		if (r < 0 || im->n == 0) {
			image_release(im);
			continue;
		}
		snprintf(im->name, sizeof im->name, "%s", names[i]);
		c.n++;
	}
	image_list_free(names, n);
	*ret = c;
	return 0;
}

const struct agent_entry *agents_find(const struct agent_catalogue *c, const char *image,
				      const char *id)
{
	for (size_t i = 0; c && i < c->n; i++) {
		if (image && strcmp(c->images[i].name, image) != 0)
			continue;
		for (size_t k = 0; k < c->images[i].n; k++)
			if (strcmp(c->images[i].agents[k].id, id) == 0)
				return &c->images[i].agents[k];
	}
	return NULL;
}

const struct agent_entry *agents_image_first(const struct agent_catalogue *c, const char *image)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (strcmp(c->images[i].name, image) == 0 && c->images[i].n)
			return &c->images[i].agents[0];
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int agents_id_list(const struct agent_catalogue *c, char ***ret, size_t *ret_n)
{
	size_t total = 0, n = 0;
	char **v;

	for (size_t i = 0; i < c->n; i++)
		total += c->images[i].n;
	v = calloc(total + 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++)
		for (size_t k = 0; k < c->images[i].n; k++) {
			const char *id = c->images[i].agents[k].id;
			bool seen = false;
			for (size_t j = 0; j < n && !seen; j++)
				seen = strcmp(v[j], id) == 0;
			if (seen)
				continue;
			if (!(v[n] = strdup(id))) {
				image_list_free(v, n);
				return -ENOMEM;
			}
			n++;
		}
	qsort(v, n, sizeof *v, cmp_str);
	*ret = v;
	*ret_n = n;
	return 0;
}

void agents_ids(const struct agent_catalogue *c, const char *image, char *buf, size_t bufsz)
{
	size_t len = 0;

	buf[0] = '\0';
	if (image) {
		for (size_t i = 0; i < c->n; i++)
			if (strcmp(c->images[i].name, image) == 0)
				for (size_t k = 0; k < c->images[i].n; k++)
					if (!text_list_add(buf, bufsz, &len,
							   c->images[i].agents[k].id))
						return;
	} else {
		char **ids = NULL;
		size_t n = 0;
		if (agents_id_list(c, &ids, &n) >= 0)
			for (size_t i = 0; i < n; i++)
				if (!text_list_add(buf, bufsz, &len, ids[i]))
					break;
		image_list_free(ids, n);
	}
	if (!buf[0])
		snprintf(buf, bufsz, "none");
}

int agents_format(const struct agent_catalogue *c, const struct pd_config *cfg, const char *id,
		  char **ret)
{
	const struct agent_entry *a = agents_find(c, NULL, id);
	const struct agent_config *ac = config_find_agent(cfg, id);
	struct pd_buf b = {0};
	int r;

	if (!a)
		return -ENOENT;
	r = pd_buf_printf(&b, "version %s\nimages", a->version ? a->version : "unknown");
	for (size_t i = 0; r >= 0 && i < c->n; i++)
		if (agents_find(c, c->images[i].name, id))
			r = pd_buf_printf(&b, " %s", c->images[i].name);
	if (r >= 0)
		r = pd_buf_printf(&b, "\nsecrets %s\n", a->secrets ? a->secrets : "");
	if (r >= 0 && ac && ac->base_url)
		r = pd_buf_printf(&b, "base_url %s\n", ac->base_url);
	if (r >= 0 && ac && ac->model)
		r = pd_buf_printf(&b, "model %s\n", ac->model);
	if (r >= 0)
		*ret = pd_buf_take(&b, NULL);
	pd_buf_free(&b);
	return r < 0 || !*ret ? -ENOMEM : 0;
}

int agents_endpoints(const struct agent_catalogue *c, const struct pd_config *cfg, const char *id,
		     char ***ret)
{
	const struct agent_entry *a = agents_find(c, NULL, id);
	const struct agent_config *ac = config_find_agent(cfg, id);
	char host[CONFIG_HOST_MAX + 1];
	char **v;
	size_t n = 0;

	if (!a)
		return -ENOENT;
	if (ac && ac->base_url) {
		v = calloc(2, sizeof *v);
		if (!v)
			return -ENOMEM;
		if (config_url_host(ac->base_url, host, sizeof host) >= 0 &&
		    !(v[n++] = strdup(host))) {
			free(v);
			return -ENOMEM;
		}
		*ret = v;
		return 0;
	}
	const char *s = a->endpoints ? a->endpoints : "";
	v = calloc(strlen(s) / 2 + 2, sizeof *v);
	if (!v)
		return -ENOMEM;
	while (*s) {
		size_t k = strcspn(s, " \t,");
		if (k && !(v[n++] = strndup(s, k))) {
			strv_free(v);
			return -ENOMEM;
		}
		s += k;
		s += strspn(s, " \t,");
	}
	*ret = v;
	return 0;
}

int agents_expand_policy(const struct agent_catalogue *c, const struct pd_config *cfg,
			 struct policy *p, bool strict, pd_error *err)
{
	size_t n = p->n_entries;

	for (size_t i = 0; i < n; i++) {
		char **hosts = NULL;
		int r;
		if (p->entries[i].kind != POLICY_PRESET)
			continue;
		r = agents_endpoints(c, cfg, p->entries[i].domain, &hosts);
		if (r == -ENOENT) {
			char known[512];
			if (!strict)
				continue;
			agents_ids(c, NULL, known, sizeof known);
			return pd_error_set(err, -EINVAL, "line %d: unknown agent @%s (known: %s)",
					    p->entries[i].line, p->entries[i].domain, known);
		}
		if (r < 0)
			return pd_error_set(err, r, "out of memory");
		for (char **h = hosts; *h && r >= 0; h++) {
			r = policy_add_expanded(p, *h);
			/* A catalogue endpoint that is no host (a typo in the
			 * image's file) allows nothing. */
			if (r == -EINVAL)
				r = 0;
		}
		strv_free(hosts);
		if (r < 0)
			return pd_error_set(err, r, "out of memory");
	}
	return 0;
}

/* --- the engine's side ---------------------------------------------------------- */

int engine_agent_names(struct engine *e, char ***ret, size_t *ret_n)
{
	struct agent_catalogue c;
	int r = agents_load(e->images_dir, &c);

	if (r >= 0)
		r = agents_id_list(&c, ret, ret_n);
	agents_release(&c);
	return r;
}

int engine_agent_read(struct engine *e, const char *id, char **ret, size_t *ret_len)
{
	struct agent_catalogue c;
	int r = agents_load(e->images_dir, &c);

	if (r >= 0)
		r = agents_format(&c, e->cfg, id, ret);
	agents_release(&c);
	if (r >= 0)
		*ret_len = strlen(*ret);
	return r;
}
