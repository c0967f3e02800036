/* check-tap.h - runs one Check suite with TAP on stdout, in fork mode, so
 * automake's tap-driver reports every test and a crash is a failure. */
#pragma once

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline int check_tap_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* check_tap_run() for a suite built without the tests this machine cannot
 * run (they need root): each of the n names in `skipped` is reported as a
 * TAP skip ("ok N # SKIP name: why") after the others and counted in the
 * plan, so that a test that did not run never reads as one that passed. */
static inline int check_tap_run_skipping(Suite *s, const char *const *skipped, size_t n,
					 const char *why)
{
	char path[] = "/tmp/check-tap.XXXXXX", line[4096];
	int fd, failed, ran;
	SRunner *sr;
	FILE *f;

	if (n == 0)
		return check_tap_run(s);
	fd = mkstemp(path);
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		perror("check-tap");
		return EXIT_FAILURE;
	}
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_set_tap(sr, path);
	srunner_run_all(sr, CK_SILENT);
	failed = srunner_ntests_failed(sr);
	ran = srunner_ntests_run(sr);
	srunner_free(sr);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "1..", 3) != 0)
			fputs(line, stdout);
	fclose(f);
	unlink(path);
	for (size_t i = 0; i < n; i++)
		printf("ok %d # SKIP %s: %s\n", ++ran, skipped[i], why);
	printf("1..%d\n", ran);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
