/* dns-relay.c - the least a DNS forwarder in the resolver's place can do,
 * for tests/bench/dns.sh: the floor under the boxes' resolver.
 *
 *   dns-relay LISTEN_ADDR PORT UPSTREAM_ADDR UPSTREAM_PORT
 *       One thread, one epoll loop: each query read on LISTEN_ADDR:PORT is
 *       sent upstream as it is on one kept socket, each reply sent back as
 *       it is to the client that asked last (one client at a time: the
 *       benchmark's). No parsing, no policy, no set update, no fresh socket
 *       per query. Runs until killed.
 *
 * Built by dns.sh at run time (cc -O2).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in l = {.sin_family = AF_INET}, u = {.sin_family = AF_INET}, c;
	socklen_t cl = sizeof c;
	unsigned char buf[4096];
	struct epoll_event ev, evs[16];
	int ls, us, ep;

	if (argc != 5 || inet_pton(AF_INET, argv[1], &l.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[3], &u.sin_addr) != 1) {
		fprintf(stderr, "usage: dns-relay LISTEN_ADDR PORT UPSTREAM_ADDR UPSTREAM_PORT\n");
		return 2;
	}
	l.sin_port = htons((unsigned short)atoi(argv[2]));
	u.sin_port = htons((unsigned short)atoi(argv[4]));
	ls = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	us = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ls < 0 || us < 0 || ep < 0 || bind(ls, (struct sockaddr *)&l, sizeof l) < 0 ||
	    connect(us, (struct sockaddr *)&u, sizeof u) < 0) {
		perror("dns-relay");
		return 1;
	}
	ev = (struct epoll_event){.events = EPOLLIN, .data.fd = ls};
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	ev.data.fd = us;
	epoll_ctl(ep, EPOLL_CTL_ADD, us, &ev);
	for (;;) {
		int n = epoll_wait(ep, evs, 16, -1);

		for (int i = 0; i < n; i++) {
			ssize_t m;

			if (evs[i].data.fd == ls)
				while ((m = recvfrom(ls, buf, sizeof buf, 0, (struct sockaddr *)&c,
						     &cl)) > 0)
					(void)send(us, buf, (size_t)m, 0);
			else
				while ((m = recv(us, buf, sizeof buf, 0)) > 0)
					(void)sendto(ls, buf, (size_t)m, 0, (struct sockaddr *)&c,
						     sizeof c);
		}
	}
}
