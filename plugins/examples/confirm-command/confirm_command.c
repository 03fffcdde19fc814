/*
 * confirm-command: registers `/deploy [target]`, a command whose handler asks a dialog.
 *
 *   /deploy staging  ->  confirm("Deploy?", "Deploy to staging?")
 *                    ->  notify("Deploying to staging", info)     when confirmed
 *                        notify("Deploy to staging cancelled", warning)  otherwise
 *
 * The target defaults to "production". Without a UI (print and JSON modes) `confirm` answers
 * false at once, so the deploy is cancelled. In RPC mode the dialog and the notification are
 * `extension_ui_request` lines, and the prompt's response comes after the handler returns.
 *
 * Written only against include/pi_hooks.h; build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libconfirm_command.so plugins/examples/confirm-command/confirm_command.c
 */
#include <stdio.h>
#include <string.h>

#include "pi_hooks.h"

/* The host's tables: valid until the plugin is unloaded (set once in init). */
static const PiHostApi *host;

/* `args` without leading and trailing spaces, or "production" when that leaves nothing. */
static PiStr target_of(PiStr args) {
    const char *start = args.ptr;
    size_t len = args.len;
    while (len > 0 && (*start == ' ' || *start == '\t')) {
        start++;
        len--;
    }
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t')) len--;
    return len == 0 ? pi_str("production") : pi_str_n(start, len);
}

static PiStatus deploy(void *user_data, PiStr args, PiContext *ctx) {
    PiStr target = target_of(args);
    char question[256];
    char answer[256];
    bool yes = false;
    int shown = target.len > 200 ? 200 : (int)target.len; /* keeps the texts in the buffers */
    PiStatus status;
    (void)user_data;
    snprintf(question, sizeof question, "Deploy to %.*s?", shown, target.ptr);
    status = host->ui->confirm(ctx, pi_str("Deploy?"), pi_str(question), NULL, &yes);
    if (status != PI_OK) return status;
    if (yes) {
        snprintf(answer, sizeof answer, "Deploying to %.*s", shown, target.ptr);
        return host->ui->notify(ctx, pi_str(answer), PI_NOTIFY_INFO);
    }
    snprintf(answer, sizeof answer, "Deploy to %.*s cancelled", shown, target.ptr);
    return host->ui->notify(ctx, pi_str(answer), PI_NOTIFY_WARNING);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def;
    host = h;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("deploy");
    def.description = pi_str("Deploy (asks first): /deploy [target]");
    def.handler = deploy;
    return host->registry->register_command(plugin, &def);
}

PI_HOOKS_PLUGIN("confirm-command", "1.0.0", "a /deploy command that asks before it deploys",
                init, NULL);
