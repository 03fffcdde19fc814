/*
 * permission-gate (C): the Rust permission-gate example in C. Blocks dangerous bash commands,
 * as the "Shitty Permission Gate" example of pi's hook documentation does: `rm -r...` /
 * `rm --recursive`, `sudo`, and `chmod`/`chown ... 777` (case-insensitive). With a UI
 * (interactive, RPC, pi through the bridge) the user is asked
 *
 *   select("⚠️ Dangerous command:\n\n  <command>\n\nAllow?", ["Yes", "No"])
 *
 * and the command is blocked with "Blocked by user" unless the answer is "Yes". Without a UI
 * (print and JSON modes) it is blocked too; the reason then names the command, since nobody
 * was asked. See README.md.
 *
 * Written only against include/pi_hooks.h; build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libpermission_gate_c.so plugins/examples/permission-gate-c/permission_gate.c
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pi_hooks.h"

/* The host's tables: valid until the plugin is unloaded (set once in init). */
static const PiHostApi *host;

static bool is_word(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Whether `at` (inside `text`) starts a word: no word character right before it (regex \b). */
static bool starts_word(const char *text, const char *at) { return at == text || !is_word(at[-1]); }

/* pi's three patterns on the lower-cased command: /\brm\s+(-rf?|--recursive)/,
 * /\bsudo\b/, /\b(chmod|chown)\b.*777/. */
static bool is_dangerous(const char *text) {
    static const char *const modes[] = {"chmod", "chown"};
    for (const char *p = strstr(text, "rm"); p != NULL; p = strstr(p + 1, "rm")) {
        const char *args = p + 2;
        if (!starts_word(text, p) || !isspace((unsigned char)*args)) continue;
        while (isspace((unsigned char)*args)) args++;
        if (strncmp(args, "-r", 2) == 0 || strncmp(args, "--recursive", 11) == 0) return true;
    }
    for (const char *p = strstr(text, "sudo"); p != NULL; p = strstr(p + 1, "sudo"))
        if (starts_word(text, p) && !is_word(p[4])) return true;
    for (size_t m = 0; m < 2; m++) {
        size_t n = strlen(modes[m]);
        for (const char *p = strstr(text, modes[m]); p != NULL; p = strstr(p + 1, modes[m]))
            if (starts_word(text, p) && !is_word(p[n]) && strstr(p + n, "777") != NULL) return true;
    }
    return false;
}

/* Sets the block result with `reason`. */
static PiStatus block(PiResult *result, const char *reason) {
    host->results->set_bool(result, pi_str("block"), true);
    return host->results->set_string(result, pi_str("reason"), pi_str(reason));
}

/* Asks the user about `command` (the plugin's own copy, `len` bytes); blocks unless "Yes". */
static PiStatus ask(PiContext *ctx, PiResult *result, const char *command, size_t len) {
    static const char *const format = "\xE2\x9A\xA0\xEF\xB8\x8F Dangerous command:\n\n  %s\n\nAllow?";
    const PiStr choices[2] = {pi_str("Yes"), pi_str("No")};
    int64_t chosen = -1;
    PiStatus status;
    char *title = malloc(len + strlen(format) + 1);
    if (title == NULL) return block(result, "Blocked: out of memory");
    snprintf(title, len + strlen(format) + 1, format, command);
    status = host->ui->select(ctx, pi_str(title), choices, 2, NULL, &chosen);
    free(title);
    if (status != PI_OK) return status; /* an error blocks the call (tool_call fails closed) */
    return chosen == 0 ? PI_OK : block(result, "Blocked by user");
}

static PiStatus on_tool_call(void *user_data, const PiValue *event, PiContext *ctx,
                             PiResult *result) {
    const PiValueApi *v = host->values;
    PiStr tool = {0}, command = {0};
    PiStatus status = PI_OK;
    char *lower;
    (void)user_data;
    if (v->as_str(v->get(event, pi_str("toolName")), &tool) != PI_OK || strcmp(tool.ptr, "bash") != 0 ||
        v->as_str(v->pointer(event, pi_str("/input/command")), &command) != PI_OK)
        return PI_OK;
    lower = malloc(command.len + 1);
    if (lower == NULL) return block(result, "Blocked: out of memory");
    for (size_t i = 0; i < command.len; i++) lower[i] = (char)tolower((unsigned char)command.ptr[i]);
    lower[command.len] = '\0';
    if (is_dangerous(lower)) {
        if (host->context->has_ui(ctx)) {
            status = ask(ctx, result, command.ptr, command.len);
        } else {
            static const char *const prefix = "Blocked dangerous command (no UI to ask): ";
            char *reason = malloc(strlen(prefix) + command.len + 1);
            if (reason == NULL) {
                status = block(result, "Blocked: out of memory");
            } else {
                snprintf(reason, strlen(prefix) + command.len + 1, "%s%s", prefix, command.ptr);
                status = block(result, reason);
                free(reason);
            }
        }
    }
    free(lower);
    return status;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
}

PI_HOOKS_PLUGIN("permission-gate-c", "1.0.0", "Blocks dangerous bash commands unless the user allows them",
                init, NULL);
