//! A guard that did not load is loud, once, with the command that fixes it (issue 34 item 1,
//! What-to-build 4): a native package pi installed (the real pi 1.6.0's `pi install FOLDER`),
//! whose next version asks for more capabilities than pi-hooks first saw of it, is refused;
//! the refusal is said on stderr exactly once, with `pi-hooks update NAME --grant --yes`, in
//!
//! - pi's print mode (`pi -p`) and JSON mode (`pi --mode json`), through the bridge (installed
//!   by `pi-hooks bridge install`), and in pi's RPC mode as one `notify` warning;
//! - pi-hooks' own print and JSON modes (`pi-hooks run`, `--mode json`) and RPC mode
//!   (`pi-hooks rpc`, on stderr as pi prints a broken extension's diagnostic in its RPC mode).
//!
//! A `packages` entry with nothing installed (the other guard that can vanish) is said once
//! too, with `pi install NAME`.
#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use pi_hooks_tests::Sandbox;
use pi_hooks_tests::confined::hostile_package_folder as package_folder;
use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply};
use pi_hooks_tests::packages::edit_package_json;
use pi_hooks_tests::pi_e2e::{pi_command_of, pi_rpc, prepare};
use pi_hooks_tests::tools::pi16;
use serde_json::{Value, json};

/// A model that always answers "ok".
fn model() -> FakeOpenAi {
    FakeOpenAi::start(|_| Reply::Text("ok".into()))
}

/// `pi install FOLDER` with the real pi 1.6.0.
fn pi_install(sandbox: &Sandbox, folder: &Path) {
    let install = pi16()
        .command()
        .args(["install", folder.to_str().unwrap()])
        .current_dir(sandbox.project())
        .env("HOME", sandbox.home())
        .env("PI_CODING_AGENT_DIR", sandbox.agent_dir())
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
}

/// A sandbox with the bridge and the model set up, and the hostile package pi installed at
/// 1.0.0 (seen once by pi-hooks), then "updated" in place to 1.1.0 asking to write too.
fn refused_update(server: &FakeOpenAi) -> Sandbox {
    let sandbox = Sandbox::new();
    prepare(&sandbox, server);
    let folder = package_folder(&sandbox, &json!({"read": ["~/.ssh"]}));
    pi_install(&sandbox, &folder);
    // The first load records what the user accepted.
    let list = sandbox.list_json(&[]);
    assert!(
        list["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "hostile"),
        "{list:#}"
    );
    edit_package_json(&folder, |json| {
        json["version"] = "1.1.0".into();
        json["piHooks"]["manifest"]["capabilities"]["write"] = json!(["~/out"]);
    });
    sandbox
}

/// The lines of `text` that say the package was refused.
fn refusal_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains("asks for more than you granted hostile 1.0.0"))
        .collect()
}

/// Exactly one line of `stderr` says the refusal, with the command that grants it.
fn said_once_with_the_fix(stderr: &str, how: &str) {
    let lines = refusal_lines(stderr);
    assert_eq!(
        lines.len(),
        1,
        "{how}: the refusal once on stderr:\n{stderr}"
    );
    assert!(
        lines[0].contains("`pi-hooks update hostile --grant --yes`"),
        "{how}: {}",
        lines[0]
    );
}

/// `pi <mode> -p hi` of the real pi 1.6.0, stdin empty; must exit 0.
fn pi_one_shot(sandbox: &Sandbox, mode: &[&str]) -> Output {
    let mut command = pi_command_of(&pi16(), sandbox);
    command
        .args(mode)
        .args([
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
            "hi",
        ])
        .stdin(Stdio::null());
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "pi {mode:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn a_refused_update_is_said_once_in_pis_print_json_and_rpc_modes() {
    let server = model();
    let sandbox = refused_update(&server);

    let print = pi_one_shot(&sandbox, &["-p"]);
    said_once_with_the_fix(&String::from_utf8_lossy(&print.stderr), "pi -p");
    assert!(refusal_lines(&String::from_utf8_lossy(&print.stdout)).is_empty());

    let json_mode = pi_one_shot(&sandbox, &["--mode", "json"]);
    said_once_with_the_fix(
        &String::from_utf8_lossy(&json_mode.stderr),
        "pi --mode json",
    );
    // stdout stays pi's JSON lines.
    for line in String::from_utf8_lossy(&json_mode.stdout).lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }

    // pi's RPC mode has a UI: one warning notice, not two.
    let mut rpc = pi_rpc(&pi16(), &sandbox, &["--no-session"]);
    rpc.send(&json!({"id": "1", "type": "get_state"}));
    let (lines, _) = rpc.until(|l| l["type"] == "response" && l["id"] == "1");
    let (status, rest) = rpc.close();
    assert!(status.success(), "{status}");
    let notices: Vec<&Value> = lines
        .iter()
        .chain(rest.iter())
        .filter(|l| {
            l["type"] == "extension_ui_request"
                && l["method"] == "notify"
                && l["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("asks for more than you granted"))
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:#?}");
    assert_eq!(notices[0]["notifyType"], "warning");
}

#[test]
fn a_refused_update_is_said_once_in_pi_hooks_run_json_and_rpc() {
    let server = model();
    let sandbox = refused_update(&server);

    let print = sandbox.run(&["run", "hi"]);
    assert!(print.status.success(), "{print:?}");
    said_once_with_the_fix(&String::from_utf8_lossy(&print.stderr), "run");

    let json_mode = sandbox.run(&["run", "--mode", "json", "hi"]);
    assert!(json_mode.status.success(), "{json_mode:?}");
    said_once_with_the_fix(
        &String::from_utf8_lossy(&json_mode.stderr),
        "run --mode json",
    );
    // stdout holds JSON lines only, the refusal among them once as a load `extension_error`.
    one_load_error_line(&json_mode.stdout, "run --mode json");

    let rpc = rpc_until_closed(&sandbox, &[]);
    said_once_with_the_fix(&String::from_utf8_lossy(&rpc.stderr), "rpc");
    one_load_error_line(&rpc.stdout, "rpc");
}

/// `stdout` is JSON lines, and exactly one is the refusal's
/// `{"type":"extension_error","event":"load",...}`.
fn one_load_error_line(stdout: &[u8], how: &str) {
    let text = String::from_utf8_lossy(stdout);
    let mut found = 0;
    for line in text.lines() {
        let value: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{how}: {e}: {line}"));
        if value["error"]
            .as_str()
            .is_some_and(|e| e.contains("asks for more than you granted"))
        {
            assert_eq!(value["type"], "extension_error", "{how}: {value}");
            assert_eq!(value["event"], "load", "{how}: {value}");
            found += 1;
        }
    }
    assert_eq!(found, 1, "{how}:\n{text}");
}

/// `pi-hooks rpc` with `args`, one `get_state` on stdin, then stdin closed.
fn rpc_until_closed(sandbox: &Sandbox, args: &[&str]) -> Output {
    let mut all = vec!["rpc"];
    all.extend_from_slice(args);
    let mut child = sandbox
        .command(&all)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"1\",\"type\":\"get_state\"}\n")
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    output
}

#[test]
fn a_listed_package_with_nothing_installed_is_said_once_with_pi_install() {
    let server = model();
    let sandbox = Sandbox::new();
    prepare(&sandbox, &server);
    let settings = sandbox.agent_dir().join("settings.json");
    std::fs::write(
        &settings,
        json!({"packages": ["npm:@acme/gate"]}).to_string(),
    )
    .unwrap();
    let missing = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains("npm:@acme/gate is listed but not installed"))
            .map(str::to_owned)
            .collect()
    };
    let check = |stderr: &str, how: &str| {
        let lines = missing(stderr);
        assert_eq!(lines.len(), 1, "{how}:\n{stderr}");
        assert!(
            lines[0].contains("`pi install npm:@acme/gate`"),
            "{how}: {}",
            lines[0]
        );
    };
    // pi (offline) does not install it; the bridge says it once.
    let print = pi_one_shot(&sandbox, &["-p"]);
    check(&String::from_utf8_lossy(&print.stderr), "pi -p");
    let json_mode = pi_one_shot(&sandbox, &["--mode", "json"]);
    check(
        &String::from_utf8_lossy(&json_mode.stderr),
        "pi --mode json",
    );
    let run = sandbox.run(&["run", "hi"]);
    check(&String::from_utf8_lossy(&run.stderr), "run");
    let run_json = sandbox.run(&["run", "--mode", "json", "hi"]);
    check(
        &String::from_utf8_lossy(&run_json.stderr),
        "run --mode json",
    );
    let rpc = rpc_until_closed(&sandbox, &[]);
    check(&String::from_utf8_lossy(&rpc.stderr), "rpc");
}
