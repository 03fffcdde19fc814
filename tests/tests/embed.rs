//! Embedding the host from Rust: `loader/host/examples/embed.rs`, a tiny agent loop of its own,
//! gates its tool calls through the real permission-gate plugin, which asks through the
//! example's own UI (stdin).

use std::io::Write;
use std::process::{Command, Stdio};

use pi_hooks_tests::{Sandbox, rust_plugin, target_dir, workspace_root};

#[test]
fn the_embed_example_runs_what_the_plugin_allows_and_blocks_what_it_refuses() {
    let sandbox = Sandbox::new();
    let gate = rust_plugin("permission-gate");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--quiet",
            "-p",
            "pi-hooks-host",
            "--example",
            "embed",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let victim = sandbox.root().join("keep-me");
    std::fs::create_dir(&victim).unwrap();
    let mut child = Command::new(target_dir().join("debug/examples/embed"))
        .arg(&gate)
        .arg("echo hi")
        .arg(format!("rm -rf {}", victim.display()))
        .current_dir(sandbox.project())
        .env("HOME", sandbox.home())
        .env("PI_CODING_AGENT_DIR", sandbox.agent_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The answer to permission-gate's select dialog.
    child.stdin.take().unwrap().write_all(b"No\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!(
            "ran: echo hi: hi\nblocked: rm -rf {}: Blocked by user\n",
            victim.display()
        )
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("Dangerous command"));
    assert!(victim.is_dir(), "the refused command did not run");
}
