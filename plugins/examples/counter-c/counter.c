/*
 * counter: a count that survives /reload, --watch reloads and a restart, because it lives in
 * the session, not in the plugin's memory (a reloaded plugin starts with fresh memory).
 *
 *   /count          ->  count + 1, appended to the session as a `custom` entry
 *                       {"customType":"counter","data":{"count":N}}, then notify("count: N")
 *   session_start   ->  count = data.count of the last "counter" entry on the session's
 *                       branch (0 when there is none), then
 *                       notify("counter VERSION: restored count N on REASON")
 *
 * `session_start` comes at startup (also with --continue), after /reload and a --watch
 * reload ("reload"), and after a new session, a resume or a fork ("new", "resume", "fork"):
 * each time the count is read again from the branch the session is now on.
 *
 * Written only against include/pi_hooks.h; build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libcounter_c.so plugins/examples/counter-c/counter.c
 * Pass -DVERSION='"1.2.3"' to give a build its own version (it shows in the notification
 * above and in the reload report).
 */
#include <stdio.h>
#include <string.h>

#include "pi_hooks.h"

#ifndef VERSION
#define VERSION "1.0.0"
#endif

#define CUSTOM_TYPE "counter"

/* The host's tables and this plugin's handle: set once in init. */
static const PiHostApi *host;
static PiPlugin *self;

/* The count: rebuilt from the session at every session_start. */
static int64_t count;

/* Whether the borrowed string `s` is exactly the C string `text`. */
static bool str_is(PiStr s, const char *text) {
    size_t len = strlen(text);
    return s.len == len && memcmp(s.ptr, text, len) == 0;
}

/* The count of the last "counter" entry of `branch` (an array of entries, root first),
 * or 0 when there is none. */
static int64_t last_count(const PiValue *branch) {
    const PiValueApi *v = host->values;
    size_t i = v->len(branch);
    while (i > 0) {
        const PiValue *entry = v->at(branch, --i);
        PiStr type = {0}, custom_type = {0};
        int64_t n = 0;
        if (v->as_str(v->get(entry, pi_str("type")), &type) == PI_OK && str_is(type, "custom") &&
            v->as_str(v->get(entry, pi_str("customType")), &custom_type) == PI_OK &&
            str_is(custom_type, CUSTOM_TYPE) &&
            v->as_int(v->pointer(entry, pi_str("/data/count")), &n) == PI_OK)
            return n;
    }
    return 0;
}

static PiStatus on_session_start(void *user_data, const PiValue *event, PiContext *ctx,
                                 PiResult *result) {
    const PiValueApi *v = host->values;
    PiValue *branch = NULL;
    PiStr reason = {0};
    char text[160];
    PiStatus status;
    (void)user_data;
    (void)result;
    status = host->context->session_branch(ctx, &branch);
    if (status != PI_OK) {
        host->context->set_error(ctx, pi_str("counter: could not read the session branch"));
        return status;
    }
    count = last_count(branch);
    v->free(branch);
    if (v->as_str(v->get(event, pi_str("reason")), &reason) != PI_OK) reason = pi_str("?");
    snprintf(text, sizeof text, "counter %s: restored count %lld on %.*s", VERSION,
             (long long)count, reason.len > 40 ? 40 : (int)reason.len, reason.ptr);
    return host->ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
}

static PiStatus count_command(void *user_data, PiStr args, PiContext *ctx) {
    int64_t next = count + 1;
    char data[64], text[64];
    PiStatus status;
    (void)user_data;
    (void)args;
    snprintf(data, sizeof data, "{\"count\":%lld}", (long long)next);
    /* On disk before the call returns: the count only moves once it is saved. */
    status = host->actions->append_entry(self, pi_str(CUSTOM_TYPE), pi_str(data));
    if (status != PI_OK) {
        host->context->set_error(ctx, pi_str("counter: could not save the count in the session"));
        return status;
    }
    count = next;
    snprintf(text, sizeof text, "count: %lld", (long long)count);
    return host->ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def;
    PiStatus status;
    host = h;
    self = plugin;
    status = host->registry->on(plugin, pi_str("session_start"), on_session_start, NULL);
    if (status != PI_OK) return status;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("count");
    def.description = pi_str("Counts up by one; the count is kept in the session");
    def.handler = count_command;
    return host->registry->register_command(plugin, &def);
}

PI_HOOKS_PLUGIN("counter", VERSION, "a /count that survives reloads and restarts", init, NULL);
