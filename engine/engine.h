/* engine.h - the engine: owns every box, records state in the store, runs
 * boxes through the runtime backend. The tree (fs/tree.c) is its only
 * caller besides the daemon's main and the tests.
 *
 * Locking: one engine mutex guards the box table and the store. Slow work
 * (starting or stopping a container, deleting or copying files, crun) runs
 * outside it while the box is marked busy; any other action on a busy box
 * fails with -EBUSY. Disk walks (engine_box_usage(), volume sizes) run
 * outside it too, one at a time per box, without making the box busy.
 * common/lock.h has the order of every lock in the daemon and the debug
 * check of it. Every function here may be called from any thread, with
 * no lock of the caller's held but the FUSE adapter's park_lock.
 *
 * Ids, not names: every call on an existing box takes its id (box_view's
 * id, never reused); so do those of jobs.h and volumes.h. Names are for
 * creating and looking up (engine_box_get() gives the id). A caller that
 * kept an id across a delete gets -ENOENT, never the box made since under
 * the same name.
 *
 * Crash safety: every multi-step action records its intent in the store
 * first ("creating", "starting", "stopping", "deleting") and engine_new()
 * finishes or rolls back whatever a crash interrupted, adopting containers
 * that are still running.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "engine/box-state.h"
#include "runtime/cgroup.h"
#include "common/config.h"
#include "common/error.h"
#include "common/ports.h"
#include "runtime/image.h"
#include "store/store.h"

struct engine;

/* Called after a stream (key: a box id, or 0 for /paddock/events) grew or
 * ended. Called with no engine lock held, possibly from any thread; it must
 * not block. */
typedef void (*engine_wake_fn)(void *userdata, uint64_t key);

enum engine_box_change { ENGINE_BOX_CREATED, ENGINE_BOX_DELETED };

/* Called once a box was created or deleted (it is in, or gone from, every
 * engine_box_* answer), by the thread that made the change, with no engine
 * lock held, before engine_box_create() or engine_box_delete() returns.
 * Unlike the wake callback it may block: an adapter that caches box names
 * (the FUSE adapter: the kernel keeps boxes/NAME) drops them here, so that
 * when the call returns no client can still see a deleted box. A box
 * created again under the same name is a new box (new id). */
typedef void (*engine_box_fn)(void *userdata, enum engine_box_change change, const char *name);

struct box_view {
	int64_t id;
	char name[NAME_MAX_LEN + 1];
	enum box_state state;
	char type[NAME_MAX_LEN + 1];
	char image[NAME_MAX_LEN + 1];
	time_t created;
	pid_t pid;	/* host PID of the box's PID 1 while running */
	time_t expires; /* TTL deadline, 0 = none */
	char error[PD_ERROR_MAX + 64];
	int64_t uid_base; /* host id of its root (its range: idmap.h), 0: none */
};

#define ENGINE_CPU_WINDOW_S 5

struct box_usage {
	uint64_t cpu_usec;
	/* CPU use over the last ENGINE_CPU_WINDOW_S seconds (5 to 6: the
	 * samples are a second apart), in percent of one CPU. */
	unsigned cpu_percent;
	uint64_t memory_bytes;
	uint64_t pids;
	uint64_t disk_bytes;
};

/* Opens the state store under cfg->data, detects the runtime and reconciles
 * boxes with what is really running. init_path is the box init binary.
 * cfg must outlive the engine. */
int engine_new(const struct pd_config *cfg, const char *init_path, struct engine **ret,
	       pd_error *err);
struct engine *engine_free(struct engine *e);
/* engine_new() on a runtime backend the caller made (runtime.h: the tests'
 * in-memory one, runtime/fake.h), which it frees after engine_free();
 * engine_new() makes the crun one (rt NULL here does too). */
struct runtime;
int engine_new_on(const struct pd_config *cfg, const char *init_path, struct runtime *rt,
		  struct engine **ret, pd_error *err);

#define ENGINE_WAKE_MAX 4

/* The FUSE adapter's listener (one slot; fn NULL clears it). */
void engine_set_wake(struct engine *e, engine_wake_fn fn, void *userdata);
/* More listeners (the HTTP adapter): -ENOSPC when ENGINE_WAKE_MAX are in
 * use. Listeners are called one after another under a leaf lock; after
 * engine_remove_wake() returns, fn is not running and will not be called. */
int engine_add_wake(struct engine *e, engine_wake_fn fn, void *userdata);
void engine_remove_wake(struct engine *e, engine_wake_fn fn, void *userdata);
/* One hook (fn NULL: none). Set it before the engine is shared, clear it
 * once no other thread calls engine_box_create()/engine_box_delete(). */
void engine_set_box_hook(struct engine *e, engine_box_fn fn, void *userdata);
const struct pd_config *engine_config(const struct engine *e);
enum cgroup_mode engine_cgroup_mode(const struct engine *e);

/* Box names in creation order; free with image_list_free(). */
int engine_box_names(struct engine *e, char ***ret, size_t *ret_n);

/* A copy of a box's current fields. -ENOENT if there is no such box. */
int engine_box_get(struct engine *e, const char *name, struct box_view *ret);
int engine_box_get_by_id(struct engine *e, int64_t id, struct box_view *ret);

/* mkdir: a new box in state created with the default image, type and TTL
 * and its filesystem mounted. -EINVAL bad name, -EEXIST taken, -ENOENT the
 * default image is not installed. */
int engine_box_create(struct engine *e, const char *name, pd_error *err);

/* rmdir: stops the box if running and deletes it with its files. */
int engine_box_delete(struct engine *e, int64_t id, pd_error *err);

/* Writes of the box's control files. value is one parsed value. Each
 * returns 0 or -errno with the reason in err; a failure changes nothing. */
int engine_box_set_state(struct engine *e, int64_t id, const char *value, pd_error *err);
int engine_box_set_type(struct engine *e, int64_t id, const char *value, pd_error *err);
int engine_box_set_image(struct engine *e, int64_t id, const char *value, pd_error *err);
/* "none" or seconds (s/m/h/d suffixes): restarts the countdown. When it
 * runs out the box is stopped if running, the TTL is cleared (none) and an
 * "expired" event is emitted. Deadlines are stored, so one that passed
 * while the daemon was down fires at start. */
int engine_box_set_ttl(struct engine *e, int64_t id, const char *value, pd_error *err);

/* The box's network policy (policy.h), canonical text, malloc'd. */
int engine_box_policy(struct engine *e, int64_t id, char **ret);
/* Replaces the policy: parsed, applied to the running box's rules in one
 * nftables transaction, then recorded; a failure (-EINVAL with the line in
 * err) leaves the old policy in force. Domain entries are refused until the
 * box resolver exists. */
int engine_box_set_policy(struct engine *e, int64_t id, const char *text, size_t len,
			  pd_error *err);
/* The box's IPv4 address, "" while it has none. */
int engine_box_ip(struct engine *e, int64_t id, char *buf, size_t bufsz);

/* Starts the TTL timer thread. Call once, after engine_new(). */
int engine_start_timers(struct engine *e);

/* The box's root filesystem on the host, in buf: RUN/roots/ID, a nosuid,
 * nodev, nosymfollow view of its overlay that the group may reach
 * (eng_box_root). */
int engine_box_root(struct engine *e, int64_t id, char *buf, size_t bufsz);

/* The overlay itself, DATA/boxes/ID/rootfs, root's alone: where the daemon
 * resolves paths inside the box (openat2 RESOLVE_IN_ROOT, which follows the
 * box's links as the box would and which the view refuses). */
int engine_box_rootfs(struct engine *e, int64_t id, char *buf, size_t bufsz);

/* Records a failed control write as the box's `error` ("TIME FILE: reason
 * (ERRNO)"). err NULL records that file was written successfully: the
 * error is cleared when it is file's, and stays when it is another file's.
 * (Of two writers of one file at once, the one recorded last wins.) */
void engine_box_record_error(struct engine *e, int64_t id, const char *file, const pd_error *err);

/* The line an `error` file shows for err, a failed write of file: "TIME
 * FILE: reason (ERRNO)", TIME when err was set (pd_error_set()), made
 * printable (text_printable()), cut to bufsz with "(ERRNO)" kept. The
 * same err always gives the same line: the one the box's, snapshot's or
 * volume's error file records, which the tree also hands back to the
 * caller of the write (tree.h, struct tree_error). */
void engine_error_line(const pd_error *err, const char *file, char *buf, size_t bufsz);

/* CPU, memory and pids from the box's cgroup while it runs (cpu_percent
 * from the timer thread's samples: engine_start_timers()), and the bytes
 * its own files hold (its upper). The bytes come from a walk of its files
 * that runs outside the engine lock, one at a time per box, and is reused
 * for a few seconds: a reader that comes while a walk runs gets the last
 * result at once, or waits for that walk when there is none yet (see
 * eng_du_cached()). With ENGINE_USAGE_NO_WALK the bytes are the last result
 * (0 before the first walk) and nothing is walked: for the size of the
 * `usage` and `info` files in a lookup, which the kernel serialises with
 * every other lookup in the box's directory. */
#define ENGINE_USAGE_NO_WALK 1u
int engine_box_usage(struct engine *e, int64_t id, unsigned flags, struct box_usage *ret);
int engine_box_limits(struct engine *e, int64_t id, struct cgroup_limits *ret);

/* Room for tar pushes into box `id`'s own layer (its upper) under a disk
 * limit, held while they run: neither a usage figure a few seconds old nor
 * a push running beside another lets two pushes count the same room.
 * engine_box_push_begin() starts a push: when no other push of the box
 * runs, the box's use is measured (a walk, unless the last one began after
 * the last push ended and is fresh) and kept while pushes run, plus what
 * each finished one wrote; readers' walks meanwhile do not change it.
 * engine_box_push_reserve() holds `bytes` more for a push if what is in use
 * plus what every running push holds plus bytes stays within limit: 0, or
 * -ENOSPC; *ret_used is what was in use or held before. engine_box_push_end()
 * releases what the push held and counts it as written; when result < 0 the
 * next push measures the box again. begin and reserve: -ENOENT when the box
 * is gone (or no push was begun). */
int engine_box_push_begin(struct engine *e, int64_t id);
int engine_box_push_reserve(struct engine *e, int64_t id, uint64_t limit, uint64_t bytes,
			    uint64_t *ret_used);
void engine_box_push_end(struct engine *e, int64_t id, uint64_t held, int result);

/* Event streams. key 0 is the global stream, otherwise a box id. Opens the
 * stream's log read-only (O_CLOEXEC): the caller reads it with pread() and
 * closes it. -ENOENT if there is no such box. */
int engine_events_open(struct engine *e, uint64_t key);
/* True while more may be appended to the stream (the box still exists). */
bool engine_events_live(struct engine *e, uint64_t key);

/* --- snapshots (snapshots.c) -----------------------------------------------
 *
 * A snapshot is a box's filesystem frozen as a stack of read-only overlay
 * layers (layers.h) over an image. Ids are "BOX-SEQ" (web-3). Snapshots
 * outlive their box.
 *
 * - Stopping a box freezes its upper into a new layer (a rename, O(1)),
 *   pushes it on the box's stack and records a snapshot labelled "stop".
 *   Every stop records one, so the newest snapshot of a stopped box always
 *   holds its filesystem as the stop left it.
 * - engine_box_snapshot() on a stopped or created box does the same with
 *   the given label. On a running box it pauses the box (freezer), copies
 *   its upper (its changes since its last stop) with `cp -a`, always
 *   resumes it, and records the copy as the snapshot's top layer; the box
 *   keeps its upper and stack.
 * - An empty upper (no change since the last freeze) is never frozen: its
 *   (empty) copy becomes the snapshot's top layer and the box keeps its
 *   stack, so a stop or snapshot without changes costs the copy of an
 *   empty directory, unmounts nothing and does not deepen the box's stack.
 * - engine_box_fork(): a snapshot labelled "fork NEW" as above, then box
 *   NEW (state created) on the snapshot's stack, with the source's image,
 *   type, policy, volumes and TTL deadline (`expires`), and no address.
 * - engine_box_restore(): a running box is stopped (which snapshots it),
 *   its filesystem becomes the snapshot's (its stack, a fresh empty upper,
 *   and the snapshot's image), and it is started again. What it had not
 *   snapshotted is discarded.
 * Each records an intent first; engine_new() finishes or rolls it back. */
#define ENGINE_SNAPSHOT_LABEL_MAX 255

struct snapshot_view {
	int64_t seq; /* stable, never reused */
	char id[NAME_MAX_LEN + 1];
	char box[NAME_MAX_LEN + 1];
	int64_t box_id;
	char label[ENGINE_SNAPSHOT_LABEL_MAX + 1];
	time_t created;
	char image[NAME_MAX_LEN + 1];
	char error[PD_ERROR_MAX + 64];
};

/* Snapshot ids in creation order, of one box (box_id) or all (0); free
 * with image_list_free(). -ENOENT if the box does not exist. Snapshots
 * are addressed by their id, "BOX-SEQ": it holds the snapshot's seq,
 * never reused, so it is an id as a box's is, not a name. */
int engine_snapshot_names(struct engine *e, int64_t box_id, char ***ret, size_t *ret_n);
/* The box's newest snapshot (boxes/NAME/snapshots/last). -ENOENT if the box
 * does not exist or has none. */
int engine_snapshot_last(struct engine *e, int64_t box_id, struct snapshot_view *ret);
int engine_snapshot_get(struct engine *e, const char *id, struct snapshot_view *ret);
int engine_snapshot_get_by_seq(struct engine *e, int64_t seq, struct snapshot_view *ret);
/* Bytes of its top layer (what no older snapshot holds), measured once. */
int engine_snapshot_size(struct engine *e, const char *id, uint64_t *ret);
/* The host path of the snapshot's read-only root, mounted on first use. */
int engine_snapshot_root(struct engine *e, const char *id, char *buf, size_t bufsz);
/* snapshots/ID/export: the snapshot's root (mounted read-only if needed)
 * as a zstd-compressed tar stream ending with a manifest (export.h); read
 * it with export_stream_read(), close it with export_stream_close(). While
 * it runs, rmdir of the snapshot is -EBUSY. -ENOENT for no such snapshot. */
struct export_stream;
int engine_snapshot_export(struct engine *e, const char *id, struct export_stream **ret,
			   pd_error *err);
int engine_snapshot_set_label(struct engine *e, const char *id, const char *label, pd_error *err);
/* rmdir: -EBUSY (reason in err) while a box's filesystem is built on it. */
int engine_snapshot_delete(struct engine *e, const char *id, pd_error *err);
/* Records a failed write or rmdir as the snapshot's `error`; err NULL
 * records a success of file, which clears file's error (as for boxes). */
void engine_snapshot_record_error(struct engine *e, const char *id, const char *file,
				  const pd_error *err);

/* The box's control files `snapshot`, `fork`, `restore`. ret_id (may be
 * NULL) receives the new snapshot's id (a fork's: the one the new box
 * stands on). */
int engine_box_snapshot(struct engine *e, int64_t id, const char *label, char *ret_id,
			size_t ret_idsz, pd_error *err);
int engine_box_fork(struct engine *e, int64_t id, const char *new_name, char *ret_id,
		    size_t ret_idsz, pd_error *err);

/* What a restore did, for the caller to tell (the HTTP reply). */
#define ENGINE_RESTORE_JOBS_MAX 1024
struct engine_restore {
	char id[NAME_MAX_LEN + 1]; /* the snapshot restored (a label resolved) */
	bool restarted;		   /* it was running: stopped first, started again */
	/* restarted: the snapshot the stop took of the files before the
	 * restore ("" if it took none), and the jobs that were running, which
	 * the stop ended: names separated by spaces, "…" at the end when more
	 * did not fit. */
	char before[NAME_MAX_LEN + 1];
	char jobs[ENGINE_RESTORE_JOBS_MAX];
};

/* ref: a snapshot id (any box's), or a label that exactly one of this
 * box's snapshots has (an id wins over a label). An unknown ref is
 * -ENOENT, a label several have -EINVAL naming them; nothing changes then.
 * A running box is stopped first (which ends its jobs: said in its events
 * and in ret), restored and started again. ret may be NULL. */
int engine_box_restore(struct engine *e, int64_t id, const char *ref, struct engine_restore *ret,
		       pd_error *err);

/* --- published ports (ports.c) ----------------------------------------------
 *
 * boxes/NAME/ports: the ports of servers in the box published as preview
 * URLs (common/ports.h, docs/preview.md). set replaces the whole list
 * (-EINVAL with the reason for bad text, nothing changed), running or
 * not; the proxy reads it on every request. */
int engine_box_ports(struct engine *e, int64_t id, struct port_list *ret);
/* Its canonical text into buf (PORTS_TEXT_MAX); returns the length. */
int engine_box_ports_text(struct engine *e, int64_t id, char *buf, size_t bufsz);
int engine_box_set_ports(struct engine *e, int64_t id, const char *text, size_t len, pd_error *err);

struct engine_port {
	int64_t box_id;
	char box[NAME_MAX_LEN + 1];
	unsigned port;
	bool public; /* reachable without a token */
};

/* The published port of box name: -ENOENT (reason in err) when there is
 * no such box or the port is not in its list. */
int engine_box_port_lookup(struct engine *e, const char *name, unsigned port,
			   struct engine_port *ret, pd_error *err);
/* A connected, non-blocking TCP socket (O_CLOEXEC) to 127.0.0.1:port in
 * the network namespace of box box_id (ports.c says why that way), or
 * -errno with the reason in err: -ENOENT no such box or the port is no
 * longer published; -EAGAIN the box is not running; -ECONNREFUSED
 * nothing listens there; other -errno. */
int engine_box_port_connect(struct engine *e, int64_t box_id, unsigned port, pd_error *err);

/* --- Docker (docker.c) -------------------------------------------------------
 *
 * boxes/NAME/docker: "on\n" or "off\n", what the box's next start runs
 * with (its setting, else its image's default). Writing on or off sets it:
 * -EINVAL for another value or, for on, a box without /usr/bin/dockerd;
 * -EPERM for on without user namespaces; -EBUSY to change it while the box
 * runs (the tier is fixed for a run). docs/docker.md. */
int engine_box_docker_get(struct engine *e, int64_t id, char *buf, size_t bufsz);
int engine_box_set_docker(struct engine *e, int64_t id, const char *value, pd_error *err);

/* --- the desktop (desktop.c) ------------------------------------------------
 *
 * boxes/NAME/desktop/: the box's graphical session (common/desktop.h).
 * state: "off", "on" (the session runs, or will with the box), or
 * "starting" (the box runs and the session is being started or restarted).
 * Writing on starts the box if it is not running and returns once the
 * session's X server shows its first frame: -ENOTSUP for an image without
 * Xvnc, -ENOMEM for a type with less memory than a desktop needs; off ends
 * it. The commands below need it on: -ENODEV when it is off or the box is
 * not running, -EAGAIN while it is starting. */
int engine_box_desktop_state(struct engine *e, int64_t id, char *buf, size_t bufsz);
int engine_box_set_desktop(struct engine *e, int64_t id, const char *value, pd_error *err);
/* "WxH"; a write applies live (RandR) on a running desktop, else at its
 * next start. */
int engine_box_desktop_geometry(struct engine *e, int64_t id, char *buf, size_t bufsz);
int engine_box_set_desktop_geometry(struct engine *e, int64_t id, const char *value, pd_error *err);
/* Where the web panel shows the desktop: PUBLIC_URL/#/desktop/NAME. */
int engine_box_desktop_url(struct engine *e, int64_t id, char *buf, size_t bufsz);
/* A PNG of the screen as it is now. */
struct pd_buf;
int engine_box_screenshot(struct engine *e, int64_t id, struct pd_buf *png, pd_error *err);
/* desktop/input: lines of actions, all checked before any is sent (-EINVAL
 * "line N: ..."), then sent in one go. */
int engine_box_desktop_input(struct engine *e, int64_t id, const char *text, size_t len,
			     pd_error *err);
/* desktop/windows and desktop/cursor, as text (malloc'd). */
int engine_box_desktop_windows(struct engine *e, int64_t id, char **ret, pd_error *err);
int engine_box_desktop_cursor(struct engine *e, int64_t id, char **ret, pd_error *err);

/* The directory holding installed images. */
const char *engine_images_dir(const struct engine *e);

/* The owner's password and access tokens (auth.h), created with the engine
 * on the same database and freed with it. Callers use it without the engine
 * lock: it has its own. */
struct auth;
struct auth *engine_auth(struct engine *e);

/* Who may use the tree and the local socket (access.h), resolved from the
 * configured group when the engine was made. */
struct pd_access;
const struct pd_access *engine_access(const struct engine *e);
