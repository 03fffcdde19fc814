/* redact-aws-keys (C): replaces AWS access key ids (AKIA[0-9A-Z]{16}) in the text of every
 * tool result with [REDACTED], keeping image blocks as they are. See README.md. */
#include <stdlib.h>
#include <string.h>

#include "pi_hooks.h"

static const PiHostApi *host;

static bool key_char(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'); }

/* Replaces each AKIA[0-9A-Z]{16} in the n bytes at s with [REDACTED], in place (the
 * replacement is shorter); returns the new length. */
static size_t redact(char *s, size_t n) {
    size_t w = 0, r = 0, k;
    while (r < n) {
        for (k = 4; k < 20 && r + 20 <= n && key_char(s[r + k]); k++) {}
        if (k == 20 && memcmp(s + r, "AKIA", 4) == 0) memcpy(s + w, "[REDACTED]", 10), w += 10, r += 20;
        else s[w++] = s[r++];
    }
    return w;
}

static PiStatus on_tool_result(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    const PiValueApi *v = host->values;
    const PiValue *blocks = v->get(event, pi_str("content"));
    PiValue *content = v->new_array();
    bool changed = false;
    (void)ud, (void)ctx;
    for (size_t i = 0; i < v->len(blocks); i++) {
        PiValue *block = v->copy(v->at(blocks, i)); /* ours to change */
        PiStr text = {0};
        if (v->as_str(v->get(block, pi_str("text")), &text) == PI_OK) {
            char *buf = malloc(text.len + 1);
            if (buf == NULL) return v->free(block), v->free(content), PI_ERR;
            size_t n = redact(memcpy(buf, text.ptr, text.len), text.len);
            changed |= n != text.len;
            v->set(block, pi_str("text"), v->new_string(pi_str_n(buf, n)));
            free(buf);
        }
        v->push(content, block); /* content takes block over */
    }
    PiStatus status = changed ? host->results->set_value(result, pi_str("content"), content) : PI_OK;
    v->free(content);
    return status;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("tool_result"), on_tool_result, NULL);
}

PI_HOOKS_PLUGIN("redact-aws-keys", "1.0.0", "Redacts AWS access key ids in tool results", init, NULL);
