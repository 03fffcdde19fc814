//! `--isolate`: the latency one event gains when its plugin runs in a `pi-hooks serve` child
//! (`loader/host/src/isolate/`) instead of in process, over each transport.
//!
//! `benches/fixtures/trivial.c` (one `tool_call` handler that returns nothing) is loaded
//! three times through the real loader: once in process, once isolated over the pipe
//! transport and once over the ring transport (`loader/host/src/isolate/transport/`; each a
//! proxy and a child running this build's `pi-hooks serve`), each behind its own `Runner`.
//! Then, round after round (`PI_HOOKS_BENCH_RUNS`, default 200), a batch of 200
//! `runner.emit_tool_call` on each, interleaved so machine noise hits all alike. Printed: the
//! medians of the per-call time of each batch kind, and the medians of the per-round
//! differences (the added latency per event). Then the same calls one at a time after a pause
//! of 2 ms each (`PI_HOOKS_BENCH_PAUSED`, default 300 calls per transport, interleaved), as
//! events come in a session: the child has gone to sleep by then, so this is the cost with
//! one wake-up of a sleeping process. Not criterion: the cases must alternate.
//!
//! `PI_HOOKS_BENCH_ONLY=ring` (or `pipe`) times only that transport's batches (the other
//! case, the floor and the paused calls are skipped), for counting its system calls with
//! `strace -f -c` over two round counts.
//!
//! Run: `cargo bench -p pi-hooks --bench isolate`.

#[path = "../../host/benches/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use pi_hooks_abi::ffi::PI_MODE_PRINT;
use pi_hooks_host::isolate::transport::{Transport, set_transport};
use pi_hooks_host::lifecycle::load::load_file;
use pi_hooks_host::runner::events::ToolCallOutcome;
use pi_hooks_host::runner::{DEFAULT_HOOK_TIMEOUT, Runner, RunnerConfig};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_pi-hooks");
const BATCH: u32 = 200;

fn runner(plugin: pi_hooks_host::plugin::LoadedPlugin, cwd: &str) -> Runner {
    Runner::new(
        vec![Arc::new(plugin)],
        RunnerConfig {
            cwd: cwd.to_owned(),
            mode: PI_MODE_PRINT,
            hook_timeout: DEFAULT_HOOK_TIMEOUT,
            tool_call_timeout: None,
            session_file: None,
        },
    )
}

/// Nanoseconds per call of a batch of `emit_tool_call`.
fn batch(runner: &Runner, payload: &Arc<pi_hooks_host::host_api::value::HostValue>) -> f64 {
    let started = Instant::now();
    for _ in 0..BATCH {
        black_box(runner.emit_tool_call(black_box(payload.clone())));
    }
    started.elapsed().as_nanos() as f64 / f64::from(BATCH)
}

fn main() {
    let rounds: usize = std::env::var("PI_HOOKS_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("cache");
    let cwd = dir.path().to_string_lossy().into_owned();
    let file = common::build_plugins(dir.path(), "trivial", 1).remove(0);
    let in_process = runner(load_file(&file, &cache).expect("load in process"), &cwd);
    pi_hooks_host::isolate::set_serve_program(BIN.into());
    pi_hooks_host::isolate::enable(true);
    set_transport(Some(Transport::Pipe));
    let piped = runner(
        load_file(&file, &cache).expect("load isolated (pipe)"),
        &cwd,
    );
    set_transport(Some(Transport::Ring));
    let ringed = runner(
        load_file(&file, &cache).expect("load isolated (ring)"),
        &cwd,
    );

    let payload =
        Runner::tool_call_payload("toolu_bench_0001", "bash", &json!({"command": "echo hi"}));
    for runner in [&in_process, &piped, &ringed] {
        assert!(matches!(
            runner.emit_tool_call(payload.clone()),
            ToolCallOutcome::Allow {
                last: None,
                input: None
            }
        ));
    }
    // Warm up both paths (the child's first requests, the caches).
    for runner in [&in_process, &piped, &ringed] {
        batch(runner, &payload);
    }

    let mut floor = RawServe::start(&file, &cwd);
    floor.batch();

    let (mut inside, mut pipe, mut ring, mut raw) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut pipe_added, mut ring_added, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    let only = std::env::var("PI_HOOKS_BENCH_ONLY").ok();
    if let Some(only) = only.as_deref() {
        let runner = if only == "pipe" { &piped } else { &ringed };
        let mut times: Vec<f64> = (0..rounds).map(|_| batch(runner, &payload)).collect();
        println!(
            "isolate/tool_call, {only} only: {rounds} rounds of {BATCH} calls, median {:.2} us per event",
            common::median(&mut times) / 1000.0
        );
        return;
    }
    for _ in 0..rounds {
        let a = batch(&in_process, &payload);
        let b = batch(&piped, &payload);
        let c = batch(&ringed, &payload);
        raw.push(floor.batch());
        inside.push(a);
        pipe.push(b);
        ring.push(c);
        pipe_added.push(b - a);
        ring_added.push(c - a);
        ratio.push((c - a) / (b - a));
    }
    let m = |v: &mut Vec<f64>| common::median(v);
    let (inside, pipe, ring, raw) = (m(&mut inside), m(&mut pipe), m(&mut ring), m(&mut raw));
    let (pipe_added, ring_added, ratio) = (m(&mut pipe_added), m(&mut ring_added), m(&mut ratio));
    println!("isolate/tool_call: {rounds} rounds of {BATCH} calls each, interleaved");
    println!("  in process:     median {inside:.0} ns per event");
    println!(
        "  isolated, pipe: median {:.2} us per event, {:.2} us added",
        pipe / 1000.0,
        pipe_added / 1000.0
    );
    println!(
        "  isolated, ring: median {:.2} us per event, {:.2} us added",
        ring / 1000.0,
        ring_added / 1000.0
    );
    println!(
        "  ring's added latency / pipe's: median {ratio:.3} of the per-round ratios ({:.0}x the in-process call)",
        ring / inside
    );
    println!(
        "  floor: a client writing the event line to `pi-hooks serve` and reading the result on one thread: median {:.2} us per event",
        raw / 1000.0
    );

    let paused: usize = std::env::var("PI_HOOKS_BENCH_PAUSED")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(300);
    let (mut pipe_one, mut ring_one, mut inside_one) = (Vec::new(), Vec::new(), Vec::new());
    let one = |runner: &Runner| {
        std::thread::sleep(std::time::Duration::from_millis(2));
        let started = Instant::now();
        black_box(runner.emit_tool_call(black_box(payload.clone())));
        started.elapsed().as_nanos() as f64
    };
    for _ in 0..paused {
        inside_one.push(one(&in_process));
        pipe_one.push(one(&piped));
        ring_one.push(one(&ringed));
    }
    println!("isolate/tool_call after a 2 ms pause: {paused} calls each, interleaved");
    println!(
        "  in process:     median {:.2} us",
        m(&mut inside_one) / 1000.0
    );
    println!(
        "  isolated, pipe: median {:.2} us",
        m(&mut pipe_one) / 1000.0
    );
    println!(
        "  isolated, ring: median {:.2} us",
        m(&mut ring_one) / 1000.0
    );
}

/// A `pi-hooks serve` child driven directly, without the proxy: what the serve protocol
/// itself costs per event (the floor of the isolated path).
struct RawServe {
    _child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    line: String,
}

impl RawServe {
    fn start(file: &std::path::Path, cwd: &str) -> RawServe {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut child = Command::new(BIN)
            .args(["serve", "--no-hooks", "-e"])
            .arg(file)
            .args(["--cwd", cwd])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start pi-hooks serve");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("hello");
        RawServe {
            _child: child,
            stdin,
            stdout,
            line,
        }
    }

    fn batch(&mut self) -> f64 {
        use std::io::{BufRead, Write};
        let request = b"{\"type\":\"event\",\"id\":1,\"name\":\"tool_call\",\"payload\":{\"type\":\"tool_call\",\"toolCallId\":\"toolu_bench_0001\",\"toolName\":\"bash\",\"input\":{\"command\":\"echo hi\"}}}\n";
        let started = Instant::now();
        for _ in 0..BATCH {
            self.stdin.write_all(request).expect("write");
            self.line.clear();
            self.stdout.read_line(&mut self.line).expect("read");
        }
        started.elapsed().as_nanos() as f64 / f64::from(BATCH)
    }
}
