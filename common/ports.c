/* ports.c - a box's published ports and the preview host form (ports.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/config.h"
#include "common/parse.h"
#include "common/ports.h"

int ports_parse_number(const char *s, size_t len, unsigned *ret)
{
	unsigned v = 0;

	if (len == 0 || len > 5 || s[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct port_entry *x = a, *y = b;
	return (int)x->port - (int)y->port;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

int ports_parse(const char *text, size_t len, struct port_list *ret, pd_error *err)
{
	struct port_list l = {.n = 0};
	unsigned lineno = 0;

	if (memchr(text, '\0', len))
		return pd_error_set(err, -EINVAL, "ports: a NUL byte in the text");
	for (size_t pos = 0; pos < len;) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos, i = 0, w;
		unsigned port;

		pos += n + (nl ? 1 : 0);
		lineno++;
		while (i < n && blank(line[i]))
			i++;
		if (i == n)
			continue; /* an empty line */
		for (w = i; w < n && !blank(line[w]); w++)
			;
		if (ports_parse_number(line + i, w - i, &port) < 0)
			return pd_error_set(err, -EINVAL,
					    "ports: line %u: \"%.*s\" is not a port (1 to 65535, "
					    "written PORT or PORT public)",
					    lineno, (int)(w - i > 32 ? 32 : w - i), line + i);
		i = w;
		while (i < n && blank(line[i]))
			i++;
		bool pub = false;
		if (i < n) {
			for (w = i; w < n && !blank(line[w]); w++)
				;
			if (w - i != 6 || memcmp(line + i, "public", 6) != 0)
				return pd_error_set(err, -EINVAL,
						    "ports: line %u: \"%.*s\" after port %u: only "
						    "\"public\" may follow a port",
						    lineno, (int)(w - i > 32 ? 32 : w - i),
						    line + i, port);
			pub = true;
			i = w;
			while (i < n && blank(line[i]))
				i++;
			if (i < n)
				return pd_error_set(
				    err, -EINVAL,
				    "ports: line %u: more than \"%u public\" on the line", lineno,
				    port);
		}
		for (size_t k = 0; k < l.n; k++)
			if (l.e[k].port == port)
				return pd_error_set(err, -EINVAL,
						    "ports: line %u: port %u is listed twice",
						    lineno, port);
		if (l.n == PORTS_MAX)
			return pd_error_set(err, -EINVAL, "ports: more than %d ports", PORTS_MAX);
		l.e[l.n].port = (uint16_t)port;
		l.e[l.n].public = pub;
		l.n++;
	}
	qsort(l.e, l.n, sizeof l.e[0], cmp_entry);
	*ret = l;
	return 0;
}

size_t ports_format(const struct port_list *l, char *buf, size_t bufsz)
{
	size_t off = 0;

	if (bufsz)
		buf[0] = '\0';
	for (size_t i = 0; i < l->n && off < bufsz; i++) {
		int k = snprintf(buf + off, bufsz - off, "%u%s\n", l->e[i].port,
				 l->e[i].public ? " public" : "");
		if (k < 0 || (size_t)k >= bufsz - off)
			break;
		off += (size_t)k;
	}
	return off;
}

const struct port_entry *ports_find(const struct port_list *l, unsigned port)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->e[i].port == port)
			return &l->e[i];
	return NULL;
}

int ports_parse_host(const char *host, const char *domain, char *box, size_t boxsz, unsigned *port)
{
	char h[256], name[NAME_MAX_LEN + 1];
	size_t hl, dl = strlen(domain);
	const char *colon, *dash;

	if (!host || !*domain)
		return -ENOENT;
	/* Drop the listener's port; an IPv6 literal is never a preview host. */
	if (host[0] == '[')
		return -ENOENT;
	colon = strchr(host, ':');
	hl = colon ? (size_t)(colon - host) : strlen(host);
	if (colon) {
		unsigned p;
		if (ports_parse_number(colon + 1, strlen(colon + 1), &p) < 0)
			return -EINVAL;
	}
	if (hl >= sizeof h)
		return -EINVAL;
	for (size_t i = 0; i < hl; i++) {
		char c = host[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		      c == '_'))
			return -EINVAL;
		h[i] = c;
	}
	h[hl] = '\0';
	/* Under ".DOMAIN" (the domain itself is not a preview host). */
	if (hl <= dl + 1 || h[hl - dl - 1] != '.' || strcasecmp(h + hl - dl, domain) != 0)
		return -ENOENT;
	hl -= dl + 1;
	h[hl] = '\0';
	dash = strchr(h, '-');
	if (!dash || dash == h)
		return -EINVAL;
	if (ports_parse_number(h, (size_t)(dash - h), port) < 0)
		return -EINVAL;
	if (strlen(dash + 1) >= sizeof name)
		return -EINVAL;
	snprintf(name, sizeof name, "%s", dash + 1);
	if (!name_valid(name) || boxsz <= strlen(name))
		return -EINVAL;
	memcpy(box, name, strlen(name) + 1);
	return 0;
}

/* The ":N" of a URL's authority ("" when none), into port. */
static void url_port(const char *url, char *port, size_t size)
{
	const char *h = strstr(url, "://"), *end, *c;

	port[0] = '\0';
	if (!h)
		return;
	h += 3;
	end = h + strcspn(h, "/?#");
	c = h[0] == '[' ? memchr(h, ']', (size_t)(end - h)) : h;
	if (!c)
		return;
	c = memchr(c, ':', (size_t)(end - c));
	if (c && (size_t)(end - c) < size) {
		memcpy(port, c, (size_t)(end - c));
		port[end - c] = '\0';
	}
}

int ports_url(const struct pd_config *cfg, const char *box, unsigned port, char *buf, size_t bufsz)
{
	const char *pub = cfg->public_url && *cfg->public_url ? cfg->public_url : NULL;
	bool listen_known = cfg->listen && strcmp(cfg->listen, "none") != 0;
	char lport[16] = "";
	int k;

	if (listen_known) {
		const char *c = strrchr(cfg->listen, ':');
		if (!c || strcmp(c, ":0") == 0)
			listen_known = false;
		else
			snprintf(lport, sizeof lport, "%s", c);
	}
	if (cfg->preview_domain && *cfg->preview_domain) {
		char p[16];
		if (pub)
			url_port(pub, p, sizeof p);
		else
			snprintf(p, sizeof p, "%s", lport);
		k = snprintf(buf, bufsz, "%s://%u-%s.%s%s/",
			     pub && strncmp(pub, "https://", 8) == 0 ? "https" : "http", port, box,
			     cfg->preview_domain, p);
	} else if (pub) {
		size_t n = strlen(pub);
		while (n && pub[n - 1] == '/')
			n--;
		k = snprintf(buf, bufsz, "%.*s/v1/ports/%s/%u/", (int)n, pub, box, port);
	} else if (listen_known)
		k = snprintf(buf, bufsz, "http://%s/v1/ports/%s/%u/", cfg->listen, box, port);
	else
		k = snprintf(buf, bufsz, "/v1/ports/%s/%u/", box, port);
	return k < 0 || (size_t)k >= bufsz ? -ENOSPC : k;
}
