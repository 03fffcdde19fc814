//! Message renderers for RPC clients: `render_message` (a pi-hooks addition to pi's protocol)
//! returns the lines a plugin's `register_message_renderer` gives for a custom message.

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::{Sandbox, compile_c_text};
use serde_json::json;

const RENDERER: &str = r#"
#include <stdio.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;

/* "note": one line with the content, a second one when expanded. */
static PiStatus note(void *user_data, const PiValue *message, const PiValue *options,
                     PiResult *result) {
    char json[512];
    PiStr content = {NULL, 0};
    bool expanded = false;
    (void)user_data;
    host->values->as_str(host->values->get(message, pi_str("content")), &content);
    host->values->as_bool(host->values->get(options, pi_str("expanded")), &expanded);
    if (content.len > 200) content.len = 200;
    snprintf(json, sizeof json, expanded ? "[\"NOTE: %.*s\", \"(expanded)\"]" : "[\"NOTE: %.*s\"]",
             (int)content.len, content.ptr);
    return host->results->set_json(result, pi_str(json));
}

/* "plain": leaves the result empty (the default rendering applies). */
static PiStatus plain(void *user_data, const PiValue *message, const PiValue *options,
                      PiResult *result) {
    (void)user_data; (void)message; (void)options; (void)result;
    return PI_OK;
}

/* "broken": fails. */
static PiStatus broken(void *user_data, const PiValue *message, const PiValue *options,
                       PiResult *result) {
    (void)user_data; (void)message; (void)options; (void)result;
    return PI_ERR;
}

static PiStatus add(PiPlugin *plugin, const char *type, PiRenderHandler render) {
    PiRendererDef def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.custom_type = pi_str(type);
    def.render = render;
    return host->registry->register_message_renderer(plugin, &def);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    if (add(plugin, "note", note) != PI_OK) return PI_ERR;
    if (add(plugin, "plain", plain) != PI_OK) return PI_ERR;
    return add(plugin, "broken", broken);
}

PI_HOOKS_PLUGIN("renderer", "1.0.0", "renders custom messages", init, NULL);
"#;

#[test]
fn render_message_returns_the_plugin_s_lines() {
    let sandbox = Sandbox::new();
    let plugin = compile_c_text(&sandbox.lib(), "renderer", RENDERER, &[]);
    let mut client = Client::start(sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "-e",
        plugin.to_str().unwrap(),
    ]));
    let mut ask = |id: &str, command: serde_json::Value| {
        let mut command = command;
        command["id"] = id.into();
        command["type"] = "render_message".into();
        client.send(&command);
        client.response(id)
    };
    let note = json!({"role": "custom", "customType": "note", "content": "hello", "display": true});
    assert_eq!(
        ask("a", json!({"message": note}))["data"],
        json!({"lines": ["NOTE: hello"]})
    );
    assert_eq!(
        ask("b", json!({"message": note, "expanded": true}))["data"],
        json!({"lines": ["NOTE: hello", "(expanded)"]})
    );
    let plain = json!({"customType": "plain", "content": "x"});
    assert_eq!(
        ask("c", json!({"message": plain}))["data"],
        json!({"lines": null})
    );
    let other = json!({"customType": "nobody", "content": "x"});
    assert_eq!(
        ask("d", json!({"message": other}))["data"],
        json!({"lines": null})
    );
    let failed = ask("e", json!({"message": {"customType": "broken"}}));
    assert_eq!(failed["success"], false);
    assert!(
        failed["error"].as_str().unwrap().contains("PI_ERR"),
        "{failed}"
    );
    let missing = ask("f", json!({}));
    assert_eq!(
        missing["error"],
        "render_message: \"message\" must be an object, missing"
    );
    let (status, _) = client.close();
    assert!(status.success());
}
