//! What 10 confined plugins (`loader/host/src/sandbox/`) add to a session's start.
//!
//! `benches/fixtures/trivial.c` built 10 times (`libtrivial_00.so` ... `_09`), then, round
//! after round (`PI_HOOKS_BENCH_RUNS`, default 20), three runs of this build's binary,
//! interleaved so machine noise hits all alike: `pi-hooks run --no-session --script S
//! --hook ×10 go` (a script of one text turn: start, one prompt, the end) with the plugins
//! in process, with `--isolate` (10 `serve` children), and confined (each with a grant in
//! settings.json, so 10 confined children: Landlock, seccomp, limits). Printed: the median
//! wall time of each, and the medians of the per-round differences. Not criterion: the
//! cases must alternate.
//!
//! Run: `cargo bench -p pi-hooks --bench confine`.

#[path = "../../host/benches/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_pi-hooks");
const PLUGINS: usize = 10;

/// One world: a home with an agent dir (and its settings), a project.
fn world(root: &Path, settings: &serde_json::Value) -> (PathBuf, PathBuf) {
    let home = root.join("home");
    let agent = home.join(".pi/agent");
    let project = root.join("project");
    std::fs::create_dir_all(&agent).expect("agent dir");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(agent.join("settings.json"), settings.to_string()).expect("settings");
    (home, project)
}

/// Milliseconds of one run.
fn run(home: &Path, project: &Path, script: &Path, plugins: &[PathBuf], extra: &[&str]) -> f64 {
    let mut command = Command::new(BIN);
    command
        .args(["run", "--no-session", "--script"])
        .arg(script)
        .args(extra)
        .current_dir(project)
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join(".pi/agent"))
        .env_remove("PI_HOOKS_TRACE");
    for plugin in plugins {
        command.arg("--hook").arg(plugin);
    }
    command.arg("go");
    let started = Instant::now();
    let output = command.output().expect("run pi-hooks");
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "pi-hooks failed or complained: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

fn main() {
    let rounds: usize = std::env::var("PI_HOOKS_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().expect("temp dir");
    let plugins = common::build_plugins(&dir.path().join("lib"), "trivial", PLUGINS);
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "done"}]}"#).expect("script");
    let grants: serde_json::Map<String, serde_json::Value> = (0..PLUGINS)
        .map(|i| {
            (
                format!("trivial_{i:02}"),
                serde_json::json!({"read": ["${cwd}"], "write": ["${data}"], "memoryMiB": 256}),
            )
        })
        .collect();
    let plain = world(&dir.path().join("plain"), &serde_json::json!({}));
    let confined = world(
        &dir.path().join("confined"),
        &serde_json::json!({ "sandbox": grants }),
    );
    // Warm up every path (page cache, the binary).
    run(&plain.0, &plain.1, &script, &plugins, &[]);
    run(&plain.0, &plain.1, &script, &plugins, &["--isolate"]);
    run(&confined.0, &confined.1, &script, &plugins, &[]);
    let (mut inside, mut isolated, mut jailed) = (Vec::new(), Vec::new(), Vec::new());
    let (mut isolation, mut confinement, mut over_isolation) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let a = run(&plain.0, &plain.1, &script, &plugins, &[]);
        let b = run(&plain.0, &plain.1, &script, &plugins, &["--isolate"]);
        let c = run(&confined.0, &confined.1, &script, &plugins, &[]);
        inside.push(a);
        isolated.push(b);
        jailed.push(c);
        isolation.push(b - a);
        confinement.push(c - a);
        over_isolation.push(c - b);
    }
    let m = |v: &mut Vec<f64>| common::median(v);
    println!(
        "confine/start: {rounds} rounds of a one-turn run with {PLUGINS} plugins, interleaved"
    );
    println!("  in process:             median {:.2} ms", m(&mut inside));
    println!(
        "  isolated (--isolate):   median {:.2} ms",
        m(&mut isolated)
    );
    println!("  confined (grants):      median {:.2} ms", m(&mut jailed));
    println!(
        "  added by 10 isolated children:  median {:.2} ms",
        m(&mut isolation)
    );
    println!(
        "  added by 10 confined children:  median {:.2} ms (of which confinement itself {:.2} ms)",
        m(&mut confinement),
        m(&mut over_isolation)
    );
}
