/* engine/internal.h - the engine's in-memory box record, shared by engine.c
 * and its unit tests. */
#pragma once

#include <jansson.h>
#include <pthread.h>

#include "engine/access.h"
#include "engine/agents.h"
#include "engine/auth.h"
#include "net/dns.h"
#include "engine/engine.h"
#include "common/hmap.h"
#include "engine/desktop-input.h"
#include "engine/jobs.h"
#include "engine/prompts.h"
#include "engine/shot.h"
#include "common/lock.h"
#include "net/policy.h"
#include "runtime/runtime.h"

/* An address a box's lookup of name returned, allowed until expires
 * (CLOCK_MONOTONIC seconds). name is NULL when read back from the kernel. */
struct net_name {
	uint32_t addr;
	int64_t expires;
	char *name;
};

/* The last disk walk of a box's files or a volume's, shared by every
 * reader (eng_du_cached()). Engine lock held for every field. */
struct du_cache {
	uint64_t bytes;
	unsigned long long checked_usec; /* when the last walk began; 0: never */
	bool walking;			 /* a walk runs, outside the lock */
	/* Tar pushes (engine_box_push_*()): how many run, what they count
	 * as in use (measured when the first began, plus what finished ones
	 * wrote), what they hold, when that run of pushes began, and when a
	 * push last ended: a walk that began before then may miss its files. */
	unsigned pushes;
	uint64_t push_base, push_held;
	unsigned long long push_since_usec, push_ended_usec;
};

struct box {
	struct box_row row; /* what the store holds */
	/* In the engine's indexes (e->by_name, e->by_id), while in its table. */
	struct hmap_node by_name, by_id;
	enum box_state state;
	pid_t pid;
	bool busy;     /* a slow action runs outside the lock */
	bool deleting; /* rmdir in progress */
	/* Its TTL expired and its stop is under way or failed: the timer
	 * tries again then (row.expires stays set until the stop worked). */
	time_t expire_retry;
	struct du_cache disk; /* its upper (its own changes) */
	/* Its cgroup's CPU time, sampled every second by the timer thread
	 * while it runs (usage's cpu_percent). */
	struct cgroup_cpu_window cpu;
	struct policy policy; /* network policy in force (engine-net.c) */
	/* Addresses the box's allowed lookups returned (engine-dns.c). */
	struct net_name *names;
	size_t n_names;
	uint64_t names_gen; /* moves on when the list is filtered or dropped */
	/* No name in the list expires before this (0: not known). */
	int64_t names_expiry;
	uint64_t lxcfs_gen; /* lxcfs generation of the views it holds; 0: none */
	/* Its link and rules being made during its start (engine-net.c). */
	struct eng_net_up *net_up;
	/* Its desktop's supervisor thread while there is one (desktop.c). */
	struct eng_desk *desk;
	/* Its dockerd's supervisor thread while there is one (docker.c). */
	struct eng_dock *dock;
	/* Its published ports (ports.c). */
	struct port_list ports;
};

struct engine {
	const struct pd_config *cfg;
	struct pd_access access; /* who may use the tree (access.h) */
	struct store *store;
	/* The layer collector's own connection (eng_gc()): its reads of every
	 * row run outside the engine lock, and it checkpoints the database
	 * outside it too. gc_lock: one collection at a time (it guards
	 * gc_store and gc_checkpoint_usec); taken with no lock held, e->lock
	 * under it. gc_store is NULL if it could not be opened (the reads
	 * then run under e->lock on store). */
	struct store *gc_store;
	struct pd_mutex gc_lock;
	uint64_t gc_checkpoint_usec;
	struct auth *auth; /* its own lock and database connection */
	struct runtime *rt;
	bool rt_borrowed; /* engine_new_on()'s: the caller frees it */
	/* The engine lock (lock.h has the order of every lock). Never held
	 * across slow work: see struct box's busy and du_cache's walking. */
	struct pd_mutex lock;
	struct box **boxes;
	size_t n_boxes;
	/* The same boxes by name and by id (eng_find_box(), eng_find_box_id()). */
	struct hmap by_name, by_id;
	char *images_dir;
	char *boxes_dir;
	char *layers_dir;  /* DATA/layers: L<ID> frozen layers */
	char *snapmnt_dir; /* RUN/snapshots: read-only mounts of snapshot roots */
	char *roots_dir;   /* RUN/roots: the boxes' root mounts (eng_box_root) */
	char *trash_dir;   /* DATA/trash: deleted boxes' files, being removed */
	/* The disk limit (engine-disk.c): templates of the boxes' images,
	 * read-only mounts of frozen ones, and whether new writable layers
	 * are images (disk_limit on, and the host can loop mount). */
	char *templates_dir; /* DATA/disk-templates */
	char *layermnt_dir;  /* RUN/layers: L<ID> mounts of image layers */
	bool disk_images;
	char *events_path;
	int events_fd; /* global log, O_APPEND */
	/* Wake listeners (the FUSE adapter, the HTTP adapter), called one
	 * after another under wake_lock, which nests inside e->lock (lock.h):
	 * a listener must not take e->lock. */
	struct pd_mutex wake_lock;
	struct {
		engine_wake_fn fn;
		void *data;
	} wake[ENGINE_WAKE_MAX];
	engine_box_fn box_hook;
	void *box_hook_data;

	struct job **jobs;
	size_t n_jobs;
	/* The same jobs by (box id, name) and by id (jobs.c). */
	struct hmap jobs_by_name, jobs_by_id;
	int inotify_fd;
	int inotify_stop; /* eventfd: ends the inotify thread */
	pthread_t inotify_thread;
	bool inotify_started;

	/* owners.c: a fanotify group on the boxes' root/ views. */
	int owners_fd;
	int owners_stop;  /* eventfd: ends its thread */
	int owners_flush; /* eventfd: eng_owners_flush() asks */
	pthread_t owners_thread;
	bool owners_started;
	struct pd_mutex owners_lock; /* LEAF: the two counts below */
	pthread_cond_t owners_cond;
	uint64_t owners_asked, owners_done; /* flushes asked and done */

	struct volumes *volumes; /* volumes.c */
	/* secrets.c: the key that seals the secrets (sodium_malloc'd,
	 * read-only after engine_new()). */
	unsigned char *secrets_key;
	/* Ids of the snapshots being exported, one per running export
	 * (snapshots.c): rmdir of those is -EBUSY. */
	char **snap_exports;
	size_t n_snap_exports;

	struct dns *dns;     /* the boxes' resolver (engine-dns.c) */
	struct lxcfs *lxcfs; /* the boxes' /proc views, or NULL (engine-lxcfs.c) */

	/* desktop.c: supervisor threads running, and their changes
	 * (broadcast; CLOCK_MONOTONIC). */
	unsigned desk_threads;
	pthread_cond_t desk_cond;
	/* docker.c: its supervisor threads running (their ends broadcast
	 * desk_cond too). */
	unsigned dock_threads;

	pthread_t timer;
	bool timer_started;
	uint64_t cpu_sampled_usec; /* the timer's last CPU sampling round */
	bool stopping;
	pthread_cond_t timer_cond; /* signalled when a deadline changes */
	pthread_cond_t du_cond;	   /* broadcast when a disk walk ends */
	unsigned trash_busy;	   /* threads emptying trash_dir (e->lock) */
	pthread_cond_t trash_cond; /* broadcast when one ends */
	/* Exports (snapshots' and volumes') whose release has not run yet:
	 * their threads may still call back into the engine (e->lock). */
	unsigned exports_busy;
	pthread_cond_t exports_cond; /* broadcast when one is released */
};

/* An export's release ran: the last use of the engine by its threads
 * (engine lock not held). */
void eng_export_released(struct engine *e);

/* Shared with jobs.c. Engine lock held for all but eng_wake(). */
void eng_box_path(const struct engine *e, const struct box *b, const char *sub, char *buf,
		  size_t bufsz);
void eng_box_root(const struct engine *e, const struct box *b, char *buf, size_t bufsz);
struct box *eng_find_box(struct engine *e, const char *name);
struct box *eng_find_box_id(struct engine *e, int64_t id);
/* Box id unless it is gone or being deleted (NULL): what an action on an
 * existing box looks up. eng_box_gone() says why in err (-ENOENT). */
struct box *eng_live_box(struct engine *e, int64_t id);
int eng_box_gone(pd_error *err);
void eng_emit(struct engine *e, struct box *b, const char *fmt, ...) _printf_(3, 4);
void eng_wake(struct engine *e, uint64_t key);
int eng_save_box(struct engine *e, struct box *b, const char *marker, pd_error *err);
/* An `error` line, "TIME FILE: reason (ERRNO)", in buf: valid UTF-8
 * without control characters whatever bytes the reason echoes (a box's or
 * a client's: text_printable()), cut to fit at a character boundary, the
 * errno name always kept. err NULL records a success of FILE instead: buf
 * is emptied when the line in it is FILE's, another file's stays. Returns
 * whether buf changed. */
bool eng_format_error(const char *file, const pd_error *err, char *buf, size_t bufsz);
/* The box table and filesystems (engine.c). Engine lock held for
 * eng_claim() and eng_add_box(); the mount helpers need no lock but the
 * box must be busy (claimed) or not yet shared. */
int eng_claim(struct engine *e, int64_t id, struct box **ret, pd_error *err);
int eng_add_box(struct engine *e, struct box *b);
int eng_make_box_dirs(struct engine *e, struct box *b, pd_error *err);
bool eng_is_mountpoint(const char *path);
/* Binds src at dst (made 0755 if missing) with nosuid and nodev, unless
 * dst is a mount already: the host's view of a box's root or a volume's
 * data, for the members of the group (eng_box_root). eng_unbind_view
 * detaches it when it cannot simply be unmounted. */
int eng_bind_view(const char *src, const char *dst, pd_error *err);
void eng_unbind_view(const char *dst);
/* The lower layers of an overlay: the option text "lowerdir=...", and
 * the detached id-mapped trees it names (/proc/self/fd/N), open until
 * eng_lowers_release() (after the mount). */
struct eng_lowers {
	char *opt;
	int fds[LAYER_STACK_DEPTH_MAX + 1];
	size_t n_fds;
};
/* A stack over an image, each layer seen in range `base` (idmap.h): a
 * layer written in another range (the image's is 0) through an id-mapped
 * copy, one in `base` as it is. */
int eng_lowerdir(const struct engine *e, const char *stack, const char *image, uint32_t base,
		 struct eng_lowers *ret, pd_error *err);
void eng_lowers_release(struct eng_lowers *l);
/* RUN/userns/NAME: the box's user namespace, bound for the runtime to join
 * while its network (which that namespace owns) is up. */
void eng_net_userns_path(const struct engine *e, const struct box *b, char *buf, size_t bufsz);
/* owners.c: files written through a box's root/ view become the box's. */
int eng_owners_start(struct engine *e);
void eng_owners_stop(struct engine *e);
void eng_owners_watch(struct engine *e, const char *view);
/* Returns once every file written through a root/ view before the call has
 * been given its owner (and the directories above it), or after a second.
 * Before a view is unmounted: the queue's events hold the files, so the
 * mount would be busy, and what is frozen has its owners. Slow: no lock
 * held. */
void eng_owners_flush(struct engine *e);
/* The range a box's files are in, where its upper is: its own, or 0 for a
 * box from before user namespaces not yet moved to one. */
uint32_t eng_box_base(const struct engine *e, const struct box *b);
int eng_mount_root(struct engine *e, struct box *b, pd_error *err);
void eng_umount_root(struct engine *e, struct box *b);
int eng_umount_root_strict(struct engine *e, struct box *b);

/* engine-disk.c: a box's writable layer in an ext4 image (the disk
 * limit). The box must be busy (claimed) or not yet shared; no lock
 * needed. */
int eng_disk_init(struct engine *e, pd_error *err);
void eng_disk_free(struct engine *e);
/* True for a directory holding nothing; false when it cannot be read. */
bool eng_dir_empty(const char *path);
/* DATA/boxes/ID/disk.img exists: its upper and work are inside it. */
bool eng_box_has_image(const struct engine *e, const struct box *b);
/* Overlay's upperdir and workdir for the box: disk/upper and disk/work
 * in its image, or upper and work. */
void eng_box_upper(const struct engine *e, const struct box *b, char *buf, size_t bufsz);
void eng_box_work(const struct engine *e, const struct box *b, char *buf, size_t bufsz);
/* Makes the box's writable layer unless it has one: a copy of its type's
 * template (fault step disk-copied between the copy and its rename into
 * place), or, limit off, upper and work directories in range base. */
int eng_make_writable(struct engine *e, struct box *b, uint32_t base, pd_error *err);
/* Mounts the box's image at DATA/boxes/ID/disk unless it is there (fault
 * step disk-mounted after), and gives a fresh one's upper to the box's
 * root. Nothing to do for a box without an image. */
int eng_mount_disk(struct engine *e, struct box *b, pd_error *err);
/* Unmounts it: -EBUSY while something holds it (its overlay). */
int eng_umount_disk(struct engine *e, struct box *b);
/* Before a freeze: its mounted image goes read-only (every write on the
 * image, nothing more can come). 1 when sealed, 0 when it was not
 * mounted (or there is no image), -errno (-EBUSY: a file open for
 * writing). eng_disk_unseal() makes it writable again (a freeze undone). */
int eng_disk_seal(struct engine *e, struct box *b);
void eng_disk_unseal(struct engine *e, struct box *b);
/* After the freeze's rename: its sealed mount becomes layer id's
 * read-only mount (RUN/layers/L<ID>), and leaves DATA/boxes/ID/disk. */
void eng_disk_to_layer(struct engine *e, struct box *b, int64_t id);
/* Unmounts it, lazily if it is held (a box being deleted). */
void eng_umount_disk_lazy(struct engine *e, struct box *b);
/* Bytes its mounted image holds (statfs); -ENOENT for no image mounted. */
int eng_disk_usage(struct engine *e, const struct box *b, uint64_t *ret);
/* Resizes its image to its type's size when they differ (a type's `disk`
 * changed): its root goes for the time of it. 1 when resized, 0 when
 * nothing was to do, or -errno (the image keeps its size). */
int eng_disk_resize(struct engine *e, struct box *b, pd_error *err);
/* The directory holding layer id's files: DATA/layers/L<ID>, or, for an
 * image layer, RUN/layers/L<ID>/upper (mounted read-only if it is not). */
int eng_layer_dir(const struct engine *e, int64_t id, char *buf, size_t bufsz, pd_error *err);
/* Unmounts an image layer's read-only mount (before it is removed). */
void eng_layer_umount(const struct engine *e, int64_t id);
/* Unmounts every one (start: they are made again on demand). */
void eng_layer_mounts_clear(const struct engine *e);

/* Disk walks. A walk's result is reused for ENG_DU_CACHE_USEC; one walk at
 * a time per box or volume, outside the engine lock. A reader that comes
 * while a walk runs gets the last result at once (it may be up to the
 * walk's duration plus ENG_DU_CACHE_USEC old), or, when there is none yet,
 * waits for that walk (the lock released meanwhile) ENG_DU_WAIT_USEC at
 * most, then gets 0 (nothing measured yet). find() looks the cache up
 * again by id once the lock was dropped: NULL when the object is gone,
 * *ret_deleting when it is being deleted (both -ENOENT to the caller; the
 * walker still marks the walk over in a cache being deleted, as the delete
 * may fail). Engine lock held on entry and on return; *c must be find(e,
 * id). A walk that fails counts as 0 bytes (a box's upper that is not
 * there holds nothing). flags: ENGINE_USAGE_NO_WALK (engine.h). */
#define ENG_DU_CACHE_USEC (5ULL * 1000 * 1000)
/* eng_du_cached() flag: never a walk that began before a push ended (the
 * reader waits for a running walk, however long, rather than take the
 * last result). */
#define ENG_DU_CURRENT (1u << 8)
#define ENG_DU_WAIT_USEC (100ULL * 1000)
typedef struct du_cache *(*eng_du_find_fn)(struct engine *e, int64_t id, bool *ret_deleting);
int eng_du_cached(struct engine *e, eng_du_find_fn find, int64_t id, const char *path,
		  unsigned flags, uint64_t *ret);

/* snapshots.c. eng_freeze_after_stop(): b is busy, its container gone; no
 * lock held. Failure leaves the box's changes in its upper (logged). */
void eng_freeze_after_stop(struct engine *e, struct box *b);
/* At start, before boxes are loaded: finishes or rolls back every recorded
 * intent. After: eng_gc(e, true). */
int eng_intents_recover(struct engine *e);
/* Removes layers no box, snapshot or intent refers to. No lock held.
 * at_start also clears L*.tmp / L*.del leftovers and snapshot mounts. */
void eng_gc(struct engine *e, bool at_start);
/* Unmounts every snapshot root (daemon stop). */
void eng_snapshot_mounts_clear(struct engine *e);

/* volumes.c, for engine.c (engine lock held unless stated). */
/* Loads the volumes at start, finishing or rolling back interrupted
 * creates and deletes. */
int eng_volumes_load(struct engine *e, pd_error *err);
void eng_volumes_free(struct engine *e);
/* The bind mounts of a box's volumes (malloc'd, NULL when none). */
int eng_volume_mounts(struct engine *e, struct box *b, struct box_mount **ret, size_t *ret_n,
		      pd_error *err);
/* Records which volumes a box was started with (engine lock not held). */
void eng_volumes_started(struct engine *e, struct box *b, const struct box_mount *m, size_t n);
/* At start, after eng_volumes_load(): a live change of a running box's
 * volumes that a crash cut short is finished. Each mount or unmount is
 * redone where it is missing; one the box prevents (a file at /mnt/NAME)
 * changes the list instead, with an event saying so. */
void eng_volumes_reconcile(struct engine *e);

/* engine-net.c. Interface names are at most 15 characters. */
#define IFNAMSIZ_PD 16
void eng_net_ifname(const struct engine *e, const struct box *b, char *buf, size_t bufsz);
int eng_net_init(struct engine *e, pd_error *err);
int eng_net_apply(struct engine *e, pd_error *err);
int eng_net_reconcile(struct engine *e, pd_error *err);
/* A box's network at its start, in two steps so that the second overlaps
 * the runtime's start of the container: eng_net_box_up() gives b (busy, no
 * lock held) its address and namespace (ret_ns: the path for the runtime)
 * and starts making its link and rules on a thread; eng_net_box_ready()
 * waits for them (0, or -errno with err set, the link and rules undone).
 * Every successful eng_net_box_up() is followed by eng_net_box_ready(),
 * and a failed start by eng_net_box_down() (the namespace). */
int eng_net_box_up(struct engine *e, struct box *b, char *ret_ns, size_t ns_sz, pd_error *err);
int eng_net_box_ready(struct engine *e, struct box *b, pd_error *err);
void eng_net_box_down(struct engine *e, struct box *b);
void eng_net_load_policy(struct engine *e, struct box *b);
/* ports.c: b's published ports from the store (engine lock held). */
void eng_ports_load(struct engine *e, struct box *b);
/* RUN/resolv.conf, bound on every box's /etc/resolv.conf. */
void eng_net_resolv_conf(const struct engine *e, char *buf, size_t bufsz);
/* Starts the boxes' resolver on the bridge address (network on). */
int eng_net_dns_start(struct engine *e, pd_error *err);

/* engine-dns.c. A looked-up address stays allowed for its record's TTL,
 * clamped to [NET_NAME_TTL_MIN, NET_NAME_TTL_MAX] seconds (a zero TTL
 * still lets the box connect right after the lookup). Engine lock held for
 * all but start and stop. */
#define NET_NAME_TTL_MIN 10
#define NET_NAME_TTL_MAX 86400
#define NET_NAMES_MAX 4096
struct nft_elem;
int eng_dns_start(struct engine *e, uint32_t listen_addr, pd_error *err);
void eng_dns_stop(struct engine *e);
void eng_dns_load(struct engine *e);
void eng_dns_forget(struct box *b);
size_t eng_dns_elems(struct box *b, struct nft_elem *out, size_t max);
int eng_dns_policy_changed(struct engine *e, struct box *b, pd_error *err);

/* engine-lxcfs.c. Start (last in engine_new) and stop (first in
 * engine_free) never fail: without lxcfs, boxes read the kernel's files.
 * eng_lxcfs_spec() fills a starting box's spec and returns the generation
 * it got; eng_lxcfs_started() (no lock held) binds newer views into a box
 * whose start raced with a new mount of lxcfs. */
struct box_spec;
void eng_lxcfs_start(struct engine *e);
void eng_lxcfs_stop(struct engine *e);
uint64_t eng_lxcfs_spec(struct engine *e, struct box_spec *spec);
void eng_lxcfs_started(struct engine *e, int64_t box_id);

/* jobs.c */
int eng_jobs_load(struct engine *e);
/* Starts following running jobs (inotify); called by engine_start_timers. */
int eng_jobs_start(struct engine *e);
void eng_jobs_stop(struct engine *e);
void eng_jobs_forget_box(struct engine *e, int64_t box_id);

/* metrics.c: counts for GET /metrics (metrics.h); callable with any lock
 * held. A box start ended (engine_box_set_state(): from the write of
 * `running` to the box running, or the start failed), ok or not, after
 * usec microseconds; only one that worked goes into the histogram, every
 * one is counted. A job start ended (its `cmd` written, to its command
 * running in the box: the supervisor started detached), including the
 * start of its box when it was created. eng_jobs_running() (jobs.c, engine
 * lock held): the jobs running, by kind, added to ret. */
void metrics_box_start(bool ok, unsigned long long usec);
void metrics_job_start(enum job_kind kind, bool ok, unsigned long long usec);
void eng_jobs_running(struct engine *e, size_t ret[2]);

/* secrets.c. init (engine_new(), after the store): loads DATA/secrets.key,
 * making it at the first start; a key file of the wrong mode or owner stops
 * the daemon (err says so). */
int eng_secrets_init(struct engine *e, pd_error *err);
void eng_secrets_free(struct engine *e);
/* The values of the secrets box_id lists, read now, as "NAME=VALUE"
 * strings (NULL-terminated vector; *ret is NULL-free even when the box
 * lists none: then { NULL }). Free with eng_secrets_env_free(), which
 * zeroes them. For a job's start (rotation: the next job sees a new
 * value). Takes the engine lock itself: call without it. */
int eng_secrets_env(struct engine *e, int64_t box_id, char ***ret, pd_error *err);
void eng_secrets_env_free(char **env);

/* --- jobs of both kinds (jobs.c), for prompts.c ----------------------------- */

/* A job being started: read under the engine lock when it was claimed. */
struct job_start {
	int64_t id, box_id;
	char dir[4096]; /* the job's directory */
	char box[NAME_MAX_LEN + 1];
	char image[NAME_MAX_LEN + 1];
	char rootfs[4096];
};

/* Reads a setting file of a job directory; NULL when not set. */
char *eng_job_setting(const char *dir, const char *file, size_t max);
/* env's check: KEY=VALUE lines, no NUL; -EINVAL "env line N: ...". */
int eng_job_check_env(const char *data, size_t len, pd_error *err);
/* The spec both kinds share: container, crun, user (user_setting, else the
 * image's default user), cwd (the job's cwd file, else the user's home),
 * env (HOME, USER, PATH, LANG, TERM, then extra_env, then the job's env
 * file), log_max, server, and "shell" (the image's shell, for the kind's
 * argv; eng_job_write_spec() drops it). */
int eng_job_spec(struct engine *e, const struct job_start *si, const char *user_setting,
		 const char *const *extra_env, json_t **ret, pd_error *err);
/* Writes spec.json into the job's directory. */
int eng_job_write_spec(const struct job_start *si, json_t *spec, pd_error *err);
/* exec/new and the box's prompt file: the kind's next numbered job,
 * started with data. */
int engine_job_new_kind(struct engine *e, int64_t box_id, enum job_kind kind, const char *data,
			size_t len, char *ret_name, size_t namesz, pd_error *err);

/* jobs.c: a user of the box (its /etc/passwd, read inside its root): by
 * name, or a bare uid. -ENOENT when there is none. No lock needed. */
int eng_box_user(const char *rootfs, const char *user, unsigned *uid, unsigned *gid, char *home,
		 size_t homesz);

/* desktop.c. Engine lock held for spawn: the box's desktop supervisor
 * thread unless it has one (adopt: a session from before a daemon restart
 * is taken over when it is still there). start_all (at start, the boxes
 * loaded) spawns one, adopting, for every running box whose desktop is on;
 * stop_all (first in engine_free) ends the threads and leaves the sessions
 * running. */
int eng_desktop_spawn(struct engine *e, struct box *b, bool adopt);
void eng_desktop_start_all(struct engine *e);
void eng_desktop_stop_all(struct engine *e);
/* supervise.c: for the threads that supervise a process in a box. spawn:
 * *wake made (an eventfd the thread may poll), then fn(arg) started in a
 * detached thread; -errno with *wake closed. nap: sleeps ms unless wake is
 * written (false then). backoff_ms: the wait before restart number
 * failures (1 s doubling, max_s at most). proc_end: SIGTERM, SIGKILL after
 * grace_ms, released. */
struct box_exec_proc;
int eng_spawn_detached(void *(*fn)(void *), void *arg, int *wake);
bool eng_nap(int wake, int ms);
int eng_backoff_ms(unsigned failures, unsigned max_s);
void eng_proc_end(struct box_exec_proc *p, int grace_ms);
/* docker.c (see there). The store's directory on the box's disk, whether
 * Docker is on for the box (its setting, else its image's), and whether
 * its store holds anything. prepare makes the store, box root's, and puts
 * its path in dir. spawn/start_all/stop_all: dockerd's supervisor threads,
 * as the desktop's. Engine lock held, except prepare (box busy). */
#define DOCKER_DIR "docker"
bool eng_image_has_docker(const struct engine *e, const char *image);
bool eng_box_docker(const struct engine *e, const struct box *b);
void eng_docker_dir(const struct engine *e, const struct box *b, char *buf, size_t bufsz);
bool eng_docker_store_empty(const struct engine *e, const struct box *b);
int eng_docker_prepare(struct engine *e, struct box *b, char *dir, size_t dirsz, pd_error *err);
int eng_docker_spawn(struct engine *e, struct box *b, bool adopt);
void eng_docker_start_all(struct engine *e);
void eng_docker_stop_all(struct engine *e);
/* Before a box's stop or deletion: ends its dockerd's supervisor thread. */
void eng_docker_box_stops(struct engine *e, struct box *b);
/* desktop-vnc.c: a connected socket to the VNC server of the box whose
 * root filesystem (on the host) is root, opened without following anything
 * the box made (desktop-vnc.h); name is the box's, for the messages. */
int eng_desktop_vnc_open(const char *root, const char *name, pd_error *err);
