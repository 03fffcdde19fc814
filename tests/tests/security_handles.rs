//! Plugins that misuse what the host hands them, through the
//! real `pi-hooks` binary on real C and C++ plugins:
//!
//! - wild, stack-address, kept and late handles (`PiPlugin *`, `PiContext *`, `PiResult *`)
//!   answer `PI_ERR_INVALID_ARG` (or an empty answer), freeing a borrowed value or an owned
//!   one twice does nothing, a wild descriptor is a load error, and the run goes on;
//! - a C++ exception caught by `pi_hooks::guard` is that handler's error, naming the plugin;
//! - names with a NUL are refused, and UI calls with bad arguments fail without a UI as
//!   they would with one;
//! - registrations past the limit are refused with `PI_ERR` and the plugin still loads, with
//!   a warning.
//!
//! The C plugin is `tests/fixtures/security/handles.c`: `HANDLES_CASE` picks what it does
//! and it writes every status it gets to `HANDLES_LOG`.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use pi_hooks_tests::{
    Sandbox, c_fixture_as, compile_c_text, json_lines, json_run_command, loaded_names,
    output_within, parse_json_output,
};
use serde_json::{Value, json};

/// The most any one command here may take.
const LIMIT: Duration = Duration::from_secs(30);

const PI_OK: i64 = pi_hooks_abi::ffi::PI_OK as i64;
const INVALID_ARG: i64 = pi_hooks_abi::ffi::PI_ERR_INVALID_ARG as i64;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// The `handles` fixture, built into the sandbox's `lib/`.
fn handles_plugin(s: &Sandbox) -> PathBuf {
    c_fixture_as(
        &s.lib(),
        "security/handles",
        "handles",
        &["-D_DEFAULT_SOURCE", "-pthread"],
    )
}

/// Where the fixture writes its statuses.
fn status_log(s: &Sandbox) -> PathBuf {
    s.root().join("statuses.log")
}

/// The fixture's statuses by label (each label once).
fn statuses(s: &Sandbox) -> BTreeMap<String, i64> {
    let text = std::fs::read_to_string(status_log(s)).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let (label, value) = line.split_once(' ').expect("<label> <number>");
        let value = value.parse().expect("a number");
        assert!(
            out.insert(label.to_owned(), value).is_none(),
            "{label} recorded twice:\n{text}"
        );
    }
    out
}

/// Asserts every `(label, expected)` in the fixture's statuses.
fn expect(got: &BTreeMap<String, i64>, expected: &[(&str, i64)]) {
    for (label, value) in expected {
        assert_eq!(got.get(*label), Some(value), "{label} in {got:#?}");
    }
}

/// `command` with the fixture's case and log set.
fn with_case(s: &Sandbox, mut command: Command, case: &str) -> Command {
    command
        .env("HANDLES_CASE", case)
        .env("HANDLES_LOG", status_log(s));
    command
}

/// What one run of the scripted model did.
struct Run {
    output: Output,
    /// The JSON lines of `--mode json`.
    events: Vec<Value>,
    /// Whether the `bash` tool ran (it creates a marker file).
    tool_ran: bool,
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// Every `extension_error` line.
    fn extension_errors(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["type"] == "extension_error")
            .collect()
    }
}

/// `pi-hooks run --mode json` with `plugins` named on the command line and `env` set, over a
/// model that runs one `bash` tool call (creating a marker file) and then finishes.
fn run_with(s: &Sandbox, plugins: &[&Path], env: &[(&str, &str)]) -> Run {
    let marker = s.root().join("tool-ran");
    let script = s.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": format!("touch {}", marker.display())}}]},
        {"text": "done"}
    ]}));
    let mut command = json_run_command(s, &script, plugins);
    command.envs(env.iter().copied());
    let output = output_within(command, LIMIT);
    let events = if output.status.success() {
        json_lines(&output)
    } else {
        Vec::new()
    };
    Run {
        output,
        events,
        tool_ran: marker.exists(),
    }
}

/// Runs the `handles` fixture with `case`; the host must survive, finish the run (exit 0)
/// and run the tool.
fn run_case(case: &str) -> (Sandbox, Run, BTreeMap<String, i64>) {
    let s = Sandbox::new();
    let plugin = handles_plugin(&s);
    let log = status_log(&s).display().to_string();
    let run = run_with(
        &s,
        &[&plugin],
        &[("HANDLES_CASE", case), ("HANDLES_LOG", &log)],
    );
    assert!(
        run.output.status.success(),
        "{case}: the host did not survive ({})\nstderr: {}",
        run.output.status,
        run.stderr()
    );
    assert!(
        run.tool_ran,
        "{case}: the tool did not run\n{}",
        run.stderr()
    );
    let got = statuses(&s);
    (s, run, got)
}

/// The length of the project path, as `cwd()` answers it on a live context.
fn cwd_len(s: &Sandbox) -> i64 {
    s.project().display().to_string().len() as i64
}

// ---------------------------------------------------------------------------------------
// Item 11: handles the host did not give, or gave for another call
// ---------------------------------------------------------------------------------------

#[test]
fn wild_and_stack_plugin_handles_are_refused() {
    let (_s, run, got) = run_case("wild_plugin");
    expect(
        &got,
        &[
            ("on_wild", INVALID_ARG),
            ("on_stack", INVALID_ARG),
            ("cleanup_wild", INVALID_ARG),
            ("on_real", PI_OK),
            ("append_wild", INVALID_ARG),
            ("append_stack", INVALID_ARG),
            ("append_real", PI_OK),
        ],
    );
    let stderr = run.stderr();
    assert!(
        !stderr.contains("through a wild handle") && !stderr.contains("through a stack handle"),
        "a log call through a handle the host never gave was written:\n{stderr}"
    );
}

/// `(label, expected)` for the context calls of the fixture's `use_context` through a handle
/// the host must refuse.
fn refused_context(prefix: &str) -> Vec<(String, i64)> {
    [
        ("cwd_len", 0),
        ("has_ui", 0),
        ("plugin_known", 0),
        ("notify", INVALID_ARG),
        ("set_string", INVALID_ARG),
    ]
    .iter()
    .map(|(what, value)| (format!("{prefix}_{what}"), *value))
    .collect()
}

/// The same calls through the live handles of the call.
fn live_context(s: &Sandbox, prefix: &str) -> Vec<(String, i64)> {
    [
        ("cwd_len", cwd_len(s)),
        ("has_ui", 0),
        ("plugin_known", 1),
        ("notify", PI_OK),
        ("set_string", PI_OK),
    ]
    .iter()
    .map(|(what, value)| (format!("{prefix}_{what}"), *value))
    .collect()
}

fn expect_owned(got: &BTreeMap<String, i64>, expected: Vec<(String, i64)>) {
    let borrowed: Vec<(&str, i64)> = expected.iter().map(|(l, v)| (l.as_str(), *v)).collect();
    expect(got, &borrowed);
}

/// No `set_error` through a refused context may reach the run.
fn assert_no_stray_error(run: &Run) {
    assert_eq!(
        run.extension_errors(),
        Vec::<&Value>::new(),
        "{}",
        run.stderr()
    );
    let stderr = run.stderr();
    assert!(!stderr.contains("bad context"), "{stderr}");
    assert!(!stderr.contains("after the handler returned"), "{stderr}");
}

#[test]
fn wild_and_stack_context_and_result_handles_are_refused() {
    let (s, run, got) = run_case("wild_context");
    expect_owned(&got, refused_context("wild"));
    expect_owned(&got, refused_context("stack"));
    expect_owned(&got, live_context(&s, "real"));
    assert_no_stray_error(&run);
}

#[test]
fn a_context_and_result_kept_from_an_earlier_event_are_refused() {
    let (s, run, got) = run_case("kept_handles");
    expect_owned(&got, refused_context("kept"));
    expect_owned(&got, live_context(&s, "current"));
    assert_no_stray_error(&run);
}

#[test]
fn a_result_written_from_a_thread_after_the_handler_returned_is_refused() {
    let (_s, run, got) = run_case("late_result");
    expect(
        &got,
        &[
            ("thread_started", 1),
            ("joined", 1),
            ("after_return_set_string", INVALID_ARG),
            ("after_return_cwd_len", 0),
            ("after_return_notify", INVALID_ARG),
            // While the call runs, its context and its result work only on the thread
            // running the call (the header's threading rule): another thread gets an error or
            // an empty answer, never a race on the call's state.
            ("other_thread_during_call_set_string", INVALID_ARG),
            ("other_thread_during_call_cwd_len", 0),
            ("other_thread_during_call_notify", INVALID_ARG),
        ],
    );
    assert_no_stray_error(&run);
}

#[test]
fn freeing_a_borrowed_value_does_nothing() {
    let (_s, run, got) = run_case("free_borrowed");
    expect(
        &got,
        &[("tool_name_status", PI_OK), ("tool_name_is_bash", 1)],
    );
    assert_no_stray_error(&run);
}

#[test]
fn freeing_an_owned_value_twice_does_nothing() {
    let (_s, run, got) = run_case("double_free");
    expect(
        &got,
        &[
            ("parse", PI_OK),
            ("parse_again", PI_OK),
            ("as_int", PI_OK),
            ("value", 42),
        ],
    );
    assert_no_stray_error(&run);
}

#[test]
fn a_wild_descriptor_or_descriptor_string_is_a_load_error() {
    let s = Sandbox::new();
    let entry = |body: &str| {
        format!(
            r#"#include "pi_hooks.h"
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    (void)host; (void)plugin; return PI_OK;
}}
PI_HOOKS_EXPORT const PiPluginDescriptor *pi_hooks_plugin_v1(void);
PI_HOOKS_EXPORT const PiPluginDescriptor *pi_hooks_plugin_v1(void) {{
    static PiPluginDescriptor descriptor = PI_HOOKS_DESCRIPTOR("wild", "1.0.0", "d", init, NULL);
    {body}
}}
"#
        )
    };
    let wild_pointer = compile_c_text(
        &s.lib(),
        "wild_pointer",
        &entry("(void)descriptor; return (const PiPluginDescriptor *)0x10;"),
        &[],
    );
    let kernel_pointer = compile_c_text(
        &s.lib(),
        "kernel_pointer",
        &entry("(void)descriptor; return (const PiPluginDescriptor *)0xffff800000001000ull;"),
        &[],
    );
    let wild_name = compile_c_text(
        &s.lib(),
        "wild_name",
        &entry("descriptor.name.ptr = (const char *)0x1234; return &descriptor;"),
        &[],
    );
    let wild_version = compile_c_text(
        &s.lib(),
        "wild_version",
        &entry("descriptor.version.ptr = (const char *)0x1234; return &descriptor;"),
        &[],
    );
    let good = compile_c_text(&s.lib(), "good", &entry("return &descriptor;"), &[]);
    let mut args = vec!["list", "--json"];
    for plugin in [
        &wild_pointer,
        &kernel_pointer,
        &wild_name,
        &wild_version,
        &good,
    ] {
        args.extend(["--hook", plugin.to_str().unwrap()]);
    }
    let output = output_within(s.command(&args), LIMIT);
    // Exit 1 (plugins named with --hook did not load), never a crash.
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = parse_json_output(&output);
    assert_eq!(loaded_names(&report), ["wild"], "{report:#}");
    let error = |path: &Path| {
        report["errors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == path.display().to_string())
            .and_then(|e| e["error"].as_str())
            .unwrap_or_else(|| panic!("no error for {} in {report:#}", path.display()))
            .to_owned()
    };
    for pointer in [&wild_pointer, &kernel_pointer] {
        let text = error(pointer);
        assert!(
            text.contains("does not point to a readable descriptor"),
            "{text}"
        );
    }
    for (plugin, field) in [(&wild_name, "name"), (&wild_version, "version")] {
        let text = error(plugin);
        assert!(
            text.contains(&format!("descriptor's {field} points to 0x1234"))
                && text.contains("not readable memory"),
            "{text}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Item 11: C++ exceptions
// ---------------------------------------------------------------------------------------

/// A C++ plugin (`c++ -std=c++17`) whose `event` handler throws `std::runtime_error`, through
/// `pi_hooks::guard` or (with `guarded` false) straight into the host.
fn cpp_thrower(s: &Sandbox, name: &str, event: &str, guarded: bool) -> PathBuf {
    let body = if guarded {
        r#"return pi_hooks::guard(host, ctx, [] { throw std::runtime_error("kaboom from C++"); });"#
    } else {
        r#"(void)ctx; throw std::runtime_error("kaboom from C++");"#
    };
    let code = format!(
        r#"#include <stdexcept>
#include "pi_hooks.hpp"
static const PiHostApi *host;
static PiStatus on_event(void *, const PiValue *, PiContext *ctx, PiResult *) {{
    {body}
}}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {{
    host = h;
    return h->registry->on(plugin, pi_str("{event}"), on_event, nullptr);
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "throws", init, nullptr);
"#
    );
    pi_hooks_tests::compile_cpp_text(&s.lib(), name, &code)
}

#[test]
fn a_guarded_cpp_exception_is_the_handlers_error_naming_the_plugin() {
    let s = Sandbox::new();
    let plugin = cpp_thrower(&s, "thrower", "turn_start", true);
    let run = run_with(&s, &[&plugin], &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(run.tool_ran, "an error in turn_start does not stop the run");
    let path = plugin.display().to_string();
    let errors = run.extension_errors();
    assert!(!errors.is_empty(), "{}", run.stderr());
    for error in errors {
        assert_eq!(error["extensionPath"], path.as_str());
        assert_eq!(error["event"], "turn_start");
        assert_eq!(error["error"], "kaboom from C++");
    }
    assert!(
        run.stderr()
            .contains(&format!("Extension error ({path}): kaboom from C++")),
        "{}",
        run.stderr()
    );

    // In tool_call the same error blocks the tool (fails closed), with the plugin named.
    let s = Sandbox::new();
    let plugin = cpp_thrower(&s, "gate_thrower", "tool_call", true);
    let run = run_with(&s, &[&plugin], &[]);
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(
        !run.tool_ran,
        "a failing tool_call handler must block the tool"
    );
    let result = run
        .events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .expect("a tool result");
    assert_eq!(result["message"]["isError"], true);
    let text = result["message"]["content"].to_string();
    assert!(
        text.contains("kaboom from C++") && text.contains("gate_thrower"),
        "{text}"
    );
}

#[test]
fn an_unguarded_cpp_exception_is_never_reported_as_a_retirement() {
    let s = Sandbox::new();
    let plugin = cpp_thrower(&s, "unguarded", "turn_start", false);
    let run = run_with(&s, &[&plugin], &[]);
    let stderr = run.stderr();
    assert!(!stderr.contains("retired"), "{stderr}");
    if run.output.status.success() {
        // Contained: then it is that handler's error, naming the plugin.
        let path = plugin.display().to_string();
        assert!(
            stderr.contains(&format!("Extension error ({path})")) && stderr.contains("kaboom"),
            "{stderr}"
        );
    } else {
        // Not contained by this host (an exception cannot cross its Rust frames): it aborts
        // with the runtime's own line, before any tool ran.
        assert!(stderr.contains("foreign exception"), "{stderr}");
        assert!(!run.tool_ran);
    }
}

// ---------------------------------------------------------------------------------------
// Item 12: NUL in names, UI arguments without a UI
// ---------------------------------------------------------------------------------------

#[test]
fn names_with_nul_and_bad_ui_arguments_are_refused_without_a_ui() {
    let (s, run, got) = run_case("names_and_ui");
    expect(
        &got,
        &[
            ("on_nul", INVALID_ARG),
            ("command_nul", INVALID_ARG),
            ("on_real", PI_OK),
            ("command_real", PI_OK),
            ("has_ui", 0),
            ("select_null_options", INVALID_ARG),
            ("select_real", PI_OK),
            ("select_index", -1),
            ("confirm_zero_size", INVALID_ARG),
            ("confirm_real", PI_OK),
            ("notify_unknown_level", INVALID_ARG),
            ("notify_real", PI_OK),
        ],
    );
    assert_no_stray_error(&run);

    // The plugin loads with what it could register.
    std::fs::remove_file(status_log(&s)).unwrap();
    let plugin = s.lib().join("handles.so");
    let command = with_case(
        &s,
        s.command(&["list", "--json", "--hook", plugin.to_str().unwrap()]),
        "names_and_ui",
    );
    let output = output_within(command, LIMIT);
    assert!(output.status.success());
    let report = parse_json_output(&output);
    assert_eq!(loaded_names(&report), ["handles"], "{report:#}");
    let loaded = &report["plugins"][0];
    assert_eq!(loaded["events"], json!(["tool_call"]));
    let commands: Vec<&str> = loaded["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["ok-cmd"]);
}

// ---------------------------------------------------------------------------------------
// Item 13: a registration flood
// ---------------------------------------------------------------------------------------

#[test]
fn registrations_past_the_limit_are_refused_and_the_plugin_still_loads() {
    let s = Sandbox::new();
    let plugin = handles_plugin(&s);
    let command = with_case(
        &s,
        s.command(&["list", "--json", "--hook", plugin.to_str().unwrap()]),
        "flood",
    );
    let output = output_within(command, LIMIT);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // 5 000 handlers, then 20 000 commands of which 5 000 fit, then 95 000 handlers that
    // do not: every refusal is PI_ERR.
    expect(
        &statuses(&s),
        &[
            ("on_before_accepted", 5000),
            ("on_before_first_refused", -1),
            ("commands_accepted", 5000),
            ("commands_first_refused", 5000),
            ("commands_other_status", 0),
            ("on_after_accepted", 0),
            ("on_after_first_refused", 0),
            ("on_after_other_status", 0),
        ],
    );
    let report = parse_json_output(&output);
    assert_eq!(loaded_names(&report), ["handles"], "{report:#}");
    let loaded = &report["plugins"][0];
    assert_eq!(loaded["events"], json!(["tool_call"]));
    let commands = loaded["commands"].as_array().unwrap();
    assert_eq!(commands.len(), 5000);
    assert_eq!(commands[0]["name"], "c0");
    assert_eq!(commands[4999]["name"], "c4999");
    let warnings = loaded["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| {
            let w = w.as_str().unwrap_or_default();
            w.contains("10000 registrations") && w.contains("PI_ERR")
        }),
        "{warnings:?}"
    );
}
