//! Hot reload in the modes: the `/reload` prompt, RPC `reload`, a plugin command's
//! `context->reload`, and `--watch`, with a C plugin rebuilt in place between them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::{Sandbox, c_fixture, compile_c_text};
use serde_json::{Value, json};

/// A plugin whose `/ver` command notifies its build's VERSION and whose `session_start` /
/// `session_shutdown` handlers notify `<event> <reason> <VERSION>`; every build has the tool
/// `slow` (runs `sleep 1.5` through `exec`, answers `VERSION exec=STATUS killed=0|1`); the v2
/// build also registers the tool `v2_tool` and the command `/v2cmd`.
fn build(lib: &Path, version: &str) -> PathBuf {
    build_with(lib, version, &[])
}

/// [`build`] with more compiler flags (`-DNO_SESSION`: no session handlers).
fn build_with(lib: &Path, version: &str, extra: &[&str]) -> PathBuf {
    let code = r#"
#include <stdio.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;

static PiStatus slow(void *ud, PiStr id, const PiValue *params, PiContext *ctx, PiResult *result) {
    PiStr args[1] = {pi_str("1.5")};
    PiExecRequest req;
    PiValue *out = NULL;
    bool killed = true;
    char text[64];
    (void)ud; (void)id; (void)params; (void)ctx;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.program = pi_str("sleep");
    req.args = args;
    req.arg_count = 1;
    PiStatus status = host->actions->exec(self, &req, &out);
    host->values->as_bool(host->values->get(out, pi_str("killed")), &killed);
    host->values->free(out);
    snprintf(text, sizeof text, "%s exec=%d killed=%d", VERSION, (int)status, (int)killed);
    return host->results->add_text(result, pi_str(text));
}

static PiStatus ver(void *ud, PiStr args, PiContext *ctx) {
    (void)ud; (void)args;
    return host->ui->notify(ctx, pi_str(VERSION), PI_NOTIFY_INFO);
}

__attribute__((unused)) static PiStatus on_session(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiStr type = {0}, reason = {0};
    char text[128];
    (void)ud; (void)result;
    host->values->as_str(host->values->get(event, pi_str("type")), &type);
    host->values->as_str(host->values->get(event, pi_str("reason")), &reason);
    snprintf(text, sizeof text, "%.*s %.*s %s", (int)type.len, type.ptr, (int)reason.len, reason.ptr, VERSION);
    if (type.len == 13) host->ui->set_status(ctx, pi_str("ver"), pi_str(VERSION));
    return host->ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
}

#ifdef WITH_TOOL
static PiStatus v2_tool(void *ud, PiStr id, const PiValue *params, PiContext *ctx, PiResult *result) {
    (void)ud; (void)id; (void)params; (void)ctx;
    return host->results->set_json(result, pi_str("{\"content\":[{\"type\":\"text\",\"text\":\"from v2\"}]}"));
}
#endif

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def;
    PiToolDef slow_tool;
    host = h;
    self = plugin;
    memset(&slow_tool, 0, sizeof slow_tool);
    slow_tool.struct_size = sizeof slow_tool;
    slow_tool.name = pi_str("slow");
    slow_tool.description = pi_str("sleeps 1.5 s through exec");
    slow_tool.parameters_json = pi_str("{\"type\":\"object\",\"properties\":{}}");
    slow_tool.execute = slow;
    host->registry->register_tool(plugin, &slow_tool);
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("ver");
    def.handler = ver;
#ifndef NO_SESSION
    host->registry->on(plugin, pi_str("session_start"), on_session, NULL);
    host->registry->on(plugin, pi_str("session_shutdown"), on_session, NULL);
#endif
#ifdef WITH_TOOL
    {
        PiToolDef tool;
        memset(&tool, 0, sizeof tool);
        tool.struct_size = sizeof tool;
        tool.name = pi_str("v2_tool");
        tool.description = pi_str("only in v2");
        tool.parameters_json = pi_str("{\"type\":\"object\",\"properties\":{}}");
        tool.execute = v2_tool;
        host->registry->register_tool(plugin, &tool);
        PiCommandDef v2cmd;
        memset(&v2cmd, 0, sizeof v2cmd);
        v2cmd.struct_size = sizeof v2cmd;
        v2cmd.name = pi_str("v2cmd");
        v2cmd.description = pi_str("only in v2");
        v2cmd.handler = ver;
        host->registry->register_command(plugin, &v2cmd);
    }
#endif
    return host->registry->register_command(plugin, &def);
}

PI_HOOKS_PLUGIN("versioned", VERSION, "says its version", init, NULL);
"#;
    let define = format!("-DVERSION=\"{version}\"");
    let mut flags = vec![define.as_str()];
    if version == "2.0.0" {
        flags.push("-DWITH_TOOL");
    }
    flags.extend(extra);
    // Built beside, then renamed over the plugin's path, as a linker does.
    let built = compile_c_text(&lib.join("build"), "versioned", code, &flags);
    let target = lib.join(format!("versioned{}", std::env::consts::DLL_SUFFIX));
    std::fs::rename(&built, &target).expect("replace the plugin file");
    target
}

fn rpc(sandbox: &Sandbox, plugin: &Path, extra: &[&Path], watch: bool) -> Client {
    rpc_calling(sandbox, plugin, extra, watch, "v2_tool")
}

/// `pi-hooks rpc` with `plugin` (and `extra`), whose scripted model calls `tool` once, then
/// answers "done".
fn rpc_calling(
    sandbox: &Sandbox,
    plugin: &Path,
    extra: &[&Path],
    watch: bool,
    tool: &str,
) -> Client {
    let script = sandbox.root().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"toolCalls": [{"name": tool, "arguments": {}}]}, {"text": "done"}]})
            .to_string(),
    )
    .unwrap();
    let mut args = vec![
        "rpc".to_owned(),
        "--no-session".into(),
        "--no-hooks".into(),
        "--script".into(),
        script.display().to_string(),
        "-e".into(),
        plugin.display().to_string(),
    ];
    for path in extra {
        args.extend(["-e".to_owned(), path.display().to_string()]);
    }
    if watch {
        args.push("--watch".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Client::start(sandbox.command(&args))
}

/// Sends `/ver` and returns the version the plugin notifies.
fn version(client: &mut Client, id: &str) -> String {
    client.send(&json!({"id": id, "type": "prompt", "message": "/ver"}));
    let (_, notify) = client
        .until(|l| l["method"] == "notify" && !l["message"].as_str().unwrap_or("").contains(' '));
    client.response(id);
    notify["message"].as_str().unwrap().to_owned()
}

/// Asks `reloaded` (with a fresh request id each time) every 50 ms until it says yes; fails
/// after 15 s.
fn until_reloaded(client: &mut Client, reloaded: impl Fn(&mut Client, &str) -> bool) {
    let started = Instant::now();
    let mut n = 0;
    while !reloaded(client, &format!("poll{n}")) {
        n += 1;
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "never reloaded"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn notices(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["method"] == "notify")
        .filter_map(|l| l["message"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn reload_prompt_and_rpc_reload_load_the_new_build_in_pi_s_order() {
    let sandbox = Sandbox::new();
    let lib = sandbox.lib();
    std::fs::create_dir_all(lib.join("build")).unwrap();
    let plugin = build(&lib, "1.0.0");
    let mut client = rpc(&sandbox, &plugin, &[], false);
    assert_eq!(version(&mut client, "v1"), "1.0.0");

    build(&lib, "2.0.0");
    assert_eq!(
        version(&mut client, "still"),
        "1.0.0",
        "no reload without /reload"
    );
    client.send(&json!({"id": "r", "type": "prompt", "message": "/reload"}));
    let (lines, response) = client.until(|l| l["id"] == "r");
    assert_eq!(response["success"], true, "{response}");
    assert_eq!(
        notices(&lines),
        [
            "session_shutdown reload 1.0.0",
            "session_start reload 2.0.0"
        ]
    );
    // Statuses are cleared before the new instances start, which set theirs again.
    let statuses: Vec<Value> = lines
        .iter()
        .filter(|l| l["method"] == "setStatus" && l["statusKey"] == "ver")
        .map(|l| l["statusText"].clone())
        .collect();
    assert_eq!(statuses, [Value::Null, json!("2.0.0")], "{lines:#?}");
    assert_eq!(version(&mut client, "v2"), "2.0.0");
    // The new build's tool is there for the model.
    client.send(&json!({"id": "t", "type": "prompt", "message": "use the tool"}));
    let (run, _) = client.until(|l| l["type"] == "agent_end");
    let end = run
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "from v2", "{end}");

    // A broken rebuild: the reload reports it and v2 keeps answering.
    std::fs::write(&plugin, b"\x7fELF truncated").unwrap();
    client.send(&json!({"id": "rr", "type": "reload"}));
    let (lines, response) = client.until(|l| l["id"] == "rr");
    assert_eq!(response["success"], true, "{response}");
    let data = &response["data"];
    assert_eq!(data["plugins"][0]["reloaded"], false, "{data}");
    assert_eq!(data["errors"][0]["path"], plugin.display().to_string());
    let error = lines
        .iter()
        .find(|l| l["type"] == "extension_error")
        .expect("an extension_error line");
    assert_eq!(error["event"], "reload");
    assert_eq!(version(&mut client, "kept"), "2.0.0");
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn a_plugin_command_reloads_after_it_returns() {
    let sandbox = Sandbox::new();
    let lib = sandbox.lib();
    std::fs::create_dir_all(lib.join("build")).unwrap();
    let plugin = build(&lib, "1.0.0");
    let go = c_fixture(&lib, "session_go", &[]);
    let mut client = rpc(&sandbox, &plugin, &[&go], false);
    build(&lib, "2.0.0");
    client.send(&json!({"id": "g", "type": "prompt", "message": "/go reload now"}));
    let (lines, response) = client.until(|l| l["id"] == "g");
    assert_eq!(response["success"], true);
    let reload: Vec<String> = notices(&lines)
        .into_iter()
        .filter(|n| n.contains("reload"))
        .collect();
    assert_eq!(
        reload,
        [
            "session_shutdown reload 1.0.0",
            "session_start reload 2.0.0"
        ]
    );
    assert_eq!(version(&mut client, "v"), "2.0.0");
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn watch_reloads_a_rebuilt_plugin_by_itself() {
    let sandbox = Sandbox::new();
    let lib = sandbox.lib();
    std::fs::create_dir_all(lib.join("build")).unwrap();
    let plugin = build(&lib, "1.0.0");
    let mut client = rpc(&sandbox, &plugin, &[], true);
    assert_eq!(version(&mut client, "v1"), "1.0.0");
    build(&lib, "2.0.0");
    until_reloaded(&mut client, |c, id| version(c, id) == "2.0.0");
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn reload_is_refused_while_the_agent_runs() {
    let sandbox = Sandbox::new();
    let lib = sandbox.lib();
    std::fs::create_dir_all(lib.join("build")).unwrap();
    let plugin = build(&lib, "1.0.0");
    let script = sandbox.root().join("slow.json");
    std::fs::write(
        &script,
        json!({"turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 1"}}]}, {"text": "done"}]})
            .to_string(),
    )
    .unwrap();
    let mut client = Client::start(sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "-e",
        plugin.to_str().unwrap(),
    ]));
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    client.until(|l| l["type"] == "tool_execution_start");
    client.send(&json!({"id": "r", "type": "prompt", "message": "/reload"}));
    let refused = client.response("r");
    assert_eq!(refused["success"], false);
    assert_eq!(
        refused["error"],
        "cannot reload while the agent is running; wait for the run to end or abort it, then reload"
    );
    client.send(&json!({"id": "rr", "type": "reload"}));
    assert_eq!(client.response("rr")["success"], false);
    client.until(|l| l["type"] == "agent_end");
    let (status, _) = client.close();
    assert!(status.success());
}

/// The plugin command names `get_commands` lists.
fn command_names(client: &mut Client, id: &str) -> Vec<String> {
    client.send(&json!({"id": id, "type": "get_commands"}));
    let response = client.response(id);
    response["data"]["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn get_commands_follows_reloads_and_the_watcher() {
    let sandbox = Sandbox::new();
    let lib = sandbox.lib();
    std::fs::create_dir_all(lib.join("build")).unwrap();
    let plugin = build(&lib, "1.0.0");
    let mut client = rpc(&sandbox, &plugin, &[], true);
    assert_eq!(command_names(&mut client, "c1"), ["ver"]);
    // RPC `reload` of a build with one command more.
    build(&lib, "2.0.0");
    client.send(&json!({"id": "r", "type": "reload"}));
    assert_eq!(client.response("r")["success"], true);
    assert_eq!(command_names(&mut client, "c2"), ["v2cmd", "ver"]);
    // The watcher brings the first build back: the command is gone again.
    build(&lib, "1.0.0");
    until_reloaded(&mut client, |c, id| command_names(c, id) == ["ver"]);
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn a_watch_reload_lets_a_running_plugin_tool_finish_its_exec() {
    let sandbox = Sandbox::new();
    let lib = sandbox.lib();
    std::fs::create_dir_all(lib.join("build")).unwrap();
    // The second build is made first and set aside, so that it replaces the plugin file at
    // once when the tool has started.
    // Without session handlers: the reload's `session_shutdown` would otherwise wait for the
    // tool's call itself.
    let second = lib.join("second.so");
    std::fs::rename(build_with(&lib, "2.0.0", &["-DNO_SESSION"]), &second).unwrap();
    let plugin = build_with(&lib, "1.0.0", &["-DNO_SESSION"]);
    let mut client = rpc_calling(&sandbox, &plugin, &[], true, "slow");
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    client.until(|l| l["type"] == "tool_execution_start");
    // Replaced (as a linker does) while the old version's tool waits on its `sleep 1.5`.
    std::fs::rename(&second, &plugin).unwrap();
    let (_, end) = client.until(|l| l["type"] == "tool_execution_end");
    assert_eq!(
        end["result"]["content"][0]["text"], "1.0.0 exec=0 killed=0",
        "the old version's call finished with its child: {end}"
    );
    client.until(|l| l["type"] == "agent_end");
    until_reloaded(&mut client, |c, id| version(c, id) == "2.0.0");
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn watch_started_while_the_plugin_file_is_half_written_loads_it_once_complete() {
    let sandbox = Sandbox::new();
    let lib = sandbox.lib();
    std::fs::create_dir_all(lib.join("build")).unwrap();
    let plugin = build(&lib, "1.0.0");
    let whole = std::fs::read(&plugin).unwrap();
    // The linker is still writing: half the bytes are there.
    std::fs::write(&plugin, &whole[..whole.len() / 2]).unwrap();
    let script = sandbox.root().join("script.json");
    std::fs::write(&script, json!({"turns": [{"text": "done"}]}).to_string()).unwrap();
    let log = sandbox.root().join("stderr.log");
    let mut command = sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "-e",
        plugin.to_str().unwrap(),
        "--watch",
    ]);
    command.env("PI_HOOKS_TRACE", "json");
    let mut client =
        Client::start_with_stderr(command, std::fs::File::create(&log).unwrap().into());
    let not_loaded =
        |l: &Value| l["method"] == "setStatus" && l["statusKey"] == "pi-hooks:not-loaded";
    // Its absence is shown while it lasts.
    let (_, shown) = client.until(not_loaded);
    assert_eq!(shown["statusText"], "not loaded: versioned.so", "{shown}");
    // The build finishes (written in place, as a linker does).
    std::thread::sleep(Duration::from_millis(400));
    std::fs::write(&plugin, &whole).unwrap();
    let (_, cleared) = client.until(not_loaded);
    assert!(cleared.get("statusText").is_none(), "{cleared}");
    assert_eq!(version(&mut client, "v"), "1.0.0", "the plugin runs now");
    let (status, _) = client.close();
    assert!(status.success());
    let stderr = std::fs::read_to_string(&log).unwrap();
    let traced: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["trace"] == "not_loaded")
        .collect();
    let decisions: Vec<&str> = traced
        .iter()
        .filter_map(|l| l["decision"].as_str())
        .collect();
    assert_eq!(decisions, ["missing", "back"], "{stderr}");
    assert_eq!(traced[0]["path"], plugin.display().to_string());
}
