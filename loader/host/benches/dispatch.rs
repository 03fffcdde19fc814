//! `tool_call` dispatch: the host's hot path.
//!
//! At start the C fixtures in `benches/fixtures/` are compiled into a temp dir (10 distinct
//! copies of each, `-DPLUGIN_NAME="trivial-NN"`), loaded through the real loader (shadow
//! copies included) and put behind real `Runner`s. Then, with a prebuilt `Arc<HostValue>`
//! payload `{type, toolCallId, toolName:"bash", input:{command:"echo hi"}}`:
//!
//! - `tool_call/payload_build`: `Runner::tool_call_payload` alone (serde_json::Value ->
//!   HostValue, once per tool call in the agent);
//! - `tool_call/emit/N`: `runner.emit_tool_call(payload.clone())` with N plugins of one
//!   handler each that returns nothing (N = 0, 1, 10);
//! - `tool_call/emit_reading/10`: 10 handlers that read `toolName` and `/input/command`;
//! - `tool_call/emit_timed/10`: the 10 trivial handlers with `toolCallTimeout` set (the chain
//!   runs on a worker thread: one hand-off per event);
//! - `tool_call/build_and_emit/10`: payload build + dispatch, what one tool call costs.
//!
//! Run: `cargo bench -p pi-hooks-host --bench dispatch`.
//!
//! Instruction counts: with `PI_HOOKS_DISPATCH_COUNT=N` set, the bench skips criterion and
//! makes N calls of each `emit` case inside its own `#[inline(never)]` function
//! (`counted_emit_0`, `counted_emit_1`, `counted_emit_10`, `counted_emit_reading_10`), for
//! `valgrind --tool=callgrind --toggle-collect=...` to count (see
//! `scripts/bench-dispatch-callgrind.sh`, which prints instructions per call).
//!
//! Interleaved wall clock (for a noisy machine): with `PI_HOOKS_DISPATCH_ROUNDS=R` set, the
//! bench skips criterion and runs R rounds; each round times one batch of calls of every
//! `emit` case, in an order rotated per round, so every case sees the same noise. It prints
//! each case's median ns per call (p10, p90 beside it) and the paired per-round differences
//! `emit/1 - emit/0` (the first handler) and `(emit/10 - emit/0) / 10` (what each handler
//! adds). `PI_HOOKS_DISPATCH_BATCH` sets the calls per batch (default 5000). Run:
//! `PI_HOOKS_DISPATCH_ROUNDS=200 cargo bench -p pi-hooks-host --bench dispatch`.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use pi_hooks_abi::ffi::PI_MODE_PRINT;
use pi_hooks_host::host_api::value::HostValue;
use pi_hooks_host::lifecycle::load::load_file;
use pi_hooks_host::plugin::LoadedPlugin;
use pi_hooks_host::runner::{DEFAULT_HOOK_TIMEOUT, Runner, RunnerConfig};
use serde_json::json;

fn config(cwd: &str, tool_call_timeout: Option<Duration>) -> RunnerConfig {
    RunnerConfig {
        cwd: cwd.to_owned(),
        mode: PI_MODE_PRINT,
        hook_timeout: DEFAULT_HOOK_TIMEOUT,
        tool_call_timeout,
        session_file: None,
    }
}

fn load(paths: &[std::path::PathBuf], cache: &std::path::Path) -> Vec<Arc<LoadedPlugin>> {
    paths
        .iter()
        .map(|p| {
            let plugin = load_file(p, cache).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            Arc::new(plugin)
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache");
    let trivial = load(&common::build_plugins(dir.path(), "trivial", 10), &cache);
    let reading = load(&common::build_plugins(dir.path(), "reader", 10), &cache);
    let cwd = dir.path().to_string_lossy().into_owned();

    let runners = [
        (0, Runner::new(Vec::new(), config(&cwd, None))),
        (1, Runner::new(trivial[..1].to_vec(), config(&cwd, None))),
        (10, Runner::new(trivial.clone(), config(&cwd, None))),
    ];
    let reading_runner = Runner::new(reading, config(&cwd, None));
    let timed_runner = Runner::new(trivial.clone(), config(&cwd, Some(Duration::from_secs(30))));

    let input = json!({"command": "echo hi"});
    let payload = Runner::tool_call_payload("toolu_bench_0001", "bash", &input);

    // Sanity: every handler is there and nothing blocks.
    for (n, runner) in &runners {
        assert_eq!(runner.has_handlers("tool_call"), *n > 0);
        assert!(matches!(
            runner.emit_tool_call(payload.clone()),
            pi_hooks_host::runner::events::ToolCallOutcome::Allow {
                last: None,
                input: None
            }
        ));
    }
    assert!(matches!(
        reading_runner.emit_tool_call(payload.clone()),
        pi_hooks_host::runner::events::ToolCallOutcome::Allow {
            last: None,
            input: None
        }
    ));
    assert!(matches!(
        reading_runner.emit_tool_call(Runner::tool_call_payload(
            "toolu_bench_0002",
            "bash",
            &json!({"command": "rm -rf /"})
        )),
        pi_hooks_host::runner::events::ToolCallOutcome::Block { .. }
    ));

    if let Some(calls) = std::env::var("PI_HOOKS_DISPATCH_COUNT")
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
    {
        counted_emit_0(&runners[0].1, &payload, calls);
        counted_emit_1(&runners[1].1, &payload, calls);
        counted_emit_10(&runners[2].1, &payload, calls);
        counted_emit_reading_10(&reading_runner, &payload, calls);
        println!("counted {calls} calls of each emit case");
        return;
    }

    if let Some(rounds) = std::env::var("PI_HOOKS_DISPATCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        let batch = std::env::var("PI_HOOKS_DISPATCH_BATCH")
            .ok()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(5_000);
        let cases: [(&str, &Runner); 4] = [
            ("emit/0", &runners[0].1),
            ("emit/1", &runners[1].1),
            ("emit/10", &runners[2].1),
            ("emit_reading/10", &reading_runner),
        ];
        interleaved(&cases, &payload, rounds.max(1), batch.max(1));
        return;
    }

    let mut group = c.benchmark_group("tool_call");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    group.bench_function("payload_build", |b| {
        b.iter(|| Runner::tool_call_payload(black_box("toolu_bench_0001"), "bash", &input))
    });
    for (n, runner) in &runners {
        group.bench_with_input(BenchmarkId::new("emit", n), runner, |b, runner| {
            b.iter(|| runner.emit_tool_call(black_box(payload.clone())))
        });
    }
    group.bench_function(BenchmarkId::new("emit_reading", 10), |b| {
        b.iter(|| reading_runner.emit_tool_call(black_box(payload.clone())))
    });
    group.bench_function(BenchmarkId::new("emit_timed", 10), |b| {
        b.iter(|| timed_runner.emit_tool_call(black_box(payload.clone())))
    });
    group.bench_function(BenchmarkId::new("build_and_emit", 10), |b| {
        let runner = &runners[2].1;
        b.iter(|| {
            let payload = Runner::tool_call_payload(black_box("toolu_bench_0001"), "bash", &input);
            runner.emit_tool_call(payload)
        })
    });
    group.finish();
}

/// `calls` dispatches as the criterion loop makes them (the payload's `Arc` cloned per call).
#[inline(always)]
fn emits(runner: &Runner, payload: &Arc<HostValue>, calls: u64, case: u8) {
    // A constant per case keeps the four functions distinct (not merged into one symbol).
    black_box(case);
    for _ in 0..calls {
        black_box(runner.emit_tool_call(black_box(payload.clone())));
    }
}

#[inline(never)]
fn counted_emit_0(runner: &Runner, payload: &Arc<HostValue>, calls: u64) {
    emits(runner, payload, calls, 0)
}

#[inline(never)]
fn counted_emit_1(runner: &Runner, payload: &Arc<HostValue>, calls: u64) {
    emits(runner, payload, calls, 1)
}

#[inline(never)]
fn counted_emit_10(runner: &Runner, payload: &Arc<HostValue>, calls: u64) {
    emits(runner, payload, calls, 2)
}

#[inline(never)]
fn counted_emit_reading_10(runner: &Runner, payload: &Arc<HostValue>, calls: u64) {
    emits(runner, payload, calls, 3)
}

/// The interleaved wall-clock run (`PI_HOOKS_DISPATCH_ROUNDS`): `rounds` rounds of one
/// `batch`-call batch per case, the order rotated each round; medians and paired differences.
fn interleaved(cases: &[(&str, &Runner)], payload: &Arc<HostValue>, rounds: usize, batch: u64) {
    // Warm up: every case once, a batch each.
    for (_, runner) in cases {
        emits(runner, payload, batch, 9);
    }
    let mut per_call = vec![Vec::with_capacity(rounds); cases.len()];
    for round in 0..rounds {
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            let started = std::time::Instant::now();
            emits(cases[i].1, payload, batch, 9);
            per_call[i].push(started.elapsed().as_secs_f64() * 1e9 / batch as f64);
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?");
    println!(
        "dispatch, interleaved: {rounds} rounds x {batch} calls per case, load {load} at the end"
    );
    println!(
        "  {:<16} {:>9} {:>9} {:>9}",
        "case", "median ns", "p10", "p90"
    );
    for (i, (name, _)) in cases.iter().enumerate() {
        let (median, p10, p90) = spread(&per_call[i]);
        println!("  {name:<16} {median:>9.1} {p10:>9.1} {p90:>9.1}");
    }
    let paired = |a: usize, b: usize, per: f64| -> Vec<f64> {
        (0..rounds)
            .map(|r| (per_call[a][r] - per_call[b][r]) / per)
            .collect()
    };
    let (first, p10, p90) = spread(&paired(1, 0, 1.0));
    println!(
        "  paired, per round: emit/1 - emit/0            {first:>6.1} ns (p10 {p10:.1}, p90 {p90:.1})"
    );
    let (each, p10, p90) = spread(&paired(2, 0, 10.0));
    println!(
        "  paired, per round: (emit/10 - emit/0) / 10    {each:>6.1} ns (p10 {p10:.1}, p90 {p90:.1})"
    );
}

/// Median, 10th and 90th percentile.
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.1), at(0.9))
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
