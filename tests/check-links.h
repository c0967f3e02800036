/* check-links.h - for unit tests of what an extraction leaves on disk. */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* Whether some symlink below dir leads out of root (root itself or below
 * it is in) when followed on the host from its real place, through the
 * links on the way, as the kernel would. Each link that does is named on
 * stderr as a TAP comment. */
static inline bool links_lead_out(const char *dir, const char *root)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "find '%s' -type l | while read -r l; do r=$(realpath -m \"$l\"); "
		 "case \"$r\" in '%s'|'%s'/*) ;; *) echo \"# $l -> $r\" >&2; exit 1;; esac; done",
		 dir, root, root);
	return system(cmd) != 0;
}
