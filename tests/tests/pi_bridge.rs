//! Native plugins inside the real pi: pi 1.6.0 on node 22 in RPC mode (`tools::pi16`, from
//! scripts/pi-peer-1.6), and for the blocking tests pi 0.73.1 too (`tools::pi073`, from
//! scripts/pi-peer), with the bridge installed by `pi-hooks bridge install`, a fake
//! OpenAI-compatible server scripting the model (tests/src/fake_openai.rs), and native
//! plugins dropped into the agent directory: the C protected-paths and confirm-command, the
//! Rust permission-gate and workflow, a plugin rebuilt and reloaded through pi's `/reload`,
//! and one that segfaults on a given input.

use std::path::{Path, PathBuf};

use pi_hooks_tests::fake_openai::{
    FakeOpenAi, Reply, after_tool, last_user_text, tool_call, user_texts,
};
use pi_hooks_tests::pi_e2e::{RPC_WITH_FAKE_MODEL, pi_command_of, pi_rpc, pi_rpc_of, prepare};
use pi_hooks_tests::rpc_client::{RpcClient, command_source_info};
use pi_hooks_tests::tools::{Pi, pi16, pi073};
use pi_hooks_tests::workflow::install_examples;
use pi_hooks_tests::{
    Sandbox, c_example_plugin, c_fixture, compile_c_text, protected_paths_plugin, rust_plugin,
};
use serde_json::{Value, json};

/// The model: after a tool result it says "done"; otherwise it runs the tool the prompt
/// asks for.
fn model() -> FakeOpenAi {
    FakeOpenAi::start(|body| {
        if after_tool(body) {
            return Reply::Text("done".into());
        }
        let prompt = last_user_text(body);
        if prompt.contains("wipe") {
            tool_call("bash", json!({"command": "rm -rf build"}))
        } else if prompt.contains("secret") {
            tool_call("write", json!({"path": ".env", "content": "KEY=1\n"}))
        } else if prompt.contains("crash") {
            tool_call("bash", json!({"command": "echo crash"}))
        } else if user_texts(body)
            .iter()
            .any(|t| t.contains("Start the Feature workflow"))
        {
            tool_call("bash", json!({"command": "ls"}))
        } else if prompt.contains("npm") {
            tool_call(
                "bash",
                json!({"command": "npm --version; echo var=$CUSTOM_VAR"}),
            )
        } else if prompt.contains("hello") {
            tool_call("bash", json!({"command": "echo hello"}))
        } else {
            Reply::Text("ok".into())
        }
    })
}

/// The global extensions folder, where pi-hooks discovers native plugins too.
fn extensions(sandbox: &Sandbox) -> PathBuf {
    sandbox.agent_dir().join("extensions")
}

fn install(sandbox: &Sandbox, library: &Path) {
    let name = library.file_name().unwrap().to_str().unwrap().to_owned();
    sandbox.install(library, &extensions(sandbox), &name);
}

/// Sends a prompt and answers no dialog; returns every line up to `agent_end`.
fn run(pi: &mut RpcClient, id: &str, message: &str) -> Vec<Value> {
    pi.send(&json!({"id": id, "type": "prompt", "message": message}));
    let (lines, _) = pi.until(|l| l["type"] == "agent_end");
    lines
}

/// The `tool_execution_end` among `lines`.
fn tool_end(lines: &[Value]) -> &Value {
    lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {lines:#?}"))
}

fn result_text(end: &Value) -> String {
    end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn native_plugins_gate_pi_s_tools_and_ask_through_pi_s_ui() {
    native_plugins_gate_pi_s_tools_and_ask_through_pi_s_ui_in(&pi16());
}

/// The same with pi 0.73.1.
#[test]
fn native_plugins_gate_pi_s_tools_and_ask_through_pi_s_ui_pi_0_73() {
    native_plugins_gate_pi_s_tools_and_ask_through_pi_s_ui_in(&pi073());
}

fn native_plugins_gate_pi_s_tools_and_ask_through_pi_s_ui_in(peer: &Pi) {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    install(&sandbox, &protected_paths_plugin(&sandbox.lib()));
    install(&sandbox, &rust_plugin("permission-gate"));
    install(
        &sandbox,
        &c_example_plugin(&sandbox.lib(), "confirm-command", "confirm_command"),
    );
    let mut pi = pi_rpc(peer, &sandbox, &["--no-session"]);

    // permission-gate asks with pi's select dialog; "No" blocks with its reason.
    pi.send(&json!({"id": "1", "type": "prompt", "message": "wipe the build"}));
    let select = pi
        .until(|l| l["type"] == "extension_ui_request" && l["method"] == "select")
        .1;
    assert!(
        select["title"].as_str().unwrap().contains("rm -rf build"),
        "{select}"
    );
    assert_eq!(select["options"], json!(["Yes", "No"]));
    pi.send(&json!({"type": "extension_ui_response", "id": select["id"], "value": "No"}));
    let (lines, _) = pi.until(|l| l["type"] == "agent_end");
    let end = tool_end(&lines);
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(result_text(end), "Blocked by user");

    // protected-paths (C) blocks a write to .env; the file is never written.
    let lines = run(&mut pi, "2", "write the secret");
    let end = tool_end(&lines);
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(result_text(end), "Path \".env\" is protected");
    assert!(!sandbox.project().join(".env").exists());

    // A harmless command runs: nothing blocks what the plugins allow.
    let lines = run(&mut pi, "3", "say hello");
    let end = tool_end(&lines);
    assert_eq!(end["isError"], false, "{end}");
    assert!(result_text(end).contains("hello"), "{end}");

    // A native command registered in pi, its confirm dialog round-tripping through pi's RPC UI.
    pi.send(&json!({"id": "4", "type": "prompt", "message": "/deploy staging"}));
    let confirm = pi
        .until(|l| l["type"] == "extension_ui_request" && l["method"] == "confirm")
        .1;
    assert_eq!(confirm["title"], "Deploy?");
    assert_eq!(confirm["message"], "Deploy to staging?");
    pi.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": true}));
    let notify = pi
        .until(|l| l["type"] == "extension_ui_request" && l["method"] == "notify")
        .1;
    assert_eq!(notify["message"], "Deploying to staging");
    assert_eq!(notify["notifyType"], "info");

    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

/// A native `tool_call` handler's rewritten input reaches pi's own `bash`: the bridge mutates
/// pi's `event.input` in place, as a pi extension does (spawn-hook: `CUSTOM_VAR=1`, `pnpm`).
#[test]
fn a_native_plugin_rewrites_the_input_of_pi_s_bash() {
    a_native_plugin_rewrites_the_input_of_pi_s_bash_in(&pi16());
}

fn a_native_plugin_rewrites_the_input_of_pi_s_bash_in(peer: &Pi) {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    install(
        &sandbox,
        &c_example_plugin(&sandbox.lib(), "spawn-hook", "spawn_hook"),
    );
    let mut pi = pi_rpc(peer, &sandbox, &["--no-session"]);
    let lines = run(&mut pi, "1", "check npm");
    let start = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_start")
        .expect("tool_execution_start");
    // pi shows the model's arguments; the command that ran is the rewritten one.
    assert_eq!(
        start["args"]["command"], "npm --version; echo var=$CUSTOM_VAR",
        "{start}"
    );
    let end = tool_end(&lines);
    let text = result_text(end);
    assert!(text.contains("var=1"), "{end}");
    assert!(text.contains("pnpm"), "pnpm ran, not npm: {end}");
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

#[test]
fn the_workflow_plugin_steers_pi_s_session() {
    the_workflow_plugin_steers_pi_s_session_in(&pi16());
}

fn the_workflow_plugin_steers_pi_s_session_in(peer: &Pi) {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    install_examples(&sandbox);
    install(&sandbox, &rust_plugin("workflow"));
    let mut pi = pi_rpc(peer, &sandbox, &["--no-session"]);

    // /workflow starts it: the status reaches pi's setStatus, the first phase (planning,
    // whitelist read/grep/find/ls) blocks the model's bash call with the workflow's reason.
    pi.send(&json!({"id": "w", "type": "prompt", "message": "/workflow feature add a button"}));
    let (lines, _) = pi.until(|l| l["type"] == "agent_end");
    let status = lines
        .iter()
        .find(|l| {
            l["type"] == "extension_ui_request"
                && l["method"] == "setStatus"
                && l["statusKey"] == "workflow"
                && l["statusText"].is_string()
        })
        .unwrap_or_else(|| panic!("no workflow status in {lines:#?}"));
    assert!(
        status["statusText"].as_str().unwrap().contains("Planning"),
        "{status}"
    );
    let end = tool_end(&lines);
    assert_eq!(end["toolName"], "bash");
    assert_eq!(end["isError"], true, "{end}");
    assert!(
        result_text(end)
            .starts_with("[workflow] The tool \"bash\" is blocked during the Planning phase."),
        "{end}"
    );
    // Its hidden workflow:context message (from before_agent_start) reached the model.
    let first = server.requests().first().cloned().unwrap();
    assert!(
        user_texts(&first)
            .iter()
            .any(|t| t.contains("Read the code that add a button touches")),
        "{first}"
    );
    // The workflow's tool is registered in pi for the model.
    let request = server.requests().last().cloned().unwrap();
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"workflow_step"), "{tools:?}");
    pi.send(&json!({"id": "c", "type": "prompt", "message": "/cancel-workflow"}));
    pi.until(|l| {
        l["type"] == "extension_ui_request"
            && l["method"] == "setStatus"
            && l["statusKey"] == "workflow"
    });
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

#[test]
fn a_native_segfault_is_reported_fails_closed_and_is_restarted_while_pi_runs() {
    a_native_segfault_is_reported_fails_closed_and_is_restarted_while_pi_runs_in(&pi16());
}

/// The same with pi 0.73.1.
#[test]
fn a_native_segfault_is_reported_fails_closed_and_is_restarted_while_pi_runs_pi_0_73() {
    a_native_segfault_is_reported_fails_closed_and_is_restarted_while_pi_runs_in(&pi073());
}

fn a_native_segfault_is_reported_fails_closed_and_is_restarted_while_pi_runs_in(peer: &Pi) {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    install(&sandbox, &c_fixture(&sandbox.lib(), "segv_on_crash", &[]));
    install(&sandbox, &protected_paths_plugin(&sandbox.lib()));
    let session = sandbox.root().join("session.jsonl");
    let mut pi = pi_rpc(peer, &sandbox, &["--session", session.to_str().unwrap()]);

    let lines = run(&mut pi, "1", "crash now");
    let end = tool_end(&lines);
    assert_eq!(end["isError"], true, "{end}");
    let reason = result_text(end);
    assert!(
        reason.contains("crashed (SIGSEGV) while handling tool_call"),
        "{reason}"
    );
    let report = lines
        .iter()
        .find(|l| l["method"] == "notify" && l["notifyType"] == "error")
        .unwrap_or_else(|| panic!("no crash report in {lines:#?}"));
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("serve crashed (SIGSEGV) while handling tool_call"),
        "{report}"
    );
    // The restarted plugins get session_start (reason "reload") and work again.
    let restarted = pi
        .until(|l| l["method"] == "notify" && l["message"] == "started reload")
        .1;
    assert_eq!(restarted["notifyType"], "info");
    pi.until(|l| l["method"] == "notify" && l["message"] == "pi-hooks: native plugins restarted");
    let lines = run(&mut pi, "2", "say hello");
    assert_eq!(tool_end(&lines)["isError"], false);
    let lines = run(&mut pi, "3", "write the secret");
    assert_eq!(result_text(tool_end(&lines)), "Path \".env\" is protected");

    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
    // The session file is intact: every line is JSON, the three prompts are in it.
    let text = std::fs::read_to_string(&session).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let prompts = entries
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .count();
    assert_eq!(prompts, 3, "{text}");
}

/// A plugin with `/ver` (notifies `version VERSION`), `/native-reload` (context->reload) and
/// a `session_start` handler that notifies `started <reason> VERSION`.
const VERSIONED: &str = r#"
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus ver(void *ud, PiStr args, PiContext *ctx) {
    (void)ud; (void)args;
    return host->ui->notify(ctx, pi_str("version " VERSION), PI_NOTIFY_INFO);
}

static PiStatus reload(void *ud, PiStr args, PiContext *ctx) {
    (void)ud; (void)args;
    return host->context->reload(ctx);
}

static PiStatus on_start(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiStr reason = {0};
    char text[64] = "started ";
    (void)ud; (void)result;
    host->values->as_str(host->values->get(event, pi_str("reason")), &reason);
    strncat(text, reason.ptr, reason.len < 20 ? reason.len : 20);
    strcat(text, " " VERSION);
    return host->ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def;
    host = h;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("ver");
    def.handler = ver;
    host->registry->register_command(plugin, &def);
    def.name = pi_str("native-reload");
    def.handler = reload;
    host->registry->register_command(plugin, &def);
    return host->registry->on(plugin, pi_str("session_start"), on_start, NULL);
}

PI_HOOKS_PLUGIN("versioned", VERSION, "says its version", init, NULL);
"#;

#[test]
fn pi_s_reload_loads_a_rebuilt_native_plugin() {
    pi_s_reload_loads_a_rebuilt_native_plugin_in(&pi16());
}

fn pi_s_reload_loads_a_rebuilt_native_plugin_in(peer: &Pi) {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let hooks = sandbox.agent_dir().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let build = |version: &str| {
        let built = compile_c_text(
            &sandbox.lib(),
            "versioned",
            VERSIONED,
            &[&format!("-DVERSION=\"{version}\"")],
        );
        // Renamed over the installed file, as a linker does.
        std::fs::rename(built, hooks.join("libversioned.so")).unwrap();
    };
    build("1.0.0");
    let mut pi = pi_rpc(peer, &sandbox, &["--no-session"]);
    pi.until(|l| l["method"] == "notify" && l["message"] == "started startup 1.0.0");
    let version = |pi: &mut RpcClient| {
        pi.send(&json!({"id": "v", "type": "prompt", "message": "/ver"}));
        let notify = pi.until(|l| {
            l["method"] == "notify" && l["message"].as_str().unwrap_or("").starts_with("version ")
        });
        notify.1["message"].as_str().unwrap().to_owned()
    };
    assert_eq!(version(&mut pi), "version 1.0.0");
    build("2.0.0");
    assert_eq!(version(&mut pi), "version 1.0.0", "no reload yet");
    // The plugin's own reload goes through pi's ctx.reload(): pi re-creates its extensions,
    // the bridge starts a new serve, which loads the new build.
    pi.send(&json!({"id": "r", "type": "prompt", "message": "/native-reload"}));
    let (lines, response) = pi.until(|l| l["type"] == "response" && l["id"] == "r");
    assert_eq!(response["success"], true, "{response}");
    // The new instance's session_start (reason "reload") says which build runs now; pi's
    // reload may finish after the command's response.
    let started = |l: &Value| l["method"] == "notify" && l["message"] == "started reload 2.0.0";
    if !lines.iter().any(started) {
        pi.until(started);
    }
    assert_eq!(version(&mut pi), "version 2.0.0");
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

#[test]
fn bridge_install_writes_the_extension_and_says_where() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["bridge", "install", "--project"]);
    assert!(output.status.success(), "{output:?}");
    let folder = sandbox.project().join(".pi/extensions/pi-hooks-bridge");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with(&format!(
            "Installed the pi bridge in {}\n",
            folder.display()
        )),
        "{stdout}"
    );
    for file in [
        "index.ts",
        "serve-client.ts",
        "supervisor.ts",
        "events.ts",
        "client-requests.ts",
        "platform-binary.cjs",
        "README.md",
    ] {
        let installed = std::fs::read_to_string(folder.join(file)).unwrap();
        let source = std::fs::read_to_string(
            pi_hooks_tests::workspace_root()
                .join("plugins/pi-bridge")
                .join(file),
        )
        .unwrap();
        assert_eq!(installed, source, "{file} is the committed one");
    }
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("pi-hooks.json")).unwrap())
            .unwrap();
    assert_eq!(
        config["bin"],
        json!(pi_hooks_tests::pi_hooks_bin().display().to_string())
    );
    // Installing again updates in place.
    assert!(
        sandbox
            .run(&["bridge", "install", "--project"])
            .status
            .success()
    );
}

#[test]
fn bridge_install_warns_about_the_hooks_folders_pi_stops_at() {
    let sandbox = Sandbox::new();
    let agent = sandbox.agent_dir();
    // No hooks folder: no warning, and the plugins' place named is extensions/.
    let output = sandbox.run(&["bridge", "install"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "native plugins: put them in {}/ (every project)",
            agent.join("extensions").display()
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("/hooks"), "{stdout}");

    // A global hooks/ with a plugin and an empty project .pi/hooks/: one warning each, with
    // the commands that fix it.
    let plugin = protected_paths_plugin(&sandbox.lib());
    let hooks = agent.join("hooks");
    sandbox.install(&plugin, &hooks, "libprotected_paths.so");
    let project_hooks = sandbox.project().join(".pi/hooks");
    std::fs::create_dir_all(&project_hooks).unwrap();
    let output = sandbox.run(&["bridge", "install"]);
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    let extensions = agent.join("extensions");
    assert!(
        lines[0].starts_with(&format!(
            "pi-hooks: warning: {} exists, and while it does pi stops at start-up in its interactive mode (\"Hooks have been renamed to extensions.",
            hooks.display()
        )),
        "{stderr}"
    );
    assert!(
        lines[0].contains(&format!(
            "move what it holds into {}/ (pi-hooks and the bridge read native plugins there",
            extensions.display()
        )),
        "{stderr}"
    );
    let fix = format!(
        "  mkdir -p {ext} && mv {hooks}/* {ext}/ && rmdir {hooks}",
        ext = extensions.display(),
        hooks = hooks.display()
    );
    assert_eq!(lines[1], fix);
    assert!(
        lines[2].starts_with(&format!(
            "pi-hooks: warning: {} exists",
            project_hooks.display()
        )) && lines[2].ends_with(&format!("it is empty: rmdir {}", project_hooks.display())),
        "{stderr}"
    );

    // The advice, followed: no warning any more, and the plugin loads from extensions/.
    let moved = std::process::Command::new("sh")
        .args(["-c", fix.trim()])
        .status()
        .unwrap();
    assert!(moved.success());
    std::fs::remove_dir(&project_hooks).unwrap();
    let output = sandbox.run(&["bridge", "install"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    let report = sandbox.list_json(&[]);
    let plugin = &report["plugins"][0];
    assert_eq!(plugin["name"], "protected-paths", "{report}");
    assert_eq!(
        plugin["path"],
        json!(
            extensions
                .join("libprotected_paths.so")
                .display()
                .to_string()
        )
    );
}

/// pi's own `sourceInfo` for an extension in each kind of place (the shapes pi-hooks gives its
/// plugins in `get_commands`, tests/tests/pi_rpc_client.rs): auto-discovered in the agent
/// directory, listed in settings, and named with `-e`.
#[test]
fn pi_s_source_info_for_each_kind_of_place() {
    pi_s_source_info_for_each_kind_of_place_in(&pi16());
}

fn pi_s_source_info_for_each_kind_of_place_in(peer: &Pi) {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let extension = |dir: &Path, name: &str| {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("{name}.ts"));
        std::fs::write(
            &path,
            format!(
                "export default function (pi: any) {{ pi.registerCommand(\"{name}\", {{ description: \"d\", handler: async () => {{}} }}); }}\n"
            ),
        )
        .unwrap();
        path
    };
    let global = extension(&extensions(&sandbox), "glob");
    let listed = extension(&sandbox.root().join("listed"), "listed");
    let cli = extension(&sandbox.root().join("cli"), "cli");
    let settings = sandbox.agent_dir().join("settings.json");
    let mut value: Value = std::fs::read_to_string(&settings)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({}));
    value["extensions"] = json!([listed]);
    std::fs::write(&settings, value.to_string()).unwrap();
    let mut pi = pi_rpc(
        peer,
        &sandbox,
        &["--no-session", "-e", cli.to_str().unwrap()],
    );
    pi.send(&json!({"id": "c", "type": "get_commands"}));
    let response = pi.response("c");
    let info = |name: &str| command_source_info(&response, name);
    let text = |path: &Path| path.to_str().unwrap().to_owned();
    assert_eq!(
        info("glob"),
        json!({"path": text(&global), "source": "auto", "scope": "user", "origin": "top-level", "baseDir": text(&sandbox.agent_dir())})
    );
    assert_eq!(
        info("listed"),
        json!({"path": text(&listed), "source": "local", "scope": "user", "origin": "top-level"})
    );
    assert_eq!(
        info("cli"),
        json!({"path": text(&cli), "source": "cli", "scope": "temporary", "origin": "top-level"})
    );
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

/// `pi-hooks bridge install` where `pi install npm:pi-hooks` already gave pi a bridge says so
/// (pi runs one bridge, the first it loads), with the two ways to keep one.
#[test]
fn bridge_install_says_when_pi_already_has_the_npm_bridge() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        serde_json::json!({"packages": ["npm:pi-hooks"]}).to_string(),
    )
    .unwrap();
    let output = sandbox.run(&["bridge", "install"]);
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("pi-hooks: warning: pi also loads the bridge of the pi-hooks npm package (npm:pi-hooks in ")
            && stderr.contains("`pi remove npm:pi-hooks`, or delete the folder ")
            && stderr.contains("pi-hooks-bridge"),
        "{stderr}"
    );
    // Without that entry, no such warning.
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        serde_json::json!({"packages": []}).to_string(),
    )
    .unwrap();
    let output = sandbox.run(&["bridge", "install"]);
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

/// The command lines of the `pi-hooks serve` processes under `pid` (its descendants).
fn serve_command_lines(pid: u32) -> Vec<(u32, Vec<String>)> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(pid) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                queue.push(child);
                let Ok(cmdline) = std::fs::read(format!("/proc/{child}/cmdline")) else {
                    continue;
                };
                let args: Vec<String> = cmdline
                    .split(|b| *b == 0)
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                if args.get(1).map(String::as_str) == Some("serve") {
                    found.push((child, args));
                }
            }
        }
    }
    found
}

/// The one `pi-hooks serve` the bridge runs under pi's process `pid`.
fn the_serve(pid: u32) -> (u32, Vec<String>) {
    let mut serves = serve_command_lines(pid);
    assert_eq!(serves.len(), 1, "not one serve under pi: {serves:?}");
    serves.pop().unwrap()
}

/// pi 1.6 with the bridge, `PI_HOOKS_BRIDGE_TRANSPORT` set to `forced` (or unset), and
/// protected-paths: the write of .env is blocked and a harmless command runs; serve's command
/// line says it speaks the `expected` transport.
fn the_gate_holds_over(forced: Option<&str>, expected: &str) {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    install(&sandbox, &protected_paths_plugin(&sandbox.lib()));
    let env: Vec<(String, String)> = forced
        .map(|t| ("PI_HOOKS_BRIDGE_TRANSPORT".to_owned(), t.to_owned()))
        .into_iter()
        .collect();
    let mut pi = pi_rpc_of(&pi16(), &sandbox, &["--no-session"], &env);

    let lines = run(&mut pi, "1", "write the secret");
    assert_eq!(result_text(tool_end(&lines)), "Path \".env\" is protected");
    assert!(!sandbox.project().join(".env").exists());
    let lines = run(&mut pi, "2", "say hello");
    let end = tool_end(&lines);
    assert_eq!(end["isError"], false, "{end}");
    assert!(result_text(end).contains("hello"), "{end}");

    let (_, args) = the_serve(pi.pid());
    let ring = args.windows(2).any(|w| w[0] == "--ring-fd" && w[1] == "3");
    assert_eq!(ring, expected == "ring", "serve's command line: {args:?}");
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

/// The pipe transport, forced, still gates pi's tools.
#[test]
fn the_bridge_gates_over_the_pipe_when_forced() {
    the_gate_holds_over(Some("pipe"), "pipe");
}

/// The ring transport (the addon built beside the binary), forced, is the one serve speaks.
#[test]
fn the_bridge_gates_over_the_ring_when_forced() {
    the_gate_holds_over(Some("ring"), "ring");
}

/// With the addon beside the binary (the tests' build makes it), the ring is the default.
#[test]
fn the_bridge_uses_the_ring_by_default() {
    the_gate_holds_over(None, "ring");
}

/// A transport that is forced and cannot be had is said: the bridge does not load, and pi's
/// stderr names the variable and the addon.
#[test]
fn a_forced_ring_without_its_addon_is_said() {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    install(&sandbox, &protected_paths_plugin(&sandbox.lib()));
    let missing = sandbox.root().join("missing.so");
    let mut command = pi_command_of(&pi16(), &sandbox);
    command
        .args(RPC_WITH_FAKE_MODEL)
        .arg("--no-session")
        .env("PI_HOOKS_BRIDGE_TRANSPORT", "ring")
        .env("PI_HOOKS_BRIDGE_RING_ADDON", &missing);
    let stderr = sandbox.root().join("pi-stderr.txt");
    let pi = RpcClient::start_with_stderr(
        command,
        std::process::Stdio::from(std::fs::File::create(&stderr).unwrap()),
    );
    // pi 1.6 in RPC mode stops at an extension that failed to load, saying why on stderr.
    assert!(serve_command_lines(pi.pid()).is_empty());
    let (status, _) = pi.close();
    let said = std::fs::read_to_string(&stderr).unwrap();
    eprintln!("pi exited ({status}); its stderr:\n{said}");
    assert!(
        said.contains("PI_HOOKS_BRIDGE_TRANSPORT=ring: cannot load the ring addon")
            && said.contains("missing.so"),
        "{said}"
    );
}

/// Serve killed mid-session over the ring: the bridge reports it, fails closed meanwhile, and
/// its supervisor restarts serve, which gates again over the ring.
#[test]
fn serve_killed_over_the_ring_is_restarted() {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    install(&sandbox, &protected_paths_plugin(&sandbox.lib()));
    let env = [("PI_HOOKS_BRIDGE_TRANSPORT".to_owned(), "ring".to_owned())];
    let mut pi = pi_rpc_of(&pi16(), &sandbox, &["--no-session"], &env);

    let lines = run(&mut pi, "1", "write the secret");
    assert_eq!(result_text(tool_end(&lines)), "Path \".env\" is protected");
    let (serve, _) = the_serve(pi.pid());
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &serve.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let report = pi
        .until(|l| l["method"] == "notify" && l["notifyType"] == "error")
        .1;
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("serve crashed (SIGKILL)"),
        "{report}"
    );
    pi.until(|l| l["method"] == "notify" && l["message"] == "pi-hooks: native plugins restarted");
    let (again, args) = the_serve(pi.pid());
    assert_ne!(again, serve);
    assert!(args.iter().any(|a| a == "--ring-fd"), "{args:?}");
    let lines = run(&mut pi, "2", "write the secret");
    assert_eq!(result_text(tool_end(&lines)), "Path \".env\" is protected");
    let lines = run(&mut pi, "3", "say hello");
    assert_eq!(tool_end(&lines)["isError"], false);
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

/// A request that comes while another is still being handled (a `steer` of 600 KB, more than
/// the ring holds, whose
/// `input` event pi sends while a plugin's `tool_call` handler takes 1.5 s) waits in the
/// bridge and goes once the first is answered: it is never written into a ring nobody reads
/// (serve reads the next request only once its plugin returns), which would hold pi's node
/// until the send gave up and ended serve.
#[test]
fn a_large_request_behind_a_slow_one_waits_in_the_bridge_over_the_ring() {
    use pi_hooks_tests::{behave_env_var, behave_plugin, read_behave_log, wait_behave_log};
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    install(&sandbox, &behave_plugin(&sandbox.lib(), "slow"));
    let config = json!({"handlers": [
        {"event": "tool_call", "sleep_ms": 1500},
        {"event": "input"}
    ]});
    let env = [
        ("PI_HOOKS_BRIDGE_TRANSPORT".to_owned(), "ring".to_owned()),
        (behave_env_var("slow"), config.to_string()),
        (
            "BEHAVE_LOG".to_owned(),
            sandbox.behave_log().display().to_string(),
        ),
    ];
    let mut pi = pi_rpc_of(&pi16(), &sandbox, &["--no-session"], &env);
    pi.send(&json!({"id": "1", "type": "prompt", "message": "say hello"}));
    wait_behave_log(&sandbox.behave_log(), "tool_call at the plugin", |log| {
        log.iter().any(|l| l.tag == "tool_call")
    });
    let (serve, _) = the_serve(pi.pid());
    let big = "x".repeat(600_000);
    pi.send(&json!({"id": "s", "type": "steer", "message": big}));
    // The steer is answered once its `input` event is (after the slow `tool_call`): before
    // or after the run settles, as the timing falls.
    let mut lines = Vec::new();
    while !(lines.iter().any(|l: &Value| l["id"] == "s")
        && lines.iter().any(|l: &Value| l["type"] == "agent_settled"))
    {
        lines.push(pi.next_line());
    }
    let steered = lines.iter().find(|l| l["id"] == "s").unwrap();
    assert_eq!(steered["success"], true, "{steered}");
    let end = tool_end(&lines);
    assert_eq!(end["isError"], false, "the gated call ran: {end}");
    assert!(
        !lines
            .iter()
            .any(|l| l["method"] == "notify" && l["notifyType"] == "error"),
        "no error reported: {lines:#?}"
    );
    assert_eq!(the_serve(pi.pid()).0, serve, "serve was not restarted");
    let inputs: Vec<usize> = read_behave_log(&sandbox.behave_log())
        .iter()
        .filter(|l| l.tag == "input")
        .map(|l| l.value["text"].as_str().map_or(0, str::len))
        .collect();
    assert!(
        inputs.contains(&600_000),
        "the input event came whole: {inputs:?}"
    );
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}
