// The host's barrier against C++ exceptions: every call into plugin code goes through one of
// these functions, so an exception a C++ plugin lets escape is caught here, at the boundary,
// and becomes that call's error (with its what() text) instead of unwinding into the host,
// which cannot unwind through C frames and would abort. A call that returns normally costs one
// extra direct call: the try block is free when nothing is thrown.
//
// Each function returns what the plugin function returned, or PI_HOOKS_THREW after writing a
// NUL-terminated description of the exception into `what` (at most `cap` bytes).

#include "pi_hooks.h"

#include <cstring>
#include <exception>

namespace {

constexpr PiStatus PI_HOOKS_THREW = INT32_MIN;

void describe(char *what, size_t cap, const char *text) {
    if (what == nullptr || cap == 0) {
        return;
    }
    std::strncpy(what, text, cap - 1);
    what[cap - 1] = '\0';
}

}  // namespace

#define PI_HOOKS_BARRIER(call)                                              \
    try {                                                                   \
        return call;                                                        \
    } catch (const std::exception &e) {                                     \
        describe(what, cap, e.what());                                      \
    } catch (...) {                                                         \
        describe(what, cap, "an exception that is not a std::exception");  \
    }                                                                       \
    return PI_HOOKS_THREW;

extern "C" {

PiStatus pi_hooks_barrier_event(PiEventHandler f, void *user_data, const PiValue *event,
                                PiContext *ctx, PiResult *result, char *what, size_t cap) {
    PI_HOOKS_BARRIER(f(user_data, event, ctx, result))
}

PiStatus pi_hooks_barrier_command(PiCommandHandler f, void *user_data, PiStr args,
                                  PiContext *ctx, char *what, size_t cap) {
    PI_HOOKS_BARRIER(f(user_data, args, ctx))
}

PiStatus pi_hooks_barrier_shortcut(PiShortcutHandler f, void *user_data, PiContext *ctx,
                                   char *what, size_t cap) {
    PI_HOOKS_BARRIER(f(user_data, ctx))
}

PiStatus pi_hooks_barrier_tool(PiToolExecute f, void *user_data, PiStr tool_call_id,
                               const PiValue *params, PiContext *ctx, PiResult *result,
                               char *what, size_t cap) {
    PI_HOOKS_BARRIER(f(user_data, tool_call_id, params, ctx, result))
}

PiStatus pi_hooks_barrier_render(PiRenderHandler f, void *user_data, const PiValue *message,
                                 const PiValue *options, PiResult *result, char *what,
                                 size_t cap) {
    PI_HOOKS_BARRIER(f(user_data, message, options, result))
}

PiStatus pi_hooks_barrier_complete(PiCompletionHandler f, void *user_data, PiStr prefix,
                                   PiResult *result, char *what, size_t cap) {
    PI_HOOKS_BARRIER(f(user_data, prefix, result))
}

PiStatus pi_hooks_barrier_bus(PiBusHandler f, void *user_data, PiStr channel, const PiValue *data,
                              char *what, size_t cap) {
    PI_HOOKS_BARRIER(f(user_data, channel, data))
}

PiStatus pi_hooks_barrier_timer(PiTimerFn f, void *user_data, uint64_t timer_id, PiContext *ctx,
                                char *what, size_t cap) {
    PI_HOOKS_BARRIER(f(user_data, timer_id, ctx))
}

PiStatus pi_hooks_barrier_init(PiInitFn f, const PiHostApi *host, PiPlugin *plugin, char *what,
                               size_t cap) {
    PI_HOOKS_BARRIER(f(host, plugin))
}

PiStatus pi_hooks_barrier_shutdown(PiShutdownFn f, PiPlugin *plugin, char *what, size_t cap) {
    PI_HOOKS_BARRIER((f(plugin), PI_OK))
}

PiStatus pi_hooks_barrier_cleanup(PiCleanupFn f, void *data, char *what, size_t cap) {
    PI_HOOKS_BARRIER((f(data), PI_OK))
}

PiStatus pi_hooks_barrier_entry(PiEntryFn f, const PiPluginDescriptor **out, char *what,
                                size_t cap) {
    PI_HOOKS_BARRIER((*out = f(), PI_OK))
}

}  // extern "C"
