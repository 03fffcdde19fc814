//! Naming what Landlock refuses. Landlock answers a refused open, create, remove, rename or
//! `execve` with `EACCES` and tells nobody; so a second seccomp filter sends those calls
//! (user notification) to a supervisor thread in the same child, which makes each call
//! itself and hands back its result. When the call failed and the grant explains why (the
//! path is outside it), a `denied` report ([`super::report`]) goes to the host before the
//! plugin's call returns. It names the two limits the same way: an allocation past
//! `memoryMiB` (`memory`) and a process past the bound on processes (`processes`).
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
//! comes first). Whatever the grant, the calls neither Landlock nor the trap filter can
//! judge, which the supervisor checks and makes itself (`checked`): `connect`, `bind`,
//! `sendmsg`, `sendmmsg` and `sendto` with an address (every `sendto` when a wildcard host
//! is granted: the plugin's DNS queries are read), and `chmod`, `fchmodat(2)`, `fchmod`, the
//! `chown` family, `utimensat` (`utime`, `utimes`, `futimesat`), the `setxattr` and
//! `removexattr` families and `inotify_add_watch`. Looks (`stat`, `statx`, `readlink`,
//! `access`) are not: written in `checked`, left off for their cost and what they break.
//! With `memoryMiB`: `mmap`, `mremap` and `brk`. With `exec` (and, as root, whom
//! `RLIMIT_NPROC` does not bind, only in a pids cgroup, `super::cgroup`): `fork` and
//! `vfork` (x86-64), `clone` without `CLONE_THREAD` (the filter tests its flags) and
//! `clone3` (its flags are in memory: every `clone3`, threads too, comes to the supervisor,
//! which reads them; the trap filter answers it `ENOSYS` first, `super::seccomp`).
//!
//! How each is answered:
//! - A call from another process (a program the plugin started inherits the filter): the
//!   kernel runs it as made (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`); Landlock, which that
//!   process inherited too, still judges it, but a refusal there is not named.
//! - `execve` / `execveat`: a program the grant does not name is refused (`EACCES`, as
//!   Landlock would) and reported, with the words of the host's own `exec` check; a granted
//!   one runs as made.
//! - `mmap`, `mremap`, `brk`: made again (the same address space: the mapping made is the
//!   plugin's) and the result handed back. One that failed for lack of room under
//!   `RLIMIT_AS` is named, once per burst of retries (`memory`).
//! - A new process: the supervisor cannot make it for the plugin, so it starts a probe (a
//!   `CLONE_VM | CLONE_VFORK` child that ends at once, `processes`); if the kernel refuses
//!   the probe with `EAGAIN`, the plugin's call is answered `EAGAIN` and named, otherwise it
//!   runs as made. A new thread runs as made.
//! - A checked call (`checked`): what it names (a socket address, a path) is copied, a path
//!   or a Unix socket opened `O_PATH` and its real path checked against the grant (the
//!   write grant to reach a socket or change metadata, the read grant to watch), an Internet
//!   address against the grant's hosts (`crate::sandbox::network`), and the call made from
//!   the copy through the handle (`/proc/self/fd/N`), or refused (`EACCES`) and named. One
//!   that may block (a `connect` on a blocking socket, a send that would block) is made by a
//!   performer thread, which answers it.
//! - Anything else is made again by the supervisor and its result handed back. A refusal
//!   (`EACCES`, `EPERM`, or `EXDEV` for a rename or link across rules) of a path neither the
//!   grant nor the sandbox's own rules (the system's libraries, the plugin's file, ...)
//!   allow is reported, read or write as the call asks. A refusal inside them (the file's
//!   own permissions) is the plugin's business and is not.
//!
//! The supervisor allocates nothing while it answers (a plugin thread may hold the memory
//! allocator's lock while it opens a file, and does while it calls `mmap` or `brk` inside
//! `malloc`, or `fork`); naming a refusal (resolving the path, checking it, the report)
//! happens on a second thread (`naming`), which the supervisor waits for at most a second
//! before it answers anyway. So that a refusal is named however late that thread comes to
//! it (a loaded machine, or a wait for the allocator's lock), the supervisor first captures
//! what the call names while it still waits (`captured`: its paths, for a relative one the
//! folder it is relative to, read by `getcwd` or `readlink` of `/proc/self/fd/N`, and an
//! open's flags) into one of a few slots made ahead, and hands the slot over with the call:
//! the naming thread works from that alone, even after the call was answered, its memory
//! reused or its descriptor closed. A late report reaches the host after the call returned.
//! With every slot taken (more refusals waiting to be named than slots), the naming thread
//! reads the call's memory itself and names the refusal only if the call still waits; one it
//! cannot name is counted and said on the child's stderr (`pi-hooks sandbox: a refusal went
//! unnamed (...)`). An `execve` waits for its verdict; one that comes after the supervisor
//! gave up (and let the call run) is still reported, saying so. A path the C library opens
//! while it holds the allocator's lock (`/proc/sys/vm/overcommit_memory`, from `malloc`'s
//! `shrink_heap`) is known from its captured bytes, not named and not waited for. A limit
//! is named by that thread too, without allocating (the
//! words and the line are written on the stack, the line sent only if the refusals' lock is
//! free, else as any refusal), and the supervisor waits for it at most 100 ms: a plugin that
//! gives up at once (`abort()` when `malloc` fails) is still reported with its refusal, and
//! a naming thread held up (by the allocator's lock, should the protocol's buffer have to
//! grow) holds nothing up for long. The calls and where their paths are: `calls`.
//!
//! Limits:
//! - An open that blocks (a FIFO without a writer) blocks the supervisor, and every other
//!   notified call waits with it (with `memoryMiB`, every `mmap` too). While the supervisor
//!   waits for a refusal to be named, a thread's `mmap` inside `malloc` waits too; should
//!   the naming thread need that thread's allocator lock, both wait until the supervisor
//!   gives up (a second) and answers; the refusal is then named late.
//! - A refusal whose path could not be captured (no slot free) and whose call was answered
//!   before the naming thread read it is not named (it is said on stderr). A relative path
//!   whose folder could not be read is named as the call gave it.
//! - Not named: a new thread past the process bound (threads count, only new processes are
//!   checked); a fork that another thread's fork overtook between the probe and the call;
//!   a `PROT_NONE` reservation (the C library reserves 128 MiB per new arena so, and falls
//!   back to less); growth by `mprotect` or the stack; an `ENOMEM` for another cause than
//!   the limit (too many mappings, no free range). A kernel before 5.19 restarts an
//!   interrupted call the supervisor made: a `mremap` that moved the mapping then fails.
//! - Every notified call is a round trip between two threads (BENCHMARKS.md §13; on
//!   Linux 6.6 and later both are woken on the same CPU, `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`).
//! - A refusal in a process the plugin started is not named.
//! - A process the plugin started cannot have its checked calls checked (its memory and
//!   descriptors are not the supervisor's). A copy the plugin forked (it still runs the
//!   `pi-hooks` binary: `/proc/<pid>/exe`) has them refused and named. A granted program's
//!   socket calls are refused (named) unless the grant has `network: true`, where they run
//!   unchecked (a pathname Unix socket outside the grant included); its metadata calls run
//!   unchecked (Landlock still holds its files' contents): a granted program that runs what
//!   it is told (an interpreter) can change the mode of a file outside the grant.
//! - A `connect` or send made while both performers are busy blocks the supervisor until it
//!   ends. An Internet address not known to the grant's hosts waits for the names to be
//!   resolved again (at most 1.5 s; `crate::sandbox::network`), and the other notified
//!   calls with it.
//! - `stat`, `statx`, `readlink`, `access` and `getxattr` of a path outside the grant are
//!   not refused: what exists and its size, owner, mode and times can be learned there.
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

mod calls;
mod captured;
mod checked;
mod memory;
mod naming;
mod processes;

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use super::Grant;
use calls::{Access, CALLS, Call, call, returns_descriptor};
use captured::{POOL, capture, opened_under_allocator_lock};
pub use memory::Room;
use memory::{Burst, MEMORY_CALLS, MemoryCall, memory_call, refused_size};
use naming::{Limit, NO_SLOT, Namer, NamingLink, Verdict, start_naming};
use processes::{PROCESS_CALLS, new_process_refused, starts_process};

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

/// Starts naming the refusals of the Landlock domain this (single-threaded, Landlock
/// applied, `no_new_privs` set) process is in: the naming and supervising threads, then
/// the notifying filter on the calling thread. `also_readable` / `also_writable`: what the
/// sandbox lets the child reach besides `grant`. `Err`: what is missing, in the words of
/// the "confined without ..." line. `room`: what names a refused allocation's cause
/// ([`Room::open`], before Landlock).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn start(
    grant: &Grant,
    also_readable: &[PathBuf],
    also_writable: &[PathBuf],
    room: Option<Room>,
) -> Result<(), String> {
    let missing = |why: &dyn std::fmt::Display| {
        format!(
            "naming of the file accesses Landlock refuses ({why}; Landlock still refuses them, unnamed)"
        )
    };
    user_notification_available().map_err(|e| missing(&e))?;
    let mut numbers: Vec<i64> = CALLS
        .iter()
        .filter(|c| !matches!(c.access, Access::Exec) || !grant.exec.is_empty())
        .map(|c| c.number)
        .collect();
    if grant.memory_mib.is_some() {
        numbers.extend(MEMORY_CALLS.iter().map(|(number, _)| *number));
    }
    // Without `exec` the trap filter refuses new processes outright; root is bound only by
    // a pids cgroup (RLIMIT_NPROC does not bind it): without one there is nothing to name.
    // SAFETY: geteuid has no preconditions.
    let processes = !grant.exec.is_empty()
        && (unsafe { libc::geteuid() } != 0 || super::cgroup::tasks_bound().is_some());
    if processes {
        numbers.extend_from_slice(PROCESS_CALLS);
    }
    // Unix sockets, addresses and metadata (`checked`); `sendto` only with an address,
    // unless the plugin's DNS queries are read (a wildcard host).
    let wildcards = crate::sandbox::network::HostRule::any_wildcard(&grant.network);
    numbers.extend(checked::numbers().filter(|n| *n != libc::SYS_sendto || wildcards));
    let program = filter(&numbers, processes, !wildcards);
    // Within the sandbox's reach: the grant, and what the child needs to run.
    let mut reach = grant.clone();
    reach.read.extend_from_slice(also_readable);
    reach.write.extend_from_slice(also_writable);
    let checks = checked::Reach::new(&reach);
    let namer = Namer {
        grant: grant.clone(),
        prepared: super::report::Prepared::new(grant),
        reach,
    };
    let (to_supervisor, listener) = std::sync::mpsc::channel::<OwnedFd>();
    let link = start_naming(namer).map_err(|e| missing(&e))?;
    checked::start_performers().map_err(|e| missing(&e))?;
    crate::sandbox::network::start(grant).map_err(|e| missing(&e))?;
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
                supervise(fd, &link, room.as_ref(), &checks);
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
    _room: Option<Room>,
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
/// listener, and with `new_processes` a `clone` without `CLONE_THREAD` too; everything else
/// is allowed (the trap filter, installed before, still judges it; seccomp runs every
/// filter and the strictest answer wins, so a call the trap filter refuses is refused, not
/// notified).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn filter(
    numbers: &[i64],
    new_processes: bool,
    sendto_with_address: bool,
) -> Vec<libc::sock_filter> {
    let n = numbers.len();
    assert!(n < 240, "a BPF jump reaches at most 255 instructions");
    let statement = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    // Compares the accumulator with `k` (`BPF_JEQ`) or tests its bits (`BPF_JSET`): `jt` /
    // `jf` instructions forward when true / not.
    let jump = |test: u32, k: u32, jt: usize, jf: usize| libc::sock_filter {
        code: (libc::BPF_JMP | test | libc::BPF_K) as u16,
        jt: jt as u8,
        jf: jf as u8,
        k,
    };
    // The sendto check's and the clone check's instructions, between the comparisons and
    // "allow".
    let sendto = if sendto_with_address { 5 } else { 0 };
    let check = if new_processes { 3 } else { 0 };
    // Where "allow" and "notify" are: the last two instructions.
    let allow = 3 + n + sendto + check;
    let notify = allow + 1;
    let mut program = Vec::with_capacity(notify + 1);
    // 0: load seccomp_data.arch (a u32 at offset 4).
    program.push(statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4));
    // 1: another ABI's call: "allow" (the trap filter, which checks the ABI itself, judges
    //    it).
    program.push(jump(libc::BPF_JEQ, AUDIT_ARCH, 0, allow - 2));
    // 2: load seccomp_data.nr (an int at offset 0).
    program.push(statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0));
    // 3 .. 3 + n: one comparison per notified call: equal, on to "notify"; otherwise on to
    //    the next instruction.
    for (i, number) in numbers.iter().enumerate() {
        program.push(jump(libc::BPF_JEQ, *number as u32, notify - (3 + i) - 1, 0));
    }
    if sendto_with_address {
        // 3 + n: not sendto: on to the clone check (the accumulator still holds the number).
        let at = 3 + n;
        program.push(jump(libc::BPF_JEQ, libc::SYS_sendto as u32, 0, 4));
        // Its address (args[4], at offset 48): either half not zero, "notify"; a send on a
        // connected socket (no address), "allow".
        program.push(statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 48));
        program.push(jump(libc::BPF_JEQ, 0, 0, notify - (at + 2) - 1));
        program.push(statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 52));
        program.push(jump(
            libc::BPF_JEQ,
            0,
            allow - (at + 4) - 1,
            notify - (at + 4) - 1,
        ));
    }
    if new_processes {
        // Not clone: "allow".
        program.push(jump(libc::BPF_JEQ, libc::SYS_clone as u32, 0, 2));
        // Load the low half of its flags (seccomp_data.args[0] at offset 16, little-endian
        // on both machines).
        program.push(statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 16));
        // A thread: "allow"; a new process: "notify".
        program.push(jump(libc::BPF_JSET, libc::CLONE_THREAD as u32, 0, 1));
    }
    // allow.
    program.push(statement(
        libc::BPF_RET | libc::BPF_K,
        libc::SECCOMP_RET_ALLOW,
    ));
    // notify the listener.
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
pub(crate) fn block_signals() {
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

/// Makes the call `number` with `args` again, on this thread; `Err`: its error number.
///
/// # Safety
/// `number` and `args` must be a call a thread of this process is making (a notified one):
/// the kernel checks them as it would have for that thread, and what it does (a descriptor
/// opened, a mapping made) is done for the same process.
unsafe fn make_again(number: i64, a: &[u64; 6]) -> Result<i64, i32> {
    // SAFETY: see the function's contract.
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
    if result < 0 { Err(errno()) } else { Ok(result) }
}

/// Has the naming thread name the refusal of (or decide) the notified `call` of `request`,
/// which still waits: what it names is captured first, into a free slot of [`POOL`], so
/// that it is named however late the naming thread comes to it; with no slot free, the
/// naming thread reads it itself (if the call still waits then; counted in [`NO_SLOT`]).
/// A path the C library opens while it holds the allocator's lock is not named, and not
/// waited for. Allocates nothing.
fn ask_naming(link: &NamingLink, request: &libc::seccomp_notif, call: &Call) -> Verdict {
    let args = &request.data.args;
    if opened_under_allocator_lock(call, args) {
        return Verdict::Proceed;
    }
    let captured = match POOL.claim() {
        // A path that cannot be read (no NUL within PATH_MAX) is left to the naming thread,
        // which finds the same.
        Some(mut slot) => capture(&mut slot, call, args).then_some(slot),
        None => {
            NO_SLOT.fetch_add(1, Ordering::Relaxed);
            None
        }
    };
    link.ask(request, captured)
}

/// The supervisor's loop: takes each notification and answers it (see the module's text).
fn supervise(fd: RawFd, link: &NamingLink, room: Option<&Room>, checks: &checked::Reach) {
    // SAFETY: getpid has no preconditions.
    let own = unsafe { libc::getpid() };
    let mut memory_bursts = Burst::default();
    let mut process_bursts = Burst::default();
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
        let args = request.data.args;
        let continues = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32;
        let mut made: Option<i64> = None;
        if !ours && checked::is_checked(number) {
            // Another process's call (a program the plugin runs): its memory cannot be read
            // here, so its address or path cannot be checked (`checked`).
            if checked::forked_copy(request.pid, checks) {
                response.error = -libc::EACCES;
                checked::name_forked_copy(link, &request);
            } else if checked::refuse_other_process(number, checks) {
                response.error = -libc::EACCES;
                checked::name_other_process(link, &request);
            } else {
                response.flags = continues;
            }
        } else if !ours {
            response.flags = continues;
        } else if checked::is_checked(number) {
            match checked::answer(&request, link, checks, &mut response) {
                checked::Answer::Handed => continue,
                checked::Answer::Respond => {}
            }
        } else if let Some(memory) = memory_call(number) {
            // SAFETY: the call the plugin's thread made, from a thread of the same process:
            // the same address space, so the same mapping, made for it.
            let answer = unsafe { make_again(number, &args) };
            if let Some(size) = refused_size(room, memory, &args, answer)
                && memory_bursts.starts_with_call(size, Some(memory))
            {
                link.name_limit(request.id, Limit::Memory(size));
            }
            match answer {
                Ok(result) => {
                    response.val = result;
                    if memory == MemoryCall::Map && args[3] & libc::MAP_FIXED as u64 == 0 {
                        made = Some(result);
                    }
                }
                Err(error) => response.error = -error,
            }
        } else if let Some(new_process) = starts_process(number, &args) {
            if new_process && new_process_refused() {
                response.error = -libc::EAGAIN;
                if process_bursts.starts_with(0) {
                    link.name_limit(request.id, Limit::Processes);
                }
            } else {
                response.flags = continues;
            }
        } else {
            match call(number) {
                None => response.flags = continues,
                Some(c) if matches!(c.access, Access::Exec) => {
                    if ask_naming(link, &request, c) == Verdict::Refuse {
                        response.error = -libc::EACCES;
                    } else {
                        response.flags = continues;
                    }
                }
                Some(c) => {
                    // SAFETY: the same call with the same arguments the plugin's thread
                    // made, from a thread of the same process (same memory, descriptors,
                    // working directory and Landlock domain); the kernel checks them as it
                    // would have.
                    match unsafe { make_again(number, &args) } {
                        Ok(result) => {
                            response.val = result;
                            made = Some(result);
                        }
                        Err(error) => {
                            if matches!(error, libc::EACCES | libc::EPERM | libc::EXDEV) {
                                ask_naming(link, &request, c);
                            }
                            response.error = -error;
                        }
                    }
                }
            }
        }
        // SAFETY: SEND reads the seccomp_notif_resp passed, a local of the right type.
        let sent = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response) };
        // The caller is gone (killed, or interrupted where the kernel lacks
        // WAIT_KILLABLE_RECV): what was made for it is nobody's.
        if sent != 0
            && let Some(made) = made
        {
            if returns_descriptor(number) {
                // SAFETY: the descriptor was opened by the call above and handed to no one.
                unsafe { libc::close(made as RawFd) };
            } else if memory_call(number) == Some(MemoryCall::Map) {
                // SAFETY: the mapping was made by the call above (not over another one:
                // MAP_FIXED is left alone) and its address handed to no one.
                unsafe { libc::munmap(made as *mut libc::c_void, args[1] as usize) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_jumps_to_notify_or_allow() {
        let program = filter(&[10, 20, 30], false, false);
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

    /// Runs `program` on a `seccomp_data` with `nr` and `args[0]`, as the kernel would.
    fn run(program: &[libc::sock_filter], nr: u32, arg0: u64) -> u32 {
        run_with(program, nr, arg0, 0)
    }

    /// [`run`], with `args[4]` too.
    fn run_with(program: &[libc::sock_filter], nr: u32, arg0: u64, arg4: u64) -> u32 {
        let mut data = [0u8; 64];
        data[48..56].copy_from_slice(&arg4.to_ne_bytes());
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&AUDIT_ARCH.to_ne_bytes());
        data[16..24].copy_from_slice(&arg0.to_ne_bytes());
        let word = |at: usize| u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
        let (mut pc, mut a) = (0, 0u32);
        loop {
            let i = program[pc];
            let code = u32::from(i.code);
            if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
                a = word(i.k as usize);
            } else if code == libc::BPF_RET | libc::BPF_K {
                return i.k;
            } else {
                let test = if code & 0xf0 == libc::BPF_JSET {
                    a & i.k != 0
                } else {
                    a == i.k
                };
                pc += usize::from(if test { i.jt } else { i.jf });
            }
            pc += 1;
        }
    }

    #[test]
    fn with_new_processes_a_clone_is_notified_by_its_flags() {
        let program = filter(&[10, 20], true, false);
        let notify = libc::SECCOMP_RET_USER_NOTIF;
        let allow = libc::SECCOMP_RET_ALLOW;
        let clone = libc::SYS_clone as u32;
        assert_eq!(run(&program, 10, 0), notify);
        assert_eq!(run(&program, 20, 0), notify);
        assert_eq!(run(&program, 30, 0), allow);
        assert_eq!(run(&program, clone, libc::SIGCHLD as u64), notify);
        let thread = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
        assert_eq!(run(&program, clone, thread), allow);
        assert_eq!(run(&filter(&[10], false, false), clone, 0), allow);
        // sendto: notified only with an address (args[4]); the clone check still follows.
        let program = filter(&[10], true, true);
        let sendto = libc::SYS_sendto as u32;
        assert_eq!(run_with(&program, sendto, 0, 0), allow);
        assert_eq!(run_with(&program, sendto, 0, 0x7ff0_0000_1000), notify);
        assert_eq!(run_with(&program, sendto, 0, 0x7ff0_0000_0000), notify);
        assert_eq!(run_with(&program, sendto, 0, 0x1000), notify);
        assert_eq!(run_with(&program, clone, libc::SIGCHLD as u64, 0), notify);
        assert_eq!(run_with(&program, clone, thread, 0), allow);
        assert_eq!(run_with(&program, 10, 0, 0), notify);
    }
}
