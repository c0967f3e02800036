/* json.h - the CLI's JSON, on jansson: what it prints for --json, the
 * bodies it posts, and the members it reads from the server's answers. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Whether s is valid UTF-8 (no overlongs, no surrogates, nothing above
 * U+10FFFF): what jansson accepts for a string. */
bool cli_utf8_valid(const char *s);

/* A JSON string of s (not NULL). JSON text is UTF-8 and jansson takes
 * nothing else, while a file name or a window title may be any bytes: each
 * byte that is not part of valid UTF-8 becomes U+FFFD, so the output stays
 * JSON. NULL only on ENOMEM. */
json_t *cli_json_str(const char *s);

/* Sets o[key] to cli_json_str(value), or to null when value is NULL.
 * Returns 0 or -ENOMEM. */
int cli_json_set(json_t *o, const char *key, const char *value);

/* Prints v compactly and a newline to f, and drops the reference (v may be
 * NULL: a json_pack() or json_object() that failed). Returns 0, or -ENOMEM
 * when v is NULL or could not be written. */
int cli_json_print(FILE *f, json_t *v);

/* Prints {"KEY":"VALUE"} to stdout with json, else VALUE and a newline.
 * Returns 0 or -ENOMEM. */
int cli_json_print_value(bool json, const char *key, const char *value);
