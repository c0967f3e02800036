/* secret.h - the CLI's `secret` commands (secret.c). */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "cli/client.h"
#include "common/error.h"

/* The server's limits (engine/secrets.h), checked here first for a clear
 * message before anything is sent. */
#define CLI_SECRET_NAME_MAX 128
#define CLI_SECRET_VALUE_MAX (64 * 1024)

/* An environment variable's name, [A-Za-z_][A-Za-z0-9_]*, <= 128 bytes. */
bool cli_secret_name_valid(const char *s);

/* The value from in: a terminal gives one line, read without echo (the
 * prompt on the terminal, platform.h); anything else is read to EOF. One trailing newline
 * is dropped. -EFBIG over CLI_SECRET_VALUE_MAX, -EINVAL for a NUL byte.
 * *ret is malloc'd (zero it before freeing). */
int cli_secret_read_value(const char *name, FILE *in, char **ret, size_t *ret_len, pd_error *err);

/* secret set NAME: the value from in, PUT to secrets/NAME. */
int cli_secret_set(cli_client *c, const char *name, FILE *in, pd_error *err);
/* secret rm NAME. */
int cli_secret_rm(cli_client *c, const char *name, pd_error *err);
/* secret ls: "NAME SET" lines (set: when the value was set), or a JSON
 * array of {"name","set"} objects. */
int cli_secret_ls(cli_client *c, bool json, FILE *out, pd_error *err);
