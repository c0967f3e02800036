/* agents.h - the coding agents the images carry (docs/prompts.md).
 *
 * `scripts/mkimage agents` writes DATA/images/NAME/agents.ini (inih format,
 * one section per agent id, only the agents installed in that image):
 *
 *	[claude]
 *	name = Claude Code
 *	version = 2.1.332          the installed version
 *	bin = claude               command name in the image's PATH
 *	secrets = ANTHROPIC_API_KEY   env names it needs (space-separated)
 *	endpoints = api.anthropic.com ...   hosts its default setup talks to
 *
 * The catalogue is every image's file; the daemon's config adds a base_url
 * and a model per agent ([agent NAME], config.h). An agent's endpoints are
 * the host of its base_url when set, else the catalogue's: the @NAME policy
 * preset expands to them, and a prompt checks its box's policy allows the
 * first (its model endpoint) before it starts anything.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"
#include "common/error.h"
#include "net/policy.h"

struct engine;

/* How long an agents.ini may be. */
#define AGENTS_INI_MAX (256 * 1024)

struct agent_entry {
	char id[NAME_MAX_LEN + 1];
	char *name, *version, *bin, *secrets, *endpoints; /* NULL when absent */
};

/* One image's agents, in its file's order. */
struct agent_image {
	char name[NAME_MAX_LEN + 1];
	struct agent_entry *agents;
	size_t n;
};

/* Every image that has an agents.ini, by image name. */
struct agent_catalogue {
	struct agent_image *images;
	size_t n;
};

/* Parses one image's agents.ini into *ret (name set by the caller).
 * Sections with an invalid id are skipped; unknown keys are ignored.
 * -ENOENT when there is no file, -errno, -ENOMEM. */
int agents_parse_file(const char *path, struct agent_image *ret);
/* Reads images_dir/NAME/agents.ini of every installed image. Images
 * without one are left out. Never fails for a bad file (it is skipped);
 * -ENOMEM. */
int agents_load(const char *images_dir, struct agent_catalogue *ret);
void agents_release(struct agent_catalogue *c);

/* The agent id in image (NULL: any image, the first by name that has
 * it), or NULL. */
const struct agent_entry *agents_find(const struct agent_catalogue *c, const char *image,
				      const char *id);
/* The first agent of image's file, or NULL (none, or no file). */
const struct agent_entry *agents_image_first(const struct agent_catalogue *c, const char *image);
/* The ids, "claude, codex", of image's agents (NULL: every image's, once
 * each); "none" when there are none. bufsz >= TEXT_LIST_MIN. */
void agents_ids(const struct agent_catalogue *c, const char *image, char *buf, size_t bufsz);
/* Every agent id once, sorted; free with image_list_free(). */
int agents_id_list(const struct agent_catalogue *c, char ***ret, size_t *ret_n);

/* The file /paddock/agents/ID: "version V\nimages I1 I2\nsecrets S1 S2\n",
 * then "base_url U\n" and "model M\n" when configured. -ENOENT when no
 * image has the agent. *ret is malloc'd. */
int agents_format(const struct agent_catalogue *c, const struct pd_config *cfg, const char *id,
		  char **ret);

/* The hosts agent id talks to: its base_url's host when configured, else
 * the catalogue's endpoints (any image's). A malloc'd vector (NULL-ended,
 * free with strv_free()), possibly empty. -ENOENT: unknown id. */
int agents_endpoints(const struct agent_catalogue *c, const struct pd_config *cfg, const char *id,
		     char ***ret);

/* Adds the hosts of p's @ID presets to p (policy_add_expanded()). strict:
 * an id no image has is -EINVAL "line N: unknown agent @x (known: ...)";
 * otherwise it expands to nothing (a stored policy whose agent's image
 * was removed: never more open than written). */
int agents_expand_policy(const struct agent_catalogue *c, const struct pd_config *cfg,
			 struct policy *p, bool strict, pd_error *err);

/* --- the engine's side ------------------------------------------------------ */

/* /paddock/agents/: the agent ids of the installed images, sorted (free
 * with image_list_free()), and one agent's file (agents_format()). */
int engine_agent_names(struct engine *e, char ***ret, size_t *ret_n);
int engine_agent_read(struct engine *e, const char *id, char **ret, size_t *ret_len);
