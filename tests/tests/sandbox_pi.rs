//! Grants inside the real pi: pi 1.6.0 (on node 22) in RPC mode with the bridge (`pi-hooks bridge
//! install`), whose `pi-hooks serve` loads an installed package that declares capabilities
//! in a confined child of its own, as `run` does. The hostile C plugin
//! (tests/fixtures/sandbox_hostile.c), packed with `read: ["~/.ssh"]` and `network: false`,
//! reads what its grant allows, is refused a write outside it and a TCP socket (the refusal
//! named in pi as an extension error with the plugin, the action and the grant), and pi's
//! session goes on. A package pi itself installed (`pi install FOLDER`) is held to what
//! pi-hooks first saw of it: a new version that asks for more is refused until
//! `pi-hooks update NAME --grant`.
#![cfg(target_os = "linux")]

use pi_hooks_tests::Sandbox;
use pi_hooks_tests::confined::hostile_package_folder as package_folder;
use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply, after_tool, last_user_text, tool_call};
use pi_hooks_tests::npm::serve_children;
use pi_hooks_tests::packages::{edit_package_json, ok, refused};
use pi_hooks_tests::pi_e2e::{pi_rpc, prepare};
use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::tools::pi16;
use serde_json::{Value, json};

/// The model runs `echo <prompt>` (the plugin reads its attack from it), then says "done".
fn model() -> FakeOpenAi {
    FakeOpenAi::start(|body| {
        if after_tool(body) {
            return Reply::Text("done".into());
        }
        let prompt = last_user_text(body);
        tool_call("bash", json!({"command": format!("echo {prompt}")}))
    })
}

/// Packs the hostile plugin with `capabilities` and installs it with `pi-hooks install`.
fn install_package(sandbox: &Sandbox, capabilities: &Value) {
    let folder = package_folder(sandbox, capabilities);
    ok(sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
}

/// Sends `attack` as a prompt; returns the blocked call's reason (the plugin's outcome) and
/// every line up to `agent_end`.
fn attack(pi: &mut RpcClient, id: &str, attack: &str) -> (String, Vec<Value>) {
    pi.send(&json!({"id": id, "type": "prompt", "message": attack}));
    let (lines, _) = pi.until(|l| l["type"] == "agent_end");
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {lines:#?}"));
    let text = end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (text, lines)
}

/// The `notify` requests of type error among `lines`.
fn error_notices(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| {
            l["type"] == "extension_ui_request"
                && l["method"] == "notify"
                && l["notifyType"] == "error"
        })
        .map(|l| l["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The command lines of the processes whose parent is `pid`.
fn children_args(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let path = entry.path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if parent == Some(pid) {
            let cmdline = std::fs::read(path.join("cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}

#[test]
fn in_pi_an_installed_package_runs_confined_to_its_capabilities() {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    std::fs::create_dir_all(sandbox.home().join(".ssh")).unwrap();
    std::fs::write(sandbox.home().join(".ssh/id_rsa"), "SECRET-KEY\n").unwrap();
    std::fs::create_dir_all(sandbox.home().join("out")).unwrap();
    install_package(&sandbox, &json!({"read": ["~/.ssh"], "network": false}));
    let mut pi = pi_rpc(&pi16(), &sandbox, &["--no-session"]);

    // What the grant allows works: the package reads the key it was granted.
    let (read, _) = attack(&mut pi, "1", "read");
    assert_eq!(read, "read: ok SECRET-KEY");

    // The plugin runs in a confined child of pi's one serve.
    let serves = serve_children(pi.pid());
    assert_eq!(serves.len(), 1, "serve processes of pi: {serves:?}");
    let children = children_args(serves[0]);
    assert!(
        children
            .iter()
            .any(|c| c.contains(" serve ") && c.contains("--sandbox") && c.contains("libhostile")),
        "no confined child under pi's serve: {children:?}"
    );

    // A write outside the grant is refused by the kernel.
    let (write, _) = attack(&mut pi, "2", "write");
    assert_eq!(write, "write: failed Permission denied");
    assert!(!sandbox.home().join("out/stolen.txt").exists());

    // A TCP socket is refused and named in pi, with the plugin, the action and the grant.
    let (connect, lines) = attack(&mut pi, "3", "connect 9");
    assert_eq!(connect, "connect: failed socket: Permission denied");
    let notices = error_notices(&lines);
    // One short line (issue 34 item 16): what was refused and where the grant comes from.
    let expected = "sandbox denied socket(AF_INET): refused by its seccomp filter: its grant has network: no (grant from package hostile 1.0.0)";
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("Extension error (") && n.ends_with(expected)),
        "{expected}\nnot among pi's error notices: {notices:?}"
    );

    // pi's session goes on: a harmless command runs.
    let (after, _) = attack(&mut pi, "4", "after");
    assert_eq!(after.trim(), "after");
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

/// The loaded plugin `name` in `pi-hooks list --json`, if it loaded.
fn listed_plugin(sandbox: &Sandbox, name: &str) -> Option<Value> {
    let report = sandbox.list_json(&[]);
    report["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .cloned()
}

#[test]
fn a_package_pi_installed_that_asks_for_more_after_an_update_waits_for_a_grant() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, &json!({"read": ["~/.ssh"]}));
    // The real pi installs it (a local package: pi lists the folder in `packages`).
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

    // The first load accepts what pi installed: confined to what it declares.
    let first = listed_plugin(&sandbox, "hostile").expect("hostile loads");
    assert_eq!(first["runs"], "confined");
    let ssh = sandbox.home().join(".ssh");
    assert!(
        first["grant"]["summary"]
            .as_str()
            .unwrap()
            .starts_with(&format!("read: {}; write: nothing;", ssh.display())),
        "{first}"
    );

    // `pi update` brings 1.1.0, which asks to write too: not loaded, and the error says so.
    edit_package_json(&folder, |json| {
        json["version"] = "1.1.0".into();
        json["piHooks"]["manifest"]["capabilities"]["write"] = json!(["~/out"]);
    });
    assert_eq!(listed_plugin(&sandbox, "hostile"), None);
    let report = sandbox.list_json(&[]);
    let error = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|e| e["error"].as_str().filter(|t| t.contains("asks for more")))
        .unwrap_or_else(|| panic!("no refusal among the errors: {report:#}"))
        .to_owned();
    assert!(
        error.contains("package hostile 1.1.0")
            && error.contains("asks for more than you granted hostile 1.0.0: write: ~/out")
            && error.contains("`pi-hooks update hostile --grant --yes`"),
        "{error}"
    );

    // Without --grant the update says what it would grant; with it, 1.1.0 loads with it.
    let text = refused(&sandbox, &["update", "hostile"]);
    assert!(
        text.contains("to grant it: `pi-hooks update hostile --grant`"),
        "{text}"
    );
    let text = ok(&sandbox, &["update", "hostile", "--grant"]);
    assert!(
        text.contains("hostile 1.1.0 (installed by pi,") && text.contains("more capabilities"),
        "{text}"
    );
    let granted = listed_plugin(&sandbox, "hostile").expect("hostile loads once granted");
    assert_eq!(granted["grant"]["source"], "package hostile 1.1.0");
    assert!(
        granted["grant"]["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("write: {}", sandbox.home().join("out").display())),
        "{granted}"
    );

    // A version asking for no more than granted loads without asking.
    edit_package_json(&folder, |json| {
        json["version"] = "1.2.0".into();
        json["piHooks"]["manifest"]["capabilities"] = json!({"read": ["~/.ssh"]});
    });
    assert_eq!(
        listed_plugin(&sandbox, "hostile").expect("1.2.0 loads")["grant"]["source"],
        "package hostile 1.2.0"
    );
}
