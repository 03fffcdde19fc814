//! The plugin author's quick start of README.md (the block between `<!--
//! quickstart:plugin-author -->` and `<!-- /quickstart -->`), run as written by a C author
//! who has only what npm gives: every command runs inside a private mount namespace in which
//! this checkout (its sources, headers and `target/`) is an empty tmpfs
//! (`pi_hooks_tests::hidden_checkout`), with a PATH holding no Rust toolchain (`PiUser`).
//!
//! `npm install -g pi-hooks` is the real line: it installs, from a local registry
//! (verdaccio), the npm packages `scripts/npm-packages.sh` makes from the release build
//! (`Registry::with_pi_hooks`), so this also proves the npm package carries the headers a C
//! author needs. The test substitutes only HOME, XDG_CONFIG_HOME, npm's registry and prefix
//! (through `npm_config_*`) and a scratch cwd; `pi-hooks chat --watch` runs in a terminal
//! (`pi_hooks_tests::pty`) where the test edits the plugin, runs `make`, sees the reload line
//! and quits with `/quit`.
//!
//! Each command of the block is recognised by its start and checked for what the comment
//! beside it promises; a command the test does not know fails the test, so a changed block
//! gets checks before it passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use pi_hooks_tests::hidden_checkout::{self, hidden_argv};
use pi_hooks_tests::npm::{PiUser, Registry};
use pi_hooks_tests::pty::{Pty, keys};
use pi_hooks_tests::{Sandbox, include_dir, workspace_root};
use serde_json::{Value, json};

/// The commands of the README's plugin-author quick start, comments and blank lines dropped.
fn quickstart_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let start = "<!-- quickstart:plugin-author -->";
    let block = readme
        .split_once(start)
        .and_then(|(_, rest)| rest.split_once("<!-- /quickstart -->"))
        .map(|(block, _)| block)
        .unwrap_or_else(|| panic!("README.md has no {start} ... <!-- /quickstart --> block"));
    let mut commands = Vec::new();
    let mut in_code = false;
    for line in block.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let line = line.trim();
        if !in_code || line.is_empty() || line.starts_with('#') {
            continue;
        }
        // A comment beside a command: two or more spaces, then `#`.
        let command = match line.find("  #") {
            Some(at) => line[..at].trim_end(),
            None => line,
        };
        commands.push(command.to_owned());
    }
    assert!(
        !commands.is_empty(),
        "no commands in the quick start:\n{block}"
    );
    commands
}

/// The user's environment (see the module) for `program`, in `cwd`.
fn user_command(user: &PiUser, sandbox: &Sandbox, cwd: &Path, script: &str) -> Command {
    let argv = hidden_argv(script);
    let mut command = user.command(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", sandbox.home().join(".config"))
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PI_HOOKS_KEY_PASSWORD")
        .env_remove("PKG_CONFIG_PATH")
        .stdin(Stdio::null());
    command
}

fn text(output: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `script` as the user, hidden; fails the test when it fails.
fn run(user: &PiUser, sandbox: &Sandbox, cwd: &Path, script: &str) -> Output {
    let output = user_command(user, sandbox, cwd, script)
        .output()
        .unwrap_or_else(|e| panic!("{script}: {e}"));
    assert!(
        output.status.success(),
        "`{script}` in {} failed:\n{}",
        cwd.display(),
        text(&output)
    );
    output
}

/// Each `blocked.log` line in the data folders of the agent directory.
fn blocked_log(sandbox: &Sandbox) -> Vec<String> {
    let data = sandbox.agent_dir().join("pi-hooks/data");
    std::fs::read_dir(data)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|f| std::fs::read_to_string(f.path().join("blocked.log")).ok())
        .flat_map(|log| log.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// `script` as the user, hidden, in a terminal of 40 × 120.
fn in_terminal(user: &PiUser, sandbox: &Sandbox, cwd: &Path, script: &str) -> Pty {
    let probe = user_command(user, sandbox, cwd, script);
    let mut builder = portable_pty::CommandBuilder::new(probe.get_program());
    builder.args(probe.get_args());
    builder.cwd(cwd);
    for (key, value) in probe.get_envs() {
        match value {
            Some(value) => builder.env(key, value),
            None => builder.env_remove(key),
        }
    }
    builder.env("TERM", "xterm-256color");
    Pty::spawn(builder, 40, 120)
}

/// `pi-hooks chat --watch -e LIB` in a terminal: it starts, a rebuild of the plugin (an edit
/// of its source, then `make`) shows the reload line, `/quit` ends it.
fn chat_watch(user: &PiUser, sandbox: &Sandbox, cwd: &Path, script: &str) {
    let mut pty = in_terminal(user, sandbox, cwd, script);
    let wait = Duration::from_secs(60);
    // Started: the editor between its two rules, the footer below.
    pty.wait_for("the interactive mode's first frame", wait, |screen| {
        screen.lines().filter(|row| row.starts_with("───")).count() >= 2
    });
    let source = cwd.join("my_gate.c");
    let original = std::fs::read_to_string(&source).expect("my_gate.c");
    let edited = original.replace("rm -rf is not allowed", "rm -rf is never allowed");
    assert_ne!(original, edited, "the reason text is in my_gate.c");
    std::fs::write(&source, edited).unwrap();
    run(user, sandbox, cwd, "make");
    pty.wait_for("the reload line after make", wait, |screen| {
        screen.contains("reloaded my-gate 0.1.0")
    });
    pty.type_text("/quit");
    pty.send(keys::ENTER.as_bytes());
    let status = pty.wait_exit(Duration::from_secs(30));
    assert_eq!(status.exit_code(), 0, "{}", pty.screen_text());
    // Back as the quick start left it, for the commands after this one.
    std::fs::write(&source, original).unwrap();
    run(user, sandbox, cwd, "make");
}

/// The quick start as written, each command checked (see the module).
#[test]
fn the_plugin_author_quick_start_runs_with_the_binary_alone() {
    if let Err(why) = hidden_checkout::available() {
        eprintln!("skipped: the checkout cannot be hidden: {why}");
        return;
    }
    let registry = Registry::with_pi_hooks();
    let sandbox = Sandbox::new();
    let user = PiUser::new(&sandbox, &registry);
    let mut cwd: PathBuf = sandbox.project();
    let mut seen = Vec::new();
    for line in quickstart_commands() {
        // `cd DIR && rest`: the rest runs in DIR, and so does everything after it.
        let mut command = line.as_str();
        if let Some(rest) = command.strip_prefix("cd ")
            && let Some((dir, after)) = rest.split_once(" && ")
        {
            cwd = cwd.join(dir);
            command = after;
        }
        let name = command
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        seen.push(name.clone());
        match name.as_str() {
            "npm install" => {
                run(&user, &sandbox, &cwd, command);
                // The npm package carries the C and C++ headers, byte for byte.
                let package = user.npm_global_root().join("pi-hooks/include");
                for header in ["pi_hooks.h", "pi_hooks.hpp"] {
                    assert_eq!(
                        std::fs::read(package.join(header))
                            .unwrap_or_else(|e| panic!("{header} in the npm package: {e}")),
                        std::fs::read(include_dir().join(header)).unwrap(),
                        "{header}"
                    );
                }
            }
            "pi-hooks new" => {
                run(&user, &sandbox, &cwd, command);
                for file in ["my_gate.c", "Makefile", "CMakeLists.txt", "test.sh"] {
                    assert!(cwd.join("my-gate").join(file).is_file(), "{file}");
                }
            }
            "make &&" | "make" => {
                let output = run(&user, &sandbox, &cwd, command);
                let out = String::from_utf8_lossy(&output.stdout);
                assert!(cwd.join("libmy_gate.so").is_file(), "{out}");
                if command.contains("make test") {
                    assert!(out.contains("ok: 3 checks passed"), "{out}");
                }
            }
            "pi-hooks emit" => {
                let before = blocked_log(&sandbox).len();
                let output = run(&user, &sandbox, &cwd, command);
                let report: Value = serde_json::from_slice(&output.stdout)
                    .unwrap_or_else(|e| panic!("emit prints JSON ({e}):\n{}", text(&output)));
                assert_eq!(
                    report["decision"],
                    json!({"block": true, "reason": "rm -rf is not allowed"}),
                    "{report}"
                );
                // What the scaffold keeps goes to its own data folder.
                let log = blocked_log(&sandbox);
                assert_eq!(log.len(), before + 1, "{log:?}");
                assert_eq!(log.last().map(String::as_str), Some("rm -rf /"));
            }
            "pi-hooks chat" => {
                assert!(command.contains("--watch"), "{command}");
                chat_watch(&user, &sandbox, &cwd, command);
            }
            "pi-hooks keygen" => {
                // NEEDS the misc helper's branch (issue 34 item 10): keygen with no --out
                // writes the key pair under ~/.config/pi-hooks/keys/ (XDG_CONFIG_HOME here).
                run(&user, &sandbox, &cwd, command);
                let keys = sandbox.home().join(".config/pi-hooks/keys");
                let made: Vec<String> = std::fs::read_dir(&keys)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                assert!(
                    made.iter().any(|n| n.ends_with(".key"))
                        && made.iter().any(|n| n.ends_with(".pub")),
                    "keygen with no --out writes its key pair to {} (the misc branch of issue 34): {made:?}",
                    keys.display()
                );
                assert!(
                    !cwd.join("pi-hooks.key").exists(),
                    "no secret key in the project"
                );
            }
            "pi-hooks pack" => {
                // NEEDS the misc helper's branch (issue 34 item 10): `--sign` with no value
                // signs with the key keygen wrote by default.
                let output = run(&user, &sandbox, &cwd, command);
                let tgz = cwd.join("dist/my-gate-0.1.0.tgz");
                assert!(tgz.is_file(), "{}", text(&output));
                let inspect = run(
                    &user,
                    &sandbox,
                    &cwd,
                    "pi-hooks inspect ./dist/my-gate-0.1.0.tgz --json",
                );
                let report: Value =
                    serde_json::from_slice(&inspect.stdout).expect("inspect --json");
                assert_eq!(report["name"], "my-gate", "{report}");
                assert!(report["signer"].is_string(), "signed: {report}");
            }
            "pi-hooks install" => {
                // Without --yes, install asks at the terminal whether to accept the package's
                // capabilities (headless it refuses, naming --yes): run in a terminal, as an
                // author would, and answer y.
                let mut pty = in_terminal(&user, &sandbox, &cwd, command);
                pty.wait_for("install's question", Duration::from_secs(60), |screen| {
                    screen.contains("Install it with these capabilities?")
                });
                pty.send(b"y\r");
                let status = pty.wait_exit(Duration::from_secs(60));
                assert_eq!(status.exit_code(), 0, "{}", pty.screen_text());
                let list = run(&user, &sandbox, &cwd, "pi-hooks list --json");
                let list: Value = serde_json::from_slice(&list.stdout).expect("list --json");
                let package = list["packages"]
                    .as_array()
                    .and_then(|p| p.iter().find(|p| p["name"] == "my-gate"))
                    .unwrap_or_else(|| panic!("my-gate installed: {list}"));
                assert_eq!(package["version"], "0.1.0", "{package}");
                assert!(
                    package["signer"].is_string(),
                    "installed as signed: {package}"
                );
            }
            other => {
                panic!("the quick start has a command this test does not check: {line:?} ({other})")
            }
        }
    }
    for expected in [
        "npm install",
        "pi-hooks new",
        "pi-hooks emit",
        "pi-hooks chat",
        "pi-hooks pack",
        "pi-hooks install",
    ] {
        assert!(seen.iter().any(|s| s == expected), "{expected} in {seen:?}");
    }
}
