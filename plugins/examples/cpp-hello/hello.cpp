// cpp-hello: the smallest C++ plugin. Says hello when a session starts, and adds a command
// `/hello [name]`. Written against include/pi_hooks.hpp; build with
// scripts/build-c-plugins.sh or
//   c++ -std=c++17 -Wall -Wextra -Werror -shared -fPIC -I include
//       -o libcpp_hello.so plugins/examples/cpp-hello/hello.cpp   (one line)
//
// Every function the host calls goes through pi_hooks::guard / guard_init, so that no
// exception (std::string can throw std::bad_alloc) ever escapes into the host.

#include <string>

#include "pi_hooks.hpp"

namespace {

// The host's tables: valid until the plugin is unloaded (set once in init).
const PiHostApi *host = nullptr;

PiStatus on_session_start(void *, const PiValue *, PiContext *ctx, PiResult *) {
    return pi_hooks::guard(host, ctx, [&] {
        pi_hooks::check(host->ui->notify(ctx, pi_hooks::Str("hello from C++"), PI_NOTIFY_INFO),
                        "notify");
    });
}

PiStatus hello_command(void *, PiStr args, PiContext *ctx) {
    return pi_hooks::guard(host, ctx, [&] {
        std::string text = "hello";
        std::string_view name = pi_hooks::view(args);
        if (!name.empty()) text.append(", ").append(name);
        text += " (from C++)";
        return host->ui->notify(ctx, pi_hooks::Str(text), PI_NOTIFY_INFO);
    });
}

PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return pi_hooks::guard_init(h, plugin, [&] {
        pi_hooks::check(host->registry->on(plugin, pi_hooks::Str("session_start"),
                                           on_session_start, nullptr),
                        "on(session_start)");

        PiCommandDef hello{};  // zeroed: reserved fields and optional callbacks stay 0
        hello.struct_size = sizeof hello;
        hello.name = pi_hooks::Str("hello");
        hello.description = pi_hooks::Str("Say hello from a C++ plugin");
        hello.handler = hello_command;
        pi_hooks::check(host->registry->register_command(plugin, &hello), "register_command");
    });
}

}  // namespace

PI_HOOKS_PLUGIN("cpp-hello", "0.1.0", "Says hello from C++", init, nullptr);
