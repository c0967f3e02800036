/* cli.h - the `paddock` command-line client: argument parsing and the
 * commands, each a few HTTP requests on the daemon's tree (web/README.md).
 *
 * main.c only calls cli_parse() and cli_run(). Everything here is in
 * libpaddockcli.la so the unit tests can reach it without a server.
 *
 * Exit statuses: 0 success, 1 a failure reported by the server or the
 * network (the reason is printed as "paddock: REASON"), 2 a usage error;
 * `exec` and `prompt` exit with the job's (the agent's) own code.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "common/error.h"

#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* The default unix socket of a local daemon: used when nothing else names
 * a server and it exists. */
#define CLI_DEFAULT_SOCKET "/run/paddock/paddock.sock"

typedef enum cli_verb {
	CLI_HELP,
	CLI_VERSION,
	CLI_LOGIN,
	CLI_NEW,
	CLI_CURRENT,
	CLI_LS,
	CLI_INFO,
	CLI_PUSH,
	CLI_PULL,
	CLI_EXEC,
	CLI_STOP,
	CLI_START,
	CLI_RESUME,
	CLI_RM,
	CLI_TTL,
	CLI_POLICY,
	CLI_PORTS,
	CLI_DOCKER,
	CLI_FORK,
	CLI_SNAPSHOT,
	CLI_SNAPSHOTS,
	CLI_RESTORE,
	CLI_VOLUME_CREATE,
	CLI_VOLUME_LS,
	CLI_VOLUME_RM,
	CLI_VOLUME_ATTACH,
	CLI_VOLUME_DETACH,
	CLI_VOLUME_EXPORT,
	CLI_VOLUME_IMPORT,
	CLI_TOKEN_LS,
	CLI_TOKEN_REVOKE,
	CLI_SECRET_SET,
	CLI_SECRET_LS,
	CLI_SECRET_RM,
	CLI_DESKTOP,
	CLI_SCREENSHOT,
	CLI_PROMPT,
	CLI_SKILL_INSTALL,
	CLI_COMPLETE_BOXES, /* hidden: box names for shell completion */
} cli_verb;

/* What `desktop BOX [WORD…]` does: the first word after BOX is one of
 * these subcommand names, or else starts a list of input actions. The
 * names never clash with the actions of desktop/input (move, click,
 * double, drag, scroll, type, key). */
typedef enum cli_desktop_sub {
	CLI_DESKTOP_ON,	      /* no word, or "on": turn it on, wait, print the url */
	CLI_DESKTOP_OFF,      /* "off" */
	CLI_DESKTOP_URL,      /* "url": print the url only */
	CLI_DESKTOP_WINDOWS,  /* "windows" */
	CLI_DESKTOP_CURSOR,   /* "cursor" */
	CLI_DESKTOP_GEOMETRY, /* "geometry [WxH]": print, or set to value */
	CLI_DESKTOP_INPUT,    /* ACTION…: words (or input "-": stdin) */
} cli_desktop_sub;

/* The subcommand a word names, or CLI_DESKTOP_INPUT for any other word. */
cli_desktop_sub cli_desktop_sub_of(const char *word);

/* A parsed command line. Strings point into the argv given to cli_parse()
 * (which must outlive this); only the arrays are allocated, freed by
 * cli_args_release(). */
typedef struct cli_args {
	cli_verb verb;

	/* Global options. */
	const char *url;    /* --url */
	const char *token;  /* --token */
	const char *cacert; /* --cacert: the CA certificates to trust (PEM) */
	bool json;	    /* --json */
	bool quiet;	    /* -q */
	bool verbose;	    /* -v */

	/* The BOX argument (possibly the literal "current"). */
	const char *box;

	/* new; docker: "on" (--docker), "off" (--no-docker) or NULL (the
	 * image's default) */
	const char *name, *type, *ttl, *image, *policy, *docker;

	/* push: SRC…; pull: one SRC; both: --to DIR */
	const char **srcs;
	size_t n_srcs;
	const char *to;
	bool owners; /* pull --owners */

	/* exec */
	const char **env; /* K=V */
	size_t n_env;
	const char *cwd;
	bool desktop;

	/* prompt: --agent, --model, --continue (env and cwd as exec's) */
	const char *agent, *model, *cont;

	/* exec: CMD…; prompt: TEXT words; policy allow: ENTRY…; desktop:
	 * ACTION words */
	const char **words;
	size_t n_words;

	/* The command's other operand: skill install DIR, login URL, ttl SECONDS|none, policy
	 * mode, docker on|off, fork NEW, snapshot LABEL, restore SNAP, volume NAME, token ID. */
	const char *value;

	/* volume export -o FILE; screenshot -o FILE */
	const char *output;

	/* volume import NAME FILE; desktop BOX -: "-" (actions from stdin) */
	const char *input;

	/* desktop: the subcommand; its input actions are in words, a
	 * geometry to set in value */
	cli_desktop_sub desktop_sub;
	bool no_wait; /* desktop --no-wait */

	/* login */
	bool password_stdin;
} cli_args;

/* Parses argv (argv[0] is the program name). Returns 0 and fills *ret, or
 * -EINVAL with the reason in err (the caller prints it with a hint to
 * --help and exits CLI_EXIT_USAGE). Nothing is allocated on failure. */
int cli_parse(int argc, char **argv, cli_args *ret, pd_error *err);

void cli_args_release(cli_args *a);

/* Runs a parsed command and returns the process exit status. Messages go
 * to stderr, results to stdout. */
int cli_run(const cli_args *a);

/* The usage text (for --help and usage errors). */
void cli_usage(FILE *f);

/* --- text helpers (text.c) ------------------------------------------- */

/* Quotes one word for a POSIX shell: bare when made only of
 * [A-Za-z0-9_@%+=:,./-] (and not empty), else in single quotes with each '
 * written as '\''. Returns a malloc'd string or NULL on ENOMEM. */
char *cli_shell_quote(const char *word);

/* The command line the server runs under `bash -lc`: one word is sent
 * verbatim (so `paddock exec b -- 'ls | wc -l'` is a shell line); several
 * are each quoted and joined by spaces. NULL on ENOMEM or n == 0. */
char *cli_shell_join(const char *const *words, size_t n);

/* --- JSON (json.c, on jansson; json.h has the rest) -------------------- */

/* The string member `key` of a JSON object body (the answer of a control
 * write: {"snapshot":"web-3"}), malloc'd; NULL when the body is not JSON
 * (or holds a duplicate key or a NUL), is no object, or has no such string
 * member. */
char *cli_json_get_string(const char *body, size_t len, const char *key);

/* The "error" string of an error body, {"error":"…","errno":"…"}; NULL
 * when it has none (the caller then shows the raw body). */
char *cli_error_from_body(const char *body, size_t len);

/* A random name "PREFIX" + 6 chars of [a-z0-9]. malloc'd; NULL on ENOMEM. */
char *cli_random_name(const char *prefix);

/* One line of a `?format=text` listing: "TYPE MODE SIZE NAME". Sets the
 * type char ('d', 'f' or 'l') and points *ret_name into line (the name
 * runs to the end of the line, without its newline, which the caller has
 * removed). Returns 0 or -EINVAL. */
int cli_parse_listing_line(const char *line, char *ret_type, const char **ret_name);

/* Whether s is a valid object name: [a-z0-9][a-z0-9._-]{0,62}. */
bool cli_name_valid(const char *s);

/* --- desktop helpers (desktop-text.c) ----------------------------------- */

/* The body written to desktop/input for the action words of
 * `desktop BOX ACTION…`: a word that is exactly "," ends an action; the
 * words of one action are joined by single spaces into one line (so
 * `type 'a  b'` keeps its two spaces); each line ends in "\n". The
 * actions themselves are the server's to check. -EINVAL (reason in err)
 * for an empty action (a "," first, last or doubled, or no word) or a
 * word holding a line break; *ret (malloc'd, NUL-terminated) and
 * *ret_len only on success. */
int cli_desktop_input_body(const char *const *words, size_t n, char **ret, size_t *ret_len,
			   pd_error *err);

/* A geometry "WxH", "WxH+X+Y" (offsets may be negative: "+-5" or "-5").
 * Fills what it has (x, y = 0 and *ret_has_pos = false without offsets);
 * -EINVAL for anything else (sizes 1..99999). Any pointer may be NULL. */
int cli_parse_geometry(const char *s, unsigned *ret_w, unsigned *ret_h, int *ret_x, int *ret_y,
		       bool *ret_has_pos);

/* One line of desktop/windows ("ID TITLE GEOMETRY": the id is the first
 * field; the geometry whichever of the last or the second field is one;
 * the title the rest, spaces inside kept; fields may also be separated
 * by tabs, then split on tabs only). The line is cut in place; the
 * pointers lead into it (geometry NULL when there is none; title "" when
 * empty). -EINVAL for an empty line. */
int cli_parse_window_line(char *line, const char **ret_id, const char **ret_title,
			  const char **ret_geometry);

/* The default file of `screenshot BOX`: "BOX-YYYYMMDD-HHMMSS.png" for t
 * in local time. malloc'd; NULL on ENOMEM. */
char *cli_screenshot_name(const char *box, time_t t);

/* Whether the first n bytes of a file are a PNG's signature and IHDR
 * chunk; fills its width and height (either pointer may be NULL).
 * Returns 0 or -EINVAL. (Only the header is read: the PNG is the
 * server's to encode, and the viewer's to decode.) */
int cli_png_header(const unsigned char *head, size_t n, unsigned *ret_w, unsigned *ret_h);
