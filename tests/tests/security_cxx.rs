//! Security suite: a C++ exception a plugin lets escape is stopped at the boundary by the
//! host's exception barrier and reported as that call's error with the plugin's name, instead
//! of unwinding into the host and aborting it.

use std::path::{Path, PathBuf};

use pi_hooks_tests::{Sandbox, json_lines};
use serde_json::{Value, json};

/// A C++ plugin, without `pi_hooks::guard`, that throws from the places `THROW_IN` names
/// (`init`, `tool_call`, `input`, `tool`): a std::exception, or an int for `input`.
const THROWER: &str = r#"
#include "pi_hooks.h"
#include <cstdlib>
#include <cstring>
#include <stdexcept>

static const PiHostApi *host;

static bool throws_in(const char *what) {
    const char *where = std::getenv("THROW_IN");
    return where != nullptr && std::strstr(where, what) != nullptr;
}

extern "C" PiStatus on_tool_call(void *, const PiValue *, PiContext *, PiResult *) {
    if (throws_in("tool_call")) throw std::runtime_error("tool_call went wrong");
    return PI_OK;
}

extern "C" PiStatus on_input(void *, const PiValue *, PiContext *, PiResult *) {
    if (throws_in("input")) throw 42;
    return PI_OK;
}

extern "C" PiStatus echo(void *, PiStr, const PiValue *, PiContext *, PiResult *result) {
    if (throws_in("tool")) throw std::logic_error("echo tool failed");
    return host->results->add_text(result, pi_str("echoed"));
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    if (throws_in("init")) throw std::runtime_error("init refused");
    PiToolDef tool;
    std::memset(&tool, 0, sizeof tool);
    tool.struct_size = sizeof tool;
    tool.name = pi_str("echo");
    tool.description = pi_str("echoes");
    tool.execute = echo;
    PiStatus status = host->registry->register_tool(plugin, &tool);
    if (status == PI_OK) status = host->registry->on(plugin, pi_str("tool_call"), on_tool_call, nullptr);
    if (status == PI_OK) status = host->registry->on(plugin, pi_str("input"), on_input, nullptr);
    return status;
}

PI_HOOKS_PLUGIN("thrower", "1.0.0", "throws C++ exceptions", init, NULL);
"#;

fn compile_thrower(dir: &Path) -> PathBuf {
    pi_hooks_tests::compile_cpp_text(dir, "libthrower", THROWER)
}

fn run(sandbox: &Sandbox, library: &Path, throw_in: &str, script: &Value) -> std::process::Output {
    let script = sandbox.script(script);
    sandbox
        .command(&["run", "--no-session", "--mode", "json", "--script"])
        .arg(script)
        .arg("--hook")
        .arg(library)
        .arg("go")
        .env("THROW_IN", throw_in)
        .output()
        .expect("run pi-hooks")
}

fn tool_results(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .cloned()
        .collect()
}

#[test]
fn a_throwing_tool_call_handler_blocks_its_tool_and_names_the_plugin() {
    let sandbox = Sandbox::new();
    let library = compile_thrower(&sandbox.lib());
    let script = json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo ran > ran.txt"}}]},
        {"text": "done"}
    ]});
    let out = run(&sandbox, &library, "tool_call", &script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the host must survive: {stderr}");
    assert!(!stderr.contains("foreign exception"), "{stderr}");
    let lines = json_lines(&out);
    let ends = tool_results(&lines);
    assert_eq!(ends.len(), 1, "{lines:?}");
    assert_eq!(ends[0]["isError"], true);
    let text = ends[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("thrower") && text.contains("threw a C++ exception: tool_call went wrong"),
        "{text}"
    );
    assert!(
        !sandbox.project().join("ran.txt").exists(),
        "the blocked tool ran"
    );
    assert!(lines.iter().any(|l| l["type"] == "agent_end"));
}

#[test]
fn a_throw_in_a_notify_event_or_a_tool_is_that_calls_error_and_the_run_goes_on() {
    let sandbox = Sandbox::new();
    let library = compile_thrower(&sandbox.lib());
    let script = json!({"turns": [
        {"toolCalls": [{"name": "echo", "arguments": {}}]},
        {"text": "done"}
    ]});
    let out = run(&sandbox, &library, "input,tool", &script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the host must survive: {stderr}");
    let lines = json_lines(&out);
    let errors: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "extension_error")
        .collect();
    assert!(
        errors.iter().any(|e| e["event"] == "input"
            && e["extensionPath"]
                .as_str()
                .unwrap()
                .ends_with("libthrower.so")
            && e["error"]
                .as_str()
                .unwrap()
                .contains("threw a C++ exception: an exception that is not a std::exception")),
        "{errors:?}"
    );
    let ends = tool_results(&lines);
    assert_eq!(ends.len(), 1, "{lines:?}");
    assert_eq!(ends[0]["isError"], true);
    assert!(
        ends[0]["result"]["content"]
            .to_string()
            .contains("echo tool failed"),
        "{:?}",
        ends[0]
    );
    assert!(lines.iter().any(|l| l["type"] == "agent_end"));
}

#[test]
fn a_throwing_init_is_a_load_failure_with_the_exception_text() {
    let sandbox = Sandbox::new();
    let library = compile_thrower(&sandbox.lib());
    let out = sandbox
        .command(&["list", "--json", "--hook"])
        .arg(&library)
        .env("THROW_IN", "init")
        .output()
        .unwrap();
    // Exit 1 (a plugin named with --hook did not load), never a crash.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["plugins"], json!([]));
    let error = report["errors"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("threw a C++ exception: init refused"),
        "{error}"
    );
}
