/* volumes.h - named volumes: directories that outlive every box, attached
 * to boxes by name and bind-mounted at /mnt/NAME inside them.
 *
 * A volume NAME lives in DATA/volumes/NAME/data on the host; the tree shows
 * that directory as a link, so its data never passes through the daemon.
 * The store holds the volumes and, per box, the ordered list of attached
 * volumes. crun mounts them when a box starts; a change of a running box's
 * list mounts and unmounts them live, in the box (volume-live.h).
 *
 * Crash safety: create and delete record their intent first ("creating",
 * "deleting") and the engine finishes or rolls back an interrupted one at
 * start. A live change records what may be mounted, then the list, then
 * changes the mounts; at start a change cut short is finished, so that a
 * running box's mounts and its list agree (eng_volumes_reconcile()). Named
 * fault points (util.h pd_fault()) sit between the steps:
 * volume-create-row, volume-create-dir, volume-delete-mark,
 * volume-delete-files, volume-delete-rows, volume-live-recorded,
 * volume-live-applied.
 *
 * Ids, not names: every call on an existing volume takes its id
 * (volume_view's id, never reused), a box's list the box's id; names are
 * for mkdir and lookup. A volume deleted and made again under its name is
 * another volume: the old id gets -ENOENT.
 *
 * Locking: the engine lock guards the volume table with the box table;
 * slow work (deleting files, archives) runs outside it. Every function here
 * may be called from any thread. Functions return >= 0 or -errno; those
 * taking a pd_error also give a reason a person can read.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/error.h"
#include "common/parse.h"

struct engine;

#define VOLUMES_PER_BOX_MAX 32

struct volume_view {
	int64_t id;
	char name[NAME_MAX_LEN + 1];
	time_t created;
	char error[PD_ERROR_MAX + 64]; /* the last failed rmdir or import */
};

/* Parses a box's `volumes` file: one name per line, blank lines ignored,
 * a final newline optional. -EINVAL with the line number in err for a bad
 * name, a duplicate, a NUL byte or more than VOLUMES_PER_BOX_MAX names.
 * *ret is a malloc'd array of malloc'd names (free with image_list_free). */
int engine_volume_list_parse(const char *text, size_t len, char ***ret, size_t *ret_n,
			     pd_error *err);

/* Names of the volumes in creation order (free with image_list_free). */
int engine_volume_names(struct engine *e, char ***ret, size_t *ret_n);
/* -ENOENT if there is no such volume (or it is being deleted). */
int engine_volume_get(struct engine *e, const char *name, struct volume_view *ret);
int engine_volume_get_by_id(struct engine *e, int64_t id, struct volume_view *ret);

/* mkdir volumes/NAME: -EINVAL bad name, -EEXIST taken. */
int engine_volume_create(struct engine *e, const char *name, pd_error *err);
/* rmdir volumes/NAME: deletes the volume and its data; -EBUSY while a box
 * lists it (the reason names the boxes) or an export or import runs. */
int engine_volume_delete(struct engine *e, int64_t id, pd_error *err);
/* Records a failed action as the volume's `error` ("TIME FILE: reason (ERRNO)");
 * err NULL records a success of file, which clears file's error. */
void engine_volume_record_error(struct engine *e, int64_t id, const char *file,
				const pd_error *err);

/* The volume's data directory on the host, in buf: RUN/volumes/NAME, a
 * nosuid, nodev, nosymfollow view of DATA/volumes/NAME/data that the group
 * may reach. */
int engine_volume_data(struct engine *e, int64_t id, char *buf, size_t bufsz);

/* DATA/volumes/NAME/data itself, root's alone: where the daemon resolves
 * paths inside the volume (engine_box_rootfs). */
int engine_volume_datadir(struct engine *e, int64_t id, char *buf, size_t bufsz);
/* Bytes its data uses (like du), recomputed at most every few seconds. */
int engine_volume_size(struct engine *e, int64_t id, uint64_t *ret);
/* Names of the boxes that list it, in box creation order. */
int engine_volume_boxes(struct engine *e, int64_t id, char ***ret, size_t *ret_n);

/* The box's volumes in its order (free with image_list_free). */
int engine_box_volumes(struct engine *e, int64_t box_id, char ***ret, size_t *ret_n);
/* Replaces the box's list with the parsed text (see engine_volume_list_parse).
 * -ENOENT for a volume that does not exist (the reason has its line). On a
 * running box the volumes added are mounted at /mnt/NAME and those removed
 * unmounted (lazily when a process in the box still uses one) before it
 * returns; -EBUSY while the box starts, stops or is busy with another
 * change, and the errors of volume-live.h when the box's /mnt/NAME cannot
 * take the mount. A failure changes nothing: the list and the mounts stay
 * as they were. A slow call (a fork per volume changed). */
int engine_box_set_volumes(struct engine *e, int64_t box_id, const char *text, size_t len,
			   pd_error *err);
/* True if the box runs with another list of volumes than it now has (the
 * change waits for the next start: a box whose PID crun did not give at
 * the daemon's start). */
bool engine_box_volumes_pending(struct engine *e, int64_t box_id);

/*
 * Export: the volume as a zstd-compressed tar stream ending with a manifest
 * (export.h): *ret is the stream, read with export_stream_read() and
 * closed with export_stream_close(). While an export runs, rmdir of the
 * volume is -EBUSY and so is an import into it.
 */
struct export_stream;
int engine_volume_export_open(struct engine *e, int64_t id, struct export_stream **ret,
			      pd_error *err);

/*
 * Import: an archive made by export (or any tar, plain, gzip or zstd) is
 * written in order into a temp file and extracted into the volume's empty
 * data directory at finish(), safely (tarsafe_extract(): `..`, absolute
 * names, links leading out, device nodes and truncated streams are refused
 * and nothing is left behind). begin() is -ENOTEMPTY unless the data is
 * empty, -EBUSY while another import or an export runs. finish() and
 * abort() free imp; the reason of a failure is also recorded as the
 * volume's error.
 */
struct volume_import;
int engine_volume_import_begin(struct engine *e, int64_t id, struct volume_import **ret,
			       pd_error *err);
int engine_volume_import_write(struct volume_import *imp, uint64_t off, const char *buf, size_t len,
			       pd_error *err);
int engine_volume_import_finish(struct volume_import *imp, pd_error *err);
void engine_volume_import_abort(struct volume_import *imp);
