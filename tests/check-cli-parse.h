/* check-cli-parse.h - cli_parse() of a word list, for the CLI's tests. */
#pragma once

#include <stdarg.h>

#include "cli/cli.h"

/* Parses a NULL-terminated word list (without the program name). */
static inline int parse(cli_args *a, pd_error *err, const char *first, ...)
{
	static char prog[] = "paddock";
	char *argv[64] = {prog};
	int argc = 1;
	va_list ap;

	va_start(ap, first);
	for (const char *w = first; w && argc < 63; w = va_arg(ap, const char *))
		argv[argc++] = (char *)w;
	va_end(ap);
	argv[argc] = NULL;
	pd_error_clear(err);
	return cli_parse(argc, argv, a, err);
}
