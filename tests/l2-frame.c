/* l2-frame.c - crafts and counts Ethernet frames on one interface through a
 * raw packet socket (CAP_NET_RAW), for test-net-l2.sh. Built static on the
 * host and copied into a box, where the image has no such tool.
 *
 *   l2-frame udp IF ETHSRC ETHDST IPSRC IPDST DPORT COUNT GAP_MS
 *       sends COUNT IPv4/UDP frames (GAP_MS apart) with these sources
 *   l2-frame arp IF ETHSRC ETHDST OP SHA SPA THA TPA COUNT GAP_MS
 *       sends COUNT ARP frames (OP 1 request, 2 reply)
 *   l2-frame ip6 IF ETHSRC ETHDST COUNT GAP_MS
 *       sends COUNT minimal IPv6 frames (no next header)
 *   l2-frame count IF SECONDS dst MAC | udp PORT
 *       prints how many frames arrived on IF in SECONDS whose Ethernet
 *       destination is MAC, or that are IPv4/UDP to PORT; IF is put in
 *       promiscuous mode meanwhile (frames for other MACs are kept)
 *
 * Exit status 0 when the frames were sent or counted, 2 on bad use, 1 on a
 * failed system call (with a message). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: see the head of l2-frame.c\n");
	return 2;
}

static int mac_parse(const char *s, uint8_t m[6])
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		m[i] = (uint8_t)v[i];
	return 0;
}

static int ip_parse(const char *s, uint8_t a[4])
{
	return inet_pton(AF_INET, s, a) == 1 ? 0 : -1;
}

static int sock_on(const char *ifname, struct sockaddr_ll *sll)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));

	if (fd < 0) {
		perror("socket(AF_PACKET)");
		return -1;
	}
	memset(sll, 0, sizeof *sll);
	sll->sll_family = AF_PACKET;
	sll->sll_protocol = htons(ETH_P_ALL);
	sll->sll_ifindex = (int)if_nametoindex(ifname);
	sll->sll_halen = 6;
	if (!sll->sll_ifindex || bind(fd, (struct sockaddr *)sll, sizeof *sll) < 0) {
		fprintf(stderr, "cannot bind to %s: %s\n", ifname, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static uint16_t csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)(p[n - 1] << 8);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static int send_n(const char *ifname, const uint8_t *frame, size_t len, const char *count,
		  const char *gap_ms)
{
	struct sockaddr_ll sll;
	int fd = sock_on(ifname, &sll);
	long n = atol(count), gap = atol(gap_ms);

	if (fd < 0)
		return 1;
	for (long i = 0; i < n; i++) {
		if (send(fd, frame, len, 0) != (ssize_t)len) {
			perror("send");
			return 1;
		}
		if (gap > 0 && i + 1 < n)
			nanosleep(&(struct timespec){gap / 1000, (gap % 1000) * 1000000}, NULL);
	}
	close(fd);
	return 0;
}

/* Ethernet header: dst, src, type. */
static size_t eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
	return 14;
}

static int cmd_udp(char **a)
{
	uint8_t f[128] = {0}, src[6], dst[6], sip[4], dip[4];
	uint16_t port = (uint16_t)atoi(a[5]);
	size_t o;

	if (mac_parse(a[1], src) || mac_parse(a[2], dst) || ip_parse(a[3], sip) ||
	    ip_parse(a[4], dip))
		return usage();
	o = eth(f, dst, src, ETH_P_IP);
	uint8_t *ip = f + o;
	ip[0] = 0x45;
	ip[3] = 20 + 8 + 4; /* total length */
	ip[8] = 64;	    /* ttl */
	ip[9] = 17;	    /* udp */
	memcpy(ip + 12, sip, 4);
	memcpy(ip + 16, dip, 4);
	uint16_t c = csum(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	uint8_t *udp = ip + 20;
	udp[0] = 0x30, udp[1] = 0x39; /* source port 12345 */
	udp[2] = (uint8_t)(port >> 8);
	udp[3] = (uint8_t)port;
	udp[5] = 8 + 4;
	memcpy(udp + 8, "l2t\n", 4);
	return send_n(a[0], f, o + 32 < 60 ? 60 : o + 32, a[6], a[7]);
}

static int cmd_arp(char **a)
{
	uint8_t f[64] = {0}, src[6], dst[6], sha[6], tha[6], spa[4], tpa[4];
	size_t o;

	if (mac_parse(a[1], src) || mac_parse(a[2], dst) || mac_parse(a[4], sha) ||
	    ip_parse(a[5], spa) || mac_parse(a[6], tha) || ip_parse(a[7], tpa))
		return usage();
	o = eth(f, dst, src, ETH_P_ARP);
	uint8_t *p = f + o;
	p[1] = 1;		    /* htype ethernet */
	p[2] = 0x08, p[3] = 0x00;   /* ptype ipv4 */
	p[4] = 6, p[5] = 4;	    /* hlen, plen */
	p[7] = (uint8_t)atoi(a[3]); /* op */
	memcpy(p + 8, sha, 6);
	memcpy(p + 14, spa, 4);
	memcpy(p + 18, tha, 6);
	memcpy(p + 24, tpa, 4);
	return send_n(a[0], f, 60, a[8], a[9]);
}

static int cmd_ip6(char **a)
{
	uint8_t f[128] = {0}, src[6], dst[6];
	size_t o;

	if (mac_parse(a[1], src) || mac_parse(a[2], dst))
		return usage();
	o = eth(f, dst, src, ETH_P_IPV6);
	f[o] = 0x60;
	f[o + 6] = 59; /* no next header */
	f[o + 7] = 64;
	f[o + 8] = 0xfe, f[o + 9] = 0x80; /* fe80::1 -> ff02::1 */
	f[o + 23] = 1;
	f[o + 24] = 0xff, f[o + 25] = 0x02;
	f[o + 39] = 1;
	return send_n(a[0], f, o + 40, a[3], a[4]);
}

static int cmd_count(char **a)
{
	struct sockaddr_ll sll;
	uint8_t mac[6] = {0}, buf[2048];
	long port = -1, n = 0;
	int by_mac = strcmp(a[2], "dst") == 0;
	int fd;

	if (by_mac ? mac_parse(a[3], mac) < 0 : strcmp(a[2], "udp") != 0)
		return usage();
	if (!by_mac)
		port = atol(a[3]);
	fd = sock_on(a[0], &sll);
	if (fd < 0)
		return 1;
	/* Dropped with the socket. */
	struct packet_mreq mr = {.mr_ifindex = sll.sll_ifindex, .mr_type = PACKET_MR_PROMISC};
	if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) < 0) {
		perror("PACKET_ADD_MEMBERSHIP");
		close(fd);
		return 1;
	}
	struct timespec end, now;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += atol(a[1]);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (end.tv_sec - now.tv_sec) * 1000 + (end.tv_nsec - now.tv_nsec) / 1000000;
		if (ms <= 0)
			break;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, (int)ms) <= 0)
			continue;
		struct sockaddr_ll from;
		socklen_t fl = sizeof from;
		ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
		if (r < 14 || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (by_mac) {
			n += memcmp(buf, mac, 6) == 0;
			continue;
		}
		/* IPv4 (no options assumed beyond IHL), UDP, destination port. */
		if (r < 14 + 20 + 8 || buf[12] != 0x08 || buf[13] != 0x00 || buf[23] != 17)
			continue;
		size_t ihl = (size_t)(buf[14] & 0xf) * 4;
		if ((size_t)r < 14 + ihl + 4)
			continue;
		n += (buf[14 + ihl + 2] << 8 | buf[14 + ihl + 3]) == port;
	}
	printf("%ld\n", n);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "udp") && argc == 10)
		return cmd_udp(argv + 2);
	if (!strcmp(argv[1], "arp") && argc == 12)
		return cmd_arp(argv + 2);
	if (!strcmp(argv[1], "ip6") && argc == 7)
		return cmd_ip6(argv + 2);
	if (!strcmp(argv[1], "count") && argc == 6)
		return cmd_count(argv + 2);
	return usage();
}
