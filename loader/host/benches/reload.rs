//! Hot reload: how long a reload takes, on real plugins and a real `Runner`.
//!
//! - `reload/one`: a plugin file replaced by rename (as cargo and ld do), then
//!   `Runner::reload_plugin` and one `tool_call` answered by the new version: the time from
//!   the changed file to the new handlers answering, median over 100 reloads alternating two
//!   builds. (`--watch` adds its settle window, 150 ms by default, before it calls this.)
//! - `reload/all/50`: `Runner::reload_all` (`/reload`) with 50 plugins in the global plugin
//!   folder: `session_shutdown`, rediscovery, 50 fresh loads, the swap, retirement of the 50
//!   old instances, `session_start` and `resources_discover`; median over 20.
//!
//! A plain timing loop, not criterion: every reload maps a new copy that stays mapped (the
//! unload policy), so the number of reloads must be fixed. Run:
//! `cargo bench -p pi-hooks-host --bench reload`.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_hooks_abi::ffi::PI_MODE_PRINT;
use pi_hooks_host::plugin_files::discover::DiscoveryOptions;
use pi_hooks_host::runner::events::ToolCallOutcome;
use pi_hooks_host::runner::{DEFAULT_HOOK_TIMEOUT, Runner, RunnerConfig};
use serde_json::json;

fn runner(options: &DiscoveryOptions) -> Runner {
    let report = pi_hooks_host::lifecycle::load::load_all(options);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    Runner::new(
        report.plugins.into_iter().map(Arc::new).collect(),
        RunnerConfig {
            cwd: options.cwd.display().to_string(),
            mode: PI_MODE_PRINT,
            hook_timeout: DEFAULT_HOOK_TIMEOUT,
            tool_call_timeout: None,
            session_file: None,
        },
    )
}

fn replace_by_rename(source: &Path, target: &Path) {
    let tmp = target.with_extension("tmp");
    std::fs::copy(source, &tmp).unwrap();
    std::fs::rename(&tmp, target).unwrap();
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<16} n={:<4} median {:.3} ms   p10 {:.3} ms   p90 {:.3} ms   max {:.3} ms",
        times.len(),
        ms(at(0.5)),
        ms(at(0.1)),
        ms(at(0.9)),
        ms(at(1.0))
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let agent_dir = root.join("agent");
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let payload = Runner::tool_call_payload("toolu_bench", "bash", &json!({"command": "ls"}));

    // One plugin, two builds.
    let builds = common::build_plugins(root, "trivial", 2);
    let plugin = root.join("plugin.so");
    std::fs::copy(&builds[0], &plugin).unwrap();
    let options = DiscoveryOptions {
        cwd: project.clone(),
        agent_dir: agent_dir.clone(),
        explicit: vec![plugin.display().to_string()],
        no_discovery: true,
    };
    let one = runner(&options);
    let mut times = Vec::new();
    for round in 0..100 {
        let started = Instant::now();
        replace_by_rename(&builds[(round + 1) % 2], &plugin);
        let reloaded = one.reload_plugin(&plugin, &options).expect("reload");
        assert!(matches!(
            one.emit_tool_call(payload.clone()),
            ToolCallOutcome::Allow {
                last: None,
                input: None
            }
        ));
        times.push(started.elapsed());
        assert_eq!(reloaded.generation, round as u64 + 1);
    }
    report("reload/one", times);

    // Fifty plugins in the global folder.
    let hooks = agent_dir.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::create_dir_all(root.join("fifty")).unwrap();
    for built in common::build_plugins(&root.join("fifty"), "trivial", 50) {
        std::fs::copy(&built, hooks.join(built.file_name().unwrap())).unwrap();
    }
    let options = DiscoveryOptions {
        cwd: project,
        agent_dir,
        explicit: Vec::new(),
        no_discovery: false,
    };
    let all = runner(&options);
    assert_eq!(all.plugins().len(), 50);
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let done = all.reload_all(&options);
        times.push(started.elapsed());
        assert!(done.errors.is_empty() && done.plugins.len() == 50);
    }
    report("reload/all/50", times);
}
