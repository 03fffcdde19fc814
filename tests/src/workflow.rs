//! Helpers for the workflow plugin's tests (`tests/tests/workflow_*.rs`,
//! `command_completions.rs`).

use std::path::Path;

use serde_json::{Value, json};

use crate::rpc_client::RpcClient;
use crate::{Sandbox, rust_plugin, workspace_root};

/// Copies the folder `from` into `to`, recursively (created as needed).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read the folder") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The example workflows (plugins/workflow/examples/workflows) as the sandbox project's
/// `.pi/workflows`.
pub fn install_examples(s: &Sandbox) {
    let from = workspace_root().join("plugins/workflow/examples/workflows");
    copy_dir(&from, &s.project().join(".pi/workflows"));
}

/// `pi-hooks rpc --session <session> --no-hooks --script <root>/script.json -e libworkflow.so
/// -e <extra>...`, the script holding `turns`.
pub fn rpc_with_workflow(s: &Sandbox, turns: &Value, session: &Path, extra: &[&Path]) -> RpcClient {
    let script = s.root().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
    let plugin = rust_plugin("workflow");
    let mut command = s.command(&[
        "rpc",
        "--session",
        session.to_str().expect("utf-8"),
        "--no-hooks",
        "--script",
        script.to_str().expect("utf-8"),
        "-e",
        plugin.to_str().expect("utf-8"),
    ]);
    for plugin in extra {
        command.args(["-e", plugin.to_str().expect("utf-8")]);
    }
    RpcClient::start(command)
}
