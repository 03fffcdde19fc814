/* bang-stats (C): an input starting with `!!` is sent without the `!!` (and the spaces after
 * it) and with a note asking for a short answer; /stats notifies how many inputs and tool
 * calls the plugin saw. See README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pi_hooks.h"

#define NOTE "\n\n(Answer briefly.)"

static const PiHostApi *host;
static long inputs, tool_calls;

static PiStatus on_input(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiStr text = {0};
    (void)ud, (void)ctx;
    inputs++;
    if (host->values->as_str(host->values->get(event, pi_str("text")), &text) != PI_OK ||
        strncmp(text.ptr, "!!", 2) != 0)
        return PI_OK;
    size_t skip = 2 + strspn(text.ptr + 2, " "), n = text.len - skip;
    char *out = malloc(n + sizeof NOTE);
    if (out == NULL) return PI_ERR;
    memcpy(out, text.ptr + skip, n);
    memcpy(out + n, NOTE, sizeof NOTE);
    host->results->set_string(result, pi_str("action"), pi_str("transform"));
    PiStatus status = host->results->set_string(result, pi_str("text"), pi_str_n(out, n + sizeof NOTE - 1));
    free(out);
    return status;
}

static PiStatus on_tool_call(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud, (void)event, (void)ctx, (void)result;
    tool_calls++;
    return PI_OK;
}

static PiStatus stats(void *ud, PiStr args, PiContext *ctx) {
    char text[80];
    (void)ud, (void)args;
    snprintf(text, sizeof text, "inputs: %ld, tool calls: %ld", inputs, tool_calls);
    return host->ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    const PiRegistryApi *r = (host = h)->registry;
    PiStatus status = r->on(plugin, pi_str("input"), on_input, NULL);
    if (status == PI_OK) status = r->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
    if (status == PI_OK)
        status = r->register_command(plugin, &PI_COMMAND(.name = pi_str("stats"), .handler = stats,
                                                         .description = pi_str("Counts of inputs and tool calls")));
    return status;
}

PI_HOOKS_PLUGIN("bang-stats", "1.0.0", "A !! input prefix and a /stats command", init, NULL);
