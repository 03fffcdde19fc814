//! State across reload (the counter examples, `plugins/examples/counter-c` in C and
//! `plugins/examples/counter` in Rust): a count a plugin keeps with `append_entry` and rebuilds
//! at `session_start` goes on counting through ten reloads (the `/reload` prompt and the RPC
//! `reload` command in turn, the plugin rebuilt before some of them) and through a restart of
//! the host with `--continue`.

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::{Sandbox, compile_c, rust_plugin, workspace_root};
use serde_json::{Value, json};

/// The reloads (1 to 10) before which the plugin file is rebuilt as a new version.
const REBUILDS: [u32; 3] = [2, 5, 8];

/// One of the two counter examples, installed in a sandbox.
struct Counter<'a> {
    /// The plugin file the host loads.
    plugin: PathBuf,
    /// The command, with its slash.
    command: &'a str,
    /// The plugin's name, which starts its `session_start` notification.
    name: &'a str,
    /// The `customType` of its session entries.
    custom_type: &'a str,
    /// Rebuilds the plugin file as the given version.
    rebuild: &'a dyn Fn(&str),
}

/// `pi-hooks rpc --no-hooks --script <script> -e <plugin>` plus `extra`, in the sandbox; the
/// session goes to the sandbox's agent dir.
fn start(sandbox: &Sandbox, plugin: &Path, extra: &[&str]) -> Client {
    let script = sandbox.script(&json!({"turns": [{"text": "ok"}]}));
    let mut args = vec![
        "rpc".to_owned(),
        "--no-hooks".into(),
        "--script".into(),
        script.display().to_string(),
        "-e".into(),
        plugin.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Client::start(sandbox.command(&args))
}

/// The messages of the `notify` requests among `lines`; fails on any `extension_error`.
fn notices(lines: &[Value]) -> Vec<String> {
    if let Some(error) = lines.iter().find(|l| l["type"] == "extension_error") {
        panic!("unexpected extension_error: {error}");
    }
    lines
        .iter()
        .filter(|l| l["type"] == "extension_ui_request" && l["method"] == "notify")
        .map(|l| l["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Waits for the plugin's `session_start` notification and checks what it restored.
fn expect_restored(
    client: &mut Client,
    counter: &Counter,
    version: &str,
    count: u32,
    reason: &str,
) {
    let wanted = format!(
        "{} {version}: restored count {count} on {reason}",
        counter.name
    );
    let (lines, notify) = client.until(|l| l["method"] == "notify");
    assert_eq!(notices(&lines), Vec::<String>::new());
    assert_eq!(notify["message"], wanted.as_str(), "{notify}");
}

/// Sends the counter's command and returns the count it notified.
fn count(client: &mut Client, counter: &Counter, id: &str) -> String {
    client.send(&json!({"id": id, "type": "prompt", "message": counter.command}));
    let (lines, response) = client.until(|l| l["type"] == "response" && l["id"] == id);
    assert_eq!(response["success"], true, "{response}");
    let notices = notices(&lines);
    assert_eq!(notices.len(), 1, "one notification for {id}: {notices:?}");
    notices[0].clone()
}

/// Reloads every plugin, by the `/reload` prompt when `by_prompt`, else by the RPC `reload`
/// command, and checks that `version` came up and rebuilt `count` from the session.
fn reload(
    client: &mut Client,
    counter: &Counter,
    id: &str,
    by_prompt: bool,
    version: &str,
    count: u32,
) {
    let command = if by_prompt {
        json!({"id": id, "type": "prompt", "message": "/reload"})
    } else {
        json!({"id": id, "type": "reload"})
    };
    client.send(&command);
    let (lines, response) = client.until(|l| l["type"] == "response" && l["id"] == id);
    assert_eq!(response["success"], true, "{response}");
    if !by_prompt {
        let data = &response["data"];
        assert_eq!(data["errors"], json!([]), "{data}");
        assert_eq!(data["plugins"].as_array().map(Vec::len), Some(1), "{data}");
        assert_eq!(data["plugins"][0]["version"], version, "{data}");
        assert_eq!(data["plugins"][0]["reloaded"], true, "{data}");
    }
    assert_eq!(
        notices(&lines),
        [format!(
            "{} {version}: restored count {count} on reload",
            counter.name
        )],
        "{id}"
    );
}

/// The `data.count` of every entry of `custom_type` in the one session file under the
/// sandbox's agent dir, in file order.
fn saved_counts(sandbox: &Sandbox, custom_type: &str) -> Vec<i64> {
    let mut files = Vec::new();
    let mut folders = vec![sandbox.agent_dir().join("sessions")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("the sessions folder") {
            let path = entry.expect("a sessions folder entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    assert_eq!(files.len(), 1, "one session file: {files:?}");
    std::fs::read_to_string(&files[0])
        .expect("read the session file")
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
        .filter(|entry| entry["type"] == "custom" && entry["customType"] == custom_type)
        .map(|entry| entry["data"]["count"].as_i64().expect("a count"))
        .collect()
}

/// Three counts, ten reloads each followed by a count, then a new host with `--continue`.
fn counts_survive_reloads_and_a_restart(sandbox: &Sandbox, counter: &Counter, first_version: &str) {
    let mut client = start(sandbox, &counter.plugin, &[]);
    expect_restored(&mut client, counter, first_version, 0, "startup");
    let mut n = 0;
    for _ in 0..3 {
        n += 1;
        assert_eq!(
            count(&mut client, counter, &format!("c{n}")),
            format!("count: {n}")
        );
    }
    let mut version = first_version.to_owned();
    for i in 1..=10u32 {
        if REBUILDS.contains(&i) {
            version = format!("{first_version}-build{i}");
            (counter.rebuild)(&version);
        }
        reload(
            &mut client,
            counter,
            &format!("r{i}"),
            i % 2 == 1,
            &version,
            n,
        );
        n += 1;
        assert_eq!(
            count(&mut client, counter, &format!("c{n}")),
            format!("count: {n}"),
            "after reload {i}"
        );
    }
    assert_eq!(n, 13);
    let (status, _) = client.close();
    assert!(status.success(), "{status}");
    assert_eq!(
        saved_counts(sandbox, counter.custom_type),
        (1..=13).collect::<Vec<_>>()
    );

    // A new host continues the most recent session of the project and its count.
    let mut client = start(sandbox, &counter.plugin, &["--continue"]);
    expect_restored(&mut client, counter, &version, 13, "startup");
    assert_eq!(count(&mut client, counter, "after-restart"), "count: 14");
    let (status, _) = client.close();
    assert!(status.success(), "{status}");
    assert_eq!(
        saved_counts(sandbox, counter.custom_type),
        (1..=14).collect::<Vec<_>>()
    );
}

#[test]
fn the_c_counter_keeps_counting_through_reloads_and_a_restart() {
    let sandbox = Sandbox::new();
    let source = workspace_root().join("plugins/examples/counter-c/counter.c");
    let plugin = sandbox
        .lib()
        .join(format!("libcounter_c{}", std::env::consts::DLL_SUFFIX));
    // The flags scripts/build-c-plugins.sh uses; a rebuild writes over the same file.
    let build = |version: Option<&str>| {
        let define = version.map(|v| format!("-DVERSION=\"{v}\""));
        let mut flags = vec!["-pedantic", "-fvisibility=hidden"];
        flags.extend(define.as_deref());
        compile_c(&source, &plugin, &flags);
    };
    build(None);
    let rebuild = |version: &str| build(Some(version));
    let counter = Counter {
        plugin: plugin.clone(),
        command: "/count",
        name: "counter",
        custom_type: "counter",
        rebuild: &rebuild,
    };
    // VERSION defaults to 1.0.0 in counter.c.
    counts_survive_reloads_and_a_restart(&sandbox, &counter, "1.0.0");
}

/// `cargo build -p counter`, with `COUNTER_RS_VERSION` set to `version` if given.
fn cargo_build_counter(version: Option<&str>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace_root())
        .args(["build", "--quiet", "-p", "counter"])
        .env_remove("COUNTER_RS_VERSION");
    if let Some(version) = version {
        command.env("COUNTER_RS_VERSION", version);
    }
    let status = command.status().expect("run cargo build");
    assert!(status.success(), "cargo build -p counter failed");
}

#[test]
fn the_rust_counter_keeps_counting_through_reloads_and_a_restart() {
    let sandbox = Sandbox::new();
    let built = rust_plugin("counter");
    let plugin = sandbox.lib().join(built.file_name().expect("a file name"));
    // Copied beside, then renamed over the plugin's path, as cargo replaces its output.
    let install = || {
        let beside = sandbox.lib().join("counter.new");
        std::fs::copy(&built, &beside).expect("copy the built plugin");
        std::fs::rename(&beside, &plugin).expect("replace the plugin file");
    };
    install();
    let rebuild = |version: &str| {
        cargo_build_counter(Some(version));
        install();
    };
    let counter = Counter {
        plugin: plugin.clone(),
        command: "/count-rs",
        name: "counter-rs",
        custom_type: "counter-rs",
        rebuild: &rebuild,
    };
    counts_survive_reloads_and_a_restart(&sandbox, &counter, env!("CARGO_PKG_VERSION"));
    // Leaves target/ with the build a plain `cargo build` makes.
    cargo_build_counter(None);
}
