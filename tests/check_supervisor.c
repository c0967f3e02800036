/* check_supervisor.c - the pure parts of paddock-exec (supervisor.h): the
 * spec.json parser, crun's command line, output capping and its marker
 * lines, how crun's wait status becomes exit/status, and the atomic
 * records. Running real jobs is tests/integration/test-supervisor.sh. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-tap.h"
#include "box/supervisor.h"
#include "common/util.h"

#define FULL_SPEC                                                                                  \
	"{\"container\": \"web\", \"crun\": \"/usr/bin/crun\", \"crun_root\": \"/run/p/crun\","    \
	" \"private_ns\": true, \"user\": \"1000:1000\", \"cwd\": \"/config\","                    \
	" \"env\": [\"HOME=/config\", \"A=b=c\"], \"argv\": [\"/bin/sh\", \"-c\", \"echo hi\"],"   \
	" \"log_max\": 4096}"

static int parse(const char *text, struct sup_spec **ret, pd_error *err)
{
	return sup_spec_parse(text, strlen(text), ret, err);
}

/* Expects text to be refused with -EINVAL and a reason mentioning what. */
static void refused(const char *text, const char *what)
{
	struct sup_spec *spec = NULL;
	pd_error err = {0};

	ck_assert_int_eq(parse(text, &spec, &err), -EINVAL);
	ck_assert_ptr_null(spec);
	ck_assert_msg(strstr(err.msg, what), "reason [%s] lacks [%s]", err.msg, what);
}

static const char *minimal(void)
{
	return "{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\", \"argv\": "
	       "[\"/bin/true\"]}";
}

/* ---- an agent's stdout in lines ("events") ---- */

struct collected {
	char lines[8][64];
	size_t n;
};

static void collect(const char *line, size_t len, void *userdata)
{
	struct collected *c = userdata;
	ck_assert_uint_lt(c->n, 8);
	ck_assert_uint_lt(len, 64);
	memcpy(c->lines[c->n], line, len);
	c->lines[c->n++][len] = '\0';
}

START_TEST(lines_split)
{
	struct sup_lines l = {.max = 10};
	struct collected c = {0};

	/* Lines across chunks, an empty line, an overlong one skipped and
	 * counted, the last without its newline at the end. */
	sup_lines_feed(&l, "ab", strlen("ab"), collect, &c);
	sup_lines_feed(&l, "c\n\nde", strlen("c\n\nde"), collect, &c);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_str_eq(c.lines[0], "abc");
	ck_assert_str_eq(c.lines[1], "");
	sup_lines_feed(&l, "f\n0123456789", strlen("f\n0123456789"), collect, &c);
	sup_lines_feed(&l, "X too long\nok\ntail", strlen("X too long\nok\ntail"), collect, &c);
	ck_assert_uint_eq(l.skipped, 1);
	ck_assert_uint_eq(c.n, 4);
	ck_assert_str_eq(c.lines[2], "def");
	ck_assert_str_eq(c.lines[3], "ok");
	sup_lines_finish(&l, collect, &c);
	ck_assert_uint_eq(c.n, 5);
	ck_assert_str_eq(c.lines[4], "tail");
	/* Exactly max bytes is a line. */
	sup_lines_feed(&l, "0123456789\n", strlen("0123456789\n"), collect, &c);
	ck_assert_uint_eq(c.n, 6);
	ck_assert_str_eq(c.lines[5], "0123456789");
	sup_lines_release(&l);
}
END_TEST

START_TEST(spec_events)
{
	struct sup_spec *spec = NULL;
	pd_error err = {0};
	const char *base = "{\"container\": \"b\", \"crun\": \"/c\", \"crun_root\": \"/r\", "
			   "\"argv\": [\"x\"], \"events\": ";
	char text[256];

	snprintf(text, sizeof text, "%s\"claude\"}", base);
	ck_assert_int_eq(parse(text, &spec, &err), 0);
	ck_assert_str_eq(spec->events, "claude");
	sup_spec_free(spec);
	snprintf(text, sizeof text, "%s\"../x\"}", base);
	ck_assert_int_eq(parse(text, &spec, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "spec.json: \"events\" must be an agent id");
	snprintf(text, sizeof text, "%s7}", base);
	ck_assert_int_eq(parse(text, &spec, &err), -EINVAL);
}
END_TEST

START_TEST(spec_full)
{
	struct sup_spec *spec = NULL;
	pd_error err = {0};

	ck_assert_int_eq(parse(FULL_SPEC, &spec, &err), 0);
	ck_assert_str_eq(spec->container, "web");
	ck_assert_str_eq(spec->crun, "/usr/bin/crun");
	ck_assert_str_eq(spec->crun_root, "/run/p/crun");
	ck_assert(spec->private_ns);
	ck_assert_str_eq(spec->user, "1000:1000");
	ck_assert_str_eq(spec->cwd, "/config");
	ck_assert_str_eq(spec->env[0], "HOME=/config");
	ck_assert_str_eq(spec->env[1], "A=b=c");
	ck_assert_ptr_null(spec->env[2]);
	ck_assert_str_eq(spec->argv[2], "echo hi");
	ck_assert_ptr_null(spec->argv[3]);
	ck_assert_uint_eq(spec->log_max, 4096);
	ck_assert_ptr_null(sup_spec_free(spec));
}
END_TEST

START_TEST(spec_defaults)
{
	struct sup_spec *spec = NULL;
	pd_error err = {0};

	ck_assert_int_eq(parse(minimal(), &spec, &err), 0);
	ck_assert(!spec->private_ns);
	ck_assert_ptr_null(spec->user);
	ck_assert_ptr_null(spec->cwd);
	ck_assert_ptr_null(spec->env);
	ck_assert_uint_eq(spec->log_max, SUP_LOG_MAX_DEFAULT);
	sup_spec_free(spec);
	ck_assert_ptr_null(sup_spec_free(NULL));
}
END_TEST

START_TEST(spec_refused)
{
	refused("", "spec.json");
	refused("[]", "not an object");
	refused("{\"crun\": \"/c\", \"crun_root\": \"/r\", \"argv\": [\"x\"]}", "container");
	refused("{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\"}", "argv");
	refused("{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\", \"argv\": []}",
		"argv");
	refused("{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\", \"argv\": [1]}",
		"argv");
	refused("{\"container\": \"\", \"crun\": \"/c\", \"crun_root\": \"/r\", \"argv\": [\"x\"]}",
		"container");
	refused(
	    "{\"container\": \"x\", \"crun\": \"crun\", \"crun_root\": \"/r\", \"argv\": [\"x\"]}",
	    "crun");
	refused("{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"r\", \"argv\": [\"x\"]}",
		"crun_root");
	refused("{\"container\": 5, \"crun\": \"/c\", \"crun_root\": \"/r\", \"argv\": [\"x\"]}",
		"container");
}
END_TEST

/* minimal() with one more member. */
static void refused_with(const char *member, const char *what)
{
	char text[512];

	snprintf(text, sizeof text,
		 "{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\","
		 " \"argv\": [\"/bin/true\"], %s}",
		 member);
	refused(text, what);
}

START_TEST(spec_refused_optional)
{
	refused_with("\"cwd\": \"config\"", "cwd");
	refused_with("\"user\": \"1000\"", "user");
	refused_with("\"user\": \"a:b\"", "user");
	refused_with("\"user\": \"1:2:3\"", "user");
	refused_with("\"user\": \":1\"", "user");
	refused_with("\"user\": \"99999999999:0\"", "user");
	refused_with("\"env\": [\"NOEQUALS\"]", "env");
	refused_with("\"env\": [\"=x\"]", "env");
	refused_with("\"env\": \"A=b\"", "env");
	refused_with("\"private_ns\": 1", "private_ns");
	refused_with("\"log_max\": 0", "log_max");
	refused_with("\"log_max\": -5", "log_max");
	refused_with("\"log_max\": \"64M\"", "log_max");
}
END_TEST

START_TEST(spec_nul_and_duplicates)
{
	refused("{\"container\": \"x\\u0000y\", \"crun\": \"/c\", \"crun_root\": \"/r\","
		" \"argv\": [\"x\"]}",
		"NUL");
	refused("{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\","
		" \"argv\": [\"a\\u0000b\"]}",
		"NUL");
	refused("{\"container\": \"x\", \"container\": \"y\", \"crun\": \"/c\","
		" \"crun_root\": \"/r\", \"argv\": [\"x\"]}",
		"duplicate");
}
END_TEST

START_TEST(spec_not_nul_terminated)
{
	const char *text = minimal();
	size_t len = strlen(text);
	char *copy = malloc(len);
	struct sup_spec *spec = NULL;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, text, len);
	ck_assert_int_eq(sup_spec_parse(copy, len, &spec, NULL), 0);
	sup_spec_free(spec);
	free(copy);
}
END_TEST

START_TEST(argv_full)
{
	static const char *const want[] = {"/usr/bin/crun",
					   "--root=/run/p/crun",
					   "--log=file:/jobs/7/crun.log",
					   "exec",
					   "--pid-file=/jobs/7/pid",
					   "--user=1000:1000",
					   "--cwd=/config",
					   "--env=HOME=/config",
					   "--env=A=b=c",
					   "--",
					   "web",
					   "/bin/sh",
					   "-c",
					   "echo hi",
					   NULL};
	struct sup_spec *spec = NULL;
	char **v = NULL;
	size_t i;

	ck_assert_int_eq(parse(FULL_SPEC, &spec, NULL), 0);
	ck_assert_int_eq(sup_crun_argv(spec, "/jobs/7", &v), 0);
	for (i = 0; want[i]; i++) {
		ck_assert_ptr_nonnull(v[i]);
		ck_assert_str_eq(v[i], want[i]);
	}
	ck_assert_ptr_null(v[i]);
	ck_assert_ptr_null(sup_strv_free(v));
	sup_spec_free(spec);
}
END_TEST

START_TEST(argv_minimal)
{
	static const char *const want[] = {"/c",   "--root=/r",		"--log=file:/j/crun.log",
					   "exec", "--pid-file=/j/pid", "--",
					   "x",	   "/bin/true",		NULL};
	struct sup_spec *spec = NULL;
	char **v = NULL;
	size_t i;

	ck_assert_int_eq(parse(minimal(), &spec, NULL), 0);
	ck_assert_int_eq(sup_crun_argv(spec, "/j", &v), 0);
	for (i = 0; want[i]; i++)
		ck_assert_str_eq(v[i], want[i]);
	ck_assert_ptr_null(v[i]);
	sup_strv_free(v);
	sup_spec_free(spec);
}
END_TEST

START_TEST(cap_keep)
{
	ck_assert_uint_eq(sup_cap_keep(0, 100, 10), 10);
	ck_assert_uint_eq(sup_cap_keep(90, 100, 10), 10);
	ck_assert_uint_eq(sup_cap_keep(95, 100, 10), 5);
	ck_assert_uint_eq(sup_cap_keep(100, 100, 10), 0);
	ck_assert_uint_eq(sup_cap_keep(150, 100, 10), 0);
	ck_assert_uint_eq(sup_cap_keep(0, 100, 0), 0);
	ck_assert_uint_eq(sup_cap_keep(0, UINT64_MAX, SIZE_MAX), SIZE_MAX);
}
END_TEST

START_TEST(hold)
{
	/* No hold: nothing read, or a batch's worth. */
	ck_assert_uint_eq(sup_hold_usec(0, 5), 0);
	ck_assert_uint_eq(sup_hold_usec(SUP_STREAM_BATCH, 5), 0);
	ck_assert_uint_eq(sup_hold_usec(SUP_STREAM_BATCH + 1, ULLONG_MAX), 0);
	/* The first read after a quiet spell (or ever): the longest hold. */
	ck_assert_uint_eq(sup_hold_usec(1, ULLONG_MAX), SUP_STREAM_HOLD_USEC);
	ck_assert_uint_eq(sup_hold_usec(4096, SUP_STREAM_HOLD_USEC), SUP_STREAM_HOLD_USEC);
	/* A slow writer: at most the longest hold. */
	ck_assert_uint_eq(sup_hold_usec(4096, SUP_STREAM_HOLD_USEC - 1), SUP_STREAM_HOLD_USEC);
	/* The time to write a batch at the rate seen: half a batch in 100 us. */
	ck_assert_uint_eq(sup_hold_usec(SUP_STREAM_BATCH / 2, 100), 200);
	/* A fast writer: too short a hold to be worth a timer. */
	ck_assert_uint_eq(sup_hold_usec(SUP_STREAM_BATCH / 2, 5), 0);
	ck_assert_uint_eq(sup_hold_usec(SUP_STREAM_BATCH / 2, SUP_STREAM_HOLD_MIN_USEC / 2),
			  SUP_STREAM_HOLD_MIN_USEC);
}
END_TEST

/* A stream file in memory, and what it holds. */
static struct sup_log mem_log(const char *name, uint64_t max)
{
	int fd = memfd_create("log", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	return (struct sup_log){.fd = fd, .name = name, .max = max};
}

static char *contents(const struct sup_log *log)
{
	static char buf[4096];
	ssize_t n = pread(log->fd, buf, sizeof buf - 1, 0);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return buf;
}

START_TEST(log_under_cap)
{
	struct sup_log log = mem_log("stdout", 10);

	sup_log_append(&log, "hello", 5);
	sup_log_append(&log, "world", 5);
	sup_log_finish(&log);
	ck_assert_str_eq(contents(&log), "helloworld");
	ck_assert_uint_eq(log.stored, 10);
	ck_assert_uint_eq(log.dropped, 0);
	ck_assert(!log.marked);
	close(log.fd);
}
END_TEST

START_TEST(log_over_cap_in_one_chunk)
{
	struct sup_log log = mem_log("stdout", 4);

	sup_log_append(&log, "abcdefgh", 8);
	sup_log_finish(&log);
	ck_assert_str_eq(contents(&log), "abcd\n[paddock: stdout capped at 4 bytes; the rest is "
					 "dropped]\n[paddock: 4 bytes dropped]\n");
	ck_assert_uint_eq(log.stored, 4);
	ck_assert_uint_eq(log.dropped, 4);
	close(log.fd);
}
END_TEST

START_TEST(log_marker_once)
{
	struct sup_log log = mem_log("output", 3);

	sup_log_append(&log, "ab", 2);
	sup_log_append(&log, "cd", 2);
	sup_log_append(&log, "ef", 2);
	sup_log_append(&log, "", 0);
	sup_log_append(&log, "g", 1);
	sup_log_finish(&log);
	ck_assert_str_eq(contents(&log), "abc\n[paddock: output capped at 3 bytes; the rest is "
					 "dropped]\n[paddock: 4 bytes dropped]\n");
	close(log.fd);
}
END_TEST

START_TEST(log_binary)
{
	struct sup_log log = mem_log("stdout", 100);
	const char bin[] = {'\0', '\xff', '\n', '\0', 'x'};
	char back[8];

	sup_log_append(&log, bin, sizeof bin);
	ck_assert_int_eq(pread(log.fd, back, sizeof back, 0), (ssize_t)sizeof bin);
	ck_assert_mem_eq(back, bin, sizeof bin);
	close(log.fd);
}
END_TEST

START_TEST(log_note_starts_a_line)
{
	struct sup_log log = mem_log("stderr", 100);

	sup_log_note(&log, "[first]\n");
	sup_log_append(&log, "partial", 7);
	sup_log_note(&log, "[paddock: x]\n");
	sup_log_append(&log, "line\n", 5);
	sup_log_note(&log, "[paddock: y]\n");
	ck_assert_str_eq(contents(&log), "[first]\npartial\n[paddock: x]\nline\n[paddock: y]\n");
	/* Notes do not count against the cap. */
	ck_assert_uint_eq(log.stored, 12);
	close(log.fd);
}
END_TEST

START_TEST(log_write_error_counts_as_dropped)
{
	struct sup_log log = {.fd = -1, .name = "stdout", .max = 100};

	sup_log_append(&log, "abc", 3);
	ck_assert_int_eq(log.error, -EBADF);
	ck_assert_uint_eq(log.dropped, 3);
	ck_assert_uint_eq(log.stored, 0);
}
END_TEST

static int exited(int code)
{
	return W_EXITCODE(code, 0);
}

static int signaled(int sig)
{
	return W_EXITCODE(0, sig);
}

static void check_status(int wstatus, bool started, const char *want_status, int want_exit)
{
	struct sup_result res = sup_result_from_wait(wstatus, started);
	char buf[32];

	sup_format_status(res, buf, sizeof buf);
	ck_assert_str_eq(buf, want_status);
	ck_assert_int_eq(sup_result_exit_code(res), want_exit);
}

/* The exec server's request: the strings of exec-proto.h, in order. */
START_TEST(exec_request)
{
	struct sup_spec *spec = NULL;
	pd_error err = {0};
	char *req = NULL;
	size_t len = 0;
	static const char want[] = "paddock-exec/1\0"
				   "1000\0"
				   "1000\0"
				   "/config\0"
				   "3\0"
				   "/bin/sh\0-c\0echo hi\0"
				   "HOME=/config\0A=b=c";

	ck_assert_int_eq(parse(FULL_SPEC, &spec, &err), 0);
	ck_assert_int_eq(sup_exec_request(spec, &req, &len), 0);
	ck_assert_uint_eq(len, sizeof want);
	ck_assert(memcmp(req, want, sizeof want) == 0);
	free(req);
	sup_spec_free(spec);

	/* Defaults: root, /, and a PATH alone. */
	ck_assert_int_eq(parse(minimal(), &spec, &err), 0);
	ck_assert_int_eq(sup_exec_request(spec, &req, &len), 0);
	static const char want_min[] = "paddock-exec/1\0"
				       "0\0"
				       "0\0"
				       "/\0"
				       "1\0"
				       "/bin/true\0PATH=";
	ck_assert_uint_gt(len, sizeof want_min);
	ck_assert(memcmp(req, want_min, sizeof want_min - 1) == 0);
	ck_assert_int_eq(req[len - 1], '\0');
	free(req);
	sup_spec_free(spec);
}
END_TEST

/* A request larger than the server takes is refused before it is sent. */
START_TEST(exec_request_too_big)
{
	struct sup_spec *spec = NULL;
	pd_error err = {0};
	char *req = NULL, *text, *big;
	size_t len = 0, n = 600 * 1024;

	big = malloc(n + 1);
	memset(big, 'a', n);
	big[n] = '\0';
	ck_assert_int_ge(asprintf(&text,
				  "{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\","
				  " \"argv\": [\"/bin/sh\", \"%s\"]}",
				  big),
			 0);
	ck_assert_int_eq(parse(text, &spec, &err), 0);
	ck_assert_int_eq(sup_exec_request(spec, &req, &len), -E2BIG);
	ck_assert_ptr_null(req);
	sup_spec_free(spec);
	free(text);
	free(big);
}
END_TEST

/* The server reports real wait statuses: no 128+N guessing. */
START_TEST(server_results)
{
	struct sup_result r;

	r = sup_result_from_server(W_EXITCODE(3, 0));
	ck_assert(!r.killed);
	ck_assert_int_eq(r.code, 3);
	r = sup_result_from_server(W_EXITCODE(137, 0));
	ck_assert(!r.killed);
	ck_assert_int_eq(sup_result_exit_code(r), 137);
	r = sup_result_from_server(SIGKILL);
	ck_assert(r.killed);
	ck_assert_int_eq(r.code, SIGKILL);
	ck_assert_int_eq(sup_result_exit_code(r), 137);
}
END_TEST

START_TEST(spec_server)
{
	struct sup_spec *spec = NULL;
	pd_error err = {0};

	ck_assert_int_eq(parse("{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\","
			       " \"server\": \"/run/p/exec/x\", \"argv\": [\"/bin/true\"]}",
			       &spec, &err),
			 0);
	ck_assert_str_eq(spec->server, "/run/p/exec/x");
	sup_spec_free(spec);
	refused("{\"container\": \"x\", \"crun\": \"/c\", \"crun_root\": \"/r\","
		" \"server\": \"exec/x\", \"argv\": [\"/bin/true\"]}",
		"server");
}
END_TEST

START_TEST(results)
{
	check_status(exited(0), true, "exited 0\n", 0);
	check_status(exited(3), true, "exited 3\n", 3);
	check_status(exited(127), true, "exited 127\n", 127);
	check_status(exited(128), true, "exited 128\n", 128);
	/* crun exec reports a command killed by N as 128+N. */
	check_status(exited(128 + SIGHUP), true, "killed SIGHUP\n", 129);
	check_status(exited(128 + SIGKILL), true, "killed SIGKILL\n", 137);
	check_status(exited(128 + SIGTERM), true, "killed SIGTERM\n", 143);
	check_status(exited(128 + 40), true, "killed SIG40\n", 168);
	check_status(exited(128 + 64), true, "killed SIG64\n", 192);
	check_status(exited(193), true, "exited 193\n", 193);
	check_status(exited(255), true, "exited 255\n", 255);
	/* crun itself killed. */
	check_status(signaled(SIGKILL), true, "killed SIGKILL\n", 137);
	check_status(signaled(SIGSEGV), false, "killed SIGSEGV\n", 139);
	/* Never started: crun failed before the command ran. */
	check_status(exited(1), false, "exited 127\n", 127);
	check_status(exited(255), false, "exited 127\n", 127);
}
END_TEST

START_TEST(signal_names)
{
	char buf[16];

	sup_signal_name(SIGINT, buf, sizeof buf);
	ck_assert_str_eq(buf, "SIGINT");
	sup_signal_name(SIGUSR2, buf, sizeof buf);
	ck_assert_str_eq(buf, "SIGUSR2");
	sup_signal_name(99, buf, sizeof buf);
	ck_assert_str_eq(buf, "SIG99");
}
END_TEST

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/check_supervisor.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	rm_rf(tmpdir);
}

START_TEST(records)
{
	int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *text = NULL;
	struct stat st;

	ck_assert_int_ge(dirfd, 0);
	umask(022);
	ck_assert_int_eq(sup_write_record(dirfd, "status", "running\n"), 0);
	ck_assert_int_eq(sup_write_record(dirfd, "status", "exited 0\n"), 0);
	ck_assert_int_eq(read_file_at(dirfd, "status", 64, &text, NULL), 0);
	ck_assert_str_eq(text, "exited 0\n");
	free(text);
	ck_assert_int_eq(fstatat(dirfd, "status", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0644);
	/* The temporary file is gone. */
	ck_assert_int_lt(fstatat(dirfd, ".status.tmp", &st, 0), 0);
	ck_assert_int_eq(sup_write_record(dirfd, "nodir/status", "x"), -ENOENT);
	close(dirfd);
}
END_TEST

static Suite *supervisor_suite(void)
{
	Suite *s = suite_create("supervisor");
	TCase *tc;

	tc = tcase_create("spec");
	tcase_add_test(tc, spec_full);
	tcase_add_test(tc, spec_events);
	tcase_add_test(tc, lines_split);
	tcase_add_test(tc, spec_defaults);
	tcase_add_test(tc, spec_refused);
	tcase_add_test(tc, spec_refused_optional);
	tcase_add_test(tc, spec_nul_and_duplicates);
	tcase_add_test(tc, spec_not_nul_terminated);
	tcase_add_test(tc, argv_full);
	tcase_add_test(tc, argv_minimal);
	tcase_add_test(tc, spec_server);
	tcase_add_test(tc, exec_request);
	tcase_add_test(tc, exec_request_too_big);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, cap_keep);
	tcase_add_test(tc, hold);
	tcase_add_test(tc, log_under_cap);
	tcase_add_test(tc, log_over_cap_in_one_chunk);
	tcase_add_test(tc, log_marker_once);
	tcase_add_test(tc, log_binary);
	tcase_add_test(tc, log_note_starts_a_line);
	tcase_add_test(tc, log_write_error_counts_as_dropped);
	suite_add_tcase(s, tc);

	tc = tcase_create("results");
	tcase_add_test(tc, results);
	tcase_add_test(tc, server_results);
	tcase_add_test(tc, signal_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("records");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, records);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(supervisor_suite());
}
