//! Process-level measurements with the real release binary (`target/release/pi-hooks`), not
//! criterion (each sample is a whole process): a loop of interleaved runs, medians.
//!
//! 1. `pi-hooks run -p --no-session --script one_bash.json` (one prompt, one `bash` tool
//!    call, then a final text) with no plugin, with 50 `--hook` plugins and a warm
//!    shadow-copy cache, and with the 50 and an empty cache (cold). The three are run in
//!    turn, round after round, so machine noise hits them alike. Wall time from spawn to
//!    exit.
//! 2. Peak RSS (`ru_maxrss` from `wait4`) of the same runs and of `pi-hooks list --hook ...`,
//!    against the total size of the 50 plugin files.
//!
//! Each plugin is `benches/fixtures/trivial.c` (one `tool_call` handler that returns nothing)
//! compiled with its own `-DPLUGIN_NAME`. Environment: `PI_HOOKS_BENCH_RUNS` rounds (default
//! 100).
//! 3. Where the resident memory is at tool time: a run whose bash command reads
//!    `/proc/$PPID/status` (the host's) and `/proc/$PPID/smaps` (RssAnon, RssFile, and the
//!    pages mapped from the plugins' shadow copies). Run: `cargo bench -p pi-hooks --bench process`.

#[path = "../../host/benches/common/mod.rs"]
mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pi-hooks");

/// One finished process: wall time, peak RSS (KiB), stdout, stderr, exit status.
struct Sample {
    wall: Duration,
    max_rss_kib: i64,
    stdout: String,
    stderr: String,
    status: i32,
}

struct Sandbox {
    root: tempfile::TempDir,
}

impl Sandbox {
    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }
    fn agent(&self) -> PathBuf {
        self.home().join(".pi/agent")
    }
    fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    /// Runs `pi-hooks args...` with `cache` as `PI_HOOKS_CACHE_DIR`.
    fn run(&self, args: &[String], cache: &Path) -> Sample {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(self.project())
            .env("HOME", self.home())
            .env("PI_CODING_AGENT_DIR", self.agent())
            .env("PI_HOOKS_CACHE_DIR", cache)
            .env_remove("PI_HOOKS_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let start = Instant::now();
        // Reaped by wait4 below (which also gives the child's rusage), not by Child::wait.
        #[allow(clippy::zombie_processes)]
        let mut child = command.spawn().expect("spawn pi-hooks");
        let pid = child.id() as libc::pid_t;
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pid is our unreaped child; status and usage are valid out-pointers.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let wall = start.elapsed();
        assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_string(&mut stdout);
        }
        if let Some(mut err) = child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        Sample {
            wall,
            max_rss_kib: usage.ru_maxrss,
            stdout,
            stderr,
            status: if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            },
        }
    }
}

const SCRIPT: &str = r#"{
  "turns": [
    {"text": "Running it.", "toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
    {"text": "bench-done", "stopReason": "stop"}
  ]
}
"#;

fn ms(d: f64) -> String {
    format!("{:.2}", d * 1e3)
}

fn main() {
    // cargo bench passes `--bench`; a filter argument that does not match skips this bench.
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    if !filter.is_empty() && !"process".contains(filter.as_str()) {
        return;
    }
    let rounds: usize = std::env::var("PI_HOOKS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);

    let sandbox = Sandbox {
        root: tempfile::tempdir().expect("temp dir"),
    };
    for dir in [
        sandbox.agent(),
        sandbox.project(),
        sandbox.root.path().join("lib"),
    ] {
        std::fs::create_dir_all(dir).expect("sandbox dirs");
    }
    let plugins = common::build_plugins(&sandbox.root.path().join("lib"), "trivial", 50);
    let files_size = common::total_size(&plugins);
    let script = sandbox.root.path().join("one_bash.json");
    std::fs::write(&script, SCRIPT).expect("write script");

    let base: Vec<String> = [
        "run",
        "-p",
        "--no-session",
        "--script",
        &script.to_string_lossy(),
    ]
    .map(str::to_owned)
    .to_vec();
    let hooks: Vec<String> = plugins
        .iter()
        .flat_map(|p| ["--hook".to_owned(), p.display().to_string()])
        .collect();
    let with_hooks: Vec<String> = base.iter().chain(&hooks).cloned().collect();
    let list_none: Vec<String> = vec!["list".into()];
    let list_50: Vec<String> = list_none.iter().chain(&hooks).cloned().collect();

    let warm_cache = sandbox.root.path().join("cache-warm");
    let cold_root = sandbox.root.path().join("cache-cold");
    std::fs::create_dir_all(&cold_root).expect("cold root");
    let mut cold_n = 0usize;
    let mut fresh_cache = || {
        cold_n += 1;
        cold_root.join(cold_n.to_string())
    };

    // Check the runs do what they claim, and warm the cache and the page cache.
    for args in [&base, &with_hooks] {
        let s = sandbox.run(args, &warm_cache);
        assert!(
            s.status == 0 && s.stdout.trim() == "bench-done" && s.stderr.is_empty(),
            "pi-hooks {args:?} failed ({}):\n{}\n{}",
            s.status,
            s.stdout,
            s.stderr
        );
    }
    let listed = sandbox.run(&list_50, &warm_cache);
    assert_eq!(listed.status, 0, "list failed: {}", listed.stderr);
    for _ in 0..5 {
        sandbox.run(&base, &warm_cache);
        sandbox.run(&with_hooks, &warm_cache);
    }

    let (mut none, mut warm, mut cold) = (Vec::new(), Vec::new(), Vec::new());
    let (mut rss_none, mut rss_warm, mut rss_cold) = (Vec::new(), Vec::new(), Vec::new());
    let (mut rss_list_none, mut rss_list_50) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let s = sandbox.run(&base, &warm_cache);
        none.push(s.wall.as_secs_f64());
        rss_none.push(s.max_rss_kib as f64);
        let s = sandbox.run(&with_hooks, &warm_cache);
        warm.push(s.wall.as_secs_f64());
        rss_warm.push(s.max_rss_kib as f64);
        let cache = fresh_cache();
        let s = sandbox.run(&with_hooks, &cache);
        assert_eq!(s.status, 0, "cold run failed: {}", s.stderr);
        cold.push(s.wall.as_secs_f64());
        rss_cold.push(s.max_rss_kib as f64);
        let _ = std::fs::remove_dir_all(&cache);
    }
    for _ in 0..rounds.min(10) {
        rss_list_none.push(sandbox.run(&list_none, &warm_cache).max_rss_kib as f64);
        rss_list_50.push(sandbox.run(&list_50, &warm_cache).max_rss_kib as f64);
    }

    // Paired differences (each round's 50-plugin run minus the same round's baseline) are
    // less sensitive to drift than the difference of medians.
    let mut paired_warm: Vec<f64> = warm.iter().zip(&none).map(|(a, b)| a - b).collect();
    let mut paired_cold: Vec<f64> = cold.iter().zip(&none).map(|(a, b)| a - b).collect();
    let p_warm = common::median(&mut paired_warm);
    let p_cold = common::median(&mut paired_cold);
    let stats = |v: &mut Vec<f64>| {
        let m = common::median(v);
        (m, common::quantile(v, 0.1), common::quantile(v, 0.9))
    };
    let (m_none, lo_none, hi_none) = stats(&mut none);
    let (m_warm, lo_warm, hi_warm) = stats(&mut warm);
    let (m_cold, lo_cold, hi_cold) = stats(&mut cold);

    println!();
    println!(
        "process/run_print: `pi-hooks run -p --no-session --script one_bash.json`, {rounds} interleaved rounds"
    );
    println!("  binary: {BIN}");
    println!("| case | median ms | p10 ms | p90 ms | median - none ms | paired median diff ms |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| no plugins | {} | {} | {} | - | - |",
        ms(m_none),
        ms(lo_none),
        ms(hi_none)
    );
    println!(
        "| 50 plugins, warm cache | {} | {} | {} | {} | {} |",
        ms(m_warm),
        ms(lo_warm),
        ms(hi_warm),
        ms(m_warm - m_none),
        ms(p_warm)
    );
    println!(
        "| 50 plugins, cold cache | {} | {} | {} | {} | {} |",
        ms(m_cold),
        ms(lo_cold),
        ms(hi_cold),
        ms(m_cold - m_none),
        ms(p_cold)
    );
    println!();

    let rss = |v: &mut Vec<f64>| common::median(v) / 1024.0;
    let (r_none, r_warm, r_cold) = (rss(&mut rss_none), rss(&mut rss_warm), rss(&mut rss_cold));
    let (r_list_none, r_list_50) = (rss(&mut rss_list_none), rss(&mut rss_list_50));
    let size_mib = files_size as f64 / (1024.0 * 1024.0);
    println!(
        "process/peak_rss: ru_maxrss (median of runs); 50 plugin files total {files_size} bytes ({size_mib:.2} MiB)"
    );
    println!("| command | 0 plugins MiB | 50 plugins MiB | added by 50 MiB | added / files size |");
    println!("|---|---|---|---|---|");
    println!(
        "| run -p (warm cache) | {r_none:.2} | {r_warm:.2} | {:.2} | {:.2} |",
        r_warm - r_none,
        (r_warm - r_none) / size_mib
    );
    println!(
        "| run -p (cold cache) | {r_none:.2} | {r_cold:.2} | {:.2} | {:.2} |",
        r_cold - r_none,
        (r_cold - r_none) / size_mib
    );
    println!(
        "| list | {r_list_none:.2} | {r_list_50:.2} | {:.2} | {:.2} |",
        r_list_50 - r_list_none,
        (r_list_50 - r_list_none) / size_mib
    );

    // Where the memory is, read by the bash tool from the host's own /proc entries.
    let probe_out = sandbox.root.path().join("probe");
    let probe_script = sandbox.root.path().join("probe.json");
    let command = format!(
        "cat /proc/$PPID/status > {0}.status; cat /proc/$PPID/smaps > {0}.smaps",
        probe_out.display()
    );
    let probe = serde_json::json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "bench-done", "stopReason": "stop"}
    ]});
    std::fs::write(&probe_script, probe.to_string()).expect("write probe script");
    let probe_base: Vec<String> = [
        "run",
        "-p",
        "--no-session",
        "--script",
        &probe_script.to_string_lossy(),
    ]
    .map(str::to_owned)
    .to_vec();
    let probe_hooks: Vec<String> = probe_base.iter().chain(&hooks).cloned().collect();
    println!();
    println!("process/rss_breakdown: the host's /proc/self/status and smaps at tool time, KiB");
    println!(
        "| plugins | VmRSS | RssAnon | RssFile | plugin mappings Rss | of which writable (rw-p) |"
    );
    println!("|---|---|---|---|---|---|");
    for (label, args) in [("0", &probe_base), ("50 (warm cache)", &probe_hooks)] {
        let s = sandbox.run(args, &warm_cache);
        assert_eq!(s.status, 0, "probe run failed: {}", s.stderr);
        let status =
            std::fs::read_to_string(probe_out.with_extension("status")).unwrap_or_default();
        let smaps = std::fs::read_to_string(probe_out.with_extension("smaps")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .unwrap_or("?")
                .to_owned()
        };
        let cache = warm_cache.to_string_lossy().into_owned();
        let (mut plugin_rss, mut plugin_rw) = (0u64, 0u64);
        let mut current: Option<bool> = None; // Some(writable) while inside a plugin mapping
        for line in smaps.lines() {
            let mut parts = line.split_whitespace();
            let first = parts.next().unwrap_or("");
            if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                let perms = parts.next().unwrap_or("");
                let path = line.split_whitespace().nth(5).unwrap_or("");
                // A plugin's private copy: a sealed memfd on Linux, a file in the cache
                // folder elsewhere (or with PI_HOOKS_SHADOW=file).
                let plugin = path.starts_with(&cache) || path.starts_with("/memfd:pi-hooks:");
                current = plugin.then(|| perms.starts_with("rw"));
            } else if first == "Rss:"
                && let Some(writable) = current
            {
                let kib: u64 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                plugin_rss += kib;
                if writable {
                    plugin_rw += kib;
                }
            }
        }
        println!(
            "| {label} | {} | {} | {} | {plugin_rss} | {plugin_rw} |",
            field("VmRSS:"),
            field("RssAnon:"),
            field("RssFile:")
        );
    }
}
