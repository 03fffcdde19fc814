//! A new session end to end: RPC
//! `new_session` answers `{"cancelled": bool}`, plugins get `session_before_switch`
//! `{reason:"new"}` (which can cancel) and then `session_switch`
//! `{reason:"new", previousSessionFile}`, the old file is closed and complete, later prompts
//! land in the new one, and a plugin command starts one through `context->new_session`.

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::{Sandbox, behave_env_var, behave_plugin, compile_c_text, read_behave_log};
use serde_json::{Value, json};

/// `pi-hooks rpc --session <root>/s.jsonl --no-hooks --script <script> -e <plugin>...`.
/// A prompt run to its `agent_end`.
fn prompt(client: &mut Client, id: &str, message: &str) {
    client.send(&json!({"id": id, "type": "prompt", "message": message}));
    assert_eq!(client.response(id)["success"], true, "{:?}", client.seen);
    client.until(|l| l["type"] == "agent_end");
}

/// The session file `get_state` reports.
fn session_file(client: &mut Client) -> PathBuf {
    client.send(&json!({"id": "state", "type": "get_state"}));
    let state = client.response("state");
    PathBuf::from(
        state["data"]["sessionFile"]
            .as_str()
            .expect("a session file"),
    )
}

/// Closes stdin and expects a successful exit.
fn close(client: Client) {
    let (status, _) = client.close();
    assert!(status.success(), "pi-hooks rpc exited with {status}");
}

fn rpc(sandbox: &Sandbox, plugins: &[&Path]) -> (Command, PathBuf) {
    let script = sandbox.root().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"text": "reply to ${PROMPT}"}]}).to_string(),
    )
    .expect("write script");
    let file = sandbox.root().join("s.jsonl");
    let mut args = vec![
        "rpc".to_owned(),
        "--session".to_owned(),
        file.display().to_string(),
        "--no-hooks".to_owned(),
        "--script".to_owned(),
        script.display().to_string(),
    ];
    for plugin in plugins {
        args.extend(["-e".to_owned(), plugin.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = sandbox.command(&args);
    command.env("BEHAVE_LOG", sandbox.root().join("behave.log"));
    (command, file)
}

/// A `behave` plugin named `watcher` with `handlers`.
fn watcher(sandbox: &Sandbox, command: &mut Command, handlers: Value) -> PathBuf {
    command.env(
        behave_env_var("watcher"),
        json!({ "handlers": handlers }).to_string(),
    );
    behave_plugin(&sandbox.lib(), "watcher")
}

/// The session file's lines, parsed.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The texts of the user messages in a session file.
fn user_texts(path: &Path) -> Vec<String> {
    lines(path)
        .iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn rpc_new_session_switches_to_a_new_file_and_tells_plugins() {
    let sandbox = Sandbox::new();
    let (mut command, old) = rpc(&sandbox, &[]);
    let plugin = watcher(
        &sandbox,
        &mut command,
        json!([
            {"event": "session_before_switch", "log_ctx": true},
            {"event": "session_switch", "log_ctx": true},
        ]),
    );
    command.args(["-e", plugin.to_str().unwrap()]);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "hello");
    client.send(&json!({"id": "n1", "type": "new_session"}));
    let response = client.response("n1");
    assert_eq!(
        response,
        json!({"id": "n1", "type": "response", "command": "new_session", "success": true, "data": {"cancelled": false}})
    );
    let new = session_file(&mut client);
    assert_ne!(new, old, "a new session file");
    assert_eq!(new.parent(), old.parent(), "beside the old one");
    client.send(&json!({"id": "m", "type": "get_messages"}));
    assert_eq!(client.response("m")["data"]["messages"], json!([]));

    // The old file was closed (its lock released): another pi-hooks continues it meanwhile.
    let script = sandbox.root().join("script.json");
    let other = sandbox
        .command(&[
            "run",
            "-p",
            "--no-hooks",
            "--script",
            script.to_str().unwrap(),
            "--session",
            old.to_str().unwrap(),
            "reopened",
        ])
        .output()
        .expect("run pi-hooks");
    assert!(
        other.status.success(),
        "the old session reopens while the RPC process runs: {}",
        String::from_utf8_lossy(&other.stderr)
    );

    prompt(&mut client, "p2", "second");
    close(client);

    assert_eq!(user_texts(&old), ["hello", "reopened"]);
    let new_lines = lines(&new);
    assert_eq!(new_lines[0]["type"], "session", "{}", new_lines[0]);
    assert_eq!(new_lines[0]["cwd"], sandbox.project().display().to_string());
    assert!(new_lines[0].get("parentSession").is_none());
    assert_eq!(user_texts(&new), ["second"]);

    let log = read_behave_log(&sandbox.root().join("behave.log"));
    let who: Vec<String> = log.iter().map(|l| l.who()).collect();
    assert_eq!(
        who,
        [
            "watcher session_before_switch",
            "watcher session_before_switch:ctx",
            "watcher session_switch",
            "watcher session_switch:ctx",
        ]
    );
    assert_eq!(
        log[0].value,
        json!({"type": "session_before_switch", "reason": "new"})
    );
    assert_eq!(log[1].value["sessionFile"], old.display().to_string());
    assert_eq!(
        log[2].value,
        json!({"type": "session_switch", "reason": "new", "previousSessionFile": old.display().to_string()})
    );
    assert_eq!(
        log[3].value["sessionFile"],
        new.display().to_string(),
        "plugins see the new session file after the switch"
    );
}

#[test]
fn a_plugin_cancelling_session_before_switch_keeps_the_session() {
    let sandbox = Sandbox::new();
    let (mut command, old) = rpc(&sandbox, &[]);
    let plugin = watcher(
        &sandbox,
        &mut command,
        json!([
            {"event": "session_before_switch", "result": {"cancel": true}},
            {"event": "session_switch"},
        ]),
    );
    command.args(["-e", plugin.to_str().unwrap()]);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "hello");
    client.send(&json!({"id": "n1", "type": "new_session", "parentSession": "/elsewhere/p.jsonl"}));
    assert_eq!(client.response("n1")["data"], json!({"cancelled": true}));
    assert_eq!(session_file(&mut client), old);
    client.send(&json!({"id": "m", "type": "get_messages"}));
    assert_eq!(
        client.response("m")["data"]["messages"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    prompt(&mut client, "p2", "second");
    client.send(&json!({"id": "bad", "type": "new_session", "parentSession": 3}));
    let bad = client.response("bad");
    assert_eq!(bad["success"], false);
    assert_eq!(
        bad["error"],
        "new_session: \"parentSession\" must be a string, not a number"
    );
    close(client);
    assert_eq!(user_texts(&old), ["hello", "second"]);
    let sessions = std::fs::read_dir(old.parent().unwrap())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "jsonl")
        })
        .count();
    assert_eq!(sessions, 1, "no other session file was made");
    let who: Vec<String> = read_behave_log(&sandbox.root().join("behave.log"))
        .iter()
        .map(|l| l.who())
        .collect();
    assert_eq!(who, ["watcher session_before_switch"], "no session_switch");
}

/// `/fresh` calls `context->new_session` with a `parentSession`; an `input` handler calls it
/// too (not a command: refused). Each writes `<who> <status> <cancelled>` to `FRESH_LOG`.
const FRESH: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include "pi_hooks.h"

static const PiHostApi *host;

static void note(const char *who, PiStatus status, bool cancelled) {
    FILE *f = fopen(getenv("FRESH_LOG"), "a");
    if (f == NULL) return;
    fprintf(f, "%s %s %d\n", who,
            status == PI_OK ? "ok" : status == PI_ERR_UNAVAILABLE ? "unavailable" : "other",
            (int)cancelled);
    fclose(f);
}

static PiStatus fresh(void *u, PiStr args, PiContext *ctx) {
    bool cancelled = true;
    PiStatus status;
    (void)u; (void)args;
    status = host->context->new_session(ctx, pi_str("{\"parentSession\":\"/x/parent.jsonl\"}"), &cancelled);
    note("command", status, cancelled);
    return PI_OK;
}

static PiStatus on_input(void *u, const PiValue *event, PiContext *ctx, PiResult *result) {
    bool cancelled = false;
    (void)u; (void)event; (void)result;
    note("input", host->context->new_session(ctx, pi_str(""), &cancelled), cancelled);
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def = {0};
    host = h;
    def.struct_size = sizeof def;
    def.name = pi_str("fresh");
    def.description = pi_str("starts a new session");
    def.handler = fresh;
    host->registry->register_command(plugin, &def);
    return host->registry->on(plugin, pi_str("input"), on_input, NULL);
}

PI_HOOKS_PLUGIN("fresh", "1.0.0", "starts new sessions", init, NULL);
"#;

#[test]
fn a_plugin_command_starts_a_new_session_after_it_returns() {
    let sandbox = Sandbox::new();
    let fresh = compile_c_text(&sandbox.lib(), "fresh", FRESH, &[]);
    let (mut command, old) = rpc(&sandbox, &[&fresh]);
    let plugin = watcher(
        &sandbox,
        &mut command,
        json!([{"event": "session_before_switch"}, {"event": "session_switch"}]),
    );
    command.args(["-e", plugin.to_str().unwrap()]);
    let fresh_log = sandbox.root().join("fresh.log");
    command.env("FRESH_LOG", &fresh_log);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "hello");
    client.send(&json!({"id": "c", "type": "prompt", "message": "/fresh"}));
    assert_eq!(client.response("c")["success"], true);
    let new = session_file(&mut client);
    assert_ne!(new, old);
    prompt(&mut client, "p2", "after");
    close(client);

    assert_eq!(
        std::fs::read_to_string(&fresh_log).unwrap(),
        "input unavailable 0\ncommand ok 0\ninput unavailable 0\n",
        "new_session works from a command only; elsewhere PI_ERR_UNAVAILABLE"
    );
    assert_eq!(user_texts(&old), ["hello"]);
    assert_eq!(user_texts(&new), ["after"]);
    assert_eq!(lines(&new)[0]["parentSession"], "/x/parent.jsonl");
    let log = read_behave_log(&sandbox.root().join("behave.log"));
    let who: Vec<String> = log.iter().map(|l| l.who()).collect();
    assert_eq!(
        who,
        ["watcher session_before_switch", "watcher session_switch"]
    );
    assert_eq!(
        log[1].value["previousSessionFile"],
        old.display().to_string()
    );
}
