//! Naming what Landlock refuses. Landlock answers a refused open, create, remove, rename or
//! `execve` with `EACCES` and tells nobody; so a second seccomp filter sends those calls
//! (user notification) to a supervisor thread in the same child, which makes each call
//! itself and hands back its result. When the call failed and the grant explains why (the
//! path is outside it), a `denied` report ([`super::report`]) goes to the host before the
//! plugin's call returns.
//!
//! Why making the call again is exact: the supervisor is a thread of the same process, so it
//! shares the descriptor table, the working directory, the memory the call's pointers point
//! into and the Landlock domain (it was started after Landlock was applied). The kernel's
//! verdict on the supervisor's call is Landlock's verdict on the plugin's; a descriptor it
//! opens is the plugin's. The supervisor is never under the notifying filter (it would wait
//! on itself): it starts before the filter, which is installed on the calling thread only
//! (no `TSYNC`); every thread that thread starts later (the plugin's, serve's worker, the
//! runtime's) inherits it.
//!
//! What is notified: the calls that name a path Landlock governs: `openat`, `openat2`,
//! `truncate`, `mkdirat`, `mknodat`, `unlinkat`, `renameat2`, `linkat`, `symlinkat` (and
//! on x86-64 their older forms `open`, `creat`, `mkdir`, `mknod`, `unlink`, `rmdir`,
//! `rename`, `renameat`, `link`, `symlink`), and, when the grant runs programs, `execve`
//! and `execveat` (without `exec` the seccomp trap filter refuses those, and its verdict
//! comes first). Calls Landlock does not govern (`stat`, `readlink`, `chmod`, ...) are not.
//!
//! How each is answered:
//! - A call from another process (a program the plugin started inherits the filter): the
//!   kernel runs it as made (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`); Landlock, which that
//!   process inherited too, still judges it, but a refusal there is not named.
//! - `execve` / `execveat`: a program the grant does not name is refused (`EACCES`, as
//!   Landlock would) and reported, with the words of the host's own `exec` check; a granted
//!   one runs as made.
//! - Anything else is made again by the supervisor and its result handed back. A refusal
//!   (`EACCES`, `EPERM`, or `EXDEV` for a rename or link across rules) of a path neither the
//!   grant nor the sandbox's own rules (the system's libraries, the plugin's file, ...)
//!   allow is reported, read or write as the call asks. A refusal inside them (the file's
//!   own permissions) is the plugin's business and is not.
//!
//! The supervisor allocates nothing while it answers (a plugin thread may hold the memory
//! allocator's lock while it opens a file); naming a refusal (reading the path, resolving
//! it, the report) happens on a second thread, which the supervisor waits for at most a
//! second before it answers anyway.
//!
//! Limits:
//! - An open that blocks (a FIFO without a writer) blocks the supervisor, and every other
//!   notified call waits with it.
//! - Every notified call is a round trip between two threads (BENCHMARKS.md §13; on
//!   Linux 6.6 and later both are woken on the same CPU, `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`).
//! - A refusal in a process the plugin started is not named.
//! - A program that replaces the child itself by `execve` (not one it forks) finds every
//!   notified call failing with `ENOSYS`: nobody is left to answer.
//! - Calls made through the x32 ABI are not notified (those of another architecture,
//!   32-bit `int 0x80`, are killed by the trap filter).
//! - The plugin shares the process: it can keep its own refusals from being named by
//!   closing or taking over the listener, never get past Landlock by that.
//! - A refused open of the process's own files under `/proc` is not named (the runtime
//!   makes some; they hold nobody's data). An `O_PATH` open (which Landlock does not check)
//!   of `/proc/thread-self` names the supervisor's thread.
//! - On a kernel before 5.19 (no `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV`), a call
//!   interrupted by a signal while the supervisor makes it is made again after the handler:
//!   a `mkdir` then fails with `EEXIST`.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use super::Grant;

/// `seccomp_data.arch` of this machine's own system calls (`AUDIT_ARCH_X86_64`:
/// `EM_X86_64` with the 64-bit and little-endian bits).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;

/// `seccomp_data.arch` of this machine's own system calls (`AUDIT_ARCH_AARCH64`).
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// The listener, once the filter is installed (-1 before).
static LISTENER: AtomicI32 = AtomicI32::new(-1);

/// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP` (linux/seccomp.h, Linux 6.6; not in the libc crate).
const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: libc::c_ulong = 1;

/// How long the supervisor waits for a refusal to be named before it answers anyway.
const NAMING_WAIT: Duration = Duration::from_millis(1000);

/// The longest path read from the plugin's memory (`PATH_MAX`).
const PATH_MAX: usize = 4096;

/// What a notified call asks for.
#[derive(Debug, Clone, Copy)]
enum Access {
    /// An open: read or write by its flags.
    Open(OpenFlags),
    /// A change of a folder's entries or of a file (a write), with its verb for the report.
    Change(&'static str),
    /// Running a program.
    Exec,
}

/// Where an open's flags are.
#[derive(Debug, Clone, Copy)]
enum OpenFlags {
    /// In this argument.
    Arg(usize),
    /// In the `struct open_how` this argument points at (its first field).
    How(usize),
    /// `creat`: always a write.
    Create,
}

/// One notified call: its number, what it asks for, and the paths it names, each as (the
/// argument holding the folder descriptor it is relative to, if any; the argument holding
/// the path).
struct Call {
    number: i64,
    access: Access,
    paths: &'static [(Option<usize>, usize)],
}

/// The calls whose refusals are named (see the module's text).
const CALLS: &[Call] = &[
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_open,
        access: Access::Open(OpenFlags::Arg(1)),
        paths: &[(None, 0)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_creat,
        access: Access::Open(OpenFlags::Create),
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_openat,
        access: Access::Open(OpenFlags::Arg(2)),
        paths: &[(Some(0), 1)],
    },
    Call {
        number: libc::SYS_openat2,
        access: Access::Open(OpenFlags::How(2)),
        paths: &[(Some(0), 1)],
    },
    Call {
        number: libc::SYS_truncate,
        access: Access::Change("truncate"),
        paths: &[(None, 0)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_mkdir,
        access: Access::Change("mkdir"),
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_mkdirat,
        access: Access::Change("mkdir"),
        paths: &[(Some(0), 1)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_mknod,
        access: Access::Change("mknod"),
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_mknodat,
        access: Access::Change("mknod"),
        paths: &[(Some(0), 1)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_unlink,
        access: Access::Change("remove"),
        paths: &[(None, 0)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_rmdir,
        access: Access::Change("remove"),
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_unlinkat,
        access: Access::Change("remove"),
        paths: &[(Some(0), 1)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_rename,
        access: Access::Change("rename"),
        paths: &[(None, 0), (None, 1)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_renameat,
        access: Access::Change("rename"),
        paths: &[(Some(0), 1), (Some(2), 3)],
    },
    Call {
        number: libc::SYS_renameat2,
        access: Access::Change("rename"),
        paths: &[(Some(0), 1), (Some(2), 3)],
    },
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_link,
        access: Access::Change("link"),
        paths: &[(None, 0), (None, 1)],
    },
    Call {
        number: libc::SYS_linkat,
        access: Access::Change("link"),
        paths: &[(Some(0), 1), (Some(2), 3)],
    },
    // The link's target is only text; the new name is what is created.
    #[cfg(target_arch = "x86_64")]
    Call {
        number: libc::SYS_symlink,
        access: Access::Change("symlink"),
        paths: &[(None, 1)],
    },
    Call {
        number: libc::SYS_symlinkat,
        access: Access::Change("symlink"),
        paths: &[(Some(1), 2)],
    },
    Call {
        number: libc::SYS_execve,
        access: Access::Exec,
        paths: &[(None, 0)],
    },
    Call {
        number: libc::SYS_execveat,
        access: Access::Exec,
        paths: &[(Some(0), 1)],
    },
];

fn call(number: i64) -> Option<&'static Call> {
    CALLS.iter().find(|c| c.number == number)
}

/// Whether a successful call returns a new descriptor (closed again if its answer cannot be
/// delivered).
fn returns_descriptor(number: i64) -> bool {
    call(number).is_some_and(|c| matches!(c.access, Access::Open(_)))
}

/// Starts naming the refusals of the Landlock domain this (single-threaded, Landlock
/// applied, `no_new_privs` set) process is in: the naming and supervising threads, then
/// the notifying filter on the calling thread. `also_readable` / `also_writable`: what the
/// sandbox lets the child reach besides `grant`. `Err`: what is missing, in the words of
/// the "confined without ..." line.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn start(
    grant: &Grant,
    also_readable: &[PathBuf],
    also_writable: &[PathBuf],
) -> Result<(), String> {
    let missing = |why: &dyn std::fmt::Display| {
        format!(
            "naming of the file accesses Landlock refuses ({why}; Landlock still refuses them, unnamed)"
        )
    };
    user_notification_available().map_err(|e| missing(&e))?;
    let numbers: Vec<i64> = CALLS
        .iter()
        .filter(|c| !matches!(c.access, Access::Exec) || !grant.exec.is_empty())
        .map(|c| c.number)
        .collect();
    let program = filter(&numbers);
    // Within the sandbox's reach: the grant, and what the child needs to run.
    let mut reach = grant.clone();
    reach.read.extend_from_slice(also_readable);
    reach.write.extend_from_slice(also_writable);
    let namer = Namer {
        grant: grant.clone(),
        reach,
    };
    let (to_supervisor, listener) = std::sync::mpsc::channel::<OwnedFd>();
    let link = start_naming(namer).map_err(|e| missing(&e))?;
    std::thread::Builder::new()
        .name("pi-hooks-sandbox-supervisor".into())
        // Its frames are small; the address space counts against `memoryMiB`'s slack.
        .stack_size(256 << 10)
        .spawn(move || {
            block_signals();
            if let Ok(listener) = listener.recv() {
                use std::os::fd::IntoRawFd;
                // Kept open for good: the naming thread checks ids against it.
                let fd = listener.into_raw_fd();
                // Linux 6.6: the supervisor is woken on the caller's CPU and the caller on
                // the supervisor's, as one hand-off (a round trip costs a fraction of two
                // cross-CPU wake-ups). Without it (an older kernel), the same, slower.
                // SAFETY: SET_FLAGS takes the flags as its argument, no pointer.
                unsafe {
                    libc::ioctl(
                        fd,
                        libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS,
                        SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
                    )
                };
                LISTENER.store(fd, Ordering::Release);
                supervise(fd, &link);
            }
        })
        .map_err(|e| missing(&e))?;
    let fd = install(&program).map_err(|e| missing(&e))?;
    to_supervisor
        .send(fd)
        .map_err(|_| missing(&"the supervisor thread ended"))?;
    Ok(())
}

/// Elsewhere the filter's architecture check has no value to compare with.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn start(
    _grant: &Grant,
    _also_readable: &[PathBuf],
    _also_writable: &[PathBuf],
) -> Result<(), String> {
    Err("naming of the file accesses Landlock refuses (only on x86-64 and AArch64; Landlock still refuses them, unnamed)".to_owned())
}

/// Whether the kernel offers the user-notification action (Linux 5.0; its `CONTINUE`
/// answer came in 5.5, before Landlock's 5.13).
fn user_notification_available() -> std::io::Result<()> {
    let action: u32 = libc::SECCOMP_RET_USER_NOTIF;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 from the pointer, a local.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The notifying filter: the calls in `numbers` of this machine's own ABI are sent to the
/// listener, everything else is allowed (the trap filter, installed before, still judges
/// it; seccomp runs every filter and the strictest answer wins, so a call the trap filter
/// refuses is refused, not notified).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn filter(numbers: &[i64]) -> Vec<libc::sock_filter> {
    let n = numbers.len();
    assert!(n < 250, "a BPF jump reaches at most 255 instructions");
    let statement = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    // Compares the accumulator with `k`: `jt` / `jf` instructions forward when equal / not.
    let jump_if_equal = |k: u32, jt: usize, jf: usize| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: jt as u8,
        jf: jf as u8,
        k,
    };
    let mut program = Vec::with_capacity(n + 5);
    // 0: load seccomp_data.arch (a u32 at offset 4).
    program.push(statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4));
    // 1: another ABI's call jumps to instruction 3 + n, "allow" (the trap filter, which
    //    checks the ABI itself, judges it).
    program.push(jump_if_equal(AUDIT_ARCH, 0, n + 1));
    // 2: load seccomp_data.nr (an int at offset 0).
    program.push(statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0));
    // 3 .. 3 + n: one comparison per notified call; the i-th jumps n - i forward, to the
    //    last instruction, "notify"; otherwise on to the next comparison.
    for (i, number) in numbers.iter().enumerate() {
        program.push(jump_if_equal(*number as u32, n - i, 0));
    }
    // 3 + n: none of them: allow.
    program.push(statement(
        libc::BPF_RET | libc::BPF_K,
        libc::SECCOMP_RET_ALLOW,
    ));
    // 4 + n: notify the listener.
    program.push(statement(
        libc::BPF_RET | libc::BPF_K,
        libc::SECCOMP_RET_USER_NOTIF,
    ));
    program
}

/// Installs `program` on the calling thread only and returns its listener. With
/// `WAIT_KILLABLE_RECV` (Linux 5.19) a call the supervisor has taken up is no longer
/// interrupted by a signal (it would be made twice); without it where the kernel lacks it.
fn install(program: &[libc::sock_filter]) -> std::io::Result<OwnedFd> {
    let fprog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    let tries = [
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
    ];
    let mut last = std::io::Error::from_raw_os_error(libc::EINVAL);
    for flags in tries {
        // SAFETY: `fprog` points at `program`, alive for the call; the kernel copies it.
        // no_new_privs is set (limits::apply), so an unprivileged process may install it.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel returned a new descriptor (the listener), owned by nobody
            // else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        }
        last = std::io::Error::last_os_error();
        if last.raw_os_error() != Some(libc::EINVAL) {
            break;
        }
    }
    Err(last)
}

/// Blocks every signal on the calling thread (the supervisor and the namer take none: a
/// signal for the process goes to another thread, and their waits are not interrupted).
fn block_signals() {
    // SAFETY: a local signal set filled by sigfillset, then applied to this thread.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
    }
}

/// The last error's number (no allocation).
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The supervisor's loop: takes each notification and answers it (see the module's text).
fn supervise(fd: RawFd, link: &NamingLink) {
    // SAFETY: getpid has no preconditions.
    let own = unsafe { libc::getpid() };
    loop {
        // SAFETY: an all-zero seccomp_notif is what RECV expects (it refuses anything else).
        let mut request: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: RECV fills the seccomp_notif passed, a local of the right type.
        if unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut request) } != 0 {
            match errno() {
                // The caller went away before its call was taken up, or a stray wake-up.
                libc::EINTR | libc::ENOENT => continue,
                _ => return,
            }
        }
        let mut response = libc::seccomp_notif_resp {
            id: request.id,
            val: 0,
            error: 0,
            flags: 0,
        };
        let number = i64::from(request.data.nr);
        // SAFETY: tgkill with signal 0 sends nothing; it only says whether the thread
        // `pid` belongs to this process (ESRCH when not).
        let ours = unsafe { libc::syscall(libc::SYS_tgkill, own, request.pid, 0) } == 0;
        let access = call(number).map(|c| c.access);
        let mut made: Option<i64> = None;
        match access {
            None => response.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
            Some(_) if !ours => response.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
            Some(Access::Exec) => {
                if link.ask(&request) == Verdict::Refuse {
                    response.error = -libc::EACCES;
                } else {
                    response.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32;
                }
            }
            Some(_) => {
                let a = request.data.args;
                // SAFETY: the same call with the same arguments the plugin's thread made,
                // from a thread of the same process (same memory, descriptors, working
                // directory and Landlock domain); the kernel checks them as it would have.
                let result = unsafe {
                    libc::syscall(
                        number as libc::c_long,
                        a[0] as libc::c_long,
                        a[1] as libc::c_long,
                        a[2] as libc::c_long,
                        a[3] as libc::c_long,
                        a[4] as libc::c_long,
                        a[5] as libc::c_long,
                    )
                };
                if result < 0 {
                    let error = errno();
                    if matches!(error, libc::EACCES | libc::EPERM | libc::EXDEV) {
                        link.ask(&request);
                    }
                    response.error = -error;
                } else {
                    response.val = result;
                    made = Some(result);
                }
            }
        }
        // SAFETY: SEND reads the seccomp_notif_resp passed, a local of the right type.
        let sent = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response) };
        if sent != 0
            && let Some(descriptor) = made
            && returns_descriptor(number)
        {
            // The caller is gone (killed, or interrupted where the kernel lacks
            // WAIT_KILLABLE_RECV): the descriptor opened for it is nobody's.
            // SAFETY: the descriptor was opened by the call above and handed to no one.
            unsafe { libc::close(descriptor as RawFd) };
        }
    }
}

/// What the naming thread says of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Answer as planned (a refusal was reported, or there was nothing to report).
    Proceed,
    /// Refuse it (`execve` of a program the grant does not name; it was reported).
    Refuse,
}

/// One call passed to the naming thread: id, number, six arguments.
const JOB_WORDS: usize = 8;

/// One answer of the naming thread: id and verdict.
const VERDICT_BYTES: usize = 16;

/// The supervisor's end of the pipes to the naming thread.
struct NamingLink {
    /// Write end, non-blocking: a stuck naming thread never stalls the supervisor.
    jobs: OwnedFd,
    /// Read end of the verdicts.
    verdicts: OwnedFd,
}

impl NamingLink {
    /// Passes a call to the naming thread and waits at most [`NAMING_WAIT`] for its
    /// verdict; without one, [`Verdict::Proceed`].
    fn ask(&self, request: &libc::seccomp_notif) -> Verdict {
        let mut job = [0u8; JOB_WORDS * 8];
        let words = [
            request.id,
            i64::from(request.data.nr) as u64,
            request.data.args[0],
            request.data.args[1],
            request.data.args[2],
            request.data.args[3],
            request.data.args[4],
            request.data.args[5],
        ];
        for (slot, word) in job.chunks_exact_mut(8).zip(words) {
            slot.copy_from_slice(&word.to_ne_bytes());
        }
        // SAFETY: write(2) of a local buffer; a pipe write under PIPE_BUF is atomic.
        let wrote = unsafe { libc::write(self.jobs.as_raw_fd(), job.as_ptr().cast(), job.len()) };
        if wrote != job.len() as isize {
            return Verdict::Proceed;
        }
        let deadline = Instant::now() + NAMING_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Verdict::Proceed;
            }
            let mut poll = libc::pollfd {
                fd: self.verdicts.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll(2) on one local pollfd.
            if unsafe { libc::poll(&mut poll, 1, left.as_millis().max(1) as i32) } != 1 {
                continue;
            }
            let mut answer = [0u8; VERDICT_BYTES];
            // SAFETY: read(2) into a local buffer; the naming thread writes whole answers.
            let got = unsafe {
                libc::read(
                    self.verdicts.as_raw_fd(),
                    answer.as_mut_ptr().cast(),
                    answer.len(),
                )
            };
            if got == 0 {
                return Verdict::Proceed;
            }
            if got != VERDICT_BYTES as isize {
                continue;
            }
            let mut id = [0u8; 8];
            id.copy_from_slice(&answer[..8]);
            // An answer that came too late for an earlier call is skipped.
            if u64::from_ne_bytes(id) == request.id {
                return if answer[8] == 1 {
                    Verdict::Refuse
                } else {
                    Verdict::Proceed
                };
            }
        }
    }
}

/// What the naming thread knows.
struct Namer {
    /// The grant, for the reports' words.
    grant: Grant,
    /// The grant with what the sandbox also lets the child reach: a refusal of a path in it
    /// is not the grant's doing.
    reach: Grant,
}

/// Starts the naming thread.
fn start_naming(namer: Namer) -> std::io::Result<NamingLink> {
    use rustix::pipe::{PipeFlags, pipe_with};
    let (job_read, job_write) = pipe_with(PipeFlags::CLOEXEC)?;
    let (verdict_read, verdict_write) = pipe_with(PipeFlags::CLOEXEC)?;
    rustix::fs::fcntl_setfl(&job_write, rustix::fs::OFlags::NONBLOCK)?;
    std::thread::Builder::new()
        .name("pi-hooks-sandbox-naming".into())
        .stack_size(1 << 20)
        .spawn(move || {
            block_signals();
            let mut jobs = std::fs::File::from(job_read);
            let verdicts = std::fs::File::from(verdict_write);
            let mut job = [0u8; JOB_WORDS * 8];
            while jobs.read_exact(&mut job).is_ok() {
                let mut words = [0u64; JOB_WORDS];
                for (word, bytes) in words.iter_mut().zip(job.chunks_exact(8)) {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(bytes);
                    *word = u64::from_ne_bytes(b);
                }
                let mut args = [0u64; 6];
                args.copy_from_slice(&words[2..8]);
                let verdict = namer.name(words[0], words[1] as i64, &args);
                let mut answer = [0u8; VERDICT_BYTES];
                answer[..8].copy_from_slice(&words[0].to_ne_bytes());
                answer[8] = u8::from(verdict == Verdict::Refuse);
                let _ = std::io::Write::write_all(&mut &verdicts, &answer);
            }
        })?;
    Ok(NamingLink {
        jobs: job_write,
        verdicts: verdict_read,
    })
}

impl Namer {
    /// Names the refusal of the call `id`, `number` with `args` (or decides an `execve`),
    /// reporting it when the grant explains it.
    fn name(&self, id: u64, number: i64, args: &[u64; 6]) -> Verdict {
        let Some(call) = call(number) else {
            return Verdict::Proceed;
        };
        let mut paths = Vec::new();
        // An empty path names the descriptor itself (AT_EMPTY_PATH: fexecve and its kin).
        let mut by_descriptor = false;
        for (dir, path) in call.paths {
            let Some(text) = read_path(args[*path]) else {
                return Verdict::Proceed;
            };
            by_descriptor |= text.as_os_str().is_empty();
            let dir = dir.map(|d| args[d] as i32).unwrap_or(libc::AT_FDCWD);
            let Some(resolved) = resolve(dir, &text) else {
                return Verdict::Proceed;
            };
            paths.push(resolved);
        }
        let flags = match call.access {
            Access::Open(flags) => open_flags(flags, args),
            _ => Some(0),
        };
        // What was read belongs to a call still waiting (its thread may have been killed
        // meanwhile).
        let listener = LISTENER.load(Ordering::Acquire);
        if listener < 0 {
            return Verdict::Proceed;
        }
        // SAFETY: ID_VALID reads the u64 passed, a local.
        let valid = unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id) };
        if valid != 0 {
            return Verdict::Proceed;
        }
        let Some(flags) = flags else {
            return Verdict::Proceed;
        };
        match call.access {
            Access::Exec => self.name_exec(&paths[0], by_descriptor),
            Access::Open(_) => {
                let write = flags & libc::O_ACCMODE != libc::O_RDONLY
                    || flags & (libc::O_CREAT | libc::O_TRUNC) != 0;
                self.name_change(if write { "write" } else { "read" }, &paths, write);
                Verdict::Proceed
            }
            Access::Change(verb) => {
                self.name_change(verb, &paths, true);
                Verdict::Proceed
            }
        }
    }

    /// A program the grant does not name is refused and reported; a path where nothing is
    /// is left to the kernel (`ENOENT`). A program run from a descriptor is refused unless
    /// that descriptor's file is a granted one (a `memfd`, which Landlock lets run, is not).
    fn name_exec(&self, program: &Path, by_descriptor: bool) -> Verdict {
        let missing = !by_descriptor && std::fs::metadata(program).is_err();
        if missing || self.grant.allows_program(program) {
            return Verdict::Proceed;
        }
        let reason = super::exec_refusal(&program.display().to_string(), &self.grant);
        super::report::denied("execve", &reason, &self.grant);
        Verdict::Refuse
    }

    /// Reports the first of `paths` the sandbox does not let the plugin reach.
    fn name_change(&self, verb: &str, paths: &[PathBuf], write: bool) {
        let Some(outside) = paths
            .iter()
            .find(|p| !self.reach.allows_path(p, write) && !own_process_file(p))
        else {
            return;
        };
        if let Err(reason) = super::check_path(&self.grant, verb, outside, write) {
            super::report::denied(verb, &reason, &self.grant);
        }
    }
}

/// Whether `path` is one of this process's own files under `/proc` (the runtime reads its
/// cgroup and mount table there; Landlock refuses it, which is nobody's business).
fn own_process_file(path: &Path) -> bool {
    // SAFETY: getpid has no preconditions.
    let own = unsafe { libc::getpid() }.to_string();
    let Ok(rest) = path.strip_prefix("/proc") else {
        return false;
    };
    rest.components().next().is_some_and(|first| {
        let first = first.as_os_str();
        first == "self" || first == "thread-self" || first == own.as_str()
    }) || rest.starts_with("sys/vm/overcommit_memory")
}

/// The flags of an open.
fn open_flags(flags: OpenFlags, args: &[u64; 6]) -> Option<i32> {
    match flags {
        OpenFlags::Arg(i) => Some(args[i] as i32),
        OpenFlags::Create => Some(libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC),
        OpenFlags::How(i) => {
            let mut flags = [0u8; 8];
            (read_memory(args[i], &mut flags) == 8).then(|| u64::from_ne_bytes(flags) as i32)
        }
    }
}

/// Reads what this process holds at `address` into `buffer`, page by page, through
/// `process_vm_readv` (a bad address gives an error, not a fault); returns how much was
/// read.
fn read_memory(address: u64, buffer: &mut [u8]) -> usize {
    const PAGE: u64 = 4096;
    // SAFETY: getpid has no preconditions.
    let own = unsafe { libc::getpid() };
    let mut done = 0;
    while done < buffer.len() {
        let at = address + done as u64;
        let chunk = ((PAGE - at % PAGE) as usize).min(buffer.len() - done);
        let local = libc::iovec {
            iov_base: buffer[done..].as_mut_ptr().cast(),
            iov_len: chunk,
        };
        let remote = libc::iovec {
            iov_base: at as *mut libc::c_void,
            iov_len: chunk,
        };
        // SAFETY: the local iovec covers `chunk` bytes of `buffer`; the remote one is only
        // read by the kernel, which checks it.
        let got = unsafe { libc::process_vm_readv(own, &local, 1, &remote, 1, 0) };
        if got <= 0 {
            break;
        }
        done += got as usize;
        if (got as usize) < chunk {
            break;
        }
    }
    done
}

/// The NUL-terminated path at `address`.
fn read_path(address: u64) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut text = Vec::new();
    let mut chunk = [0u8; 256];
    while text.len() < PATH_MAX {
        let got = read_memory(address + text.len() as u64, &mut chunk);
        if got == 0 {
            return None;
        }
        if let Some(end) = chunk[..got].iter().position(|b| *b == 0) {
            text.extend_from_slice(&chunk[..end]);
            return Some(PathBuf::from(std::ffi::OsStr::from_bytes(&text)));
        }
        text.extend_from_slice(&chunk[..got]);
    }
    None
}

/// `path` made absolute against the folder descriptor `dir` (`AT_FDCWD`: the working
/// directory); an empty path names `dir` itself (`AT_EMPTY_PATH`). `.` and `..` are taken out.
fn resolve(dir: i32, path: &Path) -> Option<PathBuf> {
    if path.is_absolute() {
        return Some(super::grant::normalize(path));
    }
    let base = if dir == libc::AT_FDCWD {
        std::env::current_dir().ok()?
    } else {
        std::fs::read_link(format!("/proc/self/fd/{dir}")).ok()?
    };
    if path.as_os_str().is_empty() {
        return Some(base);
    }
    Some(super::grant::normalize(&base.join(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_jumps_to_notify_or_allow() {
        let program = filter(&[10, 20, 30]);
        assert_eq!(program.len(), 8);
        // A call of another ABI lands on "allow".
        assert_eq!(1 + 1 + program[1].jf as usize, 6);
        assert_eq!(program[6].k, libc::SECCOMP_RET_ALLOW);
        // Each listed call lands on "notify".
        for i in 0..3 {
            assert_eq!(program[3 + i].k, [10, 20, 30][i]);
            assert_eq!(3 + i + 1 + program[3 + i].jt as usize, 7);
        }
        assert_eq!(program[7].k, libc::SECCOMP_RET_USER_NOTIF);
    }

    #[test]
    fn reads_paths_and_resolves_them() {
        let text = b"/a/b/../c\0";
        assert_eq!(
            read_path(text.as_ptr() as u64).as_deref(),
            Some(Path::new("/a/b/../c"))
        );
        assert_eq!(read_path(0), None);
        assert_eq!(
            resolve(libc::AT_FDCWD, Path::new("/a/b/../c")),
            Some(PathBuf::from("/a/c"))
        );
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(resolve(libc::AT_FDCWD, Path::new("x")), Some(cwd.join("x")));
        let dir = std::fs::File::open("/usr").unwrap();
        assert_eq!(
            resolve(dir.as_raw_fd(), Path::new("lib/../bin")),
            Some(PathBuf::from("/usr/bin"))
        );
        assert_eq!(
            resolve(dir.as_raw_fd(), Path::new("")),
            Some(PathBuf::from("/usr"))
        );
        assert!(own_process_file(Path::new("/proc/self/cgroup")));
        assert!(!own_process_file(Path::new("/proc/1/environ")));
    }
}
