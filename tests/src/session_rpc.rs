//! Helpers for the session-operation tests that drive `pi-hooks rpc` with a session file and a
//! `watcher` behave plugin logging the events it gets (tests/fixtures/behave.c).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::rpc_client::RpcClient;
use crate::{Sandbox, behave_env_var, behave_plugin};

/// `pi-hooks rpc --session <session> --no-hooks --script <root>/script.json -e <watcher>
/// -e <extra>...`, the script holding `script`, the `watcher` plugin registering `handlers`
/// and logging to `<root>/behave.log`.
pub fn rpc_with_watcher(
    sandbox: &Sandbox,
    script: &Value,
    handlers: &Value,
    session: &Path,
    extra: &[&Path],
) -> Command {
    let script_file = sandbox.root().join("script.json");
    std::fs::write(&script_file, script.to_string()).expect("write script");
    let mut command = sandbox.command(&[
        "rpc",
        "--session",
        session.to_str().expect("UTF-8 session path"),
        "--no-hooks",
        "--script",
        script_file.to_str().expect("UTF-8 script path"),
    ]);
    command.env("BEHAVE_LOG", sandbox.root().join("behave.log"));
    command.env(
        behave_env_var("watcher"),
        json!({ "handlers": handlers }).to_string(),
    );
    let watcher = behave_plugin(&sandbox.lib(), "watcher");
    command.args(["-e", watcher.to_str().expect("UTF-8 plugin path")]);
    for plugin in extra {
        command.args(["-e", plugin.to_str().expect("UTF-8 plugin path")]);
    }
    command
}

/// Sends `command` with `id` and returns its response.
pub fn request(client: &mut RpcClient, id: &str, mut command: Value) -> Value {
    command["id"] = id.into();
    client.send(&command);
    client.response(id)
}

/// Sends a prompt, expects it accepted, and returns the lines up to its `agent_end`.
pub fn prompt_to_end(client: &mut RpcClient, id: &str, message: &str) -> Vec<Value> {
    client.send(&json!({"id": id, "type": "prompt", "message": message}));
    assert_eq!(client.response(id)["success"], true, "{:?}", client.seen);
    client.until(|l| l["type"] == "agent_end").0
}

/// A JSONL file's lines, parsed.
pub fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Closes stdin and expects a successful exit.
pub fn close_ok(client: RpcClient) {
    let (status, _) = client.close();
    assert!(status.success(), "pi-hooks rpc exited with {status}");
}
