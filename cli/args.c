/* args.c - the command line (see cli.h). Global options may stand anywhere
 * before "--"; a command's own options after the command word. For exec
 * and prompt, option parsing stops at "--" or at the first word after BOX,
 * so `paddock exec b ls -la` passes "-la" to ls. desktop stops at its first
 * action word (see cli_desktop_sub_of()). */
#include <string.h>

#include "cli/cli.h"
#include "cli/secret.h"

enum {
	OPT_GLOBAL = 1u << 0,
	OPT_NAME = 1u << 1,
	OPT_TYPE = 1u << 2,
	OPT_TTL = 1u << 3,
	OPT_IMAGE = 1u << 4,
	OPT_POLICY = 1u << 5,
	OPT_TO = 1u << 6,
	OPT_ENV = 1u << 7,
	OPT_CWD = 1u << 8,
	OPT_DESKTOP = 1u << 9,
	OPT_OUTPUT = 1u << 10,
	OPT_PASSWORD_STDIN = 1u << 11,
	OPT_OWNERS = 1u << 12,
	OPT_NO_WAIT = 1u << 13,
	OPT_AGENT = 1u << 14,
	OPT_DOCKER = 1u << 15,
};

enum opt_id {
	O_URL,
	O_TOKEN,
	O_CACERT,
	O_JSON,
	O_QUIET,
	O_VERBOSE,
	O_HELP,
	O_VERSION,
	O_NAME,
	O_TYPE,
	O_TTL,
	O_IMAGE,
	O_POLICY,
	O_TO,
	O_ENV,
	O_CWD,
	O_DESKTOP,
	O_OUTPUT,
	O_PASSWORD_STDIN,
	O_OWNERS,
	O_NO_WAIT,
	O_AGENT,
	O_MODEL,
	O_CONTINUE,
	O_DOCKER,
	O_NO_DOCKER,
};

static const struct option_spec {
	const char *name;
	char short_name;
	unsigned group;
	bool has_value;
} options[] = {
    [O_URL] = {"url", 0, OPT_GLOBAL, true},
    [O_TOKEN] = {"token", 0, OPT_GLOBAL, true},
    [O_CACERT] = {"cacert", 0, OPT_GLOBAL, true},
    [O_JSON] = {"json", 0, OPT_GLOBAL, false},
    [O_QUIET] = {"quiet", 'q', OPT_GLOBAL, false},
    [O_VERBOSE] = {"verbose", 'v', OPT_GLOBAL, false},
    [O_HELP] = {"help", 'h', OPT_GLOBAL, false},
    [O_VERSION] = {"version", 0, OPT_GLOBAL, false},
    [O_NAME] = {"name", 0, OPT_NAME, true},
    [O_TYPE] = {"type", 0, OPT_TYPE, true},
    [O_TTL] = {"ttl", 0, OPT_TTL, true},
    [O_IMAGE] = {"image", 0, OPT_IMAGE, true},
    [O_POLICY] = {"policy", 0, OPT_POLICY, true},
    [O_TO] = {"to", 0, OPT_TO, true},
    [O_ENV] = {"env", 'e', OPT_ENV, true},
    [O_CWD] = {"cwd", 0, OPT_CWD, true},
    [O_DESKTOP] = {"desktop", 0, OPT_DESKTOP, false},
    [O_OUTPUT] = {"output", 'o', OPT_OUTPUT, true},
    [O_PASSWORD_STDIN] = {"password-stdin", 0, OPT_PASSWORD_STDIN, false},
    [O_OWNERS] = {"owners", 0, OPT_OWNERS, false},
    [O_NO_WAIT] = {"no-wait", 0, OPT_NO_WAIT, false},
    [O_AGENT] = {"agent", 0, OPT_AGENT, true},
    [O_MODEL] = {"model", 0, OPT_AGENT, true},
    [O_CONTINUE] = {"continue", 0, OPT_AGENT, true},
    [O_DOCKER] = {"docker", 0, OPT_DOCKER, false},
    [O_NO_DOCKER] = {"no-docker", 0, OPT_DOCKER, false},
};

#define MANY 1000000

static const struct command_spec {
	const char *group; /* "volume", "token", "secret", or NULL */
	const char *name;
	cli_verb verb;
	size_t min, max; /* positional operands */
	unsigned opts;
	bool takes_box; /* the first operand is a BOX */
} commands[] = {
    {NULL, "help", CLI_HELP, 0, 1, 0, false},
    {NULL, "version", CLI_VERSION, 0, 0, 0, false},
    {NULL, "login", CLI_LOGIN, 1, 1, OPT_PASSWORD_STDIN | OPT_TTL, false},
    {NULL, "new", CLI_NEW, 0, 0,
     OPT_NAME | OPT_TYPE | OPT_TTL | OPT_IMAGE | OPT_POLICY | OPT_DOCKER, false},
    {NULL, "current", CLI_CURRENT, 0, 0, 0, false},
    {NULL, "ls", CLI_LS, 0, 0, 0, false},
    {NULL, "info", CLI_INFO, 1, 1, 0, true},
    {NULL, "push", CLI_PUSH, 2, MANY, OPT_TO, true},
    {NULL, "pull", CLI_PULL, 2, 2, OPT_TO | OPT_OWNERS, true},
    {NULL, "exec", CLI_EXEC, 2, MANY, OPT_ENV | OPT_CWD | OPT_DESKTOP, true},
    {NULL, "stop", CLI_STOP, 1, 1, 0, true},
    {NULL, "start", CLI_START, 1, 1, 0, true},
    {NULL, "resume", CLI_RESUME, 1, 1, 0, true},
    {NULL, "rm", CLI_RM, 1, 1, 0, true},
    {NULL, "ttl", CLI_TTL, 2, 2, 0, true},
    {NULL, "policy", CLI_POLICY, 1, MANY, 0, true},
    {NULL, "ports", CLI_PORTS, 1, MANY, 0, true},
    {NULL, "docker", CLI_DOCKER, 1, 2, 0, true},
    {NULL, "fork", CLI_FORK, 1, 2, 0, true},
    {NULL, "snapshot", CLI_SNAPSHOT, 1, 2, 0, true},
    {NULL, "snapshots", CLI_SNAPSHOTS, 0, 1, 0, true},
    {NULL, "restore", CLI_RESTORE, 2, 2, 0, true},
    {"volume", "create", CLI_VOLUME_CREATE, 1, 1, 0, false},
    {"volume", "ls", CLI_VOLUME_LS, 0, 0, 0, false},
    {"volume", "rm", CLI_VOLUME_RM, 1, 1, 0, false},
    {"volume", "attach", CLI_VOLUME_ATTACH, 2, 2, 0, true},
    {"volume", "detach", CLI_VOLUME_DETACH, 2, 2, 0, true},
    {"volume", "export", CLI_VOLUME_EXPORT, 1, 1, OPT_OUTPUT, false},
    {"volume", "import", CLI_VOLUME_IMPORT, 2, 2, 0, false},
    {"token", "ls", CLI_TOKEN_LS, 0, 0, 0, false},
    {"token", "revoke", CLI_TOKEN_REVOKE, 1, 1, 0, false},
    {"secret", "set", CLI_SECRET_SET, 1, 1, 0, false},
    {"secret", "ls", CLI_SECRET_LS, 0, 0, 0, false},
    {"secret", "rm", CLI_SECRET_RM, 1, 1, 0, false},
    {NULL, "desktop", CLI_DESKTOP, 1, MANY, OPT_NO_WAIT, true},
    {NULL, "screenshot", CLI_SCREENSHOT, 1, 1, OPT_OUTPUT, true},
    {NULL, "prompt", CLI_PROMPT, 2, MANY, OPT_AGENT | OPT_ENV | OPT_CWD, true},
    {"skill", "install", CLI_SKILL_INSTALL, 0, 1, 0, false},
    {NULL, "__complete-boxes", CLI_COMPLETE_BOXES, 0, 0, 0, false},
};

void cli_args_release(cli_args *a)
{
	free(a->srcs);
	free(a->env);
	free(a->words);
	*a = (cli_args){0};
}

static bool ttl_valid(const char *s)
{
	if (strcmp(s, "none") == 0)
		return true;
	if (*s == '\0' || strlen(s) > 10)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool one_line(const char *s)
{
	return strpbrk(s, "\r\n") == NULL;
}

static int push_word(const char ***arr, size_t *n, const char *w)
{
	const char **grown = realloc(*arr, (*n + 1) * sizeof(**arr));
	if (!grown)
		return -ENOMEM;
	grown[(*n)++] = w;
	*arr = grown;
	return 0;
}

/* Finds an option by "--name[=value]" or "-c". Returns its id or -1. */
static int find_option(const char *arg, const char **ret_inline)
{
	*ret_inline = NULL;
	if (arg[0] == '-' && arg[1] == '-') {
		const char *name = arg + 2;
		size_t n = strcspn(name, "=");
		for (size_t i = 0; i < ELEMENTSOF(options); i++)
			if (strlen(options[i].name) == n &&
			    strncmp(options[i].name, name, n) == 0) {
				if (name[n] == '=')
					*ret_inline = name + n + 1;
				return (int)i;
			}
		return -1;
	}
	if (arg[0] == '-' && arg[1] != '\0' && arg[2] == '\0')
		for (size_t i = 0; i < ELEMENTSOF(options); i++)
			if (options[i].short_name == arg[1])
				return (int)i;
	return -1;
}

static const struct command_spec *find_command(const char *group, const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
		bool same_group = group ? commands[i].group && strcmp(commands[i].group, group) == 0
					: commands[i].group == NULL;
		if (same_group && strcmp(commands[i].name, name) == 0)
			return &commands[i];
	}
	return NULL;
}

static bool is_group(const char *s)
{
	return strcmp(s, "volume") == 0 || strcmp(s, "token") == 0 || strcmp(s, "secret") == 0 ||
	       strcmp(s, "skill") == 0;
}

/* Stores an option's value in a. */
static int set_option(cli_args *a, enum opt_id id, const char *v, pd_error *err)
{
	switch (id) {
	case O_URL:
		a->url = v;
		break;
	case O_TOKEN:
		a->token = v;
		break;
	case O_CACERT:
		a->cacert = v;
		break;
	case O_JSON:
		a->json = true;
		break;
	case O_QUIET:
		a->quiet = true;
		break;
	case O_VERBOSE:
		a->verbose = true;
		break;
	case O_HELP:
	case O_VERSION:
		break; /* handled by the caller */
	case O_NAME:
		if (!cli_name_valid(v))
			return pd_error_set(
			    err, -EINVAL, "invalid name '%s' (allowed: [a-z0-9][a-z0-9._-]{0,62})",
			    v);
		a->name = v;
		break;
	case O_TYPE:
		if (!cli_name_valid(v))
			return pd_error_set(err, -EINVAL, "invalid type '%s'", v);
		a->type = v;
		break;
	case O_IMAGE:
		if (!cli_name_valid(v))
			return pd_error_set(err, -EINVAL, "invalid image '%s'", v);
		a->image = v;
		break;
	case O_TTL:
		if (!ttl_valid(v))
			return pd_error_set(err, -EINVAL, "--ttl takes seconds or 'none', not '%s'",
					    v);
		a->ttl = v;
		break;
	case O_POLICY:
		if (strcmp(v, "allow-all") != 0 && strcmp(v, "deny-all") != 0 &&
		    (strncmp(v, "allow:", 6) != 0 || v[6] == '\0' || !one_line(v)))
			return pd_error_set(
			    err, -EINVAL,
			    "--policy takes allow-all, deny-all or allow:ENTRY[,ENTRY…]");
		a->policy = v;
		break;
	case O_TO:
		a->to = v;
		break;
	case O_ENV:
		if (strchr(v, '=') == NULL || v[0] == '=' || !one_line(v))
			return pd_error_set(err, -EINVAL,
					    "--env takes KEY=VALUE on one line, not '%s'", v);
		if (push_word(&a->env, &a->n_env, v) < 0)
			return pd_error_set(err, -ENOMEM, "out of memory");
		break;
	case O_CWD:
		if (!one_line(v) || *v == '\0')
			return pd_error_set(err, -EINVAL, "--cwd takes a directory");
		a->cwd = v;
		break;
	case O_DESKTOP:
		a->desktop = true;
		break;
	case O_OUTPUT:
		a->output = v;
		break;
	case O_PASSWORD_STDIN:
		a->password_stdin = true;
		break;
	case O_OWNERS:
		a->owners = true;
		break;
	case O_NO_WAIT:
		a->no_wait = true;
		break;
	case O_AGENT:
		if (!cli_name_valid(v))
			return pd_error_set(err, -EINVAL, "invalid agent '%s'", v);
		a->agent = v;
		break;
	case O_MODEL:
		if (!one_line(v) || *v == '\0')
			return pd_error_set(err, -EINVAL, "--model takes a model name on one line");
		a->model = v;
		break;
	case O_CONTINUE:
		if (!cli_name_valid(v))
			return pd_error_set(err, -EINVAL,
					    "--continue takes a prompt's name, not '%s'", v);
		a->cont = v;
		break;
	case O_DOCKER:
	case O_NO_DOCKER: {
		const char *want = id == O_DOCKER ? "on" : "off";
		/* Both given is a contradiction, not an override. */
		if (a->docker && strcmp(a->docker, want) != 0)
			return pd_error_set(err, -EINVAL,
					    "--docker and --no-docker exclude each other");
		a->docker = want;
		break;
	}
	}
	return 0;
}

static bool box_arg_valid(const char *s)
{
	return strcmp(s, "current") == 0 || cli_name_valid(s);
}

/* desktop BOX [SUBCOMMAND [WxH] | - | ACTION… [, ACTION…]…] */
static int assign_desktop(cli_args *a, const char **pos, size_t n, pd_error *err)
{
	cli_desktop_sub sub = n > 1 ? cli_desktop_sub_of(pos[1]) : CLI_DESKTOP_ON;

	a->desktop_sub = sub;
	if (a->no_wait && sub != CLI_DESKTOP_ON)
		return pd_error_set(err, -EINVAL,
				    "--no-wait only applies to turning the desktop on");
	switch (sub) {
	case CLI_DESKTOP_GEOMETRY:
		if (n > 3)
			return pd_error_set(err, -EINVAL, "desktop geometry takes one WxH at most");
		if (n == 3) {
			if (!one_line(pos[2]) || *pos[2] == '\0')
				return pd_error_set(err, -EINVAL, "invalid geometry '%s' (WxH)",
						    pos[2]);
			a->value = pos[2];
		}
		return 0;
	case CLI_DESKTOP_INPUT:
		break;
	default:
		if (n > 2)
			return pd_error_set(err, -EINVAL, "desktop %s takes no operands", pos[1]);
		return 0;
	}
	if (strcmp(pos[1], "-") == 0) {
		if (n > 2)
			return pd_error_set(err, -EINVAL,
					    "'-' (actions from standard input) stands alone");
		a->input = pos[1];
		return 0;
	}
	_cleanup_free_ char *body = NULL;
	size_t len;
	int r = cli_desktop_input_body(pos + 1, n - 1, &body, &len, err);
	if (r < 0)
		return r;
	for (size_t i = 1; i < n; i++)
		if (push_word(&a->words, &a->n_words, pos[i]) < 0)
			return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* Distributes the positional operands over the fields of a. */
static int assign(cli_args *a, const struct command_spec *cmd, const char **pos, size_t n,
		  pd_error *err)
{
	size_t first = 0;

	if (cmd->takes_box && n > 0 && cmd->verb != CLI_VOLUME_ATTACH &&
	    cmd->verb != CLI_VOLUME_DETACH) {
		if (!box_arg_valid(pos[0]))
			return pd_error_set(
			    err, -EINVAL,
			    "invalid box name '%s' (allowed: [a-z0-9][a-z0-9._-]{0,62} "
			    "or 'current')",
			    pos[0]);
		a->box = pos[0];
		first = 1;
	}
	switch (cmd->verb) {
	case CLI_HELP:
	case CLI_VERSION:
	case CLI_NEW:
	case CLI_CURRENT:
	case CLI_LS:
	case CLI_INFO:
	case CLI_STOP:
	case CLI_START:
	case CLI_RESUME:
	case CLI_RM:
	case CLI_SNAPSHOTS:
	case CLI_VOLUME_LS:
	case CLI_TOKEN_LS:
	case CLI_SECRET_LS:
	case CLI_COMPLETE_BOXES:
	case CLI_SCREENSHOT:
		break;
	case CLI_DESKTOP:
		return assign_desktop(a, pos, n, err);
	case CLI_LOGIN:
		/* A token's lifetime: seconds; no --ttl is the server's default. */
		if (a->ttl &&
		    (strcmp(a->ttl, "none") == 0 || strspn(a->ttl, "0") == strlen(a->ttl)))
			return pd_error_set(
			    err, -EINVAL,
			    "login --ttl takes the token's lifetime in seconds (1 or "
			    "more), not '%s'",
			    a->ttl);
		a->value = pos[0];
		break;
	case CLI_PUSH:
	case CLI_PULL:
		if (!a->to)
			return pd_error_set(err, -EINVAL, "%s needs --to DIR", cmd->name);
		if (cmd->verb == CLI_PUSH && a->to[0] != '/')
			return pd_error_set(
			    err, -EINVAL, "--to must be an absolute path inside the box, not '%s'",
			    a->to);
		if (cmd->verb == CLI_PULL && pos[1][0] != '/')
			return pd_error_set(err, -EINVAL,
					    "SRC must be an absolute path inside the box, not '%s'",
					    pos[1]);
		for (size_t i = first; i < n; i++)
			if (push_word(&a->srcs, &a->n_srcs, pos[i]) < 0)
				return pd_error_set(err, -ENOMEM, "out of memory");
		break;
	case CLI_PROMPT:
		if (n - first > 1)
			for (size_t i = first; i < n; i++)
				if (strcmp(pos[i], "-") == 0)
					return pd_error_set(
					    err, -EINVAL,
					    "'-' (the prompt from standard input) stands alone");
		/* fall through */
	case CLI_EXEC:
		for (size_t i = first; i < n; i++)
			if (push_word(&a->words, &a->n_words, pos[i]) < 0)
				return pd_error_set(err, -ENOMEM, "out of memory");
		break;
	case CLI_TTL:
		if (!ttl_valid(pos[1]))
			return pd_error_set(err, -EINVAL, "ttl takes seconds or 'none', not '%s'",
					    pos[1]);
		a->value = pos[1];
		break;
	case CLI_PORTS: /* PORT [public]... (words; none: shows them) */
		for (size_t i = 1; i < n; i++)
			if (push_word(&a->words, &a->n_words, pos[i]) < 0)
				return pd_error_set(err, -ENOMEM, "out of memory");
		break;
	case CLI_POLICY:
		if (n == 1)
			break; /* shows the policy */
		a->value = pos[1];
		if (strcmp(pos[1], "allow") == 0) {
			if (n < 3)
				return pd_error_set(err, -EINVAL, "policy allow needs ENTRY…");
			for (size_t i = 2; i < n; i++) {
				if (!one_line(pos[i]) || *pos[i] == '\0')
					return pd_error_set(err, -EINVAL, "invalid entry '%s'",
							    pos[i]);
				if (push_word(&a->words, &a->n_words, pos[i]) < 0)
					return pd_error_set(err, -ENOMEM, "out of memory");
			}
		} else if (strcmp(pos[1], "allow-all") == 0 || strcmp(pos[1], "deny-all") == 0) {
			if (n > 2)
				return pd_error_set(err, -EINVAL, "%s takes no entries", pos[1]);
		} else {
			return pd_error_set(err, -EINVAL,
					    "policy takes allow-all, deny-all or allow ENTRY…, not "
					    "'%s'",
					    pos[1]);
		}
		break;
	case CLI_DOCKER:
		if (n == 1)
			break; /* shows the setting */
		if (strcmp(pos[1], "on") != 0 && strcmp(pos[1], "off") != 0)
			return pd_error_set(err, -EINVAL, "docker takes on or off, not '%s'",
					    pos[1]);
		a->value = pos[1];
		break;
	case CLI_FORK:
	case CLI_VOLUME_CREATE:
	case CLI_VOLUME_RM:
	case CLI_VOLUME_EXPORT:
	case CLI_TOKEN_REVOKE:
		if (n > first) {
			if (!cli_name_valid(pos[first]))
				return pd_error_set(err, -EINVAL, "invalid name '%s'", pos[first]);
			a->value = pos[first];
		}
		break;
	case CLI_SECRET_SET:
	case CLI_SECRET_RM:
		if (!cli_secret_name_valid(pos[0]))
			return pd_error_set(err, -EINVAL,
					    "invalid secret name '%s': an environment variable's, "
					    "[A-Za-z_][A-Za-z0-9_]*, at most %d bytes",
					    pos[0], CLI_SECRET_NAME_MAX);
		a->value = pos[0];
		break;
	case CLI_SKILL_INSTALL:
		if (n > 0) {
			if (*pos[0] == '\0')
				return pd_error_set(err, -EINVAL, "DIR is empty");
			a->value = pos[0];
		}
		break;
	case CLI_VOLUME_IMPORT:
		if (!cli_name_valid(pos[0]))
			return pd_error_set(err, -EINVAL, "invalid volume name '%s'", pos[0]);
		a->value = pos[0];
		a->input = pos[1];
		break;
	case CLI_VOLUME_ATTACH:
	case CLI_VOLUME_DETACH:
		if (!box_arg_valid(pos[0]))
			return pd_error_set(err, -EINVAL, "invalid box name '%s'", pos[0]);
		if (!cli_name_valid(pos[1]))
			return pd_error_set(err, -EINVAL, "invalid volume name '%s'", pos[1]);
		a->box = pos[0];
		a->value = pos[1];
		break;
	case CLI_SNAPSHOT:
	case CLI_RESTORE: /* SNAP: an id or a label */
		if (n > 1) {
			if (!one_line(pos[1]))
				return pd_error_set(err, -EINVAL, "the label must be one line");
			a->value = pos[1];
		}
		break;
	}
	return 0;
}

int cli_parse(int argc, char **argv, cli_args *ret, pd_error *err)
{
	cli_args a = {0};
	_cleanup_free_ const char **pos = NULL;
	size_t n_pos = 0;
	const struct command_spec *cmd = NULL;
	const char *group = NULL;
	bool help = false, version = false, rest = false;
	int r = 0;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		/* exec: everything after BOX and a first word is the command;
		 * desktop: everything from the first word after BOX that is no
		 * subcommand (an action: `type --help` types "--help") */
		if (!rest && cmd && (cmd->verb == CLI_EXEC || cmd->verb == CLI_PROMPT) &&
		    n_pos >= 1 && (arg[0] != '-' || strcmp(arg, "-") == 0))
			rest = true;
		if (!rest && cmd && cmd->verb == CLI_DESKTOP && n_pos == 1 &&
		    (arg[0] != '-' || strcmp(arg, "-") == 0) &&
		    cli_desktop_sub_of(arg) == CLI_DESKTOP_INPUT)
			rest = true;
		if (!rest && strcmp(arg, "--") == 0) {
			rest = true;
			continue;
		}
		if (!rest && arg[0] == '-' && arg[1] != '\0') {
			const char *inline_value;
			int id = find_option(arg, &inline_value);
			if (id < 0) {
				r = pd_error_set(err, -EINVAL, "unknown option '%s'", arg);
				goto fail;
			}
			const struct option_spec *o = &options[id];
			if (o->group != OPT_GLOBAL && (!cmd || !(cmd->opts & o->group))) {
				r = pd_error_set(err, -EINVAL, "option '--%s' does not apply to %s",
						 o->name, cmd ? cmd->name : "no command");
				goto fail;
			}
			const char *v = NULL;
			if (o->has_value) {
				if (inline_value)
					v = inline_value;
				else if (i + 1 < argc)
					v = argv[++i];
				else {
					r = pd_error_set(err, -EINVAL,
							 "option '--%s' needs a value", o->name);
					goto fail;
				}
			} else if (inline_value) {
				r = pd_error_set(err, -EINVAL, "option '--%s' takes no value",
						 o->name);
				goto fail;
			}
			if (id == O_HELP)
				help = true;
			else if (id == O_VERSION)
				version = true;
			r = set_option(&a, (enum opt_id)id, v, err);
			if (r < 0)
				goto fail;
			continue;
		}
		if (!cmd) {
			if (!group && is_group(arg)) {
				group = arg;
				continue;
			}
			cmd = find_command(group, arg);
			if (!cmd) {
				r = group ? pd_error_set(err, -EINVAL, "unknown command '%s %s'",
							 group, arg)
					  : pd_error_set(err, -EINVAL, "unknown command '%s'", arg);
				goto fail;
			}
			continue;
		}
		if (push_word(&pos, &n_pos, arg) < 0) {
			r = pd_error_set(err, -ENOMEM, "out of memory");
			goto fail;
		}
	}

	if (help || version) {
		cli_args_release(&a);
		*ret = (cli_args){.verb = help ? CLI_HELP : CLI_VERSION};
		return 0;
	}
	if (!cmd) {
		r = group ? pd_error_set(err, -EINVAL, "'%s' needs a subcommand", group)
			  : pd_error_set(err, -EINVAL, "no command given");
		goto fail;
	}
	if (n_pos < cmd->min || n_pos > cmd->max) {
		r = pd_error_set(err, -EINVAL, "%s%s%s: %s operands", cmd->group ? cmd->group : "",
				 cmd->group ? " " : "", cmd->name,
				 n_pos < cmd->min ? "missing" : "too many");
		goto fail;
	}
	a.verb = cmd->verb;
	r = assign(&a, cmd, pos, n_pos, err);
	if (r < 0)
		goto fail;
	*ret = a;
	return 0;
fail:
	cli_args_release(&a);
	return r;
}
