/* check-tap.h - runs one Check suite with TAP on stdout, in fork mode, so
 * automake's tap-driver reports every test and a crash is a failure. */
#pragma once

#include <check.h>
#include <stdlib.h>

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
