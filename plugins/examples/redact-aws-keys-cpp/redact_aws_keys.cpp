// redact-aws-keys (C++): replaces AWS access key ids (AKIA[0-9A-Z]{16}) in the text of every
// tool result with [REDACTED], keeping image blocks as they are. See README.md.
#include "pi_hooks.hpp"
using namespace pi_hooks;

static void setup(Plugin &pi) {
    pi.on("tool_result", [](Value event, Context &, Result &result) {
        size_t n = 0;
        auto content = event.get("content").replace_text("AKIA[0-9A-Z]{16}", "[REDACTED]", &n);
        if (n > 0) result.set("content", content);
    });
}

PI_HOOKS_CPP_PLUGIN("redact-aws-keys", "1.0.0", "Redacts AWS access key ids in tool results", setup);
