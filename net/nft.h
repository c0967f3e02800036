/* net-nft.h - the daemon's nftables tables (libnftables, in process).
 *
 * The daemon owns one `inet` table and one `bridge` table of the same name,
 * and nothing else. Two ways to change them, each one transaction (the
 * kernel holds either the old rules or the new ones, never a mix):
 *
 *  - nft_apply() replaces both whole tables ("add table; delete table;
 *    table {...}" in one batch): at daemon start, and as the fallback when
 *    an incremental change fails;
 *  - nft_box_add(), nft_box_remove(), nft_box_set_policy() change one
 *    box's chain, sets and elements and touch nothing else.
 *
 * The rules (for traffic from the bridge; anything else passes untouched):
 *
 *  - input from the bridge: established/related, and DNS (udp/tcp 53) to
 *    the bridge address (the boxes' resolver); everything else dropped, so
 *    the host's own addresses are unreachable from boxes;
 *  - forward to the bridge: established/related only (boxes cannot reach
 *    each other, nothing outside opens a connection into a box);
 *  - forward from the bridge: 169.254.0.0/16 dropped, then established
 *    TCP connections and related packets (ICMP errors) accepted, IPv6 and
 *    DNS to anywhere but the resolver dropped, then box_N chosen by source
 *    address (map `boxes`, address : jump box_N); an address with no chain
 *    is dropped. Every other packet of a flow that is not TCP (UDP, ICMP)
 *    goes through box_N, not only its first: such a flow has no end the
 *    kernel sees, so one tracked under a looser policy would stay
 *    "established" as long as packets keep it alive (a new container's
 *    ping, with the PID and so the ICMP id of the one before). Its packets
 *    meet the policy in force, whatever the connection tracking holds;
 *  - per box N: chain box_N, an interval set box_N_nets (the allowlist's
 *    networks) and a timeout set box_N_names (addresses the resolver let
 *    through). allow-all accepts; deny-all refuses (TCP reset, else ICMP
 *    admin-prohibited); allowlist accepts box_N_nets and box_N_names and
 *    refuses the rest;
 *  - NAT: the subnet masqueraded out of every interface but the bridge;
 *  - bridge table, prerouting (before the bridge learns a frame's source
 *    MAC), on the bridge's ports ("<bridge>v*", the boxes' veths): a frame
 *    passes only when it is IPv4 whose port . Ethernet source . IP source
 *    is in the set `ports`, or Ethernet ARP (IPv4, 6-byte MACs) whose
 *    port . Ethernet source . sender IP and port . sender MAC . sender IP
 *    both are; every other frame (other sources, IPv6, VLAN tags, other
 *    ethertypes) is dropped. A box sends only as its own MAC and address:
 *    it can neither borrow another box's policy, nor take over its replies
 *    by ARP, nor teach the bridge's forwarding database another box's MAC;
 *    a port with no entry sends nothing.
 *
 * A crash between two calls never leaves a box more open than its policy:
 * every call is one transaction, nft_box_add() creates the chain with its
 * rules in the same batch as the map element that leads to it, and
 * nft_box_remove() drops the map element first.
 *
 * Locking: the functions that talk to the kernel share one libnftables
 * context, kept open for the life of the process (closing its netlink
 * socket after a transaction waits for an RCU grace period, 10-20 ms),
 * behind a mutex of this module; they may be called from any thread. The
 * render functions are pure.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "net/policy.h"

/* An address the box's resolver let through, in box_N_names. */
struct nft_elem {
	uint32_t addr;	    /* host order */
	unsigned timeout_s; /* the element expires after this; 0 = never */
};

struct nft_box {
	int64_t id;		      /* names the box's chain and sets */
	const char *ifname;	      /* its veth on the bridge */
	uint32_t addr;		      /* its address (host order) */
	uint8_t mac[6];		      /* its MAC (the box side of the veth) */
	const struct policy *policy;  /* in force; unused by remove */
	const struct nft_elem *names; /* box_N_names at add (or full apply) */
	size_t n_names;
};

struct nft_net {
	const char *table;
	const char *bridge;
	uint32_t subnet; /* host order */
	unsigned prefix;
	uint32_t resolver; /* the bridge's address */
};

/* The text of both whole tables for boxes (n of them), malloc'd in *ret.
 * An allowlist's networks are reduced to the ones no other entry contains
 * (an interval set refuses overlaps); a names address listed twice keeps
 * the longest timeout. -ENOMEM. */
int nft_render(const struct nft_net *net, const struct nft_box *boxes, size_t n, char **ret);

/* The batch text of one box's incremental changes (see the functions
 * below), malloc'd in *ret. -ENOMEM. */
int nft_render_box_add(const struct nft_net *net, const struct nft_box *box, char **ret);
int nft_render_box_remove(const struct nft_net *net, const struct nft_box *box, char **ret);
int nft_render_box_policy(const struct nft_net *net, const struct nft_box *box, char **ret);

/* Replaces both tables with nft_render()'s text in one transaction. On
 * failure the old tables stay in force and err holds nft's message. */
int nft_apply(const struct nft_net *net, const struct nft_box *boxes, size_t n, pd_error *err);

/* Adds box's sets (box_N_names filled with box->names), its chain with the
 * rules of box->policy, its map element and its port entry; an existing
 * chain or set of the box is emptied first. The tables must exist
 * (nft_apply()). On failure nothing changed and err holds nft's message
 * (-EIO; e.g. the box's address already maps to another chain). */
int nft_box_add(const struct nft_net *net, const struct nft_box *box, pd_error *err);

/* Removes what nft_box_add() made (box->policy and names unused): the map
 * element first, then the chain, the sets, the port entry. Fails (-EIO,
 * nothing changed) when any of them is missing. */
int nft_box_remove(const struct nft_net *net, const struct nft_box *box, pd_error *err);

/* Replaces the rules of box_N and the elements of box_N_nets with
 * box->policy's; box_N_names is left as it is. On failure nothing changed
 * (-EIO, err set). */
int nft_box_set_policy(const struct nft_net *net, const struct nft_box *box, pd_error *err);

/* Deletes both tables; missing ones are success. */
int nft_remove(const char *table, pd_error *err);

/* Puts n addresses into the set box_<id>_names of table (inet) in one
 * transaction, straight over nfnetlink (no nft parse, no cache fetch: the
 * resolver's hot path, tens of microseconds). Those with refresh[i] set
 * (refresh may be NULL) are deleted first in the same transaction, so they
 * get el[i]'s timeout even when it is shorter than the one they hold; if
 * such an element has expired meanwhile, the batch is retried with adds
 * only. More than a batch's worth of elements go in several transactions.
 * 0 once the kernel has committed, or -errno (err set; nothing of the
 * failing transaction changed). Any thread; serialised by this module. */
int nft_names_add(const char *table, int64_t id, const struct nft_elem *el, size_t n,
		  const bool *refresh, pd_error *err);

/* Addresses for one box's set, for nft_names_add_many(). */
struct nft_names {
	int64_t id; /* the box: its set box_<id>_names */
	const struct nft_elem *el;
	size_t n;
	const bool *refresh; /* as for nft_names_add(); may be NULL */
};

/* nft_names_add() for several sets (or several answers for one set) in one
 * transaction: all of them are in force once it returns 0, none of the
 * failing transaction's on failure. g[i] are applied in order. More than a
 * batch's worth of elements in all: one nft_names_add() per group. */
int nft_names_add_many(const char *table, const struct nft_names *g, size_t n, pd_error *err);

/* Runs one batch of nft commands (text) in one transaction, on the kept
 * context: for changes the functions above do not cover. */
int nft_exec(const char *text, pd_error *err);

/* Runs a list command (e.g. "list set inet T S") and gives its JSON output,
 * malloc'd, in *ret. */
int nft_list_json(const char *cmd, char **ret, pd_error *err);
