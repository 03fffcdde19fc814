// redact-aws-keys (C++): replaces AWS access key ids (AKIA[0-9A-Z]{16}) in the text of every
// tool result with [REDACTED], keeping image blocks as they are. See README.md.
#include <regex>

#include "pi_hooks.hpp"
using namespace pi_hooks;

static void setup(Plugin &pi) {
    pi.on("tool_result", [](Value event, Context &, Result &result) {
        static const std::regex key("AKIA[0-9A-Z]{16}");
        auto content = OwnedValue::array();
        bool changed = false;
        for (Value block : event.get("content")) {
            auto copy = block.copy();
            if (auto text = block.get("text").as_string()) {
                auto redacted = std::regex_replace(std::string(*text), key, "[REDACTED]");
                changed |= redacted != *text;
                copy.set("text", redacted);
            }
            content.push(std::move(copy));
        }
        if (changed) result.set("content", content);
    });
}

PI_HOOKS_CPP_PLUGIN("redact-aws-keys", "1.0.0", "Redacts AWS access key ids in tool results", setup);
