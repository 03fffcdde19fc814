//! What 10 confined plugins (`loader/host/src/sandbox/`) add to a session's start.
//!
//! `benches/fixtures/trivial.c` built 10 times (`libtrivial_00.so` ... `_09`), then, round
//! after round (`PI_HOOKS_BENCH_RUNS`, default 30), the host's own start-up load
//! (`load_all`, as `pi-hooks run` calls it, with this build's `pi-hooks serve` for the
//! children) of the 10 as `--hook` files three ways, interleaved so machine noise hits all
//! alike: in process; isolated (`"isolate": true` in settings.json: 10 `serve` children);
//! confined (a grant for each in settings.json: 10 confined children: Landlock, seccomp,
//! limits). Timed: from the start of the load until every plugin is ready (its child said
//! `hello`); ending the children afterwards is not timed. Printed: the median of each, and
//! the medians of the per-round differences. Not criterion: the cases must alternate.
//!
//! Run: `cargo bench -p pi-hooks --bench confine`.

#[path = "../../host/benches/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use pi_hooks_host::plugin_files::discover::DiscoveryOptions;

const BIN: &str = env!("CARGO_BIN_EXE_pi-hooks");
const PLUGINS: usize = 10;

/// The discovery options of one world: an agent dir with `settings`, a project, the plugins
/// as `--hook` files.
fn world(root: &Path, settings: &serde_json::Value, plugins: &[PathBuf]) -> DiscoveryOptions {
    let agent_dir = root.join("home/.pi/agent");
    let cwd = root.join("project");
    std::fs::create_dir_all(&agent_dir).expect("agent dir");
    std::fs::create_dir_all(&cwd).expect("project");
    std::fs::write(agent_dir.join("settings.json"), settings.to_string()).expect("settings");
    DiscoveryOptions {
        cwd,
        agent_dir,
        explicit: plugins.iter().map(|p| p.display().to_string()).collect(),
        no_discovery: true,
    }
}

/// Milliseconds until all plugins of `options` are loaded (the report is dropped after).
fn start(options: &DiscoveryOptions) -> f64 {
    let started = Instant::now();
    let report = pi_hooks_host::load_all(options);
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    assert!(
        report.errors.is_empty() && report.plugins.len() == PLUGINS,
        "the load failed: {:?}",
        report.errors
    );
    drop(report);
    elapsed
}

fn main() {
    let rounds: usize = std::env::var("PI_HOOKS_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = dir.path().join("lib");
    std::fs::create_dir_all(&lib).expect("lib dir");
    let plugins = common::build_plugins(&lib, "trivial", PLUGINS);
    // Keyed by the library's path (a bare name would name a package).
    let grants: serde_json::Map<String, serde_json::Value> = plugins
        .iter()
        .map(|library| {
            (
                library.display().to_string(),
                serde_json::json!({"read": ["${cwd}"], "write": ["${data}"], "memoryMiB": 256}),
            )
        })
        .collect();
    let plain = world(&dir.path().join("plain"), &serde_json::json!({}), &plugins);
    let isolated = world(
        &dir.path().join("isolated"),
        &serde_json::json!({"isolate": true}),
        &plugins,
    );
    let confined = world(
        &dir.path().join("confined"),
        &serde_json::json!({ "sandbox": grants }),
        &plugins,
    );
    pi_hooks_host::isolate::set_serve_program(BIN.into());
    pi_hooks_host::isolate::enable(false);
    // Warm up every path (page cache, the binary, the shadow copies).
    for options in [&plain, &isolated, &confined] {
        start(options);
    }
    let (mut inside, mut apart, mut jailed) = (Vec::new(), Vec::new(), Vec::new());
    let (mut isolation, mut confinement, mut over_isolation) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let a = start(&plain);
        let b = start(&isolated);
        let c = start(&confined);
        inside.push(a);
        apart.push(b);
        jailed.push(c);
        isolation.push(b - a);
        confinement.push(c - a);
        over_isolation.push(c - b);
    }
    let m = |v: &mut Vec<f64>| common::median(v);
    println!("confine/start: {rounds} rounds of loading {PLUGINS} plugins, interleaved");
    println!("  in process:  median {:.2} ms", m(&mut inside));
    println!("  isolated:    median {:.2} ms", m(&mut apart));
    println!("  confined:    median {:.2} ms", m(&mut jailed));
    println!(
        "  added by 10 isolated children: median {:.2} ms",
        m(&mut isolation)
    );
    println!(
        "  added by 10 confined children: median {:.2} ms (over isolation alone: {:.2} ms)",
        m(&mut confinement),
        m(&mut over_isolation)
    );
}
