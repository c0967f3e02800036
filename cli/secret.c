/* secret.c - `paddock secret set NAME`, `secret ls`, `secret rm NAME`: the
 * tree's secrets/ (a read there says only when a value was set).
 *
 * set reads the value from stdin: from a terminal, one line without echo;
 * otherwise everything up to EOF, one trailing newline dropped (as the tree
 * drops it). The value is sent once, as the body of a PUT, and zeroed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/json.h"
#include "cli/platform.h"
#include "cli/secret.h"
#include "common/util.h"

bool cli_secret_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CLI_SECRET_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* Reads all of in into buf (at most max bytes; -EFBIG past that). */
static int read_all(FILE *in, char *buf, size_t max, size_t *ret_len)
{
	size_t len = 0, n;

	while ((n = fread(buf + len, 1, max + 1 - len, in)) > 0) {
		len += n;
		if (len > max)
			return -EFBIG;
	}
	if (ferror(in))
		return -EIO;
	*ret_len = len;
	return 0;
}

int cli_secret_read_value(const char *name, FILE *in, char **ret, size_t *ret_len, pd_error *err)
{
	/* Room for the value, its newline and one byte more (too long). */
	size_t cap = CLI_SECRET_VALUE_MAX + 2, len = 0;
	cli_tty *tty = NULL;
	char *buf = calloc(1, cap + 1);
	int r = 0;

	if (!buf)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if (cli_platform_isatty(fileno(in))) {
		if (cli_tty_open(&tty) == 0) {
			fprintf(cli_tty_out(tty), "Value of %s (not shown): ", name);
			fflush(cli_tty_out(tty));
			if (!cli_tty_echo_off(tty)) {
				r = pd_error_set(err, -EIO,
						 "cannot turn the terminal's echo off: pipe the "
						 "value in instead");
				goto out;
			}
			in = cli_tty_in(tty);
		}
		if (!fgets(buf, (int)cap, in))
			r = pd_error_set(err, -EINVAL, "no value given");
		else
			len = strlen(buf);
		if (r >= 0 && len == cap - 1 && buf[len - 1] != '\n')
			r = -EFBIG;
	} else
		r = read_all(in, buf, cap - 1, &len);
	if (r >= 0 && len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (r == -EFBIG || (r >= 0 && len > CLI_SECRET_VALUE_MAX))
		r = pd_error_set(err, -EFBIG, "a secret's value is at most %d bytes",
				 CLI_SECRET_VALUE_MAX);
	else if (r >= 0 && memchr(buf, '\0', len))
		r = pd_error_set(err, -EINVAL,
				 "a NUL byte in the value (an environment variable "
				 "cannot hold one)");
	else if (r < 0 && !err->code)
		pd_error_set(err, r, "cannot read the value: %s", strerror(-r));
out:
	cli_tty_close(tty);
	if (r < 0) {
		cli_platform_wipe(buf, cap + 1);
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

static char *secret_path(const char *name)
{
	_cleanup_free_ char *e = cli_escape_segment(name);
	char *path = NULL;

	if (!e || asprintf(&path, "secrets/%s", e) < 0)
		return NULL;
	return path;
}

int cli_secret_set(cli_client *c, const char *name, FILE *in, pd_error *err)
{
	_cleanup_free_ char *path = secret_path(name);
	char *value = NULL;
	size_t len = 0;
	int r;

	if (!path)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = cli_secret_read_value(name, in, &value, &len, err);
	if (r < 0)
		return r;
	/* The server drops one trailing newline of what it is sent: a value
	 * that ends with one more goes with a newline added, so it stays. */
	size_t send = len;
	if (len && value[len - 1] == '\n')
		value[send++] = '\n';
	r = cli_put(c, path, value, send, err);
	cli_platform_wipe(value, send);
	free(value);
	return r;
}

int cli_secret_rm(cli_client *c, const char *name, pd_error *err)
{
	_cleanup_free_ char *path = secret_path(name);

	if (!path)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return cli_delete(c, path, err);
}

int cli_secret_ls(cli_client *c, bool json, FILE *out, pd_error *err)
{
	_cleanup_free_ char *body = NULL;
	json_auto_t *all = NULL;
	int r = cli_get(c, "secrets/?format=text", &body, NULL, err);

	if (r < 0)
		return r;
	if (json)
		all = json_array();
	else
		fprintf(out, "%-32s %s\n", "NAME", "SET");
	for (char *line = body, *next; line && *line; line = next) {
		_cleanup_free_ char *path = NULL, *set = NULL;
		const char *name;
		pd_error ignored = {0};
		char type;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (cli_parse_listing_line(line, &type, &name) < 0 || type != 'f')
			continue;
		path = secret_path(name);
		if (!path)
			return pd_error_set(err, -ENOMEM, "out of memory");
		/* "set TIME"; a secret removed meanwhile is skipped. */
		if (cli_get_value(c, path, &set, &ignored) < 0)
			continue;
		const char *when = strncmp(set, "set ", 4) == 0 ? set + 4 : set;
		if (json) {
			if (json_array_append_new(all,
						  json_pack("{s:o,s:o}", "name", cli_json_str(name),
							    "set", cli_json_str(when))) < 0)
				return pd_error_set(err, -ENOMEM, "out of memory");
		} else
			fprintf(out, "%-32s %s\n", name, when);
	}
	if (json && cli_json_print(out, TAKE_PTR(all)) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}
