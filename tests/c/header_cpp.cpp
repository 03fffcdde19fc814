// pi_hooks.h and pi_hooks.hpp together, each twice, in C++17: the generated header must be
// valid C++ and its initialiser macros must work there. Built with -fsyntax-only by
// scripts/build-c-plugins.sh.
#include "pi_hooks.h"
#include "pi_hooks.hpp"
#include "pi_hooks.h"
#include "pi_hooks.hpp"

#include <type_traits>

namespace {

PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    return pi_hooks::guard_init(host, plugin, [] { throw std::runtime_error("not really"); });
}

constexpr PiStr greeting = PI_STR_LIT("hello");
static_assert(sizeof(PI_HOOKS_ENTRY_SYMBOL) == sizeof("pi_hooks_plugin_v1"));
static_assert(std::is_standard_layout_v<PiPluginDescriptor>);
static_assert(std::is_trivially_copyable_v<PiStr>);

}  // namespace

PI_HOOKS_PLUGIN("header-cpp", "0.0.0", "", init, nullptr);

const PiStr *header_cpp_greeting();
const PiStr *header_cpp_greeting() {
    return &greeting;
}
