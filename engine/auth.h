/* auth.h - the owner's password, the one-time setup secret and access
 * tokens for the HTTP mirror (web/README.md, "Owner, setup link, tokens").
 *
 * What is stored (sqlite tables `owner` and `tokens`, store.h) is hashes
 * only: the password as a crypto_pwhash_str() string (Argon2id), the setup
 * secret and each token as a BLAKE2b-256 hash (crypto_generichash) of the
 * whole string. Secrets are compared in constant time.
 *
 * Tokens are "pd_" + ID (12 chars [a-z0-9]) + "_" + 43 chars of base64url
 * (32 random bytes): AUTH_TOKEN_LEN chars. The ID is public (it names the
 * token in /paddock/tokens/ID); only the whole token grants access.
 *
 * Failed logins are limited two ways (docs/security.md, "The HTTP API"):
 *
 * - Per client: a client is an address (auth_client_key(): IPv4 alone, IPv6
 *   by its /64). Each failure doubles a lockout (0.5 s, 1 s, 2 s ... at most
 *   60 s) during which its attempts are refused without checking the
 *   password; a success clears it. While one attempt of a client waits or is
 *   checked, its next ones are refused. At most AUTH_CLIENTS_MAX clients are
 *   remembered (the least recently seen idle one is forgotten first).
 * - Globally: every password verification takes one unit of a budget that
 *   refills at one unit per AUTH_BUDGET_INTERVAL_MS and holds at most
 *   AUTH_BUDGET_BURST (a token bucket, kept as a GCRA), so the total guess
 *   rate is bounded whatever the number of addresses. A login that finds the
 *   budget empty is not refused: it waits in a first-come queue for its unit.
 *   The queue holds AUTH_LOGIN_QUEUE_MAX logins; a new login arriving at a
 *   full queue takes the place of the oldest waiting one, which is refused
 *   (-EAGAIN). At most AUTH_VERIFY_MAX passwords are checked at once (each
 *   check takes ~64 MiB and ~0.1 s at the production cost).
 *
 * What that means for the owner: while a guessing attack from many
 * addresses lasts, the owner's password logins wait in the queue or are
 * refused (-EAGAIN) like the attacker's; tokens already issued and the
 * local socket (no password) keep working. Once the attack stops, a login
 * from a fresh address is served within seconds: within
 * AUTH_LOGIN_QUEUE_MAX budget units (about 4 s), whatever the attack left
 * behind.
 *
 * Revocation: auth_token_revoke() calls the revocation hooks (after the
 * token is gone), so that adapters end what the token has open (HTTP
 * streams, WebSockets), and bumps a generation counter that a request can
 * compare with the value it saw when its token was checked.
 *
 * Expiry: a token may have a lifetime (auth_login()'s ttl, else the
 * server's token_ttl; none: it never expires). From its expiry on, a check
 * of it fails with -EACCES and tells the time it expired, so that a client
 * hears why; the token is kept AUTH_EXPIRED_KEEP seconds for that, then
 * deleted by the next login, listing or check of it (expired tokens do not
 * pile up). auth_expire_tick(), called about once a second by the HTTP
 * server, announces each expiry once through the revocation hooks (with the
 * expiry time) and bumps the generation: what the token has open ends as
 * if it were revoked.
 *
 * Locking: every function is thread-safe. The auth object has its own
 * sqlite connection to the engine's database (WAL, busy timeout) and one
 * mutex guarding that connection, the client table and the budget; the
 * mutex is a leaf (no other lock is taken while it is held) and is never
 * held while a password is hashed or verified (a waiting login sleeps on a
 * condition variable, releasing it). Revocation hooks run under a second
 * mutex (hooks), taken after the first is released; a hook may take its
 * adapter's locks but must not call back into auth.
 *
 * Errors: 0 or -errno; where a pd_error is passed it gets the reason for a
 * person. Out-parameters are written only on success unless stated.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/error.h"

#define AUTH_ID_LEN 12
#define AUTH_SECRET_LEN 43 /* base64url of 32 bytes, no padding */
#define AUTH_TOKEN_LEN (3 + AUTH_ID_LEN + 1 + AUTH_SECRET_LEN) /* 59 */
#define AUTH_LABEL_MAX 64
#define AUTH_PASSWORD_MIN 8
#define AUTH_PASSWORD_MAX 1024
#define AUTH_CLIENT_MAX 127 /* bytes of a client address */
#define AUTH_CLIENTS_MAX 4096
#define AUTH_VERIFY_MAX 2	     /* password checks at once */
#define AUTH_BUDGET_INTERVAL_MS 1000 /* one verification per second overall */
#define AUTH_BUDGET_BURST 4	     /* ... with up to 4 at once after a pause */
#define AUTH_LOGIN_QUEUE_MAX 4	     /* logins waiting for the budget */
/* Callers that may be inside auth_login() at once for every login to reach
 * the queue: the ones being verified, the queue, and one newcomer. */
#define AUTH_LOGIN_CALLERS (AUTH_VERIFY_MAX + AUTH_LOGIN_QUEUE_MAX + 1)
#define AUTH_LOCKOUT_FIRST_MS 500
#define AUTH_LOCKOUT_MAX_MS 60000
#define AUTH_TOUCH_INTERVAL 60 /* seconds between writes of a token's last_used */
/* A token's longest lifetime: ten years. */
#define AUTH_TTL_MAX (10LL * 365 * 24 * 3600)
/* Seconds an expired token is kept, told apart from an unknown one. */
#define AUTH_EXPIRED_KEEP 86400

struct auth;

/* Password hashing cost. Zero fields mean libsodium's interactive limits
 * (crypto_pwhash_OPSLIMIT/MEMLIMIT_INTERACTIVE), the production setting;
 * tests pass the minimums to stay fast. Verification always uses the cost
 * recorded in the stored hash. The budget fields (zero: the AUTH_BUDGET_*,
 * AUTH_LOGIN_QUEUE_MAX and AUTH_VERIFY_MAX defaults) let tests use another
 * rate. */
struct auth_options {
	unsigned long long opslimit;
	size_t memlimit;
	unsigned budget_interval_ms;
	unsigned budget_burst;
	unsigned queue_max;
	unsigned verify_max;
	/* The lifetime of a token whose login names none, and the longest a
	 * login may ask for (config token_ttl); 0: none (tokens never expire
	 * unless their login says so). 1..AUTH_TTL_MAX. */
	int64_t token_ttl;
};

/* Opens its own connection to the database at db_path, migrating it if
 * needed (store_open()). opts may be NULL. Initialises libsodium once per
 * process. */
int auth_new(const char *db_path, const struct auth_options *opts, struct auth **ret,
	     pd_error *err);
struct auth *auth_free(struct auth *a);

/* True once the owner's password is set (false also if the database cannot
 * be read). */
bool auth_has_owner(struct auth *a);

/* With no owner password set: makes a new one-time setup secret
 * (AUTH_SECRET_LEN chars of base64url), stores its hash only, replacing any
 * earlier secret, and copies it NUL-terminated into ret_secret (size must be
 * > AUTH_SECRET_LEN, else -EINVAL). -EEXIST if the password is set. */
int auth_setup_begin(struct auth *a, char *ret_secret, size_t size);

/* Sets the owner's password (AUTH_PASSWORD_MIN..AUTH_PASSWORD_MAX bytes)
 * if secret is the pending setup secret, which then stops working.
 * -ENOENT wrong or used secret (checked first); -EINVAL bad password
 * length; the secret stays valid after -EINVAL. */
int auth_setup_finish(struct auth *a, const char *secret, const char *password, pd_error *err);

/* The client a login counts for: an IPv4 address as itself ("192.0.2.7"),
 * an IPv6 address by its /64 ("2001:db8:1:2::/64"), an IPv4-mapped IPv6
 * address as the IPv4 one; any other string (not an address: "unix") as it
 * is. out has size bytes (AUTH_CLIENT_MAX + 1 is enough for every address;
 * a longer string is cut). */
void auth_client_key(const char *client, char *out, size_t size);

/* Checks the owner's password for client (an address, <= AUTH_CLIENT_MAX
 * bytes, grouped by auth_client_key()) and on success creates a token labelled label (NULL or ""
 * for none; <= AUTH_LABEL_MAX bytes of UTF-8 without control characters, else -EINVAL before
 * anything is checked). ttl is the token's lifetime in seconds: 0 for the server's token_ttl
 * (auth_options; none: the token never expires), else 1..AUTH_TTL_MAX and, when token_ttl is
 * set, at most token_ttl: a longer one is refused with -EINVAL before anything is checked (not
 * cut short: the client asked for something it will not get). The token (token_size must be >
 * AUTH_TOKEN_LEN) and its ID (id_size > AUTH_ID_LEN) are copied out, and its expiry (unix
 * seconds, 0 = never) into *ret_expires (may be NULL). -EACCES wrong password, or no owner
 * password yet; -EAGAIN refused by the rate limit (the client's lockout, or pushed out of a full
 * queue), with the seconds to wait (>= 1) in *ret_retry_after (written only with -EAGAIN). May
 * sleep for the budget: up to AUTH_LOGIN_QUEUE_MAX budget intervals plus the checks ahead of it. */
int auth_login(struct auth *a, const char *client, const char *password, const char *label,
	       int64_t ttl, char *ret_token, size_t token_size, char *ret_id, size_t id_size,
	       time_t *ret_expires, unsigned *ret_retry_after, pd_error *err);

/* Refuses every login waiting in the queue (they return -EAGAIN); for a
 * server that stops. Logins arriving later queue as usual. */
void auth_cancel_waiting(struct auth *a);

/* 0 if token is a valid, unrevoked, unexpired token, else -EACCES (-EIO if
 * the database cannot be read). On success copies the token's ID into
 * ret_id (AUTH_ID_LEN + 1 bytes; may be NULL): the name its revocation will
 * be announced by. Records the use in last_used at most once per
 * AUTH_TOUCH_INTERVAL. Fast: a lookup by ID, no password hashing. */
int auth_check_token_id(struct auth *a, const char *token, char ret_id[AUTH_ID_LEN + 1]);
/* The same, and *ret_expires (may be NULL; always written): on success the
 * token's expiry (unix seconds, 0 = never); on -EACCES the time the token
 * expired when it is a real token that expired (its secret matched; kept
 * AUTH_EXPIRED_KEEP seconds after), else 0 (unknown, wrong or revoked). */
int auth_check_token(struct auth *a, const char *token, char ret_id[AUTH_ID_LEN + 1],
		     time_t *ret_expires);

/* Announces the tokens that expired since the last call (or since
 * auth_new()) to the revocation hooks, each once, with its expiry time, and
 * bumps the revocation generation if any did. Cheap when none is due (no
 * database read): call it about once a second. */
void auth_expire_tick(struct auth *a);

struct auth_token {
	int64_t seq; /* a number never reused by another token (inode numbers) */
	char id[16];
	char label[AUTH_LABEL_MAX + 1];
	time_t created;
	time_t last_used; /* 0 = never */
	time_t expires;	  /* 0 = never; may be past (kept AUTH_EXPIRED_KEEP s) */
};

/* Every token in creation order, expired ones still kept included (the
 * ones expired longer than AUTH_EXPIRED_KEEP ago are deleted first). *ret
 * is malloc'd (free()); NULL when there are none. */
int auth_token_list(struct auth *a, struct auth_token **ret, size_t *ret_n);
/* -ENOENT if there is no such token. */
int auth_token_get(struct auth *a, const char *id, struct auth_token *ret);
int auth_token_get_seq(struct auth *a, int64_t seq, struct auth_token *ret);
/* Deletes a token: the next check of it fails. -ENOENT if there is none.
 * Then bumps the revocation generation and calls every revocation hook with
 * the ID (in the caller's thread, before returning). */
int auth_token_revoke(struct auth *a, const char *id);

/* Revocation hooks: fn(userdata, id, expired) is called for every revoked
 * token (expired 0) and every token that expires (expired: its expiry,
 * unix seconds; auth_expire_tick()) until removed. At most AUTH_HOOKS_MAX;
 * -ENOSPC beyond. Removing waits for a call in progress to end (do not
 * remove from inside a hook). */
#define AUTH_HOOKS_MAX 8
typedef void (*auth_revoke_fn)(void *userdata, const char *id, time_t expired);
int auth_add_revoke_hook(struct auth *a, auth_revoke_fn fn, void *userdata);
void auth_remove_revoke_hook(struct auth *a, auth_revoke_fn fn, void *userdata);
/* How many revocations and expiry announcements since start (never decreases). Read it
 * before checking a token; a different value later means a revocation may
 * have come in between (check again). */
uint64_t auth_revocations(struct auth *a);
