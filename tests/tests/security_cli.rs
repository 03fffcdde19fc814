//! The command line facing a hostile repository or plugin, through the real `pi-hooks` binary
//! on real compiled plugins:
//!
//! - file names and plugin-supplied text with control characters are escaped in everything
//!   printed for a person (`list`, `inspect`, the `run` mode's stderr lines), and the
//!   suggested `pi-hooks trust ...` command, pasted into bash, trusts exactly that file;
//! - a relative agent directory (which would put the trust store inside the repository) is
//!   refused by every command;
//! - `inspect` does not run an untrusted project plugin's code without `--run-code`;
//! - a reader that closes stdout early ends a command quietly.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Output, Stdio};

use pi_hooks_tests::{
    Sandbox, compile_c_text, loaded_names, marker_plugin, parse_json_output, pi_hooks_bin,
};
use serde_json::json;

/// A plugin with one `tool_call` handler, built into the sandbox's `lib/` as `<file>.so`.
fn plain_plugin(sandbox: &Sandbox, file: &str, name: &str, description: &str) -> PathBuf {
    let code = format!(
        r#"#include "pi_hooks.h"
static PiStatus on_call(void *u, const PiValue *e, PiContext *c, PiResult *r) {{
    (void)u; (void)e; (void)c; (void)r; return PI_OK;
}}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    return host->registry->on(plugin, pi_str("tool_call"), on_call, NULL);
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "{description}", init, NULL);
"#
    );
    compile_c_text(&sandbox.lib(), file, &code, &[])
}

/// The text as UTF-8, with the whole output in the panic message otherwise.
fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("output is UTF-8")
}

/// Asserts that no line of `text` carries a raw control or bidirectional character (the
/// newlines between lines are the only ones allowed).
fn assert_no_raw_control(what: &str, text: &str) {
    for line in text.lines() {
        assert!(
            !line
                .chars()
                .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
            "{what}: a line carries a raw control character: {line:?}\nwhole output:\n{text:?}"
        );
    }
}

/// A one-turn script for `pi-hooks run` (no tool calls).
fn quiet_script(sandbox: &Sandbox) -> String {
    sandbox
        .script(&json!({"turns": [{"text": "done"}]}))
        .display()
        .to_string()
}

/// A file name that tries everything: clear the screen, return to the line start and write a
/// fake listing line, a newline, shell syntax that would run a command if pasted unquoted,
/// quotes, history expansion and a right-to-left override.
/// The ABI version plugins built against the committed header report.
fn abi() -> String {
    format!(
        "{}.{}",
        pi_hooks_abi::ffi::PI_HOOKS_ABI_MAJOR,
        pi_hooks_abi::ffi::PI_HOOKS_ABI_MINOR
    )
}

const HOSTILE_NAME: &str =
    "evil\u{1b}[2J\rLoaded (in load order):\n  1. fake 'x' $(touch pwned) !! \u{202e}os.so";

#[test]
fn hostile_file_names_are_escaped_and_the_trust_command_pastes_exactly() {
    let s = Sandbox::new();
    let hooks = s.project().join(".pi/hooks");
    let library = plain_plugin(&s, "cloned", "cloned", "a cloned plugin");
    let path = s.install(&library, &hooks, HOSTILE_NAME);

    // `list`: the name is shown escaped, on its own line, with a one-line trust command.
    let listing = s.run(&["list"]);
    assert!(listing.status.success());
    let listing = text(&listing.stdout);
    assert_no_raw_control("list", &listing);
    assert!(
        listing.contains("evil\\e[2J\\rLoaded (in load order):\\n  1. fake 'x'"),
        "{listing}"
    );
    assert!(
        !listing.lines().any(|l| l.starts_with("  1. fake")),
        "{listing}"
    );
    let command = listing
        .lines()
        .find_map(|l| l.strip_prefix("     trust it with: "))
        .unwrap_or_else(|| panic!("no trust command in:\n{listing}"))
        .to_owned();
    let report = s.list_json(&[]);
    assert_eq!(report["untrusted"][0]["path"], path.display().to_string());
    assert_eq!(report["untrusted"][0]["trustCommand"], command);

    // `run`: the "Skipped project plugin" line is escaped too.
    let script = quiet_script(&s);
    let run = s.run(&["run", "--no-session", "--script", &script, "hi"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let stderr = text(&run.stderr);
    assert_no_raw_control("run stderr", &stderr);
    let skipped = stderr
        .lines()
        .find(|l| l.starts_with("Skipped project plugin "))
        .unwrap_or_else(|| panic!("no Skipped line in:\n{stderr}"));
    assert!(
        skipped.ends_with(&format!("; trust it with: {command}")),
        "{skipped}"
    );

    // Pasted into an interactive bash (history expansion on, as in a terminal), the command trusts
    // exactly this file and runs nothing else.
    let bin_dir = pi_hooks_bin().parent().unwrap().to_path_buf();
    let path_var = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut bash = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-i"])
        .current_dir(s.project())
        .env("HOME", s.home())
        .env("HISTFILE", "/dev/null")
        .env("PI_CODING_AGENT_DIR", s.agent_dir())
        .env("PATH", path_var)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bash");
    bash.stdin
        .take()
        .expect("stdin")
        .write_all(format!("{command}\n").as_bytes())
        .expect("paste the command");
    let pasted = bash.wait_with_output().expect("wait for bash");
    assert!(
        pasted.status.success(),
        "the pasted command failed: {}",
        text(&pasted.stderr)
    );
    assert_no_raw_control("trust", &text(&pasted.stdout));
    assert!(
        !s.project().join("pwned").exists(),
        "the paste ran a command"
    );
    let report = s.list_json(&[]);
    assert_eq!(loaded_names(&report), ["cloned"], "{report:#}");
    assert_eq!(report["plugins"][0]["trust"], "trusted");
    assert_eq!(report["plugins"][0]["path"], path.display().to_string());
}

/// A plugin whose name, version, description, event names and command name carry escape
/// sequences, and which subscribes to `toolCall` (a typo of `tool_call`).
fn hostile_plugin(sandbox: &Sandbox) -> PathBuf {
    let code = r#"#include "pi_hooks.h"
static PiStatus on_call(void *u, const PiValue *e, PiContext *c, PiResult *r) {
    (void)u; (void)e; (void)c; (void)r; return PI_OK;
}
static PiStatus on_command(void *u, PiStr args, PiContext *c) {
    (void)u; (void)args; (void)c; return PI_OK;
}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    PiCommandDef command;
    memset(&command, 0, sizeof command);
    command.struct_size = sizeof command;
    command.name = pi_str("clear\033[2J");
    command.handler = on_command;
    if (host->registry->on(plugin, pi_str("toolCall"), on_call, NULL) != PI_OK) return PI_ERR;
    if (host->registry->on(plugin, pi_str("tool_call\033]0;owned\007"), on_call, NULL) != PI_OK) return PI_ERR;
    return host->registry->register_command(plugin, &command);
}
PI_HOOKS_PLUGIN("name\033[31m", "1.0\r\n2.0", "about\n\u202eevil", init, NULL);
"#;
    compile_c_text(&sandbox.lib(), "hostile", code, &[])
}

/// A plugin whose init fails with a message carrying escape sequences.
fn failing_plugin(sandbox: &Sandbox) -> PathBuf {
    let code = r#"#include "pi_hooks.h"
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    host->registry->set_init_error(plugin, pi_str("boom\033[2J\nFailed to load plugin \"fake\""));
    return PI_ERR;
}
PI_HOOKS_PLUGIN("failing", "1.0.0", "fails", init, NULL);
"#;
    compile_c_text(&sandbox.lib(), "failing", code, &[])
}

#[test]
fn plugin_supplied_text_is_escaped_in_list_inspect_and_run() {
    let s = Sandbox::new();
    let global = s.agent_dir().join("hooks");
    let hostile = s.install(&hostile_plugin(&s), &global, "a-hostile.so");
    s.install(&failing_plugin(&s), &global, "b-failing.so");

    let listing = s.run(&["list"]);
    assert!(listing.status.success());
    let listing = text(&listing.stdout);
    assert_no_raw_control("list", &listing);
    let first = format!(
        "  1. name\\e[31m 1.0\\r\\n2.0 (ABI {}) [global, no trust needed]",
        abi()
    );
    for shown in [
        first.as_str(),
        "     about\\n\\u{202e}evil",
        "     events: toolCall, tool_call\\e]0;owned\\u{7}",
        "     commands: /clear\\e[2J",
        "     warning: subscribes to \"toolCall\", an event this host never emits; did you mean \"tool_call\"?",
        "     warning: subscribes to \"tool_call\\e]0;owned\\u{7}\"",
        ": its init failed (PI_ERR: boom\\e[2J\\nFailed to load plugin \"fake\"); the plugin was not loaded",
    ] {
        assert!(listing.contains(shown), "lacks {shown:?}:\n{listing}");
    }
    assert_eq!(
        listing
            .lines()
            .filter(|l| l.starts_with("Failed to load plugin "))
            .count(),
        1,
        "{listing}"
    );

    // JSON keeps the exact text, and carries the warnings.
    let report = s.list_json(&[]);
    let plugin = &report["plugins"][0];
    assert_eq!(plugin["name"], "name\u{1b}[31m");
    assert_eq!(plugin["version"], "1.0\r\n2.0");
    let warnings = plugin["warnings"].as_array().expect("warnings array");
    assert_eq!(warnings.len(), 2, "{report:#}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("did you mean \"tool_call\""),
        "{report:#}"
    );
    assert_eq!(report["warnings"], json!([]));

    let inspected = s.run(&["inspect", "--run-code", hostile.to_str().unwrap()]);
    assert!(inspected.status.success(), "{}", text(&inspected.stderr));
    let inspected = text(&inspected.stdout);
    assert_no_raw_control("inspect", &inspected);
    assert!(
        inspected.starts_with(&format!(
            "Plugin name\\e[31m 1.0\\r\\n2.0 (ABI {})\n",
            abi()
        )),
        "{inspected}"
    );
    assert!(
        inspected.contains("  warning: subscribes to \"toolCall\""),
        "{inspected}"
    );

    let script = quiet_script(&s);
    let run = s.run(&["run", "--no-session", "--script", &script, "hi"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let stderr = text(&run.stderr);
    assert_no_raw_control("run stderr", &stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("Failed to load plugin ")
                && l.contains("boom\\e[2J\\nFailed to load plugin \"fake\"")),
        "{stderr}"
    );
    let plugin_warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("Warning: plugin name\\e[31m ("))
        .collect();
    assert_eq!(plugin_warnings.len(), 2, "{stderr}");
    assert!(
        plugin_warnings[0].ends_with("did you mean \"tool_call\"? (its handler will not run)"),
        "{stderr}"
    );
}

#[test]
fn list_json_and_run_report_a_misspelt_event() {
    let s = Sandbox::new();
    let code = r#"#include "pi_hooks.h"
static PiStatus on_call(void *u, const PiValue *e, PiContext *c, PiResult *r) {
    (void)u; (void)e; (void)c; (void)r; return PI_OK;
}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    return host->registry->on(plugin, pi_str("toolCall"), on_call, NULL);
}
PI_HOOKS_PLUGIN("typo", "1.0.0", "", init, NULL);
"#;
    let library = compile_c_text(&s.lib(), "typo", code, &[]);
    s.install(&library, &s.agent_dir().join("hooks"), "typo.so");
    let listing = text(&s.run(&["list"]).stdout);
    assert!(
        listing.contains(
            "     warning: subscribes to \"toolCall\", an event this host never emits; did you mean \"tool_call\"? (its handler will not run)"
        ),
        "{listing}"
    );
    let report = s.list_json(&[]);
    assert_eq!(
        report["plugins"][0]["warnings"][0],
        "subscribes to \"toolCall\", an event this host never emits; did you mean \"tool_call\"? (its handler will not run)"
    );
    let script = quiet_script(&s);
    let run = s.run(&["run", "--no-session", "--script", &script, "hi"]);
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("Warning: plugin typo (") && stderr.contains("did you mean \"tool_call\""),
        "{stderr}"
    );
}

/// Runs `pi-hooks` in `s` with `env` set.
fn run_with_env(s: &Sandbox, args: &[&str], set: &[(&str, &str)], remove: &[&str]) -> Output {
    let mut command = s.command(args);
    for (key, value) in set {
        command.env(key, value);
    }
    for key in remove {
        command.env_remove(key);
    }
    command.output().expect("run pi-hooks")
}

#[test]
fn a_relative_agent_dir_is_refused_by_every_command() {
    let s = Sandbox::new();
    let hooks = s.project().join(".pi/hooks");
    let project_plugin = s.install(
        &plain_plugin(&s, "p", "p", "project plugin"),
        &hooks,
        "p.so",
    );
    let file = project_plugin.to_str().unwrap();
    let commands: [&[&str]; 6] = [
        &["list"],
        &["list", "--json"],
        &["inspect", "--run-code", file],
        &["trust", file],
        &["untrust", file],
        &["run", "--script", "none.json", "hi"],
    ];
    for args in commands {
        let out = run_with_env(&s, args, &[("PI_CODING_AGENT_DIR", ".pi/agent")], &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("pi-hooks: PI_CODING_AGENT_DIR \".pi/agent\" is a relative path: the trust store and your own plugins would then live inside whatever directory pi-hooks runs in"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("absolute path"), "{stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            !s.project().join(".pi/agent").exists(),
            "{args:?} created the agent dir inside the project"
        );

        let out = run_with_env(&s, args, &[("HOME", "home")], &["PI_CODING_AGENT_DIR"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("pi-hooks: HOME \"home\" is not an absolute path"),
            "{args:?}: {stderr}"
        );

        let out = run_with_env(
            &s,
            args,
            &[("HOME", "home"), ("PI_CODING_AGENT_DIR", "~/agent")],
            &[],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("is relative because HOME \"home\" is"),
            "{stderr}"
        );
    }
    assert!(!s.project().join("home").exists());
    assert!(!s.project().join("agent").exists());
    assert!(!s.agent_dir().join("trusted-plugins.json").exists());
}

#[test]
fn inspect_reads_a_project_plugin_without_running_it_and_runs_it_only_with_run_code() {
    let s = Sandbox::new();
    let marker = s.root().join("init-ran");
    let library = marker_plugin(&s.lib(), "marker", "marker", &marker);
    let in_hooks = s.install(&library, &s.project().join(".pi/hooks"), "m.so");
    let elsewhere = s.install(&library, &s.root().join("other/.pi/extensions"), "m.so");
    let listed = s.install(&library, &s.project().join("vendor"), "m.so");
    std::fs::write(
        s.project().join(".pi/settings.json"),
        r#"{"hooks": ["../vendor/m.so"]}"#,
    )
    .unwrap();

    for file in [&in_hooks, &elsewhere, &listed] {
        let file = file.to_str().unwrap();
        let out = s.run(&["inspect", file]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{file}: {}", text(&out.stderr));
        assert!(
            stdout.starts_with(&format!("Plugin marker 1.0.0 (ABI {})\n", abi()))
                && stdout.contains("  trust: project plugin, not trusted yet\n")
                && stdout.contains("  description: creates a marker file when it runs\n")
                && stdout.contains("read from the file without running it")
                && stdout.contains("pi-hooks inspect --run-code"),
            "{stdout}"
        );
        assert!(!marker.exists(), "inspecting {file} ran its code");

        let out = s.run(&["inspect", "--json", file]);
        assert!(out.status.success());
        let report = parse_json_output(&out);
        assert_eq!(report["plugins"][0]["name"], "marker", "{report:#}");
        assert_eq!(report["plugins"][0]["ranCode"], false, "{report:#}");
        assert_eq!(
            report["plugins"][0]["trust"], "project plugin, not trusted yet",
            "{report:#}"
        );
        assert!(!marker.exists(), "inspecting {file} ran its code");
    }

    // --run-code runs it, and says so.
    let out = s.run(&["inspect", "--run-code", ".pi/hooks/m.so"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(marker.exists());
    assert!(text(&out.stderr).contains("note: inspecting with --run-code loads the plugin"));
    let shown = text(&out.stdout);
    assert!(
        shown.contains("  trust: project plugin, not trusted yet; loaded because of --run-code\n"),
        "{shown}"
    );
    std::fs::remove_file(&marker).unwrap();

    // Trusted: shown as trusted, still without running it.
    assert!(s.run(&["trust", ".pi/hooks/m.so"]).status.success());
    let out = s.run(&["inspect", ".pi/hooks/m.so"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("  trust: project plugin, trusted\n"));
    assert!(!marker.exists());
}

#[test]
fn inspect_prints_one_plugin_under_its_own_header_with_a_normalised_path() {
    let s = Sandbox::new();
    let library = plain_plugin(&s, "insp", "insp", "inspected plugin");
    std::fs::create_dir_all(s.lib().join("sub")).unwrap();
    let out = s.run(&["inspect", "--run-code", "./../lib/sub/.././insp.so"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let canonical = std::fs::canonicalize(&library).unwrap();
    assert_eq!(
        stdout.lines().take(3).collect::<Vec<_>>(),
        [
            format!("Plugin insp 1.0.0 (ABI {})", abi()),
            format!("  path: {}", canonical.display()),
            format!(
                "  sha256: {}",
                parse_json_output(&s.run(&["inspect", "--json", canonical.to_str().unwrap()]))
                    ["plugins"][0]["sha256"]
                    .as_str()
                    .unwrap()
            ),
        ]
    );
    assert!(
        stdout.contains("  trust: not a project plugin, no trust needed\n")
            && stdout.contains("  description: inspected plugin\n")
            && stdout.contains("  events: tool_call\n"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("Loaded (in load order)") && !stdout.contains("[cli"),
        "{stdout}"
    );
    assert!(text(&out.stderr).contains("note: inspecting with --run-code loads the plugin"));
}

/// Spawns `pi-hooks` with stdout piped, reads 10 bytes, closes the pipe, and waits: the
/// command must end without a panic, with success or killed by SIGPIPE.
fn assert_quiet_on_closed_stdout(s: &Sandbox, args: &[&str]) {
    let mut child = s
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pi-hooks");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).expect("the first 10 bytes");
    drop(stdout);
    let output = child.wait_with_output().expect("wait for pi-hooks");
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    assert!(
        output.status.success() || output.status.signal() == Some(13),
        "{args:?} ended with {}: {stderr}",
        output.status
    );
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let s = Sandbox::new();
    // A description far larger than a pipe's buffer (64 KiB), so the writer is still writing
    // when the reader goes away.
    let description = "x".repeat(300_000);
    let library = plain_plugin(&s, "big", "big", &description);
    s.install(&library, &s.agent_dir().join("hooks"), "big.so");
    let file = library.to_str().unwrap();
    assert_quiet_on_closed_stdout(&s, &["list", "--json"]);
    assert_quiet_on_closed_stdout(&s, &["list"]);
    assert_quiet_on_closed_stdout(&s, &["inspect", "--json", file]);
    assert_quiet_on_closed_stdout(&s, &["inspect", file]);
    // The JSON mode echoes the prompt in several events: far more than a pipe holds.
    let script = quiet_script(&s);
    let prompt = "y".repeat(100_000);
    assert_quiet_on_closed_stdout(
        &s,
        &[
            "run",
            "--no-session",
            "--mode",
            "json",
            "--script",
            &script,
            &prompt,
        ],
    );
}
