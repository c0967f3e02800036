/* net-nft.h - the daemon's nftables table (libnftables, in process).
 *
 * The daemon owns one `inet` table and nothing else: every change replaces
 * that whole table in one transaction ("add table; delete table; table
 * {...}" in one batch), so the kernel holds either the old rules or the new
 * ones, never a mix, and no other table is touched. The rules (for traffic
 * from the bridge; anything else passes untouched):
 *
 *  - input from the bridge: established/related, and DNS (udp/tcp 53) to
 *    the bridge address (the boxes' resolver); everything else dropped, so
 *    the host's own addresses are unreachable from boxes;
 *  - forward to the bridge: established/related only (boxes cannot reach
 *    each other, nothing outside opens a connection into a box);
 *  - forward from the bridge: 169.254.0.0/16 dropped, then
 *    established/related accepted, IPv6 and DNS to anywhere but the
 *    resolver dropped, then a per-box chain chosen by interface name (a
 *    verdict map); an interface with no chain is dropped;
 *  - per box: allow-all accepts; deny-all refuses (TCP reset, else ICMP
 *    admin-prohibited); allowlist accepts its networks (an interval set) and
 *    the addresses in its names set, refuses the rest;
 *  - NAT: the subnet masqueraded out of every interface but the bridge.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "policy.h"

/* An element of a box's names set: an address its lookups returned. */
struct nft_elem {
	uint32_t addr; /* host order */
	unsigned timeout_s;
};

struct nft_box {
	int64_t id;		     /* names the box's chain and sets */
	const char *ifname;	     /* its veth on the bridge */
	uint32_t addr;		     /* its address (host order) */
	const struct policy *policy; /* in force */
	const struct nft_elem *names; /* its names set's elements */
	size_t n_names;
};

struct nft_net {
	const char *table;
	const char *bridge;
	uint32_t subnet; /* host order */
	unsigned prefix;
	uint32_t resolver; /* the bridge's address */
};

/* The table's text for boxes (n of them), malloc'd in *ret. */
int nft_render(const struct nft_net *net, const struct nft_box *boxes, size_t n, char **ret);

/* Replaces the table with nft_render()'s text in one transaction. On
 * failure the old table stays in force and err holds nft's message. */
int nft_apply(const struct nft_net *net, const struct nft_box *boxes, size_t n, pd_error *err);

/* Deletes the table; a missing one is success. */
int nft_remove(const char *table, pd_error *err);
