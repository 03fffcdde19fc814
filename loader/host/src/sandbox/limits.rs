//! What a confined child starts with and may use: a clean environment and no inherited
//! descriptors but the protocol's (both set where the host starts it, [`prepare_command`]),
//! `no_new_privs`, and resource limits ([`apply`], in the child): no core files, the
//! address space from `memoryMiB`, and a bound on processes.

use std::process::Command;

use super::Grant;

/// What a confined child's address space may hold besides its size at start and the
/// plugin's `memoryMiB`: room for the host's own threads and buffers in the child.
const HOST_SLACK_MIB: u64 = 64;

/// How many processes (and threads) a plugin granted `exec` may start beyond those its user
/// runs already (`RLIMIT_NPROC` counts per user).
pub const EXTRA_PROCESSES: u64 = 64;

/// The variables a confined child gets; all others are dropped (API keys and tokens in the
/// host's environment never reach a plugin).
const KEPT_VARIABLES: &[&str] = &["HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TERM"];

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
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR") {
        command.env("PI_CODING_AGENT_DIR", dir);
    }
    use std::os::unix::process::CommandExt;
    let first = u32::try_from(keep + 1).unwrap_or(4);
    // SAFETY: runs in the forked child before exec and makes one system call
    // (close_range), which is async-signal-safe; nothing is allocated or locked.
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
            Ok(())
        });
    }
}

/// Applies `no_new_privs` and the resource limits of `grant` to this process.
pub fn apply(grant: &Grant) -> Result<(), String> {
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
    if !grant.exec.is_empty() {
        // Without `exec` the seccomp filter refuses new processes outright.
        let limit = user_tasks() + EXTRA_PROCESSES;
        set_limit(libc::RLIMIT_NPROC, limit).map_err(|()| fail("RLIMIT_NPROC"))?;
    }
    Ok(())
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
