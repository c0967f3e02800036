/* check_config.c - defaults, a full file, types, and every refused input with
 * its "FILE:LINE: reason". */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-tap.h"
#include "common/config.h"

#ifdef HAVE_CONFIG_H
#include "autoconfig.h"
#endif
#ifndef CRUN_PATH
#define CRUN_PATH "/usr/bin/crun"
#endif

#define GiB (1ULL << 30)

/* Each test runs in its own process (fork mode) with a fresh directory. */
static char tmpdir[64];
static char ini_path[128];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_config.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(ini_path, sizeof(ini_path), "%s/paddock.ini", tmpdir);
}

static void teardown(void)
{
	rm_rf(tmpdir);
}

static void write_ini_len(const char *text, size_t len)
{
	int fd = open(ini_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, text, len), 0);
	close(fd);
}

static void write_ini(const char *text)
{
	write_ini_len(text, strlen(text));
}

static int load_text(const char *text, struct pd_config *c, pd_error *err)
{
	write_ini(text);
	return config_load(ini_path, c, err);
}

static void assert_released(const struct pd_config *c)
{
	ck_assert_ptr_null(c->path);
	ck_assert_ptr_null(c->mount);
	ck_assert_ptr_null(c->data);
	ck_assert_ptr_null(c->run);
	ck_assert_ptr_null(c->crun);
	ck_assert_ptr_null(c->cgroup_parent);
	ck_assert_ptr_null(c->default_image);
	ck_assert_ptr_null(c->default_type);
	ck_assert_uint_eq(c->n_types, 0);
}

/* Loads text, expects code and the message "INI:line: reason" exactly. */
static void expect_error_code(const char *text, int code, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void expect_error_code(const char *text, int code, int line, const char *fmt, ...)
{
	struct pd_config c;
	pd_error err;
	char reason[PD_ERROR_MAX], want[PD_ERROR_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	snprintf(want, sizeof(want), "%s:%d: %s", ini_path, line, reason);

	pd_error_clear(&err);
	memset(&c, 0xaa, sizeof(c));
	ck_assert_int_eq(load_text(text, &c, &err), code);
	ck_assert_int_eq(err.code, code);
	ck_assert_str_eq(err.msg, want);
	assert_released(&c);
}

#define expect_error(text, line, ...) expect_error_code(text, -EINVAL, line, __VA_ARGS__)

static void assert_type(const struct pd_config *c, const char *name, unsigned millicpus,
			unsigned long long memory, unsigned long long pids, unsigned long long disk)
{
	const struct box_type *t = config_find_type(c, name);

	ck_assert_msg(t != NULL, "type %s missing", name);
	ck_assert_str_eq(t->name, name);
	ck_assert_uint_eq(t->millicpus, millicpus);
	ck_assert_uint_eq(t->memory, memory);
	ck_assert_uint_eq(t->pids, pids);
	ck_assert_uint_eq(t->disk, disk);
}

static void assert_defaults(const struct pd_config *c)
{
	ck_assert_str_eq(c->mount, "/paddock");
	ck_assert_str_eq(c->data, "/var/lib/paddock");
	ck_assert_str_eq(c->run, "/run/paddock");
	ck_assert_str_eq(c->crun, CRUN_PATH);
	ck_assert_str_eq(c->cgroup_parent, "paddock");
	ck_assert_str_eq(c->default_image, "debian");
	ck_assert_str_eq(c->default_type, "small");
	ck_assert_int_eq(c->default_ttl, -1);
	ck_assert_uint_eq(c->stop_grace, 10);
	ck_assert_uint_eq(c->layer_merge_depth, 16);
	ck_assert(c->network);
	ck_assert(c->seccomp);
	ck_assert_str_eq(c->lxcfs, "/usr/bin/lxcfs");
	ck_assert_str_eq(c->novnc_dir, "/usr/share/novnc");
	ck_assert_str_eq(c->bridge, "paddock0");
	ck_assert_str_eq(c->nft_table, "paddock");
	ck_assert_uint_eq(c->subnet, 0x0a580000);
	ck_assert_uint_eq(c->subnet_prefix, 16);
	ck_assert_uint_eq(c->dns_upstream, 0); /* auto */
	ck_assert_uint_eq(c->n_types, 3);
	assert_type(c, "small", 1000, 2 * GiB, 4096, 10 * GiB);
	assert_type(c, "medium", 2000, 4 * GiB, 4096, 10 * GiB);
	assert_type(c, "large", 4000, 8 * GiB, 4096, 10 * GiB);
}

/* ---- agents ---- */

START_TEST(test_agent_sections)
{
	struct pd_config c;
	pd_error err = {0};
	const struct agent_config *a;
	char host[CONFIG_HOST_MAX + 1];

	ck_assert_int_eq(load_text("[paddock]\nagent = codex\n"
				   "[agent claude]\nbase_url = http://Model.Test:8080/v1\n"
				   "model = claude-x-1\n"
				   "[agent codex]\nmodel = gpt-9\n",
				   &c, &err),
			 0);
	ck_assert_str_eq(c.agent, "codex");
	ck_assert_uint_eq(c.n_agents, 2);
	a = config_find_agent(&c, "claude");
	ck_assert_ptr_nonnull(a);
	ck_assert_str_eq(a->base_url, "http://Model.Test:8080/v1");
	ck_assert_str_eq(a->model, "claude-x-1");
	ck_assert_int_eq(config_url_host(a->base_url, host, sizeof host), 0);
	ck_assert_str_eq(host, "model.test");
	a = config_find_agent(&c, "codex");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_null(a->base_url);
	ck_assert_str_eq(a->model, "gpt-9");
	ck_assert_ptr_null(config_find_agent(&c, "pi"));
	config_release(&c);

	/* Without any: no default agent, no sections. */
	ck_assert_int_eq(load_text("[paddock]\n", &c, &err), 0);
	ck_assert_ptr_null(c.agent);
	ck_assert_uint_eq(c.n_agents, 0);
	config_release(&c);
}
END_TEST

START_TEST(test_url_host)
{
	static const struct {
		const char *url, *host;
	} good[] = {
	    {"https://api.anthropic.com", "api.anthropic.com"},
	    {"http://10.0.0.5:8080/v1/", "10.0.0.5"},
	    {"http://proxy:3128", "proxy"},
	    {"https://A.B.example?", NULL}, /* a query: refused */
	};
	static const char *const bad[] = {
	    "ftp://x.test",
	    "http://",
	    "http://:80",
	    "http://user@x.test",
	    "http://a:b@x.test/",
	    "http://[::1]:80",
	    "http://x.test:0",
	    "http://x.test:99999",
	    "http://x..test",
	    "http://.x.test",
	    "http://x test",
	    "http://x.test:80x",
	    "http://x.test#frag",
	    "https://x\ty",
	    NULL,
	};
	char host[CONFIG_HOST_MAX + 1];

	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		int r = config_url_host(good[i].url, host, sizeof host);
		if (good[i].host) {
			ck_assert_int_eq(r, 0);
			ck_assert_str_eq(host, good[i].host);
		} else
			ck_assert_int_eq(r, -EINVAL);
	}
	for (size_t i = 0; bad[i]; i++)
		ck_assert_msg(config_url_host(bad[i], host, sizeof host) == -EINVAL, "%s", bad[i]);
	ck_assert_int_eq(config_url_host(NULL, host, sizeof host), -EINVAL);
}
END_TEST

START_TEST(test_agent_errors)
{
	expect_error("[agent claude]\nbase_url = ftp://x.test\n", 2,
		     "bad base_url \"ftp://x.test\": http:// or https://, a host name or an IPv4 "
		     "address, an optional :PORT and /PATH");
	expect_error("[agent claude]\nbase_url = http://u@x.test\n", 2,
		     "bad base_url \"http://u@x.test\": http:// or https://, a host name or an "
		     "IPv4 address, an optional :PORT and /PATH");
	expect_error("[agent claude]\nmodel = a b\n", 2,
		     "bad model \"a b\": 1 to 255 bytes, no blanks");
	expect_error("[agent claude]\nmodel = m\nmodel = n\n", 3,
		     "duplicate key \"model\" in [agent claude]");
	expect_error("[agent claude]\ntoken = x\n", 2,
		     "unknown key \"token\" in [agent claude] (base_url, model)");
	expect_error("[agent Bad!]\n", 1, "invalid agent id \"Bad!\" in [agent Bad!]");
	expect_error("[agent claude]\n[agent claude]\n", 2, "duplicate section [agent claude]");
	expect_error("[paddock]\nagent = Not/valid\n", 2, "bad value for agent: \"Not/valid\"");
}
END_TEST

/* ---- core ---- */

START_TEST(test_defaults_without_file)
{
	struct pd_config c;
	pd_error err;

	pd_error_clear(&err);
	ck_assert_int_eq(config_load(NULL, &c, &err), 0);
	ck_assert_ptr_null(c.path);
	assert_defaults(&c);
	ck_assert_int_eq(err.code, 0);
	config_release(&c);
	assert_released(&c);
}
END_TEST

START_TEST(test_default_path_missing)
{
	struct pd_config c;
	pd_error err;

	/* Only meaningful where the machine has no config file of its own. */
	if (access(CONFIG_DEFAULT_PATH, F_OK) == 0 || errno != ENOENT)
		return;
	pd_error_clear(&err);
	ck_assert_int_eq(config_load(CONFIG_DEFAULT_PATH, &c, &err), 0);
	ck_assert_ptr_null(c.path);
	assert_defaults(&c);
	ck_assert_int_eq(err.code, 0);
	ck_assert_str_eq(err.msg, "");
	config_release(&c);
}
END_TEST

START_TEST(test_empty_file)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("", &c, &err), 0);
	ck_assert_str_eq(c.path, ini_path);
	assert_defaults(&c);
	config_release(&c);

	ck_assert_int_eq(load_text("; nothing\n\n# here\n   \n", &c, &err), 0);
	assert_defaults(&c);
	config_release(&c);
}
END_TEST

START_TEST(test_full_file)
{
	static const char text[] = "\xef\xbb\xbf; Paddock configuration\n"
				   "# comments of both kinds\n"
				   "\n"
				   "[paddock]\n"
				   "mount = /srv/paddock ; inline comment\n"
				   "data=/srv/data\n"
				   "  run = /run/pd\n"
				   "crun = /opt/crun/bin/crun\n"
				   "cgroup_parent = system.slice/paddock\n"
				   "default_image = alpine-3.19\n"
				   "default_type = gpu\n"
				   "default_ttl = 2h\n"
				   "stop_grace = 30\n"
				   "\n"
				   "[types.gpu]\n"
				   "cpus = 8\n"
				   "memory = 32GiB\n"
				   "pids = 65536\n"
				   "disk = 1T\n"
				   "[types.tiny]\n"
				   "cpus = 0.25\n"
				   "memory = 256M\n";
	struct pd_config c;
	pd_error err;

	pd_error_clear(&err);
	ck_assert_int_eq(load_text(text, &c, &err), 0);
	ck_assert_str_eq(c.path, ini_path);
	ck_assert_str_eq(c.mount, "/srv/paddock");
	ck_assert_str_eq(c.data, "/srv/data");
	ck_assert_str_eq(c.run, "/run/pd");
	ck_assert_str_eq(c.crun, "/opt/crun/bin/crun");
	ck_assert_str_eq(c.cgroup_parent, "system.slice/paddock");
	ck_assert_str_eq(c.default_image, "alpine-3.19");
	ck_assert_str_eq(c.default_type, "gpu");
	ck_assert_int_eq(c.default_ttl, 7200);
	ck_assert_uint_eq(c.stop_grace, 30);
	ck_assert_uint_eq(c.n_types, 5);
	assert_type(&c, "small", 1000, 2 * GiB, 4096, 10 * GiB);
	assert_type(&c, "medium", 2000, 4 * GiB, 4096, 10 * GiB);
	assert_type(&c, "large", 4000, 8 * GiB, 4096, 10 * GiB);
	assert_type(&c, "gpu", 8000, 32 * GiB, 65536, 1024 * GiB);
	assert_type(&c, "tiny", 250, 256ULL << 20, 4096, 10 * GiB);
	ck_assert_int_eq(err.code, 0);
	config_release(&c);
	assert_released(&c);
	config_release(&c); /* twice is fine */
}
END_TEST

START_TEST(test_custom_type_starts_from_small)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[types.build]\ncpus = 6\n", &c, &err), 0);
	assert_type(&c, "build", 6000, 2 * GiB, 4096, 10 * GiB);
	config_release(&c);

	/* An empty section still defines the type. */
	ck_assert_int_eq(load_text("[types.plain]\n", &c, &err), 0);
	assert_type(&c, "plain", 1000, 2 * GiB, 4096, 10 * GiB);
	ck_assert_uint_eq(c.n_types, 4);
	config_release(&c);
}
END_TEST

START_TEST(test_override_builtin_type)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(
	    load_text("[types.medium]\nmemory = 6G\n[types.small]\ncpus = 0.5\n", &c, &err), 0);
	ck_assert_uint_eq(c.n_types, 3);
	assert_type(&c, "medium", 2000, 6 * GiB, 4096, 10 * GiB);
	assert_type(&c, "small", 500, 2 * GiB, 4096, 10 * GiB);
	assert_type(&c, "large", 4000, 8 * GiB, 4096, 10 * GiB);
	config_release(&c);
}
END_TEST

START_TEST(test_repeated_sections_merge)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\nmount = /a\n[types.x]\ncpus = 2\n"
				   "[paddock]\ndata = /b\n[types.x]\ndisk = 1G\n",
				   &c, &err),
			 0);
	ck_assert_str_eq(c.mount, "/a");
	ck_assert_str_eq(c.data, "/b");
	assert_type(&c, "x", 2000, 2 * GiB, 4096, 1 * GiB);
	config_release(&c);
}
END_TEST

START_TEST(test_default_type_defined_later)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\ndefault_type = later\n[types.later]\n", &c, &err),
			 0);
	ck_assert_str_eq(c.default_type, "later");
	ck_assert_ptr_nonnull(config_find_type(&c, "later"));
	config_release(&c);
}
END_TEST

START_TEST(test_values)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\ndefault_ttl = none\nstop_grace = 0\n", &c, &err), 0);
	ck_assert_int_eq(c.default_ttl, -1);
	ck_assert_uint_eq(c.stop_grace, 0);
	config_release(&c);

	ck_assert_int_eq(load_text("[paddock]\ndefault_ttl = 3600\nmount: /colon\n", &c, &err), 0);
	ck_assert_int_eq(c.default_ttl, 3600);
	ck_assert_str_eq(c.mount, "/colon");
	config_release(&c);

	/* token_ttl: none by default; seconds with a suffix; 0 is no lifetime. */
	ck_assert_int_eq(load_text("[paddock]\n", &c, &err), 0);
	ck_assert_int_eq(c.token_ttl, 0);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\ntoken_ttl = 12h\n", &c, &err), 0);
	ck_assert_int_eq(c.token_ttl, 12 * 3600);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\ntoken_ttl = none\n", &c, &err), 0);
	ck_assert_int_eq(c.token_ttl, 0);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\ntoken_ttl = 3650d\n", &c, &err), 0);
	ck_assert_int_eq(c.token_ttl, 3650LL * 86400);
	config_release(&c);
	expect_error("[paddock]\ntoken_ttl = 0\n", 2, "bad value for token_ttl: \"0\"");
	expect_error("[paddock]\ntoken_ttl = 3651d\n", 2, "bad value for token_ttl: \"3651d\"");
	expect_error("[paddock]\ntoken_ttl = -5\n", 2, "bad value for token_ttl: \"-5\"");
	expect_error("[paddock]\ntoken_ttl = forever\n", 2, "bad value for token_ttl: \"forever\"");

	/* CRLF line ends. */
	ck_assert_int_eq(load_text("[paddock]\r\nmount = /crlf\r\n", &c, &err), 0);
	ck_assert_str_eq(c.mount, "/crlf");
	config_release(&c);

	/* No newline at the end. */
	ck_assert_int_eq(load_text("[paddock]\nmount = /last", &c, &err), 0);
	ck_assert_str_eq(c.mount, "/last");
	config_release(&c);
}
END_TEST

/* seccomp = default|off: the only two words; a duplicate is an error. */
START_TEST(test_seccomp_values)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\nseccomp = off\n", &c, &err), 0);
	ck_assert(!c.seccomp);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\nseccomp = default\n", &c, &err), 0);
	ck_assert(c.seccomp);
	config_release(&c);
	expect_error("[paddock]\nseccomp = on\n", 2, "bad value for seccomp: \"on\"");
	expect_error("[paddock]\nseccomp = Off\n", 2, "bad value for seccomp: \"Off\"");
	expect_error("[paddock]\nseccomp =\n", 2, "bad value for seccomp: \"\"");
	expect_error("[paddock]\nseccomp = /etc/profile.json\n", 2,
		     "bad value for seccomp: \"/etc/profile.json\"");
	expect_error("[paddock]\nseccomp = off\nseccomp = default\n", 3,
		     "duplicate key \"seccomp\" in [paddock]");
}
END_TEST

/* disk_limit = on|off, on by default. */
START_TEST(test_disk_limit_values)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\n", &c, &err), 0);
	ck_assert(c.disk_limit);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\ndisk_limit = off\n", &c, &err), 0);
	ck_assert(!c.disk_limit);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\ndisk_limit = on\n", &c, &err), 0);
	ck_assert(c.disk_limit);
	config_release(&c);
	expect_error("[paddock]\ndisk_limit = 10G\n", 2, "bad value for disk_limit: \"10G\"");
}
END_TEST

/* userns = on|off; user_ids = FIRST-LAST, FIRST a multiple of 65536, at
 * least one range. */
START_TEST(test_userns_values)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\n", &c, &err), 0);
	ck_assert(c.userns);
	ck_assert_uint_eq(c.user_ids_first, 1073741824u);
	ck_assert_uint_eq(c.user_ids_count, 1073741824u);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\nuserns = off\nuser_ids = 65536-131071\n", &c, &err),
			 0);
	ck_assert(!c.userns);
	ck_assert_uint_eq(c.user_ids_first, 65536);
	ck_assert_uint_eq(c.user_ids_count, 65536);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\nuser_ids = 2147483648-4294967294\n", &c, &err), 0);
	ck_assert_uint_eq(c.user_ids_count, 2147483647u);
	config_release(&c);
	expect_error("[paddock]\nuserns = yes\n", 2, "bad value for userns: \"yes\"");
	expect_error("[paddock]\nuser_ids = 100000-300000\n", 2,
		     "bad value for user_ids: \"100000-300000\""); /* not aligned */
	expect_error("[paddock]\nuser_ids = 0-65535\n", 2,
		     "bad value for user_ids: \"0-65535\""); /* the host's own ids */
	expect_error("[paddock]\nuser_ids = 65536-100000\n", 2,
		     "bad value for user_ids: \"65536-100000\""); /* less than one range */
	expect_error("[paddock]\nuser_ids = 65536-4294967295\n", 2,
		     "bad value for user_ids: \"65536-4294967295\""); /* -1 is no id */
	expect_error("[paddock]\nuser_ids = 65536\n", 2, "bad value for user_ids: \"65536\"");
	expect_error("[paddock]\nuser_ids = -65536\n", 2, "bad value for user_ids: \"-65536\"");
}
END_TEST

/* novnc_dir = an absolute path (where the panel's noVNC modules are). */
START_TEST(test_novnc_dir)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\nnovnc_dir = /opt/novnc\n", &c, &err), 0);
	ck_assert_str_eq(c.novnc_dir, "/opt/novnc");
	config_release(&c);
	expect_error("[paddock]\nnovnc_dir = novnc\n", 2, "bad value for novnc_dir: \"novnc\"");
	expect_error("[paddock]\nnovnc_dir =\n", 2, "bad value for novnc_dir: \"\"");
}
END_TEST

/* lxcfs = on|off|/absolute/path: on is Debian's binary, off none (NULL);
 * anything else is refused, and the last value wins nowhere (duplicates
 * are errors). */
START_TEST(test_lxcfs_values)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\nlxcfs = off\n", &c, &err), 0);
	ck_assert_ptr_null(c.lxcfs);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\nlxcfs = on\n", &c, &err), 0);
	ck_assert_str_eq(c.lxcfs, "/usr/bin/lxcfs");
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\nlxcfs = /opt/lxcfs/bin/lxcfs\n", &c, &err), 0);
	ck_assert_str_eq(c.lxcfs, "/opt/lxcfs/bin/lxcfs");
	config_release(&c);
	expect_error("[paddock]\nlxcfs = yes\n", 2, "bad value for lxcfs: \"yes\"");
	expect_error("[paddock]\nlxcfs = On\n", 2, "bad value for lxcfs: \"On\"");
	expect_error("[paddock]\nlxcfs =\n", 2, "bad value for lxcfs: \"\"");
	expect_error("[paddock]\nlxcfs = bin/lxcfs\n", 2, "bad value for lxcfs: \"bin/lxcfs\"");
	expect_error("[paddock]\nlxcfs = /usr/bin/lx cfs\n", 2,
		     "bad value for lxcfs: \"/usr/bin/lx cfs\"");
	expect_error("[paddock]\nlxcfs = off\nlxcfs = on\n", 3,
		     "duplicate key \"lxcfs\" in [paddock]");
}
END_TEST

START_TEST(test_network_values)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\nnetwork = off\nbridge = pd-t1\n"
				   "subnet = 10.200.7.0/24\nnft_table = paddock_t1\n",
				   &c, &err),
			 0);
	ck_assert(!c.network);
	ck_assert_str_eq(c.bridge, "pd-t1");
	ck_assert_str_eq(c.nft_table, "paddock_t1");
	ck_assert_uint_eq(c.subnet, 0x0ac80700);
	ck_assert_uint_eq(c.subnet_prefix, 24);
	config_release(&c);

	/* The widest and narrowest subnets, the longest names. */
	ck_assert_int_eq(
	    load_text("[paddock]\nnetwork = on\nsubnet = 10.0.0.0/8\n"
		      "bridge = abcdefgh\nnft_table = a2345678901234567890123456789012\n",
		      &c, &err),
	    0);
	ck_assert(c.network);
	ck_assert_uint_eq(c.subnet_prefix, 8);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\nsubnet = 192.168.5.16/28\n", &c, &err), 0);
	ck_assert_uint_eq(c.subnet, 0xc0a80510);
	ck_assert_uint_eq(c.subnet_prefix, 28);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\ndns_upstream = 192.0.2.53\n", &c, &err), 0);
	ck_assert_uint_eq(c.dns_upstream, 0xc0000235);
	ck_assert_uint_eq(c.dns_upstream_port, 53);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\ndns_upstream = 192.0.2.53:5353\n", &c, &err), 0);
	ck_assert_uint_eq(c.dns_upstream_port, 5353);
	config_release(&c);
	ck_assert_int_eq(
	    load_text("[paddock]\ndns_upstream = 192.0.2.53\ndns_upstream = auto\n", &c, &err),
	    -EINVAL); /* twice: refused like any key */
	ck_assert_int_eq(load_text("[paddock]\ndns_upstream = auto\n", &c, &err), 0);
	ck_assert_uint_eq(c.dns_upstream, 0);
	config_release(&c);
}
END_TEST

START_TEST(test_http_values)
{
	struct pd_config c;
	pd_error err;

	/* Defaults: loopback, the socket beside the runtime state. */
	ck_assert_int_eq(load_text("[paddock]\nrun = /r\n", &c, &err), 0);
	ck_assert_str_eq(c.listen, "127.0.0.1:7860");
	ck_assert_str_eq(c.socket, "/r/paddock.sock");
	ck_assert_ptr_null(c.public_url);
	ck_assert_uint_eq(c.push_max_entries, 100000);
	ck_assert_uint_eq(c.push_max_bytes, 8ULL << 30);
	config_release(&c);

	ck_assert_int_eq(load_text("[paddock]\nlisten = [::1]:0\nsocket = none\n"
				   "public_url = https://box.example.org\n"
				   "push_max_entries = 5\npush_max_bytes = 1M\n",
				   &c, &err),
			 0);
	ck_assert_str_eq(c.listen, "[::1]:0");
	ck_assert_str_eq(c.socket, "none");
	ck_assert_str_eq(c.public_url, "https://box.example.org");
	ck_assert_uint_eq(c.push_max_entries, 5);
	ck_assert_uint_eq(c.push_max_bytes, 1ULL << 20);
	config_release(&c);

	ck_assert_int_eq(load_text("[paddock]\nlisten = none\n", &c, &err), 0);
	ck_assert_str_eq(c.listen, "none");
	ck_assert_ptr_null(c.preview_domain);
	config_release(&c);

	ck_assert_int_eq(load_text("[paddock]\npreview_domain = preview.example-1.org\n", &c, &err),
			 0);
	ck_assert_str_eq(c.preview_domain, "preview.example-1.org");
	config_release(&c);
}
END_TEST

START_TEST(test_access_values)
{
	struct pd_config c;
	pd_error err;
	struct in_addr v4;
	struct in6_addr v6;

	/* Defaults: group paddock, no proxy trusted. */
	ck_assert_int_eq(load_text("[paddock]\n", &c, &err), 0);
	ck_assert_str_eq(c.group, "paddock");
	ck_assert_uint_eq(c.n_trusted_proxies, 0);
	config_release(&c);

	ck_assert_int_eq(load_text("[paddock]\ngroup = 4242\n", &c, &err), 0);
	ck_assert_str_eq(c.group, "4242");
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\ngroup = _box-users\n", &c, &err), 0);
	config_release(&c);

	ck_assert_int_eq(load_text("[paddock]\ntrusted_proxies = 127.0.0.1, 10.0.0.0/8 ::1\n"
				   "  ; and an IPv6 network\n",
				   &c, &err),
			 0);
	ck_assert_uint_eq(c.n_trusted_proxies, 3);
	inet_pton(AF_INET, "127.0.0.1", &v4);
	ck_assert(config_net_prefix_contains(&c.trusted_proxies[0], AF_INET, &v4));
	inet_pton(AF_INET, "127.0.0.2", &v4);
	ck_assert(!config_net_prefix_contains(&c.trusted_proxies[0], AF_INET, &v4));
	inet_pton(AF_INET, "10.250.3.4", &v4);
	ck_assert(config_net_prefix_contains(&c.trusted_proxies[1], AF_INET, &v4));
	inet_pton(AF_INET6, "::ffff:10.1.2.3", &v6);
	ck_assert(config_net_prefix_contains(&c.trusted_proxies[1], AF_INET6, &v6));
	inet_pton(AF_INET6, "::1", &v6);
	ck_assert(config_net_prefix_contains(&c.trusted_proxies[2], AF_INET6, &v6));
	ck_assert(!config_net_prefix_contains(&c.trusted_proxies[1], AF_INET6, &v6));
	config_release(&c);

	ck_assert_int_eq(load_text("[paddock]\ntrusted_proxies = fd00::/8\n", &c, &err), 0);
	inet_pton(AF_INET6, "fdab::1", &v6);
	ck_assert(config_net_prefix_contains(&c.trusted_proxies[0], AF_INET6, &v6));
	inet_pton(AF_INET6, "fe80::1", &v6);
	ck_assert(!config_net_prefix_contains(&c.trusted_proxies[0], AF_INET6, &v6));
	config_release(&c);
}
END_TEST

START_TEST(test_find_type)
{
	struct pd_config c;

	ck_assert_int_eq(config_load(NULL, &c, NULL), 0);
	ck_assert_ptr_nonnull(config_find_type(&c, "small"));
	ck_assert_ptr_null(config_find_type(&c, "huge"));
	ck_assert_ptr_null(config_find_type(&c, "Small"));
	ck_assert_ptr_null(config_find_type(&c, ""));
	ck_assert_ptr_null(config_find_type(&c, NULL));
	config_release(&c);
}
END_TEST

START_TEST(test_type_format)
{
	struct pd_config c;
	struct box_type t = {
	    .name = "odd", .millicpus = 500, .memory = 1536, .pids = 7, .disk = 512ULL << 20};
	char buf[128];

	ck_assert_int_eq(config_load(NULL, &c, NULL), 0);
	ck_assert_int_eq(config_box_type_format(config_find_type(&c, "small"), buf, sizeof(buf)),
			 36);
	ck_assert_str_eq(buf, "cpus 1\nmemory 2G\npids 4096\ndisk 10G\n");
	config_box_type_format(config_find_type(&c, "medium"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "cpus 2\nmemory 4G\npids 4096\ndisk 10G\n");
	config_box_type_format(config_find_type(&c, "large"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "cpus 4\nmemory 8G\npids 4096\ndisk 10G\n");
	config_box_type_format(&t, buf, sizeof(buf));
	ck_assert_str_eq(buf, "cpus 0.5\nmemory 1536\npids 7\ndisk 512M\n");
	/* Too small a buffer is an error, not a silently cut file. */
	ck_assert_int_eq(config_box_type_format(&t, buf, 10), -ENOBUFS);
	ck_assert_int_eq(config_box_type_format(config_find_type(&c, "small"), buf, 36), -ENOBUFS);
	ck_assert_int_eq(config_box_type_format(config_find_type(&c, "small"), buf, 37), 36);
	config_release(&c);
}
END_TEST

/* ---- limits ---- */

/* The list an error text names the types with: all of them, or as many
 * as fit and ", ...". */
START_TEST(test_type_names)
{
	struct pd_config c;
	pd_error err;
	char buf[256], small[TEXT_LIST_MIN + 4];

	ck_assert_int_eq(config_load(NULL, &c, &err), 0);
	config_type_names(&c, buf, sizeof buf);
	ck_assert_str_eq(buf, "small, medium, large");
	config_type_names(&c, small, sizeof small);
	ck_assert_str_eq(small, "small, ...");
	config_type_names(&c, small, TEXT_LIST_MIN);
	ck_assert_str_eq(small, "...");
	config_release(&c);
}
END_TEST

START_TEST(test_max_types)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < CONFIG_MAX_TYPES - 3; i++)
		fprintf(f, "[types.t%d]\n", i);
	fclose(f);

	struct pd_config c;
	pd_error err;
	ck_assert_int_eq(load_text(text, &c, &err), 0);
	ck_assert_uint_eq(c.n_types, CONFIG_MAX_TYPES);
	/* 64 names do not fit an error text: cut, never overrun. */
	char names[256];
	config_type_names(&c, names, sizeof names);
	ck_assert_uint_lt(strlen(names), sizeof names);
	ck_assert_str_eq(names + strlen(names) - 5, ", ...");
	ck_assert_ptr_eq(strstr(names, "small, medium, large, t0, t1, "), names);
	config_release(&c);

	/* Redefining an existing type adds none. */
	char *more = NULL;
	ck_assert_int_ge(asprintf(&more, "%s[types.small]\n[types.t0]\n", text), 0);
	ck_assert_int_eq(load_text(more, &c, &err), 0);
	config_release(&c);
	free(more);

	ck_assert_int_ge(asprintf(&more, "%s[types.onemore]\n", text), 0);
	expect_error(more, CONFIG_MAX_TYPES - 3 + 1, "too many types (at most %d)",
		     CONFIG_MAX_TYPES);
	free(more);
	free(text);
}
END_TEST

START_TEST(test_type_name_length)
{
	char n63[64], n64[65], text[256];
	struct pd_config c;
	pd_error err;

	memset(n63, 'n', 63);
	n63[63] = '\0';
	memset(n64, 'n', 64);
	n64[64] = '\0';
	snprintf(text, sizeof(text), "[types.%s]\ncpus = 3\n", n63);
	ck_assert_int_eq(load_text(text, &c, &err), 0);
	assert_type(&c, n63, 3000, 2 * GiB, 4096, 10 * GiB);
	config_release(&c);

	snprintf(text, sizeof(text), "\n[types.%s]\ncpus = 3\n", n64);
	expect_error(text, 2, "invalid type name \"%s\" in [types.%s]", n64, n64);
}
END_TEST

START_TEST(test_value_bounds)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock]\nstop_grace = 3600\ndefault_ttl = 3650d\n"
				   "[types.big]\ncpus = 1024\nmemory = 16777215T\n"
				   "pids = 4194304\ndisk = 1\n",
				   &c, &err),
			 0);
	ck_assert_uint_eq(c.stop_grace, 3600);
	ck_assert_int_eq(c.default_ttl, 3650LL * 86400);
	assert_type(&c, "big", 1024000, 16777215ULL << 40, 4194304, 1);
	config_release(&c);

	expect_error("[paddock]\nstop_grace = 3601\n", 2, "bad value for stop_grace: \"3601\"");
	ck_assert_int_eq(load_text("[paddock]\nlayer_merge_depth = 2\n", &c, &err), 0);
	ck_assert_uint_eq(c.layer_merge_depth, 2);
	config_release(&c);
	ck_assert_int_eq(load_text("[paddock]\nlayer_merge_depth = 32\n", &c, &err), 0);
	ck_assert_uint_eq(c.layer_merge_depth, 32);
	config_release(&c);
	expect_error("[paddock]\nlayer_merge_depth = 1\n", 2,
		     "bad value for layer_merge_depth: \"1\"");
	expect_error("[paddock]\nlayer_merge_depth = 33\n", 2,
		     "bad value for layer_merge_depth: \"33\"");
	expect_error("[paddock]\nlayer_merge_depth = 4x\n", 2,
		     "bad value for layer_merge_depth: \"4x\"");
	expect_error("[paddock]\nstop_grace = -1\n", 2, "bad value for stop_grace: \"-1\"");
	expect_error("[paddock]\ndefault_ttl = 3651d\n", 2, "bad value for default_ttl: \"3651d\"");
	expect_error("[types.x]\ncpus = 1025\n", 2, "bad value for cpus: \"1025\"");
	expect_error("[types.x]\ncpus = 0\n", 2, "bad value for cpus: \"0\"");
	expect_error("[types.x]\nmemory = 16777216T\n", 2, "bad value for memory: \"16777216T\"");
	expect_error("[types.x]\nmemory = 0\n", 2, "bad value for memory: \"0\"");
	expect_error("[types.x]\npids = 4194305\n", 2, "bad value for pids: \"4194305\"");
	expect_error("[types.x]\npids = 0\n", 2, "bad value for pids: \"0\"");
	expect_error("[types.x]\ndisk = 0\n", 2, "bad value for disk: \"0\"");
}
END_TEST

START_TEST(test_long_line)
{
	char text[1024];
	struct pd_config c;
	pd_error err;

	/* A path of 150 bytes fits ... */
	snprintf(text, sizeof(text), "[paddock]\nmount = /%0150d\n", 0);
	ck_assert_int_eq(load_text(text, &c, &err), 0);
	ck_assert_uint_eq(strlen(c.mount), 151);
	config_release(&c);

	/* ... one of 600 does not, and is not cut into two lines either. */
	snprintf(text, sizeof(text), "[paddock]\n\nmount = /%0600d\ndata = /x\n", 0);
	write_ini(text);
	pd_error_clear(&err);
	ck_assert_int_eq(config_load(ini_path, &c, &err), -EINVAL);
	char want[256];
	snprintf(want, sizeof(want), "%s:3: line too long", ini_path);
	ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
	assert_released(&c);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_unknown_key)
{
	expect_error("; header\n[paddock]\nmount = /x\n\n\n\nfoo = 1\n", 7,
		     "unknown key \"foo\" in [paddock]");
	expect_error("[paddock]\nMount = /x\n", 2, "unknown key \"Mount\" in [paddock]");
	expect_error("[types.small]\ncpus = 1\nram = 2G\n", 3,
		     "unknown key \"ram\" in [types.small]");
	expect_error("[paddock]\n= /x\n", 2, "unknown key \"\" in [paddock]");
}
END_TEST

START_TEST(test_bad_values)
{
	expect_error("[types.x]\n\nmemory = 12Q\n", 3, "bad value for memory: \"12Q\"");
	expect_error("[paddock]\nmount = paddock\n", 2, "bad value for mount: \"paddock\"");
	expect_error("[paddock]\ndata = ./data\n", 2, "bad value for data: \"./data\"");
	expect_error("[paddock]\nrun =\n", 2, "bad value for run: \"\"");
	expect_error("[paddock]\ncrun = \"/usr/bin/crun\"\n", 2,
		     "bad value for crun: \"\"/usr/bin/crun\"\"");
	/* '#' is not an inline comment: the value keeps it and is refused. */
	expect_error("[paddock]\nmount = /p # note\n", 2, "bad value for mount: \"/p # note\"");
	expect_error("[paddock]\ncgroup_parent = /paddock\n", 2,
		     "bad value for cgroup_parent: \"/paddock\"");
	expect_error("[paddock]\ncgroup_parent = a/../b\n", 2,
		     "bad value for cgroup_parent: \"a/../b\"");
	expect_error("[paddock]\ncgroup_parent = a//b\n", 2,
		     "bad value for cgroup_parent: \"a//b\"");
	expect_error("[paddock]\ndefault_image = Debian\n", 2,
		     "bad value for default_image: \"Debian\"");
	expect_error("[paddock]\ndefault_type = Small\n", 2,
		     "bad value for default_type: \"Small\"");
	expect_error("[paddock]\ndefault_ttl = forever\n", 2,
		     "bad value for default_ttl: \"forever\"");
	expect_error("[paddock]\nstop_grace = 10s\n", 2, "bad value for stop_grace: \"10s\"");
	expect_error("[types.x]\ncpus = 0.0001\n", 2, "bad value for cpus: \"0.0001\"");
	expect_error("[types.x]\npids = many\n", 2, "bad value for pids: \"many\"");
	expect_error("[types.x]\ndisk = 1.5G\n", 2, "bad value for disk: \"1.5G\"");
	expect_error("[paddock]\nlisten = localhost:80\n", 2,
		     "bad value for listen: \"localhost:80\"");
	expect_error("[paddock]\ngroup = Wheel\n", 2, "bad value for group: \"Wheel\"");
	expect_error("[paddock]\ngroup = a b\n", 2, "bad value for group: \"a b\"");
	expect_error("[paddock]\ngroup = 4294967295\n", 2, "bad value for group: \"4294967295\"");
	expect_error("[paddock]\ntrusted_proxies = proxy.local\n", 2,
		     "bad value for trusted_proxies: \"proxy.local\"");
	expect_error("[paddock]\ntrusted_proxies = 10.0.0.1/8\n", 2,
		     "bad value for trusted_proxies: \"10.0.0.1/8\"");
	expect_error("[paddock]\ntrusted_proxies = 10.0.0.0/33\n", 2,
		     "bad value for trusted_proxies: \"10.0.0.0/33\"");
	expect_error("[paddock]\nlisten = 127.0.0.1\n", 2, "bad value for listen: \"127.0.0.1\"");
	expect_error("[paddock]\nlisten = 127.0.0.1:70000\n", 2,
		     "bad value for listen: \"127.0.0.1:70000\"");
	expect_error("[paddock]\nlisten = [::1:80\n", 2, "bad value for listen: \"[::1:80\"");
	expect_error("[paddock]\nsocket = run/p.sock\n", 2, "bad value for socket: \"run/p.sock\"");
	expect_error("[paddock]\npublic_url = ftp://x\n", 2,
		     "bad value for public_url: \"ftp://x\"");
	expect_error("[paddock]\npreview_domain = Preview.Example.org\n", 2,
		     "bad value for preview_domain: \"Preview.Example.org\"");
	expect_error("[paddock]\npreview_domain = .example.org\n", 2,
		     "bad value for preview_domain: \".example.org\"");
	expect_error("[paddock]\npreview_domain = example..org\n", 2,
		     "bad value for preview_domain: \"example..org\"");
	expect_error("[paddock]\npreview_domain = -x.org\n", 2,
		     "bad value for preview_domain: \"-x.org\"");
	expect_error("[paddock]\npreview_domain = x-.org\n", 2,
		     "bad value for preview_domain: \"x-.org\"");
	expect_error("[paddock]\npreview_domain = *.example.org\n", 2,
		     "bad value for preview_domain: \"*.example.org\"");
	expect_error("[paddock]\npush_max_entries = 0\n", 2,
		     "bad value for push_max_entries: \"0\"");
	expect_error("[paddock]\npush_max_bytes = lots\n", 2,
		     "bad value for push_max_bytes: \"lots\"");
	expect_error("[paddock]\nnetwork = yes\n", 2, "bad value for network: \"yes\"");
	expect_error("[paddock]\nbridge = abcdefghi\n", 2, "bad value for bridge: \"abcdefghi\"");
	expect_error("[paddock]\nbridge = 0pd\n", 2, "bad value for bridge: \"0pd\"");
	expect_error("[paddock]\nbridge = pd_x\n", 2, "bad value for bridge: \"pd_x\"");
	expect_error("[paddock]\nbridge = Pd\n", 2, "bad value for bridge: \"Pd\"");
	expect_error("[paddock]\nnft_table = a-b\n", 2, "bad value for nft_table: \"a-b\"");
	expect_error("[paddock]\nnft_table = a23456789012345678901234567890123\n", 2,
		     "bad value for nft_table: \"a23456789012345678901234567890123\"");
	expect_error("[paddock]\nsubnet = 10.88.0.1/16\n", 2,
		     "bad value for subnet: \"10.88.0.1/16\"");
	expect_error("[paddock]\nsubnet = 10.88.0.0/29\n", 2,
		     "bad value for subnet: \"10.88.0.0/29\"");
	expect_error("[paddock]\nsubnet = 10.0.0.0/7\n", 2, "bad value for subnet: \"10.0.0.0/7\"");
	expect_error("[paddock]\nsubnet = 10.88.0.0\n", 2, "bad value for subnet: \"10.88.0.0\"");
	expect_error("[paddock]\nsubnet = fd00::/64\n", 2, "bad value for subnet: \"fd00::/64\"");
	expect_error("[paddock]\ndns_upstream = 0.0.0.0\n", 2,
		     "bad value for dns_upstream: \"0.0.0.0\"");
	expect_error("[paddock]\ndns_upstream = 192.0.2.1:0\n", 2,
		     "bad value for dns_upstream: \"192.0.2.1:0\"");
	expect_error("[paddock]\ndns_upstream = 192.0.2.1:65536\n", 2,
		     "bad value for dns_upstream: \"192.0.2.1:65536\"");
	expect_error("[paddock]\ndns_upstream = ns.example\n", 2,
		     "bad value for dns_upstream: \"ns.example\"");
	expect_error("[paddock]\ndns_upstream = [2001:db8::1]:53\n", 2,
		     "bad value for dns_upstream: \"[2001:db8::1]:53\"");
	expect_error("[paddock]\ndns_upstream =\n", 2, "bad value for dns_upstream: \"\"");
}
END_TEST

START_TEST(test_duplicate_key)
{
	expect_error("[paddock]\nmount = /a\nmount = /b\n", 3,
		     "duplicate key \"mount\" in [paddock]");
	expect_error("[paddock]\nstop_grace = 1\n[types.x]\n[paddock]\nstop_grace = 1\n", 5,
		     "duplicate key \"stop_grace\" in [paddock]");
	expect_error("[types.x]\ncpus = 1\n[types.x]\ncpus = 2\n", 4,
		     "duplicate key \"cpus\" in [types.x]");
	expect_error("[types.medium]\ndisk = 1G\ndisk = 1G\n", 3,
		     "duplicate key \"disk\" in [types.medium]");
}
END_TEST

START_TEST(test_sections)
{
	expect_error("[paddock]\nmount = /a\n[foo]\n", 3, "unknown section [foo]");
	expect_error("[Paddock]\n", 1, "unknown section [Paddock]");
	expect_error("[types]\n", 1, "unknown section [types]");
	expect_error("[ paddock ]\n", 1, "unknown section [ paddock ]");
	expect_error("\n[types.Big]\ncpus = 1\n", 2, "invalid type name \"Big\" in [types.Big]");
	expect_error("[types.]\n", 1, "invalid type name \"\" in [types.]");
	expect_error("[types.-x]\n", 1, "invalid type name \"-x\" in [types.-x]");
	expect_error("[types.a/b]\n", 1, "invalid type name \"a/b\" in [types.a/b]");
	expect_error("mount = /x\n[paddock]\n", 1, "key \"mount\" outside of any section");
	expect_error("[paddock\nmount = /x\n", 1, "unterminated section header");
	expect_error("[paddock ; comment]\n", 1, "unterminated section header");
	expect_error("[paddock] mount = /x\n", 1, "unexpected text after section header");
}
END_TEST

START_TEST(test_section_comments)
{
	struct pd_config c;
	pd_error err;

	ck_assert_int_eq(load_text("[paddock] ; main\n  mount = /a\n\t[types.x];c\n", &c, &err), 0);
	ck_assert_str_eq(c.mount, "/a");
	ck_assert_ptr_nonnull(config_find_type(&c, "x"));
	config_release(&c);
}
END_TEST

START_TEST(test_syntax)
{
	expect_error("[paddock]\nmount /x\n", 2,
		     "expected \"key = value\", \"[section]\" or a comment");
	expect_error("[paddock]\nmount = /a ; x\njunk\n", 3,
		     "expected \"key = value\", \"[section]\" or a comment");
	expect_error("[paddock]\n\n  mount ; = /x\n", 3,
		     "expected \"key = value\", \"[section]\" or a comment");
}
END_TEST

START_TEST(test_nul_byte)
{
	static const char text[] = "[paddock]\nmount = /a\0b\n";
	struct pd_config c;
	pd_error err;
	char want[256];

	write_ini_len(text, sizeof(text) - 1);
	ck_assert_int_eq(config_load(ini_path, &c, &err), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: NUL byte", ini_path);
	ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(test_default_type_missing)
{
	expect_error("[paddock]\nmount = /a\n\ndefault_type = huge\ndata = /b\n[types.x]\n", 4,
		     "default_type \"huge\" names no type: types are small, medium, large, x");
}
END_TEST

/* Parsing stops at the first error; default_type is checked after the
 * whole file, so an error further down is reported first. */
START_TEST(test_first_error_wins)
{
	expect_error("[paddock]\nmount = rel\nfoo = 1\n[bar]\n", 2, "bad value for mount: \"rel\"");
	expect_error("[paddock]\ndefault_type = nope\nfoo = 1\n", 3,
		     "unknown key \"foo\" in [paddock]");
}
END_TEST

START_TEST(test_missing_file)
{
	struct pd_config c;
	pd_error err;
	char path[256], want[512];

	snprintf(path, sizeof(path), "%s/nonexistent.ini", tmpdir);
	memset(&c, 0xaa, sizeof(c));
	ck_assert_int_eq(config_load(path, &c, &err), -ENOENT);
	snprintf(want, sizeof(want), "%s:0: cannot open: %s", path, strerror(ENOENT));
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(err.code, -ENOENT);
	assert_released(&c);
}
END_TEST

START_TEST(test_unreadable_file)
{
	struct pd_config c;
	pd_error err;
	char want[512];

	/* Root reads any file whatever its mode; a directory it cannot. */
	memset(&c, 0xaa, sizeof(c));
	ck_assert_int_eq(config_load(tmpdir, &c, &err), -EISDIR);
	snprintf(want, sizeof(want), "%s:0: cannot open: %s", tmpdir, strerror(EISDIR));
	ck_assert_str_eq(err.msg, want);
	assert_released(&c);

	/* Under a regular file: ENOTDIR. */
	write_ini("");
	char path[256];
	snprintf(path, sizeof(path), "%s/x.ini", ini_path);
	ck_assert_int_eq(config_load(path, &c, &err), -ENOTDIR);
	snprintf(want, sizeof(want), "%s:0: cannot open: %s", path, strerror(ENOTDIR));
	ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(test_null_error)
{
	struct pd_config c;

	write_ini("[nope]\n");
	ck_assert_int_eq(config_load(ini_path, &c, NULL), -EINVAL);
	assert_released(&c);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_defaults_without_file);
	tcase_add_test(tc, test_default_path_missing);
	tcase_add_test(tc, test_empty_file);
	tcase_add_test(tc, test_full_file);
	tcase_add_test(tc, test_custom_type_starts_from_small);
	tcase_add_test(tc, test_override_builtin_type);
	tcase_add_test(tc, test_repeated_sections_merge);
	tcase_add_test(tc, test_default_type_defined_later);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_http_values);
	tcase_add_test(tc, test_network_values);
	tcase_add_test(tc, test_seccomp_values);
	tcase_add_test(tc, test_userns_values);
	tcase_add_test(tc, test_disk_limit_values);
	tcase_add_test(tc, test_lxcfs_values);
	tcase_add_test(tc, test_section_comments);
	tcase_add_test(tc, test_access_values);
	tcase_add_test(tc, test_find_type);
	tcase_add_test(tc, test_type_format);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_max_types);
	tcase_add_test(tc, test_type_names);
	tcase_add_test(tc, test_type_name_length);
	tcase_add_test(tc, test_value_bounds);
	tcase_add_test(tc, test_long_line);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_unknown_key);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_duplicate_key);
	tcase_add_test(tc, test_sections);
	tcase_add_test(tc, test_syntax);
	tcase_add_test(tc, test_nul_byte);
	tcase_add_test(tc, test_default_type_missing);
	tcase_add_test(tc, test_first_error_wins);
	tcase_add_test(tc, test_novnc_dir);
	tcase_add_test(tc, test_agent_sections);
	tcase_add_test(tc, test_url_host);
	tcase_add_test(tc, test_agent_errors);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_unreadable_file);
	tcase_add_test(tc, test_null_error);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return check_tap_run(config_suite());
}
