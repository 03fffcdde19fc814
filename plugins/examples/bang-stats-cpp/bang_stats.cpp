// bang-stats (C++): an input starting with `!!` is sent without the `!!` (and the spaces
// after it) and with a note asking for a short answer; /stats notifies how many inputs and
// tool calls the plugin saw. See README.md.
#include <algorithm>
#include <string>

#include "pi_hooks.hpp"
using namespace pi_hooks;

static long inputs = 0, tool_calls = 0;

static void setup(Plugin &pi) {
    pi.on("input", [](Value event, Context &, Result &result) {
        inputs++;
        auto text = event.get("text").as_string().value_or("");
        if (text.substr(0, 2) != "!!") return;
        text.remove_prefix(std::min(text.find_first_not_of(' ', 2), text.size()));
        result.set("action", "transform").set("text", std::string(text) + "\n\n(Answer briefly.)");
    });
    pi.on("tool_call", [](Value, Context &, Result &) { tool_calls++; });
    pi.command("stats", "Counts of inputs and tool calls", [](std::string_view, Context &ctx) {
        ctx.notify("inputs: " + std::to_string(inputs) + ", tool calls: " + std::to_string(tool_calls));
    });
}

PI_HOOKS_CPP_PLUGIN("bang-stats", "1.0.0", "A !! input prefix and a /stats command", setup);
