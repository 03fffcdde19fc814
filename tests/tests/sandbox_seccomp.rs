//! The confined child's seccomp allow-list, capabilities and limits
//! (`loader/host/src/sandbox/{seccomp,capabilities,cgroup,limits}.rs`): a hostile C plugin
//! (tests/fixtures/sandbox_seccomp.c) under the real binary tries to reach the host (its
//! limits, priority, scheduling, signals, descriptors, environment), to get around the
//! filter (io_uring, file handles, device nodes, `chroot`, terminal input, namespaces, a call
//! no list names), and to get past its limits (memory in a `memfd`, threads without end).
//! Each is refused and named, with the plugin and the grant, and the host goes on; each
//! harmless counterpart (the same call on itself, a FIFO, threads within the bound) still
//! works, so no test passes because everything is broken. Run as root (the tests' user
//! here), and for the limits also as the user `nobody`, for whom the fallbacks (rlimits)
//! apply.
#![cfg(target_os = "linux")]

use pi_hooks_tests::confined::{Run, World, hand_over, run, run_with, world_of};
use serde_json::json;

const REFUSED: &str = "failed Operation not permitted";

fn world() -> World {
    world_of("sandbox_seccomp")
}

/// Whether the tests run as root (then process limits are also tried as `nobody`).
fn root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// Asserts each `(attack, outcome)`.
fn outcomes(run: &Run, expected: &[(&str, &str)]) {
    for (attack, outcome) in expected {
        assert_eq!(
            run.outcome(attack),
            format!("{attack}: {outcome}"),
            "{attack}\n{}",
            run.stderr()
        );
    }
}

/// Asserts a report naming `what` by seccomp, with the plugin and the grant `grant`.
fn named(run: &Run, world: &World, what: &str, grant: &str) {
    let report = run.report(&format!("sandbox denied {what}"));
    let text = report["error"].as_str().unwrap();
    assert!(text.contains("refused by its seccomp filter"), "{text}");
    assert!(text.contains(grant), "{text}");
    // The grant is not spelled out (once at most: here, not at all).
    assert!(!text.contains("write: nothing"), "{text}");
    assert_eq!(report["extensionPath"], world.hostile.to_str().unwrap());
}

#[test]
fn the_host_its_group_and_other_processes_are_out_of_reach_and_each_refusal_is_named() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"read": ["/"]}}});
    // Another process of the same user, outside the sandbox.
    let mut other = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let kill_other = format!("kill_other {}", other.id());
    let run = run(
        &world,
        &settings,
        &[],
        &[
            &kill_other,
            "prlimit_host",
            "setrlimit_up",
            "getrlimit",
            "nice_host",
            "nice_group",
            "nice_user",
            "nice_self",
            "sched_host",
            "sched_self",
            "affinity_host",
            "affinity_self",
            "ioprio_host",
            "ioprio_self",
            "kill_host",
            "kill_hostgroup",
            "kill_all",
            "kill_self",
            "pidfd_signal",
            "setown_host",
            "setown_ex",
            "setown_self",
            "kcmp",
            "pidfd_getfd",
            "environ",
            "joingroup",
            "after",
        ],
    );
    outcomes(
        &run,
        &[
            ("prlimit_host", REFUSED),
            ("setrlimit_up", REFUSED),
            ("getrlimit", "ok"),
            ("nice_host", REFUSED),
            ("nice_group", REFUSED),
            ("nice_user", REFUSED),
            ("nice_self", "ok"),
            ("sched_host", REFUSED),
            ("sched_self", "ok"),
            ("affinity_host", REFUSED),
            ("affinity_self", "ok"),
            ("ioprio_host", REFUSED),
            ("ioprio_self", "ok"),
            ("kill_host", REFUSED),
            ("kill_hostgroup", REFUSED),
            ("kill_all", REFUSED),
            ("kill_self", "ok"),
            ("pidfd_signal", REFUSED),
            ("setown_host", REFUSED),
            ("setown_ex", REFUSED),
            ("setown_self", "ok"),
            ("kcmp", REFUSED),
            ("pidfd_getfd", REFUSED),
            // The host is not dumpable while it runs confined plugins, and the child has no
            // CAP_SYS_PTRACE: even with the whole file system readable, its environment is not.
            ("environ", "failed Permission denied"),
            ("joingroup", REFUSED),
        ],
    );
    // Landlock's signal scoping refuses it (not named: the filter cannot tell the plugin's
    // own processes from others by their pid); it still runs.
    outcomes(&run, &[("kill_other", REFUSED)]);
    assert!(other.try_wait().unwrap().is_none());
    other.kill().unwrap();
    other.wait().unwrap();
    // The host went on (a host with RLIMIT_NOFILE 10, or stopped, would not).
    assert_eq!(run.ran, ["echo after"]);
    // One short line: where the grant comes from, not the whole grant (issue 34 item 16).
    let grant = format!(
        "(grant from {})",
        world.sandbox.agent_dir().join("settings.json").display()
    );
    for what in [
        "prlimit64 setting a limit of pid ",
        "prlimit64 setting a limit: refused by its seccomp filter: a confined plugin may not change its limits",
        "setpriority of pid ",
        "setpriority of process group 0",
        "setpriority of user 0",
        "sched_setscheduler of pid ",
        "sched_setaffinity of pid ",
        "ioprio_set of ",
        "kill of the host (pid ",
        "kill of the host's process group",
        "kill of every process (pid -1)",
        "pidfd_send_signal",
        "fcntl(F_SETOWN) to ",
        "fcntl(F_SETOWN_EX)",
        "kcmp",
        "pidfd_getfd",
        "setpgid into the host's process group",
    ] {
        named(&run, &world, what, &grant);
    }
    // The calls on itself were not refused.
    assert_eq!(run.reports_with("of pid 0"), 0, "{:?}", run.errors);
    assert_eq!(run.reports_with("getrlimit"), 0, "{:?}", run.errors);
}

/// Where in the stream the report holding `what` and the answer of `attack` are.
fn report_and_answer(run: &Run, what: &str, attack: &str) -> (usize, usize) {
    let reported = run.position(|l| {
        l["type"] == "extension_error" && l["error"].as_str().unwrap().contains(what)
    });
    let answered = run.position(|l| {
        l["type"] == "tool_execution_end"
            && l["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with(&format!("{attack}: ")))
    });
    (reported, answered)
}

#[test]
fn a_refused_fork_is_named_before_it_returns_and_so_is_every_refusal_after_it() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {}}});
    let started = std::time::Instant::now();
    let run = run(&world, &settings, &[], &["fork", "kcmp", "chroot", "after"]);
    outcomes(
        &run,
        &[("fork", REFUSED), ("kcmp", REFUSED), ("chroot", REFUSED)],
    );
    // fork holds the C library's allocator lock while it calls clone: the report is made
    // without allocating, so it is not held up until the handler gives up (a second).
    for (what, attack) in [
        ("sandbox denied clone", "fork"),
        ("sandbox denied kcmp", "kcmp"),
        ("sandbox denied chroot", "chroot"),
    ] {
        let (reported, answered) = report_and_answer(&run, what, attack);
        assert!(
            reported < answered,
            "{what}: reported at line {reported}, answered at line {answered}"
        );
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.ran, ["echo after"]);
}

#[test]
fn io_uring_file_handles_devices_chroot_and_unlisted_calls_are_refused_and_named() {
    let world = world();
    let out = world.sandbox.home().join("out");
    let settings = json!({"sandbox": {(world.key()): {"write": ["${home}/out"]}}});
    let char_device = format!("mknod_char {}", out.display());
    let block_device = format!("mknod_block {}", out.display());
    let fifo = format!("mkfifo {}", out.display());
    let lease = format!("lease {}", out.display());
    let run = run(
        &world,
        &settings,
        &[],
        &[
            "io_uring",
            "by_handle",
            &char_device,
            &block_device,
            &fifo,
            &lease,
            "chroot",
            "sethostname",
            "tiocsti",
            "newns",
            "unlisted",
            "caps",
            "after",
        ],
    );
    let expected_caps = if root() {
        // Root drops all five sets.
        "ok eff=0 prm=0 inh=0 amb=0 bnd=0"
    } else {
        "ok eff=0 prm=0 inh=0 amb=0 bnd=41"
    };
    outcomes(
        &run,
        &[
            (
                "io_uring",
                "failed setup: Operation not permitted, enter: Operation not permitted, register: Operation not permitted",
            ),
            (
                "by_handle",
                "failed name_to_handle_at: Operation not permitted, open_by_handle_at: Operation not permitted",
            ),
            ("mknod_char", REFUSED),
            ("mknod_block", REFUSED),
            ("mkfifo", "ok"),
            ("lease", REFUSED),
            ("chroot", REFUSED),
            ("sethostname", REFUSED),
            ("tiocsti", REFUSED),
            ("newns", REFUSED),
            // As a kernel without the call would answer (a program that probes falls back).
            ("unlisted", "failed Function not implemented"),
        ],
    );
    if root() {
        outcomes(&run, &[("caps", expected_caps)]);
    }
    assert!(!out.join("null").exists());
    assert!(!out.join("sda").exists());
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::metadata(out.join("fifo"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert_eq!(run.ran, ["echo after"]);
    let grant = format!(
        "(grant from {})",
        world.sandbox.agent_dir().join("settings.json").display()
    );
    for what in [
        "io_uring_setup: refused by its seccomp filter: a confined plugin may not use io_uring",
        "io_uring_enter",
        "io_uring_register",
        "name_to_handle_at",
        "open_by_handle_at",
        "mknodat of a character device",
        "mknodat of a block device",
        "fcntl(F_SETLEASE)",
        "chroot",
        "sethostname",
        "ioctl(TIOCSTI)",
        "clone with new namespaces",
        "sysfs: refused by its seccomp filter: it is not among the system calls the sandbox of plugin hostile allows",
    ] {
        named(&run, &world, what, &grant);
    }
    assert_eq!(run.reports_with("mkfifo"), 0, "{:?}", run.errors);
}

#[test]
fn with_exec_granted_a_clone_into_new_namespaces_or_for_the_host_is_still_refused_and_named() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"exec": ["true"]}}});
    let run = run(&world, &settings, &[], &["newns", "clone_parent", "after"]);
    outcomes(&run, &[("newns", REFUSED), ("clone_parent", REFUSED)]);
    let grant = format!(
        "(grant from {})",
        world.sandbox.agent_dir().join("settings.json").display()
    );
    named(
        &run,
        &world,
        "clone with new namespaces: refused by its seccomp filter: a confined plugin may not make namespaces",
        &grant,
    );
    named(&run, &world, "clone with CLONE_PARENT", &grant);
    assert_eq!(run.ran, ["echo after"]);
}

const NOBODY: u32 = 65534;

/// Makes `world` runnable by `nobody`: a copy of the binary in the test's folder, every file
/// handed over. `None` when a folder above it cannot be entered by `nobody` (the caller
/// says the run was skipped).
fn for_nobody(world: &mut World) -> Option<()> {
    use std::os::unix::fs::MetadataExt;
    let mut folder = world.sandbox.root().to_path_buf();
    while let Some(parent) = folder.parent() {
        let mode = std::fs::metadata(parent).unwrap().mode();
        if mode & 0o001 == 0 && parent != std::path::Path::new("/") {
            return None;
        }
        folder = parent.to_path_buf();
    }
    let copy = world.sandbox.root().join("bin/pi-hooks");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&world.binary, &copy).unwrap();
    // A process another test forked while the copy was open for writing holds it until it
    // execs ("text file busy"): wait for the copy to be runnable.
    for _ in 0..100 {
        match std::process::Command::new(&copy).arg("--version").output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => break,
        }
    }
    world.binary = copy;
    hand_over(world.sandbox.root(), NOBODY);
    Some(())
}

/// Runs `attack` as `user` (`None`: this process's user) under a grant of `memoryMiB` 64.
fn run_limits(world: &World, user: Option<u32>, attack: &str) -> Run {
    let settings = json!({"sandbox": {(world.key()): {"memoryMiB": 64}}});
    run_with(world, &settings, &[], &[attack, "after"], |command| {
        if let Some(user) = user {
            use std::os::unix::process::CommandExt;
            command.uid(user).gid(user);
        }
    })
}

/// The threads' outcome: how many started before the bound refused one.
fn threads_bounded(run: &Run) -> usize {
    let outcome = run.outcome("threads");
    let started: usize = outcome
        .strip_prefix("threads: failed after ")
        .and_then(|rest| rest.strip_suffix(" threads: Resource temporarily unavailable"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{outcome}\n{}", run.stderr()));
    assert!(started < 400, "{outcome}");
    started
}

#[test]
fn as_root_a_memory_and_a_pids_cgroup_bound_memfd_memory_threads_and_processes() {
    if !root() {
        eprintln!("skipped: the cgroups are made as root (the fallbacks are tested as nobody)");
        return;
    }
    let world = world();
    let run = run_limits(&world, None, "memfd 256");
    // The cgroups were made: nothing is said lacking.
    assert!(
        !run.stderr().contains("confined without"),
        "{}",
        run.stderr()
    );
    // 256 MiB in a memfd (no address space at all) under memoryMiB 64: the memory cgroup's
    // bound ends the child, which the host reports as a kill by the kernel; the session
    // goes on.
    let memfd = run.outcome("memfd");
    assert!(
        memfd.starts_with("blocked because the isolated plugin \"hostile\""),
        "{memfd}\n{}",
        run.stderr()
    );
    assert!(
        run.errors.iter().any(|e| e["error"]
            .as_str()
            .is_some_and(|t| t.contains("plugin \"hostile\" crashed (SIGKILL)"))),
        "{:?}",
        run.errors
    );
    // The next call is blocked while the child restarts, or handled once it is back.
    assert!(
        run.ran == ["echo after"]
            || run
                .outcome("after")
                .starts_with("blocked because the isolated plugin \"hostile\""),
        "{:?}",
        run.outcomes
    );
    // Threads: bounded by the pids cgroup, root or not, exec or not.
    let run = run_limits(&world, None, "threads 400");
    threads_bounded(&run);
    assert_eq!(run.ran, ["echo after"]);
    // Processes (with exec): bounded by it too, and named; the plugin forks again after.
    let settings = json!({"sandbox": {(world.key()): {"exec": ["true"]}}});
    let run =
        pi_hooks_tests::confined::run(&world, &settings, &[], &["forks 400", "fork", "after"]);
    let outcome = run.outcome("forks");
    let forks: usize = outcome
        .strip_prefix("forks: failed after ")
        .and_then(|rest| rest.strip_suffix(" forks: Resource temporarily unavailable"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{outcome}\n{}", run.stderr()));
    assert!((1..128).contains(&forks), "{outcome}");
    let report = run.report(
        "sandbox denied fork: fork refused: its sandbox allows at most 128 threads and processes at once (exec: true)",
    );
    assert_eq!(report["extensionPath"], world.hostile.to_str().unwrap());
    assert_eq!(
        run.reports_with("sandbox denied fork"),
        1,
        "{:?}",
        run.errors
    );
    outcomes(&run, &[("fork", "ok")]);
    assert_eq!(run.ran, ["echo after"]);
}

#[test]
fn as_an_unprivileged_user_rlimits_bound_memfd_memory_and_threads() {
    let mut world = world();
    let user = if root() {
        if for_nobody(&mut world).is_none() {
            eprintln!(
                "skipped: a folder above {} cannot be entered by nobody",
                world.sandbox.root().display()
            );
            return;
        }
        Some(NOBODY)
    } else {
        None
    };
    let run = run_limits(&world, user, "memfd 256");
    // No cgroup for this user: the child says which fallback applies.
    assert!(
        run.stderr()
            .contains("a memory cgroup (memory outside its address space, a memfd or a tmpfs file, is bounded per file at 64 MiB by RLIMIT_FSIZE)"),
        "{}",
        run.stderr()
    );
    outcomes(&run, &[("memfd", "failed after 64 MiB: File too large")]);
    assert_eq!(run.ran, ["echo after"]);
    // RLIMIT_NPROC counts threads too (its user's tasks when it started, and 64 more).
    let run = run_limits(&world, user, "threads 400");
    threads_bounded(&run);
    assert_eq!(run.ran, ["echo after"]);
}

#[test]
fn a_refused_mremap_growth_is_named_even_right_after_a_refused_malloc_of_its_size() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"memoryMiB": 64}}});
    let run = run(&world, &settings, &[], &["alloc 256", "remap 256", "after"]);
    outcomes(
        &run,
        &[
            ("alloc", "failed 256 MiB: Cannot allocate memory"),
            ("remap", "failed 256 MiB: Cannot allocate memory"),
        ],
    );
    // malloc's own retries (mmap, brk, mmap) are one refusal; the mremap is another.
    assert_eq!(
        run.reports_with("sandbox denied memory: allocation of 256 MiB refused"),
        1,
        "{:?}",
        run.errors
    );
    assert_eq!(
        run.reports_with("sandbox denied memory: allocation of 255 MiB refused"),
        1,
        "{:?}",
        run.errors
    );
    assert_eq!(run.ran, ["echo after"]);
}

#[test]
fn within_the_bounds_memfd_and_threads_work() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"memoryMiB": 64}}});
    let run = run(&world, &settings, &[], &["memfd 16", "threads 16", "after"]);
    outcomes(
        &run,
        &[("memfd", "ok 16 MiB"), ("threads", "ok 16 threads")],
    );
    assert_eq!(run.sandbox_reports(), 0, "{:?}", run.errors);
    assert_eq!(run.ran, ["echo after"]);
}

/// Whether `pid` still runs (not gone, not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The processes whose command line names `what` (a confined child and the processes it
/// forked share its command line).
fn processes_naming(what: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(what))
                && running(*pid)
        })
        .collect()
}

#[test]
fn a_confined_child_and_what_it_started_end_with_a_host_killed_by_sigkill() {
    let world = world();
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        json!({"sandbox": {(world.key()): {"exec": ["true"]}}}).to_string(),
    )
    .unwrap();
    // As root the child's pids cgroup holds a program that left for a session of its own
    // too; elsewhere only the child's process group is ended.
    let mut args = world.run_args();
    let wanted = if root() {
        args.push("daemon");
        2
    } else {
        1
    };
    args.push("hang");
    let mut command = world.sandbox.command_of(&world.binary, &args);
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut host = command.spawn().unwrap();
    let hostile = world.hostile.to_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let confined = loop {
        let found: Vec<u32> = processes_naming(&hostile)
            .into_iter()
            .filter(|pid| *pid != host.id())
            .collect();
        if found.len() >= wanted {
            break found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the child (and its daemon) did not start: {found:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // Let it reach the plugin's hang.
    std::thread::sleep(std::time::Duration::from_secs(1));
    host.kill().unwrap();
    host.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for pid in confined {
        while running(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "{pid}, confined, outlived its host"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
