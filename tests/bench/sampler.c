/* sampler.c - built by the benchmarks that time one box's control files
 * while other work runs (usage-stall.sh, lock.sh).
 *
 *   sampler SECONDS DIR
 *
 * One operation a millisecond on DIR/state (read to EOF), DIR/info (read to
 * EOF) and DIR/ttl (write "3600" or "7200" in turn: a store write each
 * time), in turn, for SECONDS; prints "START_MS OP LATENCY_US" per operation
 * (CLOCK_MONOTONIC). Exits 1 on the first operation that fails. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	static const char *ops[] = {"state", "info", "ttl"};
	char path[4096], buf[65536];
	double end;

	if (argc != 3) {
		fprintf(stderr, "usage: sampler SECONDS DIR\n");
		return 2;
	}
	end = now_ms() + atof(argv[1]) * 1e3;
	for (unsigned i = 0; now_ms() < end; i++) {
		const char *op = ops[i % 3];
		int w = strcmp(op, "ttl") == 0;
		double t;
		int fd;

		snprintf(path, sizeof path, "%s/%s", argv[2], op);
		t = now_ms();
		fd = open(path, (w ? O_WRONLY | O_TRUNC : O_RDONLY) | O_CLOEXEC);
		if (fd < 0)
			return perror(path), 1;
		if (w) {
			const char *v = i % 2 ? "3600\n" : "7200\n";
			if (write(fd, v, 5) != 5)
				return perror(path), 1;
		} else {
			ssize_t r;
			while ((r = read(fd, buf, sizeof buf)) > 0)
				;
			if (r < 0)
				return perror(path), 1;
		}
		if (close(fd) < 0)
			return perror(path), 1;
		printf("%.3f %s %.1f\n", t, op, (now_ms() - t) * 1e3);
		fflush(stdout);
		usleep(1000);
	}
	return 0;
}
