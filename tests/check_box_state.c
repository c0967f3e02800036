/* check_box_state.c - the box lifecycle: every (from, target) pair, the
 * outcome of every action, and the state names. */
#include <errno.h>
#include <string.h>

#include "engine/box-state.h"
#include "check-tap.h"

#define NSTATES _BOX_STATE_MAX

static const char *const names[NSTATES] = {
    [BOX_CREATED] = "created",	 [BOX_STARTING] = "starting", [BOX_RUNNING] = "running",
    [BOX_STOPPING] = "stopping", [BOX_STOPPED] = "stopped",
};

/* What writing target (column) to a box in state from (row) means: an
 * action, or -EINVAL / -EBUSY. */
enum { NONE = BOX_ACTION_NONE, START = BOX_ACTION_START, STOP = BOX_ACTION_STOP };
#define INVAL (-EINVAL)
#define BUSY (-EBUSY)

static const int plan_table[NSTATES][NSTATES] = {
    /* target:        created  starting  running  stopping  stopped */
    [BOX_CREATED] = {INVAL, INVAL, START, INVAL, BUSY},
    [BOX_STARTING] = {INVAL, INVAL, BUSY, INVAL, BUSY},
    [BOX_RUNNING] = {INVAL, INVAL, NONE, INVAL, STOP},
    [BOX_STOPPING] = {INVAL, INVAL, BUSY, INVAL, BUSY},
    [BOX_STOPPED] = {INVAL, INVAL, START, INVAL, NONE},
};

/* ---- core ---- */

START_TEST(test_plan_pair)
{
	enum box_state from = (enum box_state)(_i / NSTATES);
	enum box_state target = (enum box_state)(_i % NSTATES);
	int want = plan_table[from][target];
	enum box_action action = (enum box_action)42;
	const char *reason = "unset";
	int r;

	r = box_state_plan(from, target, &action, &reason);
	if (want >= 0) {
		ck_assert_msg(r == 0, "%s -> %s: %d", names[from], names[target], r);
		ck_assert_msg((int)action == want, "%s -> %s: action %d, want %d", names[from],
			      names[target], action, want);
		ck_assert_str_eq(reason, "unset"); /* untouched on success */
	} else {
		ck_assert_msg(r == want, "%s -> %s: %d, want %d", names[from], names[target], r,
			      want);
		ck_assert_int_eq(action, 42); /* untouched on failure */
		ck_assert_ptr_nonnull(reason);
		ck_assert_str_ne(reason, "unset");
		ck_assert_uint_gt(strlen(reason), 0);
	}
}
END_TEST

START_TEST(test_plan_reasons)
{
	enum box_action action;
	const char *reason = NULL;

	ck_assert_int_eq(box_state_plan(BOX_CREATED, BOX_STOPPED, &action, &reason), -EBUSY);
	ck_assert_str_eq(reason, "box was never started");
	ck_assert_int_eq(box_state_plan(BOX_STARTING, BOX_RUNNING, &action, &reason), -EBUSY);
	ck_assert_str_eq(reason, "box is starting");
	ck_assert_int_eq(box_state_plan(BOX_STOPPING, BOX_STOPPED, &action, &reason), -EBUSY);
	ck_assert_str_eq(reason, "box is stopping");
	/* reason may be NULL. */
	ck_assert_int_eq(box_state_plan(BOX_RUNNING, BOX_CREATED, &action, NULL), -EINVAL);
	ck_assert_int_eq(box_state_plan(BOX_STOPPED, BOX_RUNNING, &action, NULL), 0);
	ck_assert_int_eq(action, BOX_ACTION_START);
}
END_TEST

START_TEST(test_finish)
{
	for (int p = 0; p < NSTATES; p++) {
		enum box_state prior = (enum box_state)p;

		ck_assert_int_eq(box_state_finish(prior, BOX_ACTION_NONE, true), prior);
		ck_assert_int_eq(box_state_finish(prior, BOX_ACTION_NONE, false), prior);
		ck_assert_int_eq(box_state_finish(prior, BOX_ACTION_START, true), BOX_RUNNING);
		ck_assert_int_eq(box_state_finish(prior, BOX_ACTION_STOP, true), BOX_STOPPED);
		ck_assert_int_eq(box_state_finish(prior, BOX_ACTION_STOP, false), BOX_RUNNING);
	}
	/* A failed start goes back where it came from. */
	ck_assert_int_eq(box_state_finish(BOX_CREATED, BOX_ACTION_START, false), BOX_CREATED);
	ck_assert_int_eq(box_state_finish(BOX_STOPPED, BOX_ACTION_START, false), BOX_STOPPED);
}
END_TEST

START_TEST(test_transition)
{
	ck_assert(!box_state_is_transition(BOX_CREATED));
	ck_assert(box_state_is_transition(BOX_STARTING));
	ck_assert(!box_state_is_transition(BOX_RUNNING));
	ck_assert(box_state_is_transition(BOX_STOPPING));
	ck_assert(!box_state_is_transition(BOX_STOPPED));
	ck_assert(!box_state_is_transition(_BOX_STATE_INVALID));
}
END_TEST

START_TEST(test_strings)
{
	for (int i = 0; i < NSTATES; i++) {
		const char *s = box_state_to_string((enum box_state)i);
		ck_assert_ptr_nonnull(s);
		ck_assert_str_eq(s, names[i]);
		ck_assert_int_eq(box_state_from_string(s), i);
	}
}
END_TEST

/* A whole life: every step planned, entered and finished as the engine will. */
static enum box_state step(enum box_state s, enum box_state target, bool ok, int want_action)
{
	enum box_action a;

	ck_assert_int_eq(box_state_plan(s, target, &a, NULL), 0);
	ck_assert_int_eq(a, want_action);
	if (a == BOX_ACTION_NONE)
		return box_state_finish(s, a, ok);
	enum box_state mid = a == BOX_ACTION_START ? BOX_STARTING : BOX_STOPPING;
	enum box_action dummy;
	/* While in transition every write is refused. */
	ck_assert_int_eq(box_state_plan(mid, target, &dummy, NULL), -EBUSY);
	return box_state_finish(s, a, ok);
}

START_TEST(test_life)
{
	enum box_state s = BOX_CREATED;

	s = step(s, BOX_RUNNING, false, BOX_ACTION_START);
	ck_assert_int_eq(s, BOX_CREATED);
	s = step(s, BOX_RUNNING, true, BOX_ACTION_START);
	ck_assert_int_eq(s, BOX_RUNNING);
	s = step(s, BOX_RUNNING, true, BOX_ACTION_NONE);
	ck_assert_int_eq(s, BOX_RUNNING);
	s = step(s, BOX_STOPPED, false, BOX_ACTION_STOP);
	ck_assert_int_eq(s, BOX_RUNNING);
	s = step(s, BOX_STOPPED, true, BOX_ACTION_STOP);
	ck_assert_int_eq(s, BOX_STOPPED);
	s = step(s, BOX_STOPPED, true, BOX_ACTION_NONE);
	ck_assert_int_eq(s, BOX_STOPPED);
	s = step(s, BOX_RUNNING, false, BOX_ACTION_START);
	ck_assert_int_eq(s, BOX_STOPPED);
	s = step(s, BOX_RUNNING, true, BOX_ACTION_START);
	ck_assert_int_eq(s, BOX_RUNNING);
}
END_TEST

/* ---- limits ---- */

START_TEST(test_out_of_range_states)
{
	static const enum box_state bad[] = {_BOX_STATE_MAX, _BOX_STATE_INVALID,
					     (enum box_state) - 1, (enum box_state)100};
	enum box_action action = (enum box_action)42;
	const char *reason = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_ptr_null(box_state_to_string(bad[i]));
		ck_assert_int_eq(box_state_plan(bad[i], BOX_RUNNING, &action, &reason), -EINVAL);
		ck_assert_ptr_nonnull(reason);
		ck_assert_int_eq(box_state_plan(BOX_RUNNING, bad[i], &action, &reason), -EINVAL);
		ck_assert_int_eq(box_state_plan(BOX_STOPPED, bad[i], &action, NULL), -EINVAL);
	}
	ck_assert_int_eq(action, 42);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_bad_strings)
{
	static const char *const bad[] = {
	    "",		"Running", "RUNNING", "run",	     "running\n", " running",
	    "running ", "start",   "stop",    "stopped\r\n", "createdx",  "\xc3\xa9",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(box_state_from_string(bad[i]) == _BOX_STATE_INVALID, "\"%s\"",
			      bad[i]);
	ck_assert_int_eq(box_state_from_string(NULL), -EINVAL);
}
END_TEST

static Suite *box_state_suite(void)
{
	Suite *s = suite_create("box_state");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_loop_test(tc, test_plan_pair, 0, NSTATES * NSTATES);
	tcase_add_test(tc, test_plan_reasons);
	tcase_add_test(tc, test_finish);
	tcase_add_test(tc, test_transition);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_life);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, test_out_of_range_states);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_bad_strings);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return check_tap_run(box_state_suite());
}
