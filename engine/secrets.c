/* secrets.c - named secrets, sealed at rest, handed to jobs (secrets.h).
 *
 * The sealed text of a value is crypto_secretbox(NAME '\0' VALUE) under the
 * daemon's key with a fresh random nonce: the name inside binds the value to
 * its row. Clear values live in memory only while they are set or handed
 * out, and are zeroed when freed. Nothing here logs a value, nor a name
 * beside a value. */
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box/supervisor.h"
#include "engine/internal.h"
#include "engine/secrets.h"
#include "common/log.h"
#include "common/parse.h"
#include "runtime/image.h"

_Static_assert(crypto_secretbox_KEYBYTES == 32, "key size");

bool secret_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > SECRET_NAME_MAX)
		return false;
	if (!(name[0] == '_' || (name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= 'a' && name[0] <= 'z')))
		return false;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static int sodium_ready(void)
{
	/* sodium_init() is safe to call again and from several threads. */
	return sodium_init() < 0 ? -EIO : 0;
}

/* --- the key file ------------------------------------------------------------ */

static int check_key_file(int fd, const char *path, pd_error *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return pd_error_set(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return pd_error_set(err, -EPERM, "%s: not a regular file; refusing it as the key",
				    path);
	if (st.st_uid != geteuid())
		return pd_error_set(err, -EPERM,
				    "%s is owned by uid %u, not %u: refusing a key others may "
				    "have changed (chown it back, or remove it and every secret)",
				    path, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & 07777) != 0600)
		return pd_error_set(err, -EPERM,
				    "%s has mode %04o, not 0600: refusing a key others may have "
				    "read or changed (chmod 600 it if no one did)",
				    path, (unsigned)(st.st_mode & 07777));
	if (st.st_size != crypto_secretbox_KEYBYTES)
		return pd_error_set(err, -EPERM, "%s: %lld bytes, not %d: not a key", path,
				    (long long)st.st_size, crypto_secretbox_KEYBYTES);
	return 0;
}

static int read_key(const char *path, unsigned char *key, pd_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	ssize_t n;
	int r;

	if (fd < 0)
		return errno == ENOENT
			   ? -ENOENT
			   : pd_error_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	r = check_key_file(fd, path, err);
	if (r < 0)
		return r;
	n = pread(fd, key, crypto_secretbox_KEYBYTES, 0);
	if (n != crypto_secretbox_KEYBYTES)
		return pd_error_set(err, n < 0 ? -errno : -EIO, "cannot read %s", path);
	return 0;
}

/* A new random key, linked at path only once complete (O_TMPFILE, then
 * linkat: never a half-written key under the name). -EEXIST when another
 * maker was first. */
static int make_key(const char *path, pd_error *err)
{
	unsigned char key[crypto_secretbox_KEYBYTES];
	_cleanup_free_ char *dir = strdup(path);
	char proc[64];
	int r = 0;

	if (!dir)
		return pd_error_set(err, -ENOMEM, "out of memory");
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	else if (slash)
		dir[1] = '\0';
	else
		strcpy(dir, ".");
	_cleanup_close_ int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return pd_error_set(err, -errno, "cannot create %s: %s", path, strerror(errno));
	randombytes_buf(key, sizeof key);
	if (fchmod(fd, 0600) < 0 || write(fd, key, sizeof key) != (ssize_t)sizeof key ||
	    fsync(fd) < 0)
		r = -errno ? -errno : -EIO;
	sodium_memzero(key, sizeof key);
	if (r < 0)
		return pd_error_set(err, r, "cannot write %s: %s", path, strerror(-r));
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) < 0)
		return errno == EEXIST ? -EEXIST
				       : pd_error_set(err, -errno, "cannot create %s: %s", path,
						      strerror(errno));
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		(void)fsync(dfd);
	return 0;
}

int secret_key_load(const char *path, bool create, unsigned char *key, pd_error *err)
{
	int r = sodium_ready();

	if (r < 0)
		return pd_error_set(err, r, "libsodium does not initialise");
	r = read_key(path, key, err);
	if (r != -ENOENT || !create)
		return r == -ENOENT ? pd_error_set(err, r, "%s: no such file", path) : r;
	r = make_key(path, err);
	if (r < 0 && r != -EEXIST)
		return r;
	r = read_key(path, key, err);
	return r == -ENOENT ? pd_error_set(err, -EIO, "%s vanished as it was made", path) : r;
}

/* --- sealing ------------------------------------------------------------------- */

int secret_seal(const unsigned char *key, const char *name, const char *value, size_t len,
		unsigned char **ret_nonce, unsigned char **ret_ct, size_t *ret_ct_len)
{
	size_t nlen = strlen(name), plen = nlen + 1 + len;
	unsigned char *nonce, *ct, *plain;
	int r = sodium_ready();

	if (r < 0)
		return r;
	if (len > SECRET_VALUE_MAX || nlen > SECRET_NAME_MAX)
		return -EFBIG;
	nonce = malloc(crypto_secretbox_NONCEBYTES);
	ct = malloc(plen + crypto_secretbox_MACBYTES);
	plain = malloc(plen);
	if (!nonce || !ct || !plain) {
		free(nonce);
		free(ct);
		free(plain);
		return -ENOMEM;
	}
	memcpy(plain, name, nlen + 1);
	memcpy(plain + nlen + 1, value, len);
	randombytes_buf(nonce, crypto_secretbox_NONCEBYTES);
	r = crypto_secretbox_easy(ct, plain, plen, nonce, key);
	sodium_memzero(plain, plen);
	free(plain);
	if (r != 0) {
		free(nonce);
		free(ct);
		return -EIO;
	}
	*ret_nonce = nonce;
	*ret_ct = ct;
	*ret_ct_len = plen + crypto_secretbox_MACBYTES;
	return 0;
}

int secret_open(const unsigned char *key, const char *name, const unsigned char *nonce,
		size_t nonce_len, const unsigned char *ct, size_t ct_len, char **ret_value,
		size_t *ret_len)
{
	size_t nlen = strlen(name), plen;
	unsigned char *plain;
	char *value;
	int r = sodium_ready();

	if (r < 0)
		return r;
	if (nonce_len != crypto_secretbox_NONCEBYTES ||
	    ct_len < crypto_secretbox_MACBYTES + nlen + 1)
		return -EBADMSG;
	plen = ct_len - crypto_secretbox_MACBYTES;
	plain = malloc(plen + 1);
	if (!plain)
		return -ENOMEM;
	if (crypto_secretbox_open_easy(plain, ct, ct_len, nonce, key) != 0 ||
	    memcmp(plain, name, nlen + 1) != 0) {
		sodium_memzero(plain, plen + 1);
		free(plain);
		return -EBADMSG;
	}
	/* The value moves to the front: one buffer, zeroed when freed. */
	plen -= nlen + 1;
	memmove(plain, plain + nlen + 1, plen);
	sodium_memzero(plain + plen, nlen + 1);
	plain[plen] = '\0';
	value = (char *)plain;
	*ret_value = value;
	*ret_len = plen;
	return 0;
}

void secret_value_free(char *value)
{
	if (value) {
		sodium_memzero(value, strlen(value));
		free(value);
	}
}

/* --- the engine's ----------------------------------------------------------------- */

int eng_secrets_init(struct engine *e, pd_error *err)
{
	char path[4096];
	int r = sodium_ready();

	if (r < 0)
		return pd_error_set(err, r, "libsodium does not initialise");
	e->secrets_key = sodium_malloc(crypto_secretbox_KEYBYTES);
	if (!e->secrets_key)
		return pd_error_set(err, -ENOMEM, "out of memory");
	snprintf(path, sizeof path, "%s/%s", engine_config(e)->data, SECRET_KEY_FILE);
	r = secret_key_load(path, /* create= */ true, e->secrets_key, err);
	if (r < 0)
		return r;
	/* Read only from here: a stray write through a bad pointer faults. */
	(void)sodium_mprotect_readonly(e->secrets_key);
	return 0;
}

void eng_secrets_free(struct engine *e)
{
	if (e->secrets_key) {
		sodium_free(e->secrets_key); /* zeroes it */
		e->secrets_key = NULL;
	}
}

static int no_key(pd_error *err)
{
	return pd_error_set(err, -EIO, "the secrets' key is not loaded");
}

int engine_secret_set(struct engine *e, const char *name, const char *value, size_t len,
		      pd_error *err)
{
	_cleanup_free_ unsigned char *nonce = NULL, *ct = NULL;
	size_t ct_len;
	int r;

	if (!secret_name_valid(name))
		return pd_error_set(err, -EINVAL,
				    "not a secret name: an environment variable's, "
				    "[A-Za-z_][A-Za-z0-9_]*, at most %d bytes",
				    SECRET_NAME_MAX);
	if (len > SECRET_VALUE_MAX)
		return pd_error_set(err, -EFBIG, "secret %s: a value is at most %d bytes", name,
				    SECRET_VALUE_MAX);
	if (memchr(value, '\0', len))
		return pd_error_set(err, -EINVAL,
				    "secret %s: a NUL byte in the value (an environment "
				    "variable cannot hold one)",
				    name);
	if (!e->secrets_key)
		return no_key(err);
	/* Sealed outside the lock. */
	r = secret_seal(e->secrets_key, name, value, len, &nonce, &ct, &ct_len);
	if (r < 0)
		return pd_error_set(err, r, "secret %s: cannot seal the value", name);
	pd_mutex_lock(&e->lock);
	r = store_secret_put(e->store, name, nonce, crypto_secretbox_NONCEBYTES, ct, ct_len,
			     (int64_t)time(NULL), /* ret_id= */ NULL, err);
	pd_mutex_unlock(&e->lock);
	return r < 0 ? pd_error_prefix(err, "secret %s", name) : 0;
}

int engine_secret_delete(struct engine *e, int64_t id, pd_error *err)
{
	int r;

	pd_mutex_lock(&e->lock);
	r = store_secret_delete(e->store, id, err);
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_secret_names(struct engine *e, char ***ret, size_t *ret_n)
{
	int r;

	pd_mutex_lock(&e->lock);
	r = store_secret_names(e->store, ret, ret_n);
	pd_mutex_unlock(&e->lock);
	return r;
}

static int get(struct engine *e, const char *name, int64_t id, struct secret_view *ret)
{
	struct secret_row row;
	int r;

	if (name && !secret_name_valid(name))
		return -ENOENT;
	pd_mutex_lock(&e->lock);
	r = store_secret_get(e->store, name, id, /* with_value= */ false, &row);
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	ret->id = row.id;
	snprintf(ret->name, sizeof ret->name, "%s", row.name);
	ret->set_time = (time_t)row.set_time;
	return 0;
}

int engine_secret_get(struct engine *e, const char *name, struct secret_view *ret)
{
	return get(e, name, 0, ret);
}

int engine_secret_get_by_id(struct engine *e, int64_t id, struct secret_view *ret)
{
	return get(e, NULL, id, ret);
}

int engine_secret_read_time(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	struct secret_view v;
	char ts[64];
	int r = engine_secret_get_by_id(e, id, &v);

	if (r < 0)
		return r;
	format_rfc3339(v.set_time, ts, sizeof ts);
	snprintf(buf, bufsz, "set %s\n", ts);
	return 0;
}

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int engine_box_secrets(struct engine *e, int64_t box_id, char **ret)
{
	char **names = NULL;
	size_t n = 0, len = 0;
	char *text;
	int r;

	pd_mutex_lock(&e->lock);
	r = eng_live_box(e, box_id) ? store_box_secrets(e->store, box_id, &names, &n) : -ENOENT;
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	text = malloc(len + 1);
	if (text) {
		text[0] = '\0';
		for (size_t i = 0; i < n; i++) {
			strcat(text, names[i]);
			strcat(text, "\n");
		}
	}
	names_free(names, n);
	if (!text)
		return -ENOMEM;
	*ret = text;
	return 0;
}

int engine_box_set_secrets(struct engine *e, int64_t box_id, const char *text, size_t len,
			   pd_error *err)
{
	_cleanup_free_ char *copy = NULL;
	char *names[SECRET_BOX_MAX];
	size_t n = 0, lineno = 0;
	int r;

	if (memchr(text, '\0', len))
		return pd_error_set(err, -EINVAL, "secrets: a NUL byte");
	copy = strndup(text, len);
	if (!copy)
		return pd_error_set(err, -ENOMEM, "out of memory");
	for (char *line = copy, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		line += strspn(line, " \t\r");
		size_t l = strlen(line);
		while (l && strchr(" \t\r", line[l - 1]))
			line[--l] = '\0';
		if (!l)
			continue;
		if (!secret_name_valid(line))
			return pd_error_set(err, -EINVAL,
					    "secrets line %zu: not a secret name (an environment "
					    "variable's, [A-Za-z_][A-Za-z0-9_]*, at most %d bytes)",
					    lineno, SECRET_NAME_MAX);
		if (n == SECRET_BOX_MAX)
			return pd_error_set(err, -E2BIG, "secrets: at most %d names",
					    SECRET_BOX_MAX);
		names[n++] = line;
	}
	pd_mutex_lock(&e->lock);
	if (!eng_live_box(e, box_id))
		r = eng_box_gone(err);
	else
		r = store_box_set_secrets(e->store, box_id, names, n, err);
	pd_mutex_unlock(&e->lock);
	return r;
}

void eng_secrets_env_free(char **env)
{
	sup_secrets_free(env); /* the supervisor's copies are zeroed the same way */
}

int eng_secrets_env(struct engine *e, int64_t box_id, char ***ret, pd_error *err)
{
	char **names = NULL, **env = NULL;
	struct secret_row *rows = NULL;
	size_t n = 0, got = 0;
	int r;

	pd_mutex_lock(&e->lock);
	r = store_box_secrets(e->store, box_id, &names, &n);
	if (r >= 0 && n) {
		rows = calloc(n, sizeof *rows);
		if (!rows)
			r = -ENOMEM;
	}
	for (; r >= 0 && got < n; got++) {
		/* Under the same lock as the list: none is missing. */
		r = store_secret_get(e->store, names[got], 0, /* with_value= */ true, &rows[got]);
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		pd_error_set(err, r, "cannot read the box's secrets: %s", strerror(-r));
	else {
		env = calloc(got + 1, sizeof *env);
		if (!env)
			r = pd_error_set(err, -ENOMEM, "out of memory");
	}
	if (r >= 0 && !e->secrets_key && got)
		r = no_key(err);
	for (size_t i = 0, k = 0; r >= 0 && i < got; i++) {
		char *value;
		size_t vlen;
		r = secret_open(e->secrets_key, rows[i].name, rows[i].nonce, rows[i].nonce_len,
				rows[i].value, rows[i].value_len, &value, &vlen);
		if (r < 0) {
			pd_error_set(err, r == -EBADMSG ? -EIO : r,
				     "secret %s does not decrypt with this daemon's key (was "
				     "secrets.key replaced?): set it again",
				     rows[i].name);
			break;
		}
		size_t nlen = strlen(rows[i].name);
		env[k] = malloc(nlen + 1 + vlen + 1);
		if (env[k]) {
			memcpy(env[k], rows[i].name, nlen);
			env[k][nlen] = '=';
			memcpy(env[k] + nlen + 1, value, vlen + 1);
			k++;
		} else
			r = pd_error_set(err, -ENOMEM, "out of memory");
		secret_value_free(value);
	}
	for (size_t i = 0; i < n && rows; i++)
		secret_row_release(&rows[i]);
	free(rows);
	names_free(names, n);
	if (r < 0) {
		eng_secrets_env_free(env);
		return r;
	}
	*ret = env;
	return 0;
}
