/* ports.h - the CLI's `ports` command (ports.c): a box's published ports
 * (boxes/NAME/ports, docs/preview.md). */
#pragma once

#include <stddef.h>

#include "common/error.h"

/* The ports file's text for the operands of `ports BOX PORT [public]...`:
 * each PORT starts a line, a "public" after it marks that port public;
 * "none" alone is the empty list. -EINVAL with the reason for a word that
 * is neither (the server checks the ports themselves). *ret is malloc'd. */
int cli_ports_body(const char *const *words, size_t n, char **ret, pd_error *err);
