//! `pi-hooks demo-model`: the scripted demo served as a local OpenAI-compatible endpoint, so
//! that the demo plays in any OpenAI client with no key and no network.
//!
//! - Our own client (`pi-hooks run --provider ... --base-url ...`) plays it through the
//!   endpoint: permission-gate blocks the `rm -rf`, protected-paths the `.env` write; without
//!   plugins both happen, and the next prompt finds the scratch folder filled again.
//! - The HTTP answers are OpenAI's: one server-sent event per HTTP chunk, the role chunk
//!   first, the usage chunk and `[DONE]` last; whole completions for `stream: false`;
//!   `GET /v1/models`; the printed models.json entry.
//! - docs/pi.md's no-key path in the real pi 1.6.0 (RPC mode, on node 22): `demo-model
//!   --write-models-json`, `bridge install`, the C permission gate and protected-paths in the
//!   agent directory's `extensions/`: pi asks the C plugin's question, and the `rm -rf` is
//!   blocked.
//! - The C permission gate decides as the Rust one on pi's pattern table.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pi_hooks_host::testing::PluginTest;
use pi_hooks_tests::pi_e2e::pi_rpc_with_model;
use pi_hooks_tests::tools::pi16;
use pi_hooks_tests::{
    Sandbox, c_example_plugin, json_lines, output_within, pi_hooks_bin, protected_paths_plugin,
    rust_plugin,
};
use serde_json::{Value, json};

/// Longer than any run here takes.
const LIMIT: Duration = Duration::from_secs(120);

/// A running `pi-hooks demo-model --port 0` in a sandbox (its agent directory, its project as
/// the working directory, its `tmp/` for the scratch folder); stopped with SIGTERM on drop.
struct DemoModel {
    child: Child,
    /// `http://127.0.0.1:<port>/v1`.
    base_url: String,
    /// The announced `${SCRATCH}`.
    scratch: PathBuf,
    /// What it printed on stdout at start.
    announced: String,
}

impl DemoModel {
    fn start(sandbox: &Sandbox, extra: &[&str]) -> DemoModel {
        DemoModel::start_as(sandbox, Command::new(pi_hooks_bin()), extra)
    }

    /// [`DemoModel::start`] through `program` (the binary itself, or the npm launcher).
    fn start_as(sandbox: &Sandbox, mut program: Command, extra: &[&str]) -> DemoModel {
        let tmp = sandbox.root().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mut child = program
            .args(["demo-model", "--port", "0"])
            .args(extra)
            .current_dir(sandbox.project())
            .env("HOME", sandbox.home())
            .env("PI_CODING_AGENT_DIR", sandbox.agent_dir())
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start pi-hooks demo-model");
        let stdout = child.stdout.take().unwrap();
        let (lines, received) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut announced = String::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !announced.contains("Stop with Ctrl+C.") {
            let left = deadline.saturating_duration_since(Instant::now());
            match received.recv_timeout(left) {
                Ok(line) => announced.push_str(&format!("{line}\n")),
                Err(_) => {
                    let _ = child.kill();
                    panic!("demo-model did not announce itself; it printed:\n{announced}")
                }
            }
        }
        let word_after = |marker: &str| {
            let at = announced
                .find(marker)
                .unwrap_or_else(|| panic!("no {marker:?} in:\n{announced}"));
            announced[at + marker.len()..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_owned()
        };
        let base_url = format!("http://{}", word_after(" at http://"));
        let scratch = PathBuf::from(word_after("${SCRATCH} is "));
        DemoModel {
            child,
            base_url,
            scratch,
            announced,
        }
    }

    fn port(&self) -> u16 {
        self.base_url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/v1")
            .parse()
            .unwrap()
    }

    /// Stops it with SIGTERM; its exit status.
    fn stop(&mut self) -> ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("demo-model did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for DemoModel {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.stop();
        }
    }
}

/// The npm package's `pi-hooks` launcher passes a SIGTERM on: `kill <launcher pid>` stops
/// the binary too, which frees the port, and the launcher ends with the binary's status.
#[test]
fn killing_the_npm_launcher_stops_the_binary_and_frees_the_port() {
    let sandbox = Sandbox::new();
    let mut launcher = Command::new("node");
    launcher
        .arg(pi_hooks_tests::workspace_root().join("plugins/pi-bridge/pi-hooks-launcher.cjs"))
        .env("PI_HOOKS_BIN", pi_hooks_bin());
    let mut server = DemoModel::start_as(&sandbox, launcher, &[]);
    let port = server.port();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_ok(), "serving");
    let status = server.stop();
    // The binary ends on SIGTERM with 143 (128 + 15), and the launcher with its status.
    assert_eq!(status.code(), Some(143), "the binary's status: {status:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "port {port} still served: the binary outlived its launcher"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `tool_execution_end` events among `events`, in order.
fn tool_ends(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect()
}

fn result_text(end: &Value) -> &str {
    end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// `pi-hooks run --mode json` against the endpoint, with `plugins` (or none at all).
fn run_demo(sandbox: &Sandbox, server: &DemoModel, plugins: &[&Path]) -> Vec<Value> {
    let mut command = sandbox.command(&[
        "run",
        "--mode",
        "json",
        "--no-session",
        "--provider",
        "pi-hooks-demo",
        "--base-url",
        &server.base_url,
        "--model",
        "demo",
    ]);
    if plugins.is_empty() {
        command.arg("--no-hooks");
    }
    for plugin in plugins {
        command.arg("--hook").arg(plugin);
    }
    command.arg("Run the demo.");
    let output = output_within(command, LIMIT);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_lines(&output)
}

#[test]
fn pi_hooks_run_plays_the_endpoint_and_permission_gate_blocks_rm_rf() {
    let sandbox = Sandbox::new();
    let mut server = DemoModel::start(&sandbox, &[]);
    let scratch = server.scratch.clone();
    assert!(scratch.join("build/output.txt").is_file(), "{scratch:?}");
    let gate = rust_plugin("permission-gate");
    let protected = protected_paths_plugin(&sandbox.lib());

    let events = run_demo(&sandbox, &server, &[&gate, &protected]);
    let ends = tool_ends(&events);
    assert_eq!(ends.len(), 3, "{events:#?}");
    assert_eq!(ends[0]["isError"], false, "{}", ends[0]);
    assert_eq!(result_text(ends[0]), "hello from pi-hooks\nbuild\n");
    assert_eq!(ends[1]["isError"], true, "{}", ends[1]);
    assert_eq!(
        result_text(ends[1]),
        format!(
            "Blocked dangerous command (no UI to ask): rm -rf {}/build",
            scratch.display()
        )
    );
    assert_eq!(
        result_text(ends[2]),
        format!("Path \"{}/.env\" is protected", scratch.display())
    );
    assert!(scratch.join("build/output.txt").is_file());
    assert!(!scratch.join(".env").exists());
    let last = events.iter().rfind(|e| e["type"] == "message_end").unwrap();
    assert_eq!(
        last["message"]["content"][0]["text"],
        "Demo finished: one look around, one rm -rf and one write to .env were attempted."
    );

    // Without plugins nothing stops the model: the block above was the plugin's.
    let events = run_demo(&sandbox, &server, &[]);
    let ends = tool_ends(&events);
    assert_eq!(ends[1]["isError"], false, "{}", ends[1]);
    assert!(!scratch.join("build").exists());
    assert!(scratch.join(".env").is_file());
    // The next prompt finds the build folder again.
    let events = run_demo(&sandbox, &server, &[&gate]);
    assert_eq!(
        result_text(tool_ends(&events)[0]),
        "hello from pi-hooks\nbuild\n"
    );

    // SIGTERM stops it and removes the scratch folder.
    let status = server.stop();
    assert_eq!(status.code(), Some(128 + 15), "{status}");
    assert!(!scratch.exists(), "{scratch:?} is left");
}

/// Sends `request` (a whole HTTP request) to the server and reads the answer to its end.
fn exchange(server: &DemoModel, request: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

fn post(path: &str, body: &Value) -> String {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The HTTP chunks of a chunked body, in order (the last, empty one left out).
fn chunks(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let (size, after) = rest.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size, 16).expect("a hex chunk size");
        if size == 0 {
            assert_eq!(after, "\r\n", "nothing after the last chunk");
            return out;
        }
        out.push(&after[..size]);
        assert_eq!(&after[size..size + 2], "\r\n");
        rest = &after[size + 2..];
    }
}

#[test]
fn the_endpoint_answers_as_openai_does() {
    let sandbox = Sandbox::new();
    let server = DemoModel::start(&sandbox, &[]);
    let messages = json!([
        {"role": "system", "content": "You are pi."},
        {"role": "user", "content": "Run the demo."}
    ]);

    // Streamed: one `data:` event per HTTP chunk; role chunk first, finish, usage, [DONE].
    let answer = exchange(
        &server,
        &post(
            "/v1/chat/completions",
            &json!({"model": "demo", "messages": messages, "stream": true,
                "stream_options": {"include_usage": true}}),
        ),
    );
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("Content-Type: text/event-stream"), "{head}");
    assert!(head.contains("Transfer-Encoding: chunked"), "{head}");
    let events: Vec<&str> = chunks(body)
        .into_iter()
        .map(|c| {
            c.strip_prefix("data: ")
                .and_then(|c| c.strip_suffix("\n\n"))
                .unwrap_or_else(|| panic!("not one event: {c:?}"))
        })
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let parsed: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert!(
        parsed
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["model"] == "demo")
    );
    assert_eq!(parsed[0]["choices"][0]["delta"]["role"], "assistant");
    let n = parsed.len();
    assert_eq!(parsed[n - 2]["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(parsed[n - 1]["choices"], json!([]));
    assert!(parsed[n - 1]["usage"]["total_tokens"].as_u64().unwrap() > 0);
    let call = parsed
        .iter()
        .find_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["name"].as_str());
    assert_eq!(call, Some("bash"));

    // Whole: a chat.completion with the next turn (the rm -rf), after the first's result.
    let mut later = messages.as_array().unwrap().clone();
    later.push(
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1_0_0",
        "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}),
    );
    later.push(json!({"role": "tool", "tool_call_id": "call_1_0_0", "content": "build"}));
    let answer = exchange(
        &server,
        &post(
            "/v1/chat/completions",
            &json!({"model": "demo", "messages": later}),
        ),
    );
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains("Content-Type: application/json"), "{head}");
    let completion: Value = serde_json::from_str(body).unwrap();
    assert_eq!(completion["object"], "chat.completion");
    let call = &completion["choices"][0]["message"]["tool_calls"][0]["function"];
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        arguments["command"],
        format!("rm -rf {}/build", server.scratch.display())
    );

    // A model it does not offer, and the model list.
    let answer = exchange(
        &server,
        &post(
            "/v1/chat/completions",
            &json!({"model": "gpt-4o", "messages": []}),
        ),
    );
    assert!(answer.starts_with("HTTP/1.1 404 "), "{answer}");
    assert!(answer.contains("model_not_found"), "{answer}");
    let answer = exchange(&server, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
    let list: Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(list["data"][0]["id"], "demo");

    // The models.json entry it announced is the one --print-models-json prints for its port.
    let printed = sandbox.run(&[
        "demo-model",
        "--print-models-json",
        "--port",
        &server.port().to_string(),
    ]);
    assert!(printed.status.success(), "{printed:?}");
    let printed: Value = serde_json::from_slice(&printed.stdout).unwrap();
    let provider = &printed["providers"]["pi-hooks-demo"];
    assert_eq!(provider["baseUrl"], json!(server.base_url));
    assert_eq!(provider["api"], "openai-completions");
    assert_eq!(provider["models"][0]["id"], "demo");
    let entry = &server.announced[server.announced.find("{\n").unwrap()..];
    let announced: Value = serde_json::Deserializer::from_str(entry)
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(announced, printed);
}

#[test]
fn the_readme_s_no_key_path_blocks_rm_rf_in_the_real_pi() {
    let sandbox = Sandbox::new();
    // docs/pi.md's commands: the endpoint writing its models.json entry, the bridge, the C
    // plugins copied into the agent directory's extensions/.
    let server = DemoModel::start(&sandbox, &["--write-models-json"]);
    assert!(
        server
            .announced
            .contains("Added the provider pi-hooks-demo to "),
        "{}",
        server.announced
    );
    let install = sandbox.run(&["bridge", "install"]);
    assert!(install.status.success(), "{install:?}");
    assert!(install.stderr.is_empty(), "{install:?}");
    let extensions = sandbox.agent_dir().join("extensions");
    for plugin in [
        c_example_plugin(&sandbox.lib(), "permission-gate-c", "permission_gate"),
        protected_paths_plugin(&sandbox.lib()),
    ] {
        let name = plugin.file_name().unwrap().to_str().unwrap().to_owned();
        sandbox.install(&plugin, &extensions, &name);
    }
    let mut pi = pi_rpc_with_model(
        &pi16(),
        &sandbox,
        "pi-hooks-demo",
        "demo",
        &["--no-session"],
    );

    pi.send(&json!({"id": "1", "type": "prompt", "message": "Run the demo."}));
    let (before, select) =
        pi.until(|l| l["type"] == "extension_ui_request" && l["method"] == "select");
    let rm = format!("rm -rf {}/build", server.scratch.display());
    assert_eq!(
        select["title"],
        format!("\u{26a0}\u{fe0f} Dangerous command:\n\n  {rm}\n\nAllow?")
    );
    assert_eq!(select["options"], json!(["Yes", "No"]));
    pi.send(&json!({"type": "extension_ui_response", "id": select["id"], "value": "No"}));
    let (after, _) = pi.until(|l| l["type"] == "agent_end");
    let lines: Vec<Value> = before.into_iter().chain(after).collect();
    let ends = tool_ends(&lines);
    assert_eq!(ends.len(), 3, "{lines:#?}");
    assert_eq!(result_text(ends[0]), "hello from pi-hooks\nbuild\n");
    assert_eq!(ends[1]["isError"], true, "{}", ends[1]);
    assert_eq!(result_text(ends[1]), "Blocked by user");
    assert_eq!(
        result_text(ends[2]),
        format!("Path \"{}/.env\" is protected", server.scratch.display())
    );
    assert!(server.scratch.join("build/output.txt").is_file());
    assert!(!server.scratch.join(".env").exists());
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}

#[test]
fn the_c_permission_gate_decides_as_the_rust_one() {
    let sandbox = Sandbox::new();
    let c = c_example_plugin(&sandbox.lib(), "permission-gate-c", "permission_gate");
    let rust = rust_plugin("permission-gate");
    let bash = |command: &str| json!({"toolCallId": "t", "toolName": "bash", "input": {"command": command}});
    // Without a UI: blocked at once, the reason naming the command.
    let (c_plain, rust_plain) = (
        PluginTest::load_with(&c, false).unwrap(),
        PluginTest::load_with(&rust, false).unwrap(),
    );
    let mut blocked = 0;
    for command in [
        "rm -rf x",
        "rm -r x",
        "RM  -Rf /",
        "cd a && rm --recursive b",
        "sudo ls",
        "echo; SUDO",
        "chmod 777 f",
        "chown -R u f && x 777",
        "ls -la",
        "rm x",
        "rm -f x",
        "rm-rf x",
        "farm -rf",
        "pseudo x",
        "sudoku",
        "chmod 755 f",
        "777 chmod",
        "xchmod 777",
    ] {
        let decision = c_plain.emit("tool_call", bash(command)).unwrap().decision;
        let expected = rust_plain
            .emit("tool_call", bash(command))
            .unwrap()
            .decision;
        assert_eq!(decision, expected, "{command}");
        blocked += usize::from(decision["block"] == true);
    }
    assert_eq!(blocked, 8);
    // Another tool is not looked at.
    let write =
        json!({"toolCallId": "t", "toolName": "write", "input": {"path": "x", "content": "sudo"}});
    assert_eq!(
        c_plain.emit("tool_call", write).unwrap().decision,
        json!({"block": false})
    );
    // With a UI: asked; "No" blocks, "Yes" allows.
    let asking = PluginTest::load_with(&c, true).unwrap();
    asking.answer_dialogs([json!({"value": "No"}), json!({"value": "Yes"})]);
    let out = asking.emit("tool_call", bash("rm -rf build")).unwrap();
    assert_eq!(
        out.decision,
        json!({"block": true, "reason": "Blocked by user"})
    );
    assert_eq!(out.calls[0]["method"], "select");
    assert_eq!(
        out.calls[0]["title"],
        "\u{26a0}\u{fe0f} Dangerous command:\n\n  rm -rf build\n\nAllow?"
    );
    let out = asking.emit("tool_call", bash("sudo ls")).unwrap();
    assert_eq!(out.decision["block"], false);
}
