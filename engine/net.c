/* engine-net.c - box networking in the engine: the bridge at start, a
 * namespace, veth and address per running box, the nftables tables (built
 * whole at start, then changed one box at a time, rebuilt whole when such a
 * change fails), and the `policy` and `ip` files. */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "net/dns.h"
#include "engine/internal.h"
#include "runtime/idmap.h"
#include "common/log.h"
#include "net/link.h"
#include "net/nft.h"
#include "common/util.h"

static uint32_t subnet_size(const struct pd_config *c)
{
	return 1u << (32 - c->subnet_prefix);
}

static uint32_t gateway_of(const struct pd_config *c)
{
	return c->subnet + 1;
}

void eng_net_ifname(const struct engine *e, const struct box *b, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%sv%llx", e->cfg->bridge, (unsigned long long)b->row.id);
}

static void netns_path(const struct engine *e, const char *name, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/netns/%s", e->cfg->run, name);
}

void eng_net_userns_path(const struct engine *e, const struct box *b, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/userns/%s", e->cfg->run, b->row.name);
}

/* The range of host ids b runs in (0: none, box root is host root). */
static uint32_t box_userns_base(const struct engine *e, const struct box *b)
{
	return e->cfg->userns ? (uint32_t)b->row.uid_base : 0;
}

static struct nft_net net_of(const struct engine *e)
{
	return (struct nft_net){
	    .table = e->cfg->nft_table,
	    .bridge = e->cfg->bridge,
	    .subnet = e->cfg->subnet,
	    .prefix = e->cfg->subnet_prefix,
	    .resolver = gateway_of(e->cfg),
	};
}

/* Box b as the nftables module sees it (ifname: IFNAMSIZ_PD bytes). */
static struct nft_box nft_box_of(const struct engine *e, const struct box *b, char *ifname)
{
	struct nft_box nb = {.id = b->row.id,
			     .ifname = ifname,
			     .addr = (uint32_t)b->row.net_addr,
			     .policy = &b->policy};

	eng_net_ifname(e, b, ifname, IFNAMSIZ_PD);
	/* The MAC link_box_add() gave the box: its port's pin. */
	link_box_mac(nb.addr, nb.mac);
	return nb;
}

/* Engine lock held. Rebuilds the tables from every box that has an
 * address. */
int eng_net_apply(struct engine *e, pd_error *err)
{
	struct nft_net net = net_of(e);
	_cleanup_free_ struct nft_box *boxes = NULL;
	_cleanup_free_ char *names = NULL;
	size_t n = 0;
	int r;

	if (!e->cfg->network)
		return 0;
	boxes = calloc(e->n_boxes + 1, sizeof(*boxes));
	names = calloc(e->n_boxes + 1, IFNAMSIZ_PD);
	if (!boxes || !names)
		return pd_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < e->n_boxes; i++) {
		struct box *b = e->boxes[i];
		if (!b->row.net_addr)
			continue;
		boxes[n] = nft_box_of(e, b, names + n * IFNAMSIZ_PD);
		if (b->n_names) {
			struct nft_elem *el = calloc(b->n_names, sizeof *el);
			if (!el) {
				r = pd_error_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			boxes[n].names = el;
			boxes[n].n_names = eng_dns_elems(b, el, b->n_names);
		}
		n++;
	}
	r = nft_apply(&net, boxes, n, err);
out:
	for (size_t i = 0; i < n; i++)
		free((void *)boxes[i].names);
	return r;
}

/* Engine lock held. After a failed incremental change to box b (what,
 * nft's reason in why): the whole tables from the boxes' state, which
 * already holds the change. */
static int net_fallback(struct engine *e, const struct box *b, const char *what,
			const pd_error *why, pd_error *err)
{
	log_warn("network: box %s: %s failed (%s); rebuilding the whole table", b->row.name, what,
		 why->msg);
	return eng_net_apply(e, err);
}

int eng_net_init(struct engine *e, pd_error *err)
{
	char dir[4096];
	int r;

	if (!e->cfg->network)
		return 0;
	snprintf(dir, sizeof dir, "%s/netns", e->cfg->run);
	r = mkdir_p(dir, 0700);
	if (r >= 0) {
		snprintf(dir, sizeof dir, "%s/userns", e->cfg->run);
		r = mkdir_p(dir, 0700);
	}
	if (r < 0)
		return pd_error_set(err, r, "cannot create %s: %s", dir, strerror(-r));
	/* Boxes reach the uplink through this host: forwarding must be on
	 * (in the daemon's network namespace). */
	r = write_file_replace("/proc/sys/net/ipv4/ip_forward", "1\n", 2);
	if (r < 0) {
		_cleanup_close_ int fd =
		    open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "1\n", 2) != 2)
			return pd_error_set(err, -errno, "cannot enable IPv4 forwarding: %s",
					    strerror(errno));
	}
	r = link_bridge_ensure(e->cfg->bridge, gateway_of(e->cfg), e->cfg->subnet_prefix, err);
	if (r < 0)
		return r;
	/* Every box's /etc/resolv.conf (bound read-only): the resolver on the
	 * bridge. */
	uint32_t g = gateway_of(e->cfg);
	char text[64], path[4096];
	int n = snprintf(text, sizeof text, "nameserver %u.%u.%u.%u\n", g >> 24, (g >> 16) & 0xff,
			 (g >> 8) & 0xff, g & 0xff);
	eng_net_resolv_conf(e, path, sizeof path);
	r = write_file_replace(path, text, (size_t)n);
	/* Readable by every user in the box. */
	if (r >= 0 && chmod(path, 0644) < 0)
		r = -errno;
	if (r < 0)
		return pd_error_set(err, r, "cannot write %s: %s", path, strerror(-r));
	return 0;
}

void eng_net_resolv_conf(const struct engine *e, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/resolv.conf", e->cfg->run);
}

int eng_net_dns_start(struct engine *e, pd_error *err)
{
	return eng_dns_start(e, gateway_of(e->cfg), err);
}

/* Drops the tracked connections a box left behind at addr (its rules are
 * gone, its address not yet given again). */
static void forget_flows(uint32_t addr)
{
	size_t n = 0;
	int r = link_conntrack_forget(addr, &n);

	if (r < 0)
		log_warn("network: cannot drop the tracked connections of %u.%u.%u.%u: %s",
			 addr >> 24, (addr >> 16) & 0xff, (addr >> 8) & 0xff, addr & 0xff,
			 strerror(-r));
	else if (n)
		log_debug("network: dropped %zu tracked connections of %u.%u.%u.%u", n, addr >> 24,
			  (addr >> 16) & 0xff, (addr >> 8) & 0xff, addr & 0xff);
}

/* A box kept running across a daemon restart may have been started
 * before the daemon chose boxes' MACs or pinned their ports: gives its eth0
 * the MAC its port is pinned to, and pins the port (doing either again
 * changes nothing). */
static void pin_mac(struct engine *e, struct box *b)
{
	char ns[4096], ifname[IFNAMSIZ_PD];
	uint8_t mac[6];
	pd_error err = {0};

	netns_path(e, b->row.name, ns, sizeof ns);
	eng_net_ifname(e, b, ifname, sizeof ifname);
	link_box_mac((uint32_t)b->row.net_addr, mac);
	if (link_box_set_mac(ns, mac, &err) < 0)
		log_warn("network: box %s: %s", b->row.name, err.msg);
	err = (pd_error){0};
	if (link_box_port_pin(ifname, mac, &err) < 0)
		log_warn("network: box %s: %s", b->row.name, err.msg);
}

/* At start, boxes loaded, before any other thread runs (so without the
 * engine lock): keeps the namespaces and addresses of running boxes, drops
 * everything else, loads the table. */
int eng_net_reconcile(struct engine *e, pd_error *err)
{
	char dir[4096], path[4096 + 260];
	DIR *d;
	struct dirent *de;

	if (!e->cfg->network)
		return 0;
	for (size_t i = 0; i < e->n_boxes; i++) {
		struct box *b = e->boxes[i];
		char ifname[IFNAMSIZ_PD];
		if (b->state == BOX_RUNNING && b->row.net_addr) {
			pin_mac(e, b);
			continue;
		}
		eng_net_ifname(e, b, ifname, sizeof ifname);
		(void)link_delete(ifname);
		if (b->row.net_addr) {
			forget_flows((uint32_t)b->row.net_addr);
			b->row.net_addr = 0;
			(void)eng_save_box(e, b, NULL, NULL);
		}
	}
	/* Namespaces bound for boxes that no longer run: network ones, and
	 * the user namespaces that own them. */
	for (int k = 0; k < 2; k++) {
		snprintf(dir, sizeof dir, "%s/%s", e->cfg->run, k ? "userns" : "netns");
		d = opendir(dir);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			struct box *b;
			if (de->d_name[0] == '.')
				continue;
			b = eng_find_box(e, de->d_name);
			if (b && b->state == BOX_RUNNING && b->row.net_addr)
				continue;
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			(void)unbind_remove(path);
			log_info("network: removed leftover namespace %s", de->d_name);
		}
		closedir(d);
	}
	/* Ports named like a box's whose box is not running (a crash between
	 * making a veth and recording it, or a box gone while the daemon was
	 * down). */
	struct if_nameindex *ifs = if_nameindex();
	char prefix[IFNAMSIZ_PD + 2];
	size_t plen = (size_t)snprintf(prefix, sizeof prefix, "%sv", e->cfg->bridge);
	for (struct if_nameindex *it = ifs; it && it->if_index; it++) {
		bool keep = false;
		if (strncmp(it->if_name, prefix, plen) != 0)
			continue;
		for (size_t i = 0; i < e->n_boxes && !keep; i++) {
			char ifname[IFNAMSIZ_PD];
			eng_net_ifname(e, e->boxes[i], ifname, sizeof ifname);
			keep = e->boxes[i]->state == BOX_RUNNING && e->boxes[i]->row.net_addr &&
			       strcmp(ifname, it->if_name) == 0;
		}
		if (keep)
			continue;
		(void)link_delete(it->if_name);
		log_info("network: removed leftover port %s", it->if_name);
	}
	if (ifs)
		if_freenameindex(ifs);
	/* The table outlived the daemon: keep what the boxes looked up. */
	eng_dns_load(e);
	return eng_net_apply(e, err);
}

/* Engine lock held: b's rules in (b has its address). */
static int box_rules_add(struct engine *e, struct box *b, pd_error *err)
{
	struct nft_net net = net_of(e);
	char name[IFNAMSIZ_PD];
	struct nft_box nb = nft_box_of(e, b, name);
	pd_error why = {0};

	if (nft_box_add(&net, &nb, &why) >= 0)
		return 0;
	return net_fallback(e, b, "adding its rules", &why, err);
}

/* Engine lock held: takes b's rules out (its map element first, then the
 * rest) and clears its address. */
static void box_rules_drop(struct engine *e, struct box *b)
{
	struct nft_net net = net_of(e);
	char name[IFNAMSIZ_PD];
	struct nft_box nb = nft_box_of(e, b, name);
	pd_error why = {0}, err = {0};
	int r;

	if (!b->row.net_addr)
		return;
	r = nft_box_remove(&net, &nb, &why);
	b->row.net_addr = 0;
	if (r < 0 && net_fallback(e, b, "removing its rules", &why, &err) < 0)
		log_warn("network: %s", err.msg);
}

/* The second step of a box's start (see eng_net_box_up()). */
struct eng_net_up {
	struct engine *e;
	struct box *b;
	char ns[4096];
	uint32_t addr;
	pthread_t thread;
	int r;
	pd_error err;
	/* now_usec() at: the start of eng_net_box_up(), its namespaces made,
	 * the link made and the rules in (on the thread). For the debug log:
	 * what networking costs a start (tests/bench/net.sh reads it). */
	unsigned long long t_begin, t_ns, t_link, t_rules;
};

/* b's veth (its eth0 in the namespace up->ns, with its address) and rules,
 * and its address recorded. On failure the veth and rules are undone and b
 * has no address. */
static int box_link_rules(struct eng_net_up *up)
{
	struct engine *e = up->e;
	struct box *b = up->b;
	char ifname[IFNAMSIZ_PD];
	uint8_t mac[6];
	bool added = false;
	int r;

	eng_net_ifname(e, b, ifname, sizeof ifname);
	link_box_mac(up->addr, mac);
	r = link_box_add(e->cfg->bridge, ifname, up->ns, up->addr, mac, e->cfg->subnet_prefix,
			 gateway_of(e->cfg), &up->err);
	up->t_link = now_usec();
	pd_mutex_lock(&e->lock);
	if (r >= 0) {
		r = box_rules_add(e, b, &up->err);
		added = r >= 0;
	}
	if (r >= 0)
		r = eng_save_box(e, b, NULL, &up->err);
	if (r < 0 && added)
		box_rules_drop(e, b);
	if (r < 0)
		b->row.net_addr = 0;
	pd_mutex_unlock(&e->lock);
	up->t_rules = now_usec();
	/* The namespace stays for eng_net_box_down(): the runtime may be
	 * opening it right now. */
	if (r < 0)
		(void)link_delete(ifname);
	return r;
}

static void *box_link_thread(void *arg)
{
	struct eng_net_up *up = arg;

	up->r = box_link_rules(up);
	return NULL;
}

int eng_net_box_up(struct engine *e, struct box *b, char *ret_ns, size_t ns_sz, pd_error *err)
{
	uint32_t size = subnet_size(e->cfg), addr = 0;
	char ifname[IFNAMSIZ_PD];
	struct eng_net_up *up;
	int r;

	if (!e->cfg->network)
		return 0;
	eng_net_ifname(e, b, ifname, sizeof ifname);
	if (strlen(ifname) > 15)
		return pd_error_set(err, -ENOSPC, "interface name %s is too long", ifname);
	up = calloc(1, sizeof *up);
	if (!up)
		return pd_error_set(err, -ENOMEM, "out of memory");
	up->t_begin = now_usec();
	pd_mutex_lock(&e->lock);
	for (uint32_t h = 2; h < size - 1 && !addr; h++) {
		bool used = false;
		for (size_t i = 0; i < e->n_boxes && !used; i++)
			used = e->boxes[i]->row.net_addr == (int64_t)(e->cfg->subnet + h);
		if (!used)
			addr = e->cfg->subnet + h;
	}
	if (addr)
		b->row.net_addr = addr;
	pd_mutex_unlock(&e->lock);
	if (!addr) {
		free(up);
		return pd_error_set(err, -ENOSPC, "no free address left in the box subnet");
	}

	netns_path(e, b->row.name, ret_ns, ns_sz);
	if (box_userns_base(e, b)) {
		/* Owned by the box's user namespace: box root has its network
		 * capabilities there (raw sockets, ports below 1024). Leftovers
		 * at both paths are removed first. */
		char userns[4096];
		eng_net_userns_path(e, b, userns, sizeof userns);
		r = idmap_box_namespaces(box_userns_base(e, b), userns, ret_ns, err);
	} else {
		(void)link_netns_remove(ret_ns);
		r = link_netns_create(ret_ns, err);
	}
	if (r < 0) {
		pd_mutex_lock(&e->lock);
		b->row.net_addr = 0;
		pd_mutex_unlock(&e->lock);
		free(up);
		return r;
	}
	*up = (struct eng_net_up){.e = e, .b = b, .addr = addr, .t_begin = up->t_begin};
	snprintf(up->ns, sizeof up->ns, "%s", ret_ns);
	up->t_ns = now_usec();
	/* The box's PID 1 may start before its link is there: it has no
	 * network until then (its namespace's loopback only), and its port
	 * sends nothing before its rules are in (the bridge table drops
	 * frames from ports it does not list). Nothing of the box's own runs
	 * before eng_net_box_ready(). */
	if (pthread_create(&up->thread, NULL, box_link_thread, up) != 0) {
		up->r = box_link_rules(up);
		up->thread = 0;
	}
	b->net_up = up;
	return 0;
}

int eng_net_box_ready(struct engine *e, struct box *b, pd_error *err)
{
	struct eng_net_up *up = b->net_up;
	int r;

	unsigned long long t_wait = now_usec(), t_done;

	(void)e;
	if (!up)
		return 0;
	if (up->thread)
		pthread_join(up->thread, NULL);
	t_done = now_usec();
	log_debug("box %s: network on the start's path %.3f ms (namespaces %.3f ms, wait for "
		  "the link %.3f ms); on its thread, link %.3f ms, rules %.3f ms",
		  b->row.name, ((up->t_ns - up->t_begin) + (t_done - t_wait)) / 1e3,
		  (up->t_ns - up->t_begin) / 1e3, (t_done - t_wait) / 1e3,
		  (up->t_link - up->t_ns) / 1e3, (up->t_rules - up->t_link) / 1e3);
	b->net_up = NULL;
	r = up->r;
	if (r < 0 && err)
		*err = up->err;
	free(up);
	return r;
}

/* Takes b's network down (b busy, its container gone, no lock held). */
void eng_net_box_down(struct engine *e, struct box *b)
{
	char ifname[IFNAMSIZ_PD], ns[4096];

	if (!e->cfg->network)
		return;
	eng_net_ifname(e, b, ifname, sizeof ifname);
	netns_path(e, b->row.name, ns, sizeof ns);
	/* Rules first: nothing leads to the box's chain once its port is
	 * gone, and its address may go to the next box. */
	pd_mutex_lock(&e->lock);
	eng_dns_forget(b);
	if (b->row.net_addr) {
		uint32_t addr = (uint32_t)b->row.net_addr;
		/* Its resolver cache: the address may go to the next box. */
		dns_forget_source(e->dns, addr);
		box_rules_drop(e, b);
		/* Under the lock: no other box has the address yet. */
		forget_flows(addr);
		(void)eng_save_box(e, b, NULL, NULL);
	}
	pd_mutex_unlock(&e->lock);
	(void)link_delete(ifname);
	(void)link_netns_remove(ns);
	eng_net_userns_path(e, b, ns, sizeof ns);
	(void)unbind_remove(ns);
}

/* Engine lock held: b's policy from the store; a policy that no longer
 * parses is replaced by deny-all (never more open than recorded). */
void eng_net_load_policy(struct engine *e, struct box *b)
{
	_cleanup_free_ char *text = NULL;
	pd_error err = {0};

	if (store_box_policy_get(e->store, b->row.id, &text) < 0 ||
	    policy_parse(text, strlen(text), &b->policy, &err) < 0) {
		log_warn("box %s: stored policy unreadable (%s): deny-all", b->row.name, err.msg);
		b->policy = (struct policy){.mode = POLICY_DENY_ALL};
		return;
	}
	/* Its @AGENT presets as the images and the config have them now; a
	 * preset whose agent is gone allows nothing. */
	if (policy_has_presets(&b->policy)) {
		struct agent_catalogue c;
		if (agents_load(e->images_dir, &c) < 0 ||
		    agents_expand_policy(&c, e->cfg, &b->policy, false, &err) < 0) {
			log_warn("box %s: cannot expand its policy's presets: deny-all",
				 b->row.name);
			policy_release(&b->policy);
			b->policy = (struct policy){.mode = POLICY_DENY_ALL};
		}
		agents_release(&c);
	}
}

int engine_box_policy(struct engine *e, int64_t id, char **ret)
{
	struct box *b;
	int r;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	r = b ? policy_format(&b->policy, ret) : -ENOENT;
	pd_mutex_unlock(&e->lock);
	return r < 0 ? r : 0;
}

int engine_box_ip(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	struct box *b;
	uint32_t a;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		pd_mutex_unlock(&e->lock);
		return -ENOENT;
	}
	a = (uint32_t)b->row.net_addr;
	pd_mutex_unlock(&e->lock);
	if (!a)
		buf[0] = '\0';
	else
		snprintf(buf, bufsz, "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff,
			 a & 0xff);
	return 0;
}

/* Engine lock held: b's rules to b->policy, if it has rules (an address). */
static int box_rules_policy(struct engine *e, struct box *b, pd_error *err)
{
	struct nft_net net = net_of(e);
	char name[IFNAMSIZ_PD];
	struct nft_box nb = nft_box_of(e, b, name);
	pd_error why = {0};

	if (!e->cfg->network || !b->row.net_addr)
		return 0;
	if (nft_box_set_policy(&net, &nb, &why) >= 0)
		return 0;
	return net_fallback(e, b, "changing its policy", &why, err);
}

int engine_box_set_policy(struct engine *e, int64_t id, const char *text, size_t len, pd_error *err)
{
	struct policy p, old;
	_cleanup_free_ char *canon = NULL;
	struct box *b;
	uint32_t addr = 0;
	int r;

	r = policy_parse(text, len, &p, err);
	if (r < 0)
		return r;
	if (policy_has_presets(&p)) {
		/* Read before the lock: a few small files. */
		struct agent_catalogue c;
		r = agents_load(e->images_dir, &c);
		if (r < 0)
			pd_error_set(err, r, "cannot read the agents' catalogue");
		else
			r = agents_expand_policy(&c, e->cfg, &p, true, err);
		agents_release(&c);
		if (r < 0) {
			policy_release(&p);
			return r;
		}
	}
	r = policy_format(&p, &canon);
	if (r < 0) {
		policy_release(&p);
		return pd_error_set(err, r, "out of memory");
	}
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		r = eng_box_gone(err);
		goto out;
	}
	old = b->policy;
	b->policy = p;
	/* First drop what the new policy no longer allows from the box's
	 * looked-up addresses, then load its rules: never more open than
	 * either policy. */
	pd_error why = {0};
	if (eng_dns_policy_changed(e, b, &why) < 0)
		r = net_fallback(e, b, "dropping its looked-up addresses", &why, err);
	else
		r = box_rules_policy(e, b, err);
	if (r >= 0)
		r = store_box_policy_set(e->store, b->row.id, canon, err);
	if (r < 0) {
		b->policy = old;
		(void)box_rules_policy(e, b, NULL);
		goto out;
	}
	policy_release(&old);
	p = (struct policy){0};
	eng_emit(e, b, "policy %.*s", (int)strcspn(canon, "\n"), canon);
	if (b->state == BOX_RUNNING)
		addr = (uint32_t)b->row.net_addr;
out:
	pd_mutex_unlock(&e->lock);
	policy_release(&p);
	/* Its flows without an end (UDP, ICMP) meet the new policy at their
	 * next packet (link.h). */
	if (r >= 0 && addr) {
		size_t n = 0;
		int k = link_conntrack_forget_non_tcp(addr, &n);
		if (k < 0)
			log_warn("network: cannot drop the tracked flows of box %lld: %s",
				 (long long)id, strerror(-k));
		else
			log_info("network: box %lld: new policy; %zu tracked flows other than "
				 "TCP dropped",
				 (long long)id, n);
	}
	return r < 0 ? r : 0;
}
