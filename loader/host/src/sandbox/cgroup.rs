//! Control groups for a confined child, where it can make them (as root, or where its
//! user was delegated its cgroup): a memory cgroup bounds all the memory the plugin uses,
//! however it allocates it (`mmap`, a `memfd`, a file on `tmpfs`: `RLIMIT_AS` counts only
//! its address space), and a pids cgroup bounds its tasks, threads and processes alike,
//! as root too (whom `RLIMIT_NPROC` does not bind). Made in the child before it drops its
//! capabilities ([`super::capabilities`]) and confines itself, beneath the cgroup it was
//! started in (`/proc/self/cgroup`): with cgroup v2 (`/sys/fs/cgroup/cgroup.controllers`)
//! one cgroup with both controllers, with v1 one in the `memory` hierarchy and one in the
//! `pids` hierarchy. Each is called `pi-hooks-<pid>`; one left by a child that has ended
//! is removed by the next child, after it killed what was left in it (a program the plugin
//! started and that outlived it); a running child's is never touched (its pid names a
//! process that runs). When the host ends, the child kills every process in its cgroup
//! ([`end_all`]): nothing the plugin started outlives the host, even a program that left
//! the child's process group or session.
//!
//! Past the memory bound the kernel's OOM killer ends the child (the host reports a kill
//! by the kernel, like a crash); past the task bound a new thread or process fails with
//! `EAGAIN` (a process is named by the supervisor, `super::supervisor`, as for a user
//! bound by `RLIMIT_NPROC`; a thread is not). Where no cgroup can be made, [`super::limits`] falls back on rlimits and says
//! what is left.

use std::path::{Path, PathBuf};

/// How many tasks (threads and processes) a confined child may have at once, its own
/// runtime's threads included: room for the runtime (a few threads), the plugin's threads,
/// and with `exec` its processes.
pub const MAX_TASKS: u64 = 128;

/// The bound on tasks of the pids cgroup this process joined, once [`enter`] made one.
static TASKS_BOUND: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// The bound on this process's tasks (threads and processes) its pids cgroup holds it to.
pub fn tasks_bound() -> Option<u64> {
    TASKS_BOUND.get().copied()
}

/// What the child's cgroups bound.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Memory, in bytes (a memory cgroup was made).
    pub memory: Option<u64>,
    /// Tasks (a pids cgroup was made).
    pub tasks: Option<u64>,
}

/// The cgroup file system's mount point.
const ROOT: &str = "/sys/fs/cgroup";

/// The prefix of the cgroups made here.
const PREFIX: &str = "pi-hooks-";

/// Moves this (single-threaded) process into cgroups of its own that bound its memory to
/// `memory` bytes (if any) and its tasks to `tasks`. What could not be made is left
/// unbounded here (the caller falls back on rlimits); nothing fails.
pub fn enter(memory: Option<u64>, tasks: u64) -> Bounds {
    let bounds = enter_any(memory, tasks);
    if let Some(tasks) = bounds.tasks {
        let _ = TASKS_BOUND.set(tasks);
    }
    bounds
}

fn enter_any(memory: Option<u64>, tasks: u64) -> Bounds {
    let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else {
        return Bounds::default();
    };
    let root = Path::new(ROOT);
    if root.join("cgroup.controllers").exists() {
        return enter_v2(root, &own, memory, tasks);
    }
    let mut bounds = Bounds::default();
    if let Some(bytes) = memory
        && let Some(parent) = v1_path(root, &own, "memory")
        && let Some(group) = make(&parent)
    {
        // memsw: memory and swap together (where swap accounting is on), so swapping
        // does not get around the bound.
        let set = write(&group, "memory.limit_in_bytes", bytes)
            && (!group.join("memory.memsw.limit_in_bytes").exists()
                || write(&group, "memory.memsw.limit_in_bytes", bytes));
        if set && join(&group) {
            bounds.memory = Some(bytes);
        } else {
            let _ = std::fs::remove_dir(&group);
        }
    }
    if let Some(parent) = v1_path(root, &own, "pids")
        && let Some(group) = make(&parent)
    {
        if write(&group, "pids.max", tasks) && join(&group) {
            bounds.tasks = Some(tasks);
        } else {
            let _ = std::fs::remove_dir(&group);
        }
    }
    bounds
}

/// cgroup v2: one cgroup with the memory and pids controllers, if the parent can give them.
fn enter_v2(root: &Path, own: &str, memory: Option<u64>, tasks: u64) -> Bounds {
    let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
        return Bounds::default();
    };
    let parent = root.join(path.trim_start_matches('/'));
    let controllers =
        std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
    let mut wanted = vec!["pids"];
    if memory.is_some() {
        wanted.push("memory");
    }
    for controller in &wanted {
        if !controllers.split_whitespace().any(|c| c == *controller) {
            // Fails where the parent has processes of its own (the "no internal
            // processes" rule) or was not delegated the controller.
            let _ = std::fs::write(
                parent.join("cgroup.subtree_control"),
                format!("+{controller}"),
            );
        }
    }
    let Some(group) = make(&parent) else {
        return Bounds::default();
    };
    let mut bounds = Bounds::default();
    if write(&group, "pids.max", tasks) {
        bounds.tasks = Some(tasks);
    }
    if let Some(bytes) = memory
        && write(&group, "memory.max", bytes)
    {
        let _ = write(&group, "memory.swap.max", 0);
        bounds.memory = Some(bytes);
    }
    if bounds == Bounds::default() || !join(&group) {
        let _ = std::fs::remove_dir(&group);
        return Bounds::default();
    }
    bounds
}

/// The folder of this process's cgroup in the v1 hierarchy of `controller`.
fn v1_path(root: &Path, own: &str, controller: &str) -> Option<PathBuf> {
    let line = own.lines().find(|l| {
        l.split(':')
            .nth(1)
            .is_some_and(|list| list.split(',').any(|c| c == controller))
    })?;
    let path = line.splitn(3, ':').nth(2)?;
    Some(root.join(controller).join(path.trim_start_matches('/')))
}

/// Makes `pi-hooks-<pid>` under `parent`, after removing those of children that have
/// ended (a cgroup with a task in it cannot be removed, and a child's pid names a process
/// that still runs until it ends).
fn make(parent: &Path) -> Option<PathBuf> {
    if let Ok(entries) = std::fs::read_dir(parent) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(PREFIX))
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: kill with signal 0 sends nothing; ESRCH: no such process.
            let gone = unsafe { libc::kill(pid, 0) } != 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
            if gone {
                end_leftovers(&entry.path());
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
    let group = parent.join(format!("{PREFIX}{}", std::process::id()));
    match std::fs::create_dir(&group) {
        Ok(()) => Some(group),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Some(group),
        Err(_) => None,
    }
}

fn write(group: &Path, file: &str, value: u64) -> bool {
    std::fs::write(group.join(file), value.to_string()).is_ok()
}

/// Moves this process into `group`, and keeps its list of processes open (read when the
/// host ends, [`end_all`]).
fn join(group: &Path) -> bool {
    let procs = group.join("cgroup.procs");
    if std::fs::write(&procs, std::process::id().to_string()).is_err() {
        return false;
    }
    if let Ok(file) = std::fs::File::open(&procs) {
        let _ = MEMBERS.set(file);
    }
    true
}

/// The `cgroup.procs` of the first cgroup this process joined (opened before Landlock).
static MEMBERS: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// Kills every process in this process's cgroup but itself: what the plugin started, even
/// a program that left its process group or session (a cgroup cannot be left without
/// write access to the cgroup files, which Landlock refuses). For when the host has ended.
pub fn end_all() {
    use std::os::unix::fs::FileExt;
    let Some(members) = MEMBERS.get() else {
        return;
    };
    let own = std::process::id();
    let mut text = vec![0u8; 64 << 10];
    let Ok(got) = members.read_at(&mut text, 0) else {
        return;
    };
    for pid in String::from_utf8_lossy(&text[..got])
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .filter(|pid| *pid != own)
    {
        // SAFETY: kill takes a pid and a signal, no pointer.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
}

/// Kills what is left in `group`, a cgroup of a child that has ended (its processes are
/// confined plugins' leftovers), so that it can be removed.
fn end_leftovers(group: &Path) {
    let Ok(text) = std::fs::read_to_string(group.join("cgroup.procs")) else {
        return;
    };
    for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        // SAFETY: kill takes a pid and a signal, no pointer.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_v1_controllers_folder() {
        let own = "9:name=systemd:/\n8:pids:/a\n4:memory,foo:/b/c\n0::/\n";
        let root = Path::new("/sys/fs/cgroup");
        assert_eq!(
            v1_path(root, own, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/b/c"))
        );
        assert_eq!(
            v1_path(root, own, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/a"))
        );
        assert_eq!(v1_path(root, own, "cpu"), None);
    }
}
