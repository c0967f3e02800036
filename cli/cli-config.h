/* cli-config.h - the CLI's per-user config file (inih):
 *
 *	[server]
 *	url = https://paddock.example.com
 *	token = pd_…
 *	cacert = /home/me/paddock-ca.crt
 *	[state]
 *	current = box-a1b2c3
 *
 * Path: $PADDOCK_CONFIG, else $XDG_CONFIG_HOME/paddock/config.ini, else
 * ~/.config/paddock/config.ini. cacert (optional) is a file of CA
 * certificates (PEM) to trust for url, instead of the system's: a server
 * with a private CA (Caddy's tls internal, a self-signed certificate).
 * Written atomically (temp file in the same
 * directory, then rename), mode 0600, its directory created 0700.
 */
#pragma once

#include "common/error.h"

typedef struct cli_config {
	char *url;
	char *token;
	char *cacert;
	char *current;
} cli_config;

/* The config file's path (see above). malloc'd; -ENOENT when neither
 * PADDOCK_CONFIG, XDG_CONFIG_HOME nor HOME is set. */
int cli_config_path(char **ret);

/* Reads path into *c (fields NULL when absent). A missing file is an
 * empty config. Unknown keys are ignored; a syntax error is -EINVAL with
 * its line in err. */
int cli_config_read(const char *path, cli_config *c, pd_error *err);

/* Writes c to path atomically with mode 0600. Values must not contain
 * newlines (-EINVAL). */
int cli_config_write(const char *path, const cli_config *c, pd_error *err);

void cli_config_release(cli_config *c);

/* Replaces *field with a copy of value (NULL clears it). -ENOMEM. */
int cli_config_set(char **field, const char *value);

/* What a command talks to, after --url/--token, PADDOCK_URL/PADDOCK_TOKEN,
 * the config file and the local socket are considered, in that order.
 * The config's token is used only with the config's own URL, so a token is
 * never sent to a server it was not issued by. socket_path is the default
 * socket to probe (CLI_DEFAULT_SOCKET; tests pass their own). Returns 0, or
 * -ENOENT when no server is named (reason in err). */
int cli_resolve_server(const char *opt_url, const char *opt_token, const cli_config *c,
		       const char *socket_path, char **ret_url, char **ret_token, pd_error *err);

/* The CA certificates to trust for url: --cacert (opt), else
 * PADDOCK_CACERT, else the config's cacert when url is the config's own
 * (like the token: a CA trusted for one server says nothing of another).
 * *ret is a malloc'd path, or NULL for the system's CAs. -ENOMEM. */
int cli_resolve_cacert(const char *opt, const cli_config *c, const char *url, char **ret,
		       pd_error *err);

/* path made absolute against the working directory (a path saved in the
 * config must mean the same file from any directory). malloc'd, or NULL
 * for ENOMEM or a working directory that cannot be known. */
char *cli_absolute_path(const char *path);

/* The box a BOX argument names: "current" is the config's current box
 * (-ENOENT with a reason when none is recorded); anything else must be a
 * valid name (-EINVAL). Returns a malloc'd name. */
int cli_resolve_box(const char *arg, const cli_config *c, char **ret, pd_error *err);
