//! The seccomp filter of a confined child: what Landlock does not cover.
//!
//! Always refused: `ptrace`, `process_vm_readv`/`writev`, mounts (`mount`, `umount2`,
//! `pivot_root`, `fsopen`, `fsmount`, `move_mount`, `open_tree`), keyrings (`keyctl`,
//! `add_key`, `request_key`), namespaces (`unshare`, `setns`), `bpf`, `perf_event_open`,
//! `userfaultfd`, kernel modules and `kexec`; any signal to the host (`kill`, `tkill`,
//! `tgkill`, `rt_sigqueueinfo`, `rt_tgsigqueueinfo` naming its pid). With `network: false`:
//! any socket that is not a Unix socket. Without `exec`: `execve`, `execveat` and every new process (`fork`,
//! `vfork`, `clone` without `CLONE_THREAD`; `clone3` answers `ENOSYS`, so the C library
//! falls back to `clone`, whose flags can be checked). On x86-64, every call of the x32 ABI
//! answers `ENOSYS` (a filter of its own, `no_x32`), as on a kernel without x32: the rules
//! above list native numbers only.
//!
//! A refused call does not run and returns `EPERM` (`EACCES` for a socket): the filter
//! raises `SIGSYS`, whose handler (installed here, before the plugin's code) sets the return
//! value and passes the call's number to a reporting thread through a pipe; that thread
//! sends the host a `denied` notification naming the call and the rule. A plugin that takes
//! `SIGSYS` away from the handler is killed by it: the host reports a crash by `SIGSYS`.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicI32, Ordering};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::Grant;

/// The write end of the pipe from the handler to the reporting thread (-1: none).
static REPORT_FD: AtomicI32 = AtomicI32::new(-1);

/// The read end of the pipe on which the reporting thread says a report went out (-1: none).
static ACK_FD: AtomicI32 = AtomicI32::new(-1);

/// How long the handler waits for its report to go out before the refused call returns.
const ACK_WAIT_MS: i32 = 1000;

/// One refused call as the handler writes it: the call's number and its first argument.
const RECORD_BYTES: usize = 16;

/// Calls refused whatever the grant, with the rule each breaks.
const ALWAYS: &[(i64, &str, &str)] = &[
    (
        libc::SYS_ptrace,
        "ptrace",
        "a confined plugin may not trace other processes",
    ),
    (
        libc::SYS_process_vm_readv,
        "process_vm_readv",
        "a confined plugin may not read other processes' memory",
    ),
    (
        libc::SYS_process_vm_writev,
        "process_vm_writev",
        "a confined plugin may not write other processes' memory",
    ),
    (
        libc::SYS_mount,
        "mount",
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_umount2,
        "umount2",
        "a confined plugin may not unmount file systems",
    ),
    (
        libc::SYS_pivot_root,
        "pivot_root",
        "a confined plugin may not change the root",
    ),
    (
        libc::SYS_fsopen,
        "fsopen",
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_fsmount,
        "fsmount",
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_move_mount,
        "move_mount",
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_open_tree,
        "open_tree",
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_keyctl,
        "keyctl",
        "a confined plugin may not use the kernel's keyrings",
    ),
    (
        libc::SYS_add_key,
        "add_key",
        "a confined plugin may not use the kernel's keyrings",
    ),
    (
        libc::SYS_request_key,
        "request_key",
        "a confined plugin may not use the kernel's keyrings",
    ),
    (
        libc::SYS_unshare,
        "unshare",
        "a confined plugin may not make namespaces",
    ),
    (
        libc::SYS_setns,
        "setns",
        "a confined plugin may not enter namespaces",
    ),
    (
        libc::SYS_bpf,
        "bpf",
        "a confined plugin may not load BPF programs",
    ),
    (
        libc::SYS_perf_event_open,
        "perf_event_open",
        "a confined plugin may not watch other processes",
    ),
    (
        libc::SYS_userfaultfd,
        "userfaultfd",
        "a confined plugin may not use userfaultfd",
    ),
    (
        libc::SYS_init_module,
        "init_module",
        "a confined plugin may not load kernel modules",
    ),
    (
        libc::SYS_finit_module,
        "finit_module",
        "a confined plugin may not load kernel modules",
    ),
    (
        libc::SYS_delete_module,
        "delete_module",
        "a confined plugin may not unload kernel modules",
    ),
    (
        libc::SYS_kexec_load,
        "kexec_load",
        "a confined plugin may not replace the kernel",
    ),
];

/// Calls refused when the grant runs no programs.
const WITHOUT_EXEC: &[(i64, &str, &str)] = &[
    (
        libc::SYS_execve,
        "execve",
        "its grant runs no programs (exec: nothing)",
    ),
    (
        libc::SYS_execveat,
        "execveat",
        "its grant runs no programs (exec: nothing)",
    ),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_fork,
        "fork",
        "its grant runs no programs, so it may not start processes",
    ),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_vfork,
        "vfork",
        "its grant runs no programs, so it may not start processes",
    ),
    (
        libc::SYS_clone,
        "clone",
        "its grant runs no programs, so it may not start processes",
    ),
];

/// Calls that signal a process, refused when they name the host (Landlock's signal scoping
/// refuses the other processes outside the sandbox, but without telling anyone).
const SIGNAL_HOST: &[(i64, &str)] = &[
    (libc::SYS_kill, "kill"),
    (libc::SYS_tkill, "tkill"),
    (libc::SYS_tgkill, "tgkill"),
    (libc::SYS_rt_sigqueueinfo, "rt_sigqueueinfo"),
    (libc::SYS_rt_tgsigqueueinfo, "rt_tgsigqueueinfo"),
];

/// What a refused call is called and the rule it broke, for the report.
fn describe(number: i64, arg0: u64, grant: &Grant) -> (String, String) {
    if number == libc::SYS_socket {
        return (
            format!("socket({})", family_name(arg0)),
            "its grant has network: no".to_owned(),
        );
    }
    if let Some((_, name)) = SIGNAL_HOST.iter().find(|(n, _)| *n == number) {
        return (
            format!("{name} of the host (pid {arg0})"),
            "a confined plugin may not signal the host".to_owned(),
        );
    }
    ALWAYS
        .iter()
        .chain(WITHOUT_EXEC)
        .find(|(n, ..)| *n == number)
        .map(|(_, name, rule)| ((*name).to_owned(), (*rule).to_owned()))
        .unwrap_or_else(|| {
            (
                format!("system call {number}"),
                format!("the sandbox of plugin {} forbids it", grant.plugin),
            )
        })
}

fn family_name(family: u64) -> String {
    match i32::try_from(family).unwrap_or(-1) {
        libc::AF_INET => "AF_INET".to_owned(),
        libc::AF_INET6 => "AF_INET6".to_owned(),
        libc::AF_NETLINK => "AF_NETLINK".to_owned(),
        libc::AF_PACKET => "AF_PACKET".to_owned(),
        other => format!("family {other}"),
    }
}

/// Builds and installs the filter for `grant` on every thread of this process, with the
/// `SIGSYS` handler and the reporting thread.
pub fn apply(grant: &Grant) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| {
        format!("cannot confine plugin {} with seccomp: {e}", grant.plugin)
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| fail(&e))?;
    let mut trapped: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (number, ..) in ALWAYS {
        trapped.insert(*number, Vec::new());
    }
    // The host reads its own memory with process_vm_readv (crate::library::memory): only
    // another process's is refused.
    // SAFETY: getpid has no preconditions.
    let own = unsafe { libc::getpid() } as u64;
    for number in [libc::SYS_process_vm_readv, libc::SYS_process_vm_writev] {
        let other = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, own)
            .map_err(|e| fail(&e))?;
        trapped.insert(
            number,
            vec![SeccompRule::new(vec![other]).map_err(|e| fail(&e))?],
        );
    }
    // SAFETY: getppid has no preconditions.
    let host = unsafe { libc::getppid() } as u64;
    for (number, _) in SIGNAL_HOST {
        let at_host = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, host)
            .map_err(|e| fail(&e))?;
        trapped.insert(
            *number,
            vec![SeccompRule::new(vec![at_host]).map_err(|e| fail(&e))?],
        );
    }
    let mut no_clone3 = BTreeMap::new();
    if grant.exec.is_empty() {
        for (number, ..) in WITHOUT_EXEC {
            trapped.insert(*number, Vec::new());
        }
        // clone(flags, ...) without CLONE_THREAD: a new process.
        let new_process = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
            0,
        )
        .map_err(|e| fail(&e))?;
        trapped.insert(
            libc::SYS_clone,
            vec![SeccompRule::new(vec![new_process]).map_err(|e| fail(&e))?],
        );
        no_clone3.insert(libc::SYS_clone3, Vec::new());
    }
    if !grant.network.any() {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| fail(&e))?;
        trapped.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(|e| fail(&e))?],
        );
    }
    start_reporting(grant.clone()).map_err(|e| fail(&e))?;
    let programs = [
        (trapped, SeccompAction::Trap),
        (no_clone3, SeccompAction::Errno(libc::ENOSYS as u32)),
    ];
    for (rules, action) in programs {
        if rules.is_empty() {
            continue;
        }
        let filter =
            SeccompFilter::new(rules, SeccompAction::Allow, action, arch).map_err(|e| fail(&e))?;
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| fail(&e))?;
        seccompiler::apply_filter_all_threads(&program).map_err(|e| fail(&e))?;
    }
    #[cfg(target_arch = "x86_64")]
    seccompiler::apply_filter_all_threads(&no_x32()).map_err(|e| fail(&e))?;
    Ok(())
}

/// The bit that marks a system call of the x32 ABI (`__X32_SYSCALL_BIT`).
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// A filter that answers every call of the x32 ABI with `ENOSYS`, as a kernel without x32
/// does. x32 calls carry x86-64's architecture value, so the other filters, which list the
/// native numbers, would let x32's `ptrace` (say) through where the kernel offers x32.
#[cfg(target_arch = "x86_64")]
fn no_x32() -> BpfProgram {
    use seccompiler::sock_filter;
    const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    // `AUDIT_ARCH_X86_64`.
    const ARCH: u32 = 0xc000_003e;
    let op = |code: u16, jt: u8, jf: u8, k: u32| sock_filter { code, jt, jf, k };
    vec![
        // 0: the architecture (seccomp_data.arch, offset 4).
        op(BPF_LD_W_ABS, 0, 0, 4),
        // 1: another architecture: to 5, allow (the other filters refuse it).
        op(BPF_JEQ_K, 0, 3, ARCH),
        // 2: the call's number (seccomp_data.nr, offset 0).
        op(BPF_LD_W_ABS, 0, 0, 0),
        // 3: an x32 number: to 4; a native one: to 5.
        op(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT),
        // 4: ENOSYS.
        op(
            BPF_RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ),
        // 5: allow.
        op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// Installs the `SIGSYS` handler and starts the thread that reports what it passes on.
fn start_reporting(grant: Grant) -> std::io::Result<()> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let (ack_read, ack_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    {
        use std::os::fd::IntoRawFd;
        REPORT_FD.store(write.into_raw_fd(), Ordering::Release);
        ACK_FD.store(ack_read.into_raw_fd(), Ordering::Release);
    }
    let mut ack_write = std::fs::File::from(ack_write);
    std::thread::Builder::new()
        .name("pi-hooks-sandbox-report".into())
        .spawn(move || {
            let mut read = std::fs::File::from(read);
            let mut record = [0u8; RECORD_BYTES];
            while read.read_exact(&mut record).is_ok() {
                let number = i64::from(i32::from_ne_bytes([
                    record[0], record[1], record[2], record[3],
                ]));
                let mut arg = [0u8; 8];
                arg.copy_from_slice(&record[8..16]);
                let (call, rule) = describe(number, u64::from_ne_bytes(arg), &grant);
                let reason = format!("refused by its seccomp filter: {rule}");
                super::report::denied(&call, &reason, &grant);
                // The report is out before the refused call returns, so the host sees it
                // before the answer of the call the plugin was making.
                let _ = std::io::Write::write_all(&mut ack_write, &[1]);
            }
        })?;
    // SAFETY: a zeroed sigaction is a valid starting point; the handler only calls write(2)
    // and touches its own arguments, which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigsys as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGSYS, &action, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The `SIGSYS` handler: a refused call returns `-EPERM` (`-EACCES` for `socket`) and is
/// passed to the reporting thread.
extern "C" fn on_sigsys(
    _signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers. For SIGSYS from
    // seccomp the `_sigsys` member of its union holds, after the three ints and their
    // padding (offset 16 on 64-bit Linux), the call address (8 bytes) and the call's
    // number (an int at offset 24).
    let number = unsafe { *(info as *const u8).add(24).cast::<i32>() };
    let errno = if i64::from(number) == libc::SYS_socket {
        libc::EACCES
    } else {
        libc::EPERM
    };
    let arg0 = set_return(context, -i64::from(errno));
    let mut record = [0u8; RECORD_BYTES];
    record[..4].copy_from_slice(&number.to_ne_bytes());
    record[8..].copy_from_slice(&arg0.to_ne_bytes());
    let fd = REPORT_FD.load(Ordering::Acquire);
    if fd >= 0 {
        // SAFETY: write(2) of a local buffer; a pipe write of 16 bytes is atomic.
        let _ = unsafe { libc::write(fd, record.as_ptr().cast(), RECORD_BYTES) };
        let ack = ACK_FD.load(Ordering::Acquire);
        let mut poll = libc::pollfd {
            fd: ack,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut byte = 0u8;
        // SAFETY: poll(2) and read(2) on our own pipe with local buffers, both
        // async-signal-safe; the wait is bounded.
        unsafe {
            if libc::poll(&mut poll, 1, ACK_WAIT_MS) == 1 {
                let _ = libc::read(ack, (&mut byte as *mut u8).cast(), 1);
            }
        }
    }
}

/// Sets the interrupted call's return value in the signal context; returns its first
/// argument.
#[cfg(target_arch = "x86_64")]
fn set_return(context: *mut libc::c_void, value: i64) -> u64 {
    // SAFETY: for SA_SIGINFO handlers the third argument is the thread's ucontext_t.
    unsafe {
        let context = &mut *context.cast::<libc::ucontext_t>();
        context.uc_mcontext.gregs[libc::REG_RAX as usize] = value;
        context.uc_mcontext.gregs[libc::REG_RDI as usize] as u64
    }
}

/// Elsewhere the call returns what the kernel left (`-ENOSYS`); the argument is not read.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn set_return(_context: *mut libc::c_void, _value: i64) -> u64 {
    0
}

/// Sets the interrupted call's return value in the signal context; returns its first
/// argument (`x0` holds both).
#[cfg(target_arch = "aarch64")]
fn set_return(context: *mut libc::c_void, value: i64) -> u64 {
    // SAFETY: for SA_SIGINFO handlers the third argument is the thread's ucontext_t.
    unsafe {
        let context = &mut *context.cast::<libc::ucontext_t>();
        let arg0 = context.uc_mcontext.regs[0];
        context.uc_mcontext.regs[0] = value as u64;
        arg0
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Runs `program` on a `seccomp_data` with `arch` and `nr`, as the kernel would (the
    /// instructions `no_x32` uses).
    fn run(program: &[seccompiler::sock_filter], arch: u32, nr: u32) -> u32 {
        let word = |at: u32| if at == 0 { nr } else { arch };
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let i = &program[pc];
            let code = u32::from(i.code);
            if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
                a = word(i.k);
            } else if code == libc::BPF_RET | libc::BPF_K {
                return i.k;
            } else {
                let test = if code & 0xf0 == libc::BPF_JGE {
                    a >= i.k
                } else {
                    a == i.k
                };
                pc += usize::from(if test { i.jt } else { i.jf });
            }
            pc += 1;
        }
    }

    #[test]
    fn x32_calls_get_enosys_and_native_ones_pass() {
        let program = no_x32();
        let native = 0xc000_003e;
        let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
        let ptrace = libc::SYS_ptrace as u32;
        assert_eq!(run(&program, native, ptrace), libc::SECCOMP_RET_ALLOW);
        assert_eq!(run(&program, native, X32_SYSCALL_BIT | 521), enosys);
        assert_eq!(run(&program, native, X32_SYSCALL_BIT | ptrace), enosys);
        // i386's `int 0x80`: left to the other filters (which end the process).
        assert_eq!(run(&program, 0x4000_0003, 26), libc::SECCOMP_RET_ALLOW);
    }
}
