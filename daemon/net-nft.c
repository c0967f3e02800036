/* net-nft.c - render and apply the daemon's nftables table. */
#include <errno.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net-nft.h"
#include "util.h"

#define IP4(a) (a) >> 24, ((a) >> 16) & 0xff, ((a) >> 8) & 0xff, (a)&0xff

static void render_box(FILE *f, const struct nft_box *b)
{
	const struct policy *p = b->policy;
	bool nets = false;

	fprintf(f, "\tset box_%lld_names {\n\t\ttype ipv4_addr\n\t\tflags timeout\n",
		(long long)b->id);
	for (size_t i = 0; i < b->n_names; i++)
		fprintf(f, "%s%u.%u.%u.%u timeout %us", i ? ", " : "\t\telements = { ",
			IP4(b->names[i].addr), b->names[i].timeout_s);
	fprintf(f, "%s\t}\n", b->n_names ? " }\n" : "");
	if (p->mode == POLICY_ALLOWLIST) {
		for (size_t i = 0; i < p->n_entries; i++) {
			const struct policy_entry *e = &p->entries[i];
			if (e->kind != POLICY_CIDR)
				continue;
			if (!nets)
				fprintf(f,
					"\tset box_%lld_nets {\n\t\ttype ipv4_addr\n\t\tflags "
					"interval\n\t\tauto-merge\n\t\telements = { ",
					(long long)b->id);
			fprintf(f, "%s%u.%u.%u.%u/%u", nets ? ", " : "", IP4(e->addr), e->prefix);
			nets = true;
		}
		if (nets)
			fprintf(f, " }\n\t}\n");
	}
	fprintf(f, "\tchain box_%lld {\n", (long long)b->id);
	if (p->mode == POLICY_ALLOW_ALL)
		fprintf(f, "\t\taccept\n");
	else {
		if (nets)
			fprintf(f, "\t\tip daddr @box_%lld_nets accept\n", (long long)b->id);
		if (p->mode == POLICY_ALLOWLIST)
			fprintf(f, "\t\tip daddr @box_%lld_names accept\n", (long long)b->id);
		fprintf(f, "\t\tmeta l4proto tcp reject with tcp reset\n"
			   "\t\treject with icmpx admin-prohibited\n");
	}
	fprintf(f, "\t}\n");
}

int nft_render(const struct nft_net *net, const struct nft_box *boxes, size_t n, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "add table inet %s\ndelete table inet %s\ntable inet %s {\n", net->table,
		net->table, net->table);
	/* Routed packets from a box come in on the bridge, not on the box's
	 * port: the box is told by its source address, which the bridge
	 * table below pins to its port. */
	fprintf(f, "\tmap boxes {\n\t\ttype ipv4_addr : verdict\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%u.%u.%u.%u : jump box_%lld", i ? ", " : "\t\telements = { ",
			IP4(boxes[i].addr), (long long)boxes[i].id);
	fprintf(f, "%s\t}\n", n ? " }\n" : "");
	for (size_t i = 0; i < n; i++)
		render_box(f, &boxes[i]);
	fprintf(f,
		"\tchain input {\n"
		"\t\ttype filter hook input priority filter; policy accept;\n"
		"\t\tiifname \"%s\" jump from_boxes_to_host\n"
		"\t}\n"
		"\tchain from_boxes_to_host {\n"
		"\t\tct state established,related accept\n"
		"\t\tip daddr %u.%u.%u.%u udp dport 53 accept\n"
		"\t\tip daddr %u.%u.%u.%u tcp dport 53 accept\n"
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
		"\t\tct state established,related accept\n"
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
		"\t\tip saddr %u.%u.%u.%u/%u oifname != \"%s\" masquerade\n"
		"\t}\n}\n",
		IP4(net->subnet), net->prefix, net->bridge);
	/* Anti-spoofing on the bridge ports: a box sends IPv4 and ARP only
	 * from its own address (so it can neither borrow another box's
	 * policy nor take over its replies), and no IPv6. */
	fprintf(f, "add table bridge %s\ndelete table bridge %s\ntable bridge %s {\n", net->table,
		net->table, net->table);
	fprintf(f, "\tchain ports {\n\t\ttype filter hook prerouting priority filter; policy "
		   "accept;\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f,
			"\t\tiifname \"%s\" ether type ip ip saddr != %u.%u.%u.%u drop\n"
			"\t\tiifname \"%s\" ether type arp arp saddr ip != %u.%u.%u.%u drop\n"
			"\t\tiifname \"%s\" ether type ip6 drop\n",
			boxes[i].ifname, IP4(boxes[i].addr), boxes[i].ifname, IP4(boxes[i].addr),
			boxes[i].ifname);
	fprintf(f, "\t}\n}\n");
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}

static int nft_run(const char *text, pd_error *err)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	int r;

	if (!ctx)
		return pd_error_set(err, -ENOMEM, "cannot create an nftables context");
	if (nft_ctx_buffer_error(ctx) < 0 || nft_ctx_buffer_output(ctx) < 0) {
		nft_ctx_free(ctx);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	r = nft_run_cmd_from_buffer(ctx, text);
	if (r != 0) {
		const char *msg = nft_ctx_get_error_buffer(ctx);
		size_t l = msg ? strcspn(msg, "\n") : 0;
		pd_error_set(err, -EIO, "nftables refused the rules: %.*s", (int)l,
			     l ? msg : "no message");
		nft_ctx_free(ctx);
		return -EIO;
	}
	nft_ctx_free(ctx);
	return 0;
}

int nft_apply(const struct nft_net *net, const struct nft_box *boxes, size_t n, pd_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r = nft_render(net, boxes, n, &text);

	if (r < 0)
		return pd_error_set(err, r, "out of memory");
	return nft_run(text, err);
}

int nft_remove(const char *table, pd_error *err)
{
	char text[256];

	snprintf(text, sizeof(text),
		 "add table inet %s\ndelete table inet %s\nadd table bridge %s\ndelete table bridge "
		 "%s\n",
		 table, table, table, table);
	return nft_run(text, err);
}
