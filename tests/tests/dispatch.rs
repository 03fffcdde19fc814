//! Loads real plugins in-process with the real loader and calls their handlers: payloads are
//! read through the value accessors, results come back through the result setters, and the
//! SDK's panic barrier turns a panic into an error status with a message.

use pi_hooks_abi::ffi::{PI_ERR, PI_ERR_PANIC, PI_MODE_PRINT, PI_OK};
use pi_hooks_host::host_api::context::{CallKind, CallScope};
use pi_hooks_host::host_api::value::HostValue;
use pi_hooks_host::lifecycle::load::load_file;
use pi_hooks_host::plugin::LoadedPlugin;
use pi_hooks_host::plugin::call::HandlerOutcome;
use pi_hooks_tests::{Sandbox, protected_paths_plugin, rust_plugin};
use serde_json::json;

fn print_scope() -> CallScope {
    CallScope::new(CallKind::Event, "/work", PI_MODE_PRINT)
}

fn load(sandbox: &Sandbox, path: &std::path::Path) -> LoadedPlugin {
    load_file(path, &sandbox.root().join("cache"))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn tool_call(plugin: &LoadedPlugin, tool: &str, input: serde_json::Value) -> Vec<HandlerOutcome> {
    let payload = HostValue::from_json(json!({
        "type": "tool_call", "toolCallId": "call-1", "toolName": tool, "input": input
    }));
    plugin.call_event("tool_call", &payload, &print_scope())
}

#[test]
fn permission_gate_blocks_rm_rf_without_ui_and_allows_the_rest() {
    let sandbox = Sandbox::new();
    let gate = load(&sandbox, &rust_plugin("permission-gate"));

    let blocked = tool_call(&gate, "bash", json!({"command": "rm -rf /tmp/scratch"}));
    assert_eq!(blocked.len(), 1);
    assert_eq!(blocked[0].status, PI_OK);
    let result = blocked[0].result.as_ref().expect("a block result");
    assert_eq!(result["block"], true);
    assert!(
        result["reason"]
            .as_str()
            .unwrap()
            .contains("rm -rf /tmp/scratch"),
        "{result}"
    );

    for (tool, input) in [
        ("bash", json!({"command": "ls -la"})),
        ("read", json!({"path": "rm -rf"})),
    ] {
        let allowed = tool_call(&gate, tool, input);
        assert_eq!(
            allowed[0],
            HandlerOutcome {
                status: PI_OK,
                result: None,
                error: None,
                system_prompt: None
            }
        );
    }
}

#[test]
fn protected_paths_c_plugin_blocks_env_git_and_node_modules() {
    let sandbox = Sandbox::new();
    let plugin = load(&sandbox, &protected_paths_plugin(&sandbox.lib()));
    for path in [
        ".env",
        "./.env",
        "app/.env",
        ".git/config",
        "web/node_modules/x.js",
    ] {
        for tool in ["write", "edit"] {
            let outcome = tool_call(&plugin, tool, json!({"path": path, "content": "x"}));
            let result = outcome[0]
                .result
                .as_ref()
                .unwrap_or_else(|| panic!("{tool} {path} was not blocked"));
            assert_eq!(result["block"], true, "{tool} {path}");
            assert!(
                result["reason"]
                    .as_str()
                    .unwrap()
                    .contains(path.trim_start_matches("./")),
                "{result}"
            );
        }
    }
    for (tool, path) in [
        ("write", "src/main.rs"),
        ("write", ".envrc"),
        ("read", ".env"),
        ("edit", "gitignore"),
    ] {
        let outcome = tool_call(&plugin, tool, json!({"path": path}));
        assert_eq!(outcome[0].result, None, "{tool} {path} should be allowed");
    }
}

#[test]
fn sdk_barrier_turns_panics_and_errors_into_statuses_with_messages() {
    let sandbox = Sandbox::new();
    let plugin = load(&sandbox, &rust_plugin("fixture-rust-init"));

    let panicked = tool_call(&plugin, "bash", json!({"command": "panic"}));
    assert_eq!(panicked[0].status, PI_ERR_PANIC);
    assert!(
        panicked[0]
            .error
            .as_deref()
            .unwrap()
            .contains("handler panic for call-1"),
        "{panicked:?}"
    );

    let failed = tool_call(&plugin, "bash", json!({"command": "fail"}));
    assert_eq!(
        (failed[0].status, failed[0].error.as_deref()),
        (PI_ERR, Some("handler failure"))
    );

    // The plugin keeps working after a panic.
    let fine = tool_call(&plugin, "bash", json!({"command": "ls"}));
    assert_eq!(fine[0].status, PI_OK);

    let input =
        HostValue::from_json(json!({"type": "input", "text": "hello", "source": "interactive"}));
    let transformed = plugin.call_event("input", &input, &print_scope());
    assert_eq!(
        transformed[0].result,
        Some(json!({"action": "transform", "text": "HELLO"}))
    );
}

#[test]
fn registrations_of_a_rust_plugin_are_recorded() {
    let sandbox = Sandbox::new();
    let plugin = load(&sandbox, &rust_plugin("fixture-rust-init"));
    let r = plugin.registrations();
    assert_eq!(r.event_names(), ["session_start", "tool_call", "input"]);
    assert_eq!(
        r.commands
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["fixture"]
    );
    assert_eq!(r.tools[0].name, "fixture_tool");
    assert_eq!(
        r.tools[0].parameters["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(r.renderers[0].custom_type, "fixture-message");
    assert_eq!(
        (
            r.flags[0].name.as_str(),
            r.flags[0].kind,
            r.flags[0].default.clone()
        ),
        ("fixture-flag", "boolean", Some(json!(true)))
    );
    assert_eq!(
        (plugin.name(), plugin.version(), plugin.abi()),
        (
            "fixture-rust-init",
            "9.9.9",
            format!("1.{}", pi_hooks_abi::ffi::PI_HOOKS_ABI_MINOR)
        )
    );
}

#[test]
fn cpp_example_loads_and_its_guarded_handlers_run() {
    let sandbox = Sandbox::new();
    let source = pi_hooks_tests::workspace_root().join("plugins/examples/cpp-hello/hello.cpp");
    let library = sandbox
        .lib()
        .join(format!("libcpp_hello{}", std::env::consts::DLL_SUFFIX));
    pi_hooks_tests::compile_cpp(&source, &library);

    let plugin = load(&sandbox, &library);
    let r = plugin.registrations();
    assert_eq!(r.event_names(), ["session_start"]);
    assert_eq!(r.commands[0].name, "hello");
    let start = HostValue::from_json(json!({"type": "session_start"}));
    let outcome = plugin.call_event("session_start", &start, &print_scope());
    assert_eq!(
        outcome,
        vec![HandlerOutcome {
            status: PI_OK,
            result: None,
            error: None,
            system_prompt: None
        }]
    );
}

#[test]
fn a_retired_plugin_s_handle_answers_cancelled() {
    // A plugin thread may keep its handle after the plugin is retired: host calls through it
    // must answer PI_ERR_CANCELLED (the state is never freed), not touch freed memory.
    let sandbox = Sandbox::new();
    let plugin = load(&sandbox, &rust_plugin("fixture-rust-init"));
    let handle = plugin.state().as_handle();
    drop(plugin);
    let host = pi_hooks_host::host_api::host_api();
    let name = "fixture-flag";
    let mut out = std::ptr::null_mut();
    // SAFETY: the host table is static; the handle stays valid (retired states are kept);
    // `name` and `out` outlive the call.
    let status = unsafe {
        ((*(*host).actions).get_flag)(
            handle,
            pi_hooks_abi::ffi::PiStr {
                ptr: name.as_ptr().cast(),
                len: name.len(),
            },
            &mut out,
        )
    };
    assert_eq!(status, pi_hooks_abi::ffi::PI_ERR_CANCELLED);
    assert!(out.is_null());
}
