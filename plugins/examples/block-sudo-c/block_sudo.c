/* block-sudo (C): blocks bash tool calls whose command has the word `sudo`. See README.md. */
#include <ctype.h>
#include <string.h>

#include "pi_hooks.h"

static const PiHostApi *host;

/* Whether `s` has `word` with no letter, digit or `_` right before or after it (regex \b). */
static bool has_word(const char *s, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(s, word); p != NULL; p = strstr(p + 1, word))
        if ((p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
            !(isalnum((unsigned char)p[n]) || p[n] == '_'))
            return true;
    return false;
}

static PiStatus on_tool_call(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    const PiValueApi *v = host->values;
    PiStr tool = {0}, command = {0};
    (void)ud, (void)ctx;
    if (v->as_str(v->get(event, pi_str("toolName")), &tool) == PI_OK && strcmp(tool.ptr, "bash") == 0 &&
        v->as_str(v->pointer(event, pi_str("/input/command")), &command) == PI_OK &&
        has_word(command.ptr, "sudo")) {
        host->results->set_bool(result, pi_str("block"), true);
        host->results->set_string(result, pi_str("reason"), pi_str("sudo is not allowed"));
    }
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
}

PI_HOOKS_PLUGIN("block-sudo", "1.0.0", "Blocks sudo in bash", init, NULL);
