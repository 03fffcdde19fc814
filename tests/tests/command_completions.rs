//! Command argument completions for RPC clients: `get_command_completions` (a pi-hooks
//! addition; pi's RPC has none) asks the plugin whose command runs, through the host's
//! exception barrier, and returns what it gives.

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::session_rpc::request;
use pi_hooks_tests::workflow::install_examples;
use pi_hooks_tests::{Sandbox, compile_c_text, rust_plugin};
use serde_json::json;

const C_COMPLETER: &str = r#"
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus run(void *ud, PiStr args, PiContext *ctx) {
    (void)ud; (void)args; (void)ctx;
    return PI_OK;
}

/* Suggests "alpha" and "beta" that start with the prefix; "!" makes it fail. */
static PiStatus complete(void *ud, PiStr prefix, PiResult *result) {
    (void)ud;
    if (prefix.len == 1 && prefix.ptr[0] == '!') return PI_ERR;
    if (prefix.len == 0) {
        return host->results->set_json(result,
            pi_str("[{\"value\":\"alpha\",\"label\":\"alpha\"},{\"value\":\"beta\",\"label\":\"beta\",\"description\":\"the second\"}]"));
    }
    if (prefix.ptr[0] == 'b') {
        return host->results->set_json(result,
            pi_str("[{\"value\":\"beta\",\"label\":\"beta\",\"description\":\"the second\"}]"));
    }
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def;
    host = h;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("pick");
    def.handler = run;
    def.complete = complete;
    if (host->registry->register_command(plugin, &def) != PI_OK) return PI_ERR;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("plain");
    def.handler = run;
    return host->registry->register_command(plugin, &def);
}

PI_HOOKS_PLUGIN("completer", "1.0.0", "completes its arguments", init, NULL);
"#;

#[test]
fn a_c_plugin_s_completions_reach_an_rpc_client() {
    let sandbox = Sandbox::new();
    let plugin = compile_c_text(&sandbox.lib(), "completer", C_COMPLETER, &[]);
    let mut client = RpcClient::start(sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "-e",
        plugin.to_str().unwrap(),
    ]));
    let ask = |client: &mut RpcClient, id: &str, name: &str, prefix: &str| {
        request(
            client,
            id,
            json!({"type": "get_command_completions", "name": name, "prefix": prefix}),
        )
    };
    assert_eq!(
        ask(&mut client, "a", "pick", "")["data"]["completions"],
        json!([{"value": "alpha", "label": "alpha"}, {"value": "beta", "label": "beta", "description": "the second"}])
    );
    assert_eq!(
        ask(&mut client, "b", "pick", "b")["data"]["completions"],
        json!([{"value": "beta", "label": "beta", "description": "the second"}])
    );
    assert_eq!(
        ask(&mut client, "c", "pick", "zz")["data"]["completions"],
        json!([])
    );
    assert_eq!(
        ask(&mut client, "d", "plain", "")["data"]["completions"],
        json!(null)
    );
    assert_eq!(
        ask(&mut client, "e", "nobody", "")["data"]["completions"],
        json!(null)
    );
    let failed = ask(&mut client, "f", "pick", "!");
    assert_eq!(failed["success"], false);
    assert!(
        failed["error"].as_str().unwrap().contains("PI_ERR"),
        "{failed}"
    );
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn workflow_completes_its_workflow_names_from_the_sdk() {
    let sandbox = Sandbox::new();
    install_examples(&sandbox);
    let plugin = rust_plugin("workflow");
    let mut client = RpcClient::start(sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "-e",
        plugin.to_str().unwrap(),
    ]));
    let answer = request(
        &mut client,
        "w",
        json!({"type": "get_command_completions", "name": "workflow", "prefix": "fe"}),
    );
    assert_eq!(
        answer["data"]["completions"],
        json!([{"value": "feature", "label": "feature"}]),
        "the original's {{value, label}}, no description"
    );
    let (status, _) = client.close();
    assert!(status.success());
}
