/* check_cli.c - the paddock CLI without a server: argument parsing, shell
 * quoting (checked against a real /bin/sh), the config file, URL paths,
 * error bodies, `current`, what pull writes from a hostile stream, and the
 * desktop commands' text (input bodies, geometries, window lines, PNG
 * headers), and the docker command's words. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "check-links.h"
#include "check-cli-parse.h"
#include "check-tap.h"
#include "cli/cli-config.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/json.h"
#include "cli/ports.h"
#include "cli/secret.h"
#include "cli/transfer.h"

#define PARSE_OK(a, ...)                                                                           \
	do {                                                                                       \
		pd_error e_;                                                                       \
		int r_ = parse(a, &e_, __VA_ARGS__, NULL);                                         \
		ck_assert_msg(r_ == 0, "parse failed: %s", e_.msg);                                \
	} while (0)

#define PARSE_BAD(...)                                                                             \
	do {                                                                                       \
		pd_error e_;                                                                       \
		cli_args a_;                                                                       \
		ck_assert_int_eq(parse(&a_, &e_, __VA_ARGS__, NULL), -EINVAL);                     \
		ck_assert_str_ne(e_.msg, "");                                                      \
	} while (0)

START_TEST(parse_global_and_simple)
{
	cli_args a;

	PARSE_OK(&a, "--url", "http://h:1", "--token=pd_x", "-q", "ls", "--json");
	ck_assert_int_eq(a.verb, CLI_LS);
	ck_assert_str_eq(a.url, "http://h:1");
	ck_assert_str_eq(a.token, "pd_x");
	ck_assert(a.quiet && a.json && !a.verbose);
	ck_assert_ptr_null(a.cacert);
	cli_args_release(&a);

	PARSE_OK(&a, "--cacert", "ca.crt", "login", "https://p.test");
	ck_assert_int_eq(a.verb, CLI_LOGIN);
	ck_assert_str_eq(a.cacert, "ca.crt");
	ck_assert_str_eq(a.value, "https://p.test");
	cli_args_release(&a);
	PARSE_OK(&a, "ls", "--cacert=/etc/ca.pem");
	ck_assert_str_eq(a.cacert, "/etc/ca.pem");
	cli_args_release(&a);

	PARSE_OK(&a, "current");
	ck_assert_int_eq(a.verb, CLI_CURRENT);
	PARSE_OK(&a, "--help");
	ck_assert_int_eq(a.verb, CLI_HELP);
	PARSE_OK(&a, "ls", "-h");
	ck_assert_int_eq(a.verb, CLI_HELP);
	PARSE_OK(&a, "--version");
	ck_assert_int_eq(a.verb, CLI_VERSION);
	PARSE_OK(&a, "info", "current");
	ck_assert_int_eq(a.verb, CLI_INFO);
	ck_assert_str_eq(a.box, "current");
	PARSE_OK(&a, "-v", "stop", "b1");
	ck_assert_int_eq(a.verb, CLI_STOP);
	ck_assert(a.verbose);
	PARSE_OK(&a, "start", "b1");
	ck_assert_int_eq(a.verb, CLI_START);
	PARSE_OK(&a, "resume", "b1");
	ck_assert_int_eq(a.verb, CLI_RESUME);
	PARSE_OK(&a, "rm", "b1");
	ck_assert_int_eq(a.verb, CLI_RM);
	ck_assert_str_eq(a.box, "b1");
	PARSE_OK(&a, "__complete-boxes");
	ck_assert_int_eq(a.verb, CLI_COMPLETE_BOXES);

	PARSE_BAD("frobnicate");
	PARSE_BAD("--bogus", "ls");
	PARSE_BAD("ls", "extra");
	PARSE_BAD("info");
	PARSE_BAD("info", "a", "b");
	PARSE_BAD("info", "Bad_Name");
	PARSE_BAD("stop", "-x");
	PARSE_BAD("--url");
	PARSE_BAD("--json=1", "ls");
	PARSE_BAD("ls", "--name", "x");	 /* a command's option elsewhere */
	PARSE_BAD("--name", "x", "new"); /* before the command */
	pd_error e;
	ck_assert_int_eq(parse(&a, &e, NULL), -EINVAL);
}
END_TEST

START_TEST(parse_login_new)
{
	cli_args a;

	PARSE_OK(&a, "login", "https://p.example", "--password-stdin");
	ck_assert_int_eq(a.verb, CLI_LOGIN);
	ck_assert_str_eq(a.value, "https://p.example");
	ck_assert(a.password_stdin);
	ck_assert_ptr_null(a.ttl);
	PARSE_OK(&a, "login", "https://p.example", "--ttl", "3600");
	ck_assert_str_eq(a.ttl, "3600");
	PARSE_BAD("login", "https://p.example", "--ttl", "none");
	PARSE_BAD("login", "https://p.example", "--ttl", "0");
	PARSE_BAD("login", "https://p.example", "--ttl", "-5");
	PARSE_BAD("login", "https://p.example", "--ttl", "1h");
	PARSE_BAD("login");
	PARSE_BAD("login", "a", "b");
	PARSE_BAD("ls", "--password-stdin");

	PARSE_OK(&a, "new", "--type", "small", "--ttl", "3600");
	ck_assert_int_eq(a.verb, CLI_NEW);
	ck_assert_str_eq(a.type, "small");
	ck_assert_str_eq(a.ttl, "3600");
	ck_assert_ptr_null(a.name);
	ck_assert_ptr_null(a.image);
	PARSE_OK(&a, "new", "--name=web", "--image", "debian", "--policy", "allow:a.com,b.org",
		 "--ttl", "none");
	ck_assert_str_eq(a.name, "web");
	ck_assert_str_eq(a.image, "debian");
	ck_assert_str_eq(a.policy, "allow:a.com,b.org");
	ck_assert_str_eq(a.ttl, "none");
	PARSE_BAD("new", "--ttl", "1h");
	PARSE_BAD("new", "--ttl", "-5");
	PARSE_BAD("new", "--name", "Web");
	PARSE_BAD("new", "--name", "a/b");
	PARSE_BAD("new", "--policy", "open");
	PARSE_BAD("new", "--policy", "allow:");
	PARSE_BAD("new", "positional");
	PARSE_BAD("new", "--type");
}
END_TEST

START_TEST(parse_push_pull)
{
	cli_args a;

	PARSE_OK(&a, "push", "current", ".", "--to", "/config/project");
	ck_assert_int_eq(a.verb, CLI_PUSH);
	ck_assert_str_eq(a.box, "current");
	ck_assert_uint_eq(a.n_srcs, 1);
	ck_assert_str_eq(a.srcs[0], ".");
	ck_assert_str_eq(a.to, "/config/project");
	cli_args_release(&a);
	PARSE_OK(&a, "push", "--to=/x", "b", "f1", "d2", "f3");
	ck_assert_uint_eq(a.n_srcs, 3);
	ck_assert_str_eq(a.srcs[2], "f3");
	cli_args_release(&a);
	PARSE_BAD("push", "b", ".");
	PARSE_BAD("push", "b", "--to", "/x");
	PARSE_BAD("push", "b", ".", "--to", "relative");

	PARSE_OK(&a, "pull", "current", "/config/project/results.txt", "--to", "out");
	ck_assert_int_eq(a.verb, CLI_PULL);
	ck_assert_str_eq(a.srcs[0], "/config/project/results.txt");
	ck_assert_str_eq(a.to, "out");
	ck_assert(!a.owners);
	cli_args_release(&a);
	PARSE_OK(&a, "pull", "b", "/x", "--owners", "--to", "out");
	ck_assert(a.owners);
	cli_args_release(&a);
	PARSE_BAD("push", "b", ".", "--to", "/x", "--owners");
	PARSE_BAD("pull", "b", "/x");
	PARSE_BAD("pull", "b", "/x", "/y", "--to", "d");
	PARSE_BAD("pull", "b", "rel", "--to", "d");
}
END_TEST

START_TEST(parse_exec)
{
	cli_args a;

	PARSE_OK(&a, "exec", "current", "--", "bash", "-lc", "cd /config/project && npm test");
	ck_assert_int_eq(a.verb, CLI_EXEC);
	ck_assert_str_eq(a.box, "current");
	ck_assert_uint_eq(a.n_words, 3);
	ck_assert_str_eq(a.words[1], "-lc");
	cli_args_release(&a);

	/* no "--": the first word after BOX starts the command; its options are its own */
	PARSE_OK(&a, "exec", "b", "ls", "-la", "--json");
	ck_assert_uint_eq(a.n_words, 3);
	ck_assert_str_eq(a.words[2], "--json");
	ck_assert(!a.json);
	cli_args_release(&a);

	PARSE_OK(&a, "exec", "--desktop", "--env", "A=1", "-e", "B=x y", "--cwd", "/tmp", "b", "--",
		 "true");
	ck_assert(a.desktop);
	ck_assert_uint_eq(a.n_env, 2);
	ck_assert_str_eq(a.env[1], "B=x y");
	ck_assert_str_eq(a.cwd, "/tmp");
	ck_assert_uint_eq(a.n_words, 1);
	cli_args_release(&a);

	PARSE_OK(&a, "exec", "b", "--env", "K=V", "--", "--weird");
	ck_assert_uint_eq(a.n_env, 1);
	ck_assert_str_eq(a.words[0], "--weird");
	cli_args_release(&a);

	PARSE_BAD("exec", "b");
	PARSE_BAD("exec", "b", "--");
	PARSE_BAD("exec", "--env", "NOEQUALS", "b", "--", "x");
	PARSE_BAD("exec", "--env", "=v", "b", "--", "x");
	PARSE_BAD("exec", "--env", "A=1\nB=2", "b", "--", "x");
	PARSE_BAD("exec", "--cwd", "", "b", "--", "x");
	PARSE_BAD("exec", "B!", "--", "x");
}
END_TEST

START_TEST(parse_settings_snapshots)
{
	cli_args a;

	PARSE_OK(&a, "ttl", "b", "3600");
	ck_assert_int_eq(a.verb, CLI_TTL);
	ck_assert_str_eq(a.value, "3600");
	PARSE_OK(&a, "ttl", "b", "none");
	PARSE_BAD("ttl", "b", "soon");
	PARSE_BAD("ttl", "b");

	PARSE_OK(&a, "policy", "b", "allow", "api.anthropic.com", "*.github.com", "10.0.0.0/8");
	ck_assert_int_eq(a.verb, CLI_POLICY);
	ck_assert_str_eq(a.value, "allow");
	ck_assert_uint_eq(a.n_words, 3);
	cli_args_release(&a);
	PARSE_OK(&a, "policy", "b", "deny-all");
	ck_assert_str_eq(a.value, "deny-all");
	PARSE_OK(&a, "policy", "b");
	ck_assert_ptr_null(a.value);
	PARSE_BAD("policy", "b", "allow");
	PARSE_BAD("policy", "b", "allow-all", "x");
	PARSE_BAD("policy", "b", "open");

	PARSE_OK(&a, "fork", "b");
	ck_assert_int_eq(a.verb, CLI_FORK);
	ck_assert_ptr_null(a.value);
	PARSE_OK(&a, "fork", "b", "b2");
	ck_assert_str_eq(a.value, "b2");
	PARSE_BAD("fork", "b", "B2");
	PARSE_OK(&a, "snapshot", "b", "before upgrade");
	ck_assert_int_eq(a.verb, CLI_SNAPSHOT);
	ck_assert_str_eq(a.value, "before upgrade");
	PARSE_BAD("snapshot", "b", "two\nlines");
	PARSE_OK(&a, "snapshots");
	ck_assert_int_eq(a.verb, CLI_SNAPSHOTS);
	ck_assert_ptr_null(a.box);
	PARSE_OK(&a, "snapshots", "current");
	ck_assert_str_eq(a.box, "current");
	PARSE_OK(&a, "restore", "b", "s1");
	ck_assert_int_eq(a.verb, CLI_RESTORE);
	ck_assert_str_eq(a.value, "s1");
	PARSE_OK(&a, "restore", "b", "before upgrade"); /* a label */
	ck_assert_str_eq(a.value, "before upgrade");
	PARSE_BAD("restore", "b", "two\nlines");
	PARSE_BAD("restore", "b");
}
END_TEST

/* docker BOX [on|off] and new --docker/--no-docker: only on and off get
 * as far as the server. */
START_TEST(parse_docker)
{
	cli_args a;

	PARSE_OK(&a, "docker", "b");
	ck_assert_int_eq(a.verb, CLI_DOCKER);
	ck_assert_str_eq(a.box, "b");
	ck_assert_ptr_null(a.value);
	PARSE_OK(&a, "--json", "docker", "current");
	ck_assert_str_eq(a.box, "current");
	ck_assert(a.json);
	PARSE_OK(&a, "docker", "b", "on");
	ck_assert_str_eq(a.value, "on");
	PARSE_OK(&a, "-v", "docker", "b", "off");
	ck_assert_str_eq(a.value, "off");
	PARSE_BAD("docker");
	PARSE_BAD("docker", "b", "ON");
	PARSE_BAD("docker", "b", "yes");
	PARSE_BAD("docker", "b", "");
	PARSE_BAD("docker", "b", "on\n");
	PARSE_BAD("docker", "b", "on", "off");
	PARSE_BAD("docker", "Bad_Box");
	PARSE_BAD("docker", "b", "--docker");

	PARSE_OK(&a, "new", "--image", "docker");
	ck_assert_ptr_null(a.docker);
	PARSE_OK(&a, "new", "--docker", "--image", "docker");
	ck_assert_str_eq(a.docker, "on");
	PARSE_OK(&a, "new", "--no-docker", "--image", "docker");
	ck_assert_str_eq(a.docker, "off");
	PARSE_OK(&a, "new", "--docker", "--docker");
	ck_assert_str_eq(a.docker, "on");
	PARSE_BAD("new", "--docker", "--no-docker");
	PARSE_BAD("new", "--no-docker", "--docker");
	PARSE_BAD("new", "--docker=on");
	PARSE_BAD("exec", "--docker", "b", "--", "true");
}
END_TEST

START_TEST(parse_volume_token)
{
	cli_args a;

	PARSE_OK(&a, "volume", "create", "cache");
	ck_assert_int_eq(a.verb, CLI_VOLUME_CREATE);
	ck_assert_str_eq(a.value, "cache");
	PARSE_OK(&a, "volume", "ls");
	ck_assert_int_eq(a.verb, CLI_VOLUME_LS);
	PARSE_OK(&a, "volume", "rm", "cache");
	ck_assert_int_eq(a.verb, CLI_VOLUME_RM);
	PARSE_OK(&a, "volume", "attach", "current", "cache");
	ck_assert_int_eq(a.verb, CLI_VOLUME_ATTACH);
	ck_assert_str_eq(a.box, "current");
	ck_assert_str_eq(a.value, "cache");
	PARSE_OK(&a, "volume", "detach", "b", "cache");
	ck_assert_int_eq(a.verb, CLI_VOLUME_DETACH);
	PARSE_OK(&a, "volume", "export", "cache", "-o", "c.tar.gz");
	ck_assert_int_eq(a.verb, CLI_VOLUME_EXPORT);
	ck_assert_str_eq(a.output, "c.tar.gz");
	PARSE_BAD("volume");
	PARSE_BAD("volume", "grow", "x");
	PARSE_BAD("volume", "create");
	PARSE_BAD("volume", "create", "Bad");
	PARSE_BAD("volume", "attach", "b");
	PARSE_BAD("volume", "ls", "-o", "x");

	PARSE_OK(&a, "token", "ls", "--json");
	ck_assert_int_eq(a.verb, CLI_TOKEN_LS);
	ck_assert(a.json);
	PARSE_OK(&a, "token", "revoke", "abc123def456");
	ck_assert_int_eq(a.verb, CLI_TOKEN_REVOKE);
	ck_assert_str_eq(a.value, "abc123def456");
	PARSE_BAD("token");
	PARSE_BAD("token", "revoke");
	PARSE_BAD("token", "delete", "x");
}
END_TEST

START_TEST(parse_secret)
{
	cli_args a;
	char longest[CLI_SECRET_NAME_MAX + 2];

	PARSE_OK(&a, "secret", "set", "ANTHROPIC_API_KEY");
	ck_assert_int_eq(a.verb, CLI_SECRET_SET);
	ck_assert_str_eq(a.value, "ANTHROPIC_API_KEY");
	PARSE_OK(&a, "secret", "ls", "--json");
	ck_assert_int_eq(a.verb, CLI_SECRET_LS);
	ck_assert(a.json);
	PARSE_OK(&a, "secret", "rm", "_k1");
	ck_assert_int_eq(a.verb, CLI_SECRET_RM);
	memset(longest, 'A', CLI_SECRET_NAME_MAX);
	longest[CLI_SECRET_NAME_MAX] = '\0';
	PARSE_OK(&a, "secret", "set", longest);
	longest[CLI_SECRET_NAME_MAX] = 'A';
	longest[CLI_SECRET_NAME_MAX + 1] = '\0';
	PARSE_BAD("secret", "set", longest);
	/* A value is never an argument: it would be in ps. */
	PARSE_BAD("secret", "set", "K", "value");
	PARSE_BAD("secret", "set");
	PARSE_BAD("secret", "set", "");
	PARSE_BAD("secret", "set", "1K");
	PARSE_BAD("secret", "set", "a-b");
	PARSE_BAD("secret", "set", "a=b");
	PARSE_BAD("secret", "rm", "../x");
	PARSE_BAD("secret", "ls", "x");
	PARSE_BAD("secret", "get", "K");
}
END_TEST

START_TEST(secret_values)
{
	char *v = NULL;
	size_t len = 0;
	pd_error err = {0};
	FILE *f;

	f = fmemopen((char[]){"one\ntwo\n\n"}, 9, "r");
	ck_assert_int_eq(cli_secret_read_value("K", f, &v, &len, &err), 0);
	ck_assert_uint_eq(len, 8); /* one trailing newline dropped */
	ck_assert_mem_eq(v, "one\ntwo\n", 8);
	free(v);
	fclose(f);
	f = fmemopen((char[]){"a\0b"}, 3, "r");
	ck_assert_int_eq(cli_secret_read_value("K", f, &v, &len, &err), -EINVAL);
	fclose(f);
	char *big = malloc(CLI_SECRET_VALUE_MAX + 2);
	memset(big, 'a', CLI_SECRET_VALUE_MAX + 2);
	big[CLI_SECRET_VALUE_MAX] = '\n';
	f = fmemopen(big, CLI_SECRET_VALUE_MAX + 1, "r");
	ck_assert_int_eq(cli_secret_read_value("K", f, &v, &len, &err), 0);
	ck_assert_uint_eq(len, CLI_SECRET_VALUE_MAX);
	free(v);
	fclose(f);
	f = fmemopen(big, CLI_SECRET_VALUE_MAX + 2, "r");
	ck_assert_int_eq(cli_secret_read_value("K", f, &v, &len, &err), -EFBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "at most 65536 bytes"));
	fclose(f);
	free(big);
}
END_TEST

/* Runs the quoted line through /bin/sh and returns what printf saw, one
 * word a line. */
static char *through_sh(const char *line)
{
	_cleanup_free_ char *script = NULL;
	char buf[8192];
	size_t n = 0;
	int fds[2];

	ck_assert_int_ge(asprintf(&script, "printf '%%s\\n' %s", line), 0);
	ck_assert_int_eq(pipe(fds), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	for (ssize_t r; (r = read(fds[0], buf + n, sizeof(buf) - 1 - n)) > 0;)
		n += (size_t)r;
	close(fds[0]);
	int status;
	waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	buf[n] = '\0';
	return strdup(buf);
}

START_TEST(shell_quote_round_trip)
{
	static const char *const words[] = {
	    "plain",	 "with space",	"it's", "''",	"$HOME",      "`id`",
	    "a\"b",	 "back\\slash", "*",	"~",	"semi;colon", "new\nline",
	    "tab\there", "ünï",		"-lc",	"a=b",	"!bang",      "#hash",
	    "x&y",	 "(p)",		"{b}",	"100%", "",
	};
	size_t n = ELEMENTSOF(words);
	_cleanup_free_ char *line = cli_shell_join(words, n);
	_cleanup_free_ char *want = NULL, *got = NULL;
	size_t wl = 0;

	ck_assert_ptr_nonnull(line);
	_cleanup_fclose_ FILE *m = open_memstream(&want, &wl);
	for (size_t i = 0; i < n; i++)
		fprintf(m, "%s\n", words[i]);
	fclose(TAKE_PTR(m));
	got = through_sh(line);
	ck_assert_str_eq(got, want);
}
END_TEST

START_TEST(shell_quote_forms)
{
	char *q;

	q = cli_shell_quote("safe-word_1.2/x:y,z@h%+=");
	ck_assert_str_eq(q, "safe-word_1.2/x:y,z@h%+=");
	free(q);
	q = cli_shell_quote("it's");
	ck_assert_str_eq(q, "'it'\\''s'");
	free(q);
	q = cli_shell_quote("");
	ck_assert_str_eq(q, "''");
	free(q);
	/* one word is a shell line, sent as is */
	const char *one[] = {"ls | wc -l"};
	q = cli_shell_join(one, 1);
	ck_assert_str_eq(q, "ls | wc -l");
	free(q);
	const char *doc[] = {"bash", "-lc", "cd /config/project && npm test"};
	q = cli_shell_join(doc, 3);
	ck_assert_str_eq(q, "bash -lc 'cd /config/project && npm test'");
	free(q);
	ck_assert_ptr_null(cli_shell_join(doc, 0));
}
END_TEST

START_TEST(json_output)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(
	    cli_json_print(m, json_pack("{s:o}", "k", cli_json_str("a\"b\\c\n\t\x01 é"))), 0);
	/* a byte that is no UTF-8 becomes U+FFFD: the output stays JSON */
	json_t *o = json_object();
	ck_assert_int_eq(cli_json_set(o, "name", "a\xff_\xe2\x82"), 0);
	ck_assert_int_eq(cli_json_set(o, "none", NULL), 0);
	ck_assert_int_eq(cli_json_print(m, o), 0);
	ck_assert_int_eq(cli_json_print(m, NULL), -ENOMEM);
	fclose(m);
	ck_assert_str_eq(out,
			 "{\"k\":\"a\\\"b\\\\c\\n\\t\\u0001 é\"}\n"
			 "{\"name\":\"a\xef\xbf\xbd_\xef\xbf\xbd\xef\xbf\xbd\",\"none\":null}\n");

	ck_assert(cli_utf8_valid("plain é € 😀"));
	ck_assert(!cli_utf8_valid("\xc0\x80"));		/* overlong NUL */
	ck_assert(!cli_utf8_valid("\xe0\x80\xaf"));	/* overlong '/' */
	ck_assert(!cli_utf8_valid("\xed\xa0\x80"));	/* a surrogate */
	ck_assert(!cli_utf8_valid("\xf4\x90\x80\x80")); /* above U+10FFFF */
	ck_assert(!cli_utf8_valid("\xe2\x82"));		/* cut short */
	ck_assert(!cli_utf8_valid("\x80"));

	/* round trip through the error reader */
	_cleanup_free_ char *body = NULL, *back = NULL;
	const char *value = strchr(out, ':') + 1;
	ck_assert_int_ge(
	    asprintf(&body, "{\"error\":%.*s", (int)(strchr(out, '\n') - value), value), 0);
	back = cli_error_from_body(body, strlen(body));
	ck_assert_str_eq(back, "a\"b\\c\n\t\x01 é");
}
END_TEST

START_TEST(error_body)
{
	static const struct {
		const char *body, *want;
	} cases[] = {
	    {"{\"error\":\"no such box\",\"errno\":\"ENOENT\"}", "no such box"},
	    {" {\n \"errno\" : \"EBUSY\" ,\n \"error\" : \"box is running\" }\n", "box is running"},
	    {"{\"error\":\"q\\\"uote \\/ \\u00e9 \\ud83d\\ude00\",\"errno\":\"EINVAL\"}",
	     "q\"uote / é 😀"},
	    {"{\"entries\":3,\"ok\":true,\"x\":null,\"error\":\"e\"}", "e"},
	    {"{\"errno\":\"EIO\"}", NULL},
	    {"{\"error\":\"a\",\"nested\":{\"x\":1}}", "a"},
	    {"{\"error\":\"a\",\"error\":\"b\"}", NULL},
	    {"[\"error\"]", NULL},
	    {"{\"error\":[\"not a string\"]}", NULL},
	    {"{\"error\":\"unterminated}", NULL},
	    {"{\"error\":\"nul \\u0000\"}", NULL},
	    {"{\"error\":\"lone \\udc00\"}", NULL},
	    {"{\"error\":\"bad \\q\"}", NULL},
	    {"{\"error\":\"x\"} trailing", NULL},
	    {"{\"error\":bare}", NULL},
	    {"<html>502 Bad Gateway</html>", NULL},
	    {"", NULL},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *got =
		    cli_error_from_body(cases[i].body, strlen(cases[i].body));
		if (cases[i].want)
			ck_assert_msg(got && strcmp(got, cases[i].want) == 0, "case %zu: got %s", i,
				      got ? got : "NULL");
		else
			ck_assert_msg(got == NULL, "case %zu: got %s", i, got);
	}
	/* Any string member: the answer of a control write. */
	const char *answer = "{\"snapshot\":\"web-3\",\"restarted\":true,\"jobs_ended\":\"1 b\"}";
	_cleanup_free_ char *id = cli_json_get_string(answer, strlen(answer), "snapshot");
	_cleanup_free_ char *jobs = cli_json_get_string(answer, strlen(answer), "jobs_ended");
	ck_assert_str_eq(id, "web-3");
	ck_assert_str_eq(jobs, "1 b");
	ck_assert_ptr_null(
	    cli_json_get_string(answer, strlen(answer), "restarted")); /* not a string */
	ck_assert_ptr_null(cli_json_get_string(answer, strlen(answer), "before"));
	ck_assert_ptr_null(cli_json_get_string("", 0, "snapshot"));
	/* a body cut short inside a string */
	const char *cut = "{\"error\":\"abc\"}";
	ck_assert_ptr_null(cli_error_from_body(cut, 8));
	ck_assert_ptr_null(cli_error_from_body(NULL, 0));

	/* what the transfer result makes of them */
	pd_error err = {0};
	ck_assert_int_eq(
	    cli_transfer_result(CURLE_OK, "", 404, cases[0].body, strlen(cases[0].body), &err),
	    -ENOENT);
	ck_assert_str_eq(err.msg, "no such box");
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 502, "Bad Gateway\nmore", 16, &err),
			 -EIO);
	ck_assert_str_eq(err.msg, "Bad Gateway");
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 409, NULL, 0, &err), -EBUSY);
	ck_assert_str_eq(err.msg, "HTTP status 409");
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 204, NULL, 0, &err), 0);
	ck_assert_int_eq(
	    cli_transfer_result(CURLE_COULDNT_CONNECT, "Failed to connect", 0, NULL, 0, &err),
	    -ECONNREFUSED);
	ck_assert_str_eq(err.msg, "Failed to connect");
	ck_assert_int_eq(cli_status_errno(401), -EACCES);
	ck_assert_int_eq(cli_status_errno(400), -EINVAL);
	ck_assert_int_eq(cli_status_errno(507), -ENOSPC);
	ck_assert_int_eq(cli_status_errno(429), -EAGAIN);
}
END_TEST

START_TEST(url_paths)
{
	char *p = NULL;
	pd_error err = {0};
	cli_client c;

	ck_assert_int_eq(cli_tree_path("boxes/b/root", "/config/project", true, &p, &err), 0);
	ck_assert_str_eq(p, "boxes/b/root/config/project/");
	free(p);
	ck_assert_int_eq(cli_tree_path("boxes/b/root", "/a b/ü%/#?&", false, &p, &err), 0);
	ck_assert_str_eq(p, "boxes/b/root/a%20b/%C3%BC%25/%23%3F%26");
	free(p);
	ck_assert_int_eq(cli_tree_path("boxes/b/root", "//x///y/", false, &p, &err), 0);
	ck_assert_str_eq(p, "boxes/b/root/x/y");
	free(p);
	ck_assert_int_eq(cli_tree_path("boxes/b/root", "/", true, &p, &err), 0);
	ck_assert_str_eq(p, "boxes/b/root/");
	free(p);
	ck_assert_int_eq(cli_tree_path("boxes/b/root", "/a/../etc", false, &p, &err), -EINVAL);
	ck_assert_int_eq(cli_tree_path("boxes/b/root", "/a/./b", false, &p, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, ".."));

	char *e = cli_escape_segment("box.1-a_b~");
	ck_assert_str_eq(e, "box.1-a_b~");
	free(e);

	ck_assert_int_eq(cli_client_init(&c, "https://p.example/base//", "pd_t", &err), 0);
	ck_assert_str_eq(c.base, "https://p.example/base");
	ck_assert_ptr_null(c.unix_path);
	ck_assert_str_eq(c.auth, "Authorization: Bearer pd_t");
	p = cli_tree_url(&c, "boxes/?format=text");
	ck_assert_str_eq(p, "https://p.example/base/v1/tree/boxes/?format=text");
	free(p);
	cli_client_release(&c);

	ck_assert_int_eq(cli_client_init(&c, "unix:/run/paddock/paddock.sock", NULL, &err), 0);
	ck_assert_str_eq(c.base, "http://localhost");
	ck_assert_str_eq(c.unix_path, "/run/paddock/paddock.sock");
	ck_assert_ptr_null(c.auth);
	cli_client_release(&c);

	ck_assert_int_eq(cli_client_init(&c, "ftp://x", NULL, &err), -EINVAL);
	ck_assert_int_eq(cli_client_init(&c, "unix:", NULL, &err), -EINVAL);
	ck_assert_int_eq(cli_client_init(&c, "http://x", "a\nb", &err), -EINVAL);
}
END_TEST

static char tmpdir[64];

static void make_tmp(void)
{
	strcpy(tmpdir, "/tmp/check_cli.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(config_round_trip)
{
	_cleanup_free_ char *path = NULL;
	cli_config c = {0}, back = {0};
	pd_error err = {0};
	struct stat st;

	make_tmp();
	ck_assert_int_ge(asprintf(&path, "%s/sub/dir/config.ini", tmpdir), 0);
	/* a missing file is an empty config */
	ck_assert_int_eq(cli_config_read(path, &back, &err), 0);
	ck_assert_ptr_null(back.url);

	cli_config_set(&c.url, "https://p.example:8443");
	cli_config_set(&c.token, "pd_abcdefghijkl_SECRET-_x");
	cli_config_set(&c.current, "box-a1b2c3");
	umask(022);
	ck_assert_int_eq(cli_config_write(path, &c, &err), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(cli_config_read(path, &back, &err), 0);
	ck_assert_str_eq(back.url, c.url);
	ck_assert_str_eq(back.token, c.token);
	ck_assert_str_eq(back.current, c.current);
	ck_assert_ptr_null(back.cacert);
	cli_config_release(&back);

	/* cacert: saved in [server], read back */
	cli_config_set(&c.cacert, "/home/me/ca dir/paddock-ca.crt");
	ck_assert_int_eq(cli_config_write(path, &c, &err), 0);
	ck_assert_int_eq(cli_config_read(path, &back, &err), 0);
	ck_assert_str_eq(back.cacert, "/home/me/ca dir/paddock-ca.crt");
	ck_assert_str_eq(back.url, c.url);
	ck_assert_str_eq(back.token, c.token);
	cli_config_release(&back);
	/* one line only, like every value: nothing written */
	cli_config_set(&c.cacert, "/a\ntoken = evil");
	ck_assert_int_eq(cli_config_write(path, &c, &err), -EINVAL);
	ck_assert_int_eq(cli_config_read(path, &back, &err), 0);
	ck_assert_str_eq(back.cacert, "/home/me/ca dir/paddock-ca.crt");
	cli_config_release(&back);
	cli_config_set(&c.cacert, NULL);

	/* rewrite: still 0600, no temp files left */
	cli_config_set(&c.current, NULL);
	ck_assert_int_eq(cli_config_write(path, &c, &err), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(cli_config_read(path, &back, &err), 0);
	ck_assert_ptr_null(back.current);
	ck_assert_ptr_null(back.cacert);
	ck_assert_str_eq(back.url, c.url);
	cli_config_release(&back);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "test $(ls '%s/sub/dir' | wc -l) = 1", tmpdir);
	ck_assert_int_eq(system(cmd), 0);

	/* a value with a newline is refused and the file is unchanged */
	cli_config_set(&c.current, "a\nurl = evil");
	ck_assert_int_eq(cli_config_write(path, &c, &err), -EINVAL);
	ck_assert_int_eq(cli_config_read(path, &back, &err), 0);
	ck_assert_ptr_null(back.current);
	cli_config_release(&back);

	/* a hand-written file with unknown keys and comments */
	_cleanup_fclose_ FILE *f = fopen(path, "we");
	fputs("; mine\n[server]\nurl = http://h:1\nfuture = x\n[state]\ncurrent = web\n", f);
	fclose(TAKE_PTR(f));
	ck_assert_int_eq(cli_config_read(path, &back, &err), 0);
	ck_assert_str_eq(back.url, "http://h:1");
	ck_assert_ptr_null(back.token);
	ck_assert_str_eq(back.current, "web");
	cli_config_release(&back);

	f = fopen(path, "we");
	fputs("[server\nurl\n", f);
	fclose(TAKE_PTR(f));
	ck_assert_int_eq(cli_config_read(path, &back, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, ":1"));

	cli_config_release(&c);
	rm_tmp();
}
END_TEST

START_TEST(config_path_env)
{
	char *p = NULL;

	setenv("PADDOCK_CONFIG", "/x/p.ini", 1);
	ck_assert_int_eq(cli_config_path(&p), 0);
	ck_assert_str_eq(p, "/x/p.ini");
	free(p);
	unsetenv("PADDOCK_CONFIG");
	setenv("XDG_CONFIG_HOME", "/xdg", 1);
	ck_assert_int_eq(cli_config_path(&p), 0);
	ck_assert_str_eq(p, "/xdg/paddock/config.ini");
	free(p);
	unsetenv("XDG_CONFIG_HOME");
	setenv("HOME", "/home/u", 1);
	ck_assert_int_eq(cli_config_path(&p), 0);
	ck_assert_str_eq(p, "/home/u/.config/paddock/config.ini");
	free(p);
	unsetenv("HOME");
	ck_assert_int_eq(cli_config_path(&p), -ENOENT);
}
END_TEST

START_TEST(current_resolution)
{
	cli_config c = {0};
	pd_error err = {0};
	char *name = NULL;

	ck_assert_int_eq(cli_resolve_box("current", &c, &name, &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "current"));
	ck_assert_int_eq(cli_resolve_box("web", &c, &name, &err), 0);
	ck_assert_str_eq(name, "web");
	free(name);
	ck_assert_int_eq(cli_resolve_box("Web", &c, &name, &err), -EINVAL);
	ck_assert_int_eq(cli_resolve_box("../x", &c, &name, &err), -EINVAL);
	cli_config_set(&c.current, "box-q1w2e3");
	ck_assert_int_eq(cli_resolve_box("current", &c, &name, &err), 0);
	ck_assert_str_eq(name, "box-q1w2e3");
	free(name);
	cli_config_release(&c);
}
END_TEST

/* --cacert, else PADDOCK_CACERT, else the config's for its own URL only;
 * a client takes a readable file only; paths saved are absolute. */
START_TEST(cacert_resolution)
{
	cli_config c = {0};
	cli_client cl;
	pd_error err = {0};
	char *f = NULL, *p;

	unsetenv("PADDOCK_CACERT");
	ck_assert_int_eq(cli_resolve_cacert(NULL, &c, "https://a.test", &f, &err), 0);
	ck_assert_ptr_null(f);
	cli_config_set(&c.url, "https://a.test");
	cli_config_set(&c.cacert, "/etc/a-ca.crt");
	ck_assert_int_eq(cli_resolve_cacert(NULL, &c, "https://a.test", &f, &err), 0);
	ck_assert_str_eq(f, "/etc/a-ca.crt");
	free(f);
	/* another server: not the config's CA */
	ck_assert_int_eq(cli_resolve_cacert(NULL, &c, "https://b.test", &f, &err), 0);
	ck_assert_ptr_null(f);
	setenv("PADDOCK_CACERT", "/env/ca.crt", 1);
	ck_assert_int_eq(cli_resolve_cacert(NULL, &c, "https://a.test", &f, &err), 0);
	ck_assert_str_eq(f, "/env/ca.crt");
	free(f);
	ck_assert_int_eq(cli_resolve_cacert("/opt/ca.crt", &c, "https://b.test", &f, &err), 0);
	ck_assert_str_eq(f, "/opt/ca.crt");
	free(f);
	unsetenv("PADDOCK_CACERT");
	cli_config_release(&c);

	make_tmp();
	ck_assert_int_eq(cli_client_init(&cl, "https://a.test", NULL, &err), 0);
	ck_assert_int_eq(cli_client_set_cacert(&cl, "/nonexistent/ca.crt", &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/ca.crt"));
	ck_assert_ptr_null(cl.cacert);
	ck_assert_int_ge(asprintf(&p, "%s/ca.crt", tmpdir), 0);
	_cleanup_fclose_ FILE *w = fopen(p, "we");
	fputs("-----BEGIN CERTIFICATE-----\n", w);
	fclose(TAKE_PTR(w));
	ck_assert_int_eq(cli_client_set_cacert(&cl, p, &err), 0);
	ck_assert_str_eq(cl.cacert, p);
	ck_assert_int_eq(cli_client_set_cacert(&cl, NULL, &err), 0);
	ck_assert_ptr_null(cl.cacert);
	cli_client_release(&cl);
	free(p);
	rm_tmp();

	char cwd[4096];
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	p = cli_absolute_path("/abs/ca.crt");
	ck_assert_str_eq(p, "/abs/ca.crt");
	free(p);
	p = cli_absolute_path("rel/ca.crt");
	ck_assert_ptr_nonnull(p);
	ck_assert(strncmp(p, cwd, strlen(cwd)) == 0);
	ck_assert_str_eq(p + strlen(cwd), strcmp(cwd, "/") == 0 ? "rel/ca.crt" : "/rel/ca.crt");
	free(p);
}
END_TEST

START_TEST(server_resolution)
{
	cli_config c = {0};
	pd_error err = {0};
	char *url = NULL, *token = NULL;

	unsetenv("PADDOCK_URL");
	unsetenv("PADDOCK_TOKEN");
	ck_assert_int_eq(
	    cli_resolve_server(NULL, NULL, &c, "/nonexistent/sock", &url, &token, &err), -ENOENT);

	/* the local socket, when it exists and nothing else is named */
	make_tmp();
	char sock[128];
	snprintf(sock, sizeof(sock), "%s/paddock.sock", tmpdir);
	close(open(sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	ck_assert_int_eq(cli_resolve_server(NULL, NULL, &c, sock, &url, &token, &err), 0);
	ck_assert(strncmp(url, "unix:/", 6) == 0 && strcmp(url + 5, sock) == 0);
	ck_assert_ptr_null(token);
	free(url);
	rm_tmp();

	cli_config_set(&c.url, "https://a.example");
	cli_config_set(&c.token, "pd_config");
	ck_assert_int_eq(cli_resolve_server(NULL, NULL, &c, NULL, &url, &token, &err), 0);
	ck_assert_str_eq(url, "https://a.example");
	ck_assert_str_eq(token, "pd_config");
	free(url);
	free(token);

	/* another server never gets the config's token */
	ck_assert_int_eq(
	    cli_resolve_server("https://b.example", NULL, &c, NULL, &url, &token, &err), 0);
	ck_assert_str_eq(url, "https://b.example");
	ck_assert_ptr_null(token);
	free(url);

	setenv("PADDOCK_URL", "http://env:1", 1);
	setenv("PADDOCK_TOKEN", "pd_env", 1);
	ck_assert_int_eq(cli_resolve_server(NULL, NULL, &c, NULL, &url, &token, &err), 0);
	ck_assert_str_eq(url, "http://env:1");
	ck_assert_str_eq(token, "pd_env");
	free(url);
	free(token);
	ck_assert_int_eq(cli_resolve_server("http://opt:2", "pd_opt", &c, NULL, &url, &token, &err),
			 0);
	ck_assert_str_eq(url, "http://opt:2");
	ck_assert_str_eq(token, "pd_opt");
	free(url);
	free(token);
	cli_config_release(&c);
}
END_TEST

START_TEST(names_and_listings)
{
	char t;
	const char *name;

	for (int i = 0; i < 50; i++) {
		_cleanup_free_ char *n = cli_random_name("box-");
		ck_assert_uint_eq(strlen(n), 10);
		ck_assert(cli_name_valid(n));
	}
	ck_assert(cli_name_valid("a"));
	ck_assert(cli_name_valid("0.b_c-d"));
	ck_assert(!cli_name_valid(""));
	ck_assert(!cli_name_valid(".a"));
	ck_assert(!cli_name_valid("-a"));
	ck_assert(!cli_name_valid("aB"));
	char long_name[65];
	memset(long_name, 'a', 64);
	long_name[64] = '\0';
	ck_assert(!cli_name_valid(long_name));
	long_name[63] = '\0';
	ck_assert(cli_name_valid(long_name));

	ck_assert_int_eq(cli_parse_listing_line("d 0755 0 web", &t, &name), 0);
	ck_assert_int_eq(t, 'd');
	ck_assert_str_eq(name, "web");
	ck_assert_int_eq(cli_parse_listing_line("f 0644 1234 a file name", &t, &name), 0);
	ck_assert_int_eq(t, 'f');
	ck_assert_str_eq(name, "a file name");
	ck_assert_int_eq(cli_parse_listing_line("l 0777 0 last", &t, &name), 0);
	ck_assert_int_eq(cli_parse_listing_line("x 0755 0 web", &t, &name), -EINVAL);
	ck_assert_int_eq(cli_parse_listing_line("d 0755 web", &t, &name), -EINVAL);
	ck_assert_int_eq(cli_parse_listing_line("d 0755 0 ", &t, &name), -EINVAL);
	ck_assert_int_eq(cli_parse_listing_line("", &t, &name), -EINVAL);
}
END_TEST

/* ---- pull: a hostile stream, as a box (or a server) could craft it ---- */

/* One entry: type 'f' file (data), 'd' directory, 'l' symlink (data =
 * target), 'c' char device, 'p' FIFO, 'h' hard link (data = target). */
static void add(struct archive *a, const char *name, char type, const char *data, mode_t mode,
		uid_t uid)
{
	struct archive_entry *e = archive_entry_new();
	size_t len = type == 'f' ? strlen(data) : 0;

	archive_entry_set_pathname(e, name);
	archive_entry_set_perm(e, mode);
	archive_entry_set_uid(e, uid);
	archive_entry_set_gid(e, uid);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_entry_set_filetype(e, type == 'l'   ? AE_IFLNK
				      : type == 'c' ? AE_IFCHR
				      : type == 'p' ? AE_IFIFO
				      : type == 'd' ? AE_IFDIR
						    : AE_IFREG);
	if (type == 'l')
		archive_entry_set_symlink(e, data);
	if (type == 'h')
		archive_entry_set_hardlink(e, data);
	if (type == 'c')
		archive_entry_set_rdev(e, makedev(1, 3));
	ck_assert_int_ge(archive_write_header(a, e), ARCHIVE_WARN);
	if (len)
		ck_assert_int_eq(archive_write_data(a, data, len), (la_ssize_t)len);
	archive_entry_free(e);
}

static int hostile_stream(void)
{
	struct archive *a = archive_write_new();
	int fd = memfd_create("pull", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	add(a, "ok", 'f', "fine", 0644, 1234);
	add(a, "rootshell", 'f', "#!/bin/sh\n", 04755, 0);
	add(a, "sgid", 'f', "x", 02755, 1234);
	add(a, "etc", 'l', "/etc", 0777, 0);
	add(a, "up", 'l', "../..", 0777, 0);
	add(a, "null", 'c', "", 0666, 0);
	add(a, "fifo", 'p', "", 0600, 0);
	add(a, "shadow", 'h', "/etc/shadow", 0644, 0);
	add(a, "rel", 'l', "ok", 0777, 0);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

START_TEST(pull_writes_only_safe_entries)
{
	char dir[] = "/tmp/check_cli_pull.XXXXXX", path[256];
	const char *gone[] = {"etc", "up", "null", "fifo", "shadow"};
	cli_pull_opts opts = {0};
	pd_error err = {0};
	struct stat st;
	int fd, dfd, r;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fd = hostile_stream();
	r = cli_pull_extract(fd, dfd, &opts, &err);
	ck_assert_int_eq(r, -EPERM);
	ck_assert_str_eq(err.msg, "5 entries were skipped (see above); the other 4 were copied");
	for (size_t i = 0; i < ELEMENTSOF(gone); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, gone[i]);
		ck_assert_msg(lstat(path, &st) < 0, "%s was written", gone[i]);
	}
	snprintf(path, sizeof(path), "%s/rootshell", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(st.st_uid, geteuid()); /* never the archive's owner */
	snprintf(path, sizeof(path), "%s/sgid", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	snprintf(path, sizeof(path), "%s/rel", dir);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));

	/* --owners: the archive's owners, still no setuid bit. */
	if (geteuid() == 0) {
		char dir2[] = "/tmp/check_cli_pull.XXXXXX";
		int dfd2;

		ck_assert_ptr_nonnull(mkdtemp(dir2));
		dfd2 = open(dir2, O_PATH | O_DIRECTORY | O_CLOEXEC);
		opts.owners = true;
		ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
		ck_assert_int_eq(cli_pull_extract(fd, dfd2, &opts, &err), -EPERM);
		snprintf(path, sizeof(path), "%s/ok", dir2);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_int_eq(st.st_uid, 1234);
		snprintf(path, sizeof(path), "%s/rootshell", dir2);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_int_eq(st.st_uid, 0);
		ck_assert_int_eq(st.st_mode & 07777, 0755);
		close(dfd2);
		rm_rf(dir2);
	}
	close(fd);
	close(dfd);
	rm_rf(dir);
}
END_TEST

START_TEST(pull_refuses_a_bad_name_whole)
{
	char dir[] = "/tmp/check_cli_pull.XXXXXX", path[256];
	struct archive *a = archive_write_new();
	int fd = memfd_create("pull", MFD_CLOEXEC), dfd;
	cli_pull_opts opts = {0};
	pd_error err = {0};
	struct stat st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	add(a, "first", 'f', "1", 0644, 0);
	add(a, "../escape", 'f', "x", 0644, 0);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(cli_pull_extract(fd, dfd, &opts, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "entry 2 (../escape): path leaves the target directory");
	snprintf(path, sizeof(path), "%s/first", dir);
	ck_assert_int_lt(lstat(path, &st), 0); /* nothing of it was left */
	close(fd);
	close(dfd);
	rm_rf(dir);
}
END_TEST

/* A stream of entries {name, type, data, mode} (uid 1234), from a memfd
 * at its start; with `cut`, without its end-of-archive marker, as a daemon
 * that stopped between two entries would leave it. */
struct pent {
	const char *name;
	char type;
	const char *data;
	mode_t mode;
};

static int pull_stream(const struct pent *ents, size_t n, bool cut)
{
	struct archive *a = archive_write_new();
	int fd = memfd_create("pull", MFD_CLOEXEC);
	struct stat st;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_set_bytes_in_last_block(a, 1), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++)
		add(a, ents[i].name, ents[i].type, ents[i].data ? ents[i].data : "", ents[i].mode,
		    1234);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	if (cut) {
		ck_assert_int_eq(fstat(fd, &st), 0);
		ck_assert_int_eq(ftruncate(fd, st.st_size - 1024), 0); /* the two zero blocks */
	}
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static int pull_into(const char *dir, const struct pent *ents, size_t n, bool owners, pd_error *err)
{
	cli_pull_opts opts = {.owners = owners};
	int fd = pull_stream(ents, n, /* cut= */ false);
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r;

	ck_assert_int_ge(dfd, 0);
	r = cli_pull_extract(fd, dfd, &opts, err);
	close(fd);
	close(dfd);
	return r;
}

static int count_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static const char *at_dir(const char *dir, const char *rel)
{
	static char bufs[4][512];
	static unsigned next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, rel);
	return b;
}

/* Pull 1 leaves d -> e and e/ (the box had them). Then the box makes d a
 * real directory holding d/sub/L -> ../../../../../etc and adds
 * e/sub -> a/b/c/d2: read through d -> e, L would sit five levels deep;
 * merged through the link, it lands at e/sub/L and leads out. A pull never
 * merges through a link in the target: the directory replaces it. */
START_TEST(pull_never_merges_through_a_target_link)
{
	char base[] = "/tmp/check_cli_pull.XXXXXX", dir[128];
	const struct pent first[] = {{"d", 'l', "e", 0777}, {"e", 'd', NULL, 0755}};
	const struct pent second[] = {
	    {"d", 'd', NULL, 0755},
	    {"d/sub", 'd', NULL, 0755},
	    {"d/sub/L", 'l', "../../../../../etc", 0777},
	    {"e", 'd', NULL, 0755},
	    {"e/sub", 'l', "a/b/c/d2", 0777},
	};
	pd_error err = {0};
	struct stat st;
	int r;

	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/deep/er/T", base);
	ck_assert_int_eq(mkdir(at_dir(base, "deep"), 0755), 0);
	ck_assert_int_eq(mkdir(at_dir(base, "deep/er"), 0755), 0);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_msg(pull_into(dir, first, ELEMENTSOF(first), false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(lstat(at_dir(dir, "d"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));

	r = pull_into(dir, second, ELEMENTSOF(second), false, &err);
	ck_assert_msg(r == -EPERM, "pull 2: %d %s", r, err.msg);
	ck_assert_str_eq(err.msg, "1 entry was skipped (see above); the other 4 were copied");
	ck_assert_msg(!links_lead_out(dir, dir), "a link leads out of the target");
	ck_assert_int_eq(lstat(at_dir(dir, "d"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode)); /* the box's directory, not its old link */
	ck_assert_int_eq(lstat(at_dir(dir, "d/sub"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_lt(lstat(at_dir(dir, "d/sub/L"), &st), 0);
	ck_assert_int_lt(lstat(at_dir(dir, "e/sub/L"), &st), 0);
	ck_assert_int_eq(lstat(at_dir(dir, "e/sub"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	rm_rf(base);
}
END_TEST

/* Pulling into /usr/local must not make /usr/local/bin world-writable or
 * give it to the box's owner: directories that exist keep their mode and
 * owner; new ones get the archive's mode. */
START_TEST(pull_leaves_existing_directories_alone)
{
	char dir[] = "/tmp/check_cli_pull.XXXXXX";
	const struct pent ents[] = {
	    {"bin", 'd', NULL, 0777},
	    {"bin/tool", 'f', "x", 0755},
	    {"new", 'd', NULL, 0750},
	};
	bool root = geteuid() == 0;
	pd_error err = {0};
	struct stat st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(mkdir(at_dir(dir, "bin"), 0755), 0);
	ck_assert_int_eq(chmod(at_dir(dir, "bin"), 0755), 0);
	ck_assert_msg(pull_into(dir, ents, ELEMENTSOF(ents), root, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(at_dir(dir, "bin"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(st.st_uid, geteuid());
	ck_assert_int_eq(stat(at_dir(dir, "bin/tool"), &st), 0);
	if (root)
		ck_assert_int_eq(st.st_uid, 1234); /* --owners: its own entries */
	ck_assert_int_eq(stat(at_dir(dir, "new"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0750);
	rm_rf(dir);
}
END_TEST

/* A stream that ends between two entries, without the end-of-archive
 * marker, is cut short (the daemon failed midway): refused, nothing
 * written. */
START_TEST(pull_refuses_a_stream_without_its_end)
{
	char dir[] = "/tmp/check_cli_pull.XXXXXX";
	const struct pent ents[] = {{"a", 'f', "1", 0644}, {"b", 'd', NULL, 0755}};
	cli_pull_opts opts = {0};
	pd_error err = {0};
	int fd, dfd, r;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fd = pull_stream(ents, ELEMENTSOF(ents), /* cut= */ true);
	r = cli_pull_extract(fd, dfd, &opts, &err);
	ck_assert_msg(r == -EINVAL, "%d %s", r, err.msg);
	ck_assert_msg(strstr(err.msg, "no end-of-archive marker"), "%s", err.msg);
	ck_assert_int_eq(count_in(dir), 0);
	close(fd);
	/* The same stream whole is fine. */
	fd = pull_stream(ents, ELEMENTSOF(ents), /* cut= */ false);
	ck_assert_msg(cli_pull_extract(fd, dfd, &opts, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(count_in(dir), 2);
	close(fd);
	close(dfd);
	rm_rf(dir);
}
END_TEST

/* Names deeper than the extractor takes are skipped and named, like other
 * entries a pull does not write; the rest lands. */
START_TEST(pull_skips_entries_too_deep)
{
	char dir[] = "/tmp/check_cli_pull.XXXXXX", *deep = malloc(2 * 300 + 8);
	const struct pent *ents;
	cli_pull_opts opts = {0};
	pd_error err = {0};
	struct stat st;
	int fd, dfd, r;

	ck_assert_ptr_nonnull(deep);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	deep[0] = '\0';
	for (int i = 0; i < 300; i++)
		strcat(deep, "d/");
	strcat(deep, "f");
	ents = (const struct pent[]){{"ok", 'f', "fine", 0644}, {deep, 'f', "x", 0644}};
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fd = pull_stream(ents, 2, /* cut= */ false);
	r = cli_pull_extract(fd, dfd, &opts, &err);
	ck_assert_msg(r == -EPERM, "%d %s", r, err.msg);
	ck_assert_str_eq(err.msg, "1 entry was skipped (see above); the other 1 were copied");
	ck_assert_int_eq(stat(at_dir(dir, "ok"), &st), 0);
	ck_assert_int_lt(lstat(at_dir(dir, "d"), &st), 0);
	close(fd);
	close(dfd);
	free(deep);
	rm_rf(dir);
}
END_TEST

/* libarchive has no text for some failures (a gzip stream cut in its
 * trailer): the reason must still read as one. */
START_TEST(pull_error_always_has_a_text)
{
	char dir[] = "/tmp/check_cli_pull.XXXXXX";
	const struct pent ents[] = {{"a", 'f', "1", 0644}};
	struct archive *a = archive_write_new();
	int fd = memfd_create("gz", MFD_CLOEXEC), dfd;
	cli_pull_opts opts = {0};
	pd_error err = {0};
	struct stat st;
	int r;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	add(a, ents[0].name, ents[0].type, ents[0].data, ents[0].mode, 0);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(ftruncate(fd, st.st_size - 4), 0); /* into the gzip trailer */
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = cli_pull_extract(fd, dfd, &opts, &err);
	ck_assert_int_lt(r, 0);
	ck_assert_msg(!strstr(err.msg, "(null)") && err.msg[0], "\"%s\"", err.msg);
	fprintf(stderr, "# %s\n", err.msg);
	close(fd);
	close(dfd);
	rm_rf(dir);
}
END_TEST

/* desktop BOX [WORD…]: the subcommand words, the action words (which end
 * option parsing), the lone ',' between actions, and "-". */
START_TEST(parse_desktop)
{
	cli_args a;

	PARSE_OK(&a, "desktop", "web");
	ck_assert_int_eq(a.verb, CLI_DESKTOP);
	ck_assert_str_eq(a.box, "web");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_ON);
	ck_assert(!a.no_wait);
	PARSE_OK(&a, "desktop", "--no-wait", "current", "on");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_ON);
	ck_assert(a.no_wait);
	ck_assert_str_eq(a.box, "current");
	PARSE_OK(&a, "desktop", "web", "--no-wait");
	ck_assert(a.no_wait);

	/* subcommands keep parsing options after them */
	PARSE_OK(&a, "desktop", "web", "windows", "--json");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_WINDOWS);
	ck_assert(a.json);
	PARSE_OK(&a, "desktop", "web", "off");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_OFF);
	PARSE_OK(&a, "desktop", "web", "url");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_URL);
	PARSE_OK(&a, "--json", "desktop", "web", "cursor");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_CURSOR);
	PARSE_OK(&a, "desktop", "web", "geometry");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_GEOMETRY);
	ck_assert_ptr_null(a.value);
	PARSE_OK(&a, "desktop", "web", "geometry", "1024x768", "-v");
	ck_assert_str_eq(a.value, "1024x768");
	ck_assert(a.verbose);

	/* anything else is input; from the action on, words are the action's */
	PARSE_OK(&a, "desktop", "web", "click", "100", "200");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_INPUT);
	ck_assert_uint_eq(a.n_words, 3);
	ck_assert_str_eq(a.words[0], "click");
	ck_assert_str_eq(a.words[2], "200");
	cli_args_release(&a);
	PARSE_OK(&a, "desktop", "web", "type", "--json", "-q", "--", "x");
	ck_assert(!a.json && !a.quiet);
	ck_assert_uint_eq(a.n_words, 5);
	ck_assert_str_eq(a.words[1], "--json");
	ck_assert_str_eq(a.words[3], "--");
	cli_args_release(&a);
	PARSE_OK(&a, "--json", "desktop", "web", "--", "key", "ctrl+s", ",", "type", "hello world");
	ck_assert(a.json);
	ck_assert_uint_eq(a.n_words, 5);
	cli_args_release(&a);
	/* a word that only looks like a subcommand inside an action is text */
	PARSE_OK(&a, "desktop", "web", "type", "off");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_INPUT);
	ck_assert_uint_eq(a.n_words, 2);
	cli_args_release(&a);
	/* unknown actions are the server's to refuse */
	PARSE_OK(&a, "desktop", "web", "wiggle", "3");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_INPUT);
	cli_args_release(&a);
	PARSE_OK(&a, "desktop", "web", "-");
	ck_assert_int_eq(a.desktop_sub, CLI_DESKTOP_INPUT);
	ck_assert_str_eq(a.input, "-");
	ck_assert_uint_eq(a.n_words, 0);

	PARSE_BAD("desktop");
	PARSE_BAD("desktop", "B!");
	PARSE_BAD("desktop", "web", "off", "now");
	PARSE_BAD("desktop", "web", "windows", "x");
	PARSE_BAD("desktop", "web", "cursor", "1");
	PARSE_BAD("desktop", "web", "on", "x");
	PARSE_BAD("desktop", "web", "geometry", "1x1", "2x2");
	PARSE_BAD("desktop", "web", "geometry", "1x1\n");
	PARSE_BAD("desktop", "web", "off", "--no-wait");
	PARSE_BAD("desktop", "--no-wait", "web", "windows");
	PARSE_BAD("desktop", "web", "click", ",");
	PARSE_BAD("desktop", "web", ",", "click");
	PARSE_BAD("desktop", "web", "click", ",", ",", "click");
	PARSE_BAD("desktop", "web", "type", "a\nb");
	PARSE_BAD("desktop", "web", "type", "a\rb");
	PARSE_BAD("desktop", "web", "-", "click");
	PARSE_BAD("desktop", "web", "--output", "x");
	PARSE_BAD("ls", "--no-wait");

	PARSE_OK(&a, "screenshot", "web");
	ck_assert_int_eq(a.verb, CLI_SCREENSHOT);
	ck_assert_str_eq(a.box, "web");
	ck_assert_ptr_null(a.output);
	PARSE_OK(&a, "screenshot", "-o", "shot.png", "current");
	ck_assert_str_eq(a.output, "shot.png");
	ck_assert_str_eq(a.box, "current");
	PARSE_OK(&a, "screenshot", "web", "--output=-");
	ck_assert_str_eq(a.output, "-");
	PARSE_BAD("screenshot");
	PARSE_BAD("screenshot", "web", "more");
	PARSE_BAD("screenshot", "web", "-o");
	PARSE_BAD("screenshot", "web", "--no-wait");
	PARSE_BAD("screenshot", "../x");
}
END_TEST

/* The body written to desktop/input. */
static void check_body(const char *want, size_t n, const char *const *words)
{
	_cleanup_free_ char *body = NULL;
	size_t len = 0;
	pd_error err = {0};

	ck_assert_int_eq(cli_desktop_input_body(words, n, &body, &len, &err), 0);
	ck_assert_str_eq(body, want);
	ck_assert_uint_eq(len, strlen(want));
}

START_TEST(desktop_input_bodies)
{
	check_body("click 100 200\n", 3, (const char *[]){"click", "100", "200"});
	check_body("type hello  world\n", 2, (const char *[]){"type", "hello  world"});
	check_body("key ctrl+s\ntype a,b\nclick\n", 7,
		   (const char *[]){"key", "ctrl+s", ",", "type", "a,b", ",", "click"});
	check_body("type ,x\n", 2, (const char *[]){"type", ",x"});
	check_body("type é \"q\" $HOME\n", 4, (const char *[]){"type", "é", "\"q\"", "$HOME"});

	const struct {
		size_t n;
		const char *words[4];
		const char *why;
	} bad[] = {
	    {0, {NULL}, "empty"},
	    {1, {","}, "empty"},
	    {2, {"click", ","}, "action 2 is empty"},
	    {3, {"click", ",", ","}, "action 2 is empty"},
	    {2, {"type", "a\nb"}, "line break"},
	    {4, {"click", ",", "type", "x\r"}, "action 2 holds a line break"},
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char *body = NULL;
		size_t len = 7;
		pd_error err = {0};
		ck_assert_int_eq(cli_desktop_input_body(bad[i].words, bad[i].n, &body, &len, &err),
				 -EINVAL);
		ck_assert_ptr_null(body);
		ck_assert_uint_eq(len, 7);
		ck_assert_msg(strstr(err.msg, bad[i].why), "%zu: %s", i, err.msg);
	}
}
END_TEST

START_TEST(desktop_geometries)
{
	unsigned w, h;
	int x, y;
	bool pos;

	ck_assert_int_eq(cli_parse_geometry("1280x800", &w, &h, &x, &y, &pos), 0);
	ck_assert(w == 1280 && h == 800 && x == 0 && y == 0 && !pos);
	ck_assert_int_eq(cli_parse_geometry("300x200+400+300", &w, &h, &x, &y, &pos), 0);
	ck_assert(w == 300 && h == 200 && x == 400 && y == 300 && pos);
	ck_assert_int_eq(cli_parse_geometry("10x20-5+-7", &w, &h, &x, &y, &pos), 0);
	ck_assert(x == -5 && y == -7 && pos);
	ck_assert_int_eq(cli_parse_geometry("3840x2160", NULL, NULL, NULL, NULL, NULL), 0);

	const char *bad[] = {"",	  "x",		"1280",	     "1280x",
			     "x800",	  "0x800",	"1280x0",    "1280X800",
			     "1280x800+", "1280x800+1", "12 80x800", "100000x1",
			     "1x1+1+1+",  "-1x1",	"1x1++1+1",  "1280x800 "};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		ck_assert_msg(cli_parse_geometry(bad[i], &w, &h, &x, &y, &pos) == -EINVAL,
			      "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(desktop_window_lines)
{
	const struct {
		const char *line, *id, *title, *geometry;
	} cases[] = {
	    {"0x1a00003 Terminal - web 800x600+10+20", "0x1a00003", "Terminal - web",
	     "800x600+10+20"},
	    {"0x1a00003 800x600+10+20 Terminal - web", "0x1a00003", "Terminal - web",
	     "800x600+10+20"},
	    {"0x2\tpd-tk  probe \t300x200+400+300\n", "0x2", "pd-tk  probe", "300x200+400+300"},
	    {"0x2\t300x200+400+300\tpd-tk probe", "0x2", "pd-tk probe", "300x200+400+300"},
	    {"0x3 1280x800+0+0", "0x3", "", "1280x800+0+0"},
	    {"0x3", "0x3", "", NULL},
	    {"0x4 just a title", "0x4", "just a title", NULL},
	    {"0x5 100x100 is in the title 20x20+1+1", "0x5", "100x100 is in the title",
	     "20x20+1+1"},
	    {"  0x6   spaced   title   5x5+0+0  ", "0x6", "spaced   title", "5x5+0+0"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *line = strdup(cases[i].line);
		const char *id, *title, *geometry;
		ck_assert_int_eq(cli_parse_window_line(line, &id, &title, &geometry), 0);
		ck_assert_str_eq(id, cases[i].id);
		ck_assert_str_eq(title, cases[i].title);
		if (cases[i].geometry)
			ck_assert_str_eq(geometry, cases[i].geometry);
		else
			ck_assert_ptr_null(geometry);
	}
	char empty[] = "", spaces[] = "   \n";
	const char *id, *title, *geometry;
	ck_assert_int_eq(cli_parse_window_line(empty, &id, &title, &geometry), -EINVAL);
	ck_assert_int_eq(cli_parse_window_line(spaces, &id, &title, &geometry), -EINVAL);
}
END_TEST

START_TEST(screenshot_names_and_png_headers)
{
	setenv("TZ", "UTC", 1);
	tzset();
	_cleanup_free_ char *name =
	    cli_screenshot_name("web", 1764651156); /* 2025-12-02 04:52:36 */
	ck_assert_str_eq(name, "web-20251202-045236.png");

	/* a real PNG's first 24 bytes (1280x800, RGB) */
	unsigned char png[24] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
				 'I',  'H', 'D', 'R', 0,    0,	  5,	0,    0, 0, 3, 0x20};
	unsigned w = 0, h = 0;
	ck_assert_int_eq(cli_png_header(png, sizeof(png), &w, &h), 0);
	ck_assert(w == 1280 && h == 800);
	ck_assert_int_eq(cli_png_header(png, 23, &w, &h), -EINVAL);
	unsigned char bad[24];
	memcpy(bad, png, 24);
	bad[1] = 'p';
	ck_assert_int_eq(cli_png_header(bad, 24, NULL, NULL), -EINVAL);
	memcpy(bad, png, 24);
	memcpy(bad + 12, "IDAT", 4);
	ck_assert_int_eq(cli_png_header(bad, 24, NULL, NULL), -EINVAL);
	memcpy(bad, png, 24);
	memset(bad + 16, 0, 4); /* width 0 */
	ck_assert_int_eq(cli_png_header(bad, 24, NULL, NULL), -EINVAL);
	ck_assert_int_eq(cli_png_header((const unsigned char *)"{\"error\":\"x\"}", 13, NULL, NULL),
			 -EINVAL);
}
END_TEST

/* Statuses keep their errno; a 409 or a 5xx takes the errno its body names
 * (ENODEV: the desktop is off; ENOTSUP: no desktop in the image), a 5xx
 * stays EIO and a 409 EBUSY when the body names none. */
START_TEST(error_errno_from_body)
{
	pd_error err = {0};
	const char *off = "{\"error\":\"the desktop is off (echo on > "
			  "boxes/web/desktop/state)\",\"errno\":\"ENODEV\"}";

	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 500, off, strlen(off), &err), -ENODEV);
	ck_assert_str_eq(err.msg, "the desktop is off (echo on > boxes/web/desktop/state)");
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 409, off, strlen(off), &err), -ENODEV);
	ck_assert_str_eq(err.msg, "the desktop is off (echo on > boxes/web/desktop/state)");
	const char *nots = "{\"errno\":\"ENOTSUP\",\"error\":\"image debian has no desktop\"}";
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 500, nots, strlen(nots), &err),
			 -ENOTSUP);
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 501, nots, strlen(nots), &err),
			 -ENOTSUP);
	ck_assert_str_eq(err.msg, "image debian has no desktop");
	const char *exists = "{\"error\":\"box web exists\",\"errno\":\"EEXIST\"}";
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 409, exists, strlen(exists), &err),
			 -EEXIST);
	const char *busy = "{\"error\":\"box web is busy\"}";
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 409, busy, strlen(busy), &err), -EBUSY);
	ck_assert_str_eq(err.msg, "box web is busy");
	const char *odd = "{\"error\":\"strange\",\"errno\":\"EWHATEVER\"}";
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 500, odd, strlen(odd), &err), -EIO);
	ck_assert_str_eq(err.msg, "strange");
	ck_assert_int_eq(cli_transfer_result(CURLE_OK, "", 500, "oops", 4, &err), -EIO);
}
END_TEST

/* ports BOX [PORT [public]... | none]: the operands as the file's text. */
START_TEST(parse_ports)
{
	cli_args a;
	pd_error err = {0};
	char *body = NULL;

	PARSE_OK(&a, "ports", "b");
	ck_assert_int_eq(a.verb, CLI_PORTS);
	ck_assert_uint_eq(a.n_words, 0);
	PARSE_OK(&a, "ports", "b", "8080", "3000", "public", "5173");
	ck_assert_uint_eq(a.n_words, 4);
	ck_assert_int_eq(cli_ports_body(a.words, a.n_words, &body, &err), 0);
	ck_assert_str_eq(body, "8080\n3000 public\n5173\n");
	free(body);
	cli_args_release(&a);
	const char *none[] = {"none"}, *bad1[] = {"public"}, *bad2[] = {"80", "public", "public"},
		   *bad3[] = {"http"}, *bad4[] = {"123456"};
	ck_assert_int_eq(cli_ports_body(none, 1, &body, &err), 0);
	ck_assert_str_eq(body, "\n");
	free(body);
	ck_assert_int_eq(cli_ports_body(bad1, 1, &body, &err), -EINVAL);
	ck_assert_int_eq(cli_ports_body(bad2, 3, &body, &err), -EINVAL);
	ck_assert_int_eq(cli_ports_body(bad3, 1, &body, &err), -EINVAL);
	ck_assert(strstr(err.msg, "'http'") != NULL);
	ck_assert_int_eq(cli_ports_body(bad4, 1, &body, &err), -EINVAL);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("args");
	tcase_add_test(tc, parse_global_and_simple);
	tcase_add_test(tc, parse_login_new);
	tcase_add_test(tc, parse_push_pull);
	tcase_add_test(tc, parse_exec);
	tcase_add_test(tc, parse_settings_snapshots);
	tcase_add_test(tc, parse_docker);
	tcase_add_test(tc, parse_ports);
	tcase_add_test(tc, parse_volume_token);
	tcase_add_test(tc, parse_secret);
	tcase_add_test(tc, secret_values);
	tcase_add_test(tc, parse_desktop);
	suite_add_tcase(s, tc);

	tc = tcase_create("desktop");
	tcase_add_test(tc, desktop_input_bodies);
	tcase_add_test(tc, desktop_geometries);
	tcase_add_test(tc, desktop_window_lines);
	tcase_add_test(tc, screenshot_names_and_png_headers);
	tcase_add_test(tc, error_errno_from_body);
	suite_add_tcase(s, tc);

	tc = tcase_create("text");
	tcase_add_test(tc, shell_quote_round_trip);
	tcase_add_test(tc, shell_quote_forms);
	tcase_add_test(tc, json_output);
	tcase_add_test(tc, error_body);
	tcase_add_test(tc, url_paths);
	tcase_add_test(tc, names_and_listings);
	suite_add_tcase(s, tc);

	tc = tcase_create("config");
	tcase_add_test(tc, config_round_trip);
	tcase_add_test(tc, config_path_env);
	tcase_add_test(tc, current_resolution);
	tcase_add_test(tc, server_resolution);
	tcase_add_test(tc, cacert_resolution);
	suite_add_tcase(s, tc);

	tc = tcase_create("pull");
	tcase_add_test(tc, pull_writes_only_safe_entries);
	tcase_add_test(tc, pull_refuses_a_bad_name_whole);
	tcase_add_test(tc, pull_never_merges_through_a_target_link);
	tcase_add_test(tc, pull_leaves_existing_directories_alone);
	tcase_add_test(tc, pull_refuses_a_stream_without_its_end);
	tcase_add_test(tc, pull_skips_entries_too_deep);
	tcase_add_test(tc, pull_error_always_has_a_text);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(cli_suite());
}
