/* ui-tour (C): puts every UI element a plugin can draw on the screen, for trying a terminal
 * (pi-hooks' interactive mode, or pi through the bridge) and for its tests.
 *
 *   /tour        sets the title, a status, a widget above and one below the editor; asks a
 *                select, a confirm (5 s timeout), an input (5 s timeout) and an editor; sends
 *                a warning and an error; then reports the answers in one notification and
 *                sends a `tour:card` custom message, which its renderer draws in a box.
 *   /tour quick  the same without the dialogs.
 *   /tour clear  removes the status and both widgets.
 *
 * The command completes its argument (quick, full, clear). While the agent works, the
 * working line reads "Touring..." (set in before_agent_start). The shortcut Ctrl+Q notifies
 * "tour: ctrl+q pressed" (keys are pi's format: ctrl+shift+p, alt+x, f5, ...; Ctrl+T is pi's
 * thinking toggle, a reserved key no plugin shortcut may take).
 *
 * Written only against include/pi_hooks.h; build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libui_tour.so plugins/examples/ui-tour/ui_tour.c
 */
#include <stdio.h>
#include <string.h>

#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;

/* Whether `args` starts with `word`. */
static bool starts_with(PiStr args, const char *word) {
    size_t n = strlen(word);
    return args.len >= n && memcmp(args.ptr, word, n) == 0;
}

/* Copies an owned string value (or `none`) into `out`, then frees it. */
static void take_text(PiValue *value, char *out, size_t size) {
    PiStr text = {0};
    if (value != NULL && host->values->as_str(value, &text) == PI_OK)
        snprintf(out, size, "%.*s", (int)text.len, text.ptr);
    else
        snprintf(out, size, "none");
    for (char *c = out; *c; c++)
        if (*c == '\n') *c = '|';
    host->values->free(value);
}

static PiStatus tour(void *ud, PiStr args, PiContext *ctx) {
    const PiUiApi *ui = host->ui;
    (void)ud;
    if (starts_with(args, "clear")) {
        ui->set_status(ctx, pi_str("tour"), (PiStr){0});
        ui->set_widget(ctx, pi_str("tour-above"), NULL, 0, PI_WIDGET_ABOVE_EDITOR);
        return ui->set_widget(ctx, pi_str("tour-below"), NULL, 0, PI_WIDGET_BELOW_EDITOR);
    }
    PiStr above[] = {pi_str("tour: a widget above the editor"), pi_str("tour: its second line")};
    PiStr below[] = {pi_str("tour: a widget below the editor")};
    ui->set_title(ctx, pi_str("pi-hooks tour"));
    ui->set_status(ctx, pi_str("tour"), pi_str("tour: running"));
    ui->set_widget(ctx, pi_str("tour-above"), above, 2, PI_WIDGET_ABOVE_EDITOR);
    ui->set_widget(ctx, pi_str("tour-below"), below, 1, PI_WIDGET_BELOW_EDITOR);

    char answers[512] = "no dialogs";
    if (!starts_with(args, "quick")) {
        PiStr colours[] = {pi_str("red"), pi_str("green"), pi_str("blue")};
        PiDialogOptions five = {.struct_size = sizeof five, .timeout_ms = 5000};
        int64_t picked = -1;
        bool yes = false;
        PiValue *name = NULL, *note = NULL;
        char name_text[128], note_text[256];
        ui->select(ctx, pi_str("Pick a colour"), colours, 3, NULL, &picked);
        ui->confirm(ctx, pi_str("Keep going?"), pi_str("Say yes within 5 seconds"), &five, &yes);
        ui->input(ctx, pi_str("Your name"), pi_str("type a name"), &five, &name);
        ui->editor(ctx, pi_str("Write a note"), pi_str("first line"), &note);
        take_text(name, name_text, sizeof name_text);
        take_text(note, note_text, sizeof note_text);
        snprintf(answers, sizeof answers, "select=%s confirm=%s input=%s editor=%s",
                 picked >= 0 && picked < 3 ? colours[picked].ptr : "none", yes ? "yes" : "no",
                 name_text, note_text);
    }
    ui->notify(ctx, pi_str("tour: a warning"), PI_NOTIFY_WARNING);
    ui->notify(ctx, pi_str("tour: an error"), PI_NOTIFY_ERROR);
    char text[600];
    snprintf(text, sizeof text, "tour answers: %s", answers);
    ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
    ui->set_status(ctx, pi_str("tour"), pi_str("tour: done"));
    return host->actions->send_message(
        self, pi_str("{\"customType\":\"tour:card\",\"content\":\"the tour is over\",\"display\":true}"),
        pi_str(""));
}

/* Argument completions: the parts that start with what was typed. */
static PiStatus complete(void *ud, PiStr prefix, PiResult *result) {
    static const char *const parts[][2] = {
        {"quick", "no dialogs"}, {"full", "every dialog"}, {"clear", "remove the status and widgets"}};
    char json[512] = "[";
    (void)ud;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (prefix.len > strlen(parts[i][0]) || memcmp(parts[i][0], prefix.ptr, prefix.len) != 0)
            continue;
        size_t at = strlen(json);
        snprintf(json + at, sizeof json - at, "%s{\"value\":\"%s\",\"label\":\"%s\",\"description\":\"%s\"}",
                 at > 1 ? "," : "", parts[i][0], parts[i][0], parts[i][1]);
    }
    strcat(json, "]");
    return host->results->set_json(result, pi_str(json));
}

/* Draws a `tour:card` message in a box. */
static PiStatus render(void *ud, const PiValue *message, const PiValue *options, PiResult *result) {
    PiStr content = {0};
    char json[512];
    (void)ud, (void)options;
    host->values->as_str(host->values->get(message, pi_str("content")), &content);
    snprintf(json, sizeof json, "[\"+-- tour card --\",\"| %.*s\",\"+----------------\"]",
             (int)(content.len > 200 ? 200 : content.len), content.ptr);
    return host->results->set_json(result, pi_str(json));
}

static PiStatus on_ctrl_q(void *ud, PiContext *ctx) {
    (void)ud;
    return host->ui->notify(ctx, pi_str("tour: ctrl+q pressed"), PI_NOTIFY_INFO);
}

static PiStatus before_agent_start(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud, (void)event, (void)result;
    return host->ui->set_working_message(ctx, pi_str("Touring..."));
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    const PiRegistryApi *r = (host = h)->registry;
    self = plugin;
    PiStatus status = r->register_command(
        plugin, &PI_COMMAND(.name = pi_str("tour"), .handler = tour, .complete = complete,
                            .description = pi_str("Show every UI element a plugin can draw")));
    if (status == PI_OK)
        status = r->register_message_renderer(
            plugin, &(PiRendererDef){.struct_size = sizeof(PiRendererDef),
                                     .custom_type = pi_str("tour:card"), .render = render});
    if (status == PI_OK) status = r->on(plugin, pi_str("before_agent_start"), before_agent_start, NULL);
    if (status == PI_OK)
        status = r->register_shortcut(
            plugin, &(PiShortcutDef){.struct_size = sizeof(PiShortcutDef), .key = pi_str("ctrl+q"),
                                     .description = pi_str("Say that Ctrl+Q was pressed"),
                                     .handler = on_ctrl_q});
    return status;
}

PI_HOOKS_PLUGIN("ui-tour", "1.0.0", "Draws every UI element a plugin can", init, NULL);
