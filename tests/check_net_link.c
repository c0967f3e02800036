/* check_net_link.c - links, addresses, namespaces and conntrack against the
 * kernel. Every test runs in its own child (fork mode) that first moves into
 * a network and mount namespace of its own, so nothing here touches the
 * host's links, mounts or connection tracking. Without the right to do that
 * (not root) the whole suite is skipped. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-tap.h"
#include "net/link.h"

#define BRIDGE "pdl0"
#define HOST_IF "pdl0v1"
#define GATEWAY 0x0a620001  /* 10.98.0.1 */
#define BOX_ADDR 0x0a620002 /* 10.98.0.2 */
static const uint8_t box_mac[6] = {0x02, 0x70, 0x0a, 0x62, 0x00, 0x02};

/* Made by main, empty; each test mounts its own tmpfs on it. */
static char tmp_dir[] = "/tmp/check_net_link.XXXXXX";

/* Moves this test's process into new network and mount namespaces, with a
 * sysfs of the new network namespace on /sys and a private tmpfs on
 * tmp_dir. Everything goes when the test's process does. */
static void isolate(void)
{
	ck_assert_msg(unshare(CLONE_NEWNET | CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
	ck_assert_msg(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "%s",
		      strerror(errno));
	ck_assert_msg(mount("sysfs", "/sys", "sysfs", 0, NULL) == 0, "sysfs: %s", strerror(errno));
	ck_assert_msg(mount("tmpfs", tmp_dir, "tmpfs", 0, "mode=0700") == 0, "tmpfs: %s",
		      strerror(errno));
}

static const char *path_of(const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	return path;
}

/* The link's flags (SIOCGIFFLAGS) in the current namespace, -1 if none. */
static int if_flags(const char *name)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	ck_assert_int_ge(fd, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	r = ioctl(fd, SIOCGIFFLAGS, &ifr) < 0 ? -1 : (unsigned short)ifr.ifr_flags;
	close(fd);
	return r;
}

static bool if_up(const char *name)
{
	int f = if_flags(name);

	return f >= 0 && (f & IFF_UP);
}

/* True when link name holds addr/prefix (getifaddrs, current namespace). */
static bool has_addr(const char *name, uint32_t addr, unsigned prefix)
{
	struct ifaddrs *list, *i;
	uint32_t mask = prefix ? ~0u << (32 - prefix) : 0;
	bool found = false;

	ck_assert_int_eq(getifaddrs(&list), 0);
	for (i = list; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask ||
		    strcmp(i->ifa_name, name) != 0)
			continue;
		found = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr) == addr &&
			ntohl(((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr) == mask;
	}
	freeifaddrs(list);
	return found;
}

/* The first line of a file, without its newline; "" if unreadable. */
static const char *first_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)size, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* By ioctl, not sysfs: /sys shows the namespace that mounted it. */
static void mac_of(const char *ifname, char mac[32])
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned char *m = (unsigned char *)ifr.ifr_hwaddr.sa_data;

	ck_assert_int_ge(fd, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ck_assert_msg(ioctl(fd, SIOCGIFHWADDR, &ifr) == 0, "no MAC for %s", ifname);
	close(fd);
	snprintf(mac, 32, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static void set_mac(const char *ifname, const unsigned char mac[6])
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	memcpy(ifr.ifr_hwaddr.sa_data, mac, 6);
	ck_assert_msg(ioctl(fd, SIOCSIFHWADDR, &ifr) == 0, "SIOCSIFHWADDR: %s", strerror(errno));
	close(fd);
}

/* An empty plain file at path. */
static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	close(fd);
}

/* Moves this process into the network namespace bound on path. */
static void enter(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(setns(fd, CLONE_NEWNET) == 0, "setns: %s", strerror(errno));
	close(fd);
}

/* The gateway of ifname's default route in /proc/net/route (current
 * namespace), host byte order; false when there is none. */
static bool default_gateway(const char *ifname, uint32_t *ret)
{
	char line[512], name[IFNAMSIZ + 1];
	unsigned dest, gw;
	bool found = false;
	FILE *f = fopen("/proc/net/route", "re");

	ck_assert_ptr_nonnull(f);
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%16s %x %x", name, &dest, &gw) == 3 && dest == 0 &&
		    strcmp(name, ifname) == 0) {
			*ret = ntohl(gw);
			found = true;
		}
	fclose(f);
	return found;
}

static void bridge_up(void)
{
	pd_error err = {0};

	ck_assert_msg(link_bridge_ensure(BRIDGE, GATEWAY, 24, &err) == 0, "%s", err.msg);
}

static const char *new_ns(const char *name)
{
	pd_error err = {0};
	const char *path = path_of(name);

	ck_assert_msg(link_netns_create(path, &err) == 0, "%s", err.msg);
	return path;
}

/* --- bridge ---------------------------------------------------------------- */

START_TEST(bridge_created_up_with_address)
{
	isolate();
	ck_assert(!link_exists(BRIDGE));
	bridge_up();
	ck_assert_uint_gt(if_nametoindex(BRIDGE), 0);
	ck_assert(link_exists(BRIDGE));
	ck_assert(if_up(BRIDGE));
	ck_assert(has_addr(BRIDGE, GATEWAY, 24));

	char kind[64];
	ck_assert(access("/sys/class/net/" BRIDGE "/bridge", F_OK) == 0);
	first_line("/sys/class/net/" BRIDGE "/addr_assign_type", kind, sizeof(kind));
	ck_assert_str_eq(kind, "3"); /* NET_ADDR_SET: pinned */
}
END_TEST

START_TEST(bridge_again_keeps_mac)
{
	char mac1[32], mac2[32];

	isolate();
	bridge_up();
	mac_of(BRIDGE, mac1);
	bridge_up();
	mac_of(BRIDGE, mac2);
	ck_assert_str_eq(mac1, mac2);
	ck_assert(if_up(BRIDGE));
	ck_assert(has_addr(BRIDGE, GATEWAY, 24));
}
END_TEST

/* An unpinned bridge takes the lowest of its ports' MACs and keeps it when
 * that port goes: the gateway's MAC would change under the other boxes. */
START_TEST(bridge_mac_ignores_ports)
{
	static const unsigned char low[6] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
	char mac[32], now[32];
	pd_error err = {0};

	isolate();
	bridge_up();
	mac_of(BRIDGE, mac);
	ck_assert_str_ne(mac, "00:00:00:00:00:01");
	ck_assert_msg(
	    link_box_add(BRIDGE, HOST_IF, new_ns("box"), BOX_ADDR, box_mac, 24, GATEWAY, &err) == 0,
	    "%s", err.msg);
	set_mac(HOST_IF, low);
	mac_of(HOST_IF, now);
	ck_assert_str_eq(now, "00:00:00:00:00:01");
	mac_of(BRIDGE, now);
	ck_assert_str_eq(now, mac);
	ck_assert_int_eq(link_delete(HOST_IF), 0);
	mac_of(BRIDGE, now);
	ck_assert_str_eq(now, mac);
}
END_TEST

START_TEST(bridge_bad_name)
{
	pd_error err = {0};

	isolate();
	ck_assert_int_lt(link_bridge_ensure("a-name-far-too-long", GATEWAY, 24, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "a-name-far-too-long"));
	ck_assert(!link_exists("a-name-far-too-long"));
}
END_TEST

/* --- namespaces -------------------------------------------------------------- */

START_TEST(netns_create_remove)
{
	pd_error err = {0};
	const char *path = path_of("ns");
	struct stat st;

	isolate();
	ck_assert(!link_netns_is_bound(path));
	ck_assert_msg(link_netns_create(path, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(link_netns_is_bound(path));

	ck_assert_int_eq(link_netns_create(path, &err), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err.msg, path));
	ck_assert(link_netns_is_bound(path));

	ck_assert_int_eq(link_netns_remove(path), 0);
	ck_assert_int_eq(stat(path, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert(!link_netns_is_bound(path));
	ck_assert_int_eq(link_netns_remove(path), 0);
}
END_TEST

START_TEST(netns_loopback_up_inside)
{
	const char *path;

	isolate();
	ck_assert(!if_up("lo")); /* a fresh namespace's lo is down */
	path = new_ns("ns");
	enter(path);
	ck_assert(if_up("lo"));
	ck_assert(has_addr("lo", 0x7f000001, 8));
	/* Nothing else: only lo. */
	ck_assert_int_eq(if_nametoindex("eth0"), 0);
}
END_TEST

START_TEST(netns_plain_file)
{
	pd_error err = {0};
	const char *path = path_of("leftover");

	isolate();
	touch(path);
	ck_assert(!link_netns_is_bound(path));
	ck_assert_msg(link_netns_create(path, &err) == 0, "%s", err.msg);
	ck_assert(link_netns_is_bound(path));
}
END_TEST

/* Bound or not is the file's own nature: neither a mount point of
 * something else nor a path without a directory part fools it. */
START_TEST(netns_is_bound_exact)
{
	pd_error err = {0};

	isolate();
	ck_assert(!link_netns_is_bound(tmp_dir)); /* a tmpfs mount point */
	ck_assert(!link_netns_is_bound("/proc/self/status"));
	ck_assert_int_eq(chdir(tmp_dir), 0);
	ck_assert_msg(link_netns_create("ns", &err) == 0, "%s", err.msg);
	ck_assert(link_netns_is_bound("ns"));
	ck_assert_int_eq(link_netns_create("ns", &err), -EEXIST);
	ck_assert_int_eq(link_netns_remove("ns"), 0);
	ck_assert(!link_netns_is_bound("ns"));
}
END_TEST

START_TEST(netns_create_fails_cleanly)
{
	pd_error err = {0};
	const char *path = path_of("no-dir/ns");

	isolate();
	ck_assert_int_eq(link_netns_create(path, &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, path));
	ck_assert(!link_netns_is_bound(path));
	ck_assert(!link_netns_is_bound("/nonexistent/ns"));
}
END_TEST

/* --- a box's link -------------------------------------------------------------- */

static void expect_box_inside(const char *ns_path)
{
	uint32_t gw = 0;
	char mac[32];

	enter(ns_path);
	ck_assert_uint_gt(if_nametoindex("eth0"), 0);
	ck_assert(if_up("eth0"));
	ck_assert(has_addr("eth0", BOX_ADDR, 24));
	mac_of("eth0", mac);
	ck_assert_str_eq(mac, "02:70:0a:62:00:02");
	ck_assert_msg(default_gateway("eth0", &gw), "no default route via eth0");
	ck_assert_uint_eq(gw, GATEWAY);
	ck_assert_int_eq(if_nametoindex(HOST_IF), 0);
}

START_TEST(box_link_configures_both_ends)
{
	pd_error err = {0};
	char buf[PATH_MAX];
	const char *ns;
	ssize_t n;

	isolate();
	bridge_up();
	ns = new_ns("box");
	ck_assert_msg(link_box_add(BRIDGE, HOST_IF, ns, BOX_ADDR, box_mac, 24, GATEWAY, &err) == 0,
		      "%s", err.msg);
	ck_assert(link_exists(HOST_IF));
	ck_assert(if_up(HOST_IF));
	n = readlink("/sys/class/net/" HOST_IF "/master", buf, sizeof(buf) - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(strrchr(buf, '/'), "/" BRIDGE);
	if (access("/sys/class/net/" HOST_IF "/brport/isolated", R_OK) == 0)
		ck_assert_str_eq(
		    first_line("/sys/class/net/" HOST_IF "/brport/isolated", buf, sizeof(buf)),
		    "1");
	/* The peer went into the box's namespace. */
	ck_assert_int_eq(if_nametoindex("eth0"), 0);
	expect_box_inside(ns);
}
END_TEST

/* The MAC is the address's, and can be set again on a running box. */
START_TEST(box_mac_pinned)
{
	static const uint8_t other[6] = {0x02, 0x70, 0x0a, 0x62, 0x00, 0x09};
	pd_error err = {0};
	uint8_t mac[6];
	char now[32];
	const char *ns;

	link_box_mac(BOX_ADDR, mac);
	ck_assert_mem_eq(mac, box_mac, 6);
	isolate();
	bridge_up();
	ns = new_ns("box");
	ck_assert_msg(link_box_add(BRIDGE, HOST_IF, ns, BOX_ADDR, other, 24, GATEWAY, &err) == 0,
		      "%s", err.msg);
	ck_assert_msg(link_box_set_mac(ns, box_mac, &err) == 0, "%s", err.msg);
	expect_box_inside(ns);
	mac_of("eth0", now);
	ck_assert_str_eq(now, "02:70:0a:62:00:02");
	ck_assert_int_lt(link_box_set_mac(path_of("none"), box_mac, &err), 0);
}
END_TEST

/* The bridge's forwarding database entries for mac (bridge fdb show), one
 * line each, into out; how many. */
static int fdb_lines(const char *mac, char *out, size_t size)
{
	FILE *p = popen("bridge fdb show br " BRIDGE " 2>&1", "r");
	char line[256];
	int n = 0;

	ck_assert_msg(p != NULL, "popen: %s", strerror(errno));
	out[0] = '\0';
	while (fgets(line, sizeof(line), p))
		if (strncmp(line, mac, strlen(mac)) == 0) {
			n++;
			strncat(out, line, size - strlen(out) - 1);
		}
	pclose(p);
	return n;
}

static void expect_port_locked(void)
{
	char buf[64];

	ck_assert_str_eq(first_line("/sys/class/net/" HOST_IF "/brport/learning", buf, sizeof(buf)),
			 "0");
	ck_assert_str_eq(
	    first_line("/sys/class/net/" HOST_IF "/brport/unicast_flood", buf, sizeof(buf)), "0");
	ck_assert_str_eq(
	    first_line("/sys/class/net/" HOST_IF "/brport/broadcast_flood", buf, sizeof(buf)), "1");
	ck_assert_str_eq(
	    first_line("/sys/class/net/" HOST_IF "/brport/multicast_flood", buf, sizeof(buf)), "1");
	ck_assert_str_eq(first_line("/sys/class/net/" HOST_IF "/brport/isolated", buf, sizeof(buf)),
			 "1");
}

/* The box's port learns nothing, floods no unicast, and holds a static
 * (forwarding, not local) entry for the box's MAC, again and again. */
START_TEST(box_port_pinned)
{
	pd_error err = {0};
	char lines[1024];
	const char *ns;

	if (system("bridge -V >/dev/null 2>&1") != 0)
		return; /* no iproute2 to read the fdb with */
	isolate();
	bridge_up();
	ns = new_ns("box");
	ck_assert_msg(link_box_add(BRIDGE, HOST_IF, ns, BOX_ADDR, box_mac, 24, GATEWAY, &err) == 0,
		      "%s", err.msg);
	expect_port_locked();
	ck_assert_int_eq(fdb_lines("02:70:0a:62:00:02 ", lines, sizeof(lines)), 1);
	ck_assert_msg(strstr(lines, "dev " HOST_IF " master " BRIDGE " static") != NULL, "%s",
		      lines);
	ck_assert_msg(strstr(lines, "permanent") == NULL, "%s", lines);
	/* Again (a daemon restart): the same, one entry. */
	ck_assert_msg(link_box_port_pin(HOST_IF, box_mac, &err) == 0, "%s", err.msg);
	expect_port_locked();
	ck_assert_int_eq(fdb_lines("02:70:0a:62:00:02 ", lines, sizeof(lines)), 1);
	/* A port made without the pin (an older daemon's): learning, no static
	 * entry (the box's own frames may have it learnt again meanwhile).
	 * Pinning puts both right: one entry, static. */
	ck_assert_int_eq(system("bridge link set dev " HOST_IF " learning on flood on && "
				"bridge fdb del 02:70:0a:62:00:02 dev " HOST_IF " master"),
			 0);
	fdb_lines("02:70:0a:62:00:02 ", lines, sizeof(lines));
	ck_assert_msg(strstr(lines, " static") == NULL, "%s", lines);
	ck_assert_msg(link_box_port_pin(HOST_IF, box_mac, &err) == 0, "%s", err.msg);
	expect_port_locked();
	ck_assert_int_eq(fdb_lines("02:70:0a:62:00:02 ", lines, sizeof(lines)), 1);
	ck_assert_msg(strstr(lines, "dev " HOST_IF " master " BRIDGE " static") != NULL, "%s",
		      lines);
	/* No such port: an error that names it. */
	ck_assert_int_lt(link_box_port_pin("pdl0v9", box_mac, &err), 0);
	ck_assert_msg(strstr(err.msg, "pdl0v9") != NULL, "%s", err.msg);
	/* The entry goes with the port. */
	ck_assert_int_eq(link_delete(HOST_IF), 0);
	ck_assert_int_eq(fdb_lines("02:70:0a:62:00:02 ", lines, sizeof(lines)), 0);
}
END_TEST

START_TEST(box_link_replaces_leftover)
{
	pd_error err = {0};
	const char *old_ns, *ns;
	unsigned old;

	isolate();
	bridge_up();
	old_ns = strdup(new_ns("old"));
	ck_assert_msg(link_box_add(BRIDGE, HOST_IF, old_ns, BOX_ADDR, box_mac, 24, GATEWAY, &err) ==
			  0,
		      "%s", err.msg);
	old = if_nametoindex(HOST_IF);
	ns = new_ns("box");
	ck_assert_msg(link_box_add(BRIDGE, HOST_IF, ns, BOX_ADDR, box_mac, 24, GATEWAY, &err) == 0,
		      "%s", err.msg);
	ck_assert_uint_gt(if_nametoindex(HOST_IF), 0);
	ck_assert_uint_ne(if_nametoindex(HOST_IF), old);
	/* The old pair is gone with its host end. */
	enter(old_ns);
	ck_assert_int_eq(if_nametoindex("eth0"), 0);
	enter(ns);
	ck_assert_uint_gt(if_nametoindex("eth0"), 0);
	free((void *)old_ns);
}
END_TEST

START_TEST(box_link_no_bridge)
{
	pd_error err = {0};
	const char *ns;

	isolate();
	ns = new_ns("box");
	ck_assert_int_eq(link_box_add(BRIDGE, HOST_IF, ns, BOX_ADDR, box_mac, 24, GATEWAY, &err),
			 -ENODEV);
	ck_assert_ptr_nonnull(strstr(err.msg, BRIDGE));
	ck_assert(!link_exists(HOST_IF));
	enter(ns);
	ck_assert_int_eq(if_nametoindex("eth0"), 0);
}
END_TEST

START_TEST(box_link_not_a_namespace)
{
	pd_error err = {0};
	const char *path = path_of("plain");

	isolate();
	bridge_up();
	ck_assert_int_lt(link_box_add(BRIDGE, HOST_IF, path, BOX_ADDR, box_mac, 24, GATEWAY, &err),
			 0);
	ck_assert_ptr_nonnull(strstr(err.msg, path));
	touch(path);
	ck_assert_int_lt(link_box_add(BRIDGE, HOST_IF, path, BOX_ADDR, box_mac, 24, GATEWAY, &err),
			 0);
	ck_assert(!link_exists(HOST_IF));
	ck_assert_int_eq(if_nametoindex("eth0"), 0);
}
END_TEST

/* The veth exists by the time the inside fails (a gateway outside the
 * box's subnet cannot be routed): it is taken down again. */
START_TEST(box_link_inside_failure_undone)
{
	pd_error err = {0};
	const char *ns;

	isolate();
	bridge_up();
	ns = new_ns("box");
	ck_assert_int_lt(link_box_add(BRIDGE, HOST_IF, ns, BOX_ADDR, box_mac, 24, 0xc0000201, &err),
			 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "box's interface"));
	ck_assert(!link_exists(HOST_IF));
	enter(ns);
	ck_assert_int_eq(if_nametoindex("eth0"), 0);
}
END_TEST

/* --- links ----------------------------------------------------------------------- */

START_TEST(link_delete_and_exists)
{
	isolate();
	ck_assert(link_exists("lo"));
	ck_assert(!link_exists("pdl-missing"));
	ck_assert_int_eq(link_delete("pdl-missing"), 0);
	bridge_up();
	ck_assert(link_exists(BRIDGE));
	ck_assert_int_eq(link_delete(BRIDGE), 0);
	ck_assert(!link_exists(BRIDGE));
	ck_assert_int_eq(if_nametoindex(BRIDGE), 0);
	ck_assert_int_eq(link_delete(BRIDGE), 0);
}
END_TEST

/* --- conntrack ---------------------------------------------------------------------- */

static void ifreq_addr(int fd, const char *label, unsigned long req, uint32_t addr)
{
	struct ifreq ifr = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", label);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(addr);
	ck_assert_msg(ioctl(fd, req, &ifr) == 0, "%s: %s", label, strerror(errno));
}

#define CT_PORT 7999

/* lo up with 10.99.0.2 and 10.99.0.3, a ct rule so that conntrack tracks
 * this namespace's traffic, and a receiver on CT_PORT: its socket, or -1
 * when the kernel has no conntrack to look at. */
static int conntrack_setup(void)
{
	struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons(CT_PORT)};
	struct ifreq ifr = {0};
	struct nft_ctx *c = nft_ctx_new(NFT_CTX_DEFAULT);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ifr.ifr_flags = IFF_UP;
	ck_assert_int_eq(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
	ifreq_addr(fd, "lo:a", SIOCSIFADDR, 0x0a630002);
	ifreq_addr(fd, "lo:b", SIOCSIFADDR, 0x0a630003);
	close(fd);

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(nft_ctx_buffer_error(c), 0);
	ck_assert_msg(nft_run_cmd_from_buffer(
			  c, "add table inet pdlt\n"
			     "add chain inet pdlt out { type filter hook output priority 0; }\n"
			     "add rule inet pdlt out ct state new accept\n") == 0,
		      "%s", nft_ctx_get_error_buffer(c));
	nft_ctx_free(c);

	if (access("/proc/net/nf_conntrack", R_OK) < 0) {
		fprintf(stderr, "# no /proc/net/nf_conntrack: conntrack checks not run\n");
		return -1;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&any, sizeof(any)), 0);
	return fd;
}

/* A UDP datagram from `from`:sport to `to`:port, delivered (a receiver is
 * bound on the port). */
static void udp_send(uint32_t from, uint16_t sport, uint32_t to, uint16_t port)
{
	struct sockaddr_in src = {
	    .sin_family = AF_INET, .sin_addr.s_addr = htonl(from), .sin_port = htons(sport)};
	struct sockaddr_in dst = {
	    .sin_family = AF_INET, .sin_addr.s_addr = htonl(to), .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	ck_assert_msg(sendto(fd, "x", 1, 0, (struct sockaddr *)&dst, sizeof(dst)) == 1,
		      "sendto: %s", strerror(errno));
	close(fd);
}

/* How many tracked connections have original source src. The reply tuple
 * of a line has its own src=, which does not count. */
static int tracked_from(const char *src)
{
	char line[1024], want[64];
	int n = 0;
	FILE *f = fopen("/proc/net/nf_conntrack", "re");

	ck_assert_ptr_nonnull(f);
	snprintf(want, sizeof(want), "src=%s ", src);
	while (fgets(line, sizeof(line), f)) {
		const char *first = strstr(line, "src=");
		if (first && strncmp(first, want, strlen(want)) == 0)
			n++;
	}
	fclose(f);
	return n;
}

START_TEST(conntrack_forget_by_source)
{
	size_t n = 99;
	int rx, r;

	isolate();
	rx = conntrack_setup();
	if (rx < 0)
		return;
	udp_send(0x0a630002, 20000, 0x0a630003, CT_PORT);
	udp_send(0x0a630003, 20000, 0x0a630002, CT_PORT); /* its reply tuple has src=10.99.0.2 */
	ck_assert_int_eq(tracked_from("10.99.0.2"), 1);
	ck_assert_int_eq(tracked_from("10.99.0.3"), 1);

	r = link_conntrack_forget(0x0a630002, &n);
	ck_assert_msg(r == 0, "%s", strerror(-r));
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(tracked_from("10.99.0.2"), 0);
	ck_assert_int_eq(tracked_from("10.99.0.3"), 1);

	n = 99;
	ck_assert_int_eq(link_conntrack_forget(0x0a630002, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(link_conntrack_forget(0x0a630002, NULL), 0);
	ck_assert_int_eq(tracked_from("10.99.0.3"), 1);
	close(rx);
}
END_TEST

START_TEST(conntrack_forget_many)
{
	size_t n = 0;
	int rx;

	isolate();
	rx = conntrack_setup();
	if (rx < 0)
		return;
	/* More than one dump message's worth, each from its own port. */
	for (int i = 0; i < 200; i++)
		udp_send(0x0a630002, (uint16_t)(20000 + i), 0x0a630003, CT_PORT);
	udp_send(0x0a630003, 20000, 0x0a630002, CT_PORT);
	ck_assert_int_eq(tracked_from("10.99.0.2"), 200);
	ck_assert_int_eq(link_conntrack_forget(0x0a630002, &n), 0);
	ck_assert_uint_eq(n, 200);
	ck_assert_int_eq(tracked_from("10.99.0.2"), 0);
	ck_assert_int_eq(tracked_from("10.99.0.3"), 1);
	close(rx);
}
END_TEST

static Suite *net_link_suite(void)
{
	Suite *s = suite_create("net-link");
	TCase *tc = tcase_create("bridge");

	tcase_add_test(tc, bridge_created_up_with_address);
	tcase_add_test(tc, bridge_again_keeps_mac);
	tcase_add_test(tc, bridge_mac_ignores_ports);
	tcase_add_test(tc, bridge_bad_name);
	suite_add_tcase(s, tc);
	tc = tcase_create("netns");
	tcase_add_test(tc, netns_create_remove);
	tcase_add_test(tc, netns_loopback_up_inside);
	tcase_add_test(tc, netns_plain_file);
	tcase_add_test(tc, netns_is_bound_exact);
	tcase_add_test(tc, netns_create_fails_cleanly);
	suite_add_tcase(s, tc);
	tc = tcase_create("box");
	tcase_add_test(tc, box_link_configures_both_ends);
	tcase_add_test(tc, box_link_replaces_leftover);
	tcase_add_test(tc, box_mac_pinned);
	tcase_add_test(tc, box_port_pinned);
	tcase_add_test(tc, box_link_no_bridge);
	tcase_add_test(tc, box_link_not_a_namespace);
	tcase_add_test(tc, box_link_inside_failure_undone);
	tcase_add_test(tc, link_delete_and_exists);
	suite_add_tcase(s, tc);
	tc = tcase_create("conntrack");
	tcase_add_test(tc, conntrack_forget_by_source);
	tcase_add_test(tc, conntrack_forget_many);
	suite_add_tcase(s, tc);
	return s;
}

/* Whether a child may have namespaces of its own (root). */
static bool can_isolate(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (pid == 0)
		_exit(unshare(CLONE_NEWNET | CLONE_NEWNS) == 0 ? 0 : 1);
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
	int r;

	if (!can_isolate()) {
		printf("1..0 # SKIP no network namespaces of our own (needs root)\n");
		return EXIT_SUCCESS;
	}
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	r = check_tap_run(net_link_suite());
	(void)rmdir(tmp_dir);
	return r;
}
