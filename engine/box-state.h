/* box-state.h - the box lifecycle as a pure state machine.
 *
 *	created --start--> starting --ok--> running
 *	running --stop---> stopping --ok--> stopped
 *	stopped --start--> starting --ok--> running
 *	starting --fail--> the state it came from (created or stopped)
 *	stopping --fail--> running
 *
 * Users write only the targets `running` and `stopped` to a box's `state`
 * file. box_state_plan() decides what such a write means; the engine performs
 * it and reports the outcome with box_state_finish().
 */
#pragma once

#include <errno.h>
#include <stdbool.h>

enum box_state {
	BOX_CREATED,
	BOX_STARTING,
	BOX_RUNNING,
	BOX_STOPPING,
	BOX_STOPPED,
	_BOX_STATE_MAX,
	_BOX_STATE_INVALID = -EINVAL,
};

enum box_action {
	BOX_ACTION_NONE,  /* already in the target state: the write succeeds, nothing happens */
	BOX_ACTION_START, /* go to BOX_STARTING, then start the container */
	BOX_ACTION_STOP,  /* go to BOX_STOPPING, then stop the container */
};

/* "created", "running", ... Never NULL for a valid state. */
const char *box_state_to_string(enum box_state s);

/* Parses a state name; -EINVAL for anything else. */
enum box_state box_state_from_string(const char *s);

/* Decides what writing target to a box in state from means.
 * Returns 0 and sets *ret_action, or:
 *   -EINVAL  target is not a state a user may ask for (only running/stopped)
 *   -EBUSY   the box is in a state where that is not possible now
 *            (in transition, or stopping a box that never started)
 * On failure, *reason (if not NULL) points to a static explanation. */
int box_state_plan(enum box_state from, enum box_state target, enum box_action *ret_action,
		   const char **reason);

/* The state a box is in after action ended: success or failure. prior is
 * the state before the action began. */
enum box_state box_state_finish(enum box_state prior, enum box_action action, bool ok);

/* True while a box is between stable states. */
bool box_state_is_transition(enum box_state s);
