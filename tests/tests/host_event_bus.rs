//! The plugin-to-plugin event bus (`events_emit` / `events_on`, pi's `pi.events`),
//! through the real `pi-hooks` binary in JSON mode over a scripted model, on real C (and one
//! C++) plugins, and once in-process for retirement:
//!
//! - an emission reaches every subscriber of the channel, of every plugin, the emitter's own
//!   included, in subscription order (also for a subscription made after init), with the data
//!   intact and the channel NUL-terminated;
//! - an emit from inside a bus handler is delivered after that handler returns (no
//!   re-entrance), after the emission being delivered;
//! - a handler's error status or C++ exception is reported as `Extension error (<path>): ...`
//!   and the other subscribers still get the emission;
//! - a channel nobody listens on is `PI_OK`; a NUL in a channel, data that is not JSON and a
//!   NULL handler are `PI_ERR_INVALID_ARG`;
//! - 20 000 emits in a loop are bounded by the queue cap (`PI_ERR` past it, one log line),
//!   every accepted emission is delivered and the host finishes its run;
//! - a retired plugin's subscriptions are gone.
//!
//! Each plugin is the C source [`BUS_PLUGIN`] compiled with its name, its behaviour flags and
//! its log file as `-D` defines; every plugin appends `<name> <label> <text>` lines to the log.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use pi_hooks_tests::{Sandbox, compile_c_text, json_run_command, output_within};
use serde_json::{Value, json};

/// The most any one command here may take.
const LIMIT: Duration = Duration::from_secs(60);

const PI_OK: i64 = pi_hooks_abi::ffi::PI_OK as i64;
const INVALID_ARG: i64 = pi_hooks_abi::ffi::PI_ERR_INVALID_ARG as i64;

/// The test plugin. `WHO` is its name, `FLAGS` a comma-separated list of behaviours, `LOG`
/// the file it appends to:
///
/// - `sub`: subscribes `on_chan` to "chan" in init; `sub_late`: in `session_start` instead;
/// - `reemit`: `on_chan` emits `{"n":2}` on "chan" when it gets `n` 1;
/// - `fail`: `on_chan` returns `PI_ERR` (after logging);
/// - `emit`: its `tool_call` handler emits on "chan" and tries the refused forms;
/// - `sub_flood` / `emit_flood`: subscribes a counter to "flood" / emits 20 000 times on it
///   from `tool_call`; the shutdown logs the count.
const BUS_PLUGIN: &str = r#"#include <stdio.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *H;
static PiPlugin *P;
static int depth;
static long flood_got;

static int has(const char *flag) {
    char flags[256], pattern[64];
    snprintf(flags, sizeof flags, ",%s,", FLAGS);
    snprintf(pattern, sizeof pattern, ",%s,", flag);
    return strstr(flags, pattern) != NULL;
}

static void record(const char *label, const char *text) {
    FILE *f = fopen(LOG, "a");
    if (f == NULL) return;
    fprintf(f, "%s %s %s\n", WHO, label, text);
    fclose(f);
}

static void record_status(const char *label, PiStatus status) {
    char text[32];
    snprintf(text, sizeof text, "%d", (int)status);
    record(label, text);
}

static PiStatus on_chan(void *user_data, PiStr channel, const PiValue *data) {
    PiStr json = {NULL, 0};
    char line[1024];
    int64_t n = 0;
    (void)user_data;
    depth++;
    H->values->to_json(data, &json);
    snprintf(line, sizeof line, "%.*s depth=%d term=%d %.*s", (int)channel.len, channel.ptr,
             depth, channel.ptr[channel.len] == '\0', (int)json.len, json.ptr);
    record("got", line);
    H->values->as_int(H->values->get(data, pi_str("n")), &n);
    if (has("reemit") && n == 1) {
        record_status("reemit", H->actions->events_emit(P, pi_str("chan"), pi_str("{\"n\":2}")));
    }
    depth--;
    return has("fail") ? PI_ERR : PI_OK;
}

static PiStatus on_flood(void *user_data, PiStr channel, const PiValue *data) {
    (void)user_data; (void)channel; (void)data;
    flood_got++;
    return PI_OK;
}

static PiStatus on_session_start(void *user_data, const PiValue *event, PiContext *ctx,
                                 PiResult *result) {
    (void)user_data; (void)event; (void)ctx; (void)result;
    if (has("sub_late")) {
        record_status("on_late", H->actions->events_on(P, pi_str("chan"), on_chan, NULL));
    }
    return PI_OK;
}

static PiStatus on_tool_call(void *user_data, const PiValue *event, PiContext *ctx,
                             PiResult *result) {
    (void)user_data; (void)event; (void)ctx; (void)result;
    if (has("emit")) {
        const PiStr nul = {"ch\0an", 5};
        record_status("emit", H->actions->events_emit(P, pi_str("chan"),
            pi_str("{\"n\":1,\"text\":\"a \\\"quoted\\\" w\\u00f6rd\",\"list\":[1,2.5,true,null],\"obj\":{\"k\":\"v\"}}")));
        record_status("emit_nobody", H->actions->events_emit(P, pi_str("nobody"), pi_str("{}")));
        record_status("emit_nul", H->actions->events_emit(P, nul, pi_str("{}")));
        record_status("emit_bad_json", H->actions->events_emit(P, pi_str("chan"), pi_str("{not json")));
        record_status("on_nul", H->actions->events_on(P, nul, on_chan, NULL));
        record_status("on_no_handler", H->actions->events_on(P, pi_str("chan"), NULL, NULL));
    }
    if (has("emit_flood")) {
        long ok = 0, err = 0, other = 0;
        char text[96];
        for (int i = 0; i < 20000; i++) {
            PiStatus s = H->actions->events_emit(P, pi_str("flood"), pi_str("{\"i\":1}"));
            if (s == PI_OK) ok++; else if (s == PI_ERR) err++; else other++;
        }
        snprintf(text, sizeof text, "ok=%ld err=%ld other=%ld", ok, err, other);
        record("flood", text);
    }
    return PI_OK;
}

static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    H = host;
    P = plugin;
    if (has("sub")) record_status("on", host->actions->events_on(plugin, pi_str("chan"), on_chan, NULL));
    if (has("sub_flood")) host->actions->events_on(plugin, pi_str("flood"), on_flood, NULL);
    host->registry->on(plugin, pi_str("session_start"), on_session_start, NULL);
    host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
    return PI_OK;
}

static void shutdown(PiPlugin *plugin) {
    char text[32];
    (void)plugin;
    if (has("sub_flood")) {
        snprintf(text, sizeof text, "%ld", flood_got);
        record("flood_got", text);
    }
}

PI_HOOKS_PLUGIN(WHO, "1.0.0", "uses the event bus", init, shutdown);
"#;

/// [`BUS_PLUGIN`] compiled as `<name>.so` in the sandbox's `lib/` with `flags`, logging to
/// [`log_path`].
fn bus_plugin(s: &Sandbox, name: &str, flags: &str) -> PathBuf {
    let who = format!("-DWHO=\"{name}\"");
    let flags = format!("-DFLAGS=\"{flags}\"");
    let log = format!("-DLOG=\"{}\"", log_path(s).display());
    compile_c_text(&s.lib(), name, BUS_PLUGIN, &[&who, &flags, &log])
}

fn log_path(s: &Sandbox) -> PathBuf {
    s.root().join("bus.log")
}

/// One log line: `<who> <label> <text>`.
#[derive(Debug, Clone)]
struct Line {
    who: String,
    label: String,
    text: String,
}

fn log_lines(s: &Sandbox) -> Vec<Line> {
    std::fs::read_to_string(log_path(s))
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let mut parts = line.splitn(3, ' ');
            let mut next = || parts.next().unwrap_or_default().to_owned();
            Line {
                who: next(),
                label: next(),
                text: next(),
            }
        })
        .collect()
}

/// The status `who` logged under `label` (exactly once).
fn status(lines: &[Line], who: &str, label: &str) -> i64 {
    let found: Vec<_> = lines
        .iter()
        .filter(|l| l.who == who && l.label == label)
        .collect();
    assert_eq!(found.len(), 1, "{who} {label} in {lines:#?}");
    found[0].text.parse().expect("a status number")
}

/// A delivery a plugin logged.
#[derive(Debug, PartialEq)]
struct Got {
    who: String,
    channel: String,
    depth: u32,
    terminated: bool,
    data: Value,
}

fn deliveries(lines: &[Line]) -> Vec<Got> {
    lines
        .iter()
        .filter(|l| l.label == "got")
        .map(|l| {
            let mut parts = l.text.splitn(4, ' ');
            let channel = parts.next().unwrap().to_owned();
            let depth = parts.next().unwrap().strip_prefix("depth=").unwrap();
            let term = parts.next().unwrap().strip_prefix("term=").unwrap();
            let data = serde_json::from_str(parts.next().unwrap_or_default())
                .unwrap_or_else(|e| panic!("data of {l:?} is not JSON: {e}"));
            Got {
                who: l.who.clone(),
                channel,
                depth: depth.parse().unwrap(),
                terminated: term == "1",
                data,
            }
        })
        .collect()
}

/// `pi-hooks run --mode json` with `plugins` named on the command line (in this order), over
/// a model that runs one `bash` tool call (the `tool_call` event) and then finishes. The host
/// must finish the run (exit 0).
fn run(s: &Sandbox, plugins: &[&Path]) -> Output {
    let script = s.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "true"}}]},
        {"text": "done"}
    ]}));
    let output = output_within(json_run_command(s, &script, plugins), LIMIT);
    assert!(
        output.status.success(),
        "the host did not finish the run ({})\nstderr: {}",
        output.status,
        stderr(&output)
    );
    output
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn every_subscriber_gets_each_emission_in_order_and_nested_emits_wait() {
    let s = Sandbox::new();
    // Load order c, b, a; subscription order b (init), a (init), c (session_start).
    let c = bus_plugin(&s, "c", "sub_late");
    let b = bus_plugin(&s, "b", "sub,reemit");
    let a = bus_plugin(&s, "a", "emit,sub");
    let output = run(&s, &[&c, &b, &a]);
    let lines = log_lines(&s);

    for (who, label) in [("b", "on"), ("a", "on"), ("c", "on_late")] {
        assert_eq!(status(&lines, who, label), PI_OK, "{who} {label}");
    }
    assert_eq!(status(&lines, "a", "emit"), PI_OK);
    assert_eq!(status(&lines, "a", "emit_nobody"), PI_OK, "nobody listens");
    assert_eq!(status(&lines, "a", "emit_nul"), INVALID_ARG);
    assert_eq!(status(&lines, "a", "emit_bad_json"), INVALID_ARG);
    assert_eq!(status(&lines, "a", "on_nul"), INVALID_ARG);
    assert_eq!(status(&lines, "a", "on_no_handler"), INVALID_ARG);
    assert_eq!(status(&lines, "b", "reemit"), PI_OK);

    let first = json!({"n": 1, "text": "a \"quoted\" wörd", "list": [1, 2.5, true, null], "obj": {"k": "v"}});
    let second = json!({"n": 2});
    let expected: Vec<Got> = [("b", &first), ("a", &first), ("c", &first)]
        .into_iter()
        .chain([("b", &second), ("a", &second), ("c", &second)])
        .map(|(who, data)| Got {
            who: who.to_owned(),
            channel: "chan".to_owned(),
            depth: 1,
            terminated: true,
            data: data.clone(),
        })
        .collect();
    assert_eq!(
        deliveries(&lines),
        expected,
        "subscription order across plugins, the emitter included; the emit from b's handler \
         delivered after it returned and after the first emission\nstderr: {}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("Extension error"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_failing_handler_is_reported_and_the_others_still_get_the_emission() {
    let s = Sandbox::new();
    let b = bus_plugin(&s, "b", "sub,fail");
    let c = bus_plugin(&s, "c", "sub");
    let a = bus_plugin(&s, "a", "emit");
    let output = run(&s, &[&b, &c, &a]);
    let got: Vec<String> = deliveries(&log_lines(&s))
        .into_iter()
        .map(|g| g.who)
        .collect();
    assert_eq!(got, ["b", "c"], "stderr: {}", stderr(&output));
    let expected = format!(
        "Extension error ({}): Event handler error (chan): handler returned PI_ERR",
        b.display()
    );
    let text = stderr(&output);
    assert_eq!(
        text.matches(&expected).count(),
        1,
        "{expected:?} in:\n{text}"
    );
    // JSON mode also gets the error as an `extension_error` line, as for a handler error.
    let lines = pi_hooks_tests::json_lines(&output);
    let reported: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "extension_error" && l["event"] == "bus")
        .collect();
    assert_eq!(reported.len(), 1, "{lines:?}");
    assert_eq!(reported[0]["extensionPath"], b.display().to_string());
    assert_eq!(
        reported[0]["error"],
        "Event handler error (chan): handler returned PI_ERR"
    );
}

/// A C++ plugin whose bus handler lets a `std::runtime_error` escape into the host.
fn cpp_bus_thrower(s: &Sandbox) -> PathBuf {
    let code = r#"#include <stdexcept>
#include "pi_hooks.h"
static PiStatus on_chan(void *, PiStr, const PiValue *) {
    throw std::runtime_error("kaboom from a bus handler");
}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    return host->actions->events_on(plugin, pi_str("chan"), on_chan, nullptr);
}
PI_HOOKS_PLUGIN("thrower", "1.0.0", "throws from a bus handler", init, nullptr);
"#;
    pi_hooks_tests::compile_cpp_text(&s.lib(), "thrower", code)
}

#[test]
fn a_cpp_exception_in_a_bus_handler_is_caught_and_reported() {
    let s = Sandbox::new();
    let thrower = cpp_bus_thrower(&s);
    let c = bus_plugin(&s, "c", "sub");
    let a = bus_plugin(&s, "a", "emit");
    let output = run(&s, &[&thrower, &c, &a]);
    let got: Vec<String> = deliveries(&log_lines(&s))
        .into_iter()
        .map(|g| g.who)
        .collect();
    assert_eq!(got, ["c"], "stderr: {}", stderr(&output));
    let expected = format!(
        "Extension error ({}): Event handler error (chan): threw a C++ exception: kaboom from a bus handler",
        thrower.display()
    );
    let text = stderr(&output);
    assert!(text.contains(&expected), "{expected:?} in:\n{text}");
}

#[test]
fn emitting_in_a_loop_is_bounded_and_every_accepted_emission_is_delivered() {
    let s = Sandbox::new();
    // The emitter also listens: its own deliveries wait for its tool_call to return, so the
    // queue fills up while it emits.
    let a = bus_plugin(&s, "a", "emit_flood,sub_flood");
    let b = bus_plugin(&s, "b", "sub_flood");
    let output = run(&s, &[&a, &b]);
    let lines = log_lines(&s);
    let flood = lines
        .iter()
        .find(|l| l.who == "a" && l.label == "flood")
        .unwrap_or_else(|| panic!("no flood line in {lines:#?}"));
    let counts: Vec<i64> = flood
        .text
        .split(' ')
        .map(|part| part.split_once('=').unwrap().1.parse().unwrap())
        .collect();
    let (ok, err, other) = (counts[0], counts[1], counts[2]);
    let cap = pi_hooks_host::services::event_bus::MAX_PENDING as i64;
    assert_eq!(other, 0, "only PI_OK and PI_ERR: {flood:?}");
    assert_eq!(ok + err, 20_000);
    assert!(
        (cap..=cap + 1).contains(&ok),
        "at most the cap (plus the one being delivered) accepted: {flood:?}"
    );
    assert!(err > 0, "{flood:?}");
    for who in ["a", "b"] {
        assert_eq!(
            status(&lines, who, "flood_got"),
            ok,
            "{who} got every accepted emission (drained before the plugins were retired)"
        );
    }
    let text = stderr(&output);
    assert_eq!(
        text.matches("event bus emissions are waiting for delivery")
            .count(),
        1,
        "one log line per burst:\n{text}"
    );
}

#[test]
fn a_retired_plugins_subscriptions_are_gone() {
    use pi_hooks_host::host_api::context::{CallKind, CallScope};
    use pi_hooks_host::host_api::value::HostValue;

    let s = Sandbox::new();
    let b = bus_plugin(&s, "b", "sub");
    let a = bus_plugin(&s, "a", "emit");
    let cache = s.root().join("cache");
    let b = pi_hooks_host::lifecycle::load::load_file(&b, &cache).expect("load b");
    let a = pi_hooks_host::lifecycle::load::load_file(&a, &cache).expect("load a");
    assert_eq!(
        pi_hooks_host::services::event_bus::subscriber_count("chan"),
        1
    );

    let scope = CallScope::new(CallKind::Event, &s.project().display().to_string(), 1);
    let payload = HostValue::from_json(json!({"type": "tool_call", "toolName": "bash"}));
    let emit = || {
        let outcomes = a.call_event("tool_call", &payload, &scope);
        assert!(outcomes.iter().all(|o| o.status == 0), "{outcomes:?}");
        assert!(pi_hooks_host::services::event_bus::drain(
            Duration::from_secs(10)
        ));
    };
    emit();
    let got =
        |lines: &[Line]| -> Vec<String> { deliveries(lines).into_iter().map(|g| g.who).collect() };
    assert_eq!(got(&log_lines(&s)), ["b"]);

    drop(b);
    assert_eq!(
        pi_hooks_host::services::event_bus::subscriber_count("chan"),
        0,
        "b's subscription ended with it"
    );
    emit();
    let lines = log_lines(&s);
    assert_eq!(got(&lines), ["b"], "nothing delivered to the retired b");
    let emits: Vec<&Line> = lines
        .iter()
        .filter(|l| l.who == "a" && l.label == "emit")
        .collect();
    assert_eq!(emits.len(), 2);
    assert!(
        emits.iter().all(|l| l.text == PI_OK.to_string()),
        "{emits:?}"
    );
}
