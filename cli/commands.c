/* commands.c - what each command does, as requests on the tree (see cli.h
 * and paddock.1). */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "autoconfig.h" /* PACKAGE_VERSION */
#include "cli/cli-config.h"
#include "cli/cli.h"
#include "cli/ports.h"
#include "cli/secret.h"
#include "cli/client.h"
#include "cli/desktop.h"
#include "cli/exec.h"
#include "cli/json.h"
#include "cli/platform.h"
#include "cli/prompt.h"
#include "cli/skill.h"
#include "cli/transfer.h"
#include "common/buf.h"
#include "common/parse.h"

#define PASSWORD_MAX 1024

struct ctx {
	const cli_args *a;
	char *config_path;
	cli_config config;
	cli_client client;
	char *use_box;	 /* the box to record as current when the command succeeds */
	bool use_anyway; /* record it even on failure (exec: the job ran) */
	bool forget_box; /* rm of the current box */
	pd_error err;
};

void cli_usage(FILE *f)
{
	fputs("usage: paddock [OPTIONS] COMMAND [ARGS]\n"
	      "\n"
	      "Commands:\n"
	      "  login URL [--password-stdin] [--ttl SECONDS]\n"
	      "                                    log in, store the token (valid for\n"
	      "                                    SECONDS; default: the server's token_ttl)\n"
	      "  new [--name N] [--type T] [--ttl S] [--image I] [--policy P]\n"
	      "      [--docker | --no-docker]      create and start a box; prints its name\n"
	      "  current                           the current box\n"
	      "  ls                                list boxes\n"
	      "  info BOX                          describe a box (JSON)\n"
	      "  push BOX SRC... --to DIR          copy local files into the box\n"
	      "  pull BOX SRC --to DIR [--owners]  copy files out of the box\n"
	      "  exec [--desktop] [--env K=V]... [--cwd D] BOX -- CMD...\n"
	      "                                    run a command, exit with its code\n"
	      "  stop BOX | start BOX | resume BOX | rm BOX\n"
	      "  ttl BOX SECONDS|none\n"
	      "  policy BOX [allow-all | deny-all | allow ENTRY...]\n"
	      "  ports BOX [PORT [public]... | none]\n"
	      "                                    ports published as preview URLs\n"
	      "  docker BOX [on | off]             Docker inside the box (set while it is\n"
	      "                                    stopped); without on/off, prints it\n"
	      "  fork BOX [NEW] | snapshot BOX [LABEL] | snapshots [BOX] | restore BOX SNAP\n"
	      "  volume create NAME | volume ls | volume rm NAME\n"
	      "  volume attach BOX NAME | volume detach BOX NAME | volume export NAME [-o FILE]\n"
	      "  volume import NAME FILE\n"
	      "  token ls | token revoke ID\n"
	      "  secret set NAME | secret ls | secret rm NAME\n"
	      "                                    a secret (value from stdin, not echoed);\n"
	      "                                    boxes get them through their secrets file\n"
	      "  desktop BOX [--no-wait]           turn the desktop on, wait, print its URL\n"
	      "  desktop BOX off | url | windows | cursor | geometry [WxH]\n"
	      "  desktop BOX ACTION... [, ACTION...]...\n"
	      "                                    send input: move X Y, click [BUTTON] [X Y],\n"
	      "                                    double [X Y], drag X1 Y1 X2 Y2,\n"
	      "                                    scroll up|down N, type TEXT, key COMBO\n"
	      "  desktop BOX -                     send the action lines on standard input\n"
	      "  screenshot BOX [-o FILE]          save a PNG of the desktop; prints its path\n"
	      "  prompt [--agent A] [--model M] [--continue P] [--cwd D] [--env K=V]...\n"
	      "         BOX TEXT... | BOX -        run a coding agent in the box on TEXT\n"
	      "                                    (- : from stdin), show its events, exit\n"
	      "                                    with its status\n"
	      "  skill install [DIR]               write the Paddock skill where coding agents\n"
	      "                                    look (or into DIR/paddock/SKILL.md)\n"
	      "  doctor [--config FILE] [--json]   on the server: check what Paddock needs and\n"
	      "                                    say what to fix\n"
	      "\n"
	      "BOX may be 'current': the box created or used last.\n"
	      "\n"
	      "Options:\n"
	      "  --url URL      server (http://, https:// or unix:PATH); env PADDOCK_URL\n"
	      "  --token TOKEN  API token; env PADDOCK_TOKEN\n"
	      "  --cacert FILE  trust the CA certificates in FILE (PEM) for https: a\n"
	      "                 private CA; env PADDOCK_CACERT; login saves it\n"
	      "  --json         machine-readable output\n"
	      "  -q, --quiet    no progress or notices\n"
	      "  -v, --verbose  say what was done\n"
	      "  -h, --help     this text\n"
	      "  --version      the version\n",
	      f);
}

static int fail(struct ctx *x)
{
	/* The reason may quote a box's text (a title, a file name): never
	 * let its control characters reach the terminal. */
	char clean[PD_ERROR_MAX * 4 + 1];
	text_printable(x->err.msg, strlen(x->err.msg), clean, sizeof(clean));
	fprintf(stderr, "paddock: %s\n", clean[0] ? clean : strerror(-x->err.code));
	if (x->err.code == -EACCES && strstr(x->err.msg, "token"))
		fprintf(stderr, "paddock: log in again with 'paddock login URL'\n");
	return CLI_EXIT_FAIL;
}

static int oom(struct ctx *x)
{
	pd_error_set(&x->err, -ENOMEM, "out of memory");
	return fail(x);
}

/* Resolves a BOX argument and remembers it as the box to record. */
static int use_box(struct ctx *x, const char *arg, char **ret)
{
	_cleanup_free_ char *name = NULL;
	int r = cli_resolve_box(arg, &x->config, &name, &x->err);

	if (r < 0)
		return r;
	free(x->use_box);
	x->use_box = strdup(name);
	if (!x->use_box)
		return pd_error_set(&x->err, -ENOMEM, "out of memory");
	*ret = TAKE_PTR(name);
	return 0;
}

/* --- tables ----------------------------------------------------------- */

/* Prints rows of ncol strings: a table with a header, or with --json an
 * array of objects with the given keys. NULL cells print as "-" / null. */
static int print_rows(struct ctx *x, const char *const *keys, const char *const *heads, size_t ncol,
		      char **cells, size_t nrows)
{
	if (x->a->json) {
		json_t *rows = json_array();
		for (size_t i = 0; rows && i < nrows; i++) {
			json_t *row = json_object();
			for (size_t j = 0; row && j < ncol; j++)
				if (cli_json_set(row, keys[j], cells[i * ncol + j]) < 0)
					json_decref(TAKE_PTR(row));
			if (json_array_append_new(rows, row) < 0)
				json_decref(TAKE_PTR(rows));
		}
		return cli_json_print(stdout, rows);
	}
	size_t width[8] = {0};
	for (size_t j = 0; j < ncol && j < ELEMENTSOF(width); j++) {
		width[j] = strlen(heads[j]);
		for (size_t i = 0; i < nrows; i++) {
			const char *v = cells[i * ncol + j];
			size_t n = v ? strlen(v) : 1;
			if (n > width[j])
				width[j] = n;
		}
	}
	for (size_t i = 0; i <= nrows; i++) {
		for (size_t j = 0; j < ncol; j++) {
			const char *v = i == 0 ? heads[j] : cells[(i - 1) * ncol + j];
			if (!v)
				v = "-";
			if (j + 1 < ncol)
				printf("%-*s  ", (int)width[j], v);
			else
				printf("%s\n", v);
		}
	}
	return 0;
}

static void free_cells(char **cells, size_t n)
{
	for (size_t i = 0; cells && i < n; i++)
		free(cells[i]);
	free(cells);
}

/* The names of a directory's entries of one type ('d', 'f', 'l', or 0 for
 * all) from its ?format=text listing. */
static int list_names(struct ctx *x, const char *dir_path, char type, char ***ret, size_t *ret_n)
{
	_cleanup_free_ char *path = NULL, *body = NULL;
	char **names = NULL;
	size_t n = 0;
	int r;

	if (asprintf(&path, "%s?format=text", dir_path) < 0)
		return pd_error_set(&x->err, -ENOMEM, "out of memory");
	r = cli_get(&x->client, path, &body, NULL, &x->err);
	if (r < 0)
		return r;
	for (char *line = body, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char t;
		const char *name;
		if (cli_parse_listing_line(line, &t, &name) < 0 || (type && t != type))
			continue;
		char **grown = realloc(names, (n + 1) * sizeof(*names));
		char *copy = strdup(name);
		if (!grown || !copy) {
			free(copy);
			free_cells(grown ? grown : names, n);
			return pd_error_set(&x->err, -ENOMEM, "out of memory");
		}
		names = grown;
		names[n++] = copy;
	}
	*ret = names;
	*ret_n = n;
	return 0;
}

/* A table of objects under dir_path: column 0 is the name, the others
 * the files named by files[] (NULL where unreadable). skip_missing drops
 * objects whose first file is gone (deleted meanwhile). */
static int object_table(struct ctx *x, const char *dir_path, const char *const *keys,
			const char *const *heads, const char *const *files, size_t nfiles,
			bool skip_missing, const char *link_prefix)
{
	char **names = NULL, **cells = NULL;
	size_t n = 0, rows = 0, ncol = nfiles + 1;
	int r = list_names(x, dir_path, link_prefix ? 0 : 'd', &names, &n);

	if (r < 0)
		return fail(x);
	cells = calloc(n * ncol + 1, sizeof(*cells));
	if (!cells) {
		free_cells(names, n);
		return oom(x);
	}
	for (size_t i = 0; i < n; i++) {
		char **row = cells + rows * ncol;
		_cleanup_free_ char *ename = cli_escape_segment(names[i]);
		bool gone = false;
		if (!ename)
			break;
		row[0] = TAKE_PTR(names[i]);
		for (size_t j = 0; j < nfiles; j++) {
			_cleanup_free_ char *path = NULL;
			pd_error ignored = {0};
			if (asprintf(&path, "%s%s/%s", link_prefix ? link_prefix : dir_path, ename,
				     files[j]) < 0)
				continue;
			if (cli_get_value(&x->client, path, &row[j + 1], &ignored) < 0) {
				row[j + 1] = NULL;
				if (j == 0 && ignored.code == -ENOENT)
					gone = true;
			}
		}
		if (gone && skip_missing) {
			for (size_t j = 0; j < ncol; j++)
				free(TAKE_PTR(row[j]));
			continue;
		}
		rows++;
	}
	free_cells(names, n);
	r = print_rows(x, keys, heads, ncol, cells, rows);
	free_cells(cells, rows * ncol);
	return r < 0 ? oom(x) : 0;
}

/* --- commands ------------------------------------------------------------ */

static int read_password(const char *url, bool from_stdin, char **ret, pd_error *err)
{
	char buf[PASSWORD_MAX + 2];
	FILE *in = stdin;
	cli_tty *tty = NULL;

	if (!from_stdin && cli_platform_isatty(STDIN_FILENO)) {
		int r = cli_tty_open(&tty);
		if (r < 0)
			return pd_error_set(err, r, "cannot open the terminal: %s", strerror(-r));
		in = cli_tty_in(tty);
		fprintf(cli_tty_out(tty), "Password for %s: ", url);
		fflush(cli_tty_out(tty));
		cli_tty_echo_off(tty);
	}
	char *got = fgets(buf, sizeof(buf), in);
	cli_tty_close(tty);
	if (!got)
		return pd_error_set(err, -EINVAL, "no password given");
	size_t n = strlen(buf);
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	else if (n > PASSWORD_MAX)
		return pd_error_set(err, -EINVAL, "the password is longer than %d bytes",
				    PASSWORD_MAX);
	if (n > 0 && buf[n - 1] == '\r')
		buf[--n] = '\0';
	if (n == 0)
		return pd_error_set(err, -EINVAL, "no password given");
	*ret = strdup(buf);
	cli_platform_wipe(buf, sizeof(buf));
	return *ret ? 0 : pd_error_set(err, -ENOMEM, "out of memory");
}

/* The body of POST /v1/login: {"password":…,"label":…} and "ttl" (an
 * integer) when ttl > 0. The password leaves no copy behind: jansson's own
 * copy is wiped before it is freed, and the text is dumped straight into a
 * buffer of its exact size (which the caller wipes) instead of a growing
 * one. */
static int login_body(const char *password, const char *label, long long ttl, char **ret,
		      pd_error *err)
{
	json_t *o, *pw;
	char *text;
	size_t n;

	if (!cli_utf8_valid(password))
		return pd_error_set(err, -EINVAL, "the password is not UTF-8 text");
	pw = json_string(password);
	o = pw ? json_pack("{s:O,s:o}", "password", pw, "label", cli_json_str(label)) : NULL;
	if (o && ttl > 0 && json_object_set_new(o, "ttl", json_integer(ttl)) < 0) {
		json_decref(o);
		o = NULL;
	}
	n = o ? json_dumpb(o, NULL, 0, JSON_COMPACT) : 0;
	text = n > 0 ? malloc(n + 1) : NULL;
	if (text && json_dumpb(o, text, n, JSON_COMPACT) == n) {
		text[n] = '\0';
	} else {
		free(text);
		text = NULL;
	}
	if (pw)
		cli_platform_wipe((char *)json_string_value(pw), strlen(password));
	json_decref(pw);
	json_decref(o);
	if (!text)
		return pd_error_set(err, -ENOMEM, "out of memory");
	*ret = text;
	return 0;
}

static int cmd_login(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *url = strdup(a->value), *password = NULL, *json = NULL, *body = NULL;
	char host[256] = "";
	int r;

	if (!url)
		return oom(x);
	for (size_t n = strlen(url); n > 8 && url[n - 1] == '/'; n--)
		url[n - 1] = '\0';
	r = cli_client_init(&x->client, url, /* token= */ NULL, &x->err);
	if (r < 0)
		return fail(x);
	/* The CA to trust: --cacert (saved below), else PADDOCK_CACERT, else
	 * the one saved for this URL. */
	_cleanup_free_ char *cacert = NULL;
	if (cli_resolve_cacert(a->cacert, &x->config, url, &cacert, &x->err) < 0 ||
	    cli_client_set_cacert(&x->client, cacert, &x->err) < 0)
		return fail(x);
	/* What the config keeps: --cacert's file as an absolute path (later
	 * commands run from anywhere), else the one it had for this URL. */
	_cleanup_free_ char *saved = NULL;
	if (a->cacert && *a->cacert) {
		if (!(saved = cli_absolute_path(a->cacert)))
			return oom(x);
	} else if (x->config.url && x->config.cacert && strcmp(x->config.url, url) == 0 &&
		   !(saved = strdup(x->config.cacert)))
		return oom(x);
	r = read_password(url, a->password_stdin, &password, &x->err);
	if (r < 0)
		return fail(x);
	cli_platform_hostname(host, sizeof(host));
	_cleanup_free_ char *label = NULL;
	if (asprintf(&label, "paddock-cli@%.40s", host[0] ? host : "unknown") < 0)
		return oom(x);
	/* Digits (args.c); the server judges the bounds. */
	long long ttl = a->ttl ? strtoll(a->ttl, NULL, 10) : 0;
	r = login_body(password, label, ttl, &json, &x->err);
	cli_platform_wipe(password, strlen(password));
	if (r < 0)
		return fail(x);

	r = cli_post_json(&x->client, "/v1/login", json, &body, &x->err);
	cli_platform_wipe(json, strlen(json));
	if (r < 0)
		return fail(x);
	body[strcspn(body, "\r\n")] = '\0';
	if (body[0] == '\0' || strchr(body, '"') || strchr(body, ' '))
		return pd_error_set(&x->err, -EPROTO, "unexpected answer to the login"), fail(x);

	if (!x->config.url || strcmp(x->config.url, url) != 0)
		cli_config_set(&x->config.current, NULL);
	if (cli_config_set(&x->config.url, url) < 0 || cli_config_set(&x->config.token, body) < 0 ||
	    cli_config_set(&x->config.cacert, saved) < 0)
		return oom(x);
	r = cli_config_write(x->config_path, &x->config, &x->err);
	if (r < 0)
		return fail(x);
	if (!a->quiet && ttl > 0)
		fprintf(stderr,
			"paddock: logged in to %s (token stored in %s, expires in %lld s)\n", url,
			x->config_path, ttl);
	else if (!a->quiet)
		fprintf(stderr, "paddock: logged in to %s (token stored in %s)\n", url,
			x->config_path);
	return 0;
}

static int policy_body(const char *mode, const char *const *entries, size_t n, char **ret)
{
	_cleanup_(pd_buf_freep) struct pd_buf out = {0};
	int r = 0;

	if (strcmp(mode, "allow") == 0) {
		r = pd_buf_printf(&out, "allowlist\n");
		for (size_t i = 0; r == 0 && i < n; i++)
			r = pd_buf_printf(&out, "%s\n", entries[i]);
	} else if (strncmp(mode, "allow:", 6) == 0) {
		/* --policy allow:a,b */
		r = pd_buf_printf(&out, "allowlist\n");
		for (const char *p = mode + 6; r == 0 && *p;) {
			size_t k = strcspn(p, ",");
			if (k > 0)
				r = pd_buf_printf(&out, "%.*s\n", (int)k, p);
			p += k + (p[k] == ',');
		}
	} else {
		r = pd_buf_printf(&out, "%s\n", mode);
	}
	if (r < 0 || !(*ret = pd_buf_take(&out, NULL)))
		return -ENOMEM;
	return 0;
}

static int cmd_new(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *name = NULL, *dir = NULL, *policy = NULL;
	int r = 0;

	/* A generated name may be taken: try a few. */
	for (int attempt = 0; attempt < 5; attempt++) {
		free(name);
		free(dir);
		name = a->name ? strdup(a->name) : cli_random_name("box-");
		dir = name ? cli_box_path(name, "") : NULL;
		if (!dir)
			return oom(x);
		r = cli_put(&x->client, dir, NULL, 0, &x->err);
		if ((r != -EEXIST && r != -EBUSY) || a->name)
			break;
	}
	if (r < 0)
		return fail(x);

	if (a->policy && policy_body(a->policy, NULL, 0, &policy) < 0)
		r = pd_error_set(&x->err, -ENOMEM, "out of memory");
	/* docker after image: whether the box has Docker is its image's. */
	const struct {
		const char *file, *value;
	} steps[] = {
	    {"image", a->image}, {"type", a->type},  {"docker", a->docker},
	    {"ttl", a->ttl},	 {"policy", policy}, {"state", "running"},
	};
	for (size_t i = 0; r == 0 && i < ELEMENTSOF(steps); i++) {
		if (!steps[i].value)
			continue;
		_cleanup_free_ char *path = cli_box_path(name, steps[i].file);
		if (!path) {
			r = pd_error_set(&x->err, -ENOMEM, "out of memory");
			break;
		}
		if (strcmp(steps[i].file, "policy") == 0)
			r = cli_put(&x->client, path, policy, strlen(policy), &x->err);
		else
			r = cli_put_value(&x->client, path, steps[i].value, &x->err);
		if (r < 0)
			pd_error_prefix(&x->err, "%s", steps[i].file);
	}
	if (r < 0) {
		pd_error ignored = {0};
		cli_delete(&x->client, dir, &ignored);
		return fail(x);
	}
	printf("%s\n", name);
	x->use_box = TAKE_PTR(name);
	return 0;
}

static int cmd_ls(struct ctx *x)
{
	static const char *const keys[] = {"name", "state", "type", "expires"};
	static const char *const heads[] = {"NAME", "STATE", "TYPE", "EXPIRES"};
	static const char *const files[] = {"state", "type", "expires"};

	return object_table(x, "boxes/", keys, heads, files, 3, /* skip_missing= */ true, NULL);
}

static int cmd_complete_boxes(struct ctx *x)
{
	char **names = NULL;
	size_t n = 0;

	if (list_names(x, "boxes/", 'd', &names, &n) < 0)
		return CLI_EXIT_FAIL; /* quietly: this feeds shell completion */
	for (size_t i = 0; i < n; i++)
		printf("%s\n", names[i]);
	free_cells(names, n);
	return 0;
}

static int cmd_info(struct ctx *x)
{
	_cleanup_free_ char *box = NULL, *path = NULL, *body = NULL;
	size_t len = 0;

	if (use_box(x, x->a->box, &box) < 0)
		return fail(x);
	path = cli_box_path(box, "info");
	if (!path)
		return oom(x);
	if (cli_get(&x->client, path, &body, &len, &x->err) < 0)
		return fail(x);
	fwrite(body, 1, len, stdout);
	if (len == 0 || body[len - 1] != '\n')
		putchar('\n');
	return 0;
}

/* Writes one value to a box file; verbose says so. */
static int box_write(struct ctx *x, const char *file, const char *value)
{
	_cleanup_free_ char *box = NULL, *path = NULL;

	if (use_box(x, x->a->box, &box) < 0)
		return fail(x);
	path = cli_box_path(box, file);
	if (!path)
		return oom(x);
	if (cli_put_value(&x->client, path, value, &x->err) < 0)
		return fail(x);
	if (x->a->verbose)
		fprintf(stderr, "paddock: %s: %s = %s\n", box, file, value);
	return 0;
}

static int cmd_rm(struct ctx *x)
{
	_cleanup_free_ char *box = NULL, *path = NULL;

	if (cli_resolve_box(x->a->box, &x->config, &box, &x->err) < 0)
		return fail(x);
	path = cli_box_path(box, "");
	if (!path)
		return oom(x);
	if (cli_delete(&x->client, path, &x->err) < 0)
		return fail(x);
	if (x->config.current && strcmp(x->config.current, box) == 0)
		x->forget_box = true;
	return 0;
}

static int cmd_policy(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *box = NULL, *path = NULL, *body = NULL;
	size_t len = 0;

	if (use_box(x, a->box, &box) < 0)
		return fail(x);
	path = cli_box_path(box, "policy");
	if (!path)
		return oom(x);
	if (!a->value) {
		if (cli_get(&x->client, path, &body, &len, &x->err) < 0)
			return fail(x);
		fwrite(body, 1, len, stdout);
		return 0;
	}
	if (policy_body(a->value, a->words, a->n_words, &body) < 0)
		return oom(x);
	if (cli_put(&x->client, path, body, strlen(body), &x->err) < 0)
		return fail(x);
	return 0;
}

/* ports BOX [PORT [public]... | none]: prints the box's published ports,
 * or replaces the list (cli/ports.c). */
static int cmd_ports(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *box = NULL, *path = NULL, *body = NULL;
	size_t len = 0;

	if (use_box(x, a->box, &box) < 0)
		return fail(x);
	path = cli_box_path(box, "ports");
	if (!path)
		return oom(x);
	if (!a->n_words) {
		if (cli_get(&x->client, path, &body, &len, &x->err) < 0)
			return fail(x);
		fwrite(body, 1, len, stdout);
		return 0;
	}
	if (cli_ports_body(a->words, a->n_words, &body, &x->err) < 0 ||
	    cli_put(&x->client, path, body, strlen(body), &x->err) < 0)
		return fail(x);
	return 0;
}

/* docker BOX [on|off]: prints the box's docker setting, or writes it. The
 * server refuses a change while the box runs (its privileges are fixed for
 * a run): its reason, then how to get there in the CLI's words. */
static int cmd_docker(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *box = NULL, *path = NULL, *value = NULL;

	if (use_box(x, a->box, &box) < 0)
		return fail(x);
	path = cli_box_path(box, "docker");
	if (!path)
		return oom(x);
	if (!a->value) {
		if (cli_get_value(&x->client, path, &value, &x->err) < 0)
			return fail(x);
		if (!a->json) {
			printf("%s\n", value);
			return 0;
		}
		return cli_json_print(stdout, json_pack("{s:o}", "docker", cli_json_str(value))) < 0
			   ? oom(x)
			   : 0;
	}
	if (cli_put_value(&x->client, path, a->value, &x->err) < 0) {
		fail(x);
		if (x->err.code == -EBUSY && !a->quiet)
			fprintf(stderr,
				"paddock: stop it first ('paddock stop %s'), then 'paddock docker "
				"%s %s' and 'paddock start %s'\n",
				box, box, a->value, box);
		return CLI_EXIT_FAIL;
	}
	if (a->verbose)
		fprintf(stderr, "paddock: %s: docker = %s\n", box, a->value);
	return 0;
}

static int cmd_fork(struct ctx *x)
{
	_cleanup_free_ char *box = NULL, *path = NULL;
	_cleanup_free_ char *new_name = x->a->value ? strdup(x->a->value) : cli_random_name("box-");

	if (!new_name)
		return oom(x);
	if (cli_resolve_box(x->a->box, &x->config, &box, &x->err) < 0)
		return fail(x);
	path = cli_box_path(box, "fork");
	if (!path)
		return oom(x);
	if (cli_put_value(&x->client, path, new_name, &x->err) < 0)
		return fail(x);
	printf("%s\n", new_name);
	free(x->use_box);
	x->use_box = TAKE_PTR(new_name); /* the fork becomes current, like new */
	return 0;
}

/* A write to a box's snapshot or restore file; *ret_body is the server's
 * answer, a JSON object of what the write made (the snapshot's id). */
static int box_write_answer(struct ctx *x, const char *file, const char *value, char **ret_box,
			    char **ret_body, size_t *ret_len)
{
	_cleanup_free_ char *path = NULL;

	if (use_box(x, x->a->box, ret_box) < 0)
		return -1;
	path = cli_box_path(*ret_box, file);
	if (!path)
		return pd_error_set(&x->err, -ENOMEM, "out of memory");
	return cli_put_value_answer(&x->client, path, value, ret_body, ret_len, &x->err);
}

/* snapshot BOX [LABEL]: prints the id the server answers (--json: the
 * answer). */
static int cmd_snapshot(struct ctx *x)
{
	_cleanup_free_ char *box = NULL, *body = NULL, *id = NULL;
	size_t len = 0;

	if (box_write_answer(x, "snapshot", x->a->value ? x->a->value : "manual", &box, &body,
			     &len) < 0)
		return fail(x);
	id = cli_json_get_string(body, len, "snapshot");
	if (!id)
		return pd_error_set(&x->err, -EIO,
				    "the snapshot of %s was taken, but the server did not say its "
				    "id (see paddock snapshots %s)",
				    box, box),
		       fail(x);
	if (x->a->json)
		printf("%.*s\n", (int)len, body);
	else
		printf("%s\n", id);
	return 0;
}

/* restore BOX SNAP: prints the id restored (SNAP may be a label); when the
 * box was running, says on stderr that it was stopped and which jobs that
 * ended (--json: the server's answer). */
static int cmd_restore(struct ctx *x)
{
	_cleanup_free_ char *box = NULL, *body = NULL, *id = NULL, *jobs = NULL, *before = NULL;
	size_t len = 0;

	if (box_write_answer(x, "restore", x->a->value, &box, &body, &len) < 0)
		return fail(x);
	if (x->a->json) {
		printf("%.*s\n", (int)len, body);
		return 0;
	}
	id = cli_json_get_string(body, len, "snapshot");
	jobs = cli_json_get_string(body, len, "jobs_ended");
	before = cli_json_get_string(body, len, "before");
	printf("%s\n", id ? id : x->a->value);
	if (jobs) /* it was running */
		fprintf(stderr,
			"paddock: %s was running: stopped first (%s%s), restored, started "
			"again%s%s\n",
			box, jobs[0] ? "which ended its jobs " : "no job was running", jobs,
			before && before[0] ? "; its files from before are in snapshot " : "",
			before && before[0] ? before : "");
	return 0;
}

static int cmd_snapshots(struct ctx *x)
{
	static const char *const keys[] = {"id", "box", "label", "created"};
	static const char *const heads[] = {"ID", "BOX", "LABEL", "CREATED"};
	static const char *const files[] = {"box", "label", "created"};
	_cleanup_free_ char *box = NULL, *dir = NULL;

	if (!x->a->box)
		return object_table(x, "snapshots/", keys, heads, files, 3, true, NULL);
	if (use_box(x, x->a->box, &box) < 0)
		return fail(x);
	dir = cli_box_path(box, "snapshots/");
	if (!dir)
		return oom(x);
	/* Its entries lead to /snapshots/ID: read them there. */
	return object_table(x, dir, keys, heads, files, 3, true, "snapshots/");
}

static int cmd_volume(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *ename = a->value ? cli_escape_segment(a->value) : NULL;
	_cleanup_free_ char *path = NULL;

	if (a->value && !ename)
		return oom(x);
	switch (a->verb) {
	case CLI_VOLUME_CREATE:
	case CLI_VOLUME_RM:
		if (asprintf(&path, "volumes/%s/", ename) < 0)
			return oom(x);
		if ((a->verb == CLI_VOLUME_CREATE ? cli_put(&x->client, path, NULL, 0, &x->err)
						  : cli_delete(&x->client, path, &x->err)) < 0)
			return fail(x);
		return 0;
	case CLI_VOLUME_LS: {
		static const char *const keys[] = {"name", "size", "boxes"};
		static const char *const heads[] = {"NAME", "SIZE", "BOXES"};
		static const char *const files[] = {"size", "boxes"};
		return object_table(x, "volumes/", keys, heads, files, 2, true, NULL);
	}
	case CLI_VOLUME_EXPORT: {
		_cleanup_close_ int fd = -1;
		int out = STDOUT_FILENO;
		if (asprintf(&path, "volumes/%s/export", ename) < 0)
			return oom(x);
		if (a->output && strcmp(a->output, "-") != 0) {
			fd = open(a->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0)
				return pd_error_set(&x->err, -errno, "%s: %s", a->output,
						    strerror(errno)),
				       fail(x);
			out = fd;
		} else if (cli_platform_isatty(STDOUT_FILENO)) {
			return pd_error_set(&x->err, -EINVAL,
					    "not writing an archive to a terminal: use -o FILE"),
			       fail(x);
		}
		bool progress =
		    out != STDOUT_FILENO && !a->quiet && cli_platform_isatty(STDERR_FILENO);
		if (cli_download(&x->client, path, out, progress, &x->err) < 0) {
			if (fd >= 0)
				unlink(a->output);
			return fail(x);
		}
		return 0;
	}
	case CLI_VOLUME_IMPORT: {
		/* Over the volume's data/ route: a tar (plain, gzip or zstd, as
		 * export makes) extracted inside the volume on the server. */
		_cleanup_close_ int fd = open(a->input, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return pd_error_set(&x->err, -errno, "%s: %s", a->input, strerror(errno)),
			       fail(x);
		if (asprintf(&path, "volumes/%s/data/?format=tar", ename) < 0)
			return oom(x);
		if (cli_upload(&x->client, path, fd, &x->err) < 0)
			return fail(x);
		return 0;
	}
	case CLI_VOLUME_ATTACH:
	case CLI_VOLUME_DETACH:
		break;
	default:
		return CLI_EXIT_USAGE;
	}

	/* attach/detach: the box's volumes file is the whole list. */
	_cleanup_free_ char *box = NULL, *list = NULL;
	_cleanup_(pd_buf_freep) struct pd_buf out = {0};
	bool found = false;
	if (use_box(x, a->box, &box) < 0)
		return fail(x);
	path = cli_box_path(box, "volumes");
	if (!path)
		return oom(x);
	if (cli_get(&x->client, path, &list, NULL, &x->err) < 0)
		return fail(x);
	for (char *line = list, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (*line == '\0')
			continue;
		if (strcmp(line, a->value) == 0) {
			found = true;
			if (a->verb == CLI_VOLUME_DETACH)
				continue;
		}
		if (pd_buf_printf(&out, "%s\n", line) < 0)
			return oom(x);
	}
	if (a->verb == CLI_VOLUME_ATTACH && !found && pd_buf_printf(&out, "%s\n", a->value) < 0)
		return oom(x);
	if (a->verb == CLI_VOLUME_DETACH && !found)
		return pd_error_set(&x->err, -ENOENT, "volume %s is not attached to %s", a->value,
				    box),
		       fail(x);
	if (a->verb == CLI_VOLUME_ATTACH && found)
		return 0;
	if (cli_put(&x->client, path, out.data ? out.data : "", out.len, &x->err) < 0)
		return fail(x);
	return 0;
}

static int cmd_token(struct ctx *x)
{
	static const char *const keys[] = {"id", "label", "created", "last_used", "expires"};
	static const char *const heads[] = {"ID", "LABEL", "CREATED", "LAST USED", "EXPIRES"};
	static const char *const files[] = {"label", "created", "last_used", "expires"};
	_cleanup_free_ char *path = NULL, *eid = NULL;

	if (x->a->verb == CLI_TOKEN_LS)
		return object_table(x, "tokens/", keys, heads, files, 4, true, NULL);
	eid = cli_escape_segment(x->a->value);
	if (!eid || asprintf(&path, "tokens/%s/", eid) < 0)
		return oom(x);
	if (cli_delete(&x->client, path, &x->err) < 0)
		return fail(x);
	return 0;
}

static int cmd_push_pull(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *box = NULL;
	bool progress = !a->quiet && cli_platform_isatty(STDERR_FILENO);
	int r;

	if (use_box(x, a->box, &box) < 0)
		return fail(x);
	if (a->verb == CLI_PUSH)
		r = cli_push(&x->client, box, a->srcs, a->n_srcs, a->to, progress, a->quiet,
			     &x->err);
	else
		r = cli_pull(&x->client, box, a->srcs[0], a->to,
			     &(cli_pull_opts){.progress = progress, .owners = a->owners}, &x->err);
	if (r < 0)
		return fail(x);
	if (a->verbose)
		fprintf(stderr, "paddock: %s done\n", a->verb == CLI_PUSH ? "push" : "pull");
	return 0;
}

/* exec's and prompt's status: the job's code, 130 when the user gave up
 * waiting, 1 on a failure; the box counts as used once the job started. */
static int job_status(struct ctx *x, int r, bool started, int code)
{
	x->use_anyway = started;
	if (r == -EINTR) {
		fail(x);
		return 130;
	}
	if (r < 0)
		return fail(x);
	return code;
}

static int cmd_exec(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *box = NULL;
	cli_exec_opts o = {
	    .words = a->words,
	    .n_words = a->n_words,
	    .env = a->env,
	    .n_env = a->n_env,
	    .cwd = a->cwd,
	    .desktop = a->desktop,
	};
	int code = 0;
	bool started = false;

	if (use_box(x, a->box, &box) < 0)
		return fail(x);
	int r = cli_exec(&x->client, box, &o, &code, &started, &x->err);
	return job_status(x, r, started, code);
}

/* desktop BOX …, screenshot BOX [-o FILE]: desktop.c. A desktop that is
 * off gets a hint in the CLI's own words after the server's reason. */
static int cmd_desktop(struct ctx *x)
{
	_cleanup_free_ char *box = NULL;
	int r;

	if (use_box(x, x->a->box, &box) < 0)
		return fail(x);
	r = x->a->verb == CLI_DESKTOP ? cli_desktop(&x->client, x->a, box, &x->err)
				      : cli_screenshot(&x->client, x->a, box, &x->err);
	if (r == 0)
		return 0;
	fail(x);
	if (r == -ENODEV && !x->a->quiet)
		fprintf(stderr, "paddock: turn it on with 'paddock desktop %s'\n", box);
	return CLI_EXIT_FAIL;
}

/* prompt BOX TEXT…: prompt.c. */
static int cmd_prompt(struct ctx *x)
{
	const cli_args *a = x->a;
	_cleanup_free_ char *box = NULL, *text = NULL;
	int code = 0;
	bool started = false;

	if (cli_prompt_text(a->words, a->n_words, stdin, &text, &x->err) < 0)
		return fail(x);
	cli_prompt_opts o = {
	    .agent = a->agent,
	    .model = a->model,
	    .cont = a->cont,
	    .cwd = a->cwd,
	    .env = a->env,
	    .n_env = a->n_env,
	    .text = text,
	    .json = a->json,
	    .quiet = a->quiet,
	};
	if (use_box(x, a->box, &box) < 0)
		return fail(x);
	int r = cli_prompt(&x->client, box, &o, &code, &started, &x->err);
	return job_status(x, r, started, code);
}

static int dispatch(struct ctx *x)
{
	const cli_args *a = x->a;

	switch (a->verb) {
	case CLI_NEW:
		return cmd_new(x);
	case CLI_LS:
		return cmd_ls(x);
	case CLI_INFO:
		return cmd_info(x);
	case CLI_PUSH:
	case CLI_PULL:
		return cmd_push_pull(x);
	case CLI_EXEC:
		return cmd_exec(x);
	case CLI_STOP:
		return box_write(x, "state", "stopped");
	case CLI_START:
	case CLI_RESUME:
		return box_write(x, "state", "running");
	case CLI_RM:
		return cmd_rm(x);
	case CLI_TTL:
		return box_write(x, "ttl", a->value);
	case CLI_POLICY:
		return cmd_policy(x);
	case CLI_PORTS:
		return cmd_ports(x);
	case CLI_DOCKER:
		return cmd_docker(x);
	case CLI_FORK:
		return cmd_fork(x);
	case CLI_SNAPSHOT:
		return cmd_snapshot(x);
	case CLI_SNAPSHOTS:
		return cmd_snapshots(x);
	case CLI_RESTORE:
		return cmd_restore(x);
	case CLI_VOLUME_CREATE:
	case CLI_VOLUME_LS:
	case CLI_VOLUME_RM:
	case CLI_VOLUME_ATTACH:
	case CLI_VOLUME_DETACH:
	case CLI_VOLUME_EXPORT:
	case CLI_VOLUME_IMPORT:
		return cmd_volume(x);
	case CLI_TOKEN_LS:
	case CLI_TOKEN_REVOKE:
		return cmd_token(x);
	case CLI_SECRET_SET:
		return cli_secret_set(&x->client, a->value, stdin, &x->err) < 0 ? fail(x) : 0;
	case CLI_SECRET_RM:
		return cli_secret_rm(&x->client, a->value, &x->err) < 0 ? fail(x) : 0;
	case CLI_SECRET_LS:
		return cli_secret_ls(&x->client, a->json, stdout, &x->err) < 0 ? fail(x) : 0;
	case CLI_DESKTOP:
	case CLI_SCREENSHOT:
		return cmd_desktop(x);
	case CLI_PROMPT:
		return cmd_prompt(x);
	case CLI_COMPLETE_BOXES:
		return cmd_complete_boxes(x);
	case CLI_SKILL_INSTALL:
	case CLI_HELP:
	case CLI_VERSION:
	case CLI_LOGIN:
	case CLI_CURRENT:
		break;
	}
	return CLI_EXIT_USAGE;
}

/* Records the box used as current (or forgets a removed one). A failure
 * to write the config is a notice, not the command's failure. */
static void save_current(struct ctx *x, int rc)
{
	const char *want = x->config.current;

	if (x->forget_box)
		want = NULL;
	else if (x->use_box && (rc == 0 || x->use_anyway))
		want = x->use_box;
	if ((want == NULL) == (x->config.current == NULL) &&
	    (!want || strcmp(want, x->config.current) == 0))
		return;
	_cleanup_free_ char *copy = want ? strdup(want) : NULL;
	free(x->config.current);
	x->config.current = TAKE_PTR(copy);
	pd_error err = {0};
	if (cli_config_write(x->config_path, &x->config, &err) < 0 && !x->a->quiet)
		fprintf(stderr, "paddock: cannot record the current box: %s\n", err.msg);
}

int cli_run(const cli_args *a)
{
	struct ctx x = {.a = a};
	_cleanup_free_ char *url = NULL, *token = NULL, *cacert = NULL;
	int rc;

	if (a->verb == CLI_HELP) {
		cli_usage(stdout);
		return 0;
	}
	if (a->verb == CLI_VERSION) {
		printf("paddock %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (a->verb == CLI_SKILL_INSTALL) { /* no server */
		/* Without DIR, each directory that failed was named already. */
		if (cli_skill_install(a->value, stdout, &x.err) < 0)
			return a->value ? fail(&x) : CLI_EXIT_FAIL;
		return 0;
	}
	if (cli_config_path(&x.config_path) < 0) {
		fprintf(stderr, "paddock: set HOME or PADDOCK_CONFIG\n");
		return CLI_EXIT_FAIL;
	}
	if (cli_config_read(x.config_path, &x.config, &x.err) < 0) {
		rc = fail(&x);
		goto out;
	}
	if (a->verb == CLI_CURRENT) {
		if (!x.config.current) {
			pd_error_set(&x.err, -ENOENT, "no current box");
			rc = fail(&x);
		} else {
			printf("%s\n", x.config.current);
			rc = 0;
		}
		goto out;
	}
	if (a->verb == CLI_LOGIN) {
		rc = cmd_login(&x);
		goto out;
	}
	if (cli_resolve_server(a->url, a->token, &x.config, CLI_DEFAULT_SOCKET, &url, &token,
			       &x.err) < 0 ||
	    cli_client_init(&x.client, url, token, &x.err) < 0 ||
	    cli_resolve_cacert(a->cacert, &x.config, url, &cacert, &x.err) < 0 ||
	    cli_client_set_cacert(&x.client, cacert, &x.err) < 0) {
		rc = a->verb == CLI_COMPLETE_BOXES ? CLI_EXIT_FAIL : fail(&x);
		goto out;
	}
	rc = dispatch(&x);
	save_current(&x, rc);
out:
	cli_client_release(&x.client);
	cli_config_release(&x.config);
	free(x.config_path);
	free(x.use_box);
	return rc;
}
