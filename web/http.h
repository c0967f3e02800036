/* http.h - the HTTP mirror of the tree (web/README.md is the contract).
 *
 * One libmicrohttpd daemon per listener (TCP from the config's `listen`,
 * the unix socket from `socket`), both driven by one internal polling
 * thread each. Requests translate into tree_* calls (fs/tree.h); nothing
 * goes through the FUSE mount. Work that may take long (control writes that
 * start or stop boxes, mkdir/rmdir, logins, tar push) runs on a small pool
 * of worker threads while the connection is suspended; reads at the end of a
 * stream are parked (suspended) and resumed by the engine's wake callback,
 * so no thread is held by a waiting client.
 *
 * Authentication: TCP requests need a bearer token (engine/auth.h), except
 * the panel's assets, the setup page and login; on the unix socket (0660
 * root:GROUP) root and the group's members need none, and any other peer
 * is refused (403) by its credentials. A revoked token's replies in flight
 * are cut (auth's revocation hook). Limits (connections per address,
 * deadlines, login budget) and what is refused: web/README.md.
 */
#pragma once

#include "engine/engine.h"
#include "common/error.h"
#include "fs/tree.h"

struct http;

/* Starts the listeners named by the engine's config (either may be
 * "none"). On first start (no owner password yet) logs the one-time setup
 * link and writes it to DATA/setup-url. t and e must outlive the server. */
int http_start(struct tree *t, struct engine *e, struct http **ret, pd_error *err);

/* Stops listening, ends parked streams, waits for workers. Accepts NULL. */
struct http *http_stop(struct http *h);

/* The TCP port actually bound (useful with listen = 127.0.0.1:0), or 0. */
unsigned http_port(const struct http *h);
