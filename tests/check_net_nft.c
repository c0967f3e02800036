/* check_net_nft.c - the nftables text: the whole tables, and one box's
 * add, remove and policy batches; then (as root, in a network namespace of
 * the test's own) the same batches against the kernel. */
#include <check.h>
#include <errno.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check-tap.h"
#include "net/nft.h"

static const struct nft_net net = {
    .table = "pdt",
    .bridge = "pdt0",
    .subnet = 0x0a0b0000, /* 10.11.0.0/24 */
    .prefix = 24,
    .resolver = 0x0a0b0001,
};

static struct policy parse(const char *text)
{
	struct policy p;
	pd_error err;

	ck_assert_int_eq(policy_parse(text, strlen(text), &p, &err), 0);
	return p;
}

static struct nft_box box(int64_t id, uint32_t addr, const struct policy *p)
{
	struct nft_box b = {.id = id, .ifname = "pdt0v7", .addr = addr, .policy = p};

	/* Any MAC: the module takes the one it is given. */
	memcpy(b.mac, (uint8_t[6]){0x02, 0xab, 0, 0, 0, (uint8_t)id}, 6);
	return b;
}

static char *render(int (*fn)(const struct nft_net *, const struct nft_box *, char **),
		    const struct nft_box *b)
{
	char *text = NULL;

	ck_assert_int_eq(fn(&net, b, &text), 0);
	ck_assert_ptr_nonnull(text);
	return text;
}

/* --- text ---------------------------------------------------------------- */

START_TEST(add_allowlist)
{
	/* 10.1.0.0/16 lies in 10.0.0.0/8 and 10.0.0.0/8 is listed twice:
	 * an interval set refuses overlaps, so only 10.0.0.0/8 goes in. */
	struct policy p = parse("allowlist\n10.1.0.0/16\n192.0.2.0/24\n10.0.0.0/8\n10.0.0.0/8\n");
	struct nft_elem names[] = {{0x01020304, 30}, {0x05060708, 0}, {0x01020304, 60}};
	struct nft_box b = box(7, 0x0a0b0002, &p);
	b.names = names;
	b.n_names = 3;
	char *t = render(nft_render_box_add, &b);

	ck_assert_str_eq(t, "add set inet pdt box_7_names { type ipv4_addr; flags timeout; }\n"
			    "add set inet pdt box_7_nets { type ipv4_addr; flags interval; }\n"
			    "add chain inet pdt box_7\n"
			    "flush chain inet pdt box_7\n"
			    "flush set inet pdt box_7_names\n"
			    "flush set inet pdt box_7_nets\n"
			    "add element inet pdt box_7_names { 1.2.3.4 timeout 60s, 5.6.7.8 }\n"
			    "add element inet pdt box_7_nets { 10.0.0.0/8, 192.0.2.0/24 }\n"
			    "add rule inet pdt box_7 ip daddr @box_7_nets accept\n"
			    "add rule inet pdt box_7 ip daddr @box_7_names accept\n"
			    "add rule inet pdt box_7 meta l4proto tcp reject with tcp reset\n"
			    "add rule inet pdt box_7 reject with icmpx admin-prohibited\n"
			    "add element inet pdt boxes { 10.11.0.2 : jump box_7 }\n"
			    "add element bridge pdt ports { \"pdt0v7\" . 02:ab:00:00:00:07 . "
			    "10.11.0.2 }\n");
	free(t);
	policy_release(&p);
}
END_TEST

START_TEST(add_allow_all_no_elements)
{
	struct policy p = parse("allow-all\n");
	struct nft_box b = box(12, 0x0a0b00fe, &p);
	char *t = render(nft_render_box_add, &b);

	/* No "add element" for empty sets ("{ }" does not parse). */
	ck_assert_str_eq(t, "add set inet pdt box_12_names { type ipv4_addr; flags timeout; }\n"
			    "add set inet pdt box_12_nets { type ipv4_addr; flags interval; }\n"
			    "add chain inet pdt box_12\n"
			    "flush chain inet pdt box_12\n"
			    "flush set inet pdt box_12_names\n"
			    "flush set inet pdt box_12_nets\n"
			    "add rule inet pdt box_12 accept\n"
			    "add element inet pdt boxes { 10.11.0.254 : jump box_12 }\n"
			    "add element bridge pdt ports { \"pdt0v7\" . 02:ab:00:00:00:0c . "
			    "10.11.0.254 }\n");
	free(t);
	policy_release(&p);
}
END_TEST

START_TEST(remove_order)
{
	struct nft_box b = box(7, 0x0a0b0002, NULL);
	char *t = render(nft_render_box_remove, &b);

	/* The map element goes first: nothing leads to the chain after. */
	ck_assert_str_eq(t, "delete element inet pdt boxes { 10.11.0.2 }\n"
			    "flush chain inet pdt box_7\n"
			    "delete chain inet pdt box_7\n"
			    "delete set inet pdt box_7_names\n"
			    "delete set inet pdt box_7_nets\n"
			    "delete element bridge pdt ports { \"pdt0v7\" . 02:ab:00:00:00:07 . "
			    "10.11.0.2 }\n");
	free(t);
}
END_TEST

START_TEST(policy_leaves_names)
{
	struct policy p = parse("deny-all\n");
	struct nft_elem names[] = {{0x01020304, 30}};
	struct nft_box b = box(7, 0x0a0b0002, &p);
	b.names = names;
	b.n_names = 1;
	char *t = render(nft_render_box_policy, &b);

	ck_assert_str_eq(t, "flush chain inet pdt box_7\n"
			    "flush set inet pdt box_7_nets\n"
			    "add rule inet pdt box_7 meta l4proto tcp reject with tcp reset\n"
			    "add rule inet pdt box_7 reject with icmpx admin-prohibited\n");
	free(t);
	policy_release(&p);

	p = parse("allowlist\n0.0.0.0/0\n203.0.113.0/24\n");
	b.policy = &p;
	t = render(nft_render_box_policy, &b);
	ck_assert_str_eq(t, "flush chain inet pdt box_7\n"
			    "flush set inet pdt box_7_nets\n"
			    "add element inet pdt box_7_nets { 0.0.0.0/0 }\n"
			    "add rule inet pdt box_7 ip daddr @box_7_nets accept\n"
			    "add rule inet pdt box_7 ip daddr @box_7_names accept\n"
			    "add rule inet pdt box_7 meta l4proto tcp reject with tcp reset\n"
			    "add rule inet pdt box_7 reject with icmpx admin-prohibited\n");
	ck_assert_ptr_null(strstr(t, "names {"));
	free(t);
	policy_release(&p);
}
END_TEST

START_TEST(full_render)
{
	struct policy p1 = parse("allowlist\n198.51.100.0/24\n"), p2 = parse("deny-all\n");
	struct nft_elem names[] = {{0xcb007101, 300}, {0xcb007102, 0}};
	struct nft_box b[2] = {box(1, 0x0a0b0002, &p1), box(2, 0x0a0b0003, &p2)};
	char *t = NULL;

	b[0].names = names;
	b[0].n_names = 2;
	b[1].ifname = "pdt0v2";
	ck_assert_int_eq(nft_render(&net, b, 2, &t), 0);
	ck_assert_ptr_nonnull(strstr(t, "add table inet pdt\ndelete table inet pdt\n"));
	ck_assert_ptr_nonnull(
	    strstr(t, "elements = { 10.11.0.2 : jump box_1, 10.11.0.3 : jump box_2 }"));
	ck_assert_ptr_nonnull(strstr(t, "\tset box_1_names {\n\t\ttype ipv4_addr\n\t\tflags "
					"timeout\n\t\telements = { 203.0.113.1 timeout 300s, "
					"203.0.113.2 }\n\t}\n"));
	ck_assert_ptr_nonnull(strstr(t, "\tset box_1_nets {\n\t\ttype ipv4_addr\n\t\tflags "
					"interval\n\t\telements = { 198.51.100.0/24 }\n\t}\n"));
	/* Every box has both sets, empty or not. */
	ck_assert_ptr_nonnull(
	    strstr(t, "\tset box_2_names {\n\t\ttype ipv4_addr\n\t\tflags timeout\n\t}\n"));
	ck_assert_ptr_nonnull(
	    strstr(t, "\tset box_2_nets {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t}\n"));
	ck_assert_ptr_nonnull(strstr(t, "\tchain box_2 {\n\t\tmeta l4proto tcp reject with tcp "
					"reset\n\t\treject with icmpx admin-prohibited\n\t}\n"));
	ck_assert_ptr_nonnull(strstr(t, "add table bridge pdt\ndelete table bridge pdt\n"));
	ck_assert_ptr_nonnull(strstr(t, "elements = { \"pdt0v7\" . 02:ab:00:00:00:01 . 10.11.0.2, "
					"\"pdt0v2\" . 02:ab:00:00:00:02 . 10.11.0.3 }"));
	/* Every frame from a box's port goes through from_port, which
	 * accepts only the box's own IPv4 and ARP and drops the rest. */
	ck_assert_ptr_nonnull(
	    strstr(t, "\tchain ports_in {\n\t\ttype filter hook prerouting priority filter; "
		      "policy accept;\n\t\tiifname \"pdt0v*\" jump from_port\n\t}\n"));
	ck_assert_ptr_nonnull(strstr(
	    t, "\tchain from_port {\n"
	       "\t\tether type ip iifname . ether saddr . ip saddr @ports accept\n"
	       "\t\tether type arp arp htype 1 arp ptype ip arp hlen 6 arp plen 4 iifname . "
	       "ether saddr . arp saddr ip @ports iifname . arp saddr ether . arp saddr ip @ports "
	       "accept\n"
	       "\t\tdrop\n\t}\n}\n"));
	free(t);

	/* No boxes: empty map and set, no element lists. */
	ck_assert_int_eq(nft_render(&net, NULL, 0, &t), 0);
	ck_assert_ptr_null(strstr(t, "elements"));
	ck_assert_ptr_nonnull(
	    strstr(t, "\tset ports {\n\t\ttype ifname . ether_addr . ipv4_addr\n\t}\n"));
	free(t);
	policy_release(&p1);
	policy_release(&p2);
}
END_TEST

/* --- the kernel ------------------------------------------------------------ */

/* In a network namespace of this test process (fork mode: one per test);
 * false when that is not allowed (not root). */
static bool private_netns(void)
{
	if (unshare(CLONE_NEWNET) == 0)
		return true;
	fprintf(stderr, "# no network namespace (%s): kernel checks not run\n", strerror(errno));
	return false;
}

/* `nft list ruleset` in this namespace, malloc'd. */
static char *ruleset(void)
{
	struct nft_ctx *c = nft_ctx_new(NFT_CTX_DEFAULT);
	char *out;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(nft_ctx_buffer_output(c), 0);
	ck_assert_int_eq(nft_ctx_buffer_error(c), 0);
	ck_assert_int_eq(nft_run_cmd_from_buffer(c, "list ruleset"), 0);
	out = strdup(nft_ctx_get_output_buffer(c));
	nft_ctx_free(c);
	return out;
}

static void expect(const char *rules, const char *what, bool present)
{
	ck_assert_msg((strstr(rules, what) != NULL) == present, "%s \"%s\" in:\n%s",
		      present ? "no" : "unexpected", what, rules);
}

START_TEST(kernel_cycle)
{
	struct policy allow = parse("allow-all\n"), list = parse("allowlist\n198.51.100.0/24\n");
	struct nft_elem names[] = {{0xcb007101, 3600}};
	struct nft_box b = box(7, 0x0a0b0002, &allow);
	pd_error err = {0};
	char *r;

	if (!private_netns())
		return;
	ck_assert_int_eq(nft_apply(&net, NULL, 0, &err), 0);
	b.names = names;
	b.n_names = 1;
	ck_assert_msg(nft_box_add(&net, &b, &err) == 0, "%s", err.msg);
	r = ruleset();
	expect(r, "10.11.0.2 : jump box_7", true);
	expect(r, "chain box_7 {\n\t\taccept\n", true);
	expect(r, "203.0.113.1 timeout 1h", true);
	expect(r, "\"pdt0v7\" . 02:ab:00:00:00:07 . 10.11.0.2", true);
	expect(r, "chain from_port", true);
	free(r);

	/* A policy change keeps the names. */
	b.policy = &list;
	ck_assert_msg(nft_box_set_policy(&net, &b, &err) == 0, "%s", err.msg);
	r = ruleset();
	expect(r, "elements = { 198.51.100.0/24 }", true);
	expect(r, "ip daddr @box_7_nets accept", true);
	expect(r, "203.0.113.1 timeout 1h", true);
	free(r);

	/* Adding again over itself (a leftover) gives the same rules once. */
	ck_assert_msg(nft_box_add(&net, &b, &err) == 0, "%s", err.msg);
	r = ruleset();
	const char *first = strstr(r, "ip daddr @box_7_nets accept");
	ck_assert_ptr_nonnull(first);
	ck_assert_ptr_null(strstr(first + 1, "ip daddr @box_7_nets accept"));
	free(r);

	ck_assert_msg(nft_box_remove(&net, &b, &err) == 0, "%s", err.msg);
	r = ruleset();
	expect(r, "box_7", false);
	expect(r, "10.11.0.2", false);
	expect(r, "chain ports_in", true);
	free(r);

	/* Removing what is not there fails and changes nothing. */
	ck_assert_int_eq(nft_box_remove(&net, &b, &err), -EIO);
	ck_assert_ptr_nonnull(strstr(err.msg, "nftables refused the rules"));
	ck_assert_int_eq(nft_remove(net.table, &err), 0);
	r = ruleset();
	expect(r, "pdt", false);
	free(r);
	policy_release(&allow);
	policy_release(&list);
}
END_TEST

START_TEST(kernel_refused_batch_changes_nothing)
{
	struct policy allow = parse("allow-all\n");
	struct nft_box b1 = box(1, 0x0a0b0002, &allow), b2 = box(2, 0x0a0b0002, &allow);
	pd_error err = {0};
	char *r;

	if (!private_netns())
		return;
	ck_assert_int_eq(nft_apply(&net, &b1, 1, &err), 0);
	/* Box 2 with box 1's address: its map element conflicts, so its
	 * sets and chain must not appear either. */
	ck_assert_int_eq(nft_box_add(&net, &b2, &err), -EIO);
	r = ruleset();
	expect(r, "box_2", false);
	expect(r, "10.11.0.2 : jump box_1", true);
	free(r);
	/* The module recovers from the failure: the next change works. */
	b2.addr = 0x0a0b0003;
	ck_assert_msg(nft_box_add(&net, &b2, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(nft_remove(net.table, &err), 0);
	policy_release(&allow);
}
END_TEST

START_TEST(kernel_names)
{
	struct policy list = parse("allowlist\n198.51.100.0/24\n");
	struct nft_box b = box(7, 0x0a0b0002, &list);
	struct nft_elem el[] = {{0xcb007101, 3600}, {0xcb007102, 3600}, {0xcb007103, 0}};
	bool refresh[] = {false, true, false};
	size_t many = 2500;
	struct nft_elem *lots = calloc(many, sizeof *lots);
	pd_error err = {0};
	char *r;

	ck_assert_ptr_nonnull(lots);
	if (!private_netns()) {
		free(lots);
		return;
	}
	ck_assert_int_eq(nft_apply(&net, &b, 1, &err), 0);
	ck_assert_msg(nft_names_add(net.table, 7, el, 3, NULL, &err) == 0, "%s", err.msg);
	r = ruleset();
	expect(r, "203.0.113.1 timeout 1h", true);
	expect(r, "203.0.113.2 timeout 1h", true);
	expect(r, "203.0.113.3 }", true); /* no timeout: never expires */
	free(r);

	/* A refresh takes a shorter lifetime; an element refreshed that is
	 * not there (expired) is added all the same. */
	el[1].timeout_s = 60;
	el[0].addr = 0xcb007104;
	refresh[0] = true;
	ck_assert_msg(nft_names_add(net.table, 7, el, 2, refresh, &err) == 0, "%s", err.msg);
	r = ruleset();
	expect(r, "203.0.113.2 timeout 1m", true);
	expect(r, "203.0.113.4 timeout 1h", true);
	free(r);

	/* More than one transaction's worth. */
	for (size_t i = 0; i < many; i++)
		lots[i] = (struct nft_elem){0xc6120000u + (uint32_t)i, 600};
	ck_assert_msg(nft_names_add(net.table, 7, lots, many, NULL, &err) == 0, "%s", err.msg);
	r = ruleset();
	expect(r, "198.18.0.0 timeout 10m", true);
	expect(r, "198.18.9.195 timeout 10m", true); /* the 2500th */
	free(r);

	/* A set that does not exist: an error that says which, and the
	 * next call works. */
	ck_assert_int_lt(nft_names_add(net.table, 99, el, 1, NULL, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "box_99_names"));
	ck_assert_msg(nft_names_add(net.table, 7, el + 2, 1, NULL, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(nft_remove(net.table, &err), 0);
	free(lots);
	policy_release(&list);
}
END_TEST

START_TEST(kernel_no_fd_leak)
{
	struct policy allow = parse("allow-all\n");
	struct nft_box b = box(1, 0x0a0b0002, &allow);
	pd_error err = {0};

	if (!private_netns())
		return;
	ck_assert_int_eq(nft_apply(&net, &b, 1, &err), 0);
	ck_assert_int_eq(
	    nft_names_add(net.table, 1, &(struct nft_elem){0xcb007101, 60}, 1, NULL, &err), 0);
	/* The kept sockets are close-on-exec: a child sees no netlink
	 * socket of ours. */
	ck_assert_int_eq(system("! ls -l /proc/self/fd | grep -q socket"), 0);
	ck_assert_int_eq(nft_remove(net.table, &err), 0);
	policy_release(&allow);
}
END_TEST

static Suite *net_nft_suite(void)
{
	Suite *s = suite_create("net-nft");
	TCase *tc = tcase_create("text");

	tcase_add_test(tc, add_allowlist);
	tcase_add_test(tc, add_allow_all_no_elements);
	tcase_add_test(tc, remove_order);
	tcase_add_test(tc, policy_leaves_names);
	tcase_add_test(tc, full_render);
	suite_add_tcase(s, tc);
	tc = tcase_create("kernel");
	tcase_add_test(tc, kernel_cycle);
	tcase_add_test(tc, kernel_refused_batch_changes_nothing);
	tcase_add_test(tc, kernel_names);
	tcase_add_test(tc, kernel_no_fd_leak);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(net_nft_suite());
}
