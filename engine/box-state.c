/* box-state.c - the box lifecycle as a pure state machine (see box-state.h). */
#include <string.h>

#include "engine/box-state.h"

static const char *const state_names[_BOX_STATE_MAX] = {
    [BOX_CREATED] = "created",	 [BOX_STARTING] = "starting", [BOX_RUNNING] = "running",
    [BOX_STOPPING] = "stopping", [BOX_STOPPED] = "stopped",
};

static bool state_valid(enum box_state s)
{
	return s >= 0 && s < _BOX_STATE_MAX;
}

const char *box_state_to_string(enum box_state s)
{
	return state_valid(s) ? state_names[s] : NULL;
}

enum box_state box_state_from_string(const char *s)
{
	if (!s)
		return _BOX_STATE_INVALID;
	for (int i = 0; i < _BOX_STATE_MAX; i++)
		if (strcmp(s, state_names[i]) == 0)
			return (enum box_state)i;
	return _BOX_STATE_INVALID;
}

bool box_state_is_transition(enum box_state s)
{
	return s == BOX_STARTING || s == BOX_STOPPING;
}

static int refuse(int code, const char *why, const char **reason)
{
	if (reason)
		*reason = why;
	return code;
}

int box_state_plan(enum box_state from, enum box_state target, enum box_action *ret_action,
		   const char **reason)
{
	enum box_action action;

	if (!state_valid(from))
		return refuse(-EINVAL, "box is in an unknown state", reason);
	if (target != BOX_RUNNING && target != BOX_STOPPED)
		return refuse(-EINVAL, "only \"running\" or \"stopped\" may be written", reason);
	if (from == BOX_STARTING)
		return refuse(-EBUSY, "box is starting", reason);
	if (from == BOX_STOPPING)
		return refuse(-EBUSY, "box is stopping", reason);

	if (target == BOX_RUNNING)
		action = from == BOX_RUNNING ? BOX_ACTION_NONE : BOX_ACTION_START;
	else if (from == BOX_CREATED)
		return refuse(-EBUSY, "box was never started", reason);
	else
		action = from == BOX_STOPPED ? BOX_ACTION_NONE : BOX_ACTION_STOP;

	if (ret_action)
		*ret_action = action;
	return 0;
}

enum box_state box_state_finish(enum box_state prior, enum box_action action, bool ok)
{
	switch (action) {
	case BOX_ACTION_START:
		return ok ? BOX_RUNNING : prior;
	case BOX_ACTION_STOP:
		return ok ? BOX_STOPPED : BOX_RUNNING;
	case BOX_ACTION_NONE:
	default:
		return prior;
	}
}
