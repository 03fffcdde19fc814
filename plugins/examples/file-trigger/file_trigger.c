/*
 * file-trigger: wakes the agent when another program writes to a trigger file (the "File
 * Watcher" example of pi's hook documentation, which watches /tmp/agent-trigger.txt and calls
 * `pi.send("External trigger: <content>")`).
 *
 * At `session_start` it notifies "Watching <file>" and starts an interval timer (the host's
 * timers: plugins bring no event loop of their own) that reads the file every 200 ms. When
 * the trimmed content is not empty it is sent as a user message `External trigger: <content>`
 * with `send_user_message`, and the file is emptied (as the seed does). While the agent is
 * busy the message steers the current run (it is delivered after the running tools, before the
 * next model call, the way pi's `send` queued it); while it is idle it starts a new run.
 * A missing file is not an error: it is polled until it appears. If the host refuses the
 * message, the file is left as it is (nothing is lost) and the refusal is logged once.
 *
 * The file is /tmp/agent-trigger.txt, or the path in the environment variable
 * PI_TRIGGER_FILE. To trigger: echo "Run the tests" > /tmp/agent-trigger.txt
 *
 * Build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libfile_trigger.so plugins/examples/file-trigger/file_trigger.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pi_hooks.h"

#define DEFAULT_TRIGGER_FILE "/tmp/agent-trigger.txt"
#define POLL_MS 200
/* Content past this many bytes is not read (a trigger is a line or two). */
#define MAX_CONTENT 65536

static const PiHostApi *host;
static PiPlugin *self;
static const char *trigger_file = DEFAULT_TRIGGER_FILE;
static bool watching;
/* Whether the last send was refused (logged once until a send succeeds). */
static bool refused;

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Reads up to MAX_CONTENT bytes of the trigger file into `buf`; false when it cannot be read
 * (it does not exist yet). */
static bool read_trigger(char *buf, size_t *len) {
    FILE *f = fopen(trigger_file, "rb");
    if (f == NULL) return false;
    *len = fread(buf, 1, MAX_CONTENT, f);
    fclose(f);
    return true;
}

static PiStatus poll(void *user_data, uint64_t timer_id, PiContext *ctx) {
    static char buf[MAX_CONTENT];
    static const char prefix[] = "External trigger: ";
    static char message[sizeof prefix - 1 + MAX_CONTENT];
    size_t len = 0, start = 0;
    PiStatus status;
    FILE *f;
    (void)user_data;
    (void)timer_id;
    (void)ctx;
    if (!read_trigger(buf, &len)) return PI_OK; /* the file might not exist yet */
    while (start < len && is_space(buf[start])) start++;
    while (len > start && is_space(buf[len - 1])) len--;
    if (len == start) return PI_OK;
    memcpy(message, prefix, sizeof prefix - 1);
    memcpy(message + sizeof prefix - 1, buf + start, len - start);
    status = host->actions->send_user_message(
        self, pi_str_n(message, sizeof prefix - 1 + len - start), PI_DELIVER_STEER);
    if (status != PI_OK) {
        if (!refused) {
            char line[160];
            snprintf(line, sizeof line,
                     "file-trigger: the host refused the message (status %d); %s is kept",
                     (int)status, trigger_file);
            host->actions->log(self, PI_LOG_WARN, pi_str(line));
        }
        refused = true;
        return PI_OK;
    }
    refused = false;
    f = fopen(trigger_file, "w"); /* clear after reading */
    if (f != NULL) fclose(f);
    return PI_OK;
}

static PiStatus on_session_start(void *user_data, const PiValue *event, PiContext *ctx,
                                 PiResult *result) {
    char line[4200];
    PiStatus status;
    (void)user_data;
    (void)event;
    (void)result;
    if (watching) return PI_OK;
    status = host->actions->timer_start(self, POLL_MS, POLL_MS, poll, NULL, NULL);
    if (status != PI_OK) {
        host->context->set_error(ctx, pi_str("file-trigger: could not start the poll timer"));
        return status;
    }
    watching = true;
    snprintf(line, sizeof line, "Watching %s", trigger_file);
    host->ui->notify(ctx, pi_str(line), PI_NOTIFY_INFO);
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    const char *from_env = getenv("PI_TRIGGER_FILE");
    host = h;
    self = plugin;
    if (from_env != NULL && from_env[0] != '\0') trigger_file = from_env;
    return host->registry->on(plugin, pi_str("session_start"), on_session_start, NULL);
}

PI_HOOKS_PLUGIN("file-trigger", "1.0.0", "Sends the content of a trigger file as a user message",
                init, NULL);
