/* The native plugin of scripts/bench-boundary.sh: one turn_end handler that reads the
 * payload's turnIndex (what a workflow or checkpoint plugin reads) and nothing else. */
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus on_turn_end(void *user_data, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)user_data;
    (void)ctx;
    (void)result;
    int64_t turn = 0;
    host->values->as_int(host->values->get(event, pi_str("turnIndex")), &turn);
    return PI_OK;
}

static PiStatus init(const PiHostApi *api, PiPlugin *plugin) {
    host = api;
    return host->registry->on(plugin, pi_str("turn_end"), on_turn_end, NULL);
}

PI_HOOKS_PLUGIN("turn-end-reader", "1.0.0", "Reads turn_end's turnIndex", init, NULL);
