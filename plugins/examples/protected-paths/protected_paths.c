/*
 * protected-paths: blocks `write` and `edit` tool calls on protected paths.
 *
 * A path is protected when, after dropping "." components (so "./.env" is ".env"):
 *   - its last component is ".env", or
 *   - one of its components is ".git" or "node_modules" (".git/config",
 *     "web/node_modules/x/index.js", and the ".git" entry itself).
 * Both "/" and "\" separate components. The tool's input is checked under "path" and
 * "file_path", since tools name it either way.
 *
 * Written only against include/pi_hooks.h; build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libprotected_paths.so plugins/examples/protected-paths/protected_paths.c
 */
#include <stdlib.h>
#include <string.h>

#include "pi_hooks.h"

/* The host's tables: valid until the plugin is unloaded (set once in init). */
static const PiHostApi *host;

/* Whether `len` bytes at `s` are exactly the NUL-terminated `word`. */
static bool equals(const char *s, size_t len, const char *word) {
    return len == strlen(word) && memcmp(s, word, len) == 0;
}

static bool is_separator(char c) {
    return c == '/' || c == '\\';
}

/* Whether the path (`len` bytes, not necessarily NUL-terminated) is protected. */
static bool is_protected(const char *path, size_t len) {
    const char *last = NULL;
    size_t last_len = 0;
    size_t i = 0;
    while (i < len) {
        size_t start;
        size_t n;
        while (i < len && is_separator(path[i])) i++;
        start = i;
        while (i < len && !is_separator(path[i])) i++;
        n = i - start;
        if (n == 0 || equals(path + start, n, ".")) continue; /* "", "./", "a/./b" */
        if (equals(path + start, n, ".git") || equals(path + start, n, "node_modules"))
            return true;
        last = path + start;
        last_len = n;
    }
    return last != NULL && equals(last, last_len, ".env");
}

/* Blocks the tool call with the reason `Path "<path>" is protected`. */
static PiStatus block(PiContext *ctx, PiResult *result, PiStr path) {
    static const char prefix[] = "Path \"";
    static const char suffix[] = "\" is protected";
    const PiResultApi *r = host->results;
    size_t len = (sizeof prefix - 1) + path.len + (sizeof suffix - 1);
    char *reason = malloc(len);
    PiStatus status;
    if (reason == NULL) {
        /* An error in tool_call blocks the tool anyway (fail closed). */
        host->context->set_error(ctx, pi_str("protected-paths: out of memory"));
        return PI_ERR;
    }
    memcpy(reason, prefix, sizeof prefix - 1);
    memcpy(reason + sizeof prefix - 1, path.ptr, path.len);
    memcpy(reason + sizeof prefix - 1 + path.len, suffix, sizeof suffix - 1);
    status = r->set_bool(result, pi_str("block"), true);
    if (status == PI_OK) status = r->set_string(result, pi_str("reason"), pi_str_n(reason, len));
    free(reason); /* the host copied it */
    return status;
}

static PiStatus on_tool_call(void *user_data, const PiValue *event, PiContext *ctx,
                             PiResult *result) {
    static const char *const keys[] = {"path", "file_path"};
    const PiValueApi *v = host->values;
    const PiValue *input;
    PiStr tool = {NULL, 0};
    size_t k;
    (void)user_data;

    if (v->as_str(v->get(event, pi_str("toolName")), &tool) != PI_OK) return PI_OK;
    if (!equals(tool.ptr, tool.len, "write") && !equals(tool.ptr, tool.len, "edit"))
        return PI_OK;

    input = v->get(event, pi_str("input")); /* borrowed: never freed */
    for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        PiStr path = {NULL, 0};
        if (v->as_str(v->get(input, pi_str(keys[k])), &path) == PI_OK &&
            is_protected(path.ptr, path.len))
            return block(ctx, result, path);
    }
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiStatus status;
    host = h;
    status = host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
    if (status != PI_OK)
        host->registry->set_init_error(plugin, pi_str("cannot subscribe to tool_call"));
    return status;
}

PI_HOOKS_PLUGIN("protected-paths", "0.1.0",
                "Blocks write and edit on .env files and inside .git/ and node_modules/", init,
                NULL);
