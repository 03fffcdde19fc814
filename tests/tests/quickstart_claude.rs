//! The README's quick start for a Claude Code user (block `claude-code-user`), run as written
//! by a user with node and npm but no Rust, against a local npm registry (verdaccio) holding
//! what `scripts/npm-packages.sh` packs (pi-hooks, its binary, the prebuilt
//! `@pi-hooks/claude-hooks`): both installs (pi's, and pi-hooks' own in a terminal, where it
//! asks to accept the capabilities and is answered `y`), then pi with a real
//! `.claude/settings.json` whose PreToolUse script exits 2 on `rm -rf`. The block's last line,
//! `pi`, is run as pi's print mode (no terminal): once with `/claude-hooks trust` (what its
//! comment says to do), then with a prompt whose `rm -rf` the hook blocks. Only the registry
//! (npm's environment), HOME, the working folder and the model (a fake OpenAI-compatible
//! server in `models.json`) are substituted.

use std::process::Stdio;
use std::time::Duration;

use pi_hooks_tests::Sandbox;
use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply, after_tool, last_user_text, tool_call};
use pi_hooks_tests::npm::{PiUser, Registry, quickstart_commands};
use pi_hooks_tests::pty::Pty;
use pi_hooks_tests::tools::pi16;
use serde_json::{Value, json};

/// The guard: exit 2 with a reason on stderr when the Bash command has `rm -rf`.
const GUARD: &str = r#"#!/bin/sh
if grep -q 'rm -rf'; then
  echo "rm -rf is not allowed here" >&2
  exit 2
fi
exit 0
"#;

#[test]
fn the_claude_code_user_quick_start_runs_a_pre_tool_use_hook_in_the_real_pi() {
    let commands = quickstart_commands("claude-code-user");
    let pi = pi16();
    let sandbox = Sandbox::new();
    let registry = Registry::with_pi_hooks();
    let user = PiUser::new(&sandbox, &registry);
    let mut path = format!("{}:{}", user.pi_on_path(&pi).display(), user.path());
    let server = FakeOpenAi::start(|body| {
        if after_tool(body) {
            return Reply::Text("done".into());
        }
        if last_user_text(body).contains("wipe") {
            tool_call("bash", json!({"command": "rm -rf victim"}))
        } else {
            Reply::Text("ok".into())
        }
    });
    std::fs::write(
        sandbox.agent_dir().join("models.json"),
        server.models_json().to_string(),
    )
    .unwrap();
    // The project: a folder to keep, and Claude Code's settings with the guard.
    let project = sandbox.project();
    std::fs::create_dir_all(project.join("victim")).unwrap();
    std::fs::create_dir_all(project.join(".claude/hooks")).unwrap();
    let guard = project.join(".claude/hooks/guard.sh");
    std::fs::write(&guard, GUARD).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        project.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}
        ]}]}})
        .to_string(),
    )
    .unwrap();

    let model = ["--provider", "fake", "--model", "fake-model"].join(" ");
    let mut ran_pi = false;
    for line in &commands {
        if let Some(exported) = line.strip_prefix("export PATH=") {
            path = user.export_path(exported, &path);
        } else if line.starts_with("pi install ") {
            let output = user.shell(line, &path).output().unwrap();
            assert!(output.status.success(), "{line}: {output:?}");
        } else if line.starts_with("pi-hooks install ") {
            // In a terminal: it shows the capabilities and asks; the user says yes.
            let shell = user.shell(line, &path);
            let mut command = portable_pty::CommandBuilder::new("sh");
            command.args(["-c", line]);
            command.cwd(&project);
            command.env_clear();
            for (key, value) in shell.get_envs() {
                if let Some(value) = value {
                    command.env(key, value);
                }
            }
            command.env("TERM", "xterm-256color");
            let mut terminal = Pty::spawn(command, 40, 200);
            terminal.wait_for("the capabilities question", Duration::from_secs(120), |t| {
                t.contains("Install it with these capabilities? [y/N]")
            });
            terminal.type_text("y\r");
            let status = terminal.wait_exit(Duration::from_secs(120));
            assert!(status.success(), "{line}: {}", terminal.contents());
        } else if line == "pi" {
            ran_pi = true;
            // `/claude-hooks trust`, once per project, then a prompt that runs rm -rf.
            let trust = user
                .shell(&format!("pi {model} -p '/claude-hooks trust'"), &path)
                .env("PI_OFFLINE", "1")
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(trust.status.success(), "{trust:?}");
            let run = user
                .shell(
                    &format!("pi {model} --mode json 'wipe the victim folder'"),
                    &path,
                )
                .env("PI_OFFLINE", "1")
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(run.status.success(), "{run:?}");
            let ends: Vec<Value> = String::from_utf8_lossy(&run.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|e| e["type"] == "tool_execution_end")
                .collect();
            assert_eq!(ends.len(), 1, "{run:?}");
            assert_eq!(ends[0]["isError"], true, "{}", ends[0]);
            let text = ends[0]["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("rm -rf is not allowed here"), "{text}");
            assert!(project.join("victim").is_dir(), "rm -rf ran");
        } else {
            panic!("a command this test does not know how to run: {line}");
        }
    }
    assert!(ran_pi, "the block runs pi: {commands:#?}");
    // Both installs are recorded once, under the one `packages` list pi and pi-hooks share.
    let packages =
        pi_hooks_tests::npm::settings_packages(&sandbox.agent_dir().join("settings.json"));
    assert!(
        packages
            .as_array()
            .unwrap()
            .contains(&json!("npm:@pi-hooks/claude-hooks")),
        "{packages}"
    );
}
