/* secrets.h - named secrets (API keys, tokens) handed to a box's jobs as
 * environment variables, stored sealed (docs/secrets.md).
 *
 * A secret's name is an environment variable's, [A-Za-z_][A-Za-z0-9_]*,
 * 1 to SECRET_NAME_MAX bytes; its value is 0 to SECRET_VALUE_MAX bytes
 * without NUL (an environment string cannot hold one). Values are sealed
 * with libsodium's crypto_secretbox (XSalsa20-Poly1305) under one random
 * key in DATA/secrets.key (0600, owned by the daemon's user, made at the
 * first start), a fresh random nonce for each value set; the sealed text
 * also holds the name, so a value moved to another row does not open.
 * The clear value exists only in the daemon's memory while it is set or
 * handed to a job (eng_secrets_env(), engine/internal.h) and in that job's
 * supervisor and command: never in a file, a log, `info`, an export, a
 * snapshot or a command line.
 *
 * Addressed by id (never reused) once they exist, like the engine's other
 * objects; the engine lock guards the store, as everywhere. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "engine/engine.h"
#include "store/store.h"

#define SECRET_NAME_MAX STORE_SECRET_NAME_MAX
#define SECRET_VALUE_MAX (64 * 1024)
#define SECRET_KEY_FILE "secrets.key"
/* Names a box may list (its whole environment must fit one exec). */
#define SECRET_BOX_MAX 64

struct secret_view {
	int64_t id;
	char name[SECRET_NAME_MAX + 1];
	time_t set_time;
};

/* Sets name's value (len bytes, one trailing newline already stripped by
 * the caller if it wants): creates the secret or replaces its value, in
 * one step (a crash leaves the old value or the new one). -EINVAL for a
 * bad name or a NUL in the value, -EFBIG over SECRET_VALUE_MAX. */
int engine_secret_set(struct engine *e, const char *name, const char *value, size_t len,
		      pd_error *err);
/* Removes it; every box that listed it stops listing it (its next jobs go
 * without). -ENOENT once it is gone. */
int engine_secret_delete(struct engine *e, int64_t id, pd_error *err);
/* Names in name order; free with image_list_free(). */
int engine_secret_names(struct engine *e, char ***ret, size_t *ret_n);
int engine_secret_get(struct engine *e, const char *name, struct secret_view *ret);
int engine_secret_get_by_id(struct engine *e, int64_t id, struct secret_view *ret);
/* What a read of secrets/NAME shows: "set RFC3339\n", in buf. */
int engine_secret_read_time(struct engine *e, int64_t id, char *buf, size_t bufsz);

/* A box's list (boxes/NAME/secrets): "NAME\n" per secret, malloc'd. */
int engine_box_secrets(struct engine *e, int64_t box_id, char **ret);
/* Replaces the list with the names in text (one a line; blank lines and
 * surrounding blanks ignored): -ENOENT "secret X is not set", -EINVAL for a
 * bad name, -EEXIST for one named twice; nothing changes on failure. Takes
 * effect at the box's next job. */
int engine_box_set_secrets(struct engine *e, int64_t box_id, const char *text, size_t len,
			   pd_error *err);

/* --- the parts without the engine (unit tests) ------------------------------- */

bool secret_name_valid(const char *name);
/* Loads the key at path, made (random, 0600, atomically: a concurrent
 * maker's key wins) when it is missing and create. Refuses a key file
 * that is not a regular file of exactly crypto_secretbox_KEYBYTES bytes,
 * not owned by the effective user, or readable or writable by anyone else
 * (mode other than 0600): -EPERM with the reason, and the file is left
 * alone. key: crypto_secretbox_KEYBYTES bytes. */
int secret_key_load(const char *path, bool create, unsigned char *key, pd_error *err);
/* Seals value under key, bound to name: a fresh nonce in *ret_nonce
 * (crypto_secretbox_NONCEBYTES, malloc'd) and the ciphertext in *ret_ct. */
int secret_seal(const unsigned char *key, const char *name, const char *value, size_t len,
		unsigned char **ret_nonce, unsigned char **ret_ct, size_t *ret_ct_len);
/* Opens what secret_seal() made for name: the value (NUL-terminated, in
 * sodium_malloc'd memory: free with secret_value_free()) and its length.
 * -EBADMSG when it does not open (another key, another name, altered). */
int secret_open(const unsigned char *key, const char *name, const unsigned char *nonce,
		size_t nonce_len, const unsigned char *ct, size_t ct_len, char **ret_value,
		size_t *ret_len);
void secret_value_free(char *value);
