//! Naming a refused process (a grant with `exec`, where `RLIMIT_NPROC` or a pids cgroup
//! bounds the processes): the calls that start one are notified (`fork` and `vfork` on x86-64,
//! `clone` without `CLONE_THREAD`, which the filter tells apart, and `clone3`, whose flags
//! the supervisor reads). The supervisor cannot start the plugin's process for it, so it
//! asks the kernel whether one would start now ([`new_process_refused`]); if not, the
//! plugin's call is answered `EAGAIN` (what the kernel would answer) and the refusal is
//! named; otherwise the kernel runs the call as made.

use std::cell::UnsafeCell;

/// Whether the call `number` with `args` starts a process (`None`: not one of these calls).
/// `clone3`'s flags are read from the plugin's memory (a bad pointer: left to the kernel).
pub fn starts_process(number: i64, args: &[u64; 6]) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    if number == libc::SYS_fork || number == libc::SYS_vfork {
        return Some(true);
    }
    if number == libc::SYS_clone {
        return Some(args[0] & libc::CLONE_THREAD as u64 == 0);
    }
    if number == libc::SYS_clone3 {
        // struct clone_args begins with its flags (a u64).
        let mut flags = [0u8; 8];
        let read = super::naming::read_memory(args[0], &mut flags);
        return Some(read == 8 && u64::from_ne_bytes(flags) & libc::CLONE_THREAD as u64 == 0);
    }
    None
}

/// The process-starting calls the filter notifies unconditionally (`clone` is notified by
/// its flags, see `super::filter`).
pub const PROCESS_CALLS: &[i64] = &[
    #[cfg(target_arch = "x86_64")]
    libc::SYS_fork,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_vfork,
    libc::SYS_clone3,
];

/// The probe's stack: only the probe's child runs on it, one at a time (the supervisor is
/// the only caller and is suspended while the child runs, `CLONE_VFORK`).
struct ProbeStack(UnsafeCell<[u8; PROBE_STACK]>);

/// The probe's stack size (its child calls one function that returns at once).
const PROBE_STACK: usize = 16 << 10;

// SAFETY: the cell is written only by the probe's child, while the one thread that starts
// it (the supervisor) is suspended; nothing reads it.
unsafe impl Sync for ProbeStack {}

static STACK: ProbeStack = ProbeStack(UnsafeCell::new([0; PROBE_STACK]));

/// The probe's child: returns at once (the C library's `clone` then ends it with `exit`).
extern "C" fn probe_child(_: *mut libc::c_void) -> libc::c_int {
    0
}

/// Whether a new process would be refused now for lack of room under `RLIMIT_NPROC`: starts
/// one and lets it end at once. `EAGAIN` is the kernel's answer to a process past the limit
/// (the check is the same for any new task of this process's user: it is the same user and
/// the same limit). Nothing is allocated and nothing is copied: the probe shares this
/// process's memory (`CLONE_VM`), runs on [`STACK`], and this thread waits until it has
/// ended (`CLONE_VFORK`); it sends no signal at its end (exit signal 0, so the plugin's
/// `wait` does not see it: only a `__WCLONE` or `__WALL` wait does), and is reaped here
/// before the answer, so the count is as before.
pub fn new_process_refused() -> bool {
    let base = STACK.0.get().cast::<u8>();
    // The top of the stack, aligned down to 16 bytes as both ABIs ask.
    let top = base.wrapping_add(PROBE_STACK);
    let top = top.wrapping_sub(top as usize % 16);
    // SAFETY: glibc's clone runs `probe_child` on `top` (the top of a static stack nobody
    // else uses) in a new process sharing this memory, then ends it with exit(2); with
    // CLONE_VFORK this thread is suspended until then, so the stack is used by one at a
    // time. The child inherits this thread's mask (every signal blocked, see
    // `block_signals`): no handler runs in it. It touches nothing but its stack.
    let pid = unsafe {
        libc::clone(
            probe_child,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK,
            std::ptr::null_mut(),
        )
    };
    if pid < 0 {
        return super::errno() == libc::EAGAIN;
    }
    let mut status = 0;
    // SAFETY: waits for the child just started (a clone child: __WCLONE); ECHILD if a
    // plugin's __WALL wait reaped it first, which is as good.
    unsafe { libc::waitpid(pid, &mut status, libc::__WCLONE) };
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_starts_and_reaps_a_process_and_tells_threads_apart() {
        assert!(!new_process_refused());
        // No zombie is left.
        // SAFETY: waitpid with WNOHANG on any clone child of this process.
        let left = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::__WALL | libc::WNOHANG) };
        assert!(left <= 0);
        let thread = [(libc::CLONE_VM | libc::CLONE_THREAD) as u64, 0, 0, 0, 0, 0];
        assert_eq!(starts_process(libc::SYS_clone, &thread), Some(false));
        let fork = [libc::SIGCHLD as u64, 0, 0, 0, 0, 0];
        assert_eq!(starts_process(libc::SYS_clone, &fork), Some(true));
        let args: [u64; 11] = [libc::CLONE_THREAD as u64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let clone3 = [args.as_ptr() as u64, 88, 0, 0, 0, 0];
        assert_eq!(starts_process(libc::SYS_clone3, &clone3), Some(false));
        assert_eq!(starts_process(libc::SYS_openat, &clone3), None);
    }
}
