//! Loading N plugins through the real pipeline (`load_all` with N `--hook` paths: read,
//! SHA-256, ELF checks, shadow copy, `dlopen`, descriptor checks, init), each load in a
//! fresh process, so every load maps new images the way a starting `pi-hooks` does.
//!
//! - `load/cold/N`: the shadow-copy cache is empty (every library is copied, then opened);
//! - `load/warm/N`: the cache holds the copies from an earlier process (only opened).
//!
//! The bench re-runs its own executable as the child (`PI_HOOKS_BENCH_CHILD=load`); the child
//! times `load_all` alone with `Instant` and prints the nanoseconds, and criterion gets those
//! (`iter_custom`), so process start-up and exit are not counted. Plugins are built from
//! `benches/fixtures/trivial.c` (50 distinct copies). The OS page cache is warm in both cases
//! (the files were just written); "cold" means an empty plugin cache, as pi's "cold" means an
//! empty transpile cache.
//!
//! After criterion, `load/phases/50` runs 15 more cold and 15 warm children that time each
//! stage of the pipeline separately for 50 plugins (read, SHA-256, ELF check, open = shadow
//! copy + `dlopen` + descriptor, init) and prints the medians, to show where the time goes.
//!
//! Run: `cargo bench -p pi-hooks-host --bench load`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};
use pi_hooks_host::library::{PluginFile, cache_dir, check_object_header, open};
use pi_hooks_host::lifecycle::load::load_all;
use pi_hooks_host::plugin::LoadedPlugin;
use pi_hooks_host::plugin_files::discover::{DiscoveryOptions, Origin};
use pi_hooks_host::plugin_files::trust::{TrustState, sha256_hex};

const CHILD: &str = "PI_HOOKS_BENCH_CHILD";

/// The child: loads the plugins listed in `PI_HOOKS_BENCH_PLUGINS` (one per line) with the
/// agent directory `PI_HOOKS_BENCH_AGENT_DIR` (its `plugin-cache/` is the shadow-copy
/// cache) and prints how long `load_all` took, in nanoseconds.
fn child() {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let agent_dir = PathBuf::from(var("PI_HOOKS_BENCH_AGENT_DIR"));
    let explicit: Vec<String> = var("PI_HOOKS_BENCH_PLUGINS")
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    let options = DiscoveryOptions {
        cwd: agent_dir.clone(),
        agent_dir,
        explicit,
        no_discovery: true,
    };
    let start = Instant::now();
    let report = load_all(&options);
    let elapsed = start.elapsed();
    assert!(report.errors.is_empty(), "load errors: {:?}", report.errors);
    assert_eq!(report.plugins.len(), options.explicit.len());
    println!("{}", elapsed.as_nanos());
    // Exit without retiring the plugins: the host keeps libraries mapped anyway.
    std::process::exit(0);
}

/// The stages of a load, in order, as the `phases` child reports them.
const PHASES: [&str; 6] = [
    "read file",
    "SHA-256",
    "ELF header check",
    "open: shadow copy + dlopen + descriptor",
    "init (plugin registers its handler)",
    "sum of stages",
];

/// The `phases` child: the same work as `load_all` for the listed plugins, stage by stage
/// through the public pieces of the pipeline; prints the total nanoseconds of each stage.
fn child_phases() {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let cache = cache_dir(Path::new(&var("PI_HOOKS_BENCH_AGENT_DIR")));
    let mut totals = [Duration::ZERO; 6];
    let mut plugins = Vec::new();
    for path in var("PI_HOOKS_BENCH_PLUGINS")
        .lines()
        .filter(|l| !l.is_empty())
    {
        let mut lap = Instant::now();
        let mut mark = |i: usize| {
            let now = Instant::now();
            totals[i] += now - lap;
            lap = now;
        };
        let bytes = std::fs::read(path).expect("read plugin");
        mark(0);
        let sha256 = sha256_hex(&bytes);
        mark(1);
        check_object_header(&bytes).expect("ELF check");
        mark(2);
        let file = PluginFile::new(PathBuf::from(path), bytes);
        let library = open(&file, &cache).expect("open");
        mark(3);
        let plugin = LoadedPlugin::init(
            library,
            path.to_owned(),
            Origin::Cli,
            TrustState::NotRequired,
            Some(sha256),
        )
        .expect("init");
        mark(4);
        plugins.push(plugin);
    }
    // `open` checks the ELF header again: count that once, under its own stage.
    totals[3] = totals[3].saturating_sub(totals[2]);
    totals[5] = totals[..5].iter().sum();
    let line: Vec<String> = totals.iter().map(|t| t.as_nanos().to_string()).collect();
    println!("{}", line.join(" "));
    std::process::exit(0);
}

/// Runs one `phases` child; returns the nanoseconds of each stage.
fn child_phases_run(plugins: &str, agent_dir: &Path) -> Vec<f64> {
    let output = Command::new(std::env::current_exe().expect("current exe"))
        .env(CHILD, "phases")
        .env("PI_HOOKS_BENCH_AGENT_DIR", agent_dir)
        .env("PI_HOOKS_BENCH_PLUGINS", plugins)
        .env_remove("PI_HOOKS_CACHE_DIR")
        .output()
        .expect("run the child");
    assert!(
        output.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(|n| n.parse::<f64>().expect("nanoseconds"))
        .collect()
}

/// Prints the median time of each stage over `runs` cold and `runs` warm children.
fn phases(dir: &Path, plugins: &str, n: usize, runs: usize) {
    let warm = tempfile::tempdir_in(dir).expect("warm agent dir");
    child_phases_run(plugins, warm.path());
    let (mut cold_runs, mut warm_runs) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let agent = tempfile::tempdir_in(dir).expect("agent dir");
        cold_runs.push(child_phases_run(plugins, agent.path()));
        warm_runs.push(child_phases_run(plugins, warm.path()));
    }
    println!();
    println!("load/phases/{n}: median over {runs} fresh processes each, ms for all {n} plugins");
    println!("| stage | cold ms | warm ms |");
    println!("|---|---|---|");
    for (i, name) in PHASES.iter().enumerate() {
        let mut cold: Vec<f64> = cold_runs.iter().map(|r| r[i] / 1e6).collect();
        let mut warm: Vec<f64> = warm_runs.iter().map(|r| r[i] / 1e6).collect();
        println!(
            "| {name} | {:.3} | {:.3} |",
            common::median(&mut cold),
            common::median(&mut warm)
        );
    }
}

/// Runs one child load of `plugins` with `agent_dir`; returns the time it reported.
fn child_load(plugins: &str, agent_dir: &Path) -> Duration {
    let output = Command::new(std::env::current_exe().expect("current exe"))
        .env(CHILD, "load")
        .env("PI_HOOKS_BENCH_AGENT_DIR", agent_dir)
        .env("PI_HOOKS_BENCH_PLUGINS", plugins)
        .env_remove("PI_HOOKS_CACHE_DIR")
        .env_remove("PI_HOOKS_LOG")
        .output()
        .expect("run the child");
    assert!(
        output.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let nanos: u64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("child prints nanoseconds");
    Duration::from_nanos(nanos)
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let all = common::build_plugins(dir.path(), "trivial", 50);
    let mut group = c.benchmark_group("load");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    for n in [1usize, 10, 50] {
        let plugins: String = all[..n]
            .iter()
            .map(|p| format!("{}\n", p.display()))
            .collect();
        // Criterion sizes its runs by the reported (load-only) time, but each iteration
        // also pays a process start; aim at ~300 measured loads per case to bound wall time.
        let pilot_dir = tempfile::tempdir_in(dir.path()).expect("pilot dir");
        let pilot = (0..3)
            .map(|_| child_load(&plugins, pilot_dir.path()))
            .min()
            .expect("pilot");
        group.warm_up_time(pilot * 30).measurement_time(pilot * 300);

        group.bench_function(BenchmarkId::new("cold", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let agent = tempfile::tempdir_in(dir.path()).expect("agent dir");
                    total += child_load(&plugins, agent.path());
                }
                total
            })
        });

        let warm = tempfile::tempdir_in(dir.path()).expect("warm agent dir");
        child_load(&plugins, warm.path());
        group.bench_function(BenchmarkId::new("warm", n), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| child_load(&plugins, warm.path())).sum())
        });
    }
    group.finish();

    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    if "load/phases/50".contains(filter.as_str()) {
        let plugins: String = all.iter().map(|p| format!("{}\n", p.display())).collect();
        phases(dir.path(), &plugins, 50, 15);
    }
}

fn main() {
    match std::env::var(CHILD).as_deref() {
        Ok("load") => child(),
        Ok("phases") => child_phases(),
        _ => {}
    }
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
