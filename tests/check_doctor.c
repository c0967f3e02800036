/* check_doctor.c - the judging parts of `paddock doctor` (cli/doctor.h):
 * /proc/filesystems and mountinfo, the cgroup layout and its controllers,
 * certificate dates and their verdict, Caddyfiles and the listen address. */
#include <errno.h>
#include <string.h>

#include "check-tap.h"
#include "cli/doctor.h"

START_TEST(fs_listed)
{
	const char *text = "nodev\tsysfs\nnodev\ttmpfs\n\text4\nnodev\toverlay\n\tvfat\n";

	ck_assert(doctor_fs_listed(text, "overlay"));
	ck_assert(doctor_fs_listed(text, "ext4"));
	ck_assert(doctor_fs_listed(text, "vfat"));
	ck_assert(!doctor_fs_listed(text, "over"));
	ck_assert(!doctor_fs_listed(text, "overlayfs"));
	ck_assert(!doctor_fs_listed(text, "nodev"));
	ck_assert(!doctor_fs_listed("", "overlay"));
	ck_assert(doctor_fs_listed("nodev\toverlay", "overlay")); /* no final newline */
}
END_TEST

START_TEST(cgroup_mode)
{
	ck_assert_int_eq(doctor_cgroup_mode(true, false), DOCTOR_CGROUP_V2);
	ck_assert_int_eq(doctor_cgroup_mode(true, true), DOCTOR_CGROUP_V2);
	ck_assert_int_eq(doctor_cgroup_mode(false, true), DOCTOR_CGROUP_HYBRID);
	ck_assert_int_eq(doctor_cgroup_mode(false, false), DOCTOR_CGROUP_V1);
	ck_assert_str_eq(doctor_cgroup_name(DOCTOR_CGROUP_HYBRID), "hybrid");
	ck_assert_str_eq(doctor_cgroup_name(DOCTOR_CGROUP_V2), "v2");
	ck_assert_str_eq(doctor_cgroup_name(DOCTOR_CGROUP_V1), "v1");
}
END_TEST

START_TEST(missing_controllers)
{
	char out[64];

	ck_assert_uint_eq(doctor_missing("cpuset cpu io memory hugetlb pids rdma misc\n",
					 "cpu memory pids", out, sizeof out),
			  0);
	ck_assert_str_eq(out, "");
	ck_assert_uint_eq(
	    doctor_missing("cpuset cpu io pids\n", "cpu memory pids", out, sizeof out), 1);
	ck_assert_str_eq(out, "memory");
	/* "cpu" is not "cpuset": words, not prefixes. */
	ck_assert_uint_eq(doctor_missing("cpuset cpuacct", "cpu memory", out, sizeof out), 2);
	ck_assert_str_eq(out, "cpu memory");
	ck_assert_uint_eq(doctor_missing("", "cpu", out, sizeof out), 1);
	ck_assert_str_eq(out, "cpu");
	/* Cut, never overrun, when out is small; the count stays right. */
	ck_assert_uint_eq(doctor_missing("", "cpu memory pids", out, 8), 3);
	ck_assert_uint_lt(strlen(out), 8);
}
END_TEST

START_TEST(cert_time)
{
	time_t t;

	ck_assert_int_eq(doctor_parse_cert_time("Mar  1 12:00:00 2027 GMT", &t), 0);
	ck_assert_int_eq((long long)t, 1803902400LL);
	ck_assert_int_eq(doctor_parse_cert_time("2027-03-01 12:00:00 GMT", &t), 0);
	ck_assert_int_eq((long long)t, 1803902400LL);
	ck_assert_int_eq(doctor_parse_cert_time("Dec 31 23:59:59 2026 GMT", &t), 0);
	ck_assert_int_eq((long long)t, 1798761599LL);
	ck_assert_int_eq(doctor_parse_cert_time(" Jan 2 03:04:05 2030", &t), 0);
	ck_assert_int_eq(doctor_parse_cert_time("", &t), -EINVAL);
	ck_assert_int_eq(doctor_parse_cert_time("tomorrow", &t), -EINVAL);
	ck_assert_int_eq(doctor_parse_cert_time("Mar  1 12:00:00 2027 PST", &t), -EINVAL);
}
END_TEST

START_TEST(cert_verdict)
{
	time_t now = 1800000000, day = 86400;

	ck_assert_int_eq(doctor_cert_days_left(now + 90 * day, now), 90);
	ck_assert_int_eq(doctor_cert_days_left(now + 14 * day + 5, now), 14);
	ck_assert_int_eq(doctor_cert_days_left(now + 5, now), 0);
	ck_assert_int_eq(doctor_cert_days_left(now - 5, now), -1);
	ck_assert_int_eq(doctor_cert_days_left(now - day, now), -1);
	ck_assert_int_eq(doctor_cert_days_left(now - day - 1, now), -2);
	ck_assert(doctor_cert_ok(now + 90 * day, now, DOCTOR_CERT_DAYS_MIN));
	ck_assert(doctor_cert_ok(now + 14 * day + 1, now, 14));
	ck_assert(!doctor_cert_ok(now + 14 * day, now, 14));
	ck_assert(!doctor_cert_ok(now + 5 * day, now, 14));
	ck_assert(!doctor_cert_ok(now - day, now, 14));
}
END_TEST

START_TEST(caddy_site)
{
	char host[64];
	unsigned port = 0;

	/* The installer's file. */
	const char *installed = "# Paddock (written by scripts/install; rewritten on each run).\n"
				"paddock.example.org {\n"
				"\ttls internal\n"
				"\treverse_proxy 127.0.0.1:7860 {\n"
				"\t\tflush_interval -1\n"
				"\t}\n"
				"}\n"
				"\n"
				"*.preview.example.org {\n"
				"\ttls {\n\t\ton_demand\n\t}\n"
				"}\n";
	ck_assert(doctor_caddy_mentions(installed));
	ck_assert_int_eq(doctor_caddy_site(installed, host, sizeof host, &port), 0);
	ck_assert_str_eq(host, "paddock.example.org");
	ck_assert_uint_eq(port, 443);

	/* Global options, a snippet, a port-only site, a wildcard first. */
	const char *mixed = "{\n\temail me@example.org\n}\n"
			    "(common) {\n\tencode gzip\n}\n"
			    ":80 {\n\trespond hi\n}\n"
			    "*.example.org {\n\trespond no\n}\n"
			    "https://box.example.org:8443, www.example.org { # ours\n"
			    "\treverse_proxy 127.0.0.1:7860\n}\n";
	ck_assert_int_eq(doctor_caddy_site(mixed, host, sizeof host, &port), 0);
	ck_assert_str_eq(host, "box.example.org");
	ck_assert_uint_eq(port, 8443);

	/* A block's inner lines that open braces are not sites. */
	const char *inner = ":443 {\n\thandle_path /x {\n\t\trespond y\n\t}\n}\n";
	ck_assert_int_eq(doctor_caddy_site(inner, host, sizeof host, &port), -ENOENT);

	/* Debian's stock file: a demo on :80, not ours. */
	const char *stock = "# The Caddyfile is an easy way to configure your Caddy web server.\n"
			    ":80 {\n\troot * /usr/share/caddy\n\tfile_server\n}\n";
	ck_assert(!doctor_caddy_mentions(stock));
	ck_assert_int_eq(doctor_caddy_site(stock, host, sizeof host, &port), -ENOENT);
	ck_assert(doctor_caddy_mentions("import /etc/caddy/Paddock.caddy\n"));
	ck_assert_int_eq(doctor_caddy_site("", host, sizeof host, &port), -ENOENT);
}
END_TEST

START_TEST(listen_url)
{
	char url[64];

	ck_assert_int_eq(doctor_listen_url("127.0.0.1:7860", url, sizeof url), 0);
	ck_assert_str_eq(url, "http://127.0.0.1:7860/");
	ck_assert_int_eq(doctor_listen_url("0.0.0.0:80", url, sizeof url), 0);
	ck_assert_str_eq(url, "http://127.0.0.1:80/");
	ck_assert_int_eq(doctor_listen_url("[::]:7860", url, sizeof url), 0);
	ck_assert_str_eq(url, "http://[::1]:7860/");
	ck_assert_int_eq(doctor_listen_url("[::1]:7860", url, sizeof url), 0);
	ck_assert_str_eq(url, "http://[::1]:7860/");
	ck_assert_int_eq(doctor_listen_url("127.0.0.1:0", url, sizeof url), -EAGAIN);
	ck_assert_int_eq(doctor_listen_url("none", url, sizeof url), -EINVAL);
	ck_assert_int_eq(doctor_listen_url("127.0.0.1", url, sizeof url), -EINVAL);
	ck_assert_int_eq(doctor_listen_url("127.0.0.1:x", url, sizeof url), -EINVAL);
	ck_assert_int_eq(doctor_listen_url(":7860", url, sizeof url), -EINVAL);
	ck_assert_int_eq(doctor_listen_url("127.0.0.1:7860", url, 8), -EINVAL);
}
END_TEST

START_TEST(mountinfo)
{
	const char *text =
	    "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	    "80 22 0:50 / /paddock rw,nosuid,nodev,relatime shared:40 - fuse.paddockd paddockd rw\n"
	    "81 22 0:51 / /tmp/my\\040mount rw - fuse paddock rw,user_id=0\n"
	    "82 22 0:52 / /srv/other rw - tmpfs tmpfs rw\n";

	ck_assert(doctor_mountinfo_fuse(text, "/paddock"));
	ck_assert(doctor_mountinfo_fuse(text, "/tmp/my mount"));
	ck_assert(!doctor_mountinfo_fuse(text, "/srv/other"));
	ck_assert(!doctor_mountinfo_fuse(text, "/"));
	ck_assert(!doctor_mountinfo_fuse(text, "/pad"));
	ck_assert(!doctor_mountinfo_fuse("", "/paddock"));
}
END_TEST

static Suite *doctor_suite(void)
{
	Suite *s = suite_create("doctor");
	TCase *tc = tcase_create("host");

	tcase_add_test(tc, fs_listed);
	tcase_add_test(tc, cgroup_mode);
	tcase_add_test(tc, missing_controllers);
	tcase_add_test(tc, mountinfo);
	suite_add_tcase(s, tc);
	tc = tcase_create("tls");
	tcase_add_test(tc, cert_time);
	tcase_add_test(tc, cert_verdict);
	tcase_add_test(tc, caddy_site);
	suite_add_tcase(s, tc);
	tc = tcase_create("daemon");
	tcase_add_test(tc, listen_url);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(doctor_suite());
}
