/* check-mounts.h - for unit tests that run the engine as root: detaches
 * what it mounted under a test's directory (the boxes' overlays and their
 * views, snapshot roots), so the directory can go and nothing is left
 * mounted. */
#pragma once

#include <glob.h>
#include <stdio.h>
#include <sys/mount.h>

static inline void detach_under(const char *dir)
{
	static const char *const patterns[] = {"run/roots/*", "data/boxes/*/rootfs",
					       "run/snapshots/*"};
	char pattern[256];
	glob_t g;

	for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
		snprintf(pattern, sizeof pattern, "%s/%s", dir, patterns[i]);
		if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++)
			while (umount2(g.gl_pathv[k], MNT_DETACH) == 0)
				;
		globfree(&g);
	}
}
