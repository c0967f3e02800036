/* engine-dns.c - the boxes' resolver in the engine: which lookups a box may
 * make (its policy), and the addresses its allowed lookups returned, kept
 * per box and in the box's nftables set box_N_names with the records'
 * lifetime.
 *
 * The engine's list of a box's names is the truth the kernel set is made
 * from: each answer goes into the list first (under the engine lock, so a
 * table rebuilt meanwhile holds it too), then into the set (outside it,
 * see hook_record_many); a policy change drops the addresses of names the new
 * policy does not allow from both before the new rules load; a box that
 * stops forgets them. At daemon start the set's elements are read back
 * from the kernel (the table outlives the daemon) with their remaining
 * lifetime; the names they were looked up under are not kept there, so a
 * later policy change drops them (the box looks the names up again). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net/dns.h"
#include "engine/internal.h"
#include "common/log.h"
#include "net/nft.h"
#include "common/util.h"

#define IP4(a) (a) >> 24, ((a) >> 16) & 0xff, ((a) >> 8) & 0xff, (a)&0xff

static int64_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

static unsigned eng_dns_timeout(uint32_t ttl)
{
	if (ttl < NET_NAME_TTL_MIN)
		return NET_NAME_TTL_MIN;
	return ttl > NET_NAME_TTL_MAX ? NET_NAME_TTL_MAX : ttl;
}

void eng_dns_forget(struct box *b)
{
	b->names_gen++;
	for (size_t i = 0; i < b->n_names; i++)
		free(b->names[i].name);
	free(b->names);
	b->names = NULL;
	b->n_names = 0;
	b->names_expiry = 0;
}

/* Drops the expired records of b: a walk of the list only once one may
 * have expired (each answer calls it). */
static void prune(struct box *b, int64_t now)
{
	size_t w = 0;
	int64_t next = INT64_MAX;

	if (b->names_expiry && now < b->names_expiry)
		return;
	for (size_t i = 0; i < b->n_names; i++) {
		if (b->names[i].expires > now) {
			if (b->names[i].expires < next)
				next = b->names[i].expires;
			b->names[w++] = b->names[i];
		} else
			free(b->names[i].name);
	}
	b->n_names = w;
	b->names_expiry = next;
}

size_t eng_dns_elems(struct box *b, struct nft_elem *out, size_t max)
{
	int64_t now = mono_s();
	size_t n = 0;

	prune(b, now);
	for (size_t i = 0; i < b->n_names && n < max; i++)
		out[n++] = (struct nft_elem){.addr = b->names[i].addr,
					     .timeout_s = (unsigned)(b->names[i].expires - now)};
	return n;
}

/* Engine lock held: notes an answer's addresses in b's list; el and
 * refresh (room for n) get what the set needs, *ret_k of them. */
static int note(struct box *b, const char *name, const struct dns_addr *a, size_t n,
		struct nft_elem *el, bool *refresh, size_t *ret_k, pd_error *err)
{
	int64_t now = mono_s();
	size_t k = 0;

	*ret_k = 0;
	prune(b, now);
	for (size_t i = 0; i < n; i++) {
		unsigned t = eng_dns_timeout(a[i].ttl);
		struct net_name *rec = NULL;

		for (size_t j = 0; j < b->n_names && !rec; j++)
			if (b->names[j].addr == a[i].addr)
				rec = &b->names[j];
		if (rec && rec->expires >= now + t && rec->name && strcmp(rec->name, name) == 0)
			continue; /* in force for longer already */
		if (!rec) {
			struct net_name *nn;
			if (b->n_names >= NET_NAMES_MAX)
				return pd_error_set(err, -ENOSPC, "too many addresses looked up");
			nn = realloc(b->names, (b->n_names + 1) * sizeof *nn);
			if (!nn)
				return pd_error_set(err, -ENOMEM, "out of memory");
			b->names = nn;
			rec = &b->names[b->n_names++];
			*rec = (struct net_name){.addr = a[i].addr};
			refresh[k] = false;
		} else
			refresh[k] = rec->expires < now + t;
		if (!rec->name || strcmp(rec->name, name) != 0) {
			char *s = strdup(name);
			if (!s)
				return pd_error_set(err, -ENOMEM, "out of memory");
			free(rec->name);
			rec->name = s;
		}
		if (rec->expires < now + t)
			rec->expires = now + t;
		if (rec->expires < b->names_expiry)
			b->names_expiry = rec->expires;
		el[k++] = (struct nft_elem){.addr = a[i].addr,
					    .timeout_s = (unsigned)(rec->expires - now)};
		*ret_k = k;
	}
	return 0;
}

/* Engine lock held: b's set holds exactly b's list (b has an address). */
static int names_sync(struct engine *e, struct box *b, pd_error *err)
{
	_cleanup_free_ struct nft_elem *el = NULL;
	char head[256];
	size_t n;
	int r;

	snprintf(head, sizeof head, "flush set inet %s box_%lld_names\n", e->cfg->nft_table,
		 (long long)b->row.id);
	r = nft_exec(head, err);
	if (r < 0 || b->n_names == 0)
		return r;
	el = calloc(b->n_names, sizeof *el);
	if (!el)
		return pd_error_set(err, -ENOMEM, "out of memory");
	n = eng_dns_elems(b, el, b->n_names);
	return n ? nft_names_add(e->cfg->nft_table, b->row.id, el, n, NULL, err) : 0;
}

int eng_dns_policy_changed(struct engine *e, struct box *b, pd_error *err)
{
	size_t w = 0;

	b->names_gen++;
	for (size_t i = 0; i < b->n_names; i++) {
		struct net_name *rec = &b->names[i];
		if (b->policy.mode == POLICY_ALLOWLIST && rec->name &&
		    policy_allows_name(&b->policy, rec->name))
			b->names[w++] = *rec;
		else
			free(rec->name);
	}
	b->n_names = w;
	return b->row.net_addr ? names_sync(e, b, err) : 0;
}

/* Reads b's set back from the kernel (daemon start, engine lock held). */
static void load_box(struct engine *e, struct box *b)
{
	char cmd[256];
	_cleanup_free_ char *out = NULL;
	json_t *root, *items, *it;
	json_error_t jerr;
	size_t i;
	int64_t now = mono_s();

	snprintf(cmd, sizeof cmd, "list set inet %s box_%lld_names", e->cfg->nft_table,
		 (long long)b->row.id);
	if (nft_list_json(cmd, &out, NULL) < 0)
		return; /* no set: nothing looked up */
	root = json_loads(out, 0, &jerr);
	items = json_object_get(root, "nftables");
	json_array_foreach(items, i, it)
	{
		json_t *elems = json_object_get(json_object_get(it, "set"), "elem"), *el;
		size_t j;

		json_array_foreach(elems, j, el)
		{
			json_t *o = json_object_get(el, "elem");
			const char *val = json_string_value(json_object_get(o, "val"));
			json_int_t left = json_integer_value(json_object_get(o, "expires"));
			unsigned a1, a2, a3, a4;
			struct net_name *nn;

			if (!val || left <= 0 ||
			    sscanf(val, "%u.%u.%u.%u", &a1, &a2, &a3, &a4) != 4 || a1 > 255 ||
			    a2 > 255 || a3 > 255 || a4 > 255 || b->n_names >= NET_NAMES_MAX)
				continue;
			nn = realloc(b->names, (b->n_names + 1) * sizeof *nn);
			if (!nn)
				break;
			b->names = nn;
			b->names[b->n_names++] = (struct net_name){
			    .addr = a1 << 24 | a2 << 16 | a3 << 8 | a4, .expires = now + left};
			b->names_expiry = 0;
		}
	}
	json_decref(root);
}

void eng_dns_load(struct engine *e)
{
	if (!e->cfg->network)
		return;
	for (size_t i = 0; i < e->n_boxes; i++) {
		struct box *b = e->boxes[i];
		eng_dns_forget(b);
		if (b->state == BOX_RUNNING && b->row.net_addr &&
		    b->policy.mode == POLICY_ALLOWLIST)
			load_box(e, b);
	}
}

/* ---- the resolver's hooks ----------------------------------------------- */

static struct box *box_by_addr(struct engine *e, uint32_t src)
{
	for (size_t i = 0; i < e->n_boxes; i++)
		if (e->boxes[i]->row.net_addr == (int64_t)src && !e->boxes[i]->deleting)
			return e->boxes[i];
	return NULL;
}

static enum dns_verdict hook_decide(void *opaque, uint32_t src, const char *name)
{
	struct engine *e = opaque;
	enum dns_verdict v = DNS_REFUSE;
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = box_by_addr(e, src);
	if (b && b->policy.mode == POLICY_ALLOW_ALL)
		v = DNS_FORWARD;
	else if (b && b->policy.mode == POLICY_ALLOWLIST && policy_allows_name(&b->policy, name))
		v = DNS_FORWARD_RECORD;
	pd_mutex_unlock(&e->lock);
	return v;
}

/* The sets change outside the engine lock (one kernel transaction for all
 * of recs, see nft_names_add_many(); refreshed elements, whose element may
 * hold a shorter lifetime, are deleted and added again in it): the boxes'
 * lists are updated first, under the lock, and a policy change or stop
 * that came meanwhile (names_gen moved on) is made good after, by setting
 * the box's set to its list again. Should the one transaction fail, each
 * answer is tried alone, so one box's failure (a set gone with its box)
 * does not fail another's answer. */
static void hook_record_many(void *opaque, struct dns_record *recs, size_t n)
{
	struct engine *e = opaque;
	pd_error err = {0};
	size_t total = 0, used = 0, k_all = 0;
	_cleanup_free_ struct nft_elem *el = NULL;
	_cleanup_free_ bool *refresh = NULL;
	_cleanup_free_ struct nft_names *g = calloc(n, sizeof *g);
	_cleanup_free_ uint64_t *gen = calloc(n, sizeof *gen);
	int r;

	for (size_t i = 0; i < n; i++)
		total += recs[i].n;
	el = calloc(total + 1, sizeof *el);
	refresh = calloc(total + 1, sizeof *refresh);
	if (!el || !refresh || !g || !gen) {
		for (size_t i = 0; i < n; i++)
			recs[i].r = -ENOMEM;
		return;
	}
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < n; i++) {
		struct box *b = box_by_addr(e, recs[i].src);
		size_t k = 0;

		recs[i].r = -EACCES;
		if (b && b->policy.mode == POLICY_ALLOW_ALL)
			recs[i].r = 0;
		else if (b && b->policy.mode == POLICY_ALLOWLIST &&
			 policy_allows_name(&b->policy, recs[i].name)) {
			err = (pd_error){0};
			recs[i].r = note(b, recs[i].name, recs[i].a, recs[i].n, el + used,
					 refresh + used, &k, &err);
			if (recs[i].r < 0)
				log_warn("cannot allow the addresses of %s: %s", recs[i].name,
					 err.msg);
			g[i] = (struct nft_names){
			    .id = b->row.id, .el = el + used, .n = k, .refresh = refresh + used};
			gen[i] = b->names_gen;
		}
		if (recs[i].r < 0)
			g[i].n = 0; /* what note() did is undone below (names_gen) */
		used += k;
		k_all += g[i].n;
	}
	pd_mutex_unlock(&e->lock);
	if (k_all == 0)
		return;
	r = nft_names_add_many(e->cfg->nft_table, g, n, &err);
	if (r < 0)
		for (size_t i = 0; i < n; i++) {
			pd_error one = {0};
			if (!g[i].n || recs[i].r < 0)
				continue;
			recs[i].r = n == 1 ? r
					   : nft_names_add(e->cfg->nft_table, g[i].id, g[i].el,
							   g[i].n, g[i].refresh, &one);
			if (recs[i].r < 0)
				log_warn("cannot allow the addresses of %s: %s", recs[i].name,
					 n == 1 ? err.msg : one.msg);
		}
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < n; i++) {
		struct box *b;
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++) /* each box once */
			seen = g[j].n && g[j].id == g[i].id;
		b = g[i].n && !seen ? eng_find_box_id(e, g[i].id) : NULL;
		if (b && b->names_gen != gen[i] && b->row.net_addr && names_sync(e, b, NULL) < 0)
			log_warn("box %s: cannot set its looked-up addresses again", b->row.name);
	}
	pd_mutex_unlock(&e->lock);
}

static const struct dns_hooks hooks = {.decide = hook_decide, .record_many = hook_record_many};

int eng_dns_start(struct engine *e, uint32_t listen_addr, pd_error *err)
{
	uint32_t up = e->cfg->dns_upstream;
	uint16_t port = e->cfg->dns_upstream_port ? e->cfg->dns_upstream_port : 53;
	int r;

	if (!e->cfg->network)
		return 0;
	if (!up) {
		r = dns_resolv_conf_upstream("/etc/resolv.conf", &up);
		if (r < 0) {
			/* Boxes still get answers: SERVFAIL, quickly. */
			log_warn("network: no IPv4 nameserver in /etc/resolv.conf (%s): box "
				 "lookups will fail; set dns_upstream",
				 strerror(-r));
			up = 0x7f000001;
			port = 9; /* discard: refused at once */
		}
	}
	log_info("network: boxes' resolver on %u.%u.%u.%u:53, upstream %u.%u.%u.%u:%u",
		 IP4(listen_addr), IP4(up), port);
	return dns_start(listen_addr, 53, up, port, &hooks, e, &e->dns, err);
}

void eng_dns_stop(struct engine *e)
{
	dns_stop(e->dns);
	e->dns = NULL;
}
