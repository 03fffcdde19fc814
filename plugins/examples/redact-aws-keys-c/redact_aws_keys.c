/* redact-aws-keys (C): replaces AWS access key ids (AKIA[0-9A-Z]{16}) in the text of every
 * tool result with [REDACTED], keeping image blocks as they are. See README.md. */
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus on_tool_result(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    const PiValueApi *v = host->values;
    size_t n = 0;
    (void)ud, (void)ctx;
    PiValue *content = v->replace_text(v->get(event, pi_str("content")),
                                       pi_str("AKIA[0-9A-Z]{16}"), pi_str("[REDACTED]"), &n);
    PiStatus status = n > 0 ? host->results->set_value(result, pi_str("content"), content) : PI_OK;
    v->free(content);
    return status;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("tool_result"), on_tool_result, NULL);
}

PI_HOOKS_PLUGIN("redact-aws-keys", "1.0.0", "Redacts AWS access key ids in tool results", init, NULL);
