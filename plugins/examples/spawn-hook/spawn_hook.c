/*
 * spawn-hook: the built-in `bash` runs `pnpm` where the model asked for `npm` (the "Bash Spawn
 * Hook" of pi's hook documentation: `command.replace(/^npm /, "pnpm ")`, with `CUSTOM_VAR=1`
 * added to the environment).
 *
 * A `tool_call` handler rewrites the call's input: the result's `input` is the arguments the
 * tool runs with (pi's handlers mutate `event.input` in place). The built-in `bash` keeps its
 * streaming, truncation and abort; later `tool_call` handlers see the rewritten command, and a
 * blocker among them still wins. The tool call the model made (`tool_execution_start`'s
 * `args`) shows the command it asked for; `tool_result`'s `input` shows the one that ran.
 *
 * Build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libspawn_hook.so plugins/examples/spawn-hook/spawn_hook.c
 */
#include <stdlib.h>
#include <string.h>

#include "pi_hooks.h"

/* The host's tables: valid until the plugin is unloaded. */
static const PiHostApi *host;

static const char env_prefix[] = "export CUSTOM_VAR=1; ";

/* `env_prefix` + `command` with a leading "npm " replaced by "pnpm ", in a new buffer (free
 * it), or NULL when out of memory. */
static char *rewrite(PiStr command) {
    static const char from[] = "npm ";
    const char *prefix = "";
    size_t skip = 0, head, len;
    char *out;
    if (command.len >= sizeof from - 1 && memcmp(command.ptr, from, sizeof from - 1) == 0) {
        skip = sizeof from - 1;
        prefix = "pnpm ";
    }
    head = strlen(env_prefix) + strlen(prefix);
    len = head + command.len - skip;
    out = malloc(len + 1);
    if (out == NULL) return NULL;
    strcpy(out, env_prefix);
    strcat(out, prefix);
    memcpy(out + head, command.ptr + skip, command.len - skip);
    out[len] = '\0';
    return out;
}

static PiStatus on_tool_call(void *user_data, const PiValue *event, PiContext *ctx,
                             PiResult *result) {
    const PiValueApi *v = host->values;
    const PiValue *input = v->get(event, pi_str("input"));
    PiStr tool = {0}, command = {0};
    PiValue *changed;
    char *text;
    PiStatus status;
    (void)user_data;

    if (v->as_str(v->get(event, pi_str("toolName")), &tool) != PI_OK ||
        tool.len != 4 || memcmp(tool.ptr, "bash", 4) != 0 ||
        v->as_str(v->get(input, pi_str("command")), &command) != PI_OK)
        return PI_OK; /* not a bash call with a command: nothing to change */

    text = rewrite(command);
    if (text == NULL) {
        host->context->set_error(ctx, pi_str("spawn-hook: out of memory"));
        return PI_ERR; /* fails closed: the tool does not run unrewritten */
    }
    /* The same input (timeout and all) with the new command. */
    changed = v->copy(input);
    status = v->set(changed, pi_str("command"), v->new_string(pi_str(text)));
    free(text);
    if (status == PI_OK) status = host->results->set_value(result, pi_str("input"), changed);
    v->free(changed);
    return status;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
}

PI_HOOKS_PLUGIN("spawn-hook", "2.0.0", "bash runs pnpm where the model asked for npm", init, NULL);
