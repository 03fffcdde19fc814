//! The interactive mode's speed as a person sees it, on the real binary in a pseudo-terminal
//! (tests/src/pty.rs): keystroke-to-screen latency of the editor (one key written to the
//! terminal until the terminal emulator shows it; median over 200 keys), and the time from
//! the start of the process to its first full frame (the footer drawn) with no plugins and
//! with 50 C plugins (median over 10 runs each, after one warm-up run).
//!
//! Run: `cargo bench -p pi-hooks-tests --bench tui`. It builds and measures the release
//! binary (`cargo build --release -p pi-hooks`); `PI_HOOKS_BIN=/path/to/pi-hooks` measures
//! another build. `TUI_BENCH_KEYS` and `TUI_BENCH_RUNS` change the counts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pi_hooks_tests::pty::{Pty, WAIT, command_for, keys, screen_rows};
use pi_hooks_tests::{Sandbox, compile_c_text, workspace_root};

const ROWS: u16 = 30;
const COLS: u16 = 100;
/// Keys typed before the editor is emptied (the line stays on one row).
const LINE: usize = 60;

/// The binary to measure: `PI_HOOKS_BIN`, or the release build (made first).
fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("PI_HOOKS_BIN") {
        return PathBuf::from(path);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["build", "--quiet", "--release", "-p", "pi-hooks"])
        .status()
        .expect("run cargo build --release");
    assert!(status.success(), "cargo build --release -p pi-hooks failed");
    pi_hooks_tests::target_dir().join("release/pi-hooks")
}

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small C plugin named `name`: a command, a `session_start` handler and a status.
fn plugin(dir: &Path, name: &str) -> PathBuf {
    let code = format!(
        r#"#include "pi_hooks.h"
static const PiHostApi *host;
static PiStatus hello(void *ud, PiStr args, PiContext *ctx) {{
    (void)ud; (void)args;
    return host->ui->notify(ctx, pi_str("hello from {name}"), PI_NOTIFY_INFO);
}}
static PiStatus started(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {{
    (void)ud; (void)event; (void)result;
    return host->ui->set_status(ctx, pi_str("{name}"), pi_str("."));
}}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {{
    host = h;
    PiStatus status = h->registry->register_command(plugin, &PI_COMMAND(
        .name = pi_str("{name}"), .handler = hello, .description = pi_str("Say hello")));
    if (status == PI_OK) status = h->registry->on(plugin, pi_str("session_start"), started, NULL);
    return status;
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "a benchmark plugin", init, NULL);
"#
    );
    compile_c_text(dir, &format!("lib{}", name.replace('-', "_")), &code, &[])
}

struct Stats {
    median: Duration,
    p90: Duration,
    min: Duration,
    max: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats {
        median: at(0.5),
        p90: at(0.9),
        min: samples[0],
        max: samples[samples.len() - 1],
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Starts the binary in `sandbox` with `args` and waits for the footer; returns the time
/// from the spawn to that frame.
fn first_frame(bin: &Path, sandbox: &Sandbox, args: &[&str]) -> (Pty, Duration) {
    let start = Instant::now();
    let pty = Pty::spawn(command_for(bin, sandbox, args), ROWS, COLS);
    pty.wait_for("the footer", WAIT, |screen| {
        screen
            .lines()
            .rev()
            .take(2)
            .any(|row| row.ends_with("  script"))
    });
    (pty, start.elapsed())
}

fn quit(mut pty: Pty) {
    pty.send(keys::CTRL_U.as_bytes());
    pty.send(keys::CTRL_D.as_bytes());
    let status = pty.wait_exit(WAIT);
    assert_eq!(status.exit_code(), 0, "{}", pty.screen_text());
}

/// The editor's row: the one under the first rule.
fn editor_row(screen: &vt100::Screen) -> u16 {
    let rows = screen_rows(screen);
    let rule = rows
        .iter()
        .position(|r| !r.is_empty() && r.chars().all(|c| c == '─'))
        .expect("the editor's rule");
    (rule + 1) as u16
}

fn keystrokes(bin: &Path, sandbox: &Sandbox, base: &[&str], keys_total: usize) -> Stats {
    let (mut pty, _) = first_frame(bin, sandbox, base);
    let row = pty.with_screen(editor_row);
    let mut samples = Vec::with_capacity(keys_total);
    let mut typed = 0usize;
    for n in 0..keys_total {
        if typed == LINE {
            pty.send(keys::CTRL_U.as_bytes());
            pty.wait_for_screen("the editor emptied", WAIT, |s| {
                s.cursor_position() == (row, 0)
            });
            typed = 0;
        }
        let c = (b'a' + (n % 26) as u8) as char;
        let start = Instant::now();
        pty.send(&[c as u8]);
        let col = typed as u16;
        pty.wait_for_screen(&format!("key {n} ({c})"), WAIT, |s| {
            s.cell(row, col)
                .is_some_and(|cell| cell.contents() == c.to_string())
                && s.cursor_position() == (row, col + 1)
        });
        samples.push(start.elapsed());
        typed += 1;
    }
    quit(pty);
    stats(samples)
}

fn startups(bin: &Path, sandbox: &Sandbox, args: &[&str], runs: usize, plugins: usize) -> Stats {
    // One warm-up run (page cache, the plugin cache), which checks that every plugin runs:
    // each sets a status "." at session_start.
    let (pty, _) = first_frame(bin, sandbox, args);
    if plugins > 0 {
        let statuses = vec!["."; plugins].join(" ");
        pty.wait_for(&format!("{plugins} statuses"), WAIT, |screen| {
            screen.lines().last() == Some(statuses.as_str())
        });
    }
    quit(pty);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (pty, took) = first_frame(bin, sandbox, args);
        samples.push(took);
        quit(pty);
    }
    stats(samples)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter or `--list` from `cargo test --benches` is
    // answered without running.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let bin = binary();
    let keys_total = count("TUI_BENCH_KEYS", 200);
    let runs = count("TUI_BENCH_RUNS", 10);
    let sandbox = Sandbox::new();
    let script = sandbox.script(&serde_json::json!({"turns": [{"text": "ok"}]}));
    let script = script.to_str().expect("UTF-8 path").to_owned();
    let base = ["--no-session", "--no-hooks", "--script", script.as_str()];

    let plugins: Vec<String> = (0..50)
        .map(|n| {
            plugin(&sandbox.lib(), &format!("bench-{n:02}"))
                .to_str()
                .expect("UTF-8 path")
                .to_owned()
        })
        .collect();
    let mut with_plugins: Vec<&str> = base.to_vec();
    for path in &plugins {
        with_plugins.extend(["-e", path.as_str()]);
    }

    println!("binary: {}", bin.display());
    println!("terminal: {COLS}x{ROWS} pseudo-terminal read through vt100");
    let typing = keystrokes(&bin, &sandbox, &base, keys_total);
    println!(
        "keystroke to screen ({keys_total} keys): median {}, p90 {}, min {}, max {}",
        ms(typing.median),
        ms(typing.p90),
        ms(typing.min),
        ms(typing.max)
    );
    let none = startups(&bin, &sandbox, &base, runs, 0);
    println!(
        "first frame, 0 plugins ({runs} runs): median {}, min {}, max {}",
        ms(none.median),
        ms(none.min),
        ms(none.max)
    );
    let fifty = startups(&bin, &sandbox, &with_plugins, runs, plugins.len());
    println!(
        "first frame, 50 plugins ({runs} runs): median {}, min {}, max {}",
        ms(fifty.median),
        ms(fifty.min),
        ms(fifty.max)
    );
    println!(
        "ratio 50 plugins / 0 plugins: {:.2}",
        fifty.median.as_secs_f64() / none.median.as_secs_f64()
    );
}
