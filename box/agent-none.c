/* agent-none.c - the agents' adapters (agent-events.h) as a build without
 * any has them: no agent is known. The adapters (agent-events.c) replace
 * this file; nothing here pretends to run or read an agent. */
#include <errno.h>

#include "box/agent-events.h"

struct agent_events *agent_events_new(const char *agent)
{
	(void)agent;
	errno = ENOENT;
	return NULL;
}

int agent_events_line(struct agent_events *s, const char *line, size_t len, const char *time,
		      struct pd_buf *out)
{
	(void)s, (void)line, (void)len, (void)time, (void)out;
	return -ENOENT;
}

int agent_events_end(struct agent_events *s, int exit_code, const char *time, struct pd_buf *out)
{
	(void)s, (void)exit_code, (void)time, (void)out;
	return -ENOENT;
}

const char *agent_events_result(struct agent_events *s)
{
	(void)s;
	return "";
}

const char *agent_events_session(struct agent_events *s)
{
	(void)s;
	return "";
}

void agent_events_free(struct agent_events *s)
{
	(void)s;
}

int agent_command(const char *agent, const struct agent_run *run, char ***ret_argv, char ***ret_env,
		  pd_error *err)
{
	(void)run, (void)ret_argv, (void)ret_env;
	return pd_error_set(err, -ENOENT, "no adapter for agent %s in this build", agent);
}
