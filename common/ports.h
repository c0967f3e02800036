/* ports.h - a box's published ports (boxes/NAME/ports, docs/preview.md)
 * and the Host header of the preview URLs' host form (PORT-BOX.DOMAIN).
 *
 * Pure parsers: the engine keeps the list, the HTTP proxy
 * (web/preview-proxy.c) reads it on every request and the unit tests
 * (tests/check_ports.c) drive them with every kind of bad input.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Entries of one box's list at most (a write with more is refused). */
#define PORTS_MAX 64
/* The canonical text at most: PORTS_MAX lines of "65535 public\n". */
#define PORTS_TEXT_MAX (PORTS_MAX * 13 + 1)

struct port_entry {
	uint16_t port; /* 1..65535 */
	bool public;   /* reachable without a token */
};

struct port_list {
	struct port_entry e[PORTS_MAX];
	size_t n; /* sorted by port, no port twice */
};

/* Parses the text of a write: one entry a line, "PORT" or "PORT public"
 * (spaces or tabs between, around; "\r\n" line ends; empty lines
 * skipped). Empty text (or blank lines only) is the empty list. -EINVAL
 * with the line and the reason in err for: a port that is not a decimal
 * number 1..65535 (no sign, no leading zero), a word after it other than
 * "public", a port listed twice, more than PORTS_MAX entries, a NUL byte.
 * ret is written only on success, sorted. */
int ports_parse(const char *text, size_t len, struct port_list *ret, pd_error *err);

/* The canonical text of a list ("8080\n3000 public\n" sorted by port;
 * "" for none) into buf (PORTS_TEXT_MAX is always enough). Returns its
 * length. */
size_t ports_format(const struct port_list *l, char *buf, size_t bufsz);

/* The entry for port in l, or NULL when it is not listed. */
const struct port_entry *ports_find(const struct port_list *l, unsigned port);

/* A Host header value of the host form "PORT-BOX.DOMAIN[:N]" (any case;
 * the listener's port after the colon is ignored) where domain is the
 * configured preview_domain: the box's name (lower case, name_valid())
 * into box (boxsz > NAME_MAX_LEN) and the port into *port. -ENOENT when
 * the host is not under ".DOMAIN" (the request is not a preview one: the
 * domain itself, another name, an IP literal), -EINVAL when the host is
 * malformed (bytes a host name does not have, a bad listener port) or is
 * under the domain but not PORT-BOX (no port, port 0 or out of range or
 * with a leading zero, a box name that is not valid). */
int ports_parse_host(const char *host, const char *domain, char *box, size_t boxsz, unsigned *port);

struct pd_config;

/* The preview URL of port of box under cfg (boxes/NAME/urls,
 * docs/preview.md) into buf: with preview_domain,
 * SCHEME://PORT-BOX.DOMAIN[:N]/ (SCHEME and :N from public_url, else http
 * and listen's port); else BASE/v1/ports/BOX/PORT/, BASE public_url or
 * http://LISTEN, or nothing when neither names where the server is (listen
 * none or port 0). Returns the length, or -ENOSPC. */
int ports_url(const struct pd_config *cfg, const char *box, unsigned port, char *buf, size_t bufsz);

/* Parses a port number as the URLs carry it: decimal 1..65535, no sign,
 * no leading zero. */
int ports_parse_number(const char *s, size_t len, unsigned *ret);
