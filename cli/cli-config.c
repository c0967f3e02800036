/* cli-config.c - the CLI's config file and what it resolves (see
 * cli-config.h). */
#include <limits.h>
#include <string.h>

#include <ini.h>

#include "cli/cli-config.h"
#include "cli/cli.h"
#include "cli/platform.h"
#include "common/buf.h"

int cli_config_path(char **ret)
{
	const char *env = getenv("PADDOCK_CONFIG");

	if (!env || !*env)
		return cli_platform_config_path(ret);
	*ret = strdup(env);
	return *ret ? 0 : -ENOMEM;
}

int cli_config_set(char **field, const char *value)
{
	char *copy = NULL;

	if (value && !(copy = strdup(value)))
		return -ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

void cli_config_release(cli_config *c)
{
	free(c->url);
	free(c->token);
	free(c->cacert);
	free(c->current);
	*c = (cli_config){0};
}

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
	cli_config *c = user;
	char **field = NULL;

	if (strcmp(section, "server") == 0 && strcmp(name, "url") == 0)
		field = &c->url;
	else if (strcmp(section, "server") == 0 && strcmp(name, "token") == 0)
		field = &c->token;
	else if (strcmp(section, "server") == 0 && strcmp(name, "cacert") == 0)
		field = &c->cacert;
	else if (strcmp(section, "state") == 0 && strcmp(name, "current") == 0)
		field = &c->current;
	if (!field)
		return 1; /* unknown keys are kept for newer versions' sake */
	return cli_config_set(field, *value ? value : NULL) == 0;
}

int cli_config_read(const char *path, cli_config *c, pd_error *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	cli_config tmp = {0};

	if (!f) {
		if (errno == ENOENT) {
			*c = tmp;
			return 0;
		}
		return pd_error_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
	}
	int line = ini_parse_file(f, on_pair, &tmp);
	if (line != 0) {
		cli_config_release(&tmp);
		if (line < 0)
			return pd_error_set(err, -ENOMEM, "cannot read %s", path);
		return pd_error_set(err, -EINVAL, "%s:%d: syntax error", path, line);
	}
	*c = tmp;
	return 0;
}

static int add_pair(struct pd_buf *b, const char *key, const char *value, pd_error *err)
{
	if (!value)
		return 0;
	if (strpbrk(value, "\r\n"))
		return pd_error_set(err, -EINVAL, "%s must be one line", key);
	if (pd_buf_printf(b, "%s = %s\n", key, value) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* The last path separator in path, or NULL. */
static char *last_sep(char *path)
{
	char *last = NULL;

	for (char *p = path; *p; p++)
		if (strchr(CLI_PATH_SEPARATORS, *p))
			last = p;
	return last;
}

/* Creates the parent directory of path (readable by the user only), one
 * level: the config directory; its own parent (~/.config) is created too
 * when missing. */
static int make_parent(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	int r;

	if (!dir)
		return -ENOMEM;
	char *slash = last_sep(dir);
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	r = cli_platform_mkdir_private(dir);
	if (r != -ENOENT)
		return r;
	char *up = last_sep(dir);
	if (up && up != dir) {
		char sep = *up;
		*up = '\0';
		r = cli_platform_mkdir_private(dir);
		if (r < 0)
			return r;
		*up = sep;
	}
	return cli_platform_mkdir_private(dir);
}

int cli_config_write(const char *path, const cli_config *c, pd_error *err)
{
	_cleanup_(pd_buf_freep) struct pd_buf text = {0};
	int r;

	if (pd_buf_printf(&text, "[server]\n") < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if ((r = add_pair(&text, "url", c->url, err)) < 0 ||
	    (r = add_pair(&text, "token", c->token, err)) < 0 ||
	    (r = add_pair(&text, "cacert", c->cacert, err)) < 0)
		return r;
	if (pd_buf_printf(&text, "[state]\n") < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if ((r = add_pair(&text, "current", c->current, err)) < 0)
		return r;
	r = make_parent(path);
	if (r < 0)
		return pd_error_set(err, r, "cannot create the directory of %s: %s", path,
				    strerror(-r));
	r = cli_platform_write_private(path, text.data, text.len);
	if (r < 0)
		return pd_error_set(err, r, "cannot write %s: %s", path, strerror(-r));
	return 0;
}

int cli_resolve_server(const char *opt_url, const char *opt_token, const cli_config *c,
		       const char *socket_path, char **ret_url, char **ret_token, pd_error *err)
{
	const char *url = opt_url, *token = opt_token;
	_cleanup_free_ char *sock_url = NULL;

	if (!url) {
		const char *env = getenv("PADDOCK_URL");
		url = env && *env ? env : NULL;
	}
	if (!url)
		url = c->url;
	if (!url && socket_path && access(socket_path, F_OK) == 0) {
		if (asprintf(&sock_url, "unix:%s", socket_path) < 0)
			return pd_error_set(err, -ENOMEM, "out of memory");
		url = sock_url;
	}
	if (!url)
		return pd_error_set(
		    err, -ENOENT,
		    "no server: run 'paddock login URL', or give --url or PADDOCK_URL");
	if (!token) {
		const char *env = getenv("PADDOCK_TOKEN");
		token = env && *env ? env : NULL;
	}
	if (!token && c->url && c->token && strcmp(c->url, url) == 0)
		token = c->token;

	_cleanup_free_ char *u = strdup(url);
	_cleanup_free_ char *t = token ? strdup(token) : NULL;
	if (!u || (token && !t))
		return pd_error_set(err, -ENOMEM, "out of memory");
	*ret_url = TAKE_PTR(u);
	*ret_token = TAKE_PTR(t);
	return 0;
}

int cli_resolve_cacert(const char *opt, const cli_config *c, const char *url, char **ret,
		       pd_error *err)
{
	const char *file = opt && *opt ? opt : NULL;

	if (!file) {
		const char *env = getenv("PADDOCK_CACERT");
		file = env && *env ? env : NULL;
	}
	if (!file && c->url && c->cacert && url && strcmp(c->url, url) == 0)
		file = c->cacert;
	*ret = NULL;
	if (file && !(*ret = strdup(file)))
		return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

char *cli_absolute_path(const char *path)
{
	char cwd[4096], *out;

	/* Absolute: a separator first, or (where '\\' is one: Windows) a
	 * drive letter and a colon. */
	if ((path[0] && strchr(CLI_PATH_SEPARATORS, path[0])) ||
	    (strchr(CLI_PATH_SEPARATORS, '\\') && path[0] && path[1] == ':'))
		return strdup(path);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	size_t n = strlen(cwd);
	bool sep = n > 0 && strchr(CLI_PATH_SEPARATORS, cwd[n - 1]);
	if (asprintf(&out, "%s%s%s", cwd, sep ? "" : "/", path) < 0)
		return NULL;
	return out;
}

int cli_resolve_box(const char *arg, const cli_config *c, char **ret, pd_error *err)
{
	const char *name = arg;

	if (strcmp(arg, "current") == 0) {
		if (!c->current)
			return pd_error_set(
			    err, -ENOENT,
			    "no current box: create one with 'paddock new' or name it");
		name = c->current;
	} else if (!cli_name_valid(arg)) {
		return pd_error_set(err, -EINVAL,
				    "invalid box name '%s' (allowed: [a-z0-9][a-z0-9._-]{0,62})",
				    arg);
	}
	char *copy = strdup(name);
	if (!copy)
		return pd_error_set(err, -ENOMEM, "out of memory");
	*ret = copy;
	return 0;
}
