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
//! one wake-up of a sleeping process. A fourth paused case, `ring, got ready`, pauses the
//! same, then calls `pi_hooks_host::isolate::get_ready("tool_call")` (what the agent does
//! when a streamed tool call's arguments are complete) and waits
//! `PI_HOOKS_BENCH_READY_GAP_US` (default 200 µs: the rest of the model's stream) before the
//! timed call; its paired difference with the plain ring call of the same round is printed.
//! `PI_HOOKS_BENCH_PAUSE_MS` sets the pause (default 2 ms; the ring's child reader spins
//! 50 µs after a request, and 5 ms after a nudge, so any pause over 5 ms finds it asleep).
//! Last, the CPU time this process and its children (the `serve` children) spend over
//! `PI_HOOKS_BENCH_IDLE_S` seconds of idleness (default 10; 0 skips it), from `/proc/<pid>/stat`
//! (utime + stime). Not criterion: the cases must alternate.
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
    let pause_ms: u64 = env_or("PI_HOOKS_BENCH_PAUSE_MS", 2);
    let gap_us: u64 = env_or("PI_HOOKS_BENCH_READY_GAP_US", 200);
    let pause = std::time::Duration::from_millis(pause_ms);
    let gap = std::time::Duration::from_micros(gap_us);
    let (mut pipe_one, mut ring_one, mut inside_one) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ready_one, mut ready_saved) = (Vec::new(), Vec::new());
    let one = |runner: &Runner, ready: bool| {
        std::thread::sleep(pause);
        if ready {
            pi_hooks_host::isolate::get_ready("tool_call");
            std::thread::sleep(gap);
        }
        let started = Instant::now();
        black_box(runner.emit_tool_call(black_box(payload.clone())));
        started.elapsed().as_nanos() as f64
    };
    for _ in 0..paused {
        inside_one.push(one(&in_process, false));
        pipe_one.push(one(&piped, false));
        let plain = one(&ringed, false);
        let ready = one(&ringed, true);
        ring_one.push(plain);
        ready_one.push(ready);
        ready_saved.push(plain - ready);
    }
    println!("isolate/tool_call after a {pause_ms} ms pause: {paused} calls each, interleaved");
    let show = |name: &str, v: &mut Vec<f64>| {
        let median = m(v);
        println!(
            "  {name} median {:.2} us (p10 {:.2}, p90 {:.2})",
            median / 1000.0,
            common::quantile(v, 0.1) / 1000.0,
            common::quantile(v, 0.9) / 1000.0
        );
    };
    show("in process:               ", &mut inside_one);
    show("isolated, pipe:           ", &mut pipe_one);
    show("isolated, ring:           ", &mut ring_one);
    show("isolated, ring, got ready:", &mut ready_one);
    println!(
        "  got ready saves: median {:.2} us of the paired differences (ring - ring got ready, {gap_us} us after get_ready)",
        m(&mut ready_saved) / 1000.0
    );

    let idle: u64 = env_or("PI_HOOKS_BENCH_IDLE_S", 10);
    if idle > 0 {
        idle_cpu(std::time::Duration::from_secs(idle));
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// utime + stime of a process, in clock ticks, and its parent, from `/proc/<pid>/stat`.
fn cpu_ticks(pid: &str) -> Option<(u64, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ppid = fields.get(1)?.to_string();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime, ppid))
}

/// This process's children (the `serve` children) and their CPU ticks.
fn children_ticks() -> Vec<(String, u64)> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().into_owned();
            let (ticks, ppid) = cpu_ticks(&pid)?;
            (ppid == me).then_some((pid, ticks))
        })
        .collect()
}

/// Prints the CPU this process and each child use over `idle` of doing nothing (the
/// children asleep on their rings or pipes).
fn idle_cpu(idle: std::time::Duration) {
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let me = std::process::id().to_string();
    let before_me = cpu_ticks(&me).map_or(0, |t| t.0);
    let before = children_ticks();
    std::thread::sleep(idle);
    let after_me = cpu_ticks(&me).map_or(0, |t| t.0);
    let after = children_ticks();
    let seconds = idle.as_secs_f64();
    let percent = |ticks: u64| ticks as f64 / hz / seconds * 100.0;
    println!(
        "idle for {seconds:.0} s: CPU (utime + stime, /proc/<pid>/stat, {hz:.0} ticks per second)"
    );
    println!(
        "  this process: {} ticks, {:.2}% of a CPU",
        after_me - before_me,
        percent(after_me - before_me)
    );
    for (pid, ticks) in &after {
        let was = before.iter().find(|(p, _)| p == pid).map_or(0, |(_, t)| *t);
        println!(
            "  child {pid}: {} ticks, {:.2}% of a CPU",
            ticks - was,
            percent(ticks - was)
        );
    }
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
