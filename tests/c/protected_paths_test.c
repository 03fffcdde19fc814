/*
 * Runs the protected-paths example against a fake host: just enough of PiValueApi and
 * PiResultApi to feed it tool_call events and read back what it set. Built and run by
 * scripts/build-c-plugins.sh; prints "N passed, 0 failed".
 *
 * The opaque PiValue and PiResult are completed here with the test's own structs, which is
 * fine: the plugin only ever sees pointers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../plugins/examples/protected-paths/protected_paths.c"

/* A value is a string, or an object of up to 4 string-or-object fields. */
struct PiValue {
    const char *key; /* name of this field in its parent */
    const char *text; /* non-NULL for a string */
    const struct PiValue *fields[4];
};

struct PiResult {
    bool blocked;
    char reason[256];
};

static const PiValue *fake_get(const PiValue *value, PiStr key) {
    size_t i;
    if (value == NULL || value->text != NULL) return NULL;
    for (i = 0; i < 4 && value->fields[i] != NULL; i++)
        if (strlen(value->fields[i]->key) == key.len &&
            memcmp(value->fields[i]->key, key.ptr, key.len) == 0)
            return value->fields[i];
    return NULL;
}

static PiStatus fake_as_str(const PiValue *value, PiStr *out) {
    if (value == NULL || value->text == NULL) return PI_ERR_WRONG_TYPE;
    *out = pi_str(value->text);
    return PI_OK;
}

static PiStatus fake_set_bool(PiResult *result, PiStr key, bool value) {
    if (key.len == 5 && memcmp(key.ptr, "block", 5) == 0) result->blocked = value;
    return PI_OK;
}

static PiStatus fake_set_string(PiResult *result, PiStr key, PiStr value) {
    if (key.len == 6 && memcmp(key.ptr, "reason", 6) == 0 && value.len < sizeof result->reason) {
        memcpy(result->reason, value.ptr, value.len);
        result->reason[value.len] = 0;
    }
    return PI_OK;
}

static int passed, failed;

/* Sends a tool_call for `tool` with `key: path` and checks whether it was blocked. */
static void expect(const char *tool, const char *key, const char *path, bool blocked) {
    PiValue name = {"toolName", NULL, {NULL}};
    PiValue arg = {NULL, NULL, {NULL}};
    PiValue input = {"input", NULL, {NULL}};
    PiValue event = {NULL, NULL, {NULL}};
    PiResult result;
    char want[256];
    PiStatus status;
    name.text = tool;
    arg.key = key;
    arg.text = path;
    input.fields[0] = &arg;
    event.fields[0] = &name;
    event.fields[1] = &input;
    memset(&result, 0, sizeof result);
    snprintf(want, sizeof want, "Path \"%s\" is protected", path);

    status = on_tool_call(NULL, &event, NULL, &result);
    if (status == PI_OK && result.blocked == blocked &&
        (!blocked || strcmp(result.reason, want) == 0)) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s %s=\"%s\": status %d, blocked %d (want %d), reason \"%s\"\n", tool, key,
               path, (int)status, (int)result.blocked, (int)blocked, result.reason);
    }
}

int main(void) {
    static PiValueApi values;
    static PiResultApi results;
    static PiHostApi fake_host;
    values.struct_size = sizeof values;
    values.get = fake_get;
    values.as_str = fake_as_str;
    results.struct_size = sizeof results;
    results.set_bool = fake_set_bool;
    results.set_string = fake_set_string;
    fake_host.struct_size = sizeof fake_host;
    fake_host.values = &values;
    fake_host.results = &results;
    host = &fake_host; /* what init would have done */

    expect("write", "path", ".env", true);
    expect("write", "path", "./.env", true);
    expect("edit", "file_path", "config/.env", true);
    expect("edit", "path", "/home/me/project/.env", true);
    expect("write", "path", ".git/config", true);
    expect("write", "path", "./.git/hooks/pre-commit", true);
    expect("write", "file_path", "a/./node_modules/x/index.js", true);
    expect("edit", "path", "node_modules/left-pad/index.js", true);
    expect("write", "path", "src\\.git\\HEAD", true);
    expect("write", "path", ".env.example", false);
    expect("write", "path", "src/.envrc", false);
    expect("write", "path", "docs/.gitignore", false);
    expect("write", "path", "my_node_modules/x.js", false);
    expect("write", "path", "src/main.c", false);
    expect("read", "path", ".env", false);
    expect("bash", "path", ".git/config", false);
    expect("write", "content", ".env", false);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
