/* skill.h - `paddock skill install [DIR]`: the Paddock skill
 * (skill/paddock/SKILL.md, built into the CLI) written where coding agents
 * look for their user's skills. */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

/* SKILL.md's bytes (skill-md.c, generated from the file at build time). */
extern const unsigned char cli_skill_md[];
extern const size_t cli_skill_md_size;

/* The skill directories of the agents, for a user whose environment is
 * given by getenv-like get (NULL: getenv): Claude Code's
 * ($CLAUDE_CONFIG_DIR or ~/.claude)/skills, Codex's ~/.agents/skills,
 * OpenCode's ($XDG_CONFIG_HOME or ~/.config)/opencode/skills, Pi's
 * ~/.pi/agent/skills. *ret is a NULL-terminated malloc'd array of n
 * malloc'd paths (free with strv_free()). -ENOENT when HOME is unset. */
int cli_skill_dirs(char *(*get)(const char *), char ***ret, size_t *ret_n, pd_error *err);

/* Writes body (len bytes) as ROOT/paddock/SKILL.md: ROOT is created
 * (mkdir -p) when missing, paddock/ in it too; paddock/ must then be a
 * directory and no symbolic link, and SKILL.md is replaced atomically
 * (a temp file renamed over it: a link there is replaced, never
 * followed). The file's path in *ret (malloc'd). */
int cli_skill_write(const char *root, const void *body, size_t len, char **ret, pd_error *err);

/* skill install [DIR]: into DIR, or into every agent's directory; prints
 * each path written to out. Returns 0, or the first failure (the other
 * directories are still tried). */
int cli_skill_install(const char *dir, FILE *out, pd_error *err);
