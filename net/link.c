/* net-link.c - rtnetlink with libmnl: bridge, veth pairs, addresses,
 * routes, and network namespaces bound to files. */
#include <arpa/inet.h>
#include <net/if.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_bridge.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/neighbour.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "net/link.h"
#include "common/util.h"

#define NL_BUF 8192

struct nl {
	struct mnl_socket *sock;
	unsigned portid;
	unsigned seq;
};

static int nl_open_bus(struct nl *nl, int bus)
{
	nl->sock = mnl_socket_open2(bus, SOCK_CLOEXEC);
	if (!nl->sock)
		return -errno;
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = -errno;
		mnl_socket_close(nl->sock);
		nl->sock = NULL;
		return e;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = (unsigned)time(NULL);
	return 0;
}

static int nl_open(struct nl *nl)
{
	return nl_open_bus(nl, NETLINK_ROUTE);
}

static void nl_close(struct nl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	nl->sock = NULL;
}

static struct nlmsghdr *nl_msg(char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);

	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	return h;
}

/* Sends one request and waits for its ack; cb (may be NULL) sees replies. */
static int nl_talk(struct nl *nl, struct nlmsghdr *h, mnl_cb_t cb, void *data)
{
	char buf[NL_BUF];
	ssize_t n;
	int r;

	h->nlmsg_seq = ++nl->seq;
	if (mnl_socket_sendto(nl->sock, h, h->nlmsg_len) < 0)
		return -errno;
	do {
		n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		r = mnl_cb_run(buf, (size_t)n, nl->seq, nl->portid, cb, data);
		if (r < 0)
			return errno ? -errno : -EIO;
	} while (r > 0);
	return 0;
}

static struct ifinfomsg *put_ifinfo(struct nlmsghdr *h, int family, int index)
{
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));

	ifi->ifi_family = (unsigned char)family;
	ifi->ifi_index = index;
	return ifi;
}

static int link_up(struct nl *nl, int index)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_NEWLINK, 0);
	struct ifinfomsg *ifi = put_ifinfo(h, AF_UNSPEC, index);

	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = IFF_UP;
	return nl_talk(nl, h, NULL, NULL);
}

static int addr_set(struct nl *nl, int index, uint32_t addr, unsigned prefix)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	uint32_t be = htonl(addr);

	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (unsigned char)prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (unsigned)index;
	mnl_attr_put_u32(h, IFA_LOCAL, be);
	mnl_attr_put_u32(h, IFA_ADDRESS, be);
	return nl_talk(nl, h, NULL, NULL);
}

static int index_cb(const struct nlmsghdr *h, void *data)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);

	if (h->nlmsg_type == RTM_NEWLINK)
		*(int *)data = ifi->ifi_index;
	return MNL_CB_OK;
}

static int link_index(struct nl *nl, const char *name, int *ret)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_GETLINK, 0);
	int index = 0, r;

	put_ifinfo(h, AF_UNSPEC, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	r = nl_talk(nl, h, index_cb, &index);
	if (r < 0)
		return r;
	if (index <= 0)
		return -ENODEV;
	*ret = index;
	return 0;
}

static int nl_link_delete(struct nl *nl, const char *name)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_DELLINK, 0);
	int r;

	put_ifinfo(h, AF_UNSPEC, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	r = nl_talk(nl, h, NULL, NULL);
	return r == -ENODEV ? 0 : r;
}

int link_delete(const char *name)
{
	struct nl nl;
	int r = nl_open(&nl);

	if (r < 0)
		return r;
	r = nl_link_delete(&nl, name);
	nl_close(&nl);
	return r;
}

bool link_exists(const char *name)
{
	return if_nametoindex(name) > 0;
}

struct mac_reply {
	uint8_t mac[ETH_ALEN];
	bool found;
};

static int mac_attr_cb(const struct nlattr *a, void *data)
{
	struct mac_reply *m = data;

	if (mnl_attr_get_type(a) == IFLA_ADDRESS && mnl_attr_get_payload_len(a) == ETH_ALEN) {
		memcpy(m->mac, mnl_attr_get_payload(a), ETH_ALEN);
		m->found = true;
	}
	return MNL_CB_OK;
}

static int mac_cb(const struct nlmsghdr *h, void *data)
{
	if (h->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	return mnl_attr_parse(h, sizeof(struct ifinfomsg), mac_attr_cb, data);
}

static int mac_set(struct nl *nl, int index, const uint8_t mac[ETH_ALEN])
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_NEWLINK, 0);

	put_ifinfo(h, AF_UNSPEC, index);
	mnl_attr_put(h, IFLA_ADDRESS, ETH_ALEN, mac);
	return nl_talk(nl, h, NULL, NULL);
}

/* Sets link index's MAC address to the one it has. A bridge whose address
 * was never set takes the lowest of its ports' addresses, so it changed
 * whenever the box with the lowest one stopped, and the other boxes' ARP
 * entries for their gateway went stale (no traffic until they expired).
 * Once set, it stays. */
static int mac_pin(struct nl *nl, int index)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_GETLINK, 0);
	struct mac_reply m = {0};
	int r;

	put_ifinfo(h, AF_UNSPEC, index);
	r = nl_talk(nl, h, mac_cb, &m);
	if (r < 0)
		return r;
	if (!m.found)
		return -ENODATA;
	return mac_set(nl, index, m.mac);
}

int link_bridge_ensure(const char *name, uint32_t addr, unsigned prefix, pd_error *err)
{
	char buf[NL_BUF];
	struct nlmsghdr *h;
	struct nlattr *info;
	struct nl nl;
	int index, r;

	r = nl_open(&nl);
	if (r < 0)
		return pd_error_set(err, r, "cannot open rtnetlink: %s", strerror(-r));
	h = nl_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	put_ifinfo(h, AF_UNSPEC, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	info = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_strz(h, IFLA_INFO_KIND, "bridge");
	mnl_attr_nest_end(h, info);
	r = nl_talk(&nl, h, NULL, NULL);
	if (r < 0 && r != -EEXIST) {
		pd_error_set(err, r, "cannot create bridge %s: %s", name, strerror(-r));
		goto out;
	}
	r = link_index(&nl, name, &index);
	if (r >= 0)
		r = mac_pin(&nl, index);
	if (r >= 0)
		r = addr_set(&nl, index, addr, prefix);
	if (r >= 0)
		r = link_up(&nl, index);
	if (r < 0)
		pd_error_set(err, r, "cannot set up bridge %s: %s", name, strerror(-r));
out:
	nl_close(&nl);
	return r < 0 ? r : 0;
}

/* --- namespaces ----------------------------------------------------------- */

struct ns_job {
	const char *path;
	int r;
};

/* Runs on its own thread: a namespace change stays with this thread. */
static void *ns_create_thread(void *data)
{
	struct ns_job *job = data;
	struct nl nl = {0};

	if (unshare(CLONE_NEWNET) < 0) {
		job->r = -errno;
		return NULL;
	}
	if (mount("/proc/thread-self/ns/net", job->path, NULL, MS_BIND, NULL) < 0) {
		job->r = -errno;
		return NULL;
	}
	job->r = nl_open(&nl);
	if (job->r >= 0)
		job->r = link_up(&nl, 1); /* lo is always index 1 */
	nl_close(&nl);
	if (job->r < 0)
		(void)umount2(job->path, MNT_DETACH);
	return NULL;
}

int link_netns_create(const char *path, pd_error *err)
{
	struct ns_job job = {.path = path};
	pthread_t t;
	int fd, r;

	if (link_netns_is_bound(path))
		return pd_error_set(err, -EEXIST, "%s is already a namespace", path);
	/* A leftover plain file (nothing bound on it) is reused. */
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0444);
	if (fd < 0)
		return pd_error_set(err, -errno, "cannot create %s: %s", path, strerror(errno));
	close(fd);
	r = -pthread_create(&t, NULL, ns_create_thread, &job);
	if (r == 0) {
		pthread_join(t, NULL);
		r = job.r;
	}
	if (r < 0) {
		unlink(path);
		return pd_error_set(err, r, "cannot make a network namespace: %s", strerror(-r));
	}
	return 0;
}

bool link_netns_is_bound(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct statfs fs;

	/* A namespace bound on a file is an nsfs inode there; any other mount
	 * point (another file system's device) is not one. */
	return fd >= 0 && fstatfs(fd, &fs) == 0 && fs.f_type == NSFS_MAGIC &&
	       ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
}

int link_netns_remove(const char *path)
{
	return unbind_remove(path);
}

/* --- a box's link -------------------------------------------------------- */

static int route_default(struct nl *nl, int index, uint32_t gateway)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(h, sizeof(*rt));

	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	mnl_attr_put_u32(h, RTA_GATEWAY, htonl(gateway));
	mnl_attr_put_u32(h, RTA_OIF, (uint32_t)index);
	return nl_talk(nl, h, NULL, NULL);
}

/* A box's port on the bridge: isolated (no frame to another isolated port),
 * learning nothing and given no unicast frame whose destination the bridge
 * does not know (broadcast and multicast, ARP among them, still flood). */
static int port_lock(struct nl *nl, int index)
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_SETLINK, 0);
	struct nlattr *prot;

	put_ifinfo(h, AF_BRIDGE, index);
	prot = mnl_attr_nest_start(h, IFLA_PROTINFO);
	mnl_attr_put_u8(h, IFLA_BRPORT_ISOLATED, 1);
	mnl_attr_put_u8(h, IFLA_BRPORT_LEARNING, 0);
	mnl_attr_put_u8(h, IFLA_BRPORT_UNICAST_FLOOD, 0);
	mnl_attr_nest_end(h, prot);
	return nl_talk(nl, h, NULL, NULL);
}

/* Puts a static entry for mac on port index in its bridge's forwarding
 * database (replacing one the bridge learnt), so frames to the box go to
 * its port alone even when the box has been silent for a long time, where
 * a learnt entry would have aged out and the bridge would flood them to
 * every port. NUD_NOARP is a static entry that forwards; NUD_PERMANENT
 * would make it local (frames for mac kept by the host). The entry goes
 * with the port. */
static int fdb_static(struct nl *nl, int index, const uint8_t mac[ETH_ALEN])
{
	char buf[NL_BUF];
	struct nlmsghdr *h = nl_msg(buf, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE);
	struct ndmsg *nd = mnl_nlmsg_put_extra_header(h, sizeof(*nd));

	nd->ndm_family = AF_BRIDGE;
	nd->ndm_ifindex = index;
	nd->ndm_state = NUD_NOARP;
	nd->ndm_flags = NTF_MASTER;
	mnl_attr_put(h, NDA_LLADDR, ETH_ALEN, mac);
	return nl_talk(nl, h, NULL, NULL);
}

static int port_pin(struct nl *nl, int index, const uint8_t mac[ETH_ALEN])
{
	int r = port_lock(nl, index);

	return r < 0 ? r : fdb_static(nl, index, mac);
}

int link_box_port_pin(const char *host_name, const uint8_t mac[6], pd_error *err)
{
	struct nl nl;
	int index, r;

	r = nl_open(&nl);
	if (r < 0)
		return pd_error_set(err, r, "cannot open rtnetlink: %s", strerror(-r));
	r = link_index(&nl, host_name, &index);
	if (r >= 0)
		r = port_pin(&nl, index, mac);
	nl_close(&nl);
	if (r < 0)
		return pd_error_set(err, r, "cannot pin port %s to the box's MAC: %s", host_name,
				    strerror(-r));
	return 0;
}

void link_box_mac(uint32_t addr, uint8_t mac[6])
{
	mac[0] = 0x02;
	mac[1] = 0x70;
	mac[2] = (uint8_t)(addr >> 24);
	mac[3] = (uint8_t)(addr >> 16);
	mac[4] = (uint8_t)(addr >> 8);
	mac[5] = (uint8_t)addr;
}

struct inside_job {
	int ns_fd;
	const uint8_t *mac_only; /* set: only eth0's MAC to this */
	uint32_t addr, gateway;
	unsigned prefix;
	int r;
};

/* In the box's namespace (a thread of its own: setns() changes only the
 * calling thread): configures eth0, or only sets its MAC. */
static void *inside_thread(void *data)
{
	struct inside_job *job = data;
	struct nl nl = {0};
	int index;

	if (setns(job->ns_fd, CLONE_NEWNET) < 0) {
		job->r = -errno;
		return NULL;
	}
	job->r = nl_open(&nl);
	if (job->r >= 0)
		job->r = link_index(&nl, "eth0", &index);
	if (job->r >= 0 && job->mac_only) {
		job->r = mac_set(&nl, index, job->mac_only);
		nl_close(&nl);
		return NULL;
	}
	if (job->r >= 0)
		job->r = link_up(&nl, 1); /* lo: a namespace made elsewhere has it down */
	if (job->r >= 0)
		job->r = addr_set(&nl, index, job->addr, job->prefix);
	if (job->r >= 0)
		job->r = link_up(&nl, index);
	if (job->r >= 0)
		job->r = route_default(&nl, index, job->gateway);
	nl_close(&nl);
	return NULL;
}

/* Runs job in the namespace of job->ns_fd (see inside_thread). */
static int inside_run(struct inside_job *job)
{
	pthread_t t;
	int r = -pthread_create(&t, NULL, inside_thread, job);

	if (r == 0) {
		pthread_join(t, NULL);
		r = job->r;
	}
	return r;
}

int link_box_set_mac(const char *ns_path, const uint8_t mac[6], pd_error *err)
{
	_cleanup_close_ int ns_fd = open(ns_path, O_RDONLY | O_CLOEXEC);
	struct inside_job job = {.ns_fd = ns_fd, .mac_only = mac};
	int r;

	if (ns_fd < 0)
		return pd_error_set(err, -errno, "cannot open %s: %s", ns_path, strerror(errno));
	r = inside_run(&job);
	if (r < 0)
		return pd_error_set(err, r, "cannot set the box's MAC address: %s", strerror(-r));
	return 0;
}

int link_box_add(const char *bridge, const char *host_name, const char *ns_path, uint32_t addr,
		 const uint8_t mac[6], unsigned prefix, uint32_t gateway, pd_error *err)
{
	char buf[NL_BUF];
	_cleanup_close_ int ns_fd = -1;
	struct nlmsghdr *h;
	struct nlattr *info, *data, *peer;
	struct inside_job job;
	struct nl nl;
	int br, index, r;

	ns_fd = open(ns_path, O_RDONLY | O_CLOEXEC);
	if (ns_fd < 0)
		return pd_error_set(err, -errno, "cannot open %s: %s", ns_path, strerror(errno));
	r = nl_open(&nl);
	if (r < 0)
		return pd_error_set(err, r, "cannot open rtnetlink: %s", strerror(-r));
	r = link_index(&nl, bridge, &br);
	if (r < 0) {
		pd_error_set(err, r, "no bridge %s: %s", bridge, strerror(-r));
		goto out;
	}
	(void)nl_link_delete(&nl, host_name);

	h = nl_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	put_ifinfo(h, AF_UNSPEC, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, host_name);
	mnl_attr_put_u32(h, IFLA_MASTER, (uint32_t)br);
	info = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_strz(h, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
	peer = mnl_attr_nest_start(h, VETH_INFO_PEER);
	put_ifinfo(h, AF_UNSPEC, 0);
	mnl_attr_put_strz(h, IFLA_IFNAME, "eth0");
	mnl_attr_put(h, IFLA_ADDRESS, ETH_ALEN, mac);
	mnl_attr_put_u32(h, IFLA_NET_NS_FD, (uint32_t)ns_fd);
	mnl_attr_nest_end(h, peer);
	mnl_attr_nest_end(h, data);
	mnl_attr_nest_end(h, info);
	r = nl_talk(&nl, h, NULL, NULL);
	if (r < 0) {
		pd_error_set(err, r, "cannot create veth %s: %s", host_name, strerror(-r));
		goto out;
	}
	r = link_index(&nl, host_name, &index);
	if (r >= 0)
		r = port_pin(&nl, index, mac);
	if (r >= 0)
		r = link_up(&nl, index);
	if (r < 0) {
		pd_error_set(err, r, "cannot set up veth %s: %s", host_name, strerror(-r));
		goto undo;
	}
	job =
	    (struct inside_job){.ns_fd = ns_fd, .addr = addr, .gateway = gateway, .prefix = prefix};
	r = inside_run(&job);
	if (r < 0) {
		pd_error_set(err, r, "cannot configure the box's interface: %s", strerror(-r));
		goto undo;
	}
	goto out;
undo:
	(void)nl_link_delete(&nl, host_name);
out:
	nl_close(&nl);
	return r < 0 ? r : 0;
}

/* --- conntrack -------------------------------------------------------------- */

/* One entry to delete: its original tuple (the attribute's payload) and
 * zone, as the dump gave them. */
struct ct_entry {
	uint16_t tuple_len;
	bool has_zone;
	uint16_t zone; /* as sent: big-endian */
	char tuple[512];
};

struct ct_dump {
	uint32_t addr_be;
	bool keep_tcp; /* skip TCP flows */
	struct ct_entry *entries;
	size_t n, cap;
	int r;
};

/* Attributes by type into tb (up to max), for mnl_attr_parse*(). */
struct ct_table {
	const struct nlattr **tb;
	unsigned max;
};

static int ct_attr_cb(const struct nlattr *a, void *data)
{
	struct ct_table *t = data;
	unsigned type = mnl_attr_get_type(a);

	if (type <= t->max)
		t->tb[type] = a;
	return MNL_CB_OK;
}

static int ct_dump_cb(const struct nlmsghdr *h, void *data)
{
	struct ct_dump *d = data;
	const struct nlattr *tb[CTA_MAX + 1] = {0};
	const struct nlattr *tuple[CTA_TUPLE_MAX + 1] = {0};
	const struct nlattr *ip[CTA_IP_MAX + 1] = {0};
	struct ct_entry *e;
	uint16_t len;

	struct ct_table t_tb = {tb, CTA_MAX}, t_tuple = {tuple, CTA_TUPLE_MAX},
			t_ip = {ip, CTA_IP_MAX};

	if (mnl_attr_parse(h, sizeof(struct nfgenmsg), ct_attr_cb, &t_tb) < 0 ||
	    !tb[CTA_TUPLE_ORIG] ||
	    mnl_attr_parse_nested(tb[CTA_TUPLE_ORIG], ct_attr_cb, &t_tuple) < 0 ||
	    !tuple[CTA_TUPLE_IP] ||
	    mnl_attr_parse_nested(tuple[CTA_TUPLE_IP], ct_attr_cb, &t_ip) < 0 ||
	    !ip[CTA_IP_V4_SRC] || mnl_attr_get_payload_len(ip[CTA_IP_V4_SRC]) != 4)
		return MNL_CB_OK;
	if (mnl_attr_get_u32(ip[CTA_IP_V4_SRC]) != d->addr_be)
		return MNL_CB_OK;
	if (d->keep_tcp) {
		const struct nlattr *proto[CTA_PROTO_MAX + 1] = {0};
		struct ct_table t_proto = {proto, CTA_PROTO_MAX};
		if (tuple[CTA_TUPLE_PROTO] &&
		    mnl_attr_parse_nested(tuple[CTA_TUPLE_PROTO], ct_attr_cb, &t_proto) >= 0 &&
		    proto[CTA_PROTO_NUM] && mnl_attr_get_u8(proto[CTA_PROTO_NUM]) == IPPROTO_TCP)
			return MNL_CB_OK;
	}
	len = mnl_attr_get_payload_len(tb[CTA_TUPLE_ORIG]);
	if (len > sizeof(e->tuple))
		return MNL_CB_OK;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct ct_entry *ne = realloc(d->entries, cap * sizeof(*ne));
		if (!ne) {
			d->r = -ENOMEM;
			return MNL_CB_OK;
		}
		d->entries = ne;
		d->cap = cap;
	}
	e = &d->entries[d->n++];
	e->tuple_len = len;
	memcpy(e->tuple, mnl_attr_get_payload(tb[CTA_TUPLE_ORIG]), len);
	e->has_zone = tb[CTA_ZONE] && mnl_attr_get_payload_len(tb[CTA_ZONE]) == 2;
	e->zone = e->has_zone ? mnl_attr_get_u16(tb[CTA_ZONE]) : 0;
	return MNL_CB_OK;
}

static struct nlmsghdr *ct_msg(char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = nl_msg(buf, (uint16_t)(NFNL_SUBSYS_CTNETLINK << 8 | type), flags);
	struct nfgenmsg *g = mnl_nlmsg_put_extra_header(h, sizeof(*g));

	g->nfgen_family = AF_INET;
	g->version = NFNETLINK_V0;
	g->res_id = 0;
	return h;
}

/* One pass: dumps the table, then deletes addr's entries that the dump
 * showed. *ret_gone: how many went. */
static int conntrack_forget_pass(struct nl *nl, uint32_t addr, bool keep_tcp, size_t *ret_gone)
{
	struct ct_dump d = {.addr_be = htonl(addr), .keep_tcp = keep_tcp};
	char buf[NL_BUF];
	size_t gone = 0;
	int r;

	r = nl_talk(nl, ct_msg(buf, IPCTNL_MSG_CT_GET, NLM_F_DUMP), ct_dump_cb, &d);
	if (r >= 0)
		r = d.r;
	for (size_t i = 0; r >= 0 && i < d.n; i++) {
		struct nlmsghdr *h = ct_msg(buf, IPCTNL_MSG_CT_DELETE, 0);
		int q;

		mnl_attr_put(h, CTA_TUPLE_ORIG | NLA_F_NESTED, d.entries[i].tuple_len,
			     d.entries[i].tuple);
		if (d.entries[i].has_zone)
			mnl_attr_put_u16(h, CTA_ZONE, d.entries[i].zone);
		q = nl_talk(nl, h, NULL, NULL);
		if (q >= 0)
			gone++;
		else if (q != -ENOENT) /* gone by itself meanwhile: fine */
			r = q;
	}
	free(d.entries);
	*ret_gone = gone;
	return r;
}

/* A dump is not a snapshot: a table that changes while it is read (the
 * garbage collector expiring the flows of a busy box, new flows) may
 * leave entries out of it (a multi-part dump resumes after the last entry
 * it sent, gone meanwhile), or end it with NLM_F_DUMP_INTR (EINTR). So
 * passes repeat until one finds nothing of addr's left, at most
 * CT_FORGET_PASSES of them. */
#define CT_FORGET_PASSES 4

static int conntrack_forget(uint32_t addr, bool keep_tcp, size_t *ret_n)
{
	size_t total = 0;
	int r = 0;

	if (ret_n)
		*ret_n = 0;
	for (unsigned pass = 0; pass < CT_FORGET_PASSES; pass++) {
		struct nl nl;
		size_t gone = 0;

		/* A socket per pass: an interrupted dump leaves its rest
		 * queued on the old one. */
		r = nl_open_bus(&nl, NETLINK_NETFILTER);
		if (r < 0)
			break;
		r = conntrack_forget_pass(&nl, addr, keep_tcp, &gone);
		nl_close(&nl);
		total += gone;
		if (r == -EINTR || r == -EBUSY) {
			r = 0;
			continue;
		}
		if (r < 0 || (pass > 0 && gone == 0))
			break;
	}
	if (ret_n)
		*ret_n = total;
	return r;
}

int link_conntrack_forget(uint32_t addr, size_t *ret_n)
{
	return conntrack_forget(addr, false, ret_n);
}

int link_conntrack_forget_non_tcp(uint32_t addr, size_t *ret_n)
{
	return conntrack_forget(addr, true, ret_n);
}
