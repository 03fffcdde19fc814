/*
 * spawn-hook: replaces the built-in `bash` tool with one that rewrites a command starting
 * with `npm ` to `pnpm ` before it runs (the "Bash Spawn Hook" of pi's hook documentation:
 * `command.replace(/^npm /, "pnpm ")`, with `CUSTOM_VAR=1` added to the environment).
 *
 * A plugin tool named like a built-in replaces it, so the model keeps calling `bash` with the
 * same parameters `{command, timeout?}` and never sees the rewrite: the tool call shows the
 * command it asked for, the result is the output of the rewritten one. `tool_call` handlers
 * still run first, so a blocker can stop the command before it is rewritten.
 *
 * The command runs through the host's `exec`, which has no shell of its own: the program is
 * `env CUSTOM_VAR=1 bash -c <command>`, in the session's cwd. The result follows the
 * built-in's shape: stdout then stderr as one text (`(no output)` when both are empty), and a
 * non-zero exit is an error result ending in `\n\nCommand exited with code N`; a `timeout`
 * (seconds) that runs out is an error ending in `Command timed out after N seconds`.
 *
 * Build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libspawn_hook.so plugins/examples/spawn-hook/spawn_hook.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pi_hooks.h"

/* The host's tables and this plugin's handle: valid until the plugin is unloaded. */
static const PiHostApi *host;
static PiPlugin *self;

/* The built-in bash tool's description and parameters (loader/src/tools/builtin/bash.rs). */
static const char description[] =
    "Execute a bash command in the current working directory. Returns stdout and stderr. "
    "Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, "
    "full output is saved to a temp file. Optionally provide a timeout in seconds.";
static const char parameters[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"command\":{\"type\":\"string\",\"description\":\"Bash command to execute\"},"
    "\"timeout\":{\"type\":\"number\",\"description\":\"Timeout in seconds (optional, no "
    "default timeout)\"}},\"required\":[\"command\"]}";

/* The spawn hook: `command` with a leading "npm " replaced by "pnpm ", in a new buffer (free
 * it), or NULL when out of memory. */
static char *rewrite(PiStr command) {
    static const char from[] = "npm ";
    static const char to[] = "pnpm ";
    size_t skip = 0;
    const char *prefix = "";
    char *out;
    if (command.len >= sizeof from - 1 && memcmp(command.ptr, from, sizeof from - 1) == 0) {
        skip = sizeof from - 1;
        prefix = to;
    }
    out = malloc(strlen(prefix) + command.len - skip + 1);
    if (out == NULL) return NULL;
    strcpy(out, prefix);
    memcpy(out + strlen(prefix), command.ptr + skip, command.len - skip);
    out[strlen(prefix) + command.len - skip] = '\0';
    return out;
}

/* Appends `len` bytes at `s` to the growing NUL-terminated buffer `*buf` of length `*len`. */
static bool append(char **buf, size_t *len, const char *s, size_t n) {
    char *grown = realloc(*buf, *len + n + 1);
    if (grown == NULL) return false;
    if (n > 0) memcpy(grown + *len, s, n);
    *len += n;
    grown[*len] = '\0';
    *buf = grown;
    return true;
}

static PiStatus fail(PiContext *ctx, const char *message) {
    host->context->set_error(ctx, pi_str(message));
    return PI_ERR;
}

static PiStatus execute(void *user_data, PiStr tool_call_id, const PiValue *params,
                        PiContext *ctx, PiResult *result) {
    const PiValueApi *v = host->values;
    PiStr command = {0}, out = {0}, err = {0};
    double timeout = 0;
    int64_t code = 0;
    bool killed = false;
    char *rewritten, *text = NULL, tail[96];
    size_t text_len = 0;
    PiStr args[4];
    PiExecRequest request;
    PiValue *ran = NULL;
    PiStatus status;
    (void)user_data;
    (void)tool_call_id;

    if (v->as_str(v->get(params, pi_str("command")), &command) != PI_OK)
        return fail(ctx, "bash: \"command\" must be a string");
    if (v->kind(v->get(params, pi_str("timeout"))) == PI_VALUE_NUMBER)
        v->as_float(v->get(params, pi_str("timeout")), &timeout);

    rewritten = rewrite(command);
    if (rewritten == NULL) return fail(ctx, "bash: out of memory");
    args[0] = pi_str("CUSTOM_VAR=1");
    args[1] = pi_str("bash");
    args[2] = pi_str("-c");
    args[3] = pi_str(rewritten);
    memset(&request, 0, sizeof request);
    request.struct_size = (uint32_t)sizeof request;
    request.program = pi_str("env");
    request.args = args;
    request.arg_count = 4;
    request.cwd = pi_str(""); /* the session's cwd */
    request.timeout_ms = timeout > 0 ? (uint64_t)(timeout * 1000.0) : 0;
    request.flags = PI_EXEC_CANCEL_ON_ABORT; /* stopped when the user aborts the run */
    status = host->actions->exec(self, &request, &ran);
    free(rewritten);
    if (status != PI_OK) return fail(ctx, "bash: the host could not run the command");

    v->as_str(v->get(ran, pi_str("stdout")), &out);
    v->as_str(v->get(ran, pi_str("stderr")), &err);
    v->as_int(v->get(ran, pi_str("code")), &code);
    v->as_bool(v->get(ran, pi_str("killed")), &killed);
    if (!append(&text, &text_len, "", 0) || !append(&text, &text_len, out.ptr, out.len) ||
        !append(&text, &text_len, err.ptr, err.len)) {
        free(text);
        host->values->free(ran);
        return fail(ctx, "bash: out of memory");
    }
    host->values->free(ran);

    tail[0] = '\0';
    if (killed && timeout > 0)
        snprintf(tail, sizeof tail, "Command timed out after %g seconds", timeout);
    else if (killed)
        snprintf(tail, sizeof tail, "Command aborted");
    else if (code != 0)
        snprintf(tail, sizeof tail, "Command exited with code %lld", (long long)code);
    if (tail[0] != '\0') {
        bool ok = (text_len == 0 || append(&text, &text_len, "\n\n", 2)) &&
                  append(&text, &text_len, tail, strlen(tail));
        if (!ok) {
            free(text);
            return fail(ctx, "bash: out of memory");
        }
        host->results->set_bool(result, pi_str("isError"), true);
    } else if (text_len == 0 && !append(&text, &text_len, "(no output)", 11)) {
        free(text);
        return fail(ctx, "bash: out of memory");
    }
    status = host->results->add_text(result, pi_str_n(text, text_len));
    free(text);
    return status;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiToolDef tool;
    host = h;
    self = plugin;
    memset(&tool, 0, sizeof tool);
    tool.struct_size = (uint32_t)sizeof tool;
    tool.name = pi_str("bash");
    tool.label = pi_str("bash");
    tool.description = pi_str(description);
    tool.parameters_json = pi_str(parameters);
    tool.execute = execute;
    return host->registry->register_tool(plugin, &tool);
}

PI_HOOKS_PLUGIN("spawn-hook", "1.0.0", "bash tool that runs pnpm where the model asked for npm",
                init, NULL);
