/* tcp-pump.c - a TCP sender and sink for tests/bench/net.sh, cheap enough
 * on CPU that the network path, not the tool, sets the pace (busybox nc from
 * /dev/zero into a python sink tops out near 100 MB/s).
 *
 *   tcp-pump sink ADDR PORT
 *       Listens on ADDR:PORT and takes connections one after another. Reads
 *       each to EOF in 1 MiB reads, sends back the byte count (8 bytes,
 *       big-endian), closes, and prints the count on its own line on
 *       stdout. Runs until killed.
 *   tcp-pump send ADDR PORT MIB
 *       Connects, writes MIB MiB of zeros in 1 MiB writes, shuts down its
 *       sending side and waits for the sink's count, so the time covers
 *       every byte delivered. Prints "BYTES SECONDS MB/s" (MB = 10^6
 *       bytes); exits 1 if the sink saw another count or on any error.
 *
 * Built by net.sh at run time (cc -O2, and -static for the copy run inside
 * a box, whose image has no C library to match the host's).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static char buf[CHUNK];

static int parse_addr(const char *addr, const char *port, struct sockaddr_in *sa)
{
	char *end;
	unsigned long p = strtoul(port, &end, 10);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (*port == '\0' || *end != '\0' || p == 0 || p > 65535 ||
	    inet_pton(AF_INET, addr, &sa->sin_addr) != 1) {
		fprintf(stderr, "tcp-pump: bad address %s:%s\n", addr, port);
		return -1;
	}
	sa->sin_port = htons((uint16_t)p);
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int sink(const struct sockaddr_in *sa)
{
	int one = 1;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(s, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(s, 8) < 0) {
		perror("tcp-pump: listen");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		uint64_t n = 0;
		unsigned char be[8];
		ssize_t r;
		int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("tcp-pump: accept");
			return 1;
		}
		while ((r = read(c, buf, CHUNK)) > 0 || (r < 0 && errno == EINTR))
			if (r > 0)
				n += (uint64_t)r;
		for (int i = 0; i < 8; i++)
			be[i] = (unsigned char)(n >> (56 - 8 * i));
		if (r == 0)
			(void)write_all(c, (const char *)be, sizeof(be));
		close(c);
		printf("%llu\n", (unsigned long long)n);
	}
}

static int send_mib(const struct sockaddr_in *sa, const char *mib_s)
{
	char *end;
	unsigned long mib = strtoul(mib_s, &end, 10);
	uint64_t want, got = 0;
	unsigned char be[8];
	size_t have = 0;
	struct timespec t0, t1;
	double secs;
	int s;

	if (*mib_s == '\0' || *end != '\0' || mib == 0 || mib > (1ul << 24)) {
		fprintf(stderr, "tcp-pump: bad size %s (MiB, 1 to 2^24)\n", mib_s);
		return 1;
	}
	want = (uint64_t)mib * CHUNK;
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		perror("tcp-pump: socket");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (connect(s, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		perror("tcp-pump: connect");
		return 1;
	}
	for (unsigned long i = 0; i < mib; i++)
		if (write_all(s, buf, CHUNK) < 0) {
			perror("tcp-pump: write");
			return 1;
		}
	if (shutdown(s, SHUT_WR) < 0) {
		perror("tcp-pump: shutdown");
		return 1;
	}
	while (have < sizeof(be)) {
		ssize_t r = read(s, be + have, sizeof(be) - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "tcp-pump: no count from the sink\n");
			return 1;
		}
		have += (size_t)r;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(s);
	for (int i = 0; i < 8; i++)
		got = got << 8 | be[i];
	if (got != want) {
		fprintf(stderr, "tcp-pump: sent %llu bytes, the sink saw %llu\n",
			(unsigned long long)want, (unsigned long long)got);
		return 1;
	}
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%llu %.6f %.1f\n", (unsigned long long)want, secs, (double)want / secs / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;

	if (argc == 4 && strcmp(argv[1], "sink") == 0) {
		if (parse_addr(argv[2], argv[3], &sa) < 0)
			return 2;
		return sink(&sa);
	}
	if (argc == 5 && strcmp(argv[1], "send") == 0) {
		if (parse_addr(argv[2], argv[3], &sa) < 0)
			return 2;
		return send_mib(&sa, argv[4]);
	}
	fprintf(stderr, "usage: tcp-pump sink ADDR PORT | tcp-pump send ADDR PORT MIB\n");
	return 2;
}
