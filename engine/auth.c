/* auth.c - owner password, setup secret, tokens and the login rate limit. */
#include <arpa/inet.h>
#include <assert.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/auth.h"
#include "common/lock.h"
#include "store/store.h"

_Static_assert(STORE_HASH_LEN == crypto_generichash_BYTES, "hash length");
_Static_assert(STORE_PWHASH_MAX >= crypto_pwhash_STRBYTES, "pwhash string length");
_Static_assert(STORE_TOKEN_ID_MAX >= AUTH_ID_LEN, "token id length");
_Static_assert(STORE_TOKEN_LABEL_MAX == AUTH_LABEL_MAX, "label length");

#define SECRET_BYTES 32
#define TOKEN_PREFIX "pd_"
#define TOKEN_ATTEMPTS 4

/* One client address that failed a login, or is checking one now. */
struct client {
	char addr[AUTH_CLIENT_MAX + 1];
	unsigned failures;
	unsigned long long until; /* now_usec(): attempts refused before this */
	unsigned long long seen;  /* now_usec() of the last attempt */
	bool busy;		  /* an attempt is being verified */
};

struct hook {
	auth_revoke_fn fn;
	void *userdata;
};

struct auth {
	struct pd_mutex lock; /* store, clients and the budget */
	struct store *store;
	unsigned long long opslimit;
	size_t memlimit;
	struct client *clients; /* unordered; busy entries are never evicted */
	size_t n_clients, cap_clients;

	/* The global budget (lock). A GCRA: tat is the theoretical arrival
	 * time of the next unit; a verification may start when tat is at most
	 * (burst - 1) intervals ahead of now. The queue is a ticket range:
	 * [q_head, q_tail) are waiting, q_head is served next; a waiter whose
	 * ticket falls below q_head without being served was pushed out. */
	unsigned long long interval_us, tat;
	unsigned burst, queue_max, verify_max;
	unsigned verifying; /* passwords being checked right now */
	unsigned long long q_head, q_tail;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; the queue and verifying changed */

	/* Expiry (lock): tokens expiring at or before `announced` were
	 * announced (auth_expire_tick()); next_expiry is the earliest expiry
	 * after it (0: none). */
	int64_t token_ttl;
	int64_t announced, next_expiry;

	struct pd_mutex hooks_lock; /* hooks; taken without lock held */
	struct hook hooks[AUTH_HOOKS_MAX];
	size_t n_hooks;
	_Atomic uint64_t revocations;
};

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_status = -1;

static void init_sodium(void)
{
	sodium_status = sodium_init() < 0 ? -1 : 0;
}

int auth_new(const char *db_path, const struct auth_options *opts, struct auth **ret, pd_error *err)
{
	struct auth *a;
	int r;

	pthread_once(&sodium_once, init_sodium);
	if (sodium_status < 0)
		return pd_error_set(err, -EIO, "cannot initialise libsodium");
	a = calloc(1, sizeof *a);
	if (!a)
		return pd_error_set(err, -ENOMEM, "out of memory");
	pd_mutex_init(&a->lock, LOCK_RANK_LEAF, 0, "auth lock");
	pd_mutex_init(&a->hooks_lock, LOCK_RANK_ENGINE_WAKE, 0, "auth hooks_lock");
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* now_usec()'s clock */
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);
	a->opslimit = opts && opts->opslimit ? opts->opslimit : crypto_pwhash_OPSLIMIT_INTERACTIVE;
	a->memlimit = opts && opts->memlimit ? opts->memlimit : crypto_pwhash_MEMLIMIT_INTERACTIVE;
	a->interval_us = 1000ULL * (opts && opts->budget_interval_ms ? opts->budget_interval_ms
								     : AUTH_BUDGET_INTERVAL_MS);
	a->burst = opts && opts->budget_burst ? opts->budget_burst : AUTH_BUDGET_BURST;
	a->queue_max = opts && opts->queue_max ? opts->queue_max : AUTH_LOGIN_QUEUE_MAX;
	a->verify_max = opts && opts->verify_max ? opts->verify_max : AUTH_VERIFY_MAX;
	a->token_ttl = opts && opts->token_ttl > 0 ? opts->token_ttl : 0;
	if (a->token_ttl > AUTH_TTL_MAX) {
		auth_free(a);
		return pd_error_set(err, -EINVAL, "token_ttl: at most %lld seconds", AUTH_TTL_MAX);
	}
	r = store_open(db_path, &a->store, err);
	if (r < 0) {
		auth_free(a);
		return r;
	}
	/* Tokens that expired before this start have nothing open to end. */
	a->announced = (int64_t)time(NULL);
	if (store_token_next_expiry(a->store, a->announced, &a->next_expiry) < 0)
		a->next_expiry = a->announced; /* read it again at the first tick */
	*ret = a;
	return 0;
}

struct auth *auth_free(struct auth *a)
{
	if (!a)
		return NULL;
	store_close(a->store);
	free(a->clients);
	pthread_cond_destroy(&a->cond);
	pd_mutex_destroy(&a->hooks_lock);
	pd_mutex_destroy(&a->lock);
	free(a);
	return NULL;
}

/* --- helpers --------------------------------------------------------------- */

static void hash_string(const char *s, uint8_t out[STORE_HASH_LEN])
{
	crypto_generichash(out, STORE_HASH_LEN, (const unsigned char *)s, strlen(s), NULL, 0);
}

/* SECRET_BYTES random bytes as base64url without padding. */
static void random_secret(char out[AUTH_SECRET_LEN + 1])
{
	unsigned char raw[SECRET_BYTES];

	randombytes_buf(raw, sizeof raw);
	sodium_bin2base64(out, AUTH_SECRET_LEN + 1, raw, sizeof raw,
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_memzero(raw, sizeof raw);
}

static bool id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int check_label(const char *label, pd_error *err)
{
	if (strlen(label) > AUTH_LABEL_MAX)
		return pd_error_set(err, -EINVAL, "label: at most %d bytes", AUTH_LABEL_MAX);
	for (const unsigned char *p = (const unsigned char *)label; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return pd_error_set(err, -EINVAL, "label: no control characters");
	if (!utf8_valid(label, strlen(label)))
		return pd_error_set(err, -EINVAL, "label: not valid UTF-8");
	return 0;
}

static void token_from_row(const struct token_row *row, struct auth_token *ret)
{
	memset(ret, 0, sizeof *ret);
	ret->seq = row->seq;
	snprintf(ret->id, sizeof ret->id, "%s", row->id);
	snprintf(ret->label, sizeof ret->label, "%s", row->label);
	ret->created = (time_t)row->created;
	ret->last_used = (time_t)row->last_used;
	ret->expires = (time_t)row->expires;
}

/* Deletes the tokens expired longer than AUTH_EXPIRED_KEEP ago. Lock held;
 * a failure only leaves them for the next time. */
static void sweep_expired(struct auth *a, int64_t now)
{
	(void)store_token_delete_expired(a->store, now - AUTH_EXPIRED_KEEP, NULL);
}

/* --- setup ------------------------------------------------------------------ */

bool auth_has_owner(struct auth *a)
{
	struct owner_row o;
	int r;

	pd_mutex_lock(&a->lock);
	r = store_owner_get(a->store, &o);
	pd_mutex_unlock(&a->lock);
	return r >= 0 && o.pwhash[0];
}

int auth_setup_begin(struct auth *a, char *ret_secret, size_t size)
{
	char secret[AUTH_SECRET_LEN + 1];
	uint8_t hash[STORE_HASH_LEN];
	struct owner_row o;
	int r;

	if (size <= AUTH_SECRET_LEN)
		return -EINVAL;
	random_secret(secret);
	hash_string(secret, hash);
	pd_mutex_lock(&a->lock);
	r = store_owner_get(a->store, &o);
	if (r >= 0 && o.pwhash[0])
		r = -EEXIST;
	else if (r >= 0 || r == -ENOENT)
		r = store_owner_set_setup(a->store, hash, NULL);
	pd_mutex_unlock(&a->lock);
	if (r >= 0)
		memcpy(ret_secret, secret, sizeof secret);
	sodium_memzero(secret, sizeof secret);
	return r < 0 ? r : 0;
}

int auth_setup_finish(struct auth *a, const char *secret, const char *password, pd_error *err)
{
	char pwhash[crypto_pwhash_STRBYTES];
	uint8_t hash[STORE_HASH_LEN];
	struct owner_row o;
	size_t len;
	bool pending;
	int r;

	if (!secret || strlen(secret) != AUTH_SECRET_LEN)
		return pd_error_set(err, -ENOENT, "the setup link is wrong or was already used");
	hash_string(secret, hash);
	pd_mutex_lock(&a->lock);
	r = store_owner_get(a->store, &o);
	pd_mutex_unlock(&a->lock);
	if (r < 0 && r != -ENOENT)
		return pd_error_set(err, r, "cannot read the owner's settings");
	pending = r >= 0 && !o.pwhash[0] && o.has_setup;
	if (!pending || sodium_memcmp(o.setup_hash, hash, sizeof hash) != 0)
		return pd_error_set(err, -ENOENT, "the setup link is wrong or was already used");

	len = password ? strlen(password) : 0;
	if (len < AUTH_PASSWORD_MIN || len > AUTH_PASSWORD_MAX)
		return pd_error_set(err, -EINVAL, "the password must have %d to %d bytes",
				    AUTH_PASSWORD_MIN, AUTH_PASSWORD_MAX);
	if (crypto_pwhash_str(pwhash, password, len, a->opslimit, a->memlimit) != 0)
		return pd_error_set(err, -ENOMEM, "cannot hash the password: out of memory");

	pd_mutex_lock(&a->lock);
	r = store_owner_set_password(a->store, hash, pwhash, (int64_t)time(NULL), err);
	pd_mutex_unlock(&a->lock);
	return r < 0 ? r : 0;
}

/* --- the login rate limit (lock held) ---------------------------------------- */

static struct client *find_client(struct auth *a, const char *addr)
{
	for (size_t i = 0; i < a->n_clients; i++)
		if (strcmp(a->clients[i].addr, addr) == 0)
			return &a->clients[i];
	return NULL;
}

static void forget_client(struct auth *a, struct client *c)
{
	*c = a->clients[--a->n_clients];
}

/* A fresh entry for addr; when the table is full, the least recently seen
 * idle entry makes room. NULL when out of memory. */
static struct client *add_client(struct auth *a, const char *addr, unsigned long long now)
{
	struct client *c = NULL;

	if (a->n_clients == a->cap_clients && a->cap_clients < AUTH_CLIENTS_MAX) {
		size_t cap = a->cap_clients ? a->cap_clients * 2 : 16;
		if (cap > AUTH_CLIENTS_MAX)
			cap = AUTH_CLIENTS_MAX;
		struct client *nc = realloc(a->clients, cap * sizeof *nc);
		if (!nc)
			return NULL;
		a->clients = nc;
		a->cap_clients = cap;
	}
	if (a->n_clients < a->cap_clients)
		c = &a->clients[a->n_clients++];
	else
		for (size_t i = 0; i < a->n_clients; i++)
			if (!a->clients[i].busy && (!c || a->clients[i].seen < c->seen))
				c = &a->clients[i];
	if (!c)
		return NULL; /* every entry busy: as many logins in progress at once */
	memset(c, 0, sizeof *c);
	snprintf(c->addr, sizeof c->addr, "%s", addr);
	c->seen = now;
	return c;
}

static unsigned long long lockout_usec(unsigned failures)
{
	unsigned long long ms = AUTH_LOCKOUT_FIRST_MS;

	for (unsigned i = 1; i < failures && ms < AUTH_LOCKOUT_MAX_MS; i++)
		ms *= 2;
	return (ms < AUTH_LOCKOUT_MAX_MS ? ms : AUTH_LOCKOUT_MAX_MS) * 1000ULL;
}

/* A new token, recorded in the store. Lock held. */
static int make_token(struct auth *a, const char *label, int64_t ttl,
		      char token[AUTH_TOKEN_LEN + 1], char id[AUTH_ID_LEN + 1],
		      int64_t *ret_expires, pd_error *err)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	struct token_row row;
	int r = -EEXIST;

	/* An id (or, absurdly, a hash) already taken: draw again. */
	for (int attempt = 0; attempt < TOKEN_ATTEMPTS && r == -EEXIST; attempt++) {
		char secret[AUTH_SECRET_LEN + 1];

		memset(&row, 0, sizeof row);
		for (int i = 0; i < AUTH_ID_LEN; i++)
			row.id[i] = alphabet[randombytes_uniform(sizeof alphabet - 1)];
		random_secret(secret);
		/* pd_ID_SECRET */
		memcpy(token, TOKEN_PREFIX, strlen(TOKEN_PREFIX));
		memcpy(token + strlen(TOKEN_PREFIX), row.id, AUTH_ID_LEN);
		token[strlen(TOKEN_PREFIX) + AUTH_ID_LEN] = '_';
		memcpy(token + strlen(TOKEN_PREFIX) + AUTH_ID_LEN + 1, secret, AUTH_SECRET_LEN + 1);
		sodium_memzero(secret, sizeof secret);
		hash_string(token, row.hash);
		snprintf(row.label, sizeof row.label, "%s", label);
		row.created = (int64_t)time(NULL);
		row.expires = ttl ? row.created + ttl : 0;
		pd_error_clear(err);
		r = store_token_insert(a->store, &row, err);
	}
	if (r < 0) {
		sodium_memzero(token, AUTH_TOKEN_LEN + 1);
		return r;
	}
	memcpy(id, row.id, AUTH_ID_LEN + 1);
	*ret_expires = row.expires;
	if (row.expires && (!a->next_expiry || row.expires < a->next_expiry))
		a->next_expiry = row.expires;
	sweep_expired(a, row.created);
	return 0;
}

static unsigned retry_seconds(unsigned long long until, unsigned long long now)
{
	unsigned long long s = until > now ? (until - now + 999999) / 1000000 : 1;

	return s ? (unsigned)s : 1;
}

void auth_client_key(const char *client, char *out, size_t size)
{
	struct in6_addr a6;
	struct in_addr a4;
	char buf[INET6_ADDRSTRLEN];

	if (!size)
		return;
	if (inet_pton(AF_INET, client, &a4) == 1) {
		inet_ntop(AF_INET, &a4, out, (socklen_t)size);
		return;
	}
	if (inet_pton(AF_INET6, client, &a6) != 1) {
		snprintf(out, size, "%s", client);
		return;
	}
	if (IN6_IS_ADDR_V4MAPPED(&a6)) {
		inet_ntop(AF_INET, a6.s6_addr + 12, out, (socklen_t)size);
		return;
	}
	/* One household, one VM, one attacker: a /64 is what one party gets. */
	memset(a6.s6_addr + 8, 0, 8);
	inet_ntop(AF_INET6, &a6, buf, sizeof buf);
	snprintf(out, size, "%s/64", buf);
}

/* Microseconds until the budget has a unit for a verification (0: now). */
static unsigned long long budget_wait_us(const struct auth *a, unsigned long long now)
{
	unsigned long long ahead = (a->burst - 1) * a->interval_us;

	return a->tat > now + ahead ? a->tat - now - ahead : 0;
}

static void budget_take(struct auth *a, unsigned long long now)
{
	a->tat = (a->tat > now ? a->tat : now) + a->interval_us;
}

static void cond_wait_us(struct auth *a, unsigned long long us)
{
	struct timespec ts;
	unsigned long long ns;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (unsigned long long)ts.tv_nsec + us * 1000ULL;
	ts.tv_sec += (time_t)(ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	pd_cond_timedwait(&a->cond, &a->lock, &ts);
}

/* Waits (lock held, released while asleep) for a verification slot and a
 * budget unit, first come first served. -EAGAIN when a newer login pushed
 * this one out of the full queue, or the queue was cancelled. */
static int budget_acquire(struct auth *a)
{
	unsigned long long ticket;

	if (a->q_tail - a->q_head >= a->queue_max) {
		a->q_head++; /* the oldest waiter gives its place to the newest */
		pthread_cond_broadcast(&a->cond);
	}
	ticket = a->q_tail++;
	for (;;) {
		if (ticket < a->q_head)
			return -EAGAIN;
		if (ticket == a->q_head && a->verifying < a->verify_max) {
			unsigned long long now = now_usec(), wait = budget_wait_us(a, now);
			if (!wait) {
				budget_take(a, now);
				a->q_head++;
				a->verifying++;
				pthread_cond_broadcast(&a->cond);
				return 0;
			}
			cond_wait_us(a, wait);
		} else
			pd_cond_wait(&a->cond, &a->lock);
	}
}

void auth_cancel_waiting(struct auth *a)
{
	pd_mutex_lock(&a->lock);
	a->q_head = a->q_tail;
	pthread_cond_broadcast(&a->cond);
	pd_mutex_unlock(&a->lock);
}

/* Seconds a refused login is told to wait for the queue to have room. */
static unsigned queue_retry_seconds(const struct auth *a)
{
	unsigned long long s = (a->queue_max * a->interval_us + 999999) / 1000000;

	return s ? (unsigned)s : 1;
}

/* The lifetime a login gets: ttl, or the default; -EINVAL (nothing done)
 * for one out of bounds. */
static int login_ttl(const struct auth *a, int64_t ttl, int64_t *ret, pd_error *err)
{
	if (ttl < 0 || ttl > AUTH_TTL_MAX)
		return pd_error_set(err, -EINVAL, "ttl: 1 to %lld seconds (ten years)",
				    AUTH_TTL_MAX);
	if (ttl && a->token_ttl && ttl > a->token_ttl)
		return pd_error_set(err, -EINVAL,
				    "ttl: at most %lld seconds on this server (its token_ttl)",
				    (long long)a->token_ttl);
	*ret = ttl ? ttl : a->token_ttl;
	return 0;
}

int auth_login(struct auth *a, const char *client, const char *password, const char *label,
	       int64_t ttl, char *ret_token, size_t token_size, char *ret_id, size_t id_size,
	       time_t *ret_expires, unsigned *ret_retry_after, pd_error *err)
{
	int64_t expires = 0;
	char pwhash[STORE_PWHASH_MAX], token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1];
	char key[AUTH_CLIENT_MAX + 1];
	unsigned long long now;
	struct owner_row o;
	struct client *c;
	size_t len;
	bool ok;
	int r;

	if (token_size <= AUTH_TOKEN_LEN || id_size <= AUTH_ID_LEN)
		return pd_error_set(err, -EINVAL, "token buffer too small");
	if (!client || strlen(client) > AUTH_CLIENT_MAX)
		return pd_error_set(err, -EINVAL, "client address: at most %d bytes",
				    AUTH_CLIENT_MAX);
	if (!label)
		label = "";
	r = check_label(label, err);
	if (r < 0)
		return r;
	r = login_ttl(a, ttl, &ttl, err);
	if (r < 0)
		return r;
	auth_client_key(client, key, sizeof key);

	pd_mutex_lock(&a->lock);
	now = now_usec();
	c = find_client(a, key);
	if (c && (c->busy || now < c->until)) {
		unsigned s = c->busy ? 1 : retry_seconds(c->until, now);
		bool busy = c->busy;
		pd_mutex_unlock(&a->lock);
		*ret_retry_after = s;
		if (busy)
			return pd_error_set(
			    err, -EAGAIN, "a login from this address is in progress; retry in 1 s");
		return pd_error_set(err, -EAGAIN, "too many failed logins; retry in %u s", s);
	}
	r = store_owner_get(a->store, &o);
	if (r < 0 || !o.pwhash[0]) {
		pd_mutex_unlock(&a->lock);
		if (r < 0 && r != -ENOENT)
			return pd_error_set(err, r, "cannot read the owner's settings");
		return pd_error_set(err, -EACCES, "no owner password set; open the setup link");
	}
	if (!c)
		c = add_client(a, key, now);
	if (!c) {
		pd_mutex_unlock(&a->lock);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	c->seen = now;
	/* No password is outside these bounds, so such attempts fail without
	 * the cost (and the budget) of a verification. */
	len = password ? strlen(password) : 0;
	if (len < AUTH_PASSWORD_MIN || len > AUTH_PASSWORD_MAX) {
		c->failures++;
		c->until = now + lockout_usec(c->failures);
		pd_mutex_unlock(&a->lock);
		return pd_error_set(err, -EACCES, "wrong password");
	}
	c->busy = true;
	r = budget_acquire(a);
	c = find_client(a, key); /* busy: still there, maybe moved */
	assert(c);
	if (r < 0) {
		unsigned s = queue_retry_seconds(a);
		c->busy = false;
		pd_mutex_unlock(&a->lock);
		*ret_retry_after = s;
		return pd_error_set(err, -EAGAIN, "too many logins at once; retry in %u s", s);
	}
	memcpy(pwhash, o.pwhash, sizeof pwhash);
	pd_mutex_unlock(&a->lock);

	/* The slow part, unlocked. */
	ok = crypto_pwhash_str_verify(pwhash, password, len) == 0;

	pd_mutex_lock(&a->lock);
	a->verifying--;
	pthread_cond_broadcast(&a->cond);
	c = find_client(a, key);
	assert(c);
	c->busy = false;
	if (!ok) {
		c->failures++;
		c->seen = now_usec();
		c->until = c->seen + lockout_usec(c->failures);
		pd_mutex_unlock(&a->lock);
		return pd_error_set(err, -EACCES, "wrong password");
	}
	forget_client(a, c);
	r = make_token(a, label, ttl, token, id, &expires, err);
	pd_mutex_unlock(&a->lock);
	if (r < 0)
		return pd_error_prefix(err, "cannot create a token");
	memcpy(ret_token, token, sizeof token);
	memcpy(ret_id, id, sizeof id);
	if (ret_expires)
		*ret_expires = (time_t)expires;
	sodium_memzero(token, sizeof token);
	return 0;
}

/* --- tokens ----------------------------------------------------------------- */

/* The ID of a well-formed token, else false. */
static bool token_id(const char *token, char id[AUTH_ID_LEN + 1])
{
	if (!token || strlen(token) != AUTH_TOKEN_LEN ||
	    strncmp(token, TOKEN_PREFIX, strlen(TOKEN_PREFIX)) != 0 ||
	    token[strlen(TOKEN_PREFIX) + AUTH_ID_LEN] != '_')
		return false;
	for (int i = 0; i < AUTH_ID_LEN; i++) {
		id[i] = token[strlen(TOKEN_PREFIX) + (size_t)i];
		if (!id_char(id[i]))
			return false;
	}
	id[AUTH_ID_LEN] = '\0';
	return true;
}

int auth_check_token(struct auth *a, const char *token, char ret_id[AUTH_ID_LEN + 1],
		     time_t *ret_expires)
{
	uint8_t hash[STORE_HASH_LEN];
	char id[AUTH_ID_LEN + 1];
	struct token_row row;
	time_t now;
	int r;

	if (ret_expires)
		*ret_expires = 0;
	if (!token_id(token, id))
		return -EACCES;
	hash_string(token, hash);
	pd_mutex_lock(&a->lock);
	now = time(NULL);
	r = store_token_get(a->store, id, &row);
	if (r >= 0 && sodium_memcmp(row.hash, hash, sizeof hash) != 0)
		r = -EACCES;
	if (r >= 0 && row.expires && now >= row.expires) {
		/* Expired: told apart from an unknown token for a while, then
		 * gone. */
		if (now - row.expires >= AUTH_EXPIRED_KEEP)
			(void)store_token_delete(a->store, id, NULL);
		else if (ret_expires)
			*ret_expires = (time_t)row.expires;
		r = -EACCES;
	}
	if (r >= 0 && (now < row.last_used || now - row.last_used >= AUTH_TOUCH_INTERVAL))
		(void)store_token_set_last_used(a->store, id, (int64_t)now, NULL);
	pd_mutex_unlock(&a->lock);
	if (r == -ENOENT)
		return -EACCES;
	if (r < 0)
		return r;
	if (ret_id)
		memcpy(ret_id, id, sizeof id);
	if (ret_expires)
		*ret_expires = (time_t)row.expires;
	return 0;
}

int auth_check_token_id(struct auth *a, const char *token, char ret_id[AUTH_ID_LEN + 1])
{
	return auth_check_token(a, token, ret_id, NULL);
}

struct expired {
	char id[STORE_TOKEN_ID_MAX + 1];
	int64_t expires;
};

struct expire_ctx {
	int64_t after, now;
	struct expired *v;
	size_t n, cap;
};

static int expire_one(const struct token_row *row, void *userdata)
{
	struct expire_ctx *x = userdata;

	if (!row->expires || row->expires <= x->after || row->expires > x->now)
		return 0;
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 8;
		struct expired *nv = realloc(x->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		x->v = nv;
		x->cap = cap;
	}
	snprintf(x->v[x->n].id, sizeof x->v[x->n].id, "%s", row->id);
	x->v[x->n++].expires = row->expires;
	return 0;
}

void auth_expire_tick(struct auth *a)
{
	struct expire_ctx x = {0};
	int64_t next = 0;

	pd_mutex_lock(&a->lock);
	x.now = (int64_t)time(NULL);
	if (!a->next_expiry || x.now < a->next_expiry) {
		pd_mutex_unlock(&a->lock);
		return;
	}
	x.after = a->announced;
	/* On a failure nothing is announced and the next tick tries again. */
	if (store_token_foreach(a->store, expire_one, &x) < 0 ||
	    store_token_next_expiry(a->store, x.now, &next) < 0) {
		pd_mutex_unlock(&a->lock);
		free(x.v);
		return;
	}
	a->announced = x.now;
	a->next_expiry = next;
	pd_mutex_unlock(&a->lock);
	if (x.n) {
		atomic_fetch_add(&a->revocations, 1);
		pd_mutex_lock(&a->hooks_lock);
		for (size_t i = 0; i < x.n; i++)
			for (size_t j = 0; j < a->n_hooks; j++)
				a->hooks[j].fn(a->hooks[j].userdata, x.v[i].id,
					       (time_t)x.v[i].expires);
		pd_mutex_unlock(&a->hooks_lock);
	}
	free(x.v);
}

struct list_ctx {
	struct auth_token *v;
	size_t n, cap;
};

static int list_one(const struct token_row *row, void *userdata)
{
	struct list_ctx *l = userdata;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct auth_token *nv = realloc(l->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	token_from_row(row, &l->v[l->n++]);
	return 0;
}

int auth_token_list(struct auth *a, struct auth_token **ret, size_t *ret_n)
{
	struct list_ctx l = {0};
	int r;

	pd_mutex_lock(&a->lock);
	sweep_expired(a, (int64_t)time(NULL));
	r = store_token_foreach(a->store, list_one, &l);
	pd_mutex_unlock(&a->lock);
	if (r < 0) {
		free(l.v);
		return r;
	}
	*ret = l.v;
	*ret_n = l.n;
	return 0;
}

int auth_token_get(struct auth *a, const char *id, struct auth_token *ret)
{
	struct token_row row;
	int r;

	if (!id)
		return -ENOENT;
	pd_mutex_lock(&a->lock);
	r = store_token_get(a->store, id, &row);
	pd_mutex_unlock(&a->lock);
	if (r < 0)
		return r;
	token_from_row(&row, ret);
	return 0;
}

int auth_token_get_seq(struct auth *a, int64_t seq, struct auth_token *ret)
{
	struct token_row row;
	int r;

	pd_mutex_lock(&a->lock);
	r = store_token_get_seq(a->store, seq, &row);
	pd_mutex_unlock(&a->lock);
	if (r < 0)
		return r;
	token_from_row(&row, ret);
	return 0;
}

int auth_token_revoke(struct auth *a, const char *id)
{
	int r;

	if (!id)
		return -ENOENT;
	pd_mutex_lock(&a->lock);
	r = store_token_delete(a->store, id, NULL);
	pd_mutex_unlock(&a->lock);
	if (r < 0)
		return r;
	atomic_fetch_add(&a->revocations, 1);
	pd_mutex_lock(&a->hooks_lock);
	for (size_t i = 0; i < a->n_hooks; i++)
		a->hooks[i].fn(a->hooks[i].userdata, id, 0);
	pd_mutex_unlock(&a->hooks_lock);
	return 0;
}

int auth_add_revoke_hook(struct auth *a, auth_revoke_fn fn, void *userdata)
{
	int r = -ENOSPC;

	pd_mutex_lock(&a->hooks_lock);
	if (a->n_hooks < AUTH_HOOKS_MAX) {
		a->hooks[a->n_hooks++] = (struct hook){fn, userdata};
		r = 0;
	}
	pd_mutex_unlock(&a->hooks_lock);
	return r;
}

void auth_remove_revoke_hook(struct auth *a, auth_revoke_fn fn, void *userdata)
{
	pd_mutex_lock(&a->hooks_lock);
	for (size_t i = 0; i < a->n_hooks; i++)
		if (a->hooks[i].fn == fn && a->hooks[i].userdata == userdata) {
			a->hooks[i] = a->hooks[--a->n_hooks];
			break;
		}
	pd_mutex_unlock(&a->hooks_lock);
}

uint64_t auth_revocations(struct auth *a)
{
	return atomic_load(&a->revocations);
}
