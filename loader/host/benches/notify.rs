//! What naming Landlock's refusals costs an `open` (BENCHMARKS.md §13): a confined process
//! (`no_new_privs`, the limits, Landlock, the seccomp trap filter, exactly as
//! `sandbox::confine` applies them) opens and closes a file its grant lets it read, with and
//! without the supervisor's notifying filter (`sandbox::supervisor`), and opens a file
//! outside its grant (refused; with the supervisor, named). Its grant has `memoryMiB`, so
//! with the supervisor its `mmap`s are notified too: it maps and unmaps 64 KiB, and asks for
//! a mapping past the limit (refused; with the supervisor, the first of the burst named).
//!
//! Each measurement is a child process (this executable again, `PI_HOOKS_BENCH_CHILD=with`
//! or `without`): it confines itself, makes each call 200 times to warm up, then times 2000
//! and prints the nanoseconds per call. Children with and without the filter alternate, 31
//! rounds; the medians and their ratio are printed.
//!
//! Run: `cargo bench -p pi-hooks-host --bench notify`.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("notify: Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::CString;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::Instant;

    use pi_hooks_host::sandbox::{
        Grant, capabilities, cgroup, landlock, limits, seccomp, supervisor,
    };

    const CHILD: &str = "PI_HOOKS_BENCH_CHILD";
    const FOLDER: &str = "PI_HOOKS_BENCH_FOLDER";
    const ROUNDS: usize = 31;
    const WARM_UP: usize = 200;
    const OPENS: usize = 2000;

    fn grant(folder: &Path) -> Grant {
        Grant {
            plugin: "bench".into(),
            source: "loader/host/benches/notify.rs".into(),
            read: vec![folder.to_path_buf()],
            write: Vec::new(),
            network: pi_hooks_host::packages::manifest::Network::None,
            exec: Vec::new(),
            exec_paths: Vec::new(),
            memory_mib: Some(MEMORY_MIB),
            data: std::path::PathBuf::new(),
        }
    }

    /// The grant's `memoryMiB`.
    const MEMORY_MIB: u64 = 256;

    /// Nanoseconds per `mmap` of `bytes` (private, anonymous, read-write) + `munmap` (a
    /// refused one is timed as well).
    fn time_maps(bytes: usize) -> f64 {
        let once = || {
            // SAFETY: a new private anonymous mapping, unmapped at once; nothing else is
            // touched.
            unsafe {
                let at = libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if at != libc::MAP_FAILED {
                    libc::munmap(at, bytes);
                }
            }
        };
        for _ in 0..WARM_UP {
            once();
        }
        let start = Instant::now();
        for _ in 0..OPENS {
            once();
        }
        start.elapsed().as_nanos() as f64 / OPENS as f64
    }

    /// Nanoseconds per `open` + `close` of `path` (the open's result is not checked: a
    /// refused one is timed as well).
    fn time_opens(path: &CString) -> f64 {
        let once = || {
            // SAFETY: open(2) of a NUL-terminated path; the descriptor, if any, is closed.
            unsafe {
                let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        };
        for _ in 0..WARM_UP {
            once();
        }
        let start = Instant::now();
        for _ in 0..OPENS {
            once();
        }
        start.elapsed().as_nanos() as f64 / OPENS as f64
    }

    /// The child: confines itself as `sandbox::confine` does (with or without the
    /// supervisor) and prints the cost of an allowed and of a refused open.
    fn child(with_supervisor: bool) {
        let folder = PathBuf::from(std::env::var_os(FOLDER).expect("the bench's folder"));
        let grant = grant(&folder);
        let exe = std::env::current_exe().unwrap();
        let bounds = cgroup::enter(
            grant.memory_mib.map(limits::memory_bound),
            cgroup::MAX_TASKS,
        );
        limits::apply(&grant, &bounds).unwrap();
        capabilities::drop_all(&grant.plugin).unwrap();
        // As `sandbox::confine` does: opened before Landlock.
        let room = supervisor::Room::open();
        let applied = landlock::apply(&grant, &exe, &[]).unwrap();
        assert!(applied.lacking.is_empty(), "{:?}", applied.lacking);
        seccomp::apply(&grant).unwrap();
        if with_supervisor {
            supervisor::start(&grant, &applied.also_readable, &applied.also_writable, room)
                .unwrap();
        }
        let allowed = CString::new(folder.join("file").to_str().unwrap()).unwrap();
        let refused = CString::new("/etc/hostname").unwrap();
        // SAFETY: open(2) of NUL-terminated paths, to check the sandbox is in place.
        unsafe {
            let fd = libc::open(allowed.as_ptr(), libc::O_RDONLY);
            assert!(fd >= 0, "the granted file cannot be opened");
            libc::close(fd);
            assert!(libc::open(refused.as_ptr(), libc::O_RDONLY) < 0);
        }
        let past = ((MEMORY_MIB + 512) << 20) as usize;
        println!(
            "{} {} {} {}",
            time_opens(&allowed),
            time_opens(&refused),
            time_maps(64 << 10),
            time_maps(past)
        );
    }

    fn median(values: &mut [f64]) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }

    pub fn main() {
        if let Ok(mode) = std::env::var(CHILD) {
            child(mode == "with");
            return;
        }
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("file"), "x").unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut results: [[Vec<f64>; 4]; 2] = Default::default();
        for _ in 0..ROUNDS {
            for (i, mode) in ["without", "with"].iter().enumerate() {
                let output = Command::new(&exe)
                    .env(CHILD, mode)
                    .env(FOLDER, folder.path())
                    .output()
                    .unwrap();
                assert!(
                    output.status.success(),
                    "{}",
                    String::from_utf8_lossy(&output.stderr)
                );
                let text = String::from_utf8_lossy(&output.stdout);
                let numbers = text.split_whitespace().map(|n| n.parse::<f64>().unwrap());
                for (slot, number) in results[i].iter_mut().zip(numbers) {
                    slot.push(number);
                }
            }
        }
        let [mut without, mut with] = results;
        let [a0, r0, m0, p0] = without.each_mut().map(|v| median(v));
        let [a1, r1, m1, p1] = with.each_mut().map(|v| median(v));
        println!("notify ({ROUNDS} rounds of {OPENS} calls, medians):");
        println!(
            "  allowed open+close: {a0:.0} ns without the supervisor, {a1:.0} ns with it: +{:.0} ns, {:.1}x",
            a1 - a0,
            a1 / a0
        );
        println!(
            "  refused open: {r0:.0} ns without (silent), {r1:.0} ns with (named): +{:.0} ns, {:.1}x",
            r1 - r0,
            r1 / r0
        );
        println!(
            "  mmap+munmap of 64 KiB: {m0:.0} ns without, {m1:.0} ns with: +{:.0} ns, {:.1}x",
            m1 - m0,
            m1 / m0
        );
        println!(
            "  mmap past memoryMiB: {p0:.0} ns without (silent), {p1:.0} ns with (a burst, named once): +{:.0} ns, {:.1}x",
            p1 - p0,
            p1 / p0
        );
    }
}
