//! What a confined child starts with and may use: a clean environment and no inherited
//! descriptors but the protocol's (both set where the host starts it, [`prepare_command`],
//! which also makes the host non-dumpable: [`protect_host`]), `no_new_privs`, and resource
//! limits ([`apply`], in the child): no core files, the address space from `memoryMiB`, and
//! a bound on processes and threads.
//!
//! Memory: `RLIMIT_AS` bounds the address space (its refusals are named by the supervisor);
//! what is not in the address space (a `memfd` or a `tmpfs` file written, not mapped) is
//! bounded by the memory cgroup ([`super::cgroup`]) where one could be made, else each such
//! file by `RLIMIT_FSIZE` at `memoryMiB` (a write past it fails with `EFBIG`; `SIGXFSZ` is
//! ignored), which bounds one file, not how many. Tasks: the pids cgroup where one could be
//! made; else `RLIMIT_NPROC` (its user's tasks now, and [`EXTRA_PROCESSES`] more), which
//! does not bind root: as root without a pids cgroup, threads and (with `exec`) processes
//! are not bounded, and the child says so on stderr. Limits cannot be raised back: the
//! seccomp filter refuses `setrlimit` and `prlimit64` with a new limit.

use std::process::Command;

use super::Grant;

/// What a confined child's address space may hold besides its size at start and the
/// plugin's `memoryMiB`: room for the host's own threads and buffers in the child.
const HOST_SLACK_MIB: u64 = 64;

/// How many processes and threads a confined child that is not root may start beyond those
/// its user runs already (`RLIMIT_NPROC` counts per user), where no pids cgroup bounds it.
pub const EXTRA_PROCESSES: u64 = 64;

/// The variables a confined child gets; all others are dropped (API keys and tokens in the
/// host's environment never reach a plugin).
/// `PI_HOOKS_LOG` is a log level, kept so a confined plugin's `log` follows it as in process.
const KEPT_VARIABLES: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "TZ",
    "TERM",
    "PI_HOOKS_LOG",
];

/// Sets up `command` (the `serve` child of a confined plugin): a clean environment (the
/// `KEPT_VARIABLES`, the `PATH` its grant's programs were found through, `TMPDIR`) and, in the forked child, every descriptor
/// above the protocol's (`keep`) marked close-on-exec, so none the host inherited or opened
/// reaches the plugin. `grant` is the one the child will confine itself to.
pub fn prepare_command(command: &mut Command, keep: i32, grant: &Grant) {
    let kept: Vec<(String, std::ffi::OsString)> = KEPT_VARIABLES
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|v| ((*name).to_owned(), v)))
        .collect();
    command.env_clear();
    command.envs(kept);
    command.env("PATH", super::grant::search_path());
    command.env("TMPDIR", std::env::temp_dir());
    // glibc reserves 64 MiB of address space per malloc arena; a handful of threads would
    // otherwise eat a small `memoryMiB` before the plugin allocates anything. With a memory
    // grant, one arena: glibc would otherwise try, and fail, to reserve a new one again and
    // again (each try an allocation refused by the limit, made through the supervisor).
    let arenas = if grant.memory_mib.is_some() { "1" } else { "2" };
    command.env("MALLOC_ARENA_MAX", arenas);
    protect_host();
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR") {
        command.env("PI_CODING_AGENT_DIR", dir);
    }
    use std::os::unix::process::CommandExt;
    let first = u32::try_from(keep + 1).unwrap_or(4);
    // PR_SET_PDEATHSIG follows the thread that forks the child, not the host: set only when
    // that is the host's main thread, which lasts as long as the host (a child started from
    // another thread ends with the host through the pidfd its seccomp reporting thread
    // watches, `super::seccomp`).
    let host = std::process::id();
    // SAFETY: gettid has no preconditions.
    let main_thread = unsafe { libc::gettid() } as u32 == host;
    // SAFETY: runs in the forked child before exec and makes only system calls
    // (close_range, prctl, getppid, kill), which are async-signal-safe; nothing is
    // allocated or locked.
    unsafe {
        command.pre_exec(move || {
            // CLOSE_RANGE_CLOEXEC (Linux 5.11): closed at exec, so the standard library's
            // own error pipe still works until then.
            let _ = libc::syscall(
                libc::SYS_close_range,
                first,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if main_thread {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                // The host ended before the signal was asked for.
                if libc::getppid() as u32 != host {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
            }
            Ok(())
        });
    }
}

/// What a confined child's memory cgroup may hold for a grant of `memoryMiB` `mib`.
pub fn memory_bound(mib: u64) -> u64 {
    (mib + HOST_SLACK_MIB) * 1024 * 1024
}

/// Makes the host (this process) non-dumpable before it starts a confined child: its
/// `/proc/<pid>/environ`, `mem` and the like then refuse readers of the same user who lack
/// `CAP_SYS_PTRACE` (the child drops it), and nothing can attach to it. Kept for the rest of
/// the host's life (no core dump of the host then either).
pub fn protect_host() {
    // SAFETY: prctl with constant arguments changes only this process's flag.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

/// Applies `no_new_privs` and the resource limits of `grant` to this process, which is in
/// the cgroups that gave `bounds`. `Ok`: what is left unbounded, in the words of the
/// "confined without ..." line.
pub fn apply(grant: &Grant, bounds: &super::cgroup::Bounds) -> Result<Vec<String>, String> {
    let fail = |what: &str| {
        format!(
            "cannot confine plugin {}: {what} failed ({})",
            grant.plugin,
            std::io::Error::last_os_error()
        )
    };
    // SAFETY: prctl with constant arguments changes only this process's flags.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(fail("PR_SET_NO_NEW_PRIVS"));
    }
    set_limit(libc::RLIMIT_CORE, 0).map_err(|()| fail("RLIMIT_CORE"))?;
    if let Some(mib) = grant.memory_mib {
        let now = address_space_bytes().unwrap_or(0);
        let limit = now + (mib + HOST_SLACK_MIB) * 1024 * 1024;
        set_limit(libc::RLIMIT_AS, limit).map_err(|()| fail("RLIMIT_AS"))?;
    }
    let mut lacking = Vec::new();
    if let Some(mib) = grant.memory_mib
        && bounds.memory.is_none()
    {
        // SAFETY: SIG_IGN for SIGXFSZ: a write past RLIMIT_FSIZE then fails with EFBIG
        // instead of ending the process.
        unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
        set_limit(libc::RLIMIT_FSIZE, mib * 1024 * 1024).map_err(|()| fail("RLIMIT_FSIZE"))?;
        lacking.push(format!(
            "a memory cgroup (memory outside its address space, a memfd or a tmpfs file, is bounded per file at {mib} MiB by RLIMIT_FSIZE)"
        ));
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if bounds.tasks.is_none() {
        if root {
            lacking.push(
                "a bound on its threads and processes (no pids cgroup could be made, and RLIMIT_NPROC does not bind root)"
                    .to_owned(),
            );
        } else {
            // Threads count too: without `exec` the seccomp filter refuses new processes.
            let limit = user_tasks() + EXTRA_PROCESSES;
            set_limit(libc::RLIMIT_NPROC, limit).map_err(|()| fail("RLIMIT_NPROC"))?;
        }
    }
    Ok(lacking)
}

fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> Result<(), ()> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: setrlimit reads the struct we pass for the duration of the call.
    if unsafe { libc::setrlimit(resource, &limit) } == 0 {
        Ok(())
    } else {
        Err(())
    }
}

/// This process's address space now (`VmSize`), bytes.
fn address_space_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// How many tasks (processes and threads) this process's user runs now: what
/// `RLIMIT_NPROC` is counted against.
fn user_tasks() -> u64 {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .map(|e| std::fs::read_dir(e.path().join("task")).map_or(1, |tasks| tasks.count() as u64))
        .sum()
}
