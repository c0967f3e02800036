/* net-nft.c - render and apply the daemon's nftables tables, whole or one
 * box at a time. */
#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <nftables/libnftables.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/nft.h"
#include "common/lock.h"
#include "common/util.h"

#define IP4(a) (a) >> 24, ((a) >> 16) & 0xff, ((a) >> 8) & 0xff, (a)&0xff
#define IP4F "%u.%u.%u.%u"
#define MAC(m) (m)[0], (m)[1], (m)[2], (m)[3], (m)[4], (m)[5]
#define MACF "%02x:%02x:%02x:%02x:%02x:%02x"

/* --- rendering ------------------------------------------------------------ */

struct cidr {
	uint32_t addr;
	unsigned prefix;
};

static int cidr_cmp(const void *a, const void *b)
{
	const struct cidr *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->prefix < y->prefix ? -1 : x->prefix > y->prefix;
}

static uint32_t prefix_mask(unsigned prefix)
{
	return prefix ? ~0u << (32 - prefix) : 0;
}

/* The allowlist's networks that no other entry contains, sorted, in *ret
 * (count in *ret_n; NULL and 0 for other modes). Two networks either nest
 * or are disjoint, so after sorting by address and then by size (larger
 * first) a network is dropped when the last one kept contains it. */
static int policy_nets(const struct policy *p, struct cidr **ret, size_t *ret_n)
{
	struct cidr *v;
	size_t n = 0, kept = 0;

	*ret = NULL;
	*ret_n = 0;
	if (p->mode != POLICY_ALLOWLIST)
		return 0;
	v = calloc(p->n_entries + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_entries; i++)
		if (p->entries[i].kind == POLICY_CIDR)
			v[n++] = (struct cidr){p->entries[i].addr, p->entries[i].prefix};
	qsort(v, n, sizeof(*v), cidr_cmp);
	for (size_t i = 0; i < n; i++) {
		if (kept && (v[i].addr & prefix_mask(v[kept - 1].prefix)) == v[kept - 1].addr)
			continue;
		v[kept++] = v[i];
	}
	*ret = v;
	*ret_n = kept;
	return 0;
}

static int elem_cmp(const void *a, const void *b)
{
	const struct nft_elem *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* box->names sorted, one element per address (never expiring if any copy
 * never expires, else the longest timeout). */
static int box_names(const struct nft_box *b, struct nft_elem **ret, size_t *ret_n)
{
	struct nft_elem *v;
	size_t kept = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!b->n_names)
		return 0;
	v = malloc(b->n_names * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, b->names, b->n_names * sizeof(*v));
	qsort(v, b->n_names, sizeof(*v), elem_cmp);
	for (size_t i = 0; i < b->n_names; i++) {
		struct nft_elem *last = kept ? &v[kept - 1] : NULL;
		if (last && last->addr == v[i].addr) {
			if (last->timeout_s &&
			    (!v[i].timeout_s || v[i].timeout_s > last->timeout_s))
				last->timeout_s = v[i].timeout_s;
			continue;
		}
		v[kept++] = v[i];
	}
	*ret = v;
	*ret_n = kept;
	return 0;
}

/* A box's normalised networks and names (see policy_nets, box_names). */
struct box_elems {
	struct cidr *nets;
	size_t n_nets;
	struct nft_elem *names;
	size_t n_names;
};

static void box_elems_release(struct box_elems *e)
{
	free(e->nets);
	free(e->names);
}

static int box_elems_init(struct box_elems *e, const struct nft_box *b, bool names)
{
	int r = policy_nets(b->policy, &e->nets, &e->n_nets);

	e->names = NULL;
	e->n_names = 0;
	if (r >= 0 && names)
		r = box_names(b, &e->names, &e->n_names);
	if (r < 0)
		box_elems_release(e);
	return r;
}

/* "a.b.c.d/p, ..." */
static void put_nets(FILE *f, const struct box_elems *e)
{
	for (size_t i = 0; i < e->n_nets; i++)
		fprintf(f, "%s" IP4F "/%u", i ? ", " : "", IP4(e->nets[i].addr), e->nets[i].prefix);
}

/* "a.b.c.d timeout Ns, ..." */
static void put_names(FILE *f, const struct box_elems *e)
{
	for (size_t i = 0; i < e->n_names; i++) {
		fprintf(f, "%s" IP4F, i ? ", " : "", IP4(e->names[i].addr));
		if (e->names[i].timeout_s)
			fprintf(f, " timeout %us", e->names[i].timeout_s);
	}
}

/* The start of one of box_N's rules: inside the table's block (table NULL)
 * or as a command. */
static void rule_lead(FILE *f, const char *table, const struct nft_box *b)
{
	if (table)
		fprintf(f, "add rule inet %s box_%lld ", table, (long long)b->id);
	else
		fprintf(f, "\t\t");
}

/* The rules of box_N (see rule_lead for table). */
static void put_rules(FILE *f, const char *table, const struct nft_box *b)
{
	const struct policy *p = b->policy;
	long long id = (long long)b->id;

	rule_lead(f, table, b);
	if (p->mode == POLICY_ALLOW_ALL) {
		fprintf(f, "accept\n");
		return;
	}
	if (p->mode == POLICY_ALLOWLIST) {
		fprintf(f, "ip daddr @box_%lld_nets accept\n", id);
		rule_lead(f, table, b);
		fprintf(f, "ip daddr @box_%lld_names accept\n", id);
		rule_lead(f, table, b);
	}
	fprintf(f, "meta l4proto tcp reject with tcp reset\n");
	rule_lead(f, table, b);
	fprintf(f, "reject with icmpx admin-prohibited\n");
}

/* One element of the bridge table's set `ports`: "ifname" . MAC . address. */
static void put_port(FILE *f, const struct nft_box *b)
{
	fprintf(f, "\"%s\" . " MACF " . " IP4F, b->ifname, MAC(b->mac), IP4(b->addr));
}

/* A memstream's text into *ret; -ENOMEM if writing failed (r < 0 from a
 * put_* helper, or the stream). */
static int finish(FILE *f, char **buf, int r, char **ret)
{
	/* fclose() sets *buf. */
	if (fclose(f) != 0 || r < 0) {
		free(*buf);
		return -ENOMEM;
	}
	*ret = *buf;
	return 0;
}

static int render_box(FILE *f, const struct nft_box *b)
{
	long long id = (long long)b->id;
	struct box_elems e;
	int r = box_elems_init(&e, b, true);

	if (r < 0)
		return r;
	fprintf(f, "\tset box_%lld_names {\n\t\ttype ipv4_addr\n\t\tflags timeout\n", id);
	if (e.n_names) {
		fprintf(f, "\t\telements = { ");
		put_names(f, &e);
		fprintf(f, " }\n");
	}
	fprintf(f, "\t}\n\tset box_%lld_nets {\n\t\ttype ipv4_addr\n\t\tflags interval\n", id);
	if (e.n_nets) {
		fprintf(f, "\t\telements = { ");
		put_nets(f, &e);
		fprintf(f, " }\n");
	}
	fprintf(f, "\t}\n\tchain box_%lld {\n", id);
	put_rules(f, NULL, b);
	fprintf(f, "\t}\n");
	box_elems_release(&e);
	return 0;
}

int nft_render(const struct nft_net *net, const struct nft_box *boxes, size_t n, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r = 0;

	if (!f)
		return -ENOMEM;
	fprintf(f, "add table inet %s\ndelete table inet %s\ntable inet %s {\n", net->table,
		net->table, net->table);
	/* Routed packets from a box come in on the bridge, not on the box's
	 * port: the box is told by its source address, which the bridge
	 * table below pins to its port. */
	fprintf(f, "\tmap boxes {\n\t\ttype ipv4_addr : verdict\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s" IP4F " : jump box_%lld", i ? ", " : "\t\telements = { ",
			IP4(boxes[i].addr), (long long)boxes[i].id);
	fprintf(f, "%s\t}\n", n ? " }\n" : "");
	for (size_t i = 0; i < n && r >= 0; i++)
		r = render_box(f, &boxes[i]);
	fprintf(f,
		"\tchain input {\n"
		"\t\ttype filter hook input priority filter; policy accept;\n"
		"\t\tiifname \"%s\" jump from_boxes_to_host\n"
		"\t}\n"
		"\tchain from_boxes_to_host {\n"
		"\t\tct state established,related accept\n"
		"\t\tip daddr " IP4F " udp dport 53 accept\n"
		"\t\tip daddr " IP4F " tcp dport 53 accept\n"
		"\t\tdrop\n"
		"\t}\n",
		net->bridge, IP4(net->resolver), IP4(net->resolver));
	fprintf(f,
		"\tchain forward {\n"
		"\t\ttype filter hook forward priority filter; policy accept;\n"
		"\t\toifname \"%s\" ct state established,related accept\n"
		"\t\toifname \"%s\" drop\n"
		"\t\tiifname \"%s\" jump from_boxes\n"
		"\t}\n"
		"\tchain from_boxes {\n"
		"\t\tip daddr 169.254.0.0/16 drop\n"
		"\t\tmeta l4proto tcp ct state established,related accept\n"
		"\t\tct state related accept\n"
		"\t\tmeta nfproto ipv6 drop\n"
		"\t\tudp dport 53 drop\n"
		"\t\ttcp dport 53 drop\n"
		"\t\tip saddr vmap @boxes\n"
		"\t\tdrop\n"
		"\t}\n",
		net->bridge, net->bridge, net->bridge);
	fprintf(f,
		"\tchain postrouting {\n"
		"\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
		"\t\tip saddr " IP4F "/%u oifname != \"%s\" masquerade\n"
		"\t}\n}\n",
		IP4(net->subnet), net->prefix, net->bridge);
	/* Anti-spoofing on the bridge ports, the same rules whatever the
	 * boxes: only the set `ports` changes with them. Prerouting runs
	 * before the bridge learns a source MAC: a dropped frame teaches its
	 * forwarding database nothing. */
	fprintf(f, "add table bridge %s\ndelete table bridge %s\ntable bridge %s {\n", net->table,
		net->table, net->table);
	fprintf(f, "\tset ports {\n\t\ttype ifname . ether_addr . ipv4_addr\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s", i ? ", " : "\t\telements = { ");
		put_port(f, &boxes[i]);
	}
	fprintf(f, "%s\t}\n", n ? " }\n" : "");
	fprintf(f,
		"\tchain ports_in {\n"
		"\t\ttype filter hook prerouting priority filter; policy accept;\n"
		"\t\tiifname \"%sv*\" jump from_port\n"
		"\t}\n"
		"\tchain from_port {\n"
		"\t\tether type ip iifname . ether saddr . ip saddr @ports accept\n"
		"\t\tether type arp arp htype 1 arp ptype ip arp hlen 6 arp plen 4 "
		"iifname . ether saddr . arp saddr ip @ports "
		"iifname . arp saddr ether . arp saddr ip @ports accept\n"
		"\t\tdrop\n"
		"\t}\n}\n",
		net->bridge);
	return finish(f, &buf, r, ret);
}

/* Commands filling box_N (emptied before): "add element" lines for
 * box_N_names (when names) and box_N_nets, each only when it has elements
 * (an empty "elements = { }" does not parse), then the rules. */
static int put_policy(FILE *f, const struct nft_net *net, const struct nft_box *b, bool names)
{
	struct box_elems e;
	int r = box_elems_init(&e, b, names);

	if (r < 0)
		return r;
	if (e.n_names) {
		fprintf(f, "add element inet %s box_%lld_names { ", net->table, (long long)b->id);
		put_names(f, &e);
		fprintf(f, " }\n");
	}
	if (e.n_nets) {
		fprintf(f, "add element inet %s box_%lld_nets { ", net->table, (long long)b->id);
		put_nets(f, &e);
		fprintf(f, " }\n");
	}
	box_elems_release(&e);
	put_rules(f, net->table, b);
	return 0;
}

enum box_op { BOX_ADD, BOX_REMOVE, BOX_POLICY };

static int render_box_op(enum box_op op, const struct nft_net *net, const struct nft_box *box,
			 char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *t = net->table;
	long long id = (long long)box->id;
	int r = 0;

	if (!f)
		return -ENOMEM;
	switch (op) {
	case BOX_ADD:
		/* "add" leaves an existing set or chain alone: empty them, so
		 * the box gets exactly its policy even over leftovers. */
		fprintf(f,
			"add set inet %s box_%lld_names { type ipv4_addr; flags timeout; }\n"
			"add set inet %s box_%lld_nets { type ipv4_addr; flags interval; }\n"
			"add chain inet %s box_%lld\n"
			"flush chain inet %s box_%lld\n"
			"flush set inet %s box_%lld_names\n"
			"flush set inet %s box_%lld_nets\n",
			t, id, t, id, t, id, t, id, t, id, t, id);
		r = put_policy(f, net, box, true);
		/* Last: the chain has its rules before anything leads to it. */
		fprintf(f,
			"add element inet %s boxes { " IP4F " : jump box_%lld }\n"
			"add element bridge %s ports { ",
			t, IP4(box->addr), id, t);
		put_port(f, box);
		fprintf(f, " }\n");
		break;
	case BOX_REMOVE:
		/* First: nothing leads to the chain any more. */
		fprintf(f,
			"delete element inet %s boxes { " IP4F " }\n"
			"flush chain inet %s box_%lld\n"
			"delete chain inet %s box_%lld\n"
			"delete set inet %s box_%lld_names\n"
			"delete set inet %s box_%lld_nets\n"
			"delete element bridge %s ports { ",
			t, IP4(box->addr), t, id, t, id, t, id, t, id, t);
		put_port(f, box);
		fprintf(f, " }\n");
		break;
	case BOX_POLICY:
		fprintf(f, "flush chain inet %s box_%lld\nflush set inet %s box_%lld_nets\n", t, id,
			t, id);
		r = put_policy(f, net, box, false);
		break;
	}
	return finish(f, &buf, r, ret);
}

int nft_render_box_add(const struct nft_net *net, const struct nft_box *box, char **ret)
{
	return render_box_op(BOX_ADD, net, box, ret);
}

int nft_render_box_remove(const struct nft_net *net, const struct nft_box *box, char **ret)
{
	return render_box_op(BOX_REMOVE, net, box, ret);
}

int nft_render_box_policy(const struct nft_net *net, const struct nft_box *box, char **ret)
{
	return render_box_op(BOX_POLICY, net, box, ret);
}

/* --- the kernel ----------------------------------------------------------- */

static struct pd_mutex ctx_lock = PD_MUTEX_INITIALIZER(LOCK_RANK_LEAF, 0, "nft ctx_lock");
static struct nft_ctx *ctx; /* kept open; NULL until first use, or after a failure */
static int ctx_fd = -1;	    /* its netlink socket, once marked close-on-exec */

static bool is_nfnetlink(int fd)
{
	int v;
	socklen_t l = sizeof v;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0 || v != AF_NETLINK)
		return false;
	l = sizeof v;
	return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) == 0 && v == NETLINK_NETFILTER;
}

/* libnftables (1.0.6) opens its netlink socket without SOCK_CLOEXEC and
 * does not hand it out; a kept context would leak it into every child.
 * Marks the netfilter netlink sockets that lack the flag (the daemon's own
 * fds all have it). Cheap when the socket is the one marked before. */
static void ctx_cloexec(void)
{
	int fl = ctx_fd >= 0 ? fcntl(ctx_fd, F_GETFD) : -1;
	struct dirent *de;
	DIR *d;

	if (fl >= 0 && (fl & FD_CLOEXEC) && is_nfnetlink(ctx_fd))
		return;
	d = opendir("/proc/self/fd");
	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);
		if (de->d_name[0] == '.' || fd == dirfd(d))
			continue;
		fl = fcntl(fd, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC) && is_nfnetlink(fd) &&
		    fcntl(fd, F_SETFD, fl | FD_CLOEXEC) == 0)
			ctx_fd = fd;
	}
	closedir(d);
}

static void ctx_drop(void)
{
	nft_ctx_free(ctx);
	ctx = NULL;
	ctx_fd = -1;
}

/* Runs text (one batch) on the kept context, made on first use; with
 * ret_out, in JSON output mode, *ret_out gets what nft printed. After a
 * failure the context is dropped: its cache may be out of step. */
static int nft_run_out(const char *text, char **ret_out, pd_error *err)
{
	int r = 0;

	pd_mutex_lock(&ctx_lock);
	if (!ctx) {
		ctx = nft_ctx_new(NFT_CTX_DEFAULT);
		if (!ctx) {
			r = pd_error_set(err, -ENOMEM, "cannot create an nftables context");
			goto out;
		}
		if (nft_ctx_buffer_error(ctx) < 0 || nft_ctx_buffer_output(ctx) < 0) {
			ctx_drop();
			r = pd_error_set(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
	ctx_cloexec();
	nft_ctx_output_set_flags(ctx, ret_out ? NFT_CTX_OUTPUT_JSON : 0);
	r = nft_run_cmd_from_buffer(ctx, text);
	nft_ctx_output_set_flags(ctx, 0);
	ctx_cloexec();
	/* Reading the buffers empties them for the next run. */
	const char *msg = nft_ctx_get_error_buffer(ctx);
	const char *output = nft_ctx_get_output_buffer(ctx);
	if (r != 0) {
		/* nft's first line is "Error: ..."; the rest points into text. */
		size_t l = msg ? strcspn(msg, "\n") : 0;
		r = pd_error_set(err, -EIO, "nftables refused the rules: %.*s", (int)l,
				 l ? msg : "no message");
		ctx_drop();
	} else if (ret_out) {
		*ret_out = strdup(output ? output : "");
		if (!*ret_out)
			r = pd_error_set(err, -ENOMEM, "out of memory");
	}
out:
	pd_mutex_unlock(&ctx_lock);
	return r;
}

static int nft_run(const char *text, pd_error *err)
{
	return nft_run_out(text, NULL, err);
}

int nft_exec(const char *text, pd_error *err)
{
	return nft_run(text, err);
}

int nft_list_json(const char *cmd, char **ret, pd_error *err)
{
	return nft_run_out(cmd, ret, err);
}

static int run_box_op(enum box_op op, const struct nft_net *net, const struct nft_box *box,
		      pd_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r = render_box_op(op, net, box, &text);

	if (r < 0)
		return pd_error_set(err, r, "out of memory");
	return nft_run(text, err);
}

int nft_apply(const struct nft_net *net, const struct nft_box *boxes, size_t n, pd_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r = nft_render(net, boxes, n, &text);

	if (r < 0)
		return pd_error_set(err, r, "out of memory");
	return nft_run(text, err);
}

int nft_box_add(const struct nft_net *net, const struct nft_box *box, pd_error *err)
{
	return run_box_op(BOX_ADD, net, box, err);
}

int nft_box_remove(const struct nft_net *net, const struct nft_box *box, pd_error *err)
{
	return run_box_op(BOX_REMOVE, net, box, err);
}

int nft_box_set_policy(const struct nft_net *net, const struct nft_box *box, pd_error *err)
{
	return run_box_op(BOX_POLICY, net, box, err);
}

int nft_remove(const char *table, pd_error *err)
{
	char text[256];

	snprintf(
	    text, sizeof(text),
	    "add table inet %s\ndelete table inet %s\nadd table bridge %s\ndelete table bridge "
	    "%s\n",
	    table, table, table, table);
	return nft_run(text, err);
}

/* --- box_N_names over nfnetlink ------------------------------------------ */

/* Elements per transaction: keeps a batch (about 40 bytes an element, twice
 * with deletes) well under a netlink socket's send buffer. */
#define NAMES_BATCH 1024

static struct pd_mutex nl_lock = PD_MUTEX_INITIALIZER(LOCK_RANK_LEAF, 0, "nft nl_lock");
static struct mnl_socket *nl_sock; /* kept open, like ctx; NULL until first use */
static unsigned nl_seq;

static void nl_drop(void)
{
	if (nl_sock)
		mnl_socket_close(nl_sock);
	nl_sock = NULL;
}

static int nl_ensure(void)
{
	if (nl_sock)
		return 0;
	nl_sock = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl_sock)
		return -errno;
	int one = 1;

	/* Error replies without a copy of the (possibly large) request. */
	if (mnl_socket_setsockopt(nl_sock, NETLINK_CAP_ACK, &one, sizeof one) < 0 ||
	    mnl_socket_bind(nl_sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int r = -errno;
		nl_drop();
		return r;
	}
	return 0;
}

static struct nlmsghdr *nfnl_put(struct mnl_nlmsg_batch *b, uint16_t type, uint16_t flags,
				 uint8_t family, uint16_t res_id)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(b));
	struct nfgenmsg *g;

	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = ++nl_seq;
	g = mnl_nlmsg_put_extra_header(h, sizeof(*g));
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(res_id);
	return h;
}

/* One NEWSETELEM (timeouts) or DELSETELEM message for el[i] with want[i]
 * (want NULL: all). */
static void put_setelem(struct mnl_nlmsg_batch *b, bool add, const char *table, const char *set,
			const struct nft_elem *el, size_t n, const bool *want)
{
	uint16_t type =
	    (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | (add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM));
	struct nlmsghdr *h =
	    nfnl_put(b, type, NLM_F_ACK | (add ? NLM_F_CREATE : 0), NFPROTO_INET, 0);
	struct nlattr *list;

	mnl_attr_put_strz(h, NFTA_SET_ELEM_LIST_TABLE, table);
	mnl_attr_put_strz(h, NFTA_SET_ELEM_LIST_SET, set);
	list = mnl_attr_nest_start(h, NFTA_SET_ELEM_LIST_ELEMENTS);
	for (size_t i = 0; i < n; i++) {
		struct nlattr *e, *k;
		uint32_t be = htonl(el[i].addr);

		if (want && !want[i])
			continue;
		e = mnl_attr_nest_start(h, NFTA_LIST_ELEM);
		k = mnl_attr_nest_start(h, NFTA_SET_ELEM_KEY);
		mnl_attr_put(h, NFTA_DATA_VALUE, sizeof be, &be);
		mnl_attr_nest_end(h, k);
		if (add && el[i].timeout_s)
			mnl_attr_put_u64(h, NFTA_SET_ELEM_TIMEOUT,
					 htobe64((uint64_t)el[i].timeout_s * 1000));
		mnl_attr_nest_end(h, e);
	}
	mnl_attr_nest_end(h, list);
	mnl_nlmsg_batch_next(b);
}

/* Sends batch b (acks expected for seqs first..last) and reads the
 * replies. The kernel handles a batch in the sender's context: every
 * reply is queued by the time sendto() returns, so nothing here waits. */
static int nl_batch_talk(struct mnl_nlmsg_batch *b, unsigned first, unsigned last)
{
	char buf[16384];
	unsigned portid = mnl_socket_get_portid(nl_sock);
	size_t acked = 0, want = last - first + 1;
	int r = 0;

	if (mnl_socket_sendto(nl_sock, mnl_nlmsg_batch_head(b), mnl_nlmsg_batch_size(b)) < 0)
		return -errno;
	while (acked < want && r == 0) {
		ssize_t len = recv(mnl_socket_get_fd(nl_sock), buf, sizeof buf, MSG_DONTWAIT);
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

		if (len < 0) {
			r = errno == EAGAIN ? -EIO : -errno;
			break;
		}
		for (int left = (int)len; mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
			const struct nlmsgerr *e;

			if (h->nlmsg_pid != portid || h->nlmsg_type != NLMSG_ERROR)
				continue;
			e = mnl_nlmsg_get_payload(h);
			if (e->error && r == 0)
				r = e->error;
			/* An error outside the commands (the batch itself):
			 * no ack follows. */
			if (h->nlmsg_seq < first || h->nlmsg_seq > last) {
				if (r == 0)
					r = -EIO;
				break;
			}
			acked++;
		}
	}
	/* After a failure the kernel may have queued more (the acks of the
	 * other commands, or a failed commit's error before them): read
	 * everything, so the next exchange starts clean. */
	while (r < 0 && recv(mnl_socket_get_fd(nl_sock), buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
	return r;
}

static void names_set(char *buf, size_t sz, int64_t id)
{
	snprintf(buf, sz, "box_%lld_names", (long long)id);
}

/* One transaction: for each of g[0..n), the deletes of its refreshed
 * elements (unless adds_only) then its adds, in order, so an address that
 * one group adds and a later one refreshes goes in with the later timeout. */
static int names_batch(const char *table, const struct nft_names *g, size_t n, bool adds_only)
{
	size_t sz = 1024, total = 0;
	_cleanup_free_ char *buf = NULL;
	struct mnl_nlmsg_batch *b;
	unsigned first;
	char set[64];
	int r;

	for (size_t i = 0; i < n; i++)
		total += g[i].n;
	sz += 2 * n * 256 + 2 * total * 64;
	/* libmnl wants twice the batch's limit. */
	buf = malloc(2 * sz);
	if (!buf)
		return -ENOMEM;
	b = mnl_nlmsg_batch_start(buf, sz);
	if (!b)
		return -ENOMEM;
	nfnl_put(b, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	mnl_nlmsg_batch_next(b);
	first = nl_seq + 1;
	for (size_t i = 0; i < n; i++) {
		bool any = false;

		if (!g[i].n)
			continue;
		names_set(set, sizeof set, g[i].id);
		for (size_t j = 0; !adds_only && g[i].refresh && j < g[i].n && !any; j++)
			any = g[i].refresh[j];
		if (any)
			put_setelem(b, false, table, set, g[i].el, g[i].n, g[i].refresh);
		put_setelem(b, true, table, set, g[i].el, g[i].n, NULL);
	}
	nfnl_put(b, NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	mnl_nlmsg_batch_next(b);
	r = first <= nl_seq - 1 ? nl_batch_talk(b, first, nl_seq - 1) : 0;
	mnl_nlmsg_batch_stop(b);
	return r;
}

/* One transaction for g[0..n) (their elements at most NAMES_BATCH in all),
 * nl_lock held. */
static int names_commit(const char *table, const struct nft_names *g, size_t n)
{
	bool any = false;
	int r;

	for (size_t i = 0; i < n && !any; i++)
		for (size_t j = 0; g[i].refresh && j < g[i].n && !any; j++)
			any = g[i].refresh[j];
	r = nl_ensure();
	if (r >= 0)
		r = names_batch(table, g, n, false);
	/* A refreshed element may have timed out meanwhile: its delete fails
	 * the whole batch; add alone. */
	if (r == -ENOENT && any)
		r = names_batch(table, g, n, true);
	return r;
}

int nft_names_add_many(const char *table, const struct nft_names *g, size_t n, pd_error *err)
{
	size_t total = 0;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		total += g[i].n;
	if (total <= NAMES_BATCH) {
		pd_mutex_lock(&nl_lock);
		r = names_commit(table, g, n);
		pd_mutex_unlock(&nl_lock);
		if (r < 0)
			return pd_error_set(err, r, "cannot add to the boxes' sets: %s",
					    strerror(-r));
		return 0;
	}
	for (size_t i = 0; i < n && r >= 0; i++)
		r = nft_names_add(table, g[i].id, g[i].el, g[i].n, g[i].refresh, err);
	return r;
}

int nft_names_add(const char *table, int64_t id, const struct nft_elem *el, size_t n,
		  const bool *refresh, pd_error *err)
{
	char set[64];
	int r = 0;

	names_set(set, sizeof set, id);
	pd_mutex_lock(&nl_lock);
	for (size_t off = 0; off < n && r >= 0; off += NAMES_BATCH) {
		size_t k = n - off < NAMES_BATCH ? n - off : NAMES_BATCH;
		struct nft_names g = {
		    .id = id, .el = el + off, .n = k, .refresh = refresh ? refresh + off : NULL};

		r = names_commit(table, &g, 1);
	}
	pd_mutex_unlock(&nl_lock);
	if (r < 0)
		return pd_error_set(err, r, "cannot add to the set %s: %s", set, strerror(-r));
	return 0;
}
