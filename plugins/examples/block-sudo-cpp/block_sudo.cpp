// block-sudo (C++): blocks bash tool calls whose command has the word `sudo`. See README.md.
#include <regex>

#include "pi_hooks.hpp"
using namespace pi_hooks;

static void setup(Plugin &pi) {
    pi.on("tool_call", [](Value event, Context &, Result &result) {
        static const std::regex sudo("\\bsudo\\b");
        auto command = event.pointer("/input/command").as_string().value_or("");
        if (event.get("toolName").as_string() == "bash" &&
            std::regex_search(command.begin(), command.end(), sudo))
            result.set("block", true).set("reason", "sudo is not allowed");
    });
}

PI_HOOKS_CPP_PLUGIN("block-sudo", "1.0.0", "Blocks sudo in bash", setup);
