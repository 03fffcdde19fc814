//! Security: plugin code that crashes the host or escapes it.
//!
//! Real C plugins, the real `pi-hooks` binary: a crash in plugin code is reported with the
//! plugin's name, path and what it was running, and the host dies of the same signal;
//! `exit()` from plugin code is reported and ends the host with status 70; a child `fork()`ed
//! by plugin code that returns into the host is stopped, so the tool runs once.
#![cfg(target_os = "linux")]

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use pi_hooks_tests::{Sandbox, compile_c_text};
use serde_json::{Value, json};

/// A plugin named `name` (the text of a C string literal) whose `event` handler runs `body`;
/// for `"init"` its init runs it, for `"load"` a library constructor.
fn plugin(sandbox: &Sandbox, name: &str, event: &str, body: &str) -> PathBuf {
    let (handler_body, init_body, load_body) = match event {
        "init" => ("", body, ""),
        "load" => ("", "", body),
        _ => (body, "", ""),
    };
    let code = format!(
        r#"#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include "pi_hooks.h"

static void *write_null(void *arg) {{
    (void)arg;
    *(volatile int *)0 = 1;
    return NULL;
}}

static int recurse(volatile int depth) {{
    volatile char frame[4096];
    if (depth < 0) return 0;
    frame[0] = (char)depth;
    return recurse(depth + 1) + frame[0];
}}

static PiStatus on_event(void *user_data, const PiValue *event, PiContext *ctx, PiResult *result) {{
    (void)user_data; (void)event; (void)ctx; (void)result;
    (void)recurse; (void)write_null;
    {handler_body}
    return PI_OK;
}}

__attribute__((constructor)) static void on_load(void) {{
    {load_body}
}}

static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    {init_body}
    return host->registry->on(plugin, pi_str("{event}"), on_event, NULL);
}}

PI_HOOKS_PLUGIN("{name}", "1.0.0", "misbehaves on purpose", init, NULL);
"#
    );
    let file: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    compile_c_text(&sandbox.lib(), &file, &code, &["-pthread"])
}

/// A model script whose first turn calls bash with `command`.
fn bash_script(sandbox: &Sandbox, command: &str) -> PathBuf {
    sandbox.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "done"}
    ]}))
}

/// `pi-hooks run --mode json --no-session` with `plugin`, the model calling bash once.
fn run_json(sandbox: &Sandbox, plugin: &Path) -> Output {
    let script = bash_script(sandbox, "echo hi");
    sandbox.run(&[
        "run",
        "--mode",
        "json",
        "--script",
        script.to_str().unwrap(),
        "--no-session",
        "--hook",
        plugin.to_str().unwrap(),
        "go",
    ])
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The report lines (`pi-hooks: plugin ...`) on stderr.
fn reports(output: &Output) -> Vec<String> {
    stderr(output)
        .lines()
        .filter(|l| l.starts_with("pi-hooks: plugin "))
        .map(str::to_owned)
        .collect()
}

/// Asserts the host died of `signal` after one report naming `name`, its path and `doing`.
fn assert_crash_report(output: &Output, signal: i32, name: &str, path: &Path, doing: &str) {
    let signal_name = match signal {
        libc_signal::SIGSEGV => "SIGSEGV",
        libc_signal::SIGBUS => "SIGBUS",
        libc_signal::SIGILL => "SIGILL",
        libc_signal::SIGFPE => "SIGFPE",
        libc_signal::SIGABRT => "SIGABRT",
        _ => unreachable!(),
    };
    assert_eq!(
        output.status.signal(),
        Some(signal),
        "the host must die of {signal_name}; status {:?}, stderr:\n{}",
        output.status,
        stderr(output)
    );
    assert_eq!(
        reports(output),
        [format!(
            "pi-hooks: plugin \"{name}\" ({}) crashed with {signal_name} {doing}; the host stops",
            path.display()
        )],
        "stderr:\n{}",
        stderr(output)
    );
}

/// Signal numbers on Linux for x86 and Arm (the tests crate has no libc dependency).
mod libc_signal {
    pub const SIGILL: i32 = 4;
    pub const SIGABRT: i32 = 6;
    pub const SIGBUS: i32 = 7;
    pub const SIGFPE: i32 = 8;
    pub const SIGSEGV: i32 = 11;
}

#[test]
fn a_crash_report_names_plugin_and_event() {
    let sandbox = Sandbox::new();
    let path = plugin(
        &sandbox,
        "null-writer",
        "tool_call",
        "*(volatile int *)0 = 1;",
    );
    let output = run_json(&sandbox, &path);
    assert_crash_report(
        &output,
        libc_signal::SIGSEGV,
        "null-writer",
        &path,
        "while handling event tool_call",
    );
}

#[test]
fn abort_and_raised_signals_are_reported_and_kept() {
    let sandbox = Sandbox::new();
    let cases = [
        ("aborter", "abort();", libc_signal::SIGABRT),
        ("fpe", "raise(SIGFPE);", libc_signal::SIGFPE),
        ("bus", "raise(SIGBUS);", libc_signal::SIGBUS),
        ("ill", "raise(SIGILL);", libc_signal::SIGILL),
    ];
    for (name, body, signal) in cases {
        let path = plugin(&sandbox, name, "tool_call", body);
        let output = run_json(&sandbox, &path);
        assert_crash_report(
            &output,
            signal,
            name,
            &path,
            "while handling event tool_call",
        );
    }
}

#[test]
fn a_stack_overflow_in_plugin_code_is_reported() {
    // The handler runs on the alternate signal stack: the report still gets out.
    let sandbox = Sandbox::new();
    let path = plugin(&sandbox, "deep", "turn_start", "recurse(0);");
    let output = run_json(&sandbox, &path);
    assert_crash_report(
        &output,
        libc_signal::SIGSEGV,
        "deep",
        &path,
        "while handling event turn_start",
    );
}

#[test]
fn a_crash_in_init_says_init() {
    let sandbox = Sandbox::new();
    let path = plugin(&sandbox, "early", "init", "abort();");
    let output = sandbox.run(&["list", "--hook", path.to_str().unwrap()]);
    assert_crash_report(&output, libc_signal::SIGABRT, "early", &path, "in its init");
}

#[test]
fn a_crash_outside_a_host_call_is_not_blamed_on_a_call() {
    // The plugin's own thread runs no host call: the crash goes on to the handler that was
    // there before (Rust's), and the process still dies of SIGSEGV.
    let sandbox = Sandbox::new();
    let path = plugin(
        &sandbox,
        "threaded",
        "tool_call",
        "pthread_t thread; pthread_create(&thread, NULL, write_null, NULL); pthread_join(thread, NULL);",
    );
    let output = run_json(&sandbox, &path);
    assert_eq!(
        output.status.signal(),
        Some(libc_signal::SIGSEGV),
        "stderr:\n{}",
        stderr(&output)
    );
    assert!(reports(&output).is_empty(), "{}", stderr(&output));
}

#[test]
fn a_crash_while_loading_names_the_file() {
    // The library's constructor runs inside dlopen, before the plugin has a name.
    let sandbox = Sandbox::new();
    let path = plugin(&sandbox, "ctor", "load", "*(volatile int *)0 = 1;");
    let output = sandbox.run(&["list", "--hook", path.to_str().unwrap()]);
    assert_eq!(output.status.signal(), Some(libc_signal::SIGSEGV));
    assert_eq!(
        reports(&output),
        [format!(
            "pi-hooks: plugin {} crashed with SIGSEGV while being loaded (its initialisers or entry function); the host stops",
            path.display()
        )]
    );
}

#[test]
fn plugin_names_are_escaped_in_the_report() {
    let sandbox = Sandbox::new();
    let path = plugin(
        &sandbox,
        "evil\\x1b[2J",
        "tool_call",
        "*(volatile int *)0 = 1;",
    );
    let output = run_json(&sandbox, &path);
    assert_eq!(output.status.signal(), Some(libc_signal::SIGSEGV));
    let text = stderr(&output);
    assert!(!text.contains('\u{1b}'), "raw escape on stderr: {text:?}");
    assert!(
        text.contains("plugin \"evil\\e[2J\""),
        "the name must show escaped: {text:?}"
    );
}

#[test]
fn exit_from_plugin_code_is_reported_and_fails_the_run() {
    let sandbox = Sandbox::new();
    let path = plugin(&sandbox, "quitter", "tool_call", "exit(0);");
    let output = run_json(&sandbox, &path);
    assert_eq!(
        output.status.code(),
        Some(70),
        "exit(0) in a handler must not end the session with success; stderr:\n{}",
        stderr(&output)
    );
    assert_eq!(
        reports(&output),
        [format!(
            "pi-hooks: plugin \"quitter\" ({}) called exit() while handling event tool_call; the session was cut short",
            path.display()
        )]
    );
    // The stream really stopped mid-turn: no agent_end.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("\"tool_execution_start\"") || stdout.contains("\"turn_start\""));
    assert!(!stdout.contains("\"agent_end\""), "{stdout}");
}

/// What a run with a `tool_call` handler that forks left behind.
struct ForkRun {
    output: Output,
    plugin: PathBuf,
    /// How the child ended, as the parent saw it: `exited N`.
    child: String,
    /// How many times the bash tool ran.
    tool_runs: usize,
    /// How many tool results the session file holds.
    session_results: usize,
}

/// Runs a session whose `tool_call` handler forks; the child runs `child_code`, then returns
/// from the handler. The parent waits (at most 10 s) for the child and writes down how it
/// ended, then returns too.
fn run_forking(child_code: &str) -> ForkRun {
    let sandbox = Sandbox::new();
    let marks = sandbox.root().join("ran.txt");
    let child_status = sandbox.root().join("child-status.txt");
    let body = format!(
        r#"pid_t pid = fork();
    if (pid == 0) {{
        {child_code}
    }} else if (pid > 0) {{
        int status = 0;
        struct timespec tick = {{0, 10 * 1000 * 1000}};
        int waited = 0;
        for (int i = 0; i < 1000 && waited == 0; i++) {{
            waited = waitpid(pid, &status, WNOHANG);
            if (waited == 0) nanosleep(&tick, NULL);
        }}
        FILE *out = fopen("{}", "w");
        if (out) {{
            if (waited == pid && WIFEXITED(status)) fprintf(out, "exited %d", WEXITSTATUS(status));
            else fprintf(out, "still running or killed");
            fclose(out);
        }}
    }}"#,
        child_status.display()
    );
    let plugin = plugin(&sandbox, "forker", "tool_call", &body);
    let session = sandbox.root().join("s.jsonl");
    let script = bash_script(&sandbox, &format!("echo ran >> {}", marks.display()));
    let output = sandbox.run(&[
        "run",
        "--mode",
        "json",
        "--script",
        script.to_str().unwrap(),
        "--session",
        session.to_str().unwrap(),
        "--hook",
        plugin.to_str().unwrap(),
        "go",
    ]);
    assert!(output.status.success(), "stderr:\n{}", stderr(&output));
    let session_results = std::fs::read_to_string(&session)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["message"]["role"] == "toolResult")
        .count();
    ForkRun {
        child: std::fs::read_to_string(&child_status).unwrap(),
        tool_runs: std::fs::read_to_string(&marks).unwrap().lines().count(),
        session_results,
        plugin,
        output,
    }
}

#[test]
fn a_forking_handler_leaves_one_agent() {
    let run = run_forking("");
    assert_eq!(
        run.child, "exited 70",
        "the child must be stopped as it returns into the host"
    );
    assert_eq!(run.tool_runs, 1, "the tool must run once");
    assert_eq!(run.session_results, 1, "one tool result in the session");
    assert_eq!(
        reports(&run.output),
        [format!(
            "pi-hooks: plugin \"forker\" ({}) called fork() while handling event tool_call and its child process returned into the host; the child was stopped",
            run.plugin.display()
        )]
    );
    // One agent: the JSON stream ends once.
    let stdout = String::from_utf8_lossy(&run.output.stdout);
    assert_eq!(stdout.matches("\"agent_end\"").count(), 1, "{stdout}");
}

#[test]
fn a_forked_child_may_end_itself_with_exit() {
    // exit() in the child is the child's business: its status reaches the parent, nothing is
    // reported, and the host goes on once.
    let run = run_forking("exit(3);");
    assert_eq!(run.child, "exited 3");
    assert_eq!(run.tool_runs, 1);
    assert_eq!(run.session_results, 1);
    assert!(reports(&run.output).is_empty(), "{}", stderr(&run.output));
}

#[test]
fn a_well_behaved_plugin_changes_nothing() {
    // The host's own exit keeps its status and says nothing; the host's own subprocess (the
    // bash tool) is not taken for a plugin's fork child.
    let sandbox = Sandbox::new();
    let marks = sandbox.root().join("ran.txt");
    let path = plugin(&sandbox, "calm", "tool_call", "");
    let script = bash_script(&sandbox, &format!("echo ran >> {}", marks.display()));
    let output = sandbox.run(&[
        "run",
        "--mode",
        "json",
        "--script",
        script.to_str().unwrap(),
        "--no-session",
        "--hook",
        path.to_str().unwrap(),
        "go",
    ]);
    assert!(output.status.success(), "stderr:\n{}", stderr(&output));
    assert!(reports(&output).is_empty(), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "ran\n");
}
