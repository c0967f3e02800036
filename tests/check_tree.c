/* check_tree.c - the /paddock tree driven directly (no FUSE) over a real
 * engine: static nodes, box directories, control-file writes and their
 * errors, temp-then-rename, event streams, exec/last's nodes. One TCase
 * ("kernel cache") serves the tree through the FUSE adapter on a private
 * mount, to check what the kernel caches against the engine changing boxes
 * behind its back (as the HTTP adapter does).
 *
 * The runtime is /bin/false, so starting a box fails with EIO; everything
 * else is real, including the overlay mount of each box's filesystem, which
 * is why the suite needs root. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/auth.h"
#include "autoconfig.h"
#include "check-tap.h"
#include "engine/engine.h"
#include "fs/fuse-adapter.h"
#include "engine/jobs.h"
#include "fs/tree.h"
#include "engine/volumes.h"

#define TEMP_MAX_PER_DIR 32
#define TEMP_DATA_MAX (64 * 1024)

/* Every test's directory lives under base, so main() can clean up after a
 * test that died before its teardown. */
static char base[64];
static char tmp[128];
static struct pd_config cfg;
static struct engine *eng;
static struct tree *tr;

/* Buffers handed out by the helpers, freed in teardown. */
static char *owned[256];
static size_t n_owned;

static char *keep(char *p)
{
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_lt(n_owned, ELEMENTSOF(owned));
	owned[n_owned++] = p;
	return p;
}

static void replace(char **field, const char *value)
{
	free(*field);
	*field = strdup(value);
	ck_assert_ptr_nonnull(*field);
}

static void write_text(const char *dir, const char *file, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	ck_assert_int_eq(write_file_atomic(path, text, strlen(text), 0644), 0);
}

/* Detaches everything the engine left mounted under root (box overlays,
 * their views, disk images: a detached image's loop device clears itself),
 * deepest first. */
static void umount_boxes(const char *root)
{
	char line[8192], *mounts[4096];
	size_t n = 0, len = strlen(root);
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return;
	while (n < ELEMENTSOF(mounts) && fgets(line, sizeof line, f)) {
		char *p = line;
		/* The fifth field is the mount point (octal escapes for
		 * spaces: none under our directories). */
		for (int i = 0; i < 4 && p; i++)
			p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
		if (!p)
			continue;
		char *end = strchr(p, ' ');
		if (end)
			*end = '\0';
		if (strncmp(p, root, len) == 0 && p[len] == '/')
			mounts[n++] = strdup(p);
	}
	fclose(f);
	for (size_t i = n; i-- > 0;) {
		if (mounts[i])
			while (umount2(mounts[i], MNT_DETACH) == 0)
				;
		free(mounts[i]);
	}
}

static void setup(void)
{
	char images[256], path[256];
	pd_error err = {0};
	int r;

	snprintf(tmp, sizeof(tmp), "%s/t.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(tmp));

	ck_assert_int_eq(config_load(NULL, &cfg, &err), 0);
	snprintf(path, sizeof(path), "%s/data", tmp);
	replace(&cfg.data, path);
	snprintf(path, sizeof(path), "%s/run", tmp);
	replace(&cfg.run, path);
	replace(&cfg.default_image, "tiny");
	replace(&cfg.crun, "/bin/false");
	/* Never touch the host's network from a unit test, nor run lxcfs. */
	cfg.network = false;
	free(cfg.lxcfs);
	cfg.lxcfs = NULL;
	snprintf(path, sizeof(path), "paddock-check-tree-%d", (int)getpid());
	replace(&cfg.cgroup_parent, path);

	snprintf(images, sizeof(images), "%s/images/tiny", cfg.data);
	ck_assert_int_eq(mkdir_p(images, 0755), 0);
	snprintf(images, sizeof(images), "%s/images/tiny/rootfs", cfg.data);
	ck_assert_int_eq(mkdir_p(images, 0755), 0);
	snprintf(images, sizeof(images), "%s/images/tiny", cfg.data);
	write_text(images, "description", "Tiny test image\n");
	write_text(images, "size", "4096\n");
	write_text(images, "created", "2026-01-01T00:00:00Z\n");

	r = engine_new(&cfg, "/bin/true", &eng, &err);
	ck_assert_msg(r == 0, "engine_new: %d %s", r, err.msg);
	ck_assert_int_eq(tree_new(eng, &tr), 0);
}

static void teardown(void)
{
	tr = tree_free(tr);
	eng = engine_free(eng);
	umount_boxes(tmp);
	config_release(&cfg);
	rm_rf(tmp);
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
	n_owned = 0;
}

/* ---- helpers ---- */

static struct tree_attr attr_of(const char *path)
{
	struct tree_attr a;
	int r = tree_resolve(tr, path, &a);
	ck_assert_msg(r == 0, "resolve %s: %d", path, r);
	return a;
}

static uint64_t ino_of(const char *path)
{
	return attr_of(path).ino;
}

/* pread() and fstat() with a hook (this program's definitions are the ones
 * the tree calls): once armed, the first empty read, or the first look at
 * the size (which is how a stream read finds what there is to read), of a
 * file whose path ends in hook_suffix runs hook_fn before returning, as
 * another thread could. */
static const char *hook_suffix;
static void (*hook_fn)(void);

static void run_hook(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t len;

	if (!hook_fn)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	if (len < 0)
		return;
	path[len] = '\0';
	if (strstr(path, hook_suffix)) {
		void (*fn)(void) = hook_fn;
		hook_fn = NULL;
		fn();
	}
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset)
{
	ssize_t n = syscall(SYS_pread64, fd, buf, count, offset);

	if (n == 0)
		run_hook(fd);
	return n;
}

int fstat(int fd, struct stat *st)
{
	int r = (int)syscall(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH);

	if (r == 0)
		run_hook(fd);
	return r;
}

/* Reads an open file to its end in small pieces (so offsets matter).
 * *ret_end is how the end showed: 0 (EOF), -EAGAIN or TREE_WAIT. */
static char *read_open(struct tree_file *f, int *ret_end)
{
	size_t cap = 256, len = 0;
	char *buf = malloc(cap + 1);

	ck_assert_ptr_nonnull(buf);
	for (;;) {
		size_t n = 0;
		if (cap - len < 13) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			ck_assert_ptr_nonnull(buf);
		}
		int r = tree_read(tr, f, len, buf + len, 13, &n);
		if (r != 0) {
			ck_assert_msg(r == -EAGAIN || r == TREE_WAIT, "read: %d", r);
			*ret_end = r;
			break;
		}
		if (n == 0) {
			*ret_end = 0;
			break;
		}
		ck_assert_uint_le(n, 13);
		len += n;
	}
	buf[len] = '\0';
	return keep(buf);
}

/* The content of a file (streams: what is there now). */
static const char *cat(const char *path)
{
	struct tree_file *f;
	int r, end;

	r = tree_open(tr, ino_of(path), O_RDONLY | O_NONBLOCK, &f, NULL);
	ck_assert_msg(r == 0, "open %s: %d", path, r);
	char *s = read_open(f, &end);
	tree_release(tr, f);
	return s;
}

static int write_path(const char *path, const void *data, size_t len)
{
	struct tree_attr a;
	struct tree_file *f;
	int r;

	r = tree_resolve(tr, path, &a);
	if (r < 0)
		return r;
	r = tree_open(tr, a.ino, O_WRONLY, &f, NULL);
	if (r < 0)
		return r;
	r = tree_write(tr, f, 0, data, len, NULL);
	tree_release(tr, f);
	return r;
}

static int write_str(const char *path, const char *s)
{
	return write_path(path, s, strlen(s));
}

static bool dir_has(uint64_t ino, const char *name, struct tree_attr *ret)
{
	struct tree_entry *es = NULL;
	size_t n = 0;
	bool found = false;

	ck_assert_int_eq(tree_readdir(tr, ino, &es, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(es[i].name, name) == 0) {
			found = true;
			if (ret)
				*ret = es[i].attr;
		}
	free(es);
	return found;
}

/* Entries of a box directory: its files, exec/, prompts/, secrets, snapshots/, desktop/ and the root
 * link. */
#define BOX_FILES 27

static size_t dir_count(uint64_t ino)
{
	struct tree_entry *es = NULL;
	size_t n = 0;

	ck_assert_int_eq(tree_readdir(tr, ino, &es, &n), 0);
	free(es);
	return n;
}

static uint64_t make_box(const char *name)
{
	struct tree_attr a;
	int r = tree_mkdir(tr, ino_of("boxes"), name, &a);
	ck_assert_msg(r == 0, "mkdir %s: %d", name, r);
	ck_assert(S_ISDIR(a.mode));
	return a.ino;
}

/* The engine's id of box name, which exists. */
static int64_t box_id(const char *name)
{
	struct box_view v;

	ck_assert_int_eq(engine_box_get(eng, name, &v), 0);
	return v.id;
}

static struct tree_file *create_temp(uint64_t dir, const char *name)
{
	struct tree_attr a;
	struct tree_file *f = NULL;
	int r = tree_create(tr, dir, name, O_WRONLY | O_CREAT | O_TRUNC, &a, &f);
	ck_assert_msg(r == 0, "create %s: %d", name, r);
	ck_assert(S_ISREG(a.mode));
	return f;
}

static void write_temp(uint64_t dir, const char *name, const char *content)
{
	struct tree_file *f = create_temp(dir, name);
	ck_assert_int_eq(tree_write(tr, f, 0, content, strlen(content), NULL), 0);
	tree_release(tr, f);
}

static bool has(const char *haystack, const char *needle)
{
	return strstr(haystack, needle) != NULL;
}

#define assert_has(h, n) ck_assert_msg(has((h), (n)), "\"%s\" does not contain \"%s\"", (h), (n))

/* ---- the tree behind a private FUSE mount ---- */

static char mnt[160];
static struct fuse_adapter *fa;
static pthread_t server;

static void *serve(void *userdata)
{
	(void)fuse_adapter_run(userdata);
	return NULL;
}

static void setup_mount(void)
{
	pd_error err = {0};
	int r;

	setup();
	snprintf(mnt, sizeof(mnt), "%s/mnt", tmp);
	r = fuse_adapter_mount(tr, eng, mnt, &fa, &err);
	ck_assert_msg(r == 0, "mount: %d %s", r, err.msg);
	ck_assert_int_eq(pthread_create(&server, NULL, serve, fa), 0);
}

static void teardown_mount(void)
{
	/* The unmount ends the server's loop. */
	ck_assert_int_eq(umount2(mnt, MNT_DETACH), 0);
	pthread_join(server, NULL);
	fa = fuse_adapter_free(fa);
	teardown();
}

static ino_t stat_ino(const char *path)
{
	struct stat st;
	ck_assert_msg(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
	return st.st_ino;
}

/* How many times `boxes` of the mount lists name. */
static int mount_lists(const char *name)
{
	char path[256];
	glob_t g;
	int n = 0;

	snprintf(path, sizeof(path), "%s/boxes/*", mnt);
	if (glob(path, GLOB_NOSORT, NULL, &g) != 0)
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *slash = strrchr(g.gl_pathv[i], '/');
		n += strcmp(slash + 1, name) == 0;
	}
	globfree(&g);
	return n;
}

/* A box deleted and created again by the engine itself (as HTTP does), not
 * through the mount, while the kernel caches boxes/NAME, its attributes and
 * its root link: the mount shows the deletion as soon as the engine call
 * returns, then the new box. */
START_TEST(test_mount_box_changed_elsewhere)
{
	char box[200], link[200], root[200], target1[256], target2[256];
	pd_error err = {0};
	struct stat st;
	ino_t ino1;
	ssize_t n;

	snprintf(box, sizeof(box), "%s/boxes/web", mnt);
	snprintf(link, sizeof(link), "%s/boxes/web/root", mnt);
	snprintf(root, sizeof(root), "%s/boxes/web/root/", mnt);
	ck_assert_int_eq(engine_box_create(eng, "web", &err), 0);
	ino1 = stat_ino(box);
	ck_assert_int_eq(stat_ino(box), ino1); /* now from the kernel's cache */
	n = readlink(link, target1, sizeof(target1) - 1);
	ck_assert_int_gt(n, 0);
	target1[n] = '\0';
	ck_assert_int_eq(stat(root, &st), 0);
	ck_assert_int_eq(mount_lists("web"), 1);

	ck_assert_int_eq(engine_box_delete(eng, box_id("web"), &err), 0);
	ck_assert_int_eq(stat(box, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(stat(root, &st), -1);
	ck_assert_int_eq(mount_lists("web"), 0);

	ck_assert_int_eq(engine_box_create(eng, "web", &err), 0);
	ck_assert_uint_ne(stat_ino(box), ino1);
	n = readlink(link, target2, sizeof(target2) - 1);
	ck_assert_int_gt(n, 0);
	target2[n] = '\0';
	ck_assert_str_ne(target2, target1);
	ck_assert_int_eq(stat(root, &st), 0);
	ck_assert_uint_eq(st.st_ino, stat_ino(target2));
	ck_assert_int_eq(mount_lists("web"), 1);
}
END_TEST

/* ---- core ---- */

START_TEST(test_root)
{
	static const char *const names[] = {"README", "version", "types",     "images",	 "boxes",
					    "events", "tokens",	 "snapshots", "volumes", "secrets", "agents"};
	struct tree_attr a = attr_of("");

	ck_assert_uint_eq(a.ino, TREE_ROOT_INO);
	ck_assert(S_ISDIR(a.mode));
	ck_assert_uint_eq(attr_of("/").ino, TREE_ROOT_INO);
	ck_assert_uint_eq(attr_of("//boxes/").ino, ino_of("boxes"));
	ck_assert_uint_eq(dir_count(TREE_ROOT_INO), ELEMENTSOF(names));
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		struct tree_attr e, l;
		ck_assert_msg(dir_has(TREE_ROOT_INO, names[i], &e), "%s missing", names[i]);
		ck_assert_int_eq(tree_lookup(tr, TREE_ROOT_INO, names[i], &l), 0);
		ck_assert_uint_eq(e.ino, l.ino);
		ck_assert_uint_eq(e.mode, l.mode);
	}
}
END_TEST

START_TEST(test_readme)
{
	struct tree_attr a = attr_of("README");
	const char *text = cat("README");

	ck_assert(S_ISREG(a.mode));
	ck_assert_uint_eq(a.mode & 07777, 0440);
	ck_assert_uint_gt(strlen(text), 0);
	ck_assert_uint_eq(a.size, strlen(text)); /* st_size is the real size */
	assert_has(text, "mkdir boxes/");
	assert_has(text, "tokens/");
	ck_assert(text[strlen(text) - 1] == '\n');
}
END_TEST

START_TEST(test_version)
{
	struct tree_attr a = attr_of("version");

	ck_assert_str_eq(cat("version"), "paddock " PACKAGE_VERSION "\n");
	ck_assert(S_ISREG(a.mode));
	ck_assert_uint_eq(a.mode & 07777, 0440);
	ck_assert_uint_eq(a.size, strlen("paddock " PACKAGE_VERSION "\n"));
}
END_TEST

START_TEST(test_types)
{
	struct tree_attr a = attr_of("types/small");

	ck_assert(S_ISDIR(attr_of("types").mode));
	ck_assert(dir_has(ino_of("types"), "small", NULL));
	ck_assert(dir_has(ino_of("types"), "medium", NULL));
	ck_assert(dir_has(ino_of("types"), "large", NULL));
	ck_assert_uint_eq(dir_count(ino_of("types")), cfg.n_types);
	ck_assert_str_eq(cat("types/small"), "cpus 1\nmemory 2G\npids 4096\ndisk 10G\n");
	ck_assert_str_eq(cat("types/medium"), "cpus 2\nmemory 4G\npids 4096\ndisk 10G\n");
	ck_assert(S_ISREG(a.mode));
	ck_assert_uint_eq(a.mode & 07777, 0440);
	ck_assert_uint_eq(a.size, strlen("cpus 1\nmemory 2G\npids 4096\ndisk 10G\n"));
}
END_TEST

START_TEST(test_images)
{
	struct tree_attr a;

	ck_assert(dir_has(ino_of("images"), "tiny", &a));
	ck_assert(S_ISDIR(a.mode));
	ck_assert_uint_eq(a.ino, ino_of("images/tiny"));
	ck_assert_uint_eq(dir_count(ino_of("images")), 1);
	ck_assert_uint_eq(dir_count(ino_of("images/tiny")), 3);
	ck_assert(dir_has(ino_of("images/tiny"), "description", NULL));
	ck_assert(dir_has(ino_of("images/tiny"), "size", NULL));
	ck_assert(dir_has(ino_of("images/tiny"), "created", NULL));
	ck_assert_str_eq(cat("images/tiny/description"), "Tiny test image\n");
	ck_assert_str_eq(cat("images/tiny/size"), "4096\n");
	ck_assert_str_eq(cat("images/tiny/created"), "2026-01-01T00:00:00Z\n");
	ck_assert_uint_eq(attr_of("images/tiny/size").mode & 07777, 0440);

	/* An image installed later shows up at once; a build in progress
	 * (a dot directory) never does. */
	char path[512];
	snprintf(path, sizeof(path), "%s/images/second/rootfs", cfg.data);
	ck_assert_int_eq(mkdir_p(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/images/.building/rootfs", cfg.data);
	ck_assert_int_eq(mkdir_p(path, 0755), 0);
	ck_assert(dir_has(ino_of("images"), "second", NULL));
	ck_assert_uint_eq(dir_count(ino_of("images")), 2);
	ck_assert_str_eq(cat("images/second/description"), "\n");
}
END_TEST

START_TEST(test_modes)
{
	static const struct {
		const char *file;
		unsigned mode;
	} files[] = {
	    {"state", 0660},   {"type", 0660},		 {"image", 0660},
	    {"created", 0440}, {"usage", 0440},		 {"info", 0440},
	    {"error", 0440},   {"events", 0440},	 {"ttl", 0660},
	    {"expires", 0440}, {"snapshot", 0220},	 {"fork", 0220},
	    {"restore", 0220}, {"volumes", 0660},	 {"ip", 0440},
	    {"policy", 0660},  {"screenshot.png", 0440}, {"prompt", 0220},
	    {"secrets", 0660}, {"docker", 0660},	 {"ports", 0660},
	    {"urls", 0440},
	};
	char path[64];

	/* The group gets the owner's bits, others nothing (tree.c mkattr). */
	ck_assert_uint_eq(attr_of("README").mode, S_IFREG | 0440);
	ck_assert_uint_eq(attr_of("boxes").mode, S_IFDIR | 0770);
	ck_assert_uint_eq(attr_of("types").mode, S_IFDIR | 0550);
	ck_assert(S_ISDIR(attr_of("types").mode));
	ck_assert(S_ISDIR(attr_of("images").mode));
	ck_assert_uint_eq(attr_of("events").mode, S_IFREG | 0440);

	make_box("web");
	ck_assert(S_ISDIR(attr_of("boxes/web").mode));
	ck_assert_uint_eq(dir_count(ino_of("boxes/web")),
			  ELEMENTSOF(files) + 5 /* root, exec, prompts, snapshots, desktop */);
	ck_assert(S_ISDIR(attr_of("boxes/web/exec").mode));
	ck_assert_uint_eq(attr_of("boxes/web/root").mode, S_IFLNK | 0770);
	ck_assert_uint_eq(attr_of("boxes/web/exec").mode, S_IFDIR | 0770);
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		struct tree_attr e;
		snprintf(path, sizeof(path), "boxes/web/%s", files[i].file);
		ck_assert_msg(attr_of(path).mode == (S_IFREG | files[i].mode), "%s: %o", path,
			      attr_of(path).mode);
		ck_assert_msg(dir_has(ino_of("boxes/web"), files[i].file, &e), "%s", path);
		ck_assert_uint_eq(e.mode, S_IFREG | files[i].mode);
		ck_assert_uint_eq(e.ino, ino_of(path));
	}
}
END_TEST

START_TEST(test_mkdir_box)
{
	struct tree_attr a, l;
	uint64_t boxes = ino_of("boxes");

	ck_assert_uint_eq(dir_count(boxes), 0);
	ck_assert_int_eq(tree_mkdir(tr, boxes, "web", &a), 0);
	ck_assert(S_ISDIR(a.mode));
	ck_assert(dir_has(boxes, "web", &l));
	ck_assert_uint_eq(l.ino, a.ino);
	ck_assert_int_eq(tree_lookup(tr, boxes, "web", &l), 0);
	ck_assert_uint_eq(l.ino, a.ino); /* stable */
	ck_assert_int_eq(tree_getattr(tr, a.ino, &l), 0);
	ck_assert(S_ISDIR(l.mode));

	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
	ck_assert_str_eq(cat("boxes/web/type"), "small\n");
	ck_assert_str_eq(cat("boxes/web/image"), "tiny\n");
	ck_assert_str_eq(cat("boxes/web/error"), "");
	const char *created = cat("boxes/web/created");
	ck_assert_uint_eq(strlen(created), strlen("2026-01-01T00:00:00Z\n"));
	ck_assert(created[4] == '-' && created[10] == 'T' && created[19] == 'Z');
	const char *usage = cat("boxes/web/usage");
	assert_has(usage, "cpu_usec 0\n");
	assert_has(usage, "cpu_percent 0\n");
	assert_has(usage, "memory_bytes 0\n");
	assert_has(usage, "pids 0\n");
	assert_has(usage, "disk_bytes ");
	const char *info = cat("boxes/web/info");
	assert_has(info, "\"name\":\"web\"");
	assert_has(info, "\"state\":\"created\"");
	assert_has(info, "\"type\":\"small\"");
	assert_has(info, "\"image\":\"tiny\"");

	/* A second box, listed after the first. */
	make_box("db-1.x_y");
	ck_assert_uint_eq(dir_count(boxes), 2);
	ck_assert_str_eq(cat("boxes/db-1.x_y/state"), "created\n");
	ck_assert_uint_ne(ino_of("boxes/db-1.x_y"), ino_of("boxes/web"));
}
END_TEST

START_TEST(test_write_type)
{
	struct tree_file *f;

	make_box("web");
	ck_assert_int_eq(write_str("boxes/web/type", "medium"), 0);
	ck_assert_str_eq(cat("boxes/web/type"), "medium\n");
	ck_assert_int_eq(write_str("boxes/web/type", "large\n"), 0);
	ck_assert_str_eq(cat("boxes/web/type"), "large\n");
	ck_assert_int_eq(write_str("boxes/web/type", "small\r\n"), 0);
	ck_assert_str_eq(cat("boxes/web/type"), "small\n");
	/* The same value again: success, nothing to do. */
	ck_assert_int_eq(write_str("boxes/web/type", "small"), 0);

	/* The shell's way: O_TRUNC, then one write. */
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/type"), O_WRONLY | O_TRUNC, &f, NULL), 0);
	ck_assert_int_eq(tree_write(tr, f, 0, "medium\n", 7, NULL), 0);
	tree_release(tr, f);
	ck_assert_str_eq(cat("boxes/web/type"), "medium\n");
	assert_has(cat("boxes/web/info"), "\"type\":\"medium\"");
	ck_assert_str_eq(cat("boxes/web/error"), "");

	/* Values read at open stay fixed for that open. */
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/type"), O_RDONLY, &f, NULL), 0);
	ck_assert_int_eq(write_str("boxes/web/type", "large"), 0);
	int end;
	ck_assert_str_eq(read_open(f, &end), "medium\n");
	tree_release(tr, f);
	ck_assert_str_eq(cat("boxes/web/type"), "large\n");
}
END_TEST

START_TEST(test_write_image_same)
{
	make_box("web");
	ck_assert_int_eq(write_str("boxes/web/image", "tiny\n"), 0);
	ck_assert_str_eq(cat("boxes/web/image"), "tiny\n");
}
END_TEST

START_TEST(test_write_image_change)
{
	char path[512];

	/* While created, the image may change; the box's filesystem follows. */
	snprintf(path, sizeof(path), "%s/images/second/rootfs/etc", cfg.data);
	ck_assert_int_eq(mkdir_p(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/images/second/rootfs/etc", cfg.data);
	write_text(path, "marker", "second\n");
	make_box("web");
	ck_assert_int_eq(write_str("boxes/web/image", "second\n"), 0);
	ck_assert_str_eq(cat("boxes/web/image"), "second\n");
	assert_has(cat("boxes/web/events"), " web image second\n");
	assert_has(cat("boxes/web/info"), "\"image\":\"second\"");
	snprintf(path, sizeof(path), "%s/boxes/1/rootfs/etc/marker", cfg.data);
	ck_assert_int_eq(access(path, F_OK), 0);

	ck_assert_int_eq(write_str("boxes/web/image", "tiny"), 0);
	ck_assert_str_eq(cat("boxes/web/image"), "tiny\n");
	ck_assert_int_ne(access(path, F_OK), 0);
	ck_assert_str_eq(cat("boxes/web/error"), "");
}
END_TEST

START_TEST(test_usage_disk)
{
	char path[512];
	unsigned long long disk = 0;

	make_box("web");
	/* A file written into the box's filesystem counts against it. */
	snprintf(path, sizeof(path), "%s/boxes/1/rootfs/blob", cfg.data);
	char *data = calloc(1, 256 * 1024);
	ck_assert_ptr_nonnull(data);
	memset(data, 'd', 256 * 1024);
	ck_assert_int_eq(write_file_atomic(path, data, 256 * 1024, 0644), 0);
	free(data);

	const char *usage = cat("boxes/web/usage");
	const char *p = strstr(usage, "disk_bytes ");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p, "disk_bytes %llu", &disk), 1);
	ck_assert_uint_ge(disk, 256 * 1024);
	ck_assert_uint_eq(attr_of("boxes/web/usage").size, strlen(usage));
}
END_TEST

START_TEST(test_restart_keeps_boxes)
{
	pd_error err = {0};
	uint64_t ino;

	make_box("web");
	make_box("db");
	ck_assert_int_eq(write_str("boxes/web/type", "medium"), 0);
	ck_assert_int_eq(write_str("boxes/db/state", "running"), -EIO);
	ino = ino_of("boxes/web");

	/* The daemon restarts over the same data directory. */
	tr = tree_free(tr);
	eng = engine_free(eng);
	ck_assert_int_eq(engine_new(&cfg, "/bin/true", &eng, &err), 0);
	ck_assert_int_eq(tree_new(eng, &tr), 0);

	ck_assert_uint_eq(dir_count(ino_of("boxes")), 2);
	ck_assert_uint_eq(ino_of("boxes/web"), ino); /* inodes stay stable */
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
	ck_assert_str_eq(cat("boxes/web/type"), "medium\n");
	ck_assert_str_eq(cat("boxes/db/state"), "created\n");
	assert_has(cat("boxes/db/error"), "(EIO)");
	ck_assert_int_eq(tree_rmdir(tr, ino_of("boxes"), "web", NULL), 0);
	ck_assert_uint_eq(dir_count(ino_of("boxes")), 1);
}
END_TEST

START_TEST(test_truncate_control)
{
	struct tree_file *f;

	make_box("web");
	ck_assert_int_eq(tree_truncate(tr, ino_of("boxes/web/state"), 0), 0);
	ck_assert_int_eq(tree_truncate(tr, ino_of("boxes/web/type"), 0), 0);
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
	ck_assert_str_eq(cat("boxes/web/type"), "small\n");

	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/state"), O_WRONLY | O_TRUNC, &f, NULL), 0);
	tree_release(tr, f);
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
}
END_TEST

/* The kernel sends no release for files still open when the session ends:
 * tree_free() frees them (LSan fails this test otherwise), and applies
 * nothing pending (a bare allowlist waits for its entries until close). */
START_TEST(test_free_open_files)
{
	struct tree_file *w, *ev, *pol;

	make_box("web");
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/type"), O_WRONLY | O_TRUNC, &w, NULL), 0);
	ck_assert_int_eq(tree_write(tr, w, 0, "large\n", 6, NULL), 0);
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/events"), O_RDONLY, &ev, NULL), 0);
	ck_assert_int_eq(write_str("boxes/web/policy", "deny-all\n"), 0);
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/policy"), O_WRONLY | O_TRUNC, &pol, NULL),
			 0);
	ck_assert_int_eq(tree_write(tr, pol, 0, "allowlist\n", 10, NULL), 0);
	tr = tree_free(tr);
	ck_assert_int_eq(tree_new(eng, &tr), 0);
	ck_assert_str_eq(cat("boxes/web/type"), "large\n");
	ck_assert_str_eq(cat("boxes/web/policy"), "deny-all\n");
	ck_assert_str_eq(cat("boxes/web/error"), "");
}
END_TEST

START_TEST(test_temp_rename)
{
	uint64_t box = make_box("web");
	struct tree_attr a;

	write_temp(box, "type.tmp", "large");
	ck_assert_int_eq(tree_rename(tr, box, "type.tmp", box, "type"), 0);
	ck_assert_str_eq(cat("boxes/web/type"), "large\n");
	ck_assert(!dir_has(box, "type.tmp", NULL));
	ck_assert_int_eq(tree_lookup(tr, box, "type.tmp", &a), -ENOENT);
	ck_assert_str_eq(cat("boxes/web/error"), "");

	/* The same with a trailing newline and an editor-style name. */
	write_temp(box, ".type.swp", "medium\n");
	ck_assert_int_eq(tree_rename(tr, box, ".type.swp", box, "type"), 0);
	ck_assert_str_eq(cat("boxes/web/type"), "medium\n");
	ck_assert_uint_eq(dir_count(box), BOX_FILES);
}
END_TEST

START_TEST(test_temp_listing_unlink)
{
	uint64_t box = make_box("web");
	struct tree_attr a, l;
	struct tree_file *f;
	int end;

	f = create_temp(box, "a.tmp");
	ck_assert(dir_has(box, "a.tmp", &a));
	ck_assert_uint_eq(a.mode, S_IFREG | 0660);
	ck_assert_uint_eq(a.size, 0);
	ck_assert_int_eq(tree_write(tr, f, 0, "hello ", 6, NULL), 0);
	ck_assert_int_eq(tree_write(tr, f, 6, "world", 5, NULL), 0);
	tree_release(tr, f);

	ck_assert_int_eq(tree_lookup(tr, box, "a.tmp", &l), 0);
	ck_assert_uint_eq(l.ino, a.ino);
	ck_assert_uint_eq(l.size, 11);
	ck_assert_str_eq(cat("boxes/web/a.tmp"), "hello world");

	/* Reads of an open temp see its current bytes. */
	ck_assert_int_eq(tree_open(tr, l.ino, O_RDWR, &f, NULL), 0);
	ck_assert_int_eq(tree_write(tr, f, 11, "!", 1, NULL), 0);
	ck_assert_str_eq(read_open(f, &end), "hello world!");
	ck_assert_int_eq(end, 0);
	tree_release(tr, f);

	/* Truncation works on temps like on real files. */
	ck_assert_int_eq(tree_truncate(tr, l.ino, 5), 0);
	ck_assert_str_eq(cat("boxes/web/a.tmp"), "hello");

	write_temp(box, "b.tmp", "x");
	ck_assert(dir_has(box, "b.tmp", NULL));
	ck_assert_uint_eq(dir_count(box), BOX_FILES + 2);

	ck_assert_int_eq(tree_unlink(tr, box, "a.tmp"), 0);
	ck_assert(!dir_has(box, "a.tmp", NULL));
	ck_assert_int_eq(tree_lookup(tr, box, "a.tmp", &l), -ENOENT);
	ck_assert_int_eq(tree_unlink(tr, box, "a.tmp"), -ENOENT);
	ck_assert_int_eq(tree_unlink(tr, box, "b.tmp"), 0);
	ck_assert_uint_eq(dir_count(box), BOX_FILES);
}
END_TEST

START_TEST(test_temp_to_temp_rename)
{
	uint64_t box = make_box("web");
	struct tree_attr a;

	write_temp(box, "a", "first");
	write_temp(box, "b", "second");
	ck_assert_int_eq(tree_rename(tr, box, "a", box, "c"), 0);
	ck_assert_int_eq(tree_lookup(tr, box, "a", &a), -ENOENT);
	ck_assert_str_eq(cat("boxes/web/c"), "first");

	/* Onto an existing temp: it is replaced. */
	ck_assert_int_eq(tree_rename(tr, box, "c", box, "b"), 0);
	ck_assert_str_eq(cat("boxes/web/b"), "first");
	ck_assert_uint_eq(dir_count(box), BOX_FILES + 1);
}
END_TEST

START_TEST(test_create_existing_control)
{
	uint64_t box = make_box("web");
	struct tree_attr a;
	struct tree_file *f = NULL;

	/* open(O_CREAT) of an existing control file opens it. */
	ck_assert_int_eq(tree_create(tr, box, "type", O_WRONLY | O_CREAT | O_TRUNC, &a, &f), 0);
	ck_assert_uint_eq(a.ino, ino_of("boxes/web/type"));
	ck_assert_int_eq(tree_write(tr, f, 0, "large\n", 6, NULL), 0);
	tree_release(tr, f);
	ck_assert_str_eq(cat("boxes/web/type"), "large\n");
	ck_assert_uint_eq(dir_count(box), BOX_FILES);
}
END_TEST

START_TEST(test_events_box)
{
	struct tree_file *f;
	struct tree_attr a;
	char buf[64];
	size_t n = 99;
	int end;

	make_box("web");
	a = attr_of("boxes/web/events");

	ck_assert_int_eq(tree_open(tr, a.ino, O_RDONLY | O_NONBLOCK, &f, NULL), 0);
	ck_assert(tree_file_is_stream(f));
	ck_assert_uint_ne(tree_file_wait_key(f), 0);
	const char *text = read_open(f, &end);
	ck_assert_int_eq(end, -EAGAIN);
	ck_assert_uint_gt(strlen(text), strlen(" created\n"));
	ck_assert_str_eq(text + strlen(text) - strlen(" created\n"), " created\n");
	ck_assert_ptr_eq(strchr(text, '\n'), text + strlen(text) - 1); /* one line */
	assert_has(text, " web created\n");
	/* Read at the end again: still -EAGAIN, n untouched. */
	ck_assert_int_eq(tree_read(tr, f, strlen(text), buf, sizeof(buf), &n), -EAGAIN);
	ck_assert_uint_eq(n, 99);

	/* A later event is appended and readable from where we were. */
	ck_assert_int_eq(write_str("boxes/web/type", "medium"), 0);
	ck_assert_int_eq(tree_read(tr, f, strlen(text), buf, sizeof(buf) - 1, &n), 0);
	buf[n] = '\0';
	assert_has(buf, " web type medium\n");
	tree_release(tr, f);

	/* Without O_NONBLOCK the read at the end parks. */
	ck_assert_int_eq(tree_open(tr, a.ino, O_RDONLY, &f, NULL), 0);
	text = read_open(f, &end);
	ck_assert_int_eq(end, TREE_WAIT);
	assert_has(text, " created\n");
	ck_assert_int_eq(tree_getattr(tr, a.ino, &a), 0);
	ck_assert_uint_eq(a.size, strlen(text));
	tree_release(tr, f);
}
END_TEST

/* A box writes its last event and goes between a reader's empty read and
 * its look at whether the stream still lives: the reader gets the event,
 * then EOF (it used to get EOF at once, and lose the event). */
static void last_event_then_delete(void)
{
	pd_error err = {0};

	ck_assert_int_eq(write_str("boxes/web/type", "large"), 0);
	ck_assert_int_eq(engine_box_delete(eng, box_id("web"), &err), 0);
}

START_TEST(test_events_end_race)
{
	struct tree_file *f;
	char buf[4096];
	size_t n = 0, off;
	int end;

	make_box("web");
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/events"), O_RDONLY, &f, NULL), 0);
	off = strlen(read_open(f, &end));
	ck_assert_int_eq(end, TREE_WAIT);
	hook_suffix = "/events";
	hook_fn = last_event_then_delete;
	ck_assert_int_eq(tree_read(tr, f, off, buf, sizeof(buf) - 1, &n), 0);
	ck_assert_ptr_null(hook_fn);
	buf[n] = '\0';
	assert_has(buf, " web type large\n");
	ck_assert_int_eq(tree_read(tr, f, off + n, buf, sizeof(buf) - 1, &n), 0);
	ck_assert_uint_eq(n, 0);
	tree_release(tr, f);
}
END_TEST

START_TEST(test_events_global)
{
	struct tree_file *f;
	int end;

	ck_assert_int_eq(tree_open(tr, ino_of("events"), O_RDONLY | O_NONBLOCK, &f, NULL), 0);
	ck_assert(tree_file_is_stream(f));
	ck_assert_uint_eq(tree_file_wait_key(f), 0);
	ck_assert_str_eq(read_open(f, &end), "");
	ck_assert_int_eq(end, -EAGAIN);
	tree_release(tr, f);

	make_box("web");
	make_box("db");
	const char *text = cat("events");
	assert_has(text, " web created\n");
	assert_has(text, " db created\n");
	ck_assert(strstr(text, " web created\n") < strstr(text, " db created\n"));

	/* The global stream never ends. */
	ck_assert_int_eq(tree_open(tr, ino_of("events"), O_RDONLY, &f, NULL), 0);
	read_open(f, &end);
	ck_assert_int_eq(end, TREE_WAIT);
	tree_release(tr, f);
}
END_TEST

START_TEST(test_rmdir)
{
	uint64_t boxes = ino_of("boxes");
	uint64_t box = make_box("web");
	struct tree_attr a;
	char dir[512];

	make_box("keep");
	write_temp(box, "x.tmp", "x");
	ck_assert_int_eq(tree_rmdir(tr, boxes, "web", NULL), 0);
	ck_assert(!dir_has(boxes, "web", NULL));
	ck_assert(dir_has(boxes, "keep", NULL));
	ck_assert_int_eq(tree_lookup(tr, boxes, "web", &a), -ENOENT);
	ck_assert_int_eq(tree_getattr(tr, box, &a), -ENOENT);
	ck_assert_int_eq(tree_resolve(tr, "boxes/web/state", &a), -ENOENT);
	ck_assert_int_eq(tree_readdir(tr, box, &(struct tree_entry *){NULL}, &(size_t){0}),
			 -ENOENT);

	const char *events = cat("events");
	assert_has(events, " web created\n");
	assert_has(events, " web deleted\n");

	/* Its files are gone from the data directory (the mount with them). */
	snprintf(dir, sizeof(dir), "%s/data/boxes/1", tmp);
	ck_assert_int_ne(access(dir, F_OK), 0);

	/* The name can be used again: a new box, fresh state. */
	uint64_t again = make_box("web");
	ck_assert_uint_ne(again, box);
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
	ck_assert_uint_eq(dir_count(again), BOX_FILES); /* the old temps went with the old box */
}
END_TEST

START_TEST(test_exec_last_nodes)
{
	struct tree_attr a, first, second;
	char target[64];
	uint64_t exec;

	make_box("web");
	exec = ino_of("boxes/web/exec");
	ck_assert_int_eq(tree_resolve(tr, "boxes/web/exec/last", &a), -ENOENT);
	ck_assert_int_eq(tree_mkdir(tr, exec, "a", &a), 0);
	first = attr_of("boxes/web/exec/last");
	ck_assert(S_ISLNK(first.mode));
	ck_assert_uint_eq(first.size, 1);
	ck_assert_int_eq(tree_readlink(tr, first.ino, target, sizeof target), 0);
	ck_assert_str_eq(target, "a");
	ck_assert_int_eq(tree_open(tr, first.ino, O_RDONLY, &(struct tree_file *){NULL}, NULL),
			 -ELOOP);

	/* A newer job is a new node; the old node keeps its target. */
	ck_assert_int_eq(tree_mkdir(tr, exec, "bb", &a), 0);
	second = attr_of("boxes/web/exec/last");
	ck_assert_uint_ne(second.ino, first.ino);
	ck_assert_uint_eq(second.size, 2);
	ck_assert(dir_has(exec, "last", &a));
	ck_assert_uint_eq(a.ino, second.ino);
	ck_assert_int_eq(tree_readlink(tr, second.ino, target, sizeof target), 0);
	ck_assert_str_eq(target, "bb");
	ck_assert_int_eq(tree_readlink(tr, first.ino, target, sizeof target), 0);
	ck_assert_str_eq(target, "a");
	ck_assert_int_eq(tree_readlink(tr, first.ino, target, 1), -ENAMETOOLONG);

	/* exec/last is no name inside a job's directory. */
	ck_assert_int_eq(tree_resolve(tr, "boxes/web/exec/a/last", &a), -ENOENT);

	/* Deleting the last job hands exec/last back; its node is gone. */
	ck_assert_int_eq(tree_rmdir(tr, exec, "bb", NULL), 0);
	ck_assert_uint_eq(ino_of("boxes/web/exec/last"), first.ino);
	ck_assert_int_eq(tree_getattr(tr, second.ino, &a), -ENOENT);
	ck_assert_int_eq(tree_readlink(tr, second.ino, target, sizeof target), -ENOENT);

	ck_assert_int_eq(tree_rmdir(tr, ino_of("boxes"), "web", NULL), 0);
	ck_assert_int_eq(tree_getattr(tr, first.ino, &a), -ENOENT);
}
END_TEST

START_TEST(test_rmdir_ends_stream)
{
	struct tree_file *f;
	char buf[64];
	size_t n = 99;
	int end;

	make_box("web");
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/events"), O_RDONLY, &f, NULL), 0);
	const char *text = read_open(f, &end);
	ck_assert_int_eq(end, TREE_WAIT);
	ck_assert_int_eq(tree_rmdir(tr, ino_of("boxes"), "web", NULL), 0);
	/* A reader parked at the end now sees EOF. */
	ck_assert_int_eq(tree_read(tr, f, strlen(text), buf, sizeof(buf), &n), 0);
	ck_assert_uint_eq(n, 0);
	tree_release(tr, f);
}
END_TEST

/* The temp-then-rename write works for every writable file: a directory
 * takes temp files exactly when it lists a writable regular file. Every
 * kind of directory of a populated tree is checked from its listing. */
START_TEST(test_temps_where_writable)
{
	char id[NAME_MAX_LEN + 1], snapdir[NAME_MAX_LEN + 16];
	struct tree_attr a;
	pd_error err = {0};

	make_box("web");
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes/web/exec"), "j", &a), 0);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("volumes"), "vol", &a), 0);
	ck_assert_int_eq(engine_box_snapshot(eng, box_id("web"), "s", id, sizeof id, &err), 0);
	snprintf(snapdir, sizeof snapdir, "snapshots/%s", id);

	const char *dirs[] = {"",
			      "boxes",
			      "types",
			      "images",
			      "images/tiny",
			      "boxes/web",
			      "boxes/web/exec",
			      "boxes/web/exec/j",
			      "snapshots",
			      snapdir,
			      "boxes/web/snapshots",
			      "volumes",
			      "volumes/vol",
			      "tokens"};
	size_t allowed = 0;
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		uint64_t dir = ino_of(dirs[i]);
		struct tree_entry *es = NULL;
		struct tree_file *f = NULL;
		size_t n = 0;
		bool writable = false;

		ck_assert_int_eq(tree_readdir(tr, dir, &es, &n), 0);
		for (size_t k = 0; k < n; k++)
			writable |= S_ISREG(es[k].attr.mode) && (es[k].attr.mode & 0200);
		free(es);
		int r = tree_create(tr, dir, ".x.tmp", O_WRONLY | O_CREAT | O_EXCL, &a, &f);
		ck_assert_msg(r == (writable ? 0 : -EACCES), "/%s: create %d, writable %d", dirs[i],
			      r, writable);
		if (r == 0) {
			allowed++;
			tree_release(tr, f);
			ck_assert(dir_has(dir, ".x.tmp", NULL));
			ck_assert_int_eq(tree_unlink(tr, dir, ".x.tmp"), 0);
		}
	}
	/* box, exec, job, snapshot, volume */
	ck_assert_uint_eq(allowed, 5);
}
END_TEST

/* exec/new as a temp file renamed over it: it goes where a write of
 * exec/new goes (the job cannot start here: the runtime fails). */
START_TEST(test_temp_rename_exec_new)
{
	uint64_t exec;
	struct tree_attr a;

	make_box("web");
	exec = ino_of("boxes/web/exec");
	write_temp(exec, ".new.tmp", "echo hi\n");
	ck_assert(dir_has(exec, ".new.tmp", NULL));
	ck_assert_int_lt(tree_rename(tr, exec, ".new.tmp", exec, "new"), 0);
	assert_has(cat("boxes/web/error"), "exec/new: ");
	ck_assert_int_eq(tree_lookup(tr, exec, ".new.tmp", &a), 0);

	/* An empty command: refused as a write would be. */
	write_temp(exec, "empty", "");
	ck_assert_int_eq(tree_rename(tr, exec, "empty", exec, "new"), -EINVAL);
	assert_has(cat("boxes/web/error"), "exec/new: cmd: ");

	/* A job's name a temp holds is taken; over a job or exec/last the
	 * rename is refused. */
	ck_assert_int_eq(tree_mkdir(tr, exec, "empty", &a), -EEXIST);
	ck_assert_int_eq(tree_mkdir(tr, exec, "j", &a), 0);
	ck_assert_int_eq(tree_rename(tr, exec, "empty", exec, "j"), -EISDIR);
	ck_assert_int_eq(tree_rename(tr, exec, "empty", exec, "last"), -EACCES);
}
END_TEST

/* A volume's temps hold archives: on disk, bigger than a control value,
 * read back, truncated and sized like a file; renamed over import they
 * go to the import, and they go with the volume. */
START_TEST(test_temp_volume_spool)
{
	size_t big = 3 * TEMP_DATA_MAX + 17;
	char *data = malloc(big), *back;
	struct tree_file *f;
	struct tree_attr a;
	uint64_t vol;
	int end;

	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < big; i++)
		data[i] = (char)('a' + i % 23);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("volumes"), "vol", &a), 0);
	vol = a.ino;
	f = create_temp(vol, ".import.tmp");
	ck_assert_int_eq(tree_write(tr, f, 0, data, TEMP_DATA_MAX, NULL), 0);
	ck_assert_int_eq(
	    tree_write(tr, f, TEMP_DATA_MAX, data + TEMP_DATA_MAX, big - TEMP_DATA_MAX, NULL), 0);
	back = read_open(f, &end);
	ck_assert_int_eq(end, 0);
	ck_assert_uint_eq(strlen(back), big);
	ck_assert(memcmp(back, data, big) == 0);
	tree_release(tr, f);
	ck_assert_int_eq(tree_lookup(tr, vol, ".import.tmp", &a), 0);
	ck_assert_uint_eq(a.size, big);
	ck_assert_int_eq(tree_truncate(tr, a.ino, 100), 0);
	ck_assert_int_eq(tree_lookup(tr, vol, ".import.tmp", &a), 0);
	ck_assert_uint_eq(a.size, 100);
	ck_assert_str_eq(cat("volumes/vol/.import.tmp"), keep(strndup(data, 100)));

	/* Not an archive: the import refuses it, the temp stays. */
	ck_assert_int_lt(tree_rename(tr, vol, ".import.tmp", vol, "import"), 0);
	assert_has(cat("volumes/vol/error"), "import: ");
	ck_assert_int_eq(tree_lookup(tr, vol, ".import.tmp", &a), 0);

	/* Deleting the volume drops it. */
	ck_assert_int_eq(tree_rmdir(tr, ino_of("volumes"), "vol", NULL), 0);
	ck_assert_int_eq(tree_getattr(tr, a.ino, &a), -ENOENT);
	free(data);
}
END_TEST

/* A temp left in a job's directory goes with the job. */
START_TEST(test_temp_goes_with_job)
{
	struct tree_attr a, t;
	uint64_t exec;

	make_box("web");
	exec = ino_of("boxes/web/exec");
	ck_assert_int_eq(tree_mkdir(tr, exec, "j", &a), 0);
	write_temp(a.ino, ".env.tmp", "A=1\n");
	ck_assert_int_eq(tree_lookup(tr, a.ino, ".env.tmp", &t), 0);
	ck_assert_int_eq(tree_rmdir(tr, exec, "j", NULL), 0);
	ck_assert_int_eq(tree_getattr(tr, t.ino, &t), -ENOENT);
	ck_assert_int_eq(tree_mkdir(tr, exec, "j", &a), 0);
	ck_assert_int_eq(tree_lookup(tr, a.ino, ".env.tmp", &t), -ENOENT);
}
END_TEST

/* exit, stdout, stderr and output of a job not started would wait
 * forever: the open fails at once, with the reason in the box's error. */
START_TEST(test_unstarted_job_reads)
{
	static const char *const waits[] = {"exit", "stdout", "stderr", "output"};
	struct tree_file *f = NULL;
	char path[64];

	make_box("web");
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes/web/exec"), "j", &(struct tree_attr){0}), 0);
	for (size_t i = 0; i < ELEMENTSOF(waits); i++) {
		snprintf(path, sizeof path, "boxes/web/exec/j/%s", waits[i]);
		ck_assert_int_eq(tree_open(tr, ino_of(path), O_RDONLY, &f, NULL), -EBUSY);
		ck_assert_int_eq(tree_open(tr, ino_of(path), O_RDONLY | O_NONBLOCK, &f, NULL),
				 -EBUSY);
		snprintf(path, sizeof path, "exec/j/%s: job j has not started", waits[i]);
		assert_has(cat("boxes/web/error"), path);
	}
	/* Its values read as ever. */
	ck_assert_str_eq(cat("boxes/web/exec/j/status"), "created\n");
	ck_assert_str_eq(cat("boxes/web/exec/j/cmd"), "");
}
END_TEST

/* The owner's tokens: one directory each, made by a login, revoked by
 * rmdir. (Hashing runs at the production cost here: a second or so.) */
static void login_token(const char *label, char token[AUTH_TOKEN_LEN + 1], char id[AUTH_ID_LEN + 1])
{
	struct auth *au = engine_auth(eng);
	char secret[AUTH_SECRET_LEN + 1];
	pd_error err = {0};
	unsigned retry = 0;
	int r;

	if (!auth_has_owner(au)) {
		ck_assert_int_eq(auth_setup_begin(au, secret, sizeof(secret)), 0);
		ck_assert_int_eq(auth_setup_finish(au, secret, "owner password", &err), 0);
	}
	r = auth_login(au, "127.0.0.1", "owner password", label, 0, token, AUTH_TOKEN_LEN + 1, id,
		       AUTH_ID_LEN + 1, NULL, &retry, &err);
	ck_assert_msg(r == 0, "login: %d %s", r, err.msg);
}

START_TEST(test_tokens)
{
	char token[AUTH_TOKEN_LEN + 1], id[AUTH_ID_LEN + 1], path[64], ts[32];
	uint64_t tokens = ino_of("tokens");
	struct auth_token tok;
	struct tree_attr a;
	struct tree_file *f;

	ck_assert_uint_eq(tokens, TREE_TOKENS_INO);
	ck_assert_uint_eq(attr_of("tokens").mode, S_IFDIR | 0770);
	ck_assert_uint_eq(dir_count(tokens), 0);

	login_token("laptop", token, id);
	ck_assert_uint_eq(dir_count(tokens), 1);
	ck_assert(dir_has(tokens, id, &a));
	ck_assert_uint_eq(a.mode, S_IFDIR | 0550);
	snprintf(path, sizeof(path), "tokens/%s", id);
	ck_assert_uint_eq(a.ino, ino_of(path));
	ck_assert_uint_eq(dir_count(a.ino), 4);

	ck_assert_int_eq(auth_token_get(engine_auth(eng), id, &tok), 0);
	format_rfc3339(tok.created, ts, sizeof(ts) - 1);
	strcat(ts, "\n");
	snprintf(path, sizeof(path), "tokens/%s/label", id);
	ck_assert_str_eq(cat(path), "laptop\n");
	ck_assert_uint_eq(attr_of(path).mode, S_IFREG | 0440);
	ck_assert_uint_eq(attr_of(path).size, strlen("laptop\n"));
	ck_assert_int_eq(tree_open(tr, ino_of(path), O_WRONLY, &f, NULL), -EACCES);
	ck_assert_int_eq(tree_unlink(tr, a.ino, "label"), -EPERM);
	snprintf(path, sizeof(path), "tokens/%s/created", id);
	ck_assert_str_eq(cat(path), ts);
	snprintf(path, sizeof(path), "tokens/%s/expires", id);
	ck_assert_str_eq(cat(path), "never\n");
	ck_assert_uint_eq(attr_of(path).mode, S_IFREG | 0440);
	snprintf(path, sizeof(path), "tokens/%s/last_used", id);
	ck_assert_str_eq(cat(path), "never\n");

	/* A use shows up. */
	ck_assert_int_eq(auth_check_token_id(engine_auth(eng), token, NULL), 0);
	ck_assert_uint_eq(strlen(cat(path)), 21);
	ck_assert(cat(path)[20] == '\n');
	ck_assert(strchr(cat(path), 'T') != NULL);

	/* Tokens are made by logging in, not by mkdir. */
	ck_assert_int_eq(tree_mkdir(tr, tokens, "x", &a), -EPERM);
	ck_assert_int_eq(tree_mkdir(tr, tokens, id, &a), -EEXIST);
	snprintf(path, sizeof(path), "tokens/%s", id);
	ck_assert_int_eq(tree_mkdir(tr, ino_of(path), "x", &a), -EPERM);
	ck_assert_int_eq(tree_create(tr, tokens, "x", O_WRONLY | O_CREAT, &a, &f), -EACCES);
	ck_assert_int_eq(tree_rename(tr, tokens, id, tokens, "other"), -EPERM);

	/* rmdir revokes. */
	uint64_t old = ino_of(path);
	ck_assert_int_eq(tree_rmdir(tr, ino_of(path), "label", NULL), -ENOTDIR);
	ck_assert_int_eq(tree_rmdir(tr, tokens, id, NULL), 0);
	ck_assert_int_eq(auth_check_token_id(engine_auth(eng), token, NULL), -EACCES);
	ck_assert_int_eq(tree_lookup(tr, tokens, id, &a), -ENOENT);
	ck_assert_int_eq(tree_getattr(tr, old, &a), -ENOENT);
	ck_assert_int_eq(tree_rmdir(tr, tokens, id, NULL), -ENOENT);
	ck_assert_uint_eq(dir_count(tokens), 0);
	ck_assert_int_eq(tree_rmdir(tr, TREE_ROOT_INO, "tokens", NULL), -EPERM);

	/* A new token never takes the old one's inode. */
	login_token(NULL, token, id);
	snprintf(path, sizeof(path), "tokens/%s", id);
	ck_assert_uint_ne(ino_of(path), old);
	snprintf(path, sizeof(path), "tokens/%s/label", id);
	ck_assert_str_eq(cat(path), "");
	ck_assert_int_eq(tree_lookup(tr, tokens, "nosuchtoken0", &a), -ENOENT);
	ck_assert_int_eq(tree_lookup(tr, ino_of(path), "x", &a), -ENOTDIR);

	/* A token that expires says when. */
	{
		char t2[AUTH_TOKEN_LEN + 1], id2[AUTH_ID_LEN + 1];
		pd_error err = {0};
		unsigned retry = 0;
		time_t expires = 0;

		ck_assert_int_eq(auth_login(engine_auth(eng), "127.0.0.1", "owner password",
					    "short", 3600, t2, sizeof(t2), id2, sizeof(id2),
					    &expires, &retry, &err),
				 0);
		format_rfc3339(expires, ts, sizeof(ts) - 1);
		strcat(ts, "\n");
		snprintf(path, sizeof(path), "tokens/%s/expires", id2);
		ck_assert_str_eq(cat(path), ts);
		ck_assert_int_eq(tree_rmdir(tr, tokens, id2, NULL), 0);
	}
}
END_TEST

/* ---- limits ---- */

START_TEST(test_name_lengths)
{
	char name[80], line[100];
	struct tree_attr a;

	memset(name, 'a', 63);
	name[63] = '\0';
	make_box(name);
	ck_assert(dir_has(ino_of("boxes"), name, NULL));
	snprintf(line, sizeof(line), " %s created\n", name);
	assert_has(cat("events"), line);

	name[63] = 'a';
	name[64] = '\0';
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes"), name, &a), -EINVAL);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes"), "0", &a), 0);
	ck_assert_uint_eq(dir_count(ino_of("boxes")), 2);
}
END_TEST

START_TEST(test_temp_count)
{
	uint64_t box = make_box("web"), other = make_box("db");
	struct tree_attr a;
	struct tree_file *f = NULL;
	char name[32];

	for (int i = 0; i < TEMP_MAX_PER_DIR; i++) {
		snprintf(name, sizeof(name), "t%02d", i);
		write_temp(box, name, "x");
	}
	ck_assert_uint_eq(dir_count(box), BOX_FILES + TEMP_MAX_PER_DIR);
	ck_assert_int_eq(tree_create(tr, box, "one-more", O_WRONLY | O_CREAT, &a, &f), -ENOSPC);
	ck_assert(!dir_has(box, "one-more", NULL));

	/* Per directory: another box has room of its own. */
	write_temp(other, "t00", "y");

	/* Room again after an unlink, and after a rename over a control
	 * file consumed one. */
	ck_assert_int_eq(tree_unlink(tr, box, "t00"), 0);
	write_temp(box, "type.tmp", "medium");
	ck_assert_int_eq(tree_create(tr, box, "one-more", O_WRONLY | O_CREAT, &a, &f), -ENOSPC);
	ck_assert_int_eq(tree_rename(tr, box, "type.tmp", box, "type"), 0);
	write_temp(box, "one-more", "z");
	ck_assert_uint_eq(dir_count(box), BOX_FILES + TEMP_MAX_PER_DIR);
}
END_TEST

START_TEST(test_temp_size)
{
	uint64_t box = make_box("web");
	struct tree_file *f = create_temp(box, "big");
	char *data = calloc(1, TEMP_DATA_MAX + 1);
	struct tree_attr a;

	ck_assert_ptr_nonnull(data);
	memset(data, 'a', TEMP_DATA_MAX + 1);
	ck_assert_int_eq(tree_write(tr, f, 0, data, TEMP_DATA_MAX + 1, NULL), -EFBIG);
	ck_assert_int_eq(tree_write(tr, f, 0, data, TEMP_DATA_MAX, NULL), 0);
	ck_assert_int_eq(tree_write(tr, f, TEMP_DATA_MAX, "b", 1, NULL), -EFBIG);
	ck_assert_int_eq(tree_write(tr, f, TEMP_DATA_MAX - 1, "bc", 2, NULL), -EFBIG);
	ck_assert_int_eq(tree_write(tr, f, UINT64_MAX, "b", 1, NULL), -EFBIG);
	ck_assert_int_eq(tree_write(tr, f, TEMP_DATA_MAX - 1, "b", 1, NULL), 0);
	ck_assert_int_eq(tree_lookup(tr, box, "big", &a), 0);
	ck_assert_uint_eq(a.size, TEMP_DATA_MAX);
	ck_assert_int_eq(tree_truncate(tr, a.ino, TEMP_DATA_MAX + 1), -EFBIG);
	ck_assert_int_eq(tree_truncate(tr, a.ino, 10), 0);
	ck_assert_int_eq(tree_truncate(tr, a.ino, 20), 0);
	ck_assert_int_eq(tree_lookup(tr, box, "big", &a), 0);
	ck_assert_uint_eq(a.size, 20);
	tree_release(tr, f);
	free(data);

	/* A write past the end leaves a zero-filled hole. */
	f = create_temp(box, "hole");
	ck_assert_int_eq(tree_write(tr, f, 4, "x", 1, NULL), 0);
	tree_release(tr, f);
	ck_assert_int_eq(tree_lookup(tr, box, "hole", &a), 0);
	ck_assert_uint_eq(a.size, 5);
}
END_TEST

START_TEST(test_value_length)
{
	char value[300];

	make_box("web");
	/* One value is at most 255 bytes. */
	memset(value, 'a', sizeof(value));
	ck_assert_int_eq(write_path("boxes/web/type", value, 256), -EINVAL);
	assert_has(cat("boxes/web/error"), "type:");
	assert_has(cat("boxes/web/error"), "(EINVAL)");
	ck_assert_int_eq(write_path("boxes/web/type", value, 255), -EINVAL); /* no such type */
	ck_assert_str_eq(cat("boxes/web/type"), "small\n");
}
END_TEST

START_TEST(test_many_boxes)
{
	char name[16];
	struct tree_entry *es;
	size_t n;

	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "box%d", 9 - i);
		make_box(name);
	}
	/* Listed in creation order. */
	ck_assert_int_eq(tree_readdir(tr, ino_of("boxes"), &es, &n), 0);
	ck_assert_uint_eq(n, 10);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "box%d", 9 - i);
		ck_assert_str_eq(es[i].name, name);
		ck_assert(S_ISDIR(es[i].attr.mode));
	}
	free(es);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_mkdir_invalid_names)
{
	static const char *const bad[] = {"Bad", "-x", "",   ".",     "..",	    "a/b",
					  "a b", "_x", ".x", "UPPER", "caf\xc3\xa9"};
	uint64_t boxes = ino_of("boxes");
	struct tree_attr a;
	char long_name[65];

	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		ck_assert_msg(tree_mkdir(tr, boxes, bad[i], &a) == -EINVAL, "\"%s\"", bad[i]);
	memset(long_name, 'x', 64);
	long_name[64] = '\0';
	ck_assert_int_eq(tree_mkdir(tr, boxes, long_name, &a), -EINVAL);
	ck_assert_uint_eq(dir_count(boxes), 0);
	ck_assert_str_eq(cat("events"), "");
}
END_TEST

START_TEST(test_mkdir_duplicate)
{
	struct tree_attr a;

	make_box("web");
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes"), "web", &a), -EEXIST);
	ck_assert_uint_eq(dir_count(ino_of("boxes")), 1);
}
END_TEST

START_TEST(test_mkdir_elsewhere)
{
	uint64_t box;
	struct tree_attr a;
	int r;

	ck_assert_int_eq(tree_mkdir(tr, TREE_ROOT_INO, "types", &a), -EEXIST);
	ck_assert_int_eq(tree_mkdir(tr, TREE_ROOT_INO, "README", &a), -EEXIST);
	ck_assert_int_eq(tree_mkdir(tr, TREE_ROOT_INO, "newdir", &a), -EPERM);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("types"), "x", &a), -EPERM);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("images"), "x", &a), -EPERM);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("tokens"), "x", &a), -EPERM);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("images/tiny"), "x", &a), -EPERM);
	box = make_box("web");
	ck_assert_int_eq(tree_mkdir(tr, box, "sub", &a), -EPERM);
	ck_assert_int_eq(tree_mkdir(tr, box, "state", &a), -EEXIST);
	r = tree_mkdir(tr, ino_of("README"), "x", &a);
	ck_assert_msg(r == -EPERM || r == -ENOTDIR, "%d", r);
	ck_assert_uint_eq(dir_count(TREE_ROOT_INO), 11);
	ck_assert_uint_eq(dir_count(box), BOX_FILES);
}
END_TEST

START_TEST(test_mkdir_no_default_image)
{
	struct tree_attr a;

	replace(&cfg.default_image, "absent");
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes"), "web", &a), -ENOENT);
	ck_assert_uint_eq(dir_count(ino_of("boxes")), 0);
	ck_assert_str_eq(cat("events"), "");
}
END_TEST

START_TEST(test_write_state_invalid)
{
	make_box("web");
	const char *before = cat("boxes/web/events");

	ck_assert_int_eq(write_str("boxes/web/state", "bogus\n"), -EINVAL);
	const char *error = cat("boxes/web/error");
	assert_has(error, "state:");
	assert_has(error, "(EINVAL)");
	assert_has(error, "bogus");
	ck_assert(error[strlen(error) - 1] == '\n');
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");

	/* States a user may not ask for, and a wrong-state request. */
	ck_assert_int_eq(write_str("boxes/web/state", "created"), -EINVAL);
	ck_assert_int_eq(write_str("boxes/web/state", "starting"), -EINVAL);
	ck_assert_int_eq(write_str("boxes/web/state", "stopped"), -EBUSY);
	assert_has(cat("boxes/web/error"), "(EBUSY)");
	ck_assert_int_eq(write_str("boxes/web/state", ""), -EINVAL);
	ck_assert_int_eq(write_str("boxes/web/state", "\n"), -EINVAL);
	ck_assert_int_eq(write_str("boxes/web/state", "running\nstopped\n"), -EINVAL);
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
	ck_assert_str_eq(cat("boxes/web/events"), before);
	assert_has(cat("boxes/web/info"), "(EINVAL)");
}
END_TEST

START_TEST(test_write_nul)
{
	make_box("web");
	ck_assert_int_eq(write_path("boxes/web/state", "run\0ning", 8), -EINVAL);
	ck_assert_int_eq(write_path("boxes/web/type", "medium\0", 7), -EINVAL);
	ck_assert_int_eq(write_path("boxes/web/type", "\0", 1), -EINVAL);
	assert_has(cat("boxes/web/error"), "type:");
	assert_has(cat("boxes/web/error"), "(EINVAL)");
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
	ck_assert_str_eq(cat("boxes/web/type"), "small\n");
}
END_TEST

START_TEST(test_start_fails)
{
	make_box("web");
	/* The runtime is /bin/false: starting fails and nothing changes. */
	ck_assert_int_eq(write_str("boxes/web/state", "running\n"), -EIO);
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
	const char *error = cat("boxes/web/error");
	assert_has(error, "state:");
	assert_has(error, "(EIO)");
	ck_assert(!has(cat("boxes/web/events"), "started"));
	ck_assert(!has(cat("events"), "started"));

	/* The box is not left busy: other writes still work. */
	ck_assert_int_eq(write_str("boxes/web/type", "medium"), 0);
	ck_assert_int_eq(write_str("boxes/web/state", "running"), -EIO);
	ck_assert_int_eq(tree_rmdir(tr, ino_of("boxes"), "web", NULL), 0);
}
END_TEST

START_TEST(test_write_type_invalid)
{
	make_box("web");
	ck_assert_int_eq(write_str("boxes/web/type", "nope"), -EINVAL);
	ck_assert_str_eq(cat("boxes/web/type"), "small\n");
	assert_has(cat("boxes/web/error"), "type:");
	assert_has(cat("boxes/web/error"), "(EINVAL)");
	/* The reason names the types there are. */
	assert_has(cat("boxes/web/error"),
		   "type: unknown type \"nope\": types are small, medium, large (EINVAL)");
}
END_TEST

/* `error` is the last failure of a file until that file is written
 * successfully; a success of another file leaves it. */
START_TEST(test_error_cleared)
{
	char id[NAME_MAX_LEN + 1], path[128], label[300];
	struct tree_attr a;
	pd_error err = {0};

	make_box("web");
	ck_assert_int_eq(write_str("boxes/web/type", "nope"), -EINVAL);
	assert_has(cat("boxes/web/error"), " type: ");
	ck_assert_int_eq(write_str("boxes/web/ttl", "60"), 0);
	ck_assert_int_eq(write_str("boxes/web/volumes", ""), 0);
	assert_has(cat("boxes/web/error"), " type: ");
	assert_has(cat("boxes/web/info"), " type: ");
	ck_assert_int_eq(write_str("boxes/web/type", "medium"), 0);
	ck_assert_str_eq(cat("boxes/web/error"), "");
	assert_has(cat("boxes/web/info"), "\"error\":\"\"");

	/* Another file's failure, then a success of the first file. */
	ck_assert_int_eq(write_str("boxes/web/ttl", "soon"), -EINVAL);
	ck_assert_int_eq(write_str("boxes/web/type", "large"), 0);
	assert_has(cat("boxes/web/error"), " ttl: ");
	ck_assert_int_eq(write_str("boxes/web/ttl", "none"), 0);
	ck_assert_str_eq(cat("boxes/web/error"), "");

	/* A list file. */
	ck_assert_int_eq(write_str("boxes/web/volumes", "nosuch\n"), -ENOENT);
	assert_has(cat("boxes/web/error"), " volumes: ");
	ck_assert_int_eq(write_str("boxes/web/volumes", "\n"), 0);
	ck_assert_str_eq(cat("boxes/web/error"), "");

	/* A job's file is its own: exec/a/cwd, not exec/b/cwd nor exec/a. */
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes/web/exec"), "a", &a), 0);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes/web/exec"), "b", &a), 0);
	ck_assert_int_eq(write_str("boxes/web/exec/a/cwd", "relative"), -EINVAL);
	assert_has(cat("boxes/web/error"), " exec/a/cwd: ");
	ck_assert_int_eq(write_str("boxes/web/exec/b/cwd", "/tmp"), 0);
	ck_assert_int_eq(write_str("boxes/web/exec/a/env", "A=1\n"), 0);
	assert_has(cat("boxes/web/error"), " exec/a/cwd: ");
	ck_assert_int_eq(write_str("boxes/web/exec/a/cwd", "/tmp"), 0);
	ck_assert_str_eq(cat("boxes/web/error"), "");

	/* A snapshot's label. */
	ck_assert_int_eq(engine_box_snapshot(eng, box_id("web"), "one", id, sizeof id, &err), 0);
	snprintf(path, sizeof path, "snapshots/%s/label", id);
	memset(label, 'x', sizeof label - 1);
	label[sizeof label - 1] = '\0';
	ck_assert_int_eq(write_str(path, label), -EINVAL);
	snprintf(path, sizeof path, "snapshots/%s/error", id);
	assert_has(cat(path), " label: ");
	snprintf(path, sizeof path, "snapshots/%s/label", id);
	ck_assert_int_eq(write_str(path, "two"), 0);
	snprintf(path, sizeof path, "snapshots/%s/error", id);
	ck_assert_str_eq(cat(path), "");
}
END_TEST

START_TEST(test_write_image_invalid)
{
	make_box("web");
	ck_assert_int_eq(write_str("boxes/web/image", "missing"), -ENOENT);
	ck_assert_str_eq(cat("boxes/web/image"), "tiny\n");
	assert_has(cat("boxes/web/error"), "image:");
	assert_has(cat("boxes/web/error"), "(ENOENT)");
	ck_assert_int_eq(write_str("boxes/web/image", "Bad/Name"), -EINVAL);
	ck_assert_str_eq(cat("boxes/web/image"), "tiny\n");
}
END_TEST

/* What a client or a box wrote, echoed in an error or written as a label:
 * stored valid UTF-8 without control characters, and `info` stays JSON. */
static void assert_clean_text(const char *s)
{
	size_t len = strlen(s);

	ck_assert_msg(utf8_valid(s, len), "not UTF-8: %s", s);
	for (size_t i = 0; i < len; i++)
		ck_assert_msg(((unsigned char)s[i] >= 0x20 && s[i] != 0x7f) ||
				  (s[i] == '\n' && i == len - 1),
			      "control byte 0x%02x at %zu", (unsigned char)s[i], i);
	ck_assert_ptr_null(strstr(s, "\xc2\x9b")); /* C1 control, valid UTF-8 */
}

static const char hostile[] = "x\x1b[31m\xc2\x9b\xff\xfe";
static const char hostile_shown[] = "x\\x1b[31m\\xc2\\x9b\\xff\\xfe";

START_TEST(test_error_text_hostile)
{
	json_error_t je;
	const char *error, *info;
	json_t *j;

	make_box("web");
	ck_assert_int_eq(write_str("boxes/web/type", hostile), -EINVAL);
	error = cat("boxes/web/error");
	assert_clean_text(error);
	assert_has(error, hostile_shown);
	assert_has(error, "(EINVAL)");

	info = cat("boxes/web/info");
	j = json_loads(info, 0, &je);
	ck_assert_msg(j != NULL, "info is not JSON (%s): %s", je.text, info);
	const char *e = json_string_value(json_object_get(j, "error"));
	ck_assert_ptr_nonnull(e);
	assert_clean_text(e);
	ck_assert_int_eq(strncmp(e, error, strlen(e)), 0);
	json_decref(j);

	/* A reason so long that escaping overflows the line keeps its end. */
	char big[400];
	memset(big, 0x1b, sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ck_assert_int_eq(write_str("boxes/web/type", big), -EINVAL);
	error = cat("boxes/web/error");
	assert_clean_text(error);
	assert_has(error, "(EINVAL)\n");
}
END_TEST

START_TEST(test_error_text_old_row)
{
	struct store *s;
	struct box_row row;
	pd_error err = {0};
	char db[512];
	json_t *j;

	make_box("web");
	tr = tree_free(tr);
	eng = engine_free(eng);
	/* An error recorded raw, as before errors were sanitized. */
	snprintf(db, sizeof db, "%s/paddock.db", cfg.data);
	ck_assert_int_eq(store_open(db, &s, &err), 0);
	ck_assert_int_eq(store_box_get(s, 1, &row), 0);
	snprintf(row.error, sizeof row.error, "2026-01-01T00:00:00Z type: %s (EINVAL)", hostile);
	ck_assert_int_eq(store_box_update(s, &row, &err), 0);
	store_close(s);
	ck_assert_int_eq(engine_new(&cfg, "/bin/true", &eng, &err), 0);
	ck_assert_int_eq(tree_new(eng, &tr), 0);

	assert_clean_text(cat("boxes/web/error"));
	j = json_loads(cat("boxes/web/info"), 0, NULL);
	ck_assert_ptr_nonnull(j);
	assert_clean_text(json_string_value(json_object_get(j, "error")));
	json_decref(j);
}
END_TEST

START_TEST(test_label_hostile)
{
	char id[NAME_MAX_LEN + 1], path[128], label[ENGINE_SNAPSHOT_LABEL_MAX + 1];
	struct snapshot_view sv;
	struct volume_view vv;
	pd_error err = {0};

	make_box("web");
	ck_assert_int_eq(engine_box_snapshot(eng, box_id("web"), hostile, id, sizeof id, &err), 0);
	snprintf(path, sizeof path, "snapshots/%s/label", id);
	assert_clean_text(cat(path));
	assert_has(cat(path), hostile_shown);

	ck_assert_int_eq(write_str(path, "again \x1b]0;title\x07"), 0);
	assert_clean_text(cat(path));
	assert_has(cat(path), "again \\x1b]0;title\\x07");

	/* The limit counts the label as stored: 100 bytes that are not UTF-8
	 * become 400. */
	memset(label, 0xff, 100);
	label[100] = '\0';
	ck_assert_int_eq(engine_snapshot_set_label(eng, id, label, &err), -EINVAL);
	assert_has(cat(path), "again");

	/* A snapshot's and a volume's error. */
	pd_error_set(&err, -EINVAL, "bad %s", hostile);
	engine_snapshot_record_error(eng, id, "label", &err);
	ck_assert_int_eq(engine_snapshot_get(eng, id, &sv), 0);
	assert_clean_text(sv.error);
	assert_has(sv.error, hostile_shown);
	ck_assert_int_eq(tree_mkdir(tr, ino_of("volumes"), "vol", &(struct tree_attr){0}), 0);
	ck_assert_int_eq(engine_volume_get(eng, "vol", &vv), 0);
	engine_volume_record_error(eng, vv.id, "import", &err);
	ck_assert_int_eq(engine_volume_get(eng, "vol", &vv), 0);
	assert_clean_text(vv.error);
	assert_has(vv.error, hostile_shown);
}
END_TEST

START_TEST(test_open_readonly_for_write)
{
	static const char *const ro[] = {"README",
					 "version",
					 "events",
					 "types/small",
					 "images/tiny/size",
					 "boxes/web/usage",
					 "boxes/web/created",
					 "boxes/web/info",
					 "boxes/web/error",
					 "boxes/web/events"};
	struct tree_file *f = NULL;

	make_box("web");
	for (size_t i = 0; i < ELEMENTSOF(ro); i++) {
		ck_assert_msg(tree_open(tr, ino_of(ro[i]), O_WRONLY, &f, NULL) == -EACCES, "%s",
			      ro[i]);
		ck_assert_msg(tree_open(tr, ino_of(ro[i]), O_RDWR, &f, NULL) == -EACCES, "%s",
			      ro[i]);
		ck_assert_msg(tree_truncate(tr, ino_of(ro[i]), 0) == -EACCES, "%s", ro[i]);
	}
	ck_assert_int_eq(tree_open(tr, ino_of("boxes"), O_RDONLY, &f, NULL), -EISDIR);
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web"), O_RDONLY, &f, NULL), -EISDIR);
	ck_assert_int_eq(tree_truncate(tr, ino_of("boxes"), 0), -EISDIR);
	ck_assert_str_eq(cat("boxes/web/error"), "");
}
END_TEST

START_TEST(test_temp_bad_rename)
{
	uint64_t box = make_box("web"), other = make_box("db");
	struct tree_attr a;

	write_temp(box, "type.tmp", "no-such-type\n");
	ck_assert_int_eq(tree_rename(tr, box, "type.tmp", box, "type"), -EINVAL);
	ck_assert_str_eq(cat("boxes/web/type"), "small\n");
	assert_has(cat("boxes/web/error"), "type:");
	/* A failed rename changes nothing: the temp is still there. */
	ck_assert(dir_has(box, "type.tmp", NULL));

	/* An empty temp is no value either. */
	struct tree_file *f = create_temp(box, "empty");
	tree_release(tr, f);
	ck_assert_int_eq(tree_rename(tr, box, "empty", box, "state"), -EINVAL);
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");

	/* Over a read-only file; into another directory. */
	write_temp(box, "u.tmp", "1");
	ck_assert_int_eq(tree_rename(tr, box, "u.tmp", box, "usage"), -EACCES);
	ck_assert_int_eq(tree_rename(tr, box, "u.tmp", other, "type"), -EXDEV);
	ck_assert_int_eq(tree_rename(tr, box, "u.tmp", TREE_ROOT_INO, "README"), -EXDEV);
	ck_assert_int_eq(tree_lookup(tr, box, "u.tmp", &a), 0);
	ck_assert_str_eq(cat("boxes/db/type"), "small\n");
}
END_TEST

START_TEST(test_rename_box_file)
{
	uint64_t box = make_box("web"), boxes = ino_of("boxes");

	ck_assert_int_eq(tree_rename(tr, box, "state", box, "other"), -EPERM);
	ck_assert_int_eq(tree_rename(tr, box, "type", box, "state"), -EPERM);
	ck_assert_int_eq(tree_rename(tr, boxes, "web", boxes, "www"), -EPERM);
	ck_assert_int_eq(tree_rename(tr, TREE_ROOT_INO, "README", TREE_ROOT_INO, "x"), -EPERM);
	ck_assert_int_eq(tree_rename(tr, box, "missing", box, "type"), -ENOENT);
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
	ck_assert(dir_has(boxes, "web", NULL));
	ck_assert(dir_has(box, "state", NULL));
}
END_TEST

START_TEST(test_create_errors)
{
	uint64_t box = make_box("web");
	struct tree_attr a;
	struct tree_file *f = NULL;
	char long_name[300];

	/* Temps live only in box directories. */
	ck_assert_int_eq(tree_create(tr, TREE_ROOT_INO, "x", O_WRONLY | O_CREAT, &a, &f), -EACCES);
	ck_assert_int_eq(tree_create(tr, ino_of("boxes"), "x", O_WRONLY | O_CREAT, &a, &f),
			 -EACCES);
	ck_assert_int_eq(tree_create(tr, ino_of("types"), "x", O_WRONLY | O_CREAT, &a, &f),
			 -EACCES);
	/* O_EXCL on an existing name. */
	ck_assert_int_eq(tree_create(tr, box, "state", O_WRONLY | O_CREAT | O_EXCL, &a, &f),
			 -EEXIST);
	write_temp(box, "t", "x");
	ck_assert_int_eq(tree_create(tr, box, "t", O_WRONLY | O_CREAT | O_EXCL, &a, &f), -EEXIST);
	/* An existing read-only file. */
	ck_assert_int_eq(tree_create(tr, box, "usage", O_WRONLY | O_CREAT, &a, &f), -EACCES);
	/* Too long a name. */
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	ck_assert_int_eq(tree_create(tr, box, long_name, O_WRONLY | O_CREAT, &a, &f),
			 -ENAMETOOLONG);
	ck_assert_uint_eq(dir_count(box), BOX_FILES + 1);
}
END_TEST

START_TEST(test_create_in_deleted_box)
{
	/* Regression: a temp could be created in the directory of a box
	 * that no longer exists (FUSE sends such a create when the box was
	 * deleted behind the kernel's back while a shell sat in its
	 * directory); it was invisible and never freed. Expected -ENOENT. */
	uint64_t box = make_box("web");
	struct tree_attr a;
	struct tree_file *f = NULL;

	ck_assert_int_eq(tree_rmdir(tr, ino_of("boxes"), "web", NULL), 0);
	int r = tree_create(tr, box, "x.tmp", O_WRONLY | O_CREAT, &a, &f);
	if (r == 0)
		tree_release(tr, f);
	ck_assert_int_eq(r, -ENOENT);
}
END_TEST

START_TEST(test_unlink_errors)
{
	uint64_t box = make_box("web");

	ck_assert_int_eq(tree_unlink(tr, box, "state"), -EPERM);
	ck_assert_int_eq(tree_unlink(tr, box, "missing"), -ENOENT);
	ck_assert_int_eq(tree_unlink(tr, TREE_ROOT_INO, "README"), -EPERM);
	ck_assert_int_eq(tree_unlink(tr, ino_of("boxes"), "web"), -EISDIR);
	ck_assert_str_eq(cat("boxes/web/state"), "created\n");
}
END_TEST

/* A failed call hands back the line it recorded in the object's error file
 * (the same bytes), a success clears what the caller passed, and a failure
 * that records nothing leaves code 0 for the adapter to say the errno. */
START_TEST(test_error_travels)
{
	struct tree_error te = {.code = 1, .text = "stale"};
	struct tree_file *f;
	char want[TREE_ERROR_MAX + 2];

	make_box("web");
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/type"), O_WRONLY, &f, &te), 0);
	ck_assert_int_eq(te.code, 0);
	ck_assert_int_eq(tree_write(tr, f, 0, "huge\n", 5, &te), -EINVAL);
	ck_assert_int_eq(te.code, -EINVAL);
	snprintf(want, sizeof want, "%s\n", te.text);
	ck_assert_str_eq(cat("boxes/web/error"), want);
	ck_assert(has(te.text, " type: ") && has(te.text, "huge") && has(te.text, "(EINVAL)"));
	ck_assert_int_eq(tree_write(tr, f, 0, "small\n", 6, &te), 0);
	ck_assert_int_eq(te.code, 0);
	ck_assert_str_eq(te.text, "");
	tree_release(tr, f);

	/* Another file's failure in between does not change what this one got. */
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/ttl"), O_WRONLY, &f, NULL), 0);
	ck_assert_int_eq(tree_write(tr, f, 0, "soon\n", 5, &te), -EINVAL);
	ck_assert_int_eq(write_str("boxes/web/state", "bogus\n"), -EINVAL);
	ck_assert(has(te.text, " ttl: ") && !has(te.text, "state"));
	ck_assert(has(cat("boxes/web/error"), " state: "));
	tree_release(tr, f);

	/* A read refused with a reason (exit of a job not started). */
	ck_assert_int_eq(tree_mkdir(tr, ino_of("boxes/web/exec"), "j", &(struct tree_attr){0}), 0);
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/exec/j/exit"), O_RDONLY, &f, &te), -EBUSY);
	ck_assert(has(te.text, " exec/j/exit: job j has not started"));
	ck_assert(has(te.text, "(EBUSY)"));

	/* rmdir's refusal, and a failure with nothing recorded. */
	ck_assert_int_eq(tree_rmdir(tr, ino_of("boxes"), "missing", &te), -ENOENT);
	ck_assert_int_eq(te.code, 0);
	ck_assert_int_eq(tree_open(tr, ino_of("boxes/web/created"), O_WRONLY, &f, &te), -EACCES);
	ck_assert_int_eq(te.code, 0);
}
END_TEST

START_TEST(test_rmdir_errors)
{
	uint64_t boxes = ino_of("boxes");

	ck_assert_int_eq(tree_rmdir(tr, boxes, "missing", NULL), -ENOENT);
	ck_assert_int_eq(tree_rmdir(tr, boxes, "Bad", NULL), -ENOENT);
	ck_assert_int_eq(tree_rmdir(tr, TREE_ROOT_INO, "types", NULL), -EPERM);
	ck_assert_int_eq(tree_rmdir(tr, TREE_ROOT_INO, "README", NULL), -ENOTDIR);
	ck_assert_int_eq(tree_rmdir(tr, ino_of("images"), "tiny", NULL), -EPERM);
	make_box("web");
	ck_assert_int_eq(tree_rmdir(tr, ino_of("boxes/web"), "state", NULL), -ENOTDIR);
	ck_assert_int_eq(tree_rmdir(tr, boxes, "web", NULL), 0);
	ck_assert_int_eq(tree_rmdir(tr, boxes, "web", NULL), -ENOENT);
	ck_assert(dir_has(TREE_ROOT_INO, "types", NULL));
	ck_assert(dir_has(ino_of("images"), "tiny", NULL));
}
END_TEST

START_TEST(test_lookup_errors)
{
	struct tree_attr a;
	char long_name[300];
	struct tree_entry *es = NULL;
	size_t n = 0;

	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	ck_assert_int_eq(tree_lookup(tr, TREE_ROOT_INO, long_name, &a), -ENAMETOOLONG);
	ck_assert_int_eq(tree_lookup(tr, TREE_ROOT_INO, "nothing", &a), -ENOENT);
	ck_assert_int_eq(tree_lookup(tr, ino_of("README"), "x", &a), -ENOTDIR);
	ck_assert_int_eq(tree_lookup(tr, ino_of("types/small"), "x", &a), -ENOTDIR);
	ck_assert_int_eq(tree_lookup(tr, ino_of("images/tiny/size"), "x", &a), -ENOTDIR);
	ck_assert_int_eq(tree_lookup(tr, ino_of("boxes"), "Bad", &a), -ENOENT);
	ck_assert_int_eq(tree_lookup(tr, ino_of("images"), "none", &a), -ENOENT);
	ck_assert_int_eq(tree_lookup(tr, ino_of("types"), "none", &a), -ENOENT);
	ck_assert_int_eq(tree_resolve(tr, "boxes/../README", &a), -EINVAL);
	ck_assert_int_eq(tree_resolve(tr, "./README", &a), -EINVAL);
	ck_assert_int_eq(tree_resolve(tr, "README/x", &a), -ENOTDIR);
	ck_assert_int_eq(tree_getattr(tr, 0, &a), -ENOENT);
	ck_assert_int_eq(tree_getattr(tr, 9999, &a), -ENOENT);
	ck_assert_int_eq(tree_getattr(tr, UINT64_MAX, &a), -ENOENT);
	ck_assert_int_eq(tree_readdir(tr, ino_of("README"), &es, &n), -ENOTDIR);
	ck_assert_int_eq(tree_readdir(tr, ino_of("types/small"), &es, &n), -ENOTDIR);
	ck_assert_int_eq(tree_readdir(tr, ino_of("images/tiny/size"), &es, &n), -ENOTDIR);
	ck_assert_int_eq(tree_readdir(tr, 9999, &es, &n), -ENOENT);
}
END_TEST

static Suite *tree_suite(void)
{
	Suite *s = suite_create("tree");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_root);
	tcase_add_test(tc, test_readme);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_types);
	tcase_add_test(tc, test_images);
	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_mkdir_box);
	tcase_add_test(tc, test_write_type);
	tcase_add_test(tc, test_write_image_same);
	tcase_add_test(tc, test_write_image_change);
	tcase_add_test(tc, test_usage_disk);
	tcase_add_test(tc, test_restart_keeps_boxes);
	tcase_add_test(tc, test_truncate_control);
	tcase_add_test(tc, test_free_open_files);
	tcase_add_test(tc, test_temp_rename);
	tcase_add_test(tc, test_temp_listing_unlink);
	tcase_add_test(tc, test_temp_to_temp_rename);
	tcase_add_test(tc, test_create_existing_control);
	tcase_add_test(tc, test_events_box);
	tcase_add_test(tc, test_events_global);
	tcase_add_test(tc, test_events_end_race);
	tcase_add_test(tc, test_rmdir);
	tcase_add_test(tc, test_rmdir_ends_stream);
	tcase_add_test(tc, test_tokens);
	tcase_add_test(tc, test_exec_last_nodes);
	tcase_add_test(tc, test_temps_where_writable);
	tcase_add_test(tc, test_temp_rename_exec_new);
	tcase_add_test(tc, test_temp_volume_spool);
	tcase_add_test(tc, test_temp_goes_with_job);
	tcase_add_test(tc, test_unstarted_job_reads);
	suite_add_tcase(s, tc);

	tc = tcase_create("kernel cache");
	tcase_add_checked_fixture(tc, setup_mount, teardown_mount);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_mount_box_changed_elsewhere);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_name_lengths);
	tcase_add_test(tc, test_temp_count);
	tcase_add_test(tc, test_temp_size);
	tcase_add_test(tc, test_value_length);
	tcase_add_test(tc, test_many_boxes);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_mkdir_invalid_names);
	tcase_add_test(tc, test_mkdir_duplicate);
	tcase_add_test(tc, test_mkdir_elsewhere);
	tcase_add_test(tc, test_mkdir_no_default_image);
	tcase_add_test(tc, test_write_state_invalid);
	tcase_add_test(tc, test_write_nul);
	tcase_add_test(tc, test_start_fails);
	tcase_add_test(tc, test_write_type_invalid);
	tcase_add_test(tc, test_error_cleared);
	tcase_add_test(tc, test_write_image_invalid);
	tcase_add_test(tc, test_error_text_hostile);
	tcase_add_test(tc, test_error_text_old_row);
	tcase_add_test(tc, test_label_hostile);
	tcase_add_test(tc, test_open_readonly_for_write);
	tcase_add_test(tc, test_temp_bad_rename);
	tcase_add_test(tc, test_rename_box_file);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_create_in_deleted_box);
	tcase_add_test(tc, test_unlink_errors);
	tcase_add_test(tc, test_rmdir_errors);
	tcase_add_test(tc, test_error_travels);
	tcase_add_test(tc, test_lookup_errors);
	suite_add_tcase(s, tc);

	return s;
}

/* Can this machine mount an overlay (every box needs one)? */
static bool overlay_works(void)
{
	char d[128], l[160], u[160], w[160], m[160], opts[600];
	bool ok;

	snprintf(d, sizeof(d), "%s/probe", base);
	snprintf(l, sizeof(l), "%s/l", d);
	snprintf(u, sizeof(u), "%s/u", d);
	snprintf(w, sizeof(w), "%s/w", d);
	snprintf(m, sizeof(m), "%s/m", d);
	if (mkdir_p(l, 0755) < 0 || mkdir_p(u, 0755) < 0 || mkdir_p(w, 0755) < 0 ||
	    mkdir_p(m, 0755) < 0)
		return false;
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", l, u, w);
	ok = mount("overlay", m, "overlay", 0, opts) == 0;
	if (ok)
		umount2(m, MNT_DETACH);
	rm_rf(d);
	return ok;
}

int main(void)
{
	char pattern[128];
	glob_t g;
	int r;

	if (getuid() != 0) {
		printf("1..0 # SKIP needs root (boxes mount overlayfs)\n");
		return 0;
	}
	snprintf(base, sizeof(base), "/tmp/check_tree.XXXXXX");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	if (!overlay_works()) {
		rm_rf(base);
		printf("1..0 # SKIP cannot mount overlayfs here\n");
		return 0;
	}

	r = check_tap_run(tree_suite());

	/* Whatever a failed test left behind. */
	snprintf(pattern, sizeof(pattern), "%s/*", base);
	if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			char m[256];
			/* A failed "kernel cache" test skips its teardown. */
			snprintf(m, sizeof(m), "%s/mnt", g.gl_pathv[i]);
			(void)umount2(m, MNT_DETACH);
			umount_boxes(g.gl_pathv[i]);
		}
		globfree(&g);
	}
	rm_rf(base);
	return r;
}
