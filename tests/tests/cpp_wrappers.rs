//! `include/pi_hooks.hpp`'s lambda API in a real session: a C++17 plugin (compiled with
//! `-std=c++17 -Wall -Wextra -Werror`) registers an event handler, a command and a tool with
//! lambdas, builds values with `OwnedValue`, gives a whole result with `Result::assign`, and
//! throws: each exception becomes that call's error with its `what()` (a `tool_call` that
//! throws blocks its tool); a setup that throws fails the load with its message.

use std::time::Duration;

use pi_hooks_tests::{Sandbox, compile_cpp_text, json_lines, output_within};
use serde_json::{Value, json};

const PLUGIN: &str = r#"
#include <stdexcept>
#include "pi_hooks.hpp"
using namespace pi_hooks;

static void setup(Plugin &pi) {
    pi.on("tool_call", [](Value event, Context &, Result &) {
        if (event.pointer("/input/command").as_string() == "throw")
            throw std::runtime_error("no such luck");
    });
    pi.on("input", [](Value event, Context &, Result &result) {
        auto text = event.get("text").as_string();
        if (text == "plain") result.assign(OwnedValue::of("assigned"));
        if (text == "error") throw Error(PI_ERR_NOT_FOUND, "custom status");
    });
    pi.tool({"echo", "Echo", "Echoes its params", R"({"type":"object"})"},
            [](Value params, Context &ctx, Result &r) {
                auto list = OwnedValue::array().push("a").push(OwnedValue::parse(R"({"x":[1]})"));
                list.push(OwnedValue::null()).push(params.get("n"));
                auto details = OwnedValue::object().set("params", params).set("n", 3);
                details.set("f", 0.25).set("yes", true).set("cwd", !ctx.cwd().empty());
                details.set("list", std::move(list)).set("count", static_cast<int64_t>(list.len()));
                int seen = 0;
                for (Value item : details.get("list")) seen += item ? 1 : 0;
                r.add_text(params.json()).set("details", details).set("seen", seen);
            });
    pi.command("boom", "Throws", [](std::string_view args, Context &) {
        throw std::logic_error("command exploded: " + std::string(args));
    });
}

PI_HOOKS_CPP_PLUGIN("cpp-wrappers", "1.0.0", "The lambda API", setup);
"#;

const FAILING_SETUP: &str = r#"
#include <stdexcept>
#include "pi_hooks.hpp"

static void setup(pi_hooks::Plugin &pi) {
    pi.on("input", [](pi_hooks::Value, pi_hooks::Context &, pi_hooks::Result &) {});
    throw std::runtime_error("setup refused: missing config");
}

PI_HOOKS_CPP_PLUGIN("cpp-failing-setup", "1.0.0", "", setup);
"#;

#[test]
fn lambdas_values_and_exceptions_at_the_boundary() {
    let s = Sandbox::new();
    let plugin = compile_cpp_text(&s.lib(), "libcpp_wrappers", PLUGIN);
    let script = s.script(&json!({"turns": [
        {"toolCalls": [
            {"name": "bash", "arguments": {"command": "throw"}},
            {"name": "echo", "arguments": {"n": 7, "s": "é\"q\""}}
        ]},
        {"text": "done"}
    ]}));
    let mut command = s.command(&["run", "--mode", "json", "--no-session", "--script"]);
    command
        .arg(&script)
        .arg("--hook")
        .arg(&plugin)
        .args(["plain", "error", "/boom now"]);
    let output = output_within(command, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    let events = json_lines(&output);
    let users: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "user")
        .map(|e| &e["message"]["content"][0]["text"])
        .collect();
    assert_eq!(users, [&json!("assigned"), &json!("error")], "{stderr}");
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    let blocked = ends
        .iter()
        .find(|e| e["toolName"] == "bash")
        .expect("the bash call");
    assert_eq!(blocked["isError"], true);
    let reason = blocked["result"]["content"][0]["text"].as_str().unwrap();
    assert!(reason.contains("no such luck"), "{reason}");
    let echo = ends
        .iter()
        .find(|e| e["toolName"] == "echo")
        .expect("the echo call");
    assert_eq!(echo["isError"], false, "{echo}");
    assert_eq!(
        echo["result"]["content"],
        json!([{"type": "text", "text": r#"{"n":7,"s":"é\"q\""}"#}])
    );
    assert_eq!(
        echo["result"]["details"],
        json!({
            "params": {"n": 7, "s": "é\"q\""}, "n": 3, "f": 0.25, "yes": true, "cwd": true,
            "list": ["a", {"x": [1]}, null, 7], "count": 0
        }),
        "a moved-from OwnedValue is empty (count 0)"
    );
    for message in ["custom status", "command exploded: now"] {
        assert!(
            stderr.contains(message),
            "{message:?} reported as the call's error:\n{stderr}"
        );
    }
}

#[test]
fn a_setup_that_throws_fails_the_load_with_its_message() {
    let s = Sandbox::new();
    let plugin = compile_cpp_text(&s.lib(), "libcpp_failing_setup", FAILING_SETUP);
    let output = s.run(&["inspect", "--run-code", plugin.to_str().unwrap()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("setup refused: missing config"), "{text}");
}

const REWRITER: &str = r#"
#include <string>
#include "pi_hooks.hpp"
using namespace pi_hooks;

static void setup(Plugin &pi) {
    pi.on("tool_call", [](Value event, Context &, Result &result) {
        std::string command(event.pointer("/input/command").as_string().value_or(""));
        if (command.rfind("say ", 0) == 0)
            result.rewrite_input(R"({"command":"echo rewritten by C++: )" + command.substr(4) + R"("})");
    });
}

PI_HOOKS_CPP_PLUGIN("cpp-rewriter", "1.0.0", "Rewrites a tool's input", setup);
"#;

/// `Result::rewrite_input`: the built-in `bash` runs the command the C++ handler gave, in
/// process and in an isolated `serve` child (`--isolate`), and the model's call keeps its own.
#[test]
fn a_tool_call_handler_rewrites_the_tools_input() {
    let s = Sandbox::new();
    let plugin = compile_cpp_text(&s.lib(), "libcpp_rewriter", REWRITER);
    let script = s.script(&json!({"turns": [
        {"toolCalls": [
            {"name": "bash", "arguments": {"command": "say hello"}},
            {"name": "bash", "arguments": {"command": "echo as asked"}}
        ]},
        {"text": "done"}
    ]}));
    for isolate in [false, true] {
        let mut command = s.command(&["run", "--mode", "json", "--no-session", "--script"]);
        command.arg(&script).arg("--hook").arg(&plugin);
        if isolate {
            command.arg("--isolate");
        }
        command.arg("go");
        let output = output_within(command, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        let events = json_lines(&output);
        // The two calls run concurrently: compare their texts in a fixed order.
        let mut ends: Vec<&str> = events
            .iter()
            .filter(|e| e["type"] == "tool_execution_end")
            .filter_map(|e| e["result"]["content"][0]["text"].as_str())
            .collect();
        ends.sort_unstable();
        assert_eq!(
            ends,
            ["as asked\n", "rewritten by C++: hello\n"],
            "isolate {isolate}\n{stderr}"
        );
        let start = events
            .iter()
            .find(|e| e["type"] == "tool_execution_start")
            .expect("a start");
        assert_eq!(start["args"]["command"], "say hello", "isolate {isolate}");
    }
}

const WHO: &str = r#"
#include <string>
#include "pi_hooks.hpp"
using namespace pi_hooks;

static std::string at_setup;

static void setup(Plugin &pi) {
    at_setup = std::string(pi.identity());
    pi.on("tool_call", [](Value, Context &ctx, Result &result) {
        std::string reason = "init=" + at_setup + " id=" + std::string(ctx.identity()) +
                             " data=" + std::string(ctx.data_dir());
        result.set("block", true).set("reason", reason);
    });
}

PI_HOOKS_CPP_PLUGIN("cpp-who", "1.0.0", "Tells who it is", setup);
"#;

/// `Plugin::identity` (during setup), `Context::identity` and `Context::data_dir` (ABI 1.6):
/// a plain library is its canonical path, its folder is made under the agent directory.
#[test]
fn a_cpp_plugin_asks_who_it_is() {
    let s = Sandbox::new();
    let plugin = compile_cpp_text(&s.lib(), "libcpp_who", WHO);
    let script = s.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "done"}
    ]}));
    let mut command = s.command(&["run", "--mode", "json", "--no-session", "--script"]);
    command.arg(&script).arg("--hook").arg(&plugin).arg("go");
    let output = output_within(command, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    let events = json_lines(&output);
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .expect("a tool end");
    let text = end["result"]["content"][0]["text"].as_str().unwrap_or("");
    let id = format!(
        "library:{}",
        std::fs::canonicalize(&plugin).unwrap().display()
    );
    assert!(
        text.contains(&format!("init={id} id={id} data=")),
        "{text}\n{stderr}"
    );
    let data = text.split(" data=").nth(1).unwrap().trim_end();
    let data = std::path::Path::new(data);
    assert!(data.is_dir(), "{text}");
    assert!(
        data.starts_with(
            std::fs::canonicalize(s.agent_dir())
                .unwrap()
                .join("pi-hooks/data")
        ),
        "{text}"
    );
}
