/* doctor.h - `paddock doctor`: run on the server, checks what the daemon
 * needs and what the installer set up, one line per check, each failing
 * one with what to do (docs/operations.md):
 *
 *	ok   crun: crun version 1.8.1 (/usr/bin/crun)
 *	FAIL images: no image in /var/lib/paddock/images: mkimage debian
 *	warn lxcfs: /usr/bin/lxcfs not found: apt install lxcfs (...)
 *	skip caddy: not configured (no /etc/caddy/Caddyfile naming paddock)
 *
 * Exit status 0 when no check failed (warn and skip do not count), 1
 * otherwise, 2 for a usage error. Linux only: elsewhere the command says
 * so and fails.
 *
 * The parts that judge text or numbers are pure functions, below, for the
 * unit tests (tests/check_doctor.c); the checks read the machine.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Runs `paddock doctor [--config FILE] [--caddyfile FILE] [--json]`;
 * argv[0] is "doctor". Returns the exit status. */
int cli_doctor(int argc, char **argv);

/* Certificates expiring within this many days fail. */
#define DOCTOR_CERT_DAYS_MIN 14

enum doctor_cgroup { DOCTOR_CGROUP_V1, DOCTOR_CGROUP_HYBRID, DOCTOR_CGROUP_V2 };

/* True when fs is listed in text, the contents of /proc/filesystems
 * ("nodev\toverlay\n\text4\n": a name after an optional first column). */
bool doctor_fs_listed(const char *text, const char *fs);

/* The layout from what /sys/fs/cgroup and /sys/fs/cgroup/unified are: v2
 * when the root is cgroup2, hybrid when only unified/ is, v1 otherwise. */
enum doctor_cgroup doctor_cgroup_mode(bool root_is_cgroup2, bool unified_is_cgroup2);
const char *doctor_cgroup_name(enum doctor_cgroup m);

/* The words of need (separated by spaces) missing from have (separated by
 * blanks or newlines: cgroup.controllers), separated by spaces, in out
 * (size bytes, cut if too small); "" when none is. Returns how many. */
size_t doctor_missing(const char *have, const char *need, char *out, size_t size);

/* Parses a certificate's expiry as libcurl's CURLINFO_CERTINFO gives it
 * ("Expire date"): OpenSSL's "Mar  1 12:00:00 2027 GMT" or the
 * "2027-03-01 12:00:00 GMT" of its own reader; UTC. 0 or -EINVAL. */
int doctor_parse_cert_time(const char *s, time_t *ret);

/* Whole days from now to not_after, rounded down; negative once expired. */
long doctor_cert_days_left(time_t not_after, time_t now);
/* True when a certificate that expires at not_after is fine at now: more
 * than min_days left. */
bool doctor_cert_ok(time_t not_after, time_t now, unsigned min_days);

/* True when a Caddyfile's text names paddock (any case): it is ours, or
 * imports ours (the installer's /etc/caddy/paddock.caddy). */
bool doctor_caddy_mentions(const char *text);

/* The first site of a Caddyfile's text with a host name: the first address
 * of a block opened at the top level ("example.org, www.example.org {"),
 * skipping the global options block, snippets "(name) {", wildcard names
 * and addresses without a host (":80"). A scheme is dropped; the port is
 * the address's, else 443. 0, or -ENOENT when there is none. */
int doctor_caddy_site(const char *text, char *host, size_t size, unsigned *ret_port);

/* The URL of the daemon's TCP listener from its `listen` value
 * (ADDR:PORT, [ADDR6]:PORT): a wildcard address becomes loopback.
 * "http://127.0.0.1:7860/" in out. -EINVAL for none or a bad value,
 * -EAGAIN for port 0 (the bound port is in RUN/http-url). */
int doctor_listen_url(const char *listen, char *out, size_t size);

/* True when path is a FUSE mount point in text, the contents of
 * /proc/self/mountinfo (mount points with \040-style escapes). */
bool doctor_mountinfo_fuse(const char *text, const char *path);
