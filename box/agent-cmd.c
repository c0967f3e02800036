/* agent-cmd.c - the command line of each agent running headless
 * (agent_command() in agent-events.h).
 *
 * What each agent needs, found by running it against a scripted model:
 *
 * claude	claude -p --output-format stream-json --verbose
 *		--dangerously-skip-permissions [--model M] [--resume S] -- TEXT
 *		ANTHROPIC_BASE_URL=URL; IS_SANDBOX=1 (else it refuses to skip
 *		permissions as root); DISABLE_TELEMETRY, DISABLE_AUTOUPDATER,
 *		DISABLE_ERROR_REPORTING, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC.
 * codex	codex exec --json --skip-git-repo-check
 *		--dangerously-bypass-approvals-and-sandbox [-m M] -c ...
 *		[resume S] -- TEXT
 *		The base URL through a provider of its own given with -c
 *		(OPENAI_BASE_URL is not read): model_provider=paddock,
 *		model_providers.paddock.{name,base_url=URL/v1,env_key=OPENAI_API_KEY,
 *		wire_api=responses}; features.shell_snapshot=false (see
 *		codex_cmd()).
 * opencode	opencode run --format json [-m PROVIDER/M] [--session S] -- TEXT
 *		OPENCODE_CONFIG_CONTENT (JSON config merged over the user's):
 *		the provider's options.baseURL=URL/v1, permission "allow",
 *		autoupdate off, share disabled; OPENCODE_DISABLE_AUTOUPDATE,
 *		_MODELS_FETCH (else it fetches a models list at start),
 *		_DEFAULT_PLUGINS, _LSP_DOWNLOAD.
 * pi		pi -p --mode json [--model M] [--session S] TEXT
 *		No "--" (it refuses it) and a word starting with '-' or '@' is
 *		an option or a file to it: such a text gets a leading space.
 *		The base URL only through a models.json in its agent
 *		directory: with a base URL the command is a shell that writes
 *		~/.pi/paddock/models.json ({"providers": {P: {"baseUrl": URL}}})
 *		and runs pi with PI_CODING_AGENT_DIR there, sessions kept in
 *		the usual ~/.pi/agent/sessions. PI_OFFLINE=1, PI_TELEMETRY=0.
 *
 * codex, opencode and pi read a stdin that is no terminal to its end
 * before they start (codex: "Reading additional input from stdin..."):
 * every command is `sh -c 'exec "$0" "$@" </dev/null' AGENT ARGS...`.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "box/agent-events.h"

#define WORD_MAX 256
#define URL_MAX 2048
#define VEC_MAX 48

struct vec {
	char *v[VEC_MAX + 1];
	size_t n;
	bool oom;
};

static void add(struct vec *a, const char *s)
{
	char *c;

	if (a->oom)
		return;
	if (a->n >= VEC_MAX) {
		a->oom = true;
		return;
	}
	c = strdup(s);
	if (!c) {
		a->oom = true;
		return;
	}
	a->v[a->n++] = c;
}

static void addf(struct vec *a, const char *fmt, ...) _printf_(2, 3);
static void addf(struct vec *a, const char *fmt, ...)
{
	va_list ap;
	char *c = NULL;

	va_start(ap, fmt);
	if (vasprintf(&c, fmt, ap) < 0)
		c = NULL;
	va_end(ap);
	if (!c) {
		a->oom = true;
		return;
	}
	add(a, c);
	free(c);
}

static void vec_release(struct vec *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	a->n = 0;
}

/* A heap copy of the vector, NULL-terminated; NULL when out of memory (a
 * is then released). */
static char **vec_take(struct vec *a)
{
	char **r;

	if (a->oom || !(r = calloc(a->n + 1, sizeof(*r)))) {
		vec_release(a);
		return NULL;
	}
	memcpy(r, a->v, a->n * sizeof(*r));
	a->n = 0;
	return r;
}

/* A model name or session id: a short word that is no option. */
static bool good_word(const char *p)
{
	size_t n;

	if (!p || !*p || *p == '-')
		return false;
	for (n = 0; p[n]; n++) {
		char c = p[n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("._:/@+-", c)))
			return false;
	}
	return n <= WORD_MAX;
}

static bool good_url(const char *p)
{
	size_t n;

	if (strncmp(p, "http://", 7) != 0 && strncmp(p, "https://", 8) != 0)
		return false;
	for (n = 0; p[n]; n++)
		if (p[n] <= ' ' || p[n] >= 0x7f || p[n] == '"' || p[n] == '\\' || p[n] == '\'')
			return false;
	return n <= URL_MAX;
}

/* The URL of an OpenAI-style API root: base with /v1 unless it ends so
 * (trailing slashes dropped). NULL when out of memory. */
static char *with_v1(const char *base)
{
	size_t n = strlen(base);
	char *r = NULL;

	while (n > 0 && base[n - 1] == '/')
		n--;
	if (asprintf(&r, "%.*s%s", (int)n, base,
		     n >= 3 && strncmp(base + n - 3, "/v1", 3) == 0 ? "" : "/v1") < 0)
		return NULL;
	return r;
}

/* codex, opencode and pi read their stdin when it is no terminal, to the
 * end, before they start: a prompt's stdin left open would hold them
 * forever. Every agent runs through a shell that gives it /dev/null
 * (claude too, for one rule); the agent's argv follows, never parsed by
 * the shell. */
static void stdin_closed(struct vec *argv)
{
	add(argv, "sh");
	add(argv, "-c");
	add(argv, "exec \"$0\" \"$@\" </dev/null");
}

static void claude_cmd(const struct agent_run *run, struct vec *argv, struct vec *env)
{
	stdin_closed(argv);
	add(argv, "claude");
	add(argv, "-p");
	add(argv, "--output-format");
	add(argv, "stream-json");
	add(argv, "--verbose");
	add(argv, "--dangerously-skip-permissions");
	if (run->model) {
		add(argv, "--model");
		add(argv, run->model);
	}
	if (run->session) {
		add(argv, "--resume");
		add(argv, run->session);
	}
	add(argv, "--");
	add(argv, run->text);
	add(env, "IS_SANDBOX=1");
	add(env, "DISABLE_TELEMETRY=1");
	add(env, "DISABLE_AUTOUPDATER=1");
	add(env, "DISABLE_ERROR_REPORTING=1");
	add(env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1");
	if (run->base_url)
		addf(env, "ANTHROPIC_BASE_URL=%s", run->base_url);
}

static void codex_cmd(const struct agent_run *run, struct vec *argv, struct vec *env)
{
	stdin_closed(argv);
	add(argv, "codex");
	add(argv, "exec");
	add(argv, "--json");
	add(argv, "--skip-git-repo-check");
	add(argv, "--dangerously-bypass-approvals-and-sandbox");
	add(argv, "--color");
	add(argv, "never");
	if (run->model) {
		add(argv, "-m");
		add(argv, run->model);
	}
	add(argv, "-c");
	add(argv, "check_for_update_on_startup=false");
	add(argv, "-c");
	add(argv, "analytics.enabled=false");
	/* Its shell snapshot is a file in ~/.codex holding the whole
	 * environment, the API key included, removed only when it exits
	 * normally: a killed prompt would leave the key in the box. */
	add(argv, "-c");
	add(argv, "features.shell_snapshot=false");
	if (run->base_url) {
		/* The URL is checked (good_url): no quote or backslash can end
		 * the TOML string. */
		add(argv, "-c");
		add(argv, "model_provider=\"paddock\"");
		add(argv, "-c");
		add(argv, "model_providers.paddock.name=\"paddock\"");
		_cleanup_free_ char *url = with_v1(run->base_url);
		add(argv, "-c");
		if (url)
			addf(argv, "model_providers.paddock.base_url=\"%s\"", url);
		else
			argv->oom = true;
		add(argv, "-c");
		add(argv, "model_providers.paddock.env_key=\"OPENAI_API_KEY\"");
		add(argv, "-c");
		add(argv, "model_providers.paddock.wire_api=\"responses\"");
	}
	if (run->session) {
		add(argv, "resume");
		add(argv, run->session);
	}
	add(argv, "--");
	add(argv, run->text);
	(void)env;
}

/* The provider part of a "provider/model" name, "anthropic" when there is
 * none. */
static void provider_of(const char *model, char *buf, size_t size)
{
	const char *slash = model ? strchr(model, '/') : NULL;

	if (!slash || slash == model || (size_t)(slash - model) >= size)
		snprintf(buf, size, "anthropic");
	else
		snprintf(buf, size, "%.*s", (int)(slash - model), model);
}

static void opencode_cmd(const struct agent_run *run, struct vec *argv, struct vec *env)
{
	char provider[WORD_MAX + 1], *text;
	json_t *conf;

	provider_of(run->model, provider, sizeof(provider));
	stdin_closed(argv);
	add(argv, "opencode");
	add(argv, "run");
	add(argv, "--format");
	add(argv, "json");
	if (run->model) {
		add(argv, "-m");
		if (strchr(run->model, '/'))
			add(argv, run->model);
		else
			addf(argv, "anthropic/%s", run->model);
	}
	if (run->session) {
		add(argv, "--session");
		add(argv, run->session);
	}
	add(argv, "--");
	add(argv, run->text);

	conf = json_pack("{s:s, s:b, s:s}", "permission", "allow", "autoupdate", 0, "share",
			 "disabled");
	if (conf && run->base_url) {
		_cleanup_free_ char *url = with_v1(run->base_url);
		if (!url || json_object_set_new(conf, "provider",
						json_pack("{s:{s:{s:s}}}", provider, "options",
							  "baseURL", url)) < 0) {
			json_decref(conf);
			conf = NULL;
		}
	}
	text = conf ? json_dumps(conf, JSON_COMPACT) : NULL;
	json_decref(conf);
	if (!text) {
		env->oom = true;
		return;
	}
	addf(env, "OPENCODE_CONFIG_CONTENT=%s", text);
	free(text);
	add(env, "OPENCODE_DISABLE_AUTOUPDATE=1");
	add(env, "OPENCODE_DISABLE_MODELS_FETCH=1");
	add(env, "OPENCODE_DISABLE_DEFAULT_PLUGINS=1");
	add(env, "OPENCODE_DISABLE_LSP_DOWNLOAD=1");
}

/* pi reads its model endpoints only from models.json in its agent
 * directory: a shell writes one for the base URL, in a directory of its
 * own so that the user's pi setup is left as it is. */
static const char PI_SCRIPT[] =
    "d=\"$HOME/.pi/paddock\" && mkdir -p \"$d\" && "
    "printf '%s\\n' \"$PADDOCK_PI_MODELS\" >\"$d/models.json\" && "
    "export PI_CODING_AGENT_DIR=\"$d\" "
    "PI_CODING_AGENT_SESSION_DIR=\"${PI_CODING_AGENT_SESSION_DIR:-$HOME/.pi/agent/sessions}\" && "
    "unset PADDOCK_PI_MODELS && exec pi \"$@\" </dev/null";

static void pi_cmd(const struct agent_run *run, struct vec *argv, struct vec *env)
{
	char provider[WORD_MAX + 1];

	if (run->base_url) {
		json_t *models;
		char *text = NULL;

		provider_of(run->model, provider, sizeof(provider));
		/* pi's anthropic provider takes the API root, the OpenAI-style
		 * ones the root with /v1. */
		if (strcmp(provider, "anthropic") == 0) {
			models = json_pack("{s:{s:{s:s}}}", "providers", provider, "baseUrl",
					   run->base_url);
		} else {
			_cleanup_free_ char *url = with_v1(run->base_url);
			models =
			    url ? json_pack("{s:{s:{s:s}}}", "providers", provider, "baseUrl", url)
				: NULL;
		}
		if (models)
			text = json_dumps(models, JSON_COMPACT);
		json_decref(models);
		if (!text) {
			env->oom = true;
			return;
		}
		addf(env, "PADDOCK_PI_MODELS=%s", text);
		free(text);
		add(argv, "sh");
		add(argv, "-c");
		add(argv, PI_SCRIPT);
	} else {
		stdin_closed(argv);
	}
	add(argv, "pi");
	add(argv, "-p");
	add(argv, "--mode");
	add(argv, "json");
	if (run->model) {
		add(argv, "--model");
		add(argv, run->model);
	}
	if (run->session) {
		add(argv, "--session");
		add(argv, run->session);
	}
	if (run->text[0] == '-' || run->text[0] == '@')
		addf(argv, " %s", run->text);
	else
		add(argv, run->text);
	add(env, "PI_OFFLINE=1");
	add(env, "PI_TELEMETRY=0");
}

static const struct {
	const char *name;
	void (*build)(const struct agent_run *run, struct vec *argv, struct vec *env);
} AGENTS[] = {
    {"claude", claude_cmd},
    {"codex", codex_cmd},
    {"opencode", opencode_cmd},
    {"pi", pi_cmd},
};

int agent_command(const char *agent, const struct agent_run *run, char ***ret_argv, char ***ret_env,
		  pd_error *err)
{
	struct vec argv = {0}, env = {0};
	char **a, **e;
	size_t i;

	for (i = 0; i < ELEMENTSOF(AGENTS); i++)
		if (agent && strcmp(agent, AGENTS[i].name) == 0)
			break;
	if (i == ELEMENTSOF(AGENTS))
		return pd_error_set(err, -ENOENT, "agent %.64s has no headless mode here",
				    agent ? agent : "(none)");
	if (!run->text || !run->text[0])
		return pd_error_set(err, -EINVAL, "the prompt is empty");
	if (strlen(run->text) > AGENT_TEXT_MAX)
		return pd_error_set(err, -EINVAL, "the prompt is longer than %u bytes",
				    AGENT_TEXT_MAX);
	if (run->model && !good_word(run->model))
		return pd_error_set(
		    err, -EINVAL,
		    "model: not a model name (letters, digits, \"._:/@+-\", not starting with -)");
	if (run->session && !good_word(run->session))
		return pd_error_set(err, -EINVAL, "session: not a session id of %s", agent);
	if (run->base_url && !good_url(run->base_url))
		return pd_error_set(
		    err, -EINVAL,
		    "base_url: not an http:// or https:// URL of printable characters");
	AGENTS[i].build(run, &argv, &env);
	if (argv.oom || env.oom) {
		vec_release(&argv);
		vec_release(&env);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	a = vec_take(&argv);
	e = vec_take(&env);
	if (!a || !e) {
		strv_free(a);
		strv_free(e);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	*ret_argv = a;
	*ret_env = e;
	return 0;
}
